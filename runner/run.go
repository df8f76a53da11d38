package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/backends/untrusted"
	"github.com/tokentop/tokentop/metrics"
	"github.com/tokentop/tokentop/metrics/telemetry"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/session"
)

// Event is what the runner reports to a front end: one of Measuring,
// Started, PowerSample, TrialDone, ArmStopped or Finished.
type Event interface{ isEvent() }

// Measuring is sent while the runner measures something before the
// first trial (the idle power baseline).
type Measuring struct {
	What string
	For  time.Duration
}

// PowerSample is one telemetry sample. These are dropped rather than
// wait for a slow front end; the power CSV has every one.
type PowerSample struct{ Sample telemetry.Sample }

// Started is sent once every target answered its probe and the manifest
// exists.
type Started struct {
	Manifest string
	Targets  []StartedTarget
	Arms     []string
	// Labels say what sets each arm apart (session.ArmLabels).
	Labels       map[string]string
	TrialsPerArm int
	// Warmup is each arm's planned warmup: the profile's, or in a load
	// run at least one request per stream.
	Warmup map[string]int
	// Power is what telemetry sees: devices, idle baselines, or why none.
	Power session.PowerInfo
	// Load is the manifest's account of a load run; nil for one trial at
	// a time.
	Load *session.LoadInfo
	// PromptsFile is the file the prompts are drawn from; nil where the
	// profile lists them.
	PromptsFile *session.PromptsFileInfo
	// Lengths are the lengths in tokens asked; nil where none was.
	Lengths *session.LengthsInfo
	// Duration ends each load arm by its steady time instead of
	// TrialsPerArm; 0 when the count ends them.
	Duration time.Duration
	// Rates are each open-loop arm's offered requests per second (a
	// trace's mean rate); nil for closed loops and one trial at a time.
	Rates map[string]float64
}

// TrialDone is sent after a trial is on disk.
type TrialDone struct {
	Record session.Record
	// Warmups and Measured count the arm's trials so far, this one
	// included: its warmup, and those toward its trial cap (timed, and
	// in a load run steady; not ones that found the server down).
	Warmups, Measured int
	// Point is the arm's running e2e convergence point; zero for warmup
	// and degraded trials, which do not enter aggregates.
	Point metrics.Point
	// InFlight counts a load block's requests in flight once this one's
	// stream went on to its next (0 after the block's last, and when one
	// trial runs at a time).
	InFlight int
	// Waiting counts an open loop's requests that were due by the time
	// this one ended but had not been sent: under a cap, the client's
	// queue.
	Waiting int
}

// BlockDone is sent after each timed load block that had a steady
// window: the aggregate over that window, and what the block cost.
type BlockDone struct {
	Arm   string
	Round int
	session.Throughput
	Cost session.LoadCost
}

// ArmStopped is sent when an arm's trials end.
type ArmStopped struct {
	Arm string
	Decision
}

// ArmReached is sent when an arm's statistic first comes within the stop
// rule's target; the arm runs on, interleaved, until every arm beside it
// has reached it too.
type ArmReached struct {
	Arm string
	Decision
}

// ArmAdded is sent when the SLO search adds an arm at a rate between two
// it ran; Why says which.
type ArmAdded struct {
	Arm  string
	Rate float64
	Why  string
}

// StartedTarget is one target as its probe found it.
type StartedTarget struct {
	Name string
	Kind backends.Kind
	Info backends.Info
	Arms []string
}

// Waiting is sent while the runner waits for the server, after each
// probe that found it not ready: before the first trial while it loads
// its model, or mid-run after it stopped answering.
type Waiting struct {
	What    string // "the model to load", "the server to come back"
	Why     string // what the last probe said
	Elapsed time.Duration
	Limit   time.Duration
}

// Resumed is sent when a server that stopped answering mid-run came
// back; each arm runs warmup trials again before its next timed one.
type Resumed struct {
	After  time.Duration
	Warmup int // warmup rounds before timed trials go on
	// Arms are the arms whose server came back when the run has several
	// targets (the others never paused); nil with one.
	Arms []string
}

// Warning is something worth saying once, live (e.g. generations cut at
// the context window); the caveats of the reports say it again after.
type Warning struct{ Text string }

// Finished is the last event.
type Finished struct {
	Status   string
	Note     string
	Manifest string
	Summary  map[string]session.ArmSummary
	// SaveErr says why the final manifest is not on disk (a full disk);
	// empty when it is. Status and Summary are then what it would have
	// said, and nothing may claim the session was saved.
	SaveErr string
	// Precision says what the stop rule reached.
	Precision session.Precision
	// ServerMetrics is what came of scraping the servers' own metrics;
	// nil where none was scraped.
	ServerMetrics *session.ServerMetricsInfo
	// Shard is this run's share of a sharded run; nil for a run of one.
	Shard *session.ShardInfo
}

func (Waiting) isEvent()     {}
func (Resumed) isEvent()     {}
func (Warning) isEvent()     {}
func (Measuring) isEvent()   {}
func (PowerSample) isEvent() {}
func (Started) isEvent()     {}
func (TrialDone) isEvent()   {}
func (BlockDone) isEvent()   {}
func (ArmStopped) isEvent()  {}
func (ArmReached) isEvent()  {}
func (Finished) isEvent()    {}
func (ArmAdded) isEvent()    {}

// ProbeTimeout bounds one reachability check.
const ProbeTimeout = 15 * time.Second

// DefaultServerWait is how long a run waits for a server that is loading
// its model, or that stopped answering mid-run, before giving up.
const DefaultServerWait = 60 * time.Second

// NoWait as Options.ServerWait gives up on a server at its first
// failure to answer (--server-wait 0); a zero Options.ServerWait means
// DefaultServerWait.
const NoWait time.Duration = -1

