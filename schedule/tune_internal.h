/*
 * tune_internal.h - what the tuner's files share (not installed).
 */
#ifndef TESSERA_SCHEDULE_TUNE_INTERNAL_H
#define TESSERA_SCHEDULE_TUNE_INTERNAL_H

#include "tune.h"

/* The task's graph for candidate c: args[0..n-1] its inputs then its
 * output; *plain the output in the plain layout computed from the same
 * inputs (the output itself but for conv2d, whose output is blocked).
 * Returns n, or 0 with the error in ctx. */
int tune_graph(ts_ctx *ctx, const ts_tune_task *t, const ts_tune_cand *c, ts_tensor **args,
	       ts_tensor **plain);
/* What the tuner times for candidate c of a checked task: ts_tune_lower's
 * function, but for conv2d the kernel alone on inputs already blocked
 * (Xc[N, C/ib, H, W, ib], Wc[K/ob, C/ib, R, S, ib, ob] -> Yc), as
 * tessera-bench and the graph layer run it, the conversions being done
 * once outside (timed with them, a deep layer's weight conversion outweighs
 * the kernel and hides its differences). */
ts_func *tune_lower_timed(ts_ctx *ctx, const ts_tune_task *t, const ts_tune_cand *c);
/* The largest value a candidate's parameter may take (a schedule's
 * blocks and factors). */
#define TUNE_MAX_VALUE 4096
/* TS_OK when every parameter of c is in 0..TUNE_MAX_VALUE, else an error
 * "WHAT: parameter P is V; ..." (what NULL: "tune OP"; ctx may be NULL). */
ts_status tune_check_cand(ts_ctx *ctx, const char *what, const ts_tune_task *t, const ts_tune_cand *c);
/* TS_OK when t is a task as ts_tune_task_init made it (a known operator,
 * its number of extents, its space's kind, counts within the arrays);
 * else an error naming `what`.  ctx may be NULL. */
ts_status tune_task_check(ts_ctx *ctx, const ts_tune_task *t, const char *what);
/* A space's parameter count, choice counts and names in range (a caller's
 * struct may hold anything); op names it in the message. */
ts_status tune_space_check(ts_ctx *ctx, const ts_tune_space *sp, const char *what, const char *op);
/* conv2d: the output-channel block of candidate c; 0 for the other ops. */
int64_t tune_out_block(const ts_tune_task *t, const ts_tune_cand *c);
/* conv2d, conv2d_nchw or conv2d_nhwc: the shape N C H W K R S STRIDE PAD. */
bool tune_is_conv(const char *op);
/* The index of parameter `name` in the space, or -1. */
int tune_param_index(const ts_tune_space *sp, const char *name);
/* The value of parameter `name` in c, or `def` when the space has none. */
int64_t tune_param(const ts_tune_space *sp, const ts_tune_cand *c, const char *name, int64_t def);

#endif
