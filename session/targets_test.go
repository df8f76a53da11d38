package session

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSchema1SessionsStillRead: a session written before [[targets]]
// (by the tokentop of the commit before schema 2) reads with its one
// [backend] as the target of every arm.
func TestSchema1SessionsStillRead(t *testing.T) {
	paths, _ := filepath.Glob("testdata/schema1/*.toml")
	if len(paths) != 1 {
		t.Fatalf("schema 1 session: %v", paths)
	}
	s, err := Load(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	m := s.Manifest
	if m.Schema != 1 || m.Backend != nil || len(m.Targets) != 1 || len(s.Records) != 7 {
		t.Fatalf("schema %d backend %v targets %+v records %d", m.Schema, m.Backend, m.Targets, len(s.Records))
	}
	target := m.TargetOf("greedy")
	if target.Name != "builtin" || target.Kind != "builtin" || target.Model() != "stories260K" || target.Quantization != "f32" ||
		!strings.HasPrefix(m.Arms[0].PromptCache, "off:") || !strings.HasPrefix(target.RSSProcess, "tokentop (this process)") {
		t.Errorf("target %+v arm %+v", target, m.Arms[0])
	}
	if labels := ArmLabels(m); labels["greedy"] != "" {
		t.Errorf("one arm has no label: %v", labels)
	}
}

func TestArmLabelsSayOnlyWhatDiffers(t *testing.T) {
	m := &Manifest{
		Targets: []TargetInfo{
			{Name: "builtin-f32", Kind: "builtin", ModelActual: "stories15M", Quantization: "f32", Details: map[string]string{"threads": "2"}},
			{Name: "builtin-q8", Kind: "builtin", ModelActual: "stories15M", Quantization: "q8_0", Details: map[string]string{"threads": "2"}},
		},
		Arms: []ArmInfo{{Name: "f32", Target: "builtin-f32"}, {Name: "hot", Temperature: 0.8, Target: "builtin-f32"}, {Name: "q8", Target: "builtin-q8"}},
	}
	labels := ArmLabels(m)
	if labels["f32"] != "f32" || labels["hot"] != "f32" || labels["q8"] != "q8_0" {
		t.Errorf("dtype only: %v", labels)
	}
	if LabelledArm("q8", labels["q8"]) != "q8 (q8_0)" || LabelledArm("f32", labels["f32"]) != "f32" {
		t.Errorf("labelled %q %q", LabelledArm("q8", labels["q8"]), LabelledArm("f32", labels["f32"]))
	}
	servers := &Manifest{
		Targets: []TargetInfo{
			{Name: "ollama", Kind: "ollama", URL: "http://127.0.0.1:11434", ModelActual: "tiny:latest", Quantization: "F16", Options: map[string]any{"num_ctx": int64(512)}},
			{Name: "llamacpp", Kind: "llamacpp", URL: "http://127.0.0.1:8080", ModelActual: "tiny.gguf", Quantization: "F16"},
		},
		Arms: []ArmInfo{{Name: "o", Target: "ollama", PromptCache: "allowed (prompt_cache = true)"}, {Name: "l", Target: "llamacpp", PromptCache: "off: ..."}},
	}
	labels = ArmLabels(servers)
	if labels["o"] != "ollama · tiny:latest · num_ctx=512 · cache allowed" || labels["l"] != "llamacpp · tiny.gguf · num_ctx default · cache off" {
		t.Errorf("servers: %v", labels)
	}
}

func TestConfigDifferencesSeeEachArmsTarget(t *testing.T) {
	manifest := func(options map[string]any, quant string) *Manifest {
		return &Manifest{Targets: []TargetInfo{{Name: "ollama", Kind: "ollama", ModelActual: "m", Quantization: quant, Options: options}},
			Arms: []ArmInfo{{Name: "a", Target: "ollama"}}, Profile: ProfileInfo{MaxTokens: 8}}
	}
	got := ConfigDifferences(manifest(nil, "Q4_K_M"), manifest(map[string]any{"num_ctx": int64(4096)}, "Q8_0"))
	if strings.Join(got, "; ") != "quantization Q4_K_M vs Q8_0; options none vs num_ctx=4096" {
		t.Errorf("differences %q", got)
	}
	// One server in two versions (the built-in engine across a change to
	// its arithmetic) is a difference; a version one side did not report
	// is not.
	a, b := manifest(nil, "Q8_0"), manifest(nil, "Q8_0")
	a.Targets[0].ServerVersion, b.Targets[0].ServerVersion = "0.5.1", "0.6.0"
	if got := ConfigDifferences(a, b); strings.Join(got, "; ") != "server 0.5.1 vs 0.6.0" {
		t.Errorf("versions: differences %q", got)
	}
	b.Targets[0].ServerVersion = ""
	if got := ConfigDifferences(a, b); len(got) != 0 {
		t.Errorf("an unreported version: differences %q", got)
	}
}
