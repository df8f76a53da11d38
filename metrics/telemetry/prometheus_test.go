package telemetry

import (
	"bytes"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tokentop/tokentop/backends/replay"
)

// llama-server's recorded /metrics (b10470, --metrics) parses into its 15
// series, and its common view is the requests running and deferred, the
// tokens predicted, and the prefix cache's hits among the prompt tokens
// looked up (its prompt_tokens_total leaves the cached ones out).
func TestLlamaServersMetricsGiveTheCommonSeries(t *testing.T) {
	series, _, err := ParseServerMetrics(bytes.NewReader(replay.Load(t, "llamacpp/metrics_busy").Body))
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 15 || series[0].Metric != "llamacpp:n_busy_slots_per_decode" {
		t.Fatalf("%d series, first %+v", len(series), series[0])
	}
	v := CommonView(series)
	if v.Running != 0 || v.Waiting != 0 || v.Generated != 270 || v.PrefixHits != 51 || v.PrefixQueries != 170 || !math.IsNaN(v.KVCache) {
		t.Errorf("view %+v", v)
	}
	later := v
	later.Generated, later.PrefixHits, later.PrefixQueries = v.Generated+100, v.PrefixHits+10, v.PrefixQueries+40
	if perSecond, hitRate := later.Since(v, 2); perSecond != 50 || hitRate != 0.25 {
		t.Errorf("over 2 s: %v tok/s, hit rate %v; want 50 and 0.25", perSecond, hitRate)
	}
	// The other recording is of a server that had run longer: as a later
	// scrape, its counters went back, as a restarted server's do.
	other, _, err := ParseServerMetrics(bytes.NewReader(replay.Load(t, "llamacpp/metrics").Body))
	if err != nil {
		t.Fatal(err)
	}
	if perSecond, hitRate := v.Since(CommonView(other), 2); !math.IsNaN(perSecond) || !math.IsNaN(hitRate) {
		t.Errorf("counters that went back gave %v tok/s, hit rate %v", perSecond, hitRate)
	}
	rows := v.Rows()
	if len(rows) != 4 || rows[4-1].Metric != CommonPrefixHit || math.Abs(rows[3].Value-0.3) > 1e-12 {
		t.Errorf("common rows %+v", rows)
	}
}

// vLLM's names (from its metrics documentation) map alike: the series of
// each engine are summed, the KV cache's share is the largest engine's,
// a histogram keeps its sum and count and leaves its buckets, and a
// restarted server's counters give no rate.
func TestVLLMsNamesAndEnginesMapToTheCommonSeries(t *testing.T) {
	text := `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3
vllm:num_requests_running{engine="1",model_name="m"} 2
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 7
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.5
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="m"} 1000
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 30
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 120
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 4
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 5
vllm:time_to_first_token_seconds_sum{model_name="m"} 0.7
vllm:time_to_first_token_seconds_count{model_name="m"} 5
`
	series, _, err := ParseServerMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range series {
		if strings.HasSuffix(s.Metric, "_bucket") {
			t.Errorf("a bucket was kept: %+v", s)
		}
	}
	if s := series[0]; s.Metric != "vllm:generation_tokens_total" || s.Labels != `engine="0",model_name="m"` {
		t.Errorf("first series %+v", s)
	}
	v := CommonView(series)
	if v.Running != 5 || v.Waiting != 7 || v.KVCache != 0.5 || v.Generated != 1000 || v.hitRateSoFar() != 0.25 {
		t.Errorf("view %+v", v)
	}
	restarted := v
	restarted.Generated, restarted.PrefixQueries, restarted.PrefixHits = 10, 5, 1
	if perSecond, hit := restarted.Since(v, 1); !math.IsNaN(perSecond) || !math.IsNaN(hit) {
		t.Errorf("across a restart: %v tok/s, hit rate %v", perSecond, hit)
	}
}

// A body that is not the text format is an error, not a scrape of
// nothing.
func TestNotPrometheusIsAnError(t *testing.T) {
	for _, body := range []string{`{"error": "metrics not enabled"}`, "metric{ 1\n", "m 1 2 3 4\n"} {
		if _, _, err := ParseServerMetrics(strings.NewReader(body)); err == nil {
			t.Errorf("%q parsed", body)
		}
	}
}

