package stream

import (
	"strings"

	"github.com/tokentop/tokentop/backends"
)

// Inline reasoning tags, as Qwen3, DeepSeek-R1 and their distills write
// them when no server-side parser takes the thinking out of the text.
const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// InlineThinkRule is how a raw text stream's reasoning is told from its
// answer, in the words the manifest keeps.
const InlineThinkRule = "text between <think> and </think> at the start of the output is reasoning; " +
	"a </think> that no <think> opened ends reasoning that began with the output (a chat template that opens it in the prompt)"

// ThinkSplitter tells the chunks of one raw text stream that carry
// reasoning inline (<think>…</think>) from the answer's. A tag may be cut
// across chunks; only a <think> before any other text opens reasoning,
// and only the first </think> closes it. The zero value is ready; use one
// per stream.
type ThinkSplitter struct {
	tail      string // the end of the text so far, as long as a tag less one byte
	inside    bool   // within an opened <think>
	done      bool   // reasoning closed, or the answer began without it
	sawText   bool   // some text other than white space came
	chunks    int
	leadChunk int // chunks found to be reasoning when an unopened </think> came
}

// Kind is the kind of the chunk carrying text.
func (s *ThinkSplitter) Kind(text string) backends.TokenKind {
	s.chunks++
	if s.done {
		return backends.Answer
	}
	// A tag can straddle chunks only from a '<' in the tail: without one
	// the chunk is looked at alone, with no copy on the arrival's path.
	window := text
	if strings.IndexByte(s.tail, '<') >= 0 {
		window = s.tail + text
	}
	s.tail = window[max(0, len(window)-len(thinkClose)+1):]
	if s.inside {
		if strings.Contains(window, thinkClose) {
			s.inside, s.done = false, true
		}
		return backends.Reasoning
	}
	if !s.sawText && strings.Contains(window, thinkOpen) {
		// The chunks before held only white space or the tag's start.
		s.inside = true
		if s.chunks > 1 {
			s.leadChunk = s.chunks
		}
		if strings.Contains(window[strings.Index(window, thinkOpen):], thinkClose) {
			s.inside, s.done = false, true
		}
		return backends.Reasoning
	}
	if strings.Contains(window, thinkClose) {
		// Reasoning opened by the prompt: everything so far was it.
		s.done, s.leadChunk = true, s.chunks
		return backends.Reasoning
	}
	if strings.TrimSpace(text) != "" && !strings.HasPrefix(thinkOpen, strings.TrimSpace(window)) {
		s.sawText = true
	}
	return backends.Answer
}

// LeadingReasoning is how many chunks from the first were reasoning though
// Kind said answer when they came (backends.Result.LeadingReasoningChunks):
// those before a </think> that no <think> opened, or those that held the
// start of a <think> cut across chunks.
func (s *ThinkSplitter) LeadingReasoning() int { return s.leadChunk }
