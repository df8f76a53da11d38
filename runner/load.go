package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/metrics"
	"github.com/tokentop/tokentop/metrics/telemetry"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/session"
)

// RequestsPerStream is how many requests each stream of a timed load block
// runs back to back: the first is its ramp-up, and the last ones may end
// after another stream has finished (drain), so four leave each stream
// about two steady requests per block while blocks stay short enough to
// interleave the arms.
const RequestsPerStream = 4

// Modes of a together group's derived arms.
const (
	ModeAlone    = "alone"
	ModeTogether = "together"
)

// ArmLoad is how one derived arm of a load run runs.
type ArmLoad struct {
	Base string // the profile arm it derives from
	// Concurrency is the streams a closed loop keeps in flight, or an open
	// loop's cap on requests in flight (0: none).
	Concurrency int
	// Rate is an open loop's requests per second (a trace's mean rate);
	// 0 for a closed loop.
	Rate float64
	// Trace is set where the arm replays the plan's trace.
	Trace bool
	Mode  string // "", or ModeAlone / ModeTogether in a together group
	// Repeat numbers the runs of one rate (the SLO search runs a rate
	// again): each run draws a schedule of its own. 0 is the first.
	Repeat int
}

// open reports whether the arm runs an open loop (a rate, or a trace).
func (l ArmLoad) open() bool { return l.Rate > 0 || l.Trace }

// expandLoad replaces the profile's arms by one arm per arm and level
// ("greedy@c4"), or in a together group per arm and mode
// ("agent-a@alone", "agent-a@together"), each on its base arm's target.
// Every derived arm is an arm to the rest of tokentop: it has its own
// records, summary, stop rule and verdicts.
func (p *Plan) expandLoad() {
	prof := &p.Profile
	open := prof.OpenLoop()
	base, baseTarget := prof.Arms, p.ArmTarget
	prof.Arms, p.ArmTarget, p.Load = nil, nil, nil
	for i := range p.Targets {
		p.Targets[i].Arms = nil
	}
	add := func(i int, name string, l ArmLoad) {
		a := base[i]
		a.Name = name
		prof.Arms = append(prof.Arms, a)
		p.ArmTarget = append(p.ArmTarget, baseTarget[i])
		p.Load = append(p.Load, l)
		t := &p.Targets[baseTarget[i]]
		t.Arms = append(t.Arms, name)
	}
	if len(prof.Together) > 0 {
		for _, mode := range []string{ModeAlone, ModeTogether} {
			for i, a := range base {
				n := 1
				if mode == ModeTogether {
					n = len(base)
				}
				add(i, a.Name+"@"+mode, ArmLoad{Base: a.Name, Concurrency: n, Mode: mode})
			}
		}
		return
	}
	if p.Trace != nil {
		rate := traceRate(p.Trace, p.TraceSpeed)
		for i, a := range base {
			add(i, a.Name+"@trace", ArmLoad{Base: a.Name, Concurrency: prof.MaxConcurrency, Rate: rate, Trace: true})
		}
		return
	}
	if open {
		expandLevels(base, prof.ArmRates, func(i int, rate float64) {
			add(i, rateArmName(base[i].Name, rate), ArmLoad{Base: base[i].Name, Concurrency: prof.MaxConcurrency, Rate: rate})
		})
		return
	}
	expandLevels(base, prof.ArmLevels, func(i, n int) {
		add(i, fmt.Sprintf("%s@c%d", base[i].Name, n), ArmLoad{Base: base[i].Name, Concurrency: n})
	})
}

// expandLevels adds, level by rising level, an arm for each base arm that
// runs at that level: a sweep runs its levels in order, each level's arms
// interleaved.
func expandLevels[L cmp.Ordered](base []profiles.Arm, levelsOf func(profiles.Arm) []L, add func(i int, level L)) {
	var levels []L
	for _, a := range base {
		for _, l := range levelsOf(a) {
			if !slices.Contains(levels, l) {
				levels = append(levels, l)
			}
		}
	}
	slices.Sort(levels)
	for _, l := range levels {
		for i, a := range base {
			if slices.Contains(levelsOf(a), l) {
				add(i, l)
			}
		}
	}
}

// rateArmName names an open loop's arm by its base and rate: "greedy@r20".
func rateArmName(base string, rate float64) string { return fmt.Sprintf("%s@r%g", base, rate) }

