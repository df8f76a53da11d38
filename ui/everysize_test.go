package ui

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/metrics"
	"github.com/tokentop/tokentop/metrics/telemetry"
	"github.com/tokentop/tokentop/runner"
	"github.com/tokentop/tokentop/runner/grid"
	"github.com/tokentop/tokentop/session"
)

// A screen in one of its states, ready to be drawn at any size.
type screenState struct {
	name  string
	model tea.Model
	crash func() *Crash
}

// The sizes every screen is drawn at: from the least a screen draws
// (minWidth×minHeight, 20×6) to 250×80. Every one of them with
// TOKENTOP_EVERY_SIZE=1 (17,325 sizes: .ci/run runs it so, without the
// race detector); otherwise every width and height near the minimum, the
// common terminals (80×24, 200×60) and their neighbours, and a stride
// through the rest; a few of each under the race detector.
func everySize() [][2]int {
	const maxW, maxH = 250, 80
	var sizes [][2]int
	if os.Getenv("TOKENTOP_EVERY_SIZE") != "" {
		for w := minWidth; w <= maxW; w++ {
			for h := minHeight; h <= maxH; h++ {
				sizes = append(sizes, [2]int{w, h})
			}
		}
		return sizes
	}
	pick := func(lo, hi, near, stride int, common ...int) []int {
		var out []int
		for v := lo; v <= hi; v++ {
			keep := v < lo+near || v == hi || (v-lo)%stride == 0
			for _, c := range common {
				keep = keep || v >= c-1 && v <= c+1
			}
			if keep {
				out = append(out, v)
			}
		}
		return out
	}
	widths, heights := pick(minWidth, maxW, 8, 23, 80, 120, 200), pick(minHeight, maxH, 8, 11, 24, 40, 60)
	if raceEnabled { // the detector makes a frame five times slower, and looks for races, not sizes
		widths, heights = []int{minWidth, minWidth + 1, 80, 133, 200, maxW}, []int{minHeight, minHeight + 1, 24, 43, 60, maxH}
	}
	for _, w := range widths {
		for _, h := range heights {
			sizes = append(sizes, [2]int{w, h})
		}
	}
	return sizes
}

// TestEveryScreenAtEverySize draws every screen (picker, dashboard, help,
// done view and its report and chooser, compare, grid) in every state it
// can be in (1, 3 and 12 arms, a load sweep, a together study, a grid, no
// verdicts yet, a verdict error, nothing measured, huge numbers) at every
// size: no panic (the crash guard would hide one, so it is asked), and a
// frame of exactly the terminal's size, no line wider. The done view
// panicked at 60×20 once the verdicts arrived.
func TestEveryScreenAtEverySize(t *testing.T) {
	sizes := everySize()
	states := screenStates(t)
	for _, st := range states {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel() // each state is a model of its own
			for _, size := range sizes {
				w, h := size[0], size[1]
				st.model.Update(tea.WindowSizeMsg{Width: w, Height: h})
				if crash := st.crash(); crash != nil {
					t.Fatalf("%dx%d: %v\n%s", w, h, crash, crash.Stack)
				}
				frame := st.model.View().Content
				lines := strings.Split(frame, "\n")
				if len(lines) != h {
					t.Fatalf("%dx%d: %d lines", w, h, len(lines))
				}
				for i, l := range lines {
					if got := cellWidth(l); got != w { // ansi.StringWidth, faster (TestCellWidthIsAnsiStringWidth)
						t.Fatalf("%dx%d: line %d is %d cells wide: %q (raw %q, frame %q)", w, h, i+1, got, ansi.Strip(l), l, frame)
					}
				}
			}
		})
	}
}

// appState is an App's screenState.
func appState(name string, a *App) screenState {
	return screenState{name: name, model: a, crash: a.Crash}
}

