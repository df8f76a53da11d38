//go:build goexperiment.simd

#include "textflag.h"

// Constants go into vector registers with VMOVD, never MOVD: MOVD is a
// legacy-SSE instruction, and one after an AVX instruction that left the
// upper halves dirty (a VPBROADCASTD of the first constant) slowed the
// rest of the kernel on this project's AMD EPYC VMs, as Go's scalar shift
// counts once did (README, Kernels): BenchmarkPrefillProduct, by turns,
// Q4_0 91-106 -> 109-133 GFLOP/s, Q5_0 68-76 -> 81-94, Q5_K 32-37 -> 54-56.

// The one-vector tile kernels' arguments: the tile in SI, the vector's
// broadcast codes, scales and sums in R8-R10, the count of blocks in CX,
// out in DI.
#define TILE1_ARGS \
	MOVQ tile+0(FP), SI \
	MOVQ codes+8(FP), R8 \
	MOVQ scales+16(FP), R9 \
	MOVQ sums+24(FP), R10 \
	MOVQ blocks+32(FP), CX \
	MOVQ out+40(FP), DI

// The three-vector tile kernels' arguments: the tile in SI; each
// vector's broadcast codes, scales and sums in R8-R10, R11-R13, and R14,
// R15, BX; the count of blocks (or groups) in CX, out in DI.
#define TILE3_ARGS \
	MOVQ tile+0(FP), SI \
	MOVQ codes0+8(FP), R8 \
	MOVQ scales0+16(FP), R9 \
	MOVQ sums0+24(FP), R10 \
	MOVQ codes1+32(FP), R11 \
	MOVQ scales1+40(FP), R12 \
	MOVQ sums1+48(FP), R13 \
	MOVQ codes2+56(FP), R14 \
	MOVQ scales2+64(FP), R15 \
	MOVQ sums2+72(FP), BX \
	MOVQ blocks+80(FP), CX \
	MOVQ out+88(FP), DI

// The multi-vector f32 kernels' column count (CX) and six vectors
// (R8-R11, R13, R14).
#define F32_COLS_X6 \
	MOVQ cols+16(FP), CX \
	MOVQ x+24(FP), AX \
	MOVQ 0(AX), R8 \
	MOVQ 8(AX), R9 \
	MOVQ 16(AX), R10 \
	MOVQ 24(AX), R11 \
	MOVQ 32(AX), R13 \
	MOVQ 40(AX), R14

// The multi-vector kernels read ahead for the block of rows their caller
// takes next (matMatF32): ahead is where the next share of its lines
// starts, and each column step asks one line into the cache and moves
// aheadStep bytes on (0: the same line again, where there is no next
// block), so a block's first pass over the tokens finds it in L2 rather
// than waiting on memory, its read spread over the passes before.
#define AHEAD_START \
	MOVQ ahead+40(FP), DI

#define AHEAD_LINE \
	PREFETCHT0 (DI) \
	ADDQ aheadStep+48(FP), DI

// The four-tile f32 kernels' arguments: the tiles in SI, DX, R15 and BX
// (each tileBytes after the last), then F32_COLS_X6's.
#define F32_TILES4_ARGS \
	MOVQ tiles+0(FP), SI \
	MOVQ tileBytes+8(FP), BX \
	LEAQ 0(SI)(BX*1), DX \
	LEAQ 0(DX)(BX*1), R15 \
	ADDQ R15, BX \
	F32_COLS_X6

// The four-vector tile kernels' arguments: the tile in SI, in (the four
// tileInputs) in BX, the count of groups in CX, the vectors' codes in
// R8-R11.
#define TILE4_ARGS \
	MOVQ tile+0(FP), SI \
	MOVQ in+8(FP), BX \
	TILE4_INPUTS

// The count of groups (CX) and the four vectors' codes (R8-R11) from
// the tileInputs at BX.
#define TILE4_INPUTS \
	MOVQ 24(BX), CX \
	MOVQ 0(BX), R8 \
	MOVQ 32(BX), R9 \
	MOVQ 64(BX), R10 \
	MOVQ 96(BX), R11

// A four-vector kernel's step past CODES bytes of each vector's codes,
// to its next group (DX).
#define TILE4_STEP(CODES) \
	ADDQ $CODES, R8 \
	ADDQ $CODES, R9 \
	ADDQ $CODES, R10 \
	ADDQ $CODES, R11 \
	INCQ DX

// A four-vector kernel on two nibble tiles at once (the second tileBytes
// after the first) through 512-bit vectors: after CONSTS, per group,
// COL(OFF) for each column sums it into Z4-Z7, the rows' halves d of
// both tiles become Z12, and FINISH(S32, K, SUM) takes each vector's
// group into its running sum (Z0-Z3), stored to out at the end.
#define TILE4_X2Z(CONSTS, COL, FINISH) \
	MOVQ tile+0(FP), SI \
	MOVQ tileBytes+8(FP), R15 \
	ADDQ SI, R15 \
	MOVQ in+16(FP), BX \
	TILE4_INPUTS \
	MOVL $0x0f0f0f0f, AX \
	VPBROADCASTD AX, Z15 \
	CONSTS \
	VPXORD Z0, Z0, Z0 \
	VMOVDQA64 Z0, Z1 \
	VMOVDQA64 Z0, Z2 \
	VMOVDQA64 Z0, Z3 \
	XORQ DX, DX \
x2zgroups: \
	CMPQ DX, CX \
	JAE  x2zdone \
	VPXORD Z4, Z4, Z4 \
	VMOVDQA64 Z4, Z5 \
	VMOVDQA64 Z4, Z6 \
	VMOVDQA64 Z4, Z7 \
	COL(0) \
	COL(32) \
	COL(64) \
	COL(96) \
	VMOVDQU 128(SI), X11 \
	VINSERTI128 $1, 128(R15), Y11, Y11 \
	VCVTPH2PS Y11, Z12 \
	FINISH(Z4, 0, Z0) \
	FINISH(Z5, 1, Z1) \
	FINISH(Z6, 2, Z2) \
	FINISH(Z7, 3, Z3) \
	ADDQ $144, SI \
	ADDQ $144, R15 \
	TILE4_STEP(X_GROUP) \
	JMP  x2zgroups \
x2zdone: \
	MOVQ out+24(FP), DI \
	VMOVUPS Z0, 0(DI) \
	VMOVUPS Z1, 64(DI) \
	VMOVUPS Z2, 128(DI) \
	VMOVUPS Z3, 192(DI) \
	VZEROUPPER \
	RET

// A four-vector kernel's running sums (Y0-Y3) stored to out, and return.
#define TILE4_STORE_RET \
	MOVQ out+16(FP), DI \
	VMOVUPS Y0, 0(DI) \
	VMOVUPS Y1, 32(DI) \
	VMOVUPS Y2, 64(DI) \
	VMOVUPS Y3, 96(DI) \
	VZEROUPPER \
	RET

// A super-block's bytes of a vector's codes, as the K-quant tile kernels
// read them (X_GROUP's, eight groups).
#define K_CODES 256

// A three-vector K-quant tile kernel's step to its next block: TILE
// bytes of tile, a super-block of each vector's codes and of its sums of
// 16.
#define TILE3_STEP(TILE) \
	ADDQ $TILE, SI \
	ADDQ $K_CODES, R8 \
	ADDQ $K_CODES, R11 \
	ADDQ $K_CODES, R14 \
	ADDQ $32, R10 \
	ADDQ $32, R13 \
	ADDQ $32, BX \
	INCQ DX

// A K-quant block's end for each of the three vectors (FINISH with the
// vector's block sum A0-A2, its scales and sums, and its offset in out),
// then TILE3_STEP.
#define TILE3_FINISH_STEP(FINISH, A0, A1, A2, TILE) \
	FINISH(A0, R9, R10, 0) \
	FINISH(A1, R12, R13, 32) \
	FINISH(A2, R15, BX, 64) \
	TILE3_STEP(TILE)

// A three-vector kernel's start when its running sums are kept in out
// between blocks: out zeroed, the block count (DX) at 0.
#define TILE3_START \
	VXORPS Y0, Y0, Y0 \
	VMOVUPS Y0, 0(DI) \
	VMOVUPS Y0, 32(DI) \
	VMOVUPS Y0, 64(DI) \
	XORQ DX, DX

// Four vector registers to zero.
#define ZERO4(A, B, C, D) \
	VXORPS A, A, A \
	VXORPS B, B, B \
	VXORPS C, C, C \
	VXORPS D, D, D

// The 32-bit constant VALUE in every lane of Y (X its low half).
#define BROADCAST32(VALUE, X, Y) \
	MOVL $VALUE, AX \
	VMOVD AX, X \
	VPBROADCASTD X, Y

// int16 ones in every lane of Y.
#define INT16_ONES(Y) \
	VPCMPEQW Y, Y, Y \
	VPSRLW $15, Y, Y

// Q4_0's kernels' constants: the low nibble of every byte (Y15), int16
// ones (Y14) and 8.0 (Y13).
#define Q4_0_CONSTS \
	BROADCAST32(0x0f0f0f0f, X15, Y15) \
	INT16_ONES(Y14) \
	BROADCAST32(0x41000000, X13, Y13)

// One 32-byte column of a Q4_0 tile's nibbles at OFF: RAW becomes its
// high nibbles, LO its low ones.
#define NIBBLES(OFF, RAW, LO) \
	VMOVDQU OFF(SI), RAW \
	VPAND Y15, RAW, LO \
	VPSRLW $4, RAW, RAW \
	VPAND Y15, RAW, RAW

// The column's low nibbles (LO) and high ones (HI) times one vector's
// activations at X, into its int16 sums ACC (T a temporary): the
// column's four codes broadcast to every row's lane, as every tile
// kernel reads them (X_GROUP). The VNNI kernels redefine it (and
// GROUP_FLOATS) at the end of this file.
#define NIBBLE_DOT(OFF, X, LO, HI, T, ACC) \
	VPBROADCASTD ((OFF)/8)(X), T \
	VPMADDUBSW T, LO, T \
	VPADDW T, ACC, ACC \
	VPBROADCASTD ((OFF)/8+16)(X), T \
	VPMADDUBSW T, HI, T \
	VPADDW T, ACC, ACC

// The bytes of a vector's codes per group of 32. Every tile kernel reads
// the codes as they are, four at a time broadcast to every row's lane as
// it loads them. A copy with each four repeated eight times, which
// VPMADDUBSW could take from memory, was eight times the size: a row of
// 8192 took 64 KiB of it, which left L1 for L2 beside every tile, and
// decode from memory ran at about half the bandwidth (Llama-3.2-1B-shaped
// Q4_K_M on AVX2 alone: 16.0 tok/s against 24.5-26.4 broadcast).
#define X_GROUP 32

// A group's int16 sums (S16, from NIBBLE_DOT) as floats in F: pairs
// summed into int32 against ones (Y14), converted.
#define GROUP_FLOATS(S16, F) \
	VPMADDWD Y14, S16, F \
	VCVTDQ2PS F, F

// A three-vector group kernel's step to its next group: TILE bytes of
// tile, a group of each vector's codes.
#define GROUP3_STEP(TILE) \
	ADDQ $TILE, SI \
	ADDQ $X_GROUP, R8 \
	ADDQ $X_GROUP, R11 \
	ADDQ $X_GROUP, R14 \
	INCQ DX

// The three running sums (Y0-Y2) stored to out (DI), and return.
#define STORE3_RET \
	VMOVUPS Y0, 0(DI) \
	VMOVUPS Y1, 32(DI) \
	VMOVUPS Y2, 64(DI) \
	VZEROUPPER \
	RET

#define COLS(OFF) \
	NIBBLES(OFF, Y6, Y7) \
	NIBBLE_DOT(OFF, R8, Y7, Y6, Y8, Y3) \
	NIBBLE_DOT(OFF, R11, Y7, Y6, Y8, Y4) \
	NIBBLE_DOT(OFF, R14, Y7, Y6, Y8, Y5)

#define FINISH(S16, SCALES, SUMS, SUM) \
	GROUP_FLOATS(S16, Y8) \
	VBROADCASTSS 0(SCALES)(DX*4), Y9 \
	VMULPS Y9, Y8, Y8 \
	VBROADCASTSS 0(SUMS)(DX*4), Y10 \
	VMULPS Y13, Y10, Y10 \
	VSUBPS Y10, Y8, Y8 \
	VCVTPH2PS 128(SI), Y9 \
	VFMADD231PS Y9, Y8, SUM

// func q4_0Tile3(tile, codes0, scales0, sums0, codes1, scales1, sums1, codes2, scales2, sums2 unsafe.Pointer, blocks int, out *[3][8]float32)
//
// Q4_0's tile kernel for one tile against three vectors' activations,
// each summed exactly as q4_0Tile1 sums it alone: per group, the nibbles
// (low, then high) of each four columns times the activations, summed in
// int16 (in any order: the same sum modulo 2^16); pairs summed into
// int32, converted, times d_x, less 8·(the group's sum of x), then times
// each row's d into the running sum. Each four columns' nibbles are
// loaded and unpacked once for the three. Y0-Y2 are the running sums,
// Y3-Y5 a group's int16 sums, one per vector.
TEXT ·q4_0Tile3(SB), NOSPLIT, $0-96
#define Q4_0_TILE3 \
	TILE3_ARGS \
	Q4_0_CONSTS \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	XORQ DX, DX \
q4groups: \
	CMPQ DX, CX \
	JAE  q4done \
	VPXOR Y3, Y3, Y3 \
	VPXOR Y4, Y4, Y4 \
	VPXOR Y5, Y5, Y5 \
	COLS(0) \
	COLS(32) \
	COLS(64) \
	COLS(96) \
	FINISH(Y3, R9, R10, Y0) \
	FINISH(Y4, R12, R13, Y1) \
	FINISH(Y5, R15, BX, Y2) \
	GROUP3_STEP(144) \
	JMP  q4groups \
q4done: \
	STORE3_RET
	Q4_0_TILE3

#define COLS1(OFF) \
	NIBBLES(OFF, Y6, Y7) \
	NIBBLE_DOT(OFF, R8, Y7, Y6, Y8, Y3)

// func q4_0Tile1(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[8]float32)
//
// q4_0Tile3's arithmetic for one vector (decode, and prompt tokens left
// over). Y0 is the running sum, Y3 a group's int16 sums. In archsimd this
// kernel ran at about half the speed (MatVecFormats q4_0: 43-51 against
// 77-86 GFLOP/s by turns): the compiler computed each address apart.
TEXT ·q4_0Tile1(SB), NOSPLIT, $0-48
#define Q4_0_TILE1 \
	TILE1_ARGS \
	Q4_0_CONSTS \
	VXORPS Y0, Y0, Y0 \
	XORQ DX, DX \
q4x1groups: \
	CMPQ DX, CX \
	JAE  q4x1done \
	VPXOR Y3, Y3, Y3 \
	COLS1(0) \
	COLS1(32) \
	COLS1(64) \
	COLS1(96) \
	FINISH(Y3, R9, R10, Y0) \
	ADDQ $144, SI \
	ADDQ $X_GROUP, R8 \
	INCQ DX \
	JMP  q4x1groups \
q4x1done: \
	VMOVUPS Y0, 0(DI) \
	VZEROUPPER \
	RET
	Q4_0_TILE1

// func q4_1Tile1(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[8]float32)
//
// Q4_1's tile kernel: q4_0Tile1's int16 and int32 sums, then per group
// d·(d_x·Σ n·y) + m·(d_x·Σ y) into the running sum, in that order.
TEXT ·q4_1Tile1(SB), NOSPLIT, $0-48
// The body, which the VNNI twin shares; Y15 holds the low nibble of every
// byte, DX counts groups.
#define Q4_1_TILE1 \
	TILE1_ARGS \
	BROADCAST32(0x0f0f0f0f, X15, Y15) \
	INT16_ONES(Y14) \
	VXORPS Y0, Y0, Y0 \
	XORQ DX, DX \
q41groups: \
	CMPQ DX, CX \
	JAE  q41done \
	VPXOR Y3, Y3, Y3 \
	COLS1(0) \
	COLS1(32) \
	COLS1(64) \
	COLS1(96) \
	GROUP_FLOATS(Y3, Y8) \
	VBROADCASTSS 0(R9)(DX*4), Y9 \
	VMULPS Y9, Y8, Y8 \
	VCVTPH2PS 128(SI), Y9 \
	VFMADD231PS Y9, Y8, Y0 \
	VBROADCASTSS 0(R10)(DX*4), Y10 \
	VCVTPH2PS 144(SI), Y9 \
	VFMADD231PS Y9, Y10, Y0 \
	ADDQ $160, SI \
	ADDQ $X_GROUP, R8 \
	INCQ DX \
	JMP  q41groups \
q41done: \
	VMOVUPS Y0, 0(DI) \
	VZEROUPPER \
	RET
	Q4_1_TILE1

// One 32-byte column of nibbles (low, then high) times four vectors'
// activations, into their int16 sums Y4-Y7.
#define Q4_0_COL4(OFF) \
	NIBBLES(OFF, Y8, Y9) \
	NIBBLE_DOT(OFF, R8, Y9, Y8, Y10, Y4) \
	NIBBLE_DOT(OFF, R9, Y9, Y8, Y10, Y5) \
	NIBBLE_DOT(OFF, R10, Y9, Y8, Y10, Y6) \
	NIBBLE_DOT(OFF, R11, Y9, Y8, Y10, Y7)

// Vector K's group (its int16 sums in S16) into its running sum:
// q4_0Tile3's FINISH, with the vector's scales and sums found through
// its tileInput at 32K(BX).
#define Q4_0_FINISH4(S16, K, SUM) \
	MOVQ (32*K+8)(BX), R12 \
	MOVQ (32*K+16)(BX), R13 \
	FINISH(S16, R12, R13, SUM)

// func q4_0Tile4(tile unsafe.Pointer, in *[4]tileInput, out *[4][8]float32)
//
// q4_0Tile3 for four vectors (in), each summed exactly as q4_0Tile1 sums
// it: each four columns' nibbles loaded and unpacked once for the four.
// Y0-Y3 are the running sums, Y4-Y7 a group's int16 sums; the vectors'
// codes are read through R8-R11, their scales and sums through in (BX),
// the count of groups from in[0].
TEXT ·q4_0Tile4(SB), NOSPLIT, $0-24
#define Q4_0_TILE4 \
	TILE4_ARGS \
	Q4_0_CONSTS \
	ZERO4(Y0, Y1, Y2, Y3) \
	XORQ DX, DX \
q4x4groups: \
	CMPQ DX, CX \
	JAE  q4x4done \
	ZERO4(Y4, Y5, Y6, Y7) \
	Q4_0_COL4(0) \
	Q4_0_COL4(32) \
	Q4_0_COL4(64) \
	Q4_0_COL4(96) \
	Q4_0_FINISH4(Y4, 0, Y0) \
	Q4_0_FINISH4(Y5, 1, Y1) \
	Q4_0_FINISH4(Y6, 2, Y2) \
	Q4_0_FINISH4(Y7, 3, Y3) \
	ADDQ $144, SI \
	TILE4_STEP(X_GROUP) \
	JMP  q4x4groups \
q4x4done: \
	TILE4_STORE_RET
	Q4_0_TILE4

// The nibble and fifth-bit masks, in every byte of Y14 and Y15.
#define FIVE_BIT_CONSTS \
	BROADCAST32(0x0f0f0f0f, X14, Y14) \
	BROADCAST32(0x10101010, X15, Y15)

// Step T's codes: the low nibbles with their fifth bits into Y11, the
// high ones with theirs into Y12.
#define FIVE_BIT_CODES(T) \
	VMOVDQU T(SI), Y10 \
	VPSLLD $4, Y9, Y11 \
	VPAND Y15, Y11, Y11 \
	VPAND Y14, Y10, Y12 \
	VPOR Y12, Y11, Y11 \
	VPSRLD $4, Y10, Y10 \
	VPAND Y14, Y10, Y10 \
	VPAND Y15, Y9, Y12 \
	VPOR Y10, Y12, Y12

// Step T's codes times one vector's activations at X, into its int16
// sums LOW and HIGH.
#define FIVE_BIT_DOT(T, X, LOW, HIGH) \
	VPBROADCASTD ((T)/8)(X), Y13 \
	VPMADDUBSW Y13, Y11, Y13 \
	VPADDW Y13, LOW, LOW \
	VPBROADCASTD ((T)/8+16)(X), Y13 \
	VPMADDUBSW Y13, Y12, Y13 \
	VPADDW Y13, HIGH, HIGH

#define FIVE_BIT_STEP(T) \
	FIVE_BIT_CODES(T) \
	FIVE_BIT_DOT(T, R8, Y3, Y6) \
	FIVE_BIT_DOT(T, R11, Y4, Y7) \
	FIVE_BIT_DOT(T, R14, Y5, Y8) \
	VPSRLD $1, Y9, Y9

// The group's halves d and o as floats, into Y12 and Y13 (free once its
// codes are summed).
#define FIVE_BIT_HALVES \
	VCVTPH2PS 160(SI), Y12 \
	VCVTPH2PS 176(SI), Y13

