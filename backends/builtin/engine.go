package builtin

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tokentop/tokentop/backends"
)

// Engine runs generations of one model. Generate is safe for concurrent
// calls, and serves them the way an inference server does: each call is a
// stream with its own State (KV cache, activations, sampler) over the
// shared weights, and the steps the streams ask for at about the same time
// run as one batched forward pass (see pass). A lock around a one-stream
// engine would time-slice the streams instead, each paying for every
// weight read alone.
type Engine struct {
	Model *Model
	pool  *Pool
	rope  rotary
	// slidingRope serves the sliding-window layers, whose rotary base may
	// be their own (gemma3's 10000 beside its global layers' 1000000),
	// their positions unscaled.
	slidingRope rotary

	// Steps are batched by flat combining: a stream queues its step, then
	// whichever stream finds no pass running (busy) runs every queued step
	// as one pass, marks them done and wakes their streams; a stream that
	// finds a pass running waits for it to end. One stream alone pays two
	// atomic operations and a lock per token.
	queueMu sync.Mutex
	queue   []*State
	queued  atomic.Int32 // len(queue), read while gathering
	busy    atomic.Bool  // a pass is running
	pass    pass         // the buffers of the stream that runs it
	// embedScratch is the pass's room for an embedding row read from the
	// weights file, allocated once (forward must not allocate per token).
	embedScratch []byte
	active       atomic.Int32 // streams inside Generate
	// lastPass is how long the last pass took (ns): the longest a leader
	// waits for the other active streams to queue their steps. A stream
	// that misses a pass waits one pass; waiting longer would cost every
	// other stream more than it saves.
	lastPass atomic.Int64

	idleMu sync.Mutex
	idle   []*State // states of finished streams, for reuse

	// chunk overrides PrefillChunk (tests run the prompt token by token
	// to check that batching changes no number).
	chunk int
}

func (e *Engine) prefillChunk() int {
	if e.chunk > 0 {
		return e.chunk
	}
	return PrefillChunk
}

// maxGather bounds the wait for other streams' steps, whatever a pass
// takes.
const maxGather = 2 * time.Millisecond

// PrefillChunk is how many prompt tokens one pass runs at most: enough to
// read each weight once for many tokens, few enough that a stream's long
// prompt does not hold up the other streams' decode steps for long.
const PrefillChunk = 64

// NewEngine prepares the shared parts of model with threads workers;
// each stream's buffers are allocated on its first use.
func NewEngine(m *Model, threads int) *Engine {
	w := m.Weights
	e := &Engine{Model: m, pool: NewPool(threads), rope: newRotary(w, w.RopeBase, w.RopeScale)}
	e.slidingRope = e.rope
	if rows := m.Weights.embedRows; rows != nil && rows.file != nil {
		e.embedScratch = make([]byte, rows.rowBytes())
	}
	if w.Window > 0 && (w.SlidingRopeBase != w.RopeBase || w.RopeScale != 0 && w.RopeScale != 1) {
		e.slidingRope = newRotary(w, w.SlidingRopeBase, 1)
	}
	return e
}

// Close stops the worker goroutines.
func (e *Engine) Close() { e.pool.Close() }

// Threads is the engine's parallelism.
func (e *Engine) Threads() int { return e.pool.Threads() }

// acquire returns a stream's State, reused when one is idle.
func (e *Engine) acquire() *State {
	e.idleMu.Lock()
	defer e.idleMu.Unlock()
	if n := len(e.idle); n > 0 {
		st := e.idle[n-1]
		e.idle = e.idle[:n-1]
		return st
	}
	return NewState(e.Model.Weights)
}

func (e *Engine) release(st *State) {
	e.idleMu.Lock()
	e.idle = append(e.idle, st)
	e.idleMu.Unlock()
}

// step runs st's token at st.pos through the model, batched with the
// steps other streams have queued, and samples st.next when st.sample.
func (e *Engine) step(st *State) {
	st.done.Store(false)
	e.queueMu.Lock()
	e.queue = append(e.queue, st)
	e.queued.Add(1)
	e.queueMu.Unlock()
	for !st.done.Load() {
		if e.busy.CompareAndSwap(false, true) {
			if !st.done.Load() {
				e.runPass()
			}
			e.busy.Store(false)
			e.wakeQueued() // steps queued during the pass need a runner
			continue
		}
		st.await(func() bool { return st.done.Load() || !e.busy.Load() })
	}
}

