package builtin

import (
	"fmt"
	"unsafe"
)

// DTypes lists the weight formats the engine computes in.
var DTypes = []string{"f32", "q8_0"}

// GroupSize is the Q8_0 block: 32 weights share one scale (as in
// llama2.c's runq.c and ggml's Q8_0).
const GroupSize = 32

// Matrix is a row-major rows × cols weight matrix, in f32 or Q8_0.
//
// Q8_0 rows are stored whole, one after another: a row's group scales
// (float32), then its int8 values, so reading a row is one sequential
// stream. With scales and values in separate arrays each row was two
// streams, and streams, not arithmetic, limit a decode step.
type Matrix struct {
	Rows, Cols int
	F32        []float32
	q8         []byte // Q8_0 rows, when quantized; see q8Row
	q4         []byte // Q4_0 rows, as a GGUF stores them converted: see q4Row
}

// newQ8Matrix allocates a zeroed Q8_0 matrix (cols a multiple of 32).
func newQ8Matrix(rows, cols int) *Matrix {
	m := &Matrix{Rows: rows, Cols: cols}
	m.q8 = make([]byte, rows*m.q8RowBytes())
	return m
}

// Quantized reports whether the matrix holds quantized weights (Q8_0 or
// Q4_0), which multiply quantized activations.
func (m *Matrix) Quantized() bool { return m.q8 != nil || m.q4 != nil }

// newQ4Matrix allocates a zeroed Q4_0 matrix (cols a multiple of 32).
// Its rows are stored whole like Q8_0's: the group scales (float32), then
// 16 bytes per group, value i in the low nibble of byte i and value i+16
// in its high one, each the weight's 4 bits plus 8 (ggml's Q4_0).
func newQ4Matrix(rows, cols int) *Matrix {
	m := &Matrix{Rows: rows, Cols: cols}
	m.q4 = make([]byte, rows*m.q4RowBytes())
	return m
}

func (m *Matrix) q4RowBytes() int { return m.Cols/GroupSize*4 + m.Cols/2 }

// q4Row returns row r's group scales and packed nibbles.
func (m *Matrix) q4Row(r int) (scales []float32, nibbles []byte) {
	return m.row(r, m.q4, m.q4RowBytes())
}

// q8RowBytes is the size of one stored Q8_0 row.
func (m *Matrix) q8RowBytes() int { return m.Cols/GroupSize*4 + m.Cols }

// q8Row returns row r's group scales and values, viewing its bytes.
func (m *Matrix) q8Row(r int) (scales []float32, q []int8) {
	scales, payload := m.row(r, m.q8, m.q8RowBytes())
	return scales, unsafe.Slice((*int8)(unsafe.Pointer(&payload[0])), m.Cols)
}

// stored is a quantized matrix's rows as they are kept, and one row's
// size: every format lays a row out as its group scales (float32), then
// its groups' payloads in order.
func (m *Matrix) stored() (raw []byte, rowBytes int) {
	if m.q4 != nil {
		return m.q4, m.q4RowBytes()
	}
	return m.q8, m.q8RowBytes()
}

// row views row r of raw as its group scales and its payload bytes.
func (m *Matrix) row(r int, raw []byte, rowBytes int) (scales []float32, payload []byte) {
	groups := m.Cols / GroupSize
	row := raw[r*rowBytes : (r+1)*rowBytes]
	return unsafe.Slice((*float32)(unsafe.Pointer(&row[0])), groups), row[groups*4:]
}

// NewF32 wraps data (rows*cols values) without copying it.
func NewF32(rows, cols int, data []float32) *Matrix {
	return &Matrix{Rows: rows, Cols: cols, F32: data}
}

// DType names the matrix's format.
func (m *Matrix) DType() string {
	switch {
	case m.q8 != nil:
		return "q8_0"
	case m.q4 != nil:
		return "q4_0"
	}
	return "f32"
}

// Bytes is the memory the weights take.
func (m *Matrix) Bytes() int64 {
	if m.Quantized() {
		raw, _ := m.stored()
		return int64(len(raw))
	}
	return 4 * int64(len(m.F32))
}

// QuantizeQ4 returns m in Q4_0 by ggml's rule: per group of 32, the value
// of largest magnitude maps to −8, so scale = that value / −8, and each
// weight is round(w/scale) + 8, at most 15.
func (m *Matrix) QuantizeQ4() (*Matrix, error) {
	if m.Cols%GroupSize != 0 {
		return nil, fmt.Errorf("cannot quantize a %d×%d matrix to Q4_0: columns are not a multiple of %d", m.Rows, m.Cols, GroupSize)
	}
	src := m.Dequantize()
	q := newQ4Matrix(m.Rows, m.Cols)
	for r := range m.Rows {
		scales, nib := q.q4Row(r)
		row := src.F32[r*m.Cols : (r+1)*m.Cols]
		for g := range scales {
			vals := row[g*GroupSize : (g+1)*GroupSize]
			var extreme float32
			for _, v := range vals {
				if abs(v) > abs(extreme) {
					extreme = v
				}
			}
			d := extreme / -8
			scales[g] = d
			var inv float32
			if d != 0 {
				inv = 1 / d
			}
			code := func(v float32) byte { return byte(min(15, int(v*inv+8.5))) }
			for i := range GroupSize / 2 {
				nib[g*16+i] = code(vals[i]) | code(vals[i+16])<<4
			}
		}
	}
	return q, nil
}

func abs(v float32) float32 {
	if v < 0 {
		return -v
	}
	return v
}

// Quantize returns m in Q8_0: each group of 32 values along a row shares
// the scale max|w|/127. It needs cols to be a multiple of 32.
func (m *Matrix) Quantize() (*Matrix, error) {
	if m.Cols%GroupSize != 0 {
		return nil, fmt.Errorf("cannot quantize a %d×%d matrix to Q8_0: columns are not a multiple of %d", m.Rows, m.Cols, GroupSize)
	}
	q := newQ8Matrix(m.Rows, m.Cols)
	for r := range m.Rows {
		scales, values := q.q8Row(r)
		quantizeInto(values, scales, m.F32[r*m.Cols:(r+1)*m.Cols])
	}
	return q, nil
}

// Dequantize returns a quantized matrix in f32 (value × its group's
// scale); an f32 matrix is returned as it is.
func (m *Matrix) Dequantize() *Matrix {
	if !m.Quantized() {
		return m
	}
	out := make([]float32, m.Rows*m.Cols)
	for r := range m.Rows {
		row := out[r*m.Cols : (r+1)*m.Cols]
		if m.q4 != nil {
			scales, nib := m.q4Row(r)
			for g, d := range scales {
				for i := range GroupSize / 2 {
					b := nib[g*16+i]
					row[g*GroupSize+i] = float32(int(b&0x0f)-8) * d
					row[g*GroupSize+i+16] = float32(int(b>>4)-8) * d
				}
			}
			continue
		}
		scales, values := m.q8Row(r)
		for i, v := range values {
			row[i] = float32(v) * scales[i/GroupSize]
		}
	}
	return NewF32(m.Rows, m.Cols, out)
}

// scalePad is spare capacity after a quantized activation's scales, so a
// vector kernel may load eight scales from any group without leaving it.
const scalePad = 8

// newScales allocates n group scales with scalePad spare capacity.
func newScales(n int) []float32 { return make([]float32, n, n+scalePad) }
