// Package replay is test support: it serves responses recorded from real servers
// (../shared/fixtures) from a local httptest server, for backend tests.
package replay

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tokentop/tokentop/backends"
)

// FixturesDir finds ../shared/fixtures beside the repository root.
func FixturesDir(t testing.TB) string {
	t.Helper()
	fixtures := filepath.Join(repoRoot(t), "..", "shared", "fixtures")
	if _, err := os.Stat(fixtures); err != nil {
		t.Fatalf("recorded fixtures not found at %s: check out ../shared beside the repository (%v)", fixtures, err)
	}
	return fixtures
}

// repoRoot is the folder of go.mod above the test's folder.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
	return dir
}

// Exchange is one recorded request/response.
type Exchange struct {
	Status      int
	ContentType string
	Body        []byte
}

// Load reads fixture name (e.g. "ollama/api_version").
func Load(t testing.TB, name string) Exchange {
	t.Helper()
	return LoadFile(t, filepath.Join(FixturesDir(t), name))
}

// Reasoning reads one of the hand-written reasoning, tool-call and
// bundled-chunk streams in backends/testdata/reasoning (its README names
// the source each follows), by the same rules as Load.
func Reasoning(t testing.TB, name string) Exchange {
	t.Helper()
	return LoadFile(t, filepath.Join(repoRoot(t), "backends", "testdata", "reasoning", name))
}

// LoadFile reads the exchange whose files start with base (base.body,
// base.headers.txt).
func LoadFile(t testing.TB, base string) Exchange {
	t.Helper()
	body, err := os.ReadFile(base + ".body")
	if err != nil {
		t.Fatal(err)
	}
	headers, err := os.ReadFile(base + ".headers.txt")
	if err != nil {
		t.Fatal(err)
	}
	ex := Exchange{Body: body, Status: 200}
	sc := bufio.NewScanner(strings.NewReader(string(headers)))
	if sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 1 {
			ex.Status, _ = strconv.Atoi(fields[1])
		}
	}
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.EqualFold(k, "Content-Type") {
			ex.ContentType = strings.TrimSpace(v)
		}
	}
	return ex
}

// Route maps "METHOD /path" to how to answer it.
type Route map[string]http.HandlerFunc

// Serve answers a route with a recorded exchange, flushing the body line
// by line as a streaming server would.
func Serve(ex Exchange) http.HandlerFunc { return Paced(ex, 0) }

// Paced is Serve with a pause before each line, for a stream that takes
// time, as a real generation does.
func Paced(ex Exchange, gap time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if ex.ContentType != "" {
			w.Header().Set("Content-Type", ex.ContentType)
		}
		w.WriteHeader(ex.Status)
		flusher, _ := w.(http.Flusher)
		for _, line := range strings.SplitAfter(string(ex.Body), "\n") {
			if gap > 0 {
				select {
				case <-time.After(gap):
				case <-r.Context().Done():
					return
				}
			}
			w.Write([]byte(line))
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
}

// WithoutEnd is ex with its body cut before its last frame (line): the
// stream as far as a server killed before its final message sent it. A
// client stops reading at the final message, so cutting the connection
// after it cuts nothing.
func (ex Exchange) WithoutEnd() Exchange {
	body := strings.TrimRight(string(ex.Body), "\n")
	if i := strings.LastIndexByte(body, '\n'); i >= 0 {
		ex.Body = []byte(body[:i+1])
	}
	return ex
}

// GenerateHeld sends req through a backend of kind (cfg.URL is a path
// after the test server's address) to a server that answers route
// ("POST /completion") with ex and then keeps the connection open until
// the client closes it. Its deadline, 5 s, only bounds the test: a client
// that reads on past the final message waits for it and fails.
func GenerateHeld(t testing.TB, kind backends.Kind, cfg backends.Config, route string, ex Exchange, req backends.Request) (backends.Result, error) {
	t.Helper()
	srv := NewServer(t, Route{route: func(w http.ResponseWriter, r *http.Request) {
		Serve(ex)(w, r)
		<-r.Context().Done()
	}})
	cfg.URL = srv.URL + cfg.URL
	b, err := kind.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return b.Generate(ctx, req, func(int, backends.TokenKind) {})
}

// Cut sends the recorded body under chunked encoding and then drops the
// connection without the final zero-length chunk: what a client sees when
// the server process is killed mid-stream.
func Cut(ex Exchange) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: " + ex.ContentType + "\r\nTransfer-Encoding: chunked\r\n\r\n")
		buf.WriteString(strconv.FormatInt(int64(len(ex.Body)), 16) + "\r\n")
		buf.Write(ex.Body)
		buf.WriteString("\r\n")
		buf.Flush()
	}
}

// NewServer starts a loopback server for routes; unknown routes are 404.
func NewServer(t testing.TB, routes Route) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(routes.handler())
	t.Cleanup(srv.Close)
	return srv
}

func (routes Route) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, ok := routes[r.Method+" "+r.URL.Path]; ok {
			h(w, r)
			return
		}
		http.NotFound(w, r)
	})
}

// ClosedURL returns a loopback URL on which nothing listens.
func ClosedURL(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// Drop takes the request and closes the connection without a byte of
// answer, as a server does that crashes on every request or drops what
// it is sent; with reset the close is a TCP reset.
func Drop(reset bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		if tcp, ok := conn.(*net.TCPConn); ok && reset {
			tcp.SetLinger(0)
		}
		conn.Close()
	}
}

// Hang takes the request and does not answer until the client gives up
// (at most a minute, so that a test's server can always close): a server
// whose health check passes while no request is served (as llama-server
// after SIGTERM).
func Hang() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// Go's server notices a client that hangs up only once the
		// request's body has been read.
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	}
}

// ClosesKeptAlive wraps a server's handler so that a connection that has
// answered one POST is closed, without a byte, when the next request
// arrives on it: the client always loses the race against a server that
// closes each connection right after a streamed answer although its
// headers said keep-alive (llama-server b10470, ../shared/fixtures/README.md).
func ClosesKeptAlive(srv *httptest.Server) {
	type served struct{}
	inner := srv.Config.Handler
	srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, served{}, new(atomic.Bool))
	}
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answered := r.Context().Value(served{}).(*atomic.Bool)
		if answered.Load() {
			Drop(false)(w, r)
			return
		}
		if r.Method == http.MethodPost {
			answered.Store(true)
		}
		inner.ServeHTTP(w, r)
	})
}

// NewUnstartedServer is NewServer before Start, so that its behaviour can
// be changed first (ClosesKeptAlive).
func NewUnstartedServer(t testing.TB, routes Route) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(routes.handler())
	t.Cleanup(srv.Close)
	return srv
}

// Chunks records what a backend reported of a stream's chunks: each one's
// kind as a letter (a answer, r reasoning, t tool call) and its tokens.
type Chunks struct {
	Kinds  string
	Tokens []int
}

// OnChunk is a backends.OnChunk that records into c.
func (c *Chunks) OnChunk(tokens int, kind backends.TokenKind) {
	c.Kinds += string("art"[kind])
	c.Tokens = append(c.Tokens, tokens)
}
