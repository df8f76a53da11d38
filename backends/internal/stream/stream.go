// Package stream holds the HTTP and framing code shared by the HTTP
// backends: bounded line reading, Server-Sent Events, error bodies and
// human-readable connection errors.
package stream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/tokentop/tokentop/backends"
)

// MaxLine bounds one NDJSON line or SSE field. A stream chunk is a few
// hundred bytes; anything near this is a broken or hostile server, and
// reading it whole would let it exhaust memory.
const MaxLine = 1 << 20

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// ErrTruncated means the stream ended without the server's final message.
var ErrTruncated = errors.New("stream ended before the server's final message (connection closed or generation aborted)")

// Client is shared by the HTTP backends. Compression is off because a
// gzip layer would buffer stream chunks and distort arrival times; there is
// no client timeout because each trial carries its own deadline. Idle
// connections are dropped after idleTimeout, before llama-server's own 5 s
// keep-alive limit closes them under a request. A load run keeps up to
// backends.MaxConcurrency requests in flight on one host; with fewer idle
// connections kept (Go's default is 2) every request past them would open
// a new connection, and the handshake would land in its TTFT.
var Client = &http.Client{Transport: &http.Transport{
	Proxy:               http.ProxyFromEnvironment,
	DisableCompression:  true,
	MaxIdleConnsPerHost: backends.MaxConcurrency,
	IdleConnTimeout:     idleTimeout,
}}

const idleTimeout = 4 * time.Second

// Lines calls fn with each line of r (without the line ending), reading at
// most MaxLine bytes per line. A final line without a newline is passed on
// too. It returns fn's first error, or ErrTruncated-wrapped read errors.
func Lines(r io.Reader, fn func(line []byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long)+len(chunk) > MaxLine {
				return fmt.Errorf("stream line longer than %d KiB: not a valid stream", MaxLine>>10)
			}
			long = append(long, chunk...)
			continue
		}
		line := chunk
		if long != nil {
			line = append(long, chunk...)
			long = nil
		}
		if len(line) > MaxLine {
			return fmt.Errorf("stream line longer than %d KiB: not a valid stream", MaxLine>>10)
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) > 0 {
			if ferr := fn(line); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading stream: %w", err)
		}
	}
}

// SSE calls fn with the payload of each "data:" line in r. Every server
// tokentop speaks to sends one JSON object per data line, so acting on the
// line itself (not waiting for the blank line that ends the event) keeps
// arrival stamps as early as possible. Comments (":") and other fields are
// skipped.
func SSE(r io.Reader, fn func(data []byte) error) error {
	return Lines(r, func(line []byte) error {
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			return nil
		}
		return fn(bytes.TrimPrefix(data, []byte(" ")))
	})
}

// PostJSON sends body as JSON and returns the response when its status is
// 2xx; otherwise the error carries the server's own message.
func PostJSON(ctx context.Context, url, apiKey string, body any) (*http.Response, error) {
	payload, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return do(req, apiKey)
}

// WithFields returns body (a struct) as a JSON object with fields added:
// how a target's options join the request tokentop builds. With no fields
// body is returned as it is, byte for byte the recorded request. fields
// hold scalars (backends.Kind.CheckOptions, which every New calls).
func WithFields(body any, fields map[string]any) any {
	if len(fields) == 0 {
		return body
	}
	data, err := json.Marshal(body)
	if err != nil {
		panic(err) // a request struct of plain fields: cannot fail
	}
	merged := map[string]any{}
	if err := json.Unmarshal(data, &merged); err != nil {
		panic(err)
	}
	maps.Copy(merged, fields)
	return merged
}

// Decoder reads one backend's streamed answer, reporting chunks as they
// arrive.
type Decoder func(body io.Reader, onChunk backends.OnChunk) (backends.Result, error)

// Generate posts body to url and decodes the streamed answer. A request
// that fails before any stream arrives returns a Result with every field
// unknown.
func Generate(ctx context.Context, url, apiKey string, body any, decode Decoder, onChunk backends.OnChunk) (backends.Result, error) {
	resp, err := PostJSON(ctx, url, apiKey, body)
	if err != nil {
		return backends.NewResult(), err
	}
	defer resp.Body.Close()
	return decode(resp.Body, onChunk)
}

