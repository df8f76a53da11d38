package runner

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/metrics"
	"github.com/tokentop/tokentop/metrics/telemetry"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/session"
)

// fakeBackend replays a script of per-token delays and records when it
// actually handed each chunk over, so the runner's stamps can be checked
// against both the script and the truth.
type fakeBackend struct {
	mu     sync.Mutex
	delays []time.Duration // before each token, from the previous one
	// extra, when set, delays a request's first token further.
	extra    func(req backends.Request) time.Duration
	fail     func(call int) error
	answered func(call int) // called once a request's answer is complete
	block    bool           // wait for the context instead of answering
	probeErr error
	calls    int
	sent     [][]time.Duration // per call: handover times since Generate began
	requests []backends.Request
}

func (f *fakeBackend) Probe(ctx context.Context, model string) (backends.Info, error) {
	return backends.Info{Kind: "fake", Model: model, ServerVersion: "1.0"}, f.probeErr
}

func (f *fakeBackend) Generate(ctx context.Context, req backends.Request, onChunk backends.OnChunk) (backends.Result, error) {
	begin := time.Now()
	f.mu.Lock()
	f.calls++
	call := f.calls
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	res := backends.NewResult()
	if f.block {
		<-ctx.Done()
		return res, ctx.Err()
	}
	if f.fail != nil {
		if err := f.fail(call); err != nil {
			return res, err
		}
	}
	var sent []time.Duration
	due := time.Duration(0)
	if f.extra != nil {
		due = f.extra(req)
	}
	for _, d := range f.delays {
		due += d
		time.Sleep(time.Until(begin.Add(due)))
		sent = append(sent, time.Since(begin))
		onChunk(1, backends.Answer)
	}
	f.mu.Lock()
	f.sent = append(f.sent, sent)
	f.mu.Unlock()
	if f.answered != nil {
		f.answered(call)
	}
	res.OutputTokens, res.StopReason = len(f.delays), "length"
	return res, nil
}

