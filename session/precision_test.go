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
		{"every arm", []string{"a", "b"}, map[string]ArmSummary{"a": reached(262, "mean"), "b": reached(1137, "median")},
			"every arm's mean e2e within ±2% (anytime-valid 95% interval): a after 262 trials, b (on its median) after 1,137 trials; the arms ran on together until the last one reached it",
			"every arm's mean e2e within ±2% (the last after 1,137 trials)", false},
		{"one arm short", []string{"a", "b"}, map[string]ArmSummary{"a": reached(262, "mean"), "b": missed},
			"mean e2e ±2% not reached by b (±3.1%): stopped at the cap of 1,500 trials; reached by a after 262 trials",
			"mean e2e ±2% not reached by b: stopped at the cap of 1,500 trials", true},
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
