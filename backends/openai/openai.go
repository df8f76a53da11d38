// Package openai talks to any OpenAI-compatible server (vLLM, TGI, SGLang,
// LM Studio, llama-server's /v1, Ollama's /v1) through /completions or
// /chat/completions streaming SSE with usage reporting switched on.
package openai

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/backends/internal/ollamashow"
	"github.com/tokentop/tokentop/backends/internal/stream"
	"github.com/tokentop/tokentop/backends/untrusted"
)

// Kind registers this backend.
var Kind = backends.Kind{
	Name:        "openai",
	Description: "any OpenAI-compatible server (/v1/completions or /v1/chat/completions, SSE)",
	DefaultURL:  "http://127.0.0.1:8000/v1",
	// llama-server with --metrics, vLLM, SGLang and TGI serve them at
	// the root, whatever the API's path.
	MetricsPath: "/metrics",
	New:         New,
	OptionsGo:   "as extra fields of the request body (e.g. vLLM's repetition_penalty)",
	// The fields tokentop sets from the arm.
	ReservedOptions: reservedOptions,
	// ignore_eos is an extension that vLLM, SGLang and llama-server take;
	// a strict server refuses the request, and the error says so.
	FixedLength:   true,
	ReasoningRule: "delta.reasoning_content and delta.reasoning are reasoning; content, text and tool_calls are output; content that opens with <think> is reasoning up to </think> (" + stream.InlineThinkRule + ")",
}

var reservedOptions = []string{"model", "prompt", "messages", "max_tokens", "stream", "stream_options", "temperature", "top_p", "seed", "top_k", "min_p", "ignore_eos", "cache_prompt",
	"chat_template_kwargs", "reasoning_effort"}

// Endpoints lists the API flavours this backend speaks.
var Endpoints = []string{"completions", "chat"}

// Backend is one OpenAI-compatible server.
type Backend struct {
	base string
	conn *stream.Conn
	chat bool
	// options are the target's, added to every request body.
	options map[string]any
	// llamaServer is set by Probe when the server is llama.cpp's
	// llama-server, which takes cache_prompt on its /v1 endpoints too.
	llamaServer bool
	// ollama is set by Probe when the server is Ollama, whose /v1 takes
	// thinking only as reasoning_effort; vllm when it is vLLM, which
	// sends a usage with every chunk when asked (continuous_usage_stats).
	ollama, vllm bool
	// shown is what Ollama's /api/show says of the model, on Ollama.
	shown ollamashow.Model
	// model is the served model Probe found, which vLLM's tokenizer
	// endpoints name.
	model string
}

// New makes a backend for cfg; Endpoint "" means "completions", which sends
// the prompt as-is, like the other backends, with no chat template.
func New(cfg backends.Config) (backends.Backend, error) {
	if err := backends.CheckOptions(cfg.Options, reservedOptions, nil); err != nil {
		return nil, err
	}
	base, query := stream.SplitQuery(cfg.URL)
	b := &Backend{base: base, conn: stream.NewConn(cfg.APIKey, query), options: cfg.Options}
	switch cfg.Endpoint {
	case "", "completions":
	case "chat":
		b.chat = true
	default:
		return nil, fmt.Errorf("openai endpoint %q is not known; use one of %s", cfg.Endpoint, strings.Join(Endpoints, ", "))
	}
	return b, nil
}

