package metrics

import (
	"math"
	"slices"
)

// MannWhitneyResult is a two-sided Mann-Whitney U test of b against a.
type MannWhitneyResult struct {
	// U counts the pairs (a_i, b_j) with b_j > a_i, ties counting one
	// half: U/(na·nb) is the probability that a draw of b exceeds a draw
	// of a.
	U float64
	P float64
	// Exact is true when P comes from the exact null distribution rather
	// than the normal approximation.
	Exact bool
}

// exactMaxPairs bounds the exact distribution's cost (its table has
// na·nb+1 cells per sample size, and building it is O((na·nb)²/4)); 50
// against 50 takes about 2 ms (BenchmarkMannWhitneyExact50x50).
const exactMaxPairs = 2500

// MannWhitney tests whether b tends to be larger or smaller than a. The
// p-value is exact when there are no ties and na·nb <= 2500; otherwise it
// uses the normal approximation with the tie correction of the variance
// and a continuity correction, as textbooks (and SciPy) do. Fewer than
// one value on either side gives NaN.
func MannWhitney(a, b []float64) MannWhitneyResult {
	na, nb := len(a), len(b)
	if na == 0 || nb == 0 {
		return MannWhitneyResult{U: math.NaN(), P: math.NaN()}
	}
	rankSumB, tieTerm := rankSum(a, b)
	u := rankSumB - float64(nb*(nb+1))/2
	if tieTerm == 0 && na*nb <= exactMaxPairs {
		return MannWhitneyResult{U: u, P: exactUPValue(u, na, nb), Exact: true}
	}
	return MannWhitneyResult{U: u, P: normalUPValue(u, na, nb, tieTerm)}
}

// MannWhitneyCanReject reports whether a two-sided Mann-Whitney test of
// na against nb values can reach p < alpha at all: its smallest exact
// p-value, when the two samples do not overlap, is 2/C(na+nb, na). Below
// that (3 against 3 at α = 0.05, 4 against 4 at 0.0125) no data could
// make a verdict, so it is "too few".
func MannWhitneyCanReject(na, nb int, alpha float64) bool {
	if na < 1 || nb < 1 {
		return false
	}
	// log C(na+nb, na), through lgamma to stay finite for large samples.
	lc := func(n int) float64 { v, _ := math.Lgamma(float64(n) + 1); return v }
	logBinom := lc(na+nb) - lc(na) - lc(nb)
	return math.Log(2)-logBinom < math.Log(alpha)
}

// normalUPValue is the two-sided p-value of U = u by the normal
// approximation, its variance corrected for ties and |U - mean| for
// continuity.
func normalUPValue(u float64, na, nb int, tieTerm float64) float64 {
	n := float64(na + nb)
	mean := float64(na*nb) / 2
	variance := float64(na*nb) / 12 * ((n + 1) - tieTerm/(n*(n-1)))
	if variance <= 0 { // every value equal: nothing differs
		return 1
	}
	z := (math.Abs(u-mean) - 0.5) / math.Sqrt(variance)
	return min(1, 2*(1-NormalCDF(max(z, 0))))
}

// rankSum ranks a and b together (ties get their average rank) and
// returns the sum of b's ranks and Σ(t³-t) over groups of t tied values.
func rankSum(a, b []float64) (rankSumB, tieTerm float64) {
	type labelled struct {
		v   float64
		inB bool
	}
	all := make([]labelled, 0, len(a)+len(b))
	for _, v := range a {
		all = append(all, labelled{v, false})
	}
	for _, v := range b {
		all = append(all, labelled{v, true})
	}
	slices.SortFunc(all, func(x, y labelled) int {
		switch {
		case x.v < y.v:
			return -1
		case x.v > y.v:
			return 1
		}
		return 0
	})
	for i := 0; i < len(all); {
		// From i+1: a NaN equals nothing, itself included, and must not
		// hold the scan in place.
		j := i + 1
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		avgRank := float64(i+j+1) / 2 // ranks i+1 .. j
		for _, x := range all[i:j] {
			if x.inB {
				rankSumB += avgRank
			}
		}
		if t := float64(j - i); t > 1 {
			tieTerm += t*t*t - t
		}
		i = j
	}
	return rankSumB, tieTerm
}

// exactUPValue is the two-sided p-value of U = u under the null: twice
// the smaller tail of U's exact distribution, capped at 1.
func exactUPValue(u float64, na, nb int) float64 {
	freq := uFrequencies(na, nb)
	total := 0.0
	for _, f := range freq {
		total += f
	}
	k := int(math.Round(u))
	lower, upper := 0.0, 0.0
	for i, f := range freq {
		if i <= k {
			lower += f
		}
		if i >= k {
			upper += f
		}
	}
	return min(1, 2*min(lower, upper)/total)
}

// uFrequencies counts, for each u in 0..na·nb, the arrangements of na
// and nb distinct values whose U equals u, by the recurrence
// f(i, j, u) = f(i, j-1, u-i) + f(i-1, j, u): the largest value is either
// one of b's, which beats all i of a's, or one of a's, which adds no pair.
// Only additions of positive counts, so float64 keeps full relative
// precision.
func uFrequencies(na, nb int) []float64 {
	// prev[j] holds f(i-1, j, ·), cur[j] f(i, j, ·); each row j lives in a
	// buffer sized for i = na, and the two sets swap, so the table costs
	// two allocations per j, not one per cell.
	prev, cur := make([][]float64, nb+1), make([][]float64, nb+1)
	for j := range prev {
		prev[j] = make([]float64, 1, na*j+1)
		cur[j] = make([]float64, 1, na*j+1)
		prev[j][0], cur[j][0] = 1, 1 // no a's, or no b's: U = 0
	}
	for i := 1; i <= na; i++ {
		for j := 1; j <= nb; j++ {
			f := cur[j][:i*j+1]
			clear(f)
			copy(f, prev[j])
			for u, c := range cur[j-1] {
				f[u+i] += c
			}
			cur[j] = f
		}
		prev, cur = cur, prev // row 0, f(·, 0, ·) = [1], is never written
	}
	return prev[nb]
}
