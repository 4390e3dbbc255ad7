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
 *
 * depthwise is the tuner's "depthwise" task: ts_op_depthwise_conv2d_nchwc
 * on Xc[N, C/x, H, W, x] and Wc[C/x, R, S, x] (x a vector of channels, or
 * the largest power of two below it dividing C) with
 * ts_schedule_depthwise_nchwc_cpu; as for conv2d, the conversions of the
 * input, weights and output happen in bind/sync, outside the timed region.
 * With --tuned a record of `tessera-tune depthwise N C H W R STRIDE PAD`
 * replaces the default blocks (ts_tune_lower_from_log).
 *
 * With --tuned LOG, a kernel whose problem has a record in the tuning log
 * (tessera-tune matmul M N K, or conv2d with the layer's shape) takes the
 * record's parameters (register blocks, packing, channel blocks) instead
 * of the defaults, and says so on stdout; a record tuned on another
 * machine or tessera version fails the kernel with the log's message.
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "build.h"
#include "lower.h"
#include "op_schedules.h"
#include "ops.h"
#include "threadpool.h"
#include "tune.h"

#define TSR_MAX_SETS 64

typedef struct tsr_state {
	ts_ctx *ctx;
	ts_module *mod;
	ts_tensor *args[3];
	int64_t xb, yb;              /* channel blocks (input, output) */
	ts_matmul_cpu_params mp;     /* GEMM */
	bool pack;
	ts_conv2d_cpu_params cp;     /* conv2d */
	ts_array *blk[TSR_MAX_SETS][3]; /* conv2d, depthwise: Xc, Wc, Yc per buffer set */
} tsr_state;

/* The columns of the rows c's kernel runs over, its input in channel
 * blocks of xb (ts_conv2d_cpu_row_width_for), as in the graph layer. */
static int64_t conv_row(const bench_conv *c, int64_t xb)
{
	return ts_conv2d_cpu_row_width_for(c->R, c->S, c->stride, c->stride, 2 * c->pad, 2 * c->pad,
					   bench_conv_out(c->H, c->R, c->stride, c->pad),
					   bench_conv_out(c->W, c->S, c->stride, c->pad), c->C, xb, c->K);
}

static void conv_blocks(const bench_conv *c, int64_t *xb, int64_t *yb)
{
	/* the blocks of the graph layer's convolutions (op_schedules.h): the
	 * input's as a convolution of the input's width would have written
	 * it, as inside a network, the output's for the row its kernel sees */
	*xb = ts_conv2d_cpu_out_block_for(c->C, c->W);
	*yb = ts_conv2d_cpu_out_block_for(c->K, conv_row(c, *xb));
}

/* The default parameters of p's schedule. */
static void default_params(tsr_state *st, const bench_problem *p)
{
	st->mp = p->op == BENCH_GEMM ? ts_matmul_cpu_default_shape(p->g.M, p->g.N, p->g.K)
				     : ts_matmul_cpu_default();
	st->pack = p->op == BENCH_GEMM && ts_matmul_cpu_packs(p->g.M);
	st->cp = ts_conv2d_cpu_default();
	if (p->op == BENCH_CONV2D)
		conv_blocks(&p->c, &st->xb, &st->yb);
}

/* The tuning log's task for p. */
static ts_status tuned_task(ts_ctx *ctx, const bench_problem *p, ts_tune_task *t)
{
	const bench_conv *c = &p->c;
	if (p->op == BENCH_GEMM)
		return ts_tune_task_init(ctx, t, "matmul", TS_SHAPE(p->g.M, p->g.N, p->g.K));
	return ts_tune_task_init(ctx, t, "conv2d",
				 TS_SHAPE(c->N, c->C, c->H, c->W, c->K, c->R, c->S, c->stride, c->pad));
}

/* p's record of the log at path, if any, replaces the defaults; prints
 * which schedule the kernel uses.  BENCH_OK, or BENCH_ERROR with the
 * error in st->ctx (a refused record). */
static int apply_tuned(tsr_state *st, const bench_problem *p, const char *path)
{
	ts_tune_task t;
	ts_tune_cand c;
	const ts_tune_record *rec = NULL;
	ts_tune_log *log = ts_tune_log_load(st->ctx, path);
	if (!log || tuned_task(st->ctx, p, &t) || ts_tune_log_lookup(st->ctx, log, &t, &c, &rec))
		return BENCH_ERROR;
	if (!rec) {
		printf("tessera %s: default schedule (no record in the tuning log)\n", p->name);
		return BENCH_OK;
	}
	/* what the record changes, as tessera-tune printed it */
	ts_tune_cand def = ts_tune_default(&t);
	printf("tessera %s: tuned schedule (%s:%d):", p->name, path, rec->line);
	int n = 0;
	for (int i = 0; i < t.space.nparams; i++)
		if (c.v[i] != def.v[i])
			printf("%s %s %lld", n++ ? "," : "", t.space.name[i], (long long)c.v[i]);
	printf("%s\n", n ? "" : " the default parameters");
	/* the tuner's own reading of the record, so that the kernel timed
	 * is the one it measured */
	if (p->op == BENCH_GEMM) {
		st->mp = ts_tune_matmul_params(&t, &c, &st->pack);
		return BENCH_OK;
	}
	ts_tune_space *sp = &t.space;
	for (int i = 0; i < sp->nparams; i++) {
		const char *n = sp->name[i];
		if (!strcmp(n, "ic_block"))
			st->xb = c.v[i];
		else if (!strcmp(n, "oc_block"))
			st->yb = c.v[i];
	}
	st->cp = ts_tune_conv2d_params(&t, &c);
	return BENCH_OK;
}

/* The tuner's depthwise task of p. */
static ts_status dw_task(ts_ctx *ctx, const bench_problem *p, ts_tune_task *t)
{
	const bench_conv *c = &p->c;
	return ts_tune_task_init(ctx, t, "depthwise", TS_SHAPE(c->N, c->C, c->H, c->W, c->R, c->stride, c->pad));
}

/* depthwise lowered with the log's record for p (path NULL: no log, or
 * no record: the default schedule); prints which with a log. */
static ts_func *dw_lower(ts_ctx *ctx, const bench_problem *p, const char *path)
{
	ts_tune_task t;
	ts_tune_log *log = NULL;
	const char *note;
	if (dw_task(ctx, p, &t) != TS_OK || (path && !(log = ts_tune_log_load(ctx, path))))
		return NULL;
	ts_func *f = ts_tune_lower_from_log(ctx, log, &t, &note);
	if (f && path)
		printf("tessera %s: %s\n", p->name, note);
	return f;
}

/* Builds the operator into st->args (inputs, then the output) and
 * schedules it with st's parameters; NULL with the error in st->ctx. */
static ts_schedule *build_op(tsr_state *st, const bench_problem *p)
{
	ts_ctx *ctx = st->ctx;
	ts_tensor **a = st->args;
	if (p->op == BENCH_GEMM) {
		const bench_gemm *g = &p->g;
		a[0] = ts_placeholder(ctx, "A", TS_SHAPE(g->M, g->K), ts_float32);
		a[1] = ts_placeholder(ctx, "B", TS_SHAPE(g->K, g->N), ts_float32);
		a[2] = st->pack ? ts_op_matmul_packed(ctx, a[0], a[1], st->mp.nr)
				: ts_op_matmul(ctx, a[0], a[1], false, false);
		ts_schedule *s = a[2] ? ts_create_schedule(ctx, 1, &a[2]) : NULL;
		return s && ts_schedule_matmul_cpu(s, a[2], &st->mp) == TS_OK ? s : NULL;
	}
	const bench_conv *c = &p->c;
	int s1 = (int)c->stride, pd = (int)c->pad;
	/* rows viewed as one: position for position, the input's too (the
	 * merged rows of the default blocks, as the tuner declares them) */
	int64_t x = st->xb, y = st->yb, rw = conv_row(c, ts_conv2d_cpu_out_block_for(c->C, c->W));
	int64_t h = rw > c->W ? c->H / (rw / c->W) : c->H, w = c->H * c->W / h;
	a[0] = ts_placeholder(ctx, "Xc", TS_SHAPE(c->N, c->C / x, h, w, x), ts_float32);
	a[1] = ts_placeholder(ctx, "Wc", TS_SHAPE(c->K / y, c->C / x, c->R, c->S, x, y),
			      ts_float32);
	a[2] = ts_op_conv2d_nchwc(ctx, a[0], a[1], s1, s1, pd, pd, 1, 1);
	ts_schedule *s = a[2] ? ts_create_schedule(ctx, 1, &a[2]) : NULL;
	return s && ts_schedule_conv2d_nchwc_cpu(s, a[2], &st->cp) == TS_OK ? s : NULL;
}

ts_func *bench_tessera_lower(ts_ctx *ctx, const bench_problem *p)
{
	tsr_state st = {.ctx = ctx};
	if (p->op == BENCH_DEPTHWISE)
		return dw_lower(ctx, p, NULL);
	default_params(&st, p);
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

/* W[C, 1, R, S] -> Wc[C/x, R, S, x]. */
static void to_blocked_dw_weights(const float *W, float *Wc, const bench_conv *c, int64_t x)
{
	to_nchwc(W, Wc, 1, c->C, c->R * c->S, x);
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
		if (k->p->op == BENCH_DEPTHWISE)
			to_blocked_dw_weights(k->sets[i].in1->data, st->blk[i][1]->data, c, st->xb);
		else
			to_blocked_weights(k->sets[i].in1->data, st->blk[i][1]->data, c, st->xb, st->yb);
	}
	return BENCH_OK;
}

static int tsr_sync(bench_kernel *k, int i)
{
	tsr_state *st = k->state;
	const bench_conv *c = &k->p->c;
	if (k->p->op != BENCH_GEMM) {
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

/* depthwise: the task's function; its arguments Xc, Wc, Yc (their channel
 * block, the input's last extent) are what bind and sync convert. */
static int make_depthwise(bench_kernel *k, const bench_opts *o, char *err, size_t n)
{
	tsr_state *st = k->state;
	uint64_t t0 = ts_now_ns();
	ts_func *f = st->ctx ? dw_lower(st->ctx, k->p, o->tuned) : NULL;
	if (!f)
		return tsr_fail(k, o->tuned ? "--tuned" : "lower", err, n);
	for (int a = 0; a < 3; a++)
		st->args[a] = f->param_tensors[a];
	st->xb = st->yb = st->args[0]->shape[4];
	st->mod = ts_build(st->ctx, f, "llvm");
	if (!st->mod)
		return tsr_fail(k, "build", err, n);
	k->compile_ms = ts_ms_since(t0);
	return BENCH_OK;
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
	default_params(st, p);
	st->ctx = ts_ctx_new();
	if (p->op == BENCH_DEPTHWISE)
		return make_depthwise(k, o, err, n);
	if (st->ctx && o->tuned && apply_tuned(st, p, o->tuned) != BENCH_OK)
		return tsr_fail(k, "--tuned", err, n);
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
