package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tokentop/tokentop/metrics/telemetry"

	"github.com/tokentop/tokentop/metrics"
)

func record(arm string, trial int, phase, status string, e2e float64) Record {
	r := Record{SessionID: "s1", Arm: arm, Trial: trial, Phase: phase, Status: status,
		StartedAt: time.Date(2026, 11, 21, 5, 0, trial, 123456789, time.UTC), PromptID: 1,
		PromptTokens: 5, OutputTokens: 32, StopReason: "length", EnergyQuality: EnergyUnavailable,
		ServerLoadMs: math.NaN(), ServerPrefillMs: 1.5, ServerDecodeMs: math.NaN(),
		EnergyJ: math.NaN(), AvgPowerW: math.NaN(), JPerToken: math.NaN(), PeakRSSMB: math.NaN(),
		ReasoningTokens: 0, Chunks: 32, ITLPer: ITLPerToken, ScheduledMs: math.NaN(), QueueMs: math.NaN(), EnergyErrJ: math.NaN()}
	first := time.Duration(min(10, e2e/2) * float64(time.Millisecond))
	r.Timings = metrics.DeriveTimings([]metrics.Arrival{{At: first, Tokens: 1}, {At: time.Duration(e2e * float64(time.Millisecond)), Tokens: 31}},
		time.Duration(e2e*float64(time.Millisecond)), 32)
	if status != StatusOK {
		r.Error = "HTTP 500: boom, \"quoted\""
		r.OutputTokens = -1
	}
	return r
}

func newManifest(id string) *Manifest {
	return &Manifest{ID: id, ToolVersion: "test", CreatedAt: time.Date(2026, 11, 21, 5, 0, 0, 0, time.UTC),
		Arms: []ArmInfo{{Name: "greedy", Strategy: "greedy"}, {Name: "hot", Strategy: "temperature 0.8", Temperature: 0.8}}}
}

func writeSession(t *testing.T, dir, id string, records []Record) *Writer {
	t.Helper()
	w, err := Create(dir, newManifest(id))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range records {
		if err := w.Append(r, []metrics.Arrival{{At: 10 * time.Millisecond, Tokens: 1}, {At: 20 * time.Millisecond, Tokens: 3}}); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// A chunk's token ids, where the backend gave them, go into the tokens
// CSV's id column and read back; a bad id leaves its row out, naming its
// line.
func TestTokenIDsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir, newManifest("ids"))
	if err != nil {
		t.Fatal(err)
	}
	r := record("greedy", 1, PhaseTimed, StatusOK, 100)
	if err := w.Append(r, []metrics.Arrival{{At: time.Millisecond, Tokens: 1, IDs: []int{42}}, {At: 2 * time.Millisecond, Tokens: 2, IDs: []int{7, 31999}}}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	data, _ := os.ReadFile(filepath.Join(dir, "ids.tokens.csv"))
	if !strings.Contains(string(data), "greedy,1,1,1.000,output,42\ngreedy,1,3,2.000,output,7 31999\n") {
		t.Errorf("tokens CSV:\n%s", data)
	}
	tokens, _, err := ParseTokens("x.csv", data)
	if a := tokens[TrialKey{"greedy", 1}]; err != nil || len(a.IDs) != 2 || !slices.Equal(a.IDs[1], []int{7, 31999}) || !slices.Equal(a.Chunks()[1].IDs, []int{7, 31999}) {
		t.Errorf("%+v %v", a, err)
	}
	bad := strings.Replace(string(data), "7 31999", "7 -1", 1)
	if _, warnings, err := ParseTokens("x.csv", []byte(bad)); err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], `x.csv:3: column id: "-1" is not a token id`) {
		t.Errorf("a bad id: %q %v", warnings, err)
	}
}

