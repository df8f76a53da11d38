//go:build goexperiment.simd

#include "textflag.h"

// The attention kernels (kvcache.go). Over a cache of halves each is its
// f32 twin (dotFloatRows, weightedSumFloats) with every
// cached value widened by VCVTPH2PS as it is loaded, so each lane does
// the same FMAs in the same order on the same floats, and the results
// are the f32 kernels' on the widened cache bit for bit.

// DOT_ROWS is the body of dotFloatRows and dotHalfRows:
// out[r] = Σ_i row r[i]·x[i] for the n (≥ 1) rows, each stride bytes after
// the last, cols (a multiple of 8) values each, LOADK(I, Y) loading the 8
// values from column AX+I of the row at SI into Y as floats. Each row sums
// into four accumulators over 32 columns, then 8 at a time into the
// first, then a0+a1 + (a2+a3) (the Go kernel this replaced, bit for bit);
// its eight lanes wait in the frame, and four rows' lanes at a time go
// through horizontal sums (pairs, pairs of pairs, the two halves); of a
// last group of fewer rows, only their sums are stored (the frame's other
// slots hold what is left from before). x's
// first 64 columns stay in Y8-Y15 across the rows, so a row of a head of
// 64 loads only its own 256 bytes; a head's wider columns are loaded
// beside the row's.
#define DOT_ROWS(LOADK) \
	MOVQ out+0(FP), DI \
	MOVQ rows+8(FP), SI \
	MOVQ stride+16(FP), DX \
	MOVQ n+24(FP), R9 \
	MOVQ cols+32(FP), R10 \
	MOVQ x+40(FP), R8 \
	MOVQ R10, R11 \
	ANDQ $-32, R11 \
	MOVQ R11, CX \
	CMPQ CX, $64 \
	JBE  rowsheld \
	MOVQ $64, CX \
rowsheld: \
	CMPQ    CX, $32 \
	JB      rowsgroup \
	VMOVUPS 0(R8), Y8 \
	VMOVUPS 32(R8), Y9 \
	VMOVUPS 64(R8), Y10 \
	VMOVUPS 96(R8), Y11 \
	CMPQ    CX, $64 \
	JB      rowsgroup \
	VMOVUPS 128(R8), Y12 \
	VMOVUPS 160(R8), Y13 \
	VMOVUPS 192(R8), Y14 \
	VMOVUPS 224(R8), Y15 \
rowsgroup: \
	MOVQ    $4, R12 \
	CMPQ    R9, R12 \
	CMOVQLT R9, R12 \
	XORQ    BX, BX \
rowsrow: \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
	XORQ   AX, AX \
	CMPQ   CX, $32 \
	JB     rowsfour \
	LOADK(0, Y4) \
	VFMADD231PS Y8, Y4, Y0 \
	LOADK(8, Y5) \
	VFMADD231PS Y9, Y5, Y1 \
	LOADK(16, Y6) \
	VFMADD231PS Y10, Y6, Y2 \
	LOADK(24, Y7) \
	VFMADD231PS Y11, Y7, Y3 \
	MOVQ        $32, AX \
	CMPQ        CX, $64 \
	JB          rowsfour \
	LOADK(0, Y4) \
	VFMADD231PS Y12, Y4, Y0 \
	LOADK(8, Y5) \
	VFMADD231PS Y13, Y5, Y1 \
	LOADK(16, Y6) \
	VFMADD231PS Y14, Y6, Y2 \
	LOADK(24, Y7) \
	VFMADD231PS Y15, Y7, Y3 \
	MOVQ        $64, AX \
rowsfour: \
	CMPQ        AX, R11 \
	JAE         rowstail \
	LOADK(0, Y4) \
	VFMADD231PS 0(R8)(AX*4), Y4, Y0 \
	LOADK(8, Y5) \
	VFMADD231PS 32(R8)(AX*4), Y5, Y1 \
	LOADK(16, Y6) \
	VFMADD231PS 64(R8)(AX*4), Y6, Y2 \
	LOADK(24, Y7) \
	VFMADD231PS 96(R8)(AX*4), Y7, Y3 \
	ADDQ        $32, AX \
	JMP         rowsfour \
