/* test_divsem.c - the defined corners of integer division and of float to
 * integer conversion (ir.h): x / 0 = x % 0 = 0, MIN / -1 = MIN, MIN % -1 = 0,
 * and casts that map NaN to 0 and saturate out-of-range values.
 *
 * Every integer dtype and every division kind runs a table of dividend /
 * divisor pairs through the constant folder, the reference evaluator, the
 * loop-IR interpreter, the LLVM JIT (a scalar schedule, and one vectorized
 * over 8 or 16 lanes whose divisor is a tensor read, so never a constant),
 * and the plain C emitter's output compiled with cc when one is present.
 * All must give the values computed here in 128-bit arithmetic; on code that
 * traps, the process dies of SIGFPE instead.  The CUDA dialect's helpers
 * are checked as text here and compiled by NVRTC in test_cuda.c. */
#include "testutil.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arith.h"
#include "build.h"
#include "c_emit.h"
#include "cg_kernels.h"
#include "interp.h"
#include "lower.h"
#include "schedule.h"
#include "vectorize.h"

#define MAX_PAIRS 40
#define MAX_OUTS 8

static const ir_expr_kind kinds[4] = {IR_TRUNCDIV, IR_TRUNCMOD, IR_FLOORDIV, IR_FLOORMOD};

static const ts_dtype int_dtypes[] = {
	TS_DTYPE(TS_TYPE_INT, 8),   TS_DTYPE(TS_TYPE_INT, 16),  TS_DTYPE(TS_TYPE_INT, 32),
	TS_DTYPE(TS_TYPE_INT, 64),  TS_DTYPE(TS_TYPE_UINT, 8),  TS_DTYPE(TS_TYPE_UINT, 16),
	TS_DTYPE(TS_TYPE_UINT, 32), TS_DTYPE(TS_TYPE_UINT, 64),
};

/* ---- expected values ------------------------------------------------------------ */

__extension__ typedef __int128 i128;

/* v wrapped to t's width, in the canonical int64 form of ts_elem_get_i64. */
static int64_t wrap_to(ts_dtype t, i128 v)
{
	uint64_t buf = 0;
	ts_elem_set_i64(&buf, t, 0, (int64_t)(uint64_t)v);
	return ts_elem_get_i64(&buf, t, 0);
}

static i128 value_of(ts_dtype t, int64_t v)
{
	return t.code == TS_TYPE_UINT ? (i128)(uint64_t)v : (i128)v;
}

static int64_t expect_div(ir_expr_kind k, ts_dtype t, int64_t a, int64_t b)
{
	i128 x = value_of(t, a), y = value_of(t, b);
	if (y == 0)
		return 0;
	i128 q = x / y, r = x % y;
	if ((k == IR_FLOORDIV || k == IR_FLOORMOD) && r != 0 && ((r < 0) != (y < 0))) {
		q -= 1;
		r += y;
	}
	return wrap_to(t, k == IR_TRUNCDIV || k == IR_FLOORDIV ? q : r);
}

static int64_t dt_min(ts_dtype t)
{
	return t.code == TS_TYPE_UINT ? 0 : (int64_t)((uint64_t)-1 << (t.bits - 1));
}

static int64_t dt_max(ts_dtype t)
{
	if (t.code == TS_TYPE_UINT)
		return t.bits == 64 ? -1 : (int64_t)((UINT64_C(1) << t.bits) - 1);
	return (int64_t)((UINT64_C(1) << (t.bits - 1)) - 1);
}

/* NaN -> 0, saturation at the dtype's ends, truncation toward zero. */
static int64_t expect_cast(ts_dtype t, double v)
{
	if (isnan(v))
		return 0;
	double w = trunc(v);
	bool u = t.code == TS_TYPE_UINT;
	double end = ldexp(1.0, u ? t.bits : t.bits - 1); /* first value past the max */
	if (w >= end)
		return dt_max(t);
	if (u)
		return w <= 0 ? 0 : (int64_t)(uint64_t)w;
	return w <= -end ? dt_min(t) : (int64_t)w;
}

typedef struct pair {
	int64_t a, b;
} pair;

