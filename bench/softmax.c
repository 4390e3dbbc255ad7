/*
 * softmax.c - `tessera-bench softmax`: softmax over rows, the library's CPU
 * schedule (ts_schedule_softmax_cpu) against the same graph unscheduled,
 * the generic default schedule (ts_schedule_default_cpu) and naive C, in
 * the same run on the same buffers.
 *
 * Shapes are BERT-base's attention rows (12 heads x 128 queries, 128 keys),
 * 1000 x 1000 and 64 x 4096.  Every result is checked against naive C
 * (max |err| / max |ref| <= 1e-3) before it is timed.  Timing follows the
 * runner's protocol: ts_time_run_stable with bench_time_opts (each sample
 * enough calls for >= 20 us), the median reported, and the ratios taken
 * between medians of the same run, so a busy shared machine shifts every
 * column alike; a flagged time and its ratios are marked '!' and
 * explained under the table.  One buffer set: each shape fits in L2 or L3,
 * as a softmax after the attention GEMM does.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "build.h"
#include "lower.h"
#include "op_schedules.h"
#include "ops.h"
#include "threadpool.h"

enum { SM_UNSCHEDULED, SM_DEFAULT, SM_GENERIC, SM_NAIVE, SM_NIMPL };
static const char *const sm_names[SM_NIMPL] = {"unscheduled", "softmax_cpu", "default_cpu",
					       "naive C"};

typedef struct sm_shape { const char *name; int64_t rows, cols; } sm_shape;
static const sm_shape sm_shapes[] = {
	{"bert.attn", 12 * 128, 128}, {"sq1000", 1000, 1000}, {"rows64", 64, 4096}};

typedef struct sm_call {
	ts_module *mod; /* NULL: naive C */
	ts_array *x, *y;
} sm_call;

static int sm_run(void *arg)
{
	sm_call *c = arg;
	if (!c->mod) {
		bench_naive_softmax(c->x->shape[0], c->x->shape[1], c->x->data, c->y->data);
		return 0;
	}
	return ts_module_run(c->mod, 2, (ts_array *[]){c->x, c->y}) == TS_OK ? 0 : -1;
}

/* Lowers and builds softmax of X scheduled as `impl`; NULL with the error
 * in ctx. */
static ts_module *sm_build(ts_ctx *ctx, ts_tensor *X, int impl)
{
	ts_tensor *Y = ts_op_softmax(ctx, X);
	ts_schedule *s = Y ? ts_create_schedule(ctx, 1, &Y) : NULL;
	if (!s)
		return NULL;
	int lanes = ts_cpu_vector_lanes();
	ts_status st = impl == SM_DEFAULT  ? ts_schedule_softmax_cpu(s, Y, lanes)
		       : impl == SM_GENERIC ? ts_schedule_default_cpu(s, lanes)
					    : TS_OK;
	ts_func *f = st == TS_OK ? ts_lower(s, "softmax", 2, (ts_tensor *[]){X, Y}) : NULL;
	return f ? ts_build(ctx, f, "llvm") : NULL;
}

/* Times c into *t (seconds per call); a NaN median after printing why. */
static void sm_time(ts_ctx *ctx, sm_call *c, const bench_opts *o, ts_timing *t)
{
	uint64_t t0 = ts_now_ns();
	memset(t, 0, sizeof *t);
	t->median = NAN;
	if (sm_run(c))
		return;
	double one = (double)(ts_now_ns() - t0) * 1e-9;
	int number = one >= 20e-6 ? 1 : (int)(20e-6 / (one > 1e-9 ? one : 1e-9)) + 1;
	ts_time_opts to = bench_time_opts(o->repeat, one * number, 3);
	to.number = number;
	if (ts_time_run_stable(ctx, sm_run, c, &to, t) != TS_OK) {
		fprintf(stderr, "softmax: %s\n", ts_last_error(ctx));
		t->median = NAN;
	}
}

/* Times every implementation on one shape into tm[]; -1 when one failed
 * or gave a wrong result. */
