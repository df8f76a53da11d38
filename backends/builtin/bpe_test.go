package builtin

import (
	"context"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// Generated from Python re with \p{L} → [A-Za-z], \p{N} → [0-9] (exact
// for ASCII text), applying each pre-tokenizer's expressions in turn as
// llama.cpp does; the last case per pre-tokenizer is worked by hand.
var preTokenizerCases = map[string][]struct {
	text  string
	words []string
}{
	"gpt2": {
		{"Hello world", []string{"Hello", " world"}},
		{"I'm here, they'LL go", []string{"I", "'m", " here", ",", " they", "'", "LL", " go"}},
		{"  two  spaces   then\tend  ", []string{" ", " two", " ", " spaces", "  ", " then", "\t", "end", "  "}},
		{"x = 12345 + 6;", []string{"x", " =", " 12345", " +", " 6", ";"}},
		{"line one\n\nline two\r\n  indented", []string{"line", " one", "\n", "\n", "line", " two", "\r\n ", " indented"}},
		{"!!!wow ...ok?\n", []string{"!!!", "wow", " ...", "ok", "?", "\n"}},
		{"a  b", []string{"a", " ", " b"}},
		{"'re 'S", []string{"'re", " '", "S"}},
		{"tab\t\tx", []string{"tab", "\t", "\t", "x"}},
		{" leading", []string{" leading"}},
		{"trailing ", []string{"trailing", " "}},
		{"price: $1000000!", []string{"price", ":", " $", "1000000", "!"}},
		{"naïve café 42°", []string{"naïve", " café", " 42", "°"}},
	},
	"smollm": {
		{"Hello world", []string{"Hello", " world"}},
		{"I'm here, they'LL go", []string{"I", "'m", " here", ",", " they", "'", "LL", " go"}},
		{"  two  spaces   then\tend  ", []string{" ", " two", " ", " spaces", "  ", " then", "\t", "end", "  "}},
		{"x = 12345 + 6;", []string{"x", " =", " ", "1", "2", "3", "4", "5", " +", " ", "6", ";"}},
		{"line one\n\nline two\r\n  indented", []string{"line", " one", "\n", "\n", "line", " two", "\r\n ", " indented"}},
		{"!!!wow ...ok?\n", []string{"!!!", "wow", " ...", "ok", "?", "\n"}},
		{"a  b", []string{"a", " ", " b"}},
		{"'re 'S", []string{"'re", " '", "S"}},
		{"tab\t\tx", []string{"tab", "\t", "\t", "x"}},
		{" leading", []string{" leading"}},
		{"trailing ", []string{"trailing", " "}},
		{"price: $1000000!", []string{"price", ":", " $", "1", "0", "0", "0", "0", "0", "0", "!"}},
		{"naïve café 42°", []string{"naïve", " café", " ", "4", "2", "°"}},
	},
	"llama-bpe": {
		{"Hello world", []string{"Hello", " world"}},
		{"I'm here, they'LL go", []string{"I", "'m", " here", ",", " they", "'LL", " go"}},
		{"  two  spaces   then\tend  ", []string{" ", " two", " ", " spaces", "  ", " then", "\tend", "  "}},
		{"x = 12345 + 6;", []string{"x", " =", " ", "123", "45", " +", " ", "6", ";"}},
		{"line one\n\nline two\r\n  indented", []string{"line", " one", "\n\n", "line", " two", "\r\n", " ", " indented"}},
		{"!!!wow ...ok?\n", []string{"!!!", "wow", " ...", "ok", "?\n"}},
		{"a  b", []string{"a", " ", " b"}},
		{"'re 'S", []string{"'re", " '", "S"}},
		{"tab\t\tx", []string{"tab", "\t", "\tx"}},
		{" leading", []string{" leading"}},
		{"trailing ", []string{"trailing", " "}},
		{"price: $1000000!", []string{"price", ":", " $", "100", "000", "0", "!"}},
		{"naïve café 42°", []string{"naïve", " café", " ", "42", "°"}},
	},
	"qwen2": {
		{"Hello world", []string{"Hello", " world"}},
		{"I'm here, they'LL go", []string{"I", "'m", " here", ",", " they", "'LL", " go"}},
		{"  two  spaces   then\tend  ", []string{" ", " two", " ", " spaces", "  ", " then", "\tend", "  "}},
		{"x = 12345 + 6;", []string{"x", " =", " ", "1", "2", "3", "4", "5", " +", " ", "6", ";"}},
		{"line one\n\nline two\r\n  indented", []string{"line", " one", "\n\n", "line", " two", "\r\n", " ", " indented"}},
		{"!!!wow ...ok?\n", []string{"!!!", "wow", " ...", "ok", "?\n"}},
		{"a  b", []string{"a", " ", " b"}},
		{"'re 'S", []string{"'re", " '", "S"}},
		{"tab\t\tx", []string{"tab", "\t", "\tx"}},
		{" leading", []string{" leading"}},
		{"trailing ", []string{"trailing", " "}},
		{"price: $1000000!", []string{"price", ":", " $", "1", "0", "0", "0", "0", "0", "0", "!"}},
		{"naïve café 42°", []string{"naïve", " café", " ", "4", "2", "°"}},
	},
}

func TestPreTokenizersSplitAsLlamaCpp(t *testing.T) {
	for name, cases := range preTokenizerCases {
		for _, c := range cases {
			if got := preTokenize(c.text, preTokenizers[name].split); !slices.Equal(got, c.words) {
				t.Errorf("%s %q:\n got  %q\n want %q", name, c.text, got, c.words)
			}
		}
	}
	// llama.cpp's other names for the same expressions
	aliases := map[string]string{"llama3": "llama-bpe", "llama-v3": "llama-bpe", "deepseek-r1-qwen": "qwen2"}
	for name := range preTokenizers {
		if _, tested := preTokenizerCases[name]; !tested && preTokenizerCases[aliases[name]] == nil {
			t.Errorf("pre-tokenizer %s is not tested", name)
		}
	}
}

// testBPE is a gpt2 vocabulary built here: the 256 byte pieces, what the
// merges make, and two control tokens; merges in rank order.
func testBPE(t testing.TB, pre string, merges ...string) (*Tokenizer, []metaKV) {
	t.Helper()
	var pieces []string
	for _, r := range byteRunes {
		pieces = append(pieces, string(r))
	}
	for _, m := range merges {
		pieces = append(pieces, strings.Replace(m, " ", "", 1))
	}
	pieces = append(pieces, "<|begin_of_text|>", "<|end_of_text|>")
	types := make([]int32, len(pieces))
	types[len(pieces)-2], types[len(pieces)-1] = 3, 3
	vocab := []metaKV{
		{"tokenizer.ggml.model", "gpt2"}, {"tokenizer.ggml.pre", pre},
		{"tokenizer.ggml.tokens", pieces}, {"tokenizer.ggml.merges", merges}, {"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.bos_token_id", uint32(len(pieces) - 2)}, {"tokenizer.ggml.eos_token_id", uint32(len(pieces) - 1)},
		{"tokenizer.ggml.add_bos_token", true},
	}
	g, err := ParseGGUF(ggufOf(t, Synthetic(Shape{Dim: 32, HiddenDim: 32, Layers: 1, Heads: 2, KVHeads: 2, Vocab: len(pieces), SeqLen: 32}, 1), vocab, every(ggmlF32)))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := ggufTokenizer(g)
	if err != nil {
		t.Fatal(err)
	}
	return tok, vocab
}

// ids names the pieces of a test vocabulary.
func ids(tok *Tokenizer, pieces ...string) []int {
	var out []int
	for _, p := range pieces {
		out = append(out, tok.ids[p])
	}
	return out
}

// Merges apply lowest rank first, wherever the pair is: "b c" (rank 0)
// wins over "a b" (rank 1) in "abc"; bytes outside printable Latin-1
// (the space) are spelled with GPT-2's shifted characters.
func TestBPEMergesByRank(t *testing.T) {
	tok, _ := testBPE(t, "gpt2", "l l", "h e", "he ll", "hell o", "b c", "a b", "Ġ w")
	cases := []struct {
		text string
		want []int
	}{
		{"hello", ids(tok, "hello")},
		{"abc", ids(tok, "a", "bc")},
		{"hello world", ids(tok, "hello", "Ġw", "o", "r", "l", "d")},
		{"hé", ids(tok, "h", "Ã", "©")}, // é is two bytes, each its own piece
	}
	for _, c := range cases {
		got := tok.Encode(c.text, false)
		if !slices.Equal(got, c.want) {
			t.Errorf("%q: %v, want %v", c.text, got, c.want)
		}
		var back strings.Builder
		for _, id := range got {
			back.WriteString(tok.Decode(0, id))
		}
		if back.String() != c.text {
			t.Errorf("%q decodes back as %q", c.text, back.String())
		}
	}
	// A merge whose result the vocabulary lacks falls back to its bytes.
	delete(tok.ids, "bc")
	if got := tok.Encode("abc", false); !slices.Equal(got, ids(tok, "a", "b", "c")) {
		t.Errorf("abc without the piece bc: %v", got)
	}
	bos, eos := len(tok.Pieces)-2, len(tok.Pieces)-1
	if got := tok.Encode("hello", true); !slices.Equal(got, []int{bos, tok.ids["hello"]}) {
		t.Errorf("with BOS: %v", got)
	}
	// The file's own end token stops a generation; token 1 (the byte '"'
	// here), which ends a sentencepiece generation, does not.
	if !tok.Stops(eos) || tok.Stops(1) || tok.Stops(2) || tok.Decode(0, eos) != "" {
		t.Errorf("stops: eos %v, 1 %v, 2 %v; eos decodes as %q", tok.Stops(eos), tok.Stops(1), tok.Stops(2), tok.Decode(0, eos))
	}
}

// A GGUF with a gpt2 vocabulary loads and generates; what the engine does
// not know is one line that names the key.
func TestGPT2VocabGGUF(t *testing.T) {
	tok, vocab := testBPE(t, "llama-bpe", "h e", "l l")
	shape := Shape{Dim: 64, HiddenDim: 64, Layers: 1, Heads: 2, KVHeads: 2, Vocab: len(tok.Pieces), SeqLen: 64}
	path := writeTemp(t, "bpe.gguf", ggufOf(t, Synthetic(shape, 4), vocab, every(ggmlQ8_0)))
	m, err := Load(path, "")
	if err != nil {
		t.Fatal(err)
	}
	prompt := m.Tokenizer.Encode("hello there", true)
	if want := append([]int{len(tok.Pieces) - 2}, ids(tok, "he", "ll", "o", "Ġ", "t", "he", "r", "e")...); !slices.Equal(prompt, want) {
		t.Fatalf("prompt %v, want %v", prompt, want)
	}
	e := NewEngine(m, 1)
	defer e.Close()
	g, err := e.Generate(context.Background(), prompt, 12, Sampling{IgnoreEOS: true}, func(int) {})
	if err != nil || len(g.Tokens) != 12 {
		t.Fatalf("%v: %d tokens", err, len(g.Tokens))
	}
	with := func(key string, value any) []metaKV {
		out := slices.Clone(vocab)
		for i := range out {
			if out[i].key == key {
				out[i].value = value
				return out
			}
		}
		return append(out, metaKV{key, value})
	}
	without := func(key string) []metaKV {
		return slices.DeleteFunc(slices.Clone(vocab), func(kv metaKV) bool { return kv.key == key })
	}
	for _, c := range []struct {
		vocab []metaKV
		want  string
	}{
		{with("tokenizer.ggml.pre", "deepseek-llm"), `GGUF tokenizer.ggml.pre "deepseek-llm" is a pre-tokenizer the builtin engine does not know (it knows deepseek-r1-qwen, gpt2, llama-bpe, llama-v3, llama3, qwen2, smollm)`},
		{without("tokenizer.ggml.pre"), "GGUF has no tokenizer.ggml.pre"},
		{without("tokenizer.ggml.merges"), "GGUF tokenizer.ggml.merges is missing"},
		{with("tokenizer.ggml.merges", []string{"h e", "he"}), `GGUF tokenizer.ggml.merges entry 1 is "he", not two pieces joined by one space`},
		{with("tokenizer.ggml.model", "bert"), `GGUF tokenizer.ggml.model is "bert"`},
		{with("tokenizer.ggml.eos_token_id", uint32(9999)), "GGUF tokenizer.ggml.eos_token_id is 9999, outside the 260-token vocabulary"},
	} {
		_, _, err := LoadGGUF(ggufOf(t, Synthetic(shape, 4), c.vocab, every(ggmlF32)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}

// Any text, valid UTF-8 or not, splits into words that join back into it
// under every pre-tokenizer, and encodes into valid ids that decode back
// into it.
func FuzzBPETokenizer(f *testing.F) {
	for _, cases := range preTokenizerCases {
		for _, c := range cases {
			f.Add(c.text)
		}
	}
	f.Add("emoji 🙂 and \xff\xfe bytes\r\n")
	tok, _ := testBPE(f, "gpt2", "l l", "h e", "he ll", "Ġ t", "Ġt h")
	f.Fuzz(func(t *testing.T, text string) {
		for name, split := range preTokenizers {
			if got := strings.Join(preTokenize(text, split.split), ""); got != text {
				t.Fatalf("%s: %q splits into words that join as %q", name, text, got)
			}
		}
		var back strings.Builder
		for _, id := range tok.Encode(text, false) {
			if id < 0 || id >= len(tok.Pieces) {
				t.Fatalf("id %d", id)
			}
			back.WriteString(tok.Decode(0, id))
		}
		if back.String() != text {
			t.Fatalf("%q comes back as %q (valid UTF-8: %v)", text, back.String(), utf8.ValidString(text))
		}
	})
}
