/* test_ops.c - every operator of the library against a hand-written loop. */
#include "testutil.h"

#include <math.h>
#include <string.h>

#include "ops.h"

#define RTOL 1e-5
#define ATOL 1e-5

/* A context, and the arrays made in it (freed together). */
typedef struct fixture {
	ts_ctx *ctx;
	int n;
	ts_array *arrays[32];
} fixture;

static ts_array *keep(fixture *f, ts_array *a)
{
	ck_assert_ptr_nonnull(a);
	ck_assert_int_lt(f->n, 32);
	f->arrays[f->n++] = a;
	return a;
}

static ts_array *input(fixture *f, const ts_tensor *t, uint64_t seed)
{
	ts_array *a = keep(f, ts_array_for(f->ctx, t));
	ts_array_fill_random(a, seed, -1, 1);
	return a;
}

/* An array shaped like t holding its value computed by ts_eval from the
 * placeholders ins[i] bound to arrays vals[i]. */
static ts_array *eval(fixture *f, ts_tensor *t, int n, ts_tensor **ins, ts_array **vals)
{
	ck_assert_msg(t != NULL, "operator failed: %s", ts_last_error(f->ctx));
	ts_tensor *bind[8];
	void *data[8];
	for (int i = 0; i < n; i++) {
		bind[i] = ins[i];
		data[i] = vals[i]->data;
	}
	ts_array *out = keep(f, ts_array_for(f->ctx, t));
	bind[n] = t;
	data[n] = out->data;
	ck_assert_msg(ts_eval(f->ctx, n + 1, bind, data) == TS_OK, "%s", ts_last_error(f->ctx));
	return out;
}

static void done(fixture *f)
{
	for (int i = 0; i < f->n; i++)
		ts_array_free(f->arrays[i]);
	ts_ctx_free(f->ctx);
}

static double at(const ts_array *a, int64_t i)
{
	return ts_elem_get_f64(a->data, a->dtype, i);
}

static void put(ts_array *a, int64_t i, double v)
{
	ts_elem_set_f64(a->data, a->dtype, i, v);
}

static ts_tensor *ph(fixture *f, const char *name, int ndim, const int64_t *shape)
{
	return ts_placeholder(f->ctx, name, ndim, shape, ts_float32);
}

/* ---- linear algebra ---------------------------------------------------------- */

/* want[b, i, j] = sum_k A'[b, i, k] * B'[b, k, j] */
static ts_array *mm_ref(fixture *f, const ts_tensor *C, const ts_array *a, const ts_array *b,
			int64_t nb, int64_t M, int64_t K, int64_t N, bool ta, bool tb)
{
	ts_array *want = keep(f, ts_array_for(f->ctx, C));
	for (int64_t z = 0; z < nb; z++)
	for (int64_t i = 0; i < M; i++)
	for (int64_t j = 0; j < N; j++) {
		double s = 0;
		for (int64_t k = 0; k < K; k++) {
			int64_t ai = ta ? k * M + i : i * K + k, bi = tb ? j * K + k : k * N + j;
			s += at(a, z * M * K + ai) * at(b, z * K * N + bi);
		}
		put(want, (z * M + i) * N + j, s);
	}
	return want;
}

START_TEST(test_matmul_transposes)
{
	enum { M = 5, K = 7, N = 3 };
	for (int t = 0; t < 4; t++) {
		bool ta = t & 1, tb = t & 2;
		fixture f = {.ctx = ts_ctx_new()};
		ts_tensor *A = ta ? ph(&f, "A", TS_SHAPE(K, M)) : ph(&f, "A", TS_SHAPE(M, K));
		ts_tensor *B = tb ? ph(&f, "B", TS_SHAPE(N, K)) : ph(&f, "B", TS_SHAPE(K, N));
		ts_tensor *C = ts_op_matmul(f.ctx, A, B, ta, tb);
		ts_array *a = input(&f, A, 1), *b = input(&f, B, 2);
		ts_array *c = eval(&f, C, 2, (ts_tensor *[]){A, B}, (ts_array *[]){a, b});
		ck_assert_int_eq(C->shape[0], M);
		ck_assert_int_eq(C->shape[1], N);
		tu_assert_close(c, mm_ref(&f, C, a, b, 1, M, K, N, ta, tb), RTOL, ATOL);
		done(&f);
	}
}
END_TEST

