package ui

import (
	"strings"
	"testing"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// A sweep's few steady windows are drawn across the whole panel, not in
// a strip at its left edge (at 200 columns the chart was 7 columns wide).
func TestSweepThroughputChartSpansThePanel(t *testing.T) {
	a := &armData{name: "greedy@c1", blockTPS: []float64{600, 650, 700}}
	out := ansi.Strip(renderConvergence([]*armData{a}, 0.01, viewThroughput, 100, 20))
	widest := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.ContainsAny(line, "┤┼") {
			widest = max(widest, lipgloss.Width(strings.TrimRight(line, " ")))
		}
	}
	if widest < 90 {
		t.Errorf("the chart's widest line is %d columns of 100:\n%s", widest, out)
	}
}

// The legend counts an arm's steady windows in words that agree with the
// count.
func TestThroughputLegendCountsWindows(t *testing.T) {
	for n, want := range map[int]string{1: "· 1 window", 3: "· 3 windows"} {
		a := &armData{name: "greedy@c8", blockTPS: make([]float64, n), windowS: 2, windowTokens: 3000, windowReqs: 30}
		if got := ansi.Strip(strings.Join(throughputLegend([]*armData{a}, 200), "\n")); !strings.HasSuffix(got, want) {
			t.Errorf("%d windows: %q, want it to end %q", n, got, want)
		}
	}
}
