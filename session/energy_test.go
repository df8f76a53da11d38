package session

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tokentop/tokentop/metrics/telemetry"
)

// recordedH200 loads a session an H200 drill wrote (../shared/gpu/recorded)
// and recomputes each trial's energy from its power CSV by the rules of
// today (telemetry.TrialEnergy), which the files of that day did not
// carry the resolution of. Each recomputed net energy equals the one
// recorded that day.
func recordedH200(t *testing.T, name string) *Session {
	t.Helper()
	s, err := Load(filepath.Join("..", "..", "shared", "gpu", "recorded", name+".toml"))
	if err != nil {
		t.Fatalf("%v (check out ../shared beside the repository)", err)
	}
	power, _, err := LoadPower(s)
	if err != nil {
		t.Fatal(err)
	}
	var samples []telemetry.Sample
	for _, p := range power {
		x := telemetry.NewSample(time.Duration(p.AtMs*float64(time.Millisecond)), 0)
		x.PowerW, x.EnergyMJ = p.PowerW, p.EnergyMJ
		samples = append(samples, x)
	}
	idle, start := s.Manifest.Power.Baseline[0].Baseline, *s.Manifest.Power.SamplerStart
	for i := range s.Records {
		r := &s.Records[i]
		from := r.StartedAt.Sub(start)
		e := telemetry.TrialEnergy(samples, from, from+time.Duration(r.E2EMs*float64(time.Millisecond)), idle, true)
		if math.Abs(e.NetJ-r.EnergyJ) > 0.001 || e.Quality != telemetry.QualityCounter {
			t.Fatalf("%s trial %d: recomputed %.3f J (%s), recorded %.3f J", r.Arm, r.Trial, e.NetJ, e.Quality, r.EnergyJ)
		}
		// The counter moves every ~100 ms, 12–15 J a step at these
		// powers: the resolution is a step, not a fraction of one.
		if e.ErrJ < 8 || e.ErrJ > 30 {
			t.Errorf("%s trial %d: resolution %.1f J; want about one counter step", r.Arm, r.Trial, e.ErrJ)
		}
		r.EnergyErrJ = e.ErrJ
	}
	return s
}

// withDrift is the session's power info with its idle baseline measured
// again after the run, drift watts away.
func withDrift(s *Session, drift float64) *PowerInfo {
	p := *s.Manifest.Power
	p.BaselineAfter, p.DriftW = p.Baseline, drift
	return &p
}

// The H200 drill's arms 2 W above a 124–126 W idle: 4 of their 22 timed
// trials had negative net energy and the idle moved 2.2 W between two runs
// two minutes apart. Not one figure is printed for them, live or after.
func TestEnergyNearIdleIsNotAFigure(t *testing.T) {
	first := recordedH200(t, "h200-run1/20261128T170103Z-quick-openai")
	s := recordedH200(t, "h200-run1/20261128T170334Z-greedy-vs-sampling-openai")
	drift := s.Manifest.Power.Baseline[0].MeanW - first.Manifest.Power.Baseline[0].MeanW
	negative := 0
	for i := range s.Records {
		r := &s.Records[i]
		if r.EnergyJ < 0 {
			negative++
			if got := TrialJPerToken(r, "J/token"); got != "≈ idle" {
				t.Errorf("%s trial %d, %.3f J net: live %q", r.Arm, r.Trial, r.EnergyJ, got)
			}
		}
	}
	if negative < 4 {
		t.Fatalf("%d trials below idle; the drill had 5", negative)
	}
	for arm, records := range ByArm(s.Records) {
		for _, power := range []*PowerInfo{s.Manifest.Power, withDrift(s, drift)} {
			e := EnergyOf(Counted(records), power)
			if !e.Idle() || e.Cell() != "≈ idle" || !strings.Contains(e.Words(), "not distinguishable from idle") || !math.IsNaN(e.Lo) && !(e.Lo < 0 && e.Hi > 0) {
				t.Errorf("%s: %s", arm, e.Words())
			}
		}
	}
}

