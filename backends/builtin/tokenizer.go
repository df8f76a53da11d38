package builtin

import (
	"container/heap"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Token ids shared by llama-family vocabularies.
const (
	tokenBOS = 1
	tokenEOS = 2
	// byteTokenBase is the id of <0x00> in the synthetic vocabulary (and
	// llama2.c's): bytes 0..255 follow its three special tokens. A real
	// vocabulary's byte tokens are found by their pieces (Gemma's start
	// at 6).
	byteTokenBase = 3
)

// Tokenizer is a model's vocabulary: sentencepiece-style BPE with merge
// scores, as llama2.c's tokenizer.bin and GGUF's "llama" model describe
// it, or GPT-2-style byte-level BPE with ranked merges (GGUF's "gpt2").
type Tokenizer struct {
	Pieces []string
	Scores []float32
	ids    map[string]int
	// byteLevel is set for synthetic models: every prompt byte is its own
	// token and pieces beyond the byte range decode to a placeholder.
	byteLevel bool
	bpe       *bpeVocab // set for a gpt2 vocabulary
	bos       int       // prepended to a prompt when addBOS
	addBOS    bool
	eos       int // appended to a prompt when addEOS (the file's add_eos_token)
	addEOS    bool
	stops     []int // tokens that end a generation
	// byteIDs are the ids of the byte tokens <0x00>..<0xFF>, which stand
	// in for text the vocabulary lacks (-1 where a byte has none: the
	// unknown token then does).
	byteIDs [256]int
	unk     int
	// noSpacePrefix drops sentencepiece's dummy-prefix space
	// (tokenizer.ggml.add_space_prefix = false, as Gemma's files say).
	noSpacePrefix bool
	// asLlamaCpp marks a GGUF sentencepiece vocabulary, read as llama.cpp
	// reads it where llama2.c differs: its pieces write a space as ▁, as
	// stored, so a prompt's spaces are written so before merging (a typed
	// ▁ is a space, and a token stored with a space, Gemma's runs of them,
	// is only ever taken whole) and a normal piece's marks print as
	// spaces; and every byte token prints its byte.
	asLlamaCpp bool
	// userTokens are the vocabulary's user-defined tokens, longest first:
	// each is taken whole where its text is in a prompt.
	userTokens []userToken
	// types are a GGUF vocabulary's token types, as llama.cpp re-types
	// them (recogniseByText); nil where the file has none.
	types []int
}

// GGUF's token types (tokenizer.ggml.token_type) the engine tells apart.
const (
	tokenTypeUnknown     = 2
	tokenTypeControl     = 3
	tokenTypeUserDefined = 4
	tokenTypeUnused      = 5
)

// userToken is a user-defined token's text, as the file stores it, and id.
type userToken struct {
	text string
	id   int
}

// NewTokenizer indexes a sentencepiece vocabulary's pieces and scores.
// Its prompts start with BOS, and BOS or EOS ends a generation (llama2.c's
// rule).
func NewTokenizer(pieces []string, scores []float32) *Tokenizer {
	t := &Tokenizer{Pieces: pieces, Scores: scores, ids: make(map[string]int, len(pieces)),
		bos: tokenBOS, addBOS: true, stops: []int{tokenBOS, tokenEOS}}
	for i, p := range pieces {
		if _, dup := t.ids[p]; !dup {
			t.ids[p] = i
		}
	}
	t.unk = t.idOr("<unk>", 0)
	for b := range t.byteIDs {
		t.byteIDs[b] = t.idOr(fmt.Sprintf("<0x%02X>", b), -1)
	}
	return t
}

// idOr is piece's id, or or where the vocabulary lacks it.
func (t *Tokenizer) idOr(piece string, or int) int {
	if id, ok := t.ids[piece]; ok {
		return id
	}
	return or
}

// byteToken is the token that stands for byte c: its byte token, else
// the unknown token.
func (t *Tokenizer) byteToken(c byte) int {
	if id := t.byteIDs[c]; id >= 0 {
		return id
	}
	return t.unk
}

// ByteLevelTokenizer serves synthetic weights, whose vocabulary has no
// real pieces: prompts become byte tokens, so any prompt works.
func ByteLevelTokenizer(vocab int) *Tokenizer {
	pieces := make([]string, vocab)
	for i := range pieces {
		switch {
		case i == 0:
			pieces[i] = "<unk>"
		case i == tokenBOS:
			pieces[i] = "<s>"
		case i == tokenEOS:
			pieces[i] = "</s>"
		case i < byteTokenBase+256:
			pieces[i] = fmt.Sprintf("<0x%02X>", i-byteTokenBase)
		default:
			pieces[i] = " t" + strconv.Itoa(i)
		}
	}
	t := NewTokenizer(pieces, make([]float32, vocab))
	t.byteLevel = true
	return t
}

// ParseTokenizerBin reads llama2.c's tokenizer.bin: the longest piece's
// length, then per token a float32 score, an int32 length and the bytes.
func ParseTokenizerBin(b []byte, vocab int) (*Tokenizer, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("tokenizer file is %d bytes; too short", len(b))
	}
	pos := 4
	pieces := make([]string, vocab)
	scores := make([]float32, vocab)
	for i := range vocab {
		if pos+8 > len(b) {
			return nil, fmt.Errorf("tokenizer file ends at token %d of %d", i, vocab)
		}
		scores[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[pos:]))
		n := int(int32(binary.LittleEndian.Uint32(b[pos+4:])))
		pos += 8
		if n < 0 || pos+n > len(b) {
			return nil, fmt.Errorf("tokenizer file: token %d has length %d past the end of the file", i, n)
		}
		pieces[i] = string(b[pos : pos+n])
		pos += n
	}
	return NewTokenizer(pieces, scores), nil
}

