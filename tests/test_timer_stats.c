/*
 * test_timer_stats.c - the verdict on timing samples and the adaptive
 * timer.
 *
 * The classifier (ts_timing_from_samples, ts_timing_verdict) is fed
 * synthetic sample sets of known shape: steady, noisy, two clusters, a few
 * outliers, stuck on the millisecond grid, repeated values of a coarse
 * timer, too few.  The adaptive timer (ts_time_run_stable) times a fake
 * workload on an injected clock: each call advances the clock by a given
 * time, so the protocol's decisions (when warm-up ends, when the median
 * is stable, where the budget stops it) are deterministic and independent
 * of the machine.  Nothing here asserts the speed of anything.
 */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "timer.h"

/* ---- the classifier -------------------------------------------------------------- */

static ts_timing judge_ms(const double *ms, int n)
{
	double s[64];
	ck_assert_int_le(n, 64);
	for (int i = 0; i < n; i++)
		s[i] = ms[i] * 1e-3;
	ts_timing t;
	ts_timing_from_samples(s, n, &t);
	return t;
}

static void assert_verdict(const ts_timing *t, const char *part)
{
	char buf[512];
	ts_timing_verdict(t, buf, sizeof buf);
	ck_assert_msg(strstr(buf, part), "verdict '%s' lacks '%s'", buf, part);
}

START_TEST(test_steady)
{
	double ms[20];
	for (int i = 0; i < 20; i++)
		ms[i] = 1.234 + 0.004 * sin(1.7 * i);
	ts_timing t = judge_ms(ms, 20);
	ck_assert_uint_eq(t.flags, 0);
	ck_assert_int_eq(t.samples, 20);
	ck_assert(t.min <= t.p10 && t.p10 <= t.median && t.median <= t.p90 && t.p90 <= t.max);
	ck_assert(t.mad > 0 && t.mad < 0.005e-3);
	char buf[64];
	ck_assert_str_eq(ts_timing_verdict(&t, buf, sizeof buf), "steady");
}
END_TEST

/* p10 and p90 are nearest-rank percentiles; the MAD is about the median. */
START_TEST(test_percentiles)
{
	double ms[10] = {10, 1, 9, 2, 8, 3, 7, 4, 6, 5};
	ts_timing t = judge_ms(ms, 10);
	ck_assert_double_eq_tol(t.p10, 1e-3, 1e-12);
	ck_assert_double_eq_tol(t.p90, 9e-3, 1e-12);
	ck_assert_double_eq_tol(t.median, 5.5e-3, 1e-12);
	ck_assert_double_eq_tol(t.mad, 2.5e-3, 1e-12);
	ck_assert_double_eq_tol(t.mean, 5.5e-3, 1e-12);
}
END_TEST

START_TEST(test_noisy)
{
	double ms[20];
	for (int i = 0; i < 20; i++)
		ms[(i * 7) % 20] = 1.013 + 0.031 * i;
	ts_timing t = judge_ms(ms, 20);
	ck_assert_uint_eq(t.flags, TS_TIMING_NOISY);
	assert_verdict(&t, "noisy timings (p10-p90 spread 38% of the median)");
}
END_TEST

START_TEST(test_bimodal)
{
	double ms[15];
	for (int i = 0; i < 6; i++)
		ms[2 * i] = 2.081 + 0.007 * i;
	for (int i = 0, j = 1; i < 9; i++, j += j < 11 ? 2 : 1)
		ms[j] = 7.960 + 0.011 * i;
	ts_timing t = judge_ms(ms, 15);
	ck_assert_uint_eq(t.flags, TS_TIMING_BIMODAL); /* not NOISY: that is the two modes */
	ck_assert_int_eq(t.low_count, 6);
	ck_assert_int_eq(t.high_count, 9);
	ck_assert_int_eq(t.outliers, 0);
	char buf[512];
	ts_timing_verdict(&t, buf, sizeof buf);
	ck_assert_str_eq(buf, "bimodal timings (6 samples near 2.1 ms, 9 near 8.0 ms)");
}
END_TEST

