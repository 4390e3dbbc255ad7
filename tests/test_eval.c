/* test_eval.c - the reference evaluator against hand-written C loops. */
#include "testutil.h"

#include <math.h>
#include <string.h>

#include "arith.h"
#include "interp.h"
#include "lower.h"

static ts_array *random_array(const ts_tensor *t, uint64_t seed, double lo, double hi)
{
	ts_array *a = ts_array_for(NULL, t);
	ts_array_fill_random(a, seed, lo, hi);
	return a;
}

/* Evaluates the graph with tensors ts[i] bound to arrays as[i]. */
static ts_status eval_arrays(ts_ctx *ctx, int n, ts_tensor **ts, ts_array **as)
{
	void *data[16];
	for (int i = 0; i < n; i++)
		data[i] = as[i]->data;
	return ts_eval(ctx, n, ts, data);
}

static float f32(const ts_array *a, int64_t i)
{
	return ((const float *)a->data)[i];
}

START_TEST(test_matmul)
{
	enum { M = 13, K = 17, N = 19 };
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(M, K), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(K, N), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, K);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(M, N), TS_VARS(i, j),
				  TS_SUM(ctx, ts_mul(ctx, TS_READ(ctx, A, i, k->var),
						     TS_READ(ctx, B, k->var, j)), k));
	ts_array *a = random_array(A, 1, -1, 1), *b = random_array(B, 2, -1, 1);
	ts_array *c = ts_array_for(ctx, C), *want = ts_array_for(ctx, C);
	ck_assert_int_eq(eval_arrays(ctx, 3, (ts_tensor *[]){A, B, C}, (ts_array *[]){a, b, c}),
			 TS_OK);
	for (int y = 0; y < M; y++) {
		for (int x = 0; x < N; x++) {
			double s = 0;
			for (int r = 0; r < K; r++)
				s += (double)(f32(a, y * K + r) * f32(b, r * N + x));
			((float *)want->data)[y * N + x] = (float)s;
		}
	}
	tu_assert_close(c, want, 0, 0); /* products are exact in double, one rounding */
	ts_array_free(a);
	ts_array_free(b);
	ts_array_free(c);
	ts_array_free(want);
	ts_ctx_free(ctx);
}
END_TEST

/* ---- conv2d NCHW: a padding stage (kept in temporary storage) and a conv -- */

typedef struct conv_cfg {
	int n, c, h, w, o, kh, kw, stride, pad, dil, groups;
} conv_cfg;

static int64_t out_extent(int64_t in, int k, const conv_cfg *g)
{
	return (in + 2 * g->pad - g->dil * (k - 1) - 1) / g->stride + 1;
}

static ts_expr *clamp(ts_ctx *ctx, ts_expr *x, int64_t hi)
{
	return ts_min(ctx, ts_max(ctx, x, ts_int(ctx, 0)), ts_int(ctx, hi - 1));
}

static ts_tensor *pad_nchw(ts_ctx *ctx, ts_tensor *X, int p)
{
	ts_expr *n = ts_var(ctx, "n"), *c = ts_var(ctx, "c"), *y = ts_var(ctx, "y"),
		*x = ts_var(ctx, "x");
	int64_t H = X->shape[2], W = X->shape[3];
	ts_expr *ys = ts_sub(ctx, y, ts_int(ctx, p)), *xs = ts_sub(ctx, x, ts_int(ctx, p));
	ts_expr *in = ts_and(ctx, ts_and(ctx, ts_ge(ctx, ys, ts_int(ctx, 0)), ts_lt(ctx, ys, ts_int(ctx, H))),
			     ts_and(ctx, ts_ge(ctx, xs, ts_int(ctx, 0)), ts_lt(ctx, xs, ts_int(ctx, W))));
	ts_expr *body = ts_select(ctx, in, TS_READ(ctx, X, n, c, clamp(ctx, ys, H), clamp(ctx, xs, W)),
				  ts_float(ctx, 0));
	return ts_compute(ctx, "P", TS_SHAPE(X->shape[0], X->shape[1], H + 2 * p, W + 2 * p),
			  TS_VARS(n, c, y, x), body);
}

