package builtin

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/tokentop/tokentop/backends"
)

// Pages handed back come back from the file, unchanged, when read again;
// within finds rows inside the mapping and nothing outside it.
func TestReleasedPagesReadBackFromTheFile(t *testing.T) {
	want := make([]byte, 5*os.Getpagesize()+123)
	for i := range want {
		want[i] = byte(i*7 + i/4096)
	}
	path := filepath.Join(t.TempDir(), "weights")
	if err := os.WriteFile(path, want, 0o600); err != nil {
		t.Fatal(err)
	}
	mapped, err := mapFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows := unsafe.Slice((*float32)(unsafe.Pointer(&mapped[100])), 1000)
	part := within(mapped, bytesOf(rows))
	if len(part) != 4000 || &part[0] != &mapped[100] {
		t.Fatalf("within: %d bytes from offset %d, want 4000 from 100", len(part), uintptr(unsafe.Pointer(&part[0]))-uintptr(unsafe.Pointer(&mapped[0])))
	}
	if outside := make([]byte, 10); within(mapped, outside) != nil || within(nil, bytesOf(rows)) != nil {
		t.Error("within found rows outside the mapping")
	}
	releasePages(part)
	releasePages(mapped)
	if !slices.Equal(mapped, want) {
		t.Error("the file's bytes differ after their pages were handed back")
	}
}

// foliosAround widens a part of the mapping to the huge pages around it,
// and never past the mapping's ends.
func TestFoliosAroundStaysInTheMapping(t *testing.T) {
	buf := make([]byte, 5*hugePageBytes)
	base := uintptr(unsafe.Pointer(&buf[0]))
	offsetOf := func(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) - base }
	// An inner part widens to the huge pages around it; one near an end
	// stops at that end.
	for _, part := range [][2]int{{hugePageBytes + 10, 3*hugePageBytes - 10}, {5, 20}, {len(buf) - 20, len(buf) - 5}, {0, len(buf)}} {
		got := foliosAround(buf, buf[part[0]:part[1]])
		start, end := offsetOf(got), offsetOf(got)+uintptr(len(got))
		if start > uintptr(part[0]) || end < uintptr(part[1]) || end > uintptr(len(buf)) {
			t.Fatalf("part %v: widened to [%d, %d), not around it within [0, %d)", part, start, end, len(buf))
		}
		if (base+start)%hugePageBytes != 0 && start != 0 || (base+end)%hugePageBytes != 0 && end != uintptr(len(buf)) {
			t.Errorf("part %v: widened to [%d, %d), which ends inside a huge page", part, start, end)
		}
	}
	if foliosAround(buf, nil) != nil {
		t.Error("nothing widened to something")
	}
}

