/*
 * arith_impl.h - shared internals of the arithmetic files (bound.c, fold.c,
 * linear.c, simplify.c, simplify_stmt.c, and widen.c and visit.c for
 * substitutions); not part of the public API.
 *
 * Intervals are computed exactly in 128-bit integers, so that int64 and
 * uint64 values, and the sums and products of index terms, are represented
 * without overflow.  Every node's interval is clipped to its dtype: when the
 * mathematical result of an operation could leave the dtype's range (and so
 * wrap), the node's interval becomes the whole dtype range.  A magnitude of
 * IR_IVAL_BIG or more means "beyond every dtype" and is never trusted.
 */
#ifndef TESSERA_IR_ARITH_IMPL_H
#define TESSERA_IR_ARITH_IMPL_H

#include "arith.h"

__extension__ typedef __int128 ir_i128;

#define IR_IVAL_BIG (((ir_i128)1) << 72)

/* The arguments of a substitution (visit.c, widen.c): a node to rewrite,
 * n >= 0 and no NULL variable or value; else an error "what: ...". */
bool ir_check_subst(ts_ctx *ctx, const char *what, const void *node, int n, ts_expr *const *vars,
		    ts_expr *const *values);

typedef struct ir_ival {
	ir_i128 lo, hi;
} ir_ival;

/* The values a dtype can hold; floats and handles: [-BIG, BIG]. */
ir_ival ir_dtype_ival(ts_dtype t);
bool ir_ival_fits(ir_ival v, ts_dtype t);
/* The mathematical value of an integer immediate's stored bits. */
ir_i128 ir_imm_value(const ts_expr *e);
/* Exact interval of e's value (clipped to e's dtype). */
ir_ival ir_bound_ival(const ts_expr *e, int n, const ir_range *ranges);
/* a*b, saturated to +-BIG. */
ir_i128 ir_mul_sat(ir_i128 a, ir_i128 b);
/* Rounds toward negative infinity; b != 0. */
ir_i128 ir_floordiv128(ir_i128 a, ir_i128 b);

/* Checks user-given ranges (n >= 0, a list when n > 0, variables, positive
 * extents, no overflow); records an error naming `what` and the bad range. */
bool ir_check_ranges(ts_ctx *ctx, const char *what, int n, const ir_range *r);

/* ---- linear forms: sum of coef * atom + k over an integer scalar dtype ----
 * Coefficients and k are kept wrapped to the dtype's width in a signed view
 * (sign-extended), which is exact for the ring arithmetic of + - *. */
typedef struct ir_term {
	ts_expr *atom;
	int64_t coef;
} ir_term;

typedef struct ir_lin {
	ts_dtype dtype;
	int n, cap;
	ir_term *t;
	int64_t k;
	/* a coefficient or k of a signed dtype wrapped: the form holds a
	 * value its source expression never computed (rebuilt, it would
	 * wrap where the source did not) */
	bool wrapped;
} ir_lin;

void ir_lin_init(ir_lin *l, ts_dtype t);
/* Sign-extends v from the dtype's width. */
int64_t ir_lin_wrap(ts_dtype t, int64_t v);
/* l += scale * e, descending through ADD, SUB and MUL by constants. */
bool ir_lin_add_expr(ts_ctx *ctx, ir_lin *l, ts_expr *e, int64_t scale);
bool ir_lin_add_term(ts_ctx *ctx, ir_lin *l, ts_expr *atom, int64_t coef);
/* dst = a + scale * b (dst may not alias b). */
bool ir_lin_add_lin(ts_ctx *ctx, ir_lin *dst, const ir_lin *b, int64_t scale);
bool ir_lin_has_terms(const ir_lin *l);
/* Rebuilds the canonical expression; NULL only on allocation failure. */
ts_expr *ir_lin_expr(ts_ctx *ctx, const ir_lin *l);
/* Mathematical interval of the sum given the atoms' intervals; returns
 * false when it could not be bounded. */
bool ir_lin_bound(const ir_lin *l, int n, const ir_range *ranges, ir_ival *out);
/* Mathematical interval of a - b, both taken at their integer values. */
bool ir_lin_diff_bound(const ir_lin *a, const ir_lin *b, int n, const ir_range *ranges,
		       ir_ival *out);

#endif
