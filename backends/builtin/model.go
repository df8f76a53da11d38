// Package builtin is tokentop's own inference engine: a pure-Go
// llama-architecture transformer (RMSNorm, rotary embeddings, grouped-query
// attention with a KV cache, SwiGLU, shared or separate classifier), so a
// machine with no inference server still measures real generations.
//
// Weights come from three places: the real stories260K model embedded in
// the binary, seeded synthetic weights for larger model shapes (the same
// arithmetic per token as a real model of that shape, meaningless text),
// or a llama2.c checkpoint or GGUF file named by path.
package builtin

import (
	"fmt"
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
}

func (s Shape) String() string {
	return fmt.Sprintf("dim %d, hidden %d, %d layers, %d heads, %d kv heads, vocab %d, context %d",
		s.Dim, s.HiddenDim, s.Layers, s.Heads, s.KVHeads, s.Vocab, s.SeqLen)
}

// HeadSize is the width of one attention head.
func (s Shape) HeadSize() int { return s.Dim / s.Heads }

// KVDim is the width of the keys and values of one position.
func (s Shape) KVDim() int { return s.KVHeads * s.HeadSize() }

// Validate rejects shapes the forward pass cannot run.
func (s Shape) Validate() error {
	switch {
	case s.Dim <= 0 || s.HiddenDim <= 0 || s.Layers <= 0 || s.Heads <= 0 || s.KVHeads <= 0 || s.Vocab <= 0 || s.SeqLen <= 0:
		return fmt.Errorf("shape has a zero or negative size (%s)", s)
	case s.Dim%s.Heads != 0:
		return fmt.Errorf("dim %d is not a multiple of heads %d", s.Dim, s.Heads)
	case s.Heads%s.KVHeads != 0:
		return fmt.Errorf("heads %d is not a multiple of kv heads %d", s.Heads, s.KVHeads)
	case s.HeadSize()%2 != 0:
		return fmt.Errorf("head size %d is odd; rotary embeddings need pairs", s.HeadSize())
	case s.Dim > 1<<16 || s.HiddenDim > 1<<18 || s.Layers > 1<<10 || s.Vocab > 1<<20 || s.SeqLen > 1<<20:
		return fmt.Errorf("shape is implausibly large (%s)", s)
	}
	return nil
}

// Params counts the weights (classifier included once when shared).
func (s Shape) Params(sharedClassifier bool) int64 {
	d, h, kv := int64(s.Dim), int64(s.HiddenDim), int64(s.KVDim())
	perLayer := 2*d + d*d + 2*d*kv + d*d + 3*d*h
	n := int64(s.Vocab)*d + int64(s.Layers)*perLayer + d
	if !sharedClassifier {
		n += int64(s.Vocab) * d
	}
	return n
}

// Layer holds one transformer block's weights.
type Layer struct {
	AttnNorm   []float32
	WQ, WK, WV *Matrix
	WO         *Matrix
	FFNNorm    []float32
	W1, W2, W3 *Matrix // gate, down, up
}

// Weights is a whole model. Embedding rows are read per token, so they stay
// f32; the matrices may be f32 or Q8_0. Where a tied classifier's rows
// became tiles, its tiles hold the embedding too and Embedding is nil
// (see embed).
type Weights struct {
	Shape      Shape
	Embedding  []float32 // vocab × dim
	Layers     []Layer
	FinalNorm  []float32
	Classifier *Matrix // vocab × dim; shares Embedding's storage when tied
	// NormEps is the RMSNorm epsilon (llama2.c uses 1e-5).
	NormEps float32
	// RopeBase is the rotary embeddings' base; 0 means llama2.c's 10000.
	RopeBase float64
}

// embed copies token's embedding into x.
func (w *Weights) embed(x []float32, token int) {
	if w.Embedding == nil { // tied, and in the classifier's tiles
		w.Classifier.f32RowInto(x, token)
		return
	}
	d := w.Shape.Dim
	copy(x, w.Embedding[token*d:(token+1)*d])
}
