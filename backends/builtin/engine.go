package builtin

import (
	"context"
	"errors"
	"time"

	"github.com/tokentop/tokentop/backends"
)

// Engine runs generations of one model. It is not safe for concurrent
// use: the runner runs one trial at a time.
type Engine struct {
	Model   *Model
	pool    *Pool
	state   *State
	sampler *Sampler
}

// NewEngine prepares buffers for model with threads workers.
func NewEngine(m *Model, threads int) *Engine {
	pool := NewPool(threads)
	return &Engine{Model: m, pool: pool, state: NewState(m.Weights, pool), sampler: NewSampler(m.Weights.Shape.Vocab)}
}

// Close stops the worker goroutines.
func (e *Engine) Close() { e.pool.Close() }

// Threads is the engine's parallelism.
func (e *Engine) Threads() int { return e.pool.Threads() }

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
	e.sampler.Configure(s.Temperature, s.TopK, s.TopP, s.MinP, s.Seed)
	start := time.Now()
	var logits []float32
	for pos, tok := range prompt {
		if pos >= seqLen {
			g.StopReason = backends.StopTruncated
			return g, nil
		}
		if err := ctx.Err(); err != nil {
			return g, err
		}
		logits = e.state.Forward(tok, pos)
	}
	g.Prefill = time.Since(start)
	decodeStart := time.Now()
	for pos := len(prompt); len(g.Tokens) < maxTokens; pos++ {
		next := e.sampler.Sample(logits)
		if (next == tokenEOS || next == tokenBOS) && !s.IgnoreEOS {
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
		logits = e.state.Forward(next, pos)
	}
	g.Decode = time.Since(decodeStart)
	if g.StopReason == "" { // the loop ran to max_tokens; a canceled one returned above, with no reason
		g.StopReason = "length"
	}
	return g, nil
}
