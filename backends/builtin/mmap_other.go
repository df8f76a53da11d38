//go:build !unix

package builtin

import "os"

// mapFile reads path whole where mmap is not available.
func mapFile(path string) ([]byte, error) { return os.ReadFile(path) }
