/* test_cuda.c - CUDA C through NVRTC, target parsing, and the driver's
 * absence.  Needs no GPU; exits 77 (skip) only when libnvrtc cannot be
 * loaded, after running the tests that do not need it. */
#include "testutil.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "build_cuda.h"
#include "cg_kernels.h"
#include "nvrtc.h"
#include "cuda_test.h"
#include "fake_cuda.h"

/* Compiles f's CUDA C for arch and checks the image kind. */
static void compile_ok(ts_func *(*build)(ts_ctx *), const char *arch)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_func *f = build(ctx);
	const char *src = cg_emit_cuda(ctx, f, NULL);
	ck_assert_msg(src != NULL, "%s", ts_last_error(ctx));
	cg_nvrtc_result r;
	ts_status st = cg_nvrtc_compile(ctx, src, f->name, arch, &r);
	ck_assert_msg(st == TS_OK, "%s", ts_last_error(ctx));
	ck_assert_str_eq(r.arch, arch);
	ck_assert(r.size > 0 && r.log != NULL && r.compile_ms >= 0);
	if (strncmp(arch, "sm_", 3) == 0) {
		ck_assert(r.is_cubin);
		ck_assert_int_eq(memcmp(r.image, "\x7f" "ELF", 4), 0);
	} else {
		ck_assert(!r.is_cubin);
		ck_assert_int_eq(r.image[r.size - 1], '\0');
		char entry[64], target[64];
		snprintf(entry, sizeof(entry), ".entry %s(", f->name);
		snprintf(target, sizeof(target), ".target sm_%s", arch + strlen("compute_"));
		ck_assert_msg(strstr(r.image, entry) != NULL, "no '%s' in the PTX", entry);
		ck_assert_msg(strstr(r.image, target) != NULL, "no '%s' in the PTX", target);
	}
	cg_nvrtc_result_free(&r);
	ts_ctx_free(ctx);
}

static ts_func *gemm(ts_ctx *ctx)
{
	return kg_gemm(ctx, 128, 96, 160, true);
}

static ts_func *vadd(ts_ctx *ctx)
{
	return kg_vadd_cuda(ctx, 1 << 16);
}

/* Y[i] = x * 1.5 - max(x, h(f)) / 3 + h(f) over 16-bit floats x = X[i]
 * and h(f) = F[i] rounded, 128 threads a block: stored as their bits,
 * computed in float, converted with PTX's cvt for float16. */
static ts_func *half_kernel(ts_ctx *ctx, ts_dtype h)
{
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1000), h);
	ts_tensor *F = ts_placeholder(ctx, "F", TS_SHAPE(1000), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_expr *x = TS_READ(ctx, X, i), *hf = ts_cast(ctx, h, TS_READ(ctx, F, i));
	ts_tensor *Y = ts_compute(ctx, "Y", TS_SHAPE(1000), TS_VARS(i),
				  ts_add(ctx, ts_sub(ctx, ts_mul(ctx, x, ts_fconst(ctx, h, 1.5)),
						     ts_div(ctx, ts_max(ctx, x, hf), ts_fconst(ctx, h, 3))), hf));
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	ts_stage *sy = ts_stage_of(s, Y);
	ts_axis *bx, *tx;
	tu_ok(ctx, ts_split(sy, ts_axis_of(sy, 0), 128, &bx, &tx));
	tu_ok(ctx, ts_bind(sy, bx, TS_BLOCK_X));
	tu_ok(ctx, ts_bind(sy, tx, TS_THREAD_X));
	ts_func *f = ts_lower(s, "halves", 3, (ts_tensor *[]){X, F, Y});
	tu_check_func_interp(ctx, f, 0);
	return f;
}

static ts_func *half_f16(ts_ctx *ctx)
{
	return half_kernel(ctx, ts_float16);
}

static ts_func *half_bf16(ts_ctx *ctx)
{
	return half_kernel(ctx, ts_bfloat16);
}

/* float16 and bfloat16 kernels compile for sm_80 and sm_90 (and run on
 * the interpreter, checked against the reference evaluator). */
START_TEST(test_half_kernels)
{
	compile_ok(half_f16, "sm_80");
	compile_ok(half_bf16, "sm_80");
	compile_ok(half_f16, "sm_90");
	compile_ok(half_bf16, "sm_90");
	ts_ctx *ctx = ts_ctx_new();
	const char *src = cg_emit_cuda(ctx, half_f16(ctx), NULL);
	tu_nonnull(ctx, src);
	ck_assert(strstr(src, "cvt.rn.f16.f32") && strstr(src, "unsigned short *"));
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_gemm_sm80)
{
	compile_ok(gemm, "sm_80");
}
END_TEST

START_TEST(test_gemm_sm90)
{
	compile_ok(gemm, "sm_90");
}
END_TEST

START_TEST(test_gemm_ptx)
{
	compile_ok(gemm, "compute_90");
}
END_TEST

/* The guarded division and conversion helpers compile as device code. */
START_TEST(test_divsem_helpers)
{
	compile_ok(kg_divsem, "sm_80");
	compile_ok(kg_divsem, "compute_90");
}
END_TEST

