/* test_interp.c - the loop-IR interpreter on hand-built lowered functions,
 * compared with plain C loops on random data, and its error paths. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arith.h"
#include "interp.h"

#define I(v) ts_int(ctx, (v))

static ts_buffer *buf1(ts_ctx *ctx, const char *name, ts_dtype t, int64_t n)
{
	return ir_buffer_new(ctx, name, t, 1, (int64_t[]){n}, TS_SCOPE_GLOBAL);
}

static ts_array *arr1(ts_dtype t, int64_t n, uint64_t seed, double lo, double hi)
{
	ts_array *a = ts_array_new(NULL, t, 1, (int64_t[]){n});
	ck_assert_ptr_nonnull(a);
	ts_array_fill_random(a, seed, lo, hi);
	return a;
}

static ts_func *func(ts_ctx *ctx, const char *name, int n, ts_buffer *const *params,
		     ts_stmt *body)
{
	ck_assert_msg(body != NULL, "building %s: %s", name, ts_last_error(ctx));
	ts_func *f = ts_alloc(ctx, sizeof(*f));
	ts_buffer **p = ts_alloc_array(ctx, (size_t)n, sizeof(*p));
	memcpy(p, params, (size_t)n * sizeof(*p));
	*f = (ts_func){.name = name, .nparams = n, .params = p, .body = body};
	return f;
}

static ts_stmt *loop(ts_ctx *ctx, ts_expr *v, int64_t min, int64_t extent, ts_for_kind k,
		     ts_stmt *body)
{
	return ir_for(ctx, v, I(min), I(extent), k, TS_THREAD_NONE, body);
}

static void run_ok(ts_ctx *ctx, const ts_func *f, void *const *args)
{
	ts_status st = cg_interp_run(ctx, f, args);
	ck_assert_msg(st == TS_OK, "%s: %s", f->name, ts_last_error(ctx));
}

static void assert_f32_eq(const ts_array *got, const float *want, int64_t n)
{
	const float *g = got->data;
	for (int64_t i = 0; i < n; i++)
		ck_assert_msg(g[i] == want[i] || (isnan(g[i]) && isnan(want[i])),
			      "element %lld: got %.9g, want %.9g", (long long)i, g[i], want[i]);
}

/* ---- matmul ------------------------------------------------------------------ */

/* C[i*N+j] = 0; for k: C[i*N+j] = C[i*N+j] + A[i*K+k] * B[k*N+j] */
static void check_matmul(int64_t M, int64_t N, int64_t K, ts_for_kind outer)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_buffer *A = buf1(ctx, "A", ts_float32, M * K), *B = buf1(ctx, "B", ts_float32, K * N);
	ts_buffer *C = buf1(ctx, "C", ts_float32, M * N);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j"), *k = ts_var(ctx, "k");
	ts_expr *ci = ts_add(ctx, ts_mul(ctx, i, I(N)), j);
	ts_expr *prod = ts_mul(ctx, ts_load(ctx, A, ts_add(ctx, ts_mul(ctx, i, I(K)), k)),
			       ts_load(ctx, B, ts_add(ctx, ts_mul(ctx, k, I(N)), j)));
	ts_stmt *acc = ir_store(ctx, C, ci, ts_add(ctx, ts_load(ctx, C, ci), prod));
	ts_stmt *body = ir_seq2(ctx, ir_store(ctx, C, ci, ts_float(ctx, 0)),
				loop(ctx, k, 0, K, TS_FOR_SERIAL, acc));
	ts_func *f = func(ctx, "matmul", 3, (ts_buffer *[]){A, B, C},
			  loop(ctx, i, 0, M, outer, loop(ctx, j, 0, N, TS_FOR_SERIAL, body)));
	ts_array *a = arr1(ts_float32, M * K, 1, -1, 1), *b = arr1(ts_float32, K * N, 2, -1, 1);
	ts_array *c = arr1(ts_float32, M * N, 3, -1, 1);
	run_ok(ctx, f, (void *[]){a->data, b->data, c->data});
	float *want = calloc((size_t)(M * N), sizeof(float));
	const float *pa = a->data, *pb = b->data;
	for (int64_t x = 0; x < M; x++)
		for (int64_t y = 0; y < N; y++) {
			float s = 0;
			for (int64_t z = 0; z < K; z++)
				s = s + pa[x * K + z] * pb[z * N + y];
			want[x * N + y] = s;
		}
	assert_f32_eq(c, want, M * N);
	free(want);
	ts_array_free(a);
	ts_array_free(b);
	ts_array_free(c);
	ts_ctx_free(ctx);
}

START_TEST(test_matmul)
{
	check_matmul(37, 29, 23, TS_FOR_SERIAL);
	check_matmul(128, 128, 128, TS_FOR_SERIAL);
}
END_TEST

START_TEST(test_parallel_matmul)
{
	check_matmul(19, 33, 7, TS_FOR_PARALLEL);
}
END_TEST

/* ---- vectors ------------------------------------------------------------------ */

enum { VN = 101, VW = 8 };

/* C = A * B + 1.5 and D = max-by-select(A, B), as 8-wide vector statements
 * with RAMP / BROADCAST and a scalar tail. */
static ts_stmt *vector_body(ts_ctx *ctx, ts_buffer *A, ts_buffer *B, ts_buffer *C,
			    ts_buffer *D, ts_expr *idx)
{
	int w = idx->dtype.lanes;
	ts_expr *a = ts_load(ctx, A, idx), *b = ts_load(ctx, B, idx);
	ts_expr *k = ts_float(ctx, 1.5);
	ts_stmt *s1 = ir_store(ctx, C, idx, ts_add(ctx, ts_mul(ctx, a, b),
						   w > 1 ? ts_broadcast(ctx, k, w) : k));
	ts_stmt *s2 = ir_store(ctx, D, idx, ts_select(ctx, ts_gt(ctx, a, b), a, b));
	return ir_seq2(ctx, s1, s2);
}

