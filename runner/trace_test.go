package runner

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/runner/arrival"
	"github.com/tokentop/tokentop/session"
	"golang.org/x/sync/semaphore"
)

// Every arm replays the whole trace, stretch by stretch, interleaved: each
// request with its line's prompt (or one built to its length) and output
// length, at its time; the arm ends when the trace is done, and the
// manifest names the trace by its digest.
func TestEveryArmReplaysTheTrace(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "t.jsonl")
	lines := []string{
		`{"timestamp": 1000, "prompt": "Once upon a time", "max_tokens": 3}`,
		`{"timestamp": 1040, "input_length": 40, "output_length": 5, "hash_ids": [7]}`,
		`{"timestamp": 1150, "input_length": 60, "output_length": 2, "hash_ids": [7, 8]}`,
		`{"timestamp": 1160, "prompt": "The end", "max_tokens": 4}`,
	}
	if err := os.WriteFile(trace, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fake := &fakeBackend{delays: []time.Duration{time.Millisecond, time.Millisecond}}
	base := testPlan(t, 0, 1, "greedy", "hot")
	plan, err := Resolve(&base.Profile, Options{Backend: "ollama", OutDir: t.TempDir(), Trials: NoOverride, Warmup: 0, MaxTokens: NoOverride, Trace: trace, TraceSpeed: 2})
	if err != nil {
		t.Fatal(err)
	}
	plan.Telemetry = base.Telemetry
	plan.OpenBlock = 50 * time.Millisecond // at speed 2: 0, 20, 75, 80 ms: two stretches
	if got := plan.Profile.ArmNames(); !slices.Equal(got, []string{"greedy@trace", "hot@trace"}) {
		t.Fatalf("arms %v", got)
	}
	status, err, events := runPlan(t, context.Background(), plan, fake)
	if err != nil || status != session.StatusComplete {
		t.Fatal(status, err)
	}
	// The plan counts the trace's requests, not the profile's trials (it
	// said 1 and counted 2/1 … 4/1).
	if started := eventsOf[Started](events)[0]; started.TrialsPerArm != len(lines) {
		t.Errorf("the plan says %d trials per arm", started.TrialsPerArm)
	}
	for _, arm := range []string{"greedy@trace", "hot@trace"} {
		recs := timedOf(events, arm)
		var ids []int
		rounds := map[int]bool{}
		for _, r := range recs {
			ids = append(ids, r.PromptID)
			rounds[r.Round] = true
		}
		slices.Sort(ids)
		if !slices.Equal(ids, []int{1, 2, 3, 4}) || len(rounds) != 2 {
			t.Errorf("%s replayed lines %v in %d blocks; want lines 1-4 in 2", arm, ids, len(rounds))
		}
	}
	asked := map[string]int{}
	for _, req := range fake.requests {
		asked[req.Prompt] = req.MaxTokens
	}
	built := tracePrompt(&arrival.TraceRequest{Line: 2, InputTokens: 40, HashIDs: []int64{7}}, profiles.WordsPerToken)
	if asked["Once upon a time"] != 3 || asked["The end"] != 4 || asked[built] != 5 {
		t.Errorf("requests asked %v", asked)
	}
	fin := eventsOf[Finished](events)[0]
	if !strings.Contains(fin.Summary["greedy@trace"].StoppedBy, "replayed the whole trace (4 requests") {
		t.Errorf("stopped by %q", fin.Summary["greedy@trace"].StoppedBy)
	}
	s, err := session.Load(fin.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	tr := s.Manifest.Profile.Load.Trace
	if tr == nil || tr.Requests != 4 || tr.Speed != 2 || len(tr.SHA256) != 64 {
		t.Errorf("manifest trace %+v", tr)
	}
	if rate := s.Manifest.Arms[0].Rate; math.Abs(rate-3/0.08) > 1e-9 {
		t.Errorf("the trace's rate %v, want 3 requests over 80 ms", rate)
	}
}

// A prompt built to a length shares the blocks of its hash ids with every
// request that names them, and is its length in words.
func TestTracePromptsShareTheirBlocks(t *testing.T) {
	a := strings.Fields(tracePrompt(&arrival.TraceRequest{Line: 1, InputTokens: 1024, HashIDs: []int64{5, 6}}, profiles.WordsPerToken))
	b := strings.Fields(tracePrompt(&arrival.TraceRequest{Line: 2, InputTokens: 800, HashIDs: []int64{5, 9}}, profiles.WordsPerToken))
	if len(a) != 768 || len(b) != 600 {
		t.Fatalf("%d and %d words; want 768 and 600 (0.75 a token)", len(a), len(b))
	}
	if !slices.Equal(a[:384], b[:384]) || slices.Equal(a[384:600], b[384:600]) {
		t.Error("the first block is not shared, or the second is")
	}
}

func TestTraceFlagsAreChecked(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "t.jsonl")
	os.WriteFile(trace, []byte(`{"timestamp": 0, "prompt": "hi"}`), 0o644)
	base := testPlan(t, 0, 1, "greedy")
	for _, c := range []struct {
		opts Options
		want string
	}{
		{Options{TraceSpeed: 2}, "--trace-speed replays a trace faster or slower; set --trace too"},
		{Options{Trace: trace, Arrival: "gamma"}, "--trace: the trace's own times are its arrivals"},
		{Options{Trace: trace, UntilCI: 0.01}, "--trace: each arm replays the whole trace"},
		{Options{Trace: trace, TraceSpeed: -1}, "--trace-speed -1: use a speed over 0"},
		{Options{Trace: filepath.Join(t.TempDir(), "none.jsonl")}, "--trace: "},
	} {
		c.opts.Backend, c.opts.OutDir, c.opts.Trials, c.opts.Warmup, c.opts.MaxTokens = "ollama", t.TempDir(), NoOverride, NoOverride, NoOverride
		if _, err := Resolve(&base.Profile, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want %q", c.opts, err, c.want)
		}
	}
}

