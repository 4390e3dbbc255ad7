/*
 * cuda.c - the CUDA driver API through dlopen (see cuda_driver.h).
 *
 * The driver entry points are declared here with their C ABI (CUresult and
 * CUdevice are ints, handles are opaque pointers, CUdeviceptr is a 64-bit
 * integer) under their versioned symbol names, so this file builds without
 * the toolkit's headers and runs against any driver that exports them.
 * Each operation makes the device's primary context current first, so a
 * ts_cuda may be used from any thread (one at a time).
 */
#include "cuda_driver.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int cu_result;
typedef int cu_device;
typedef struct cu_context_st *cu_context;
typedef struct cu_module_st *cu_module;
typedef struct cu_function_st *cu_function;
typedef struct cu_event_st *cu_event;
typedef struct cu_stream_st *cu_stream;
typedef unsigned long long cu_deviceptr;

enum {
	CU_SUCCESS = 0,
	CU_ERROR_OUT_OF_MEMORY = 2,
	CU_ERROR_NO_DEVICE = 100,
	CU_ATTR_CC_MAJOR = 75,
	CU_ATTR_CC_MINOR = 76,
	CU_ATTR_L2_CACHE_SIZE = 38,
	CU_ATTR_MAX_SHARED_OPTIN = 97, /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
	CU_FUNC_ATTR_MAX_DYNAMIC_SHARED = 8,
	CU_EVENT_DEFAULT = 0,
};