static void vector_reference(const ts_array *a, const ts_array *b, float *c, float *d)
{
	const float *pa = a->data, *pb = b->data;
	for (int i = 0; i < VN; i++) {
		c[i] = pa[i] * pb[i] + 1.5f;
		d[i] = pa[i] > pb[i] ? pa[i] : pb[i];
	}
}

static void check_vector(ts_ctx *ctx, ts_stmt *body, ts_buffer *const *bufs)
{
	ts_func *f = func(ctx, "vadd", 4, bufs, body);
	ts_array *a = arr1(ts_float32, VN, 11, -2, 2), *b = arr1(ts_float32, VN, 12, -2, 2);
	ts_array *c = arr1(ts_float32, VN, 13, -2, 2), *d = arr1(ts_float32, VN, 14, -2, 2);
	run_ok(ctx, f, (void *[]){a->data, b->data, c->data, d->data});
	float wc[VN], wd[VN];
	vector_reference(a, b, wc, wd);
	assert_f32_eq(c, wc, VN);
	assert_f32_eq(d, wd, VN);
	ts_array_free(a);
	ts_array_free(b);
	ts_array_free(c);
	ts_array_free(d);
}

START_TEST(test_vector_ramp)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_buffer *bufs[4] = {buf1(ctx, "A", ts_float32, VN), buf1(ctx, "B", ts_float32, VN),
			      buf1(ctx, "C", ts_float32, VN), buf1(ctx, "D", ts_float32, VN)};
	ts_expr *io = ts_var(ctx, "i.outer"), *t = ts_var(ctx, "i.tail");
	ts_expr *ramp = ts_ramp(ctx, ts_mul(ctx, io, I(VW)), 1, VW);
	ts_stmt *main = loop(ctx, io, 0, VN / VW, TS_FOR_SERIAL,
			     vector_body(ctx, bufs[0], bufs[1], bufs[2], bufs[3], ramp));
	ts_stmt *tail = loop(ctx, t, VN / VW * VW, VN % VW, TS_FOR_SERIAL,
			     vector_body(ctx, bufs[0], bufs[1], bufs[2], bufs[3], t));
	check_vector(ctx, ir_seq2(ctx, main, tail), bufs);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_vectorized_loop)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_buffer *bufs[4] = {buf1(ctx, "A", ts_float32, VN), buf1(ctx, "B", ts_float32, VN),
			      buf1(ctx, "C", ts_float32, VN), buf1(ctx, "D", ts_float32, VN)};
	ts_expr *io = ts_var(ctx, "i.outer"), *ii = ts_var(ctx, "i.inner");
	ts_expr *i = ts_add(ctx, ts_mul(ctx, io, I(VW)), ii);
	ts_stmt *guarded = ir_if(ctx, ts_lt(ctx, i, I(VN)),
				 vector_body(ctx, bufs[0], bufs[1], bufs[2], bufs[3], i), NULL);
	ts_stmt *body = loop(ctx, io, 0, (VN + VW - 1) / VW, TS_FOR_SERIAL,
			     loop(ctx, ii, 0, VW, TS_FOR_VECTORIZED, guarded));
	check_vector(ctx, body, bufs);
	ts_ctx_free(ctx);
}
END_TEST

/* Strided and reversed ramps, a vector LET and vector integer arithmetic:
 * C[2x .. 2x+6 step 2] = int32(A[rev]) * 3 - x. */
START_TEST(test_vector_strided)
{
	ts_ctx *ctx = ts_ctx_new();
	enum { N = 40, W = 4 };
	ts_buffer *A = buf1(ctx, "A", ts_float32, N), *C = buf1(ctx, "C", ts_int32, 2 * N);
	ts_expr *x = ts_var(ctx, "x");
	ts_expr *v = ts_var_typed(ctx, "v", ts_dtype_with_lanes(ts_int32, W));
	ts_expr *rev = ts_ramp(ctx, ts_sub(ctx, I(N - 1), ts_mul(ctx, x, I(W))), -1, W);
	ts_expr *val = ts_cast(ctx, ts_dtype_with_lanes(ts_int32, W), ts_load(ctx, A, rev));
	ts_expr *res = ts_sub(ctx, ts_mul(ctx, v, ts_broadcast(ctx, I(3), W)),
			      ts_broadcast(ctx, x, W));
	ts_stmt *st = ir_store(ctx, C, ts_ramp(ctx, ts_mul(ctx, x, I(2 * W)), 2, W), res);
	ts_func *f = func(ctx, "strided", 2, (ts_buffer *[]){A, C},
			  loop(ctx, x, 0, N / W, TS_FOR_SERIAL, ir_let(ctx, v, val, st)));
	ts_array *a = arr1(ts_float32, N, 21, -100, 100);
	ts_array *c = arr1(ts_int32, 2 * N, 22, -100, 100);
	int32_t want[2 * N];
	memcpy(want, c->data, sizeof(want));
	const float *pa = a->data;
	for (int xx = 0; xx < N / W; xx++)
		for (int l = 0; l < W; l++)
			want[xx * 2 * W + 2 * l] = (int32_t)pa[N - 1 - xx * W - l] * 3 - xx;
	run_ok(ctx, f, (void *[]){a->data, c->data});
	ck_assert_mem_eq(c->data, want, sizeof(want));
	ts_array_free(a);
	ts_array_free(c);
	ts_ctx_free(ctx);
}
END_TEST

