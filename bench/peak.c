/*
 * peak.c - the machine's measured fp32 FMA peak, the yardstick for "% of
 * peak".
 *
 * Each thread runs NCHAIN independent vector FMA chains, enough to cover
 * the FMA latency times the number of FMA ports on current x86 cores, so
 * the loop is throughput bound.  The widest ISA the CPU supports is picked
 * at run time (__builtin_cpu_supports) and compiled per function with a
 * target attribute, so this file needs no -march flag and the binary runs
 * on any x86-64.  All threads start together and the peak is total flops
 * over the slowest thread's wall time.
 */
#include <immintrin.h>
#include <math.h>
#include <pthread.h>

#include "bench.h"
#include "timer.h"

#define NCHAIN 12

typedef struct peak_arg {
	long iters;
	const char *isa;
	float sink;
	pthread_barrier_t *start;
	double seconds;
} peak_arg;

__attribute__((target("avx512f,fma"))) static float chains_avx512(long iters)
{
	__m512 acc[NCHAIN];
	const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-6f);
	for (int i = 0; i < NCHAIN; i++)
		acc[i] = _mm512_set1_ps((float)i);
	for (long it = 0; it < iters; it++) {
		for (int i = 0; i < NCHAIN; i++)
			acc[i] = _mm512_fmadd_ps(acc[i], m, c);
	}
	float s = 0;
	for (int i = 0; i < NCHAIN; i++)
		s += _mm512_reduce_add_ps(acc[i]);
	return s;
}

__attribute__((target("avx2,fma"))) static float chains_avx2(long iters)
{
	__m256 acc[NCHAIN];
	const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-6f);
	for (int i = 0; i < NCHAIN; i++)
		acc[i] = _mm256_set1_ps((float)i);
	for (long it = 0; it < iters; it++) {
		for (int i = 0; i < NCHAIN; i++)
			acc[i] = _mm256_fmadd_ps(acc[i], m, c);
	}
	float out[8], s = 0;
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
	for (int i = 0; i < NCHAIN; i++)
		acc[i] = _mm_set1_ps((float)i);
	for (long it = 0; it < iters; it++) {
		for (int i = 0; i < NCHAIN; i++)
			acc[i] = _mm_add_ps(_mm_mul_ps(acc[i], m), c);
	}
	float out[4], s = 0;
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

static int isa_lanes(const char *isa)
{
	return isa[4] == '5' ? 16 : isa[0] == 'a' ? 8 : 4;
}

static float run_chains(const char *isa, long iters)
{
	if (isa[4] == '5')
		return chains_avx512(iters);
	if (isa[0] == 'a')
		return chains_avx2(iters);
	return chains_sse(iters);
}

static void *peak_thread(void *p)
{
	peak_arg *a = p;
	if (a->start)
		pthread_barrier_wait(a->start);
	uint64_t t0 = ts_now_ns();
	a->sink = run_chains(a->isa, a->iters);
	a->seconds = ts_ms_since(t0) / 1e3;
	return NULL;
}

/* Iterations for about `seconds` on one thread, from a short trial. */
static long calibrate(const char *isa, double seconds)
{
	long iters = 1 << 16;
	for (;;) {
		uint64_t t0 = ts_now_ns();
		volatile float s = run_chains(isa, iters);
		(void)s;
		double t = ts_ms_since(t0) / 1e3;
		if (t > 0.02 || iters > (1L << 40))
			return (long)((double)iters * seconds / (t > 0 ? t : 1e-9)) + 1;
		iters *= 4;
	}
}

/* GFLOP/s of `threads` threads running `iters` each. */
static double measure(const char *isa, long iters, int threads)
{
	enum { MAXT = 512 };
	if (threads > MAXT)
		threads = MAXT;
	pthread_t tid[MAXT];
	peak_arg args[MAXT];
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, (unsigned)threads);
	for (int t = 0; t < threads; t++)
		args[t] = (peak_arg){.iters = iters, .isa = isa, .start = &start};
	for (int t = 1; t < threads; t++)
		pthread_create(&tid[t], NULL, peak_thread, &args[t]);
	peak_thread(&args[0]);
	double worst = args[0].seconds;
	for (int t = 1; t < threads; t++) {
		pthread_join(tid[t], NULL);
		worst = fmax(worst, args[t].seconds);
	}
	pthread_barrier_destroy(&start);
	double flops = 2.0 * NCHAIN * isa_lanes(isa) * (double)iters * threads;
	return flops / worst / 1e9;
}

bench_peak bench_measure_peak(int threads, double seconds)
{
	bench_peak pk = {.threads = threads, .isa = best_isa()};
	long iters = calibrate(pk.isa, seconds);
	pk.gflops_1 = measure(pk.isa, iters, 1);
	pk.gflops_all = threads > 1 ? measure(pk.isa, iters, threads) : pk.gflops_1;
	return pk;
}