static ts_tensor *conv_te(ts_ctx *ctx, ts_tensor *X, ts_tensor *Wt, const conv_cfg *g)
{
	ts_tensor *P = pad_nchw(ctx, X, g->pad);
	int cg = g->c / g->groups, og = g->o / g->groups;
	ts_iter *rc = ts_reduce_axis(ctx, "rc", 0, cg), *ry = ts_reduce_axis(ctx, "ry", 0, g->kh),
		*rx = ts_reduce_axis(ctx, "rx", 0, g->kw);
	ts_expr *n = ts_var(ctx, "n"), *o = ts_var(ctx, "o"), *y = ts_var(ctx, "y"),
		*x = ts_var(ctx, "x");
	ts_expr *ch = ts_add(ctx, ts_mul(ctx, ts_floordiv(ctx, o, ts_int(ctx, og)), ts_int(ctx, cg)),
			     rc->var);
	ts_expr *iy = ts_add(ctx, ts_mul(ctx, y, ts_int(ctx, g->stride)),
			     ts_mul(ctx, ry->var, ts_int(ctx, g->dil)));
	ts_expr *ix = ts_add(ctx, ts_mul(ctx, x, ts_int(ctx, g->stride)),
			     ts_mul(ctx, rx->var, ts_int(ctx, g->dil)));
	ts_expr *prod = ts_mul(ctx, TS_READ(ctx, P, n, ch, iy, ix),
			       TS_READ(ctx, Wt, o, rc->var, ry->var, rx->var));
	return ts_compute(ctx, "Y", TS_SHAPE(g->n, g->o, out_extent(g->h, g->kh, g),
					     out_extent(g->w, g->kw, g)),
			  TS_VARS(n, o, y, x), TS_SUM(ctx, prod, rc, ry, rx));
}

static void conv_ref(const conv_cfg *g, const ts_array *X, const ts_array *W, ts_array *Y)
{
	int64_t OH = Y->shape[2], OW = Y->shape[3];
	int cg = g->c / g->groups, og = g->o / g->groups;
	for (int n = 0; n < g->n; n++)
	for (int o = 0; o < g->o; o++)
	for (int y = 0; y < OH; y++)
	for (int x = 0; x < OW; x++) {
		double s = 0;
		for (int rc = 0; rc < cg; rc++)
		for (int ry = 0; ry < g->kh; ry++)
		for (int rx = 0; rx < g->kw; rx++) {
			int c = o / og * cg + rc;
			int iy = (int)y * g->stride + ry * g->dil - g->pad;
			int ix = (int)x * g->stride + rx * g->dil - g->pad;
			if (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w)
				continue;
			s += (double)(f32(X, ((n * g->c + c) * g->h + iy) * g->w + ix) *
				      f32(W, ((o * cg + rc) * g->kh + ry) * g->kw + rx));
		}
		((float *)Y->data)[((n * g->o + o) * OH + y) * OW + x] = (float)s;
	}
}

static void check_conv(const conv_cfg *g)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(g->n, g->c, g->h, g->w), ts_float32);
	ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(g->o, g->c / g->groups, g->kh, g->kw),
				      ts_float32);
	ts_tensor *Y = conv_te(ctx, X, W, g);
	ck_assert_msg(Y != NULL, "%s", ts_last_error(ctx));
	ts_array *x = random_array(X, 3, -1, 1), *w = random_array(W, 4, -1, 1);
	ts_array *y = ts_array_for(ctx, Y), *want = ts_array_for(ctx, Y);
	ck_assert_int_eq(eval_arrays(ctx, 3, (ts_tensor *[]){X, W, Y}, (ts_array *[]){x, w, y}),
			 TS_OK);
	conv_ref(g, x, w, want);
	tu_assert_close(y, want, 0, 0);
	ts_array_free(x);
	ts_array_free(w);
	ts_array_free(y);
	ts_array_free(want);
	ts_ctx_free(ctx);
}

START_TEST(test_conv2d_stride2_pad1)
{
	check_conv(&(conv_cfg){.n = 2, .c = 3, .h = 11, .w = 9, .o = 5, .kh = 3, .kw = 3,
			       .stride = 2, .pad = 1, .dil = 1, .groups = 1});
}
END_TEST

START_TEST(test_conv2d_dilation_groups)
{
	check_conv(&(conv_cfg){.n = 1, .c = 4, .h = 10, .w = 13, .o = 6, .kh = 3, .kw = 2,
			       .stride = 1, .pad = 2, .dil = 2, .groups = 2});
}
END_TEST

/* ---- multi-stage reductions ------------------------------------------------ */

