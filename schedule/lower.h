/*
 * lower.h - from a schedule to a lowered function (ts_func), like
 * tvm.lower(s, [A, B, C]).
 *
 * args lists the function's parameters in order: every placeholder the
 * outputs depend on, and every output.  Before the passes, every tensor read
 * is checked against the read tensor's shape over its stage's whole domain
 * (check_reads.h): a read that certainly leaves it is refused, naming the
 * reading stage, the read and its range.  The passes (passes.h) run as one flat
 * list; with ts_ctx_set_print_passes(ctx, 1) or TESSERA_PRINT_PASSES=1 the
 * IR after each pass is printed to stderr.  (To watch the schedule's
 * primitives instead, one nest per primitive, see ts_ctx_set_print_steps
 * in ctx.h and ts_schedule_step_str in schedule.h.)
 */
#ifndef TESSERA_SCHEDULE_LOWER_H
#define TESSERA_SCHEDULE_LOWER_H

#include "schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

ts_func *ts_lower(ts_schedule *s, const char *name, int nargs, ts_tensor *const *args);

/* Runs the pipeline only up to and including the named pass ("schedule_ops",
 * "flatten", "double_buffer", "simplify", "version_guards", "loop_partition", "unroll",
 * "vectorize_legal"), so
 * any intermediate IR can be printed.  After schedule_ops the body still
 * holds REALIZE/PROVIDE/READ. */
ts_func *ts_lower_until(ts_schedule *s, const char *name, int nargs, ts_tensor *const *args,
			const char *last_pass);

/* ts_lower with size variables (te.h ts_size_var) fixed: sizes[i], a
 * handle, is values[i] (1..its bound).  The twin of a symbolic function,
 * compiled as if the extents were constants: its parameters have those
 * extents, and ts_module_run accepts only arrays of them.  Variables not
 * listed stay symbolic. */
ts_func *ts_lower_specialize(ts_schedule *s, const char *name, int nargs, ts_tensor *const *args,
			     int nsizes, const int64_t *sizes, const int64_t *values);

/* What lowering could not honour, one line each ("" when nothing, NULL for
 * a NULL f): today a vectorized loop that vectorize_legal runs serially
 * because its body has an inner loop, an allocation or a barrier, or its
 * extent is 1:
 *   "vectorize: loop 'i' runs serially: its body has an inner loop"
 * With ts_ctx_set_print_passes (TESSERA_PRINT_PASSES=1) the lines are
 * also printed to stderr, once per lowering.  ts_schedule_str warns ahead
 * of lowering about vectorized leaves with loops inside. */
const char *ts_lower_warnings(const ts_func *f);

/* The region bound inference gives each stage, one line per stage, and for
 * a stage computed at another, a line with its loops and the extents that
 * region gives them; when lowering refuses the schedule, the line
 * "  (lowering fails: <why>)".  A printer: it neither fails on the
 * calling thread's pending error nor leaves one (NULL only for a NULL s or
 * out of memory). */
const char *ts_schedule_bounds_str(ts_schedule *s);

/* The names of the passes in pipeline order, NULL-terminated. */
extern const char *const ts_lower_pass_names[];

#ifdef __cplusplus
}
#endif

#endif
