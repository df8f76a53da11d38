package builtin

import (
	"runtime"
	"sync/atomic"
	"time"
)

// minParallelFlops is the matvec size below which fanning out costs more
// than it saves.
const minParallelFlops = 1 << 16

// spinFor is how long an idle worker (or the caller waiting for workers)
// polls before it parks. A forward pass hands work out dozens of times per
// token, a few microseconds apart, and waking a parked thread costs more
// than a mid-size matvec: BenchmarkPoolHandOff (2048×768 Q8_0) measured
// 74 µs on one thread after idling, 164 µs on two with the worker parked,
// 37 µs with it polling. The poll is bounded: on a loaded machine a
// thread parks after this long instead of spinning against the process
// that holds the core (OpenMP's unbounded spinning made llama2.c collapse
// 10-100x under load here).
const spinFor = 50 * time.Microsecond

// Pool runs matrix-vector products on a fixed set of goroutines.
type Pool struct {
	threads int
	workers []*worker
	pending atomic.Int32 // workers handed the job and not finished
	waiter  parker       // the caller, waiting for pending to reach 0
	claimed atomic.Int64 // the job's parts claimed so far (see work)
}

// parker is a goroutine that polls a condition, then sleeps on wake. The
// protocol has no lost wake-ups: the sleeper sets parked, then re-checks
// its condition; the waker changes the condition, then checks parked. A
// token left in wake by a race is harmless, the sleeper re-checks.
//
// Both sides order their write before their read with a read-modify-write
// of parked (Swap, CompareAndSwap), not a Store then a Load. Go's atomics
// promise that order either way, but Linux arm64 binaries under qemu on an
// x86 host (CI's portable tests) let a Store's following Load pass it;
// each side then read the other's old value, and the pool's caller and
// worker slept for good (seen hanging TestConcurrentStreamsMatchSequential
// and TestF32VersusQ8RunsAnywhereAndNamesTheFasterDType). An RMW is a full
// fence on every host, and costs nothing next to a park.
type parker struct {
	parked atomic.Bool
	wake   chan struct{}
}

func newParker() parker { return parker{wake: make(chan struct{}, 1)} }

// await returns once ready() holds.
func (p *parker) await(ready func() bool) {
	deadline := time.Now().Add(spinFor)
	for i := 0; !ready(); i++ {
		if i%64 != 63 || time.Now().Before(deadline) {
			runtime.Gosched()
			continue
		}
		p.parked.Swap(true)
		if !ready() {
			<-p.wake
		}
		p.parked.Store(false)
		deadline = time.Now().Add(spinFor)
	}
}