START_TEST(test_max_then_sum)
{
	enum { R = 7, K = 23 };
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(R, K), ts_float32);
	ts_iter *k1 = ts_reduce_axis(ctx, "k", 0, K), *k2 = ts_reduce_axis(ctx, "k", 0, K);
	ts_expr *i1 = ts_var(ctx, "i"), *i2 = ts_var(ctx, "i");
	ts_tensor *M = ts_compute(ctx, "M", TS_SHAPE(R), TS_VARS(i1),
				  TS_MAX(ctx, TS_READ(ctx, X, i1, k1->var), k1));
	ts_expr *e = ts_exp(ctx, ts_sub(ctx, TS_READ(ctx, X, i2, k2->var), TS_READ(ctx, M, i2)));
	ts_tensor *S = ts_compute(ctx, "S", TS_SHAPE(R), TS_VARS(i2), TS_SUM(ctx, e, k2));
	ts_array *x = random_array(X, 5, -4, 4);
	ts_array *m = ts_array_for(ctx, M), *s = ts_array_for(ctx, S), *ws = ts_array_for(ctx, S);
	/* bind the intermediate too: it receives its values */
	ck_assert_int_eq(eval_arrays(ctx, 3, (ts_tensor *[]){X, S, M}, (ts_array *[]){x, s, m}),
			 TS_OK);
	for (int r = 0; r < R; r++) {
		float mx = -INFINITY;
		for (int c = 0; c < K; c++)
			mx = fmaxf(mx, f32(x, r * K + c));
		ck_assert_float_eq(f32(m, r), mx);
		double sum = 0;
		for (int c = 0; c < K; c++)
			sum += (float)exp((double)(f32(x, r * K + c) - mx));
		((float *)ws->data)[r] = (float)sum;
	}
	tu_assert_close(s, ws, 1e-6, 0);
	ts_array_free(x);
	ts_array_free(m);
	ts_array_free(s);
	ts_array_free(ws);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_int_reductions_and_init)
{
	enum { N = 9 };
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(4, N), ts_int32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, N), *k2 = ts_reduce_axis(ctx, "k", 2, N - 3);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	/* S[i] = 100 + sum_k A[i, k];  P[i] = min over k in [2, 8) of A[i, k] */
	ts_tensor *S = ts_compute(ctx, "S", TS_SHAPE(4), TS_VARS(i),
				  ts_reduce(ctx, TS_REDUCE_SUM, TS_READ(ctx, A, i, k->var),
					    TS_ITERS(k), ts_int(ctx, 100)));
	ts_tensor *P = ts_compute(ctx, "P", TS_SHAPE(4), TS_VARS(j),
				  TS_MIN(ctx, TS_READ(ctx, A, j, k2->var), k2));
	ts_array *a = random_array(A, 6, -1000, 1000);
	ts_array *s = ts_array_for(ctx, S), *p = ts_array_for(ctx, P);
	ck_assert_int_eq(eval_arrays(ctx, 3, (ts_tensor *[]){A, S, P}, (ts_array *[]){a, s, p}),
			 TS_OK);
	const int32_t *av = a->data;
	for (int r = 0; r < 4; r++) {
		int32_t sum = 100, mn = INT32_MAX;
		for (int c = 0; c < N; c++)
			sum += av[r * N + c];
		for (int c = 2; c < N - 1; c++)
			mn = av[r * N + c] < mn ? av[r * N + c] : mn;
		ck_assert_int_eq(((int32_t *)s->data)[r], sum);
		ck_assert_int_eq(((int32_t *)p->data)[r], mn);
	}
	ts_array_free(a);
	ts_array_free(s);
	ts_array_free(p);
	ts_ctx_free(ctx);
}
END_TEST

/* ---- integer semantics ----------------------------------------------------- */

