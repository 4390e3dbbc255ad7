/*
 * fake_cuda.h - a host-memory stand-in for libcuda, built at test time, for
 * the test binaries that exercise the driver-API runtime without a GPU;
 * include it in one file of a binary.
 *
 * Enough of the driver API to run kg_vadd_cuda ("vadd") on the CPU, with
 * the driver's error codes for out of memory (2), invalid launches (1),
 * missing kernels (500) and anything else (999, CUDA_ERROR_UNKNOWN).
 * Kernels of a function built as several ("<name>_k<i>") load too and do
 * nothing when launched but append their name and a space to
 * fake_kernel_log (read with fake_str).
 * Environment variables shape it:
 *   FAKE_CUDA_NO_DEVICE=1   no device
 *   FAKE_CUDA_STUB=1        the toolkit's stub library: cuInit fails with
 *                           34 (CUDA_ERROR_STUB_LIBRARY) and cannot name it
 *   FAKE_CUDA_TICKS=a,b,... each event record advances the fake clock by
 *                           the next value (ms, cycling); default 1.5 ms
 *   FAKE_CUDA_L2=N          CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE (default 4 MiB)
 *   FAKE_CUDA_SMEM=N        the opt-in shared memory per block (default
 *                           232448, sm_90's); a launch asking for more
 *                           dynamic shared memory than 48 KB or than
 *                           cuFuncSetAttribute allowed fails (1)
 *   FAKE_CUDA_FAIL=NAME:N   the N-th call to NAME (cuEventCreate,
 *                           cuEventRecord, cuEventSynchronize,
 *                           cuEventElapsedTime, cuMemAlloc) since the
 *                           variable last changed fails with 999
 * and counters (longs, read with fake_stat) say what the runtime did:
 * fake_live_events, fake_live_allocs (created, not yet destroyed or freed),
 * fake_allocs, fake_last_alloc (bytes), fake_memsets, fake_flushes_timed
 * (memsets between an event pair's two records), fake_launches,
 * fake_launches_at_first_record, fake_records, fake_shared_allowed (the
 * last cuFuncSetAttribute of the dynamic shared memory), fake_last_shared
 * (the last launch's dynamic shared memory).
 */
#ifndef TESSERA_TESTS_FAKE_CUDA_H
#define TESSERA_TESTS_FAKE_CUDA_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "runtime/cuda_driver.h"

