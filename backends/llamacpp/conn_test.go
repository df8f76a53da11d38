package llamacpp

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/backends/replay"
)

// TestAKeptAliveConnectionClosedUnderARequestIsStale: a server closes
// each connection once it has streamed an answer, although its headers
// said keep-alive. A request that goes out on such a connection reached
// no server: it is ErrStale (the runner sends it again), and one asked
// to go on a connection of its own gets a new one.
func TestAKeptAliveConnectionClosedUnderARequestIsStale(t *testing.T) {
	srv := replay.NewUnstartedServer(t, replay.Route{"POST /completion": replay.Serve(replay.Load(t, "llamacpp/completion_t0_stream"))})
	replay.ClosesKeptAlive(srv)
	srv.Start()
	b, _ := Kind.Open(backends.Config{URL: srv.URL})
	var got []string
	for _, fresh := range []bool{false, false, true, false, false} {
		res, err := b.Generate(context.Background(), backends.Request{Prompt: "Once upon a time", MaxTokens: 32, FreshConnection: fresh}, func(int, backends.TokenKind) {})
		switch {
		case errors.Is(err, backends.ErrStale) && strings.Contains(err.Error(), srv.URL+"/completion had closed the kept-alive connection this request went out on"):
			got = append(got, "stale on "+res.Connection)
		case err == nil && res.OutputTokens == 32:
			got = append(got, res.Connection)
		default:
			t.Fatalf("request %d: %v (%+v)", len(got)+1, err, res)
		}
	}
	if s := strings.Join(got, ", "); s != "new, stale on reused, new, new, stale on reused" {
		t.Errorf("connections: %s", s)
	}
}

// TestMisbehavingServersAreClassified: each way a server can fail before
// answering is named with the URL that failed, and classified so that the
// runner can choose (wait for one that is not there, count one that
// drops requests, never follow one elsewhere).
func TestMisbehavingServersAreClassified(t *testing.T) {
	var elsewhere atomic.Int32
	other := replay.NewServer(t, replay.Route{"POST /completion": func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }})
	dead := replay.ClosedURL(t)
	for _, c := range []struct {
		name    string
		handler http.HandlerFunc
		kind    error
		want    string
		wait    time.Duration
	}{
		{"closes", replay.Drop(false), backends.ErrDropped, "/completion closed the connection before answering", 0},
		{"resets", replay.Drop(true), backends.ErrDropped, "/completion closed the connection before answering", 0},
		{"redirects elsewhere", http.RedirectHandler(other.URL+"/completion", http.StatusTemporaryRedirect).ServeHTTP, backends.ErrBadRequest,
			"answered with a redirect to " + other.URL + "/completion; tokentop measures only the server it is pointed at", 0},
		{"redirects to a dead host", http.RedirectHandler(dead+"/completion", http.StatusTemporaryRedirect).ServeHTTP, backends.ErrBadRequest,
			"answered with a redirect to " + dead + "/completion", 0},
		{"429 with Retry-After", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "7")
			http.Error(w, `{"error":{"message":"busy"}}`, http.StatusTooManyRequests)
		}, backends.ErrOverloaded, "HTTP 429: busy", 7 * time.Second},
		{"503 with a date", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", time.Now().Add(time.Hour+time.Minute).UTC().Format(http.TimeFormat))
			http.Error(w, `{"error":{"message":"Loading model"}}`, http.StatusServiceUnavailable)
		}, backends.ErrNotReady, "HTTP 503: Loading model", time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := replay.NewServer(t, replay.Route{"POST /completion": c.handler})
			b, _ := Kind.Open(backends.Config{URL: srv.URL})
			res, err := b.Generate(context.Background(), backends.Request{Prompt: "x", MaxTokens: 4}, func(int, backends.TokenKind) {})
			if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.want) || res.Connection == "" || backends.RetryAfter(err) != c.wait {
				t.Errorf("error %v (kind %v, wait %v), connection %q; want %v containing %q, wait %v", err, errors.Is(err, c.kind), backends.RetryAfter(err), res.Connection, c.kind, c.want, c.wait)
			}
		})
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the other server was sent %d requests", n)
	}
	b, _ := Kind.Open(backends.Config{URL: dead})
	res, err := b.Generate(context.Background(), backends.Request{Prompt: "x", MaxTokens: 4}, func(int, backends.TokenKind) {})
	if !errors.Is(err, backends.ErrUnreachable) || res.Connection != backends.ConnectionNone {
		t.Errorf("no server: %v, connection %q", err, res.Connection)
	}
}

// TestAConnectionIsKeptAfterTheFinalMessage: reading stops at the final
// event, and what the body has left (its chunked end) is still read, so
// the kept-alive connection goes back to the pool; closed early, every
// request opened a connection of its own, its handshake in the TTFT.
func TestAConnectionIsKeptAfterTheFinalMessage(t *testing.T) {
	srv := replay.NewServer(t, replay.Route{"POST /completion": replay.Serve(replay.Load(t, "llamacpp/completion_t0_stream"))})
	b, _ := Kind.Open(backends.Config{URL: srv.URL})
	var got []string
	for range 5 {
		res, err := b.Generate(context.Background(), backends.Request{Prompt: "x", MaxTokens: 32}, func(int, backends.TokenKind) {})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, res.Connection)
	}
	if s := strings.Join(got, ", "); s != "new, reused, reused, reused, reused" {
		t.Errorf("connections: %s", s)
	}
}
