package ui

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/tokentop/tokentop/metrics"
	"github.com/tokentop/tokentop/session"
)

// compareView is the compare screen: statistics of each column against
// its baseline with deltas colored by direction, and the chosen metric's
// histograms overlaid on shared bins.
type compareView struct {
	cmp    *session.Comparison
	labels []string // short column names: the arm, with a session letter when there are several
	legend []string // which session each letter stands for
	err    error
	metric int                      // index into cmp.Metrics
	dists  [][]metrics.Distribution // [metric][column]
}

// compareStats are the rows shown per metric; cv shows spread.
var compareStats = []string{"median", "p95", "cv"}

func newCompareView(refs []session.Ref, sessions []*session.Session, loadErr error) *compareView {
	if loadErr != nil {
		return &compareView{err: loadErr}
	}
	cmp, err := session.Compare(refs, sessions, nil)
	if err != nil {
		return &compareView{err: err}
	}
	v := &compareView{cmp: cmp, dists: make([][]metrics.Distribution, len(cmp.Metrics))}
	v.labels, v.legend = shortLabels(cmp.Columns)
	for i, name := range cmp.Metrics {
		m, _ := session.LookupMetric(name)
		v.dists[i] = make([]metrics.Distribution, len(cmp.Columns))
		for c, col := range cmp.Columns {
			for _, x := range col.Values(m) {
				v.dists[i][c].Add(x)
			}
		}
	}
	return v
}

func (v *compareView) update(msg tea.KeyPressMsg) {
	if key.Matches(msg, keys.Metric) {
		v.metric = (v.metric + 1) % len(v.cmp.Metrics)
	}
}

func (v *compareView) view(w, h int) string {
	if v.err != nil {
		return box("Compare", styleBad.Render(v.err.Error()), w, h, true)
	}
	// The histogram keeps a row per column and its axis; a short terminal
	// drops the CV rows rather than that.
	histH := len(v.cmp.Columns) + 3
	table := v.table(w-2, compareStats)
	if len(table)+2 > h-histH {
		table = v.table(w-2, compareStats[:2])
	}
	tableH := max(3, min(len(table)+2, h-histH))
	metric := v.cmp.Metrics[v.metric]
	var series []histSeries
	for c := range v.cmp.Columns {
		series = append(series, histSeries{name: v.labels[c], color: c, dist: &v.dists[v.metric][c]})
	}
	return box("Compare · Δ% against the baseline (green better, red worse)", strings.Join(table, "\n"), w, tableH, false) + "\n" +
		box(histogramTitle(strings.TrimSuffix(metric, "_ms")), renderHistogram(series, w-2, h-tableH-2), w, h-tableH, true)
}

// table is the header and one row per metric statistic.
func (v *compareView) table(w int, stats []string) []string {
	colW := max(12, min(22, (w-19)/max(1, len(v.cmp.Columns))))
	var head strings.Builder
	head.WriteString(fmt.Sprintf("%-12s%-7s", "metric", "stat"))
	for i := range v.cmp.Columns {
		head.WriteString(fmt.Sprintf("%*s", colW, fit(v.labels[i], colW-1)))
	}
	lines := []string{styleBold.Render(head.String())}
	for _, row := range v.cmp.Rows {
		if !slices.Contains(stats, row.Stat) {
			continue
		}
		m, _ := session.LookupMetric(row.Metric)
		var b strings.Builder
		b.WriteString(fmt.Sprintf("%-12s%-7s", row.Metric, row.Stat))
		for i := range v.cmp.Columns {
			value := session.FormatValue(row.Values[i])
			delta := session.FormatDelta(row.Deltas[i])
			cell := fmt.Sprintf("%*s", colW, value+" "+fmt.Sprintf("%7s", delta))
			b.WriteString(deltaStyle(row.Deltas[i], m.HigherIsBetter && row.Stat != "cv").Render(cell))
		}
		lines = append(lines, b.String())
	}
	lines = append(lines, v.legend...)
	for _, warning := range v.cmp.Warnings {
		lines = append(lines, styleWarn.Render("⚠ "+warning))
	}
	return lines
}

// shortLabels names the columns by arm when they all come from one
// session, else "A#arm", "B#arm" with a legend: session stems are long
// and differ only in their timestamps, which a narrow column would cut.
func shortLabels(columns []session.Column) (labels, legend []string) {
	var stems []string
	for _, col := range columns {
		if !slices.Contains(stems, col.Session) {
			stems = append(stems, col.Session)
		}
	}
	for _, col := range columns {
		if len(stems) == 1 {
			labels = append(labels, col.Arm)
			continue
		}
		letter := string(rune('A' + slices.Index(stems, col.Session)))
		labels = append(labels, letter+"#"+col.Arm)
	}
	if len(stems) > 1 {
		for i, stem := range stems {
			role := ""
			if i == 0 {
				role = " (baseline)"
			}
			legend = append(legend, styleDim.Render(fmt.Sprintf("%c = %s%s", 'A'+i, stem, role)))
		}
	}
	return labels, legend
}

// deltaStyle colors a change by whether it is better: lower latency and
// spread, higher throughput. Changes under 1% stay plain.
func deltaStyle(delta float64, higherIsBetter bool) lipgloss.Style {
	if math.IsNaN(delta) || math.Abs(delta) < 1 {
		return lipgloss.NewStyle()
	}
	if (delta > 0) == higherIsBetter {
		return styleGood
	}
	return styleBad
}
