package telemetry

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The exporter's documented format (dcgm-exporter's default collector
// set, Kubernetes pod labels on the GPU a pod holds): each GPU once, by
// UUID, with its power, energy counter and the rest; DCGM's blank value
// (a field the GPU lacks) is no reading.
func TestParseDCGMReadsEachGPU(t *testing.T) {
	f, err := os.Open("testdata/dcgm-exporter.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gpus, err := ParseDCGM(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(gpus) != 2 {
		t.Fatalf("%d GPUs: %+v", len(gpus), gpus)
	}
	busy := gpus[0]
	if busy.ID != "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52" || busy.Name != "NVIDIA H100 80GB HBM3" || busy.PowerW != 412.734 ||
		busy.EnergyMJ != 81234567890 || busy.TempC != 61 || busy.UtilPct != 97 || busy.SMClockMHz != 1980 || busy.FBMB != 74211 || !math.IsNaN(busy.LimitW) {
		t.Errorf("GPU 0: %+v", busy)
	}
	if gpus[1].PowerW != 71.052 || gpus[1].EnergyMJ != 69876543210 {
		t.Errorf("GPU 1: %+v", gpus[1])
	}

	// Without a UUID, a GPU is its index on its host; a blank is NaN; a
	// model name is cleaned of what a terminal would act on.
	gpus, err = ParseDCGM(strings.NewReader("# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n" +
		"DCGM_FI_DEV_POWER_USAGE{gpu=\"3\",Hostname=\"node-7\",modelName=\"evil\x1b]0;owned\x07 GPU\"} 9223372036854775794\n"))
	if err != nil || len(gpus) != 1 {
		t.Fatalf("%v %+v", err, gpus)
	}
	if g := gpus[0]; g.ID != "gpu 3 on node-7" || !math.IsNaN(g.PowerW) || !math.IsNaN(g.EnergyMJ) || strings.ContainsAny(g.Name, "\x1b\x07") {
		t.Errorf("%+v", g)
	}
}

func TestParseDCGMRefusesWhatIsNotAnExporters(t *testing.T) {
	var many strings.Builder
	for i := range maxDCGMGPUs + 1 {
		fmt.Fprintf(&many, "DCGM_FI_DEV_POWER_USAGE{gpu=\"%d\",UUID=\"GPU-%d\"} 100\n", i, i)
	}
	for _, c := range []struct{ body, want string }{
		{"<html>not metrics</html>", "not Prometheus text format"},
		{"# TYPE DCGM_FI_DEV_GPU_TEMP gauge\nDCGM_FI_DEV_GPU_TEMP{gpu=\"0\"} 40\n", "no DCGM_FI_DEV_POWER_USAGE series"},
		{many.String(), "more than 64 GPUs"},
	} {
		if _, err := ParseDCGM(strings.NewReader(c.body)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.30q: %v, want %q", c.body, err, c.want)
		}
	}
}

// scriptedExporter serves one GPU drawing watts() whose energy counter
// and power reading update every update, as dcgm-exporter's -c sets; it
// answers 503 while down is set.
func scriptedExporter(t *testing.T, update time.Duration, watts func() float64) (srv *httptest.Server, scrapes *atomic.Int32, down *atomic.Bool) {
	scrapes, down = &atomic.Int32{}, &atomic.Bool{}
	start := time.Now()
	var energyMJ, lastW float64
	var updated time.Duration
	var mu = make(chan struct{}, 1)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		mu <- struct{}{}
		defer func() { <-mu }()
		scrapes.Add(1)
		for now := time.Since(start); updated+update <= now; updated += update {
			lastW = watts()
			energyMJ += lastW * update.Seconds() * 1000
		}
		fmt.Fprintf(w, "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\nDCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-remote\",modelName=\"NVIDIA H100\"} %.3f\n", lastW)
		fmt.Fprintf(w, "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\",UUID=\"GPU-remote\",modelName=\"NVIDIA H100\"} %.0f\n", energyMJ)
	}))
	t.Cleanup(srv.Close)
	return srv, scrapes, down
}

