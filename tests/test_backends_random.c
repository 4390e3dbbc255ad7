/*
 * test_backends_random.c - random elementwise expressions over every scalar
 * dtype, run by every CPU path and compared with the reference evaluator.
 *
 * A case is a seed: inputs A and B of random dtypes (int8..int64,
 * uint8..uint64, float16, bfloat16, float32, float64, bool) filled with
 * extreme values (the dtype's ends, -0.0, NaN, infinities, denormals) and
 * random bits, and outputs C0.. of random dtypes, each C[i] = f(A[i], B[i],
 * i) for a random f, which also reads A and B at other indices (gen_index:
 * constants, N-1-i, strided, clamped, selected and gathered, always in
 * bounds) and mixes in wrapping ramps of i in every integer dtype
 * (gen_ramp), built of nested casts, arithmetic, the four integer division
 * kinds by constants and by tensors, float division, min and max, selects
 * on comparisons, logic and constants at the same extremes.  Every path
 * must give the evaluator's bits: the loop-IR interpreter, the LLVM JIT
 * (functions without 16-bit floats, which it refuses) and the plain C
 * emitter's output compiled with cc when one is present (one seed in ten:
 * cc takes most of the time; compiled with UBSan, and ASan in an ASan
 * build, so that undefined behaviour stops the test), each on the
 * default schedule and on one that splits the extent 37 by a factor
 * that does not divide it (4, 8 or 16, with a guard or a separate tail
 * loop) and vectorizes the inner loop; the interpreter and the C emitter
 * get that function vectorized as the CPU backends see it
 * (cg_vectorize).  Floats compare as bits, except that any NaN equals
 * any NaN.  ir.h lets LLVM give either zero for a float min or max of +0
 * and -0, so such a min or max is followed by + 0.0, or the output
 * holding it is not compared with LLVM's; and float a*b + c is never
 * built, since ir.h lets it be fused.
 *
 * The cases the generator found wrong are kept as fixed cases below.
 *
 * A mismatch prints the seed, the expression, the element and the inputs.
 * TESSERA_BACKENDS_SEEDS=first:count runs other seeds (reporting every
 * mismatch before failing).
 */
#include "testutil.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "arith.h"
#include "build.h"
#include "c_emit.h"
#include "interp.h"
#include "lower.h"
#include "printer.h"
#include "schedule.h"
#include "vectorize.h"

#define N 37
#define MAX_OUTS 6

static const ts_dtype all_dtypes[] = {
	TS_DTYPE(TS_TYPE_INT, 8),   TS_DTYPE(TS_TYPE_INT, 16),  TS_DTYPE(TS_TYPE_INT, 32),
	TS_DTYPE(TS_TYPE_INT, 64),  TS_DTYPE(TS_TYPE_UINT, 8),  TS_DTYPE(TS_TYPE_UINT, 16),
	TS_DTYPE(TS_TYPE_UINT, 32), TS_DTYPE(TS_TYPE_UINT, 64), TS_DTYPE(TS_TYPE_FLOAT, 16),
	TS_DTYPE(TS_TYPE_BFLOAT, 16), TS_DTYPE(TS_TYPE_FLOAT, 32), TS_DTYPE(TS_TYPE_FLOAT, 64),
	TS_DTYPE(TS_TYPE_BOOL, 1),
};

/* ---- choices ------------------------------------------------------------------- */

typedef struct gen {
	ts_ctx *ctx;
	uint64_t s;
	ts_expr *a, *b, *i; /* A[i], B[i], i */
	ts_tensor *in[2];   /* A and B */
	bool half;          /* 16-bit floats may appear */
	bool fminmax;       /* a float min or max LLVM may give another zero of */
} gen;

