package builtin

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// archReference is what llama.cpp's library made of one test file
// (testdata/archs/ref.cpp) with a KV cache of Cache's type: the ids of
// each string of strings.jsonl, and
// for each prompt of prompts.jsonl its ids, the greedy continuation, each
// step's top-two margin and five largest logits (id, logit), and the
// first step's logits.
type archReference struct {
	Cache    string  `json:"cache"`
	Tokenize [][]int `json:"tokenize"`
	// EOG: the tokens that end a generation (vocabulary-only references)
	EOG    []int `json:"eog"`
	Greedy []struct {
		Prompt      []int          `json:"prompt"`
		IDs         []int          `json:"ids"`
		Margins     []float64      `json:"margins"`
		Top5        [][][2]float64 `json:"top5"`
		FirstLogits []float64      `json:"first_logits"`
	} `json:"greedy"`
}

func readJSONLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var s string
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, s)
	}
	return out
}

// archFormats are the test files' formats, each with the largest
// difference from llama.cpp's logits a step may show, and the largest the
// small files' first step may show on all but one of a file's prompts.
// F32 and Q8_0 do llama.cpp's arithmetic to float rounding (1e-5 measured
// on the small files' first steps, Q8_0 with both engines' caches of
// halves). Quantized inputs are codes of about a hundredth of a block's
// largest value: where the engines' sums round an activation's last bit
// apart, a code can land on the other side of a rounding boundary and
// move the logits by up to about 1 (measured, a code flip traced stage by
// stage on a prompt of llama-q4_k_m as first made, 2026-11-28). Over the
// large files' billion codes such a flip is all but certain, in Q8_0 too;
// on a small Q8_0 file it comes in one prompt where the portable kernels
// sum in their own order (qwen2's second: 0.22), and on the small Q4_K_M
// files in several, so their bound is the step's. F16: llama.cpp rounds
// each product's input to halves, the engine keeps it a float
// (0.0049–0.016 measured on the first steps, with caches of halves).
// BF16: both round each product's input to bfloat16s (roundToBFloat16;
// 0.033–0.097 on the first steps when the engine kept floats), and
// agree within 1e-5 but where the engines' inputs differ in a last bit
// and one rounds to the next bfloat16, 1/256 of it away, as a code flips
// (2 December, first steps: llama's and qwen2's five prompts 5e-7–7e-6;
// qwen3's two of five 0.018–0.024 and gemma3's three 0.01–0.07; every
// step 0.07 at most). In a file of a real model's depth such a flip comes
// in the first layers and the difference carries from there: the
// Qwen2.5-0.5B shape's BF16 file read 0.15–0.21 both before the engine
// rounded and after, so the bound is that file's.
var archFormats = []struct {
	name                 string
	logitDiff, firstDiff float64
}{
	{"f32", 1e-3, 1e-3},
	{"f16", 0.05, 0.05},
	{"bf16", 0.25, 0.25},
	{"q8_0", 2, 1e-4},
	{"q4_k_m", 2, 2},
}

// TestArchitecturesMatchLlamaCpp runs each architecture's test file in
// each format against llama.cpp's ids (testdata/archs, made by make.sh):
// every string tokenizes to llama.cpp's ids, every prompt's first logits
// are llama.cpp's within the format's bound, and every greedy step picks
// llama.cpp's token, or the two diverge where llama.cpp's own top two
// logits are closer than twice what the engines' logits differ by at that
// step, which is logged with both figures.
func TestArchitecturesMatchLlamaCpp(t *testing.T) {
	dir := filepath.Join("testdata", "archs")
	for _, arch := range []string{"llama", "qwen2", "qwen3", "gemma3"} {
		for _, f := range archFormats {
			name := arch + "-" + f.name
			t.Run(name, func(t *testing.T) {
				checkAgainstLlamaCpp(t, filepath.Join(dir, name+".gguf"), filepath.Join(dir, name+".json"), arch, f.logitDiff, f.firstDiff)
			})
		}
	}
	// Gemma 3 4B and larger scale their global layers' positions
	// linearly, and not their sliding layers'; the period file has two
	// sliding layers to each global one, and a sliding base of its own.
	for _, name := range []string{"gemma3-linear-f32", "gemma3-period-f32"} {
		t.Run(name, func(t *testing.T) {
			f32 := archFormats[0]
			checkAgainstLlamaCpp(t, filepath.Join(dir, name+".gguf"), filepath.Join(dir, name+".json"), "gemma3", f32.logitDiff, f32.firstDiff)
		})
	}
}

