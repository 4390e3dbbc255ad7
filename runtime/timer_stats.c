/*
 * timer_stats.c - the statistics of a set of timing samples and their
 * verdict: is this median worth printing?
 *
 * A busy machine does not only add noise; it changes the shape of the
 * samples.  A kernel preempted now and then gives a few far samples
 * (outliers); one that loses its core for whole scheduler ticks gives two
 * clusters (bimodal); a library that sleeps or yields gives samples on the
 * tick's grid (quantized: medians of exactly 8.000 ms).  Each shape gets a
 * flag, judged on the sorted samples with fixed, documented thresholds
 * (timer.h) so that a verdict can be explained in one line.  The grid test
 * assumes the samples are in seconds, as every tessera timer gives them.
 */
#include "timer.h"
#include "timer_internal.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	if (isnan(x) || isnan(y))
		return isnan(x) - isnan(y);
	return (x > y) - (x < y);
}

void rt_sort_doubles(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
}

/* Nearest-rank percentile p (0..1) of sorted s[0..n). */
static double percentile(const double *s, int n, double p)
{
	int i = (int)ceil(p * n) - 1;
	return s[i < 0 ? 0 : i >= n ? n - 1 : i];
}

double rt_sorted_median(const double *s, int n)
{
	if (n % 2)
		return s[n / 2];
	double a = s[n / 2 - 1], b = s[n / 2];
	return a == b ? a : 0.5 * a + 0.5 * b; /* a + b may overflow */
}

/* The median absolute deviation, from a scratch copy. */
static double mad_of(const double *s, int n, double median, double *scratch)
{
	for (int i = 0; i < n; i++)
		scratch[i] = fabs(s[i] - median);
	rt_sort_doubles(scratch, n);
	return rt_sorted_median(scratch, n);
}

/* The widest gap between two clusters that each hold a fair share of the
 * samples; sets the clusters' sizes and medians when it is wide enough. */
static bool find_bimodal(const double *s, int n, ts_timing *t)
{
	int need = (int)ceil(TS_TIMING_BIMODAL_SHARE * n);
	need = need < 2 ? 2 : need;
	int best = -1;
	double gap = 0;
	for (int i = need - 1; i + need < n; i++) {
		if (s[i + 1] - s[i] > gap) {
			gap = s[i + 1] - s[i];
			best = i;
		}
	}
	if (best < 0 || !(gap > 0.5 * (t->p90 - t->p10)) ||
	    !(gap > TS_TIMING_BIMODAL_GAP * t->median))
		return false;
	t->low_count = best + 1;
	t->high_count = n - best - 1;
	t->low_median = rt_sorted_median(s, best + 1);
	t->high_median = rt_sorted_median(s + best + 1, n - best - 1);
	return true;
}

static int count_outliers(const double *s, int n, double median)
{
	int far = 0;
	for (int i = 0; i < n; i++)
		far += fabs(s[i] - median) > TS_TIMING_OUTLIER_DIST * median;
	return far;
}

/* Samples within 1 us of a whole, non-zero number of milliseconds. */
static int count_on_ms_grid(const double *s, int n)
{
	int on = 0;
	for (int i = 0; i < n; i++) {
		double ms = s[i] * 1e3, k = round(ms);
		on += k >= 1 && fabs(ms - k) <= 1e-3;
	}
	return on;
}

/* The longest run of one value in sorted s, and the smallest step between
 * distinct values (INFINITY when all are equal). */
static int longest_run(const double *s, int n, double *step)
{
	int best = 1, run = 1;
	*step = INFINITY;
	for (int i = 1; i < n; i++) {
		if (s[i] == s[i - 1]) {
			run++;
		} else {
			run = 1;
			*step = fmin(*step, s[i] - s[i - 1]);
		}
		best = run > best ? run : best;
	}
	return best;
}

static void judge_quantized(const double *s, int n, ts_timing *t)
{
	double step;
	int grid = count_on_ms_grid(s, n), run = longest_run(s, n, &step);
	if (2 * grid >= n) {
		t->flags |= TS_TIMING_QUANTIZED;
		t->quantized = grid;
		t->quantum = 1e-3;
	} else if (2 * run >= n && step >= 0.01 * t->median) {
		t->flags |= TS_TIMING_QUANTIZED;
		t->quantized = run;
		t->quantum = isinf(step) ? 0 : step;
	}
}

/* The flags of sorted s[0..n) with n >= TS_TIMING_MIN_SAMPLES. */
static void judge(const double *s, int n, ts_timing *t)
{
	if (find_bimodal(s, n, t)) {
		t->flags |= TS_TIMING_BIMODAL; /* which explains the spread */
	} else {
		if (t->p90 - t->p10 > TS_TIMING_NOISY_SPREAD * t->median)
			t->flags |= TS_TIMING_NOISY;
		int far = count_outliers(s, n, t->median);
		if (far > TS_TIMING_OUTLIER_FRACTION * n) {
			t->flags |= TS_TIMING_OUTLIERS;
			t->outliers = far;
		}
	}
	judge_quantized(s, n, t);
}

/* Mean and population standard deviation, summed over s / max|s| so that
 * samples near DBL_MAX do not overflow a sum (or a square) whose result
 * is finite; an infinite or NaN sample gives an infinite or NaN result. */
