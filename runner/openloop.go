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

// clientLagLimit is the dispatcher's lateness (p99, with no cap in
// flight) past which the client itself, not the server, held requests
// back: their waits are then the client's.
const clientLagLimit = time.Millisecond

// openBlock is an open-loop arm's unit: its warmup, at its rate, while it
// has warmup left, else a timed block.
func (r *run) openBlock(ctx context.Context, i, round, position int) error {
	if left := r.arms[i].warmupLeft; left > 0 {
		r.arms[i].warmupLeft = 0
		return r.runOpenLoop(ctx, i, left, session.PhaseWarmup, round, position, false)
	}
	n := max(minOpenBlock, int(math.Ceil(r.plan.Load[i].Rate*r.plan.OpenBlock.Seconds())))
	// A block does not run far past a trial cap: the last one is cut to
	// what the cap still wants, yet keeps minOpenBlock requests.
	if c, ok := r.plan.Stop.(TrialCap); ok {
		n = min(n, max(minOpenBlock, c.N-r.arms[i].timed))
	}
	return r.runOpenLoop(ctx, i, n, session.PhaseTimed, round, position, true)
}

// runOpenLoop sends n requests of arm i on a schedule fixed before the
// first goes (seeded by the arm and round), each at its time whatever
// became of the ones before, and collects them as they end. Each record
// keeps when it was due (ScheduledMs) and how late it left (QueueMs).
// With windows set every request is steady: an open loop has no streams
// to ramp up, and its block's window runs from its first end to its last.
func (r *run) runOpenLoop(ctx context.Context, i, n int, phase string, round, position int, windows bool) error {
	p := &r.plan.Profile
	l := r.plan.Load[i]
	trials := make([]int, n)
	for k := range trials {
		r.arms[i].next++
		trials[k] = r.arms[i].next
	}
	seed := uint64(armSeed(p.Seed, p.Arms[i].Seed))<<16 ^ uint64(round)
	schedule := p.Arrivals(l.Rate, seed).Schedule(n)
	blockCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan finished, n)
	var inFlight atomic.Int32
	arm := p.Arms[i].Name
	r.monitor.mark(fmt.Sprintf("block_start %s round %d", arm, round))
	watches := r.monitor.beginBlock([]int{r.plan.ArmTarget[i]})
	start := time.Now()
	go func() {
		defer close(results)
		arrival.Dispatch(blockCtx, start, schedule, l.Concurrency, func(s arrival.Sent) {
			at := inFlight.Add(1)
			clock := &tokenClock{arrivals: make([]metrics.Arrival, 0, p.MaxTokens+8)}
			f := r.request(ctx, blockCtx, i, trials[s.Index], clock)
			f.inFlight = int(inFlight.Add(-1))
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
	r.monitor.mark(fmt.Sprintf("block_end %s round %d", arm, round))
	peakMB := r.monitor.endBlock(watches)
	if err != nil {
		return err
	}
	if lag, late := clientLate(block, l); late {
		r.events <- Warning{Text: fmt.Sprintf("%s round %d: the client sent its requests late (dispatch lag p99 %.2f ms, over %v with no cap in flight): the client, not the server, held them back; this machine is too busy for the rate",
			arm, round, lag, clientLagLimit)}
	}
	if windows {
		r.blockDone(i, round, block, peakMB)
	}
	return nil
}

// clientLate is the p99 of a block's dispatch lag, and whether it passed
// clientLagLimit where no cap made requests wait.
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
	return p99, p99 > float64(clientLagLimit)/float64(time.Millisecond)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
