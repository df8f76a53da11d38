package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"

	"github.com/tokentop/tokentop/backends"
	"github.com/tokentop/tokentop/backends/untrusted"
	"github.com/tokentop/tokentop/metrics"
	"github.com/tokentop/tokentop/profiles"
	"github.com/tokentop/tokentop/runner/arrival"
	"github.com/tokentop/tokentop/session"
)

// maxTraceFile bounds a trace file read whole.
const maxTraceFile = 1 << 30

// readTrace reads and parses a trace file, and its sha256 for the
// manifest.
func readTrace(path string) (*arrival.Trace, string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, "", fmt.Errorf("--trace: %w", err)
	}
	if info.Size() > maxTraceFile {
		return nil, "", fmt.Errorf("--trace %s: %d bytes; a trace is read whole, at most %d", untrusted.Line(path), info.Size(), maxTraceFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("--trace: %w", err)
	}
	t, err := arrival.ParseTrace(path, data)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(data)
	return &t, hex.EncodeToString(sum[:]), nil
}

// traceRate is a trace's mean request rate at speed: its requests after
// the first over its length (a trace whose requests all come at once is
// taken as one second long).
func traceRate(t *arrival.Trace, speed float64) float64 {
	n := len(t.Requests)
	length := (t.Requests[n-1].At.Seconds()) / speed
	if n < 2 || length <= 0 {
		return float64(n)
	}
	return float64(n-1) / length
}

// traceStretch is the trace's first n requests, due at their times from
// the first one's (at the plan's speed): an arm's warmup.
func (r *run) traceStretch(n int) []openRequest {
	t := r.plan.Trace
	schedule := t.Schedule(r.plan.TraceSpeed)
	var out []openRequest
	for k := 0; k < len(t.Requests) && k < n; k++ {
		out = append(out, openRequest{due: schedule[k], trace: &t.Requests[k], index: k})
	}
	return out
}

// traceBlock replays arm i's next stretch of the trace at the trace's own
// times: Plan.OpenBlock of trace time (at its speed) from where the arm's
// replay stands, each request due at its time within it, and the block
// lasting the whole stretch, its idle tail included, so that the time
// between stretches is the trace's. An idle spell longer than a stretch
// is waited out at the start of the block after it. Every arm replays
// all of the trace, stretch by stretch, interleaved; the arm ends once it
// has. (Each stretch once restarted the trace's clock at its first
// request: 4 requests 10 s apart went out within 15 ms.)
func (r *run) traceBlock(ctx context.Context, i, round, position int) error {
	t := r.plan.Trace
	schedule := t.Schedule(r.plan.TraceSpeed)
	arm := &r.arms[i]
	from, start := arm.traceAt, arm.traceClock
	end := start + r.plan.OpenBlock
	if from < len(schedule) && schedule[from] >= end {
		end = schedule[from] + r.plan.OpenBlock
	}
	to := from
	for to < len(schedule) && schedule[to] < end {
		to++
	}
	requests := make([]openRequest, 0, to-from)
	for k := from; k < to; k++ {
		requests = append(requests, openRequest{due: schedule[k] - start, trace: &t.Requests[k], index: k})
	}
	arm.traceAt, arm.traceClock = to, end
	lasts := end - start
	if to == len(schedule) {
		lasts = 0 // nothing of the trace is left to keep its time for
	}
	if err := r.runOpenLoop(ctx, i, requests, session.PhaseTimed, round, position, true, lasts); err != nil {
		return err
	}
	if to == len(schedule) && !arm.stopped {
		r.stopArm(i, Decision{Stop: true, Short: "trace replayed", Interval: metrics.CI{Lo: math.NaN(), Hi: math.NaN()},
			Reason: fmt.Sprintf("replayed the whole trace (%d requests of %s)", len(schedule), untrusted.Line(t.File))})
	}
	return nil
}

// maxTracePromptBytes bounds the prompts of a trace's requests held at
// once: a request's prompt is built as it is sent and dropped once it
// ends, and one due while the prompts in flight fill the bound waits in
// the client's queue (it counts in its queue time). 200 requests of a
// million tokens each at one timestamp once took 2 GB.
const maxTracePromptBytes = 256 << 20

// traceShape builds what a trace's request asks for, as it is sent on
// target t: its own prompt, or for lengths in tokens a prompt built to
// that length from the blocks its hash ids name (requests sharing a block
// share that prefix), sized as the target's sizing says. It waits for
// room under maxTracePromptBytes, and release gives the room back.
func (r *run) traceShape(ctx context.Context, t int, req *arrival.TraceRequest) (sh *shape, release func()) {
	sizing := r.plan.traceSizingOf(t)
	need := int64(len(req.Prompt))
	if req.Prompt == "" {
		need = int64(float64(req.InputTokens)*sizing.wordsPerToken*bytesPerWord) + 1
	}
	need = min(need, maxTracePromptBytes)
	if err := r.tracePrompts.Acquire(ctx, need); err != nil {
		return &shape{prompt: req.Prompt, promptID: req.Line, maxTokens: req.OutputTokens}, func() {}
	}
	sh = &shape{prompt: req.Prompt, promptID: req.Line, maxTokens: req.OutputTokens}
	if sh.prompt == "" {
		sh.prompt = tracePrompt(req, sizing.wordsPerToken)
	}
	return sh, func() { r.tracePrompts.Release(need) }
}

// bytesPerWord is a seeded word's bytes with its space, at most: what a
// prompt of n words holds for maxTracePromptBytes.
const bytesPerWord = 10

// traceBlockTokens is the tokens of prompt one hash id stands for in
// Mooncake's traces.
const traceBlockTokens = 512

