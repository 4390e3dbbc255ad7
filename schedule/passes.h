/*
 * passes.h - every lowering pass, in pipeline order.  ts_lower() in lower.c
 * calls them as a flat list; each lives in schedule/passes/<name>.c and
 * exports only its entry function.
 *
 *  schedule_ops    schedule -> loop nest over tensors (REALIZE, PROVIDE,
 *                  READ): inlines, infers bounds, builds each stage's loops
 *                  from its leaf axes and relations, places attached stages,
 *                  guards the tails of splits that do not divide
 *                  (loop variables and indices are int64 when the
 *                  extents need it, int32 otherwise); a ts_prefetch
 *                  puts PREFETCH loops at the top of its loop's body
 *  flatten         tensors -> flat buffers: REALIZE becomes ALLOCATE,
 *                  PROVIDE/READ become STORE/LOAD with row-major offsets
 *                  relative to the realized region (int64 offsets for
 *                  buffers of 2^31 elements or more; storage_align pads
 *                  strides); yields the ts_func,
 *                  whose size variables are read from a last parameter or
 *                  replaced by the values a specialization gives
 *  double_buffer   two copies of each ts_double_buffer stage's buffer: its
 *                  loop unrolled by two, each half fetching the next
 *                  step into one copy while reading the other
 *  simplify        arithmetic simplification with loop ranges; drops guards
 *                  that always hold and loops of extent 1
 *  version_guards  tests the guards of size-variable extents once per tile:
 *                  a loop body whose tiles may reach past n becomes
 *                  if (tile inside) unguarded copy else guarded copy
 *  loop_partition  splits loops guarded by likely(cond) into a main part
 *                  without the guard and a tail part with it
 *  unroll          replaces UNROLLED loops by copies of their body
 *  vectorize_legal checks VECTORIZED loops: constant extent within the lane
 *                  limit; loops whose body cannot be vectorized (inner
 *                  loops, allocations) become serial, and ts_lower lists
 *                  each in ts_lower_warnings
 */
#ifndef TESSERA_SCHEDULE_PASSES_H
#define TESSERA_SCHEDULE_PASSES_H

#include "schedule.h"
#include "sbuf.h"
#include "bound.h"

/* log, when not NULL, receives the inferred region of every stage. */
ts_stmt *pass_schedule_ops(ts_ctx *ctx, ts_schedule *s, ts_sbuf *log);
ts_func *pass_flatten(ts_ctx *ctx, ts_stmt *body, const char *name, int nargs,
		      ts_tensor *const *args, const ts_schedule *s);
ts_stmt *pass_double_buffer(ts_ctx *ctx, ts_stmt *s);
ts_stmt *pass_simplify(ts_ctx *ctx, ts_stmt *s);
ts_stmt *pass_version_guards(ts_ctx *ctx, ts_stmt *s);
ts_stmt *pass_loop_partition(ts_ctx *ctx, ts_stmt *s);
ts_stmt *pass_unroll(ts_ctx *ctx, ts_stmt *s);
ts_stmt *pass_vectorize_legal(ts_ctx *ctx, ts_stmt *s);

/* Not passes of the list: what ts_lower_specialize adds.  Size variables
 * fixed to constants; sch_specialize applies them to a function lowered
 * through version_guards (so the twin keeps the symbolic kernel's tile
 * tests, as constants): the variables' bindings go, their values replace
 * them, and the parameters get those extents.  sch_bind_sizes is flatten's
 * binding of n variables from element k of the sizes buffer, shared. */
typedef struct sch_spec {
	int n;
	ts_expr *var[TS_MAX_SIZE_VARS];
	int64_t value[TS_MAX_SIZE_VARS];
} sch_spec;
/* schedule_ops' helper for ts_prefetch (prefetch.c): body preceded by the
 * prefetch of what its iteration reads of p->tensor once the variable
 * `ahead` (p->ahead's loop variable, over [0, ahead_ext)) is p->offset
 * further on, where that iteration exists; `it` is the index dtype.  The
 * nouter loops around body (each over [0, extent)) range the indices'
 * other variables, so that floordiv(x*48 + j, 48) is known to be x.  NULL
 * with an error when nothing in body reads the tensor. */
ts_stmt *sch_prefetch_nest(ts_ctx *ctx, const sch_prefetch *p, ts_expr *ahead, int64_t ahead_ext,
			   const sch_loop *outer, int nouter, ts_stmt *body, ts_dtype it);
ts_func *sch_specialize(ts_ctx *ctx, ts_func *f, const sch_spec *spec);
ts_stmt *sch_bind_sizes(ts_ctx *ctx, int n, ts_expr *const *vars, ts_buffer *sizes, ts_stmt *body);

#endif
