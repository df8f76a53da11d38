// Package backends defines the one interface every inference backend
// implements. Backends only talk to their server and report what it says:
// they know nothing of files, the UI or statistics, and they never keep a
// clock of their own. The runner stamps each chunk the moment OnChunk is
// called.
package backends

import (
	"context"
	"errors"
	"math"
	"time"
)

// Kinds of failure. Backends wrap their errors into one of these (see
// Failure) so that the runner can choose what to do (wait, back off,
// re-probe, give up) without reading messages.
var (
	// ErrUnreachable: no connection could be made (refused, no route):
	// the request never reached a server.
	ErrUnreachable = errors.New("server unreachable")
	// ErrDropped: the server took the connection, then closed or reset it
	// before any answer (it stopped, or it drops what it is sent).
	ErrDropped = errors.New("connection dropped")
	// ErrStale: the request went out on a kept-alive connection that the
	// server had already closed, and no byte of answer came: it most
	// likely never reached the server (one that closes each connection
	// right after an answer, whatever its headers said). Sending it again
	// on a connection of its own (Request.FreshConnection) is safe.
	ErrStale = errors.New("kept-alive connection closed before any answer")
	// ErrNotReady: the server answers but cannot serve yet (HTTP 503:
	// llama-server's "Loading model" to a probe, or a server shedding
	// load); waiting may help.
	ErrNotReady = errors.New("server not ready")
	// ErrOverloaded: the server refused for load (HTTP 429).
	ErrOverloaded = errors.New("server overloaded")
	// ErrBadRequest: the server refused the request itself (HTTP 4xx);
	// sending it again will not help.
	ErrBadRequest = errors.New("request refused")
	// ErrClient: the client could not send the request for a limit of
	// its own (open files, local ports): nothing reached the server, and
	// nothing of it is the server's doing. Its words begin with
	// ClientFailure, by which a session's files tell it apart.
	ErrClient = errors.New("client could not send the request")
)

// ClientFailure begins the words of every ErrClient failure.
const ClientFailure = "the client could not"

// RetryAfter is how long the server asked, with err, to be left alone
// before the next request (HTTP Retry-After on a 429 or 503); 0 when it
// did not say.
func RetryAfter(err error) time.Duration {
	var hint interface{ RetryAfter() time.Duration }
	if errors.As(err, &hint) {
		return hint.RetryAfter()
	}
	return 0
}

// Failure is an error of a known kind: its text is Err's, and errors.Is
// matches both Kind and whatever Err wraps.
type Failure struct {
	Kind error
	Err  error
}

func (f *Failure) Error() string   { return f.Err.Error() }
func (f *Failure) Unwrap() []error { return []error{f.Kind, f.Err} }

// Request is one generation.
type Request struct {
	Model  string
	Prompt string
	// Messages, when set, are a conversation that chat endpoints send as
	// it is; Prompt is then its text, for endpoints that take text.
	Messages    []Message
	MaxTokens   int
	Temperature float64 // 0 means greedy
	TopK        int     // 0 means off
	TopP        float64 // 0 means off (1.0 is sent to the server)
	MinP        float64 // 0 means off
	Seed        int64
	// PromptCache lets the server reuse a cached prompt prefix; false asks
	// it to evaluate the whole prompt, where its API lets a client say so.
	PromptCache bool
	// IgnoreEOS asks for exactly MaxTokens tokens, past the model's end of
	// sequence, so that output length does not differ between arms
	// (Kind.FixedLength says whether the server can be told).
	IgnoreEOS bool
	// FreshConnection sends the request on a connection of its own, not
	// a kept-alive one (see ErrStale).
	FreshConnection bool
	// Think is the arm's thinking switch: "" (the server's default),
	// "true", "false" or an effort ("low", "medium", "high"), sent in the
	// server's own words (see Thinker).
	Think string
	// Replica picks a fleet's replica (Config.Replicas): the request
	// goes to replica Replica modulo their count; ignored by one server.
	Replica int
}

