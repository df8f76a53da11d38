// Package builtin is tokentop's own inference engine: a pure-Go
// decoder-only transformer (RMSNorm, rotary embeddings, grouped-query
// attention with a KV cache, a gated feed-forward, shared or separate
// classifier) in the variants of the llama, qwen2, qwen3 and gemma3
// architectures, so a machine with no inference server still measures
// real generations.
//
// Weights come from three places: the real stories260K model embedded in
// the binary, seeded synthetic weights for larger model shapes (the same
// arithmetic per token as a real model of that shape, meaningless text),
// or a llama2.c checkpoint or GGUF file named by path.
package builtin

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"sync/atomic"
)

// Shape is a llama model's hyperparameters.
type Shape struct {
	Dim       int `json:"dim"`
	HiddenDim int `json:"hidden_dim"`
	Layers    int `json:"layers"`
	Heads     int `json:"heads"`
	KVHeads   int `json:"kv_heads"`
	Vocab     int `json:"vocab"`
	SeqLen    int `json:"seq_len"`
	// HeadDim is one attention head's width where the file names its own
	// (Qwen3's and Gemma 3's are not dim/heads); 0 means dim/heads.
	HeadDim int `json:"head_dim,omitempty"`
}

func (s Shape) String() string {
	head := ""
	if s.HeadDim != 0 {
		head = fmt.Sprintf(", head %d", s.HeadDim)
	}
	return fmt.Sprintf("dim %d, hidden %d, %d layers, %d heads, %d kv heads%s, vocab %d, context %d",
		s.Dim, s.HiddenDim, s.Layers, s.Heads, s.KVHeads, head, s.Vocab, s.SeqLen)
}

// HeadSize is the width of one attention head.
func (s Shape) HeadSize() int {
	if s.HeadDim > 0 {
		return s.HeadDim
	}
	return s.Dim / s.Heads
}

// QDim is the width of the queries of one position (and of the
// attention's output, before its projection back to dim).
func (s Shape) QDim() int { return s.Heads * s.HeadSize() }

// KVDim is the width of the keys and values of one position.
func (s Shape) KVDim() int { return s.KVHeads * s.HeadSize() }

// Validate rejects shapes the forward pass cannot run.
func (s Shape) Validate() error {
	switch {
	case s.Dim <= 0 || s.HiddenDim <= 0 || s.Layers <= 0 || s.Heads <= 0 || s.KVHeads <= 0 || s.Vocab <= 0 || s.SeqLen <= 0 || s.HeadDim < 0:
		return fmt.Errorf("shape has a zero or negative size (%s)", s)
	case s.HeadDim == 0 && s.Dim%s.Heads != 0:
		return fmt.Errorf("dim %d is not a multiple of heads %d", s.Dim, s.Heads)
	case s.Heads%s.KVHeads != 0:
		return fmt.Errorf("heads %d is not a multiple of kv heads %d", s.Heads, s.KVHeads)
	case s.HeadSize()%2 != 0:
		return fmt.Errorf("head size %d is odd; rotary embeddings need pairs", s.HeadSize())
	case s.Dim > 1<<16 || s.HiddenDim > 1<<18 || s.Layers > 1<<10 || s.Vocab > 1<<20 || s.SeqLen > 1<<20 || s.HeadDim > 1<<12 || s.Heads > 1<<10:
		return fmt.Errorf("shape is implausibly large (%s)", s)
	}
	return nil
}

// Params counts the weights (classifier included once when shared).
func (s Shape) Params(sharedClassifier bool) int64 {
	d, h, kv, q := int64(s.Dim), int64(s.HiddenDim), int64(s.KVDim()), int64(s.QDim())
	perLayer := 2*d + d*q + 2*d*kv + q*d + 3*d*h
	n := int64(s.Vocab)*d + int64(s.Layers)*perLayer + d
	if !sharedClassifier {
		n += int64(s.Vocab) * d
	}
	return n
}