// TestLargeFilesMatchLlamaCpp is TestArchitecturesMatchLlamaCpp on files
// of the real models' shapes and vocabularies (make.py's big files, 2–5
// GB each, with llama.cpp's ids made by ref.cpp beside them, as
// ARCH-big-FORMAT.gguf and .json, FORMAT one of f32, Q8_0, Q4_K_M, and
// F16 or BF16 where llama-quantize has made them too), in the folder
// $TOKENTOP_ARCH_FILES; without it, it does nothing.
func TestLargeFilesMatchLlamaCpp(t *testing.T) {
	dir := os.Getenv("TOKENTOP_ARCH_FILES")
	if dir == "" {
		t.Skip("set TOKENTOP_ARCH_FILES to a folder of make.py's big files and their references")
	}
	// each format's name in the big files' names; make.py makes f32, Q8_0
	// and Q4_K_M, so only the 16-bit files may be missing
	bigNames := map[string]struct {
		name     string
		optional bool
	}{"f32": {"f32", false}, "q8_0": {"Q8_0", false}, "q4_k_m": {"Q4_K_M", false}, "f16": {"F16", true}, "bf16": {"BF16", true}}
	for _, arch := range []string{"llama", "qwen2", "qwen3", "gemma3"} {
		for _, f := range archFormats {
			big := bigNames[f.name]
			name := arch + "-big-" + big.name
			if _, err := os.Stat(filepath.Join(dir, name+".gguf")); err != nil && big.optional {
				continue
			}
			t.Run(name, func(t *testing.T) {
				checkAgainstLlamaCpp(t, filepath.Join(dir, name+".gguf"), filepath.Join(dir, name+".json"), arch, f.logitDiff, f.logitDiff)
			})
		}
	}
}

// checkAgainstLlamaCpp loads model and checks it against llama.cpp's
// reference: every string of strings.jsonl tokenizes to llama.cpp's ids,
// every prompt of prompts.jsonl as checkGreedy says.
func checkAgainstLlamaCpp(t *testing.T, model, reference, arch string, bound, firstBound float64) {
	dir := filepath.Join("testdata", "archs")
	strs := readJSONLines(t, filepath.Join(dir, "strings.jsonl"))
	prompts := readJSONLines(t, filepath.Join(dir, "prompts.jsonl"))
	raw, err := os.ReadFile(reference)
	if err != nil {
		t.Fatal(err)
	}
	var ref archReference
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	m, err := Load(model, "")
	if err != nil {
		t.Fatal(err)
	}
	if arch == "gemma3" {
		// Gemma's GeGLU reads ggml's GELU table by the input rounded to
		// a half: where the engines' inputs differ in their last bits,
		// the half can be the next one, as with a quantized input (the
		// real shape's f32 file: 0.0036 at most, 2026-11-28).
		bound, firstBound = max(bound, 1e-2), max(firstBound, 1e-2)
	}
	if m.Weights.Name != arch {
		t.Fatalf("loaded as %q", m.Weights.Name)
	}
	if cache := NewState(m.Weights).cache.format(); ref.Cache != cache {
		t.Fatalf("%s was made with a KV cache of %q; the engine keeps %s for this file: remake it (make.sh; ref.cpp's CACHE)", reference, ref.Cache, cache)
	}
	// A reference made before strings were added covers the first ones
	// (the large files'); the repository's must cover all.
	if len(ref.Tokenize) > len(strs) || len(ref.Tokenize) < len(strs) && strings.HasPrefix(reference, dir) {
		t.Fatalf("%s has the ids of %d strings, strings.jsonl %d: remake it (make.sh)", reference, len(ref.Tokenize), len(strs))
	}
	for i, want := range ref.Tokenize {
		if got := m.Tokenizer.Encode(strs[i], true); !slices.Equal(got, want) {
			t.Errorf("%q: ids %v, llama.cpp's %v", strs[i], got, want)
		}
	}
	e := NewEngine(m, 2)
	defer e.Close()
	var apart []string
	for i, p := range prompts {
		want := ref.Greedy[i]
		ids := m.Tokenizer.Encode(p, true)
		if !slices.Equal(ids, want.Prompt) {
			t.Fatalf("prompt %q: ids %v, llama.cpp's %v", p, ids, want.Prompt)
		}
		if diff := checkGreedy(t, e, i, ids, want.IDs, want.Margins, want.Top5, want.FirstLogits, bound); diff > firstBound {
			apart = append(apart, fmt.Sprintf("prompt %d by %.3g", i, diff))
		}
	}
	// One prompt may meet a code flip; in more, the arithmetic differs.
	if len(apart) > 1 {
		t.Errorf("first-step logits differ from llama.cpp's by more than %g on %d of %d prompts: %s", firstBound, len(apart), len(prompts), strings.Join(apart, ", "))
	}
}