// One vector's group (its int16 sums LOW and HIGH; Y10 int16 ones, Y12
// and Y13 d and o) into its running sum SUM.
#define FIVE_BIT_FINISH(LOW, HIGH, SCALES, SUMS, SUM) \
	VPMADDWD Y10, LOW, LOW \
	VPMADDWD Y10, HIGH, HIGH \
	VPADDD HIGH, LOW, LOW \
	VCVTDQ2PS LOW, LOW \
	VBROADCASTSS 0(SCALES)(DX*4), Y11 \
	VMULPS Y11, LOW, LOW \
	VFMADD231PS Y12, LOW, SUM \
	VBROADCASTSS 0(SUMS)(DX*4), Y11 \
	VFMADD231PS Y13, Y11, SUM

// func fiveBitTile3(tile, codes0, scales0, sums0, codes1, scales1, sums1, codes2, scales2, sums2 unsafe.Pointer, blocks int, out *[3][8]float32)
//
// Q5_0's and Q5_1's tile kernel for one tile against three vectors'
// activations, each summed exactly as fiveBitTile1 sums it alone: per
// group, each step's codes (a nibble and its fifth bit) × the
// activations in int16, the low nibbles' and the high ones' apart, then
// into int32 and float, times d_x; then d·that + o·(d_x·Σ y) into the
// running sum, in that order. Each step's codes are unpacked once for
// the three. Y0-Y2 are the running sums, Y3-Y5 a group's int16 sums of
// low nibbles and Y6-Y8 of high ones, one per vector; Y9 the group's
// fifth bits (shifted down a bit a step), Y14 and Y15 the nibble and
// fifth-bit masks.
TEXT ·fiveBitTile3(SB), NOSPLIT, $0-96
// The body, which the VNNI twin shares.
#define FIVE_BIT_TILE3 \
	TILE3_ARGS \
	FIVE_BIT_CONSTS \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	XORQ DX, DX \
fivegroups: \
	CMPQ DX, CX \
	JAE  fivedone \
	VMOVDQU 128(SI), Y9 \
	VPXOR Y3, Y3, Y3 \
	VPXOR Y4, Y4, Y4 \
	VPXOR Y5, Y5, Y5 \
	VPXOR Y6, Y6, Y6 \
	VPXOR Y7, Y7, Y7 \
	VPXOR Y8, Y8, Y8 \
	FIVE_BIT_STEP(0) \
	FIVE_BIT_STEP(32) \
	FIVE_BIT_STEP(64) \
	FIVE_BIT_STEP(96) \
	INT16_ONES(Y10) \
	FIVE_BIT_HALVES \
	FIVE_BIT_FINISH(Y3, Y6, R9, R10, Y0) \
	FIVE_BIT_FINISH(Y4, Y7, R12, R13, Y1) \
	FIVE_BIT_FINISH(Y5, Y8, R15, BX, Y2) \
	GROUP3_STEP(192) \
	JMP  fivegroups \
fivedone: \
	STORE3_RET
	FIVE_BIT_TILE3

#define FIVE_BIT_STEP1(T) \
	FIVE_BIT_CODES(T) \
	FIVE_BIT_DOT(T, R8, Y3, Y6) \
	VPSRLD $1, Y9, Y9

// func fiveBitTile1(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[8]float32)
//
// fiveBitTile3's arithmetic for one vector (decode, and prompt tokens
// left over): Y0 the running sum, Y3 and Y6 a group's int16 sums of low
// and high nibbles' products.
TEXT ·fiveBitTile1(SB), NOSPLIT, $0-48
// The body, which the VNNI twin shares.
#define FIVE_BIT_TILE1 \
	TILE1_ARGS \
	FIVE_BIT_CONSTS \
	VXORPS Y0, Y0, Y0 \
	XORQ DX, DX \
five1groups: \
	CMPQ DX, CX \
	JAE  five1done \
	VMOVDQU 128(SI), Y9 \
	VPXOR Y3, Y3, Y3 \
	VPXOR Y6, Y6, Y6 \
	FIVE_BIT_STEP1(0) \
	FIVE_BIT_STEP1(32) \
	FIVE_BIT_STEP1(64) \
	FIVE_BIT_STEP1(96) \
	INT16_ONES(Y10) \
	FIVE_BIT_HALVES \
	FIVE_BIT_FINISH(Y3, Y6, R9, R10, Y0) \
	ADDQ $192, SI \
	ADDQ $X_GROUP, R8 \
	INCQ DX \
	JMP  five1groups \
five1done: \
	VMOVUPS Y0, 0(DI) \
	VZEROUPPER \
	RET
	FIVE_BIT_TILE1

// q4KRunIndex repeats each of bytes 0–7, then 8–15, twice (for VPSHUFB),
// so that sign-extending gives each row's scale for one group or run in
// both int16 lanes of its int32 lane.
DATA q4KRunIndex<>+0(SB)/8, $0x0303020201010000
DATA q4KRunIndex<>+8(SB)/8, $0x0707060605050404
DATA q4KRunIndex<>+16(SB)/8, $0x0b0b0a0a09090808
DATA q4KRunIndex<>+24(SB)/8, $0x0f0f0e0e0d0d0c0c
GLOBL q4KRunIndex<>(SB), RODATA|NOPTR, $32

// q4KRunIndex's two halves into X14 and X13, as the K-quant kernels hold
// them.
#define RUN_INDEX \
	VMOVDQU q4KRunIndex<>+0(SB), X14 \
	VMOVDQU q4KRunIndex<>+16(SB), X13

// func q4KTile3(tile, codes0, scales0, sums0, codes1, scales1, sums1, codes2, scales2, sums2 unsafe.Pointer, blocks int, out *[3][8]float32)
//
// q4KTile for one tile against three vectors' activations, each summed
// exactly as q4KTile sums it (integer sums in any order; the same float
// operations per block, the running sum kept in out between blocks). Each
// 32 bytes of nibbles are loaded and unpacked once, and each group's
// scales unpacked once, for the three. Y0-Y2 are a group pair's int16
// sums of even groups, one per vector, Y3-Y5 of odd groups, Y6-Y8 the
// block's int32 sums; X14 and X13 hold runIndex.
TEXT ·q4KTile3(SB), NOSPLIT, $0-96
// Columns 4I…4I+3 of group pair C's codes, low nibbles (Y10, the even
// group's) and high ones (Y9, the odd group's), times one vector's
// activations at X into its int16 sums EVEN and ODD (Y11 a temporary).
#define K_DOT(C, I, X, EVEN, ODD) \
	VPBROADCASTD (64*C+4*I)(X), Y11 \
	VPMADDUBSW Y11, Y10, Y11 \
	VPADDW Y11, EVEN, EVEN \
	VPBROADCASTD (64*C+32+4*I)(X), Y11 \
	VPMADDUBSW Y11, Y9, Y11 \
	VPADDW Y11, ODD, ODD

#define K_COLS(C, I) \
	VMOVDQU (256*C+32*I)(SI), Y9 \
	VPAND Y15, Y9, Y10 \
	VPSRLW $4, Y9, Y9 \
	VPAND Y15, Y9, Y9 \
	K_DOT(C, I, R8, Y0, Y3) \
	K_DOT(C, I, R11, Y1, Y4) \
	K_DOT(C, I, R14, Y2, Y5)

// A group pair: its sums, then weighed by each row's group scales.
#define K_PAIR(C) \
	VPXOR Y0, Y0, Y0 \
	VPXOR Y1, Y1, Y1 \
	VPXOR Y2, Y2, Y2 \
	VPXOR Y3, Y3, Y3 \
	VPXOR Y4, Y4, Y4 \
	VPXOR Y5, Y5, Y5 \
	K_COLS(C, 0) \
	K_COLS(C, 1) \
	K_COLS(C, 2) \
	K_COLS(C, 3) \
	K_COLS(C, 4) \
	K_COLS(C, 5) \
	K_COLS(C, 6) \
	K_COLS(C, 7) \
	VMOVDQU (1024+16*C)(SI), X12 \
	VPSHUFB X14, X12, X11 \
	VPMOVSXBW X11, Y11 \
	VPMADDWD Y11, Y0, Y10 \
	VPADDD Y10, Y6, Y6 \
	VPMADDWD Y11, Y1, Y10 \
	VPADDD Y10, Y7, Y7 \
	VPMADDWD Y11, Y2, Y10 \
	VPADDD Y10, Y8, Y8 \
	VPSHUFB X13, X12, X11 \
	VPMOVSXBW X11, Y11 \
	VPMADDWD Y11, Y3, Y10 \
	VPADDD Y10, Y6, Y6 \
	VPMADDWD Y11, Y4, Y10 \
	VPADDD Y10, Y7, Y7 \
	VPMADDWD Y11, Y5, Y10 \
	VPADDD Y10, Y8, Y8

// Where a Q4_K block's scales (a byte each), mins, d and dmin are, and
// its size, in the byte-scale tile (q4KTileBytes) that the AVX2 kernels
// and Q5_K's read; the compact tile's kernels redefine them, and unpack
// each block first (K_BLOCK_START).
#define K_SCALES_AT(G) (1024+8*(G))(SI)
#define K_MINS_AT(C) (1088+16*(C))(SI)
#define K_D 1152
#define K_DMIN 1168
#define K_BYTES 1184
#define K_CONSTS
#define K_BLOCK_START

// A group pair's mins against one vector's sums of 16 (SUMS).
#define K_MINS(C, SUMS) \
	VMOVDQU K_MINS_AT(C), X12 \
	VPSHUFB X14, X12, X11 \
	VPMOVSXBW X11, Y11 \
	VPBROADCASTD (8*C)(SUMS), Y10 \
	VPMADDWD Y10, Y11, Y10 \
	VPADDD Y10, Y9, Y9 \
	VPSHUFB X13, X12, X11 \
	VPMOVSXBW X11, Y11 \
	VPBROADCASTD (8*C+4)(SUMS), Y10 \
	VPMADDWD Y10, Y11, Y10 \
	VPADDD Y10, Y9, Y9

// One vector's block into its running sum (OUT): q4KTile's float steps.
#define K_FINISH(ACC, SCALES, SUMS, OUT) \
	VPXOR Y9, Y9, Y9 \
	K_MINS(0, SUMS) \
	K_MINS(1, SUMS) \
	K_MINS(2, SUMS) \
	K_MINS(3, SUMS) \
	VBROADCASTSS 0(SCALES)(DX*4), Y10 \
	VCVTPH2PS K_D(SI), Y11 \
	VMULPS Y11, Y10, Y11 \
	VCVTDQ2PS ACC, Y12 \
	VMOVUPS OUT(DI), Y0 \
	VFMADD231PS Y11, Y12, Y0 \
	VCVTPH2PS K_DMIN(SI), Y11 \
	VMULPS Y11, Y10, Y11 \
	VCVTDQ2PS Y9, Y12 \
	VMULPS Y11, Y12, Y12 \
	VSUBPS Y12, Y0, Y0 \
	VMOVUPS Y0, OUT(DI)

// The body, with PAIR for a group pair (q4KTile3VNNI's too).
#define Q4K_TILE3(PAIR) \
	TILE3_ARGS \
	BROADCAST32(0x0f0f0f0f, X15, Y15) \
	RUN_INDEX \
	K_CONSTS \
	TILE3_START \
kblocks: \
	CMPQ DX, CX \
	JAE  kdone \
	K_BLOCK_START \
	VPXOR Y6, Y6, Y6 \
	VPXOR Y7, Y7, Y7 \
	VPXOR Y8, Y8, Y8 \
	PAIR(0) \
	PAIR(1) \
	PAIR(2) \
	PAIR(3) \
	TILE3_FINISH_STEP(K_FINISH, Y6, Y7, Y8, K_BYTES) \
	JMP  kblocks \
kdone: \
	VZEROUPPER \
	RET
	Q4K_TILE3(K_PAIR)

// A Q4_K or Q5_K block's end for one vector: its mins (Y9) against the
// sums of 16 (R10), then q4KTile's float steps from the block's int32
// sum (Y2) into the running sum (Y4).
#define K1_FINISH \
	VPXOR Y9, Y9, Y9 \
	K_MINS(0, R10) \
	K_MINS(1, R10) \
	K_MINS(2, R10) \
	K_MINS(3, R10) \
	VBROADCASTSS 0(R9)(DX*4), Y10 \
	VCVTPH2PS K_D(SI), Y11 \
	VMULPS Y11, Y10, Y11 \
	VCVTDQ2PS Y2, Y12 \
	VFMADD231PS Y11, Y12, Y4 \
	VCVTPH2PS K_DMIN(SI), Y11 \
	VMULPS Y11, Y10, Y11 \
	VCVTDQ2PS Y9, Y12 \
	VMULPS Y11, Y12, Y12 \
	VSUBPS Y12, Y4, Y4

// func q4KTile1(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[8]float32)
//
// q4KTile in assembly: the same sums in the same order, without the
// address arithmetic and register copies Go's compiler puts around each
// load. Y0 and Y1 are a group pair's int16 sums (even, odd group), Y2 the
// block's int32 sum, Y9 its mins, Y4 the running sum.
TEXT ·q4KTile1(SB), NOSPLIT, $0-48
#define K1_COLS(C, I) \
	VMOVDQU (256*C+32*I)(SI), Y9 \
	VPAND Y15, Y9, Y10 \
	VPSRLW $4, Y9, Y9 \
	VPAND Y15, Y9, Y9 \
	K_DOT(C, I, R8, Y0, Y1)

// Group pair C's share of the block two ahead (a fifth of 1280 bytes,
// which covers a block of either Q4_K tile). The K-quants' one-vector
// kernels (decode's; Q4_K's, Q5_K's, Q6_K's and Q3_K's) do enough work a
// byte that the hardware's own prefetching leaves their stream of tiles
// short of the memory's bandwidth, and asking for the lines as each part
// of a block starts keeps more of them in flight (docs/engine-speed.md).
// Q8_0's, Q4_0's and Q2_K's ran slower with it, and the three-vector
// kernels (prompts') reuse each block three times.
#define K_PREFETCH(C) \
	PREFETCHT0 (2*K_BYTES+320*(C))(SI) \
	PREFETCHT0 (2*K_BYTES+320*(C)+64)(SI) \
	PREFETCHT0 (2*K_BYTES+320*(C)+128)(SI) \
	PREFETCHT0 (2*K_BYTES+320*(C)+192)(SI) \
	PREFETCHT0 (2*K_BYTES+320*(C)+256)(SI)

#define K1_PAIR(C) \
	K_PREFETCH(C) \
	VPXOR Y0, Y0, Y0 \
	VPXOR Y1, Y1, Y1 \
	K1_COLS(C, 0) \
	K1_COLS(C, 1) \
	K1_COLS(C, 2) \
	K1_COLS(C, 3) \
	K1_COLS(C, 4) \
	K1_COLS(C, 5) \
	K1_COLS(C, 6) \
	K1_COLS(C, 7) \
	VMOVDQU (1024+16*C)(SI), X12 \
	VPSHUFB X14, X12, X11 \
	VPMOVSXBW X11, Y11 \
	VPMADDWD Y11, Y0, Y10 \
	VPADDD Y10, Y2, Y2 \
	VPSHUFB X13, X12, X11 \
	VPMOVSXBW X11, Y11 \
	VPMADDWD Y11, Y1, Y10 \
	VPADDD Y10, Y2, Y2

// The body, with PAIR for a group pair (q4KTile1VNNI's too).
#define Q4K_TILE1(PAIR) \
	TILE1_ARGS \
	BROADCAST32(0x0f0f0f0f, X15, Y15) \
	RUN_INDEX \
	K_CONSTS \
	VXORPS Y4, Y4, Y4 \
	XORQ DX, DX \
k1blocks: \
	CMPQ DX, CX \
	JAE  k1done \
	K_BLOCK_START \
	VPXOR Y2, Y2, Y2 \
	PAIR(0) \
	PAIR(1) \
	PAIR(2) \
	PAIR(3) \
	K1_FINISH \
	ADDQ $K_BYTES, SI \
	ADDQ $K_CODES, R8 \
	ADDQ $32, R10 \
	INCQ DX \
	JMP  k1blocks \
k1done: \
	VMOVUPS Y4, 0(DI) \
	VZEROUPPER \
	RET
	Q4K_TILE1(K1_PAIR)

// The 2-bit tile kernels (Q2_K's, Q3_K's). Each 32 bytes of codes hold
// four runs of 16's (one a bit pair; tile layouts in tiles_simd.go):
// Y0-Y3 are those runs' int16 sums (4 × 2 × 7 × 127 fits), Y4 the block's
// int32 sum of each run's times its scale, Y5 the block's sum of each
// run's min (Q2_K) or 4·scale (Q3_K) times the activations' sum of 16,
// Y6 the running sum; Y15 holds the low bit pair of every byte, X14 and
// X13 q4KRunIndex.
#define TWO_BIT_CONSTS \
	BROADCAST32(0x03030303, X15, Y15) \
	RUN_INDEX \
	VXORPS Y6, Y6, Y6

// A block's four halves (half-block N, half H) with their scale index:
// HALF(N, H, INDEX) for Q2_K's kernels.
#define Q2_HALVES(HALF) \
	HALF(0, 0, X14) \
	HALF(0, 1, X13) \
	HALF(1, 0, X14) \
	HALF(1, 1, X13)

#define TWO_BIT_ZERO \
	VPXOR Y0, Y0, Y0 \
	VPXOR Y1, Y1, Y1 \
	VPXOR Y2, Y2, Y2 \
	VPXOR Y3, Y3, Y3

// Bit pair J of the codes in Y7 into Y8.
#define TWO_BIT_PAIR(J) \
	VPSRLW $(2*J), Y7, Y8 \
	VPAND Y15, Y8, Y8

// The codes in Y8 times the activations at Y (R8), into the int16 sum ACC.
#define TWO_BIT_DOT(Y, ACC) \
	VPBROADCASTD ((Y)/8)(R8), Y9 \
	VPMADDUBSW Y9, Y8, Y9 \
	VPADDW Y9, ACC, ACC

// Run S+H's int16 sums (ACC) times each row's scale (the low 8 of the 16
// bytes at OFF+8S with INDEX X14, for H 0, the high 8 with X13, for H 1)
// into Y4.
#define TWO_BIT_SCALE(OFF, S, H, INDEX, ACC) \
	VMOVDQU (OFF+8*S)(SI), X10 \
	VPSHUFB INDEX, X10, X11 \
	VPMOVSXBW X11, Y11 \
	VPMADDWD Y11, ACC, Y10 \
	VPADDD Y10, Y4, Y4

// The four runs 8N+2J+H (J = 0…3) of a half (H: INDEX X14 for 0, X13
// for 1) of half-block N, their sums in Y0-Y3, times their scales at OFF.
#define TWO_BIT_SCALES(OFF, N, H, INDEX) \
	TWO_BIT_SCALE(OFF, (8*N), H, INDEX, Y0) \
	TWO_BIT_SCALE(OFF, (8*N+2), H, INDEX, Y1) \
	TWO_BIT_SCALE(OFF, (8*N+4), H, INDEX, Y2) \
	TWO_BIT_SCALE(OFF, (8*N+6), H, INDEX, Y3)

// Runs 2P and 2P+1's bytes at OFF (paired per row) against their sums of
// 16 (at SUMS) into ACC.
#define TWO_BIT_PAIRS(OFF, P, SUMS, ACC) \
	VPMOVSXBW (OFF+16*P)(SI), Y11 \
	VPBROADCASTD (4*P)(SUMS), Y10 \
	VPMADDWD Y10, Y11, Y10 \
	VPADDD Y10, ACC, ACC

#define TWO_BIT_ALL_PAIRS(OFF, SUMS, ACC) \
	TWO_BIT_PAIRS(OFF, 0, SUMS, ACC) \
	TWO_BIT_PAIRS(OFF, 1, SUMS, ACC) \
	TWO_BIT_PAIRS(OFF, 2, SUMS, ACC) \
	TWO_BIT_PAIRS(OFF, 3, SUMS, ACC) \
	TWO_BIT_PAIRS(OFF, 4, SUMS, ACC) \
	TWO_BIT_PAIRS(OFF, 5, SUMS, ACC) \
	TWO_BIT_PAIRS(OFF, 6, SUMS, ACC) \
	TWO_BIT_PAIRS(OFF, 7, SUMS, ACC)

// The block two ahead, of BYTES up to 1088 (17 lines; Q3_K's are 1040),
// as K_PREFETCH asks for Q4_K's; Q2_K's kernel asks for none
// (NO_PREFETCH).
#define BLOCK_PREFETCH(BYTES) \
	PREFETCHT0 (2*BYTES+0)(SI) \
	PREFETCHT0 (2*BYTES+64)(SI) \
	PREFETCHT0 (2*BYTES+128)(SI) \
	PREFETCHT0 (2*BYTES+192)(SI) \
	PREFETCHT0 (2*BYTES+256)(SI) \
	PREFETCHT0 (2*BYTES+320)(SI) \
	PREFETCHT0 (2*BYTES+384)(SI) \
	PREFETCHT0 (2*BYTES+448)(SI) \
	PREFETCHT0 (2*BYTES+512)(SI) \
	PREFETCHT0 (2*BYTES+576)(SI) \
	PREFETCHT0 (2*BYTES+640)(SI) \
	PREFETCHT0 (2*BYTES+704)(SI) \
	PREFETCHT0 (2*BYTES+768)(SI) \
	PREFETCHT0 (2*BYTES+832)(SI) \
	PREFETCHT0 (2*BYTES+896)(SI) \
	PREFETCHT0 (2*BYTES+960)(SI) \
	PREFETCHT0 (2*BYTES+1024)(SI)
