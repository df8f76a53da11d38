package runner

import (
	"context"
	"errors"
	"net/http"
	"regexp"
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

// llamaRoutes are a llama-server's whose probes pass (recorded /health and
// /props) and whose /completion does what completion says.
func llamaRoutes(t *testing.T, completion http.HandlerFunc) replay.Route {
	return replay.Route{
		"GET /health":      replay.Serve(replay.Load(t, "llamacpp/health")),
		"GET /props":       replay.Serve(replay.Load(t, "llamacpp/props")),
		"POST /completion": completion,
	}
}

// misbehaving serves llamaRoutes.
func misbehaving(t *testing.T, completion http.HandlerFunc) string {
	t.Helper()
	return replay.NewServer(t, llamaRoutes(t, completion)).URL
}

// runOpened runs plan against its one target, opened as every front end
// opens it.
func runOpened(t *testing.T, plan *Plan) (string, error, []Event) {
	t.Helper()
	b, err := llamacpp.Kind.Open(plan.Targets[0].Config)
	if err != nil {
		t.Fatal(err)
	}
	return runPlan(t, context.Background(), plan, b)
}

// TestServerThatDropsEveryRequestIsGivenUp: a server that answers its
// probes but drops (closes or resets) every request, or redirects every
// one elsewhere, used to be probed ("back after 0s"), warmed up again and
// sent another request, for ever. FailuresToGiveUp failures in a row end
// its arms, with the URL that failed; the run is failed, not finished.
func TestServerThatDropsEveryRequestIsGivenUp(t *testing.T) {
	for _, c := range []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{"closes", replay.Drop(false), "/completion closed the connection before answering"},
		{"resets", replay.Drop(true), "/completion closed the connection before answering"},
		{"redirects to a dead host", http.RedirectHandler(replay.ClosedURL(t)+"/completion", http.StatusTemporaryRedirect).ServeHTTP, "answered with a redirect to http://127.0.0.1:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			url := misbehaving(t, c.handler)
			// A wait far longer than the test: the count must end it.
			plan := llamaPlan(t, url, 1, 300, time.Hour)
			status, err, events := runOpened(t, plan)
			recs := trials(events)
			if !errors.Is(err, ErrServerLost) || status != session.StatusFailed || len(recs) != FailuresToGiveUp {
				t.Fatalf("status %s, error %v, %d trials", status, err, len(recs))
			}
			if !strings.Contains(err.Error(), "failed every request: 10 request(s) in a row failed since ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v", err)
			}
			if len(eventsOf[Resumed](events)) != 0 {
				t.Error("a server that answers its probe was waited for as if it were down")
			}
			for _, r := range recs {
				if r.Status != session.StatusError || !strings.Contains(r.Error, c.want) {
					t.Errorf("trial %s#%d: %s %q", r.Arm, r.Trial, r.Status, r.Error)
				}
			}
			stopped := eventsOf[ArmStopped](events)
			if len(stopped) != 2 || stopped[0].Short != "server lost" {
				t.Errorf("stops %+v", stopped)
			}
		})
	}
}

// TestHungServerIsGivenUpAfterTheWait: after SIGTERM a llama-server kept
// /health at ok and answered nothing; tokentop recorded timeouts for ever.
// Timeouts in a row count toward --server-wait, from when the first
// unanswered request was sent.
func TestHungServerIsGivenUpAfterTheWait(t *testing.T) {
	plan := llamaPlan(t, misbehaving(t, replay.Hang()), 1, 300, 300*time.Millisecond)
	plan.Profile.TrialTimeout = 200 * time.Millisecond
	status, err, events := runOpened(t, plan)
	recs := trials(events)
	if !errors.Is(err, ErrServerLost) || status != session.StatusFailed || len(recs) != 2 || recs[0].Status != session.StatusTimeout {
		t.Fatalf("status %s, error %v, trials %+v", status, err, recs)
	}
	if !regexp.MustCompile(`failed every request for \d+(\.\d+)?m?s, past --server-wait 300ms: 2 request\(s\) in a row failed since \d\d:\d\d:\d\d, when (greedy|hot) trial 1 was sent`).MatchString(err.Error()) {
		t.Errorf("error %v", err)
	}
}

// TestServerNotStartedYetIsWaitedFor: a server whose port opens after
// tokentop starts is waited for within --server-wait, as one loading its
// model is; past the wait the run names it.
func TestServerNotStartedYetIsWaitedFor(t *testing.T) {
	url := replay.ClosedURL(t)
	_, err, _ := runOpened(t, llamaPlan(t, url, 0, 1, 300*time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), "connection refused (is the server running?); still so after waiting 300ms for the server to start (--server-wait)") {
		t.Errorf("never started: %v", err)
	}

	srv := newLlamaServer(t, "completion_t0_stream")
	srv.kill()
	go func() {
		time.Sleep(400 * time.Millisecond)
		srv.restart()
	}()
	status, err, events := runOpened(t, llamaPlan(t, srv.url(), 0, 1, time.Minute))
	waits := eventsOf[Waiting](events)
	if err != nil || status != session.StatusComplete || len(waits) == 0 || waits[0].What != "the server to start" {
		t.Errorf("status %s, error %v, waits %+v", status, err, waits)
	}
}

