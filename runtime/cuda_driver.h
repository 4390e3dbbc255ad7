/*
 * cuda_driver.h - the CUDA driver API, opened at run time: devices, device arrays,
 * modules, launches and kernel timing.
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

#ifdef __cplusplus
extern "C" {
#endif

/* How a kernel is launched.  Unbound dimensions are 1. */
typedef struct ts_launch {
	int64_t grid[3];             /* blocks in x, y, z */
	int64_t block[3];            /* threads per block in x, y, z */
	int64_t shared_bytes;        /* dynamic shared memory (tessera uses none) */
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

/* Launches k asynchronously with one device array per kernel parameter. */
ts_status ts_cuda_launch(ts_ctx *ctx, const ts_cuda_kernel *k, const ts_launch *launch,
			 int nargs, ts_array *const *args);
/* Waits for launched work; reports errors raised while kernels ran. */
ts_status ts_cuda_synchronize(ts_ctx *ctx, ts_cuda *cuda);
/* Runs k `warmup` times, then times `repeats` launches with CUDA events and
 * stores the median in milliseconds. */
ts_status ts_cuda_time_kernel(ts_ctx *ctx, const ts_cuda_kernel *k, const ts_launch *launch,
			      int nargs, ts_array *const *args, int warmup, int repeats,
			      double *median_ms);

#ifdef __cplusplus
}
#endif

#endif
