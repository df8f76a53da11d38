package stream

import (
	"testing"
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
		kinds := ""
		for _, chunk := range c.chunks {
			kinds += string("art"[s.Kind(chunk)])
		}
		if kinds != c.kinds || s.LeadingReasoning() != c.leading {
			t.Errorf("%s: kinds %q leading %d, want %q %d", c.name, kinds, s.LeadingReasoning(), c.kinds, c.leading)
		}
	}
}

// FuzzThinkSplitter: any text, cut anywhere, gives a kind per chunk and
// never more leading reasoning chunks than there were chunks.
func FuzzThinkSplitter(f *testing.F) {
	f.Add("<think>hmm</think>\n\nHi", uint8(3))
	f.Add("hmm so</think>Hi", uint8(2))
	f.Fuzz(func(t *testing.T, text string, step uint8) {
		var s ThinkSplitter
		n := 0
		for i := 0; i < len(text); i += int(step%8) + 1 {
			s.Kind(text[i:min(len(text), i+int(step%8)+1)])
			n++
		}
		if s.LeadingReasoning() > n {
			t.Fatalf("%d leading reasoning chunks of %d", s.LeadingReasoning(), n)
		}
	})
}
