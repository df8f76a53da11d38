package builtin

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/shirou/gopsutil/v4/mem"
)

// The real stories260K model and its 512-token tokenizer, from Andrej
// Karpathy's tinyllamas (published with llama2.c, MIT license).
var (
	//go:embed models/stories260K.bin
	stories260K []byte
	//go:embed models/tok512.bin
	tok512 []byte
)

// DefaultModel is what the builtin backend runs when no model is named.
const DefaultModel = "stories260K"

// SyntheticShapes are the shapes of the llama2.c tinystories models, for
// seeded synthetic weights.
var SyntheticShapes = map[string]Shape{
	"stories15M":  {Dim: 288, HiddenDim: 768, Layers: 6, Heads: 6, KVHeads: 6, Vocab: 32000, SeqLen: 256},
	"stories42M":  {Dim: 512, HiddenDim: 1376, Layers: 8, Heads: 8, KVHeads: 8, Vocab: 32000, SeqLen: 1024},
	"stories110M": {Dim: 768, HiddenDim: 2048, Layers: 12, Heads: 12, KVHeads: 12, Vocab: 32000, SeqLen: 1024},
}

// syntheticSuffix marks a synthetic model name everywhere it appears.
const syntheticSuffix = "-synthetic"

// SyntheticSeed seeds synthetic weights; the same seed gives the same model.
const SyntheticSeed = 1

// Model is a loaded model ready to run.
type Model struct {
	Name      string
	Weights   *Weights
	Tokenizer *Tokenizer
	// Source says where the weights came from: "embedded", "synthetic
	// (seed N)", or the file path.
	Source    string
	SHA256    string // of the weights file; empty for synthetic weights
	Synthetic bool
	LoadTime  time.Duration
	// KeptAsIs names the matrices a dtype left in their own format, as
	// llama-quantize does with rows it cannot cut into blocks
	// ("layers.0.w2 64×172"); empty where every matrix converted.
	KeptAsIs []string
	// mapped is the weights file as mapped, for releasePages; nil for
	// weights not read from a file.
	mapped []byte
	// checksum is the file's SHA-256 while Load computes it beside the
	// loading; nil for weights not read from a file.
	checksum *checksum
}

// ModelNames lists the names Load understands besides file paths.
func ModelNames() []string {
	names := []string{DefaultModel}
	for _, n := range []string{"stories15M", "stories42M", "stories110M"} {
		names = append(names, n+syntheticSuffix)
	}
	return names
}

// Load resolves a model name or path and converts its matrices to dtype.
func Load(name, dtype string) (*Model, error) {
	start := time.Now()
	if name == "" {
		name = DefaultModel
	}
	if dtype != "" && dtype != "f32" && dtype != "q8_0" {
		return nil, fmt.Errorf("dtype %q is not supported; use one of %s (or none: the weights' own)", dtype, strings.Join(DTypes, ", "))
	}
	// Loading makes copies (Q8_0's rows, then their tiles) that are
	// garbage a matrix later; collected at the default pace they piled up
	// to a peak resident size near three times the file's.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	m, err := loadWeights(name)
	if err != nil {
		return nil, err
	}
	if m.checksum != nil {
		defer m.checksum.stop() // a no-op once it has finished
	}
	// The weights run as the file stores them; a dtype converts them.
	switch dtype {
	case "q8_0":
		m.KeptAsIs = m.Weights.quantize()
	case "f32":
		m.Weights.dequantize()
	}
	m.Weights.tileF32(func(stored []byte) { m.handBack(within(m.mapped, stored)) })
	if err := m.leaveMapping(); err != nil {
		return nil, err
	}
	releasePages(m.mapped[:cap(m.mapped)])
	// What a dtype converted and the rows the tiles replaced are garbage
	// now (those in the file were handed back above); hand their pages
	// back too, so the resident size reported with the session is the
	// engine's own.
	debug.FreeOSMemory()
	if m.checksum != nil {
		if m.SHA256, err = m.checksum.wait(); err != nil {
			return nil, fmt.Errorf("model file %s: %w", m.Source, err)
		}
	}
	m.LoadTime = time.Since(start)
	return m, nil
}

