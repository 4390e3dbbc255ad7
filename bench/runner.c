/*
 * runner.c - runs every implementation on every problem: buffers, the
 * correctness check, and the timing protocol.
 *
 * Per problem: random inputs in [-1, 1) (never zeros); a reference output
 * from the baseline library (OpenBLAS for GEMM, oneDNN for conv2d and
 * depthwise; naive C
 * when the library cannot run it).  A GEMM with 16-bit or TF32 inputs
 * (--dtype f16|bf16|tf32, GPU only) has them rounded to float16 /
 * bfloat16 / TF32 on the host, and its reference is the double product of
 * those rounded inputs (the output is float32 in every case).  Per implementation: build the kernel,
 * bind it to the buffers, run it once and compare with the reference (max
 * |got - ref| / max |ref| <= 1e-3, normwise so that outputs near zero after
 * cancellation do not count as errors); only a correct kernel is timed.
 *
 * Timing: ts_time_run_stable, the same protocol for tessera and every
 * library (bench_time_opts): warm-up until two consecutive calls agree,
 * then samples until the median is stable to 1% (at least 0.1 s of them
 * and 5, within a budget), or exactly --repeat samples when given.  The
 * median is reported with the samples' verdict (flags), so that a result
 * disturbed by the machine is marked in the table.  A sample groups
 * enough calls to last >= 20 us so the clock's resolution does not matter.
 * When a problem's buffers total < 8 MiB, several buffer sets (up to 16,
 * ~32 MiB in all: ts_cold_sets, as the tuner's) are allocated and calls
 * rotate among them, so each call starts with inputs that are mostly not
 * in cache, as in a real network.
 *
 * With --target cuda the check runs on device copies of the sets (made in
 * bind, outside the timed region) against the same CPU reference, and the
 * timing is on the device's clock: bench_gpu_time (gpu.c) puts a CUDA
 * event pair around each call, after warm-up calls, for tessera, cuBLAS
 * and cuDNN alike; with --flush-l2 the GPU's L2 is overwritten between
 * calls, outside the timed interval.  Min, median, mean and stddev of the
 * same samples are reported (the table shows the median).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arith.h"
#include "bench.h"
#include "timer.h"


typedef struct problem_data {
	int nsets;
	bench_bufs sets[TS_COLD_MAX_SETS];
	float *ref;        /* reference output for set 0 */
	int64_t out_numel;
	const char *ref_impl;
} problem_data;

double bench_rel_err(const float *got, const float *want, int64_t n)
{
	double num = 0, den = 0;
	for (int64_t i = 0; i < n; i++) {
		double d = fabs((double)got[i] - (double)want[i]);
		if (!(d <= num)) /* NaN propagates */
			num = d;
		den = fmax(den, fabs((double)want[i]));
	}
	if (num == 0)
		return 0;
	return den > 0 ? num / den : INFINITY;
}

/* The three array shapes of a problem. */
static void problem_shapes(const bench_problem *p, int nd[3], int64_t sh[3][4])
{
	if (p->op == BENCH_GEMM) {
		const bench_gemm *g = &p->g;
		nd[0] = nd[1] = nd[2] = 2;
		memcpy(sh[0], (int64_t[]){g->M, g->K}, 2 * sizeof(int64_t));
		memcpy(sh[1], (int64_t[]){g->K, g->N}, 2 * sizeof(int64_t));
		memcpy(sh[2], (int64_t[]){g->M, g->N}, 2 * sizeof(int64_t));
		return;
	}
	const bench_conv *c = &p->c;
	int64_t OH = bench_conv_out(c->H, c->R, c->stride, c->pad);
	int64_t OW = bench_conv_out(c->W, c->S, c->stride, c->pad);
	nd[0] = nd[1] = nd[2] = 4;
	memcpy(sh[0], (int64_t[]){c->N, c->C, c->H, c->W}, 4 * sizeof(int64_t));
	/* depthwise: one input channel per filter */
	memcpy(sh[1], (int64_t[]){c->K, p->op == BENCH_DEPTHWISE ? 1 : c->C, c->R, c->S},
	       4 * sizeof(int64_t));
	memcpy(sh[2], (int64_t[]){c->N, c->K, OH, OW}, 4 * sizeof(int64_t));
}

static void free_data(problem_data *d)
{
	for (int i = 0; i < d->nsets; i++) {
		ts_array_free(d->sets[i].in0);
		ts_array_free(d->sets[i].in1);
		ts_array_free(d->sets[i].out);
	}
	free(d->ref);
	memset(d, 0, sizeof *d);
}

/* The inputs are random values of their type (16-bit ones rounded to it,
 * TF32 ones float32 values rounded to TF32, so that a TF32 product is
 * exact whichever rounding a library applies); the output is float32
 * whatever the inputs are. */
