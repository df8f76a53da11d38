package runner

import (
	"context"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/session"
)

// Every sentence that says what the stop rule reached names the
// statistic that decided: over sessions run by the real rule where the
// mean decided, where the median did (the mean asked, the running CV
// above 0.5), where the cap came first, and where the arms' differ, each
// word-producing function's claim ("mean e2e within …", "(on its
// median)") is checked against the manifest's stop interval of the arms
// it speaks of. The done view's headline and the headless summary print
// the Precision's Short and Line verbatim.
func TestEveryWordNamesTheStatisticThatDecided(t *testing.T) {
	// CV about 0.05: the mean decides. The trials are slept in real time,
	// so one late wake-up among n trials of mean m adds about its delay
	// over m√n to the running CV: at the 30 trials where the rule first
	// looks, past 0.5 takes a delay of 2.7 m. At m = 2 ms and then 10 ms
	// the race detector on a loaded CI machine supplied one (the median
	// decided); 40 ms needs a 110 ms stall.
	calm := func(rng *rand.Rand) time.Duration {
		return time.Duration(float64(40*time.Millisecond) * (1 + 0.05*rng.NormFloat64()))
	}
	heavy := func(rng *rand.Rand) time.Duration { // lognormal σ 1.2, CV about 1.8: the median decides
		return time.Duration(float64(2*time.Millisecond) * math.Exp(1.2*rng.NormFloat64()))
	}
	cases := []struct {
		name     string
		arms     []string
		latency  []func(*rand.Rand) time.Duration // per arm
		untilCI  float64
		trials   int
		decided  []string // the statistic each arm's stop is to be decided on
		capFirst bool
	}{
		{"mean decided", []string{"calm"}, []func(*rand.Rand) time.Duration{calm}, 0.05, 400, []string{"mean"}, false},
		{"median decided", []string{"heavy"}, []func(*rand.Rand) time.Duration{heavy}, 0.3, 400, []string{"median"}, false},
		{"cap reached", []string{"calm", "other"}, []func(*rand.Rand) time.Duration{calm, calm}, 0.001, 30, []string{"mean", "mean"}, true},
		{"mixed", []string{"calm", "heavy"}, []func(*rand.Rand) time.Duration{calm, heavy}, 0.3, 600, []string{"mean", "median"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := armsProfile(t, "name = \"t\"\nmax_tokens = 1\ntrials = 1\nseed = 7\ntimeout = \"5s\"\nprompts = [\"x\"]\n[models]\nollama = \"m\"\n", c.arms...)
			plan, err := Resolve(p, Options{Backend: "ollama", OutDir: t.TempDir(), Trials: c.trials, Warmup: 0, MaxTokens: NoOverride,
				UntilCI: c.untilCI, CIStatistic: "mean"})
			if err != nil {
				t.Fatal(err)
			}
			plan.Telemetry = testPlan(t, 0, 1, "x").Telemetry
			var mu sync.Mutex
			rng := rand.New(rand.NewPCG(3, 4))
			fake := &fakeBackend{delays: []time.Duration{time.Millisecond}, extra: func(req backends.Request) time.Duration {
				mu.Lock()
				defer mu.Unlock()
				arm := 0
				if req.Temperature > 0 {
					arm = 1
				}
				return c.latency[arm](rng)
			}}
			_, _, events := runPlan(t, context.Background(), plan, fake)
			fin := eventsOf[Finished](events)[0]
			s, err := session.Load(fin.Manifest)
			if err != nil {
				t.Fatal(err)
			}
			decided := map[string]string{}
			for i, arm := range c.arms {
				iv := s.Manifest.Summary[arm].StopInterval
				if iv == nil || iv.Statistic != c.decided[i] || iv.Missed != c.capFirst {
					t.Fatalf("arm %s: stop interval %+v; the case wants %s decided, cap first %v", arm, iv, c.decided[i], c.capFirst)
				}
				decided[arm] = iv.Statistic
			}

			texts := map[string][]string{ // the arms each text speaks of: nil for those it names
				fin.Precision.Line:   nil,
				fin.Precision.Short:  nil,
				s.Manifest.StoppedBy: nil,
			}
			for _, arm := range c.arms {
				texts[s.Manifest.Summary[arm].StoppedBy] = []string{arm}
			}
			// The report's lines under an arm's heading speak of that arm.
			var section []string
			for _, line := range session.BuildReport(s, session.TestOptions{Resamples: 200, Seed: 1}).Lines("", "") {
				for _, arm := range c.arms {
					if strings.HasPrefix(line, arm+": ") {
						section = []string{arm}
					}
				}
				texts[line] = section
			}
			for _, line := range session.SessionCaveats(s) {
				texts[line] = nil
			}
			if refs, sessions := session.ArmComparison(s); len(refs) > 1 {
				cmp, err := session.Compare(refs, sessions, []string{"e2e_ms"})
				if err != nil {
					t.Fatal(err)
				}
				for _, line := range cmp.Caveats {
					texts[line] = nil
				}
			}
			claims := 0
			for text, about := range texts {
				claims += checkNamedStatistic(t, text, about, c.arms, decided)
			}
			if !strings.Contains(fin.Precision.Line, "e2e") || claims < len(c.arms)+1 {
				t.Errorf("%d claims checked; precision %q", claims, fin.Precision.Line)
			}
		})
	}
}

var (
	// "mean e2e within", "median e2e ±0.1% not reached", "mean e2e 3.01 ms, 95% sequence"
	statisticClaim = regexp.MustCompile(`\b(mean|median) e2e (?:within|±[0-9.]+% not reached|[0-9.,]+ ms, 95% sequence)`)
	// "calm (on its mean)"
	armStatistic = regexp.MustCompile(`(\S+) \(on its (mean|median)\)`)
)

// checkNamedStatistic checks text's claims of what decided against each
// arm's statistic: a claim without an arm's name beside it speaks of the
// arms about (nil: those the text names, or every arm where it names
// none). It returns the claims it checked.
func checkNamedStatistic(t *testing.T, text string, about, arms []string, decided map[string]string) int {
	t.Helper()
	if about == nil {
		for _, arm := range arms {
			if strings.Contains(text, arm) {
				about = append(about, arm)
			}
		}
		if about == nil {
			about = arms
		}
	}
	n := 0
	for _, m := range statisticClaim.FindAllStringSubmatch(text, -1) {
		n++
		for _, arm := range about {
			if decided[arm] != m[1] {
				t.Errorf("%q claims the %s decided for %s, whose manifest says the %s", text, m[1], arm, decided[arm])
			}
		}
	}
	for _, m := range armStatistic.FindAllStringSubmatch(text, -1) {
		n++
		arm := strings.TrimLeft(m[1], "(,;")
		if !slices.Contains(arms, arm) || decided[arm] != m[2] {
			t.Errorf("%q says %s ran on its %s; its manifest says the %s", text, arm, m[2], decided[arm])
		}
	}
	return n
}