static int32_t floordiv_ref(int32_t a, int32_t b)
{
	int32_t q = a / b;
	return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static int32_t floormod_ref(int32_t a, int32_t b)
{
	int32_t r = a % b;
	return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

START_TEST(test_int_ops)
{
	enum { N = 64 };
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(N), ts_int32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(N), ts_int32);
	ts_expr *i = ts_var(ctx, "i");
	ts_expr *a = TS_READ(ctx, A, i), *b = TS_READ(ctx, B, i);
	/* one output element packs four results: fd*1e6 + fm*1e4 + td*100 + tm */
	ts_expr *body = ts_add(ctx, ts_add(ctx, ts_mul(ctx, ts_floordiv(ctx, a, b), ts_int(ctx, 1000000)),
					   ts_mul(ctx, ts_floormod(ctx, a, b), ts_int(ctx, 10000))),
			       ts_add(ctx, ts_mul(ctx, ts_truncdiv(ctx, a, b), ts_int(ctx, 100)),
				      ts_truncmod(ctx, a, b)));
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(N), TS_VARS(i), body);
	ts_array *av = random_array(A, 7, -60, 60), *bv = random_array(B, 8, -9, 9);
	int32_t *bd = bv->data, *ad = av->data;
	for (int n = 0; n < N; n++)
		if (bd[n] == 0)
			bd[n] = -7;
	ad[0] = -7, bd[0] = 2; /* the cases ir.h spells out */
	ts_array *c = ts_array_for(ctx, C);
	ck_assert_int_eq(eval_arrays(ctx, 3, (ts_tensor *[]){A, B, C}, (ts_array *[]){av, bv, c}),
			 TS_OK);
	for (int n = 0; n < N; n++) {
		int32_t x = ad[n], y = bd[n];
		int32_t want = floordiv_ref(x, y) * 1000000 + floormod_ref(x, y) * 10000 +
			       (x / y) * 100 + x % y;
		ck_assert_int_eq(((int32_t *)c->data)[n], want);
	}
	ck_assert_int_eq(((int32_t *)c->data)[0], -4 * 1000000 + 1 * 10000 - 3 * 100 - 1);
	ts_array_free(av);
	ts_array_free(bv);
	ts_array_free(c);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_int_wrap_and_casts)
{
	enum { N = 40 };
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(N), ts_int8);
	ts_tensor *F = ts_placeholder(ctx, "F", TS_SHAPE(N), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	/* int8 arithmetic wraps; uint8 compares unsigned */
	ts_expr *a = TS_READ(ctx, A, i);
	ts_tensor *W = ts_compute(ctx, "W", TS_SHAPE(N), TS_VARS(i),
				  ts_add(ctx, ts_mul(ctx, a, a), ts_const(ctx, ts_int8, 100)));
	ts_expr *u = ts_cast(ctx, ts_uint8, TS_READ(ctx, A, j));
	ts_expr *f = TS_READ(ctx, F, j);
	ts_expr *body = ts_add(ctx, ts_cast(ctx, ts_int32, ts_gt(ctx, u, ts_const(ctx, ts_uint8, 200))),
			       ts_mul(ctx, ts_cast(ctx, ts_int32, f), ts_int(ctx, 10)));
	ts_tensor *G = ts_compute(ctx, "G", TS_SHAPE(N), TS_VARS(j), body);
	ts_array *av = random_array(A, 9, -128, 128), *fv = random_array(F, 10, -50, 50);
	ts_array *w = ts_array_for(ctx, W), *g = ts_array_for(ctx, G);
	ck_assert_int_eq(eval_arrays(ctx, 4, (ts_tensor *[]){A, F, W, G},
				     (ts_array *[]){av, fv, w, g}), TS_OK);
	for (int n = 0; n < N; n++) {
		int8_t x = ((int8_t *)av->data)[n];
		ck_assert_int_eq(((int8_t *)w->data)[n], (int8_t)(uint8_t)(x * x + 100));
		int32_t want = ((uint8_t)x > 200) + (int32_t)f32(fv, n) * 10;
		ck_assert_int_eq(((int32_t *)g->data)[n], want);
	}
	ts_array_free(av);
	ts_array_free(fv);
	ts_array_free(w);
	ts_array_free(g);
	ts_ctx_free(ctx);
}
END_TEST

/* ---- float16 and intrinsics ----------------------------------------------- */

static double round_half(double v)
{
	uint16_t h;
	ts_elem_set_f64(&h, ts_float16, 0, v);
	return ts_elem_get_f64(&h, ts_float16, 0);
}

START_TEST(test_float16_elementwise)
{
	enum { R = 5, N = 37 };
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(R, N), ts_float16);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(N), ts_float16);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_expr *a = TS_READ(ctx, A, i, j), *b = TS_READ(ctx, B, j);
	ts_expr *body = ts_add(ctx, ts_mul(ctx, a, b), ts_fconst(ctx, ts_float16, 0.1));
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(R, N), TS_VARS(i, j), body);
	ck_assert_int_eq(C->dtype.bits, 16);
	ts_array *av = random_array(A, 11, -30, 30), *bv = random_array(B, 12, -30, 30);
	ts_array *c = ts_array_for(ctx, C);
	ck_assert_int_eq(eval_arrays(ctx, 3, (ts_tensor *[]){A, B, C}, (ts_array *[]){av, bv, c}),
			 TS_OK);
	for (int r = 0; r < R; r++) {
		for (int n = 0; n < N; n++) {
			double x = ts_elem_get_f64(av->data, ts_float16, r * N + n);
			double y = ts_elem_get_f64(bv->data, ts_float16, n);
			/* rounded to float16 after each operation */
			double want = round_half(round_half(x * y) + round_half(0.1));
			ck_assert_double_eq(ts_elem_get_f64(c->data, ts_float16, r * N + n), want);
		}
	}
	ts_array_free(av);
	ts_array_free(bv);
	ts_array_free(c);
	ts_ctx_free(ctx);
}
END_TEST

/* uint64 elements read as double are unsigned: 2^63 and up were read
 * through int64, as negative numbers. */
START_TEST(test_elem_uint64_as_double)
{
	ts_dtype u64 = TS_DTYPE(TS_TYPE_UINT, 64);
	uint64_t v[4] = {UINT64_MAX, UINT64_C(1) << 63, 12345, 0};
	ck_assert_double_eq(ts_elem_get_f64(v, u64, 0), 0x1p64);
	ck_assert_double_eq(ts_elem_get_f64(v, u64, 1), 0x1p63);
	ck_assert_double_eq(ts_elem_get_f64(v, u64, 2), 12345);
	ts_elem_set_f64(v, u64, 3, 1.5e19); /* stored and read back unsigned */
	ck_assert_double_eq(ts_elem_get_f64(v, u64, 3), 1.5e19);
	/* the int64 reading stays the bits, as documented */
	ck_assert_int_eq(ts_elem_get_i64(v, u64, 0), -1);
}
END_TEST

