/*
 * peak.c - the machine's measured fp32 FMA peak, the yardstick for "% of
 * peak".
 *
 * Each thread runs NCHAIN independent vector FMA chains, well beyond the
 * FMA latency times the number of FMA ports of current x86 cores, so the
 * loop is throughput bound.  The widest ISA the CPU supports is picked
 * at run time (__builtin_cpu_supports) and compiled per function with a
 * target attribute, so this file needs no -march flag and the binary runs
 * on any x86-64.  The peak comes from many short samples (a few ms each,
 * all threads starting each sample together, the slowest counting), like
 * the kernel calls it is compared with, so a machine whose CPU time is
 * rationed in bursts gives the peak of such bursts.
 */
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "bench.h"
#include "timer.h"

#define NCHAIN 24
/* Fully unrolled loops over the chains keep every accumulator in a
 * register (-O2 alone leaves them in memory). */
#define UNROLL _Pragma("GCC unroll 32")

#define NSAMPLES 41
#define MAXT 256

typedef struct peak_arg {
	long iters;
	const char *isa;
	float sink;
	pthread_barrier_t *start;
	double seconds[NSAMPLES];
} peak_arg;

__attribute__((target("avx512f,fma"))) static float chains_avx512(long iters)
{
	__m512 acc[NCHAIN];
	const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-6f);
	UNROLL
	for (int i = 0; i < NCHAIN; i++)
		acc[i] = _mm512_set1_ps((float)i);
	for (long it = 0; it < iters; it++) {
		UNROLL
	for (int i = 0; i < NCHAIN; i++)
			acc[i] = _mm512_fmadd_ps(acc[i], m, c);
	}
	float s = 0;
	UNROLL
	for (int i = 0; i < NCHAIN; i++)
		s += _mm512_reduce_add_ps(acc[i]);
	return s;
}

__attribute__((target("avx2,fma"))) static float chains_avx2(long iters)
{
	__m256 acc[NCHAIN];
	const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-6f);
	UNROLL
	for (int i = 0; i < NCHAIN; i++)
		acc[i] = _mm256_set1_ps((float)i);
	for (long it = 0; it < iters; it++) {
		UNROLL
	for (int i = 0; i < NCHAIN; i++)
			acc[i] = _mm256_fmadd_ps(acc[i], m, c);
	}
	float out[8], s = 0;
	UNROLL
	for (int i = 0; i < NCHAIN; i++) {
		_mm256_storeu_ps(out, acc[i]);
		for (int l = 0; l < 8; l++)
			s += out[l];
	}
	return s;
}

/* Without FMA: a multiply and an add per lane, counted as two flops. */
static float chains_sse(long iters)
{
	__m128 acc[NCHAIN];
	const __m128 m = _mm_set1_ps(0.999999f), c = _mm_set1_ps(1e-6f);
	UNROLL
	for (int i = 0; i < NCHAIN; i++)
		acc[i] = _mm_set1_ps((float)i);
	for (long it = 0; it < iters; it++) {
		UNROLL
	for (int i = 0; i < NCHAIN; i++)
			acc[i] = _mm_add_ps(_mm_mul_ps(acc[i], m), c);
	}
	float out[4], s = 0;
	UNROLL
	for (int i = 0; i < NCHAIN; i++) {
		_mm_storeu_ps(out, acc[i]);
		for (int l = 0; l < 4; l++)
			s += out[l];
	}
	return s;
}

static const char *best_isa(void)
{
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma"))
		return "avx512f";
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return "avx2+fma";
	return "sse";
}

static bool is_avx512(const char *isa)
{
	return strcmp(isa, "avx512f") == 0;
}

static bool is_avx2(const char *isa)
{
	return strcmp(isa, "avx2+fma") == 0;
}

static int isa_lanes(const char *isa)
{
	return is_avx512(isa) ? 16 : is_avx2(isa) ? 8 : 4;
}

static float run_chains(const char *isa, long iters)
{
	if (is_avx512(isa))
		return chains_avx512(iters);
	if (is_avx2(isa))
		return chains_avx2(iters);
	return chains_sse(iters);
}

/* NSAMPLES short runs, all threads starting each one together. */
static void *peak_thread(void *p)
{
	peak_arg *a = p;
	for (int i = 0; i < NSAMPLES; i++) {
		pthread_barrier_wait(a->start);
		uint64_t t0 = ts_now_ns();
		a->sink += run_chains(a->isa, a->iters);
		a->seconds[i] = ts_ms_since(t0) / 1e3;
	}
	return NULL;
}

/* Iterations for about `seconds` on one thread, from a short trial. */
static long calibrate(const char *isa, double seconds)
{
	long iters = 1 << 12;
	for (;;) {
		uint64_t t0 = ts_now_ns();
		volatile float s = run_chains(isa, iters);
		(void)s;
		double t = ts_ms_since(t0) / 1e3;
		if (t > 0.005 || iters > (1L << 40))
			return (long)((double)iters * seconds / (t > 0 ? t : 1e-9)) + 1;
		iters *= 2;
	}
}

/* GFLOP/s of `threads` threads running `iters` each, from the best sample
 * (the time of its slowest thread): a peak is what the machine can do, and
 * a shared machine only ever makes a sample slower. */
static double measure(const char *isa, long iters, int threads)
{
	static peak_arg args[MAXT];
	pthread_t tid[MAXT];
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, (unsigned)threads);
	for (int t = 0; t < threads; t++)
		args[t] = (peak_arg){.iters = iters, .isa = isa, .start = &start};
	for (int t = 1; t < threads; t++)
		pthread_create(&tid[t], NULL, peak_thread, &args[t]);
	peak_thread(&args[0]);
	for (int t = 1; t < threads; t++)
		pthread_join(tid[t], NULL);
	pthread_barrier_destroy(&start);
	double best = INFINITY;
	for (int i = 0; i < NSAMPLES; i++) {
		double worst = 0;
		for (int t = 0; t < threads; t++)
			worst = fmax(worst, args[t].seconds[i]);
		best = fmin(best, worst);
	}
	double flops = 2.0 * NCHAIN * isa_lanes(isa) * (double)iters * threads;
	return flops / best / 1e9;
}

bench_peak bench_measure_peak(int threads, double seconds)
{
	bench_peak pk = {.threads = threads < MAXT ? threads : MAXT, .isa = best_isa()};
	long iters = calibrate(pk.isa, seconds / NSAMPLES / 2);
	pk.gflops_1 = measure(pk.isa, iters, 1);
	pk.gflops_all = pk.threads > 1 ? measure(pk.isa, iters, pk.threads) : pk.gflops_1;
	return pk;
}
