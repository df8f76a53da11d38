package session

import (
	"math"
	"strings"
	"testing"

	"github.com/tokentop/tokentop/metrics"
)

// modelsSession is a session of two arms on targets as given, each of
// three trials of 11 tokens over 100 ms of decode, with the peaks given.
func modelsSession(targets []TargetInfo, peaks [2]float64) *Session {
	s := &Session{Path: "/s/run.toml", Manifest: &Manifest{Targets: targets,
		Arms: []ArmInfo{{Name: "a", Target: targets[0].Name}, {Name: "b", Target: targets[1].Name}}}}
	for i, arm := range []string{"a", "b"} {
		for trial := 1; trial <= 3; trial++ {
			s.Records = append(s.Records, Record{Arm: arm, Trial: trial, Phase: PhaseTimed, Status: StatusOK,
				OutputTokens: 11, Timings: metrics.Timings{DecodeMs: 100, E2EMs: 110}, PeakRSSMB: peaks[i] - float64(trial)})
		}
	}
	return s
}

func modelRows(t *testing.T, s *Session) []ModelRow {
	t.Helper()
	refs, sessions := ArmComparison(s)
	c, err := Compare(refs, sessions, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.ModelRows(func(string) map[TrialKey]Arrivals { return nil })
}

func TestModelRowsSayWhoseMemoryTheyAre(t *testing.T) {
	// Two servers of their own: each one's peak.
	servers := modelsSession([]TargetInfo{
		{Name: "s1", Kind: "llamacpp", ModelActual: "gemma.gguf", RSSProcess: "llama-server (pid 10)"},
		{Name: "s2", Kind: "llamacpp", ModelActual: "llama.gguf", RSSProcess: "llama-server (pid 11)"}}, [2]float64{900, 1300})
	rows := modelRows(t, servers)
	if len(rows) != 2 || rows[0].PeakRSSMB != 899 || rows[1].PeakRSSMB != 1299 || rows[0].SharedProcess || rows[0].DecodeTPS != 100 {
		t.Fatalf("servers: %+v", rows)
	}
	// One Ollama server for both: no peak of either's own.
	ollama := modelsSession([]TargetInfo{
		{Name: "o1", Kind: "ollama", ModelActual: "gemma3:1b", RSSProcess: "ollama (pid 7) with the processes it starts"},
		{Name: "o2", Kind: "ollama", ModelActual: "llama3.2:1b", RSSProcess: "ollama (pid 7) with the processes it starts"}}, [2]float64{900, 1300})
	rows = modelRows(t, ollama)
	if !rows[0].SharedProcess || !math.IsNaN(rows[0].PeakRSSMB) || !math.IsNaN(rows[0].WeightMB) {
		t.Fatalf("one server: %+v", rows)
	}
	table, notes := ModelsTable(rows)
	if table.Rows[0][7] != "— (one process)" || !strings.Contains(strings.Join(notes, "\n"), "run each on a server of its own") {
		t.Errorf("one server: %v %v", table.Rows, notes)
	}
	// Two models on the built-in engine: their weights.
	builtin := modelsSession([]TargetInfo{
		{Name: "m1", Kind: "builtin", ModelActual: "a.gguf", Details: map[string]string{"weight_mb": "250.5"}},
		{Name: "m2", Kind: "builtin", ModelActual: "b.gguf", Details: map[string]string{"weight_mb": "980.0"}}}, [2]float64{1400, 1400})
	rows = modelRows(t, builtin)
	if rows[0].WeightMB != 250.5 || rows[1].WeightMB != 980 || !math.IsNaN(rows[1].PeakRSSMB) || rows[0].Label != "a" {
		t.Fatalf("builtin: %+v", rows)
	}
	if w := rows[1].Words(); w != "b (b.gguf): per-token mean —, p99 —, CV —; decode 100.0 tok/s; memory weights 980.0 MiB" {
		t.Errorf("words %q", w)
	}
	// One model twice (two sampling arms): not a comparison of models.
	same := modelsSession([]TargetInfo{{Name: "m1", Kind: "builtin", ModelActual: "a.gguf"}, {Name: "m2", Kind: "builtin", ModelActual: "a.gguf"}}, [2]float64{1, 1})
	if rows := modelRows(t, same); rows != nil {
		t.Errorf("one model: %+v", rows)
	}
}
