/* test_c_emit.c - plain C and CUDA C emission, and barrier insertion.
 *
 * Golden texts pin the generated sources; the plain C is also compiled with
 * the system compiler (-Wall -Werror), loaded and run against reference
 * loops written here, when a compiler is present. */
#include "testutil.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cg_kernels.h"

typedef int32_t (*packed_fn)(void **args);

/* ---- compiling generated C ---------------------------------------------------- */

static bool have_cc(void)
{
	return system("cc --version >/dev/null 2>&1") == 0;
}

typedef struct built {
	char dir[64];
	void *lib;
} built;

static void write_source(const char *dir, const char *src)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/k.c", dir);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(src, f);
	fclose(f);
}

/* Compiles src with `cc flags`; a failure shows the compiler's messages. */
static void cc(const char *dir, const char *flags)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "cd %s && cc -std=c11 -Wall -Werror %s >cc.log 2>&1", dir, flags);
	if (system(cmd) != 0) {
		char log[2048] = "";
		snprintf(cmd, sizeof(cmd), "%s/cc.log", dir);
		FILE *f = fopen(cmd, "r");
		if (f) {
			size_t n = fread(log, 1, sizeof(log) - 1, f);
			log[n] = '\0';
			fclose(f);
		}
		ck_abort_msg("cc %s failed:\n%s", flags, log);
	}
}

/* Checks that src compiles as is and with OpenMP, then builds and loads it. */
static built build(const char *src)
{
	built b = {.lib = NULL};
	strcpy(b.dir, "/tmp/tessera_c_XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(b.dir));
	write_source(b.dir, src);
	cc(b.dir, "-c k.c -o plain.o");
	cc(b.dir, "-O1 -c k.c -o o1.o"); /* where GCC's flow warnings differ from -O2's */
	cc(b.dir, "-fopenmp -c k.c -o omp.o");
	/* run under UBSan: the generated code must have no undefined behaviour */
	char so[256];
	snprintf(so, sizeof(so), "-O2 %s -fPIC -shared k.c -o k.so -lm", tu_cc_sanitize_flags());
	cc(b.dir, so);
	char path[128];
	snprintf(path, sizeof(path), "%s/k.so", b.dir);
	b.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(b.lib != NULL, "dlopen: %s", dlerror());
	return b;
}

static void unbuild(built *b)
{
	static const char *const files[] = {"k.c", "cc.log", "plain.o", "o1.o", "omp.o", "k.so"};
	char path[128];
	if (b->lib)
		dlclose(b->lib);
	for (size_t i = 0; i < TS_COUNT_OF(files); i++) {
		snprintf(path, sizeof(path), "%s/%s", b->dir, files[i]);
		unlink(path);
	}
	rmdir(b->dir);
}

static packed_fn packed(built *b, const char *name)
{
	char sym[64];
	snprintf(sym, sizeof(sym), "%s_packed", name);
	packed_fn fn = (packed_fn)dlsym(b->lib, sym);
	ck_assert_msg(fn != NULL, "missing %s", sym);
	return fn;
}

static ts_array *rand_f32(int64_t n, uint64_t seed, double lo, double hi)
{
	ts_array *a = ts_array_new(NULL, ts_float32, 1, &n);
	ts_array_fill_random(a, seed, lo, hi);
	return a;
}

/* ---- plain C ------------------------------------------------------------------ */

START_TEST(test_c_vadd)
{
	ts_ctx *ctx = ts_ctx_new();
	const char *src = cg_emit_c(ctx, kg_vadd(ctx));
	ck_assert_msg(src != NULL, "%s", ts_last_error(ctx));
	tu_assert_golden("c_vadd.txt", src);
	if (have_cc()) {
		built b = build(src);
		ts_array *A = rand_f32(1003, 1, -5, 5), *B = rand_f32(1003, 2, -5, 5);
		ts_array *C = rand_f32(1003, 3, 0, 1), *want = rand_f32(1003, 4, 0, 1);
		float *a = A->data, *bb = B->data, *w = want->data;
		for (int i = 0; i < 1003; i++)
			w[i] = a[i] + bb[i];
		ck_assert_int_eq(packed(&b, "vadd")((void *[]){A->data, B->data, C->data}), 0);
		tu_assert_close(C, want, 0, 0);
		ts_array_free(A), ts_array_free(B), ts_array_free(C), ts_array_free(want);
		unbuild(&b);
	}
	ts_ctx_free(ctx);
}
END_TEST

/* Integer helpers, every intrinsic, select and logic, a let, and a vector
 * (ramp / broadcast) store. */
static ts_func *build_misc(ts_ctx *ctx)
{
	ts_buffer *X = kg_buf(ctx, "X", ts_float32, 64, 0, TS_SCOPE_GLOBAL);
	ts_buffer *I = kg_buf(ctx, "I", ts_int32, 64, 0, TS_SCOPE_GLOBAL);
	ts_buffer *Y = kg_buf(ctx, "Y", ts_float32, 64, 0, TS_SCOPE_GLOBAL);
	ts_buffer *J = kg_buf(ctx, "J", ts_int32, 64, 0, TS_SCOPE_GLOBAL);
	ts_buffer *Z = kg_buf(ctx, "Z", ts_float32, 64, 0, TS_SCOPE_GLOBAL);
	ts_expr *i = ts_var(ctx, "i"), *q = ts_var(ctx, "q");
	ts_expr *x = ts_var_typed(ctx, "x", ts_float32);
	ts_expr *n = ts_load(ctx, I, i);
	ts_expr *ints[] = {
		ts_mul(ctx, ts_floordiv(ctx, n, KI(3)), KI(100)), ts_floormod(ctx, n, KI(-4)),
		ts_min(ctx, n, KI(5)), ts_sub(ctx, KI(0), ts_max(ctx, n, KI(-5))),
		ts_truncdiv(ctx, n, KI(7)), ts_truncmod(ctx, n, KI(5)),
	};
	ts_expr *jv = ints[0];
	for (int k = 1; k < 6; k++)
		jv = ts_add(ctx, jv, ints[k]);
	ts_expr *ax = ts_fabs(ctx, x);
	ts_expr *cond = ts_or(ctx, ts_and(ctx, ts_gt(ctx, x, ts_float(ctx, 0.5)),
					  ts_not(ctx, ts_gt(ctx, x, ts_float(ctx, 1.5)))),
			      ts_lt(ctx, x, ts_float(ctx, -1)));
	ts_expr *t = ts_add(ctx, ts_add(ctx, ts_exp(ctx, x), ts_sigmoid(ctx, x)),
			    ts_log(ctx, ts_add(ctx, ax, ts_float(ctx, 1))));
	ts_expr *f = ts_max(ctx, ts_sqrt(ctx, ax), ts_tanh(ctx, x));
	ts_expr *yv = ts_add(ctx, ts_select(ctx, cond, t, f),
			     ts_mul(ctx, ts_pow(ctx, ax, ts_float(ctx, 1.5)), ts_erf(ctx, x)));
	ts_expr *fl = ts_call(ctx, IR_INTRIN_FLOOR, 1, (ts_expr *[]){ts_mul(ctx, x, ts_float(ctx, 3))});
	ts_expr *ce = ts_call(ctx, IR_INTRIN_CEIL, 1, (ts_expr *[]){ts_mul(ctx, x, ts_float(ctx, 2))});
	yv = ts_add(ctx, ts_add(ctx, ts_sub(ctx, ts_add(ctx, yv, fl), ce), ts_exp2(ctx, x)),
		    ts_cast(ctx, ts_float32, n));
	ts_stmt *body = ir_seq2(ctx, ir_store(ctx, J, i, jv),
				ir_let(ctx, x, ts_load(ctx, X, i), ir_store(ctx, Y, i, yv)));
	ts_expr *rq = ts_ramp(ctx, ts_mul(ctx, q, KI(4)), 1, 4);
	ts_expr *zv = ts_add(ctx, ts_mul(ctx, ts_load(ctx, X, rq), ts_broadcast(ctx, ts_float(ctx, 2.5), 4)),
			     ts_cast(ctx, ts_dtype_with_lanes(ts_float32, 4), rq));
	ts_stmt *vec = kg_loop(ctx, q, 16, TS_FOR_SERIAL, ir_store(ctx, Z, rq, zv));
	return kg_func(ctx, "misc", 5, (ts_buffer *[]){X, I, Y, J, Z},
		       ir_seq2(ctx, kg_loop(ctx, i, 64, TS_FOR_SERIAL, body), vec));
}

static int32_t ref_floordiv(int32_t a, int32_t b)
{
	return (int32_t)floor((double)a / b);
}

static float ref_misc_y(float x, int32_t n)
{
	float ax = fabsf(x), y;
	if ((x > 0.5f && !(x > 1.5f)) || x < -1.0f)
		y = expf(x) + 1.0f / (1.0f + expf(-x)) + logf(ax + 1.0f);
	else
		y = fmaxf(sqrtf(ax), tanhf(x));
	y = y + powf(ax, 1.5f) * erff(x);
	return y + floorf(x * 3.0f) - ceilf(x * 2.0f) + exp2f(x) + (float)n;
}

/* C[i, j] = sum_k P[i, k] B[k, j] with P = A + 1 computed at C's inner
 * column loop, whose partitioned tail leaves a copy of P written and never
 * read; and a float32 constant beyond float's range.  Both once made cc
 * -Wall warn ("set but not used", "floating constant exceeds range"). */
START_TEST(test_c_warning_free)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(17, 3), ts_int8);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(3, 8), ts_int8);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_tensor *P = ts_compute(ctx, "P", TS_SHAPE(17, 3), TS_VARS(i, j),
				  ts_add(ctx, TS_READ(ctx, A, i, j), ts_const(ctx, ts_int8, 1)));
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 3);
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(17, 8), TS_VARS(i, j),
				  TS_SUM(ctx, ts_mul(ctx, TS_READ(ctx, P, i, k->var), TS_READ(ctx, B, k->var, j)), k));
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(2, 3), ts_float32);
	ts_expr *u = ts_var(ctx, "u"), *v = ts_var(ctx, "v");
	ts_tensor *Y = ts_compute(ctx, "Y", TS_SHAPE(2, 3), TS_VARS(u, v),
				  ts_min(ctx, TS_READ(ctx, X, u, v), ts_make_const(ctx, ts_float32, 1e300)));
	ts_tensor *outs[2] = {C, Y};
	ts_schedule *s = ts_create_schedule(ctx, 2, outs);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *jo, *ji;
	tu_ok(ctx, ts_split_tail(sc, ts_axis_of(sc, 1), 5, TS_TAIL_PARTITION, &jo, &ji));
	tu_ok(ctx, ts_reorder(sc, TS_AXES(jo, ts_reduce_axis_of(sc, 0), ji)));
	tu_ok(ctx, ts_compute_at(ts_stage_of(s, P), sc, ji));
	ts_func *f = ts_lower(s, "warn", 5, (ts_tensor *[]){A, B, X, C, Y});
	tu_check_func(ctx, f, 0);
	const char *src = cg_emit_c(ctx, f);
	ck_assert_msg(src != NULL, "%s", ts_last_error(ctx));
	ck_assert_msg(!strstr(src, "e+300"), "an out-of-range float literal: %s", src);
	if (have_cc()) {
		built b = build(src);
		unbuild(&b);
	}
	ts_ctx_free(ctx);

	/* C[ci] = sum_k P[ci] * k with P = min_r A[ci, r] cached (P.global)
	 * at C's k but stored at ci: the window does not move, so the cache
	 * is written at k == 0 only, and read at every k (GCC -O1 saw a read
	 * that might come first) */
	ctx = ts_ctx_new();
	A = ts_placeholder(ctx, "A", TS_SHAPE(8, 13), ts_float32);
	ts_iter *r = ts_reduce_axis(ctx, "r", 0, 13), *kk = ts_reduce_axis(ctx, "kk", 0, 5);
	i = ts_var(ctx, "i");
	P = ts_compute(ctx, "P", TS_SHAPE(8), TS_VARS(i), TS_MIN(ctx, TS_READ(ctx, A, i, r->var), r));
	C = ts_compute(ctx, "C", TS_SHAPE(8), TS_VARS(i),
		       TS_SUM(ctx, ts_mul(ctx, TS_READ(ctx, P, i), ts_cast(ctx, ts_float32, kk->var)), kk));
	s = ts_create_schedule(ctx, 1, &C);
	ts_tensor *PG = ts_cache_read(s, P, TS_SCOPE_GLOBAL, 1, &C);
	tu_nonnull(ctx, PG);
	sc = ts_stage_of(s, C);
	tu_ok(ctx, ts_compute_at(ts_stage_of(s, P), sc, ts_reduce_axis_of(sc, 0)));
	tu_ok(ctx, ts_compute_at(ts_stage_of(s, PG), sc, ts_reduce_axis_of(sc, 0)));
	tu_ok(ctx, ts_store_at(ts_stage_of(s, PG), sc, ts_axis_of(sc, 0)));
	f = ts_lower(s, "window", 2, (ts_tensor *[]){A, C});
	tu_check_func(ctx, f, 1e-5);
	src = cg_emit_c(ctx, f);
	ck_assert_msg(src != NULL, "%s", ts_last_error(ctx));
	if (have_cc()) {
		built b = build(src);
		unbuild(&b);
	}
	ts_ctx_free(ctx);
}
END_TEST

