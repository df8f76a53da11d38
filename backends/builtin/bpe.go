package builtin

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/tokentop/tokentop/backends/untrusted"
)

// GPT-2-style byte-level BPE, the vocabulary of GGUFs whose
// tokenizer.ggml.model is "gpt2" (Llama 3, SmolLM, Qwen and others): text
// is split into words by the vocabulary's pre-tokenizer, each word's bytes
// become printable characters (GPT-2's byte-to-unicode table), and the
// adjacent pair with the lowest merge rank is merged until none is left.

// bpeVocab is the BPE half of a Tokenizer.
type bpeVocab struct {
	ranks map[string]int // "left right" → merge rank
	split []wordSplitter // applied in order, as llama.cpp applies its expressions
	// wholeWords takes a word that is itself a piece as that piece, merges
	// or not (llama.cpp's ignore_merges, for Llama 3's vocabulary).
	wholeWords bool
	// addBOS is whether the pre-tokenizer's vocabularies start a prompt
	// with BOS where the file does not say (llama.cpp's default for it).
	addBOS bool
}

// byteRunes maps each byte to the character GPT-2's vocabularies spell it
// with: printable Latin-1 stands for itself, the rest shift past 255.
var byteRunes, runeBytes = func() (enc [256]rune, dec map[rune]byte) {
	dec = map[rune]byte{}
	shifted := rune(256)
	for b := range 256 {
		r := rune(b)
		if !(b >= '!' && b <= '~' || b >= 0xa1 && b <= 0xac || b >= 0xae) {
			r = shifted
			shifted++
		}
		enc[b], dec[r] = r, byte(b)
	}
	return enc, dec
}()

// preTokenizer is how a vocabulary splits text into words, and what
// llama.cpp sets beside its expressions for it.
type preTokenizer struct {
	split      []wordSplitter
	wholeWords bool
	addBOS     bool
}

// preTokenizers are the tokenizer.ggml.pre values the engine splits words
// for, each as llama.cpp's list of expressions, under every name llama.cpp
// gives it (DeepSeek-R1's Qwen distills name qwen2's "deepseek-r1-qwen").
var preTokenizers = func() map[string]preTokenizer {
	llama3 := preTokenizer{split: []wordSplitter{llama3Words(3)}, wholeWords: true, addBOS: true}
	qwen2 := preTokenizer{split: []wordSplitter{llama3Words(1)}}
	return map[string]preTokenizer{
		"gpt2":      {split: []wordSplitter{gpt2Words}},
		"smollm":    {split: []wordSplitter{singleDigits, gpt2Words}},
		"llama-bpe": llama3, "llama3": llama3, "llama-v3": llama3,
		"qwen2": qwen2, "deepseek-r1-qwen": qwen2,
	}
}()

// newBPE builds the BPE state from GGUF metadata: merges ("left right"
// in rank order) and the pre-tokenizer's name.
func newBPE(pieces, merges []string, pre string) (*bpeVocab, error) {
	kind, ok := preTokenizers[pre]
	if pre == "" {
		return nil, errors.New("GGUF has no tokenizer.ggml.pre; a gpt2 vocabulary needs its pre-tokenizer named (llama.cpp's convert script writes it)")
	}
	if !ok {
		known := make([]string, 0, len(preTokenizers))
		for name := range preTokenizers {
			known = append(known, name)
		}
		slices.Sort(known)
		return nil, fmt.Errorf("GGUF tokenizer.ggml.pre %q is a pre-tokenizer the builtin engine does not know (it knows %s)", untrusted.Line(pre), strings.Join(known, ", "))
	}
	ids := make(map[string]bool, len(pieces))
	for _, p := range pieces {
		ids[p] = true
	}
	for b, r := range byteRunes {
		if !ids[string(r)] {
			return nil, fmt.Errorf("GGUF tokenizer.ggml.tokens lacks the token for byte 0x%02x (%q); a gpt2 vocabulary has all 256", b, string(r))
		}
	}
	v := &bpeVocab{ranks: make(map[string]int, len(merges)), split: kind.split,
		wholeWords: kind.wholeWords, addBOS: kind.addBOS}
	for i, m := range merges {
		if strings.Count(m, " ") != 1 {
			return nil, fmt.Errorf("GGUF tokenizer.ggml.merges entry %d is %q, not two pieces joined by one space", i, untrusted.Line(m))
		}
		if _, dup := v.ranks[m]; !dup {
			v.ranks[m] = i
		}
	}
	return v, nil
}

// encode appends text's token ids to tokens.
func (v *bpeVocab) encode(tokens []int, text string, ids map[string]int) []int {
	var symbols []string
	var mapped strings.Builder
	for _, w := range preTokenize(text, v.split) {
		mapped.Reset()
		for i := 0; i < len(w); i++ {
			mapped.WriteRune(byteRunes[w[i]])
		}
		if id, ok := ids[mapped.String()]; ok && v.wholeWords {
			tokens = append(tokens, id)
			continue
		}
		symbols = symbols[:0]
		for _, r := range mapped.String() {
			symbols = append(symbols, string(r))
		}
		for _, s := range v.merge(symbols) {
			if id, ok := ids[s]; ok {
				tokens = append(tokens, id)
				continue
			}
			// A merge whose result the vocabulary lacks: its bytes, each
			// a piece (newBPE checked all 256 are), as llama.cpp does.
			for _, r := range s {
				tokens = append(tokens, ids[string(r)])
			}
		}
	}
	return tokens
}

