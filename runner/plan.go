// Package runner turns a profile and a backend choice into a Plan and runs
// it: probe, warmup, timed trials with interleaved arms, stop rules and
// cancellation. It stamps every chunk with the monotonic clock, writes each
// trial to the session files before the next starts, and reports progress
// as Events on a channel for any front end.
//
// Decisions where DESIGN.md is silent:
//   - Each round runs every active arm once, in a seeded shuffle that puts
//     each arm first equally often ("shuffle", see schedule) or in the
//     declared order ("alternate"). All arms of a round get the same
//     prompt and seed offset, so only the arms' settings differ.
//   - A session in which no timed trial succeeded is "failed" and the
//     command exits non-zero; degraded trials alone do not fail a session.
//   - A trial that finds the server unreachable or not ready is recorded
//     but not counted against the cap; the run waits for the server (up
//     to ServerWait), runs warmup again if it comes back, and otherwise
//     ends as partial (or failed) with ErrServerLost.
package runner

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/backends/builtin"
	"github.com/tokentop/tokentop/backends/registry"
	"github.com/tokentop/tokentop/backends/untrusted"
	"github.com/tokentop/tokentop/metrics/telemetry"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/runner/arrival"
	"github.com/tokentop/tokentop/session"
)

// Options are the user's choices from the command line. Numeric overrides
// are negative when not given.
type Options struct {
	Backend   string
	URL       string
	Model     string
	Endpoint  string
	APIKeyEnv string
	OutDir    string
	Trials    int
	Warmup    int
	MaxTokens int
	// Threads and DType tune the builtin engine (0 and "" for its defaults).
	Threads int
	DType   string
	// ConvergeTol is the ±fraction for converged_at (0 means 1%).
	ConvergeTol float64
	// UntilCI and CIStatistic override the profile's stop rule (0 and ""
	// keep it).
	UntilCI     float64
	CIStatistic string
	// PowerInterval is the telemetry cadence (0: 50 ms); IdleBaseline the
	// idle power window before the first trial (0 skips it); ServerPID
	// the server process whose memory is recorded (0: found by the
	// backend's local port).
	PowerInterval time.Duration
	IdleBaseline  time.Duration
	ServerPID     int
	// Power picks the power sources (telemetry.PowerChoices; "": auto).
	Power string
	// Replicas are the --url given after the first: a fleet's other
	// replicas, which the arms' requests go round-robin across.
	Replicas []string
	// URLFrom says where URL came from when not from the user's own
	// command line or picker (a grid file names its cells' servers).
	URLFrom string
	// KeyHosts are hosts (host:port) the user lets the API key go to
	// beside those it named itself (--api-key-host).
	KeyHosts []string
	// GPUMetrics are DCGM exporters to read GPUs from (nil keeps the
	// profile's gpu_metrics); GPUMetricsInterval how often (0: 100 ms).
	GPUMetrics         []string
	GPUMetricsInterval time.Duration
	// ServerWait is how long to wait for a server that loads its model or
	// stopped answering (0: DefaultServerWait; NoWait: not at all).
	ServerWait time.Duration
	// Concurrency replaces the profile's levels (nil keeps them).
	Concurrency profiles.Levels
	// Rates replace the profile's open-loop rates, and with them any
	// closed loop (nil keeps the profile's); Arrival, Burstiness and
	// MaxConcurrency replace its arrival process, gamma's shape and the
	// cap in flight (zero values keep the profile's).
	Rates          profiles.Rates
	Arrival        string
	Burstiness     float64
	MaxConcurrency int
	// SLO replaces the profile's [slo] (nil keeps it); Goodput its share
	// (0 keeps it).
	SLO     *profiles.SLO
	Goodput float64
	// Trace is a JSON Lines file of requests to replay at their times,
	// each arm the whole of it, TraceSpeed times as fast (0: 1).
	Trace      string
	TraceSpeed float64
	// PromptsFile draws the prompts from a file (text, JSONL or
	// ShareGPT) in place of the profile's.
	PromptsFile string
	// ServerMetrics is where the servers' Prometheus metrics are read
	// ("": each server's own /metrics; ServerMetricsOff: not read).
	ServerMetrics string
	// InputTokens and OutputTokens set lengths in tokens in place of the
	// profile's (nil: the profile's).
	InputTokens, OutputTokens *profiles.TokenLength
	// MultiTurn sends the prompts file's conversations turn by turn.
	MultiTurn bool
	// Tokenizer is a GGUF file whose tokenizer makes input_tokens'
	// prompts for a server with none tokentop can ask.
	Tokenizer string
	// Duration ends each load arm after that much steady load (0: the
	// profile's, if any).
	Duration time.Duration
	// Shard is this process's share of a load run several generators
	// run together (--shard; Count 0: all of it); StartAt the instant its
	// first timed block begins (--start-at; zero: at once).
	Shard   Shard
	StartAt time.Time
}