/* ---- thread loops, allocate, if, let ---------------------------------------------- */

/* A GPU-style schedule: blocks of 32 threads, a guard and a barrier. */
START_TEST(test_thread_loops)
{
	ts_ctx *ctx = ts_ctx_new();
	enum { N = 100 };
	ts_buffer *A = buf1(ctx, "A", ts_float32, N), *C = buf1(ctx, "C", ts_float32, N);
	ts_expr *bx = ts_var(ctx, "bx"), *tx = ts_var(ctx, "tx");
	ts_expr *i = ts_add(ctx, ts_mul(ctx, bx, I(32)), tx);
	ts_stmt *st = ir_if(ctx, ts_lt(ctx, i, I(N)),
			    ir_store(ctx, C, i, ts_sqrt(ctx, ts_load(ctx, A, i))), NULL);
	ts_stmt *th = ir_for(ctx, tx, I(0), I(32), TS_FOR_THREAD, TS_THREAD_X,
			     ir_seq2(ctx, st, ir_barrier(ctx)));
	ts_func *f = func(ctx, "sqrt", 2, (ts_buffer *[]){A, C},
			  ir_for(ctx, bx, I(0), I(4), TS_FOR_THREAD, TS_BLOCK_X, th));
	ts_array *a = arr1(ts_float32, N, 31, 0, 9), *c = arr1(ts_float32, N, 32, 0, 9);
	run_ok(ctx, f, (void *[]){a->data, c->data});
	float want[N];
	for (int k = 0; k < N; k++)
		want[k] = sqrtf(((float *)a->data)[k]);
	assert_f32_eq(c, want, N);
	ts_array_free(a);
	ts_array_free(c);
	ts_ctx_free(ctx);
}
END_TEST

/* A parallel loop with a thread-private local buffer: each row is staged in
 * T, then written back reversed and scaled. */
START_TEST(test_allocate)
{
	ts_ctx *ctx = ts_ctx_new();
	enum { M = 7, N = 13 };
	ts_buffer *A = buf1(ctx, "A", ts_float32, M * N), *C = buf1(ctx, "C", ts_float32, M * N);
	ts_buffer *T = ir_buffer_new(ctx, "T", ts_float32, 1, (int64_t[]){N}, TS_SCOPE_LOCAL);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j"), *j2 = ts_var(ctx, "j2");
	ts_stmt *fill = loop(ctx, j, 0, N, TS_FOR_SERIAL,
			     ir_store(ctx, T, j, ts_mul(ctx, ts_load(ctx, A, ts_add(ctx, ts_mul(ctx, i, I(N)), j)),
							 ts_float(ctx, 2))));
	ts_stmt *back = loop(ctx, j2, 0, N, TS_FOR_SERIAL,
			     ir_store(ctx, C, ts_add(ctx, ts_mul(ctx, i, I(N)), j2),
				      ts_load(ctx, T, ts_sub(ctx, I(N - 1), j2))));
	ts_func *f = func(ctx, "rev", 2, (ts_buffer *[]){A, C},
			  loop(ctx, i, 0, M, TS_FOR_PARALLEL, ir_allocate(ctx, T, ir_seq2(ctx, fill, back))));
	ts_array *a = arr1(ts_float32, M * N, 41, -3, 3), *c = arr1(ts_float32, M * N, 42, -3, 3);
	run_ok(ctx, f, (void *[]){a->data, c->data});
	float want[M * N];
	for (int x = 0; x < M; x++)
		for (int y = 0; y < N; y++)
			want[x * N + y] = ((float *)a->data)[x * N + N - 1 - y] * 2;
	assert_f32_eq(c, want, M * N);
	ts_array_free(a);
	ts_array_free(c);
	ts_ctx_free(ctx);
}
END_TEST

/* Reading an ALLOCATE'd buffer before writing it gives recognisable garbage. */
START_TEST(test_allocate_garbage)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_buffer *C = buf1(ctx, "C", ts_float32, 1), *D = buf1(ctx, "D", ts_int32, 1);
	ts_buffer *T = ir_buffer_new(ctx, "T", ts_float32, 1, (int64_t[]){4}, TS_SCOPE_LOCAL);
	ts_buffer *U = ir_buffer_new(ctx, "U", ts_int32, 1, (int64_t[]){4}, TS_SCOPE_SHARED);
	ts_stmt *body = ir_seq2(ctx, ir_store(ctx, C, I(0), ts_load(ctx, T, I(3))),
				ir_store(ctx, D, I(0), ts_load(ctx, U, I(2))));
	ts_func *f = func(ctx, "garbage", 2, (ts_buffer *[]){C, D},
			  ir_allocate(ctx, T, ir_allocate(ctx, U, body)));
	float c = 1;
	int32_t d = 1;
	run_ok(ctx, f, (void *[]){&c, &d});
	ck_assert(isnan(c));
	ck_assert_int_eq(d, 0x5a5a5a5a);
	ts_ctx_free(ctx);
}
END_TEST

/* let y = A[i] * 2 in if (y > 1) C[i] = y else C[i] = 0 - y; the else-less
 * form leaves C alone. */
