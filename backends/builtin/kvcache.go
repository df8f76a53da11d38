package builtin

// kvCache is one stream's cached keys and values: layers × kv heads ×
// positions × head size, head by head, so that a head reads its keys and
// values as two sequential streams (see attendHeads).
//
// A model whose weights are quantized, or 16-bit floats (an F16 or BF16
// file's), keeps them as halves, as llama.cpp keeps its cache by default:
// attention reads half the bytes a token (at long contexts a sizeable
// part of what decode reads), and a long context holds half the memory.
// The scores and the mix then do what llama.cpp does with such a cache
// when flash attention is off: the query and the softmax's weights are
// rounded to halves too (ggml converts a product's f32 input to its
// matrix's type), and each half is widened to a float as it is loaded. A
// model whose weights are all f32 keeps floats, so that every number of
// its forward pass stays a float32. Each is checked against llama.cpp
// with the same cache (archs_test.go).
type kvCache struct {
	keys, values         []float32
	halfKeys, halfValues []uint16
}

// newKVCache makes a cache of n keys and n values, as format names
// (cacheFormat). Where Go takes a slice this large from memory fresh from
// the OS (already zero, so not written to clear it), the pages of
// positions a stream never reaches never become resident.
func newKVCache(n int, format string) kvCache {
	if format == "f16" {
		return kvCache{halfKeys: make([]uint16, n), halfValues: make([]uint16, n)}
	}
	return kvCache{keys: make([]float32, n), values: make([]float32, n)}
}

// cacheFormat names what w's streams keep their caches as: "f16" where
// any of its matrices is stored in fewer bits than a float (quantized, or
// an F16 or BF16 file's halves), else "f32".
func cacheFormat(w *Weights) string {
	if w.rowsOfHalves {
		return "f16"
	}
	for _, m := range w.matrices() {
		if (*m).DType() != formatF32.String() {
			return "f16"
		}
	}
	return "f32"
}

// format names what the cache keeps: "f16" or "f32".
func (c *kvCache) format() string {
	if c.halfKeys != nil {
		return "f16"
	}
	return "f32"
}

// store writes one head's key and value at offset at.
func (c *kvCache) store(at int, k, v []float32) {
	if c.halfKeys != nil {
		storeHalves(c.halfKeys[at:at+len(k)], k)
		storeHalves(c.halfValues[at:at+len(v)], v)
		return
	}
	copy(c.keys[at:at+len(k)], k)
	copy(c.values[at:at+len(v)], v)
}

// attnBlockBytes is how much of a kv head's keys (or values) the heads
// that share it take in turn, for each of a stream's tokens
// (attendHeads): a block stays in L1 (32 KiB or more on the CPUs this
// runs on) beside the queries and sums.
const attnBlockBytes = 16 << 10

// attnQueryBytes is about how much of a stream's queries (a run of a
// prompt chunk's tokens, the heads of a group) take each block together
// (attnJob): with the block they stay in L1. A 2048-token prompt of
// Qwen3-0.6B F32 (two heads of 128 a kv head, whose keys alone are 1 MB
// at the end) read 62.6 tok/s token by token, 66.4-67.0 with 4-8 KiB of
// queries a run and 63.4 with the chunk's whole 64 KiB, on one thread
// (BenchmarkGGUFFile/pp2048); Qwen2.5-0.5B, Llama-3.2-1B and stories110M,
// whose groups share more or whose caches fit L2, moved by no more than
// the noise.
const attnQueryBytes = 8 << 10

// blockRows is how many positions of keys or values, hs values each, make
// one of attendHeads' blocks.
func (c *kvCache) blockRows(hs int) int {
	bytes := 4
	if c.halfKeys != nil {
		bytes = 2
	}
	return max(8, attnBlockBytes/(hs*bytes)&^7)
}

// roundAsStored rounds v in place to what the cache holds: to halves
// where it holds halves, as ggml converts a product's f32 input (the
// query, the softmax's weights) to its matrix's type.
func (c *kvCache) roundAsStored(v []float32) {
	if c.halfKeys != nil {
		roundToHalves(v)
	}
}

// scores sets att[t] = key t · q for t in [from, to), the keys of the head
// whose cache starts at headAt (hs values a key), q already rounded as
// stored. scratch (hs floats) is the portable kernels' room to widen a
// row of halves.
func (c *kvCache) scores(att, q []float32, headAt, from, to, hs int, scratch []float32) {
	if c.halfKeys != nil {
		dotRowsHalf(att, c.halfKeys[headAt:headAt+to*hs], q, from, to, hs, hs, scratch)
		return
	}
	dotRows(att, c.keys[headAt:headAt+to*hs], q, from, to, hs, hs)
}

// mix adds Σ_t weights[t]·value start+t of the head whose cache starts at
// headAt to out, the weights already rounded as stored.
func (c *kvCache) mix(out, weights []float32, headAt, start, hs int, scratch []float32) {
	lo, hi := headAt+start*hs, headAt+(start+len(weights))*hs
	if c.halfValues != nil {
		weightedSumHalf(out, weights, c.halfValues[lo:hi], hs, scratch)
		return
	}
	weightedSum(out, weights, c.values[lo:hi], hs)
}
