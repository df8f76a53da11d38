package telemetry

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tokentop/tokentop/backends/untrusted"
)

// The DCGM fields read from an exporter, as dcgm-exporter names them in
// its default collector set.
const (
	dcgmPower   = "DCGM_FI_DEV_POWER_USAGE"              // W
	dcgmEnergy  = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" // mJ since boot, a counter
	dcgmTemp    = "DCGM_FI_DEV_GPU_TEMP"                 // °C
	dcgmUtil    = "DCGM_FI_DEV_GPU_UTIL"                 // %
	dcgmSMClock = "DCGM_FI_DEV_SM_CLOCK"                 // MHz
	dcgmFBUsed  = "DCGM_FI_DEV_FB_USED"                  // MiB
	dcgmLimit   = "DCGM_FI_DEV_POWER_MGMT_LIMIT"         // W, where the collector set has it
	// DCGM writes a field a GPU does not support as a "blank" value near
	// 2^63 (9223372036854775794 and the like).
	dcgmBlank = 9.2e18
)

// maxDCGMGPUs bounds the GPUs one exporter may add: a node has at most a
// few dozen, and an answer naming thousands is not an exporter's.
const maxDCGMGPUs = 64

// DCGMGPU is one GPU's readings in one scrape of a DCGM exporter. Fields
// the exporter did not give are NaN.
type DCGMGPU struct {
	// ID is its UUID label, else "gpu N" (and the Hostname where given);
	// Name its modelName, "GPU" where not given. Both are cleaned of
	// anything a terminal would act on.
	ID, Name                                           string
	PowerW, EnergyMJ, TempC, UtilPct, SMClockMHz, FBMB float64
	LimitW                                             float64
}

// ParseDCGM reads one scrape of a DCGM exporter (Prometheus text format,
// with the Prometheus project's parser): one DCGMGPU per GPU that has a
// power reading, in the order of their gpu labels.
func ParseDCGM(r io.Reader) ([]DCGMGPU, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("not Prometheus text format: %v", err)
	}
	byID := map[string]*DCGMGPU{}
	var order []string
	fields := []struct {
		name string
		dst  func(*DCGMGPU) *float64
	}{
		{dcgmPower, func(g *DCGMGPU) *float64 { return &g.PowerW }},
		{dcgmEnergy, func(g *DCGMGPU) *float64 { return &g.EnergyMJ }},
		{dcgmTemp, func(g *DCGMGPU) *float64 { return &g.TempC }},
		{dcgmUtil, func(g *DCGMGPU) *float64 { return &g.UtilPct }},
		{dcgmSMClock, func(g *DCGMGPU) *float64 { return &g.SMClockMHz }},
		{dcgmFBUsed, func(g *DCGMGPU) *float64 { return &g.FBMB }},
		{dcgmLimit, func(g *DCGMGPU) *float64 { return &g.LimitW }},
	}
	for _, f := range fields {
		family, ok := families[f.name]
		if !ok {
			continue
		}
		for _, m := range family.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			id := dcgmID(labels)
			g := byID[id]
			if g == nil {
				if f.name != dcgmPower {
					continue // a GPU is one with a power reading
				}
				if len(byID) == maxDCGMGPUs {
					return nil, fmt.Errorf("more than %d GPUs in one answer: not a DCGM exporter's", maxDCGMGPUs)
				}
				nan := math.NaN()
				g = &DCGMGPU{ID: id, Name: untrusted.Line(labels["modelName"]), PowerW: nan, EnergyMJ: nan, TempC: nan, UtilPct: nan, SMClockMHz: nan, FBMB: nan, LimitW: nan}
				if g.Name == "" {
					g.Name = "GPU"
				}
				byID[id] = g
				order = append(order, id)
			}
			var v float64
			switch family.GetType() {
			case dto.MetricType_COUNTER:
				v = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				v = m.GetGauge().GetValue()
			case dto.MetricType_UNTYPED:
				v = m.GetUntyped().GetValue()
			default:
				continue // a histogram or summary is no reading
			}
			if v < 0 || v >= dcgmBlank || math.IsNaN(v) || math.IsInf(v, 0) {
				v = math.NaN()
			}
			*f.dst(g) = v
		}
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("no %s series: not a DCGM exporter, or its collector set leaves power out", dcgmPower)
	}
	out := make([]DCGMGPU, len(order))
	for i, id := range order {
		out[i] = *byID[id]
	}
	return out, nil
}

// dcgmID names a GPU by its labels: its UUID where given (unique across
// machines), else its index on its host.
func dcgmID(labels map[string]string) string {
	if u := untrusted.Line(labels["UUID"]); u != "" {
		return u
	}
	id := "gpu " + untrusted.Line(labels["gpu"])
	if h := untrusted.Line(labels["Hostname"]); h != "" {
		id += " on " + h
	}
	return id
}