START_TEST(test_if_let)
{
	ts_ctx *ctx = ts_ctx_new();
	enum { N = 57 };
	ts_buffer *A = buf1(ctx, "A", ts_float32, N), *C = buf1(ctx, "C", ts_float32, N);
	ts_buffer *D = buf1(ctx, "D", ts_float32, N);
	ts_expr *i = ts_var(ctx, "i"), *y = ts_var_typed(ctx, "y", ts_float32);
	ts_stmt *ite = ir_if(ctx, ts_gt(ctx, y, ts_float(ctx, 1)), ir_store(ctx, C, i, y),
			     ir_store(ctx, C, i, ts_sub(ctx, ts_float(ctx, 0), y)));
	ts_stmt *it = ir_if(ctx, ts_le(ctx, y, ts_float(ctx, 1)), ir_store(ctx, D, i, y), NULL);
	ts_stmt *body = ir_let(ctx, y, ts_mul(ctx, ts_load(ctx, A, i), ts_float(ctx, 2)),
			       ir_seq2(ctx, ite, it));
	ts_func *f = func(ctx, "iflet", 3, (ts_buffer *[]){A, C, D},
			  loop(ctx, i, 0, N, TS_FOR_UNROLLED, body));
	ts_array *a = arr1(ts_float32, N, 51, -2, 2), *c = arr1(ts_float32, N, 52, -2, 2);
	ts_array *d = arr1(ts_float32, N, 53, -2, 2);
	float wc[N], wd[N];
	memcpy(wd, d->data, sizeof(wd));
	for (int k = 0; k < N; k++) {
		float v = ((float *)a->data)[k] * 2;
		wc[k] = v > 1 ? v : 0 - v;
		if (v <= 1)
			wd[k] = v;
	}
	run_ok(ctx, f, (void *[]){a->data, c->data, d->data});
	assert_f32_eq(c, wc, N);
	assert_f32_eq(d, wd, N);
	ts_array_free(a);
	ts_array_free(c);
	ts_array_free(d);
	ts_ctx_free(ctx);
}
END_TEST

/* ---- intrinsics ------------------------------------------------------------------ */

static float sigmoidf_ref(float x)
{
	return 1.0f / (1.0f + expf(-x));
}

static double sigmoid_ref(double x)
{
	return 1 / (1 + exp(-x));
}

/* Unary intrinsics with their float and double references; pow is binary. */
static const struct {
	ir_intrinsic op;
	float (*f32)(float);
	double (*f64)(double);
} unary_refs[] = {
	{IR_INTRIN_EXP, expf, exp},       {IR_INTRIN_LOG, logf, log},
	{IR_INTRIN_SQRT, sqrtf, sqrt},    {IR_INTRIN_TANH, tanhf, tanh},
	{IR_INTRIN_EXP2, exp2f, exp2},    {IR_INTRIN_FABS, fabsf, fabs},
	{IR_INTRIN_ERF, erff, erf},       {IR_INTRIN_SIGMOID, sigmoidf_ref, sigmoid_ref},
	{IR_INTRIN_FLOOR, floorf, floor}, {IR_INTRIN_CEIL, ceilf, ceil},
	{IR_INTRIN_ROUND_TF32, ir_round_tf32, NULL}, /* float32 only */
};

/* C[i] = op(A[i]) (op(A[i], B[i]) for pow) in dtype t, inputs in [0.1, 4). */
static void check_intrinsic(ir_intrinsic op, ts_dtype t, double (*ref)(ir_intrinsic, double, double, int))
{
	ts_ctx *ctx = ts_ctx_new();
	enum { N = 33 };
	ts_buffer *A = buf1(ctx, "A", t, N), *B = buf1(ctx, "B", t, N), *C = buf1(ctx, "C", t, N);
	ts_expr *i = ts_var(ctx, "i");
	ts_expr *args[2] = {ts_load(ctx, A, i), ts_load(ctx, B, i)};
	ts_expr *call = ts_call(ctx, op, ir_intrinsic_arity(op), args);
	ts_func *f = func(ctx, ir_intrinsic_name(op), 3, (ts_buffer *[]){A, B, C},
			  loop(ctx, i, 0, N, TS_FOR_SERIAL, ir_store(ctx, C, i, call)));
	ts_array *a = arr1(t, N, 61 + op, 0.1, 4), *b = arr1(t, N, 71 + op, -2, 2);
	ts_array *c = arr1(t, N, 81, 0, 1);
	run_ok(ctx, f, (void *[]){a->data, b->data, c->data});
	for (int k = 0; k < N; k++) {
		double x = ts_elem_get_f64(a->data, t, k), y = ts_elem_get_f64(b->data, t, k);
		double want = ref(op, x, y, t.bits), got = ts_elem_get_f64(c->data, t, k);
		ck_assert_msg(got == want, "%s(%.9g) in float%d: got %.17g, want %.17g",
			      ir_intrinsic_name(op), x, t.bits, got, want);
	}
	ts_array_free(a);
	ts_array_free(b);
	ts_array_free(c);
	ts_ctx_free(ctx);
}

static double intrinsic_ref(ir_intrinsic op, double x, double y, int bits)
{
	if (op == IR_INTRIN_POW)
		return bits == 64 ? pow(x, y) : powf((float)x, (float)y);
	for (size_t k = 0; k < TS_COUNT_OF(unary_refs); k++)
		if (unary_refs[k].op == op)
			return bits == 64 ? unary_refs[k].f64(x) : unary_refs[k].f32((float)x);
	ck_abort_msg("no reference for %s", ir_intrinsic_name(op));
	return 0;
}

START_TEST(test_intrinsics)
{
	for (int op = 0; op < IR_INTRIN_COUNT; op++) {
		if (op == IR_INTRIN_LIKELY) /* a bool hint, not a math function */
			continue;
		check_intrinsic((ir_intrinsic)op, ts_float32, intrinsic_ref);
		if (op != IR_INTRIN_ROUND_TF32)
			check_intrinsic((ir_intrinsic)op, ts_float64, intrinsic_ref);
	}
}
END_TEST

/* ---- integers ---------------------------------------------------------------------- */

