package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"

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
		return nil, "", fmt.Errorf("--trace %s: %d bytes; a trace is read whole, at most %d", path, info.Size(), maxTraceFile)
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

// traceStretch is the trace's requests from index from, n of them at
// most, due at their times from the first one's (at the plan's speed).
func (r *run) traceStretch(from, n int) []openRequest {
	t := r.plan.Trace
	schedule := t.Schedule(r.plan.TraceSpeed)
	var out []openRequest
	for k := from; k < len(t.Requests) && k < from+n; k++ {
		out = append(out, openRequest{due: schedule[k] - schedule[from], shape: r.traceShape(t.Requests[k])})
	}
	return out
}

// traceBlock replays arm i's next stretch of the trace, Plan.OpenBlock of
// its time (at its speed), and ends the arm once the whole trace is
// replayed: every arm replays all of it, stretch by stretch, interleaved.
func (r *run) traceBlock(ctx context.Context, i, round, position int) error {
	t := r.plan.Trace
	schedule := t.Schedule(r.plan.TraceSpeed)
	from := r.arms[i].traceAt
	end := from
	for end < len(schedule) && (end == from || schedule[end]-schedule[from] < r.plan.OpenBlock) {
		end++
	}
	r.arms[i].traceAt = end
	if err := r.runOpenLoop(ctx, i, r.traceStretch(from, end-from), session.PhaseTimed, round, position, true); err != nil {
		return err
	}
	if end == len(schedule) && !r.arms[i].stopped {
		r.stopArm(i, Decision{Stop: true, Short: "trace replayed", Interval: metrics.CI{Lo: math.NaN(), Hi: math.NaN()},
			Reason: fmt.Sprintf("replayed the whole trace (%d requests of %s)", len(schedule), t.File)})
	}
	return nil
}

// traceShape is what a trace's request asks for: its own prompt, or for
// lengths in tokens a prompt built to that length (profiles.WordsPerToken
// words a token: an estimate, said in the manifest) from the blocks its
// hash ids name, so that requests sharing a block share that prefix.
func (r *run) traceShape(req arrival.TraceRequest) *shape {
	sh := &shape{prompt: req.Prompt, promptID: req.Line, maxTokens: req.OutputTokens}
	if sh.prompt == "" {
		sh.prompt = tracePrompt(req)
	}
	return sh
}

// traceBlockTokens is the tokens of prompt one hash id stands for in
// Mooncake's traces.
const traceBlockTokens = 512

// tracePrompt builds a prompt of the request's input length in words:
// one block of words per hash id (the same id, the same words), then
// words of its own.
func tracePrompt(req arrival.TraceRequest) string {
	want := int(math.Ceil(float64(req.InputTokens) * profiles.WordsPerToken))
	words := make([]string, 0, want)
	blockWords := int(traceBlockTokens * profiles.WordsPerToken)
	for _, id := range req.HashIDs {
		rng := rand.New(rand.NewPCG(uint64(id), 0x7472616365))
		words = append(words, profiles.SeededWords(rng, min(blockWords, want-len(words)))...)
	}
	rng := rand.New(rand.NewPCG(uint64(req.Line), 0x6f776e))
	words = append(words, profiles.SeededWords(rng, want-len(words))...)
	return strings.Join(words, " ")
}

// traceInfo is the manifest's account of a replayed trace.
func (p *Plan) traceInfo() *session.TraceInfo {
	if p.Trace == nil {
		return nil
	}
	return &session.TraceInfo{File: p.Trace.File, SHA256: p.TraceSHA256, Requests: len(p.Trace.Requests), Speed: p.TraceSpeed,
		Prompts: fmt.Sprintf("a line's prompt, or for lengths in tokens one built from %g words a token (an estimate; the server's count is each request's prompt_tokens), one block of %d tokens per hash id, shared by the requests that name it",
			profiles.WordsPerToken, traceBlockTokens)}
}