// NoOverride marks a numeric option the user did not give.
const NoOverride = -1

// Plan is everything a run needs, resolved and validated.
type Plan struct {
	Profile profiles.Profile // a copy, with overrides applied
	// Targets are the distinct targets the arms run on, in the order of
	// their first arm; ArmTarget[i] indexes the target of arm i.
	Targets     []PlanTarget
	ArmTarget   []int
	OutDir      string
	ConvergeTol float64
	Stop        StopRule
	// Telemetry configures power, energy and memory sampling; how a run is
	// observed is not part of the experiment, so ConfigHash leaves it out.
	Telemetry TelemetryOptions
	// Pause, when set, is checked before each trial; it is a control, not
	// part of the experiment, so ConfigHash leaves it out either.
	Pause *Pause
	// ServerWait bounds the wait for a server that is loading its model or
	// stopped answering; a control too.
	ServerWait time.Duration
	// Load is set for a load run: Load[i] says how Profile.Arms[i], an
	// arm derived from one of the profile's, runs (see expandLoad).
	Load []ArmLoad
	// OpenBlock is how long an open loop's timed block offers requests at
	// its rate (DefaultOpenBlock; tests shorten it).
	OpenBlock time.Duration
	// Trace, when set, is replayed by every arm at TraceSpeed; TraceSHA256
	// is its file's digest, for the manifest.
	// ServerMetrics is Options.ServerMetrics.
	ServerMetrics string
	// MeanAsked is set where the command line asked the stop rule for the
	// mean, which the run overrides on heavy tails (the start says so).
	MeanAsked bool
	// Tokenizer is Options.Tokenizer's, read from TokenizerFile; nil
	// without one.
	Tokenizer     backends.Tokenizer
	TokenizerFile string
	Trace         *arrival.Trace
	TraceSHA256   string
	TraceSpeed    float64
	// TraceSizing is, per target, how a trace's lengths in tokens become
	// prompts (calibrateTrace); nil until the run measures it.
	TraceSizing []traceSizing
	// Shard and StartAt are Options'. Which share of the plan a process
	// sends is not part of the experiment, so ConfigHash leaves them
	// out: every shard's hash is the plan's.
	Shard   Shard
	StartAt time.Time
}

// DefaultOpenBlock is an open loop's timed block: long enough for a queue
// to build where the server is slower than the rate, short enough for the
// arms to interleave.
const DefaultOpenBlock = 5 * time.Second

// PlanTarget is one resolved target and the arms that run on it.
type PlanTarget struct {
	// Name is what the manifest and the arms call it: the backend kind,
	// or kind-<its first arm> where two targets share a kind.
	Name   string
	Kind   backends.Kind
	Target backends.Target
	// Config makes its backend; it holds the API key, never written.
	Config backends.Config
	Arms   []string
	// namedBy is where its URL was named when not by the user (a
	// profile's arm, a grid file): an API key does not go there unless
	// the user allows its host (keyGoesTo).
	namedBy string
}

// Where says where the target runs, for messages.
func (t PlanTarget) Where() string {
	if t.Kind.InProcess {
		return "(in process)"
	}
	return "at " + untrusted.URL(t.Target.URL)
}

// TargetOf is the target arm i runs on.
func (p *Plan) TargetOf(arm int) *PlanTarget { return &p.Targets[p.ArmTarget[arm]] }

// DefaultAPIKeyEnv is read for the openai backend when nothing else is named.
const DefaultAPIKeyEnv = "OPENAI_API_KEY"

