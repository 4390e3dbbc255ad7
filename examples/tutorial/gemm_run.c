/*
 * gemm_run.c - tessera-tutorial gemm: the steps of TVM's "How to optimize
 * GEMM on CPU", then tessera's own (gemm_steps.c), each printed as its
 * schedule calls, the lowered loop IR and the measured speed against
 * OpenBLAS in the same run.
 *
 * Every step is checked against OpenBLAS before it is timed.  Serial steps
 * are compared with single-threaded OpenBLAS, parallel ones with OpenBLAS on
 * the same number of threads.  With --golden the register blocking steps
 * take a fixed 6x32 block instead of the host's (ts_matmul_cpu_default).
 */
#include <cblas.h>
#include <stdio.h>

#include "fair_blas.h"
#include "gemm_steps.h"
#include "tutorial.h"

void openblas_set_num_threads(int n);

static double openblas_gflops(ts_array *A, ts_array *B, ts_array *C, int64_t n, int threads)
{
	openblas_set_num_threads(threads);
	double best[5];
	for (int r = 0; r < 5; r++) {
		uint64_t t0 = ts_now_ns();
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f,
			    A->data, (int)n, B->data, (int)n, 0.0f, C->data, (int)n);
		best[r] = ts_ms_since(t0);
	}
	return 2.0 * n * n * n / (ts_median(best, 5) * 1e6);
}

static void time_step(const gemm_step *st, gemm *g, ts_module *m, ts_array *const *arr,
		      ts_array *ref, int threads, double lower_ms, tut_report *rep)
{
	int64_t n = g->n;
	bool par = g->parallel;
	ts_set_num_threads(par ? threads : 1);
	ts_timing t;
	double est = 2.0 * n * n * n / 1e9; /* seconds at 1 GFLOP/s */
	int repeat = est > 1 ? 1 : 5;
	if (ts_module_time(m, 3, arr, 1, repeat, &t) != TS_OK)
		return;
	double gf = 2.0 * n * n * n / (t.median * 1e9);
	double blas = openblas_gflops(arr[0], arr[1], ref, n, par ? threads : 1);
	ts_phase_times pt = ts_module_times(m);
	tut_report_step(rep, st->name, t.median, 2.0 * n * n * n, par ? threads : 1);
	printf("  %5.2fx OpenBLAS  compile %.1f ms\n", gf / blas, lower_ms + pt.total_ms);
}

static int run_step(const tut_opts *o, int idx, ts_array *const *arr, ts_array *ref,
		    tut_report *rep)
{
	const gemm_step *st = &gemm_steps[idx];
	int64_t n = o->size;
	gemm g = gemm_make(n, st->packed);
	if (o->golden)
		g.mp = gemm_golden_params();
	st->apply(&g);
	uint64_t t0 = ts_now_ns();
	ts_func *f = ts_lower(g.s, "gemm", 3, (ts_tensor *[]){g.A, g.B, g.C});
	double lower_ms = ts_ms_since(t0);
	ts_module *m = f ? ts_build(g.ctx, f, "llvm") : NULL;
	if (!m) {
		fprintf(stderr, "step %s: %s\n", st->name, ts_last_error(g.ctx));
		ts_ctx_free(g.ctx);
		return 1;
	}
	tut_print_step(idx, st->name, st->why, st->code);
	tut_print_ir(f, o->lines);
	int rc = 0;
	if (ts_module_run(m, 3, arr) != TS_OK ||
	    tut_max_rel_err(arr[2]->data, ref->data, n * n) > 1e-3) {
		fprintf(stderr, "step %s: result differs from OpenBLAS: %s\n", st->name, ts_last_error(g.ctx));
		rc = 1;
	}
	if (rc == 0 && !o->golden)
		time_step(st, &g, m, arr, ref, o->threads, lower_ms, rep);
	ts_module_free(m);
	ts_ctx_free(g.ctx);
	return rc;
}

static int run(const tut_opts *o, tut_report *rep)
{
	int64_t n = o->size;
	ts_ctx *ctx = ts_ctx_new();
	int64_t shape[2] = {n, n};
	ts_array *arr[3], *ref = ts_array_new(ctx, ts_float32, 2, shape);
	for (int i = 0; i < 3; i++)
		arr[i] = ts_array_new(ctx, ts_float32, 2, shape);
	if (!ref || !arr[0] || !arr[1] || !arr[2]) {
		fprintf(stderr, "tessera-tutorial: %s\n", ts_last_error(ctx));
		return 1;
	}
	ts_array_fill_random(arr[0], 1, -1, 1);
	ts_array_fill_random(arr[1], 2, -1, 1);
	openblas_set_num_threads(o->threads);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f,
		    arr[0]->data, (int)n, arr[1]->data, (int)n, 0.0f, ref->data, (int)n);
	printf("tessera-tutorial gemm: C[%lld, %lld] = A x B, float32", (long long)n, (long long)n);
	if (!o->golden)
		printf(", %d threads available, OpenBLAS core %s", o->threads, bench_openblas_core());
	printf("\n");
	rep->unit = "GFLOP/s";
	int rc = 0;
	for (int i = 0; i < gemm_nsteps; i++)
		if (o->only < 0 || o->only == i)
			rc |= run_step(o, i, arr, ref, rep);
	for (int i = 0; i < 3; i++)
		ts_array_free(arr[i]);
	ts_array_free(ref);
	ts_ctx_free(ctx);
	return rc;
}

static const char *step_name(int i)
{
	return gemm_steps[i].name;
}

const tutorial tut_gemm = {
	.name = "gemm",
	.about = "Reproduces TVM's 'How to optimize GEMM on CPU' steps and tessera's own,\n"
		 "  C[N, N] = A x B in float32, each step against OpenBLAS.  N defaults to 1024.",
	.default_size = 1024,
	.max_size = 8192, /* minutes per step beyond; cblas_sgemm takes int sizes */
	.nsteps = &gemm_nsteps,
	.step_name = step_name,
	.run = run,
};
