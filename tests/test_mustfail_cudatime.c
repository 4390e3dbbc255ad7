/*
 * test_mustfail_cudatime.c - GPU timing (ts_cuda_time, ts_cuda_time_kernel,
 * ts_cuda_l2_bytes) on bad options and against failing driver calls, with
 * the stand-in libcuda of fake_cuda.h, so no GPU is needed.  Every failure
 * gives its status and a message naming the call, the repeat and what was
 * timed; *out is zeroed; and nothing leaks: the stand-in counts the events
 * and device buffers that are still alive.
 */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"

/* Asserts that nothing the timing made is still alive on the stand-in:
 * no event, and only the fixture's three arrays. */
static void assert_released(const fake_gpu *g)
{
	ck_assert_int_eq(fake_stat(g->lib, "fake_live_events"), 0);
	ck_assert_int_eq(fake_stat(g->lib, "fake_live_allocs"), 3);
}

static void assert_zeroed(const ts_timing *t)
{
	ck_assert(t->min == 0 && t->median == 0 && t->mean == 0 && t->max == 0);
	ck_assert(t->stddev == 0 && t->samples == 0);
}

/* Times vadd with `spec` in FAKE_CUDA_FAIL and asserts the failure. */
static void fails_with(fake_gpu *g, const char *spec, bool flush, const char *part)
{
	ts_timing t = {.median = 1};
	ts_cuda_time_opts o = {.warmup = 2, .repeats = 4, .flush_l2 = flush};
	setenv("FAKE_CUDA_FAIL", spec, 1);
	ts_status st = ts_cuda_time_kernel(g->ctx, &g->k, &g->launch, 3, g->d, &o, &t);
	unsetenv("FAKE_CUDA_FAIL");
	ck_assert_msg(st == TS_ERR_RUNTIME, "%s: status %d", spec, st);
	tu_assert_error(g->ctx, part);
	tu_assert_error(g->ctx, "failed: CUDA_ERROR_UNKNOWN (fake error)");
	ts_clear_error(g->ctx);
	assert_zeroed(&t);
	assert_released(g);
}

START_TEST(test_failing_event_calls)
{
	fake_gpu g;
	if (!fake_gpu_open(&g))
		return;
	fails_with(&g, "cuEventCreate:3", false, "cuda: cuEventCreate (event 2 of 8 for vadd)");
	fails_with(&g, "cuEventCreate:1", true, "cuda: cuEventCreate (event 0 of 8 for vadd)");
	fails_with(&g, "cuEventRecord:1", true, "cuda: cuEventRecord (start of repeat 0 of vadd)");
	fails_with(&g, "cuEventRecord:4", false, "cuda: cuEventRecord (end of repeat 1 of vadd)");
	fails_with(&g, "cuEventSynchronize:1", true, "cuda: cuEventSynchronize (running vadd)");
	fails_with(&g, "cuEventElapsedTime:2", true,
		   "cuda: cuEventElapsedTime (repeat 1 of vadd)");
	fails_with(&g, "cuMemAlloc:1", true,
		   "cuda: cuMemAlloc(8388608 bytes for the L2 flush buffer of vadd)");
	/* the handle still times after all that */
	ts_timing t;
	ts_cuda_time_opts o = {.warmup = 1, .repeats = 3, .flush_l2 = true};
	tu_ok(g.ctx, ts_cuda_time_kernel(g.ctx, &g.k, &g.launch, 3, g.d, &o, &t));
	ck_assert_int_eq(t.samples, 3);
	assert_released(&g);
	fake_gpu_close(&g);
}
END_TEST

/* Fails (returns 7) on call number `fail_at`, counting from 0. */
typedef struct counted {
	fake_gpu *g;
	int calls, fail_at;
} counted;

static int counted_work(void *p)
{
	counted *c = p;
	if (c->calls++ == c->fail_at)
		return 7;
	return ts_cuda_launch(c->g->ctx, &c->g->k, &c->g->launch, 3, c->g->d) == TS_OK ? 0 : 1;
}

START_TEST(test_failing_work)
{
	fake_gpu g;
	if (!fake_gpu_open(&g))
		return;
	ts_timing t;
	counted c = {.g = &g, .fail_at = 1};
	ts_cuda_time_opts o = {.warmup = 2, .repeats = 3, .flush_l2 = true};
	ck_assert_int_eq(ts_cuda_time(g.ctx, g.cuda, counted_work, &c, &o, &t), TS_ERR_RUNTIME);
	ck_assert_str_eq(ts_last_error(g.ctx), "cuda: time work: the work returned 7 in warm-up run 1");
	ts_clear_error(g.ctx);
	assert_zeroed(&t);
	c = (counted){.g = &g, .fail_at = 2 + 2};
	o.what = "gemm";
	ck_assert_int_eq(ts_cuda_time(g.ctx, g.cuda, counted_work, &c, &o, &t), TS_ERR_RUNTIME);
	ck_assert_str_eq(ts_last_error(g.ctx), "cuda: time gemm: the work returned 7 in repeat 2");
	ts_clear_error(g.ctx);
	assert_zeroed(&t);
	assert_released(&g);
	fake_gpu_close(&g);
}
END_TEST