/* Zero divisors, -1 divisors of MIN, negative operands, the dtype's ends. */
static int table(ts_dtype t, pair *p)
{
	int64_t lo = dt_min(t), hi = dt_max(t);
	if (t.code == TS_TYPE_UINT) {
		const pair u[] = {{7, 2}, {7, 0}, {0, 0}, {hi, 0}, {hi, 1}, {hi, hi}, {hi, 2},
				  {200, 7}, {5, hi}, {1, 0}, {0, 3}, {6, 3}, {hi - 1, hi}};
		memcpy(p, u, sizeof(u));
		return (int)TS_COUNT_OF(u);
	}
	const pair s[] = {{7, 2}, {-7, 2}, {7, -2}, {-7, -2}, {7, 0}, {-7, 0}, {0, 0},
			  {lo, -1}, {lo, 0}, {lo, 1}, {lo, 2}, {lo, -2}, {lo, lo}, {lo, hi},
			  {hi, -1}, {hi, lo}, {hi, 0}, {-1, lo}, {5, -1}, {-5, -1}, {0, -1},
			  {3, 7}, {-3, 7}, {3, -7}, {-3, -7}, {6, 3}, {-6, -3}, {1, -1},
			  {lo + 1, -1}, {hi, 1}};
	memcpy(p, s, sizeof(s));
	return (int)TS_COUNT_OF(s);
}

static const double cast_values[] = {
	NAN, INFINITY, -INFINITY, 1e30, -1e30, 3.7, -3.7, -0.7, 0.0, 127.9, 128.0, -128.9,
	-129.0, 255.5, 256.0, -1.0, 65535.5, 65536.0, -32768.5, -32769.0, 2147483520.0,
	2147483648.0, -2147483648.0, -2147483904.0, 4294967296.0, 9.3e18, -9.3e18, 1.8e19,
	2e19, -2e19,
};

static const ts_dtype cast_targets[MAX_OUTS] = {
	TS_DTYPE(TS_TYPE_INT, 8),  TS_DTYPE(TS_TYPE_INT, 16), TS_DTYPE(TS_TYPE_INT, 32),
	TS_DTYPE(TS_TYPE_INT, 64), TS_DTYPE(TS_TYPE_UINT, 8), TS_DTYPE(TS_TYPE_UINT, 16),
	TS_DTYPE(TS_TYPE_UINT, 32), TS_DTYPE(TS_TYPE_UINT, 64),
};

/* ---- a case: inputs, outputs, and its expected values ------------------------------- */

typedef struct kcase {
	ts_ctx *ctx;
	const char *what;
	int nin, nout;
	int64_t n;
	ts_tensor *in[2], *out[MAX_OUTS];
	ts_array *in_data[2];
	int64_t *want[MAX_OUTS]; /* n values per output */
} kcase;

static void case_free(kcase *c)
{
	for (int i = 0; i < c->nin; i++)
		ts_array_free(c->in_data[i]);
	for (int o = 0; o < c->nout; o++)
		free(c->want[o]);
}

static ts_tensor *placeholder(ts_ctx *ctx, const char *name, int64_t n, ts_dtype t)
{
	ts_tensor *p = ts_placeholder(ctx, name, TS_SHAPE(n), t);
	tu_nonnull(ctx, p);
	return p;
}

static ts_tensor *compute(ts_ctx *ctx, const char *name, int64_t n, ts_expr *i, ts_expr *body)
{
	tu_nonnull(ctx, body);
	ts_tensor *t = ts_compute(ctx, name, TS_SHAPE(n), TS_VARS(i), body);
	tu_nonnull(ctx, t);
	return t;
}

/* C0..C3 = A op B for the four division kinds; n elements cycle the table. */
static kcase div_case(ts_ctx *ctx, ts_dtype t, int64_t n)
{
	static const char *const names[4] = {"TD", "TM", "FD", "FM"};
	kcase c = {.ctx = ctx, .nin = 2, .nout = 4, .n = n};
	pair p[MAX_PAIRS];
	int np = table(t, p);
	c.in[0] = placeholder(ctx, "A", n, t);
	c.in[1] = placeholder(ctx, "B", n, t);
	ts_expr *i = ts_var(ctx, "i");
	for (int k = 0; k < 4; k++)
		c.out[k] = compute(ctx, names[k], n, i,
				   ts_binary(ctx, kinds[k], TS_READ(ctx, c.in[0], i), TS_READ(ctx, c.in[1], i)));
	for (int s = 0; s < 2; s++)
		c.in_data[s] = ts_array_for(ctx, c.in[s]);
	for (int k = 0; k < 4; k++)
		c.want[k] = malloc((size_t)n * sizeof(int64_t));
	for (int64_t e = 0; e < n; e++) {
		const pair *q = &p[e % np];
		ts_elem_set_i64(c.in_data[0]->data, t, e, q->a);
		ts_elem_set_i64(c.in_data[1]->data, t, e, q->b);
		for (int k = 0; k < 4; k++)
			c.want[k][e] = expect_div(kinds[k], t, q->a, q->b);
	}
	return c;
}

