package telemetry

import (
	"errors"
	"strings"
)

// Source is a set of power devices read together.
type Source interface {
	Devices() []Device
	// Read takes one sample of device i (At is the sampler's to fill).
	// boundary asks for the throttle reasons too, read at trial starts
	// and ends. An error means
	// the device is gone; a field the device does not support stays NaN.
	Read(i int, boundary bool) (Sample, error)
	Close() error
}

// Sources reads several sources as one, devices in order.
type Sources []Source

// Devices implements Source.
func (s Sources) Devices() []Device {
	var all []Device
	for _, src := range s {
		all = append(all, src.Devices()...)
	}
	return all
}

// Read implements Source.
func (s Sources) Read(i int, boundary bool) (Sample, error) {
	for _, src := range s {
		n := len(src.Devices())
		if i < n {
			sample, err := src.Read(i, boundary)
			return sample, err
		}
		i -= n
	}
	return Sample{}, errors.New("no such device")
}

// Close implements Source.
func (s Sources) Close() error {
	var errs []error
	for _, src := range s {
		errs = append(errs, src.Close())
	}
	return errors.Join(errs...)
}

// Status is what telemetry found on this machine, in words for the
// manifest and the power panel.
type Status struct {
	GPU string // "2 NVIDIA GPUs through NVML", or why none
	CPU string // "CPU package energy through powercap", or why none
}

func (s Status) String() string { return strings.TrimSpace(s.GPU + "; " + s.CPU) }