// TestRetryAfterIsWaitedFor: a server that answers 429 with Retry-After
// is sent nothing more until the time it asked for has passed.
func TestRetryAfterIsWaitedFor(t *testing.T) {
	var mu sync.Mutex
	var refusedAt time.Time
	var early atomic.Int32
	ok := replay.Serve(replay.Load(t, "llamacpp/completion_t0_stream"))
	url := misbehaving(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case refusedAt.IsZero():
			refusedAt = time.Now()
			w.Header().Set("Retry-After", "1")
			http.Error(w, `{"error":{"code":429,"message":"too many requests"}}`, http.StatusTooManyRequests)
			return
		case time.Since(refusedAt) < time.Second:
			early.Add(1)
		}
		ok(w, r)
	})
	status, err, events := runOpened(t, llamaPlan(t, url, 0, 2, time.Minute))
	if err != nil || status != session.StatusComplete || early.Load() != 0 {
		t.Fatalf("status %s, error %v, %d requests within the second asked for", status, err, early.Load())
	}
	recs := trials(events)
	if len(recs) != 4 || recs[0].Status != session.StatusError || !strings.Contains(recs[0].Error, "HTTP 429") {
		t.Errorf("trials %+v", recs)
	}
}

// TestNoTrialLostToAServerThatClosesKeptAliveConnections: the llama-server
// build that closes its connection right after every streamed answer lost
// 10–24% of a load sweep's trials (each blamed on the server). Every
// request that found its connection closed is sent again on a new one,
// the run says so once, and no trial is lost.
func TestNoTrialLostToAServerThatClosesKeptAliveConnections(t *testing.T) {
	srv := replay.NewUnstartedServer(t, llamaRoutes(t, replay.Serve(replay.Load(t, "llamacpp/completion_t0_stream"))))
	replay.ClosesKeptAlive(srv)
	srv.Start()
	plan := llamaPlan(t, srv.URL, 1, 8, time.Minute)
	plan.Profile.Arms = plan.Profile.Arms[:1]
	plan.Profile.Concurrency = profiles.Levels{1, 4}
	plan.expandLoad()
	status, err, events := runOpened(t, plan)
	if err != nil || status != session.StatusComplete {
		t.Fatalf("status %s, error %v", status, err)
	}
	resent := 0
	for _, r := range trials(events) {
		if r.Status != session.StatusOK {
			t.Errorf("%s trial %d: %s", r.Arm, r.Trial, r.Error)
		}
		if r.Connection == backends.ConnectionResent {
			resent++
		}
	}
	warned := 0
	for _, w := range eventsOf[Warning](events) {
		if strings.Contains(w.Text, "closed before answering; it was sent again on a new connection") {
			warned++
		}
	}
	if resent == 0 || warned != 1 {
		t.Errorf("%d resent, %d warnings", resent, warned)
	}
}

// TestOnlyWhatTheServerSawIsDegraded: a request refused before it reached
// any server is recorded (connection none) but is not a degraded trial:
// it says nothing of the server's serving.
func TestOnlyWhatTheServerSawIsDegraded(t *testing.T) {
	srv := newLlamaServer(t, "completion_t0_stream")
	srv.killAt = 3
	srv.restartAfter(3, 300*time.Millisecond)
	status, err, events := runOpened(t, llamaPlan(t, srv.url(), 0, 3, time.Minute))
	if err != nil || status != session.StatusComplete {
		t.Fatalf("status %s, error %v", status, err)
	}
	var none, degraded int
	for _, r := range trials(events) {
		if r.Connection == backends.ConnectionNone {
			none++
			if r.Degraded() {
				t.Errorf("a request that never reached the server is degraded: %+v", r)
			}
		} else if r.Degraded() {
			degraded++
		}
	}
	if none == 0 || degraded != 1 {
		t.Errorf("%d never sent, %d degraded (the cut stream)", none, degraded)
	}
}

// TestARetryAfterPastTheWaitEndsTheArms: a server that asks to be left
// alone longer than --server-wait allows is not waited for an hour.
func TestARetryAfterPastTheWaitEndsTheArms(t *testing.T) {
	url := misbehaving(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3600")
		http.Error(w, `{"error":{"code":429,"message":"too many requests"}}`, http.StatusTooManyRequests)
	})
	status, err, _ := runOpened(t, llamaPlan(t, url, 0, 2, time.Minute))
	if !errors.Is(err, ErrServerLost) || status != session.StatusFailed || !strings.Contains(err.Error(), "asked to be left alone for 1h0m0s (Retry-After on greedy trial 1), longer than --server-wait 1m0s") {
		t.Errorf("status %s, error %v", status, err)
	}
}
