package telemetry

import (
	"math"
	"slices"
	"time"
)

// Quality says how a trial's energy was measured (DESIGN.md).
type Quality string

// Energy qualities.
const (
	QualityCounter     Quality = "counter"     // from the device's cumulative energy counter
	QualitySampled     Quality = "sampled"     // integrated from ≥ 2 power samples inside the window
	QualityNoData      Quality = "no_data"     // a power source exists, but too little fell in the window
	QualityUnavailable Quality = "unavailable" // no power source on this machine
)

// Baseline is one device's idle power before the run.
type Baseline struct {
	MeanW   float64 `toml:"mean_w"`
	StdW    float64 `toml:"std_w"`
	Samples int     `toml:"samples"`
}

// IdleBaseline summarises a device's power while nothing ran. Without
// power readings, power comes from counter deltas between samples.
func IdleBaseline(samples []Sample) Baseline {
	watts := powerSeries(samples)
	b := Baseline{MeanW: math.NaN(), StdW: math.NaN(), Samples: len(watts)}
	if len(watts) == 0 {
		return b
	}
	var sum float64
	for _, w := range watts {
		sum += w
	}
	b.MeanW = sum / float64(len(watts))
	if len(watts) > 1 {
		var ss float64
		for _, w := range watts {
			ss += (w - b.MeanW) * (w - b.MeanW)
		}
		b.StdW = math.Sqrt(ss / float64(len(watts)-1))
	}
	return b
}

// powerSeries gives the device's power at each sample: the reading where
// there is one, else the counter's rate since the previous sample.
func powerSeries(samples []Sample) []float64 {
	var watts []float64
	for i, s := range samples {
		switch {
		case !math.IsNaN(s.PowerW):
			watts = append(watts, s.PowerW)
		case i > 0 && !math.IsNaN(s.EnergyMJ) && !math.IsNaN(samples[i-1].EnergyMJ) && s.At > samples[i-1].At:
			if d := s.EnergyMJ - samples[i-1].EnergyMJ; d >= 0 {
				watts = append(watts, d/1000/(s.At-samples[i-1].At).Seconds())
			}
		}
	}
	return watts
}

// Energy is one device's share of one trial.
type Energy struct {
	GrossJ    float64 // everything the device drew in the window
	NetJ      float64 // above the idle baseline
	AvgPowerW float64 // GrossJ over the window
	// ErrJ bounds how far GrossJ may be off for the readings' own
	// resolution: the counter's step at each end of the window (it
	// holds its value between updates, every ~100 ms on NVIDIA GPUs), or
	// a sample interval's energy where power samples were integrated.
	// The idle baseline's drift over the run adds to it (the session
	// knows that once the run ends).
	ErrJ    float64
	Quality Quality
	// Rejected says why the counter was not used when it existed
	// ("went backwards", "did not move"); the power samples then decide.
	Rejected string
}

// counterStall is the shortest loaded window over which a counter that
// never moved is called stalled: a few of its ~100 ms update periods.
const counterStall = 300 * time.Millisecond

// TrialEnergy attributes a device's energy to the window [start, end]
// from its samples (in time order), by the rules of DESIGN.md:
//   - with an energy counter: the counter's rise over the window,
//     interpolated at both ends between the samples around them, but only
//     when the counter moved at least twice inside the window (it updates
//     about every 100 ms, so fewer updates cannot resolve the window);
//   - a counter that goes backwards (a driver reload) or does not move
//     over a loaded window is rejected, not averaged in, and power
//     samples decide instead;
//   - otherwise power samples, integrated over the window, when at least
//     two fall inside it;
//   - otherwise no data.
//
// The idle baseline's power times the window's length is subtracted for
// NetJ.
func TrialEnergy(samples []Sample, start, end time.Duration, idle Baseline, hasCounter bool) Energy {
	e := Energy{GrossJ: math.NaN(), NetJ: math.NaN(), AvgPowerW: math.NaN(), ErrJ: math.NaN(), Quality: QualityNoData}
	window := end - start
	if window <= 0 {
		return e
	}
	if hasCounter {
		gross, rejected, ok := counterEnergy(samples, start, end, idle)
		if ok {
			e.GrossJ, e.Quality = gross, QualityCounter
			e.ErrJ = (counterStep(samples, start) + counterStep(samples, end)) / 2 / 1000
		}
		e.Rejected = rejected
		if !ok && rejected == "" {
			return e.finish(window, idle)
		}
	}
	if e.Quality != QualityCounter {
		if gross, gap, ok := sampledEnergy(samples, start, end); ok {
			e.GrossJ, e.Quality = gross, QualitySampled
			e.ErrJ = gross / window.Seconds() * gap.Seconds()
		}
	}
	return e.finish(window, idle)
}

func (e Energy) finish(window time.Duration, idle Baseline) Energy {
	if math.IsNaN(e.GrossJ) {
		return e
	}
	e.AvgPowerW = e.GrossJ / window.Seconds()
	e.NetJ = e.GrossJ
	if !math.IsNaN(idle.MeanW) {
		e.NetJ -= idle.MeanW * window.Seconds()
	}
	return e
}

