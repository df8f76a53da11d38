package telemetry

import (
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// fakeNVML scripts a driver. After a failed Init any other call fails the
// test: on a real machine it would kill the process.
type fakeNVML struct {
	t         *testing.T
	initRet   nvml.Return
	devices   []*fakeGPU
	newSymbol bool
	mu        sync.Mutex
	shutdown  bool
}

func (f *fakeNVML) Init() nvml.Return { return f.initRet }
func (f *fakeNVML) guard() {
	if f.initRet != nvml.SUCCESS {
		f.t.Fatal("an NVML call after a failed Init")
	}
}
func (f *fakeNVML) Shutdown() nvml.Return {
	f.guard()
	f.mu.Lock()
	f.shutdown = true
	f.mu.Unlock()
	return nvml.SUCCESS
}
func (f *fakeNVML) DeviceGetCount() (int, nvml.Return) {
	f.guard()
	return len(f.devices), nvml.SUCCESS
}
func (f *fakeNVML) DeviceGetHandleByIndex(i int) (nvmlDevice, nvml.Return) {
	f.guard()
	return f.devices[i], nvml.SUCCESS
}
func (f *fakeNVML) SystemGetDriverVersion() (string, nvml.Return) {
	f.guard()
	return "580.65.06", nvml.SUCCESS
}
func (f *fakeNVML) SystemGetCudaDriverVersion() (int, nvml.Return) {
	f.guard()
	return 13000, nvml.SUCCESS
}
func (f *fakeNVML) HasSymbol(string) bool { f.guard(); return f.newSymbol }

// fakeGPU scripts one device: power and energy by call number, and the
// call that loses it.
type fakeGPU struct {
	mu           sync.Mutex
	calls        int
	powerMW      func(call int) uint32
	energyMJ     func(call int) uint64 // nil: not supported (pre-Volta)
	lostAt       int                   // from this call on the GPU is lost; 0 never
	eventCalls   int
	throttleCall int
}

func (g *fakeGPU) GetName() (string, nvml.Return)               { return "Fake H100", nvml.SUCCESS }
func (g *fakeGPU) GetUUID() (string, nvml.Return)               { return "GPU-fake-0", nvml.SUCCESS }
func (g *fakeGPU) GetEnforcedPowerLimit() (uint32, nvml.Return) { return 700000, nvml.SUCCESS }
func (g *fakeGPU) GetPowerUsage() (uint32, nvml.Return) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls++
	if g.lostAt > 0 && g.calls >= g.lostAt {
		return 0, nvml.ERROR_GPU_IS_LOST
	}
	return g.powerMW(g.calls), nvml.SUCCESS
}
func (g *fakeGPU) GetTotalEnergyConsumption() (uint64, nvml.Return) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.energyMJ == nil {
		return 0, nvml.ERROR_NOT_SUPPORTED
	}
	return g.energyMJ(g.calls), nvml.SUCCESS
}
func (g *fakeGPU) GetUtilizationRates() (nvml.Utilization, nvml.Return) {
	return nvml.Utilization{Gpu: 97}, nvml.SUCCESS
}
func (g *fakeGPU) GetTemperature(nvml.TemperatureSensors) (uint32, nvml.Return) {
	return 61, nvml.SUCCESS
}
func (g *fakeGPU) GetClockInfo(nvml.ClockType) (uint32, nvml.Return) { return 1980, nvml.SUCCESS }
func (g *fakeGPU) GetMemoryInfo() (nvml.Memory, nvml.Return) {
	return nvml.Memory{Used: 3 << 30}, nvml.SUCCESS
}
func (g *fakeGPU) GetCurrentClocksEventReasons() (uint64, nvml.Return) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.eventCalls++
	return 0x4 | 0x40, nvml.SUCCESS
}
func (g *fakeGPU) GetCurrentClocksThrottleReasons() (uint64, nvml.Return) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.throttleCall++
	return 0x1, nvml.SUCCESS
}

func TestWithoutNVMLTokentopRunsAndSaysWhy(t *testing.T) {
	f := open(&fakeNVML{t: t, initRet: nvml.ERROR_LIBRARY_NOT_FOUND}, t.TempDir())
	if f.Source != nil || f.Status.GPU != "no NVIDIA GPU found (the NVML library is not installed)" || !strings.Contains(f.Status.CPU, "no CPU package energy") {
		t.Errorf("%+v", f)
	}
	f = open(&fakeNVML{t: t, initRet: nvml.ERROR_DRIVER_NOT_LOADED}, t.TempDir())
	if !strings.Contains(f.Status.GPU, "NVIDIA driver not loaded") {
		t.Errorf("%+v", f.Status)
	}
}

func TestThisMachineOpensWithoutFailing(t *testing.T) {
	// The real library: on this machine (no GPU) it must say why; on a
	// GPU machine it lists the GPUs. Either way, no crash.
	f := Open()
	if f.Source == nil && !strings.HasPrefix(f.Status.GPU, "no NVIDIA GPU found") {
		t.Errorf("no source and no reason: %+v", f.Status)
	}
	if f.Source != nil {
		f.Source.Close()
	}
}