#define NO_PREFETCH(BYTES)

// The 2-bit one-vector kernels' block loop, after their arguments and
// constants: BLOCK sums a block's runs times their scales into Y4, the
// pairs at PAIRS against the sums of 16 go into Y5, FLOATS(Y4, Y5, R9)
// leaves the block's floats in SUM, which goes into the running sum Y6;
// TILE steps to the next block (TWO_BIT_NEXT). PREFETCH(TILE) starts
// each block.
#define TWO_BIT_LOOP1(BLOCK, PAIRS, FLOATS, SUM, TILE, PREFETCH) \
	XORQ DX, DX \
tb1blocks: \
	CMPQ DX, CX \
	JAE  tb1done \
	PREFETCH(TILE) \
	VPXOR Y4, Y4, Y4 \
	VPXOR Y5, Y5, Y5 \
	BLOCK \
	TWO_BIT_ALL_PAIRS(PAIRS, R10, Y5) \
	FLOATS(Y4, Y5, R9) \
	VADDPS SUM, Y6, Y6 \
	TWO_BIT_NEXT(TILE) \
	JMP  tb1blocks \
tb1done: \
	VMOVUPS Y6, 0(DI) \
	VZEROUPPER \
	RET

// The three-vector ones': BLOCK sums a block's runs into Y3-Y5, one per
// vector, and TILE3_FINISH_STEP ends each vector's block with FINISH.
#define TWO_BIT_LOOP3(BLOCK, FINISH, TILE) \
	TILE3_START \
tb3blocks: \
	CMPQ DX, CX \
	JAE  tb3done \
	VPXOR Y3, Y3, Y3 \
	VPXOR Y4, Y4, Y4 \
	VPXOR Y5, Y5, Y5 \
	BLOCK \
	TILE3_FINISH_STEP(FINISH, Y3, Y4, Y5, TILE) \
	JMP  tb3blocks \
tb3done: \
	VZEROUPPER \
	RET

// A Q2_K block's float steps, d_x·(d·DOT − dmin·MINS) (DOT and MINS its
// int32 sums, d_x at SCALES; the tile's halves d and dmin widened), into
// Y11. MINS is overwritten.
#define Q2_BLOCK_FLOATS(DOT, MINS, SCALES) \
	VCVTDQ2PS DOT, Y11 \
	VCVTPH2PS 768(SI), Y12 \
	VMULPS Y12, Y11, Y11 \
	VCVTDQ2PS MINS, MINS \
	VCVTPH2PS 784(SI), Y12 \
	VMULPS Y12, MINS, Y12 \
	VSUBPS Y12, Y11, Y11 \
	VBROADCASTSS 0(SCALES)(DX*4), Y12 \
	VMULPS Y12, Y11, Y11

// A Q3_K block's float steps, (d_x·d)·(DOT − OFFSETS) (its int32 sums,
// d_x at SCALES; the tile's half d widened), into Y9. DOT is overwritten.
#define Q3_BLOCK_FLOATS(DOT, OFFSETS, SCALES) \
	VPSUBD OFFSETS, DOT, DOT \
	VCVTDQ2PS DOT, Y11 \
	VBROADCASTSS 0(SCALES)(DX*4), Y9 \
	VCVTPH2PS 1024(SI), DOT \
	VMULPS DOT, Y9, Y9 \
	VMULPS Y11, Y9, Y9

// A block's step to the next: TILE bytes of tile, a super-block's codes
// and sums of 16.
#define TWO_BIT_NEXT(TILE) \
	ADDQ $TILE, SI \
	ADDQ $K_CODES, R8 \
	ADDQ $32, R10 \
	INCQ DX

// Four columns' codes (tile offset 256N+32T) against the activations of
// weights 128N+32J+4T, J = 0…3.
#define Q2_COLS(N, T) \
	VMOVDQU (256*N+32*T)(SI), Y7 \
	TWO_BIT_PAIR(0) \
	TWO_BIT_DOT((1024*N+32*T), Y0) \
	TWO_BIT_PAIR(1) \
	TWO_BIT_DOT((1024*N+256+32*T), Y1) \
	TWO_BIT_PAIR(2) \
	TWO_BIT_DOT((1024*N+512+32*T), Y2) \
	TWO_BIT_PAIR(3) \
	TWO_BIT_DOT((1024*N+768+32*T), Y3)

#define Q2_HALF(N, H, INDEX) \
	TWO_BIT_ZERO \
	Q2_COLS(N, (4*H)) \
	Q2_COLS(N, (4*H+1)) \
	Q2_COLS(N, (4*H+2)) \
	Q2_COLS(N, (4*H+3)) \
	TWO_BIT_SCALES(512, N, H, INDEX)

#define Q2_BLOCK Q2_HALVES(Q2_HALF)

// func q2KTile1(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[8]float32)
//
// Q2_K's tile kernel, summed as q2KDot sums a block: per run of 16, Σ q·y
// in int16, times the row's scale into the block's int32 sum; the mins
// against the sums of 16 into another; then d_x·(d·sum − dmin·mins)
// into the running sum.
TEXT ·q2KTile1(SB), NOSPLIT, $0-48
// The body, which the VNNI twin shares.
#define Q2K_TILE1 \
	TILE1_ARGS \
	TWO_BIT_CONSTS \
	TWO_BIT_LOOP1(Q2_BLOCK, 640, Q2_BLOCK_FLOATS, Y11, 800, NO_PREFETCH)

	Q2K_TILE1

// Bit pair J of the codes in Y7, and its high bit from the high bits in
// Y10 (bit 4N+J, brought to bit 2 by SHIFT $BY), into Y8.
#define Q3_CODES(J, SHIFT, BY) \
	TWO_BIT_PAIR(J) \
	SHIFT $BY, Y10, Y11 \
	VPAND Y12, Y11, Y11 \
	VPOR Y11, Y8, Y8

// Four columns' codes (tile offset 256N+32T, high bits 512+32T) against
// the activations of weights 128N+32J+4T, J = 0…3; SHIFTJ $BYJ brings
// bit 4N+J of the high bits to bit 2.
#define Q3_COLS(N, T, S0, B0, S1, B1, S2, B2, S3, B3) \
	VMOVDQU (256*N+32*T)(SI), Y7 \
	VMOVDQU (512+32*T)(SI), Y10 \
	Q3_CODES(0, S0, B0) \
	TWO_BIT_DOT((1024*N+32*T), Y0) \
	Q3_CODES(1, S1, B1) \
	TWO_BIT_DOT((1024*N+256+32*T), Y1) \
	Q3_CODES(2, S2, B2) \
	TWO_BIT_DOT((1024*N+512+32*T), Y2) \
	Q3_CODES(3, S3, B3) \
	TWO_BIT_DOT((1024*N+768+32*T), Y3)

#define Q3_COLS0(T) Q3_COLS(0, T, VPSLLW, 2, VPSLLW, 1, VPSRLW, 0, VPSRLW, 1)
#define Q3_COLS1(T) Q3_COLS(1, T, VPSRLW, 2, VPSRLW, 3, VPSRLW, 4, VPSRLW, 5)

// Half H of half-block N (COLS: Q3_COLS0 or Q3_COLS1).
#define Q3_HALF(N, COLS, H, INDEX) \
	TWO_BIT_ZERO \
	COLS((4*H)) \
	COLS((4*H+1)) \
	COLS((4*H+2)) \
	COLS((4*H+3)) \
	TWO_BIT_SCALES(768, N, H, INDEX)

#define Q3_BLOCK \
	Q3_HALF(0, Q3_COLS0, 0, X14) \
	Q3_HALF(0, Q3_COLS0, 1, X13) \
	Q3_HALF(1, Q3_COLS1, 0, X14) \
	Q3_HALF(1, Q3_COLS1, 1, X13)

// func q3KTile1(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[8]float32)
//
// Q3_K's tile kernel, summed as q3KDot sums a block: per run of 16, Σ q·y
// (q the two low bits, plus 4 with the high bit) in int16, times the
// row's scale into the block's int32 sum; 4·scale against the sums of 16
// (the −4) into another; then (d_x·d)·(sum − that) into the running
// sum. Y12 holds bit 2 of every byte, where each code's high bit goes.
TEXT ·q3KTile1(SB), NOSPLIT, $0-48
// The body, which the VNNI twin shares.
#define Q3K_TILE1 \
	TILE1_ARGS \
	TWO_BIT_CONSTS \
	BROADCAST32(0x04040404, X12, Y12) \
	TWO_BIT_LOOP1(Q3_BLOCK, 896, Q3_BLOCK_FLOATS, Y9, 1040, BLOCK_PREFETCH)

	Q3K_TILE1

// The three-vector 2-bit kernels (Q2_K's, Q3_K's), for prompts: each
// vector summed exactly as the one-vector kernel sums it. A run's codes
// are unpacked once for the three, its scales once; each 32 bytes of
// codes are loaded once a run (four times a block). Y0-Y2 are a run's
// int16 sums, one per vector, Y3-Y5 the block's int32 sums; the running
// sums are kept in out.

// The codes in Y8 times the three vectors' activations at offset Y, into
// their int16 sums Y0-Y2.
#define TWO_BIT_DOT3(Y) \
	VPBROADCASTD ((Y)/8)(R8), Y9 \
	VPMADDUBSW Y9, Y8, Y9 \
	VPADDW Y9, Y0, Y0 \
	VPBROADCASTD ((Y)/8)(R11), Y9 \
	VPMADDUBSW Y9, Y8, Y9 \
	VPADDW Y9, Y1, Y1 \
	VPBROADCASTD ((Y)/8)(R14), Y9 \
	VPMADDUBSW Y9, Y8, Y9 \
	VPADDW Y9, Y2, Y2

// Run S+H's sums (Y0-Y2) times each row's scale (as TWO_BIT_SCALE) into
// the three block sums Y3-Y5.
#define TWO_BIT_SCALE3(OFF, S, H, INDEX) \
	VMOVDQU (OFF+8*S)(SI), X10 \
	VPSHUFB INDEX, X10, X11 \
	VPMOVSXBW X11, Y11 \
	VPMADDWD Y11, Y0, Y9 \
	VPADDD Y9, Y3, Y3 \
	VPMADDWD Y11, Y1, Y9 \
	VPADDD Y9, Y4, Y4 \
	VPMADDWD Y11, Y2, Y9 \
	VPADDD Y9, Y5, Y5

#define TWO_BIT_ZERO3 \
	VPXOR Y0, Y0, Y0 \
	VPXOR Y1, Y1, Y1 \
	VPXOR Y2, Y2, Y2

// Column T of half-block N: bit pair J against the three vectors.
#define Q2_COL3(N, T, J) \
	VMOVDQU (256*N+32*T)(SI), Y7 \
	TWO_BIT_PAIR(J) \
	TWO_BIT_DOT3((1024*N+256*J+32*T))

// Run 8N+2J+H: its four columns, then its scales.
#define Q2_RUN3(N, H, J, INDEX) \
	TWO_BIT_ZERO3 \
	Q2_COL3(N, (4*H), J) \
	Q2_COL3(N, (4*H+1), J) \
	Q2_COL3(N, (4*H+2), J) \
	Q2_COL3(N, (4*H+3), J) \
	TWO_BIT_SCALE3(512, (8*N+2*J), H, INDEX)

#define Q2_HALF3(N, H, INDEX) \
	Q2_RUN3(N, H, 0, INDEX) \
	Q2_RUN3(N, H, 1, INDEX) \
	Q2_RUN3(N, H, 2, INDEX) \
	Q2_RUN3(N, H, 3, INDEX)

#define Q2_BLOCK3 Q2_HALVES(Q2_HALF3)

// One vector's block end (its block sum DOT, scales and sums at SCALES
// and SUMS) into its running sum at OUT(DI): q2KTile1's float steps.
#define Q2_FINISH3(DOT, SCALES, SUMS, OUT) \
	VPXOR Y6, Y6, Y6 \
	TWO_BIT_ALL_PAIRS(640, SUMS, Y6) \
	Q2_BLOCK_FLOATS(DOT, Y6, SCALES) \
	VADDPS OUT(DI), Y11, Y11 \
	VMOVUPS Y11, OUT(DI)

// func q2KTile3(tile, codes0, scales0, sums0, codes1, scales1, sums1, codes2, scales2, sums2 unsafe.Pointer, blocks int, out *[3][8]float32)
TEXT ·q2KTile3(SB), NOSPLIT, $0-96
// The body, which the VNNI twin shares.
#define Q2K_TILE3 \
	TILE3_ARGS \
	TWO_BIT_CONSTS \
	TWO_BIT_LOOP3(Q2_BLOCK3, Q2_FINISH3, 800)

	Q2K_TILE3

// Column T of half-block N: bit pair J and its high bit (SHIFT $BY, as
// Q3_COLS) against the three vectors.
#define Q3_COL3(N, T, J, SHIFT, BY) \
	VMOVDQU (256*N+32*T)(SI), Y7 \
	VMOVDQU (512+32*T)(SI), Y10 \
	Q3_CODES(J, SHIFT, BY) \
	TWO_BIT_DOT3((1024*N+256*J+32*T))

#define Q3_RUN3(N, H, J, SHIFT, BY, INDEX) \
	TWO_BIT_ZERO3 \
	Q3_COL3(N, (4*H), J, SHIFT, BY) \
	Q3_COL3(N, (4*H+1), J, SHIFT, BY) \
	Q3_COL3(N, (4*H+2), J, SHIFT, BY) \
	Q3_COL3(N, (4*H+3), J, SHIFT, BY) \
	TWO_BIT_SCALE3(768, (8*N+2*J), H, INDEX)

#define Q3_HALF3_0(H, INDEX) \
	Q3_RUN3(0, H, 0, VPSLLW, 2, INDEX) \
	Q3_RUN3(0, H, 1, VPSLLW, 1, INDEX) \
	Q3_RUN3(0, H, 2, VPSRLW, 0, INDEX) \
	Q3_RUN3(0, H, 3, VPSRLW, 1, INDEX)

#define Q3_HALF3_1(H, INDEX) \
	Q3_RUN3(1, H, 0, VPSRLW, 2, INDEX) \
	Q3_RUN3(1, H, 1, VPSRLW, 3, INDEX) \
	Q3_RUN3(1, H, 2, VPSRLW, 4, INDEX) \
	Q3_RUN3(1, H, 3, VPSRLW, 5, INDEX)

#define Q3_BLOCK3 \
	Q3_HALF3_0(0, X14) \
	Q3_HALF3_0(1, X13) \
	Q3_HALF3_1(0, X14) \
	Q3_HALF3_1(1, X13)

// One vector's block end into its running sum at OUT(DI): q3KTile1's
// float steps.
#define Q3_FINISH3(DOT, SCALES, SUMS, OUT) \
	VPXOR Y6, Y6, Y6 \
	TWO_BIT_ALL_PAIRS(896, SUMS, Y6) \
	Q3_BLOCK_FLOATS(DOT, Y6, SCALES) \
	VADDPS OUT(DI), Y9, Y9 \
	VMOVUPS Y9, OUT(DI)

// func q3KTile3(tile, codes0, scales0, sums0, codes1, scales1, sums1, codes2, scales2, sums2 unsafe.Pointer, blocks int, out *[3][8]float32)
TEXT ·q3KTile3(SB), NOSPLIT, $0-96
// The body, which the VNNI twin shares.
#define Q3K_TILE3 \
	TILE3_ARGS \
	TWO_BIT_CONSTS \
	BROADCAST32(0x04040404, X12, Y12) \
	TWO_BIT_LOOP3(Q3_BLOCK3, Q3_FINISH3, 1040)

	Q3K_TILE3

// Where a Q6_K tile block (q6KTileBytes) keeps its scales and d, and its
// size.
#define Q6_SCALES 1536
#define Q6_D 1664
#define Q6_BYTES 1680

// The AVX2 kernels' constants: the low nibble of every byte (Y6) and a
// code's two high bits (Y7). The VNNI kernels redefine it.
#define Q6_CONSTS \
	BROADCAST32(0x0f0f0f0f, X6, Y6) \
	BROADCAST32(0x30303030, X7, Y7)

// Column T (0…3) of run S's codes (0…63, a byte each) into Y9, put
// together from a vector of the tile's nibbles (at NIBBLES: the low ones
// for T < 2, the high for T ≥ 2, brought down by NIBBLE) and its high
// bit pairs (bits 2T…2T+1 of the run's third vector, moved to bits 4-5
// by HIGH; Y8 a temporary). A word shift moves no bit the masks keep
// across a byte.
#define Q6_CODES(S, NIBBLES, NIBBLE, HIGH) \
	VMOVDQU (96*(S)+NIBBLES)(SI), Y9 \
	NIBBLE \
	VPAND Y6, Y9, Y9 \
	VMOVDQU (96*(S)+64)(SI), Y8 \
	HIGH \
	VPAND Y7, Y8, Y8 \
	VPOR Y8, Y9, Y9

#define Q6_NIBBLE_LOW
#define Q6_NIBBLE_HIGH VPSRLW $4, Y9, Y9
#define Q6_HIGH_0 VPSLLW $4, Y8, Y8
#define Q6_HIGH_1 VPSLLW $2, Y8, Y8
#define Q6_HIGH_2
#define Q6_HIGH_3 VPSRLW $2, Y8, Y8

// Run S's columns into Y9 one at a time, each followed by COL(the offset
// of its four activations, 16S+4T), which takes it against each vector
// the kernel takes.
#define Q6_RUN(S, COL) \
	Q6_CODES(S, 0, Q6_NIBBLE_LOW, Q6_HIGH_0) \
	COL((16*(S))) \
	Q6_CODES(S, 32, Q6_NIBBLE_LOW, Q6_HIGH_1) \
	COL((16*(S)+4)) \
	Q6_CODES(S, 0, Q6_NIBBLE_HIGH, Q6_HIGH_2) \
	COL((16*(S)+8)) \
	Q6_CODES(S, 32, Q6_NIBBLE_HIGH, Q6_HIGH_3) \
	COL((16*(S)+12))

// q6KTwoRunIndex interleaves two runs' scales (for VPSHUFB): run s of
// row r, then run s+1 of row r.
DATA q6KTwoRunIndex<>+0(SB)/8, $0x0b030a0209010800
DATA q6KTwoRunIndex<>+8(SB)/8, $0x0f070e060d050c04
GLOBL q6KTwoRunIndex<>(SB), RODATA|NOPTR, $16

// One 32-byte column of codes (Y9) times one vector's four activations
// at XOFF(X), by the run's scales (Y11), into ACC.
#define Q6_COL(XOFF, X, ACC) \
	VPBROADCASTD XOFF(X), Y10 \
	VPMADDUBSW Y10, Y9, Y10 \
	VPMADDWD Y11, Y10, Y10 \
	VPADDD Y10, ACC, ACC

// func q6KTile1(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[8]float32)
//
// q6KTile in assembly, the same sums in the same order, each column's
// codes put together from the tile's nibbles and high bit pairs
// (Q6_CODES). Y0 is the block's int32 sum, Y1 the offset (the codes' +32
// against the sums of 16), Y2 the running sum.
TEXT ·q6KTile1(SB), NOSPLIT, $0-48
#define Q6_COL1(XOFF) Q6_COL(XOFF, R8, Y0)

#define Q6_1RUN(S, IDX) \
	VPSHUFB IDX, X12, X11 \
	VPMOVSXBW X11, Y11 \
	Q6_RUN(S, Q6_COL1)

#define Q6_1PAIR(S) \
	Q6_PREFETCH(S) \
	VMOVDQU (Q6_SCALES+8*S)(SI), X12 \
	Q6_1RUN(S, X14) \
	Q6_1RUN(S+1, X13) \
	VPSHUFB X15, X12, X11 \
	VPMOVSXBW X11, Y11 \
	VPBROADCASTD (2*S)(R10), Y10 \
	VPMADDWD Y10, Y11, Y10 \
	VPADDD Y10, Y1, Y1

// Runs S and S+1 of the block two ahead (their 192 bytes), as
// K_PREFETCH asks for Q4_K's.
#define Q6_PREFETCH(S) \
	PREFETCHT0 (2*Q6_BYTES+96*(S))(SI) \
	PREFETCHT0 (2*Q6_BYTES+96*(S)+64)(SI) \
	PREFETCHT0 (2*Q6_BYTES+96*(S)+128)(SI)

// A Q6_K block's sixteen runs, two at a time (PAIR(S) takes runs S and
// S+1).
#define Q6_RUN_PAIRS(PAIR) \
	PAIR(0) \
	PAIR(2) \
	PAIR(4) \
	PAIR(6) \
	PAIR(8) \
	PAIR(10) \
	PAIR(12) \
	PAIR(14)

// The body, with PAIR for two runs (q6KTile1VNNI's too).
#define Q6K_TILE1(PAIR) \
	TILE1_ARGS \
	RUN_INDEX \
	VMOVDQU q6KTwoRunIndex<>+0(SB), X15 \
	Q6_CONSTS \
	VXORPS Y2, Y2, Y2 \
	XORQ DX, DX \