// Encode turns text into token ids, with the special tokens the
// vocabulary adds where special is asked (BOS before, EOS after where the
// file says so): a gpt2 vocabulary's way (see bpe.go), else llama2.c's: a
// dummy-prefix space, one token per UTF-8 character (byte tokens for
// characters the vocabulary lacks), then greedy merges of the adjacent
// pair whose merged piece scores highest.
func (t *Tokenizer) Encode(text string, special bool) []int {
	var tokens []int
	if special && t.addBOS {
		tokens = append(tokens, t.bos)
	}
	// As llama.cpp: the user-defined tokens' texts first, each taken
	// whole, then each run of text between them tokenized; a
	// sentencepiece run after such a token gets the dummy prefix again.
	afterToken := true
	for _, f := range t.partition(text) {
		if f.id >= 0 {
			tokens, afterToken = append(tokens, f.id), true
			continue
		}
		tokens, afterToken = t.encodeText(tokens, f.text, afterToken), false
	}
	if special && t.addEOS {
		tokens = append(tokens, t.eos)
	}
	return tokens
}

// fragment is a run of prompt text (id -1) or a user-defined token.
type fragment struct {
	text string
	id   int
}

// partition splits text at every user-defined token's text, the longest
// tokens first, each occurrence from the left, as llama.cpp's
// tokenizer_st_partition does.
func (t *Tokenizer) partition(text string) []fragment {
	if text == "" {
		return nil
	}
	frags := []fragment{{text: text, id: -1}}
	for _, u := range t.userTokens {
		var next []fragment
		for _, f := range frags {
			if f.id >= 0 {
				next = append(next, f)
				continue
			}
			rest := f.text
			for {
				at := strings.Index(rest, u.text)
				if at < 0 {
					break
				}
				if at > 0 {
					next = append(next, fragment{text: rest[:at], id: -1})
				}
				next = append(next, fragment{id: u.id})
				rest = rest[at+len(u.text):]
			}
			if rest != "" {
				next = append(next, fragment{text: rest, id: -1})
			}
		}
		frags = next
	}
	return frags
}