START_TEST(test_conv_and_vadd)
{
	compile_ok(kg_conv, "sm_80");
	compile_ok(kg_conv, "sm_90");
	compile_ok(vadd, "sm_90");
	compile_ok(vadd, "compute_80");
}
END_TEST

START_TEST(test_syntax_error)
{
	ts_ctx *ctx = ts_ctx_new();
	const char *src = "extern \"C\" __global__ void broken(float *a)\n{\n  a[0] = ;\n}\n";
	cg_nvrtc_result r;
	ck_assert_int_eq(cg_nvrtc_compile(ctx, src, "broken", "sm_80", &r), TS_ERR_RUNTIME);
	tu_assert_error(ctx, "nvrtc: compiling kernel broken for sm_80 failed:\n");
	tu_assert_error(ctx, "error");
	tu_assert_error(ctx, "broken.cu(3)");
	ck_assert_ptr_null(r.image);
	ck_assert_ptr_nonnull(strstr(r.log, "expected an expression"));
	cg_nvrtc_result_free(&r);
	ts_ctx_free(ctx);
}
END_TEST

/* A libnvrtc named by its full path in a directory the loader is not told
 * of (TESSERA_NVRTC_LIB, a Python package, a relocated toolkit) still
 * compiles: its builtins library is taken from beside it, not looked up by
 * name.  Checked by the path the builtins are mapped from. */
START_TEST(test_nvrtc_builtins_beside_lib)
{
	static const char *const real_libs[] = {"/usr/local/cuda/lib64/libnvrtc.so",
						 "/usr/local/cuda/lib64/libnvrtc.so.13"};
	char real[4096] = "";
	for (size_t i = 0; i < TS_COUNT_OF(real_libs) && !real[0]; i++)
		if (!realpath(real_libs[i], real))
			real[0] = '\0';
	if (!real[0]) {
		printf("test_nvrtc_builtins_beside_lib: no libnvrtc in /usr/local/cuda/lib64; not checked\n");
		return;
	}
	char dir[] = "/tmp/tessera-nvrtc-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char cmd[2 * sizeof(real) + 2 * sizeof(dir) + 128];
	snprintf(cmd, sizeof(cmd),
		 "ln -s '%s' '%s/libnvrtc.so' && cp \"$(dirname '%s')\"/libnvrtc-builtins.so.*.* '%s/'",
		 real, dir, real, dir);
	ck_assert_int_eq(system(cmd), 0);
	char lib[sizeof(dir) + 16];
	snprintf(lib, sizeof(lib), "%s/libnvrtc.so", dir);
	setenv("TESSERA_NVRTC_LIB", lib, 1);
	compile_ok(vadd, "sm_80");
	unsetenv("TESSERA_NVRTC_LIB");

	FILE *maps = fopen("/proc/self/maps", "r");
	ck_assert_ptr_nonnull(maps);
	char want[sizeof(dir) + 32], line[8192];
	snprintf(want, sizeof(want), "%s/libnvrtc-builtins.so.", dir);
	bool beside = false;
	while (!beside && fgets(line, sizeof(line), maps))
		beside = strstr(line, want) != NULL;
	fclose(maps);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_msg(beside, "the builtins were not loaded from beside %s", lib);
}
END_TEST

START_TEST(test_bad_arch)
{
	ts_ctx *ctx = ts_ctx_new();
	cg_nvrtc_result r;
	ck_assert_int_eq(cg_nvrtc_compile(ctx, "", "k", "sm_1x", &r), TS_ERR_INVALID);
	tu_assert_error(ctx, "cuda: bad architecture 'sm_1x': expected sm_XY or compute_XY");
	cg_nvrtc_result_free(&r);
	ts_clear_error(ctx);
	/* well formed, but older than anything this NVRTC targets */
	ck_assert_int_eq(cg_nvrtc_compile(ctx, "", "k", "sm_20", &r), TS_ERR_UNSUPPORTED);
	tu_assert_error(ctx, "nvrtc: architecture sm_20 is not supported by NVRTC");
	cg_nvrtc_result_free(&r);
	ts_ctx_free(ctx);
}
END_TEST

/* The CUDA builder behind ts_build takes NULL phase times (it wrote
 * through them) and refuses NULL arguments by name. */