START_TEST(test_bool_bfloat16_int64)
{
	enum { N = 33 };
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(N), ts_bfloat16);
	ts_tensor *L = ts_placeholder(ctx, "L", TS_SHAPE(N), ts_int64);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j"), *k = ts_var(ctx, "k");
	ts_expr *a = TS_READ(ctx, A, i);
	/* bfloat16: rounded after the multiply and after the add */
	ts_tensor *H = ts_compute(ctx, "H", TS_SHAPE(N), TS_VARS(i),
				  ts_add(ctx, ts_mul(ctx, a, a), ts_fconst(ctx, ts_bfloat16, 1.0 / 3)));
	/* bool output from a comparison of bfloat16 values */
	ts_tensor *G = ts_compute(ctx, "G", TS_SHAPE(N), TS_VARS(j),
				  ts_gt(ctx, TS_READ(ctx, A, j), ts_fconst(ctx, ts_bfloat16, 0)));
	/* int64 multiply wraps modulo 2^64 */
	ts_expr *l = TS_READ(ctx, L, k);
	ts_tensor *M = ts_compute(ctx, "M", TS_SHAPE(N), TS_VARS(k),
				  ts_mul(ctx, l, ts_const(ctx, ts_int64, INT64_C(0x100000001))));
	ts_array *av = random_array(A, 16, -8, 8), *lv = random_array(L, 17, -9e18, 9e18);
	ts_array *h = ts_array_for(ctx, H), *g = ts_array_for(ctx, G), *m = ts_array_for(ctx, M);
	ck_assert_int_eq(eval_arrays(ctx, 5, (ts_tensor *[]){A, L, H, G, M},
				     (ts_array *[]){av, lv, h, g, m}), TS_OK);
	int positive = 0;
	for (int n = 0; n < N; n++) {
		double x = ts_elem_get_f64(av->data, ts_bfloat16, n);
		uint16_t t;
		ts_elem_set_f64(&t, ts_bfloat16, 0, x * x);
		double sq = ts_elem_get_f64(&t, ts_bfloat16, 0);
		ts_elem_set_f64(&t, ts_bfloat16, 0, 1.0 / 3);
		ts_elem_set_f64(&t, ts_bfloat16, 0, sq + ts_elem_get_f64(&t, ts_bfloat16, 0));
		ck_assert_double_eq(ts_elem_get_f64(h->data, ts_bfloat16, n),
				    ts_elem_get_f64(&t, ts_bfloat16, 0));
		ck_assert_int_eq(((uint8_t *)g->data)[n], x > 0);
		positive += x > 0;
		uint64_t want = (uint64_t)((int64_t *)lv->data)[n] * UINT64_C(0x100000001);
		ck_assert_int_eq(((int64_t *)m->data)[n], (int64_t)want);
	}
	ck_assert(positive > 0 && positive < N);
	ts_array_free(av);
	ts_array_free(lv);
	ts_array_free(h);
	ts_array_free(g);
	ts_array_free(m);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_intrinsics)
{
	enum { N = 31 };
	static const ir_intrinsic ops[] = {
		IR_INTRIN_EXP, IR_INTRIN_LOG, IR_INTRIN_SQRT, IR_INTRIN_TANH, IR_INTRIN_EXP2,
		IR_INTRIN_FABS, IR_INTRIN_POW, IR_INTRIN_ERF, IR_INTRIN_SIGMOID, IR_INTRIN_FLOOR,
		IR_INTRIN_CEIL,
	};
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(N), ts_float64);
	ts_array *x = random_array(X, 13, 0.1, 3);
	for (size_t o = 0; o < TS_COUNT_OF(ops); o++) {
		ts_expr *i = ts_var(ctx, "i");
		ts_expr *args[2] = {TS_READ(ctx, X, i), ts_fconst(ctx, ts_float64, 1.5)};
		ts_tensor *Y = ts_compute(ctx, "Y", TS_SHAPE(N), TS_VARS(i),
					  ts_call(ctx, ops[o], ir_intrinsic_arity(ops[o]), args));
		ts_array *y = ts_array_for(ctx, Y);
		ck_assert_int_eq(eval_arrays(ctx, 2, (ts_tensor *[]){X, Y}, (ts_array *[]){x, y}),
				 TS_OK);
		for (int n = 0; n < N; n++) {
			double v = ((double *)x->data)[n], want = 0;
			switch (ops[o]) {
			case IR_INTRIN_EXP: want = exp(v); break;
			case IR_INTRIN_LOG: want = log(v); break;
			case IR_INTRIN_SQRT: want = sqrt(v); break;
			case IR_INTRIN_TANH: want = tanh(v); break;
			case IR_INTRIN_EXP2: want = exp2(v); break;
			case IR_INTRIN_FABS: want = fabs(v); break;
			case IR_INTRIN_POW: want = pow(v, 1.5); break;
			case IR_INTRIN_ERF: want = erf(v); break;
			case IR_INTRIN_SIGMOID: want = 1 / (1 + exp(-v)); break;
			case IR_INTRIN_FLOOR: want = floor(v); break;
			case IR_INTRIN_CEIL: want = ceil(v); break;
			case IR_INTRIN_LIKELY: /* not a math function */
			case IR_INTRIN_ROUND_TF32: /* float32 only: test_tensorcore */
			case IR_INTRIN_COUNT: break;
			}
			ck_assert_double_eq_tol(((double *)y->data)[n], want, 1e-15);
		}
		ts_array_free(y);
	}
	ts_array_free(x);
	ts_ctx_free(ctx);
}
END_TEST

