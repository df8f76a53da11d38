package session

import (
	"math"
	"slices"
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
	// 50 ms: the k-th waits 40·k ms, and the block's ends come 50 ms
	// apart. A short block's achieved rate is measured from its first end,
	// not its start: from the start, the last answer's own 50 ms would
	// make a server that keeps up look behind.
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
	// Due every 100 ms and answered 20.5 ms after: 9 arrivals and 9 ends
	// after the first, each over 0.9 s.
	if math.Abs(slow.Scheduled-10) > 1e-6 || math.Abs(slow.Achieved-10) > 1e-6 || slow.N != 10 || slow.QueueP99 != 0.5 {
		t.Errorf("10/s: scheduled %v, achieved %v (want 10 and 10), n %d, queue p99 %v", slow.Scheduled, slow.Achieved, slow.N, slow.QueueP99)
	}
	// Due every 10 ms, but ending every 50 ms (from 50 to 500 ms).
	if math.Abs(fast.Scheduled-100) > 1e-6 || math.Abs(fast.Achieved-20) > 1e-6 || fast.E2EDueP95 <= fast.E2EP95+300 || !fast.Capped {
		t.Errorf("100/s: scheduled %v, achieved %v (want 100 and 20), e2e p95 %v sent, %v due", fast.Scheduled, fast.Achieved, fast.E2EP95, fast.E2EDueP95)
	}
	words := strings.Join(sweeps[0].Words(nil), "\n")
	for _, want := range []string{"10 req/s offered (10.00 as scheduled), 10.00 achieved: kept up",
		"100 req/s offered (100.00 as scheduled), 20.00 achieved: the server fell behind the rate; a user arriving on time waited p95"} {
		if !strings.Contains(words, want) {
			t.Errorf("%q missing from:\n%s", want, words)
		}
	}
	if !strings.Contains(words, "knee at 100 req/s: the server fell behind, 20.00 req/s achieved of 100.00 as scheduled") {
		t.Errorf("no knee at 100 req/s:\n%s", words)
	}
	if strings.Contains(words, "client sent late") {
		t.Errorf("a capped queue and a 0.5 ms lag are not the client's lateness:\n%s", words)
	}
	table := sweeps[0].Table()
	if len(table.Rows) != 2 || table.Rows[1][0] != "100" || table.Rows[1][1] != "100.00" || table.Rows[1][2] != "20.00" {
		t.Errorf("table %q", table.Rows)
	}
	// Without a cap, a lag over 1 ms is the client's, and it is said.
	m.Arms[1].Concurrency = 0
	if words := strings.Join(RateSweeps(m, recs)[0].Words(nil), "\n"); !strings.Contains(words, "100 req/s: the client sent late") {
		t.Errorf("an uncapped lag of seconds is not said:\n%s", words)
	}
}

// Sessions run at different rates, or one open and one closed, are set up
// differently, and the comparison says so before its verdicts.
func TestSessionsAtOtherRatesAreWarnedAbout(t *testing.T) {
	var recs []Record
	for i := range 12 {
		recs = append(recs, record("greedy", i+1, PhaseTimed, StatusOK, 20+float64(i)))
	}
	at := func(rate float64) *Manifest {
		return &Manifest{Status: StatusComplete, Arms: []ArmInfo{{Name: "greedy", Rate: rate}}}
	}
	a := &Session{Path: "/s/A.toml", Manifest: at(20), Records: recs}
	b := &Session{Path: "/s/B.toml", Manifest: at(80), Records: recs}
	closed := &Session{Path: "/s/C.toml", Manifest: at(0), Records: recs}
	c, err := Compare([]Ref{{Path: a.Path}, {Path: b.Path}, {Path: closed.Path}}, []*Session{a, b, closed}, []string{"e2e_ms"})
	if err != nil {
		t.Fatal(err)
	}
	warnings := strings.Join(c.Warnings, "\n")
	for _, want := range []string{"A and B were set up differently (rate 20 req/s vs 80 req/s)", "A and C were set up differently (rate 20 req/s vs none (a closed loop))"} {
		if !strings.Contains(warnings, want) {
			t.Errorf("%q missing from the warnings:\n%s", want, warnings)
		}
	}
}

