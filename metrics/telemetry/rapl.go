package telemetry

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// PowercapRoot is where Linux exposes RAPL energy counters.
const PowercapRoot = "/sys/class/powercap"

// packageZone matches a CPU package's top-level RAPL zone (its
// subzones, intel-rapl:0:0 and so on, are parts of the package).
var packageZone = regexp.MustCompile(`^intel-rapl:\d+$`)

// raplSource reads CPU package energy counters: what the built-in engine
// and llama.cpp on CPU actually burn. The counters are microjoules that
// wrap at max_energy_range_uj; reads are unwrapped into one rising total.
type raplSource struct {
	zones   []string // zone directories
	devices []Device
	ranges  []uint64 // max_energy_range_uj per zone
	last    []uint64 // last raw reading
	wraps   []uint64
	read    []bool
}

// openRAPL finds the package zones under root; none, or none readable,
// is said in words.
func openRAPL(root string) (*raplSource, string) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, "no CPU package energy (no " + root + ")"
	}
	var names []string
	for _, e := range entries {
		if packageZone.MatchString(e.Name()) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return nil, "no CPU package energy (no RAPL zone under " + root + ")"
	}
	s := &raplSource{}
	var problems []string
	for _, name := range names {
		dir := filepath.Join(root, name)
		rng, err := readMicrojoules(filepath.Join(dir, "max_energy_range_uj"))
		if err == nil {
			_, err = readMicrojoules(filepath.Join(dir, "energy_uj"))
		}
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		label := name
		if data, err := os.ReadFile(filepath.Join(dir, "name")); err == nil {
			label = strings.TrimSpace(string(data))
		}
		s.zones = append(s.zones, dir)
		s.ranges = append(s.ranges, rng)
		s.devices = append(s.devices, Device{Name: "CPU " + label, ID: name, Kind: KindCPU, PowerLimitW: math.NaN(), HasCounter: true})
	}
	if len(s.zones) == 0 {
		return nil, "no CPU package energy (" + problems[0] + ")"
	}
	s.last, s.wraps, s.read = make([]uint64, len(s.zones)), make([]uint64, len(s.zones)), make([]bool, len(s.zones))
	return s, ""
}

func (s *raplSource) Devices() []Device { return s.devices }

// Read implements Source: the package's energy counter, unwrapped.
func (s *raplSource) Read(i int, _ bool) (Sample, error) {
	sample := NewSample(0, i)
	raw, err := readMicrojoules(filepath.Join(s.zones[i], "energy_uj"))
	if err != nil {
		return sample, err
	}
	if s.read[i] && raw < s.last[i] {
		s.wraps[i]++
	}
	s.last[i], s.read[i] = raw, true
	sample.EnergyMJ = (float64(raw) + float64(s.wraps[i])*float64(s.ranges[i])) / 1000
	return sample, nil
}

func (s *raplSource) Close() error { return nil }

// readMicrojoules reads one powercap counter file.
func readMicrojoules(path string) (uint64, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrPermission) {
		return 0, fmt.Errorf("%s is readable by root only; run as root or grant read access to see CPU package energy", path)
	}
	if err != nil {
		return 0, err
	}
	v, err := parseMicrojoules(data)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// parseMicrojoules parses a powercap counter: one unsigned decimal
// number and a newline.
func parseMicrojoules(data []byte) (uint64, error) {
	text := strings.TrimSpace(string(data))
	v, err := strconv.ParseUint(text, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a microjoule count", truncate(text, 40))
	}
	return v, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
