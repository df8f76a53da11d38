package session

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tokentop/tokentop/metrics"
)

// Formats lists the output formats of comparisons and reports.
var Formats = []string{"text", "md", "csv", "json"}

// CheckFormat says, before any work, whether format is one of Formats.
func CheckFormat(format string) error {
	if !slices.Contains(Formats, format) {
		return fmt.Errorf("unknown format %q; use one of %s", format, strings.Join(Formats, ", "))
	}
	return nil
}

// writers are one output's renderings, one per format.
type writers struct{ text, md, csv, json func(io.Writer) error }

func (ws writers) write(w io.Writer, format string) error {
	if err := CheckFormat(format); err != nil {
		return err
	}
	return map[string]func(io.Writer) error{"text": ws.text, "md": ws.md, "csv": ws.csv, "json": ws.json}[format](w)
}

// Write renders the comparison in one of Formats.
func (c *Comparison) Write(w io.Writer, format string) error {
	return writers{c.writeText, c.writeMarkdown, c.writeCSV, c.writeJSON}.write(w, format)
}

// FormatValue prints a statistic with precision that suits its size.
func FormatValue(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v):
		return "—"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a >= 0.001 || a == 0:
		return strconv.FormatFloat(v, 'f', 4, 64)
	default: // joules per token of a small model: keep three figures
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

// FormatCount prints a count with thousands separators: "7,419,356".
func FormatCount(n int) string {
	digits := strconv.Itoa(n)
	sign := ""
	if n < 0 {
		sign, digits = "-", digits[1:]
	}
	var b strings.Builder
	for i, d := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return sign + b.String()
}

// FormatDelta prints a percent change with its sign.
func FormatDelta(d float64) string {
	if math.IsNaN(d) || math.IsInf(d, 0) {
		return ""
	}
	return fmt.Sprintf("%+.1f%%", d)
}

// writeLegend names the columns by their short labels, says whose they
// are and which is the baseline, each line after prefix and a blank line
// after them, and returns the labels.
func (c *Comparison) writeLegend(w io.Writer, prefix string) ([]string, error) {
	labels, legend := ShortLabels(c.Columns)
	if len(legend) == 0 {
		legend = []string{"Δ% against " + labels[0] + ", the baseline"}
	}
	var b strings.Builder
	for _, line := range legend {
		b.WriteString(prefix + line + "\n")
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return labels, err
}

func (c *Comparison) cells(row Row) []string {
	out := []string{row.Metric, row.Stat}
	for i := range c.Columns {
		cell := FormatValue(row.Values[i])
		if d := FormatDelta(row.Deltas[i]); d != "" {
			cell += " (" + d + ")"
		}
		out = append(out, cell)
	}
	return out
}

// writeCaveats puts the caveats first, each line after prefix, with a
// blank line after them.
func writeCaveats(w io.Writer, caveats []string, prefix string) error {
	if len(caveats) == 0 {
		return nil
	}
	var b strings.Builder
	for _, c := range caveats {
		b.WriteString(prefix + c + "\n")
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func (c *Comparison) writeText(w io.Writer) error {
	prose := wrapping{w, c.Width}
	if err := writeCaveats(prose, c.Caveats, "caveat: "); err != nil {
		return err
	}
	labels, err := c.writeLegend(prose, "")
	if err != nil {
		return err
	}
	rows := [][]string{append([]string{"metric", "stat"}, labels...)}
	for _, row := range c.Rows {
		rows = append(rows, c.cells(row))
	}
	if err := (TextTable{Rows: rows, Key: 2, Width: c.Width, AlignRight: true}).Write(w); err != nil {
		return err
	}
	if err := c.writeReasoning(w); err != nil {
		return err
	}
	if err := c.writeVerdicts(prose, ""); err != nil {
		return err
	}
	if err := c.writeLoad(prose, ""); err != nil {
		return err
	}
	return c.writeFootnotes(prose)
}

// writeReasoning prints the ReasoningTable where a model reasoned.
func (c *Comparison) writeReasoning(w io.Writer) error {
	t, ok := c.ReasoningTable()
	if !ok {
		return nil
	}
	_, err := io.WriteString(w, "\nreasoning (per trial: mean tokens, median times):\n"+strings.Join(t.Lines(), "\n")+"\n")
	return err
}

// writeLoad prints the sessions' load results, each line after prefix.
func (c *Comparison) writeLoad(w io.Writer, prefix string) error {
	if len(c.Load) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("\nload:\n")
	for _, l := range c.Load {
		b.WriteString(prefix + l + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeVerdicts prints the verdict lines and how they were reached, each
// line after prefix.
func (c *Comparison) writeVerdicts(w io.Writer, prefix string) error {
	if len(c.Tests) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("\n")
	for _, v := range c.Verdicts() {
		b.WriteString(prefix + v + "\n")
	}
	b.WriteString("\n" + c.TestsNote() + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func (c *Comparison) writeFootnotes(w io.Writer) error {
	var b strings.Builder
	labels, _ := ShortLabels(c.Columns)
	for _, name := range c.Metrics {
		if m, _ := LookupMetric(name); m.Pooled != nil {
			fmt.Fprintf(&b, "%s %s is Σ tokens / Σ time over the column's trials; its other rows describe the trials' own rates.\n", name, rateStat)
		}
	}
	for i, col := range c.Columns {
		if col.Baseline != i {
			fmt.Fprintf(&b, "%s is compared with %s.\n", labels[i], labels[col.Baseline])
		}
	}
	for _, warn := range c.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", warn)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (c *Comparison) writeMarkdown(w io.Writer) error {
	// A list, not quote lines: Markdown joins consecutive "> " lines into
	// one paragraph.
	if err := writeCaveats(w, c.Caveats, "- **Caveat:** "); err != nil {
		return err
	}
	labels, err := c.writeLegend(w, "- ")
	if err != nil {
		return err
	}
	var b strings.Builder
	row := func(cells []string) { b.WriteString("| " + strings.Join(cells, " | ") + " |\n") }
	row(append([]string{"metric", "stat"}, labels...))
	sep := make([]string, len(c.Columns)+2)
	for i := range sep {
		sep[i] = "---:"
	}
	sep[0], sep[1] = "---", "---"
	row(sep)
	for _, r := range c.Rows {
		row(c.cells(r))
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if err := c.writeVerdicts(w, "- "); err != nil {
		return err
	}
	if err := c.writeLoad(w, "- "); err != nil {
		return err
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	return c.writeFootnotes(w)
}

func csvNumber(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func (c *Comparison) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"metric", "stat", "column", "baseline", "value", "delta_pct"})
	for _, r := range c.Rows {
		for i, col := range c.Columns {
			cw.Write([]string{r.Metric, r.Stat, col.Label, c.Columns[col.Baseline].Label, csvNumber(r.Values[i]), csvNumber(r.Deltas[i])})
		}
	}
	if len(c.Tests) > 0 {
		// The tests are a second table, after a blank line, as a
		// spreadsheet shows two tables on one sheet.
		cw.Flush()
		io.WriteString(w, "\n")
		cw.Write(testColumns)
		labels, _ := ShortLabels(c.Columns)
		for i := range c.Tests {
			cw.Write(csvCells(c.testRow(&c.Tests[i], labels)))
		}
	}
	cw.Flush()
	return cw.Error()
}

var testColumns = []string{"metric", "column", "baseline", "n", "n_baseline",
	"median_diff", "median_diff_lo", "median_diff_hi", "median_ratio", "median_ratio_lo", "median_ratio_hi",
	"mean_diff", "mean_diff_lo", "mean_diff_hi", "mean_ratio", "mean_ratio_lo", "mean_ratio_hi",
	"mann_whitney_u", "p", "p_holm", "exact", "cliffs_delta", "effect", "cohens_d",
	"cv", "cv_lo", "cv_hi", "cv_baseline", "cv_baseline_lo", "cv_baseline_hi", "cv_ratio", "cv_ratio_lo", "cv_ratio_hi",
	"brown_forsythe_f", "spread_p", "spread_p_holm", "trials_to_detect_2pct", "verdict", "spread_verdict"}

// testRow is one test's cells in testColumns order, typed, so CSV and
// JSON write the same values.
func (c *Comparison) testRow(t *ABTest, labels []string) []any {
	row := []any{t.Metric.Name, c.Columns[t.Column].Label, c.Columns[t.Baseline].Label, t.NB, t.NA}
	for _, e := range []metrics.Estimate{t.MedianDiff, t.MedianRatio, t.MeanDiff, t.MeanRatio} {
		row = append(row, e.Value, e.Lo, e.Hi)
	}
	row = append(row, t.MannWhitney.U, t.MannWhitney.P, t.PAdjusted, t.MannWhitney.Exact,
		t.CliffsDelta, metrics.Magnitude(t.CliffsDelta), t.CohensD)
	for _, e := range []metrics.Estimate{t.CVB, t.CVA, t.CVRatio} {
		row = append(row, e.Value, e.Lo, e.Hi)
	}
	return append(row, t.SpreadF, t.SpreadP, t.SpreadPAdjusted, t.TrialsToDetect, t.Verdict(labels), t.SpreadVerdict(labels))
}

// csvCells formats typed cells; an unknown number is an empty field.
func csvCells(row []any) []string {
	out := make([]string, len(row))
	for i, cell := range row {
		switch v := cell.(type) {
		case float64:
			out[i] = csvNumber(v)
		default:
			out[i] = fmt.Sprint(v)
		}
	}
	return out
}

// JSONNumber is how JSON carries a measurement: a number, null when
// unknown (NaN), and the strings "+Inf" and "-Inf" for infinities (a
// ratio over a zero baseline, an interval open on one side), which JSON
// numbers cannot hold and null would lose the sign of.
func JSONNumber(v float64) any {
	switch {
	case math.IsNaN(v):
		return nil
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return v
}

// jsonObject pairs columns with typed cells, numbers through JSONNumber.
func jsonObject(columns []string, row []any) map[string]any {
	obj := make(map[string]any, len(columns))
	for i, name := range columns {
		obj[name] = row[i]
		if v, ok := row[i].(float64); ok {
			obj[name] = JSONNumber(v)
		}
	}
	return obj
}

func (c *Comparison) writeJSON(w io.Writer) error {
	type cell struct {
		Column   string `json:"column"`
		Baseline string `json:"baseline"`
		Value    any    `json:"value"`
		DeltaPct any    `json:"delta_pct"`
	}
	type row struct {
		Metric string `json:"metric"`
		Stat   string `json:"stat"`
		Cells  []cell `json:"cells"`
	}
	out := struct {
		Rows     []row            `json:"rows"`
		Tests    []map[string]any `json:"tests,omitempty"`
		Verdicts []string         `json:"verdicts,omitempty"`
		Method   string           `json:"method,omitempty"`
		Load     []string         `json:"load,omitempty"`
		Caveats  []string         `json:"caveats"`
		Warnings []string         `json:"warnings"`
	}{Caveats: c.Caveats, Warnings: c.Warnings, Method: c.TestsNote(), Load: c.Load}
	if len(c.Tests) > 0 {
		out.Verdicts = c.Verdicts()
		labels, _ := ShortLabels(c.Columns)
		for i := range c.Tests {
			out.Tests = append(out.Tests, jsonObject(testColumns, c.testRow(&c.Tests[i], labels)))
		}
	}
	for _, r := range c.Rows {
		jr := row{Metric: r.Metric, Stat: r.Stat}
		for i, col := range c.Columns {
			jr.Cells = append(jr.Cells, cell{Column: col.Label, Baseline: c.Columns[col.Baseline].Label, Value: JSONNumber(r.Values[i]), DeltaPct: JSONNumber(r.Deltas[i])})
		}
		out.Rows = append(out.Rows, jr)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
