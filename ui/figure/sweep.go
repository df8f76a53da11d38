package figure

import (
	"fmt"
	"math"

	"github.com/tokentop/tokentop/session"
)

// Table is a figure in rows: a header and its cells, as text.
type Table struct {
	Header []string
	Rows   [][]string
}

// SweepTable is a sweep's levels: streams, aggregate tok/s and req/s,
// p95 TTFT and ITL, goodput and n, then J/token and peak memory where
// some level has them. The terminal and the HTML report print the same.
func SweepTable(sw session.Sweep) Table {
	t := Table{Header: []string{"streams", "tok/s", "req/s", "p95 TTFT", "p95 ITL", "goodput", "n"}}
	energy, memory := false, false
	for _, lv := range sw.Levels {
		energy = energy || lv.Cost != nil && !math.IsNaN(lv.Cost.JPerToken)
		memory = memory || lv.Cost != nil && !math.IsNaN(lv.Cost.PeakRSSMB)
	}
	if energy {
		t.Header = append(t.Header, "J/token")
	}
	if memory {
		t.Header = append(t.Header, "peak RSS")
	}
	for _, lv := range sw.Levels {
		cost := lv.Cost
		if cost == nil {
			cost = &session.LoadCost{JPerToken: math.NaN(), PeakRSSMB: math.NaN()}
		}
		row := []string{fmt.Sprint(lv.Concurrency), orDash("%.1f", lv.TokensPerS), orDash("%.2f", lv.RequestsPerS),
			orDash("%.1f ms", lv.TTFTP95), orDash("%.2f ms", lv.ITLP95), orDash("%.0f%%", 100*lv.Goodput), fmt.Sprint(lv.N)}
		if energy {
			row = append(row, orDash("%.3f", cost.JPerToken))
		}
		if memory {
			row = append(row, orDash("%.0f MB", cost.PeakRSSMB))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// orDash formats v, or "—" when it is unknown.
func orDash(format string, v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	return fmt.Sprintf(format, v)
}
