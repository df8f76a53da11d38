package session

import (
	"slices"
	"testing"
)

// A load run's numbers carry its load (streams, or an open loop's rate)
// and its aggregate tok/s and req/s over the steady windows beside each
// request's own figures, the request's own tok/s named as such (it stood
// beside the aggregate req/s as "tok/s"); a run one trial at a time has
// none of these columns.
func TestTheNumbersOfALoadRunCarryItsRates(t *testing.T) {
	var recs []Record
	for i := range 12 {
		recs = append(recs, record("greedy@c1", i+1, PhaseTimed, StatusOK, 20+float64(i)), record("greedy@c4", i+1, PhaseTimed, StatusOK, 40+float64(i)))
	}
	m := &Manifest{Status: StatusComplete, Arms: []ArmInfo{{Name: "greedy@c1"}, {Name: "greedy@c4", Concurrency: 4}},
		Summary: map[string]ArmSummary{
			"greedy@c1": {Load: &Throughput{Concurrency: 1, TokensPerS: 604, RequestsPerS: 4.72, WindowS: 9.8}},
			"greedy@c4": {Load: &Throughput{Concurrency: 4, TokensPerS: 1216.4, RequestsPerS: 9.5, WindowS: 12.34}}}}
	s := &Session{Path: "/s/L.toml", Manifest: m, Records: recs}
	refs, sessions := ArmComparison(s)
	c, err := Compare(refs, sessions, []string{"e2e_ms"})
	if err != nil {
		t.Fatal(err)
	}
	c.RunTests(TestOptions{Resamples: 100, Seed: 1})
	table := c.NumbersTable(func(string) map[TrialKey]Arrivals { return nil })
	at := slices.Index(table.Header, "load")
	if at < 0 || !slices.Equal(table.Header[at:], []string{"load", "agg tok/s", "agg req/s"}) || !slices.Contains(table.Header, "tok/s/req") || slices.Contains(table.Header, "tok/s") {
		t.Fatalf("header %q", table.Header)
	}
	if got := table.Rows[1][at:]; !slices.Equal(got, []string{"4 streams", "1216.4", "9.50"}) {
		t.Errorf("greedy@c4's load cells %q", got)
	}
	// An open loop's load is its rate, with its cap where it has one.
	m.Arms[1].Concurrency, m.Arms[1].Rate = 16, 20
	if got := c.NumbersTable(func(string) map[TrialKey]Arrivals { return nil }).Rows[1][at]; got != "20 req/s, ≤ 16" {
		t.Errorf("an open loop's load %q", got)
	}
	s.Manifest.Summary = nil
	c, _ = Compare(refs, []*Session{s, s}, []string{"e2e_ms"})
	if table := c.NumbersTable(func(string) map[TrialKey]Arrivals { return nil }); slices.Contains(table.Header, "load") || !slices.Contains(table.Header, "tok/s") {
		t.Errorf("a run without load has load columns: %q", table.Header)
	}
}
