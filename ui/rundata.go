package ui

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tokentop/tokentop/metrics"
	"github.com/tokentop/tokentop/metrics/telemetry"
	"github.com/tokentop/tokentop/runner"
	"github.com/tokentop/tokentop/session"
	"github.com/tokentop/tokentop/ui/figure"
)

// histMetrics are the metrics the histogram switches between (key m).
// ITL is each trial's mean inter-token gap: the runner reports trials,
// not single gaps.
var histMetrics = [...]struct{ name, label string }{
	{"e2e_ms", "e2e"},
	{"ttft_ms", "TTFT"},
	{"tpot_ms", "TPOT"},
	{"itl_mean_ms", "ITL mean"},
	{"ttfo_ms", "TTFO"}, // last: shown only where an arm reasons (runData.histShown)
}

// ttfoHist is TTFO's place in histMetrics.
const ttfoHist = len(histMetrics) - 1

// armData is everything the panels draw for one arm, folded in one
// trial at a time so a frame never rescans the run's history.
type armData struct {
	name                string
	index               int // position in the profile, which picks its color
	warmupDone, timed   int // the runner's counts: warmup trials, and trials toward the cap
	degraded            int
	stopped             string // the stop rule's reason, once it fired
	reached             string // where it reached the stop rule's target, while it runs on
	dists               [len(histMetrics)]metrics.Distribution
	warmupE2E           metrics.Distribution
	throughput          metrics.Throughput
	points              []metrics.Point // running e2e convergence, one per counted timed trial
	countedE2E          []float64
	convergedAt         int
	convergedAtComputed int // len(countedE2E) when convergedAt was last computed
	// A load arm's steady windows: each block's aggregate tok/s, and the
	// sums the whole arm's aggregate comes from.
	blockTPS                          []float64
	windowS, windowTokens, windowReqs float64
	// sloMet of sloJudged steady timed requests kept within the SLO.
	sloMet, sloJudged int
	// An open loop's counted requests: how late each left its due time,
	// and its TTFT from that time.
	queue, ttftDue metrics.Distribution
	// Sums over the counted trials whose counts are known: reasoning
	// tokens, output tokens, and how many trials they cover.
	reasoningTokens, outputTokens, tokenTrials int
	// withEnergy are its counted trials with energy, for its figure
	// (energy, recomputed as each arrives: a sort).
	withEnergy []*session.Record
	energy     session.EnergyFigure
}

// aggregate is a load arm's output tok/s and requests/s over its steady
// windows so far; NaN before its first window.
func (a *armData) aggregate() (tokensPerS, requestsPerS float64) {
	if a.windowS == 0 {
		return math.NaN(), math.NaN()
	}
	return a.windowTokens / a.windowS, a.windowReqs / a.windowS
}

// progress is the share of a load duration d an arm has run: its steady
// windows so far, or all of it once it stopped.
func (a *armData) progress(d time.Duration) float64 {
	if a.stopped != "" {
		return 1
	}
	return min(1, a.windowS/d.Seconds())
}

// goodput is the share of steady requests within the SLO so far.
func (a *armData) goodput() float64 {
	if a.sloJudged == 0 {
		return math.NaN()
	}
	return float64(a.sloMet) / float64(a.sloJudged)
}

// trialSpan is one trial on the power panel's timeline.
type trialSpan struct {
	started    time.Time
	length     time.Duration
	warmup, ok bool
}

// powerTrace is one device's power over the run, with its idle baseline.
type powerTrace struct {
	*figure.PowerTrace
	device   telemetry.Device
	baseline float64
}

func newPowerTrace(device telemetry.Device) *powerTrace {
	return &powerTrace{PowerTrace: figure.NewPowerTrace(), device: device, baseline: math.NaN()}
}

// add folds in a sample: the instantaneous power where the device reads
// it (NVML's power usage is a 1-second average that hides a prefill's
// peaks), else its power reading or counter.
func (t *powerTrace) add(s telemetry.Sample) {
	w := s.PowerW
	if !math.IsNaN(s.PowerInstantW) {
		w = s.PowerInstantW
	}
	t.Add(s.At, w, s.EnergyMJ)
}

// runData folds runner events into the dashboard's state.
type runData struct {
	started     *runner.Started
	finished    *runner.Finished
	profile     string
	model       string
	convergeTol float64
	arms        []*armData
	spans       []trialSpan
	event       string // the latest warning or error, for the event line
	measuring   string // what the runner measures before the first trial
	traces      []*powerTrace
	// servers are each scraped server's latest metrics.
	servers    []runner.ServerMetrics
	lastEnergy *session.Record // the latest trial with an energy figure
	lastWarmup bool            // the latest trial was warmup
	inFlight   int             // a load run's requests in flight as the latest one's stream went on
	waiting    int             // an open loop's requests due but not yet sent as the latest one ended
}