/* Entry points: field, symbol, an older symbol to fall back on (or NULL). */
#define CU_FUNCS(X)                                                            \
	X(init, "cuInit", NULL)                                                \
	X(device_count, "cuDeviceGetCount", NULL)                              \
	X(device_get, "cuDeviceGet", NULL)                                     \
	X(device_name, "cuDeviceGetName", NULL)                                \
	X(device_attr, "cuDeviceGetAttribute", NULL)                           \
	X(ctx_retain, "cuDevicePrimaryCtxRetain", NULL)                        \
	X(ctx_release, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease") \
	X(ctx_set, "cuCtxSetCurrent", NULL)                                    \
	X(ctx_sync, "cuCtxSynchronize", NULL)                                  \
	X(mem_alloc, "cuMemAlloc_v2", NULL)                                    \
	X(mem_free, "cuMemFree_v2", NULL)                                      \
	X(memset8, "cuMemsetD8_v2", NULL)                                      \
	X(htod, "cuMemcpyHtoD_v2", NULL)                                       \
	X(dtoh, "cuMemcpyDtoH_v2", NULL)                                       \
	X(module_load, "cuModuleLoadData", NULL)                               \
	X(module_unload, "cuModuleUnload", NULL)                               \
	X(module_fn, "cuModuleGetFunction", NULL)                              \
	X(launch, "cuLaunchKernel", NULL)                                      \
	X(func_set_attr, "cuFuncSetAttribute", NULL)                           \
	X(event_create, "cuEventCreate", NULL)                                 \
	X(event_record, "cuEventRecord", NULL)                                 \
	X(event_sync, "cuEventSynchronize", NULL)                              \
	X(event_elapsed, "cuEventElapsedTime_v2", "cuEventElapsedTime")        \
	X(event_destroy, "cuEventDestroy_v2", NULL)                            \
	X(error_name, "cuGetErrorName", NULL)                                  \
	X(error_string, "cuGetErrorString", NULL)

typedef struct cu_api {
	cu_result (*init)(unsigned);
	cu_result (*device_count)(int *);
	cu_result (*device_get)(cu_device *, int);
	cu_result (*device_name)(char *, int, cu_device);
	cu_result (*device_attr)(int *, int, cu_device);
	cu_result (*ctx_retain)(cu_context *, cu_device);
	cu_result (*ctx_release)(cu_device);
	cu_result (*ctx_set)(cu_context);
	cu_result (*ctx_sync)(void);
	cu_result (*mem_alloc)(cu_deviceptr *, size_t);
	cu_result (*mem_free)(cu_deviceptr);
	cu_result (*memset8)(cu_deviceptr, unsigned char, size_t);
	cu_result (*htod)(cu_deviceptr, const void *, size_t);
	cu_result (*dtoh)(void *, cu_deviceptr, size_t);
	cu_result (*module_load)(cu_module *, const void *);
	cu_result (*module_unload)(cu_module);
	cu_result (*module_fn)(cu_function *, cu_module, const char *);
	cu_result (*launch)(cu_function, unsigned, unsigned, unsigned, unsigned, unsigned,
			    unsigned, unsigned, cu_stream, void **, void **);
	cu_result (*func_set_attr)(cu_function, int, int);
	cu_result (*event_create)(cu_event *, unsigned);
	cu_result (*event_record)(cu_event, cu_stream);
	cu_result (*event_sync)(cu_event);
	cu_result (*event_elapsed)(float *, cu_event, cu_event);
	cu_result (*event_destroy)(cu_event);
	cu_result (*error_name)(cu_result, const char **);
	cu_result (*error_string)(cu_result, const char **);
} cu_api;

struct ts_cuda {
	void *lib;
	cu_api api;
	cu_device device;
	cu_context context; /* the primary context, retained */
	int major, minor;
	char name[256];
	char arch[16];
};

struct ts_cuda_module {
	ts_cuda *cuda;
	cu_module module;
};

/* ---- errors ------------------------------------------------------------------ */

/* The codes that say there is no usable driver, for a library that cannot
 * name them itself: the toolkit's stub libcuda (found where no NVIDIA
 * driver is installed) fails every call, cuGetErrorName included. */
static const struct {
	cu_result r;
	const char *name, *desc;
} no_driver_codes[] = {
	{3, "CUDA_ERROR_NOT_INITIALIZED", "the driver is not initialized"},
	{34, "CUDA_ERROR_STUB_LIBRARY", "the library is the CUDA toolkit's stub, not an NVIDIA "
	 "driver: no GPU driver is installed; CPU path only"},
	{35, "CUDA_ERROR_INSUFFICIENT_DRIVER", "the NVIDIA driver is older than this CUDA"},
	{100, "CUDA_ERROR_NO_DEVICE", "no CUDA device found"},
};

__attribute__((format(printf, 5, 6)))
static ts_status report(ts_ctx *ctx, const ts_cuda *c, cu_result r, ts_status st,
			const char *fmt, ...)
{
	const char *name = NULL, *desc = NULL;
	if (c->api.error_name && c->api.error_name(r, &name) != CU_SUCCESS)
		name = NULL;
	if (c->api.error_string && c->api.error_string(r, &desc) != CU_SUCCESS)
		desc = NULL;
	for (size_t i = 0; i < sizeof no_driver_codes / sizeof no_driver_codes[0]; i++) {
		if (no_driver_codes[i].r != r)
			continue;
		name = name ? name : no_driver_codes[i].name;
		desc = desc ? desc : no_driver_codes[i].desc;
	}
	char what[256], code[32];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(code, sizeof(code), "CUresult %d", r);
	return ts_error(ctx, st, "cuda: %s failed: %s (%s)", what, name ? name : code,
			desc ? desc : "no description");
}

/* TS_OK, or the error of a failed call; out of memory is TS_ERR_NOMEM. */
#define CHECK(ctx, c, call, ...)                                               \
	check_result((ctx), (c), (call), __VA_ARGS__)

__attribute__((format(printf, 4, 5)))
static ts_status check_result(ts_ctx *ctx, const ts_cuda *c, cu_result r, const char *fmt, ...)
{
	if (r == CU_SUCCESS)
		return TS_OK;
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return report(ctx, c, r, r == CU_ERROR_OUT_OF_MEMORY ? TS_ERR_NOMEM : TS_ERR_RUNTIME,
		      "%s", what);
}

static ts_status bind(ts_ctx *ctx, const ts_cuda *c)
{
	return CHECK(ctx, c, c->api.ctx_set(c->context), "cuCtxSetCurrent");
}

/* ---- opening the driver and the device -------------------------------------- */

static ts_status load_driver(ts_ctx *ctx, ts_cuda *c)
{
	const char *env = getenv("TESSERA_CUDA_LIB");
	const char *path = env && env[0] ? env : "libcuda.so.1";
	c->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!c->lib)
		return ts_error(ctx, TS_ERR_NO_DEVICE,
				"cuda: driver library %s not found (no NVIDIA driver); CPU path only",
				path);
#define X(field, sym, old)                                                     \
	*(void **)&c->api.field = dlsym(c->lib, sym);                          \
	if (!c->api.field && (old))                                            \
		*(void **)&c->api.field = dlsym(c->lib, (old) ? (old) : sym);  \
	if (!c->api.field)                                                     \
		return ts_error(ctx, TS_ERR_NO_DEVICE,                         \
				"cuda: driver library %s lacks %s (driver too old)", path, sym);
	CU_FUNCS(X)
#undef X
	return TS_OK;
}

