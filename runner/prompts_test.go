package runner

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

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
