package telemetry

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/tokentop/tokentop/backends/untrusted"
)

// Scrape is one reading of one server's metrics: when (on the scraper's
// clock), the series it gave and their common view, or why it gave none.
type Scrape struct {
	Target int
	At     time.Duration
	Series []ServerSeries
	View   ServerView
	// Cut says the answer held more series than are kept: it was read
	// only that far (ParseServerMetrics).
	Cut bool
	Err error
}

// ServerScraper reads servers' Prometheus metrics at a fixed cadence on
// its own goroutine and hands each scrape to a sink (the server CSV, the
// dashboard). A server whose first scrape fails has no metrics to give
// (llama-server without --metrics answers 501) and is not asked again; one
// that answered before and then fails is asked on. Each scrape is bounded
// by the client's timeout.
type ServerScraper struct {
	urls     []string
	shown    []string // urls as errors name them: a password in one redacted
	interval time.Duration
	start    time.Time
	client   *http.Client
	sink     func(Scrape)
	stop     chan struct{}
	done     chan struct{}
}

// maxMetricsBody bounds one scrape's body.
const maxMetricsBody = 8 << 20

// DefaultServerInterval is the server metrics' cadence: the engines
// update their gauges every scheduler step, but a scrape costs the
// server a little, and a second is what a person reads.
const DefaultServerInterval = time.Second

// StartServerScraper scrapes each of urls every interval, each scrape
// bounded by the interval (at least a second), timing each from start
// (the caller's, so that it can be stored before the first scrape); sink
// sees every scrape, in order, on the scraper's goroutine.
func StartServerScraper(urls []string, interval time.Duration, start time.Time, sink func(Scrape)) *ServerScraper {
	s := &ServerScraper{urls: urls, interval: interval, start: start, sink: sink,
		client: &http.Client{Timeout: max(interval, time.Second), Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}, CheckRedirect: sameHost},
		stop:   make(chan struct{}), done: make(chan struct{})}
	for _, raw := range urls {
		s.shown = append(s.shown, untrusted.URL(raw))
	}
	go s.loop()
	return s
}

func (s *ServerScraper) loop() {
	defer close(s.done)
	defer s.client.CloseIdleConnections()
	// answered: the server gave metrics once; failing: its last scrape
	// failed. A server that never answered is not asked again.
	answered := make([]bool, len(s.urls))
	failing := make([]bool, len(s.urls))
	round := func(final bool) {
		for i := range s.urls {
			if failing[i] && (!answered[i] || final) {
				continue
			}
			scrape := s.scrape(i)
			failing[i] = scrape.Err != nil
			answered[i] = answered[i] || scrape.Err == nil
			s.sink(scrape)
		}
	}
	ticker := time.NewTicker(s.interval)
	defer ticker.Stop()
	for {
		round(false)
		select {
		case <-ticker.C:
		case <-s.stop:
			// The counters at the end, so that a run's totals are whole.
			round(true)
			return
		}
	}
}

func (s *ServerScraper) scrape(i int) Scrape {
	out := Scrape{Target: i}
	out.Err = getText(s.client, s.urls[i], s.shown[i], maxMetricsBody, func(body io.Reader) (err error) {
		out.At = time.Since(s.start) // when the answer came, before the reading
		out.Series, out.Cut, err = ParseServerMetrics(body)
		return err
	})
	if out.Err != nil {
		out.At = time.Since(s.start)
		return out
	}
	out.View = CommonView(out.Series)
	return out
}

// getText asks raw for a Prometheus text exposition and hands read at
// most limit bytes of its body. Its errors name the address as shown (no
// password, no key: untrusted.URL), never as asked: a refused
// connection's own words repeat the URL, query and all.
func getText(client *http.Client, raw, shown string, limit int64, read func(io.Reader) error) error {
	req, err := http.NewRequest(http.MethodGet, raw, nil)
	if err != nil {
		return fmt.Errorf("%s: not an address to ask", shown)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return fmt.Errorf("%s: %s", shown, untrusted.Line(err.Error()))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered HTTP %d", shown, resp.StatusCode)
	}
	if err := read(io.LimitReader(resp.Body, limit)); err != nil {
		return fmt.Errorf("%s: %w", shown, err)
	}
	return nil
}

// Stop ends scraping after a last scrape of each server still answering,
// and returns once the sink has seen it: within a scrape's bound of the
// one under way and one more each.
func (s *ServerScraper) Stop() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
}
