package ui

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/runner"
	"github.com/tokentop/tokentop/session"
)

func TestProgressLineCountsWithinThePhaseAndShowsErrors(t *testing.T) {
	r := session.Record{Arm: "greedy", Trial: 4, Phase: session.PhaseTimed, Status: session.StatusError,
		Error: "HTTP 500: boom", OutputTokens: -1}
	r.TTFTMs, r.E2EMs, r.OutputTPS = math.NaN(), 12.34, math.NaN()
	got := progressLine(runner.TrialDone{Record: r, Warmups: 3, Measured: 1}, 3, 10, 8)
	for _, want := range []string{"greedy", "timed", "1/10", "ttft       —", "e2e 12.3 ms", "error: HTTP 500: boom"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	r.Phase, r.Trial = session.PhaseWarmup, 2
	if got := progressLine(runner.TrialDone{Record: r, Warmups: 2}, 3, 10, 8); !strings.Contains(got, "2/3") {
		t.Errorf("warmup line %q", got)
	}
	// A load run's ramp-up request is named, and counts nothing.
	r.Phase, r.Window, r.Status, r.Error = session.PhaseTimed, session.WindowRamp, session.StatusOK, ""
	if got := progressLine(runner.TrialDone{Record: r, Warmups: 4, Measured: 6}, 4, 10, 8); !strings.Contains(got, "greedy   ramp    6/10") {
		t.Errorf("ramp line %q", got)
	}
}

func TestTheMainJobsProgressLinesFit80Columns(t *testing.T) {
	r := session.Record{Arm: "top-k-40", Trial: 1503, Phase: session.PhaseTimed, Status: session.StatusOK, OutputTokens: 128,
		EnergyJ: math.NaN(), JPerToken: math.NaN()}
	r.TTFTMs, r.E2EMs, r.OutputTPS = 0.8, 9.1, 14087.1
	if got := progressLine(runner.TrialDone{Record: r, Warmups: 3, Measured: 1500}, 3, 1500, len("top-k-40")); len(got) > 80 {
		t.Errorf("%d columns: %q", len(got), got)
	}
}

func TestSummaryTableNotesTokenCountMismatches(t *testing.T) {
	var buf bytes.Buffer
	WriteSummary(&buf, 0, []string{"b", "a"}, map[string]session.ArmSummary{
		"b": {TimedOK: 3, ConvergedAt: 2, ConvergeTolerance: 0.01, Metrics: map[string]session.MetricSummary{"e2e_ms": {Mean: 100, Median: 99, CV: 0.05}}},
		"a": {TimedOK: 1, TokenCountMismatches: 2, Metrics: map[string]session.MetricSummary{}},
	})
	out := buf.String()
	rowA, rowB := rowIndex(out, "a"), rowIndex(out, "b")
	if rowA < 0 || rowB < 0 || rowB > rowA || !strings.Contains(out, "n=2 (±1%)") ||
		!strings.Contains(out, "note: a: in 2 trials the server's token count differed") {
		t.Errorf("summary (rows b=%d a=%d, want b first):\n%s", rowB, rowA, out)
	}
}

// rowIndex is the line number of the table row for arm, or -1.
func rowIndex(table, arm string) int {
	for i, line := range strings.Split(table, "\n") {
		if fields := strings.Fields(line); len(fields) > 0 && fields[0] == arm {
			return i
		}
	}
	return -1
}

func TestProgressLineShowsEnergyOnlyWhenMeasured(t *testing.T) {
	r := session.Record{Arm: "greedy", Trial: 2, Phase: session.PhaseTimed, Status: session.StatusOK, OutputTokens: 64,
		EnergyQuality: session.EnergyUnavailable, EnergyJ: math.NaN(), JPerToken: math.NaN()}
	r.Timings.E2EMs, r.Timings.TTFTMs, r.Timings.OutputTPS = 20, 1, 3200
	if line := progressLine(runner.TrialDone{Record: r, Warmups: 1, Measured: 1}, 1, 10, 8); strings.Contains(line, "J/tok") {
		t.Errorf("no energy measured, yet %q", line)
	}
	r.JPerToken, r.EnergyQuality = 0.0123, "counter"
	if line := progressLine(runner.TrialDone{Record: r, Warmups: 1, Measured: 1}, 1, 10, 8); !strings.HasSuffix(line, "ok  0.0123 J/tok (counter)") {
		t.Errorf("energy missing: %q", line)
	}
	// Within its resolution of idle (here below it): no figure.
	r.EnergyJ, r.EnergyErrJ, r.JPerToken = -0.4, 12, -0.4/64
	if line := progressLine(runner.TrialDone{Record: r, Warmups: 1, Measured: 1}, 1, 10, 8); !strings.HasSuffix(line, "ok  ≈ idle (counter)") {
		t.Errorf("a trial at idle: %q", line)
	}
}

func TestFinishedNeverSaysSavedWhenTheManifestFailed(t *testing.T) {
	var buf bytes.Buffer
	WriteFinished(&buf, 0, nil, runner.Finished{Status: session.StatusComplete, Manifest: "/s/x.toml", SaveErr: "the final manifest could not be written (no space left on device)"})
	if out := buf.String(); strings.Contains(out, "saved /s/x.toml") || !strings.Contains(out, "not saved in full: the final manifest could not be written (no space") {
		t.Errorf("a failed final write printed:\n%s", out)
	}
}

// A session's path is printed whole: beside its label where both fit,
// else on a line of its own, never broken inside the path.
func TestSessionPathIsPrintedWhole(t *testing.T) {
	long := "/root/.local/share/tokentop/sessions/20261128T184530Z-greedy-vs-sampling-builtin.toml"
	for _, width := range []int{0, 80, 200} {
		var buf bytes.Buffer
		WriteFinished(&buf, width, []string{"greedy"}, runner.Finished{Status: session.StatusComplete, Manifest: long, Summary: map[string]session.ArmSummary{}})
		lines := strings.Split(buf.String(), "\n")
		i := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "20261128T184530Z") })
		switch {
		case i < 0:
			t.Errorf("width %d: the path is not on one line:\n%s", width, buf.String())
		case width == 80 && (lines[i] != long || lines[i-1] != "saved:"):
			t.Errorf("width 80: want the path on a line of its own after \"saved:\", got %q, %q", lines[i-1], lines[i])
		case width != 80 && lines[i] != "saved "+long:
			t.Errorf("width %d: want \"saved PATH\", got %q", width, lines[i])
		}
	}
}

