package builtin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSpeedSummaryPairsEachRound holds speed-table.sh's summary to the
// median of the rounds' ratios: on a machine that drifts between rounds,
// the ratio of each engine's median pairs one engine's fast minute with
// the other's slow one.
func TestSpeedSummaryPairsEachRound(t *testing.T) {
	awk, err := exec.LookPath("awk")
	if err != nil {
		t.Skip("no awk on this machine")
	}
	// Round 1 finds the machine fast, round 2 slow: the engines' medians
	// (150 and 140) give 1.07, the rounds' ratios 1.05, 0.95 and 1.07.
	runs := "1\tF32\ttg128\t1\t200\t190\n" +
		"1\tF32\tpp64\t1\t600\t500\n" +
		"2\tF32\ttg128\t1\t100\t105\n" +
		"2\tF32\tpp64\t1\t400\t400\n" +
		"3\tF32\ttg128\t1\t150\t140\n" +
		"3\tF32\tpp64\t1\t450\t500\n" +
		"1\tQ8_0\ttg128\t2\t10\t10\n" +
		"2\tQ8_0\ttg128\t2\t40\t10\n" +
		"3\tQ8_0\ttg128\t2\t20\t10\n" +
		"4\tQ8_0\ttg128\t2\t30\t10\n"
	path := filepath.Join(t.TempDir(), "runs.tsv")
	if err := os.WriteFile(path, []byte(runs), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(awk, "-v", "shape=stories110M", "-v", "label= @ d512", "-f", "testdata/speed-summary.awk", path).CombinedOutput()
	if err != nil {
		t.Fatalf("awk: %v\n%s", err, out)
	}
	want := []string{
		"| stories110M | test | threads | tokentop tok/s | llama.cpp tok/s | tokentop ÷ llama.cpp | rounds |",
		"|---|---|---:|---:|---:|---:|---|",
		"| F32 | tg128 @ d512 | 1 | 150.0 | 140.0 | 1.05 | 0.95–1.07 |",
		// The label is tg128's alone, as ppN reads from an empty cache.
		"| F32 | pp64 | 1 | 450.0 | 500.0 | 1.00 | 0.90–1.20 |",
		// An even count: the mean of the middle two.
		"| Q8_0 | tg128 @ d512 | 2 | 25.0 | 10.0 | 2.50 | 1.00–4.00 |",
	}
	if got := strings.Split(strings.TrimSpace(string(out)), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("summary:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestMachineLineNamesTheCPUsClass holds the speed and memory tables' first
// line to what tells one CPU from another where a VM's model name is as
// bare as "AMD EPYC": its family and model, and which of the vector
// extensions the kernels choose by it has.
func TestMachineLineNamesTheCPUsClass(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash on this machine")
	}
	for _, c := range []struct{ cpuinfo, want string }{
		{"processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse avx f16c fma avx2 bmi2\n\nprocessor\t: 1\nmodel name\t: AMD EPYC\n",
			"CPU: AMD EPYC (family 25, model 1; avx2 fma f16c; no avx512f), "},
		{"cpu family\t: 6\nmodel\t\t: 143\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\nflags\t\t: avx2 fma f16c avx512f avx512bw avx512_vnni avx512_bf16 amx_bf16 amx_tile amx_int8\n",
			"CPU: Intel(R) Xeon(R) Platinum 8480+ (family 6, model 143; avx2 fma f16c avx512f avx512_vnni avx512_bf16 amx_tile), "},
		// An arm64 kernel names no model: the machine's architecture stands in.
		{"processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd\n", "CPU: "},
	} {
		path := filepath.Join(t.TempDir(), "cpuinfo")
		if err := os.WriteFile(path, []byte(c.cpuinfo), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bash, "-c", ". testdata/machine.sh && machine_line")
		cmd.Env = append(os.Environ(), "CPUINFO="+path)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), c.want) || strings.Contains(string(out), "(family") != strings.Contains(c.want, "(family") {
			t.Errorf("machine_line: %q (%v), want it to start %q", out, err, c.want)
		}
	}
}