// GetJSON fetches url and decodes its JSON body into out.
func GetJSON(ctx context.Context, url, apiKey string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := do(req, apiKey)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(out); err != nil {
		return fmt.Errorf("%s: response is not the JSON expected: %v", url, err)
	}
	return nil
}

func do(req *http.Request, apiKey string) (*http.Response, error) {
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := Client.Do(req)
	if err != nil {
		return nil, Describe(err, req.URL.String())
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, errorFromBody(resp)
	}
	return resp, nil
}

// HTTPError is a non-2xx answer, with the server's message when it gave one.
type HTTPError struct {
	Status  int
	Message string
}

// Unwrap gives the kind of failure the status means: 503 is a server
// not ready yet (llama-server while it loads the model), 429 one
// overloaded, any other 4xx a request refused.
func (e *HTTPError) Unwrap() error {
	switch {
	case e.Status == http.StatusServiceUnavailable:
		return backends.ErrNotReady
	case e.Status == http.StatusTooManyRequests:
		return backends.ErrOverloaded
	case e.Status/100 == 4:
		return backends.ErrBadRequest
	}
	return nil
}

func (e *HTTPError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("HTTP %d %s", e.Status, http.StatusText(e.Status))
	}
	return fmt.Sprintf("HTTP %d: %s", e.Status, e.Message)
}

func errorFromBody(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return &HTTPError{Status: resp.StatusCode, Message: ErrorMessage(body)}
}

// Unmarshal decodes one stream frame (an NDJSON line or an SSE data
// payload) into v, with an error that quotes the frame's start.
func Unmarshal(frame []byte, v any) error {
	if err := json.Unmarshal(frame, v); err != nil {
		return fmt.Errorf("stream data is not JSON: %.80q", frame)
	}
	return nil
}

// FrameError is the error a frame reports in its "error" field (given
// raw), nil when the field is absent or null. A server that fails after
// the 200 header can only say so this way.
func FrameError(field json.RawMessage, frame []byte) error {
	if len(field) == 0 || string(field) == "null" {
		return nil
	}
	return fmt.Errorf("server error mid-stream: %s", ErrorMessage(frame))
}

// ErrorMessage extracts a one-line message from an error payload in any of
// the servers' shapes: {"error": "..."} (Ollama), {"error": {"message":
// ...}} (llama-server, OpenAI), or plain text.
func ErrorMessage(body []byte) string {
	var shaped struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &shaped) == nil {
		var s string
		if json.Unmarshal(shaped.Error, &s) == nil && s != "" {
			return s
		}
		var obj struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(shaped.Error, &obj) == nil && obj.Message != "" {
			return obj.Message
		}
		if shaped.Message != "" {
			return shaped.Message
		}
	}
	text := strings.Join(strings.Fields(string(body)), " ")
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	return text
}

// Describe turns an error met before the response headers into one line a
// user can act on; a server that gave no answer at all is
// backends.ErrUnreachable.
func Describe(err error, url string) error {
	var opErr *net.OpError
	unreachable := func(format string, args ...any) error {
		return &backends.Failure{Kind: backends.ErrUnreachable, Err: fmt.Errorf(format, args...)}
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return err
	case errors.Is(err, syscall.ECONNREFUSED):
		return unreachable("cannot connect to %s: connection refused (is the server running?)", url)
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return unreachable("cannot connect to %s: %v", url, opErr.Err)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), connectionReset(err):
		// A server killed or restarted under the request, or a kept-alive
		// connection it had already closed.
		return unreachable("%s closed the connection before answering (did the server stop or restart?)", url)
	}
	return fmt.Errorf("%s: %w", url, err)
}

// End says how a stream ended: a read error is classified by ReadErr, and
// a clean end without the server's final message is ErrTruncated.
func End(readErr error, sawFinal bool) error {
	switch {
	case readErr != nil:
		return ReadErr(readErr)
	case !sawFinal:
		return ErrTruncated
	}
	return nil
}

// ReadErr classifies an error met while reading a stream body: a cut
// connection is ErrTruncated, context errors pass through.
func ReadErr(err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || connectionReset(err) {
		return ErrTruncated
	}
	return err
}

// connectionReset reports a connection the peer reset, on any OS.
func connectionReset(err error) bool {
	for _, errno := range resetErrnos {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}
