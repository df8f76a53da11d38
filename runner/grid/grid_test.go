package grid

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tokentop/tokentop/backends/replay"
	"github.com/tokentop/tokentop/metrics"
	"github.com/tokentop/tokentop/metrics/telemetry"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/runner"
	"github.com/tokentop/tokentop/session"
)

const smallGrid = `name = "small"
profile = "quick"
backend = "builtin"
model = "stories260K"
trials = 4
warmup = 0
repetitions = 2
seed = 3
[axes]
threads = [1, 2]
max_tokens = [4, 8]
[[exclude]]
threads = 2
max_tokens = 8
`

func expand(t *testing.T, src, out string) *Matrix {
	t.Helper()
	return expandAt(t, "small.toml", src, out)
}

// expandAt is expand of a grid file at path.
func expandAt(t *testing.T, path, src, out string) *Matrix {
	t.Helper()
	g, err := profiles.ParseGrid(path, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Expand(g, runner.Options{OutDir: out, Trials: runner.NoOverride, Warmup: runner.NoOverride, MaxTokens: runner.NoOverride, Power: telemetry.PowerOff})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestOrderSpreadsRepetitionsAndIsSeeded(t *testing.T) {
	m := expand(t, smallGrid, t.TempDir())
	order := m.Order()
	if len(order) != 6 {
		t.Fatalf("%d slots; want 3 cells × 2 repetitions", len(order))
	}
	for rep := 1; rep <= 2; rep++ {
		var cells []int
		for _, s := range order[(rep-1)*3 : rep*3] {
			if s.Repetition != rep {
				t.Fatalf("slot %+v in pass %d: repetitions must not run back to back", s, rep)
			}
			cells = append(cells, s.Cell)
		}
		if slices.Sort(cells); !slices.Equal(cells, []int{0, 1, 2}) {
			t.Errorf("pass %d runs cells %v", rep, cells)
		}
	}
	if again := expand(t, smallGrid, t.TempDir()).Order(); !slices.Equal(again, order) {
		t.Error("the same seed gave another order")
	}
	blocked := expand(t, strings.Replace(smallGrid, "seed = 3", "seed = 3\norder = \"blocked\"", 1), t.TempDir()).Order()
	for i, s := range blocked {
		if s.Cell != i%3 {
			t.Fatalf("blocked order %v", blocked)
		}
	}
	// Some seed shuffles the two passes differently.
	differs := false
	for seed := range 20 {
		o := expand(t, strings.Replace(smallGrid, "seed = 3", "seed = "+strconv.Itoa(seed+1), 1), t.TempDir()).Order()
		differs = differs || !slices.Equal([]int{o[0].Cell, o[1].Cell, o[2].Cell}, []int{o[3].Cell, o[4].Cell, o[5].Cell})
	}
	if !differs {
		t.Error("every pass ran in the same order: the shuffle is not per pass")
	}
}

// A grid stopped in the middle of a session goes on where it stopped:
// the trials measured stay, the cut session's rest runs as a session of
// its own, and cells already done are not run again.
func TestResumeRunsOnlyWhatIsLeft(t *testing.T) {
	out := t.TempDir()
	m := expand(t, smallGrid, out)
	ctx, cancel := context.WithCancel(context.Background())
	sessions := 0
	err := m.Run(ctx, func(ev Event) {
		if _, ok := ev.Event.(runner.Started); ok {
			sessions++
		}
		if td, ok := ev.Event.(runner.TrialDone); ok && sessions == 2 && td.Record.Trial == 2 {
			cancel() // two trials into the second session
		}
	})
	if err == nil || sessions != 2 {
		t.Fatalf("first start: %v after %d sessions", err, sessions)
	}
	// What is left depends on how far the second session got before the
	// cancel reached it (events trail the runner a little); whatever it
	// is, the resume runs exactly that.
	m = expand(t, smallGrid, out)
	pending := 0
	for _, s := range m.Order() {
		if m.Left(s) > 0 {
			pending++
		}
	}
	if pending < 4 || m.Left(m.Order()[0]) != 0 {
		t.Fatalf("%d slots pending after the first session and a cut second; the first has %d left", pending, m.Left(m.Order()[0]))
	}
	started := 0
	if err := m.Run(context.Background(), func(ev Event) {
		if _, ok := ev.Event.(runner.Started); ok {
			started++
		}
	}); err != nil {
		t.Fatal(err)
	}
	if started != pending {
		t.Errorf("the resume ran %d sessions; want the %d slots with trials left", started, pending)
	}
	for _, s := range expand(t, smallGrid, out).Order() {
		if left := expand(t, smallGrid, out).Left(s); left != 0 {
			t.Errorf("slot %+v has %d trials left after the resume", s, left)
		}
	}
	data, _ := os.ReadFile(filepath.Join(m.Dir, ManifestName))
	if n := strings.Count(string(data), "status = \"complete\""); n < 6 {
		t.Errorf("%d complete runs in the grid manifest; want one per slot at least:\n%s", n, data)
	}
	cmp, err := Compare(m.Dir, "", session.TestOptions{Resamples: 200, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var threads []string
	for _, m := range cmp.Means {
		if m.Axis == "threads" {
			threads = append(threads, m.Value)
		}
	}
	if !slices.Equal(threads, []string{"1", "2"}) {
		t.Errorf("the threads axis's means in the order %v; want the grid's, 1 then 2", threads)
	}
	for _, r := range cmp.Rows {
		if r.N != 8 || r.Rank < 1 {
			t.Errorf("%s: %d trials (want 4 per repetition, 8), rank %d", r.Cell, r.N, r.Rank)
		}
	}
	// The report's Set-up: the grid, its plan and the machine it ran on.
	// The sessions run are the first start's two and the resume's: six
	// where the cancel reached the second session only after its last
	// trial (once, in a clean-clone CI run), else seven.
	setup := map[string]string{}
	for _, row := range cmp.Setup {
		setup[row[0]] = row[1]
	}
	wantRun := fmt.Sprintf("3 cells × 2 repetitions; %d sessions run (a repetition cut short goes on as a session of its own), 0 did not run", 2+started)
	if setup["cells · repetitions"] != wantRun || setup["axes"] != "threads × max_tokens" ||
		!strings.Contains(setup["machine"], "cores") || setup["order · seed"] != "shuffle, seed 3" {
		t.Errorf("set-up %v", setup)
	}
}

// Rows that no test tells apart share a rank; a row slower than both
// ranks after them.
func TestRanksTieWhereNoTestTellsRowsApart(t *testing.T) {
	c := &Comparison{RankBy: e2eRank, Rows: []Row{
		{Cell: "slow", ranked: steps(20, 20), E2E: metrics.Estimate{Value: 20.2}},
		{Cell: "a", ranked: steps(10, 20), E2E: metrics.Estimate{Value: 10.2}},
		{Cell: "b", ranked: steps(10.01, 20), E2E: metrics.Estimate{Value: 10.21}},
	}}
	c.rank()
	got := ranksAndGroups(c)
	if got["a"] != "1a" || got["b"] != "1a" || got["slow"] != "3b" || c.Rows[2].Cell != "slow" || c.Pairs != 3 {
		t.Errorf("ranks and groups %v, order %v, %d pairs", got, []string{c.Rows[0].Cell, c.Rows[1].Cell, c.Rows[2].Cell}, c.Pairs)
	}
}

// steps are n values from base, a tenth apart in a cycle of five: a
// cell's trials, alike enough that only the base tells cells apart.
func steps(base float64, n int) []float64 {
	var out []float64
	for i := range n {
		out = append(out, base+float64(i%5)*0.1)
	}
	return out
}

// ranksAndGroups are each row's rank and group letters: "1ab".
func ranksAndGroups(c *Comparison) map[string]string {
	got := map[string]string{}
	for _, r := range c.Rows {
		got[r.Cell] = fmt.Sprint(r.Rank, r.Group)
	}
	return got
}

// Pairwise tests are not transitive: fast differs from slow, and mid
// from neither. Equal ranks would hide it; the groups say it (fast "a",
// mid "ab", slow "b").
func TestGroupsShowWhatNoRankCan(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	series := func(mean float64) []float64 {
		out := make([]float64, 30)
		for i := range out {
			out[i] = mean + rng.NormFloat64()
		}
		return out
	}
	c := &Comparison{RankBy: e2eRank, Rows: []Row{
		{Cell: "slow", ranked: series(11), E2E: metrics.Estimate{Value: 11}},
		{Cell: "mid", ranked: series(10.5), E2E: metrics.Estimate{Value: 10.5}},
		{Cell: "fast", ranked: series(10), E2E: metrics.Estimate{Value: 10}},
	}}
	c.rank()
	got := ranksAndGroups(c)
	if got["fast"] != "1a" || got["mid"] != "1ab" || got["slow"] != "2b" {
		t.Errorf("ranks and groups %v; want fast 1a, mid 1ab, slow 2b", got)
	}
	if m := c.Method(); !strings.Contains(m, "rows that share a letter are told apart by no test") || strings.Contains(m, "share a rank") {
		t.Errorf("method: %s", m)
	}
}

// Which of two rows is faster comes from the test's own effect, not the
// medians: here x's median is the higher (60 against 50), yet x is below
// y in 58% of pairs, which is what Mann-Whitney found significant.
func TestRankDirectionComesFromTheTest(t *testing.T) {
	var x, y []float64
	for i := range 200 {
		// x: 30% at 1, 70% at 60; y: 60% at 50, 40% at 70 (a little
		// spread, so that the values are not all ties).
		jitter := float64(i) * 1e-4
		if i%10 < 3 {
			x = append(x, 1+jitter)
		} else {
			x = append(x, 60+jitter)
		}
		if i%10 < 6 {
			y = append(y, 50+jitter)
		} else {
			y = append(y, 70+jitter)
		}
	}
	c := &Comparison{RankBy: e2eRank, Rows: []Row{
		{Cell: "x", ranked: x, E2E: metrics.Estimate{Value: metrics.Median(x)}},
		{Cell: "y", ranked: y, E2E: metrics.Estimate{Value: metrics.Median(y)}},
	}}
	if mw := metrics.MannWhitney(x, y); !(mw.P < 0.05) || !(c.Rows[0].E2E.Value > c.Rows[1].E2E.Value) {
		t.Fatalf("the crafted grid: p %g, medians %g and %g", mw.P, c.Rows[0].E2E.Value, c.Rows[1].E2E.Value)
	}
	c.rank()
	if c.Rows[0].Cell != "x" || c.Rows[0].Rank != 1 || c.Rows[1].Rank != 2 || c.Rows[0].Group == c.Rows[1].Group {
		t.Errorf("rows %s rank %d %q, %s rank %d %q: want x first", c.Rows[0].Cell, c.Rows[0].Rank, c.Rows[0].Group, c.Rows[1].Cell, c.Rows[1].Rank, c.Rows[1].Group)
	}
}

// Two cells alike but for repetitions that drift (ICC 0.3): pooling their
// trials into one Mann-Whitney test calls them different far more often
// than 5%; comparing them over their repetitions does not.
func TestRepetitionsThatDriftAreNotEvidence(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	e2eMetric, _ := session.LookupMetric("e2e_ms")
	row := func(name string, reps int) Row {
		r := Row{Cell: name, Sessions: reps}
		for range reps {
			offset := math.Sqrt(0.3) * rng.NormFloat64()
			var recs []*session.Record
			for range 20 {
				rec := &session.Record{Phase: session.PhaseTimed, Status: session.StatusOK}
				rec.E2EMs = 100 * math.Exp(0.05*(offset+math.Sqrt(0.7)*rng.NormFloat64()))
				recs = append(recs, rec)
			}
			r.perSession = append(r.perSession, recs)
			r.ranked = append(r.ranked, session.Values(recs, e2eMetric)...)
		}
		r.E2E.Value = metrics.Median(r.ranked)
		r.ICC = metrics.ICC(sessionValues(r.perSession, e2eMetric))
		return r
	}
	const runs = 400
	pooledWrong, repeatedWrong := 0, 0
	var icc float64
	for range runs {
		a, b := row("a", 3), row("b", 3)
		icc += a.ICC
		if metrics.MannWhitney(a.ranked, b.ranked).P < 0.05 {
			pooledWrong++
		}
		c := &Comparison{RankBy: e2eRank, Rows: []Row{a, b}}
		c.rank()
		if c.Repeated != 1 {
			t.Fatalf("%d pairs over repetitions", c.Repeated)
		}
		if c.Rows[0].Group != c.Rows[1].Group {
			repeatedWrong++
		}
	}
	t.Logf("ICC %.2f: pooled trials called alike cells different in %.1f%% of %d grids, repetitions in %.1f%%",
		icc/runs, 100*float64(pooledWrong)/runs, runs, 100*float64(repeatedWrong)/runs)
	if float64(pooledWrong)/runs < 0.2 || float64(repeatedWrong)/runs > 0.075 {
		t.Errorf("false positives: pooled %d, over repetitions %d of %d", pooledWrong, repeatedWrong, runs)
	}

	// Three repetitions a cell tell a doubling apart on each cell's own
	// variance between repetitions.
	var rows []Row
	for k := range 8 {
		r := row(fmt.Sprintf("c%d", k), 3)
		scale := math.Pow(2, float64(k))
		for _, recs := range r.perSession {
			for _, rec := range recs {
				rec.E2EMs *= scale
			}
		}
		r.ranked = nil
		for _, recs := range r.perSession {
			r.ranked = append(r.ranked, session.Values(recs, e2eMetric)...)
		}
		r.E2E.Value = metrics.Median(r.ranked)
		rows = append(rows, r)
	}
	c := &Comparison{RankBy: e2eRank, Rows: rows}
	c.rank()
	for k, r := range c.Rows {
		if r.Rank != k+1 || r.Group != string(rune('a'+k)) {
			t.Errorf("row %s: rank %d, group %q; want every doubling told apart", r.Cell, r.Rank, r.Group)
		}
	}
}

// Cells whose drift between repetitions differs 80-fold (phase-grid's
// spread): one variance pooled over the cells called alike noisy cells
// different 17.9% of the time and quiet cells 5.2× apart alike. Each pair
// on its own cells' variances holds the error rate, over every pair of
// alike cells before Holm, and still tells the quiet cells apart.
func TestCellsThatDriftApartAreTestedOnTheirOwnVariance(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	e2eMetric, _ := session.LookupMetric("e2e_ms")
	// A cell of reps sessions of 20 trials around typical ms, its
	// sessions drifting by drift (log sd).
	cell := func(name string, typical, drift float64, reps int) Row {
		r := Row{Cell: name, Sessions: reps}
		for range reps {
			offset := drift * rng.NormFloat64()
			var recs []*session.Record
			for range 20 {
				rec := &session.Record{Phase: session.PhaseTimed, Status: session.StatusOK}
				rec.E2EMs = typical * math.Exp(offset+0.01*rng.NormFloat64())
				recs = append(recs, rec)
			}
			r.perSession = append(r.perSession, recs)
			r.ranked = append(r.ranked, session.Values(recs, e2eMetric)...)
		}
		r.E2E.Value = metrics.Median(r.ranked)
		return r
	}
	quiet, noisy := 0.02, 0.02*math.Sqrt(80)
	for _, reps := range []int{2, 3} {
		const runs = 1000
		var wrong, pairs int
		for range runs {
			// Six alike cells, every other one noisy.
			var rows []Row
			for k := range 6 {
				drift := quiet
				if k%2 == 1 {
					drift = noisy
				}
				rows = append(rows, cell(fmt.Sprint(k), 100, drift, reps))
			}
			c := &Comparison{RankBy: e2eRank, Rows: rows}
			medians, _ := c.repetitions()
			for i := range rows {
				for j := i + 1; j < len(rows); j++ {
					pairs++
					if p, _ := c.pairTest(i, j, medians); p < session.Alpha {
						wrong++
					}
				}
			}
		}
		rate := float64(wrong) / float64(pairs)
		t.Logf("%d repetitions: alike cells called different in %.1f%% of %d pairs before Holm", reps, 100*rate, pairs)
		// Welch–Satterthwaite is a little liberal for two values a side
		// and variances 80-fold apart (about 6% of the mixed pairs).
		if rate > 0.06 {
			t.Errorf("%d repetitions: %.1f%% false positives", reps, 100*rate)
		}
	}

	// The quiet cells 5.2× apart beside noisy ones: told apart.
	rows := []Row{cell("fast", 10, quiet, 3), cell("slow", 52, quiet, 3), cell("noisy-a", 30, noisy, 3), cell("noisy-b", 31, noisy, 3)}
	c := &Comparison{RankBy: e2eRank, Rows: rows}
	c.rank()
	group := map[string]string{}
	for _, r := range c.Rows {
		group[r.Cell] = r.Group
	}
	if got := ranksAndGroups(c); group["fast"] == "" || group["slow"] == "" || strings.ContainsAny(group["fast"], group["slow"]) || c.Repeated != c.Pairs {
		t.Errorf("%v over %d of %d pairs by repetitions: want fast and slow told apart", got, c.Repeated, c.Pairs)
	}
	if m := c.Method(); !strings.Contains(m, "Welch's t test on the logs of their repetitions' medians, each cell on its own variance") {
		t.Errorf("method: %q", m)
	}
}

// An axis value's geometric mean counts only the rows matched across the
// axis: a value that ran with fewer of the others is not flattered.
func TestAxisMeansUseMatchedRowsOnly(t *testing.T) {
	row := func(model, dtype string, e2e float64) Row {
		return Row{Values: []string{model, dtype}, N: 10, Arm: "greedy", E2E: metrics.Estimate{Value: e2e}, TokensPerS: 1000 / e2e}
	}
	c := &Comparison{RankBy: e2eRank, Axes: []string{"model", "dtype"}, Rows: []Row{
		row("tiny", "f32", 1), // tiny has no q8_0: unmatched for dtype
		row("big", "f32", 40), row("big", "q8_0", 10),
	}}
	c.axisMeans()
	want := map[string]float64{"dtype f32": 4, "dtype q8_0": 1, "model tiny": 1, "model big": 40}
	for _, m := range c.Means {
		// dtype: only big ran with both; model: only f32 ran on both.
		if r := want[m.Axis+" "+m.Value]; m.Rows != 1 || math.Abs(m.E2ERatioVsFaster-r) > 1e-9 {
			t.Errorf("%+v: want 1 matched row and %g× the fastest", m, r)
		}
	}
	if len(c.Means) != 4 {
		t.Errorf("means %+v", c.Means)
	}
}

// Past its time budget a grid starts no session, and says so.
func TestTimeBudgetStopsStartingSessions(t *testing.T) {
	m := expand(t, strings.Replace(smallGrid, "seed = 3", "seed = 3\nbudget = \"1ns\"", 1), t.TempDir())
	started := 0
	err := m.Run(context.Background(), func(ev Event) {
		if _, ok := ev.Event.(runner.Started); ok {
			started++
		}
	})
	if !errors.Is(err, ErrBudgetSpent) || started != 0 {
		t.Errorf("%v after %d sessions; want the budget spent before any", err, started)
	}
}

// The phase split fits TTFT against the prompt's tokens within each group
// of cells alike in the other axes, and says the slope with its interval.
func TestPhaseSplitFitsPrefillPerGroup(t *testing.T) {
	row := func(threads string, promptTokens int, ttft float64) Row {
		var sessions [][]*session.Record
		for range 2 { // two repetitions, a session each
			var trials []*session.Record
			for i := range 5 {
				r := &session.Record{PromptTokens: promptTokens, OutputTokens: 16}
				r.TTFTMs, r.TPOTMs = ttft+0.01*float64(i-2), 1 // TTFT on a line, its median on it
				trials = append(trials, r)
			}
			sessions = append(sessions, trials)
		}
		return Row{Values: []string{threads, fmt.Sprint(promptTokens)}, Arm: "greedy", N: 10, perSession: sessions, decodeMB: math.NaN()}
	}
	c := &Comparison{RankBy: e2eRank, Axes: []string{"threads", "prompt_words"}, Rows: []Row{
		row("1", 100, 52), row("1", 200, 102), row("1", 400, 202),
		row("2", 100, 27), row("2", 400, 102), // 2 threads: 0.25 ms per token
	}}
	c.phaseFits()
	var prefill []PhaseFit
	for _, f := range c.Fits {
		if f.What == "TTFT against prompt tokens" {
			prefill = append(prefill, f)
		}
	}
	if len(prefill) != 2 || prefill[0].Group != "threads 1 · arm greedy" || math.Abs(prefill[0].Slope-0.5) > 1e-9 || math.Abs(prefill[1].Slope-0.25) > 1e-9 ||
		!strings.Contains(prefill[0].Words, "TTFT rises 500.0 ms per 1,000 prompt tokens [500.0, 500.0]") || !strings.Contains(prefill[0].Words, "(1/slope: 2000.0 prompt tokens/s [2000.0, 2000.0])") ||
		prefill[0].N != 6 || prefill[1].N != 4 {
		t.Fatalf("prefill fits %+v", prefill)
	}
	// One session per prompt length: a slope, but no interval to claim.
	for i := range c.Rows {
		c.Rows[i].perSession = c.Rows[i].perSession[:1]
	}
	c.Fits = nil
	c.phaseFits()
	if w := c.Fits[1].Words; c.Fits[1].N != 2 || w != "no slope: 2 sessions give a line no interval; run the grid with repetitions = 2 or more" {
		t.Errorf("two sessions: %q", w)
	}
}

// A cell whose server does not answer is marked failed with the reason,
// and the grid goes on with the others: here two llama-servers, one of
// them replaying recorded answers and one gone.
func TestACellWhoseServerIsDownIsMarkedAndSkipped(t *testing.T) {
	live := replay.NewServer(t, replay.Route{
		"GET /health":      replay.Serve(replay.Load(t, "llamacpp/health")),
		"GET /props":       replay.Serve(replay.Load(t, "llamacpp/props")),
		"POST /completion": replay.Serve(replay.Load(t, "llamacpp/completion_t0_stream")),
	})
	gone := replay.NewServer(t, replay.Route{})
	goneURL := gone.URL
	gone.Close()
	src := "name = \"servers\"\nprofile = \"quick\"\nbackend = \"llamacpp\"\ntrials = 3\nwarmup = 0\n[axes]\nurl = [\"" + goneURL + "\", \"" + live.URL + "\"]\nmax_tokens = [32]\n"
	g, err := profiles.ParseGrid("servers.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Expand(g, runner.Options{OutDir: t.TempDir(), Trials: runner.NoOverride, Warmup: runner.NoOverride, MaxTokens: runner.NoOverride,
		Power: telemetry.PowerOff, ServerWait: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	if err := m.Run(context.Background(), func(ev Event) {
		if ev.Failed != nil {
			failed = append(failed, ev.Cell.ID+": "+ev.Failed.Error())
		}
	}); !errors.Is(err, ErrSessionsFailed) || !strings.Contains(err.Error(), "1 of the 2 sessions this start had to run: c01 repetition 1: could not run: ") {
		t.Fatalf("the grid's error: %v", err)
	}
	if len(failed) != 1 || !strings.HasPrefix(failed[0], "c01: ") || !strings.Contains(failed[0], "llamacpp") {
		t.Fatalf("failed cells %q; want c01 (the server that is gone), named with its backend", failed)
	}
	cmp, err := Compare(m.Dir, "", session.TestOptions{Resamples: 100, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(cmp.Rows) != 1 || cmp.Rows[0].Cell != "c02" || cmp.Rows[0].N != 3 || len(cmp.Caveats) == 0 || !strings.Contains(cmp.Caveats[0], "c01") {
		t.Errorf("rows %+v, caveats %q", cmp.Rows, cmp.Caveats)
	}
}

// With the profile's usd_per_hour each cell has its cost per million
// output tokens, by the summary's rule.
func TestCellsCostPerMillionTokens(t *testing.T) {
	dir := t.TempDir()
	profile := filepath.Join(dir, "priced.toml")
	os.WriteFile(profile, []byte("max_tokens = 8\nwarmup = 0\ntrials = 3\nusd_per_hour = 3.6\nprompts = [\"Once upon a time\"]\n[[arms]]\nname = \"greedy\"\n"), 0o644)
	m := expandAt(t, filepath.Join(dir, "small.toml"), "profile = \""+profile+"\"\nbackend = \"builtin\"\nmodel = \"stories260K\"\n[axes]\nthreads = [1]\n", dir)
	if err := m.Run(context.Background(), func(Event) {}); err != nil {
		t.Fatal(err)
	}
	cmp, err := Compare(m.Dir, "", session.TestOptions{Resamples: 100, Seed: 1})
	if err != nil || len(cmp.Rows) != 1 {
		t.Fatal(err, cmp)
	}
	r := cmp.Rows[0]
	if want := 1000 / r.TokensPerS; math.Abs(r.USDPer1M-want) > 1e-9*want {
		t.Errorf("$/1M %v at %v tok/s; want %v", r.USDPer1M, r.TokensPerS, want)
	}
	var out strings.Builder
	cmp.Write(&out, "text")
	if !strings.Contains(out.String(), "$/1M tokens") {
		t.Errorf("no cost column:\n%s", out.String())
	}
	// In a terminal of 80 columns, no line is wider: the table goes into
	// blocks, the prose wraps.
	cmp.Width = 80
	out.Reset()
	cmp.Write(&out, "text")
	for _, line := range strings.Split(out.String(), "\n") {
		if n := utf8.RuneCountInString(line); n > 80 {
			t.Errorf("a line of %d cells at 80: %q", n, line)
		}
	}
	if !strings.Contains(out.String(), "$/1M tokens") || strings.Count(out.String(), "rank") < 2 {
		t.Errorf("the table's blocks at 80 lack the cost column or repeat no key column:\n%s", out.String())
	}
}

// A cell cut short after a couple of trials cannot be told apart from
// any other by the tests, however slow: it is unranked, not ranked 1
// beside the fastest.
func TestTooSmallACellIsUnranked(t *testing.T) {
	c := &Comparison{RankBy: e2eRank, Rows: []Row{
		{Cell: "fast", ranked: steps(1, 10), E2E: metrics.Estimate{Value: 1.2}},
		{Cell: "mid", ranked: steps(10, 10), E2E: metrics.Estimate{Value: 10.2}},
		{Cell: "cut", ranked: steps(100, 2), E2E: metrics.Estimate{Value: 100}},
	}}
	c.rank()
	got := map[string]int{}
	for _, r := range c.Rows {
		got[r.Cell] = r.Rank
	}
	if got["fast"] != 1 || got["mid"] != 2 || got["cut"] != 0 || c.Rows[2].Cell != "cut" {
		t.Errorf("ranks %v; want fast 1, mid 2 and cut unranked, last", got)
	}
}

// A slope is read as a rate (1/slope) only where it is known to be
// positive: the reciprocal of a slope whose interval reaches zero could be
// any rate, and the words must not name one.
func TestInverseRateOnlyForAPositiveSlope(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		fit  metrics.LinearFit
		want string
	}{
		{metrics.LinearFit{Slope: 0.02, SlopeCI: metrics.CI{Lo: 0.01, Hi: 0.04}}, " (1/slope: " + session.FormatValue(50) + " GB/s [" + session.FormatValue(25) + ", " + session.FormatValue(100) + "], the rate)"},
		{metrics.LinearFit{Slope: 0.02, SlopeCI: metrics.CI{Lo: -0.1, Hi: 0.2}}, ""},
		{metrics.LinearFit{Slope: 0.02, SlopeCI: metrics.CI{Lo: 0, Hi: 0.2}}, ""},
		{metrics.LinearFit{Slope: -0.02, SlopeCI: metrics.CI{Lo: nan, Hi: nan}}, ""},
		{metrics.LinearFit{Slope: 0.02, SlopeCI: metrics.CI{Lo: nan, Hi: nan}}, ""}, // no interval: no words (phaseFits says why)
	} {
		if got := inverseRate(c.fit, 1, "GB/s", ", the rate"); got != c.want {
			t.Errorf("%+v: %q, want %q", c.fit, got, c.want)
		}
	}
}

// TestACellWhoseServerDropsEveryRequestDoesNotStallTheGrid: a cell whose
// server answers its probes but drops every request used to run for
// ever, and the grid with it. Its session ends, failed; the cells after
// it run; the grid says how many sessions failed.
func TestACellWhoseServerDropsEveryRequestDoesNotStallTheGrid(t *testing.T) {
	routes := func(completion http.HandlerFunc) string {
		return replay.NewServer(t, replay.Route{
			"GET /health":      replay.Serve(replay.Load(t, "llamacpp/health")),
			"GET /props":       replay.Serve(replay.Load(t, "llamacpp/props")),
			"POST /completion": completion,
		}).URL
	}
	dropping, live := routes(replay.Drop(false)), routes(replay.Serve(replay.Load(t, "llamacpp/completion_t0_stream")))
	src := "name = \"drops\"\nprofile = \"quick\"\nbackend = \"llamacpp\"\ntrials = 20\nwarmup = 0\norder = \"blocked\"\n[axes]\nurl = [\"" + dropping + "\", \"" + live + "\"]\nmax_tokens = [32]\n"
	g, err := profiles.ParseGrid("drops.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Expand(g, runner.Options{OutDir: t.TempDir(), Trials: runner.NoOverride, Warmup: runner.NoOverride, MaxTokens: runner.NoOverride,
		Power: telemetry.PowerOff, ServerWait: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	err = m.Run(context.Background(), func(Event) {})
	if !errors.Is(err, ErrSessionsFailed) || !strings.Contains(err.Error(), "1 of the 2 sessions this start had to run: c01 repetition 1: failed: server lost: ") ||
		!strings.Contains(err.Error(), "failed every request") {
		t.Fatalf("the grid's error: %v", err)
	}
	if runs := m.State.Cells[1].Runs; len(runs) != 1 || runs[0].Status != session.StatusComplete {
		t.Errorf("the cell after it: %+v", runs)
	}
}

// The grid's JSON holds numbers as numbers and unknowns as null, as the
// docs promise (grids.md): a script reads n as a number, not "10", and an
// unranked row's rank and an unknown J/token as null, not "—".
func TestGridJSONHoldsNumbers(t *testing.T) {
	c := &Comparison{RankBy: e2eRank, Name: "g", Axes: []string{"threads"}, Rows: []Row{
		{Cell: "fast", Label: "1 thread", Arm: "greedy", N: 10, ranked: steps(1, 10), E2E: metrics.Estimate{Value: 1.2}, Energy: session.EnergyOf(nil, nil), USDPer1M: math.NaN(), ICC: math.NaN()},
		{Cell: "slow", Label: "3 threads", Arm: "greedy", N: 10, ranked: steps(10, 10), E2E: metrics.Estimate{Value: 10.2}, Energy: session.EnergyOf(nil, nil), USDPer1M: math.NaN(), ICC: math.NaN()},
		{Cell: "cut", Label: "2 threads", Arm: "greedy", N: 1, ranked: steps(100, 1), E2E: metrics.Estimate{Value: 100}, Energy: session.EnergyOf(nil, nil), USDPer1M: math.NaN(), ICC: math.NaN()},
	}, Means: []AxisMean{{Axis: "threads", Value: "1", Rows: 1, E2E: 1.2, TokensPerS: math.NaN(), E2ERatioVsFaster: 1}}}
	c.rank()
	var b strings.Builder
	if err := c.Write(&b, "json"); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Rows  []map[string]any `json:"rows"`
		Means []map[string]any `json:"axis_means"`
	}
	if err := json.Unmarshal([]byte(b.String()), &out); err != nil {
		t.Fatal(err, b.String())
	}
	fast, cut := out.Rows[0], out.Rows[2]
	if fast["n"] != 10.0 || fast["rank"] != 1.0 || fast["e2e_median_ms"] != 1.2 || fast["j_per_token"] != nil || fast["cell"] != "fast" {
		t.Errorf("fast: %v", fast)
	}
	if v, ok := cut["rank"]; !ok || v != nil || cut["group"] != nil {
		t.Errorf("cut (unranked): %v", cut)
	}
	if m := out.Means[0]; m["e2e_geomean_ms"] != 1.2 || m["tokens_per_s_geomean"] != nil || m["matched_rows"] != 1.0 {
		t.Errorf("axis mean: %v", m)
	}
}

// The workload axes reach each cell's plan: its lengths in tokens, or its
// prompts file read relative to the grid file's folder; cells that
// differ in them are different experiments.
func TestWorkloadAxesReachTheCells(t *testing.T) {
	m := expand(t, "profile = \"quick\"\nbackend = \"builtin\"\n[axes]\ninput_tokens = [16, \"32-64\"]\noutput_tokens = [8]\n", t.TempDir())
	if len(m.Cells) != 2 {
		t.Fatalf("%d cells", len(m.Cells))
	}
	first, second := m.Cells[0], m.Cells[1]
	if first.opts.InputTokens == nil || first.opts.InputTokens.Fixed != 16 || second.opts.InputTokens.Max != 64 || first.opts.OutputTokens.Fixed != 8 ||
		first.Hash == second.Hash {
		t.Errorf("cells %+v %+v", first.opts, second.opts)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.jsonl"), []byte(`{"prompt": "Once upon a time"}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("The cat sat\n"), 0o644)
	g, err := profiles.ParseGrid(filepath.Join(dir, "g.toml"), []byte("profile = \"quick\"\nbackend = \"builtin\"\n[axes]\nprompts_file = [\"a.jsonl\", \"b.txt\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := Expand(g, runner.Options{OutDir: t.TempDir(), Trials: runner.NoOverride, Warmup: runner.NoOverride, MaxTokens: runner.NoOverride, Power: telemetry.PowerOff})
	if err != nil {
		t.Fatal(err)
	}
	if got := files.Cells[0].opts.PromptsFile; got != filepath.Join(dir, "a.jsonl") || files.Cells[0].Hash == files.Cells[1].Hash {
		t.Errorf("prompts file %q, hashes %s %s", got, files.Cells[0].Hash, files.Cells[1].Hash)
	}
}

// e2eRank is the ranking metric of the comparisons these tests build.
var e2eRank, _ = session.LookupMetric("e2e_ms")

// Asked to, a grid ranks its rows on energy per token (lower first) or on
// a throughput (higher first), and says which in its method.
func TestGridRanksOnTheMetricAsked(t *testing.T) {
	energy, _ := session.LookupMetric("j_per_token")
	c := &Comparison{RankBy: energy, Rows: []Row{
		{Cell: "hungry", ranked: steps(2, 20)}, {Cell: "frugal", ranked: steps(1, 20)}, {Cell: "mid", ranked: steps(1.5, 20)},
	}}
	c.rank()
	if got := ranksAndGroups(c); got["frugal"] != "1a" || got["mid"] != "2b" || got["hungry"] != "3c" || c.Rows[0].Cell != "frugal" {
		t.Errorf("on energy: %v", got)
	}
	if m := c.Method(); !strings.HasPrefix(m, "rank: 1 + the rows significantly lower in energy per token (") {
		t.Errorf("method %q", m)
	}
	tps, _ := session.LookupMetric("output_tps")
	c = &Comparison{RankBy: tps, Rows: []Row{{Cell: "slow", ranked: steps(10, 20)}, {Cell: "fast", ranked: steps(30, 20)}}}
	c.rank()
	if got := ranksAndGroups(c); got["fast"] != "1a" || got["slow"] != "2b" || !strings.Contains(c.Method(), "significantly higher in ") {
		t.Errorf("on tok/s: %v, %q", got, c.Method())
	}
}

// Net energy near idle can be below zero: repetitions' medians are then
// tested as they are, not on their logs (which would be NaN and test
// nothing), and the method says so.
func TestGridRanksEnergyRepetitionsBelowZero(t *testing.T) {
	energy, _ := session.LookupMetric("j_per_token")
	row := func(cell string, medians ...float64) Row {
		r := Row{Cell: cell}
		for _, m := range medians {
			var recs []*session.Record
			for k := range 10 {
				recs = append(recs, &session.Record{Phase: session.PhaseTimed, Status: session.StatusOK, JPerToken: m + 0.01*float64(k%3)})
			}
			r.perSession = append(r.perSession, recs)
			r.ranked = append(r.ranked, session.Values(recs, energy)...)
		}
		return r
	}
	c := &Comparison{RankBy: energy, Rows: []Row{row("idle", -0.02, 0.01, -0.01), row("busy", 1.5, 1.4, 1.6)}}
	c.rank()
	if got := ranksAndGroups(c); got["idle"] != "1a" || got["busy"] != "2b" || c.Repeated != 1 || c.logScale ||
		!strings.Contains(c.Method(), "(some are not above zero, so not on their logs)") {
		t.Errorf("%v, %d over repetitions, log scale %v: %q", got, c.Repeated, c.logScale, c.Method())
	}
}

// A grid file, like a profile, reads only files beside it: a prompts file
// or a profile outside its folder is refused before anything runs.
func TestAGridReadsOnlyFilesBesideIt(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(outside, "p.toml"), []byte("max_tokens = 8\ntrials = 1\nprompts = [\"x\"]\n[[arms]]\nname = \"a\"\n"), 0o644)
	for src, want := range map[string]string{
		"profile = \"quick\"\n[axes]\nprompts_file = [\"../" + filepath.Base(outside) + "/secret.txt\"]\n": "axis prompts_file: \"../",
		"profile = \"" + filepath.Join(outside, "p.toml") + "\"\n[axes]\nthreads = [1]\n":                  "profile: \"" + outside,
	} {
		g, err := profiles.ParseGrid(filepath.Join(dir, "g.toml"), []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		_, err = Expand(g, runner.Options{OutDir: t.TempDir(), Trials: runner.NoOverride, Warmup: runner.NoOverride, MaxTokens: runner.NoOverride})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "is outside the folder of g.toml") {
			t.Errorf("%s: %v", src, err)
		}
	}
}