START_TEST(test_batch_matmul)
{
	enum { Z = 3, M = 4, K = 6, N = 5 };
	fixture f = {.ctx = ts_ctx_new()};
	ts_tensor *A = ph(&f, "A", TS_SHAPE(Z, M, K)), *B = ph(&f, "B", TS_SHAPE(Z, N, K));
	ts_tensor *C = ts_op_batch_matmul(f.ctx, A, B, false, true);
	ts_array *a = input(&f, A, 3), *b = input(&f, B, 4);
	ts_array *c = eval(&f, C, 2, (ts_tensor *[]){A, B}, (ts_array *[]){a, b});
	tu_assert_close(c, mm_ref(&f, C, a, b, Z, M, K, N, false, true), RTOL, ATOL);
	done(&f);
}
END_TEST

START_TEST(test_dense_bias)
{
	enum { M = 6, K = 9, N = 5 };
	fixture f = {.ctx = ts_ctx_new()};
	ts_tensor *X = ph(&f, "X", TS_SHAPE(M, K)), *W = ph(&f, "W", TS_SHAPE(N, K));
	ts_tensor *bias = ph(&f, "bias", TS_SHAPE(N));
	ts_tensor *Y = ts_op_dense(f.ctx, X, W, bias);
	ts_array *x = input(&f, X, 5), *w = input(&f, W, 6), *b = input(&f, bias, 7);
	ts_array *y = eval(&f, Y, 3, (ts_tensor *[]){X, W, bias}, (ts_array *[]){x, w, b});
	ts_array *want = mm_ref(&f, Y, x, w, 1, M, K, N, false, true);
	for (int i = 0; i < M * N; i++)
		put(want, i, at(want, i) + at(b, i % N));
	tu_assert_close(y, want, RTOL, ATOL);
	ck_assert_str_eq(Y->name, "dense_bias");
	/* without bias: one stage */
	ts_tensor *D = ts_op_dense(f.ctx, X, W, NULL);
	ck_assert_int_eq(D->nreduce, 1);
	ck_assert_ptr_eq(ts_rename(f.ctx, D, "Y"), D);
	ck_assert_str_eq(D->name, "Y");
	done(&f);
}
END_TEST

/* ---- elementwise ------------------------------------------------------------------- */

START_TEST(test_elementwise)
{
	enum { R = 3, C = 7, D = 5 };
	fixture f = {.ctx = ts_ctx_new()};
	ts_tensor *A = ph(&f, "A", TS_SHAPE(R, C, D)), *B = ph(&f, "B", TS_SHAPE(R, C, D));
	ts_tensor *bias = ph(&f, "bias", TS_SHAPE(C));
	ts_array *a = input(&f, A, 8), *b = input(&f, B, 9), *bb = input(&f, bias, 10);
	ts_tensor *ins[3] = {A, B, bias};
	ts_array *vals[3] = {a, b, bb};
	ts_array *relu = eval(&f, ts_op_relu(f.ctx, A), 3, ins, vals);
	ts_array *add = eval(&f, ts_op_add(f.ctx, A, B), 3, ins, vals);
	ts_array *ba = eval(&f, ts_op_bias_add(f.ctx, A, bias, 1), 3, ins, vals);
	ts_array *ba2 = eval(&f, ts_op_bias_add(f.ctx, A, bias, -2), 3, ins, vals);
	ts_array *clip = eval(&f, ts_op_clip(f.ctx, A, -0.25, 0.5), 3, ins, vals);
	int positive = 0;
	for (int i = 0; i < R * C * D; i++) {
		double x = at(a, i);
		positive += x > 0;
		ck_assert_double_eq(at(relu, i), x > 0 ? x : 0);
		ck_assert_double_eq(at(add, i), (double)((float)x + (float)at(b, i)));
		ck_assert_double_eq(at(ba, i), (double)((float)x + (float)at(bb, i / D % C)));
		ck_assert_double_eq(at(ba2, i), at(ba, i));
		ck_assert_double_eq(at(clip, i), x < -0.25 ? -0.25 : x > 0.5 ? 0.5 : x);
	}
	ck_assert(positive > 0 && positive < R * C * D);
	done(&f);
}
END_TEST

