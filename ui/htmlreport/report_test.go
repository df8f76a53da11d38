package htmlreport

import (
	"bytes"
	"fmt"
	"html"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/plotter"

	"github.com/tokentop/tokentop/metrics"
	"github.com/tokentop/tokentop/metrics/telemetry"
	"github.com/tokentop/tokentop/session"
	"github.com/tokentop/tokentop/ui/figure"
)

// syntheticSession is a run of arms with trials timed from generated
// token arrivals: warmup first, then timed rounds with the arms
// interleaved; slowdown[i] stretches arm i's gaps.
func syntheticSession(t testing.TB, trials int, slowdown ...float64) *session.Session {
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	m := &session.Manifest{Schema: session.Schema, ID: "20261123T090000Z-synthetic-builtin", Status: session.StatusComplete, CreatedAt: start,
		ConfigHash: "cafe1234", Profile: session.ProfileInfo{Name: "greedy-vs-sampling", Source: "builtin", MaxTokens: 32, Warmup: 2, Trials: trials, Order: "shuffled", Seed: 7},
		Targets:     []session.TargetInfo{{Name: "builtin", Kind: "builtin", ModelActual: "stories260K", ModelRequested: "stories260K"}},
		Environment: session.Environment{OS: "linux", Arch: "amd64", Cores: 2, GoVersion: "go1.26"}}
	var records []session.Record
	var tokens strings.Builder
	tokens.WriteString(strings.Join(session.TokensHeader, ",") + "\n")
	at := start
	for round := range trials + 2 {
		for i, slow := range slowdown {
			arm := fmt.Sprintf("arm-%d", i)
			if round == 0 {
				m.Arms = append(m.Arms, session.ArmInfo{Name: arm, Strategy: "greedy", Target: "builtin"})
			}
			var arrivals []metrics.Arrival
			elapsed := time.Duration(0)
			for k := range 32 {
				elapsed += time.Duration((0.2 + rng.ExpFloat64()*0.05) * slow * float64(time.Millisecond))
				arrivals = append(arrivals, metrics.Arrival{At: elapsed, Tokens: 1})
				fmt.Fprintf(&tokens, "%s,%d,%d,%.3f,output,\n", arm, round+1, k+1, float64(elapsed)/1e6)
			}
			phase := session.PhaseTimed
			if round < 2 {
				phase = session.PhaseWarmup
			}
			r := session.Record{Arm: arm, Trial: round + 1, Phase: phase, Status: session.StatusOK, StartedAt: at, OutputTokens: 32,
				Timings: metrics.DeriveTimings(arrivals, elapsed+time.Millisecond/10, 32)}
			// The GPU below draws 180–220 W against an idle of 70 W (not
			// from rng, whose draws the timings above depend on).
			watts := 180 + 4*float64((7*round+3*i)%11)
			r.AvgPowerW, r.EnergyQuality = watts, "counter"
			r.EnergyJ = (watts - 70) * elapsed.Seconds()
			r.EnergyErrJ = r.EnergyJ / 20
			r.JPerToken = r.EnergyJ / 32
			records = append(records, r)
			at = at.Add(elapsed + time.Millisecond)
		}
	}
	finished := at
	m.FinishedAt = &finished
	dir := t.TempDir()
	// A GPU sampled every 50 ms over the run, busier while trials ran.
	var power strings.Builder
	power.WriteString(strings.Join(session.PowerHeader, ",") + "\n")
	energyMJ := 0.0
	for ms := 0.0; ms < float64(at.Sub(start).Milliseconds()); ms += 50 {
		watts := 180 + 40*rng.Float64()
		energyMJ += watts * 50
		fmt.Fprintf(&power, "%.3f,%.3f,%.1f,,,GPU-0,,,,,\n", ms, watts, energyMJ)
	}
	m.Power = &session.PowerInfo{PowerFile: m.ID + ".power.csv", SamplerStart: &start,
		Devices:  []telemetry.Device{{Name: "NVIDIA H100", ID: "GPU-0", Kind: telemetry.KindGPU}},
		Baseline: []session.DeviceBaseline{{ID: "GPU-0", Baseline: telemetry.Baseline{MeanW: 70, Samples: 60}}}}
	if err := os.WriteFile(filepath.Join(dir, m.Power.PowerFile), []byte(power.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	m.TokensFile = m.ID + ".tokens.csv"
	if err := os.WriteFile(filepath.Join(dir, m.TokensFile), []byte(tokens.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return &session.Session{Path: filepath.Join(dir, m.ID+".toml"), Manifest: m, Records: records}
}

func buildRun(t testing.TB, s *session.Session) *Report {
	refs, sessions := session.ArmComparison(s)
	r, err := Build(refs, sessions, nil, session.DefaultTestOptions)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// external finds anything that would make the browser fetch: a src or
// href, a CSS url() or @import, a script.
var external = regexp.MustCompile(`(?i)\s(src|href)\s*=|@import|<script|<link|<iframe|<object`)

// cssURL is a url(…) in the page's styles: only data: URLs (the charts'
// font) are allowed.
var cssURL = regexp.MustCompile(`(?i)url\(\s*["']?([^"')]*)`)

// pageOf is the report's page as WriteHTML writes it.
func pageOf(t testing.TB, r *Report) string {
	t.Helper()
	var page bytes.Buffer
	if err := r.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	return page.String()
}

func TestTheReportLeadsWithVerdictsAndHoldsEveryChartInline(t *testing.T) {
	s := syntheticSession(t, 60, 1, 1.3)
	r := buildRun(t, s)
	doc := pageOf(t, r)
	if loc := external.FindStringIndex(doc); loc != nil {
		t.Errorf("an external reference: %q", doc[max(0, loc[0]-40):min(len(doc), loc[1]+60)])
	}
	for _, m := range cssURL.FindAllStringSubmatch(doc, -1) {
		if !strings.HasPrefix(m[1], "data:") {
			t.Errorf("a url() that is not data: %q", m[0])
		}
	}
	// The charts' text is set in the font the page carries, the one
	// gonum measured it in.
	if !strings.Contains(doc, "font-family:"+chartFontFamily+";") || !strings.Contains(doc, `@font-face { font-family: "`+chartFontFamily+`"; src: url(data:font/ttf;base64,`) {
		t.Errorf("the charts' font %q is not the one the page embeds", chartFontFamily)
	}
	verdicts, caveats, charts, setup := strings.Index(doc, `id="verdicts"`), strings.Index(doc, `id="caveats"`), strings.Index(doc, `id="charts"`), strings.Index(doc, `id="setup"`)
	if !(verdicts > 0 && verdicts < caveats && caveats < charts && charts < setup) {
		t.Errorf("sections out of order: verdicts %d, caveats %d, charts %d, set-up %d", verdicts, caveats, charts, setup)
	}
	// The verdicts are the comparison's own words, and the slower arm is
	// said to be slower.
	if len(r.Verdicts) == 0 || !strings.HasPrefix(r.Verdicts[0], "arm-1 is slower than arm-0: median e2e +") {
		t.Errorf("verdicts %q", r.Verdicts)
	}
	for _, v := range r.Verdicts {
		if !strings.Contains(html.UnescapeString(doc), v) {
			t.Errorf("verdict %q is not on the page", v)
		}
	}
	names := []string{"e2e-histogram", "e2e-ecdf", "ttft-histogram", "ttft-ecdf", "tpot-histogram", "tpot-ecdf", "itl_mean-histogram", "itl_mean-ecdf", "convergence", "timeline", "gaps-typical", "gaps-slowest", "power-20261123T090000Z-synthetic-builtin"}
	for _, name := range names {
		i := strings.Index(doc, `<figure id="`+name+`">`)
		if i < 0 {
			t.Errorf("no %s chart", name)
			continue
		}
		if fig := doc[i:]; !strings.HasPrefix(fig[strings.Index(fig, "\n")+1:], "<svg") || strings.Index(fig, "</svg>") > strings.Index(fig, "</figure>") {
			t.Errorf("%s holds no inline SVG", name)
		}
	}
	// The convergence legend says where each arm's trials-needed lands.
	var e2e []float64
	for _, rec := range session.Counted(session.ByArm(s.Records)["arm-1"]) {
		e2e = append(e2e, rec.E2EMs)
	}
	need := metrics.TrialsForMean(metrics.Describe(e2e).CV, 0.01)
	if !strings.Contains(html.UnescapeString(doc), fmt.Sprintf("arm-1 (±1%% needs %d trials)", need)) {
		t.Errorf("the convergence legend lacks arm-1's %d trials needed", need)
	}
	for _, want := range []string{"cafe1234", "stories260K", "greedy-vs-sampling (builtin): 2 warmup + 60 trials per arm", "None: every session finished"} {
		if !strings.Contains(html.UnescapeString(doc), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

func TestCaveatsAreSaidAndASingleArmHasNoVerdicts(t *testing.T) {
	s := syntheticSession(t, 20, 1)
	s.Manifest.Status = session.StatusPartial
	s.Records[len(s.Records)-1].Status, s.Records[len(s.Records)-1].Error = session.StatusError, "HTTP 503: overloaded"
	os.Remove(filepath.Join(filepath.Dir(s.Path), s.Manifest.TokensFile))
	s.Manifest.Power = nil
	r := buildRun(t, s)
	for _, want := range []string{"no token timings, so no gaps between tokens", "no power or energy was measured"} {
		if !slices.ContainsFunc(r.Caveats, func(c string) bool { return strings.Contains(c, want) }) {
			t.Errorf("caveats lack %q: %q", want, r.Caveats)
		}
	}
	doc := pageOf(t, r)
	if len(r.Caveats) < 2 || !strings.Contains(html.UnescapeString(doc), r.Caveats[0]) || strings.Contains(doc, "None: every session finished") {
		t.Errorf("caveats %q", r.Caveats)
	}
	if r.Verdicts != nil || !strings.Contains(doc, "One arm: nothing to compare") {
		t.Errorf("one arm, yet verdicts %q", r.Verdicts)
	}
	// A run that did not finish says so before any figure, as the text
	// report does.
	if caveats, numbers := strings.Index(doc, `id="caveats"`), strings.Index(doc, `id="numbers"`); caveats < 0 || numbers < 0 || caveats > numbers {
		t.Errorf("the caveats (at %d) do not lead the numbers (at %d)", caveats, numbers)
	}
}

// Axis labels carry no trailing zeros: a token index reads 25, not 25.00,
// a percentage 50, not 50.00; a fraction keeps the digits it needs.
func TestAxisLabelsHaveNoTrailingZeros(t *testing.T) {
	for _, span := range [][2]float64{{0, 150}, {0, 100}, {0, 1}, {0.001, 0.004}, {1000, 250000}} {
		for _, tick := range (plainTicks{}).Ticks(span[0], span[1]) {
			if l := tick.Label; l != "" && strings.Contains(l, ".") && (strings.HasSuffix(l, "0") || strings.HasSuffix(l, ".")) {
				t.Errorf("span %v: label %q", span, l)
			}
			if l := tick.Label; l != "" {
				if v, err := strconv.ParseFloat(l, 64); err != nil || math.Abs(v-tick.Value) > 1e-9*math.Max(1, math.Abs(tick.Value)) {
					t.Errorf("span %v: label %q for %v", span, l, tick.Value)
				}
			}
		}
	}
	r := buildRun(t, syntheticSession(t, 30, 1, 1.1))
	if doc := pageOf(t, r); regexp.MustCompile(`>[0-9]+\.0+<`).MatchString(doc) {
		t.Errorf("a chart has a label with trailing zeros: %q", regexp.MustCompile(`>[0-9]+\.0+<`).FindString(doc))
	}
}

// Energy not all from a counter is a caveat that counts each source.
func TestEnergyQualityIsACaveat(t *testing.T) {
	s := syntheticSession(t, 20, 1)
	for i := range s.Records {
		s.Records[i].EnergyQuality = string(telemetry.QualityCounter)
		if i%4 == 0 {
			s.Records[i].EnergyQuality = string(telemetry.QualitySampled)
		}
	}
	r := buildRun(t, s)
	if !slices.ContainsFunc(r.Caveats, func(c string) bool {
		return strings.HasSuffix(c, ": energy of the timed trials: 15 from an energy counter, 5 integrated from power samples (less exact)")
	}) {
		t.Errorf("caveats %q", r.Caveats)
	}
}

func TestChartsAreSavedAsSlideSizedFiles(t *testing.T) {
	r := buildRun(t, syntheticSession(t, 30, 1, 1.1))
	dir := t.TempDir()
	for _, ext := range []string{"svg", "png"} {
		paths, err := r.SaveCharts(filepath.Join(dir, ext), ext)
		if err != nil || len(paths) != len(r.Charts) {
			t.Fatalf("%s: %v, %v", ext, paths, err)
		}
		data, err := os.ReadFile(paths[0])
		if err != nil {
			t.Fatal(err)
		}
		switch ext {
		case "svg":
			if !bytes.Contains(data, []byte("<svg")) || !bytes.Contains(data, []byte(`viewBox="0 0 576 324"`)) {
				t.Errorf("%s is not a 576×324 pt SVG: %.200s", paths[0], data)
			}
		case "png":
			if !bytes.HasPrefix(data, []byte("\x89PNG")) {
				t.Errorf("%s is not a PNG", paths[0])
			}
		}
	}
}

func benchmarkReport(b *testing.B, trialsPerArm int) {
	s := syntheticSession(b, trialsPerArm, 1, 1.2)
	var size int
	for b.Loop() {
		r := buildRun(b, s)
		var page bytes.Buffer
		if err := r.WriteHTML(&page); err != nil {
			b.Fatal(err)
		}
		size = page.Len()
	}
	b.ReportMetric(float64(size)/1e6, "MB/page")
}

// BenchmarkReport100k: a 100,000-trial session must stay fast and small,
// drawn from summaries rather than one SVG element per trial.
func BenchmarkReport100k(b *testing.B) { benchmarkReport(b, 50_000) }

// BenchmarkReport100: a 100-trial session's page.
func BenchmarkReport100(b *testing.B) { benchmarkReport(b, 50) }

// TestArmsOnTwoTargetsAreLabelledByWhatDiffers: arms on two targets of
// one engine (f32 and q8_0 weights) are named with their dtype in the
// verdicts, and the set-up has a row per target with its arms.
func TestArmsOnTwoTargetsAreLabelledByWhatDiffers(t *testing.T) {
	s := syntheticSession(t, 40, 1, 0.4)
	m := s.Manifest
	m.Targets = []session.TargetInfo{
		{Name: "builtin-f32", Kind: "builtin", ModelActual: "stories15M", Quantization: "f32"},
		{Name: "builtin-q8", Kind: "builtin", ModelActual: "stories15M", Quantization: "q8_0", DType: "q8_0"},
	}
	m.Arms[0].Target, m.Arms[1].Target = "builtin-f32", "builtin-q8"
	r := buildRun(t, s)
	if len(r.Verdicts) == 0 || !strings.HasPrefix(r.Verdicts[0], "arm-1 (q8_0) is faster than arm-0 (f32): median e2e -") {
		t.Errorf("verdicts %q", r.Verdicts)
	}
	rows := map[string]string{}
	for _, row := range r.Setups[0].Rows {
		rows[row[0]] = row[1]
	}
	if got := rows["target builtin-q8 (arm-1)"]; got != "builtin · model stories15M (asked for —) · quantization q8_0 · digest — · server —" {
		t.Errorf("target row %q in %v", got, rows)
	}
}

// With two sweeps on one chart, each knee bound is tied to its own sweep
// (drawn in its line style), and the legend names the bound once.
func TestKneeLinesBelongToTheirOwnSweep(t *testing.T) {
	level := func(ttft float64) session.Level { return session.Level{Concurrency: 1, TTFTP95: ttft} }
	sweeps := []namedSweep{{label: "A greedy", Sweep: session.Sweep{Levels: []session.Level{level(10)}}},
		{label: "B greedy", Sweep: session.Sweep{Levels: []session.Level{level(20)}}}}
	lines := kneeLines(sweeps, "knee bound", func(l session.Level) float64 { return l.TTFTP95 })
	if len(lines) != 2 || lines[0].sweep != 0 || lines[1].sweep != 1 || lines[0].y != 20 || lines[1].y != 40 {
		t.Errorf("lines %+v", lines)
	}
	p, err := levelChart("t", "y", sweeps, func(l session.Level) float64 { return l.TTFTP95 }, lines)
	if err != nil {
		t.Fatal(err)
	}
	svg, err := svgOf(p)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(svg, "knee bound"); n != 1 {
		t.Errorf("%d legend entries for the knee bound, want one", n)
	}
}

// TestAReportSurvivesValuesNoReaderLetsThrough: one e2e of 1e160 made a
// CV infinite, the trials-needed loop spin for ever and a chart's line a
// nil that panicked. Readers now refuse such values; the statistics and
// charts must survive them all the same, in memory: every part that can
// be drawn is, and one that cannot is named among the caveats.
func TestAReportSurvivesValuesNoReaderLetsThrough(t *testing.T) {
	for _, bad := range []float64{1e160, math.Inf(1), math.MaxFloat64} {
		s := syntheticSession(t, 20, 1, 1.2)
		for i := range s.Records {
			if s.Records[i].Phase == session.PhaseTimed && s.Records[i].Arm == "arm-0" {
				s.Records[i].E2EMs = bad
				break
			}
		}
		r := buildRun(t, s)
		var page bytes.Buffer
		if err := r.WriteHTML(&page); err != nil {
			t.Fatalf("e2e %g: %v", bad, err)
		}
		if len(r.Charts) == 0 {
			t.Errorf("e2e %g: no chart drawn at all", bad)
		}
		lines := session.BuildReport(s, session.TestOptions{Resamples: 200, Seed: 1}).Lines("", "  ")
		if text := strings.Join(lines, "\n"); !strings.Contains(text, "needed") {
			t.Errorf("e2e %g: report\n%s", bad, text)
		}
	}
	var e elements
	if l := e.line(plotter.XYs{{X: math.NaN(), Y: 1}}); l == nil || e.err == nil {
		t.Error("a line through a NaN point neither failed nor came back drawable")
	}
}

// TestAReasoningModelsReportShowsItsThinking: where a model reasoned the
// page adds each arm's thinking against its output, its TTFO beside TTFT
// in the verdicts and a TTFO chart; where none did, none of them.
func TestAReasoningModelsReportShowsItsThinking(t *testing.T) {
	s := syntheticSession(t, 30, 1, 1.3)
	for i := range s.Records {
		r := &s.Records[i]
		r.ReasoningTokens = 24
		r.TTFOMs = r.TTFTMs + 0.75*r.DecodeMs
	}
	var page bytes.Buffer
	if err := buildRun(t, s).WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	doc := html.UnescapeString(page.String())
	for _, want := range []string{`<h2 id="reasoning">Reasoning</h2>`, "<th>reasoning tokens</th>", "<td>24.0</td>", `id="ttfo-histogram"`, "median TTFO "} {
		if !strings.Contains(doc, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	page.Reset()
	if err := buildRun(t, syntheticSession(t, 30, 1, 1.3)).WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(page.String(), "TTFO") || strings.Contains(page.String(), `id="reasoning"`) {
		t.Error("TTFO or a reasoning table where no model reasoned")
	}
}

// An arm on a fleet gets a table of its replicas and the words that say
// which differ; an arm on one server, none.
func TestAFleetsReportShowsItsReplicas(t *testing.T) {
	s := syntheticSession(t, 30, 1)
	s.Manifest.Targets[0].Replicas = []string{"http://vllm-0:8000/v1", "http://vllm-1:8000/v1"}
	for i := range s.Records {
		r := &s.Records[i]
		r.Replica = strconv.Itoa(r.Trial % 2)
		if r.Replica == "1" {
			r.E2EMs *= 1.5
		}
	}
	var page bytes.Buffer
	if err := buildRun(t, s).WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	doc := html.UnescapeString(page.String())
	for _, want := range []string{`<h2 id="replicas">Replicas</h2>`, "<td>http://vllm-1:8000/v1</td>", "replica 1 (http://vllm-1:8000/v1) is slower than replica 0 (http://vllm-0:8000/v1): its e2e is the longer in 100% of pairs"} {
		if !strings.Contains(doc, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	page.Reset()
	if err := buildRun(t, syntheticSession(t, 30, 1)).WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(page.String(), `id="replicas"`) {
		t.Error("a replicas table where the arm ran on one server")
	}
}

// The report opens with numbers: a table per arm before any verdict,
// whose figures are the session's own (read back from the page).
func TestTheReportOpensWithEachArmsNumbers(t *testing.T) {
	s := syntheticSession(t, 60, 1, 1.3)
	r := buildRun(t, s)
	doc := pageOf(t, r)
	numbers, verdicts := strings.Index(doc, `id="numbers"`), strings.Index(doc, `id="verdicts"`)
	if !(numbers > 0 && numbers < verdicts) {
		t.Fatalf("numbers at %d, verdicts at %d", numbers, verdicts)
	}
	section := doc[numbers:verdicts]
	cell := regexp.MustCompile(`<t[hd][^>]*>([^<]*)</t[hd]>`)
	var cells []string
	for _, m := range cell.FindAllStringSubmatch(section, -1) {
		cells = append(cells, html.UnescapeString(m[1]))
	}
	header := []string{"", "n", "degraded", "e2e mean ms", "median [95% CI]", "p90", "p95", "p99", "max", "CV", "TTFT p50", "TTFT p95", "TPOT p50", "ITL p50", "ITL p99", "tok/s", "J/tok", "W"}
	if len(cells) != 3*len(header) || !slices.Equal(cells[:len(header)], header) {
		t.Fatalf("the numbers table: %q", cells)
	}
	var e2e []float64
	for _, rec := range session.Counted(session.ByArm(s.Records)["arm-1"]) {
		e2e = append(e2e, rec.E2EMs)
	}
	st := metrics.Describe(e2e)
	row := cells[2*len(header):]
	if row[0] != "arm-1" || row[1] != fmt.Sprint(st.N) || row[5] != fmt.Sprintf("%.2f", st.P90) || row[7] != fmt.Sprintf("%.2f", st.P99) ||
		!strings.HasPrefix(row[4], fmt.Sprintf("%.2f [", st.Median)) || row[13] == "—" {
		t.Errorf("arm-1's row %q; want n %d, p90 %.2f, p99 %.2f, median %.2f and ITL from the tokens", row, st.N, st.P90, st.P99, st.Median)
	}
	// Energy, measured for every arm, is in the table and in a verdict
	// of its own, as a ratio.
	energy := session.EnergyOf(session.Counted(session.ByArm(s.Records)["arm-1"]), s.Manifest.Power)
	if row[16] != session.FormatValue(energy.JPerToken) || row[17] != energy.PowerCell() {
		t.Errorf("arm-1's energy cells %q %q; want %s J/tok, %s W", row[16], row[17], session.FormatValue(energy.JPerToken), energy.PowerCell())
	}
	if !slices.ContainsFunc(r.Verdicts, func(v string) bool {
		return strings.HasPrefix(v, "arm-1 uses 1.") && strings.Contains(v, "× [") && strings.Contains(v, "the energy per token of arm-0")
	}) {
		t.Errorf("no energy verdict among %q", r.Verdicts)
	}
}

// TestOneOutlierDoesNotFlattenTheCharts: one trial of 3.3 s among trials
// of milliseconds once stretched the ECDF's and the timeline's axes until
// the rest was a flat line. The axes now end near the rest, the outlier is
// counted in the label or legend, the legends have their own band above
// the data, and the histogram's marks keep their whole glyph.
func TestOneOutlierDoesNotFlattenTheCharts(t *testing.T) {
	s := syntheticSession(t, 30, 1, 1.1)
	for i := range s.Records {
		if r := &s.Records[i]; r.Arm == "arm-0" && r.Trial == 20 {
			r.E2EMs = 3300
		}
	}
	r := buildRun(t, s)
	charts := map[string]Chart{}
	for _, c := range r.Charts {
		charts[c.Name] = c
	}
	ecdf, timeline, hist := charts["e2e-ecdf"].plot, charts["timeline"].plot, charts["e2e-histogram"].plot
	if ecdf == nil || timeline == nil || hist == nil {
		t.Fatalf("charts %v", slices.Collect(maps.Keys(charts)))
	}
	if ecdf.X.Max > 330 || !strings.Contains(ecdf.X.Label.Text, "1 trial past") || !strings.Contains(ecdf.X.Label.Text, "up to 3300.0") {
		t.Errorf("ECDF axis to %v, label %q", ecdf.X.Max, ecdf.X.Label.Text)
	}
	if ecdf.Y.Max <= 100 {
		t.Errorf("the ECDF's legend has no band above 100%%: Y max %v", ecdf.Y.Max)
	}
	if timeline.Y.Max > 330 {
		t.Errorf("timeline axis to %v: the outlier flattens it", timeline.Y.Max)
	}
	if hist.X.Max > 330 {
		t.Errorf("histogram axis to %v", hist.X.Max)
	}
	// The histogram's marks sit at most at the last bin's edge, which is
	// at most AxisTop: the axis goes past it, so no glyph is cut.
	var sorted [][]float64
	for _, arm := range []string{"arm-0", "arm-1"} {
		var values []float64
		for _, rec := range s.Records {
			if rec.Arm == arm && rec.Phase == session.PhaseTimed {
				values = append(values, rec.E2EMs)
			}
		}
		slices.Sort(values)
		sorted = append(sorted, values)
	}
	if top := figure.AxisTop(sorted...); !(hist.X.Max > top) || !(timeline.Y.Max > top) {
		t.Errorf("the histogram's axis ends at %v, the timeline's at %v: not past the marks' edge %v", hist.X.Max, timeline.Y.Max, top)
	}
}

// An open loop's report draws achieved against offered and p95 TTFT and
// e2e both ways by rate, with the SLO's bounds, beside its rate table.
func TestAnOpenLoopsReportDrawsItsRates(t *testing.T) {
	s := syntheticSession(t, 30, 1, 1.4)
	s.Manifest.Profile.Load = &session.LoadInfo{Rates: []float64{10, 40}, Arrival: "poisson", SLO: &session.SLOInfo{TTFTMs: 3, Goodput: 0.9}}
	for i, rate := range []float64{10, 40} {
		s.Manifest.Arms[i].Base, s.Manifest.Arms[i].Rate = "arm", rate
	}
	for i := range s.Records {
		r := &s.Records[i]
		r.Window = session.WindowSteady
		r.ScheduledMs, r.QueueMs = float64(r.Trial)*10, float64(r.Trial%5)
	}
	r := buildRun(t, s)
	names := map[string]bool{}
	for _, c := range r.Charts {
		names[c.Name] = true
	}
	for _, want := range []string{"achieved-vs-offered", "ttft-p95-vs-rate", "e2e-p95-vs-rate"} {
		if !names[want] {
			t.Errorf("no %s chart among %v", want, slices.Collect(maps.Keys(names)))
		}
	}
	page := pageOf(t, r)
	for _, want := range []string{"rates of arm:", "SLO bound 3 ms", "achieved = offered", "from the due time"} {
		if !strings.Contains(page, want) {
			t.Errorf("%q missing from the page", want)
		}
	}
}

// A session whose server gave its metrics draws them against the
// scraper's clock, the trials' windows under them: its requests running
// and waiting, and its caches in percent; a session whose server gave
// none draws neither.
func TestTheServersOwnMetricsAreDrawn(t *testing.T) {
	s := syntheticSession(t, 20, 1, 1.2)
	start := s.Manifest.CreatedAt
	var rows strings.Builder
	rows.WriteString(strings.Join(session.ServerHeader, ",") + "\n")
	for k := range 10 {
		at := float64(k) * 1000
		fmt.Fprintf(&rows, "%.3f,0,llamacpp:requests_processing,,%d\n%.3f,0,tokentop:requests_running,,%d\n%.3f,0,tokentop:requests_waiting,,%d\n%.3f,0,tokentop:prefix_cache_hit_rate,,%g\n",
			at, k%3, at, k%3, at, k%2, at, 0.1*float64(k))
	}
	s.Manifest.ServerMetrics = &session.ServerMetricsInfo{File: s.Manifest.ID + ".server.csv", IntervalMs: 1000, StartedAt: &start,
		Servers: []session.ServerMetricsSource{{Targets: []string{"llamacpp"}, URL: "http://127.0.0.1:8080/metrics", Status: "scraped"}}}
	if err := os.WriteFile(filepath.Join(filepath.Dir(s.Path), s.Manifest.ServerMetrics.File), []byte(rows.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	has := func(r *Report) map[string]bool {
		names := map[string]bool{}
		for _, c := range r.Charts {
			names[c.Name] = true
		}
		return names
	}
	names := has(buildRun(t, s))
	if !names["server-requests-"+s.Manifest.ID] || !names["server-caches-"+s.Manifest.ID] {
		t.Errorf("charts %v", names)
	}
	// A run killed before its end never said how scraping went: its CSV
	// is drawn all the same.
	s.Manifest.ServerMetrics.Servers[0].Status = "not answered yet"
	if names := has(buildRun(t, s)); !names["server-requests-"+s.Manifest.ID] {
		t.Errorf("a killed run's server metrics were not drawn: %v", names)
	}
	// A server with no metrics left the CSV its header alone.
	s.Manifest.ServerMetrics.Servers[0].Status = "none: HTTP 501"
	os.WriteFile(filepath.Join(filepath.Dir(s.Path), s.Manifest.ServerMetrics.File), []byte(strings.Join(session.ServerHeader, ",")+"\n"), 0o644)
	if names := has(buildRun(t, s)); names["server-requests-"+s.Manifest.ID] {
		t.Errorf("a server with no metrics drew %v", names)
	}
}