type request struct {
	Model         string             `json:"model"`
	Prompt        string             `json:"prompt,omitempty"`
	Messages      []backends.Message `json:"messages,omitempty"`
	MaxTokens     int                `json:"max_tokens"`
	Stream        bool               `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
		// ContinuousUsage goes only to vLLM (found by Probe): a usage on
		// every chunk gives each chunk's token count.
		ContinuousUsage bool `json:"continuous_usage_stats,omitempty"`
	} `json:"stream_options"`
	Temperature float64 `json:"temperature"`
	TopP        float64 `json:"top_p"`
	Seed        int64   `json:"seed"`
	// top_k and min_p are extensions (vLLM, SGLang, llama-server accept
	// them); they are sent only when an arm asks, as strict servers reject
	// unknown fields.
	TopK      int     `json:"top_k,omitempty"`
	MinP      float64 `json:"min_p,omitempty"`
	IgnoreEOS bool    `json:"ignore_eos,omitempty"`
	// CachePrompt goes only to llama-server (found by Probe), whose
	// default is to reuse the cached prompt.
	CachePrompt *bool `json:"cache_prompt,omitempty"`
	// The arm's think (see Backend.Think): the chat template's switch
	// (vLLM, SGLang, llama-server), or an effort.
	ChatTemplateKwargs map[string]any `json:"chat_template_kwargs,omitempty"`
	ReasoningEffort    string         `json:"reasoning_effort,omitempty"`
}

// RequestBody builds the JSON body of one streaming request.
func (b *Backend) RequestBody(req backends.Request) any {
	r := request{Model: req.Model, MaxTokens: req.MaxTokens, Stream: true,
		Temperature: req.Temperature, TopP: req.TopP, Seed: req.Seed, TopK: req.TopK, MinP: req.MinP, IgnoreEOS: req.IgnoreEOS}
	if b.llamaServer {
		r.CachePrompt = &req.PromptCache
	}
	if r.TopP == 0 {
		r.TopP = 1
	}
	r.StreamOptions.IncludeUsage = true
	r.StreamOptions.ContinuousUsage = b.vllm
	switch {
	case req.Think == "":
	case b.ollama && req.Think == "false":
		r.ReasoningEffort = "none"
	case req.Think == "true" || req.Think == "false":
		r.ChatTemplateKwargs = map[string]any{"enable_thinking": req.Think == "true"}
	default:
		r.ReasoningEffort = req.Think
	}
	switch {
	case b.chat && len(req.Messages) > 0:
		r.Messages = req.Messages
	case b.chat:
		r.Messages = []backends.Message{{Role: "user", Content: req.Prompt}}
	default:
		r.Prompt = req.Prompt
	}
	return stream.WithFields(r, b.options)
}

type chunk struct {
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Content string `json:"content"`
			// The thinking of a reasoning model: reasoning_content from
			// vLLM's reasoning parsers, SGLang and llama-server's
			// --reasoning-format; reasoning from newer vLLM, OpenRouter
			// and Ollama's /v1.
			ReasoningContent string `json:"reasoning_content"`
			Reasoning        string `json:"reasoning"`
			ToolCalls        []struct {
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens *int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails *struct {
			ReasoningTokens *int `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
	// llama-server adds its native timings to the usage chunk.
	Timings *struct {
		PromptMs    float64 `json:"prompt_ms"`
		PredictedMs float64 `json:"predicted_ms"`
	} `json:"timings"`
	Error json.RawMessage `json:"error"`
	// Content and Stop belong to llama-server's native /completion
	// stream, which it also serves at /completions without /v1.
	Content *string `json:"content"`
	Stop    *bool   `json:"stop"`
}

// errNativeStream is the answer of llama-server's root /completions, which
// is its native endpoint, not the OpenAI one.
var errNativeStream = errors.New("the server answered with llama-server's native stream, not an OpenAI one: its OpenAI API is under /v1 (did you mean --url …/v1?)")

// Generate streams one completion.
func (b *Backend) Generate(ctx context.Context, req backends.Request, onChunk backends.OnChunk) (backends.Result, error) {
	path := "/completions"
	if b.chat {
		path = "/chat/completions"
	}
	return b.conn.Generate(ctx, b.base+path, b.RequestBody(req), req.FreshConnection, decode, onChunk)
}