START_TEST(test_pad)
{
	enum { R = 3, C = 4 };
	fixture f = {.ctx = ts_ctx_new()};
	ts_tensor *X = ph(&f, "X", TS_SHAPE(R, C));
	ts_tensor *P = ts_op_pad(f.ctx, X, (const int64_t[]){1, 0}, (const int64_t[]){2, 3}, 7.5);
	ts_array *x = input(&f, X, 11);
	ts_array *p = eval(&f, P, 1, &X, &x);
	ck_assert_int_eq(P->shape[0], R + 3);
	ck_assert_int_eq(P->shape[1], C + 3);
	for (int i = 0; i < R + 3; i++) {
		for (int j = 0; j < C + 3; j++) {
			bool in = i >= 1 && i < R + 1 && j < C;
			double want = in ? at(x, (i - 1) * C + j) : 7.5;
			ck_assert_double_eq(at(p, i * (C + 3) + j), want);
		}
	}
	done(&f);
}
END_TEST

/* ---- convolutions --------------------------------------------------------------- */

typedef struct conv_cfg {
	int64_t n, c, h, w, o, kh, kw;
	int sh, sw, ph, pw, dh, dw, groups;
} conv_cfg;

static int64_t out_extent(int64_t in, int64_t k, int s, int p, int d)
{
	return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

/* The NCHW input element, or 0 in the padding. */
static double x_nchw(const conv_cfg *g, const ts_array *x, int64_t n, int64_t c, int64_t y,
		     int64_t xx)
{
	if (y < 0 || y >= g->h || xx < 0 || xx >= g->w)
		return 0;
	return at(x, ((n * g->c + c) * g->h + y) * g->w + xx);
}

/* Reference NCHW convolution; w_at gives W[o, rc, ry, rx] in any layout. */
typedef double (*w_at_fn)(const conv_cfg *g, const ts_array *w, int64_t o, int64_t rc,
			  int64_t ry, int64_t rx);

static double w_oihw(const conv_cfg *g, const ts_array *w, int64_t o, int64_t rc, int64_t ry,
		     int64_t rx)
{
	return at(w, ((o * (g->c / g->groups) + rc) * g->kh + ry) * g->kw + rx);
}

static ts_array *conv_ref(fixture *f, const conv_cfg *g, const ts_array *x, const ts_array *w,
			  w_at_fn w_at)
{
	int64_t oh = out_extent(g->h, g->kh, g->sh, g->ph, g->dh);
	int64_t ow = out_extent(g->w, g->kw, g->sw, g->pw, g->dw);
	int64_t cg = g->c / g->groups, og = g->o / g->groups;
	ts_array *want = keep(f, ts_array_new(f->ctx, ts_float32, TS_SHAPE(g->n, g->o, oh, ow)));
	for (int64_t n = 0; n < g->n; n++)
	for (int64_t o = 0; o < g->o; o++)
	for (int64_t y = 0; y < oh; y++)
	for (int64_t xx = 0; xx < ow; xx++) {
		double s = 0;
		for (int64_t rc = 0; rc < cg; rc++)
		for (int64_t ry = 0; ry < g->kh; ry++)
		for (int64_t rx = 0; rx < g->kw; rx++)
			s += x_nchw(g, x, n, o / og * cg + rc, y * g->sh + ry * g->dh - g->ph,
				    xx * g->sw + rx * g->dw - g->pw) * w_at(g, w, o, rc, ry, rx);
		put(want, ((n * g->o + o) * oh + y) * ow + xx, s);
	}
	return want;
}

static void check_conv_nchw(const conv_cfg *g)
{
	fixture f = {.ctx = ts_ctx_new()};
	ts_tensor *X = ph(&f, "X", TS_SHAPE(g->n, g->c, g->h, g->w));
	ts_tensor *W = ph(&f, "W", TS_SHAPE(g->o, g->c / g->groups, g->kh, g->kw));
	ts_tensor *Y = ts_op_conv2d_nchw(f.ctx, X, W, g->sh, g->sw, g->ph, g->pw, g->dh, g->dw,
					 g->groups);
	ts_array *x = input(&f, X, 12), *w = input(&f, W, 13);
	ts_array *y = eval(&f, Y, 2, (ts_tensor *[]){X, W}, (ts_array *[]){x, w});
	tu_assert_close(y, conv_ref(&f, g, x, w, w_oihw), RTOL, ATOL);
	done(&f);
}

START_TEST(test_conv2d_nchw)
{
	check_conv_nchw(&(conv_cfg){2, 3, 9, 11, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1});
	check_conv_nchw(&(conv_cfg){1, 6, 10, 7, 4, 3, 2, 1, 2, 2, 1, 2, 1, 2});
	check_conv_nchw(&(conv_cfg){1, 2, 5, 6, 3, 1, 1, 1, 1, 0, 0, 1, 1, 1});
}
END_TEST

START_TEST(test_conv2d_graph)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, 4, 8, 8), ts_float32);
	ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(6, 2, 3, 3), ts_float32);
	ts_tensor *Y = ts_op_conv2d_nchw(ctx, X, W, 2, 2, 1, 1, 1, 1, 2);
	ck_assert_ptr_nonnull(Y);
	tu_assert_golden("te_ops_conv2d_nchw.txt", ts_graph_str(ctx, 1, &Y));
	ts_ctx_free(ctx);
}
END_TEST