// Resolve applies opts to profile and checks the result.
func Resolve(profile *profiles.Profile, opts Options) (*Plan, error) {
	for _, name := range sortedKeys(profile.Models) {
		if _, err := registry.Lookup(name); err != nil {
			return nil, fmt.Errorf("%s: [models] %w", profile.Where("models", name), err)
		}
	}
	if opts.Backend == "" {
		opts.Backend = registry.Default
	}
	kind, err := registry.Lookup(opts.Backend)
	if err != nil {
		return nil, err
	}
	plan := &Plan{Profile: *profile, OutDir: opts.OutDir, ConvergeTol: opts.ConvergeTol}
	p := &plan.Profile
	if opts.Trials != NoOverride {
		if opts.Trials < 1 {
			return nil, fmt.Errorf("--trials %d: use 1 or more timed trials per arm", opts.Trials)
		}
		p.Trials = opts.Trials
	}
	if opts.Warmup != NoOverride {
		if opts.Warmup < 0 {
			return nil, fmt.Errorf("--warmup %d: use 0 or more warmup trials per arm", opts.Warmup)
		}
		p.Warmup = opts.Warmup
	}
	if opts.MaxTokens != NoOverride {
		if opts.MaxTokens < 1 {
			return nil, fmt.Errorf("--max-tokens %d: use 1 or more", opts.MaxTokens)
		}
		p.MaxTokens = opts.MaxTokens
	}
	switch plan.ServerWait = opts.ServerWait; {
	case plan.ServerWait == NoWait:
		plan.ServerWait = 0
	case plan.ServerWait == 0:
		plan.ServerWait = DefaultServerWait
	case plan.ServerWait < 0:
		return nil, fmt.Errorf("--server-wait %v: use a positive duration, or 0 not to wait", opts.ServerWait)
	}
	if plan.ConvergeTol == 0 {
		plan.ConvergeTol = 0.01
	}
	if plan.ConvergeTol < 0 || plan.ConvergeTol >= 1 {
		return nil, fmt.Errorf("convergence tolerance %g: use a fraction in (0, 1)", plan.ConvergeTol)
	}
	if (opts.Threads != 0 || opts.DType != "") && !kind.InProcess {
		return nil, fmt.Errorf("--threads and --dtype tune an in-process engine such as %s; the %s server chooses its own", registry.Default, kind.Name)
	}
	if opts.Threads < 0 {
		return nil, fmt.Errorf("--threads %d: use 1 or more (or 0 for one per core)", opts.Threads)
	}
	if opts.URL != "" {
		if kind.InProcess {
			return nil, fmt.Errorf("--url %s: the %s backend runs in process and takes no URL", opts.URL, kind.Name)
		}
		for _, u := range append([]string{opts.URL}, opts.Replicas...) {
			if !profiles.IsServerURL(u) {
				return nil, fmt.Errorf("--url %q is not a server address; write it like %s", u, kind.DefaultURL)
			}
		}
	}
	if len(opts.Concurrency) > 0 {
		if len(p.Together) > 0 {
			return nil, fmt.Errorf("--concurrency: profile %s runs a together group, whose arms are one stream each; drop the flag", p.Name)
		}
		p.Concurrency, p.Rate = opts.Concurrency, nil
	}
	if err := checkServerMetrics(opts.ServerMetrics); err != nil {
		return nil, err
	}
	plan.ServerMetrics = opts.ServerMetrics
	if opts.PromptsFile != "" {
		if err := p.ReadPrompts(opts.PromptsFile); err != nil {
			return nil, fmt.Errorf("--prompts-file: %w", err)
		}
	}
	if err := applyLengths(p, opts); err != nil {
		return nil, err
	}
	if opts.MultiTurn {
		p.MultiTurn = true
	}
	if opts.Tokenizer != "" {
		if !p.InputTokens.Set() && p.PrefixTokens == 0 {
			return nil, errors.New("--tokenizer makes the prompts of input_tokens and prefix_tokens; set one of them too")
		}
		if plan.Tokenizer, err = builtin.GGUFTokenizer(opts.Tokenizer); err != nil {
			return nil, fmt.Errorf("--tokenizer: %w", err)
		}
		plan.TokenizerFile = filepath.Base(opts.Tokenizer)
	}
	if msg := p.ApplyTurns(); msg != "" {
		return nil, fmt.Errorf("--multi-turn: %s", msg)
	}
	if err := applyOpenLoop(p, opts); err != nil {
		return nil, err
	}
	if err := plan.applyTrace(opts); err != nil {
		return nil, err
	}
	if opts.SLO != nil {
		p.SLO = *opts.SLO
	}
	if opts.Goodput != 0 {
		if !p.SLO.Enabled() {
			return nil, errors.New("--goodput is the share of requests that must meet the SLO; set --slo (or [slo] in the profile) too")
		}
		p.SLO.Goodput = opts.Goodput
	}
	if (p.MultiTurn || p.Turns > 1) && (p.RunsLoad() || plan.Trace != nil) {
		return nil, errors.New("multi_turn sends each arm's conversations one turn at a time, in order; it does not run under --concurrency, --rate or --trace yet")
	}
	if p.SLO.Enabled() && !p.RunsLoad() && plan.Trace == nil {
		return nil, errors.New("--slo judges a load run's requests for its goodput; set --rate or --concurrency too")
	}
	if opts.Duration < 0 {
		return nil, fmt.Errorf("--duration %v: use a positive duration, e.g. 60s", opts.Duration)
	}
	if opts.Duration > 0 {
		p.LoadDuration = opts.Duration
	}
	if plan.Targets, plan.ArmTarget, err = resolveTargets(p, kind, opts); err != nil {
		return nil, err
	}
	if p.RunsLoad() || plan.Trace != nil {
		plan.expandLoad()
	}
	plan.OpenBlock = DefaultOpenBlock
	// Arms at one URL are one server, whatever model each asks of it
	// (Ollama, vLLM and other OpenAI-compatible servers serve several).
	var servers []string
	for _, t := range plan.Targets {
		if p.FixedLength && !t.Kind.FixedLength {
			return nil, fmt.Errorf("%s: fixed_length: the %s backend (arms %s) cannot be told to ignore the end of sequence; remove fixed_length, or use a backend that can (%s)",
				p.Where("fixed_length"), t.Kind.Name, strings.Join(t.Arms, ", "), strings.Join(fixedLengthKinds(), ", "))
		}
		if !t.Kind.InProcess && !slices.Contains(servers, t.Target.URL) {
			servers = append(servers, t.Target.URL)
		}
	}
	if opts.ServerPID != 0 && len(servers) > 1 {
		return nil, fmt.Errorf("--server-pid %d: the arms run on %d servers; each one's memory is found by its local port instead", opts.ServerPID, len(servers))
	}
	if plan.OutDir == "" {
		if plan.OutDir, err = DefaultOutDir(); err != nil {
			return nil, err
		}
	}
	if plan.Telemetry, err = telemetryOptions(opts); err != nil {
		return nil, err
	}
	if plan.Telemetry.GPUMetrics, err = gpuMetrics(p, opts, plan.Targets); err != nil {
		return nil, err
	}
	if opts.UntilCI != 0 {
		p.Stop.UntilCI = opts.UntilCI
	}
	if opts.CIStatistic != "" {
		p.Stop.Statistic = opts.CIStatistic
		plan.MeanAsked = opts.CIStatistic == "mean"
	}
	// A --trials below the profile's own rule's minimum asks for a short
	// fixed run: the rule could never act, so it is off, not an error.
	// A rule asked for on the command line is still checked.
	if opts.Trials != NoOverride && opts.UntilCI == 0 && opts.CIStatistic == "" && p.Stop.Enabled() && p.Stop.Effective().MinTrials > p.Trials {
		p.Stop = profiles.Stop{}
	}
	var stopErrs []error
	p.Stop.Check(p.Trials, func(key, msg string) {
		stopErrs = append(stopErrs, fmt.Errorf("stop rule %s: %s (from --until-ci, --ci-statistic or the profile's [stop])", key, msg))
	})
	if err := errors.Join(stopErrs...); err != nil {
		return nil, err
	}
	if msg := p.DurationProblem(); msg != "" {
		return nil, fmt.Errorf("duration %v: %s", p.LoadDuration, msg)
	}
	p.Stop = p.Stop.Effective()
	plan.Stop = TrialCap{N: p.Trials}
	switch {
	case plan.Trace != nil:
		plan.Stop = Unbounded{} // each arm ends when it has replayed the trace
	case p.LoadDuration > 0:
		plan.Stop = Unbounded{} // the load loop ends each arm by its steady time
	case p.Stop.Enabled():
		plan.Stop = NewUntilCI(p.Stop, p.Trials)
	}
	if err := plan.applyShard(opts); err != nil {
		return nil, err
	}
	return plan, nil
}