// perStream is how many of warmup requests each of n streams runs: at
// least one, so every stream is warm.
func perStream(warmup, n int) int { return (warmup + n - 1) / n }

// warmupOf is arm i's planned warmup: the profile's, or in a load block
// a whole number of requests per stream.
func (p *Plan) warmupOf(i int) int {
	w := p.Profile.Warmup
	if p.Load == nil || w == 0 || p.Load[i].open() {
		return w // an open loop's warmup requests come at its rate
	}
	n := p.Load[i].Concurrency
	if p.Load[i].Mode != "" {
		n = 1 // a together agent runs one request per round
	}
	return n * perStream(w, n)
}

// streams is the most streams a closed loop of the plan keeps in flight
// at once (an open loop's requests have a token clock each).
func (p *Plan) streams() int {
	n := 1
	for _, l := range p.Load {
		if !l.open() {
			n = max(n, l.Concurrency)
		}
	}
	return n
}

// levels groups a load run's arms by level, in rising order: a sweep runs
// each level's arms, interleaved, before the next level's.
func (r *run) levels() [][]int {
	var groups [][]int
	var at []ArmLoad
	for i, l := range r.plan.Load {
		level := ArmLoad{Concurrency: l.Concurrency, Rate: l.Rate}
		k := slices.Index(at, level)
		if k < 0 {
			at, groups = append(at, level), append(groups, nil)
			k = len(groups) - 1
		}
		groups[k] = append(groups[k], i)
	}
	return groups
}

// block is arm i's unit in a load run: its warmup, all at once, while it
// has warmup left (at least one request per stream), else a timed block
// of RequestsPerStream requests per stream.
func (r *run) block(ctx context.Context, i, round, position int) error {
	if r.plan.Load[i].open() {
		return r.openBlock(ctx, i, round, position)
	}
	n := r.plan.Load[i].Concurrency
	streams := slices.Repeat([]int{i}, n)
	if left := r.arms[i].warmupLeft; left > 0 {
		r.arms[i].warmupLeft = 0
		return r.runStreams(ctx, streams, perStream(left, n), session.PhaseWarmup, round, position, false)
	}
	r.beginTimed(ctx)
	return r.runStreams(ctx, streams, RequestsPerStream, session.PhaseTimed, round, position, true)
}

// runStreams is the executor: one worker per entry of streams (the arm it
// runs), each with its own token clock, running perStream requests back
// to back (a closed loop), while this goroutine, the collector, writes
// each request as it ends. With windows set each request is marked ramp,
// steady or drain (session.Record.Window). A request that finds its
// server down ends the block: the others would find the same.
func (r *run) runStreams(ctx context.Context, streams []int, perStream int, phase string, round, position int, windows bool) error {
	n := len(streams)
	trials := make([][]int, n)
	for range perStream { // numbered in start order, stream by stream
		for s, i := range streams {
			r.arms[i].next++
			trials[s] = append(trials[s], r.arms[i].next)
		}
	}
	// A shard runs its own streams of the block, numbered and placed as
	// one process would run them; the block counts toward the cap as
	// planned, every stream's requests but its first (countBlock).
	mine := 0
	for s := range streams {
		if r.plan.Shard.mine(s) {
			mine++
		}
	}
	blockCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var inFlight, running atomic.Int32
	running.Store(int32(mine))
	results := make(chan finished, n)
	var wg sync.WaitGroup
	r.monitor.mark(fmt.Sprintf("block_start %s round %d", r.plan.Profile.Arms[streams[0]].Name, round))
	watches := r.monitor.beginBlock(r.blockTargets(streams))
	for s, i := range streams {
		if !r.plan.Shard.mine(s) {
			continue
		}
		clock := &r.clocks[s]
		wg.Go(func() {
			// A stream whose every request the server shed (or the client
			// could not send) never held a place at the server: its end
			// leaves the load the server sees as it was, so the others'
			// requests after it are not drain. Past its capacity a server
			// sheds the streams over it at once, and they would otherwise
			// leave no request of the block steady.
			shedOnly := true
			defer func() {
				if !shedOnly {
					running.Add(-1)
				}
			}()
			for j, trial := range trials[s] {
				if blockCtx.Err() != nil {
					return
				}
				r.waitOutHold(blockCtx, r.plan.ArmTarget[i])
				at := inFlight.Add(1)
				f := r.request(ctx, blockCtx, i, trial, clock, nil)
				if f.rec.Status != session.StatusError || !shed(f.err) && !errors.Is(f.err, backends.ErrClient) {
					shedOnly = false
				}
				switch {
				case !windows:
				case j == 0:
					f.rec.Window = session.WindowRamp
				case running.Load() < int32(mine):
					f.rec.Window = session.WindowDrain // another stream had finished: fewer in flight
				default:
					f.rec.Window = session.WindowSteady
				}
				f.inFlight = int(inFlight.Add(-1))
				if j < len(trials[s])-1 && blockCtx.Err() == nil {
					f.inFlight++ // the stream goes straight on to its next request
				}
				f.rec.Concurrency, f.rec.Stream, f.rec.InFlight = n, s+1, int(at)
				f.arrivals = slices.Clone(f.arrivals) // the clock is reused by the next request
				results <- f
			}
		})
	}
	go func() {
		wg.Wait()
		close(results)
	}()
	block, writeErr := r.collectBlock(results, cancel, phase, round, position)
	r.monitor.mark(fmt.Sprintf("block_end %s round %d", r.plan.Profile.Arms[streams[0]].Name, round))
	peakMB := r.monitor.endBlock(watches)
	if windows && writeErr == nil {
		r.blockDone(streams[0], round, block, peakMB)
		r.countBlock(streams[0], n*max(perStream-1, 0))
	}
	return writeErr
}

