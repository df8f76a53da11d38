package metrics

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

// With data drawn from known distributions, the bootstrap intervals must
// cover the true difference and ratio about 95% of the time. b is a's
// lognormal scaled by 1.1: medians differ by the factor 1.1 exactly, and
// the CVs are equal, so the true CV ratio is 1.
func TestBootstrapTwoSampleCoverage(t *testing.T) {
	const reps, n, resamples = 150, 40, 1000
	const mu, sigma, shift = 3.0, 0.3, 1.1
	trueMedian := math.Exp(mu)
	trueMean := math.Exp(mu + sigma*sigma/2)
	rng := rand.New(rand.NewPCG(1, 2))
	draw := func(scale float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = scale * math.Exp(mu+sigma*rng.NormFloat64())
		}
		return out
	}
	covered := map[string]int{}
	for r := range reps {
		got := BootstrapTwoSample(draw(1), draw(shift), resamples, uint64(r))
		for name, c := range map[string]struct {
			e     Estimate
			truth float64
		}{
			"median diff":  {got.MedianDiff, (shift - 1) * trueMedian},
			"mean diff":    {got.MeanDiff, (shift - 1) * trueMean},
			"median ratio": {got.MedianRatio, shift},
			"mean ratio":   {got.MeanRatio, shift},
			"CV ratio":     {got.CVRatio, 1},
		} {
			if c.e.Lo <= c.truth && c.truth <= c.e.Hi {
				covered[name]++
			}
		}
	}
	for _, name := range []string{"median diff", "mean diff", "median ratio", "mean ratio", "CV ratio"} {
		// 95% nominal; over 150 repetitions the binomial standard error is
		// 1.8 points, and the percentile method runs a little narrow.
		if rate := float64(covered[name]) / reps; rate < 0.87 || rate > 0.995 {
			t.Errorf("%s: 95%% interval covered the truth in %.1f%% of %d repetitions", name, rate*100, reps)
		}
	}
}

func TestBootstrapTwoSampleIsSeeded(t *testing.T) {
	a, b := []float64{1, 2, 3, 4, 5, 6}, []float64{2, 3, 4, 5, 6, 9}
	x, y := BootstrapTwoSample(a, b, 500, 7), BootstrapTwoSample(a, b, 500, 7)
	if !reflect.DeepEqual(x, y) {
		t.Errorf("same seed, different results:\n%+v\n%+v", x, y)
	}
	if at := x.MedianRatioAt(0.95); math.Abs(at.Lo-x.MedianRatio.Lo) > 1e-12 || math.Abs(at.Hi-x.MedianRatio.Hi) > 1e-12 {
		t.Errorf("the median ratio at 95%%: %+v, its own %+v", at, x.MedianRatio.CI)
	}
	if wide := x.MedianRatioAt(0.996); !(wide.Lo <= x.MedianRatio.Lo && wide.Hi >= x.MedianRatio.Hi) {
		t.Errorf("at 99.6%%: %+v, narrower than at 95%% %+v", wide, x.MedianRatio.CI)
	}
	if x.MedianDiff.Value != 1 || math.Abs(x.MeanDiff.Value-8.0/6) > 1e-12 {
		t.Errorf("point estimates %+v", x)
	}
	short := BootstrapTwoSample([]float64{1}, b, 500, 7)
	if !math.IsNaN(short.MedianDiff.Lo) || short.MedianDiff.Value != 3.5 {
		t.Errorf("one value on a side: %+v, want a point estimate and a NaN interval", short.MedianDiff)
	}
}

// The cost of the bootstrap per resampled value (a draw, and its share of
// the mean, the CV and the median's selection), which sets how long the
// final report's 10,000 resamples take on large sessions.
func BenchmarkBootstrapTwoSample(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	a, c := make([]float64, 1000), make([]float64, 1000)
	for i := range a {
		a[i], c[i] = rng.Float64(), rng.Float64()
	}
	const resamples = 200
	for b.Loop() {
		BootstrapTwoSample(a, c, resamples, 1)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(resamples*2000), "ns/value")
}

// A resample drawn as counts has the median, mean and CV of the same draws
// copied out and measured by Median and meanCV: for odd and even sizes,
// with ties, from the same seed.
func TestResamplerMatchesACopyingBootstrap(t *testing.T) {
	for _, n := range []int{2, 3, 10, 11, 1000, 1001} {
		sample := make([]float64, n)
		src := rand.New(rand.NewPCG(uint64(n), 2))
		for i := range sample {
			sample[i] = math.Round(src.ExpFloat64()*20) / 2 // ties
		}
		counted, copied := rand.New(rand.NewPCG(9, 9)), rand.New(rand.NewPCG(9, 9))
		r := newResampler(sample)
		scratch := make([]float64, n)
		for range 50 {
			median, mean, cv := r.draw(counted)
			for i := range scratch {
				scratch[i] = sample[copied.IntN(n)]
			}
			wantMean, wantCV := meanCV(scratch)
			wantMedian := Median(scratch)
			if median != wantMedian || math.Abs(mean-wantMean) > 1e-12*math.Abs(wantMean) || math.Abs(cv-wantCV) > 1e-9*math.Abs(wantCV) {
				t.Fatalf("n %d: counted %v %v %v, copied %v %v %v", n, median, mean, cv, wantMedian, wantMean, wantCV)
			}
		}
	}
}