static ts_status open_device(ts_ctx *ctx, ts_cuda *c)
{
	int n = 0;
	cu_result r = c->api.init(0);
	if (r == CU_ERROR_NO_DEVICE)
		return ts_error(ctx, TS_ERR_NO_DEVICE, "cuda: no CUDA device found");
	if (r != CU_SUCCESS)
		return report(ctx, c, r, TS_ERR_NO_DEVICE, "cuInit");
	if ((r = c->api.device_count(&n)) != CU_SUCCESS)
		return report(ctx, c, r, TS_ERR_NO_DEVICE, "cuDeviceGetCount");
	if (n == 0)
		return ts_error(ctx, TS_ERR_NO_DEVICE, "cuda: no CUDA device found");
	if (CHECK(ctx, c, c->api.device_get(&c->device, 0), "cuDeviceGet(0)") ||
	    CHECK(ctx, c, c->api.device_name(c->name, (int)sizeof(c->name), c->device),
		  "cuDeviceGetName") ||
	    CHECK(ctx, c, c->api.device_attr(&c->major, CU_ATTR_CC_MAJOR, c->device),
		  "cuDeviceGetAttribute(compute capability major)") ||
	    CHECK(ctx, c, c->api.device_attr(&c->minor, CU_ATTR_CC_MINOR, c->device),
		  "cuDeviceGetAttribute(compute capability minor)"))
		return ts_last_status(ctx);
	snprintf(c->arch, sizeof(c->arch), "sm_%d%d", c->major, c->minor);
	if (CHECK(ctx, c, c->api.ctx_retain(&c->context, c->device), "cuDevicePrimaryCtxRetain"))
		return ts_last_status(ctx);
	return bind(ctx, c);
}

ts_cuda *ts_cuda_open(ts_ctx *ctx)
{
	if (!ctx)
		return NULL;
	ts_cuda *c = calloc(1, sizeof(*c));
	if (!c) {
		ts_error(ctx, TS_ERR_NOMEM, "cuda: out of memory");
		return NULL;
	}
	if (load_driver(ctx, c) != TS_OK || open_device(ctx, c) != TS_OK) {
		ts_cuda_close(c);
		return NULL;
	}
	return c;
}

void ts_cuda_close(ts_cuda *c)
{
	if (!c)
		return;
	if (c->context)
		c->api.ctx_release(c->device);
	if (c->lib)
		dlclose(c->lib);
	free(c);
}

const char *ts_cuda_device_name(const ts_cuda *c)
{
	return c ? c->name : NULL;
}

const char *ts_cuda_arch(const ts_cuda *c)
{
	return c ? c->arch : NULL;
}

void ts_cuda_compute_capability(const ts_cuda *c, int *major, int *minor)
{
	if (major)
		*major = c ? c->major : 0;
	if (minor)
		*minor = c ? c->minor : 0;
}

/* ---- device arrays ------------------------------------------------------------- */

static cu_deviceptr dptr(const ts_array *a)
{
	return (cu_deviceptr)(uintptr_t)a->data;
}

/* The element count of a valid shape, or -1 after reporting. */
static int64_t check_shape(ts_ctx *ctx, ts_dtype t, int ndim, const int64_t *shape)
{
	if (ndim < 0 || ndim > TS_MAX_DIMS || !ts_array_dtype_ok(t) || (ndim > 0 && !shape)) {
		ts_error(ctx, TS_ERR_INVALID, "cuda: array: %d dimensions (at most %d, scalar dtype)",
			 ndim, TS_MAX_DIMS);
		return -1;
	}
	int64_t n = 1;
	for (int i = 0; i < ndim; i++) {
		if (shape[i] <= 0 || n > INT64_MAX / 16 / shape[i]) {
			ts_error(ctx, TS_ERR_INVALID, "cuda: array: bad extent %lld in dimension %d",
				 (long long)shape[i], i);
			return -1;
		}
		n *= shape[i];
	}
	return n;
}

