//go:build linux && cgo

package telemetry

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// nvmlLibrary is the part of NVML tokentop calls, so that tests can
// script a fake one. realNVML is the only implementation outside tests.
type nvmlLibrary interface {
	Init() nvml.Return
	Shutdown() nvml.Return
	DeviceGetCount() (int, nvml.Return)
	DeviceGetHandleByIndex(i int) (nvmlDevice, nvml.Return)
	SystemGetDriverVersion() (string, nvml.Return)
	SystemGetCudaDriverVersion() (int, nvml.Return)
	// HasSymbol says whether the driver exports a function: newer calls
	// must be looked up before use, or an old driver kills the process.
	HasSymbol(name string) bool
}

// nvmlDevice is the part of nvml.Device tokentop calls.
type nvmlDevice interface {
	GetName() (string, nvml.Return)
	GetUUID() (string, nvml.Return)
	GetPowerUsage() (uint32, nvml.Return)
	GetTotalEnergyConsumption() (uint64, nvml.Return)
	GetUtilizationRates() (nvml.Utilization, nvml.Return)
	GetTemperature(nvml.TemperatureSensors) (uint32, nvml.Return)
	GetClockInfo(nvml.ClockType) (uint32, nvml.Return)
	GetMemoryInfo() (nvml.Memory, nvml.Return)
	GetEnforcedPowerLimit() (uint32, nvml.Return)
	GetCurrentClocksEventReasons() (uint64, nvml.Return)
	GetCurrentClocksThrottleReasons() (uint64, nvml.Return)
	GetFieldValues(values []nvml.FieldValue) nvml.Return
}

type realNVML struct{}

// findNVML opens the NVIDIA GPUs of this machine through the driver's
// NVML library.
func findNVML() (*gpuSet, string) { return nvmlGPUs(realNVML{}) }

// nvmlGPUs opens NVML through lib and describes its GPUs for the manifest.
func nvmlGPUs(lib nvmlLibrary) (*gpuSet, string) {
	src, why := openNVML(lib)
	if src == nil {
		return nil, why
	}
	set := &gpuSet{Source: src, Driver: src.Driver, CUDADriver: src.CUDADriver,
		Status: plural(len(src.devices), "NVIDIA GPU") + " through NVML"}
	for _, d := range src.devices {
		set.GPUs = append(set.GPUs, GPUInfo{Name: d.Name, UUID: d.ID, PowerLimitW: d.PowerLimitW})
	}
	return set, ""
}

func (realNVML) Init() nvml.Return                  { return nvml.Init() }
func (realNVML) Shutdown() nvml.Return              { return nvml.Shutdown() }
func (realNVML) DeviceGetCount() (int, nvml.Return) { return nvml.DeviceGetCount() }
func (realNVML) DeviceGetHandleByIndex(i int) (nvmlDevice, nvml.Return) {
	return nvml.DeviceGetHandleByIndex(i)
}
func (realNVML) SystemGetDriverVersion() (string, nvml.Return) { return nvml.SystemGetDriverVersion() }
func (realNVML) SystemGetCudaDriverVersion() (int, nvml.Return) {
	return nvml.SystemGetCudaDriverVersion()
}
func (realNVML) HasSymbol(name string) bool { return nvml.Extensions().LookupSymbol(name) == nil }

// nvmlSource samples NVIDIA GPUs.
type nvmlSource struct {
	lib          nvmlLibrary
	handles      []nvmlDevice
	devices      []Device
	eventReasons bool // the driver has nvmlDeviceGetCurrentClocksEventReasons
	Driver       string
	CUDADriver   string
}

// openNVML starts NVML and lists its GPUs. Any failure means no GPU
// telemetry, said in words; nothing else of NVML is called after a
// failed Init, which would end the process.
func openNVML(lib nvmlLibrary) (*nvmlSource, string) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		if ret == nvml.ERROR_LIBRARY_NOT_FOUND {
			return nil, "no NVIDIA GPU found (the NVML library is not installed)"
		}
		return nil, "no NVIDIA GPU found (NVML did not start: " + nvmlError(ret) + ")"
	}
	count, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS || count == 0 {
		lib.Shutdown()
		return nil, "no NVIDIA GPU found (NVML sees no device)"
	}
	s := &nvmlSource{lib: lib, eventReasons: lib.HasSymbol("nvmlDeviceGetCurrentClocksEventReasons")}
	if v, ret := lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		s.Driver = v
	}
	if v, ret := lib.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS {
		s.CUDADriver = fmt.Sprintf("%d.%d", v/1000, v%1000/10)
	}
	for i := 0; i < count; i++ {
		h, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue
		}
		d := Device{Kind: KindGPU, Name: fmt.Sprintf("GPU %d", i), PowerLimitW: math.NaN()}
		if name, ret := h.GetName(); ret == nvml.SUCCESS {
			d.Name = name
		}
		if uuid, ret := h.GetUUID(); ret == nvml.SUCCESS {
			d.ID = uuid
		}
		if limit, ret := h.GetEnforcedPowerLimit(); ret == nvml.SUCCESS {
			d.PowerLimitW = float64(limit) / 1000
		}
		_, ret = h.GetTotalEnergyConsumption()
		d.HasCounter = ret == nvml.SUCCESS
		_, d.HasInstant = instantPower(h)
		s.handles = append(s.handles, h)
		s.devices = append(s.devices, d)
	}
	if len(s.devices) == 0 {
		lib.Shutdown()
		return nil, "no NVIDIA GPU found (NVML could not open any device)"
	}
	return s, ""
}