/* A cluster of fewer than 20% of the samples is not a mode but outliers. */
START_TEST(test_outliers)
{
	double ms[20];
	for (int i = 0; i < 20; i++)
		ms[i] = 1.234 + 0.003 * sin(2.3 * i);
	ms[5] = 3.5;
	ts_timing t = judge_ms(ms, 20);
	ck_assert_uint_eq(t.flags, 0); /* one in twenty is the machine's life */
	ms[13] = 2.9;
	t = judge_ms(ms, 20);
	ck_assert_uint_eq(t.flags, TS_TIMING_OUTLIERS);
	ck_assert_int_eq(t.outliers, 2);
	assert_verdict(&t, "outliers (2 of 20 samples more than 25% off the median 1.23 ms)");
	ms[2] = ms[7] = 0.5; /* far on both sides */
	t = judge_ms(ms, 20);
	ck_assert_int_eq(t.outliers, 4);
}
END_TEST

/* The oneDNN case: most samples exactly 8.000 ms, a scheduler artefact. */
START_TEST(test_quantized_grid)
{
	double ms[15] = {8, 7.81, 8, 8, 8.07, 8, 8, 7.92, 8, 8, 8.13, 8, 8, 8.24, 8};
	ts_timing t = judge_ms(ms, 15);
	ck_assert_uint_eq(t.flags, TS_TIMING_QUANTIZED);
	ck_assert_int_eq(t.quantized, 10);
	assert_verdict(&t, "quantized timings (10 of 15 samples on whole milliseconds, median "
			   "8.000 ms)");
	/* 8.0004 ms is 0.4 us off the grid: still on it */
	for (int i = 0; i < 15; i++)
		ms[i] = ms[i] == 8 ? 8.0004 : ms[i];
	ck_assert(judge_ms(ms, 15).flags & TS_TIMING_QUANTIZED);
	/* 8.004 ms is 4 us off: a real time */
	for (int i = 0; i < 15; i++)
		ms[i] = ms[i] == 8.0004 ? 8.004 + 0.0001 * i : ms[i];
	ck_assert_uint_eq(judge_ms(ms, 15).flags, 0);
}
END_TEST

/* A timer with 0.5 us steps on a 12.5 us kernel: half the samples share
 * one value and the step is 4% of the median. */
START_TEST(test_quantized_step)
{
	double us[20];
	for (int i = 0; i < 20; i++)
		us[i] = i < 2 ? 12.0 : i < 18 ? 12.5 : 13.0;
	double s[20];
	for (int i = 0; i < 20; i++)
		s[i] = us[i] * 1e-6;
	ts_timing t;
	ts_timing_from_samples(s, 20, &t);
	ck_assert_uint_eq(t.flags, TS_TIMING_QUANTIZED);
	ck_assert_int_eq(t.quantized, 16);
	ck_assert_double_eq_tol(t.quantum, 0.5e-6, 1e-12);
	assert_verdict(&t, "quantized timings (16 of 20 samples identical, timer step 0.500 us, "
			   "median 12.500 us)");
	/* the same repetition at 1.25 ms: a step of 0.04% is fine */
	for (int i = 0; i < 20; i++)
		s[i] = (us[i] + 1237.5) * 1e-6;
	ts_timing_from_samples(s, 20, &t);
	ck_assert_uint_eq(t.flags, 0);
}
END_TEST

START_TEST(test_few)
{
	double ms[3] = {1.2, 7.5, 1.3};
	ts_timing t = judge_ms(ms, 3);
	ck_assert_uint_eq(t.flags, TS_TIMING_FEW); /* nothing else is judged */
	assert_verdict(&t, "too few samples (3 < 5)");
	ck_assert_double_eq_tol(t.median, 1.3e-3, 1e-12);
	ts_timing_from_samples(ms, 0, &t);
	ck_assert_uint_eq(t.flags, TS_TIMING_FEW);
	ck_assert(isnan(t.median) && isnan(t.p10) && isnan(t.p90) && t.samples == 0);
}
END_TEST

