package metrics

import "math"

// LinearFit is an ordinary least-squares line y = Intercept + Slope·x
// with the slope's 95% confidence interval (Student t on n−2 degrees of
// freedom, the textbook interval for independent errors of equal
// variance).
type LinearFit struct {
	Slope, Intercept float64
	SlopeCI          CI
	N                int
}

// FitLine fits y against x. With fewer than three points, or x all
// equal, the slope's interval is NaN (and with x all equal the slope
// too).
func FitLine(x, y []float64) LinearFit {
	n := len(x)
	f := LinearFit{N: n, Slope: math.NaN(), Intercept: math.NaN(), SlopeCI: CI{Lo: math.NaN(), Hi: math.NaN()}}
	if n < 2 || len(y) != n {
		return f
	}
	mx, my := Mean(x), Mean(y)
	var sxx, sxy float64
	for i := range x {
		sxx += (x[i] - mx) * (x[i] - mx)
		sxy += (x[i] - mx) * (y[i] - my)
	}
	if sxx == 0 {
		return f
	}
	f.Slope = sxy / sxx
	f.Intercept = my - f.Slope*mx
	if n < 3 {
		return f
	}
	var sse float64
	for i := range x {
		r := y[i] - f.Intercept - f.Slope*x[i]
		sse += r * r
	}
	se := math.Sqrt(sse / float64(n-2) / sxx)
	half := TQuantile975(n-2) * se
	f.SlopeCI = CI{Lo: f.Slope - half, Hi: f.Slope + half}
	return f
}