// decode reads an OpenAI-style SSE stream up to "data: [DONE]", and stops
// there even if the server keeps the connection open. Every generated
// token is an arrival: answer text, reasoning (its own fields, or inline
// <think> tags in the content where no parser took them out) and tool
// calls. A chunk's token count is known where the server sends a usage
// with each chunk (vLLM's continuous_usage_stats): the growth of its
// completion_tokens. Otherwise a chunk counts as one arrival and the
// final usage gives the real total. Ollama repeats a zero usage on every
// chunk: only a usage with completion tokens counts.
func decode(body io.Reader, onChunk backends.OnChunk) (backends.Result, error) {
	res := backends.NewResult()
	res.ChunkCounts = true
	done := false
	var think stream.ThinkSplitter
	used, pending := 0, 0 // completion_tokens of the last usage seen, and those not yet on an arrival
	err := stream.SSE(body, func(data []byte) error {
		if string(data) == "[DONE]" {
			done = true
			return stream.ErrEnd
		}
		var c chunk
		if err := stream.Unmarshal(data, &c); err != nil {
			return err
		}
		if c.Choices == nil && c.Content != nil && c.Stop != nil {
			return errNativeStream
		}
		if u := c.Usage; u != nil && u.CompletionTokens > used {
			// Tokens that showed no text (a hidden special token) join
			// the next chunk that does: its gap covered them too.
			pending, used = pending+u.CompletionTokens-used, u.CompletionTokens
		}
		for _, choice := range c.Choices {
			if kind, ok := chunkKind(cmp.Or(choice.Delta.Content, choice.Text), cmp.Or(choice.Delta.Reasoning, choice.Delta.ReasoningContent), len(choice.Delta.ToolCalls) > 0, &think); ok {
				tokens, counted := stream.ChunkCount(pending)
				onChunk(tokens, kind)
				res.ChunkCounts = res.ChunkCounts && counted
				pending = 0
			}
			if choice.FinishReason != "" {
				res.StopReason = backends.NormalizeStopReason(choice.FinishReason)
			}
		}
		if err := stream.FrameError(c.Error, data); err != nil {
			return err
		}
		if u := c.Usage; u != nil && u.CompletionTokens > 0 {
			res.OutputTokens = u.CompletionTokens
			res.PromptTokens = u.PromptTokens
			if d := u.PromptTokensDetails; d != nil && d.CachedTokens != nil {
				res.CachedTokens = *d.CachedTokens
			}
			if d := u.CompletionTokensDetails; d != nil && d.ReasoningTokens != nil {
				res.ReasoningTokens = *d.ReasoningTokens
			}
		}
		if c.Timings != nil {
			res.ServerPrefillMs = c.Timings.PromptMs
			res.ServerDecodeMs = c.Timings.PredictedMs
		}
		return nil
	})
	res.LeadingReasoningChunks = think.LeadingReasoning()
	return res, stream.End(err, done)
}

// chunkKind is what a choice's delta carries, and false when it carries
// no token (a role, an empty delta, a finish reason alone). A delta with
// answer text is an answer even if it also ends the reasoning: the answer
// begins there.
func chunkKind(answer, reasoning string, toolCall bool, think *stream.ThinkSplitter) (backends.TokenKind, bool) {
	switch {
	case answer != "":
		return think.Kind(answer), true
	case reasoning != "":
		return backends.Reasoning, true
	case toolCall:
		return backends.ToolCall, true
	}
	return backends.Answer, false
}

// Think sends a boolean as the chat template's enable_thinking (vLLM,
// SGLang, llama-server: Qwen3 and its kind) and an effort as
// reasoning_effort (gpt-oss). Only the chat endpoint applies a template;
// Ollama's /v1 takes thinking only as an effort, "none" for off.
func (b *Backend) Think(think string) (string, error) {
	switch {
	case !b.chat:
		return "", errors.New("think needs the chat endpoint (--endpoint chat): the completions endpoint sends the prompt with no chat template, so nothing can turn thinking on or off")
	case b.ollama && think == "true":
		return "", errors.New(`Ollama's OpenAI API takes thinking only as an effort (reasoning_effort): use think = "low", "medium" or "high" (or false), or the ollama backend, which takes think = true`)
	case b.ollama && think == "false":
		return `reasoning_effort "none"`, nil
	case b.ollama:
		if err := b.shown.CheckThink(think); err != nil {
			return "", err
		}
	case think == "true" || think == "false":
		return "chat_template_kwargs.enable_thinking = " + think, nil
	}
	return fmt.Sprintf("reasoning_effort %q", think), nil
}

