package session

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/metrics"
)

// RateLevel is one rate of an open loop (an arm "<base>@r<rate>"): what it
// offered, what the server achieved, and every latency two ways, from the
// send (service time, what a server reports) and from the due time (what a
// user arriving on schedule waited: the queue, then the service).
type RateLevel struct {
	Arm     string
	Offered float64 // requests per second, the process's rate
	// Scheduled is the rate the blocks' schedules came to (a Poisson
	// block of a few seconds is off its rate by chance): arrivals over
	// the time from each block's first due time to its last. Achieved is
	// the same of the ok requests' ends: a server that keeps up answers
	// as fast as requests come, one that falls behind at its own pace.
	Scheduled, Achieved float64
	// TokensPerS is the output tokens that arrived over the same spans
	// of ends.
	TokensPerS float64
	N, Failed  int // timed requests that succeeded, and the rest
	// QueueP50 and QueueP99 are the requests' waits past their due time:
	// under a cap in flight the client's queue, else its own lateness.
	QueueP50, QueueP99  float64
	TTFTP95, TTFTDueP95 float64 // from the send, and from the due time
	E2EP95, E2EDueP95   float64
	Capped              bool // a cap in flight made requests wait in the client
	// Goodput is the share of the timed requests (failed ones included)
	// that met every SLO bound from their due time, GoodputCI its 95%
	// interval over Blocks blocks (metrics.GoodputInterval: the block is
	// the unit, its requests not being independent near capacity); NaN
	// without an SLO, and the interval NaN from one block.
	Goodput   float64
	GoodputCI metrics.CI
	Blocks    int
	// ClientFailed counts the failed requests the client itself could
	// not send (its open files or ports), not the server's doing;
	// TopError is the failures' most frequent error.
	ClientFailed int
	TopError     string
	// Runs is how many times the level ran: the SLO search runs the ends
	// of its bracket again until their goodput is clear of the target.
	Runs int
}

// RateSweep is one profile arm's open loop at each of its rates, rising.
type RateSweep struct {
	Base   string
	Levels []RateLevel
}

// RateSweeps are the session's open loops; none for other runs. Arms of
// one base at one rate (a level the SLO search ran again) are one level,
// their requests pooled.
func RateSweeps(m *Manifest, records []Record) []RateSweep {
	var sweeps []RateSweep
	groups := ByArm(records)
	type key struct {
		base string
		rate float64
	}
	var order []key
	arms := map[key][]ArmInfo{}
	for _, a := range m.Arms {
		if a.Rate <= 0 {
			continue
		}
		k := key{a.Base, a.Rate}
		if arms[k] == nil {
			order = append(order, k)
		}
		arms[k] = append(arms[k], a)
	}
	for _, k := range order {
		var recs []*Record
		for _, a := range arms[k] {
			recs = append(recs, groups[a.Name]...)
		}
		lv := rateLevel(arms[k][0], recs, m.Profile.Load)
		lv.Runs = len(arms[k])
		i := slices.IndexFunc(sweeps, func(s RateSweep) bool { return s.Base == k.base })
		if i < 0 {
			sweeps, i = append(sweeps, RateSweep{Base: k.base}), len(sweeps)
		}
		sweeps[i].Levels = append(sweeps[i].Levels, lv)
	}
	for _, s := range sweeps {
		slices.SortFunc(s.Levels, func(a, b RateLevel) int { return cmp.Compare(a.Offered, b.Offered) })
	}
	return sweeps
}

// rateSpan is a block's first and last time of a kind (due, or end) and
// how many fell between them, the first not counted.
type rateSpan struct {
	from, to time.Time
	n        int
	tokens   float64 // output tokens of the ones after the first, for ends
	first    float64 // the first one's tokens, set aside if a later one comes first
}