// Under an SLO an open loop's requests are judged from their due time:
// at 100/s behind a cap of one, the server answers each in 10 ms once
// sent, yet most users waited far past a 100 ms bound, so that rate fails
// and the highest rate that kept its goodput is 10/s.
func TestAnOpenLoopsGoodputIsJudgedFromTheDueTime(t *testing.T) {
	start := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	var recs []Record
	for k := range 10 {
		for _, c := range []struct {
			arm          string
			every, queue float64
		}{{"greedy@r10", 100, 0.5}, {"greedy@r100", 10, float64(40 * k)}} {
			r := record(c.arm, k+1, PhaseTimed, StatusOK, 50)
			r.Round, r.Window = 1, WindowSteady
			r.ScheduledMs, r.QueueMs = float64(k)*c.every, c.queue
			r.StartedAt = start.Add(time.Duration((r.ScheduledMs + r.QueueMs) * float64(time.Millisecond)))
			recs = append(recs, r)
		}
	}
	slo := &SLOInfo{TTFTMs: 100, Goodput: 0.9}
	m := &Manifest{Arms: []ArmInfo{{Name: "greedy@r10", Base: "greedy", Rate: 10}, {Name: "greedy@r100", Base: "greedy", Rate: 100, Concurrency: 1}},
		Profile: ProfileInfo{Load: &LoadInfo{Rates: []float64{10, 100}, SLO: slo}}}
	sw := RateSweeps(m, recs)[0]
	// TTFT is 10 ms once sent; from the due time 10 + 40·k ms: 3 of 10 within 100 ms.
	if sw.Levels[0].Goodput != 1 || sw.Levels[1].Goodput != 0.3 {
		t.Errorf("goodput %v and %v; want 1 and 0.3", sw.Levels[0].Goodput, sw.Levels[1].Goodput)
	}
	words := strings.Join(sw.Words(slo), "\n")
	// One block a rate: no interval, since the block is the unit, and
	// the bracket is said in the rates as scheduled.
	if !strings.Contains(words, "goodput (SLO TTFT ≤ 100 ms, judged from each request's due time): the highest rate run with at least 90% of requests within it is 10 req/s offered (10.00 as scheduled; 100% from one block of requests, too few for an interval); "+
		"the next one run, 100 req/s offered (100.00 as scheduled), kept 30% from one block of requests, too few for an interval: the highest rate that meets the SLO lies between 10.00 and 100.00 req/s as scheduled, though an end's interval holds 90% or is missing: more blocks at these rates would tell") {
		t.Errorf("words:\n%s", words)
	}
	if table := sw.Table(); table.Header[len(table.Header)-1] != "goodput" || table.Rows[1][len(table.Rows[1])-1] != "30%" {
		t.Errorf("table %q %q", table.Header, table.Rows)
	}
}