/* A NaN sample sorts above the numbers wherever it is, so the statistics
 * of the same samples do not depend on their order. */
START_TEST(test_nan_sample_any_position)
{
	double a[6] = {NAN, 1.0e-3, 2.0e-3, 1.5e-3, 1.2e-3, 1.1e-3};
	double b[6] = {1.0e-3, 2.0e-3, 1.5e-3, NAN, 1.2e-3, 1.1e-3};
	ts_timing ta, tb;
	ts_timing_from_samples(a, 6, &ta);
	ts_timing_from_samples(b, 6, &tb);
	ck_assert_double_eq(ta.min, 1.0e-3);
	ck_assert_double_eq(tb.min, 1.0e-3);
	ck_assert(isnan(ta.max) && isnan(tb.max));
	ck_assert_double_eq_tol(ta.median, 1.35e-3, 1e-15);
	ck_assert_double_eq(ta.median, tb.median);
	ck_assert_double_eq(ta.p10, tb.p10);
	ck_assert_uint_eq(ta.flags, tb.flags);
	/* the middle two are averaged without overflowing */
	double big[6] = {1e308, 1.5e308, 1e308, 1.5e308, 1e308, 1.5e308};
	ts_timing_from_samples(big, 6, &ta);
	ck_assert_double_eq(ta.median, 1.25e308);
	/* and so are the mean and the deviation (their sums overflowed) */
	ck_assert_double_eq_tol(ta.mean, 1.25e308, 1e293);
	ck_assert_double_eq_tol(ta.stddev, 0.25e308, 1e293);
	double wide[6] = {1e308, 1e308, 1e308, 1e308, 1e308, -1e308};
	ts_timing_from_samples(wide, 6, &ta);
	ck_assert_double_eq_tol(ta.mean, 1e308 * (4.0 / 6), 1e293);
	ck_assert(isfinite(ta.stddev) && ta.stddev > 7e307);
}
END_TEST

/* Truncation keeps the string terminated; several reasons are joined. */
START_TEST(test_verdict_buffer)
{
	ts_timing t = {.samples = 20, .median = 1e-3, .p10 = 0.5e-3, .p90 = 2e-3,
		       .flags = TS_TIMING_NOISY | TS_TIMING_OUTLIERS, .outliers = 3};
	char buf[256], tiny[12];
	ts_timing_verdict(&t, buf, sizeof buf);
	ck_assert_str_eq(buf, "outliers (3 of 20 samples more than 25% off the median 1.00 ms); "
			      "noisy timings (p10-p90 spread 150% of the median)");
	memset(tiny, 'x', sizeof tiny);
	ts_timing_verdict(&t, tiny, sizeof tiny);
	ck_assert_str_eq(tiny, "outliers (3");
	ck_assert_str_eq(ts_timing_verdict(NULL, buf, sizeof buf), "");
	ck_assert_ptr_null(ts_timing_verdict(&t, NULL, 8));
}
END_TEST

/* ---- the adaptive timer on a fake clock ---------------------------------------------- */

/* Call i takes times[i] ms while i < n, then cycles over times[prefix..n). */
typedef struct fake_work {
	uint64_t now_ns;
	const double *times;
	int n, prefix;
	int calls, fail_at;
} fake_work;

static uint64_t fake_clock(void *arg)
{
	return ((fake_work *)arg)->now_ns;
}

static int fake_call(void *arg)
{
	fake_work *w = arg;
	int i = w->calls < w->n ? w->calls : w->prefix + (w->calls - w->prefix) % (w->n - w->prefix);
	w->now_ns += (uint64_t)llround(w->times[i] * 1e6);
	return w->calls++ == w->fail_at ? 7 : 0;
}

static ts_time_opts fake_opts(fake_work *w)
{
	ts_time_opts o = ts_time_opts_default();
	o.budget_s = 10;
	o.clock_ns = fake_clock;
	o.clock_arg = w;
	return o;
}

