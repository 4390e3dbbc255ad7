/*
 * dense.c - `tessera-bench dense`: a dense layer Y = relu(A B + bias), the
 * way a network runs it, three ways on the same buffers in one run:
 *   fused     one tessera kernel, ts_schedule_dense_cpu: bias and relu are
 *             applied to the GEMM's register tile before its one store
 *   separate  the tessera GEMM kernel (ts_schedule_matmul_cpu), then a
 *             bias-add kernel and a relu kernel (ts_schedule_default_cpu),
 *             each a pass over the [M, N] output
 *   openblas  cblas_sgemm followed by a C loop for bias and relu
 * Both tessera results are checked against the OpenBLAS one (max |err| /
 * max |ref| <= 1e-3) before anything is timed; the table gives each time
 * (median of ts_time_run_stable samples, with the main table's options)
 * and the ratios separate / fused and openblas / fused (above 1: fused is
 * faster); a flagged time and its ratios are marked '!' and explained
 * under the table.  One buffer set: the
 * operands of BERT-base's GEMMs stay in L2/L3 between calls, as they do
 * between the layers of one forward pass at sequence length 128.
 */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "build.h"
#include "lower.h"
#include "op_schedules.h"
#include "ops.h"
#include "threadpool.h"

enum { IN_A, IN_B, IN_BIAS, OUT_FUSED, OUT_SEP, OUT_BLAS, TMP_C, TMP_T, NARR };

typedef struct dense_run {
	ts_ctx *ctx;
	const bench_gemm *g;
	ts_array *arr[NARR];
	ts_module *fused, *mm, *bias, *relu;
} dense_run;

/* Lowers and builds s's function over args; NULL with the error in ctx. */
static ts_module *build(ts_ctx *ctx, ts_schedule *s, const char *name, int n, ts_tensor **args)
{
	ts_func *f = s ? ts_lower(s, name, n, args) : NULL;
	return f ? ts_build(ctx, f, "llvm") : NULL;
}

static ts_module *build_fused(dense_run *r)
{
	ts_ctx *ctx = r->ctx;
	const bench_gemm *g = r->g;
	ts_matmul_cpu_params p = ts_matmul_cpu_default_for(g->N);
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(g->M, g->K), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(g->K, g->N), ts_float32);
	ts_tensor *bias = ts_placeholder(ctx, "bias", TS_SHAPE(g->N), ts_float32);
	ts_tensor *C = ts_matmul_cpu_packs(g->M) ? ts_op_matmul_packed(ctx, A, B, p.nr)
				  : ts_op_matmul(ctx, A, B, false, false);
	ts_tensor *Y = ts_op_relu(ctx, ts_op_bias_add(ctx, C, bias, 1));
	ts_schedule *s = Y ? ts_create_schedule(ctx, 1, &Y) : NULL;
	if (!s || ts_schedule_dense_cpu(s, Y, &p) != TS_OK)
		return NULL;
	return build(ctx, s, "dense_fused", 4, (ts_tensor *[]){A, B, bias, Y});
}

/* The three kernels of the unfused layer. */
static int build_separate(dense_run *r)
{
	ts_ctx *ctx = r->ctx;
	const bench_gemm *g = r->g;
	ts_matmul_cpu_params p = ts_matmul_cpu_default_for(g->N);
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(g->M, g->K), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(g->K, g->N), ts_float32);
	ts_tensor *C = ts_matmul_cpu_packs(g->M) ? ts_op_matmul_packed(ctx, A, B, p.nr)
				  : ts_op_matmul(ctx, A, B, false, false);
	ts_schedule *s = C ? ts_create_schedule(ctx, 1, &C) : NULL;
	if (!s || ts_schedule_matmul_cpu(s, C, &p) != TS_OK)
		return -1;
	r->mm = build(ctx, s, "gemm", 3, (ts_tensor *[]){A, B, C});
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(g->M, g->N), ts_float32);
	ts_tensor *bias = ts_placeholder(ctx, "bias", TS_SHAPE(g->N), ts_float32);
	ts_tensor *T = ts_op_bias_add(ctx, X, bias, 1), *Y = ts_op_relu(ctx, X);
	ts_schedule *sb = T ? ts_create_schedule(ctx, 1, &T) : NULL;
	ts_schedule *sr = Y ? ts_create_schedule(ctx, 1, &Y) : NULL;
	int lanes = ts_cpu_vector_lanes();
	if (!sb || !sr || ts_schedule_default_cpu(sb, lanes) || ts_schedule_default_cpu(sr, lanes))
		return -1;
	r->bias = build(ctx, sb, "bias_add", 3, (ts_tensor *[]){X, bias, T});
	r->relu = build(ctx, sr, "relu", 2, (ts_tensor *[]){X, Y});
	return r->mm && r->bias && r->relu ? 0 : -1;
}

static int run_fused(void *arg)
{
	dense_run *r = arg;
	ts_array **a = r->arr;
	return ts_module_run(r->fused, 4, (ts_array *[]){a[IN_A], a[IN_B], a[IN_BIAS], a[OUT_FUSED]});
}

static int run_separate(void *arg)
{
	dense_run *r = arg;
	ts_array **a = r->arr;
	if (ts_module_run(r->mm, 3, (ts_array *[]){a[IN_A], a[IN_B], a[TMP_C]}) ||
	    ts_module_run(r->bias, 3, (ts_array *[]){a[TMP_C], a[IN_BIAS], a[TMP_T]}))
		return -1;
	return ts_module_run(r->relu, 2, (ts_array *[]){a[TMP_T], a[OUT_SEP]});
}