// The scraper reads a server at its cadence, replaying llama-server's
// recorded answer; a server whose first answer is an error (llama-server
// without --metrics answers 501) is asked once and no more; and Stop
// returns at once though a server hangs.
func TestTheScraperAsksAtItsCadenceAndStopsAskingAServerWithNoMetrics(t *testing.T) {
	var mu sync.Mutex
	asked := map[string]int{}
	count := func(name string, h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			asked[name]++
			mu.Unlock()
			h(w, r)
		}
	}
	withMetrics := replay.NewServer(t, replay.Route{"GET /metrics": count("llama", replay.Serve(replay.Load(t, "llamacpp/metrics_busy")))})
	without := replay.NewServer(t, replay.Route{"GET /metrics": count("none", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"code":501,"message":"This server does not support metrics endpoint."}}`, http.StatusNotImplemented)
	})})
	hung := replay.NewServer(t, replay.Route{"GET /metrics": count("hung", replay.Hang())})
	var scrapes []Scrape
	var seen sync.Mutex
	s := StartServerScraper([]string{withMetrics.URL + "/metrics", without.URL + "/metrics", hung.URL + "/metrics"}, 20*time.Millisecond, time.Now(), func(sc Scrape) {
		seen.Lock()
		scrapes = append(scrapes, sc)
		seen.Unlock()
	})
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n, h := asked["llama"], asked["hung"]
		mu.Unlock()
		if n >= 1 && h >= 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	stopAt := time.Now()
	s.Stop()
	if took := time.Since(stopAt); took > 2*time.Second {
		t.Errorf("Stop took %v with a server hung", took)
	}
	mu.Lock()
	defer mu.Unlock()
	if asked["none"] != 1 || asked["llama"] < 1 {
		t.Errorf("asked %v: the server without metrics once, the other at least once", asked)
	}
	var ok, failed int
	for _, sc := range scrapes {
		switch {
		case sc.Err == nil && sc.Target == 0 && sc.View.Generated == 270:
			ok++
		case sc.Err != nil && sc.Target == 1 && strings.Contains(sc.Err.Error(), "HTTP 501"):
			failed++
		}
	}
	if ok < 1 || failed != 1 {
		t.Errorf("%d good scrapes of llama-server, %d failures of the server without metrics, in %d", ok, failed, len(scrapes))
	}
}

// Whatever a server sends, the parser gives bounded, sorted series or an
// error.
func FuzzParseServerMetrics(f *testing.F) {
	f.Add("# TYPE a counter\na 1\n")
	f.Add("llamacpp:requests_processing 2\n")
	f.Add("# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 2\nh_count 1\n")
	f.Add("m{l=\"\\u001b[31m\"} NaN\n")
	f.Fuzz(func(t *testing.T, text string) {
		series, _, err := ParseServerMetrics(strings.NewReader(text))
		if err != nil {
			return
		}
		if len(series) > MaxServerSeries {
			t.Fatalf("%d series", len(series))
		}
		for i := 1; i < len(series); i++ {
			if series[i-1].Metric > series[i].Metric {
				t.Fatalf("not sorted: %q before %q", series[i-1].Metric, series[i].Metric)
			}
		}
		CommonView(series).Rows()
	})
}

// manySeries writes series lines without end, counting the bytes read:
// a server that answers half a million series a scrape.
type manySeries struct {
	n, read int
	pending []byte
}

func (m *manySeries) Read(p []byte) (int, error) {
	for len(m.pending) < len(p) {
		m.pending = fmt.Appendf(m.pending, "lora_requests_total{adapter=\"a%d\"} %d\n", m.n, m.n)
		m.n++
	}
	n := copy(p, m.pending)
	m.pending = m.pending[n:]
	m.read += n
	return n, nil
}

// An answer of endless series is read only to the line past the bound,
// and said to be cut; it once parsed a whole 8 MiB body first (565 MB a
// second at 500,000 series).
func TestAnAnswerOfEndlessSeriesIsCutAtTheBound(t *testing.T) {
	body := &manySeries{}
	series, cut, err := ParseServerMetrics(body)
	if err != nil || !cut || len(series) != MaxServerSeries {
		t.Fatalf("%d series, cut %v, %v", len(series), cut, err)
	}
	if body.read > 200<<10 {
		t.Errorf("read %d bytes for %d series", body.read, MaxServerSeries)
	}
	if _, cut, _ := ParseServerMetrics(strings.NewReader("a 1\nb 2\n")); cut {
		t.Error("two series, cut")
	}
}

// A server's metrics that redirect to another host are not followed: that
// host's series would be stored as the benchmarked server's.
func TestTheScraperStaysOnTheServersHost(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "elsewhere_total 1") }))
	defer other.Close()
	redirecting := httptest.NewServer(http.RedirectHandler(other.URL+"/metrics", http.StatusFound))
	defer redirecting.Close()
	var scrapes []Scrape
	var mu sync.Mutex
	s := StartServerScraper([]string{redirecting.URL + "/metrics"}, time.Hour, time.Now(), func(sc Scrape) {
		mu.Lock()
		scrapes = append(scrapes, sc)
		mu.Unlock()
	})
	s.Stop()
	if len(scrapes) == 0 || scrapes[0].Err == nil || !strings.Contains(scrapes[0].Err.Error(), "redirected to another host") || len(scrapes[0].Series) > 0 {
		t.Errorf("scrapes %+v", scrapes)
	}
}

// BenchmarkParseEndlessSeries is one scrape of a server that answers
// without end: what the bound costs.
func BenchmarkParseEndlessSeries(b *testing.B) {
	for b.Loop() {
		ParseServerMetrics(&manySeries{})
	}
}

// A server whose metrics do not answer: the error names its address as it
// may be shown. A refused connection's own words repeat the URL, query
// and all, and the manifest keeps each server's status.
func TestAScrapeThatFailsShowsNoSecret(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	addr := closed.URL
	closed.Close()
	var got []Scrape
	s := StartServerScraper([]string{strings.Replace(addr, "http://", "http://bob:PW-9@", 1) + "/metrics?token=TOK-9"}, time.Hour, time.Now(), func(sc Scrape) { got = append(got, sc) })
	s.Stop()
	if len(got) == 0 || got[0].Err == nil {
		t.Fatalf("%+v", got)
	}
	if msg := got[0].Err.Error(); strings.Contains(msg, "TOK-9") || strings.Contains(msg, "PW-9") || !strings.Contains(msg, "token=xxxxx") {
		t.Errorf("%q", msg)
	}
}
