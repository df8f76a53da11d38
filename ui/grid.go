package ui

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/tokentop/tokentop/runner"
	"github.com/tokentop/tokentop/runner/grid"
	"github.com/tokentop/tokentop/session"
)

// GridHeadless prints a grid's progress: a line as each cell's session
// starts, with its place in the run, and one with its result as it ends;
// waits and warnings as they come. pending counts the sessions to run.
func GridHeadless(w io.Writer, pending int) func(grid.Event) {
	done := 0
	return func(ev grid.Event) {
		cell := ev.Cell
		if ev.Failed != nil {
			fmt.Fprintf(w, "      %s %s, repetition %d, did not run: %v\n", cell.ID, cell.Label, ev.Slot.Repetition, ev.Failed)
			return
		}
		switch e := ev.Event.(type) {
		case runner.Started:
			done++
			fmt.Fprintf(w, "[%d/%d] %s %s, repetition %d: %d timed trials per arm → %s\n", done, pending, cell.ID, cell.Label, ev.Slot.Repetition, ev.Left, e.Manifest)
		case runner.Waiting, runner.Resumed, runner.Warning:
			fmt.Fprintf(w, "      %s: %s\n", cell.ID, EventLine(e))
		case runner.ArmStopped:
			fmt.Fprintf(w, "      %s %s stopped: %s\n", cell.ID, e.Arm, e.Reason)
		case runner.Finished:
			arms := slices.Sorted(maps.Keys(e.Summary))
			for _, arm := range arms {
				s := e.Summary[arm]
				e2e := s.Metrics["e2e_ms"]
				fmt.Fprintf(w, "      %s %s %s: %d timed ok, e2e median %s ms, %s tok/s\n", cell.ID, arm, e.Status, s.TimedOK,
					session.FormatValue(e2e.Median), session.FormatValue(s.OutputTPS))
			}
			if e.SaveErr != "" {
				fmt.Fprintf(w, "      %s: %s\n", cell.ID, e.SaveErr)
			}
		}
	}
}
