/*
 * symbolic.c - `tessera-bench symbolic`: a GEMM compiled once over size
 * variables (ts_size_var m, n, k up to the largest problem's extents) runs
 * on every problem, against its specialized twin (ts_lower_specialize with
 * that problem's extents, the same schedule compiled with constants).  Both
 * use ts_schedule_matmul_cpu on ts_op_matmul (packing B needs constant
 * extents).  Both results are checked against OpenBLAS before anything is
 * timed; the row gives each median time, sym/spec (the symbolic kernel's
 * time over the twin's: 1.00 is no cost, above 1 the price of not knowing
 * the extents) and the twin's compile time, after one line with the
 * symbolic kernel's single compile time.
 */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "bench.h"
#include "build.h"
#include "lower.h"
#include "op_schedules.h"
#include "ops.h"
#include "threadpool.h"

enum { IN_A, IN_B, OUT_SYM, OUT_SPEC, OUT_BLAS, NARR };

/* The symbolic GEMM and what builds its twins. */
typedef struct sym_gemm {
	ts_ctx *ctx;
	int64_t size[3]; /* m, n, k handles */
	ts_tensor *args[3];
	ts_schedule *s;
	ts_module *m;
	double compile_ms;
} sym_gemm;

typedef struct sym_run {
	const sym_gemm *g;
	const bench_gemm *p;
	ts_module *twin;
	ts_array *arr[NARR];
} sym_run;

static int build_symbolic(sym_gemm *g, const bench_opts *o)
{
	int64_t max[3] = {1, 1, 1};
	for (int i = 0; i < o->nproblems; i++) {
		const bench_gemm *p = &o->problems[i].g;
		int64_t e[3] = {p->M, p->N, p->K};
		for (int d = 0; d < 3; d++)
			max[d] = e[d] > max[d] ? e[d] : max[d];
	}
	ts_ctx *ctx = g->ctx;
	static const char *const names[3] = {"m", "n", "k"};
	for (int d = 0; d < 3; d++)
		g->size[d] = ts_size_var(ctx, names[d], max[d]);
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(g->size[0], g->size[2]), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(g->size[2], g->size[1]), ts_float32);
	ts_tensor *C = ts_op_matmul(ctx, A, B, false, false);
	g->s = C ? ts_create_schedule(ctx, 1, &C) : NULL;
	if (!g->s || ts_schedule_matmul_cpu(g->s, C, NULL) != TS_OK)
		return -1;
	g->args[0] = A, g->args[1] = B, g->args[2] = C;
	uint64_t t0 = ts_now_ns();
	ts_func *f = ts_lower(g->s, "gemm_sym", 3, g->args);
	g->m = f ? ts_build(ctx, f, "llvm") : NULL;
	g->compile_ms = ts_ms_since(t0);
	return g->m ? 0 : -1;
}

static ts_module *build_twin(const sym_gemm *g, const bench_gemm *p, double *ms)
{
	uint64_t t0 = ts_now_ns();
	int64_t v[3] = {p->M, p->N, p->K};
	ts_func *f = ts_lower_specialize(g->s, "gemm_spec", 3, g->args, 3, g->size, v);
	ts_module *m = f ? ts_build(g->ctx, f, "llvm") : NULL;
	*ms = ts_ms_since(t0);
	return m;
}

static int run_sym(void *arg)
{
	sym_run *r = arg;
	return ts_module_run(r->g->m, 3, (ts_array *[]){r->arr[IN_A], r->arr[IN_B], r->arr[OUT_SYM]});
}

static int run_spec(void *arg)
{
	sym_run *r = arg;
	return ts_module_run(r->twin, 3, (ts_array *[]){r->arr[IN_A], r->arr[IN_B], r->arr[OUT_SPEC]});
}

static int run_blas(const sym_run *r)
{
	const bench_gemm *p = r->p;
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)p->M, (int)p->N, (int)p->K, 1.0f,
		    r->arr[IN_A]->data, (int)p->K, r->arr[IN_B]->data, (int)p->N, 0.0f,
		    r->arr[OUT_BLAS]->data, (int)p->N);
	return 0;
}

