package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/backends/internal/ollamashow"
	"github.com/tokentop/tokentop/backends/internal/stream"
	"github.com/tokentop/tokentop/backends/replay"
)

type generation struct {
	chunks int
	res    backends.Result
	err    error
	body   map[string]any
	auth   string
}

func generate(t *testing.T, endpoint string, h http.HandlerFunc) generation {
	t.Helper()
	var g generation
	path := "/v1/completions"
	if endpoint == "chat" {
		path = "/v1/chat/completions"
	}
	srv := replay.NewServer(t, replay.Route{"POST " + path: func(w http.ResponseWriter, r *http.Request) {
		json.NewDecoder(r.Body).Decode(&g.body)
		g.auth = r.Header.Get("Authorization")
		h(w, r)
	}})
	b, err := New(backends.Config{URL: srv.URL + "/v1", APIKey: "sk-test", Endpoint: endpoint})
	if err != nil {
		t.Fatal(err)
	}
	g.res, g.err = b.Generate(context.Background(), backends.Request{Model: "tiny15m", Prompt: "Once upon a time", MaxTokens: 32, TopK: 40, Temperature: 0.8},
		func(n int, _ backends.TokenKind) { g.chunks += n })
	return g
}

func TestGenerateReplaysRecordedStreams(t *testing.T) {
	cases := []struct {
		fixture, endpoint string
		prompt            int
		decodeMs          float64
		stop              string
	}{
		{"llamacpp/v1_chat_stream_usage", "chat", 32, 34.59, "length"},
		{"llamacpp/v1_completions_stream_usage", "completions", 5, 36.99, "length"},
		{"ollama/v1_completions_stream_usage", "completions", 32, -1, "length"},
		{"ollama/v1_chat_stream_usage", "chat", 32, -1, "length"},
	}
	for _, c := range cases {
		t.Run(c.fixture, func(t *testing.T) {
			g := generate(t, c.endpoint, replay.Serve(replay.Load(t, c.fixture)))
			if g.err != nil {
				t.Fatal(g.err)
			}
			if g.chunks != 32 || g.res.OutputTokens != 32 || g.res.PromptTokens != c.prompt || g.res.StopReason != c.stop {
				t.Errorf("chunks %d result %+v", g.chunks, g.res)
			}
			if c.decodeMs > 0 && g.res.ServerDecodeMs != c.decodeMs {
				t.Errorf("server decode %v, want %v", g.res.ServerDecodeMs, c.decodeMs)
			}
			if g.body["stream_options"].(map[string]any)["include_usage"] != true || g.body["top_k"] != 40.0 || g.auth != "Bearer sk-test" {
				t.Errorf("request %v auth %q", g.body, g.auth)
			}
			if _, isChat := g.body["messages"]; isChat != (c.endpoint == "chat") {
				t.Errorf("endpoint %s sent %v", c.endpoint, g.body)
			}
		})
	}
}

func TestDegradedStreams(t *testing.T) {
	cases := []struct {
		name, fixture string
		cut           bool
		want          string
	}{
		{"unknown model", "ollama/error_unknown_model_v1_chat", false, "HTTP 404: model 'nope-does-not-exist' not found"},
		{"llama-server killed", "llamacpp/kill9_v1_chat_stream", true, stream.ErrTruncated.Error()},
		{"llama-server SIGTERM", "llamacpp/sigterm_v1_chat_stream", true, stream.ErrTruncated.Error()},
		{"ollama runner killed: no [DONE]", "ollama/kill9_runner_v1_chat_stream", false, stream.ErrTruncated.Error()},
		{"prompt too long", "llamacpp/error_too_long_prompt_v1_chat_stream", false, "HTTP 400: request (428 tokens) exceeds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := replay.Serve(replay.Load(t, c.fixture))
			if c.cut {
				h = replay.Cut(replay.Load(t, c.fixture))
			}
			g := generate(t, "chat", h)
			if g.err == nil || !strings.Contains(g.err.Error(), c.want) {
				t.Fatalf("error %v, want %q", g.err, c.want)
			}
		})
	}
}