ts_array *ts_cuda_array_new(ts_ctx *ctx, ts_cuda *c, ts_dtype t, int ndim, const int64_t *shape)
{
	if (!ctx)
		return NULL;
	if (!c) {
		ts_error(ctx, TS_ERR_NO_DEVICE, "cuda: array: no device (ts_cuda_open failed)");
		return NULL;
	}
	int64_t n = check_shape(ctx, t, ndim, shape);
	ts_array *a = n < 0 ? NULL : calloc(1, sizeof(*a));
	if (!a) {
		if (n >= 0)
			ts_error(ctx, TS_ERR_NOMEM, "cuda: out of memory");
		return NULL;
	}
	a->dtype = t;
	a->ndim = ndim;
	for (int64_t i = ndim - 1, stride = 1; i >= 0; i--) {
		a->shape[i] = shape[i];
		a->strides[i] = stride;
		stride *= shape[i];
	}
	a->device = TS_DEVICE_CUDA;
	a->cuda = c;
	size_t bytes = (size_t)n * (size_t)ts_dtype_bytes(t);
	cu_deviceptr p = 0;
	if (bind(ctx, c) || CHECK(ctx, c, c->api.mem_alloc(&p, bytes), "cuMemAlloc(%zu bytes)", bytes)) {
		free(a);
		return NULL;
	}
	a->data = (void *)(uintptr_t)p;
	if (CHECK(ctx, c, c->api.memset8(p, 0, bytes), "cuMemsetD8(%zu bytes)", bytes)) {
		ts_cuda_array_free(a);
		return NULL;
	}
	return a;
}

void ts_cuda_array_free(ts_array *a)
{
	if (!a)
		return;
	if (a->device != TS_DEVICE_CUDA) {
		ts_array_free(a);
		return;
	}
	/* an array marked as on a device by hand has no device to free on */
	if (a->data && a->cuda && a->cuda->api.ctx_set(a->cuda->context) == CU_SUCCESS)
		a->cuda->api.mem_free(dptr(a));
	free(a);
}

/* dtype and shape agree; the devices are as the copy direction needs. */
static ts_status check_copy(ts_ctx *ctx, const char *what, const ts_array *dev,
			    const ts_array *host)
{
	if (!ctx)
		return TS_ERR_INVALID;
	if (!dev || !host)
		return ts_error(ctx, TS_ERR_INVALID, "cuda: %s: NULL array", what);
	if (!dev->data || !host->data)
		return ts_error(ctx, TS_ERR_INVALID, "cuda: %s: an array has NULL data", what);
	if (dev->device != TS_DEVICE_CUDA || host->device != TS_DEVICE_CPU || !dev->cuda)
		return ts_error(ctx, TS_ERR_INVALID, "cuda: %s: needs a device array (from "
				"ts_cuda_array_new) and a host array", what);
	bool same = ts_dtype_eq(dev->dtype, host->dtype) && dev->ndim == host->ndim;
	for (int i = 0; same && i < dev->ndim; i++)
		same = dev->shape[i] == host->shape[i];
	if (!same) {
		char b1[24], b2[24];
		return ts_error(ctx, TS_ERR_INVALID,
				"cuda: %s: arrays differ in dtype or shape (device %s, %lld elements; "
				"host %s, %lld elements)", what, ts_dtype_str(dev->dtype, b1),
				(long long)ts_array_numel(dev), ts_dtype_str(host->dtype, b2),
				(long long)ts_array_numel(host));
	}
	return TS_OK;
}

ts_status ts_cuda_copy_to_device(ts_ctx *ctx, ts_array *dev, const ts_array *host)
{
	ts_status st = check_copy(ctx, "copy to device", dev, host);
	if (st != TS_OK)
		return st;
	const ts_cuda *c = dev->cuda;
	size_t n = ts_array_nbytes(host);
	if (bind(ctx, c))
		return ts_last_status(ctx);
	return CHECK(ctx, c, c->api.htod(dptr(dev), host->data, n), "cuMemcpyHtoD(%zu bytes)", n);
}

ts_status ts_cuda_copy_to_host(ts_ctx *ctx, ts_array *host, const ts_array *dev)
{
	ts_status st = check_copy(ctx, "copy to host", dev, host);
	if (st != TS_OK)
		return st;
	const ts_cuda *c = dev->cuda;
	size_t n = ts_array_nbytes(host);
	if (bind(ctx, c))
		return ts_last_status(ctx);
	return CHECK(ctx, c, c->api.dtoh(host->data, dptr(dev), n), "cuMemcpyDtoH(%zu bytes)", n);
}