/* ---- 16-bit floats ---------------------------------------------------------------- */

#define N16 512

/* Y = x * 1.5 - max(x, h(f)) / 3 + h(f), Z = int32(x * 3), W = float(h(f)),
 * V = bool(x < h(f)) with x = X[i] of the 16-bit dtype h and h(f) the
 * float32 F[i] rounded to h: arithmetic, min/max, division, constants and
 * casts both ways, each rounded to h as ir.h says. */
static ts_func *half_func(ts_ctx *ctx, ts_dtype h)
{
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(N16), h);
	ts_tensor *F = ts_placeholder(ctx, "F", TS_SHAPE(N16), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_expr *x = TS_READ(ctx, X, i), *hf = ts_cast(ctx, h, TS_READ(ctx, F, i));
	ts_expr *y = ts_add(ctx, ts_sub(ctx, ts_mul(ctx, x, ts_fconst(ctx, h, 1.5)),
					ts_div(ctx, ts_max(ctx, x, hf), ts_fconst(ctx, h, 3))), hf);
	ts_tensor *Y = ts_compute(ctx, "Y", TS_SHAPE(N16), TS_VARS(i), y);
	ts_tensor *Z = ts_compute(ctx, "Z", TS_SHAPE(N16), TS_VARS(i),
				  ts_cast(ctx, ts_int32, ts_mul(ctx, x, ts_fconst(ctx, h, 3))));
	ts_tensor *W = ts_compute(ctx, "W", TS_SHAPE(N16), TS_VARS(i), ts_cast(ctx, ts_float32, hf));
	ts_tensor *outs[3] = {Y, Z, W};
	tu_nonnull(ctx, W);
	ts_schedule *s = ts_create_schedule(ctx, 3, outs);
	ts_stage *sy = ts_stage_of(s, Y);
	ts_axis *o, *in;
	tu_ok(ctx, ts_split(sy, ts_axis_of(sy, 0), 8, &o, &in));
	tu_ok(ctx, ts_vectorize(sy, in));
	return ts_lower(s, "halves", 5, (ts_tensor *[]){X, F, Y, Z, W});
}

/* Every 16-bit pattern in X (NaNs, infinities, subnormals, both zeros)
 * and floats from subnormal to past the 16-bit range in F. */
static void half_inputs(uint16_t *x, float *f)
{
	uint64_t r = 7;
	for (int k = 0; k < N16; k++) {
		r = r * 6364136223846793005ull + 1442695040888963407ull;
		x[k] = (uint16_t)(r >> 48);
		int e = (int)((r >> 20) % 80) - 40; /* 2^-40 .. 2^39 */
		f[k] = ldexpf((float)((r >> 8) % 4096) / 4096.0f + 0.5f, e) * ((r >> 40) & 1 ? -1 : 1);
	}
	f[0] = NAN, f[1] = INFINITY, f[2] = 65519.0f, f[3] = 65520.0f, f[4] = 0x1p-25f, f[5] = 0x1.8p-25f;
}

static bool same_bits16(uint16_t a, uint16_t b, ts_dtype h)
{
	bool nan_a = h.code == TS_TYPE_BFLOAT ? (a & 0x7f80) == 0x7f80 && (a & 0x7f) : (a & 0x7c00) == 0x7c00 && (a & 0x3ff);
	bool nan_b = h.code == TS_TYPE_BFLOAT ? (b & 0x7f80) == 0x7f80 && (b & 0x7f) : (b & 0x7c00) == 0x7c00 && (b & 0x3ff);
	return nan_a ? nan_b : a == b;
}

