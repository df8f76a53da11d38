package session

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
)

// PowerSample is one row of the power CSV: a device's reading at t_ms on
// the sampler's clock; NaN where the device gave none.
type PowerSample struct {
	AtMs, PowerW, EnergyMJ float64
	// PowerInstantW is the instantaneous power where the device read it
	// apart from PowerW (a 1-second average on newer NVIDIA GPUs); NaN
	// where not, and in files from before the column.
	PowerInstantW float64
	Device        string
}

// ChartW is the power a chart draws: the instantaneous reading where
// there is one, else PowerW.
func (s PowerSample) ChartW() float64 {
	if !math.IsNaN(s.PowerInstantW) {
		return s.PowerInstantW
	}
	return s.PowerW
}

// ParsePower reads a power CSV by ParseTrials' rules (columns by name, a
// cut last line and bad rows skipped with warnings).
func ParsePower(name string, data []byte) ([]PowerSample, []string, error) {
	var samples []PowerSample
	warnings, err := parseRows(name, data, csvKind{"power", PowerHeader, 6, "this sample is left out"}, func(field func(int) string) error {
		at, err := parseMeasure(field(0), PowerHeader[0])
		if err != nil || math.IsNaN(at) {
			return fmt.Errorf("column t_ms: %q is not a time in ms", field(0))
		}
		s := PowerSample{AtMs: at, Device: field(5)}
		for _, col := range []struct {
			index int
			dst   *float64
		}{{1, &s.PowerW}, {2, &s.EnergyMJ}, {10, &s.PowerInstantW}} {
			if *col.dst, err = parseMeasure(field(col.index), PowerHeader[col.index]); err != nil {
				return fmt.Errorf("column %s: %q: %w", PowerHeader[col.index], field(col.index), err)
			}
		}
		samples = append(samples, s)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return samples, warnings, nil
}

// LoadPower reads the power CSV a session's manifest names; a session
// without a power source has none, and gives nil.
func LoadPower(s *Session) ([]PowerSample, []string, error) {
	if s.Manifest.Power == nil || s.Manifest.Power.PowerFile == "" {
		return nil, nil, nil
	}
	path := filepath.Join(filepath.Dir(s.Path), filepath.Base(s.Manifest.Power.PowerFile))
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return ParsePower(path, data)
}
