package telemetry

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// recordedPowermetrics is powermetrics' plist output on an Apple M2, as
// its documented format writes it: three NUL-ended samples, the last in
// the older layout (GPU figures in their own dictionary, no
// combined_power).
const recordedPowermetrics = "testdata/powermetrics-m2.plist"

// TestMain lets this test binary stand in for powermetrics: with
// FAKE_POWERMETRICS set it replays the recorded samples as the real
// command writes them, then fails or waits to be killed as asked.
func TestMain(m *testing.M) {
	if mode := os.Getenv("FAKE_POWERMETRICS"); mode != "" {
		os.Exit(fakePowermetrics(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

func fakePowermetrics(mode string, args []string) int {
	if strings.Join(args, " ") != "-f plist -i 100 --samplers cpu_power,gpu_power" {
		fmt.Fprintf(os.Stderr, "powermetrics: unexpected arguments %q\n", args)
		return 64
	}
	if mode == "not-root" {
		fmt.Fprintln(os.Stderr, "powermetrics must be invoked as the superuser")
		return 1
	}
	if mode == "unreadable" {
		// Figures of another kind (an Intel Mac's package watts), then
		// running on as powermetrics does.
		os.Stdout.Write([]byte(`<?xml version="1.0"?><plist version="1.0"><dict><key>processor</key><dict><key>package_watts</key><real>9.5</real></dict></dict></plist>` + "\x00"))
		time.Sleep(time.Minute)
		return 0
	}
	data, err := os.ReadFile(recordedPowermetrics)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, doc := range bytes.SplitAfter(data, []byte{0}) {
		os.Stdout.Write(doc)
		time.Sleep(20 * time.Millisecond)
	}
	if mode == "garbage" {
		os.Stdout.Write([]byte("this is not a plist\x00"))
		return 0
	}
	time.Sleep(time.Minute) // a running powermetrics, until killed
	return 0
}

func TestParseRecordedPowermetrics(t *testing.T) {
	data, err := os.ReadFile(recordedPowermetrics)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	sc.Split(splitNUL)
	var got []socReading
	for sc.Scan() {
		r, err := parsePowermetrics(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	// combined, CPU, GPU, ANE in W: the recorded mW figures / 1000; the
	// third sample's chip power is the sum of its parts.
	want := [][4]float64{{22.3379, 5.2882, 17.0497, 0}, {22.972, 4.9696, 18.0024, 0}, {6.0863 + 16.4358 + 0.1195, 6.0863, 16.4358, 0.1195}}
	if len(got) != len(want) {
		t.Fatalf("%d samples, want %d", len(got), len(want))
	}
	for i, r := range got {
		for d := range want[i] {
			if math.Abs(r.PowerW[d]-want[i][d]) > 1e-9 {
				t.Errorf("sample %d %s: %.4f W, want %.4f", i, powermetricsDevices[d].Name, r.PowerW[d], want[i][d])
			}
		}
	}
	if got[0].Elapsed != 100412*time.Microsecond {
		t.Errorf("elapsed %v", got[0].Elapsed)
	}
}

func TestPowermetricsPowerFromEnergyWhenNoPowerFigure(t *testing.T) {
	doc := `<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict>
<key>elapsed_ns</key><integer>200000000</integer>
<key>processor</key><dict><key>cpu_energy</key><integer>1000</integer><key>gpu_energy</key><integer>500</integer></dict>
</dict></plist>`
	r, err := parsePowermetrics([]byte(doc))
	// 1000 mJ over 200 ms is 5 W; 500 mJ is 2.5 W; no ANE figure at all.
	if err != nil || r.PowerW[1] != 5 || r.PowerW[2] != 2.5 || !math.IsNaN(r.PowerW[3]) || r.PowerW[0] != 7.5 {
		t.Errorf("%+v %v", r, err)
	}
	for _, bad := range []string{"", "not a plist", `<plist version="1.0"><dict><key>elapsed_ns</key><integer>1</integer></dict></plist>`,
		`<plist version="1.0"><dict><key>processor</key><dict><key>cpu_power</key><string>x</string></dict></dict></plist>`} {
		if _, err := parsePowermetrics([]byte(bad)); err == nil || !strings.Contains(err.Error(), "powermetrics sample") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func FuzzParsePowermetrics(f *testing.F) {
	// Compact seeds: the fuzzer minimises every new input, which for a
	// 3 KB recorded sample takes its whole minute.
	f.Add([]byte(`<?xml version="1.0"?><plist version="1.0"><dict><key>elapsed_ns</key><integer>100412000</integer>
<key>processor</key><dict><key>cpu_energy</key><integer>531</integer><key>cpu_power</key><real>5288.2</real>
<key>gpu_power</key><real>17049.7</real><key>combined_power</key><real>22337.9</real></dict>
<key>gpu</key><dict><key>gpu_energy</key><integer>1712</integer></dict></dict></plist>`))
	f.Add([]byte(`<plist><dict><key>processor</key><dict><key>cpu_power</key><real>-4</real></dict></dict></plist>`))
	f.Add([]byte(`{processor = {cpu_energy = 1;}; elapsed_ns = 0;}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		r, err := parsePowermetrics(doc)
		if err != nil {
			return
		}
		// Whatever it reads, a power is a finite non-negative number or
		// unknown, and the chip's is known.
		for d, w := range r.PowerW {
			if w < 0 || math.IsInf(w, 0) || (d == 0 && math.IsNaN(w)) {
				t.Errorf("%q gave %v W for device %d", doc, w, d)
			}
		}
	})
}

// fakeCommand runs this test binary as powermetrics in mode.
func fakeCommand(t *testing.T, mode string) string {
	t.Helper()
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("no subprocesses here")
	}
	t.Setenv("FAKE_POWERMETRICS", mode)
	return os.Args[0]
}

func TestPowermetricsSourceReadsTheLatestSample(t *testing.T) {
	src, why := startPowermetrics(fakeCommand(t, "run"), 50*time.Millisecond, 10*time.Second)
	if src == nil {
		t.Fatal(why)
	}
	if d := src.Devices(); len(d) != 4 || d[0].Kind != KindSoC || d[1].Kind != KindSoCPart || d[0].HasCounter {
		t.Errorf("devices %+v", d)
	}
	// The replay ends on the third sample; the source keeps it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := src.Read(3, false)
		if err != nil {
			t.Fatal(err)
		}
		if s.PowerW == 0.1195 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ANE power %v: the third sample never arrived", s.PowerW)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := src.Close(); err != nil {
		t.Error(err)
	}
	if _, err := src.Read(0, false); err == nil {
		t.Error("a stopped powermetrics still reads")
	}
}

func TestPowermetricsThatRefusesSaysWhy(t *testing.T) {
	src, why := startPowermetrics(fakeCommand(t, "not-root"), 100*time.Millisecond, 10*time.Second)
	if src != nil || !strings.Contains(why, "powermetrics must be invoked as the superuser") {
		t.Errorf("source %v, why %q", src, why)
	}
	// Output it cannot read is said at the start, not left as an empty
	// panel for the whole run.
	src, why = startPowermetrics(fakeCommand(t, "unreadable"), 100*time.Millisecond, 10*time.Second)
	if src != nil || !strings.Contains(why, "no power figures") {
		t.Errorf("source %v, why %q", src, why)
	}
	src, why = startPowermetrics("/nonexistent/powermetrics", 100*time.Millisecond, time.Second)
	if src != nil || !strings.Contains(why, "cannot start powermetrics") {
		t.Errorf("source %v, why %q", src, why)
	}
}

func TestPowermetricsThatDiesLosesItsDevices(t *testing.T) {
	src, why := startPowermetrics(fakeCommand(t, "garbage"), 100*time.Millisecond, 10*time.Second)
	if src == nil {
		t.Fatal(why)
	}
	defer src.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := src.Read(0, false)
		if err != nil {
			if !strings.Contains(err.Error(), "not an XML property list") {
				t.Errorf("why it ended: %v", err)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("a powermetrics that ended is still read")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestOpenWithPowermetricsUsesOnlyIt(t *testing.T) {
	f := open(PowerPowermetrics, finders{
		nvml: func() (*gpuSet, string) { t.Fatal("NVML opened beside powermetrics"); return nil, "" },
		powermetrics: func() (*socSource, string) {
			return startPowermetrics(fakeCommand(t, "run"), 100*time.Millisecond, 10*time.Second)
		},
	})
	if f.Source == nil || len(f.Source.Devices()) != 4 || !strings.Contains(f.Status.GPU, "powermetrics") {
		t.Fatalf("%+v", f)
	}
	f.Source.Close()
	f = open(PowerPowermetrics, finders{powermetrics: func() (*socSource, string) {
		return startPowermetrics(fakeCommand(t, "not-root"), 100*time.Millisecond, 10*time.Second)
	}})
	if f.Source != nil || !strings.Contains(f.Status.GPU, "superuser") || !strings.Contains(f.Status.CPU, "either") {
		t.Errorf("%+v", f)
	}
}

// BenchmarkParsePowermetrics: one recorded 3 KB sample, parsed every
// powermetrics interval (100 ms at the least).
func BenchmarkParsePowermetrics(b *testing.B) {
	data, err := os.ReadFile(recordedPowermetrics)
	if err != nil {
		b.Fatal(err)
	}
	doc := bytes.Split(data, []byte{0})[0]
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parsePowermetrics(doc); err != nil {
			b.Fatal(err)
		}
	}
}
