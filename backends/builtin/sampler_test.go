package builtin

import (
	"context"
	"math"
	"testing"
)

func samples(s *Sampler, logits []float32, n int) map[int]int {
	counts := map[int]int{}
	for range n {
		counts[s.Sample(logits)]++
	}
	return counts
}

func TestGreedyIsArgmax(t *testing.T) {
	s := NewSampler(5)
	s.Configure(0, 0, 0, 0, 1)
	if got := s.Sample([]float32{1, 5, 3, 5, -1}); got != 1 {
		t.Errorf("greedy picked %d, want the first maximum 1", got)
	}
}

func TestTemperatureMatchesSoftmax(t *testing.T) {
	logits := []float32{0, 1, 2}
	s := NewSampler(3)
	s.Configure(1, 0, 0, 0, 42)
	const n = 60000
	counts := samples(s, logits, n)
	z := 1 + math.E + math.E*math.E
	for i, l := range logits {
		want := math.Exp(float64(l)) / z
		got := float64(counts[i]) / n
		if math.Abs(got-want) > 0.01 {
			t.Errorf("token %d: frequency %.3f, softmax %.3f", i, got, want)
		}
	}
}

func TestFiltersRestrictTheSupport(t *testing.T) {
	logits := []float32{4, 3.9, 3, 1, 0.5, 0, -1, -2}
	cases := []struct {
		name       string
		topK       int
		topP, minP float64
		allowed    []int
	}{
		{"top-k 2", 2, 0, 0, []int{0, 1}},
		{"top-p 0.6", 0, 0.6, 0, []int{0, 1}},
		{"min-p 0.3", 0, 0, 0.3, []int{0, 1, 2}},
		{"top-k 3 then min-p 0.5", 3, 0, 0.5, []int{0, 1}},
	}
	for _, c := range cases {
		s := NewSampler(len(logits))
		s.Configure(1, c.topK, c.topP, c.minP, 7)
		counts := samples(s, logits, 5000)
		for tok := range counts {
			ok := false
			for _, a := range c.allowed {
				ok = ok || a == tok
			}
			if !ok {
				t.Errorf("%s: sampled token %d outside %v", c.name, tok, c.allowed)
			}
		}
		for _, a := range c.allowed {
			if counts[a] == 0 {
				t.Errorf("%s: never sampled allowed token %d", c.name, a)
			}
		}
	}
}

func TestSeedReproducesASequence(t *testing.T) {
	logits := []float32{1, 1, 1, 1, 1, 1}
	draw := func(seed int64) []int {
		s := NewSampler(len(logits))
		s.Configure(0.8, 4, 0.95, 0.01, seed)
		var out []int
		for range 50 {
			out = append(out, s.Sample(logits))
		}
		return out
	}
	a, b, c := draw(5), draw(5), draw(6)
	same := func(x, y []int) bool {
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	if !same(a, b) || same(a, c) {
		t.Errorf("seed 5 twice: %v / %v; seed 6: %v", a, b, c)
	}
}

func TestSelectTopK(t *testing.T) {
	probs := []float32{0.1, 0.3, 0.05, 0.3, 0.2, 0.05}
	for k := 1; k <= len(probs); k++ {
		idx := []int32{0, 1, 2, 3, 4, 5}
		selectTopK(idx, probs, k)
		var minIn, maxOut float32 = 1, 0
		for i, id := range idx {
			if i < k {
				minIn = min(minIn, probs[id])
			} else {
				maxOut = max(maxOut, probs[id])
			}
		}
		if k < len(probs) && minIn < maxOut {
			t.Errorf("k=%d: %v", k, idx)
		}
	}
}

// Sampling and decoding sit between a token's arrival and the next; they
// must not allocate per token (the runner's clock does not either).
func TestNoAllocationPerToken(t *testing.T) {
	logits := make([]float32, 512)
	for i := range logits {
		logits[i] = float32(i%37) / 9
	}
	s := NewSampler(len(logits))
	for _, c := range []Sampling{{}, {Temperature: 0.8}, {Temperature: 0.8, TopK: 40}, {Temperature: 0.8, TopP: 0.9}, {Temperature: 0.8, MinP: 0.05}} {
		s.Configure(c.Temperature, c.TopK, c.TopP, c.MinP, 1)
		if n := testing.AllocsPerRun(50, func() { s.Sample(logits) }); n != 0 {
			t.Errorf("%+v: %v allocations per sample", c, n)
		}
	}
	e, prompt := embeddedEngine(t, 2)
	generate := func(tokens int) float64 {
		return testing.AllocsPerRun(5, func() {
			e.Generate(context.Background(), prompt, tokens, Sampling{Temperature: 0.8, TopP: 0.9, Seed: 3}, func(int) {})
		})
	}
	if short, long := generate(16), generate(64); long != short {
		t.Errorf("generating 64 tokens allocates %v times, 16 tokens %v: allocation per token", long, short)
	}
}
