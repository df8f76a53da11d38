package session

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

// The export round-trips into the readers a script uses: every request
// one JSON object (numbers as numbers, unknowns as null) or one CSV row
// under ExportHeader, the arm's target beside it; the summary gives
// each arm's percentiles of every metric over its counted requests.
func TestExportRoundTrips(t *testing.T) {
	dir := t.TempDir()
	var records []Record
	for i := range 20 {
		records = append(records, record("greedy", i+1, PhaseTimed, StatusOK, 100+float64(i)), record("hot", i+1, PhaseTimed, StatusOK, 200+float64(i)))
	}
	records = append(records, record("hot", 21, PhaseTimed, StatusError, 5))
	w := writeSession(t, dir, "one", records)
	w.Finish(StatusComplete, "", "", nil)
	w.Close()
	s, err := Load(w.ManifestPath())
	if err != nil {
		t.Fatal(err)
	}
	s.Manifest.Targets = []TargetInfo{{Name: "ollama", Kind: "ollama", URL: "http://127.0.0.1:11434", ModelActual: "gemma3:270m", Quantization: "Q8_0"}}
	for i := range s.Manifest.Arms {
		s.Manifest.Arms[i].Target = "ollama"
	}

	var jsonl bytes.Buffer
	if err := WriteExport(&jsonl, []*Session{s}, "jsonl"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(jsonl.String()), "\n")
	if len(lines) != len(records) {
		t.Fatalf("%d records exported, want %d", len(lines), len(records))
	}
	var first, failed map[string]any
	json.Unmarshal([]byte(lines[0]), &first)
	json.Unmarshal([]byte(lines[len(lines)-1]), &failed)
	if first["e2e_ms"] != 100.0 || first["trial"] != 1.0 || first["arm"] != "greedy" || first["energy_j"] != nil ||
		first["model"] != "gemma3:270m" || first["backend"] != "ollama" || len(first) != len(ExportHeader) {
		t.Errorf("first record: %v", first)
	}
	if failed["status"] != StatusError || failed["output_tokens"] != nil || !strings.Contains(failed["error"].(string), "HTTP 500") {
		t.Errorf("failed record: %v", failed)
	}

	var table bytes.Buffer
	if err := WriteExport(&table, []*Session{s}, "csv"); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&table).ReadAll()
	if err != nil || len(rows) != len(records)+1 || !slices.Equal(rows[0], ExportHeader) || rows[1][slices.Index(ExportHeader, "url")] != "http://127.0.0.1:11434" {
		t.Fatalf("csv: %v, %d rows, header %v", err, len(rows), rows[0])
	}

	var summary bytes.Buffer
	if err := WriteExportSummary(&summary, []*Session{s}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Sessions []struct {
			Arms []struct {
				Arm     string
				N       int
				Metrics map[string]map[string]any
			}
		}
	}
	if err := json.Unmarshal(summary.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	hot := doc.Sessions[0].Arms[1]
	e2e := hot.Metrics["e2e_ms"]
	// hot's 20 ok trials take 200..219 ms; the failed one is not counted.
	if hot.Arm != "hot" || hot.N != 20 || e2e["p50"] != 209.5 || math.Abs(e2e["p90"].(float64)-217.1) > 1e-9 || e2e["min"] != 200.0 {
		t.Errorf("hot: n %d, e2e %v", hot.N, e2e)
	}
	if v, ok := hot.Metrics["j_per_token"]["p50"]; !ok || v != nil {
		t.Errorf("an unmeasured metric's percentile: %v", hot.Metrics["j_per_token"])
	}
	if err := WriteExport(&summary, []*Session{s}, "xml"); err == nil || !strings.Contains(err.Error(), `--format "xml"`) {
		t.Errorf("a bad format: %v", err)
	}
}
