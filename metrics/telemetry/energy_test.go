package telemetry

import (
	"math"
	"testing"
	"time"
)

const ms = time.Millisecond

// steady scripts a device drawing watts, read every 50 ms for span, whose
// counter (when counter is true) updates every 100 ms like a real GPU's.
func steady(watts float64, span time.Duration, counter bool) []Sample {
	var out []Sample
	for at := time.Duration(0); at <= span; at += 50 * ms {
		s := NewSample(at, 0)
		s.PowerW = watts
		if counter {
			updated := at / (100 * ms) * (100 * ms)
			s.EnergyMJ = 5e6 + watts*updated.Seconds()*1000
		}
		out = append(out, s)
	}
	return out
}

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol*math.Abs(want) }

func TestCounterEnergyOfASteadyLoad(t *testing.T) {
	e := TrialEnergy(steady(100, 2*time.Second, true), 200*ms, 1200*ms, Baseline{MeanW: 40, StdW: 1}, true)
	if e.Quality != QualityCounter || !near(e.GrossJ, 100, 0.1) || !near(e.NetJ, 60, 0.15) || !near(e.AvgPowerW, 100, 0.1) {
		t.Errorf("%+v, want ~100 J gross, ~60 J net, counter", e)
	}
}

func TestCounterNeedsTwoUpdatesInTheWindow(t *testing.T) {
	samples := steady(100, 2*time.Second, true)
	// 210..290 ms holds no counter update; 210..320 ms holds one (at 300).
	for _, window := range [][2]time.Duration{{210 * ms, 290 * ms}, {210 * ms, 320 * ms}} {
		if e := TrialEnergy(samples, window[0], window[1], Baseline{MeanW: 40}, true); e.Quality != QualityNoData || !math.IsNaN(e.NetJ) {
			t.Errorf("window %v: %+v, want no_data", window, e)
		}
	}
	// 210..420 ms holds two (300, 400).
	if e := TrialEnergy(samples, 210*ms, 420*ms, Baseline{MeanW: 40}, true); e.Quality != QualityCounter {
		t.Errorf("two updates: %+v, want counter", e)
	}
}

func TestSampledNeedsTwoSamplesInTheWindow(t *testing.T) {
	samples := steady(80, time.Second, false)
	// 120..160 ms holds one sample (150); 120..210 ms two (150, 200).
	if e := TrialEnergy(samples, 120*ms, 160*ms, Baseline{MeanW: 30}, false); e.Quality != QualityNoData {
		t.Errorf("one sample: %+v, want no_data", e)
	}
	e := TrialEnergy(samples, 120*ms, 210*ms, Baseline{MeanW: 30}, false)
	if e.Quality != QualitySampled || !near(e.GrossJ, 80*0.09, 1e-9) || !near(e.NetJ, 50*0.09, 1e-9) {
		t.Errorf("two samples: %+v, want 7.2 J gross, 4.5 J net", e)
	}
}

func TestBaselineSubtraction(t *testing.T) {
	idle := IdleBaseline(steady(35, time.Second, false))
	if idle.MeanW != 35 || idle.StdW != 0 || idle.Samples != 21 {
		t.Fatalf("idle %+v", idle)
	}
	e := TrialEnergy(steady(135, 3*time.Second, false), 500*ms, 2500*ms, idle, false)
	if !near(e.GrossJ, 270, 1e-9) || !near(e.NetJ, 200, 1e-9) || !near(e.AvgPowerW, 135, 1e-9) {
		t.Errorf("%+v, want 270 J gross, 200 J net", e)
	}
	if noIdle := TrialEnergy(steady(135, 3*time.Second, false), 500*ms, 2500*ms, Baseline{MeanW: math.NaN()}, false); noIdle.NetJ != noIdle.GrossJ {
		t.Errorf("without a baseline net should equal gross: %+v", noIdle)
	}
}

func TestCounterThatGoesBackwardsIsRejected(t *testing.T) {
	samples := steady(100, 2*time.Second, true)
	for i := range samples {
		if samples[i].At >= 700*ms {
			samples[i].EnergyMJ -= 4e6 // the driver reloaded: the counter restarts lower
		}
	}
	e := TrialEnergy(samples, 200*ms, 1200*ms, Baseline{MeanW: 40}, true)
	if e.Quality != QualitySampled || e.Rejected != "went backwards" || !near(e.GrossJ, 100, 1e-9) {
		t.Errorf("%+v, want the counter rejected and 100 J from power samples", e)
	}
}

func TestStalledCounterUnderLoadIsRejected(t *testing.T) {
	samples := steady(250, 2*time.Second, true)
	for i := range samples {
		samples[i].EnergyMJ = 5e6 // stuck
	}
	e := TrialEnergy(samples, 200*ms, 1200*ms, Baseline{MeanW: 40, StdW: 2}, true)
	if e.Quality != QualitySampled || e.Rejected != "did not move" || !near(e.GrossJ, 250, 1e-9) {
		t.Errorf("%+v, want the stalled counter rejected", e)
	}
	// At idle, a counter that does not move is simply too coarse.
	idle := steady(40, 2*time.Second, true)
	for i := range idle {
		idle[i].EnergyMJ = 5e6
	}
	if e := TrialEnergy(idle, 200*ms, 1200*ms, Baseline{MeanW: 40, StdW: 2}, true); e.Rejected != "" {
		t.Errorf("idle: %+v, want no rejection", e)
	}
}

func TestCounterOnlyDeviceBaselineFromRates(t *testing.T) {
	samples := steady(20, time.Second, true)
	for i := range samples {
		samples[i].PowerW = math.NaN() // RAPL: energy only
	}
	if b := IdleBaseline(samples); !near(b.MeanW, 20, 0.01) {
		t.Errorf("baseline from counter rates %+v, want 20 W", b)
	}
}

// A trial's resolution is what its readings can be off by: one counter
// update's energy (the counter holds its value between updates, and an
// end interpolated inside a held stretch is off by up to a step), also at
// a run's last trial, after which no update came; for sampled energy, a
// sample interval's energy.
func TestTheResolutionIsOneCounterStepOrOneSampleInterval(t *testing.T) {
	samples := steady(150, 2*time.Second, true)
	for _, window := range [][2]time.Duration{{230 * ms, 1470 * ms}, {1600 * ms, 2 * time.Second}} {
		e := TrialEnergy(samples, window[0], window[1], Baseline{MeanW: 40}, true)
		if e.Quality != QualityCounter || !near(e.ErrJ, 15, 1e-9) { // 150 W × 100 ms
			t.Errorf("window %v: resolution %.2f J, want one 15 J step", window, e.ErrJ)
		}
	}
	e := TrialEnergy(steady(80, time.Second, false), 120*ms, 510*ms, Baseline{MeanW: 30}, false)
	if e.Quality != QualitySampled || !near(e.ErrJ, 4, 1e-9) { // 80 W × 50 ms
		t.Errorf("sampled: resolution %.2f J, want 4 J", e.ErrJ)
	}
}
