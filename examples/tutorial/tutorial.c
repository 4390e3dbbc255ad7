/*
 * tessera-tutorial gemm - the steps of TVM's "How to optimize GEMM on CPU",
 * then tessera's own, each printed as its schedule calls, the lowered loop
 * IR and the measured speed against OpenBLAS in the same run.
 *
 * Every step is checked against OpenBLAS before it is timed.  Serial steps
 * are compared with single-threaded OpenBLAS, parallel ones with OpenBLAS on
 * the same number of threads.
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "fair_blas.h"
#include "lower.h"
#include "op_schedules.h"
#include "tessera.h"

void openblas_set_num_threads(int n);
typedef struct gemm {
	ts_ctx *ctx;
	int64_t n;
	ts_tensor *A, *B, *C;
	ts_schedule *s;
	ts_stage *sc;
	bool parallel;
} gemm;

typedef struct step {
	const char *name;
	const char *why;
	const char *code;
	bool packed;
	void (*apply)(gemm *g);
} step;

#define AXIS(g, i) ts_axis_of((g)->sc, (i))
#define RAXIS(g, i) ts_reduce_axis_of((g)->sc, (i))

static void baseline(gemm *g) { (void)g; }

static void blocking(gemm *g)
{
	ts_axis *mo, *no, *mi, *ni, *ko, *ki;
	ts_tile(g->sc, AXIS(g, 0), AXIS(g, 1), 32, 32, &mo, &no, &mi, &ni);
	ts_split(g->sc, RAXIS(g, 0), 4, &ko, &ki);
	ts_reorder(g->sc, TS_AXES(mo, no, ko, ki, mi, ni));
}

static void vectorize(gemm *g)
{
	ts_axis *mo, *no, *mi, *ni, *ko, *ki;
	ts_tile(g->sc, AXIS(g, 0), AXIS(g, 1), 32, 32, &mo, &no, &mi, &ni);
	ts_split(g->sc, RAXIS(g, 0), 4, &ko, &ki);
	ts_reorder(g->sc, TS_AXES(mo, no, ko, ki, mi, ni));
	ts_vectorize(g->sc, ni);
}

static void permute(gemm *g)
{
	ts_axis *mo, *no, *mi, *ni, *ko, *ki;
	ts_tile(g->sc, AXIS(g, 0), AXIS(g, 1), 32, 32, &mo, &no, &mi, &ni);
	ts_split(g->sc, RAXIS(g, 0), 4, &ko, &ki);
	ts_reorder(g->sc, TS_AXES(mo, no, ko, mi, ki, ni));
	ts_vectorize(g->sc, ni);
}

static void pack_stage(gemm *g)
{
	ts_stage *sp = ts_stage_of(g->s, g->C->inputs[1]);
	ts_vectorize(sp, ts_axis_of(sp, 2));
	if (g->parallel)
		ts_parallel(sp, ts_axis_of(sp, 0));
}

static void packing(gemm *g)
{
	permute(g);
	pack_stage(g);
}

static void write_cache(gemm *g)
{
	ts_tensor *CC = ts_cache_write(g->s, g->C, TS_SCOPE_LOCAL);
	ts_axis *mo, *no, *mi, *ni, *ko, *ki;
	ts_tile(g->sc, AXIS(g, 0), AXIS(g, 1), 32, 32, &mo, &no, &mi, &ni);
	ts_stage *cc = ts_stage_of(g->s, CC);
	ts_compute_at(cc, g->sc, no);
	ts_axis *mc = ts_axis_of(cc, 0), *nc = ts_axis_of(cc, 1);
	ts_split(cc, ts_reduce_axis_of(cc, 0), 4, &ko, &ki);
	ts_reorder(cc, TS_AXES(ko, mc, ki, nc));
	ts_unroll(cc, ki);
	ts_vectorize(cc, nc);
	ts_vectorize(g->sc, ni);
	if (g->parallel)
		ts_parallel(g->sc, mo);
	pack_stage(g);
}

static void parallel(gemm *g)
{
	g->parallel = true;
	write_cache(g);
}

static void register_block(gemm *g)
{
	ts_matmul_cpu_params p = ts_matmul_cpu_default();
	p.parallel = g->parallel;
	ts_schedule_matmul_cpu(g->s, g->C, &p);
}

static void register_block_parallel(gemm *g)
{
	g->parallel = true;
	register_block(g);
}

static const step steps[] = {
	{"baseline", "The default schedule: the loop nest of the compute, i, j, then k.",
	 "/* no schedule calls */", false, baseline},
	{"blocking", "Tiles C into 32x32 blocks and splits k, so a block of C and of B stays in cache.",
	 "ts_tile(C, i, j, 32, 32, &mo, &no, &mi, &ni);\n"
	 "ts_split(C, k, 4, &ko, &ki);\n"
	 "ts_reorder(C, TS_AXES(mo, no, ko, ki, mi, ni));",
	 false, blocking},
	{"vectorize", "Vectorizes the innermost loop over 32 columns of C.",
	 "... blocking ...\nts_vectorize(C, ni);", false, vectorize},
	{"loop permutation", "Moves ki inside mi so the innermost loops walk rows of B and C contiguously.",
	 "ts_reorder(C, TS_AXES(mo, no, ko, mi, ki, ni));\nts_vectorize(C, ni);", false, permute},
	{"array packing", "Packs B into panels of 32 columns (Bp[n/32, k, n%32]) so the inner loop reads it sequentially.",
	 "C = ts_op_matmul_packed(ctx, A, B, 32);\n... loop permutation ...\n"
	 "ts_vectorize(Bp, z);",
	 true, packing},
	{"write cache", "Accumulates a 32x32 block in a local buffer computed at C's tile, then copies it out.",
	 "CC = ts_cache_write(s, C, TS_SCOPE_LOCAL);\n"
	 "ts_tile(C, i, j, 32, 32, &mo, &no, &mi, &ni);\n"
	 "ts_compute_at(CC, C, no);\n"
	 "ts_split(CC, k, 4, &ko, &ki);\n"
	 "ts_reorder(CC, TS_AXES(ko, mc, ki, nc));\n"
	 "ts_unroll(CC, ki); ts_vectorize(CC, nc); ts_vectorize(C, ni);",
	 true, write_cache},
	{"parallel", "Runs the outer row blocks on all cores.", "... write cache ...\nts_parallel(C, mo); ts_parallel(Bp, x);",
	 true, parallel},
	{"register blocking (tessera)",
	 "A 6x32 (AVX-512) block of C held in registers over the whole k, panels of B outside, "
	 "rows inside, so a panel stays in L2: ts_schedule_matmul_cpu.",
	 "p = ts_matmul_cpu_default(); p.parallel = false;\nts_schedule_matmul_cpu(s, C, &p);", true,
	 register_block},
	{"register blocking, parallel (tessera)", "The same, the fused panel x row loop on all cores.",
	 "p = ts_matmul_cpu_default();\nts_schedule_matmul_cpu(s, C, &p);", true, register_block_parallel},
};