// applyShard checks --shard and --start-at against the plan. A shard
// must plan its blocks as every other shard does, from the plan alone:
// a rule that decides from the trials it sees (--until-ci, --duration,
// a together group's rounds) would see only its own share.
func (plan *Plan) applyShard(opts Options) error {
	p := &plan.Profile
	if s := opts.Shard; s.Count > 0 {
		why := ""
		switch {
		case plan.Load == nil:
			return fmt.Errorf("--shard %s splits a load run's requests among load generators; set --rate, --concurrency or --trace too", s)
		case p.Stop.Enabled():
			why = "--until-ci (or the profile's [stop]: pick a profile without one) decides from the trials a shard sees"
		case p.LoadDuration > 0:
			why = "--duration ends a level by the steady windows a shard sees"
		case len(p.Together) > 0:
			why = "a together group's rounds run its arms side by side in one process"
		}
		if why != "" {
			return fmt.Errorf("--shard %s: every shard plans its blocks from the plan alone, and %s; run the shards by the trial cap (--trials), which every shard counts alike", s, why)
		}
		plan.Shard = s
	}
	if t := opts.StartAt; !t.IsZero() {
		if ahead := time.Until(t); ahead > maxStartWait {
			return fmt.Errorf("--start-at %s is %v from now; give a time within %v", t.Format(time.RFC3339), ahead.Round(time.Minute), maxStartWait)
		}
		plan.StartAt = t
	}
	return nil
}

