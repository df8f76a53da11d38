package metrics

import (
	"math"
	"math/rand/v2"
)

// TTest is a two-sample t test: Diff is mean(b) − mean(a), P its
// two-sided p-value (NaN where it cannot be computed).
type TTest struct {
	Diff, T, DF, P float64
}

// WelchT compares b with a by Welch's t test, each on its own variance,
// its degrees of freedom Welch–Satterthwaite's: for a grid's cells, each
// value one repetition's median, whose drift between repetitions can
// differ 80-fold from cell to cell. One variance pooled over the cells
// (Fisher's LSD) called alike noisy cells different 17% of the time at
// α = 0.05 and quiet cells alike that were not; Smyth's moderated
// variances, estimated from a grid's few cells, 16%; Welch's held
// 2–6% (TestWelchHoldsTheErrorRateOverCellsThatDriftApart). Its price: two
// repetitions give a variance one degree of freedom, so only large
// differences are told apart. Each sample needs two values.
func WelchT(a, b []float64) TTest {
	t := TTest{T: math.NaN(), DF: math.NaN(), P: math.NaN(), Diff: math.NaN()}
	if len(a) < 2 || len(b) < 2 {
		return t
	}
	meanA, varA := meanVar(a)
	meanB, varB := meanVar(b)
	t.Diff = meanB - meanA
	va, vb := varA/float64(len(a)), varB/float64(len(b))
	if !(va+vb > 0) {
		return t
	}
	t.T = t.Diff / math.Sqrt(va+vb)
	t.DF = (va + vb) * (va + vb) / (va*va/float64(len(a)-1) + vb*vb/float64(len(b)-1))
	t.P = FSurvival(t.T*t.T, 1, t.DF) // t² with ν degrees of freedom is F(1, ν)
	return t
}

// meanVar is the mean and the sample variance (n − 1; NaN for one value).
func meanVar(x []float64) (mean, variance float64) {
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	for _, v := range x {
		variance += (v - mean) * (v - mean)
	}
	if len(x) < 2 {
		return mean, math.NaN()
	}
	return mean, variance / float64(len(x)-1)
}

// ICC is the one-way intraclass correlation ICC(1) of values grouped in
// clusters (a grid cell's repetitions): the share of the variance that
// lies between clusters, from the ANOVA mean squares with the unequal-size
// correction n₀. 0 means the clusters differ no more than chance would
// make them; negative estimates are reported as 0. NaN with fewer than two
// clusters of values or no spread within them.
func ICC(clusters [][]float64) float64 {
	var k, total int
	var sum, sumSquaredSizes float64
	for _, c := range clusters {
		if len(c) == 0 {
			continue
		}
		k++
		total += len(c)
		sumSquaredSizes += float64(len(c) * len(c))
		for _, v := range c {
			sum += v
		}
	}
	if k < 2 || total <= k {
		return math.NaN()
	}
	grand := sum / float64(total)
	var between, within float64
	for _, c := range clusters {
		if len(c) == 0 {
			continue
		}
		m := Mean(c)
		between += float64(len(c)) * (m - grand) * (m - grand)
		for _, v := range c {
			within += (v - m) * (v - m)
		}
	}
	msb, msw := between/float64(k-1), within/float64(total-k)
	n0 := (float64(total) - sumSquaredSizes/float64(total)) / float64(k-1)
	if msb+(n0-1)*msw == 0 {
		return math.NaN()
	}
	return max(0, (msb-msw)/(msb+(n0-1)*msw))
}

// Lag1Autocorrelation is the correlation of a series with itself one step
// later: how much a trial's e2e tells of the next one's. Independent
// trials give about 0 (within ±2/√n); drift, thermal state or a cache that
// warms give a positive value. NaN below 3 values or without spread.
func Lag1Autocorrelation(x []float64) float64 {
	if len(x) < 3 {
		return math.NaN()
	}
	m := Mean(x)
	var num, den float64
	for i, v := range x {
		den += (v - m) * (v - m)
		if i > 0 {
			num += (v - m) * (x[i-1] - m)
		}
	}
	if den == 0 {
		return math.NaN()
	}
	return num / den
}

// MaterialAutocorrelation reports whether a lag-1 autocorrelation r over
// n trials is both beyond what chance gives independent trials (the 95%
// bound 1.96/√n) and large enough to matter: at r = 0.1 the variance of a
// mean is about 1.2 times the independent one's.
func MaterialAutocorrelation(r float64, n int) bool {
	return r > 0.1 && r > 1.96/math.Sqrt(float64(n))
}

// Dependence is what a series' trial-to-trial correlation means for its
// intervals: R its lag-1 autocorrelation; Material whether that matters
// (MaterialAutocorrelation); Block the moving-block bootstrap's block when
// it does (0 otherwise); EffectiveN about how many independent trials
// the series is worth, n·(1−R)/(1+R) for an AR(1) series (n where R ≤ 0).
type Dependence struct {
	R          float64
	Material   bool
	Block      int
	EffectiveN float64
}