// 1.1B and 7.2B models, 2 W and 19 W above idle: the larger's figure holds
// with the drift carried, the smaller's only without it. The drift
// widens every interval; the words say what each carries.
func TestEnergyCarriesTheIdleBaselinesDrift(t *testing.T) {
	s := recordedH200(t, "h200-run1/20261128T170103Z-quick-openai")
	groups := ByArm(s.Records)
	steady := EnergyOf(Counted(groups["l1b"]), withDrift(s, 0))
	drifting := EnergyOf(Counted(groups["l1b"]), withDrift(s, 2.2))
	unknown := EnergyOf(Counted(groups["l1b"]), s.Manifest.Power)
	if steady.Idle() || !drifting.Idle() || !(drifting.Hi-drifting.Lo > steady.Hi-steady.Lo) {
		t.Errorf("l1b without drift %s; with 2.2 W %s", steady.Words(), drifting.Words())
	}
	if !strings.Contains(drifting.Words(), "for the idle baseline's drift and the readings' resolution") ||
		!strings.HasSuffix(unknown.Words(), "the idle baseline was measured before the run only, so its drift is not in the interval") {
		t.Errorf("the words: %q / %q", drifting.Words(), unknown.Words())
	}
	large := EnergyOf(Counted(groups["l8b"]), withDrift(s, 2.2))
	if large.Idle() || math.Abs(large.JPerToken-1.48) > 0.01 || !(large.Lo < 1.48 && large.Hi > 1.48) || large.N != 12 || large.Quality != "counter" {
		t.Errorf("l8b: %s", large.Words())
	}
	if got := large.Cell(); got != "1.48" {
		t.Errorf("l8b's cell %q", got)
	}
}

// An 8,000-token prefill against plain decode on the H200: the verdict
// says the ratio in words, with an interval as wide as both arms'
// uncertainty makes it, and the median ratio inside it.
func TestEnergyVerdictIsARatio(t *testing.T) {
	s := recordedH200(t, "h200-run2/20261128T171235Z-quick-openai")
	s.Manifest.Power = withDrift(s, 2.2)
	refs, sessions := ArmComparison(s)
	c, err := Compare(refs, sessions, VerdictMetrics(refs, sessions))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(c.Metrics, "j_per_token") {
		t.Fatalf("metrics %v: energy was measured for every arm", c.Metrics)
	}
	c.RunTests(TestOptions{Resamples: 2000, Seed: 1})
	var verdict string
	for _, l := range c.VerdictLines() {
		if l.Test.Metric.Name == "j_per_token" {
			verdict = l.Text
			ratio, _, differs := c.EnergyRatio(l.Test, false)
			if !differs {
				t.Errorf("6× apart, yet not told apart: %q", ratio)
			}
			var value, lo, hi float64
			if _, err := fmt.Sscanf(ratio, "%f× [%f, %f]", &value, &lo, &hi); err != nil || !(lo < value && value < hi) || math.Abs(value-6.0) > 0.1 {
				t.Errorf("ratio %q", ratio)
			}
		}
	}
	if !strings.HasPrefix(verdict, "prefill8k (llama-8b-long) uses 6.00× [") || !strings.Contains(verdict, "the energy per token of decode (llama-8b): median 12.12 vs 2.02 J/token") {
		t.Errorf("verdict %q", verdict)
	}
}

