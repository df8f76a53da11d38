package session

import (
	"math"
	"strings"
	"testing"
	"time"
)

// An open loop's rate table says what each rate offered and achieved, and
// each latency from the send and from the due time; where the server
// fell behind, the words say so with the wait a user on time had.
func TestRateSweepsSayOfferedAchievedAndBothLatencies(t *testing.T) {
	start := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	var recs []Record
	add := func(arm string, k int, scheduledMs, queueMs, e2e float64) {
		r := record(arm, k+1, PhaseTimed, StatusOK, e2e)
		r.Round, r.Window = 1, WindowSteady
		r.ScheduledMs, r.QueueMs = scheduledMs, queueMs
		r.StartedAt = start.Add(time.Duration((scheduledMs + queueMs) * float64(time.Millisecond)))
		recs = append(recs, r)
	}
	// At 10/s, 10 requests due 100 ms apart, each answered in 20 ms: kept
	// up. At 100/s, 10 due 10 ms apart under a cap of one, each taking
	// 50 ms: the k-th waits 40·k ms, and the block ends at 500 ms.
	for k := range 10 {
		add("greedy@r10", k, float64(k*100), 0.5, 20)
		add("greedy@r100", k, float64(k*10), float64(40*k), 50)
	}
	m := &Manifest{Arms: []ArmInfo{{Name: "greedy@r10", Base: "greedy", Rate: 10}, {Name: "greedy@r100", Base: "greedy", Rate: 100, Concurrency: 1}}}
	sweeps := RateSweeps(m, recs)
	if len(sweeps) != 1 || len(sweeps[0].Levels) != 2 {
		t.Fatalf("sweeps %+v", sweeps)
	}
	slow, fast := sweeps[0].Levels[0], sweeps[0].Levels[1]
	// 10 requests over 0.9 s + 0.5 ms queue + 20 ms: 920.5 ms.
	if want := 10 / 0.9205; math.Abs(slow.Achieved-want) > 1e-6 || slow.N != 10 || slow.QueueP99 != 0.5 {
		t.Errorf("10/s: achieved %v (want %v), n %d, queue p99 %v", slow.Achieved, want, slow.N, slow.QueueP99)
	}
	// The last starts at 90 + 360 ms and ends 50 ms later: 10 in 0.5 s.
	if math.Abs(fast.Achieved-20) > 1e-6 || fast.E2EDueP95 <= fast.E2EP95+300 || !fast.Capped {
		t.Errorf("100/s: achieved %v (want 20), e2e p95 %v sent, %v due", fast.Achieved, fast.E2EP95, fast.E2EDueP95)
	}
	words := strings.Join(sweeps[0].Words(), "\n")
	for _, want := range []string{"10 req/s offered, 10.86 achieved: kept up", "100 req/s offered, 20.00 achieved: the server fell behind the rate; a user arriving on time waited p95"} {
		if !strings.Contains(words, want) {
			t.Errorf("%q missing from:\n%s", want, words)
		}
	}
	if strings.Contains(words, "client sent late") {
		t.Errorf("a capped queue and a 0.5 ms lag are not the client's lateness:\n%s", words)
	}
	table := sweeps[0].Table()
	if len(table.Rows) != 2 || table.Rows[1][0] != "100" || table.Rows[1][1] != "20.00" {
		t.Errorf("table %q", table.Rows)
	}
	// Without a cap, a lag over 1 ms is the client's, and it is said.
	m.Arms[1].Concurrency = 0
	if words := strings.Join(RateSweeps(m, recs)[0].Words(), "\n"); !strings.Contains(words, "100 req/s: the client sent late") {
		t.Errorf("an uncapped lag of seconds is not said:\n%s", words)
	}
}
