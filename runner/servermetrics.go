package runner

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tokentop/tokentop/backends/untrusted"
	"github.com/tokentop/tokentop/metrics/telemetry"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/session"
)

// ServerMetricsOff turns the scraping of servers' metrics off
// (--server-metrics off).
const ServerMetricsOff = "off"

// ServerMetrics is one scrape of a server's own metrics, for the
// dashboard: the common series, and over the time since the scrape
// before it the tokens generated a second and the prefix cache's hit
// rate (NaN where unknown). These are dropped rather than wait for a slow
// front end; the server CSV has every one.
type ServerMetrics struct {
	Server          int
	Targets         []string
	View            telemetry.ServerView
	TokensPerSecond float64
	PrefixHitRate   float64
	// Unavailable says why a server gave no metrics at all; the rest is
	// then empty.
	Unavailable string
	// OverRun says TokensPerSecond and PrefixHitRate are the run's, from
	// its first scrape to its last (the front end sets it once the run is
	// over); LowerBound that the run's count misses some of its tokens.
	OverRun, LowerBound bool
}

func (ServerMetrics) isEvent() {}

// checkServerMetrics checks --server-metrics: "", "off" or an http(s)
// address.
func checkServerMetrics(v string) error {
	if v == "" || v == ServerMetricsOff {
		return nil
	}
	if !profiles.IsServerURL(v) {
		return fmt.Errorf("--server-metrics %q: give the address of the server's Prometheus metrics (http://host:port/metrics), or off", v)
	}
	return nil
}

// metricsSources are the servers to scrape: each server target's own
// address at its kind's metrics path (targets on one server share it),
// or the one address --server-metrics gives for them all. In-process
// engines and servers with no metrics (Ollama) have none.
func (p *Plan) metricsSources() []session.ServerMetricsSource {
	if p.ServerMetrics == ServerMetricsOff {
		return nil
	}
	var out []session.ServerMetricsSource
	at := map[string]int{}
	for _, t := range p.Targets {
		if t.Kind.InProcess || t.Kind.MetricsPath == "" {
			continue
		}
		// A fleet's replicas are each a server with its own metrics,
		// named by their index as the trials' replica column has it.
		for k, addr := range append([]string{t.Target.URL}, t.Target.Replicas...) {
			name := t.Name
			if len(t.Target.Replicas) > 0 {
				name = fmt.Sprintf("%s replica %d", t.Name, k)
			}
			where := p.ServerMetrics
			if where == "" {
				u, err := url.Parse(addr)
				if err != nil {
					continue
				}
				where = (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: t.Kind.MetricsPath}).String()
			}
			if i, ok := at[where]; ok {
				if !slices.Contains(out[i].Targets, name) {
					out[i].Targets = append(out[i].Targets, name)
				}
				continue
			}
			at[where] = len(out)
			out = append(out, session.ServerMetricsSource{Targets: []string{name}, URL: where})
		}
	}
	return out
}

// serverWatch scrapes the servers' metrics into the server CSV and onto
// the dashboard, and keeps what the run's end reports of them.
type serverWatch struct {
	scraper *telemetry.ServerScraper
	csv     *session.ServerWriter
	events  chan<- Event

	mu     sync.Mutex
	info   session.ServerMetricsInfo
	first  []*telemetry.Scrape // per server, its first good scrape
	last   []*telemetry.Scrape // and its last
	counts []serverCounts
	csvErr error
	warned []bool

	stopped sync.Once
}

// serverCounts are a server's counters summed over the run across its
// resets, as Prometheus's increase() does: a counter lower than the read
// before it means the server restarted and counts from zero again, so
// its new value is all that it counted since. What a server counted
// between its last read and its death or restart is lost, so a total
// with a reset in it, or a failed read (a restart whose count overtook
// the old one by the next read looks like no reset), is a lower bound.
type serverCounts struct {
	generated                   float64
	prefixHits, prefixQueries   float64
	resets, failedReads         int
	lastFailed                  bool
	generatedKnown, prefixKnown bool
}

// add counts the increase from one good read to the next.
func (c *serverCounts) add(prev, cur telemetry.ServerView) {
	increase := func(before, after float64) (float64, bool) {
		switch {
		case math.IsNaN(before) || math.IsNaN(after):
			return 0, false
		case after < before:
			return after, true
		}
		return after - before, false
	}
	reset := false
	if d, r := increase(prev.Generated, cur.Generated); !math.IsNaN(cur.Generated) {
		c.generated, c.generatedKnown, reset = c.generated+d, true, reset || r
	}
	h, rh := increase(prev.PrefixHits, cur.PrefixHits)
	q, rq := increase(prev.PrefixQueries, cur.PrefixQueries)
	if !math.IsNaN(cur.PrefixHits) && !math.IsNaN(cur.PrefixQueries) {
		c.prefixHits, c.prefixQueries, c.prefixKnown = c.prefixHits+h, c.prefixQueries+q, true
		reset = reset || rh || rq
	}
	if reset {
		c.resets++
	}
}