/* The emitted C, compiled, against the interpreter bit for bit. */
static void check_half_c(ts_dtype h)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_func *f = half_func(ctx, h);
	tu_nonnull(ctx, f);
	const char *src = cg_emit_c(ctx, f);
	ck_assert_msg(src != NULL, "%s", ts_last_error(ctx));
	ck_assert(strstr(src, h.code == TS_TYPE_BFLOAT ? "ts_f32_to_bf16(" : "ts_f32_to_f16("));
	if (!have_cc()) {
		ts_ctx_free(ctx);
		return;
	}
	static uint16_t x[N16], y[2][N16];
	static float fin[N16], w[2][N16];
	static int32_t z[2][N16];
	half_inputs(x, fin);
	tu_ok(ctx, cg_interp_run(ctx, f, (void *[]){x, fin, y[0], z[0], w[0]}));
	built b = build(src);
	ck_assert_int_eq(packed(&b, "halves")((void *[]){x, fin, y[1], z[1], w[1]}), 0);
	for (int k = 0; k < N16; k++) {
		ck_assert_msg(same_bits16(y[0][k], y[1][k], h), "Y[%d]: interpreter %#x, C %#x (x %#x, f %g)", k,
			      y[0][k], y[1][k], x[k], fin[k]);
		ck_assert_msg(z[0][k] == z[1][k], "Z[%d]: interpreter %d, C %d", k, z[0][k], z[1][k]);
		ck_assert_msg((isnan(w[0][k]) && isnan(w[1][k])) || w[0][k] == w[1][k],
			      "W[%d]: interpreter %a, C %a (f %a)", k, w[0][k], w[1][k], fin[k]);
	}
	unbuild(&b);
	ts_ctx_free(ctx);
}

START_TEST(test_c_float16)
{
	check_half_c(ts_float16);
}
END_TEST

START_TEST(test_c_bfloat16)
{
	check_half_c(ts_bfloat16);
}
END_TEST

/* What C would otherwise get wrong silently: int8/int16 + - * compute in
 * int, so a product feeding a cast or a comparison did not wrap (ir.h:
 * it does); (bool)(y * 2) made cc warn; and libm's fmaxf returns NaN for
 * a signalling NaN operand, which ir.h's max ignores.  Checked against
 * the interpreter, bit for bit. */
START_TEST(test_c_narrow_and_nan)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(8), ts_int8);
	ts_tensor *Y = ts_placeholder(ctx, "Y", TS_SHAPE(8), ts_int16);
	ts_tensor *F = ts_placeholder(ctx, "F", TS_SHAPE(8), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_expr *x = TS_READ(ctx, X, i), *y = TS_READ(ctx, Y, i), *f = TS_READ(ctx, F, i);
	ts_tensor *A = ts_compute(ctx, "A", TS_SHAPE(8), TS_VARS(i), ts_cast(ctx, ts_float32, ts_mul(ctx, x, x)));
	ts_tensor *B = ts_compute(ctx, "B", TS_SHAPE(8), TS_VARS(i), ts_cast(ctx, ts_bool, ts_mul(ctx, y, ts_const(ctx, ts_int16, 2))));
	ts_tensor *L = ts_compute(ctx, "L", TS_SHAPE(8), TS_VARS(i),
				  ts_lt(ctx, ts_add(ctx, x, ts_const(ctx, ts_int8, 100)), ts_const(ctx, ts_int8, 0)));
	ts_tensor *M = ts_compute(ctx, "M", TS_SHAPE(8), TS_VARS(i), ts_max(ctx, f, ts_float(ctx, 1)));
	ts_tensor *outs[4] = {A, B, L, M};
	ts_func *fn = ts_lower(ts_create_schedule(ctx, 4, outs), "narrow", 7, (ts_tensor *[]){X, Y, F, A, B, L, M});
	tu_nonnull(ctx, fn);
	const char *src = cg_emit_c(ctx, fn);
	ck_assert_msg(src != NULL, "%s", ts_last_error(ctx));
	if (!have_cc()) {
		ts_ctx_free(ctx);
		return;
	}
	int8_t xv[8] = {100, -128, 127, 28, -1, 0, 64, 100};
	int16_t yv[8] = {-32768, 16384, 1, 0, -1, 32767, 2, -16384};
	uint32_t snan = 0x7fa00000u, qnan = 0x7fc00000u;
	float fv[8] = {0.5f, 2.0f, -3.0f, 1.0f, 0, 0, 7.0f, -0.0f};
	memcpy(&fv[4], &snan, 4);
	memcpy(&fv[5], &qnan, 4);
	float a[2][8], m[2][8];
	bool bv[2][8], l[2][8];
	tu_ok(ctx, cg_interp_run(ctx, fn, (void *[]){xv, yv, fv, a[0], bv[0], l[0], m[0]}));
	built b = build(src);
	ck_assert_int_eq(packed(&b, "narrow")((void *[]){xv, yv, fv, a[1], bv[1], l[1], m[1]}), 0);
	for (int k = 0; k < 8; k++) {
		ck_assert_msg(a[0][k] == a[1][k], "A[%d]: interpreter %g, C %g", k, a[0][k], a[1][k]);
		ck_assert_msg(bv[0][k] == bv[1][k], "B[%d]: interpreter %d, C %d", k, bv[0][k], bv[1][k]);
		ck_assert_msg(l[0][k] == l[1][k], "L[%d]: interpreter %d, C %d", k, l[0][k], l[1][k]);
		ck_assert_msg(!memcmp(&m[0][k], &m[1][k], 4), "M[%d]: interpreter %a, C %a", k, m[0][k], m[1][k]);
	}
	ck_assert(a[1][0] == 16 && !bv[1][0] && l[1][0] && m[1][4] == 1.0f);
	unbuild(&b);
	ts_ctx_free(ctx);
}
END_TEST

/* round_tf32 in C, the interpreter and LLVM, bit for bit, on the cases
 * that matter: ties (away from zero), a carry into the exponent, the
 * largest finite floats (to infinity), subnormals, infinities; NaNs stay
 * NaNs. */
