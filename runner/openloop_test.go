package runner

import (
	"context"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/runner/arrival"
	"github.com/tokentop/tokentop/session"
)

// openPlan is an open loop at rate on the fake server, its blocks 100 ms
// of arrivals, with cap requests in flight at most (0: none).
func openPlan(t *testing.T, trials int, rate float64, cap int) *Plan {
	t.Helper()
	plan := testPlan(t, 0, trials, "greedy")
	plan.Profile.Rate, plan.Profile.MaxConcurrency = profiles.Rates{rate}, cap
	plan.expandLoad()
	plan.OpenBlock = 100 * time.Millisecond
	return plan
}

func timedOf(events []Event, arm string) []session.Record {
	var out []session.Record
	for _, r := range trials(events) {
		if r.Arm == arm && r.Phase == session.PhaseTimed {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b session.Record) int { return a.Trial - b.Trial })
	return out
}

// Into a server slower than its gaps (24 ms a request, due every 5 ms on
// average), an open loop keeps sending on schedule: several requests are
// in flight at once, each left at or after its due time, and each record
// keeps when it was due and how late it left.
func TestAnOpenLoopSendsOnScheduleWhateverTheServerDoes(t *testing.T) {
	fake := &fakeBackend{delays: slices.Repeat([]time.Duration{3 * time.Millisecond}, 8)}
	plan := openPlan(t, 20, 200, 0)
	if got := plan.Profile.ArmNames(); !slices.Equal(got, []string{"greedy@r200"}) {
		t.Fatalf("derived arms %v", got)
	}
	status, err, events := runPlan(t, context.Background(), plan, fake)
	if err != nil || status != session.StatusComplete {
		t.Fatal(status, err)
	}
	recs := timedOf(events, "greedy@r200")
	if len(recs) < 20 {
		t.Fatalf("%d timed requests, want a block of 20", len(recs))
	}
	most := 0
	for k, r := range recs {
		most = max(most, r.InFlight)
		if math.IsNaN(r.ScheduledMs) || r.QueueMs < 0 || math.IsNaN(r.QueueMs) {
			t.Fatalf("request %d: scheduled %v ms, queue %v ms", r.Trial, r.ScheduledMs, r.QueueMs)
		}
		if r.TTFTFromDueMs() < r.TTFTMs || r.E2EFromDueMs() < r.E2EMs {
			t.Errorf("request %d: the latency from its due time is shorter than from its send", r.Trial)
		}
		if k > 0 && r.Round == recs[k-1].Round && r.ScheduledMs <= recs[k-1].ScheduledMs {
			t.Errorf("request %d is due at %v ms, not after request %d (%v ms): trials are numbered in schedule order", r.Trial, r.ScheduledMs, recs[k-1].Trial, recs[k-1].ScheduledMs)
		}
		if r.Window != session.WindowSteady || r.Concurrency != 0 {
			t.Errorf("request %d: window %q, concurrency %d", r.Trial, r.Window, r.Concurrency)
		}
	}
	if most < 2 {
		t.Errorf("at most %d request in flight: the loop waited for the server", most)
	}
}

// Under a cap of one in flight, a server slower than the rate makes a
// queue that grows through the block: the last request waits far longer
// than the first, and its latency from its due time shows the wait.
func TestAnOpenLoopUnderACapShowsTheGrowingQueue(t *testing.T) {
	fake := &fakeBackend{delays: slices.Repeat([]time.Duration{3 * time.Millisecond}, 8)}
	plan := openPlan(t, 20, 200, 1)
	status, err, events := runPlan(t, context.Background(), plan, fake)
	if err != nil || status != session.StatusComplete {
		t.Fatal(status, err)
	}
	recs := timedOf(events, "greedy@r200")
	block := recs[:20]
	for _, r := range block {
		if r.InFlight > 1 {
			t.Fatalf("request %d started with %d in flight under a cap of 1", r.Trial, r.InFlight)
		}
	}
	// 20 requests of at least 24 ms each, one at a time, take 456 ms
	// before the last can start; the schedule put them all within a few
	// hundred ms at 200/s.
	waiting := 0
	for _, ev := range eventsOf[TrialDone](events) {
		waiting = max(waiting, ev.Waiting)
	}
	if waiting < 2 {
		t.Errorf("at most %d requests waiting for the slot: the queue does not show", waiting)
	}
	first, last := block[0], block[len(block)-1]
	if last.QueueMs < first.QueueMs+100 || last.E2EFromDueMs() < last.E2EMs+100 {
		t.Errorf("queue %v ms for the first request, %v ms for the last: no growing queue", first.QueueMs, last.QueueMs)
	}
}