q61blocks: \
	CMPQ DX, CX \
	JAE  q61done \
	VPXOR Y0, Y0, Y0 \
	VPXOR Y1, Y1, Y1 \
	Q6_RUN_PAIRS(PAIR) \
	VPSLLD $5, Y1, Y1 \
	VPSUBD Y1, Y0, Y0 \
	VBROADCASTSS 0(R9)(DX*4), Y10 \
	VCVTPH2PS Q6_D(SI), Y11 \
	VMULPS Y11, Y10, Y11 \
	VCVTDQ2PS Y0, Y12 \
	VFMADD231PS Y11, Y12, Y2 \
	ADDQ $Q6_BYTES, SI \
	ADDQ $K_CODES, R8 \
	ADDQ $32, R10 \
	INCQ DX \
	JMP  q61blocks \
q61done: \
	VMOVUPS Y2, 0(DI) \
	VZEROUPPER \
	RET
	Q6K_TILE1(Q6_1PAIR)

// One 32-byte column of codes (Y9) times three vectors' activations, by
// the run's scales (Y11), into Y0-Y2.
#define Q6_COL3(XOFF) \
	Q6_COL(XOFF, R8, Y0) \
	Q6_COL(XOFF, R11, Y1) \
	Q6_COL(XOFF, R14, Y2)

#define Q6_3RUN(S, IDX) \
	VPSHUFB IDX, X12, X11 \
	VPMOVSXBW X11, Y11 \
	Q6_RUN(S, Q6_COL3)

#define Q6_3PAIR(S) \
	VMOVDQU (Q6_SCALES+8*S)(SI), X12 \
	Q6_3RUN(S, X14) \
	Q6_3RUN(S+1, X13) \
	VPSHUFB X15, X12, X8 \
	VPMOVSXBW X8, Y8 \
	VPBROADCASTD (2*S)(R10), Y10 \
	VPMADDWD Y10, Y8, Y10 \
	VPADDD Y10, Y3, Y3 \
	VPBROADCASTD (2*S)(R13), Y10 \
	VPMADDWD Y10, Y8, Y10 \
	VPADDD Y10, Y4, Y4 \
	VPBROADCASTD (2*S)(BX), Y10 \
	VPMADDWD Y10, Y8, Y10 \
	VPADDD Y10, Y5, Y5

// One vector's block into its running sum (OUT): q6KTile's float steps.
#define Q6_FINISH(ACC, OFFSET, SCALES, OUT) \
	VPSLLD $5, OFFSET, OFFSET \
	VPSUBD OFFSET, ACC, ACC \
	VBROADCASTSS 0(SCALES)(DX*4), Y10 \
	VCVTPH2PS Q6_D(SI), Y11 \
	VMULPS Y11, Y10, Y11 \
	VCVTDQ2PS ACC, ACC \
	VMOVUPS OUT(DI), Y9 \
	VFMADD231PS Y11, ACC, Y9 \
	VMOVUPS Y9, OUT(DI)

// func q6KTile3(tile, codes0, scales0, sums0, codes1, scales1, sums1, codes2, scales2, sums2 unsafe.Pointer, blocks int, out *[3][8]float32)
//
// q6KTile1 against three vectors' activations, each summed exactly as
// q6KTile1 sums it, the running sums kept in out between blocks. Each
// column's codes are put together, and each run's scales unpacked, once
// for the three. Y0-Y2 are the block's int32 sums, Y3-Y5 the offsets.
TEXT ·q6KTile3(SB), NOSPLIT, $0-96
// The body, with PAIR for two runs (q6KTile3VNNI's too).
#define Q6K_TILE3(PAIR) \
	TILE3_ARGS \
	RUN_INDEX \
	VMOVDQU q6KTwoRunIndex<>+0(SB), X15 \
	Q6_CONSTS \
	TILE3_START \
q63blocks: \
	CMPQ DX, CX \
	JAE  q63done \
	VPXOR Y0, Y0, Y0 \
	VPXOR Y1, Y1, Y1 \
	VPXOR Y2, Y2, Y2 \
	VPXOR Y3, Y3, Y3 \
	VPXOR Y4, Y4, Y4 \
	VPXOR Y5, Y5, Y5 \
	Q6_RUN_PAIRS(PAIR) \
	Q6_FINISH(Y0, Y3, R9, 0) \
	Q6_FINISH(Y1, Y4, R12, 32) \
	Q6_FINISH(Y2, Y5, R15, 64) \
	TILE3_STEP(Q6_BYTES) \
	JMP  q63blocks \
q63done: \
	VZEROUPPER \
	RET
	Q6K_TILE3(Q6_3PAIR)

// One 32-byte column of a Q5_K tile (nibbles at 256C+32I, fifth bits at
// 1184+32I, bit g for group g): the even group's codes (low nibble, bit 4
// from the fifth bits shifted by SE $NE) and the odd group's (high
// nibble, by SO $NO) times the activations, into Y0 and Y1. A 16-bit
// shift of at most 4 left or 3 right brings no other byte's bit to bit 4.
#define Q5_COL(C, I, SE, NE, SO, NO) \
	VMOVDQU (256*C+32*I)(SI), Y9 \
	VMOVDQU (1184+32*I)(SI), Y8 \
	VPAND Y15, Y9, Y10 \
	SE $NE, Y8, Y11 \
	VPAND Y5, Y11, Y11 \
	VPOR Y11, Y10, Y10 \
	VPBROADCASTD (64*C+4*I)(R8), Y11 \
	VPMADDUBSW Y11, Y10, Y11 \
	VPADDW Y11, Y0, Y0 \
	VPSRLW $4, Y9, Y9 \
	VPAND Y15, Y9, Y9 \
	SO $NO, Y8, Y8 \
	VPAND Y5, Y8, Y8 \
	VPOR Y8, Y9, Y9 \
	VPBROADCASTD (64*C+32+4*I)(R8), Y11 \
	VPMADDUBSW Y11, Y9, Y11 \
	VPADDW Y11, Y1, Y1

// Half a group pair: four columns' sums (codes reach 31, so no more fit
// int16), weighed by the group scales in Y6 (even) and Y7 (odd), into Y2.
#define Q5_HALF(C, I0, I1, I2, I3, SE, NE, SO, NO) \
	VPXOR Y0, Y0, Y0 \
	VPXOR Y1, Y1, Y1 \
	Q5_COL(C, I0, SE, NE, SO, NO) \
	Q5_COL(C, I1, SE, NE, SO, NO) \
	Q5_COL(C, I2, SE, NE, SO, NO) \
	Q5_COL(C, I3, SE, NE, SO, NO) \
	VPMADDWD Y6, Y0, Y10 \
	VPADDD Y10, Y2, Y2 \
	VPMADDWD Y7, Y1, Y10 \
	VPADDD Y10, Y2, Y2

// A Q5_K tile block's size: a Q4_K one's and the fifth bits.
#define Q5K_BYTES 1440

// Group pair C's share of the block two ahead (a quarter of 1536 bytes,
// which covers the block), as K_PREFETCH asks for Q4_K's.
#define Q5_PREFETCH(C) \
	PREFETCHT0 (2*Q5K_BYTES+384*(C))(SI) \
	PREFETCHT0 (2*Q5K_BYTES+384*(C)+64)(SI) \
	PREFETCHT0 (2*Q5K_BYTES+384*(C)+128)(SI) \
	PREFETCHT0 (2*Q5K_BYTES+384*(C)+192)(SI) \
	PREFETCHT0 (2*Q5K_BYTES+384*(C)+256)(SI) \
	PREFETCHT0 (2*Q5K_BYTES+384*(C)+320)(SI)

// Groups 2C and 2C+1, their fifth bits brought to bit 4 by SE $NE and
// SO $NO.
#define Q5_PAIR(C, SE, NE, SO, NO) \
	Q5_PREFETCH(C) \
	VMOVDQU (1024+16*C)(SI), X12 \
	VPSHUFB X14, X12, X11 \
	VPMOVSXBW X11, Y6 \
	VPSHUFB X13, X12, X11 \
	VPMOVSXBW X11, Y7 \
	Q5_HALF(C, 0, 1, 2, 3, SE, NE, SO, NO) \
	Q5_HALF(C, 4, 5, 6, 7, SE, NE, SO, NO)

// func q5KTile1(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[8]float32)
//
// q5KTile in assembly, the same sums in the same order: Q4_K's with each
// code's fifth bit. Y2 is the block's int32 sum, Y9 its mins, Y4 the
// running sum, Y5 bit 4 of every byte.
TEXT ·q5KTile1(SB), NOSPLIT, $0-48
// The body, with PAIR for a group pair (q5KTile1VNNI's too).
#define Q5K_TILE1(PAIR) \
	TILE1_ARGS \
	BROADCAST32(0x0f0f0f0f, X15, Y15) \
	BROADCAST32(0x10101010, X5, Y5) \
	RUN_INDEX \
	VXORPS Y4, Y4, Y4 \
	XORQ DX, DX \
q51blocks: \
	CMPQ DX, CX \
	JAE  q51done \
	VPXOR Y2, Y2, Y2 \
	PAIR(0, VPSLLW, 4, VPSLLW, 3) \
	PAIR(1, VPSLLW, 2, VPSLLW, 1) \
	PAIR(2, VPSLLW, 0, VPSRLW, 1) \
	PAIR(3, VPSRLW, 2, VPSRLW, 3) \
	K1_FINISH \
	ADDQ $Q5K_BYTES, SI \
	ADDQ $K_CODES, R8 \
	ADDQ $32, R10 \
	INCQ DX \
	JMP  q51blocks \
q51done: \
	VMOVUPS Y4, 0(DI) \
	VZEROUPPER \
	RET
	Q5K_TILE1(Q5_PAIR)

// The f32 tile kernels. An f32 tile is eight rows interleaved: for each
// column k, the eight rows' weights k in one 32-byte vector (f32tiles.go).
// Row r of a tile is lane r of one accumulator, which adds w·x[k] for k
// from 0 on, one FMA after another: every kernel shape sums a row alike,
// and the eight sums come out as one vector, with no sum across lanes.

// Columns k and k+1 (x at R8, the tiles' bytes at R12) of the four tiles
// at SI, DX, CX and R11 into their sums Y0-Y3, each column after the last;
// then R8 and R12 step past them.
#define F32_VEC_PAIR \
	VBROADCASTSS 0(R8), Y15 \
	VBROADCASTSS 4(R8), Y14 \
	VFMADD231PS 0(SI)(R12*1), Y15, Y0 \
	VFMADD231PS 0(DX)(R12*1), Y15, Y1 \
	VFMADD231PS 0(CX)(R12*1), Y15, Y2 \
	VFMADD231PS 0(R11)(R12*1), Y15, Y3 \
	VFMADD231PS 32(SI)(R12*1), Y14, Y0 \
	VFMADD231PS 32(DX)(R12*1), Y14, Y1 \
	VFMADD231PS 32(CX)(R12*1), Y14, Y2 \
	VFMADD231PS 32(R11)(R12*1), Y14, Y3 \
	ADDQ $64, R12 \
	ADDQ $8, R8

// func f32TilesVec(tiles unsafe.Pointer, n, cols int, x, out unsafe.Pointer)
//
// n tiles (the first at tiles, each 32·cols bytes after the last) against
// vector x, into 8n floats at out: four tiles at a time, so four sums are
// in flight, then the rest one at a time. The tiles are read from start
// to end: a decode step streams its weights from memory, four tiles'
// columns side by side, two columns (a 64-byte line of each tile) a
// step, each line asked for once, 2 KiB ahead. Asked for once a column
// (each line twice), Zen 5 decoded 2–3% slower: F32 on one thread, the
// two kernels' loops aligned alike and alternating in one process
// (ABBA, 60 rounds of 8 tokens), one ask a line was faster in 35–45
// rounds of 60 on stories110M and the Qwen3-shaped file, means
// +2.4–3.2%. (The kernel before, where its loop lay, read 2.7–7.1%
// slower; the loop's alignment moves it, not this one.) The four tiles
// lie one after another, so in a tile's last 2 KiB, 2 KiB ahead is the
// next tile's start, which another of the four has long read; there
// each stream asks instead for the start of its tile in the next four
// (the same address, three tiles further: R15 and AX), which had no ask
// ahead of it. The ask past a matrix's last four is a hint, which never
// faults. By the same ABBA turns, stories110M's 768-column tiles (a
// tile 24 KiB) decoded +3.3% (means of five runs, 0.98–1.07), the
// Qwen3 shape's 1024- and 3072-column tiles +1.2% (one run). The odd
// column of an odd count goes alone, after the pairs. The hardware's
// prefetch alone left Zen 5's one-thread stream short: stories110M F32
// decode by turns 53.7–62.3 tok/s without it, 64.9–68.0 with it (1 KiB
// ahead and 4 KiB read less). The weights are read once a step, so they
// are asked for as non-temporal (PREFETCHNTA), to leave the caches to
// the step's vectors and cache: against PREFETCHT0, 17 of 22 pairs by
// turns read faster on Zen 5 (stories110M and a Qwen2.5-0.5B-shaped
// file, one and two threads; medians +1–6%). On Zen 4 the asks slowed
// it: there the unasked twins below run (tilesVec).
TEXT ·f32TilesVec(SB), NOSPLIT, $0-40
// The decode kernels' body (TILES_VEC), expanded for floats here and for
// each widening of halves below: a column is 1<<LOG_COLUMN_BYTES bytes;
// VEC_LINE takes a 64-byte line of each of the four tiles, VEC_PAIR two
// columns of them, VEC_ODD a last odd column of them and VEC_ONE a column
// of one tile (the column's value broadcast in Y15, into Y0). ASK_AHEAD(M)
// asks for the line at M as non-temporal; the unasked kernels define it
// as nothing.
#define LOG_COLUMN_BYTES 5
#define VEC_LINE \
	F32_VEC_PAIR
#define VEC_PAIR \
	F32_VEC_PAIR
#define VEC_ODD \
	VFMADD231PS 0(SI)(R12*1), Y15, Y0 \
	VFMADD231PS 0(DX)(R12*1), Y15, Y1 \
	VFMADD231PS 0(CX)(R12*1), Y15, Y2 \
	VFMADD231PS 0(R11)(R12*1), Y15, Y3
#define VEC_ONE \
	VFMADD231PS 0(SI)(R12*1), Y15, Y0
#define ASK_AHEAD(M) \
	PREFETCHNTA M
#define TILES_VEC \
	MOVQ tiles+0(FP), SI \
	MOVQ n+8(FP), R9 \
	MOVQ cols+16(FP), R10 \
	MOVQ out+32(FP), DI \
	MOVQ R10, BX \
	SHLQ $LOG_COLUMN_BYTES, BX \
	LEAQ 0(BX)(BX*2), AX \
	MOVQ R10, R13 \
	ANDQ $-2, R13 \
	SHLQ $LOG_COLUMN_BYTES, R13 \
	MOVQ R13, R14 \
	SUBQ $2048, R14 \
	JAE  tvfour \
	XORQ R14, R14 \
tvfour: \
	CMPQ R9, $4 \
	JB   tvone \
	ZERO4(Y0, Y1, Y2, Y3) \
	LEAQ 0(SI)(BX*1), DX \
	LEAQ 0(DX)(BX*1), CX \
	LEAQ 0(CX)(BX*1), R11 \
	MOVQ x+24(FP), R8 \
	XORQ R12, R12 \
	CMPQ R12, R14 \
	JAE  tvfournext \
tvfourk: \
	ASK_AHEAD(2048(SI)(R12*1)) \
	ASK_AHEAD(2048(DX)(R12*1)) \
	ASK_AHEAD(2048(CX)(R12*1)) \
	ASK_AHEAD(2048(R11)(R12*1)) \
	VEC_LINE \
	CMPQ R12, R14 \
	JB   tvfourk \
tvfournext: \
	CMPQ R12, R13 \
	JAE  tvfourodd \
	LEAQ 0(R11)(R12*1), R15 \
	ASK_AHEAD(2048(R15)) \
	ASK_AHEAD(2048(R15)(BX*1)) \
	ASK_AHEAD(2048(R15)(BX*2)) \
	ASK_AHEAD(2048(R15)(AX*1)) \
	VEC_PAIR \
	JMP  tvfournext \
tvfourodd: \
	CMPQ R12, BX \
	JAE  tvfourstore \
	VBROADCASTSS 0(R8), Y15 \
	VEC_ODD \
tvfourstore: \
	VMOVUPS Y0, 0(DI) \
	VMOVUPS Y1, 32(DI) \
	VMOVUPS Y2, 64(DI) \
	VMOVUPS Y3, 96(DI) \
	ADDQ $128, DI \
	LEAQ 0(R11)(BX*1), SI \
	SUBQ $4, R9 \
	JMP  tvfour \
tvone: \
	TESTQ R9, R9 \
	JZ   tvend \
	MOVQ x+24(FP), R8 \
	VXORPS Y0, Y0, Y0 \
	XORQ AX, AX \
	XORQ R12, R12 \
tvonek: \
	VBROADCASTSS 0(R8)(AX*4), Y15 \
	VEC_ONE \
	ADDQ $(1<<LOG_COLUMN_BYTES), R12 \
	INCQ AX \
	CMPQ AX, R10 \
	JB   tvonek \
	VMOVUPS Y0, 0(DI) \
	ADDQ $32, DI \
	ADDQ BX, SI \
	DECQ R9 \
	JMP  tvone \
tvend: \
	VZEROUPPER \
	RET
	TILES_VEC

// func f32TilesVecUnasked(tiles unsafe.Pointer, n, cols int, x, out unsafe.Pointer)
//
// f32TilesVec without its asks ahead, for Zen 4 and Zen 3 (tilesVec).
TEXT ·f32TilesVecUnasked(SB), NOSPLIT, $0-40
#undef ASK_AHEAD
#define ASK_AHEAD(M)
	TILES_VEC
#undef ASK_AHEAD
#define ASK_AHEAD(M) \
	PREFETCHNTA M

// One column (k in AX) of weights W0 and W1 against one vector (XR): A
// and B += the weights times its value, broadcast in V.
#define F32_TILE_PAIR(XR, V, W0, W1, A, B) \
	VBROADCASTSS 0(XR)(AX*4), V \
	VFMADD231PS V, W0, A \
	VFMADD231PS V, W1, B

// F32_TILE_PAIR against the six vectors (R8-R11, R13, R14), broadcast
// in V0 and V1 by turns, into the sums A0-A11, two a vector.
#define F32_TILE_PAIR_X6(W0, W1, V0, V1, A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11) \
	F32_TILE_PAIR(R8, V0, W0, W1, A0, A1) \
	F32_TILE_PAIR(R9, V1, W0, W1, A2, A3) \
	F32_TILE_PAIR(R10, V0, W0, W1, A4, A5) \
	F32_TILE_PAIR(R11, V1, W0, W1, A6, A7) \
	F32_TILE_PAIR(R13, V0, W0, W1, A8, A9) \
	F32_TILE_PAIR(R14, V1, W0, W1, A10, A11)

// The multi-vector kernels store each vector's sums where its pointer in
// out (DI, six pointers; each loaded into AX, so after the column loop), so that matMatF32 needs no copy of them
// into its outputs: vector j's sums are two registers from Y(2j) (Z(2j))
// for two tiles, four from Y(4j) for four.
#define STORE_PAIR(J, YA, YB, BYTES) \
	MOVQ (8*(J))(DI), AX \
	VMOVUPS YA, 0(AX) \
	VMOVUPS YB, (BYTES)(AX)

// Four vectors' pairs of sums (A0 and A1 vector 0's, …) stored through
// out, the second of a pair BYTES after the first; and six vectors'.
#define STORE_FOUR_PAIRS(A0, A1, A2, A3, A4, A5, A6, A7, BYTES) \
	STORE_PAIR(0, A0, A1, BYTES) \
	STORE_PAIR(1, A2, A3, BYTES) \
	STORE_PAIR(2, A4, A5, BYTES) \
	STORE_PAIR(3, A6, A7, BYTES)
#define STORE_SIX_PAIRS(A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, BYTES) \
	STORE_FOUR_PAIRS(A0, A1, A2, A3, A4, A5, A6, A7, BYTES) \
	STORE_PAIR(4, A8, A9, BYTES) \
	STORE_PAIR(5, A10, A11, BYTES)

// Y0-Y11 stored through out: 16 sums a vector.
#define STORE_Y0_Y11 \
	STORE_SIX_PAIRS(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, 32)

// Y0-Y23 zeroed (the four-tile kernels' sums).
#define ZERO_Y0_Y23 \
	VPXORD Y0, Y0, Y0 \
	VMOVDQA64 Y0, Y1 \
	VMOVDQA64 Y0, Y2 \
	VMOVDQA64 Y0, Y3 \
	VMOVDQA64 Y0, Y4 \
	VMOVDQA64 Y0, Y5 \
	VMOVDQA64 Y0, Y6 \
	VMOVDQA64 Y0, Y7 \
	VMOVDQA64 Y0, Y8 \
	VMOVDQA64 Y0, Y9 \
	VMOVDQA64 Y0, Y10 \
	VMOVDQA64 Y0, Y11 \
	VMOVDQA64 Y0, Y12 \
	VMOVDQA64 Y0, Y13 \
	VMOVDQA64 Y0, Y14 \
	VMOVDQA64 Y0, Y15 \
	VMOVDQA64 Y0, Y16 \
	VMOVDQA64 Y0, Y17 \
	VMOVDQA64 Y0, Y18 \
	VMOVDQA64 Y0, Y19 \
	VMOVDQA64 Y0, Y20 \
	VMOVDQA64 Y0, Y21 \
	VMOVDQA64 Y0, Y22 \
	VMOVDQA64 Y0, Y23

