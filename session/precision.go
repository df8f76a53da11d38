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

// PrecisionOf words what the stop rule reached over the arms' summaries,
// naming the statistic that decided: the rule's mean falls back to the
// median where the running CV is above 0.5, and a headline of the mean
// then would claim a precision the means never had.
func PrecisionOf(stop *StopInfo, trialCap int, arms []string, summary map[string]ArmSummary) Precision {
	if stop == nil || stop.UntilCI <= 0 || len(arms) == 0 {
		return Precision{}
	}
	for _, arm := range arms {
		if s, ok := summary[arm]; !ok || s.StoppedBy == "" {
			return Precision{}
		}
	}
	target := fmt.Sprintf("±%.3g%%", stop.UntilCI*100)
	decided := decidingStatistic(arms, summary, stop.Statistic)
	named := "e2e" // each arm's statistic named beside it
	if decided != "" {
		named = decided + " e2e"
	}
	on := func(iv *StopInterval) string { // an arm's statistic, where the arms' differ
		if decided != "" {
			return ""
		}
		return " (on its " + iv.Statistic + ")"
	}
	var reached, short, shortNames []string
	last, reach := 0, "" // the last arm's trials to its target; a missed arm's reach
	for _, arm := range arms {
		s := summary[arm]
		iv := s.StopInterval
		switch {
		case iv == nil:
			short = append(short, arm+" (no interval: "+s.StoppedBy+")")
			shortNames = append(shortNames, arm)
		case iv.Missed:
			reach = fmt.Sprintf("±%.2g%%", iv.Reach()*100)
			short = append(short, fmt.Sprintf("%s%s (%s)", arm, on(iv), reach))
			shortNames = append(shortNames, arm)
		default:
			part := arm + on(iv)
			if iv.N > 0 {
				part += " after " + FormatCount(iv.N) + " trials"
			}
			reached = append(reached, part)
			last = max(last, iv.N)
		}
	}
	fallback := ""
	if decided != stop.Statistic {
		fallback = fmt.Sprintf("; the rule asked for the %s, and the median decided where an arm's running CV was above 0.5, where the mean's interval does not hold", stop.Statistic)
	}
	capCount := FormatCount(trialCap)
	if len(short) == 0 {
		p := Precision{Line: fmt.Sprintf("%s within %s (anytime-valid 95%% interval): %s", named, target, strings.Join(reached, ", ")),
			Short: fmt.Sprintf("%s within %s", named, target)}
		if len(arms) > 1 {
			p.Line = "every arm's " + p.Line + "; the arms ran on together until the last one reached it"
			p.Short = "every arm's " + p.Short
		}
		p.Line += fallback
		if last > 0 {
			p.Short += fmt.Sprintf(" (the last after %s trials)", FormatCount(last))
		}
		return p
	}
	p := Precision{Missed: true, Short: fmt.Sprintf("%s %s not reached by %s: stopped at the cap of %s trials", named, target, strings.Join(shortNames, ", "), capCount)}
	if len(arms) == 1 {
		what := strings.TrimPrefix(short[0], arms[0]+" ") // "(no interval: …)"
		if iv := summary[arms[0]].StopInterval; iv != nil {
			what = "(" + reach + " reached)"
		}
		p.Line = fmt.Sprintf("%s %s not reached: stopped at the cap of %s trials %s%s", named, target, capCount, what, fallback)
		p.Short = fmt.Sprintf("%s %s not reached: stopped at the cap of %s trials", named, target, capCount)
		return p
	}
	p.Line = fmt.Sprintf("%s %s not reached by %s: stopped at the cap of %s trials", named, target, strings.Join(short, ", "), capCount)
	if len(reached) > 0 {
		p.Line += "; reached by " + strings.Join(reached, ", ")
		p.Short += "; the others reached it"
	}
	p.Line += fallback
	return p
}

// decidingStatistic is the statistic every arm's stop was decided on, or
// "" where the arms' differ; the rule's own where no arm has an interval.
func decidingStatistic(arms []string, summary map[string]ArmSummary, rule string) string {
	decided := ""
	for _, arm := range arms {
		iv := summary[arm].StopInterval
		switch {
		case iv == nil:
		case decided == "":
			decided = iv.Statistic
		case decided != iv.Statistic:
			return ""
		}
	}
	if decided == "" {
		return rule
	}
	return decided
}