static int64_t floordiv_ref(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && ((a % b < 0) != (b < 0))) ? q - 1 : q;
}

static int64_t floormod_ref(int64_t a, int64_t b)
{
	return a - floordiv_ref(a, b) * b;
}

/* C0..C3 = truncdiv, truncmod, floordiv, floormod of A and B (nonzero). */
START_TEST(test_int_division)
{
	ts_ctx *ctx = ts_ctx_new();
	enum { N = 200 };
	ts_buffer *A = buf1(ctx, "A", ts_int32, N), *B = buf1(ctx, "B", ts_int32, N);
	ts_buffer *C[4];
	ts_expr *i = ts_var(ctx, "i");
	ts_expr *a = ts_load(ctx, A, i), *b = ts_load(ctx, B, i);
	ts_expr *ops[4] = {ts_truncdiv(ctx, a, b), ts_truncmod(ctx, a, b), ts_floordiv(ctx, a, b),
			   ts_floormod(ctx, a, b)};
	ts_stmt *st[4];
	for (int k = 0; k < 4; k++) {
		C[k] = buf1(ctx, "C", ts_int32, N);
		st[k] = ir_store(ctx, C[k], i, ops[k]);
	}
	ts_func *f = func(ctx, "divs", 6, (ts_buffer *[]){A, B, C[0], C[1], C[2], C[3]},
			  loop(ctx, i, 0, N, TS_FOR_SERIAL, ir_seq(ctx, 4, st)));
	ts_array *aa = arr1(ts_int32, N, 91, -1000, 1000), *ab = arr1(ts_int32, N, 92, -20, 20);
	int32_t *pa = aa->data, *pb = ab->data, out[4][N];
	for (int k = 0; k < N; k++)
		if (pb[k] == 0)
			pb[k] = k % 2 ? 7 : -7;
	run_ok(ctx, f, (void *[]){pa, pb, out[0], out[1], out[2], out[3]});
	int negatives = 0;
	for (int k = 0; k < N; k++) {
		negatives += pa[k] < 0 && pb[k] > 0;
		ck_assert_int_eq(out[0][k], pa[k] / pb[k]);
		ck_assert_int_eq(out[1][k], pa[k] % pb[k]);
		ck_assert_int_eq(out[2][k], floordiv_ref(pa[k], pb[k]));
		ck_assert_int_eq(out[3][k], floormod_ref(pa[k], pb[k]));
	}
	ck_assert_int_gt(negatives, 10);
	ts_array_free(aa);
	ts_array_free(ab);
	ts_ctx_free(ctx);
}
END_TEST

/* The rules of ir.h on constants, and division that overflows and wraps. */
START_TEST(test_int_division_edges)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_buffer *C = buf1(ctx, "C", ts_int64, 8);
	ts_expr *m7 = I(-7), *two = I(2);
	ts_expr *i64min = ts_const(ctx, ts_int64, INT64_MIN), *m1 = ts_const(ctx, ts_int64, -1);
	ts_expr *i8min = ts_const(ctx, ts_int8, -128), *i8m1 = ts_const(ctx, ts_int8, -1);
	ts_expr *vals[8] = {
		ts_cast(ctx, ts_int64, ts_truncdiv(ctx, m7, two)),
		ts_cast(ctx, ts_int64, ts_truncmod(ctx, m7, two)),
		ts_cast(ctx, ts_int64, ts_floordiv(ctx, m7, two)),
		ts_cast(ctx, ts_int64, ts_floormod(ctx, m7, two)),
		ts_cast(ctx, ts_int64, ts_floormod(ctx, I(7), I(-2))),
		ts_truncdiv(ctx, i64min, m1),
		ts_floormod(ctx, i64min, m1),
		ts_cast(ctx, ts_int64, ts_floordiv(ctx, i8min, i8m1)),
	};
	ts_stmt *st[8];
	for (int k = 0; k < 8; k++)
		st[k] = ir_store(ctx, C, I(k), vals[k]);
	ts_func *f = func(ctx, "edges", 1, &C, ir_seq(ctx, 8, st));
	int64_t out[8];
	run_ok(ctx, f, (void *[]){out});
	int64_t want[8] = {-3, -1, -4, 1, -1, INT64_MIN, 0, -128};
	for (int k = 0; k < 8; k++)
		ck_assert_msg(out[k] == want[k], "case %d: got %lld, want %lld", k,
			      (long long)out[k], (long long)want[k]);
	ts_ctx_free(ctx);
}
END_TEST

/* int8 arithmetic wraps: C = A * B + 100, D = int8(E) for int32 E. */
START_TEST(test_int8_wrap)
{
	ts_ctx *ctx = ts_ctx_new();
	enum { N = 64 };
	ts_buffer *A = buf1(ctx, "A", ts_int8, N), *B = buf1(ctx, "B", ts_int8, N);
	ts_buffer *C = buf1(ctx, "C", ts_int8, N), *D = buf1(ctx, "D", ts_int8, N);
	ts_buffer *E = buf1(ctx, "E", ts_int32, N);
	ts_expr *i = ts_var(ctx, "i");
	ts_expr *v = ts_add(ctx, ts_mul(ctx, ts_load(ctx, A, i), ts_load(ctx, B, i)),
			    ts_const(ctx, ts_int8, 100));
	ts_stmt *body = ir_seq2(ctx, ir_store(ctx, C, i, v),
				ir_store(ctx, D, i, ts_cast(ctx, ts_int8, ts_load(ctx, E, i))));
	ts_func *f = func(ctx, "wrap", 5, (ts_buffer *[]){A, B, C, D, E},
			  loop(ctx, i, 0, N, TS_FOR_SERIAL, body));
	ts_array *a = arr1(ts_int8, N, 101, -128, 128), *b = arr1(ts_int8, N, 102, -128, 128);
	ts_array *e = arr1(ts_int32, N, 103, -100000, 100000);
	int8_t c[N], d[N];
	run_ok(ctx, f, (void *[]){a->data, b->data, c, d, e->data});
	int wrapped = 0;
	for (int k = 0; k < N; k++) {
		int exact = ((int8_t *)a->data)[k] * ((int8_t *)b->data)[k] + 100;
		wrapped += exact < -128 || exact > 127;
		ck_assert_int_eq(c[k], (int8_t)(uint8_t)(unsigned)exact);
		ck_assert_int_eq(d[k], (int8_t)(uint8_t)(uint32_t)((int32_t *)e->data)[k]);
	}
	ck_assert_int_gt(wrapped, 10);
	ts_array_free(a);
	ts_array_free(b);
	ts_array_free(e);
	ts_ctx_free(ctx);
}
END_TEST

