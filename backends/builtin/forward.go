package builtin

import (
	"math"
	"sync"
	"sync/atomic"
)

// State is one stream's scratch space, KV cache and sampler: everything a
// generation owns, beside the weights it shares with every other stream.
// A State is reused across generations: a new one only resets the
// position.
type State struct {
	w          *Weights
	x, xb, xb2 []float32 // dim
	hb, hb2    []float32 // hidden
	q          []float32 // qdim
	ao         []float32 // qdim: the attention's output, before its projection
	att        []float32 // heads × attStride
	attStride  int       // seq rounded up to a multiple of 8
	logits     []float32 // vocab
	k, v       []float32 // kvdim: this position's key and value
	cache      kvCache
	widened    []float32 // qdim: each head's row of the cache as floats, for the portable kernels
	xq         quantized // x quantized for Q8_0 matrices
	aq         quantized // ao quantized
	hq         quantized
	sampler    *Sampler

	// The step this stream asked for, and its outcome (see Engine.step):
	// token at pos, or with prompt set a chunk of the prompt from pos on,
	// the chunk's earlier tokens run by views of this State.
	token, pos int
	prompt     []int
	sample     bool        // sample the next token from this step's logits
	next       int         // the sampled token
	done       atomic.Bool // the step ran
	parker                 // the stream, waiting for its step
	views      []*State    // one per earlier token of a prompt chunk, made on first use
}

// quantized is an activation vector in the forms its matrices read: Q8_0
// (groups of 32, one scale each), with each group's sum (scale·Σq, the
// group's sum of values as quantized) for the formats whose weights carry
// an offset (Q4_1's and Q5_K's mins); and ggml's Q8_K (blocks of 256, one
// scale each, and each 16 codes' sum) for the K-quants whose kernels sum a
// whole block in integers (Q4_K, Q6_K), as ggml's do.
type quantized struct {
	q       []int8
	scales  []float32
	sums    []float32
	isums   []int32 // Σq of each group, with sums
	kq      []int8
	kscales []float32
	ksums   []int16
	// q and kq spread for the portable kernels' word products, and q
	// split in two for the portable Q8_0 kernel's (swar.go)
	spread, kspread, split []uint64
	// the values rounded to bfloat16, for a BF16 file's matrices: as
	// floats, and in pairs for VDPBF16PS (roundToBFloat16); made at the
	// first product that reads them, so no other model pays for them
	bf16      []float32
	bf16Pairs []uint32
}

func newQuantized(n int) quantized {
	groups := (n + GroupSize - 1) / GroupSize
	return quantized{q: make([]int8, n), scales: make([]float32, groups), sums: make([]float32, groups), isums: make([]int32, groups),
		kq: make([]int8, n), kscales: make([]float32, n/superBlock), ksums: make([]int16, n/16),
		spread: make([]uint64, n/4), kspread: make([]uint64, n/4), split: make([]uint64, n/2)}
}

// activationForms says which forms of its input a product's matrices read.
type activationForms struct{ q8_0, sums, q8K, spread, kspread, split, bf16 bool }

// allForms is every form, for tests that multiply every format.
var allForms = activationForms{q8_0: true, sums: true, q8K: true, spread: true, kspread: true, split: true, bf16: true}

func formsOf(ms []*Matrix) activationForms {
	var f activationForms
	for _, m := range ms {
		spec := formats[m.format]
		f.q8K = f.q8K || spec.q8K
		f.q8_0 = f.q8_0 || m.Quantized() && !spec.q8K
		f.sums = f.sums || spec.sums
		f.split = f.split || m.format == formatQ8_0 && portableQ8
		f.bf16 = f.bf16 || m.bf16Products
		if m.format.storedAsBlocks() && m.tiles == nil { // the portable kernels
			f.spread = f.spread || !spec.q8K
			f.kspread = f.kspread || spec.q8K
		}
		f = f.with(tileForms(m))
		// the split products take 128·Σq off
		f.sums = f.sums || f.split
	}
	return f
}

// with is f with g's forms too.
func (f activationForms) with(g activationForms) activationForms {
	return activationForms{q8_0: f.q8_0 || g.q8_0, sums: f.sums || g.sums, q8K: f.q8K || g.q8K,
		spread: f.spread || g.spread, kspread: f.kspread || g.kspread, split: f.split || g.split, bf16: f.bf16 || g.bf16}
}