// Tokenizer is a backend that can count text in its model's tokens and
// make text of tokens, as its server does (llama-server's /tokenize and
// /detokenize), for prompts of an exact length.
type Tokenizer interface {
	// Tokenize is text's tokens; special adds those the server adds to a
	// prompt (its BOS).
	Tokenize(ctx context.Context, text string, special bool) ([]int, error)
	// Detokenize is the text of tokens.
	Detokenize(ctx context.Context, tokens []int) (string, error)
}

// IdleCloser is a backend that keeps connections open between requests.
// CloseIdleConnections closes those no request is using: the runner does
// so once a run's requests are done, before it writes the final
// manifest, since a load run's kept connections can hold every file the
// process may open.
type IdleCloser interface {
	CloseIdleConnections()
}

// Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Thinker is a backend that can tell its server whether a reasoning
// model should think.
type Thinker interface {
	// Think says how think goes to the server, in a few words for the
	// manifest, or why it cannot be honoured. It is asked after Probe,
	// whose findings (which server, what the model can do) count.
	Think(think string) (sent string, err error)
}

// ThinkSent is how b sends think, or why it cannot; a backend that is no
// Thinker cannot be told.
func ThinkSent(b Backend, think string) (string, error) {
	if t, ok := b.(Thinker); ok {
		return t.Think(think)
	}
	return "", errors.New("this backend cannot be told whether to think")
}

// TokenKind says what a chunk's tokens are. Every generated token is an
// arrival whatever it is: a reasoning model's thinking is generated (and
// timed) like its answer.
type TokenKind uint8

// Kinds of token.
const (
	// Answer: the reply's text (content, text, response).
	Answer TokenKind = iota
	// Reasoning: thinking before the answer (reasoning_content,
	// reasoning, Ollama's thinking, or text inside <think>…</think>).
	Reasoning
	// ToolCall: a tool call's name or arguments.
	ToolCall
)

// OnChunk is called as each chunk of generated tokens arrives. tokens is
// how many tokens the chunk carries when the server says so, else 1; kind
// is what they are. It must be called before any other work on the
// chunk's payload beyond parsing it.
type OnChunk func(tokens int, kind TokenKind)

// Result is what the server reported about a finished generation. Counts
// are -1 and durations NaN when the server did not report them.
type Result struct {
	StopReason   string // "length", "stop", StopTruncated, or the server's own word
	PromptTokens int
	OutputTokens int // the server's own count of generated tokens
	// CachedTokens is how many prompt tokens came from the server's
	// prompt cache instead of being evaluated.
	CachedTokens    int
	ServerLoadMs    float64
	ServerPrefillMs float64
	ServerDecodeMs  float64
	// Connection is how the request reached the server (Connection*);
	// empty for an in-process engine.
	Connection string
	// ReasoningTokens is the server's own count of reasoning tokens
	// (usage.completion_tokens_details.reasoning_tokens); -1 when it
	// did not say.
	ReasoningTokens int
	// LeadingReasoningChunks is how many of the first chunks, reported
	// as answer, were reasoning after all: an inline </think> closed a
	// reasoning block that no <think> opened (a chat template that opens
	// it in the prompt, as DeepSeek-R1's does).
	LeadingReasoningChunks int
	// ChunkCounts is true when each chunk's token count is known: the
	// server gave it (llama-server's tokens, a usage per chunk) or its
	// protocol sends one token per chunk. Otherwise a chunk counts as one
	// token, and where chunks carried several, gaps are per chunk.
	ChunkCounts bool
	// TokenIDs are the generated tokens' ids in order, where the backend
	// knows them (always the built-in engine); nil where it does not.
	TokenIDs []int
}

// How a request reached its server.
const (
	ConnectionNew    = "new"    // a connection opened for it
	ConnectionReused = "reused" // a kept-alive one
	// ConnectionResent: its kept-alive connection was closed before any
	// answer (ErrStale), so it was sent again on a new one (the caller's
	// word: a backend sends each request once).
	ConnectionResent = "resent"
	// ConnectionNone: no connection could be made; the server never saw it.
	ConnectionNone = "none"
)