/* uint64 compares unsigned, uint8 wraps, bool logic, float-to-int casts
 * truncate toward zero (NaN gives 0), and a scalar condition selects vectors. */
START_TEST(test_unsigned_bool_cast)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_dtype u64 = TS_DTYPE(TS_TYPE_UINT, 64);
	ts_buffer *C = buf1(ctx, "C", ts_int64, 8), *V = buf1(ctx, "V", ts_int32, 4);
	ts_expr *big = ts_const(ctx, u64, (int64_t)(UINT64_MAX - 1)), *five = ts_const(ctx, u64, 5);
	ts_expr *u8 = ts_add(ctx, ts_const(ctx, ts_uint8, 255), ts_const(ctx, ts_uint8, 1));
	ts_expr *cmp = ts_or(ctx, ts_and(ctx, ts_lt(ctx, I(2), I(3)), ts_not(ctx, ts_eq(ctx, I(2), I(3)))),
			     ts_const(ctx, ts_bool, 0));
	ts_expr *vals[6] = {
		ts_cast(ctx, ts_int64, ts_gt(ctx, big, five)),
		ts_cast(ctx, ts_int64, ts_max(ctx, big, five)),
		ts_cast(ctx, ts_int64, u8),
		ts_cast(ctx, ts_int64, cmp),
		ts_cast(ctx, ts_int64, ts_float(ctx, -2.75)),
		ts_cast(ctx, ts_int64, ts_div(ctx, ts_float(ctx, 0), ts_float(ctx, 0))),
	};
	ts_stmt *st[7];
	for (int k = 0; k < 6; k++)
		st[k] = ir_store(ctx, C, I(k), vals[k]);
	ts_expr *sel = ts_select(ctx, ts_lt(ctx, I(1), I(0)), ts_broadcast(ctx, I(7), 4),
				 ts_ramp(ctx, I(10), -3, 4));
	st[6] = ir_store(ctx, V, ts_ramp(ctx, I(0), 1, 4), sel);
	int64_t c[8] = {0};
	int32_t v[4];
	ts_status rc = cg_interp_stmt(ctx, ir_seq(ctx, 7, st), 2, (ts_buffer *[]){C, V}, (void *[]){c, v});
	ck_assert_msg(rc == TS_OK, "%s", ts_last_error(ctx));
	int64_t want[6] = {1, (int64_t)(UINT64_MAX - 1), 0, 1, -2, 0};
	for (int k = 0; k < 6; k++)
		ck_assert_msg(c[k] == want[k], "case %d: got %lld, want %lld", k, (long long)c[k],
			      (long long)want[k]);
	int32_t wv[4] = {10, 7, 4, 1};
	ck_assert_mem_eq(v, wv, sizeof(wv));
	ts_ctx_free(ctx);
}
END_TEST

/* ---- 16-bit floats ------------------------------------------------------------------- */

/* H[i] = float16(A[i] * 3); G[i] = H[i] + H[i] in float16; Q = bfloat16(A). */
START_TEST(test_float16_store)
{
	ts_ctx *ctx = ts_ctx_new();
	enum { N = 50 };
	ts_buffer *A = buf1(ctx, "A", ts_float32, N), *H = buf1(ctx, "H", ts_float16, N);
	ts_buffer *G = buf1(ctx, "G", ts_float16, N), *Q = buf1(ctx, "Q", ts_bfloat16, N);
	ts_expr *i = ts_var(ctx, "i"), *a = ts_load(ctx, A, i), *h = ts_load(ctx, H, i);
	ts_stmt *st[3] = {
		ir_store(ctx, H, i, ts_cast(ctx, ts_float16, ts_mul(ctx, a, ts_float(ctx, 3)))),
		ir_store(ctx, G, i, ts_add(ctx, h, h)),
		ir_store(ctx, Q, i, ts_cast(ctx, ts_bfloat16, a)),
	};
	ts_func *f = func(ctx, "half", 4, (ts_buffer *[]){A, H, G, Q},
			  loop(ctx, i, 0, N, TS_FOR_SERIAL, ir_seq(ctx, 3, st)));
	ts_array *arr = arr1(ts_float32, N, 111, -30, 30);
	uint16_t hh[N], gg[N], qq[N], wh[N], wg[N], wq[N];
	run_ok(ctx, f, (void *[]){arr->data, hh, gg, qq});
	for (int k = 0; k < N; k++) {
		float x = ((float *)arr->data)[k];
		ts_elem_set_f64(wh, ts_float16, k, x * 3.0f);
		ts_elem_set_f64(wg, ts_float16, k, 2 * ts_elem_get_f64(wh, ts_float16, k));
		ts_elem_set_f64(wq, ts_bfloat16, k, x);
	}
	ck_assert_mem_eq(hh, wh, sizeof(hh));
	ck_assert_mem_eq(gg, wg, sizeof(gg));
	ck_assert_mem_eq(qq, wq, sizeof(qq));
	int rounded = 0; /* float16 really has fewer bits than float32 */
	for (int k = 0; k < N; k++)
		rounded += ts_elem_get_f64(hh, ts_float16, k) != ((float *)arr->data)[k] * 3.0f;
	ck_assert_int_gt(rounded, N / 2);
	ts_array_free(arr);
	ts_ctx_free(ctx);
}
END_TEST

