package runner

import (
	"fmt"

	"github.com/tokentop/tokentop/metrics"
)

// StopRule decides, after each timed trial of an arm, whether that arm is
// done. The early-stopping rules of the statistics work plug in here.
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