func (s *rateSpan) add(t time.Time, tokens float64) {
	switch {
	case s.n == 0 && s.from.IsZero():
		s.from, s.to, s.first = t, t, tokens
		return
	case t.Before(s.from):
		s.from, s.tokens, s.first = t, s.tokens+s.first, tokens
	case t.After(s.to):
		s.to, s.tokens = t, s.tokens+tokens
	default:
		s.tokens += tokens
	}
	s.n++
}

func rateLevel(a ArmInfo, recs []*Record, load *LoadInfo) RateLevel {
	lv := RateLevel{Arm: a.Name, Offered: a.Rate, Capped: a.Concurrency > 0}
	lv.Goodput, lv.GoodputCI, lv.Blocks = GoodputOf(recs, load)
	dues, ends := map[block]*rateSpan{}, map[block]*rateSpan{}
	var queue, ttft, ttftDue, e2e, e2eDue []float64
	var failed []*Record
	for _, r := range recs {
		if r.Phase != PhaseTimed || math.IsNaN(r.ScheduledMs) {
			continue
		}
		due := r.StartedAt.Add(-time.Duration(r.QueueMs * float64(time.Millisecond)))
		spanOf(dues, blockOf(r)).add(due, 0)
		if r.Status != StatusOK {
			lv.Failed++
			failed = append(failed, r)
			if r.Status == StatusError && strings.HasPrefix(r.Error, backends.ClientFailure) {
				lv.ClientFailed++
			}
			continue
		}
		lv.N++
		end := r.StartedAt.Add(time.Duration(r.E2EMs * float64(time.Millisecond)))
		spanOf(ends, blockOf(r)).add(end, float64(max(r.OutputTokens, 0)))
		queue = append(queue, r.QueueMs)
		ttft, ttftDue = append(ttft, r.TTFTMs), append(ttftDue, r.TTFTFromDueMs())
		e2e, e2eDue = append(e2e, r.E2EMs), append(e2eDue, r.E2EFromDueMs())
	}
	lv.TopError = TopError(failed)
	lv.Scheduled, _ = spanRate(dues)
	lv.Achieved, lv.TokensPerS = spanRate(ends)
	if load != nil && load.Trace != nil && lv.N+lv.Failed > 0 {
		// A trace is replayed whole at its own times, idle spells
		// included: its schedule is its mean rate, and the blocks' spans
		// (a burst's rate) would read as load it never offered.
		replayS := float64(lv.N+lv.Failed) / lv.Offered
		lv.Scheduled, lv.Achieved = lv.Offered, float64(lv.N)/replayS
		lv.TokensPerS = lv.TokensPerS * spanSeconds(ends) / replayS
	}
	q := metrics.Describe(queue)
	lv.QueueP50, lv.QueueP99 = q.Median, q.P99
	lv.TTFTP95, lv.TTFTDueP95 = metrics.Describe(ttft).P95, metrics.Describe(ttftDue).P95
	lv.E2EP95, lv.E2EDueP95 = metrics.Describe(e2e).P95, metrics.Describe(e2eDue).P95
	return lv
}

// block is a load arm's round: a level run again has rounds of its own.
type block struct {
	arm   string
	round int
}

func blockOf(r *Record) block { return block{r.Arm, r.Round} }

// GoodputOf is the share of recs' requests judged by the SLO that met it,
// with its 95% interval over their blocks (metrics.GoodputInterval, the
// requests of each block in the order they were due) and the number of
// blocks; NaN without an SLO or a judged request, the interval NaN from
// one block.
func GoodputOf(recs []*Record, load *LoadInfo) (goodput float64, ci metrics.CI, blocks int) {
	nan := metrics.CI{Lo: math.NaN(), Hi: math.NaN()}
	if load == nil || load.SLO == nil {
		return math.NaN(), nan, 0
	}
	byBlock := map[block][]*Record{}
	var order []block
	for _, r := range recs {
		if !r.JudgedBySLO() {
			continue
		}
		b := blockOf(r)
		if byBlock[b] == nil {
			order = append(order, b)
		}
		byBlock[b] = append(byBlock[b], r)
	}
	met := make([][]bool, len(order))
	for k, b := range order {
		rs := byBlock[b]
		// In the order they were due (an open loop's schedule), else sent.
		slices.SortStableFunc(rs, func(x, y *Record) int {
			if !math.IsNaN(x.ScheduledMs) && !math.IsNaN(y.ScheduledMs) {
				return cmp.Compare(x.ScheduledMs, y.ScheduledMs)
			}
			return x.StartedAt.Compare(y.StartedAt)
		})
		for _, r := range rs {
			met[k] = append(met[k], r.Status == StatusOK && MeetsSLO(r, load))
		}
	}
	goodput, ci, ok := metrics.GoodputInterval(met)
	if !ok {
		ci = nan
	}
	return goodput, ci, len(order)
}