// tracePlan replays the trace of lines at speed on the fake server, one
// arm, in stretches of block.
func tracePlan(t *testing.T, lines []string, speed float64, block time.Duration) *Plan {
	t.Helper()
	trace := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(trace, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := testPlan(t, 0, 1, "greedy")
	plan, err := Resolve(&base.Profile, Options{Backend: "ollama", OutDir: t.TempDir(), Trials: NoOverride, Warmup: 0, MaxTokens: NoOverride, Trace: trace, TraceSpeed: speed})
	if err != nil {
		t.Fatal(err)
	}
	plan.Telemetry = base.Telemetry
	plan.OpenBlock = block
	return plan
}

// A trace is replayed at its own times, the idle spells between its
// stretches included: four requests a second apart (at speed 10, 100 ms
// apart), in stretches of 30 ms, go out about 100 ms apart. (Each stretch
// once restarted the trace's clock at its first request: four requests
// 10 s apart went out within 15 ms.)
func TestATraceIsReplayedAtItsTimes(t *testing.T) {
	plan := tracePlan(t, []string{
		`{"timestamp": 0, "prompt": "a", "max_tokens": 1}`,
		`{"timestamp": 1000, "prompt": "b", "max_tokens": 1}`,
		`{"timestamp": 2000, "prompt": "c", "max_tokens": 1}`,
		`{"timestamp": 3000, "prompt": "d", "max_tokens": 1}`,
	}, 10, 30*time.Millisecond)
	fake := &fakeBackend{delays: []time.Duration{time.Millisecond}}
	status, err, events := runPlan(t, context.Background(), plan, fake)
	if err != nil || status != session.StatusComplete {
		t.Fatal(status, err)
	}
	recs := timedOf(events, "greedy@trace")
	if len(recs) != 4 {
		t.Fatalf("%d requests", len(recs))
	}
	slices.SortFunc(recs, func(a, b session.Record) int { return a.StartedAt.Compare(b.StartedAt) })
	var gaps []time.Duration
	for k := 1; k < len(recs); k++ {
		// Due 100 ms apart, and sent no earlier than due: the gap is 100
		// ms less however late the one before went out on a busy machine.
		late := time.Duration(recs[k-1].QueueMs * float64(time.Millisecond))
		gap := recs[k].StartedAt.Sub(recs[k-1].StartedAt)
		if gap < 98*time.Millisecond-late {
			t.Errorf("request %d went out %v after the one before (that one %v late); the trace has them 100 ms apart at its speed", k+1, gap, late)
		}
		gaps = append(gaps, gap)
	}
	// No stretch waits longer than its span. One stall of a busy machine
	// can stretch any one gap (CI, beside its CPU hog, once saw 504 ms), so the
	// shortest gap is what must stay near 100 ms: a stretch lasting twice
	// its span stretches every gap after the first stretch (to 130, 200
	// and 200 ms).
	if shortest := slices.Min(gaps); shortest > 125*time.Millisecond {
		t.Errorf("gaps %v: the shortest over 125 ms; the trace has them 100 ms apart at its speed", gaps)
	}
	// Its rate is the trace's: 3 gaps over 300 ms, as offered and as
	// scheduled alike (a burst's span once read as the schedule's rate).
	s := finishedSession(t, events)
	lv := session.RateSweeps(s.Manifest, s.Records)[0].Levels[0]
	if math.Abs(lv.Offered-10) > 1e-9 || lv.Scheduled != lv.Offered || lv.N != 4 {
		t.Errorf("level %+v", lv)
	}
}

// A request that cannot fit the model's context, where the server says
// it, refuses the trace before any request, naming its line.
func TestATraceLongerThanTheContextIsRefused(t *testing.T) {
	plan := tracePlan(t, []string{
		`{"timestamp": 0, "input_length": 100, "output_length": 8}`,
		`{"timestamp": 5, "input_length": 1048576, "output_length": 8}`,
	}, 1, time.Second)
	status, err, events := runPlan(t, context.Background(), plan, &contextBackend{context: 4096})
	if status != session.StatusFailed || err == nil || !strings.Contains(err.Error(), "t.jsonl:2: input_length 1048576 + output_length 8 = 1048584 tokens do not fit the context window of 4096 tokens") {
		t.Fatalf("status %s, error %v", status, err)
	}
	if len(trials(events)) != 0 {
		t.Error("requests were sent")
	}
}

// contextBackend is the fake server with a context window it says, and a
// tokenizer that counts a token every two words.
type contextBackend struct {
	fakeBackend
	context int
}

func (c *contextBackend) Probe(ctx context.Context, model string) (backends.Info, error) {
	info, err := c.fakeBackend.Probe(ctx, model)
	info.ContextTokens = c.context
	return info, err
}

func (c *contextBackend) Tokenize(_ context.Context, text string, _ bool) ([]int, error) {
	return make([]int, (len(strings.Fields(text))+1)/2), nil
}

func (c *contextBackend) Detokenize(context.Context, []int) (string, error) { return "", nil }

// Trace prompts are sized with the server's own tokenizer where it has
// one: at two words a token, 40 tokens are 80 words (the estimate of 0.75
// words a token made them 30, short of the length by more than half here,
// and by 22–25% on a real llama-server), and the manifest says how.
func TestTracePromptsAreSizedWithTheServersTokenizer(t *testing.T) {
	plan := tracePlan(t, []string{`{"timestamp": 0, "input_length": 40, "output_length": 2}`}, 1, time.Second)
	server := &contextBackend{fakeBackend: fakeBackend{delays: []time.Duration{time.Millisecond}}}
	status, err, events := runPlan(t, context.Background(), plan, server)
	if err != nil || status != session.StatusComplete {
		t.Fatal(status, err)
	}
	if len(server.requests) != 1 || len(strings.Fields(server.requests[0].Prompt)) != 80 {
		t.Fatalf("the prompt has %d words, want 80", len(strings.Fields(server.requests[0].Prompt)))
	}
	s := finishedSession(t, events)
	if how := s.Manifest.Profile.Load.Trace.Prompts; !strings.Contains(how, "sized with the server's own tokenizer: 2 words a token") {
		t.Errorf("the manifest says %q", how)
	}
}

// A trace request's prompt is built as it is sent, and the prompts in
// flight stay under their bound: one that would pass it waits for room.
func TestTracePromptsInFlightAreBounded(t *testing.T) {
	r := &run{plan: &Plan{}, tracePrompts: semaphore.NewWeighted(2_000_000)}
	req := &arrival.TraceRequest{Line: 1, InputTokens: 200_000, OutputTokens: 1} // 1.5 MB at the estimate
	first, release := r.traceShape(context.Background(), 0, req)
	if n := len(strings.Fields(first.prompt)); n != 150_000 {
		t.Fatalf("%d words", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, wait := r.traceShape(ctx, 0, req); ctx.Err() == nil {
		wait()
		t.Fatal("a second prompt was built past the bound")
	}
	release()
	second, again := r.traceShape(context.Background(), 0, req)
	defer again()
	if second.prompt != first.prompt {
		t.Error("the same request built another prompt")
	}
}