// checkGreedy runs prompt step by step, as Generate does, comparing each
// step's logits and choice with llama.cpp's, and returns how far apart the
// first step's logits are.
func checkGreedy(t *testing.T, e *Engine, prompt int, ids, want []int, margins []float64, top5 [][][2]float64, first []float64, bound float64) (firstDiff float64) {
	t.Helper()
	st := NewState(e.Model.Weights)
	st.sampler.Configure(0, 0, 0, 0, 0)
	st.prompt, st.pos, st.sample = ids, 0, true
	var p pass
	p.add(st)
	e.forward(&p)
	diff := 0.0
	for v, l := range first {
		diff = max(diff, math.Abs(float64(st.logits[v])-l))
	}
	firstDiff = diff
	if diff > bound {
		t.Errorf("prompt %d: first-step logits differ from llama.cpp's by up to %.3g (bound %g)", prompt, diff, bound)
	}
	same := 0
	defer func() {
		t.Logf("prompt %d: first-step logits within %.2g of llama.cpp's; %d of %d greedy ids as llama.cpp's", prompt, diff, same, len(want))
	}()
	for k := range want {
		step := 0.0
		for _, top := range top5[k] {
			step = max(step, math.Abs(float64(st.logits[int(top[0])])-top[1]))
		}
		if step > bound {
			t.Errorf("prompt %d step %d: the top five logits differ from llama.cpp's by up to %.3g (bound %g)", prompt, k, step, bound)
		}
		if st.next != want[k] {
			if margins[k] >= 2*step {
				t.Errorf("prompt %d step %d: picked %d, llama.cpp %d, whose top two are %.4g apart while the logits differ by %.3g", prompt, k, st.next, want[k], margins[k], step)
			} else {
				t.Logf("prompt %d step %d: picked %d, llama.cpp %d: its top two are %.4g apart, the engines' logits %.3g", prompt, k, st.next, want[k], margins[k], step)
			}
			return
		}
		same++
		st.prompt, st.token, st.pos = nil, want[k], len(ids)+k
		p = pass{}
		p.add(st)
		e.forward(&p)
	}
	return firstDiff
}

