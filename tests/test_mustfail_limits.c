/*
 * test_mustfail_limits.c - everything beyond tessera's documented limits is
 * an error value naming the limit, never a stack overflow, a signed
 * overflow (UBSan) or a write through a NULL: expression depth and size, loop-nest
 * size, vector lanes, dtypes, split/fuse/shape arithmetic, operator
 * parameters, CUDA architectures, and failing arena allocations.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build.h"
#include "lower.h"
#include "nvrtc.h"
#include "ops.h"
#include "op_schedules.h"
#include "schedule.h"

#define N 37

static void noop_chunk(int64_t begin, int64_t end, void *closure)
{
	(void)begin, (void)end, (void)closure;
}

/* A float expression exactly `depth` deep, its reads on shallow branches. */
static ts_expr *chain(ts_ctx *ctx, ts_tensor *A, ts_expr *i, int depth)
{
	ts_expr *acc = ts_float(ctx, 0.25);
	while (acc && acc->depth + 2 <= depth)
		acc = ts_add(ctx, ts_mul(ctx, acc, ts_float(ctx, 0.5)), TS_READ(ctx, A, i));
	if (acc && acc->depth < depth)
		acc = ts_add(ctx, acc, TS_READ(ctx, A, i));
	return acc;
}

/* ---- expression depth ------------------------------------------------------- */

START_TEST(test_chain_of_100000_adds)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *x = ts_var_typed(ctx, "x", ts_float32), *acc = x;
	for (int s = 0; s < 100000 && acc; s++)
		acc = ts_add(ctx, acc, x);
	ck_assert_ptr_null(acc);
	ck_assert_int_eq(ts_last_status(ctx), TS_ERR_INVALID);
	tu_assert_error(ctx, "ADD: expression nesting deeper than 2000 (");
	ts_ctx_free(ctx);
}
END_TEST

/* Every kind of node counts its children's depth. */
START_TEST(test_every_constructor_checks_depth)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(N), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *ideep = i;
	while (ideep->depth < TS_MAX_EXPR_DEPTH)
		ideep = ts_add(ctx, ideep, ts_int(ctx, 1));
	ts_expr *fdeep = ts_cast(ctx, ts_float32, ideep);
	ck_assert_ptr_null(fdeep);
	tu_assert_error(ctx, "CAST: expression nesting deeper than");
	ts_clear_error(ctx);
	ts_expr *b = ts_lt(ctx, ideep, ts_int(ctx, 0));
	ck_assert_ptr_null(b);
	ts_clear_error(ctx);
	ts_expr *half = ideep->u.bin.a; /* TS_MAX_EXPR_DEPTH - 1 deep */
	ts_expr *bdeep = ts_lt(ctx, half, ts_int(ctx, 0));
	tu_nonnull(ctx, bdeep);
	/* each node is built after the previous error was checked and cleared */
	for (int c = 0; c < 6; c++) {
		static const char *const kinds[] = {"NOT", "READ", "RAMP", "BROADCAST", "SELECT", "MIN"};
		ts_expr *e = c == 0   ? ts_not(ctx, bdeep)
			     : c == 1 ? TS_READ(ctx, A, ideep)
			     : c == 2 ? ts_ramp(ctx, ideep, 1, 4)
			     : c == 3 ? ts_broadcast(ctx, ideep, 4)
			     : c == 4 ? ts_select(ctx, ts_lt(ctx, i, ts_int(ctx, 1)), ideep, i)
				      : ts_min(ctx, i, ideep);
		ck_assert_msg(e == NULL, "%s was built", kinds[c]);
		tu_assert_error(ctx, "expression nesting deeper than 2000");
		ck_assert_msg(strncmp(ts_last_error(ctx), kinds[c], strlen(kinds[c])) == 0,
			      "%s: '%s'", kinds[c], ts_last_error(ctx));
		ts_clear_error(ctx);
	}
	ts_expr *fhalf = chain(ctx, A, i, TS_MAX_EXPR_DEPTH);
	tu_nonnull(ctx, fhalf);
	ck_assert_int_eq(fhalf->depth, TS_MAX_EXPR_DEPTH);
	ck_assert_ptr_null(ts_exp(ctx, fhalf));
	tu_assert_error(ctx, "CALL: expression nesting deeper than 2000");
	ts_clear_error(ctx);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 4);
	ck_assert_ptr_null(TS_SUM(ctx, fhalf, k));
	tu_assert_error(ctx, "REDUCE: expression nesting deeper than 2000");
	ts_ctx_free(ctx);
}
END_TEST

