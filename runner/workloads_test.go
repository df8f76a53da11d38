package runner

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tokentop/tokentop/backends/replay"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/session"
)

// recordedLlama is a llama-server of recorded exchanges (b10470 family):
// its probes, /completion's stream (whose timings say 4 prompt tokens
// came from its cache), /tokenize, /detokenize and /metrics (metrics; nil:
// none, as a build without --metrics); it keeps each /completion prompt
// it was sent.
type recordedLlama struct {
	url     string
	mu      sync.Mutex
	prompts []string
}

func newRecordedLlama(t *testing.T, metrics http.HandlerFunc) *recordedLlama {
	l := &recordedLlama{}
	completion := replay.Serve(replay.Load(t, "llamacpp/completion_t0_stream"))
	routes := llamaRoutes(t, func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Prompt string `json:"prompt"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		l.mu.Lock()
		l.prompts = append(l.prompts, body.Prompt)
		l.mu.Unlock()
		completion(w, r)
	})
	routes["POST /tokenize"] = replay.Serve(replay.Load(t, "llamacpp/tokenize"))
	routes["POST /detokenize"] = replay.Serve(replay.Load(t, "llamacpp/detokenize"))
	if metrics != nil {
		routes["GET /metrics"] = metrics
	}
	l.url = replay.NewServer(t, routes).URL
	return l
}

// run runs profile text (its [[arms]] on the llamacpp backend at l) with
// opts' workload flags.
func (l *recordedLlama) run(t *testing.T, src string, opts Options) (session.ArmSummary, *session.Manifest, []session.Record, []Event) {
	t.Helper()
	p, err := profiles.Parse("t.toml", []byte("name = \"t\"\nmax_tokens = 32\nwarmup = 0\nseed = 4\n"+src+"\n[[arms]]\nname = \"a\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	opts.Backend, opts.URL, opts.OutDir = "llamacpp", l.url, t.TempDir()
	opts.Warmup, opts.MaxTokens = NoOverride, NoOverride
	if opts.Trials == 0 {
		opts.Trials = NoOverride
	}
	_, events := runComplete(t, p, opts)
	fin := eventsOf[Finished](events)[0]
	m, err := session.ReadManifest(fin.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	return fin.Summary["a"], m, trials(events), events
}

// withMetrics is a recorded llama-server with its recorded /metrics.
func withMetrics(t *testing.T) *recordedLlama {
	return newRecordedLlama(t, replay.Serve(replay.Load(t, "llamacpp/metrics_busy")))
}

// scraped checks that a session's server metrics were read into its CSV.
func scraped(t *testing.T, m *session.Manifest, events []Event) {
	t.Helper()
	if m.ServerMetrics == nil || m.ServerMetrics.Servers[0].Status != "scraped" {
		t.Fatalf("server metrics %+v", m.ServerMetrics)
	}
	dir := filepath.Dir(eventsOf[Finished](events)[0].Manifest)
	if _, err := os.Stat(filepath.Join(dir, m.ServerMetrics.File)); err != nil {
		t.Error(err)
	}
}

// The four workloads against llama-server's recorded shapes: a
// ShareGPT file, a token-exact synthetic workload, a 3-turn conversation
// and a shared prefix, each with the server's metrics read into its CSV.
func TestTheWorkloadsRunAgainstRecordedLlamaServer(t *testing.T) {
	dir := t.TempDir()
	t.Run("sharegpt", func(t *testing.T) {
		l := withMetrics(t)
		file := filepath.Join(dir, "sg.json")
		os.WriteFile(file, []byte(shareGPTFile), 0o644)
		_, m, recs, events := l.run(t, "trials = 4\nprompts = [\"x\"]", Options{PromptsFile: file})
		scraped(t, m, events)
		if m.Profile.PromptsFile == nil || m.Profile.PromptsFile.Format != "sharegpt" || len(recs) != 4 {
			t.Fatalf("prompts %+v, %d trials", m.Profile.PromptsFile, len(recs))
		}
		for _, p := range l.prompts {
			if p != "What is a cat?" && p != "Why is the sky blue?" {
				t.Errorf("sent %q", p)
			}
		}
	})
	t.Run("token-exact", func(t *testing.T) {
		l := withMetrics(t)
		_, m, recs, events := l.run(t, "trials = 3\ninput_tokens = 8\noutput_tokens = 32", Options{})
		scraped(t, m, events)
		// The recording answers every /tokenize with the same 10 tokens,
		// so no cut makes 8: the manifest says the prompts missed, and
		// the server's count (5) against the 8 asked is warned of.
		if l := m.Profile.Lengths; l == nil || !strings.Contains(l.Tokenizers[0], "made with the server's own tokenizer, but 3 of 3 prompts missed their length by up to 2 tokens") {
			t.Errorf("lengths %+v", m.Profile.Lengths)
		}
		if recs[0].RequestedPromptTokens != 8 || recs[0].PromptTokens != 5 || recs[0].RequestedOutputTokens != 32 || recs[0].OutputTokens != 32 {
			t.Errorf("record %+v", recs[0])
		}
		if w := eventsOf[Warning](events); len(w) != 1 || !strings.Contains(w[0].Text, "the server counted 5 prompt tokens of the 8 asked") {
			t.Errorf("warnings %+v", w)
		}
	})
	t.Run("3-turn conversation", func(t *testing.T) {
		l := withMetrics(t)
		file := filepath.Join(dir, "c.jsonl")
		os.WriteFile(file, []byte(`{"messages": [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"}, {"role": "user", "content": "q2"}, {"role": "assistant", "content": "a2"}, {"role": "user", "content": "q3"}]}`+"\n"), 0o644)
		s, m, recs, events := l.run(t, "trials = 3\nprompts = [\"x\"]", Options{PromptsFile: file, MultiTurn: true})
		scraped(t, m, events)
		want := []string{"q1", "q1\n\na1\n\nq2", "q1\n\na1\n\nq2\n\na2\n\nq3"}
		for k, r := range recs {
			if r.Turn != k+1 || l.prompts[k] != want[k] {
				t.Errorf("trial %d: turn %d sent %q, want turn %d %q", r.Trial, r.Turn, l.prompts[k], k+1, want[k])
			}
		}
		if !strings.HasPrefix(s.Turns, "TTFT p50 by turn: turn 1 ") {
			t.Errorf("turns %q", s.Turns)
		}
	})
	t.Run("shared prefix", func(t *testing.T) {
		l := withMetrics(t)
		s, m, _, events := l.run(t, "trials = 4\nprompts = [\"Once upon a time\"]\nprompt_cache = true\nprefix_tokens = 6\nprefix_groups = 2", Options{})
		scraped(t, m, events)
		if c := s.PrefixCache; c == nil || c.Hits != 4 || c.HitRate <= 0 {
			t.Errorf("prefix cache %+v", c)
		}
		if m.Profile.Lengths == nil || m.Profile.Lengths.PrefixGroups != 2 {
			t.Errorf("lengths %+v", m.Profile.Lengths)
		}
		for _, p := range l.prompts {
			if !strings.HasSuffix(p, "\n\nOnce upon a time") {
				t.Errorf("sent %q", p)
			}
		}
	})
}

const shareGPTFile = `[{"conversations": [{"from": "human", "value": "What is a cat?"}, {"from": "gpt", "value": "A small animal."}]},
{"conversations": [{"from": "human", "value": "Why is the sky blue?"}, {"from": "gpt", "value": "Light scatters."}]}]`