// Y0-Y23 stored through out: 32 sums a vector.
#define STORE_FOUR(J, YA, YB, YC, YD) \
	STORE_PAIR(J, YA, YB, 32) \
	VMOVUPS YC, 64(AX) \
	VMOVUPS YD, 96(AX)
#define STORE_Y0_Y23 \
	STORE_FOUR(0, Y0, Y1, Y2, Y3) \
	STORE_FOUR(1, Y4, Y5, Y6, Y7) \
	STORE_FOUR(2, Y8, Y9, Y10, Y11) \
	STORE_FOUR(3, Y12, Y13, Y14, Y15) \
	STORE_FOUR(4, Y16, Y17, Y18, Y19) \
	STORE_FOUR(5, Y20, Y21, Y22, Y23)

// Z0-Z7 zeroed, and Z0-Z11 (the 512-bit four-tile kernels' sums).
#define ZERO_Z0_Z7 \
	VPXORD Z0, Z0, Z0 \
	VMOVDQA64 Z0, Z1 \
	VMOVDQA64 Z0, Z2 \
	VMOVDQA64 Z0, Z3 \
	VMOVDQA64 Z0, Z4 \
	VMOVDQA64 Z0, Z5 \
	VMOVDQA64 Z0, Z6 \
	VMOVDQA64 Z0, Z7
#define ZERO_Z0_Z11 \
	ZERO_Z0_Z7 \
	VMOVDQA64 Z0, Z8 \
	VMOVDQA64 Z0, Z9 \
	VMOVDQA64 Z0, Z10 \
	VMOVDQA64 Z0, Z11

// Z0-Z15 zeroed, and Z0-Z23 (the eight-tile and twelve-vector kernels'
// sums).
#define ZERO_Z0_Z15 \
	ZERO_Z0_Z11 \
	VMOVDQA64 Z0, Z12 \
	VMOVDQA64 Z0, Z13 \
	VMOVDQA64 Z0, Z14 \
	VMOVDQA64 Z0, Z15
#define ZERO_Z0_Z23 \
	ZERO_Z0_Z15 \
	VMOVDQA64 Z0, Z16 \
	VMOVDQA64 Z0, Z17 \
	VMOVDQA64 Z0, Z18 \
	VMOVDQA64 Z0, Z19 \
	VMOVDQA64 Z0, Z20 \
	VMOVDQA64 Z0, Z21 \
	VMOVDQA64 Z0, Z22 \
	VMOVDQA64 Z0, Z23

// Z0-Z11 stored through out: 32 sums a vector.
#define STORE_Z0_Z11 \
	STORE_SIX_PAIRS(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, 64)

// The two- and four-tile kernels' bodies are macros, expanded for tiles of
// floats here and again for tiles of halves and of bfloat16s below: WIDEN
// loads a column (M) of a tile into R as floats, and STEP_COLUMN moves
// R12 on to the tiles' next column (a float tile's column is 32 bytes).
#define WIDEN(M, R) \
	VMOVUPS M, R
#define STEP_COLUMN \
	ADDQ $32, R12

// func f32Tiles2x6(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)
//
// Two tiles (the second tileBytes after the first) against six vectors:
// each column of a tile is loaded once for the six, each value of a
// vector broadcast once for the two tiles. out[j] points where vector j's
// sixteen sums go, the first tile's eight, then the second's.
TEXT ·f32Tiles2x6(SB), NOSPLIT, $0-56

// The two-tile kernels' shared steps: the tiles in SI and DX and the
// vectors' pointers (TWO_TILES_START, with the first eight sums zeroed);
// the column count k in AX and its byte offset in R12 from 0, and the
// read ahead's start (COLUMNS_START); a column of each tile widened into
// Y12 and Y13, asking a line ahead (TWO_TILES_COLUMN); the step to the
// next column, back to L while there is one (NEXT_COLUMN).
#define TWO_TILES_START \
	MOVQ tiles+0(FP), SI \
	MOVQ tileBytes+8(FP), DX \
	ADDQ SI, DX \
	F32_COLS_X6 \
	ZERO4(Y0, Y1, Y2, Y3) \
	ZERO4(Y4, Y5, Y6, Y7)

#define COLUMNS_START \
	XORQ AX, AX \
	XORQ R12, R12 \
	AHEAD_START

#define TWO_TILES_COLUMN \
	AHEAD_LINE \
	WIDEN(0(SI)(R12*1), Y12) \
	WIDEN(0(DX)(R12*1), Y13)

#define NEXT_COLUMN(L) \
	STEP_COLUMN \
	INCQ AX \
	CMPQ AX, CX \
	JB   L

#define TILES_2X6 \
	TWO_TILES_START \
	ZERO4(Y8, Y9, Y10, Y11) \
	COLUMNS_START \
t6k: \
	TWO_TILES_COLUMN \
	F32_TILE_PAIR_X6(Y12, Y13, Y14, Y15, Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11) \
	NEXT_COLUMN(t6k) \
	MOVQ out+32(FP), DI \
	STORE_Y0_Y11 \
	VZEROUPPER \
	RET
	TILES_2X6

// func f32Tiles2x4(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)
//
// f32Tiles2x6 against the first four vectors only (x[0]-x[3] into
// out[0]-out[3]; x[4] and x[5] are loaded but not read), for a batch's
// last group of two to four, which the six-vector
// kernel ran with repeats of its last vector: the sums are f32Tiles2x6's,
// bit for bit, for 4/6 of its multiply-adds.
TEXT ·f32Tiles2x4(SB), NOSPLIT, $0-56
#define TILES_2X4 \
	TWO_TILES_START \
	COLUMNS_START \
t4k: \
	TWO_TILES_COLUMN \
	F32_TILE_PAIR(R8, Y14, Y12, Y13, Y0, Y1) \
	F32_TILE_PAIR(R9, Y15, Y12, Y13, Y2, Y3) \
	F32_TILE_PAIR(R10, Y14, Y12, Y13, Y4, Y5) \
	F32_TILE_PAIR(R11, Y15, Y12, Y13, Y6, Y7) \
	NEXT_COLUMN(t4k) \
	MOVQ out+32(FP), DI \
	STORE_FOUR_PAIRS(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, 32) \
	VZEROUPPER \
	RET
	TILES_2X4

// One column (k in AX, its byte offset in the tiles R12) of four tiles
// (Y24-Y27) against one vector (XR): Y(A)…Y(A+3) += the tiles' weights
// times its value, broadcast in YX.
#define F32_TILE_FOUR(XR, YX, A, B, C, D) \
	VBROADCASTSS 0(XR)(AX*4), YX \
	VFMADD231PS YX, Y24, A \
	VFMADD231PS YX, Y25, B \
	VFMADD231PS YX, Y26, C \
	VFMADD231PS YX, Y27, D

// The four-tile kernels' shared steps: the tiles and vectors
// (F32_TILES4_ARGS) with the column count and read ahead started
// (COLUMNS_START); a column of each tile widened into Y24-Y27
// (FOUR_TILES_COLUMN), or paired into Z24 (tiles 0 and 1) and Z25 (2 and
// 3) for the 512-bit kernels (PAIRED_TILES_COLUMN, defined for each WIDEN).
#define FOUR_TILES_COLUMN \
	AHEAD_LINE \
	WIDEN(0(SI)(R12*1), Y24) \
	WIDEN(0(DX)(R12*1), Y25) \
	WIDEN(0(R15)(R12*1), Y26) \
	WIDEN(0(BX)(R12*1), Y27)

// func f32Tiles4x6(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)
//
// f32Tiles2x6 for four tiles (each tileBytes after the last), in
// AVX-512's 32 vector registers: 24 sums, where 16 registers held 12,
// so each broadcast value serves four tiles and the loads and loop
// steps are fewer for each multiply-add. out[j] points where vector j's
// 32 sums go, tile by tile.
TEXT ·f32Tiles4x6(SB), NOSPLIT, $0-56
#define TILES_4X6 \
	F32_TILES4_ARGS \
	ZERO_Y0_Y23 \
	COLUMNS_START \
t46k: \
	FOUR_TILES_COLUMN \
	F32_TILE_FOUR(R8, Y28, Y0, Y1, Y2, Y3) \
	F32_TILE_FOUR(R9, Y29, Y4, Y5, Y6, Y7) \
	F32_TILE_FOUR(R10, Y28, Y8, Y9, Y10, Y11) \
	F32_TILE_FOUR(R11, Y29, Y12, Y13, Y14, Y15) \
	F32_TILE_FOUR(R13, Y28, Y16, Y17, Y18, Y19) \
	F32_TILE_FOUR(R14, Y29, Y20, Y21, Y22, Y23) \
	NEXT_COLUMN(t46k) \
	MOVQ out+32(FP), DI \
	STORE_Y0_Y23 \
	VZEROUPPER \
	RET
	TILES_4X6

// func f32Tiles4x4(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)
//
// f32Tiles4x6 against the first four vectors only, for a batch's last
// group of two to four (as f32Tiles2x4 is for f32Tiles2x6): its sums
// bit for bit, for 4/6 of the multiply-adds.
TEXT ·f32Tiles4x4(SB), NOSPLIT, $0-56
#define TILES_4X4 \
	F32_TILES4_ARGS \
	ZERO4(Y0, Y1, Y2, Y3) \
	ZERO4(Y4, Y5, Y6, Y7) \
	ZERO4(Y8, Y9, Y10, Y11) \
	ZERO4(Y12, Y13, Y14, Y15) \
	COLUMNS_START \
t44k: \
	FOUR_TILES_COLUMN \
	F32_TILE_FOUR(R8, Y28, Y0, Y1, Y2, Y3) \
	F32_TILE_FOUR(R9, Y29, Y4, Y5, Y6, Y7) \
	F32_TILE_FOUR(R10, Y28, Y8, Y9, Y10, Y11) \
	F32_TILE_FOUR(R11, Y29, Y12, Y13, Y14, Y15) \
	NEXT_COLUMN(t44k) \
	MOVQ out+32(FP), DI \
	STORE_FOUR(0, Y0, Y1, Y2, Y3) \
	STORE_FOUR(1, Y4, Y5, Y6, Y7) \
	STORE_FOUR(2, Y8, Y9, Y10, Y11) \
	STORE_FOUR(3, Y12, Y13, Y14, Y15) \
	VZEROUPPER \
	RET
	TILES_4X4

#define PAIRED_TILES_COLUMN \
	AHEAD_LINE \
	VMOVUPS 0(SI)(R12*1), Y24 \
	VINSERTF32X8 $1, 0(DX)(R12*1), Z24, Z24 \
	VMOVUPS 0(R15)(R12*1), Y25 \
	VINSERTF32X8 $1, 0(BX)(R12*1), Z25, Z25

// func f32Tiles4x6Z(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)
//
// f32Tiles4x6 through 512-bit vectors, for cores with two 512-bit FMA
// units (Intel's server cores), where the 256-bit kernel leaves half the
// arithmetic unused. A column of tiles 0 and 1 fills one vector and of
// tiles 2 and 3 another: each lane is still one row, summed column by
// column, so the results are f32Tiles4x6's bit for bit. Z(2j) and
// Z(2j+1) are vector j's sums, stored as its 32's two halves.
TEXT ·f32Tiles4x6Z(SB), NOSPLIT, $0-56
#define TILES_4X6Z \
	F32_TILES4_ARGS \
	ZERO_Z0_Z11 \
	COLUMNS_START \
t46z: \
	PAIRED_TILES_COLUMN \
	F32_TILE_PAIR_X6(Z24, Z25, Z28, Z29, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11) \
	NEXT_COLUMN(t46z) \
	MOVQ out+32(FP), DI \
	STORE_Z0_Z11 \
	VZEROUPPER \
	RET
	TILES_4X6Z

// func f32Tiles4x4Z(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)
//
// f32Tiles4x6Z against the first four vectors only (f32Tiles4x4's
// 512-bit twin).
TEXT ·f32Tiles4x4Z(SB), NOSPLIT, $0-56
#define TILES_4X4Z \
	F32_TILES4_ARGS \
	ZERO_Z0_Z7 \
	COLUMNS_START \
t44z: \
	PAIRED_TILES_COLUMN \
	F32_TILE_PAIR(R8, Z28, Z24, Z25, Z0, Z1) \
	F32_TILE_PAIR(R9, Z29, Z24, Z25, Z2, Z3) \
	F32_TILE_PAIR(R10, Z28, Z24, Z25, Z4, Z5) \
	F32_TILE_PAIR(R11, Z29, Z24, Z25, Z6, Z7) \
	NEXT_COLUMN(t44z) \
	MOVQ out+32(FP), DI \
	STORE_FOUR_PAIRS(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, 64) \
	VZEROUPPER \
	RET
	TILES_4X4Z

// The half-tile kernels: f32TilesVec, f32Tiles2x6, f32Tiles4x6 and
// f32Tiles4x6Z for tiles of 16-bit floats (an F16 or BF16 file's
// weights: eight rows' values of a column side by side, 16 bytes), each
// column widened by WIDEN as it loads: VCVTPH2PS for halves, and for
// bfloat16s a zero-extension to 32 bits and a shift into a float32's
// upper half. The widening is exact and every sum takes the same
// multiply-adds in the same order, so each kernel's results are bit for
// bit its f32 twin's on the widened tiles; a decode step streams half the
// bytes. The bodies are macros, expanded once for each WIDEN. The tiles
// lie one after another, or in groups of eight with their columns
// interleaved (f32tiles.go, groupHalfTiles): each layout has its decode
// kernel, and the multi-vector kernels read either, stepping tileBytes
// from a tile's column to the next tile's (a tile's size, or 16 bytes)
// and columnBytes from a column to the next (16 bytes, or 128).

// One column (at byte OFF of R12's) of four half tiles (SI, DX, CX, R11),
// widened into Y4-Y7, times V into the sums Y0-Y3.
#define HALF_VEC_COLUMN(OFF, V) \
	WIDEN(OFF(SI)(R12*1), Y4) \
	WIDEN(OFF(DX)(R12*1), Y5) \
	WIDEN(OFF(CX)(R12*1), Y6) \
	WIDEN(OFF(R11)(R12*1), Y7) \
	VFMADD231PS Y4, V, Y0 \
	VFMADD231PS Y5, V, Y1 \
	VFMADD231PS Y6, V, Y2 \
	VFMADD231PS Y7, V, Y3

// Two columns of four half tiles (SI, DX, CX, R11) against x (R8), as
// F32_VEC_PAIR.
#define HALF_VEC_PAIR \
	VBROADCASTSS 0(R8), Y15 \
	VBROADCASTSS 4(R8), Y14 \
	HALF_VEC_COLUMN(0, Y15) \
	HALF_VEC_COLUMN(16, Y14) \
	ADDQ $32, R12 \
	ADDQ $8, R8

#undef WIDEN
#define WIDEN(M, R) \
	VCVTPH2PS M, R
// func f16TilesVec(tiles unsafe.Pointer, n, cols int, x, out unsafe.Pointer)
//
// f32TilesVec for half tiles lying one after another (each 16·cols
// bytes), with its reads: four tiles' streams, each 64-byte line asked
// for once (two pairs of columns a step), 2 KiB ahead.
TEXT ·f16TilesVec(SB), NOSPLIT, $0-40
#undef LOG_COLUMN_BYTES
#define LOG_COLUMN_BYTES 4
#undef VEC_LINE
#define VEC_LINE \
	HALF_VEC_PAIR \
	HALF_VEC_PAIR
#undef VEC_PAIR
#define VEC_PAIR \
	HALF_VEC_PAIR
#undef VEC_ODD
#define VEC_ODD \
	HALF_VEC_COLUMN(0, Y15)
#undef VEC_ONE
#define VEC_ONE \
	WIDEN(0(SI)(R12*1), Y4) \
	VFMADD231PS Y4, Y15, Y0
	TILES_VEC

// func f16TilesVecUnasked(tiles unsafe.Pointer, n, cols int, x, out unsafe.Pointer)
//
// f16TilesVec without its asks ahead, for Zen 3 (tilesVec).
TEXT ·f16TilesVecUnasked(SB), NOSPLIT, $0-40
#undef ASK_AHEAD
#define ASK_AHEAD(M)
	TILES_VEC
#undef ASK_AHEAD
#define ASK_AHEAD(M) \
	PREFETCHNTA M

// One column (at OFF bytes of SI) of a group's tile, widened into T,
// times Y15 into the sum A.
#define HALF_GROUP_COLUMN(OFF, T, A) \
	WIDEN(OFF(SI), T) \
	VFMADD231PS T, Y15, A

// func f16GroupsVec(tiles unsafe.Pointer, n, cols int, x, out unsafe.Pointer)
//
// n groups of half tiles (the first at tiles, each 128·cols bytes after
// the last) against vector x, into 64n floats at out: a column of a
// group's eight tiles (128 bytes) a step, into eight sums, each row
// summed column by column as f32TilesVec sums it, so the sums are its
// bit for bit on the widened tiles. The groups are one stream from start
// to end, left to the hardware's prefetch (groupHalfTiles: the layout of
// the cores whose decode kernels do not ask ahead).
TEXT ·f16GroupsVec(SB), NOSPLIT, $0-40
#define HALF_GROUPS_VEC \
	MOVQ tiles+0(FP), SI \
	MOVQ n+8(FP), R9 \
	MOVQ out+32(FP), DI \
	TESTQ R9, R9 \
	JZ   hgend \
hggroup: \
	MOVQ x+24(FP), R8 \
	MOVQ cols+16(FP), R10 \
	ZERO4(Y0, Y1, Y2, Y3) \
	ZERO4(Y4, Y5, Y6, Y7) \
hgk: \
	VBROADCASTSS 0(R8), Y15 \
	HALF_GROUP_COLUMN(0, Y8, Y0) \
	HALF_GROUP_COLUMN(16, Y9, Y1) \
	HALF_GROUP_COLUMN(32, Y10, Y2) \
	HALF_GROUP_COLUMN(48, Y11, Y3) \
	HALF_GROUP_COLUMN(64, Y12, Y4) \
	HALF_GROUP_COLUMN(80, Y13, Y5) \
	HALF_GROUP_COLUMN(96, Y14, Y6) \
	HALF_GROUP_COLUMN(112, Y8, Y7) \
	ADDQ $128, SI \
	ADDQ $4, R8 \
	DECQ R10 \
	JNZ  hgk \
	VMOVUPS Y0, 0(DI) \
	VMOVUPS Y1, 32(DI) \
	VMOVUPS Y2, 64(DI) \
	VMOVUPS Y3, 96(DI) \
	VMOVUPS Y4, 128(DI) \
	VMOVUPS Y5, 160(DI) \
	VMOVUPS Y6, 192(DI) \
	VMOVUPS Y7, 224(DI) \
	ADDQ $256, DI \
	DECQ R9 \
	JNZ  hggroup \
hgend: \
	VZEROUPPER \
	RET
	HALF_GROUPS_VEC

// func f16Tiles2x6(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int, columnBytes int)
//
// f32Tiles2x6 for half tiles.
TEXT ·f16Tiles2x6(SB), NOSPLIT, $0-64
// (Defined inside a kernel with a columnBytes argument: go vet checks
// each line's argument names against the kernel the line lies in, a
// macro's definition included.)
#undef STEP_COLUMN
#define STEP_COLUMN \
	ADDQ columnBytes+56(FP), R12
	TILES_2X6

// func f16Tiles2x4(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int, columnBytes int)
TEXT ·f16Tiles2x4(SB), NOSPLIT, $0-64
	TILES_2X4

// func f16Tiles4x6(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int, columnBytes int)
//
// f32Tiles4x6 for half tiles.
TEXT ·f16Tiles4x6(SB), NOSPLIT, $0-64
	TILES_4X6

#undef PAIRED_TILES_COLUMN
#define PAIRED_TILES_COLUMN \
	AHEAD_LINE \
	WIDEN(0(SI)(R12*1), Y24) \
	WIDEN(0(DX)(R12*1), Y26) \
	VINSERTF32X8 $1, Y26, Z24, Z24 \
	WIDEN(0(R15)(R12*1), Y25) \
	WIDEN(0(BX)(R12*1), Y27) \
	VINSERTF32X8 $1, Y27, Z25, Z25

// func f16Tiles4x4(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int, columnBytes int)
TEXT ·f16Tiles4x4(SB), NOSPLIT, $0-64
	TILES_4X4

// func f16Tiles4x6Z(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int, columnBytes int)
//
// f32Tiles4x6Z for half tiles.
TEXT ·f16Tiles4x6Z(SB), NOSPLIT, $0-64
	TILES_4X6Z

// func f16Tiles4x4Z(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int, columnBytes int)
TEXT ·f16Tiles4x4Z(SB), NOSPLIT, $0-64
	TILES_4X4Z

// func f16Groups8x6Z(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)
//
// A group of eight half tiles (groupHalfTiles) against six vectors,
// through 512-bit vectors: a column of tiles 0 and 1 is the group's
// first 32 bytes, widened into one vector (Z24), and so on for 2 and 3
// (Z25), 4 and 5, 6 and 7, so a step reads the column's 128 bytes as one
// run and each broadcast value serves the eight tiles, in 24 sums (four
// a vector: Z(4j)…Z(4j+3), stored as its 64). Where the four-tile
// kernels read the group in two passes, each taking half of every
// column's 128 bytes, this reads it in one: on the Zen 4 VM (3 December,
// the Qwen2.5-0.5B shape's F16 pp64, six rounds by turns against the
// tiles one after another and the four-tile kernels) 1.19× their speed
// on one thread (1.08–1.21) and 1.10× on two (1.02–1.30), where the
// four-tile kernels on the groups had read 0.96× on two. Each lane is one
// row summed column by column, so the sums are f32Tiles4x6's bit for
// bit. tileBytes is not read.
TEXT ·f16Groups8x6Z(SB), NOSPLIT, $0-56
#define GROUP_TILES_COLUMN \
	AHEAD_LINE \
	WIDEN(0(SI), Z24) \
	WIDEN(32(SI), Z25) \
	WIDEN(64(SI), Z26) \
	WIDEN(96(SI), Z27)

