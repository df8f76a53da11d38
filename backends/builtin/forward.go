package builtin

import (
	"math"
)

// State is one generation's scratch space and KV cache. It is reused across
// trials: a new generation only resets the position.
type State struct {
	w                *Weights
	x, xb, xb2       []float32 // dim
	hb, hb2          []float32 // hidden
	q                []float32 // dim
	att              []float32 // heads × attStride
	attStride        int       // seq rounded up to a multiple of 8
	logits           []float32 // vocab
	k, v             []float32 // kvdim: this position's key and value
	keys, values     []float32 // layers × kv heads × seq × head size
	ropeCos, ropeSin []float32 // seq × headSize/2
	xq               quantized // x quantized for Q8_0 matrices
	hq               quantized
	pool             *Pool
	job              matJob  // the current matvec, kept here so it does not escape per call
	attn             attnJob // likewise for attention
}

type quantized struct {
	q      []int8
	scales []float32
}

func newQuantized(n int) quantized {
	return quantized{q: make([]int8, n), scales: newScales((n + GroupSize - 1) / GroupSize)}
}

// NewState allocates everything a forward pass needs, up front.
func NewState(w *Weights, pool *Pool) *State {
	s := w.Shape
	seq, hs := s.SeqLen, s.HeadSize()
	st := &State{w: w, pool: pool,
		k: make([]float32, s.KVDim()), v: make([]float32, s.KVDim()),
		x: make([]float32, s.Dim), xb: make([]float32, s.Dim), xb2: make([]float32, s.Dim), q: make([]float32, s.Dim),
		hb: make([]float32, s.HiddenDim), hb2: make([]float32, s.HiddenDim),
		attStride: roundUp8(seq), att: make([]float32, s.Heads*roundUp8(seq)), logits: make([]float32, s.Vocab),
		keys: make([]float32, s.Layers*seq*s.KVDim()), values: make([]float32, s.Layers*seq*s.KVDim()),
		ropeCos: make([]float32, seq*hs/2), ropeSin: make([]float32, seq*hs/2),
		xq: newQuantized(s.Dim), hq: newQuantized(s.HiddenDim)}
	// Rotary tables, computed once instead of per token (llama2.c's
	// frequencies: pair i of a head turns at 10000^(-2i/headSize)).
	for pos := range seq {
		for i := 0; i < hs/2; i++ {
			freq := 1 / math.Pow(10000, float64(2*i)/float64(hs))
			angle := float64(pos) * freq
			st.ropeCos[pos*hs/2+i] = float32(math.Cos(angle))
			st.ropeSin[pos*hs/2+i] = float32(math.Sin(angle))
		}
	}
	return st
}

// Forward runs token at position pos through the model and returns the
// logits over the vocabulary (valid until the next call).
func (st *State) Forward(token, pos int) []float32 {
	w, s := st.w, st.w.Shape
	dim, hs := s.Dim, s.HeadSize()
	seq := s.SeqLen
	copy(st.x, w.Embedding[token*dim:(token+1)*dim])
	cos, sin := st.ropeCos[pos*hs/2:(pos+1)*hs/2], st.ropeSin[pos*hs/2:(pos+1)*hs/2]

	for l := range w.Layers {
		layer := &w.Layers[l]
		rmsNorm(st.xb, st.x, layer.AttnNorm, w.NormEps)
		st.matVec3(layer.WQ, st.q, layer.WK, st.k, layer.WV, st.v, st.xb, &st.xq)

		for h := 0; h < s.Heads; h++ {
			rope(st.q[h*hs:(h+1)*hs], cos, sin)
		}
		for h := 0; h < s.KVHeads; h++ {
			rope(st.k[h*hs:(h+1)*hs], cos, sin)
			at := ((l*s.KVHeads+h)*seq + pos) * hs
			copy(st.keys[at:at+hs], st.k[h*hs:(h+1)*hs])
			copy(st.values[at:at+hs], st.v[h*hs:(h+1)*hs])
		}

		st.attn = attnJob{st: st, layer: l, pos: pos}
		st.pool.run(&st.attn)
		st.matVec(layer.WO, st.xb2, st.xb, &st.xq)
		add(st.x, st.xb2)

		rmsNorm(st.xb, st.x, layer.FFNNorm, w.NormEps)
		st.gatedFFN(layer.W1, layer.W3, st.hb, st.hb2, st.xb, &st.xq)
		st.matVec(layer.W2, st.xb, st.hb, &st.hq)
		add(st.x, st.xb)
	}
	rmsNorm(st.x, st.x, w.FinalNorm, w.NormEps)
	st.matVec(w.Classifier, st.logits, st.x, &st.xq)
	return st.logits
}

// attendHead computes head h's attention output at pos into xb: scores
// against every cached key, softmax, then the weighted sum of values.
// Heads write disjoint parts of att and xb, so they run in parallel.
//
// The cache is laid out head by head, so a head reads its keys and values
// as two sequential streams. With llama2.c's position-major layout each
// position was a short row at a stride of the whole kv width, and on
// stories110M attention took 16% of a two-thread decode step for 2% of
// its arithmetic.
func (st *State) attendHead(l, pos, h int) {
	s := st.w.Shape
	seq, hs := s.SeqLen, s.HeadSize()
	headAt := (l*s.KVHeads + h/(s.Heads/s.KVHeads)) * seq * hs
	keys, values := st.keys[headAt:headAt+(pos+1)*hs], st.values[headAt:headAt+(pos+1)*hs]
	scale := float32(1 / math.Sqrt(float64(hs)))
	q := st.q[h*hs : (h+1)*hs]
	// Scores are padded to whole vectors with -Inf, whose weight is 0, so
	// softmax never has a ragged tail.
	att := st.att[h*st.attStride : h*st.attStride+roundUp8(pos+1)]
	dotRows(att, keys, q, 0, pos+1, hs, hs)
	for t := pos + 1; t < len(att); t++ {
		att[t] = float32(math.Inf(-1))
	}
	softmax(att, scale)
	weightedSum(st.xb[h*hs:(h+1)*hs], att[:pos+1], values, hs)
}

// rmsNorm writes weight ⊙ x / rms(x) to out (out may be x).
func rmsNorm(out, x, weight []float32, eps float32) {
	var ss float32
	for _, v := range x {
		ss += v * v
	}
	ss = ss/float32(len(x)) + eps
	inv := float32(1 / math.Sqrt(float64(ss)))
	for i := range x {
		out[i] = weight[i] * (inv * x[i])
	}
}

// rope rotates consecutive pairs of one head by the position's angles.
func rope(v, cos, sin []float32) {
	for i := 0; i < len(v); i += 2 {
		c, s := cos[i/2], sin[i/2]
		a, b := v[i], v[i+1]
		v[i] = a*c - b*s
		v[i+1] = a*s + b*c
	}
}

func roundUp8(n int) int { return (n + 7) &^ 7 }

func add(x, y []float32) {
	for i := range x {
		x[i] += y[i]
	}
}
