/*
 * gpu.c - the CUDA side of tessera-bench: whether --target cuda can run,
 * the device buffers the GPU kernels share (gpu_dev.h), and the tessera
 * kernel on the GPU.  cuBLAS and cuDNN are in gpu_libs.c.
 *
 * Nothing here links against CUDA: the driver is opened at run time by
 * runtime/cuda.c and the kernel is compiled by NVRTC (opened the same way),
 * so tessera-bench builds and runs where no CUDA toolkit exists and says
 * why --target cuda cannot run there.
 *
 * The tessera GPU kernels are the operator library's GPU schedules on the
 * plain layouts (GEMM A[M,K] B[K,N]; conv2d NCHW with OIHW weights), so no
 * layout conversion is needed.  A GEMM with float16 or bfloat16 inputs
 * (--dtype) is ts_op_matmul_acc into float32, a TF32 one ts_op_matmul_tf32,
 * under ts_schedule_matmul_tensorcore; its row is skipped, saying why, where
 * the shape is not made of 16 x 16 x 16 tiles or the GPU predates sm_80.
 *
 * Every GPU kernel (tessera, cuBLAS, cuDNN) is timed by bench_gpu_time
 * below: its enqueue starts one call without waiting, and ts_cuda_time
 * puts a CUDA event pair around each, so all three are measured by the
 * same protocol on the device's clock, launch gaps excluded alike.
 */
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "gpu_dev.h"
#include "lower.h"
#include "op_schedules.h"
#include "ops.h"

/* ---- the device -------------------------------------------------------------- */

int bench_gpu_available(char *why, size_t n)
{
	ts_ctx *ctx = ts_ctx_new();
	if (!ctx)
		return snprintf(why, n, "no CUDA device: out of memory"), 0;
	ts_cuda *cuda = ts_cuda_open(ctx);
	if (cuda)
		snprintf(why, n, "%s (%s)", ts_cuda_device_name(cuda), ts_cuda_arch(cuda));
	else
		snprintf(why, n, "no CUDA device: %s", ts_last_error(ctx));
	ts_cuda_close(cuda);
	ts_ctx_free(ctx);
	return cuda != NULL;
}

int gpu_applies(const char *who, const bench_problem *p, unsigned ops, const bench_opts *o,
		char *err, size_t n)
{
	if (o->target != BENCH_CUDA)
		return snprintf(err, n, "%s runs with --target cuda only", who), BENCH_SKIP;
	if (!((ops >> p->op) & 1u))
		return snprintf(err, n, "%s does not run %s", who, bench_op_name(p->op)), BENCH_SKIP;
	return BENCH_OK;
}

int gpu_dev_open(gpu_dev *d, const char *who, char *err, size_t n)
{
	memset(d, 0, sizeof *d);
	d->who = who;
	d->ctx = ts_ctx_new();
	if (!d->ctx)
		return snprintf(err, n, "%s: out of memory", who), BENCH_ERROR;
	d->cuda = ts_cuda_open(d->ctx);
	if (!d->cuda)
		return snprintf(err, n, "%s: %s", who, ts_last_error(d->ctx)), BENCH_ERROR;
	return BENCH_OK;
}

static int dev_fail(gpu_dev *d, const char *what, char *err, size_t n)
{
	snprintf(err, n, "%s: %s: %s", d->who, what, ts_last_error(d->ctx));
	ts_clear_error(d->ctx);
	return BENCH_ERROR;
}

/* Set i's three device arrays: inputs copied, the output NaN. */
static int bind_set(gpu_dev *d, bench_bufs *b, ts_array **arr, char *err, size_t n)
{
	ts_array *host[3] = {b->in0, b->in1, b->out};
	memset(b->out->data, 0xff, ts_array_nbytes(b->out)); /* NaN */
	for (int a = 0; a < 3; a++) {
		const ts_array *h = host[a];
		arr[a] = ts_cuda_array_new(d->ctx, d->cuda, h->dtype, h->ndim, h->shape);
		if (!arr[a])
			return dev_fail(d, "device buffer", err, n);
		if (ts_cuda_copy_to_device(d->ctx, arr[a], h) != TS_OK)
			return dev_fail(d, "copy to the device", err, n);
	}
	return BENCH_OK;
}

int gpu_dev_bind(gpu_dev *d, bench_kernel *k, char *err, size_t n)
{
	if (k->nsets > GPU_MAX_SETS)
		return snprintf(err, n, "%s: more than %d buffer sets", d->who, GPU_MAX_SETS),
		       BENCH_ERROR;
	for (int i = 0; i < k->nsets; i++) {
		d->nsets = i + 1; /* what close frees, even when this set fails half way */
		if (bind_set(d, &k->sets[i], d->arr[i], err, n))
			return BENCH_ERROR;
	}
	return BENCH_OK;
}

