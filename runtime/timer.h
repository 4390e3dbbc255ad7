/*
 * timer.h - monotonic clock, a repeat-and-average time evaluator, and the
 * per-phase times of a compilation.
 *
 * ts_time_run follows the usual protocol for timing small kernels: `warmup`
 * untimed calls, then `repeat` samples, each the mean time per call over
 * `number` consecutive calls (so one sample is long enough for the clock),
 * summarized as min, median, mean, max and standard deviation.  It measures;
 * it never judges, so tests assert its statistics, never its speed.
 */
#ifndef TESSERA_RUNTIME_TIMER_H
#define TESSERA_RUNTIME_TIMER_H

#include <stdint.h>

#include "ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Nanoseconds of CLOCK_MONOTONIC (an arbitrary origin, never goes back). */
uint64_t ts_now_ns(void);
/* Milliseconds elapsed since a ts_now_ns() reading. */
double ts_ms_since(uint64_t start_ns);

/* Summary of ts_time_run and ts_cuda_time, in seconds per call. */
typedef struct ts_timing {
	double min, median, mean, max;
	double stddev;  /* population standard deviation of the samples */
	int samples;    /* = repeat */
} ts_timing;

/* Calls fn(arg) warmup times, then repeat times `number` calls, timing each
 * group.  fn returns 0 on success; a non-zero return stops the run with an
 * error naming the warmup call or repeat index.  warmup >= 0, repeat >= 1,
 * number >= 1.  *out is zeroed on error.  A NULL ctx gives TS_ERR_INVALID
 * (nothing to record the message in). */
ts_status ts_time_run(ts_ctx *ctx, int (*fn)(void *), void *arg, int warmup, int repeat,
		      int number, ts_timing *out);

/* Summarizes samples s[0..n) (in the unit wanted) into *out: min, median,
 * mean, max, population standard deviation, n.  Every timer (ts_time_run,
 * ts_cuda_time) reports through this one function.  No samples (s NULL or
 * n < 1) give NaN statistics and 0 samples; a NULL out is ignored. */
void ts_timing_from_samples(const double *s, int n, ts_timing *out);

/* The median of v[0..n) (mean of the middle two for even n), from a sorted
 * copy; v is unchanged.  NaN when n <= 0, v is NULL or the copy cannot be
 * made. */
double ts_median(const double *v, int n);

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
 * decimals, else one.  The string lives in ctx's arena (NULL if out of
 * memory, for a NULL ctx, and with an error for NULL times). */
const char *ts_phase_times_str(ts_ctx *ctx, const ts_phase_times *t);

#ifdef __cplusplus
}
#endif

#endif
