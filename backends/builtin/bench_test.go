package builtin

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// BenchmarkMatVec reports GFLOP/s of one matrix-vector product on one
// thread, in f32 and Q8_0, at the classifier shape of stories15M and the
// FFN shape of stories110M, through every kernel set the tests hold to the
// references (kernels_test.go): the dispatched one (on rows as NewF32
// makes them, so the portable loop for f32), the portable one and, in the
// SIMD build with AVX2, attention's row kernel, the f32 tiles and, on a
// CPU with VNNI, Q8_0's tiles.
func BenchmarkMatVec(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, shape := range [][2]int{{32000, 288}, {2048, 768}} {
		rows, cols := shape[0], shape[1]
		f32 := NewF32(rows, cols, randomVec(rng, rows*cols))
		q8, _ := f32.Quantize()
		x := randomVec(rng, cols)
		xq := newQuantized(cols)
		xq.quantize(x, allForms)
		out := make([]float32, rows)
		flops := float64(2 * rows * cols)
		report := func(b *testing.B) {
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		}
		for _, name := range slices.Sorted(maps.Keys(f32Kernels)) {
			b.Run(fmt.Sprintf("%dx%d/f32/%s", rows, cols, name), func(b *testing.B) {
				for b.Loop() {
					f32Kernels[name](out, f32, x, 0, rows)
				}
				report(b)
			})
		}
		for _, name := range slices.Sorted(maps.Keys(q8Kernels)) {
			b.Run(fmt.Sprintf("%dx%d/q8_0/%s", rows, cols, name), func(b *testing.B) {
				for b.Loop() {
					q8Kernels[name](out, q8, &xq, 0, rows)
				}
				report(b)
			})
		}
	}
}