// sweep reports whether the run keeps streams in flight with steady
// windows (a concurrency level or a sweep, not a together group).
func (d *runData) sweep() bool {
	return d.started != nil && d.started.Load != nil && len(d.started.Load.Levels) > 0
}

// openLoop reports whether the run's arms run at request rates.
func (d *runData) openLoop() bool { return d.started != nil && len(d.started.Rates) > 0 }

// offered is an open-loop arm's rate; NaN for others.
func (d *runData) offered(arm string) float64 {
	if d.started == nil {
		return math.NaN()
	}
	if rate, ok := d.started.Rates[arm]; ok {
		return rate
	}
	return math.NaN()
}

// slo is the load run's SLO; nil without one.
func (d *runData) slo() *session.LoadInfo {
	if d.started == nil || d.started.Load == nil || d.started.Load.SLO == nil {
		return nil
	}
	return d.started.Load
}

func newRunData(profile, model string, convergeTol float64) *runData {
	return &runData{profile: profile, model: model, convergeTol: convergeTol}
}

func (d *runData) arm(name string) *armData {
	for _, a := range d.arms {
		if a.name == name {
			return a
		}
	}
	a := &armData{name: name, index: len(d.arms)}
	d.arms = append(d.arms, a)
	return a
}

func (d *runData) apply(ev runner.Event) {
	switch ev := ev.(type) {
	case runner.Measuring:
		d.measuring = fmt.Sprintf("measuring the %s (%v)", ev.What, ev.For)
	case runner.PowerSample:
		d.addPower(ev.Sample)
	case runner.ServerMetrics:
		for len(d.servers) <= ev.Server {
			d.servers = append(d.servers, runner.ServerMetrics{})
		}
		d.servers[ev.Server] = ev
	case runner.Started:
		d.started = &ev
		d.measuring = ""
		for i, dev := range ev.Power.Devices {
			for len(d.traces) <= i {
				d.traces = append(d.traces, newPowerTrace(telemetry.Device{}))
			}
			d.traces[i].device = dev
			if i < len(ev.Power.Baseline) {
				d.traces[i].baseline = ev.Power.Baseline[i].MeanW
			}
		}
		for _, name := range ev.Arms {
			d.arm(name)
		}
		if d.model == "" {
			var models []string
			for _, t := range ev.Targets {
				if !slices.Contains(models, t.Info.Model) {
					models = append(models, t.Info.Model)
				}
			}
			d.model = strings.Join(models, " + ")
		}
	case runner.TrialDone:
		d.inFlight, d.waiting = ev.InFlight, ev.Waiting
		d.addTrial(ev)
	case runner.BlockDone:
		a := d.arm(ev.Arm)
		a.blockTPS = append(a.blockTPS, ev.TokensPerS)
		a.windowS += ev.WindowS
		a.windowTokens += ev.TokensPerS * ev.WindowS
		a.windowReqs += ev.RequestsPerS * ev.WindowS
	case runner.ArmStopped:
		d.arm(ev.Arm).stopped = ev.Short
	case runner.ArmReached:
		d.arm(ev.Arm).reached = ev.Short
	case runner.ArmAdded:
		if d.started != nil {
			if d.started.Rates == nil {
				d.started.Rates = map[string]float64{}
			}
			d.started.Rates[ev.Arm] = ev.Rate
		}
		d.arm(ev.Arm)
		d.event = EventLine(ev)
	case runner.Waiting, runner.Resumed, runner.Warning:
		d.event = EventLine(ev)
		if d.started == nil {
			d.measuring = d.event
		}
	case runner.Finished:
		d.finished = &ev
		d.serversOverRun(ev.ServerMetrics)
	}
}

// serversOverRun turns each scraped server's line, once the run is over,
// from its last scrape interval (663 tok/s over 0.19 s; the queue of that
// moment) to the run: its rate from its first scrape to its last, and the
// most its gauges read.
func (d *runData) serversOverRun(info *session.ServerMetricsInfo) {
	if info == nil {
		return
	}
	for i, src := range info.Servers {
		if i >= len(d.servers) || !strings.HasPrefix(src.Status, "scraped") {
			continue
		}
		d.servers[i].OverRun, d.servers[i].LowerBound = true, src.LowerBound()
		d.servers[i].TokensPerSecond, d.servers[i].PrefixHitRate = math.NaN(), math.NaN()
		if src.TokensPerSecond > 0 {
			d.servers[i].TokensPerSecond = src.TokensPerSecond
		}
		if src.PrefixHitRate > 0 {
			d.servers[i].PrefixHitRate = src.PrefixHitRate
		}
		v := &d.servers[i].View // a series the server gave has its peak
		for _, g := range []struct {
			gauge *float64
			peak  float64
		}{{&v.Running, src.PeakRunning}, {&v.Waiting, src.PeakWaiting}, {&v.KVCache, src.PeakKVCache}} {
			if !math.IsNaN(*g.gauge) {
				*g.gauge = g.peak
			}
		}
	}
}