rowstail: \
	CMPQ        AX, R10 \
	JAE         rowsdone \
	LOADK(0, Y4) \
	VFMADD231PS 0(R8)(AX*4), Y4, Y0 \
	ADDQ        $8, AX \
	JMP         rowstail \
rowsdone: \
	VADDPS  Y1, Y0, Y0 \
	VADDPS  Y3, Y2, Y2 \
	VADDPS  Y2, Y0, Y0 \
	VMOVUPS Y0, 0(SP)(BX*1) \
	ADDQ    $32, BX \
	ADDQ    DX, SI \
	DECQ    R12 \
	JNZ     rowsrow \
	VMOVUPS      0(SP), Y0 \
	VMOVUPS      32(SP), Y1 \
	VMOVUPS      64(SP), Y2 \
	VMOVUPS      96(SP), Y3 \
	VHADDPS      Y1, Y0, Y4 \
	VHADDPS      Y3, Y2, Y5 \
	VHADDPS      Y5, Y4, Y6 \
	VEXTRACTF128 $1, Y6, X7 \
	VADDPS       X7, X6, X6 \
	CMPQ         R9, $4 \
	JB           rowspart \
	VMOVUPS      X6, 0(DI) \
	ADDQ         $16, DI \
	SUBQ         $4, R9 \
	JNZ          rowsgroup \
	VZEROUPPER \
	RET \
rowspart: \
	VMOVUPS X6, 128(SP) \
	XORQ    AX, AX \
rowscopy: \
	MOVL 128(SP)(AX*4), BX \
	MOVL BX, 0(DI)(AX*4) \
	INCQ AX \
	CMPQ AX, R9 \
	JB   rowscopy \
	VZEROUPPER \
	RET

#define FLOAT_K(I, Y) VMOVUPS (4*I)(SI)(AX*4), Y
#define HALF_K(I, Y) VCVTPH2PS (2*I)(SI)(AX*2), Y

// WEIGHTED_SUM is the body of weightedSumFloats and weightedSumHalves:
// out[c] += Σ_t weights[t]·values[t][c] over n (≥ 1) rows of values, each
// stride bytes after the last, for cols (a multiple of 8) columns,
// LOADV(I, Y) loading 8 values from column CX+I of the row at BX into Y as
// floats: 64 columns across every row, then 32, then 8, each lane's FMAs
// in the order of t. Eight chains of FMAs cover an FMA's latency at two a
// cycle, where four (32 columns) could not: a layer's attention at
// position 2047 took 143-145 µs where four chains took 159-162 (Qwen2.5's
// shape, floats; 134-138 against 156-157 from halves; BenchmarkAttention
// by turns with the 64-column pass switched off).
#define WEIGHTED_SUM(LOADV) \
	MOVQ out+0(FP), DI \
	MOVQ weights+8(FP), R8 \
	MOVQ n+16(FP), R9 \
	MOVQ values+24(FP), SI \
	MOVQ cols+32(FP), R10 \
	MOVQ stride+40(FP), DX \
	MOVQ R10, R12 \
	ANDQ $-64, R12 \
	MOVQ R10, R11 \
	ANDQ $-32, R11 \
	XORQ CX, CX \
sumeight: \
	CMPQ    CX, R12 \
	JAE     sumfour \
	VMOVUPS 0(DI)(CX*4), Y0 \
	VMOVUPS 32(DI)(CX*4), Y1 \
	VMOVUPS 64(DI)(CX*4), Y2 \
	VMOVUPS 96(DI)(CX*4), Y3 \
	VMOVUPS 128(DI)(CX*4), Y4 \
	VMOVUPS 160(DI)(CX*4), Y5 \
	VMOVUPS 192(DI)(CX*4), Y6 \
	VMOVUPS 224(DI)(CX*4), Y7 \
	MOVQ    SI, BX \
	XORQ    AX, AX \
