// Package backends defines the one interface every inference backend
// implements. Backends only talk to their server and report what it says:
// they know nothing of files, the UI or statistics, and they never keep a
// clock of their own. The runner stamps each chunk the moment OnChunk is
// called.
package backends

import (
	"context"
	"math"
)

// Request is one generation.
type Request struct {
	Model       string
	Prompt      string
	MaxTokens   int
	Temperature float64 // 0 means greedy
	TopK        int     // 0 means off
	TopP        float64 // 0 means off (1.0 is sent to the server)
	MinP        float64 // 0 means off
	Seed        int64
}

// OnChunk is called as each chunk of generated text arrives. tokens is how
// many tokens the chunk carries when the server says so, else 1. It must be
// called before any other work on the chunk's payload beyond parsing it.
type OnChunk func(tokens int)

// Result is what the server reported about a finished generation. Counts
// are -1 and durations NaN when the server did not report them.
type Result struct {
	StopReason      string // "length", "stop", or the server's own word
	PromptTokens    int
	OutputTokens    int // the server's own count of generated tokens
	ServerLoadMs    float64
	ServerPrefillMs float64
	ServerDecodeMs  float64
}

// NewResult returns a Result with every field unknown.
func NewResult() Result {
	nan := math.NaN()
	return Result{PromptTokens: -1, OutputTokens: -1, ServerLoadMs: nan, ServerPrefillMs: nan, ServerDecodeMs: nan}
}

// Info is what a probe learned about a server and the requested model.
// Empty strings mean the server did not say.
type Info struct {
	Kind          string
	URL           string
	ServerVersion string
	Model         string // the model the server will actually use
	Digest        string
	Quantization  string
	Models        []string // what the server offers, when it lists them
	// Details are backend-specific facts worth keeping with a session
	// (the builtin engine's shape, weight source, threads, ...).
	Details map[string]string
}

// Backend is one inference server (or engine) that tokentop measures.
type Backend interface {
	// Probe checks the server is reachable and, when model is not empty,
	// that it can serve that model. Its error is a one-line explanation.
	Probe(ctx context.Context, model string) (Info, error)
	// Generate streams one completion, calling onChunk as text arrives.
	// Cancelling ctx aborts the request promptly. On error the Result holds
	// whatever the server reported before the failure.
	Generate(ctx context.Context, req Request, onChunk OnChunk) (Result, error)
}

// Config is how a user points tokentop at a backend.
type Config struct {
	URL string
	// APIKey is sent as a bearer token where the protocol takes one. It
	// comes from an environment variable and is never written to a file.
	APIKey string
	// Endpoint picks an API flavour where a backend has several
	// (openai: "completions" or "chat").
	Endpoint string
	// Threads and DType apply to in-process engines (builtin): worker
	// count (0 = one per core) and weight format ("f32", "q8_0").
	Threads int
	DType   string
}

// Kind describes one backend implementation for the registry.
type Kind struct {
	Name        string
	Description string
	DefaultURL  string
	New         func(Config) (Backend, error)
	// InProcess backends run inside tokentop: they have no URL, and
	// Config.Threads and Config.DType tune them.
	InProcess bool
	// ModelOptional backends can run without a model name: they have a
	// default, or serve the one model they were started with.
	ModelOptional bool
}

// NormalizeStopReason maps the servers' words for why generation stopped
// onto "length" (token limit) and "stop" (end of sequence or stop word), so
// that sessions from different servers compare; other words pass through.
func NormalizeStopReason(s string) string {
	switch s {
	case "length", "limit", "max_tokens":
		return "length"
	case "stop", "eos", "word", "end_turn":
		return "stop"
	}
	return s
}
