package llamacpp

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
	"github.com/tokentop/tokentop/backends/internal/stream"
	"github.com/tokentop/tokentop/backends/replay"
)

func generate(t *testing.T, h http.HandlerFunc) (chunks, tokens int, res backends.Result, err error) {
	t.Helper()
	srv := replay.NewServer(t, replay.Route{"POST /completion": h})
	b, _ := Kind.New(backends.Config{URL: srv.URL})
	res, err = b.Generate(context.Background(), backends.Request{Prompt: "Once upon a time", MaxTokens: 32},
		func(n int, _ backends.TokenKind) { chunks++; tokens += n })
	return
}

func TestGenerateReplaysRecordedStream(t *testing.T) {
	chunks, tokens, res, err := generate(t, replay.Serve(replay.Load(t, "llamacpp/completion_t0_stream")))
	if err != nil {
		t.Fatal(err)
	}
	if chunks != 32 || tokens != 32 || res.OutputTokens != 32 || res.PromptTokens != 5 || res.StopReason != "length" {
		t.Errorf("chunks %d tokens %d result %+v", chunks, tokens, res)
	}
	if res.ServerPrefillMs != 313.779 || res.ServerDecodeMs != 9815.207 {
		t.Errorf("timings %+v", res)
	}
	// The recorded stream's ids, chunk by chunk: " rectangle" then "];"
	// four times (16701, 1385), then "Grad".
	if len(res.TokenIDs) != 32 || !slices.Equal(res.TokenIDs[:6], []int{16701, 1385, 1385, 1385, 1385, 25584}) {
		t.Errorf("token ids %v", res.TokenIDs)
	}
}

// TestTokenIDsOnlyWhereEveryChunkHasThem: a build that sends no tokens
// array gives no ids at all, not some.
func TestTokenIDsOnlyWhereEveryChunkHasThem(t *testing.T) {
	body := "data: {\"content\":\"a\",\"tokens\":[7],\"stop\":false}\n\n" +
		"data: {\"content\":\"b\",\"stop\":false}\n\n" +
		"data: {\"content\":\"\",\"stop\":true,\"stop_type\":\"limit\"}\n\n"
	res, err := decode(strings.NewReader(body), func(int, backends.TokenKind) {})
	if err != nil || res.TokenIDs != nil || res.ChunkCounts {
		t.Errorf("ids %v counts %v, error %v", res.TokenIDs, res.ChunkCounts, err)
	}
}

// TestInlineThinkingIsReasoning: llama-server's native stream is the raw
// text; a reasoning model's thinking is in it between <think> tags, each
// one token, and every token of it is an arrival of its kind.
func TestInlineThinkingIsReasoning(t *testing.T) {
	var got replay.Chunks
	res, err := decode(bytes.NewReader(replay.Reasoning(t, "llamaserver_completion_think_tags_stream").Body), got.OnChunk)
	if err != nil || got.Kinds != "rrrrrrrraaaaa" || len(got.Tokens) != 13 || !res.ChunkCounts || res.OutputTokens != 13 || res.LeadingReasoningChunks != 0 {
		t.Errorf("kinds %q tokens %v result %+v, error %v", got.Kinds, got.Tokens, res, err)
	}
}