// applyLengths applies --input-tokens, whose prompts replace the
// profile's, and --output-tokens.
func applyLengths(p *profiles.Profile, opts Options) error {
	if l := opts.InputTokens; l != nil {
		if msg := l.Problem(profiles.MaxInputTokens); msg != "" {
			return fmt.Errorf("--input-tokens: %s", msg)
		}
		if opts.PromptsFile != "" {
			return errors.New("--input-tokens makes prompts of its own; drop --prompts-file or --input-tokens")
		}
		p.InputTokens, p.Dataset = *l, nil
	}
	if l := opts.OutputTokens; l != nil {
		if msg := l.Problem(profiles.MaxOutputTokens); msg != "" {
			return fmt.Errorf("--output-tokens: %s", msg)
		}
		p.OutputTokens = *l
	}
	return nil
}

// applyTrace reads --trace for every arm to replay, in place of the
// profile's load: its requests' own prompts, lengths and times.
func (plan *Plan) applyTrace(opts Options) error {
	p := &plan.Profile
	if opts.Trace == "" {
		if opts.TraceSpeed != 0 {
			return errors.New("--trace-speed replays a trace faster or slower; set --trace too")
		}
		return nil
	}
	switch {
	case len(opts.Rates) > 0 || len(opts.Concurrency) > 0:
		return errors.New("--trace: the trace's own times load the server; drop --rate and --concurrency")
	case len(p.Together) > 0:
		return fmt.Errorf("--trace: profile %s runs a together group; a trace is replayed by each arm alone", p.Name)
	case opts.Arrival != "" || opts.Burstiness != 0:
		return errors.New("--trace: the trace's own times are its arrivals; drop --arrival and --burstiness")
	case opts.Duration > 0 || p.LoadDuration > 0 || opts.UntilCI != 0:
		return errors.New("--trace: each arm replays the whole trace, which sets its length; drop --duration and --until-ci")
	case opts.TraceSpeed < 0 || math.IsNaN(opts.TraceSpeed) || math.IsInf(opts.TraceSpeed, 0):
		return fmt.Errorf("--trace-speed %v: use a speed over 0 (2 replays the trace twice as fast)", opts.TraceSpeed)
	}
	t, sum, err := readTrace(opts.Trace)
	if err != nil {
		return err
	}
	// The trace sets each arm's length: no stop rule ends it sooner.
	p.Concurrency, p.Rate, p.Stop = nil, nil, profiles.Stop{}
	for i := range p.Arms {
		p.Arms[i].Concurrency, p.Arms[i].Rate = 0, 0
	}
	plan.Trace, plan.TraceSHA256, plan.TraceSpeed = t, sum, opts.TraceSpeed
	if plan.TraceSpeed == 0 {
		plan.TraceSpeed = 1
	}
	return nil
}

// applyOpenLoop puts the open loop's flags on the profile: --rate
// replaces its rates and its closed loop's levels, the others its
// arrival process and cap, each checked as the profile's keys are.
func applyOpenLoop(p *profiles.Profile, opts Options) error {
	if opts.Trace != "" { // a trace's own times are its arrivals (applyTrace)
		if opts.MaxConcurrency < 0 || opts.MaxConcurrency > backends.MaxConcurrency {
			return fmt.Errorf("--max-concurrency %d: use 1 to %d requests in flight, or leave it out for no cap", opts.MaxConcurrency, backends.MaxConcurrency)
		}
		if opts.MaxConcurrency != 0 {
			p.MaxConcurrency = opts.MaxConcurrency
		}
		return nil
	}
	if len(opts.Rates) > 0 {
		p.Rate, p.Concurrency = opts.Rates, nil
	}
	if opts.Arrival != "" {
		p.Arrival = opts.Arrival
		if opts.Burstiness == 0 && opts.Arrival != arrival.Gamma {
			p.Burstiness = 1
		}
	}
	if opts.Burstiness != 0 {
		p.Burstiness = opts.Burstiness
	}
	if opts.MaxConcurrency != 0 {
		p.MaxConcurrency = opts.MaxConcurrency
	}
	if !p.OpenLoop() {
		if opts.Arrival != "" || opts.Burstiness != 0 || opts.MaxConcurrency != 0 {
			return errors.New("--arrival, --burstiness and --max-concurrency shape an open loop; set --rate too (or rate in the profile)")
		}
		return nil
	}
	// The profile's own checks, on what the flags made of it: a key's
	// flag is its name with dashes.
	if err := p.RateProblems(); err != nil {
		return fmt.Errorf("the open loop of profile %s as the flags set it: %w", p.Name, err)
	}
	return nil
}

