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
	neturl "net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tokentop/tokentop/backends"
)

// MaxLine bounds one NDJSON line or SSE field. A stream chunk is a few
// hundred bytes; anything near this is a broken or hostile server, and
// reading it whole would let it exhaust memory.
const MaxLine = 1 << 20

// MaxChunkTokens is backends.MaxChunkTokens, for the decoders.
const MaxChunkTokens = backends.MaxChunkTokens

// ChunkCount is the count a chunk said it carries, if it is believable
// (1 to MaxChunkTokens); else 1, and false: the count is not known.
func ChunkCount(said int) (int, bool) {
	if said < 1 || said > MaxChunkTokens {
		return 1, false
	}
	return said, true
}

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// ErrTruncated means the stream ended without the server's final message.
var ErrTruncated = errors.New("stream ended before the server's final message (connection closed or generation aborted)")

// ErrEnd, returned by a frame's callback, stops the reading: the server's
// final message came. A server may keep the connection open after it
// (past "data: [DONE]"), and the trial must not wait for it to close.
var ErrEnd = errors.New("end of stream")

// Lines calls fn with each line of r (without the line ending), reading at
// most MaxLine bytes per line. A final line without a newline is passed on
// too. It returns fn's first error (nil for ErrEnd), or ErrTruncated-wrapped
// read errors.
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
			if ferr := fn(line); errors.Is(ferr, ErrEnd) {
				return nil
			} else if ferr != nil {
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

// HTTPError is a non-2xx answer, with the server's message when it gave
// one, and how long it asked the client to wait (Retry-After; 0 when it
// did not say).
type HTTPError struct {
	Status  int
	Message string
	Wait    time.Duration
}

// RetryAfter is the server's Retry-After (backends.RetryAfter reads it).
func (e *HTTPError) RetryAfter() time.Duration { return e.Wait }

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
	return &HTTPError{Status: resp.StatusCode, Message: ErrorMessage(body), Wait: retryAfter(resp.Header.Get("Retry-After"), time.Now())}
}

// maxRetryAfter bounds a server's Retry-After: the runner's --server-wait
// bounds every wait anyway, and a day-long one is a broken header.
const maxRetryAfter = time.Hour

// retryAfter reads a Retry-After header: seconds, or an HTTP date (RFC
// 9110 §10.2.3); 0 when absent, unreadable or past.
func retryAfter(header string, now time.Time) time.Duration {
	header = strings.TrimSpace(header)
	if header == "" {
		return 0
	}
	var wait time.Duration
	if secs, err := strconv.ParseInt(header, 10, 64); err == nil {
		wait = time.Duration(min(max(secs, 0), int64(maxRetryAfter/time.Second))) * time.Second
	} else if at, err := http.ParseTime(header); err == nil {
		wait = at.Sub(now)
	}
	return min(max(wait, 0), maxRetryAfter)
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
// user can act on, naming the URL that failed (after a redirect, the one
// it led to): a server that could not be reached at all is
// backends.ErrUnreachable, one that took the connection and closed it
// without a word backends.ErrDropped.
func Describe(err error, asked string) error {
	var opErr *net.OpError
	var failure *backends.Failure
	url := failedURL(err, asked)
	kind := func(kind error, format string, args ...any) error {
		return &backends.Failure{Kind: kind, Err: fmt.Errorf(format, args...)}
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &failure): // a redirect refused
		return failure
	case clientLimit(err):
		return kind(backends.ErrClient, "%s open a connection to %s: %v (this process's limit, not the server's: raise ulimit -n, or cap the requests in flight with --max-concurrency)", backends.ClientFailure, url, innermost(err))
	case errors.Is(err, syscall.ECONNREFUSED):
		return kind(backends.ErrUnreachable, "cannot connect to %s: connection refused (is the server running?)", url)
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return kind(backends.ErrUnreachable, "cannot connect to %s: %v", url, opErr.Err)
	case closedBeforeAnswer(err):
		// A server killed or restarted under the request, or one that
		// drops what it is sent.
		return kind(backends.ErrDropped, "%s closed the connection before answering (did the server stop or restart?)", url)
	}
	// A url.Error's own words repeat its URL, query and all: the cause
	// alone follows the URL as it may be shown.
	var uerr *neturl.Error
	if errors.As(err, &uerr) {
		return fmt.Errorf("%s: %w", url, uerr.Err)
	}
	return fmt.Errorf("%s: %w", url, err)
}

// clientLimit reports an error of the client's own limits: no file left
// for a socket, or no local port left to bind.
func clientLimit(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.EADDRNOTAVAIL)
}

// innermost is the error at the end of err's chain of wrapping: "too
// many open files", not the dial's whole sentence.
func innermost(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
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