START_TEST(test_c_round_tf32)
{
	enum { N = 16 };
	static const uint32_t bits[N] = {
		0x3f800000u, 0x3f801000u, 0xbf801000u, 0x3f800fffu, 0x3f803000u, 0x3fffffffu,
		0x7f7fffffu, 0xff7ff000u, 0x00001000u, 0x80000fffu, 0x7f800000u, 0xff800000u,
		0x7fc00001u, 0x7fa00000u, 0x00000000u, 0x4049fdb0u,
	};
	static const uint32_t want[N] = {
		0x3f800000u, 0x3f802000u, 0xbf802000u, 0x3f800000u, 0x3f804000u, 0x40000000u,
		0x7f800000u, 0xff800000u, 0x00002000u, 0x80000000u, 0x7f800000u, 0xff800000u,
		0x7fc00001u, 0x7fa00000u, 0x00000000u, 0x404a0000u,
	};
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(N), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *Y = ts_compute(ctx, "Y", TS_SHAPE(N), TS_VARS(i), ts_round_tf32(ctx, TS_READ(ctx, X, i)));
	ts_func *fn = ts_lower(ts_create_schedule(ctx, 1, &Y), "tf32", 2, (ts_tensor *[]){X, Y});
	tu_nonnull(ctx, fn);
	float x[N], y[3][N];
	memcpy(x, bits, sizeof(x));
	tu_ok(ctx, cg_interp_run(ctx, fn, (void *[]){x, y[0]}));
	ts_module *m = ts_build(ctx, fn, "llvm");
	tu_nonnull(ctx, m);
	ts_array *xa = ts_array_new(ctx, ts_float32, 1, (int64_t[]){N});
	ts_array *ya = ts_array_new(ctx, ts_float32, 1, (int64_t[]){N});
	memcpy(xa->data, x, sizeof(x));
	tu_ok(ctx, ts_module_run(m, 2, (ts_array *[]){xa, ya}));
	memcpy(y[1], ya->data, sizeof(y[1]));
	const char *src = cg_emit_c(ctx, fn);
	tu_nonnull(ctx, src);
	int runs = 2;
	if (have_cc()) {
		built b = build(src);
		ck_assert_int_eq(packed(&b, "tf32")((void *[]){x, y[2]}), 0);
		unbuild(&b);
		runs = 3;
	}
	for (int r = 0; r < runs; r++)
		for (int k = 0; k < N; k++) {
			uint32_t got;
			memcpy(&got, &y[r][k], 4);
			if (isnan(y[r][k]) && (want[k] & 0x7fffffffu) > 0x7f800000u)
				continue; /* a NaN stays one (the interpreter's may come back quiet) */
			ck_assert_msg(got == want[k], "%s: round_tf32(0x%08x) = 0x%08x, want 0x%08x",
				      r == 0 ? "interpreter" : r == 1 ? "llvm" : "C", bits[k], got, want[k]);
		}
	ts_array_free(xa), ts_array_free(ya);
	ts_module_free(m);
	FAILS_NULL(ctx, ts_round_tf32(ctx, ts_fconst(ctx, ts_float64, 1.0)), "round_tf32: argument must be float32");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_c_misc)
{
	ts_ctx *ctx = ts_ctx_new();
	const char *src = cg_emit_c(ctx, build_misc(ctx));
	ck_assert_msg(src != NULL, "%s", ts_last_error(ctx));
	tu_assert_golden("c_misc.txt", src);
	if (!have_cc()) {
		ts_ctx_free(ctx);
		return;
	}
	built b = build(src);
	int64_t n = 64;
	ts_array *X = rand_f32(64, 5, -2, 2), *Y = rand_f32(64, 6, 0, 1), *Z = rand_f32(64, 7, 0, 1);
	ts_array *I = ts_array_new(NULL, ts_int32, 1, &n), *J = ts_array_new(NULL, ts_int32, 1, &n);
	ts_array_fill_random(I, 8, -50, 50);
	ck_assert_int_eq(packed(&b, "misc")((void *[]){X->data, I->data, Y->data, J->data, Z->data}), 0);
	const float *x = X->data, *y = Y->data, *z = Z->data;
	const int32_t *iv = I->data, *j = J->data;
	for (int k = 0; k < 64; k++) {
		int32_t v = iv[k], m = v - ref_floordiv(v, -4) * -4;
		int32_t want = ref_floordiv(v, 3) * 100 + m + (v < 5 ? v : 5) - (v > -5 ? v : -5) +
			       v / 7 + v % 5;
		ck_assert_int_eq(j[k], want);
		float wy = ref_misc_y(x[k], v);
		ck_assert_msg(fabsf(y[k] - wy) <= 1e-4f * (1 + fabsf(wy)), "Y[%d] = %g, want %g", k, y[k], wy);
		ck_assert_float_eq_tol(z[k], x[k] * 2.5f + (float)k, 1e-5);
	}
	ts_array_free(X), ts_array_free(Y), ts_array_free(Z), ts_array_free(I), ts_array_free(J);
	unbuild(&b);
	ts_ctx_free(ctx);
}
END_TEST

/* ir.h: signed arithmetic wraps.  In C a signed overflow is undefined, so
 * the emitter computes stored int32/int64 values through unsigned helpers;
 * the generated function runs under UBSan's signed-overflow check, inside
 * a program that compares with the wrapped answer computed unsigned. */
START_TEST(test_c_signed_overflow_wraps)
{
	if (!have_cc())
		return;
	ts_ctx *ctx = ts_ctx_new();
	ts_buffer *I = kg_buf(ctx, "I", ts_int32, 64, 0, TS_SCOPE_GLOBAL);
	ts_buffer *J = kg_buf(ctx, "J", TS_DTYPE(TS_TYPE_INT, 64), 64, 0, TS_SCOPE_GLOBAL);
	ts_buffer *K = kg_buf(ctx, "K", ts_int32, 64, 0, TS_SCOPE_GLOBAL);
	ts_expr *i = ts_var(ctx, "i");
	ts_expr *v = ts_load(ctx, I, i);
	ts_expr *j = ts_sub(ctx, ts_mul(ctx, ts_cast(ctx, TS_DTYPE(TS_TYPE_INT, 64), v),
				       ts_const(ctx, TS_DTYPE(TS_TYPE_INT, 64), INT64_C(1) << 40)),
			    ts_const(ctx, TS_DTYPE(TS_TYPE_INT, 64), INT64_MAX));
	ts_expr *k = ts_add(ctx, ts_mul(ctx, v, KI(65537)), KI(2147483000));
	ts_stmt *body = ir_seq(ctx, 2, (ts_stmt *[]){ir_store(ctx, J, i, j), ir_store(ctx, K, i, k)});
	const char *src = cg_emit_c(ctx, kg_func(ctx, "wrap", 3, (ts_buffer *[]){I, J, K},
					      kg_loop(ctx, i, 64, TS_FOR_SERIAL, body)));
	ck_assert_msg(src != NULL, "%s", ts_last_error(ctx));
	const char *main_src =
		"#include <stdio.h>\n"
		"int main(void)\n{\n"
		"  int32_t in[64], k[64];\n  int64_t j[64];\n"
		"  for (int x = 0; x < 64; x++)\n"
		"    in[x] = (int32_t)(x * 98765431u - 2000000000u);\n"
		"  wrap(in, j, k);\n"
		"  for (int x = 0; x < 64; x++) {\n"
		"    int32_t wk = (int32_t)((uint32_t)in[x] * 65537u + 2147483000u);\n"
		"    int64_t wj = (int64_t)((uint64_t)(int64_t)in[x] * (1ull << 40) - (uint64_t)INT64_MAX);\n"
		"    if (k[x] != wk || j[x] != wj) {\n"
		"      printf(\"element %d: %d %lld\\n\", x, k[x], (long long)j[x]);\n"
		"      return 1;\n    }\n  }\n  return 0;\n}\n";
	built b = {.lib = NULL};
	strcpy(b.dir, "/tmp/tessera_c_XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(b.dir));
	write_source(b.dir, ts_sprintf(ctx, "%s%s", src, main_src));
	/* an executable, named k.so so that unbuild removes it */
	cc(b.dir, "-O2 -fsanitize=signed-integer-overflow -fno-sanitize-recover=all k.c -o k.so");
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "%s/k.so > %s/cc.log 2>&1", b.dir, b.dir);
	int rc = system(cmd);
	if (rc != 0) {
		snprintf(cmd, sizeof(cmd), "cat %s/cc.log", b.dir);
		ck_assert_int_eq(system(cmd), 0);
	}
	ck_assert_msg(rc == 0, "the generated code overflowed or computed wrong values");
	unbuild(&b);
	ts_ctx_free(ctx);
}
END_TEST

/* 0.0 - (double)i is +0.0 for i = 0: GCC folds that text into
 * -(double)i, which is -0.0 (1 / it gave -inf), so the emitter writes it
 * as a helper call; float32 and a vector of zeros likewise. */
START_TEST(test_c_zero_minus_keeps_sign)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_buffer *A = kg_buf(ctx, "A", TS_DTYPE(TS_TYPE_UINT, 32), 4, 0, TS_SCOPE_GLOBAL);
	ts_buffer *C = kg_buf(ctx, "C", TS_DTYPE(TS_TYPE_FLOAT, 64), 4, 0, TS_SCOPE_GLOBAL);
	ts_buffer *D = kg_buf(ctx, "D", ts_float32, 4, 0, TS_SCOPE_GLOBAL);
	ts_expr *i = ts_var(ctx, "i");
	ts_expr *c = ts_div(ctx, ts_const(ctx, TS_DTYPE(TS_TYPE_FLOAT, 64), 1),
			    ts_sub(ctx, ts_const(ctx, TS_DTYPE(TS_TYPE_FLOAT, 64), 0), ts_cast(ctx, TS_DTYPE(TS_TYPE_FLOAT, 64), ts_load(ctx, A, i))));
	ts_expr *ramp = ts_ramp(ctx, ts_int(ctx, 0), 1, 4);
	ts_dtype f4 = ts_dtype_with_lanes(ts_float32, 4);
	ts_expr *d = ts_div(ctx, ts_broadcast(ctx, ts_float(ctx, 1), 4),
			    ts_sub(ctx, ts_broadcast(ctx, ts_float(ctx, 0), 4),
				   ts_cast(ctx, f4, ts_load(ctx, A, ramp))));
	ts_stmt *body = ir_seq(ctx, 2, (ts_stmt *[]){kg_loop(ctx, i, 4, TS_FOR_SERIAL, ir_store(ctx, C, i, c)),
						     ir_store(ctx, D, ramp, d)});
	const char *src = cg_emit_c(ctx, kg_func(ctx, "zm", 3, (ts_buffer *[]){A, C, D}, body));
	tu_nonnull(ctx, src);
	ck_assert_msg(strstr(src, "ts_fsub_f64(") && strstr(src, "ts_fsub_f32("), "%s", src);
	if (have_cc()) {
		built b = build(src);
		uint32_t a[4] = {0, 1, 0, 7};
		double cv[4];
		float dv[4];
		ck_assert_int_eq(packed(&b, "zm")((void *[]){a, cv, dv}), 0);
		for (int k = 0; k < 4; k++) {
			double want = a[k] ? -1.0 / a[k] : INFINITY;
			ck_assert_msg(cv[k] == want && dv[k] == (float)want, "element %d: %g %g, want %g", k, cv[k],
				      (double)dv[k], want);
		}
		unbuild(&b);
	}
	ts_ctx_free(ctx);
}
END_TEST