func telemetryOptions(opts Options) (TelemetryOptions, error) {
	t := TelemetryOptions{Interval: opts.PowerInterval, IdleBaseline: opts.IdleBaseline, ServerPID: opts.ServerPID, Power: opts.Power}
	if t.Power == "" {
		t.Power = telemetry.PowerAuto
	}
	if err := telemetry.CheckPower(t.Power); err != nil {
		return t, err
	}
	if t.Interval == 0 {
		t.Interval = telemetry.DefaultInterval
	}
	if t.Interval < minPowerInterval {
		return t, fmt.Errorf("--power-interval %v: use %v or more (NVML itself updates no faster)", opts.PowerInterval, minPowerInterval)
	}
	if t.IdleBaseline < 0 {
		return t, fmt.Errorf("--idle-baseline %v: use 0 (none) or a positive duration", opts.IdleBaseline)
	}
	if t.ServerPID < 0 {
		return t, fmt.Errorf("--server-pid %d: use a process id", t.ServerPID)
	}
	t.GPUMetricsInterval = cmp.Or(opts.GPUMetricsInterval, telemetry.DefaultDCGMInterval)
	if t.GPUMetricsInterval < minPowerInterval {
		return t, fmt.Errorf("--gpu-metrics-interval %v: use %v or more", opts.GPUMetricsInterval, minPowerInterval)
	}
	return t, nil
}

// gpuMetrics are the DCGM exporters to read, each with the targets whose
// trials sum its GPUs: the command line's, else the profile's. One
// exporter serves every target; of several, each serves the targets on
// its own host, and every server target must have one.
func gpuMetrics(p *profiles.Profile, opts Options, targets []PlanTarget) ([]GPUMetricsSource, error) {
	urls, where := opts.GPUMetrics, "--gpu-metrics"
	if urls == nil {
		urls, where = p.GPUMetrics, p.Where("gpu_metrics")
	}
	if len(urls) > 0 && opts.Power == telemetry.PowerOff {
		return nil, fmt.Errorf("%s reads the GPUs' power, which --power off turns off; drop one of them", where)
	}
	var out []GPUMetricsSource
	covered := make([]bool, len(targets))
	for _, raw := range urls {
		if msg := profiles.CheckGPUMetricsURL(raw); msg != "" {
			return nil, fmt.Errorf("%s: %s", where, msg)
		}
		src := GPUMetricsSource{URL: raw}
		u, _ := url.Parse(raw)
		for i, t := range targets {
			if len(urls) == 1 || !t.Kind.InProcess && hostOf(t.Target.URL) == u.Hostname() {
				src.Targets = append(src.Targets, i)
				covered[i] = true
			}
		}
		if len(src.Targets) == 0 {
			return nil, fmt.Errorf("%s: %s is on no target's host; with several exporters, each reads the GPUs of the servers on its own host", where, untrusted.URL(raw))
		}
		out = append(out, src)
	}
	for i, t := range targets {
		if len(urls) > 1 && !covered[i] {
			return nil, fmt.Errorf("%s: no exporter on the host of %s (arms %s); name one there, or a single exporter for every target", where, t.Where(), strings.Join(t.Arms, ", "))
		}
	}
	return out, nil
}

// hostOf is a server address's host name, "" where it has none.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// resolveTargets gives each arm its target: what the arm sets itself,
// else, on the run's backend kind, the command line's choice, else the
// profile's [models]. Arms with equal targets share one.
func resolveTargets(p *profiles.Profile, base backends.Kind, opts Options) ([]PlanTarget, []int, error) {
	var targets []PlanTarget
	armTarget := make([]int, len(p.Arms))
	used := map[string]bool{} // the command-line flags some arm took
	for i, a := range p.Arms {
		kind := base
		if a.Backend != "" {
			k, err := registry.Lookup(a.Backend)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: arm %s: backend: %w", p.WhereArm(i, "backend"), a.Name, err)
			}
			kind = k
		}
		t, err := resolveArmTarget(p, i, kind, kind.Name == base.Name, opts, used)
		if err != nil {
			return nil, nil, err
		}
		namedBy := "" // the user's own
		switch {
		case len(a.URL) > 0 && !a.FromCommandLine():
			namedBy = p.WhereArm(i, "url")
		case len(a.URL) == 0 && opts.URL != "" && opts.URLFrom != "":
			namedBy = opts.URLFrom
		}
		armTarget[i] = slices.IndexFunc(targets, func(pt PlanTarget) bool { return pt.Target.Key() == t.Key() })
		if armTarget[i] < 0 {
			armTarget[i] = len(targets)
			cfg := backends.Config{URL: t.URL, Replicas: t.Replicas, Endpoint: t.Endpoint, Threads: t.Threads, DType: t.DType, Options: t.Options}
			if t.APIKeyEnv != "" {
				cfg.APIKey = os.Getenv(t.APIKeyEnv)
			}
			targets = append(targets, PlanTarget{Kind: kind, Target: t, Config: cfg, namedBy: namedBy})
		}
		if namedBy == "" { // one arm the user named it for is enough
			targets[armTarget[i]].namedBy = ""
		}
		targets[armTarget[i]].Arms = append(targets[armTarget[i]].Arms, a.Name)
	}
	for _, t := range targets {
		if err := keyGoesTo(t, opts.KeyHosts); err != nil {
			return nil, nil, err
		}
	}
	for _, flag := range []struct {
		name, value string
	}{{"url", opts.URL}, {"model", opts.Model}, {"dtype", opts.DType}, {"threads", strconv.Itoa(opts.Threads)}} {
		if flag.value != "" && flag.value != "0" && !used[flag.name] {
			return nil, nil, fmt.Errorf("--%s %s would change no arm: every arm of profile %s sets its own %s or runs on another backend than %s; drop the flag, or set it in an --arm", flag.name, flag.value, p.Name, flag.name, base.Name)
		}
	}
	for i := range targets {
		targets[i].Name = targets[i].Kind.Name
		for j := range targets {
			if j != i && targets[j].Kind.Name == targets[i].Kind.Name {
				targets[i].Name += "-" + targets[i].Arms[0]
				break
			}
		}
	}
	return targets, armTarget, nil
}

