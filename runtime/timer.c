/*
 * timer.c - monotonic clock, ts_time_run, the adaptive ts_time_run_stable
 * and the phase-time printer (the statistics are in timer_stats.c).
 *
 * Samples are kept in a malloc'd array rather than the arena, because a
 * benchmark may time thousands of runs with one context and the arena only
 * grows.
 */
#include "timer.h"
#include "timer_internal.h"

#include <limits.h>
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
	/* a start after now (a reading of another clock, or a deadline) is a
	 * negative time: the unsigned difference would wrap to 584 years */
	uint64_t now = ts_now_ns();
	return now >= start_ns ? (double)(now - start_ns) / 1e6 : -((double)(start_ns - now) / 1e6);
}

double ts_median(const double *v, int n)
{
	if (n <= 0 || !v)
		return NAN;
	for (int i = 0; i < n; i++)
		if (isnan(v[i]))
			return NAN; /* a median of unordered values has no meaning */
	double *s = malloc((size_t)n * sizeof(double));
	if (!s)
		return NAN;
	memcpy(s, v, (size_t)n * sizeof(double));
	rt_sort_doubles(s, n);
	double m = rt_sorted_median(s, n);
	free(s);
	return m;
}

int ts_cold_sets(double bytes)
{
	if (!(bytes >= 1) || bytes >= 8.0 * (1 << 20))
		return 1;
	double sets = ceil(32.0 * (1 << 20) / bytes);
	return sets > TS_COLD_MAX_SETS ? TS_COLD_MAX_SETS : (int)sets;
}