/* ---- modules and kernels --------------------------------------------------------- */

ts_cuda_module *ts_cuda_module_load(ts_ctx *ctx, ts_cuda *c, const void *image, size_t size)
{
	if (!ctx)
		return NULL;
	if (!c) {
		ts_error(ctx, TS_ERR_NO_DEVICE, "cuda: module load: no device (ts_cuda_open failed)");
		return NULL;
	}
	if (!image || size == 0) {
		ts_error(ctx, TS_ERR_INVALID, "cuda: module load: empty image");
		return NULL;
	}
	bool elf = size >= 4 && memcmp(image, "\x7f" "ELF", 4) == 0;
	if (!elf && memchr(image, '\0', size) == NULL) {
		ts_error(ctx, TS_ERR_INVALID, "cuda: module load: PTX image is not NUL-terminated");
		return NULL;
	}
	ts_cuda_module *m = calloc(1, sizeof(*m));
	if (!m) {
		ts_error(ctx, TS_ERR_NOMEM, "cuda: out of memory");
		return NULL;
	}
	m->cuda = c;
	if (bind(ctx, c) || CHECK(ctx, c, c->api.module_load(&m->module, image),
				  "cuModuleLoadData(%zu-byte %s)", size, elf ? "CUBIN" : "PTX")) {
		free(m);
		return NULL;
	}
	return m;
}

void ts_cuda_module_unload(ts_cuda_module *m)
{
	if (!m)
		return;
	if (m->cuda->api.ctx_set(m->cuda->context) == CU_SUCCESS)
		m->cuda->api.module_unload(m->module);
	free(m);
}

ts_status ts_cuda_module_kernel(ts_ctx *ctx, ts_cuda_module *m, const char *name,
				ts_cuda_kernel *out)
{
	if (!ctx)
		return TS_ERR_INVALID;
	if (!out)
		return ts_error(ctx, TS_ERR_INVALID, "cuda: kernel: out is NULL");
	memset(out, 0, sizeof(*out));
	if (!m || !name || strlen(name) >= sizeof(out->name))
		return ts_error(ctx, TS_ERR_INVALID, "cuda: kernel: no module or bad name");
	cu_function fn = NULL;
	if (bind(ctx, m->cuda) ||
	    CHECK(ctx, m->cuda, m->cuda->api.module_fn(&fn, m->module, name),
		  "cuModuleGetFunction(%s)", name))
		return ts_last_status(ctx);
	out->cuda = m->cuda;
	out->fn = fn;
	strcpy(out->name, name);
	return TS_OK;
}

ts_status ts_cuda_kernel_allow_shared(ts_ctx *ctx, const ts_cuda_kernel *k, int64_t bytes)
{
	if (!ctx)
		return TS_ERR_INVALID;
	if (!k || !k->fn || !k->cuda || !memchr(k->name, 0, sizeof k->name))
		return ts_error(ctx, TS_ERR_INVALID, "cuda: allow_shared: no kernel (or not one "
				"ts_cuda_module_kernel made: its name is not terminated)");
	if (bytes < 0 || bytes > INT_MAX)
		return ts_error(ctx, TS_ERR_INVALID, "cuda: allow_shared(%s): %lld bytes", k->name,
				(long long)bytes);
	const ts_cuda *c = k->cuda;
	int most = 0;
	if (bind(ctx, c) ||
	    CHECK(ctx, c, c->api.device_attr(&most, CU_ATTR_MAX_SHARED_OPTIN, c->device),
		  "cuDeviceGetAttribute(max shared memory per block, opt-in)"))
		return ts_last_status(ctx);
	if (bytes > most)
		return ts_error(ctx, TS_ERR_UNSUPPORTED, "cuda: kernel %s needs %lld bytes of shared "
				"memory per block; %s (%s) gives at most %d", k->name, (long long)bytes,
				c->name, c->arch, most);
	return CHECK(ctx, c, c->api.func_set_attr((cu_function)k->fn, CU_FUNC_ATTR_MAX_DYNAMIC_SHARED,
						   (int)bytes),
		     "cuFuncSetAttribute(%s, max dynamic shared memory %lld bytes)", k->name,
		     (long long)bytes);
}

/* ---- launches -------------------------------------------------------------------- */


/* Arrays belong to a device, not to a handle: every ts_cuda opened on one
 * device shares its primary context, so an array made through the user's
 * handle is valid in a module that ts_build loaded through its own. */
