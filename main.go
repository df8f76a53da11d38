// Command tokentop benchmarks LLM inference: it runs warmup and timed
// generation trials against a backend, saves them as a session, and
// compares sessions. This file is wiring only: flags, subcommands, exit
// codes.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/term"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/backends/registry"
	"github.com/tokentop/tokentop/backends/untrusted"
	"github.com/tokentop/tokentop/metrics/telemetry"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/runner"
	"github.com/tokentop/tokentop/runner/grid"
	"github.com/tokentop/tokentop/session"
	"github.com/tokentop/tokentop/ui"
	"github.com/tokentop/tokentop/ui/htmlreport"
)

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
	// exitCrashed is sysexits' EX_SOFTWARE: an internal error, a bug.
	exitCrashed     = 70
	exitInterrupted = 130
)

const usage = `tokentop benchmarks LLM inference live.

Usage:
  tokentop                      open the picker (the default study: greedy vs
                                sampling on the built-in engine)
  tokentop run [flags]          run a profile's trials against a backend, on
                                the live dashboard
  tokentop compare A.toml B.toml [...]
                                compare sessions (or A.toml#arm1 A.toml#arm2);
                                --tui for the compare screen
  tokentop matrix GRID.toml     run a grid: every combination of its axes, one
                                session per cell, resumable (built-in grids:
                                engine-grid, phase-grid, servers-grid);
                                'tokentop compare GRID-FOLDER' ranks the cells
  tokentop report S.toml [...]  repeatability report: distribution shape,
                                outliers, trials needed, warmup
  tokentop export S.toml [...]  every request as JSON Lines or CSV, or
                                --summary: each arm's percentiles as JSON
  tokentop merge DIR... --out DIR
                                join the sessions of a load run's shards
                                (run --shard I/N) into one session
  tokentop profiles             list built-in and user profiles
  tokentop backends [--url URL] show which backends are reachable
  tokentop --version            the module version and the commit it was built from

Run 'tokentop COMMAND -h' for a command's flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		// The main job: no server, no download, no flags. Without a
		// terminal there is no picker to show, so the default study runs
		// headless.
		if !isTerminal(stdout) {
			return cmdRun([]string{"--headless"}, stdout, stderr)
		}
		return cmdPicker(stdout, stderr)
	}
	switch args[0] {
	case "help":
		// 'tokentop help run' is 'tokentop run -h'.
		if len(args) > 1 {
			if _, known := commands[args[1]]; known {
				return run([]string{args[1], "-h"}, stdout, stderr)
			}
			return unknownCommand(args[1], stderr)
		}
		fmt.Fprint(stdout, usage)
		return exitOK
	case "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	case "--version", "-version", "version":
		fmt.Fprintf(stdout, "tokentop %s (%s, %s)\n", runner.ToolVersion(), cmp.Or(runner.VCSRevision(), "no VCS revision in this build"), runtime.Version())
		return exitOK
	}
	if command, known := commands[args[0]]; known {
		return command(args[1:], stdout, stderr)
	}
	return unknownCommand(args[0], stderr)
}

// commands are the subcommands by name.
var commands = map[string]func(args []string, stdout, stderr io.Writer) int{
	"run":      cmdRun,
	"compare":  cmdCompare,
	"report":   cmdReport,
	"export":   cmdExport,
	"matrix":   cmdMatrix,
	"merge":    cmdMerge,
	"profiles": cmdProfiles,
	"backends": cmdBackends,
}

// unknownCommand says so in one line, which stays on an 80x24 screen
// where the whole usage would scroll it away, with the nearest command
// where a typo is likely.
func unknownCommand(name string, stderr io.Writer) int {
	line := fmt.Sprintf("tokentop: unknown command %q", untrusted.Line(name))
	if near := nearestCommand(name); near != "" {
		line += fmt.Sprintf("; did you mean %s?", near)
	}
	fmt.Fprintln(stderr, line+" ('tokentop -h' lists the commands)")
	return exitUsage
}

// nearestCommand is the command within two edits of name (a typo), or "".
func nearestCommand(name string) string {
	best, bestDistance := "", 3
	for command := range commands {
		if d := editDistance(strings.ToLower(name), command); d < bestDistance || d == bestDistance && command < best {
			best, bestDistance = command, d
		}
	}
	return best
}

// editDistance is Levenshtein's distance between a and b, in bytes.
func editDistance(a, b string) int {
	previous := make([]int, len(b)+1)
	current := make([]int, len(b)+1)
	for j := range previous {
		previous[j] = j
	}
	for i := 1; i <= len(a); i++ {
		current[0] = i
		for j := 1; j <= len(b); j++ {
			substitution := previous[j-1]
			if a[i-1] != b[j-1] {
				substitution++
			}
			current[j] = min(previous[j]+1, current[j-1]+1, substitution)
		}
		previous, current = current, previous
	}
	return previous[len(b)]
}

// percentFlag is a fraction written as a percent ("1%") or as a plain
// fraction ("0.01").
type percentFlag float64

func (p *percentFlag) String() string { return strconv.FormatFloat(float64(*p)*100, 'g', -1, 64) + "%" }

func (p *percentFlag) Set(s string) error {
	v, err := parsePercent(s)
	if err != nil {
		return err
	}
	*p = percentFlag(v)
	return nil
}

func parsePercent(s string) (float64, error) {
	number, percent := strings.CutSuffix(strings.TrimSpace(s), "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(number), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a margin; write it like 1%% or 0.01", s)
	}
	if percent {
		v /= 100
	}
	if v <= 0 || v >= 1 {
		return 0, fmt.Errorf("%q is out of range; use a margin between 0%% and 100%%, e.g. 1%%", s)
	}
	return v, nil
}

func cmdRun(args []string, stdout, stderr io.Writer) int {
	fs := newCommand("run", "tokentop run [flags]", []string{"tokentop run --profile quick --trials 50", "tokentop run --until-ci 1% --trials 2000", "tokentop run --arm name=f32 --arm name=q8,dtype=q8_0", "tokentop run --backend ollama --model llama3.2:1b --profile quick", "tokentop run --backend openai --url http://127.0.0.1:8000/v1 --model M --endpoint chat", "tokentop run --profile quick --concurrency 1,2,4,8 --duration 30s", "tokentop run --profile quick --rate 10,20,40 --trials 200", "tokentop run --backend llamacpp --trace mooncake.jsonl --trace-speed 2"}, stdout, stderr)
	profileArg := fs.String("profile", profiles.DefaultName, "profile name or path to a .toml file")
	opts := runner.Options{}
	fs.StringVar(&opts.Backend, "backend", registry.Default, "backend: "+strings.Join(registry.Names(), ", "))
	fs.Func("url", "server URL (default: the backend's usual local address); repeat for a fleet's replicas, which the requests go round-robin across", func(v string) error {
		if opts.URL == "" {
			opts.URL = v
		} else {
			opts.Replicas = append(opts.Replicas, v)
		}
		return nil
	})
	fs.StringVar(&opts.Model, "model", "", "model name (default: the profile's model for the backend)")
	fs.StringVar(&opts.Endpoint, "endpoint", "", "openai backend: completions (default) or chat")
	fs.StringVar(&opts.APIKeyEnv, "api-key-env", "", "environment variable holding the API key (openai default: "+runner.DefaultAPIKeyEnv+")")
	fs.Func("api-key-host", keyHostHelp, func(v string) error { opts.KeyHosts = append(opts.KeyHosts, v); return nil })
	fs.StringVar(&opts.OutDir, "out", "", "sessions folder (default: tokentop/sessions under the user data folder)")
	fs.IntVar(&opts.Trials, "trials", runner.NoOverride, "timed trials per arm (overrides the profile)")
	fs.IntVar(&opts.Warmup, "warmup", runner.NoOverride, "warmup trials per arm (overrides the profile)")
	fs.IntVar(&opts.MaxTokens, "max-tokens", runner.NoOverride, "tokens to generate per trial (overrides the profile)")
	var modelPaths []string
	fs.Func("model-path", "builtin: a llama2.c checkpoint (.bin, tokenizer.bin beside it) or a .gguf file; repeat to compare models, an arm each (e.g. --profile cpu-models)", func(v string) error {
		modelPaths = append(modelPaths, v)
		return nil
	})
	fs.IntVar(&opts.Threads, "threads", 0, "builtin: worker threads (default: one per core)")
	fs.StringVar(&opts.DType, "dtype", "", "builtin: convert the weights to f32 or q8_0 (default: run them as the file stores them)")
	fs.StringVar(&opts.Power, "power", telemetry.PowerAuto, "power sources: auto (NVIDIA GPUs through NVML, CPU packages through powercap; on a Mac run as root, powermetrics), powermetrics (macOS, root) or off")
	fs.DurationVar(&opts.PowerInterval, "power-interval", telemetry.DefaultInterval, "power and memory sampling cadence")
	fs.DurationVar(&opts.IdleBaseline, "idle-baseline", runner.DefaultIdleBaseline, "idle power measured before the first trial (0 skips it; only when a power source exists)")
	fs.IntVar(&opts.ServerPID, "server-pid", 0, "the server process whose peak memory the trials record (default: found by the backend's local port)")
	fs.Func("gpu-metrics", "a DCGM exporter (http://gpu-node:9400/metrics) whose GPUs' power and energy the trials of the servers on its host sum, in place of this machine's; repeat for several hosts", func(v string) error {
		opts.GPUMetrics = append(opts.GPUMetrics, v)
		return nil
	})
	fs.DurationVar(&opts.GPUMetricsInterval, "gpu-metrics-interval", telemetry.DefaultDCGMInterval, "how often each --gpu-metrics exporter is read")
	fs.DurationVar(&opts.ServerWait, "server-wait", runner.DefaultServerWait, "how long to wait for a server that is not started yet, is loading its model, or stopped answering mid-run (0: not at all)")
	fs.Var((*percentFlag)(&opts.UntilCI), "until-ci", "stop each arm once both ends of its e2e's anytime-valid 95% interval (confidence sequence) are within this ±margin of the estimate, e.g. 1%; --trials stays the cap")
	fs.StringVar(&opts.CIStatistic, "ci-statistic", "", "with --until-ci: median (default; exact) or mean (asymptotic, from 30 trials)")
	fs.Func("concurrency", "keep N requests in flight per arm (a closed loop), or sweep levels: --concurrency 1,2,4,8", func(flag string) error {
		levels, err := profiles.ParseLevels(flag)
		opts.Concurrency = levels
		return err
	})
	fs.DurationVar(&opts.Duration, "duration", 0, "with --concurrency or --rate: run each level until its steady windows add up to this (e.g. 60s), instead of --trials")
	fs.Func("rate", "send each arm's requests on a schedule at R per second whatever the server does (an open loop), or sweep rates: --rate 1,2,4,8", func(flag string) error {
		rates, err := profiles.ParseRates(flag)
		opts.Rates = rates
		return err
	})
	fs.StringVar(&opts.Arrival, "arrival", "", "with --rate: how requests arrive: poisson (default), constant or gamma")
	fs.Float64Var(&opts.Burstiness, "burstiness", 0, "with --arrival gamma: its shape (1 is Poisson, below 1 burstier, above 1 more regular)")
	fs.Func("slo", "bounds each request must meet, in ms, for goodput: --slo ttft_ms=500,itl_ms=50 (an open loop's are judged from each request's due time)", func(flag string) error {
		slo, err := profiles.ParseSLO(flag)
		opts.SLO = &slo
		return err
	})
	fs.Func("goodput", "with --slo: the share of requests that must meet it, e.g. 90% (default 90%)", func(flag string) error {
		v, err := profiles.ParseGoodput(flag)
		opts.Goodput = v
		return err
	})
	for _, l := range []struct {
		name, usage string
		to          **profiles.TokenLength
	}{
		{"input-tokens", "make each prompt N tokens long, as the server's tokenizer counts (512), or drawn: 64-1024 (uniform) or mean=512,stddev=128,min=64,max=1024", &opts.InputTokens},
		{"output-tokens", "ask each request for N output tokens and the server to generate them all; a number or a distribution as --input-tokens", &opts.OutputTokens},
	} {
		fs.Func(l.name, l.usage, func(flag string) error {
			length, err := profiles.ParseTokenLength(flag)
			*l.to = &length
			return err
		})
	}
	fs.StringVar(&opts.Tokenizer, "tokenizer", "", "a GGUF file whose tokenizer makes --input-tokens' prompts where the server has none tokentop can ask (Ollama, SGLang)")
	fs.BoolVar(&opts.MultiTurn, "multi-turn", false, "with --prompts-file of conversations: send each conversation's turns in order, each carrying the conversation so far")
	fs.StringVar(&opts.ServerMetrics, "server-metrics", "", "where the servers' Prometheus metrics are read each second into <stem>.server.csv (default: each server's own /metrics), or off")
	fs.StringVar(&opts.PromptsFile, "prompts-file", "", "draw the prompts from a file, in a seeded order every arm shares: plain text (one per line), JSONL ({\"prompt\"}, {\"text\"} or {\"messages\"} per line) or ShareGPT JSON")
	fs.StringVar(&opts.Trace, "trace", "", "replay a JSON Lines trace of requests at their times, each arm the whole of it: Mooncake's {\"timestamp\", \"input_length\", \"output_length\", \"hash_ids\"} or {\"timestamp\", \"prompt\", \"max_tokens\"} (timestamps in ms)")
	fs.Float64Var(&opts.TraceSpeed, "trace-speed", 0, "with --trace: replay it this many times as fast (default 1)")
	fs.IntVar(&opts.MaxConcurrency, "max-concurrency", 0, "with --rate: at most N requests in flight; one due past the cap waits in the client, and its wait counts (default: no cap)")
	var arms []profiles.Arm
	fs.Func("arm", "an arm of your own, replacing the profile's (repeat for an A/B): key=value pairs, e.g. name=q8,dtype=q8_0 or name=ctx4k,backend=ollama,options.num_ctx=4096", func(flag string) error {
		arm, err := profiles.ParseArmFlag(flag)
		arms = append(arms, arm)
		return err
	})
	fs.Func("shard", "run this process's share of a load run that N load generators run together: I/N (0 ≤ I < N), or auto/N on a Kubernetes Indexed Job ("+runner.JobIndexVariable+"); 'tokentop merge' joins the shards' sessions", func(v string) error {
		s, err := runner.ParseShard(v, os.Getenv)
		opts.Shard = s
		return err
	})
	fs.Func("start-at", "begin the first timed block at this RFC 3339 time (warmup before it), the same for every shard: e.g. 2026-11-28T22:00:00Z", func(v string) error {
		t, err := runner.ParseStartAt(v)
		opts.StartAt = t
		return err
	})
	headless := fs.Bool("headless", false, "print plain progress lines instead of the dashboard (the default when stdout is not a terminal)")
	positional, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(positional) > 0 {
		fmt.Fprintf(stderr, "tokentop run: unexpected argument %q\n", positional[0])
		return exitUsage
	}
	if err := typedNoOverride(fs.FlagSet); err != nil {
		printErr(stderr, err)
		return exitUsage
	}
	noWaitIfZero(&opts)
	if len(modelPaths) > 0 && opts.Model != "" {
		fmt.Fprintln(stderr, "tokentop run: give --model or --model-path, not both")
		return exitUsage
	}
	if len(modelPaths) > 1 && len(arms) > 0 {
		fmt.Fprintln(stderr, "tokentop run: --model-path given more than once makes the arms; give the models as --arm name=…,model_path=… flags or as --model-path flags, not both")
		return exitUsage
	}
	if len(modelPaths) == 1 {
		opts.Model = modelPaths[0]
	}
	profile, err := profiles.Find(*profileArg)
	switch {
	case err == nil && len(arms) > 0:
		profile, err = profile.WithArms(arms)
	case err == nil && len(modelPaths) > 1:
		profile, err = profile.PerModel(modelPaths)
	}
	if err != nil {
		printErr(stderr, err)
		return exitUsage
	}
	plan, backend, err := runner.Prepare(profile, opts)
	if err != nil {
		printErr(stderr, err)
		return exitUsage
	}

	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	if !*headless && isTerminal(stdout) {
		return runTUI(ctx, ui.NewRun(ctx, tuiConfig(opts), plan, backend), stdout, stderr)
	}
	events := make(chan runner.Event, 64)
	var printed sync.WaitGroup
	printed.Go(func() { ui.Headless(stdout, terminalWidth(stdout), events) })
	status, err := runner.Run(ctx, plan, backend, events)
	printed.Wait()
	switch {
	case errors.Is(err, runner.ErrServerLost):
		printErr(stderr, fmt.Errorf("%w; what was measured is saved (status %s)", err, status))
		return exitFailed
	case err != nil:
		printErr(stderr, err)
		return exitFailed
	case ctx.Err() != nil:
		interrupted(stderr, status)
		return exitInterrupted
	case status == session.StatusFailed:
		fmt.Fprintln(stderr, "tokentop: no timed trial succeeded; see the error column of the trials CSV")
		return exitFailed
	}
	return exitOK
}

// interrupted says what an interrupt left: a partial session, a complete
// one where it came after the plan's last answer, or none where no run
// had started (status "").
func interrupted(stderr io.Writer, status string) {
	if status == "" {
		fmt.Fprintln(stderr, "tokentop: interrupted")
		return
	}
	fmt.Fprintf(stderr, "tokentop: interrupted; the session is saved as %s\n", status)
}

// typedNoOverride rejects a count flag given the value that stands for
// "not given" (runner.NoOverride, -1): typed, it is as wrong as -3, not a
// quiet fallback to the profile's count.
func typedNoOverride(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		if g, ok := f.Value.(flag.Getter); ok && err == nil {
			if n, isInt := g.Get().(int); isInt && n == runner.NoOverride && f.DefValue == strconv.Itoa(runner.NoOverride) {
				err = fmt.Errorf("--%s %d: a count cannot be negative; leave the flag out for the profile's value", f.Name, n)
			}
		}
	})
	return err
}

// noWaitIfZero makes --server-wait 0 mean what it says: no wait, where
// a zero runner.Options.ServerWait means the default.
func noWaitIfZero(opts *runner.Options) {
	if opts.ServerWait == 0 {
		opts.ServerWait = runner.NoWait
	}
}

// outputFlags are the flags of the commands that print statistics.
type outputFlags struct {
	format         *string
	resamples      *int
	html, svg, png *string
}

func addOutputFlags(fs *flag.FlagSet) outputFlags {
	return outputFlags{
		format:    fs.String("format", "text", "output format: "+strings.Join(session.Formats, ", ")),
		resamples: fs.Int("resamples", session.DefaultTestOptions.Resamples, "bootstrap resamples behind each interval"),
		html:      fs.String("html", "", "write a self-contained HTML report (verdicts, caveats, charts, set-up) to this file instead of printing"),
		svg:       fs.String("svg", "", "write each chart as an SVG file into this folder instead of printing"),
		png:       fs.String("png", "", "write each chart as a PNG file into this folder instead of printing"),
	}
}

// pictures reports whether any of --html, --svg or --png was given.
func (o outputFlags) pictures() bool { return *o.html != "" || *o.svg != "" || *o.png != "" }

// writePictures builds the HTML report of refs and writes what the flags
// ask for, saying where each file went.
func (o outputFlags) writePictures(refs []session.Ref, sessions []*session.Session, metricNames []string, stdout io.Writer) error {
	r, err := htmlreport.Build(refs, sessions, metricNames, o.testOptions())
	if err != nil {
		return err
	}
	return o.save(r, stdout)
}

// save writes the report as the flags ask, saying where each file went.
func (o outputFlags) save(r *htmlreport.Report, stdout io.Writer) error {
	if *o.html != "" {
		if err := r.Save(*o.html); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
		fmt.Fprintf(stdout, "wrote %s\n", *o.html)
	}
	for _, files := range []struct{ ext, dir string }{{"svg", *o.svg}, {"png", *o.png}} {
		ext, dir := files.ext, files.dir
		if dir == "" {
			continue
		}
		paths, err := r.SaveCharts(dir, ext)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %d %s charts to %s\n", len(paths), ext, dir)
	}
	return nil
}

// check says what is wrong with the flags before any session is read.
func (o outputFlags) check(command string, stderr io.Writer) bool {
	if err := session.CheckFormat(*o.format); err != nil {
		fmt.Fprintf(stderr, "tokentop %s: --format: %v\n", command, err)
		return false
	}
	if *o.resamples < 1 {
		fmt.Fprintf(stderr, "tokentop %s: --resamples %d: use 1 or more (10000 for a final report)\n", command, *o.resamples)
		return false
	}
	return true
}

func (o outputFlags) testOptions() session.TestOptions {
	return session.TestOptions{Resamples: *o.resamples, Seed: session.DefaultTestOptions.Seed}
}

func cmdCompare(args []string, stdout, stderr io.Writer) int {
	fs := newCommand("compare", "tokentop compare A.toml B.toml [...] | S.toml#arm1 S.toml#arm2 | GRID-FOLDER [flags]", []string{"tokentop compare A.toml B.toml", "tokentop compare S.toml#greedy S.toml#top-k-40 --metric e2e_ms", "tokentop compare A.toml B.toml --html report.html", "tokentop compare GRID-FOLDER --format md", "tokentop compare A.toml B.toml --tui"}, stdout, stderr)
	metric := fs.String("metric", "", "compare only this metric (default: "+strings.Join(session.CompareMetrics, ", ")+"); for a grid folder, the metric its cells are ranked on (default e2e_ms)")
	tui := fs.Bool("tui", false, "open the compare screen instead of printing")
	out := addOutputFlags(fs.FlagSet)
	positional, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(positional) == 0 {
		fmt.Fprintln(stderr, "tokentop compare: name at least one session manifest (A.toml, or A.toml#arm)")
		return exitUsage
	}
	if *tui && !isTerminal(stdout) {
		fmt.Fprintln(stderr, "tokentop compare: --tui needs a terminal; without it the comparison prints as text")
		return exitUsage
	}
	if !out.check("compare", stderr) {
		return exitUsage
	}
	var metricNames []string // the defaults
	if *metric != "" {
		metricNames = []string{*metric}
	}
	if info, err := os.Stat(positional[0]); err == nil && info.IsDir() {
		// A grid's folder: its cells ranked, one table.
		cmp, err := grid.Compare(positional[0], *metric, out.testOptions())
		switch {
		case err == nil && out.pictures():
			err = out.save(htmlreport.BuildGrid(cmp), stdout)
		case err == nil:
			cmp.Width = terminalWidth(stdout)
			err = cmp.Write(stdout, *out.format)
		}
		if err != nil {
			printErr(stderr, err)
			return exitFailed
		}
		return exitOK
	}
	refs := make([]session.Ref, len(positional))
	sessions := make([]*session.Session, len(positional))
	for i, arg := range positional {
		refs[i] = session.ParseRef(arg)
		var err error
		if sessions[i], err = session.Load(refs[i].Path); err != nil {
			printErr(stderr, err)
			return exitForInput(err)
		}
	}
	if *tui {
		return runTUI(context.Background(), ui.NewCompare(context.Background(), tuiConfig(runner.Options{}), refs, sessions), stdout, stderr)
	}
	if out.pictures() {
		if err := out.writePictures(refs, sessions, metricNames, stdout); err != nil {
			printErr(stderr, err)
			return exitFailed
		}
		return exitOK
	}
	cmp, err := session.Compare(refs, sessions, metricNames)
	if err == nil {
		cmp.RunTests(out.testOptions())
		cmp.Width = terminalWidth(stdout)
		err = cmp.Write(stdout, *out.format)
	}
	if err != nil {
		printErr(stderr, err)
		return exitUsage
	}
	return exitOK
}

// keyHostHelp is --api-key-host's help, as run and matrix give it.
const keyHostHelp = "a server host (host:port) that a profile or grid file names, to which the API key may go (repeat for several); servers you name with --url or --arm get it without"

func cmdMatrix(args []string, stdout, stderr io.Writer) int {
	fs := newCommand("matrix", "tokentop matrix GRID.toml | engine-grid | phase-grid | servers-grid [flags]", []string{"tokentop matrix engine-grid", "tokentop matrix my-grid.toml --out grids", "tokentop compare GRID-FOLDER   (then: the cells ranked)"}, stdout, stderr)
	opts := runner.Options{Trials: runner.NoOverride, Warmup: runner.NoOverride, MaxTokens: runner.NoOverride}
	fs.StringVar(&opts.OutDir, "out", "", "where the grid's folder goes (default: tokentop/sessions under the user data folder)")
	fs.StringVar(&opts.Power, "power", telemetry.PowerAuto, "power sources, as for run")
	fs.DurationVar(&opts.ServerWait, "server-wait", runner.DefaultServerWait, "how long to wait for a cell's server that is not started yet, is loading, or stopped answering (0: not at all)")
	fs.Func("api-key-host", keyHostHelp, func(v string) error { opts.KeyHosts = append(opts.KeyHosts, v); return nil })
	headless := fs.Bool("headless", false, "print progress lines instead of the grid's table (the default when stdout is not a terminal)")
	positional, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	noWaitIfZero(&opts)
	if len(positional) != 1 {
		fmt.Fprintln(stderr, "tokentop matrix: name one grid file (GRID.toml) or built-in grid ("+strings.Join(profiles.BuiltinGrids(), ", ")+")")
		return exitUsage
	}
	g, err := profiles.FindGrid(positional[0])
	if err != nil {
		printErr(stderr, err)
		return exitUsage
	}
	m, err := grid.Expand(g, opts)
	if err != nil {
		printErr(stderr, err)
		return exitUsage
	}
	pending, slots := m.Pending(), len(m.Order())
	fmt.Fprintf(stdout, "grid %s: %d cells × %d repetition(s), order %s (seed %d), in %s; %d of %d sessions to run\n",
		g.Name, len(m.Cells), g.Repetitions, g.Order, g.Seed, m.Dir, pending, slots)
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	start := time.Now()
	var runErr error
	if !*headless && isTerminal(stdout) {
		app := ui.NewGrid(ctx, m, pending, nil)
		_, err := tea.NewProgram(app, tea.WithContext(ctx), tea.WithOutput(stdout)).Run()
		runErr = app.Err()
		if crash := crashOf(app.Crash(), err); crash != nil {
			return reportCrash(stderr, crash, filepath.Join(m.Dir, grid.ManifestName), "saved per session; run the grid again to go on")
		}
		if err != nil && !errors.Is(err, tea.ErrProgramKilled) {
			printErr(stderr, err)
		}
	} else {
		runErr = m.Run(ctx, ui.GridHeadless(stdout, pending))
	}
	fmt.Fprintf(stdout, "\ngrid ran for %v\n\n", time.Since(start).Round(time.Second))
	if cmp, err := grid.Compare(m.Dir, "", session.DefaultTestOptions); err != nil {
		printErr(stderr, err)
	} else {
		cmp.Width = terminalWidth(stdout)
		cmp.Write(stdout, "text")
	}
	switch {
	case ctx.Err() != nil || errors.Is(runErr, context.Canceled):
		fmt.Fprintf(stderr, "tokentop: interrupted; run 'tokentop matrix %s' again to go on where it stopped\n", positional[0])
		return exitInterrupted
	case errors.Is(runErr, grid.ErrBudgetSpent):
		printErr(stderr, fmt.Errorf("%w; run 'tokentop matrix %s' again to go on where it stopped", runErr, positional[0]))
		return exitOK
	case runErr != nil:
		printErr(stderr, runErr)
		return exitFailed
	}
	return exitOK
}

func cmdMerge(args []string, stdout, stderr io.Writer) int {
	fs := newCommand("merge", "tokentop merge SHARD... --out DIR", []string{"tokentop merge /results --out merged", "tokentop merge a/S-shard0of2.toml b/S-shard1of2.toml --out merged"}, stdout, stderr)
	outDir := fs.String("out", "", "the folder the merged session is written to")
	positional, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(positional) == 0 || *outDir == "" {
		fmt.Fprintln(stderr, "tokentop merge: name the shards' sessions (or the folders holding them) and --out, the folder for the merged session")
		return exitUsage
	}
	merged, err := runner.Merge(positional, *outDir)
	if err != nil {
		printErr(stderr, err)
		return exitForInput(err)
	}
	if merged.Note != "" {
		fmt.Fprintf(stdout, "caveat: status %s: %s\n", merged.Status, merged.Note)
	}
	fmt.Fprintln(stdout, merged.Clocks)
	fmt.Fprintf(stdout, "merged %s: tokentop report %s\n", merged.Status, merged.Manifest)
	return exitOK
}

func cmdReport(args []string, stdout, stderr io.Writer) int {
	fs := newCommand("report", "tokentop report S.toml [...] [flags]", []string{"tokentop report S.toml", "tokentop report S.toml --format json", "tokentop report S.toml --html report.html"}, stdout, stderr)
	out := addOutputFlags(fs.FlagSet)
	positional, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(positional) == 0 {
		fmt.Fprintln(stderr, "tokentop report: name at least one session manifest (S.toml)")
		return exitUsage
	}
	if !out.check("report", stderr) {
		return exitUsage
	}
	if out.pictures() && len(positional) > 1 {
		fmt.Fprintln(stderr, "tokentop report: --html, --svg and --png take one session; 'tokentop compare A.toml B.toml --html FILE' puts several in one report")
		return exitUsage
	}
	for _, path := range positional {
		s, code := loadSession(path, stderr)
		if code != exitOK {
			return code
		}
		if out.pictures() {
			refs, sessions := session.ArmComparison(s)
			if err := out.writePictures(refs, sessions, nil, stdout); err != nil {
				printErr(stderr, err)
				return exitFailed
			}
			return exitOK
		}
		if err := session.BuildReport(s, out.testOptions()).Write(stdout, *out.format); err != nil {
			printErr(stderr, err)
			return exitFailed
		}
	}
	return exitOK
}

// exitForInput is the exit code of an error reading what the user named:
// bad input (2) where it is not a session, a failure (1) otherwise.
func exitForInput(err error) int {
	var bad *session.BadInputError
	if errors.As(err, &bad) {
		return exitUsage
	}
	return exitFailed
}

// loadSession reads a session for report and export, printing its
// warnings (rows a file could not give) or why it could not be read
// (with the exit code that says so).
func loadSession(path string, stderr io.Writer) (*session.Session, int) {
	s, err := session.Load(path)
	if err != nil {
		printErr(stderr, err)
		return nil, exitForInput(err)
	}
	for _, warning := range s.Warnings {
		fmt.Fprintf(stderr, "tokentop: warning: %s\n", untrusted.Line(warning))
	}
	return s, exitOK
}

func cmdExport(args []string, stdout, stderr io.Writer) int {
	fs := newCommand("export", "tokentop export S.toml [...] [flags]", []string{"tokentop export S.toml > requests.jsonl", "tokentop export A.toml B.toml --format csv > requests.csv",
		"tokentop export S.toml --summary > summary.json"}, stdout, stderr)
	format := fs.String("format", "jsonl", "one record per request: "+strings.Join(session.ExportFormats, " or "))
	summary := fs.Bool("summary", false, "instead, one JSON document of each arm's percentiles of every metric")
	positional, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(positional) == 0 {
		fmt.Fprintln(stderr, "tokentop export: name at least one session manifest (S.toml)")
		return exitUsage
	}
	if !slices.Contains(session.ExportFormats, *format) {
		fmt.Fprintf(stderr, "tokentop export: --format %q: use %s\n", *format, strings.Join(session.ExportFormats, " or "))
		return exitUsage
	}
	var sessions []*session.Session
	for _, path := range positional {
		s, code := loadSession(path, stderr)
		if code != exitOK {
			return code
		}
		sessions = append(sessions, s)
	}
	write := func() error { return session.WriteExport(stdout, sessions, *format) }
	if *summary {
		write = func() error { return session.WriteExportSummary(stdout, sessions) }
	}
	if err := write(); err != nil {
		printErr(stderr, err)
		return exitFailed
	}
	return exitOK
}

func cmdProfiles(args []string, stdout, stderr io.Writer) int {
	fs := newCommand("profiles", "tokentop profiles", []string{"tokentop profiles"}, stdout, stderr)
	if _, code, ok := fs.parse(args); !ok {
		return code
	}
	list, problems := profiles.All()
	dir, err := profiles.UserDir()
	if err != nil {
		dir = "(no user config folder: " + err.Error() + ")"
	}
	ui.WriteProfiles(stdout, terminalWidth(stdout), list, dir, problems)
	return exitOK
}

func cmdBackends(args []string, stdout, stderr io.Writer) int {
	fs := newCommand("backends", "tokentop backends [--url URL] [flags]", []string{"tokentop backends", "tokentop backends --url http://127.0.0.1:8000/v1"}, stdout, stderr)
	url := fs.String("url", "", "probe every backend kind at this URL instead of their usual local addresses")
	apiKeyEnv := fs.String("api-key-env", runner.DefaultAPIKeyEnv, "environment variable holding the openai API key")
	if _, code, ok := fs.parse(args); !ok {
		return code
	}
	reports := make([]ui.ProbeReport, len(registry.Kinds))
	var wg sync.WaitGroup
	for i, kind := range registry.Kinds {
		wg.Go(func() {
			cfg := backends.Config{URL: kind.DefaultURL, APIKey: os.Getenv(*apiKeyEnv)}
			if *url != "" && !kind.InProcess {
				cfg.URL = *url
			}
			reports[i] = ui.Probe(context.Background(), kind, cfg)
		})
	}
	wg.Wait()
	ui.WriteBackends(stdout, reports)
	return exitOK
}

// cmdPicker opens the TUI on the picker with every profile.
func cmdPicker(stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	opts := runner.Options{Trials: runner.NoOverride, Warmup: runner.NoOverride, MaxTokens: runner.NoOverride, IdleBaseline: runner.DefaultIdleBaseline}
	return runTUI(ctx, ui.New(ctx, tuiConfig(opts)), stdout, stderr)
}

func tuiConfig(base runner.Options) ui.Config {
	list, problems := profiles.All()
	return ui.Config{Profiles: list, Problems: problems, Base: base}
}

// runTUI runs the program, then waits for any run to save its files and
// prints where they are, since the alternate screen is gone by then.
func runTUI(ctx context.Context, app *ui.App, stdout, stderr io.Writer) int {
	_, err := tea.NewProgram(app, tea.WithContext(ctx), tea.WithOutput(stdout)).Run()
	outcome := app.Outcome()
	if crash := crashOf(app.Crash(), err); crash != nil {
		status := outcome.Status
		if outcome.Finished != nil {
			ui.WriteFinished(stdout, terminalWidth(stdout), outcome.Arms, *outcome.Finished)
		} else if outcome.Manifest != "" {
			status = session.StatusRunning // the manifest written at the start
		}
		return reportCrash(stderr, crash, outcome.Manifest, status)
	}
	if err != nil && !errors.Is(err, tea.ErrProgramKilled) {
		printErr(stderr, err)
		return exitFailed
	}
	if outcome.Finished != nil {
		ui.WriteFinished(stdout, terminalWidth(stdout), outcome.Arms, *outcome.Finished)
	}
	switch {
	case outcome.Err != nil:
		printErr(stderr, outcome.Err)
		return exitFailed
	case ctx.Err() != nil || outcome.Interrupted:
		interrupted(stderr, outcome.Status)
		return exitInterrupted
	case outcome.Ran && outcome.Status == session.StatusFailed:
		fmt.Fprintln(stderr, "tokentop: no timed trial succeeded; see the error column of the trials CSV")
		return exitFailed
	}
	return exitOK
}

// crashOf is the program's crash: the one its guard caught, or a panic
// Bubble Tea caught itself (it printed that one's stack already).
func crashOf(caught *ui.Crash, runErr error) *ui.Crash {
	if caught == nil && errors.Is(runErr, tea.ErrProgramPanic) {
		return &ui.Crash{Value: "a panic inside the terminal library (its stack is printed above)"}
	}
	return caught
}

// reportCrash tells what a crash left: the panic with its stack, where
// the session is and in which state, and a crash file beside its
// manifest (or the grid's) with the same; the exit is exitCrashed.
func reportCrash(stderr io.Writer, crash *ui.Crash, manifest, status string) int {
	report := fmt.Sprintf("tokentop %s (%s) crashed at %s, on %s %s/%s\n%v\n\n%s",
		runner.ToolVersion(), cmp.Or(runner.VCSRevision(), "unknown revision"), time.Now().UTC().Format(time.RFC3339),
		runtime.Version(), runtime.GOOS, runtime.GOARCH, crash, crash.Stack)
	fmt.Fprintf(stderr, "tokentop: %v\n%s\n", crash, crash.Stack)
	if manifest != "" {
		where := "could not be written beside it"
		if path, err := session.WriteBeside(manifest, ".crash.txt", []byte(report)); err == nil {
			where = "is written beside it: " + path
		}
		fmt.Fprintf(stderr, "tokentop: what was measured is saved, status %s: %s; this crash report %s\n", status, manifest, where)
	}
	fmt.Fprintln(stderr, "tokentop: this is a bug; please report it with the lines above")
	return exitCrashed
}

// printErr prints an error for the user. Its words may quote a server, a
// file or a name: they reach the terminal cleaned (lines kept).
func printErr(stderr io.Writer, err error) {
	fmt.Fprintf(stderr, "tokentop: %s\n", untrusted.Text(err.Error()))
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// terminalWidth is the width plain output must fit, or 0 when w is not a
// terminal: a pipe or a file keeps every column.
func terminalWidth(w io.Writer) int {
	if !isTerminal(w) {
		return 0
	}
	width, _, err := term.GetSize(w.(*os.File).Fd())
	if err != nil {
		return 0
	}
	return width
}
