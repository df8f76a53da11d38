package session

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ServerPoint is one common series' value (a tokentop: row of the server
// CSV) at t_ms on the scraper's clock: Server is its index in the
// manifest's [[server_metrics.servers]].
type ServerPoint struct {
	AtMs   float64
	Server int
	Metric string
	Value  float64
}

// ParseServerCSV reads the common series of a server metrics CSV by
// ParseTrials' rules (columns by name, a cut last line and bad rows
// skipped with warnings); the server's own series are left in the file.
func ParseServerCSV(name string, data []byte) ([]ServerPoint, []string, error) {
	var points []ServerPoint
	warnings, err := parseRows(name, data, csvKind{"server metrics", ServerHeader, len(ServerHeader), "this value is left out"}, func(field func(int) string) error {
		at, err := parseMeasure(field(0), ServerHeader[0])
		if err != nil || math.IsNaN(at) {
			return fmt.Errorf("column t_ms: %q is not a time in ms", field(0))
		}
		server, err := strconv.Atoi(field(1))
		if err != nil || server < 0 {
			return fmt.Errorf("column server: %q is not a server's index", field(1))
		}
		value, err := strconv.ParseFloat(field(4), 64)
		if err != nil || math.IsInf(value, 0) {
			return fmt.Errorf("column value: %q is not a number", field(4))
		}
		if metric := field(2); strings.HasPrefix(metric, "tokentop:") && !math.IsNaN(value) {
			points = append(points, ServerPoint{AtMs: at, Server: server, Metric: metric, Value: value})
		}
		return nil
	})
	return points, warnings, err
}

// LoadServerCSV reads the server metrics CSV a session's manifest names
// (a killed run's too, whose manifest never said how scraping went); nil
// where there is none, or it holds no common series.
func LoadServerCSV(s *Session) ([]ServerPoint, []string, error) {
	info := s.Manifest.ServerMetrics
	if info == nil || info.File == "" {
		return nil, nil, nil
	}
	path := filepath.Join(filepath.Dir(s.Path), filepath.Base(info.File))
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return ParseServerCSV(path, data)
}