START_TEST(test_cuda_build_args)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(100), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *B = ts_compute(ctx, "B", TS_SHAPE(100), TS_VARS(i),
				  ts_add(ctx, TS_READ(ctx, A, i), ts_float(ctx, 1)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &B);
	tu_ok(ctx, ts_schedule_default_cuda(s, 64));
	ts_func *f = ts_lower(s, "vadd1", 2, (ts_tensor *[]){A, B});
	tu_nonnull(ctx, f);
	cg_cuda_module *m = NULL;
	tu_ok(ctx, cg_cuda_build(ctx, f, "cuda -arch=sm_80", &m, NULL));
	ck_assert_ptr_nonnull(m);
	cg_cuda_free(m);
	m = (cg_cuda_module *)ctx; /* overwritten */
	ck_assert_int_eq(cg_cuda_build(ctx, NULL, "cuda -arch=sm_80", &m, NULL), TS_ERR_INVALID);
	ck_assert_ptr_null(m);
	tu_assert_error(ctx, "cuda build: NULL function");
	ts_clear_error(ctx);
	ck_assert_int_eq(cg_cuda_build(ctx, f, "cuda -arch=sm_80", NULL, NULL), TS_ERR_INVALID);
	tu_assert_error(ctx, "cuda build: NULL module pointer");
	ts_clear_error(ctx);
	/* ts_build reads the target's words as the parser does: tabs too */
	ts_module *mod = ts_build(ctx, f, "cuda\t-arch=sm_80");
	tu_nonnull(ctx, mod);
	ck_assert_ptr_nonnull(strstr(ts_module_source(mod, "cuda"), "vadd1"));
	/* run without a GPU: the reason, not the arguments' device */
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (lib) {
		dlclose(lib);
	} else {
		ts_array *a = ts_array_new(NULL, ts_float32, 1, (int64_t[]){100});
		ts_array *b = ts_array_new(NULL, ts_float32, 1, (int64_t[]){100});
		ts_timing t;
		ck_assert_int_eq(ts_module_run(mod, 2, (ts_array *[]){a, b}), TS_ERR_NO_DEVICE);
		tu_assert_error(ctx, "call vadd1: compiled for sm_80 without a GPU; it can be inspected but not run here");
		ck_assert_int_eq(ts_module_launch(mod, 2, (ts_array *[]){a, b}), TS_ERR_NO_DEVICE);
		ck_assert_int_eq(ts_module_time(mod, 2, (ts_array *[]){a, b}, 1, 3, &t), TS_ERR_NO_DEVICE);
		tu_assert_error(ctx, "without a GPU");
		ts_clear_error(ctx);
		ts_array_free(a);
		ts_array_free(b);
	}
	ts_module_free(mod);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_parse_target)
{
	ts_ctx *ctx = ts_ctx_new();
	char arch[CG_ARCH_MAX];
	ck_assert_int_eq(cg_cuda_parse_target(ctx, "cuda", arch), TS_OK);
	ck_assert_str_eq(arch, "");
	ck_assert_int_eq(cg_cuda_parse_target(ctx, "cuda -arch=sm_90", arch), TS_OK);
	ck_assert_str_eq(arch, "sm_90");
	ck_assert_int_eq(cg_cuda_parse_target(ctx, "  cuda  -arch=compute_80 ", arch), TS_OK);
	ck_assert_str_eq(arch, "compute_80");
	ck_assert_int_eq(cg_cuda_parse_target(ctx, "cuda -arch=sm_90a", arch), TS_OK);
	ck_assert_str_eq(arch, "sm_90a");

	ck_assert_int_eq(cg_cuda_parse_target(ctx, "cuda -arch=sm_1x", arch), TS_ERR_INVALID);
	tu_assert_error(ctx, "cuda: bad architecture 'sm_1x'");
	ck_assert_str_eq(arch, "");
	ts_clear_error(ctx);
	ck_assert_int_eq(cg_cuda_parse_target(ctx, "cuda -arch=", arch), TS_ERR_INVALID);
	tu_assert_error(ctx, "target 'cuda -arch=': option '-arch' has no value");
	ts_clear_error(ctx);
	ck_assert_int_eq(cg_cuda_parse_target(ctx, "cuda -arch=sm_80 -arch=sm_90", arch), TS_ERR_INVALID);
	tu_assert_error(ctx, "target 'cuda -arch=sm_80 -arch=sm_90': option '-arch' given twice");
	ck_assert_str_eq(arch, "");
	ts_clear_error(ctx);
	ck_assert_int_eq(cg_cuda_parse_target(ctx, "cuda -O3", arch), TS_ERR_INVALID);
	tu_assert_error(ctx, "target 'cuda -O3': unknown option '-O3'");
	ts_clear_error(ctx);
	ck_assert_int_eq(cg_cuda_parse_target(ctx, "llvm", arch), TS_ERR_INVALID);
	tu_assert_error(ctx, "target 'llvm' is not a cuda target");
	ts_clear_error(ctx);
	ck_assert_int_eq(cg_cuda_parse_target(ctx, "cudax", arch), TS_ERR_INVALID);
	tu_assert_error(ctx, "target 'cudax' is not a cuda target");
	ts_clear_error(ctx);
	ck_assert_int_eq(cg_cuda_check_arch(ctx, "compute_9"), TS_ERR_INVALID);
	ck_assert_int_eq(cg_cuda_check_arch(ctx, "sm_100f"), TS_OK);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_missing_nvrtc)
{
	ts_ctx *ctx = ts_ctx_new();
	setenv("TESSERA_NVRTC_LIB", "/nonexistent/libnvrtc.so", 1);
	cg_nvrtc_result r;
	ck_assert_int_eq(cg_nvrtc_compile(ctx, "", "k", "sm_80", &r), TS_ERR_NO_DEVICE);
	tu_assert_error(ctx, "nvrtc: libnvrtc not found");
	cg_nvrtc_result_free(&r);
	int major, minor;
	ck_assert_int_eq(cg_nvrtc_version(ctx, &major, &minor), TS_ERR_NO_DEVICE);
	unsetenv("TESSERA_NVRTC_LIB");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_no_driver)
{
	ts_ctx *ctx = ts_ctx_new();
	setenv("TESSERA_CUDA_LIB", "/nonexistent/libcuda.so.1", 1);
	ck_assert_ptr_null(ts_cuda_open(ctx));
	ck_assert_int_eq(ts_last_status(ctx), TS_ERR_NO_DEVICE);
	tu_assert_error(ctx, "cuda: driver library /nonexistent/libcuda.so.1 not found "
			     "(no NVIDIA driver); CPU path only");
	unsetenv("TESSERA_CUDA_LIB");
	ts_clear_error(ctx);

	/* the real library, when this machine has none */
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (lib) {
		dlclose(lib);
	} else {
		ck_assert_ptr_null(ts_cuda_open(ctx));
		ck_assert_int_eq(ts_last_status(ctx), TS_ERR_NO_DEVICE);
		ck_assert_str_eq(ts_last_error(ctx), "cuda: driver library libcuda.so.1 not found "
						     "(no NVIDIA driver); CPU path only");
		ts_clear_error(ctx);
	}

	/* device calls without a device fail cleanly */
	ck_assert_ptr_null(ts_cuda_array_new(ctx, NULL, ts_float32, 1, (int64_t[]){4}));
	tu_assert_error(ctx, "cuda: array: no device (ts_cuda_open failed)");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_cuda_module_load(ctx, NULL, "x", 2));
	ck_assert_int_eq(ts_last_status(ctx), TS_ERR_NO_DEVICE);
	tu_assert_error(ctx, "cuda: module load: no device (ts_cuda_open failed)");
	ts_clear_error(ctx);
	int64_t l2 = 7;
	ck_assert_int_eq(ts_cuda_l2_bytes(ctx, NULL, &l2), TS_ERR_NO_DEVICE);
	tu_assert_error(ctx, "cuda: L2 size: no device (ts_cuda_open failed)");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_cuda_synchronize(ctx, NULL), TS_ERR_NO_DEVICE);
	ts_clear_error(ctx);
	ts_array *h = ts_array_new(ctx, ts_float32, 1, (int64_t[]){4});
	ck_assert_int_eq(ts_cuda_copy_to_device(ctx, h, h), TS_ERR_INVALID);
	tu_assert_error(ctx, "cuda: copy to device: needs a device array (from ts_cuda_array_new) and a host array");
	ts_cuda_array_free(h); /* a host array is freed as one */
	ts_cuda_array_free(NULL);
	ts_cuda_close(NULL);
	ts_ctx_free(ctx);
}
END_TEST


