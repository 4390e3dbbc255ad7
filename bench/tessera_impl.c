/*
 * tessera_impl.c - the generated kernels: build the operator with the
 * operator library (ops.h), schedule it with the library's default
 * schedule (op_schedules.h), lower it and compile it with ts_build, timing
 * lower + build as the "compile ms" column.
 *
 * GEMM is ts_op_matmul_packed: packing B into panels happens inside the
 * timed kernel, as it does inside sgemm.  conv2d runs on the blocked
 * NCHW[x]c layout (ts_op_conv2d_nchwc); like oneDNN's blocked layouts, the
 * conversions of the input, weights and output from and to NCHW happen in
 * bind/sync, outside the timed region.  Blocks: y output channels (the
 * vector width, or the largest power of two dividing K) and x input
 * channels (the largest power of two <= 16 dividing C).
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "build.h"
#include "lower.h"
#include "op_schedules.h"
#include "ops.h"
#include "threadpool.h"

#define TSR_MAX_SETS 64

typedef struct tsr_state {
	ts_ctx *ctx;
	ts_module *mod;
	ts_tensor *args[3];
	int64_t xb, yb;              /* conv2d channel blocks (input, output) */
	ts_array *blk[TSR_MAX_SETS][3]; /* conv2d: Xc, Wc, Yc per buffer set */
} tsr_state;

static int64_t pow2_block(int64_t channels, int64_t max)
{
	int64_t b = max;
	while (b > 1 && channels % b)
		b /= 2;
	return b;
}

static void conv_blocks(const bench_conv *c, int64_t *xb, int64_t *yb)
{
	int64_t lanes = __builtin_cpu_supports("avx512f") ? 16 : 8;
	/* two vectors of output channels per pixel: each input value broadcast
	 * feeds two FMAs, so the kernel is bound by FMAs rather than loads */
	*yb = pow2_block(c->K, 2 * lanes);
	*xb = pow2_block(c->C, 16);
}

/* Builds the operator into st->args (inputs, then the output) and
 * schedules it; NULL with the error in st->ctx. */
static ts_schedule *build_op(tsr_state *st, const bench_problem *p)
{
	ts_ctx *ctx = st->ctx;
	ts_tensor **a = st->args;
	if (p->op == BENCH_GEMM) {
		const bench_gemm *g = &p->g;
		ts_matmul_cpu_params mp = ts_matmul_cpu_default();
		a[0] = ts_placeholder(ctx, "A", TS_SHAPE(g->M, g->K), ts_float32);
		a[1] = ts_placeholder(ctx, "B", TS_SHAPE(g->K, g->N), ts_float32);
		/* packing B pays off only when many rows reuse each panel */
		a[2] = g->M >= 32 ? ts_op_matmul_packed(ctx, a[0], a[1], mp.nr)
				  : ts_op_matmul(ctx, a[0], a[1], false, false);
		ts_schedule *s = a[2] ? ts_create_schedule(ctx, 1, &a[2]) : NULL;
		return s && ts_schedule_matmul_cpu(s, a[2], &mp) == TS_OK ? s : NULL;
	}
	const bench_conv *c = &p->c;
	int s1 = (int)c->stride, pd = (int)c->pad;
	int64_t x = st->xb, y = st->yb;
	a[0] = ts_placeholder(ctx, "Xc", TS_SHAPE(c->N, c->C / x, c->H, c->W, x), ts_float32);
	a[1] = ts_placeholder(ctx, "Wc", TS_SHAPE(c->K / y, c->C / x, c->R, c->S, x, y),
			      ts_float32);
	a[2] = ts_op_conv2d_nchwc(ctx, a[0], a[1], s1, s1, pd, pd, 1, 1);
	ts_schedule *s = a[2] ? ts_create_schedule(ctx, 1, &a[2]) : NULL;
	ts_conv2d_cpu_params cp = ts_conv2d_cpu_default();
	return s && ts_schedule_conv2d_nchwc_cpu(s, a[2], &cp) == TS_OK ? s : NULL;
}

ts_func *bench_tessera_lower(ts_ctx *ctx, const bench_problem *p)
{
	tsr_state st = {.ctx = ctx};
	if (p->op == BENCH_CONV2D)
		conv_blocks(&p->c, &st.xb, &st.yb);
	ts_schedule *s = build_op(&st, p);
	return s ? ts_lower(s, bench_op_name(p->op), 3, st.args) : NULL;
}

/* ---- NCHW <-> NCHW[x]c ------------------------------------------------------------ */

/* X[N, C, H, W] -> Xc[N, C/x, H, W, x]. */
static void to_nchwc(const float *X, float *Xc, int64_t N, int64_t C, int64_t HW, int64_t x)
{
	for (int64_t n = 0; n < N; n++)
		for (int64_t c = 0; c < C; c++)
			for (int64_t i = 0; i < HW; i++)
				Xc[((n * (C / x) + c / x) * HW + i) * x + c % x] = X[(n * C + c) * HW + i];
}

