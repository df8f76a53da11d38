package runner

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/session"
)

// A prompts file drives the trials: every arm draws the same prompt on
// the same trial, in the seeded order (not the file's), a conversation
// goes to the backend as its messages, a prompt's own output length is
// kept to max_tokens, and the manifest names the file, its digest and
// the sampling.
func TestAPromptsFileDrivesEveryArmAlike(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.jsonl")
	var lines []byte
	for _, l := range []string{`{"prompt": "p0"}`, `{"prompt": "p1", "max_tokens": 3}`, `{"prompt": "p2", "max_tokens": 50}`,
		`{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "p3"}]}`, `{"text": "p4"}`, `{"text": "p5"}`} {
		lines = append(lines, l+"\n"...)
	}
	os.WriteFile(file, lines, 0o644)
	plan := testPlan(t, 0, 6, "greedy", "hot")
	if err := plan.Profile.ReadPrompts(file); err != nil {
		t.Fatal(err)
	}
	fake := &fakeBackend{}
	status, err, events := runPlan(t, context.Background(), plan, fake)
	if err != nil || status != session.StatusComplete {
		t.Fatal(status, err)
	}
	byArm := map[string][]int{}
	for _, r := range trials(events) {
		byArm[r.Arm] = append(byArm[r.Arm], r.PromptID)
	}
	var order []int // prompt_id counts from 1
	for _, k := range plan.Profile.Dataset.Order(plan.Profile.Seed) {
		order = append(order, k+1)
	}
	if !slices.Equal(byArm["greedy"], order) || !slices.Equal(byArm["hot"], order) {
		t.Fatalf("prompt ids by arm %v, want the seeded order %v for both", byArm, order)
	}
	if slices.IsSorted(order) {
		t.Fatalf("the order %v is the file's", order)
	}
	for _, req := range fake.requests {
		switch req.Prompt {
		case "p1":
			if req.MaxTokens != 3 {
				t.Errorf("p1 asked %d tokens, its line says 3", req.MaxTokens)
			}
		case "p2":
			if req.MaxTokens != 8 {
				t.Errorf("p2 asked %d tokens, want max_tokens 8", req.MaxTokens)
			}
		case "s\n\np3":
			if len(req.Messages) != 2 || req.Messages[1].Content != "p3" {
				t.Errorf("the conversation went as %+v", req.Messages)
			}
		default:
			if req.Messages != nil || req.MaxTokens != 8 {
				t.Errorf("%q: messages %v, max tokens %d", req.Prompt, req.Messages, req.MaxTokens)
			}
		}
	}
	var manifest string
	for _, ev := range events {
		if f, ok := ev.(Finished); ok {
			manifest = f.Manifest
		}
	}
	m, err := session.ReadManifest(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if f := m.Profile.PromptsFile; f == nil || f.File != file || f.Format != "jsonl" || f.Prompts != 6 || len(f.SHA256) != 64 || len(m.Profile.Prompts) != 0 {
		t.Errorf("manifest prompts %q, file %+v", m.Profile.Prompts, f)
	}
}

// Multi-turn: each arm sends a conversation's turns in order, each turn
// carrying the conversation before it, after the think time; each record
// keeps its turn; a load run is refused.
func TestConversationsAreSentTurnByTurn(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.jsonl")
	os.WriteFile(file, []byte(`{"messages": [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"}, {"role": "user", "content": "q2"}, {"role": "assistant", "content": "a2"}, {"role": "user", "content": "q3"}]}
{"messages": [{"role": "user", "content": "r1"}, {"role": "assistant", "content": "b1"}, {"role": "user", "content": "r2"}]}
{"messages": [{"role": "system", "content": "no user turn: nothing to send"}]}
`), 0o644)
	plan := testPlan(t, 0, 5, "greedy", "hot")
	plan.Profile.MultiTurn, plan.Profile.ThinkPause = true, 20*time.Millisecond
	if err := plan.Profile.ReadPrompts(file); err != nil {
		t.Fatal(err)
	}
	fake := &fakeBackend{}
	began := time.Now()
	status, err, events := runPlan(t, context.Background(), plan, fake)
	if err != nil || status != session.StatusComplete {
		t.Fatal(status, err)
	}
	// 2 arms × 5 turns, 3 of each arm's after a first turn: at least 6
	// think times.
	if took := time.Since(began); took < 6*20*time.Millisecond {
		t.Errorf("the run took %v: no think time", took)
	}
	m, err := session.ReadManifest(eventsOf[Finished](events)[0].Manifest)
	if err != nil {
		t.Fatal(err)
	}
	if f := m.Profile.PromptsFile; f == nil || f.Prompts != 5 || f.Conversations != 2 {
		t.Errorf("manifest's prompts file %+v: want 5 turns of 2 conversations", f)
	}
	turns := map[string][]int{}
	for _, r := range trials(events) {
		turns[r.Arm] = append(turns[r.Arm], r.Turn)
	}
	if !slices.Equal(turns["greedy"], turns["hot"]) || (!slices.Equal(turns["greedy"], []int{1, 2, 3, 1, 2}) && !slices.Equal(turns["greedy"], []int{1, 2, 1, 2, 3})) {
		t.Errorf("turns by arm %v", turns)
	}
	for _, req := range fake.requests {
		last := req.Messages[len(req.Messages)-1]
		if last.Role != "user" || len(req.Messages)%2 != 1 {
			t.Errorf("a turn sent %+v", req.Messages)
		}
	}
	load := testPlan(t, 0, 5, "greedy")
	load.Profile.PromptsFile = file
	if _, err := Resolve(&load.Profile, Options{Trials: NoOverride, Warmup: NoOverride, MaxTokens: NoOverride, PromptsFile: file, MultiTurn: true,
		Concurrency: profiles.Levels{2}}); err == nil || !strings.Contains(err.Error(), "does not run under --concurrency") {
		t.Errorf("multi-turn under load: %v", err)
	}
}