// tracePrompt builds a prompt of the request's input length in words, at
// wordsPerToken: one block of words per hash id (the same id, the same
// words), then words of its own.
func tracePrompt(req *arrival.TraceRequest, wordsPerToken float64) string {
	want := int(math.Ceil(float64(req.InputTokens) * wordsPerToken))
	words := make([]string, 0, want)
	blockWords := int(math.Round(traceBlockTokens * wordsPerToken))
	for _, id := range req.HashIDs {
		if len(words) >= want {
			break
		}
		rng := rand.New(rand.NewPCG(uint64(id), 0x7472616365))
		words = append(words, profiles.SeededWords(rng, min(blockWords, want-len(words)))...)
	}
	rng := rand.New(rand.NewPCG(uint64(req.Line), 0x6f776e))
	words = append(words, profiles.SeededWords(rng, want-len(words))...)
	return strings.Join(words, " ")
}

// traceSizing is how a target's trace prompts are sized: words a token,
// and in words how that figure was had.
type traceSizing struct {
	wordsPerToken float64
	how           string
}

// traceSizingOf is target t's sizing; the estimate before it is measured.
func (p *Plan) traceSizingOf(t int) traceSizing {
	if t < len(p.TraceSizing) {
		return p.TraceSizing[t]
	}
	return traceSizing{profiles.WordsPerToken, fmt.Sprintf("estimated at %g words a token", profiles.WordsPerToken)}
}

// traceCalibrationWords is how many of the seeded words a target's
// tokenizer counts to measure its words a token: the same words the
// prompts are made of, so the figure is theirs.
const traceCalibrationWords = 4000

// calibrateTrace measures, for each target, the words a token of the
// seeded words trace prompts are made of, with the server's own tokenizer
// where it has one, else --tokenizer's, else keeps the estimate (and says
// why), before the first request: a prompt of input_length tokens then
// comes out within a few tokens of it, where words at the estimate came
// out 22–25% short on a real llama-server. Each request's prompt_tokens
// is still the server's own count.
func (p *Plan) calibrateTrace(ctx context.Context, bs []backends.Backend) {
	if p.Trace == nil || !slices.ContainsFunc(p.Trace.Requests, func(r arrival.TraceRequest) bool { return r.InputTokens > 0 }) {
		return
	}
	rng := rand.New(rand.NewPCG(0x63616c, 0x69627261))
	sample := strings.Join(profiles.SeededWords(rng, traceCalibrationWords), " ")
	measure := func(tok backends.Tokenizer) (float64, error) {
		c, cancel := context.WithTimeout(ctx, p.Profile.TrialTimeout)
		defer cancel()
		tokens, err := tok.Tokenize(c, sample, false)
		if err != nil {
			return 0, err
		}
		if len(tokens) == 0 {
			return 0, errors.New("it counted no tokens")
		}
		return float64(traceCalibrationWords) / float64(len(tokens)), nil
	}
	p.TraceSizing = make([]traceSizing, len(bs))
	for t, b := range bs {
		why := backends.ErrNoTokenizer.Error()
		if tok, ok := b.(backends.Tokenizer); ok {
			if wpt, err := measure(tok); err == nil {
				p.TraceSizing[t] = traceSizing{wpt, fmt.Sprintf("sized with the server's own tokenizer: %.3g words a token, measured on %d of the prompts' seeded words", wpt, traceCalibrationWords)}
				continue
			} else {
				why = "its tokenizer failed: " + untrusted.Line(err.Error())
			}
		}
		if p.Tokenizer != nil {
			if wpt, err := measure(p.Tokenizer); err == nil {
				p.TraceSizing[t] = traceSizing{wpt, fmt.Sprintf("sized with the tokenizer of %s (not the server's: %s): %.3g words a token, measured on %d of the prompts' seeded words",
					untrusted.Line(p.TokenizerFile), why, wpt, traceCalibrationWords)}
				continue
			}
		}
		p.TraceSizing[t] = traceSizing{profiles.WordsPerToken, fmt.Sprintf("estimated at %g words a token (%s)", profiles.WordsPerToken, why)}
	}
}

// checkTraceFits refuses a trace with a request that cannot fit a target's
// context window, where the server says what it is: it would only fail,
// or be cut, and its prompt would be built for nothing.
func (p *Plan) checkTraceFits(infos []backends.Info) error {
	if p.Trace == nil {
		return nil
	}
	for t, info := range infos {
		if info.ContextTokens <= 0 {
			continue
		}
		for _, req := range p.Trace.Requests {
			if need := req.InputTokens + req.OutputTokens; req.InputTokens > 0 && need > info.ContextTokens {
				return fmt.Errorf("--trace %s:%d: input_length %d + output_length %d = %d tokens do not fit the context window of %d tokens of %s; leave out the trace's longer requests or serve a model with a longer context",
					untrusted.Line(p.Trace.File), req.Line, req.InputTokens, req.OutputTokens, need, info.ContextTokens, p.named(&p.Targets[t]))
			}
		}
	}
	return nil
}

// traceInfo is the manifest's account of a replayed trace.
func (p *Plan) traceInfo() *session.TraceInfo {
	if p.Trace == nil {
		return nil
	}
	var sizing []string
	for t := range p.Targets {
		how := p.traceSizingOf(t).how
		if len(p.Targets) > 1 {
			how = p.Targets[t].Name + ": " + how
		}
		sizing = append(sizing, how)
	}
	return &session.TraceInfo{File: untrusted.Line(p.Trace.File), SHA256: p.TraceSHA256, Requests: len(p.Trace.Requests), Speed: p.TraceSpeed,
		Prompts: fmt.Sprintf("a line's prompt, or for lengths in tokens one built of seeded words, one block of %d tokens per hash id, shared by the requests that name it, %s; the server's count is each request's prompt_tokens",
			traceBlockTokens, strings.Join(sizing, "; "))}
}