/* ---- the runtime against a stand-in driver ------------------------------------ */

static ts_array *filled(int64_t n, uint64_t seed)
{
	ts_array *a = ts_array_new(NULL, ts_float32, 1, &n);
	ts_array_fill_random(a, seed, -1, 1);
	return a;
}

/* Device arrays, copies and a launch with kg_vadd_cuda's configuration. */
static void fake_vadd(ts_ctx *ctx, ts_cuda *cuda)
{
	cg_launch l;
	ck_assert_ptr_nonnull(cg_emit_cuda(ctx, kg_vadd_cuda(ctx, 4096), &l));
	ts_cuda_module *m = ts_cuda_module_load(ctx, cuda, "ptx", 4);
	ts_cuda_kernel k;
	ck_assert_int_eq(ts_cuda_module_kernel(ctx, m, "vadd", &k), TS_OK);
	ts_array *h[3] = {filled(4096, 1), filled(4096, 2), filled(4096, 3)}, *d[3];
	for (int i = 0; i < 3; i++) {
		d[i] = ts_cuda_array_new(ctx, cuda, ts_float32, 1, h[i]->shape);
		ck_assert_int_eq(ts_cuda_copy_to_device(ctx, d[i], h[i]), TS_OK);
	}
	ck_assert_int_eq(ts_cuda_launch(ctx, &k, &l, 3, d), TS_OK);
	ck_assert_int_eq(ts_cuda_synchronize(ctx, cuda), TS_OK);
	ck_assert_int_eq(ts_cuda_copy_to_host(ctx, h[2], d[2]), TS_OK);
	for (int i = 0; i < 4096; i++)
		ck_assert_float_eq(((float *)h[2]->data)[i],
				   ((float *)h[0]->data)[i] + ((float *)h[1]->data)[i]);
	ts_timing t;
	ts_cuda_time_opts o = {.warmup = 2, .repeats = 5};
	ck_assert_int_eq(ts_cuda_time_kernel(ctx, &k, &l, 3, d, &o, &t), TS_OK);
	ck_assert_double_eq_tol(t.median, 1.5e-3, 1e-12); /* the stand-in's clock */
	ck_assert_int_eq(t.samples, 5);

	cg_launch big = l;
	big.block[0] = 2048;
	ck_assert_int_eq(ts_cuda_launch(ctx, &k, &big, 3, d), TS_ERR_RUNTIME);
	ck_assert_str_eq(ts_last_error(ctx), "cuda: cuLaunchKernel(vadd, grid (8, 1, 1), block (2048, "
			 "1, 1), 0 shared bytes) failed: CUDA_ERROR_INVALID_VALUE (fake error)");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_cuda_launch(ctx, &k, &l, 3, (ts_array *[]){d[0], h[1], d[2]}), TS_ERR_INVALID);
	tu_assert_error(ctx, "cuda: launching vadd: argument 1 is not an array on this device");
	ts_clear_error(ctx);
	/* dynamic shared memory: allowed up to the device's opt-in limit (the
	 * stand-in's 232448); a kernel struct not made by ts_cuda_module_kernel
	 * (its name unterminated, which every message prints) is refused */
	ck_assert_int_eq(ts_cuda_kernel_allow_shared(ctx, &k, 100000), TS_OK);
	ck_assert_int_eq(ts_cuda_kernel_allow_shared(ctx, &k, 300000), TS_ERR_UNSUPPORTED);
	tu_assert_error(ctx, "cuda: kernel vadd needs 300000 bytes of shared memory per block; Fake GPU "
			     "(sm_90) gives at most 232448");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_cuda_kernel_allow_shared(ctx, &k, -1), TS_ERR_INVALID);
	ck_assert_int_eq(ts_cuda_kernel_allow_shared(ctx, NULL, 1), TS_ERR_INVALID);
	ck_assert_int_eq(ts_cuda_kernel_allow_shared(NULL, &k, 1), TS_ERR_INVALID);
	ts_clear_error(ctx);
	ts_cuda_kernel forged = k;
	memset(forged.name, 'A', sizeof forged.name);
	ck_assert_int_eq(ts_cuda_launch(ctx, &forged, &l, 3, d), TS_ERR_INVALID);
	tu_assert_error(ctx, "cuda: launch: not a kernel ts_cuda_module_kernel made (its name is not "
			     "terminated)");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_cuda_kernel_allow_shared(ctx, &forged, 1), TS_ERR_INVALID);
	tu_assert_error(ctx, "its name is not terminated");
	ts_clear_error(ctx);
	for (int i = 0; i < 3; i++) {
		ts_cuda_array_free(d[i]);
		ts_array_free(h[i]);
	}
	ts_cuda_module_unload(m);
}

