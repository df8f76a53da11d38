package session

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/tokentop/tokentop/metrics"
)

// RateLevel is one rate of an open loop (an arm "<base>@r<rate>"): what it
// offered, what the server achieved, and every latency two ways, from the
// send (service time, what a server reports) and from the due time (what a
// user arriving on schedule waited: the queue, then the service).
type RateLevel struct {
	Arm     string
	Offered float64 // requests per second, the schedule's rate
	// Achieved is the ok requests per second over the timed blocks, each
	// from its start to its last request's end: under Offered when the
	// server (or the client) fell behind.
	Achieved   float64
	TokensPerS float64 // output tokens per second over the same spans
	N, Failed  int     // timed requests that succeeded, and the rest
	// QueueP50 and QueueP99 are the requests' waits past their due time:
	// under a cap in flight the client's queue, else its own lateness.
	QueueP50, QueueP99  float64
	TTFTP95, TTFTDueP95 float64 // from the send, and from the due time
	E2EP95, E2EDueP95   float64
	Capped              bool // a cap in flight made requests wait in the client
	blockS, blockTokens float64
}

// RateSweep is one profile arm's open loop at each of its rates, rising.
type RateSweep struct {
	Base   string
	Levels []RateLevel
}

// RateSweeps are the session's open loops; none for other runs.
func RateSweeps(m *Manifest, records []Record) []RateSweep {
	var sweeps []RateSweep
	groups := ByArm(records)
	for _, a := range m.Arms {
		if a.Rate <= 0 {
			continue
		}
		lv := rateLevel(a, groups[a.Name])
		k := slices.IndexFunc(sweeps, func(s RateSweep) bool { return s.Base == a.Base })
		if k < 0 {
			sweeps, k = append(sweeps, RateSweep{Base: a.Base}), len(sweeps)
		}
		sweeps[k].Levels = append(sweeps[k].Levels, lv)
	}
	for _, s := range sweeps {
		slices.SortFunc(s.Levels, func(a, b RateLevel) int { return cmp.Compare(a.Offered, b.Offered) })
	}
	return sweeps
}

func rateLevel(a ArmInfo, recs []*Record) RateLevel {
	lv := RateLevel{Arm: a.Name, Offered: a.Rate, Capped: a.Concurrency > 0}
	type span struct{ from, to time.Time }
	blocks := map[int]*span{}
	var queue, ttft, ttftDue, e2e, e2eDue []float64
	for _, r := range recs {
		if r.Phase != PhaseTimed || math.IsNaN(r.ScheduledMs) {
			continue
		}
		if r.Status != StatusOK {
			lv.Failed++
			continue
		}
		lv.N++
		due := r.StartedAt.Add(-time.Duration((r.QueueMs + r.ScheduledMs) * float64(time.Millisecond)))
		end := r.StartedAt.Add(time.Duration(r.E2EMs * float64(time.Millisecond)))
		b := blocks[r.Round]
		if b == nil {
			b = &span{due, end}
			blocks[r.Round] = b
		}
		if due.Before(b.from) {
			b.from = due
		}
		if end.After(b.to) {
			b.to = end
		}
		lv.blockTokens += float64(max(r.OutputTokens, 0))
		queue = append(queue, r.QueueMs)
		ttft, ttftDue = append(ttft, r.TTFTMs), append(ttftDue, r.TTFTFromDueMs())
		e2e, e2eDue = append(e2e, r.E2EMs), append(e2eDue, r.E2EFromDueMs())
	}
	for _, b := range blocks {
		lv.blockS += b.to.Sub(b.from).Seconds()
	}
	lv.Achieved, lv.TokensPerS = math.NaN(), math.NaN()
	if lv.blockS > 0 {
		lv.Achieved, lv.TokensPerS = float64(lv.N)/lv.blockS, lv.blockTokens/lv.blockS
	}
	q := metrics.Describe(queue)
	lv.QueueP50, lv.QueueP99 = q.Median, q.P99
	lv.TTFTP95, lv.TTFTDueP95 = metrics.Describe(ttft).P95, metrics.Describe(ttftDue).P95
	lv.E2EP95, lv.E2EDueP95 = metrics.Describe(e2e).P95, metrics.Describe(e2eDue).P95
	return lv
}

// Table is the sweep's rates: offered and achieved req/s, tok/s, the
// queue's p50 and p99, p95 TTFT and e2e from the send and from the due
// time, and n.
func (sw RateSweep) Table() Table {
	t := Table{Header: []string{"offered req/s", "achieved req/s", "tok/s", "queue p50", "queue p99",
		"p95 TTFT sent", "p95 TTFT due", "p95 e2e sent", "p95 e2e due", "n", "failed"}}
	for _, lv := range sw.Levels {
		t.Rows = append(t.Rows, []string{fmt.Sprintf("%g", lv.Offered), orDash("%.2f", lv.Achieved), orDash("%.1f", lv.TokensPerS),
			orDash("%.2f ms", lv.QueueP50), orDash("%.2f ms", lv.QueueP99), orDash("%.1f ms", lv.TTFTP95), orDash("%.1f ms", lv.TTFTDueP95),
			orDash("%.1f ms", lv.E2EP95), orDash("%.1f ms", lv.E2EDueP95), fmt.Sprint(lv.N), fmt.Sprint(lv.Failed)})
	}
	return t
}

// RateTableCaption says what a rate table's columns are.
const RateTableCaption = "achieved req/s and tok/s over each block from its start to its last end; queue: how late a request left its due time; TTFT and e2e from the send and from the due time"

// fellBehind is how far under the offered rate a level may achieve and
// still be said to keep up: a Poisson block's own randomness moves it.
const fellBehind = 0.9

// Words say, per rate, whether the server kept up, and where it did not
// the wait a user arriving on schedule had; and where the client itself
// sent late with no cap to wait for, that the client held requests back.
func (sw RateSweep) Words() []string {
	var lines []string
	for _, lv := range sw.Levels {
		switch {
		case math.IsNaN(lv.Achieved):
			lines = append(lines, fmt.Sprintf("%g req/s offered: no request succeeded", lv.Offered))
		case lv.Achieved < fellBehind*lv.Offered:
			lines = append(lines, fmt.Sprintf("%g req/s offered, %.2f achieved: the server fell behind the rate; a user arriving on time waited p95 %.1f ms for a first token (%.1f ms once sent), %.1f ms for the whole answer (%.1f ms once sent)",
				lv.Offered, lv.Achieved, lv.TTFTDueP95, lv.TTFTP95, lv.E2EDueP95, lv.E2EP95))
		default:
			lines = append(lines, fmt.Sprintf("%g req/s offered, %.2f achieved: kept up; p95 TTFT %.1f ms from the due time, %.1f ms once sent", lv.Offered, lv.Achieved, lv.TTFTDueP95, lv.TTFTP95))
		}
		if !lv.Capped && lv.QueueP99 > 1 {
			lines = append(lines, fmt.Sprintf("%g req/s: the client sent late (dispatch lag p99 %.2f ms with no cap in flight): the client, not the server, held requests back, and the latencies from the due time include that", lv.Offered, lv.QueueP99))
		}
	}
	return lines
}