/* One output per integer dtype: cast(A[i]) with A float32 or float64. */
static kcase cast_case(ts_ctx *ctx, ts_dtype from, int64_t n)
{
	kcase c = {.ctx = ctx, .nin = 1, .nout = MAX_OUTS, .n = n};
	c.in[0] = placeholder(ctx, "A", n, from);
	ts_expr *i = ts_var(ctx, "i");
	for (int o = 0; o < MAX_OUTS; o++) {
		char name[8];
		snprintf(name, sizeof(name), "C%d", o);
		c.out[o] = compute(ctx, ts_strdup(ctx, name), n, i,
				   ts_cast(ctx, cast_targets[o], TS_READ(ctx, c.in[0], i)));
	}
	c.in_data[0] = ts_array_for(ctx, c.in[0]);
	for (int o = 0; o < MAX_OUTS; o++)
		c.want[o] = malloc((size_t)n * sizeof(int64_t));
	for (int64_t e = 0; e < n; e++) {
		ts_elem_set_f64(c.in_data[0]->data, from, e,
				cast_values[e % (int64_t)TS_COUNT_OF(cast_values)]);
		double v = ts_elem_get_f64(c.in_data[0]->data, from, e); /* as rounded */
		for (int o = 0; o < MAX_OUTS; o++)
			c.want[o][e] = expect_cast(cast_targets[o], v);
	}
	return c;
}

/* Every output split by `lanes` and vectorized (0: the default schedule). */
static ts_func *lower(kcase *c, int lanes)
{
	ts_schedule *s = ts_create_schedule(c->ctx, c->nout, c->out);
	tu_nonnull(c->ctx, s);
	for (int o = 0; o < c->nout && lanes; o++) {
		ts_stage *st = ts_stage_of(s, c->out[o]);
		ts_axis *outer, *inner;
		tu_ok(c->ctx, ts_split(st, ts_axis_of(st, 0), lanes, &outer, &inner));
		tu_ok(c->ctx, ts_vectorize(st, inner));
	}
	ts_tensor *args[2 + MAX_OUTS];
	for (int i = 0; i < c->nin; i++)
		args[i] = c->in[i];
	for (int o = 0; o < c->nout; o++)
		args[c->nin + o] = c->out[o];
	ts_func *f = ts_lower(s, "divsem", c->nin + c->nout, args);
	tu_nonnull(c->ctx, f);
	return f;
}

/* ---- running a case ------------------------------------------------------------ */

typedef struct outputs {
	int n;
	ts_array *a[2 + MAX_OUTS]; /* inputs, then outputs */
	void *data[2 + MAX_OUTS];
} outputs;

/* Outputs start as a pattern no answer equals everywhere. */
static outputs outputs_new(kcase *c)
{
	outputs r = {.n = c->nin + c->nout};
	for (int i = 0; i < c->nin; i++)
		r.a[i] = c->in_data[i];
	for (int o = 0; o < c->nout; o++) {
		ts_array *a = ts_array_for(c->ctx, c->out[o]);
		memset(a->data, 0x5a, ts_array_nbytes(a));
		r.a[c->nin + o] = a;
	}
	for (int i = 0; i < r.n; i++)
		r.data[i] = r.a[i]->data;
	return r;
}

static double input_at(const kcase *c, int i, int64_t e)
{
	return i < c->nin ? ts_elem_get_f64(c->in_data[i]->data, c->in_data[i]->dtype, e) : 0;
}