// Below eight trials there is no interval: the figure stands only where
// every trial lies above idle by more than its uncertainty.
func TestEnergyOfTooFewTrialsForAnInterval(t *testing.T) {
	trial := func(netJ float64) *Record {
		r := &Record{Phase: PhaseTimed, Status: StatusOK, OutputTokens: 10, EnergyJ: netJ, JPerToken: netJ / 10,
			EnergyErrJ: 2, AvgPowerW: 150, EnergyQuality: "counter"}
		r.E2EMs = 1000
		return r
	}
	power := &PowerInfo{BaselineAfter: []DeviceBaseline{{ID: "GPU-0"}}, DriftW: 1} // ±0.1 J/token for 1 s over 10 tokens
	clear := EnergyOf([]*Record{trial(30), trial(32), trial(31)}, power)
	if clear.Idle() || !math.IsNaN(clear.Lo) || clear.Cell() != "3.10" || !strings.Contains(clear.Words(), "too few for an interval; every one lies above zero by more than its uncertainty") {
		t.Errorf("clear: %+v %q", clear, clear.Words())
	}
	near := EnergyOf([]*Record{trial(30), trial(2), trial(31)}, power)
	if !near.Idle() || near.Cell() != "≈ idle" || !strings.HasPrefix(near.Words(), "energy per token not distinguishable from idle: 3 trials, too few for an interval") {
		t.Errorf("near: %+v %q", near, near.Words())
	}
}

// The rule, by simulation: trials whose energy varies (CV 20%), each read
// off by up to a counter step at each end, under an idle baseline that
// drifted by up to the recorded drift over the run. The widened interval
// holds the true median J/token at least 95% of the time, and an arm at
// idle is given a figure (AboveIdle) at most 5% of the time.
func TestEnergyIntervalCoversBySimulation(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 52))
	const sims, n, tokens, seconds, stepJ, driftW = 400, 10, 64, 4.0, 13.0, 2.3
	simulate := func(trueJPerToken float64) (covered, figure bool) {
		offset := rng.Float64() * driftW * seconds // the idle moved by up to the drift; every trial shares it
		var records []*Record
		for range n {
			truth := trueJPerToken * tokens * (1 + 0.2*rng.NormFloat64())
			read := truth + offset + stepJ*(rng.Float64()-0.5) + stepJ*(rng.Float64()-0.5)
			r := &Record{Phase: PhaseTimed, Status: StatusOK, OutputTokens: tokens, EnergyJ: read, JPerToken: read / tokens,
				EnergyErrJ: stepJ, AvgPowerW: 130, EnergyQuality: "counter"}
			r.E2EMs = seconds * 1000
			records = append(records, r)
		}
		e := EnergyOf(records, &PowerInfo{BaselineAfter: []DeviceBaseline{{ID: "GPU-0"}}, DriftW: driftW})
		return e.Lo <= trueJPerToken && trueJPerToken <= e.Hi, e.AboveIdle
	}
	for _, truth := range []float64{0, 0.05, 0.5, 2} {
		covered, figures := 0, 0
		for range sims {
			c, f := simulate(truth)
			if c {
				covered++
			}
			if f {
				figures++
			}
		}
		t.Logf("true %.2f J/token: interval held it %.1f%%, a figure %.1f%%", truth, 100*float64(covered)/sims, 100*float64(figures)/sims)
		if float64(covered)/sims < 0.95 {
			t.Errorf("true %.2f J/token: the interval held it in %d of %d", truth, covered, sims)
		}
		if truth == 0 && float64(figures)/sims > 0.05 {
			t.Errorf("an arm at idle was given a figure in %d of %d", figures, sims)
		}
	}
}

// BenchmarkEnergyOf is an arm's energy figure over 1,000 trials, which the
// dashboard recomputes as each trial arrives.
func BenchmarkEnergyOf(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	var records []*Record
	for range 1000 {
		r := &Record{Phase: PhaseTimed, Status: StatusOK, OutputTokens: 64, EnergyErrJ: 13, AvgPowerW: 140, EnergyQuality: "counter"}
		r.E2EMs, r.EnergyJ = 4000, 40+10*rng.NormFloat64()
		r.JPerToken = r.EnergyJ / 64
		records = append(records, r)
	}
	power := &PowerInfo{BaselineAfter: []DeviceBaseline{{ID: "GPU-0"}}, DriftW: 2}
	for b.Loop() {
		EnergyOf(records, power)
	}
}

