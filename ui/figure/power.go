package figure

import (
	"math"
	"time"
)

// PowerTrace is one device's power over a run, on the sampler's clock.
// A device without a power reading (CPU packages) gets its power from its
// energy counter's rise between samples. The dashboard folds samples in
// live; the report folds the power CSV's rows.
type PowerTrace struct {
	At     []time.Duration
	Watts  []float64
	lastMJ float64
	lastAt time.Duration
}

// NewPowerTrace is an empty trace.
func NewPowerTrace() *PowerTrace { return &PowerTrace{lastMJ: math.NaN()} }

// Add folds in one sample: its power, or else the energy counter's rise
// since the last sample that had one; NaN marks a missing reading.
func (t *PowerTrace) Add(at time.Duration, powerW, energyMJ float64) {
	w := powerW
	if math.IsNaN(w) && !math.IsNaN(energyMJ) && !math.IsNaN(t.lastMJ) && at > t.lastAt {
		w = (energyMJ - t.lastMJ) / 1000 / (at - t.lastAt).Seconds()
	}
	if !math.IsNaN(energyMJ) {
		t.lastMJ, t.lastAt = energyMJ, at
	}
	if !math.IsNaN(w) {
		t.At, t.Watts = append(t.At, at), append(t.Watts, w)
	}
}