// TestGenerateIsTheStepsOfTheTest checks that checkGreedy's steps are
// Generate's: the same ids for a prompt of each architecture.
func TestGenerateIsTheStepsOfTheTest(t *testing.T) {
	for _, arch := range []string{"llama", "qwen2", "qwen3", "gemma3"} {
		m, err := Load(filepath.Join("testdata", "archs", arch+"-f32.gguf"), "")
		if err != nil {
			t.Fatal(err)
		}
		var ref archReference
		raw, err := os.ReadFile(filepath.Join("testdata", "archs", arch+"-f32.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &ref); err != nil {
			t.Fatal(err)
		}
		e := NewEngine(m, 2)
		g, err := e.Generate(context.Background(), ref.Greedy[0].Prompt, 32, Sampling{IgnoreEOS: true}, func(int) {})
		e.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(g.Tokens, ref.Greedy[0].IDs) {
			t.Errorf("%s: Generate gave %v, llama.cpp %v", arch, g.Tokens, ref.Greedy[0].IDs)
		}
	}
}

// TestWhatTheEngineCannotRunIsRefusedByName checks that each key the
// engine reads but cannot run is refused with the key's name and value.
func TestWhatTheEngineCannotRunIsRefusedByName(t *testing.T) {
	base := func() *Weights {
		return &Weights{Shape: Shape{Dim: 256, HiddenDim: 256, Layers: 6, Heads: 4, KVHeads: 1, HeadDim: 64, Vocab: 10, SeqLen: 64}, Layers: make([]Layer, 6)}
	}
	key := func(arch string) func(string) string { return func(k string) string { return arch + "." + k } }
	cases := []struct {
		meta map[string]any
		read func(w *Weights, g *GGUF) error
		want string
	}{
		{map[string]any{"llama.rope.scaling.type": "yarn"}, func(w *Weights, g *GGUF) error { return w.readRope(g, key("llama")) },
			`GGUF llama.rope.scaling.type is "yarn"; the builtin engine runs linear rope scaling and Llama 3's rope_freqs`},
		{map[string]any{"qwen3.rope.dimension_count": uint64(32)}, func(w *Weights, g *GGUF) error { return w.readRope(g, key("qwen3")) },
			"GGUF qwen3.rope.dimension_count is 32, a part of the 64-wide heads; the builtin engine rotates whole heads"},
		{map[string]any{"llama.rope.freq_base": 0.5}, func(w *Weights, g *GGUF) error { return w.readRope(g, key("llama")) },
			"GGUF llama.rope.freq_base is 0.5; rotary embeddings need a base above 1"},
		{map[string]any{"llama.rope.scaling.factor": -2.0}, func(w *Weights, g *GGUF) error { return w.readRope(g, key("llama")) },
			"GGUF llama.rope.scaling.factor is -2; a scaling factor must be positive"},
		{map[string]any{"qwen2.rope.scaling.attn_factor": 1.2}, func(w *Weights, g *GGUF) error { return w.readRope(g, key("qwen2")) },
			"GGUF qwen2.rope.scaling.attn_factor is 1.2; the builtin engine runs rotary embeddings unscaled in size (1)"},
		{map[string]any{"gemma3.attention.sliding_window": uint64(512), "gemma3.attention.sliding_window_pattern": 6.0}, func(w *Weights, g *GGUF) error { return w.readGemma3(g, key("gemma3")) },
			"GGUF gemma3.attention.sliding_window_pattern is a float64; llama.cpp reads an integer period there"},
		{map[string]any{"gemma3.attention.sliding_window": uint64(512), "gemma3.attention.sliding_window_pattern": []any{true, false}}, func(w *Weights, g *GGUF) error { return w.readGemma3(g, key("gemma3")) },
			"GGUF gemma3.attention.sliding_window_pattern lists 2 layers for a model of 6"},
		{map[string]any{"gemma3.attention.sliding_window": uint64(512), "gemma3.attention.sliding_window_pattern": []any{true, false, true, true, true, false}}, func(w *Weights, g *GGUF) error { return w.readGemma3(g, key("gemma3")) },
			"GGUF gemma3.attention.sliding_window_pattern says layer 1 is global; llama.cpp passes over a list there and runs five sliding layers, then a global one"},
		{map[string]any{"gemma3.attention.sliding_window": uint64(512), "gemma3.attention.sliding_window_pattern": int64(-3)}, func(w *Weights, g *GGUF) error { return w.readGemma3(g, key("gemma3")) },
			"GGUF gemma3.attention.sliding_window_pattern is -3; it must not be negative"},
		{map[string]any{"gemma3.final_logit_softcapping": -30.0}, func(w *Weights, g *GGUF) error { return w.readGemma3(g, key("gemma3")) },
			"GGUF gemma3.final_logit_softcapping is -30; a soft cap must be positive"},
		{map[string]any{"qwen3.attention.key_length": uint64(64), "qwen3.attention.value_length": uint64(128)},
			func(w *Weights, g *GGUF) error { return readHeadDim(g, key("qwen3"), &w.Shape) },
			"GGUF qwen3.attention.key_length is 64 and qwen3.attention.value_length 128; the builtin engine runs heads whose keys and values are as wide"},
		{map[string]any{"llama.attention.head_count_kv": []any{uint64(1), uint64(2)}}, func(w *Weights, g *GGUF) error {
			_, err := g.intKey("llama.attention.head_count_kv", false)
			return err
		},
			"GGUF llama.attention.head_count_kv is a list (a value per layer); the builtin engine runs models whose layers are alike"},
	}
	for _, c := range cases {
		if err := c.read(base(), &GGUF{Meta: c.meta}); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.meta, err, c.want)
		}
	}
	w := base()
	if err := w.readGemma3(&GGUF{Meta: map[string]any{"gemma3.attention.sliding_window": uint64(512)}}, key("gemma3")); err != nil || w.Window != 512 || w.SlidingRopeBase != 10000 || !w.GELU {
		t.Errorf("gemma3 defaults: %v %+v", err, w.Arch)
	}
	// The layers each pattern makes sliding (S) or global (G), as
	// llama.cpp's set_swa_pattern makes them; a list that says the
	// default is run as it; without a window llama.cpp reads no pattern
	// and no layer slides.
	windowAnd := func(pattern any) map[string]any {
		return map[string]any{"gemma3.attention.sliding_window": uint64(512), "gemma3.attention.sliding_window_pattern": pattern}
	}
	for _, c := range []struct {
		meta map[string]any
		want string
	}{
		{map[string]any{"gemma3.attention.sliding_window": uint64(512)}, "SSSSSG"},
		{windowAnd(uint64(3)), "SSGSSG"},
		{windowAnd(uint64(0)), "SSSSSS"},
		{windowAnd(uint64(1)), "GGGGGG"},
		{windowAnd([]any{true, true, true, true, true, false}), "SSSSSG"},
		{map[string]any{"gemma3.attention.sliding_window_pattern": []any{false}}, "GGGGGG"},
	} {
		w := base()
		if err := w.readGemma3(&GGUF{Meta: c.meta}, key("gemma3")); err != nil {
			t.Errorf("%v: %v", c.meta, err)
			continue
		}
		got := ""
		for _, layer := range w.Layers {
			got += map[bool]string{true: "S", false: "G"}[layer.Sliding]
		}
		if got != c.want {
			t.Errorf("%v: layers %s, want %s", c.meta, got, c.want)
		}
	}
}