// NewResult returns a Result with every field unknown.
func NewResult() Result {
	nan := math.NaN()
	return Result{PromptTokens: -1, OutputTokens: -1, CachedTokens: -1, ReasoningTokens: -1,
		ServerLoadMs: nan, ServerPrefillMs: nan, ServerDecodeMs: nan}
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
	// PromptCacheSwitch is true when the server takes a per-request
	// switch for its prompt cache (Request.PromptCache is honoured).
	PromptCacheSwitch bool
	// NoFixedLength says why this server drops the request to ignore the
	// end of sequence although its kind can send it (Kind.FixedLength);
	// "" where it honours it.
	NoFixedLength string
	// Details are backend-specific facts worth keeping with a session
	// (the builtin engine's shape, weight source, threads, ...).
	Details map[string]string
	// Replicas are a fleet's addresses, as shown (Config.Replicas after
	// the first); nil for one server.
	Replicas []string
	// ContextTokens is the context window a request's prompt and output
	// must fit, where the server says it (llama-server's n_ctx, vLLM's
	// max_model_len, the engine's sequence length); 0 where unknown.
	ContextTokens int
}

// Backend is one inference server (or engine) that tokentop measures.
type Backend interface {
	// Probe checks the server is reachable and, when model is not empty,
	// that it can serve that model. Its error is a one-line explanation.
	Probe(ctx context.Context, model string) (Info, error)
	// Generate streams one completion, calling onChunk as text arrives.
	// Cancelling ctx aborts the request promptly. On error the Result holds
	// whatever the server reported before the failure. It is safe for
	// concurrent calls: a load run keeps several requests in flight.
	Generate(ctx context.Context, req Request, onChunk OnChunk) (Result, error)
}

// Config is how a user points tokentop at a backend.
type Config struct {
	URL string
	// Replicas are a fleet's other addresses: Open makes a backend for
	// each, and a request goes to the one Request.Replica names.
	Replicas []string
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
	// Options are sent with every request (see Target.Options); the
	// runner checks them with Kind.CheckOptions first.
	Options map[string]any
}

// Kind describes one backend implementation for the registry.
type Kind struct {
	Name        string
	Description string
	DefaultURL  string
	New         func(Config) (Backend, error)
	// InProcess backends run inside tokentop: they have no URL, and
	// Config.Threads and Config.DType (one of DTypes) tune them.
	InProcess bool
	DTypes    []string
	// ModelOptional backends can run without a model name: they have a
	// default, or serve the one model they were started with.
	ModelOptional bool
	// FixedLength backends can be told to ignore the end of sequence
	// (Request.IgnoreEOS).
	FixedLength bool
	// OptionsGo says where Config.Options go in a request, for the error
	// of a refused request; empty when the backend takes none.
	OptionsGo string
	// ReservedOptions are the request fields tokentop sets from the arm:
	// an option of that name is refused rather than sent.
	ReservedOptions []string
	// KnownOptions, where not nil, are every option the server reads: one
	// outside them is refused, for a server that would run without it
	// unsaid (Ollama refuses none).
	KnownOptions []string
	// ReasoningRule says how a reasoning model's thinking is told from
	// its answer in this backend's streams, for the manifest.
	ReasoningRule string
	// MetricsPath is where the server serves its Prometheus metrics, from
	// its root ("/metrics"); empty where it has none.
	MetricsPath string
}

// StopTruncated is the stop reason of a generation cut at the end of the
// context window: not the token limit asked for, and not the model's own
// end of sequence.
const StopTruncated = "truncated"

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

// MaxConcurrency is the most requests a closed loop keeps in flight on
// one target, and the highest cap an open loop may set.
const MaxConcurrency = 256

// MaxChunkTokens bounds the tokens a server may say one chunk carries. A
// chunk holds a few (a speculative step, a coalesced delta); a count past
// this is a broken or hostile server's, and taken as said it would make
// the trial's ITL a gap per claimed token (billions of them).
const MaxChunkTokens = 4096
