//go:build goexperiment.simd

#include "textflag.h"

// func dot1x3FMA(w, x0, x1, x2 unsafe.Pointer, end uintptr, lanes *[3][8]float32)
//
// dotAVX2 for one row w against three vectors, each summed exactly as
// dotAVX2 sums it: four accumulators a vector over 128-byte steps (a0 the
// first 32 bytes of each), the 32-byte chunks after the last whole step
// into a0, then (a0 + a1) + (a2 + a3). Y0-Y3 are x0's accumulators, Y4-Y7
// x1's, Y8-Y11 x2's; each chunk of w is loaded once for the three.
TEXT ·dot1x3FMA(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ x0+8(FP), R8
	MOVQ x1+16(FP), R9
	MOVQ x2+24(FP), R10
	MOVQ end+32(FP), CX
	MOVQ lanes+40(FP), DI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	XORQ AX, AX

steps:
	LEAQ 128(AX), DX
	CMPQ DX, CX
	JA   chunks
	VMOVUPS 0(SI)(AX*1), Y12
	VFMADD231PS 0(R8)(AX*1), Y12, Y0
	VFMADD231PS 0(R9)(AX*1), Y12, Y4
	VFMADD231PS 0(R10)(AX*1), Y12, Y8
	VMOVUPS 32(SI)(AX*1), Y13
	VFMADD231PS 32(R8)(AX*1), Y13, Y1
	VFMADD231PS 32(R9)(AX*1), Y13, Y5
	VFMADD231PS 32(R10)(AX*1), Y13, Y9
	VMOVUPS 64(SI)(AX*1), Y12
	VFMADD231PS 64(R8)(AX*1), Y12, Y2
	VFMADD231PS 64(R9)(AX*1), Y12, Y6
	VFMADD231PS 64(R10)(AX*1), Y12, Y10
	VMOVUPS 96(SI)(AX*1), Y13
	VFMADD231PS 96(R8)(AX*1), Y13, Y3
	VFMADD231PS 96(R9)(AX*1), Y13, Y7
	VFMADD231PS 96(R10)(AX*1), Y13, Y11
	MOVQ DX, AX
	JMP  steps

chunks:
	CMPQ AX, CX
	JAE  sums
	VMOVUPS 0(SI)(AX*1), Y12
	VFMADD231PS 0(R8)(AX*1), Y12, Y0
	VFMADD231PS 0(R9)(AX*1), Y12, Y4
	VFMADD231PS 0(R10)(AX*1), Y12, Y8
	ADDQ $32, AX
	JMP  chunks

sums:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VMOVUPS Y0, 0(DI)
	VADDPS Y5, Y4, Y4
	VADDPS Y7, Y6, Y6
	VADDPS Y6, Y4, Y4
	VMOVUPS Y4, 32(DI)
	VADDPS Y9, Y8, Y8
	VADDPS Y11, Y10, Y10
	VADDPS Y10, Y8, Y8
	VMOVUPS Y8, 64(DI)
	VZEROUPPER
	RET