int gpu_dev_sync(gpu_dev *d, bench_kernel *k, int i)
{
	if (ts_cuda_copy_to_host(d->ctx, k->sets[i].out, d->arr[i][2]) == TS_OK)
		return 0;
	fprintf(stderr, "%s: copy to the host: %s\n", d->who, ts_last_error(d->ctx));
	ts_clear_error(d->ctx);
	return -1;
}

int gpu_dev_wait(gpu_dev *d)
{
	if (ts_cuda_synchronize(d->ctx, d->cuda) == TS_OK)
		return 0;
	fprintf(stderr, "%s: %s\n", d->who, ts_last_error(d->ctx));
	ts_clear_error(d->ctx);
	return -1;
}

void gpu_dev_close(gpu_dev *d)
{
	for (int i = 0; i < d->nsets; i++)
		for (int a = 0; a < 3; a++)
			ts_cuda_array_free(d->arr[i][a]);
	d->nsets = 0;
	ts_cuda_close(d->cuda);
	d->cuda = NULL;
	ts_ctx_free(d->ctx);
	d->ctx = NULL;
}

void *gpu_dev_ptr(const ts_array *a)
{
	return a->data; /* a CUdeviceptr for device arrays */
}

/* ---- timing ------------------------------------------------------------------ */

typedef struct gpu_rotor {
	bench_kernel *k;
	int next;
} gpu_rotor;

static int enqueue_next(void *arg)
{
	gpu_rotor *r = arg;
	int i = r->next;
	r->next = (i + 1) % r->k->nsets;
	return r->k->enqueue(r->k, i);
}

int bench_gpu_time(ts_ctx *ctx, bench_kernel *k, int warmup, int repeat, bool flush_l2,
		   ts_timing *out)
{
	gpu_rotor r = {.k = k};
	ts_cuda_time_opts o = {.warmup = warmup, .repeats = repeat, .flush_l2 = flush_l2,
			       .what = bench_impl_names[k->impl]};
	return ts_cuda_time(ctx, k->cuda, enqueue_next, &r, &o, out) == TS_OK ? 0 : -1;
}

/* ---- tessera on the GPU ------------------------------------------------------ */

typedef struct tcu_state {
	gpu_dev dev;
	ts_module *mod;
} tcu_state;

/* The operator on plain layouts with its GPU schedule; args gets the
 * inputs, then the output.  NULL with the error in ctx. */
static ts_schedule *build_cuda_op(ts_ctx *ctx, const bench_problem *p, ts_tensor *a[3])
{
	if (p->op == BENCH_GEMM) {
		const bench_gemm *g = &p->g;
		bool tc = p->dtype != BENCH_F32;
		ts_dtype t = bench_dtype_ts(p->dtype);
		a[0] = ts_placeholder(ctx, "A", TS_SHAPE(g->M, g->K), t);
		a[1] = ts_placeholder(ctx, "B", TS_SHAPE(g->K, g->N), t);
		a[2] = p->dtype == BENCH_TF32 ? ts_op_matmul_tf32(ctx, a[0], a[1], false, false)
		       : tc		      ? ts_op_matmul_acc(ctx, a[0], a[1], false, false, ts_float32)
					      : ts_op_matmul(ctx, a[0], a[1], false, false);
		ts_schedule *s = a[2] ? ts_create_schedule(ctx, 1, &a[2]) : NULL;
		if (!s)
			return NULL;
		ts_status st = tc ? ts_schedule_matmul_tensorcore(s, a[2], NULL)
				  : ts_schedule_matmul_cuda(s, a[2], NULL);
		return st == TS_OK ? s : NULL;
	}
	const bench_conv *c = &p->c;
	int st = (int)c->stride, pd = (int)c->pad;
	a[0] = ts_placeholder(ctx, "X", TS_SHAPE(c->N, c->C, c->H, c->W), ts_float32);
	a[1] = ts_placeholder(ctx, "W", TS_SHAPE(c->K, c->C, c->R, c->S), ts_float32);
	a[2] = ts_op_conv2d_nchw(ctx, a[0], a[1], st, st, pd, pd, 1, 1, 1);
	ts_schedule *s = a[2] ? ts_create_schedule(ctx, 1, &a[2]) : NULL;
	return s && ts_schedule_conv2d_cuda(s, a[2], NULL) == TS_OK ? s : NULL;
}

ts_func *bench_tessera_cuda_lower(ts_ctx *ctx, const bench_problem *p)
{
	ts_tensor *args[3];
	ts_schedule *s = build_cuda_op(ctx, p, args);
	return s ? ts_lower(s, bench_op_name(p->op), 3, args) : NULL;
}

static int tcu_bind(bench_kernel *k, char *err, size_t n)
{
	tcu_state *st = k->state;
	return gpu_dev_bind(&st->dev, k, err, n);
}

