/*
 * timer.h - monotonic clock, a repeat-and-average time evaluator, and the
 * per-phase times of a compilation.
 *
 * ts_time_run follows the usual protocol for timing small kernels: `warmup`
 * untimed calls, then `repeat` samples, each the mean time per call over
 * `number` consecutive calls (so one sample is long enough for the clock),
 * summarized as min, median, mean, max and standard deviation.
 *
 * ts_time_run_stable is the adaptive protocol of tessera-bench: warm-up
 * until two consecutive warm-up times agree, then samples until the
 * median's confidence interval is narrow enough, within a time budget and
 * a repeat cap.
 *
 * Every timer reports through ts_timing_from_samples, which also judges
 * the samples: a bitmask of TS_TIMING_ flags (noisy, outliers, two
 * clusters, quantized to a coarse grid, too few) and a reason string
 * (ts_timing_verdict), so that a result measured on a busy machine -- a
 * median stuck at exactly 8.000 ms by the scheduler tick -- is never
 * reported as if it were clean.  Tests assert the statistics and verdicts
 * of given samples, never the speed of the machine.
 */
#ifndef TESSERA_RUNTIME_TIMER_H
#define TESSERA_RUNTIME_TIMER_H

#include <stddef.h>
#include <stdint.h>

#include "ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Nanoseconds of CLOCK_MONOTONIC (an arbitrary origin, never goes back). */
uint64_t ts_now_ns(void);
/* Milliseconds elapsed since a ts_now_ns() reading (negative for a value
 * past the present one). */
double ts_ms_since(uint64_t start_ns);

/* Quality flags of a set of samples (ts_timing.flags), from
 * ts_timing_from_samples.  0 means the samples look clean. */
enum {
	/* fewer than TS_TIMING_MIN_SAMPLES samples: nothing else is judged */
	TS_TIMING_FEW = 1u << 0,
	/* (p90 - p10) / median > TS_TIMING_NOISY_SPREAD (not set when the
	 * samples are bimodal: the two clusters are the spread) */
	TS_TIMING_NOISY = 1u << 1,
	/* more than TS_TIMING_OUTLIER_FRACTION of the samples lie farther than
	 * TS_TIMING_OUTLIER_DIST x median from the median (not set when the
	 * samples are bimodal: the far ones are then the second cluster) */
	TS_TIMING_OUTLIERS = 1u << 2,
	/* two clusters: a gap in the sorted samples wider than half of
	 * p90 - p10 and than TS_TIMING_BIMODAL_GAP x median, with at least
	 * TS_TIMING_BIMODAL_SHARE of the samples on each side */
	TS_TIMING_BIMODAL = 1u << 3,
	/* at least half the samples on a coarse grid: within 1 us of a whole
	 * millisecond (sleep and scheduler-tick artefacts, the "exactly
	 * 8.000 ms" median), or one value repeated by half the samples while
	 * the timer's step is >= 1% of the median (a clock too coarse) */
	TS_TIMING_QUANTIZED = 1u << 4,
	/* ts_time_run_stable only: the budget or max_repeats ended the run
	 * before the median was stable to target_rel */
	TS_TIMING_UNSTABLE = 1u << 5
};

#define TS_TIMING_MIN_SAMPLES 5
#define TS_TIMING_NOISY_SPREAD 0.25
#define TS_TIMING_OUTLIER_DIST 0.25
#define TS_TIMING_OUTLIER_FRACTION 0.05
#define TS_TIMING_BIMODAL_GAP 0.05
#define TS_TIMING_BIMODAL_SHARE 0.2

/* Summary of ts_time_run, ts_time_run_stable and ts_cuda_time, in seconds
 * per call.  The first six fields are the historic ones; the rest were
 * added after them, so positional initializers of the six still work. */
typedef struct ts_timing {
	double min, median, mean, max;
	double stddev;  /* population standard deviation of the samples */
	int samples;    /* = repeat */
	double p10, p90;  /* nearest-rank percentiles */
	double mad;       /* median absolute deviation from the median */
	unsigned flags;   /* TS_TIMING_ bits; 0: clean */
	int outliers;     /* samples counted by TS_TIMING_OUTLIERS */
	int low_count, high_count;   /* TS_TIMING_BIMODAL: the two clusters' sizes, */
	double low_median, high_median; /* and their medians */
	int quantized;    /* samples on the grid or sharing the repeated value */
	double quantum;   /* TS_TIMING_QUANTIZED: the grid (1e-3) or timer step */
	int warmups;      /* ts_time_run_stable: warm-up calls made */
	double rel_ci;    /* ts_time_run_stable: half-width of the median's 95%
			   * confidence interval / median at the end */
} ts_timing;

/* Calls fn(arg) warmup times, then repeat times `number` calls, timing each
 * group.  fn returns 0 on success; a non-zero return stops the run with an
 * error naming the warmup call or repeat index.  warmup 0..TS_TIME_MAX_REPEATS,
 * repeat 1..TS_TIME_MAX_REPEATS, number 1..TS_TIME_MAX_NUMBER, so a run is
 * bounded.  *out is zeroed on error.  A NULL ctx gives TS_ERR_INVALID
 * (nothing to record the message in). */
ts_status ts_time_run(ts_ctx *ctx, int (*fn)(void *), void *arg, int warmup, int repeat,
		      int number, ts_timing *out);