/* HWIO weights for the NHWC check. */
static double w_hwio(const conv_cfg *g, const ts_array *w, int64_t o, int64_t rc, int64_t ry,
		     int64_t rx)
{
	return at(w, ((ry * g->kw + rx) * (g->c / g->groups) + rc) * g->o + o);
}

START_TEST(test_conv2d_nhwc)
{
	conv_cfg g = {2, 4, 7, 9, 6, 3, 2, 2, 1, 1, 2, 1, 2, 2};
	fixture f = {.ctx = ts_ctx_new()};
	ts_tensor *X = ph(&f, "X", TS_SHAPE(g.n, g.h, g.w, g.c));
	ts_tensor *W = ph(&f, "W", TS_SHAPE(g.kh, g.kw, g.c / g.groups, g.o));
	ts_tensor *Y = ts_op_conv2d_nhwc(f.ctx, X, W, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, g.groups);
	ts_array *x = input(&f, X, 14), *w = input(&f, W, 15);
	ts_array *y = eval(&f, Y, 2, (ts_tensor *[]){X, W}, (ts_array *[]){x, w});
	/* transpose the input to NCHW and the result back for the reference */
	ts_array *xc = keep(&f, ts_array_new(f.ctx, ts_float32, TS_SHAPE(g.n, g.c, g.h, g.w)));
	for (int64_t n = 0; n < g.n; n++)
	for (int64_t c = 0; c < g.c; c++)
	for (int64_t h = 0; h < g.h; h++)
	for (int64_t ww = 0; ww < g.w; ww++)
		put(xc, ((n * g.c + c) * g.h + h) * g.w + ww, at(x, ((n * g.h + h) * g.w + ww) * g.c + c));
	ts_array *ref = conv_ref(&f, &g, xc, w, w_hwio);
	ts_array *want = keep(&f, ts_array_for(f.ctx, Y));
	int64_t oh = Y->shape[1], ow = Y->shape[2];
	for (int64_t n = 0; n < g.n; n++)
	for (int64_t o = 0; o < g.o; o++)
	for (int64_t i = 0; i < oh * ow; i++)
		put(want, (n * oh * ow + i) * g.o + o, at(ref, (n * g.o + o) * oh * ow + i));
	tu_assert_close(y, want, RTOL, ATOL);
	done(&f);
}
END_TEST

/* Depthwise weights [C, M, KH, KW] seen as grouped OIHW with one input channel. */
static double w_depthwise(const conv_cfg *g, const ts_array *w, int64_t o, int64_t rc,
			  int64_t ry, int64_t rx)
{
	(void)rc;
	return at(w, (o * g->kh + ry) * g->kw + rx);
}