// resolveArmTarget is resolveTargets for arm i on kind; onRunKind says the
// command line's flags apply (the arm runs on the run's backend kind), and
// used records the flags it took.
func resolveArmTarget(p *profiles.Profile, i int, kind backends.Kind, onRunKind bool, opts Options, used map[string]bool) (backends.Target, error) {
	a := p.Arms[i]
	fail := func(key, format string, args ...any) (backends.Target, error) {
		return backends.Target{}, fmt.Errorf("%s: arm %s: %s: %s", p.WhereArm(i, strings.Split(key, ".")...), a.Name, key, fmt.Sprintf(format, args...))
	}
	fromFlag := func(flag, armValue, flagValue string) string {
		if armValue != "" || !onRunKind || flagValue == "" {
			return armValue
		}
		used[flag] = true
		return flagValue
	}
	t := backends.Target{Kind: kind.Name, Options: a.Options}
	if kind.InProcess {
		if len(a.URL) > 0 {
			return fail("url", "the %s backend runs in process and takes no URL", kind.Name)
		}
	} else {
		for _, u := range a.URL {
			if !profiles.IsServerURL(u) {
				return fail("url", "%q is not a server address; write it like %s", u, kind.DefaultURL)
			}
		}
		urls := []string(a.URL)
		if len(urls) == 0 && onRunKind && opts.URL != "" {
			urls, used["url"] = append([]string{opts.URL}, opts.Replicas...), true
		}
		if len(urls) > session.MaxReplicas {
			return fail("url", "%d addresses; a fleet is at most %d replicas", len(urls), session.MaxReplicas)
		}
		t.URL = kind.DefaultURL
		if len(urls) > 0 {
			t.URL, t.Replicas = urls[0], urls[1:]
		}
		if a.ModelPath != "" {
			return fail("model_path", "names a model file for an in-process engine such as %s; the %s server loads its own (set model instead)", registry.Default, kind.Name)
		}
		for _, knob := range []struct {
			key string
			set bool
		}{{"dtype", a.DType != ""}, {"threads", a.Threads != 0}} {
			if knob.set {
				return fail(knob.key, "tunes an in-process engine such as %s; the %s server chooses its own", registry.Default, kind.Name)
			}
		}
	}
	if onRunKind {
		t.Endpoint = opts.Endpoint
	}
	if t.Model = fromFlag("model", cmp.Or(a.ModelPath, a.Model), opts.Model); t.Model == "" {
		t.Model = p.Models[kind.Name]
	}
	if t.Model == "" && !kind.ModelOptional {
		if a.Backend == "" {
			return backends.Target{}, fmt.Errorf("no model for backend %s: pass --model, or add %s = \"...\" under [models] in profile %s", kind.Name, kind.Name, p.Name)
		}
		return fail("model", "no model for backend %s: set model in the arm, or add %s = \"...\" under [models]", kind.Name, kind.Name)
	}
	if kind.InProcess {
		if t.Threads = a.Threads; t.Threads == 0 && onRunKind && opts.Threads != 0 {
			t.Threads, used["threads"] = opts.Threads, true
		}
		if t.DType = fromFlag("dtype", a.DType, opts.DType); t.DType != "" && !slices.Contains(kind.DTypes, t.DType) {
			return fail("dtype", "%q is not a weight format of %s; use one of %s", t.DType, kind.Name, strings.Join(kind.DTypes, ", "))
		}
	}
	if err := kind.CheckOptions(a.Options); err != nil {
		// Point at the option named, else at the first.
		key, msg := "options."+slices.Sorted(maps.Keys(a.Options))[0], err.Error()
		if named, rest, ok := strings.Cut(msg, ": "); ok && strings.HasPrefix(named, "options.") {
			key, msg = named, rest
		}
		return fail(key, "%s", msg)
	}
	t.APIKeyEnv = cmp.Or(opts.APIKeyEnv, p.APIKeyEnv)
	if t.APIKeyEnv == "" && kind.Name == "openai" {
		t.APIKeyEnv = DefaultAPIKeyEnv
	}
	return t, nil
}