START_TEST(test_bad_options)
{
	fake_gpu g;
	if (!fake_gpu_open(&g))
		return;
	ts_ctx *ctx = g.ctx;
	ts_timing t;
	ts_cuda_time_opts o = {.warmup = 0, .repeats = 0};
	ck_assert_int_eq(ts_cuda_time_kernel(ctx, &g.k, &g.launch, 3, g.d, &o, &t), TS_ERR_INVALID);
	tu_assert_error(ctx, "cuda: time vadd: need 0 <= warmup <= 100000 and 1 <= repeats <= 100000 (got 0, 0)");
	ts_clear_error(ctx);
	o = (ts_cuda_time_opts){.warmup = -1, .repeats = 3};
	ck_assert_int_eq(ts_cuda_time_kernel(ctx, &g.k, &g.launch, 3, g.d, &o, &t), TS_ERR_INVALID);
	tu_assert_error(ctx, "(got -1, 3)");
	ts_clear_error(ctx);
	o = (ts_cuda_time_opts){.repeats = 100001};
	ck_assert_int_eq(ts_cuda_time(ctx, g.cuda, counted_work, NULL, &o, &t), TS_ERR_INVALID);
	tu_assert_error(ctx, "cuda: time work: need 0 <= warmup <= 100000 and 1 <= repeats <= 100000");
	ts_clear_error(ctx);
	o = (ts_cuda_time_opts){.repeats = 1};
	ck_assert_int_eq(ts_cuda_time_kernel(ctx, &g.k, &g.launch, 3, g.d, NULL, &t), TS_ERR_INVALID);
	tu_assert_error(ctx, "cuda: time vadd: opts is NULL");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_cuda_time_kernel(ctx, &g.k, &g.launch, 3, g.d, &o, NULL), TS_ERR_INVALID);
	tu_assert_error(ctx, "cuda: time: out is NULL");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_cuda_time(ctx, g.cuda, NULL, NULL, &o, &t), TS_ERR_INVALID);
	tu_assert_error(ctx, "cuda: time: the work function is NULL");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_cuda_time(ctx, NULL, counted_work, NULL, &o, &t), TS_ERR_NO_DEVICE);
	tu_assert_error(ctx, "cuda: time: no device (ts_cuda_open failed)");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_cuda_time(NULL, g.cuda, counted_work, NULL, &o, &t), TS_ERR_INVALID);
	ck_assert_int_eq(ts_cuda_time_kernel(ctx, &g.k, &g.launch, 3, NULL, &o, &t), TS_ERR_INVALID);
	tu_assert_error(ctx, "cuda: launching vadd: the argument list is NULL");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_cuda_l2_bytes(ctx, g.cuda, NULL), TS_ERR_INVALID);
	tu_assert_error(ctx, "cuda: L2 size: bytes is NULL");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_cuda_l2_bytes(NULL, g.cuda, NULL), TS_ERR_INVALID);
	assert_released(&g);
	fake_gpu_close(&g);
}
END_TEST

/* A device that reports no L2 size cannot be flushed: refused, not
 * silently timed warm. */
START_TEST(test_no_l2_size)
{
	fake_gpu g;
	if (!fake_gpu_open(&g))
		return;
	setenv("FAKE_CUDA_L2", "0", 1);
	ts_timing t;
	ts_cuda_time_opts o = {.repeats = 2, .flush_l2 = true};
	ck_assert_int_eq(ts_cuda_time_kernel(g.ctx, &g.k, &g.launch, 3, g.d, &o, &t),
			 TS_ERR_UNSUPPORTED);
	ck_assert_str_eq(ts_last_error(g.ctx), "cuda: time vadd: L2 flush: the device reports no "
			 "L2 cache size");
	ts_clear_error(g.ctx);
	assert_zeroed(&t);
	assert_released(&g);
	o.flush_l2 = false; /* without the flush the size is not needed */
	tu_ok(g.ctx, ts_cuda_time_kernel(g.ctx, &g.k, &g.launch, 3, g.d, &o, &t));
	unsetenv("FAKE_CUDA_L2");
	fake_gpu_close(&g);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mustfail_cudatime");
	TCase *tc = tcase_create("cudatime");
	tcase_add_test(tc, test_failing_event_calls);
	tcase_add_test(tc, test_failing_work);
	tcase_add_test(tc, test_bad_options);
	tcase_add_test(tc, test_no_l2_size);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