/* C = A * B (37x29 * 29x45): a parallel row loop with a thread-private
 * accumulator row and vectorized inner loops. */
static ts_func *build_matmul(ts_ctx *ctx)
{
	ts_buffer *A = kg_buf(ctx, "A", ts_float32, 37, 29, TS_SCOPE_GLOBAL);
	ts_buffer *B = kg_buf(ctx, "B", ts_float32, 29, 45, TS_SCOPE_GLOBAL);
	ts_buffer *C = kg_buf(ctx, "C", ts_float32, 37, 45, TS_SCOPE_GLOBAL);
	ts_buffer *acc = kg_buf(ctx, "acc", ts_float32, 45, 0, TS_SCOPE_LOCAL);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j"), *k = ts_var(ctx, "k");
	ts_expr *j1 = ts_var(ctx, "j"), *j2 = ts_var(ctx, "j");
	ts_stmt *init = kg_loop(ctx, j, 45, TS_FOR_VECTORIZED, ir_store(ctx, acc, j, ts_float(ctx, 0)));
	ts_expr *a = ts_load(ctx, A, ts_add(ctx, ts_mul(ctx, i, KI(29)), k));
	ts_expr *bv = ts_load(ctx, B, ts_add(ctx, ts_mul(ctx, k, KI(45)), j1));
	ts_stmt *upd = ir_store(ctx, acc, j1, ts_add(ctx, ts_load(ctx, acc, j1), ts_mul(ctx, a, bv)));
	ts_stmt *red = kg_loop(ctx, k, 29, TS_FOR_SERIAL, kg_loop(ctx, j1, 45, TS_FOR_VECTORIZED, upd));
	ts_stmt *out = kg_loop(ctx, j2, 45, TS_FOR_SERIAL,
			       ir_store(ctx, C, ts_add(ctx, ts_mul(ctx, i, KI(45)), j2), ts_load(ctx, acc, j2)));
	ts_stmt *body = ir_allocate(ctx, acc, ir_seq(ctx, 3, (ts_stmt *[]){init, red, out}));
	return kg_func(ctx, "matmul", 3, (ts_buffer *[]){A, B, C},
		       kg_loop(ctx, i, 37, TS_FOR_PARALLEL, body));
}

START_TEST(test_c_matmul)
{
	ts_ctx *ctx = ts_ctx_new();
	const char *src = cg_emit_c(ctx, build_matmul(ctx));
	ck_assert_msg(src != NULL, "%s", ts_last_error(ctx));
	tu_assert_golden("c_matmul.txt", src);
	if (have_cc()) {
		built b = build(src);
		ts_array *A = rand_f32(37 * 29, 9, -1, 1), *B = rand_f32(29 * 45, 10, -1, 1);
		ts_array *C = rand_f32(37 * 45, 11, 0, 1), *want = rand_f32(37 * 45, 12, 0, 1);
		const float *a = A->data, *bb = B->data;
		float *w = want->data;
		for (int i = 0; i < 37; i++)
			for (int j = 0; j < 45; j++) {
				double s = 0;
				for (int k = 0; k < 29; k++)
					s += (double)a[i * 29 + k] * bb[k * 45 + j];
				w[i * 45 + j] = (float)s;
			}
		ck_assert_int_eq(packed(&b, "matmul")((void *[]){A->data, B->data, C->data}), 0);
		tu_assert_close(C, want, 1e-5, 1e-5);
		ts_array_free(A), ts_array_free(B), ts_array_free(C), ts_array_free(want);
		unbuild(&b);
	}
	ts_ctx_free(ctx);
}
END_TEST

/* A temporary above the stack limit lives on the heap; B[i] = 2 * A[n-1-i] + 1. */
static ts_func *build_big(ts_ctx *ctx, ts_for_kind outer)
{
	int64_t n = 20000;
	ts_buffer *A = kg_buf(ctx, "A", ts_float32, n, 0, TS_SCOPE_GLOBAL);
	ts_buffer *B = kg_buf(ctx, "B", ts_float32, n, 0, TS_SCOPE_GLOBAL);
	ts_buffer *T = kg_buf(ctx, "T", ts_float32, n, 0, TS_SCOPE_GLOBAL);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j"), *o = ts_var(ctx, "o");
	ts_stmt *fill = kg_loop(ctx, i, n, TS_FOR_SERIAL,
				ir_store(ctx, T, i, ts_mul(ctx, ts_load(ctx, A, i), ts_float(ctx, 2))));
	ts_expr *rev = ts_load(ctx, T, ts_sub(ctx, KI(n - 1), j));
	ts_stmt *use = kg_loop(ctx, j, n, TS_FOR_SERIAL,
			       ir_store(ctx, B, j, ts_add(ctx, rev, ts_float(ctx, 1))));
	ts_stmt *body = kg_loop(ctx, o, 1, outer, ir_allocate(ctx, T, ir_seq2(ctx, fill, use)));
	return kg_func(ctx, "big", 2, (ts_buffer *[]){A, B}, body);
}

START_TEST(test_c_heap_temporary)
{
	ts_ctx *ctx = ts_ctx_new();
	const char *src = cg_emit_c(ctx, build_big(ctx, TS_FOR_SERIAL));
	ck_assert_msg(src != NULL, "%s", ts_last_error(ctx));
	ck_assert_ptr_nonnull(strstr(src, "float *T = (float *)malloc(sizeof(float) * 20000);"));
	ck_assert_ptr_nonnull(strstr(src, "free(T);"));
	if (have_cc()) {
		built b = build(src);
		ts_array *A = rand_f32(20000, 13, -3, 3), *B = rand_f32(20000, 14, 0, 1);
		ck_assert_int_eq(packed(&b, "big")((void *[]){A->data, B->data}), 0);
		const float *a = A->data, *bb = B->data;
		for (int i = 0; i < 20000; i++)
			ck_assert_float_eq(bb[i], a[19999 - i] * 2.0f + 1.0f);
		ts_array_free(A), ts_array_free(B);
		unbuild(&b);
	}
	/* inside a parallel loop it would be shared by the iterations */
	ck_assert_ptr_null(cg_emit_c(ctx, build_big(ctx, TS_FOR_PARALLEL)));
	tu_assert_error(ctx, "c: big: allocate T: 80000 bytes inside a parallel loop exceed the stack limit of 65536");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_c_rejects)
{
	ts_ctx *ctx = ts_ctx_new();
	ck_assert_ptr_null(cg_emit_c(ctx, kg_gemm(ctx, 64, 64, 64, true)));
	tu_assert_error(ctx, "c: gemm: barrier needs the cuda dialect");
	ts_clear_error(ctx);

	ts_buffer *A = kg_buf(ctx, "A", ts_float32, 8, 0, TS_SCOPE_GLOBAL);
	ts_buffer *T = kg_buf(ctx, "T", ts_float32, 8, 0, TS_SCOPE_GLOBAL);
	ts_buffer *H = kg_buf(ctx, "H", ts_float16, 8, 0, TS_SCOPE_GLOBAL);
	ts_expr *i = ts_var(ctx, "i"), *ghost = ts_var(ctx, "ghost");
	ts_func *f = kg_func(ctx, "f", 1, &A, ir_store(ctx, A, ghost, ts_float(ctx, 1)));
	ck_assert_ptr_null(cg_emit_c(ctx, f));
	tu_assert_error(ctx, "c: f: variable ghost is used but not defined");
	ts_clear_error(ctx);

	f = kg_func(ctx, "f", 1, &A, kg_loop(ctx, i, 8, TS_FOR_SERIAL,
					    ir_store(ctx, A, i, ts_load(ctx, T, i))));
	ck_assert_ptr_null(cg_emit_c(ctx, f));
	tu_assert_error(ctx, "c: f: buffer T is neither a parameter nor allocated");
	ts_clear_error(ctx);

	(void)H;

	f = kg_func(ctx, "f", 2, (ts_buffer *[]){A, A}, ir_store(ctx, A, KI(0), ts_float(ctx, 1)));
	ck_assert_ptr_null(cg_emit_c(ctx, f));
	tu_assert_error(ctx, "c: f: parameter 1 is given twice");
	ts_clear_error(ctx);

	ck_assert_ptr_null(cg_emit_c(ctx, NULL));
	tu_assert_error(ctx, "c: function is NULL or incomplete");
	ts_ctx_free(ctx);
}
END_TEST