// keyGoesTo says why a target's API key may not go to its server: one
// named by a file (a shared profile, a grid), at a host the user did not
// allow, would be sent the user's key with every request. nil where the
// user named it, allowed its host, or it is the backend's usual local
// address.
func keyGoesTo(t PlanTarget, allowed []string) error {
	if t.Config.APIKey == "" || t.namedBy == "" || t.Target.URL == t.Kind.DefaultURL {
		return nil
	}
	u, err := url.Parse(t.Target.URL)
	if err == nil && slices.ContainsFunc(allowed, func(h string) bool { return strings.EqualFold(h, u.Host) }) {
		return nil
	}
	host := "its host"
	if err == nil {
		host = untrusted.Line(u.Host)
	}
	return fmt.Errorf("%s names the server %s for arms %s; tokentop sends your API key ($%s) only to servers you name yourself: "+
		"to send it there, add --api-key-host %s; to run without it, unset %s",
		t.namedBy, untrusted.URL(t.Target.URL), strings.Join(t.Arms, ", "), t.Target.APIKeyEnv, host, t.Target.APIKeyEnv)
}

// Prepare resolves opts against profile and creates a backend per target,
// the steps every front end takes before Run.
func Prepare(profile *profiles.Profile, opts Options) (*Plan, []backends.Backend, error) {
	plan, err := Resolve(profile, opts)
	if err != nil {
		return nil, nil, err
	}
	var bs []backends.Backend
	for _, t := range plan.Targets {
		b, err := t.Kind.Open(t.Config)
		if err != nil {
			return nil, nil, fmt.Errorf("%s backend for arms %s: %w", t.Kind.Name, strings.Join(t.Arms, ", "), err)
		}
		bs = append(bs, b)
	}
	return plan, bs, nil
}

func fixedLengthKinds() []string {
	var names []string
	for _, k := range registry.Kinds {
		if k.FixedLength {
			names = append(names, k.Name)
		}
	}
	return names
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// DefaultOutDir is tokentop/sessions under this OS's folder for a
// user's application data.
func DefaultOutDir() (string, error) {
	dir, err := userDataDir(runtime.GOOS, os.Getenv, os.UserHomeDir)
	if err != nil {
		return "", fmt.Errorf("no folder for sessions (%v); pass --out", err)
	}
	return filepath.Join(dir, "tokentop", "sessions"), nil
}

// userDataDir is where goos keeps a user's application data:
// %LocalAppData% on Windows, ~/Library/Application Support on macOS,
// $XDG_DATA_HOME or ~/.local/share elsewhere.
func userDataDir(goos string, getenv func(string) string, home func() (string, error)) (string, error) {
	switch goos {
	case "windows":
		if dir := getenv("LocalAppData"); dir != "" {
			return dir, nil
		}
		return "", errors.New("%LocalAppData% is not set")
	case "darwin", "ios":
		h, err := home()
		if err != nil {
			return "", err
		}
		return filepath.Join(h, "Library", "Application Support"), nil
	}
	if dir := getenv("XDG_DATA_HOME"); filepath.IsAbs(dir) {
		return dir, nil
	}
	h, err := home()
	if err != nil {
		return "", err
	}
	return filepath.Join(h, ".local", "share"), nil
}

// ConfigHash is the sha256 of what makes two runs the same experiment: the
// resolved plan and every arm's target (kind, URL, endpoint, model,
// tuning, options). It leaves out where files go and any secret.
func (p *Plan) ConfigHash() string {
	canonical := struct {
		Profile     profiles.Profile
		Targets     []backends.Target
		ArmTarget   []int
		ConvergeTol float64
	}{Profile: p.Profile, ArmTarget: p.ArmTarget, ConvergeTol: p.ConvergeTol}
	for _, t := range p.Targets {
		canonical.Targets = append(canonical.Targets, t.Target)
	}
	// A prompts file counts by its digest (in Dataset), not where it lies.
	canonical.Profile.Source, canonical.Profile.PromptsFile, canonical.Profile.PromptFile = "", "", ""
	data, err := json.Marshal(canonical)
	if err != nil {
		panic(err) // plain data: cannot fail
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