static bool same_device(const ts_cuda *a, const ts_cuda *b)
{
	return a && b && a->device == b->device && a->context == b->context;
}

static ts_status check_launch(ts_ctx *ctx, const ts_cuda_kernel *k, const ts_launch *l,
			      int nargs, ts_array *const *args)
{
	if (!ctx)
		return TS_ERR_INVALID;
	if (!k || !k->fn || !l || !k->cuda)
		return ts_error(ctx, TS_ERR_INVALID, "cuda: launch: no kernel or launch configuration");
	if (!memchr(k->name, 0, sizeof k->name)) /* every message below names it */
		return ts_error(ctx, TS_ERR_INVALID, "cuda: launch: not a kernel ts_cuda_module_kernel "
				"made (its name is not terminated)");
	if (nargs > 0 && !args)
		return ts_error(ctx, TS_ERR_INVALID, "cuda: launching %s: the argument list is NULL",
				k->name);
	for (int i = 0; i < 3; i++)
		if (l->grid[i] < 1 || l->grid[i] > UINT_MAX || l->block[i] < 1 || l->block[i] > UINT_MAX)
			return ts_error(ctx, TS_ERR_INVALID, "cuda: launching %s: grid and block "
					"dimensions must be positive", k->name);
	if (l->shared_bytes < 0 || l->shared_bytes > UINT_MAX || nargs < 0 || nargs > 64)
		return ts_error(ctx, TS_ERR_INVALID, "cuda: launching %s: bad shared size or "
				"argument count %d", k->name, nargs);
	for (int i = 0; i < nargs; i++)
		if (!args[i] || args[i]->device != TS_DEVICE_CUDA || !same_device(args[i]->cuda, k->cuda))
			return ts_error(ctx, TS_ERR_INVALID, "cuda: launching %s: argument %d is "
					"not an array on this device", k->name, i);
	return TS_OK;
}

static ts_status launch(ts_ctx *ctx, const ts_cuda_kernel *k, const ts_launch *l, int nargs,
			ts_array *const *args)
{
	void *params[64];
	for (int i = 0; i < nargs; i++)
		params[i] = &args[i]->data; /* the CUdeviceptr, passed by address */
	const ts_cuda *c = k->cuda;
	cu_result r = c->api.launch((cu_function)k->fn, (unsigned)l->grid[0], (unsigned)l->grid[1],
				    (unsigned)l->grid[2], (unsigned)l->block[0], (unsigned)l->block[1],
				    (unsigned)l->block[2], (unsigned)l->shared_bytes, NULL, params, NULL);
	return CHECK(ctx, c, r, "cuLaunchKernel(%s, grid (%lld, %lld, %lld), block (%lld, %lld, %lld), "
		     "%lld shared bytes)", k->name, (long long)l->grid[0], (long long)l->grid[1],
		     (long long)l->grid[2], (long long)l->block[0], (long long)l->block[1],
		     (long long)l->block[2], (long long)l->shared_bytes);
}

ts_status ts_cuda_launch(ts_ctx *ctx, const ts_cuda_kernel *k, const ts_launch *l, int nargs,
			 ts_array *const *args)
{
	ts_status st = check_launch(ctx, k, l, nargs, args);
	if (st == TS_OK)
		st = bind(ctx, k->cuda);
	return st == TS_OK ? launch(ctx, k, l, nargs, args) : st;
}

ts_status ts_cuda_synchronize(ts_ctx *ctx, ts_cuda *c)
{
	if (!ctx)
		return TS_ERR_INVALID;
	if (!c)
		return ts_error(ctx, TS_ERR_NO_DEVICE, "cuda: synchronize: no device");
	if (bind(ctx, c))
		return ts_last_status(ctx);
	return CHECK(ctx, c, c->api.ctx_sync(), "cuCtxSynchronize (running launched kernels)");
}

/* ---- timing (see cuda_driver.h) ------------------------------------------------ */

/* What one ts_cuda_time call holds; released by time_release whatever
 * happened. */
typedef struct time_run {
	ts_ctx *ctx;
	const ts_cuda *c;
	ts_cuda_work_fn fn;
	void *arg;
	const char *what;
	int repeats;
	cu_event *ev;        /* 2 * repeats: start and end of each run */
	cu_deviceptr flush;  /* 0 without flush_l2 */
	size_t flush_bytes;
	double *samples;     /* seconds */
} time_run;

