package runner

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/backends/builtin"
	"github.com/tokentop/tokentop/backends/llamacpp"
	"github.com/tokentop/tokentop/backends/replay"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/session"
)

// wordTokenizer is a fake backend whose tokenizer makes each word a token
// and a prompt's BOS one more, and which counts a prompt's tokens so.
type wordTokenizer struct {
	*fakeBackend
	mu    sync.Mutex
	vocab []string
}

func (w *wordTokenizer) Tokenize(_ context.Context, text string, special bool) ([]int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ids []int
	if special {
		ids = append(ids, -1)
	}
	for _, word := range strings.Fields(text) {
		ids = append(ids, len(w.vocab))
		w.vocab = append(w.vocab, word)
	}
	return ids, nil
}

func (w *wordTokenizer) Detokenize(_ context.Context, ids []int) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	words := make([]string, len(ids))
	for i, id := range ids {
		words[i] = w.vocab[id]
	}
	return strings.Join(words, " "), nil
}

func (w *wordTokenizer) Generate(ctx context.Context, req backends.Request, onChunk backends.OnChunk) (backends.Result, error) {
	res, err := w.fakeBackend.Generate(ctx, req, onChunk)
	res.PromptTokens = 1 + len(strings.Fields(req.Prompt))
	return res, err
}

// Lengths set in tokens: every arm's trial t asks the same lengths, its
// prompt made with the target's tokenizer to exactly that many tokens
// (its BOS included); each record keeps the lengths asked beside the
// server's counts; the manifest says how the prompts were made and that
// this backend (Ollama's kind) could not be told to generate the whole
// output length.
func TestLengthsInTokensAreMadeWithTheServersTokenizer(t *testing.T) {
	fake := &wordTokenizer{fakeBackend: &fakeBackend{delays: []time.Duration{0, 0, 0, 0}}}
	plan := testPlan(t, 0, 12, "greedy", "hot")
	plan.Profile.InputTokens = profiles.TokenLength{Min: 5, Max: 60}
	plan.Profile.OutputTokens = profiles.TokenLength{Fixed: 4}
	status, err, events := runPlan(t, context.Background(), plan, fake)
	if err != nil || status != session.StatusComplete {
		t.Fatal(status, err)
	}
	asked := map[int]int{}
	for _, r := range trials(events) {
		if r.RequestedPromptTokens < 5 || r.RequestedPromptTokens > 60 || r.PromptTokens != r.RequestedPromptTokens || r.RequestedOutputTokens != 4 {
			t.Errorf("%s trial %d: asked %d prompt tokens, counted %d; asked %d output", r.Arm, r.Trial, r.RequestedPromptTokens, r.PromptTokens, r.RequestedOutputTokens)
		}
		if n, ok := asked[r.Trial]; ok && n != r.RequestedPromptTokens {
			t.Errorf("trial %d asked %d and %d tokens of the two arms", r.Trial, n, r.RequestedPromptTokens)
		}
		asked[r.Trial] = r.RequestedPromptTokens
	}
	for _, req := range fake.requests {
		if req.MaxTokens != 4 || req.IgnoreEOS {
			t.Errorf("request asked %d tokens, ignore_eos %v (ollama cannot be told)", req.MaxTokens, req.IgnoreEOS)
		}
	}
	m, err := session.ReadManifest(eventsOf[Finished](events)[0].Manifest)
	if err != nil {
		t.Fatal(err)
	}
	l := m.Profile.Lengths
	if l == nil || l.InputTokens != "uniform in [5, 60]" || l.OutputTokens != "4" || l.Prompts != 12 ||
		len(l.Tokenizers) != 1 || !strings.HasSuffix(l.Tokenizers[0], "made to length with the server's own tokenizer") || len(l.OutputNotForced) != 1 {
		t.Errorf("lengths %+v", l)
	}
	if w := eventsOf[Warning](events); len(w) != 0 {
		t.Errorf("warnings %+v", w)
	}
}

// --input-tokens 1 on a server whose tokenizer adds a BOS makes the
// shortest prompt it can, 2 tokens, and says that is why, at the start
// and at the first trial: it blamed a chat template or another tokenizer.
func TestAPromptShorterThanTheShortestSaysSo(t *testing.T) {
	fake := &wordTokenizer{fakeBackend: &fakeBackend{delays: []time.Duration{0}}}
	plan := testPlan(t, 0, 3, "greedy")
	plan.Profile.InputTokens = profiles.TokenLength{Fixed: 1}
	status, err, events := runPlan(t, context.Background(), plan, fake)
	if err != nil || status != session.StatusComplete {
		t.Fatal(status, err)
	}
	for _, r := range trials(events) {
		if r.PromptTokens != 2 || r.RequestedPromptTokens != 1 {
			t.Errorf("trial %d: %d prompt tokens of %d asked", r.Trial, r.PromptTokens, r.RequestedPromptTokens)
		}
	}
	m, _ := session.ReadManifest(eventsOf[Finished](events)[0].Manifest)
	if l := m.Profile.Lengths; l == nil || !strings.HasSuffix(l.Tokenizers[0], "made to length with the server's own tokenizer; 3 of 3 asked fewer than 2 tokens, the shortest prompt it makes (its own start tokens and one of text), and are 2") {
		t.Errorf("lengths %+v", l.Tokenizers)
	}
	var said []string
	for _, w := range eventsOf[Warning](events) {
		if strings.Contains(w.Text, "prompt tokens") {
			said = append(said, w.Text)
		}
	}
	if len(said) != 1 || !strings.Contains(said[0], "greedy trial 1: 2 prompt tokens of the 1 asked: the shortest prompt the server's tokenizer makes is 2") || strings.Contains(said[0], "chat template") {
		t.Errorf("warnings %q", said)
	}
}

