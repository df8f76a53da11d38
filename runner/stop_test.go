package runner

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/metrics"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/session"
)

// feed adds values to a series one by one, asking the rule after each, and
// returns the count at which it reached its target or stopped (0 if
// never) and why.
func feed(rule StopRule, arm string, values []float64) (int, string) {
	var s metrics.Series
	for i, v := range values {
		s.Add(v)
		if d := rule.Decide(arm, i+1, &s); d.Stop || d.Reached {
			return i + 1, d.Reason
		}
	}
	return 0, ""
}

func noisy(seed uint64, n int, cv float64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]float64, n)
	for i := range out {
		out[i] = 100 * (1 + cv*rng.NormFloat64())
	}
	return out
}

func TestUntilCIStopsQuietArmsEarlyAndNoisyOnesAtTheCap(t *testing.T) {
	for _, statistic := range []string{"median", "mean"} {
		rule := NewUntilCI(profiles.Stop{UntilCI: 0.01, Statistic: statistic}.Effective(), 500)
		quiet, why := feed(rule, "quiet", noisy(1, 500, 0.01))
		if quiet == 0 || quiet < rule.Config.MinTrials || quiet > 100 || !strings.HasPrefix(why, statistic+" e2e ") || !strings.Contains(why, "both ends within ±") {
			t.Errorf("%s, CV 1%%: stopped at %d (%q), want between the minimum and 100", statistic, quiet, why)
		}
		// Each arm keeps its own state: a noisy arm asked in between is
		// not helped by the quiet one.
		noisyAt, why := feed(rule, "noisy", noisy(2, 500, 0.3))
		if noisyAt != 500 || !strings.HasPrefix(why, statistic+" e2e ±1% not reached: stopped at the trial cap of 500 with its 95% sequence [") {
			t.Errorf("%s, CV 30%%: stopped at %d (%q), want the cap", statistic, noisyAt, why)
		}
	}
}

// The rule's stopping point against the width it promises: once it stops,
// the sequence's interval is within the target, and one trial earlier it
// was not.
func TestUntilCIStopsOnlyWithinTheTarget(t *testing.T) {
	rule := NewUntilCI(profiles.Stop{UntilCI: 0.02}.Effective(), 1000)
	values := noisy(3, 1000, 0.05)
	n, _ := feed(rule, "a", values)
	if n == 0 {
		t.Fatal("never stopped")
	}
	// The farther end of the sequence's interval from the median.
	relative := func(n int) float64 {
		var d metrics.Distribution
		for _, v := range values[:n] {
			d.Add(v)
		}
		median := metrics.PercentileSorted(d.Sorted(), 0.5)
		iv := rule.seq.QuantileInterval(d.Sorted(), 0.5)
		return max(median-iv.Lo, iv.Hi-median) / median
	}
	if relative(n) > 0.02 {
		t.Errorf("stopped at %d with ±%.2f%%", n, 100*relative(n))
	}
	if n-1 >= rule.Config.MinTrials && relative(n-1) <= 0.02 {
		t.Errorf("could have stopped at %d already", n-1)
	}
}

func TestResolveBuildsTheStopRule(t *testing.T) {
	p, err := profiles.Find("quick")
	if err != nil {
		t.Fatal(err)
	}
	base := Options{Trials: 200, Warmup: NoOverride, MaxTokens: NoOverride, OutDir: t.TempDir()}
	plan, err := Resolve(p, base)
	if _, ok := plan.Stop.(TrialCap); err != nil || !ok {
		t.Fatalf("no rule asked for: %T %v", plan.Stop, err)
	}
	o := base
	o.UntilCI, o.CIStatistic = 0.01, "mean"
	plan, err = Resolve(p, o)
	rule, ok := plan.Stop.(*UntilCI)
	if err != nil || !ok || rule.Config != (profiles.Stop{UntilCI: 0.01, Statistic: "mean", MinTrials: 30}) || plan.Profile.Stop != rule.Config || rule.Cap.N != 200 {
		t.Fatalf("rule %+v, profile %+v, %v", rule, plan.Profile.Stop, err)
	}
	o.Trials = 20
	if _, err := Resolve(p, o); err == nil || !strings.Contains(err.Error(), "stop rule min_trials: 30 is more than trials = 20") {
		t.Errorf("cap below the minimum: %v", err)
	}
}