func screenStates(t *testing.T) []screenState {
	t.Helper()
	var states []screenState
	now := testStart
	three := []string{"greedy", "temp-0.8", "top-k-40"}
	twelve := make([]string, 12)
	for i := range twelve {
		twelve[i] = fmt.Sprintf("arm-%02d-with-a-long-name", i+1)
	}

	// The picker, bare, then with broken user profiles, probe answers
	// (a long error, many models) and its backends panel in front.
	states = append(states, appState("picker", New(context.Background(), testConfig(&now))))
	cfg := testConfig(&now)
	cfg.Problems = []error{errors.New("/home/u/.config/tokentop/profiles/broken.toml:3: trials: -1 is not a trial count; use 1 or more timed trials per arm"),
		errors.New("/home/u/.config/tokentop/profiles/x.toml:1: name: \"../x\" is not a profile name")}
	picker := New(context.Background(), cfg)
	for i, k := range picker.picker.kinds {
		report := ProbeReport{Kind: k, Info: backends.Info{URL: k.DefaultURL, ServerVersion: "0.33.0", Models: []string{"gemma3:270m", "llama3.1:8b-instruct-q4_K_M", "qwen3:30b-a3b"}}}
		if i%2 == 1 {
			report.Err = errors.New(strings.Repeat("cannot connect to "+k.DefaultURL+": connection refused (is the server running?) ", 3))
		}
		picker.Update(probeMsg{i, report})
	}
	picker.Update(press("tab"))
	states = append(states, appState("picker with problems and probes", picker))
	filtered := New(context.Background(), testConfig(&now))
	filtered.Update(press("/"))
	for _, r := range "qu" {
		_, cmd := filtered.Update(press(string(r)))
		applyFilterResults(filtered, cmd)
	}
	states = append(states, appState("picker filtering", filtered))
	// A user's profile beside the shipped ones: one line a profile leaves
	// no line for the selected plan at short heights, and the status line
	// says it.
	withMine := testConfig(&now)
	mine := *withMine.Profiles[0]
	mine.Name, mine.Source = "my-profile", "user"
	withMine.Profiles = append(withMine.Profiles, &mine)
	states = append(states, appState("picker with a user's profile", New(context.Background(), withMine)))

	// Dashboards mid-run.
	dash := func(name string, arms []string, edit func([]runner.Event) []runner.Event, keys ...string) {
		tr := newTestRun(t, "greedy-vs-sampling")
		events := syntheticRun(arms, 3, 40)
		if edit != nil {
			events = edit(events)
		}
		tr.send(eventsMsg(events))
		for _, k := range keys {
			tr.send(press(k))
		}
		tr.send(tickMsg{})
		states = append(states, appState(name, tr.app))
	}
	dash("dashboard, 1 arm", []string{"greedy"}, nil)
	dash("dashboard, 3 arms, waiting and warned", three, func(ev []runner.Event) []runner.Event {
		// greedy reached the stop rule's target and runs on; top-k-40 ran
		// to its cap.
		ev = append(ev, runner.ArmReached{Arm: "greedy", Decision: runner.Decision{Reached: true, Short: "median within ±1.9% after 1,262 trials"}},
			runner.ArmStopped{Arm: "top-k-40", Decision: runner.Decision{Stop: true, Short: "cap 1500, ±3.1% of ±2%, 1,377 usable"}})
		return append(ev, runner.Warning{Text: strings.Repeat("greedy trial 12 was cut at the context window after 251 of 2000 tokens ", 3)},
			runner.Waiting{What: "the server to come back", Why: "cannot connect to http://127.0.0.1:8080/health: connection refused (is the server running?)", Limit: 60e9})
	})
	dash("dashboard, 12 arms", twelve, nil)
	dash("dashboard, help", three, nil, "?")
	dash("dashboard, zoomed", three, nil, "z", "c", "m")
	dash("dashboard, nothing measured yet", three, func(ev []runner.Event) []runner.Event { return ev[:1] })
	dash("dashboard, huge numbers", three, hugeNumbers)
	dash("dashboard, a reasoning model", three, reasoningRun)
	dash("dashboard, a reasoning model's TTFO", three, reasoningRun, "m", "m", "m", "m")
	dash("dashboard, load sweep", []string{"greedy@c1", "greedy@c2", "greedy@c4", "greedy@c8"}, sweepEvents)
	dash("dashboard, an open loop", []string{"greedy@r20", "greedy@r80"}, openLoopEvents)
	twoServers := func(ev []runner.Event) []runner.Event {
		nan := math.NaN()
		return append(ev,
			runner.ServerMetrics{Server: 0, Targets: []string{"llamacpp-a-long-target-name-for-a-server"}, TokensPerSecond: 1969.05, PrefixHitRate: 0.3,
				View: telemetry.ServerView{Running: 2, Waiting: 14, KVCache: 0.34, Generated: 270, PrefixHits: 51, PrefixQueries: 170, PrefixHitRate: nan}},
			runner.ServerMetrics{Server: 1, Targets: []string{"openai"}, Unavailable: "http://127.0.0.1:8000/metrics answered HTTP 404"})
	}
	dash("dashboard, two servers' metrics", three, twoServers)
	dash("dashboard, energy on a remote GPU", three, energyRun)
	dash("dashboard, energy on a remote GPU, zoomed on power", three, energyRun, "tab", "tab", "z")
	dash("dashboard, together study", []string{"agent-a@alone", "agent-b@alone", "agent-a@together", "agent-b@together"}, func(ev []runner.Event) []runner.Event {
		started := ev[0].(runner.Started)
		started.Load = &session.LoadInfo{Together: []string{"agent-a", "agent-b"}}
		ev[0] = started
		return ev
	})

	// Done views.
	done := func(name string, arms []string, edit func([]runner.Event) []runner.Event, then func(*testRun, runner.Finished) []tea.Msg) {
		tr := newTestRun(t, "greedy-vs-sampling")
		events := syntheticRun(arms, 2, 30)
		if edit != nil {
			events = edit(events)
		}
		fin := finished(events, session.StatusComplete)
		fin.Manifest = writeArmsSession(t, arms, events)
		// What a stop rule reached leads the done view: short of the
		// target on three arms, reached on twelve.
		switch name {
		case "done, 3 arms":
			fin.Precision = session.Precision{Missed: true, Short: "mean e2e ±2% not reached by greedy, temp-0.8: stopped at the cap of 1,500 trials"}
		case "done, 12 arms":
			fin.Precision = session.Precision{Short: "every arm's mean e2e within ±2% (the last after 1,262 trials)"}
		case "done, a shard of an open loop":
			fin.Shard = &session.ShardInfo{Index: 2, Count: 16, Host: "tokentop-shards-2-abcde"}
		case "done, servers' metrics over the run, one restarted":
			fin.ServerMetrics = &session.ServerMetricsInfo{Servers: []session.ServerMetricsSource{
				{Targets: []string{"llamacpp-a-long-target-name-for-a-server"}, Status: "scraped", TokensGenerated: 23040, TokensPerSecond: 286.6, Restarts: 1, FailedReads: 3, PrefixHitRate: 0.3},
				{Targets: []string{"openai"}, Status: "none: http://127.0.0.1:8000/metrics answered HTTP 404"}}}
		}
		tr.send(eventsMsg(append(events, fin)))
		close(tr.app.run.done)
		tr.send(runEndedMsg{})
		for _, msg := range then(tr, fin) {
			tr.send(msg)
		}
		states = append(states, appState(name, tr.app))
	}
	verdicts := func(arms []string, load ...string) func(*testRun, runner.Finished) []tea.Msg {
		return func(*testRun, runner.Finished) []tea.Msg {
			return []tea.Msg{verdictsMsg{cmp: armsComparison(t, arms), load: load}}
		}
	}
	none := func(*testRun, runner.Finished) []tea.Msg { return nil }
	done("done, 1 arm", []string{"greedy"}, nil, none)
	done("done, no verdicts yet", three, nil, none)
	done("done, 3 arms", three, nil, verdicts(three))
	done("done, a reasoning model", three, reasoningRun, func(*testRun, runner.Finished) []tea.Msg {
		return []tea.Msg{verdictsMsg{cmp: eventsComparison(t, three, reasoningRun(syntheticRun(three, 0, 30)))}}
	})
	done("done, 12 arms", twelve, nil, verdicts(twelve))
	done("done, energy per token", three, energyRun, func(*testRun, runner.Finished) []tea.Msg {
		return []tea.Msg{verdictsMsg{cmp: eventsComparison(t, three, energyRun(syntheticRun(three, 0, 30)))}}
	})
	done("picker after n on the done view", three, nil, func(*testRun, runner.Finished) []tea.Msg {
		return []tea.Msg{verdictsMsg{cmp: armsComparison(t, three)}, press("n")}
	})
	done("done, an HTML report's notice", three, nil, func(tr *testRun, fin runner.Finished) []tea.Msg {
		long := "/home/someone/with/a/rather/deep/folder/tokentop/sessions/" + strings.Repeat("20261125T101010Z-greedy-vs-sampling-builtin", 2) + ".html"
		return []tea.Msg{verdictsMsg{cmp: armsComparison(t, three)}, htmlWrittenMsg{path: long, err: errors.New(strings.Repeat("no space left on device ", 5))}}
	})
	done("done, a verdict error", three, nil, func(*testRun, runner.Finished) []tea.Msg {
		return []tea.Msg{verdictsMsg{err: errors.New(strings.Repeat("the session could not be read: trials CSV line 3 is bad ", 4))}}
	})
	done("done, a shard of an open loop", []string{"greedy@r400"}, nil, none)
	done("done, servers' metrics over the run, one restarted", three, twoServers, none)
	sweep := []string{"greedy@c1", "greedy@c2", "greedy@c4", "greedy@c8"}
	done("done, a load sweep", sweep, nil, verdicts(sweep, "greedy: tok/s 604 at 1, 783 at 2, 1041 at 4, 1216 at 8 streams",
		"greedy: knee at 4 streams: p95 TTFT is 2.1× its value at 1 stream (over 2×)",
		"greedy: goodput (SLO TTFT ≤ 60 ms): the highest level with at least 90% of requests within it is 2 streams"))
	report := func(tr *testRun, fin runner.Finished) []tea.Msg {
		s, err := session.Load(fin.Manifest)
		if err != nil {
			t.Fatal(err)
		}
		tr.send(verdictsMsg{cmp: armsComparison(t, three)}, press("r"))
		return []tea.Msg{reportMsg{lines: session.BuildReport(s, session.TestOptions{Resamples: 100, Seed: 1}).Lines("", "  ")}, press("j")}
	}
	done("done, its report", three, nil, report)
	done("done, a reasoning run's report", three, reasoningRun, report)
	done("done, its chooser", three, nil, func(tr *testRun, fin runner.Finished) []tea.Msg {
		tr.send(press("c"))
		options := []baselineOption{{label: "this session's arms against each other"}}
		for i := range 30 {
			options = append(options, baselineOption{label: fmt.Sprintf("baseline 20261125T0%04dZ-greedy-vs-sampling-builtin.toml", i),
				differs: "backend ollama vs builtin; model gemma3:270m vs stories260K; max_tokens 64 vs 128"})
		}
		return []tea.Msg{baselinesMsg{options: options}, press("j"), press("j")}
	})
	// A run that never began, and one whose manifest could not be saved.
	never := newTestRun(t, "quick")
	never.app.run.err = errors.New(strings.Repeat("ollama backend at http://127.0.0.1:11434: connection refused ", 3))
	close(never.app.run.done)
	never.send(runEndedMsg{})
	states = append(states, appState("done, never ran", never.app))
	unsaved := newTestRun(t, "greedy-vs-sampling")
	events := syntheticRun(three, 1, 10)
	fin := finished(events, session.StatusPartial)
	fin.SaveErr, fin.Note = "the final manifest could not be written (no space left on device): the manifest on disk is still the one written at the start", "stopped: could not write the session files"
	unsaved.send(eventsMsg(append(events, fin)))
	close(unsaved.app.run.done)
	unsaved.send(runEndedMsg{})
	states = append(states, appState("done, not saved", unsaved.app))

	// Compare screens: two sessions, and twelve arms of one.
	compare := func(name string, refs []session.Ref, sessions []*session.Session) {
		a := NewCompare(context.Background(), testConfig(&now), refs, sessions)
		if cmd := a.Init(); cmd != nil {
			a.Update(cmd())
		}
		states = append(states, appState(name, a))
	}
	refs, sessions := twoSessions(t, 4)
	compare("compare, two sessions", refs, sessions)
	sixRefs, sixColumns := twoSessionsOf(t, 4, three)
	compare("compare, two sessions of three arms (six columns)", sixRefs, sixColumns)
	thinking, thinkingSessions := twoSessions(t, 4)
	reasoningSessions(thinkingSessions)
	compare("compare, a reasoning model", thinking, thinkingSessions)
	withNotice := NewCompare(context.Background(), testConfig(&now), refs, sessions)
	withNotice.Update(htmlWrittenMsg{path: "/a/very/long/path/to/" + strings.Repeat("compare-A-vs-B-", 6) + ".html"})
	states = append(states, appState("compare, an HTML report's notice", withNotice))
	path := writeArmsSession(t, twelve, syntheticRun(twelve, 0, 20))
	s, err := session.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	refs, sessions = session.ArmComparison(s)
	compare("compare, 12 arms", refs, sessions)

	// The grid, running (a failed cell, ranked cells), its running cell's
	// dashboard, and over.
	m := testGrid(t, "[axes]\nthreads = [1, 2, 3]\nmax_tokens = [8, 16, 32, 64]\n")
	gridEvents := gridEventsMsg{{Slot: grid.Slot{Cell: 0, Repetition: 1}, Cell: &m.Cells[0], Failed: errString(strings.Repeat("builtin backend: no such model ", 4))}}
	for _, ev := range syntheticRun([]string{"greedy"}, 0, 5) {
		gridEvents = append(gridEvents, grid.Event{Slot: grid.Slot{Cell: 1, Repetition: 1}, Cell: &m.Cells[1], Left: 5, Event: ev})
	}
	var rows []grid.Row
	for i := range m.Cells {
		v := 10 * float64(i+1)
		rows = append(rows, grid.Row{Cell: m.Cells[i].ID, Label: m.Cells[i].Label, Rank: i + 1, N: 40, TokensPerS: 1e6 / v,
			E2E: metrics.Estimate{Value: v, CI: metrics.CI{Lo: v * 0.9, Hi: v * 1.2}}})
	}
	ranked := gridRankedMsg{cmp: &grid.Comparison{Rows: rows, Means: []grid.AxisMean{
		{Axis: "threads", Value: "1", Rows: 4, E2E: 15, E2ERatioVsFaster: 1.5}, {Axis: "threads", Value: "2", Rows: 4, E2E: 10, E2ERatioVsFaster: 1},
		{Axis: "max_tokens", Value: "8", Rows: 3, E2E: 8, E2ERatioVsFaster: 1}, {Axis: "max_tokens", Value: "64", Rows: 3, E2E: 64, E2ERatioVsFaster: 8}}}}
	for _, g := range []struct {
		name string
		msgs []tea.Msg
	}{
		{"grid, running", []tea.Msg{gridEvents, tickMsg{}, ranked}},
		{"grid, its running cell", []tea.Msg{gridEvents, tickMsg{}, ranked, press("tab")}},
		{"grid, over", []tea.Msg{gridEvents, tickMsg{}, ranked, gridDoneMsg{}}},
	} {
		app := NewGrid(context.Background(), m, len(m.Cells), func() time.Time { return testStart })
		for _, msg := range g.msgs {
			app.Update(msg)
		}
		states = append(states, screenState{name: g.name, model: app, crash: app.Crash})
	}
	return states
}

