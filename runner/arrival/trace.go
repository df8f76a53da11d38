package arrival

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Bounds on a trace file: it is outside input.
const (
	MaxTraceRequests = 1_000_000
	maxTraceLine     = 1 << 20 // bytes; a line holds one request, its prompt included
	maxTraceTokens   = 1 << 20 // input or output length of one request
)

// TraceRequest is one request of a trace: when it came, and what it asked
// for. A Mooncake-style line gives lengths in tokens and the hash ids of
// its prompt's blocks (requests that share an id share that block of
// prefix); a plain line gives the prompt itself and max_tokens.
type TraceRequest struct {
	At           time.Duration // from the trace's first request
	Line         int           // in the file, from 1
	Prompt       string        // the plain form's; empty for lengths
	InputTokens  int           // the Mooncake form's input_length; 0 for the plain form
	OutputTokens int           // output_length, or max_tokens; 0: the profile's
	HashIDs      []int64       // the prompt's prefix blocks, in order
}

// Trace is a file's requests in time order.
type Trace struct {
	File     string
	Requests []TraceRequest
}

// traceLine is a line's fields as JSON has them: timestamp in
// milliseconds (a number), then either form's.
type traceLine struct {
	Timestamp    *float64 `json:"timestamp"`
	InputLength  *int     `json:"input_length"`
	OutputLength *int     `json:"output_length"`
	HashIDs      []int64  `json:"hash_ids"`
	Prompt       *string  `json:"prompt"`
	MaxTokens    *int     `json:"max_tokens"`
}

// ParseTrace reads a JSON Lines trace: one request per line, with
// "timestamp" (ms) and either "input_length", "output_length" and
// optionally "hash_ids" (Mooncake's form) or "prompt" and optionally
// "max_tokens". Timestamps must not fall; the schedule keeps their gaps
// from the first. Blank lines are skipped. An error names the file, the
// line and the field.
func ParseTrace(file string, data []byte) (Trace, error) {
	t := Trace{File: file}
	data = bytes.TrimPrefix(data, []byte("\ufeff")) // a byte-order mark some editors write first
	var first float64
	line := 0
	for len(data) > 0 {
		line++
		var text []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			text, data = data[:i], data[i+1:]
		} else {
			text, data = data, nil
		}
		text = bytes.TrimSpace(text)
		if len(text) == 0 {
			continue
		}
		fail := func(format string, args ...any) (Trace, error) {
			return Trace{}, fmt.Errorf("%s:%d: %s", file, line, fmt.Sprintf(format, args...))
		}
		if len(text) > maxTraceLine {
			return fail("the line is %d bytes; a trace line holds one request, at most %d bytes", len(text), maxTraceLine)
		}
		if len(t.Requests) == MaxTraceRequests {
			return fail("more than %d requests; cut the trace", MaxTraceRequests)
		}
		var l traceLine
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return fail("%s", jsonWords(err))
		}
		if dec.More() {
			return fail("more than one JSON object; write one request per line")
		}
		r := TraceRequest{Line: line, HashIDs: l.HashIDs}
		switch {
		case l.Timestamp == nil:
			return fail("timestamp: missing; give each request its time in milliseconds, e.g. {\"timestamp\": 0, ...}")
		case math.IsNaN(*l.Timestamp) || math.IsInf(*l.Timestamp, 0) || *l.Timestamp < 0 || *l.Timestamp > 1e12:
			return fail("timestamp: %v is not a time in milliseconds from 0 to 1e12", *l.Timestamp)
		}
		if len(t.Requests) == 0 {
			first = *l.Timestamp
		}
		if *l.Timestamp < first+lastAtMs(t.Requests) {
			return fail("timestamp: %v comes before the line above's; a trace runs in time order", *l.Timestamp)
		}
		r.At = time.Duration((*l.Timestamp - first) * float64(time.Millisecond))
		lengths, plain := l.InputLength != nil || l.OutputLength != nil || l.HashIDs != nil, l.Prompt != nil || l.MaxTokens != nil
		switch {
		case lengths && plain:
			return fail("mixes the two forms; give input_length and output_length (and hash_ids), or prompt (and max_tokens)")
		case lengths:
			if l.InputLength == nil || l.OutputLength == nil {
				return fail("input_length and output_length: give both, in tokens")
			}
			if r.InputTokens = *l.InputLength; r.InputTokens < 1 || r.InputTokens > maxTraceTokens {
				return fail("input_length: %d is out of range; use 1 to %d tokens", r.InputTokens, maxTraceTokens)
			}
			r.OutputTokens = *l.OutputLength
		case plain:
			if l.Prompt == nil || strings.TrimSpace(*l.Prompt) == "" {
				return fail("prompt: missing or empty; give the request's prompt text")
			}
			r.Prompt = *l.Prompt
			if l.MaxTokens != nil {
				r.OutputTokens = *l.MaxTokens
			}
		default:
			return fail("neither form: give input_length and output_length (Mooncake's), or prompt")
		}
		if r.OutputTokens < 0 || r.OutputTokens > maxTraceTokens || r.OutputTokens == 0 && !plain {
			return fail("output length %d is out of range; use 1 to %d tokens", r.OutputTokens, maxTraceTokens)
		}
		t.Requests = append(t.Requests, r)
	}
	if len(t.Requests) == 0 {
		return Trace{}, fmt.Errorf("%s: no requests; a trace has one JSON object per line", file)
	}
	return t, nil
}

// lastAtMs is the last request's time from the first, in ms; 0 for none.
func lastAtMs(rs []TraceRequest) float64 {
	if len(rs) == 0 {
		return 0
	}
	return float64(rs[len(rs)-1].At) / float64(time.Millisecond)
}

// jsonWords says a decoding error without Go's type names.
func jsonWords(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		return fmt.Sprintf("%s: %s where %s belongs", typeErr.Field, typeErr.Value, fieldWants(typeErr.Field))
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("not JSON at byte %d: %v", syntaxErr.Offset, syntaxErr)
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return strings.TrimPrefix(err.Error(), "json: ") + "; a trace line has timestamp, input_length, output_length and hash_ids, or timestamp, prompt and max_tokens"
	}
	return err.Error()
}

// fieldWants says what a trace line's field holds, for errors.
func fieldWants(field string) string {
	switch field {
	case "timestamp":
		return "a time in milliseconds, from 0 to 1e12"
	case "input_length", "output_length", "max_tokens":
		return fmt.Sprintf("a whole number of tokens, from 1 to %s", groupThousands(maxTraceTokens))
	case "hash_ids":
		return "a list of whole numbers (the prompt's block ids)"
	case "prompt":
		return "the prompt's text"
	}
	return "an object of one request"
}

// groupThousands writes n with commas between its thousands.
func groupThousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Schedule is the trace's send times at speed (2 replays it twice as
// fast), from its first request.
func (t Trace) Schedule(speed float64) []time.Duration {
	out := make([]time.Duration, len(t.Requests))
	for i, r := range t.Requests {
		out[i] = time.Duration(float64(r.At) / speed)
	}
	return out
}
