package runner

import (
	"fmt"
	"math"

	"github.com/tokentop/tokentop/metrics"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/session"
)

// Decision is a stop rule's answer after a timed trial.
type Decision struct {
	// Stop: the arm has no trials left to run (its cap, its duration, its
	// server lost).
	Stop bool
	// Reached: its statistic is within the rule's target. The arm runs on
	// until every arm beside it has reached the target too, so that no
	// arm of an A/B runs alone, off the interleaving.
	Reached bool
	Reason  string
	// Short is the reason in a few words, for a status line.
	Short string
	// Statistic, Estimate and Interval are the confidence sequence's
	// where the arm reached the target, or at the cap where it did not;
	// Interval is NaN without a sequence (a plain cap, fewer counted
	// trials than the rule's minimum).
	Statistic string
	Estimate  float64
	Interval  metrics.CI
	// N is the arm's counted trials at the decision.
	N int
}

// StopRule decides, after each timed trial of an arm, whether that arm is
// done.
type StopRule interface {
	// Decide sees the arm's count of timed trials (degraded included) and
	// its series of counted e2e values.
	Decide(arm string, timed int, e2e *metrics.Series) Decision
}

// TrialCap stops an arm after N timed trials.
type TrialCap struct{ N int }

// Decide implements StopRule. The cap counts trials run; the reason
// says how many of them can be used, when degraded ones took a share.
func (c TrialCap) Decide(_ string, timed int, e2e *metrics.Series) Decision {
	if timed < c.N {
		return Decision{}
	}
	return Decision{Stop: true, Reason: fmt.Sprintf("reached the trial cap of %d", c.N), Short: fmt.Sprintf("trial cap %d", c.N) + usableSoFar(timed, e2e),
		Interval: metrics.CI{Lo: math.NaN(), Hi: math.NaN()}}
}

// usableSoFar says, for the live view at the cap, how many of an arm's
// trials can be used so far, when degraded ones took a share; "" when all
// can. A load level's requests still in flight at the cap end after it,
// so the final count is the summary's (usableWords).
func usableSoFar(timed int, e2e *metrics.Series) string {
	if usable := len(e2e.Values()); usable != timed {
		return fmt.Sprintf(", %d usable", usable)
	}
	return ""
}

// usableWords say, after the run, how many of an arm's timed trials can
// be used, where degraded ones took a share; "" where all can.
func usableWords(s session.ArmSummary) string {
	if s.Degraded == 0 {
		return ""
	}
	return fmt.Sprintf(": %d of its %d timed trials usable, %d degraded (see the error column)", s.TimedOK, s.TimedOK+s.Degraded, s.Degraded)
}

// Unbounded never stops an arm: a load run with a duration ends each arm
// itself, when its steady windows add up to the duration.
type Unbounded struct{}

// Decide implements StopRule.
func (Unbounded) Decide(string, int, *metrics.Series) Decision { return Decision{} }

// MaxCVForMean is the running CV above which the mean's asymptotic
// sequence is not trusted: on lognormal latencies watched from 30 to
// 3,000 trials it missed in 5.3% of 4,000 runs at CV 0.4 but 10.5% at
// CV 1 and 22.9% at CV 2 (TestMeanRuleOnHeavyTails). Above it the rule stops on the median's
// sequence, valid for any continuous distribution, and says so.
const MaxCVForMean = 0.5

// UntilCI stops an arm once both ends of the 95% confidence sequence of
// its e2e median (or mean) are within ±Target of the estimate, after at
// least MinTrials counted trials, and at the cap in any case. A
// confidence sequence, unlike a fixed-n interval, stays valid although
// the rule looks after every trial (see metrics.ConfidenceSequence).
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

// Decide implements StopRule: Reached once both ends of the sequence are
// within the target; at the cap, Stop, saying how far the sequence got.
func (u *UntilCI) Decide(arm string, timed int, e2e *metrics.Series) Decision {
	sorted := u.sorted(arm, e2e)
	atCap := u.Cap.Decide(arm, timed, e2e)
	n := len(sorted)
	if n < u.Config.MinTrials {
		return atCap
	}
	statistic, fallback := u.Config.Statistic, ""
	var estimate float64
	var iv metrics.CI
	cv := e2e.CV()
	if statistic == "mean" && !(cv > MaxCVForMean) {
		estimate = e2e.Mean()
		half := u.seq.MeanHalfWidth(n, e2e.Std())
		iv = metrics.CI{Lo: estimate - half, Hi: estimate + half}
	} else {
		if statistic == "mean" {
			statistic = "median"
			fallback = fmt.Sprintf(" (the running CV %.2f is above %g, where the mean's interval does not hold, so the median's decided)", cv, MaxCVForMean)
		}
		estimate, iv = metrics.PercentileSorted(sorted, 0.5), u.seq.QuantileInterval(sorted, 0.5)
	}
	reach := max(estimate-iv.Lo, iv.Hi-estimate) / math.Abs(estimate)
	d := Decision{Stop: atCap.Stop, Reached: reach <= u.Config.UntilCI, Statistic: statistic, Estimate: estimate, Interval: iv, N: n}
	switch {
	case d.Reached:
		d.Short = fmt.Sprintf("%s within ±%.2g%% after %d trials", statistic, reach*100, n)
		d.Reason = fmt.Sprintf("%s e2e %s, 95%% sequence [%s, %s]: both ends within ±%.2g%% (target ±%.2g%%) after %d trials%s",
			statistic, inMs(estimate), inMs(iv.Lo), inMs(iv.Hi), reach*100, u.Config.UntilCI*100, n, fallback)
	case d.Stop:
		d.Short = fmt.Sprintf("cap %d, ±%.2g%% of ±%.2g%%", u.Cap.N, reach*100, u.Config.UntilCI*100) + usableSoFar(timed, e2e)
		d.Reason = fmt.Sprintf("%s e2e ±%.2g%% not reached: stopped at the trial cap of %d with its 95%% sequence [%s, %s], ±%.2g%% of %s%s",
			statistic, u.Config.UntilCI*100, u.Cap.N, inMs(iv.Lo), inMs(iv.Hi), reach*100, inMs(estimate), fallback)
	}
	return d
}

func inMs(v float64) string { return session.FormatValue(v) + " ms" }

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
