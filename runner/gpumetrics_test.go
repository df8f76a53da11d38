package runner

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tokentop/tokentop/metrics/telemetry"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/session"
)

// Several exporters each read the GPUs of the servers on their own host;
// one exporter reads them for every target; an exporter on no target's
// host, a target with none, and an address that is not one are refused
// before anything runs.
func TestGPUMetricsReadTheGPUsOfTheirOwnTargets(t *testing.T) {
	p, err := profiles.Parse("two.toml", []byte("name = \"two\"\nmax_tokens = 8\ntrials = 1\nprompts = [\"x\"]\n"+
		"[[arms]]\nname = \"a\"\nbackend = \"openai\"\nurl = \"http://node-a:8000/v1\"\nmodel = \"m\"\n"+
		"[[arms]]\nname = \"b\"\nbackend = \"openai\"\nurl = \"http://node-b:8000/v1\"\nmodel = \"m\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	resolve := func(urls ...string) (*Plan, error) {
		return Resolve(p, Options{OutDir: t.TempDir(), Trials: NoOverride, Warmup: NoOverride, MaxTokens: NoOverride, GPUMetrics: urls})
	}
	plan, err := resolve("http://node-b:9400/metrics", "http://node-a:9400/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if g := plan.Telemetry.GPUMetrics; len(g) != 2 || !slices.Equal(g[0].Targets, []int{1}) || !slices.Equal(g[1].Targets, []int{0}) {
		t.Errorf("two exporters: %+v", g)
	}
	if plan, err = resolve("http://10.0.0.9:9400/metrics"); err != nil || !slices.Equal(plan.Telemetry.GPUMetrics[0].Targets, []int{0, 1}) {
		t.Errorf("one exporter: %v %+v", err, plan.Telemetry.GPUMetrics)
	}
	for _, c := range []struct {
		urls []string
		want string
	}{
		{[]string{"http://node-a:9400/metrics", "http://node-c:9400/metrics"}, "--gpu-metrics: http://node-c:9400/metrics is on no target's host"},
		{[]string{"http://node-a:9400/metrics", "http://node-a:9401/metrics"}, "--gpu-metrics: no exporter on the host of"},
		{[]string{"node-a:9400"}, "--gpu-metrics: \"node-a:9400\" is not the http(s) address of a DCGM exporter's metrics"},
		{[]string{"http://user:hunter2@[::1"}, "an address that does not parse"},
	} {
		if _, err := resolve(c.urls...); err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%v: %v, want %q", c.urls, err, c.want)
		}
	}
	if _, err := Resolve(p, Options{OutDir: t.TempDir(), Trials: NoOverride, Warmup: NoOverride, MaxTokens: NoOverride, Power: "off", GPUMetrics: []string{"http://node-a:9400/metrics"}}); err == nil ||
		!strings.Contains(err.Error(), "--power off turns off") {
		t.Errorf("--power off with an exporter: %v", err)
	}
	// A profile's gpu_metrics is checked where it is written.
	_, err = profiles.Parse("remote.toml", []byte("name = \"remote\"\nmax_tokens = 8\ntrials = 1\nprompts = [\"x\"]\ngpu_metrics = [\"ftp://node-a/metrics\"]\n"))
	if err == nil || !strings.Contains(err.Error(), "remote.toml:5: gpu_metrics:") {
		t.Errorf("a profile's bad exporter: %v", err)
	}
}