static void round_tf32(ts_array *a)
{
	float *x = a->data;
	for (int64_t i = 0; i < ts_array_numel(a); i++)
		x[i] = ir_round_tf32(x[i]);
}

static int alloc_data(const bench_problem *p, problem_data *d)
{
	int nd[3];
	int64_t sh[3][4], numel[3] = {1, 1, 1};
	ts_dtype in = bench_dtype_ts(p->dtype);
	problem_shapes(p, nd, sh);
	for (int a = 0; a < 3; a++)
		for (int i = 0; i < nd[a]; i++)
			numel[a] *= sh[a][i];
	double bytes = ts_dtype_bytes(in) * (double)(numel[0] + numel[1]) + 4.0 * (double)numel[2];
	d->nsets = ts_cold_sets(bytes);
	d->out_numel = numel[2];
	for (int i = 0; i < d->nsets; i++) {
		bench_bufs *b = &d->sets[i];
		b->in0 = ts_array_new(NULL, in, nd[0], sh[0]);
		b->in1 = ts_array_new(NULL, in, nd[1], sh[1]);
		b->out = ts_array_new(NULL, ts_float32, nd[2], sh[2]);
		if (!b->in0 || !b->in1 || !b->out)
			return -1;
		ts_array_fill_random(b->in0, 1000 + 2 * (uint64_t)i, -1, 1);
		ts_array_fill_random(b->in1, 1001 + 2 * (uint64_t)i, -1, 1);
		if (p->dtype == BENCH_TF32)
			round_tf32(b->in0), round_tf32(b->in1);
	}
	d->ref = malloc((size_t)numel[2] * sizeof(float));
	return d->ref ? 0 : -1;
}

/* After a library kernel: OpenBLAS workers spin for ~0.1 s after a call
 * (OpenMP's for a shorter while) before they sleep; on a machine with few
 * cores they would steal the cores the next implementation is timed on. */
static void quiesce(bench_impl impl)
{
	if (impl == BENCH_IMPL_OPENBLAS || impl == BENCH_IMPL_ONEDNN)
		nanosleep(&(struct timespec){.tv_nsec = 250 * 1000 * 1000}, NULL);
}

static const bench_make_fn makers[BENCH_NIMPL] = {
	[BENCH_IMPL_TESSERA] = bench_make_tessera, [BENCH_IMPL_NAIVE] = bench_make_naive,
	[BENCH_IMPL_OPENBLAS] = bench_make_openblas, [BENCH_IMPL_ONEDNN] = bench_make_onednn,
	[BENCH_IMPL_CUBLAS] = bench_make_cublas, [BENCH_IMPL_CUDNN] = bench_make_cudnn,
};

/* Makes and binds a kernel to the problem's buffers. */
static int make_bound(bench_impl impl, const bench_problem *p, const bench_opts *o,
		      problem_data *d, bench_kernel *k, char *err, size_t n)
{
	memset(k, 0, sizeof *k);
	int rc = makers[impl](p, o, k, err, n);
	if (rc != BENCH_OK)
		return rc;
	k->nsets = d->nsets;
	k->sets = d->sets;
	if (k->bind && k->bind(k, err, n)) {
		k->free(k);
		return BENCH_ERROR;
	}
	return BENCH_OK;
}

/* Runs set 0 once and brings its output back to the plain layout. */
static int run_once(bench_kernel *k)
{
	memset(k->sets[0].out->data, 0xff, ts_array_nbytes(k->sets[0].out)); /* NaN */
	if (k->run(k, 0))
		return -1;
	return k->sync ? k->sync(k, 0) : 0;
}

/* The reference output of set 0: the baseline library, else naive C; for
 * 16-bit inputs, their product in double (no CPU kernel takes them). */
static int compute_reference(const bench_problem *p, const bench_opts *o, problem_data *d)
{
	if (p->dtype != BENCH_F32) {
		const bench_bufs *b = &d->sets[0];
		d->ref_impl = "the fp64 product";
		int rc = bench_gemm_ref_f64(&p->g, b->in0, b->in1, d->ref, o->threads);
		quiesce(BENCH_IMPL_OPENBLAS);
		return rc;
	}
	bench_opts cpu = *o;
	cpu.target = BENCH_CPU;
	bench_impl order[2] = {p->op == BENCH_GEMM ? BENCH_IMPL_OPENBLAS : BENCH_IMPL_ONEDNN,
			       BENCH_IMPL_NAIVE};
	for (int i = 0; i < 2; i++) {
		bench_kernel k;
		char err[256];
		if (make_bound(order[i], p, &cpu, d, &k, err, sizeof err) != BENCH_OK)
			continue;
		int rc = run_once(&k);
		k.free(&k);
		quiesce(order[i]);
		if (rc == 0) {
			memcpy(d->ref, d->sets[0].out->data, (size_t)d->out_numel * sizeof(float));
			d->ref_impl = bench_impl_names[order[i]];
			return 0;
		}
	}
	return -1;
}

