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

	"github.com/tokentop/tokentop/runner/arrival"
	"github.com/tokentop/tokentop/session"
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
	built := tracePrompt(arrival.TraceRequest{Line: 2, InputTokens: 40, HashIDs: []int64{7}})
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
	a := strings.Fields(tracePrompt(arrival.TraceRequest{Line: 1, InputTokens: 1024, HashIDs: []int64{5, 6}}))
	b := strings.Fields(tracePrompt(arrival.TraceRequest{Line: 2, InputTokens: 800, HashIDs: []int64{5, 9}}))
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
