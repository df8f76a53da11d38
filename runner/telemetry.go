package runner

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tokentop/tokentop/metrics/telemetry"
	"github.com/tokentop/tokentop/session"
)

// TelemetryOptions configure what a run samples besides time.
type TelemetryOptions struct {
	Interval     time.Duration // power and memory sampling cadence
	IdleBaseline time.Duration // idle power window before the first trial; 0 skips it
	ServerPID    int           // the server process for peak RSS; 0 finds a local one
	Power        string        // which power sources (a checked --power value)
	// GPUMetrics are DCGM exporters whose GPUs the trials of their
	// targets sum, in place of this machine's; GPUMetricsInterval is
	// how often each is scraped.
	GPUMetrics         []GPUMetricsSource
	GPUMetricsInterval time.Duration
	// Open finds the power sources: telemetry.Open unless a test passes
	// fake devices.
	Open func() telemetry.Found
}

// Default telemetry settings.
const (
	DefaultIdleBaseline = 3 * time.Second
	minPowerInterval    = 10 * time.Millisecond
)

// monitor runs the telemetry of one run: the power sampler, the idle
// baseline, per-trial energy and memory.
type monitor struct {
	found   telemetry.Found
	sampler *telemetry.Sampler // nil without a power source
	info    session.PowerInfo
	events  chan<- Event

	mu      sync.Mutex
	csv     *session.PowerWriter
	csvErr  error              // the first failed write; the run goes on
	pending []telemetry.Sample // taken before the power CSV existed (the idle window)
	stopped sync.Once

	baselines []telemetry.Baseline // per device
	// energyOf are, per target, the devices its trials' energy sums;
	// summed are all of them, whose idle drift bounds the run's.
	energyOf [][]int
	summed   []int
	// memory and rssProcess are per target: whose memory its arms'
	// peak_rss_mb is (targets in one process share one watch).
	memory     []*telemetry.MemoryWatch
	rssProcess []string
}

// dcgmFirstAnswer bounds the wait for a DCGM exporter's first answer,
// which names its GPUs.
const dcgmFirstAnswer = 5 * time.Second

// startMonitor finds the power sources and starts sampling them. A DCGM
// exporter the user named that does not answer is an error: the run
// would otherwise measure nothing it was asked to.
func startMonitor(plan *Plan, events chan<- Event) (*monitor, error) {
	opts := plan.Telemetry
	var exporters []*telemetry.DCGMSource
	for _, g := range opts.GPUMetrics {
		src, err := telemetry.OpenDCGM(g.URL, opts.GPUMetricsInterval, dcgmFirstAnswer)
		if err != nil {
			for _, e := range exporters {
				e.Close()
			}
			return nil, fmt.Errorf("--gpu-metrics: %w", err)
		}
		exporters = append(exporters, src)
	}
	open := opts.Open
	if open == nil {
		open = func() telemetry.Found { return telemetry.Open(opts.Power, opts.Interval) }
	}
	m := &monitor{found: open(), events: events}
	if len(exporters) > 0 {
		m.withExporters(exporters)
	}
	m.info = session.PowerInfo{GPU: m.found.Status.GPU, CPU: m.found.Status.CPU}
	if src := m.found.Source; src != nil {
		devices := src.Devices()
		m.info.Devices, m.info.IntervalMs = devices, float64(opts.Interval)/float64(time.Millisecond)
		m.baselines = make([]telemetry.Baseline, len(devices))
		for i := range m.baselines {
			m.baselines[i] = telemetry.Baseline{MeanW: math.NaN(), StdW: math.NaN()}
		}
		exported := make([]int, len(exporters))
		for k, e := range exporters {
			exported[k] = len(e.Devices())
		}
		m.energyOf, m.summed, m.info.EnergySource = energyDevicesOf(plan, devices, exported)
		m.sampler = telemetry.StartSampler(src, opts.Interval, m.sink)
		started := m.sampler.Started().UTC()
		m.info.SamplerStart = &started
	}
	m.memory, m.rssProcess = watchMemory(plan)
	m.info.RSSProcess = m.rssProcess[0]
	if len(plan.Targets) > 1 {
		m.info.RSSProcess = "per target: see rss_process under each [[targets]]"
	}
	if len(plan.Targets) == 1 && m.memory[0] != nil {
		if mb := m.memory[0].ResidentMB(); mb > 0 {
			m.info.RSSAtStartMB = mb
		}
	}
	return m, nil
}