typedef struct rotor {
	bench_kernel *k;
	int next;
} rotor;

static int rotor_call(void *arg)
{
	rotor *r = arg;
	int i = r->next;
	r->next = (i + 1) % r->k->nsets;
	return r->k->run(r->k, i);
}

/* Seconds of one call, from a few calls (after the check's warm call). */
static double estimate_call(rotor *r)
{
	uint64_t t0 = ts_now_ns();
	int calls = 0;
	do {
		if (rotor_call(r))
			return -1;
		calls++;
	} while (calls < r->k->nsets && ts_ms_since(t0) < 100);
	return ts_ms_since(t0) / 1e3 / calls;
}

ts_time_opts bench_time_opts(int repeat, double sample_s, int warmup)
{
	ts_time_opts to = ts_time_opts_default();
	double s = fmax(sample_s, 1e-9);
	to.max_warmup = warmup < 2 && warmup > 0 ? 2 : warmup;
	if (repeat > 0) { /* --repeat: exactly that many samples */
		to.min_repeats = to.max_repeats = repeat;
		to.target_rel = 0;
		to.budget_s = 1e9;
		return to;
	}
	to.min_repeats = (int)fmin(fmax(ceil(0.1 / s), 5), 5000);
	to.max_repeats = (int)fmin(fmax(ceil(1.0 / s), to.min_repeats), 20000);
	to.target_rel = 0.01;
	to.budget_s = fmax(1.0, 1.5 * (to.min_repeats + to.max_warmup) * s);
	return to;
}

void bench_time_call(ts_ctx *ctx, int (*fn)(void *), void *arg, const bench_opts *o,
		     ts_timing *tm)
{
	uint64_t t0 = ts_now_ns();
	ts_time_opts to = bench_time_opts(o->repeat, fn(arg) ? 1 : ts_ms_since(t0) / 1e3, 3);
	if (ts_time_run_stable(ctx, fn, arg, &to, tm) != TS_OK)
		tm->median = NAN;
}

int bench_problem_rows(const bench_opts *o, bench_row_fn row, void *arg)
{
	char *warnings = NULL;
	size_t len = 0;
	FILE *warn = open_memstream(&warnings, &len);
	int failed = 0;
	for (int i = 0; i < o->nproblems; i++)
		failed += row(&o->problems[i], o, arg, warn ? warn : stdout) != 0;
	if (warn && fclose(warn) == 0 && len)
		printf("%s(!: timings flagged, see the warnings)\n", warnings);
	free(warnings);
	return failed;
}

static void put_timing(const ts_timing *tm, bench_result *res)
{
	res->median_ms = tm->median * 1e3;
	res->min_ms = tm->min * 1e3;
	res->mean_ms = tm->mean * 1e3;
	res->stddev_ms = tm->stddev * 1e3;
	res->samples = tm->samples;
	res->p10_ms = tm->p10 * 1e3;
	res->p90_ms = tm->p90 * 1e3;
	res->warmups = tm->warmups;
	res->flags = tm->flags;
	if (tm->flags)
		ts_timing_verdict(tm, res->verdict, sizeof res->verdict);
}

/* One CUDA event pair per call, so no grouping; the repeat count is
 * chosen as for the CPU. */
static int time_gpu_kernel(ts_ctx *ctx, bench_kernel *k, const bench_opts *o, double t,
			   bench_result *res)
{
	int repeat = o->repeat;
	if (repeat == 0) {
		double want = ceil(0.2 / fmax(t, 1e-9));
		repeat = want < 5 ? 5 : want > 10000 ? 10000 : (int)want;
	}
	ts_timing tm;
	if (bench_gpu_time(ctx, k, k->nsets, repeat, o->flush_l2, &tm))
		return -1;
	put_timing(&tm, res);
	res->flush_l2 = o->flush_l2;
	return 0;
}

static int time_kernel(ts_ctx *ctx, bench_kernel *k, const bench_opts *o, bench_result *res)
{
	rotor r = {.k = k};
	double t = estimate_call(&r);
	if (t < 0)
		return -1;
	if (k->enqueue)
		return time_gpu_kernel(ctx, k, o, t, res);
	int number = t < 20e-6 ? (int)ceil(20e-6 / fmax(t, 1e-9)) : 1;
	ts_time_opts to = bench_time_opts(o->repeat, t * number, t > 0.1 ? 0 : k->nsets);
	to.number = number;
	ts_timing tm;
	if (ts_time_run_stable(ctx, rotor_call, &r, &to, &tm) != TS_OK)
		return -1;
	put_timing(&tm, res);
	return 0;
}

static double peak_for(const bench_peak *pk, int threads)
{
	return threads <= 1 ? pk->gflops_1 : pk->gflops_all;
}