START_TEST(test_fake_driver)
{
	char dir[64], lib[128];
	if (!build_fake_driver(dir, lib))
		return;
	setenv("TESSERA_CUDA_LIB", lib, 1);
	ts_ctx *ctx = ts_ctx_new();
	ts_cuda *cuda = ts_cuda_open(ctx);
	ck_assert_msg(cuda != NULL, "%s", ts_last_error(ctx));
	ck_assert_str_eq(ts_cuda_device_name(cuda), "Fake GPU");
	ck_assert_str_eq(ts_cuda_arch(cuda), "sm_90");
	fake_vadd(ctx, cuda);

	ck_assert_ptr_null(ts_cuda_array_new(ctx, cuda, ts_float32, 1, (int64_t[]){1ll << 44}));
	ck_assert_int_eq(ts_last_status(ctx), TS_ERR_NOMEM);
	ck_assert_str_eq(ts_last_error(ctx), "cuda: cuMemAlloc(70368744177664 bytes) failed: "
			 "CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
	ts_clear_error(ctx);
	ts_cuda_module *m = ts_cuda_module_load(ctx, cuda, "ptx", 4);
	ts_cuda_kernel k;
	ck_assert_int_eq(ts_cuda_module_kernel(ctx, m, "gemm", &k), TS_ERR_RUNTIME);
	tu_assert_error(ctx, "cuda: cuModuleGetFunction(gemm) failed: CUDA_ERROR_NOT_FOUND");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_cuda_module_load(ctx, cuda, "no terminator", 3));
	tu_assert_error(ctx, "cuda: module load: PTX image is not NUL-terminated");
	ts_cuda_module_unload(m);
	ts_cuda_close(cuda);

	setenv("FAKE_CUDA_NO_DEVICE", "1", 1);
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_cuda_open(ctx));
	ck_assert_int_eq(ts_last_status(ctx), TS_ERR_NO_DEVICE);
	ck_assert_str_eq(ts_last_error(ctx), "cuda: no CUDA device found");
	unsetenv("FAKE_CUDA_NO_DEVICE");

	/* the toolkit's stub library, which cannot name its own error */
	setenv("FAKE_CUDA_STUB", "1", 1);
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_cuda_open(ctx));
	ck_assert_int_eq(ts_last_status(ctx), TS_ERR_NO_DEVICE);
	ck_assert_str_eq(ts_last_error(ctx), "cuda: cuInit failed: CUDA_ERROR_STUB_LIBRARY (the library "
			 "is the CUDA toolkit's stub, not an NVIDIA driver: no GPU driver is "
			 "installed; CPU path only)");
	unsetenv("FAKE_CUDA_STUB");
	ts_ctx_free(ctx);
	drop_fake_driver(dir, lib);
}
END_TEST

/* Every repeat has its own event pair, after the warm-up launches, and
 * min, median, mean, max and stddev come from the per-repeat times: ticks
 * 1,2,1,5,1,3,1,9 make the pairs 2, 5, 3 and 9 ms apart. */
