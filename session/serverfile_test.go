package session

import (
	"math"
	"strings"
	"testing"
)

// The server CSV's common series are read by name; the server's own
// series stay in the file, and a bad row is named and left out.
func TestServerCSVGivesTheCommonSeries(t *testing.T) {
	data := strings.Join(ServerHeader, ",") + "\n" +
		"0.500,0,llamacpp:requests_processing,,2\n" +
		"0.500,0,tokentop:requests_running,,2\n" +
		"1000.250,0,tokentop:kv_cache_usage,,0.25\n" +
		"1000.250,x,tokentop:requests_running,,1\n"
	points, warnings, err := ParseServerCSV("s.csv", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != 2 || points[0] != (ServerPoint{AtMs: 0.5, Server: 0, Metric: "tokentop:requests_running", Value: 2}) || points[1].Value != 0.25 {
		t.Errorf("points %+v", points)
	}
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0], `s.csv:5: column server: "x"`) {
		t.Errorf("warnings %q", warnings)
	}
}

func FuzzParseServerCSV(f *testing.F) {
	f.Add([]byte(strings.Join(ServerHeader, ",") + "\n0.000,0,tokentop:requests_running,,2\n"))
	f.Add([]byte("t_ms,server,metric,labels,value\n1,0,tokentop:x,\"a=\"\"b\"\"\",NaN\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		points, _, err := ParseServerCSV("f.csv", data)
		if err != nil {
			return
		}
		for _, p := range points {
			if math.IsNaN(p.AtMs) || math.IsInf(p.AtMs, 0) || math.IsNaN(p.Value) || math.IsInf(p.Value, 0) || p.Server < 0 || !strings.HasPrefix(p.Metric, "tokentop:") {
				t.Fatalf("point %+v", p)
			}
		}
	})
}
