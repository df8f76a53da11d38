//go:build !(goexperiment.simd && amd64)

package builtin

import (
	"strings"
	"testing"
)

func TestPortableKernelsSayWhatWouldBeFaster(t *testing.T) {
	if name := portableKernelName("amd64"); !strings.Contains(name, "GOEXPERIMENT=simd") {
		t.Errorf("amd64: %q", name)
	}
	if name := portableKernelName("arm64"); !strings.Contains(name, "none yet for arm64") || strings.Contains(name, "AVX2") {
		t.Errorf("arm64: %q", name)
	}
}