sumeightrow: \
	VBROADCASTSS 0(R8)(AX*4), Y15 \
	LOADV(0, Y8) \
	VFMADD231PS  Y15, Y8, Y0 \
	LOADV(8, Y9) \
	VFMADD231PS  Y15, Y9, Y1 \
	LOADV(16, Y10) \
	VFMADD231PS  Y15, Y10, Y2 \
	LOADV(24, Y11) \
	VFMADD231PS  Y15, Y11, Y3 \
	LOADV(32, Y12) \
	VFMADD231PS  Y15, Y12, Y4 \
	LOADV(40, Y13) \
	VFMADD231PS  Y15, Y13, Y5 \
	LOADV(48, Y14) \
	VFMADD231PS  Y15, Y14, Y6 \
	LOADV(56, Y8) \
	VFMADD231PS  Y15, Y8, Y7 \
	ADDQ         DX, BX \
	INCQ         AX \
	CMPQ         AX, R9 \
	JB           sumeightrow \
	VMOVUPS      Y0, 0(DI)(CX*4) \
	VMOVUPS      Y1, 32(DI)(CX*4) \
	VMOVUPS      Y2, 64(DI)(CX*4) \
	VMOVUPS      Y3, 96(DI)(CX*4) \
	VMOVUPS      Y4, 128(DI)(CX*4) \
	VMOVUPS      Y5, 160(DI)(CX*4) \
	VMOVUPS      Y6, 192(DI)(CX*4) \
	VMOVUPS      Y7, 224(DI)(CX*4) \
	ADDQ         $64, CX \
	JMP          sumeight \
sumfour: \
	CMPQ   CX, R11 \
	JAE    sumone \
	VMOVUPS 0(DI)(CX*4), Y0 \
	VMOVUPS 32(DI)(CX*4), Y1 \
	VMOVUPS 64(DI)(CX*4), Y2 \
	VMOVUPS 96(DI)(CX*4), Y3 \
	MOVQ    SI, BX \
	XORQ   AX, AX \
sumfourrow: \
	VBROADCASTSS 0(R8)(AX*4), Y15 \
	LOADV(0, Y4) \
	VFMADD231PS  Y15, Y4, Y0 \
	LOADV(8, Y5) \
	VFMADD231PS  Y15, Y5, Y1 \
	LOADV(16, Y6) \
	VFMADD231PS  Y15, Y6, Y2 \
	LOADV(24, Y7) \
	VFMADD231PS  Y15, Y7, Y3 \
	ADDQ         DX, BX \
	INCQ         AX \
	CMPQ         AX, R9 \
	JB           sumfourrow \
	VMOVUPS      Y0, 0(DI)(CX*4) \
	VMOVUPS      Y1, 32(DI)(CX*4) \
	VMOVUPS      Y2, 64(DI)(CX*4) \
	VMOVUPS      Y3, 96(DI)(CX*4) \
	ADDQ         $32, CX \
	JMP          sumfour \
sumone: \
	CMPQ   CX, R10 \
	JAE    sumend \
	VMOVUPS 0(DI)(CX*4), Y0 \
	MOVQ    SI, BX \
	XORQ   AX, AX \
sumonerow: \
	VBROADCASTSS 0(R8)(AX*4), Y15 \
	LOADV(0, Y4) \
	VFMADD231PS  Y15, Y4, Y0 \
	ADDQ         DX, BX \
	INCQ         AX \
	CMPQ         AX, R9 \
	JB           sumonerow \
	VMOVUPS      Y0, 0(DI)(CX*4) \
	ADDQ         $8, CX \
	JMP          sumone \
sumend: \
	VZEROUPPER \
	RET

#define FLOAT_V(I, Y) VMOVUPS (4*I)(BX)(CX*4), Y
#define HALF_V(I, Y) VCVTPH2PS (2*I)(BX)(CX*2), Y

// func dotFloatRows(out, rows unsafe.Pointer, stride, n, cols int, x unsafe.Pointer)
TEXT ·dotFloatRows(SB), NOSPLIT, $144-48
	DOT_ROWS(FLOAT_K)