func TestProbeAndEndpointValidation(t *testing.T) {
	srv := replay.NewServer(t, replay.Route{"GET /v1/models": replay.Serve(replay.Load(t, "ollama/v1_models"))})
	b, _ := New(backends.Config{URL: srv.URL + "/v1"})
	info, err := b.Probe(context.Background(), "tiny15m:latest")
	if err != nil || info.Model != "tiny15m:latest" {
		t.Errorf("probe %+v %v", info, err)
	}
	if _, err := b.Probe(context.Background(), "gpt-9"); err == nil || !strings.Contains(err.Error(), "it offers: tiny15m:latest") {
		t.Errorf("missing model: %v", err)
	}
	if _, err := New(backends.Config{Endpoint: "embeddings"}); err == nil || !strings.Contains(err.Error(), "completions, chat") {
		t.Errorf("bad endpoint: %v", err)
	}
	// The server's root, not its /v1: the probe says where the API is.
	root, _ := New(backends.Config{URL: srv.URL})
	if _, err := root.Probe(context.Background(), ""); err == nil || !strings.Contains(err.Error(), "the OpenAI API answers at "+srv.URL+"/v1: use --url "+srv.URL+"/v1") {
		t.Errorf("the root: %v", err)
	}
}

// TestProbeKnowsLlamaServer replays llama-server: at its root, /models
// answers like /v1/models but /completions is the native endpoint, so the
// probe says where the OpenAI API is; under /v1 it reads the version from
// /props and turns the prompt cache off.
func TestProbeKnowsLlamaServer(t *testing.T) {
	srv := replay.NewServer(t, replay.Route{
		"GET /models":          replay.Serve(replay.Load(t, "llamacpp/root_models")),
		"GET /v1/models":       replay.Serve(replay.Load(t, "llamacpp/v1_models")),
		"GET /props":           replay.Serve(replay.Load(t, "llamacpp/props")),
		"POST /completions":    replay.Serve(replay.Load(t, "llamacpp/root_completions_stream")),
		"POST /v1/completions": replay.Serve(replay.Load(t, "llamacpp/v1_completions_stream_usage")),
	})
	root, _ := New(backends.Config{URL: srv.URL})
	if _, err := root.Probe(context.Background(), ""); err == nil || !strings.Contains(err.Error(), "use --url "+srv.URL+"/v1") {
		t.Errorf("root probe: %v", err)
	}
	// Had the probe let it through, every trial would fail the same way.
	if _, err := root.Generate(context.Background(), backends.Request{Prompt: "x", MaxTokens: 16}, func(int, backends.TokenKind) {}); !errors.Is(err, errNativeStream) {
		t.Errorf("root stream: %v", err)
	}

	b, _ := New(backends.Config{URL: srv.URL + "/v1"})
	info, err := b.Probe(context.Background(), "")
	if err != nil || info.ServerVersion != "llama-server b10470-34af94cd9" || !info.PromptCacheSwitch {
		t.Fatalf("v1 probe %+v %v", info, err)
	}
	body, _ := json.Marshal(b.(*Backend).RequestBody(backends.Request{}))
	if !strings.Contains(string(body), `"cache_prompt":false`) {
		t.Errorf("llama-server body %s", body)
	}
	res, err := b.Generate(context.Background(), backends.Request{Prompt: "x", MaxTokens: 32}, func(int, backends.TokenKind) {})
	if err != nil || res.CachedTokens != 4 {
		t.Errorf("cached tokens %+v %v", res, err)
	}
}

