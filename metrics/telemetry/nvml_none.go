//go:build !(linux && cgo)

package telemetry

import "runtime"

// findNVML says why this build reads no NVIDIA GPU: go-nvml loads the
// driver's library through cgo, and only on Linux.
func findNVML() (*gpuSet, string) {
	if runtime.GOOS == "linux" {
		return nil, "no NVIDIA GPU power: built without cgo (NVML needs CGO_ENABLED=1)"
	}
	return nil, "no NVIDIA GPU power: NVML is read only by the Linux build with cgo"
}
