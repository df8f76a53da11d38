package session

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Formats lists the comparison output formats.
var Formats = []string{"text", "md", "csv", "json"}

// Write renders the comparison in format.
func (c *Comparison) Write(w io.Writer, format string) error {
	switch format {
	case "text":
		return c.writeText(w)
	case "md":
		return c.writeMarkdown(w)
	case "csv":
		return c.writeCSV(w)
	case "json":
		return c.writeJSON(w)
	}
	return fmt.Errorf("unknown format %q; use one of %s", format, strings.Join(Formats, ", "))
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

// FormatDelta prints a percent change with its sign.
func FormatDelta(d float64) string {
	if math.IsNaN(d) || math.IsInf(d, 0) {
		return ""
	}
	return fmt.Sprintf("%+.1f%%", d)
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

func (c *Comparison) header() []string {
	h := []string{"metric", "stat"}
	for _, col := range c.Columns {
		h = append(h, col.Label)
	}
	return h
}

func (c *Comparison) writeText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	line := func(cells []string) { fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t") }
	line(c.header())
	for _, row := range c.Rows {
		line(c.cells(row))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return c.writeFootnotes(w)
}

func (c *Comparison) writeFootnotes(w io.Writer) error {
	var b strings.Builder
	for i, col := range c.Columns {
		if col.Baseline != i {
			fmt.Fprintf(&b, "%s is compared with %s.\n", col.Label, c.Columns[col.Baseline].Label)
		}
	}
	for _, warn := range c.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", warn)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (c *Comparison) writeMarkdown(w io.Writer) error {
	var b strings.Builder
	row := func(cells []string) { b.WriteString("| " + strings.Join(cells, " | ") + " |\n") }
	row(c.header())
	sep := make([]string, len(c.Columns)+2)
	for i := range sep {
		sep[i] = "---:"
	}
	sep[0], sep[1] = "---", "---"
	row(sep)
	for _, r := range c.Rows {
		row(c.cells(r))
	}
	b.WriteString("\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
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
	cw.Flush()
	return cw.Error()
}

func (c *Comparison) writeJSON(w io.Writer) error {
	type cell struct {
		Column   string   `json:"column"`
		Baseline string   `json:"baseline"`
		Value    *float64 `json:"value"`
		DeltaPct *float64 `json:"delta_pct"`
	}
	type row struct {
		Metric string `json:"metric"`
		Stat   string `json:"stat"`
		Cells  []cell `json:"cells"`
	}
	finite := func(v float64) *float64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return &v
	}
	out := struct {
		Rows     []row    `json:"rows"`
		Warnings []string `json:"warnings"`
	}{Warnings: c.Warnings}
	for _, r := range c.Rows {
		jr := row{Metric: r.Metric, Stat: r.Stat}
		for i, col := range c.Columns {
			jr.Cells = append(jr.Cells, cell{Column: col.Label, Baseline: c.Columns[col.Baseline].Label, Value: finite(r.Values[i]), DeltaPct: finite(r.Deltas[i])})
		}
		out.Rows = append(out.Rows, jr)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