// DCGMSource reads a DCGM exporter's GPUs as power devices. It scrapes on
// its own goroutine every interval and Read hands out the latest scrape,
// so that every device of one exporter costs it one request a tick. An
// exporter that stops answering for dcgmLost loses its devices, as a GPU
// lost to NVML does.
type DCGMSource struct {
	url, shown string // shown: the URL as errors and files name it, a password redacted
	client     *http.Client
	interval   time.Duration
	devices    []Device

	mu      sync.Mutex
	latest  []Sample
	lastOK  time.Time
	lastErr error
	// lostAfter is how long the exporter may fail before its devices
	// are lost (dcgmLost).
	lostAfter time.Duration
	stop      chan struct{}
	done      chan struct{}
}

// dcgmLost is how long an exporter may fail before its devices are lost.
const dcgmLost = 5 * time.Second

// maxDCGMBody bounds one scrape: an exporter with every field of 8 GPUs
// writes well under 1 MiB.
const maxDCGMBody = 4 << 20

// DefaultDCGMInterval is how often an exporter is scraped unless the user
// says otherwise: its readings change only at its own collection interval
// (dcgm-exporter's -c, 30 s by default), which the run measures.
const DefaultDCGMInterval = 100 * time.Millisecond

// OpenDCGM reads the exporter at raw (a checked http(s) address) once,
// within timeout, to learn its GPUs, and starts scraping it every
// interval.
func OpenDCGM(raw string, interval, timeout time.Duration) (*DCGMSource, error) {
	s := &DCGMSource{url: raw, shown: untrusted.URL(raw), interval: interval, lostAfter: dcgmLost,
		client: &http.Client{Timeout: timeout, CheckRedirect: sameHost,
			Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}},
		stop: make(chan struct{}), done: make(chan struct{})}
	gpus, err := s.scrape()
	if err != nil {
		s.client.CloseIdleConnections()
		return nil, err
	}
	s.client.Timeout = max(interval, time.Second) // a tick's bound from here on
	for _, g := range gpus {
		s.devices = append(s.devices, Device{Name: g.Name, ID: g.ID, Kind: KindGPU, PowerLimitW: g.LimitW,
			HasCounter: !math.IsNaN(g.EnergyMJ), Source: "DCGM exporter " + s.shown})
	}
	s.keep(gpus)
	go s.loop()
	return s, nil
}

// sameHost lets a redirect through only to the same scheme, host and
// port: a server's or an exporter's answer does not send tokentop to
// read another's metrics as if they were its own.
func sameHost(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return fmt.Errorf("redirected to another host (%s); point tokentop at the metrics' own address", untrusted.URL(req.URL.String()))
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

func (s *DCGMSource) scrape() (gpus []DCGMGPU, err error) {
	err = getText(s.client, s.url, s.shown, maxDCGMBody, func(body io.Reader) (err error) {
		gpus, err = ParseDCGM(body)
		return err
	})
	return gpus, err
}

// keep stores a scrape's readings under the devices they belong to; a
// GPU the first scrape did not name is left out.
func (s *DCGMSource) keep(gpus []DCGMGPU) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.latest == nil {
		s.latest = make([]Sample, len(s.devices))
		for i := range s.latest {
			s.latest[i] = NewSample(0, i)
		}
	}
	for _, g := range gpus {
		i := slices.IndexFunc(s.devices, func(d Device) bool { return d.ID == g.ID })
		if i < 0 {
			continue
		}
		x := NewSample(0, i)
		x.PowerW, x.EnergyMJ, x.TempC, x.UtilPct, x.SMClockMHz, x.MemUsedMB = g.PowerW, g.EnergyMJ, g.TempC, g.UtilPct, g.SMClockMHz, g.FBMB*1.048576
		s.latest[i] = x
	}
	s.lastOK, s.lastErr = time.Now(), nil
}

func (s *DCGMSource) loop() {
	defer close(s.done)
	defer s.client.CloseIdleConnections()
	ticker := time.NewTicker(s.interval)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
		case <-s.stop:
			return
		}
		gpus, err := s.scrape()
		if err != nil {
			s.mu.Lock()
			s.lastErr = err
			s.mu.Unlock()
			continue
		}
		s.keep(gpus)
	}
}

// Devices implements Source.
func (s *DCGMSource) Devices() []Device { return s.devices }

// Read implements Source: the latest scrape's reading of GPU i, or an
// error once the exporter has failed for lostAfter. A boundary read is
// no different: the exporter's default set has no throttle reasons.
func (s *DCGMSource) Read(i int, _ bool) (Sample, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastErr != nil && time.Since(s.lastOK) > s.lostAfter {
		return Sample{}, fmt.Errorf("no good answer for %s: %v", s.lostAfter, s.lastErr)
	}
	return s.latest[i], nil
}

// Close implements Source: scraping stops.
func (s *DCGMSource) Close() error {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
	return nil
}

// DCGMStatus says what the exporters add to this machine's GPU status
// (local), for the manifest and the power panel.
func DCGMStatus(exporters []*DCGMSource, local string) string {
	gpus := 0
	for _, e := range exporters {
		gpus += len(e.devices)
	}
	return fmt.Sprintf("%s through %s; this machine: %s", plural(gpus, "remote GPU"), plural(len(exporters), "DCGM exporter"), local)
}