// collectBlock writes a block's requests as they end, in the order they
// end, and returns them. A server that is not there (down, or given up
// on) ends the block through cancel: its other requests would find the
// same. One that sheds load or asks for time does not: those are results
// of the block's load. After a write error it drains the rest.
func (r *run) collectBlock(results <-chan finished, cancel func(), phase string, round, position int) ([]session.Record, error) {
	var writeErr error
	var block []session.Record
	for f := range results {
		f.rec.Phase, f.rec.Round, f.rec.Position = phase, round, position
		if writeErr != nil {
			continue
		}
		if writeErr = r.collect(f); writeErr != nil || r.lost(r.plan.ArmTarget[f.arm]) {
			cancel()
		}
		block = append(block, f.rec)
	}
	return block, writeErr
}

// emptyBlocksToGiveUp is how many timed blocks in a row without a steady
// window end an arm run for a duration: its requests end too unevenly
// (or fail too fast) for its streams ever to be all in flight.
const emptyBlocksToGiveUp = 3

// endByDuration ends arm i once its steady windows add up to the plan's
// duration, or when its blocks keep having none.
func (r *run) endByDuration(i int) {
	d := r.plan.Profile.LoadDuration
	arm := &r.arms[i]
	if d <= 0 || arm.stopped {
		return
	}
	b := &arm.blocks
	var decision Decision
	switch {
	case b.steadyS >= d.Seconds():
		decision = Decision{Stop: true, Short: fmt.Sprintf("%v of steady load", d),
			Reason: fmt.Sprintf("ran %v of steady load (%.1f s of steady windows over %d blocks)", d, b.steadyS, b.blocks)}
	case b.emptyInARow >= emptyBlocksToGiveUp:
		// Why the streams were never all in flight: requests that
		// failed (or were cut), or one stream's first request outlasting
		// another stream's whole block.
		why := fmt.Sprintf("%d of their requests did not end ok: see their errors", b.failedInEmpty)
		if b.failedInEmpty == 0 {
			why = "all their requests ended ok: the streams were served unevenly"
		}
		decision = Decision{Stop: true, Short: "no steady window",
			Reason: fmt.Sprintf("%d blocks in a row had no steady window (each time a stream ended before the others had finished their first request; %s), so its duration could not be reached", b.emptyInARow, why)}
	default:
		return
	}
	decision.Interval = metrics.CI{Lo: math.NaN(), Hi: math.NaN()}
	arm.stopped, arm.stop = true, decision
	r.events <- ArmStopped{Arm: r.plan.Profile.Arms[i].Name, Decision: decision}
}

// blockTargets lists the targets a block's streams run on, each once.
func (r *run) blockTargets(streams []int) []int {
	var targets []int
	for _, i := range streams {
		if t := r.plan.ArmTarget[i]; !slices.Contains(targets, t) {
			targets = append(targets, t)
		}
	}
	return targets
}

