package runner

import (
	"fmt"
	"math"

	"github.com/tokentop/tokentop/metrics"
	"github.com/tokentop/tokentop/profiles"
)

// StopRule decides, after each timed trial of an arm, whether that arm is
// done.
type StopRule interface {
	// Stop sees the arm's count of timed trials (degraded included) and
	// its series of counted e2e values; it returns true and a reason to
	// stop the arm.
	Stop(arm string, timed int, e2e *metrics.Series) (bool, string)
}

// TrialCap stops an arm after N timed trials.
type TrialCap struct{ N int }

// Stop implements StopRule.
func (c TrialCap) Stop(_ string, timed int, _ *metrics.Series) (bool, string) {
	if timed >= c.N {
		return true, fmt.Sprintf("reached the trial cap of %d", c.N)
	}
	return false, ""
}

// UntilCI stops an arm once the 95% confidence sequence of its e2e median
// (or mean) is within ±Target of the estimate, after at least MinTrials
// counted trials, and at the cap in any case. A confidence sequence,
// unlike a fixed-n interval, stays valid although the rule looks after
// every trial (see metrics.ConfidenceSequence).
type UntilCI struct {
	Config profiles.Stop // effective: defaults filled
	Cap    TrialCap
	seq    metrics.ConfidenceSequence
	byArm  map[string]*metrics.Distribution // each arm's values in order, for the median
}

// NewUntilCI builds the rule for an effective stop configuration and a
// cap. The sequence is tuned to be tightest halfway (geometrically)
// between the minimum and the cap, where a stop is likely.
func NewUntilCI(stop profiles.Stop, trialCap int) *UntilCI {
	tuneAt := int(math.Sqrt(float64(stop.MinTrials) * float64(trialCap)))
	return &UntilCI{Config: stop, Cap: TrialCap{trialCap}, seq: metrics.NewConfidenceSequence(0.05, tuneAt),
		byArm: map[string]*metrics.Distribution{}}
}

// Stop implements StopRule.
func (u *UntilCI) Stop(arm string, timed int, e2e *metrics.Series) (bool, string) {
	if stop, why := u.Cap.Stop(arm, timed, e2e); stop {
		return stop, why
	}
	n := len(e2e.Values())
	if n < u.Config.MinTrials {
		return false, ""
	}
	var halfWidth, estimate float64
	if u.Config.Statistic == "mean" {
		halfWidth, estimate = u.seq.MeanHalfWidth(n, e2e.Std()), e2e.Mean()
	} else {
		halfWidth, estimate = u.medianHalfWidth(u.sorted(arm, e2e))
	}
	if rel := halfWidth / math.Abs(estimate); rel <= u.Config.UntilCI {
		return true, fmt.Sprintf("%s e2e known within ±%.2g%% (target ±%.2g%%) after %d trials", u.Config.Statistic, rel*100, u.Config.UntilCI*100, n)
	}
	return false, ""
}

// sorted keeps the arm's values in order as they arrive, for the median's
// order statistics, without sorting them again each trial.
func (u *UntilCI) sorted(arm string, e2e *metrics.Series) []float64 {
	d := u.byArm[arm]
	if d == nil {
		d = &metrics.Distribution{}
		u.byArm[arm] = d
	}
	for _, v := range e2e.Values()[d.N():] { // the values since the last call
		d.Add(v)
	}
	return d.Sorted()
}

// medianHalfWidth is the confidence sequence's half-width around the
// median of ascending values.
func (u *UntilCI) medianHalfWidth(sorted []float64) (halfWidth, median float64) {
	iv := u.seq.QuantileInterval(sorted, 0.5)
	return (iv.Hi - iv.Lo) / 2, metrics.PercentileSorted(sorted, 0.5)
}
