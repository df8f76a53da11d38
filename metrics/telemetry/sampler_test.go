package telemetry

import (
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

// scriptedDevice is one device of a scriptedSource: its power and
// energy counter by read number, and the read from which it is lost.
type scriptedDevice struct {
	powerW   func(read int) float64
	energyMJ func(read int) float64 // nil: no counter
	lostAt   int                    // 0: never
	reads    int
}

// scriptedSource is a Source for the sampler's own tests, on every OS.
type scriptedSource struct {
	mu      sync.Mutex
	devices []*scriptedDevice
}

func (s *scriptedSource) Devices() []Device {
	var out []Device
	for _, d := range s.devices {
		out = append(out, Device{Name: "scripted", Kind: KindGPU, PowerLimitW: math.NaN(), HasCounter: d.energyMJ != nil})
	}
	return out
}

func (s *scriptedSource) Read(i int, boundary bool) (Sample, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.devices[i]
	d.reads++
	sample := NewSample(0, i)
	if d.lostAt > 0 && d.reads >= d.lostAt {
		return sample, errors.New("GPU is lost")
	}
	sample.PowerW = d.powerW(d.reads)
	if d.energyMJ != nil {
		sample.EnergyMJ = d.energyMJ(d.reads)
	}
	if boundary {
		sample.Throttle = "none"
	}
	return sample, nil
}

func (s *scriptedSource) Close() error { return nil }

// collect is a sink that keeps every sample.
type collect struct {
	mu      sync.Mutex
	samples []Sample
}

func (c *collect) add(s Sample) {
	c.mu.Lock()
	c.samples = append(c.samples, s)
	c.mu.Unlock()
}

func (c *collect) all() []Sample {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Sample(nil), c.samples...)
}

func TestSamplerLosesADeviceOnceAndKeepsTheOthers(t *testing.T) {
	lost := &scriptedDevice{powerW: func(int) float64 { return 100 }, lostAt: 4}
	good := &scriptedDevice{powerW: func(int) float64 { return 200 }, energyMJ: func(read int) float64 { return float64(read) * 20 }}
	sink := &collect{}
	s := StartSampler(&scriptedSource{devices: []*scriptedDevice{lost, good}}, 5*time.Millisecond, sink.add)
	deadline := time.Now().Add(5 * time.Second)
	for s.Lost(0) == "" && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	s.Mark("trial_end greedy#1")
	s.Stop()
	var lostEvents, goodSamples, goodMarks int
	for _, sample := range sink.all() {
		switch {
		case strings.HasPrefix(sample.Event, "device lost"):
			lostEvents++
			if sample.Device != 0 || !strings.Contains(sample.Event, "GPU is lost") {
				t.Errorf("lost event %+v", sample)
			}
		case sample.Device == 1:
			goodSamples++
			if sample.Event == "trial_end greedy#1" && sample.Throttle != "" {
				goodMarks++
			}
		}
	}
	if lostEvents != 1 || s.Lost(0) == "" || s.Lost(1) != "" || goodSamples < 4 || goodMarks != 1 {
		t.Errorf("lost events %d, good samples %d, boundary samples %d, lost %q/%q", lostEvents, goodSamples, goodMarks, s.Lost(0), s.Lost(1))
	}
	for i, sample := range s.Samples(1, 0, time.Hour)[1:] {
		if sample.At < s.Samples(1, 0, time.Hour)[i].At {
			t.Fatal("samples out of time order")
		}
	}
}

func TestSamplerBracketsATrialForTheCounter(t *testing.T) {
	// 400 W, counter updating every 100 ms at a 25 ms cadence: a real
	// GPU's granularity.
	start := time.Now()
	gpu := &scriptedDevice{powerW: func(int) float64 { return 400 }, energyMJ: func(int) float64 {
		elapsed := time.Since(start) / (100 * time.Millisecond) * (100 * time.Millisecond)
		return 400 * elapsed.Seconds() * 1000
	}}
	s := StartSampler(&scriptedSource{devices: []*scriptedDevice{gpu}}, 25*time.Millisecond, func(Sample) {})
	defer s.Stop()
	begin := s.Mark("trial_start")
	time.Sleep(600 * time.Millisecond)
	end := s.Mark("trial_end")
	e := TrialEnergy(s.Samples(0, begin, end), begin, end, Baseline{MeanW: 50, StdW: 1}, true)
	want := 400 * (end - begin).Seconds()
	if e.Quality != QualityCounter || math.Abs(e.GrossJ-want) > 0.25*want {
		t.Errorf("%+v, want about %.0f J from the counter", e, want)
	}
}
