package telemetry

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ServerSeries is one series of a server's Prometheus metrics at one
// scrape: its metric name, its labels (`k="v"` pairs, sorted, comma
// separated) and its value.
type ServerSeries struct {
	Metric string
	Labels string
	Value  float64
}

// MaxServerSeries bounds the series kept from one scrape: a server that
// exposes thousands (one per LoRA adapter, say) would fill the CSV with
// what no common series needs.
const MaxServerSeries = 2000

// ParseServerMetrics reads a Prometheus text exposition with the
// Prometheus project's own parser: every counter, gauge and untyped
// series, and each histogram's and summary's _sum and _count. Their
// buckets and quantiles are left out (vLLM has hundreds a scrape, and the
// common series need none). At most MaxServerSeries are kept, sorted by
// name and labels: the text is read only up to the line past them (cut
// says so), so an answer of half a million series costs what 2,000 do.
func ParseServerMetrics(r io.Reader) (series []ServerSeries, cut bool, err error) {
	prefix, cut, err := seriesPrefix(r)
	if err != nil {
		return nil, cut, fmt.Errorf("not Prometheus text format: %v", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(prefix))
	if err != nil {
		return nil, cut, fmt.Errorf("not Prometheus text format: %v", err)
	}
	var out []ServerSeries
	for name, family := range families {
		for _, m := range family.GetMetric() {
			labels := labelText(m.GetLabel())
			add := func(metric string, v float64) {
				out = append(out, ServerSeries{Metric: metric, Labels: labels, Value: v})
			}
			switch family.GetType() {
			case dto.MetricType_COUNTER:
				add(name, m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				add(name, m.GetGauge().GetValue())
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				add(name+"_sum", m.GetHistogram().GetSampleSum())
				add(name+"_count", float64(m.GetHistogram().GetSampleCount()))
			case dto.MetricType_SUMMARY:
				add(name+"_sum", m.GetSummary().GetSampleSum())
				add(name+"_count", float64(m.GetSummary().GetSampleCount()))
			default:
				add(name, m.GetUntyped().GetValue())
			}
		}
	}
	slices.SortFunc(out, func(a, b ServerSeries) int {
		if c := strings.Compare(a.Metric, b.Metric); c != 0 {
			return c
		}
		return strings.Compare(a.Labels, b.Labels)
	})
	return out[:min(len(out), MaxServerSeries)], cut, nil
}

// maxMetricsLine bounds one line of an exposition.
const maxMetricsLine = 1 << 20

// seriesPrefix is r's text up to the line that would be its
// MaxServerSeries+1st kept series (bucket and quantile lines are not
// kept, and not counted); cut says the text went on past it.
func seriesPrefix(r io.Reader) (prefix []byte, cut bool, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxMetricsLine)
	var b bytes.Buffer
	kept := 0
	for sc.Scan() {
		line := sc.Bytes()
		if keptSeries(line) {
			if kept++; kept > MaxServerSeries {
				return b.Bytes(), true, nil
			}
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes(), false, sc.Err()
}

// keptSeries reports whether a line of an exposition is a sample that
// ParseServerMetrics keeps: not a comment, a bucket or a quantile.
func keptSeries(line []byte) bool {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] == '#' {
		return false
	}
	name := line
	if i := bytes.IndexAny(line, "{ \t"); i >= 0 {
		name = line[:i]
	}
	return !bytes.HasSuffix(name, []byte("_bucket")) && !bytes.Contains(line, []byte(`quantile="`))
}

func labelText(pairs []*dto.LabelPair) string {
	parts := make([]string, len(pairs))
	for i, p := range pairs {
		parts[i] = fmt.Sprintf("%s=%q", p.GetName(), p.GetValue())
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// ServerView is the few series every serving engine has, in common
// words, at one scrape; NaN where the server does not say.
type ServerView struct {
	Running float64 // requests being generated
	Waiting float64 // requests queued in the server
	// KVCache is the share of the KV cache in use (0 to 1).
	KVCache float64
	// Generated counts the tokens generated since the server started.
	Generated float64
	// PrefixHits and PrefixQueries count prompt tokens found in the
	// prefix cache and looked up there, since the server started; a
	// server that gives only a hit rate gives PrefixHitRate.
	PrefixHits, PrefixQueries float64
	PrefixHitRate             float64
}

// Common series names, as the CSV's tokentop: rows and the reports call
// them.
const (
	CommonRunning   = "tokentop:requests_running"
	CommonWaiting   = "tokentop:requests_waiting"
	CommonKVCache   = "tokentop:kv_cache_usage"
	CommonGenerated = "tokentop:tokens_generated_total"
	CommonPrefixHit = "tokentop:prefix_cache_hit_rate"
)

// commonNames maps each server's metric names to a field of ServerView:
// llama-server (`--metrics`), vLLM (its older names too), SGLang and
// Hugging Face TGI. Series of one field that several label sets carry
// (vLLM's engines) are summed; the KV cache share takes the largest.
var commonNames = map[string]func(v *ServerView) *float64{
	"llamacpp:requests_processing":        func(v *ServerView) *float64 { return &v.Running },
	"vllm:num_requests_running":           func(v *ServerView) *float64 { return &v.Running },
	"sglang:num_running_reqs":             func(v *ServerView) *float64 { return &v.Running },
	"tgi_batch_current_size":              func(v *ServerView) *float64 { return &v.Running },
	"llamacpp:requests_deferred":          func(v *ServerView) *float64 { return &v.Waiting },
	"vllm:num_requests_waiting":           func(v *ServerView) *float64 { return &v.Waiting },
	"sglang:num_queue_reqs":               func(v *ServerView) *float64 { return &v.Waiting },
	"tgi_queue_size":                      func(v *ServerView) *float64 { return &v.Waiting },
	"llamacpp:kv_cache_usage_ratio":       func(v *ServerView) *float64 { return &v.KVCache },
	"vllm:gpu_cache_usage_perc":           func(v *ServerView) *float64 { return &v.KVCache },
	"vllm:kv_cache_usage_perc":            func(v *ServerView) *float64 { return &v.KVCache },
	"sglang:token_usage":                  func(v *ServerView) *float64 { return &v.KVCache },
	"llamacpp:tokens_predicted_total":     func(v *ServerView) *float64 { return &v.Generated },
	"vllm:generation_tokens_total":        func(v *ServerView) *float64 { return &v.Generated },
	"sglang:generation_tokens_total":      func(v *ServerView) *float64 { return &v.Generated },
	"tgi_request_generated_tokens_sum":    func(v *ServerView) *float64 { return &v.Generated },
	"llamacpp:prompt_tokens_cached_total": func(v *ServerView) *float64 { return &v.PrefixHits },
	"vllm:prefix_cache_hits_total":        func(v *ServerView) *float64 { return &v.PrefixHits },
	"vllm:gpu_prefix_cache_hits_total":    func(v *ServerView) *float64 { return &v.PrefixHits },
	"vllm:prefix_cache_queries_total":     func(v *ServerView) *float64 { return &v.PrefixQueries },
	"vllm:gpu_prefix_cache_queries_total": func(v *ServerView) *float64 {
		return &v.PrefixQueries
	},
	"sglang:cache_hit_rate": func(v *ServerView) *float64 { return &v.PrefixHitRate },
}

// llamaPromptTokens is llama-server's count of prompt tokens it
// evaluated, cached ones left out: its queries are those plus the hits.
const llamaPromptTokens = "llamacpp:prompt_tokens_total"

// CommonView finds the common series among one scrape's.
func CommonView(series []ServerSeries) ServerView {
	nan := math.NaN()
	v := ServerView{Running: nan, Waiting: nan, KVCache: nan, Generated: nan, PrefixHits: nan, PrefixQueries: nan, PrefixHitRate: nan}
	llamaEvaluated := nan
	for _, s := range series {
		if s.Metric == llamaPromptTokens {
			llamaEvaluated = s.Value
			continue
		}
		field, ok := commonNames[s.Metric]
		if !ok || math.IsNaN(s.Value) {
			continue
		}
		p := field(&v)
		switch {
		case math.IsNaN(*p):
			*p = s.Value
		case p == &v.KVCache || p == &v.PrefixHitRate:
			*p = max(*p, s.Value)
		default:
			*p += s.Value
		}
	}
	if !math.IsNaN(llamaEvaluated) && !math.IsNaN(v.PrefixHits) {
		v.PrefixQueries = llamaEvaluated + v.PrefixHits
	}
	return v
}

// Since is what changed from an earlier scrape over dt seconds: tokens
// generated a second, and the prefix cache's hit rate over the tokens
// looked up meanwhile (a server's own rate where it gives one); NaN
// where unknown, or where a counter went back (the server restarted).
func (v ServerView) Since(earlier ServerView, dt float64) (tokensPerSecond, prefixHitRate float64) {
	tokensPerSecond, prefixHitRate = math.NaN(), v.PrefixHitRate
	if d := v.Generated - earlier.Generated; dt > 0 && d >= 0 {
		tokensPerSecond = d / dt
	}
	if q, h := v.PrefixQueries-earlier.PrefixQueries, v.PrefixHits-earlier.PrefixHits; q > 0 && h >= 0 && h <= q {
		prefixHitRate = h / q
	}
	return tokensPerSecond, prefixHitRate
}

// Rows are the view as CSV rows of the common series, the ones it knows.
func (v ServerView) Rows() []ServerSeries {
	var out []ServerSeries
	for _, r := range []ServerSeries{{CommonRunning, "", v.Running}, {CommonWaiting, "", v.Waiting}, {CommonKVCache, "", v.KVCache},
		{CommonGenerated, "", v.Generated}, {CommonPrefixHit, "", v.hitRateSoFar()}} {
		if !math.IsNaN(r.Value) {
			out = append(out, r)
		}
	}
	return out
}

// hitRateSoFar is the prefix cache's hit rate since the server started.
func (v ServerView) hitRateSoFar() float64 {
	if v.PrefixQueries > 0 && v.PrefixHits <= v.PrefixQueries {
		return v.PrefixHits / v.PrefixQueries
	}
	return v.PrefixHitRate
}
