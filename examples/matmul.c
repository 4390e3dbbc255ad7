/*
 * matmul.c - the README's worked example: declare C = A x B, print the
 * expression graph, evaluate it with the reference evaluator, schedule it,
 * compile it for the host CPU, check it and time it.
 *
 *   build/matmul [N]        (N defaults to 512)
 *
 * N must be a plain decimal integer from 1 to MAX_N, and the four N x N
 * float matrices must fit in the machine's memory; anything else is refused
 * with a message and exit status 2 before any work is done.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build.h"
#include "lower.h"
#include "tessera.h"

static int fail(ts_ctx *ctx)
{
	fprintf(stderr, "matmul: %s\n", ts_last_error(ctx));
	ts_ctx_free(ctx);
	return 1;
}

/* Large enough to keep every core busy for seconds, small enough that
 * the reference evaluator (one thread, no tiling) ends within minutes. */
#define MAX_N 8192

static int usage(FILE *f, int rc)
{
	fprintf(f, "usage: matmul [N]\n"
		   "  Builds, checks and times an N x N x N float32 GEMM (N defaults to 512).\n"
		   "  N is a decimal integer from 1 to %d whose four N x N matrices fit in\n"
		   "  memory; a bad N exits with status 2.\n",
		MAX_N);
	return rc;
}

/* Whether four n x n float matrices fit in physical memory (unknown
 * memory sizes are taken to fit). */
static bool fits_in_memory(int64_t n)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	return pages <= 0 || page <= 0 ||
	       4.0 * (double)n * (double)n * sizeof(float) < (double)pages * (double)page;
}

/* Parses argv into *n; prints why and returns 2 on a bad command line,
 * 0 for --help (after printing it), -1 to go on. */
static int parse_args(int argc, char **argv, int64_t *n)
{
	*n = 512;
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))
		return usage(stdout, 0);
	if (argc > 1 && argv[1][0] == '-' && argv[1][1] && !(argv[1][1] >= '0' && argv[1][1] <= '9'))
		return fprintf(stderr, "matmul: unknown option '%s'\n", argv[1]), usage(stderr, 2);
	if (argc > 2)
		return fprintf(stderr, "matmul: unexpected argument '%s'\n", argv[2]), usage(stderr, 2);
	if (argc < 2)
		return -1;
	const char *s = argv[1];
	char *end;
	errno = 0;
	long long v = *s >= '0' && *s <= '9' ? strtoll(s, &end, 10) : 0;
	if (!(*s >= '0' && *s <= '9') || errno || *end || v < 1 || v > MAX_N)
		return fprintf(stderr, "matmul: N must be an integer from 1 to %d, got '%s'\n", MAX_N, s), 2;
	if (!fits_in_memory(v))
		return fprintf(stderr, "matmul: N = %lld needs %.1f GiB for its four matrices, more "
				       "than this machine's memory\n", v, 16.0 * v * v / (1 << 30)), 2;
	*n = v;
	return -1;
}

int main(int argc, char **argv)
{
	int64_t n;
	int rc = parse_args(argc, argv, &n);
	if (rc >= 0)
		return rc;
	ts_ctx *ctx = ts_ctx_new();

	/* 1. what to compute */
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(n, n), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(n, n), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, n);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(n, n), TS_VARS(i, j),
				  TS_SUM(ctx, ts_mul(ctx, TS_READ(ctx, A, i, k->var),
						     TS_READ(ctx, B, k->var, j)), k));
	if (!C)
		return fail(ctx);
	ts_print_graph(stdout, 1, &C);

	/* 2. ground truth from the reference evaluator */
	ts_array *a = ts_array_for(ctx, A), *b = ts_array_for(ctx, B);
	ts_array *c = ts_array_for(ctx, C), *ref = ts_array_for(ctx, C);
	if (!a || !b || !c || !ref)
		return fail(ctx);
	ts_array_fill_random(a, 1, -1, 1);
	ts_array_fill_random(b, 2, -1, 1);
	if (ts_eval(ctx, 3, (ts_tensor *[]){A, B, C}, (void *[]){a->data, b->data, ref->data}))
		return fail(ctx);
	printf("reference C[0, 0] = %.6f\n", ((float *)ref->data)[0]);

	/* 3. how to compute it: TVM's opt_gemm schedule */
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_tensor *CC = ts_cache_write(s, C, TS_SCOPE_LOCAL);
	ts_stage *sc = ts_stage_of(s, C), *scc = ts_stage_of(s, CC);
	ts_axis *mo, *no, *mi, *ni, *ko, *ki;
	ts_tile(sc, ts_axis_of(sc, 0), ts_axis_of(sc, 1), 32, 32, &mo, &no, &mi, &ni);
	ts_compute_at(scc, sc, no);
	ts_split(scc, ts_reduce_axis_of(scc, 0), 4, &ko, &ki);
	ts_reorder(scc, TS_AXES(ko, ts_axis_of(scc, 0), ki, ts_axis_of(scc, 1)));
	ts_unroll(scc, ki);
	ts_vectorize(scc, ts_axis_of(scc, 1));
	ts_vectorize(sc, ni);
	ts_parallel(sc, mo);
	if (ts_last_status(ctx) != TS_OK)
		return fail(ctx);

	/* 4. lower, compile for the host CPU, run, check, time */
	uint64_t t0 = ts_now_ns();
	ts_func *f = ts_lower(s, "matmul", 3, (ts_tensor *[]){A, B, C});
	ts_module *m = f ? ts_build(ctx, f, "llvm") : NULL;
	double compile_ms = ts_ms_since(t0);
	if (!m || ts_module_run(m, 3, (ts_array *[]){a, b, c}) != TS_OK)
		return fail(ctx);
	double err = 0;
	for (int64_t e = 0; e < n * n; e++)
		err = fmax(err, fabs(((float *)c->data)[e] - ((float *)ref->data)[e]));
	ts_timing t;
	if (ts_module_time(m, 3, (ts_array *[]){a, b, c}, 2, 10, &t) != TS_OK)
		return fail(ctx);
	printf("max |C - reference| = %.2e\n", err);
	printf("%lld^3 GEMM: %.3f ms median, %.1f GFLOP/s, compiled in %.1f ms (%s)\n", (long long)n,
	       t.median * 1e3, 2.0 * n * n * n / t.median / 1e9, compile_ms,
	       ts_module_target(m));
	ts_module_free(m);
	ts_array_free(a);
	ts_array_free(b);
	ts_array_free(c);
	ts_array_free(ref);
	ts_ctx_free(ctx);
	ts_threadpool_shutdown();
	return err < 1e-3 ? 0 : 1;
}
