package session

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// loadRecord is a steady ok request of arm at (round, stream) that started
// at t0+startMs and took e2eMs, with ten tokens one ms apart at its end.
func loadRecord(arm string, trial, round, stream int, startMs, e2eMs float64, window string) (Record, Arrivals) {
	r := Record{Arm: arm, Trial: trial, Phase: PhaseTimed, Status: StatusOK, Round: round, Stream: stream, Concurrency: 2,
		StartedAt: t0.Add(time.Duration(startMs * float64(time.Millisecond))), Window: window}
	r.E2EMs = e2eMs
	var a Arrivals
	for i := range 10 {
		a.Tokens = append(a.Tokens, i+1)
		a.AtMs = append(a.AtMs, e2eMs-9+float64(i))
	}
	return r, a
}

// Two streams of three 100 ms requests, the second starting 50 ms late:
// the window runs from its first end (150 ms) to the first stream's last
// end (300 ms), and holds the tokens that arrived in between.
func TestLoadThroughputCountsTheSteadyWindow(t *testing.T) {
	var records []Record
	tokens := map[TrialKey]Arrivals{}
	trial := 0
	for stream, offset := range []float64{0, 50} {
		for j := range 3 {
			trial++
			window := map[bool]string{true: WindowRamp, false: WindowSteady}[j == 0]
			r, a := loadRecord("a@c2", trial, 1, stream+1, offset+100*float64(j), 100, window)
			records = append(records, r)
			tokens[TrialKey{r.Arm, r.Trial}] = a
		}
	}
	got := LoadThroughput(records, tokens)["a@c2"]
	// In (150, 300] ms: stream 1's requests ending at 200 and 300 and
	// stream 2's ending at 250, each with all ten tokens, 10 ms or less
	// before its end.
	if got.Blocks != 1 || math.Abs(got.WindowS-0.150) > 1e-9 || math.Abs(got.TokensPerS-30/0.150) > 1e-6 || math.Abs(got.RequestsPerS-3/0.150) > 1e-6 {
		t.Errorf("throughput %+v; want a 150 ms window with 30 tokens and 3 requests", got)
	}
}

// Four streams in lockstep, as a batching server finishes them: each
// stream's four 100 ms requests end a microsecond apart from the other
// streams', so the window closes at the first of the last completions
// and the other three land just past it. Counting requests whole where
// they ended lost those three while their tokens counted (req/s read 9
// requests for 117 tokens); by their tokens' share, tok/s ÷ req/s is the
// tokens per request.
func TestRequestsCountAsTheirTokensDo(t *testing.T) {
	var records []Record
	tokens := map[TrialKey]Arrivals{}
	trial := 0
	for stream := 1; stream <= 4; stream++ {
		jitter := float64(stream) * 1e-3 // ms
		for j := range 4 {
			trial++
			window := map[bool]string{true: WindowRamp, false: WindowSteady}[j == 0]
			r := Record{Arm: "a@c4", Trial: trial, Phase: PhaseTimed, Status: StatusOK, Round: 1, Stream: stream, Concurrency: 4,
				StartedAt: t0.Add(time.Duration((100*float64(j) + jitter) * float64(time.Millisecond))), Window: window}
			r.E2EMs = 100
			var a Arrivals
			for i := range 10 { // a token every 10 ms, the last at the end
				a.Tokens = append(a.Tokens, i+1)
				a.AtMs = append(a.AtMs, 10*float64(i+1))
			}
			records = append(records, r)
			tokens[TrialKey{r.Arm, r.Trial}] = a
		}
	}
	got := LoadThroughput(records, tokens)["a@c4"]
	if perRequest := got.TokensPerS / got.RequestsPerS; math.Abs(perRequest-10) > 1e-9 || got.Blocks != 1 || got.FailedTokensPerS != 0 {
		t.Errorf("%+v: tok/s ÷ req/s = %g, want the 10 tokens of each request", got, perRequest)
	}
	// One definition of a timed trial everywhere: the ramp-up requests
	// (one per stream) are neither in the report's count nor the summary's.
	s := &Session{Path: "/x/L.toml", Manifest: &Manifest{Arms: []ArmInfo{{Name: "a@c4"}}}, Records: records}
	summary := SummarizeArm(ByArm(records)["a@c4"], 1, 0.01, 0)
	if r := BuildReport(s, TestOptions{Resamples: 100, Seed: 1}); r.Arms[0].N != 12 || summary.TimedOK != 12 || summary.Metrics["e2e_ms"].N != 12 {
		t.Errorf("report n %d, summary timed_ok %d and n %d; want the 12 steady requests", r.Arms[0].N, summary.TimedOK, summary.Metrics["e2e_ms"].N)
	}
	// A steady request that failed mid-stream after 6 tokens: its tokens
	// are the server's work, but tok/s and req/s both leave it out, so
	// the ratio is still an ok request's tokens (64.85 for 64-token
	// requests where its tokens counted in tok/s alone).
	failed := &records[6]
	failed.Status, failed.Error = StatusError, "stream cut"
	cut := tokens[TrialKey{failed.Arm, failed.Trial}]
	cut.Tokens, cut.AtMs = cut.Tokens[:6], cut.AtMs[:6]
	tokens[TrialKey{failed.Arm, failed.Trial}] = cut
	got = LoadThroughput(records, tokens)["a@c4"]
	if perRequest := got.TokensPerS / got.RequestsPerS; math.Abs(perRequest-10) > 1e-9 || math.Abs(got.FailedTokensPerS*got.WindowS-6) > 1e-9 {
		t.Errorf("%+v: tok/s ÷ req/s = %g with a request failed mid-stream, want 10 and its 6 tokens apart", got, perRequest)
	}
	// A single-level load run (--concurrency 4) says its aggregate rates:
	// only its manifest had them.
	sweeps := Sweeps(&Manifest{Arms: []ArmInfo{{Name: "a@c4", Base: "a", Concurrency: 4}}}, records, tokens)
	if len(sweeps) != 1 || len(sweeps[0].Levels) != 1 || sweeps[0].Knee != 0 {
		t.Fatalf("sweeps %+v", sweeps)
	}
	if lines := sweeps[0].Words(nil); !slices.Contains(lines, fmt.Sprintf("one level, 4 streams: %.1f tok/s and %.2f req/s in aggregate over the steady windows (each request's own figures are in the numbers)", got.TokensPerS, got.RequestsPerS)) {
		t.Errorf("one level's words %q", lines)
	}
	words := Sweep{Levels: []Level{{Concurrency: 4, Throughput: got}}}.Words(nil)
	if want := "tok/s and req/s count ok requests alone, so that tok/s ÷ req/s is an ok request's tokens; requests that failed mid-stream made " +
		FormatValue(got.FailedTokensPerS) + " tok/s at 4 streams more (J/token counts them: the server did that work)"; !slices.Contains(words, want) {
		t.Errorf("words %q\nwant %q", words, want)
	}
}

