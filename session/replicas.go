package session

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/tokentop/tokentop/metrics"
)

// ReplicaRow is one replica's share of an arm that ran on a fleet: its
// counted trials, their e2e median and p95, and their output tok/s
// (Σ tokens / Σ time).
type ReplicaRow struct {
	Replica     int
	URL         string
	N           int
	Median, P95 float64
	TokensPerS  float64
}

// ReplicasOf splits an arm's counted records by the replica each went
// to (urls: the target's replicas, as its manifest shows them); nil where
// the arm ran on one server.
func ReplicasOf(records []*Record, urls []string) []ReplicaRow {
	groups := byReplica(records)
	if len(groups) == 0 {
		return nil
	}
	e2e, _ := LookupMetric("e2e_ms")
	tps, _ := LookupMetric("output_tps")
	var rows []ReplicaRow
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		d := metrics.Describe(Values(groups[k], e2e))
		row := ReplicaRow{Replica: k, N: d.N, Median: d.Median, P95: d.P95, TokensPerS: tps.Pooled(groups[k])}
		if k < len(urls) {
			row.URL = urls[k]
		}
		rows = append(rows, row)
	}
	return rows
}

// ReplicasTable is an arm's rows per replica, for every report.
func ReplicasTable(rows []ReplicaRow) Table {
	t := Table{Header: []string{"replica", "url", "n", "e2e median", "e2e p95", "tok/s"}}
	for _, r := range rows {
		t.Rows = append(t.Rows, []string{strconv.Itoa(r.Replica), cmp.Or(r.URL, "—"), strconv.Itoa(r.N),
			FormatValue(r.Median) + " ms", FormatValue(r.P95) + " ms", FormatValue(r.TokensPerS)})
	}
	return t
}

// ReplicaWords say which of an arm's replicas differ in e2e: each pair
// by Mann-Whitney, Holm-adjusted over the pairs, which is slower and by
// how much from the test's own effect (the share of pairs of trials in
// which its e2e is the longer), its medians beside; or that no pair
// differs significantly.
func ReplicaWords(records []*Record, rows []ReplicaRow) []string {
	if len(rows) < 2 {
		return nil
	}
	groups := byReplica(records)
	e2e, _ := LookupMetric("e2e_ms")
	type pair struct{ a, b ReplicaRow }
	var pairs []pair
	var p []float64
	var tests []metrics.MannWhitneyResult
	for i := range rows {
		for j := i + 1; j < len(rows); j++ {
			mw := metrics.MannWhitney(Values(groups[rows[i].Replica], e2e), Values(groups[rows[j].Replica], e2e))
			pairs, p, tests = append(pairs, pair{rows[i], rows[j]}), append(p, mw.P), append(tests, mw)
		}
	}
	adjusted := metrics.Holm(p)
	name := func(r ReplicaRow) string {
		if r.URL == "" {
			return fmt.Sprintf("replica %d", r.Replica)
		}
		return fmt.Sprintf("replica %d (%s)", r.Replica, r.URL)
	}
	test := "Mann-Whitney on the pair's trials"
	if len(pairs) > 1 {
		test = fmt.Sprintf("Mann-Whitney on each pair's trials, Holm-adjusted over %d pairs", len(pairs))
	}
	var lines []string
	for k, pr := range pairs {
		if !(adjusted[k] < Alpha) {
			continue
		}
		slow, fast, longer := pr.b, pr.a, tests[k].U/float64(pr.a.N*pr.b.N) // U counts b above a
		if longer < 0.5 {
			slow, fast, longer = pr.a, pr.b, 1-longer
		}
		lines = append(lines, fmt.Sprintf("%s is slower than %s: its e2e is the longer in %.0f%% of pairs of their trials (%s, %s); medians %s ms and %s ms",
			name(slow), name(fast), 100*longer, test, formatP(adjusted[k]), FormatValue(slow.Median), FormatValue(fast.Median)))
	}
	switch {
	case len(lines) > 0:
	case len(pairs) == 1:
		lines = append(lines, fmt.Sprintf("the two replicas' e2e do not differ significantly (%s, %s)", test, formatP(adjusted[0])))
	default:
		lines = append(lines, fmt.Sprintf("no two of the %d replicas' e2e differ significantly (%s: smallest %s)", len(rows), test, formatP(slices.Min(adjusted))))
	}
	return lines
}

// byReplica is the counted records of each replica.
func byReplica(records []*Record) map[int][]*Record {
	out := map[int][]*Record{}
	for _, r := range records {
		if k, err := strconv.Atoi(r.Replica); err == nil && r.Counted() {
			out[k] = append(out[k], r)
		}
	}
	return out
}