func TestNVMLReadsAndUnsupportedFieldsStayEmpty(t *testing.T) {
	gpu := &fakeGPU{powerMW: func(int) uint32 { return 312_500 }} // no energy counter
	lib := &fakeNVML{t: t, devices: []*fakeGPU{gpu}}
	f := open(lib, t.TempDir())
	if f.Source == nil || f.Driver != "580.65.06" || f.CUDADriver != "13.0" || len(f.GPUs) != 1 || f.GPUs[0].PowerLimitW != 700 {
		t.Fatalf("%+v", f)
	}
	if d := f.Source.Devices()[0]; d.HasCounter || d.Kind != KindGPU {
		t.Errorf("device %+v: no counter expected", d)
	}
	s, err := f.Source.Read(0, true)
	if err != nil || s.PowerW != 312.5 || !math.IsNaN(s.EnergyMJ) || s.TempC != 61 || s.SMClockMHz != 1980 || s.UtilPct != 97 || s.MemUsedMB != 3072 {
		t.Errorf("sample %+v %v", s, err)
	}
	// An old driver has no nvmlDeviceGetCurrentClocksEventReasons: the
	// older throttle call answers instead.
	if s.Throttle != "gpu_idle" || gpu.eventCalls != 0 || gpu.throttleCall != 1 {
		t.Errorf("throttle %q via event %d / throttle %d calls", s.Throttle, gpu.eventCalls, gpu.throttleCall)
	}
	lib.newSymbol = true
	f = open(lib, t.TempDir())
	if s, _ := f.Source.Read(0, true); s.Throttle != "sw_power_cap|hw_thermal" {
		t.Errorf("event reasons %q", s.Throttle)
	}
	f.Source.Close()
	if !lib.shutdown {
		t.Error("Close did not shut NVML down")
	}
}

// collect is a sink that keeps every sample.
type collect struct {
	mu      sync.Mutex
	samples []Sample
}

func (c *collect) add(s Sample) {
	c.mu.Lock()
	c.samples = append(c.samples, s)
	c.mu.Unlock()
}

func (c *collect) all() []Sample {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Sample(nil), c.samples...)
}

func TestSamplerLosesADeviceOnceAndKeepsTheOthers(t *testing.T) {
	lostGPU := &fakeGPU{powerMW: func(int) uint32 { return 100_000 }, lostAt: 4}
	goodGPU := &fakeGPU{powerMW: func(int) uint32 { return 200_000 }, energyMJ: func(call int) uint64 { return uint64(call) * 20 }}
	f := open(&fakeNVML{t: t, devices: []*fakeGPU{lostGPU, goodGPU}}, t.TempDir())
	sink := &collect{}
	s := StartSampler(f.Source, 5*time.Millisecond, sink.add)
	deadline := time.Now().Add(5 * time.Second)
	for s.Lost(0) == "" && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	s.Mark("trial_end greedy#1")
	s.Stop()
	var lostEvents, good, goodMarks int
	for _, sample := range sink.all() {
		switch {
		case strings.HasPrefix(sample.Event, "device lost"):
			lostEvents++
			if sample.Device != 0 || !strings.Contains(sample.Event, "GPU is lost") {
				t.Errorf("lost event %+v", sample)
			}
		case sample.Device == 1:
			good++
			if sample.Event == "trial_end greedy#1" && sample.Throttle != "" {
				goodMarks++
			}
		}
	}
	if lostEvents != 1 || s.Lost(0) == "" || s.Lost(1) != "" || good < 4 || goodMarks != 1 {
		t.Errorf("lost events %d, good samples %d, boundary samples %d, lost %q/%q", lostEvents, good, goodMarks, s.Lost(0), s.Lost(1))
	}
	for i, sample := range s.Samples(1, 0, time.Hour)[1:] {
		if sample.At < s.Samples(1, 0, time.Hour)[i].At {
			t.Fatal("samples out of time order")
		}
	}
}

func TestSamplerBracketsATrialForTheCounter(t *testing.T) {
	// 400 W, counter updating every 4th read: a real GPU's ~100 ms
	// granularity at a 25 ms cadence.
	var calls sync.Mutex
	gpu := &fakeGPU{powerMW: func(int) uint32 { return 400_000 }}
	start := time.Now()
	gpu.energyMJ = func(int) uint64 {
		calls.Lock()
		defer calls.Unlock()
		elapsed := time.Since(start) / (100 * time.Millisecond) * (100 * time.Millisecond)
		return uint64(400 * elapsed.Seconds() * 1000)
	}
	f := open(&fakeNVML{t: t, devices: []*fakeGPU{gpu}}, t.TempDir())
	s := StartSampler(f.Source, 25*time.Millisecond, func(Sample) {})
	defer s.Stop()
	begin := s.Mark("trial_start")
	time.Sleep(600 * time.Millisecond)
	end := s.Mark("trial_end")
	e := TrialEnergy(s.Samples(0, begin, end), begin, end, Baseline{MeanW: 50, StdW: 1}, true)
	want := 400 * (end - begin).Seconds()
	if e.Quality != QualityCounter || math.Abs(e.GrossJ-want) > 0.25*want {
		t.Errorf("%+v, want about %.0f J from the counter", e, want)
	}
}
