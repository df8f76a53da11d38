// Package llamacpp talks to llama.cpp's llama-server through its native
// /completion endpoint (SSE), which reports the tokens of each chunk and
// the server's own timings in the final event.
package llamacpp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/backends/internal/stream"
	"github.com/tokentop/tokentop/backends/untrusted"
)

// Kind registers this backend.
var Kind = backends.Kind{
	Name:        "llamacpp",
	Description: "llama.cpp llama-server native API (/completion, SSE)",
	DefaultURL:  "http://127.0.0.1:8080",
	// llama-server with --metrics, vLLM, SGLang and TGI serve them at
	// the root, whatever the API's path.
	MetricsPath: "/metrics",
	// llama-server serves the one model it was started with.
	ModelOptional: true,
	FixedLength:   true,
	New: func(c backends.Config) (backends.Backend, error) {
		if err := backends.CheckOptions(c.Options, reservedOptions, nil); err != nil {
			return nil, err
		}
		base, query := stream.SplitQuery(c.URL)
		return &Backend{url: base, options: c.Options, conn: stream.NewConn(c.APIKey, query)}, nil
	},
	OptionsGo:       "as fields of the /completion request (n_keep, n_probs, dry_multiplier, ...)",
	ReservedOptions: reservedOptions,
	ReasoningRule:   "the raw text: " + stream.InlineThinkRule,
}

// Think cannot be honoured: /completion completes the raw prompt, with no
// chat template to turn thinking on or off.
func (b *Backend) Think(string) (string, error) {
	return "", errors.New("llama-server's /completion completes the raw prompt, with no chat template to turn thinking on or off: use its OpenAI API (--backend openai --endpoint chat --url …/v1), which takes chat_template_kwargs.enable_thinking")
}

// reservedOptions are the request fields tokentop sets from the arm.
var reservedOptions = []string{"prompt", "n_predict", "stream", "temperature", "top_k", "top_p", "min_p", "seed", "cache_prompt", "ignore_eos"}

// Backend is a llama-server.
type Backend struct {
	url     string
	options map[string]any // the target's, added to every request
	conn    *stream.Conn
}

type completionRequest struct {
	Prompt      string  `json:"prompt"`
	NPredict    int     `json:"n_predict"`
	Stream      bool    `json:"stream"`
	Temperature float64 `json:"temperature"`
	TopK        int     `json:"top_k"`
	TopP        float64 `json:"top_p"`
	MinP        float64 `json:"min_p"`
	Seed        int64   `json:"seed"`
	// CachePrompt is always sent: llama-server's default is true.
	CachePrompt bool `json:"cache_prompt"`
	IgnoreEOS   bool `json:"ignore_eos,omitempty"`
}

// RequestBody builds the JSON body. Knobs an arm leaves off go out as
// neutral values, overriding llama-server's defaults (top_k 40, top_p 0.95,
// min_p 0.05) that would otherwise shape every "temperature only" arm.
// extra are the target's options, added as request fields.
func RequestBody(req backends.Request, extra map[string]any) any {
	topP := req.TopP
	if topP == 0 {
		topP = 1
	}
	return stream.WithFields(completionRequest{Prompt: req.Prompt, NPredict: req.MaxTokens, Stream: true,
		Temperature: req.Temperature, TopK: req.TopK, TopP: topP, MinP: req.MinP, Seed: req.Seed,
		CachePrompt: req.PromptCache, IgnoreEOS: req.IgnoreEOS}, extra)
}

type event struct {
	Content         string          `json:"content"`
	Tokens          []int           `json:"tokens"`
	Stop            bool            `json:"stop"`
	StopType        string          `json:"stop_type"`
	Truncated       bool            `json:"truncated"`
	TokensEvaluated *int            `json:"tokens_evaluated"`
	Error           json.RawMessage `json:"error"`
	Timings         *struct {
		CacheN      *int    `json:"cache_n"`
		PromptMs    float64 `json:"prompt_ms"`
		PredictedN  int     `json:"predicted_n"`
		PredictedMs float64 `json:"predicted_ms"`
	} `json:"timings"`
}

// Generate streams one completion from /completion.
func (b *Backend) Generate(ctx context.Context, req backends.Request, onChunk backends.OnChunk) (backends.Result, error) {
	return b.conn.Generate(ctx, b.url+"/completion", RequestBody(req, b.options), req.FreshConnection, decode, onChunk)
}

