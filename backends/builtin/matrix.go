package builtin

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
)

// DTypes lists the weight formats the engine converts to when asked; a
// file's own format (any of formats) runs as stored.
var DTypes = []string{"f32", "q8_0"}

// GroupSize is the Q8_0 block: 32 weights share one scale (as in
// llama2.c's runq.c and ggml's Q8_0). Activations are always quantized in
// these groups, whatever the weights' format.
const GroupSize = 32

// superBlock is the K-quants' block: 256 weights, in 8 groups of 32
// (Q4_K, Q5_K) or 16 runs of 16 (Q2_K, Q3_K, Q6_K) with their own scales.
const superBlock = 256

// format is how a matrix stores its weights.
type format uint8

const (
	formatF32 format = iota
	formatQ8_0
	formatQ4_0
	formatQ4_1
	formatQ5_0
	formatQ5_1
	formatIQ4_NL
	formatQ2_K
	formatQ3_K
	formatQ4_K
	formatQ5_K
	formatQ6_K
)

// formatSpec is what the engine knows of a format. Q8_0 is rearranged at
// load into the engine's own rows (see groupRow); every other quantized
// format keeps the GGUF's blocks byte for byte, which decode and dot read
// as ggml lays them out.
type formatSpec struct {
	name       string // ggml's
	ggml       uint32 // the GGUF type id
	block      int    // weights per block
	blockBytes int    // bytes per block as a GGUF stores it
	// decode writes one stored block's weights; dot is the product of
	// stored blocks (a row, or one block) with the activations from group
	// g0 on. Both nil for f32 and Q8_0.
	decode func(out []float32, b []byte)
	dot    func(b []byte, x *quantized, g0 int) float32
	sums   bool // dot reads x.sums (formats with a min per group)
	q8K    bool // dot reads the Q8_K activations, not Q8_0
}

var formats = [...]formatSpec{
	formatF32:    {name: "f32", ggml: ggmlF32, block: 1, blockBytes: 4},
	formatQ8_0:   {name: "q8_0", ggml: ggmlQ8_0, block: GroupSize, blockBytes: 2 + GroupSize},
	formatQ4_0:   {"q4_0", ggmlQ4_0, GroupSize, q4_0BlockBytes, decodeQ4_0, q4_0Dot, false, false},
	formatQ4_1:   {"q4_1", ggmlQ4_1, GroupSize, q4_1BlockBytes, decodeQ4_1, q4_1Dot, true, false},
	formatQ5_0:   {"q5_0", ggmlQ5_0, GroupSize, q5_0BlockBytes, decodeQ5_0, q5_0Dot, false, false},
	formatQ5_1:   {"q5_1", ggmlQ5_1, GroupSize, q5_1BlockBytes, decodeQ5_1, q5_1Dot, true, false},
	formatIQ4_NL: {"iq4_nl", ggmlIQ4_NL, GroupSize, iq4NLBlockBytes, decodeIQ4NL, iq4NLDot, false, false},
	formatQ2_K:   {"q2_K", ggmlQ2_K, superBlock, q2KBlockBytes, dequantQ2K, superBlocks(q2KBlockBytes, q2KDot), false, true},
	formatQ3_K:   {"q3_K", ggmlQ3_K, superBlock, q3KBlockBytes, dequantQ3K, superBlocks(q3KBlockBytes, q3KDot), false, true},
	formatQ4_K:   {"q4_K", ggmlQ4_K, superBlock, q4KBlockBytes, dequantQ4K, superBlocks(q4KBlockBytes, q4KDot), false, true},
	formatQ5_K:   {"q5_K", ggmlQ5_K, superBlock, q5KBlockBytes, dequantQ5K, superBlocks(q5KBlockBytes, q5KDot), false, true},
	formatQ6_K:   {"q6_K", ggmlQ6_K, superBlock, q6KBlockBytes, dequantQ6K, superBlocks(q6KBlockBytes, q6KDot), false, true},
}

// String is ggml's name for the format.
func (f format) String() string { return formats[f].name }

// block is how many weights one block of the format covers.
func (f format) block() int { return formats[f].block }

// fileBlockBytes is the size of one block as a GGUF stores it.
func (f format) fileBlockBytes() int { return formats[f].blockBytes }

// storedAsBlocks reports whether the engine keeps the file's blocks as
// they are (every quantized format but Q8_0).
func (f format) storedAsBlocks() bool { return formats[f].decode != nil }

// rowBytes is the size of one stored row of cols weights: Q8_0 rows hold
// a float32 scale per group, then the groups' values.
func (f format) rowBytes(cols int) int {
	if f == formatQ8_0 {
		return cols/GroupSize*4 + cols
	}
	return cols / f.block() * f.fileBlockBytes()
}

// tileRows is how many rows a tile interleaves (see tiles_simd.go).
const tileRows = 8