/* compute_inline substitutes a producer at the limit into its consumer,
 * one level deeper: lowering reports it instead of building it. */
/* ---- expression size ---------------------------------------------------------- */

/* P[q+1][i] = (P[q][i] + 0.5) * (P[q][i] - 0.25): each stage reads the one
 * before twice, so q stages inlined are 2^q copies of the first. */
static ts_schedule *doubling_chain(ts_ctx *ctx, int stages, ts_tensor **A, ts_tensor **out)
{
	ts_tensor *T = *A = ts_placeholder(ctx, "A", TS_SHAPE(8), ts_float32);
	for (int q = 0; q < stages; q++) {
		ts_expr *i = ts_var(ctx, "i"), *r = TS_READ(ctx, T, i);
		T = ts_compute(ctx, ts_sprintf(ctx, "P%d", q), TS_SHAPE(8), TS_VARS(i),
			       ts_mul(ctx, ts_add(ctx, r, ts_float(ctx, 0.5)), ts_sub(ctx, r, ts_float(ctx, 0.25))));
	}
	tu_nonnull(ctx, T);
	*out = T;
	return ts_create_schedule(ctx, 1, out);
}

/* Inlining 30 such stages would build 2^30 nodes (lowering ran for minutes
 * at 22): the constructors stop at TS_MAX_EXPR_NODES, and lowering names
 * the stage whose producers it was inlining. */
START_TEST(test_inline_doubling_chain)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A, *Y;
	ts_schedule *s = doubling_chain(ctx, 30, &A, &Y);
	for (int i = 0; i < s->nstages; i++)
		if (s->stages[i]->tensor != Y)
			tu_ok(ctx, ts_compute_inline(s->stages[i]));
	ck_assert_ptr_null(ts_lower(s, "f", 2, (ts_tensor *[]){A, Y}));
	tu_assert_error(ctx, "lower: inlining the producers of P");
	tu_assert_error(ctx, "expression of more than 1048576 nodes counted as a tree");
	ts_ctx_free(ctx);
}
END_TEST

/* The constructors refuse the same size directly: x * x squared 22 times
 * shares every node, but walks see 2^22 leaves. */
START_TEST(test_shared_subexpressions)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *x = ts_var(ctx, "x");
	for (int q = 0; q < 22 && x; q++)
		x = ts_mul(ctx, x, x);
	ck_assert_ptr_null(x);
	tu_assert_error(ctx, "expression of more than 1048576 nodes counted as a tree (TS_MAX_EXPR_NODES");
	ts_ctx_free(ctx);
}
END_TEST

/* The default schedule computes a producer read twice at root instead of
 * inlining it, so the long chain lowers, builds and is right. */
