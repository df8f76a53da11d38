package telemetry

import "strconv"

// Found is what telemetry found on this machine.
type Found struct {
	// Source reads every device found; nil when there is none.
	Source Source
	Status Status
	// GPUs, Driver and CUDADriver describe the NVIDIA side for the
	// manifest's [environment]; empty without NVML.
	GPUs       []GPUInfo
	Driver     string
	CUDADriver string
}

// Open finds the power sources of this machine: NVIDIA GPUs through NVML
// and CPU packages through powercap. It never fails; what is missing is
// said in Status, and the run goes on without it.
func Open() Found { return open(realNVML{}, PowercapRoot) }

func open(lib nvmlLibrary, powercapRoot string) Found {
	var f Found
	var sources Sources
	gpus, why := openNVML(lib)
	if gpus != nil {
		sources = append(sources, gpus)
		f.Driver, f.CUDADriver = gpus.Driver, gpus.CUDADriver
		for _, d := range gpus.devices {
			f.GPUs = append(f.GPUs, GPUInfo{Name: d.Name, UUID: d.ID, PowerLimitW: d.PowerLimitW})
		}
		f.Status.GPU = plural(len(gpus.devices), "NVIDIA GPU") + " through NVML"
	} else {
		f.Status.GPU = why
	}
	cpus, why := openRAPL(powercapRoot)
	if cpus != nil {
		sources = append(sources, cpus)
		f.Status.CPU = "CPU package energy through powercap (" + plural(len(cpus.devices), "package") + ")"
	} else {
		f.Status.CPU = why
	}
	if len(sources) > 0 {
		f.Source = sources
	}
	return f
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