// An exporter is scraped on the source's own cadence, whatever the
// sampler's; Read hands out the latest; an exporter that stops answering
// loses its devices once it has been silent for the bound.
func TestDCGMSourceScrapesOnItsOwnCadence(t *testing.T) {
	srv, scrapes, down := scriptedExporter(t, 20*time.Millisecond, func() float64 { return 300 })
	src, err := OpenDCGM(srv.URL+"/metrics", 20*time.Millisecond, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	devices := src.Devices()
	if len(devices) != 1 || devices[0].ID != "GPU-remote" || !devices[0].HasCounter || devices[0].Kind != KindGPU ||
		devices[0].Source != "DCGM exporter "+srv.URL+"/metrics" {
		t.Fatalf("devices %+v", devices)
	}
	// A hundred reads cost the exporter nothing: they hand out the last
	// scrape; the scrapes come at their own cadence.
	before := scrapes.Load()
	var first Sample
	for range 100 {
		if first, err = src.Read(0, false); err != nil {
			t.Fatal(err)
		}
	}
	if n := scrapes.Load() - before; n > 5 {
		t.Errorf("%d scrapes for 100 reads", n)
	}
	time.Sleep(200 * time.Millisecond)
	later, err := src.Read(0, true)
	if err != nil || !(later.EnergyMJ > first.EnergyMJ) || later.PowerW != 300 {
		t.Errorf("first %+v, later %+v, %v", first, later, err)
	}
	if n := scrapes.Load() - before; n < 2 {
		t.Errorf("%d scrapes in 200 ms at one per 20 ms", n)
	}
	src.mu.Lock()
	src.lostAfter = 50 * time.Millisecond
	src.mu.Unlock()
	down.Store(true)
	time.Sleep(200 * time.Millisecond)
	if _, err := src.Read(0, false); err == nil || !strings.Contains(err.Error(), "answered HTTP 503") {
		t.Errorf("an exporter answering 503 for 200 ms: %v", err)
	}
}

// An exporter's redirect to another host is not followed, and a password
// in its address is never shown.
func TestDCGMStaysOnTheExportersHostAndHidesItsPassword(t *testing.T) {
	other, _, _ := scriptedExporter(t, 100*time.Millisecond, func() float64 { return 100 })
	redirecting := httptest.NewServer(http.RedirectHandler(other.URL+"/metrics", http.StatusFound))
	defer redirecting.Close()
	withPassword := strings.Replace(redirecting.URL, "http://", "http://reader:hunter2@", 1) + "/metrics"
	_, err := OpenDCGM(withPassword, 100*time.Millisecond, time.Second)
	if err == nil || !strings.Contains(err.Error(), "redirected to another host") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("%v", err)
	}
	srv, _, _ := scriptedExporter(t, 100*time.Millisecond, func() float64 { return 100 })
	src, err := OpenDCGM(strings.Replace(srv.URL, "http://", "http://reader:hunter2@", 1)+"/metrics", 100*time.Millisecond, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if d := src.Devices()[0]; strings.Contains(d.Source, "hunter2") || !strings.Contains(d.Source, "reader:xxxxx@") {
		t.Errorf("source %q", d.Source)
	}
}

func FuzzParseDCGM(f *testing.F) {
	data, err := os.ReadFile("testdata/dcgm-exporter.txt")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(data))
	f.Add("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} NaN\n")
	f.Add("# TYPE DCGM_FI_DEV_POWER_USAGE histogram\nDCGM_FI_DEV_POWER_USAGE_bucket{le=\"1\"} 1\n")
	f.Fuzz(func(t *testing.T, body string) {
		gpus, err := ParseDCGM(strings.NewReader(body))
		if err != nil {
			return
		}
		if len(gpus) == 0 || len(gpus) > maxDCGMGPUs {
			t.Fatalf("%d GPUs without an error", len(gpus))
		}
		for _, g := range gpus {
			if g.ID == "" || g.Name == "" || strings.ContainsAny(g.ID+g.Name, "\x1b\x07\n") {
				t.Fatalf("%+v", g)
			}
			for _, v := range []float64{g.PowerW, g.EnergyMJ, g.TempC, g.UtilPct, g.SMClockMHz, g.FBMB, g.LimitW} {
				if v < 0 || math.IsInf(v, 0) || v >= dcgmBlank {
					t.Fatalf("a reading %v: %+v", v, g)
				}
			}
		}
	})
}

// An exporter that takes the connection and never answers is given up at
// the bound, saying so: a run's start never waits on it for ever.
func TestAHungExporterIsGivenUpAtItsBound(t *testing.T) {
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer hung.Close()
	defer close(release)
	_, err := OpenDCGM(hung.URL+"/metrics", 100*time.Millisecond, 200*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "Timeout exceeded") || !strings.HasPrefix(err.Error(), hung.URL+"/metrics: ") {
		t.Errorf("%v", err)
	}
}