// withExporters adds the DCGM exporters' GPUs after this machine's
// devices, and says so.
func (m *monitor) withExporters(exporters []*telemetry.DCGMSource) {
	sources := telemetry.Sources{}
	if m.found.Source != nil {
		sources = append(sources, m.found.Source)
	}
	for _, e := range exporters {
		sources = append(sources, e)
	}
	m.found.Source = sources
	m.found.Status.GPU = telemetry.DCGMStatus(exporters, m.found.Status.GPU)
}

// energyDevicesOf picks, per target, what its trials' energy sums: the
// GPUs of the DCGM exporters serving it where exporters were named
// (exported: how many GPUs each has; they are the last devices), else
// this machine's energyDevices for every target. summed are all the
// devices picked.
func energyDevicesOf(plan *Plan, devices []telemetry.Device, exported []int) (perTarget [][]int, summed []int, kind string) {
	perTarget = make([][]int, len(plan.Targets))
	if len(exported) == 0 {
		summed, kind = energyDevices(devices)
		for t := range perTarget {
			perTarget[t] = summed
		}
		return perTarget, summed, kind
	}
	first := len(devices)
	for _, n := range exported {
		first -= n
	}
	for k, n := range exported {
		for range n {
			for _, t := range plan.Telemetry.GPUMetrics[k].Targets {
				perTarget[t] = append(perTarget[t], first)
			}
			summed = append(summed, first)
			first++
		}
	}
	return perTarget, summed, string(telemetry.KindGPU)
}

// energyDevices picks what a trial's energy columns sum: the NVIDIA GPUs
// where there are any (that is where inference runs when they exist),
// else the whole Apple chip, else the CPU packages.
func energyDevices(devices []telemetry.Device) ([]int, string) {
	for _, kind := range []telemetry.Kind{telemetry.KindGPU, telemetry.KindSoC, telemetry.KindCPU} {
		var picked []int
		for i, d := range devices {
			if d.Kind == kind {
				picked = append(picked, i)
			}
		}
		if len(picked) > 0 {
			return picked, string(kind)
		}
	}
	return nil, ""
}

// watchMemory picks, per target, whose peak RSS its arms' trials record:
// the given server, this process for an in-process engine, or the local
// server listening on the target's port. Targets in one process share a
// watch, and the words say what the figure covers.
func watchMemory(plan *Plan) ([]*telemetry.MemoryWatch, []string) {
	opts := plan.Telemetry
	watches := make([]*telemetry.MemoryWatch, len(plan.Targets))
	words := make([]string, len(plan.Targets))
	byPID := map[int]int{} // pid -> the first target watching it
	var inProcess []string
	for _, t := range plan.Targets {
		if t.Kind.InProcess {
			inProcess = append(inProcess, t.Name)
		}
	}
	for i, t := range plan.Targets {
		pid := opts.ServerPID
		var find func() (int, error) // the server again after a restart
		if t.Kind.InProcess {
			pid = 0
		} else if pid == 0 {
			port, local := loopbackPort(t.Target.URL)
			if !local {
				words[i] = "none: the server is not on this machine (pass --server-pid for a local one)"
				continue
			}
			found, err := telemetry.FindListener(port)
			if err != nil {
				words[i] = "none: " + err.Error() + " (pass --server-pid)"
				continue
			}
			pid, find = found, func() (int, error) { return telemetry.FindListener(port) }
		}
		if first, ok := byPID[pid]; ok {
			watches[i], words[i] = watches[first], words[first]
			continue
		}
		var w *telemetry.MemoryWatch
		var err error
		if pid == 0 {
			w, err = telemetry.WatchMemory(0, opts.Interval)
		} else {
			w, err = telemetry.WatchServerMemory(pid, opts.Interval, find)
		}
		if err != nil {
			words[i] = "none: " + err.Error()
			continue
		}
		byPID[pid], watches[i], words[i] = i, w, w.Process
		if t.Kind.InProcess && len(inProcess) > 1 {
			words[i] += fmt.Sprintf(": one process holds the %d in-process engines (%s), so the figure covers all of their models, not this target's alone", len(inProcess), strings.Join(inProcess, ", "))
		}
	}
	return watches, words
}