// blockDone measures a timed block's steady window (throughput and
// energy), adds it to arm i's blocks, tells the front end, and ends the
// arm if it ran for a duration that is reached.
func (r *run) blockDone(i, round int, block []session.Record, peakMB float64) {
	arm := r.plan.Profile.Arms[i].Name
	if tp, ok := session.LoadThroughput(block, r.tokens)[arm]; ok {
		cost := r.windowCost(r.plan.ArmTarget[i], block, tp, peakMB)
		r.arms[i].blocks.add(tp, cost)
		r.events <- BlockDone{Arm: arm, Round: round, Throughput: tp, Cost: cost}
	} else { // no steady window: a stream ended before the others had finished their ramp-up
		failed := 0
		for _, rec := range block {
			if rec.Status != session.StatusOK {
				failed++
			}
		}
		r.arms[i].blocks.addEmpty(failed)
	}
	r.endByDuration(i)
}

// windowCost is the energy of a block's steady window, by the trial
// rules, and the block's peak memory.
func (r *run) windowCost(target int, block []session.Record, tp session.Throughput, peakMB float64) session.LoadCost {
	ptrs := make([]*session.Record, len(block))
	for k := range block {
		ptrs[k] = &block[k]
	}
	from, to, _ := session.SteadyWindow(ptrs)
	cost := session.LoadCost{EnergyJ: math.NaN(), AvgPowerW: math.NaN(), JPerToken: math.NaN(),
		EnergyQuality: session.EnergyUnavailable, PeakRSSMB: peakMB}
	if e, measured := r.monitor.windowEnergy(target, from, to); measured {
		cost.EnergyQuality = string(e.Quality)
		if e.Quality != telemetry.QualityNoData {
			cost.EnergyJ, cost.AvgPowerW, cost.EnergyErrJ = e.NetJ, e.AvgPowerW, e.ErrJ
			if tokens := tp.TokensArrived(); tokens > 0 {
				cost.JPerToken = e.NetJ / tokens
			}
		}
	}
	return cost
}

// blockSum adds up a load arm's timed blocks: their steady time, which a
// duration ends the arm by, and what their windows cost.
type blockSum struct {
	blocks, emptyInARow int               // blocks, and the latest ones in a row without a steady window
	failedInEmpty       int               // the requests of those latest empty blocks that did not end ok
	steadyS             float64           // the windows' total length
	windows, measured   int               // blocks with a window, and those with an energy figure
	netJ, grossJ, errJ  float64           // over the measured windows
	measuredS, tokens   float64           // the measured windows' length and the tokens in them
	quality             telemetry.Quality // the weakest window's
	peakMB              float64
	peaks               int // blocks whose memory was read
}

var qualityRank = map[telemetry.Quality]int{telemetry.QualityCounter: 0, telemetry.QualitySampled: 1, telemetry.QualityNoData: 2}

func (c *blockSum) addEmpty(failed int) {
	c.blocks++
	c.emptyInARow++
	c.failedInEmpty += failed
}

func (c *blockSum) add(tp session.Throughput, cost session.LoadCost) {
	c.blocks++
	c.emptyInARow, c.failedInEmpty = 0, 0
	c.windows++
	c.steadyS += tp.WindowS
	if q := telemetry.Quality(cost.EnergyQuality); q != telemetry.QualityUnavailable && (c.quality == "" || qualityRank[q] > qualityRank[c.quality]) {
		c.quality = q
	}
	if !math.IsNaN(cost.EnergyJ) {
		c.measured++
		c.netJ += cost.EnergyJ
		c.errJ += cost.EnergyErrJ
		c.grossJ += cost.AvgPowerW * tp.WindowS
		c.measuredS += tp.WindowS
		c.tokens += tp.TokensArrived()
	}
	if !math.IsNaN(cost.PeakRSSMB) {
		c.peaks++
		c.peakMB = max(c.peakMB, cost.PeakRSSMB)
	}
}