func loadWeights(name string) (*Model, error) {
	switch {
	case name == DefaultModel:
		w, err := LoadLlama2c(stories260K)
		if err != nil {
			return nil, fmt.Errorf("embedded stories260K: %w", err)
		}
		tok, err := ParseTokenizerBin(tok512, w.Shape.Vocab)
		if err != nil {
			return nil, fmt.Errorf("embedded tok512: %w", err)
		}
		sum := sha256.Sum256(stories260K)
		return &Model{Name: name, Weights: w, Tokenizer: tok, Source: "embedded", SHA256: hex.EncodeToString(sum[:])}, nil
	case strings.HasSuffix(name, syntheticSuffix):
		shape, ok := SyntheticShapes[strings.TrimSuffix(name, syntheticSuffix)]
		if !ok {
			return nil, fmt.Errorf("no synthetic shape %q; known models: %s, or a path to a .bin or .gguf file", name, strings.Join(ModelNames(), ", "))
		}
		if err := checkMemory(name, shape.Params(true)*4); err != nil {
			return nil, err
		}
		return &Model{Name: name, Weights: Synthetic(shape, SyntheticSeed), Tokenizer: ByteLevelTokenizer(shape.Vocab),
			Source: fmt.Sprintf("synthetic (seed %d)", SyntheticSeed), Synthetic: true}, nil
	case strings.ContainsRune(name, filepath.Separator) || strings.HasSuffix(name, ".bin") || strings.HasSuffix(name, ".gguf"):
		return loadFile(name)
	}
	return nil, fmt.Errorf("unknown builtin model %q; use one of %s, or a path to a llama2.c .bin or a .gguf file", name, strings.Join(ModelNames(), ", "))
}

// loadFile maps a checkpoint and builds its model, checking before any
// work that the file exists, is whole, and fits in memory.
func loadFile(path string) (*Model, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("model file: %w", err)
	}
	if info.IsDir() {
		return nil, fmt.Errorf("model file %s is a folder; name the checkpoint in it (a llama2.c .bin with tokenizer.bin beside it, or a .gguf file)", path)
	}
	if err := checkMemory(path, info.Size()); err != nil {
		return nil, err
	}
	data, err := mapFile(path)
	if err != nil {
		return nil, fmt.Errorf("model file %s: %w", path, err)
	}
	sum := startChecksum(path)
	m := &Model{Name: filepath.Base(path), Source: path, mapped: data, checksum: sum}
	if strings.HasSuffix(path, ".gguf") {
		m.Weights, m.Tokenizer, err = loadGGUF(data, m.handBack)
	} else {
		m.Weights, err = LoadLlama2c(data)
		if err == nil {
			m.Tokenizer, err = loadTokenizerBeside(path, m.Weights.Shape.Vocab)
		}
	}
	if err != nil {
		sum.stop()
		return nil, fmt.Errorf("model file %s: %w", path, err)
	}
	return m, nil
}

// checksum is a file's SHA-256 computed on a goroutine of its own, beside
// the loading, which waits for it only at its end. One after the other,
// a 4.9 GB f32 file's load took 7.6–13.6 s on the development VM, 3.8 s
// of it the checksum; side by side 4.0–5.7 s (BenchmarkLoad). It reads
// through the file: read through the mapping, every page of the file was
// resident at once.
type checksum struct {
	file *os.File
	done chan struct{}
	sum  string
	err  error
}

func startChecksum(path string) *checksum {
	c := &checksum{done: make(chan struct{})}
	if c.file, c.err = os.Open(path); c.err != nil {
		close(c.done)
		return c
	}
	go func() {
		defer close(c.done)
		h := sha256.New()
		if _, c.err = io.Copy(h, c.file); c.err == nil {
			c.sum = hex.EncodeToString(h.Sum(nil))
		}
	}()
	return c
}

// wait is the checksum, once it is done.
func (c *checksum) wait() (string, error) {
	<-c.done
	c.close()
	return c.sum, c.err
}

// stop ends the reading early (a load that failed needs no checksum):
// closing the file fails its next read. It waits for the reading to end,
// so none outlives its load.
func (c *checksum) stop() {
	c.close()
	<-c.done
}

func (c *checksum) close() {
	if c.file != nil {
		c.file.Close() // a second close only returns an error
	}
}

