//go:build goexperiment.simd && amd64

package builtin

import (
	"fmt"
	"math"
	"runtime"
	"simd/archsimd"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// readWords sums words with the widest loads this CPU has, four vectors
// in flight. A scalar loop understated the bandwidth here: 30.8 GB/s on
// one thread against 35–37 through AVX2 or AVX-512 loads (two threads
// were within noise of each other), and the kernels read with vectors.
func readWords(words []uint64) uint64 {
	if len(words) < 32 || !haveAVX2 {
		return readWordsScalar(words)
	}
	p := unsafe.Pointer(unsafe.SliceData(words))
	wide := archsimd.X86.AVX512()
	step := 16 // words per step: four vectors
	if wide {
		step = 32
	}
	full := len(words) / step * step
	end := uintptr(full) * 8
	var lanes [8]uint64
	if wide {
		var a0, a1, a2, a3 archsimd.Uint64x8
		for off := uintptr(0); off+256 <= end; off += 256 {
			a0 = a0.Add(archsimd.LoadUint64x8((*[8]uint64)(unsafe.Add(p, off))))
			a1 = a1.Add(archsimd.LoadUint64x8((*[8]uint64)(unsafe.Add(p, off+64))))
			a2 = a2.Add(archsimd.LoadUint64x8((*[8]uint64)(unsafe.Add(p, off+128))))
			a3 = a3.Add(archsimd.LoadUint64x8((*[8]uint64)(unsafe.Add(p, off+192))))
		}
		a0.Add(a1).Add(a2.Add(a3)).Store(&lanes)
	} else {
		var a0, a1, a2, a3 archsimd.Uint64x4
		for off := uintptr(0); off+128 <= end; off += 128 {
			a0 = a0.Add(archsimd.LoadUint64x4((*[4]uint64)(unsafe.Add(p, off))))
			a1 = a1.Add(archsimd.LoadUint64x4((*[4]uint64)(unsafe.Add(p, off+32))))
			a2 = a2.Add(archsimd.LoadUint64x4((*[4]uint64)(unsafe.Add(p, off+64))))
			a3 = a3.Add(archsimd.LoadUint64x4((*[4]uint64)(unsafe.Add(p, off+96))))
		}
		a0.Add(a1).Add(a2.Add(a3)).Store((*[4]uint64)(lanes[:4]))
	}
	archsimd.ClearAVXUpperBits()
	sum := readWordsScalar(words[full:])
	for _, v := range lanes {
		sum += v
	}
	return sum
}

// fmaChains runs twelve independent chains of n 8-wide FMAs, all in
// registers: more than the eight that two FMA pipes of four cycles'
// latency need to stay busy, so it runs at the core's peak, the ceiling
// the f32 kernels' GFLOP/s are read against.
func fmaChains(n int) float32 {
	if !haveAVX2 {
		return 0
	}
	m, c := archsimd.BroadcastFloat32x8(0.999), archsimd.BroadcastFloat32x8(0.001)
	// Each chain starts apart, or the compiler merges twelve equal chains
	// into one.
	start := func(i float32) archsimd.Float32x8 { return archsimd.BroadcastFloat32x8(i) }
	a0, a1, a2, a3 := start(0), start(1), start(2), start(3)
	a4, a5, a6, a7 := start(4), start(5), start(6), start(7)
	a8, a9, a10, a11 := start(8), start(9), start(10), start(11)
	for range n {
		a0, a1, a2, a3 = a0.MulAdd(m, c), a1.MulAdd(m, c), a2.MulAdd(m, c), a3.MulAdd(m, c)
		a4, a5, a6, a7 = a4.MulAdd(m, c), a5.MulAdd(m, c), a6.MulAdd(m, c), a7.MulAdd(m, c)
		a8, a9, a10, a11 = a8.MulAdd(m, c), a9.MulAdd(m, c), a10.MulAdd(m, c), a11.MulAdd(m, c)
	}
	var lanes [8]float32
	a0.Add(a1).Add(a2.Add(a3)).Add(a4.Add(a5).Add(a6.Add(a7))).Add(a8.Add(a9).Add(a10.Add(a11))).Store(&lanes)
	archsimd.ClearAVXUpperBits()
	return lanes[0]
}

// BenchmarkFMAPeak is one core's f32 FMA peak (8-wide, AVX2), in the
// GFLOP/s BenchmarkPrefillProduct reports: the clock the core really runs
// at, boost included, not the one its name states.
func BenchmarkFMAPeak(b *testing.B) {
	if !haveAVX2 {
		b.Skip("no AVX2")
	}
	const n = 1 << 16
	var last float32
	for b.Loop() {
		last = fmaChains(n)
	}
	b.ReportMetric(float64(n*12*16)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	// Each chain a → 0.999a + 0.001 ends at 1 only after thousands of
	// steps (chain i is 1 + (i−1)·0.999^k after k), so a sum of 12 says
	// every FMA ran; the figure above counts them.
	if math.Abs(float64(last)-12) > 0.01 {
		b.Fatalf("the chains sum to %v, not 12: they did not all run", last)
	}
}

// BenchmarkGGUFStepAgainstStream asks how close a decode step of an f32
// GGUF (TOKENTOP_BENCH_GGUF) comes to the memory's speed for f32TilesVec,
// on one thread and on two: it times eight steps against eight passes of
// the kernel over the model's whole tile memory at once (no gaps between
// matrices, no attention or norms between them), and both against eight
// plain reads of the same bytes (readWords: one stream, the widest loads,
// no arithmetic to speak of), by turns (step, pass, read, read, pass, step
// an iteration, as this VM's memory moves within minutes). On two threads
// the pass and the read give each thread one contiguous half, where the
// step's pool hands out each matrix in chunks. It reports each as GB/s of
// the tiles, the step's share of the pass's speed and the pass's share of
// the read's. A step/pass near 1 says the step loses nothing around the
// kernel; a pass/read near 1 or above says the kernel reads its tiles as
// fast as a plain read of memory on these threads does.
func BenchmarkGGUFStepAgainstStream(b *testing.B) {
	m := loadBenchGGUF(b, "an f32 GGUF file")
	mem := m.Weights.tileMemory
	if mem == nil || mem.all == nil {
		b.Skip("the file has no f32 tiles (a quantized file, or a CPU without AVX2)")
	}
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			stepAgainstStream(b, m, threads)
		})
	}
}