// total is the arm's LoadCost; energy only when every window had a
// figure, so a sum never silently leaves windows out. driftW is the idle
// baseline's drift over the run (NaN where not measured): every second
// of the windows may be off by that much.
func (c *blockSum) total(power bool, driftW float64) *session.LoadCost {
	nan := math.NaN()
	cost := &session.LoadCost{EnergyJ: nan, AvgPowerW: nan, JPerToken: nan, EnergyQuality: session.EnergyUnavailable, PeakRSSMB: nan}
	if c.peaks > 0 {
		cost.PeakRSSMB = c.peakMB
	}
	if !power {
		return cost
	}
	cost.EnergyQuality = string(telemetry.QualityNoData) // a power source, but no window to measure
	if c.windows == 0 {
		return cost
	}
	cost.EnergyQuality = string(c.quality)
	if c.measured == c.windows {
		cost.EnergyJ, cost.AvgPowerW, cost.EnergyErrJ = c.netJ, c.grossJ/c.measuredS, c.errJ
		if !math.IsNaN(driftW) {
			cost.EnergyErrJ += driftW * c.measuredS
		}
		if c.tokens > 0 {
			cost.JPerToken = c.netJ / c.tokens
		}
	}
	return cost
}

// togetherRounds runs a together group (TR116): each round has an alone
// pass, the agents one after the other, and a together pass, all at once,
// in a seeded rotated order (as are the agents within the alone pass), so
// neither pass always follows the other. The first Warmup rounds are
// warmup; then Trials timed rounds.
func (r *run) togetherRounds(ctx context.Context) (string, error) {
	p := &r.plan.Profile
	var alone, together []int
	for i, l := range r.plan.Load {
		if l.Mode == ModeAlone {
			alone = append(alone, i)
		} else {
			together = append(together, i)
		}
	}
	passes := newSchedule(p.Order, p.Seed, 2)
	agents := newSchedule(p.Order, p.Seed+1, len(alone))
	for round := 1; round <= p.Warmup+p.Trials; round++ {
		if ctx.Err() == nil {
			r.revive(ctx)
		}
		if r.anyGaveUp() {
			return "", nil
		}
		phase := session.PhaseTimed
		if round <= p.Warmup {
			phase = session.PhaseWarmup
		}
		for position, pass := range passes.next() {
			r.plan.Pause.wait(ctx)
			if ctx.Err() != nil {
				return "interrupted before the plan finished", nil
			}
			if pass == 1 {
				if err := r.runStreams(ctx, together, 1, phase, round, position+1, false); err != nil {
					return "", err
				}
				continue
			}
			for _, k := range agents.next() {
				if err := r.runStreams(ctx, alone[k:k+1], 1, phase, round, position+1, false); err != nil {
					return "", err
				}
			}
		}
	}
	return "", nil
}

// loadInfo is the manifest's account of a load run; nil for one trial at
// a time.
func (p *Plan) loadInfo() *session.LoadInfo {
	if p.Load == nil {
		return nil
	}
	prof := &p.Profile
	info := &session.LoadInfo{Together: prof.Together,
		Energy: "not per request: requests overlap and share them, so energy is measured over each timed block's steady window and memory over each block, " +
			"and the summary's load_cost adds them up per arm; the power CSV marks each block's start and end"}
	if prof.LoadDuration > 0 {
		info.Duration = prof.LoadDuration.String()
	}
	switch {
	case p.Trace != nil:
		info.Trace, info.MaxConcurrency = p.traceInfo(), prof.MaxConcurrency
		info.RequestsPerBlock = fmt.Sprintf("the trace's next %v (at its speed)", p.OpenBlock)
		info.Rates = []float64{p.Load[0].Rate}
	case prof.OpenLoop():
		info.Arrival, info.Burstiness, info.MaxConcurrency = prof.Arrival, prof.Burstiness, prof.MaxConcurrency
		info.RequestsPerBlock = fmt.Sprintf("the rate × %v, at least %d", p.OpenBlock, minOpenBlock)
		for _, l := range p.Load {
			if !slices.Contains(info.Rates, l.Rate) {
				info.Rates = append(info.Rates, l.Rate)
			}
		}
	case len(prof.Together) == 0:
		info.RequestsPerStream = RequestsPerStream
		for _, l := range p.Load {
			if !slices.Contains(info.Levels, l.Concurrency) {
				info.Levels = append(info.Levels, l.Concurrency)
			}
		}
	}
	if s := prof.SLO; s.Enabled() {
		info.SLO = &session.SLOInfo{TTFTMs: s.TTFTMs, ITLMs: s.ITLMs, E2EMs: s.E2EMs, Goodput: s.Goodput}
	}
	return info
}
