// Package ui holds tokentop's front ends. This file is the headless one:
// plain progress lines and tables for terminals, logs and CI. It only
// reads runner events and session data; it never touches the measurement.
package ui

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/backends/untrusted"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/runner"
	"github.com/tokentop/tokentop/session"
)

// Headless prints one line per trial and the final summary, reading
// events until the runner closes the channel. The summary fits within
// width cells (0: no limit, for pipes and logs).
func Headless(w io.Writer, width int, events <-chan runner.Event) {
	var trials, nameWidth int
	var warmup map[string]int
	var arms []string
	var lastWait string
	for ev := range events {
		switch ev := ev.(type) {
		case runner.Started:
			for _, t := range ev.Targets {
				line := fmt.Sprintf("backend %s %s: model %s, server %s", t.Kind.Name, location(t.Kind, t.Info.URL), orDash(t.Info.Model), orDash(t.Info.ServerVersion))
				if len(ev.Targets) > 1 {
					line = fmt.Sprintf("target %s (%s): %s", t.Name, strings.Join(t.Arms, ", "), line)
				}
				if t.Info.Quantization != "" {
					line += ", " + t.Info.Quantization
				}
				fmt.Fprintln(w, line)
			}
			writePath(w, width, "session", ev.Manifest)
			fmt.Fprintf(w, "arms %s: %s\n", armList(ev.Arms, ev.Labels), trialWords(ev))
			for _, line := range ev.Lengths.Words() {
				fmt.Fprintln(w, line)
			}
			if f := ev.PromptsFile; f != nil {
				what := fmt.Sprintf("%d %s prompts", f.Prompts, f.Format)
				if f.Conversations > 0 {
					what = fmt.Sprintf("%d turns of %d %s conversations, each sent turn by turn", f.Prompts, f.Conversations, f.Format)
				}
				if f.LeftOut > 0 {
					what += fmt.Sprintf(" (%d conversations with no human turn left out)", f.LeftOut)
				}
				fmt.Fprintf(w, "prompts: %s, %s (sha256 %.12s), in an order seeded by the profile, the same for every arm\n", f.File, what, f.SHA256)
			}
			fmt.Fprintf(w, "power: %s; %s\nmemory: %s\n", ev.Power.GPU, ev.Power.CPU, ev.Power.RSSProcess)
			warmup, trials, arms = ev.Warmup, ev.TrialsPerArm, ev.Arms
			if ev.Duration > 0 {
				trials = 0 // no count to reach: the lines count up
			}
			for _, a := range arms {
				nameWidth = max(nameWidth, ansi.StringWidth(a))
			}
		case runner.Measuring:
			fmt.Fprintf(w, "measuring the %s for %v\n", ev.What, ev.For)
		case runner.TrialDone:
			fmt.Fprintln(w, progressLine(ev, warmup[ev.Record.Arm], trials, nameWidth))
		case runner.ArmStopped:
			fmt.Fprintf(w, "%s stopped: %s\n", ev.Arm, ev.Reason)
		case runner.ArmReached:
			fmt.Fprintf(w, "%s reached the target: %s; it runs on until every arm has\n", ev.Arm, ev.Reason)
		case runner.Waiting:
			// Probes come quicker than the seconds the line counts: say
			// each second once.
			if line := EventLine(ev); line != lastWait {
				fmt.Fprintln(w, line)
				lastWait = line
			}
		case runner.Resumed, runner.Warning:
			fmt.Fprintln(w, EventLine(ev))
		case runner.ArmAdded:
			arms = append(arms, ev.Arm) // the search's arms join the final table
			fmt.Fprintln(w, EventLine(ev))
		case runner.Finished:
			fmt.Fprintln(w)
			WriteFinished(w, width, arms, ev)
		}
	}
}