// loopbackPort returns the port of a URL on this machine.
func loopbackPort(raw string) (int, bool) {
	u, err := url.Parse(raw)
	if err != nil {
		return 0, false
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	ip := net.ParseIP(host)
	if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return 0, false
	}
	n, err := strconv.Atoi(port)
	return n, err == nil
}

// sink receives every sample on the sampler's goroutine: into the power
// CSV (or held until it exists) and, without ever blocking, to the UI.
func (m *monitor) sink(s telemetry.Sample) {
	m.mu.Lock()
	if m.csv != nil {
		if err := m.csv.Append(s); err != nil && m.csvErr == nil {
			m.csvErr = err
		}
	} else {
		m.pending = append(m.pending, s)
	}
	m.mu.Unlock()
	select {
	case m.events <- PowerSample{Sample: s}:
	default: // the front end is behind; the CSV has the sample
	}
}

// measureIdle samples with nothing running for d, before the first trial.
func (m *monitor) measureIdle(ctx context.Context, d time.Duration) {
	if m.sampler == nil || d <= 0 {
		return
	}
	m.baselines, _ = m.idleFor(ctx, "idle power baseline", d)
	for i, dev := range m.info.Devices {
		m.info.Baseline = append(m.info.Baseline, session.DeviceBaseline{ID: dev.ID, Baseline: m.baselines[i]})
	}
}

// measureIdleAfter measures the idle baseline again for d after the last
// trial, and how far the energy devices' idle moved since the first:
// that drift bounds how far a trial's net energy may be off.
func (m *monitor) measureIdleAfter(ctx context.Context, d time.Duration) {
	m.info.DriftW = math.NaN()
	if m.sampler == nil {
		return
	}
	defer m.measureUpdates()
	if d <= 0 || ctx.Err() != nil || len(m.info.Baseline) == 0 {
		return
	}
	after, whole := m.idleFor(ctx, "idle power baseline again, after the last trial", d)
	if !whole {
		return // interrupted: no drift to say
	}
	drift := 0.0
	for i, dev := range m.info.Devices {
		m.info.BaselineAfter = append(m.info.BaselineAfter, session.DeviceBaseline{ID: dev.ID, Baseline: after[i]})
		if slices.Contains(m.summed, i) {
			drift += math.Abs(after[i].MeanW - m.baselines[i].MeanW)
		}
	}
	m.info.DriftW = drift
}

// idleFor says it measures what for d, waits d (or until ctx ends:
// whole is then false) with nothing running, and gives each device's idle
// baseline over the samples of that window.
func (m *monitor) idleFor(ctx context.Context, what string, d time.Duration) (baselines []telemetry.Baseline, whole bool) {
	m.events <- Measuring{What: what, For: d}
	from := m.sampler.Since(time.Now())
	select {
	case <-time.After(d):
		whole = true
	case <-ctx.Done():
	}
	to := m.sampler.Since(time.Now())
	baselines = make([]telemetry.Baseline, len(m.info.Devices))
	for i := range baselines {
		var inWindow []telemetry.Sample
		for _, s := range m.sampler.Samples(i, from, to) {
			if s.At >= from && s.At <= to {
				inWindow = append(inWindow, s)
			}
		}
		baselines[i] = telemetry.IdleBaseline(inWindow)
	}
	return baselines, whole
}

// measureUpdates records how often each device's readings changed over
// the sampler's history (the run's last minutes), so that the manifest
// says how fine its energy could be.
func (m *monitor) measureUpdates() {
	now := m.sampler.Since(time.Now())
	for i := range m.info.Devices {
		dev := &m.info.Devices[i]
		every := telemetry.UpdateInterval(m.sampler.Samples(i, 0, now), dev.HasCounter)
		dev.UpdateMs = float64(every) / float64(time.Millisecond)
	}
}

// attach starts the power CSV beside the session's other files.
func (m *monitor) attach(w *session.Writer) error {
	if m.sampler == nil {
		return nil
	}
	var ids []string
	for _, d := range m.info.Devices {
		ids = append(ids, d.ID)
	}
	csv, err := w.CreatePower(ids)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.csv = csv
	for _, s := range m.pending {
		csv.Append(s)
	}
	m.pending = nil
	return nil
}

// mark writes a marker into the power CSV, e.g. around a load block, whose
// overlapping requests share the energy between them.
func (m *monitor) mark(text string) {
	if m.sampler != nil {
		m.sampler.Mark(text)
	}
}

