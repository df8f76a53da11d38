package session

import (
	"math"

	"github.com/tokentop/tokentop/metrics"
)

// Metric names a per-trial measurement that can be aggregated.
type Metric struct {
	Name  string
	Value func(*Record) float64
	// HigherIsBetter is true for throughputs; for latencies lower is better.
	HigherIsBetter bool
	// Label names the metric in a sentence; More and Less say what a
	// larger or smaller value means ("is slower", "uses less memory").
	Label, More, Less string
	// Pooled, for a rate, is the rate over all the records at once (Σ
	// tokens / Σ time), which tables show in place of the mean of the
	// per-trial rates (see metrics.Throughput).
	Pooled func(records []*Record) float64
}

// Metrics are the per-trial measurements summarised per arm.
var Metrics = []Metric{
	latency("e2e_ms", "e2e", func(r *Record) float64 { return r.E2EMs }),
	latency("ttft_ms", "TTFT", func(r *Record) float64 { return r.TTFTMs }),
	// The first token past a reasoning model's thinking: what a reader
	// of the answer waits for. Compared beside TTFT where any arm reasons.
	latency("ttfo_ms", "TTFO", func(r *Record) float64 { return r.TTFOMs }),
	// An open loop's latencies from each request's due time: what a user
	// arriving on schedule waited, the client's queue included. Compared
	// beside the ones from the send where the requests had a schedule.
	latency("e2e_due_ms", "e2e from the due time", func(r *Record) float64 { return r.E2EFromDueMs() }),
	latency("ttft_due_ms", "TTFT from the due time", func(r *Record) float64 { return r.TTFTFromDueMs() }),
	latency("tpot_ms", "TPOT", func(r *Record) float64 { return r.TPOTMs }),
	latency("itl_mean_ms", "ITL mean", func(r *Record) float64 { return r.ITLMeanMs }),
	// A trial's longest gap between tokens and how much its gaps vary:
	// sampling raises these far more than the mean gap (the classic
	// greedy-vs-sampling finding).
	latency("itl_max_ms", "ITL max", func(r *Record) float64 { return r.ITLMaxMs }),
	{Name: "itl_cv", Label: "ITL CV", More: "is less steady", Less: "is steadier",
		Value: func(r *Record) float64 { return r.ITLCV }},
	{Name: "output_tokens", Label: "output tokens", More: "writes more tokens", Less: "writes fewer tokens",
		Value: func(r *Record) float64 {
			if r.OutputTokens < 0 {
				return math.NaN()
			}
			return float64(r.OutputTokens)
		}},
	{Name: "reasoning_tokens", Label: "reasoning tokens", More: "reasons longer", Less: "reasons shorter",
		Value: func(r *Record) float64 {
			if r.ReasoningTokens < 0 {
				return math.NaN()
			}
			return float64(r.ReasoningTokens)
		}},
	{Name: "output_tps", Label: "output tok/s", More: "is faster", Less: "is slower", HigherIsBetter: true,
		Value: func(r *Record) float64 { return r.OutputTPS },
		Pooled: func(records []*Record) float64 {
			return pooledRate(records, 0, func(r *Record) float64 { return r.E2EMs })
		}},
	{Name: "decode_tps", Label: "decode tok/s", More: "is faster", Less: "is slower", HigherIsBetter: true,
		Value: func(r *Record) float64 { return r.DecodeTPS },
		Pooled: func(records []*Record) float64 {
			return pooledRate(records, 1, func(r *Record) float64 { return r.DecodeMs })
		}},
	{Name: "j_per_token", Label: "energy per token", More: "uses more energy per token", Less: "uses less energy per token",
		Value: func(r *Record) float64 { return r.JPerToken }},
	{Name: "avg_power_w", Label: "average power", More: "draws more power", Less: "draws less power",
		Value: func(r *Record) float64 { return r.AvgPowerW }},
	{Name: "peak_rss_mb", Label: "peak RSS", More: "uses more memory", Less: "uses less memory",
		Value: func(r *Record) float64 { return r.PeakRSSMB }},
}

// pooledRate is Σ (output tokens − less) / Σ time(r) over records, in
// tokens per second: the first token is not decoded, so decode_tps
// counts one fewer.
func pooledRate(records []*Record, less int, time func(*Record) float64) float64 {
	var tp metrics.Throughput
	for _, r := range records {
		if r.OutputTokens >= less {
			tp.Add(r.OutputTokens-less, time(r))
		}
	}
	return tp.Rate()
}

func latency(name, label string, value func(*Record) float64) Metric {
	return Metric{Name: name, Label: label, More: "is slower", Less: "is faster", Value: value}
}