func TestKneeFindsLatencyOrAStall(t *testing.T) {
	level := func(n int, tps, ttft float64) Level {
		return Level{Concurrency: n, Throughput: Throughput{TokensPerS: tps}, TTFTP95: ttft, ITLP95: 1}
	}
	cases := []struct {
		name   string
		levels []Level
		knee   int
		why    string
	}{
		{"latency doubles", []Level{level(1, 100, 20), level(2, 190, 30), level(4, 350, 38), level(8, 600, 90)}, 8, "p95 TTFT is 4.5× its value at 1 stream"},
		// A dip that later levels make up for is not where it stops.
		{"throughput stalls", []Level{level(1, 100, 20), level(2, 105, 21), level(4, 300, 22), level(8, 310, 23)}, 4, "no higher level beat its 300.0 tok/s by 10%"},
		{"no knee", []Level{level(1, 100, 20), level(2, 190, 21), level(4, 350, 22)}, 0, ""},
	}
	for _, c := range cases {
		knee, why := knee(c.levels)
		if knee != c.knee || !strings.Contains(why, c.why) {
			t.Errorf("%s: knee %d (%q), want %d (%q)", c.name, knee, why, c.knee, c.why)
		}
	}
}

// A failed request misses the SLO; one the run cut itself (canceled) says
// nothing of the server and is not judged.
func TestGoodputCountsFailedRequestsAsMisses(t *testing.T) {
	m := &Manifest{Profile: ProfileInfo{Load: &LoadInfo{SLO: &SLOInfo{TTFTMs: 50, Goodput: 0.75}}},
		Arms: []ArmInfo{{Name: "a@c1", Base: "a", Concurrency: 1}, {Name: "a@c2", Base: "a", Concurrency: 2}}}
	var records []Record
	for i, ttft := range []float64{10, 20, 30, 40} { // level 1: all within
		r, _ := loadRecord("a@c1", i+1, 1, 1, 0, 100, WindowSteady)
		r.TTFTMs = ttft
		records = append(records, r)
	}
	for i, ttft := range []float64{10, 60, 20, 30, 5} { // level 2: one too slow, one failed, one canceled
		r, _ := loadRecord("a@c2", i+1, 1, 1, 0, 100, WindowSteady)
		r.TTFTMs = ttft
		switch i {
		case 3:
			r.Status = StatusError
		case 4:
			r.Status = StatusCanceled
		}
		records = append(records, r)
	}
	sweeps := Sweeps(m, records, nil)
	if len(sweeps) != 1 || sweeps[0].Levels[0].Goodput != 1 || sweeps[0].Levels[1].Goodput != 0.5 || sweeps[0].BestGood != 1 {
		t.Fatalf("sweeps %+v", sweeps)
	}
	if words := sweeps[0].Words(m.Profile.Load.SLO); !strings.Contains(words[1], "goodput (SLO TTFT ≤ 50 ms): the highest level with at least 75% of requests within it is 1 stream") {
		t.Errorf("words %q", words)
	}
}

