package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// Against SciPy 1.10.1's ttest_ind(a, b, equal_var=False) (its t is
// mean(a) − mean(b), so the sign turns).
func TestWelchT(t *testing.T) {
	for _, c := range []struct {
		a, b []float64
		t, p float64
	}{
		{[]float64{1, 2, 3, 4, 5}, []float64{2, 4, 6, 8, 10}, 1.8973665961010275, 0.10753119493062718},
		{[]float64{1, 2.5}, []float64{10, 11, 12.5}, 9.01838179448413, 0.004903829513334627},
	} {
		got := WelchT(c.a, c.b)
		if math.Abs(got.T-c.t) > 1e-9 || math.Abs(got.P-c.p) > 1e-7 || got.Diff != Mean(c.b)-Mean(c.a) {
			t.Errorf("%v against %v: %+v, want t %g p %g", c.a, c.b, got, c.t, c.p)
		}
	}
	for _, none := range [][2][]float64{{{1}, {2, 3}}, {{1, 1}, {2, 2}}} {
		if got := WelchT(none[0], none[1]); !math.IsNaN(got.P) {
			t.Errorf("%v: p %g, want none", none, got.P)
		}
	}
}

func TestICC(t *testing.T) {
	// Equal sizes: (MSB − MSW) / (MSB + (n − 1) MSW) = (13.5 − 1) / (13.5 + 2).
	if got := ICC([][]float64{{1, 2, 3}, {4, 5, 6}}); math.Abs(got-12.5/15.5) > 1e-12 {
		t.Errorf("ICC %g", got)
	}
	if got := ICC([][]float64{{1, 2, 3}, {3, 1, 2}}); got != 0 {
		t.Errorf("clusters alike: %g, want 0", got)
	}
	if got := ICC([][]float64{{1, 2, 3}}); !math.IsNaN(got) {
		t.Errorf("one cluster: %g", got)
	}
	// Simulated: cluster offsets of variance τ² and noise σ² give
	// τ²/(τ²+σ²) = 0.3 on average.
	rng := rand.New(rand.NewPCG(1, 2))
	var sum float64
	const runs = 400
	for range runs {
		var clusters [][]float64
		for range 12 {
			offset := math.Sqrt(0.3) * rng.NormFloat64()
			var c []float64
			for range 20 {
				c = append(c, offset+math.Sqrt(0.7)*rng.NormFloat64())
			}
			clusters = append(clusters, c)
		}
		sum += ICC(clusters)
	}
	if mean := sum / runs; math.Abs(mean-0.3) > 0.03 {
		t.Errorf("mean ICC %g over %d runs, want 0.3", mean, runs)
	}
}

// ar1 is a series whose neighbours correlate by phi.
func ar1(rng *rand.Rand, n int, phi float64) []float64 {
	out := make([]float64, n)
	prev := 0.0
	for i := range out {
		prev = phi*prev + math.Sqrt(1-phi*phi)*rng.NormFloat64()
		out[i] = 100 + prev
	}
	return out
}

// On correlated trials the ordinary bootstrap's interval of the mean
// covers the truth far less than 95%; the block bootstrap's comes close.
func TestBlockBootstrapCoversCorrelatedTrials(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const runs, n = 300, 300
	var iid, blocked, lag float64
	for r := range runs {
		x := ar1(rng, n, 0.6)
		lag += Lag1Autocorrelation(x)
		if ci := Bootstrap(x, Mean, 400, uint64(r)); ci.Lo <= 100 && 100 <= ci.Hi {
			iid++
		}
		if ci := BlockBootstrap(x, Mean, BlockLength(n, Lag1Autocorrelation(x)), 400, uint64(r)); ci.Lo <= 100 && 100 <= ci.Hi {
			blocked++
		}
	}
	t.Logf("AR(1) φ 0.6, n %d: lag-1 r %.2f; the mean's 95%% interval covered in %.0f%% (bootstrap), %.0f%% (block of %d)",
		n, lag/runs, 100*iid/runs, 100*blocked/runs, BlockLength(n, 0.6))
	if math.Abs(lag/runs-0.6) > 0.03 || iid/runs > 0.8 || blocked/runs < 0.82 {
		t.Errorf("lag-1 %.2f, coverage %.2f (bootstrap) and %.2f (block)", lag/runs, iid/runs, blocked/runs)
	}
	if !MaterialAutocorrelation(0.3, 100) || MaterialAutocorrelation(0.15, 100) || MaterialAutocorrelation(0.05, 10000) {
		t.Error("MaterialAutocorrelation")
	}
	if r := Lag1Autocorrelation([]float64{1, 1, 1}); !math.IsNaN(r) {
		t.Errorf("no spread: %g", r)
	}
}

