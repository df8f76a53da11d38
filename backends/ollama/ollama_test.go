package ollama

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/backends/internal/stream"
	"github.com/tokentop/tokentop/backends/replay"
)

func generate(t *testing.T, h http.HandlerFunc) (chunks, tokens int, res backends.Result, err error) {
	t.Helper()
	srv := replay.NewServer(t, replay.Route{"POST /api/generate": h})
	b, _ := Kind.New(backends.Config{URL: srv.URL})
	res, err = b.Generate(context.Background(), backends.Request{Model: "tiny15m", Prompt: "Once upon a time", MaxTokens: 32},
		func(n int, _ backends.TokenKind) { chunks++; tokens += n })
	return
}

// TestThinkingIsReasoning: Ollama's thinking field, and a response whose
// reasoning a template opened in the prompt (only </think> in the text),
// are reasoning arrivals; the runner turns the LeadingReasoningChunks
// first answers into reasoning.
func TestThinkingIsReasoning(t *testing.T) {
	cases := []struct {
		fixture, kinds  string
		leading, output int
	}{
		{"ollama_generate_thinking_stream", "rrrrrraaaa", 0, 10},
		{"ollama_generate_think_opened_by_template_stream", "aaaaaaraaaaa", 7, 12},
	}
	for _, c := range cases {
		var got replay.Chunks
		res, err := decode(bytes.NewReader(replay.Reasoning(t, c.fixture).Body), got.OnChunk)
		if err != nil || got.Kinds != c.kinds || res.LeadingReasoningChunks != c.leading || res.OutputTokens != c.output || !res.ChunkCounts {
			t.Errorf("%s: kinds %q result %+v, error %v", c.fixture, got.Kinds, res, err)
		}
	}
}

