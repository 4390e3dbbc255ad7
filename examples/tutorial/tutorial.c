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
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "fair_blas.h"
#include "gemm_steps.h"
#include "lower.h"
#include "op_schedules.h"
#include "tessera.h"

void openblas_set_num_threads(int n);
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

static int run_step(const gemm_step *st, int idx, int64_t n, int lines, ts_array *const *arr,
		    ts_array *ref, int threads)
{
	gemm g = gemm_make(n, st->packed);
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

/* Sizes above this take minutes per step and more memory than a laptop
 * has; cblas_sgemm also takes int dimensions. */
#define MAX_SIZE 8192
#define MAX_THREADS 1024

typedef struct tutorial_opts {
	int64_t n;
	int threads, lines, only; /* only: the one step to run, -1 for all */
} tutorial_opts;

static void print_steps(FILE *f)
{
	for (int i = 0; i < gemm_nsteps; i++)
		fprintf(f, "    %2d  %s\n", i, gemm_steps[i].name);
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s gemm [--size N] [--threads T] [--lines L] [--step K]\n"
		"  Reproduces TVM's 'How to optimize GEMM on CPU' steps and tessera's own,\n"
		"  printing each schedule, its lowered loop IR (first L lines, default 30)\n"
		"  and its speed against OpenBLAS.  N defaults to 1024.\n"
		"  N is 1 to %d, T 1 to %d, L 0 or more, K one of the steps:\n",
		prog, MAX_SIZE, MAX_THREADS);
	print_steps(f);
	fprintf(f, "  A bad command line exits with status 2.\n");
}

/* A strict decimal integer: an optional '-', digits, nothing else (an
 * overflow saturates, so the range checks refuse it).  Prints why not. */
static int parse_int(const char *flag, const char *v, long long *out)
{
	const char *d = v + (*v == '-');
	char *end = NULL;
	if (*d >= '0' && *d <= '9')
		*out = strtoll(v, &end, 10);
	if (!end || *end)
		return fprintf(stderr, "tessera-tutorial: %s: '%s' is not an integer\n", flag, v), -1;
	return 0;
}

static int int_flag(const char *flag, const char *v, long long lo, long long hi, long long *out)
{
	if (parse_int(flag, v, out))
		return -1;
	if (*out < lo || *out > hi)
		return fprintf(stderr, "tessera-tutorial: %s: %s is out of range (%lld to %lld)\n", flag,
			       v, lo, hi), -1;
	return 0;
}

static int step_flag(const char *v, int *only)
{
	long long x;
	if (parse_int("--step", v, &x))
		return -1;
	if (x < 0 || x >= gemm_nsteps) {
		fprintf(stderr, "tessera-tutorial: --step: %s is not a step; the steps are 0 to %d:\n",
			v, gemm_nsteps - 1);
		print_steps(stderr);
		return -1;
	}
	*only = (int)x;
	return 0;
}

/* Applies one "--flag value" pair. */
static int apply_flag(tutorial_opts *o, const char *flag, const char *v)
{
	long long x;
	if (!strcmp(flag, "--size"))
		return int_flag(flag, v, 1, MAX_SIZE, &x) ? -1 : (o->n = x, 0);
	if (!strcmp(flag, "--threads"))
		return int_flag(flag, v, 1, MAX_THREADS, &x) ? -1 : (o->threads = (int)x, 0);
	if (!strcmp(flag, "--lines"))
		return int_flag(flag, v, 0, INT_MAX, &x) ? -1 : (o->lines = (int)x, 0);
	if (!strcmp(flag, "--step"))
		return step_flag(v, &o->only);
	return fprintf(stderr, "tessera-tutorial: unknown option '%s' (see --help)\n", flag), -1;
}

static bool is_flag(const char *a)
{
	return !strcmp(a, "--size") || !strcmp(a, "--threads") || !strcmp(a, "--lines") ||
	       !strcmp(a, "--step");
}

/* Fills o from argv; returns -1 to go on, else the exit status (after
 * printing the help or what is wrong). */
static int parse_args(int argc, char **argv, tutorial_opts *o)
{
	*o = (tutorial_opts){1024, ts_num_threads(), 30, -1};
	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))
		return usage(stdout, argv[0]), 0;
	if (argc < 2)
		return usage(stderr, argv[0]), 2;
	if (strcmp(argv[1], "gemm") != 0)
		return fprintf(stderr, "tessera-tutorial: unknown tutorial '%s' (available: gemm)\n",
			       argv[1]), 2;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			return usage(stdout, argv[0]), 0;
		if (strncmp(a, "-", 1) != 0)
			return fprintf(stderr, "tessera-tutorial: unexpected argument '%s'\n", a), 2;
		if (is_flag(a) && i + 1 >= argc)
			return fprintf(stderr, "tessera-tutorial: %s needs a value\n", a), 2;
		if (apply_flag(o, a, is_flag(a) ? argv[++i] : NULL))
			return 2;
	}
	return -1;
}

int main(int argc, char **argv)
{
	tutorial_opts o;
	int status = parse_args(argc, argv, &o);
	if (status >= 0)
		return status;
	/* after parsing: it may restart the process, which would parse again */
	bench_fair_openblas(argv);
	int64_t n = o.n;
	int threads = o.threads, lines = o.lines, only = o.only;
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
	for (int i = 0; i < gemm_nsteps; i++)
		if (only < 0 || only == i)
			rc |= run_step(&gemm_steps[i], i, n, lines, arr, ref, threads);
	for (int i = 0; i < 3; i++)
		ts_array_free(arr[i]);
	ts_array_free(ref);
	ts_ctx_free(ctx);
	ts_threadpool_shutdown();
	return rc;
}
