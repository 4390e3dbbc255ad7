/* test_cuda.c - CUDA C through NVRTC, target parsing, and the driver's
 * absence.  Needs no GPU; exits 77 (skip) only when libnvrtc cannot be
 * loaded, after running the tests that do not need it. */
#include "testutil.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "cg_kernels.h"
#include "nvrtc.h"
#include "runtime/cuda.h"

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
	tu_assert_error(ctx, "target 'cuda -arch=': unknown option '-arch='");
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
	tu_assert_error(ctx, "cuda: module load: no device");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_cuda_synchronize(ctx, NULL), TS_ERR_NO_DEVICE);
	ts_clear_error(ctx);
	ts_array *h = ts_array_new(ctx, ts_float32, 1, (int64_t[]){4});
	ck_assert_int_eq(ts_cuda_copy_to_device(ctx, h, h), TS_ERR_INVALID);
	tu_assert_error(ctx, "cuda: copy to device: needs a device array and a host array");
	ts_cuda_array_free(h); /* a host array is freed as one */
	ts_cuda_array_free(NULL);
	ts_cuda_close(NULL);
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	ts_ctx *ctx = ts_ctx_new();
	int major = 0, minor = 0;
	bool have_nvrtc = cg_nvrtc_version(ctx, &major, &minor) == TS_OK;
	if (!have_nvrtc)
		printf("skipping NVRTC tests: %s\n", ts_last_error(ctx));
	ts_ctx_free(ctx);

	Suite *s = suite_create("cuda");
	TCase *tc = tcase_create("no_nvrtc");
	tcase_add_test(tc, test_parse_target);
	tcase_add_test(tc, test_missing_nvrtc);
	tcase_add_test(tc, test_no_driver);
	suite_add_tcase(s, tc);
	if (have_nvrtc) {
		tc = tcase_create("nvrtc");
		tcase_set_timeout(tc, 300);
		tcase_add_test(tc, test_gemm_sm80);
		tcase_add_test(tc, test_gemm_sm90);
		tcase_add_test(tc, test_gemm_ptx);
		tcase_add_test(tc, test_conv_and_vadd);
		tcase_add_test(tc, test_syntax_error);
		tcase_add_test(tc, test_bad_arch);
		suite_add_tcase(s, tc);
	}
	int rc = tu_run_suite(s);
	return rc == 0 && !have_nvrtc ? 77 : rc;
}