// wideSummary is a finished run whose summary table is as wide as real
// runs make it: four-digit counts, long names, five-digit rates.
func wideSummary() ([]string, map[string]session.ArmSummary) {
	arms := []string{"greedy", "temperature-0.7-long", "top-k-40"}
	summary := map[string]session.ArmSummary{}
	for i, a := range arms {
		v := 40000 + float64(i)*1234.5
		summary[a] = session.ArmSummary{TimedOK: 1376, Degraded: 12, OutputTPS: 16277.1, WarmupRatio: 12.5, ConvergedAt: 933, ConvergeTolerance: 0.01,
			Metrics: map[string]session.MetricSummary{
				"e2e_ms":     {Mean: v, Median: v, P95: v, P99: v, Max: v, CV: 0.254, N: 1376},
				"ttft_ms":    {Median: 812.5},
				"output_tps": {P50: 18088.3, P5: 9508.2},
			}}
	}
	return arms, summary
}

func TestTheSummaryFitsTheTerminalAndStaysWideWhenPiped(t *testing.T) {
	arms, summary := wideSummary()
	fin := runner.Finished{Status: session.StatusComplete, Manifest: "/home/someone/.local/share/tokentop/sessions/20261123T094100Z-greedy-vs-sampling-builtin.toml", Summary: summary}
	var piped bytes.Buffer
	WriteFinished(&piped, 0, arms, fin)
	headers := []string{"degraded", "e2e mean", "median [95% CI]", "p90", "p95", "p99", "max", "CV", "ttft p50", "tok/s", "trial tok/s p50", "p5", "warmup ratio", "converged at"}
	for _, h := range headers {
		if !strings.Contains(piped.String(), h) {
			t.Errorf("piped output lacks the %q column:\n%s", h, piped.String())
		}
	}
	if strings.Contains(piped.String(), "not shown") {
		t.Errorf("piped output left columns out:\n%s", piped.String())
	}
	for _, width := range []int{80, 60} {
		var out bytes.Buffer
		WriteFinished(&out, width, arms, fin)
		text := out.String()
		for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
			// Only a word longer than the terminal (the path) may pass it.
			if n := len([]rune(line)); n > width && len(strings.Fields(line)) > 1 {
				t.Errorf("at %d columns a %d-column line: %q", width, n, line)
			}
		}
		for _, a := range arms {
			if rowIndex(text, a) < 0 {
				t.Errorf("at %d columns no row for %s:\n%s", width, a, text)
			}
		}
		// The answer stays; the least needed columns go first and are named.
		if !strings.Contains(text, "median [95% CI]") || !strings.Contains(text, "not shown at "+fmt.Sprint(width)+" columns: p90, p5, trial tok/s p50, p99") {
			t.Errorf("at %d columns:\n%s", width, text)
		}
		// A long path is broken at spaces only, never mid-word: it stays whole.
		if !strings.Contains(text, fin.Manifest) {
			t.Errorf("at %d columns the saved path was split:\n%s", width, text)
		}
	}
}

