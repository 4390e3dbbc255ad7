/*
 * vectorize.h - turns VECTORIZED loops of the lowered loop IR into vector
 * expressions, just before a CPU backend emits code.
 *
 * A vectorized loop `for v in [min, min + L)` (L constant) disappears: v
 * becomes ramp(min, 1, L), lane-invariant subexpressions stay scalar and are
 * broadcast where they meet vectors, and loads/stores take vector indices
 * (a stride-1 ramp is a contiguous access, anything else a gather/scatter).
 *
 * Horizontal reductions.  A store whose index is lane-invariant and whose
 * value is `load(same buffer, same index) op x` with x lane-varying and op one
 * of + - * max min becomes `buf[i] = buf[i] op R` where R is a REDUCE node
 * with naxes == 0: it combines the lanes of its vector source with its op
 * (sum/prod/max/min) into one scalar.  This is the only place a REDUCE
 * appears in lowered IR; backends that call cg_vectorize must handle it.
 *
 * Legality is checked conservatively and anything else keeps its loop as a
 * SERIAL loop (correctness first): every buffer stored in the body must be
 * accessed with one index expression that uses no variable bound inside the
 * body; inner loops (serial/unrolled) and IFs must have lane-invariant
 * bounds/conditions; ALLOCATE, BARRIER and inner parallel/vectorized/thread
 * loops are not vectorized.
 */
#ifndef TESSERA_CODEGEN_VECTORIZE_H
#define TESSERA_CODEGEN_VECTORIZE_H

#include "ir.h"

/* Rewrites every VECTORIZED loop under s (one of L lanes, L not a power of
 * two, as loops of power-of-two lanes, largest first: 48 as 32 then 16);
 * returns s itself when there is nothing to vectorize, NULL (with an
 * error) only if building IR failed. */
ts_stmt *cg_vectorize(ts_ctx *ctx, ts_stmt *s);

#endif