static ts_status check_time_opts(ts_ctx *ctx, const ts_cuda *c, ts_cuda_work_fn fn,
				 const ts_cuda_time_opts *o, const ts_timing *out)
{
	if (!c)
		return ts_error(ctx, TS_ERR_NO_DEVICE, "cuda: time: no device (ts_cuda_open failed)");
	if (!fn || !o || !out)
		return ts_error(ctx, TS_ERR_INVALID, "cuda: time: %s is NULL",
				!fn ? "the work function" : !o ? "opts" : "out");
	if (o->warmup < 0 || o->warmup > 100000 || o->repeats < 1 || o->repeats > 100000)
		return ts_error(ctx, TS_ERR_INVALID, "cuda: time %s: need 0 <= warmup <= 100000 and "
				"1 <= repeats <= 100000 (got %d, %d)", o->what ? o->what : "work",
				o->warmup, o->repeats);
	return TS_OK;
}

ts_status ts_cuda_l2_bytes(ts_ctx *ctx, const ts_cuda *c, int64_t *bytes)
{
	if (!ctx)
		return TS_ERR_INVALID;
	if (!c)
		return ts_error(ctx, TS_ERR_NO_DEVICE, "cuda: L2 size: no device (ts_cuda_open failed)");
	if (!bytes)
		return ts_error(ctx, TS_ERR_INVALID, "cuda: L2 size: bytes is NULL");
	int v = 0;
	*bytes = 0;
	if (CHECK(ctx, c, c->api.device_attr(&v, CU_ATTR_L2_CACHE_SIZE, c->device),
		  "cuDeviceGetAttribute(L2 cache size)"))
		return ts_last_status(ctx);
	*bytes = v > 0 ? v : 0;
	return TS_OK;
}

/* The flush buffer: twice the L2, so that writing it evicts every line
 * whatever the replacement policy. */
static ts_status alloc_flush(time_run *t)
{
	int64_t l2 = 0;
	if (ts_cuda_l2_bytes(t->ctx, t->c, &l2) != TS_OK)
		return ts_last_status(t->ctx);
	if (l2 <= 0)
		return ts_error(t->ctx, TS_ERR_UNSUPPORTED, "cuda: time %s: L2 flush: the device "
				"reports no L2 cache size", t->what);
	t->flush_bytes = 2 * (size_t)l2;
	return CHECK(t->ctx, t->c, t->c->api.mem_alloc(&t->flush, t->flush_bytes),
		     "cuMemAlloc(%zu bytes for the L2 flush buffer of %s)", t->flush_bytes, t->what);
}

static ts_status create_events(time_run *t)
{
	t->ev = calloc(2 * (size_t)t->repeats, sizeof(*t->ev));
	if (!t->ev)
		return ts_error(t->ctx, TS_ERR_NOMEM, "cuda: time %s: out of memory for %d events",
				t->what, 2 * t->repeats);
	for (int i = 0; i < 2 * t->repeats; i++)
		if (CHECK(t->ctx, t->c, t->c->api.event_create(&t->ev[i], CU_EVENT_DEFAULT),
			  "cuEventCreate (event %d of %d for %s)", i, 2 * t->repeats, t->what))
			return ts_last_status(t->ctx);
	return TS_OK;
}

static ts_status warm_up(time_run *t, int warmup)
{
	for (int i = 0; i < warmup; i++) {
		int rc = t->fn(t->arg);
		if (rc != 0)
			return ts_error(t->ctx, TS_ERR_RUNTIME, "cuda: time %s: the work returned %d in "
					"warm-up run %d", t->what, rc, i);
	}
	return CHECK(t->ctx, t->c, t->c->api.ctx_sync(), "cuCtxSynchronize (warm-up of %s)", t->what);
}

/* Run i between its events, the L2 flush (if any) before the first. */
static ts_status timed_run(time_run *t, int i)
{
	const cu_api *a = &t->c->api;
	if (t->flush && CHECK(t->ctx, t->c, a->memset8(t->flush, (unsigned char)i, t->flush_bytes),
			      "cuMemsetD8 (L2 flush before repeat %d of %s)", i, t->what))
		return ts_last_status(t->ctx);
	if (CHECK(t->ctx, t->c, a->event_record(t->ev[2 * i], NULL),
		  "cuEventRecord (start of repeat %d of %s)", i, t->what))
		return ts_last_status(t->ctx);
	int rc = t->fn(t->arg);
	if (rc != 0)
		return ts_error(t->ctx, TS_ERR_RUNTIME, "cuda: time %s: the work returned %d in "
				"repeat %d", t->what, rc, i);
	return CHECK(t->ctx, t->c, a->event_record(t->ev[2 * i + 1], NULL),
		     "cuEventRecord (end of repeat %d of %s)", i, t->what);
}