START_TEST(test_fake_timing_stats)
{
	fake_gpu g;
	if (!fake_gpu_open(&g))
		return;
	long launches = fake_stat(g.lib, "fake_launches"), records = fake_stat(g.lib, "fake_records");
	setenv("FAKE_CUDA_TICKS", "1,2,1,5,1,3,1,9", 1);
	ts_timing t;
	ts_cuda_time_opts o = {.warmup = 3, .repeats = 4};
	tu_ok(g.ctx, ts_cuda_time_kernel(g.ctx, &g.k, &g.launch, 3, g.d, &o, &t));
	unsetenv("FAKE_CUDA_TICKS");
	ck_assert_double_eq_tol(t.min, 2e-3, 1e-12);
	ck_assert_double_eq_tol(t.median, 4e-3, 1e-12);
	ck_assert_double_eq_tol(t.mean, 4.75e-3, 1e-12);
	ck_assert_double_eq_tol(t.max, 9e-3, 1e-12);
	ck_assert_double_eq_tol(t.stddev, sqrt(7.1875) * 1e-3, 1e-12);
	ck_assert_int_eq(t.samples, 4);
	ck_assert(t.min < t.median && t.median < t.mean);
	ck_assert_int_eq(fake_stat(g.lib, "fake_launches") - launches, 3 + 4);
	ck_assert_int_eq(fake_stat(g.lib, "fake_launches_at_first_record") - launches, 3);
	ck_assert_int_eq(fake_stat(g.lib, "fake_records") - records, 2 * 4);
	ck_assert_int_eq(fake_stat(g.lib, "fake_live_events"), 0);
	ck_assert_int_eq(fake_stat(g.lib, "fake_memsets"), 3); /* the arrays' zeroing only */
	/* the CUDA timer's samples are judged like the CPU timers': four are
	 * too few; eight, all on whole milliseconds, are quantized */
	ck_assert_uint_eq(t.flags, TS_TIMING_FEW);
	ck_assert_double_eq_tol(t.p10, 2e-3, 1e-12);
	ck_assert_double_eq_tol(t.p90, 9e-3, 1e-12);
	setenv("FAKE_CUDA_TICKS", "1,2,1,5,1,3,1,9", 1);
	o.repeats = 8;
	tu_ok(g.ctx, ts_cuda_time_kernel(g.ctx, &g.k, &g.launch, 3, g.d, &o, &t));
	unsetenv("FAKE_CUDA_TICKS");
	ck_assert_int_eq(t.samples, 8);
	ck_assert(t.flags & TS_TIMING_QUANTIZED);
	ck_assert(!(t.flags & TS_TIMING_FEW));
	char why[256];
	ck_assert_msg(strstr(ts_timing_verdict(&t, why, sizeof why), "8 of 8 samples on whole "
			     "milliseconds"), "%s", why);
	fake_gpu_close(&g);
}
END_TEST

/* With flush_l2 one buffer of twice the reported L2 size is allocated,
 * written before each repeat outside its event pair, and freed; without,
 * nothing is allocated or written. */
START_TEST(test_fake_timing_flush_l2)
{
	fake_gpu g;
	if (!fake_gpu_open(&g))
		return;
	setenv("FAKE_CUDA_L2", "3000000", 1);
	int64_t l2 = 0;
	tu_ok(g.ctx, ts_cuda_l2_bytes(g.ctx, g.cuda, &l2));
	ck_assert_int_eq(l2, 3000000);
	long allocs = fake_stat(g.lib, "fake_allocs"), memsets = fake_stat(g.lib, "fake_memsets");
	ts_timing t;
	ts_cuda_time_opts o = {.warmup = 1, .repeats = 5, .flush_l2 = true};
	tu_ok(g.ctx, ts_cuda_time_kernel(g.ctx, &g.k, &g.launch, 3, g.d, &o, &t));
	ck_assert_double_eq_tol(t.median, 1.5e-3, 1e-12); /* the flush is not timed */
	ck_assert_int_eq(fake_stat(g.lib, "fake_allocs") - allocs, 1);
	ck_assert_int_eq(fake_stat(g.lib, "fake_last_alloc"), 6000000);
	ck_assert_int_eq(fake_stat(g.lib, "fake_live_allocs"), 3); /* the arrays */
	ck_assert_int_eq(fake_stat(g.lib, "fake_memsets") - memsets, 5);
	ck_assert_int_eq(fake_stat(g.lib, "fake_flushes_timed"), 0);
	ck_assert_int_eq(fake_stat(g.lib, "fake_live_events"), 0);

	o.flush_l2 = false;
	tu_ok(g.ctx, ts_cuda_time_kernel(g.ctx, &g.k, &g.launch, 3, g.d, &o, &t));
	ck_assert_int_eq(fake_stat(g.lib, "fake_allocs") - allocs, 1);
	ck_assert_int_eq(fake_stat(g.lib, "fake_memsets") - memsets, 5);
	unsetenv("FAKE_CUDA_L2");
	fake_gpu_close(&g);
}
END_TEST

/* The README's flow: the user opens the GPU and makes arrays through their
 * own handle; ts_build(ctx, f, "cuda") compiles with NVRTC and loads the
 * kernel through a handle of its own; the arrays are valid in the module
 * (they belong to the device, not to a handle).  C = A + B over 4096
 * floats, laid out as the stand-in's kernel computes it: 8 blocks of 128
 * threads, 4 elements each. */
