package builtin

import (
	"encoding/binary"
	"fmt"
	"unsafe"
)

// DTypes lists the weight formats the engine converts to when asked; a
// file's own format (Q4_0, Q4_K, Q6_K as well) runs as stored.
var DTypes = []string{"f32", "q8_0"}

// GroupSize is the Q8_0 block: 32 weights share one scale (as in
// llama2.c's runq.c and ggml's Q8_0). Activations are always quantized in
// these groups, whatever the weights' format.
const GroupSize = 32

// superBlock is the K-quants' block: 256 weights, in 8 groups of 32
// (Q4_K) or 16 of 16 (Q6_K) with their own scales.
const superBlock = 256

// format is how a matrix stores its weights.
type format uint8

const (
	formatF32 format = iota
	formatQ8_0
	formatQ4_0
	formatQ4_K
	formatQ6_K
)

// String is ggml's name for the format.
func (f format) String() string {
	return [...]string{"f32", "q8_0", "q4_0", "q4_K", "q6_K"}[f]
}

// block is how many weights one block of the format covers.
func (f format) block() int {
	if f == formatQ4_K || f == formatQ6_K {
		return superBlock
	}
	return GroupSize
}

// fileBlockBytes is the size of one block as a GGUF stores it: an f16
// scale and the group's payload for Q8_0 and Q4_0, the whole super-block
// for the K-quants (which the engine keeps as they are).
func (f format) fileBlockBytes() int {
	switch f {
	case formatQ8_0:
		return 2 + GroupSize
	case formatQ4_0:
		return 2 + GroupSize/2
	case formatQ4_K:
		return q4KBlockBytes
	case formatQ6_K:
		return q6KBlockBytes
	}
	return 0
}

// rowBytes is the size of one stored row of cols weights.
func (f format) rowBytes(cols int) int {
	switch f {
	case formatQ8_0:
		return cols/GroupSize*4 + cols
	case formatQ4_0:
		return cols/GroupSize*4 + cols/2
	case formatQ4_K:
		return cols / superBlock * q4KBlockBytes
	case formatQ6_K:
		return cols / superBlock * q6KBlockBytes
	}
	return 4 * cols
}

// Matrix is a row-major rows × cols weight matrix, in f32 or quantized.
//
// Quantized rows are stored whole, one after another, so reading a row is
// one sequential stream: streams, not arithmetic, limit a decode step.
// Q8_0 and Q4_0 rows hold the row's group scales (float32), then its
// groups' payloads (see groupRow); Q4_K and Q6_K rows are the GGUF's own
// super-blocks, byte for byte (see kquants.go).
type Matrix struct {
	Rows, Cols int
	F32        []float32
	format     format
	quant      []byte // the quantized rows; nil for f32
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

// DType names the matrix's format.
func (m *Matrix) DType() string { return m.format.String() }

// rowBytes is the size of one stored row.
func (m *Matrix) rowBytes() int { return m.format.rowBytes(m.Cols) }

// quantRow is row r's stored bytes.
func (m *Matrix) quantRow(r int) []byte {
	n := m.rowBytes()
	return m.quant[r*n : (r+1)*n]
}

// groupRow views row r of a Q8_0 or Q4_0 matrix as its group scales and
// its payload bytes (32 int8 values, or 16 bytes of nibbles, per group).
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

// Bytes is the memory the weights take.
func (m *Matrix) Bytes() int64 {
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
	q := newQuantMatrix(formatQ8_0, m.Rows, m.Cols)
	for r := range m.Rows {
		scales, values := q.q8Row(r)
		quantizeInto(values, scales, m.F32[r*m.Cols:(r+1)*m.Cols])
	}
	return q, nil
}

// Dequantize returns a quantized matrix in f32; an f32 matrix is returned
// as it is.
func (m *Matrix) Dequantize() *Matrix {
	if !m.Quantized() {
		return m
	}
	out := make([]float32, m.Rows*m.Cols)
	for r := range m.Rows {
		row := out[r*m.Cols : (r+1)*m.Cols]
		switch m.format {
		case formatQ8_0:
			scales, values := m.q8Row(r)
			for i, v := range values {
				row[i] = float32(v) * scales[i/GroupSize]
			}
		case formatQ4_0:
			scales, nib := m.groupRow(r)
			for g, d := range scales {
				for i := range GroupSize / 2 {
					b := nib[g*16+i]
					row[g*GroupSize+i] = float32(int(b&0x0f)-8) * d
					row[g*GroupSize+i+16] = float32(int(b>>4)-8) * d
				}
			}
		case formatQ4_K, formatQ6_K:
			decode := dequantQ4K
			if m.format == formatQ6_K {
				decode = dequantQ6K
			}
			raw, per := m.quantRow(r), m.format.fileBlockBytes()
			for sb := range m.Cols / superBlock {
				decode(row[sb*superBlock:(sb+1)*superBlock], raw[sb*per:(sb+1)*per])
			}
		}
	}
	return NewF32(m.Rows, m.Cols, out)
}

// scalePad is spare capacity after a quantized activation's scales, so a
// vector kernel may load eight scales from any group without leaving it.
const scalePad = 8

// newScales allocates n group scales with scalePad spare capacity.
func newScales(n int) []float32 { return make([]float32, n, n+scalePad) }

// le16 reads a little-endian uint16, a GGUF block's f16 scales.
func le16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }
