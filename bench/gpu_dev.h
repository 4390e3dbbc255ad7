/*
 * gpu_dev.h - what the GPU kernels of tessera-bench (gpu.c: tessera,
 * gpu_libs.c: cuBLAS and cuDNN) share: a device handle and device copies
 * of the runner's buffer sets.
 *
 * The runner's buffers are host arrays; each GPU kernel copies every
 * set's inputs to the device in bind (outside the timed region) and the
 * output back in sync, so the timed calls see only device memory, as a
 * network running on the GPU would.  Every failure is reported with the
 * call that failed.
 */
#ifndef TESSERA_BENCH_GPU_DEV_H
#define TESSERA_BENCH_GPU_DEV_H

#include "bench.h"
#include "cuda_driver.h"

#define GPU_MAX_SETS 64

typedef struct gpu_dev {
	const char *who;  /* "tessera", "cublas", "cudnn": prefixes messages */
	ts_ctx *ctx;
	ts_cuda *cuda;
	int nsets;
	ts_array *arr[GPU_MAX_SETS][3]; /* in0, in1, out per set (device) */
} gpu_dev;

/* Opens device 0 for `who`; BENCH_ERROR with the reason in err. */
int gpu_dev_open(gpu_dev *d, const char *who, char *err, size_t n);
/* Device arrays for every set of k, inputs copied, outputs filled with
 * NaN (so a kernel that writes nothing fails the check). */
int gpu_dev_bind(gpu_dev *d, bench_kernel *k, char *err, size_t n);
/* Copies set i's output to the host; 0, or -1 with a message on stderr. */
int gpu_dev_sync(gpu_dev *d, bench_kernel *k, int i);
/* Waits for the launched work; 0, or -1 with a message on stderr. */
int gpu_dev_wait(gpu_dev *d);
/* Frees the device arrays, the handle and the context (idempotent). */
void gpu_dev_close(gpu_dev *d);
/* The device address of a device array, as the libraries take it. */
void *gpu_dev_ptr(const ts_array *a);

/* BENCH_SKIP unless the target is cuda and the problem is one of `ops`
 * (a bit per bench_op); err says why. */
int gpu_applies(const char *who, const bench_problem *p, unsigned ops, const bench_opts *o,
		char *err, size_t n);

#endif