START_TEST(test_default_schedule_doubling_chain)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A, *Y;
	ts_schedule *s = doubling_chain(ctx, 30, &A, &Y);
	tu_ok(ctx, ts_schedule_default_cpu(s, 8));
	tu_check_func(ctx, ts_lower(s, "f", 2, (ts_tensor *[]){A, Y}), 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

/* Each parameter legal alone, together a padded input of 687 GB for an
 * output of 3x3: the build refuses the temporary (the kernel once wrote
 * through the NULL that aligned_alloc returned). */
START_TEST(test_temporary_larger_than_memory)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, 4, 8, 8), ts_float32);
	ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(8, 4, 3, 3), ts_float32);
	ts_tensor *Y = ts_op_conv2d_nchw(ctx, X, W, INT32_MAX, 1, INT32_MAX, 1, 1, 1, 1);
	tu_nonnull(ctx, Y);
	ts_func *f = ts_lower(ts_create_schedule(ctx, 1, &Y), "f", 3, (ts_tensor *[]){X, W, Y});
	tu_nonnull(ctx, f);
	ck_assert_ptr_null(ts_build(ctx, f, "llvm"));
	tu_assert_error(ctx, "bytes, more than this machine's");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_inline_beyond_the_limit)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(N), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_expr *body = chain(ctx, A, i, TS_MAX_EXPR_DEPTH);
	tu_nonnull(ctx, body);
	ck_assert_int_eq(body->depth, TS_MAX_EXPR_DEPTH);
	ts_tensor *B = ts_compute(ctx, "B", TS_SHAPE(N), TS_VARS(i), body);
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(N), TS_VARS(j),
				  ts_mul(ctx, TS_READ(ctx, B, j), ts_float(ctx, 3)));
	tu_nonnull(ctx, C);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	tu_ok(ctx, ts_compute_inline(ts_stage_of(s, B)));
	ts_func *f = ts_lower(s, "inl", 2, (ts_tensor *[]){A, C});
	ck_assert_ptr_null(f);
	tu_assert_error(ctx, "expression nesting deeper than 2000");
	ts_ctx_free(ctx);
}
END_TEST

/* sum of X[i + k] for k in [lo, hi), as a balanced tree. */
static ts_expr *int_reads(ts_ctx *ctx, ts_tensor *X, ts_expr *i, int lo, int hi)
{
	if (hi - lo == 1)
		return TS_READ(ctx, X, ts_add(ctx, i, ts_int(ctx, lo)));
	int mid = lo + (hi - lo) / 2;
	return ts_add(ctx, int_reads(ctx, X, i, lo, mid), int_reads(ctx, X, i, mid, hi));
}

/* A balanced sum of 3000 integer reads is 13 levels deep; simplifying may
 * rebuild it as a chain.  Lowering either succeeds with the right result
 * or reports the depth: never a crash, never a function with an error. */
START_TEST(test_simplifier_deepening)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(3000 + N), ts_int32);
	ts_expr *i = ts_var(ctx, "i");
	ts_expr *sum = int_reads(ctx, X, i, 0, 3000);
	tu_nonnull(ctx, sum);
	ck_assert_int_le(sum->depth, 16);
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(N), TS_VARS(i), sum);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_func *f = ts_lower(s, "wide", 2, (ts_tensor *[]){X, C});
	if (f) {
		ck_assert_int_eq(ts_last_status(ctx), TS_OK);
		tu_check_func(ctx, f, 0);
	} else {
		tu_assert_error(ctx, "expression nesting deeper than 2000");
	}
	ts_ctx_free(ctx);
}
END_TEST

/* ---- loop nests -------------------------------------------------------------- */

START_TEST(test_split_thousands_of_times)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(1 << 20), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(1 << 20), TS_VARS(i), TS_READ(ctx, A, i));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *st = ts_stage_of(s, C);
	ts_axis *ax = ts_axis_of(st, 0), *o, *in;
	ts_status r = TS_OK;
	int done = 0;
	for (; done < 5000 && r == TS_OK; done++) {
		r = ts_split(st, ax, 1, &o, &in);
		ax = in;
	}
	ck_assert_int_eq(r, TS_ERR_INVALID);
	ck_assert_int_lt(done, 64);
	tu_assert_error(ctx, "stage C: more than 64 axes");
	ts_clear_error(ctx);
	/* the schedule left behind still lowers */
	tu_nonnull(ctx, ts_lower(s, "split", 2, (ts_tensor *[]){A, C}));
	ts_ctx_free(ctx);
}
END_TEST

/* Ten stages, each split into 32 loops and computed at the innermost loop
 * of its consumer: 320 nested loops. */
