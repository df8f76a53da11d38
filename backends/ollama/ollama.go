// Package ollama talks to Ollama's native API: /api/generate streaming
// NDJSON, with the server's own phase timings from the final line.
package ollama

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/backends/internal/ollamashow"
	"github.com/tokentop/tokentop/backends/internal/stream"
	"github.com/tokentop/tokentop/backends/untrusted"
)

// Kind registers this backend.
var Kind = backends.Kind{
	Name:        "ollama",
	Description: "Ollama native API (/api/generate, NDJSON)",
	DefaultURL:  "http://127.0.0.1:11434",
	New: func(c backends.Config) (backends.Backend, error) {
		if err := backends.CheckOptions(c.Options, reservedOptions, knownOptions); err != nil {
			return nil, err
		}
		base, query := stream.SplitQuery(c.URL)
		return &Backend{url: base, options: c.Options, conn: stream.NewConn(c.APIKey, query)}, nil
	},
	OptionsGo:       `into the request's "options" object (num_ctx, num_gpu, num_thread, ...)`,
	ReservedOptions: reservedOptions,
	KnownOptions:    knownOptions,
	ReasoningRule:   "the thinking field is reasoning (think set); a response that opens with <think> is reasoning up to </think> (" + stream.InlineThinkRule + ")",
}

// reservedOptions are the options tokentop sets from the arm.
var reservedOptions = []string{"num_predict", "temperature", "top_k", "top_p", "min_p", "seed"}

// knownOptions are the names Ollama reads from a request's options (its
// api.Options and api.Runner, which have held these since 0.1 or added
// them since; a few older ones are kept for older servers). Ollama never
// refuses another name: it only logs "invalid option provided" and runs
// without it, while the arm would be labelled with it.
var knownOptions = []string{"num_keep", "seed", "num_predict", "top_k", "top_p", "min_p", "typical_p", "tfs_z",
	"repeat_last_n", "temperature", "repeat_penalty", "presence_penalty", "frequency_penalty", "mirostat",
	"mirostat_tau", "mirostat_eta", "penalize_newline", "stop", "numa", "num_ctx", "num_batch", "num_gpu",
	"main_gpu", "low_vram", "f16_kv", "logits_all", "vocab_only", "use_mmap", "use_mlock", "num_thread"}

// Backend is an Ollama server.
type Backend struct {
	url     string
	options map[string]any // the target's, merged into every request's options
	conn    *stream.Conn
	// shown is what /api/show says of the model.
	shown ollamashow.Model
}

type options struct {
	NumPredict  int     `json:"num_predict"`
	Temperature float64 `json:"temperature"`
	TopK        int     `json:"top_k"`
	TopP        float64 `json:"top_p"`
	MinP        float64 `json:"min_p"`
	Seed        int64   `json:"seed"`
}

type generateRequest struct {
	Model   string `json:"model"`
	Prompt  string `json:"prompt"`
	Stream  bool   `json:"stream"`
	Options any    `json:"options"` // options, or with the target's own merged in
	// Think is the arm's think: a boolean, or an effort string.
	Think any `json:"think,omitempty"`
}

// line is one NDJSON object; the final one has Done set and the counts.
type line struct {
	Response string `json:"response"`
	// Thinking is a thinking model's reasoning when the request set
	// think (Ollama's own parser took it out of the response).
	Thinking           string          `json:"thinking"`
	Done               bool            `json:"done"`
	DoneReason         string          `json:"done_reason"`
	Error              json.RawMessage `json:"error"`
	LoadDuration       int64           `json:"load_duration"`
	PromptEvalCount    *int            `json:"prompt_eval_count"`
	PromptEvalDuration int64           `json:"prompt_eval_duration"`
	EvalCount          *int            `json:"eval_count"`
	EvalDuration       int64           `json:"eval_duration"`
}

// RequestBody builds the JSON body for req. Sampling knobs an arm leaves
// off are sent as their neutral values (top_k 0, top_p 1, min_p 0) so that
// Ollama's defaults (top_k 40, top_p 0.9) do not quietly change the arm.
// extra are the target's options, merged into "options".
func RequestBody(req backends.Request, extra map[string]any) any {
	topP := req.TopP
	if topP == 0 {
		topP = 1
	}
	body := generateRequest{Model: req.Model, Prompt: req.Prompt, Stream: true, Options: stream.WithFields(options{
		NumPredict: req.MaxTokens, Temperature: req.Temperature, TopK: req.TopK, TopP: topP, MinP: req.MinP, Seed: req.Seed,
	}, extra)}
	switch req.Think {
	case "":
	case "true", "false":
		body.Think = req.Think == "true"
	default:
		body.Think = req.Think
	}
	return body
}

