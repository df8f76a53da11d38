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
	pending atomic.Int32 // spans handed out and not finished
	waiter  parker       // the caller, waiting for pending to reach 0
}

// parker is a goroutine that polls a condition, then sleeps on wake. The
// protocol has no lost wake-ups: the sleeper sets parked, then re-checks
// its condition; the waker changes the condition, then checks parked. A
// token left in wake by a race is harmless, the sleeper re-checks.
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
		p.parked.Store(true)
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
	if p.parked.Load() {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

type worker struct {
	parker
	seq    atomic.Uint64 // bumped for each new span
	span   span
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

type span struct {
	job    job
	lo, hi int
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
		w.span.job.do(w.span.lo, w.span.hi)
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

// run computes job's parts, split in contiguous spans across the workers.
func (p *Pool) run(job job) {
	total := job.parts()
	if len(p.workers) == 0 || job.flops() < minParallelFlops {
		job.do(0, total)
		return
	}
	n := len(p.workers) + 1
	per := (total + n - 1) / n
	p.pending.Store(int32(len(p.workers)))
	for i, w := range p.workers {
		lo := min((i+1)*per, total)
		w.span = span{job, lo, min(lo+per, total)}
		w.seq.Add(1) // publishes span
		w.notify()
	}
	job.do(0, min(per, total))
	p.waiter.await(func() bool { return p.pending.Load() == 0 })
}

// matJob is up to three matrices applied to the same input vector (Q, K
// and V), run as one parallel job so a layer pays one fan-out per input,
// not one per matrix. With gated set it is the feed-forward's gate and up
// matrices instead: a part is a row of both, and the SwiGLU of that row is
// applied by the same thread, so it runs in parallel too.
type matJob struct {
	m     [3]*Matrix
	out   [3][]float32
	n     int
	x     []float32
	xq    *quantized
	gated bool
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

func (j *matJob) flops() int {
	if j.gated {
		return 2 * j.m[0].Rows * j.m[0].Cols
	}
	return j.parts() * j.m[0].Cols
}

// do computes output rows [lo, hi) of the stacked matrices, or for a
// gated job rows [lo, hi) of gate and up and their SwiGLU.
func (j *matJob) do(lo, hi int) {
	if j.gated {
		j.rows(0, lo, hi)
		j.rows(1, lo, hi)
		swiGLU(j.out[0][lo:hi], j.out[1][lo:hi])
		return
	}
	base := 0
	for i := range j.n {
		m := j.m[i]
		a, b := max(lo-base, 0), min(hi-base, m.Rows)
		if a < b {
			j.rows(i, a, b)
		}
		base += m.Rows
	}
}

// rows computes rows [a, b) of matrix i.
func (j *matJob) rows(i, a, b int) {
	if j.m[i].Quantized() {
		matVecQ8(j.out[i], j.m[i], j.xq, a, b)
	} else {
		matVecF32(j.out[i], j.m[i], j.x, a, b)
	}
}

func (st *State) matVec(m *Matrix, out, x []float32, xq *quantized) {
	st.runJob(matJob{m: [3]*Matrix{m}, out: [3][]float32{out}, n: 1, x: x, xq: xq})
}

// gatedFFN sets hb = silu(gate·x) ⊙ (up·x).
func (st *State) gatedFFN(gate, up *Matrix, hb, hb2, x []float32, xq *quantized) {
	st.runJob(matJob{m: [3]*Matrix{gate, up}, out: [3][]float32{hb, hb2}, n: 2, x: x, xq: xq, gated: true})
}

func (st *State) matVec3(m0 *Matrix, out0 []float32, m1 *Matrix, out1 []float32, m2 *Matrix, out2 []float32, x []float32, xq *quantized) {
	st.runJob(matJob{m: [3]*Matrix{m0, m1, m2}, out: [3][]float32{out0, out1, out2}, n: 3, x: x, xq: xq})
}

// runJob quantizes the input once when the matrices are Q8_0, then runs.
func (st *State) runJob(job matJob) {
	if job.m[0].Quantized() {
		n := len(job.x)
		quantizeInto(job.xq.q[:n], job.xq.scales[:n/GroupSize], job.x)
	}
	st.job = job
	st.pool.run(&st.job)
}

// attnJob is one layer's attention at one position, split by head.
type attnJob struct {
	st         *State
	layer, pos int
}

func (j *attnJob) parts() int { return j.st.w.Shape.Heads }

func (j *attnJob) flops() int { return 4 * j.st.w.Shape.Dim * (j.pos + 1) }

func (j *attnJob) do(lo, hi int) {
	for h := lo; h < hi; h++ {
		j.st.attendHead(j.layer, j.pos, h)
	}
}