START_TEST(test_compute_at_chain_too_deep)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *T[11];
	T[0] = ts_placeholder(ctx, "A", TS_SHAPE(4), ts_float32);
	for (int k = 1; k <= 10; k++) {
		ts_expr *i = ts_var(ctx, "i");
		char name[8];
		snprintf(name, sizeof(name), "T%d", k);
		T[k] = ts_compute(ctx, name, TS_SHAPE(4), TS_VARS(i),
				  ts_add(ctx, TS_READ(ctx, T[k - 1], i), ts_float(ctx, 1)));
	}
	ts_schedule *s = ts_create_schedule(ctx, 1, &T[10]);
	ts_axis *inner[11];
	for (int k = 1; k <= 10; k++) {
		ts_stage *st = ts_stage_of(s, T[k]);
		ts_axis *ax = ts_axis_of(st, 0), *o;
		for (int n = 0; n < 31; n++)
			tu_ok(ctx, ts_split(st, ax, 1, &o, &ax));
		inner[k] = ax;
		ck_assert_int_eq(st->nleaf, 32);
	}
	for (int k = 9; k >= 1; k--)
		tu_ok(ctx, ts_compute_at(ts_stage_of(s, T[k]), ts_stage_of(s, T[k + 1]), inner[k + 1]));
	ck_assert_ptr_null(ts_lower(s, "deep", 2, (ts_tensor *[]){T[0], T[10]}));
	tu_assert_error(ctx, "lower(deep): stage T1 is nested 320 loops deep (at most 128, TS_MAX_LOOP_NEST)");
	ts_clear_error(ctx);
	/* four stages deep (128 loops) is fine */
	ts_schedule *s8 = ts_create_schedule(ctx, 1, &T[10]);
	for (int k = 7; k <= 10; k++) {
		ts_stage *st = ts_stage_of(s8, T[k]);
		ts_axis *ax = ts_axis_of(st, 0), *o;
		for (int n = 0; n < 31; n++)
			tu_ok(ctx, ts_split(st, ax, 1, &o, &ax));
		inner[k] = ax;
	}
	for (int k = 9; k >= 7; k--)
		tu_ok(ctx, ts_compute_at(ts_stage_of(s8, T[k]), ts_stage_of(s8, T[k + 1]), inner[k + 1]));
	ts_func *f = ts_lower(s8, "deep4", 2, (ts_tensor *[]){T[0], T[10]});
	tu_nonnull(ctx, f);
	tu_check_func(ctx, f, 1e-6);
	ts_ctx_free(ctx);
}
END_TEST

/* ---- vector lanes and dtypes --------------------------------------------------- */

START_TEST(test_bad_lanes)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *x = ts_var(ctx, "x");
	static const int bad[] = {0, 1, -3, TS_MAX_VECTOR_LANES + 1, 65536, 100000};
	for (size_t b = 0; b < TS_COUNT_OF(bad); b++) {
		ck_assert_ptr_null(ts_ramp(ctx, x, 1, bad[b]));
		tu_assert_error(ctx, "ramp: needs an integer scalar base and lanes 2..64");
		ts_clear_error(ctx);
		ck_assert_ptr_null(ts_broadcast(ctx, x, bad[b]));
		tu_assert_error(ctx, "broadcast: needs a scalar and lanes 2..64");
		ts_clear_error(ctx);
		ck_assert(!ts_dtype_is_valid(ts_dtype_with_lanes(ts_float32, bad[b])) || bad[b] == 1);
	}
	ck_assert_ptr_null(ts_ramp(ctx, ts_int(ctx, INT32_MAX - 2), 1, 4));
	tu_assert_error(ctx, "ramp: base + stride * (lanes - 1) overflows (stride 1, 4 lanes)");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_ramp(ctx, x, INT64_MAX, 4));
	tu_assert_error(ctx, "ramp: base + stride * (lanes - 1) overflows");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_ramp(ctx, ts_const(ctx, ts_int64, INT64_MIN + 1), -1, 3));
	tu_assert_error(ctx, "overflows");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_bad_dtypes)
{
	ts_ctx *ctx = ts_ctx_new();
	static const ts_dtype bad[] = {
		{99, 32, 1}, {TS_TYPE_FLOAT, 7, 1}, {TS_TYPE_INT, 0, 1}, {TS_TYPE_INT, 33, 1},
		{TS_TYPE_BFLOAT, 32, 1}, {TS_TYPE_BOOL, 8, 1}, {TS_TYPE_FLOAT, 32, 0},
	};
	ts_expr *x = ts_var(ctx, "x");
	for (size_t b = 0; b < TS_COUNT_OF(bad); b++) {
		ck_assert(!ts_dtype_is_valid(bad[b]));
		ck_assert_ptr_null(ts_placeholder(ctx, "A", TS_SHAPE(4), bad[b]));
		tu_assert_error(ctx, "placeholder A: dtype");
		ts_clear_error(ctx);
		ck_assert_ptr_null(ts_var_typed(ctx, "v", bad[b]));
		tu_assert_error(ctx, "var v: invalid dtype");
		ts_clear_error(ctx);
		ck_assert_ptr_null(ts_cast(ctx, bad[b], x));
		tu_assert_error(ctx, "cast: invalid dtype");
		ts_clear_error(ctx);
		ck_assert_ptr_null(ts_const(ctx, bad[b], 3));
		tu_assert_error(ctx, "const: invalid dtype");
		ts_clear_error(ctx);
		ck_assert_ptr_null(ts_make_const(ctx, bad[b], 3));
		tu_assert_error(ctx, "invalid dtype");
		ts_clear_error(ctx);
		ck_assert_ptr_null(ts_array_new(ctx, bad[b], 1, (int64_t[]){4}));
		tu_assert_error(ctx, "array_new: invalid dtype");
		ts_clear_error(ctx);
		ck_assert_ptr_null(ts_array_new(NULL, bad[b], 1, (int64_t[]){4}));
	}
	ts_ctx_free(ctx);
}
END_TEST

