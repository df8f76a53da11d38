package runner

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/tokentop/tokentop/metrics"
	"github.com/tokentop/tokentop/runner/arrival"
	"github.com/tokentop/tokentop/session"
)

// minOpenBlock is the fewest requests of an open loop's timed block: at
// a low rate its Plan.OpenBlock would hold too few to see a queue.
const minOpenBlock = 8

// openRequest is one request of an open-loop block: when it is due from
// the block's start, the trace's request it replays (nil: the profile's
// prompt of its trial and max_tokens), and its index, which names the
// shard that sends it: its place in the block's schedule, or the trace's
// line.
type openRequest struct {
	due   time.Duration
	trace *arrival.TraceRequest
	index int
}

// openBlock is an open-loop arm's unit: its warmup, at its rate (or the
// trace's first requests at their times), while it has warmup left, else
// a timed block: Plan.OpenBlock of arrivals at its rate, or the trace's
// next stretch of that long.
func (r *run) openBlock(ctx context.Context, i, round, position int) error {
	l := r.plan.Load[i]
	if left := r.arms[i].warmupLeft; left > 0 {
		r.arms[i].warmupLeft = 0
		if l.Trace {
			return r.runOpenLoop(ctx, i, r.traceStretch(left), session.PhaseWarmup, round, position, false, 0)
		}
		return r.runOpenLoop(ctx, i, r.arrivals(i, left, round), session.PhaseWarmup, round, position, false, 0)
	}
	r.beginTimed(ctx)
	if l.Trace {
		return r.traceBlock(ctx, i, round, position)
	}
	n := max(minOpenBlock, int(math.Ceil(l.Rate*r.plan.OpenBlock.Seconds())))
	// A block does not run far past a trial cap: the last one is cut to
	// what the cap still wants, yet keeps minOpenBlock requests.
	if c, ok := r.plan.Stop.(TrialCap); ok {
		n = min(n, max(minOpenBlock, c.N-r.arms[i].timed))
	}
	return r.runOpenLoop(ctx, i, r.arrivals(i, n, round), session.PhaseTimed, round, position, true, 0)
}

// arrivals are n requests of arm i at its rate, on the schedule
// scheduleSeed names: the same session gives the same schedules.
func (r *run) arrivals(i, n, round int) []openRequest {
	p := &r.plan.Profile
	l := r.plan.Load[i]
	seed := scheduleSeed(armSeed(p.Seed, p.Arms[i].Seed), l.Rate, round, l.Repeat)
	out := make([]openRequest, n)
	process := arrival.Process{Kind: p.Arrival, Rate: l.Rate, Burstiness: p.Burstiness, Seed: seed}
	for k, due := range process.Schedule(n) {
		out[k].due, out[k].index = due, k
	}
	return out
}

// scheduleSeed is the one seed of an open loop's schedule, drawn from
// everything that names it: the seed (the profile's, or an arm's own),
// the level (its rate), the round and the repeat. Arms of one level that
// share the profile's seed meet the same arrivals (common random
// numbers: an A/B at one rate sees the same traffic), while every level
// and every repeat draws its own. (The schedule once left the rate and
// the repeat out, so every level of a sweep replayed one unit-rate
// schedule scaled by 1/R, and every repeat of the SLO search replayed its
// first.) Each part goes through splitmix64's finalizer, so that nearby
// seeds, rates and rounds land far apart.
func scheduleSeed(seed int64, rate float64, round, repeat int) uint64 {
	h := splitmix64(uint64(seed))
	for _, part := range []uint64{math.Float64bits(rate), uint64(round), uint64(repeat)} {
		h = splitmix64(h ^ part)
	}
	return h
}