// TestOptionsAreExtraBodyFields: a target's options are added to the
// OpenAI request body; the recorded stream still decodes.
func TestOptionsAreExtraBodyFields(t *testing.T) {
	var sent map[string]any
	srv := replay.NewServer(t, replay.Route{"POST /v1/completions": func(w http.ResponseWriter, r *http.Request) {
		json.NewDecoder(r.Body).Decode(&sent)
		replay.Serve(replay.Load(t, "ollama/v1_completions_short_name"))(w, r)
	}})
	b, err := New(backends.Config{URL: srv.URL + "/v1", Options: map[string]any{"repetition_penalty": 1.1, "user": "bench"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Generate(context.Background(), backends.Request{Model: "stories260k", Prompt: "Once upon a time", MaxTokens: 16}, func(int, backends.TokenKind) {})
	if err != nil || res.OutputTokens != 16 {
		t.Fatalf("%+v %v", res, err)
	}
	if sent["repetition_penalty"] != 1.1 || sent["user"] != "bench" || sent["max_tokens"] != 16.0 || sent["model"] != "stories260k" {
		t.Errorf("sent %v", sent)
	}
	if _, err := New(backends.Config{Options: map[string]any{"max_tokens": int64(5)}}); err == nil || !strings.Contains(err.Error(), "options.max_tokens") {
		t.Errorf("max_tokens as an option: %v", err)
	}
}

// TestProbeTakesOllamasShortName: Ollama lists "stories260k:latest" and
// serves "stories260k" as that; the version comes from /api/version; no
// cache_prompt goes to a server that is not llama-server.
func TestProbeTakesOllamasShortName(t *testing.T) {
	srv := replay.NewServer(t, replay.Route{
		"GET /v1/models":       replay.Serve(replay.Load(t, "ollama/v1_models_stories260k")),
		"GET /api/version":     replay.Serve(replay.Load(t, "ollama/api_version")),
		"POST /v1/completions": replay.Serve(replay.Load(t, "ollama/v1_completions_short_name")),
	})
	b, _ := New(backends.Config{URL: srv.URL + "/v1"})
	info, err := b.Probe(context.Background(), "stories260k")
	if err != nil || info.Model != "stories260k:latest" || info.ServerVersion != "ollama 0.33.0-rc2" || info.PromptCacheSwitch ||
		!strings.Contains(info.NoFixedLength, "Ollama's /v1 drops ignore_eos") {
		t.Fatalf("probe %+v %v", info, err)
	}
	body, _ := json.Marshal(b.(*Backend).RequestBody(backends.Request{}))
	if strings.Contains(string(body), "cache_prompt") {
		t.Errorf("body %s", body)
	}
	res, err := b.Generate(context.Background(), backends.Request{Model: "stories260k", Prompt: "Once upon a time", MaxTokens: 16}, func(int, backends.TokenKind) {})
	if err != nil || res.OutputTokens != 16 {
		t.Errorf("short name %+v %v", res, err)
	}
}

// On Ollama's /v1 a think effort for a model that cannot think is refused
// before any trial, as the native backend does (every request got HTTP
// 400 "does not support thinking"); the session records that tokentop
// sends no keep-alive.
func TestOllamasV1ChecksThinkUpFront(t *testing.T) {
	srv := replay.NewServer(t, replay.Route{
		"GET /v1/models":            replay.Serve(replay.Load(t, "ollama/v1_models_stories260k")),
		"GET /api/version":          replay.Serve(replay.Load(t, "ollama/api_version")),
		"POST /api/show":            replay.Serve(replay.Load(t, "ollama/api_show")),
		"POST /v1/chat/completions": replay.Serve(replay.Load(t, "ollama/v1_chat_reasoning_effort_high_stream")),
	})
	b, _ := New(backends.Config{URL: srv.URL + "/v1", Endpoint: "chat"})
	info, err := b.Probe(context.Background(), "stories260k")
	if err != nil || info.Quantization != "F16" || info.Details["keep_alive"] != ollamashow.KeepAliveNotSent {
		t.Fatalf("probe %+v %v", info, err)
	}
	if _, err := backends.ThinkSent(b, "high"); err == nil || !strings.Contains(err.Error(), "the model cannot think (Ollama lists its capabilities as completion)") {
		t.Errorf("think = high on a model without thinking: %v", err)
	}
	if sent, err := backends.ThinkSent(b, "false"); err != nil || sent != `reasoning_effort "none"` {
		t.Errorf("think = false: %q %v", sent, err)
	}
}

// TestThinkInEachServersWords: on the chat endpoint a boolean think is the
// chat template's enable_thinking (vLLM, SGLang, llama-server) and an
// effort is reasoning_effort; Ollama's /v1 takes only an effort ("none"
// for off: it ignores enable_thinking and think); the completions endpoint
// applies no template, so nothing there turns thinking on or off. vLLM,
// found by its /version, is asked for a usage on every chunk.
func TestThinkInEachServersWords(t *testing.T) {
	routes := func(server string) replay.Route {
		r := replay.Route{"GET /v1/models": replay.Serve(replay.Load(t, "ollama/v1_models_stories260k"))}
		switch server {
		case "ollama":
			r["GET /api/version"] = replay.Serve(replay.Load(t, "ollama/api_version"))
		case "vllm":
			r["GET /version"] = func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`{"version":"0.11.0"}`)) }
		}
		return r
	}
	cases := []struct {
		server, endpoint, think, sent, body, refused string
	}{
		{"vllm", "chat", "false", "chat_template_kwargs.enable_thinking = false", `"chat_template_kwargs":{"enable_thinking":false}`, ""},
		{"vllm", "chat", "true", "chat_template_kwargs.enable_thinking = true", `"chat_template_kwargs":{"enable_thinking":true}`, ""},
		{"vllm", "chat", "high", `reasoning_effort "high"`, `"reasoning_effort":"high"`, ""},
		{"ollama", "chat", "false", `reasoning_effort "none"`, `"reasoning_effort":"none"`, ""},
		{"ollama", "chat", "low", `reasoning_effort "low"`, `"reasoning_effort":"low"`, ""},
		{"ollama", "chat", "true", "", "", "Ollama's OpenAI API takes thinking only as an effort"},
		{"vllm", "completions", "false", "", "", "think needs the chat endpoint (--endpoint chat)"},
	}
	for _, c := range cases {
		srv := replay.NewServer(t, routes(c.server))
		b, _ := New(backends.Config{URL: srv.URL + "/v1", Endpoint: c.endpoint})
		if _, err := b.Probe(context.Background(), ""); err != nil {
			t.Fatal(err)
		}
		sent, err := backends.ThinkSent(b, c.think)
		body, _ := json.Marshal(b.(*Backend).RequestBody(backends.Request{Think: c.think}))
		switch {
		case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused)):
			t.Errorf("%s %s think %s: %v, want it refused: %s", c.server, c.endpoint, c.think, err, c.refused)
		case c.refused == "" && (err != nil || sent != c.sent || !strings.Contains(string(body), c.body)):
			t.Errorf("%s %s think %s: sent %q (%v), body %s", c.server, c.endpoint, c.think, sent, err, body)
		}
		if continuous := strings.Contains(string(body), `"continuous_usage_stats":true`); continuous != (c.server == "vllm") {
			t.Errorf("%s: continuous usage asked %v: %s", c.server, continuous, body)
		}
	}
}