// quantize sets the forms of v (len(v) ≤ the vector's size) that forms
// asks for.
func (x *quantized) quantize(v []float32, forms activationForms) {
	if forms.q8_0 || forms.sums {
		quantizeActivations(x.q[:len(v)], x.scales[:len(v)/GroupSize], v)
	}
	if forms.sums {
		x.sumGroups(len(v) / GroupSize)
	}
	if forms.q8K {
		blocks := len(v) / superBlock
		quantizeQ8K(x.kq[:len(v)], x.kscales[:blocks], x.ksums[:blocks*16], v)
	}
	if forms.spread {
		spreadOctets(x.spread, x.q[:len(v)])
	}
	if forms.split {
		spreadSplit(x.split, x.q[:len(v)])
	}
	if forms.kspread {
		spreadOctets(x.kspread, x.kq[:len(v)])
	}
	if forms.bf16 {
		if x.bf16 == nil {
			x.bf16, x.bf16Pairs = make([]float32, len(x.q)), make([]uint32, (len(x.q)+1)/2)
		}
		roundToBFloat16(x.bf16[:len(v)], x.bf16Pairs[:(len(v)+1)/2], v)
	}
}

// bfloat16Bits is v rounded to the nearest bfloat16, ties to even, a NaN
// kept a quiet NaN: ggml's GGML_FP32_TO_BF16.
func bfloat16Bits(v float32) uint16 {
	u := math.Float32bits(v)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 64
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}

// sumGroups sets sums for the first groups groups.
func (x *quantized) sumGroups(groups int) {
	for g := range groups {
		var s int32
		for _, v := range x.q[g*GroupSize : (g+1)*GroupSize] {
			s += int32(v)
		}
		x.sums[g], x.isums[g] = float32(s)*x.scales[g], s
	}
}

// NewState allocates everything one stream's forward passes need, up
// front (but a BF16 file's rounded activations, made at its first
// pass), with the cache w's weights keep (cacheFormat).
func NewState(w *Weights) *State { return newState(w, cacheFormat(w)) }

// newState is NewState with a cache of the format named.
func newState(w *Weights, cache string) *State {
	s := w.Shape
	seq := s.SeqLen
	// The cache is sized for the whole context; only the pages of the
	// positions a stream reaches are written (newKVCache).
	return &State{w: w, cache: newKVCache(s.Layers*seq*s.KVDim(), cache), widened: make([]float32, s.QDim()),
		k: make([]float32, s.KVDim()), v: make([]float32, s.KVDim()),
		x: make([]float32, s.Dim), xb: make([]float32, s.Dim), xb2: make([]float32, s.Dim),
		q: make([]float32, s.QDim()), ao: make([]float32, s.QDim()),
		hb: make([]float32, s.HiddenDim), hb2: make([]float32, s.HiddenDim),
		attStride: roundUp8(seq), att: make([]float32, s.Heads*roundUp8(seq)), logits: make([]float32, s.Vocab),
		xq: newQuantized(s.Dim), aq: newQuantized(s.QDim()), hq: newQuantized(s.HiddenDim), sampler: NewSampler(s.Vocab), parker: newParker()}
}

// view is a State for one prompt token of st's chunk: activations of its
// own, st's KV cache, no logits (a chunk's earlier tokens need none).
func (st *State) view() *State {
	s := st.w.Shape
	return &State{w: st.w, cache: st.cache, widened: make([]float32, len(st.widened)),
		k: make([]float32, s.KVDim()), v: make([]float32, s.KVDim()),
		x: make([]float32, s.Dim), xb: make([]float32, s.Dim), xb2: make([]float32, s.Dim),
		q: make([]float32, s.QDim()), ao: make([]float32, s.QDim()),
		hb: make([]float32, s.HiddenDim), hb2: make([]float32, s.HiddenDim),
		attStride: st.attStride, att: make([]float32, len(st.att)),
		xq: newQuantized(s.Dim), aq: newQuantized(s.QDim()), hq: newQuantized(s.HiddenDim)}
}

// vecSel names one of a State's activation vectors, so one batched job
// can read (or write) the same vector of every stream.
type vecSel uint8

const (
	selX vecSel = iota
	selXB
	selXB2
	selQ
	selAO
	selK
	selV
	selHB
	selHB2
	selLogits
)