static gemm make(int64_t n, bool packed)
{
	gemm g = {.ctx = ts_ctx_new(), .n = n};
	ts_ctx *ctx = g.ctx;
	g.A = ts_placeholder(ctx, "A", TS_SHAPE(n, n), ts_float32);
	g.B = ts_placeholder(ctx, "B", TS_SHAPE(n, n), ts_float32);
	g.C = packed ? ts_op_matmul_packed(ctx, g.A, g.B, 32) : ts_op_matmul(ctx, g.A, g.B, false, false);
	g.s = ts_create_schedule(ctx, 1, &g.C);
	g.sc = ts_stage_of(g.s, g.C);
	return g;
}

/* Prints at most max_lines of text, then how many were left out. */
static void print_head(const char *text, int max_lines)
{
	int line = 0;
	const char *p = text;
	for (; *p && line < max_lines; p++) {
		putchar(*p);
		line += *p == '\n';
	}
	int rest = 0;
	for (; *p; p++)
		rest += *p == '\n';
	if (rest)
		printf("  ... (%d more lines)\n", rest);
}

/* Largest difference relative to the largest magnitude of the reference. */
static double max_rel_err(const float *a, const float *b, int64_t n)
{
	double worst = 0, scale = 1e-30;
	for (int64_t i = 0; i < n; i++) {
		double d = fabs((double)a[i] - b[i]), m = fabs((double)b[i]);
		worst = d > worst ? d : worst;
		scale = m > scale ? m : scale;
	}
	return worst / scale;
}

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

