//go:build !(goexperiment.simd && amd64)

package builtin

// KernelName says which kernels this build computes with.
const KernelName = "portable Go (build with GOEXPERIMENT=simd for AVX2)"

func dot(a, b []float32) float32               { return dotGeneric(a, b) }
func axpy(y []float32, a float32, x []float32) { axpyGeneric(y, a, x) }
func matVecF32(out []float32, m *Matrix, x []float32, lo, hi int) {
	matVecF32Generic(out, m, x, lo, hi)
}
func matVecQ8(out []float32, m *Matrix, x *quantized, lo, hi int) { matVecQ8Generic(out, m, x, lo, hi) }