// merge joins the adjacent pair of lowest rank, leftmost first, until no
// pair has a rank.
func (v *bpeVocab) merge(symbols []string) []string {
	for len(symbols) > 1 {
		best, at := -1, -1
		for i := 0; i+1 < len(symbols); i++ {
			if r, ok := v.ranks[symbols[i]+" "+symbols[i+1]]; ok && (best < 0 || r < best) {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		symbols[at] += symbols[at+1]
		symbols = slices.Delete(symbols, at+1, at+2)
	}
	return symbols
}

// decode is a piece's bytes.
func (v *bpeVocab) decode(piece string) string {
	out := make([]byte, 0, len(piece))
	for _, r := range piece {
		if b, ok := runeBytes[r]; ok {
			out = append(out, b)
		} else {
			out = append(out, string(r)...) // an added token spelled in plain text
		}
	}
	return string(out)
}

// A wordSplitter returns the end of the match at rs[i:], or i for none:
// one of the pre-tokenizers' regular expressions, by hand (Go's regexp has
// no lookahead, which every one of them uses).
type wordSplitter func(rs []rune, i int) int

// preTokenize splits text into words by each splitter in turn.
func preTokenize(text string, splitters []wordSplitter) []string {
	words := []string{text}
	for _, split := range splitters {
		var next []string
		for _, w := range words {
			next = splitWords(next, w, split)
		}
		words = next
	}
	return words
}

// splitWords appends w's pieces: each match of split, and each run of
// text between matches as a piece of its own (as llama.cpp keeps it).
// Pieces are cut at the characters' byte offsets, so text that is not
// valid UTF-8 (a byte decodes as U+FFFD) still comes back byte for byte.
func splitWords(out []string, w string, split wordSplitter) []string {
	var rs []rune
	var offsets []int
	for i, r := range w {
		rs, offsets = append(rs, r), append(offsets, i)
	}
	offsets = append(offsets, len(w))
	gap := 0
	for i := 0; i < len(rs); {
		end := split(rs, i)
		if end == i {
			i++
			continue
		}
		if gap < i {
			out = append(out, w[offsets[gap]:offsets[i]])
		}
		out = append(out, w[offsets[i]:offsets[end]])
		i, gap = end, end
	}
	if gap < len(rs) {
		out = append(out, w[offsets[gap]:])
	}
	return out
}

func isLetter(r rune) bool { return unicode.IsLetter(r) }
func isNumber(r rune) bool { return unicode.IsNumber(r) }
func isSpace(r rune) bool  { return unicode.IsSpace(r) }
func isOther(r rune) bool  { return !isSpace(r) && !isLetter(r) && !isNumber(r) }
func isNewline(r rune) bool {
	return r == '\r' || r == '\n'
}

// run is the end of the run of class starting at i (i when rs[i] is not).
func run(rs []rune, i int, class func(rune) bool) int {
	for i < len(rs) && class(rs[i]) {
		i++
	}
	return i
}

// contraction matches 's 't 're 've 'm 'll 'd, in any case when fold.
func contraction(rs []rune, i int, fold bool) int {
	if rs[i] != '\'' || i+1 >= len(rs) {
		return i
	}
	lower := func(r rune) rune {
		if fold {
			return unicode.ToLower(r)
		}
		return r
	}
	second := func(want rune) bool { return i+2 < len(rs) && lower(rs[i+2]) == want }
	switch lower(rs[i+1]) {
	case 's', 't', 'm', 'd':
		return i + 2
	case 'r', 'v':
		if second('e') {
			return i + 3
		}
	case 'l':
		if second('l') {
			return i + 3
		}
	}
	return i
}

// trailingSpaces is \s+(?!\S) then \s+: a run of whitespace, less its last
// character when a word follows (that one goes with the word).
func trailingSpaces(rs []rune, i int) int {
	end := run(rs, i, isSpace)
	if end > i+1 && end < len(rs) {
		return end - 1
	}
	return end
}

// gpt2Words is 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+.
func gpt2Words(rs []rune, i int) int {
	if end := contraction(rs, i, false); end > i {
		return end
	}
	j := i
	if rs[j] == ' ' && j+1 < len(rs) {
		j++
	}
	for _, class := range []func(rune) bool{isLetter, isNumber, isOther} {
		if end := run(rs, j, class); end > j {
			return end
		}
	}
	return trailingSpaces(rs, i)
}

// singleDigits is \p{N}: every digit a word of its own.
func singleDigits(rs []rune, i int) int {
	if isNumber(rs[i]) {
		return i + 1
	}
	return i
}

// llama3Words is Llama 3's expression (Qwen2's with maxDigits 1):
// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,maxDigits}|
// ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+.
func llama3Words(maxDigits int) wordSplitter {
	return func(rs []rune, i int) int {
		if end := contraction(rs, i, true); end > i {
			return end
		}
		if end := run(rs, i, isLetter); end > i {
			return end
		}
		if !isNewline(rs[i]) && !isNumber(rs[i]) && i+1 < len(rs) {
			if end := run(rs, i+1, isLetter); end > i+1 {
				return end
			}
		}
		if end := run(rs, i, isNumber); end > i {
			return min(end, i+maxDigits)
		}
		j := i
		if rs[j] == ' ' && j+1 < len(rs) {
			j++
		}
		if end := run(rs, j, isOther); end > j {
			return run(rs, end, isNewline)
		}
		end := run(rs, i, isSpace)
		for k := end; k > i; k-- {
			if isNewline(rs[k-1]) {
				return k
			}
		}
		return trailingSpaces(rs, i)
	}
}