// The flags put an open loop on any profile, and refuse what cannot run.
func TestOpenLoopFlagsAreChecked(t *testing.T) {
	p, err := profiles.Find("quick")
	if err != nil {
		t.Fatal(err)
	}
	base := Options{OutDir: t.TempDir(), Trials: NoOverride, Warmup: NoOverride, MaxTokens: NoOverride}
	opts := base
	opts.Rates, opts.Arrival, opts.Burstiness, opts.MaxConcurrency = profiles.Rates{1, 4}, "gamma", 0.5, 8
	plan, err := Resolve(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := plan.Profile.ArmNames(); !slices.Equal(got, []string{"greedy@r1", "greedy@r4"}) || plan.Load[1].Concurrency != 8 || plan.Profile.Burstiness != 0.5 {
		t.Errorf("arms %v, load %+v, burstiness %v", got, plan.Load, plan.Profile.Burstiness)
	}
	for _, c := range []struct {
		edit func(*Options)
		want string
	}{
		{func(o *Options) { o.Arrival = "gamma" }, "--arrival, --burstiness and --max-concurrency shape an open loop; set --rate too"},
		{func(o *Options) { o.Rates, o.Arrival = profiles.Rates{2}, "bursty" }, `arrival: "bursty" is not an arrival process; use one of poisson, constant, gamma`},
		{func(o *Options) { o.Rates, o.Burstiness = profiles.Rates{2}, 2 }, `burstiness: only a gamma arrival has a burstiness; set arrival = "gamma"`},
		{func(o *Options) { o.Rates, o.MaxConcurrency = profiles.Rates{2}, 1000 }, "max_concurrency: 1000 is out of range; use 1 to 256"},
	} {
		opts := base
		c.edit(&opts)
		if _, err := Resolve(p, opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want %q", opts, err, c.want)
		}
	}
}

// Under an SLO, a sweep whose lowest rate meets it and highest does not
// is refined between them: the search adds the geometric middle as an
// arm of its own (marked searched in the manifest), and the words give
// the bracket the answer lies in. One request in flight at most, of 16 ms
// each: 10/s always keeps TTFT within 60 ms of its due time, 640/s never.
func TestTheSLOSearchRunsRatesBetween(t *testing.T) {
	fake := &fakeBackend{delays: slices.Repeat([]time.Duration{2 * time.Millisecond}, 8)}
	plan := testPlan(t, 0, 16, "greedy")
	plan.Profile.Rate, plan.Profile.MaxConcurrency = profiles.Rates{10, 640}, 1
	plan.Profile.SLO = profiles.SLO{TTFTMs: 60, Goodput: 0.9}
	plan.expandLoad()
	plan.OpenBlock = 100 * time.Millisecond
	status, err, events := runPlan(t, context.Background(), plan, fake)
	if err != nil || status != session.StatusComplete {
		t.Fatal(status, err)
	}
	added := eventsOf[ArmAdded](events)
	if len(added) == 0 || added[0].Arm != "greedy@r80" || added[0].Rate != 80 || !strings.Contains(added[0].Why, "10 req/s met the SLO, 640 did not; trying 80") {
		t.Fatalf("search steps %+v", added)
	}
	s := finishedSession(t, events)
	searched := 0
	for _, a := range s.Manifest.Arms {
		if a.Searched {
			searched++
		}
	}
	if searched != len(added) || len(s.Manifest.Arms) != 2+len(added) {
		t.Errorf("manifest arms %+v; want the %d searched ones marked", s.Manifest.Arms, len(added))
	}
	res, err := s.LoadResults()
	if err != nil {
		t.Fatal(err)
	}
	// The answer is in the rates the schedules came to, and an open loop
	// capped in flight reports as an open loop: no "sweep of 1 stream"
	// (its cap is not a level) beside its rates.
	words := strings.Join(res.Words(), "\n")
	if !regexp.MustCompile(`the highest rate that meets the SLO lies between [0-9.]+ and [0-9.]+ req/s as scheduled`).MatchString(words) || strings.Contains(words, "stream") {
		t.Errorf("words:\n%s", words)
	}
	if len(res.Sweeps) != 0 {
		t.Errorf("an open loop under a cap made a sweep of streams: %+v", res.Sweeps)
	}
}

// The profile's arrival names and the scheduler's processes are one list:
// profiles checks them, runner/arrival draws them.
func TestProfilesNameTheSchedulersProcesses(t *testing.T) {
	if !slices.Equal(profiles.ArrivalKinds, arrival.Processes) {
		t.Errorf("profiles take %v, the scheduler draws %v", profiles.ArrivalKinds, arrival.Processes)
	}
}

// An open loop that may keep more requests in flight than the process
// may open files is warned of before it runs, naming the arm, the bound
// and the way out; a capped one is bounded by its cap, and a closed loop
// is never warned of.
func TestAnOpenLoopPastTheOpenFilesLimitIsWarnedOf(t *testing.T) {
	plan := openPlan(t, 20, 50, 0)
	plan.Profile.TrialTimeout = 30 * time.Second // 50 req/s × 30 s: 1,500 in flight at most
	text := plan.inFlightWarning(1024)
	for _, want := range []string{"greedy@r50", "1500 requests in flight", "50 req/s for up to the 30s trial timeout", "only 1024 files", "ulimit -n", "--max-concurrency"} {
		if !strings.Contains(text, want) {
			t.Errorf("warning lacks %q: %s", want, text)
		}
	}
	if text := plan.inFlightWarning(1500 + filesHeldBack); text != "" {
		t.Errorf("warned with room for every request: %s", text)
	}
	capped := openPlan(t, 20, 50, 200)
	if text := capped.inFlightWarning(1024); text != "" {
		t.Errorf("warned of a run capped at 200 in flight: %s", text)
	}
	if text := capped.inFlightWarning(200); !strings.Contains(text, "200 requests in flight (its cap)") {
		t.Errorf("capped run past its limit: %q", text)
	}
	closed := testPlan(t, 0, 20, "greedy")
	closed.Profile.Concurrency = []int{4}
	closed.expandLoad()
	if text := closed.inFlightWarning(1); text != "" {
		t.Errorf("warned of a closed loop: %s", text)
	}
}

// Every rate level and every repeat is its own random draw; the arms of
// one level share theirs. (The seed once left out the rate and the
// repeat: every level replayed one unit-rate schedule scaled by 1/R, its
// first ten gaps × R equal to four decimals, and the SLO search's
// "running it again" replayed the schedule it had.)
func TestEachRateAndRepeatDrawsItsOwnSchedule(t *testing.T) {
	gaps := func(rate float64, round, repeat int, seed int64) []float64 {
		p := arrival.Process{Kind: arrival.Poisson, Rate: rate, Seed: scheduleSeed(seed, rate, round, repeat)}
		due := p.Schedule(10)
		out := make([]float64, len(due))
		for k := range due {
			out[k] = due[k].Seconds() * rate // in mean gaps: a scaled copy gives the same
		}
		return out
	}
	same := func(a, b []float64) bool {
		for k := range a {
			if math.Abs(a[k]-b[k]) > 1e-4 {
				return false
			}
		}
		return true
	}
	if same(gaps(20, 2, 0, 42), gaps(23.8, 2, 0, 42)) {
		t.Error("two rates of a sweep drew one schedule, scaled")
	}
	if same(gaps(23.8, 2, 0, 42), gaps(23.8, 2, 1, 42)) {
		t.Error("a repeat of a rate replayed its schedule")
	}
	if same(gaps(20, 2, 0, 42), gaps(20, 3, 0, 42)) {
		t.Error("two rounds drew one schedule")
	}
	if !same(gaps(20, 2, 0, 42), gaps(20, 2, 0, 42)) {
		t.Error("arms of one level with one seed drew different schedules")
	}
	// Over many repeats the scheduled rate scatters around the offered
	// one, as independent Poisson draws of 60 requests do (sd ≈ 13%).
	var rates []float64
	for repeat := range 200 {
		p := arrival.Process{Kind: arrival.Poisson, Rate: 20, Seed: scheduleSeed(42, 20, 2, repeat)}
		due := p.Schedule(60)
		rates = append(rates, 59/(due[59]-due[0]).Seconds())
	}
	slices.Sort(rates)
	if med := rates[100]; med < 18 || med > 22 {
		t.Errorf("median scheduled rate %.2f of 200 repeats at 20 req/s", med)
	}
}