// decode reads a /completion SSE stream. The endpoint sends no [DONE]; the
// event with stop: true is the end (reading stops there), and a stream
// without it was cut. The text is the raw output, template-free: a
// reasoning model's thinking is in it between <think> tags.
func decode(body io.Reader, onChunk backends.OnChunk) (backends.Result, error) {
	res := backends.NewResult()
	res.ChunkCounts = true
	done := false
	var think stream.ThinkSplitter
	err := stream.SSE(body, func(data []byte) error {
		var ev event
		if err := stream.Unmarshal(data, &ev); err != nil {
			return err
		}
		if len(ev.Tokens) > 0 {
			n, counted := stream.ChunkCount(len(ev.Tokens))
			onChunk(n, think.Kind(ev.Content))
			res.ChunkCounts = res.ChunkCounts && counted
			// The chunk's token ids, kept for the tokens CSV (a count
			// past the bound keeps none: they would not add up).
			res.TokenIDs = append(res.TokenIDs, ev.Tokens[:n]...)
		} else if ev.Content != "" {
			// No tokens array: an older build; a chunk is one token
			// as far as anyone can tell, and its id is not known.
			onChunk(1, think.Kind(ev.Content))
			res.ChunkCounts = false
		}
		if err := stream.FrameError(ev.Error, data); err != nil {
			return err
		}
		if ev.TokensEvaluated != nil {
			res.PromptTokens = *ev.TokensEvaluated
		}
		if ev.Stop {
			done = true
			res.StopReason = backends.NormalizeStopReason(ev.StopType)
			if ev.Truncated {
				// The slot's context ran out: stop_type says "limit"
				// as it does for n_predict.
				res.StopReason = backends.StopTruncated
			}
			if t := ev.Timings; t != nil {
				if t.CacheN != nil {
					res.CachedTokens = *t.CacheN
				}
				res.OutputTokens = t.PredictedN
				res.ServerPrefillMs = t.PromptMs
				res.ServerDecodeMs = t.PredictedMs
			}
			return stream.ErrEnd
		}
		return nil
	})
	res.LeadingReasoningChunks = think.LeadingReasoning()
	if !res.ChunkCounts {
		res.TokenIDs = nil // some chunk's ids are missing or cut
	}
	return res, stream.End(err, done)
}

// Probe checks /health and reads /props for the build and loaded model.
// llama-server serves the one model it was started with: a different
// requested name is reported, not refused, since aliases vary.
func (b *Backend) Probe(ctx context.Context, model string) (backends.Info, error) {
	info := backends.Info{Kind: Kind.Name, URL: b.url, PromptCacheSwitch: true}
	var health struct {
		Status string `json:"status"`
	}
	if err := b.conn.GetJSON(ctx, b.url+"/health", &health); err != nil {
		return info, err
	}
	if health.Status != "ok" {
		return info, fmt.Errorf("%s/health says %q; wait for the model to load", untrusted.URL(b.url), health.Status)
	}
	var props struct {
		BuildInfo  string `json:"build_info"`
		ModelAlias string `json:"model_alias"`
		ModelPath  string `json:"model_path"`
		ModelFtype string `json:"model_ftype"`
		Defaults   struct {
			NCtx int `json:"n_ctx"` // each slot's context
		} `json:"default_generation_settings"`
	}
	if err := b.conn.GetJSON(ctx, b.url+"/props", &props); err != nil {
		return info, err
	}
	info.ServerVersion = props.BuildInfo
	info.Model = props.ModelAlias
	if info.Model == "" {
		info.Model = props.ModelPath
	}
	info.Quantization = props.ModelFtype
	info.ContextTokens = max(0, props.Defaults.NCtx)
	if info.Model != "" {
		info.Models = []string{info.Model}
	}
	return info, nil
}

// Tokenize counts text in the server's own tokens (/tokenize).
func (b *Backend) Tokenize(ctx context.Context, text string, special bool) ([]int, error) {
	return b.conn.LlamaTokenize(ctx, b.url, text, special)
}

// Detokenize is the server's text of tokens (/detokenize).
func (b *Backend) Detokenize(ctx context.Context, tokens []int) (string, error) {
	return b.conn.LlamaDetokenize(ctx, b.url, tokens)
}

// CloseIdleConnections closes the kept connections no request is using.
func (b *Backend) CloseIdleConnections() { b.conn.CloseIdleConnections() }
