package session

import (
	"fmt"
	"strings"
)

// PrecisionLine says what a run under a stop rule reached, for the top of
// the done view and every report: each arm's e2e statistic within the
// target, or, where the cap came first, how close each arm came. missed
// is true when some arm did not reach the target. It is "" without a stop
// rule, and while some arm has no stop recorded (a run cut short says so
// in its status).
func PrecisionLine(stop *StopInfo, trialCap int, arms []string, summary map[string]ArmSummary) (line string, missed bool) {
	if stop == nil || stop.UntilCI <= 0 || len(arms) == 0 {
		return "", false
	}
	target := fmt.Sprintf("±%.3g%%", stop.UntilCI*100)
	var reached, short []string
	for _, arm := range arms {
		s, ok := summary[arm]
		if !ok || s.StoppedBy == "" {
			return "", false
		}
		iv := s.StopInterval
		switch {
		case iv == nil:
			short = append(short, arm+" (no interval: "+s.StoppedBy+")")
		case iv.Missed:
			short = append(short, fmt.Sprintf("%s%s (±%.2g%%)", arm, otherStatistic(iv, stop), iv.Reach()*100))
		default:
			part := arm + otherStatistic(iv, stop)
			if iv.N > 0 {
				part += " after " + FormatCount(iv.N) + " trials"
			}
			reached = append(reached, part)
		}
	}
	if len(short) == 0 {
		line = fmt.Sprintf("%s e2e within %s (anytime-valid 95%% interval): %s", stop.Statistic, target, strings.Join(reached, ", "))
		if len(arms) > 1 {
			line = "every arm's " + line + "; the arms ran on together until the last one reached it"
		}
		return line, false
	}
	if len(arms) == 1 {
		return fmt.Sprintf("%s e2e %s not reached: stopped at the cap of %s trials (%s reached)",
			stop.Statistic, target, FormatCount(trialCap), strings.TrimPrefix(short[0], arms[0]+" ")), true
	}
	line = fmt.Sprintf("%s e2e %s not reached by %s: stopped at the cap of %s trials", stop.Statistic, target, strings.Join(short, ", "), FormatCount(trialCap))
	if len(reached) > 0 {
		line += "; reached by " + strings.Join(reached, ", ")
	}
	return line, true
}

// otherStatistic names the statistic an arm was decided on where it is
// not the rule's: the mean falls back to the median on heavy tails.
func otherStatistic(iv *StopInterval, stop *StopInfo) string {
	if iv.Statistic == stop.Statistic {
		return ""
	}
	return " (on its " + iv.Statistic + ")"
}
