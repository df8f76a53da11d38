package ui

import (
	"fmt"
	"strings"

	"charm.land/lipgloss/v2"

	tea "charm.land/bubbletea/v2"
)

// statsColumns are the live table's columns after the arm's name.
var statsColumns = []string{"n", "deg", "mean", "median", "p95", "p99", "max", "CV", "tok/s", "wu×"}

// statsPanel is the per-arm table.
type statsPanel struct{}

func (statsPanel) update(tea.KeyPressMsg) {}

func (statsPanel) title() string {
	return "stats · e2e ms · tok/s = Σ tokens / Σ time · timed ok trials"
}

func (statsPanel) view(data *runData, w, h int) string { return renderStats(data.arms, w, h) }

// renderStats draws the per-arm table of timed ok trials (e2e in ms).
// Every column is as wide as its widest cell plus a space, so no figure
// ever touches its neighbour, however large; names are cut only when the
// table would not fit otherwise.
func renderStats(arms []*armData, w, h int) string {
	rows := make([][]string, len(arms))
	widths := make([]int, len(statsColumns))
	for i, title := range statsColumns {
		widths[i] = lipgloss.Width(title)
	}
	nameW := len("arm")
	for r, a := range arms {
		st := a.dists[0].Stats()
		rows[r] = []string{fmt.Sprint(st.N), fmt.Sprint(a.degraded), formatMs(st.Mean), formatMs(st.Median), formatMs(st.P95),
			formatMs(st.P99), formatMs(st.Max), number(st.CV, 3), number(a.throughput.Rate(), 1), number(a.warmupRatio(), 2)}
		for i, cell := range rows[r] {
			widths[i] = max(widths[i], lipgloss.Width(cell))
		}
		nameW = max(nameW, lipgloss.Width(a.name))
	}
	figures := 0
	for _, cw := range widths {
		figures += 1 + cw
	}
	nameW = max(min(nameW, w-figures), min(nameW, 6))
	var head strings.Builder
	head.WriteString(fit("arm", nameW))
	for i, title := range statsColumns {
		head.WriteString(fmt.Sprintf(" %*s", widths[i], title))
	}
	lines := []string{styleBold.Render(head.String())}
	for r, a := range arms {
		var b strings.Builder
		b.WriteString(armStyle(a.index).Render(fit(a.name, nameW)))
		for i, cell := range rows[r] {
			cell = fmt.Sprintf(" %*s", widths[i], cell)
			if i == 1 && a.degraded > 0 {
				cell = styleBad.Render(cell)
			}
			b.WriteString(cell)
		}
		lines = append(lines, b.String())
	}
	// Never drop an arm silently: say how many the panel could not show.
	if h >= 2 && len(lines) > h {
		lines = append(lines[:h-1], styleDim.Render(fmt.Sprintf("+%d more arms: z zooms this panel", len(lines)-h+1)))
	}
	return strings.Join(lines, "\n")
}
