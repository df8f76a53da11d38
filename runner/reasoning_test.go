package runner

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/backends/ollama"
	"github.com/tokentop/tokentop/backends/openai"
	"github.com/tokentop/tokentop/backends/replay"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/session"
)

// scriptedReasoner streams, like vLLM with a reasoning parser, reasoning
// deltas then answer deltas, the first after 20 ms and each next 10 ms
// later, then a usage counting them all.
func scriptedReasoner(t *testing.T, reasoning, answer int) string {
	t.Helper()
	chunk := func(delta string) string {
		return `data: {"id":"c","object":"chat.completion.chunk","model":"qwen3","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}` + "\n\n"
	}
	srv := replay.NewServer(t, replay.Route{
		"GET /v1/models": func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"qwen3","object":"model"}]}`)
		},
		"POST /v1/chat/completions": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			flush := func(s string) { fmt.Fprint(w, s); w.(http.Flusher).Flush() }
			flush(chunk(`{"role":"assistant","content":""}`))
			time.Sleep(10 * time.Millisecond)
			for i := range reasoning + answer {
				time.Sleep(10 * time.Millisecond)
				if i < reasoning {
					flush(chunk(`{"reasoning_content":"r"}`))
				} else {
					flush(chunk(`{"content":"a"}`))
				}
			}
			flush(fmt.Sprintf(`data: {"id":"c","object":"chat.completion.chunk","model":"qwen3","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":%d,"total_tokens":%d}}`+"\n\ndata: [DONE]\n\n",
				reasoning+answer, reasoning+answer+5))
		},
	})
	return srv.URL + "/v1"
}

// runReasoner runs one trial per arm (arms: the profile's [[arms]]
// tables) on an OpenAI-compatible chat endpoint at url.
func runReasoner(t *testing.T, url, arms string) (string, error, []Event) {
	t.Helper()
	p, err := profiles.Parse("t.toml", []byte("name = \"t\"\nmax_tokens = 50\ntrials = 1\nwarmup = 0\nseed = 3\ntimeout = \"30s\"\nprompts = [\"Think\"]\n"+arms))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Resolve(p, Options{Backend: "openai", URL: url, Model: "qwen3", Endpoint: "chat", OutDir: t.TempDir(), Trials: 1,
		Warmup: 0, MaxTokens: NoOverride})
	if err != nil {
		t.Fatal(err)
	}
	plan.Telemetry = testPlan(t, 0, 1, "x").Telemetry
	b, err := openai.Kind.Open(plan.Targets[0].Config)
	if err != nil {
		t.Fatal(err)
	}
	return runPlan(t, context.Background(), plan, b)
}

// TestThinkOnAndOffIsAnAB: each arm's think goes to the server in its
// words and into the manifest, with how its stream's reasoning was told
// from its output; an arm whose server cannot be told is refused before
// anything is measured.
func TestThinkOnAndOffIsAnAB(t *testing.T) {
	url := scriptedReasoner(t, 4, 4)
	status, err, events := runReasoner(t, url, "[[arms]]\nname = \"thinking\"\nthink = true\n[[arms]]\nname = \"direct\"\nthink = false\n")
	if err != nil || status != session.StatusComplete {
		t.Fatalf("status %s, error %v", status, err)
	}
	s := finishedSession(t, events)
	on, _ := s.Manifest.Arm("thinking")
	off, _ := s.Manifest.Arm("direct")
	if on.Think != "true" || on.ThinkSent != "chat_template_kwargs.enable_thinking = true" || off.Think != "false" ||
		!strings.Contains(s.Manifest.Targets[0].Reasoning, "delta.reasoning_content and delta.reasoning are reasoning") {
		t.Errorf("arms %+v %+v, target %+v", on, off, s.Manifest.Targets[0])
	}
	status, err, events = runReasoner(t, url, "[[arms]]\nname = \"a\"\nthink = \"high\"\n[[arms]]\nname = \"b\"\n")
	if err != nil || len(trials(events)) != 2 {
		t.Fatalf("an effort: %s %v", status, err)
	}
}

// TestAThinkTheServerCannotHonourIsRefused: Ollama's stories260k cannot
// think (its /api/show lists completion only): think = true fails the run
// before any trial, in one line naming the arm.
func TestAThinkTheServerCannotHonourIsRefused(t *testing.T) {
	srv := replay.NewServer(t, replay.Route{
		"GET /api/version": replay.Serve(replay.Load(t, "ollama/api_version")),
		"GET /api/tags":    replay.Serve(replay.Load(t, "ollama/api_tags")),
		"POST /api/show":   replay.Serve(replay.Load(t, "ollama/api_show")),
	})
	status, err, events := runOneArm(t, ollama.Kind, srv.URL, "tiny15m", "think = true")
	if status != session.StatusFailed || err == nil || len(trials(events)) != 0 ||
		!strings.HasPrefix(err.Error(), "arm greedy, think = true, on the ollama backend") || !strings.Contains(err.Error(), "the model cannot think") {
		t.Errorf("status %s, %d trials, error %v", status, len(trials(events)), err)
	}
}

// TestReasoningTokensAreTimedLikeAnswers is the scripted stream:
// 40 reasoning tokens then 10 answer tokens, 10 ms apart from 20 ms. Only
// answer deltas used to be arrivals: TTFT read 440 ms, TPOT 2.1 ms (decode
// over 50 tokens while the clock saw 10) and ITL spanned 10 of 50 tokens.
// The sleeps can only run long on a busy machine, so the bounds below are
// lower bounds and distances, never a ceiling on a duration.
func TestReasoningTokensAreTimedLikeAnswers(t *testing.T) {
	status, err, events := runReasoner(t, scriptedReasoner(t, 40, 10), "[[arms]]\nname = \"greedy\"\n")
	recs := trials(events)
	if err != nil || status != session.StatusComplete || len(recs) != 1 {
		t.Fatalf("status %s, error %v, %d trials", status, err, len(recs))
	}
	r := recs[0]
	t.Logf("TTFT %.1f ms, TTFO %.1f ms, TPOT %.2f ms, ITL mean %.2f ms over %d chunks", r.TTFTMs, r.TTFOMs, r.TPOTMs, r.ITLMeanMs, r.Chunks)
	if r.TTFTMs < 20 || r.TTFOMs < 420 || r.TTFOMs-r.TTFTMs < 390 {
		t.Errorf("TTFT %.1f ms and TTFO %.1f ms: the first token came at 20 ms, the first answer 40 tokens later", r.TTFTMs, r.TTFOMs)
	}
	if r.ReasoningTokens != 40 || r.OutputTokens != 50 || r.Chunks != 50 || r.ITLPer != session.ITLPerToken {
		t.Errorf("reasoning %d of %d tokens in %d chunks, ITL per %q", r.ReasoningTokens, r.OutputTokens, r.Chunks, r.ITLPer)
	}
	if r.TPOTMs < 9.5 || r.ITLMeanMs < 9 {
		t.Errorf("TPOT %.2f ms and ITL %.2f ms: the tokens came 10 ms apart", r.TPOTMs, r.ITLMeanMs)
	}
}

// TestFixedLengthOnOllamasV1IsRefused: the openai backend can send
// ignore_eos, but Ollama's /v1 drops it, so fixed_length = true would run
// trials of every length recorded as fixed; the run is refused before
// any trial, naming the server and what to do.
func TestFixedLengthOnOllamasV1IsRefused(t *testing.T) {
	srv := replay.NewServer(t, replay.Route{
		"GET /v1/models":   replay.Serve(replay.Load(t, "ollama/v1_models_stories260k")),
		"GET /api/version": replay.Serve(replay.Load(t, "ollama/api_version")),
	})
	status, err, events := runOneArm(t, openai.Kind, srv.URL+"/v1", "stories260k", "fixed_length = true")
	if status != session.StatusFailed || err == nil || len(trials(events)) != 0 ||
		!strings.HasPrefix(err.Error(), "fixed_length = true: the openai backend") || !strings.Contains(err.Error(), "Ollama's /v1 drops ignore_eos") ||
		!strings.Contains(err.Error(), "set fixed_length = false") {
		t.Errorf("status %s, %d trials, error %v", status, len(trials(events)), err)
	}
}

// runOneArm runs one timed trial of a one-arm profile with the extra
// top-level line against kind's server at url.
func runOneArm(t *testing.T, kind backends.Kind, url, model, extra string) (string, error, []Event) {
	t.Helper()
	p, err := profiles.Parse("t.toml", []byte("name = \"t\"\nmax_tokens = 8\ntrials = 1\nprompts = [\"x\"]\n"+extra+"\n[[arms]]\nname = \"greedy\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Resolve(p, Options{Backend: kind.Name, URL: url, Model: model, OutDir: t.TempDir(), Trials: 1, Warmup: 0, MaxTokens: NoOverride})
	if err != nil {
		t.Fatal(err)
	}
	plan.Telemetry = testPlan(t, 0, 1, "x").Telemetry
	b, err := kind.Open(plan.Targets[0].Config)
	if err != nil {
		t.Fatal(err)
	}
	return runPlan(t, context.Background(), plan, b)
}