// Think is sent as the request's top-level think; a model whose
// capabilities (Probe) lack "thinking" is refused it, as Ollama would
// refuse every request (HTTP 400 "does not support thinking").
func (b *Backend) Think(think string) (string, error) {
	if err := b.shown.CheckThink(think); err != nil {
		return "", err
	}
	if think == "true" || think == "false" {
		return "think: " + think, nil
	}
	return fmt.Sprintf("think: %q", think), nil
}

// Generate streams one completion from /api/generate.
func (b *Backend) Generate(ctx context.Context, req backends.Request, onChunk backends.OnChunk) (backends.Result, error) {
	return b.conn.Generate(ctx, b.url+"/api/generate", RequestBody(req, b.options), req.FreshConnection, decode, onChunk)
}

// decode reads a /api/generate NDJSON stream, one token a line: thinking
// is reasoning, and so is a response's text inside inline <think> tags
// (a thinking model asked without think). A stream without its final
// `done: true` line is incomplete (Ollama ends a repetition abort that
// way); reading stops at that line.
func decode(body io.Reader, onChunk backends.OnChunk) (backends.Result, error) {
	res := backends.NewResult()
	res.ChunkCounts = true
	done := false
	var think stream.ThinkSplitter
	err := stream.Lines(body, func(raw []byte) error {
		var l line
		if err := stream.Unmarshal(raw, &l); err != nil {
			return err
		}
		switch {
		case l.Response != "":
			onChunk(1, think.Kind(l.Response))
		case l.Thinking != "":
			onChunk(1, backends.Reasoning)
		}
		if err := stream.FrameError(l.Error, raw); err != nil {
			return err
		}
		if l.Done {
			done = true
			parseFinal(&res, l)
			return stream.ErrEnd
		}
		return nil
	})
	res.LeadingReasoningChunks = think.LeadingReasoning()
	return res, stream.End(err, done)
}

// parseFinal copies the final line's counts and timings into res.
func parseFinal(res *backends.Result, l line) {
	res.StopReason = backends.NormalizeStopReason(l.DoneReason)
	if l.EvalCount != nil {
		res.OutputTokens = *l.EvalCount
	}
	if l.PromptEvalCount != nil {
		res.PromptTokens = *l.PromptEvalCount
	}
	res.ServerLoadMs = nsToMs(l.LoadDuration)
	res.ServerPrefillMs = nsToMs(l.PromptEvalDuration)
	res.ServerDecodeMs = nsToMs(l.EvalDuration)
}

func nsToMs(ns int64) float64 { return float64(ns) / 1e6 }

// Probe checks /api/version and, for a named model, /api/show and /api/tags.
func (b *Backend) Probe(ctx context.Context, model string) (backends.Info, error) {
	info := backends.Info{Kind: Kind.Name, URL: b.url}
	var version struct {
		Version string `json:"version"`
	}
	if err := b.conn.GetJSON(ctx, b.url+"/api/version", &version); err != nil {
		return info, err
	}
	info.ServerVersion = version.Version
	var tags struct {
		Models []struct {
			Name   string `json:"name"`
			Digest string `json:"digest"`
		} `json:"models"`
	}
	if err := b.conn.GetJSON(ctx, b.url+"/api/tags", &tags); err != nil {
		return info, err
	}
	for _, m := range tags.Models {
		info.Models = append(info.Models, m.Name)
		if m.Name == model || m.Name == model+":latest" {
			info.Model, info.Digest = m.Name, m.Digest
		}
	}
	if model == "" {
		return info, nil
	}
	shown, err := ollamashow.Show(ctx, b.conn, b.url, model)
	if err != nil {
		if errors.Is(err, ollamashow.ErrBadAnswer) {
			return info, err
		}
		return info, fmt.Errorf("model %q is not available on Ollama at %s (%v); pull it with: ollama pull %s", model, untrusted.URL(b.url), err, model)
	}
	info.Quantization, b.shown = shown.Quantization, shown
	info.Details = map[string]string{"keep_alive": ollamashow.KeepAliveNotSent}
	if info.Model == "" {
		info.Model = model
	}
	return info, nil
}

// CloseIdleConnections closes the kept connections no request is using.
func (b *Backend) CloseIdleConnections() { b.conn.CloseIdleConnections() }