static uint64_t next(gen *g)
{
	uint64_t z = (g->s += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static int pick(gen *g, int n)
{
	return (int)(next(g) % (uint64_t)n);
}

static bool is_half(ts_dtype t)
{
	return ts_dtype_is_float(t) && t.bits == 16;
}

static ts_dtype pick_dtype(gen *g, bool with_bool)
{
	for (;;) {
		ts_dtype t = all_dtypes[pick(g, (int)TS_COUNT_OF(all_dtypes))];
		if ((g->half || !is_half(t)) && (with_bool || !ts_dtype_is_bool(t)))
			return t;
	}
}

/* An integer of dtype t (canonical form): the ends, small values, random bits. */
static int64_t int_value(gen *g, ts_dtype t)
{
	int64_t lo = t.code == TS_TYPE_UINT ? 0 : (int64_t)((uint64_t)-1 << (t.bits - 1));
	int64_t hi = t.code == TS_TYPE_UINT ? ir_wrap_int(t, -1) : ~lo;
	static const int64_t small[] = {0, 1, -1, 2, 3, 7, -7, 8, -8, 100, -128, 255};
	int64_t v;
	switch (pick(g, 6)) {
	case 0: v = pick(g, 2) ? lo : hi; break;
	case 1: v = pick(g, 2) ? lo + 1 : hi - 1; break;
	case 2: case 3: v = small[pick(g, (int)TS_COUNT_OF(small))]; break;
	case 4: v = pick(g, 41) - 20; break;
	default: v = (int64_t)next(g); break;
	}
	return ir_wrap_int(t, v);
}

/* A float: zeros, NaN, infinities, denormals, the ends of each float
 * dtype, integers at the ends of the integer dtypes, halves, random. */
static double float_value(gen *g)
{
	static const double special[] = {
		0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.5, NAN, -NAN, INFINITY, -INFINITY,
		65504.0, 65520.0, -65536.0, 5.9604644775390625e-08, 6.103515625e-05,
		FLT_TRUE_MIN, -FLT_MIN, FLT_MAX, -3.4028235677973366e38, DBL_TRUE_MIN, DBL_MAX,
		1e300, 127.5, -128.5, 255.5, 256.0, 32767.5, -32768.0, 2147483647.0,
		2147483648.0, -2147483649.0, 4294967295.5, 9.2233720368547758e18,
		-9.2233720368547758e18, 1.8446744073709552e19, 16777217.0, 0.1, -1.0 / 3.0,
	};
	switch (pick(g, 4)) {
	case 0: case 1: return special[pick(g, (int)TS_COUNT_OF(special))];
	case 2: return (double)(pick(g, 2001) - 1000) / 8.0;
	default: {
		uint64_t bits = next(g);
		double d;
		memcpy(&d, &bits, sizeof d);
		return pick(g, 2) ? d : (double)(int64_t)next(g) / (double)(1 + pick(g, 1000));
	}
	}
}

/* ---- expressions ------------------------------------------------------------- */

static ts_expr *gen_expr(gen *g, ts_dtype t, int depth);

static ts_expr *gen_const(gen *g, ts_dtype t)
{
	if (ts_dtype_is_float(t))
		return ts_fconst(g->ctx, t, float_value(g));
	if (ts_dtype_is_bool(t))
		return ts_const(g->ctx, t, pick(g, 2));
	return ts_const(g->ctx, t, int_value(g, t));
}

static ts_expr *gen_bool(gen *g, int depth);

/* A random integer dtype (no bool). */
static ts_dtype pick_int_dtype(gen *g)
{
	return all_dtypes[pick(g, 8)];
}

/* A multiplier or offset for the loop variable in dtype u: 0, +-1, small
 * strides, and large ones whose products wrap (2^30, the ends of int32
 * and of u, 2^62). */
static ts_expr *ramp_const(gen *g, ts_dtype u)
{
	static const int64_t v[] = {0, 1, -1, 2, -3, 5, INT64_C(1) << 30, INT32_MAX, INT32_MIN,
				    -(INT64_C(1) << 31), INT64_C(1) << 62};
	int k = pick(g, (int)TS_COUNT_OF(v) + 1);
	return k < (int)TS_COUNT_OF(v) ? ts_const(g->ctx, u, ir_wrap_int(u, v[k])) : gen_const(g, u);
}

/* The loop variable in integer dtype u (cast from i's int32), times and
 * plus constants of ramp_const: an affine ramp when vectorized, whose lanes
 * may wrap in u. */
static ts_expr *gen_ramp(gen *g, ts_dtype u)
{
	ts_ctx *ctx = g->ctx;
	ts_expr *r = ts_cast(ctx, u, g->i);
	if (pick(g, 4))
		r = ts_mul(ctx, r, ramp_const(g, u));
	switch (pick(g, 3)) {
	case 0: return ts_add(ctx, r, ramp_const(g, u));
	case 1: return ts_sub(ctx, ramp_const(g, u), r);
	default: return r;
	}
}

/* An index into A or B, in [0, N) for every i (the generator's job: an
 * out-of-bounds read is not a legal program): a constant (a scalar load),
 * i, N-1-i, strided and wrapping ramps modulo N, ends clamped with min and
 * max, a select of i and N-1-i, and other integer expressions of any dtype
 * (reads included) modulo N or clamped into [0, N).  Lowering refuses an
 * index whose exact interval leaves int32 in 32-bit arithmetic
 * (check_reads.c), so a clamped expression of 32 or 64 bits gets a scalar
 * read added, which no interval bounds exactly, and may wrap. */
static ts_expr *gen_index(gen *g, int depth)
{
	ts_ctx *ctx = g->ctx;
	ts_expr *i = g->i, *last = ts_int(ctx, N - 1);
	ts_dtype u = pick_int_dtype(g);
	switch (pick(g, 10)) {
	case 0: return ts_int(ctx, pick(g, N));
	case 1: return i;
	case 2: return ts_sub(ctx, last, i);
	case 3: return ts_min(ctx, ts_add(ctx, i, ts_int(ctx, pick(g, N))), last);
	case 4: return ts_max(ctx, ts_sub(ctx, i, ts_int(ctx, pick(g, N))), ts_int(ctx, 0));
	case 5: return ts_select(ctx, gen_bool(g, depth), i, ts_sub(ctx, last, i));
	case 6: return ts_add(ctx, ts_mul(ctx, i, ts_int(ctx, 0)), ts_int(ctx, pick(g, N)));
	case 7: return ts_floormod(ctx, gen_ramp(g, u), ts_const(ctx, u, N));
	case 8: return ts_floormod(ctx, gen_expr(g, u, depth), ts_const(ctx, u, N));
	default: {
		ts_expr *e = gen_expr(g, u, depth);
		if (u.bits >= 32) /* plus a scalar read: not exact (above) */
			e = ts_add(ctx, e, ts_cast(ctx, u, TS_READ(ctx, g->in[pick(g, 2)], ts_int(ctx, pick(g, N)))));
		return ts_max(ctx, ts_min(ctx, e, ts_const(ctx, u, N - 1)), ts_const(ctx, u, 0));
	}
	}
}

static ts_expr *gen_leaf(gen *g, ts_dtype t, int depth)
{
	switch (pick(g, 10)) {
	case 0: case 1: return ts_cast(g->ctx, t, g->a);
	case 2: case 3: return ts_cast(g->ctx, t, g->b);
	case 4: return ts_cast(g->ctx, t, g->i);
	case 5: /* another element (reads in its index nest a few levels at most) */
		if (depth < -2)
			return ts_cast(g->ctx, t, g->a);
		return ts_cast(g->ctx, t, TS_READ(g->ctx, g->in[pick(g, 2)], gen_index(g, depth - 1)));
	case 6: return ts_cast(g->ctx, t, gen_ramp(g, pick_int_dtype(g)));
	default: return gen_const(g, t);
	}
}

static ts_expr *gen_bool(gen *g, int depth)
{
	ts_ctx *ctx = g->ctx;
	switch (pick(g, 6)) {
	case 0: case 1: case 2: {
		ts_dtype u = pick_dtype(g, true);
		ts_expr *x = gen_expr(g, u, depth - 1), *y = gen_expr(g, u, depth - 1);
		return ts_binary(ctx, (ir_expr_kind)(IR_EQ + pick(g, 6)), x, y);
	}
	case 3: return ts_binary(ctx, pick(g, 2) ? IR_AND : IR_OR, gen_bool(g, depth - 1),
				 gen_bool(g, depth - 1));
	case 4: return ts_not(ctx, gen_bool(g, depth - 1));
	default: return ts_cast(ctx, ts_bool, gen_expr(g, pick_dtype(g, false), depth - 1));
	}
}

static const ir_expr_kind div_kinds[4] = {IR_TRUNCDIV, IR_TRUNCMOD, IR_FLOORDIV, IR_FLOORMOD};

/* x + y, or x - y where a float x*z + y could be fused (ir.h). */
static ts_expr *add(gen *g, ts_expr *x, ts_expr *y)
{
	if (x && y && ts_dtype_is_float(x->dtype) && (x->kind == IR_MUL || y->kind == IR_MUL))
		return ts_sub(g->ctx, x, y);
	return ts_add(g->ctx, x, y);
}

/* min or max of x and y.  Of +0 and -0 LLVM may give either (ir.h), and
 * the sign shows downstream (1 / max(-0, +0)): for float32 and float64,
 * half the time + 0.0 makes a zero +0 (it leaves any other value as it
 * is), the other half LLVM's output is not compared. */
static ts_expr *minmax(gen *g, ts_expr *x, ts_expr *y)
{
	ts_expr *m = ts_binary(g->ctx, pick(g, 2) ? IR_MIN : IR_MAX, x, y);
	if (!m || !ts_dtype_is_float(m->dtype) || is_half(m->dtype))
		return m;
	if (pick(g, 2))
		return ts_add(g->ctx, m, ts_fconst(g->ctx, m->dtype, 0.0));
	g->fminmax = true;
	return m;
}

/* A small constant of t (a non-zero one when `nonzero`). */
static ts_expr *small_const(gen *g, ts_dtype t, bool nonzero)
{
	static const int64_t v[] = {0, 1, -1, 2, 3, 8, -8, 100};
	int k = nonzero ? 1 + pick(g, (int)TS_COUNT_OF(v) - 1) : pick(g, (int)TS_COUNT_OF(v));
	if (ts_dtype_is_float(t))
		return ts_fconst(g->ctx, t, pick(g, 4) ? (double)v[k] : -0.0);
	return ts_const(g->ctx, t, ir_wrap_int(t, v[k]));
}

/* x combined with itself or a constant in the forms the simplifier and
 * the folder rewrite (x - x, (x + c) < x, min(x, x + c), x * c / c,
 * select(x < y, x, y), !(x < y), x * 0, x + -0.0, casts there and back),
 * where wrapping, NaN and -0.0 decide what is sound. */
static ts_expr *gen_pattern(gen *g, ts_dtype t, int d)
{
	ts_ctx *ctx = g->ctx;
	bool fl = ts_dtype_is_float(t);
	ts_expr *x = gen_expr(g, t, d), *y = gen_expr(g, t, d);
	ts_expr *c = pick(g, 2) ? small_const(g, t, false) : gen_const(g, t);
	ts_expr *nz = small_const(g, t, true);
	ir_expr_kind cmp = (ir_expr_kind)(IR_EQ + pick(g, 6));
	switch (pick(g, 14)) {
	case 0: return ts_sub(ctx, x, x);
	case 1: return ts_sub(ctx, add(g, x, c), x);
	case 2: return ts_cast(ctx, t, ts_binary(ctx, cmp, add(g, x, c), x));
	case 3: return minmax(g, x, pick(g, 2) ? x : add(g, x, c));
	case 4:
		if (fl)
			return ts_binary(ctx, IR_DIV, ts_mul(ctx, x, nz), nz);
		return ts_binary(ctx, div_kinds[pick(g, 4)], ts_mul(ctx, x, nz), nz);
	case 5:
		if (fl)
			return ts_binary(ctx, IR_DIV, x, x);
		return ts_binary(ctx, div_kinds[pick(g, 4)], add(g, x, ts_mul(ctx, nz, c)), nz);
	case 6: return ts_select(ctx, ts_binary(ctx, IR_LT + pick(g, 4), x, y), x, y);
	case 7: return ts_select(ctx, ts_not(ctx, ts_binary(ctx, cmp, x, y)), x, y);
	case 8: {
		ir_expr_kind k = (ir_expr_kind)(IR_ADD + pick(g, 3));
		ts_expr *l = pick(g, 2) ? x : c, *r = pick(g, 2) ? c : x;
		return k == IR_ADD ? add(g, l, r) : ts_binary(ctx, k, l, r);
	}
	case 9: return ts_select(ctx, ts_binary(ctx, cmp, x, x), y, c);
	case 10: {
		ts_dtype u = pick_dtype(g, true);
		return ts_cast(ctx, t, ts_cast(ctx, u, x));
	}
	case 11: return minmax(g, minmax(g, x, c), nz);
	case 12: return ts_select(ctx, ts_binary(ctx, cmp, x, c), x, c);
	default: return ts_sub(ctx, c, ts_sub(ctx, c, x));
	}
}

static ts_expr *gen_expr(gen *g, ts_dtype t, int depth)
{
	ts_ctx *ctx = g->ctx;
	if (depth <= 0 || pick(g, 5) == 0)
		return gen_leaf(g, t, depth);
	if (ts_dtype_is_bool(t))
		return gen_bool(g, depth);
	bool fl = ts_dtype_is_float(t);
	int d = depth - 1;
	if (pick(g, 4) == 0)
		return gen_pattern(g, t, d);
	switch (pick(g, fl ? 11 : 10)) {
	case 0: return add(g, gen_expr(g, t, d), gen_expr(g, t, d));
	case 1: return ts_sub(ctx, gen_expr(g, t, d), gen_expr(g, t, d));
	case 2: return ts_mul(ctx, gen_expr(g, t, d), gen_expr(g, t, d));
	case 3: {
		ts_expr *x = gen_expr(g, t, d);
		ts_expr *y = pick(g, 2) ? gen_const(g, t) : gen_expr(g, t, d);
		return ts_binary(ctx, fl ? IR_DIV : div_kinds[pick(g, 4)], x, y);
	}
	case 4: case 5:
		return minmax(g, gen_expr(g, t, d), gen_expr(g, t, d));
	case 6: {
		ts_expr *c = gen_bool(g, d);
		return ts_select(ctx, c, gen_expr(g, t, d), gen_expr(g, t, d));
	}
	case 7: case 8:
		return ts_cast(ctx, t, gen_expr(g, pick_dtype(g, true), d));
	case 9: /* an integer division by a constant, or a float intrinsic that is exact */
		if (!fl)
			return ts_binary(ctx, div_kinds[pick(g, 4)], gen_expr(g, t, d), gen_const(g, t));
		return ts_call(ctx, pick(g, 3) == 0 ? IR_INTRIN_FABS : pick(g, 2) ? IR_INTRIN_FLOOR : IR_INTRIN_CEIL,
			       1, (ts_expr *[]){gen_expr(g, t, d)});
	default:
		return ts_cast(ctx, t, gen_expr(g, pick_dtype(g, false), d));
	}
}

/* ---- a case ------------------------------------------------------------------ */

typedef struct bcase {
	uint64_t seed;
	ts_ctx *ctx;
	int nout;
	ts_tensor *args[2 + MAX_OUTS]; /* A, B, then the outputs */
	bool fminmax[MAX_OUTS];
	bool half;                     /* some dtype is 16-bit float: no LLVM */
	ts_array *in[2];
	void *want[MAX_OUTS];          /* the evaluator's outputs */
	int factor;                    /* the vector schedule's split */
	ts_tail tail;
} bcase;

static int failures;
static char first_failure[8192];

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...)
{
	char msg[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", msg);
	if (failures++ == 0)
		snprintf(first_failure, sizeof first_failure, "%s", msg);
}

static void fill_input(gen *g, ts_array *a)
{
	ts_dtype t = a->dtype;
	int bytes = ts_dtype_bytes(t);
	for (int64_t e = 0; e < N; e++) {
		if (pick(g, 4) == 0 && !ts_dtype_is_bool(t)) { /* random bits */
			uint64_t bits = next(g);
			memcpy((char *)a->data + e * bytes, &bits, (size_t)bytes);
		} else if (ts_dtype_is_float(t)) {
			ts_elem_set_f64(a->data, t, e, float_value(g));
		} else if (ts_dtype_is_bool(t)) {
			ts_elem_set_i64(a->data, t, e, pick(g, 2));
		} else {
			ts_elem_set_i64(a->data, t, e, int_value(g, t));
		}
	}
}

static bool half_node(const ts_expr *e, const void *data)
{
	(void)data;
	return is_half(ts_dtype_element(e->dtype));
}

/* Starts a case in a context of its own: placeholders A and B of dtypes ta
 * and tb, the generator seeded with `seed`. */
static void case_begin(bcase *c, gen *g, uint64_t seed, ts_dtype ta, ts_dtype tb)
{
	*c = (bcase){.seed = seed, .ctx = ts_ctx_new()};
	*g = (gen){.s = seed * UINT64_C(0x2545f4914f6cdd1d) + 1, .ctx = c->ctx};
	ts_ctx *ctx = c->ctx;
	c->args[0] = ts_placeholder(ctx, "A", TS_SHAPE(N), ta);
	c->args[1] = ts_placeholder(ctx, "B", TS_SHAPE(N), tb);
	tu_nonnull(ctx, c->args[0]);
	tu_nonnull(ctx, c->args[1]);
	g->i = ts_var(ctx, "i");
	g->in[0] = c->args[0];
	g->in[1] = c->args[1];
	g->a = TS_READ(ctx, c->args[0], g->i);
	g->b = TS_READ(ctx, c->args[1], g->i);
	c->half = is_half(ta) || is_half(tb);
}

/* Adds the output C<k>[i] = body. */
static void case_output(bcase *c, gen *g, ts_expr *body)
{
	ck_assert_msg(body != NULL, "seed %llu: %s", (unsigned long long)c->seed, ts_last_error(c->ctx));
	ck_assert_int_lt(c->nout, MAX_OUTS);
	char name[8];
	snprintf(name, sizeof name, "C%d", c->nout);
	ts_tensor *t = ts_compute(c->ctx, ts_strdup(c->ctx, name), TS_SHAPE(N), TS_VARS(g->i), body);
	tu_nonnull(c->ctx, t);
	c->fminmax[c->nout] = g->fminmax;
	c->args[2 + c->nout++] = t;
	c->half |= ir_expr_any(body, half_node, NULL);
	g->fminmax = false;
}

/* Fills the inputs and picks the vector schedule's split. */
static void case_end(bcase *c, gen *g)
{
	for (int s = 0; s < 2; s++) {
		c->in[s] = ts_array_for(c->ctx, c->args[s]);
		ck_assert_ptr_nonnull(c->in[s]);
		fill_input(g, c->in[s]);
	}
	static const int factors[] = {4, 8, 16};
	c->factor = factors[pick(g, 3)];
	c->tail = pick(g, 2) ? TS_TAIL_GUARD : TS_TAIL_PARTITION;
}

/* The random case of a seed. */
static void case_random(bcase *c, uint64_t seed)
{
	gen pre = {.s = seed}, g;
	pre.half = pick(&pre, 3) == 0;
	ts_dtype ta = pick_dtype(&pre, true), tb = pick_dtype(&pre, true);
	case_begin(c, &g, seed, ta, tb);
	g.half = pre.half;
	int nout = 2 + pick(&g, MAX_OUTS - 1);
	for (int o = 0; o < nout; o++) {
		ts_dtype t = pick_dtype(&g, true);
		case_output(c, &g, gen_expr(&g, t, 1 + pick(&g, 5)));
	}
	case_end(c, &g);
}

static void case_free(bcase *c)
{
	for (int s = 0; s < 2; s++)
		ts_array_free(c->in[s]);
	for (int o = 0; o < c->nout; o++)
		free(c->want[o]);
	ts_ctx_free(c->ctx);
}

/* Storage for every argument: the inputs, then outputs full of a pattern. */
static void args_new(bcase *c, ts_array **arr, void **data)
{
	for (int k = 0; k < 2 + c->nout; k++) {
		arr[k] = k < 2 ? c->in[k] : ts_array_for(c->ctx, c->args[k]);
		ck_assert_ptr_nonnull(arr[k]);
		if (k >= 2)
			memset(arr[k]->data, 0x5a, ts_array_nbytes(arr[k]));
		data[k] = arr[k]->data;
	}
}

static void print_elem(char *out, size_t cap, ts_dtype t, const void *data, int64_t e)
{
	uint64_t bits = 0;
	int bytes = ts_dtype_bytes(t);
	memcpy(&bits, (const char *)data + e * bytes, (size_t)bytes);
	if (ts_dtype_is_float(t))
		snprintf(out, cap, "%.17g (0x%0*llx)", ts_elem_get_f64(data, t, e), 2 * bytes,
			 (unsigned long long)bits);
	else if (t.code == TS_TYPE_UINT)
		snprintf(out, cap, "%llu", (unsigned long long)bits);
	else
		snprintf(out, cap, "%lld", (long long)ts_elem_get_i64(data, t, e));
}

static bool same_elem(ts_dtype t, const void *x, const void *y, int64_t e)
{
	int bytes = ts_dtype_bytes(t);
	if (!memcmp((const char *)x + e * bytes, (const char *)y + e * bytes, (size_t)bytes))
		return true;
	if (!ts_dtype_is_float(t))
		return false;
	double a = ts_elem_get_f64(x, t, e), b = ts_elem_get_f64(y, t, e);
	return isnan(a) && isnan(b);
}

/* Compares the outputs a path wrote with the evaluator's; frees them. */
static void check_outputs(bcase *c, ts_array **arr, const char *path, bool llvm)
{
	for (int o = 0; o < c->nout; o++) {
		ts_tensor *t = c->args[2 + o];
		for (int64_t e = 0; e < N && !(llvm && c->fminmax[o]); e++) {
			if (same_elem(t->dtype, arr[2 + o]->data, c->want[o], e))
				continue;
			char got[64], want[64], av[64], bv[64], tb[24], ab[24], bb[24];
			print_elem(got, sizeof got, t->dtype, arr[2 + o]->data, e);
			print_elem(want, sizeof want, t->dtype, c->want[o], e);
			print_elem(av, sizeof av, c->in[0]->dtype, c->in[0]->data, e);
			print_elem(bv, sizeof bv, c->in[1]->dtype, c->in[1]->data, e);
			report("seed %llu, %s: %s %s[i] = %s\n  at i = %lld, A (%s) = %s, B (%s) = %s: got %s, "
			       "want %s", (unsigned long long)c->seed, path, ts_dtype_str(t->dtype, tb),
			       t->name, ir_expr_str(c->ctx, t->body), (long long)e,
			       ts_dtype_str(c->in[0]->dtype, ab), av, ts_dtype_str(c->in[1]->dtype, bb), bv,
			       got, want);
			break;
		}
		ts_array_free(arr[2 + o]);
	}
}

static void run_eval(bcase *c)
{
	ts_array *arr[2 + MAX_OUTS];
	void *data[2 + MAX_OUTS];
	args_new(c, arr, data);
	tu_ok(c->ctx, ts_eval(c->ctx, 2 + c->nout, c->args, data));
	for (int o = 0; o < c->nout; o++) {
		size_t n = ts_array_nbytes(arr[2 + o]);
		c->want[o] = malloc(n);
		ck_assert_ptr_nonnull(c->want[o]);
		memcpy(c->want[o], arr[2 + o]->data, n);
		ts_array_free(arr[2 + o]);
	}
}

static ts_func *lower(bcase *c, bool vector)
{
	ts_schedule *s = ts_create_schedule(c->ctx, c->nout, c->args + 2);
	tu_nonnull(c->ctx, s);
	for (int o = 0; o < c->nout && vector; o++) {
		ts_stage *st = ts_stage_of(s, c->args[2 + o]);
		ts_axis *outer, *inner;
		tu_ok(c->ctx, ts_split_tail(st, ts_axis_of(st, 0), c->factor, c->tail, &outer, &inner));
		tu_ok(c->ctx, ts_vectorize(st, inner));
	}
	ts_func *f = ts_lower(s, "f", 2 + c->nout, c->args);
	tu_nonnull(c->ctx, f);
	if (!vector)
		return f;
	/* as the CPU backends see it: vector loads, stores and arithmetic */
	ts_func *v = ts_alloc(c->ctx, sizeof(*v));
	tu_nonnull(c->ctx, v);
	*v = *f;
	v->body = cg_vectorize(c->ctx, f->body);
	tu_nonnull(c->ctx, v->body);
	return v;
}

static void run_interp(bcase *c, const ts_func *f, const char *path)
{
	ts_array *arr[2 + MAX_OUTS];
	void *data[2 + MAX_OUTS];
	args_new(c, arr, data);
	tu_ok(c->ctx, cg_interp_run(c->ctx, f, data));
	check_outputs(c, arr, path, false);
}

static void run_llvm(bcase *c, const ts_func *f, const char *path)
{
	ts_module *m = ts_build(c->ctx, f, "llvm");
	tu_nonnull(c->ctx, m);
	ts_array *arr[2 + MAX_OUTS];
	void *data[2 + MAX_OUTS];
	args_new(c, arr, data);
	tu_ok(c->ctx, ts_module_run(m, 2 + c->nout, arr));
	check_outputs(c, arr, path, true);
	ts_module_free(m);
}

/* The emitted C compiled with UBSan (tu_cc_sanitize_flags): undefined
 * behaviour ends the test with the report, which names the source it
 * leaves behind, headed by the seed. */
static void run_c(bcase *c, const ts_func *f, const char *path)
{
	const char *src = cg_emit_c(c->ctx, f);
	tu_nonnull(c->ctx, src);
	src = ts_sprintf(c->ctx, "/* seed %llu, %s */\n%s", (unsigned long long)c->seed, path, src);
	tu_nonnull(c->ctx, src);
	char dir[64];
	void *lib = tu_cc_load_with(src, tu_cc_sanitize_flags(), dir);
	int32_t (*fn)(void **) = (int32_t (*)(void **))dlsym(lib, "f_packed");
	ck_assert_msg(fn != NULL, "no f_packed in the compiled C");
	ts_array *arr[2 + MAX_OUTS];
	void *data[2 + MAX_OUTS];
	args_new(c, arr, data);
	ck_assert_int_eq(fn(data), 0);
	check_outputs(c, arr, path, false);
	tu_cc_unload(lib, dir);
}

/* Every path (the compiled C when `with_c` and cc is present); frees c. */
static void run_paths(bcase *c, bool with_c)
{
	run_eval(c);
	ts_func *scalar = lower(c, false), *vec = lower(c, true);
	run_interp(c, scalar, "interpreter");
	run_interp(c, vec, "interpreter, vectorized");
	if (!c->half) {
		run_llvm(c, scalar, "LLVM");
		run_llvm(c, vec, "LLVM, vectorized");
	}
	if (with_c && tu_have_cc()) {
		run_c(c, scalar, "C");
		run_c(c, vec, "C, vectorized");
	}
	case_free(c);
}

/* ---- suites ------------------------------------------------------------------ */

START_TEST(test_random_expressions)
{
	uint64_t first = 1, count = 300;
	tu_seed_range("TESSERA_BACKENDS_SEEDS", &first, &count);
	failures = 0;
	for (uint64_t seed = first; seed < first + count; seed++) {
		bcase c;
		case_random(&c, seed);
		run_paths(&c, seed % 10 == 0); /* cc takes most of the time */
	}
	ck_assert_msg(failures == 0, "%d mismatch(es), the first:\n%s", failures, first_failure);
}
END_TEST

/* The sanitizer stops compiled C at undefined behaviour: INT32_MAX + 1 in
 * a child process ends it with UBSan's report instead of returning. */
START_TEST(test_c_ub_is_caught)
{
	const char *flags = tu_cc_sanitize_flags();
	if (!tu_have_cc() || !*flags) {
		printf("test_c_ub_is_caught: skipped, no C compiler with UBSan\n");
		return;
	}
	char dir[64];
	void *lib = tu_cc_load_with("#include <stdint.h>\n"
				    "int32_t inc(int32_t x)\n{\n  return x + 1;\n}\n",
				    flags, dir);
	int32_t (*inc)(int32_t) = (int32_t (*)(int32_t))dlsym(lib, "inc");
	ck_assert_ptr_nonnull(inc);
	ck_assert_int_eq(inc(41), 42);
	fflush(NULL);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY); /* the report is expected */
		if (fd >= 0)
			dup2(fd, 2);
		volatile int32_t big = INT32_MAX;
		_exit(inc(big) == INT32_MIN ? 0 : 2);
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(!WIFEXITED(status) || WEXITSTATUS(status) != 0,
		      "INT32_MAX + 1 in C compiled with %s ran on", flags);
	tu_cc_unload(lib, dir);
}
END_TEST

/* ---- cases the generator found ------------------------------------------------ */

/* Runs the case c, built by the caller, through every path, the compiled
 * C included; the vector schedule splits by 8 with a separate tail loop
 * (37 = 4 * 8 + 5, whose tail cc sees whole). */
static void check_fixed(bcase *c, gen *g)
{
	failures = 0;
	case_end(c, g);
	c->factor = 8;
	c->tail = TS_TAIL_PARTITION;
	run_paths(c, true);
	ck_assert_msg(failures == 0, "%d mismatch(es), the first:\n%s", failures, first_failure);
}

/* Float constants the C emitter wrote from the unrounded double: one below
 * float's range (4.94e-324f, which cc refuses), and ones whose 9 digits
 * round a second time (1 + 2^-24 - 2^-52 is 1.0f, but "1.00000006f" is
 * not) or that round directly to 16 bits where ir.h goes through float32
 * (1 + 2^-11 + 2^-40 is float16 1.0, not 1 + 2^-10). */
START_TEST(test_c_float_constants)
{
	bcase c;
	gen g;
	case_begin(&c, &g, 1, ts_float32, ts_float16);
	case_output(&c, &g, ts_add(g.ctx, g.a, ts_fconst(g.ctx, ts_float32, DBL_TRUE_MIN)));
	case_output(&c, &g, ts_mul(g.ctx, g.a, ts_fconst(g.ctx, ts_float32, 1 + 0x1p-24 - 0x1p-52)));
	case_output(&c, &g, ts_mul(g.ctx, g.b, ts_fconst(g.ctx, ts_float16, 1 + 0x1p-11 + 0x1p-40)));
	case_output(&c, &g, ts_mul(g.ctx, ts_cast(g.ctx, ts_bfloat16, g.a),
				   ts_fconst(g.ctx, ts_bfloat16, 1 + 0x1p-8 + 0x1p-40)));
	check_fixed(&c, &g);
}
END_TEST

/* A signed ramp in a stored value wraps: i * 2147483647 and i + 2147483647
 * vectorized were base + lane*stride in C's int arithmetic, undefined where
 * they overflow (cc -O2 refused "iteration 2 invokes undefined behavior"). */
START_TEST(test_c_ramp_wraps)
{
	bcase c;
	gen g;
	case_begin(&c, &g, 2, ts_int32, ts_int64);
	case_output(&c, &g, ts_mul(g.ctx, g.i, ts_int(g.ctx, INT32_MAX)));
	case_output(&c, &g, ts_add(g.ctx, g.i, ts_int(g.ctx, INT32_MAX)));
	case_output(&c, &g, ts_sub(g.ctx, ts_int(g.ctx, INT32_MIN), g.i));
	case_output(&c, &g, ts_lt(g.ctx, ts_add(g.ctx, g.i, ts_int(g.ctx, INT32_MAX - 20)), g.a));
	check_fixed(&c, &g);
}
END_TEST

/* A vectorized ramp's stride multiplied by large constants, a scalar
 * added between them so that the simplifier does not fold the factors
 * first: ((i*2^30 + A[0])*2^30 + A[0])*2^30 overflowed the vectorizer's
 * int64 stride (undefined; UBSan stops the test). */
START_TEST(test_ramp_stride_overflow)
{
	bcase c;
	gen g;
	case_begin(&c, &g, 4, ts_int32, ts_int64);
	ts_expr *a0 = TS_READ(g.ctx, c.args[0], ts_int(g.ctx, 0));
	ts_expr *big = ts_int(g.ctx, INT64_C(1) << 30);
	ts_expr *e = ts_mul(g.ctx, ts_add(g.ctx, ts_mul(g.ctx, g.i, big), a0), big);
	case_output(&c, &g, ts_mul(g.ctx, ts_add(g.ctx, e, a0), big));
	case_output(&c, &g, ts_sub(g.ctx, a0, ts_mul(g.ctx, ts_sub(g.ctx, a0, e), big)));
	check_fixed(&c, &g);
}
END_TEST

/* Bools compared with a constant ((i != 0) <= true): legal IR, which cc's
 * -Wall called always true. */
START_TEST(test_c_bool_compare)
{
	bcase c;
	gen g;
	case_begin(&c, &g, 3, ts_bool, ts_float32);
	ts_expr *nz = ts_ne(g.ctx, g.i, ts_int(g.ctx, 0)), *t = ts_const(g.ctx, ts_bool, 1);
	case_output(&c, &g, ts_le(g.ctx, nz, t));
	case_output(&c, &g, ts_select(g.ctx, ts_ge(g.ctx, g.a, ts_const(g.ctx, ts_bool, 0)), g.b, g.b));
	case_output(&c, &g, ts_gt(g.ctx, g.a, t));
	check_fixed(&c, &g);
}
END_TEST

/* Index arithmetic that wraps, in bounds as ir.h reads it: the C emitter
 * wrote an index's int64 and int32 + - * in C's signed arithmetic, which
 * overflows below a floormod (cc -O2 refused "iteration 2 invokes
 * undefined behavior") and a clamp; LLVM computed an int32 clamp's
 * operand in 64 bits, where 2147483647 + 1 is 2^31, clamped to 36, not
 * INT32_MIN, clamped to 0. */
START_TEST(test_index_wraps)
{
	bcase c;
	gen g;
	case_begin(&c, &g, 5, ts_uint8, ts_float32);
	ts_ctx *ctx = g.ctx;
	ts_expr *i64 = ts_cast(ctx, ts_int64, g.i), *n = ts_const(ctx, ts_int64, N);
	ts_expr *big = ts_sub(ctx, ts_mul(ctx, i64, ts_const(ctx, ts_int64, INT64_MAX - 1)),
			      ts_const(ctx, ts_int64, INT64_C(1) << 31));
	case_output(&c, &g, TS_READ(ctx, c.args[1], ts_floormod(ctx, big, n)));
	ts_expr *i30 = ts_add(ctx, ts_mul(ctx, g.i, ts_int(ctx, 1 << 30)), ts_int(ctx, 7));
	case_output(&c, &g, TS_READ(ctx, c.args[1], ts_floormod(ctx, i30, ts_int(ctx, N))));
	/* 2147483647 + a uint8 read of at least 1 wraps to a negative */
	ts_expr *a30 = ts_max(ctx, ts_cast(ctx, ts_int32, TS_READ(ctx, c.args[0], ts_int(ctx, 30))),
			      ts_int(ctx, 1));
	ts_expr *clamp = ts_max(ctx, ts_min(ctx, ts_add(ctx, ts_int(ctx, INT32_MAX), a30), ts_int(ctx, N - 1)),
				ts_int(ctx, 0));
	case_output(&c, &g, TS_READ(ctx, c.args[1], clamp));
	ts_expr *a64 = ts_cast(ctx, ts_int64, TS_READ(ctx, c.args[0], ts_int(ctx, 3)));
	clamp = ts_max(ctx, ts_min(ctx, ts_add(ctx, big, a64), ts_const(ctx, ts_int64, N - 1)),
		       ts_const(ctx, ts_int64, 0));
	case_output(&c, &g, TS_READ(ctx, c.args[1], clamp));
	check_fixed(&c, &g);
}
END_TEST

/* An index ramp multiplied past int64 over its lanes: int64(i) * 2^62
 * vectorized by 8 is no ramp the IR holds (ts_ramp refused it, and the
 * whole vectorization failed); its lanes are computed one by one. */
START_TEST(test_ramp_past_int64)
{
	bcase c;
	gen g;
	case_begin(&c, &g, 6, ts_int16, ts_float64);
	ts_ctx *ctx = g.ctx;
	ts_expr *r = ts_mul(ctx, ts_cast(ctx, ts_int64, g.i), ts_const(ctx, ts_int64, INT64_C(1) << 62));
	case_output(&c, &g, TS_READ(ctx, c.args[1], ts_floormod(ctx, r, ts_const(ctx, ts_int64, N))));
	r = ts_add(ctx, ts_mul(ctx, ts_cast(ctx, ts_int64, g.i), ts_const(ctx, ts_int64, INT64_MIN)),
		   ts_const(ctx, ts_int64, 5));
	case_output(&c, &g, TS_READ(ctx, c.args[0], ts_floormod(ctx, r, ts_const(ctx, ts_int64, N))));
	check_fixed(&c, &g);
}
END_TEST

/* A float32 constant that rounds to +0 (4.94e-324) minus float32(i): the
 * C emitter's guard against GCC 12 folding 0.0f - x into -x, -0 at i = 0,
 * looked at the unrounded double. */
START_TEST(test_c_tiny_minus)
{
	bcase c;
	gen g;
	case_begin(&c, &g, 7, ts_uint8, ts_float32);
	ts_ctx *ctx = g.ctx;
	ts_expr *d = ts_sub(ctx, ts_fconst(ctx, ts_float32, DBL_TRUE_MIN), ts_cast(ctx, ts_float32, g.i));
	case_output(&c, &g, d);
	case_output(&c, &g, ts_div(ctx, ts_fconst(ctx, ts_float32, 1.0), d));
	check_fixed(&c, &g);
}
END_TEST

/* A widening cast below an index's floormod: the vectorizer widened the
 * int32 ramp i*2^30 to an int64 ramp, as if its lanes did not wrap (lane
 * 2 read element 2^31 mod 37, not -2^31 mod 37). */
START_TEST(test_index_cast_wraps)
{
	bcase c;
	gen g;
	case_begin(&c, &g, 8, ts_int16, ts_float64);
	ts_ctx *ctx = g.ctx;
	ts_expr *r = ts_cast(ctx, ts_int64, ts_mul(ctx, g.i, ts_int(ctx, 1 << 30)));
	case_output(&c, &g, TS_READ(ctx, c.args[1], ts_floormod(ctx, r, ts_const(ctx, ts_int64, N))));
	r = ts_cast(ctx, ts_int32, ts_mul(ctx, ts_cast(ctx, ts_int8, g.i), ts_const(ctx, ts_int8, 100)));
	case_output(&c, &g, TS_READ(ctx, c.args[1], ts_floormod(ctx, r, ts_int(ctx, N))));
	check_fixed(&c, &g);
}
END_TEST


/* Index arithmetic that wraps, in bounds as ir.h reads it, with no
 * floormod or clamp above it: the C emitter wrote an index's own + - *
 * with C's operators, assuming that an in-bounds index cannot overflow.
 * UBSan stopped (int64(i)*2^32)*(int64(i)*2^32) + int64(i) ("4294967296 *
 * 4294967296 cannot be represented in type 'long int'"), and cc refused
 * the vectorized tail of i*2^30 + (i - i*2^30), whose constant
 * 32*1073741824 overflows int ("integer overflow in expression"). */
START_TEST(test_c_index_overflow)
{
	bcase c;
	gen g;
	case_begin(&c, &g, 9, ts_int32, ts_float32);
	ts_ctx *ctx = g.ctx;
	ts_expr *i64 = ts_cast(ctx, ts_int64, g.i), *k = ts_const(ctx, ts_int64, INT64_C(1) << 32);
	ts_expr *sq = ts_mul(ctx, ts_mul(ctx, i64, k), ts_mul(ctx, i64, k));
	case_output(&c, &g, TS_READ(ctx, c.args[1], ts_add(ctx, sq, i64)));
	ts_expr *big = ts_mul(ctx, g.i, ts_int(ctx, 1 << 30));
	case_output(&c, &g, TS_READ(ctx, c.args[1], ts_add(ctx, big, ts_sub(ctx, g.i, big))));
	check_fixed(&c, &g);
}
END_TEST

/* Index arithmetic whose int32 + - * leaves int32 and wraps back in
 * bounds (ir.h), as the read check allows: LLVM computed an int32 index's
 * + - * in 64 bits with no-signed-wrap, so (i*65536)*(i*65536) + i, which
 * wraps to i, read element i*2^32 + i and the JIT'd code crashed.  The
 * same wrap in a term the vectorized loop does not change, x =
 * (q*65536)*(q*65536) with q = i/8 (the split's outer variable), reaches
 * the vector paths: the base of a contiguous access (x + i), a broadcast
 * index (x + q), a term added to a clamp and the base of the clamped
 * ramp. */
START_TEST(test_llvm_index_wraps)
{
	bcase c;
	gen g;
	case_begin(&c, &g, 10, ts_int32, ts_float32);
	ts_ctx *ctx = g.ctx;
	ts_expr *k = ts_int(ctx, 65536);
	ts_expr *sq = ts_mul(ctx, ts_mul(ctx, g.i, k), ts_mul(ctx, g.i, k));
	case_output(&c, &g, TS_READ(ctx, c.args[1], ts_add(ctx, sq, g.i)));
	ts_expr *q = ts_floordiv(ctx, g.i, ts_int(ctx, 8));
	ts_expr *x = ts_mul(ctx, ts_mul(ctx, q, k), ts_mul(ctx, q, k));
	case_output(&c, &g, TS_READ(ctx, c.args[1], ts_add(ctx, x, g.i)));
	case_output(&c, &g, TS_READ(ctx, c.args[1], ts_add(ctx, x, q)));
	/* min(i + 5, 36) stays a clamp: i + 5 reaches 41 */
	ts_expr *clamp = ts_min(ctx, ts_add(ctx, g.i, ts_int(ctx, 5)), ts_int(ctx, N - 1));
	case_output(&c, &g, TS_READ(ctx, c.args[1], ts_add(ctx, clamp, x)));
	clamp = ts_min(ctx, ts_add(ctx, ts_add(ctx, g.i, x), ts_int(ctx, 5)), ts_int(ctx, N - 1));
	case_output(&c, &g, TS_READ(ctx, c.args[1], clamp));
	check_fixed(&c, &g);
}
END_TEST

/* The int64 analogue: (int64(i)*2^32)*(int64(i)*2^32) + int64(i) wraps
 * to int64(i), in a scalar index and in the vector paths. */
START_TEST(test_llvm_index64_wraps)
{
	bcase c;
	gen g;
	case_begin(&c, &g, 11, ts_int64, ts_float32);
	ts_ctx *ctx = g.ctx;
	ts_expr *i64 = ts_cast(ctx, ts_int64, g.i), *k = ts_const(ctx, ts_int64, INT64_C(1) << 32);
	ts_expr *sq = ts_mul(ctx, ts_mul(ctx, i64, k), ts_mul(ctx, i64, k));
	case_output(&c, &g, TS_READ(ctx, c.args[1], ts_add(ctx, sq, i64)));
	ts_expr *q = ts_cast(ctx, ts_int64, ts_floordiv(ctx, g.i, ts_int(ctx, 8)));
	ts_expr *x = ts_mul(ctx, ts_mul(ctx, q, k), ts_mul(ctx, q, k));
	case_output(&c, &g, TS_READ(ctx, c.args[1], ts_add(ctx, x, i64)));
	case_output(&c, &g, TS_READ(ctx, c.args[1], ts_add(ctx, x, q)));
	ts_expr *clamp = ts_min(ctx, ts_add(ctx, i64, ts_const(ctx, ts_int64, 5)),
				ts_const(ctx, ts_int64, N - 1));
	case_output(&c, &g, TS_READ(ctx, c.args[1], ts_add(ctx, clamp, x)));
	check_fixed(&c, &g);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("backends_random");
	TCase *tc = tcase_create("random");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_random_expressions);
	suite_add_tcase(s, tc);
	tc = tcase_create("found");
	tcase_add_test(tc, test_c_ub_is_caught);
	tcase_add_test(tc, test_c_float_constants);
	tcase_add_test(tc, test_c_ramp_wraps);
	tcase_add_test(tc, test_c_bool_compare);
	tcase_add_test(tc, test_ramp_stride_overflow);
	tcase_add_test(tc, test_index_wraps);
	tcase_add_test(tc, test_ramp_past_int64);
	tcase_add_test(tc, test_c_tiny_minus);
	tcase_add_test(tc, test_index_cast_wraps);
	tcase_add_test(tc, test_c_index_overflow);
	tcase_add_test(tc, test_llvm_index_wraps);
	tcase_add_test(tc, test_llvm_index64_wraps);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