// A backend with no tokenizer gets prompts of estimated words, said so;
// a trial whose counts miss those asked by more than 1% is warned of
// once per arm, naming both counts.
func TestLengthsWithoutATokenizerAreEstimatedAndMissesWarned(t *testing.T) {
	plan := testPlan(t, 0, 4, "greedy")
	plan.Profile.InputTokens = profiles.TokenLength{Fixed: 100}
	status, err, events := runPlan(t, context.Background(), plan, &fakeBackend{delays: []time.Duration{0}})
	if err != nil || status != session.StatusComplete {
		t.Fatal(status, err)
	}
	m, _ := session.ReadManifest(eventsOf[Finished](events)[0].Manifest)
	if l := m.Profile.Lengths; l == nil || !strings.Contains(l.Tokenizers[0], "estimated from words at 0.75 a token (this backend has no tokenizer tokentop can ask)") {
		t.Errorf("lengths %+v", l)
	}
	rec := session.Record{Arm: "a", Trial: 3, Status: session.StatusOK, PromptTokens: 541, RequestedPromptTokens: 512, OutputTokens: 10, RequestedOutputTokens: 10}
	if got := lengthMismatch(rec, true, 0); !strings.Contains(got, "a trial 3: the server counted 541 prompt tokens of the 512 asked (+5.7%)") {
		t.Errorf("prompt miss: %q", got)
	}
	rec.PromptTokens, rec.OutputTokens = 517, 5 // within 1%; half the output
	if got := lengthMismatch(rec, false, 0); !strings.Contains(got, "5 output tokens of the 10 asked (-50.0%): this backend cannot be told to ignore the end of sequence") {
		t.Errorf("output miss: %q", got)
	}
	rec.OutputTokens = 10
	if got := lengthMismatch(rec, false, 0); got != "" {
		t.Errorf("within 1%%: %q", got)
	}
}

// prefixCaching is a fake server with a prefix cache: a prompt whose
// system prompt it has seen takes that prompt's words from its cache.
type prefixCaching struct {
	*wordTokenizer
	seen map[string]bool
}

func (c *prefixCaching) Generate(ctx context.Context, req backends.Request, onChunk backends.OnChunk) (backends.Result, error) {
	res, err := c.wordTokenizer.Generate(ctx, req, onChunk)
	res.CachedTokens = 0
	if prefix := req.Messages[0].Content; c.seen[prefix] {
		res.CachedTokens = len(strings.Fields(prefix))
	} else {
		c.seen[prefix] = true
	}
	return res, err
}

// A shared-prefix workload opens every prompt with one of G system
// prompts made to L tokens, as a system message; the run's end says what
// the prefix cache served: here each prefix misses once, then hits.
func TestASharedPrefixIsMeasuredOnPurpose(t *testing.T) {
	fake := &prefixCaching{wordTokenizer: &wordTokenizer{fakeBackend: &fakeBackend{delays: []time.Duration{0}}}, seen: map[string]bool{}}
	plan := testPlan(t, 0, 10, "greedy")
	plan.Profile.PrefixTokens, plan.Profile.PrefixGroups, plan.Profile.PromptCache = 30, 2, true
	status, err, events := runPlan(t, context.Background(), plan, fake)
	if err != nil || status != session.StatusComplete {
		t.Fatal(status, err)
	}
	prefixes := map[string]bool{}
	for _, req := range fake.requests {
		if len(req.Messages) != 2 || req.Messages[0].Role != "system" || len(strings.Fields(req.Messages[0].Content)) != 29 || req.Messages[1].Content == "" {
			t.Fatalf("messages %+v", req.Messages)
		}
		prefixes[req.Messages[0].Content] = true
	}
	fin := eventsOf[Finished](events)[0]
	c := fin.Summary["greedy"].PrefixCache
	if len(prefixes) != 2 || c == nil || c.Misses != 2 || c.Hits != 8 || c.HitRate <= 0 {
		t.Errorf("%d prefixes, prefix cache %+v", len(prefixes), c)
	}
	m, _ := session.ReadManifest(fin.Manifest)
	if l := m.Profile.Lengths; l == nil || l.PrefixTokens != 30 || l.PrefixGroups != 2 {
		t.Errorf("lengths %+v", l)
	}
}