// spanSeconds is the blocks' spans added up.
func spanSeconds[K comparable](spans map[K]*rateSpan) float64 {
	total := 0.0
	for _, s := range spans {
		if s.n > 0 {
			total += s.to.Sub(s.from).Seconds()
		}
	}
	return total
}

func spanOf[K comparable](spans map[K]*rateSpan, k K) *rateSpan {
	if spans[k] == nil {
		spans[k] = &rateSpan{}
	}
	return spans[k]
}

// spanRate is events and tokens per second over the blocks' spans, each
// from its first event to its last; NaN where no block had two.
func spanRate[K comparable](spans map[K]*rateSpan) (perS, tokensPerS float64) {
	var n int
	var seconds, tokens float64
	for _, s := range spans {
		if d := s.to.Sub(s.from).Seconds(); s.n > 0 && d > 0 {
			n, seconds, tokens = n+s.n, seconds+d, tokens+s.tokens
		}
	}
	if seconds == 0 {
		return math.NaN(), math.NaN()
	}
	return float64(n) / seconds, tokens / seconds
}

// Table is the sweep's rates: offered and achieved req/s, tok/s, the
// queue's p50 and p99, p95 TTFT and e2e from the send and from the due
// time, and n.
func (sw RateSweep) Table() Table {
	t := Table{Header: []string{"offered req/s", "scheduled", "achieved", "tok/s", "queue p50", "queue p99",
		"p95 TTFT sent", "p95 TTFT due", "p95 e2e sent", "p95 e2e due", "n", "failed"}}
	judged := slices.ContainsFunc(sw.Levels, func(lv RateLevel) bool { return !math.IsNaN(lv.Goodput) })
	if judged {
		t.Header = append(t.Header, "goodput")
	}
	for _, lv := range sw.Levels {
		row := []string{fmt.Sprintf("%.4g", lv.Offered), orDash("%.2f", lv.Scheduled), orDash("%.2f", lv.Achieved), orDash("%.1f", lv.TokensPerS),
			orDash("%.2f ms", lv.QueueP50), orDash("%.2f ms", lv.QueueP99), orDash("%.1f ms", lv.TTFTP95), orDash("%.1f ms", lv.TTFTDueP95),
			orDash("%.1f ms", lv.E2EP95), orDash("%.1f ms", lv.E2EDueP95), fmt.Sprint(lv.N), fmt.Sprint(lv.Failed)}
		if judged {
			row = append(row, orDash("%.0f%%", 100*lv.Goodput))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// ClientLagLimitMs is the dispatcher's lateness (p99, with no cap in
// flight) past which the client itself, not the server, held requests
// back: the run warns of it live, and the reports say it beside the rate.
const ClientLagLimitMs = 1.0

// RateTableCaption says what a rate table's columns are.
const RateTableCaption = "scheduled: req/s from each block's first due time to its last; achieved: req/s and tok/s from its first end to its last; queue: how late a request left its due time; TTFT and e2e from the send and from the due time"

// fellBehind is how far under the scheduled rate a level may achieve and
// still be said to keep up: service times that vary spread the ends a
// little more than the arrivals.
const fellBehind = 0.9

// Words say, per rate, whether the server kept up, and where it did not
// the wait a user arriving on schedule had; and where the client itself
// sent late with no cap to wait for, that the client held requests back.
func (sw RateSweep) Words(slo *SLOInfo) []string {
	var lines []string
	if knee, why := sw.Knee(); knee > 0 {
		lines = append(lines, fmt.Sprintf("knee at %.4g req/s: %s", knee, why))
	} else if len(sw.Levels) > 1 {
		lines = append(lines, fmt.Sprintf("no knee up to %.4g req/s: every rate kept up, and p95 TTFT from the due time stayed within %g× the first rate's", sw.Levels[len(sw.Levels)-1].Offered, KneeLatency))
	}
	for _, lv := range sw.Levels {
		failuresSaid := false
		switch {
		case lv.N == 0 && lv.Failed > 0:
			lines = append(lines, fmt.Sprintf("%.4g req/s offered (%s as scheduled): every one of its %d requests failed", lv.Offered, orDash("%.2f", lv.Scheduled), lv.Failed))
		case math.IsNaN(lv.Achieved) || math.IsNaN(lv.Scheduled):
			lines = append(lines, fmt.Sprintf("%.4g req/s offered: too few requests succeeded in a block to measure a rate", lv.Offered))
		case lv.Achieved < fellBehind*lv.Scheduled && float64(lv.N) < fellBehind*float64(lv.N+lv.Failed):
			// Its failures, not a queue, are what it did not achieve.
			lines = append(lines, fmt.Sprintf("%.4g req/s offered (%.2f as scheduled), %.2f achieved: the server did not answer all of it, %d of its %d requests failed (most often %s); a user arriving on time who was answered waited p95 %.1f ms for a first token (%.1f ms once sent)",
				lv.Offered, lv.Scheduled, lv.Achieved, lv.Failed, lv.N+lv.Failed, lv.TopError, lv.TTFTDueP95, lv.TTFTP95))
			failuresSaid = true
		case lv.Achieved < fellBehind*lv.Scheduled:
			lines = append(lines, fmt.Sprintf("%.4g req/s offered (%.2f as scheduled), %.2f achieved: the server fell behind the rate; a user arriving on time waited p95 %.1f ms for a first token (%.1f ms once sent), %.1f ms for the whole answer (%.1f ms once sent)",
				lv.Offered, lv.Scheduled, lv.Achieved, lv.TTFTDueP95, lv.TTFTP95, lv.E2EDueP95, lv.E2EP95))
		default:
			lines = append(lines, fmt.Sprintf("%.4g req/s offered (%.2f as scheduled), %.2f achieved: kept up; p95 TTFT %.1f ms from the due time, %.1f ms once sent",
				lv.Offered, lv.Scheduled, lv.Achieved, lv.TTFTDueP95, lv.TTFTP95))
		}
		if lv.N > 0 && lv.Failed > 0 && !failuresSaid {
			lines = append(lines, fmt.Sprintf("%.4g req/s: %d of its %d requests failed (most often %s), counted against its goodput", lv.Offered, lv.Failed, lv.N+lv.Failed, lv.TopError))
		}
		if lv.ClientFailed > 0 {
			lines = append(lines, fmt.Sprintf("%.4g req/s: %d of its %d failed requests the client itself could not send (its open files or local ports ran out): the client's limit, not the server's; raise ulimit -n or cap the requests in flight with --max-concurrency",
				lv.Offered, lv.ClientFailed, lv.Failed))
		}
		if !lv.Capped && lv.QueueP99 > ClientLagLimitMs {
			lines = append(lines, fmt.Sprintf("%.4g req/s: the client sent late (dispatch lag p99 %.2f ms with no cap in flight): the client, not the server, held requests back, and the latencies from the due time include that", lv.Offered, lv.QueueP99))
		}
	}
	if slo == nil {
		return lines
	}
	// The highest rate whose requests met the SLO often enough, of the
	// rates run: a bound on the answer, not a search between them.
	best := -1
	for k, lv := range sw.Levels {
		if lv.Goodput >= slo.Goodput {
			best = k
		}
	}
	within := fmt.Sprintf("goodput (SLO %s, judged from each request's due time): ", sloWords(slo))
	if best < 0 {
		return append(lines, within+fmt.Sprintf("no rate kept %.0f%% of requests within it", 100*slo.Goodput))
	}
	lv := sw.Levels[best]
	// In the rates the schedules came to: a schedule of a few seconds is
	// off its rate by chance, and the answer is the load that was sent.
	answer := within + fmt.Sprintf("the highest rate run with at least %.0f%% of requests within it is %.4g req/s offered (%s as scheduled; %s)",
		100*slo.Goodput, lv.Offered, orDash("%.2f", lv.Scheduled), goodputWords(lv))
	if best+1 < len(sw.Levels) {
		next := sw.Levels[best+1]
		answer += fmt.Sprintf("; the next one run, %.4g req/s offered (%s as scheduled), kept %s: the highest rate that meets the SLO lies between %s and %s req/s as scheduled",
			next.Offered, orDash("%.2f", next.Scheduled), goodputWords(next), orDash("%.2f", lv.Scheduled), orDash("%.2f", next.Scheduled))
		// A share of a few blocks is uncertain: where either end's
		// interval holds the target (or there is none), the bracket may
		// be off.
		if unsure := !(lv.GoodputCI.Lo >= slo.Goodput) || !(next.GoodputCI.Hi < slo.Goodput); unsure {
			answer += fmt.Sprintf(", though an end's interval holds %.0f%% or is missing: more blocks at these rates would tell", 100*slo.Goodput)
		}
	} else {
		answer += ", the highest run: the answer may lie above it"
	}
	return append(lines, answer)
}

// Knee is the lowest rate the server could not take: it fell behind the
// rate its schedule came to, or its p95 TTFT from the due time passed
// KneeLatency times the first rate's, as a closed loop's knee is found on
// its streams; 0 and "" where none did.
func (sw RateSweep) Knee() (float64, string) {
	if len(sw.Levels) == 0 {
		return 0, ""
	}
	ref := sw.Levels[0]
	for _, lv := range sw.Levels {
		switch {
		case lv.N+lv.Failed > 0 && float64(lv.Failed) >= KneeFailures*float64(lv.N+lv.Failed):
			return lv.Offered, fmt.Sprintf("%d of its %d requests failed (%.0f%%; most often %s)", lv.Failed, lv.N+lv.Failed, 100*float64(lv.Failed)/float64(lv.N+lv.Failed), lv.TopError)
		case lv.Achieved < fellBehind*lv.Scheduled:
			return lv.Offered, fmt.Sprintf("the server fell behind, %.2f req/s achieved of %.2f as scheduled", lv.Achieved, lv.Scheduled)
		case ref.TTFTDueP95 > 0 && lv.TTFTDueP95 > KneeLatency*ref.TTFTDueP95:
			return lv.Offered, fmt.Sprintf("p95 TTFT from the due time is %.1f× its value at %.4g req/s (over %g×)", lv.TTFTDueP95/ref.TTFTDueP95, ref.Offered, KneeLatency)
		}
	}
	return 0, ""
}

// goodputWords say a level's goodput with its interval and what the
// interval is over: "85% [74%, 92%] over 3 blocks", or, from one block,
// that it has none.
func goodputWords(lv RateLevel) string {
	switch {
	case math.IsNaN(lv.Goodput):
		return "—"
	case math.IsNaN(lv.GoodputCI.Lo):
		return fmt.Sprintf("%.0f%% from one block of requests, too few for an interval", 100*lv.Goodput)
	}
	return fmt.Sprintf("%.0f%% [%.0f%%, %.0f%%] over %d blocks", 100*lv.Goodput, 100*lv.GoodputCI.Lo, 100*lv.GoodputCI.Hi, lv.Blocks)
}