func (st *State) vec(v vecSel) []float32 {
	switch v {
	case selX:
		return st.x
	case selXB:
		return st.xb
	case selXB2:
		return st.xb2
	case selQ:
		return st.q
	case selAO:
		return st.ao
	case selK:
		return st.k
	case selV:
		return st.v
	case selHB:
		return st.hb
	case selHB2:
		return st.hb2
	}
	return st.logits
}

// quant is the quantized copy of input vector v for Q8_0 products.
func (st *State) quant(v vecSel) *quantized {
	switch v {
	case selHB:
		return &st.hq
	case selAO:
		return &st.aq
	}
	return &st.xq
}

// rotary holds the rotary tables, computed once per engine instead of per
// token: pair i of a head turns at base^(-2i/headSize), base 10000 as in
// llama2.c unless the model names its own, its angle scaled by a linear
// rope scale and divided by the model's frequency factor (Llama 3.1's
// rope_freqs), as ggml's rope computes them.
type rotary struct {
	cos, sin []float32 // seq × headSize/2
	neox     bool      // pair i with i+headSize/2, not 2i with 2i+1
}

// newRotary makes the tables for rotary base (0 means 10000) and linear
// scale (0 means 1).
func newRotary(w *Weights, base, scale float64) rotary {
	seq, hs := w.Shape.SeqLen, w.Shape.HeadSize()
	if base == 0 {
		base = 10000
	}
	if scale == 0 {
		scale = 1
	}
	r := rotary{cos: make([]float32, seq*hs/2), sin: make([]float32, seq*hs/2), neox: w.RopeNeox}
	for pos := range seq {
		for i := 0; i < hs/2; i++ {
			angle := scale * float64(pos) / math.Pow(base, float64(2*i)/float64(hs))
			if w.RopeFactors != nil {
				angle /= float64(w.RopeFactors[i])
			}
			r.cos[pos*hs/2+i] = float32(math.Cos(angle))
			r.sin[pos*hs/2+i] = float32(math.Sin(angle))
		}
	}
	return r
}

// rotate turns one head's vector v by position pos's angles.
func (r *rotary) rotate(v []float32, pos int) {
	half := len(v) / 2
	cos, sin := r.cos[pos*half:(pos+1)*half], r.sin[pos*half:(pos+1)*half]
	if !r.neox {
		rope(v, cos, sin)
		return
	}
	for i := range half {
		c, s := cos[i], sin[i]
		a, b := v[i], v[i+half]
		v[i] = a*c - b*s
		v[i+half] = a*s + b*c
	}
}

// pass is one forward pass over a batch of streams, each at its own token
// and position. Every weight matrix is applied to all the streams' vectors
// in one job, which reads each row once for the whole batch: at one
// stream it is a matrix-vector product, at several a small matrix-matrix
// one, which is what lets a decode step serve N streams for about the
// memory traffic of one.
//
// A prompt's tokens run the same way: a chunk of them is one pass, each
// token a view of its stream's State at its own position, so the prompt is
// multiplied as a matrix (batched prefill) rather than token by token.
// Every token's key and value are stored before any attends, so each
// attends causally to the positions up to its own.
type pass struct {
	states []*State
	// streams are states' tokens stream by stream: a prompt chunk's
	// views and its stream's State, whose cache they share.
	streams [][]*State
	// last are the states whose logits the pass computes: all but the
	// views of prompt chunks, whose next token nobody asked for.
	last   []*State
	step   stepJob
	quant  quantJob
	mat    matJob
	attn   attnJob
	sample sampleJob
}

// add puts st's step into the pass: its views for a prompt chunk's
// earlier tokens, then st at the chunk's last position.
func (p *pass) add(st *State) {
	first := len(p.states)
	if n := len(st.prompt); n > 0 {
		for len(st.views) < n-1 {
			st.views = append(st.views, st.view())
		}
		for i, tok := range st.prompt[:n-1] {
			v := st.views[i]
			v.token, v.pos = tok, st.pos+i
			p.states = append(p.states, v)
		}
		st.token, st.pos = st.prompt[n-1], st.pos+n-1
	}
	p.states = append(p.states, st)
	p.last = append(p.last, st)
	p.streams = append(p.streams, p.states[first:len(p.states):len(p.states)])
}

