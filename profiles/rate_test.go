package profiles

import (
	"strings"
	"testing"
)

func TestSLOAndGoodputFlagsRead(t *testing.T) {
	slo, err := ParseSLO("ttft_ms=500, itl_ms=50,e2e_ms=2000")
	if err != nil || slo.TTFTMs != 500 || slo.ITLMs != 50 || slo.E2EMs != 2000 || slo.Goodput != DefaultGoodput {
		t.Errorf("%+v, %v", slo, err)
	}
	for flag, want := range map[string]string{"ttft=5": `"ttft" is not a bound`, "ttft_ms=-1": `"ttft_ms=-1" is not a bound`, "ttft_ms": "is not a bound"} {
		if _, err := ParseSLO(flag); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--slo %s: %v; want %q", flag, err, want)
		}
	}
	for flag, want := range map[string]float64{"90%": 0.9, "0.95": 0.95, "100%": 1} {
		if v, err := ParseGoodput(flag); err != nil || v != want {
			t.Errorf("--goodput %s: %v, %v", flag, v, err)
		}
	}
	for _, flag := range []string{"0", "120%", "x", "-5%"} {
		if _, err := ParseGoodput(flag); err == nil {
			t.Errorf("--goodput %s was taken", flag)
		}
	}
	// Rates read as numbers or lists, and rise.
	if r, err := ParseRates("1, 2.5,8"); err != nil || len(r) != 3 || r[1] != 2.5 {
		t.Errorf("%v %v", r, err)
	}
	if _, err := ParseRates("4,2"); err == nil || !strings.Contains(err.Error(), "rates must rise") {
		t.Errorf("falling rates: %v", err)
	}
}