static const char *const fake_driver =
	"#include <stdlib.h>\n"
	"#include <string.h>\n"
	"typedef unsigned long long P;\n"
	"static int ctx_tag;\n"
	"static float clock_ms;\n"
	"long fake_live_events, fake_live_allocs, fake_allocs, fake_last_alloc, fake_memsets;\n"
	"long fake_flushes_timed, fake_launches, fake_launches_at_first_record = -1, fake_records;\n"
	"long fake_shared_allowed, fake_last_shared;\n"
	"static int fails(const char *fn, long *calls, char *seen) {\n"
	"  const char *e = getenv(\"FAKE_CUDA_FAIL\"); size_t n = strlen(fn);\n"
	"  if (!e) e = \"\";\n"
	"  if (strncmp(seen, e, 63)) { strncpy(seen, e, 63); *calls = 0; }\n"
	"  if (!*e) return 0;\n"
	"  ++*calls;\n"
	"  return !strncmp(e, fn, n) && e[n] == ':' && atol(e + n + 1) == *calls; }\n"
	"#define FAIL_AT(fn) static long calls_; static char seen_[64]; \\\n"
	"  if (fails(fn, &calls_, seen_)) return 999\n"
	"static float tick(void) {\n"
	"  static long k; const char *e = getenv(\"FAKE_CUDA_TICKS\");\n"
	"  if (!e || !*e) return 1.5f;\n"
	"  long n = 0; const char *p = e; while (p) { n++; p = strchr(p, ','); if (p) p++; }\n"
	"  long i = k++ % n; p = e; while (i-- > 0) p = strchr(p, ',') + 1;\n"
	"  return strtof(p, NULL); }\n"
	"int cuInit(unsigned f) { (void)f; return getenv(\"FAKE_CUDA_STUB\") ? 34 : 0; }\n"
	"int cuDeviceGetCount(int *n) { *n = getenv(\"FAKE_CUDA_NO_DEVICE\") ? 0 : 1; return 0; }\n"
	"int cuDeviceGet(int *d, int i) { *d = i; return 0; }\n"
	"int cuDeviceGetName(char *s, int n, int d) { (void)d; strncpy(s, \"Fake GPU\", n); return 0; }\n"
	"int cuDeviceGetAttribute(int *v, int a, int d) { (void)d; const char *l2 = getenv(\"FAKE_CUDA_L2\");\n"
	"  const char *sm = getenv(\"FAKE_CUDA_SMEM\");\n"
	"  *v = a == 75 ? 9 : a == 38 ? (l2 ? atoi(l2) : 4 << 20) : a == 97 ? (sm ? atoi(sm) : 232448) : 0;\n"
	"  return 0; }\n"
	"int cuFuncSetAttribute(void *f, int a, int v) { (void)f; if (a == 8) fake_shared_allowed = v; return 0; }\n"
	"int cuDevicePrimaryCtxRetain(void **c, int d) { (void)d; *c = &ctx_tag; return 0; }\n"
	"int cuDevicePrimaryCtxRelease_v2(int d) { (void)d; return 0; }\n"
	"int cuCtxSetCurrent(void *c) { return c == &ctx_tag ? 0 : 201; }\n"
	"int cuCtxSynchronize(void) { return 0; }\n"
	"int cuMemAlloc_v2(P *p, size_t n) { FAIL_AT(\"cuMemAlloc\");\n"
	"  void *m = n > (1ull << 40) ? NULL : malloc(n);\n"
	"  if (!m) return 2;\n"
	"  fake_allocs++; fake_live_allocs++; fake_last_alloc = (long)n;\n"
	"  *p = (P)(size_t)m; return 0; }\n"
	"int cuMemFree_v2(P p) { fake_live_allocs--; free((void *)(size_t)p); return 0; }\n"
	"int cuMemsetD8_v2(P p, unsigned char v, size_t n) { fake_memsets++;\n"
	"  if (fake_records % 2) fake_flushes_timed++;\n"
	"  memset((void *)(size_t)p, v, n); return 0; }\n"
	"int cuMemcpyHtoD_v2(P d, const void *s, size_t n) { memcpy((void *)(size_t)d, s, n); return 0; }\n"
	"int cuMemcpyDtoH_v2(void *d, P s, size_t n) { memcpy(d, (void *)(size_t)s, n); return 0; }\n"
	"int cuModuleLoadData(void **m, const void *img) { *m = (void *)img; return 0; }\n"
	"int cuModuleUnload(void *m) { (void)m; return 0; }\n"
	"static void vadd(unsigned n, void **a) {\n"
	"  float *x = *(float **)a[0], *y = *(float **)a[1], *z = *(float **)a[2];\n"
	"  for (unsigned i = 0; i < n; i++) z[i] = x[i] + y[i]; }\n"
	"static char knames[16][64]; static int nknames;\n"
	"char fake_kernel_log[1024];\n"
	"int cuModuleGetFunction(void **f, void *m, const char *name) { (void)m;\n"
	"  if (!strcmp(name, \"vadd\")) { *f = (void *)vadd; return 0; }\n"
	"  if (!strstr(name, \"_k\") || nknames == 16) return 500;\n"
	"  strncpy(knames[nknames], name, 63); *f = knames[nknames++]; return 0; }\n"
	"int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,\n"
	"  unsigned bz, unsigned sh, void *st, void **p, void **e) { (void)st; (void)e;\n"
	"  if (bx * by * bz > 1024 || (sh > 49152 && sh > fake_shared_allowed)) return 1;\n"
	"  fake_last_shared = sh;\n"
	"  fake_launches++;\n"
	"  if (f != (void *)vadd) { size_t n = strlen(fake_kernel_log);\n"
	"    if (n + strlen(f) + 2 < sizeof(fake_kernel_log)) { strcat(fake_kernel_log, f); strcat(fake_kernel_log, \" \"); }\n"
	"    return 0; }\n"
	"  ((void (*)(unsigned, void **))f)(gx * gy * gz * bx * by * bz * 4, p); return 0; }\n"
	"int cuEventCreate(void **e, unsigned f) { (void)f; FAIL_AT(\"cuEventCreate\");\n"
	"  *e = malloc(sizeof(float)); fake_live_events++; return 0; }\n"
	"int cuEventRecord(void *e, void *s) { (void)s; FAIL_AT(\"cuEventRecord\");\n"
	"  if (fake_launches_at_first_record < 0) fake_launches_at_first_record = fake_launches;\n"
	"  fake_records++; clock_ms += tick(); *(float *)e = clock_ms; return 0; }\n"
	"int cuEventSynchronize(void *e) { (void)e; FAIL_AT(\"cuEventSynchronize\"); return 0; }\n"
	"int cuEventElapsedTime(float *ms, void *a, void *b) { FAIL_AT(\"cuEventElapsedTime\");\n"
	"  *ms = *(float *)b - *(float *)a; return 0; }\n"
	"int cuEventDestroy_v2(void *e) { fake_live_events--; free(e); return 0; }\n"
	"int cuGetErrorName(int r, const char **s) { if (getenv(\"FAKE_CUDA_STUB\")) return 34;\n"
	"  *s = r == 2 ? \"CUDA_ERROR_OUT_OF_MEMORY\" :\n"
	"  r == 1 ? \"CUDA_ERROR_INVALID_VALUE\" : r == 500 ? \"CUDA_ERROR_NOT_FOUND\" : \"CUDA_ERROR_UNKNOWN\";\n"
	"  return 0; }\n"
	"int cuGetErrorString(int r, const char **s) { if (getenv(\"FAKE_CUDA_STUB\")) return 34;\n"
	"  *s = r == 2 ? \"out of memory\" : \"fake error\"; return 0; }\n";

