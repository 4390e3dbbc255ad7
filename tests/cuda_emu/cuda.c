/*
 * cuda.c - a stand-in libcuda for the host CUDA emulator: device memory is
 * host memory, a module is the shared object the stand-in NVRTC (nvrtc.c)
 * built, and a launch runs the kernel's grid there (shim.h) before it
 * returns.  TESSERA_CUDA_LIB names it.
 *
 * It checks what a driver checks and answers with a driver's error codes:
 * a block of more than 1024 threads or beyond the dimension limits, more
 * dynamic shared memory than 48 KB without cuFuncSetAttribute's opt-in or
 * than the device's 227 KB (1, CUDA_ERROR_INVALID_VALUE), an image that is
 * not the stand-in's (200, CUDA_ERROR_INVALID_IMAGE), an unknown kernel
 * (500, CUDA_ERROR_NOT_FOUND), more memory than 16 GiB (2,
 * CUDA_ERROR_OUT_OF_MEMORY), and a kernel the emulator stopped (719,
 * CUDA_ERROR_LAUNCH_FAILED, the reason on stderr).  The device is sm_90
 * (TESSERA_EMU_ARCH=80 and the like change it); events read the host's
 * monotonic clock.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "emu_image.h"

typedef unsigned long long devptr;

enum { OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, NO_DEVICE = 100, INVALID_IMAGE = 200,
       INVALID_CONTEXT = 201, INVALID_HANDLE = 400, NOT_FOUND = 500, LAUNCH_FAILED = 719 };

#define STATIC_SHARED 49152
#define MAX_SHARED 232448

typedef int (*launch_fn)(const unsigned grid[3], const unsigned block[3], unsigned shared,
			 void **params, char *err, size_t errsize);

typedef struct function {
	launch_fn launch;
	int max_dynamic_shared;
	struct function *next;
} function;

typedef struct module {
	void *so;
	function *functions;
} module;

static int context_tag;

int cuInit(unsigned flags)
{
	return flags == 0 ? OK : INVALID_VALUE;
}

int cuDeviceGetCount(int *n)
{
	*n = 1;
	return OK;
}

int cuDeviceGet(int *d, int i)
{
	if (i != 0)
		return INVALID_VALUE;
	*d = 0;
	return OK;
}

static int arch(void)
{
	const char *e = getenv("TESSERA_EMU_ARCH");
	int a = e ? atoi(e) : 90;
	return a >= 50 && a <= 99 ? a : 90;
}

int cuDeviceGetName(char *s, int n, int d)
{
	(void)d;
	snprintf(s, (size_t)n, "tessera host emulator (sm_%d)", arch());
	return OK;
}

int cuDeviceGetAttribute(int *v, int attr, int d)
{
	(void)d;
	switch (attr) {
	case 1: *v = 1024; break;              /* max threads per block */
	case 8: *v = STATIC_SHARED; break;     /* shared memory per block */
	case 10: *v = 32; break;               /* warp size */
	case 13: *v = 1755000; break;          /* clock, kHz */
	case 16: *v = 132; break;              /* multiprocessors */
	case 36: *v = 2619000; break;          /* memory clock, kHz */
	case 37: *v = 5120; break;             /* memory bus width, bits */
	case 38: *v = 50 << 20; break;         /* L2 */
	case 75: *v = arch() / 10; break;
	case 76: *v = arch() % 10; break;
	case 97: *v = MAX_SHARED; break;       /* opt-in shared memory per block */
	default: *v = 0;
	}
	return OK;
}

int cuDevicePrimaryCtxRetain(void **c, int d)
{
	(void)d;
	*c = &context_tag;
	return OK;
}

int cuDevicePrimaryCtxRelease_v2(int d)
{
	(void)d;
	return OK;
}

int cuCtxSetCurrent(void *c)
{
	return c == &context_tag || c == NULL ? OK : INVALID_CONTEXT;
}

int cuCtxSynchronize(void)
{
	return OK;
}

int cuMemAlloc_v2(devptr *p, size_t n)
{
	if (n == 0)
		return INVALID_VALUE;
	void *m = n > (size_t)16 << 30 ? NULL : malloc(n);
	if (!m)
		return OUT_OF_MEMORY;
	*p = (devptr)(uintptr_t)m;
	return OK;
}

int cuMemFree_v2(devptr p)
{
	free((void *)(uintptr_t)p);
	return OK;
}

int cuMemsetD8_v2(devptr p, unsigned char v, size_t n)
{
	memset((void *)(uintptr_t)p, v, n);
	return OK;
}

