/*
 * bench.h - tessera-bench: generated GEMM, conv2d and depthwise kernels
 * against the libraries a user would otherwise call (naive C, OpenBLAS,
 * oneDNN, cuBLAS, cuDNN), on the same buffers, in the same run.
 *
 * The pieces, one file each:
 *   cli.c       command line -> bench_opts, the problem tables
 *   naive.c     plain C reference kernels (built at -O3)
 *   peak.c      the machine's fp32 FMA peak (independent FMA chains)
 *   tessera_impl.c  build, schedule, lower and compile the tessera kernels
 *   libs.c      OpenBLAS and oneDNN kernels
 *   gpu.c       the CUDA side: is there a GPU, device buffers, tessera on it
 *   gpu_libs.c  cuBLAS and cuDNN (opened with dlopen)
 *   runner.c    buffers, correctness check, timing protocol
 *   dense.c     the `dense` command: fused dense layer vs separate kernels
 *   symbolic.c  the `symbolic` command: a GEMM over size variables vs its twins
 *   report.c    table, JSON and gnuplot chart
 *   softmax.c   `softmax`: the softmax schedule against unscheduled and naive C
 *   reduce.c    `reduce`: float sums, rfactor + vectorize + parallel against
 *               unscheduled and naive C
 *
 * Every kernel computes one problem on a "buffer set" (inputs and output as
 * tessera host arrays); when a problem fits in cache the runner rotates over
 * several sets so successive calls see cold-ish data.
 */
#ifndef TESSERA_BENCH_BENCH_H
#define TESSERA_BENCH_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "array.h"
#include "schedule.h"
#include "timer.h"

/* Exit codes of tessera-bench. */
enum {
	BENCH_EXIT_OK = 0,
	BENCH_EXIT_FAILED = 1, /* a kernel gave a wrong result or failed to run */
	BENCH_EXIT_USAGE = 2,  /* bad command line */
	BENCH_EXIT_DEVICE = 3  /* --target cuda without a usable GPU */
};

/* Return codes of the kernel constructors. */
enum { BENCH_OK = 0, BENCH_ERROR = -1, BENCH_SKIP = 1 };

typedef enum bench_op { BENCH_GEMM, BENCH_CONV2D, BENCH_DEPTHWISE } bench_op;
typedef enum bench_target { BENCH_CPU, BENCH_CUDA } bench_target;
typedef enum bench_cmd {
	BENCH_CMD_GEMM, BENCH_CMD_CONV2D, BENCH_CMD_DENSE, BENCH_CMD_SUMMARY, BENCH_CMD_PEAK,
	BENCH_CMD_SOFTMAX, BENCH_CMD_REDUCE, BENCH_CMD_DEPTHWISE, BENCH_CMD_SYMBOLIC,
	BENCH_CMD_HELP
} bench_cmd;

/* Implementation names, in table order. */
#define BENCH_IMPLS(X)                                                         \
	X(TESSERA, "tessera")                                                  \
	X(NAIVE, "naive")                                                      \
	X(OPENBLAS, "openblas")                                                \
	X(ONEDNN, "onednn")                                                    \
	X(CUBLAS, "cublas")                                                    \
	X(CUDNN, "cudnn")
#define BENCH_IMPL_ENUM(id, name) BENCH_IMPL_##id,
typedef enum bench_impl { BENCH_IMPLS(BENCH_IMPL_ENUM) BENCH_NIMPL } bench_impl;
#undef BENCH_IMPL_ENUM
extern const char *const bench_impl_names[BENCH_NIMPL];

/* C[M, N] = A[M, K] B[K, N], row-major. */
typedef struct bench_gemm { int64_t M, N, K; } bench_gemm;
/* The element type of a GEMM's A and B (--dtype): float32 everywhere, or
 * float16 / bfloat16 into a float32 C, or float32 multiplied as TF32
 * (tessera's tensor-core GEMM and cublasGemmEx, --target cuda only).  C is
 * float32 in all four. */