// Matrix is a row-major rows × cols weight matrix, in f32 or quantized.
//
// Quantized rows are stored whole, one after another, so reading a row is
// one sequential stream: streams, not arithmetic, limit a decode step.
// Q8_0 rows hold the row's group scales (float32), then its groups'
// values (see groupRow); every other format's rows are the GGUF's own
// blocks, byte for byte (see blocks.go and kquants.go).
type Matrix struct {
	Rows, Cols int
	F32        []float32
	format     format
	quant      []byte // the quantized rows; nil for f32
	// halves are an F16 or BF16 tensor's rows as the file stores them,
	// 16-bit floats of kind half, an f32 matrix until loading lays them
	// out as its tiles (or widens them into rows: withRows) without a
	// float copy of the model between.
	halves []byte
	// half is the kind of 16-bit float that halves, or the tiles, hold
	// (the kernels widen them as they read); notHalf for floats.
	half halfKind
	// bf16Products marks a BF16 file's matrix, whose products read their
	// input rounded to bfloat16 (roundToBFloat16), as llama.cpp's do,
	// whether its weights stay bfloat16s or are widened into rows for a
	// build that reads rows; the f32 dtype's conversion clears it.
	bf16Products bool
	// the rows laid out again for a faster kernel, where the build has
	// one: interleaved for a tile kernel (tiles_simd.go), or IQ4_NL's
	// levels as Q8_0 rows for the portable one (kernels_portable.go). A
	// tiled f32 or Q8_0 matrix keeps its tiles alone, and F32 or quant is
	// nil (see withRows).
	tiles []byte
	// groupedHalves marks tiles of halves that lie in interleaved groups
	// of halfTileGroup (f32tiles.go), as groupHalfTiles chose when they
	// were laid out.
	groupedHalves bool
}

// newQuantMatrix allocates a zeroed matrix in format f (cols a multiple of
// the format's block).
func newQuantMatrix(f format, rows, cols int) *Matrix {
	return &Matrix{Rows: rows, Cols: cols, format: f, quant: make([]byte, rows*f.rowBytes(cols))}
}

// NewF32 wraps data (rows*cols values) without copying it.
func NewF32(rows, cols int, data []float32) *Matrix {
	return &Matrix{Rows: rows, Cols: cols, F32: data}
}

// Quantized reports whether the matrix holds quantized weights, which
// multiply quantized activations.
func (m *Matrix) Quantized() bool { return m.format != formatF32 }

// DType names the matrix's format: an F16 or BF16 file's f32 matrices,
// kept as 16-bit floats, are "f16" or "bf16".
func (m *Matrix) DType() string {
	if m.half != notHalf {
		return m.half.String()
	}
	return m.format.String()
}

// halfKind is a kind of 16-bit float an f32 matrix's weights may be kept
// in, as an F16 or BF16 file stores them.
type halfKind uint8

const (
	notHalf  halfKind = iota
	ieeeHalf          // GGUF F16: IEEE 754 binary16
	bfloat16          // GGUF BF16: a float32's upper 16 bits
)

func (h halfKind) String() string { return [...]string{"f32", "f16", "bf16"}[h] }

// widen decodes little-endian 16-bit floats of kind h into out (a table
// row, one block a row, or any run of them).
func (h halfKind) widen(out []float32, b []byte) {
	if h == bfloat16 {
		for i := range out {
			out[i] = math.Float32frombits(uint32(le16(b[2*i:])) << 16)
		}
		return
	}
	for i := range out {
		out[i] = f16ToF32(le16(b[2*i:]))
	}
}

// rowBytes is the size of one stored row.
func (m *Matrix) rowBytes() int { return m.format.rowBytes(m.Cols) }

// quantRow is row r's stored bytes.
func (m *Matrix) quantRow(r int) []byte {
	n := m.rowBytes()
	return m.quant[r*n : (r+1)*n]
}

// groupRow views row r of a Q8_0 matrix as its group scales and its
// payload bytes (32 int8 values per group).
func (m *Matrix) groupRow(r int) (scales []float32, payload []byte) {
	groups := m.Cols / GroupSize
	row := m.quantRow(r)
	return unsafe.Slice((*float32)(unsafe.Pointer(&row[0])), groups), row[groups*4:]
}

// q8Row returns row r's group scales and values.
func (m *Matrix) q8Row(r int) (scales []float32, q []int8) {
	scales, payload := m.groupRow(r)
	return scales, unsafe.Slice((*int8)(unsafe.Pointer(&payload[0])), m.Cols)
}

// Bytes is the memory the weights take, and a decode step reads: the
// tiles where the kernels read those.
func (m *Matrix) Bytes() int64 {
	if m.tiles != nil {
		return int64(len(m.tiles))
	}
	if m.Quantized() {
		return int64(len(m.quant))
	}
	return 4 * int64(len(m.F32))
}

// Quantize returns m in Q8_0: each group of 32 values along a row shares
// the scale max|w|/127. It needs cols to be a multiple of 32.
func (m *Matrix) Quantize() (*Matrix, error) {
	if m.Cols%GroupSize != 0 {
		return nil, fmt.Errorf("cannot quantize a %d×%d matrix to Q8_0: columns are not a multiple of %d", m.Rows, m.Cols, GroupSize)
	}
	m = m.withRows()
	q := newQuantMatrix(formatQ8_0, m.Rows, m.Cols)
	for r := range m.Rows {
		scales, values := q.q8Row(r)
		quantizeInto(values, scales, m.F32[r*m.Cols:(r+1)*m.Cols])
	}
	return q, nil
}

// Dequantize returns a quantized matrix in f32; an f32 matrix is returned
// as it is, with its rows.
func (m *Matrix) Dequantize() *Matrix {
	if !m.Quantized() {
		return m.withRows()
	}
	m = m.withRows()
	out := make([]float32, m.Rows*m.Cols)
	for r := range m.Rows {
		row := out[r*m.Cols : (r+1)*m.Cols]
		switch m.format {
		case formatQ8_0:
			scales, values := m.q8Row(r)
			for i, v := range values {
				row[i] = float32(v) * scales[i/GroupSize]
			}
		default:
			decodeBlocks(row, m.quantRow(r), m.format.block(), m.format.fileBlockBytes(), formats[m.format].decode)
		}
	}
	return NewF32(m.Rows, m.Cols, out)
}

// le16 reads a little-endian uint16, a GGUF block's f16 scales.
func le16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }
