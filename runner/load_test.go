package runner

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/session"
)

func TestSweepRunsEachLevelAsAClosedLoop(t *testing.T) {
	fake := &fakeBackend{delays: []time.Duration{4 * time.Millisecond, 2 * time.Millisecond, 2 * time.Millisecond}}
	plan := testPlan(t, 1, 6, "greedy")
	plan.Profile.Concurrency = profiles.Levels{1, 2, 4}
	plan.expandLoad()
	if got := plan.Profile.ArmNames(); !slices.Equal(got, []string{"greedy@c1", "greedy@c2", "greedy@c4"}) {
		t.Fatalf("derived arms %v", got)
	}
	status, err, events := runPlan(t, context.Background(), plan, fake)
	if err != nil || status != session.StatusComplete {
		t.Fatal(status, err)
	}
	var fin Finished
	var started Started
	last := map[string]TrialDone{}
	for _, ev := range events {
		switch ev := ev.(type) {
		case Finished:
			fin = ev
		case Started:
			started = ev
		case TrialDone:
			last[ev.Record.Arm] = ev
		}
	}
	for _, n := range []int{1, 2, 4} {
		arm := plan.Profile.Arms[slices.Index([]int{1, 2, 4}, n)].Name
		counted, warmup := 0, 0
		firsts := map[[2]int]bool{} // (round, stream) seen
		for _, r := range trials(events) {
			if r.Arm != arm {
				continue
			}
			if r.Concurrency != n || r.Stream < 1 || r.Stream > n || r.InFlight < 1 || r.InFlight > n {
				t.Fatalf("%s trial %d: concurrency %d, stream %d, in flight %d", arm, r.Trial, r.Concurrency, r.Stream, r.InFlight)
			}
			if r.Phase == session.PhaseWarmup {
				warmup++
				if r.Window != "" {
					t.Errorf("%s warmup trial %d has window %q", arm, r.Trial, r.Window)
				}
				continue
			}
			key := [2]int{r.Round, r.Stream}
			if first := !firsts[key]; first != (r.Window == session.WindowRamp) {
				t.Errorf("%s trial %d (round %d, stream %d): window %q; a stream's first request of a block, and only it, is ramp-up", arm, r.Trial, r.Round, r.Stream, r.Window)
			}
			firsts[key] = true
			if r.Counted() {
				counted++
			}
		}
		// Warmup is at least one request per stream; blocks repeat until
		// the arm has its 6 steady requests.
		if warmup != n || counted < 6 {
			t.Errorf("%s: %d warmup, %d counted; want %d warmup and at least 6 counted", arm, warmup, counted, n)
		}
		// The counts the front ends show are the runner's: the warmup as
		// planned, and only steady requests toward the cap.
		if started.Warmup[arm] != n || last[arm].Warmups != n || last[arm].Measured != counted {
			t.Errorf("%s: planned warmup %d, counted %d warmup and %d measured; want %d, %d, %d", arm, started.Warmup[arm], last[arm].Warmups, last[arm].Measured, n, n, counted)
		}
		s := fin.Summary[arm]
		if s.Load == nil || s.Load.Concurrency != n || !(s.Load.TokensPerS > 0) || s.Load.Blocks < 1 || s.Metrics["e2e_ms"].N != counted {
			t.Errorf("%s summary: load %+v, e2e n %d, counted %d", arm, s.Load, s.Metrics["e2e_ms"].N, counted)
		}
	}
}

// Overlapping requests have no energy of their own: each steady window
// has, and the summary adds the windows up; memory is each block's peak.
func TestLoadEnergyIsMeasuredPerSteadyWindow(t *testing.T) {
	plan := testPlan(t, 0, 4, "greedy")
	plan.Profile.Concurrency = profiles.Levels{2}
	plan.expandLoad()
	gpu := withFakeGPU(plan)
	delays := []time.Duration{30 * time.Millisecond, 30 * time.Millisecond, 30 * time.Millisecond, 30 * time.Millisecond}
	status, err, events := runPlan(t, context.Background(), plan, busyBackend{&fakeBackend{delays: delays}, gpu})
	if err != nil || status != session.StatusComplete {
		t.Fatal(status, err)
	}
	var blocks []BlockDone
	for _, ev := range events {
		if b, ok := ev.(BlockDone); ok {
			blocks = append(blocks, b)
		}
	}
	for _, r := range trials(events) {
		if r.EnergyQuality != session.EnergyUnavailable || !math.IsNaN(r.EnergyJ) {
			t.Errorf("trial %d: %s %.3f J; an overlapping request has no energy of its own", r.Trial, r.EnergyQuality, r.EnergyJ)
		}
	}
	fin := events[len(events)-1].(Finished)
	sum := fin.Summary["greedy@c2"]
	if sum.Load == nil || sum.LoadCost == nil || len(blocks) != sum.Load.Blocks {
		t.Fatalf("load %+v, cost %+v, %d BlockDone events", sum.Load, sum.LoadCost, len(blocks))
	}
	windowS, tokens := 0.0, 0.0
	for _, b := range blocks {
		// Both streams generate through the whole window: 200 W above idle.
		if want := 200 * b.WindowS; b.Cost.EnergyQuality != "counter" || math.Abs(b.Cost.EnergyJ-want) > 0.15*want || !(b.Cost.PeakRSSMB > 0) {
			t.Errorf("round %d: %s %.3f J over %.3f s (want ~%.3f), peak %.0f MB", b.Round, b.Cost.EnergyQuality, b.Cost.EnergyJ, b.WindowS, want, b.Cost.PeakRSSMB)
		}
		windowS += b.WindowS
		tokens += b.TokensPerS * b.WindowS
	}
	c := sum.LoadCost
	if math.Abs(windowS-sum.Load.WindowS) > 1e-9 || c.EnergyQuality != "counter" || math.Abs(c.JPerToken-c.EnergyJ/tokens) > 1e-9 ||
		math.Abs(c.EnergyJ-200*windowS) > 0.15*200*windowS || c.AvgPowerW < 200 || c.AvgPowerW > 260 {
		t.Errorf("cost %+v over %.3f s (summary %.3f s) and %.0f tokens", c, windowS, sum.Load.WindowS, tokens)
	}
}

func TestTogetherRunsAlonePassesAndTogetherPasses(t *testing.T) {
	fake := &fakeBackend{delays: []time.Duration{3 * time.Millisecond, 2 * time.Millisecond}}
	plan := testPlan(t, 1, 7, "a", "b")
	plan.Profile.Together = []string{"a", "b"}
	plan.expandLoad()
	if got := plan.Profile.ArmNames(); !slices.Equal(got, []string{"a@alone", "b@alone", "a@together", "b@together"}) {
		t.Fatalf("derived arms %v", got)
	}
	status, err, events := runPlan(t, context.Background(), plan, fake)
	if err != nil || status != session.StatusComplete {
		t.Fatal(status, err)
	}
	recs := trials(events)
	if len(recs) != 4*8 {
		t.Fatalf("%d requests; want 4 arms × 8 rounds", len(recs))
	}
	for _, r := range recs {
		together := r.Arm == "a@together" || r.Arm == "b@together"
		if want := map[bool]int{true: 2, false: 1}[together]; r.Concurrency != want || r.Window != "" {
			t.Errorf("%s trial %d: concurrency %d, window %q", r.Arm, r.Trial, r.Concurrency, r.Window)
		}
	}
	var manifest string
	for _, ev := range events {
		if f, ok := ev.(Finished); ok {
			manifest = f.Manifest
		}
	}
	s, err := session.Load(manifest)
	if err != nil {
		t.Fatal(err)
	}
	st := session.Together(s.Manifest, s.Records, 1)
	if st == nil || st.Rounds != 7 || !(st.Speedup.Value > 0) || len(st.PerAgent) != 2 || st.PerAgent[0].Of != 7 {
		t.Fatalf("study %+v", st)
	}
	if words := st.Verdict(); len(words) != 3 || !strings.Contains(words[0], "speedup") || !strings.Contains(words[0], "efficiency") {
		t.Errorf("verdict %q; want speedup and efficiency, then a line per agent", words)
	}
}

// downOnce answers each request with one token after 20 ms, except its
// sixth, which finds the server unreachable.
type downOnce struct{ calls atomic.Int32 }

func (d *downOnce) Probe(ctx context.Context, model string) (backends.Info, error) {
	return backends.Info{Kind: "fake", Model: model}, nil
}

func (d *downOnce) Generate(ctx context.Context, req backends.Request, onChunk backends.OnChunk) (backends.Result, error) {
	res := backends.NewResult()
	if d.calls.Add(1) == 6 {
		return res, fmt.Errorf("%w: connection refused", backends.ErrUnreachable)
	}
	select {
	case <-time.After(20 * time.Millisecond):
		onChunk(1, backends.Answer)
		res.OutputTokens, res.StopReason = 1, "length"
		return res, nil
	case <-ctx.Done():
		return res, ctx.Err()
	}
}

// A request that finds the server down ends its block; the block's other
// requests, cut by the run, are canceled, not failures of the server.
func TestABlockCutByALostServerCancelsItsOtherRequests(t *testing.T) {
	plan := testPlan(t, 0, 8, "greedy")
	plan.Profile.Concurrency = profiles.Levels{4}
	plan.expandLoad()
	status, err, events := runPlan(t, context.Background(), plan, &downOnce{})
	if err != nil || status != session.StatusComplete {
		t.Fatal(status, err)
	}
	errored, canceled := 0, 0
	for _, r := range trials(events) {
		switch r.Status {
		case session.StatusError:
			errored++
		case session.StatusCanceled:
			canceled++
			if r.Degraded() || r.Counted() || !strings.Contains(r.Error, "its load block ended early") {
				t.Errorf("canceled trial %d: degraded %v, counted %v, error %q", r.Trial, r.Degraded(), r.Counted(), r.Error)
			}
		}
	}
	if errored != 1 || canceled == 0 {
		t.Errorf("%d errors, %d canceled; want the one request that found the server down, and the block's others canceled", errored, canceled)
	}
}

