/*
 * test_limits.c - inputs at tessera's documented limits work end to end:
 * an expression exactly TS_MAX_EXPR_DEPTH deep prints, simplifies, lowers,
 * builds with LLVM, evaluates and runs (on the main stack and on a thread
 * pool worker's), and vectors of TS_MAX_VECTOR_LANES lanes are built.
 * What lies beyond the limits is refused in test_mustfail_limits.c.
 */
#include "testutil.h"

#include <string.h>

#include "arith.h"
#include "build.h"
#include "lower.h"

#define N 37

/* acc = ((0.25 * 0.5 + A[i]) * 0.5 + A[i]) ... + A[i], `depth` deep: the
 * chain runs through the left operands, so the reads (which lowering may
 * deepen with index arithmetic) stay shallow side branches. */
static ts_expr *deep_chain(ts_ctx *ctx, ts_tensor *A, ts_expr *i, int depth)
{
	ts_expr *acc = ts_float(ctx, 0.25);
	while (acc && acc->depth + 2 <= depth)
		acc = ts_add(ctx, ts_mul(ctx, acc, ts_float(ctx, 0.5)), TS_READ(ctx, A, i));
	if (acc && acc->depth < depth)
		acc = ts_add(ctx, acc, TS_READ(ctx, A, i));
	return acc;
}

typedef struct deep_case {
	ts_ctx *ctx;
	ts_tensor *A, *C;
	ts_func *f;
} deep_case;

static deep_case deep_build(int depth)
{
	deep_case d = {.ctx = ts_ctx_new()};
	ts_ctx *ctx = d.ctx;
	d.A = ts_placeholder(ctx, "A", TS_SHAPE(N), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_expr *body = deep_chain(ctx, d.A, i, depth);
	d.C = ts_compute(ctx, "C", TS_SHAPE(N), TS_VARS(i), body);
	return d;
}

/* Everything a user does with an expression, at the limit.  Returns a
 * message on failure instead of asserting, so that it can run on a pool
 * worker, where Check cannot report. */
static const char *deep_pipeline(deep_case *d)
{
	ts_ctx *ctx = d->ctx;
	if (!d->C || d->C->body->depth != TS_MAX_EXPR_DEPTH)
		return "building the chain";
	const char *text = ir_expr_str(ctx, d->C->body);
	if (!text || strlen(text) < 10 * TS_MAX_EXPR_DEPTH / 4)
		return "printing";
	if (!ir_simplify(ctx, d->C->body, 0, NULL))
		return "simplifying";
	ts_schedule *s = ts_create_schedule(ctx, 1, &d->C);
	d->f = ts_lower(s, "deep", 2, (ts_tensor *[]){d->A, d->C});
	if (!d->f || !ir_func_str(ctx, d->f))
		return "lowering";
	ts_module *m = ts_build(ctx, d->f, "llvm");
	if (!m)
		return "building";
	const char *c = ts_module_source(m, "c");
	ts_module_free(m);
	return c ? NULL : "emitting C";
}

START_TEST(test_depth_at_limit)
{
	deep_case d = deep_build(TS_MAX_EXPR_DEPTH);
	const char *failed = deep_pipeline(&d);
	ck_assert_msg(failed == NULL, "%s: %s", failed, ts_last_error(d.ctx));
	tu_check_func(d.ctx, d.f, 1e-4);
	ts_ctx_free(d.ctx);
}
END_TEST

typedef struct worker_run {
	const char *failed[2];
	char error[2][256];
} worker_run;

static void pipeline_chunk(int64_t begin, int64_t end, void *closure)
{
	worker_run *w = closure;
	for (int64_t c = begin; c < end; c++) {
		deep_case d = deep_build(TS_MAX_EXPR_DEPTH);
		w->failed[c] = deep_pipeline(&d);
		snprintf(w->error[c], sizeof(w->error[c]), "%s", ts_last_error(d.ctx));
		ts_ctx_free(d.ctx);
	}
}

/* Chunk 1 runs on a pool worker, whose stack is the one a user's parallel
 * compilation gets. */
START_TEST(test_depth_at_limit_on_worker)
{
	int old = ts_set_num_threads(2);
	worker_run w = {{"not run", "not run"}, {"", ""}};
	ts_parallel_for(2, pipeline_chunk, &w);
	ts_set_num_threads(old);
	for (int c = 0; c < 2; c++)
		ck_assert_msg(w.failed[c] == NULL, "chunk %d: %s: %s", c, w.failed[c], w.error[c]);
}
END_TEST

/* A sum of 100,000 terms built as a balanced tree is only 18 levels deep. */
static ts_expr *balanced_sum(ts_ctx *ctx, ts_tensor *A, ts_expr *i, int n)
{
	if (n == 1)
		return TS_READ(ctx, A, i);
	return ts_add(ctx, balanced_sum(ctx, A, i, n / 2), balanced_sum(ctx, A, i, n - n / 2));
}

START_TEST(test_long_balanced_sum)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(N), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_expr *sum = balanced_sum(ctx, A, i, 100000);
	tu_nonnull(ctx, sum);
	ck_assert_int_le(sum->depth, 20);
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(N), TS_VARS(i), sum);
	tu_nonnull(ctx, C);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_lanes_at_limit)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *r = ts_ramp(ctx, ts_var(ctx, "x"), 3, TS_MAX_VECTOR_LANES);
	tu_nonnull(ctx, r);
	ck_assert_int_eq(r->dtype.lanes, TS_MAX_VECTOR_LANES);
	tu_nonnull(ctx, ts_broadcast(ctx, ts_float(ctx, 1), TS_MAX_VECTOR_LANES));
	tu_nonnull(ctx, ts_ramp(ctx, ts_int(ctx, INT32_MAX - 63), 1, 64));
	ck_assert(ts_dtype_is_valid(ts_dtype_with_lanes(ts_float32, TS_MAX_VECTOR_LANES)));
	ts_ctx_free(ctx);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("limits");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_depth_at_limit);
	tcase_add_test(tc, test_depth_at_limit_on_worker);
	tcase_add_test(tc, test_long_balanced_sum);
	tcase_add_test(tc, test_lanes_at_limit);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
