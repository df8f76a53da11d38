package session

import (
	"fmt"
	"strings"
)

// Precision is what a run under a stop rule reached, for the top of the
// done view and every report: each arm's e2e statistic within the
// target, or, where the cap came first, how close each arm came. Line
// says it all; Short in a line of a terminal; Missed is true when some arm
// did not reach the target. Both are "" without a stop rule, and while
// some arm has no stop recorded (a run cut short says so in its status).
type Precision struct {
	Line, Short string
	Missed      bool
}

// PrecisionOf words what the stop rule reached over the arms' summaries.
func PrecisionOf(stop *StopInfo, trialCap int, arms []string, summary map[string]ArmSummary) Precision {
	if stop == nil || stop.UntilCI <= 0 || len(arms) == 0 {
		return Precision{}
	}
	target := fmt.Sprintf("±%.3g%%", stop.UntilCI*100)
	var reached, short, shortNames []string
	last, reach := 0, "" // the last arm's trials to its target; a missed arm's reach
	for _, arm := range arms {
		s, ok := summary[arm]
		if !ok || s.StoppedBy == "" {
			return Precision{}
		}
		iv := s.StopInterval
		switch {
		case iv == nil:
			short = append(short, arm+" (no interval: "+s.StoppedBy+")")
			shortNames = append(shortNames, arm)
		case iv.Missed:
			reach = fmt.Sprintf("±%.2g%%", iv.Reach()*100)
			short = append(short, fmt.Sprintf("%s%s (%s)", arm, otherStatistic(iv, stop), reach))
			shortNames = append(shortNames, arm)
		default:
			part := arm + otherStatistic(iv, stop)
			if iv.N > 0 {
				part += " after " + FormatCount(iv.N) + " trials"
			}
			reached = append(reached, part)
			last = max(last, iv.N)
		}
	}
	capCount := FormatCount(trialCap)
	if len(short) == 0 {
		p := Precision{Line: fmt.Sprintf("%s e2e within %s (anytime-valid 95%% interval): %s", stop.Statistic, target, strings.Join(reached, ", ")),
			Short: fmt.Sprintf("%s e2e within %s", stop.Statistic, target)}
		if len(arms) > 1 {
			p.Line = "every arm's " + p.Line + "; the arms ran on together until the last one reached it"
			p.Short = "every arm's " + p.Short
		}
		if last > 0 {
			p.Short += fmt.Sprintf(" (the last after %s trials)", FormatCount(last))
		}
		return p
	}
	p := Precision{Missed: true, Short: fmt.Sprintf("%s e2e %s not reached by %s: stopped at the cap of %s trials", stop.Statistic, target, strings.Join(shortNames, ", "), capCount)}
	if len(arms) == 1 {
		what := strings.TrimPrefix(short[0], arms[0]+" ") // "(no interval: …)"
		if iv := summary[arms[0]].StopInterval; iv != nil {
			what = "(" + strings.TrimPrefix(otherStatistic(iv, stop)+" ", " ") + reach + " reached)"
		}
		p.Line = fmt.Sprintf("%s e2e %s not reached: stopped at the cap of %s trials %s", stop.Statistic, target, capCount, what)
		p.Short = fmt.Sprintf("%s e2e %s not reached: stopped at the cap of %s trials", stop.Statistic, target, capCount)
		return p
	}
	p.Line = fmt.Sprintf("%s e2e %s not reached by %s: stopped at the cap of %s trials", stop.Statistic, target, strings.Join(short, ", "), capCount)
	if len(reached) > 0 {
		p.Line += "; reached by " + strings.Join(reached, ", ")
	}
	return p
}

// otherStatistic names the statistic an arm was decided on where it is
// not the rule's: the mean falls back to the median on heavy tails.
func otherStatistic(iv *StopInterval, stop *StopInfo) string {
	if iv.Statistic == stop.Statistic {
		return ""
	}
	return " (on its " + iv.Statistic + ")"
}