/* Within 0.3% of 1.234 ms: stable at once. */
static const double steady_ms[] = {1.2341, 1.2352, 1.2337, 1.2366, 1.2348, 1.2359, 1.2343};
/* Spread over 1.0-1.6 ms: a 2% median needs hundreds of samples. */
static const double noisy_ms[] = {1.013, 1.561, 1.207, 1.338, 1.104, 1.482, 1.266,
				  1.049, 1.523, 1.171, 1.419, 1.298, 1.136, 1.374};

START_TEST(test_stable_stops_at_min)
{
	ts_ctx *c = ts_ctx_new();
	fake_work w = {.times = steady_ms, .n = 7, .fail_at = -1};
	ts_time_opts o = fake_opts(&w);
	ts_timing t;
	tu_ok(c, ts_time_run_stable(c, fake_call, &w, &o, &t));
	ck_assert_int_eq(t.warmups, 2);
	ck_assert_int_eq(t.samples, 5);
	ck_assert_int_eq(w.calls, 7);
	ck_assert_uint_eq(t.flags, 0);
	ck_assert(t.rel_ci <= 0.02);
	ck_assert_double_eq_tol(t.median, 1.2348e-3, 1e-9); /* calls 2..6 */
	ts_ctx_free(c);
}
END_TEST

/* Warm-up goes on while consecutive calls disagree (cold caches, page
 * faults, a frequency ramp), then stops when two agree. */
START_TEST(test_warmup_until_agree)
{
	ts_ctx *c = ts_ctx_new();
	double ms[] = {10, 5, 2.5, 1.5, 1.2341, 1.2352, 1.2337, 1.2366, 1.2348, 1.2359, 1.2343};
	fake_work w = {.times = ms, .n = 11, .prefix = 4, .fail_at = -1};
	ts_time_opts o = fake_opts(&w);
	ts_timing t;
	tu_ok(c, ts_time_run_stable(c, fake_call, &w, &o, &t));
	ck_assert_int_eq(t.warmups, 6); /* 10 5 2.5 1.5 1.2341 1.2352 */
	ck_assert_int_eq(t.samples, 5);
	ck_assert(t.max < 1.24e-3);
	/* with a cap, warm-up stops there even though the times still fall */
	w = (fake_work){.times = ms, .n = 11, .prefix = 4, .fail_at = -1};
	o.max_warmup = 2;
	tu_ok(c, ts_time_run_stable(c, fake_call, &w, &o, &t));
	ck_assert_int_eq(t.warmups, 2);
	ck_assert_double_eq_tol(t.max, 2.5e-3, 1e-9);
	/* max_warmup 0: no warm-up at all */
	w = (fake_work){.times = ms, .n = 11, .prefix = 4, .fail_at = -1};
	o.max_warmup = 0;
	tu_ok(c, ts_time_run_stable(c, fake_call, &w, &o, &t));
	ck_assert_int_eq(t.warmups, 0);
	ck_assert_double_eq_tol(t.max, 10e-3, 1e-9);
	ts_ctx_free(c);
}
END_TEST

/* Unstable samples keep the timer going past min_repeats, up to
 * max_repeats; the result says it did not settle. */
START_TEST(test_unstable_runs_to_max)
{
	ts_ctx *c = ts_ctx_new();
	fake_work w = {.times = noisy_ms, .n = 14, .fail_at = -1};
	ts_time_opts o = fake_opts(&w);
	o.max_repeats = 60;
	ts_timing t;
	tu_ok(c, ts_time_run_stable(c, fake_call, &w, &o, &t));
	ck_assert_int_eq(t.samples, 60);
	ck_assert(t.flags & TS_TIMING_UNSTABLE);
	ck_assert(t.rel_ci > 0.02);
	assert_verdict(&t, "median not stable (+-");
	assert_verdict(&t, "after 60 samples)");
	/* a looser target is met early */
	w = (fake_work){.times = noisy_ms, .n = 14, .fail_at = -1};
	o.target_rel = 0.1;
	tu_ok(c, ts_time_run_stable(c, fake_call, &w, &o, &t));
	ck_assert_int_lt(t.samples, 60);
	ck_assert_int_ge(t.samples, 5);
	ck_assert(!(t.flags & TS_TIMING_UNSTABLE));
	/* target 0: exactly max_repeats, and no UNSTABLE (nothing was asked) */
	w = (fake_work){.times = steady_ms, .n = 7, .fail_at = -1};
	o.target_rel = 0;
	o.max_repeats = 17;
	tu_ok(c, ts_time_run_stable(c, fake_call, &w, &o, &t));
	ck_assert_int_eq(t.samples, 17);
	ck_assert_uint_eq(t.flags, 0);
	ts_ctx_free(c);
}
END_TEST