// Each round's alone requests take 100 ms each, one after the other, and
// its together pass takes 125 ms for both: speedup 200/125 = 1.6.
func TestTogetherSpeedupIsSequentialOverConcurrentTime(t *testing.T) {
	m := &Manifest{Profile: ProfileInfo{Load: &LoadInfo{Together: []string{"a", "b"}}},
		Arms: []ArmInfo{{Name: "a@alone", Base: "a", Mode: "alone"}, {Name: "b@alone", Base: "b", Mode: "alone"},
			{Name: "a@together", Base: "a", Mode: "together"}, {Name: "b@together", Base: "b", Mode: "together"}}}
	var records []Record
	for round := 1; round <= 8; round++ {
		at := float64(round) * 1000
		for i, rec := range []struct {
			arm          string
			start, e2e   float64
			ttft, outTPS float64
		}{{"a@alone", at, 100, 10, 100}, {"b@alone", at + 100, 100, 10, 100}, {"a@together", at + 300, 120, 15, 80}, {"b@together", at + 305, 120, 16, 80}} {
			r, _ := loadRecord(rec.arm, round*10+i, round, 1, rec.start, rec.e2e, "")
			r.TTFTMs, r.OutputTPS = rec.ttft, rec.outTPS
			records = append(records, r)
		}
	}
	failed, _ := loadRecord("a@together", 99, 8, 1, 8300, 120, "")
	failed.Status = StatusError
	records = append(records, failed) // spoils round 8's pair
	st := Together(m, records, 1)
	if st.Rounds != 7 || math.Abs(st.Speedup.Value-1.6) > 1e-9 || math.Abs(st.Efficiency.Value-0.8) > 1e-9 {
		t.Fatalf("rounds %d, speedup %v, efficiency %v; want 7, 1.6, 0.8", st.Rounds, st.Speedup.Value, st.Efficiency.Value)
	}
	if d := st.PerAgent[1]; math.Abs(d.TTFT.Value-1.6) > 1e-9 || d.Anomalies != 8 || d.Of != 8 {
		t.Errorf("agent b: TTFT ratio %v, anomalies %d of %d", d.TTFT.Value, d.Anomalies, d.Of)
	}
	if v := st.Verdict()[0]; !strings.Contains(v, "speedup 1.60×") || !strings.Contains(v, "efficiency 80%") {
		t.Errorf("verdict %q", v)
	}
	// The chance is the bound's own (its rank among the alone requests),
	// not a flat 5%.
	d := st.PerAgent[1]
	if want := fmt.Sprintf("the %s of %d alone TTFTs: %.1f%% would be above it by chance", ordinal(d.AloneP95Rank), d.AloneN, 100*(1-float64(d.AloneP95Rank)/float64(d.AloneN+1))); !strings.Contains(st.Verdict()[2], want) || d.AloneN == 0 {
		t.Errorf("contention %q, want %q", st.Verdict()[2], want)
	}
}

// A level whose blocks had no steady window has no known throughput: its
// rate is NaN ("—"), not 0, and it is no evidence that throughput stopped
// rising (a 0 there made a knee of the level below).
func TestALevelWithoutAWindowClaimsNoRate(t *testing.T) {
	nan := math.NaN()
	lv := func(c int, tps float64) Level {
		return Level{Concurrency: c, Throughput: Throughput{Concurrency: c, TokensPerS: tps, RequestsPerS: tps / 32}, TTFTP95: 10, ITLP95: 1}
	}
	if k, why := knee([]Level{lv(1, 9517), lv(4, nan)}); k != 0 {
		t.Errorf("a knee from an unknown level: %d (%s)", k, why)
	}
	if k, _ := knee([]Level{lv(1, 100), lv(2, nan), lv(4, 105)}); k != 1 {
		t.Errorf("the known level above still counts: knee %d", k)
	}
	m := &Manifest{Arms: []ArmInfo{{Name: "a@c1", Base: "a", Concurrency: 1}, {Name: "a@c4", Base: "a", Concurrency: 4}}}
	sweeps := Sweeps(m, nil, nil)
	if len(sweeps) != 1 || !math.IsNaN(sweeps[0].Levels[1].TokensPerS) || sweeps[0].Knee != 0 {
		t.Errorf("sweeps %+v", sweeps)
	}
}