// One column of the group (Z24-Z27) against one vector (XR, the column k
// in AX): A…D += the weights times its value, broadcast in ZX.
#define GROUP_TILE_EIGHT(XR, ZX, A, B, C, D) \
	VBROADCASTSS 0(XR)(AX*4), ZX \
	VFMADD231PS ZX, Z24, A \
	VFMADD231PS ZX, Z25, B \
	VFMADD231PS ZX, Z26, C \
	VFMADD231PS ZX, Z27, D

// The next column of the group, back to L while there is one.
#define NEXT_GROUP_COLUMN(L) \
	ADDQ $128, SI \
	INCQ AX \
	CMPQ AX, CX \
	JB   L

// Vector J's 64 sums (A…D) stored through out (DI).
#define STORE_EIGHT(J, A, B, C, D) \
	STORE_PAIR(J, A, B, 64) \
	VMOVUPS C, 128(AX) \
	VMOVUPS D, 192(AX)

#define GROUPS_8X6Z \
	MOVQ tiles+0(FP), SI \
	F32_COLS_X6 \
	ZERO_Z0_Z23 \
	XORQ AX, AX \
	AHEAD_START \
g86z: \
	GROUP_TILES_COLUMN \
	GROUP_TILE_EIGHT(R8, Z28, Z0, Z1, Z2, Z3) \
	GROUP_TILE_EIGHT(R9, Z29, Z4, Z5, Z6, Z7) \
	GROUP_TILE_EIGHT(R10, Z28, Z8, Z9, Z10, Z11) \
	GROUP_TILE_EIGHT(R11, Z29, Z12, Z13, Z14, Z15) \
	GROUP_TILE_EIGHT(R13, Z28, Z16, Z17, Z18, Z19) \
	GROUP_TILE_EIGHT(R14, Z29, Z20, Z21, Z22, Z23) \
	NEXT_GROUP_COLUMN(g86z) \
	MOVQ out+32(FP), DI \
	STORE_EIGHT(0, Z0, Z1, Z2, Z3) \
	STORE_EIGHT(1, Z4, Z5, Z6, Z7) \
	STORE_EIGHT(2, Z8, Z9, Z10, Z11) \
	STORE_EIGHT(3, Z12, Z13, Z14, Z15) \
	STORE_EIGHT(4, Z16, Z17, Z18, Z19) \
	STORE_EIGHT(5, Z20, Z21, Z22, Z23) \
	VZEROUPPER \
	RET
	GROUPS_8X6Z

// func f16Groups8x4Z(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)
//
// f16Groups8x6Z against the first four vectors only, for a batch's last
// group of two to four: its sums bit for bit.
TEXT ·f16Groups8x4Z(SB), NOSPLIT, $0-56
#define GROUPS_8X4Z \
	MOVQ tiles+0(FP), SI \
	F32_COLS_X6 \
	ZERO_Z0_Z15 \
	XORQ AX, AX \
	AHEAD_START \
g84z: \
	GROUP_TILES_COLUMN \
	GROUP_TILE_EIGHT(R8, Z28, Z0, Z1, Z2, Z3) \
	GROUP_TILE_EIGHT(R9, Z29, Z4, Z5, Z6, Z7) \
	GROUP_TILE_EIGHT(R10, Z28, Z8, Z9, Z10, Z11) \
	GROUP_TILE_EIGHT(R11, Z29, Z12, Z13, Z14, Z15) \
	NEXT_GROUP_COLUMN(g84z) \
	MOVQ out+32(FP), DI \
	STORE_EIGHT(0, Z0, Z1, Z2, Z3) \
	STORE_EIGHT(1, Z4, Z5, Z6, Z7) \
	STORE_EIGHT(2, Z8, Z9, Z10, Z11) \
	STORE_EIGHT(3, Z12, Z13, Z14, Z15) \
	VZEROUPPER \
	RET
	GROUPS_8X4Z

#undef WIDEN
#define WIDEN(M, R) \
	VPMOVZXWD M, R \
	VPSLLD $16, R, R

// func bf16TilesVec(tiles unsafe.Pointer, n, cols int, x, out unsafe.Pointer)
TEXT ·bf16TilesVec(SB), NOSPLIT, $0-40
	TILES_VEC

// func bf16TilesVecUnasked(tiles unsafe.Pointer, n, cols int, x, out unsafe.Pointer)
//
// bf16TilesVec without its asks ahead, for Zen 3 (tilesVec).
TEXT ·bf16TilesVecUnasked(SB), NOSPLIT, $0-40
#undef ASK_AHEAD
#define ASK_AHEAD(M)
	TILES_VEC
#undef ASK_AHEAD
#define ASK_AHEAD(M) \
	PREFETCHNTA M

// func bf16GroupsVec(tiles unsafe.Pointer, n, cols int, x, out unsafe.Pointer)
TEXT ·bf16GroupsVec(SB), NOSPLIT, $0-40
	HALF_GROUPS_VEC

// func bf16Tiles2x6(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int, columnBytes int)
TEXT ·bf16Tiles2x6(SB), NOSPLIT, $0-64
	TILES_2X6

// func bf16Tiles2x4(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int, columnBytes int)
TEXT ·bf16Tiles2x4(SB), NOSPLIT, $0-64
	TILES_2X4

// func bf16Tiles4x6(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int, columnBytes int)
TEXT ·bf16Tiles4x6(SB), NOSPLIT, $0-64
	TILES_4X6

// func bf16Tiles4x4(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int, columnBytes int)
TEXT ·bf16Tiles4x4(SB), NOSPLIT, $0-64
	TILES_4X4

// func bf16Tiles4x6Z(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int, columnBytes int)
TEXT ·bf16Tiles4x6Z(SB), NOSPLIT, $0-64
	TILES_4X6Z

// func bf16Tiles4x4Z(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int, columnBytes int)
TEXT ·bf16Tiles4x4Z(SB), NOSPLIT, $0-64
	TILES_4X4Z

// func bf16Groups8x6Z(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)
TEXT ·bf16Groups8x6Z(SB), NOSPLIT, $0-56
	GROUPS_8X6Z

// func bf16Groups8x4Z(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)
TEXT ·bf16Groups8x4Z(SB), NOSPLIT, $0-56
	GROUPS_8X4Z

// pairLows is the VPERMD index that takes the low dword of each qword.
DATA pairLows<>+0(SB)/8, $0x0000000200000000
DATA pairLows<>+8(SB)/8, $0x0000000600000004
DATA pairLows<>+16(SB)/8, $0x0000000200000000
DATA pairLows<>+24(SB)/8, $0x0000000600000004
GLOBL pairLows<>(SB), RODATA|NOPTR, $32

// func roundToBFloat16AVX2(rounded, pairs, x unsafe.Pointer, n int)
// roundToBFloat16Generic for n a multiple of 8: each value to the nearest
// bfloat16 (ties to even: u + 0x7fff + the kept part's last bit, then
// the upper half; a NaN's upper half with its quiet bit set), stored as a
// float, and each two as a pair (the even one's in the upper half: a
// qword's two values moved into its low dword, then the four low dwords
// gathered).
TEXT ·roundToBFloat16AVX2(SB), NOSPLIT, $0-32
	MOVQ rounded+0(FP), DI
	MOVQ pairs+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX
	BROADCAST32(1, X8, Y8)
	BROADCAST32(0x7fff, X9, Y9)
	BROADCAST32(0x7fffffff, X10, Y10)
	BROADCAST32(0x7f800000, X11, Y11)
	BROADCAST32(64, X12, Y12)
	VMOVDQU pairLows<>(SB), Y13
	XORQ    AX, AX

bloop:
	CMPQ      AX, CX
	JAE       bend
	VMOVDQU   0(SI)(AX*4), Y0
	VPSRLD    $16, Y0, Y1
	VPAND     Y8, Y1, Y2
	VPADDD    Y9, Y0, Y3
	VPADDD    Y2, Y3, Y3
	VPSRLD    $16, Y3, Y3
	VPOR      Y12, Y1, Y4
	VPAND     Y10, Y0, Y5
	VPCMPGTD  Y11, Y5, Y5
	VPBLENDVB Y5, Y4, Y3, Y3
	VPSLLD    $16, Y3, Y6
	VMOVDQU   Y6, 0(DI)(AX*4)
	VPSLLQ    $16, Y3, Y6
	VPSRLQ    $32, Y3, Y7
	VPOR      Y7, Y6, Y6
	VPERMD    Y6, Y13, Y6
	VMOVDQU   X6, 0(DX)(AX*2)
	ADDQ      $8, AX
	JMP       bloop

bend:
	VZEROUPPER
	RET

// VDPBF16PS Z(S2), Z(S1), Z(D) (AVX512_BF16), which Go's assembler has
// no mnemonic for, encoded by hand (EVEX.512.F3.0F38.W0 52 /r, registers
// only): in each of 16 lanes, D += S1's upper bfloat16 times S2's, then
// S1's lower times S2's, each sum rounded to nearest even.
#define VDPBF16PS_Z(S2, S1, D) \
	BYTE $0x62; \
	BYTE $(0x02 | ((((D)^31)>>3)&1)<<7 | ((((S2)^31)>>4)&1)<<6 | ((((S2)^31)>>3)&1)<<5 | ((((D)^31)>>4)&1)<<4); \
	BYTE $((((S1)^31)&15)<<3 | 6); \
	BYTE $(0x40 | ((((S1)^31)>>4)&1)<<3); \
	BYTE $0x52; \
	BYTE $(0xC0 | ((D)&7)<<3 | ((S2)&7))

// bf16PairWords is the VPERMW index that turns two bfloat16 tiles' two
// columns (tile 0's column k, then k+1, then tile 1's: eight rows each)
// into 16 lanes of one row each, column k's weight in the upper word;
// bf16GroupPairWords the same for a group's two tiles (column k of tile
// 0, then of tile 1, then column k+1 of each).
DATA bf16PairWords<>+0(SB)/8, $0x0001000900000008
DATA bf16PairWords<>+8(SB)/8, $0x0003000b0002000a
DATA bf16PairWords<>+16(SB)/8, $0x0005000d0004000c
DATA bf16PairWords<>+24(SB)/8, $0x0007000f0006000e
DATA bf16PairWords<>+32(SB)/8, $0x0011001900100018
DATA bf16PairWords<>+40(SB)/8, $0x0013001b0012001a
DATA bf16PairWords<>+48(SB)/8, $0x0015001d0014001c
DATA bf16PairWords<>+56(SB)/8, $0x0017001f0016001e
GLOBL bf16PairWords<>(SB), RODATA|NOPTR, $64
DATA bf16GroupPairWords<>+0(SB)/8, $0x0001001100000010
DATA bf16GroupPairWords<>+8(SB)/8, $0x0003001300020012
DATA bf16GroupPairWords<>+16(SB)/8, $0x0005001500040014
DATA bf16GroupPairWords<>+24(SB)/8, $0x0007001700060016
DATA bf16GroupPairWords<>+32(SB)/8, $0x0009001900080018
DATA bf16GroupPairWords<>+40(SB)/8, $0x000b001b000a001a
DATA bf16GroupPairWords<>+48(SB)/8, $0x000d001d000c001c
DATA bf16GroupPairWords<>+56(SB)/8, $0x000f001f000e001e
GLOBL bf16GroupPairWords<>(SB), RODATA|NOPTR, $64

// One pair of columns of the four tiles (Z24: tiles 0 and 1, Z25: 2 and
// 3, paired) against vector j's pair (its pointer XR, the pair's index
// AX), broadcast into ZB (register B): the sums Z(A) and Z(A+1).
#define BF16_PAIR_DOT(XR, ZB, B, A) \
	VPBROADCASTD 0(XR)(AX*4), ZB \
	VDPBF16PS_Z(B, 24, A) \
	VDPBF16PS_Z(B, 25, A+1)

// The dot kernels' shared steps: the tiles and the first six vectors,
// the pair count in CX, the permutation (DOT_PAIR_WORDS) in Z30, the pair
// index AX from 0 (BF16_DOT_START); a pair of columns of the four tiles
// loaded and paired into Z24 and Z25, the tiles' pointers moved on to the
// next pair, which leaves R12 free (DOT_COLUMN). For tiles one after
// another, each tile's two columns are 32 bytes of it (SI, DX, R15, BX);
// for a group's, tiles 0 and 1's columns k are the first 32 bytes at SI,
// 2 and 3's the next, and columns k+1 lie 128 bytes on.
#define BF16_DOT_START \
	F32_TILES4_ARGS \
	SHRQ $1, CX \
	VMOVDQU64 DOT_PAIR_WORDS, Z30 \
	XORQ AX, AX \
	AHEAD_START

#define BF16_DOT_COLUMN \
	AHEAD_LINE \
	AHEAD_LINE \
	VMOVDQU64 0(SI), Y24 \
	VINSERTI32X8 $1, 0(DX), Z24, Z24 \
	VPERMW Z24, Z30, Z24 \
	VMOVDQU64 0(R15), Y25 \
	VINSERTI32X8 $1, 0(BX), Z25, Z25 \
	VPERMW Z25, Z30, Z25 \
	ADDQ $32, SI \
	ADDQ $32, DX \
	ADDQ $32, R15 \
	ADDQ $32, BX

#define BF16_GROUP_DOT_COLUMN \
	AHEAD_LINE \
	AHEAD_LINE \
	VMOVDQU64 0(SI), Y24 \
	VINSERTI32X8 $1, 128(SI), Z24, Z24 \
	VPERMW Z24, Z30, Z24 \
	VMOVDQU64 32(SI), Y25 \
	VINSERTI32X8 $1, 160(SI), Z25, Z25 \
	VPERMW Z25, Z30, Z25 \
	ADDQ $256, SI

// BF16_PAIR_DOT for the first four vectors (R8-R11) into Z0-Z7, and for
// all six (R13, R14 too) into Z0-Z11; the step to the next pair, back to
// L while there is one (NEXT_PAIR).
#define BF16_FOUR_DOTS \
	BF16_PAIR_DOT(R8, Z28, 28, 0) \
	BF16_PAIR_DOT(R9, Z29, 29, 2) \
	BF16_PAIR_DOT(R10, Z28, 28, 4) \
	BF16_PAIR_DOT(R11, Z29, 29, 6)
#define BF16_SIX_DOTS \
	BF16_FOUR_DOTS \
	BF16_PAIR_DOT(R13, Z28, 28, 8) \
	BF16_PAIR_DOT(R14, Z29, 29, 10)
#define NEXT_PAIR(L) \
	INCQ AX \
	CMPQ AX, CX \
	JB   L

// Vector j's pair (j from 6: its pointer loaded from the x array in R12
// into CX) broadcast into ZB, against Z24 and Z25 as BF16_PAIR_DOT.
#define BF16_PAIR_DOT_LOADED(J, ZB, B, A) \
	MOVQ (8*(J))(R12), CX \
	BF16_PAIR_DOT(CX, ZB, B, A)

// The three dot kernels' bodies, expanded for each layout's DOT_COLUMN
// and DOT_PAIR_WORDS.
#define BF16_DOT_4X6 \
	ZERO_Z0_Z11 \
	BF16_DOT_START \
t46dot: \
	DOT_COLUMN \
	BF16_SIX_DOTS \
	NEXT_PAIR(t46dot) \
	MOVQ out+32(FP), DI \
	STORE_Z0_Z11 \
	VZEROUPPER \
	RET

#define BF16_DOT_4X4 \
	ZERO_Z0_Z7 \
	BF16_DOT_START \
t44dot: \
	DOT_COLUMN \
	BF16_FOUR_DOTS \
	NEXT_PAIR(t44dot) \
	MOVQ out+32(FP), DI \
	STORE_FOUR_PAIRS(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, 64) \
	VZEROUPPER \
	RET

#define BF16_DOT_4X12 \
	ZERO_Z0_Z23 \
	BF16_DOT_START \
	MOVQ CX, cols+16(FP) \
	MOVQ x+24(FP), R12 \
t412dot: \
	DOT_COLUMN \
	BF16_SIX_DOTS \
	BF16_PAIR_DOT_LOADED(6, Z28, 28, 12) \
	BF16_PAIR_DOT_LOADED(7, Z29, 29, 14) \
	BF16_PAIR_DOT_LOADED(8, Z28, 28, 16) \
	BF16_PAIR_DOT_LOADED(9, Z29, 29, 18) \
	BF16_PAIR_DOT_LOADED(10, Z28, 28, 20) \
	BF16_PAIR_DOT_LOADED(11, Z29, 29, 22) \
	INCQ AX \
	CMPQ AX, cols+16(FP) \
	JB   t412dot \
	MOVQ out+32(FP), DI \
	STORE_Z0_Z11 \
	ADDQ $48, DI \
	STORE_SIX_PAIRS(Z12, Z13, Z14, Z15, Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, 64) \
	VZEROUPPER \
	RET

#define DOT_COLUMN BF16_DOT_COLUMN
#define DOT_PAIR_WORDS bf16PairWords<>(SB)

// func bf16Tiles4x6Dot(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)
//
// bf16Tiles4x6Z through VDPBF16PS, two columns an instruction, for cols
// even and each x[j] a vector's bfloat16s in pairs (roundToBFloat16): a
// step loads two columns of each tile, pairs their weights row by row
// (VPERMW), and asks for two lines ahead, as two column steps of the
// other kernels do. Each lane adds column k's product, then k+1's, each
// exact in a float, so the sums are bf16Tiles4x6Z's on the vectors'
// values widened, bit for bit.
TEXT ·bf16Tiles4x6Dot(SB), NOSPLIT, $0-56
	BF16_DOT_4X6

// func bf16Tiles4x4Dot(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)
//
// bf16Tiles4x6Dot against the first four vectors only, for a batch's
// last group of two to four: its sums bit for bit.
TEXT ·bf16Tiles4x4Dot(SB), NOSPLIT, $0-56
	BF16_DOT_4X4

// func bf16Tiles4x12Dot(tiles unsafe.Pointer, tileBytes, cols int, x, out *[12]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)
//
// bf16Tiles4x6Dot against twelve vectors, in 24 sums: each pair of
// columns is loaded and paired once for twelve vectors, where the
// six-vector kernel spends its loads and VPERMWs on six. The last six
// vectors' pointers are loaded each step (no register is left for them);
// the pair count is kept in the cols argument's slot, so that CX can
// hold them. Its sums are bf16Tiles4x6Dot's on each half, bit for bit.
TEXT ·bf16Tiles4x12Dot(SB), NOSPLIT, $0-56
	BF16_DOT_4X12

#undef DOT_COLUMN
#define DOT_COLUMN BF16_GROUP_DOT_COLUMN
#undef DOT_PAIR_WORDS
#define DOT_PAIR_WORDS bf16GroupPairWords<>(SB)

// func bf16Groups4x6Dot(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)
//
// bf16Tiles4x6Dot for four tiles of a group (tileBytes 16: it reads them
// as the group's layout lays them).
TEXT ·bf16Groups4x6Dot(SB), NOSPLIT, $0-56
	BF16_DOT_4X6

// func bf16Groups4x4Dot(tiles unsafe.Pointer, tileBytes, cols int, x, out *[6]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)
TEXT ·bf16Groups4x4Dot(SB), NOSPLIT, $0-56
	BF16_DOT_4X4

// func bf16Groups4x12Dot(tiles unsafe.Pointer, tileBytes, cols int, x, out *[12]unsafe.Pointer, ahead unsafe.Pointer, aheadStep int)
TEXT ·bf16Groups4x12Dot(SB), NOSPLIT, $0-56
	BF16_DOT_4X12

// The VNNI kernels (AVX512_VNNI with AVX512VL): q4_0Tile1, q4_0Tile3 and
// q4_0Tile4 with each integer product step one VPDPBUSD (unsigned bytes
// times signed ones, four to an int32 lane, added in), where the kernels
// above spend VPMADDUBSW into int16 pairs, then VPADDW, then VPMADDWD
// against ones. Every sum is the same integer (none of the int16 steps
// saturates), so each VNNI kernel's results are bit for bit its AVX2
// twin's. They read the activations' plain codes, broadcast as they load
// them (.BCST), as every VNNI kernel below does.

#undef NIBBLE_DOT
#define NIBBLE_DOT(OFF, X, LO, HI, T, ACC) \
	VPDPBUSD.BCST ((OFF)/8)(X), LO, ACC \
	VPDPBUSD.BCST ((OFF)/8+16)(X), HI, ACC

#undef GROUP_FLOATS
#define GROUP_FLOATS(S32, F) \
	VCVTDQ2PS S32, F

// func q4_0Tile3VNNI(tile, codes0, scales0, sums0, codes1, scales1, sums1, codes2, scales2, sums2 unsafe.Pointer, blocks int, out *[3][8]float32)
TEXT ·q4_0Tile3VNNI(SB), NOSPLIT, $0-96
	Q4_0_TILE3