// trialWords says how many trials each arm runs: "1 warmup + 16 timed
// trials each", or per arm where a load run's warmup differs by level.
func trialWords(ev runner.Started) string {
	var warmups []string
	for _, a := range ev.Arms {
		if w := fmt.Sprint(ev.Warmup[a]); !slices.Contains(warmups, w) {
			warmups = append(warmups, w)
		}
	}
	timed := fmt.Sprintf("%d timed trials each", ev.TrialsPerArm)
	if ev.Duration > 0 {
		timed = fmt.Sprintf("each for %v of steady load", ev.Duration)
	}
	if len(warmups) == 1 && ev.Duration > 0 {
		return fmt.Sprintf("%s warmup, then %v of steady load each", warmups[0], ev.Duration)
	}
	if len(warmups) == 1 {
		return fmt.Sprintf("%s warmup + %d timed trials each", warmups[0], ev.TrialsPerArm)
	}
	per := make([]string, len(ev.Arms))
	for i, a := range ev.Arms {
		per[i] = fmt.Sprintf("%s %d", a, ev.Warmup[a])
	}
	return fmt.Sprintf("%s, after warmup (%s; at least one request per stream)", timed, strings.Join(per, ", "))
}

// armList names the arms, each with what sets it apart from the others
// where its name does not already say it: "f32, q8 (q8_0)".
func armList(arms []string, labels map[string]string) string {
	named := make([]string, len(arms))
	for i, a := range arms {
		named[i] = session.LabelledArm(a, labels[a])
	}
	return strings.Join(named, ", ")
}

// EventLine puts a runner's wait, resume or warning into words, for the
// headless log and the dashboard's event line alike.
func EventLine(ev runner.Event) string {
	switch ev := ev.(type) {
	case runner.Waiting:
		return fmt.Sprintf("waiting for %s: %v of %v (%s); ctrl+c stops, --server-wait 0 never waits", ev.What, ev.Elapsed.Round(time.Second), roundWait(ev.Limit), ev.Why)
	case runner.Resumed:
		who := "the server"
		if len(ev.Arms) > 0 {
			who += " of " + strings.Join(ev.Arms, ", ")
		}
		return fmt.Sprintf("%s is back after %v: %d warmup round(s) before timed trials go on", who, ev.After.Round(100*time.Millisecond), ev.Warmup)
	case runner.Warning:
		return "warning: " + ev.Text
	case runner.ArmAdded:
		return "SLO search: " + ev.Why
	}
	return ""
}

