package telemetry

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// The power sources a run may ask for (--power).
const (
	// PowerAuto reads NVIDIA GPUs through NVML and CPU packages through
	// powercap where they exist, and on a Mac run as root, powermetrics.
	PowerAuto = "auto"
	// PowerPowermetrics reads Apple chip power through macOS powermetrics.
	PowerPowermetrics = "powermetrics"
	// PowerOff measures no power.
	PowerOff = "off"
)

// PowerChoices lists the --power values, for help and errors.
var PowerChoices = []string{PowerAuto, PowerPowermetrics, PowerOff}

// CheckPower says what is wrong with a --power choice on this machine,
// before anything is measured; nil when it can be used.
func CheckPower(choice string) error {
	switch choice {
	case PowerAuto, PowerOff:
		return nil
	case PowerPowermetrics:
		if why := powermetricsUsable(); why != "" {
			return fmt.Errorf("--power powermetrics: %s", why)
		}
		return nil
	}
	return fmt.Errorf("--power %q: use one of %s", choice, strings.Join(PowerChoices, ", "))
}

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

// GPUInfo is one GPU for the manifest's [environment].
type GPUInfo struct {
	Name        string  `toml:"name"`
	UUID        string  `toml:"uuid"`
	PowerLimitW float64 `toml:"power_limit_w"`
}

// gpuSet is what the NVIDIA side found: its source, described.
type gpuSet struct {
	Source
	Status             string
	GPUs               []GPUInfo
	Driver, CUDADriver string
}

// finders open each kind of source; tests replace them with fakes.
type finders struct {
	nvml         func() (*gpuSet, string)
	powercapRoot string
	// powermetrics is nil where it is not to be tried.
	powermetrics func() (*socSource, string)
}

// Open finds the power sources of this machine that choice (a checked
// --power value) allows. It never fails: what is missing is said in
// Status, and the run goes on without it.
func Open(choice string, interval time.Duration) Found {
	f := finders{nvml: findNVML, powercapRoot: PowercapRoot}
	mac := func() (*socSource, string) { return startPowermetrics(powermetricsCommand, interval, 5*time.Second) }
	switch {
	case choice == PowerPowermetrics:
		f.powermetrics = mac
	case choice == PowerAuto && runtime.GOOS == "darwin" && powermetricsUsable() == "":
		f.powermetrics = mac
	}
	return open(choice, f)
}

func open(choice string, f finders) Found {
	var found Found
	if choice == PowerOff {
		found.Status = Status{GPU: "not measured (--power off)", CPU: "not measured (--power off)"}
		return found
	}
	var sources Sources
	if f.powermetrics != nil {
		soc, why := f.powermetrics()
		if soc == nil {
			found.Status = Status{GPU: why, CPU: "no CPU energy either: powermetrics reads both"}
			return found
		}
		found.Source = soc
		found.Status = Status{GPU: "Apple GPU and ANE power through powermetrics (sampled)", CPU: "Apple CPU power through powermetrics (sampled)"}
		return found
	}
	if gpus, why := f.nvml(); gpus != nil {
		sources = append(sources, gpus.Source)
		found.GPUs, found.Driver, found.CUDADriver = gpus.GPUs, gpus.Driver, gpus.CUDADriver
		found.Status.GPU = gpus.Status
	} else {
		found.Status.GPU = why
	}
	if cpus, why := openRAPL(f.powercapRoot); cpus != nil {
		sources = append(sources, cpus)
		found.Status.CPU = "CPU package energy through powercap (" + plural(len(cpus.devices), "package") + ")"
	} else {
		found.Status.CPU = why
	}
	if why := noPowercapHere(runtime.GOOS); why != "" {
		found.Status.CPU = why
	}
	if len(sources) > 0 {
		found.Source = sources
	}
	return found
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// noPowercapHere says where CPU energy comes from on an OS without Linux
// powercap; "" on Linux.
func noPowercapHere(goos string) string {
	switch goos {
	case "linux":
		return ""
	case "darwin":
		return "no CPU energy: on macOS it comes from powermetrics, which needs root (sudo tokentop … --power powermetrics)"
	}
	return "no CPU energy: tokentop reads it through Linux powercap (RAPL) or macOS powermetrics, neither of which " + goos + " has"
}
