package profiles

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/backends/builtin"
)

// With the built-in engine's tokenizer (stories260K's), a prompt is made
// exactly as many tokens long as asked, its BOS included, and differs
// with its seed.
func TestExactPromptIsThatManyTokens(t *testing.T) {
	b, err := builtin.Kind.New(backends.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.(interface{ Close() error }).Close()
	if _, err := b.Probe(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	tok := b.(backends.Tokenizer)
	for _, n := range []int{2, 8, 33, 100, 257} {
		text, counted, err := ExactPrompt(context.Background(), tok, n, uint64(n))
		if err != nil {
			t.Fatal(err)
		}
		ids, _ := tok.Tokenize(context.Background(), text, true)
		if counted != n || len(ids) != n {
			t.Errorf("asked %d tokens: counted %d, the engine counts %d (%q)", n, counted, len(ids), text)
		}
		other, _, _ := ExactPrompt(context.Background(), tok, n, uint64(n)+1)
		if n > 8 && other == text {
			t.Errorf("seeds %d and %d made one prompt", n, n+1)
		}
	}
}

// A length reads as a number or a distribution, in a profile or a flag;
// draws stay in range; a bad one says how to write it.
func TestTokenLengthsReadAndDraw(t *testing.T) {
	var doc struct {
		A TokenLength `toml:"a"`
		B TokenLength `toml:"b"`
		C TokenLength `toml:"c"`
	}
	if _, err := toml.Decode("a = 512\nb = {mean = 300, stddev = 100, min = 64, max = 512}\nc = {min = 10, max = 20}\n", &doc); err != nil {
		t.Fatal(err)
	}
	if doc.A.Fixed != 512 || doc.B.Mean != 300 || doc.B.Max != 512 || doc.C.Min != 10 || doc.C.Mean != 0 {
		t.Fatalf("%+v", doc)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	sum := 0
	for range 2000 {
		b, c := doc.B.Draw(rng), doc.C.Draw(rng)
		if b < 64 || b > 512 || c < 10 || c > 20 {
			t.Fatalf("drew %d and %d", b, c)
		}
		sum += b
	}
	if mean := float64(sum) / 2000; mean < 285 || mean > 315 {
		t.Errorf("mean of 2000 draws %g, want about 300", mean)
	}
	for flag, want := range map[string]TokenLength{"512": {Fixed: 512}, "64-1024": {Min: 64, Max: 1024},
		"mean=300,stddev=100,min=64,max=512": {Mean: 300, StdDev: 100, Min: 64, Max: 512}} {
		if got, err := ParseTokenLength(flag); err != nil || got != want {
			t.Errorf("%q: %+v %v", flag, got, err)
		}
	}
	for _, c := range []struct {
		l    TokenLength
		want string
	}{
		{TokenLength{Fixed: -3}, "out of range"},
		{TokenLength{Min: 20, Max: 10}, "min 20 and max 10"},
		{TokenLength{Mean: 5, Min: 10, Max: 20}, "mean 5 is outside"},
		{TokenLength{Mean: 100}, "needs max"},
	} {
		if got := c.l.Problem(MaxInputTokens); !strings.Contains(got, c.want) {
			t.Errorf("%+v: %q, want %q", c.l, got, c.want)
		}
	}
	if _, err := ParseTokenLength("lots"); err == nil {
		t.Error("a word read as a length")
	}
}

// stuckTokenizer counts every text as the same three tokens, as a
// misbehaving server's /tokenize might.
type stuckTokenizer struct{ calls int }

func (s *stuckTokenizer) Tokenize(context.Context, string, bool) ([]int, error) {
	s.calls++
	return []int{1, 2, 3}, nil
}

func (s *stuckTokenizer) Detokenize(context.Context, []int) (string, error) { return "a b c", nil }

// A tokenizer whose count does not grow with the text is given up on
// after a few tries, with an error that says so, not asked for ever with
// a text that grows without end.
func TestAStuckTokenizerIsGivenUpOn(t *testing.T) {
	tok := &stuckTokenizer{}
	_, _, err := ExactPrompt(context.Background(), tok, 500, 1)
	if err == nil || !strings.Contains(err.Error(), "it does not count text as a tokenizer does") || tok.calls > 2+exactTries+1 {
		t.Errorf("after %d calls: %v", tok.calls, err)
	}
}