START_TEST(test_depthwise)
{
	for (int mult = 1; mult <= 2; mult++) {
		conv_cfg g = {2, 3, 8, 7, 3 * mult, 3, 3, 2, 1, 1, 1, 1, 2, 3};
		fixture f = {.ctx = ts_ctx_new()};
		ts_tensor *X = ph(&f, "X", TS_SHAPE(g.n, g.c, g.h, g.w));
		ts_tensor *W = ph(&f, "W", TS_SHAPE(g.c, mult, g.kh, g.kw));
		ts_tensor *Y = ts_op_depthwise_conv2d_nchw(f.ctx, X, W, g.sh, g.sw, g.ph, g.pw, g.dh,
							   g.dw);
		ts_array *x = input(&f, X, 16), *w = input(&f, W, 17);
		ts_array *y = eval(&f, Y, 2, (ts_tensor *[]){X, W}, (ts_array *[]){x, w});
		tu_assert_close(y, conv_ref(&f, &g, x, w, w_depthwise), RTOL, ATOL);
		done(&f);
	}
}
END_TEST

START_TEST(test_layout_roundtrip)
{
	fixture f = {.ctx = ts_ctx_new()};
	ts_tensor *X = ph(&f, "X", TS_SHAPE(2, 6, 3, 5));
	ts_tensor *Xc = ts_op_layout_nchw_to_nchwc(f.ctx, X, 3);
	ts_tensor *Y = ts_op_layout_nchwc_to_nchw(f.ctx, Xc);
	ts_array *x = input(&f, X, 18);
	ts_array *xc = eval(&f, Xc, 1, &X, &x);
	ts_array *y = eval(&f, Y, 1, &X, &x);
	ck_assert_int_eq(Xc->shape[1], 2);
	ck_assert_int_eq(Xc->shape[4], 3);
	tu_assert_close(y, x, 0, 0);
	/* Xc[n, co, h, w, ci] = X[n, co*3 + ci, h, w] */
	ck_assert_double_eq(at(xc, (((1 * 2 + 1) * 3 + 2) * 5 + 4) * 3 + 2),
			    at(x, ((1 * 6 + 5) * 3 + 2) * 5 + 4));
	done(&f);
}
END_TEST

START_TEST(test_conv2d_nchwc_matches_nchw)
{
	enum { IB = 4, OB = 3 };
	conv_cfg g = {2, 8, 9, 7, 6, 3, 3, 2, 1, 1, 2, 1, 2, 1};
	fixture f = {.ctx = ts_ctx_new()};
	ts_tensor *X = ph(&f, "X", TS_SHAPE(g.n, g.c, g.h, g.w));
	ts_tensor *W = ph(&f, "W", TS_SHAPE(g.o, g.c, g.kh, g.kw));
	ts_tensor *Y = ts_op_conv2d_nchw(f.ctx, X, W, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, 1);
	ts_tensor *Xc = ts_op_layout_nchw_to_nchwc(f.ctx, X, IB);
	ts_tensor *Wc = ts_op_weight_oihw_to_blocked(f.ctx, W, IB, OB);
	ts_tensor *Yc = ts_op_conv2d_nchwc(f.ctx, Xc, Wc, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw);
	ts_tensor *Y2 = ts_op_layout_nchwc_to_nchw(f.ctx, Yc);
	ck_assert_msg(Y2 != NULL, "%s", ts_last_error(f.ctx));
	ck_assert_int_eq(Wc->ndim, 6);
	ck_assert_int_eq(Wc->shape[4], IB);
	ck_assert_int_eq(Wc->shape[5], OB);
	ts_array *x = input(&f, X, 19), *w = input(&f, W, 20);
	ts_array *y = eval(&f, Y, 2, (ts_tensor *[]){X, W}, (ts_array *[]){x, w});
	ts_array *y2 = eval(&f, Y2, 2, (ts_tensor *[]){X, W}, (ts_array *[]){x, w});
	tu_assert_close(y2, y, RTOL, ATOL);
	tu_assert_close(y, conv_ref(&f, &g, x, w, w_oihw), RTOL, ATOL);
	done(&f);
}
END_TEST