// Through a real run: the steady arm reaches the target early but runs on,
// interleaved, with the noisy one until the cap; when both are steady they
// stop together once the second reaches it. The manifest records the rule,
// each arm's reason and what ended the study.
func TestArmsStopTogether(t *testing.T) {
	for _, c := range []struct {
		name         string
		hotNoisy     bool
		wantStudy    string
		wantAllTrial bool // both arms ran to the cap
	}{
		{"one arm short of the target", true, "median e2e ±20% not reached by hot (±", true},
		{"both reach it", false, "every arm's median e2e within ±20% (anytime-valid 95% interval): greedy after ", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			// greedy always takes about 10 ms (long enough that a loaded
			// CI machine's scheduling jitter stays well inside ±20%); a
			// noisy hot takes 10 ms or 40 ms by turns, so its median
			// cannot settle within ±20%.
			fake := &fakeBackend{delays: []time.Duration{5 * time.Millisecond, 5 * time.Millisecond},
				extra: func(req backends.Request) time.Duration {
					if c.hotNoisy && req.Temperature > 0 && req.Seed%2 == 0 {
						return 30 * time.Millisecond
					}
					return 0
				}}
			plan := testPlan(t, 0, 40, "greedy", "hot")
			plan.Profile.Stop = profiles.Stop{UntilCI: 0.2}.Effective()
			plan.Stop = NewUntilCI(plan.Profile.Stop, 40)
			status, err, events := runPlan(t, context.Background(), plan, fake)
			if err != nil || status != session.StatusComplete {
				t.Fatal(status, err)
			}
			fin := events[len(events)-1].(Finished)
			greedy, hot := fin.Summary["greedy"], fin.Summary["hot"]
			iv := greedy.StopInterval
			if iv == nil || iv.Statistic != "median" || iv.Missed || iv.N < 10 || iv.Reach() > 0.2 {
				t.Errorf("the interval where greedy reached the target: %+v", iv)
			}
			// Never an arm alone: every arm ran the same rounds.
			if greedy.TimedOK != hot.TimedOK || (greedy.TimedOK == 40) != c.wantAllTrial {
				t.Fatalf("greedy ran %d trials (%q), hot %d (%q)", greedy.TimedOK, greedy.StoppedBy, hot.TimedOK, hot.StoppedBy)
			}
			if !strings.HasPrefix(greedy.StoppedBy, "median e2e ") || !strings.Contains(greedy.StoppedBy, fmt.Sprintf("after %d trials", iv.N)) ||
				(iv.N < greedy.TimedOK) != strings.Contains(greedy.StoppedBy, fmt.Sprintf("it ran on to %d, interleaved", greedy.TimedOK)) {
				t.Errorf("greedy: %q", greedy.StoppedBy)
			}
			if c.hotNoisy != hot.StopInterval.Missed || c.hotNoisy != strings.Contains(hot.StoppedBy, "±20% not reached: stopped at the trial cap of 40") {
				t.Errorf("hot: %q %+v", hot.StoppedBy, hot.StopInterval)
			}
			var reached []string
			for _, ev := range events {
				if r, ok := ev.(ArmReached); ok {
					reached = append(reached, r.Arm)
				}
			}
			slices.Sort(reached)
			if want := map[bool][]string{true: {"greedy"}, false: {"greedy", "hot"}}[c.hotNoisy]; !slices.Equal(reached, want) {
				t.Errorf("reached events: %v", reached)
			}
			s, err := session.Load(fin.Manifest)
			if err != nil || s.Manifest.Profile.Stop == nil || *s.Manifest.Profile.Stop != (session.StopInfo{UntilCI: 0.2, Statistic: "median", MinTrials: 10}) ||
				s.Manifest.Summary["greedy"].StoppedBy != greedy.StoppedBy || !strings.HasPrefix(s.Manifest.StoppedBy, c.wantStudy) ||
				s.Manifest.StoppedBy != fin.Precision.Line || fin.Precision.Missed != c.hotNoisy {
				t.Errorf("manifest: %v %+v stopped_by %q (finished: %+v)", err, s.Manifest.Profile.Stop, s.Manifest.StoppedBy, fin.Precision)
			}
		})
	}
}

// lognormal draws latencies with mean 100 and the given CV; it returns
// them with the distribution's true mean and median.
func lognormal(rng *rand.Rand, n int, cv float64) (values []float64, median float64) {
	sigma := math.Sqrt(math.Log(1 + cv*cv))
	mu := math.Log(100) - sigma*sigma/2
	values = make([]float64, n)
	for i := range values {
		values[i] = math.Exp(mu + sigma*rng.NormFloat64())
	}
	return values, math.Exp(mu)
}

