package builtin

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func fixture(t testing.TB, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "fixtures", "llama2c", name))
	if err != nil {
		t.Fatalf("llama2.c reference outputs: %v (check out ../shared beside the repository)", err)
	}
	return string(data)
}

// llama2cText runs the engine the way llama2.c's run.c does for `-n steps`:
// steps positions from BOS, prompt tokens printed as they are fed, greedy.
func llama2cText(t testing.TB, e *Engine, prompt string, steps int) string {
	t.Helper()
	tok := e.Model.Tokenizer
	ids := tok.Encode(prompt, true)
	var b strings.Builder
	for i := 1; i < len(ids); i++ {
		b.WriteString(tok.Decode(ids[i-1], ids[i]))
	}
	prev := ids[len(ids)-1]
	_, err := e.Generate(context.Background(), ids, steps-len(ids)+1, Sampling{}, func(next int) {
		b.WriteString(tok.Decode(prev, next))
		prev = next
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String() + "\n"
}

var references = []struct{ prompt, file string }{
	{"Once upon a time", "stories260K_greedy_n200_Once_upon_a_time.txt"},
	{"The cat sat", "stories260K_greedy_n200_The_cat_sat.txt"},
	{"", "stories260K_greedy_n200_empty.txt"},
}

func TestEmbeddedModelReproducesLlama2c(t *testing.T) {
	m, err := Load(DefaultModel, "f32")
	if err != nil {
		t.Fatal(err)
	}
	for _, threads := range []int{1, 2} {
		e := NewEngine(m, threads)
		for _, ref := range references {
			if got, want := llama2cText(t, e, ref.prompt, 200), fixture(t, ref.file); got != want {
				t.Errorf("threads %d, prompt %q:\n got %q\nwant %q", threads, ref.prompt, got, want)
			}
		}
		e.Close()
	}
}

// embeddedEngine is an engine on the embedded model with the given
// workers, closed when the test ends, and a prompt encoded for it.
func embeddedEngine(t testing.TB, threads int) (*Engine, []int) {
	t.Helper()
	m, err := Load(DefaultModel, "f32")
	if err != nil {
		t.Fatal(err)
	}
	e := NewEngine(m, threads)
	t.Cleanup(e.Close)
	return e, m.Tokenizer.Encode("Once upon a time", true)
}

func sharedModel(t testing.TB, name string) string {
	return filepath.Join("..", "..", "..", "shared", "models", name)
}

func TestGGUFReproducesLlama2c(t *testing.T) {
	m, err := Load(sharedModel(t, "stories260K.gguf"), "f32")
	if err != nil {
		t.Fatal(err)
	}
	if m.Weights.Shape.SeqLen != 128 || m.Weights.Shape.KVHeads != 4 || m.Tokenizer.Decode(-1, 259) != " t" {
		t.Fatalf("shape %s, piece %q", m.Weights.Shape, m.Tokenizer.Decode(-1, 259))
	}
	// The converter recorded a 128-token context; llama-server ran it with a
	// larger one (-c), which is what the 200-step reference needs.
	m.Weights.Shape.SeqLen = 512
	e := NewEngine(m, 1)
	defer e.Close()
	for _, ref := range references {
		if got, want := llama2cText(t, e, ref.prompt, 200), fixture(t, ref.file); got != want {
			t.Errorf("prompt %q:\n got %q\nwant %q", ref.prompt, got, want)
		}
	}
}

// A generation canceled midway has no stop reason: it neither reached
// max_tokens ("length") nor the end of a sequence.
func TestCanceledGenerationHasNoStopReason(t *testing.T) {
	e, ids := embeddedEngine(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	emitted := 0
	g, err := e.Generate(ctx, ids, 64, Sampling{IgnoreEOS: true}, func(int) {
		if emitted++; emitted == 22 {
			cancel()
		}
	})
	if err == nil || len(g.Tokens) != 22 || g.StopReason != "" {
		t.Errorf("canceled after 22 of 64 tokens: err %v, %d tokens, stop reason %q", err, len(g.Tokens), g.StopReason)
	}
	if g, err = e.Generate(context.Background(), ids, 8, Sampling{IgnoreEOS: true}, func(int) {}); err != nil || g.StopReason != "length" {
		t.Errorf("a full generation: err %v, stop reason %q; want length", err, g.StopReason)
	}
}

// forwardOne runs one stream's token at pos in a pass of its own and
// returns its logits.
func (e *Engine) forwardOne(st *State, token, pos int) []float32 {
	st.token, st.pos, st.sample = token, pos, false
	e.pass.reset()
	e.pass.add(st) // the one way a pass is made, so the logits are computed
	e.forward(&e.pass)
	return st.logits
}

// runMatVec multiplies one vector by m on pool p.
func runMatVec(p *Pool, m *Matrix, out, x []float32, xq *quantized) {
	p.run(&matJob{m: [3]*Matrix{m}, n: 1, x: [][]float32{x}, xq: []*quantized{xq}, out: [3][][]float32{{out}}})
}

// Streams that run at once, batched into shared passes, must each get
// exactly the tokens they get alone: batching changes which rows are read
// together, never a stream's arithmetic.
func TestConcurrentStreamsMatchSequential(t *testing.T) {
	m, err := Load(DefaultModel, "f32")
	if err != nil {
		t.Fatal(err)
	}
	e := NewEngine(m, 2)
	defer e.Close()
	type stream struct {
		prompt string
		s      Sampling
		n      int
	}
	streams := []stream{
		{"Once upon a time", Sampling{}, 60},
		{"The cat sat", Sampling{Temperature: 0.8, Seed: 7}, 40},
		{"", Sampling{Temperature: 1, TopP: 0.9, Seed: 3, IgnoreEOS: true}, 90},
		{"Lily and Ben", Sampling{TopK: 5, Temperature: 0.7, Seed: 11}, 25},
		{"One day", Sampling{}, 70},
	}
	generate := func(st stream) []int {
		g, err := e.Generate(context.Background(), m.Tokenizer.Encode(st.prompt, true), st.n, st.s, func(int) {})
		if err != nil {
			t.Error(err)
		}
		return g.Tokens
	}
	alone := make([][]int, len(streams))
	for i, st := range streams {
		alone[i] = generate(st)
	}
	for round := range 3 {
		together := make([][]int, len(streams))
		var wg sync.WaitGroup
		for i, st := range streams {
			wg.Go(func() { together[i] = generate(st) })
		}
		wg.Wait()
		for i := range streams {
			if !slices.Equal(together[i], alone[i]) {
				t.Fatalf("round %d, stream %d (%q): together %v, alone %v", round, i, streams[i].prompt, together[i], alone[i])
			}
		}
	}
}

// A prompt run in chunks of tokens as one pass each (batched prefill)
// leaves the same cache and logits as token by token: every number of
// the generation after it is the same, at any chunk size, with other
// streams decoding in the same passes.
func TestBatchedPrefillMatchesTokenByToken(t *testing.T) {
	m, err := Load(DefaultModel, "f32")
	if err != nil {
		t.Fatal(err)
	}
	prompt := m.Tokenizer.Encode("Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends. One day", true)
	if len(prompt) < 20 {
		t.Fatalf("a %d-token prompt is too short to chunk", len(prompt))
	}
	generate := func(chunk int, s Sampling) []int {
		e := NewEngine(m, 2)
		defer e.Close()
		e.chunk = chunk
		g, err := e.Generate(context.Background(), prompt, 40, s, func(int) {})
		if err != nil {
			t.Fatal(err)
		}
		return g.Tokens
	}
	for _, s := range []Sampling{{}, {Temperature: 0.9, TopP: 0.9, Seed: 5}} {
		want := generate(1, s)
		for _, chunk := range []int{2, 7, len(prompt) - 1, len(prompt), PrefillChunk} {
			if got := generate(chunk, s); !slices.Equal(got, want) {
				t.Errorf("chunk %d, sampling %+v: %v, token by token %v", chunk, s, got, want)
			}
		}
	}
	// With a stream decoding beside it, in the same passes.
	e := NewEngine(m, 2)
	defer e.Close()
	e.chunk = 5
	var wg sync.WaitGroup
	var beside []int
	wg.Go(func() {
		g, _ := e.Generate(context.Background(), m.Tokenizer.Encode("The cat", true), 60, Sampling{}, func(int) {})
		beside = g.Tokens
	})
	g, err := e.Generate(context.Background(), prompt, 40, Sampling{}, func(int) {})
	wg.Wait()
	want := generate(1, Sampling{})
	alone, _ := func() ([]int, error) {
		e := NewEngine(m, 2)
		defer e.Close()
		g, err := e.Generate(context.Background(), m.Tokenizer.Encode("The cat", true), 60, Sampling{}, func(int) {})
		return g.Tokens, err
	}()
	if err != nil || !slices.Equal(g.Tokens, want) || !slices.Equal(beside, alone) {
		t.Errorf("together: %v %v (want %v), beside %v (alone %v)", err, g.Tokens, want, beside, alone)
	}
}