typedef enum bench_dtype { BENCH_F32, BENCH_F16, BENCH_BF16, BENCH_TF32 } bench_dtype;
/* Y[N, K, OH, OW] = conv(X[N, C, H, W], W[K, C, R, S]), NCHW / OIHW, the
 * same stride and padding in both spatial dimensions. */
typedef struct bench_conv { int64_t N, C, H, W, K, R, S, stride, pad; } bench_conv;
/* BENCH_DEPTHWISE problems are bench_conv with K = C (multiplier 1): the
 * weights are W[C, 1, R, S] and channel c convolves input channel c only
 * (a convolution with groups = C). */

typedef struct bench_problem {
	bench_op op;
	char name[40];  /* "bert.ffn1", "res2_3x3", "sq512", ... */
	bench_gemm g;   /* BENCH_GEMM */
	bench_conv c;   /* BENCH_CONV2D, BENCH_DEPTHWISE */
	bench_dtype dtype; /* BENCH_GEMM: A's and B's type; BENCH_F32 for the others */
} bench_problem;

#define BENCH_MAX_PROBLEMS 64
#define BENCH_MAX_THREADS 1024      /* tessera's thread pool has at most this many */
#define BENCH_MAX_REPEAT (1 << 20)

typedef struct bench_opts {
	bench_cmd cmd;
	int nproblems;
	bench_problem problems[BENCH_MAX_PROBLEMS];
	int threads;          /* >= 1 */
	bench_target target;
	int repeat;           /* 0: automatic (>= 0.2 s and >= 5 samples) */
	const char *json;     /* NULL: no JSON */
	const char *plot;     /* NULL: no chart */
	unsigned impls;       /* bit per bench_impl; 0: every one that applies */
	bool list_layers;     /* --layer list: print the layer table and stop */
	bool flush_l2;        /* --flush-l2: cold GPU L2 before each timed call */
	const char *tuned;    /* --tuned LOG: tessera's CPU kernels from a tuning log */
	bench_dtype dtype;    /* --dtype; the parser copies it into every GEMM problem */
} bench_opts;

/* ---- softmax.c ------------------------------------------------------------------ */

/* Runs `tessera-bench softmax` (its own table); a BENCH_EXIT_ code. */
int bench_softmax(const bench_opts *o);

/* ---- reduce.c ------------------------------------------------------------------- */

/* Runs `tessera-bench reduce` (its own table); a BENCH_EXIT_ code. */
int bench_reduce(const bench_opts *o);
/* C[i] = sum_k A[i, k] for a 2-D A. */
ts_tensor *bench_reduce_graph(ts_ctx *ctx, ts_tensor *A);
/* reduce's schedule of that graph: k split by 16, the 16 lanes factored
 * out with rfactor and vectorized, rows in parallel; with fewer than 4
 * rows per thread the rest of k is factored again into 64 parallel
 * chunks. */
ts_status bench_schedule_reduce(ts_schedule *s, ts_tensor *C, int threads);

/* ---- cli.c ------------------------------------------------------------------ */

/* Parses argv into *o (defaults filled in).  Returns 0, or -1 with a
 * one-line message in err naming the argument and the rule broken. */
int bench_parse_args(int argc, char **argv, bench_opts *o, char *err, size_t errlen);
/* Refuses --json and --plot paths that cannot be written, and a --tuned
 * log that cannot be read or is malformed (0, or -1 with err set), so
 * that a long run does not end in an unwritable file. */
int bench_check_outputs(const bench_opts *o, char *err, size_t errlen);
void bench_usage(FILE *f);
/* The ResNet-50 layers, or with depthwise the MobileNet-v2 depthwise ones. */
void bench_print_layers(FILE *f, bool depthwise);
/* The ResNet-50 layer `name` (batch 1) into *c: 0, or -1 if unknown. */
int bench_find_layer(const char *name, bench_conv *c);
/* The MobileNet-v2 depthwise 3x3 layer `name` ("dw1".."dw10", batch 1,
 * pad 1) into *c (K = C): 0, or -1 if unknown. */
