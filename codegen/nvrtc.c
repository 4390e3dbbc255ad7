/*
 * nvrtc.c - compiling CUDA C with NVRTC opened by dlopen (see nvrtc.h).
 *
 * The NVRTC entry points are declared here with their C ABI (results are
 * ints, programs opaque pointers), so this file builds with or without the
 * CUDA headers.  The library is opened per compilation with RTLD_NODELETE:
 * after the first load, opening it again is a reference count, and no
 * process-wide state is kept here.
 */
#include "nvrtc.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct nvrtc_prog *nvrtc_program;

/* Entry points: field, symbol, required. */
#define NVRTC_FUNCS(X)                                                         \
	X(error_string, "nvrtcGetErrorString", true)                           \
	X(version, "nvrtcVersion", true)                                       \
	X(create, "nvrtcCreateProgram", true)                                  \
	X(destroy, "nvrtcDestroyProgram", true)                                \
	X(compile, "nvrtcCompileProgram", true)                                \
	X(log_size, "nvrtcGetProgramLogSize", true)                            \
	X(log, "nvrtcGetProgramLog", true)                                     \
	X(ptx_size, "nvrtcGetPTXSize", true)                                   \
	X(ptx, "nvrtcGetPTX", true)                                            \
	X(cubin_size, "nvrtcGetCUBINSize", true)                               \
	X(cubin, "nvrtcGetCUBIN", true)                                        \
	X(num_archs, "nvrtcGetNumSupportedArchs", false)                       \
	X(archs, "nvrtcGetSupportedArchs", false)

typedef struct nvrtc_api {
	void *lib;
	const char *(*error_string)(int);
	int (*version)(int *, int *);
	int (*create)(nvrtc_program *, const char *, const char *, int, const char *const *,
		      const char *const *);
	int (*destroy)(nvrtc_program *);
	int (*compile)(nvrtc_program, int, const char *const *);
	int (*log_size)(nvrtc_program, size_t *);
	int (*log)(nvrtc_program, char *);
	int (*ptx_size)(nvrtc_program, size_t *);
	int (*ptx)(nvrtc_program, char *);
	int (*cubin_size)(nvrtc_program, size_t *);
	int (*cubin)(nvrtc_program, char *);
	int (*num_archs)(int *);
	int (*archs)(int *);
} nvrtc_api;

static const char *const lib_names[] = {
	"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2",
	"/usr/local/cuda/lib64/libnvrtc.so",
};

static void *open_lib(ts_ctx *ctx)
{
	const char *env = getenv("TESSERA_NVRTC_LIB");
	int flags = RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE;
	if (env && env[0]) {
		void *lib = dlopen(env, flags);
		if (!lib)
			ts_error(ctx, TS_ERR_NO_DEVICE, "nvrtc: libnvrtc not found (TESSERA_NVRTC_LIB=%s)",
				 env);
		return lib;
	}
	for (size_t i = 0; i < TS_COUNT_OF(lib_names); i++) {
		void *lib = dlopen(lib_names[i], flags);
		if (lib)
			return lib;
	}
	ts_error(ctx, TS_ERR_NO_DEVICE,
		 "nvrtc: libnvrtc not found (tried libnvrtc.so, .so.13, .so.12, .so.11.2 and "
		 "/usr/local/cuda/lib64); CUDA compilation is unavailable");
	return NULL;
}

/* NVRTC opens its builtins library, libnvrtc-builtins.so.MAJOR.MINOR, by
 * name alone, so a libnvrtc found by its full path (TESSERA_NVRTC_LIB, the
 * toolkit's lib64 where the loader is not told of it, a Python package)
 * fails every compilation.  The loader matches a library already loaded by
 * its soname, so opening the builtins beside libnvrtc first is enough.  A
 * failure here is left to NVRTC, whose own message names the file. */
static void preload_builtins(const nvrtc_api *api)
{
	Dl_info info;
	int major = 0, minor = 0;
	if (!api->version || api->version(&major, &minor) != 0 ||
	    !dladdr(*(void *const *)&api->version, &info) || !info.dli_fname)
		return;
	const char *slash = strrchr(info.dli_fname, '/');
	if (!slash)
		return;
	char path[4096];
	int n = snprintf(path, sizeof(path), "%.*s/libnvrtc-builtins.so.%d.%d",
			 (int)(slash - info.dli_fname), info.dli_fname, major, minor);
	if (n > 0 && (size_t)n < sizeof(path))
		dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
}

