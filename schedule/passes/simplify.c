/*
 * simplify.c - arithmetic simplification of the whole loop nest.
 *
 * Thin on purpose: ir_simplify_stmt (ir/arith.h) knows the loop ranges,
 * folds index arithmetic, removes guards that always hold and loops of
 * extent 1.  It is a pass of its own so the pipeline can run it between
 * the passes that create simplification opportunities.
 */
#include "arith.h"
#include "passes.h"

ts_stmt *pass_simplify(ts_ctx *ctx, ts_stmt *s)
{
	return s ? ir_simplify_stmt(ctx, s, 0, NULL) : NULL;
}