func TestProfilesFitTheTerminalAndStayATableWhenPiped(t *testing.T) {
	list := []*profiles.Profile{
		{Name: "greedy-vs-sampling", Source: "builtin", Warmup: 3, Trials: 1500, MaxTokens: 128,
			Description: "Greedy vs temperature 0.8 vs top-k 40, until each mean e2e is known to ±2%: the latency cost and variance of sampling",
			Arms:        []profiles.Arm{{Name: "greedy"}, {Name: "temp-0.8"}, {Name: "top-k-40"}}},
		{Name: "quick", Source: "builtin", Warmup: 1, Trials: 10, MaxTokens: 64, Description: "A first look", Arms: []profiles.Arm{{Name: "greedy"}}},
	}
	var piped bytes.Buffer
	WriteProfiles(&piped, 0, list, "/u", nil)
	if first := strings.SplitN(piped.String(), "\n", 2)[0]; !strings.HasPrefix(first, "NAME") || !strings.HasSuffix(first, "DESCRIPTION") {
		t.Errorf("piped, the header is %q", first)
	}
	var narrow bytes.Buffer
	WriteProfiles(&narrow, 80, list, "/u", nil)
	for _, line := range strings.Split(narrow.String(), "\n") {
		if n := len([]rune(line)); n > 80 {
			t.Errorf("a %d-column line at 80: %q", n, line)
		}
	}
	// Every word of every description is there, whole.
	words := strings.Fields(narrow.String())
	for _, p := range list {
		for _, word := range strings.Fields(p.Description + " " + p.Name + " top-k-40") {
			if !slices.Contains(words, word) {
				t.Errorf("at 80 columns %q is missing or split:\n%s", word, narrow.String())
			}
		}
	}
}

// TestSummaryTableShowsTTFOWhereAModelReasons: the headless table adds
// the answer's first token and the thinking against the output where any
// arm's model reasoned, and nothing of it elsewhere.
func TestSummaryTableShowsTTFOWhereAModelReasons(t *testing.T) {
	arm := func(reasoning, output, ttfo float64) session.ArmSummary {
		return session.ArmSummary{TimedOK: 20, Metrics: map[string]session.MetricSummary{"e2e_ms": {N: 20, Mean: 300, Median: 290},
			"ttft_ms": {Median: 40}, "ttfo_ms": {Median: ttfo}, "reasoning_tokens": {Mean: reasoning}, "output_tokens": {Mean: output}}}
	}
	var buf bytes.Buffer
	WriteSummary(&buf, 0, []string{"thinking", "direct"}, map[string]session.ArmSummary{"thinking": arm(47.2, 63.2, 278), "direct": arm(0, 16, 40)})
	if out := buf.String(); !regexp.MustCompile(`thinking .* 40\.0 ms +278\.0 ms +47/63 `).MatchString(out) || !strings.Contains(out, "think/out") {
		t.Errorf("summary:\n%s", out)
	}
	buf.Reset()
	WriteSummary(&buf, 0, []string{"direct"}, map[string]session.ArmSummary{"direct": arm(0, 16, 40)})
	if strings.Contains(buf.String(), "ttfo") || strings.Contains(buf.String(), "think/out") {
		t.Errorf("TTFO where no model reasons:\n%s", buf.String())
	}
}