// TestQuantizedEmbeddingIsReadRowByRow checks that a quantized token
// embedding stays as the file stores it (no float32 copy of the
// vocabulary) and that each row looked up is the row dequantized.
func TestQuantizedEmbeddingIsReadRowByRow(t *testing.T) {
	for _, name := range []string{"llama-q8_0", "gemma3-q4_k_m", "qwen3-q4_k_m"} {
		raw, err := os.ReadFile(filepath.Join("testdata", "archs", name+".gguf"))
		if err != nil {
			t.Fatal(err)
		}
		w, _, err := LoadGGUF(raw)
		if err != nil {
			t.Fatal(err)
		}
		if w.Embedding != nil || w.embedRows == nil {
			t.Fatalf("%s: the embedding was dequantized whole", name)
		}
		g, _ := ParseGGUF(raw)
		load := &tensorLoader{g: g, b: raw}
		whole := load.vector("token_embd.weight", w.Shape.Vocab, w.Shape.Dim)
		saved := w.EmbedScale
		w.EmbedScale = 0
		x := make([]float32, w.Shape.Dim)
		for _, token := range []int{0, 1, w.Shape.Vocab / 2, w.Shape.Vocab - 1} {
			w.embed(x, token, nil)
			if !slices.Equal(x, whole[token*w.Shape.Dim:(token+1)*w.Shape.Dim]) {
				t.Errorf("%s: row %d differs from the dequantized table", name, token)
			}
		}
		w.EmbedScale = saved
	}
}

// TestProbeSaysTheArchitectureAndTheContext: the target's details name
// the architecture, and the context allocated where the file's is capped.
func TestProbeSaysTheArchitectureAndTheContext(t *testing.T) {
	b := &Backend{}
	info, err := b.Probe(context.Background(), filepath.Join("testdata", "archs", "gemma3-q8_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if info.Details["architecture"] != "gemma3" || info.ContextTokens != 512 || info.Details["context"] != "" {
		t.Errorf("details %v, context %d", info.Details, info.ContextTokens)
	}
	tok := ByteLevelTokenizer(300)
	long := Synthetic(Shape{Dim: 64, HiddenDim: 64, Layers: 1, Heads: 2, KVHeads: 2, Vocab: 300, SeqLen: 131072}, 1)
	longB := &Backend{}
	info, err = longB.Probe(context.Background(), writeTemp(t, "long.gguf", ggufOf(t, long, spmVocab(tok), every(ggmlF32))))
	if err != nil {
		t.Fatal(err)
	}
	defer longB.Close()
	if info.ContextTokens != ggufContextCap || info.Details["context"] != "4096 tokens allocated of the 131072 the file was trained for" {
		t.Errorf("context %d, details %v", info.ContextTokens, info.Details)
	}
}

// TestATensorTheEngineDoesNotReadIsRefused: a file with a tensor the
// engine would not apply (here a bias on a llama feed-forward, which
// llama.cpp adds) is refused by its name, not run as another model.
func TestATensorTheEngineDoesNotReadIsRefused(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "archs", "llama-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := ParseGGUF(raw)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := loadParsed(g, raw, nil); err != nil {
		t.Fatalf("the file as made: %v", err)
	}
	g.Tensors["blk.1.ffn_down.bias"] = g.Tensors["output_norm.weight"]
	g.Tensors["blk.0.ffn_down.bias"] = g.Tensors["output_norm.weight"]
	_, _, err = loadParsed(g, raw, nil)
	want := `GGUF has 2 tensor(s) the builtin engine's llama does not read, "blk.0.ffn_down.bias" first`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
}