// counterEnergy returns the counter's rise over the window, or why the
// counter was rejected, or neither when it cannot resolve the window.
func counterEnergy(samples []Sample, start, end time.Duration, idle Baseline) (joules float64, rejected string, ok bool) {
	var before, after *Sample // the last counter reading at or before start, the first at or after end
	var updates int
	var last = math.NaN()
	var inside []Sample
	for i := range samples {
		s := &samples[i]
		if math.IsNaN(s.EnergyMJ) {
			continue
		}
		if !math.IsNaN(last) && s.EnergyMJ < last && s.At >= start-counterStall && s.At <= end+counterStall {
			return 0, "went backwards", false
		}
		if s.At <= start {
			before = s
		}
		if s.At > start && s.At < end {
			inside = append(inside, *s)
			if !math.IsNaN(last) && s.EnergyMJ != last {
				updates++
			}
		}
		if s.At >= end && after == nil {
			after = s
			if !math.IsNaN(last) && s.EnergyMJ != last {
				updates++
			}
		}
		last = s.EnergyMJ
	}
	if updates == 0 && end-start >= counterStall && loaded(inside, idle) {
		return 0, "did not move", false
	}
	if before == nil || after == nil || updates < 2 {
		return 0, "", false
	}
	return (interpolate(samples, end) - interpolate(samples, start)) / 1000, "", true
}

// loaded reports whether the power samples inside a window sit clearly
// above idle (three standard deviations).
func loaded(inside []Sample, idle Baseline) bool {
	watts := powerSeries(inside)
	if len(watts) == 0 || math.IsNaN(idle.MeanW) {
		return false
	}
	var sum float64
	for _, w := range watts {
		sum += w
	}
	margin := 3 * idle.StdW
	if math.IsNaN(margin) {
		margin = 0.1 * idle.MeanW
	}
	return sum/float64(len(watts)) > idle.MeanW+margin
}

// interpolate reads the counter at t, linearly between the readings
// around it (the counter holds its value between updates, so this is an
// estimate within one update's energy).
func interpolate(samples []Sample, t time.Duration) float64 {
	var prev *Sample
	for i := range samples {
		s := &samples[i]
		if math.IsNaN(s.EnergyMJ) {
			continue
		}
		if s.At >= t {
			if prev == nil || s.At == prev.At {
				return s.EnergyMJ
			}
			f := float64(t-prev.At) / float64(s.At-prev.At)
			return prev.EnergyMJ + f*(s.EnergyMJ-prev.EnergyMJ)
		}
		prev = s
	}
	if prev == nil {
		return math.NaN()
	}
	return prev.EnergyMJ
}

// counterStep is the energy of the counter's update that t falls in, in
// mJ: from the last reading at or before t to the first later one that
// differs from it. The counter holds its value between updates, so an
// interpolated reading at t can be off by up to that much. Where no later
// update came (the last trial of a run), the update before t stands in
// for it; 0 where the counter never moved.
func counterStep(samples []Sample, t time.Duration) float64 {
	held, before := math.NaN(), 0.0
	for _, s := range samples {
		if math.IsNaN(s.EnergyMJ) {
			continue
		}
		if !math.IsNaN(held) && s.EnergyMJ != held {
			if s.At > t {
				return math.Abs(s.EnergyMJ - held)
			}
			before = math.Abs(s.EnergyMJ - held)
		}
		held = s.EnergyMJ
	}
	return before
}

// sampledEnergy integrates power readings over the window when at least
// two fall inside it: the trapezoid rule between them, and each end
// held at its nearest reading out to the window's edges. gap is the
// largest interval between readings, the resolution it has.
func sampledEnergy(samples []Sample, start, end time.Duration) (joules float64, gap time.Duration, ok bool) {
	var inside []Sample
	for _, s := range samples {
		if s.At >= start && s.At <= end && !math.IsNaN(s.PowerW) {
			inside = append(inside, s)
		}
	}
	if len(inside) < 2 {
		return 0, 0, false
	}
	for i := 1; i < len(inside); i++ {
		gap = max(gap, inside[i].At-inside[i-1].At)
	}
	joules = inside[0].PowerW * (inside[0].At - start).Seconds()
	for i := 1; i < len(inside); i++ {
		joules += (inside[i].PowerW + inside[i-1].PowerW) / 2 * (inside[i].At - inside[i-1].At).Seconds()
	}
	joules += inside[len(inside)-1].PowerW * (end - inside[len(inside)-1].At).Seconds()
	return joules, gap, true
}

// UpdateInterval is how often a device's readings change, measured: the
// median time between changes of its energy counter (of its power
// reading where it has none). The counter of an NVIDIA GPU moves every
// ~100 ms; a DCGM exporter's readings move at its own collection interval
// (30 s by default), however often it is scraped. 0 where fewer than
// three changes were seen.
func UpdateInterval(samples []Sample, counter bool) time.Duration {
	reading := func(s Sample) float64 {
		if counter {
			return s.EnergyMJ
		}
		return s.PowerW
	}
	var changes []time.Duration
	held := math.NaN()
	for _, s := range samples {
		v := reading(s)
		if math.IsNaN(v) {
			continue
		}
		if !math.IsNaN(held) && v != held {
			changes = append(changes, s.At)
		}
		held = v
	}
	if len(changes) < 3 {
		return 0
	}
	gaps := make([]time.Duration, len(changes)-1)
	for i := range gaps {
		gaps[i] = changes[i+1] - changes[i]
	}
	slices.Sort(gaps)
	return gaps[len(gaps)/2]
}
