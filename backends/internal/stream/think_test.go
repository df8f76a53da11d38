package stream

import (
	"regexp"
	"strings"
	"testing"

	"github.com/tokentop/tokentop/backends/replay"
)

// TestThinkSplitterFindsTagsCutAcrossChunks: tags split over chunks still
// open and close the reasoning; only a <think> before other text opens
// it; a </think> nothing opened ends reasoning that began with the output.
func TestThinkSplitterFindsTagsCutAcrossChunks(t *testing.T) {
	cases := []struct {
		name    string
		chunks  []string
		kinds   string
		leading int
	}{
		{"whole tags", []string{"<think>", "Okay", "</think>", "\n\n", "Hi"}, "rrraa", 0},
		{"tags cut", []string{"<th", "ink>", "hmm", "</th", "ink>", "Hi"}, "arrrra", 2},
		{"white space first", []string{"\n", "<think>", "hmm", "</think>", "Hi"}, "arrra", 2},
		{"tags in one chunk", []string{"<think>hmm</think>", "Hi"}, "ra", 0},
		{"no reasoning", []string{"Once", " upon", " a", " time"}, "aaaa", 0},
		{"a late <think> is text", []string{"Once", " <think>", " upon"}, "aaa", 0},
		{"opened by the template", []string{"hmm", " so", "</think>", "Hi"}, "aara", 3},
		{"only the first close counts", []string{"<think>", "a", "</think>", "b", "</think>", "c"}, "rrraaa", 0},
	}
	for _, c := range cases {
		var s ThinkSplitter
		var got replay.Chunks
		for _, chunk := range c.chunks {
			got.OnChunk(1, s.Kind(chunk))
		}
		if got.Kinds != c.kinds || s.LeadingReasoning() != c.leading {
			t.Errorf("%s: kinds %q leading %d, want %q %d", c.name, got.Kinds, s.LeadingReasoning(), c.kinds, c.leading)
		}
	}
}

// FuzzThinkSplitter: any text, cut anywhere: once the leading chunks are
// counted as reasoning, reasoning is a run from the first chunk (never
// after the answer began), and a text with no tag in it is all answer.
func FuzzThinkSplitter(f *testing.F) {
	f.Add("<think>hmm</think>\n\nHi", uint8(3))
	f.Add("hmm so</think>Hi", uint8(2))
	f.Add("Once <think> upon", uint8(1))
	f.Fuzz(func(t *testing.T, text string, step uint8) {
		var s ThinkSplitter
		var got replay.Chunks
		size := int(step%8) + 1
		for i := 0; i < len(text); i += size {
			got.OnChunk(1, s.Kind(text[i:min(len(text), i+size)]))
		}
		lead := s.LeadingReasoning()
		if lead > len(got.Kinds) {
			t.Fatalf("%d leading reasoning chunks of %d", lead, len(got.Kinds))
		}
		kinds := strings.Repeat("r", lead) + got.Kinds[lead:]
		if !regexp.MustCompile(`^r*a*$`).MatchString(kinds) {
			t.Fatalf("%q cut every %d: kinds %q: reasoning after the answer", text, size, kinds)
		}
		if !strings.Contains(text, thinkOpen) && !strings.Contains(text, thinkClose) && strings.Contains(kinds, "r") {
			t.Fatalf("%q has no tag, yet kinds %q", text, kinds)
		}
	})
}

// BenchmarkThinkSplitter: the split is on each arrival's path, before its
// stamp: a chunk of plain text costs no allocation.
func BenchmarkThinkSplitter(b *testing.B) {
	b.ReportAllocs()
	var s ThinkSplitter
	for b.Loop() {
		s.Kind(" upon")
	}
}
