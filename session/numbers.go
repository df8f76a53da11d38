package session

import (
	"math"
	"slices"
	"strconv"

	"github.com/tokentop/tokentop/metrics"
)

// NumbersTable is each column's figures, the table every report opens
// with before its verdicts: n and degraded trials; e2e mean, median with
// its bootstrap 95% interval, p90, p95, p99, max and CV; TTFT p50 and p95;
// TPOT p50; ITL p50 and p99 over every gap between chunks of the counted
// trials (from tokens, each column's session's arrivals; "—" without);
// tok/s (Σ tokens / Σ time, a request's own rate); and for load runs the
// streams in flight and req/s over the steady windows (the load table
// that follows has all streams' tok/s and the rest).
func (c *Comparison) NumbersTable(tokens func(session string) map[TrialKey]Arrivals) Table {
	labels, _ := ShortLabels(c.Columns)
	t := Table{Header: []string{"", "n", "degraded", "e2e mean ms", "median [95% CI]", "p90", "p95", "p99", "max", "CV",
		"TTFT p50", "TTFT p95", "TPOT p50", "ITL p50", "ITL p99", "tok/s"}}
	load := slices.ContainsFunc(c.Columns, func(col Column) bool { return col.load() != nil })
	if load {
		t.Header = append(t.Header, "streams", "req/s")
	}
	metric := func(name string) Metric { m, _ := LookupMetric(name); return m }
	for i, col := range c.Columns {
		e2e := col.Values(metric("e2e_ms"))
		st := metrics.Describe(e2e)
		ci := metrics.Bootstrap(e2e, metrics.Median, c.TestOptions.Resamples, c.TestOptions.Seed)
		ttft, tpot := metrics.Describe(col.Values(metric("ttft_ms"))), metrics.Describe(col.Values(metric("tpot_ms")))
		itl := metrics.Describe(col.gaps(tokens))
		ms := func(v float64) string { return orDash("%.2f", v) }
		interval := "[too few]"
		if !math.IsNaN(ci.Lo) {
			interval = "[" + FormatValue(ci.Lo) + ", " + FormatValue(ci.Hi) + "]"
		}
		row := []string{labels[i], strconv.Itoa(st.N), strconv.Itoa(col.health.Degraded), ms(st.Mean), ms(st.Median) + " " + interval,
			ms(st.P90), ms(st.P95), ms(st.P99), ms(st.Max), orDash("%.3f", st.CV), ms(ttft.Median), ms(ttft.P95), ms(tpot.Median),
			ms(itl.Median), ms(itl.P99), orDash("%.1f", metric("output_tps").Pooled(col.records))}
		if load {
			streams, rps := "1", "—"
			if l := col.load(); l != nil {
				streams, rps = strconv.Itoa(l.Concurrency), orDash("%.2f", l.RequestsPerS)
			}
			row = append(row, streams, rps)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// gaps are every gap between chunks of the column's counted trials.
func (c Column) gaps(tokens func(session string) map[TrialKey]Arrivals) []float64 {
	arrivals := tokens(c.Session)
	var out []float64
	for _, r := range c.records {
		_, g := arrivals[TrialKey{r.Arm, r.Trial}].Gaps()
		out = append(out, g...)
	}
	return out
}

// load is the column's load throughput from its manifest's summary; nil
// for a run one trial at a time.
func (c Column) load() *Throughput {
	if c.manifest == nil {
		return nil
	}
	return c.manifest.Summary[c.Arm].Load
}