static ts_status load_api(ts_ctx *ctx, nvrtc_api *api)
{
	memset(api, 0, sizeof(*api));
	api->lib = open_lib(ctx);
	if (!api->lib)
		return TS_ERR_NO_DEVICE;
#define X(field, sym, required)                                                \
	*(void **)&api->field = dlsym(api->lib, sym);                          \
	if (!api->field && (required)) {                                       \
		dlclose(api->lib);                                             \
		return ts_error(ctx, TS_ERR_NO_DEVICE, "nvrtc: libnvrtc lacks %s", sym); \
	}
	NVRTC_FUNCS(X)
#undef X
	preload_builtins(api);
	return TS_OK;
}

/* ---- architectures and targets ----------------------------------------------- */

/* The number in "sm_90a", or -1 when arch is not spelled as nvcc does. */
static int arch_number(const char *arch)
{
	const char *p;
	if (strncmp(arch, "sm_", 3) == 0)
		p = arch + 3;
	else if (strncmp(arch, "compute_", 8) == 0)
		p = arch + 8;
	else
		return -1;
	int n = 0, digits = 0;
	/* at most 3 digits are accepted, so stop accumulating before int
	 * overflows on "sm_99999999999" */
	for (; *p >= '0' && *p <= '9'; p++, digits++)
		if (digits < 4)
			n = n * 10 + (*p - '0');
	if ((*p == 'a' || *p == 'f') && p[1] == '\0')
		p++;
	return digits >= 2 && digits <= 3 && *p == '\0' ? n : -1;
}

ts_status cg_cuda_check_arch(ts_ctx *ctx, const char *arch)
{
	if (!arch || strlen(arch) >= CG_ARCH_MAX || arch_number(arch) < 0)
		return ts_error(ctx, TS_ERR_INVALID,
				"cuda: bad architecture '%s': expected sm_XY or compute_XY "
				"(e.g. sm_90, compute_80)", arch ? arch : "(null)");
	return TS_OK;
}

static ts_status target_option(ts_ctx *ctx, const char *target, const char *opt, size_t len,
			       char arch[CG_ARCH_MAX])
{
	if (len == 6 && strncmp(opt, "-arch=", 6) == 0) /* as llvm's "-mcpu=" */
		return ts_error(ctx, TS_ERR_INVALID, "target '%s': option '-arch' has no value (expected -arch=sm_XY)",
				target);
	if (len > 6 && strncmp(opt, "-arch=", 6) == 0) {
		char a[64];
		snprintf(a, sizeof(a), "%.*s", (int)(len - 6), opt + 6);
		if (cg_cuda_check_arch(ctx, a) != TS_OK)
			return TS_ERR_INVALID;
		if (arch[0]) /* as -mcpu for llvm: which one was meant is not ours to guess */
			return ts_error(ctx, TS_ERR_INVALID, "target '%s': option '-arch' given twice", target);
		strcpy(arch, a);
		return TS_OK;
	}
	return ts_error(ctx, TS_ERR_INVALID, "target '%s': unknown option '%.*s' (expected -arch=sm_XY)",
			target, (int)len, opt);
}

ts_status cg_cuda_parse_target(ts_ctx *ctx, const char *target, char arch[CG_ARCH_MAX])
{
	if (!arch)
		return ts_error(ctx, TS_ERR_INVALID, "cuda target: arch is NULL");
	arch[0] = '\0';
	const char *p = target ? target : "";
	p += strspn(p, " \t");
	size_t n = strcspn(p, " \t");
	if (n != 4 || strncmp(p, "cuda", 4) != 0)
		return ts_error(ctx, TS_ERR_INVALID, "target '%s' is not a cuda target (expected "
				"'cuda' or 'cuda -arch=sm_XY')", target ? target : "(null)");
	for (p += n;; p += n) {
		p += strspn(p, " \t");
		n = strcspn(p, " \t");
		if (n == 0)
			return TS_OK;
		if (target_option(ctx, target, p, n, arch) != TS_OK) {
			arch[0] = '\0';
			return TS_ERR_INVALID;
		}
	}
}

/* ---- compilation -------------------------------------------------------------- */

/* Rejects architectures this NVRTC cannot target, listing those it can. */
static ts_status check_supported(ts_ctx *ctx, const nvrtc_api *api, const char *arch)
{
	int n = 0, want = arch_number(arch), major = 0, minor = 0;
	if (!api->num_archs || !api->archs || api->num_archs(&n) != 0 || n <= 0 || n > 256)
		return TS_OK;
	int list[256];
	if (api->archs(list) != 0)
		return TS_OK;
	for (int i = 0; i < n; i++)
		if (list[i] == want)
			return TS_OK;
	api->version(&major, &minor);
	return ts_error(ctx, TS_ERR_UNSUPPORTED,
			"nvrtc: architecture %s is not supported by NVRTC %d.%d (it supports %d to %d)",
			arch, major, minor, list[0], list[n - 1]);
}

