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

// abSession holds two arms drawn from lognormal latencies: greedy around
// 100 ms with the given spread, hot scaled by shift and its spread by
// spreadFactor.
func abSession(n int, shift, spreadFactor float64, seed uint64) *Session {
	rng := rand.New(rand.NewPCG(seed, 11))
	s := &Session{Manifest: newManifest("A")}
	for i := range n {
		g := 100 * math.Exp(0.05*rng.NormFloat64())
		h := 100 * shift * math.Exp(0.05*spreadFactor*rng.NormFloat64())
		s.Records = append(s.Records, record("greedy", i+1, PhaseTimed, StatusOK, g), record("hot", i+1, PhaseTimed, StatusOK, h))
	}
	return s
}

func abCompare(t *testing.T, s *Session, metricNames ...string) *Comparison {
	t.Helper()
	c, err := Compare([]Ref{{"A.toml", "greedy"}, {"A.toml", "hot"}}, []*Session{s, s}, metricNames)
	if err != nil {
		t.Fatal(err)
	}
	c.RunTests(TestOptions{Resamples: 2000, Seed: 1})
	return c
}

func TestVerdictSaysDirectionSizeAndSignificance(t *testing.T) {
	c := abCompare(t, abSession(40, 1.3, 1, 1), "e2e_ms", "output_tps")
	if len(c.Tests) != 2 {
		t.Fatalf("%d tests, want one per metric", len(c.Tests))
	}
	e2e, tps := c.Tests[0], c.Tests[1]
	if e2e.MedianRatio.Lo > 1.3 || e2e.MedianRatio.Hi < 1.3 {
		t.Errorf("median ratio %+v does not cover the true 1.3", e2e.MedianRatio)
	}
	// Sized by the spread within each arm (sd 5 and 6.5 ms), not by the 30%
	// gap between them: 2·(1.96+0.84)²·(5.8/2)² ≈ 130 trials for a 2% change.
	if e2e.TrialsToDetect < 80 || e2e.TrialsToDetect > 200 {
		t.Errorf("trials to detect 2%%: %d, want about 130", e2e.TrialsToDetect)
	}
	v := c.Verdicts()
	if !strings.HasPrefix(v[0], "hot is slower than greedy: median e2e +") || !strings.HasSuffix(v[0], "p < 0.001, large effect") {
		t.Errorf("e2e verdict: %q", v[0])
	}
	// Throughput falls as latency rises: the same data, the other word.
	if !strings.HasPrefix(v[1], "hot is slower than greedy: median output tok/s -") || tps.CliffsDelta >= 0 {
		t.Errorf("tok/s verdict: %q (Cliff's delta %g)", v[1], tps.CliffsDelta)
	}
	for _, test := range c.Tests {
		if test.PAdjusted < test.MannWhitney.P {
			t.Errorf("Holm never lowers a p-value: %g < %g", test.PAdjusted, test.MannWhitney.P)
		}
	}
	if note := c.TestsNote(); !strings.Contains(note, "Holm-adjusted (family size 2") || !strings.Contains(note, "2000 resamples") {
		t.Errorf("note: %s", note)
	}
}

func TestVerdictWithoutDifferenceSaysHowManyTrialsWouldTell(t *testing.T) {
	c := abCompare(t, abSession(30, 1, 1, 2), "e2e_ms")
	test := c.Tests[0]
	want := "to detect a 2% change you need ~"
	if v := test.Verdict([]string{"greedy", "hot"}); test.Significant() || !strings.HasPrefix(v, "hot vs greedy: no significant difference in e2e") || !strings.Contains(v, want) {
		t.Fatalf("verdict: %q", v)
	}
	// CV 0.05 and a 2% change: 2·(1.96+0.84)²·(0.05/0.02)² ≈ 98 per arm.
	if test.TrialsToDetect < 60 || test.TrialsToDetect > 150 {
		t.Errorf("trials to detect 2%%: %d, want about 98", test.TrialsToDetect)
	}
}

func TestSpreadVerdict(t *testing.T) {
	c := abCompare(t, abSession(60, 1, 3, 3), "e2e_ms")
	v := c.Verdicts()
	if len(v) != 2 || !strings.HasPrefix(v[1], "hot varies more than greedy in e2e: CV hot ") || !strings.Contains(v[1], "Brown-Forsythe p < 0.001") {
		t.Errorf("spread verdict: %q", v)
	}
	same := abCompare(t, abSession(60, 1, 1, 4), "e2e_ms").Verdicts()
	if !strings.HasPrefix(same[1], "hot and greedy vary alike in e2e") {
		t.Errorf("same spread: %q", same[1])
	}
}