static void outputs_check(kcase *c, outputs *r, const char *path)
{
	for (int o = 0; o < c->nout; o++) {
		const ts_array *a = r->a[c->nin + o];
		for (int64_t e = 0; e < c->n; e++) {
			int64_t got = ts_elem_get_i64(a->data, a->dtype, e);
			ck_assert_msg(got == c->want[o][e],
				      "%s, %s: %s[%lld] is %lld, want %lld (A = %.17g, B = %.17g)",
				      c->what, path, c->out[o]->name, (long long)e, (long long)got,
				      (long long)c->want[o][e], input_at(c, 0, e), input_at(c, 1, e));
		}
		ts_array_free(r->a[c->nin + o]);
	}
}

static void run_eval(kcase *c)
{
	outputs r = outputs_new(c);
	ts_tensor *bind[2 + MAX_OUTS];
	for (int i = 0; i < c->nin; i++)
		bind[i] = c->in[i];
	for (int o = 0; o < c->nout; o++)
		bind[c->nin + o] = c->out[o];
	tu_ok(c->ctx, ts_eval(c->ctx, r.n, bind, r.data));
	outputs_check(c, &r, "evaluator");
}

static void run_interp(kcase *c, const ts_func *f, const char *path)
{
	outputs r = outputs_new(c);
	tu_ok(c->ctx, cg_interp_run(c->ctx, f, r.data));
	outputs_check(c, &r, path);
}

static void run_llvm(kcase *c, const ts_func *f, const char *path)
{
	ts_module *m = ts_build(c->ctx, f, "llvm");
	tu_nonnull(c->ctx, m);
	outputs r = outputs_new(c);
	tu_ok(c->ctx, ts_module_run(m, r.n, r.a));
	outputs_check(c, &r, path);
	ts_module_free(m);
}

/* ---- compiled C ------------------------------------------------------------------ */

static void run_c(kcase *c, const ts_func *f, const char *path)
{
	const char *src = cg_emit_c(c->ctx, f);
	tu_nonnull(c->ctx, src);
	if (!tu_have_cc())
		return;
	char dir[64];
	void *lib = tu_cc_load_with(src, tu_cc_sanitize_flags(), dir); /* UB stops the test */
	int32_t (*fn)(void **) = (int32_t (*)(void **))dlsym(lib, "divsem_packed");
	ck_assert_msg(fn != NULL, "no divsem_packed in the compiled C");
	outputs r = outputs_new(c);
	ck_assert_int_eq(fn(r.data), 0);
	outputs_check(c, &r, path);
	tu_cc_unload(lib, dir);
}

/* f after the vectorizer, as the CPU backends see it; where the lanes
 * divide n, it must hold vector accesses. */
static ts_func *vectorized(kcase *c, const ts_func *f, int lanes)
{
	ts_func *v = ts_alloc(c->ctx, sizeof(*v));
	tu_nonnull(c->ctx, v);
	*v = *f;
	v->body = cg_vectorize(c->ctx, f->body);
	tu_nonnull(c->ctx, v->body);
	char ramp[32];
	snprintf(ramp, sizeof(ramp), ", 1, %d)]", lanes); /* a vector load's index */
	ck_assert_msg(c->n % lanes != 0 || strstr(ir_func_str(c->ctx, v), ramp) != NULL,
		      "%s: no %d-lane access in the vectorized function:\n%s", c->what, lanes,
		      ir_func_str(c->ctx, v));
	return v;
}

/* Every path, scalar and over `lanes` lanes. */
static void run_all(kcase *c, int lanes)
{
	run_eval(c);
	ts_func *scalar = lower(c, 0), *vec = lower(c, lanes), *vx = vectorized(c, vec, lanes);
	run_interp(c, scalar, "interpreter");
	run_interp(c, vx, "interpreter, vectorized");
	run_llvm(c, scalar, "LLVM");
	run_llvm(c, vec, "LLVM, vectorized");
	run_c(c, scalar, "C");
	run_c(c, vx, "C, vectorized");
}

/* ---- division ---------------------------------------------------------------------- */

static int lanes_for(ts_dtype t)
{
	return t.bits <= 16 ? 16 : 8;
}

START_TEST(test_division_every_path)
{
	ts_dtype t = int_dtypes[_i];
	const int64_t sizes[] = {64, 61}; /* one the lanes divide, one they do not */
	for (size_t s = 0; s < TS_COUNT_OF(sizes); s++) {
		ts_ctx *ctx = ts_ctx_new();
		kcase c = div_case(ctx, t, sizes[s]);
		char b[24], what[64];
		snprintf(what, sizeof(what), "%s, n = %lld", ts_dtype_str(t, b), (long long)sizes[s]);
		c.what = what;
		run_all(&c, lanes_for(t));
		case_free(&c);
		ts_ctx_free(ctx);
	}
}
END_TEST