// reset empties the pass for the next, keeping its room.
func (p *pass) reset() {
	p.states, p.last, p.streams = p.states[:0], p.last[:0], p.streams[:0]
}

// forward runs each state's token at its position through the model,
// leaving the logits in its State, then samples where a state asked.
func (e *Engine) forward(p *pass) {
	w, s := e.Model.Weights, e.Model.Weights.Shape
	for _, st := range p.states {
		w.embed(st.x, st.token, e.embedScratch)
	}
	for l := range w.Layers {
		layer := &w.Layers[l]
		e.eachState(p, p.states, l, stepAttnNorm)
		e.multiply(p, p.states, [3]*Matrix{layer.WQ, layer.WK, layer.WV}, 3, false, selXB, [3]vecSel{selQ, selK, selV})
		e.eachState(p, p.states, l, stepStoreKV)
		p.attn = newAttnJob(p.streams, l, s, e.pool.Threads())
		e.pool.run(&p.attn)
		e.multiply(p, p.states, [3]*Matrix{layer.WO}, 1, false, selAO, [3]vecSel{selXB2})
		e.eachState(p, p.states, l, stepFFNNorm)
		e.multiply(p, p.states, [3]*Matrix{layer.W1, layer.W3}, 2, true, selXB, [3]vecSel{selHB, selHB2})
		e.multiply(p, p.states, [3]*Matrix{layer.W2}, 1, false, selHB, [3]vecSel{selXB})
		e.eachState(p, p.states, l, stepResidual)
	}
	// Only the steps' last tokens go on: a prompt chunk's earlier ones
	// needed no logits (and the classifier is the largest matrix).
	e.eachState(p, p.last, 0, stepFinalNorm)
	e.multiply(p, p.last, [3]*Matrix{w.Classifier}, 1, false, selX, [3]vecSel{selLogits})
	p.sample = sampleJob{states: p.last, vocab: s.Vocab}
	e.pool.run(&p.sample)
}

// stateStep is one of the forward pass's steps between its matrix
// products, each stream's own.
type stateStep int

const (
	stepAttnNorm  stateStep = iota // the attention's input norm
	stepStoreKV                    // biases, head norms, RoPE, then the key and value into the cache
	stepFFNNorm                    // the attention's residual, the feed-forward's input norm
	stepResidual                   // the feed-forward's residual (after its output norm)
	stepFinalNorm                  // the classifier's input norm
)

// stepJob runs one stateStep for every stream of a pass: a batched
// prefill's 64 streams on the calling thread alone left the other threads
// waiting through about a twentieth of a one-thread pass.
type stepJob struct {
	e      *Engine
	states []*State
	layer  int
	step   stateStep
}

func (j *stepJob) parts() int { return len(j.states) }

// flops counts about what a norm and a residual cost a stream.
func (j *stepJob) flops() int { return 8 * j.e.Model.Weights.Shape.Dim * len(j.states) }

func (j *stepJob) do(lo, hi int) {
	w := j.e.Model.Weights
	for _, st := range j.states[lo:hi] {
		switch j.step {
		case stepAttnNorm:
			rmsNorm(st.xb, st.x, w.Layers[j.layer].AttnNorm, w.NormEps)
		case stepStoreKV:
			j.e.storeKV(st, j.layer)
		case stepFFNNorm:
			layer := &w.Layers[j.layer]
			if layer.PostAttnNorm != nil {
				rmsNorm(st.xb2, st.xb2, layer.PostAttnNorm, w.NormEps)
			}
			add(st.x, st.xb2)
			rmsNorm(st.xb, st.x, layer.FFNNorm, w.NormEps)
		case stepResidual:
			if post := w.Layers[j.layer].PostFFNNorm; post != nil {
				rmsNorm(st.xb, st.xb, post, w.NormEps)
			}
			add(st.x, st.xb)
		case stepFinalNorm:
			rmsNorm(st.x, st.x, w.FinalNorm, w.NormEps)
		}
	}
}

// eachState runs step for every one of states, on the pool.
func (e *Engine) eachState(p *pass, states []*State, layer int, step stateStep) {
	p.step = stepJob{e: e, states: states, layer: layer, step: step}
	e.pool.run(&p.step)
}

