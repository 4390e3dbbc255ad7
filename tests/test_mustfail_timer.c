/*
 * test_mustfail_timer.c - the adaptive timer (ts_time_run_stable) refuses
 * bad options: each case gives TS_ERR_INVALID, a message naming the
 * function, the option and the rule, never calls the function, and
 * leaves *out zeroed.  The statistics functions take NULLs quietly.
 */
#include "testutil.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "timer.h"

static int counting(void *arg)
{
	(*(int *)arg)++;
	return 0;
}

/* ts_time_run_stable with o must fail with `part`, without a call. */
static void refuses(ts_ctx *c, const ts_time_opts *o, const char *part)
{
	int calls = 0;
	ts_timing t = {.median = 1, .samples = 3, .flags = 7};
	ts_clear_error(c);
	ck_assert_int_eq(ts_time_run_stable(c, counting, &calls, o, &t), TS_ERR_INVALID);
	tu_assert_error(c, part);
	ck_assert_int_eq(calls, 0);
	ck_assert(t.median == 0 && t.samples == 0 && t.flags == 0);
}

START_TEST(test_null_arguments)
{
	ts_ctx *c = ts_ctx_new();
	ts_time_opts o = ts_time_opts_default();
	ts_timing t = {.median = 1};
	int calls = 0;
	ck_assert_int_eq(ts_time_run_stable(NULL, counting, &calls, &o, &t), TS_ERR_INVALID);
	ck_assert(t.median == 0);
	ck_assert_int_eq(ts_time_run_stable(c, NULL, NULL, &o, &t), TS_ERR_INVALID);
	tu_assert_error(c, "time_run_stable: fn is NULL");
	ts_clear_error(c);
	ck_assert_int_eq(ts_time_run_stable(c, counting, &calls, NULL, &t), TS_ERR_INVALID);
	tu_assert_error(c, "time_run_stable: opts is NULL");
	ts_clear_error(c);
	ck_assert_int_eq(ts_time_run_stable(c, counting, &calls, &o, NULL), TS_ERR_INVALID);
	tu_assert_error(c, "time_run_stable: out is NULL");
	ck_assert_int_eq(calls, 0);
	ts_ctx_free(c);
}
END_TEST

START_TEST(test_bad_repeats)
{
	ts_ctx *c = ts_ctx_new();
	ts_time_opts o = ts_time_opts_default();
	o.min_repeats = -3;
	refuses(c, &o, "time_run_stable: min_repeats must be >= 1, got -3");
	o.min_repeats = 0;
	refuses(c, &o, "time_run_stable: min_repeats must be >= 1, got 0");
	o.min_repeats = 10;
	o.max_repeats = 5;
	refuses(c, &o, "time_run_stable: max_repeats must be in [min_repeats 10, 1048576], got 5");
	o.max_repeats = -1;
	refuses(c, &o, "max_repeats must be in [min_repeats 10, 1048576], got -1");
	o.max_repeats = TS_TIME_MAX_REPEATS + 1;
	refuses(c, &o, "got 1048577");
	ts_ctx_free(c);
}
END_TEST

START_TEST(test_bad_budget)
{
	ts_ctx *c = ts_ctx_new();
	ts_time_opts o = ts_time_opts_default();
	o.budget_s = 0;
	refuses(c, &o, "time_run_stable: budget_s must be > 0 and finite, got 0");
	o.budget_s = -1;
	refuses(c, &o, "budget_s must be > 0 and finite, got -1");
	o.budget_s = NAN;
	refuses(c, &o, "budget_s must be > 0 and finite, got nan");
	o.budget_s = INFINITY;
	refuses(c, &o, "budget_s must be > 0 and finite, got inf");
	ts_ctx_free(c);
}
END_TEST

START_TEST(test_bad_other_options)
{
	ts_ctx *c = ts_ctx_new();
	ts_time_opts o = ts_time_opts_default();
	o.target_rel = -0.01;
	refuses(c, &o, "time_run_stable: target_rel must be >= 0, got -0.01");
	o.target_rel = NAN;
	refuses(c, &o, "target_rel must be >= 0, got nan");
	o = ts_time_opts_default();
	o.number = 0;
	refuses(c, &o, "time_run_stable: number must be 1..65536, got 0");
	o.number = INT32_MAX; /* its warm-up count once overflowed */
	refuses(c, &o, "time_run_stable: number must be 1..65536, got 2147483647");
	o = ts_time_opts_default();
	o.max_warmup = -2;
	refuses(c, &o, "time_run_stable: max_warmup must be 0..1048576, got -2");
	o.max_warmup = INT32_MAX;
	refuses(c, &o, "max_warmup must be 0..1048576, got 2147483647");
	o = ts_time_opts_default();
	o.warmup_rel = 0;
	refuses(c, &o, "time_run_stable: warmup_rel must be > 0, got 0");
	/* a zeroed struct is not a valid set of options */
	o = (ts_time_opts){0};
	refuses(c, &o, "min_repeats must be >= 1, got 0");
	ts_ctx_free(c);
}
END_TEST

/* ts_time_run refuses counts past its bounds before any call (INT_MAX
 * repeats once allocated 16 GB of samples and ran for hours). */
START_TEST(test_time_run_bounds)
{
	ts_ctx *c = ts_ctx_new();
	int calls = 0;
	ts_timing t = {.median = 1};
	ck_assert_int_eq(ts_time_run(c, counting, &calls, 0, INT32_MAX, 1, &t), TS_ERR_INVALID);
	tu_assert_error(c, "time_run: repeat must be 1..1048576, got 2147483647");
	ts_clear_error(c);
	ck_assert_int_eq(ts_time_run(c, counting, &calls, INT32_MAX, 1, 1, &t), TS_ERR_INVALID);
	tu_assert_error(c, "time_run: warmup must be 0..1048576, got 2147483647");
	ts_clear_error(c);
	ck_assert_int_eq(ts_time_run(c, counting, &calls, 0, 1, INT32_MAX, &t), TS_ERR_INVALID);
	tu_assert_error(c, "time_run: number must be 1..65536, got 2147483647");
	ck_assert_int_eq(calls, 0);
	ck_assert(t.median == 0);
	ts_ctx_free(c);
}
END_TEST

/* The statistics take NULLs without crashing. */
START_TEST(test_stats_nulls)
{
	ts_timing t;
	double v[2] = {1, 2};
	ts_timing_from_samples(NULL, 3, &t);
	ck_assert_uint_eq(t.flags, TS_TIMING_FEW);
	ck_assert(isnan(t.median) && t.samples == 0);
	ts_timing_from_samples(v, -1, &t);
	ck_assert_uint_eq(t.flags, TS_TIMING_FEW);
	ts_timing_from_samples(v, 2, NULL);
	char buf[8] = "x";
	ck_assert_str_eq(ts_timing_verdict(NULL, buf, sizeof buf), "");
	ck_assert_ptr_null(ts_timing_verdict(&t, NULL, 0));
	buf[0] = 'x';
	ck_assert_str_eq(ts_timing_verdict(&t, buf, 0), "x"); /* n 0: untouched */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mustfail_timer");
	TCase *tc = tcase_create("mustfail_timer");
	tcase_add_test(tc, test_null_arguments);
	tcase_add_test(tc, test_bad_repeats);
	tcase_add_test(tc, test_bad_budget);
	tcase_add_test(tc, test_bad_other_options);
	tcase_add_test(tc, test_stats_nulls);
	tcase_add_test(tc, test_time_run_bounds);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