// leaveMapping moves what decoding reads of the weights apart from the
// matrices out of a mapped file, before its pages are handed back: the
// norms and biases are copied, and an embedding no classifier shares
// is read through the file a row at a time (fileRows). On this kernel
// a read through the mapping, even of one 3 KiB norm, made the whole
// page-cache folio around it resident again: on stories110M's Q8_0
// file, 45 MiB of the file within 16 tokens, beside the tiles already
// holding those weights.
func (m *Model) leaveMapping() error {
	if len(m.mapped) == 0 {
		return nil
	}
	w := m.Weights
	for _, v := range w.vectors() {
		if in := within(m.mapped, bytesOf(*v)); in != nil {
			*v = slices.Clone(*v)
			m.handBack(in)
		}
	}
	if w.Embedding != nil && !w.tied() && within(m.mapped, bytesOf(w.Embedding)) != nil {
		d := w.Shape.Dim
		w.embedRows = &quantRows{raw: bytesOf(w.Embedding), cols: d, block: d, blockBytes: 4 * d, decode: decodeF32}
		w.Embedding = nil
	}
	if w.embedRows == nil {
		return nil
	}
	raw := w.embedRows.raw
	offset := uintptr(unsafe.Pointer(unsafe.SliceData(raw))) - uintptr(unsafe.Pointer(&m.mapped[0]))
	if offset >= uintptr(len(m.mapped)) {
		return nil // not the file's bytes
	}
	f, err := os.Open(m.Source)
	if err != nil {
		return fmt.Errorf("model file %s: %w", m.Source, err)
	}
	w.embedRows.file, w.embedRows.raw = &fileRows{f: f, offset: int64(offset)}, nil
	return nil
}

// vectors are the weights' vectors read whole each step: the norms, the
// biases and the rope factors.
func (w *Weights) vectors() []*[]float32 {
	out := []*[]float32{&w.FinalNorm, &w.RopeFactors}
	for i := range w.Layers {
		l := &w.Layers[i]
		out = append(out, &l.AttnNorm, &l.FFNNorm, &l.QBias, &l.KBias, &l.VBias, &l.QNorm, &l.KNorm, &l.PostAttnNorm, &l.PostFFNNorm)
	}
	return out
}

// within is part as the bytes of mapped where it lies in them, else nil.
func within(mapped, part []byte) []byte {
	if len(mapped) == 0 || len(part) == 0 {
		return nil
	}
	base, p := uintptr(unsafe.Pointer(&mapped[0])), uintptr(unsafe.Pointer(&part[0]))
	if p < base || p+uintptr(len(part)) > base+uintptr(len(mapped)) {
		return nil
	}
	return mapped[p-base : p-base+uintptr(len(part))]
}

// handBack hands back the pages of the mapped file around part, a copy
// of which the engine now holds (foliosAround says why around).
func (m *Model) handBack(part []byte) { releasePages(foliosAround(m.mapped, part)) }

// hugePageBytes is the huge page of x86-64 and of arm64's 4 KiB pages;
// a range aligned to it is aligned to every base page size.
const hugePageBytes = 2 << 20

// toBoundary is how many bytes into b the first boundary of unit (a power
// of two: a huge page, or a base page) lies.
func toBoundary(b []byte, unit uintptr) int {
	return int(-uintptr(unsafe.Pointer(unsafe.SliceData(b))) & (unit - 1))
}

// foliosAround widens b, a part of mapped, to the huge pages around it
// (within mapped). This kernel maps a file's page cache a folio at a time,
// up to 2 MiB: a read of one byte of a tensor maps its neighbours' pages
// too, and handing back only the pages wholly inside each matrix left
// those of the folios across its ends resident until the load ended (on
// stories110M's Q8_0 file, 34 MiB of the file at the load's peak). The
// neighbours' pages handed back early come back from the page cache
// when read.
func foliosAround(mapped, b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	base := uintptr(unsafe.Pointer(&mapped[0]))
	start := uintptr(unsafe.Pointer(&b[0])) - base
	end := start + uintptr(len(b))
	first := max(base, (base+start)&^(hugePageBytes-1)) - base
	last := min(base+uintptr(len(mapped)), (base+end+hugePageBytes-1)&^(hugePageBytes-1)) - base
	return mapped[first:last]
}

