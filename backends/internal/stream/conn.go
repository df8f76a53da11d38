package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/backends/untrusted"
)

// Conn is one backend's HTTP connections to its server. Compression is
// off because a gzip layer would buffer stream chunks and distort arrival
// times; there is no client timeout because each trial carries its own
// deadline. Idle connections are dropped after idleTimeout, before
// llama-server's own 5 s keep-alive limit closes them under a request.
// Every connection a run had in flight at once is kept for the next
// requests (Go's default keeps 2 per host): a closed loop keeps up to
// backends.MaxConcurrency in flight, an open loop as many as its rate
// and the server's speed make, and a request past the connections kept
// would open a new one, its handshake landing in its TTFT. A request may ask for a connection of its own
// (backends.Request.FreshConnection): the runner's answer to a server
// that closes kept-alive connections under requests (backends.ErrStale).
type Conn struct {
	apiKey string
	// query is the server address's own query (?api_key=…), sent after
	// every path a backend appends (SplitQuery).
	query  string
	pooled *http.Client
	fresh  *http.Client // one connection per request, closed after it
}

// SplitQuery is a server's address without its query, and the query: the
// backends append their paths to the first, and Conn sends the second
// after them ("http://h/v1?api_key=K" and "/completions" make
// "http://h/v1/completions?api_key=K", never ".../v1?api_key=K/completions").
func SplitQuery(raw string) (base, query string) {
	base, query, _ = strings.Cut(raw, "?")
	return strings.TrimRight(base, "/"), query
}

const idleTimeout = 4 * time.Second

// keptPerHost is more connections than a run can hold open at once: the
// process's open-files limit bounds them first.
const keptPerHost = 1 << 20

// NewConn makes the connections of a backend whose requests carry apiKey
// (as a bearer token; "" sends none) and the server address's query.
func NewConn(apiKey, query string) *Conn {
	client := func(keepAlive bool) *http.Client {
		return &http.Client{
			Transport: &http.Transport{
				Proxy:               http.ProxyFromEnvironment,
				DisableCompression:  true,
				DisableKeepAlives:   !keepAlive,
				MaxIdleConnsPerHost: keptPerHost,
				IdleConnTimeout:     idleTimeout,
			},
			CheckRedirect: sameServer,
		}
	}
	return &Conn{apiKey: apiKey, query: query, pooled: client(true), fresh: client(false)}
}

// CloseIdleConnections closes the kept connections no request is using.
func (c *Conn) CloseIdleConnections() { c.pooled.CloseIdleConnections() }

// errRedirected begins the error of a redirect to another server, which
// is refused: every trial would measure that other server while the
// session named this one.
var errRedirected = errors.New("redirected to another server")

// sameServer lets a redirect through only to the same scheme, host and
// port.
func sameServer(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return &backends.Failure{Kind: backends.ErrBadRequest, Err: fmt.Errorf("%w: %s answered with a redirect to %s; tokentop measures only the server it is pointed at, so point --url at that server if it is the one to measure",
			errRedirected, untrusted.URL(first.String()), untrusted.URL(req.URL.String()))}
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// Generate posts body to url (on a connection of its own when fresh) and
// decodes the streamed answer. A request that fails before any stream
// arrives returns a Result with every field unknown but Connection.
func (c *Conn) Generate(ctx context.Context, url string, body any, fresh bool, decode Decoder, onChunk backends.OnChunk) (backends.Result, error) {
	ctx, cancel := context.WithCancel(ctx) // cancel ends a drain that waits too long
	defer cancel()
	resp, conn, err := c.post(ctx, url, body, fresh)
	if err != nil {
		res := backends.NewResult()
		res.Connection = conn
		return res, err
	}
	defer resp.Body.Close()
	res, err := decode(resp.Body, onChunk)
	res.Connection = conn
	if err == nil {
		drain(resp.Body, cancel)
	}
	return res, err
}

// drainWait bounds how long the rest of a body is waited for after its
// final message, and maxDrain how much of it is read.
const (
	drainWait = 20 * time.Millisecond
	maxDrain  = 64 << 10
)

// drain reads what a body has left after the final message (its chunked
// end, usually in the same read), so that Go's transport sees its end and
// keeps the connection for the next request: a body closed before its end
// costs the connection, and the next request's handshake lands in its
// TTFT. A server that holds the body open past drainWait is cut off
// (cancel), its connection dropped, rather than the trial held.
func drain(body io.Reader, cancel context.CancelFunc) {
	stop := time.AfterFunc(drainWait, cancel)
	defer stop.Stop()
	io.Copy(io.Discard, io.LimitReader(body, maxDrain))
}

// PostJSON sends body as JSON and returns the response when its status is
// 2xx; otherwise the error carries the server's own message.
func (c *Conn) PostJSON(ctx context.Context, url string, body any) (*http.Response, error) {
	resp, _, err := c.post(ctx, url, body, false)
	return resp, err
}

// MaxJSONBody bounds a server's JSON answer read whole (a probe's, a
// model's description): one that goes on past it is not the JSON
// expected.
const MaxJSONBody = 16 << 20

// GetJSON fetches url and decodes its JSON body into out.
func (c *Conn) GetJSON(ctx context.Context, url string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, _, err := c.do(req, false)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, MaxJSONBody)).Decode(out); err != nil {
		return fmt.Errorf("%s: response is not the JSON expected: %v", untrusted.URL(url), err)
	}
	return nil
}

