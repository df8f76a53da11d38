package builtin

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
)

// llama2cHeaderSize is the seven int32 fields of a llama2.c checkpoint.
const llama2cHeaderSize = 7 * 4

// ParseLlama2cHeader reads a llama2.c checkpoint header. A negative vocab
// size there means the classifier is stored separately (not tied).
func ParseLlama2cHeader(b []byte) (shape Shape, shared bool, err error) {
	if len(b) < llama2cHeaderSize {
		return Shape{}, false, fmt.Errorf("file is %d bytes, shorter than a llama2.c header (%d bytes)", len(b), llama2cHeaderSize)
	}
	field := func(i int) int { return int(int32(binary.LittleEndian.Uint32(b[4*i:]))) }
	shape = Shape{Dim: field(0), HiddenDim: field(1), Layers: field(2), Heads: field(3), KVHeads: field(4), Vocab: field(5), SeqLen: field(6)}
	shared = shape.Vocab > 0
	if shape.Vocab < 0 {
		shape.Vocab = -shape.Vocab
	}
	if err := shape.Validate(); err != nil {
		return Shape{}, false, fmt.Errorf("not a llama2.c checkpoint: %w", err)
	}
	return shape, shared, nil
}

// LoadLlama2c builds weights from a whole llama2.c checkpoint. The float
// data is used in place when b is 4-byte aligned (an mmapped file), so the
// weights are held once.
func LoadLlama2c(b []byte) (*Weights, error) {
	shape, shared, err := ParseLlama2cHeader(b)
	if err != nil {
		return nil, err
	}
	headSize := shape.HeadSize()
	need := shape.Params(shared) + int64(shape.SeqLen)*int64(headSize) // + the legacy RoPE tables
	have := int64(len(b)-llama2cHeaderSize) / 4
	if have < need {
		return nil, fmt.Errorf("checkpoint is truncated: the header's shape (%s) needs %d bytes of weights, the file has %d", shape, need*4, have*4)
	}
	f := floatsOf(b[llama2cHeaderSize:])
	take := func(n int) []float32 {
		out := f[:n:n]
		f = f[n:]
		return out
	}
	d, h, kv, L := shape.Dim, shape.HiddenDim, shape.KVDim(), shape.Layers
	w := &Weights{Shape: shape, NormEps: 1e-5, Layers: make([]Layer, L)}
	w.Embedding = take(shape.Vocab * d)
	// The file stores each kind of tensor for all layers together, in this
	// order.
	for _, read := range []func(*Layer){
		func(l *Layer) { l.AttnNorm = take(d) },
		func(l *Layer) { l.WQ = NewF32(d, d, take(d*d)) },
		func(l *Layer) { l.WK = NewF32(kv, d, take(kv*d)) },
		func(l *Layer) { l.WV = NewF32(kv, d, take(kv*d)) },
		func(l *Layer) { l.WO = NewF32(d, d, take(d*d)) },
		func(l *Layer) { l.FFNNorm = take(d) },
		func(l *Layer) { l.W1 = NewF32(h, d, take(h*d)) },
		func(l *Layer) { l.W2 = NewF32(d, h, take(d*h)) },
		func(l *Layer) { l.W3 = NewF32(h, d, take(h*d)) },
	} {
		for l := range L {
			read(&w.Layers[l])
		}
	}
	w.FinalNorm = take(d)
	take(shape.SeqLen * headSize) // freq_cis_real and freq_cis_imag, recomputed instead
	if shared {
		w.Classifier = NewF32(shape.Vocab, d, w.Embedding)
	} else {
		w.Classifier = NewF32(shape.Vocab, d, take(shape.Vocab*d))
	}
	return w, nil
}

// floatsOf views little-endian float32 data, in place when aligned.
func floatsOf(b []byte) []float32 {
	n := len(b) / 4
	if n == 0 {
		return nil
	}
	if uintptr(unsafe.Pointer(&b[0]))%4 == 0 {
		return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n)
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}