// fill writes the run's totals into src, from the first good read to
// the last.
func (c serverCounts) fill(src *session.ServerMetricsSource, first, last *telemetry.Scrape) {
	src.Restarts, src.FailedReads, src.LastReadFailed = c.resets, c.failedReads, c.lastFailed
	if span := (last.At - first.At).Seconds(); c.generatedKnown {
		src.TokensGenerated = c.generated
		if span > 0 {
			src.TokensPerSecond = c.generated / span
		}
	}
	switch {
	case c.prefixKnown && c.prefixQueries > 0:
		src.PrefixHitRate = c.prefixHits / c.prefixQueries
	case !math.IsNaN(last.View.PrefixHitRate): // a server that gives only a rate
		src.PrefixHitRate = last.View.PrefixHitRate
	}
}

// watchServers starts scraping plan's servers into w's server CSV; nil
// where there are none to scrape.
func watchServers(plan *Plan, w *session.Writer, events chan<- Event) (*serverWatch, error) {
	sources := plan.metricsSources()
	if len(sources) == 0 {
		return nil, nil
	}
	urls := make([]string, len(sources))
	for i, src := range sources {
		urls[i] = src.URL
		// --server-metrics may carry a password or a token: asked with
		// it, stored and shown without.
		sources[i].URL = untrusted.URL(src.URL)
		sources[i].Status = "not answered yet"
	}
	// The clock's start is in the manifest from the first: a run killed
	// before its end leaves a CSV whose times can still be placed.
	start := time.Now()
	startedAt := start.UTC()
	s := &serverWatch{events: events, first: make([]*telemetry.Scrape, len(sources)), last: make([]*telemetry.Scrape, len(sources)),
		counts: make([]serverCounts, len(sources)), warned: make([]bool, len(sources))}
	s.info = session.ServerMetricsInfo{IntervalMs: float64(telemetry.DefaultServerInterval) / float64(time.Millisecond), Servers: sources, StartedAt: &startedAt}
	csv, err := w.CreateServerMetrics(&s.info)
	if err != nil {
		return nil, err
	}
	s.csv = csv
	s.scraper = telemetry.StartServerScraper(urls, telemetry.DefaultServerInterval, start, s.sink)
	return s, nil
}

// sink receives every scrape on the scraper's goroutine.
func (s *serverWatch) sink(sc telemetry.Scrape) {
	s.mu.Lock()
	defer s.mu.Unlock()
	src := &s.info.Servers[sc.Target]
	if sc.Err != nil {
		if s.last[sc.Target] != nil {
			s.counts[sc.Target].lastFailed = true
			s.counts[sc.Target].failedReads++
		}
		why := untrusted.Line(sc.Err.Error())
		switch {
		case s.last[sc.Target] == nil:
			// A server with no metrics is common (llama-server without
			// --metrics): said where they would show, not warned of.
			src.Status = "none: " + why
			select {
			case s.events <- ServerMetrics{Server: sc.Target, Targets: src.Targets, Unavailable: why}:
			default:
			}
		case !s.warned[sc.Target]:
			s.warned[sc.Target] = true
			// The front end reads until the run ends.
			s.events <- Warning{Text: fmt.Sprintf("server metrics of %s stopped: %s; asked again each second", strings.Join(src.Targets, ", "), why)}
		}
		return
	}
	if err := s.csv.Append(sc.Target, sc.At, append(sc.Series, sc.View.Rows()...)); err != nil && s.csvErr == nil {
		s.csvErr = err
	}
	ev := ServerMetrics{Server: sc.Target, Targets: src.Targets, View: sc.View, TokensPerSecond: math.NaN(), PrefixHitRate: math.NaN()}
	s.counts[sc.Target].lastFailed = false
	if prev := s.last[sc.Target]; prev != nil {
		ev.TokensPerSecond, ev.PrefixHitRate = sc.View.Since(prev.View, (sc.At - prev.At).Seconds())
		s.counts[sc.Target].add(prev.View, sc.View)
	} else {
		src.Status, s.first[sc.Target] = "scraped", &sc
	}
	if sc.Cut && src.Status == "scraped" {
		src.Status = fmt.Sprintf("scraped; its answers held more than %d series, and each was read only that far", telemetry.MaxServerSeries)
	}
	s.last[sc.Target] = &sc
	peak := func(to *float64, v float64) {
		if !math.IsNaN(v) {
			*to = max(*to, v)
		}
	}
	peak(&src.PeakRunning, sc.View.Running)
	peak(&src.PeakWaiting, sc.View.Waiting)
	peak(&src.PeakKVCache, sc.View.KVCache)
	s.warned[sc.Target] = false
	select {
	case s.events <- ev:
	default: // the front end is behind; the CSV has the scrape
	}
}

// stop ends scraping and closes the CSV; it returns the manifest's
// account of it and the first error writing the CSV, which never stops
// a run.
func (s *serverWatch) stop() (*session.ServerMetricsInfo, error) {
	if s == nil {
		return nil, nil
	}
	s.stopped.Do(func() {
		s.scraper.Stop()
		if err := s.csv.Close(); err != nil && s.csvErr == nil {
			s.csvErr = err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, first := range s.first {
			if first == nil {
				continue
			}
			s.counts[i].fill(&s.info.Servers[i], first, s.last[i])
		}
	})
	// A copy of its own for each caller: the run's end and its deferred
	// stop both ask, and one's reader must not see the other's writes.
	s.mu.Lock()
	defer s.mu.Unlock()
	info := s.info
	info.Servers = slices.Clone(s.info.Servers)
	return &info, s.csvErr
}
