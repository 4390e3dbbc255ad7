/*
 * gpu.c - the CUDA side of tessera-bench: whether --target cuda can run, and
 * the cuBLAS / cuDNN baselines.
 *
 * Nothing here links against CUDA: the driver (libcuda.so.1) is opened with
 * dlopen only to tell "no driver" from "no device".  The GPU kernels
 * (tessera through runtime/cuda.h, cuBLAS from libcublas.so.13/.12, cuDNN
 * from libcudnn.so.9) are not wired in yet, so --target cuda stops with a
 * message saying which of these is missing.
 */
#include <dlfcn.h>

#include "bench.h"

typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_count_fn)(int *);

/* Number of CUDA devices the driver reports; -1 with why when there is no
 * usable driver. */
static int cuda_device_count(char *why, size_t n)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(why, n, "no CUDA device: the CUDA driver (libcuda.so.1) is not installed");
		return -1;
	}
	cu_init_fn init = (cu_init_fn)dlsym(h, "cuInit");
	cu_count_fn count = (cu_count_fn)dlsym(h, "cuDeviceGetCount");
	int devices = 0;
	if (!init || !count || init(0) != 0 || count(&devices) != 0)
		devices = 0;
	dlclose(h);
	if (devices == 0)
		snprintf(why, n, "no CUDA device: the driver reports no usable GPU");
	return devices;
}

int bench_gpu_available(char *why, size_t n)
{
	if (cuda_device_count(why, n) <= 0)
		return 0;
	snprintf(why, n, "no CUDA device support: a GPU is present, but tessera-bench does not "
		 "time GPU kernels yet");
	return 0;
}

static int gpu_skip(const char *lib, const bench_opts *o, char *err, size_t n)
{
	if (o->target != BENCH_CUDA)
		snprintf(err, n, "%s runs with --target cuda only", lib);
	else
		snprintf(err, n, "%s: not available in this build", lib);
	return BENCH_SKIP;
}

int bench_make_tessera_cuda(const bench_problem *p, const bench_opts *o, bench_kernel *k,
			    char *err, size_t n)
{
	(void)p;
	(void)k;
	return gpu_skip("tessera", o, err, n);
}

int bench_make_cublas(const bench_problem *p, const bench_opts *o, bench_kernel *k,
		      char *err, size_t n)
{
	(void)p;
	(void)k;
	return gpu_skip("cublas", o, err, n);
}

int bench_make_cudnn(const bench_problem *p, const bench_opts *o, bench_kernel *k, char *err,
		     size_t n)
{
	(void)p;
	(void)k;
	return gpu_skip("cudnn", o, err, n);
}