// ErrServerLost is the error of a run that ended because its server
// stopped answering and did not come back in time.
var ErrServerLost = errors.New("server lost")

// ToolVersion is the module version from the build info.
func ToolVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}

// Run executes plan against its targets' backends (bs[i] for
// plan.Targets[i]), sending events on events (which it closes when done).
// It returns the final status, or an error when it could not run at all
// (a probe failed, files could not be written) or a failure ended it
// early (ErrServerLost: the files hold what was measured); cancelling ctx
// ends the run early with status partial and the files consistent.
func Run(ctx context.Context, plan *Plan, bs []backends.Backend, events chan<- Event) (status string, err error) {
	defer close(events)
	for _, b := range bs {
		if closer, ok := b.(io.Closer); ok {
			defer closer.Close()
		}
	}
	// Every target is probed before the first trial. A server still
	// loading its model, or not started yet, is waited for up to
	// ServerWait; one that does not come is named, with its arms.
	infos := make([]backends.Info, len(plan.Targets))
	for i := range plan.Targets {
		t := &plan.Targets[i]
		if infos[i], err = waitForServer(ctx, bs[i], plan, t, time.Now(), "", probeShouldWait, events); err != nil {
			where := t.Kind.Name + " backend " + t.Where()
			if len(plan.Targets) > 1 {
				where += ", " + armWords(t)
			}
			return session.StatusFailed, fmt.Errorf("%s: %w", where, err)
		}
	}
	// A server whose kind could be told to ignore the end of sequence but
	// that drops the request (Ollama's /v1) would run fixed_length trials
	// of every length, recorded as fixed: refused before anything is
	// measured, as the kinds that cannot send it are when planned.
	for i := range plan.Targets {
		if t := &plan.Targets[i]; plan.Profile.FixedLength && infos[i].NoFixedLength != "" {
			return session.StatusFailed, fmt.Errorf("fixed_length = true: the %s backend %s (%s) cannot honour it: %s; set fixed_length = false, and the trials end at the end of sequence",
				t.Kind.Name, t.Where(), armWords(t), infos[i].NoFixedLength)
		}
	}
	// Thinking is asked of the server as each knows it; one that cannot
	// honour an arm's think refuses the run before anything is measured.
	thinkSent := make([]string, len(plan.Profile.Arms))
	for i, a := range plan.Profile.Arms {
		think := plan.Profile.ThinkOf(a)
		if think == profiles.ThinkDefault {
			continue
		}
		t := &plan.Targets[plan.ArmTarget[i]]
		if thinkSent[i], err = backends.ThinkSent(bs[plan.ArmTarget[i]], string(think)); err != nil {
			return session.StatusFailed, fmt.Errorf("arm %s, think = %s, on the %s backend %s: %w", a.Name, think, t.Kind.Name, t.Where(), err)
		}
	}
	// A trace's requests must fit each target's context, where it says
	// it; its prompts are sized with each target's tokenizer.
	if err := plan.checkTraceFits(infos); err != nil {
		return session.StatusFailed, err
	}
	plan.calibrateTrace(ctx, bs)
	bank := makeLengthBank(ctx, plan, bs)
	mon, err := startMonitor(plan, events)
	if err != nil {
		return session.StatusFailed, err
	}
	defer mon.stop() // before events closes: the sampler sends on it
	mon.measureIdle(ctx, plan.Telemetry.IdleBaseline)
	created := time.Now()
	p := &plan.Profile
	m := &session.Manifest{
		ID: session.Stem(created, p.Name, strings.Join(plan.kinds(), "+")), ToolVersion: ToolVersion(), CreatedAt: created.UTC(),
		ConfigHash: plan.ConfigHash(), Environment: Environment(), Power: &mon.info,
		Profile: session.ProfileInfo{Name: p.Name, Source: p.Source, Description: p.Description, MaxTokens: p.MaxTokens,
			Warmup: p.Warmup, Trials: p.Trials, Timeout: p.TrialTimeout.String(), Order: p.Order, Seed: p.Seed,
			USDPerHour: p.USDPerHour, Prompts: p.Prompts, Stop: stopInfo(p.Stop), PromptCache: p.PromptCache, FixedLength: p.FixedLength,
			Load: plan.loadInfo(), PromptsFile: plan.promptsFileInfo(), Lengths: plan.lengthsInfo(bank), ThinkTime: p.ThinkTime},
	}
	trialsPerArm := p.Trials
	if plan.Trace != nil { // each arm replays the whole trace, whatever the profile's count
		trialsPerArm = len(plan.Trace.Requests)
	}
	started := Started{Arms: p.ArmNames(), TrialsPerArm: trialsPerArm, Warmup: map[string]int{}, Load: m.Profile.Load, Duration: p.LoadDuration,
		PromptsFile: m.Profile.PromptsFile, Lengths: m.Profile.Lengths}
	for i, a := range p.Arms {
		started.Warmup[a.Name] = plan.warmupOf(i)
		if plan.Load != nil && plan.Load[i].open() {
			if started.Rates == nil {
				started.Rates = map[string]float64{}
			}
			started.Rates[a.Name] = plan.Load[i].Rate
		}
	}
	for i, t := range plan.Targets {
		info := infos[i]
		m.Targets = append(m.Targets, session.TargetInfo{Name: t.Name, Kind: t.Kind.Name, URL: untrusted.URL(t.Target.URL), Endpoint: t.Target.Endpoint,
			ModelRequested: t.Target.Model, ModelActual: info.Model, Digest: info.Digest, Quantization: info.Quantization,
			ServerVersion: info.ServerVersion, DType: t.Target.DType, Threads: t.Target.Threads, Options: t.Target.Options,
			RSSProcess: mon.rssProcess[i], Details: info.Details, Reasoning: t.Kind.ReasoningRule, Replicas: info.Replicas})
		started.Targets = append(started.Targets, StartedTarget{Name: t.Name, Kind: t.Kind, Info: info, Arms: t.Arms})
	}
	for i, a := range p.Arms {
		t := plan.TargetOf(i)
		m.Arms = append(m.Arms, session.ArmInfo{Name: a.Name, Strategy: a.Strategy(), Temperature: a.Temperature,
			TopK: a.TopK, TopP: a.TopP, MinP: a.MinP, Seed: armSeed(p.Seed, a.Seed), Target: t.Name,
			PromptCache: promptCacheWords(p.AllowsPromptCache(a), t.Kind.Name, infos[plan.ArmTarget[i]]),
			Think:       string(p.ThinkOf(a)), ThinkSent: thinkSent[i]})
		if plan.Load != nil {
			l := plan.Load[i]
			m.Arms[i].Base, m.Arms[i].Concurrency, m.Arms[i].Rate, m.Arms[i].Mode = l.Base, l.Concurrency, l.Rate, l.Mode
		}
	}
	m.Environment.GPUs, m.Environment.Driver, m.Environment.CUDADriver = mon.found.GPUs, mon.found.Driver, mon.found.CUDADriver
	m.Shard = shardInfo(plan.Shard, plan.StartAt)
	if s := plan.Shard; s.Count > 0 {
		m.ID += fmt.Sprintf("-shard%dof%d", s.Index, s.Count) // shards on one volume each name their own
	}
	w, err := session.Create(plan.OutDir, m)
	if err != nil {
		return session.StatusFailed, err
	}
	defer w.Close()
	if err := mon.attach(w); err != nil {
		return session.StatusFailed, err
	}
	servers, err := watchServers(plan, w, events)
	if err != nil {
		return session.StatusFailed, err
	}
	defer servers.stop() // before events closes: the scraper sends on it
	started.Manifest, started.Power, started.Labels = w.ManifestPath(), mon.info, session.ArmLabels(m)
	events <- started
	if line := m.Shard.Caveat(); line != "" {
		events <- Warning{Text: line}
	}
	if plan.MeanAsked && p.Stop.Enabled() {
		events <- Warning{Text: fmt.Sprintf("--ci-statistic mean: the median decides for an arm while its running CV is above %g, where the mean's interval does not hold; the end names the statistic that decided", MaxCVForMean)}
	}
	if limit, ok := openFilesLimit(); ok {
		if text := plan.inFlightWarning(limit); text != "" {
			events <- Warning{Text: text}
		}
	}

	r := &run{plan: plan, backends: bs, writer: w, events: events, sessionID: m.ID, monitor: mon,
		arms: make([]armState, len(p.Arms)), targets: make([]targetState, len(plan.Targets)), stale: make([]atomic.Int32, len(plan.Targets)),
		holds: make([]atomic.Int64, len(plan.Targets)), epoch: time.Now(), tracePrompts: semaphore.NewWeighted(maxTracePromptBytes),
		clocks: newClocks(plan.streams(), p.MostTokens()), tokens: map[session.TrialKey]session.Arrivals{}, manifestArms: slices.Clone(m.Arms)}
	if p.Dataset != nil {
		r.promptOrder = p.Dataset.Order(p.Seed)
	}
	r.bank = bank
	if plan.Shard.Count > 0 {
		r.shard = m.Shard
	}
	status, note, runErr := r.loop(ctx)
	mon.measureIdleAfter(ctx, plan.Telemetry.IdleBaseline)
	if err := mon.stop(); err != nil {
		note = strings.TrimPrefix(note+"; the power CSV is incomplete: "+err.Error(), "; ")
	}
	serverInfo, err := servers.stop()
	if err != nil {
		note = strings.TrimPrefix(note+"; the server metrics CSV is incomplete: "+err.Error(), "; ")
	}
	if serverInfo != nil {
		w.SetServerMetrics(serverInfo)
	}
	for i, watch := range mon.memory {
		if watch != nil {
			w.NoteMemory(i, watch.History())
		}
	}

	summary := map[string]session.ArmSummary{}
	groups := session.ByArm(r.records)
	load := session.LoadThroughput(r.records, r.tokens)
	for i, a := range p.Arms {
		s := session.SummarizeArm(groups[a.Name], uint64(p.Seed), plan.ConvergeTol, p.USDPerHour)
		s.TokenCountMismatches = r.arms[i].mismatches
		if p.PrefixTokens > 0 {
			s.PrefixCache = session.PrefixCacheOf(groups[a.Name], p.PrefixTokens)
		}
		s.Turns = session.TurnWords(groups[a.Name])
		s.EnergyCounterRejected = r.arms[i].counterRejected
		// A trial run with a power source says its energy per token, or
		// why there is none; a load run's energy is per steady window.
		if e := session.EnergyOf(session.Counted(groups[a.Name]), &mon.info); e.N > 0 || mon.sampler != nil && plan.Load == nil && e.Trials > 0 {
			s.Energy = &e
		}
		if d := r.arms[i].stop; d.Stop {
			s.StoppedBy = d.Reason + usableWords(s)
			if d.Statistic != "" {
				s.StopInterval = &session.StopInterval{Statistic: d.Statistic, Estimate: d.Estimate, Lo: d.Interval.Lo, Hi: d.Interval.Hi,
					N: d.N, Missed: !d.Reached}
			}
		}
		if t, ok := load[a.Name]; ok {
			s.Load = &t
			s.LoadCost = r.arms[i].blocks.total(mon.sampler != nil, mon.info.DriftW)
		}
		summary[a.Name] = s
	}
	fin := Finished{Status: status, Note: note, Manifest: w.ManifestPath(), Summary: summary, ServerMetrics: serverInfo, Shard: r.shard}
	names := make([]string, len(p.Arms))
	for i, a := range p.Arms {
		names[i] = a.Name
	}
	fin.Precision = session.PrecisionOf(stopInfo(p.Stop), p.Trials, names, summary)
	// The requests are done: their kept connections go before the final
	// manifest needs a file (a load run past the open-files limit once
	// could not write it).
	for _, b := range bs {
		if ic, ok := b.(backends.IdleCloser); ok {
			ic.CloseIdleConnections()
		}
	}
	if err := w.Finish(status, note, studyStoppedBy(fin.Precision.Line, names, summary), summary); err != nil {
		fin.SaveErr = saveFailure(err, w.ManifestPath(), filepath.Join(filepath.Dir(w.ManifestPath()), m.TrialsFile))
		runErr = errors.Join(runErr, errors.New(fin.SaveErr))
	}
	events <- fin
	return status, runErr
}