// TestRealVocabulariesMatchLlamaCpp tokenizes four corpora (the
// architecture tests' strings, llama.cpp's own tokenizer test inputs,
// 1,500 mixed strings, and 22 of the text llama.cpp recognises tokens by,
// typed) with the real vocabularies of Llama 3.2, Qwen2.5,
// Qwen3 and Gemma 3, and holds every string's ids to llama.cpp's, the
// tokens that end a generation to llama.cpp's set, and every token's text
// to what llama.cpp prints for it. The
// vocabularies (6–8 MB each, vocabulary-only GGUFs) and llama.cpp's ids
// are made by testdata/vocabs/make.sh into the folder
// $TOKENTOP_VOCAB_FILES; without it, it does nothing.
func TestRealVocabulariesMatchLlamaCpp(t *testing.T) {
	dir := os.Getenv("TOKENTOP_VOCAB_FILES")
	if dir == "" {
		t.Skip("set TOKENTOP_VOCAB_FILES to a folder made by testdata/vocabs/make.sh")
	}
	corpora := map[string]string{
		"strings":  filepath.Join("testdata", "archs", "strings.jsonl"),
		"llamacpp": filepath.Join("testdata", "vocabs", "llamacpp.jsonl"),
		"mixed":    filepath.Join("testdata", "vocabs", "mixed.jsonl"),
		"special":  filepath.Join("testdata", "vocabs", "special.jsonl"),
	}
	for _, name := range []string{"llama3_2", "qwen2_5", "qwen3", "gemma3"} {
		t.Run(name, func(t *testing.T) {
			tok := tokenizerOfFile(t, filepath.Join(dir, name+".gguf"))
			for corpus, path := range corpora {
				strs := readJSONLines(t, path)
				var ref archReference
				reference := filepath.Join(dir, name+"-"+corpus+".json")
				raw, err := os.ReadFile(reference)
				if err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(raw, &ref); err != nil {
					t.Fatalf("%s: %v", reference, err)
				}
				if len(ref.Tokenize) != len(strs) {
					t.Fatalf("%s has the ids of %d strings, %s %d: remake it (make.sh)", reference, len(ref.Tokenize), path, len(strs))
				}
				differ := 0
				for i, want := range ref.Tokenize {
					if got := tok.Encode(strs[i], true); !slices.Equal(got, want) {
						differ++
						t.Errorf("%s %q: ids %v, llama.cpp's %v", corpus, strs[i], got, want)
					}
				}
				t.Logf("%s: %d of %d strings as llama.cpp tokenizes them", corpus, len(strs)-differ, len(strs))
				if !slices.Equal(tok.stops, ref.EOG) {
					t.Errorf("the engine ends a generation at %v, llama.cpp at %v", tok.stops, ref.EOG)
				}
			}
			pieces, err := os.ReadFile(filepath.Join(dir, name+"-pieces.txt"))
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(string(pieces), "\n"), "\n")
			if len(lines) != len(tok.Pieces) {
				t.Fatalf("%s-pieces.txt has %d tokens, the vocabulary %d: remake it (make.sh)", name, len(lines), len(tok.Pieces))
			}
			differ := 0
			for id, line := range lines {
				want, err := hex.DecodeString(line)
				if err != nil {
					t.Fatalf("%s-pieces.txt line %d: %v", name, id+1, err)
				}
				if got := tok.Decode(-1, id); got != string(want) {
					if differ++; differ <= 10 {
						t.Errorf("token %d prints %q, llama.cpp %q", id, got, want)
					}
				}
			}
			t.Logf("%d of %d tokens print as llama.cpp prints them", len(lines)-differ, len(lines))
		})
	}
}

// tokenizerOfFile is the tokenizer of the GGUF file at path (a vocabulary
// alone will do).
func tokenizerOfFile(tb testing.TB, path string) *Tokenizer {
	tb.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	g, err := ParseGGUF(raw)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	tok, err := ggufTokenizer(g)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return tok
}

