package session

import (
	"strings"
	"testing"
)

func TestPrecisionSaysWhatWasReached(t *testing.T) {
	stop := &StopInfo{UntilCI: 0.02, Statistic: "mean", MinTrials: 30}
	reached := func(n int, statistic string) ArmSummary {
		return ArmSummary{StoppedBy: "…", StopInterval: &StopInterval{Statistic: statistic, Estimate: 100, Lo: 98.5, Hi: 101.5, N: n}}
	}
	missed := ArmSummary{StoppedBy: "…", StopInterval: &StopInterval{Statistic: "mean", Estimate: 100, Lo: 96.9, Hi: 103.1, N: 1500, Missed: true}}
	for _, c := range []struct {
		name        string
		arms        []string
		summary     map[string]ArmSummary
		line, short string
		missed      bool
	}{
		{"every arm on the mean", []string{"a", "b"}, map[string]ArmSummary{"a": reached(262, "mean"), "b": reached(1137, "mean")},
			"every arm's mean e2e within ±2% (anytime-valid 95% interval): a after 262 trials, b after 1,137 trials; the arms ran on together until the last one reached it",
			"every arm's mean e2e within ±2% (the last after 1,137 trials)", false},
		// The mean asked for, the median decided: the headline names the
		// median (it named the mean, known to ±5–7%).
		{"every arm on the median", []string{"a", "b"}, map[string]ArmSummary{"a": reached(262, "median"), "b": reached(688, "median")},
			"every arm's median e2e within ±2% (anytime-valid 95% interval): a after 262 trials, b after 688 trials; the arms ran on together until the last one reached it; the rule asked for the mean, and the median decided where an arm's running CV was above 0.5, where the mean's interval does not hold",
			"every arm's median e2e within ±2% (the last after 688 trials)", false},
		{"each on its own", []string{"a", "b"}, map[string]ArmSummary{"a": reached(262, "mean"), "b": reached(1137, "median")},
			"every arm's e2e within ±2% (anytime-valid 95% interval): a (on its mean) after 262 trials, b (on its median) after 1,137 trials; the arms ran on together until the last one reached it; the rule asked for the mean, and the median decided where an arm's running CV was above 0.5, where the mean's interval does not hold",
			"every arm's e2e within ±2% (the last after 1,137 trials)", false},
		{"one arm short", []string{"a", "b"}, map[string]ArmSummary{"a": reached(262, "mean"), "b": missed},
			"mean e2e ±2% not reached by b (±3.1%): stopped at the cap of 1,500 trials; reached by a after 262 trials",
			"mean e2e ±2% not reached by b: stopped at the cap of 1,500 trials; the others reached it", true},
		{"one arm short on its mean, the others on their medians", []string{"a", "b"}, map[string]ArmSummary{"a": reached(262, "median"), "b": missed},
			"e2e ±2% not reached by b (on its mean) (±3.1%): stopped at the cap of 1,500 trials; reached by a (on its median) after 262 trials; the rule asked for the mean, and the median decided where an arm's running CV was above 0.5, where the mean's interval does not hold",
			"e2e ±2% not reached by b: stopped at the cap of 1,500 trials; the others reached it", true},
		{"a single arm", []string{"a"}, map[string]ArmSummary{"a": missed},
			"mean e2e ±2% not reached: stopped at the cap of 1,500 trials (±3.1% reached)",
			"mean e2e ±2% not reached: stopped at the cap of 1,500 trials", true},
		{"a single arm without an interval", []string{"a"}, map[string]ArmSummary{"a": {StoppedBy: "reached the trial cap of 1500"}},
			"mean e2e ±2% not reached: stopped at the cap of 1,500 trials (no interval: reached the trial cap of 1500)",
			"mean e2e ±2% not reached: stopped at the cap of 1,500 trials", true},
		{"a run cut short", []string{"a", "b"}, map[string]ArmSummary{"a": reached(262, "mean")}, "", "", false},
	} {
		p := PrecisionOf(stop, 1500, c.arms, c.summary)
		if p.Line != c.line || p.Short != c.short || p.Missed != c.missed {
			t.Errorf("%s: %+v\nwant line %q\nshort %q", c.name, p, c.line, c.short)
		}
	}
	if p := PrecisionOf(nil, 1500, []string{"a"}, map[string]ArmSummary{"a": missed}); p != (Precision{}) || strings.Contains(p.Line, "reached") {
		t.Errorf("no stop rule: %+v", p)
	}
}