// func q4_0Tile1VNNI(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[8]float32)
TEXT ·q4_0Tile1VNNI(SB), NOSPLIT, $0-48
	Q4_0_TILE1

// func q4_0Tile4VNNI(tile unsafe.Pointer, in *[4]tileInput, out *[4][8]float32)
TEXT ·q4_0Tile4VNNI(SB), NOSPLIT, $0-24
	Q4_0_TILE4

// One 32-byte column of two Q4_0 tiles' nibbles at OFF (the first tile's
// at SI in Z8's low half, the second's at R15 in its high half) times
// four vectors' activations, into their int32 sums Z4-Z7: q4_0Tile4VNNI's
// column for sixteen rows, through the VNNI NIBBLE_DOT. Z9 gets the low
// nibbles, Z8 the high ones.
#define Q4_0_COL4Z(OFF) \
	NIBBLES_Z(OFF) \
	NIBBLE_DOTS4Z(OFF)

// Two tiles' column of nibbles at OFF, unpacked: Z9 the low nibbles, Z8
// the high ones.
#define NIBBLES_Z(OFF) \
	VMOVDQU OFF(SI), Y8 \
	VINSERTI64X4 $1, OFF(R15), Z8, Z8 \
	VPANDD Z15, Z8, Z9 \
	VPSRLW $4, Z8, Z8 \
	VPANDD Z15, Z8, Z8

// Z9 and Z8 (a column's low and high halves' bytes) times four vectors'
// codes (R8-R11), into their int32 sums Z4-Z7.
#define NIBBLE_DOTS4Z(OFF) \
	NIBBLE_DOT(OFF, R8, Z9, Z8, Z10, Z4) \
	NIBBLE_DOT(OFF, R9, Z9, Z8, Z10, Z5) \
	NIBBLE_DOT(OFF, R10, Z9, Z8, Z10, Z6) \
	NIBBLE_DOT(OFF, R11, Z9, Z8, Z10, Z7)

// Vector K's group (its int32 sums in S32) into its running sum SUM:
// FINISH's steps in FINISH's order on sixteen rows, the rows' d in Z12.
#define Q4_0_FINISH4Z(S32, K, SUM) \
	MOVQ (32*K+8)(BX), R12 \
	MOVQ (32*K+16)(BX), R13 \
	VCVTDQ2PS S32, Z8 \
	VBROADCASTSS 0(R12)(DX*4), Z9 \
	VMULPS Z9, Z8, Z8 \
	VBROADCASTSS 0(R13)(DX*4), Z10 \
	VMULPS Z13, Z10, Z10 \
	VSUBPS Z10, Z8, Z8 \
	VFMADD231PS Z12, Z8, SUM

// Q4_0's constant beside the nibble mask (Z15): 8.0 in Z13.
#define Q4_0_X2Z_CONSTS \
	MOVL $0x41000000, AX \
	VPBROADCASTD AX, Z13

// func q4_0Tile4x2Z(tile unsafe.Pointer, tileBytes int, in *[4]tileInput, out *[4][16]float32)
//
// q4_0Tile4VNNI on two tiles at once (the second tileBytes after the
// first) through 512-bit vectors, for cores that run them at twice the
// 256-bit rate: each lane is still one row, summed as q4_0Tile4VNNI sums
// it, so out[j] is q4_0Tile4VNNI's out[j] for the first tile then for
// the second, bit for bit. Z0-Z3 are the running sums, Z4-Z7 a group's
// int32 sums.
TEXT ·q4_0Tile4x2Z(SB), NOSPLIT, $0-32
	TILE4_X2Z(Q4_0_X2Z_CONSTS, Q4_0_COL4Z, Q4_0_FINISH4Z)

// The Q8_0 tile kernels, VNNI only: a tile holds each code as u = w+128
// (unsigned), so VPDPBUSD meets the activations' signed codes directly,
// and Σu·x = Σw·x + 128·Σx is made exact again by taking off 128 times
// the group's Σx (an int32 per group) before the conversion; then times
// d_x, then times each row's d into the running sum. Each int32 lane
// holds one row's whole group, so the float steps serve eight rows. The
// activations are their plain codes: VPDPBUSD's embedded broadcast
// (.BCST) puts four of them in every row's lane as it loads them.

// A Q8_0 tile group's int32 sums (ACC) against a vector whose group
// scales and Σx are at SCALES and ISUMS, into SUM, the rows' d in Y13:
// made exact by OFFSET (Q8T_OFFSET, Σu·x less 128·Σx, for the VNNI
// kernels; NO_OFFSET for the AVX2 ones, whose sums are Σw·x already),
// converted, times d_x, times d.
#define Q8T_OFFSET(ACC, ISUMS) \
	VPBROADCASTD 0(ISUMS)(DX*4), Y9 \
	VPSLLD $7, Y9, Y9 \
	VPSUBD Y9, ACC, ACC

#define NO_OFFSET(ACC, ISUMS)

#define Q8T_FINISH(OFFSET, ACC, SCALES, ISUMS, SUM) \
	OFFSET(ACC, ISUMS) \
	VCVTDQ2PS ACC, ACC \
	VBROADCASTSS 0(SCALES)(DX*4), Y10 \
	VMULPS Y10, ACC, ACC \
	VFMADD231PS Y13, ACC, SUM

// The group loops that Q8_0's kernels and IQ4_NL's share, for one
// vector and for four (in): after CONSTS, per group, COLS (the group's
// columns) sums it into Y3 (Y4-Y7), the rows' halves d at D in the group
// become Y13 for Q8T_FINISH with OFFSET, and the next group is BYTES on.
// Y0 (Y0-Y3) holds the running sums. NO_CONSTS is a kernel's CONSTS that
// has none.
#define NO_CONSTS

// A group's columns, COL(T) for each: a Q8_0 tile's eight of 32 bytes,
// and a Q4_0 tile's four of nibbles (by their offsets).
#define EIGHT_COLUMNS(COL) \
	COL(0) \
	COL(1) \
	COL(2) \
	COL(3) \
	COL(4) \
	COL(5) \
	COL(6) \
	COL(7)

#define NIBBLE_COLUMNS(COL) \
	COL(0) \
	COL(32) \
	COL(64) \
	COL(96)

#define Q8T_TILE1(CONSTS, COLS, OFFSET, D, BYTES) \
	TILE1_ARGS \
	CONSTS \
	VXORPS Y0, Y0, Y0 \
	XORQ DX, DX \
t1groups: \
	CMPQ DX, CX \
	JAE  t1done \
	VPXOR Y3, Y3, Y3 \
	COLS \
	VCVTPH2PS D(SI), Y13 \
	Q8T_FINISH(OFFSET, Y3, R9, R10, Y0) \
	ADDQ $BYTES, SI \
	ADDQ $32, R8 \
	INCQ DX \
	JMP  t1groups \
t1done: \
	VMOVUPS Y0, 0(DI) \
	VZEROUPPER \
	RET

#define Q8T_TILE4(CONSTS, COLS, OFFSET, D, BYTES) \
	TILE4_ARGS \
	CONSTS \
	ZERO4(Y0, Y1, Y2, Y3) \
	XORQ DX, DX \
t4groups: \
	CMPQ DX, CX \
	JAE  t4done \
	ZERO4(Y4, Y5, Y6, Y7) \
	COLS \
	VCVTPH2PS D(SI), Y13 \
	Q8T_FINISH4_ALL(OFFSET) \
	ADDQ $BYTES, SI \
	TILE4_STEP(32) \
	JMP  t4groups \
t4done: \
	TILE4_STORE_RET

// func q8_0Tile1VNNI(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[8]float32)
//
// One Q8_0 tile (272 bytes a group: eight 32-byte columns of codes, four
// of each row's, then eight halves d) against one vector's codes
// (codes), group scales and Σx (sums). Y0 is the running sum, Y3 a
// group's int32 sums.
TEXT ·q8_0Tile1VNNI(SB), NOSPLIT, $0-48
#define Q8T_COL1(T) \
	VMOVDQU (32*T)(SI), Y8 \
	VPDPBUSD.BCST (4*T)(R8), Y8, Y3

#define Q8T_COLS1 EIGHT_COLUMNS(Q8T_COL1)

	Q8T_TILE1(NO_CONSTS, Q8T_COLS1, Q8T_OFFSET, 256, 272)

// One column of codes against four vectors' codes (R8-R11), into their
// int32 sums Y4-Y7.
#define Q8T_COL4(T) \
	VMOVDQU (32*T)(SI), Y8 \
	VPDPBUSD.BCST (4*T)(R8), Y8, Y4 \
	VPDPBUSD.BCST (4*T)(R9), Y8, Y5 \
	VPDPBUSD.BCST (4*T)(R10), Y8, Y6 \
	VPDPBUSD.BCST (4*T)(R11), Y8, Y7

// Vector K's group into its running sum, its scales and Σx found through
// its tileInput at 32K(BX).
#define Q8T_FINISH4(OFFSET, ACC, K, SUM) \
	MOVQ (32*K+8)(BX), R12 \
	MOVQ (32*K+16)(BX), R13 \
	Q8T_FINISH(OFFSET, ACC, R12, R13, SUM)

// The four vectors' groups (Y4-Y7) into their running sums (Y0-Y3).
#define Q8T_FINISH4_ALL(OFFSET) \
	Q8T_FINISH4(OFFSET, Y4, 0, Y0) \
	Q8T_FINISH4(OFFSET, Y5, 1, Y1) \
	Q8T_FINISH4(OFFSET, Y6, 2, Y2) \
	Q8T_FINISH4(OFFSET, Y7, 3, Y3)

// func q8_0Tile4VNNI(tile unsafe.Pointer, in *[4]tileInput, out *[4][8]float32)
//
// q8_0Tile1VNNI for four vectors (in), each summed exactly as
// q8_0Tile1VNNI sums it: each column loaded once for the four. Y0-Y3
// are the running sums, Y4-Y7 a group's int32 sums.
TEXT ·q8_0Tile4VNNI(SB), NOSPLIT, $0-24
#define Q8T_COLS4 EIGHT_COLUMNS(Q8T_COL4)

	Q8T_TILE4(NO_CONSTS, Q8T_COLS4, Q8T_OFFSET, 256, 272)

// IQ4_NL's VNNI kernels. Its tiles are Q4_0's (nibbles, then eight
// halves d): each column of nibbles is unpacked as Q4_0's kernels do,
// then each nibble looked up (VPSHUFB) in a register holding the table of
// levels plus 128 in both lanes, so VPDPBUSD meets the levels as unsigned
// bytes against the activations' signed codes, and Σ(level+128)·x less
// 128·Σx (Q8T_OFFSET, in int32) is exactly Σ level·x, the integer
// iq4NLTile1 sums (below): the same results, bit for bit.

// The table: iq4NLLevels plus 128, one byte each.
DATA iq4NLLevels128<>+0(SB)/8, $0x766a5d4f3f2d1801
DATA iq4NLLevels128<>+8(SB)/8, $0xf1d9c5b5a6998d81
GLOBL iq4NLLevels128<>(SB), RODATA|NOPTR, $16

// IQ4_NL's constants: the low nibble of every byte (Y15, as NIBBLES
// reads it) and the table in both lanes (Y14).
#define IQ4NL_CONSTS \
	BROADCAST32(0x0f0f0f0f, X15, Y15) \
	VBROADCASTI128 iq4NLLevels128<>(SB), Y14

// One 32-byte column of nibbles at OFF looked up: LO the low nibbles'
// levels plus 128, RAW the high ones'.
#define IQ4NL_COLUMN(OFF, RAW, LO) \
	NIBBLES(OFF, RAW, LO) \
	VPSHUFB LO, Y14, LO \
	VPSHUFB RAW, Y14, RAW

// func iq4NLTile1VNNI(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[8]float32)
//
// One IQ4_NL tile against one vector's plain codes (codes), group scales
// and Σx (sums). Y0 is the running sum, Y3 a group's int32 sums.
TEXT ·iq4NLTile1VNNI(SB), NOSPLIT, $0-48
#define IQ4NL_COL1(OFF) \
	IQ4NL_COLUMN(OFF, Y6, Y7) \
	VPDPBUSD.BCST ((OFF)/8)(R8), Y7, Y3 \
	VPDPBUSD.BCST ((OFF)/8+16)(R8), Y6, Y3

#define IQ4NL_COLS1 NIBBLE_COLUMNS(IQ4NL_COL1)

	Q8T_TILE1(IQ4NL_CONSTS, IQ4NL_COLS1, Q8T_OFFSET, 128, 144)

// One column of nibbles looked up once for four vectors' codes (R8-R11),
// into their int32 sums Y4-Y7.
#define IQ4NL_COL4(OFF) \
	IQ4NL_COLUMN(OFF, Y8, Y11) \
	VPDPBUSD.BCST ((OFF)/8)(R8), Y11, Y4 \
	VPDPBUSD.BCST ((OFF)/8+16)(R8), Y8, Y4 \
	VPDPBUSD.BCST ((OFF)/8)(R9), Y11, Y5 \
	VPDPBUSD.BCST ((OFF)/8+16)(R9), Y8, Y5 \
	VPDPBUSD.BCST ((OFF)/8)(R10), Y11, Y6 \
	VPDPBUSD.BCST ((OFF)/8+16)(R10), Y8, Y6 \
	VPDPBUSD.BCST ((OFF)/8)(R11), Y11, Y7 \
	VPDPBUSD.BCST ((OFF)/8+16)(R11), Y8, Y7

// func iq4NLTile4VNNI(tile unsafe.Pointer, in *[4]tileInput, out *[4][8]float32)
//
// iq4NLTile1VNNI for four vectors (in), each summed exactly as
// iq4NLTile1VNNI sums it: each column's nibbles unpacked and looked up
// once for the four. Y0-Y3 are the running sums, Y4-Y7 a group's int32
// sums.
TEXT ·iq4NLTile4VNNI(SB), NOSPLIT, $0-24
#define IQ4NL_COLS4 NIBBLE_COLUMNS(IQ4NL_COL4)

	Q8T_TILE4(IQ4NL_CONSTS, IQ4NL_COLS4, Q8T_OFFSET, 128, 144)

// One 32-byte column of two IQ4_NL tiles' nibbles at OFF (as
// Q4_0_COL4Z's) looked up in the levels (Z14, the table in each 128-bit
// lane) times four vectors' codes, into their int32 sums Z4-Z7:
// iq4NLTile4VNNI's column for sixteen rows. Z9 gets the low nibbles'
// levels, Z8 the high ones'.
#define IQ4NL_COL4Z(OFF) \
	NIBBLES_Z(OFF) \
	VPSHUFB Z9, Z14, Z9 \
	VPSHUFB Z8, Z14, Z8 \
	NIBBLE_DOTS4Z(OFF)

// Vector K's group (its int32 sums in S32) into its running sum SUM:
// Q8T_FINISH's steps in its order on sixteen rows (less 128·Σx, to
// floats, times d_x, times d), the rows' d in Z12.
#define IQ4NL_FINISH4Z(S32, K, SUM) \
	MOVQ (32*K+8)(BX), R12 \
	MOVQ (32*K+16)(BX), R13 \
	VPBROADCASTD 0(R13)(DX*4), Z9 \
	VPSLLD $7, Z9, Z9 \
	VPSUBD Z9, S32, S32 \
	VCVTDQ2PS S32, S32 \
	VBROADCASTSS 0(R12)(DX*4), Z10 \
	VMULPS Z10, S32, S32 \
	VFMADD231PS Z12, S32, SUM

// IQ4_NL's constant beside the nibble mask (Z15): the levels' table in
// each 128-bit lane of Z14.
#define IQ4NL_X2Z_CONSTS \
	VBROADCASTI32X4 iq4NLLevels128<>(SB), Z14

// func iq4NLTile4x2Z(tile unsafe.Pointer, tileBytes int, in *[4]tileInput, out *[4][16]float32)
//
// iq4NLTile4VNNI on two tiles at once (the second tileBytes after the
// first) through 512-bit vectors, as q4_0Tile4x2Z is q4_0Tile4VNNI's:
// each lane is one row, summed as iq4NLTile4VNNI sums it, so out[j] is
// its out[j] for the first tile then for the second, bit for bit. Z0-Z3
// are the running sums, Z4-Z7 a group's int32 sums.
TEXT ·iq4NLTile4x2Z(SB), NOSPLIT, $0-32
	TILE4_X2Z(IQ4NL_X2Z_CONSTS, IQ4NL_COL4Z, IQ4NL_FINISH4Z)

// Q8_0's AVX2 tile kernels read the VNNI kernels' tiles: each column's
// codes made signed again (u XOR 0x80, in Y8), |w| (Y9) times the
// activations with w's sign (VPSIGNB) through VPMADDUBSW into int16
// pairs (at most 2·128·127: none saturates), then VPMADDWD against ones
// into int32. That is Σw·x, the integer the VNNI kernels reach as
// Σu·x − 128·Σx, so the results are theirs bit for bit, and no offset is
// taken (NO_OFFSET). Y12 holds 0x80 in every byte, Y14 int16 ones.

#define Q8A_CONSTS \
	BROADCAST32(0x80808080, X12, Y12) \
	INT16_ONES(Y14)

#define Q8A_CODES(T) \
	VMOVDQU (32*T)(SI), Y8 \
	VPXOR Y12, Y8, Y8 \
	VPABSB Y8, Y9

// Signed weights W (their magnitudes in ABS) against the four codes of a
// vector at XOFF(X), into its int32 sums ACC: the codes with the weights'
// signs, times ABS through VPMADDUBSW, pairs summed against int16 ones
// (ONES). T is a temporary.
#define SIGNED_DOT(XOFF, X, W, ABS, ONES, T, ACC) \
	VPBROADCASTD XOFF(X), T \
	VPSIGNB W, T, T \
	VPMADDUBSW T, ABS, T \
	VPMADDWD ONES, T, T \
	VPADDD T, ACC, ACC

// Column T's codes against the four codes of a vector at X, into its
// int32 sums ACC.
#define Q8A_DOT(T, X, ACC) SIGNED_DOT((4*T), X, Y8, Y9, Y14, Y10, ACC)

#define Q8A_COL1(T) \
	Q8A_CODES(T) \
	Q8A_DOT(T, R8, Y3)

#define Q8A_COLS1 EIGHT_COLUMNS(Q8A_COL1)

// func q8_0Tile1(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[8]float32)
TEXT ·q8_0Tile1(SB), NOSPLIT, $0-48
	Q8T_TILE1(Q8A_CONSTS, Q8A_COLS1, NO_OFFSET, 256, 272)

#define Q8A_COL4(T) \
	Q8A_CODES(T) \
	Q8A_DOT(T, R8, Y4) \
	Q8A_DOT(T, R9, Y5) \
	Q8A_DOT(T, R10, Y6) \
	Q8A_DOT(T, R11, Y7)

#define Q8A_COLS4 EIGHT_COLUMNS(Q8A_COL4)

// func q8_0Tile4(tile unsafe.Pointer, in *[4]tileInput, out *[4][8]float32)
TEXT ·q8_0Tile4(SB), NOSPLIT, $0-24
	Q8T_TILE4(Q8A_CONSTS, Q8A_COLS4, NO_OFFSET, 256, 272)

// IQ4_NL's AVX2 kernels read the VNNI kernels' tiles (Q4_0's) and look
// each nibble's level up as they do, in a table of the levels themselves
// (signed, Y14), then take them as Q8_0's AVX2 kernels take codes: |level|
// times x with the level's sign, through VPMADDUBSW and VPMADDWD into
// int32. That is Σ level·x, the integer the VNNI kernels reach as
// Σ(level+128)·x − 128·Σx, so the results are theirs bit for bit, from
// 144 bytes a group where a tile of looked-up levels took 272. Y15 holds
// the low nibble of every byte, Y13 int16 ones (made again each group:
// the group's d takes Y13 after its columns).
DATA iq4NLLevels<>+0(SB)/8, $0xf6eaddcfbfad9881
DATA iq4NLLevels<>+8(SB)/8, $0x7159453526190d01
GLOBL iq4NLLevels<>(SB), RODATA|NOPTR, $16

#define IQ4A_CONSTS \
	BROADCAST32(0x0f0f0f0f, X15, Y15) \
	VBROADCASTI128 iq4NLLevels<>(SB), Y14

// One 32-byte column of nibbles at OFF looked up: LO the low nibbles'
// levels, RAW the high ones', and their magnitudes in ALO and ARAW.
#define IQ4A_COLUMN(OFF, RAW, LO, ARAW, ALO) \
	NIBBLES(OFF, RAW, LO) \
	VPSHUFB LO, Y14, LO \
	VPSHUFB RAW, Y14, RAW \
	VPABSB LO, ALO \
	VPABSB RAW, ARAW

// Levels LEVELS (magnitudes ABS) against the four codes of a vector at
// XOFF(X), into its int32 sums ACC.
#define IQ4A_DOT(XOFF, X, LEVELS, ABS, ACC) SIGNED_DOT(XOFF, X, LEVELS, ABS, Y13, Y12, ACC)

#define IQ4A_COL1(OFF) \
	IQ4A_COLUMN(OFF, Y6, Y7, Y8, Y9) \
	IQ4A_DOT(((OFF)/8), R8, Y7, Y9, Y3) \
	IQ4A_DOT(((OFF)/8+16), R8, Y6, Y8, Y3)