// storeKV adds the projections' biases, normalizes each head of the
// query and key where the architecture does, rotates them, and appends
// key and value to the stream's cache of layer l.
func (e *Engine) storeKV(st *State, l int) {
	w := e.Model.Weights
	s, layer := w.Shape, &w.Layers[l]
	hs, seq := s.HeadSize(), s.SeqLen
	if layer.QBias != nil {
		add(st.q, layer.QBias)
		add(st.k, layer.KBias)
		add(st.v, layer.VBias)
	}
	rope := &e.rope
	if layer.Sliding {
		rope = &e.slidingRope
	}
	for h := 0; h < s.Heads; h++ {
		head := st.q[h*hs : (h+1)*hs]
		if layer.QNorm != nil {
			rmsNorm(head, head, layer.QNorm, w.NormEps)
		}
		rope.rotate(head, st.pos)
	}
	for h := 0; h < s.KVHeads; h++ {
		head := st.k[h*hs : (h+1)*hs]
		if layer.KNorm != nil {
			rmsNorm(head, head, layer.KNorm, w.NormEps)
		}
		rope.rotate(head, st.pos)
		st.cache.store(((l*s.KVHeads+h)*seq+st.pos)*hs, st.k[h*hs:(h+1)*hs], st.v[h*hs:(h+1)*hs])
	}
}

// multiply applies up to three matrices to input vector in of each of
// states (the pass's buffers do the work), into the outputs out (see
// matJob), quantizing each input once when the matrices are quantized.
func (e *Engine) multiply(p *pass, states []*State, ms [3]*Matrix, n int, gated bool, in vecSel, out [3]vecSel) {
	j := &p.mat
	j.m, j.n, j.gated, j.gelu = ms, n, gated, gated && e.Model.Weights.GELU
	j.softcap = 0
	if out[0] == selLogits {
		j.softcap = e.Model.Weights.LogitSoftcap
	}
	j.x, j.xq, j.xb = j.x[:0], j.xq[:0], j.xb[:0]
	for i := range n {
		j.out[i] = j.out[i][:0]
	}
	// A file may mix formats (Q4_K_M's attn_v is Q6_K beside Q4_K q and
	// k), so the input is quantized in every form the job's matrices read.
	q := &p.quant
	q.states, q.in, q.forms, q.cols = states, in, formsOf(ms[:n]), ms[0].Cols
	if q.forms != (activationForms{}) { // f32 matrices read the floats
		e.pool.run(q)
	}
	for _, st := range states {
		j.x, j.xq = append(j.x, st.vec(in)), append(j.xq, st.quant(in))
		if q.forms.bf16 {
			j.xb = append(j.xb, st.quant(in).bf16[:q.cols])
		}
		for i := range n {
			j.out[i] = append(j.out[i], st.vec(out[i]))
		}
	}
	e.pool.run(j)
}