func (s *nvmlSource) Devices() []Device { return s.devices }

// Read implements Source. A GPU that fell off the bus or lost its driver
// is an error; a query this GPU does not support leaves its field empty.
func (s *nvmlSource) Read(i int, boundary bool) (Sample, error) {
	h := s.handles[i]
	sample := NewSample(0, i)
	mw, ret := h.GetPowerUsage()
	if lost(ret) {
		return sample, fmt.Errorf("%s: %s", s.devices[i].Name, nvmlError(ret))
	}
	if ret == nvml.SUCCESS {
		sample.PowerW = float64(mw) / 1000
	}
	if s.devices[i].HasInstant {
		sample.PowerInstantW, _ = instantPower(h)
	}
	if s.devices[i].HasCounter {
		mj, ret := h.GetTotalEnergyConsumption()
		if lost(ret) {
			return sample, fmt.Errorf("%s: %s", s.devices[i].Name, nvmlError(ret))
		}
		if ret == nvml.SUCCESS {
			sample.EnergyMJ = float64(mj)
		}
	}
	if u, ret := h.GetUtilizationRates(); ret == nvml.SUCCESS {
		sample.UtilPct = float64(u.Gpu)
	}
	if m, ret := h.GetMemoryInfo(); ret == nvml.SUCCESS {
		sample.MemUsedMB = float64(m.Used) / (1 << 20)
	}
	if t, ret := h.GetTemperature(nvml.TEMPERATURE_GPU); ret == nvml.SUCCESS {
		sample.TempC = float64(t)
	}
	if c, ret := h.GetClockInfo(nvml.CLOCK_SM); ret == nvml.SUCCESS {
		sample.SMClockMHz = float64(c)
	}
	if boundary {
		var reasons uint64
		if s.eventReasons {
			reasons, ret = h.GetCurrentClocksEventReasons()
		} else {
			reasons, ret = h.GetCurrentClocksThrottleReasons()
		}
		if ret == nvml.SUCCESS {
			sample.Throttle = throttleNames(reasons)
		}
	}
	return sample, nil
}

// instantPower reads NVML_FI_DEV_POWER_INSTANT, in watts, where the
// driver has it: an unsigned value in milliwatts.
func instantPower(h nvmlDevice) (float64, bool) {
	values := []nvml.FieldValue{{FieldId: nvml.FI_DEV_POWER_INSTANT}}
	if h.GetFieldValues(values) != nvml.SUCCESS || nvml.Return(values[0].NvmlReturn) != nvml.SUCCESS {
		return math.NaN(), false
	}
	v := values[0]
	var mw float64
	switch nvml.ValueType(v.ValueType) {
	case nvml.VALUE_TYPE_UNSIGNED_INT:
		mw = float64(binary.LittleEndian.Uint32(v.Value[:4]))
	case nvml.VALUE_TYPE_UNSIGNED_LONG, nvml.VALUE_TYPE_UNSIGNED_LONG_LONG:
		mw = float64(binary.LittleEndian.Uint64(v.Value[:]))
	default:
		return math.NaN(), false
	}
	return mw / 1000, true
}

func (s *nvmlSource) Close() error {
	if ret := s.lib.Shutdown(); ret != nvml.SUCCESS {
		return errors.New("nvml shutdown: " + nvmlError(ret))
	}
	return nil
}

// lost reports an answer that means the GPU is gone for this run.
func lost(ret nvml.Return) bool {
	return ret == nvml.ERROR_GPU_IS_LOST || ret == nvml.ERROR_UNINITIALIZED || ret == nvml.ERROR_DRIVER_NOT_LOADED
}

// nvmlError names a return code without calling into the library, which
// may be the thing that failed.
func nvmlError(ret nvml.Return) string {
	switch ret {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return "NVML library not found"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return "NVIDIA driver not loaded"
	case nvml.ERROR_NO_PERMISSION:
		return "no permission"
	case nvml.ERROR_GPU_IS_LOST:
		return "GPU is lost"
	case nvml.ERROR_UNINITIALIZED:
		return "NVML not initialised"
	case nvml.ERROR_NOT_SUPPORTED:
		return "not supported"
	}
	return fmt.Sprintf("NVML error %d", int32(ret))
}

// throttleReasons are the clock event reason bits that matter for a
// benchmark, as named in NVML's documentation.
var throttleReasons = []struct {
	bit  uint64
	name string
}{
	{0x1, "gpu_idle"}, {0x2, "applications_clocks"}, {0x4, "sw_power_cap"}, {0x8, "hw_slowdown"},
	{0x10, "sync_boost"}, {0x20, "sw_thermal"}, {0x40, "hw_thermal"}, {0x80, "hw_power_brake"}, {0x100, "display_clocks"},
}

func throttleNames(mask uint64) string {
	var names []string
	for _, r := range throttleReasons {
		if mask&r.bit != 0 {
			names = append(names, r.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "|")
}