func TestWriteThenLoadRoundTrips(t *testing.T) {
	dir := t.TempDir()
	records := []Record{
		record("greedy", 1, PhaseWarmup, StatusOK, 300),
		record("greedy", 2, PhaseTimed, StatusOK, 100),
		record("hot", 1, PhaseWarmup, StatusOK, 310),
		record("hot", 2, PhaseTimed, StatusError, 5),
	}
	w := writeSession(t, dir, "one", records)
	if m, err := ReadManifest(w.ManifestPath()); err != nil || m.Status != StatusRunning {
		t.Fatalf("manifest at start: %+v %v", m, err)
	}
	summary := map[string]ArmSummary{"greedy": SummarizeArm(ByArm(records)["greedy"], 1, 0.01, 0)}
	if err := w.Finish(StatusComplete, "", "", summary); err != nil {
		t.Fatal(err)
	}
	w.Close()
	s, err := Load(w.ManifestPath())
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Warnings) != 0 || s.Manifest.Status != StatusComplete || s.Manifest.FinishedAt == nil {
		t.Errorf("warnings %v manifest %+v", s.Warnings, s.Manifest)
	}
	if got := s.Manifest.Summary["greedy"]; got.TimedOK != 1 || got.Warmup != 1 || got.Metrics["e2e_ms"].Mean != 100 || got.WarmupRatio != 3 {
		t.Errorf("summary %+v", got)
	}
	if len(s.Records) != len(records) {
		t.Fatalf("%d records", len(s.Records))
	}
	for i := range records {
		want, got := records[i].Fields(), s.Records[i].Fields()
		if strings.Join(want, "|") != strings.Join(got, "|") {
			t.Errorf("record %d:\nwrote %q\nread  %q", i, want, got)
		}
	}
	// Unknown values are empty fields, never 0.
	f := records[0].Fields()
	if f[22] != "" || f[25] != "" || f[23] != "1.500" {
		t.Errorf("server_load_ms %q energy_j %q server_prefill_ms %q", f[22], f[25], f[23])
	}
	tokens, _ := os.ReadFile(filepath.Join(dir, "one.tokens.csv"))
	if !strings.HasPrefix(string(tokens), "arm,trial,index,t_ms,kind,id\ngreedy,1,1,10.000,output,\ngreedy,1,4,20.000,output,\n") {
		t.Errorf("tokens CSV:\n%s", tokens)
	}
	again, err := Create(dir, newManifest("one"))
	if err != nil || again.ManifestPath() != filepath.Join(dir, "one-2.toml") {
		t.Fatalf("second session with the same stem: %v", err)
	}
	again.Close()
	if s, _ := Load(w.ManifestPath()); len(s.Records) != len(records) {
		t.Error("the first session was touched by the second")
	}
}

func TestKilledRunLoadsWithWarnings(t *testing.T) {
	dir := t.TempDir()
	w := writeSession(t, dir, "killed", []Record{record("greedy", 1, PhaseTimed, StatusOK, 100), record("greedy", 2, PhaseTimed, StatusOK, 110)})
	w.Close()
	path := filepath.Join(dir, "killed.trials.csv")
	data, _ := os.ReadFile(path)
	// A kill mid-write leaves part of a third row.
	os.WriteFile(path, append(data, []byte("s1,greedy,3,timed,ok,,2026-11-21T05:00:03Z,1,5,3")...), 0o644)
	s, err := Load(w.ManifestPath())
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Records) != 2 || len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "killed.trials.csv:4: last line is incomplete") {
		t.Errorf("records %d warnings %q", len(s.Records), s.Warnings)
	}
	// The status is a caveat, said once, not also a read warning.
	if c := SessionCaveats(s); len(c) != 1 || !strings.Contains(c[0], "status running (the run was killed or is in progress)") {
		t.Errorf("caveats %q", c)
	}
}