#define IQ4A_COLS1 \
	INT16_ONES(Y13) \
	NIBBLE_COLUMNS(IQ4A_COL1)

// func iq4NLTile1(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[8]float32)
TEXT ·iq4NLTile1(SB), NOSPLIT, $0-48
	Q8T_TILE1(IQ4A_CONSTS, IQ4A_COLS1, NO_OFFSET, 128, 144)

#define IQ4A_COL4(OFF) \
	IQ4A_COLUMN(OFF, Y8, Y11, Y9, Y10) \
	IQ4A_DOT(((OFF)/8), R8, Y11, Y10, Y4) \
	IQ4A_DOT(((OFF)/8+16), R8, Y8, Y9, Y4) \
	IQ4A_DOT(((OFF)/8), R9, Y11, Y10, Y5) \
	IQ4A_DOT(((OFF)/8+16), R9, Y8, Y9, Y5) \
	IQ4A_DOT(((OFF)/8), R10, Y11, Y10, Y6) \
	IQ4A_DOT(((OFF)/8+16), R10, Y8, Y9, Y6) \
	IQ4A_DOT(((OFF)/8), R11, Y11, Y10, Y7) \
	IQ4A_DOT(((OFF)/8+16), R11, Y8, Y9, Y7)

#define IQ4A_COLS4 \
	INT16_ONES(Y13) \
	NIBBLE_COLUMNS(IQ4A_COL4)

// func iq4NLTile4(tile unsafe.Pointer, in *[4]tileInput, out *[4][8]float32)
TEXT ·iq4NLTile4(SB), NOSPLIT, $0-24
	Q8T_TILE4(IQ4A_CONSTS, IQ4A_COLS4, NO_OFFSET, 128, 144)

// The Q4_K VNNI kernels: q4KTile1's and q4KTile3's sums with VPDPBUSD,
// against the activations' plain Q8_K codes (.BCST). Each group's sum is
// int32 at once and is multiplied by each row's group scale (VPMULLD,
// the scale zero-extended to its row's lane) into the block's sum: the
// same integers as the int16 sums weighed with VPMADDWD, so the same
// results, bit for bit. The mins and the float steps are K1_FINISH's and
// K_FINISH's.

// Column I of group pair C against the codes at X (weights 64C+4I… for
// the low nibbles, 64C+32+4I… for the high), into the int32 sums EVEN
// and ODD; the nibbles unpacked in Y10 (low) and Y9 (high).
#define KV_NIBBLES(C, I) \
	VMOVDQU (256*C+32*I)(SI), Y9 \
	VPAND Y15, Y9, Y10 \
	VPSRLW $4, Y9, Y9 \
	VPAND Y15, Y9, Y9

#define KV_DOT(C, I, X, EVEN, ODD) \
	VPDPBUSD.BCST (64*C+4*I)(X), Y10, EVEN \
	VPDPBUSD.BCST (64*C+32+4*I)(X), Y9, ODD

// Group G's int32 sums (ACC) times each row's scale into the block's sum
// BLOCK (Y11 a temporary).
#define KV_SCALE(G, ACC, BLOCK) \
	VPMOVZXBD K_SCALES_AT(G), Y11 \
	VPMULLD Y11, ACC, ACC \
	VPADDD ACC, BLOCK, BLOCK

// The Q5_K VNNI kernel: q5KTile1's sums with VPDPBUSD against the plain
// Q8_K codes (.BCST), each column's codes unpacked as Q5_COL unpacks
// them. A group's int32 sum takes all eight columns at once (q5KTile1's
// int16 sums take four), then each row's scale (KV_SCALE): the same
// integers, so the same results, bit for bit.
#define Q5V_COL(C, I, SE, NE, SO, NO) \
	VMOVDQU (256*C+32*I)(SI), Y9 \
	VMOVDQU (1184+32*I)(SI), Y8 \
	VPAND Y15, Y9, Y10 \
	SE $NE, Y8, Y11 \
	VPAND Y5, Y11, Y11 \
	VPOR Y11, Y10, Y10 \
	VPDPBUSD.BCST (64*C+4*I)(R8), Y10, Y0 \
	VPSRLW $4, Y9, Y9 \
	VPAND Y15, Y9, Y9 \
	SO $NO, Y8, Y8 \
	VPAND Y5, Y8, Y8 \
	VPOR Y8, Y9, Y9 \
	VPDPBUSD.BCST (64*C+32+4*I)(R8), Y9, Y1

#define Q5V_PAIR(C, SE, NE, SO, NO) \
	Q5_PREFETCH(C) \
	VPXOR Y0, Y0, Y0 \
	VPXOR Y1, Y1, Y1 \
	Q5V_COL(C, 0, SE, NE, SO, NO) \
	Q5V_COL(C, 1, SE, NE, SO, NO) \
	Q5V_COL(C, 2, SE, NE, SO, NO) \
	Q5V_COL(C, 3, SE, NE, SO, NO) \
	Q5V_COL(C, 4, SE, NE, SO, NO) \
	Q5V_COL(C, 5, SE, NE, SO, NO) \
	Q5V_COL(C, 6, SE, NE, SO, NO) \
	Q5V_COL(C, 7, SE, NE, SO, NO) \
	KV_SCALE((2*C), Y0, Y2) \
	KV_SCALE((2*C+1), Y1, Y2)

// func q5KTile1VNNI(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[8]float32)
TEXT ·q5KTile1VNNI(SB), NOSPLIT, $0-48
	Q5K_TILE1(Q5V_PAIR)

// The Q4_K VNNI kernels read the compact tile (q4KCompactTileBytes): a
// block's packed six-bit scales and mins as the file keeps them, byte k
// of the eight rows in bytes 8k…8k+7. Each block starts by unpacking
// them onto the stack as the byte-scale tile holds them (K_BLOCK_START):
// scale j of rows 0…7 at 8j, min j at 64+8j, with ggml's rule (j < 4:
// byte j and byte j+4, six bits; j ≥ 4: byte j+4's low or high nibble
// and the top two bits of byte j−4 or j), so the sums that follow are the
// byte-scale tile's. Y20 and Y21 hold 0x3f and 0xc0 in every byte.

// func q4KTile1VNNI(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[8]float32)
//
// Y0 and Y1 are a group pair's int32 sums (even, odd group), Y2 the
// block's, Y4 the running sum.
TEXT ·q4KTile1VNNI(SB), NOSPLIT, $128-48
#undef K_SCALES_AT
#undef K_MINS_AT
#undef K_D
#undef K_DMIN
#undef K_BYTES
#undef K_CONSTS
#undef K_BLOCK_START
#define K_SCALES_AT(G) (8*(G))(SP)
#define K_MINS_AT(C) (64+16*(C))(SP)
#define K_D 1120
#define K_DMIN 1136
#define K_BYTES 1152
#define K_CONSTS \
	MOVL $0x3f3f3f3f, AX \
	VPBROADCASTD AX, Y20 \
	MOVL $0xc0c0c0c0, AX \
	VPBROADCASTD AX, Y21
// Bytes 0-3 of the rows in Y16 (A), 4-7 in Y17 (B), 8-11 in Y18 (C):
// scales 0-3 are A's low six bits, mins 0-3 B's; scales 4-7 C's low
// nibbles with A's top bits as bits 4-5, mins 4-7 C's high nibbles with
// B's. A word shift right by 2 or 4 moves no set bit across a byte: the
// masks leave none where it would.
#define K_BLOCK_START \
	VMOVDQU64 1024(SI), Y16 \
	VMOVDQU64 1056(SI), Y17 \
	VMOVDQU64 1088(SI), Y18 \
	VPANDD Y20, Y16, Y19 \
	VMOVDQU64 Y19, 0(SP) \
	VPANDD Y20, Y17, Y19 \
	VMOVDQU64 Y19, 64(SP) \
	VPANDD Y21, Y16, Y16 \
	VPSRLW $2, Y16, Y16 \
	VPTERNLOGD $0xf8, Y15, Y18, Y16 \
	VMOVDQU64 Y16, 32(SP) \
	VPANDD Y21, Y17, Y17 \
	VPSRLW $2, Y17, Y17 \
	VPSRLW $4, Y18, Y18 \
	VPTERNLOGD $0xf8, Y15, Y18, Y17 \
	VMOVDQU64 Y17, 96(SP)

#define KV1_COLS(C, I) \
	KV_NIBBLES(C, I) \
	KV_DOT(C, I, R8, Y0, Y1)

#define KV1_PAIR(C) \
	K_PREFETCH(C) \
	VPXOR Y0, Y0, Y0 \
	VPXOR Y1, Y1, Y1 \
	KV1_COLS(C, 0) \
	KV1_COLS(C, 1) \
	KV1_COLS(C, 2) \
	KV1_COLS(C, 3) \
	KV1_COLS(C, 4) \
	KV1_COLS(C, 5) \
	KV1_COLS(C, 6) \
	KV1_COLS(C, 7) \
	KV_SCALE((2*C), Y0, Y2) \
	KV_SCALE((2*C+1), Y1, Y2)

	Q4K_TILE1(KV1_PAIR)

// func q4KTile3VNNI(tile, codes0, scales0, sums0, codes1, scales1, sums1, codes2, scales2, sums2 unsafe.Pointer, blocks int, out *[3][8]float32)
//
// q4KTile1VNNI against three vectors, each summed exactly as it sums one
// (the running sums kept in out between blocks, as q4KTile3 keeps them).
// Y0-Y2 are a group pair's even groups' int32 sums, one per vector, Y3-Y5
// the odd ones', Y6-Y8 the blocks'.
TEXT ·q4KTile3VNNI(SB), NOSPLIT, $128-96
#define KV3_COLS(C, I) \
	KV_NIBBLES(C, I) \
	KV_DOT(C, I, R8, Y0, Y3) \
	KV_DOT(C, I, R11, Y1, Y4) \
	KV_DOT(C, I, R14, Y2, Y5)

#define KV3_PAIR(C) \
	VPXOR Y0, Y0, Y0 \
	VPXOR Y1, Y1, Y1 \
	VPXOR Y2, Y2, Y2 \
	VPXOR Y3, Y3, Y3 \
	VPXOR Y4, Y4, Y4 \
	VPXOR Y5, Y5, Y5 \
	KV3_COLS(C, 0) \
	KV3_COLS(C, 1) \
	KV3_COLS(C, 2) \
	KV3_COLS(C, 3) \
	KV3_COLS(C, 4) \
	KV3_COLS(C, 5) \
	KV3_COLS(C, 6) \
	KV3_COLS(C, 7) \
	KV_SCALE((2*C), Y0, Y6) \
	KV_SCALE((2*C), Y1, Y7) \
	KV_SCALE((2*C), Y2, Y8) \
	KV_SCALE((2*C+1), Y3, Y6) \
	KV_SCALE((2*C+1), Y4, Y7) \
	KV_SCALE((2*C+1), Y5, Y8)

	Q4K_TILE3(KV3_PAIR)

// The Q6_K VNNI kernels read the AVX2 kernels' tile. Each run's four
// columns of codes are put back together in AVX-512's upper registers (a
// nibble mask, a shift, VPTERNLOGD's code | (high & 0x30)), then summed
// against the plain Q8_K codes (VPDPBUSD.BCST) into int32 at once and
// times each row's run scale (VPMULLD, the scale sign-extended to its
// row's lane): the same integers as the AVX2 kernels' int16 pairs
// weighed with VPMADDWD, so the same results, bit for bit. The offsets
// (the codes' +32 against the sums of 16) are the AVX2 kernels'.

#undef Q6_CONSTS

// The low nibble of every byte (Y16) and the code's two high bits (Y17).
#define Q6_CONSTS \
	MOVL $0x0f0f0f0f, AX \
	VPBROADCASTD AX, Y16 \
	MOVL $0x30303030, AX \
	VPBROADCASTD AX, Y17

// Run S's four columns of codes (0…63, a byte each) into Y22-Y25: the
// nibbles from Y19 and Y20, the high bits from Y18 moved to bits 4-5.
#define Q6C_CODES(S) \
	VMOVDQU32 (96*(S)+64)(SI), Y18 \
	VMOVDQU32 (96*(S))(SI), Y19 \
	VMOVDQU32 (96*(S)+32)(SI), Y20 \
	VPSLLW $4, Y18, Y21 \
	VPANDD Y16, Y19, Y22 \
	VPTERNLOGD $0xf8, Y17, Y21, Y22 \
	VPSLLW $2, Y18, Y21 \
	VPANDD Y16, Y20, Y23 \
	VPTERNLOGD $0xf8, Y17, Y21, Y23 \
	VPSRLW $4, Y19, Y24 \
	VPANDD Y16, Y24, Y24 \
	VPTERNLOGD $0xf8, Y17, Y18, Y24 \
	VPSRLW $2, Y18, Y21 \
	VPSRLW $4, Y20, Y25 \
	VPANDD Y16, Y25, Y25 \
	VPTERNLOGD $0xf8, Y17, Y21, Y25

// Run S's codes (Y22-Y25) against the activations' codes at X into RUN
// (zeroed first), times the rows' run scales into ACC.
#define Q6C_DOT(S, X, RUN, ACC) \
	VPXOR RUN, RUN, RUN \
	VPDPBUSD.BCST (16*(S))(X), Y22, RUN \
	VPDPBUSD.BCST (16*(S)+4)(X), Y23, RUN \
	VPDPBUSD.BCST (16*(S)+8)(X), Y24, RUN \
	VPDPBUSD.BCST (16*(S)+12)(X), Y25, RUN \
	VPMOVSXBD (Q6_SCALES+8*(S))(SI), Y11 \
	VPMULLD Y11, RUN, RUN \
	VPADDD RUN, ACC, ACC

// Runs S and S+1's scales (X12, loaded) against one vector's sums of 16
// (SUMS) into its offset OFFSET, as Q6_1PAIR and Q6_3PAIR take them.
#define Q6V_OFFSET(S, SUMS, OFFSET) \
	VPSHUFB X15, X12, X11 \
	VPMOVSXBW X11, Y11 \
	VPBROADCASTD (2*S)(SUMS), Y10 \
	VPMADDWD Y10, Y11, Y10 \
	VPADDD Y10, OFFSET, OFFSET

// func q6KTile1VNNI(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[8]float32)
//
// Y0 is the block's int32 sum, Y1 the offset, Y2 the running sum, Y3 a
// run's sum.
TEXT ·q6KTile1VNNI(SB), NOSPLIT, $0-48
#define Q6V_1PAIR(S) \
	Q6_PREFETCH(S) \
	Q6C_CODES(S) \
	Q6C_DOT(S, R8, Y3, Y0) \
	Q6C_CODES(S+1) \
	Q6C_DOT(S+1, R8, Y3, Y0) \
	VMOVDQU (Q6_SCALES+8*S)(SI), X12 \
	Q6V_OFFSET(S, R10, Y1)

	Q6K_TILE1(Q6V_1PAIR)

// func q6KTile3VNNI(tile, codes0, scales0, sums0, codes1, scales1, sums1, codes2, scales2, sums2 unsafe.Pointer, blocks int, out *[3][8]float32)
//
// q6KTile1VNNI against three vectors, each summed exactly as it sums one,
// the running sums kept in out between blocks; each run's codes put
// together once for the three. Y0-Y2 are the blocks' int32 sums, Y3-Y5
// the offsets, Y6 a run's sum.
TEXT ·q6KTile3VNNI(SB), NOSPLIT, $0-96
#define Q6V_3RUN(S) \
	Q6C_CODES(S) \
	Q6C_DOT(S, R8, Y6, Y0) \
	Q6C_DOT(S, R11, Y6, Y1) \
	Q6C_DOT(S, R14, Y6, Y2)

#define Q6V_3PAIR(S) \
	Q6V_3RUN(S) \
	Q6V_3RUN(S+1) \
	VMOVDQU (Q6_SCALES+8*S)(SI), X12 \
	Q6V_OFFSET(S, R10, Y3) \
	Q6V_OFFSET(S, R13, Y4) \
	Q6V_OFFSET(S, BX, Y5)

	Q6K_TILE3(Q6V_3PAIR)

// The Q2_K and Q3_K VNNI kernels: the 2-bit kernels' bodies with each
// run's sum int32 at once (VPDPBUSD, against the plain Q8_K codes,
// .BCST), multiplied by each row's run scale (VPMULLD, the scale
// sign-extended to its row's lane) into the block's sum: the same
// integers as the int16 sums weighed with VPMADDWD, so the same results,
// bit for bit. The scales are read a run at a time (S+H), so the
// half-selecting indices go unused.

#undef TWO_BIT_DOT
#define TWO_BIT_DOT(Y, ACC) \
	VPDPBUSD.BCST ((Y)/8)(R8), Y8, ACC

#undef TWO_BIT_SCALE
#define TWO_BIT_SCALE(OFF, S, H, INDEX, ACC) \
	VPMOVSXBD (OFF+8*(S+H))(SI), Y11 \
	VPMULLD Y11, ACC, ACC \
	VPADDD ACC, Y4, Y4

#undef TWO_BIT_DOT3
#define TWO_BIT_DOT3(Y) \
	VPDPBUSD.BCST ((Y)/8)(R8), Y8, Y0 \
	VPDPBUSD.BCST ((Y)/8)(R11), Y8, Y1 \
	VPDPBUSD.BCST ((Y)/8)(R14), Y8, Y2

#undef TWO_BIT_SCALE3
#define TWO_BIT_SCALE3(OFF, S, H, INDEX) \
	VPMOVSXBD (OFF+8*(S+H))(SI), Y11 \
	VPMULLD Y11, Y0, Y0 \
	VPADDD Y0, Y3, Y3 \
	VPMULLD Y11, Y1, Y1 \
	VPADDD Y1, Y4, Y4 \
	VPMULLD Y11, Y2, Y2 \
	VPADDD Y2, Y5, Y5

// func q2KTile1VNNI(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[8]float32)
TEXT ·q2KTile1VNNI(SB), NOSPLIT, $0-48
	Q2K_TILE1

// func q2KTile3VNNI(tile, codes0, scales0, sums0, codes1, scales1, sums1, codes2, scales2, sums2 unsafe.Pointer, blocks int, out *[3][8]float32)
TEXT ·q2KTile3VNNI(SB), NOSPLIT, $0-96
	Q2K_TILE3

// func q3KTile1VNNI(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[8]float32)
TEXT ·q3KTile1VNNI(SB), NOSPLIT, $0-48
	Q3K_TILE1

// func q3KTile3VNNI(tile, codes0, scales0, sums0, codes1, scales1, sums1, codes2, scales2, sums2 unsafe.Pointer, blocks int, out *[3][8]float32)
TEXT ·q3KTile3VNNI(SB), NOSPLIT, $0-96
	Q3K_TILE3

// The Q4_1 and five-bit (Q5_0, Q5_1) VNNI kernels: their bodies with
// Q4_0's VNNI NIBBLE_DOT and GROUP_FLOATS (above), and each five-bit
// step's products one VPDPBUSD into int32, so a group's low and high
// sums need no pairing against ones: the same integers, the same results
// bit for bit.

#undef FIVE_BIT_DOT
#define FIVE_BIT_DOT(T, X, LOW, HIGH) \
	VPDPBUSD.BCST ((T)/8)(X), Y11, LOW \
	VPDPBUSD.BCST ((T)/8+16)(X), Y12, HIGH

#undef FIVE_BIT_FINISH
#define FIVE_BIT_FINISH(LOW, HIGH, SCALES, SUMS, SUM) \
	VPADDD HIGH, LOW, LOW \
	VCVTDQ2PS LOW, LOW \
	VBROADCASTSS 0(SCALES)(DX*4), Y11 \
	VMULPS Y11, LOW, LOW \
	VFMADD231PS Y12, LOW, SUM \
	VBROADCASTSS 0(SUMS)(DX*4), Y11 \
	VFMADD231PS Y13, Y11, SUM

// func q4_1Tile1VNNI(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[8]float32)
TEXT ·q4_1Tile1VNNI(SB), NOSPLIT, $0-48
	Q4_1_TILE1

// func fiveBitTile1VNNI(tile, codes, scales, sums unsafe.Pointer, blocks int, out *[8]float32)
TEXT ·fiveBitTile1VNNI(SB), NOSPLIT, $0-48
	FIVE_BIT_TILE1

// func fiveBitTile3VNNI(tile, codes0, scales0, sums0, codes1, scales1, sums1, codes2, scales2, sums2 unsafe.Pointer, blocks int, out *[3][8]float32)
TEXT ·fiveBitTile3VNNI(SB), NOSPLIT, $0-96
	FIVE_BIT_TILE3

// func cpuSignature() uint32
TEXT ·cpuSignature(SB), NOSPLIT, $0-4
	MOVL $1, AX
	XORL CX, CX
	CPUID
	MOVL AX, ret+0(FP)
	RET

// func cpuIsAMD() bool
// ("Auth" "enti" "cAMD" in EBX, EDX, ECX.)
TEXT ·cpuIsAMD(SB), NOSPLIT, $0-1
	XORL AX, AX
	XORL CX, CX
	CPUID
	XORL AX, AX
	CMPL BX, $0x68747541
	JNE  notAMD
	CMPL DX, $0x69746e65
	JNE  notAMD
	CMPL CX, $0x444d4163
	JNE  notAMD
	MOVL $1, AX
notAMD:
	MOVB AX, ret+0(FP)
	RET