/* ---- pooling and softmax ------------------------------------------------------------ */

typedef struct pool_cfg {
	int64_t n, c, h, w;
	int kh, kw, sh, sw, ph, pw;
} pool_cfg;

/* mode 0: max, 1: average counting padding, 2: average of inside elements */
static double pool_window(const pool_cfg *p, const ts_array *x, int64_t n, int64_t c,
			  int64_t y, int64_t xx, int mode)
{
	double m = -INFINITY, s = 0;
	int count = 0;
	for (int ry = 0; ry < p->kh; ry++) {
		for (int rx = 0; rx < p->kw; rx++) {
			int64_t iy = y * p->sh + ry - p->ph, ix = xx * p->sw + rx - p->pw;
			if (iy < 0 || iy >= p->h || ix < 0 || ix >= p->w)
				continue;
			double v = at(x, ((n * p->c + c) * p->h + iy) * p->w + ix);
			m = fmax(m, v);
			s += v;
			count++;
		}
	}
	return mode == 0 ? m : mode == 1 ? s / (p->kh * p->kw) : s / count;
}

static void check_pool(const pool_cfg *p, int mode)
{
	fixture f = {.ctx = ts_ctx_new()};
	ts_tensor *X = ph(&f, "X", TS_SHAPE(p->n, p->c, p->h, p->w));
	ts_tensor *Y = mode == 0 ? ts_op_max_pool2d(f.ctx, X, p->kh, p->kw, p->sh, p->sw, p->ph, p->pw)
				 : ts_op_avg_pool2d(f.ctx, X, p->kh, p->kw, p->sh, p->sw, p->ph,
						    p->pw, mode == 1);
	ts_array *x = input(&f, X, 21);
	ts_array *y = eval(&f, Y, 1, &X, &x);
	ts_array *want = keep(&f, ts_array_for(f.ctx, Y));
	int64_t oh = Y->shape[2], ow = Y->shape[3];
	ck_assert_int_eq(oh, (p->h + 2 * p->ph - p->kh) / p->sh + 1);
	for (int64_t n = 0; n < p->n; n++)
	for (int64_t c = 0; c < p->c; c++)
	for (int64_t yy = 0; yy < oh; yy++)
	for (int64_t xx = 0; xx < ow; xx++)
		put(want, ((n * p->c + c) * oh + yy) * ow + xx, pool_window(p, x, n, c, yy, xx, mode));
	tu_assert_close(y, want, RTOL, ATOL);
	done(&f);
}

START_TEST(test_pooling)
{
	pool_cfg p = {2, 3, 9, 8, 3, 2, 2, 2, 1, 1};
	for (int mode = 0; mode < 3; mode++)
		check_pool(&p, mode);
	pool_cfg q = {1, 2, 7, 7, 2, 2, 2, 2, 0, 0}; /* no padding stage */
	check_pool(&q, 0);
	check_pool(&q, 2);
}
END_TEST

static void check_softmax(int rows, int len)
{
	fixture f = {.ctx = ts_ctx_new()};
	ts_tensor *X = rows ? ph(&f, "X", TS_SHAPE(rows, len)) : ph(&f, "X", TS_SHAPE(len));
	ts_tensor *Y = ts_op_softmax(f.ctx, X);
	ts_array *x = input(&f, X, 22);
	for (int i = 0; i < ts_array_numel(x); i++)
		put(x, i, at(x, i) * 8);
	ts_array *y = eval(&f, Y, 1, &X, &x);
	ts_array *want = keep(&f, ts_array_for(f.ctx, Y));
	for (int r = 0; r < (rows ? rows : 1); r++) {
		double m = -INFINITY, s = 0, total = 0;
		for (int k = 0; k < len; k++)
			m = fmax(m, at(x, r * len + k));
		for (int k = 0; k < len; k++)
			s += exp(at(x, r * len + k) - m);
		for (int k = 0; k < len; k++) {
			put(want, r * len + k, exp(at(x, r * len + k) - m) / s);
			total += at(y, r * len + k);
		}
		ck_assert_double_eq_tol(total, 1.0, 1e-5);
	}
	tu_assert_close(y, want, RTOL, 1e-7);
	done(&f);
}