/* Builds the stand-in as dir/libcuda.so.1; false when there is no compiler. */
static bool build_fake_driver(char dir[64], char lib[128])
{
	if (system("cc --version >/dev/null 2>&1") != 0)
		return false;
	char path[128], cmd[512];
	tu_temp_source("cuda", "fake.c", fake_driver, dir, path);
	snprintf(lib, 128, "%s/libcuda.so.1", dir);
	snprintf(cmd, sizeof(cmd), "cc -std=c11 -Wall -Werror -fPIC -shared -o %s %s", lib, path);
	ck_assert_int_eq(system(cmd), 0);
	unlink(path);
	return true;
}

/* Undoes build_fake_driver and TESSERA_CUDA_LIB pointing at it. */
static inline void drop_fake_driver(const char *dir, const char *lib)
{
	unsetenv("TESSERA_CUDA_LIB");
	unlink(lib);
	rmdir(dir);
}

/* A copy (in buf) of a string of the loaded stand-in. */
static inline const char *fake_str(const char *lib, const char *name, char *buf, size_t size)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	ck_assert_ptr_nonnull(h);
	const char *v = dlsym(h, name);
	ck_assert_msg(v != NULL, "the stand-in has no %s", name);
	snprintf(buf, size, "%s", v);
	dlclose(h);
	return buf;
}

/* A counter of the loaded stand-in (the runtime opened lib; dlopen of the
 * same path gives the same copy). */
static long fake_stat(const char *lib, const char *name)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	ck_assert_ptr_nonnull(h);
	long *v = dlsym(h, name);
	ck_assert_msg(v != NULL, "the stand-in has no %s", name);
	long r = *v;
	dlclose(h);
	return r;
}

/* The stand-in opened, "vadd" loaded and three device arrays of 4096
 * floats; launch covers them (8 blocks of 128 threads, 4 elements each). */
typedef struct fake_gpu {
	char dir[64], lib[128];
	ts_ctx *ctx;
	ts_cuda *cuda;
	ts_cuda_module *mod;
	ts_cuda_kernel k;
	ts_launch launch;
	ts_array *d[3];
} fake_gpu;

/* false (nothing to test) where there is no C compiler. */
static bool fake_gpu_open(fake_gpu *g)
{
	memset(g, 0, sizeof(*g));
	if (!build_fake_driver(g->dir, g->lib))
		return false;
	setenv("TESSERA_CUDA_LIB", g->lib, 1);
	g->ctx = ts_ctx_new();
	g->cuda = ts_cuda_open(g->ctx);
	ck_assert_msg(g->cuda != NULL, "%s", ts_last_error(g->ctx));
	g->mod = ts_cuda_module_load(g->ctx, g->cuda, "ptx", 4);
	ck_assert_int_eq(ts_cuda_module_kernel(g->ctx, g->mod, "vadd", &g->k), TS_OK);
	g->launch = (ts_launch){{8, 1, 1}, {128, 1, 1}, 0, 0};
	for (int i = 0; i < 3; i++) {
		g->d[i] = ts_cuda_array_new(g->ctx, g->cuda, ts_float32, 1, (int64_t[]){4096});
		ck_assert_ptr_nonnull(g->d[i]);
	}
	return true;
}

static void fake_gpu_close(fake_gpu *g)
{
	for (int i = 0; i < 3; i++)
		ts_cuda_array_free(g->d[i]);
	ts_cuda_module_unload(g->mod);
	ts_cuda_close(g->cuda);
	ts_ctx_free(g->ctx);
	unsetenv("TESSERA_CUDA_LIB");
	unlink(g->lib);
	rmdir(g->dir);
}

#endif