/* Every arena allocation the emitter makes may fail: it reports and never
 * crashes, and succeeds once allocations do. */
START_TEST(test_emit_out_of_memory)
{
	bool done = false;
	for (long n = 1; n < 5000 && !done; n++) {
		ts_ctx *ctx = ts_ctx_new();
		ts_func *f = kg_gemm(ctx, 64, 64, 64, true);
		ck_assert_ptr_nonnull(f);
		ts_ctx_fail_alloc_after(ctx, n);
		const char *src = cg_emit_cuda(ctx, f, NULL);
		if (src)
			done = true;
		else
			ck_assert_int_eq(ts_last_status(ctx), TS_ERR_NOMEM);
		ts_ctx_free(ctx);
	}
	ck_assert(done);
}
END_TEST

/* ---- CUDA C ----------------------------------------------------------------- */

START_TEST(test_cuda_vadd)
{
	ts_ctx *ctx = ts_ctx_new();
	cg_launch l;
	const char *src = cg_emit_cuda(ctx, kg_vadd_cuda(ctx, 4096), &l);
	ck_assert_msg(src != NULL, "%s", ts_last_error(ctx));
	tu_assert_golden("cuda_vadd.txt", src);
	ck_assert_int_eq(l.grid[0], 8);
	ck_assert_int_eq(l.grid[1] * l.grid[2], 1);
	ck_assert_int_eq(l.block[0], 128);
	ck_assert_int_eq(l.block[1] * l.block[2], 1);
	ck_assert_int_eq(l.shared_bytes, 0);
	ts_ctx_free(ctx);
}
END_TEST

static int count(const char *s, const char *part)
{
	int n = 0;
	for (const char *p = strstr(s, part); p; p = strstr(p + 1, part))
		n++;
	return n;
}

START_TEST(test_cuda_gemm)
{
	ts_ctx *ctx = ts_ctx_new();
	cg_launch l;
	const char *src = cg_emit_cuda(ctx, kg_gemm(ctx, 64, 96, 128, true), &l);
	ck_assert_msg(src != NULL, "%s", ts_last_error(ctx));
	tu_assert_golden("cuda_gemm.txt", src);
	ck_assert_int_eq(l.grid[0], 3);
	ck_assert_int_eq(l.grid[1], 2);
	ck_assert_int_eq(l.block[0], 32);
	ck_assert_int_eq(l.block[1], 8);
	ck_assert_int_eq(l.static_shared_bytes, 2 * 32 * 32 * 4);
	ck_assert_int_eq(count(src, "__syncthreads();"), 2);
	ck_assert_int_eq(count(src, "*(float4 *)&"), 2);
	ck_assert_int_eq(count(src, "#pragma unroll"), 3);
	ck_assert_ptr_nonnull(strstr(src, "__launch_bounds__(256) gemm("));
	ts_ctx_free(ctx);
}
END_TEST

/* A stage computed at a thread loop is a per-thread array, read and
 * written as float4 when vectorized by 4: it is declared 16-byte aligned
 * (a float array is only 4). */
START_TEST(test_cuda_thread_array_aligned)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(32, 4), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_tensor *P = ts_compute(ctx, "P", TS_SHAPE(32, 4), TS_VARS(i, j),
				  ts_mul(ctx, TS_READ(ctx, X, i, j), ts_float(ctx, 2)));
	ts_tensor *Y = ts_compute(ctx, "Y", TS_SHAPE(32, 4), TS_VARS(i, j), TS_READ(ctx, P, i, j));
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	ts_stage *sy = ts_stage_of(s, Y), *sp = ts_stage_of(s, P);
	ts_axis *io, *ii;
	tu_ok(ctx, ts_split(sy, ts_axis_of(sy, 0), 16, &io, &ii));
	tu_ok(ctx, ts_bind(sy, io, TS_BLOCK_X));
	tu_ok(ctx, ts_bind(sy, ii, TS_THREAD_X));
	tu_ok(ctx, ts_vectorize(sy, ts_axis_of(sy, 1)));
	tu_ok(ctx, ts_compute_at(sp, sy, ii));
	tu_ok(ctx, ts_vectorize(sp, ts_axis_of(sp, 1)));
	ts_func *f = ts_lower(s, "rows", 2, (ts_tensor *[]){X, Y});
	tu_nonnull(ctx, f);
	const char *src = cg_emit_cuda(ctx, f, NULL);
	tu_nonnull(ctx, src);
	ck_assert_msg(strstr(src, "__align__(16) float P[4];") && strstr(src, "*(float4 *)&P[0]"), "%s", src);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_cuda_conv)
{
	ts_ctx *ctx = ts_ctx_new();
	cg_launch l;
	const char *src = cg_emit_cuda(ctx, kg_conv(ctx), &l);
	ck_assert_msg(src != NULL, "%s", ts_last_error(ctx));
	tu_assert_golden("cuda_conv.txt", src);
	ck_assert_int_eq(l.grid[0], 8);
	ck_assert_int_eq(l.grid[1], 16);
	ck_assert_int_eq(l.block[0], 16);
	ts_ctx_free(ctx);
}
END_TEST

/* Two loops bound to threadIdx.x: the shorter one is guarded, and a float4
 * is not used where alignment cannot be proven. */
START_TEST(test_cuda_guard_and_alignment)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_buffer *A = kg_buf(ctx, "A", ts_float32, 260, 0, TS_SCOPE_GLOBAL);
	ts_expr *t1 = ts_var(ctx, "t"), *t2 = ts_var(ctx, "t"), *v = ts_var(ctx, "v");
	ts_stmt *a = kg_bind(ctx, t1, 64, TS_THREAD_X, ir_store(ctx, A, t1, ts_float(ctx, 1)));
	ts_expr *k = ts_add(ctx, ts_add(ctx, ts_mul(ctx, t2, KI(4)), KI(2)), v); /* 8-byte aligned */
	ts_stmt *b = kg_bind(ctx, t2, 40, TS_THREAD_X,
			     kg_loop(ctx, v, 4, TS_FOR_VECTORIZED,
				     ir_store(ctx, A, k, ts_add(ctx, ts_load(ctx, A, k), ts_float(ctx, 1)))));
	cg_launch l;
	const char *src = cg_emit_cuda(ctx, kg_func(ctx, "two", 1, &A, ir_seq2(ctx, a, b)), &l);
	ck_assert_msg(src != NULL, "%s", ts_last_error(ctx));
	ck_assert_int_eq(l.block[0], 64);
	ck_assert_int_eq(count(src, "if (threadIdx.x < 40) {"), 1);
	ck_assert_ptr_nonnull(strstr(src, "int t = threadIdx.x;"));
	ck_assert_ptr_nonnull(strstr(src, "int t_1 = threadIdx.x;"));
	ck_assert_ptr_null(strstr(src, "float4"));
	ck_assert_ptr_nonnull(strstr(src, "#pragma unroll\n    for (int v = 0; v < 4; ++v) {"));
	ts_ctx_free(ctx);
}
END_TEST

/* Which stores thread 0 alone makes (replicated_store): a store whose
 * element depends on threadIdx.x through 70 nested lets (more than the
 * emitter's table holds) stays every thread's; one next to them indexed by
 * nothing of the thread is made by thread 0, once the lets are out of
 * scope. */
