package builtin

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
)

// quantizePresets are the types llama-quantize writes for each preset on
// rows a K-quant can hold, as its build (llama.cpp ec98e2002, the copy
// Ollama vendored) wrote them for stories15M- and stories110M-shaped
// models; every one of those files loaded in the engine and gave
// llama.cpp's greedy tokens.
var quantizePresets = map[string][]uint32{
	"Q4_0": {ggmlQ4_0, ggmlQ6_K}, "Q4_1": {ggmlQ4_1, ggmlQ6_K},
	"Q5_0": {ggmlQ5_0, ggmlQ6_K}, "Q5_1": {ggmlQ5_1, ggmlQ6_K}, "Q8_0": {ggmlQ8_0},
	"Q2_K": {ggmlQ2_K, ggmlQ3_K, ggmlQ6_K}, "Q3_K_S": {ggmlQ3_K, ggmlQ6_K},
	"Q3_K_M": {ggmlQ3_K, ggmlQ4_K, ggmlQ5_K, ggmlQ6_K}, "Q3_K_L": {ggmlQ3_K, ggmlQ5_K, ggmlQ6_K},
	"Q4_K_S": {ggmlQ4_K, ggmlQ5_K, ggmlQ6_K}, "Q4_K_M": {ggmlQ4_K, ggmlQ6_K},
	"Q5_K_S": {ggmlQ5_K, ggmlQ6_K}, "Q5_K_M": {ggmlQ5_K, ggmlQ6_K}, "Q6_K": {ggmlQ6_K},
}

// kFallback is the type llama-quantize writes instead of a K-quant for
// rows that are not a multiple of 256 wide.
func kFallback(typ uint32) uint32 {
	switch typ {
	case ggmlQ2_K, ggmlQ3_K:
		return ggmlIQ4_NL
	case ggmlQ4_K:
		return ggmlQ5_0
	case ggmlQ5_K:
		return ggmlQ5_1
	case ggmlQ6_K:
		return ggmlQ8_0
	}
	return typ
}

// presetMix gives a model of shape s's matrices the preset's types in
// turn, each replaced by its fallback where the matrix's rows (Dim wide,
// or HiddenDim for ffn_down) cannot hold it. Each width takes the types
// in turn on its own, so that every type and every fallback appears.
func presetMix(s Shape, types []uint32) func(string) uint32 {
	next := map[int]int{}
	return func(tensor string) uint32 {
		cols := s.Dim
		if strings.HasSuffix(tensor, "ffn_down.weight") {
			cols = s.HiddenDim
		}
		typ := types[next[cols]%len(types)]
		next[cols]++
		if cols%superBlock != 0 {
			return kFallback(typ)
		}
		return typ
	}
}

// Every llama-quantize preset's mix, on a shape with rows both a K-quant
// can hold (256 wide) and rows it cannot (288, so the fallbacks appear):
// the file loads as stored, every type runs, its logits are within 2%
// (relative L2) of the same decoded weights run in f32, and it generates.
func TestEveryQuantizePresetLoadsAndGenerates(t *testing.T) {
	shape := Shape{Dim: 256, HiddenDim: 288, Layers: 4, Heads: 4, KVHeads: 4, Vocab: 300, SeqLen: 64}
	w := Synthetic(shape, 5)
	vocab := spmVocab(ByteLevelTokenizer(shape.Vocab))
	seen := map[string]bool{}
	for _, preset := range slices.Sorted(maps.Keys(quantizePresets)) {
		t.Run(preset, func(t *testing.T) {
			path := writeTemp(t, preset+".gguf", ggufOf(t, w, vocab, presetMix(shape, quantizePresets[preset])))
			m, err := Load(path, "")
			if err != nil {
				t.Fatal(err)
			}
			format := m.Weights.Format()
			for _, typ := range quantizePresets[preset] {
				for _, want := range []uint32{typ, kFallback(typ)} {
					name := ggmlFormats[want].String()
					if !strings.Contains(format, name) {
						t.Errorf("format %q lacks %s", format, name)
					}
					seen[name] = true
				}
			}
			if rel := offFromF32(t, m, path); !(rel <= 0.02) {
				t.Errorf("logits off by %.4f (relative L2) from the same weights in f32", rel)
			}
			e := NewEngine(m, 2)
			defer e.Close()
			g, err := e.Generate(context.Background(), []int{1, 40, 80}, 8, Sampling{IgnoreEOS: true}, func(int) {})
			if err != nil || len(g.Tokens) != 8 {
				t.Errorf("generate: %v, %d tokens", err, len(g.Tokens))
			}
			// No allocation per token on any preset's kernels, as
			// TestNoAllocationPerToken checks the f32 engine's.
			generate := func(tokens int) float64 {
				return testing.AllocsPerRun(3, func() {
					e.Generate(context.Background(), []int{1, 40, 80}, tokens, Sampling{IgnoreEOS: true}, func(int) {})
				})
			}
			if short, long := generate(4), generate(16); long != short {
				t.Errorf("generating 16 tokens allocates %v times, 4 tokens %v: allocation per token", long, short)
			}
		})
	}
	for _, spec := range formats[formatQ8_0:] {
		if !seen[spec.name] {
			t.Errorf("no preset wrote %s", spec.name)
		}
	}
}
