package runner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/backends/llamacpp"
	"github.com/tokentop/tokentop/backends/replay"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/session"
)

// shedServer is a llama-server that serves at most capacity generations
// at once, each taking service, and sheds the rest at once with status
// (503 or 429), with a Retry-After header where retryAfter is set: a
// server past its capacity, as vLLM, TGI or a proxy in front of
// llama-server answer one.
type shedServer struct {
	url                string
	served, shed, peak atomic.Int32
	inFlight           atomic.Int32
}

func newShedServer(t testing.TB, capacity int, service time.Duration, status int, retryAfter string) *shedServer {
	s := &shedServer{}
	ok := replay.Serve(replay.Load(t, "llamacpp/completion_t0_stream"))
	s.url = replay.NewServer(t, replay.Route{
		"GET /health": replay.Serve(replay.Load(t, "llamacpp/health")),
		"GET /props":  replay.Serve(replay.Load(t, "llamacpp/props")),
		"POST /completion": func(w http.ResponseWriter, r *http.Request) {
			n := s.inFlight.Add(1)
			defer s.inFlight.Add(-1)
			if int(n) > capacity {
				s.shed.Add(1)
				if retryAfter != "" {
					w.Header().Set("Retry-After", retryAfter)
				}
				http.Error(w, fmt.Sprintf(`{"error":{"code":%d,"message":"server busy"}}`, status), status)
				return
			}
			for peak := s.peak.Load(); int32(n) > peak && !s.peak.CompareAndSwap(peak, n); peak = s.peak.Load() {
			}
			select {
			case <-time.After(service):
			case <-r.Context().Done():
				return
			}
			s.served.Add(1)
			ok(w, r)
		},
	}).URL
	return s
}