// runPass gathers the queued steps, waiting briefly for active streams
// that have not queued yet, and runs them as one pass.
func (e *Engine) runPass() {
	wait := time.Duration(min(e.lastPass.Load(), int64(maxGather)))
	for start := time.Now(); e.queued.Load() < e.active.Load() && time.Since(start) < wait; {
		runtime.Gosched()
	}
	e.queueMu.Lock()
	e.pass.reset()
	for _, st := range e.queue {
		e.pass.add(st)
	}
	e.queue = e.queue[:0]
	e.queued.Store(0)
	e.queueMu.Unlock()

	start := time.Now()
	e.forward(&e.pass)
	e.lastPass.Store(int64(time.Since(start)))
	for _, s := range e.pass.last {
		s.done.Store(true)
		s.notify()
	}
}

// wakeQueued wakes the streams whose steps wait for a pass.
func (e *Engine) wakeQueued() {
	e.queueMu.Lock()
	for _, s := range e.queue {
		s.notify()
	}
	e.queueMu.Unlock()
}

// Generation is what one call of Generate did.
type Generation struct {
	PromptTokens int
	Tokens       []int
	StopReason   string // "length", "stop" (end of sequence) or "context"
	Prefill      time.Duration
	Decode       time.Duration
}

// Sampling is one trial's strategy.
type Sampling struct {
	Temperature float64
	TopK        int
	TopP, MinP  float64
	Seed        int64
	// IgnoreEOS keeps sampling past an end-of-sequence token (it is
	// emitted and fed back like any other), for fixed-length trials.
	IgnoreEOS bool
}

// Generate runs prompt through the model (prefill), then samples up to
// maxTokens tokens, calling emit with each as soon as it is chosen. It
// stops early at end of sequence (EOS, or BOS, which delimits stories in
// llama2.c's training data) unless s.IgnoreEOS, at the end of the context
// (stop reason backends.StopTruncated), or when ctx ends.
func (e *Engine) Generate(ctx context.Context, prompt []int, maxTokens int, s Sampling, emit func(token int)) (Generation, error) {
	g := Generation{PromptTokens: len(prompt)}
	if len(prompt) == 0 {
		return g, errors.New("empty prompt: it needs at least the BOS token")
	}
	seqLen := e.Model.Weights.Shape.SeqLen
	// Sized once: generation never runs past the context, and the decode
	// loop must not allocate per token.
	g.Tokens = make([]int, 0, max(0, min(maxTokens, seqLen-len(prompt)+1)))
	st := e.acquire()
	defer e.release(st)
	st.sampler.Configure(s.Temperature, s.TopK, s.TopP, s.MinP, s.Seed)
	e.active.Add(1)
	defer e.active.Add(-1)
	start := time.Now()
	for pos := 0; pos < len(prompt); pos += e.prefillChunk() {
		if pos >= seqLen {
			g.StopReason = backends.StopTruncated
			return g, nil
		}
		if err := ctx.Err(); err != nil {
			return g, err
		}
		end := min(len(prompt), pos+e.prefillChunk(), seqLen)
		st.prompt, st.pos, st.sample = prompt[pos:end], pos, end == len(prompt)
		e.step(st)
		st.prompt = nil
		if err := e.Model.Weights.embedRows.readErr(); err != nil {
			return g, err
		}
		if end == seqLen && end < len(prompt) {
			g.StopReason = backends.StopTruncated
			return g, nil
		}
	}
	g.Prefill = time.Since(start)
	decodeStart := time.Now()
	for pos := len(prompt); len(g.Tokens) < maxTokens; pos++ {
		next := st.next
		if e.Model.Tokenizer.Stops(next) && !s.IgnoreEOS {
			g.StopReason = "stop"
			break
		}
		g.Tokens = append(g.Tokens, next)
		emit(next)
		if len(g.Tokens) == maxTokens {
			break
		}
		if pos >= seqLen {
			g.StopReason = backends.StopTruncated
			break
		}
		if err := ctx.Err(); err != nil {
			g.Decode = time.Since(decodeStart)
			return g, err
		}
		st.token, st.pos, st.sample = next, pos, true
		e.step(st)
		if err := e.Model.Weights.embedRows.readErr(); err != nil {
			g.Decode = time.Since(decodeStart)
			return g, err
		}
	}
	g.Decode = time.Since(decodeStart)
	if g.StopReason == "" { // the loop ran to max_tokens; a canceled one returned above, with no reason
		g.StopReason = "length"
	}
	return g, nil
}