int bench_find_dw_layer(const char *name, bench_conv *c);
/* Output extent of a convolution. */
int64_t bench_conv_out(int64_t in, int64_t k, int64_t stride, int64_t pad);
/* 2 M N K, 2 N K OH OW C R S, or (depthwise) 2 N C OH OW R S. */
double bench_flops(const bench_problem *p);
/* "512x512x512" / "1x64x56x56 k64 3x3 s1 p1" into buf. */
const char *bench_shape_str(const bench_problem *p, char *buf, size_t n);
const char *bench_op_name(bench_op op);
/* "f32", "f16", "bf16" (as --dtype takes them), and the tessera type. */
const char *bench_dtype_name(bench_dtype t);
ts_dtype bench_dtype_ts(bench_dtype t);
bool bench_impl_selected(const bench_opts *o, bench_impl i);
/* The GPU part of `summary`: o with --target cuda and the GPU summary
 * problems (squares 1024..4096, ResNet-50's 3x3 layers).  0, or -1. */
int bench_gpu_summary_opts(const bench_opts *o, bench_opts *gpu);

/* ---- naive.c ------------------------------------------------------------------ */

void bench_naive_gemm(int64_t M, int64_t N, int64_t K, const float *A, const float *B,
		      float *C);
void bench_naive_conv(const bench_conv *c, const float *X, const float *W, float *Y);
/* Y[n, c] = X[n, c] convolved with W[c, 0] (K = C). */
void bench_naive_depthwise(const bench_conv *c, const float *X, const float *W, float *Y);
/* Y = softmax of each row of X[rows, cols] (max, exp, sum, times 1/sum). */
void bench_naive_softmax(int64_t rows, int64_t cols, const float *X, float *Y);
/* Y[r] = sum_k X[r, k], one float accumulator per row. */
void bench_naive_row_sum(int64_t rows, int64_t cols, const float *X, float *Y);
/* Unfolds X[n] into cols[C*R*S, OH*OW] so that a GEMM W[K, CRS] x cols
 * gives Y[n] (the classic im2col convolution). */
void bench_im2col(const bench_conv *c, const float *Xn, float *cols);

/* ---- peak.c ----------------------------------------------------------------------- */

typedef struct bench_peak {
	double gflops_1;    /* one core */
	double gflops_all;  /* `threads` cores */
	int threads;
	const char *isa;    /* "avx512f", "avx2+fma" or "sse" */
} bench_peak;

/* Measures the fp32 FMA peak with independent FMA chains, for about
 * `seconds` per measurement. */
bench_peak bench_measure_peak(int threads, double seconds);

/* ---- kernels ------------------------------------------------------------------------ */

/* One problem's data: in0/in1 = A/B or X/W, out = C or Y (host arrays). */
typedef struct bench_bufs { ts_array *in0, *in1, *out; } bench_bufs;

typedef struct bench_kernel bench_kernel;
struct bench_kernel {
	bench_impl impl;
	const bench_problem *p;
	int threads;          /* the threads this kernel really uses */
	double compile_ms;    /* < 0 when not applicable */
	int nsets;
	bench_bufs *sets;     /* set by the runner before bind */
	/* Optional: prepares per-set state outside the timed region (layout
	 * reorders); err gets a message on failure. */
	int (*bind)(bench_kernel *k, char *err, size_t n);
	/* Computes set `i`; 0 on success. */
	int (*run)(bench_kernel *k, int i);
	/* Optional: brings set i's output back to the plain layout. */
	int (*sync)(bench_kernel *k, int i);
	/* GPU kernels: starts set i's work on `cuda`'s default stream without
	 * waiting (run = enqueue + synchronize); 0 on success.  The runner
	 * then times with CUDA events (bench_gpu_time), the same for tessera,
	 * cuBLAS and cuDNN.  NULL for CPU kernels. */
	int (*enqueue)(bench_kernel *k, int i);
	struct ts_cuda *cuda;
	void (*free)(bench_kernel *k);
	void *state;
};

