package telemetry

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"howett.net/plist"
)

// powermetrics is macOS's power sampler. Run as
//
//	powermetrics -f plist -i <ms> --samplers cpu_power,gpu_power
//
// it writes one XML property list per sample, each ended by a NUL byte.
// Its processor dictionary holds the average power of the CPU, GPU and
// Neural Engine over the sample's interval (cpu_power, gpu_power,
// ane_power, combined_power, in mW) and their energy in it (cpu_energy,
// gpu_energy, ane_energy, in mJ). It needs root.
const powermetricsCommand = "powermetrics"

// powermetricsMinInterval bounds its cadence: powermetrics reads every
// counter of the chip for each sample, on the machine being measured, so
// it is not run at the 50 ms the other sources take. (Its own cost could
// not be measured here; 100 ms is the bound, not a measured optimum.)
const powermetricsMinInterval = 100 * time.Millisecond

// The devices a powermetrics source reads, in order. The whole chip is
// what a trial's energy sums; its parts are shown and recorded beside it.
var powermetricsDevices = []Device{
	{Name: "Apple SoC (CPU+GPU+ANE)", ID: "combined", Kind: KindSoC},
	{Name: "Apple CPU", ID: "cpu", Kind: KindSoCPart},
	{Name: "Apple GPU", ID: "gpu", Kind: KindSoCPart},
	{Name: "Apple ANE", ID: "ane", Kind: KindSoCPart},
}

// socReading is one powermetrics sample: the average power in watts of
// each device above over the sample's interval (NaN when not reported).
type socReading struct {
	PowerW  [4]float64
	Elapsed time.Duration
}

// pmNumber is a figure powermetrics writes as <real> or <integer>.
type pmNumber float64

// UnmarshalPlist implements plist.Unmarshaler.
func (n *pmNumber) UnmarshalPlist(unmarshal func(any) error) error {
	var v any
	if err := unmarshal(&v); err != nil {
		return err
	}
	switch x := v.(type) {
	case float64:
		*n = pmNumber(x)
	case float32:
		*n = pmNumber(x)
	case uint64:
		*n = pmNumber(x)
	case int64:
		*n = pmNumber(x)
	default:
		return fmt.Errorf("%T is not a number", v)
	}
	return nil
}

// pmProcessor is the part of a sample tokentop reads. Pointers tell a
// missing key from a zero.
type pmProcessor struct {
	CPUPowerMW      *pmNumber `plist:"cpu_power"`
	GPUPowerMW      *pmNumber `plist:"gpu_power"`
	ANEPowerMW      *pmNumber `plist:"ane_power"`
	CombinedPowerMW *pmNumber `plist:"combined_power"`
	CPUEnergyMJ     *pmNumber `plist:"cpu_energy"`
	GPUEnergyMJ     *pmNumber `plist:"gpu_energy"`
	ANEEnergyMJ     *pmNumber `plist:"ane_energy"`
}

type pmSample struct {
	ElapsedNS *pmNumber    `plist:"elapsed_ns"`
	Processor *pmProcessor `plist:"processor"`
	// Some macOS versions report the GPU's figures in their own
	// dictionary rather than the processor's.
	GPU *struct {
		PowerMW  *pmNumber `plist:"gpu_power"`
		EnergyMJ *pmNumber `plist:"gpu_energy"`
	} `plist:"gpu"`
}

// parsePowermetrics reads one sample (one plist document). A part's power
// is its *_power figure, else its energy over the interval; the whole
// chip's is combined_power, else the sum of the parts.
func parsePowermetrics(doc []byte) (r socReading, err error) {
	// A parser fault on a malformed sample must cost that sample, not
	// the run.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("powermetrics sample is not a property list (%v)", p)
		}
	}()
	// powermetrics writes XML; refusing anything else keeps plist's
	// binary and text parsers away from outside input.
	if !bytes.HasPrefix(bytes.TrimSpace(doc), []byte("<")) {
		return r, errors.New("powermetrics sample is not an XML property list")
	}
	var s pmSample
	if _, err := plist.Unmarshal(doc, &s); err != nil {
		return r, fmt.Errorf("powermetrics sample is not a property list: %w", err)
	}
	if s.Processor == nil {
		return r, errors.New("powermetrics sample has no processor figures; it must run with --samplers cpu_power,gpu_power")
	}
	elapsed := math.NaN()
	if s.ElapsedNS != nil && *s.ElapsedNS > 0 && !math.IsInf(float64(*s.ElapsedNS), 0) {
		elapsed = float64(*s.ElapsedNS)
		r.Elapsed = time.Duration(min(elapsed, float64(math.MaxInt64)))
	}
	p := s.Processor
	gpuPower, gpuEnergy := p.GPUPowerMW, p.GPUEnergyMJ
	if s.GPU != nil && gpuPower == nil && gpuEnergy == nil {
		gpuPower, gpuEnergy = s.GPU.PowerMW, s.GPU.EnergyMJ
	}
	r.PowerW[1] = partWatts(p.CPUPowerMW, p.CPUEnergyMJ, elapsed)
	r.PowerW[2] = partWatts(gpuPower, gpuEnergy, elapsed)
	r.PowerW[3] = partWatts(p.ANEPowerMW, p.ANEEnergyMJ, elapsed)
	r.PowerW[0] = partWatts(p.CombinedPowerMW, nil, elapsed)
	if math.IsNaN(r.PowerW[0]) {
		sum, any := 0.0, false
		for _, w := range r.PowerW[1:] {
			if !math.IsNaN(w) {
				sum, any = sum+w, true
			}
		}
		if any {
			r.PowerW[0] = sum
		}
	}
	if math.IsNaN(r.PowerW[0]) {
		return r, errors.New("powermetrics sample has no power figures (no cpu_power, gpu_power or *_energy)")
	}
	return r, nil
}