/* ---- errors ---------------------------------------------------------------- */

START_TEST(test_unbound_placeholder)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(6), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(6), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(6), TS_VARS(i),
				  ts_add(ctx, TS_READ(ctx, A, i), TS_READ(ctx, B, i)));
	ts_array *a = random_array(A, 14, 0, 1), *c = ts_array_for(ctx, C);
	ck_assert_int_eq(eval_arrays(ctx, 2, (ts_tensor *[]){A, C}, (ts_array *[]){a, c}),
			 TS_ERR_INVALID);
	tu_assert_error(ctx, "eval: placeholder B is not bound");
	ts_array_free(a);
	ts_array_free(c);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_out_of_bounds_read)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(4), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	/* an unbound intermediate T (temporary storage freed on the error path)
	 * then D reading T[j + 1] past the end */
	ts_tensor *T = ts_compute(ctx, "T", TS_SHAPE(4), TS_VARS(i),
				  ts_mul(ctx, TS_READ(ctx, A, i), ts_float(ctx, 2)));
	ts_tensor *D = ts_compute(ctx, "D", TS_SHAPE(4), TS_VARS(j),
				  TS_READ(ctx, T, ts_add(ctx, j, ts_int(ctx, 1))));
	ts_array *a = random_array(A, 15, 0, 1), *d = ts_array_for(ctx, D);
	ck_assert_int_eq(eval_arrays(ctx, 2, (ts_tensor *[]){A, D}, (ts_array *[]){a, d}),
			 TS_ERR_INVALID);
	tu_assert_error(ctx, "eval: read of T out of bounds: index 4 in dimension 0 of extent 4");
	tu_assert_error(ctx, "computing D");
	ts_array_free(a);
	ts_array_free(d);
	ts_ctx_free(ctx);
}
END_TEST

/* x % 0 is 0 (ir.h), not an error. */
/* One cast, one value: the reference evaluator, the interpreter, the LLVM
 * JIT (where it takes the dtypes) and the constant folder all give want. */
static void cast_agrees(ts_dtype from, ts_dtype to, double fv, int64_t iv, double want)
{
	ts_ctx *ctx = ts_ctx_new();
	const int64_t n = 1;
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(n), from);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(n), TS_VARS(i), ts_cast(ctx, to, TS_READ(ctx, A, i)));
	_Alignas(64) unsigned char a[64] = {0}, ce[64] = {0}, ci[64] = {0}, cl[64] = {0};
	bool fl = ts_dtype_is_float(from);
	if (fl)
		ts_elem_set_f64(a, from, 0, fv);
	else
		ts_elem_set_i64(a, from, 0, iv);
	char b1[24], b2[24];
	const char *what = ts_sprintf(ctx, "%s(%s)", ts_dtype_str(to, b1), ts_dtype_str(from, b2));
	tu_ok(ctx, ts_eval(ctx, 2, (ts_tensor *[]){A, C}, (void *[]){a, ce}));
	ck_assert_msg(ts_elem_get_f64(ce, to, 0) == want, "%s: eval %.17g, want %.17g", what,
		      ts_elem_get_f64(ce, to, 0), want);
	ts_func *f = ts_lower(ts_create_schedule(ctx, 1, &C), "k", 2, (ts_tensor *[]){A, C});
	tu_nonnull(ctx, f);
	tu_ok(ctx, cg_interp_run(ctx, f, (void *[]){a, ci}));
	ck_assert_msg(ts_elem_get_f64(ci, to, 0) == want, "%s: interp %.17g", what, ts_elem_get_f64(ci, to, 0));
	if (to.bits > 16) {
		ts_module *m = ts_build(ctx, f, "llvm");
		tu_nonnull(ctx, m);
		ts_array *arr[2] = {ts_array_wrap(ctx, a, from, 1, &n), ts_array_wrap(ctx, cl, to, 1, &n)};
		tu_ok(ctx, ts_module_run(m, 2, arr));
		ck_assert_msg(ts_elem_get_f64(cl, to, 0) == want, "%s: llvm %.17g", what, ts_elem_get_f64(cl, to, 0));
		ts_array_free(arr[0]);
		ts_array_free(arr[1]);
		ts_module_free(m);
	}
	ts_expr *k = fl ? ts_fconst(ctx, from, fv) : ts_const(ctx, from, iv);
	ts_expr *folded = ir_simplify(ctx, ts_cast(ctx, to, k), 0, NULL);
	ck_assert_int_eq(folded->kind, IR_FLOAT_IMM);
	ck_assert_msg(folded->u.float_imm == want, "%s: folded %.17g", what, folded->u.float_imm);
	ts_ctx_free(ctx);
}

