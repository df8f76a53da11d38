//go:build goexperiment.simd

#include "textflag.h"

// The attention kernels over a cache of halves (kvcache.go): each is its
// f32 twin in kernels_simd.go (dotAVX2 with sum4, weightedSum) with every
// cached value widened by VCVTPH2PS as it is loaded, so each lane does
// the same FMAs in the same order on the same floats, and the results
// are the f32 kernels' on the widened cache bit for bit.

// func dotHalfRows4(out *[4]float32, rows unsafe.Pointer, stride, n, cols int, x unsafe.Pointer)
// out[r] = Σ_i half(row r)[i]·x[i] for the n (1-4) rows, each stride
// bytes after the last, cols (a multiple of 8) halves each; out[n:] = 0.
// Each row's eight lanes wait in the frame until the four go through
// dotRowsVector's horizontal sum together.
TEXT ·dotHalfRows4(SB), NOSPLIT, $128-48
	MOVQ rows+8(FP), SI
	MOVQ stride+16(FP), DX
	MOVQ n+24(FP), R9
	MOVQ cols+32(FP), R10
	MOVQ x+40(FP), R8
	MOVQ R10, R11
	ANDQ $-32, R11
	VXORPS  Y0, Y0, Y0
	VMOVUPS Y0, 0(SP)
	VMOVUPS Y0, 32(SP)
	VMOVUPS Y0, 64(SP)
	VMOVUPS Y0, 96(SP)
	XORQ    DI, DI

hrow:
	TESTQ  R9, R9
	JZ     hsum
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ   AX, AX
	TESTQ  R11, R11
	JZ     htail

hfour:
	VCVTPH2PS   0(SI)(AX*2), Y4
	VFMADD231PS 0(R8)(AX*4), Y4, Y0
	VCVTPH2PS   16(SI)(AX*2), Y5
	VFMADD231PS 32(R8)(AX*4), Y5, Y1
	VCVTPH2PS   32(SI)(AX*2), Y6
	VFMADD231PS 64(R8)(AX*4), Y6, Y2
	VCVTPH2PS   48(SI)(AX*2), Y7
	VFMADD231PS 96(R8)(AX*4), Y7, Y3
	ADDQ        $32, AX
	CMPQ        AX, R11
	JB          hfour

htail:
	CMPQ        AX, R10
	JAE         hrowdone
	VCVTPH2PS   0(SI)(AX*2), Y4
	VFMADD231PS 0(R8)(AX*4), Y4, Y0
	ADDQ        $8, AX
	JMP         htail

hrowdone:
	// dotAVX2's a0+a1 + (a2+a3)
	VADDPS  Y1, Y0, Y0
	VADDPS  Y3, Y2, Y2
	VADDPS  Y2, Y0, Y0
	VMOVUPS Y0, 0(SP)(DI*1)
	ADDQ    $32, DI
	ADDQ    DX, SI
	DECQ    R9
	JMP     hrow

hsum:
	// sum4: pairs, pairs of pairs, then the two halves
	VMOVUPS      0(SP), Y0
	VMOVUPS      32(SP), Y1
	VMOVUPS      64(SP), Y2
	VMOVUPS      96(SP), Y3
	VHADDPS      Y1, Y0, Y4
	VHADDPS      Y3, Y2, Y5
	VHADDPS      Y5, Y4, Y6
	VEXTRACTF128 $1, Y6, X7
	VADDPS       X7, X6, X6
	MOVQ         out+0(FP), DI
	VMOVUPS      X6, 0(DI)
	VZEROUPPER
	RET

// func weightedSumHalfAVX2(out, weights unsafe.Pointer, n int, values unsafe.Pointer, cols, stride int)
// out[c] = Σ_t weights[t]·half(values[t])[c] over n (≥ 1) rows of values,
// each stride bytes after the last, for cols (a multiple of 8) columns:
// weightedSum's chunks, 32 columns across every row, then 8.
TEXT ·weightedSumHalfAVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ weights+8(FP), R8
	MOVQ n+16(FP), R9
	MOVQ values+24(FP), SI
	MOVQ cols+32(FP), R10
	MOVQ stride+40(FP), DX
	MOVQ R10, R11
	ANDQ $-32, R11
	XORQ CX, CX

wfour:
	CMPQ   CX, R11
	JAE    wone
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	LEAQ   0(SI)(CX*2), BX
	XORQ   AX, AX

wfourrow:
	VBROADCASTSS 0(R8)(AX*4), Y15
	VCVTPH2PS    0(BX), Y4
	VFMADD231PS  Y15, Y4, Y0
	VCVTPH2PS    16(BX), Y5
	VFMADD231PS  Y15, Y5, Y1
	VCVTPH2PS    32(BX), Y6
	VFMADD231PS  Y15, Y6, Y2
	VCVTPH2PS    48(BX), Y7
	VFMADD231PS  Y15, Y7, Y3
	ADDQ         DX, BX
	INCQ         AX
	CMPQ         AX, R9
	JB           wfourrow
	VMOVUPS      Y0, 0(DI)(CX*4)
	VMOVUPS      Y1, 32(DI)(CX*4)
	VMOVUPS      Y2, 64(DI)(CX*4)
	VMOVUPS      Y3, 96(DI)(CX*4)
	ADDQ         $32, CX
	JMP          wfour

wone:
	CMPQ   CX, R10
	JAE    wend
	VXORPS Y0, Y0, Y0
	LEAQ   0(SI)(CX*2), BX
	XORQ   AX, AX

wonerow:
	VBROADCASTSS 0(R8)(AX*4), Y15
	VCVTPH2PS    0(BX), Y4
	VFMADD231PS  Y15, Y4, Y0
	ADDQ         DX, BX
	INCQ         AX
	CMPQ         AX, R9
	JB           wonerow
	VMOVUPS      Y0, 0(DI)(CX*4)
	ADDQ         $8, CX
	JMP          wone

wend:
	VZEROUPPER
	RET

// func halvesOfAVX2(dst, src unsafe.Pointer, n int)
// dst[i] = src[i] rounded to a half, to nearest even (VCVTPS2PH's
// immediate 0, as ggml's F16C path rounds), for n a multiple of 8.
TEXT ·halvesOfAVX2(SB), NOSPLIT, $0-24
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
