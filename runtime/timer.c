/*
 * timer.c - monotonic clock, ts_time_run and the phase-time printer.
 *
 * Samples are kept in a malloc'd array rather than the arena, because a
 * benchmark may time thousands of runs with one context and the arena only
 * grows.
 */
#include "timer.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t ts_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double ts_ms_since(uint64_t start_ns)
{
	return (double)(ts_now_ns() - start_ns) / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double ts_median(const double *v, int n)
{
	if (n <= 0 || !v)
		return NAN;
	double *s = malloc((size_t)n * sizeof(double));
	if (!s)
		return NAN;
	memcpy(s, v, (size_t)n * sizeof(double));
	qsort(s, (size_t)n, sizeof(double), cmp_double);
	double m = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
	free(s);
	return m;
}

static ts_status check_run_args(ts_ctx *ctx, int (*fn)(void *), int warmup, int repeat,
				int number, const ts_timing *out)
{
	if (!fn || !out)
		return ts_error(ctx, TS_ERR_INVALID, "time_run: %s is NULL", fn ? "out" : "fn");
	if (warmup < 0)
		return ts_error(ctx, TS_ERR_INVALID, "time_run: warmup must be >= 0, got %d", warmup);
	if (repeat < 1)
		return ts_error(ctx, TS_ERR_INVALID, "time_run: repeat must be >= 1, got %d", repeat);
	if (number < 1)
		return ts_error(ctx, TS_ERR_INVALID, "time_run: number must be >= 1, got %d", number);
	return TS_OK;
}

/* One sample: the mean seconds per call over `number` calls. */
static ts_status time_sample(ts_ctx *ctx, int (*fn)(void *), void *arg, int rep, int number,
			     double *sample)
{
	uint64_t t0 = ts_now_ns();
	for (int i = 0; i < number; i++) {
		int rc = fn(arg);
		if (rc != 0)
			return ts_error(ctx, TS_ERR_RUNTIME,
					"time_run: function returned %d in repeat %d (call %d of %d)",
					rc, rep, i, number);
	}
	*sample = (double)(ts_now_ns() - t0) / 1e9 / number;
	return TS_OK;
}

void ts_timing_from_samples(const double *s, int n, ts_timing *out)
{
	if (!out)
		return;
	if (!s || n <= 0) { /* no samples: NaN statistics, 0 samples */
		*out = (ts_timing){NAN, NAN, NAN, NAN, NAN, 0};
		return;
	}
	double sum = 0, lo = s[0], hi = s[0];
	for (int i = 0; i < n; i++) {
		sum += s[i];
		lo = s[i] < lo ? s[i] : lo;
		hi = s[i] > hi ? s[i] : hi;
	}
	double mean = sum / n, var = 0;
	for (int i = 0; i < n; i++)
		var += (s[i] - mean) * (s[i] - mean);
	out->min = lo;
	out->mean = mean;
	out->max = hi;
	out->median = ts_median(s, n);
	out->stddev = sqrt(var / n);
	out->samples = n;
}

ts_status ts_time_run(ts_ctx *ctx, int (*fn)(void *), void *arg, int warmup, int repeat,
		      int number, ts_timing *out)
{
	if (out)
		memset(out, 0, sizeof(*out));
	if (!ctx)
		return TS_ERR_INVALID;
	ts_status st = check_run_args(ctx, fn, warmup, repeat, number, out);
	if (st != TS_OK)
		return st;
	for (int i = 0; i < warmup; i++) {
		int rc = fn(arg);
		if (rc != 0)
			return ts_error(ctx, TS_ERR_RUNTIME,
					"time_run: function returned %d in warmup call %d", rc, i);
	}
	double *samples = malloc((size_t)repeat * sizeof(double));
	if (!samples)
		return ts_error(ctx, TS_ERR_NOMEM, "time_run: out of memory for %d samples", repeat);
	for (int r = 0; r < repeat && st == TS_OK; r++)
		st = time_sample(ctx, fn, arg, r, number, &samples[r]);
	if (st == TS_OK)
		ts_timing_from_samples(samples, repeat, out);
	free(samples);
	return st;
}

/* Appends "name 1.23 ms, " for a non-zero phase. */
static size_t put_phase(char *buf, size_t cap, size_t len, const char *name, double ms,
			bool always)
{
	if ((ms == 0 && !always) || len >= cap)
		return len;
	int n = snprintf(buf + len, cap - len, "%s%s %.*f ms", len ? ", " : "", name,
			 ms < 1 ? 2 : 1, ms);
	return n < 0 ? len : len + (size_t)n;
}

const char *ts_phase_times_str(ts_ctx *ctx, const ts_phase_times *t)
{
	char buf[512] = "";
	size_t n = 0, cap = sizeof(buf);
	if (!ctx)
		return NULL;
	if (!t) {
		ts_error(ctx, TS_ERR_INVALID, "phase_times_str: times are NULL");
		return NULL;
	}
	n = put_phase(buf, cap, n, "lower", t->lower_ms, false);
	n = put_phase(buf, cap, n, "llvm ir", t->llvm_build_ms, false);
	n = put_phase(buf, cap, n, "opt", t->optimize_ms, false);
	n = put_phase(buf, cap, n, "machine code", t->codegen_ms, false);
	n = put_phase(buf, cap, n, "nvrtc", t->nvrtc_ms, false);
	put_phase(buf, cap, n, "total", t->total_ms, true);
	return ts_strdup(ctx, buf);
}