static ts_status check_run_args(ts_ctx *ctx, int (*fn)(void *), int warmup, int repeat,
				int number, const ts_timing *out)
{
	if (!fn || !out)
		return ts_error(ctx, TS_ERR_INVALID, "time_run: %s is NULL", fn ? "out" : "fn");
	if (warmup < 0 || warmup > TS_TIME_MAX_REPEATS)
		return ts_error(ctx, TS_ERR_INVALID, "time_run: warmup must be 0..%d, got %d",
				TS_TIME_MAX_REPEATS, warmup);
	if (repeat < 1 || repeat > TS_TIME_MAX_REPEATS)
		return ts_error(ctx, TS_ERR_INVALID, "time_run: repeat must be 1..%d, got %d",
				TS_TIME_MAX_REPEATS, repeat);
	if (number < 1 || number > TS_TIME_MAX_NUMBER)
		return ts_error(ctx, TS_ERR_INVALID, "time_run: number must be 1..%d, got %d",
				TS_TIME_MAX_NUMBER, number);
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

/* ---- the adaptive protocol ------------------------------------------------------- */

ts_time_opts ts_time_opts_default(void)
{
	return (ts_time_opts){.min_repeats = 5, .max_repeats = 10000, .budget_s = 1.0,
			      .target_rel = 0.02, .number = 1, .max_warmup = 20,
			      .warmup_rel = 0.1};
}

static ts_status check_stable_opts(ts_ctx *ctx, int (*fn)(void *), const ts_time_opts *o,
				   const ts_timing *out)
{
	const char *f = "time_run_stable";
	if (!fn || !o || !out)
		return ts_error(ctx, TS_ERR_INVALID, "%s: %s is NULL", f,
				!fn ? "fn" : !o ? "opts" : "out");
	if (o->min_repeats < 1)
		return ts_error(ctx, TS_ERR_INVALID, "%s: min_repeats must be >= 1, got %d", f,
				o->min_repeats);
	if (o->max_repeats < o->min_repeats || o->max_repeats > TS_TIME_MAX_REPEATS)
		return ts_error(ctx, TS_ERR_INVALID,
				"%s: max_repeats must be in [min_repeats %d, %d], got %d", f,
				o->min_repeats, TS_TIME_MAX_REPEATS, o->max_repeats);
	if (!(o->budget_s > 0) || isinf(o->budget_s))
		return ts_error(ctx, TS_ERR_INVALID, "%s: budget_s must be > 0 and finite, got %g",
				f, o->budget_s);
	if (!(o->target_rel >= 0))
		return ts_error(ctx, TS_ERR_INVALID, "%s: target_rel must be >= 0, got %g", f,
				o->target_rel);
	if (o->number < 1 || o->number > TS_TIME_MAX_NUMBER)
		return ts_error(ctx, TS_ERR_INVALID, "%s: number must be 1..%d, got %d", f,
				TS_TIME_MAX_NUMBER, o->number);
	if (o->max_warmup < 0 || o->max_warmup > TS_TIME_MAX_REPEATS)
		return ts_error(ctx, TS_ERR_INVALID, "%s: max_warmup must be 0..%d, got %d", f,
				TS_TIME_MAX_REPEATS, o->max_warmup);
	if (!(o->warmup_rel > 0))
		return ts_error(ctx, TS_ERR_INVALID, "%s: warmup_rel must be > 0, got %g", f,
				o->warmup_rel);
	return TS_OK;
}

typedef struct stable_run {
	ts_ctx *ctx;
	int (*fn)(void *);
	void *arg;
	const ts_time_opts *o;
	uint64_t start;
	double *samples, *sorted; /* max_repeats each */
	int n, warmups;
} stable_run;

static uint64_t clock_now(const ts_time_opts *o)
{
	return o->clock_ns ? o->clock_ns(o->clock_arg) : ts_now_ns();
}

/* Seconds from a to b on the run's clock (never negative). */
static double seconds(uint64_t a, uint64_t b)
{
	return b > a ? (double)(b - a) / 1e9 : 0;
}

static bool over_budget(const stable_run *r)
{
	return seconds(r->start, clock_now(r->o)) >= r->o->budget_s;
}

/* One group of `number` calls; *t = seconds per call.  `index` is the
 * warm-up group or the repeat. */
static ts_status time_group(stable_run *r, bool warm, int index, double *t)
{
	int number = r->o->number;
	uint64_t t0 = clock_now(r->o);
	for (int i = 0; i < number; i++) {
		int rc = r->fn(r->arg);
		if (rc != 0 && warm)
			return ts_error(r->ctx, TS_ERR_RUNTIME,
					"time_run_stable: function returned %d in warmup call %d",
					rc, index * number + i);
		if (rc != 0)
			return ts_error(r->ctx, TS_ERR_RUNTIME,
					"time_run_stable: function returned %d in repeat %d "
					"(call %d of %d)", rc, index, i, number);
	}
	*t = seconds(t0, clock_now(r->o)) / number;
	return TS_OK;
}

/* Warm-up groups until two consecutive ones agree, max_warmup or the
 * budget. */
static ts_status warm_up(stable_run *r)
{
	double prev = -1;
	for (int g = 0; g < r->o->max_warmup && !over_budget(r); g++) {
		double t;
		ts_status st = time_group(r, true, g, &t);
		if (st != TS_OK)
			return st;
		/* up to 2^20 groups of 2^16 calls: the count saturates */
		r->warmups = r->warmups > INT_MAX - r->o->number ? INT_MAX : r->warmups + r->o->number;
		if (prev >= 0 && fabs(t - prev) <= r->o->warmup_rel * fmax(t, prev))
			break;
		prev = t;
	}
	return TS_OK;
}

/* Half-width of the median's 95% confidence interval (order statistics:
 * ranks n/2 -+ 0.98 sqrt(n)) over the median, for the first n samples. */
static double median_rel_ci(stable_run *r)
{
	int n = r->n;
	double *s = r->sorted;
	memcpy(s, r->samples, (size_t)n * sizeof(double));
	rt_sort_doubles(s, n);
	double h = 0.98 * sqrt((double)n);
	int lo = (int)floor(n / 2.0 - h) - 1, hi = (int)ceil(1 + n / 2.0 + h) - 1;
	lo = lo < 0 ? 0 : lo;
	hi = hi > n - 1 ? n - 1 : hi;
	double med = rt_sorted_median(s, n);
	double width = s[hi] - s[lo];
	return width == 0 ? 0 : med > 0 ? width / (2 * med) : INFINITY;
}

static bool stable_enough(const stable_run *r, double rel)
{
	return r->o->target_rel > 0 && rel <= r->o->target_rel;
}

/* Samples until stable (checked at min_repeats, then every ~10% more
 * samples, so the sorting stays cheap), max_repeats or the budget. */
static ts_status sample(stable_run *r)
{
	const ts_time_opts *o = r->o;
	int next_check = o->min_repeats;
	while (r->n < o->max_repeats && !(r->n > 0 && over_budget(r))) {
		ts_status st = time_group(r, false, r->n, &r->samples[r->n]);
		if (st != TS_OK)
			return st;
		if (++r->n < next_check)
			continue;
		if (stable_enough(r, median_rel_ci(r)))
			break;
		next_check = r->n + (r->n / 10 > 1 ? r->n / 10 : 1);
	}
	return TS_OK;
}

ts_status ts_time_run_stable(ts_ctx *ctx, int (*fn)(void *), void *arg, const ts_time_opts *o,
			     ts_timing *out)
{
	if (out)
		memset(out, 0, sizeof(*out));
	if (!ctx)
		return TS_ERR_INVALID;
	ts_status st = check_stable_opts(ctx, fn, o, out);
	if (st != TS_OK)
		return st;
	stable_run r = {.ctx = ctx, .fn = fn, .arg = arg, .o = o, .start = clock_now(o)};
	r.samples = malloc(2 * (size_t)o->max_repeats * sizeof(double));
	if (!r.samples)
		return ts_error(ctx, TS_ERR_NOMEM, "time_run_stable: out of memory for %d samples",
				o->max_repeats);
	r.sorted = r.samples + o->max_repeats;
	st = warm_up(&r);
	if (st == TS_OK)
		st = sample(&r);
	if (st == TS_OK) {
		double rel = median_rel_ci(&r);
		ts_timing_from_samples(r.samples, r.n, out);
		out->warmups = r.warmups;
		out->rel_ci = rel;
		if (o->target_rel > 0 && (!stable_enough(&r, rel) || r.n < o->min_repeats))
			out->flags |= TS_TIMING_UNSTABLE;
	}
	free(r.samples);
	return st;
}

/* Appends "name 1.23 ms, " for a non-zero phase. */
static size_t put_phase(char *buf, size_t cap, size_t len, const char *name, double ms,
			bool always)
{
	if ((ms == 0 && !always) || len >= cap)
		return len;
	/* absurd times in exponent form: every phase and the total fit buf */
	char num[32];
	if (fabs(ms) < 1e9)
		snprintf(num, sizeof num, "%.*f", ms < 1 ? 2 : 1, ms);
	else
		snprintf(num, sizeof num, "%.3g", ms);
	int n = snprintf(buf + len, cap - len, "%s%s %s ms", len ? ", " : "", name, num);
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
