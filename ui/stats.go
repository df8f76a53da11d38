package ui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
)

// statsColumns are the live table's columns, each width counting the
// space that keeps it off its left neighbour; they fit 80 columns with an
// arm name of up to 10 cells. tok/s takes 8 figures: the built-in
// engine's tiny model writes over 10,000 a second.
var statsColumns = []struct {
	title string
	width int
}{
	{"n", 5}, {"deg", 4}, {"mean", 7}, {"median", 7}, {"p95", 7}, {"p99", 7}, {"max", 7}, {"CV", 6}, {"tok/s", 9}, {"wu×", 5},
}

// statsPanel is the per-arm table.
type statsPanel struct{}

func (statsPanel) update(tea.KeyPressMsg) {}

func (statsPanel) title() string {
	return "stats · e2e ms · tok/s = Σ tokens / Σ time · timed ok trials"
}

func (statsPanel) view(data *runData, w, h int) string { return renderStats(data.arms, w, h) }

// renderStats draws the per-arm table of timed ok trials (e2e in ms).
func renderStats(arms []*armData, w, h int) string {
	nameW := 6
	for _, a := range arms {
		nameW = max(nameW, len(a.name))
	}
	nameW = min(nameW, 12)
	var head strings.Builder
	head.WriteString(fit("arm", nameW))
	for _, c := range statsColumns {
		head.WriteString(fmt.Sprintf("%*s", c.width, c.title))
	}
	lines := []string{styleBold.Render(head.String())}
	for _, a := range arms {
		st := a.dists[0].Stats()
		cells := []string{fmt.Sprint(st.N), fmt.Sprint(a.degraded), formatMs(st.Mean), formatMs(st.Median), formatMs(st.P95),
			formatMs(st.P99), formatMs(st.Max), number(st.CV, 3), number(a.throughput.Rate(), 1), number(a.warmupRatio(), 2)}
		var b strings.Builder
		b.WriteString(armStyle(a.index).Render(fit(a.name, nameW)))
		for i, c := range statsColumns {
			cell := fmt.Sprintf(" %*s", c.width-1, cells[i])
			if i == 1 && a.degraded > 0 {
				cell = styleBad.Render(cell)
			}
			b.WriteString(cell)
		}
		lines = append(lines, b.String())
	}
	return strings.Join(lines, "\n")
}
