// Package ui holds tokentop's front ends. This file is the headless one:
// plain progress lines and tables for terminals, logs and CI. It only
// reads runner events and session data; it never touches the measurement.
package ui

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/runner"
	"github.com/tokentop/tokentop/session"
)

// Headless prints one line per trial and the final summary, reading
// events until the runner closes the channel.
func Headless(w io.Writer, events <-chan runner.Event) {
	var warmup, trials int
	var arms []string
	for ev := range events {
		switch ev := ev.(type) {
		case runner.Started:
			fmt.Fprintf(w, "backend %s %s: model %s, server %s\n", ev.Backend.Name, location(ev.Backend, ev.Info.URL), orDash(ev.Info.Model), orDash(ev.Info.ServerVersion))
			fmt.Fprintf(w, "session %s\n", ev.Manifest)
			fmt.Fprintf(w, "arms %s: %d warmup + %d timed trials each\n", strings.Join(ev.Arms, ", "), ev.WarmupPerArm, ev.TrialsPerArm)
			fmt.Fprintf(w, "power: %s; %s\nmemory: %s\n", ev.Power.GPU, ev.Power.CPU, ev.Power.RSSProcess)
			warmup, trials, arms = ev.WarmupPerArm, ev.TrialsPerArm, ev.Arms
		case runner.Measuring:
			fmt.Fprintf(w, "measuring the %s for %v\n", ev.What, ev.For)
		case runner.TrialDone:
			fmt.Fprintln(w, ProgressLine(ev.Record, warmup, trials))
		case runner.ArmStopped:
			fmt.Fprintf(w, "%s stopped: %s\n", ev.Arm, ev.Reason)
		case runner.Waiting, runner.Resumed, runner.Warning:
			fmt.Fprintln(w, EventLine(ev))
		case runner.Finished:
			fmt.Fprintln(w)
			WriteFinished(w, arms, ev)
		}
	}
}

// EventLine puts a runner's wait, resume or warning into words, for the
// headless log and the dashboard's event line alike.
func EventLine(ev runner.Event) string {
	switch ev := ev.(type) {
	case runner.Waiting:
		return fmt.Sprintf("waiting for %s: %v of %v (%s)", ev.What, ev.Elapsed.Round(time.Second), ev.Limit, ev.Why)
	case runner.Resumed:
		return fmt.Sprintf("the server is back after %v: %d warmup round(s) before timed trials go on", ev.After.Round(100*time.Millisecond), ev.Warmup)
	case runner.Warning:
		return "warning: " + ev.Text
	}
	return ""
}

// ProgressLine describes one finished trial, counting it within its phase
// (trial numbers in the files run on across phases).
func ProgressLine(r session.Record, warmup, trials int) string {
	status := r.Status
	if r.Error != "" {
		status += ": " + r.Error
	}
	n, of := r.Trial, warmup
	if r.Phase == session.PhaseTimed {
		n, of = r.Trial-warmup, trials
	}
	line := fmt.Sprintf("%-12s %-6s %4d/%-4d ttft %9s  e2e %9s  %8s tok/s  %3s tok  %s",
		r.Arm, r.Phase, n, of, millis(r.TTFTMs), millis(r.E2EMs), number(r.OutputTPS, 1), count(r.OutputTokens), status)
	if !math.IsNaN(r.JPerToken) {
		line += fmt.Sprintf("  %s J/tok (%s)", number(r.JPerToken, 4), r.EnergyQuality)
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
	return "at " + url
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// WriteFinished prints the summary table, the final status and where the
// session was saved.
func WriteFinished(w io.Writer, arms []string, fin runner.Finished) {
	// The status line below says whether the plan finished, and why not.
	for _, c := range session.ArmCaveats(arms, fin.Summary) {
		fmt.Fprintf(w, "caveat: %s\n", c)
	}
	WriteSummary(w, arms, fin.Summary)
	fmt.Fprintf(w, "\nstatus %s", fin.Status)
	if fin.Note != "" {
		fmt.Fprintf(w, " (%s)", fin.Note)
	}
	if fin.SaveErr != "" {
		fmt.Fprintf(w, "\nthe session is not saved in full: %s\n", fin.SaveErr)
		return
	}
	fmt.Fprintf(w, "\nsaved %s\n", fin.Manifest)
}

// WriteSummary prints the per-arm table of e2e statistics, TTFT, tok/s
// and the run-quality figures, arms in the profile's order.
func WriteSummary(w io.Writer, arms []string, summary map[string]session.ArmSummary) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "arm\tn\tdegraded\te2e mean\tmedian [95% CI]\tp95\tp99\tmax\tCV\tttft p50\ttok/s\ttrial tok/s p50\tp5\twarmup ratio\tconverged at\t")
	anytimeNote := false
	for _, a := range arms {
		s := summary[a]
		e2e, ttft, tps := s.Metrics["e2e_ms"], s.Metrics["ttft_ms"], s.Metrics["output_tps"]
		lo, hi, anytime := s.MedianE2EInterval()
		mark := ""
		if anytime {
			mark, anytimeNote = "*", true
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s %s%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", a, s.TimedOK, s.Degraded,
			millis(e2e.Mean), millis(e2e.Median), interval(lo, hi, oneDecimal), mark,
			millis(e2e.P95), millis(e2e.P99), millis(e2e.Max), number(e2e.CV, 3), millis(ttft.Median),
			number(s.OutputTPS, 1), number(tps.P50, 1), number(tps.P5, 1), number(s.WarmupRatio, 2), convergedAt(s))
	}
	tw.Flush()
	fmt.Fprintln(w, "tok/s: Σ output tokens / Σ e2e time over the arm's timed ok trials; trial tok/s: the distribution of each trial's own rate")
	if anytimeNote {
		fmt.Fprintln(w, "* the anytime-valid 95% interval that stopped the arm; the others are bootstrap intervals at fixed n")
	}
	for _, a := range arms {
		if iv := summary[a].StopInterval; iv != nil && iv.Statistic == "mean" {
			fmt.Fprintf(w, "note: %s stopped on its mean e2e %s, anytime-valid 95%% interval [%s, %s]\n", a, millis(iv.Estimate), number(iv.Lo, 1), number(iv.Hi, 1))
		}
		if n := summary[a].TokenCountMismatches; n > 0 {
			fmt.Fprintf(w, "note: %s: in %d trials the server's token count differed from the tokens seen in the stream\n", a, n)
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

// WriteProfiles lists profiles with their plan.
func WriteProfiles(w io.Writer, list []*profiles.Profile, userDir string, problems []error) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSOURCE\tPLAN\tARMS\tDESCRIPTION")
	for _, p := range list {
		var arms []string
		for _, a := range p.Arms {
			arms = append(arms, a.Name)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d warmup + %d trials, %d tokens\t%s\t%s\n", p.Name, p.Source, p.Warmup, p.Trials, p.MaxTokens, strings.Join(arms, ", "), p.Description)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nuser profiles: %s/*.toml\n", userDir)
	for _, err := range problems {
		fmt.Fprintf(w, "skipped: %v\n", err)
	}
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