// LookupMetric finds a metric by name.
func LookupMetric(name string) (Metric, bool) {
	for _, m := range Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

// MetricSummary is the aggregate of one metric over an arm's counted trials.
type MetricSummary struct {
	N          int     `toml:"n"`
	Mean       float64 `toml:"mean"`
	Median     float64 `toml:"median"`
	Std        float64 `toml:"std"`
	CV         float64 `toml:"cv"`
	Min        float64 `toml:"min"`
	Max        float64 `toml:"max"`
	P5         float64 `toml:"p5"`
	P50        float64 `toml:"p50"`
	P90        float64 `toml:"p90"`
	P95        float64 `toml:"p95"`
	P99        float64 `toml:"p99"`
	MeanCILo   float64 `toml:"mean_ci95_lo"`
	MeanCIHi   float64 `toml:"mean_ci95_hi"`
	MedianCILo float64 `toml:"median_ci95_lo"`
	MedianCIHi float64 `toml:"median_ci95_hi"`
	// Lag1 is the lag-1 autocorrelation of the values in trial order;
	// Block the moving-block bootstrap's block the intervals were drawn
	// with where it is material (0: trials independent enough for the
	// ordinary bootstrap).
	Lag1  float64 `toml:"lag1_autocorrelation"`
	Block int     `toml:"bootstrap_block,omitzero"`
}

// StopInterval is the stop rule's anytime-valid 95% interval: where the
// arm first reached its target, or, when it never did (Missed), at the
// cap.
type StopInterval struct {
	Statistic string  `toml:"statistic"`
	Estimate  float64 `toml:"estimate"`
	Lo        float64 `toml:"lo"`
	Hi        float64 `toml:"hi"`
	// N is the arm's counted trials at that point (0 in older files).
	N      int  `toml:"n,omitzero"`
	Missed bool `toml:"missed,omitempty"`
}

// Reach is the interval's farther end from the estimate, as a fraction
// of it: the ± the rule compares with its target.
func (iv StopInterval) Reach() float64 {
	return max(iv.Estimate-iv.Lo, iv.Hi-iv.Estimate) / math.Abs(iv.Estimate)
}

// ArmSummary is one arm's [summary.<arm>] table.
type ArmSummary struct {
	TimedOK  int `toml:"timed_ok"`
	Warmup   int `toml:"warmup"`
	Degraded int `toml:"degraded"`
	// DegradedReason is the most frequent "status: error" of the degraded
	// timed trials.
	DegradedReason string `toml:"degraded_reason,omitempty"`
	// Truncated counts timed ok trials cut at the context window;
	// CacheHits those that took prompt tokens from the server's cache.
	Truncated int `toml:"truncated,omitzero"`
	CacheHits int `toml:"cache_hits,omitzero"`
	// ModelLoads counts timed ok trials that carried a model load (the
	// server's load time ModelLoadMs or more), MaxModelLoadMs the longest.
	ModelLoads     int     `toml:"model_loads,omitzero"`
	MaxModelLoadMs float64 `toml:"max_model_load_ms,omitzero"`
	// PrefixCache is what a shared-prefix workload's cache served; nil
	// for other runs.
	PrefixCache *PrefixCache `toml:"prefix_cache,omitempty"`
	// Turns says a multi-turn arm's median TTFT by turn; empty for others.
	Turns string `toml:"turns,omitempty"`
	// WarmupRatio is median(warmup e2e) / median(timed e2e).
	WarmupRatio float64 `toml:"warmup_ratio"`
	// ConvergedAt is the first n from which the running mean of e2e stays
	// within the tolerance of its final value, when it has held there for
	// at least metrics.SettledFor(n) trials; 0 means not converged.
	ConvergedAt          int     `toml:"converged_at"`
	ConvergeTolerance    float64 `toml:"converge_tolerance"`
	TokenCountMismatches int     `toml:"token_count_mismatches"`
	// OutputTPS is the rate the arm sustained: Σ output tokens / Σ e2e
	// over its counted trials. The per-trial rates' distribution is
	// Metrics["output_tps"].
	OutputTPS float64 `toml:"output_tps"`
	// StoppedBy is why the arm's timed trials ended: the trial cap, or the
	// stop rule with the margin it reached; empty when the run was cut.
	StoppedBy string `toml:"stopped_by,omitempty"`
	// StopInterval is the confidence sequence's interval where the arm
	// reached the stop rule's target, or at the cap where it did not (not
	// the fixed-n bootstrap interval of the summary).
	StopInterval   *StopInterval `toml:"stop_interval,omitempty"`
	USDPer1MTokens float64       `toml:"usd_per_1m_tokens,omitzero"`
	// EnergyQualities counts the arm's timed trials per energy quality
	// (counter, sampled, no_data, unavailable).
	EnergyQualities map[string]int `toml:"energy_quality_counts,omitempty"`
	// EnergyCounterRejected counts timed trials whose energy counter went
	// backwards or stalled and so was not used.
	EnergyCounterRejected int `toml:"energy_counter_rejected,omitzero"`
	// Energy is the arm's energy per token as a figure only where it is
	// one (EnergyOf); nil where no trial had energy.
	Energy *EnergyFigure `toml:"energy,omitempty"`
	// Load is a load run's aggregate throughput over its steady windows.
	Load *Throughput `toml:"load,omitempty"`
	// LoadCost is its energy per steady window and memory per block.
	LoadCost *LoadCost `toml:"load_cost,omitempty"`
	// Metrics holds one table per metric, e.g. [summary.greedy.metrics.e2e_ms].
	Metrics map[string]MetricSummary `toml:"metrics"`
}

// MedianE2EInterval is the 95% interval to print beside the e2e median:
// the stop rule's anytime-valid interval when the arm stopped on its
// median at its last trial (a fixed-n interval computed after such a stop
// covers less than 95%), else the bootstrap interval of all its trials
// (an arm that ran on past its target, with the others, is said apart
// with the interval it stopped on). anytime says which.
func (s ArmSummary) MedianE2EInterval() (lo, hi float64, anytime bool) {
	// The stop rule's interval only where it is of the median shown: an
	// arm that ran on past its target, interleaved with the others, has
	// more trials than the interval saw.
	if iv := s.StopInterval; iv != nil && iv.Statistic == "median" && iv.N == s.Metrics["e2e_ms"].N {
		return iv.Lo, iv.Hi, true
	}
	e2e := s.Metrics["e2e_ms"]
	return e2e.MedianCILo, e2e.MedianCIHi, false
}

// Values returns m's finite values over records in their order.
func Values(records []*Record, m Metric) []float64 {
	out := make([]float64, 0, len(records))
	for _, r := range records {
		if v := m.Value(r); !math.IsNaN(v) {
			out = append(out, v)
		}
	}
	return out
}

// Counted returns the records that enter aggregates (timed, ok).
func Counted(records []*Record) []*Record {
	var out []*Record
	for _, r := range records {
		if r.Counted() {
			out = append(out, r)
		}
	}
	return out
}

// ByArm groups records by arm, keeping their order; the groups point into
// records rather than copying them.
func ByArm(records []Record) map[string][]*Record {
	out := map[string][]*Record{}
	for i := range records {
		out[records[i].Arm] = append(out[records[i].Arm], &records[i])
	}
	return out
}

// SummarizeArm aggregates one arm's records. Bootstrap intervals are
// seeded, so the same records give the same summary.
func SummarizeArm(records []*Record, seed uint64, convergeTol, usdPerHour float64) ArmSummary {
	s := ArmSummary{ConvergeTolerance: convergeTol, Metrics: map[string]MetricSummary{}}
	health(records, &s)
	var warmupE2E []float64
	for _, r := range records {
		if r.Phase == PhaseWarmup {
			s.Warmup++
			if r.Status == StatusOK {
				warmupE2E = append(warmupE2E, r.E2EMs)
			}
		}
		if r.Phase == PhaseTimed && r.EnergyQuality != "" {
			if s.EnergyQualities == nil {
				s.EnergyQualities = map[string]int{}
			}
			s.EnergyQualities[r.EnergyQuality]++
		}
	}
	counted := Counted(records)
	for _, m := range Metrics {
		values := Values(counted, m) // in the order the trials ran
		st := metrics.Describe(values)
		dep := metrics.DependenceOf(values)
		meanCI := dep.Interval(values, metrics.Mean, metrics.DefaultResamples, seed)
		medianCI := dep.Interval(values, metrics.Median, metrics.DefaultResamples, seed)
		s.Metrics[m.Name] = MetricSummary{N: st.N, Mean: st.Mean, Median: st.Median, Std: st.Std, CV: st.CV,
			Min: st.Min, Max: st.Max, P5: st.P5, P50: st.P50, P90: st.P90, P95: st.P95, P99: st.P99,
			MeanCILo: meanCI.Lo, MeanCIHi: meanCI.Hi, MedianCILo: medianCI.Lo, MedianCIHi: medianCI.Hi,
			Lag1: dep.R, Block: dep.Block}
	}
	outputTPS, _ := LookupMetric("output_tps")
	s.OutputTPS = outputTPS.Pooled(counted)
	e2e := s.Metrics["e2e_ms"]
	s.WarmupRatio = metrics.Describe(warmupE2E).Median / e2e.Median
	timedE2E, _ := LookupMetric("e2e_ms")
	s.ConvergedAt = metrics.ConvergedAt(Values(counted, timedE2E), convergeTol)
	if tps := s.OutputTPS; usdPerHour > 0 && tps > 0 {
		s.USDPer1MTokens = USDPer1MTokens(tps, usdPerHour)
	}
	return s
}

// USDPer1MTokens is what a million output tokens cost at tokensPerS on a
// machine that costs usdPerHour (DESIGN.md's rule).
func USDPer1MTokens(tokensPerS, usdPerHour float64) float64 {
	return (1e6 / tokensPerS) / 3600 * usdPerHour
}