static int alloc_arrays(sym_run *r)
{
	const bench_gemm *p = r->p;
	int64_t shapes[NARR][2] = {{p->M, p->K}, {p->K, p->N}, {p->M, p->N}, {p->M, p->N}, {p->M, p->N}};
	for (int i = 0; i < NARR; i++)
		if (!(r->arr[i] = ts_array_new(NULL, ts_float32, 2, shapes[i])))
			return -1;
	ts_array_fill_random(r->arr[IN_A], 3001, -1, 1);
	ts_array_fill_random(r->arr[IN_B], 3002, -1, 1);
	return 0;
}

static void free_run(sym_run *r)
{
	for (int i = 0; i < NARR; i++)
		ts_array_free(r->arr[i]);
	if (r->twin)
		ts_module_free(r->twin);
}

/* Builds the twin, checks both kernels, times them; prints the row. */
static int sym_problem(const bench_problem *p, const bench_opts *o, void *arg, FILE *warn)
{
	const sym_gemm *g = arg;
	sym_run r = {.g = g, .p = &p->g};
	const char *fail = NULL;
	double twin_ms = 0;
	if (alloc_arrays(&r))
		fail = "out of memory";
	else if (!(r.twin = build_twin(g, &p->g, &twin_ms)))
		fail = ts_last_error(g->ctx);
	else if (run_sym(&r) || run_spec(&r) || run_blas(&r))
		fail = ts_last_error(g->ctx);
	int64_t n = p->g.M * p->g.N;
	double es = fail ? NAN : bench_rel_err(r.arr[OUT_SYM]->data, r.arr[OUT_BLAS]->data, n);
	double et = fail ? NAN : bench_rel_err(r.arr[OUT_SPEC]->data, r.arr[OUT_BLAS]->data, n);
	if (!fail && !(es <= BENCH_RTOL && et <= BENCH_RTOL))
		fail = "wrong result against openblas";
	char shape[64];
	bench_shape_str(p, shape, sizeof shape);
	if (fail) {
		printf("%-14s %-14s FAILED: %s (rel err symbolic %.3g, specialized %.3g)\n", p->name,
		       shape, fail, es, et);
		free_run(&r);
		return -1;
	}
	ts_timing tm[2];
	bench_time_call(g->ctx, run_sym, &r, o, &tm[0]);
	bench_time_call(g->ctx, run_spec, &r, o, &tm[1]);
	printf("%-14s %-14s", p->name, shape);
	for (int i = 0; i < 2; i++)
		bench_print_marked(stdout, 11, "%*.3f", tm[i].median * 1e3, tm[i].flags != 0);
	bench_print_marked(stdout, 9, "%*.2fx", tm[0].median / tm[1].median, tm[0].flags || tm[1].flags);
	printf("%12.1f\n", twin_ms);
	bench_warn_timing(warn, "symbolic", "gemm", p->name, &tm[0]);
	bench_warn_timing(warn, "specialized", "gemm", p->name, &tm[1]);
	free_run(&r);
	nanosleep(&(struct timespec){.tv_nsec = 100 * 1000 * 1000}, NULL); /* OpenBLAS spin */
	return isnan(tm[0].median) || isnan(tm[1].median) ? -1 : 0;
}

int bench_symbolic(const bench_opts *o)
{
	ts_set_num_threads(o->threads);
	openblas_set_num_threads(o->threads);
	sym_gemm g = {.ctx = ts_ctx_new()};
	if (!g.ctx || build_symbolic(&g, o)) {
		printf("symbolic GEMM FAILED to build: %s\n", g.ctx ? ts_last_error(g.ctx) : "out of memory");
		ts_ctx_free(g.ctx);
		return 1;
	}
	printf("GEMM over size variables m, n, k (compiled once, %.1f ms) vs its specialized twin "
	       "per shape; %d thread%s, times in ms (median)\n",
	       g.compile_ms, o->threads, o->threads > 1 ? "s" : "");
	printf("%-14s %-14s %11s %11s %9s %12s\n", "problem", "MxNxK", "symbolic", "specialized",
	       "sym/spec", "twin ms");
	int failed = bench_problem_rows(o, sym_problem, &g);
	ts_module_free(g.m);
	ts_ctx_free(g.ctx);
	return failed;
}
