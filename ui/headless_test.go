package ui

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/tokentop/tokentop/runner"
	"github.com/tokentop/tokentop/session"
)

func TestProgressLineCountsWithinThePhaseAndShowsErrors(t *testing.T) {
	r := session.Record{Arm: "greedy", Trial: 4, Phase: session.PhaseTimed, Status: session.StatusError,
		Error: "HTTP 500: boom", OutputTokens: -1}
	r.TTFTMs, r.E2EMs, r.OutputTPS = math.NaN(), 12.34, math.NaN()
	got := ProgressLine(r, 3, 10)
	for _, want := range []string{"greedy", "timed", "1/10", "ttft         —", "e2e   12.3 ms", "error: HTTP 500: boom"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	r.Phase, r.Trial = session.PhaseWarmup, 2
	if got := ProgressLine(r, 3, 10); !strings.Contains(got, "2/3") {
		t.Errorf("warmup line %q", got)
	}
}

func TestSummaryTableNotesTokenCountMismatches(t *testing.T) {
	var buf bytes.Buffer
	WriteSummary(&buf, []string{"b", "a"}, map[string]session.ArmSummary{
		"b": {TimedOK: 3, ConvergedAt: 2, ConvergeTolerance: 0.01, Metrics: map[string]session.MetricSummary{"e2e_ms": {Mean: 100, Median: 99, CV: 0.05}}},
		"a": {TimedOK: 1, TokenCountMismatches: 2, Metrics: map[string]session.MetricSummary{}},
	})
	out := buf.String()
	rowA, rowB := rowIndex(out, "a"), rowIndex(out, "b")
	if rowA < 0 || rowB < 0 || rowB > rowA || !strings.Contains(out, "n=2 (±1%)") ||
		!strings.Contains(out, "note: a: in 2 trials the server's token count differed") {
		t.Errorf("summary (rows b=%d a=%d, want b first):\n%s", rowB, rowA, out)
	}
}

// rowIndex is the line number of the table row for arm, or -1.
func rowIndex(table, arm string) int {
	for i, line := range strings.Split(table, "\n") {
		if fields := strings.Fields(line); len(fields) > 0 && fields[0] == arm {
			return i
		}
	}
	return -1
}

func TestProgressLineShowsEnergyOnlyWhenMeasured(t *testing.T) {
	r := session.Record{Arm: "greedy", Trial: 2, Phase: session.PhaseTimed, Status: session.StatusOK, OutputTokens: 64,
		EnergyQuality: session.EnergyUnavailable, EnergyJ: math.NaN(), JPerToken: math.NaN()}
	r.Timings.E2EMs, r.Timings.TTFTMs, r.Timings.OutputTPS = 20, 1, 3200
	if line := ProgressLine(r, 1, 10); strings.Contains(line, "J/tok") {
		t.Errorf("no energy measured, yet %q", line)
	}
	r.JPerToken, r.EnergyQuality = 0.0123, "counter"
	if line := ProgressLine(r, 1, 10); !strings.HasSuffix(line, "ok  0.0123 J/tok (counter)") {
		t.Errorf("energy missing: %q", line)
	}
}

func TestFinishedNeverSaysSavedWhenTheManifestFailed(t *testing.T) {
	var buf bytes.Buffer
	WriteFinished(&buf, nil, runner.Finished{Status: session.StatusComplete, Manifest: "/s/x.toml", SaveErr: "the final manifest could not be written (no space left on device)"})
	if out := buf.String(); strings.Contains(out, "saved /s/x.toml") || !strings.Contains(out, "not saved in full: the final manifest could not be written (no space") {
		t.Errorf("a failed final write printed:\n%s", out)
	}
}
