//go:build goexperiment.simd && amd64

package builtin

import (
	"strings"
	"testing"
)

// Attention's row kernel (dotRows) is held to the references with the
// matrix kernels, on every shape.
func init() {
	if !haveAVX2 {
		return
	}
	f32Kernels["rows"] = func(out []float32, m *Matrix, x []float32, lo, hi int) {
		dotRowsVector(out, m.F32, x, lo, hi, m.Cols, m.Cols, dotAVX2)
	}
}

func TestKernelNameSaysWhatRuns(t *testing.T) {
	if strings.Contains(KernelName, "AVX2") != haveAVX2 {
		t.Errorf("KernelName %q, AVX2 in use: %v", KernelName, haveAVX2)
	}
}