// TestEndOfGenerationIsLlamaCppsSet checks the end-of-generation rules
// the real vocabularies do not all exercise: fill-in-the-middle tokens by
// key or by text, a normal token's "</s>", the EOS a sentencepiece file
// names replacing the default 2, never BOS, and llama.cpp's two
// exceptions.
func TestEndOfGenerationIsLlamaCppsSet(t *testing.T) {
	cases := []struct {
		name  string
		model string
		texts []string
		meta  map[string]any
		want  []int
	}{
		{"qwen: fim by text, </s> a normal token", "gpt2",
			[]string{"a", "</s>", "<|endoftext|>", "<|im_end|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<|im_start|>"},
			map[string]any{"tokenizer.ggml.bos_token_id": uint64(2), "tokenizer.ggml.eos_token_id": uint64(3)}, []int{1, 2, 3, 4, 5, 6}},
		{"fim by key, not by text", "gpt2", []string{"a", "<|fim_pad|>", "b", "c"},
			map[string]any{"tokenizer.ggml.fim_pad_token_id": uint64(2), "tokenizer.ggml.eos_token_id": uint64(3)}, []int{2, 3}},
		{"sentencepiece: the file's EOS, not 2; not BOS", "llama", []string{"<unk>", "<s>", "x", "<end_of_turn>"},
			map[string]any{"tokenizer.ggml.bos_token_id": uint64(1), "tokenizer.ggml.eos_token_id": uint64(3)}, []int{3}},
		{"sentencepiece without an EOS key", "llama", []string{"<unk>", "<s>", "</s>", "y"}, map[string]any{}, []int{2}},
		{"gpt-oss: <|end|> does not end", "gpt2", []string{"<|end|>", "<|return|>", "<|call|>", "z"}, map[string]any{}, []int{1, 2}},
		{"Gemma 4: </s> does not end", "gpt2", []string{"</s>", "<|tool_response>", "w"}, map[string]any{}, []int{1}},
	}
	for _, c := range cases {
		got, err := recogniseByText(&GGUF{Meta: c.meta}, c.model, c.texts, nil)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: %v %v, want %v", c.name, got, err, c.want)
		}
	}
	if _, err := recogniseByText(&GGUF{Meta: map[string]any{"tokenizer.ggml.eot_token_id": uint64(9)}}, "gpt2", []string{"a"}, nil); err == nil ||
		!strings.Contains(err.Error(), "tokenizer.ggml.eot_token_id is 9, outside the 1-token vocabulary") {
		t.Errorf("an id past the vocabulary: %v", err)
	}
}

// TestSpecialTokensAsLlamaCppTakesThem: a prompt ends with EOS where the
// file's add_eos_token says so, and a file that names no BOS or EOS gets
// llama.cpp's defaults for its kind of vocabulary.
func TestSpecialTokensAsLlamaCppTakesThem(t *testing.T) {
	meta := map[string]any{
		"tokenizer.ggml.model":            "llama",
		"tokenizer.ggml.tokens":           []any{"<unk>", "<s>", "</s>", "a", "b", "ab"},
		"tokenizer.ggml.scores":           []any{0.0, 0.0, 0.0, -1.0, -1.0, -0.5},
		"tokenizer.ggml.add_space_prefix": false,
		"tokenizer.ggml.add_eos_token":    true,
	}
	tok, err := ggufTokenizer(&GGUF{Meta: meta})
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Encode("ab", true); !slices.Equal(got, []int{1, 5, 2}) {
		t.Errorf("with special tokens: %v, want [1 5 2]", got)
	}
	if got := tok.Encode("ab", false); !slices.Equal(got, []int{5}) {
		t.Errorf("without: %v, want [5]", got)
	}
	for _, c := range []struct {
		model, name string
		n, want     int
		ok          bool
	}{{"gpt2", "bos", 100, 11, true}, {"gpt2", "eos", 100, 11, true}, {"gpt2", "eos", 5, 11, false}, {"llama", "bos", 5, 1, true}, {"llama", "eos", 5, 2, true}} {
		if id, ok, err := specialToken(&GGUF{Meta: map[string]any{}}, c.model, c.name, c.n); id != c.want || ok != c.ok || err != nil {
			t.Errorf("%s %s of %d tokens: %d %v %v, want %d %v", c.model, c.name, c.n, id, ok, err, c.want, c.ok)
		}
	}
	meta["tokenizer.ggml.tokens"] = []any{"a", "b"}
	meta["tokenizer.ggml.scores"] = []any{0.0, 0.0}
	if _, err := ggufTokenizer(&GGUF{Meta: meta}); err == nil || !strings.Contains(err.Error(), "asks for a token the vocabulary lacks") {
		t.Errorf("add_eos_token without an EOS: %v", err)
	}
}