// TestAStreamEndsAtItsFinalLine: a server holding the connection open
// after the line with done: true held the trial until its timeout.
func TestAStreamEndsAtItsFinalLine(t *testing.T) {
	res, err := replay.GenerateHeld(t, Kind, backends.Config{}, "POST /api/generate", replay.Load(t, "ollama/api_generate_t0_stream"), backends.Request{Model: "m", MaxTokens: 32})
	if err != nil || res.OutputTokens != 32 {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestGenerateReplaysRecordedStream(t *testing.T) {
	chunks, tokens, res, err := generate(t, replay.Serve(replay.Load(t, "ollama/api_generate_t0_stream")))
	if err != nil {
		t.Fatal(err)
	}
	// The recording has 32 lines with text, then the final line.
	if chunks != 32 || tokens != 32 || res.OutputTokens != 32 || res.PromptTokens != 32 {
		t.Errorf("chunks %d tokens %d result %+v", chunks, tokens, res)
	}
	if res.StopReason != "length" || res.ServerLoadMs != 0.961778 || res.ServerPrefillMs != 436.187 || res.ServerDecodeMs != 1293.2 {
		t.Errorf("server phases %+v", res)
	}
}

func TestRequestBodyMatchesRecordedRequest(t *testing.T) {
	recorded, err := os.ReadFile(filepath.Join(replay.FixturesDir(t), "ollama/api_generate_t0_stream.request.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	json.Unmarshal(recorded, &want)
	sent, _ := json.Marshal(RequestBody(backends.Request{Model: "tiny15m", Prompt: "Once upon a time", MaxTokens: 32, Seed: 42}, nil))
	var got map[string]any
	json.Unmarshal(sent, &got)
	for k, v := range want["options"].(map[string]any) {
		if got["options"].(map[string]any)[k] != v {
			t.Errorf("options.%s = %v, recorded %v", k, got["options"].(map[string]any)[k], v)
		}
	}
	for _, k := range []string{"model", "prompt", "stream"} {
		if got[k] != want[k] {
			t.Errorf("%s = %v, recorded %v", k, got[k], want[k])
		}
	}
	// Neutral knobs override Ollama's own sampling defaults.
	if opts := got["options"].(map[string]any); opts["top_k"] != 0.0 || opts["top_p"] != 1.0 || opts["min_p"] != 0.0 {
		t.Errorf("neutral sampling knobs not sent: %v", opts)
	}
}

// TestOptionsJoinTheRequestsOptions: a target's options go into "options"
// beside the ones tokentop sets, and the recorded stream still decodes; an
// option tokentop sets from the arm, or one that is not a scalar, is
// refused by name before any request.
func TestOptionsJoinTheRequestsOptions(t *testing.T) {
	var sent map[string]any
	srv := replay.NewServer(t, replay.Route{"POST /api/generate": func(w http.ResponseWriter, r *http.Request) {
		json.NewDecoder(r.Body).Decode(&sent)
		replay.Serve(replay.Load(t, "ollama/api_generate_t0_stream"))(w, r)
	}})
	b, err := Kind.New(backends.Config{URL: srv.URL, Options: map[string]any{"num_ctx": int64(512), "num_thread": int64(2), "low_vram": true}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Generate(context.Background(), backends.Request{Model: "tiny15m", Prompt: "Once upon a time", MaxTokens: 32, Temperature: 0.5}, func(int, backends.TokenKind) {})
	if err != nil || res.OutputTokens != 32 {
		t.Fatalf("%+v %v", res, err)
	}
	opts := sent["options"].(map[string]any)
	if opts["num_ctx"] != 512.0 || opts["num_thread"] != 2.0 || opts["low_vram"] != true || opts["num_predict"] != 32.0 || opts["temperature"] != 0.5 {
		t.Errorf("options sent: %v", opts)
	}
	for _, bad := range []struct {
		options map[string]any
		want    string
	}{
		{map[string]any{"temperature": 0.1}, "options.temperature: tokentop sets temperature itself"},
		{map[string]any{"stop": []any{"x"}}, "options.stop: a []interface {}"},
	} {
		if _, err := Kind.New(backends.Config{Options: bad.options}); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: %v, want %q", bad.options, err, bad.want)
		}
	}
}

func TestDegradedStreams(t *testing.T) {
	cases := []struct {
		name    string
		handler http.HandlerFunc
		want    string
		chunks  int
	}{
		{"unknown model 404", replay.Serve(replay.Load(t, "ollama/error_unknown_model_generate")), "HTTP 404: model 'nope-does-not-exist' not found", 0},
		{"runner killed: error line under HTTP 200", replay.Serve(replay.Load(t, "ollama/kill9_runner_api_generate_stream")), "server error mid-stream: an error was encountered while running the model: unexpected EOF", 46},
		{"serve killed: connection cut", replay.Cut(replay.Load(t, "ollama/kill9_serve_api_generate_stream")), stream.ErrTruncated.Error(), 2},
		{"repeat abort: clean end without done", replay.Serve(replay.Load(t, "ollama/repeat_abort_api_generate_stream")), stream.ErrTruncated.Error(), 84},
		{"line not JSON", replay.Serve(replay.Exchange{Status: 200, Body: []byte("{\"response\":\"a\",\"done\":false}\n<html>oops</html>\n")}), "stream data is not JSON", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			chunks, _, _, err := generate(t, c.handler)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
			if chunks != c.chunks {
				t.Errorf("%d chunks reported before the failure, want %d", chunks, c.chunks)
			}
		})
	}
}

func TestHugeResponseLineIsRefusedNotBuffered(t *testing.T) {
	huge := bytes.Repeat([]byte("x"), 30<<20)
	_, _, _, err := generate(t, func(w http.ResponseWriter, r *http.Request) { w.Write(huge) })
	if err == nil || !strings.Contains(err.Error(), "stream line longer than") {
		t.Fatalf("30 MB line: %v", err)
	}
}

func TestTimeoutAndRefusedConnection(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := replay.NewServer(t, replay.Route{"POST /api/generate": func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}})
	b, _ := Kind.New(backends.Config{URL: srv.URL})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	// The deadline ends it: were it ignored, the request would wait for
	// the release at the test's end, and the error would not be this.
	_, err := b.Generate(ctx, backends.Request{Model: "m"}, func(int, backends.TokenKind) {})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hung server: %v", err)
	}

	url := replay.ClosedURL(t)
	b, _ = Kind.New(backends.Config{URL: url})
	_, err = b.Generate(context.Background(), backends.Request{Model: "m"}, func(int, backends.TokenKind) {})
	if err == nil || !strings.Contains(err.Error(), "connection refused (is the server running?)") {
		t.Errorf("refused: %v", err)
	}
	if _, err := b.Probe(context.Background(), "m"); err == nil || !strings.Contains(err.Error(), url) {
		t.Errorf("probe refused: %v", err)
	}
}

func TestProbe(t *testing.T) {
	srv := replay.NewServer(t, replay.Route{
		"GET /api/version": replay.Serve(replay.Load(t, "ollama/api_version")),
		"GET /api/tags":    replay.Serve(replay.Load(t, "ollama/api_tags")),
		"POST /api/show": func(w http.ResponseWriter, r *http.Request) {
			var req struct{ Model string }
			json.NewDecoder(r.Body).Decode(&req)
			if req.Model == "tiny15m" {
				replay.Serve(replay.Load(t, "ollama/api_show"))(w, r)
				return
			}
			replay.Serve(replay.Load(t, "ollama/error_unknown_model_show"))(w, r)
		},
	})
	b, _ := Kind.New(backends.Config{URL: srv.URL})
	info, err := b.Probe(context.Background(), "tiny15m")
	if err != nil {
		t.Fatal(err)
	}
	if info.ServerVersion != "0.33.0-rc2" || info.Model != "tiny15m:latest" || info.Quantization != "F16" ||
		info.Digest != "8bab5908352f4f0e079f8f1544b92eea5ece71746899a118dbbd9243be9c189b" {
		t.Errorf("info %+v", info)
	}
	_, err = b.Probe(context.Background(), "nope")
	if err == nil || !strings.Contains(err.Error(), "ollama pull nope") || !strings.Contains(err.Error(), "not found") {
		t.Errorf("unknown model: %v", err)
	}
}

// TestThinkIsTheRequestsOwnField: think goes at the top of the request
// (inside options Ollama ignores it, though the arm was labelled with it:
// ../shared/fixtures/ollama/api_generate_options_think_nonstream); an
// option Ollama does not take is refused by name, as Ollama never refuses
// one; a model whose capabilities lack thinking is refused think = true
// before any request, and the 400 a request gets says why in one line.
func TestThinkIsTheRequestsOwnField(t *testing.T) {
	for think, want := range map[string]any{"true": true, "false": false, "high": "high"} {
		body, _ := json.Marshal(RequestBody(backends.Request{Model: "m", Think: think}, nil))
		var sent map[string]any
		json.Unmarshal(body, &sent)
		if sent["think"] != want || sent["options"].(map[string]any)["think"] != nil {
			t.Errorf("think %s: body %s", think, body)
		}
	}
	if body, _ := json.Marshal(RequestBody(backends.Request{Model: "m"}, nil)); strings.Contains(string(body), "think") {
		t.Errorf("think sent unasked: %s", body)
	}
	for _, bad := range []struct {
		options map[string]any
		want    string
	}{
		{map[string]any{"think": true}, "options.think: thinking is set by think on the arm or profile"},
		{map[string]any{"num_ctxx": int64(512)}, "options.num_ctxx: the server takes no option of that name and would run without it, unsaid; use one of num_keep,"},
	} {
		if _, err := Kind.New(backends.Config{Options: bad.options}); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: %v, want %q", bad.options, err, bad.want)
		}
	}
	srv := replay.NewServer(t, replay.Route{
		"GET /api/version":   replay.Serve(replay.Load(t, "ollama/api_version")),
		"GET /api/tags":      replay.Serve(replay.Load(t, "ollama/api_tags")),
		"POST /api/show":     replay.Serve(replay.Load(t, "ollama/api_show")),
		"POST /api/generate": replay.Serve(replay.Load(t, "ollama/api_generate_think_stream")),
	})
	b, _ := Kind.Open(backends.Config{URL: srv.URL})
	if _, err := b.Probe(context.Background(), "tiny15m"); err != nil {
		t.Fatal(err)
	}
	if _, err := backends.ThinkSent(b, "true"); err == nil || !strings.Contains(err.Error(), "the model cannot think (Ollama lists its capabilities as completion)") {
		t.Errorf("think = true on a model without thinking: %v", err)
	}
	if sent, err := backends.ThinkSent(b, "false"); err != nil || sent != "think: false" {
		t.Errorf("think = false: %q %v", sent, err)
	}
	_, err := b.Generate(context.Background(), backends.Request{Model: "stories260k", Think: "true"}, func(int, backends.TokenKind) {})
	if !errors.Is(err, backends.ErrBadRequest) || err.Error() != `HTTP 400: "stories260k" does not support thinking` {
		t.Errorf("the recorded 400: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, name := range []string{"api_generate_t0_stream", "kill9_runner_api_generate_stream", "repeat_abort_api_generate_stream", "api_generate_ctx_overflow_stream"} {
		f.Add(replay.Load(f, "ollama/"+name).Body)
	}
	for _, name := range []string{"ollama_generate_thinking_stream", "ollama_generate_think_opened_by_template_stream"} {
		f.Add(replay.Reasoning(f, name).Body)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := decode(bytes.NewReader(data), func(n int, _ backends.TokenKind) {
			if n != 1 {
				t.Fatalf("NDJSON line reported as %d tokens", n)
			}
		})
		if err == nil && !bytes.Contains(data, []byte(`"done"`)) {
			t.Fatalf("stream without a final line accepted as complete: %+v", res)
		}
	})
}