func TestBadTrialsFiles(t *testing.T) {
	good := strings.Join(Header, ",") + "\n"
	row := strings.Join(record("greedy", 1, PhaseTimed, StatusOK, 100).Fields(), ",") + "\n"
	cases := []struct{ name, data, want string }{
		{"wrong header", strings.Replace(good, "ttft_ms", "ttft", 1), `x.csv:1: header has no "ttft_ms" column`},
		{"short header", "session_id,arm\n", `x.csv:1: header has no "trial" column`},
		{"column twice", strings.Replace(good, "ttft_ms", "e2e_ms", 1), `x.csv:1: header column 13, "e2e_ms", appears twice`},
		{"bad appended column", good + strings.Replace(row, ",0,0,0,0,0,0,,,", ",0,x,0,0,0,0,,,", 1), `x.csv:2: column position: "x"`},
		{"bad window", good + strings.Replace(row, ",0,0,0,0,0,0,,,", ",0,0,0,0,0,0,late,,", 1), `x.csv:2: column window: "late"`},
		{"bad connection", good + strings.Replace(row, ",0,0,0,0,0,0,,,", ",0,0,0,0,0,0,,maybe,", 1), `x.csv:2: column connection: "maybe"`},
		{"negative reasoning tokens", good + strings.Replace(row, ",0,32,token,,,,,,,,,,\n", ",-3,32,token,,,,,,,,,,\n", 1), `x.csv:2: column reasoning_tokens: "-3"`},
		{"bad itl_per", good + strings.Replace(row, ",0,32,token,,,,,,,,,,\n", ",0,32,word,,,,,,,,,,\n", 1), `x.csv:2: column itl_per: "word"`},
		{"bad delivery", good + strings.Replace(row, ",0,32,token,,,,,,,,,,\n", ",0,32,token,late,,,,,,,,,\n", 1), `x.csv:2: column delivery: "late"`},
		{"negative queue", good + strings.Replace(row, ",0,32,token,,,,,,,,,,\n", ",0,32,token,,12.5,-1,,,,,,,\n", 1), `x.csv:2: column queue_ms: "-1"`},
		{"negative requested tokens", good + strings.Replace(row, ",0,32,token,,,,,,,,,,\n", ",0,32,token,,,,-8,,,,,,\n", 1), `x.csv:2: column requested_prompt_tokens: "-8"`},
		{"empty", "", "x.csv: empty file"},
		{"only bad rows", good + strings.Replace(row, "100.000", "fast", 1) + "a,b,c\n", `x.csv:2: column e2e_ms: "fast"`},
		{"bad phase", good + strings.Replace(row, ",timed,", ",cooldown,", 1), "x.csv:2: column phase"},
		{"missing fields", good + "a,b,c\n", "x.csv:2: 3 fields, expected 52"},
		{"bad shard", good + strings.Replace(row, ",0,32,token,,,,,,,,,,\n", ",0,32,token,,,,,,,,two,,\n", 1), `x.csv:2: column shard: "two"`},
		{"bad replica", good + strings.Replace(row, ",0,32,token,,,,,,,,,,\n", ",0,32,token,,,,,,,,,,-1\n", 1), `x.csv:2: column replica: "-1"`},
		{"cut header", "session_id,arm,tri", "x.csv:1: the header line is incomplete"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ParseTrials("x.csv", []byte(c.data))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

// One corrupt row mid-file costs that trial only, with a warning naming
// its line; the rows around it are read.
func TestACorruptRowMidFileIsSkippedAndNamed(t *testing.T) {
	row := func(trial int) string {
		return strings.Join(record("greedy", trial, PhaseTimed, StatusOK, 100).Fields(), ",") + "\n"
	}
	data := strings.Join(Header, ",") + "\n" + row(1) + strings.Replace(row(2), "100.000", "fast", 1) + row(3) + "\"bare\"quote,x\n" + row(4)
	got, warnings, err := ParseTrials("x.csv", []byte(data))
	if err != nil || len(got) != 3 || got[2].Trial != 4 || len(warnings) != 2 ||
		!strings.Contains(warnings[0], `x.csv:3: column e2e_ms: "fast"`) || !strings.Contains(warnings[0], "left out") ||
		!strings.Contains(warnings[1], "x.csv:5: a stray quote at column 6") {
		t.Fatalf("%d records, warnings %q, err %v", len(got), warnings, err)
	}
}

// TestTrialsAreReadByColumnName reads a file from before the round,
// position and cached_tokens columns, and one whose columns come in
// another order with a column this version does not know.
func TestTrialsAreReadByColumnName(t *testing.T) {
	rec := record("greedy", 1, PhaseTimed, StatusOK, 100)
	rec.Round, rec.Position, rec.CachedTokens = 3, 2, 4
	fields := rec.Fields()

	old := strings.Join(Header[:baseColumns], ",") + "\n" + strings.Join(fields[:baseColumns], ",") + "\n"
	got, _, err := ParseTrials("old.csv", []byte(old))
	if err != nil || len(got) != 1 || got[0].Round != 0 || got[0].Position != 0 || got[0].CachedTokens != -1 || got[0].E2EMs != 100 {
		t.Fatalf("old file: %+v %v", got, err)
	}

	header := append([]string{"future"}, Header...)
	slices.Reverse(header)
	row := append([]string{"x"}, fields...)
	slices.Reverse(row)
	got, _, err = ParseTrials("new.csv", []byte(strings.Join(header, ",")+"\n"+strings.Join(row, ",")+"\n"))
	if err != nil || len(got) != 1 || strings.Join(got[0].Fields(), ",") != strings.Join(fields, ",") {
		t.Fatalf("reordered file: %+v %v", got, err)
	}
}

func loadPair(t *testing.T) (*Session, *Session) {
	t.Helper()
	dir := t.TempDir()
	var a, b []Record
	for i, v := range []float64{100, 110, 120, 130} {
		a = append(a, record("greedy", i+1, PhaseTimed, StatusOK, v), record("hot", i+1, PhaseTimed, StatusOK, 2*v))
		b = append(b, record("greedy", i+1, PhaseTimed, StatusOK, v*1.1), record("hot", i+1, PhaseTimed, StatusOK, 2*v))
	}
	a = append(a, record("greedy", 9, PhaseWarmup, StatusOK, 1000), record("greedy", 10, PhaseTimed, StatusTimeout, 5000))
	wa, wb := writeSession(t, dir, "A", a), writeSession(t, dir, "B", b)
	wa.Close()
	wb.Close()
	sa, err := Load(wa.ManifestPath())
	if err != nil {
		t.Fatal(err)
	}
	sb, err := Load(wb.ManifestPath())
	if err != nil {
		t.Fatal(err)
	}
	return sa, sb
}

func TestComparePairsArmsAndComputesDeltas(t *testing.T) {
	sa, sb := loadPair(t)
	c, err := Compare([]Ref{{Path: "A.toml"}, {Path: "B.toml"}}, []*Session{sa, sb}, []string{"e2e_ms"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Columns) != 4 || c.Columns[2].Label != "B#greedy" || c.Columns[2].Baseline != 0 || c.Columns[3].Baseline != 1 {
		t.Fatalf("columns %+v", c.Columns)
	}
	mean := c.Rows[0]
	// Warmup and timed-out trials are excluded: greedy mean is 115, not more.
	if mean.Stat != "mean" || mean.Values[0] != 115 || math.Abs(mean.Deltas[2]-10) > 1e-9 || math.Abs(mean.Deltas[3]) > 1e-9 || !math.IsNaN(mean.Deltas[0]) {
		t.Errorf("mean row %+v", mean)
	}
	// Arms of one session: hot against greedy.
	c, err = Compare([]Ref{{"A.toml", "greedy"}, {"A.toml", "hot"}}, []*Session{sa, sa}, []string{"e2e_ms"})
	if err != nil || c.Rows[0].Deltas[1] != 100 {
		t.Errorf("arm compare: %v %+v", err, c)
	}
	// One session named whole: its arms against its first, tested, as
	// its run ended (each arm was once its own baseline, tested against
	// nothing).
	c, err = Compare([]Ref{{Path: sa.Path}}, []*Session{sa}, []string{"e2e_ms"})
	if err != nil || len(c.Columns) != 2 || c.Columns[1].Baseline != 0 || c.Rows[0].Deltas[1] != 100 {
		t.Fatalf("one whole session: %v %+v", err, c)
	}
	if c.RunTests(TestOptions{Resamples: 100, Seed: 1}); len(c.Tests) == 0 {
		t.Error("one whole session's arms were not tested against its first")
	}
	if _, err := Compare([]Ref{{"A.toml", "nope"}}, []*Session{sa}, []string{"e2e_ms"}); err == nil || !strings.Contains(err.Error(), "its arms are greedy, hot") {
		t.Errorf("unknown arm: %v", err)
	}
	if _, err := Compare([]Ref{{Path: "A.toml"}}, []*Session{sa}, []string{"latency"}); err == nil || !strings.Contains(err.Error(), "use one of e2e_ms") {
		t.Errorf("unknown metric: %v", err)
	}
}

func TestCompareFormats(t *testing.T) {
	sa, sb := loadPair(t)
	c, err := Compare([]Ref{{"A.toml", "greedy"}, {"B.toml", "greedy"}}, []*Session{sa, sb}, CompareMetrics)
	if err != nil {
		t.Fatal(err)
	}
	var text, md, csvOut, js bytes.Buffer
	for format, buf := range map[string]*bytes.Buffer{"text": &text, "md": &md, "csv": &csvOut, "json": &js} {
		if err := c.Write(buf, format); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(text.String(), "126.5 (+10.0%)") || !strings.Contains(text.String(), "B#greedy is compared with A#greedy.") {
		t.Errorf("text:\n%s", text.String())
	}
	if !strings.Contains(md.String(), "| e2e_ms | mean | 115.0 | 126.5 (+10.0%) |") {
		t.Errorf("markdown:\n%s", md.String())
	}
	if !strings.Contains(csvOut.String(), "e2e_ms,mean,B#greedy,A#greedy,126.5") {
		t.Errorf("csv:\n%s", csvOut.String())
	}
	var parsed struct{ Rows []struct{ Metric string } }
	if err := json.Unmarshal(js.Bytes(), &parsed); err != nil || len(parsed.Rows) != len(CompareMetrics)*len(CompareStats) {
		t.Errorf("json: %v rows %d", err, len(parsed.Rows))
	}
	if err := c.Write(&text, "xml"); err == nil {
		t.Error("unknown format accepted")
	}
}

func FuzzParseTrials(f *testing.F) {
	header := strings.Join(Header, ",") + "\n"
	row := strings.Join(record("greedy", 1, PhaseTimed, StatusOK, 100).Fields(), ",") + "\n"
	f.Add([]byte(header + row))
	f.Add([]byte(header + row + row[:40]))
	f.Add([]byte(header + strings.Join(record("x", 2, PhaseWarmup, StatusError, 1).Fields(), ",") + "\n"))
	f.Add([]byte(strings.Join(Header[:baseColumns], ",") + "\n" + strings.Join(record("x", 2, PhaseTimed, StatusOK, 1).Fields()[:baseColumns], ",") + "\n"))
	openLoop := record("greedy@r2", 3, PhaseTimed, StatusOK, 80)
	openLoop.ScheduledMs, openLoop.QueueMs = 1250.5, 0.125
	f.Add([]byte(header + strings.Join(openLoop.Fields(), ",") + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		records, _, err := ParseTrials("fuzz.csv", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.csv") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, r := range records {
			// What was read must write back and read again the same.
			line := strings.Join(r.Fields(), ",")
			again, _, err := ParseTrials("again.csv", []byte(header+csvLine(r)+"\n"))
			if err != nil || len(again) != 1 || strings.Join(again[0].Fields(), ",") != line {
				t.Fatalf("record does not round-trip: %q: %v", line, err)
			}
		}
	})
}

func csvLine(r Record) string {
	var b strings.Builder
	for i, f := range r.Fields() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(csvField(f))
	}
	return b.String()
}

func BenchmarkCompare100kRows(b *testing.B) {
	dir := b.TempDir()
	w, err := Create(dir, newManifest("big"))
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	for i := range 100_000 {
		arm := []string{"greedy", "hot"}[i%2]
		buf.WriteString(csvLine(record(arm, i/2+1, PhaseTimed, StatusOK, 100+float64(i%97))) + "\n")
	}
	w.trials.Write(buf.Bytes())
	w.Close()
	b.SetBytes(int64(buf.Len()))
	b.ResetTimer()
	for b.Loop() {
		s, err := Load(w.ManifestPath())
		if err != nil || len(s.Records) != 100_000 {
			b.Fatalf("%v %d", err, len(s.Records))
		}
		c, err := Compare([]Ref{{"big.toml", "greedy"}, {"big.toml", "hot"}}, []*Session{s, s}, CompareMetrics)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Write(io.Discard, "text"); err != nil {
			b.Fatal(err)
		}
	}
}

func TestCompareAddsEnergyOnlyWhenBothSidesHaveIt(t *testing.T) {
	sa, sb := loadPair(t)
	refs := []Ref{{Path: "A.toml"}, {Path: "B.toml"}}
	c, err := Compare(refs, []*Session{sa, sb}, nil)
	if err != nil || slices.Contains(c.Metrics, "j_per_token") || !slices.Equal(c.Metrics, CompareMetrics) {
		t.Fatalf("without energy: %v %v", c.Metrics, err)
	}
	for _, s := range []*Session{sa, sb} {
		for i := range s.Records {
			s.Records[i].JPerToken, s.Records[i].EnergyQuality = 0.002*float64(i+1), string(telemetry.QualityCounter)
		}
	}
	if c, _ = Compare(refs, []*Session{sa, sb}, nil); !slices.Contains(c.Metrics, "j_per_token") {
		t.Errorf("both sides measured energy, metrics %v", c.Metrics)
	}
	for i := range sb.Records {
		sb.Records[i].JPerToken = math.NaN()
	}
	if c, _ = Compare(refs, []*Session{sa, sb}, nil); slices.Contains(c.Metrics, "j_per_token") {
		t.Errorf("one side without energy, metrics %v", c.Metrics)
	}
}

func TestCompareFlagsDifferentGPUsAndDrivers(t *testing.T) {
	sa, sb := loadPair(t)
	sa.Manifest.Environment.GPUs, sa.Manifest.Environment.Driver = []telemetry.GPUInfo{{Name: "NVIDIA H100"}}, "580.65.06"
	sb.Manifest.Environment.GPUs, sb.Manifest.Environment.Driver = []telemetry.GPUInfo{{Name: "NVIDIA H200"}}, "575.57.08"
	c, err := Compare([]Ref{{Path: "A.toml"}, {Path: "B.toml"}}, []*Session{sa, sb}, nil)
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(c.Warnings, "\n")
	if !strings.Contains(joined, "A.toml ran on NVIDIA H100, B.toml on NVIDIA H200: different GPUs") ||
		!strings.Contains(joined, "A.toml ran on NVIDIA driver 580.65.06, B.toml on 575.57.08: different drivers") {
		t.Errorf("warnings:\n%s", joined)
	}
	sb.Manifest.Environment = sa.Manifest.Environment
	if c, _ := Compare([]Ref{{Path: "A.toml"}, {Path: "B.toml"}}, []*Session{sa, sb}, nil); strings.Contains(strings.Join(c.Warnings, "\n"), "different") {
		t.Errorf("same machine, warnings %v", c.Warnings)
	}
}

func TestPowerCSVAndPowerTableRoundTrip(t *testing.T) {
	dir := t.TempDir()
	started := time.Date(2026, 11, 21, 5, 0, 0, 0, time.UTC)
	m := newManifest("P")
	m.Power = &PowerInfo{GPU: "1 NVIDIA GPU through NVML", EnergySource: "gpu", IntervalMs: 50, SamplerStart: &started,
		Devices:  []telemetry.Device{{Name: "H100", ID: "GPU-abc", Kind: telemetry.KindGPU, PowerLimitW: 700, HasCounter: true}},
		Baseline: []DeviceBaseline{{ID: "GPU-abc", Baseline: telemetry.Baseline{MeanW: 71.5, StdW: 0.4, Samples: 60}}}, RSSProcess: "tokentop (this process)"}
	w, err := Create(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	p, err := w.CreatePower([]string{"GPU-abc"})
	if err != nil {
		t.Fatal(err)
	}
	// The manifest names the power CSV as soon as it exists.
	if early, err := Load(w.ManifestPath()); err != nil || early.Manifest.Power.PowerFile != "P.power.csv" {
		t.Fatalf("manifest before the end: %v %+v", err, early.Manifest.Power)
	}
	s := telemetry.NewSample(1500*time.Microsecond, 0)
	s.PowerW, s.EnergyMJ, s.Throttle, s.Event = 312.5, 1e6, "sw_power_cap|hw_thermal", "trial_end greedy#1"
	if err := p.Append(s); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(StatusComplete, "", "", nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	data, _ := os.ReadFile(filepath.Join(dir, "P.power.csv"))
	want := strings.Join(PowerHeader, ",") + "\n1.500,312.500,1000000.000,,,GPU-abc,,,sw_power_cap|hw_thermal,trial_end greedy#1,\n"
	if string(data) != want {
		t.Errorf("power CSV\n%s\nwant\n%s", data, want)
	}
	loaded, err := Load(w.ManifestPath())
	if err != nil {
		t.Fatal(err)
	}
	if pw := loaded.Manifest.Power; pw == nil || pw.Baseline[0].MeanW != 71.5 || pw.Baseline[0].Samples != 60 || pw.Devices[0].PowerLimitW != 700 || !pw.Devices[0].HasCounter {
		t.Errorf("power table %+v", loaded.Manifest.Power)
	}
}

// TestCaveatsComeFirst: degraded, truncated, model-loading and cached trials, and a run
// that did not finish, are said before any table, in every format.
func TestCaveatsComeFirst(t *testing.T) {
	dir := t.TempDir()
	var recs []Record
	for i := 1; i <= 6; i++ {
		r := record("greedy", i, PhaseTimed, StatusOK, 100+float64(i))
		if i <= 2 {
			r.StopReason = "truncated"
		}
		r.PromptTokens, r.CachedTokens = 20, 4*(i%2)
		if i == 2 {
			r.CachedTokens = 1 // a BOS alone: the prefill was whole
		}
		if i == 4 {
			r.ServerLoadMs = 260.3 // Ollama loaded the model again inside the trial
		}
		recs = append(recs, r)
		recs = append(recs, record("hot", i, PhaseTimed, map[bool]string{true: StatusError, false: StatusOK}[i > 3], 120))
	}
	w := writeSession(t, dir, "cav", recs)
	w.Finish(StatusPartial, "the server stopped answering", "", nil)
	s, err := Load(w.ManifestPath())
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compare([]Ref{{Path: w.ManifestPath()}}, []*Session{s}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"cav: status partial: the run did not finish its plan (the server stopped answering)",
		`hot: 3 of 6 timed trials degraded (most often error: HTTP 500: boom, "quoted"); they are left out of every statistic`,
		"greedy: 2 of 6 timed trials were cut at the context window (stop reason truncated): not full-length generations",
		"greedy: 1 of 6 timed trials carried a model load (the server's load time up to 260.3 ms, server_load_ms): the server had unloaded the model between trials, and their e2e and TTFT include loading it",
		"greedy: 3 of 6 timed trials took a tenth of their prompt or more from the server's cache: their TTFT is not a full prefill's",
	}
	if !slices.Equal(c.Caveats, want) {
		t.Errorf("caveats\n%q\nwant\n%q", c.Caveats, want)
	}
	// One session named by two refs, one per arm: its status said once.
	byArm, err := Compare([]Ref{{w.ManifestPath(), "greedy"}, {w.ManifestPath(), "hot"}}, []*Session{s, s}, nil)
	if err != nil || !slices.Equal(byArm.Caveats, want) {
		t.Errorf("arm refs: caveats %q, %v", byArm.Caveats, err)
	}
	for _, format := range Formats {
		var b bytes.Buffer
		if err := c.Write(&b, format); err != nil {
			t.Fatal(err)
		}
		if format != "csv" && !strings.Contains(b.String(), "the server stopped answering") {
			t.Errorf("%s output has no caveat:\n%s", format, b.String())
		}
		if format == "text" && !strings.HasPrefix(b.String(), "caveat: cav: status partial") {
			t.Errorf("text starts %q", b.String()[:40])
		}
		if format == "md" && !strings.HasPrefix(b.String(), "- **Caveat:** cav: status partial") {
			t.Errorf("markdown starts %q", b.String()[:40])
		}
	}
	if lines := BuildReport(s, TestOptions{Resamples: 100, Seed: 1}).Lines("", "  "); lines[0] != "caveat: status partial: the run did not finish its plan (the server stopped answering)" {
		t.Errorf("report starts %q", lines[0])
	}
	if lines := BuildReport(s, TestOptions{Resamples: 100, Seed: 1}).Lines("### ", "- "); !strings.HasPrefix(lines[0], "- **Caveat:** status partial") {
		t.Errorf("markdown report starts %q", lines[0])
	}
}

// TestSummaryRateIsAggregate: the summary's tok/s is Σ tokens / Σ e2e,
// the per-trial rates stay in the output_tps metric.
func TestSummaryRateIsAggregate(t *testing.T) {
	fast, slow := record("greedy", 1, PhaseTimed, StatusOK, 100), record("greedy", 2, PhaseTimed, StatusOK, 1000)
	fast.OutputTokens, slow.OutputTokens = 10, 100
	fast.OutputTPS, slow.OutputTPS = 100, 20
	fast.E2EMs, slow.E2EMs = 100, 5000
	s := SummarizeArm([]*Record{&fast, &slow}, 1, 0.01, 0)
	if math.Abs(s.OutputTPS-110/5.1) > 1e-9 || s.Metrics["output_tps"].Mean != 60 {
		t.Errorf("rate %v, per-trial mean %v", s.OutputTPS, s.Metrics["output_tps"].Mean)
	}
	// compare shows the same rate in place of the mean, for decode tok/s
	// too (one token fewer, over decode time).
	fast.DecodeMs, slow.DecodeMs = 90, 4900
	one := &Session{Manifest: newManifest("R"), Records: []Record{fast, slow}}
	c, err := Compare([]Ref{{Path: "R.toml"}}, []*Session{one}, []string{"output_tps", "decode_tps"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, row := range c.Rows {
		if row.Stat == rateStat {
			got[row.Metric] = row.Values[0]
		}
	}
	if len(got) != 2 || math.Abs(got["output_tps"]-110/5.1) > 1e-9 || math.Abs(got["decode_tps"]-108/4.99) > 1e-9 {
		t.Errorf("rate rows %v", got)
	}
}

// An arm that asked for prompt_cache = false of a server with no switch
// (Ollama: it reuses prompts and reports no hits) gets a caveat saying it
// could not be enforced; arms whose server took the switch get none.
func TestAnUnenforcedPromptCacheIsACaveat(t *testing.T) {
	s := &Session{Path: "/x/S.toml", Manifest: newManifest("S")}
	s.Manifest.Targets = []TargetInfo{{Name: "ollama", Kind: "ollama"}}
	for i := range s.Manifest.Arms {
		s.Manifest.Arms[i].Target = "ollama"
		s.Manifest.Arms[i].PromptCache = "ollama has no per-request switch: it may reuse a cached prompt prefix"
	}
	caveats := strings.Join(SessionCaveats(s), "\n")
	if !strings.Contains(caveats, "greedy, hot: prompt_cache = false could not be enforced: ollama takes no per-request switch") {
		t.Errorf("caveats: %s", caveats)
	}
	for i := range s.Manifest.Arms {
		s.Manifest.Arms[i].PromptCache = "off: every request asks the server to evaluate the whole prompt"
	}
	if caveats := strings.Join(SessionCaveats(s), "\n"); strings.Contains(caveats, "could not be enforced") {
		t.Errorf("a switch that was used: %s", caveats)
	}
}

// The words of a server's metrics give its totals and peaks where it had
// metrics, and why not where it had none.
func TestServerMetricsWords(t *testing.T) {
	info := &ServerMetricsInfo{File: "s.server.csv", Servers: []ServerMetricsSource{
		{Targets: []string{"llamacpp"}, Status: "scraped", TokensGenerated: 270, PrefixHitRate: 0.3, PeakRunning: 2, PeakWaiting: 1, PeakKVCache: 0.34},
		{Targets: []string{"openai"}, Status: "none: http://h/metrics answered HTTP 404"}}}
	got := info.Words()
	want := []string{"server llamacpp, by its own metrics: 270 tokens generated over the run; its prefix cache served 30% of the prompt tokens; at most 2 requests running and 1 waiting, 34% of its KV cache in use (every scrape in s.server.csv)",
		"server openai: no metrics (http://h/metrics answered HTTP 404)"}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("words:\n%q\nwant\n%q", got, want)
	}
	if (*ServerMetricsInfo)(nil).Words() != nil {
		t.Error("words of no metrics")
	}
}

// The words of the lengths asked name each target's tokenizer and the
// targets that could not be told to generate the whole output.
func TestLengthsWords(t *testing.T) {
	l := &LengthsInfo{InputTokens: "512", OutputTokens: "128", Prompts: 40, Tokenizers: []string{"llamacpp: made to length with the server's own tokenizer"}, OutputNotForced: []string{"ollama"}}
	want := []string{"prompt lengths: 512 tokens, 40 prompts, the same for every arm", "  llamacpp: made to length with the server's own tokenizer",
		"output lengths: 128 tokens, the end of sequence ignored (not by ollama: it cannot be told)"}
	if got := l.Words(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("words:\n%q\nwant\n%q", got, want)
	}
	if (*LengthsInfo)(nil).Words() != nil {
		t.Error("words of no lengths")
	}
}

// The prefix cache's words: the share of prompt tokens it served over
// timed ok trials whose server said, and the median TTFT where a trial
// reused the shared prefix against where it did not; a trial that reused
// the BOS alone (1 of 225 tokens against llama-server, the run's slowest)
// did not; nothing where no server said.
func TestPrefixCacheOfRecords(t *testing.T) {
	rec := func(cached, prompt int, ttft float64, phase string) *Record {
		return &Record{Phase: phase, Status: StatusOK, CachedTokens: cached, PromptTokens: prompt, Timings: metrics.Timings{TTFTMs: ttft}}
	}
	c := PrefixCacheOf([]*Record{rec(0, 100, 40, PhaseTimed), rec(90, 100, 10, PhaseTimed), rec(90, 100, 12, PhaseTimed), rec(1, 100, 50, PhaseTimed),
		rec(90, 100, 1, PhaseWarmup), rec(-1, 100, 5, PhaseTimed)}, 80)
	if c == nil || c.HitRate != 181.0/400 || c.Hits != 2 || c.Misses != 2 || c.TTFTHitMs != 11 || c.TTFTMissMs != 45 {
		t.Fatalf("%+v", c)
	}
	if got := c.Words(); got != "prefix cache: 45% of prompt tokens from the cache; 2 trials reused the shared prefix (at least half its 80 tokens), 2 did not; "+
		"TTFT p50 11.00 ms where reused, 45.00 ms where not" {
		t.Errorf("words %q", got)
	}
	if PrefixCacheOf([]*Record{rec(-1, 100, 5, PhaseTimed)}, 80) != nil {
		t.Error("a cache no server told of")
	}
}

// A multi-turn arm's TTFT by turn: the median of each turn's timed ok
// trials, in turn order; nothing for trials with no turn.
func TestTurnWords(t *testing.T) {
	rec := func(turn int, ttft float64, status string) *Record {
		return &Record{Phase: PhaseTimed, Status: status, Turn: turn, Timings: metrics.Timings{TTFTMs: ttft}}
	}
	got := TurnWords([]*Record{rec(2, 20, StatusOK), rec(1, 5, StatusOK), rec(2, 30, StatusOK), rec(1, 7, StatusOK), rec(2, 900, StatusError)})
	if got != "TTFT p50 by turn: turn 1 6.00 ms (n 2), turn 2 25.00 ms (n 2)" {
		t.Errorf("%q", got)
	}
	if TurnWords([]*Record{rec(0, 5, StatusOK)}) != "" {
		t.Error("turns of a run without any")
	}
}

// A copied row, a trial numbered below 1 and a count of two billion
// tokens are refused, each naming its line, the rest read: they were
// counted twice, or made tok/s 1e10.
func TestImpossibleRowsAreRefused(t *testing.T) {
	row := func(trial int) string {
		return strings.Join(record("greedy", trial, PhaseTimed, StatusOK, 100).Fields(), ",") + "\n"
	}
	fields := strings.Split(strings.TrimSuffix(row(3), "\n"), ",")
	fields[9] = "2000000000" // output_tokens
	data := strings.Join(Header, ",") + "\n" + row(1) + row(2) + row(1) + strings.Replace(row(1), "greedy,1,", "greedy,-3,", 1) + strings.Join(fields, ",") + "\n"
	got, warnings, err := ParseTrials("x.csv", []byte(data))
	if err != nil || len(got) != 2 || len(warnings) != 3 || !strings.HasPrefix(warnings[0], "x.csv:4: trial 1 of arm greedy appears on an earlier line too") {
		t.Fatalf("%d records, warnings %q, %v", len(got), warnings, err)
	}
	for _, c := range []struct{ data, want string }{
		{strings.Replace(row(1), "greedy,1,", "greedy,-3,", 1), `x.csv:2: column trial: "-3": trials are numbered from 1`},
		{strings.Join(fields, ",") + "\n", `x.csv:2: column output_tokens: "2000000000": not a count of tokens`},
	} {
		if _, _, err := ParseTrials("x.csv", []byte(strings.Join(Header, ",")+"\n"+c.data)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
}

// A write that fails names the whole path, not the name inside the
// folder the files are written through, and what to do.
func TestAWriteErrorNamesThePathAndWhatToDo(t *testing.T) {
	for errno, want := range map[syscall.Errno]string{
		syscall.EROFS:  "/data/sessions/s.trials.csv: read-only file system; the folder is read-only: choose another folder with --out",
		syscall.ENOSPC: "/data/sessions/s.trials.csv: no space left on device; the disk is full: free some space, or choose another folder with --out",
		syscall.EACCES: "/data/sessions/s.trials.csv: permission denied; you may not write there: choose another folder with --out",
	} {
		err := WriteError("/data/sessions", "s.trials.csv", &fs.PathError{Op: "openat", Path: "s.trials.csv", Err: errno})
		if err.Error() != want || !errors.Is(err, errno) {
			t.Errorf("%v: %q", errno, err)
		}
	}
}

// Sub-millisecond figures keep three significant digits in the files (a
// built-in engine's ITL of 36 µs was written as 0.036, 3% steps that made
// a verdict's interval zero wide); larger ones keep the microsecond.
func TestSmallFiguresKeepThreeSignificantDigits(t *testing.T) {
	for v, want := range map[float64]string{0.0362345: "0.0362", 0.000456789: "0.000457", 0.5: "0.500", 12.34567: "12.346", 0: "0.000", 0.00000012: "0.000000"} {
		if got := formatFloat(v, 3); got != want {
			t.Errorf("%g: %q, want %q", v, got, want)
		}
	}
	r := record("greedy", 1, PhaseTimed, StatusOK, 100)
	r.ITLMeanMs, r.TPOTMs = 0.0362345, 0.0358901
	got, _, err := ParseTrials("x.csv", []byte(strings.Join(Header, ",")+"\n"+strings.Join(r.Fields(), ",")+"\n"))
	if err != nil || got[0].ITLMeanMs != 0.0362 || got[0].TPOTMs != 0.0359 {
		t.Errorf("read back %v %v, %v", got[0].ITLMeanMs, got[0].TPOTMs, err)
	}
}