// Layer holds one transformer block's weights. The fields after W3 are
// the architectures' additions to llama's block, nil where a file has
// none.
type Layer struct {
	AttnNorm   []float32
	WQ, WK, WV *Matrix
	WO         *Matrix
	FFNNorm    []float32
	W1, W2, W3 *Matrix // gate, down, up

	QBias, KBias, VBias []float32 // qwen2: added to the projections
	QNorm, KNorm        []float32 // qwen3, gemma3: each head's RMSNorm before RoPE
	PostAttnNorm        []float32 // gemma3: the attention's output, before its residual
	PostFFNNorm         []float32 // gemma3: the feed-forward's output, before its residual
	// Sliding marks a layer that attends to the last Weights.Window
	// positions only (gemma3's local layers), with their own rotary base.
	Sliding bool
}

// Weights is a whole model. Embedding rows are read per token, so they stay
// f32; the matrices may be f32 or Q8_0. Where a tied classifier's rows
// became tiles, its tiles hold the embedding too and Embedding is nil
// (see embed).
type Weights struct {
	Shape     Shape
	Embedding []float32 // vocab × dim
	// embedRows is a quantized embedding as the file stores it, each row
	// decoded as a token looks it up: dequantized whole it was a float32
	// copy of the vocabulary (1 GiB for Llama 3.2's), resident beside
	// the file. A loaded file's f32 embedding that no classifier shares
	// is read so too (leaveMapping). Embedding is nil where it is set.
	embedRows  *quantRows
	Layers     []Layer
	FinalNorm  []float32
	Classifier *Matrix     // vocab × dim; shares Embedding's storage when tied
	tileMemory *tileMemory // the f32 matrices' tiles (tileF32)
	// rowsOfHalves is set where tileF32 widened an F16 or BF16 file's
	// halves into rows of floats (a build without the tile kernels), so
	// that its streams still keep their caches as halves (cacheFormat),
	// as where the tiles keep the halves.
	rowsOfHalves bool
	// NormEps is the RMSNorm epsilon (llama2.c uses 1e-5).
	NormEps float32
	// RopeBase is the rotary embeddings' base; 0 means llama2.c's 10000.
	RopeBase float64
	Arch
}

// Arch is how an architecture's block differs from llama's, as the GGUF
// file describes it; its zero value is llama2.c's llama.
type Arch struct {
	Name string // general.architecture; "" for llama2.c and synthetic weights
	// RopeNeox rotates each head's dimension i with i+headSize/2 (GPT-NeoX's
	// pairing, qwen and gemma files) instead of 2i with 2i+1 (llama's).
	RopeNeox bool
	// RopeFactors divide each pair's frequency (Llama 3.1's
	// rope_freqs.weight); nil for none.
	RopeFactors []float32
	// RopeScale multiplies every position's angle (linear rope scaling,
	// 1/factor); 0 means 1.
	RopeScale float64
	// Window is the sliding layers' attention span in positions, and
	// SlidingRopeBase their rotary base (gemma3). Their positions are not
	// scaled: gemma3's RopeScale (the 4B to 27B's linear 1/8) is its
	// global layers' alone, as llama.cpp reads it.
	Window          int
	SlidingRopeBase float64
	// EmbedScale multiplies each token's embedding (gemma3: √dim); 0 for
	// none.
	EmbedScale float32
	// AttnScale, where not 0, scales each query before its scores (gemma3)
	// instead of the scores' 1/√headSize.
	AttnScale float32
	// GELU gates the feed-forward with GELU (gemma3's GeGLU) instead of
	// SiLU (SwiGLU).
	GELU bool
	// LogitSoftcap bounds the logits to ±cap by cap·tanh(logit/cap); 0 for
	// none.
	LogitSoftcap float32
	// FileContext is the context the file was trained for where the
	// engine allocates for less (ggufContextCap); 0 otherwise.
	FileContext int
}