static int run_step(const step *st, int idx, int64_t n, int lines, ts_array *const *arr,
		    ts_array *ref, int threads)
{
	gemm g = make(n, st->packed);
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
	printf("\n== step %d: %s ==\n%s\n\n```c\n%s\n```\n\nlowered loop IR:\n```\n", idx, st->name,
	       st->why, st->code);
	print_head(ir_stmt_str(g.ctx, f->body), lines);
	printf("```\n");
	int rc = 0;
	if (ts_module_run(m, 3, arr) != TS_OK ||
	    max_rel_err(arr[2]->data, ref->data, n * n) > 1e-3) {
		fprintf(stderr, "step %s: result differs from OpenBLAS: %s\n", st->name, ts_last_error(g.ctx));
		rc = 1;
	}
	bool par = g.parallel;
	ts_set_num_threads(par ? threads : 1);
	ts_timing t;
	double est = 2.0 * n * n * n / 1e9; /* seconds at 1 GFLOP/s */
	int repeat = est > 1 ? 1 : 5;
	if (rc == 0 && ts_module_time(m, 3, arr, 1, repeat, &t) == TS_OK) {
		double gf = 2.0 * n * n * n / (t.median * 1e9);
		double blas = openblas_gflops(arr[0], arr[1], ref, n, par ? threads : 1);
		ts_phase_times pt = ts_module_times(m);
		printf("%-38s %8.2f ms  %7.1f GFLOP/s  %5.2fx OpenBLAS (%d thread%s)  compile %.1f ms\n",
		       st->name, t.median * 1e3, gf, gf / blas, par ? threads : 1,
		       par && threads > 1 ? "s" : "", lower_ms + pt.total_ms);
	}
	ts_module_free(m);
	ts_ctx_free(g.ctx);
	return rc;
}

static int usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s gemm [--size N] [--threads T] [--lines L] [--step K]\n"
		"  Reproduces TVM's 'How to optimize GEMM on CPU' steps and tessera's own,\n"
		"  printing each schedule, its lowered loop IR (first L lines, default 30)\n"
		"  and its speed against OpenBLAS.  N defaults to 1024.\n",
		prog);
	return 2;
}

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "gemm") != 0)
		return usage(argv[0]);
	bench_fair_openblas(argv);
	int64_t n = 1024;
	int threads = ts_num_threads(), lines = 30, only = -1;
	for (int i = 2; i < argc; i++) {
		if (i + 1 >= argc)
			return usage(argv[0]);
		if (strcmp(argv[i], "--size") == 0)
			n = atoll(argv[++i]);
		else if (strcmp(argv[i], "--threads") == 0)
			threads = atoi(argv[++i]);
		else if (strcmp(argv[i], "--lines") == 0)
			lines = atoi(argv[++i]);
		else if (strcmp(argv[i], "--step") == 0)
			only = atoi(argv[++i]);
		else
			return usage(argv[0]);
	}
	if (n < 1 || threads < 1 || lines < 0)
		return usage(argv[0]);
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
	openblas_set_num_threads(threads);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f,
		    arr[0]->data, (int)n, arr[1]->data, (int)n, 0.0f, ref->data, (int)n);
	printf("tessera-tutorial gemm: C[%lld, %lld] = A x B, float32, %d threads available, OpenBLAS core %s\n",
	       (long long)n, (long long)n, threads, bench_openblas_core());
	int rc = 0;
	for (size_t i = 0; i < TS_COUNT_OF(steps); i++)
		if (only < 0 || only == (int)i)
			rc |= run_step(&steps[i], (int)i, n, lines, arr, ref, threads);
	for (int i = 0; i < 3; i++)
		ts_array_free(arr[i]);
	ts_array_free(ref);
	ts_ctx_free(ctx);
	ts_threadpool_shutdown();
	return rc;
}
