/*
 * reduce.c - `tessera-bench reduce`: float sums, the reduction unscheduled
 * (one serial accumulator per output) against rfactor + vectorize +
 * parallel, and naive C, in the same run on the same buffers.
 *
 * Shapes: a sum of 2^24 elements (A[1, 2^24] -> C[1]) and the row sums of
 * 4096 x 4096, 64 MiB each, more than the caches hold, so the scheduled
 * kernels are bounded by memory bandwidth; the table gives each one's GB/s
 * (bytes of A read per second) next to the ratios.  The schedule
 * (bench_schedule_reduce) splits the reduction by 16 and factors the
 * 16 lanes out with rfactor; with fewer rows than a few per thread it
 * factors again, over 64 chunks of the reduction that run in parallel.
 * Every result is checked against a float64 sum (max |err| / max |ref| <=
 * 1e-3) before it is timed; timing follows softmax.c: warm-up, `repeat`
 * samples of ts_time_run, the median, ratios between medians of one run.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "build.h"
#include "lower.h"
#include "te.h"
#include "threadpool.h"

#define RD_LANES 16  /* the factored axis: vectorized */
#define RD_CHUNKS 64 /* parallel chunks when rows are few */

enum { RD_UNSCHEDULED, RD_RFACTOR, RD_NAIVE, RD_NIMPL };
static const char *const rd_names[RD_NIMPL] = {"unscheduled", "rfactor", "naive C"};

typedef struct rd_shape { const char *name; int64_t rows, cols; } rd_shape;
static const rd_shape rd_shapes[] = {{"sum2^24", 1, 1 << 24}, {"rows4096", 4096, 4096}};

typedef struct rd_call {
	ts_module *mod; /* NULL: naive C */
	ts_array *x, *y;
} rd_call;

ts_tensor *bench_reduce_graph(ts_ctx *ctx, ts_tensor *A)
{
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, A->shape[1]);
	ts_expr *i = ts_var(ctx, "i");
	return ts_compute(ctx, "C", TS_SHAPE(A->shape[0]), TS_VARS(i),
			  TS_SUM(ctx, TS_READ(ctx, A, i, k->var), k));
}

/* Few rows: C.rf's reduction again factored into parallel chunks,
 * C.rf.rf[p, i, ki] = sum_q A[i, (p * Q + q) * 16 + ki]. */
static ts_status schedule_chunks(ts_schedule *s, ts_tensor *rf)
{
	ts_stage *sr = ts_stage_of(s, rf);
	ts_axis *po, *pi;
	if (!sr || ts_split_nparts(sr, ts_reduce_axis_of(sr, 0), RD_CHUNKS, &po, &pi) != TS_OK)
		return ts_last_status(s->ctx);
	ts_tensor *rf2 = ts_rfactor(s, rf, po, 0);
	ts_stage *s2 = rf2 ? ts_stage_of(s, rf2) : NULL;
	if (!s2)
		return ts_last_status(s->ctx);
	ts_axis *p = ts_axis_of(s2, 0), *i = ts_axis_of(s2, 1), *ki = ts_axis_of(s2, 2);
	ts_axis *q = ts_reduce_axis_of(s2, 0);
	ts_status st = ts_reorder(s2, TS_AXES(p, i, q, ki));
	if (st == TS_OK)
		st = ts_vectorize(s2, ki);
	return st == TS_OK ? ts_parallel(s2, p) : st;
}

ts_status bench_schedule_reduce(ts_schedule *s, ts_tensor *C, int threads)
{
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *ko, *ki;
	if (!sc || ts_split(sc, ts_reduce_axis_of(sc, 0), RD_LANES, &ko, &ki) != TS_OK)
		return ts_last_status(s->ctx);
	ts_tensor *rf = ts_rfactor(s, C, ki, 1);
	if (!rf)
		return ts_last_status(s->ctx);
	if (C->shape[0] < 4 * (int64_t)threads)
		return schedule_chunks(s, rf);
	ts_stage *sr = ts_stage_of(s, rf);
	ts_axis *i = ts_axis_of(sr, 0), *v = ts_axis_of(sr, 1), *o = ts_reduce_axis_of(sr, 0);
	ts_status st = ts_reorder(sr, TS_AXES(i, o, v));
	if (st == TS_OK)
		st = ts_vectorize(sr, v);
	if (st == TS_OK)
		st = ts_parallel(sr, i);
	return st == TS_OK ? ts_parallel(sc, ts_axis_of(sc, 0)) : st;
}

static int rd_run(void *arg)
{
	rd_call *c = arg;
	if (!c->mod) {
		bench_naive_row_sum(c->x->shape[0], c->x->shape[1], c->x->data, c->y->data);
		return 0;
	}
	return ts_module_run(c->mod, 2, (ts_array *[]){c->x, c->y}) == TS_OK ? 0 : -1;
}

static ts_module *rd_build(ts_ctx *ctx, ts_tensor *A, int impl, int threads)
{
	ts_tensor *C = bench_reduce_graph(ctx, A);
	ts_schedule *s = C ? ts_create_schedule(ctx, 1, &C) : NULL;
	if (!s)
		return NULL;
	ts_status st = impl == RD_RFACTOR ? bench_schedule_reduce(s, C, threads) : TS_OK;
	ts_func *f = st == TS_OK ? ts_lower(s, "reduce", 2, (ts_tensor *[]){A, C}) : NULL;
	return f ? ts_build(ctx, f, "llvm") : NULL;
}