// reasoningSessions make every trial of sessions a reasoning model's, the
// second session's thinking longer.
func reasoningSessions(sessions []*session.Session) {
	for i, s := range sessions {
		for j := range s.Records {
			r := &s.Records[j]
			r.ReasoningTokens = (i + 1) * r.OutputTokens / 3
			r.TTFOMs = r.TTFTMs + float64(r.ReasoningTokens)*r.TPOTMs
		}
	}
}

// reasoningRun makes each trial a reasoning model's: most of its tokens
// thinking, its answer's first token well after its first.
func reasoningRun(events []runner.Event) []runner.Event {
	for i, ev := range events {
		if td, ok := ev.(runner.TrialDone); ok {
			td.Record.ReasoningTokens = td.Record.OutputTokens * 3 / 4
			td.Record.TTFOMs = td.Record.TTFTMs + 0.75*td.Record.DecodeMs
			events[i] = td
		}
	}
	return events
}

// hugeNumbers makes every figure of a run enormous: a server that
// answered in a day, a million tokens, a trillion tokens a second.
func hugeNumbers(events []runner.Event) []runner.Event {
	for i, ev := range events {
		td, ok := ev.(runner.TrialDone)
		if !ok {
			continue
		}
		r := &td.Record
		r.E2EMs, r.TTFTMs, r.ITLMaxMs, r.ITLMeanMs, r.TPOTMs = r.E2EMs*1e6, r.TTFTMs*1e6, r.ITLMaxMs*1e6, r.ITLMeanMs*1e6, r.TPOTMs*1e6
		r.OutputTokens, r.OutputTPS, r.PeakRSSMB = 1_000_000, 1e12, 9.9e8
		if td.Point.N > 0 {
			td.Point.Mean, td.Point.HalfWidth = td.Point.Mean*1e6, td.Point.HalfWidth*1e6
		}
		events[i] = td
	}
	return events
}

