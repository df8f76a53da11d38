package session

import (
	"fmt"
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
// tok/s (Σ tokens / Σ time, a request's own rate: "tok/s/req" in a load
// run); and for load runs the load (streams in flight, or an open loop's
// rate) and the aggregate tok/s and req/s over the steady windows, side
// by side so that neither is read against the other kind (the load table
// that follows has the rest); where every column measured energy, its
// J/token and average power.
func (c *Comparison) NumbersTable(tokens func(session string) map[TrialKey]Arrivals) Table {
	labels, _ := ShortLabels(c.Columns)
	t := Table{Header: []string{"", "n", "degraded", "e2e mean ms", "median [95% CI]", "p90", "p95", "p99", "max", "CV",
		"TTFT p50", "TTFT p95", "TPOT p50", "ITL p50", "ITL p99", "tok/s"}}
	// Where every column measured energy, J/token and average power: "≈
	// idle" where a column's is not distinguishable from idle (EnergyOf).
	energy := c.allHave(energyMetric)
	if energy {
		t.Header = append(t.Header, "J/tok", "W")
	}
	load := slices.ContainsFunc(c.Columns, func(col Column) bool { return col.load() != nil })
	if load {
		t.Header[slices.Index(t.Header, "tok/s")] = "tok/s/req"
		t.Header = append(t.Header, "load", "agg tok/s", "agg req/s")
	}
	metric := func(name string) Metric { m, _ := LookupMetric(name); return m }
	for i, col := range c.Columns {
		e2e := col.Values(metric("e2e_ms"))
		st := metrics.Describe(e2e)
		ci := metrics.Bootstrap(e2e, metrics.Median, c.TestOptions.Resamples, c.TestOptions.Seed)
		ttft, tpot := metrics.Describe(col.Values(metric("ttft_ms"))), metrics.Describe(col.Values(metric("tpot_ms")))
		itl := metrics.Describe(col.gaps(tokens))
		ms := func(v float64) string { return orDash("%."+strconv.Itoa(max(2, ThreeFigures(v)))+"f", v) }
		interval := "[too few]"
		if !math.IsNaN(ci.Lo) {
			interval = "[" + FormatValue(ci.Lo) + ", " + FormatValue(ci.Hi) + "]"
		}
		row := []string{labels[i], strconv.Itoa(st.N), strconv.Itoa(col.health.Degraded), ms(st.Mean), ms(st.Median) + " " + interval,
			ms(st.P90), ms(st.P95), ms(st.P99), ms(st.Max), orDash("%.3f", st.CV), ms(ttft.Median), ms(ttft.P95), ms(tpot.Median),
			ms(itl.Median), ms(itl.P99), orDash("%.1f", metric("output_tps").Pooled(col.records))}
		if energy {
			e := col.Energy()
			row = append(row, e.Cell(), e.PowerCell())
		}
		if load {
			tps, rps := math.NaN(), math.NaN()
			if l := col.load(); l != nil {
				tps, rps = l.TokensPerS, l.RequestsPerS
			}
			row = append(row, col.loadWords(), orDash("%.1f", tps), orDash("%.2f", rps))
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

// loadWords say the column's load: "4 streams", "20 req/s" for an open
// loop (with its cap in flight), "1 stream" for one at a time.
func (c Column) loadWords() string {
	var a ArmInfo
	if c.manifest != nil {
		a, _ = c.manifest.Arm(c.Arm)
	}
	switch {
	case a.Rate > 0 && a.Concurrency > 0:
		return fmt.Sprintf("%g req/s, ≤ %d", a.Rate, a.Concurrency)
	case a.Rate > 0:
		return fmt.Sprintf("%g req/s", a.Rate)
	case a.Concurrency > 1:
		return fmt.Sprintf("%d streams", a.Concurrency)
	}
	return "1 stream"
}

// load is the column's load throughput from its manifest's summary; nil
// for a run one trial at a time.
func (c Column) load() *Throughput {
	if c.manifest == nil {
		return nil
	}
	return c.manifest.Summary[c.Arm].Load
}