/* Constructors: BENCH_OK with *k filled, BENCH_SKIP when the
 * implementation does not cover this problem or target (err says why), or
 * BENCH_ERROR with the message in err. */
typedef int (*bench_make_fn)(const bench_problem *p, const bench_opts *o, bench_kernel *k,
			     char *err, size_t n);
int bench_make_naive(const bench_problem *p, const bench_opts *o, bench_kernel *k, char *err,
		     size_t n);
int bench_make_tessera(const bench_problem *p, const bench_opts *o, bench_kernel *k,
		       char *err, size_t n);
int bench_make_openblas(const bench_problem *p, const bench_opts *o, bench_kernel *k,
			char *err, size_t n);
int bench_make_onednn(const bench_problem *p, const bench_opts *o, bench_kernel *k,
		      char *err, size_t n);
/* libs.c: C = A B of a GEMM in double (OpenBLAS dgemm on `threads`
 * threads) from A's and B's elements of any float type, widened exactly,
 * then rounded to float into C: the reference of the 16-bit GEMMs.  0, or
 * -1 when out of memory. */
int bench_gemm_ref_f64(const bench_gemm *g, const ts_array *A, const ts_array *B, float *C,
		       int threads);
/* gpu.c: the tessera kernel on the GPU (--target cuda). */
int bench_make_tessera_cuda(const bench_problem *p, const bench_opts *o, bench_kernel *k,
			    char *err, size_t n);
int bench_make_cublas(const bench_problem *p, const bench_opts *o, bench_kernel *k,
		      char *err, size_t n);
int bench_make_cudnn(const bench_problem *p, const bench_opts *o, bench_kernel *k,
		     char *err, size_t n);

/* tessera_impl.c: the problem's operator, scheduled as tessera-bench
 * schedules it and lowered (no code generation); NULL with the error in
 * ctx. */
ts_func *bench_tessera_lower(ts_ctx *ctx, const bench_problem *p);

/* gpu.c: the same operators with the library's GPU schedules on plain
 * layouts (row-major GEMM, NCHW/OIHW conv2d), lowered. */
ts_func *bench_tessera_cuda_lower(ts_ctx *ctx, const bench_problem *p);

/* gpu.c: 1 when --target cuda can run, with the device ("NAME (sm_XY)")
 * in why; else 0 with the reason in why. */
int bench_gpu_available(char *why, size_t n);
/* gpu.c: times a GPU kernel (k->enqueue and k->cuda set) with
 * ts_cuda_time: `warmup` untimed calls, then one CUDA event pair around
 * each of `repeat` calls, rotating over the buffer sets, with the L2
 * written between calls when flush_l2.  0, or -1 with the error in ctx. */
int bench_gpu_time(ts_ctx *ctx, bench_kernel *k, int warmup, int repeat, bool flush_l2,
		   ts_timing *out);
/* gpu_libs.c: 1 when `lib` ("cublas" or "cudnn") loads and has every
 * symbol tessera-bench calls; else 0 with why naming the library or the
 * missing symbol.  Needs no GPU. */
int bench_gpu_lib_check(const char *lib, char *why, size_t n);

/* ---- runner.c ------------------------------------------------------------------------- */

typedef enum bench_status { BENCH_ROW_OK, BENCH_ROW_FAILED, BENCH_ROW_SKIPPED } bench_status;

typedef struct bench_result {
	const bench_problem *p;
	bench_impl impl;
	int threads;
	bench_target target;
	double median_ms;     /* NaN unless ok */
	double min_ms, mean_ms, stddev_ms; /* of the same samples; NaN unless ok */
	bool flush_l2;        /* timed with a cold GPU L2 (--flush-l2) */
	double gflops;
	double compile_ms;    /* < 0: n/a */
	double pct_peak;
	double max_rel_err;   /* vs the reference, NaN if not checked */
	int samples;
	bench_status status;
	char note[160];       /* why failed or skipped */
	double p10_ms, p90_ms; /* of the same samples; NaN unless ok */
	int warmups;          /* warm-up calls before the samples */
	unsigned flags;       /* TS_TIMING_ bits of the samples; 0: clean */
	char verdict[200];    /* ts_timing_verdict when flagged, else "" */
} bench_result;