func (d *runData) addTrial(ev runner.TrialDone) {
	rec := ev.Record
	a := d.arm(rec.Arm)
	warmup := rec.Phase == session.PhaseWarmup
	a.warmupDone, a.timed = ev.Warmups, ev.Measured
	d.lastWarmup = warmup
	if l := d.slo(); l != nil && rec.JudgedBySLO() {
		a.sloJudged++
		if rec.Status == session.StatusOK && session.MeetsSLO(&rec, l) {
			a.sloMet++
		}
	}
	d.spans = append(d.spans, trialSpan{started: rec.StartedAt,
		length: time.Duration(rec.E2EMs * float64(time.Millisecond)), warmup: warmup, ok: rec.Status == session.StatusOK})
	if !math.IsNaN(rec.EnergyJ) {
		d.lastEnergy = &rec
	}
	if rec.Status != session.StatusOK {
		if rec.Degraded() {
			a.degraded++
		}
		d.event = fmt.Sprintf("%s trial %d (%s) %s: %s", rec.Arm, rec.Trial, rec.Phase, rec.Status, rec.Error)
		return
	}
	if warmup {
		a.warmupE2E.Add(rec.E2EMs)
		return
	}
	if !rec.Counted() {
		return // a load run's ramp-up or drain: shown in the trial strip, kept out of the figures
	}
	for i, hm := range histMetrics {
		m, _ := session.LookupMetric(hm.name)
		a.dists[i].Add(m.Value(&rec))
	}
	a.throughput.Add(rec.OutputTokens, rec.E2EMs)
	if !math.IsNaN(rec.QueueMs) {
		a.queue.Add(rec.QueueMs)
		a.ttftDue.Add(rec.TTFTFromDueMs())
	}
	if rec.ReasoningTokens >= 0 && rec.OutputTokens >= 0 {
		a.reasoningTokens, a.outputTokens, a.tokenTrials = a.reasoningTokens+rec.ReasoningTokens, a.outputTokens+rec.OutputTokens, a.tokenTrials+1
	}
	a.points = append(a.points, ev.Point)
	a.countedE2E = append(a.countedE2E, rec.E2EMs)
	if !math.IsNaN(rec.JPerToken) {
		// Live, the idle baseline's drift is not known yet: the figure
		// carries the readings' resolution only, as the power panel says.
		a.withEnergy = append(a.withEnergy, &rec)
		a.energy = session.EnergyOf(a.withEnergy, nil)
	}
}

// energyOfEvery reports whether every arm has an energy figure for every
// counted trial so far: only then do the tables show energy columns.
func (d *runData) energyOfEvery() bool {
	for _, a := range d.arms {
		if len(a.countedE2E) == 0 || len(a.withEnergy) != len(a.countedE2E) {
			return false
		}
	}
	return len(d.arms) > 0
}

// addPower folds a telemetry sample into its device's trace; the devices
// are known from the first samples, which come before Started.
func (d *runData) addPower(s telemetry.Sample) {
	for len(d.traces) <= s.Device {
		d.traces = append(d.traces, newPowerTrace(telemetry.Device{Name: fmt.Sprintf("device %d", len(d.traces))}))
	}
	d.traces[s.Device].add(s)
}

// convergence returns the arm's converged_at so far (against the current
// mean), recomputed only when a trial arrived since the last frame.
func (a *armData) convergence(tol float64) int {
	if a.convergedAtComputed != len(a.countedE2E) {
		a.convergedAt = metrics.ConvergedAt(a.countedE2E, tol)
		a.convergedAtComputed = len(a.countedE2E)
	}
	return a.convergedAt
}

// warmupRatio is median(warmup e2e) / median(timed e2e).
func (a *armData) warmupRatio() float64 {
	return a.warmupE2E.Stats().Median / a.dists[0].Stats().Median
}

// reasoned reports whether any arm's model reasoned in a counted trial:
// TTFT then times its first thinking token, TTFO the answer's first.
func (d *runData) reasoned() bool {
	for _, a := range d.arms {
		if a.reasoningTokens > 0 {
			return true
		}
	}
	return false
}

// histShown is how many of histMetrics the histogram cycles through:
// TTFO only where an arm reasons (elsewhere it is TTFT).
func (d *runData) histShown() int {
	if d.reasoned() {
		return len(histMetrics)
	}
	return ttfoHist
}

// trialsDone counts finished trials over all arms and phases.
func (d *runData) trialsDone() int {
	n := 0
	for _, a := range d.arms {
		n += a.warmupDone + a.timed
	}
	return n
}
