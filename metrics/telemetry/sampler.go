package telemetry

import (
	"sync"
	"time"
)

// Sampler reads every device at a fixed cadence on its own goroutine,
// keeps recent samples for attributing energy to trials, and hands each
// sample to a sink (the power CSV, the dashboard).
type Sampler struct {
	src      Source
	devices  []Device
	interval time.Duration
	start    time.Time
	sink     func(Sample)

	mu      sync.Mutex
	history [][]Sample // per device, the last keepFor of samples
	lost    []string   // why each device stopped answering; "" while it answers

	marks chan mark
	stop  chan struct{}
	done  chan struct{}
}

type mark struct {
	event string
	taken chan time.Duration
}

// keepFor bounds the history: long enough for any trial's window, short
// enough that a day-long run does not grow without end.
const keepFor = 10 * time.Minute

// DefaultInterval is the sampling cadence when none is configured.
const DefaultInterval = 50 * time.Millisecond

// StartSampler starts sampling src every interval; sink sees every
// sample, in order, on the sampler's goroutine.
func StartSampler(src Source, interval time.Duration, sink func(Sample)) *Sampler {
	devices := src.Devices()
	s := &Sampler{src: src, devices: devices, interval: interval, start: time.Now(), sink: sink,
		history: make([][]Sample, len(devices)), lost: make([]string, len(devices)),
		marks: make(chan mark), stop: make(chan struct{}), done: make(chan struct{})}
	go s.loop()
	return s
}

// Started is when the sampler's clock reads zero.
func (s *Sampler) Started() time.Time { return s.start }

// Since is the sampler's clock: the time since it started, monotonic.
func (s *Sampler) Since(t time.Time) time.Duration { return t.Sub(s.start) }

func (s *Sampler) loop() {
	defer close(s.done)
	ticker := time.NewTicker(s.interval)
	defer ticker.Stop()
	s.readAll(false, "")
	for {
		select {
		case <-ticker.C:
			s.readAll(false, "")
		case m := <-s.marks:
			m.taken <- s.readAll(true, m.event)
		case <-s.stop:
			return
		}
	}
}

// readAll samples every device still answering and returns when.
func (s *Sampler) readAll(boundary bool, event string) time.Duration {
	var at time.Duration
	for i := range s.devices {
		if s.lostReason(i) != "" {
			continue
		}
		sample, err := s.src.Read(i, boundary)
		at = time.Since(s.start)
		sample.At, sample.Device, sample.Event = at, i, event
		if err != nil {
			// Said once, in the power CSV and to the panel; the device is
			// not asked again this run.
			sample = NewSample(at, i)
			sample.Event = "device lost: " + err.Error()
			s.mu.Lock()
			s.lost[i] = err.Error()
			s.mu.Unlock()
		} else {
			s.mu.Lock()
			h := append(s.history[i], sample)
			for len(h) > 0 && at-h[0].At > keepFor {
				h = h[1:]
			}
			s.history[i] = h
			s.mu.Unlock()
		}
		s.sink(sample)
	}
	if at == 0 {
		at = time.Since(s.start)
	}
	return at
}

func (s *Sampler) lostReason(i int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lost[i]
}

// Lost says why device i stopped answering, or "" while it answers.
func (s *Sampler) Lost(i int) string { return s.lostReason(i) }

// Mark takes a boundary sample of every device now (temperature, SM
// clock and throttle reasons included, labelled with event) and returns
// its time on the sampler's clock once it is taken. At a trial's start it
// is called before the start is stamped, at its end after: so the
// samples bracket the trial.
func (s *Sampler) Mark(event string) time.Duration {
	m := mark{event: event, taken: make(chan time.Duration, 1)}
	select {
	case s.marks <- m:
		return <-m.taken
	case <-s.done:
		return time.Since(s.start)
	}
}

// Samples returns device i's samples from a little before from to a
// little after to, enough to bracket the window.
func (s *Sampler) Samples(i int, from, to time.Duration) []Sample {
	margin := max(time.Second, 2*s.interval)
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Sample
	for _, sample := range s.history[i] {
		if sample.At >= from-margin && sample.At <= to+margin {
			out = append(out, sample)
		}
	}
	return out
}

// Stop ends sampling; the sink sees nothing after it returns.
func (s *Sampler) Stop() {
	select {
	case <-s.done:
	default:
		close(s.stop)
		<-s.done
	}
}