func TestCompareFormatsCarryTheVerdicts(t *testing.T) {
	c := abCompare(t, abSession(20, 1.3, 1, 5), "e2e_ms")
	for format, want := range map[string]string{
		"text": "\nhot is slower than greedy",
		"md":   "\n- hot is slower than greedy",
		"csv":  "\nmetric,column,baseline,n,n_baseline,median_diff",
	} {
		var buf bytes.Buffer
		if err := c.Write(&buf, format); err != nil || !strings.Contains(buf.String(), want) || !strings.Contains(buf.String(), "holm") && !strings.Contains(buf.String(), "Holm") {
			t.Errorf("%s (%v):\n%s", format, err, buf.String())
		}
	}
	var buf bytes.Buffer
	if err := c.Write(&buf, "json"); err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		Tests []struct {
			Metric string  `json:"metric"`
			PHolm  float64 `json:"p_holm"`
			Effect string  `json:"effect"`
			Exact  bool    `json:"exact"`
		}
		Verdicts []string
	}
	if err := json.Unmarshal(buf.Bytes(), &parsed); err != nil || len(parsed.Tests) != 1 || parsed.Tests[0].Effect != "large" || !parsed.Tests[0].Exact || len(parsed.Verdicts) != 2 {
		t.Errorf("json (%v): %+v\n%s", err, parsed, buf.String())
	}
}

// The verdicts on a scenario with a known answer: two simulated backends
// whose e2e latencies are lognormal with a CV of 10%, either identical or
// the second 5% slower, over many seeded repetitions. An identical pair
// must be called different in about 5% of repetitions (α = 0.05); a 5%
// shift, at the trials per arm the verdict's own formula recommends for
// it, must be detected about 80% of the time (the formula's power).
func TestVerdictErrorRatesOnAKnownScenario(t *testing.T) {
	const reps, cv = 400, 0.10
	rng := rand.New(rand.NewPCG(31, 32))
	sigma := math.Sqrt(math.Log(1 + cv*cv))
	draw := func(n int, scale float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = scale * 100 * math.Exp(sigma*rng.NormFloat64()-sigma*sigma/2)
		}
		return out
	}
	session := func(a, b []float64) *Session {
		s := &Session{Manifest: newManifest("A")}
		for i := range a {
			s.Records = append(s.Records, record("greedy", i+1, PhaseTimed, StatusOK, a[i]), record("hot", i+1, PhaseTimed, StatusOK, b[i]))
		}
		return s
	}
	significant := func(n int, shift float64) float64 {
		hits := 0
		for range reps {
			s := session(draw(n, 1), draw(n, shift))
			c, err := Compare([]Ref{{"A.toml", "greedy"}, {"A.toml", "hot"}}, []*Session{s, s}, []string{"e2e_ms"})
			if err != nil {
				t.Fatal(err)
			}
			c.RunTests(TestOptions{Resamples: 1, Seed: 1}) // the verdict rests on the U test, not the intervals
			if c.Tests[0].Significant() {
				hits++
			}
		}
		return float64(hits) / reps
	}
	falsePositives := significant(30, 1)
	// The recommendation for a 5% change, as the verdict computes it (for
	// 2%) from a pilot of 30 trials per arm.
	pilot := append(draw(30, 1), draw(30, 1)...)
	n := metrics.TrialsToDetect(metrics.PooledStd(pilot[:30], pilot[30:]), 0.05*metrics.Mean(pilot[:30]))
	detected := significant(n, 1.05)
	t.Logf("identical pair: called different in %.1f%% of %d repetitions; 5%% shift at the recommended %d trials per arm: detected in %.1f%%",
		100*falsePositives, reps, n, 100*detected)
	// Binomial standard errors over 400 repetitions: 1.1 points at 5%, 2 at 80%.
	if falsePositives > 0.085 {
		t.Errorf("false-positive rate %.1f%%, want about 5%%", 100*falsePositives)
	}
	if detected < 0.70 || detected > 0.95 {
		t.Errorf("detection rate %.1f%% at n = %d, want about 80%%", 100*detected, n)
	}
}

// The final report's statistics for a typical comparison: two arms of 100
// trials, four metrics, 10,000 resamples per test.
func BenchmarkRunTests(b *testing.B) {
	s := abSession(100, 1.05, 1, 9)
	for b.Loop() {
		c, err := Compare([]Ref{{"A.toml", "greedy"}, {"A.toml", "hot"}}, []*Session{s, s}, CompareMetrics)
		if err != nil {
			b.Fatal(err)
		}
		c.RunTests(DefaultTestOptions)
	}
}