// Probe lists /models and checks the requested model is among them. It
// also asks the server's root who it is: llama-server (/props) and Ollama
// (/api/version) say their version there, which the OpenAI API does not.
func (b *Backend) Probe(ctx context.Context, model string) (backends.Info, error) {
	info := backends.Info{Kind: Kind.Name, URL: b.base}
	var list struct {
		Data []struct {
			ID string `json:"id"`
			// MaxModelLen is vLLM's context window; other servers omit it.
			MaxModelLen int `json:"max_model_len"`
		} `json:"data"`
	}
	if err := b.conn.GetJSON(ctx, b.base+"/models", &list); err != nil {
		// Most servers put the OpenAI API under /v1: a root given
		// without it is the commonest wrong address.
		if !strings.HasSuffix(b.base, "/v1") && b.conn.GetJSON(ctx, b.base+"/v1/models", &list) == nil {
			return info, fmt.Errorf("%w; the OpenAI API answers at %s/v1: use --url %s/v1", err, untrusted.URL(b.base), untrusted.URL(b.base))
		}
		return info, err
	}
	if err := b.identify(ctx, &info); err != nil {
		return info, err
	}
	for _, m := range list.Data {
		info.Models = append(info.Models, m.ID)
		// Ollama lists tagged names and serves the bare name as :latest.
		if m.ID == model || info.Model == "" && m.ID == model+":latest" {
			info.Model, info.ContextTokens = m.ID, max(0, m.MaxModelLen)
		}
	}
	if model == "" {
		return info, nil
	}
	if info.Model == "" {
		return info, fmt.Errorf("model %q is not served at %s; it offers: %s", model, untrusted.URL(b.base), strings.Join(info.Models, ", "))
	}
	b.model = info.Model
	if b.ollama {
		// Its /v1 runs a model that cannot think with every request
		// refused (HTTP 400), where its native API is asked up front.
		root, _ := strings.CutSuffix(b.base, "/v1")
		if shown, err := ollamashow.Show(ctx, b.conn, root, info.Model); err == nil {
			b.shown, info.Quantization = shown, shown.Quantization
		}
		info.Details = map[string]string{"keep_alive": ollamashow.KeepAliveNotSent}
	}
	return info, nil
}

// identify asks the server's root which server it is. Only an answer in
// the expected shape counts: other servers 404 these paths.
func (b *Backend) identify(ctx context.Context, info *backends.Info) error {
	root, underV1 := strings.CutSuffix(b.base, "/v1")
	var props struct {
		BuildInfo string `json:"build_info"`
	}
	if b.conn.GetJSON(ctx, root+"/props", &props) == nil && props.BuildInfo != "" {
		if !underV1 {
			// Its root /completions is the native endpoint, which
			// speaks another protocol.
			return fmt.Errorf("%s is llama-server's root, not its OpenAI API: use --url %s/v1 (or --backend llamacpp for its native API)", untrusted.URL(b.base), untrusted.URL(b.base))
		}
		b.llamaServer, info.PromptCacheSwitch = true, true
		info.ServerVersion = "llama-server " + props.BuildInfo
		return nil
	}
	var version struct {
		Version string `json:"version"`
	}
	if b.conn.GetJSON(ctx, root+"/api/version", &version) == nil && version.Version != "" {
		b.ollama = true
		info.ServerVersion = "ollama " + version.Version
		info.NoFixedLength = "Ollama's /v1 drops ignore_eos, and its API has no other way to ignore the end of sequence"
		return nil
	}
	// vLLM answers its version at the root.
	if b.conn.GetJSON(ctx, root+"/version", &version) == nil && version.Version != "" {
		b.vllm = true
		info.ServerVersion = "vllm " + version.Version
	}
	return nil
}

// Tokenize counts text in the server's own tokens, where it is
// llama-server or vLLM (each's /tokenize at the root); other servers'
// are not known.
func (b *Backend) Tokenize(ctx context.Context, text string, special bool) ([]int, error) {
	switch {
	case b.llamaServer:
		return b.conn.LlamaTokenize(ctx, b.root(), text, special)
	case b.vllm:
		return b.conn.VLLMTokenize(ctx, b.root(), b.model, text, special)
	}
	return nil, errNoTokenizer
}

// Detokenize is the text of tokens, where the server is llama-server or
// vLLM.
func (b *Backend) Detokenize(ctx context.Context, tokens []int) (string, error) {
	switch {
	case b.llamaServer:
		return b.conn.LlamaDetokenize(ctx, b.root(), tokens)
	case b.vllm:
		return b.conn.VLLMDetokenize(ctx, b.root(), b.model, tokens)
	}
	return "", errNoTokenizer
}

var errNoTokenizer = fmt.Errorf("%w: tokentop knows this server's tokenizer only where it is llama-server or vLLM (their /tokenize)", backends.ErrNoTokenizer)

// root is the server's address without the API's path.
func (b *Backend) root() string {
	u, err := url.Parse(b.base)
	if err != nil {
		return b.base
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
}

// CloseIdleConnections closes the kept connections no request is using.
func (b *Backend) CloseIdleConnections() { b.conn.CloseIdleConnections() }
