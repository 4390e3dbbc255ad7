/*
 * interp.h - the loop-IR interpreter: runs a lowered function on host arrays.
 *
 * It executes the flat loop IR that codegen receives (FOR, STORE, ALLOCATE,
 * IF, SEQ, LET, EVALUATE, BARRIER over LOAD/RAMP/BROADCAST expressions), so
 * a schedule and its lowering passes can be tested without any code
 * generator, and a code generator can be tested against it.
 *
 * Semantics are those stated at the top of ir/ir.h, lane by lane:
 *  - integers compute in uint64 and wrap to the dtype's width; TRUNCDIV/
 *    TRUNCMOD round toward zero, FLOORDIV/FLOORMOD toward negative infinity;
 *    x / 0 = x % 0 = 0 and MIN / -1 = MIN, never an error;
 *  - float32 results are rounded to float after every operation (and float16
 *    / bfloat16 to their width), so results match compiled float32 code; the
 *    float32 intrinsics use the C library's float functions (expf, ...);
 *  - float MIN/MAX are C's fmin/fmax (a NaN operand is ignored unless both
 *    are), as ir.h specifies; a float-to-integer CAST truncates toward
 *    zero, gives 0 for NaN and saturates values beyond the dtype's range; a
 *    cast to float rounds as ir.h says (to 16-bit floats through float32);
 *  - vector values (lanes > 1, at most 64) come from RAMP, BROADCAST and
 *    vector LOADs; a vector LOAD/STORE touches one element per lane, in lane
 *    order.
 * PARALLEL, VECTORIZED, UNROLLED and THREAD loops run serially in index
 * order: each means the same as a serial loop.  BARRIER is a no-op because
 * thread loops run one thread at a time, so a thread never waits for data
 * another thread has yet to write; GPU schedules that share memory across
 * threads must therefore also be checked on a device.
 *
 * Every LOAD and STORE is bounds-checked against its buffer's size.  An
 * ALLOCATE'd buffer is malloc'd for its body only and starts filled with
 * garbage (NaN for floats, 0x5a bytes otherwise) so that reads of
 * uninitialised memory show in results.  Un-flattened IR (PROVIDE, REALIZE,
 * READ, REDUCE) is rejected with TS_ERR_UNSUPPORTED.
 */
#ifndef TESSERA_CODEGEN_INTERP_H
#define TESSERA_CODEGEN_INTERP_H

#include "ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most lanes a vector value may have. */
#define CG_INTERP_MAX_LANES 64

/* Runs f with args[i] the data of f->params[i]: dense row-major host memory
 * of the parameter's dtype holding its `size` elements; for a function
 * with size variables, the last holds their nsizes values (each 1..its
 * bound, checked) and the others the elements of those extents (the
 * interpreter checks accesses against the bounds' sizes only).  Returns TS_OK, or an
 * error recorded in ctx: TS_ERR_INVALID for a NULL function or argument, an
 * out-of-bounds access ("interp: store to C out of bounds: index 64, size
 * 64"), an unbound variable or buffer, or too many lanes; TS_ERR_NOMEM if
 * an ALLOCATE cannot be satisfied. */
ts_status cg_interp_run(ts_ctx *ctx, const ts_func *f, void *const *args);

/* The same for a bare statement: bufs[i] is bound to data[i]. */
ts_status cg_interp_stmt(ts_ctx *ctx, const ts_stmt *s, int nbuf, ts_buffer *const *bufs,
			 void *const *data);

#ifdef __cplusplus
}
#endif

#endif