/* ir.h: a cast to float rounds once from the exact value (the evaluator
 * and the folder went through double: 2^60 for 2^60 + 2^37), and a cast to
 * a 16-bit float goes through float32 in every path (the folder rounded
 * directly: 1.0009765625 where the kernels give 1). */
START_TEST(test_casts_to_float_agree)
{
	ts_dtype u64 = TS_DTYPE(TS_TYPE_UINT, 64);
	cast_agrees(ts_int64, ts_float32, 0, (INT64_C(1) << 60) + (INT64_C(1) << 36) + 1,
		    ldexp(1, 60) + ldexp(1, 37));
	cast_agrees(u64, ts_float32, 0, (int64_t)((UINT64_C(1) << 63) + (UINT64_C(1) << 39) + 1),
		    ldexp(1, 63) + ldexp(1, 40));
	cast_agrees(ts_int64, ts_float64, 0, -7, -7);
	cast_agrees(ts_float64, ts_float16, 1 + ldexp(1, -11) + ldexp(1, -30), 0, 1);
	cast_agrees(ts_float64, ts_bfloat16, 1 + ldexp(1, -8) + ldexp(1, -30), 0, 1);
	cast_agrees(ts_int32, ts_bfloat16, 0, 33685505, ldexp(1, 25));
	cast_agrees(ts_float64, ts_float32, 1 + ldexp(1, -24) + ldexp(1, -40), 0, 1 + ldexp(1, -23));
}
END_TEST

START_TEST(test_division_by_zero)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(5), ts_int32);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(5), TS_VARS(i),
				  ts_floormod(ctx, ts_int(ctx, 17), ts_sub(ctx, TS_READ(ctx, A, i), ts_int(ctx, 3))));
	ts_array *a = ts_array_for(ctx, A), *c = ts_array_for(ctx, C);
	for (int n = 0; n < 5; n++)
		((int32_t *)a->data)[n] = n + 1; /* A[2] - 3 == 0 */
	tu_ok(ctx, eval_arrays(ctx, 2, (ts_tensor *[]){A, C}, (ts_array *[]){a, c}));
	const int32_t want[5] = {-1, 0, 0, 0, 1}; /* 17 mod -2, -1, 0 (ir.h: 0), 1, 2 */
	for (int n = 0; n < 5; n++)
		ck_assert_int_eq(((int32_t *)c->data)[n], want[n]);
	ts_array_free(a);
	ts_array_free(c);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_bad_bindings)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(4), ts_float32);
	void *none = NULL;
	ck_assert_int_eq(ts_eval(ctx, 1, &A, &none), TS_ERR_INVALID);
	tu_assert_error(ctx, "eval: tensor A is bound to NULL");
	ts_clear_error(ctx);
	ts_tensor *missing = NULL;
	ck_assert_int_eq(ts_eval(ctx, 1, &missing, &none), TS_ERR_INVALID);
	tu_assert_error(ctx, "eval: binding 0 names no tensor");
	ts_ctx_free(ctx);
}
END_TEST

/* An output written over its own input would read elements it has already
 * replaced: C[i] = A[3 - i] in place gave 0 1 1 0 for A = 0 1 2 3.  Any
 * shared byte between an output and another binding is refused; inputs
 * may share data, and the result stays exact. */