// dcgmExporter serves the fake GPU as dcgm-exporter would, its readings
// updated every update (its -c): the counter holds between updates.
func dcgmExporter(t *testing.T, gpu *fakeGPU, update time.Duration) *httptest.Server {
	var servedAt time.Time
	var watts, energyMJ float64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gpu.mu.Lock()
		if time.Since(servedAt) >= update {
			gpu.advance()
			servedAt, watts, energyMJ = time.Now(), gpu.watts(), gpu.energyJ*1000
		}
		gpu.mu.Unlock()
		labels := `gpu="0",UUID="GPU-remote-0",modelName="NVIDIA H100 80GB HBM3",Hostname="gpu-node-1"`
		fmt.Fprintf(w, "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\nDCGM_FI_DEV_POWER_USAGE{%s} %.3f\n", labels, watts)
		fmt.Fprintf(w, "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{%s} %.0f\n", labels, energyMJ)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A remote GPU through its DCGM exporter gives the trials their energy by
// the same rules as a local one: the baseline before and after, the
// counter's rise over each trial, its step as the resolution; the
// exporter's own update interval is measured and recorded.
func TestEnergyFromARemoteGPUThroughItsDCGMExporter(t *testing.T) {
	plan := testPlan(t, 1, 6, "greedy")
	gpu := &fakeGPU{}
	srv := dcgmExporter(t, gpu, 40*time.Millisecond)
	plan.Telemetry.GPUMetrics = []GPUMetricsSource{{URL: srv.URL + "/metrics", Targets: []int{0}}}
	plan.Telemetry.GPUMetricsInterval, plan.Telemetry.Interval, plan.Telemetry.IdleBaseline = 10*time.Millisecond, 10*time.Millisecond, 400*time.Millisecond
	delays := slices.Repeat([]time.Duration{25 * time.Millisecond}, 7)
	status, err, events := runPlan(t, context.Background(), plan, busyBackend{&fakeBackend{delays: delays}, gpu})
	if err != nil || status != session.StatusComplete {
		t.Fatal(status, err)
	}
	started := eventsOf[Started](events)[0]
	if !strings.HasPrefix(started.Power.GPU, "1 remote GPU through 1 DCGM exporter; this machine: no NVIDIA GPU found") {
		t.Errorf("power status %q", started.Power.GPU)
	}
	s, err := session.Load(events[len(events)-1].(Finished).Manifest)
	if err != nil {
		t.Fatal(err)
	}
	power := s.Manifest.Power
	if len(power.Devices) != 1 || power.Devices[0].ID != "GPU-remote-0" || power.Devices[0].Source != "DCGM exporter "+srv.URL+"/metrics" ||
		power.EnergySource != "gpu" || math.Abs(power.Baseline[0].MeanW-50) > 1 || len(power.BaselineAfter) != 1 {
		t.Fatalf("power %+v", power)
	}
	if every := power.Devices[0].UpdateMs; every < 35 || every > 150 { // later on a busy machine, whose scrapes come late
		t.Errorf("the exporter's update interval measured as %v ms; it updates every 40 ms", every)
	}
	for _, r := range session.Counted(session.ByArm(s.Records)["greedy"]) {
		// 200 W above idle while generating, read in 40 ms steps: off by
		// no more than the resolution it carries (and the runner's own
		// bookkeeping inside the window, idle).
		want := 200 * r.E2EMs / 1000
		if r.EnergyQuality != "counter" || math.Abs(r.EnergyJ-want) > r.EnergyErrJ+0.1*want || !(r.EnergyErrJ >= 2 && r.EnergyErrJ <= 40) {
			t.Errorf("trial %d: %.2f J (want ~%.2f), resolution %.2f J, %s", r.Trial, r.EnergyJ, want, r.EnergyErrJ, r.EnergyQuality)
		}
	}
	if e := s.Manifest.Summary["greedy"].Energy; e == nil || e.Idle() || e.N != 6 || !e.DriftKnown || math.Abs(e.UpdateMs-power.Devices[0].UpdateMs) > 1e-9 {
		t.Errorf("the arm's energy %+v", e)
	}
}

// An exporter the user named that does not answer fails the run before
// anything is measured, saying which and why.
func TestAnExporterThatDoesNotAnswerFailsTheRun(t *testing.T) {
	plan := testPlan(t, 0, 2, "greedy")
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }))
	defer down.Close()
	plan.Telemetry.GPUMetrics = []GPUMetricsSource{{URL: down.URL + "/metrics", Targets: []int{0}}}
	status, err, _ := runPlan(t, context.Background(), plan, &fakeBackend{delays: []time.Duration{time.Millisecond}})
	if status != session.StatusFailed || err == nil || !strings.Contains(err.Error(), "--gpu-metrics: "+down.URL+"/metrics answered HTTP 404") {
		t.Errorf("status %s, %v", status, err)
	}
}

// Each target's trials sum the GPUs of its own exporters, never this
// machine's GPU beside them (recorded, not summed).
func TestEachTargetSumsItsOwnExportersGPUs(t *testing.T) {
	plan := &Plan{Targets: make([]PlanTarget, 2)}
	plan.Telemetry.GPUMetrics = []GPUMetricsSource{{Targets: []int{1}}, {Targets: []int{0}}}
	gpu := telemetry.Device{Kind: telemetry.KindGPU}
	devices := []telemetry.Device{gpu, gpu, gpu, gpu} // this machine's, then two of the first exporter and one of the second
	perTarget, summed, kind := energyDevicesOf(plan, devices, []int{2, 1})
	if !slices.Equal(perTarget[0], []int{3}) || !slices.Equal(perTarget[1], []int{1, 2}) || !slices.Equal(summed, []int{1, 2, 3}) || kind != "gpu" {
		t.Errorf("per target %v, summed %v, %s", perTarget, summed, kind)
	}
}