// notify wakes the goroutine if it sleeps; call it after changing what it
// waits for.
func (p *parker) notify() {
	if p.parked.CompareAndSwap(true, true) { // parked, read as an RMW (see parker)
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

type worker struct {
	parker
	seq    atomic.Uint64 // bumped for each new job
	share  share
	closed atomic.Bool
}

// job is work that splits into parts computed independently: rows of a
// matrix product, heads of attention.
type job interface {
	parts() int
	// flops estimates the work, to decide whether fanning out pays.
	flops() int
	do(lo, hi int)
}

// grained is a job whose chunks should be multiples of grain parts (a
// matrix product's tiles).
type grained interface{ grain() int }

// share is a job as the threads take it: chunks of chunk parts, claimed
// one at a time until all total are.
type share struct {
	job          job
	total, chunk int
}

// NewPool starts threads-1 workers; the caller's goroutine is the first.
func NewPool(threads int) *Pool {
	p := &Pool{threads: max(threads, 1), waiter: newParker()}
	for range p.threads - 1 {
		w := &worker{parker: newParker()}
		p.workers = append(p.workers, w)
		go p.serve(w)
	}
	return p
}

func (p *Pool) serve(w *worker) {
	var seen uint64
	for {
		w.await(func() bool { return w.seq.Load() != seen || w.closed.Load() })
		if w.closed.Load() {
			return
		}
		seen = w.seq.Load()
		p.work(w.share)
		if p.pending.Add(-1) == 0 {
			p.waiter.notify()
		}
	}
}

// Threads is the pool's parallelism.
func (p *Pool) Threads() int { return p.threads }

// Close stops the workers.
func (p *Pool) Close() {
	for _, w := range p.workers {
		w.closed.Store(true)
		w.notify()
	}
	p.workers = nil
}

// chunksPerThread is how many chunks a job is cut into per thread. The
// threads claim chunks as they finish the last, so a thread that runs
// slower (a core the host lends elsewhere for a while, on a shared
// machine) takes fewer: with one contiguous span each, every job waited
// for the slower thread, and a batched Q8_0 product on two threads ran
// 1.5× one thread's speed where two processes ran 1.8×; with chunks,
// BenchmarkPrefillProductThreads reads 1.8× (f32 2.0×).
const chunksPerThread = 8

// run computes job's parts, in chunks claimed by the workers and the
// caller (work).
func (p *Pool) run(job job) {
	total := job.parts()
	if len(p.workers) == 0 || total < 2 || job.flops() < minParallelFlops {
		job.do(0, total)
		return
	}
	grain := 1
	if g, ok := job.(grained); ok {
		grain = g.grain()
	}
	chunk := (total + chunksPerThread*p.threads - 1) / (chunksPerThread * p.threads)
	chunk = (chunk + grain - 1) / grain * grain
	// Only workers with a chunk to do are woken: a job of fewer parts
	// than threads (one stream's sampling) leaves the rest asleep.
	helpers := min(len(p.workers), (total+chunk-1)/chunk-1)
	s := share{job, total, chunk}
	p.claimed.Store(0)
	p.pending.Store(int32(helpers))
	for _, w := range p.workers[:helpers] {
		w.share = s
		w.seq.Add(1) // publishes share
		w.notify()
	}
	p.work(s)
	p.waiter.await(func() bool { return p.pending.Load() == 0 })
}

// work computes chunks of s until none is left unclaimed.
func (p *Pool) work(s share) {
	for {
		lo := int(p.claimed.Add(int64(s.chunk))) - s.chunk
		if lo >= s.total {
			return
		}
		s.job.do(lo, min(lo+s.chunk, s.total))
	}
}

// matJob is up to three matrices applied to the same input vectors (Q,
// K and V), run as one parallel job so a layer pays one fan-out per input,
// not one per matrix. With gated set it is the feed-forward's gate and up
// matrices instead: a part is a row of both, and the SwiGLU (GeGLU with
// gelu) of that row is applied by the same thread, so it runs in parallel
// too.
//
// It multiplies every stream of a batch: x[b] (or xq[b]) into out[i][b].
// With several streams the rows go in blocks small enough to stay in
// cache while each stream's vector passes over them, so the weights are
// read from memory once per pass, not once per stream.
type matJob struct {
	m     [3]*Matrix
	n     int
	gated bool
	gelu  bool
	// softcap, where not 0, caps each output row as its block is done
	// (the classifier of an architecture that caps its logits), so the
	// vocabulary's tanh runs on every thread, not after the job on one.
	softcap float32
	x       [][]float32
	xq      []*quantized
	xb      [][]float32 // each x rounded to bfloat16, where a matrix is BF16
	out     [3][][]float32
}

func (j *matJob) parts() int {
	if j.gated {
		return j.m[0].Rows
	}
	t := 0
	for i := range j.n {
		t += j.m[i].Rows
	}
	return t
}

// grain keeps chunks to whole tiles, or whole groups of them for f32.
func (j *matJob) grain() int { return tileGrain(j.m[0]) }

// tileGrain is how many rows a tiled matrix's multi-vector kernel takes
// at once: a tile, or a group of f32TileGroup tiles for f32, so that a
// span of rows that cut a group would not have its kernel compute tiles
// it throws away. Blocks of a 2048-wide f32 matrix were once three tiles
// (wideRowBlockBytes) against a kernel of two: one tile of every four
// computed was thrown away. Half tiles in groups are read a whole group
// (halfTileGroup tiles) at a time by the decode kernel and the widening
// prompt kernels, and the others' groups of tiles divide it.
func tileGrain(m *Matrix) int {
	if m.groupedHalves {
		return halfGroupRows
	}
	if m.format == formatF32 {
		return f32TileGroup * tileRows
	}
	return tileRows
}

func (j *matJob) flops() int {
	per := j.parts() * j.m[0].Cols
	if j.gated {
		per *= 2
	}
	return per * len(j.x)
}

// do computes output rows [lo, hi) of the stacked matrices, or for a
// gated job rows [lo, hi) of gate and up and their SwiGLU.
func (j *matJob) do(lo, hi int) {
	block := j.block(j.m[0], hi-lo)
	for a := lo; a < hi; a += block {
		b := min(a+block, hi)
		ahead := min(b+block, hi) // the next block, read ahead where a kernel can
		if j.gated {
			j.rows(0, a, b, ahead)
			j.rows(1, a, b, ahead)
			for s := range j.x {
				if j.gelu {
					geGLU(j.out[0][s][a:b], j.out[1][s][a:b])
				} else {
					swiGLU(j.out[0][s][a:b], j.out[1][s][a:b])
				}
			}
			continue
		}
		base := 0
		for i := range j.n {
			m := j.m[i]
			if ma, mb := max(a-base, 0), min(b-base, m.Rows); ma < mb {
				j.rows(i, ma, mb, min(ahead-base, m.Rows))
			}
			base += m.Rows
		}
		if j.softcap != 0 { // one matrix: the classifier
			for s := range j.x {
				softcap(j.out[0][s][a:b], j.softcap)
			}
		}
	}
}

// rowBlockBytes is how much of an untiled matrix (the portable kernels',
// on a CPU without AVX2) one block of rows may take, so the block stays
// in L1 while every stream's vector passes over it. The tile kernels
// (f32's among them) gain from blocks of wideRowBlockBytes, in L2: each
// stream's vector is loaded once for more rows, and a block is started
// from memory less often. By turns, stories110M pp64 with 192 KiB blocks
// against 32 KiB ran 6% and 12% faster in f32 on one and two threads, and
// 6–15% in Q4_0 and Q4_K_M (BenchmarkGGUFFile, medians of four to eight
// rounds).
const (
	rowBlockBytes     = 32 << 10
	wideRowBlockBytes = 192 << 10
)

// block is how many rows to take at a time out of span rows: all of them
// for one stream, else as many as fit its format's block bytes.
func (j *matJob) block(m *Matrix, span int) int {
	if len(j.x) == 1 {
		return max(span, 1)
	}
	if m.tiles != nil { // whole tiles, or groups of them
		g := tileGrain(m)
		return max(g, wideRowBlockBytes/m.rowBytes()/g*g)
	}
	return max(1, rowBlockBytes/m.rowBytes())
}

// rows computes rows [a, b) of matrix i for every stream; rows [b,
// ahead) come next.
func (j *matJob) rows(i, a, b, ahead int) {
	m := j.m[i]
	switch {
	case m.bf16Products:
		matMatBF16(j.out[i], m, j.xb, j.xq, a, b, ahead)
		return
	case m.format == formatF32:
		matMatF32(j.out[i], m, j.x, a, b, ahead)
		return
	case m.tiles != nil:
		matMatTiles(j.out[i], m, j.xq, a, b)
		return
	case m.format == formatQ8_0:
		matMatQ8(j.out[i], m, j.xq, a, b)
		return
	}
	for s := range j.x {
		matVecBlocks(j.out[i][s], m, j.xq[s], a, b)
	}
}

// attnJob is one layer's attention for every stream of a pass, split by
// stream, by the groups of heads that share a kv head, which attendHeads
// takes together, and by runs of a few of a stream's tokens (a prompt
// chunk's), whose queries stay in L1 together (attnQueryBytes). Every
// stream has room for as many runs as the longest has; a shorter one's
// extra parts are empty. Where a pass has fewer runs' kv heads than
// threads (one decoding stream of a model with few kv heads), each group
// is cut into as many parts as it takes for every thread to have one.
type attnJob struct {
	streams [][]*State // each stream's tokens (pass.streams)
	layer   int
	kvHeads int
	group   int // heads a kv head
	cuts    int // parts a group is cut into
	run     int // tokens a run
	runs    int // runs a stream
}

func newAttnJob(streams [][]*State, layer int, s Shape, threads int) attnJob {
	j := attnJob{streams: streams, layer: layer, kvHeads: s.KVHeads, group: s.Heads / s.KVHeads}
	j.run = max(1, attnQueryBytes/(j.group*s.HeadSize()*4))
	for _, tokens := range streams {
		j.runs = max(j.runs, (len(tokens)+j.run-1)/j.run)
	}
	units := len(streams) * j.runs * j.kvHeads
	j.cuts = min(j.group, (threads+units-1)/units)
	return j
}

func (j *attnJob) parts() int { return len(j.streams) * j.runs * j.kvHeads * j.cuts }

func (j *attnJob) flops() int {
	f := 0
	for _, tokens := range j.streams {
		for _, st := range tokens {
			f += 4 * st.w.Shape.Dim * (st.pos + 1)
		}
	}
	return f
}

func (j *attnJob) do(lo, hi int) {
	for p := lo; p < hi; p++ {
		if tokens, h0, h1 := j.part(p); len(tokens) > 0 {
			attendHeads(tokens, j.layer, h0, h1)
		}
	}
}

// part is part p's tokens (a run of one stream's; none where the stream
// is shorter than the longest) and heads [h0, h1), all of one kv head.
func (j *attnJob) part(p int) (tokens []*State, h0, h1 int) {
	// A kv head's runs come one after another, so the chunks of parts a
	// thread takes read its cache while it is still in L2.
	cut, run := p%j.cuts, p/j.cuts%j.runs
	kv, stream := p/(j.cuts*j.runs)%j.kvHeads, p/(j.cuts*j.runs*j.kvHeads)
	all := j.streams[stream]
	first := kv * j.group
	return all[min(run*j.run, len(all)):min((run+1)*j.run, len(all))], first + cut*j.group/j.cuts, first + (cut+1)*j.group/j.cuts
}

// quantJob quantizes each stream's input to a matrix product in every
// form the product's matrices read. A batched prefill has a vector per
// prompt token, and quantizing them on the calling thread alone was 8%
// of a one-thread stories110M Q4_0 pp64, while the other threads waited.
type quantJob struct {
	states []*State
	in     vecSel
	forms  activationForms
	cols   int
}

func (j *quantJob) parts() int { return len(j.states) }

// flops counts 16 a value: quantizing one (BenchmarkQuantize, 0.27 ns)
// takes about as long as 16 of a batched product's.
func (j *quantJob) flops() int { return 16 * j.cols * len(j.states) }

func (j *quantJob) do(lo, hi int) {
	for _, st := range j.states[lo:hi] {
		st.quant(j.in).quantize(st.vec(j.in), j.forms)
	}
}

// sampleJob picks each stream's next token from its logits, where the
// stream asked for one; streams sample independently, so in parallel.
type sampleJob struct {
	states []*State
	vocab  int
}

func (j *sampleJob) parts() int { return len(j.states) }

// flops counts a softmax over the vocabulary per stream, about what a
// sampler with a temperature costs (greedy is cheaper).
func (j *sampleJob) flops() int { return 16 * j.vocab * len(j.states) }

func (j *sampleJob) do(lo, hi int) {
	for _, st := range j.states[lo:hi] {
		if st.sample {
			st.next = st.sampler.Sample(st.logits)
		}
	}
}