/* Waits for the last event, then reads every pair. */
static ts_status read_samples(time_run *t)
{
	const cu_api *a = &t->c->api;
	if (CHECK(t->ctx, t->c, a->event_sync(t->ev[2 * t->repeats - 1]),
		  "cuEventSynchronize (running %s)", t->what))
		return ts_last_status(t->ctx);
	for (int i = 0; i < t->repeats; i++) {
		float ms = 0;
		if (CHECK(t->ctx, t->c, a->event_elapsed(&ms, t->ev[2 * i], t->ev[2 * i + 1]),
			  "cuEventElapsedTime (repeat %d of %s)", i, t->what))
			return ts_last_status(t->ctx);
		t->samples[i] = ms / 1e3;
	}
	return TS_OK;
}

/* Waits for what was enqueued (an early failure may leave runs in flight
 * that write the flush buffer), then releases everything. */
static void time_release(time_run *t)
{
	const cu_api *a = &t->c->api;
	a->ctx_sync();
	for (int i = 0; t->ev && i < 2 * t->repeats; i++)
		if (t->ev[i])
			a->event_destroy(t->ev[i]);
	if (t->flush)
		a->mem_free(t->flush);
	free(t->ev);
	free(t->samples);
}

static ts_status time_all(time_run *t, const ts_cuda_time_opts *o)
{
	t->samples = malloc((size_t)t->repeats * sizeof(*t->samples));
	if (!t->samples)
		return ts_error(t->ctx, TS_ERR_NOMEM, "cuda: time %s: out of memory", t->what);
	ts_status st = warm_up(t, o->warmup);
	if (st == TS_OK && o->flush_l2)
		st = alloc_flush(t);
	if (st == TS_OK)
		st = create_events(t);
	for (int i = 0; i < t->repeats && st == TS_OK; i++)
		st = timed_run(t, i);
	return st == TS_OK ? read_samples(t) : st;
}

ts_status ts_cuda_time(ts_ctx *ctx, ts_cuda *c, ts_cuda_work_fn fn, void *arg,
		       const ts_cuda_time_opts *o, ts_timing *out)
{
	if (out)
		memset(out, 0, sizeof(*out));
	if (!ctx)
		return TS_ERR_INVALID;
	ts_status st = check_time_opts(ctx, c, fn, o, out);
	if (st != TS_OK || (st = bind(ctx, c)) != TS_OK)
		return st;
	time_run t = {.ctx = ctx, .c = c, .fn = fn, .arg = arg, .repeats = o->repeats,
		      .what = o->what ? o->what : "work"};
	st = time_all(&t, o);
	if (st == TS_OK)
		ts_timing_from_samples(t.samples, t.repeats, out);
	time_release(&t);
	return st;
}

typedef struct kernel_work {
	ts_ctx *ctx;
	const ts_cuda_kernel *k;
	const ts_launch *l;
	int nargs;
	ts_array *const *args;
} kernel_work;

static int launch_work(void *p)
{
	kernel_work *w = p;
	return launch(w->ctx, w->k, w->l, w->nargs, w->args) == TS_OK ? 0 : 1;
}

ts_status ts_cuda_time_kernel(ts_ctx *ctx, const ts_cuda_kernel *k, const ts_launch *l,
			      int nargs, ts_array *const *args, const ts_cuda_time_opts *opts,
			      ts_timing *out)
{
	if (out)
		memset(out, 0, sizeof(*out));
	ts_status st = check_launch(ctx, k, l, nargs, args);
	if (st != TS_OK)
		return st;
	if (!opts)
		return ts_error(ctx, TS_ERR_INVALID, "cuda: time %s: opts is NULL", k->name);
	ts_cuda_time_opts o = *opts;
	o.what = o.what ? o.what : k->name;
	kernel_work w = {ctx, k, l, nargs, args};
	return ts_cuda_time(ctx, k->cuda, launch_work, &w, &o, out);
}