static int sm_shape_run(const sm_shape *sh, const bench_opts *o, ts_timing tm[SM_NIMPL])
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(sh->rows, sh->cols), ts_float32);
	ts_array *x = ts_array_for(ctx, X), *ref = ts_array_for(ctx, X), *y = ts_array_for(ctx, X);
	int rc = x && ref && y ? 0 : -1;
	int64_t n = sh->rows * sh->cols;
	srand(7);
	for (int64_t i = 0; !rc && i < n; i++) /* logits of a few units, never all equal */
		((float *)x->data)[i] = 8.0f * ((float)rand() / (float)RAND_MAX - 0.5f);
	if (!rc)
		bench_naive_softmax(sh->rows, sh->cols, x->data, ref->data);
	for (int impl = 0; impl < SM_NIMPL && !rc; impl++) {
		sm_call c = {impl == SM_NAIVE ? NULL : sm_build(ctx, X, impl), x, y};
		if (impl != SM_NAIVE && !c.mod) {
			fprintf(stderr, "softmax %s: %s: %s\n", sh->name, sm_names[impl], ts_last_error(ctx));
			rc = -1;
			break;
		}
		memset(y->data, 0, (size_t)n * sizeof(float));
		double err = sm_run(&c) ? INFINITY : bench_rel_err(y->data, ref->data, n);
		tm[impl].median = NAN;
		if (err <= 1e-3)
			sm_time(ctx, &c, o, &tm[impl]);
		if (!(err <= 1e-3) || isnan(tm[impl].median)) {
			fprintf(stderr, "softmax %s: %s FAILED (relative error %.3g)\n", sh->name,
				sm_names[impl], err);
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

/* Speedups of softmax_cpu against the other three, in the header's
 * order; '!' where either time is flagged. */
static void sm_print_row(const sm_shape *sh, const char *dims, const ts_timing tm[SM_NIMPL],
			 FILE *warn)
{
	static const int vs[3] = {SM_UNSCHEDULED, SM_GENERIC, SM_NAIVE};
	static const int width[3] = {33, 10, 6};
	printf("%-10s %-11s", sh->name, dims);
	for (int k = 0; k < SM_NIMPL; k++)
		bench_print_marked(stdout, 11, "%*.1f", tm[k].median * 1e6, tm[k].flags != 0);
	printf("  ");
	for (int j = 0; j < 3; j++)
		bench_print_marked(stdout, width[j], "%*.2fx",
				   tm[vs[j]].median / tm[SM_DEFAULT].median,
				   tm[vs[j]].flags || tm[SM_DEFAULT].flags);
	printf("\n");
	for (int k = 0; k < SM_NIMPL; k++)
		bench_warn_timing(warn, sm_names[k], "softmax", sh->name, &tm[k]);
}

int bench_softmax(const bench_opts *o)
{
	ts_set_num_threads(o->threads);
	printf("softmax over rows, %d thread%s for tessera's parallel loops (naive C and the\n"
	       "unscheduled function run on one); median us per call, speedup = unscheduled / row\n\n",
	       o->threads, o->threads > 1 ? "s" : "");
	printf("%-10s %-11s", "shape", "rows x cols");
	for (int i = 0; i < SM_NIMPL; i++)
		printf(" %12s", sm_names[i]);
	printf("   softmax_cpu speedup vs: unscheduled  default_cpu  naive C\n");
	char *warnings = NULL;
	size_t len = 0;
	FILE *warn = open_memstream(&warnings, &len);
	int failed = 0;
	for (size_t i = 0; i < TS_COUNT_OF(sm_shapes); i++) {
		const sm_shape *sh = &sm_shapes[i];
		ts_timing tm[SM_NIMPL];
		char dims[32];
		snprintf(dims, sizeof dims, "%lldx%lld", (long long)sh->rows, (long long)sh->cols);
		if (sm_shape_run(sh, o, tm)) {
			failed++;
			continue;
		}
		sm_print_row(sh, dims, tm, warn ? warn : stdout);
	}
	if (warn && fclose(warn) == 0 && len)
		printf("%s(!: timings flagged, see the warnings)\n", warnings);
	free(warnings);
	if (failed)
		fprintf(stderr, "tessera-bench: %d softmax shape%s FAILED\n", failed, failed > 1 ? "s" : "");
	return failed ? BENCH_EXIT_FAILED : BENCH_EXIT_OK;
}