int cuMemcpyHtoD_v2(devptr d, const void *s, size_t n)
{
	memcpy((void *)(uintptr_t)d, s, n);
	return OK;
}

int cuMemcpyDtoH_v2(void *d, devptr s, size_t n)
{
	memcpy(d, (const void *)(uintptr_t)s, n);
	return OK;
}

/* The image as a file (dlopen reads files), loaded. */
int cuModuleLoadData(module **m, const void *image)
{
	const unsigned char *img = image;
	for (int i = 0; i < 8; i++) /* byte by byte: a short image ends at its first mismatch */
		if (img[i] != (unsigned char)EMU_MAGIC[i])
			return INVALID_IMAGE;
	uint64_t size;
	memcpy(&size, img + 8, 8);
	char path[] = "/tmp/tessera-emu-module-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return OUT_OF_MEMORY;
	int written = write(fd, img + EMU_HEADER, size) == (ssize_t)size;
	close(fd);
	void *so = written ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
	unlink(path);
	if (!so) {
		fprintf(stderr, "tessera cuda emulator: %s\n", written ? dlerror() : "cannot write the module");
		return INVALID_IMAGE;
	}
	if (!(*m = calloc(1, sizeof(**m)))) {
		dlclose(so);
		return OUT_OF_MEMORY;
	}
	(*m)->so = so;
	return OK;
}

int cuModuleUnload(module *m)
{
	if (!m)
		return INVALID_HANDLE;
	for (function *f = m->functions, *next; f; f = next) {
		next = f->next;
		free(f);
	}
	dlclose(m->so);
	free(m);
	return OK;
}

int cuModuleGetFunction(function **f, module *m, const char *name)
{
	char sym[300];
	if (!m || snprintf(sym, sizeof(sym), "ts_emu_launch_%s", name) >= (int)sizeof(sym))
		return INVALID_VALUE;
	launch_fn fn;
	*(void **)&fn = dlsym(m->so, sym);
	if (!fn)
		return NOT_FOUND;
	function *k = calloc(1, sizeof(*k));
	if (!k)
		return OUT_OF_MEMORY;
	k->launch = fn;
	k->next = m->functions;
	m->functions = k;
	*f = k;
	return OK;
}

int cuFuncSetAttribute(function *f, int attr, int v)
{
	if (!f)
		return INVALID_HANDLE;
	if (attr == 8) { /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
		if (v < 0 || v > MAX_SHARED)
			return INVALID_VALUE;
		f->max_dynamic_shared = v;
	}
	return OK;
}

int cuLaunchKernel(function *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
		   unsigned bz, unsigned shared, void *stream, void **params, void **extra)
{
	(void)stream;
	if (!f)
		return INVALID_HANDLE;
	if (extra || gx == 0 || gy == 0 || gz == 0 || gy > 65535 || gz > 65535 || bx == 0 || by == 0 ||
	    bz == 0 || bx > 1024 || by > 1024 || bz > 64 || (unsigned long long)bx * by * bz > 1024)
		return INVALID_VALUE;
	if (shared > STATIC_SHARED && (int)shared > f->max_dynamic_shared)
		return INVALID_VALUE;
	char err[512] = "";
	const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
	if (f->launch(grid, block, shared, params, err, sizeof(err)) != 0) {
		fprintf(stderr, "tessera cuda emulator: %s\n", err);
		return LAUNCH_FAILED;
	}
	return OK;
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int cuEventCreate(double **e, unsigned flags)
{
	(void)flags;
	*e = calloc(1, sizeof(double));
	return *e ? OK : OUT_OF_MEMORY;
}

int cuEventRecord(double *e, void *stream)
{
	(void)stream;
	*e = now_ms();
	return OK;
}

int cuEventSynchronize(double *e)
{
	return e ? OK : INVALID_HANDLE;
}

int cuEventElapsedTime_v2(float *ms, double *a, double *b)
{
	*ms = (float)(*b - *a);
	return OK;
}

int cuEventDestroy_v2(double *e)
{
	free(e);
	return OK;
}

static const struct {
	int code;
	const char *name, *text;
} errors[] = {
	{OK, "CUDA_SUCCESS", "no error"},
	{INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	{OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	{NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	{INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
	{INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
	{INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
	{NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
	{LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
};

int cuGetErrorName(int r, const char **s)
{
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
		if (errors[i].code == r) {
			*s = errors[i].name;
			return OK;
		}
	return INVALID_VALUE;
}

int cuGetErrorString(int r, const char **s)
{
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
		if (errors[i].code == r) {
			*s = errors[i].text;
			return OK;
		}
	return INVALID_VALUE;
}