START_TEST(test_output_overlaps_input)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(4), ts_int32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(4), ts_int32);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(4), TS_VARS(i),
				  ts_add(ctx, TS_READ(ctx, A, ts_sub(ctx, ts_int(ctx, 3), i)),
					 TS_READ(ctx, B, i)));
	int32_t buf[8] = {0, 1, 2, 3, 10, 20, 30, 40}, out[4];
	ck_assert_int_eq(ts_eval(ctx, 3, (ts_tensor *[]){A, B, C}, (void *[]){buf, buf + 4, buf}),
			 TS_ERR_INVALID);
	tu_assert_error(ctx, "eval: binding 2 (C) overlaps binding 0 (A)");
	ts_clear_error(ctx);
	/* one element in common, at the end of B and the start of C */
	ck_assert_int_eq(ts_eval(ctx, 3, (ts_tensor *[]){A, B, C}, (void *[]){buf, buf + 1, buf + 4}),
			 TS_ERR_INVALID);
	tu_assert_error(ctx, "eval: binding 2 (C) overlaps binding 1 (B)");
	ts_clear_error(ctx);
	ck_assert_int_eq(buf[4], 10); /* nothing written */
	tu_ok(ctx, ts_eval(ctx, 3, (ts_tensor *[]){A, B, C}, (void *[]){buf, buf, out}));
	const int32_t want[4] = {3, 3, 3, 3}; /* A[3 - i] + A[i] */
	for (int n = 0; n < 4; n++)
		ck_assert_int_eq(out[n], want[n]);
	ts_ctx_free(ctx);
}
END_TEST

/* Graphs of any size: 300 stages (more than a fixed table of 256 once
 * held: the evaluator read and freed past it) and diamonds that share
 * stages. */
START_TEST(test_long_graphs)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(2), ts_float32), *t = A;
	ts_expr *i = ts_var(ctx, "i");
	for (int k = 0; k < 300; k++)
		t = ts_compute(ctx, "C", TS_SHAPE(2), TS_VARS(i), ts_add(ctx, TS_READ(ctx, t, i), ts_float(ctx, 1)));
	float a[2] = {0.5f, -2}, c[2];
	tu_ok(ctx, ts_eval(ctx, 2, (ts_tensor *[]){A, t}, (void *[]){a, c}));
	ck_assert(c[0] == 300.5f && c[1] == 298);
	/* T = U + W + t with U = t and W = -t, 200 times over: 601 stages,
	 * each T reading t three ways (walked once per path, this took
	 * minutes) */
	t = A;
	for (int k = 0; k < 200; k++) {
		ts_tensor *u = ts_compute(ctx, "U", TS_SHAPE(2), TS_VARS(i), TS_READ(ctx, t, i));
		ts_tensor *w = ts_compute(ctx, "W", TS_SHAPE(2), TS_VARS(i), ts_sub(ctx, ts_float(ctx, 0), TS_READ(ctx, t, i)));
		t = ts_compute(ctx, "T", TS_SHAPE(2), TS_VARS(i),
			       ts_add(ctx, ts_add(ctx, TS_READ(ctx, u, i), TS_READ(ctx, w, i)), TS_READ(ctx, t, i)));
	}
	tu_ok(ctx, ts_eval(ctx, 2, (ts_tensor *[]){A, t}, (void *[]){a, c}));
	ck_assert(c[0] == 0.5f && c[1] == -2);
	ts_ctx_free(ctx);
}
END_TEST

/* A temporary larger than the machine is refused before it is asked of
 * the allocator (under AddressSanitizer the request aborted). */
START_TEST(test_huge_temporary)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_tensor *T = ts_compute(ctx, "T", TS_SHAPE(INT64_C(1) << 20, INT64_C(1) << 20), TS_VARS(i, j),
				  ts_cast(ctx, ts_float32, ts_add(ctx, i, j)));
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(1), TS_VARS(i), TS_READ(ctx, T, i, i));
	tu_nonnull(ctx, C);
	float c = -1;
	ck_assert_int_eq(ts_eval(ctx, 1, &C, (void *[]){&c}), TS_ERR_NOMEM);
	tu_assert_error(ctx, "eval: the intermediate T needs 1099511627776 x 4 bytes, more than this machine's memory");
	ck_assert(c == -1);
	ts_ctx_free(ctx);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("eval");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_matmul);
	tcase_add_test(tc, test_conv2d_stride2_pad1);
	tcase_add_test(tc, test_conv2d_dilation_groups);
	tcase_add_test(tc, test_max_then_sum);
	tcase_add_test(tc, test_int_reductions_and_init);
	tcase_add_test(tc, test_int_ops);
	tcase_add_test(tc, test_int_wrap_and_casts);
	tcase_add_test(tc, test_float16_elementwise);
	tcase_add_test(tc, test_elem_uint64_as_double);
	tcase_add_test(tc, test_bool_bfloat16_int64);
	tcase_add_test(tc, test_intrinsics);
	tcase_add_test(tc, test_unbound_placeholder);
	tcase_add_test(tc, test_out_of_bounds_read);
	tcase_add_test(tc, test_division_by_zero);
	tcase_add_test(tc, test_casts_to_float_agree);
	tcase_add_test(tc, test_bad_bindings);
	tcase_add_test(tc, test_output_overlaps_input);
	tcase_add_test(tc, test_long_graphs);
	tcase_add_test(tc, test_huge_temporary);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
