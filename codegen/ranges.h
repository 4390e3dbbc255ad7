/*
 * ranges.h - the ranges of the variables in scope while a backend emits a
 * function, and the intervals of integer expressions over them.
 *
 * ir.h lets signed + - * wrap, and an access is legal when its index,
 * evaluated with wrapping, is in bounds; a backend that computes an
 * index or a value in a wider type, or with an operator that may not
 * overflow (C's signed operators, LLVM's nsw), may do so only where the
 * ranges of the variables prove that the exact result stays inside its
 * dtype.  The C emitter and the LLVM emitter keep those ranges here: each
 * variable they define is pushed (a loop's over its bounds, a let's over
 * its value, a size variable's over [1, its bound]), innermost last, and
 * a later entry of the same variable hides an earlier one.
 */
#ifndef TS_RANGES_H
#define TS_RANGES_H

#include "arith.h"

typedef struct cg_range {
	const void *key; /* a VAR node (or any key the caller scopes, e.g. a buffer) */
	bool ranged;     /* the variable's value lies in [lo, hi] */
	int64_t lo, hi;
} cg_range;

typedef struct cg_ranges {
	ts_ctx *ctx; /* the arena the stack grows in */
	cg_range *r; /* innermost last */
	int n, cap;
} cg_ranges;

/* Pushes key with the interval iv: a range where iv is bounded (neither
 * end infinite) and not empty, none otherwise, which hides any range of an
 * earlier entry of key.  False, with an error in ctx, when out of memory. */
bool cg_ranges_push(cg_ranges *rs, const void *key, ir_interval iv);

/* Gives the innermost entry of key the interval iv, as cg_ranges_push
 * would have; nothing when key has no entry. */
void cg_ranges_set(cg_ranges *rs, const void *key, ir_interval iv);

/* Drops the entries pushed since rs->n was `mark`. */
void cg_ranges_pop(cg_ranges *rs, int mark);

/* The interval of the integer e over the ranges in scope (ir_bound_of: an
 * end that might pass a 32/64-bit dtype's is IR_NEG_INF or IR_POS_INF; a
 * variable without a range spans its dtype). */
ir_interval cg_ranges_bound(const cg_ranges *rs, const ts_expr *e);

/* Whether neither end of iv is infinite. */
bool cg_bounded(ir_interval iv);

/* Whether the ranges in scope prove that the exact value of the integer
 * e (every lane), computed without wrapping, lies inside e's dtype, so
 * that e's + - * may be computed in a wider type or with no-wrap flags. */
bool cg_ranges_fit(const cg_ranges *rs, const ts_expr *e);

/* The range of a loop variable, [min, min + extent - 1] over the interval
 * of the loop's min and the largest extent; unbounded where they are. */
ir_interval cg_loop_range(ir_interval min, int64_t ext_max);

/* The range of v bound by a let to a value of interval iv: a size
 * variable of f (ir.h ts_func) lies in [1, its bound]; unbounded for a
 * variable that is not an integer. */
ir_interval cg_let_range(const ts_func *f, const ts_expr *v, ir_interval iv);

#endif