// encodeText appends the ids of a run of text with no user-defined token
// in it; spacePrefix is whether a sentencepiece vocabulary's dummy prefix
// goes before it (the text's start, or after a user-defined token).
func (t *Tokenizer) encodeText(tokens []int, text string, spacePrefix bool) []int {
	if t.bpe != nil {
		return t.bpe.encode(tokens, text, t.ids)
	}
	if t.byteLevel {
		for i := 0; i < len(text); i++ {
			tokens = append(tokens, t.byteToken(text[i]))
		}
		return tokens
	}
	if text != "" && spacePrefix && !t.noSpacePrefix {
		text = " " + text
	}
	if t.asLlamaCpp {
		text = strings.ReplaceAll(text, " ", "\u2581")
	}
	// As llama.cpp's sentencepiece tokenizer: each UTF-8 character is a
	// symbol, the adjacent pair whose joined text is the best-scoring
	// piece is joined (the leftmost of equals) until no pair is a piece,
	// then each symbol is its piece, or its bytes' tokens where the
	// vocabulary lacks it. The pairs wait in a heap, as llama.cpp keeps
	// them: rescanning every pair after each merge took half a second
	// for a 4,000-character prompt.
	var syms []spmSymbol
	for i := 0; i < len(text); {
		_, size := utf8.DecodeRuneInString(text[i:])
		syms = append(syms, spmSymbol{start: i, n: size, prev: len(syms) - 1, next: len(syms) + 1})
		i += size
	}
	if len(syms) == 0 {
		return tokens
	}
	syms[len(syms)-1].next = -1
	var pairs spmPairs
	try := func(l, r int) {
		if l < 0 || r < 0 {
			return
		}
		piece := text[syms[l].start : syms[l].start+syms[l].n+syms[r].n]
		if id, ok := t.ids[piece]; ok {
			heap.Push(&pairs, spmPair{left: l, right: r, score: t.Scores[id], size: len(piece)})
		}
	}
	for i := 1; i < len(syms); i++ {
		try(i-1, i)
	}
	for pairs.Len() > 0 {
		p := heap.Pop(&pairs).(spmPair)
		l, r := &syms[p.left], &syms[p.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != p.size { // a stale pair: one side merged since
			continue
		}
		l.n, r.n, l.next = l.n+r.n, 0, r.next
		if l.next >= 0 {
			syms[l.next].prev = p.left
		}
		try(l.prev, p.left)
		try(p.left, l.next)
	}
	for i := 0; i >= 0; i = syms[i].next {
		sym := text[syms[i].start : syms[i].start+syms[i].n]
		if id, ok := t.ids[sym]; ok {
			tokens = append(tokens, id)
			continue
		}
		for _, c := range []byte(sym) {
			tokens = append(tokens, t.byteToken(c))
		}
	}
	return tokens
}

// spmSymbol is a run of a prompt's text being merged: text[start:start+n],
// its neighbours' indexes (-1 at the ends); n is 0 once merged away.
type spmSymbol struct{ start, n, prev, next int }

// spmPair is two adjacent symbols whose joined text is a piece of score
// score and size bytes (stale once either side has changed size).
type spmPair struct {
	left, right int
	score       float32
	size        int
}

// spmPairs is a heap of pairs, the best score first and of equal scores
// the leftmost, as llama.cpp orders them.
type spmPairs []spmPair

func (h spmPairs) Len() int { return len(h) }
func (h spmPairs) Less(i, j int) bool {
	return h[i].score > h[j].score || h[i].score == h[j].score && h[i].left < h[j].left
}
func (h spmPairs) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *spmPairs) Push(x any)   { *h = append(*h, x.(spmPair)) }
func (h *spmPairs) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Stops reports whether token ends a generation.
func (t *Tokenizer) Stops(token int) bool { return slices.Contains(t.stops, token) }

// Decode returns the text of token after prev, as llama2.c prints it: the
// leading space of the first piece after BOS is dropped, byte tokens
// become their byte, and control bytes other than whitespace are dropped.
// A GGUF vocabulary's tokens print as llama.cpp's token_to_piece prints
// them without special tokens: control, unknown and unused ones print
// nothing, a user-defined one its text, a byte token its byte whatever it
// is.
func (t *Tokenizer) Decode(prev, token int) string {
	if token < 0 || token >= len(t.Pieces) {
		return ""
	}
	if token < len(t.types) {
		switch t.types[token] {
		case tokenTypeUnknown, tokenTypeControl, tokenTypeUnused:
			return "" // as llama.cpp prints a token without its special ones
		case tokenTypeUserDefined:
			return t.Pieces[token] // its text as it is
		}
	}
	if t.bpe != nil {
		return t.bpe.decode(t.Pieces[token])
	}
	piece := t.Pieces[token]
	if t.asLlamaCpp {
		piece = strings.ReplaceAll(piece, "\u2581", " ")
	}
	if prev == t.bos && !t.noSpacePrefix && strings.HasPrefix(piece, " ") { // the dummy prefix's space
		piece = piece[1:]
	}
	if len(piece) == 6 && strings.HasPrefix(piece, "<0x") && piece[5] == '>' {
		if c, err := strconv.ParseUint(piece[3:5], 16, 8); err == nil {
			piece = string([]byte{byte(c)})
		}
	}
	if len(piece) == 1 && !printableOrSpace(piece[0]) && !t.asLlamaCpp {
		return ""
	}
	return piece
}

func printableOrSpace(c byte) bool {
	return (c >= 0x20 && c < 0x7f) || c == ' ' || (c >= '\t' && c <= '\r') || c >= 0x80
}