START_TEST(test_cuda_thread_dependence)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_buffer *A = kg_buf(ctx, "A", ts_float32, 64, 0, TS_SCOPE_GLOBAL);
	ts_expr *t = ts_var(ctx, "t"), *v[70];
	for (int i = 0; i < 70; i++) {
		char name[8];
		snprintf(name, sizeof(name), "v%d", i);
		v[i] = ts_var(ctx, name);
	}
	ts_stmt *own = ir_store(ctx, A, ts_sub(ctx, v[69], KI(69)), ts_float(ctx, 1));
	for (int i = 69; i >= 0; i--)
		own = ir_let(ctx, v[i], i ? ts_add(ctx, v[i - 1], KI(1)) : t, own);
	ts_stmt *shared = ir_store(ctx, A, KI(63), ts_float(ctx, 2));
	ts_func *f = kg_func(ctx, "k", 1, &A, kg_bind(ctx, t, 32, TS_THREAD_X, ir_seq2(ctx, own, shared)));
	const char *src = cg_emit_cuda(ctx, f, NULL);
	ck_assert_msg(src != NULL, "%s", ts_last_error(ctx));
	ck_assert_msg(strstr(src, "A[v69 - 69] = 1.0f;") && !strstr(src, "{\n        A[v69 - 69]"), "%s", src);
	ck_assert_msg(strstr(src, "if (threadIdx.x == 0) {\n    A[63] = 2.0f;"), "%s", src);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_cuda_rejects)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_buffer *A = kg_buf(ctx, "A", ts_float32, 64, 0, TS_SCOPE_GLOBAL);
	ts_buffer *S = kg_buf(ctx, "S", ts_float32, 60000, 0, TS_SCOPE_SHARED);
	ts_buffer *S2 = kg_buf(ctx, "S2", ts_float32, 13000, 0, TS_SCOPE_SHARED);
	ts_expr *t = ts_var(ctx, "t"), *u = ts_var(ctx, "u"), *n = ts_var(ctx, "n");
	ts_stmt *st = ir_store(ctx, A, KI(0), ts_float(ctx, 1));

	ts_func *f = kg_func(ctx, "k", 1, &A, kg_bind(ctx, t, 2048, TS_THREAD_X, st));
	ck_assert_ptr_null(cg_emit_cuda(ctx, f, NULL));
	tu_assert_error(ctx, "cuda: k: 2048 threads per block (2048 x 1 x 1), the limit is 1024");
	ts_clear_error(ctx);

	/* the same index bound again inside (a cooperative fetch) may not need
	 * more threads than the enclosing loop has */
	f = kg_func(ctx, "k", 1, &A, kg_bind(ctx, t, 4, TS_THREAD_X, kg_bind(ctx, u, 4, TS_THREAD_X, st)));
	ck_assert_ptr_nonnull(cg_emit_cuda(ctx, f, NULL));
	f = kg_func(ctx, "k", 1, &A, kg_bind(ctx, t, 4, TS_THREAD_X, kg_bind(ctx, u, 8, TS_THREAD_X, st)));
	ck_assert_ptr_null(cg_emit_cuda(ctx, f, NULL));
	tu_assert_error(ctx, "cuda: k: loop u is bound to threadIdx.x with extent 8 inside a loop bound to it with extent 4");
	ts_clear_error(ctx);

	f = kg_func(ctx, "k", 1, &A, ir_let(ctx, n, KI(7), ir_for(ctx, t, KI(0), n, TS_FOR_THREAD,
								     TS_BLOCK_X, st)));
	ck_assert_ptr_null(cg_emit_cuda(ctx, f, NULL));
	tu_assert_error(ctx, "cuda: k: loop t bound to blockIdx.x needs a constant extent");
	ts_clear_error(ctx);

	f = kg_func(ctx, "k", 1, &A, ir_allocate(ctx, S, ir_store(ctx, S, KI(0), ts_float(ctx, 1))));
	ck_assert_ptr_null(cg_emit_cuda(ctx, f, NULL));
	tu_assert_error(ctx, "cuda: k: 240000 bytes of shared memory per block, more than any GPU gives "
			     "one (232448, sm_90)");
	ts_clear_error(ctx);
	/* over the static 48 KB: dynamic shared memory, which the launch asks for */
	f = kg_func(ctx, "k", 1, &A, ir_allocate(ctx, S2, ir_store(ctx, S2, KI(0), ts_float(ctx, 1))));
	cg_launch l;
	const char *src = cg_emit_cuda(ctx, f, &l);
	ck_assert_msg(src && strstr(src, "float *const S2 = (float *)&ts_shared[0];"), "%s", src);
	ck_assert_int_eq(l.shared_bytes, 52000);
	ck_assert_int_eq(l.static_shared_bytes, 0);
	ts_ctx_free(ctx);
}
END_TEST

/* Vectorized stores of a value that does not vary across lanes, with and
 * without a load; thread loops in plain C run serially. */
START_TEST(test_uniform_lanes_and_serial_threads)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_buffer *A = kg_buf(ctx, "A", ts_float32, 64, 0, TS_SCOPE_GLOBAL);
	ts_buffer *B = kg_buf(ctx, "B", ts_float32, 64, 0, TS_SCOPE_GLOBAL);
	ts_expr *t = ts_var(ctx, "t"), *v = ts_var(ctx, "v"), *w = ts_var(ctx, "w");
	ts_expr *k = ts_add(ctx, ts_mul(ctx, t, KI(4)), v), *k2 = ts_add(ctx, ts_mul(ctx, t, KI(4)), w);
	ts_stmt *s1 = kg_loop(ctx, v, 4, TS_FOR_VECTORIZED, ir_store(ctx, A, k, ts_load(ctx, B, t)));
	ts_stmt *s2 = kg_loop(ctx, w, 4, TS_FOR_VECTORIZED, ir_store(ctx, B, k2, ts_float(ctx, 3)));
	ts_func *f = kg_func(ctx, "fill", 2, (ts_buffer *[]){A, B},
			     kg_bind(ctx, t, 16, TS_THREAD_X, ir_seq2(ctx, s1, s2)));
	const char *src = cg_emit_cuda(ctx, f, NULL);
	ck_assert_msg(src != NULL, "%s", ts_last_error(ctx));
	ck_assert_ptr_nonnull(strstr(src, "*(float4 *)&A[t*4] = make_float4(B[t], B[t], B[t], B[t]);"));
	ck_assert_ptr_nonnull(strstr(src, "*(float4 *)&B[t*4] = make_float4(3.0f, 3.0f, 3.0f, 3.0f);"));
	src = cg_emit_c(ctx, f);
	ck_assert_msg(src != NULL, "%s", ts_last_error(ctx));
	ck_assert_ptr_nonnull(strstr(src, "for (int32_t t = 0; t < 16; ++t) { /* threadIdx.x */"));
	ts_ctx_free(ctx);
}
END_TEST

/* ---- barrier insertion ------------------------------------------------------- */