// An arm's own concurrency replaces the profile's levels for that arm;
// levels run in rising order whoever asked for them.
func TestArmConcurrencyJoinsTheSweep(t *testing.T) {
	plan := testPlan(t, 0, 2, "a", "b")
	plan.Profile.Concurrency = profiles.Levels{1, 4}
	plan.Profile.Arms[0].Concurrency = 2
	plan.expandLoad()
	if got := plan.Profile.ArmNames(); !slices.Equal(got, []string{"b@c1", "a@c2", "b@c4"}) {
		t.Errorf("derived arms %v", got)
	}
	if plan.Load[1] != (ArmLoad{Base: "a", Concurrency: 2}) || plan.streams() != 4 || len(plan.Targets[0].Arms) != 3 {
		t.Errorf("load %+v, streams %d, target arms %v", plan.Load, plan.streams(), plan.Targets[0].Arms)
	}
}

// With a duration each level runs until its steady windows add up to it,
// however many requests that takes, and says so when it stops.
func TestDurationEndsEachLevelByItsSteadyTime(t *testing.T) {
	fake := &fakeBackend{delays: []time.Duration{3 * time.Millisecond}}
	plan := testPlan(t, 0, 2, "greedy") // 2 trials: far fewer than the duration takes
	plan.Profile.Concurrency = profiles.Levels{1, 2}
	plan.Profile.LoadDuration = 150 * time.Millisecond
	plan.expandLoad()
	plan.Stop = Unbounded{}
	status, err, events := runPlan(t, context.Background(), plan, fake)
	if err != nil || status != session.StatusComplete {
		t.Fatal(status, err)
	}
	stops := eventsOf[ArmStopped](events)
	if len(stops) != 2 {
		t.Fatalf("stops %+v", stops)
	}
	fin := eventsOf[Finished](events)[0]
	for _, st := range stops {
		load := fin.Summary[st.Arm].Load
		if !strings.HasPrefix(st.Reason, "ran 150ms of steady load") || load == nil || load.WindowS < 0.15 || fin.Summary[st.Arm].TimedOK <= 2 {
			t.Errorf("%s: %q, load %+v, %d timed ok", st.Arm, st.Reason, load, fin.Summary[st.Arm].TimedOK)
		}
	}
}

// An arm run for a duration whose blocks keep having no steady window
// (its streams never all in flight) gives up after three in a row
// instead of running for ever; a block with a window starts the count
// again. The reason says whether those blocks' requests failed.
func TestDurationGivesUpOnBlocksWithoutAWindow(t *testing.T) {
	plan := testPlan(t, 0, 2, "greedy")
	plan.Profile.LoadDuration = time.Minute
	r := &run{plan: plan, arms: make([]armState, 1), events: make(chan Event, 4)}
	b := &r.arms[0].blocks
	b.addEmpty(5)
	b.addEmpty(0)
	b.add(session.Throughput{WindowS: 0.5, TokensPerS: 100}, session.LoadCost{EnergyJ: math.NaN(), PeakRSSMB: math.NaN()})
	b.addEmpty(0)
	b.addEmpty(2)
	if r.endByDuration(0); r.arms[0].stopped {
		t.Fatalf("stopped after two empty blocks in a row: %+v", r.arms[0].stop)
	}
	b.addEmpty(1)
	if r.endByDuration(0); !r.arms[0].stopped || r.arms[0].stop.Short != "no steady window" || b.blocks != 6 || b.steadyS != 0.5 ||
		!strings.Contains(r.arms[0].stop.Reason, "3 blocks in a row had no steady window (each time a stream ended before the others had finished their first request; 3 of their requests did not end ok: see their errors)") {
		t.Errorf("after three in a row: stopped %v (%+v), %d blocks, %.1f s steady", r.arms[0].stopped, r.arms[0].stop, b.blocks, b.steadyS)
	}
	// Blocks whose requests all ended ok do not send the user to errors
	// there are none of.
	r = &run{plan: plan, arms: make([]armState, 1), events: make(chan Event, 4)}
	for range emptyBlocksToGiveUp {
		r.arms[0].blocks.addEmpty(0)
	}
	if r.endByDuration(0); !strings.Contains(r.arms[0].stop.Reason, "; all their requests ended ok: the streams were served unevenly)") {
		t.Errorf("after three empty blocks without a failure: %q", r.arms[0].stop.Reason)
	}
}