// TestAStreamEndsAtItsFinalEvent: a server holding the connection open
// after the event with stop: true held the trial until its timeout.
func TestAStreamEndsAtItsFinalEvent(t *testing.T) {
	res, err := replay.GenerateHeld(t, Kind, backends.Config{}, "POST /completion", replay.Load(t, "llamacpp/completion_t0_stream"), backends.Request{Prompt: "x", MaxTokens: 32})
	if err != nil || res.OutputTokens != 32 {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestMultiTokenChunkReportsItsTokens(t *testing.T) {
	body := "data: {\"content\":\"ab\",\"tokens\":[1,2,3],\"stop\":false}\n\n" +
		"data: {\"content\":\"\",\"tokens\":[],\"stop\":true,\"stop_type\":\"eos\",\"timings\":{\"predicted_n\":3}}\n\n"
	chunks, tokens, res, err := generate(t, replay.Serve(replay.Exchange{Status: 200, ContentType: "text/event-stream", Body: []byte(body)}))
	if err != nil || chunks != 1 || tokens != 3 || res.OutputTokens != 3 || res.StopReason != "stop" || !res.ChunkCounts {
		t.Errorf("chunks %d tokens %d %+v %v", chunks, tokens, res, err)
	}
	// A chunk that says it carried more tokens than any step makes is a
	// broken server's: one arrival, its count not known.
	huge := "data: {\"content\":\"ab\",\"tokens\":[" + strings.Repeat("1,", stream.MaxChunkTokens) + "1],\"stop\":false}\n\n"
	var got replay.Chunks
	if res, err := decode(strings.NewReader(huge+body[strings.Index(body, "\n\n")+2:]), got.OnChunk); err != nil || !slices.Equal(got.Tokens, []int{1}) || res.ChunkCounts {
		t.Errorf("%d-token chunk: tokens %v, counts known %v, error %v", stream.MaxChunkTokens+1, got.Tokens, res.ChunkCounts, err)
	}
}

func TestDegradedStreams(t *testing.T) {
	cases := []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{"prompt too long 400", replay.Serve(replay.Load(t, "llamacpp/error_too_long_prompt_completion_stream")), "HTTP 400: request (402 tokens) exceeds the available context size"},
		{"malformed request 500", replay.Serve(replay.Load(t, "llamacpp/error_invalid_json_completion")), "HTTP 500"},
		{"server killed mid-stream", replay.Cut(replay.Load(t, "llamacpp/kill9_completion_stream")), stream.ErrTruncated.Error()},
		{"event not JSON", replay.Serve(replay.Exchange{Status: 200, Body: []byte("data: {nope\n\n")}), "stream data is not JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, _, err := generate(t, c.handler)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

func TestProbe(t *testing.T) {
	srv := replay.NewServer(t, replay.Route{
		"GET /health": replay.Serve(replay.Load(t, "llamacpp/health")),
		"GET /props":  replay.Serve(replay.Load(t, "llamacpp/props")),
	})
	b, _ := Kind.New(backends.Config{URL: srv.URL})
	info, err := b.Probe(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if info.ServerVersion != "b10470-34af94cd9" || info.Model != "/opt/models/tinyllm/tiny15m.gguf" || info.Quantization != "F16" || info.ContextTokens != 256 {
		t.Errorf("info %+v", info)
	}
	loading := replay.NewServer(t, replay.Route{"GET /health": replay.Serve(replay.Load(t, "llamacpp/loading_503_health"))})
	b, _ = Kind.New(backends.Config{URL: loading.URL})
	_, err = b.Probe(context.Background(), "")
	if err == nil || !strings.Contains(err.Error(), "Loading model") || !errors.Is(err, backends.ErrNotReady) {
		t.Errorf("loading server: %v", err)
	}
	// A trial sent while it loads is a server not ready, not a bad request.
	_, _, _, err = generate(t, replay.Serve(replay.Load(t, "llamacpp/loading_503_completion")))
	if !errors.Is(err, backends.ErrNotReady) || errors.Is(err, backends.ErrBadRequest) {
		t.Errorf("trial while loading: %v", err)
	}
}

// TestPromptCacheIsOffAndHitsAreRecorded replays llama-server's answers to
// a repeated prompt: with the cache on, the second answer re-evaluated 1
// of 5 tokens; with cache_prompt false, all 5.
func TestPromptCacheIsOffAndHitsAreRecorded(t *testing.T) {
	var sent map[string]any
	srv := replay.NewServer(t, replay.Route{"POST /completion": func(w http.ResponseWriter, r *http.Request) {
		json.NewDecoder(r.Body).Decode(&sent)
		replay.Serve(replay.Load(t, "llamacpp/cache_prompt_false_repeat"))(w, r)
	}})
	b, _ := Kind.New(backends.Config{URL: srv.URL})
	res, err := b.Generate(context.Background(), backends.Request{Prompt: "Once upon a time", MaxTokens: 16}, func(int, backends.TokenKind) {})
	if err != nil || sent["cache_prompt"] != false || res.CachedTokens != 0 || res.PromptTokens != 5 {
		t.Errorf("sent %v, result %+v %v", sent, res, err)
	}
	_, _, hit, err := generate(t, replay.Serve(replay.Load(t, "llamacpp/cache_prompt_repeat_b")))
	if err != nil || hit.CachedTokens != 4 || hit.PromptTokens != 5 || hit.ServerPrefillMs != 0.298 {
		t.Errorf("cache hit %+v %v", hit, err)
	}
}

// TestOptionsAreRequestFields: a target's options become fields of the
// /completion request beside cache_prompt, which stays the arm's.
func TestOptionsAreRequestFields(t *testing.T) {
	for _, cache := range []bool{false, true} {
		var sent map[string]any
		srv := replay.NewServer(t, replay.Route{"POST /completion": func(w http.ResponseWriter, r *http.Request) {
			json.NewDecoder(r.Body).Decode(&sent)
			replay.Serve(replay.Load(t, "llamacpp/cache_prompt_repeat_b"))(w, r)
		}})
		b, err := Kind.New(backends.Config{URL: srv.URL, Options: map[string]any{"n_keep": int64(-1), "dry_multiplier": 0.5, "samplers": "top_k;temperature"}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := b.Generate(context.Background(), backends.Request{Prompt: "Once upon a time", MaxTokens: 16, PromptCache: cache}, func(int, backends.TokenKind) {})
		if err != nil || res.CachedTokens != 4 {
			t.Fatalf("%+v %v", res, err)
		}
		if sent["n_keep"] != -1.0 || sent["dry_multiplier"] != 0.5 || sent["samplers"] != "top_k;temperature" || sent["cache_prompt"] != cache || sent["n_predict"] != 16.0 {
			t.Errorf("cache %v: sent %v", cache, sent)
		}
	}
	if _, err := Kind.New(backends.Config{Options: map[string]any{"cache_prompt": true}}); err == nil || !strings.Contains(err.Error(), "options.cache_prompt") {
		t.Errorf("cache_prompt as an option: %v", err)
	}
}

func TestContextLimitIsTruncatedNotLength(t *testing.T) {
	_, _, res, err := generate(t, replay.Serve(replay.Load(t, "llamacpp/completion_ctx_limit_stream")))
	if err != nil || res.StopReason != backends.StopTruncated || res.OutputTokens != 251 {
		t.Errorf("%+v %v", res, err)
	}
}

func TestIgnoreEOSIsSentOnlyWhenAsked(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		data, _ := json.Marshal(RequestBody(backends.Request{IgnoreEOS: ignore}, nil))
		if got := strings.Contains(string(data), `"ignore_eos":true`); got != ignore {
			t.Errorf("IgnoreEOS %v: body %s", ignore, data)
		}
	}
}

// TestServerGoneBeforeItsHeaders: a server that takes the connection and
// closes it before answering (killed under the request, or dropping what
// it is sent) dropped it, said in words, not a bare EOF; it is not one
// that cannot be reached, for its probe may well pass.
func TestServerGoneBeforeItsHeaders(t *testing.T) {
	_, _, _, err := generate(t, func(w http.ResponseWriter, r *http.Request) {
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	})
	if !errors.Is(err, backends.ErrDropped) || errors.Is(err, backends.ErrUnreachable) || !strings.Contains(err.Error(), "closed the connection before answering") {
		t.Errorf("%v", err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, name := range []string{"completion_t0_stream", "completion_t08_stream", "kill9_completion_stream", "completion_ctx_limit_stream", "cache_prompt_repeat_b"} {
		f.Add(replay.Load(f, "llamacpp/"+name).Body)
	}
	f.Add(replay.Reasoning(f, "llamaserver_completion_think_tags_stream").Body)
	f.Fuzz(func(t *testing.T, data []byte) {
		tokens := 0
		res, err := decode(bytes.NewReader(data), func(n int, _ backends.TokenKind) {
			if n < 1 || n > stream.MaxChunkTokens {
				t.Fatalf("chunk of %d tokens", n)
			}
			tokens += n
		})
		if err == nil && !bytes.Contains(data, []byte(`"stop"`)) {
			t.Fatalf("stream without a final event accepted as complete: %+v", res)
		}
		// Ids, where kept, are one a token counted, never more.
		if res.TokenIDs != nil && len(res.TokenIDs) != tokens {
			t.Fatalf("%d ids for %d tokens", len(res.TokenIDs), tokens)
		}
	})
}

// Tokenize and Detokenize ask llama-server's /tokenize and /detokenize as
// the recorded requests did, and read their recorded answers.
func TestTokenizeAndDetokenizeAskTheServer(t *testing.T) {
	var bodies []map[string]any
	keep := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var body map[string]any
			json.NewDecoder(r.Body).Decode(&body)
			bodies = append(bodies, body)
			h(w, r)
		}
	}
	srv := replay.NewServer(t, replay.Route{
		"POST /tokenize":   keep(replay.Serve(replay.Load(t, "llamacpp/tokenize"))),
		"POST /detokenize": keep(replay.Serve(replay.Load(t, "llamacpp/detokenize"))),
	})
	b, _ := Kind.New(backends.Config{URL: srv.URL})
	tok := b.(backends.Tokenizer)
	ids, err := tok.Tokenize(context.Background(), "Once upon a time there was a little dog", false)
	if err != nil || !slices.Equal(ids, []int{403, 407, 261, 378, 383, 286, 261, 376, 400, 428}) {
		t.Fatalf("tokens %v %v", ids, err)
	}
	text, err := tok.Detokenize(context.Background(), []int{403, 407, 261, 378, 430})
	if err != nil || text != " Once upon a timeb" {
		t.Fatalf("text %q %v", text, err)
	}
	if len(bodies) != 2 || bodies[0]["content"] != "Once upon a time there was a little dog" || bodies[0]["add_special"] != false ||
		len(bodies[1]["tokens"].([]any)) != 5 {
		t.Errorf("requests %v", bodies)
	}
}
