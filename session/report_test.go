package session

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tokentop/tokentop/metrics"
)

// reportSession has one arm whose first timed trials are still slow
// (warmup 2, the series settles at about trial 15) and one steady arm with
// a long warmup.
func reportSession() *Session {
	rng := rand.New(rand.NewPCG(21, 22))
	s := &Session{Path: "/x/S.toml", Manifest: newManifest("S")}
	for i := range 80 {
		phase := PhaseTimed
		if i < 2 {
			phase = PhaseWarmup
		}
		slow := 100 + 2*rng.NormFloat64()
		if i < 15 {
			slow += 40
		}
		s.Records = append(s.Records, record("greedy", i+1, phase, StatusOK, slow))
	}
	for i := range 60 {
		phase := PhaseTimed
		if i < 20 {
			phase = PhaseWarmup
		}
		s.Records = append(s.Records, record("hot", i+1, phase, StatusOK, 100+2*rng.NormFloat64()))
	}
	return s
}

func TestReportJudgesTheWarmupAndCountsEarlyOutliers(t *testing.T) {
	r := BuildReport(reportSession(), TestOptions{Resamples: 500, Seed: 1})
	greedy, hot := r.Arms[0], r.Arms[1]
	if greedy.N != 78 || greedy.Warmup != 2 || hot.N != 40 || hot.Warmup != 20 {
		t.Fatalf("counts: greedy %d+%d, hot %d+%d", greedy.N, greedy.Warmup, hot.N, hot.Warmup)
	}
	if !strings.HasPrefix(greedy.WarmupVerdict, "warmup of 2 was too short: the series settles after trial 15") {
		t.Errorf("greedy warmup: %s", greedy.WarmupVerdict)
	}
	if greedy.EarlyOutliers != 5 || len(greedy.OutlierTrials) < 13 || greedy.OutlierTrials[0] != 3 {
		t.Errorf("greedy outliers %v, %d early", greedy.OutlierTrials, greedy.EarlyOutliers)
	}
	if !strings.HasPrefix(hot.WarmupVerdict, "warmup of 20 was longer than needed: the series is steady from the first trial") {
		t.Errorf("hot warmup: %s", hot.WarmupVerdict)
	}
	if hot.CV.Lo > hot.CV.Value || hot.CV.Hi < hot.CV.Value || hot.MeanNeeds1 <= hot.MeanNeeds5 || !hot.P99Needs5.AtLeast || len(hot.Curve) != 40 {
		t.Errorf("hot: %+v", hot)
	}
	text := strings.Join(r.Lines("", "  "), "\n")
	for _, want := range []string{"greedy: 78 timed trials (+2 warmup)", "skew +", "beyond Tukey's fences", "5 among the first 5 timed trials",
		"p99 ±5% more than these trials can tell (its interval needs 381 to exist at all)", "raise warmup to 15"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
}

func TestReportFormats(t *testing.T) {
	r := BuildReport(reportSession(), TestOptions{Resamples: 200, Seed: 1})
	var md, csvOut, js bytes.Buffer
	for format, buf := range map[string]*bytes.Buffer{"md": &md, "csv": &csvOut, "json": &js} {
		if err := r.Write(buf, format); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(md.String(), "### greedy: 78 timed trials") || !strings.Contains(md.String(), "- warmup ") {
		t.Errorf("md:\n%s", md.String())
	}
	if lines := strings.Split(strings.TrimSpace(csvOut.String()), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[0], "arm,n,warmup,median_ms") || !strings.HasPrefix(lines[1], "greedy,78,2,") {
		t.Errorf("csv:\n%s", csvOut.String())
	}
	var parsed struct {
		Session string
		Arms    []struct {
			Summary     map[string]any
			Convergence []struct{ N int }
		}
	}
	if err := json.Unmarshal(js.Bytes(), &parsed); err != nil || parsed.Session != "S" || len(parsed.Arms) != 2 ||
		parsed.Arms[0].Summary["mser5_settle"] != 15.0 || len(parsed.Arms[1].Convergence) != 40 {
		t.Errorf("json (%v): %+v", err, parsed)
	}
	if err := r.Write(&md, "xml"); err == nil {
		t.Error("unknown format accepted")
	}
}

func BenchmarkReport(b *testing.B) {
	s := reportSession()
	for b.Loop() {
		BuildReport(s, DefaultTestOptions)
	}
}

// TestTheReportSaysWhatITLIsBetween: an arm whose chunks bundled tokens
// of unknown count, and whose tokens came in bursts, is said to have so
// in the repeatability report, with its thinking against its output.
func TestTheReportSaysWhatITLIsBetween(t *testing.T) {
	s := reportSession()
	for i := range s.Records {
		if r := &s.Records[i]; r.Arm == "hot" {
			r.Chunks, r.ITLPer, r.Delivery, r.ReasoningTokens = 8, ITLPerChunk, DeliveryBurst, 24
		}
	}
	text := strings.Join(BuildReport(s, TestOptions{Resamples: 200, Seed: 1}).Lines("", "  "), "\n")
	for _, want := range []string{
		"  note: hot's chunks carried several tokens each (1280 tokens in 320 chunks, in 40 of its 40 trials) and the server did not say how many each",
		"  note: in 40 of 40 trials of hot the tokens arrived in a burst",
		"  reasoning  24.00 of 32.00 output tokens were thinking (means)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("%q missing from the report:\n%s", want, text)
		}
	}
	if strings.Contains(text, "greedy's chunks") {
		t.Errorf("a note on greedy, whose chunks were single tokens:\n%s", text)
	}
}

// Trials that drift together get a block bootstrap's wider intervals, a
// smaller effective n and more trials needed, and the report says so;
// independent ones keep the ordinary bootstrap.
func TestCorrelatedTrialsGetBlockIntervals(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	s := &Session{Path: "/x/S.toml", Manifest: newManifest("S")}
	s.Manifest.Arms = []ArmInfo{{Name: "drifting"}, {Name: "steady"}}
	drift := 0.0
	for i := range 300 {
		drift = 0.7*drift + math.Sqrt(1-0.49)*rng.NormFloat64()
		s.Records = append(s.Records, record("drifting", i+1, PhaseTimed, StatusOK, 100+3*drift),
			record("steady", i+1, PhaseTimed, StatusOK, 100+3*rng.NormFloat64()))
	}
	groups := ByArm(s.Records)
	drifting, steady := SummarizeArm(groups["drifting"], 1, 0.01, 0).Metrics["e2e_ms"], SummarizeArm(groups["steady"], 1, 0.01, 0).Metrics["e2e_ms"]
	if drifting.Lag1 < 0.6 || drifting.Block < 2 || steady.Block != 0 || math.Abs(steady.Lag1) > 0.12 {
		t.Fatalf("drifting r %.2f block %d, steady r %.2f block %d", drifting.Lag1, drifting.Block, steady.Lag1, steady.Block)
	}
	// Alike in spread, so the drifting arm's wider interval is the block's.
	if wd, ws := drifting.MeanCIHi-drifting.MeanCILo, steady.MeanCIHi-steady.MeanCILo; wd < 1.5*ws {
		t.Errorf("mean interval %.3f wide drifting, %.3f steady", wd, ws)
	}
	r := BuildReport(s, TestOptions{Resamples: 500, Seed: 1})
	text := strings.Join(r.Lines("", "  "), "\n")
	if !strings.Contains(text, "the 300 trials are worth about") || !strings.Contains(text, "moving-block bootstrap (blocks of") ||
		!strings.Contains(text, "trials independent enough for the ordinary bootstrap") {
		t.Errorf("report:\n%s", text)
	}
	if d, st := r.Arms[0], r.Arms[1]; d.Dependence.EffectiveN > 80 || d.MeanNeeds1 <= st.MeanNeeds1 {
		t.Errorf("effective n %.0f; trials needed for ±1%%: %d drifting, %d steady", d.Dependence.EffectiveN, d.MeanNeeds1, st.MeanNeeds1)
	}
}

// Tukey's lower fence below zero holds nothing out of an e2e: only the
// upper one is named ("-1.15..20.05 ms" read as if an e2e could be
// negative).
func TestAFenceBelowZeroIsNotNamed(t *testing.T) {
	a := ArmReport{Shape: metrics.Shape{LowFence: -1.15, HighFence: 20.05}}
	if got := outlierWords(a); got != "none beyond Tukey's upper fence (20.05 ms; the lower one is below zero)" {
		t.Errorf("%q", got)
	}
	a.Shape.LowFence = 3
	if got := outlierWords(a); got != "none beyond Tukey's fences (3.00..20.05 ms)" {
		t.Errorf("%q", got)
	}
}