/* Division of two immediates: the folder and the simplifier give the same
 * answers as run time. */
START_TEST(test_division_folds)
{
	ts_dtype t = int_dtypes[_i];
	ts_ctx *ctx = ts_ctx_new();
	pair p[MAX_PAIRS];
	int np = table(t, p);
	for (int i = 0; i < np; i++) {
		for (int k = 0; k < 4; k++) {
			ts_expr *e = ts_binary(ctx, kinds[k], ts_const(ctx, t, p[i].a), ts_const(ctx, t, p[i].b));
			tu_nonnull(ctx, e);
			ts_expr *f = ir_fold_const(ctx, e), *s = ir_simplify(ctx, e, 0, NULL);
			int64_t want = expect_div(kinds[k], t, p[i].a, p[i].b);
			char b[24];
			ck_assert_msg(f && f->kind == IR_INT_IMM && s && s->kind == IR_INT_IMM,
				      "%s %s(%lld, %lld) does not fold", ts_dtype_str(t, b),
				      ir_expr_kind_name(kinds[k]), (long long)p[i].a, (long long)p[i].b);
			ck_assert_msg(wrap_to(t, f->u.int_imm) == want && wrap_to(t, s->u.int_imm) == want,
				      "%s %s(%lld, %lld): folds to %lld / simplifies to %lld, want %lld",
				      ts_dtype_str(t, b), ir_expr_kind_name(kinds[k]), (long long)p[i].a,
				      (long long)p[i].b, (long long)f->u.int_imm, (long long)s->u.int_imm,
				      (long long)want);
		}
	}
	ts_ctx_free(ctx);
}
END_TEST

/* ---- float to integer ------------------------------------------------------------ */

static void cast_every_path(ts_dtype from)
{
	const int64_t sizes[] = {64, 61};
	for (size_t s = 0; s < TS_COUNT_OF(sizes); s++) {
		ts_ctx *ctx = ts_ctx_new();
		kcase c = cast_case(ctx, from, sizes[s]);
		char b[24], what[64];
		snprintf(what, sizeof(what), "cast from %s, n = %lld", ts_dtype_str(from, b),
			 (long long)sizes[s]);
		c.what = what;
		run_all(&c, from.bits == 32 ? 16 : 8);
		case_free(&c);
		ts_ctx_free(ctx);
	}
}

START_TEST(test_cast_float32_every_path)
{
	cast_every_path(ts_float32);
}
END_TEST

START_TEST(test_cast_float64_every_path)
{
	cast_every_path(ts_float64);
}
END_TEST

/* The 16-bit floats exist in the evaluators only; same rule (float16 holds
 * at most 65504, so only infinities saturate the wide integers). */
static void cast_evaluators(ts_dtype from)
{
	ts_ctx *ctx = ts_ctx_new();
	kcase c = cast_case(ctx, from, 64);
	c.what = "cast from a 16-bit float";
	run_eval(&c);
	run_interp(&c, lower(&c, 0), "interpreter");
	case_free(&c);
	ts_ctx_free(ctx);
}

START_TEST(test_cast_half_evaluators)
{
	cast_evaluators(ts_float16);
	cast_evaluators(ts_bfloat16);
}
END_TEST

START_TEST(test_cast_folds)
{
	ts_ctx *ctx = ts_ctx_new();
	const ts_dtype froms[] = {ts_float32, ts_float64};
	for (size_t f = 0; f < TS_COUNT_OF(froms); f++) {
		for (size_t v = 0; v < TS_COUNT_OF(cast_values); v++) {
			for (int o = 0; o < MAX_OUTS; o++) {
				ts_dtype t = cast_targets[o];
				ts_expr *x = ts_fconst(ctx, froms[f], cast_values[v]);
				double rounded = ir_round_float(froms[f], cast_values[v]);
				ts_expr *e = ir_fold_const(ctx, ts_cast(ctx, t, x));
				char b[24];
				ck_assert_msg(e && e->kind == IR_INT_IMM, "cast to %s of %g does not fold",
					      ts_dtype_str(t, b), cast_values[v]);
				ck_assert_msg(wrap_to(t, e->u.int_imm) == expect_cast(t, rounded),
					      "cast to %s of %.17g folds to %lld, want %lld",
					      ts_dtype_str(t, b), rounded, (long long)e->u.int_imm,
					      (long long)expect_cast(t, rounded));
			}
		}
	}
	ts_ctx_free(ctx);
}
END_TEST