// armsProfile is the profile head followed by the arms, each after the
// first at temperature 0.8.
func armsProfile(t testing.TB, head string, arms ...string) *profiles.Profile {
	t.Helper()
	src := head
	for i, a := range arms {
		src += "[[arms]]\nname = \"" + a + "\"\n"
		if i > 0 {
			src += "temperature = 0.8\n"
		}
	}
	p, err := profiles.Parse("t.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func testPlan(t testing.TB, warmup, trials int, arms ...string) *Plan {
	t.Helper()
	p := armsProfile(t, "name = \"t\"\nmax_tokens = 8\ntrials = 1\nseed = 100\ntimeout = \"2s\"\nprompts = [\"a\", \"b\"]\n[models]\nollama = \"m\"\n", arms...)
	plan, err := Resolve(p, Options{Backend: "ollama", OutDir: t.TempDir(), Trials: trials, Warmup: warmup, MaxTokens: NoOverride})
	if err != nil {
		t.Fatal(err)
	}
	// No power source unless a test scripts one, whatever this machine has.
	plan.Telemetry.Open = func() telemetry.Found {
		return telemetry.Found{Status: telemetry.Status{GPU: "no NVIDIA GPU found (test)", CPU: "no CPU package energy (test)"}}
	}
	return plan
}

// finishedSession is the session a run's Finished event names, read back.
func finishedSession(t testing.TB, events []Event) *session.Session {
	t.Helper()
	s, err := session.Load(eventsOf[Finished](events)[0].Manifest)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func runPlan(t *testing.T, ctx context.Context, plan *Plan, b backends.Backend) (string, error, []Event) {
	t.Helper()
	events := make(chan Event, 1024)
	status, err := Run(ctx, plan, []backends.Backend{b}, events)
	var got []Event
	for ev := range events {
		got = append(got, ev)
	}
	return status, err, got
}

func trials(events []Event) []session.Record {
	var out []session.Record
	for _, ev := range events {
		if td, ok := ev.(TrialDone); ok {
			out = append(out, td.Record)
		}
	}
	return out
}

func TestMeasuredTimesMatchTheScript(t *testing.T) {
	script := []time.Duration{30 * time.Millisecond, 5 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 5 * time.Millisecond}
	fake := &fakeBackend{delays: script}
	status, err, events := runPlan(t, context.Background(), testPlan(t, 0, 5, "greedy"), fake)
	if err != nil || status != session.StatusComplete {
		t.Fatal(status, err)
	}
	recs := trials(events)
	var ttftErr, itlErr []float64
	for i, rec := range recs {
		sent := fake.sent[i]
		// Against the moments the fake handed each token over, not the
		// script it slept to: a loaded machine oversleeps, and that is the
		// fake's lateness, not the runner's. TTFT never precedes the
		// hand-over and lags it by at most 1 ms (median, below); ITL p50
		// and max are those of the hand-over gaps.
		lag := rec.TTFTMs - ms(sent[0])
		if lag < 0 {
			t.Errorf("trial %d: TTFT %.3f ms precedes the hand-over at %.3f ms", i+1, rec.TTFTMs, ms(sent[0]))
		}
		ttftErr = append(ttftErr, lag)
		var gaps []float64
		for j := 1; j < len(sent); j++ {
			gaps = append(gaps, ms(sent[j]-sent[j-1]))
		}
		sort.Float64s(gaps)
		itlErr = append(itlErr, math.Abs(rec.ITLP50Ms-(gaps[1]+gaps[2])/2), math.Abs(rec.ITLMaxMs-gaps[3]))
		if rec.OutputTokens != 5 || math.Abs(rec.TPOTMs-(rec.E2EMs-rec.TTFTMs)/4) > 1e-9 {
			t.Errorf("trial %d: %+v", i+1, rec)
		}
	}
	// The median, robust to a rare preemption between a hand-over and
	// its stamp on a loaded machine.
	sort.Float64s(ttftErr)
	sort.Float64s(itlErr)
	if ttftErr[len(ttftErr)/2] > 1 || itlErr[len(itlErr)/2] > 1 {
		t.Errorf("median error vs the hand-overs: TTFT %.3f ms, ITL %.3f ms", ttftErr[len(ttftErr)/2], itlErr[len(itlErr)/2])
	}
}

func TestInterleavedWarmupThenTimedAndFilesWritten(t *testing.T) {
	fake := &fakeBackend{delays: []time.Duration{time.Millisecond, time.Millisecond}}
	plan := testPlan(t, 2, 3, "greedy", "hot")
	status, err, events := runPlan(t, context.Background(), plan, fake)
	if err != nil || status != session.StatusComplete {
		t.Fatal(status, err)
	}
	// Five rounds of both arms, in the order the schedule gives (each arm
	// first once in every two rounds), with round and place recorded.
	var phases []string
	firsts := map[string]int{}
	recs := trials(events)
	for i, rec := range recs {
		phases = append(phases, rec.Phase[:1])
		if rec.Round != i/2+1 || rec.Position != i%2+1 || recs[i-i%2].Arm == recs[i-i%2+1].Arm {
			t.Errorf("trial %d: %s round %d position %d", i, rec.Arm, rec.Round, rec.Position)
		}
		if rec.Position == 1 && rec.Round <= 4 {
			firsts[rec.Arm]++
		}
	}
	if got := strings.Join(phases, ""); got != "wwwwtttttt" || firsts["greedy"] != 2 || firsts["hot"] != 2 {
		t.Errorf("phases %s, first places in rounds 1-4 %v", got, firsts)
	}
	// Same prompt and seed offset for both arms of a round.
	if fake.requests[0].Prompt != fake.requests[1].Prompt || fake.requests[0].Seed != fake.requests[1].Seed ||
		fake.requests[2].Prompt == fake.requests[0].Prompt || fake.requests[1].Temperature != 0.8 {
		t.Errorf("requests %+v", fake.requests[:3])
	}
	fin := events[len(events)-1].(Finished)
	s, err := session.Load(fin.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Records) != 10 || s.Records[9].Round != 5 || s.Manifest.Status != session.StatusComplete || s.Manifest.Summary["hot"].TimedOK != 3 ||
		s.Manifest.Summary["greedy"].Warmup != 2 || s.Manifest.TargetOf("hot").ServerVersion != "1.0" || s.Manifest.Arms[1].Target != "ollama" || len(s.Warnings) != 0 {
		t.Errorf("session %+v warnings %v", s.Manifest, s.Warnings)
	}
	tokens, _ := os.ReadFile(filepath.Join(filepath.Dir(fin.Manifest), s.Manifest.TokensFile))
	if n := strings.Count(string(tokens), "\n"); n != 1+10*2 {
		t.Errorf("tokens CSV has %d lines", n)
	}
	stopped := 0
	for _, ev := range events {
		if _, ok := ev.(ArmStopped); ok {
			stopped++
		}
	}
	if stopped != 2 {
		t.Errorf("%d arm-stopped events", stopped)
	}
}

func TestDegradedTrialsAreRecordedAndTheRunGoesOn(t *testing.T) {
	fake := &fakeBackend{delays: []time.Duration{time.Millisecond}, fail: func(call int) error {
		if call == 2 {
			return errors.New("stream ended before the server's final message")
		}
		return nil
	}}
	status, err, events := runPlan(t, context.Background(), testPlan(t, 0, 3, "greedy"), fake)
	if err != nil || status != session.StatusComplete {
		t.Fatal(status, err)
	}
	recs := trials(events)
	if len(recs) != 3 || recs[1].Status != session.StatusError || !strings.Contains(recs[1].Error, "final message") {
		t.Fatalf("%+v", recs)
	}
	fin := events[len(events)-1].(Finished)
	if sum := fin.Summary["greedy"]; sum.TimedOK != 2 || sum.Degraded != 1 {
		t.Errorf("summary %+v", sum)
	}
}

func TestTimeoutAndAllFailed(t *testing.T) {
	plan := testPlan(t, 0, 2, "greedy")
	plan.Profile.TrialTimeout = 30 * time.Millisecond
	status, err, events := runPlan(t, context.Background(), plan, &fakeBackend{block: true})
	recs := trials(events)
	if err != nil || status != session.StatusFailed || len(recs) != 2 || recs[0].Status != session.StatusTimeout ||
		!strings.Contains(recs[0].Error, "30ms trial timeout") {
		t.Fatalf("%v %v %+v", status, err, recs)
	}
}

func TestCancelLeavesAPartialConsistentSession(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	fake := &fakeBackend{delays: []time.Duration{time.Millisecond}}
	fake.fail = func(call int) error {
		if call == 3 {
			cancel() // the user presses ctrl+c during trial 3
			return context.Canceled
		}
		return nil
	}
	status, err, events := runPlan(t, ctx, testPlan(t, 0, 50, "greedy"), fake)
	if err != nil || status != session.StatusPartial {
		t.Fatal(status, err)
	}
	fin := events[len(events)-1].(Finished)
	s, err := session.Load(fin.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Records) != 3 || s.Records[2].Status != session.StatusCanceled || s.Manifest.Status != session.StatusPartial || s.Manifest.FinishedAt == nil {
		t.Errorf("records %d last %+v manifest %+v", len(s.Records), s.Records[len(s.Records)-1], s.Manifest)
	}
	// The trial the user cut is canceled, not a failure of the backend.
	if sum := s.Manifest.Summary["greedy"]; sum.Degraded != 0 || sum.TimedOK != 2 {
		t.Errorf("a canceled trial counted as degraded: %+v", sum)
	}
}

func TestCancelDuringTheLastTrialIsStillPartial(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	fake := &fakeBackend{delays: []time.Duration{time.Millisecond}}
	fake.fail = func(call int) error {
		if call == 2 {
			cancel()
			return context.Canceled
		}
		return nil
	}
	status, err, events := runPlan(t, ctx, testPlan(t, 0, 2, "greedy"), fake)
	if err != nil || status != session.StatusPartial {
		t.Fatal(status, err)
	}
	if note := finishedSession(t, events).Manifest.StopNote; note != "interrupted during the last trial" {
		t.Errorf("stop note %q; want the trial the interrupt cut named", note)
	}
}

// An interrupt that cuts no request says what it did end: the plan
// before its end, or nothing at all when it came after the last answer
// (the grid once kept such a session as partial, "interrupted during the
// last trial", and never ran it again).
func TestCancelBetweenTrialsSaysWhatItEnded(t *testing.T) {
	for _, c := range []struct {
		after      int
		status     string
		note       string
		wantTrials int
	}{
		{after: 1, status: session.StatusPartial, note: "interrupted before the plan finished", wantTrials: 1},
		{after: 3, status: session.StatusComplete, wantTrials: 3},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		fake := &fakeBackend{delays: []time.Duration{time.Millisecond}}
		fake.answered = func(call int) {
			if call == c.after {
				cancel()
			}
		}
		status, err, events := runPlan(t, ctx, testPlan(t, 0, 3, "greedy"), fake)
		cancel()
		if err != nil || status != c.status {
			t.Errorf("canceled after answer %d: %s, %v; want %s", c.after, status, err, c.status)
			continue
		}
		s := finishedSession(t, events)
		if s.Manifest.Status != c.status || s.Manifest.StopNote != c.note || len(s.Records) != c.wantTrials {
			t.Errorf("canceled after answer %d: manifest %s %q with %d records; want %s %q with %d", c.after, s.Manifest.Status, s.Manifest.StopNote, len(s.Records), c.status, c.note, c.wantTrials)
		}
	}
}

func TestProbeFailureWritesNothing(t *testing.T) {
	plan := testPlan(t, 0, 2, "greedy")
	_, err, events := runPlan(t, context.Background(), plan, &fakeBackend{probeErr: errors.New("cannot connect")})
	if err == nil || !strings.Contains(err.Error(), "cannot connect") || len(events) != 0 {
		t.Fatalf("%v %v", err, events)
	}
	if entries, _ := os.ReadDir(plan.OutDir); len(entries) != 0 {
		t.Errorf("files written: %v", entries)
	}
}

func TestResolve(t *testing.T) {
	p, _ := profiles.Find("greedy-vs-sampling")
	base := Options{Backend: "ollama", OutDir: t.TempDir(), Trials: NoOverride, Warmup: NoOverride, MaxTokens: NoOverride}
	plan, err := Resolve(p, base)
	if err != nil || len(plan.Targets) != 1 || plan.Targets[0].Target.Model != "gemma3:270m" || plan.Targets[0].Target.URL != "http://127.0.0.1:11434" || plan.Profile.Trials != 1500 || plan.Stop == nil {
		t.Fatalf("%+v %v", plan, err)
	}
	hash := plan.ConfigHash()
	if again, _ := Resolve(p, base); again.ConfigHash() != hash {
		t.Error("config hash not stable")
	}
	o := base
	o.Trials, o.Warmup = 70, 0
	if changed, _ := Resolve(p, o); changed.ConfigHash() == hash || changed.Profile.Trials != 70 || changed.Profile.Warmup != 0 || p.Trials != 1500 {
		t.Error("overrides not applied, or the profile was changed")
	}
	// --trials below the profile's stop rule's minimum is a short fixed
	// run: the rule is off, not an error.
	o.Trials = 10
	if short, err := Resolve(p, o); err != nil || short.Profile.Stop.Enabled() || short.Stop != (TrialCap{N: 10}) {
		t.Errorf("--trials 10 on a profile whose rule needs 30: %v, stop %+v", err, short)
	}
	t.Setenv("MY_KEY", "sk-secret")
	o = base
	o.Backend, o.Model, o.APIKeyEnv = "openai", "x", "MY_KEY"
	if plan, _ := Resolve(p, o); plan.Targets[0].Config.APIKey != "sk-secret" || plan.Targets[0].Config.URL != "http://127.0.0.1:8000/v1" {
		t.Errorf("openai plan %+v", plan.Targets[0].Config)
	}
	for _, c := range []struct {
		edit func(*Options)
		want string
	}{
		{func(o *Options) { o.Backend = "vllm" }, `unknown backend "vllm"; use one of builtin, ollama, llamacpp, openai`},
		{func(o *Options) { o.Threads = 2 }, "--threads and --dtype tune an in-process engine such as builtin; the ollama server chooses its own"},
		{func(o *Options) { o.Trials = 0 }, "--trials 0"},
		{func(o *Options) { o.Warmup = -2 }, "--warmup -2"},
		{func(o *Options) { o.Backend = "openai" }, "no model for backend openai"},
	} {
		o := base
		c.edit(&o)
		if _, err := Resolve(p, o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
	o = base
	o.Backend, o.Threads, o.DType = "", 2, "q8_0"
	if plan, err := Resolve(p, o); err != nil || plan.Targets[0].Kind.Name != "builtin" || plan.Targets[0].Target.Model != "stories260K" || plan.Targets[0].Config.Threads != 2 ||
		plan.ConfigHash() == hash {
		t.Errorf("default backend: %+v %v", plan, err)
	}
	bad, _ := profiles.Parse("bad.toml", []byte("prompts=[\"x\"]\nmax_tokens=1\ntrials=1\n[models]\nolama = \"m\"\n[[arms]]\nname=\"a\"\n"))
	if _, err := Resolve(bad, base); err == nil || !strings.Contains(err.Error(), `bad.toml:5: [models] unknown backend "olama"`) {
		t.Errorf("unknown backend in profile: %v", err)
	}
}

// BenchmarkOnChunk measures the per-token hot path: the callback, its
// monotonic timestamp and the append into the trial's arrival buffer.
// Trials of 1,024 tokens reuse one buffer, as the runner does.
func BenchmarkOnChunk(b *testing.B) {
	const maxTokens = 1024
	c := tokenClock{arrivals: make([]metrics.Arrival, 0, maxTokens+8)}
	var onChunk backends.OnChunk = c.onChunk
	c.reset(time.Now())
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if n == maxTokens {
			c.reset(time.Now())
			n = 0
		}
		onChunk(1, backends.Answer)
		n++
	}
}

func TestPauseHoldsBetweenTrialsAndResumeGoesOn(t *testing.T) {
	plan := testPlan(t, 0, 6, "greedy")
	plan.Pause = &Pause{}
	fake := &fakeBackend{delays: []time.Duration{time.Millisecond}}
	fake.fail = func(call int) error {
		if call == 2 {
			plan.Pause.Hold() // the user presses p during trial 2
		}
		return nil
	}
	events := make(chan Event, 1024)
	done := make(chan string)
	go func() {
		status, _ := Run(context.Background(), plan, []backends.Backend{fake}, events)
		done <- status
	}()
	// Trial 2 finishes, then the run must hold: no third call.
	deadline := time.Now().Add(5 * time.Second)
	for len(events) < 3 && time.Now().Before(deadline) { // Started + 2 trials
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	fake.mu.Lock()
	calls := fake.calls
	fake.mu.Unlock()
	if calls != 2 || !plan.Pause.Held() {
		t.Fatalf("while held: %d calls (want 2), held %v", calls, plan.Pause.Held())
	}
	plan.Pause.Resume()
	if status := <-done; status != session.StatusComplete {
		t.Fatalf("status %s after resume", status)
	}
	if fake.calls != 6 {
		t.Errorf("%d calls after resume, want 6", fake.calls)
	}
}

func TestCancelEndsAHeldRun(t *testing.T) {
	plan := testPlan(t, 0, 6, "greedy")
	plan.Pause = &Pause{}
	plan.Pause.Hold()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	status, err, events := runPlan(t, ctx, plan, &fakeBackend{delays: []time.Duration{time.Millisecond}})
	if err != nil || status != session.StatusPartial || len(trials(events)) != 0 {
		t.Fatalf("status %s err %v trials %d", status, err, len(trials(events)))
	}
}

// fakeGPU draws 50 W idle and 250 W while any generation runs, with a
// counter that integrates exactly that.
type fakeGPU struct {
	mu      sync.Mutex
	busy    int // generations running
	last    time.Time
	energyJ float64
}

func (g *fakeGPU) Devices() []telemetry.Device {
	return []telemetry.Device{{Name: "Fake GPU", ID: "GPU-fake", Kind: telemetry.KindGPU, PowerLimitW: 300, HasCounter: true}}
}

func (g *fakeGPU) watts() float64 {
	if g.busy > 0 {
		return 250
	}
	return 50
}

func (g *fakeGPU) advance() {
	now := time.Now()
	if !g.last.IsZero() {
		g.energyJ += g.watts() * now.Sub(g.last).Seconds()
	}
	g.last = now
}

func (g *fakeGPU) Read(i int, boundary bool) (telemetry.Sample, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.advance()
	s := telemetry.NewSample(0, i)
	s.PowerW, s.EnergyMJ = g.watts(), g.energyJ*1000
	if boundary {
		s.TempC, s.Throttle = 55, "none"
	}
	return s, nil
}

func (g *fakeGPU) Close() error { return nil }

func (g *fakeGPU) addBusy(n int) {
	g.mu.Lock()
	g.advance()
	g.busy += n
	g.mu.Unlock()
}

// busyBackend makes the fake GPU busy while it generates.
type busyBackend struct {
	*fakeBackend
	gpu *fakeGPU
}

func (b busyBackend) Generate(ctx context.Context, req backends.Request, onChunk backends.OnChunk) (backends.Result, error) {
	b.gpu.addBusy(1)
	defer b.gpu.addBusy(-1)
	return b.fakeBackend.Generate(ctx, req, onChunk)
}

// withFakeGPU gives plan a fake GPU sampled every 10 ms after a 300 ms
// idle baseline, and this process as the server whose memory is read.
func withFakeGPU(plan *Plan) *fakeGPU {
	gpu := &fakeGPU{}
	plan.Telemetry.Open = func() telemetry.Found {
		return telemetry.Found{Source: gpu, Status: telemetry.Status{GPU: "1 NVIDIA GPU through NVML", CPU: "no CPU package energy (test)"},
			GPUs: []telemetry.GPUInfo{{Name: "Fake GPU", UUID: "GPU-fake", PowerLimitW: 300}}, Driver: "580.1"}
	}
	plan.Telemetry.Interval, plan.Telemetry.IdleBaseline = 10*time.Millisecond, 300*time.Millisecond
	plan.Telemetry.ServerPID = os.Getpid()
	return gpu
}

func TestEnergyPerTrialFromAFakeGPU(t *testing.T) {
	plan := testPlan(t, 1, 4, "greedy")
	gpu := withFakeGPU(plan)
	delays := []time.Duration{40 * time.Millisecond, 40 * time.Millisecond, 40 * time.Millisecond, 40 * time.Millisecond}
	status, err, events := runPlan(t, context.Background(), plan, busyBackend{&fakeBackend{delays: delays}, gpu})
	if err != nil || status != session.StatusComplete {
		t.Fatal(status, err)
	}
	measuredFirst := false
	for _, ev := range events {
		if _, ok := ev.(Measuring); ok {
			measuredFirst = true
		}
		if _, ok := ev.(Started); ok {
			break
		}
	}
	if !measuredFirst {
		t.Error("no Measuring event (the idle baseline) before Started")
	}
	fin := events[len(events)-1].(Finished)
	s, err := session.Load(fin.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	power := s.Manifest.Power
	if power == nil || len(power.Baseline) != 1 || math.Abs(power.Baseline[0].MeanW-50) > 1 || power.EnergySource != "gpu" || power.PowerFile == "" {
		t.Fatalf("power table %+v", power)
	}
	if power.RSSAtStartMB <= 0 {
		t.Errorf("rss_at_start_mb %v", power.RSSAtStartMB)
	}
	if env := s.Manifest.Environment; len(env.GPUs) != 1 || env.Driver != "580.1" {
		t.Errorf("environment %+v", env)
	}
	for _, r := range s.Records {
		// 200 W above idle while generating, a little less over the
		// whole window, which also holds the runner's own bookkeeping.
		want := 200 * r.E2EMs / 1000
		if r.EnergyQuality != "counter" || r.EnergyJ < 0.8*want || r.EnergyJ > 1.05*want || math.Abs(r.JPerToken-r.EnergyJ/4) > 1e-5 || r.AvgPowerW < 200 || r.AvgPowerW > 260 {
			t.Errorf("trial %d: %.3f J (want ~%.3f), %.4f J/token, %.1f W, %s", r.Trial, r.EnergyJ, want, r.JPerToken, r.AvgPowerW, r.EnergyQuality)
		}
		if math.IsNaN(r.PeakRSSMB) || r.PeakRSSMB <= 0 {
			t.Errorf("trial %d: peak RSS %v", r.Trial, r.PeakRSSMB)
		}
	}
	if q := s.Manifest.Summary["greedy"].EnergyQualities; q["counter"] != 4 {
		t.Errorf("quality counts %v", q)
	}
	// The idle baseline again after the last trial, its drift, each
	// trial's resolution (a 10 ms reading at 250 W is 2.5 J; on a busy
	// machine the readings come later, never 100 ms apart), and the arm's
	// figure from them.
	if len(power.BaselineAfter) != 1 || math.Abs(power.BaselineAfter[0].MeanW-50) > 1 || !(power.DriftW < 1) {
		t.Errorf("baseline after %+v, drift %v W", power.BaselineAfter, power.DriftW)
	}
	for _, r := range s.Records {
		if !(r.EnergyErrJ > 0 && r.EnergyErrJ < 25) {
			t.Errorf("trial %d: resolution %v J", r.Trial, r.EnergyErrJ)
		}
	}
	// (4 trials are too few for an interval; every one is far above idle.)
	if e := s.Manifest.Summary["greedy"].Energy; e == nil || !e.Measured() || e.Idle() || !e.DriftKnown || e.N != 4 || !math.IsNaN(e.Lo) || !(e.JPerToken > 6) {
		t.Errorf("the arm's energy %+v", e)
	}
	if last := eventsOf[Measuring](events); len(last) != 2 || !strings.Contains(last[1].What, "after the last trial") {
		t.Errorf("measured %+v; want the idle baseline before and after", last)
	}
	data, err := os.ReadFile(filepath.Join(filepath.Dir(fin.Manifest), power.PowerFile))
	if err != nil {
		t.Fatal(err)
	}
	csv := string(data)
	if !strings.HasPrefix(csv, strings.Join(session.PowerHeader, ",")) || strings.Count(csv, "trial_start greedy#") != 5 || strings.Count(csv, "trial_end greedy#") != 5 || strings.Count(csv, "\n") < 30 {
		t.Errorf("power CSV:\n%s", csv)
	}
}

func TestNoPowerSourceMeansUnavailableAndNoWait(t *testing.T) {
	plan := testPlan(t, 0, 2, "greedy")
	plan.Telemetry.IdleBaseline = time.Hour // must not be waited for without a power source
	status, err, events := runPlan(t, context.Background(), plan, &fakeBackend{delays: []time.Duration{time.Millisecond}})
	if err != nil || status != session.StatusComplete {
		t.Fatal(status, err)
	}
	for _, r := range trials(events) {
		if r.EnergyQuality != session.EnergyUnavailable || !math.IsNaN(r.EnergyJ) {
			t.Errorf("trial %+v", r)
		}
	}
	if started := events[0].(Started); !strings.Contains(started.Power.GPU, "no NVIDIA GPU") {
		t.Errorf("power status %+v", started.Power)
	}
}

func TestWhoseMemoryIsRecorded(t *testing.T) {
	for _, c := range []struct {
		url  string
		port int
		ok   bool
	}{{"http://127.0.0.1:8080", 8080, true}, {"http://localhost/v1", 80, true}, {"https://[::1]:8443", 8443, true}, {"http://10.0.0.7:8000", 0, false}, {"http://gpu-box:11434", 0, false}} {
		if port, ok := loopbackPort(c.url); port != c.port || ok != c.ok {
			t.Errorf("%s: port %d local %v", c.url, port, ok)
		}
	}
	plan := testPlan(t, 0, 1, "greedy")
	plan.Targets[0].Target.URL = "http://10.0.0.7:11434"
	if w, who := watchMemory(plan); w[0] != nil || !strings.Contains(who[0], "not on this machine") {
		t.Errorf("remote server: %v %q", w, who)
	}
	plan.Telemetry.ServerPID = os.Getpid()
	if w, who := watchMemory(plan); w[0] == nil || !strings.Contains(who[0], "pid") {
		t.Errorf("--server-pid: %v %q", w, who)
	}
}

func TestVCSRevision(t *testing.T) {
	clean := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "4c2ff17a"}, {Key: "vcs.modified", Value: "false"}}
	dirty := []debug.BuildSetting{{Key: "vcs.revision", Value: "4c2ff17a"}, {Key: "vcs.modified", Value: "true"}}
	if got := vcsRevision(clean); got != "4c2ff17a" {
		t.Errorf("clean %q", got)
	}
	if got := vcsRevision(dirty); got != "4c2ff17a+dirty" {
		t.Errorf("dirty %q", got)
	}
	if got := vcsRevision(nil); got != "" {
		t.Errorf("unstamped %q", got)
	}
}

func TestSessionsFolderFollowsEachOS(t *testing.T) {
	env := map[string]string{"LocalAppData": `C:\Users\ada\AppData\Local`, "XDG_DATA_HOME": "/data/ada"}
	getenv := func(k string) string { return env[k] }
	home := func() (string, error) { return "/home/ada", nil }
	for _, c := range []struct{ goos, want string }{
		{"windows", `C:\Users\ada\AppData\Local`},
		{"darwin", filepath.Join("/home/ada", "Library", "Application Support")},
		{"linux", "/data/ada"},
		{"freebsd", "/data/ada"},
	} {
		if got, err := userDataDir(c.goos, getenv, home); err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.goos, got, err, c.want)
		}
	}
	// XDG says a relative $XDG_DATA_HOME is invalid and must be ignored.
	env["XDG_DATA_HOME"] = "relative/data"
	if got, _ := userDataDir("linux", getenv, home); got != filepath.Join("/home/ada", ".local", "share") {
		t.Errorf("relative XDG_DATA_HOME: %q", got)
	}
	delete(env, "LocalAppData")
	if _, err := userDataDir("windows", getenv, home); err == nil || !strings.Contains(err.Error(), "LocalAppData") {
		t.Errorf("windows without LocalAppData: %v", err)
	}
}

// session cannot import backends, so it names the truncated stop reason
// itself; the runner writes the backends' word into its files.
func TestTruncatedIsOneWordInBackendsAndSessionFiles(t *testing.T) {
	if backends.StopTruncated != session.StopTruncated {
		t.Errorf("backends says %q, session reads %q", backends.StopTruncated, session.StopTruncated)
	}
}

// A final manifest that cannot be written (a full disk) is an error that
// says what is on disk, and the Finished event never claims a save.
func TestAFailedFinalWriteIsAnError(t *testing.T) {
	plan := testPlan(t, 0, 3, "greedy")
	fake := &fakeBackend{delays: []time.Duration{time.Millisecond}}
	fake.fail = func(call int) error {
		if call == 3 { // the manifest's place taken: its final rename must fail
			manifests, _ := filepath.Glob(filepath.Join(plan.OutDir, "*.toml"))
			os.Remove(manifests[0])
			os.MkdirAll(filepath.Join(manifests[0], "blocker"), 0o755)
		}
		return nil
	}
	_, err, events := runPlan(t, context.Background(), plan, fake)
	fin := events[len(events)-1].(Finished)
	if err == nil || fin.SaveErr == "" || !strings.Contains(err.Error(), "final manifest could not be written") ||
		!strings.Contains(fin.SaveErr, "no manifest is left on disk") || !strings.Contains(fin.SaveErr, "holds 3 finished trials") ||
		!strings.Contains(fin.SaveErr, plan.OutDir) {
		t.Fatalf("err %v, SaveErr %q", err, fin.SaveErr)
	}
}