// BenchmarkMatVecFormats is BenchmarkMatVec for every format kept as the
// GGUF's blocks, at stories110M's FFN shape (2048×768, held in cache), on
// one thread: the dispatched kernel (the tiles, where the build has them)
// and the portable one, in GFLOP/s; f32 and Q8_0 first, for comparison
// within one run (this machine's speed moves between runs).
func BenchmarkMatVecFormats(b *testing.B) {
	w, x, xq, out := ffnProduct()
	rows, flops := w.Rows, float64(2*w.Rows*w.Cols)
	q8, _ := w.Quantize()
	for _, name := range slices.Sorted(maps.Keys(f32Kernels)) {
		b.Run("f32/"+name, func(b *testing.B) {
			for b.Loop() {
				f32Kernels[name](out, w, x, 0, rows)
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
	for _, name := range slices.Sorted(maps.Keys(q8Kernels)) {
		b.Run("q8_0/"+name, func(b *testing.B) {
			for b.Loop() {
				q8Kernels[name](out, q8, xq, 0, rows)
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
	for f := range formats {
		if !format(f).storedAsBlocks() {
			continue
		}
		m := quantizeTo(b, formats[f].ggml, w)
		for name, kernel := range map[string]func([]float32, *Matrix, *quantized, int, int){"dispatched": matVecBlocks, "portable": matVecBlocksGeneric} {
			b.Run(fmt.Sprintf("%s/%s", format(f), name), func(b *testing.B) {
				for b.Loop() {
					kernel(out, m, xq, 0, rows)
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// ffnProduct is one product of stories110M's FFN shape (2048×768):
// seeded weights, an input in every form, and the output.
func ffnProduct() (w *Matrix, x []float32, xq *quantized, out []float32) {
	rng := rand.New(rand.NewPCG(1, 3))
	w = randomMatrix(rng, 2048, 768)
	x = randomVec(rng, 768)
	q := newQuantized(768)
	q.quantize(x, allForms)
	return w, x, &q, make([]float32, 2048)
}

// BenchmarkPortableAgainstF32 is each format's portable kernel against
// the portable f32 one on the same 2048×768 product, the two timed by
// turns each iteration (this machine's speed drifts within a run, which
// separate benchmarks cannot tell from the kernels): "×f32" is the
// format's speed over f32's, issue 37's bar for the portable build being
// 1 or more.
func BenchmarkPortableAgainstF32(b *testing.B) {
	w, x, xq, out := ffnProduct()
	rows, flops := w.Rows, float64(2*w.Rows*w.Cols)
	for f := range formats {
		if f == int(formatF32) {
			continue
		}
		var m *Matrix
		kernel := matVecBlocksGeneric
		switch f {
		case int(formatQ8_0):
			m, _ = w.Quantize()
			kernel = matVecQ8Generic
		case int(formatIQ4_NL): // its level rows, as the portable build runs it
			m, kernel = iq4NLLevelRows(quantizeTo(b, formats[f].ggml, w)), matVecQ8Generic
		default:
			m = quantizeTo(b, formats[f].ggml, w)
		}
		b.Run(format(f).String(), func(b *testing.B) {
			var f32Time, formatTime time.Duration
			for b.Loop() {
				start := time.Now()
				matVecF32Generic(out, w, x, 0, rows)
				mid := time.Now()
				kernel(out, m, xq, 0, rows)
				f32Time, formatTime = f32Time+mid.Sub(start), formatTime+time.Since(mid)
			}
			b.ReportMetric(f32Time.Seconds()/formatTime.Seconds(), "×f32")
			b.ReportMetric(flops*float64(b.N)/formatTime.Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkTilesHugePages is one decode product read from memory, as the
// engine tiles a quantized matrix (hugePaged), against the same tiles
// copied into memory of small pages, the two timed by turns each
// iteration (this machine's memory speed drifts within a run, which
// separate benchmarks cannot tell from the pages): "×small" is the huge
// pages' speed over the small ones'. The matrix is 16 copies of an
// 8192×2048 one, 144–272 MB of tiles: past every cache.
func BenchmarkTilesHugePages(b *testing.B) {
	const part, copies, cols = 8192, 16, 2048
	rng := rand.New(rand.NewPCG(1, 5))
	w, x := randomMatrix(rng, part, cols), randomVec(rng, cols)
	xq := newQuantized(cols)
	xq.quantize(x, allForms)
	out := make([]float32, part*copies)
	for _, typ := range []uint32{ggmlQ8_0, ggmlQ4_K, ggmlQ6_K} {
		m := quantizeTo(b, typ, w)
		if m.tiles == nil {
			b.Skip("this build or CPU keeps rows")
		}
		// A tile holds all the columns of its rows: copies of the tiles
		// are the tiles of copies of the rows.
		huge := &Matrix{Rows: part * copies, Cols: cols, format: m.format, tiles: hugePaged(len(m.tiles) * copies)}
		for c := range copies {
			copy(huge.tiles[c*len(m.tiles):], m.tiles)
		}
		small := &Matrix{Rows: huge.Rows, Cols: cols, format: m.format, tiles: slices.Clone(huge.tiles)}
		b.Run(m.format.String(), func(b *testing.B) {
			var hugeTime, smallTime time.Duration
			for b.Loop() {
				start := time.Now()
				matVecBlocks(out, huge, &xq, 0, huge.Rows)
				mid := time.Now()
				matVecBlocks(out, small, &xq, 0, small.Rows)
				hugeTime, smallTime = hugeTime+mid.Sub(start), smallTime+time.Since(mid)
			}
			b.ReportMetric(smallTime.Seconds()/hugeTime.Seconds(), "×small")
			b.ReportMetric(float64(len(huge.tiles))*float64(b.N)/hugeTime.Seconds()/1e9, "GB/s")
		})
	}
}

// prefillJob is a 2048×768 matrix (stories110M's FFN shape) and a matJob
// of 64 tokens' activations against it, in every form, its matrix unset.
func prefillJob() (*Matrix, *matJob) {
	rng := rand.New(rand.NewPCG(1, 4))
	w := randomMatrix(rng, 2048, 768)
	j := &matJob{n: 1}
	for range 64 {
		x := randomVec(rng, w.Cols)
		xq := newQuantized(w.Cols)
		xq.quantize(x, allForms)
		j.x, j.xq, j.xb, j.out[0] = append(j.x, x), append(j.xq, &xq), append(j.xb, xq.bf16), append(j.out[0], make([]float32, w.Rows))
	}
	return w, j
}

// BenchmarkPrefillProduct is one matrix against a 64-token prompt chunk
// on one thread, as a batched prefill runs it (matJob, with its blocking):
// the product behind pp64, per format.
func BenchmarkPrefillProduct(b *testing.B) {
	w, j := prefillJob()
	rows, flops := w.Rows, float64(2*w.Rows*w.Cols*len(j.x))
	type product struct {
		name   string
		matrix func(tb testing.TB) *Matrix
	}
	var products []product
	for _, f := range []format{formatF32, formatQ8_0, formatQ4_0, formatQ4_1, formatQ5_0, formatQ5_1, formatIQ4_NL, formatQ2_K, formatQ3_K, formatQ4_K, formatQ5_K, formatQ6_K} {
		products = append(products, product{f.String(), func(tb testing.TB) *Matrix {
			switch f {
			case formatF32:
				return withTiles(w, nil, nil) // as the loader does
			case formatQ8_0:
				q, _ := w.Quantize()
				return withTiles(q, nil, nil) // as the loader does
			}
			return quantizeTo(tb, formats[f].ggml, w)
		}})
	}
	for _, kind := range []halfKind{ieeeHalf, bfloat16} {
		products = append(products, product{kind.String(), func(testing.TB) *Matrix {
			return withTiles(&Matrix{Rows: w.Rows, Cols: w.Cols, halves: halfBytes(kind, w.F32), half: kind, bf16Products: kind == bfloat16}, nil, nil) // as the loader does
		}})
	}
	for _, p := range products {
		b.Run(p.name, func(b *testing.B) {
			j.m[0] = p.matrix(b) // before b.Loop: untimed
			if j.m[0].halves != nil && j.m[0].tiles == nil {
				b.Skip("without AVX2 the loader widens halves to f32 rows: the f32 row's product")
			}
			for b.Loop() {
				j.do(0, rows)
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkEmbedRow is one token's embedding row looked up as decode
// does: from the file's bytes in memory, and through the file (pread,
// what a loaded file's model does: leaveMapping), on the Q8_0 and f32
// test files' untied embeddings, or on TOKENTOP_BENCH_GGUF's (a real
// model's rows are wider). The difference is what the read costs a token.
func BenchmarkEmbedRow(b *testing.B) {
	paths := []string{filepath.Join("testdata", "archs", "llama-q8_0.gguf"), filepath.Join("testdata", "archs", "llama-f32.gguf")}
	if p := os.Getenv("TOKENTOP_BENCH_GGUF"); p != "" {
		paths = []string{p}
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".gguf")
		m, inMemory := loadBothWays(b, path)
		x := make([]float32, m.Weights.Shape.Dim)
		scratch := make([]byte, m.Weights.embedRows.rowBytes())
		for _, c := range []struct {
			from string
			w    *Weights
		}{{"memory", inMemory}, {"file", m.Weights}} {
			b.Run(name+"/"+c.from, func(b *testing.B) {
				token := 0
				for b.Loop() {
					c.w.embed(x, token, scratch)
					token = (token + 7919) % c.w.Shape.Vocab
				}
			})
		}
		m.Weights.embedRows.close()
	}
}

// BenchmarkPrefillProductFromMemory is BenchmarkPrefillProduct's f32
// product as the engine meets its weights: each iteration takes the next
// of 16 such matrices (96 MB, more than any L3 cache), so every block of
// rows comes from memory before the tokens reuse it from the cache
// (from=memory); from=cache repeats one matrix. Against 6, 12, 24 and 64
// tokens: with one group of six there is no read ahead of the next block
// (matMatF32), so the gap between the two is what memory costs a block's
// first pass; with more, what the read ahead leaves of it.
func BenchmarkPrefillProductFromMemory(b *testing.B) {
	w, j := prefillJob()
	rng := rand.New(rand.NewPCG(2, 4))
	ms := []*Matrix{withTiles(w, nil, nil)}
	for len(ms) < 16 {
		ms = append(ms, withTiles(randomMatrix(rng, w.Rows, w.Cols), nil, nil))
	}
	xs, outs := j.x, j.out[0]
	for _, tokens := range []int{6, 12, 24, 64} {
		for _, from := range []string{"memory", "cache"} {
			b.Run(fmt.Sprintf("tokens=%d/from=%s", tokens, from), func(b *testing.B) {
				j.x, j.out[0] = xs[:tokens], outs[:tokens]
				i := 0
				for b.Loop() {
					j.m[0] = ms[0]
					if from == "memory" {
						j.m[0] = ms[i%len(ms)]
					}
					j.do(0, w.Rows)
					i++
				}
				b.ReportMetric(float64(2*w.Rows*w.Cols*tokens)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkPrefillProductThreads is BenchmarkPrefillProduct's Q8_0 and f32
// products through the engine's pool, on one and two threads: the pool's
// share of prefill's two-thread speed (its chunks let a thread the host
// slows take fewer).
func BenchmarkPrefillProductThreads(b *testing.B) {
	w, j := prefillJob()
	q8, _ := w.Quantize()
	flops := float64(2 * w.Rows * w.Cols * len(j.x))
	for _, m := range []*Matrix{withTiles(w, nil, nil), withTiles(q8, nil, nil)} {
		for _, threads := range []int{1, 2} {
			p := NewPool(threads)
			j.m[0] = m
			b.Run(fmt.Sprintf("%s/threads=%d", m.DType(), threads), func(b *testing.B) {
				for b.Loop() {
					p.run(j)
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
			p.Close()
		}
	}
}

func benchEngine(b *testing.B, model, dtype string, threads int) *Engine {
	b.Helper()
	m, err := Load(model, dtype)
	if err != nil {
		b.Fatal(err)
	}
	e := NewEngine(m, threads)
	b.Cleanup(e.Close)
	return e
}

// BenchmarkDecodeStep is one greedy token (forward pass and argmax) at
// position 64 of each shipped shape, as tokens per second.
func BenchmarkDecodeStep(b *testing.B) {
	for _, model := range []string{"stories260K", "stories15M-synthetic", "stories42M-synthetic", "stories110M-synthetic"} {
		for _, dtype := range []string{"f32", "q8_0"} {
			if model == "stories260K" && dtype == "q8_0" {
				continue // its 172-wide hidden layer is not a multiple of 32
			}
			for _, threads := range []int{1, 2} {
				b.Run(fmt.Sprintf("%s/%s/threads=%d", model, dtype, threads), func(b *testing.B) {
					benchDecode(b, benchEngine(b, model, dtype, threads))
				})
			}
		}
	}
}

// benchDecode times one greedy decode step at position 64 (after 64
// steps fill the cache), reporting tok/s and the weights streamed per
// second: against BenchmarkMemoryBandwidth, the share of the machine's
// bandwidth a decode step uses.
func benchDecode(b *testing.B, e *Engine) {
	st := NewState(e.Model.Weights)
	for pos := range 64 {
		e.forwardOne(st, 1, pos)
	}
	for b.Loop() {
		argmax(e.forwardOne(st, 1, 64))
	}
	tps := float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(tps, "tok/s")
	b.ReportMetric(tps*float64(e.Model.Weights.BytesPerToken())/1e9, "weight-GB/s")
}

// BenchmarkMemoryBandwidth streams a buffer far larger than the caches
// (512 MiB), summing it with readWords (vector loads in the SIMD build),
// with 1 and 2 goroutines each reading its half: the read bandwidth a
// decode step's weights compete for. It reads the buffer through small
// pages ("threads=N") and through huge ones where the kernel gives them
// ("huge-pages/threads=N", advised as the f32 tiles are: adviseHugePages).
func BenchmarkMemoryBandwidth(b *testing.B) {
	for _, huge := range []bool{false, true} {
		buf := make([]uint64, 512<<20/8)
		prefix := ""
		if huge {
			adviseHugePages(unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), len(buf)*8))
			prefix = "huge-pages/"
		}
		for i := range buf {
			buf[i] = uint64(i)
		}
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%sthreads=%d", prefix, threads), func(b *testing.B) {
				var sink atomic.Uint64
				for b.Loop() {
					var wg sync.WaitGroup
					part := len(buf) / threads
					for t := range threads {
						wg.Go(func() { sink.Add(readWords(buf[t*part : (t+1)*part])) })
					}
					wg.Wait()
				}
				b.ReportMetric(float64(len(buf)*8)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	}
}

// readWordsScalar sums words with four scalar accumulators.
func readWordsScalar(words []uint64) uint64 {
	var s0, s1, s2, s3 uint64
	i := 0
	for ; i+4 <= len(words); i += 4 {
		s0 += words[i]
		s1 += words[i+1]
		s2 += words[i+2]
		s3 += words[i+3]
	}
	for ; i < len(words); i++ {
		s0 += words[i]
	}
	return s0 + s1 + s2 + s3
}

// readWords must read every word: a fast loop that skipped some would
// overstate the bandwidth.
func TestReadWordsSumsEveryWord(t *testing.T) {
	for _, n := range []int{0, 3, 31, 32, 33, 100, 1000, 4099} {
		words := make([]uint64, n)
		var want uint64
		for i := range words {
			words[i] = uint64(i)*0x9e3779b97f4a7c15 + 1
			want += words[i]
		}
		if got := readWords(words); got != want {
			t.Errorf("%d words: sum %d, want %d", n, got, want)
		}
	}
}

// BenchmarkPrefill64 runs a 64-token prompt through stories15M's and
// stories110M's shapes, as one batched pass (chunk 64) and token by token
// (chunk 1), at 1 and 2 threads.
func BenchmarkPrefill64(b *testing.B) {
	for _, model := range []string{"stories15M-synthetic", "stories110M-synthetic"} {
		for _, dtype := range []string{"f32", "q8_0"} {
			for _, threads := range []int{1, 2} {
				for _, chunk := range []int{PrefillChunk, 1} {
					b.Run(fmt.Sprintf("%s/%s/threads=%d/chunk=%d", model, dtype, threads, chunk), func(b *testing.B) {
						e := benchEngine(b, model, dtype, threads)
						e.chunk = chunk
						benchPrefill64(b, e)
					})
				}
			}
		}
	}
}

// benchPrefill64 times the prefill of a 64-token prompt, in prompt tok/s,
// after one untimed prefill, as llama-bench runs one before it times any:
// the first makes the engine's pooled State, whose pages a stream's
// trials after its warmup find ready.
func benchPrefill64(b *testing.B, e *Engine) {
	prompt := make([]int, 64)
	for i := range prompt {
		prompt[i] = 3 + i
	}
	e.Generate(context.Background(), prompt, 0, Sampling{}, func(int) {})
	for b.Loop() {
		e.Generate(context.Background(), prompt, 0, Sampling{}, func(int) {})
	}
	b.ReportMetric(64*float64(b.N)/b.Elapsed().Seconds(), "prompt-tok/s")
}

// BenchmarkSyntheticLoad is the start-up cost of synthetic weights.
func BenchmarkSyntheticLoad(b *testing.B) {
	for _, name := range []string{"stories15M", "stories110M"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				Synthetic(SyntheticShapes[name], 1)
			}
		})
	}
}

// BenchmarkGenerate256 decodes 256 greedy tokens from BOS and reports
// tok/s over the whole loop, measured as llama2.c's run.c reports it, for
// comparison with the C baseline in testdata/cref.
func BenchmarkGenerate256(b *testing.B) {
	for _, model := range []string{"stories15M-synthetic", "stories42M-synthetic", "stories110M-synthetic"} {
		for _, dtype := range []string{"f32", "q8_0"} {
			for _, threads := range []int{1, 2} {
				b.Run(fmt.Sprintf("%s/%s/threads=%d", model, dtype, threads), func(b *testing.B) {
					e := benchEngine(b, model, dtype, threads)
					for b.Loop() {
						g, _ := e.Generate(context.Background(), []int{tokenBOS}, 255, Sampling{}, func(int) {})
						if g.StopReason == "stop" {
							b.Fatal("a synthetic model produced end of sequence; the loop would be short")
						}
					}
					b.ReportMetric(256*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
				})
			}
		}
	}
}

// BenchmarkPoolHandOff times one 2048×768 matvec handed to two threads,
// with the worker still polling (as inside a forward pass) or parked
// (idle longer than spinFor), against one thread: the cost the pool's
// bounded poll exists to avoid.
func BenchmarkPoolHandOff(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	const rows, cols = 2048, 768
	for _, dtype := range []string{"f32", "q8_0"} {
		m := NewF32(rows, cols, randomVec(rng, rows*cols))
		if dtype == "q8_0" {
			m, _ = m.Quantize()
		}
		x := randomVec(rng, cols)
		xq := newQuantized(cols)
		out := make([]float32, rows)
		for _, c := range []struct {
			name    string
			threads int
			idle    time.Duration
		}{
			{"one-thread", 1, 0}, {"two-threads-polling", 2, 0},
			// Idle time cools caches too: compare parked with one-thread-after-idle.
			{"one-thread-after-idle", 1, 4 * spinFor}, {"two-threads-parked", 2, 4 * spinFor},
		} {
			b.Run(dtype+"/"+c.name, func(b *testing.B) {
				p := NewPool(c.threads)
				defer p.Close()
				for b.Loop() {
					if c.idle > 0 {
						b.StopTimer()
						time.Sleep(c.idle)
						b.StartTimer()
					}
					runMatVec(p, m, out, x, &xq)
				}
			})
		}
	}
}

// BenchmarkAttention is one layer's attention (every head, one thread) at
// positions 255 and 2047: scores, softmax and the weighted sum over the
// cached keys and values, from a cache of floats and one of halves. Its
// shapes are stories110M's (twelve heads of 64, each its own kv head; the
// context stretched to 2048) and Qwen2.5-0.5B's (fourteen heads of 64 in
// two groups of seven sharing a kv head).
func BenchmarkAttention(b *testing.B) {
	qwen := Shape{Dim: 896, HiddenDim: 256, Layers: 4, Heads: 14, KVHeads: 2, Vocab: 256, SeqLen: 2048}
	stories := SyntheticShapes["stories110M"]
	stories.SeqLen = 2048
	for _, shape := range []struct {
		name  string
		shape Shape
	}{{"stories110M", stories}, {"qwen2.5-0.5B", qwen}} {
		for _, format := range []string{"f32", "f16"} {
			for _, pos := range []int{255, 2047} {
				b.Run(fmt.Sprintf("%s/%s/pos=%d", shape.name, format, pos), func(b *testing.B) {
					st := NewState(Synthetic(shape.shape, 1))
					st.cache = filledCache(rand.New(rand.NewPCG(3, 4)), len(st.cache.keys), format)
					copy(st.q, randomVec(rand.New(rand.NewPCG(5, 6)), len(st.q)))
					st.pos = pos
					job := newAttnJob([][]*State{{st}}, 3, st.w.Shape, 1)
					for b.Loop() {
						job.do(0, job.parts())
					}
				})
			}
		}
	}
}

// BenchmarkQuantize is the activation quantizer before a Q8_0 product
// (stories110M's hidden width), as ns per value: the build's kernel and
// the portable one.
func BenchmarkQuantize(b *testing.B) {
	x := randomVec(rand.New(rand.NewPCG(5, 6)), 2048)
	xq := newQuantized(len(x))
	for name, quantize := range map[string]func([]int8, []float32, []float32){"build": quantizeInto, "portable": quantizeGeneric} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				quantize(xq.q, xq.scales, x)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/value")
		})
	}
}

// BenchmarkConcurrentStreams runs N streams of 64 greedy tokens at once
// on two threads and reports the aggregate tok/s: the engine's batched
// passes against N = 1.
func BenchmarkConcurrentStreams(b *testing.B) {
	for _, model := range []string{"stories15M-synthetic", "stories110M-synthetic"} {
		for _, dtype := range []string{"f32", "q8_0"} {
			for _, streams := range []int{1, 2, 4, 8} {
				b.Run(fmt.Sprintf("%s/%s/streams=%d", model, dtype, streams), func(b *testing.B) {
					e := benchEngine(b, model, dtype, 2)
					for b.Loop() {
						var wg sync.WaitGroup
						for range streams {
							wg.Go(func() {
								e.Generate(context.Background(), []int{tokenBOS}, 64, Sampling{IgnoreEOS: true}, func(int) {})
							})
						}
						wg.Wait()
					}
					b.ReportMetric(float64(64*streams*b.N)/b.Elapsed().Seconds(), "tok/s")
				})
			}
		}
	}
}

// BenchmarkGGUFFile times the GGUF named by $TOKENTOP_BENCH_GGUF as
// llama-bench times a model, for testdata/speed-table.sh: tg128 decodes
// 128 tokens one at a time from an empty context (or one holding
// $TOKENTOP_BENCH_DEPTH tokens), pp64 runs a 64-token prompt as one
// batch; tok/s over the whole, at 1 and 2 threads. Without the variable
// it does nothing.
func BenchmarkGGUFFile(b *testing.B) {
	// One load for both thread counts: a 1B model's f32 file takes tens
	// of seconds to tile, and speed-table.sh runs each sub-benchmark as
	// a process of its own.
	m := loadBenchGGUF(b, "a GGUF file")
	// TOKENTOP_BENCH_DEPTH tokens of a prompt are in the cache before each
	// tg128, as llama-bench's -d puts them there.
	depth := 0
	if d := os.Getenv("TOKENTOP_BENCH_DEPTH"); d != "" {
		var err error
		if depth, err = strconv.Atoi(d); err != nil || depth < 0 || depth+128 > m.Weights.Shape.SeqLen {
			b.Fatalf("TOKENTOP_BENCH_DEPTH=%q: want a count of tokens from 0 to %d (the context less 128)", d, m.Weights.Shape.SeqLen-128)
		}
	}
	for _, threads := range []int{1, 2} {
		e := NewEngine(m, threads)
		b.Run(fmt.Sprintf("tg128/threads=%d", threads), func(b *testing.B) {
			// One State for every round, as a stream keeps its own across
			// generations: each position is written before it is read. One
			// untimed token first, as llama-bench's warmup decodes one.
			st := NewState(e.Model.Weights)
			readPrompt(e, st, depth)
			e.forwardOne(st, 1, depth)
			for b.Loop() {
				for pos := depth; pos < depth+128; pos++ {
					e.forwardOne(st, 1, pos)
				}
			}
			b.ReportMetric(128*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
		})
		b.Run(fmt.Sprintf("pp64/threads=%d", threads), func(b *testing.B) { benchPrefill64(b, e) })
		if depth > 0 { // the depth's prompt itself, as llama-bench's -p times one
			b.Run(fmt.Sprintf("pp%d/threads=%d", depth, threads), func(b *testing.B) {
				st := NewState(e.Model.Weights)
				for b.Loop() {
					readPrompt(e, st, depth)
				}
				b.ReportMetric(float64(depth*b.N)/b.Elapsed().Seconds(), "tok/s")
			})
		}
		e.Close()
	}
}

// BenchmarkLoad times Load of a file (TOKENTOP_BENCH_GGUF): mapping,
// tiling and its checksum, what a run waits for before its first trial.
// Each load's weights are garbage at the next.
func BenchmarkLoad(b *testing.B) {
	for b.Loop() {
		loadBenchGGUF(b, "a GGUF file")
	}
}

// loadBenchGGUF loads the GGUF named by $TOKENTOP_BENCH_GGUF, or skips b
// where the variable is unset, saying it wants what.
func loadBenchGGUF(b *testing.B, what string) *Model {
	path := os.Getenv("TOKENTOP_BENCH_GGUF")
	if path == "" {
		b.Skip("set TOKENTOP_BENCH_GGUF to " + what)
	}
	m, err := Load(path, "")
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// readPrompt runs a prompt of n tokens into st's cache from position 0, in
// the engine's chunks (PrefillChunk), as Generate reads one.
func readPrompt(e *Engine, st *State, n int) {
	for at := 0; at < n; at += PrefillChunk {
		prompt := make([]int, min(PrefillChunk, n-at))
		for i := range prompt {
			prompt[i] = 3 + (at+i)%64
		}
		var p pass
		st.prompt, st.pos, st.sample = prompt, at, false
		p.add(st)
		e.forward(&p)
	}
	st.prompt = nil
}

// BenchmarkSoftcap is the logits' soft cap over Gemma 3's 262,144-token
// vocabulary, once a token: the serial work the classifier's job now
// splits between the threads.
func BenchmarkSoftcap(b *testing.B) {
	logits := make([]float32, 262144)
	for i := range logits {
		logits[i] = float32(i%200) - 100
	}
	for b.Loop() {
		softcap(logits, 30)
	}
}