// loadTokenizerBeside finds a llama2.c checkpoint's tokenizer.bin (or
// tok<vocab>.bin, as llama2.c names custom ones). There is no fallback: a
// tokenizer of the right size but the wrong model would go unnoticed.
func loadTokenizerBeside(path string, vocab int) (*Tokenizer, error) {
	for _, name := range []string{"tokenizer.bin", fmt.Sprintf("tok%d.bin", vocab)} {
		if data, err := os.ReadFile(filepath.Join(filepath.Dir(path), name)); err == nil {
			return ParseTokenizerBin(data, vocab)
		}
	}
	return nil, fmt.Errorf("no tokenizer.bin beside it; put llama2.c's tokenizer.bin (or tok%d.bin) in %s", vocab, filepath.Dir(path))
}

// checkMemory refuses a model larger than the memory the OS says is
// available, before allocating any of it.
func checkMemory(name string, bytes int64) error {
	avail := availableMemory()
	if avail > 0 && bytes > avail {
		return fmt.Errorf("model %s needs %d MiB of weights but only %d MiB of memory is available", name, bytes>>20, avail>>20)
	}
	return nil
}

// availableMemory is the memory the OS says is available; 0 when unknown.
func availableMemory() int64 {
	vm, err := mem.VirtualMemory()
	if err != nil {
		return 0
	}
	return int64(min(vm.Available, math.MaxInt64))
}

// Synthetic fills shape with seeded uniform weights scaled by 1/sqrt(fan
// in), so activations stay in range through every layer as in a trained
// model; norms are ones. Classifier weights are tied to the embedding.
func Synthetic(shape Shape, seed uint64) *Weights {
	rng := rand.New(rand.NewPCG(seed, 0x73796e7468))
	fill := func(n, fanIn int) []float32 {
		out := make([]float32, n)
		scale := float32(2 / math.Sqrt(float64(fanIn)))
		for i := range out {
			out[i] = (rng.Float32() - 0.5) * scale
		}
		return out
	}
	ones := func(n int) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = 1
		}
		return out
	}
	d, h, kv := shape.Dim, shape.HiddenDim, shape.KVDim()
	w := &Weights{Shape: shape, NormEps: 1e-5, Embedding: fill(shape.Vocab*d, d), FinalNorm: ones(d)}
	for range shape.Layers {
		w.Layers = append(w.Layers, Layer{
			AttnNorm: ones(d), FFNNorm: ones(d),
			WQ: NewF32(d, d, fill(d*d, d)), WK: NewF32(kv, d, fill(kv*d, d)), WV: NewF32(kv, d, fill(kv*d, d)),
			WO: NewF32(d, d, fill(d*d, d)),
			W1: NewF32(h, d, fill(h*d, d)), W2: NewF32(d, h, fill(d*h, h)), W3: NewF32(h, d, fill(h*d, d)),
		})
	}
	w.Classifier = NewF32(shape.Vocab, d, w.Embedding)
	return w
}

// dequantize converts every quantized matrix to f32, and widens an F16
// or BF16 file's halves.
func (w *Weights) dequantize() {
	for _, m := range w.matrices() {
		if (*m).Quantized() || (*m).halves != nil {
			*m = (*m).Dequantize()
			(*m).bf16Products = false // the f32 dtype: floats times floats
		}
	}
}

// tileF32 lays every f32 matrix out as tiles, where this build's kernels
// read them (withTiles), in one tileMemory, handing each run of rows to
// copied as soon as the tiles hold it (as stored: floats or halves). An
// F16 or BF16 tensor's halves stay halves in its tiles, or, where this
// build reads rows, are widened into rows.
func (w *Weights) tileF32(copied func(stored []byte)) {
	tied := w.tied()
	size := 0
	for _, m := range w.matrices() {
		if (*m).F32 != nil || (*m).halves != nil {
			size += f32TilesSize((*m).Rows, (*m).Cols, (*m).halves != nil)
		}
	}
	w.tileMemory = &tileMemory{size: size}
	for _, m := range w.matrices() {
		if (*m).F32 == nil && (*m).halves == nil {
			continue
		}
		*m = withTiles(*m, w.tileMemory, copied)
		if halves := (*m).halves; halves != nil {
			*m = (*m).withRows()
			w.rowsOfHalves = true
			if copied != nil {
				copied(halves)
			}
		}
	}
	if tied && !w.tied() { // the classifier's tiles hold the embedding now
		w.Embedding = nil
	}
}