// TestTypedTextAsLlamaCppReadsIt: in a sentencepiece vocabulary a typed ▁
// is a space, a token stored with a literal space is taken whole from the
// text but never merged to, and a user-defined token llama.cpp recognises
// as an end token ("</s>", as in Gemma's vocabulary) is no longer taken
// whole, and ends a generation; control and unknown tokens print nothing.
func TestTypedTextAsLlamaCppReadsIt(t *testing.T) {
	const normal, unknown, control, user = int64(1), int64(2), int64(3), int64(4)
	tokens := []any{"<pad>", "<eos>", "<bos>", "<unk>", "x", "\u2581", "  ", "<", "/", "s", ">", "</s>"}
	types := []any{control, control, control, unknown, normal, normal, user, normal, normal, normal, normal, user}
	scores := make([]any, len(tokens))
	for i := range scores {
		scores[i] = -float64(i)
	}
	tok, err := ggufTokenizer(&GGUF{Meta: map[string]any{
		"tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": tokens, "tokenizer.ggml.token_type": types,
		"tokenizer.ggml.scores": scores, "tokenizer.ggml.add_space_prefix": false, "tokenizer.ggml.bos_token_id": uint64(2),
		"tokenizer.ggml.eos_token_id": uint64(1),
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		text string
		want []int
	}{
		{"\u2581\u2581x", []int{5, 5, 4}}, // typed marks: spaces, and not the stored "  "
		{"  x", []int{6, 4}},              // two spaces: the user-defined token, whole
		{"x</s>", []int{4, 7, 8, 9, 10}},  // "</s>" ends generations, so it is text
	} {
		if got := tok.Encode(c.text, false); !slices.Equal(got, c.want) {
			t.Errorf("%q: %v, want %v", c.text, got, c.want)
		}
	}
	if !slices.Equal(tok.stops, []int{1, 11}) {
		t.Errorf("ends at %v, want [1 11]", tok.stops)
	}
	// printed as llama.cpp prints them without special tokens
	for id, want := range map[int]string{1: "", 3: "", 11: "", 6: "  ", 5: " ", 4: "x"} {
		if got := tok.Decode(-1, id); got != want {
			t.Errorf("token %d prints %q, want %q", id, got, want)
		}
	}
}

// TestTokenTextsAsLlamaCppLoadsThem: an empty token text is named
// "[EMPTY_id]", as llama.cpp's loader names it, in both kinds of
// vocabulary; a text given to two tokens is refused by name and ids, as
// llama.cpp stops on it.
func TestTokenTextsAsLlamaCppLoadsThem(t *testing.T) {
	bytes := make([]any, 0, 256)
	for _, r := range byteRunes {
		bytes = append(bytes, string(r))
	}
	vocabularies := map[string]map[string]any{
		"llama": {"tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": []any{"<unk>", "<s>", "</s>", "", "a", "b"},
			"tokenizer.ggml.scores": []any{0.0, 0.0, 0.0, 0.0, -1.0, -1.0}},
		"gpt2": {"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.tokens": append(slices.Clone(bytes), "", "ab"),
			"tokenizer.ggml.merges": []any{"a b"}, "tokenizer.ggml.pre": "llama-bpe"},
	}
	for model, meta := range vocabularies {
		tokens := meta["tokenizer.ggml.tokens"].([]any)
		empty := slices.Index(tokens, any(""))
		tok, err := ggufTokenizer(&GGUF{Meta: meta})
		if err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		want := "[EMPTY_" + strconv.Itoa(empty) + "]"
		if got := tok.Decode(-1, empty); got != want {
			t.Errorf("%s: the empty token prints %q, want %q", model, got, want)
		}
		tokens[len(tokens)-1] = "a"
		wantErr := fmt.Sprintf(`has "a" as token %d and again as token %d`, slices.Index(tokens, any("a")), len(tokens)-1)
		if _, err := ggufTokenizer(&GGUF{Meta: meta}); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s: a repeated text: %v, want an error that %s", model, err, wantErr)
		}
	}
}