// studyStoppedBy says what ended the study's timed trials, for the
// manifest: the stop rule's precision line, or the cap where every arm
// reached it; "" where the arms ended each for its own reason (their
// stopped_by says) or the run was cut (its stop note says).
func studyStoppedBy(precision string, arms []string, summary map[string]session.ArmSummary) string {
	if precision != "" {
		return precision
	}
	first := summary[arms[0]].StoppedBy
	if !strings.HasPrefix(first, "reached the trial cap of ") {
		return ""
	}
	for _, a := range arms[1:] {
		if !strings.HasPrefix(summary[a].StoppedBy, "reached the trial cap of ") {
			return ""
		}
	}
	return "every arm " + strings.Split(first, ":")[0]
}

// armWords names a target's arms: "arm a", "arms a, b".
func armWords(t *PlanTarget) string {
	if len(t.Arms) == 1 {
		return "arm " + t.Arms[0]
	}
	return "arms " + strings.Join(t.Arms, ", ")
}

// named is how messages name a target when the run has several:
// "llamacpp-a (arm a)"; "" with one.
func (p *Plan) named(t *PlanTarget) string {
	if len(p.Targets) < 2 {
		return ""
	}
	return t.Name + " (" + armWords(t) + ")"
}

// nameOf is how messages name target t after "the server": " of
// llamacpp-a (arm a)" when the run has several, else "".
func (p *Plan) nameOf(t int) string {
	if n := p.named(&p.Targets[t]); n != "" {
		return " of " + n
	}
	return ""
}

