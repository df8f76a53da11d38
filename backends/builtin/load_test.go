package builtin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tokentop/tokentop/backends"
)

func TestBadModelFilesFailBeforeAnyTrial(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, data, 0o644)
		return p
	}
	gguf, err := os.ReadFile(sharedModel(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	otherArch := append([]byte(nil), gguf...)
	archAt := bytes.Index(otherArch, []byte("general.architecture"))
	archAt += bytes.Index(otherArch[archAt:], []byte("llama"))
	copy(otherArch[archAt:], "gpt2\x00")
	// Retype the first tensor (token_embd.weight, 64 wide) as IQ2_XXS,
	// then Q4_K: its type field sits 12 bytes after its dims in the directory.
	retyped := func(typ uint32) []byte {
		b := append([]byte(nil), gguf...)
		at := bytes.Index(b, []byte("token_embd.weight")) + len("token_embd.weight") + 4 + 16
		binary.LittleEndian.PutUint32(b[at:], typ)
		return b
	}
	cases := []struct{ model, want string }{
		{filepath.Join(dir, "nope.bin"), "model file: stat " + filepath.Join(dir, "nope.bin") + ": no such file or directory"},
		{write("cut.bin", stories260K[:len(stories260K)/2]), "cut.bin: checkpoint is truncated"},
		{write("tiny.bin", []byte{1, 2}), "tiny.bin: file is 2 bytes, shorter than a llama2.c header"},
		{write("noise.bin", bytes.Repeat([]byte{0xff}, 64)), "noise.bin: not a llama2.c checkpoint"},
		{write("cut.gguf", gguf[:len(gguf)-1000]), "cut.gguf: tensor blk.4.ffn_norm.weight runs past the end of the file"},
		{write("header.gguf", gguf[:100]), "header.gguf: metadata array of 512 elements does not fit in the file (truncated?)"},
		{write("gpt2.gguf", otherArch), `gpt2.gguf: GGUF general.architecture is "gpt2"; the builtin engine runs gemma3, llama, qwen2, qwen3`},
		{write("iq2.gguf", retyped(16)), "iq2.gguf: tensor token_embd.weight is IQ2_XXS; the builtin engine reads F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K (requantize with llama-quantize, e.g. to Q4_K_M)"},
		{write("odd.gguf", retyped(99)), "odd.gguf: tensor token_embd.weight is type 99; the builtin engine reads"},
		{write("q4k.gguf", retyped(12)), "q4k.gguf: tensor token_embd.weight: Q4_K rows of 64 values, not a multiple of its 256-weight block"},
		{dir, dir + " is a folder; name the checkpoint in it"},
		{"stories7B-synthetic", `no synthetic shape "stories7B-synthetic"`},
		{"llama3", `unknown builtin model "llama3"`},
	}
	for _, c := range cases {
		if _, err := Load(c.model, "f32"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", filepath.Base(c.model), err, c.want)
		}
	}
	if _, err := Load(DefaultModel, "int4"); err == nil || !strings.Contains(err.Error(), "use one of f32, q8_0") {
		t.Errorf("bad dtype: %v", err)
	}
	if err := checkMemory("huge", 1<<62); err == nil || !strings.Contains(err.Error(), "model huge needs") {
		t.Errorf("memory check: %v", err)
	}
}

func TestLlama2cCheckpointFromDiskWithTokenizerBeside(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.bin")
	os.WriteFile(path, stories260K, 0o644)
	if _, err := Load(path, "f32"); err == nil || !strings.Contains(err.Error(), "no tokenizer.bin beside it") {
		t.Fatalf("checkpoint without its tokenizer: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "tok512.bin"), tok512, 0o644)
	m, err := Load(path, "f32")
	if err != nil {
		t.Fatal(err)
	}
	if want := sha256.Sum256(stories260K); m.Source != path || m.SHA256 != hex.EncodeToString(want[:]) || len(m.Tokenizer.Pieces) != 512 {
		t.Errorf("%+v", m)
	}
	e := NewEngine(m, 1)
	defer e.Close()
	if got, want := llama2cText(t, e, "The cat sat", 200), fixture(t, "stories260K_greedy_n200_The_cat_sat.txt"); got != want {
		t.Errorf("mmapped checkpoint differs from llama2.c:\n%q", got)
	}
}

func TestSyntheticShapesRunAndAreDeterministic(t *testing.T) {
	// Large enough that every matrix fans out across threads (see minParallelFlops).
	shape := Shape{Dim: 256, HiddenDim: 512, Layers: 2, Heads: 8, KVHeads: 4, Vocab: 300, SeqLen: 64}
	run := func(threads int, q8 bool) []int {
		w := Synthetic(shape, 9)
		if q8 {
			if kept := w.quantize(); kept != nil {
				t.Fatalf("kept %v of a shape of whole blocks", kept)
			}
		}
		e := NewEngine(&Model{Weights: w, Tokenizer: ByteLevelTokenizer(shape.Vocab)}, threads)
		defer e.Close()
		g, err := e.Generate(context.Background(), e.Model.Tokenizer.Encode("any prompt works", true), 20, Sampling{}, func(int) {})
		if err != nil {
			t.Fatal(err)
		}
		return g.Tokens
	}
	a, b := run(1, false), run(2, false)
	if len(a) != 20 {
		t.Fatalf("generated %d tokens", len(a))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("threads change greedy output: %v vs %v", a, b)
		}
	}
	q1, q2 := run(1, true), run(2, true)
	for i := range q1 {
		if q1[i] != q2[i] {
			t.Fatalf("threads change Q8_0 greedy output: %v vs %v", q1, q2)
		}
	}
}

func TestBackendAdapter(t *testing.T) {
	b, _ := Kind.New(backends.Config{Threads: 1})
	defer b.(*Backend).Close()
	info, err := b.Probe(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if info.Model != DefaultModel || info.Details["weights"] != "embedded" || info.Details["threads"] != "1" || info.Quantization != "f32" {
		t.Errorf("info %+v", info)
	}
	chunks := 0
	res, err := b.Generate(context.Background(), backends.Request{Prompt: "Once upon a time", MaxTokens: 10}, func(n int, _ backends.TokenKind) { chunks += n })
	if err != nil || chunks != 10 || res.OutputTokens != 10 || res.PromptTokens != 5 || res.StopReason != "length" || res.ServerDecodeMs <= 0 {
		t.Errorf("%+v %v chunks %d", res, err, chunks)
	}
	ctx, cancel := context.WithCancel(context.Background())
	chunks = 0
	_, err = b.Generate(ctx, backends.Request{Prompt: "Once", MaxTokens: 100}, func(int, backends.TokenKind) {
		chunks++
		if chunks == 3 {
			cancel()
		}
	})
	if err == nil || chunks != 3 {
		t.Errorf("cancel: %v after %d tokens", err, chunks)
	}
	if _, err := b.Probe(context.Background(), "stories15M-synthetic"); err != nil {
		t.Fatal(err)
	}
	info, _ = b.Probe(context.Background(), "stories15M-synthetic")
	if !strings.Contains(info.Details["weights"], "synthetic weights, meaningless text") || !strings.Contains(info.Details["shape"], "dim 288") {
		t.Errorf("synthetic info %+v", info.Details)
	}
}

func TestTokenizerRoundTrip(t *testing.T) {
	tok, _ := ParseTokenizerBin(tok512, 512)
	text := "Lily's mom said, \"Let's go!\" ☃"
	ids := tok.Encode(text, true)
	var b strings.Builder
	for i := 1; i < len(ids); i++ {
		b.WriteString(tok.Decode(ids[i-1], ids[i]))
	}
	if b.String() != text {
		t.Errorf("round trip: %q", b.String())
	}
	if got := tok.Encode("", true); len(got) != 1 || got[0] != tokenBOS {
		t.Errorf("empty prompt: %v", got)
	}
	bl := ByteLevelTokenizer(300)
	if ids := bl.Encode("hé", false); len(ids) != 3 || bl.Decode(0, ids[0]) != "h" {
		t.Errorf("byte-level: %v", ids)
	}
}

func FuzzParseGGUF(f *testing.F) {
	gguf, err := os.ReadFile(sharedModel(f, "stories260K.gguf"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(gguf[:16000])
	f.Add([]byte("GGUF\x03\x00\x00\x00"))
	// biases, head norms, post norms, a window and a layer period;
	// halves and bfloat16s
	for _, name := range []string{"qwen2-q8_0", "gemma3-q8_0", "gemma3-period-f32", "qwen3-f16", "llama-bf16"} {
		arch, err := os.ReadFile(filepath.Join("testdata", "archs", name+".gguf"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(arch)
	}
	for _, seed := range kFuzzSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := ParseGGUF(data)
		if err == nil && g.DataOffset < 24 {
			t.Fatalf("data offset %d inside the fixed header", g.DataOffset)
		}
		// Loading must fail cleanly or produce a model that validates.
		if w, _, err := LoadGGUF(data); err == nil {
			if err := w.Shape.Validate(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func FuzzParseLlama2cHeader(f *testing.F) {
	f.Add(stories260K[:64])
	f.Add(make([]byte, 28))
	f.Fuzz(func(t *testing.T, data []byte) {
		shape, _, err := ParseLlama2cHeader(data)
		if err == nil && shape.Validate() != nil {
			t.Fatalf("accepted invalid shape %s", shape)
		}
		if err == nil {
			if _, err := LoadLlama2c(data); err == nil && int64(len(data)) < shape.Params(true)*4 {
				t.Fatalf("loaded %d bytes for a shape that needs more", len(data))
			}
		}
	})
}

// The phase split's axis is what decode reads per token, in 10⁶ bytes:
// of the embedding table only the token's row (Q8_0 keeps the table in
// f32 beside the quantized classifier, so the weights in memory are
// three times what decode reads).
func TestDecodeReadIsWhatATokenReads(t *testing.T) {
	b, _ := Kind.New(backends.Config{Threads: 1, DType: "q8_0"})
	defer b.(*Backend).Close()
	info, err := b.Probe(context.Background(), "stories15M-synthetic")
	if err != nil {
		t.Fatal(err)
	}
	read, err1 := strconv.ParseFloat(info.Details["decode_read_mb"], 64)
	memory, err2 := strconv.ParseFloat(info.Details["weight_mb"], 64)
	want := float64(b.(*Backend).engine.Model.Weights.BytesPerToken()) / 1e6
	if err1 != nil || err2 != nil || math.Abs(read-want) > 0.001 || !(read < memory*(1<<20)/1e6/2) {
		t.Errorf("decode reads %v MB of %v MiB in memory (want %.3f MB): %v %v", read, memory, want, err1, err2)
	}
}

// The probe names the width f32 prompts run at where a timing chose it
// (AVX-512 CPUs) and the model has f32 matrices (or 16-bit ones, whose
// widening kernels take the same width), Q4_0's where one chose it
// (AVX-512 VNNI) and the model has Q4_0 matrices, BF16's kernel where
// one chose it (AVX512_BF16) and the model has BF16 matrices, and nowhere
// else: a model without such matrices never meets that kernel.
func TestProbeNamesThePromptWidthsWhereTheyApply(t *testing.T) {
	q4 := writeTemp(t, "q4.gguf", ggufOf(t, Synthetic(q8Shape, 5), spmVocab(ByteLevelTokenizer(q8Shape.Vocab)), every(ggmlQ4_0)))
	iq4 := writeTemp(t, "iq4.gguf", ggufOf(t, Synthetic(q8Shape, 5), spmVocab(ByteLevelTokenizer(q8Shape.Vocab)), every(ggmlIQ4_NL)))
	bf16 := filepath.Join("testdata", "archs", "qwen2-bf16.gguf")
	for _, c := range []struct {
		model, dtype string
		has          []string
	}{
		{"stories15M-synthetic", "f32", []string{"f32"}},
		{"stories15M-synthetic", "q8_0", []string{"q8_0"}},
		{q4, "", []string{"q4_0"}},
		{iq4, "", []string{"iq4_nl"}},
		{bf16, "", []string{"f32", "bf16"}},
		{bf16, "f32", []string{"f32"}},
	} {
		b, _ := Kind.New(backends.Config{Threads: 1, DType: c.dtype})
		info, err := b.Probe(context.Background(), c.model)
		b.(*Backend).Close()
		if err != nil {
			t.Fatal(err)
		}
		for key, kernel := range map[string]string{"f32_prompt_kernel": F32PromptKernel(), "q4_0_prompt_kernel": Q4_0PromptKernel(), "iq4_nl_prompt_kernel": IQ4_NLPromptKernel(), "bf16_prompt_kernel": BF16PromptKernel()} {
			got, named := info.Details[key]
			if want := kernel != "" && slices.Contains(c.has, strings.TrimSuffix(key, "_prompt_kernel")); named != want || named && got != kernel {
				t.Errorf("%v matrices: %s %q (named %v), want named %v", c.has, key, got, named, want)
			}
		}
	}
}

// The probe names what the KV cache keeps, and a stream keeps it: floats
// for f32 weights, halves for 16-bit and quantized ones, in either build
// (one without the tile kernels widens an F16 file's halves into floats).
func TestProbeNamesTheKVCache(t *testing.T) {
	archs := filepath.Join("testdata", "archs")
	for _, c := range []struct{ model, dtype, want string }{
		{"stories15M-synthetic", "f32", "f32"},
		{"stories15M-synthetic", "q8_0", "f16"},
		{filepath.Join(archs, "llama-f32.gguf"), "", "f32"},
		{filepath.Join(archs, "llama-f16.gguf"), "", "f16"},
		{filepath.Join(archs, "qwen2-bf16.gguf"), "", "f16"},
		{filepath.Join(archs, "qwen2-bf16.gguf"), "f32", "f32"},
	} {
		b, _ := Kind.New(backends.Config{Threads: 1, DType: c.dtype})
		info, err := b.Probe(context.Background(), c.model)
		if err != nil {
			t.Fatal(err)
		}
		kept := NewState(b.(*Backend).engine.Model.Weights).cache.format()
		b.(*Backend).Close()
		if info.Details["kv_cache"] != c.want || kept != c.want {
			t.Errorf("%s as %q: kv_cache %q, a stream keeps %s; want %s", c.model, c.dtype, info.Details["kv_cache"], kept, c.want)
		}
	}
}

// --dtype q8_0 on stories260K, whose 172-wide matrices are not whole
// Q8_0 blocks, keeps those as stored, as llama-quantize does, quantizes
// the rest, and says which in the probe's details; it still generates.
func TestQ8OfAModelWithOddRowsKeepsThemAsTheyAre(t *testing.T) {
	m, err := Load(DefaultModel, "q8_0")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.KeptAsIs) != 5 || m.KeptAsIs[0] != "layers.0.w2 64×172" || m.Weights.Format() != "q8_0 ×31, f32 ×5" {
		t.Fatalf("kept %v, format %s", m.KeptAsIs, m.Weights.Format())
	}
	b := &Backend{}
	info, err := b.Probe(context.Background(), DefaultModel)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if info.Details["kept_as_is"] != "" {
		t.Errorf("f32 kept %q", info.Details["kept_as_is"])
	}
	q8 := &Backend{cfg: backends.Config{DType: "q8_0"}}
	info, err = q8.Probe(context.Background(), DefaultModel)
	if err != nil {
		t.Fatal(err)
	}
	defer q8.Close()
	if !strings.HasPrefix(info.Details["kept_as_is"], "5 matrices stay as stored, their rows not a whole number of 32-weight blocks: layers.0.w2 64×172, layers.1.w2 64×172") {
		t.Errorf("details %q", info.Details["kept_as_is"])
	}
	res, err := q8.Generate(context.Background(), backends.Request{Prompt: "Once upon a time", MaxTokens: 16}, func(int, backends.TokenKind) {})
	if err != nil || res.OutputTokens < 1 {
		t.Errorf("generated %+v %v", res, err)
	}
}

// The checksum runs beside the loading: it must still be the file's, and
// a load that fails must not leave it reading the file.
func TestLoadChecksumsTheFileBesideTheLoading(t *testing.T) {
	path := filepath.Join("testdata", "archs", "qwen2-f32.gguf")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(data)
	m, err := Load(path, "")
	if err != nil {
		t.Fatal(err)
	}
	if m.SHA256 != hex.EncodeToString(want[:]) {
		t.Errorf("checksum %s, the file's is %x", m.SHA256, want)
	}

	// A file whose header is refused at once, long enough (256 MiB, a
	// sparse file) that its checksum would still be reading when the
	// load returns, were it not stopped.
	refused := filepath.Join(t.TempDir(), "refused.gguf")
	if err := os.WriteFile(refused, []byte("not a GGUF header"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(refused, 256<<20); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(refused, ""); err == nil || !strings.Contains(err.Error(), refused) {
		t.Fatalf("a file that is no GGUF: %v", err)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd to list the open files in")
	}
	for _, fd := range fds {
		if target, _ := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); target == refused {
			t.Errorf("the refused file is still open (fd %s) after its load returned", fd.Name())
		}
	}
}