static char *program_log(const nvrtc_api *api, nvrtc_program prog)
{
	size_t n = 0;
	if (api->log_size(prog, &n) != 0 || n == 0)
		n = 1;
	char *log = calloc(1, n);
	if (log && n > 1 && api->log(prog, log) != 0)
		log[0] = '\0';
	return log;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static ts_status fetch_image(ts_ctx *ctx, const nvrtc_api *api, nvrtc_program prog,
			     const char *name, cg_nvrtc_result *out)
{
	size_t n = 0;
	int r = out->is_cubin ? api->cubin_size(prog, &n) : api->ptx_size(prog, &n);
	if (r == 0 && !(out->image = malloc(n ? n : 1)))
		return ts_error(ctx, TS_ERR_NOMEM, "nvrtc: out of memory for the %zu-byte image of %s",
				n, name);
	if (r == 0)
		r = out->is_cubin ? api->cubin(prog, out->image) : api->ptx(prog, out->image);
	if (r != 0)
		return ts_error(ctx, TS_ERR_RUNTIME, "nvrtc: reading the %s of %s failed: %s",
				out->is_cubin ? "CUBIN" : "PTX", name, api->error_string(r));
	out->size = n;
	return TS_OK;
}

static ts_status compile(ts_ctx *ctx, const nvrtc_api *api, const char *src, const char *name,
			 const char *arch, cg_nvrtc_result *out)
{
	nvrtc_program prog = NULL;
	char file[96], opt[48];
	snprintf(file, sizeof(file), "%.80s.cu", name);
	snprintf(opt, sizeof(opt), "--gpu-architecture=%s", arch);
	int r = api->create(&prog, src, file, 0, NULL, NULL);
	if (r != 0)
		return ts_error(ctx, TS_ERR_RUNTIME, "nvrtc: nvrtcCreateProgram for %s failed: %s",
				name, api->error_string(r));
	const char *opts[] = {opt};
	double t0 = now_ms();
	r = api->compile(prog, 1, opts);
	out->compile_ms = now_ms() - t0;
	out->log = program_log(api, prog);
	ts_status st = TS_OK;
	if (!out->log)
		st = ts_error(ctx, TS_ERR_NOMEM, "nvrtc: out of memory for the log of %s", name);
	else if (r != 0)
		st = ts_error(ctx, TS_ERR_RUNTIME, "nvrtc: compiling kernel %s for %s failed:\n%s",
			      name, arch, out->log[0] ? out->log : api->error_string(r));
	else
		st = fetch_image(ctx, api, prog, name, out);
	api->destroy(&prog);
	return st;
}

ts_status cg_nvrtc_compile(ts_ctx *ctx, const char *src, const char *name, const char *arch,
			   cg_nvrtc_result *out)
{
	if (!out)
		return ts_error(ctx, TS_ERR_INVALID, "nvrtc: result is NULL");
	memset(out, 0, sizeof(*out));
	if (!src || !name)
		return ts_error(ctx, TS_ERR_INVALID, "nvrtc: %s is NULL", src ? "kernel name" : "source");
	if (cg_cuda_check_arch(ctx, arch) != TS_OK)
		return TS_ERR_INVALID;
	nvrtc_api api;
	ts_status st = load_api(ctx, &api);
	if (st != TS_OK)
		return st;
	strcpy(out->arch, arch);
	out->is_cubin = strncmp(arch, "sm_", 3) == 0;
	st = check_supported(ctx, &api, arch);
	if (st == TS_OK)
		st = compile(ctx, &api, src, name, arch, out);
	if (st != TS_OK) {
		free(out->image);
		out->image = NULL;
		out->size = 0;
	}
	dlclose(api.lib);
	return st;
}

ts_status cg_nvrtc_version(ts_ctx *ctx, int *major, int *minor)
{
	/* refused here: nvrtcVersion's own check of its outputs is NVRTC's
	 * to keep or drop, and its message would not name the argument */
	if (!major || !minor)
		return ts_error(ctx, TS_ERR_INVALID, "nvrtc_version: %s is NULL",
				!major ? "major" : "minor");
	nvrtc_api api;
	ts_status st = load_api(ctx, &api);
	if (st != TS_OK)
		return st;
	int r = api.version(major, minor);
	if (r != 0)
		st = ts_error(ctx, TS_ERR_RUNTIME, "nvrtc: nvrtcVersion failed: %s", api.error_string(r));
	dlclose(api.lib);
	return st;
}

void cg_nvrtc_result_free(cg_nvrtc_result *r)
{
	if (!r)
		return;
	free(r->image);
	free(r->log);
	r->image = NULL;
	r->log = NULL;
	r->size = 0;
}
