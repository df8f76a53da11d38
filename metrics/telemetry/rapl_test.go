package telemetry

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakePowercap writes a sysfs-like tree: one package zone with a
// subzone, and a zone of another driver that must be ignored.
func fakePowercap(t *testing.T, energy, maxRange uint64) string {
	t.Helper()
	root := t.TempDir()
	write := func(rel, content string) {
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("intel-rapl:0/name", "package-0\n")
	write("intel-rapl:0/energy_uj", fmt.Sprintf("%d\n", energy))
	write("intel-rapl:0/max_energy_range_uj", fmt.Sprintf("%d\n", maxRange))
	write("intel-rapl:0:0/name", "core\n")
	write("intel-rapl:0:0/energy_uj", "5\n")
	write("intel-rapl:0:0/max_energy_range_uj", "100\n")
	write("dtpm/name", "dtpm\n")
	return root
}

func setEnergy(t *testing.T, root string, uj uint64) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, "intel-rapl:0", "energy_uj"), []byte(fmt.Sprintf("%d\n", uj)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRAPLReadsThePackageAndUnwraps(t *testing.T) {
	root := fakePowercap(t, 262_000_000_000, 262_143_328_850)
	src, why := openRAPL(root)
	if src == nil {
		t.Fatal(why)
	}
	if d := src.Devices(); len(d) != 1 || d[0].Name != "CPU package-0" || d[0].Kind != KindCPU || !d[0].HasCounter {
		t.Fatalf("devices %+v", d)
	}
	first, _ := src.Read(0, false)
	setEnergy(t, root, 1_000_000) // wrapped past max_energy_range_uj
	second, err := src.Read(0, false)
	if err != nil {
		t.Fatal(err)
	}
	// 262,143,328,850 - 262,000,000,000 + 1,000,000 µJ = 144,328,850 µJ.
	if got := second.EnergyMJ - first.EnergyMJ; math.Abs(got-144_328.850) > 1e-3 {
		t.Errorf("rise across the wrap %.3f mJ, want 144328.850", got)
	}
}

func TestRAPLAbsentOrUnreadableSaysWhy(t *testing.T) {
	if _, why := openRAPL(filepath.Join(t.TempDir(), "none")); !strings.Contains(why, "no CPU package energy") {
		t.Errorf("missing root: %q", why)
	}
	root := fakePowercap(t, 10, 100)
	setEnergy(t, root, 0)
	if err := os.WriteFile(filepath.Join(root, "intel-rapl:0", "energy_uj"), []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, why := openRAPL(root); !strings.Contains(why, `"garbage" is not a microjoule count`) || !strings.Contains(why, "energy_uj") {
		t.Errorf("bad counter: %q", why)
	}
}

func FuzzParseMicrojoules(f *testing.F) {
	for _, seed := range []string{"0\n", "262143328850\n", "18446744073709551615", "-1\n", " 12 \n", "1e6", "", "\x00"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := parseMicrojoules(data)
		if err != nil {
			return
		}
		// Whatever parses is a plain decimal number, and that number.
		text := strings.TrimSpace(string(data))
		if strings.Trim(text, "0123456789") != "" || strings.TrimLeft(text, "0") != strings.TrimLeft(fmt.Sprint(v), "0") {
			t.Errorf("%q parsed as %d", data, v)
		}
	})
}