/* The budget covers warm-up and samples; it ends the run after the sample
 * that crosses it. */
START_TEST(test_budget)
{
	ts_ctx *c = ts_ctx_new();
	fake_work w = {.times = noisy_ms, .n = 14, .fail_at = -1};
	ts_time_opts o = fake_opts(&w);
	o.budget_s = 0.05;
	ts_timing t;
	tu_ok(c, ts_time_run_stable(c, fake_call, &w, &o, &t));
	ck_assert(w.now_ns >= 50000000 && w.now_ns < 50000000 + 1600000);
	ck_assert_int_eq(t.samples + t.warmups, w.calls);
	ck_assert_int_gt(t.samples, 5);
	ck_assert(t.flags & TS_TIMING_UNSTABLE);
	/* slow calls: the budget wins over min_repeats, one sample at least */
	double slow[] = {400, 410, 405};
	w = (fake_work){.times = slow, .n = 3, .fail_at = -1};
	o.budget_s = 1;
	o.max_warmup = 0;
	tu_ok(c, ts_time_run_stable(c, fake_call, &w, &o, &t));
	ck_assert_int_eq(t.samples, 3);
	ck_assert_uint_eq(t.flags, TS_TIMING_FEW | TS_TIMING_UNSTABLE);
	w = (fake_work){.times = slow, .n = 3, .fail_at = -1};
	o.budget_s = 1e-6;
	tu_ok(c, ts_time_run_stable(c, fake_call, &w, &o, &t));
	ck_assert_int_eq(t.samples, 1);
	ts_ctx_free(c);
}
END_TEST

/* `number` calls per sample: the sample is their mean. */
START_TEST(test_number)
{
	ts_ctx *c = ts_ctx_new();
	double ms[] = {1.0, 3.0};
	fake_work w = {.times = ms, .n = 2, .fail_at = -1};
	ts_time_opts o = fake_opts(&w);
	o.number = 2;
	o.max_warmup = 1;
	ts_timing t;
	tu_ok(c, ts_time_run_stable(c, fake_call, &w, &o, &t));
	ck_assert_int_eq(t.warmups, 2);
	ck_assert_int_eq(w.calls, 2 + 2 * t.samples);
	ck_assert_double_eq_tol(t.min, 2e-3, 1e-12);
	ck_assert_double_eq_tol(t.max, 2e-3, 1e-12);
	ts_ctx_free(c);
}
END_TEST

/* A failing call stops the run; the message names the warm-up call or the
 * repeat, and *out is zeroed. */
START_TEST(test_errors_name_the_call)
{
	ts_ctx *c = ts_ctx_new();
	fake_work w = {.times = steady_ms, .n = 7, .fail_at = 4};
	ts_time_opts o = fake_opts(&w);
	ts_timing t = {.median = 1};
	ck_assert_int_eq(ts_time_run_stable(c, fake_call, &w, &o, &t), TS_ERR_RUNTIME);
	tu_assert_error(c, "time_run_stable: function returned 7 in repeat 2 (call 0 of 1)");
	ck_assert(t.median == 0 && t.samples == 0 && t.flags == 0);
	ts_clear_error(c);
	w = (fake_work){.times = steady_ms, .n = 7, .fail_at = 1};
	ck_assert_int_eq(ts_time_run_stable(c, fake_call, &w, &o, &t), TS_ERR_RUNTIME);
	tu_assert_error(c, "time_run_stable: function returned 7 in warmup call 1");
	ts_clear_error(c);
	w = (fake_work){.times = steady_ms, .n = 7, .fail_at = 9};
	o.number = 3;
	o.max_warmup = 1;
	ck_assert_int_eq(ts_time_run_stable(c, fake_call, &w, &o, &t), TS_ERR_RUNTIME);
	tu_assert_error(c, "in repeat 2 (call 0 of 3)");
	ts_ctx_free(c);
}
END_TEST