// Arms 10% apart in energy per token, each trial read to ±5 J of ~4 J a
// token's worth: the test on the trials finds the difference, but the
// interval the readings' resolution widens holds 1, and the verdict says
// no difference beyond the measurement's uncertainty.
func TestAnEnergyDifferenceWithinTheUncertaintyIsNone(t *testing.T) {
	s := &Session{Manifest: newManifest("A")}
	s.Manifest.Power = &PowerInfo{BaselineAfter: []DeviceBaseline{{ID: "GPU-0"}}, DriftW: 0}
	for i := range 20 {
		for arm, j := range map[string]float64{"greedy": 4, "hot": 4.4} {
			r := record(arm, i+1, PhaseTimed, StatusOK, 1000)
			r.OutputTokens, r.EnergyQuality, r.AvgPowerW, r.EnergyErrJ = 10, "counter", 150, 15
			r.JPerToken = j + 0.01*float64(i%5)
			r.EnergyJ = r.JPerToken * 10
			s.Records = append(s.Records, r)
		}
	}
	c := abCompare(t, s, "j_per_token")
	test := &c.Tests[0]
	if !test.Significant() {
		t.Fatalf("the test on the trials: p %v", test.PAdjusted)
	}
	_, _, differs := c.EnergyRatio(test, false)
	v := c.verdictText(test, []string{"greedy", "hot"})
	if differs || !strings.HasPrefix(v, "hot vs greedy: no difference in energy per token beyond the measurement's uncertainty (hot uses 1.10× [") ||
		!strings.Contains(v, "the test on the trials alone gave p < 0.001)") {
		t.Errorf("%s", v)
	}
}

// The energy ratio's interval, by simulation: two arms 1.5× apart in
// energy per token, their trials varying (CV 20%), each read to a counter
// step at either end, under an idle that drifted by up to the recorded
// drift (the same offset in both arms' trials, which share the run). The
// widened interval holds the true ratio at least 95% of the time.
func TestEnergyRatioIntervalCoversBySimulation(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 52))
	const sims, n, tokens, driftW, stepJ = 200, 15, 64, 2.3, 13.0
	covered := 0
	for range sims {
		s := &Session{Manifest: newManifest("A")}
		s.Manifest.Power = &PowerInfo{BaselineAfter: []DeviceBaseline{{ID: "GPU-0"}}, DriftW: driftW}
		offsetW := rng.Float64() * driftW
		for i := range n {
			for arm, truth := range map[string]float64{"greedy": 1, "hot": 1.5} {
				seconds := 4 * truth // the hungrier arm's trials run longer too
				read := truth*tokens*(1+0.2*rng.NormFloat64()) + offsetW*seconds + stepJ*(rng.Float64()-0.5) + stepJ*(rng.Float64()-0.5)
				r := record(arm, i+1, PhaseTimed, StatusOK, seconds*1000)
				r.OutputTokens, r.EnergyQuality, r.AvgPowerW, r.EnergyErrJ = tokens, "counter", 150, stepJ
				r.EnergyJ, r.JPerToken = read, read/tokens
				s.Records = append(s.Records, r)
			}
		}
		c := abCompare(t, s, "j_per_token")
		ratio, _, _ := c.EnergyRatio(&c.Tests[0], false)
		var value, lo, hi float64
		if _, err := fmt.Sscanf(ratio, "%f× [%f, %f]", &value, &lo, &hi); err == nil && lo <= 1.5 && 1.5 <= hi {
			covered++
		}
	}
	t.Logf("the widened ratio interval held the true 1.5× in %.1f%% of %d runs", 100*float64(covered)/sims, sims)
	if float64(covered)/sims < 0.95 {
		t.Errorf("covered %d of %d", covered, sims)
	}
}
