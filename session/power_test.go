package session

import (
	"math"
	"strings"
	"testing"
)

func TestPowerSamplesAreReadByNameAndBadRowsAreNamed(t *testing.T) {
	data := "t_ms,power_w,energy_mj,gpu_util_pct,temp_c,device\n" + // an older, shorter header
		"0.000,61.5,,40,55,GPU-1\n50.000,,1200.5,,,package-0\n100.000,abc,,,,GPU-1\n"
	samples, warnings, err := ParsePower("p.csv", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 2 || samples[0].PowerW != 61.5 || !math.IsNaN(samples[0].EnergyMJ) || samples[1].Device != "package-0" || samples[1].EnergyMJ != 1200.5 {
		t.Errorf("samples %+v", samples)
	}
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0], `p.csv:4: column power_w: "abc"`) {
		t.Errorf("warnings %q", warnings)
	}
}

func FuzzParsePower(f *testing.F) {
	f.Add([]byte(strings.Join(PowerHeader, ",") + "\n0.000,61.5,1000,40,55,GPU-1,1980,1024,,trial_start\n"))
	f.Add([]byte("t_ms,power_w,energy_mj,gpu_util_pct,temp_c,device\n1,,Inf,,,x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		samples, _, err := ParsePower("f.csv", data)
		if err != nil {
			return
		}
		for _, s := range samples {
			if math.IsInf(s.AtMs, 0) || math.IsNaN(s.AtMs) || math.IsInf(s.PowerW, 0) || math.IsInf(s.EnergyMJ, 0) {
				t.Fatalf("a non-finite value passed: %+v", s)
			}
		}
	})
}
