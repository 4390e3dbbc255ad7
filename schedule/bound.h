/*
 * bound.h - bound inference: the region of a producer that a consumer needs.
 *
 * Regions are computed where a producer is attached: the loops inside the
 * attachment point (the target's, and those of stages attached deeper) are
 * relaxed over their whole extent, the loops outside stay symbolic.  A region is a start expression (over the outer
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

/* The producer whose region is inferred: its element expression over its
 * root variables (data axes, then reduction axes).  Used to decide whether
 * a region may reach past the tensor's shape (see sch_infer_region). */
typedef struct sch_producer {
	const ts_tensor *tensor;
	ts_expr *body;
	int nroot;
	ts_expr *const *vars;
	const int64_t *min, *extent; /* per root variable */
	/* On a GPU, inside thread loops: a region never moves back inside the
	 * shape (a shared tile stays one tile, a register tile keeps constant
	 * indices); where it may pass the end, sch_infer_region sets edge[d]
	 * and the producer guards its stores there.  Reads of the `nstaged`
	 * tensors in `staged` (buffers realized inside this producer, whose
	 * guarded regions follow its reads) then never count as out of
	 * bounds. */
	bool guard_edges;
	int nstaged;
	const ts_tensor *const *staged;
	/* Its buffer is allocated outside the loop it is computed at
	 * (store_at, store_root), as large as the tensor or its window: a
	 * region never passes the shape's end, whatever its reads allow. */
	bool stored_outside;
} sch_producer;

/* The region of p->tensor read by `body`: relax[] are loops whose variables
 * range over their extent, outer[] loops whose variables stay symbolic
 * (their ranges only help simplification).  Writes min[ndim], extent[ndim].
 * A region that would reach past the shape is moved back inside it, unless
 * the producer's buffer is its own (not stored outside) and every read of
 * the producer stays in bounds over the longer range: then it
 * keeps its natural start, which keeps tiles aligned (the extra elements
 * are computed and never read).  With p->guard_edges, edge[d] (when edge
 * is not NULL) says that the producer must guard index d below the shape.
 * The extent is also bounded by the width of each index over the relaxed
 * loops (min(x, c) spans no more than x), so a clamped index does not grow
 * a tile to the whole dimension. */
ts_status sch_infer_region(ts_ctx *ctx, const sch_producer *p, ts_expr *body, int nrelax,
			   const sch_loop *relax, int nouter, const sch_loop *outer,
			   ts_expr **min, int64_t *extent, bool *edge);
/* The same over every read of p->tensor in a statement: the union of the
 * regions its readers need (the consumer's own reads and those of stages
 * attached inside its loops).  When the statement also computes the
 * producer (the loop its buffer is stored at), the union of the windows
 * its stores write instead: they cover every read and may be wider. */
ts_status sch_infer_region_stmt(ts_ctx *ctx, const sch_producer *p, ts_stmt *body, int nrelax,
				const sch_loop *relax, int nouter, const sch_loop *outer,
				ts_expr **min, int64_t *extent, bool *edge);

#endif