static int run_blas(void *arg)
{
	dense_run *r = arg;
	const bench_gemm *g = r->g;
	float *Y = r->arr[OUT_BLAS]->data;
	const float *bias = r->arr[IN_BIAS]->data;
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)g->M, (int)g->N, (int)g->K,
		    1.0f, r->arr[IN_A]->data, (int)g->K, r->arr[IN_B]->data, (int)g->N, 0.0f, Y,
		    (int)g->N);
	for (int64_t i = 0; i < g->M; i++)
		for (int64_t j = 0; j < g->N; j++) {
			float v = Y[i * g->N + j] + bias[j];
			Y[i * g->N + j] = v > 0 ? v : 0;
		}
	return 0;
}

static int alloc_arrays(dense_run *r)
{
	const bench_gemm *g = r->g;
	int64_t shapes[NARR][2] = {{g->M, g->K}, {g->K, g->N}, {g->N, 1}, {g->M, g->N},
				   {g->M, g->N}, {g->M, g->N}, {g->M, g->N}, {g->M, g->N}};
	for (int i = 0; i < NARR; i++) {
		r->arr[i] = ts_array_new(NULL, ts_float32, i == IN_BIAS ? 1 : 2, shapes[i]);
		if (!r->arr[i])
			return -1;
	}
	for (int i = IN_A; i <= IN_BIAS; i++)
		ts_array_fill_random(r->arr[i], 2000 + (uint64_t)i, -1, 1);
	return 0;
}

static void free_run(dense_run *r)
{
	for (int i = 0; i < NARR; i++)
		ts_array_free(r->arr[i]);
	ts_module *m[] = {r->fused, r->mm, r->bias, r->relu};
	for (size_t i = 0; i < TS_COUNT_OF(m); i++)
		if (m[i])
			ts_module_free(m[i]);
	ts_ctx_free(r->ctx);
}

/* The row: times in ms, ratios to fused; '!' where a timing is flagged,
 * whose warning goes to `warn`. */
static void print_dense_row(const bench_problem *p, const char *shape, const ts_timing tm[3],
			    FILE *warn)
{
	static const char *const names[3] = {"fused", "separate", "openblas"};
	printf("%-18s %-14s", p->name, shape);
	for (int i = 0; i < 3; i++)
		bench_print_marked(stdout, 9, "%*.3f", tm[i].median * 1e3, tm[i].flags != 0);
	for (int i = 1; i < 3; i++)
		bench_print_marked(stdout, 8, "%*.2fx", tm[i].median / tm[0].median,
				   tm[i].flags || tm[0].flags);
	printf("\n");
	for (int i = 0; i < 3; i++)
		bench_warn_timing(warn, names[i], "dense", p->name, &tm[i]);
}

/* Builds, checks and times one shape; prints its row.  0, or -1. */
static int dense_problem(const bench_problem *p, const bench_opts *o, void *arg, FILE *warn)
{
	(void)arg;
	dense_run r = {.ctx = ts_ctx_new(), .g = &p->g};
	const char *fail = NULL;
	if (!r.ctx || alloc_arrays(&r))
		fail = "out of memory";
	else if (!(r.fused = build_fused(&r)) || build_separate(&r))
		fail = ts_last_error(r.ctx);
	else if (run_fused(&r) || run_separate(&r) || run_blas(&r))
		fail = "a kernel failed to run";
	int64_t n = p->g.M * p->g.N;
	double ef = fail ? NAN : bench_rel_err(r.arr[OUT_FUSED]->data, r.arr[OUT_BLAS]->data, n);
	double es = fail ? NAN : bench_rel_err(r.arr[OUT_SEP]->data, r.arr[OUT_BLAS]->data, n);
	if (!fail && !(ef <= BENCH_RTOL && es <= BENCH_RTOL))
		fail = "wrong result against openblas";
	char shape[64];
	bench_shape_str(p, shape, sizeof shape);
	if (fail) {
		printf("%-18s %-14s FAILED: %s (rel err fused %.3g, separate %.3g)\n", p->name, shape,
		       fail, ef, es);
		free_run(&r);
		return -1;
	}
	ts_timing tm[3];
	bench_time_call(r.ctx, run_fused, &r, o, &tm[0]);
	bench_time_call(r.ctx, run_separate, &r, o, &tm[1]);
	bench_time_call(r.ctx, run_blas, &r, o, &tm[2]);
	nanosleep(&(struct timespec){.tv_nsec = 250 * 1000 * 1000}, NULL); /* OpenBLAS spin */
	print_dense_row(p, shape, tm, warn);
	free_run(&r);
	return isnan(tm[0].median) || isnan(tm[1].median) || isnan(tm[2].median) ? -1 : 0;
}

int bench_dense(const bench_opts *o)
{
	ts_set_num_threads(o->threads);
	openblas_set_num_threads(o->threads);
	printf("dense layer Y = relu(A B + bias), %d thread%s; times in ms (median)\n", o->threads,
	       o->threads > 1 ? "s" : "");
	printf("%-18s %-14s %10s %10s %10s %10s %10s\n", "problem", "MxNxK", "fused", "separate",
	       "openblas", "sep/fused", "blas/fused");
	return bench_problem_rows(o, dense_problem, NULL);
}