// --tokenizer makes the prompts of a backend with no tokenizer with a
// GGUF file's (the fixtures' stories260K.gguf), exactly, and says it is
// not the server's; without input_tokens it is refused.
func TestATokenizerFileMakesPromptsForAServerWithNone(t *testing.T) {
	gguf := filepath.Join(replay.FixturesDir(t), "..", "models", "stories260K.gguf")
	plan := testPlan(t, 0, 3, "greedy")
	plan.Profile.InputTokens = profiles.TokenLength{Fixed: 40}
	tok, err := builtin.GGUFTokenizer(gguf)
	if err != nil {
		t.Fatal(err)
	}
	plan.Tokenizer, plan.TokenizerFile = tok, "stories260K.gguf"
	fake := &fakeBackend{delays: []time.Duration{0}}
	if _, err, _ := runPlan(t, context.Background(), plan, fake); err != nil {
		t.Fatal(err)
	}
	for _, req := range fake.requests {
		if ids, _ := tok.Tokenize(context.Background(), req.Prompt, true); len(ids) != 40 {
			t.Errorf("a prompt of %d tokens: %q", len(ids), req.Prompt)
		}
	}
	b := makeLengthBank(context.Background(), plan, []backends.Backend{fake})
	if !strings.HasPrefix(b.how[0], "made to length with the tokenizer of stories260K.gguf (not the server's: this backend has no tokenizer tokentop can ask") {
		t.Errorf("how %q", b.how[0])
	}
	plain := testPlan(t, 0, 3, "greedy")
	if _, err := Resolve(&plain.Profile, Options{Trials: NoOverride, Warmup: NoOverride, MaxTokens: NoOverride, Tokenizer: gguf}); err == nil || !strings.Contains(err.Error(), "--tokenizer makes the prompts of input_tokens") {
		t.Errorf("--tokenizer alone: %v", err)
	}
}

// A server whose tokenizer hangs holds the run's start for a trial's
// timeout, then its prompts are estimated, and the manifest says why.
func TestAHungTokenizerIsWaitedForBoundedly(t *testing.T) {
	srv := replay.NewServer(t, replay.Route{"POST /tokenize": replay.Hang()})
	b, err := llamacpp.Kind.Open(backends.Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	plan := testPlan(t, 0, 2, "greedy")
	plan.Profile.InputTokens, plan.Profile.TrialTimeout = profiles.TokenLength{Fixed: 16}, 100*time.Millisecond
	began := time.Now()
	bank := makeLengthBank(context.Background(), plan, []backends.Backend{b})
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("the bank took %v", took)
	}
	if !strings.HasPrefix(bank.how[0], "estimated from words at 0.75 a token (its tokenizer failed: ") || !strings.Contains(bank.how[0], "deadline") {
		t.Errorf("how %q", bank.how[0])
	}
}

// Synthetic conversations: turns = 3 makes conversations of three user
// turns of input_tokens each, turn u carrying the turns before it and
// made replies of the output length; each trial keeps its turn, and only
// a first turn claims an exact prompt length.
func TestSyntheticConversationsAreSentTurnByTurn(t *testing.T) {
	fake := &wordTokenizer{fakeBackend: &fakeBackend{delays: []time.Duration{0, 0, 0, 0, 0}}}
	plan := testPlan(t, 0, 6, "greedy")
	plan.Profile.InputTokens, plan.Profile.OutputTokens, plan.Profile.Turns = profiles.TokenLength{Fixed: 10}, profiles.TokenLength{Fixed: 5}, 3
	status, err, events := runPlan(t, context.Background(), plan, fake)
	if err != nil || status != session.StatusComplete {
		t.Fatal(status, err)
	}
	for k, r := range trials(events) {
		turn := k%3 + 1
		want := 0
		if turn == 1 {
			want = 10
		}
		if r.Turn != turn || r.RequestedPromptTokens != want {
			t.Errorf("trial %d: turn %d asking %d prompt tokens; want turn %d asking %d", r.Trial, r.Turn, r.RequestedPromptTokens, turn, want)
		}
		req := fake.requests[k]
		if len(req.Messages) != 2*turn-1 || len(strings.Fields(req.Messages[len(req.Messages)-1].Content)) != 9 {
			t.Fatalf("turn %d sent %+v", turn, req.Messages)
		}
		if turn > 1 && (req.Messages[1].Role != "assistant" || len(strings.Fields(req.Messages[1].Content)) != 4) {
			t.Errorf("turn %d's history %+v", turn, req.Messages)
		}
	}
	m, _ := session.ReadManifest(eventsOf[Finished](events)[0].Manifest)
	if l := m.Profile.Lengths; l == nil || l.Turns != 3 {
		t.Errorf("lengths %+v", l)
	}
}