// dropHugePages takes the tiles' huge-page advice back
// (adviseSmallPages), for weights that are about to be garbage: the f32
// tiles' memory as a whole, whose huge pages span matrices, and each
// quantized matrix's own.
func (w *Weights) dropHugePages() {
	if w.tileMemory != nil {
		adviseSmallPages(w.tileMemory.all)
	}
	for _, m := range w.matrices() {
		if (*m).Quantized() {
			adviseSmallPages((*m).tiles)
		}
	}
}

// matrices are the weights' matrices: each layer's, then the classifier.
func (w *Weights) matrices() []**Matrix {
	var out []**Matrix
	for i := range w.Layers {
		l := &w.Layers[i]
		out = append(out, &l.WQ, &l.WK, &l.WV, &l.WO, &l.W1, &l.W2, &l.W3)
	}
	return append(out, &w.Classifier)
}

// Format says what the matrices run as: one dtype ("q8_0"), or each with
// its count where they differ ("q8_0 ×12, f32 ×1"), which a file may mix.
func (w *Weights) Format() string {
	counts := map[string]int{}
	var order []string
	for _, m := range w.matrices() {
		d := (*m).DType()
		if counts[d] == 0 {
			order = append(order, d)
		}
		counts[d]++
	}
	if len(order) == 1 {
		return order[0]
	}
	parts := make([]string, len(order))
	for i, d := range order {
		parts[i] = fmt.Sprintf("%s ×%d", d, counts[d])
	}
	return strings.Join(parts, ", ")
}

// quantize converts every matrix to Q8_0 (the embedding stays f32: rows of
// it are copied per token, not multiplied). A matrix whose rows are not a
// whole number of Q8_0's blocks stays as it is, as llama-quantize keeps
// such tensors; it returns their names and shapes.
func (w *Weights) quantize() (kept []string) {
	names := w.matrixNames()
	for i, m := range w.matrices() {
		switch {
		case (*m).DType() == "q8_0":
		case (*m).Cols%GroupSize != 0:
			kept = append(kept, fmt.Sprintf("%s %d×%d", names[i], (*m).Rows, (*m).Cols))
		default:
			qm, err := (*m).Dequantize().Quantize()
			if err != nil {
				panic(err) // the columns are whole blocks: cannot fail
			}
			*m = withTiles(qm, nil, nil)
		}
	}
	return kept
}

// matrixNames name matrices()' matrices, in its order.
func (w *Weights) matrixNames() []string {
	var out []string
	for i := range w.Layers {
		for _, n := range []string{"wq", "wk", "wv", "wo", "w1", "w2", "w3"} {
			out = append(out, fmt.Sprintf("layers.%d.%s", i, n))
		}
	}
	return append(out, "classifier")
}

// tied reports whether the classifier multiplies the embedding's own
// floats (not a quantized or tiled copy of them).
func (w *Weights) tied() bool {
	c := w.Classifier
	return c.F32 != nil && len(w.Embedding) > 0 && &c.F32[0] == &w.Embedding[0]
}

// BytesPerToken is what one decode step reads of the weights: every
// matrix (the classifier included) and the norms, but of the embedding
// only the token's row.
func (w *Weights) BytesPerToken() int64 {
	n := 4 * int64(w.Shape.Dim+len(w.FinalNorm))
	for _, l := range w.Layers {
		n += 4 * int64(len(l.AttnNorm)+len(l.FFNNorm))
	}
	for _, m := range w.matrices() {
		n += (*m).Bytes()
	}
	return n
}

// WeightBytes is the memory the weights take.
func (w *Weights) WeightBytes() int64 {
	n := 4 * int64(len(w.Embedding)+len(w.FinalNorm))
	if w.embedRows != nil && w.embedRows.file == nil { // else in the page cache, read a row a token
		n += int64(w.Shape.Vocab) * int64(w.embedRows.rowBytes())
	}
	for _, l := range w.Layers {
		n += 4 * int64(len(l.AttnNorm)+len(l.FFNNorm))
		for _, m := range []*Matrix{l.WQ, l.WK, l.WV, l.WO, l.W1, l.W2, l.W3} {
			n += m.Bytes()
		}
	}
	if !w.tied() {
		n += w.Classifier.Bytes()
	}
	return n
}