// TestEveryGeneratedTokenIsAnArrival: reasoning (either field), answer
// text and tool calls all arrive as chunks of their kind; a chunk's token
// count is read from a usage on every chunk where the server sends one,
// and the server's reasoning count is kept. Before, only content and text
// were arrivals: a reasoning model's TTFT was its first answer token.
func TestEveryGeneratedTokenIsAnArrival(t *testing.T) {
	cases := []struct {
		fixture, kinds    string
		tokens            []int
		counted           bool
		output, reasoning int
	}{
		{"llamaserver_v1_chat_reasoning_stream", "rrrrrraaaa", []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, false, 10, -1},
		{"vllm_chat_reasoning_continuous_usage_stream", "rrrrrraaaa", []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, true, 10, -1},
		{"vllm_chat_bundled_continuous_usage_stream", "aaaaaa", []int{2, 2, 1, 3, 1, 1}, true, 10, -1},
		{"vllm_chat_bundled_stream", "aaaaaa", []int{1, 1, 1, 1, 1, 1}, false, 10, -1},
		{"openrouter_chat_reasoning_tokens_stream", "rrrrrraaaa", []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, false, 10, 6},
		{"vllm_chat_tool_call_stream", "ttttt", []int{1, 1, 1, 1, 1}, false, 9, -1},
	}
	for _, c := range cases {
		t.Run(c.fixture, func(t *testing.T) {
			var got replay.Chunks
			res, err := decode(bytes.NewReader(replay.Reasoning(t, c.fixture).Body), got.OnChunk)
			if err != nil || got.Kinds != c.kinds || !slices.Equal(got.Tokens, c.tokens) || res.ChunkCounts != c.counted ||
				res.OutputTokens != c.output || res.ReasoningTokens != c.reasoning {
				t.Errorf("kinds %q tokens %v counted %v output %d reasoning %d, error %v", got.Kinds, got.Tokens, res.ChunkCounts, res.OutputTokens, res.ReasoningTokens, err)
			}
		})
	}
}