func (c *Conn) post(ctx context.Context, url string, body any, fresh bool) (*http.Response, string, error) {
	payload, err := json.Marshal(body)
	if err != nil {
		return nil, backends.ConnectionNone, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return nil, backends.ConnectionNone, err
	}
	req.Header.Set("Content-Type", "application/json")
	return c.do(req, fresh)
}

// do sends req, on a connection of its own when fresh, and says on which
// connection (backends.Connection*). A kept-alive connection that the
// server had closed before any byte of answer is ErrStale: Go's
// transport sends such a request again itself only when it may repeat
// it, and a POST is not one; the runner decides.
func (c *Conn) do(req *http.Request, fresh bool) (*http.Response, string, error) {
	if c.query != "" {
		req.URL.RawQuery = strings.TrimPrefix(req.URL.RawQuery+"&"+c.query, "&")
	}
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	client := c.pooled
	if fresh {
		client = c.fresh
	}
	resp, reused, err := send(client, req)
	conn := backends.ConnectionNew
	if reused {
		conn = backends.ConnectionReused
	}
	switch {
	case err != nil && reused && closedBeforeAnswer(err):
		return nil, conn, &backends.Failure{Kind: backends.ErrStale,
			Err: fmt.Errorf("%s had closed the kept-alive connection this request went out on, before any answer", failedURL(err, req.URL.String()))}
	case err != nil:
		if neverSent(err) {
			conn = backends.ConnectionNone
		}
		return nil, conn, Describe(err, req.URL.String())
	case resp.StatusCode/100 != 2:
		defer resp.Body.Close()
		return nil, conn, errorFromBody(resp)
	}
	return resp, conn, nil
}

// send does req on client, reporting whether it went out on a reused
// connection.
func send(client *http.Client, req *http.Request) (*http.Response, bool, error) {
	var reused atomic.Bool
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { reused.Store(info.Reused) }}
	resp, err := client.Do(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
	return resp, reused.Load(), err
}

// closedBeforeAnswer reports a connection the server closed or reset
// before any byte of the response: the request may never have been read.
func closedBeforeAnswer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || connectionReset(err) ||
		errors.Is(err, syscall.EPIPE) || strings.Contains(err.Error(), "server closed idle connection")
}

// neverSent reports a failure that kept the request from reaching the
// server: no connection could be made.
func neverSent(err error) bool {
	var opErr *net.OpError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &opErr) && opErr.Op == "dial"
}

// failedURL is the URL whose request failed, as it may be shown
// (untrusted.URL: no password, no key in its query): after a redirect, the one it
// led to, not the one first asked.
func failedURL(err error, asked string) string {
	var uerr *url.Error
	if errors.As(err, &uerr) && uerr.URL != "" {
		return untrusted.URL(uerr.URL)
	}
	return untrusted.URL(asked)
}