// kinds lists the backend kinds of the targets, each once.
func (p *Plan) kinds() []string {
	var kinds []string
	for _, t := range p.Targets {
		if !slices.Contains(kinds, t.Kind.Name) {
			kinds = append(kinds, t.Kind.Name)
		}
	}
	return kinds
}

// saveFailure says why the final manifest is missing and what is on disk
// instead, looked at rather than assumed: a full disk leaves the manifest
// written at the start; a removed folder leaves none; the trials CSV
// holds the rows it holds (counted: a row can be on disk whose tokens
// could not follow it).
func saveFailure(err error, manifest, trials string) string {
	onDisk := "no manifest is left on disk"
	if info, statErr := os.Stat(manifest); statErr == nil && info.Mode().IsRegular() {
		onDisk = "the manifest on disk is still the one written at the start, status running (compare and report read it as a killed run)"
	}
	rows := "no trials CSV is left beside it"
	if data, readErr := os.ReadFile(trials); readErr == nil {
		rows = fmt.Sprintf("the trials CSV beside it holds %d finished trials", max(0, bytes.Count(data, []byte("\n"))-1))
	}
	return fmt.Sprintf("the final manifest could not be written (%v): %s; %s", err, onDisk, rows)
}

// promptCacheWords says in the manifest what became of the server's
// prompt cache.
func promptCacheWords(allowed bool, kind string, info backends.Info) string {
	switch {
	case allowed:
		return "allowed (prompt_cache = true): repeated prompts may be served from the cache"
	case info.PromptCacheSwitch:
		return "off: every request asks the server to evaluate the whole prompt"
	}
	return kind + " has no per-request switch: it may reuse a cached prompt prefix; the cached_tokens column shows hits where the server reports them, and the shuffled arm order spreads them over the arms"
}

func stopInfo(s profiles.Stop) *session.StopInfo {
	if !s.Enabled() {
		return nil
	}
	return &session.StopInfo{UntilCI: s.UntilCI, Statistic: s.Statistic, MinTrials: s.MinTrials}
}

func armSeed(profileSeed int64, override *int64) int64 {
	if override != nil {
		return *override
	}
	return profileSeed
}

type armState struct {
	next       int // trial number of the arm's next trial, from 1
	warmups    int // warmup trials run
	timed      int // trials toward the cap
	warmupLeft int // warmup trials before its next timed one
	stopped    bool
	stop       Decision // why the arm stopped
	reach      Decision // where it first reached the stop rule's target
	mismatches int
	// warnedClaim is set once a server claimed a count its stream could
	// not carry.
	warnedClaim bool
	// warnedLength is set once a trial's lengths in tokens missed those
	// asked.
	warnedLength bool
	// counterRejected counts timed trials whose energy counter was not used.
	counterRejected int
	e2e             metrics.Series
	blocks          blockSum // a load arm's timed blocks
	traceAt         int      // a trace replay's next request
	// traceClock is the trace time (at its speed) the arm's replay has
	// reached: its next stretch starts there.
	traceClock time.Duration
}