START_TEST(test_readme_flow_fake_driver)
{
	char dir[64], lib[128];
	if (!build_fake_driver(dir, lib))
		return;
	setenv("TESSERA_CUDA_LIB", lib, 1);
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(4096), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(4096), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(4096), TS_VARS(i),
				  ts_add(ctx, TS_READ(ctx, A, i), TS_READ(ctx, B, i)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *o, *v, *bx, *tx;
	tu_ok(ctx, ts_split(sc, ts_axis_of(sc, 0), 4, &o, &v));
	tu_ok(ctx, ts_split(sc, o, 128, &bx, &tx));
	tu_ok(ctx, ts_bind(sc, bx, TS_BLOCK_X));
	tu_ok(ctx, ts_bind(sc, tx, TS_THREAD_X));
	tu_ok(ctx, ts_vectorize(sc, v));
	ts_func *f = ts_lower(s, "vadd", 3, (ts_tensor *[]){A, B, C});
	tu_nonnull(ctx, f);
	ts_cuda *gpu = ts_cuda_open(ctx);
	tu_nonnull(ctx, gpu);
	ts_module *m = ts_build(ctx, f, "cuda");
	tu_nonnull(ctx, m);
	ts_array *h[3] = {filled(4096, 1), filled(4096, 2), filled(4096, 3)}, *d[3];
	for (int k = 0; k < 3; k++) {
		d[k] = ts_cuda_array_new(ctx, gpu, ts_float32, 1, h[k]->shape);
		tu_ok(ctx, ts_cuda_copy_to_device(ctx, d[k], h[k]));
	}
	tu_ok(ctx, ts_module_run(m, 3, d));
	/* ts_module_time: CUDA events per repeat, the statistics of their times */
	setenv("FAKE_CUDA_TICKS", "1,4,1,2,1,9", 1);
	ts_timing t;
	tu_ok(ctx, ts_module_time(m, 3, d, 1, 3, &t));
	unsetenv("FAKE_CUDA_TICKS");
	ck_assert_double_eq_tol(t.min, 2e-3, 1e-12);
	ck_assert_double_eq_tol(t.median, 4e-3, 1e-12);
	ck_assert_double_eq_tol(t.mean, 5e-3, 1e-12);
	ck_assert_double_eq_tol(t.max, 9e-3, 1e-12);
	tu_ok(ctx, ts_module_launch(m, 3, d));
	tu_ok(ctx, ts_cuda_synchronize(ctx, gpu));
	ck_assert_int_eq(ts_module_launch(m, 3, (ts_array *[]){d[0], h[1], d[2]}), TS_ERR_INVALID);
	tu_assert_error(ctx, "argument 1 (B) is on the cpu device, expected cuda");
	ts_clear_error(ctx);
	tu_ok(ctx, ts_cuda_copy_to_host(ctx, h[2], d[2]));
	for (int e = 0; e < 4096; e++)
		ck_assert_float_eq(((float *)h[2]->data)[e],
				   ((float *)h[0]->data)[e] + ((float *)h[1]->data)[e]);
	/* host arrays are still refused, with the argument named */
	ck_assert_int_eq(ts_module_run(m, 3, (ts_array *[]){d[0], h[1], d[2]}), TS_ERR_INVALID);
	tu_assert_error(ctx, "argument 1 (B) is on the cpu device, expected cuda");
	ts_clear_error(ctx);
	for (int k = 0; k < 3; k++) {
		ts_cuda_array_free(d[k]);
		ts_array_free(h[k]);
	}
	ts_module_free(m);
	ts_cuda_close(gpu);
	ts_ctx_free(ctx);
	drop_fake_driver(dir, lib);
}
END_TEST

/* A function built as several kernels (softmax under the default GPU
 * schedule: row maximum, row sum, output): the module allocates the two
 * buffers between them once, launches the kernels in order at every run,
 * launch and timed repeat, and frees the buffers with the module. */
START_TEST(test_kernels_fake_driver)
{
	char dir[64], lib[128], log[1024];
	if (!build_fake_driver(dir, lib))
		return;
	setenv("TESSERA_CUDA_LIB", lib, 1);
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(37, 50), ts_float32);
	ts_tensor *Y = ts_op_softmax(ctx, X);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	tu_ok(ctx, ts_schedule_default_cuda(s, 64));
	ts_func *f = ts_lower(s, "sm", 2, (ts_tensor *[]){X, Y});
	tu_nonnull(ctx, f);
	ts_cuda *gpu = ts_cuda_open(ctx);
	tu_nonnull(ctx, gpu);
	ts_array *d[2] = {ts_cuda_array_new(ctx, gpu, ts_float32, 2, X->shape),
			  ts_cuda_array_new(ctx, gpu, ts_float32, 2, Y->shape)};
	long live = fake_stat(lib, "fake_live_allocs");
	ts_module *m = ts_build(ctx, f, "cuda");
	tu_nonnull(ctx, m);
	ck_assert_int_eq(fake_stat(lib, "fake_live_allocs"), live + 2);
	tu_ok(ctx, ts_module_run(m, 2, d));
	ck_assert_str_eq(fake_str(lib, "fake_kernel_log", log, sizeof(log)), "sm_k0 sm_k1 sm_k2 ");
	long launches = fake_stat(lib, "fake_launches");
	tu_ok(ctx, ts_module_launch(m, 2, d));
	tu_ok(ctx, ts_cuda_synchronize(ctx, gpu));
	ts_timing t;
	tu_ok(ctx, ts_module_time(m, 2, d, 1, 2, &t));
	ck_assert_int_eq(fake_stat(lib, "fake_launches"), launches + 3 * (1 + 1 + 2));
	/* the arguments are still checked, naming the function's own */
	ck_assert_int_ne(ts_module_run(m, 1, d), TS_OK);
	ts_clear_error(ctx);
	ts_module_free(m);
	ck_assert_int_eq(fake_stat(lib, "fake_live_allocs"), live);
	for (int k = 0; k < 2; k++)
		ts_cuda_array_free(d[k]);
	ts_cuda_close(gpu);
	ts_ctx_free(ctx);
	drop_fake_driver(dir, lib);
}
END_TEST