// overloadPlan is one arm against url: an open loop at rates (their
// blocks half a second of arrivals) or, with no rates, a closed loop at
// levels of streams; trials timed requests per level, an SLO on TTFT from
// the due time.
func overloadPlan(t testing.TB, url string, trials int, rates []float64, streams ...int) *Plan {
	p, err := profiles.Parse("t.toml", []byte("name = \"t\"\nmax_tokens = 32\ntrials = 1\nseed = 3\ntimeout = \"5s\"\nprompts = [\"Once upon a time\"]\n"+
		"[slo]\nttft_ms = 1000\ngoodput = 0.9\n[[arms]]\nname = \"greedy\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Backend: "llamacpp", URL: url, OutDir: t.TempDir(), Trials: trials, Warmup: 2, MaxTokens: NoOverride, ServerWait: 2 * time.Second}
	if len(rates) > 0 {
		opts.Rates = rates
	} else {
		opts.Concurrency = streams
	}
	plan, err := Resolve(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	plan.Telemetry = testPlan(t, 0, 1, "x").Telemetry
	plan.OpenBlock = 500 * time.Millisecond
	return plan
}

// runWithin runs plan against its llama-server, failing the test if the
// run is still going after limit (a run always ends within its plan) or
// did not end complete.
func runWithin(t testing.TB, plan *Plan, limit time.Duration) []Event {
	b, err := llamacpp.Kind.Open(plan.Targets[0].Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	events := make(chan Event, 1<<16)
	var all []Event
	done := make(chan struct{})
	go func() {
		for ev := range events {
			all = append(all, ev)
		}
		close(done)
	}()
	status, runErr := Run(ctx, plan, []backends.Backend{b}, events)
	<-done
	if ctx.Err() != nil {
		t.Fatalf("the run was still going after %v: %d events", limit, len(all))
	}
	if runErr != nil || status != session.StatusComplete {
		t.Fatalf("status %s, error %v", status, runErr)
	}
	return all
}

// A server that sheds load past its capacity is measured, not lost: its
// 503s (and 429s without a Retry-After) are failed requests of their
// level, the run never re-probes or warms up again, no block is cut,
// every request counts toward the cap, and the run ends complete within
// its plan. (It used to cancel each block at the first 503, re-probe, warm
// up again and start over: 3,064 rows and 0 timed ok after 90 s.)
func TestAServerThatShedsLoadIsMeasuredNotLost(t *testing.T) {
	for _, c := range []struct {
		name    string
		status  int
		rates   []float64
		streams int
		service time.Duration
	}{
		{"open loop, 503", http.StatusServiceUnavailable, []float64{300}, 0, 40 * time.Millisecond},
		{"open loop, 429", http.StatusTooManyRequests, []float64{300}, 0, 40 * time.Millisecond},
		// The closed loop's counted requests are its streams' steady ones,
		// after their first and before any served stream ends. Its streams
		// past the capacity must shed all their requests before the first
		// service ends, or the served streams' later requests can meet a
		// slot taken and end early, leaving every ok request ramp or
		// drain and the run failed ("no timed trial succeeded"), as it once
		// ended on a loaded CI machine with 40 ms.
		{"closed loop, 503", http.StatusServiceUnavailable, nil, 12, 200 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := newShedServer(t, 4, c.service, c.status, "")
			plan := overloadPlan(t, srv.url, 120, c.rates, c.streams)
			events := runWithin(t, plan, 60*time.Second)
			if back := eventsOf[Resumed](events); len(back) > 0 {
				t.Errorf("the server was taken for lost and came back %d times", len(back))
			}
			for _, s := range eventsOf[ArmStopped](events) {
				if !strings.Contains(s.Reason, "trial cap") || strings.Contains(s.Reason, "Retry-After") {
					t.Errorf("arm stopped: %s", s.Reason)
				}
			}
			var ok, shed, canceled, warmup int
			for _, r := range trials(events) {
				switch {
				case r.Phase == session.PhaseWarmup:
					warmup++
				case r.Status == session.StatusOK:
					ok++
				case r.Status == session.StatusCanceled:
					canceled++
				case strings.Contains(r.Error, fmt.Sprintf("HTTP %d", c.status)):
					shed++
				default:
					t.Errorf("trial %d: %s %q", r.Trial, r.Status, r.Error)
				}
			}
			if ok == 0 || shed == 0 || canceled > 0 || warmup > 12 {
				t.Errorf("%d ok, %d shed, %d canceled, %d warmup rows; want both kinds, none canceled, one warmup", ok, shed, canceled, warmup)
			}
			if last := eventsOf[TrialDone](events); last[len(last)-1].Measured < 120 {
				t.Errorf("%d requests counted toward the cap of 120", last[len(last)-1].Measured)
			}
		})
	}
}

// A Retry-After is honoured per request, not by stopping the run: the
// requests due after it wait it out in the client's queue, none reaches
// the server early, and no block is cut.
func TestARetryAfterIsHonouredPerRequestUnderLoad(t *testing.T) {
	var mu sync.Mutex
	var refusedAt time.Time
	var early atomic.Int32
	ok := replay.Serve(replay.Load(t, "llamacpp/completion_t0_stream"))
	url := misbehaving(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		first := refusedAt.IsZero()
		// A request may reach the server before the client has read the
		// 429 (it was sent first): early only once the answer has had
		// 200 ms to get back.
		if first {
			refusedAt = time.Now()
		} else if wait := time.Since(refusedAt); wait > 200*time.Millisecond && wait < time.Second {
			early.Add(1)
		}
		mu.Unlock()
		if first {
			w.Header().Set("Retry-After", "1")
			http.Error(w, `{"error":{"code":429,"message":"slow down"}}`, http.StatusTooManyRequests)
			return
		}
		ok(w, r)
	})
	plan := overloadPlan(t, url, 40, []float64{40}, 0)
	plan.Profile.Warmup = 0
	events := runWithin(t, plan, 30*time.Second)
	if early.Load() != 0 {
		t.Errorf("%d requests reached the server within the second it asked for", early.Load())
	}
	waited := 0
	for _, r := range trials(events) {
		if r.Status == session.StatusCanceled {
			t.Errorf("trial %d canceled: %s", r.Trial, r.Error)
		}
		if r.QueueMs > 500 {
			waited++
		}
	}
	if waited == 0 {
		t.Error("no request waited out the Retry-After in its queue")
	}
}

// clientLimited fails every third request as a client out of open files
// would, and answers the rest with one token after 5 ms.
type clientLimited struct{ calls atomic.Int32 }

func (c *clientLimited) Probe(context.Context, string) (backends.Info, error) {
	return backends.Info{Kind: "fake"}, nil
}

func (c *clientLimited) Generate(ctx context.Context, _ backends.Request, onChunk backends.OnChunk) (backends.Result, error) {
	res := backends.NewResult()
	if c.calls.Add(1)%3 == 0 {
		return res, &backends.Failure{Kind: backends.ErrClient, Err: errors.New("the client could not open a connection: socket: too many open files")}
	}
	time.Sleep(5 * time.Millisecond)
	onChunk(1, backends.Answer)
	res.OutputTokens, res.StopReason = 1, "length"
	return res, nil
}

// The client's own limits are the client's: requests it could not send
// are recorded as such and said in words, the server is never taken for
// lost, and the run ends complete. (A closed loop at 256 streams with
// ulimit -n 200 ended failed, blaming the server.)
func TestTheClientsOwnLimitsAreNotBlamedOnTheServer(t *testing.T) {
	plan := testPlan(t, 0, 40, "greedy")
	plan.Profile.Concurrency = profiles.Levels{4}
	plan.expandLoad()
	status, err, events := runPlan(t, context.Background(), plan, &clientLimited{})
	if err != nil || status != session.StatusComplete {
		t.Fatalf("status %s, error %v", status, err)
	}
	said := false
	for _, w := range eventsOf[Warning](events) {
		said = said || strings.Contains(w.Text, "recorded as failed by the client, not the server")
	}
	failed := 0
	for _, r := range trials(events) {
		if r.Status == session.StatusError {
			failed++
		}
		if r.Status == session.StatusCanceled {
			t.Errorf("trial %d canceled", r.Trial)
		}
	}
	if !said || failed == 0 || len(eventsOf[Resumed](events)) > 0 {
		t.Errorf("warned %v, %d failed, %d resumed", said, failed, len(eventsOf[Resumed](events)))
	}
}

// BenchmarkOverload drives a server that serves 4 requests at once, 40 ms
// each (100 req/s), and sheds the rest with 503, at 0.5, 1, 2 and 5 times
// its capacity: an open loop at 50, 100, 200 and 500 req/s and a closed
// loop of 2, 4, 8 and 20 streams, 120 timed requests a level. Every run
// must end complete within its plan; it logs each level's goodput, what
// the server shed and the knee, and reports the run's wall time.
//
//	go test ./runner -run X -bench Overload -benchtime 1x -v
func BenchmarkOverload(b *testing.B) {
	for _, c := range []struct {
		name    string
		rates   []float64
		streams []int
	}{
		{"open", []float64{50, 100, 200, 500}, nil},
		{"closed", nil, []int{2, 4, 8, 20}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				srv := newShedServer(b, 4, 40*time.Millisecond, http.StatusServiceUnavailable, "")
				plan := overloadPlan(b, srv.url, 120, c.rates, c.streams...)
				start := time.Now()
				events := runWithin(b, plan, 5*time.Minute)
				wall := time.Since(start)
				s := finishedSession(b, events)
				res, err := s.LoadResults()
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(wall.Seconds(), "wall-s")
				b.Logf("%s loop against a server of 4 slots × 40 ms (100 req/s), %d served and %d shed, %v:", c.name, srv.served.Load(), srv.shed.Load(), wall.Round(time.Millisecond))
				for _, line := range res.Lines() {
					b.Log("  " + line)
				}
			}
		})
	}
}

// A level where every request failed is reported as such, and the sweep
// goes on to its end: here the server serves its first 40 requests and
// sheds every one after.
func TestALevelWhereEveryRequestFailedIsReported(t *testing.T) {
	var served atomic.Int32
	ok := replay.Serve(replay.Load(t, "llamacpp/completion_t0_stream"))
	url := misbehaving(t, func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1) > 40 {
			http.Error(w, `{"error":{"code":503,"message":"server busy"}}`, http.StatusServiceUnavailable)
			return
		}
		ok(w, r)
	})
	plan := overloadPlan(t, url, 30, []float64{60, 120, 240})
	plan.Profile.Warmup, plan.Profile.SLO = 1, profiles.SLO{} // no search between the rates
	events := runWithin(t, plan, 30*time.Second)
	s := finishedSession(t, events)
	res, err := s.LoadResults()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rates) != 1 || len(res.Rates[0].Levels) != 3 {
		t.Fatalf("rates %+v", res.Rates)
	}
	words := strings.Join(res.Words(), "\n")
	for _, want := range []string{"240 req/s offered", "every one of its", "requests failed", "knee at"} {
		if !strings.Contains(words, want) {
			t.Errorf("%q missing from:\n%s", want, words)
		}
	}
}
