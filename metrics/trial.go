package metrics

import (
	"math"
	"slices"
	"time"
)

// Arrival is one chunk of generated tokens reaching the client.
type Arrival struct {
	At     time.Duration // since the request was written, monotonic
	Tokens int
	// Reasoning marks a reasoning model's thinking; the rest (answer
	// text, tool calls) is output.
	Reasoning bool
	// IDs are the chunk's token ids where the backend knows them (nil
	// otherwise), set once the generation ends: never on the way from a
	// token's arrival to its timestamp.
	IDs []int
}

// Timings holds the client-side timings of one generation, in milliseconds.
type Timings struct {
	TTFTMs, E2EMs, DecodeMs, TPOTMs         float64
	ITLMeanMs, ITLP50Ms, ITLP99Ms, ITLMaxMs float64
	ITLCV                                   float64
	OutputTPS, DecodeTPS                    float64
	// TTFOMs is the time to the first output token, past any reasoning
	// (AIPerf's "time to first output"); TTFTMs counts a token of any
	// kind. Equal without reasoning; NaN when no output came.
	TTFOMs float64
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// DeriveTimings computes a trial's timings from its chunk arrivals, the time
// the stream ended, and the number of generated tokens (the server's count
// when it gave one). Every token counts, reasoning included: TTFT is the
// first of any kind, and TPOT and ITL span them all.
func DeriveTimings(arrivals []Arrival, end time.Duration, outputTokens int) Timings {
	nan := math.NaN()
	t := Timings{TTFTMs: nan, DecodeMs: nan, TPOTMs: nan, ITLMeanMs: nan, ITLP50Ms: nan, ITLP99Ms: nan,
		ITLMaxMs: nan, ITLCV: nan, OutputTPS: nan, DecodeTPS: nan, E2EMs: ms(end), TTFOMs: nan}
	if len(arrivals) == 0 {
		return t
	}
	t.TTFTMs = ms(arrivals[0].At)
	for _, a := range arrivals {
		if !a.Reasoning {
			t.TTFOMs = ms(a.At)
			break
		}
	}
	t.DecodeMs = t.E2EMs - t.TTFTMs
	if outputTokens > 0 && t.E2EMs > 0 {
		t.OutputTPS = float64(outputTokens) / (t.E2EMs / 1000)
	}
	if outputTokens >= 2 {
		t.TPOTMs = t.DecodeMs / float64(outputTokens-1)
		if t.DecodeMs > 0 {
			t.DecodeTPS = float64(outputTokens-1) / (t.DecodeMs / 1000)
		}
	}
	gaps := InterTokenGaps(arrivals)
	if len(gaps) > 0 {
		st := Describe(gaps)
		t.ITLMeanMs, t.ITLP50Ms, t.ITLP99Ms, t.ITLMaxMs, t.ITLCV = st.Mean, st.P50, st.P99, st.Max, st.CV
	}
	return t
}

// InterTokenGaps returns the per-token gaps in milliseconds, splitting the
// gap before a k-token chunk into k equal parts (see the package doc).
func InterTokenGaps(arrivals []Arrival) []float64 {
	var gaps []float64
	for i := 1; i < len(arrivals); i++ {
		k := max(arrivals[i].Tokens, 1)
		gap := ms(arrivals[i].At-arrivals[i-1].At) / float64(k)
		for range k {
			gaps = append(gaps, gap)
		}
	}
	return gaps
}

// ChunkTokens sums the tokens the chunks said they carried.
func ChunkTokens(arrivals []Arrival) int {
	n := 0
	for _, a := range arrivals {
		n += a.Tokens
	}
	return n
}

// ReasoningTokens sums the tokens of the reasoning chunks.
func ReasoningTokens(arrivals []Arrival) int {
	n := 0
	for _, a := range arrivals {
		if a.Reasoning {
			n += a.Tokens
		}
	}
	return n
}

// BurstShare is how small the span of a trial's arrivals may be against
// the server's own decode time before the tokens count as delivered in a
// burst: a quarter. Arrivals normally span about the decode time (less a
// token's share of it); held back and sent at once by a server or a proxy
// under contention they span a small part of it (64 tokens in 0.35 ms
// against 12.9 ms of generation, seen on Ollama with two servers sharing
// two cores).
const BurstShare = 0.25

// Burst reports whether a trial's tokens arrived far tighter than the
// server generated them, comparing the span from the first arrival to the
// last with the server's decode time for the tokens after the first. Its
// gaps then measure delivery, not generation. known is false when the
// server gave no decode time or the trial has under three tokens.
func Burst(arrivals []Arrival, serverDecodeMs float64, outputTokens int) (burst, known bool) {
	if len(arrivals) < 2 || outputTokens < 3 || !(serverDecodeMs > 0) || math.IsInf(serverDecodeMs, 0) {
		return false, false
	}
	span := ms(arrivals[len(arrivals)-1].At - arrivals[0].At)
	generated := serverDecodeMs * float64(outputTokens-1) / float64(outputTokens)
	return span < BurstShare*generated, true
}

// Stats describes a sample. Std is the sample standard deviation (n-1);
// percentiles interpolate linearly between order statistics.
type Stats struct {
	N                      int
	Mean, Median, Std      float64
	CV                     float64
	Min, Max               float64
	P5, P50, P90, P95, P99 float64
}

// Describe computes Stats of values (left unchanged). Empty input gives
// N = 0 and NaN everywhere else.
func Describe(values []float64) Stats {
	nan := math.NaN()
	st := Stats{N: len(values), Mean: nan, Median: nan, Std: nan, CV: nan, Min: nan, Max: nan, P5: nan, P50: nan, P90: nan, P95: nan, P99: nan}
	if len(values) == 0 {
		return st
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	var w Welford
	for _, v := range values {
		w.Add(v)
	}
	st.Mean, st.Std, st.CV = w.Mean(), w.Std(), w.CV()
	st.Min, st.Max = sorted[0], sorted[len(sorted)-1]
	st.P5, st.P50 = PercentileSorted(sorted, 0.05), PercentileSorted(sorted, 0.50)
	st.P90, st.P95, st.P99 = PercentileSorted(sorted, 0.90), PercentileSorted(sorted, 0.95), PercentileSorted(sorted, 0.99)
	st.Median = st.P50
	return st
}

// PercentileSorted returns the p-quantile (0..1) of ascending values by
// linear interpolation between order statistics (Hyndman & Fan type 7).
func PercentileSorted(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	h := p * float64(len(sorted)-1)
	lo := int(math.Floor(h))
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// ChanceBound is the order statistic of sorted values (ascending) that a
// new draw from the same continuous distribution exceeds with a known
// chance, whatever the distribution: the k-th of n, k = ⌈p(n+1)⌉ (at most
// n), is exceeded with probability exactly 1 − k/(n+1), at most 1 − p
// where n is large enough. An interpolated percentile is not: a new draw
// lands above the interpolated p95 of 20 normal draws in 8.7% of cases,
// and the share depends on the distribution.
func ChanceBound(sorted []float64, p float64) (value float64, k int, chance float64) {
	n := len(sorted)
	if n == 0 {
		return math.NaN(), 0, math.NaN()
	}
	k = min(n, int(math.Ceil(p*float64(n+1))))
	return sorted[k-1], k, 1 - float64(k)/float64(n+1)
}

// Throughput sums tokens and time over trials, for the rate a server
// sustained: Σ tokens / Σ time. The mean of per-trial rates is another
// figure: it weighs a short trial's rate as much as a long one's, so with
// e2e that varies it runs high (55 against 10.9 tok/s in
// TestThroughputIsTotalTokensOverTotalTime) and can order arms
// differently.
type Throughput struct {
	tokens int
	ms     float64
}

// Add counts one trial's output tokens over its e2e milliseconds;
// unknown counts or times are skipped.
func (t *Throughput) Add(tokens int, e2eMs float64) {
	if tokens < 0 || math.IsNaN(e2eMs) || e2eMs <= 0 {
		return
	}
	t.tokens += tokens
	t.ms += e2eMs
}

// Rate is tokens per second over every trial added; NaN before any.
func (t *Throughput) Rate() float64 {
	if t.ms == 0 {
		return math.NaN()
	}
	return float64(t.tokens) / (t.ms / 1000)
}

// WilsonInterval is the 95% Wilson score interval of a share of k
// successes in n trials: unlike the normal approximation it stays within
// [0, 1] and holds its coverage near 0% and 100%, where a goodput often
// is. NaN for no trials.
func WilsonInterval(k, n int) CI {
	if n <= 0 {
		return CI{Lo: math.NaN(), Hi: math.NaN()}
	}
	const z = 1.959963984540054 // the normal's 97.5% quantile
	p, nf := float64(k)/float64(n), float64(n)
	d := 1 + z*z/nf
	center := (p + z*z/(2*nf)) / d
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / d
	return CI{Lo: max(0, center-half), Hi: min(1, center+half)}
}