/* ---- errors ------------------------------------------------------------------------- */

/* for i in 0..n: C[i] = A[i + shift] + 1; C has 64 elements, A na */
static ts_func *shifted(ts_ctx *ctx, int64_t n, int64_t shift, int64_t na)
{
	ts_buffer *A = buf1(ctx, "A", ts_float32, na), *C = buf1(ctx, "C", ts_float32, 64);
	ts_expr *i = ts_var(ctx, "i");
	ts_stmt *st = ir_store(ctx, C, i, ts_add(ctx, ts_load(ctx, A, ts_add(ctx, i, I(shift))),
						 ts_float(ctx, 1)));
	return func(ctx, "shifted", 2, (ts_buffer *[]){A, C}, loop(ctx, i, 0, n, TS_FOR_SERIAL, st));
}

START_TEST(test_out_of_bounds)
{
	ts_ctx *ctx = ts_ctx_new();
	float a[128], c[64];
	for (int k = 0; k < 128; k++)
		a[k] = (float)k;
	ck_assert_int_eq(cg_interp_run(ctx, shifted(ctx, 64, 1, 64), (void *[]){a, c}), TS_ERR_INVALID);
	tu_assert_error(ctx, "interp: load from A out of bounds: index 64, size 64");
	ts_clear_error(ctx);
	ck_assert_int_eq(cg_interp_run(ctx, shifted(ctx, 65, 0, 128), (void *[]){a, c}), TS_ERR_INVALID);
	tu_assert_error(ctx, "interp: store to C out of bounds: index 64, size 64");
	ck_assert(c[63] == 64.0f); /* every in-bounds store before it happened */
	ts_clear_error(ctx);
	ck_assert_int_eq(cg_interp_run(ctx, shifted(ctx, 4, -2, 64), (void *[]){a, c}), TS_ERR_INVALID);
	tu_assert_error(ctx, "interp: load from A out of bounds: index -2, size 64");
	ts_ctx_free(ctx);
}
END_TEST

/* A vector store whose last lanes fall outside writes no lane at all. */
START_TEST(test_vector_out_of_bounds)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_buffer *C = buf1(ctx, "C", ts_int32, 10);
	ts_stmt *st = ir_store(ctx, C, ts_ramp(ctx, I(6), 1, 8), ts_broadcast(ctx, I(5), 8));
	int32_t c[10] = {0};
	ck_assert_int_eq(cg_interp_stmt(ctx, st, 1, &C, (void *[]){c}), TS_ERR_INVALID);
	tu_assert_error(ctx, "interp: store to C out of bounds: index 10, size 10");
	ck_assert_int_eq(c[6], 0);
	ts_ctx_free(ctx);
}
END_TEST

/* x % 0 is 0 (ir.h), not an error, also inside an ALLOCATE. */
START_TEST(test_division_by_zero)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_buffer *A = buf1(ctx, "A", ts_int32, 4), *C = buf1(ctx, "C", ts_int32, 4);
	ts_buffer *T = ir_buffer_new(ctx, "T", ts_int32, 1, (int64_t[]){4}, TS_SCOPE_LOCAL);
	ts_expr *i = ts_var(ctx, "i");
	ts_stmt *st = ir_store(ctx, C, i, ts_floormod(ctx, I(10), ts_load(ctx, A, i)));
	ts_func *f = func(ctx, "div0", 2, (ts_buffer *[]){A, C},
			  ir_allocate(ctx, T, loop(ctx, i, 0, 4, TS_FOR_SERIAL, st)));
	int32_t a[4] = {3, -4, 0, 1}, c[4];
	tu_ok(ctx, cg_interp_run(ctx, f, (void *[]){a, c}));
	ck_assert_int_eq(c[0], 1);
	ck_assert_int_eq(c[1], -2);
	ck_assert_int_eq(c[2], 0);
	ck_assert_int_eq(c[3], 0);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_null_args)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_func *f = shifted(ctx, 4, 0, 64);
	float a[64];
	ck_assert_int_eq(cg_interp_run(ctx, NULL, (void *[]){a, a}), TS_ERR_INVALID);
	tu_assert_error(ctx, "interp: function is NULL");
	ts_clear_error(ctx);
	ck_assert_int_eq(cg_interp_run(ctx, f, NULL), TS_ERR_INVALID);
	tu_assert_error(ctx, "interp: shifted: args is NULL for 2 parameter(s)");
	ts_clear_error(ctx);
	ck_assert_int_eq(cg_interp_run(ctx, f, (void *[]){a, NULL}), TS_ERR_INVALID);
	tu_assert_error(ctx, "interp: shifted: argument 1 (C) is NULL");
	ts_clear_error(ctx);
	ck_assert_int_eq(cg_interp_stmt(ctx, NULL, 0, NULL, NULL), TS_ERR_INVALID);
	tu_assert_error(ctx, "interp: statement is NULL");
	ts_ctx_free(ctx);
}
END_TEST

/* Vectors wider than the interpreter's 64 lanes cannot even be built:
 * TS_MAX_VECTOR_LANES is 64 too. */