type run struct {
	plan *Plan
	// timedBegun is set once the first timed block (or trial) began, at
	// --start-at where it is given.
	timedBegun bool
	// shard is the manifest's account of this shard; nil for a run of
	// one process.
	shard     *session.ShardInfo
	backends  []backends.Backend
	writer    *session.Writer
	events    chan<- Event
	sessionID string
	arms      []armState
	targets   []targetState
	records   []session.Record
	// manifestArms are the manifest's arms, for arms added as the run goes.
	manifestArms []session.ArmInfo
	// tokens holds a load run's arrivals, for its throughput windows.
	tokens map[session.TrialKey]session.Arrivals
	// clocks are the token clocks, one per stream in flight.
	clocks []tokenClock
	// stale counts each target's requests that found their kept-alive
	// connection closed (backends.ErrStale); load workers add to it.
	stale []atomic.Int32
	// holds are when each target asked to be sent its next request
	// (Retry-After), as time since epoch: workers read them.
	holds   []atomic.Int64
	epoch   time.Time
	monitor *monitor
	// warnedClient is set once a request the client could not send was
	// reported.
	warnedClient bool
	// tracePrompts bounds the bytes of trace prompts in flight.
	tracePrompts *semaphore.Weighted
	// warnedTruncated is set once a truncated generation was reported.
	warnedTruncated bool
	// promptOrder is the order trials draw a prompts file's prompts in.
	promptOrder []int
	// bank holds the prompts and lengths of a run whose lengths are set
	// in tokens; nil for others.
	bank *lengthBank
}

// staleToGoFresh is how many requests to a target that found their
// kept-alive connection closed make all its later requests go on a
// connection of their own: one can be chance, two is a server that closes
// each connection after an answer.
const staleToGoFresh = 2

// loop runs the plan: one trial at a time in rounds of interleaved arms,
// or a load run's blocks (see load.go). It says how the run ended.
func (r *run) loop(ctx context.Context) (status, note string, err error) {
	p := &r.plan.Profile
	for i := range r.arms {
		r.arms[i].warmupLeft = p.Warmup
	}
	// done: the plan ran to its end. An interrupt that came after its
	// last request cut nothing, and the run is complete.
	var done bool
	switch {
	case r.plan.Load == nil:
		note, err = r.rounds(ctx, r.allArms(), r.oneTrial)
		done = r.allStopped()
	case len(p.Together) > 0:
		note, err = r.togetherRounds(ctx)
		done = true // it returns early only with a note, or a target given up on
	default:
		for _, level := range r.levels() {
			if note, err = r.rounds(ctx, level, r.block); note != "" || err != nil {
				break
			}
		}
		if note == "" && err == nil && ctx.Err() == nil {
			note, err = r.searchSLO(ctx)
		}
		done = r.allStopped() && !r.searches() // an interrupted search had more to try
	}
	switch {
	case err != nil:
		return session.StatusPartial, "stopped: could not write the session files", err
	case note != "":
		return session.StatusPartial, note, nil
	case ctx.Err() != nil && r.cutShort():
		return session.StatusPartial, "interrupted during the last trial", nil
	case ctx.Err() != nil && !done:
		return session.StatusPartial, "interrupted before the plan finished", nil
	}
	if lost := r.lostNote(); lost != "" {
		return r.endStatus(), lost, fmt.Errorf("%w: %s", ErrServerLost, lost)
	}
	if !r.measured() {
		return session.StatusFailed, "no timed trial succeeded", nil
	}
	return session.StatusComplete, "", nil
}

// allStopped reports whether every arm has ended its trials.
func (r *run) allStopped() bool {
	for i := range r.arms {
		if !r.arms[i].stopped {
			return false
		}
	}
	return true
}

// cutShort reports whether the user's interrupt cut a request (not one
// that a load block ended when its server was lost).
func (r *run) cutShort() bool {
	for _, rec := range r.records {
		if rec.Status == session.StatusCanceled && rec.Error == canceledByUser {
			return true
		}
	}
	return false
}

func (r *run) allArms() []int {
	arms := make([]int, len(r.arms))
	for i := range arms {
		arms[i] = i
	}
	return arms
}

// rounds runs the arms' warmup, then timed rounds until every one of them
// has stopped; unit runs arm i's next trial (or block) and collects it.
// Units that find their server gone are recorded but not counted against
// the cap. Where other targets' arms can go on, they do, and the lost
// target is probed once per round; where none can, the run waits for it
// (up to ServerWait). A target that comes back runs warmup again for its
// arms; one that does not ends its arms. It returns why the user's
// interrupt ended it ("" when it did not) or a write error.
func (r *run) rounds(ctx context.Context, arms []int, unit func(ctx context.Context, i, round, position int) error) (string, error) {
	p := &r.plan.Profile
	sched := newSchedule(p.Order, p.Seed, len(arms))
	for round := 1; ; round++ {
		if ctx.Err() == nil {
			r.revive(ctx)
		}
		active := 0
		position := 0
		for _, k := range sched.next() {
			i := arms[k]
			if r.arms[i].stopped {
				continue
			}
			active++
			t := r.plan.ArmTarget[i]
			if !r.available(t) {
				continue
			}
			position++
			r.plan.Pause.wait(ctx)
			if ctx.Err() != nil {
				return "interrupted before the plan finished", nil
			}
			if err := unit(ctx, i, round, position); err != nil {
				return "", err
			}
			if !r.available(t) && !r.othersGoOn(t) {
				break // the next round waits for it
			}
		}
		r.stopTogether(arms)
		if ctx.Err() != nil {
			if active > 0 && position == 0 {
				return "interrupted while waiting for the server", nil
			}
			return "", nil
		}
		if active == 0 {
			return "", nil
		}
	}
}

