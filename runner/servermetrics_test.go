package runner

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokentop/tokentop/backends/replay"
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
