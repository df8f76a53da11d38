package runner

import (
	"bytes"
	"errors"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tokentop/tokentop/backends/replay"
	"github.com/tokentop/tokentop/metrics/telemetry"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/session"
)

// metricsRun runs three trials on a recorded llama-server whose /metrics
// answers with metrics (nil: 404, as a build without --metrics has none
// there), with --server-metrics set to where.
func metricsRun(t *testing.T, metrics http.HandlerFunc, where string) []Event {
	t.Helper()
	_, _, _, events := newRecordedLlama(t, metrics).run(t, "trials = 3\nprompts = [\"x\"]", Options{ServerMetrics: where})
	return events
}

// A server with metrics is scraped into <stem>.server.csv: its own series
// and the common ones (llama-server's recorded /metrics: 270 tokens
// predicted, 51 of 170 prompt tokens from the cache), with the manifest
// naming the file and the server as scraped, and the run's end saying so.
func TestAServersMetricsAreScrapedIntoTheServerCSV(t *testing.T) {
	events := metricsRun(t, replay.Serve(replay.Load(t, "llamacpp/metrics_busy")), "")
	fin := eventsOf[Finished](events)[0]
	m, err := session.ReadManifest(fin.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	info := m.ServerMetrics
	if info == nil || info.File == "" || len(info.Servers) != 1 || info.Servers[0].Status != "scraped" || !strings.HasSuffix(info.Servers[0].URL, "/metrics") ||
		fin.ServerMetrics == nil || info.StartedAt == nil {
		t.Fatalf("manifest %+v, finished %+v", info, fin.ServerMetrics)
	}
	data, err := os.ReadFile(filepath.Join(filepath.Dir(fin.Manifest), info.File))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if lines[0] != strings.Join(session.ServerHeader, ",") {
		t.Errorf("header %q", lines[0])
	}
	// The first scrape at the start and the last at the end, at least.
	for _, want := range []string{",0,llamacpp:tokens_predicted_total,,270", ",0,tokentop:tokens_generated_total,,270", ",0,tokentop:prefix_cache_hit_rate,,0.3"} {
		if n := bytes.Count(data, []byte(want+"\n")); n < 2 {
			t.Errorf("%q in %d rows of:\n%s", want, n, data)
		}
	}
	if len(eventsOf[ServerMetrics](events)) == 0 {
		t.Error("no scrape reached the front end")
	}
}

// A server with no metrics is no warning: the manifest says why, the CSV
// has its header alone; --server-metrics off asks nothing and writes no
// CSV.
func TestAServerWithNoMetricsIsSaidNotWarnedOf(t *testing.T) {
	events := metricsRun(t, nil, "")
	if w := eventsOf[Warning](events); len(w) != 0 {
		t.Errorf("warnings %+v", w)
	}
	fin := eventsOf[Finished](events)[0]
	if info := fin.ServerMetrics; info == nil || !strings.HasPrefix(info.Servers[0].Status, "none: ") || !strings.Contains(info.Servers[0].Status, "HTTP 404") {
		t.Errorf("server metrics %+v", info)
	}
	asked := 0
	events = metricsRun(t, func(w http.ResponseWriter, r *http.Request) { asked++ }, ServerMetricsOff)
	fin = eventsOf[Finished](events)[0]
	m, err := session.ReadManifest(fin.Manifest)
	if err != nil || fin.ServerMetrics != nil || m.ServerMetrics != nil || asked != 0 {
		t.Errorf("off: finished %+v, manifest %+v, %v, asked %d", fin.ServerMetrics, m.ServerMetrics, err, asked)
	}
	if _, err := Resolve(&profiles.Profile{}, Options{Trials: NoOverride, Warmup: NoOverride, MaxTokens: NoOverride, ServerMetrics: "localhost:9000"}); err == nil || !strings.Contains(err.Error(), "--server-metrics") {
		t.Errorf("a bad address: %v", err)
	}
}

// A --server-metrics address with a password is asked with it, and the
// manifest, the CSV's account and every message name it without.
func TestAServerMetricsPasswordIsNeverStored(t *testing.T) {
	var user, pass string
	metrics := func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ = r.BasicAuth()
		http.Error(w, "no", http.StatusNotImplemented)
	}
	srv := replay.NewServer(t, replay.Route{"GET /metrics": metrics})
	where := strings.Replace(srv.URL, "http://", "http://tok:s3cr3t-pw@", 1) + "/metrics"
	events := metricsRun(t, nil, where)
	fin := eventsOf[Finished](events)[0]
	data, err := os.ReadFile(fin.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	if user != "tok" || pass != "s3cr3t-pw" {
		t.Errorf("asked as %q:%q", user, pass)
	}
	if strings.Contains(string(data), "s3cr3t-pw") || !strings.Contains(fin.ServerMetrics.Servers[0].Status, "HTTP 501") || strings.Contains(fin.ServerMetrics.Servers[0].Status, "s3cr3t-pw") {
		t.Errorf("status %q; manifest holds the password: %v", fin.ServerMetrics.Servers[0].Status, strings.Contains(string(data), "s3cr3t-pw"))
	}
}

// A server's totals over the run are summed across its restarts, as
// Prometheus's increase() does: against a real llama-server killed and
// started again, 20,736 tokens "over the run" were counted of 23,808
// generated, the first server's scraped 2,304 dropped. What was counted
// between a last read and a restart, or after a last read that failed, is
// lost: the total says it is a lower bound. The run's rate is over the
// span of the good reads.
func TestServerTotalsSumAcrossRestartsAndSayWhatIsLost(t *testing.T) {
	view := func(generated, hits, queries float64) telemetry.ServerView {
		nan := math.NaN()
		return telemetry.ServerView{Running: nan, Waiting: nan, KVCache: nan, Generated: generated, PrefixHits: hits, PrefixQueries: queries, PrefixHitRate: nan}
	}
	run := func(reads []any) session.ServerMetricsSource {
		w, err := session.Create(t.TempDir(), &session.Manifest{Profile: session.ProfileInfo{Name: "p"}})
		if err != nil {
			t.Fatal(err)
		}
		info := session.ServerMetricsInfo{Servers: []session.ServerMetricsSource{{Targets: []string{"llamacpp"}}}}
		csv, err := w.CreateServerMetrics(&info)
		if err != nil {
			t.Fatal(err)
		}
		s := &serverWatch{events: make(chan Event, 100), csv: csv, info: info, first: make([]*telemetry.Scrape, 1), last: make([]*telemetry.Scrape, 1),
			counts: make([]serverCounts, 1), warned: make([]bool, 1)}
		for k, r := range reads {
			sc := telemetry.Scrape{At: time.Duration(k) * time.Second}
			switch r := r.(type) {
			case telemetry.ServerView:
				sc.View = r
			case error:
				sc.Err = r
			}
			s.sink(sc)
		}
		src := &s.info.Servers[0]
		s.counts[0].fill(src, s.first[0], s.last[0])
		csv.Close()
		return *src
	}
	down := errors.New("connection refused")

	steady := run([]any{view(1000, 0, 100), view(1500, 50, 200), view(2000, 150, 300)})
	if steady.TokensGenerated != 1000 || steady.TokensPerSecond != 500 || steady.LowerBound() || steady.Restarts != 0 || steady.PrefixHitRate != 0.75 {
		t.Errorf("steady: %+v", steady)
	}
	// Scraped to 2,304, killed, started again, counted 20,736 more.
	restarted := run([]any{view(0, 0, 0), view(2304, 0, 0), down, down, view(500, 0, 0), view(20736, 0, 0)})
	if restarted.TokensGenerated != 2304+20736 || restarted.Restarts != 1 || !restarted.LowerBound() {
		t.Errorf("restarted: %+v", restarted)
	}
	// Killed for good: the tokens after its last read are not known.
	died := run([]any{view(0, 0, 0), view(950, 0, 0), down})
	if died.TokensGenerated != 950 || died.Restarts != 0 || !died.LowerBound() || died.TokensPerSecond != 950 {
		t.Errorf("died: %+v", died)
	}
	// A read that failed between two good ones: a restart whose count
	// overtook the old one by the next read would look the same.
	blip := run([]any{view(0, 0, 0), down, view(900, 0, 0)})
	if blip.TokensGenerated != 900 || !blip.LowerBound() || blip.LastReadFailed {
		t.Errorf("a failed read between good ones: %+v", blip)
	}
	restarted.Status, died.Status, blip.Status = "scraped", "scraped", "scraped"
	info := &session.ServerMetricsInfo{File: "s.server.csv", Servers: []session.ServerMetricsSource{restarted, died, blip}}
	words := info.Words()
	if !strings.Contains(words[0], "at least 23040 tokens generated over the run, 4608.0 tok/s (its counters went back to zero once: what it counted between its last read and each restart is lost)") ||
		!strings.Contains(words[1], "at least 950 tokens generated over the run, 950.0 tok/s (its last read failed: what it counted after the read before is lost)") ||
		!strings.Contains(words[2], "at least 900 tokens generated over the run, 450.0 tok/s (1 of its reads failed: had it restarted between them, what it counted before is lost)") {
		t.Errorf("words:\n%s", strings.Join(words, "\n"))
	}
}