START_TEST(test_too_many_lanes)
{
	ts_ctx *ctx = ts_ctx_new();
	ck_assert_int_eq(TS_MAX_VECTOR_LANES, CG_INTERP_MAX_LANES);
	ck_assert_ptr_null(ts_ramp(ctx, I(0), 1, 128));
	tu_assert_error(ctx, "ramp: needs an integer scalar base and lanes 2..64 (got 128)");
	ts_ctx_free(ctx);
}
END_TEST

/* IR that is not lowered, an unbound variable and an unbound buffer. */
/* An output sharing bytes with another argument is refused, as
 * ts_module_run refuses it (C[i] = sum A over A itself gave 3 8 23 68);
 * inputs may alias each other, and a symbolic extent counts at its
 * value in this call. */
START_TEST(test_aliased_output)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(4), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(4), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 4);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(4), TS_VARS(i),
				  TS_SUM(ctx, ts_mul(ctx, TS_READ(ctx, A, k->var), TS_READ(ctx, B, i)), k));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_func *f = ts_lower(s, "sum", 3, (ts_tensor *[]){A, B, C});
	tu_nonnull(ctx, f);
	float a[8] = {1, 1, 1, 1, 1, 1, 1, 1}, c[4];
	ck_assert_int_eq(cg_interp_run(ctx, f, (void *[]){a, a, a}), TS_ERR_INVALID);
	tu_assert_error(ctx, "interp: sum: argument 2 (C) overlaps argument 0 (A)");
	ts_clear_error(ctx);
	ck_assert_int_eq(cg_interp_run(ctx, f, (void *[]){a, a, a + 3}), TS_ERR_INVALID);
	ts_clear_error(ctx);
	tu_ok(ctx, cg_interp_run(ctx, f, (void *[]){a, a + 1, c}));
	ck_assert(c[0] == 4 && c[3] == 4);
	tu_ok(ctx, cg_interp_run(ctx, f, (void *[]){a, a, a + 4}));
	/* C[n] = A[n] + 1 over size n: at n = 2, A + 2 is past A's bytes */
	int64_t n = ts_size_var(ctx, "n", 8);
	ts_tensor *X = ts_placeholder(ctx, "X", 1, &n, ts_float32);
	ts_tensor *Y = ts_compute(ctx, "Y", 1, &n, TS_VARS(i), ts_add(ctx, TS_READ(ctx, X, i), ts_float(ctx, 1)));
	ts_schedule *s2 = ts_create_schedule(ctx, 1, &Y);
	ts_func *g = ts_lower(s2, "inc", 2, (ts_tensor *[]){X, Y});
	tu_nonnull(ctx, g);
	int64_t two = 2;
	tu_ok(ctx, cg_interp_run(ctx, g, (void *[]){a, a + 2, &two}));
	ck_assert_int_eq(cg_interp_run(ctx, g, (void *[]){a, a + 1, &two}), TS_ERR_INVALID);
	tu_assert_error(ctx, "interp: inc: argument 1 (Y) overlaps argument 0 (X)");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_unbound_and_unlowered)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_buffer *C = buf1(ctx, "C", ts_int32, 4), *X = buf1(ctx, "X", ts_int32, 4);
	int32_t c[4];
	ts_expr *j = ts_var(ctx, "j");
	ck_assert_int_eq(cg_interp_stmt(ctx, ir_store(ctx, C, j, I(1)), 1, &C, (void *[]){c}),
			 TS_ERR_INVALID);
	tu_assert_error(ctx, "interp: variable 'j' is not defined");
	ts_clear_error(ctx);
	ck_assert_int_eq(cg_interp_stmt(ctx, ir_store(ctx, X, I(0), I(1)), 1, &C, (void *[]){c}),
			 TS_ERR_INVALID);
	tu_assert_error(ctx, "interp: buffer X is not bound");
	ts_clear_error(ctx);
	ts_tensor t = {.name = "T", .dtype = ts_int32, .ndim = 1, .shape = {4}};
	ts_expr *idx = I(0);
	ts_stmt *p = ir_provide(ctx, &t, 1, &idx, I(3));
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(cg_interp_stmt(ctx, p, 0, NULL, NULL), TS_ERR_UNSUPPORTED);
	tu_assert_error(ctx, "interp: PROVIDE is not lowered IR");
	ts_ctx_free(ctx);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("interp");
	TCase *tc = tcase_create("run");
	tcase_add_test(tc, test_matmul);
	tcase_add_test(tc, test_parallel_matmul);
	tcase_add_test(tc, test_vector_ramp);
	tcase_add_test(tc, test_vectorized_loop);
	tcase_add_test(tc, test_vector_strided);
	tcase_add_test(tc, test_thread_loops);
	tcase_add_test(tc, test_allocate);
	tcase_add_test(tc, test_allocate_garbage);
	tcase_add_test(tc, test_if_let);
	tcase_add_test(tc, test_intrinsics);
	tcase_add_test(tc, test_int_division);
	tcase_add_test(tc, test_int_division_edges);
	tcase_add_test(tc, test_int8_wrap);
	tcase_add_test(tc, test_unsigned_bool_cast);
	tcase_add_test(tc, test_float16_store);
	suite_add_tcase(s, tc);
	TCase *te = tcase_create("errors");
	tcase_add_test(te, test_out_of_bounds);
	tcase_add_test(te, test_vector_out_of_bounds);
	tcase_add_test(te, test_division_by_zero);
	tcase_add_test(te, test_null_args);
	tcase_add_test(te, test_too_many_lanes);
	tcase_add_test(te, test_unbound_and_unlowered);
	tcase_add_test(te, test_aliased_output);
	suite_add_tcase(s, te);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