// TestAClaimedCountPastBeliefIsNotTaken: a usage that says one chunk
// carried two billion tokens would have made two billion ITL gaps of the
// trial; such a count is taken as unknown, the chunk as one arrival.
func TestAClaimedCountPastBeliefIsNotTaken(t *testing.T) {
	body := `data: {"choices":[{"index":0,"delta":{"content":"a"}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{"content":"b"}}],"usage":{"prompt_tokens":1,"completion_tokens":2000000001}}` + "\n\n" +
		"data: [DONE]\n\n"
	var got replay.Chunks
	res, err := decode(strings.NewReader(body), got.OnChunk)
	if err != nil || !slices.Equal(got.Tokens, []int{1, 1}) || res.ChunkCounts {
		t.Errorf("tokens %v, counts known %v, error %v", got.Tokens, res.ChunkCounts, err)
	}
}

// TestAStreamEndsAtDone: a server that holds the connection open after
// "data: [DONE]" held each trial until its timeout.
func TestAStreamEndsAtDone(t *testing.T) {
	res, err := replay.GenerateHeld(t, Kind, backends.Config{URL: "/v1", Endpoint: "chat"}, "POST /v1/chat/completions", replay.Load(t, "llamacpp/v1_chat_stream_usage"), backends.Request{Prompt: "x", MaxTokens: 32})
	if err != nil || res.OutputTokens != 32 {
		t.Fatalf("%+v %v", res, err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, name := range []string{"llamacpp/v1_chat_stream_usage", "llamacpp/kill9_v1_chat_stream", "ollama/v1_completions_stream_usage", "ollama/kill9_runner_v1_chat_stream", "llamacpp/root_completions_stream"} {
		f.Add(replay.Load(f, name).Body)
	}
	for _, name := range []string{"vllm_chat_reasoning_continuous_usage_stream", "vllm_chat_bundled_continuous_usage_stream", "openrouter_chat_reasoning_tokens_stream", "vllm_chat_tool_call_stream"} {
		f.Add(replay.Reasoning(f, name).Body)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := decode(bytes.NewReader(data), func(n int, _ backends.TokenKind) {
			if n < 1 || n > stream.MaxChunkTokens {
				t.Fatalf("SSE chunk reported as %d tokens", n)
			}
		})
		if err == nil && !bytes.Contains(data, []byte("[DONE]")) {
			t.Fatalf("stream without [DONE] accepted as complete: %+v", res)
		}
	})
}

// A conversation goes to the chat endpoint as its messages, replayed
// against llama-server's recorded answer to a three-message history; to
// the completions endpoint it goes as its text.
func TestAConversationGoesAsItsMessages(t *testing.T) {
	history := []backends.Message{{Role: "system", Content: "You tell stories."}, {Role: "user", Content: "A cat"}, {Role: "assistant", Content: "Once"}}
	for _, endpoint := range []string{"chat", "completions"} {
		var body map[string]any
		path := map[string]string{"chat": "/v1/chat/completions", "completions": "/v1/completions"}[endpoint]
		fixture := map[string]string{"chat": "llamacpp/v1_chat_stream_multiturn", "completions": "llamacpp/v1_completions_stream_usage"}[endpoint]
		srv := replay.NewServer(t, replay.Route{"POST " + path: func(w http.ResponseWriter, r *http.Request) {
			json.NewDecoder(r.Body).Decode(&body)
			replay.Serve(replay.Load(t, fixture))(w, r)
		}})
		b, err := New(backends.Config{URL: srv.URL + "/v1", Endpoint: endpoint})
		if err != nil {
			t.Fatal(err)
		}
		res, err := b.Generate(context.Background(), backends.Request{Model: "m", Prompt: "You tell stories.\n\nA cat\n\nOnce", Messages: history, MaxTokens: 8}, func(int, backends.TokenKind) {})
		if err != nil || res.OutputTokens < 1 {
			t.Fatalf("%s: %+v %v", endpoint, res, err)
		}
		raw, _ := json.Marshal(body["messages"])
		var sent []backends.Message
		json.Unmarshal(raw, &sent)
		if endpoint == "chat" && !slices.Equal(sent, history) {
			t.Errorf("chat sent messages %s, want %v", raw, history)
		}
		if endpoint == "completions" && (body["messages"] != nil || body["prompt"] != "You tell stories.\n\nA cat\n\nOnce") {
			t.Errorf("completions sent %v", body)
		}
	}
}

// vLLM's tokenizer is asked at its root, in the shape of its
// vllm/entrypoints/serve/tokenize/protocol.py (TokenizeCompletionRequest:
// model, prompt, add_special_tokens → tokens, count, max_model_len;
// DetokenizeRequest: model, tokens → prompt); no vLLM recording exists
// here, so this server is scripted from that source. A server that is
// neither vLLM nor llama-server has no tokenizer tokentop can ask.
func TestVLLMsTokenizerIsAskedInItsShape(t *testing.T) {
	var bodies []map[string]any
	srv := replay.NewServer(t, replay.Route{
		"GET /v1/models": func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"object":"list","data":[{"id":"meta-llama/Llama-3.2-1B","object":"model"}]}`))
		},
		"GET /version": func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"version":"0.11.0"}`)) },
		"POST /tokenize": func(w http.ResponseWriter, r *http.Request) {
			var body map[string]any
			json.NewDecoder(r.Body).Decode(&body)
			bodies = append(bodies, body)
			w.Write([]byte(`{"count":3,"max_model_len":131072,"tokens":[128000,9906,1917],"token_strs":null}`))
		},
		"POST /detokenize": func(w http.ResponseWriter, r *http.Request) {
			var body map[string]any
			json.NewDecoder(r.Body).Decode(&body)
			bodies = append(bodies, body)
			w.Write([]byte(`{"prompt":"Hello world"}`))
		},
	})
	b, err := New(backends.Config{URL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	tok := b.(backends.Tokenizer)
	if _, err := tok.Tokenize(context.Background(), "x", true); !errors.Is(err, backends.ErrNoTokenizer) {
		t.Fatalf("before the probe knew the server: %v", err)
	}
	if _, err := b.Probe(context.Background(), "meta-llama/Llama-3.2-1B"); err != nil {
		t.Fatal(err)
	}
	ids, err := tok.Tokenize(context.Background(), "Hello world", true)
	if err != nil || !slices.Equal(ids, []int{128000, 9906, 1917}) {
		t.Fatalf("tokens %v %v", ids, err)
	}
	text, err := tok.Detokenize(context.Background(), []int{9906, 1917})
	if err != nil || text != "Hello world" {
		t.Fatalf("text %q %v", text, err)
	}
	if len(bodies) != 2 || bodies[0]["model"] != "meta-llama/Llama-3.2-1B" || bodies[0]["prompt"] != "Hello world" || bodies[0]["add_special_tokens"] != true ||
		bodies[1]["model"] != "meta-llama/Llama-3.2-1B" || len(bodies[1]["tokens"].([]any)) != 2 {
		t.Errorf("requests %v", bodies)
	}
}
