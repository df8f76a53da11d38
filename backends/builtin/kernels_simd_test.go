//go:build goexperiment.simd && amd64

package builtin

import (
	"strings"
	"testing"
)

// The AVX2 kernels run on every AVX-512 CPU with GODEBUG=cpu.avx512f=off,
// so both sets are held to the references here, each on every shape (the
// dispatch gives the 512-bit kernels long rows only).
func init() {
	if !haveAVX2 {
		return
	}
	f32Kernels["avx2"] = func(out []float32, m *Matrix, x []float32, lo, hi int) {
		dotRowsVector(out, m.F32, x, lo, hi, m.Cols, m.Cols, dotAVX2)
	}
	q8Kernels["avx2"] = func(out []float32, m *Matrix, x *quantized, lo, hi int) {
		matVecQ8Vector(out, m, x, lo, hi, false)
	}
	if !haveAVX512 {
		return
	}
	f32Kernels["avx512"] = func(out []float32, m *Matrix, x []float32, lo, hi int) {
		dotRowsVector(out, m.F32, x, lo, hi, m.Cols, m.Cols, dotAVX512)
	}
	q8Kernels["avx512"] = func(out []float32, m *Matrix, x *quantized, lo, hi int) {
		matVecQ8Vector(out, m, x, lo, hi, true)
	}
}

func TestKernelNameSaysWhatRuns(t *testing.T) {
	if strings.Contains(KernelName, "AVX-512") != haveAVX512 {
		t.Errorf("KernelName %q, AVX-512 in use: %v", KernelName, haveAVX512)
	}
}
