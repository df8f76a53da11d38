package session

import (
	"cmp"
	"fmt"
	"math"
	"strconv"

	"github.com/tokentop/tokentop/metrics"
)

// ModelRow is one column of a comparison of models (the cpu-models
// profile's arms, or sessions of different models): its per-token
// latency as the mean, p99 and CV of every gap between chunks of its
// counted trials (NaN without token timings), its decode rate (Σ tokens
// after the first / Σ decode time) and its memory: the peak RSS its
// trials recorded, except where its model shared one process with other
// columns' (SharedProcess: several models on the built-in engine in one
// run, or on one Ollama server), whose peak covers them all: then no
// peak, and for the built-in engine the model's weights in memory as the
// engine holds them (WeightMB; NaN otherwise).
type ModelRow struct {
	Label, Model                     string
	N                                int
	TokenMeanMs, TokenP99Ms, TokenCV float64
	DecodeTPS, PeakRSSMB, WeightMB   float64
	SharedProcess                    bool
}

// ModelRows are the comparison's rows per model; nil where its columns
// do not run two or more different models.
func (c *Comparison) ModelRows(tokens func(session string) map[TrialKey]Arrivals) []ModelRow {
	models := map[string]bool{}
	for _, col := range c.Columns {
		target := col.manifest.TargetOf(col.Arm)
		models[target.Model()+"\x00"+target.Digest] = true
	}
	if len(models) < 2 {
		return nil
	}
	labels, _ := ShortLabels(c.Columns)
	oneSession := true
	for _, col := range c.Columns {
		oneSession = oneSession && col.Session == c.Columns[0].Session
	}
	decode, _ := LookupMetric("decode_tps")
	rss, _ := LookupMetric("peak_rss_mb")
	var rows []ModelRow
	for i, col := range c.Columns {
		target := col.manifest.TargetOf(col.Arm)
		gaps := metrics.Describe(col.gaps(tokens))
		row := ModelRow{Label: labels[i], Model: cmp.Or(target.Model(), "—"), N: len(col.records),
			TokenMeanMs: gaps.Mean, TokenP99Ms: gaps.P99, TokenCV: gaps.CV, DecodeTPS: decode.Pooled(col.records),
			PeakRSSMB: math.NaN(), WeightMB: math.NaN()}
		if oneSession { // the arm's name; its model is the next cell
			row.Label = col.Arm
		}
		if target.Quantization != "" {
			row.Model += " · " + target.Quantization
		}
		row.SharedProcess = sharesProcess(col.manifest, target)
		if row.SharedProcess {
			if mb, err := strconv.ParseFloat(target.Details["weight_mb"], 64); err == nil && target.Kind == "builtin" {
				row.WeightMB = mb
			}
		} else if peak := metrics.Describe(col.Values(rss)); peak.N > 0 {
			row.PeakRSSMB = peak.Max
		}
		rows = append(rows, row)
	}
	return rows
}

// Words says a row in one line, for the headless summary.
func (r ModelRow) Words() string {
	return fmt.Sprintf("%s (%s): per-token mean %s, p99 %s, CV %s; decode %s tok/s; memory %s",
		r.Label, r.Model, msCell(r.TokenMeanMs), msCell(r.TokenP99Ms), orDash("%.3f", r.TokenCV), orDash("%.1f", r.DecodeTPS), r.memory())
}

// ModelsOf is the rows per model of a session whose arms run different
// models; nil otherwise.
func ModelsOf(s *Session) []ModelRow {
	refs, sessions := ArmComparison(s)
	if len(refs) < 2 {
		return nil
	}
	cmp, err := Compare(refs, sessions, nil)
	if err != nil {
		return nil
	}
	tokens, _, _ := LoadTokens(s) // without them the per-token figures are NaN
	return cmp.ModelRows(func(string) map[TrialKey]Arrivals { return tokens })
}

// ModelsTable is rows as a table, with notes on what its columns mean.
func ModelsTable(rows []ModelRow) (Table, []string) {
	t := Table{Header: []string{"", "model", "n", "per-token mean", "per-token p99", "CV", "decode tok/s", "memory"}}
	weights, shared := false, false
	for _, r := range rows {
		t.Rows = append(t.Rows, []string{r.Label, r.Model, strconv.Itoa(r.N), msCell(r.TokenMeanMs), msCell(r.TokenP99Ms),
			orDash("%.3f", r.TokenCV), orDash("%.1f", r.DecodeTPS), r.memory()})
		weights, shared = weights || !math.IsNaN(r.WeightMB), shared || r.SharedProcess && math.IsNaN(r.WeightMB)
	}
	notes := []string{"per-token: every gap between chunks of the counted trials, pooled (its mean, p99 and CV); decode tok/s: Σ tokens after the first / Σ decode time"}
	if weights {
		notes = append(notes, "weights: the models ran on the built-in engine in one process, whose peak RSS covers them all; each model's own memory is its weights as the engine holds them (the file's pages it reads in place and its own copies)")
	}
	if shared {
		notes = append(notes, "one process: those models ran in one server process, whose peak RSS covers them all; run each on a server of its own (a port each) for each one's peak")
	}
	return t, notes
}

// memory says the row's memory figure.
func (r ModelRow) memory() string {
	switch {
	case !math.IsNaN(r.WeightMB):
		return "weights " + strconv.FormatFloat(r.WeightMB, 'f', 1, 64) + " MiB"
	case !math.IsNaN(r.PeakRSSMB):
		return FormatValue(r.PeakRSSMB) + " MB peak RSS"
	case r.SharedProcess:
		return "— (one process)"
	}
	return "—"
}

// sharesProcess reports whether target's memory was one process's with
// another target of the session: in-process engines are all tokentop's;
// servers found at one process share its watch (the same rss_process).
func sharesProcess(m *Manifest, target TargetInfo) bool {
	n := 0
	for _, t := range m.Targets {
		switch {
		case target.Kind == "builtin" && t.Kind == "builtin":
			n++
		case target.Kind != "builtin" && target.RSSProcess != "" && t.RSSProcess == target.RSSProcess:
			n++
		}
	}
	return n > 1
}

// msCell is a latency in ms to three figures, or "—".
func msCell(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return FormatValue(v) + " ms"
}