/* Options of ts_time_run_stable; ts_time_opts_default() gives sensible
 * ones (5 to 10000 repeats, 1 s, 2%, up to 20 warm-up groups). */
typedef struct ts_time_opts {
	int min_repeats;   /* >= 1: samples always taken unless the budget ends */
	int max_repeats;   /* >= min_repeats, <= TS_TIME_MAX_REPEATS */
	double budget_s;   /* > 0: wall time for warm-up and samples together;
			    * at least one sample is always taken */
	double target_rel; /* >= 0: stop once the median's 95% confidence
			    * interval is within +-target_rel of it (0: never,
			    * run to max_repeats or the budget) */
	int number;        /* >= 1 calls per sample (their mean is the sample) */
	int max_warmup;    /* >= 0 warm-up groups of `number` calls at most */
	double warmup_rel; /* > 0: warm-up ends when two consecutive groups'
			    * times differ by at most this fraction */
	/* The clock, in nanoseconds; NULL: ts_now_ns.  Tests inject a fake
	 * clock so that the protocol does not depend on the machine. */
	uint64_t (*clock_ns)(void *clock_arg);
	void *clock_arg;
} ts_time_opts;

#define TS_TIME_MAX_REPEATS (1 << 20) /* also the most warm-up calls or groups */
#define TS_TIME_MAX_NUMBER (1 << 16)  /* most calls per sample */

ts_time_opts ts_time_opts_default(void);

/* The adaptive protocol: warm-up groups of o->number calls until two
 * consecutive ones agree within warmup_rel (or max_warmup groups), then
 * samples until, with at least min_repeats of them, the median's 95%
 * confidence interval (order statistics) is within +-target_rel; stopped
 * by max_repeats or the budget (then TS_TIMING_UNSTABLE is set).  *out
 * gets ts_timing_from_samples of the samples, warmups and rel_ci.  A
 * non-zero return of fn stops the run with an error naming the warm-up
 * call or the repeat index; *out is zeroed on error.  A NULL ctx gives
 * TS_ERR_INVALID. */
ts_status ts_time_run_stable(ts_ctx *ctx, int (*fn)(void *), void *arg, const ts_time_opts *o,
			     ts_timing *out);

/* Summarizes samples s[0..n), in seconds (the millisecond grid of
 * TS_TIMING_QUANTIZED assumes it), into *out: min, median, mean, max,
 * population standard deviation, n, percentiles, MAD and the quality
 * flags.  Every timer (ts_time_run, ts_time_run_stable, ts_cuda_time)
 * reports through this one function.  A NaN sample sorts above every
 * number (so max, and the percentiles it reaches, are NaN), whatever its
 * place in s.  No samples (s NULL or n < 1), or no
 * memory for a sorted copy, give NaN statistics, 0 samples and
 * TS_TIMING_FEW; a NULL out is ignored. */
void ts_timing_from_samples(const double *s, int n, ts_timing *out);

/* Writes into buf (size n) why t's samples are flagged, or "steady" when
 * they are not, e.g. "bimodal timings (6 samples near 2.1 ms, 9 near
 * 8.0 ms)"; several reasons are joined by "; ".  Returns buf ("" when t is
 * NULL; nothing is written when buf is NULL or n is 0). */
const char *ts_timing_verdict(const ts_timing *t, char *buf, size_t n);

/* The median of v[0..n) (mean of the middle two for even n), from a sorted
 * copy; v is unchanged.  NaN when n <= 0, v is NULL, a value is NaN or the
 * copy cannot be made. */
double ts_median(const double *v, int n);

/* Cold-cache timing, as a layer of a network meets its data: the buffers
 * of a call (`bytes` in all) copied into this many sets, and the calls
 * rotating among them, so each call finds its inputs mostly out of cache.
 * Enough sets for about 32 MiB where the buffers total under 8 MiB, at
 * most TS_COLD_MAX_SETS; 1 for larger buffers, and for a bytes below 1
 * or NaN.  tessera-bench and the tuner (ts_tune) both time this way, so
 * a tuned schedule wins under the conditions it is judged in (with its
 * data in cache, a 1x1 convolution of ResNet-50 ran 20-35% faster than
 * cold, and the candidates ranked differently). */
#define TS_COLD_MAX_SETS 16
int ts_cold_sets(double bytes);

/* Wall time of each phase of one compilation, in milliseconds; a phase a
 * backend does not have stays 0. */
typedef struct ts_phase_times {
	double lower_ms;      /* schedule to loop IR, with its passes */
	double llvm_build_ms; /* loop IR to LLVM IR */
	double optimize_ms;   /* LLVM optimization pipeline */
	double codegen_ms;    /* LLVM IR to machine code */
	double nvrtc_ms;      /* CUDA C to PTX */
	double total_ms;
} ts_phase_times;

/* "lower 0.41 ms, llvm ir 0.83 ms, opt 12.1 ms, machine code 9.7 ms,
 * total 23.0 ms": zero phases are left out, total never is.  Below 1 ms two
 * decimals, else one; from 1e9 ms (and NaN, infinities) three digits with
 * an exponent.  The string lives in ctx's arena (NULL if out of
 * memory, for a NULL ctx, and with an error for NULL times). */
const char *ts_phase_times_str(ts_ctx *ctx, const ts_phase_times *t);

#ifdef __cplusplus
}
#endif

#endif