// partWatts turns a figure in mW, or failing that an energy in mJ over
// elapsed ns, into watts; NaN when neither is there or it is not a power.
func partWatts(powerMW, energyMJ *pmNumber, elapsedNS float64) float64 {
	w := math.NaN()
	switch {
	case powerMW != nil:
		w = float64(*powerMW) / 1000
	case energyMJ != nil && !math.IsNaN(elapsedNS):
		w = float64(*energyMJ) / (elapsedNS / 1e6) // mJ per ms is W
	}
	if w < 0 || math.IsInf(w, 0) {
		return math.NaN()
	}
	return w
}

// splitNUL is a bufio.SplitFunc for powermetrics' NUL-ended samples.
func splitNUL(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(bytes.TrimSpace(data)) > 0 {
		return len(data), data, nil
	}
	if atEOF {
		return len(data), nil, nil
	}
	return 0, nil, nil
}

// socSource reads a running powermetrics: a reader goroutine keeps the
// latest sample, and Read hands it to the sampler. Each reading is the
// average over powermetrics' last interval, so energy from it is
// "sampled" quality and lags by up to one interval.
type socSource struct {
	cmd     *exec.Cmd
	devices []Device
	// stderr is written by exec's copier and read only after Wait, which
	// waits for that copier.
	stderr bytes.Buffer

	mu       sync.Mutex
	latest   socReading
	seen     bool  // the first sample came
	firstErr error // why the first sample did not parse
	ended    error // why the stream stopped; nil while it runs
	first    chan struct{}
	done     chan struct{}
	closed   bool
}

// powermetricsUsable says why powermetrics cannot be used here, or "".
func powermetricsUsable() string {
	if runtime.GOOS != "darwin" {
		return "powermetrics exists only on macOS"
	}
	if runtime.GOARCH != "arm64" {
		return "tokentop reads powermetrics' Apple Silicon figures only, and this Mac is Intel"
	}
	if _, err := exec.LookPath(powermetricsCommand); err != nil {
		return "powermetrics is not on PATH (it is in /usr/bin on macOS)"
	}
	if os.Geteuid() != 0 {
		return "powermetrics needs root: run sudo tokentop … --power powermetrics"
	}
	return ""
}

// startPowermetrics runs command (powermetrics, or a test's fake) at
// interval and waits up to wait for its first sample, so that a refusal
// (not root, an unknown sampler) is said at once in its own words.
func startPowermetrics(command string, interval, wait time.Duration) (*socSource, string) {
	interval = max(interval, powermetricsMinInterval)
	cmd := exec.Command(command, "-f", "plist", "-i", strconv.FormatInt(interval.Milliseconds(), 10), "--samplers", "cpu_power,gpu_power")
	s := &socSource{cmd: cmd, devices: slices.Clone(powermetricsDevices), first: make(chan struct{}), done: make(chan struct{})}
	for i := range s.devices {
		s.devices[i].PowerLimitW = math.NaN()
		s.latest.PowerW[i] = math.NaN()
	}
	cmd.Stderr = &s.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "no Apple SoC power (" + err.Error() + ")"
	}
	if err := cmd.Start(); err != nil {
		return nil, "no Apple SoC power (cannot start powermetrics: " + err.Error() + ")"
	}
	go s.read(out)
	select {
	case <-s.first:
		s.mu.Lock()
		why := s.firstErr
		s.mu.Unlock()
		if why != nil {
			// Output tokentop cannot read would leave the devices empty
			// all run: say so now instead.
			s.Close()
			return nil, "no Apple SoC power (" + why.Error() + ")"
		}
	case <-s.done:
		s.mu.Lock()
		why := s.ended.Error()
		s.mu.Unlock()
		return nil, "no Apple SoC power (" + why + ")"
	case <-time.After(wait):
		// Slow to start: go on; until its first sample the devices read
		// nothing and energy says so.
	}
	return s, ""
}

// read parses samples until the stream ends, then says why it ended.
func (s *socSource) read(out io.Reader) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 64<<10), 8<<20)
	sc.Split(splitNUL)
	var lastErr error
	for sc.Scan() {
		r, err := parsePowermetrics(sc.Bytes())
		s.mu.Lock()
		if !s.seen {
			s.seen, s.firstErr = true, err
			close(s.first)
		}
		if err == nil {
			s.latest = r
		}
		s.mu.Unlock()
		lastErr = err
	}
	if sc.Err() != nil {
		s.cmd.Process.Kill() // it would block writing what nobody reads
	}
	err := s.cmd.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	why := strings.TrimSpace(s.stderr.String())
	switch {
	case s.closed:
		why = "stopped"
	case why != "":
		why = "powermetrics: " + truncate(why, 200)
	case sc.Err() != nil:
		why = "powermetrics output: " + sc.Err().Error()
	case lastErr != nil:
		why = lastErr.Error() // the last sample did not parse
	case err != nil:
		why = "powermetrics ended: " + err.Error()
	default:
		why = "powermetrics ended"
	}
	s.ended = errors.New(why)
	close(s.done)
}

func (s *socSource) Devices() []Device { return s.devices }

// Read implements Source: the latest sample's average power. A
// powermetrics that ended loses every device.
func (s *socSource) Read(i int, _ bool) (Sample, error) {
	sample := NewSample(0, i)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended != nil {
		return sample, s.ended
	}
	sample.PowerW = s.latest.PowerW[i]
	return sample, nil
}

// Close stops powermetrics.
func (s *socSource) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	if s.cmd.Process != nil {
		s.cmd.Process.Kill()
	}
	<-s.done
	return nil
}