// A run drawing from a prompts file says which file, how many prompts and
// how they are drawn, before its first trial.
func TestHeadlessNamesThePromptsFile(t *testing.T) {
	events := make(chan runner.Event, 2)
	events <- runner.Started{Manifest: "/s/x.toml", Arms: []string{"greedy"}, TrialsPerArm: 3, Warmup: map[string]int{"greedy": 0},
		PromptsFile: &session.PromptsFileInfo{File: "/data/sg.json", SHA256: "b8e2d9ffe6cda07923801fa5", Format: "sharegpt", Prompts: 5, LeftOut: 2}}
	close(events)
	var buf bytes.Buffer
	Headless(&buf, 0, events)
	// The conversations left out are said with the rest (they were in
	// the manifest only).
	if want := "prompts: /data/sg.json, 5 sharegpt prompts (2 conversations with no human turn left out) (sha256 b8e2d9ffe6cd), in an order seeded by the profile, the same for every arm"; !strings.Contains(buf.String(), want) {
		t.Errorf("missing %q in:\n%s", want, buf.String())
	}
}

// Probes come faster than the seconds a wait counts: "0s of 10s" once,
// not twice in a row; the line says how to stop waiting, and a limit
// left by a Retry-After reads rounded.
func TestWaitingIsSaidOncePerSecondWithHowToStop(t *testing.T) {
	events := make(chan runner.Event, 8)
	why := "cannot connect to http://127.0.0.1:8080/health: connection refused (is the server running?)"
	for _, elapsed := range []time.Duration{0, 250 * time.Millisecond, 1100 * time.Millisecond} {
		events <- runner.Waiting{What: "the server to come back", Why: why, Elapsed: elapsed, Limit: 10 * time.Second}
	}
	events <- runner.Waiting{What: "the server, which asked for time", Why: "HTTP 429", Limit: 1999987985 * time.Nanosecond}
	close(events)
	var buf bytes.Buffer
	Headless(&buf, 80, events)
	out := buf.String()
	if n := strings.Count(out, "0s of 10s"); n != 1 {
		t.Errorf("\"0s of 10s\" printed %d times:\n%s", n, out)
	}
	if !strings.Contains(out, "1s of 10s") || !strings.Contains(out, "ctrl+c stops, --server-wait 0 never waits") {
		t.Errorf("the wait's lines:\n%s", out)
	}
	if !strings.Contains(out, "0s of 2s") {
		t.Errorf("a Retry-After's limit is not rounded:\n%s", out)
	}
}

// Where every arm's energy was measured, the summary gives J/token and
// power beside tok/s, "≈ idle" for an arm not distinguishable from idle,
// each arm's figure in words with what its interval carries, and with a
// price, what a million tokens cost beside them (TR119's cost view).
func TestSummaryTableGivesEnergyWhereEveryArmMeasuredIt(t *testing.T) {
	figure := func(j, lo, hi, w float64) *session.EnergyFigure {
		return &session.EnergyFigure{N: 20, Trials: 20, JPerToken: j, Lo: lo, Hi: hi, Uncertainty: 0.05, AvgPowerW: w, Quality: "counter", DriftKnown: true, AboveIdle: lo > 0}
	}
	arm := func(e *session.EnergyFigure) session.ArmSummary {
		return session.ArmSummary{TimedOK: 20, Energy: e, USDPer1MTokens: 1.25, Metrics: map[string]session.MetricSummary{"e2e_ms": {Mean: 100, Median: 99, CV: 0.05}}}
	}
	var buf bytes.Buffer
	WriteSummary(&buf, 0, []string{"decode", "prefill8k", "greedy"}, map[string]session.ArmSummary{
		"decode": arm(figure(2.02, 1.12, 2.79, 148)), "prefill8k": arm(figure(12.1, 11.5, 13.1, 266)), "greedy": arm(figure(0.08, -0.16, 0.4, 128))})
	out := buf.String()
	header := strings.Split(out, "\n")[0]
	if !regexp.MustCompile(`tok/s +J/tok +W +\$/1M tok`).MatchString(header) || !strings.Contains(out, "1.25") {
		t.Errorf("header %q", header)
	}
	for _, want := range []string{"2.02", "148", "12.1", "266", "≈ idle", "decode energy per token 2.02 J [1.12, 2.79]",
		"greedy energy per token not distinguishable from idle: its interval [-0.1600, 0.4000] J holds zero"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing:\n%s", want, out)
		}
	}
	buf.Reset()
	WriteSummary(&buf, 0, []string{"decode", "cpu"}, map[string]session.ArmSummary{"decode": arm(figure(2.02, 1.12, 2.79, 148)), "cpu": arm(nil)})
	if strings.Contains(strings.Split(buf.String(), "\n")[0], "J/tok") {
		t.Errorf("an arm without energy, yet:\n%s", buf.String())
	}
}

