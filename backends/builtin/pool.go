package builtin

import "sync"

// minParallelFlops is the matvec size below which fanning out costs more
// than it saves (a hand-off is about a microsecond).
const minParallelFlops = 1 << 16

// Pool runs matrix-vector products on a fixed set of goroutines. Idle
// workers park on a channel rather than spin: on a shared machine a
// spinning barrier collapses when another process holds a core, a parked
// hand-off degrades gently.
type Pool struct {
	threads int
	work    []chan span
	done    sync.WaitGroup
}

type span struct {
	job    *matJob
	lo, hi int
}

// NewPool starts threads-1 workers; the caller's goroutine is the first.
func NewPool(threads int) *Pool {
	p := &Pool{threads: max(threads, 1)}
	for range p.threads - 1 {
		ch := make(chan span)
		p.work = append(p.work, ch)
		go func() {
			for s := range ch {
				s.job.rows(s.lo, s.hi)
				p.done.Done()
			}
		}()
	}
	return p
}

// Threads is the pool's parallelism.
func (p *Pool) Threads() int { return p.threads }

// Close stops the workers.
func (p *Pool) Close() {
	for _, ch := range p.work {
		close(ch)
	}
	p.work = nil
}

// run computes job's rows, split in contiguous spans across the workers.
func (p *Pool) run(job *matJob) {
	total := job.totalRows()
	if len(p.work) == 0 || total*job.cols() < minParallelFlops {
		job.rows(0, total)
		return
	}
	n := len(p.work) + 1
	per := (total + n - 1) / n
	p.done.Add(n - 1)
	for i, ch := range p.work {
		lo := min((i+1)*per, total)
		ch <- span{job, lo, min(lo+per, total)}
	}
	job.rows(0, min(per, total))
	p.done.Wait()
}

// matJob is up to three matrices applied to the same input vector (Q, K
// and V; or gate and up), run as one parallel job so a layer pays one
// fan-out per input, not one per matrix.
type matJob struct {
	m   [3]*Matrix
	out [3][]float32
	n   int
	x   []float32
	xq  *quantized
}

func (j *matJob) totalRows() int {
	t := 0
	for i := range j.n {
		t += j.m[i].Rows
	}
	return t
}

func (j *matJob) cols() int { return j.m[0].Cols }

// rows computes output rows [lo, hi) of the stacked matrices.
func (j *matJob) rows(lo, hi int) {
	base := 0
	for i := range j.n {
		m := j.m[i]
		a, b := max(lo-base, 0), min(hi-base, m.Rows)
		if a < b {
			if m.Q8 != nil {
				matVecQ8(j.out[i], m, j.xq, a, b)
			} else {
				matVecF32(j.out[i], m, j.x, a, b)
			}
		}
		base += m.Rows
	}
}

func (st *State) matVec(m *Matrix, out, x []float32, xq *quantized) {
	st.runJob(matJob{m: [3]*Matrix{m}, out: [3][]float32{out}, n: 1, x: x, xq: xq})
}

func (st *State) matVec2(m0 *Matrix, out0 []float32, m1 *Matrix, out1 []float32, x []float32, xq *quantized) {
	st.runJob(matJob{m: [3]*Matrix{m0, m1}, out: [3][]float32{out0, out1}, n: 2, x: x, xq: xq})
}

func (st *State) matVec3(m0 *Matrix, out0 []float32, m1 *Matrix, out1 []float32, m2 *Matrix, out2 []float32, x []float32, xq *quantized) {
	st.runJob(matJob{m: [3]*Matrix{m0, m1, m2}, out: [3][]float32{out0, out1, out2}, n: 3, x: x, xq: xq})
}

// runJob quantizes the input once when the matrices are Q8_0, then runs.
func (st *State) runJob(job matJob) {
	if job.m[0].Q8 != nil {
		n := len(job.x)
		quantizeInto(job.xq.q[:n], job.xq.scales[:n/GroupSize], job.x)
	}
	st.job = job
	st.pool.run(&st.job)
}
