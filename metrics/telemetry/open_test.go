package telemetry

import (
	"runtime"
	"strings"
	"testing"
)

func TestThisMachineOpensWithoutFailing(t *testing.T) {
	// The real sources: on a machine without a GPU (or a build without
	// NVML) it must say why; on a GPU machine it lists the GPUs. Either
	// way, no crash.
	f := Open(PowerAuto, DefaultInterval)
	if f.Source == nil && (f.Status.GPU == "" || f.Status.CPU == "") {
		t.Errorf("no source and no reason: %+v", f.Status)
	}
	if f.Source != nil {
		f.Source.Close()
	}
}

func TestPowerOffOpensNothing(t *testing.T) {
	f := open(PowerOff, finders{nvml: func() (*gpuSet, string) { t.Fatal("NVML opened with --power off"); return nil, "" }})
	if f.Source != nil || !strings.Contains(f.Status.GPU, "--power off") {
		t.Errorf("%+v", f)
	}
}

func TestCheckPowerNamesTheChoices(t *testing.T) {
	if err := CheckPower("nvidia"); err == nil || !strings.Contains(err.Error(), "auto, powermetrics, off") {
		t.Errorf("%v", err)
	}
	for _, ok := range []string{PowerAuto, PowerOff} {
		if err := CheckPower(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	if runtime.GOOS != "darwin" {
		if err := CheckPower(PowerPowermetrics); err == nil || !strings.Contains(err.Error(), "only on macOS") {
			t.Errorf("powermetrics on %s: %v", runtime.GOOS, err)
		}
	}
}

func TestEachOSSaysWhereCPUEnergyComesFrom(t *testing.T) {
	if noPowercapHere("linux") != "" {
		t.Error("Linux has powercap")
	}
	if why := noPowercapHere("darwin"); !strings.Contains(why, "sudo tokentop") {
		t.Errorf("darwin: %q", why)
	}
	if why := noPowercapHere("windows"); !strings.Contains(why, "windows") {
		t.Errorf("windows: %q", why)
	}
}
