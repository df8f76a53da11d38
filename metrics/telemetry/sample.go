// Package telemetry samples what a run costs besides time: GPU power and
// energy through NVML (Linux with cgo), CPU package energy through Linux
// powercap (RAPL), Apple chip power through macOS powermetrics, and
// process memory on every OS. Every outside call goes through a small
// interface, so tests drive it with fake devices and fake sysfs trees,
// and a machine without any of them runs normally with nothing faked.
package telemetry

import (
	"math"
	"time"
)

// Kind says what a device measures.
type Kind string

// Device kinds.
const (
	KindGPU Kind = "gpu"         // an NVIDIA GPU through NVML
	KindCPU Kind = "cpu_package" // a CPU package's energy through powercap
	// KindSoC is a whole Apple chip (CPU, GPU and Neural Engine) through
	// powermetrics; KindSoCPart one of those parts, recorded beside it
	// and never added to it.
	KindSoC     Kind = "soc"
	KindSoCPart Kind = "soc_part"
)

// Device describes one power source.
type Device struct {
	Name string `toml:"name"` // e.g. "NVIDIA H100 80GB HBM3" or "package-0"
	ID   string `toml:"id"`   // a GPU's UUID, or the powercap zone
	Kind Kind   `toml:"kind"`
	// PowerLimitW is the enforced power limit; NaN when unknown.
	PowerLimitW float64 `toml:"power_limit_w"`
	// HasCounter says whether the device has a cumulative energy counter.
	HasCounter bool `toml:"energy_counter"`
	// HasInstant says whether the device reads its instantaneous power
	// beside PowerW (NVML's NVML_FI_DEV_POWER_INSTANT): where it does,
	// PowerW is a 1-second average (Ampere and newer) that hides the
	// peaks of a prefill, and the charts draw the instantaneous reading.
	HasInstant bool `toml:"power_instant"`
	// UpdateMs is how often its readings changed over the run, measured
	// (UpdateInterval); 0 where not measured. A trial shorter than two
	// updates has no energy figure of its own.
	UpdateMs float64 `toml:"update_ms,omitzero"`
	// Source says where a device is read other than on this machine
	// ("DCGM exporter http://node1:9400/metrics"); "" for a local one.
	Source string `toml:"source,omitempty"`
}

// Sample is one reading of one device. Unknown fields are NaN (or empty):
// a query this device does not support leaves its field empty and the
// rest works.
type Sample struct {
	// At is the time since the sampler started, on the monotonic clock.
	At     time.Duration
	Device int // index into the source's devices
	// PowerW is the instantaneous (or, on Ampere and newer GPUs, the
	// 1-second average) power draw; PowerInstantW the instantaneous one
	// where the device reads it apart (Device.HasInstant).
	PowerW, PowerInstantW float64
	// EnergyMJ is the cumulative energy counter, unwrapped, in millijoules.
	EnergyMJ   float64
	UtilPct    float64
	TempC      float64
	SMClockMHz float64
	MemUsedMB  float64
	// Throttle lists the clock event (throttle) reasons ("none" when
	// there are none, "" when unknown); read on trial boundary samples.
	Throttle string
	// Event marks a boundary sample: "trial_start greedy#3" and the like.
	Event string
}

// NewSample returns a sample with every measurement unknown.
func NewSample(at time.Duration, device int) Sample {
	nan := math.NaN()
	return Sample{At: at, Device: device, PowerW: nan, PowerInstantW: nan, EnergyMJ: nan, UtilPct: nan, TempC: nan, SMClockMHz: nan, MemUsedMB: nan}
}
