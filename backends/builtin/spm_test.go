package builtin

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gemmaLikeVocabulary is a sentencepiece vocabulary laid out as Gemma's
// GGUF files lay theirs out: six special tokens, then the 256 byte
// tokens (from id 6, not 3), then pieces with their scores.
func gemmaLikeVocabulary(addSpacePrefix bool) *GGUF {
	var tokens, scores []any
	for _, special := range []string{"<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "[@BOS@]"} {
		tokens, scores = append(tokens, special), append(scores, 0.0)
	}
	for b := range 256 {
		tokens, scores = append(tokens, fmt.Sprintf("<0x%02X>", b)), append(scores, 0.0)
	}
	for i, piece := range []string{"\u2581", "a", "b", "ab", "\u2581ab"} {
		tokens, scores = append(tokens, piece), append(scores, float64(-i))
	}
	return &GGUF{Meta: map[string]any{"tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": tokens, "tokenizer.ggml.scores": scores,
		"tokenizer.ggml.bos_token_id": int64(2), "tokenizer.ggml.eos_token_id": int64(1), "tokenizer.ggml.add_space_prefix": addSpacePrefix}}
}

// Byte fallback finds the vocabulary's byte tokens by their pieces (it
// assumed they start at id 3, off by 3 for every byte of Gemma's), and
// add_space_prefix = false puts no space before the text (a ▁ was always
// prepended): together a Gemma vocabulary matched llama-tokenize on 0 of
// 12 strings.
func TestSentencepieceBytesAndSpacePrefixAreTheFilesOwn(t *testing.T) {
	const firstPiece = 6 + 256 // "▁"
	withoutPrefix, err := ggufTokenizer(gemmaLikeVocabulary(false))
	if err != nil {
		t.Fatal(err)
	}
	// "ab" then "€" (e2 82 ac), which only bytes can say.
	want := []int{2, firstPiece + 3, 6 + 0xe2, 6 + 0x82, 6 + 0xac}
	if got := withoutPrefix.Encode("ab€", true); !slices.Equal(got, want) {
		t.Errorf("no space prefix: %v, want %v", got, want)
	}
	if got := withoutPrefix.Decode(2, firstPiece+3) + withoutPrefix.Decode(firstPiece+3, 6+0xe2); got != "ab\xe2" {
		t.Errorf("decoded %q", got)
	}
	withPrefix, err := ggufTokenizer(gemmaLikeVocabulary(true))
	if err != nil {
		t.Fatal(err)
	}
	if got := withPrefix.Encode("ab", true); !slices.Equal(got, []int{2, firstPiece + 4}) {
		t.Errorf("with the space prefix: %v, want BOS then ▁ab", got)
	}
}

// BenchmarkSentencepieceEncode encodes a 4,320-character prompt with the
// embedded model's vocabulary: rescanning every pair after each merge
// took 527 ms, the heap of pairs 1.3 ms (one run each, 2026-11-29).
func BenchmarkSentencepieceEncode(b *testing.B) {
	m, err := Load(DefaultModel, "")
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("Once upon a time, there was a little girl named Lily. ", 80)
	for b.Loop() {
		m.Tokenizer.Encode(text, true)
	}
}

// Any text, valid UTF-8 or not, encodes with the small gemma3 test file's
// sentencepiece vocabulary (user-defined, control and byte tokens) into
// valid ids that print back as the text, each typed ▁ as the space it is.
func FuzzSentencepieceTokenizer(f *testing.F) {
	tok := tokenizerOfFile(f, filepath.Join("testdata", "archs", "gemma3-f32.gguf"))
	for _, s := range []string{"Once upon a time", "a <mask> b [multimodal]c", "<end_of_turn>", "\u2581\u2581x \u2581", "東京 🙂\xff\xfe\r\n", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var back strings.Builder
		for _, id := range tok.Encode(text, false) {
			if id < 0 || id >= len(tok.Pieces) {
				t.Fatalf("id %d", id)
			}
			back.WriteString(tok.Decode(-1, id))
		}
		if want := strings.ReplaceAll(text, "\u2581", " "); back.String() != want {
			t.Fatalf("%q comes back as %q", text, back.String())
		}
	})
}