/* ---- split, fuse, shapes, axes ---------------------------------------------------- */

START_TEST(test_split_factor_overflow)
{
	ts_ctx *ctx = ts_ctx_new();
	int64_t big = ((int64_t)1 << 62) + 1;
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(big), ts_int8);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(big), TS_VARS(i), TS_READ(ctx, A, i));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *st = ts_stage_of(s, C);
	ts_axis *o, *in;
	ck_assert_int_eq(ts_split(st, ts_axis_of(st, 0), (int64_t)1 << 62, &o, &in), TS_ERR_INVALID);
	tu_assert_error(ctx, "split(C): axis 'i' of extent 4611686018427387905 split by 4611686018427387904 rounds up past INT64_MAX");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_split_nparts(st, ts_axis_of(st, 0), (int64_t)1 << 62, &o, &in), TS_ERR_INVALID);
	tu_assert_error(ctx, "split(C): axis 'i' of extent 4611686018427387905");
	ts_clear_error(ctx);
	/* factors near INT64_MAX on a small extent are fine */
	tu_ok(ctx, ts_split(st, ts_axis_of(st, 0), INT64_MAX, &o, &in));
	ck_assert_int_eq(o->extent, 1);
	tu_ok(ctx, ts_split_nparts(st, o, INT64_MAX - 1, &o, &in));
	ck_assert_int_eq(o->extent, INT64_MAX - 1);
	ck_assert_int_eq(in->extent, 1);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_fuse_overflow)
{
	ts_ctx *ctx = ts_ctx_new();
	int64_t e = (int64_t)1 << 31;
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(e, e), ts_int8);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(e, e), TS_VARS(i, j), TS_READ(ctx, A, i, j));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *st = ts_stage_of(s, C);
	ts_axis *io, *ii, *jo, *ji, *f;
	tu_ok(ctx, ts_split(st, ts_axis_of(st, 0), 1, &io, &ii));
	tu_ok(ctx, ts_split(st, ts_axis_of(st, 1), 1, &jo, &ji));
	tu_ok(ctx, ts_reorder(st, 4, (ts_axis *[]){io, jo, ii, ji}));
	/* 2^31 * 2^31 fits; the fused axis times 2^31 more does not */
	tu_ok(ctx, ts_fuse(st, io, jo, &f));
	tu_ok(ctx, ts_split_nparts(st, ii, e, &io, &ii));
	tu_ok(ctx, ts_reorder(st, 2, (ts_axis *[]){io, f}));
	ts_axis *f2;
	ck_assert_int_eq(ts_fuse(st, io, f, &f2), TS_ERR_INVALID);
	tu_assert_error(ctx, "fuse(C): extent of 'i.inner.outer.i.outer.j.outer.fused.fused' (2147483648 x 4611686018427387904)");
	tu_assert_error(ctx, "overflows int64");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_shape_and_axis_overflow)
{
	ts_ctx *ctx = ts_ctx_new();
	ck_assert_ptr_null(ts_placeholder(ctx, "A", TS_SHAPE(INT64_MAX / 2, 3), ts_float32));
	tu_assert_error(ctx, "placeholder A: number of elements overflows");
	ts_clear_error(ctx);
	/* elements that fit int64 in more bytes than it counts: no array could
	 * hold them, and a compiled function's byte offsets would wrap */
	ck_assert_ptr_null(ts_placeholder(ctx, "A", TS_SHAPE(INT64_MAX), ts_float32));
	tu_assert_error(ctx, "placeholder A: its size in bytes overflows (float32 elements)");
	ts_clear_error(ctx);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(INT64_MAX / 4), ts_int8);
	tu_nonnull(ctx, B);
	ts_expr *b = ts_var(ctx, "b");
	ck_assert_ptr_null(ts_compute(ctx, "D", TS_SHAPE(INT64_MAX / 4), TS_VARS(b),
				      ts_cast(ctx, ts_float64, TS_READ(ctx, B, b))));
	tu_assert_error(ctx, "compute D: its size in bytes overflows (float64 elements)");
	ts_clear_error(ctx);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ck_assert_ptr_null(ts_compute(ctx, "C", TS_SHAPE((int64_t)1 << 40, (int64_t)1 << 40),
				      TS_VARS(i, j), ts_add(ctx, i, j)));
	tu_assert_error(ctx, "compute C: number of elements overflows");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_reduce_axis(ctx, "k", INT64_MAX - 5, 10));
	tu_assert_error(ctx, "reduce_axis k: range [9223372036854775802, 9223372036854775802 + 10) does not fit int64");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_array_new(ctx, ts_float64, 2, (int64_t[]){INT64_MAX / 4, 4}));
	tu_assert_error(ctx, "array_new: bad extent");
	ts_ctx_free(ctx);
}
END_TEST