/* ---- generated text -------------------------------------------------------------- */

/* Constant divisors other than 0 and -1 keep the plain operators; a tensor
 * divisor goes through the guarded helper, in both dialects. */
START_TEST(test_c_guards_only_variable_divisors)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_func *f = kg_divsem(ctx);
	const char *c = cg_emit_c(ctx, f), *cu = cg_emit_cuda(ctx, f, NULL);
	tu_nonnull(ctx, c);
	tu_nonnull(ctx, cu);
	static const char *const want[] = {
		"ts_truncdiv_z_i32(A[", "ts_truncmod_z_i32(A[", "ts_floordiv_z_i64(",
		"ts_floormod_z_i64(", "ts_cast_f32_i32(", "ts_floordiv_i32(A[i], 8)",
		"A[i]/7", "ts_truncdiv_z_i32(A[i], 0)", "ts_floormod_z_i32(A[i], -1)",
	};
	for (size_t i = 0; i < TS_COUNT_OF(want); i++) {
		ck_assert_msg(strstr(c, want[i]) != NULL, "no '%s' in the C:\n%s", want[i], c);
		ck_assert_msg(strstr(cu, want[i]) != NULL, "no '%s' in the CUDA C:\n%s", want[i], cu);
	}
	ck_assert_msg(strstr(c, "static inline int32_t ts_truncdiv_z_i32(int32_t a, int32_t b)"),
		      "%s", c);
	ck_assert_msg(strstr(cu, "static __device__ __forceinline__ int ts_truncdiv_z_i32(int a, int b)"),
		      "%s", cu);
	ts_ctx_free(ctx);
}
END_TEST

/* A vectorized divisor with a lane known to be 0 (i * x at lane 0): LLVM
 * 14's instcombine took the guard's select for one arm in every lane, and
 * 1 / [0, 1, 2, 3] came out [0, 1, 1, 1].  Every division kind and width,
 * against the evaluator. */
START_TEST(test_vector_divisor_zero_lane)
{
	for (int w = 0; w < 2; w++)
		for (int k = 0; k < 4; k++) {
			ts_ctx *ctx = ts_ctx_new();
			ts_dtype t = w ? ts_int64 : ts_int32;
			ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(8), ts_int32);
			ts_expr *i = ts_var(ctx, "i");
			ts_expr *den = ts_mul(ctx, ts_cast(ctx, t, i),
					      ts_cast(ctx, t, ts_ne(ctx, TS_READ(ctx, B, i), ts_int(ctx, 5))));
			ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(8), TS_VARS(i),
						  ts_binary(ctx, kinds[k], ts_const(ctx, t, 7), den));
			ts_schedule *s = ts_create_schedule(ctx, 1, &C);
			/* the whole axis one vector: lane 0 of i is the constant 0 */
			tu_ok(ctx, ts_vectorize(ts_stage_of(s, C), ts_axis_of(ts_stage_of(s, C), 0)));
			ts_func *f = ts_lower(s, "div", 2, (ts_tensor *[]){B, C});
			tu_nonnull(ctx, f);
			tu_check_func_llvm(ctx, f, NULL, 0);
			ts_ctx_free(ctx);
		}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("divsem");
	TCase *tc = tcase_create("division");
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_division_every_path, 0, (int)TS_COUNT_OF(int_dtypes));
	tcase_add_loop_test(tc, test_division_folds, 0, (int)TS_COUNT_OF(int_dtypes));
	tcase_add_test(tc, test_vector_divisor_zero_lane);
	suite_add_tcase(s, tc);
	tc = tcase_create("cast");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_cast_float32_every_path);
	tcase_add_test(tc, test_cast_float64_every_path);
	tcase_add_test(tc, test_cast_half_evaluators);
	tcase_add_test(tc, test_cast_folds);
	suite_add_tcase(s, tc);
	tc = tcase_create("text");
	tcase_add_test(tc, test_c_guards_only_variable_divisors);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
