package metrics

import "math"

// Welford accumulates mean and variance in one pass without keeping the
// values, numerically stable for long runs.
type Welford struct {
	n    int
	mean float64
	m2   float64
}

// Add folds in one value.
func (w *Welford) Add(x float64) {
	w.n++
	d := x - w.mean
	w.mean += d / float64(w.n)
	w.m2 += d * (x - w.mean)
}

// N is the count so far.
func (w *Welford) N() int { return w.n }

// Mean is NaN before the first value.
func (w *Welford) Mean() float64 {
	if w.n == 0 {
		return math.NaN()
	}
	return w.mean
}

// Std is the sample standard deviation (n-1); NaN below two values.
func (w *Welford) Std() float64 {
	if w.n < 2 {
		return math.NaN()
	}
	return math.Sqrt(w.m2 / float64(w.n-1))
}

// CV is Std/Mean.
func (w *Welford) CV() float64 { return w.Std() / w.Mean() }

// HalfWidth95 is the half-width of the 95% confidence interval of the mean
// (Student t), NaN below two values.
func (w *Welford) HalfWidth95() float64 {
	if w.n < 2 {
		return math.NaN()
	}
	return TQuantile975(w.n-1) * w.Std() / math.Sqrt(float64(w.n))
}

// TQuantile975 approximates the 97.5% quantile of Student's t with df
// degrees of freedom: exact table values for small df, then the
// Cornish-Fisher expansion, which is within 1e-4 from df = 10 on.
func TQuantile975(df int) float64 {
	table := [...]float64{0, 12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281}
	if df < 1 {
		return math.NaN()
	}
	if df < len(table) {
		return table[df]
	}
	z := z975
	d := float64(df)
	z3, z5, z7 := z*z*z, math.Pow(z, 5), math.Pow(z, 7)
	return z + (z3+z)/(4*d) + (5*z5+16*z3+3*z)/(96*d*d) + (3*z7+19*z5+17*z3-15*z)/(384*d*d*d)
}

// Point is one step of a convergence curve.
type Point struct {
	N         int
	Mean      float64
	CV        float64
	HalfWidth float64 // 95% CI half-width of the mean
}

// Series is one arm's values of one metric in arrival order, with running
// moments so that each new trial costs O(1), not a rescan.
type Series struct {
	values []float64
	w      Welford
}

// Add appends a value and returns the running convergence point.
func (s *Series) Add(x float64) Point {
	s.values = append(s.values, x)
	s.w.Add(x)
	return Point{N: s.w.N(), Mean: s.w.Mean(), CV: s.w.CV(), HalfWidth: s.w.HalfWidth95()}
}

// Mean is the running mean; NaN before the first value.
func (s *Series) Mean() float64 { return s.w.Mean() }

// Std is the running sample standard deviation; NaN below two values.
func (s *Series) Std() float64 { return s.w.Std() }

// CV is the coefficient of variation of the values so far.
func (s *Series) CV() float64 { return s.w.CV() }

// Values are the samples in the order they arrived; do not modify.
func (s *Series) Values() []float64 { return s.values }

// ConvergedAt returns the first n (1-based) from which the running mean of
// values stays within ±tol (a fraction, e.g. 0.01) of its final value,
// when it has stayed there for at least SettledFor(len(values)) values;
// otherwise 0, "not converged". Without that hold every series would
// "converge" at its last value, since the final mean is within any band
// of itself.
func ConvergedAt(values []float64, tol float64) int {
	if len(values) == 0 {
		return 0
	}
	running := make([]float64, len(values))
	var w Welford
	for i, v := range values {
		w.Add(v)
		running[i] = w.Mean()
	}
	final := running[len(running)-1]
	band := tol * math.Abs(final)
	at := 1
	for i := len(running) - 1; i >= 0; i-- {
		if math.Abs(running[i]-final) > band {
			at = i + 2
			break
		}
	}
	if len(values)-at+1 < SettledFor(len(values)) {
		return 0
	}
	return at
}

// SettledFor is how many of n values the running mean must have stayed in
// its band to count as converged: a fifth of them, and at least 10.
func SettledFor(n int) int { return max(10, (n+4)/5) }