/* The TF32 tensor-core GEMM with 128 x 128 tiles, double-buffered: 71680
 * bytes of shared memory, over the static 48 KB, so the kernel takes them
 * dynamically.  On the stand-in (sm_90): loading allows them
 * (cuFuncSetAttribute), each launch asks for them; a device that gives
 * less is refused at build, naming both sizes. */
START_TEST(test_dynamic_shared_fake_driver)
{
	char dir[64], lib[128];
	if (!build_fake_driver(dir, lib))
		return;
	setenv("TESSERA_CUDA_LIB", lib, 1);
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(128, 64), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(64, 128), ts_float32);
	ts_tensor *C = ts_op_matmul_tf32(ctx, A, B, false, false);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_matmul_tc_params p = {.block_m = 128, .block_n = 128, .warp_m = 64, .warp_n = 64,
				 .tile_k = 32, .double_buffer = 1};
	tu_ok(ctx, ts_schedule_matmul_tensorcore(s, C, &p));
	/* a name the stand-in loads (it knows kernels named *_k*) */
	ts_func *f = ts_lower(s, "big_k", 3, (ts_tensor *[]){A, B, C});
	tu_nonnull(ctx, f);
	ts_cuda *gpu = ts_cuda_open(ctx);
	tu_nonnull(ctx, gpu);
	ts_module *m = ts_build(ctx, f, "cuda");
	tu_nonnull(ctx, m);
	const char *src = ts_module_source(m, "cuda");
	ck_assert_ptr_nonnull(strstr(src, "71680 bytes of shared memory (dynamic)"));
	ck_assert_ptr_nonnull(strstr(src, "extern __shared__ __align__(16) unsigned char ts_shared[];"));
	ck_assert_int_eq(fake_stat(lib, "fake_shared_allowed"), 71680);
	ts_array *d[3] = {ts_cuda_array_new(ctx, gpu, ts_float32, 2, A->shape),
			  ts_cuda_array_new(ctx, gpu, ts_float32, 2, B->shape),
			  ts_cuda_array_new(ctx, gpu, ts_float32, 2, C->shape)};
	tu_ok(ctx, ts_module_run(m, 3, d));
	ck_assert_int_eq(fake_stat(lib, "fake_last_shared"), 71680);
	ts_module_free(m);
	setenv("FAKE_CUDA_SMEM", "65536", 1);
	ck_assert_ptr_null(ts_build(ctx, f, "cuda"));
	unsetenv("FAKE_CUDA_SMEM");
	tu_assert_error(ctx, "cuda: kernel big_k needs 71680 bytes of shared memory per block; Fake GPU "
			     "(sm_90) gives at most 65536");
	ts_clear_error(ctx);
	for (int k = 0; k < 3; k++)
		ts_cuda_array_free(d[k]);
	ts_cuda_close(gpu);
	ts_ctx_free(ctx);
	drop_fake_driver(dir, lib);
}
END_TEST

int main(void)
{
	bool nvrtc = have_nvrtc();

	Suite *s = suite_create("cuda");
	TCase *tc = tcase_create("no_nvrtc");
	tcase_add_test(tc, test_cuda_build_args);
	tcase_add_test(tc, test_parse_target);
	tcase_add_test(tc, test_missing_nvrtc);
	tcase_add_test(tc, test_no_driver);
	tcase_add_test(tc, test_fake_driver);
	tcase_add_test(tc, test_fake_timing_stats);
	tcase_add_test(tc, test_fake_timing_flush_l2);
	suite_add_tcase(s, tc);
	if (nvrtc) {
		tc = tcase_create("nvrtc");
		tcase_add_test(tc, test_readme_flow_fake_driver);
		tcase_add_test(tc, test_kernels_fake_driver);
		tcase_add_test(tc, test_dynamic_shared_fake_driver);
		tcase_set_timeout(tc, 300);
		tcase_add_test(tc, test_gemm_sm80);
		tcase_add_test(tc, test_half_kernels);
		tcase_add_test(tc, test_gemm_sm90);
		tcase_add_test(tc, test_gemm_ptx);
		tcase_add_test(tc, test_conv_and_vadd);
		tcase_add_test(tc, test_divsem_helpers);
		tcase_add_test(tc, test_syntax_error);
		tcase_add_test(tc, test_bad_arch);
		tcase_add_test(tc, test_nvrtc_builtins_beside_lib);
		suite_add_tcase(s, tc);
	}
	int rc = tu_run_suite(s);
	return rc == 0 && !nvrtc ? 77 : rc;
}