// attendHeads computes the attention output of heads [h0, h1), which
// share one kv head, for each of tokens, states of one stream (a prompt
// chunk's, or one decoding token) each at its own position, into their
// ao: scores against every cached key up to the token's position (a
// sliding layer's last Window keys), softmax, then the weighted sum of
// values. Parts of a pass hold disjoint heads or tokens, which write
// disjoint parts of att and ao, so they run in parallel (attnJob).
//
// The cache is laid out head by head, so a kv head's keys and values are
// two sequential streams. With llama2.c's position-major layout each
// position was a short row at a stride of the whole kv width, and on
// stories110M attention took 16% of a two-thread decode step for 2% of
// its arithmetic. The tokens (a few: attnQueryBytes) and heads read
// those streams a block of attnBlockBytes at a time, every token's every
// head in turn, so each block comes from memory once for them all and
// from L1 for the rest;
// head by head and token by token, each streamed the whole cache again,
// and a 2048-token prompt of Qwen2.5-0.5B (seven heads a kv head) spent
// 29% of a one-thread pass in attention (BenchmarkGGUFFile/pp2048). Each
// head's sums are the same sums in the same order either way
// (TestGroupedAttentionIsHeadByHeadBitForBit).
func attendHeads(tokens []*State, l, h0, h1 int) {
	w := tokens[0].w
	s, cache := w.Shape, &tokens[0].cache
	seq, hs := s.SeqLen, s.HeadSize()
	headAt := (l*s.KVHeads + h0/(s.Heads/s.KVHeads)) * seq * hs
	scale := float32(1 / math.Sqrt(float64(hs)))
	if w.AttnScale != 0 {
		scale = 1
	}
	// A token attends to positions [from, end): a sliding layer's window
	// starts at from. Its scores start at the whole vector holding from
	// (start), the positions before from in it -Inf, and are padded to
	// whole vectors with -Inf too, whose weight is 0, so softmax never
	// has a ragged tail.
	span := func(st *State) (start, from, end int) {
		if w.Layers[l].Sliding {
			from = max(0, st.pos+1-w.Window)
		}
		return from &^ 7, from, st.pos + 1
	}
	first, last := seq, 0 // the positions any token attends to
	for _, st := range tokens {
		start, _, end := span(st)
		first, last = min(first, start), max(last, end)
		for h := h0; h < h1; h++ {
			q := st.q[h*hs : (h+1)*hs]
			if qs := w.AttnScale; qs != 0 {
				// gemma3's graph scales the query, not the scores: where
				// the cache is halves, the query is rounded to halves
				// after it is scaled.
				for i := range q {
					q[i] *= qs
				}
			}
			cache.roundAsStored(q)
		}
	}
	block := cache.blockRows(hs)
	for lo := first; lo < last; lo += block {
		hi := min(lo+block, last)
		for _, st := range tokens {
			_, from, end := span(st)
			if a, b := max(lo, from), min(hi, end); a < b {
				for h := h0; h < h1; h++ {
					cache.scores(st.headAtt(h), st.q[h*hs:(h+1)*hs], headAt, a, b, hs, st.widened[h*hs:(h+1)*hs])
				}
			}
		}
	}
	for _, st := range tokens {
		start, from, end := span(st)
		for h := h0; h < h1; h++ {
			att := st.headAtt(h)
			for t := start; t < from; t++ {
				att[t] = float32(math.Inf(-1))
			}
			for t := end; t < len(att); t++ {
				att[t] = float32(math.Inf(-1))
			}
			softmax(att[start:], scale)
			cache.roundAsStored(att[start:end])
			clear(st.ao[h*hs : (h+1)*hs])
		}
	}
	for lo := first; lo < last; lo += block {
		hi := min(lo+block, last)
		for _, st := range tokens {
			start, _, end := span(st)
			if a, b := max(lo, start), min(hi, end); a < b {
				for h := h0; h < h1; h++ {
					cache.mix(st.ao[h*hs:(h+1)*hs], st.headAtt(h)[a:b], headAt, a, hs, st.widened[h*hs:(h+1)*hs])
				}
			}
		}
	}
}

// headAtt is head h's scores at st's position: positions 0 to pos,
// padded to a whole vector.
func (st *State) headAtt(h int) []float32 {
	return st.att[h*st.attStride : h*st.attStride+roundUp8(st.pos+1)]
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

// softcap bounds logits to ±c as c·tanh(logit/c), in ggml's order (scale,
// tanh, scale).
func softcap(logits []float32, c float32) {
	for i, v := range logits {
		logits[i] = c * float32(math.Tanh(float64(v*(1/c))))
	}
}

// geGLUGeneric sets hb = gelu(hb) ⊙ hb2, gelu as ggml computes it on the
// CPU: the tanh approximation, looked up by the input rounded to a half
// and stored as a half (geluTable), exact beyond ±10. geGLU is its
// kernel: every element is a lookup, so the vector kernels give the same
// numbers.
func geGLUGeneric(hb, hb2 []float32) {
	table := geluTable()
	hb2 = hb2[:len(hb)]
	for i, x := range hb {
		switch {
		case x <= -10:
			hb[i] = 0
		case x >= 10:
			hb[i] = x * hb2[i]
		default:
			hb[i] = table[f32ToF16(x)] * hb2[i]
		}
	}
}

// geluTable is ggml's GELU of every half, rounded to a half; made on
// first use, as only gemma models need it.
var geluTable = sync.OnceValue(func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for h := range t {
		x := f16ToF32(uint16(h))
		g := 0.5 * x * (1 + float32(math.Tanh(float64(0.7978845608028654*x*(1+0.044715*x*x)))))
		if math.IsNaN(float64(g)) || math.Abs(float64(g)) >= 65520 {
			t[h] = g
			continue
		}
		t[h] = f16ToF32(f32ToF16(g))
	}
	return &t
})

func add(x, y []float32) {
	for i := range x {
		x[i] += y[i]
	}
}