/* The real clock, and the fixed-count timers: they fill the new fields
 * too (no assertion on the machine's speed or noise). */
static int trivial(void *arg)
{
	volatile int *x = arg;
	for (int i = 0; i < 1000; i++)
		*x += i;
	return 0;
}

START_TEST(test_real_clock)
{
	ts_ctx *c = ts_ctx_new();
	int x = 0;
	ts_time_opts o = ts_time_opts_default();
	o.budget_s = 0.05;
	ts_timing t;
	tu_ok(c, ts_time_run_stable(c, trivial, &x, &o, &t));
	ck_assert_int_ge(t.samples, 1);
	ck_assert(t.min <= t.p10 && t.p10 <= t.median && t.median <= t.p90 && t.p90 <= t.max);
	tu_ok(c, ts_time_run(c, trivial, &x, 1, 7, 3, &t));
	ck_assert_int_eq(t.samples, 7);
	ck_assert(t.min <= t.p10 && t.p90 <= t.max && t.mad >= 0);
	ck_assert(!(t.flags & (TS_TIMING_FEW | TS_TIMING_UNSTABLE)));
	ts_ctx_free(c);
}
END_TEST

/* Buffer sets for cold timing: about 32 MiB of them below 8 MiB, at most
 * TS_COLD_MAX_SETS, one for large buffers and for nonsense. */
START_TEST(test_cold_sets)
{
	const double MiB = 1 << 20;
	ck_assert_int_eq(ts_cold_sets(1), TS_COLD_MAX_SETS);
	ck_assert_int_eq(ts_cold_sets(2 * MiB), 16);
	ck_assert_int_eq(ts_cold_sets(3 * MiB), 11);
	ck_assert_int_eq(ts_cold_sets(8 * MiB - 1), 5);
	ck_assert_int_eq(ts_cold_sets(8 * MiB), 1);
	ck_assert_int_eq(ts_cold_sets(1e300), 1);
	ck_assert_int_eq(ts_cold_sets(INFINITY), 1);
	ck_assert_int_eq(ts_cold_sets(0), 1);
	ck_assert_int_eq(ts_cold_sets(-MiB), 1);
	ck_assert_int_eq(ts_cold_sets(-INFINITY), 1);
	ck_assert_int_eq(ts_cold_sets(NAN), 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("timer_stats");
	TCase *tc = tcase_create("timer_stats");
	tcase_add_test(tc, test_steady);
	tcase_add_test(tc, test_percentiles);
	tcase_add_test(tc, test_noisy);
	tcase_add_test(tc, test_bimodal);
	tcase_add_test(tc, test_outliers);
	tcase_add_test(tc, test_quantized_grid);
	tcase_add_test(tc, test_quantized_step);
	tcase_add_test(tc, test_few);
	tcase_add_test(tc, test_nan_sample_any_position);
	tcase_add_test(tc, test_verdict_buffer);
	tcase_add_test(tc, test_stable_stops_at_min);
	tcase_add_test(tc, test_warmup_until_agree);
	tcase_add_test(tc, test_unstable_runs_to_max);
	tcase_add_test(tc, test_budget);
	tcase_add_test(tc, test_number);
	tcase_add_test(tc, test_errors_name_the_call);
	tcase_add_test(tc, test_real_clock);
	tcase_add_test(tc, test_cold_sets);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