/* ---- operator parameters --------------------------------------------------------- */

START_TEST(test_operator_parameters)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, 4, 9, 9), ts_float32);
	ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(8, 4, 3, 3), ts_float32);
	ts_tensor *Wbig = ts_placeholder(ctx, "Wbig", TS_SHAPE(8, 4, (int64_t)1 << 40, 3), ts_float32);
	tu_nonnull(ctx, Wbig);
	ck_assert_ptr_null(ts_op_conv2d_nchw(ctx, X, Wbig, 1, 1, 0, 0, INT32_MAX, 1, 1));
	tu_assert_error(ctx, "conv2d_nchw: height window");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_op_conv2d_nchw(ctx, X, W, -1, 1, 0, 0, 1, 1, 1));
	tu_assert_error(ctx, "conv2d_nchw: height stride -1");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_op_conv2d_nchw(ctx, X, W, 1, 1, 1, -2, 1, 1, 1));
	tu_assert_error(ctx, "conv2d_nchw: width stride 1 and dilation 1 must be >= 1, padding -2 >= 0");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_op_conv2d_nchw(ctx, X, W, 1, 1, 0, 0, 1, 0, 1));
	tu_assert_error(ctx, "dilation 0");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_op_max_pool2d(ctx, X, -3, 2, 1, 1, 0, 0));
	tu_assert_error(ctx, "max_pool2d: X[1, 4, 9, 9]: height kernel -3 must be >= 1");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_op_avg_pool2d(ctx, X, 2, 2, 0, 1, 0, 0, true));
	tu_assert_error(ctx, "avg_pool2d: height stride 0");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_op_layout_nchw_to_nchwc(ctx, X, -4));
	tu_assert_error(ctx, "block -4 does not divide the 4");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_op_weight_oihw_to_blocked(ctx, W, 4, 0));
	tu_assert_error(ctx, "block 0 does not divide the 8");
	ts_clear_error(ctx);
	int64_t pb[4] = {0, 0, INT64_MAX, 0}, pa[4] = {0, 0, 1, 0};
	ck_assert_ptr_null(ts_op_pad(ctx, X, pb, pa, 0));
	tu_assert_error(ctx, "pad: X[1, 4, 9, 9]: padding (9223372036854775807, 1) of dimension 2 overflows its extent");
	ts_clear_error(ctx);
	pb[2] = -1;
	ck_assert_ptr_null(ts_op_pad(ctx, X, pb, pa, 0));
	tu_assert_error(ctx, "of dimension 2 is negative");
	ts_clear_error(ctx);
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(5, 6), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(6, 7), ts_float32);
	static const int64_t bad_nr[] = {0, -8, (int64_t)INT32_MAX + 1, INT64_MAX};
	for (size_t b = 0; b < TS_COUNT_OF(bad_nr); b++) {
		ck_assert_ptr_null(ts_op_matmul_packed(ctx, A, B, bad_nr[b]));
		tu_assert_error(ctx, "matmul_packed: needs A[M, K], B[K, N] and a panel width nr in 1..2147483647");
		ts_clear_error(ctx);
	}
	ts_ctx_free(ctx);
}
END_TEST

