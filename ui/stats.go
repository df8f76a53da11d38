package ui

import (
	"fmt"
	"math"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"
)

// statsColumns are the live table's columns after the arm's name.
var statsColumns = []string{"n", "deg", "mean", "median", "p95", "p99", "max", "CV", "tok/s", "wu×"}

// loadColumns replace them while a sweep runs: each level's latency and
// its aggregate over the steady windows, the answers the sweep is for.
// (TTFT p95 after the rates, so that no header reads as "p95 TTFT p95").
var loadColumns = []string{"n", "deg", "mean", "p95", "tok/s", "req/s", "TTFT p95"}

// statsPanel is the per-arm table.
type statsPanel struct{}

func (statsPanel) update(tea.KeyPressMsg) {}

func (statsPanel) title(data *runData) string {
	if data.openLoop() {
		return "stats · req/s offered, achieved · queue p99: ms past due · TTFT ms sent, due"
	}
	if data.sweep() {
		return "stats · e2e ms · tok/s, req/s over steady windows · steady ok requests"
	}
	return "stats · e2e ms · wu× = warmup ÷ timed median · tok/s = Σ tokens / Σ time · timed ok trials"
}

func (statsPanel) view(data *runData, w, h int) string {
	if data.openLoop() {
		return renderStatsTable(data.arms, openLoopTable(data), w, h)
	}
	if data.sweep() {
		return renderStatsTable(data.arms, loadTable(data.slo() != nil), w, h)
	}
	table := trialTable
	if data.reasoned() {
		table = reasoningTable
	}
	if data.energyOfEvery() {
		table = withEnergy(table)
	}
	return renderStatsTable(data.arms, table, w, h)
}

// withEnergy adds each arm's median J/token ("≈ idle" where it is not
// distinguishable from idle) and median average power, shown where every
// arm's every counted trial has an energy figure.
func withEnergy(t statsTable) statsTable {
	return statsTable{append(slices.Clip(t.columns), "J/tok", "W"), func(a *armData) []string {
		return append(t.cells(a), a.energy.Cell(), a.energy.PowerCell())
	}}
}

// statsTable is a set of columns and how an arm fills them.
type statsTable struct {
	columns []string
	cells   func(a *armData) []string
}

var trialTable = statsTable{statsColumns, func(a *armData) []string {
	st := a.dists[0].Stats()
	return []string{fmt.Sprint(st.N), fmt.Sprint(a.degraded), formatMs(st.Mean), formatMs(st.Median), formatMs(st.P95),
		formatMs(st.P99), formatMs(st.Max), number(st.CV, 3), number(a.throughput.Rate(), 1), number(a.warmupRatio(), 2)}
}}

// reasoningTable adds, where a model reasons, each arm's median TTFO (its
// answer's first token, where TTFT is its thinking's) and its mean
// reasoning and output tokens a trial.
var reasoningTable = statsTable{append(slices.Clip(statsColumns), "TTFO p50", "think/out"), func(a *armData) []string {
	n := float64(a.tokenTrials) // 0: NaN means, a dash
	return append(trialTable.cells(a), formatMs(a.dists[ttfoHist].Stats().Median), thinkOut(float64(a.reasoningTokens)/n, float64(a.outputTokens)/n))
}}

// thinkOut is an arm's mean reasoning tokens against its mean output
// tokens a trial, "46/62", as the live and the headless tables show it.
func thinkOut(reasoning, output float64) string {
	if math.IsNaN(reasoning) || math.IsNaN(output) {
		return "—"
	}
	return number(reasoning, 0) + "/" + number(output, 0)
}

// loadTable's tok/s and req/s are over the steady windows of the blocks
// so far; with an SLO a goodput column follows.
func loadTable(slo bool) statsTable {
	columns := loadColumns
	if slo {
		columns = append(slices.Clip(columns), "goodput")
	}
	return statsTable{columns, func(a *armData) []string {
		st := a.dists[0].Stats()
		tps, rps := a.aggregate()
		cells := []string{fmt.Sprint(st.N), fmt.Sprint(a.degraded), formatMs(st.Mean), formatMs(st.P95),
			number(tps, 1), number(rps, 2), formatMs(a.dists[1].Stats().P95)}
		if slo {
			cells = append(cells, percent(a.goodput()))
		}
		return cells
	}}
}

// openLoopColumns are an open loop's: each rate offered against the rate
// achieved so far, how late requests left their due times, and TTFT both
// ways, so a queue that grows shows as it grows.
var openLoopColumns = []string{"n", "deg", "offered", "achieved", "queue p99", "TTFT p95", "due p95"}

func openLoopTable(data *runData) statsTable {
	return statsTable{openLoopColumns, func(a *armData) []string {
		_, rps := a.aggregate()
		return []string{fmt.Sprint(a.dists[0].Stats().N), fmt.Sprint(a.degraded), number(data.offered(a.name), 1), number(rps, 1),
			formatMs(a.queue.Stats().P99), formatMs(a.dists[1].Stats().P95), formatMs(a.ttftDue.Stats().P95)}
	}}
}

// percent writes a share as a whole percentage, "—" when unknown.
func percent(share float64) string {
	if math.IsNaN(share) {
		return "—"
	}
	return fmt.Sprintf("%.0f%%", 100*share)
}

// renderStatsTable draws the per-arm table of timed ok trials (e2e in
// ms). Every column is as wide as its widest cell plus a space, so no
// figure ever touches its neighbour, however large; names are cut only
// when the table would not fit otherwise.
func renderStatsTable(arms []*armData, table statsTable, w, h int) string {
	rows := make([][]string, len(arms))
	widths := make([]int, len(table.columns))
	for i, title := range table.columns {
		widths[i] = cellWidth(title)
	}
	nameW := len("arm")
	for r, a := range arms {
		rows[r] = table.cells(a)
		for i, cell := range rows[r] {
			widths[i] = max(widths[i], cellWidth(cell))
		}
		nameW = max(nameW, cellWidth(a.name))
	}
	figures := 0
	for _, cw := range widths {
		figures += 1 + cw
	}
	nameW = max(min(nameW, w-figures), min(nameW, 6))
	var head strings.Builder
	head.WriteString(fit("arm", nameW))
	for i, title := range table.columns {
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