/* Relative tolerance of the correctness check (fp32; also the 16-bit
 * GEMMs', whose products are exact in fp32 and accumulate in it, checked
 * against the double product of the same 16-bit inputs). */
#define BENCH_RTOL 1e-3

/* Runs every selected implementation on every problem of o, appending to
 * res (capacity cap); returns the number of results. */
int bench_run_all(const bench_opts *o, const bench_peak *peak, bench_result *res, int cap);
/* max |got - want| / max |want| (0/0 counts as 0). */
double bench_rel_err(const float *got, const float *want, int64_t n);
/* The timing options of a CPU row: `repeat` > 0 (--repeat) gives exactly
 * that many samples; 0 adapts to a sample of sample_s seconds (>= 0.1 s
 * and >= 5 samples, <= 1 s of them, median stable to 1%).  `warmup`
 * caps the warm-up groups (0: none, else at least 2 so two can agree). */
ts_time_opts bench_time_opts(int repeat, double sample_s, int warmup);
/* Times fn(arg) into *tm as the main table's rows are (one call sizes the
 * sample, then ts_time_run_stable with --repeat); a NaN median when it
 * fails.  dense and symbolic time their kernels with it. */
void bench_time_call(ts_ctx *ctx, int (*fn)(void *), void *arg, const bench_opts *o,
		     ts_timing *tm);
/* Runs row(problem, o, arg, warn) for every problem of o, the rows' timing
 * warnings gathered and printed under them; returns how many rows failed
 * (returned non-zero).  dense and symbolic print their tables with it. */
typedef int (*bench_row_fn)(const bench_problem *p, const bench_opts *o, void *arg, FILE *warn);
int bench_problem_rows(const bench_opts *o, bench_row_fn row, void *arg);

/* ---- dense.c ---------------------------------------------------------------------------- */

/* `dense`: times relu(A B + bias) fused, as three kernels and as sgemm + a
 * C loop for every problem of o (GEMMs), printing one row each with the
 * ratios; returns the number of problems that failed. */
int bench_dense(const bench_opts *o);

/* ---- symbolic.c ------------------------------------------------------------------------- */

/* `symbolic`: one GEMM compiled over size variables, run on every problem
 * of o against its specialized twin, one row each with sym/spec; returns
 * the number of problems that failed (1 when it does not build). */
int bench_symbolic(const bench_opts *o);

/* ---- report.c ----------------------------------------------------------------------------- */

/* The table, then one warning line per flagged row (impl, op, problem,
 * verdict), then per baseline the geometric mean of tessera's ratios over
 * the problems where neither side is flagged, saying how many were left
 * out.  A ratio with a flagged side is printed with a '!'. */
void bench_print_table(FILE *f, const bench_result *r, int n);
/* " 12.345!" or " 12.345 ": v in fmt (which takes the width, e.g.
 * "%*.3f" or "%*.2fx"), then '!' when mark; "-" in the same room for a
 * NaN or negative v.  The tables mark flagged timings and their ratios so. */
void bench_print_marked(FILE *f, int width, const char *fmt, double v, bool mark);
/* "warning: IMPL OP PROBLEM: VERDICT: ratio not reliable" when tm is
 * flagged; nothing otherwise.  dense and softmax print these under their
 * tables. */
void bench_warn_timing(FILE *f, const char *impl, const char *op, const char *problem,
		       const ts_timing *tm);
/* 0 on success; -1 with a message on stderr. */
int bench_write_json(const char *path, const bench_result *r, int n);
/* The same, and 1 (with a note on stderr) when gnuplot is not installed. */
int bench_write_plot(const char *path, const bench_result *r, int n);

/* `tessera-bench model ...` (model.c): argv[0] is "model"; returns the exit
 * status. */
int bench_model_main(int argc, char **argv);

#endif