static void from_nchwc(const float *Xc, float *X, int64_t N, int64_t C, int64_t HW, int64_t x)
{
	for (int64_t n = 0; n < N; n++)
		for (int64_t c = 0; c < C; c++)
			for (int64_t i = 0; i < HW; i++)
				X[(n * C + c) * HW + i] = Xc[((n * (C / x) + c / x) * HW + i) * x + c % x];
}

/* W[K, C, R, S] -> Wc[K/y, C/x, R, S, x, y]. */
static void to_blocked_weights(const float *W, float *Wc, const bench_conv *c, int64_t x,
			       int64_t y)
{
	int64_t RS = c->R * c->S;
	for (int64_t k = 0; k < c->K; k++)
		for (int64_t ch = 0; ch < c->C; ch++)
			for (int64_t i = 0; i < RS; i++) {
				int64_t o = ((k / y) * (c->C / x) + ch / x) * RS + i;
				Wc[(o * x + ch % x) * y + k % y] = W[(k * c->C + ch) * RS + i];
			}
}

static int tsr_bind(bench_kernel *k, char *err, size_t n)
{
	tsr_state *st = k->state;
	const bench_conv *c = &k->p->c;
	if (k->p->op == BENCH_GEMM)
		return BENCH_OK;
	if (k->nsets > TSR_MAX_SETS)
		return snprintf(err, n, "tessera: more than %d buffer sets", TSR_MAX_SETS), BENCH_ERROR;
	for (int i = 0; i < k->nsets; i++) {
		for (int a = 0; a < 3; a++) {
			st->blk[i][a] = ts_array_for(st->ctx, st->args[a]);
			if (!st->blk[i][a])
				return snprintf(err, n, "tessera: %s", ts_last_error(st->ctx)), BENCH_ERROR;
		}
		to_nchwc(k->sets[i].in0->data, st->blk[i][0]->data, c->N, c->C, c->H * c->W, st->xb);
		to_blocked_weights(k->sets[i].in1->data, st->blk[i][1]->data, c, st->xb, st->yb);
	}
	return BENCH_OK;
}

static int tsr_sync(bench_kernel *k, int i)
{
	tsr_state *st = k->state;
	const bench_conv *c = &k->p->c;
	if (k->p->op == BENCH_CONV2D) {
		int64_t OH = bench_conv_out(c->H, c->R, c->stride, c->pad);
		int64_t OW = bench_conv_out(c->W, c->S, c->stride, c->pad);
		from_nchwc(st->blk[i][2]->data, k->sets[i].out->data, c->N, c->K, OH * OW, st->yb);
	}
	return 0;
}

static int tsr_run(bench_kernel *k, int i)
{
	tsr_state *st = k->state;
	bench_bufs *b = &k->sets[i];
	ts_array *plain[3] = {b->in0, b->in1, b->out};
	ts_array *const *args = k->p->op == BENCH_GEMM ? plain : st->blk[i];
	if (ts_module_run(st->mod, 3, args) == TS_OK)
		return 0;
	fprintf(stderr, "tessera: %s\n", ts_last_error(st->ctx));
	return -1;
}

static void tsr_free(bench_kernel *k)
{
	tsr_state *st = k->state;
	if (!st)
		return;
	for (int i = 0; i < TSR_MAX_SETS; i++)
		for (int a = 0; a < 3; a++)
			ts_array_free(st->blk[i][a]);
	if (st->mod)
		ts_module_free(st->mod);
	ts_ctx_free(st->ctx);
	free(st);
	k->state = NULL;
}

static int tsr_fail(bench_kernel *k, const char *what, char *err, size_t n)
{
	tsr_state *st = k->state;
	snprintf(err, n, "tessera: %s: %s", what, st->ctx ? ts_last_error(st->ctx) : "no memory");
	tsr_free(k);
	return BENCH_ERROR;
}

int bench_make_tessera(const bench_problem *p, const bench_opts *o, bench_kernel *k,
		       char *err, size_t n)
{
	if (o->target != BENCH_CPU)
		return bench_make_tessera_cuda(p, o, k, err, n);
	tsr_state *st = calloc(1, sizeof *st);
	if (!st)
		return snprintf(err, n, "tessera: out of memory"), BENCH_ERROR;
	*k = (bench_kernel){.impl = BENCH_IMPL_TESSERA, .p = p, .threads = o->threads,
			    .bind = tsr_bind, .run = tsr_run, .sync = tsr_sync, .free = tsr_free,
			    .state = st};
	ts_set_num_threads(o->threads);
	if (p->op == BENCH_CONV2D)
		conv_blocks(&p->c, &st->xb, &st->yb);
	st->ctx = ts_ctx_new();
	ts_schedule *s = st->ctx ? build_op(st, p) : NULL;
	if (!s)
		return tsr_fail(k, "schedule", err, n);
	uint64_t t0 = ts_now_ns();
	ts_func *f = ts_lower(s, bench_op_name(p->op), 3, st->args);
	if (!f)
		return tsr_fail(k, "lower", err, n);
	st->mod = ts_build(st->ctx, f, "llvm");
	if (!st->mod)
		return tsr_fail(k, "build", err, n);
	k->compile_ms = ts_ms_since(t0);
	return BENCH_OK;
}