START_TEST(test_softmax)
{
	check_softmax(5, 13);
	check_softmax(0, 9); /* 1-D */
	check_softmax(1, 4);
}
END_TEST

START_TEST(test_softmax_stages)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(4, 6), ts_float32);
	ts_tensor *Y = ts_op_softmax(ctx, X);
	ck_assert_ptr_nonnull(Y);
	tu_assert_golden("te_ops_softmax.txt", ts_graph_str(ctx, 1, &Y));
	ts_ctx_free(ctx);
}
END_TEST

/* ---- misuse -------------------------------------------------------------------------- */

START_TEST(test_op_errors)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(13, 17), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(18, 19), ts_float32);
	ts_tensor *I = ts_placeholder(ctx, "I", TS_SHAPE(17, 19), ts_int32);
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, 3, 8, 8), ts_float32);
	ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(4, 2, 3, 3), ts_float32);
	ts_tensor *bias = ts_placeholder(ctx, "bias", TS_SHAPE(5), ts_float32);
#define EXPECT(call, msg)                                                             \
	do {                                                                          \
		ck_assert_ptr_null(call);                                             \
		tu_assert_error(ctx, msg);                                            \
		ts_clear_error(ctx);                                                  \
	} while (0)
	EXPECT(ts_op_matmul(ctx, A, B, false, false),
	       "matmul: inner extents differ: A[13, 17] x B[18, 19] (17 vs 18)");
	EXPECT(ts_op_matmul(ctx, A, I, false, false),
	       "matmul: dtype mismatch: A[13, 17] is float32, I[17, 19] is int32");
	EXPECT(ts_op_batch_matmul(ctx, A, B, false, false), "batch_matmul: A[13, 17] must have 3 dimensions");
	EXPECT(ts_op_matmul(ctx, NULL, B, false, false), "matmul: input 0 is NULL");
	EXPECT(ts_op_dense(ctx, A, A, bias), "dense: bias bias[5] does not match axis 1 of dense[13, 13]");
	EXPECT(ts_op_add(ctx, A, B), "add: shapes differ: A[13, 17] vs B[18, 19]");
	EXPECT(ts_op_bias_add(ctx, A, bias, 2), "bias_add: axis 2 is not a dimension of A[13, 17]");
	EXPECT(ts_op_clip(ctx, A, 1, 0), "clip: A[13, 17]: bounds [1, 0] are empty");
	EXPECT(ts_op_pad(ctx, A, (const int64_t[]){0, -1}, (const int64_t[]){0, 0}, 0),
	       "pad: A[13, 17]: padding (-1, 0) of dimension 1 is negative");
	EXPECT(ts_op_conv2d_nchw(ctx, X, W, 1, 1, 0, 0, 1, 1, 1),
	       "conv2d_nchw: W[4, 2, 3, 3] has 2 input channels per group, X[1, 3, 8, 8] has 3 / 1 groups");
	EXPECT(ts_op_conv2d_nchw(ctx, X, W, 1, 1, 0, 0, 1, 1, 2),
	       "conv2d_nchw: groups 2 must divide the 3 input and 4 output channels");
	EXPECT(ts_op_conv2d_nchw(ctx, X, ts_placeholder(ctx, "K", TS_SHAPE(4, 3, 5, 5), ts_float32),
				 1, 1, 0, 0, 2, 2, 1),
	       "conv2d_nchw: height window 9 (kernel 5, dilation 2) exceeds input 8 + 2*0 padding");
	EXPECT(ts_op_conv2d_nchw(ctx, X, ts_placeholder(ctx, "W3", TS_SHAPE(4, 3, 3, 3), ts_float32),
				 0, 1, 0, 0, 1, 1, 1),
	       "conv2d_nchw: height stride 0 and dilation 1 must be >= 1, padding 0 >= 0");
	EXPECT(ts_op_depthwise_conv2d_nchw(ctx, X, W, 1, 1, 0, 0, 1, 1),
	       "depthwise_conv2d_nchw: W[4, 2, 3, 3] needs one filter group per channel of X[1, 3, 8, 8]");
	EXPECT(ts_op_max_pool2d(ctx, X, 2, 2, 2, 2, 2, 0),
	       "max_pool2d: X[1, 3, 8, 8]: height kernel 2 must be >= 1 and exceed the padding 2");
	EXPECT(ts_op_avg_pool2d(ctx, ts_placeholder(ctx, "Q", TS_SHAPE(1, 1, 4, 4), ts_int32), 2, 2,
				2, 2, 0, 0, true),
	       "avg_pool2d: Q[1, 1, 4, 4] has dtype int32; a float dtype is required");
	EXPECT(ts_op_softmax(ctx, I), "softmax: I[17, 19] has dtype int32; a float dtype is required");
	EXPECT(ts_op_layout_nchw_to_nchwc(ctx, X, 2),
	       "layout_nchw_to_nchwc: block 2 does not divide the 3 input channels of X[1, 3, 8, 8]");
	EXPECT(ts_op_weight_oihw_to_blocked(ctx, W, 2, 3),
	       "weight_oihw_to_blocked: block 3 does not divide the 4 output channels of W[4, 2, 3, 3]");
	ts_tensor *Xc = ts_op_layout_nchw_to_nchwc(ctx, ts_placeholder(ctx, "Z", TS_SHAPE(1, 4, 5, 5), ts_float32), 4);
	ts_tensor *Wc = ts_op_weight_oihw_to_blocked(ctx, ts_placeholder(ctx, "V", TS_SHAPE(4, 4, 1, 1), ts_float32), 2, 2);
	EXPECT(ts_op_conv2d_nchwc(ctx, Xc, Wc, 1, 1, 0, 0, 1, 1),
	       "conv2d_nchwc: input channel blocks differ: nchw_to_nchwc[1, 1, 5, 5, 4] has 1 x 4");