// energyRun gives every trial energy, read off a remote GPU through a
// DCGM exporter whose instantaneous power the panel draws: the first arm
// 60 W above idle, the second 120 W, the third within its readings'
// resolution of idle (some of its trials below it), so the tables show a
// figure and "≈ idle" side by side and the verdicts a ratio and none.
func energyRun(events []runner.Event) []runner.Event {
	started := events[0].(runner.Started)
	samplerStart := testStart.Add(-time.Second)
	started.Power = session.PowerInfo{GPU: "1 remote GPU through 1 DCGM exporter; this machine: no NVIDIA GPU found", SamplerStart: &samplerStart, EnergySource: "gpu",
		Devices: []telemetry.Device{{Name: "NVIDIA H100 80GB HBM3", ID: "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52", Kind: telemetry.KindGPU,
			HasCounter: true, HasInstant: true, Source: "DCGM exporter http://gpu-node-1.cluster.example:9400/metrics"}},
		Baseline: []session.DeviceBaseline{{ID: "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52", Baseline: telemetry.Baseline{MeanW: 71, StdW: 1, Samples: 60}}}}
	out := []runner.Event{started}
	for k := range 80 {
		sample := telemetry.NewSample(time.Duration(k)*50*time.Millisecond, 0)
		sample.PowerW, sample.PowerInstantW, sample.EnergyMJ = 190, 180+float64(k%9)*70, float64(k)*9500
		out = append(out, runner.PowerSample{Sample: sample})
	}
	above := map[string]float64{started.Arms[0]: 60, started.Arms[1]: 120}
	for _, ev := range events[1:] {
		if td, ok := ev.(runner.TrialDone); ok {
			r := &td.Record
			watts := above[r.Arm] + float64(r.Trial%5) - 2 // the third arm: 2 W either side of idle
			r.EnergyJ, r.EnergyErrJ, r.AvgPowerW, r.EnergyQuality = watts*r.E2EMs/1000, 0.5, 71+watts, "counter"
			r.JPerToken = r.EnergyJ / float64(r.OutputTokens)
			ev = td
		}
		out = append(out, ev)
	}
	return out
}