/* ---- CUDA architectures ------------------------------------------------------------ */

START_TEST(test_cuda_arch_strings)
{
	ts_ctx *ctx = ts_ctx_new();
	static const char *bad[] = {"cuda -arch=sm_99999999999", "cuda -arch=sm_",
				    "cuda -arch=sm_-5", "cuda -arch=compute_abc", "cuda -arch=",
				    "cuda -arch=sm_9", "cuda -arch=sm_80 -arch=sm_x"};
	char arch[CG_ARCH_MAX];
	for (size_t b = 0; b < TS_COUNT_OF(bad); b++) {
		ck_assert_int_eq(cg_cuda_parse_target(ctx, bad[b], arch), TS_ERR_INVALID);
		ck_assert_msg(strstr(ts_last_error(ctx), "bad architecture") ||
				      strstr(ts_last_error(ctx), "unknown option") ||
				      strstr(ts_last_error(ctx), "has no value"),
			      "%s: %s", bad[b], ts_last_error(ctx));
		ck_assert_str_eq(arch, "");
		ts_clear_error(ctx);
	}
	tu_ok(ctx, cg_cuda_parse_target(ctx, "cuda -arch=sm_90a", arch));
	ck_assert_str_eq(arch, "sm_90a");
	ts_ctx_free(ctx);
}
END_TEST

/* ---- thread-pool sizes ------------------------------------------------------------- */

/* Starts the pool under TESSERA_NUM_THREADS=value and returns what it said
 * on stderr (static buffer). */
static const char *pool_start_message(const char *value)
{
	static char text[512];
	FILE *tmp = tmpfile();
	ck_assert_ptr_nonnull(tmp);
	fflush(stderr);
	int saved = dup(2);
	dup2(fileno(tmp), 2);
	setenv("TESSERA_NUM_THREADS", value, 1);
	ts_threadpool_shutdown();
	ts_set_num_threads(0);
	ts_parallel_for(2, noop_chunk, NULL);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	size_t n = fread(text, 1, sizeof(text) - 1, tmp);
	text[n] = '\0';
	fclose(tmp);
	return text;
}