static void moments(const double *s, int n, ts_timing *out)
{
	double scale = 0;
	for (int i = 0; i < n; i++)
		scale = fabs(s[i]) > scale || isnan(s[i]) ? fabs(s[i]) : scale;
	if (!(scale > 0) || isinf(scale))
		scale = 1;
	double sum = 0, var = 0;
	for (int i = 0; i < n; i++)
		sum += s[i] / scale;
	double mean = sum / n;
	for (int i = 0; i < n; i++)
		var += (s[i] / scale - mean) * (s[i] / scale - mean);
	out->mean = mean * scale;
	out->stddev = sqrt(var / n) * scale;
}

void ts_timing_from_samples(const double *s, int n, ts_timing *out)
{
	if (!out)
		return;
	*out = (ts_timing){NAN, NAN, NAN, NAN, NAN, 0, .p10 = NAN, .p90 = NAN, .mad = NAN,
			   .flags = TS_TIMING_FEW, .rel_ci = NAN};
	double *sorted = s && n > 0 ? malloc(2 * (size_t)n * sizeof(double)) : NULL;
	if (!sorted)
		return; /* no samples (or no memory): NaN statistics, 0 samples */
	memcpy(sorted, s, (size_t)n * sizeof(double));
	rt_sort_doubles(sorted, n);
	moments(s, n, out);
	out->samples = n;
	out->min = sorted[0];
	out->max = sorted[n - 1];
	out->median = rt_sorted_median(sorted, n);
	out->p10 = percentile(sorted, n, 0.1);
	out->p90 = percentile(sorted, n, 0.9);
	out->mad = mad_of(sorted, n, out->median, sorted + n);
	out->flags = n < TS_TIMING_MIN_SAMPLES ? TS_TIMING_FEW : 0;
	if (n >= TS_TIMING_MIN_SAMPLES)
		judge(sorted, n, out);
	free(sorted);
}

/* ---- the verdict ---------------------------------------------------------------- */

/* "2.1 ms", "35.2 us", "1.20 s"; `prec` digits after the point. */
static const char *fmt_time(double sec, int prec, char *buf, size_t n)
{
	if (sec >= 1)
		snprintf(buf, n, "%.*f s", prec, sec);
	else if (sec >= 1e-3)
		snprintf(buf, n, "%.*f ms", prec, sec * 1e3);
	else
		snprintf(buf, n, "%.*f us", prec, sec * 1e6);
	return buf;
}

/* Appends one reason to buf, separated from the previous by "; ". */
static void add_reason(char *buf, size_t n, size_t *len, const char *reason)
{
	if (*len >= n)
		return;
	int w = snprintf(buf + *len, n - *len, "%s%s", *len ? "; " : "", reason);
	if (w > 0)
		*len = *len + (size_t)w > n ? n : *len + (size_t)w;
}

static void quantized_reason(const ts_timing *t, char *r, size_t n)
{
	char a[32], b[32];
	if (t->quantum == 1e-3)
		snprintf(r, n, "quantized timings (%d of %d samples on whole milliseconds, "
			 "median %s): sleep or scheduler-tick artefact", t->quantized, t->samples,
			 fmt_time(t->median, 3, a, sizeof a));
	else
		snprintf(r, n, "quantized timings (%d of %d samples identical, timer step %s, "
			 "median %s)", t->quantized, t->samples, fmt_time(t->quantum, 3, a, sizeof a),
			 fmt_time(t->median, 3, b, sizeof b));
}

/* The reason for one flag into r. */
static void reason_for(const ts_timing *t, unsigned flag, char *r, size_t n)
{
	char a[32], b[32];
	switch (flag) {
	case TS_TIMING_FEW:
		snprintf(r, n, "too few samples (%d < %d)", t->samples, TS_TIMING_MIN_SAMPLES);
		break;
	case TS_TIMING_NOISY:
		snprintf(r, n, "noisy timings (p10-p90 spread %.0f%% of the median)",
			 100 * (t->p90 - t->p10) / t->median);
		break;
	case TS_TIMING_OUTLIERS:
		snprintf(r, n, "outliers (%d of %d samples more than %.0f%% off the median %s)",
			 t->outliers, t->samples, 100 * TS_TIMING_OUTLIER_DIST,
			 fmt_time(t->median, 2, a, sizeof a));
		break;
	case TS_TIMING_BIMODAL:
		snprintf(r, n, "bimodal timings (%d samples near %s, %d near %s)", t->low_count,
			 fmt_time(t->low_median, 1, a, sizeof a), t->high_count,
			 fmt_time(t->high_median, 1, b, sizeof b));
		break;
	case TS_TIMING_QUANTIZED:
		quantized_reason(t, r, n);
		break;
	default: /* TS_TIMING_UNSTABLE */
		snprintf(r, n, "median not stable (+-%.1f%% after %d samples)", 100 * t->rel_ci,
			 t->samples);
		break;
	}
}

/* The verdict's order: what explains the samples best comes first. */
static const unsigned verdict_order[] = {TS_TIMING_FEW, TS_TIMING_BIMODAL, TS_TIMING_QUANTIZED,
					 TS_TIMING_OUTLIERS, TS_TIMING_NOISY, TS_TIMING_UNSTABLE};

const char *ts_timing_verdict(const ts_timing *t, char *buf, size_t n)
{
	if (!buf || n == 0)
		return buf;
	buf[0] = 0;
	if (!t)
		return buf;
	size_t len = 0;
	for (size_t i = 0; i < sizeof verdict_order / sizeof verdict_order[0]; i++) {
		char r[160];
		if (!(t->flags & verdict_order[i]))
			continue;
		reason_for(t, verdict_order[i], r, sizeof r);
		add_reason(buf, n, &len, r);
	}
	if (len == 0)
		snprintf(buf, n, "steady");
	return buf;
}