// A wait is said in round figures: a Retry-After's remainder read
// "0s of 1.999987985s".
func TestAWaitIsSaidInRoundFigures(t *testing.T) {
	for limit, want := range map[time.Duration]string{1999987985: "0s of 2s (Retry-After)", 59*time.Second + 987*time.Millisecond: "0s of 1m0s (Retry-After)", 2345 * time.Millisecond: "0s of 2.3s (Retry-After)"} {
		if got := EventLine(runner.Waiting{What: "the server", Why: "Retry-After", Limit: limit}); !strings.Contains(got, want) {
			t.Errorf("%v: %q, want %q", limit, got, want)
		}
	}
}

// Below a millisecond the tables keep three figures: arms whose ITL
// differed by 17-25% all read 0.04.
func TestSmallTimesKeepThreeFigures(t *testing.T) {
	for v, want := range map[float64]string{0.0362: "0.0362", 0.0423: "0.0423", 0.5: "0.500", 2.345: "2.35", 123.4: "123"} {
		if got := formatMs(v); got != want {
			t.Errorf("%v: %q, want %q", v, got, want)
		}
	}
}

// An arm that reached its stop target at 203 trials and ran on to 400
// with the others: the table's median is of all 400, so its interval is
// too, and the interval it stopped on is said apart with its count (the
// two were printed side by side).
func TestAFigureIsBesideItsOwnInterval(t *testing.T) {
	ran := session.ArmSummary{TimedOK: 400, Metrics: map[string]session.MetricSummary{"e2e_ms": {N: 400, Median: 103, MedianCILo: 101, MedianCIHi: 105}},
		StopInterval: &session.StopInterval{Statistic: "median", Estimate: 100, Lo: 98.5, Hi: 101.5, N: 203}}
	var buf bytes.Buffer
	WriteSummary(&buf, 0, []string{"greedy"}, map[string]session.ArmSummary{"greedy": ran})
	out := buf.String()
	if !strings.Contains(out, "103.0 ms [101.0, 105.0]") || strings.Contains(out, "[98.5, 101.5]*") ||
		!strings.Contains(out, "note: greedy reached the stop target after 203 trials, its median e2e then 100.0 ms, anytime-valid 95% interval [98.5, 101.5]; it ran on with the others to 400 trials, which the table's figures are of") {
		t.Errorf("%s", out)
	}
}

// At 80 columns the energy per token stays where a summary is cut; its
// power gives way (W came back without J/tok, in the room tok/s left).
func TestEnergyPerTokenStaysAt80Columns(t *testing.T) {
	arm := session.ArmSummary{TimedOK: 20, Energy: &session.EnergyFigure{N: 20, Trials: 20, JPerToken: 2.67, Lo: 2.44, Hi: 3.66, AvgPowerW: 232, Quality: "counter", AboveIdle: true},
		Metrics: map[string]session.MetricSummary{"e2e_ms": {N: 20, Mean: 651, Median: 649.8, MedianCILo: 648.7, MedianCIHi: 650.1, P95: 652.4, CV: 0.011}}}
	var buf bytes.Buffer
	WriteSummary(&buf, 80, []string{"greedy", "temp-0.8"}, map[string]session.ArmSummary{"greedy": arm, "temp-0.8": arm})
	if header := strings.Split(buf.String(), "\n")[0]; !strings.Contains(header, "J/tok") || len(header) > 80 {
		t.Errorf("%s", buf.String())
	}
}