// TestMeanRuleOnHeavyTails watches lognormal arms of CV 0.4, 1 and 2
// from 30 trials to 3,000 (stopping at ±5% for CV 0.4, ±10% above, which
// these arms reach within the cap). The mean's asymptotic sequence alone misses
// the true mean somewhere along the way far more often than 5% once the
// tails are heavy; the rule therefore decides on the median above
// MaxCVForMean, and the interval it saves at a stop must then hold (for
// the statistic it names) in about 95% of stops or more.
func TestMeanRuleOnHeavyTails(t *testing.T) {
	const runs, cap, minTrials = 400, 3000, 30
	seq := metrics.NewConfidenceSequence(0.05, int(math.Sqrt(minTrials*cap)))
	for _, c := range []struct {
		cv, target             float64
		maxSeqMiss, minSeqMiss float64 // the bare mean sequence's time-uniform miss rate
	}{{0.4, 0.05, 0.08, 0}, {1.0, 0.1, 1, 0.07}, {2.0, 0.1, 1, 0.12}} {
		rng := rand.New(rand.NewPCG(uint64(c.cv*100), 5))
		seqMisses, stops, ruleMisses, fellBack := 0, 0, 0, 0
		for range runs {
			values, median := lognormal(rng, cap, c.cv)
			rule := NewUntilCI(profiles.Stop{UntilCI: c.target, Statistic: "mean", MinTrials: minTrials}, cap)
			var s metrics.Series
			missed, decided := false, false
			for i, v := range values {
				s.Add(v)
				n := i + 1
				if n >= minTrials && !missed {
					half := seq.MeanHalfWidth(n, s.Std())
					missed = math.Abs(s.Mean()-100) > half
				}
				if decided {
					continue
				}
				if d := rule.Decide("a", n, &s); d.Stop || d.Reached {
					decided = true
					if !d.Reached {
						continue // the cap: no target claimed
					}
					stops++
					truth := 100.0
					if d.Statistic == "median" {
						truth = median
						fellBack++
					}
					if truth < d.Interval.Lo || truth > d.Interval.Hi {
						ruleMisses++
					}
				}
			}
			if missed {
				seqMisses++
			}
		}
		seqMiss, ruleMiss := float64(seqMisses)/runs, float64(ruleMisses)/float64(max(stops, 1))
		t.Logf("CV %.1f: the mean's sequence alone missed in %.1f%% of %d runs; the rule stopped %d times (%d on the median), its interval missed in %.1f%%",
			c.cv, 100*seqMiss, runs, stops, fellBack, 100*ruleMiss)
		if seqMiss > c.maxSeqMiss || seqMiss < c.minSeqMiss {
			t.Errorf("CV %.1f: the bare mean sequence missed in %.1f%%", c.cv, 100*seqMiss)
		}
		// The mean decides only where its sequence holds.
		if wantMedian := c.cv > MaxCVForMean; (wantMedian && fellBack != stops) || (!wantMedian && fellBack != 0) {
			t.Errorf("CV %.1f: %d of %d stops decided on the median", c.cv, fellBack, stops)
		}
		if stops < runs/4 || ruleMiss > 0.065 {
			t.Errorf("CV %.1f: %d stops, the rule's interval missed in %.1f%%", c.cv, stops, 100*ruleMiss)
		}
	}
}

// TestTheCapSaysHowManyTrialsCanBeUsed: a load level that "reached the
// trial cap of 128" with 33 usable trials must say so, live; after the
// run, by the summary's counts, since requests in flight at the cap end
// after it (the stop line read "797 of its 800 trials usable" where the
// table said 800 ok and 3 degraded of 803).
func TestTheCapSaysHowManyTrialsCanBeUsed(t *testing.T) {
	var e2e metrics.Series
	for range 33 {
		e2e.Add(10)
	}
	d := TrialCap{N: 128}.Decide("greedy@c32", 128, &e2e)
	if !d.Stop || d.Reason != "reached the trial cap of 128" || d.Short != "trial cap 128, 33 usable" {
		t.Errorf("%+v", d)
	}
	if got := d.Reason + usableWords(session.ArmSummary{TimedOK: 800, Degraded: 3}); got != "reached the trial cap of 128: 800 of its 803 timed trials usable, 3 degraded (see the error column)" {
		t.Errorf("after the run: %q", got)
	}
	for range 95 {
		e2e.Add(10)
	}
	if d := (TrialCap{N: 128}).Decide("greedy", 128, &e2e); d.Reason != "reached the trial cap of 128" {
		t.Errorf("all usable: %q", d.Reason)
	}
}

// --ci-statistic mean is said to be overridden on heavy tails when the
// run starts; the profile's own choice is said at the end, by the
// statistic that decided.
func TestAskingForTheMeanIsToldItMayNotDecide(t *testing.T) {
	p, err := profiles.Parse("t.toml", []byte("name = \"t\"\nmax_tokens = 8\ntrials = 40\nprompts = [\"x\"]\n[models]\nollama = \"m\"\n[[arms]]\nname = \"a\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Resolve(p, Options{Backend: "ollama", OutDir: t.TempDir(), Trials: NoOverride, Warmup: 0, MaxTokens: NoOverride, UntilCI: 0.2, CIStatistic: "mean"})
	if err != nil || !plan.MeanAsked {
		t.Fatalf("%v, mean asked %v", err, plan != nil && plan.MeanAsked)
	}
	plan.Telemetry = testPlan(t, 0, 1, "x").Telemetry
	_, _, events := runPlan(t, context.Background(), plan, &fakeBackend{delays: []time.Duration{time.Millisecond}})
	said := slices.ContainsFunc(eventsOf[Warning](events), func(w Warning) bool {
		return strings.HasPrefix(w.Text, "--ci-statistic mean: the median decides for an arm while its running CV is above 0.5")
	})
	if !said {
		t.Errorf("warnings %+v", eventsOf[Warning](events))
	}
}