func stepAgainstStream(b *testing.B, m *Model, threads int) {
	mem := m.Weights.tileMemory
	cols := m.Weights.Shape.Dim
	// A pass reads the whole tiles of the width that fit, less than one
	// tile short of the memory's end; the read takes the same bytes.
	tiles := len(mem.all) / f32TileBytes(cols)
	passBytes := tiles * f32TileBytes(cols)
	e := NewEngine(m, threads)
	defer e.Close()
	st := NewState(m.Weights)
	const tokens = 8
	step := func() time.Duration {
		start := time.Now()
		for pos := range tokens {
			e.forwardOne(st, 1, pos)
		}
		return time.Since(start)
	}
	x := make([]float32, cols)
	out := make([]float32, tiles*tileRows)
	sinks := make([]uint64, threads)
	// split runs each thread's contiguous share of the tiles, [lo, hi),
	// tokens times, all threads at once.
	split := func(each func(thread, lo, hi int)) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		for t := range threads {
			wg.Go(func() {
				lo, hi := tiles*t/threads, tiles*(t+1)/threads
				for range tokens {
					each(t, lo, hi)
				}
			})
		}
		wg.Wait()
		return time.Since(start)
	}
	pass := func() time.Duration {
		return split(func(_, lo, hi int) {
			f32TilesVec(unsafe.Pointer(&mem.all[lo*f32TileBytes(cols)]), hi-lo, cols, unsafe.Pointer(&x[0]), unsafe.Pointer(&out[lo*tileRows]))
		})
	}
	read := func() time.Duration {
		return split(func(t, lo, hi int) {
			share := mem.all[lo*f32TileBytes(cols) : hi*f32TileBytes(cols)]
			sinks[t] += readWords(unsafe.Slice((*uint64)(unsafe.Pointer(&share[0])), len(share)/8))
		})
	}
	step() // the first step makes the cache's pages
	var steps, passes, reads time.Duration
	for b.Loop() {
		steps += step()
		passes += pass()
		reads += read() + read()
		passes += pass()
		steps += step()
	}
	gbps := func(bytes int, d time.Duration) float64 {
		return float64(2*tokens*b.N) * float64(bytes) / d.Seconds() / 1e9
	}
	stepSpeed, passSpeed, readSpeed := gbps(len(mem.all), steps), gbps(passBytes, passes), gbps(passBytes, reads)
	b.ReportMetric(stepSpeed, "step-GB/s")
	b.ReportMetric(passSpeed, "pass-GB/s")
	b.ReportMetric(readSpeed, "read-GB/s")
	b.ReportMetric(stepSpeed/passSpeed, "step/pass")
	b.ReportMetric(passSpeed/readSpeed, "pass/read")
	runtime.KeepAlive(sinks)
}