#undef EXPECT
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_int_ops)
{
	/* the library is dtype-generic: int32 matmul and relu are exact */
	enum { M = 4, K = 5, N = 3 };
	fixture f = {.ctx = ts_ctx_new()};
	ts_tensor *A = ts_placeholder(f.ctx, "A", TS_SHAPE(M, K), ts_int32);
	ts_tensor *B = ts_placeholder(f.ctx, "B", TS_SHAPE(K, N), ts_int32);
	ts_tensor *C = ts_op_relu(f.ctx, ts_op_matmul(f.ctx, A, B, false, false));
	ts_array *a = keep(&f, ts_array_for(f.ctx, A)), *b = keep(&f, ts_array_for(f.ctx, B));
	ts_array_fill_random(a, 23, -20, 20);
	ts_array_fill_random(b, 24, -20, 20);
	ts_array *c = eval(&f, C, 2, (ts_tensor *[]){A, B}, (ts_array *[]){a, b});
	for (int i = 0; i < M; i++) {
		for (int j = 0; j < N; j++) {
			int32_t s = 0;
			for (int k = 0; k < K; k++)
				s += ((int32_t *)a->data)[i * K + k] * ((int32_t *)b->data)[k * N + j];
			ck_assert_int_eq(((int32_t *)c->data)[i * N + j], s > 0 ? s : 0);
		}
	}
	done(&f);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("ops");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_matmul_transposes);
	tcase_add_test(tc, test_batch_matmul);
	tcase_add_test(tc, test_dense_bias);
	tcase_add_test(tc, test_elementwise);
	tcase_add_test(tc, test_pad);
	tcase_add_test(tc, test_conv2d_nchw);
	tcase_add_test(tc, test_conv2d_graph);
	tcase_add_test(tc, test_conv2d_nhwc);
	tcase_add_test(tc, test_depthwise);
	tcase_add_test(tc, test_layout_roundtrip);
	tcase_add_test(tc, test_conv2d_nchwc_matches_nchw);
	tcase_add_test(tc, test_pooling);
	tcase_add_test(tc, test_softmax);
	tcase_add_test(tc, test_softmax_stages);
	tcase_add_test(tc, test_op_errors);
	tcase_add_test(tc, test_int_ops);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