// oneTrial runs arm i's next trial, warmup while it has warmup left.
func (r *run) oneTrial(ctx context.Context, i, round, position int) error {
	arm := &r.arms[i]
	phase := session.PhaseTimed
	if arm.warmupLeft > 0 {
		phase = session.PhaseWarmup
		arm.warmupLeft--
	} else {
		r.beginTimed(ctx)
	}
	arm.next++
	label := fmt.Sprintf("%s#%d", r.plan.Profile.Arms[i].Name, arm.next)
	target := r.plan.ArmTarget[i]
	r.monitor.beginTrial(label, target)
	f := r.request(ctx, ctx, i, arm.next, &r.clocks[0], nil)
	f.rec.Phase, f.rec.Round, f.rec.Position = phase, round, position
	f.rec.Concurrency, f.rec.Stream, f.rec.InFlight = 1, 1, 1
	if r.monitor.endTrial(label, target, f.started, f.end, &f.rec) && phase == session.PhaseTimed {
		arm.counterRejected++
	}
	return r.collect(f)
}

// collect writes a finished request to the session files and folds it
// into its arm; it is the only place records are written, so the writer
// needs no lock.
func (r *run) collect(f finished) error {
	rec := f.rec
	arm := &r.arms[f.arm]
	if f.mismatch || f.claimed > 0 {
		arm.mismatches++
	}
	if f.claimed > 0 && !arm.warnedClaim {
		arm.warnedClaim = true
		r.events <- Warning{Text: fmt.Sprintf("%s trial %d: the server said it generated %d tokens, more than %s; the %d tokens its chunks brought are recorded (said once per arm)",
			rec.Arm, rec.Trial, f.claimed, pastBelief(f.claimed, f.maxTokens, len(f.arrivals)), rec.OutputTokens)}
	}
	if err := r.writer.Append(rec, f.arrivals); err != nil {
		return err
	}
	r.records = append(r.records, rec)
	if r.plan.Load != nil {
		r.tokens[session.TrialKey{Arm: rec.Arm, Trial: rec.Trial}] = session.ArrivalsOf(f.arrivals)
	}
	// The trial first, then what it says of the server (a warning, the
	// arm stopped), in the order they happened.
	down := rec.Status == session.StatusError && isDown(f.err)
	r.report(f, down)
	r.requestEnded(f, down)
	return nil
}

// endStatus is the status of a run that a failure ended early: partial
// when it measured something, else failed.
func (r *run) endStatus() string {
	if r.measured() {
		return session.StatusPartial
	}
	return session.StatusFailed
}

// measured reports whether some timed trial succeeded.
func (r *run) measured() bool {
	for _, rec := range r.records {
		if rec.Counted() {
			return true
		}
	}
	return false
}

// report folds a finished trial into its arm and tells the front end. A
// trial that found the server down (serverDown) is not one of the arm's
// timed trials: the cap and the stop rule count measurements, not
// attempts.
func (r *run) report(f finished, serverDown bool) {
	rec := f.rec
	arm := &r.arms[f.arm]
	var point metrics.Point
	if rec.Counted() {
		point = arm.e2e.Add(rec.E2EMs)
	}
	measured := rec.Phase == session.PhaseTimed && !serverDown && rec.Status != session.StatusCanceled &&
		rec.Window != session.WindowRamp && rec.Window != session.WindowDrain
	sharded := r.plan.Shard.Count > 0 // a shard counts its blocks as planned (countBlock)
	switch {
	case rec.Phase == session.PhaseWarmup:
		arm.warmups++
	case measured && !sharded:
		arm.timed++
	}
	r.events <- TrialDone{Record: rec, Point: point, Warmups: arm.warmups, Measured: arm.timed, InFlight: f.inFlight, Waiting: f.waiting}
	if text := lengthMismatch(rec, r.plan.TargetOf(f.arm).Kind.FixedLength, r.bank.shortestOf(r.plan.ArmTarget[f.arm])); text != "" && !arm.warnedLength {
		arm.warnedLength = true
		r.events <- Warning{Text: text}
	}
	if rec.StopReason == backends.StopTruncated && !r.warnedTruncated {
		r.warnedTruncated = true
		r.events <- Warning{Text: fmt.Sprintf("%s trial %d was cut at the context window after %d of %d tokens (stop reason truncated): "+
			"its timings are not those of a full-length trial; lower max_tokens or give the server a larger context",
			rec.Arm, rec.Trial, rec.OutputTokens, f.maxTokens)}
	}
	// The cap counts measurements, at the arm's load; a load block ends
	// the requests it started after its arm stopped.
	if !measured || arm.stopped || sharded {
		return
	}
	d := r.plan.Stop.Decide(rec.Arm, arm.timed, &arm.e2e)
	if d.Reached && !arm.reach.Reached {
		arm.reach = d
		r.events <- ArmReached{Arm: rec.Arm, Decision: d}
	}
	if d.Stop {
		r.stopArm(f.arm, d)
	}
}

// stopArm ends arm i's trials. An arm that reached the stop rule's target
// is recorded by where it reached it, and how far it ran on after.
func (r *run) stopArm(i int, d Decision) {
	arm := &r.arms[i]
	if reach := arm.reach; reach.Reached {
		d = reach
		d.Stop = true
		if n := len(arm.e2e.Values()); n > reach.N {
			d.Reason += fmt.Sprintf("; it ran on to %d, interleaved with the arms still short of the target", n)
		}
	}
	arm.stopped, arm.stop = true, d
	r.events <- ArmStopped{Arm: r.plan.Profile.Arms[i].Name, Decision: d}
}

// stopTogether ends the arms once every one still running has reached
// the stop rule's target: an arm that reached it first runs on with the
// others, so that none runs alone, off the interleaving, on a machine the
// first never saw.
func (r *run) stopTogether(arms []int) {
	for _, i := range arms {
		if !r.arms[i].stopped && !r.arms[i].reach.Reached {
			return
		}
	}
	for _, i := range arms {
		if !r.arms[i].stopped {
			r.stopArm(i, r.arms[i].reach)
		}
	}
}

