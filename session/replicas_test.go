package session

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/tokentop/tokentop/metrics"
)

// fleetRecords are n trials on each replica, e2e lognormal (CV ≈ 0.2)
// around 100 ms times the replica's slowdown.
func fleetRecords(rng *rand.Rand, n int, slowdown ...float64) []*Record {
	var out []*Record
	for k, slow := range slowdown {
		for range n {
			r := &Record{Phase: PhaseTimed, Status: StatusOK, Replica: strconv.Itoa(k)}
			r.Timings = metrics.Timings{E2EMs: 100 * slow * math.Exp(0.2*rng.NormFloat64())}
			out = append(out, r)
		}
	}
	return out
}

// Replicas alike are called different in at most α of fleets (Holm over
// the pairs holds the family's error rate), and one 1.3× slower is found,
// named with the share of pairs in which it was the longer.
func TestReplicaWordsHoldTheErrorRate(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const runs = 1000
	wrong := 0
	for range runs {
		recs := fleetRecords(rng, 30, 1, 1, 1)
		words := ReplicaWords(recs, ReplicasOf(recs, nil))
		if strings.Contains(strings.Join(words, "\n"), "is slower") {
			wrong++
		}
	}
	t.Logf("three alike replicas, 30 trials each: some pair called different in %.1f%% of %d fleets", 100*float64(wrong)/runs, runs)
	if float64(wrong)/runs > 0.06 {
		t.Errorf("%d of %d fleets of alike replicas had a pair called different", wrong, runs)
	}
	found := 0
	for range 200 {
		recs := fleetRecords(rng, 30, 1, 1.3, 1)
		for _, w := range ReplicaWords(recs, ReplicasOf(recs, nil)) {
			if strings.HasPrefix(w, "replica 1 is slower than replica ") && strings.Contains(w, "% of pairs of their trials (Mann-Whitney on each pair's trials, Holm-adjusted over 3 pairs, ") {
				found++
				break
			}
		}
	}
	t.Logf("a replica 1.3× slower found in %d of 200 fleets", found)
	if found < 190 {
		t.Errorf("a replica 1.3× slower found in %d of 200 fleets", found)
	}
	recs := fleetRecords(rng, 30, 1, 1)
	if w := ReplicaWords(recs, ReplicasOf(recs, nil)); len(w) != 1 || !strings.HasPrefix(w[0], "the two replicas' e2e do not differ significantly (Mann-Whitney on the pair's trials, p = ") {
		t.Errorf("alike: %q", w)
	}
}