START_TEST(test_thread_count_from_environment)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int want_cores = cores < 1 ? 1 : cores > 1024 ? 1024 : (int)cores;
	static const char *bad[] = {"-5", "abc", "0", "3threads"};
	for (size_t b = 0; b < TS_COUNT_OF(bad); b++) {
		const char *msg = pool_start_message(bad[b]);
		ck_assert_int_eq(ts_num_threads(), want_cores);
		ck_assert_msg(strstr(msg, "TESSERA_NUM_THREADS=") && strstr(msg, bad[b]) &&
				      strstr(msg, "is not a positive integer; using"),
			      "'%s': stderr said '%s'", bad[b], msg);
	}
	/* too many is clamped (checked without starting 1024 threads) */
	static const char *many[] = {"100000", "99999999999999999999999"};
	for (size_t m = 0; m < TS_COUNT_OF(many); m++) {
		setenv("TESSERA_NUM_THREADS", many[m], 1);
		ts_threadpool_shutdown();
		ts_set_num_threads(0);
		ck_assert_int_eq(ts_num_threads(), 1024);
	}
	ck_assert_str_eq(pool_start_message("2"), "");
	ck_assert_int_eq(ts_num_threads(), 2);
	unsetenv("TESSERA_NUM_THREADS");
	ts_threadpool_shutdown();
}
END_TEST

/* ---- failing arena allocations -------------------------------------------------------- */

/* Builds, schedules and lowers a small tiled matmul; returns the status of
 * the first step that failed (TS_OK if none). */
static ts_status matmul_steps(ts_ctx *ctx)
{
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(13, 11), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(11, 9), ts_float32);
	ts_tensor *C = A && B ? ts_op_matmul(ctx, A, B, false, false) : NULL;
	ts_schedule *s = C ? ts_create_schedule(ctx, 1, &C) : NULL;
	ts_stage *st = s ? ts_stage_of(s, C) : NULL;
	if (!st)
		return ts_last_status(ctx);
	ts_axis *xo, *yo, *xi, *yi;
	ts_status r = ts_tile(st, ts_axis_of(st, 0), ts_axis_of(st, 1), 4, 4, &xo, &yo, &xi, &yi);
	if (r == TS_OK)
		r = ts_vectorize(st, yi);
	if (r == TS_OK)
		r = ts_parallel(st, xo);
	if (r != TS_OK)
		return r;
	ts_func *f = ts_lower(s, "mm", 3, (ts_tensor *[]){A, B, C});
	if (!f || !ir_func_str(ctx, f))
		return ts_last_status(ctx);
	return TS_OK;
}

START_TEST(test_alloc_failure_sweep)
{
	int reached_ok = 0;
	for (long n = 1; n <= 5000 && !reached_ok; n++) {
		ts_ctx *ctx = ts_ctx_new();
		ck_assert_ptr_nonnull(ctx);
		ts_ctx_fail_alloc_after(ctx, n);
		ts_status r = matmul_steps(ctx);
		ck_assert_msg(r == TS_OK || r == TS_ERR_NOMEM,
			      "allocation %ld failing gave status %d: %s", n, r, ts_last_error(ctx));
		ck_assert_msg(r == ts_last_status(ctx) || r == TS_OK,
			      "allocation %ld: returned %d, recorded %d", n, r, ts_last_status(ctx));
		reached_ok = r == TS_OK;
		ts_ctx_free(ctx);
	}
	ck_assert_msg(reached_ok, "the matmul never lowered within 5000 allocations");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mustfail_limits");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_chain_of_100000_adds);
	tcase_add_test(tc, test_every_constructor_checks_depth);
	tcase_add_test(tc, test_inline_beyond_the_limit);
	tcase_add_test(tc, test_temporary_larger_than_memory);
	tcase_add_test(tc, test_inline_doubling_chain);
	tcase_add_test(tc, test_shared_subexpressions);
	tcase_add_test(tc, test_default_schedule_doubling_chain);
	tcase_add_test(tc, test_simplifier_deepening);
	tcase_add_test(tc, test_split_thousands_of_times);
	tcase_add_test(tc, test_compute_at_chain_too_deep);
	tcase_add_test(tc, test_bad_lanes);
	tcase_add_test(tc, test_bad_dtypes);
	tcase_add_test(tc, test_split_factor_overflow);
	tcase_add_test(tc, test_fuse_overflow);
	tcase_add_test(tc, test_shape_and_axis_overflow);
	tcase_add_test(tc, test_operator_parameters);
	tcase_add_test(tc, test_cuda_arch_strings);
	tcase_add_test(tc, test_thread_count_from_environment);
	tcase_add_test(tc, test_alloc_failure_sweep);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
