//go:build !(goexperiment.simd && amd64)

package builtin

// readWords sums words in scalar code, all this build can read with. Its
// bandwidth figure is lower than the SIMD build's (30.8 against 35–37
// GB/s on one thread here), so the speed page's shares of bandwidth use the
// SIMD build's.
func readWords(words []uint64) uint64 { return readWordsScalar(words) }