// A level the SLO search ran again is one level: its runs' requests are
// pooled, and each run's blocks keep their own spans.
func TestARateRunAgainIsOneLevel(t *testing.T) {
	start := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	var recs []Record
	for _, arm := range []string{"greedy@r100", "greedy@r100-2"} {
		for k := range 10 {
			r := record(arm, k+1, PhaseTimed, StatusOK, 20)
			r.Round, r.Window = 1, WindowSteady // each run's first round
			r.ScheduledMs, r.QueueMs = float64(k*10), 0.5
			r.StartedAt = start.Add(time.Duration((r.ScheduledMs + r.QueueMs) * float64(time.Millisecond)))
			if arm != "greedy@r100" {
				r.StartedAt = r.StartedAt.Add(time.Minute)
			}
			recs = append(recs, r)
		}
	}
	slo := &SLOInfo{TTFTMs: 15, Goodput: 0.9}
	recs[3].TTFTMs = 30 // one request of the first run missed the SLO
	m := &Manifest{Arms: []ArmInfo{{Name: "greedy@r100", Base: "greedy", Rate: 100}, {Name: "greedy@r100-2", Base: "greedy", Rate: 100, Searched: true}},
		Profile: ProfileInfo{Load: &LoadInfo{Rates: []float64{100}, SLO: slo}}}
	sw := RateSweeps(m, recs)
	if len(sw) != 1 || len(sw[0].Levels) != 1 {
		t.Fatalf("sweeps %+v", sw)
	}
	// 20 requests over two runs, each 90 ms of arrivals: 100/s, not 18
	// over a minute.
	lv := sw[0].Levels[0]
	if lv.N != 20 || lv.Runs != 2 || math.Abs(lv.Scheduled-100) > 1e-6 || math.Abs(lv.Achieved-100) > 1e-6 {
		t.Errorf("level %+v", lv)
	}
	// Its goodput is over the two runs' blocks, the interval over blocks.
	if lv.Goodput != 0.95 || lv.Blocks != 2 || !(lv.GoodputCI.Lo < 0.95) || lv.GoodputCI.Hi != 1 || !strings.Contains(goodputWords(lv), "95% [") || !strings.Contains(goodputWords(lv), "over 2 blocks") {
		t.Errorf("goodput %v %v over %d blocks: %s", lv.Goodput, lv.GoodputCI, lv.Blocks, goodputWords(lv))
	}
}

// A run killed during its SLO search left the searched rates' rows in the
// trials CSV but not in the manifest: reading the session takes those arms
// from their rows, so the rate table and its words keep every rate run.
func TestASearchKilledBeforeItSavedItsArmsKeepsItsRates(t *testing.T) {
	m := newManifest("killed")
	m.Arms = []ArmInfo{{Name: "greedy@r10", Base: "greedy", Rate: 10}, {Name: "greedy@r80", Base: "greedy", Rate: 80}}
	m.Profile.Load = &LoadInfo{Rates: []float64{10, 80}, SLO: &SLOInfo{TTFTMs: 100, Goodput: 0.9}}
	dir := t.TempDir()
	w, err := Create(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	for _, arm := range []string{"greedy@r10", "greedy@r80", "greedy@r28.3", "greedy@r28.3-2"} {
		for k := range 6 {
			r := record(arm, k+1, PhaseTimed, StatusOK, 20)
			r.Round, r.Window = 2, WindowSteady
			r.ScheduledMs, r.QueueMs = float64(k*10), 0.5
			r.StartedAt = start.Add(time.Duration(r.ScheduledMs * float64(time.Millisecond)))
			if err := w.Append(r, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	w.Close() // killed: the manifest on disk is the one written at the start
	s, err := Load(w.ManifestPath())
	if err != nil {
		t.Fatal(err)
	}
	sw := RateSweeps(s.Manifest, s.Records)
	if len(sw) != 1 || len(sw[0].Levels) != 3 || sw[0].Levels[1].Offered != 28.3 || sw[0].Levels[1].Runs != 2 || sw[0].Levels[1].N != 12 {
		t.Fatalf("sweeps %+v", sw)
	}
	searched := slices.IndexFunc(s.Manifest.Arms, func(a ArmInfo) bool { return a.Name == "greedy@r28.3-2" })
	if searched < 0 || !s.Manifest.Arms[searched].Searched || len(s.Warnings) != 2 || !strings.Contains(s.Warnings[0], "not in the manifest (the run was killed before it saved it)") {
		t.Errorf("arms %+v, warnings %q", s.Manifest.Arms, s.Warnings)
	}
	if words := strings.Join(sw[0].Words(s.Manifest.Profile.Load.SLO), "\n"); !strings.Contains(words, "28.3 req/s offered") {
		t.Errorf("words:\n%s", words)
	}
}