START_TEST(test_sync_cases)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_buffer *G = kg_buf(ctx, "G", ts_float32, 64, 0, TS_SCOPE_GLOBAL);
	ts_buffer *S = kg_buf(ctx, "S", ts_float32, 64, 0, TS_SCOPE_SHARED);
	ts_expr *t = ts_var(ctx, "t"), *k = ts_var(ctx, "k"), *v = ts_var(ctx, "v");
	ts_stmt *wr = ir_store(ctx, S, t, ts_load(ctx, G, t));
	ts_stmt *rd = ir_store(ctx, G, t, ts_load(ctx, S, ts_sub(ctx, KI(63), t)));
	ts_stmt *upd = ir_store(ctx, S, t, ts_float(ctx, 2));

	/* nothing shared to order: the same statement comes back */
	ts_stmt *plain = ir_seq2(ctx, rd, rd);
	ts_stmt *g_only = ir_seq2(ctx, ir_store(ctx, G, t, ts_float(ctx, 1)), ir_store(ctx, G, t, ts_float(ctx, 2)));
	ck_assert_ptr_eq(cg_cuda_insert_sync(ctx, g_only), g_only);
	ck_assert_ptr_eq(cg_cuda_insert_sync(ctx, plain), plain); /* reads only */

	/* read after write, and write after read */
	ck_assert_str_eq(ir_stmt_str(ctx, cg_cuda_insert_sync(ctx, ir_seq(ctx, 3, (ts_stmt *[]){wr, rd, upd}))),
			 "S[t] = G[t]\nbarrier()\nG[t] = S[63 - t]\nbarrier()\nS[t] = 2.0f\n");

	/* a loop: barrier before the read and before the next iteration's write */
	ts_stmt *loop = kg_loop(ctx, k, 4, TS_FOR_SERIAL, ir_seq2(ctx, wr, rd));
	ck_assert_str_eq(ir_stmt_str(ctx, cg_cuda_insert_sync(ctx, loop)),
			 "for (k, 0, 4) {\n  S[t] = G[t]\n  barrier()\n  G[t] = S[63 - t]\n  barrier()\n}\n");

	/* already synchronized: unchanged */
	ts_stmt *done = kg_loop(ctx, k, 4, TS_FOR_SERIAL,
				ir_seq(ctx, 4, (ts_stmt *[]){wr, ir_barrier(ctx), rd, ir_barrier(ctx)}));
	ck_assert_ptr_eq(cg_cuda_insert_sync(ctx, done), done);

	/* a loop that only writes needs no barrier; a thread loop is not sequential */
	ts_stmt *wonly = kg_loop(ctx, k, 4, TS_FOR_SERIAL, wr);
	ck_assert_ptr_eq(cg_cuda_insert_sync(ctx, wonly), wonly);
	ts_stmt *bound = kg_bind(ctx, k, 4, TS_THREAD_Y, ir_seq2(ctx, wr, rd));
	ck_assert_str_eq(ir_stmt_str(ctx, cg_cuda_insert_sync(ctx, bound)),
			 "bind threadIdx.y (k, 0, 4) {\n  S[t] = G[t]\n  barrier()\n  G[t] = S[63 - t]\n}\n");
	ts_stmt *ww = ir_seq2(ctx, wr, upd); /* writes are not ordered */
	ck_assert_ptr_eq(cg_cuda_insert_sync(ctx, ww), ww);

	/* a vectorized loop is left alone even if it reads and writes */
	ts_stmt *vec = kg_loop(ctx, v, 4, TS_FOR_VECTORIZED,
			       ir_store(ctx, S, v, ts_load(ctx, S, ts_add(ctx, v, KI(4)))));
	ck_assert_ptr_eq(cg_cuda_insert_sync(ctx, vec), vec);

	/* a write inside a branch followed by a read after it */
	ts_stmt *br = ir_if(ctx, ts_lt(ctx, t, KI(32)), wr, NULL);
	ck_assert_str_eq(ir_stmt_str(ctx, cg_cuda_insert_sync(ctx, ir_seq2(ctx, br, rd))),
			 "if (t < 32) {\n  S[t] = G[t]\n}\nbarrier()\nG[t] = S[63 - t]\n");
	ck_assert_ptr_null(cg_cuda_insert_sync(ctx, NULL));
	ts_ctx_free(ctx);
}
END_TEST

/* Two tiles fetched one after the other, the second allocated around the
 * loop that reads both: one barrier, after the second fetch, orders both;
 * none between the fetches.  Without a barrier inside, the whole allocation
 * counts and the read of the first tile still gets one. */
START_TEST(test_sync_two_tiles)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_buffer *G = kg_buf(ctx, "G", ts_float32, 64, 0, TS_SCOPE_GLOBAL);
	ts_buffer *S = kg_buf(ctx, "S", ts_float32, 64, 0, TS_SCOPE_SHARED);
	ts_buffer *T = kg_buf(ctx, "T", ts_float32, 64, 0, TS_SCOPE_SHARED);
	ts_expr *t = ts_var(ctx, "t");
	ts_stmt *ws = ir_store(ctx, S, t, ts_load(ctx, G, t));
	ts_stmt *wt = ir_store(ctx, T, t, ts_load(ctx, G, t));
	ts_stmt *rd = ir_store(ctx, G, t, ts_add(ctx, ts_load(ctx, S, ts_sub(ctx, KI(63), t)),
						 ts_load(ctx, T, ts_sub(ctx, KI(63), t))));
	ts_stmt *two = ir_seq2(ctx, ws, ir_allocate(ctx, T, ir_seq2(ctx, wt, rd)));
	ck_assert_str_eq(ir_stmt_str(ctx, cg_cuda_insert_sync(ctx, two)),
			 "S[t] = G[t]\nallocate T[float32 * 64] in shared {\n  T[t] = G[t]\n  barrier()\n"
			 "  G[t] = S[63 - t] + T[63 - t]\n}\n");
	ts_stmt *rs = ir_store(ctx, G, t, ts_load(ctx, S, t));
	ts_stmt *late = ir_seq2(ctx, ws, ir_allocate(ctx, T, ir_seq2(ctx, rs, wt)));
	ck_assert_str_eq(ir_stmt_str(ctx, cg_cuda_insert_sync(ctx, late)),
			 "S[t] = G[t]\nbarrier()\nallocate T[float32 * 64] in shared {\n  G[t] = S[t]\n"
			 "  T[t] = G[t]\n}\n");
	ts_ctx_free(ctx);
}
END_TEST

/* A symbolic matmul (ts_size_var) in C: the sizes parameter comes last,
 * and one compiled function runs on several extents. */
START_TEST(test_c_symbolic)
{
	ts_ctx *ctx = ts_ctx_new();
	int64_t m = ts_size_var(ctx, "m", 64), n = ts_size_var(ctx, "n", 64), k = ts_size_var(ctx, "k", 64);
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(m, k), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(k, n), ts_float32);
	ts_tensor *C = ts_op_matmul(ctx, A, B, false, false);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	tu_ok(ctx, ts_schedule_matmul_cpu(s, C, NULL));
	ts_func *f = ts_lower(s, "symmm", 3, (ts_tensor *[]){A, B, C});
	tu_nonnull(ctx, f);
	const char *src = cg_emit_c(ctx, f);
	ck_assert_msg(src != NULL, "%s", ts_last_error(ctx));
	ck_assert_ptr_nonnull(strstr(src, "sizes"));
	if (have_cc()) {
		built b = build(src);
		static const int64_t ext[][3] = {{5, 7, 3}, {64, 64, 64}, {33, 40, 17}};
		for (int c = 0; c < 3; c++) {
			int64_t M = ext[c][0], N = ext[c][1], K = ext[c][2];
			ts_array *a = rand_f32(M * K, 1, -1, 1), *bb = rand_f32(K * N, 2, -1, 1);
			ts_array *out = rand_f32(M * N, 3, 0, 1);
			int64_t sizes[3] = {M, K, N}; /* order of first appearance: m, k, n */
			ck_assert_int_eq(packed(&b, "symmm")((void *[]){a->data, bb->data, out->data, sizes}), 0);
			const float *x = a->data, *y = bb->data, *z = out->data;
			for (int64_t i = 0; i < M; i++)
				for (int64_t j = 0; j < N; j++) {
					double want = 0;
					for (int64_t l = 0; l < K; l++)
						want += (double)x[i * K + l] * y[l * N + j];
					ck_assert_msg(fabs(z[i * N + j] - want) < 1e-4, "C[%lld, %lld] = %g, want %g",
						      (long long)i, (long long)j, z[i * N + j], want);
				}
			ts_array_free(a), ts_array_free(bb), ts_array_free(out);
		}
		unbuild(&b);
	}
	ts_ctx_free(ctx);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("c_emit");
	TCase *tc = tcase_create("c");
	tcase_add_test(tc, test_c_vadd);
	tcase_add_test(tc, test_c_misc);
	tcase_add_test(tc, test_c_round_tf32);
	tcase_add_test(tc, test_c_warning_free);
	tcase_add_test(tc, test_c_float16);
	tcase_add_test(tc, test_c_bfloat16);
	tcase_add_test(tc, test_c_narrow_and_nan);
	tcase_add_test(tc, test_c_signed_overflow_wraps);
	tcase_add_test(tc, test_c_zero_minus_keeps_sign);
	tcase_add_test(tc, test_c_matmul);
	tcase_add_test(tc, test_c_symbolic);
	tcase_add_test(tc, test_c_heap_temporary);
	tcase_add_test(tc, test_c_rejects);
	tcase_add_test(tc, test_emit_out_of_memory);
	suite_add_tcase(s, tc);
	tc = tcase_create("cuda");
	tcase_add_test(tc, test_cuda_vadd);
	tcase_add_test(tc, test_cuda_gemm);
	tcase_add_test(tc, test_cuda_thread_array_aligned);
	tcase_add_test(tc, test_cuda_conv);
	tcase_add_test(tc, test_cuda_guard_and_alignment);
	tcase_add_test(tc, test_cuda_rejects);
	tcase_add_test(tc, test_cuda_thread_dependence);
	tcase_add_test(tc, test_uniform_lanes_and_serial_threads);
	tcase_add_test(tc, test_sync_cases);
	tcase_add_test(tc, test_sync_two_tiles);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