/* Seconds per call (median), or NAN after printing why. */
static double rd_time(ts_ctx *ctx, rd_call *c, const bench_opts *o)
{
	uint64_t t0 = ts_now_ns();
	if (rd_run(c))
		return NAN;
	double one = (double)(ts_now_ns() - t0) * 1e-9;
	int number = one >= 20e-6 ? 1 : (int)(20e-6 / (one > 1e-9 ? one : 1e-9)) + 1;
	int repeat = o->repeat ? o->repeat : (int)fmin(fmax(0.5 / (one * number), 5), 1000);
	ts_timing t;
	if (ts_time_run(ctx, rd_run, c, 2, repeat, number, &t) != TS_OK) {
		fprintf(stderr, "reduce: %s\n", ts_last_error(ctx));
		return NAN;
	}
	return t.median;
}

/* The float64 row sums of x. */
static void rd_reference(const rd_shape *sh, const float *x, float *ref)
{
	for (int64_t r = 0; r < sh->rows; r++) {
		double acc = 0;
		for (int64_t k = 0; k < sh->cols; k++)
			acc += x[r * sh->cols + k];
		ref[r] = (float)acc;
	}
}

/* Times every implementation on one shape into sec[]; -1 when one failed
 * or gave a wrong result. */
static int rd_shape_run(const rd_shape *sh, const bench_opts *o, double sec[RD_NIMPL])
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(sh->rows, sh->cols), ts_float32);
	ts_tensor *C = ts_placeholder(ctx, "C", TS_SHAPE(sh->rows), ts_float32);
	ts_array *x = ts_array_for(ctx, A), *ref = ts_array_for(ctx, C), *y = ts_array_for(ctx, C);
	int rc = x && ref && y ? 0 : -1;
	srand(11);
	/* mean 0: a serial float sum of 2^24 terms stays within the tolerance */
	for (int64_t i = 0; !rc && i < sh->rows * sh->cols; i++)
		((float *)x->data)[i] = (float)rand() / (float)RAND_MAX - 0.5f;
	if (!rc)
		rd_reference(sh, x->data, ref->data);
	for (int impl = 0; impl < RD_NIMPL && !rc; impl++) {
		rd_call c = {impl == RD_NAIVE ? NULL : rd_build(ctx, A, impl, o->threads), x, y};
		if (impl != RD_NAIVE && !c.mod) {
			fprintf(stderr, "reduce %s: %s: %s\n", sh->name, rd_names[impl], ts_last_error(ctx));
			rc = -1;
			break;
		}
		memset(y->data, 0, (size_t)sh->rows * sizeof(float));
		double err = rd_run(&c) ? INFINITY : bench_rel_err(y->data, ref->data, sh->rows);
		sec[impl] = err <= 1e-3 ? rd_time(ctx, &c, o) : NAN;
		if (!(err <= 1e-3) || isnan(sec[impl])) {
			fprintf(stderr, "reduce %s: %s FAILED (relative error %.3g)\n", sh->name,
				rd_names[impl], err);
			rc = -1;
		}
		if (c.mod)
			ts_module_free(c.mod);
	}
	ts_array_free(x);
	ts_array_free(ref);
	ts_array_free(y);
	ts_ctx_free(ctx);
	return rc;
}

int bench_reduce(const bench_opts *o)
{
	ts_set_num_threads(o->threads);
	printf("float sums, %d thread%s for tessera's parallel loops (naive C and the\n"
	       "unscheduled function run on one); median us per call, GB/s of A read,\n"
	       "speedup = other / rfactor\n\n",
	       o->threads, o->threads > 1 ? "s" : "");
	printf("%-9s %-11s", "shape", "rows x cols");
	for (int i = 0; i < RD_NIMPL; i++)
		printf(" %12s", rd_names[i]);
	printf(" %9s   rfactor speedup vs: unscheduled  naive C\n", "GB/s");
	int failed = 0;
	for (size_t i = 0; i < TS_COUNT_OF(rd_shapes); i++) {
		const rd_shape *sh = &rd_shapes[i];
		double sec[RD_NIMPL];
		char dims[32];
		snprintf(dims, sizeof dims, "%lldx%lld", (long long)sh->rows, (long long)sh->cols);
		if (rd_shape_run(sh, o, sec)) {
			failed++;
			continue;
		}
		printf("%-9s %-11s", sh->name, dims);
		for (int k = 0; k < RD_NIMPL; k++)
			printf(" %12.1f", sec[k] * 1e6);
		double bytes = (double)sh->rows * (double)sh->cols * sizeof(float);
		printf(" %9.2f   %31.2fx %7.2fx\n", bytes / sec[RD_RFACTOR] * 1e-9,
		       sec[RD_UNSCHEDULED] / sec[RD_RFACTOR], sec[RD_NAIVE] / sec[RD_RFACTOR]);
	}
	if (failed)
		fprintf(stderr, "tessera-bench: %d reduce shape%s FAILED\n", failed, failed > 1 ? "s" : "");
	return failed ? BENCH_EXIT_FAILED : BENCH_EXIT_OK;
}