// A model loaded from a file keeps no view of it but what its kernels
// read in place: its norms are copies, and its embedding is read through
// the file a row at a time, the same rows as the file read into memory.
func TestLoadedModelReadsItsEmbeddingThroughTheFile(t *testing.T) {
	for _, name := range []string{"llama-f32", "llama-q8_0", "qwen3-q4_k_m", "gemma3-q8_0"} {
		m, inMemory := loadBothWays(t, filepath.Join("testdata", "archs", name+".gguf"))
		w := m.Weights
		if w.Embedding != nil || w.embedRows == nil || w.embedRows.file == nil {
			t.Fatalf("%s: the embedding is not read through the file", name)
		}
		for i, v := range w.vectors() {
			if within(m.mapped, bytesOf(*v)) != nil {
				t.Errorf("%s: vector %d is still a view of the mapped file", name, i)
			}
		}
		got, want := make([]float32, w.Shape.Dim), make([]float32, w.Shape.Dim)
		for _, token := range []int{0, 1, w.Shape.Vocab / 2, w.Shape.Vocab - 1} {
			w.embed(got, token, nil)
			inMemory.embed(want, token, nil)
			if !slices.Equal(got, want) {
				t.Errorf("%s: row %d read through the file differs from the file's bytes in memory", name, token)
			}
		}
		if err := w.embedRows.readErr(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A closed backend closes the weights file its embedding was read
// through: a session comparing several files holds none of them open.
func TestClosedBackendClosesTheWeightsFile(t *testing.T) {
	b, _ := Kind.New(backends.Config{Threads: 1})
	if _, err := b.Probe(t.Context(), filepath.Join("testdata", "archs", "llama-q8_0.gguf")); err != nil {
		t.Fatal(err)
	}
	f := b.(*Backend).engine.Model.Weights.embedRows.file.f
	b.(*Backend).Close()
	if _, err := f.Stat(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("after Close the weights file answers Stat with %v, want it closed", err)
	}
}

// loadBothWays loads path as tokentop runs it (Load: mapped, its pages
// handed back) and as bytes read whole into memory (LoadGGUF).
func loadBothWays(tb testing.TB, path string) (*Model, *Weights) {
	tb.Helper()
	m, err := Load(path, "")
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	inMemory, _, err := LoadGGUF(raw)
	if err != nil {
		tb.Fatal(err)
	}
	return m, inMemory
}

// A weights file cut short while its model is loaded fails the next
// generation with an error naming it; nothing crashes.
func TestAFileCutWhileLoadedFailsTheGeneration(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "archs", "llama-q8_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "model.gguf")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := Load(path, "")
	if err != nil {
		t.Fatal(err)
	}
	e := NewEngine(m, 1)
	defer e.Close()
	prompt := m.Tokenizer.Encode("Hello", true)
	if _, err := e.Generate(t.Context(), prompt, 4, Sampling{}, func(int) {}); err != nil {
		t.Fatalf("before the cut: %v", err)
	}
	if err := os.Truncate(path, 1024); err != nil {
		t.Fatal(err)
	}
	_, err = e.Generate(t.Context(), prompt, 4, Sampling{}, func(int) {})
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "changed") {
		t.Errorf("after the cut: %v, want an error naming %s and asking whether it changed", err, path)
	}
}

// An F16 or BF16 file runs from its halves: loaded as tokentop loads it,
// every matrix is laid out from the file as tiles of halves where this
// build has tiles (else widened into rows), with no float copy of the
// embedding, whose rows are read through the file; its streams keep
// their caches as halves, as a quantized file's do (and as floats with
// --dtype f32); and it computes what an f32 file of the same weights
// (rounded to halves) computes with that cache, logit for logit, as it
// runs and with --dtype q8_0 or f32: a BF16 file's products reading their
// inputs rounded to bfloat16 (as it runs, and its matrices --dtype q8_0
// leaves), which the f32 file's matching matrices are then told to do.
func TestHalvesFileRunsAsTheSameWeightsInF32(t *testing.T) {
	// stories260K's shape, whose w2 (172 columns) stays f32 under q8_0
	shape := Shape{Dim: 64, HiddenDim: 172, Layers: 2, Heads: 8, KVHeads: 4, Vocab: 512, SeqLen: 64}
	vocab := spmVocab(ByteLevelTokenizer(shape.Vocab))
	prompt := []int{1, 40, 41, 42, 43}
	for _, typ := range []uint32{ggmlF16, ggmlBF16} {
		kind := halfOf(typ)
		w := Synthetic(shape, 5)
		for _, v := range append([][]float32{w.Embedding}, matricesF32(w)...) {
			for i := range v {
				bits := halfBits(kind, v[i])
				kind.widen(v[i:i+1], []byte{byte(bits), byte(bits >> 8)})
			}
		}
		dir := t.TempDir()
		paths := map[uint32]string{typ: filepath.Join(dir, "halves.gguf"), ggmlF32: filepath.Join(dir, "f32.gguf")}
		for typ, path := range paths {
			if err := os.WriteFile(path, ggufOf(t, w, vocab, every(typ)), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		name := kind.String()
		formats := map[string]string{"": name, "q8_0": "q8_0 ×13, " + name + " ×2", "f32": "f32"}
		if f32TileGroup == 1 { // rows, not tiles: the halves widen
			formats = map[string]string{"": "f32", "q8_0": "q8_0 ×13, f32 ×2", "f32": "f32"}
		}
		for dtype, format := range formats {
			half, err := Load(paths[typ], dtype)
			if err != nil {
				t.Fatal(err)
			}
			for i, m := range half.Weights.matrices() {
				if (*m).halves != nil || (*m).F32 == nil && (*m).tiles == nil && !(*m).Quantized() {
					t.Fatalf("%s, dtype %q: matrix %d is not laid out", name, dtype, i)
				}
			}
			if got := half.Weights.Format(); got != format {
				t.Errorf("%s, dtype %q: the file runs as %q, want %q", name, dtype, got, format)
			}
			if rows := half.Weights.embedRows; half.Weights.Embedding != nil || rows == nil || rows.file == nil {
				t.Fatalf("%s, dtype %q: the embedding is not read through the file", name, dtype)
			}
			full, err := Load(paths[ggmlF32], dtype)
			if err != nil {
				t.Fatal(err)
			}
			cache := cacheFormat(half.Weights)
			unrounded := greedyLogits(full, prompt, 1, cache)
			rounds := false
			for i, m := range full.Weights.matrices() {
				(*m).bf16Products = (*half.Weights.matrices()[i]).bf16Products
				rounds = rounds || (*m).bf16Products
			}
			if want := kind == bfloat16 && dtype != "f32"; rounds != want {
				t.Fatalf("%s, dtype %q: products round their inputs to bfloat16: %v, want %v", name, dtype, rounds, want)
			}
			if want := map[bool]string{true: "f32", false: "f16"}[dtype == "f32"]; cache != want {
				t.Errorf("%s, dtype %q: the streams keep a cache of %s, want %s", name, dtype, cache, want)
			}
			got, want := greedyLogits(half, prompt, 6, cache), greedyLogits(full, prompt, 6, cache)
			if rounds && slices.Equal(got[0], unrounded[0]) {
				t.Fatalf("%s, dtype %q: the logits are the f32 file's on inputs not rounded", name, dtype)
			}
			for k := range want {
				if !slices.Equal(got[k], want[k]) {
					t.Fatalf("%s, dtype %q step %d: the file's logits differ from the f32 file's", name, dtype, k)
				}
			}
		}
	}
}

// matricesF32 are w's matrices' rows (a synthetic model's, which has them).
func matricesF32(w *Weights) [][]float32 {
	var out [][]float32
	for _, m := range w.matrices() {
		out = append(out, (*m).F32)
	}
	return out
}

// greedyLogits runs prompt on m, with a KV cache of the format named, and
// then steps greedy tokens, returning every step's logits.
func greedyLogits(m *Model, prompt []int, steps int, cache string) [][]float32 {
	e := NewEngine(m, 1)
	defer e.Close()
	st := newState(m.Weights, cache)
	st.sampler.Configure(0, 0, 0, 0, 0)
	st.prompt, st.pos, st.sample = prompt, 0, true
	var out [][]float32
	for k := range steps {
		var p pass
		p.add(st)
		e.forward(&p)
		out = append(out, slices.Clone(st.logits))
		st.prompt, st.token, st.pos = nil, st.next, len(prompt)+k
	}
	return out
}
