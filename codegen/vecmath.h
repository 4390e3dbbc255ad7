/*
 * vecmath.h - vector math through glibc's libmvec, for the LLVM backend.
 *
 * LLVM turns llvm.exp on a <16 x float> into sixteen calls of expf; glibc
 * ships vector variants of exp, log, exp2, pow, tanh and erf (libmvec, the
 * x86-64 vector function ABI) that take a whole register.  Their names
 * follow that ABI: _ZGV<isa>N<lanes><args>_<name>, isa 'b' (SSE, 128-bit),
 * 'd' (AVX2, 256-bit) or 'e' (AVX-512), args 'v' per vector argument:
 * _ZGVeN16v_expf, _ZGVdN4vv_pow.  They are accurate to a few ulp, handle
 * NaN and infinities like libm, and are what -lm links (glibc's libm.so
 * pulls libmvec in as needed), so exported objects link as before.
 */
#ifndef TESSERA_CODEGEN_VECMATH_H
#define TESSERA_CODEGEN_VECMATH_H

#include "ir.h"

/* Whether libmvec has a variant of op (on float32/float64). */
bool cg_vecmath_has(ir_intrinsic op);

/* The lanes of one call of ISA variant isa for element bits (32 or 64):
 * 'e' 16/8, 'd' 8/4, 'b' 4/2; 0 for anything else. */
int cg_vecmath_lanes(char isa, int bits);

/* The symbol of op's isa variant on `bits`-bit floats, in buf (48 bytes);
 * NULL if libmvec has none. */
const char *cg_vecmath_symbol(char isa, ir_intrinsic op, int bits, char buf[48]);

/* Every libmvec symbol tessera may call, one at a time: i from 0 until it
 * returns NULL (for the JIT, which defines them by address). */
const char *cg_vecmath_symbol_at(int i, char buf[48]);

#endif