// beginBlock starts the memory watches of a load block's targets, which
// its overlapping requests share; it returns those it started.
func (m *monitor) beginBlock(targets []int) []*telemetry.MemoryWatch {
	var watches []*telemetry.MemoryWatch
	for _, t := range targets {
		if w := m.memory[t]; w != nil && !slices.Contains(watches, w) {
			w.Begin()
			watches = append(watches, w)
		}
	}
	return watches
}

// endBlock ends them and returns the highest peak; NaN with none.
func (m *monitor) endBlock(watches []*telemetry.MemoryWatch) float64 {
	peak := math.NaN()
	for _, w := range watches {
		if mb := w.End(); !(mb <= peak) && !math.IsNaN(mb) {
			peak = mb
		}
	}
	return peak
}

// windowEnergy is the energy over a load block's steady window; measured
// is false without a power source.
func (m *monitor) windowEnergy(target int, from, to time.Time) (e telemetry.Energy, measured bool) {
	if m.sampler == nil {
		return e, false
	}
	return m.energy(target, m.sampler.Since(from), m.sampler.Since(to)), true
}

// beginTrial marks the start of a trial on target before the runner
// stamps it.
func (m *monitor) beginTrial(label string, target int) {
	if m.sampler != nil {
		m.sampler.Mark("trial_start " + label)
	}
	if w := m.memory[target]; w != nil {
		w.Begin()
	}
}

// endTrial marks the end after the runner stamped it, then fills the
// record's energy and memory; it reports whether a counter was rejected.
func (m *monitor) endTrial(label string, target int, startedAt time.Time, end time.Duration, rec *session.Record) (counterRejected bool) {
	if w := m.memory[target]; w != nil {
		rec.PeakRSSMB = w.End()
	}
	if m.sampler == nil {
		return false
	}
	m.sampler.Mark("trial_end " + label)
	from := m.sampler.Since(startedAt)
	e := m.energy(target, from, from+end)
	rec.EnergyQuality = string(e.Quality)
	if e.Quality == telemetry.QualityNoData {
		return e.Rejected != ""
	}
	rec.EnergyJ, rec.AvgPowerW, rec.EnergyErrJ = e.NetJ, e.AvgPowerW, e.ErrJ
	if rec.OutputTokens > 0 {
		rec.JPerToken = e.NetJ / float64(rec.OutputTokens)
	}
	return e.Rejected != ""
}

// energy sums a target's energy devices' energy over [from, to] on the
// sampler's clock; its quality is the weakest device's, and Rejected is
// set when a device's counter was not used.
func (m *monitor) energy(target int, from, to time.Duration) telemetry.Energy {
	sum := telemetry.Energy{Quality: telemetry.QualityCounter}
	for _, i := range m.energyOf[target] {
		e := telemetry.TrialEnergy(m.sampler.Samples(i, from, to), from, to, m.baselines[i], m.info.Devices[i].HasCounter)
		if e.Rejected != "" {
			sum.Rejected = e.Rejected
		}
		switch {
		case e.Quality == telemetry.QualityNoData:
			sum.Quality = telemetry.QualityNoData
		case e.Quality == telemetry.QualitySampled && sum.Quality == telemetry.QualityCounter:
			sum.Quality = telemetry.QualitySampled
		}
		sum.GrossJ, sum.NetJ, sum.ErrJ = sum.GrossJ+e.GrossJ, sum.NetJ+e.NetJ, sum.ErrJ+e.ErrJ
	}
	if len(m.energyOf[target]) == 0 {
		sum.Quality = telemetry.QualityNoData
	}
	if sum.Quality != telemetry.QualityNoData {
		sum.AvgPowerW = sum.GrossJ / (to - from).Seconds()
	}
	return sum
}

// stop ends sampling and closes the power CSV, once; it returns the
// first error writing the power CSV, which never stops a run.
func (m *monitor) stop() error {
	if m.sampler == nil {
		return nil
	}
	m.stopped.Do(func() {
		m.sampler.Stop()
		m.found.Source.Close()
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.csv != nil {
			if err := m.csv.Close(); err != nil && m.csvErr == nil {
				m.csvErr = err
			}
		}
	})
	return m.csvErr
}

// GPUMetricsSource is one DCGM exporter and the targets (indices into
// Plan.Targets) whose trials sum its GPUs.
type GPUMetricsSource struct {
	URL     string
	Targets []int
}