// func dotHalfRows(out, rows unsafe.Pointer, stride, n, cols int, x unsafe.Pointer)
TEXT ·dotHalfRows(SB), NOSPLIT, $144-48
	DOT_ROWS(HALF_K)

// func weightedSumFloats(out, weights unsafe.Pointer, n int, values unsafe.Pointer, cols, stride int)
TEXT ·weightedSumFloats(SB), NOSPLIT, $0-48
	WEIGHTED_SUM(FLOAT_V)

// func weightedSumHalves(out, weights unsafe.Pointer, n int, values unsafe.Pointer, cols, stride int)
TEXT ·weightedSumHalves(SB), NOSPLIT, $0-48
	WEIGHTED_SUM(HALF_V)

// func storeHalvesAVX2(dst, src unsafe.Pointer, n int)
// dst[i] = src[i] rounded to a half, to nearest even (VCVTPS2PH's
// immediate 0, as ggml's F16C path rounds), for n a multiple of 8.
TEXT ·storeHalvesAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ AX, AX

hloop:
	CMPQ      AX, CX
	JAE       hend
	VMOVUPS   0(SI)(AX*4), Y0
	VCVTPS2PH $0, Y0, 0(DI)(AX*2)
	ADDQ      $8, AX
	JMP       hloop

hend:
	VZEROUPPER
	RET

// func roundToHalvesAVX2(x unsafe.Pointer, n int)
// x[i] = x[i] rounded to a half (to nearest even) and widened back, for
// n a multiple of 8.
TEXT ·roundToHalvesAVX2(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	XORQ AX, AX

rloop:
	CMPQ      AX, CX
	JAE       rend
	VMOVUPS   0(SI)(AX*4), Y0
	VCVTPS2PH $0, Y0, X1
	VCVTPH2PS X1, Y0
	VMOVUPS   Y0, 0(SI)(AX*4)
	ADDQ      $8, AX
	JMP       rloop

rend:
	VZEROUPPER
	RET

// func geGLUAVX2(hb, hb2 unsafe.Pointer, n int, table unsafe.Pointer)
// hb[i] = table[half(hb[i])]·hb2[i], hb[i]·hb2[i] where hb[i] ≥ 10 and
// 0 where hb[i] ≤ -10 (geGLUGeneric), for n a multiple of 8. The half is
// VCVTPS2PH's with immediate 0, to nearest even; its zero-extended bits
// index the table's 65536 floats.
TEXT ·geGLUAVX2(SB), NOSPLIT, $0-32
	MOVQ  hb+0(FP), DI
	MOVQ  hb2+8(FP), SI
	MOVQ  n+16(FP), CX
	MOVQ  table+24(FP), R8
	MOVL  $0x41200000, AX // 10
	VMOVD AX, X10
	VBROADCASTSS X10, Y10
	MOVL  $0xc1200000, AX // -10
	VMOVD AX, X11
	VBROADCASTSS X11, Y11
	XORQ  AX, AX

gloop:
	CMPQ       AX, CX
	JAE        gend
	VMOVUPS    0(DI)(AX*4), Y0
	VMOVUPS    0(SI)(AX*4), Y1
	VCVTPS2PH  $0, Y0, X2
	VPMOVZXWD  X2, Y3
	VPCMPEQD   Y4, Y4, Y4 // the gather's mask: every lane (it clears it)
	VGATHERDPS Y4, (R8)(Y3*4), Y5
	VMULPS     Y1, Y5, Y5          // table·hb2
	VMULPS     Y1, Y0, Y6          // x·hb2
	VCMPPS     $0x1d, Y10, Y0, Y7  // x ≥ 10 (GE_OQ)
	VBLENDVPS  Y7, Y6, Y5, Y5
	VCMPPS     $0x12, Y11, Y0, Y8  // x ≤ -10 (LE_OQ)
	VANDNPS    Y5, Y8, Y5
	VMOVUPS    Y5, 0(DI)(AX*4)
	ADDQ       $8, AX
	JMP        gloop

gend:
	VZEROUPPER
	RET