// roundWait rounds a wait's limit for words: to the second, or to the
// tenth under ten seconds (a Retry-After's leftover reads 1.999987985s).
func roundWait(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// progressLine describes one finished trial, counting it within its phase
// (trial numbers in the files run on across phases). Names are padded to
// nameWidth and the counts to the plan's, so that the lines of a run line
// up and, for the built-in engine's figures, fit 80 columns.
func progressLine(ev runner.TrialDone, warmup, trials, nameWidth int) string {
	r := ev.Record
	status := r.Status
	if r.Error != "" {
		status += ": " + r.Error
	}
	// A load run's ramp-up and drain are named instead of their phase:
	// they do not count toward the arm's trials.
	label, n, of := r.Phase, ev.Warmups, warmup
	if r.Phase == session.PhaseTimed {
		n, of = ev.Measured, trials
		if r.Window == session.WindowRamp || r.Window == session.WindowDrain {
			label = r.Window
		}
	}
	digits := len(fmt.Sprint(max(warmup, trials)))
	counted := fmt.Sprintf("%*d/%-*d", digits, n, digits, of)
	if of == 0 { // run for a duration: no count to reach
		counted = fmt.Sprintf("%-*d", 2*digits+1, n)
	}
	line := fmt.Sprintf("%-*s %-6s %s  ttft %7s  e2e %7s  %7s tok/s  %3s tok  %s",
		nameWidth, r.Arm, label, counted, millis(r.TTFTMs), millis(r.E2EMs), number(r.OutputTPS, 1), count(r.OutputTokens), status)
	if !math.IsNaN(r.JPerToken) {
		line += fmt.Sprintf("  %s (%s)", session.TrialJPerToken(&r, "J/tok"), r.EnergyQuality)
	}
	return line
}

func millis(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%.1f ms", v)
}

func number(v float64, decimals int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	return fmt.Sprintf("%.*f", decimals, v)
}

func count(n int) string {
	if n < 0 {
		return "—"
	}
	return fmt.Sprint(n)
}

// location says where a backend runs: "in process", or "at URL".
func location(k backends.Kind, url string) string {
	if k.InProcess {
		return "in process"
	}
	return "at " + untrusted.URL(url)
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// finishedCaveats are what the end of a run says before its numbers, in
// the done view and headless alike: that a shard's figures are its share,
// then the arms' caveats (its status is said on its own line).
func finishedCaveats(arms []string, fin runner.Finished) []string {
	caveats := session.ArmCaveats(arms, fin.Summary)
	if line := fin.Shard.Caveat(); line != "" {
		caveats = append([]string{line}, caveats...)
	}
	return caveats
}

// WriteFinished prints the summary table, the final status and where the
// session was saved, within width cells (0: no limit).
func WriteFinished(w io.Writer, width int, arms []string, fin runner.Finished) {
	// The status line below says whether the plan finished, and why not;
	// what the stop rule reached leads.
	if p := fin.Precision; p.Missed {
		writeProse(w, width, "caveat: %s", p.Line)
	} else if p.Line != "" {
		writeProse(w, width, "stopped: %s", p.Line)
	}
	for _, c := range finishedCaveats(arms, fin) {
		writeProse(w, width, "caveat: %s", c)
	}
	WriteSummary(w, width, arms, fin.Summary)
	for _, a := range arms {
		if c := fin.Summary[a].PrefixCache; c != nil {
			writeProse(w, width, "%s %s", a, c.Words())
		}
		if turns := fin.Summary[a].Turns; turns != "" {
			writeProse(w, width, "%s %s", a, turns)
		}
	}
	for _, line := range fin.ServerMetrics.Words() {
		writeProse(w, width, "%s", line)
	}
	status := "status " + string(fin.Status)
	if fin.Note != "" {
		status += " (" + fin.Note + ")"
	}
	fmt.Fprintln(w)
	writeProse(w, width, "%s", status)
	if fin.SaveErr != "" {
		writeProse(w, width, "the session is not saved in full: %s", fin.SaveErr)
		return
	}
	writePath(w, width, "saved", fin.Manifest)
	if len(arms) > 1 {
		writeRunVerdicts(w, width, fin.Manifest)
		return
	}
	// One arm has no verdicts; a single rate's table and words are what
	// its run is for.
	writeLoadResults(w, width, fin.Manifest)
}

// writePath prints label and path on one line where they fit width, else
// the path on a line of its own, whole, so a terminal's copy takes it in
// one piece (wrapped prose would break it mid-word at 80 columns).
func writePath(w io.Writer, width int, label, path string) {
	if width > 0 && ansi.StringWidth(label)+1+ansi.StringWidth(path) > width {
		fmt.Fprintf(w, "%s:\n%s\n", label, path)
		return
	}
	fmt.Fprintf(w, "%s %s\n", label, path)
}

// writeRunVerdicts reads the saved session back and says, in words, how
// each arm compares with the first, as the done view does.
func writeRunVerdicts(w io.Writer, width int, manifest string) {
	s, err := session.Load(manifest)
	var cmp *session.Comparison
	if err == nil {
		cmp, err = session.Verdicts(s)
	}
	if err != nil {
		writeProse(w, width, "no verdicts: %v", err)
		return
	}
	if rows := session.ModelsOf(s); len(rows) > 0 {
		_, notes := session.ModelsTable(rows)
		fmt.Fprintln(w)
		writeProse(w, width, "models:")
		for _, r := range rows {
			writeProse(w, width, "  %s", r.Words())
		}
		for _, n := range notes {
			writeProse(w, width, "%s", n)
		}
	}
	fmt.Fprintln(w)
	writeProse(w, width, "verdicts, each arm against %s (the baseline):", cmp.Columns[0].Arm)
	for _, line := range cmp.Verdicts() {
		writeProse(w, width, "  %s", line)
	}
	if note := cmp.TestsNote(); note != "" {
		writeProse(w, width, "%s", note)
	}
	writeLoadResults(w, width, manifest)
}

// loadProse says a load run's results in lines for the done view: each
// sweep's throughput by level with its knee and goodput, or a together
// study's verdict; nil for other runs.
func loadProse(manifest string) []string {
	res, err := session.ReadLoadResults(manifest)
	if err != nil {
		return []string{"no load results: " + err.Error()}
	}
	if res == nil {
		return nil
	}
	var lines []string
	for _, sw := range res.Sweeps {
		levels := make([]string, len(sw.Levels))
		for i, lv := range sw.Levels {
			tps := "—" // no steady window: no rate
			if !math.IsNaN(lv.TokensPerS) {
				tps = fmt.Sprintf("%.0f", lv.TokensPerS)
			}
			levels[i] = fmt.Sprintf("%s at %d", tps, lv.Concurrency)
		}
		lines = append(lines, fmt.Sprintf("%s: tok/s %s streams", sw.Base, strings.Join(levels, ", ")))
	}
	for _, sw := range res.Rates {
		levels := make([]string, len(sw.Levels))
		for i, lv := range sw.Levels {
			achieved := "—" // no request succeeded
			if !math.IsNaN(lv.Achieved) {
				achieved = fmt.Sprintf("%.1f", lv.Achieved)
			}
			levels[i] = fmt.Sprintf("%s of %g", achieved, lv.Offered)
		}
		lines = append(lines, fmt.Sprintf("%s: req/s achieved %s offered", sw.Base, strings.Join(levels, ", ")))
	}
	return append(lines, res.Words()...)
}

// sweepGiveWay orders the sweep table's columns that give way on a
// narrow terminal; streams, tok/s and the p95s always stay.
var sweepGiveWay = map[string]int{"goodput": 1, "req/s": 2, "n": 3, "J/token": 4, "peak RSS": 5}

// writeLoadResults prints a load run's sweep tables with their knee and
// goodput, or its together study, after the verdicts.
func writeLoadResults(w io.Writer, width int, manifest string) {
	res, err := session.ReadLoadResults(manifest)
	if err != nil {
		writeProse(w, width, "no load results: %v", err)
	}
	if res == nil {
		return
	}
	if res.Study != nil {
		fmt.Fprintln(w)
		for _, line := range res.Study.Verdict() {
			writeProse(w, width, "%s", line)
		}
	}
	for _, sw := range res.Sweeps {
		fmt.Fprintln(w)
		writeProse(w, width, "sweep of %s (tok/s and req/s over the steady windows; p95 over the steady requests):", sw.Base)
		levels := sw.Table()
		table := plainTable{}
		for _, h := range levels.Header {
			table.columns = append(table.columns, textColumn{header: h, giveWay: sweepGiveWay[h]})
		}
		for _, row := range levels.Rows {
			table.add(row...)
		}
		if _, err := table.write(w, width); err != nil {
			return
		}
		for _, line := range sw.Words(res.SLO) {
			writeProse(w, width, "%s", line)
		}
	}
	for _, sw := range res.Rates {
		fmt.Fprintln(w)
		writeProse(w, width, "rates of %s (%s):", sw.Base, session.RateTableCaption)
		rates := sw.Table()
		table := plainTable{}
		for _, h := range rates.Header {
			table.columns = append(table.columns, textColumn{header: h, giveWay: rateGiveWay[h]})
		}
		for _, row := range rates.Rows {
			table.add(row...)
		}
		if _, err := table.write(w, width); err != nil {
			return
		}
		for _, line := range sw.Words(res.SLO) {
			writeProse(w, width, "%s", line)
		}
	}
}

// energyOfEvery reports whether every arm's energy was measured, trial by
// trial: only then do the tables give J/token and power, side by side.
func energyOfEvery(arms []string, summary map[string]session.ArmSummary) bool {
	for _, a := range arms {
		if e := summary[a].Energy; e == nil || !e.Measured() {
			return false
		}
	}
	return len(arms) > 0
}

// rateGiveWay orders the rate table's columns that give way on a narrow
// terminal; the offered and achieved rates and the p95 TTFTs both ways
// always stay.
var rateGiveWay = map[string]int{"failed": 1, "n": 2, "queue p50": 3, "p95 e2e sent": 4, "tok/s": 5, "p95 e2e due": 6, "queue p99": 7, "scheduled": 8}

// WriteSummary prints the per-arm table of e2e statistics, TTFT, tok/s
// and the run-quality figures, arms in the profile's order, within width
// cells (0: no limit). On a narrow terminal the least needed columns give
// way; the arm, its n and its median with interval always stay.
func WriteSummary(w io.Writer, width int, arms []string, summary map[string]session.ArmSummary) {
	table := plainTable{columns: []textColumn{
		{header: "arm", left: true}, {header: "n"}, {header: "degraded", giveWay: 9},
		{header: "e2e mean", giveWay: 4}, {header: "median [95% CI]"}, {header: "p90", giveWay: 15}, {header: "p95", giveWay: 3},
		{header: "p99", giveWay: 12}, {header: "max", giveWay: 10}, {header: "CV", giveWay: 5},
		{header: "ttft p50", giveWay: 6}, {header: "tok/s", giveWay: 8},
		// p5 is the trial rate's: it goes before the p50 it sits beside.
		{header: "trial tok/s p50", giveWay: 13}, {header: "p5", giveWay: 14},
		{header: "warmup ratio", giveWay: 11}, {header: "converged at", giveWay: 7},
	}}
	// Where a model reasons, TTFO (its answer's first token) and its
	// thinking against its output follow TTFT.
	reasoned := false
	for _, a := range arms {
		reasoned = reasoned || summary[a].Metrics["reasoning_tokens"].Mean > 0
	}
	if reasoned {
		table.columns = slices.Insert(table.columns, 11, textColumn{header: "ttfo p50", giveWay: 6}, textColumn{header: "think/out", giveWay: 6})
	}
	// Where every arm's energy was measured, J/token and average power
	// follow tok/s: the cost side of the same trials.
	// And where the profile gave a price, what a million tokens cost
	// (TR119's cost view: J/token and $/1M tokens side by side).
	energy, cost := energyOfEvery(arms, summary), len(arms) > 0
	for _, a := range arms {
		cost = cost && summary[a].USDPer1MTokens > 0
	}
	at := slices.IndexFunc(table.columns, func(c textColumn) bool { return c.header == "tok/s" }) + 1
	if energy {
		// J/tok is the cost the run measured: it stays as long as the
		// e2e mean does; its power gives way early.
		table.columns = slices.Insert(table.columns, at, textColumn{header: "J/tok", giveWay: 4}, textColumn{header: "W", giveWay: 9})
		at += 2
	}
	if cost {
		table.columns = slices.Insert(table.columns, at, textColumn{header: "$/1M tok", giveWay: 8})
	}
	anytimeNote := false
	for _, a := range arms {
		s := summary[a]
		e2e, ttft, tps := s.Metrics["e2e_ms"], s.Metrics["ttft_ms"], s.Metrics["output_tps"]
		lo, hi, anytime := s.MedianE2EInterval()
		mark := ""
		if anytime {
			mark, anytimeNote = "*", true
		}
		cells := []string{a, fmt.Sprint(s.Metrics["e2e_ms"].N), fmt.Sprint(s.Degraded),
			millis(e2e.Mean), millis(e2e.Median) + " " + interval(lo, hi, oneDecimal) + mark,
			millis(e2e.P90), millis(e2e.P95), millis(e2e.P99), millis(e2e.Max), number(e2e.CV, 3), millis(ttft.Median),
			number(s.OutputTPS, 1), number(tps.P50, 1), number(tps.P5, 1), number(s.WarmupRatio, 2), convergedAt(s)}
		if reasoned {
			cells = slices.Insert(cells, 11, millis(s.Metrics["ttfo_ms"].Median), thinkOut(s.Metrics["reasoning_tokens"].Mean, s.Metrics["output_tokens"].Mean))
		}
		if energy {
			at := slices.IndexFunc(table.columns, func(c textColumn) bool { return c.header == "J/tok" })
			cells = slices.Insert(cells, at, s.Energy.Cell(), s.Energy.PowerCell())
		}
		if cost {
			at := slices.IndexFunc(table.columns, func(c textColumn) bool { return c.header == "$/1M tok" })
			cells = slices.Insert(cells, at, fmt.Sprintf("%.2f", s.USDPer1MTokens))
		}
		table.add(cells...)
	}
	leftOut, _ := table.write(w, width)
	if len(leftOut) > 0 {
		writeProse(w, width, "not shown at %d columns: %s; the manifest's [summary] has every figure", width, strings.Join(leftOut, ", "))
	}
	if !slices.Contains(leftOut, "tok/s") || !slices.Contains(leftOut, "trial tok/s p50") {
		writeProse(w, width, "tok/s: Σ output tokens / Σ e2e time over the arm's timed ok trials; trial tok/s: the distribution of each trial's own rate")
	}
	if anytimeNote {
		writeProse(w, width, "* the stop rule's anytime-valid 95%% interval (where the arm reached its target, or at the cap); the others are bootstrap intervals at fixed n")
	}
	// Each arm's energy in words; where none had a figure, why, once.
	measured := false
	for _, a := range arms {
		if e := summary[a].Energy; e != nil && e.N > 0 {
			writeProse(w, width, "%s %s", a, e.Words())
			measured = true
		}
	}
	for _, a := range arms {
		if e := summary[a].Energy; e != nil && !measured {
			writeProse(w, width, "%s", e.Words())
			break
		}
	}
	for _, a := range arms {
		iv, n := summary[a].StopInterval, summary[a].Metrics["e2e_ms"].N
		switch {
		case iv == nil || iv.Missed:
		case iv.N != n: // it ran on: the table's figures are of all its trials
			writeProse(w, width, "note: %s reached the stop target after %s trials, its %s e2e then %s, anytime-valid 95%% interval [%s, %s]; it ran on with the others to %s trials, which the table's figures are of",
				a, session.FormatCount(iv.N), iv.Statistic, millis(iv.Estimate), number(iv.Lo, 1), number(iv.Hi, 1), session.FormatCount(n))
		case iv.Statistic == "mean":
			writeProse(w, width, "note: %s stopped on its mean e2e %s, anytime-valid 95%% interval [%s, %s]", a, millis(iv.Estimate), number(iv.Lo, 1), number(iv.Hi, 1))
		}
		if n := summary[a].TokenCountMismatches; n > 0 {
			writeProse(w, width, "note: %s: in %d trials the server's token count differed from the tokens seen in the stream", a, n)
		}
	}
}

// interval prints "[lo, hi]", or "[too few]" when the values were too
// few for one (metrics.MinIntervalN).
func interval(lo, hi float64, format func(float64) string) string {
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return "[too few]"
	}
	return "[" + format(lo) + ", " + format(hi) + "]"
}

func oneDecimal(v float64) string { return number(v, 1) }

func convergedAt(s session.ArmSummary) string {
	if s.ConvergedAt == 0 {
		return "not converged"
	}
	return fmt.Sprintf("n=%d (±%g%%)", s.ConvergedAt, s.ConvergeTolerance*100)
}

// WriteProfiles lists profiles with their plan, as a table where it fits
// within width cells (0: no limit), else as one short block per profile
// with its description wrapped.
func WriteProfiles(w io.Writer, width int, list []*profiles.Profile, userDir string, problems []error) {
	table := plainTable{columns: []textColumn{
		{header: "NAME", left: true}, {header: "SOURCE", left: true}, {header: "PLAN", left: true},
		{header: "ARMS", left: true}, {header: "DESCRIPTION", left: true},
	}}
	for _, p := range list {
		table.add(p.Name, profileOrigin(p), profilePlan(p), strings.Join(p.ArmNames(), ", "), p.Description)
	}
	if width > 0 && table.width() > width {
		for i, p := range list {
			if i > 0 {
				fmt.Fprintln(w)
			}
			writeProse(w, width, "%s (%s)", p.Name, profileOrigin(p))
			writeProse(w, width, "  %s; arms %s", profilePlan(p), strings.Join(p.ArmNames(), ", "))
			for _, line := range strings.Split(wrapWords(p.Description, width-2), "\n") {
				fmt.Fprintln(w, "  "+line)
			}
		}
	} else {
		table.write(w, 0)
	}
	fmt.Fprintln(w)
	writeProse(w, width, "user profiles: %s/*.toml", userDir)
	for _, err := range problems {
		writeProse(w, width, "skipped: %v", err)
	}
}

func profilePlan(p *profiles.Profile) string {
	return fmt.Sprintf("%d warmup + %d trials, %d tokens", p.Warmup, p.Trials, p.MaxTokens)
}

// WriteBackends prints what each backend's probe found.
func WriteBackends(w io.Writer, reports []ProbeReport) {
	for _, r := range reports {
		fmt.Fprintf(w, "%-9s %s\n          %s\n", r.Kind.Name, location(r.Kind, r.Info.URL), r.Kind.Description)
		if r.Err != nil {
			fmt.Fprintf(w, "          not reachable: %v\n", r.Err)
			continue
		}
		fmt.Fprintf(w, "          reachable, server %s", orDash(r.Info.ServerVersion))
		if len(r.Info.Models) > 0 {
			fmt.Fprintf(w, ", models: %s", strings.Join(r.Info.Models, ", "))
		}
		fmt.Fprintln(w)
	}
}