// splitmix64 is Steele, Lea and Flood's finalizer: a bijection of 64-bit
// words whose every output bit depends on every input bit.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// runOpenLoop sends arm i's requests, each at its due time from the
// block's start whatever became of the ones before, and collects them as
// they end. Each record keeps when it was due (ScheduledMs) and how late
// it left (QueueMs). With windows set every request is steady: an open
// loop has no streams to ramp up, and its block's window runs from its
// first end to its last. The block lasts at least lasts from its start (a
// trace's stretch keeps its idle tail).
func (r *run) runOpenLoop(ctx context.Context, i int, requests []openRequest, phase string, round, position int, windows bool, lasts time.Duration) error {
	p := &r.plan.Profile
	l := r.plan.Load[i]
	// Every request is numbered, as one process would number it; a shard
	// sends its own share, at the same due times.
	var trials []int
	var schedule []time.Duration
	var mine []openRequest
	for _, req := range requests {
		r.arms[i].next++
		if r.plan.Shard.mine(req.index) {
			trials, schedule, mine = append(trials, r.arms[i].next), append(schedule, req.due), append(mine, req)
		}
	}
	planned := len(requests)
	requests = mine
	blockCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan finished, len(requests))
	var inFlight, sent atomic.Int32
	arm := p.Arms[i].Name
	r.monitor.mark(fmt.Sprintf("block_start %s round %d", arm, round))
	watches := r.monitor.beginBlock([]int{r.plan.ArmTarget[i]})
	start := time.Now()
	go func() {
		defer close(results)
		arrival.Dispatch(blockCtx, start, schedule, l.Concurrency, func(s arrival.Sent) {
			target := r.plan.ArmTarget[i]
			r.waitOutHold(blockCtx, target) // in its queue: it leaves later than due
			var sh *shape
			if tr := requests[s.Index].trace; tr != nil {
				var release func()
				sh, release = r.traceShape(blockCtx, target, tr) // in its queue too, while the prompts in flight are at their bound
				defer release()
			}
			sent.Add(1)
			at := inFlight.Add(1)
			limit := p.MostTokens()
			if sh != nil && sh.maxTokens > 0 {
				limit = sh.maxTokens
			}
			clock := &tokenClock{arrivals: make([]metrics.Arrival, 0, limit+8)}
			f := r.request(ctx, blockCtx, i, trials[s.Index], clock, sh)
			f.inFlight = int(inFlight.Add(-1))
			due, _ := slices.BinarySearch(schedule, time.Since(start))
			f.waiting = max(0, due-int(sent.Load()))
			f.rec.ScheduledMs = ms(s.Intended.Sub(start))
			f.rec.QueueMs = ms(f.started.Sub(s.Intended))
			f.rec.Concurrency, f.rec.InFlight = l.Concurrency, int(at)
			if windows {
				f.rec.Window = session.WindowSteady
			}
			results <- f
		})
	}()
	block, err := r.collectBlock(results, cancel, phase, round, position)
	if wait := lasts - time.Since(start); wait > 0 && err == nil {
		sleep(ctx, wait)
	}
	r.monitor.mark(fmt.Sprintf("block_end %s round %d", arm, round))
	peakMB := r.monitor.endBlock(watches)
	if err != nil {
		return err
	}
	if phase == session.PhaseTimed {
		r.countBlock(i, planned)
	}
	if lag, late := clientLate(block, l); late {
		r.events <- Warning{Text: fmt.Sprintf("%s round %d: the client sent its requests late (dispatch lag p99 %.2f ms, over %g ms with no cap in flight): the client, not the server, held them back; this machine is too busy for the rate",
			arm, round, lag, session.ClientLagLimitMs)}
	}
	if windows {
		r.blockDone(i, round, block, peakMB)
	}
	return nil
}

// clientLate is the p99 of a block's dispatch lag, and whether it passed
// session.ClientLagLimitMs where no cap made requests wait.
func clientLate(block []session.Record, l ArmLoad) (float64, bool) {
	if l.Concurrency > 0 || len(block) == 0 {
		return 0, false
	}
	lags := make([]float64, 0, len(block))
	for _, rec := range block {
		if !math.IsNaN(rec.QueueMs) {
			lags = append(lags, rec.QueueMs)
		}
	}
	if len(lags) == 0 {
		return 0, false
	}
	slices.Sort(lags)
	p99 := metrics.PercentileSorted(lags, 0.99)
	return p99, p99 > session.ClientLagLimitMs
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// filesHeldBack is the open files a run keeps for its own: session files,
// telemetry, the terminal and the standard streams.
const filesHeldBack = 64

// inFlightWarning says, where an open loop may keep more requests in
// flight than the process may open connections (limit files), that the
// requests past it would fail to connect: recorded as failed, which the
// user should know is the client's limit, not the server's. A capped arm
// keeps at most its cap in flight; an uncapped one at most its rate times
// the trial timeout, since every request ends by then.
func (p *Plan) inFlightWarning(limit uint64) string {
	worst, worstArm, why := 0.0, -1, ""
	for i, l := range p.Load {
		if !l.open() {
			continue
		}
		bound := math.Ceil(l.Rate * p.Profile.TrialTimeout.Seconds())
		reason := fmt.Sprintf("%g req/s for up to the %v trial timeout", l.Rate, p.Profile.TrialTimeout)
		if l.Concurrency > 0 {
			bound, reason = float64(l.Concurrency), "its cap"
		}
		if bound > worst {
			worst, worstArm, why = bound, i, reason
		}
	}
	if worstArm < 0 || worst+filesHeldBack <= float64(limit) {
		return ""
	}
	return fmt.Sprintf("%s may keep up to %.0f requests in flight (%s), each on its own connection, but this process may open only %d files: "+
		"requests past that would fail to connect and be recorded as failed, the client's limit rather than the server's; raise it (ulimit -n) or cap the requests in flight with --max-concurrency",
		p.Profile.Arms[worstArm].Name, worst, why, limit)
}