static int tcu_run(bench_kernel *k, int i)
{
	tcu_state *st = k->state;
	if (ts_module_run(st->mod, 3, st->dev.arr[i]) == TS_OK)
		return 0; /* launched and synchronized */
	fprintf(stderr, "tessera: %s\n", ts_last_error(st->dev.ctx));
	ts_clear_error(st->dev.ctx);
	return -1;
}

static int tcu_enqueue(bench_kernel *k, int i)
{
	tcu_state *st = k->state;
	if (ts_module_launch(st->mod, 3, st->dev.arr[i]) == TS_OK)
		return 0;
	fprintf(stderr, "tessera: %s\n", ts_last_error(st->dev.ctx));
	ts_clear_error(st->dev.ctx);
	return -1;
}

static int tcu_sync(bench_kernel *k, int i)
{
	tcu_state *st = k->state;
	return gpu_dev_sync(&st->dev, k, i);
}

static void tcu_free(bench_kernel *k)
{
	tcu_state *st = k->state;
	if (!st)
		return;
	if (st->mod)
		ts_module_free(st->mod); /* before the context it lives in */
	gpu_dev_close(&st->dev);
	free(st);
	k->state = NULL;
}

static int tcu_fail(bench_kernel *k, const char *what, char *err, size_t n)
{
	tcu_state *st = k->state;
	snprintf(err, n, "tessera: %s: %s", what, ts_last_error(st->dev.ctx));
	tcu_free(k);
	return BENCH_ERROR;
}

/* Lowers and builds (NVRTC for the device's sm_XY, then loads it); the
 * compile time covers both, NVRTC included. */
static int tcu_compile(bench_kernel *k, char *err, size_t n)
{
	tcu_state *st = k->state;
	uint64_t t0 = ts_now_ns();
	ts_func *f = bench_tessera_cuda_lower(st->dev.ctx, k->p);
	if (!f)
		return tcu_fail(k, "schedule and lower", err, n);
	st->mod = ts_build(st->dev.ctx, f, "cuda");
	if (!st->mod)
		return tcu_fail(k, "build", err, n);
	k->compile_ms = ts_ms_since(t0);
	return BENCH_OK;
}

/* A 16-bit or TF32 GEMM runs on tensor cores: BENCH_SKIP, saying why, for a shape
 * the MMA's 16 x 16 x 16 tile does not divide (cuBLAS still runs it). */
static int tc_shape_applies(const bench_problem *p, char *err, size_t n)
{
	const bench_gemm *g = &p->g;
	bool tiles = g->M % 16 == 0 && g->N % 16 == 0 && g->K % 16 == 0;
	if (p->op != BENCH_GEMM || p->dtype == BENCH_F32 || tiles)
		return BENCH_OK;
	snprintf(err, n, "tessera: the %s tensor-core GEMM needs M, N and K multiples of 16, got "
		 "%lldx%lldx%lld", bench_dtype_name(p->dtype), (long long)g->M, (long long)g->N,
		 (long long)g->K);
	return BENCH_SKIP;
}

/* ... and a GPU that has the MMA (mma.sync m16n8k16 is sm_80's). */
static int tc_device_applies(const bench_problem *p, ts_cuda *cuda, char *err, size_t n)
{
	int major = 0, minor = 0;
	if (p->dtype == BENCH_F32)
		return BENCH_OK;
	ts_cuda_compute_capability(cuda, &major, &minor);
	if (major >= 8)
		return BENCH_OK;
	snprintf(err, n, "tessera: the %s tensor-core GEMM needs sm_80 or newer, this GPU is %s",
		 bench_dtype_name(p->dtype), ts_cuda_arch(cuda));
	return BENCH_SKIP;
}

int bench_make_tessera_cuda(const bench_problem *p, const bench_opts *o, bench_kernel *k,
			    char *err, size_t n)
{
	int rc = gpu_applies("tessera", p, 1u << BENCH_GEMM | 1u << BENCH_CONV2D, o, err, n);
	if (rc == BENCH_OK)
		rc = tc_shape_applies(p, err, n);
	if (rc != BENCH_OK)
		return rc;
	tcu_state *st = calloc(1, sizeof *st);
	if (!st)
		return snprintf(err, n, "tessera: out of memory"), BENCH_ERROR;
	/* one host thread launches; the GPU's parallelism is not a thread count */
	*k = (bench_kernel){.impl = BENCH_IMPL_TESSERA, .p = p, .threads = 1, .bind = tcu_bind,
			    .run = tcu_run, .enqueue = tcu_enqueue, .sync = tcu_sync, .free = tcu_free,
			    .state = st};
	rc = gpu_dev_open(&st->dev, "tessera", err, n);
	if (rc == BENCH_OK)
		rc = tc_device_applies(p, st->dev.cuda, err, n);
	if (rc != BENCH_OK) {
		tcu_free(k);
		return rc;
	}
	k->cuda = st->dev.cuda;
	return tcu_compile(k, err, n);
}