func TestCompactLetters(t *testing.T) {
	pairs := func(differ ...[2]int) func(i, j int) bool {
		return func(i, j int) bool {
			return slices.Contains(differ, [2]int{i, j}) || slices.Contains(differ, [2]int{j, i})
		}
	}
	for _, c := range []struct {
		name   string
		n      int
		differ func(i, j int) bool
		want   []string
	}{
		{"none differ", 3, pairs(), []string{"a", "a", "a"}},
		{"all differ", 3, pairs([2]int{0, 1}, [2]int{0, 2}, [2]int{1, 2}), []string{"a", "b", "c"}},
		// Not transitive: 0 differs from 2, 1 from neither.
		{"a bridge", 3, pairs([2]int{0, 2}), []string{"a", "ab", "b"}},
		{"two bridges", 4, pairs([2]int{0, 2}, [2]int{0, 3}, [2]int{1, 3}), []string{"a", "ab", "bc", "c"}},
	} {
		got, ok := CompactLetters(c.n, c.differ)
		if !ok || !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	// Whatever the pattern, the letters say exactly which pairs differ.
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		n := 2 + rng.IntN(7)
		diff := map[[2]int]bool{}
		for i := range n {
			for j := i + 1; j < n; j++ {
				diff[[2]int{i, j}] = rng.IntN(3) == 0
			}
		}
		letters, ok := CompactLetters(n, func(i, j int) bool { return diff[[2]int{i, j}] })
		if !ok {
			t.Fatalf("%d items: no display", n)
		}
		for i := range n {
			for j := i + 1; j < n; j++ {
				share := false
				for _, l := range letters[i] {
					share = share || slices.Contains([]rune(letters[j]), l)
				}
				if share == diff[[2]int{i, j}] {
					t.Fatalf("%v: items %d and %d share a letter: %v, differ: %v", letters, i, j, share, diff[[2]int{i, j}])
				}
			}
		}
	}
}

// Whatever the distribution, a new draw lands above ChanceBound's order
// statistic with the chance it says (1/21 for the 20th of 20), where the
// interpolated p95 of 20 normal draws is exceeded 8.7% of the time.
func TestChanceBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, c := range []struct {
		name string
		draw func() float64
	}{{"normal", rng.NormFloat64}, {"lognormal", func() float64 { return math.Exp(rng.NormFloat64()) }}} {
		for _, n := range []int{20, 60} {
			const runs = 40000
			above := 0
			var chance float64
			for range runs {
				draws := make([]float64, n)
				for i := range draws {
					draws[i] = c.draw()
				}
				slices.Sort(draws)
				var bound float64
				bound, _, chance = ChanceBound(draws, 0.95)
				if c.draw() > bound {
					above++
				}
			}
			if got := float64(above) / runs; math.Abs(got-chance) > 0.004 || chance > 0.05 {
				t.Errorf("%s, n %d: %.4f of new draws above the bound, which says %.4f", c.name, n, got, chance)
			}
		}
	}
	if v, k, chance := ChanceBound([]float64{1, 2, 3}, 0.95); v != 3 || k != 3 || chance != 0.25 {
		t.Errorf("three values: %g, the %d-th, %g", v, k, chance)
	}
}
