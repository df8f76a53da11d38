//go:build linux && cgo

package telemetry

import (
	"encoding/binary"
	"math"
	"strings"
	"sync"
	"testing"

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
	instantMW    func(call int) uint32 // nil: NVML_FI_DEV_POWER_INSTANT not supported
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
func (g *fakeGPU) GetFieldValues(values []nvml.FieldValue) nvml.Return {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := range values {
		if values[i].FieldId != nvml.FI_DEV_POWER_INSTANT || g.instantMW == nil {
			values[i].NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
			continue
		}
		values[i].NvmlReturn, values[i].ValueType = uint32(nvml.SUCCESS), uint32(nvml.VALUE_TYPE_UNSIGNED_INT)
		binary.LittleEndian.PutUint32(values[i].Value[:4], g.instantMW(g.calls))
	}
	return nvml.SUCCESS
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

// openFake opens the fake driver as Open opens the real one, with an
// empty powercap tree.
func openFake(t *testing.T, lib nvmlLibrary) Found {
	return open(PowerAuto, finders{nvml: func() (*gpuSet, string) { return nvmlGPUs(lib) }, powercapRoot: t.TempDir()})
}

func TestWithoutNVMLTokentopRunsAndSaysWhy(t *testing.T) {
	f := openFake(t, &fakeNVML{t: t, initRet: nvml.ERROR_LIBRARY_NOT_FOUND})
	if f.Source != nil || f.Status.GPU != "no NVIDIA GPU found (the NVML library is not installed)" || !strings.Contains(f.Status.CPU, "no CPU package energy") {
		t.Errorf("%+v", f)
	}
	f = openFake(t, &fakeNVML{t: t, initRet: nvml.ERROR_DRIVER_NOT_LOADED})
	if !strings.Contains(f.Status.GPU, "NVIDIA driver not loaded") {
		t.Errorf("%+v", f.Status)
	}
}

func TestNVMLReadsAndUnsupportedFieldsStayEmpty(t *testing.T) {
	gpu := &fakeGPU{powerMW: func(int) uint32 { return 312_500 }} // no energy counter
	lib := &fakeNVML{t: t, devices: []*fakeGPU{gpu}}
	f := openFake(t, lib)
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
	f = openFake(t, lib)
	if s, _ := f.Source.Read(0, true); s.Throttle != "sw_power_cap|hw_thermal" {
		t.Errorf("event reasons %q", s.Throttle)
	}
	f.Source.Close()
	if !lib.shutdown {
		t.Error("Close did not shut NVML down")
	}
}

// Where the driver reads NVML_FI_DEV_POWER_INSTANT, each sample has the
// instantaneous power beside NVML's power usage, a 1-second average on
// Hopper that topped at 310 W while the instant field read 887 W during
// prefills; where it does not, the field stays empty.
func TestNVMLReadsTheInstantaneousPowerWhereItCan(t *testing.T) {
	gpu := &fakeGPU{powerMW: func(int) uint32 { return 310_000 }, instantMW: func(int) uint32 { return 887_250 }}
	f := openFake(t, &fakeNVML{t: t, devices: []*fakeGPU{gpu}})
	if d := f.Source.Devices()[0]; !d.HasInstant {
		t.Fatalf("device %+v: the instant field is there", d)
	}
	if s, err := f.Source.Read(0, false); err != nil || s.PowerW != 310 || s.PowerInstantW != 887.25 {
		t.Errorf("sample %+v %v", s, err)
	}
	old := &fakeGPU{powerMW: func(int) uint32 { return 200_000 }}
	f = openFake(t, &fakeNVML{t: t, devices: []*fakeGPU{old}})
	if s, _ := f.Source.Read(0, false); f.Source.Devices()[0].HasInstant || !math.IsNaN(s.PowerInstantW) {
		t.Errorf("an older driver: %+v", s)
	}
}