// finished is one request as a worker hands it to the collector.
type finished struct {
	arm      int
	rec      session.Record
	arrivals []metrics.Arrival
	err      error // the backend's, for the collector's policy
	mismatch bool  // the server's token count differs from the chunks'
	// claimed is a count the server gave that its stream could not have
	// carried (0 where none): the chunks' count was recorded instead.
	claimed  int
	started  time.Time
	end      time.Duration
	inFlight int // the block's requests in flight as its stream goes on
	waiting  int // an open loop's requests due but not yet sent as it ended
	// maxTokens is the token limit the request asked for.
	maxTokens int
}

// shape is what a request asks for where a trace sets it: its prompt,
// the number it goes by in the records (its trace line) and its token
// limit (0: the profile's).
type shape struct {
	prompt    string
	promptID  int
	maxTokens int
}

// request runs arm armIndex's trial number trial on clock and turns it
// into a Record (phase, round and place are the caller's to fill). It
// changes no run state, so load workers call it at once; parent is the
// run's context, ctx the one the request runs under. A nil shape asks
// the profile's prompt of the trial and its max_tokens.
func (r *run) request(parent, ctx context.Context, armIndex, trial int, clock *tokenClock, sh *shape) finished {
	p := &r.plan.Profile
	arm := p.Arms[armIndex]
	chosen, promptID := r.promptOf(armIndex, trial)
	prompt, maxTokens := chosen.Text, p.MaxTokens
	if chosen.MaxTokens > 0 {
		maxTokens = chosen.MaxTokens
	}
	if sh != nil {
		chosen.Messages = nil
		prompt, promptID = sh.prompt, sh.promptID-1
		if sh.maxTokens > 0 {
			maxTokens = sh.maxTokens
		}
	}
	target := r.plan.ArmTarget[armIndex]
	req := backends.Request{Model: r.plan.Targets[target].Target.Model, Prompt: prompt, Messages: chosen.Messages, MaxTokens: maxTokens,
		Temperature: arm.Temperature, TopK: arm.TopK, TopP: arm.TopP, MinP: arm.MinP,
		Seed: armSeed(p.Seed, arm.Seed) + int64(trial), PromptCache: p.AllowsPromptCache(arm), IgnoreEOS: p.FixedLength || chosen.ForceLength,
		Think: string(p.ThinkOf(arm)), Replica: trial - 1} // a fleet's replicas in turn, in schedule order

	if chosen.Turn > 1 && p.ThinkPause > 0 {
		// The user reads the answer and types the next turn: a pause
		// outside the trial's clock and its timeout.
		select {
		case <-time.After(p.ThinkPause):
		case <-ctx.Done():
		}
	}
	trialCtx, cancel := context.WithTimeout(ctx, p.TrialTimeout)
	stale := &r.stale[target]
	req.FreshConnection = stale.Load() >= staleToGoFresh
	clock.reset(time.Now())
	res, genErr := r.backends[target].Generate(trialCtx, req, clock.onChunk)
	if errors.Is(genErr, backends.ErrStale) && trialCtx.Err() == nil {
		// It never reached the server: send it once more, on a connection
		// of its own, its clock started again.
		stale.Add(1)
		req.FreshConnection = true
		clock.reset(time.Now())
		res, genErr = r.backends[target].Generate(trialCtx, req, clock.onChunk)
		if res.Connection != backends.ConnectionNone {
			res.Connection = backends.ConnectionResent
		}
	}
	startedAt := clock.start
	end := time.Since(startedAt)
	cancel()

	rec := session.Record{SessionID: r.sessionID, Arm: arm.Name, Trial: trial, Status: session.StatusOK,
		RequestedPromptTokens: chosen.RequestedTokens, RequestedOutputTokens: chosen.RequestedOutput, Turn: chosen.Turn,
		StartedAt: startedAt.UTC(), PromptID: promptID + 1, PromptTokens: res.PromptTokens, CachedTokens: res.CachedTokens,
		StopReason: res.StopReason, ServerLoadMs: res.ServerLoadMs, ServerPrefillMs: res.ServerPrefillMs,
		ServerDecodeMs: res.ServerDecodeMs, EnergyQuality: session.EnergyUnavailable, Connection: res.Connection,
		EnergyJ: math.NaN(), AvgPowerW: math.NaN(), JPerToken: math.NaN(), PeakRSSMB: math.NaN(),
		ScheduledMs: math.NaN(), QueueMs: math.NaN(), EnergyErrJ: math.NaN()}
	if r.shard != nil {
		rec.Shard, rec.Host = strconv.Itoa(r.shard.Index), r.shard.Host
	}
	if replicas := len(r.plan.Targets[target].Target.Replicas); replicas > 0 {
		rec.Replica = strconv.Itoa(req.Replica % (replicas + 1))
	}
	f := finished{arm: armIndex, err: genErr, started: startedAt, end: end, maxTokens: maxTokens}
	// Reasoning that an inline </think> closed without a <think> began
	// with the output: the backend learnt so only there.
	for i := range min(res.LeadingReasoningChunks, len(clock.arrivals)) {
		clock.arrivals[i].Reasoning = true
	}
	chunkTokens := metrics.ChunkTokens(clock.arrivals)
	rec.OutputTokens = res.OutputTokens
	if rec.OutputTokens > believableCount(maxTokens, len(clock.arrivals)) {
		f.claimed, rec.OutputTokens = rec.OutputTokens, -1
	}
	if rec.OutputTokens < 0 {
		rec.OutputTokens = chunkTokens
	} else if rec.OutputTokens != chunkTokens {
		f.mismatch = true
	}
	if rec.StopReason == "length" && res.OutputTokens >= 0 && res.OutputTokens < maxTokens {
		// A token limit reached below the one asked for is the context
		// window's (the OpenAI API says "length" for both). Only the
		// server's own count can tell: a count of chunks undercounts
		// where a chunk carries several tokens.
		rec.StopReason = backends.StopTruncated
	}
	if genErr != nil {
		rec.Status, rec.Error = classify(parent, ctx, trialCtx, genErr, p.TrialTimeout)
		if t := &r.plan.Targets[target]; len(t.Target.Options) > 0 && errors.Is(genErr, backends.ErrBadRequest) {
			rec.Error += fmt.Sprintf(" (the request carried the options %s, %s; a server refuses one it does not take)",
				backends.OptionsText(t.Target.Options), t.Kind.OptionsGo)
		}
		if req.Think != "" && errors.Is(genErr, backends.ErrBadRequest) {
			rec.Error += fmt.Sprintf(" (the request carried think = %s; a model that cannot think refuses it)", req.Think)
		}
	}
	rec.Timings = metrics.DeriveTimings(clock.arrivals, end, rec.OutputTokens)
	describeTokens(&rec, res, clock.arrivals)
	attachIDs(clock.arrivals, res.TokenIDs)
	f.rec, f.arrivals = rec, clock.arrivals
	return f
}

