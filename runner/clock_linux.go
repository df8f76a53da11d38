package runner

import (
	"golang.org/x/sys/unix"

	"github.com/tokentop/tokentop/session"
)

// clockError is what the kernel says of this machine's clock
// (adjtimex(2)): its maximum and estimated error, and whether NTP (or
// chrony, or PTP) keeps it synchronized.
func clockError() session.ClockInfo {
	var tx unix.Timex
	state, err := unix.Adjtimex(&tx)
	if err != nil {
		return session.ClockInfo{}
	}
	return session.ClockInfo{Known: true, Synced: state != unix.TIME_ERROR && tx.Status&unix.STA_UNSYNC == 0,
		MaxErrorMs: float64(tx.Maxerror) / 1000, EstErrorMs: float64(tx.Esterror) / 1000}
}
