/*
 * bound.h - bound inference: the region of a producer that a consumer needs.
 *
 * Regions are computed where a producer is attached: the consumer's loops
 * inside the attachment point are relaxed over their whole extent, the loops
 * outside stay symbolic.  A region is a start expression (over the outer
 * loop variables) and a constant extent per dimension, tight when splits
 * divide and a safe over-approximation otherwise, always clamped inside the
 * tensor's shape.
 */
#ifndef TESSERA_SCHEDULE_BOUND_H
#define TESSERA_SCHEDULE_BOUND_H

#include "ir.h"

/* A loop of the nest being built: var ranges over [0, extent). */
typedef struct sch_loop {
	ts_expr *var;
	int64_t extent;
	ts_for_kind kind;
	ts_thread_tag thread;
} sch_loop;

/* The region of t read by `body`: relax[] are loops whose variables range
 * over their extent, outer[] loops whose variables stay symbolic (their
 * ranges only help simplification).  Writes min[ndim] and extent[ndim]. */
ts_status sch_infer_region(ts_ctx *ctx, const ts_tensor *t, ts_expr *body, int nrelax,
			   const sch_loop *relax, int nouter, const sch_loop *outer,
			   ts_expr **min, int64_t *extent);

#endif