// DependenceOf measures a series in the order its trials ran.
func DependenceOf(series []float64) Dependence {
	n := len(series)
	d := Dependence{R: Lag1Autocorrelation(series), EffectiveN: float64(n)}
	if d.R > 0 {
		d.EffectiveN = float64(n) * (1 - d.R) / (1 + d.R)
	}
	if d.Material = MaterialAutocorrelation(d.R, n); d.Material {
		d.Block = BlockLength(n, d.R)
	}
	return d
}

// Interval is the 95% bootstrap interval of stat over a series: the
// moving-block bootstrap's where its trials are materially correlated,
// else the ordinary one.
func (d Dependence) Interval(series []float64, stat Statistic, resamples int, seed uint64) CI {
	if d.Block > 0 {
		return BlockBootstrap(series, stat, d.Block, resamples, seed)
	}
	return Bootstrap(series, stat, resamples, seed)
}

// BlockLength is the moving-block bootstrap's block for n trials whose
// lag-1 autocorrelation is r: the plug-in for an AR(1) series of the
// block that minimises the error of the mean's variance, (3n/2)^(1/3) ·
// (2r/(1−r²))^(2/3) (Bühlmann & Künsch 1999; Politis & White 2004), at
// least 2 and at most n/4.
func BlockLength(n int, r float64) int {
	r = min(max(r, 0), 0.95)
	b := math.Cbrt(1.5*float64(n)) * math.Pow(2*r/(1-r*r), 2.0/3)
	return max(2, min(int(math.Ceil(b)), n/4))
}

// BlockBootstrap is Bootstrap for a series whose neighbours are
// correlated: each resample joins blocks of block consecutive values
// starting at random places (the moving-block bootstrap), so that the
// dependence within a block survives, and the interval widens as it
// should. Fewer than MinIntervalN values give NaN bounds.
func BlockBootstrap(values []float64, stat Statistic, block, resamples int, seed uint64) CI {
	n := len(values)
	if n < MinIntervalN || resamples < 1 {
		return CI{math.NaN(), math.NaN()}
	}
	block = min(max(1, block), n)
	rng := rand.New(rand.NewPCG(seed, 0x626c6f636b73))
	scratch := make([]float64, n)
	estimates := make([]float64, resamples)
	for r := range estimates {
		for filled := 0; filled < n; {
			start := rng.IntN(n - block + 1)
			filled += copy(scratch[filled:], values[start:start+block])
		}
		estimates[r] = stat(scratch)
	}
	return percentileCI(estimates)
}

// CompactLetters gives n items, in the order given, letters such that two
// items share a letter exactly when differ does not hold for them (a
// compact letter display, by Piepho's insert-and-absorb, 2004): pairwise
// tests are not transitive, so "not told apart" cannot be a partition
// into ranks. Letters run a–z then A–Z; ok is false where more would be
// needed (the display would not be compact).
func CompactLetters(n int, differ func(i, j int) bool) (letters []string, ok bool) {
	all := make([]bool, n)
	for i := range all {
		all[i] = true
	}
	columns := [][]bool{all}
	for i := range n {
		for j := i + 1; j < n; j++ {
			if !differ(i, j) {
				continue
			}
			var next [][]bool
			for _, c := range columns {
				if !c[i] || !c[j] {
					next = append(next, c)
					continue
				}
				withoutI, withoutJ := append([]bool(nil), c...), append([]bool(nil), c...)
				withoutI[i], withoutJ[j] = false, false
				next = append(next, withoutI, withoutJ)
			}
			columns = absorb(next)
			if len(columns) > 52 {
				return nil, false
			}
		}
	}
	// Letters in the order the items first hold them.
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	letters = make([]string, n)
	used := make([]bool, len(columns))
	next := 0
	for item := range n {
		for k, c := range columns {
			if c[item] && !used[k] {
				used[k] = true
				for other := range n {
					if c[other] {
						letters[other] += alphabet[next : next+1]
					}
				}
				next++
			}
		}
	}
	for i := range letters {
		letters[i] = sortedLetters(letters[i], alphabet)
	}
	return letters, true
}

// absorb drops columns held whole by another (and duplicates): they add
// no pair the other does not.
func absorb(columns [][]bool) [][]bool {
	var kept [][]bool
	for a, c := range columns {
		redundant := false
		for b, d := range columns {
			if a != b && subset(c, d) && (!subset(d, c) || b < a) {
				redundant = true
				break
			}
		}
		if !redundant {
			kept = append(kept, c)
		}
	}
	return kept
}

func subset(c, d []bool) bool {
	for i := range c {
		if c[i] && !d[i] {
			return false
		}
	}
	return true
}

// sortedLetters puts an item's letters in the alphabet's order.
func sortedLetters(s, alphabet string) string {
	var out []byte
	for i := range len(alphabet) {
		for j := range len(s) {
			if s[j] == alphabet[i] {
				out = append(out, s[j])
			}
		}
	}
	return string(out)
}