// embed copies token's embedding into x, scaled where the architecture
// scales it; scratch is room for a row read from the file (see
// quantRows.row).
func (w *Weights) embed(x []float32, token int, scratch []byte) {
	switch {
	case w.Embedding != nil:
		d := w.Shape.Dim
		copy(x, w.Embedding[token*d:(token+1)*d])
	case w.embedRows != nil:
		w.embedRows.row(x, token, scratch)
	default: // tied, and in the classifier's tiles
		w.Classifier.f32RowInto(x, token)
	}
	if w.EmbedScale != 0 {
		for i := range x {
			x[i] *= w.EmbedScale
		}
	}
}

// quantRows is a table as a file stores it, read a row at a time: each
// row a run of blocks (quantized ones, or one block of float32s), each
// decoded by decode. The rows are raw's bytes, or, once a loaded file's
// pages have been handed back, the file's own (fileRows).
type quantRows struct {
	raw                     []byte
	cols, block, blockBytes int
	decode                  func(out []float32, block []byte)
	file                    *fileRows // set by leaveMapping; raw is nil then
}

// fileRows is where a table's rows lie in a weights file, read with
// pread: a lookup read through the mapping made the kernel map the large
// page-cache folio around it, until most of the file was resident again
// beside the tiles copied out of it.
type fileRows struct {
	f      *os.File
	offset int64
	err    atomic.Pointer[error]
}

// rowBytes is one row's size as stored.
func (q *quantRows) rowBytes() int { return q.cols / q.block * q.blockBytes }

// row decodes row r into x, reading it through scratch (rowBytes long,
// or made here) where the rows are the file's. A row the file no longer
// gives (it was cut or replaced while loaded) reads as zeros, and readErr
// says why.
func (q *quantRows) row(x []float32, r int, scratch []byte) {
	n := q.rowBytes()
	if q.file == nil {
		decodeBlocks(x[:q.cols], q.raw[r*n:(r+1)*n], q.block, q.blockBytes, q.decode)
		return
	}
	if len(scratch) < n {
		scratch = make([]byte, n)
	}
	if _, err := q.file.f.ReadAt(scratch[:n], q.file.offset+int64(r)*int64(n)); err != nil {
		q.file.failed(r, err)
		clear(x[:q.cols])
		return
	}
	decodeBlocks(x[:q.cols], scratch[:n], q.block, q.blockBytes, q.decode)
}

// failed keeps the first failed read's error, for readErr. (Its own
// function: an error whose address is taken escapes to the heap where it
// is declared, and row would allocate on every call.)
func (f *fileRows) failed(row int, err error) {
	err = fmt.Errorf("reading row %d of the embedding from %s: %w (was the file changed while it was loaded?)", row, f.f.Name(), err)
	f.err.CompareAndSwap(nil, &err)
}

// close closes the file a table is read through, if it is.
func (q *quantRows) close() {
	if q != nil && q.file != nil {
		q.file.f.Close()
	}
}

// readErr is the first failed read of a table read through its file.
func (q *quantRows) readErr() error {
	if q == nil || q.file == nil {
		return nil
	}
	if err := q.file.err.Load(); err != nil {
		return *err
	}
	return nil
}

// decodeF32 decodes a row of little-endian float32s (a table of f32
// rows, one block a row).
func decodeF32(out []float32, b []byte) {
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
}

// decodeBlocks decodes a row of stored blocks (blockBytes each, of block
// weights) into out.
func decodeBlocks(out []float32, raw []byte, block, blockBytes int, decode func(out []float32, b []byte)) {
	for b := range len(out) / block {
		decode(out[b*block:(b+1)*block], raw[b*blockBytes:(b+1)*blockBytes])
	}
}

// decodeQ8_0File decodes one of a GGUF's Q8_0 blocks: a half scale, then
// 32 signed bytes.
func decodeQ8_0File(out []float32, b []byte) {
	d := f16ToF32(le16(b))
	for i := range out {
		out[i] = d * float32(int8(b[2+i]))
	}
}