/* Checks and times one kernel into res. */
static void measure(ts_ctx *ctx, bench_kernel *k, const problem_data *d, const bench_opts *o,
		    const bench_peak *pk, bench_result *res)
{
	res->threads = k->threads;
	res->compile_ms = k->compile_ms;
	if (run_once(k)) {
		res->status = BENCH_ROW_FAILED;
		snprintf(res->note, sizeof res->note, "the kernel failed to run");
		return;
	}
	res->max_rel_err = bench_rel_err(k->sets[0].out->data, d->ref, d->out_numel);
	if (!(res->max_rel_err <= BENCH_RTOL)) {
		res->status = BENCH_ROW_FAILED;
		snprintf(res->note, sizeof res->note, "wrong result: max rel err %.3g vs %s",
			 res->max_rel_err, d->ref_impl);
		return;
	}
	if (time_kernel(ctx, k, o, res)) {
		res->status = BENCH_ROW_FAILED;
		snprintf(res->note, sizeof res->note, "timing failed: %s", ts_last_error(ctx));
		ts_clear_error(ctx);
		return;
	}
	res->gflops = bench_flops(k->p) / (res->median_ms * 1e6);
	/* the measured peak is the CPU's; there is none for the GPU */
	if (o->target == BENCH_CPU)
		res->pct_peak = 100.0 * res->gflops / peak_for(pk, k->threads);
}

/* Whether impl runs by default on the target (no --impl given); on the
 * GPU each library runs the operator it has (cuBLAS GEMM, cuDNN conv2d). */
static bool default_impl(bench_impl i, bench_target t, bench_op op)
{
	bool gpu = i == BENCH_IMPL_CUBLAS || i == BENCH_IMPL_CUDNN;
	if (t != BENCH_CUDA)
		return !gpu;
	bench_impl lib = op == BENCH_GEMM ? BENCH_IMPL_CUBLAS : BENCH_IMPL_CUDNN;
	return i == BENCH_IMPL_TESSERA || i == lib;
}

static bench_result new_result(const bench_problem *p, bench_impl impl, const bench_opts *o)
{
	return (bench_result){.p = p, .impl = impl, .threads = o->threads, .target = o->target,
			      .median_ms = NAN, .min_ms = NAN, .mean_ms = NAN, .stddev_ms = NAN,
			      .gflops = NAN, .compile_ms = -1, .pct_peak = NAN,
			      .max_rel_err = NAN, .status = BENCH_ROW_OK, .p10_ms = NAN,
			      .p90_ms = NAN};
}

/* One implementation on one problem; returns 1 if a row was produced. */
static int run_impl(ts_ctx *ctx, bench_impl impl, const bench_problem *p, const bench_opts *o,
		    problem_data *d, const bench_peak *pk, bench_result *res)
{
	if (o->impls ? !bench_impl_selected(o, impl) : !default_impl(impl, o->target, p->op))
		return 0;
	*res = new_result(p, impl, o);
	bench_kernel k;
	int rc = make_bound(impl, p, o, d, &k, res->note, sizeof res->note);
	if (rc == BENCH_SKIP) {
		res->status = BENCH_ROW_SKIPPED;
		return 1;
	}
	if (rc != BENCH_OK) {
		res->status = BENCH_ROW_FAILED;
		return 1;
	}
	measure(ctx, &k, d, o, pk, res);
	k.free(&k);
	quiesce(impl);
	return 1;
}

static int run_problem(ts_ctx *ctx, const bench_problem *p, const bench_opts *o,
		       const bench_peak *pk, bench_result *res, int cap)
{
	problem_data d = {0};
	int n = 0;
	if (alloc_data(p, &d) || compute_reference(p, o, &d)) {
		res[n] = new_result(p, BENCH_IMPL_NAIVE, o);
		res[n].status = BENCH_ROW_FAILED;
		snprintf(res[n].note, sizeof res[n].note, "out of memory or no reference");
		free_data(&d);
		return 1;
	}
	for (int i = 0; i < BENCH_NIMPL && n < cap; i++) {
		if (!run_impl(ctx, (bench_impl)i, p, o, &d, pk, &res[n]))
			continue;
		fprintf(stderr, "  %-26s %-9s %s\n", p->name, bench_impl_names[i],
			res[n].status == BENCH_ROW_OK ? "ok" : res[n].note);
		n++;
	}
	free_data(&d);
	return n;
}

int bench_run_all(const bench_opts *o, const bench_peak *pk, bench_result *res, int cap)
{
	ts_ctx *ctx = ts_ctx_new();
	if (!ctx)
		return 0;
	int n = 0;
	for (int i = 0; i < o->nproblems && n < cap; i++)
		n += run_problem(ctx, &o->problems[i], o, pk, res + n, cap - n);
	ts_ctx_free(ctx);
	return n;
}
