/*
 * cuda_driver.h - the CUDA driver API, opened at run time: devices, device arrays,
 * modules, launches and timing with CUDA events.
 *
 * libcuda.so.1 comes with the NVIDIA driver, not the toolkit, so tessera
 * opens it with dlopen (TESSERA_CUDA_LIB names another file to open) and
 * works on machines without it: ts_cuda_open then returns NULL with
 * TS_ERR_NO_DEVICE and the CPU path is used.  Include this header as
 * "cuda_driver.h"; it never includes the toolkit's cuda.h (a
 * different name, so the two can never be confused).
 *
 * Every failed driver call is reported as
 *   cuda: <call and what it was for> failed: CUDA_ERROR_NAME (description)
 * with TS_ERR_NOMEM for device out-of-memory and TS_ERR_RUNTIME otherwise.
 * Device arrays are ts_arrays whose data is a CUdeviceptr; free them with
 * ts_cuda_array_free (ts_array_free frees only host memory).  A ts_cuda
 * must outlive its arrays and modules.
 *
 * Every call needs a context for its errors: with a NULL ctx it returns
 * NULL or TS_ERR_INVALID and records nothing.  The accessors
 * (ts_cuda_device_name, ts_cuda_arch, ts_cuda_compute_capability) give
 * NULL or 0 for a NULL handle.
 */
#ifndef TESSERA_RUNTIME_CUDA_H
#define TESSERA_RUNTIME_CUDA_H

#include "array.h"
#include "timer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a kernel is launched.  Unbound dimensions are 1. */
typedef struct ts_launch {
	int64_t grid[3];             /* blocks in x, y, z */
	int64_t block[3];            /* threads per block in x, y, z */
	/* dynamic shared memory: tessera's kernels take theirs this way when
	 * it is over 48 KB (then static_shared_bytes is 0), and need
	 * ts_cuda_kernel_allow_shared first */
	int64_t shared_bytes;
	int64_t static_shared_bytes; /* __shared__ arrays declared by the kernel */
} ts_launch;

typedef struct ts_cuda ts_cuda;
typedef struct ts_cuda_module ts_cuda_module;

/* A kernel of a loaded module; valid while the module is loaded. */
typedef struct ts_cuda_kernel {
	ts_cuda *cuda;
	void *fn; /* CUfunction */
	char name[64];
} ts_cuda_kernel;

/* Opens device 0 (its primary context).  NULL with TS_ERR_NO_DEVICE when
 * there is no driver library or no device. */
ts_cuda *ts_cuda_open(ts_ctx *ctx);
void ts_cuda_close(ts_cuda *cuda);
/* The device's name; NULL for a NULL cuda (as ts_cuda_arch). */
const char *ts_cuda_device_name(const ts_cuda *cuda);
/* "sm_90" for compute capability 9.0. */
const char *ts_cuda_arch(const ts_cuda *cuda);
void ts_cuda_compute_capability(const ts_cuda *cuda, int *major, int *minor);

/* A zeroed device array; NULL on a bad shape or out of device memory. */
ts_array *ts_cuda_array_new(ts_ctx *ctx, ts_cuda *cuda, ts_dtype t, int ndim,
			    const int64_t *shape);
/* Frees a device array (a host array is passed to ts_array_free). */
void ts_cuda_array_free(ts_array *a);
/* Copies between arrays of the same dtype and shape. */
ts_status ts_cuda_copy_to_device(ts_ctx *ctx, ts_array *dev, const ts_array *host);
ts_status ts_cuda_copy_to_host(ts_ctx *ctx, ts_array *host, const ts_array *dev);

/* Loads a CUBIN or PTX image (as from cg_nvrtc_compile). */
ts_cuda_module *ts_cuda_module_load(ts_ctx *ctx, ts_cuda *cuda, const void *image, size_t size);
void ts_cuda_module_unload(ts_cuda_module *m);
ts_status ts_cuda_module_kernel(ts_ctx *ctx, ts_cuda_module *m, const char *name,
				ts_cuda_kernel *out);

/* Lets k launch with up to `bytes` of dynamic shared memory
 * (cuFuncSetAttribute, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), as
 * a kernel needs over 48 KB; refused, naming the device's limit (its
 * opt-in shared memory per block), where the device has less. */
ts_status ts_cuda_kernel_allow_shared(ts_ctx *ctx, const ts_cuda_kernel *k, int64_t bytes);
/* Launches k asynchronously with one device array per kernel parameter. */
ts_status ts_cuda_launch(ts_ctx *ctx, const ts_cuda_kernel *k, const ts_launch *launch,
			 int nargs, ts_array *const *args);
/* Waits for launched work; reports errors raised while kernels ran. */
ts_status ts_cuda_synchronize(ts_ctx *ctx, ts_cuda *cuda);
/* ---- timing ------------------------------------------------------------------
 *
 * ts_cuda_time times GPU work with CUDA events, the one protocol behind
 * ts_cuda_time_kernel, ts_module_time on a GPU module and tessera-bench's
 * GPU rows (tessera, cuBLAS and cuDNN alike):
 *   1. `warmup` untimed runs, then a synchronize;
 *   2. `repeats` runs, each between its own pair of events recorded on the
 *      default stream, with no host synchronization between runs;
 *   3. with flush_l2, before each timed run, cuMemsetD8 over a device
 *      buffer of twice the L2 size (CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE), so
 *      every run starts with a cold L2; the write lies between the previous
 *      run's end event and this run's start event, outside the timed
 *      interval.  The buffer is allocated once per call and freed before
 *      it returns;
 *   4. one synchronize on the last event, then each pair's elapsed time is
 *      a sample; *out gets min, median, mean, max and standard deviation of
 *      the samples, in seconds, with their quality flags
 *      (ts_timing_from_samples).
 * On any failure (a bad option, a failing event call, the work returning
 * non-zero) *out is zeroed, the error names the call, the repeat and what
 * was timed, and every event and the flush buffer are released. */
typedef struct ts_cuda_time_opts {
	int warmup;    /* untimed runs first, >= 0 */
	int repeats;   /* timed runs, 1 to 100000 */
	bool flush_l2; /* write a buffer twice the L2 size before each timed run */
	const char *what; /* names the work in messages (NULL: "work") */
} ts_cuda_time_opts;

/* Enqueues one run of the work on the default stream without waiting for
 * it; 0 on success, non-zero on failure (which stops the timing). */
typedef int (*ts_cuda_work_fn)(void *arg);

ts_status ts_cuda_time(ts_ctx *ctx, ts_cuda *cuda, ts_cuda_work_fn fn, void *arg,
		       const ts_cuda_time_opts *opts, ts_timing *out);
/* ts_cuda_time of k launched with args (opts->what defaults to k's name). */
ts_status ts_cuda_time_kernel(ts_ctx *ctx, const ts_cuda_kernel *k, const ts_launch *launch,
			      int nargs, ts_array *const *args, const ts_cuda_time_opts *opts,
			      ts_timing *out);
/* The device's L2 cache size in bytes (0 when the driver does not say). */
ts_status ts_cuda_l2_bytes(ts_ctx *ctx, const ts_cuda *cuda, int64_t *bytes);

#ifdef __cplusplus
}
#endif

#endif