// attachIDs gives each chunk its tokens' ids, where the backend gave one
// id for each token its chunks counted (else none: they would be put on
// the wrong chunks).
func attachIDs(arrivals []metrics.Arrival, ids []int) {
	if len(ids) != metrics.ChunkTokens(arrivals) {
		for i := range arrivals {
			arrivals[i].IDs = nil
		}
		return
	}
	at := 0
	for i := range arrivals {
		arrivals[i].IDs = ids[at : at+arrivals[i].Tokens : at+arrivals[i].Tokens]
		at += arrivals[i].Tokens
	}
}

// believableCount is the most output tokens a server's count may say for
// a request that asked for maxTokens and streamed chunks: no more than
// asked (a few over, for servers that count the end of sequence), and
// no more than the chunks can carry (backends.MaxChunkTokens each). A
// count past it (a usage of two billion for 25 chunks) is a broken or
// hostile server's.
func believableCount(maxTokens, chunks int) int {
	limit := chunks * backends.MaxChunkTokens
	if maxTokens > 0 {
		limit = min(limit, maxTokens+countSlack)
	}
	return limit
}

// pastBelief says which bound of believableCount a count passed.
func pastBelief(claimed, maxTokens, chunks int) string {
	var past []string
	if maxTokens > 0 && claimed > maxTokens+countSlack {
		past = append(past, fmt.Sprintf("the %d asked for", maxTokens))
	}
	if claimed > chunks*backends.MaxChunkTokens {
		past = append(past, fmt.Sprintf("its %d chunks could carry (%d tokens each at most)", chunks, backends.MaxChunkTokens))
	}
	return strings.Join(past, " and ")
}

// countSlack is how far past the tokens asked a server's count may go:
// some count the end of sequence, or a reasoning model's closing tag.
const countSlack = 16

// describeTokens fills in what a record says of its tokens beyond the
// timings: how many were reasoning, how many chunks they came in, what
// its ITL gaps are between, and whether they arrived in a burst.
func describeTokens(rec *session.Record, res backends.Result, arrivals []metrics.Arrival) {
	rec.ReasoningTokens = res.ReasoningTokens
	if rec.ReasoningTokens < 0 {
		rec.ReasoningTokens = metrics.ReasoningTokens(arrivals)
	}
	rec.Chunks = len(arrivals)
	if len(arrivals) >= 2 {
		rec.ITLPer = session.ITLPerToken
		if !res.ChunkCounts && rec.OutputTokens > len(arrivals) {
			// Chunks carried several tokens, how many each the server
			// did not say: a gap is a chunk's.
			rec.ITLPer = session.ITLPerChunk
		}
	}
	if burst, known := metrics.Burst(arrivals, res.ServerDecodeMs, rec.OutputTokens); known {
		rec.Delivery = session.DeliveryStream
		if burst {
			rec.Delivery = session.DeliveryBurst
		}
	}
}

// canceledByUser is the error of a request the user's interrupt cut.
const canceledByUser = "canceled by the user"

// classify names a failed trial's status and a one-line error. A request
// that the run itself cut (ctx: its load block ended early) is canceled
// like one the user cut: it says nothing about the server.
func classify(parent, ctx, trialCtx context.Context, err error, timeout time.Duration) (string, string) {
	switch {
	case parent.Err() != nil:
		return session.StatusCanceled, canceledByUser
	case ctx.Err() != nil:
		return session.StatusCanceled, "canceled: its load block ended early, when another request found the server down or the session files could not be written"
	case errors.Is(trialCtx.Err(), context.DeadlineExceeded):
		return session.StatusTimeout, fmt.Sprintf("no complete answer within the %v trial timeout", timeout)
	}
	return session.StatusError, err.Error()
}

// tokenClock stamps chunk arrivals against one monotonic start. onChunk is
// the per-token hot path: one clock read and an append into a buffer sized
// for max_tokens, so it does not allocate in steady state. Each stream of
// a load run has its own, so no token waits on a lock.
type tokenClock struct {
	start    time.Time
	arrivals []metrics.Arrival
}

// newClocks makes n clocks with room for maxTokens arrivals each.
func newClocks(n, maxTokens int) []tokenClock {
	clocks := make([]tokenClock, n)
	for i := range clocks {
		clocks[i].arrivals = make([]metrics.Arrival, 0, maxTokens+8)
	}
	return clocks
}

func (c *tokenClock) reset(start time.Time) {
	c.start = start
	c.arrivals = c.arrivals[:0]
}

func (c *tokenClock) onChunk(tokens int, kind backends.TokenKind) {
	c.arrivals = append(c.arrivals, metrics.Arrival{At: time.Since(c.start), Tokens: tokens, Reasoning: kind == backends.Reasoning})
}