// sweepEvents makes a run a load sweep: its levels, its requests steady,
// and each level's throughput per block.
func sweepEvents(events []runner.Event) []runner.Event {
	started := events[0].(runner.Started)
	started.Load = &session.LoadInfo{Levels: []int{1, 2, 4, 8}, SLO: &session.SLOInfo{TTFTMs: 1.2, Goodput: 0.9}}
	events[0] = started
	for i, ev := range events[1:] {
		td := ev.(runner.TrialDone)
		td.Record.Window, td.InFlight = session.WindowSteady, 2
		events[1+i] = td
	}
	for round := range 3 {
		for i, arm := range started.Arms {
			events = append(events, runner.BlockDone{Arm: arm, Round: round + 1,
				Throughput: session.Throughput{Concurrency: 1 << i, TokensPerS: 600 + 150*float64(i), RequestsPerS: 10, WindowS: 0.5, Blocks: 1}})
		}
	}
	return events
}

// openLoopEvents make a run an open loop at rates: each arm's rate, each
// request's queue past its due time, and each block's throughput.
func openLoopEvents(events []runner.Event) []runner.Event {
	events = sweepEvents(events)
	started := events[0].(runner.Started)
	started.Load = &session.LoadInfo{Rates: []float64{20, 80}, Arrival: "poisson"}
	started.Rates = map[string]float64{"greedy@r20": 20, "greedy@r80": 80}
	events[0] = started
	for i, ev := range events {
		if td, ok := ev.(runner.TrialDone); ok {
			td.Record.ScheduledMs, td.Record.QueueMs = float64(50*i), float64(i%7)*1.5
			td.Waiting = i % 5
			events[i] = td
		}
	}
	return events
}

// writeArmsSession saves a session of arms with events' trials.
func writeArmsSession(t *testing.T, arms []string, events []runner.Event) string {
	t.Helper()
	m := &session.Manifest{ID: "S", CreatedAt: testStart}
	for _, a := range arms {
		m.Arms = append(m.Arms, session.ArmInfo{Name: a})
	}
	w, err := session.Create(t.TempDir(), m)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, ev := range events {
		if td, ok := ev.(runner.TrialDone); ok {
			if err := w.Append(td.Record, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Finish(session.StatusComplete, "", "", nil); err != nil {
		t.Fatal(err)
	}
	return w.ManifestPath()
}
