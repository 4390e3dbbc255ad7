/*
 * test_mustfail_target.c - ts_build refuses bad LLVM target strings with a
 * message naming the function, the bad name and the target, and never
 * lets LLVM abort or print instead: unknown CPUs and features (checked
 * against the CPU and feature lists of the LLVM that tessera links),
 * empty values, unknown options and triples, CPUs of the other word size
 * (LLVM aborts on those), LLVM targets that are not CPUs and features that
 * change the float ABI (LLVM aborts on those too, or the code smashes the
 * caller's stack), and code for another ABI is not run here.  Good
 * target strings still build code that agrees with the reference
 * evaluator.
 */
#include "testutil.h"

#include <string.h>

#include "build.h"
#include "llvm.h"
#include "lower.h"

static ts_func *vadd(ts_ctx *ctx, int64_t n)
{
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(n), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(n), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(n), TS_VARS(i),
				  ts_add(ctx, TS_READ(ctx, A, i), TS_READ(ctx, B, i)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *o, *in;
	tu_ok(ctx, ts_split(sc, ts_axis_of(sc, 0), 8, &o, &in));
	tu_ok(ctx, ts_vectorize(sc, in));
	ts_func *f = ts_lower(s, "f", 3, (ts_tensor *[]){A, B, C});
	tu_nonnull(ctx, f);
	return f;
}

static bool host_is_x86_64(void)
{
#if defined(__x86_64__)
	return true;
#else
	return false;
#endif
}

static void expect_refused(const char *target, const char *part)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_func *f = vadd(ctx, 37);
	ck_assert_msg(ts_build(ctx, f, target) == NULL, "'%s' was accepted", target);
	ck_assert_int_eq(ts_last_status(ctx), TS_ERR_INVALID);
	tu_assert_error(ctx, part);
	ts_ctx_free(ctx);
}

START_TEST(test_unknown_cpu)
{
	if (host_is_x86_64()) {
		expect_refused("llvm -mcpu=notacpu", "build f: unknown CPU 'notacpu' for target "
						     "x86_64 (e.g. skylake-avx512, znver3, ...");
		/* LLVM prints its CPU table for "help" instead of failing */
		expect_refused("llvm -mcpu=help", "build f: unknown CPU 'help' for target x86_64");
		expect_refused("llvm -mcpu=Skylake", "unknown CPU 'Skylake'");
		expect_refused("llvm -mcpu=skylake-", "unknown CPU 'skylake-'");
	}
	expect_refused("llvm -mtriple=x86_64-linux-gnu -mcpu=cortex-a53",
		       "build f: unknown CPU 'cortex-a53' for target x86_64 (e.g. skylake-avx512");
	if (host_is_x86_64())
		expect_refused("llvm -mtriple=aarch64-linux-gnu -mcpu=native",
			       "-mcpu=native names this machine's CPU, which does not run code for "
			       "aarch64");
	expect_refused("llvm -mtriple=i686-linux-gnu -mcpu=notacpu",
		       "build f: unknown CPU 'notacpu' for target i686");
}
END_TEST

/* Other architectures are checked against their own lists when tessera
 * was configured with llc (it ships with LLVM's development package). */
START_TEST(test_unknown_cpu_other_arch)
{
#ifdef TS_HAVE_LLVM_NAMES
	expect_refused("llvm -mtriple=aarch64-linux-gnu -mcpu=notacpu",
		       "build f: unknown CPU 'notacpu' for target aarch64 (e.g. ");
	expect_refused("llvm -mtriple=aarch64-linux-gnu -mcpu=skylake",
		       "unknown CPU 'skylake' for target aarch64");
	expect_refused("llvm -mtriple=aarch64-linux-gnu -mattr=+avx2",
		       "build f: target 'llvm -mtriple=aarch64-linux-gnu -mattr=+avx2': unknown "
		       "feature 'avx2' for target aarch64");
#endif
}
END_TEST

/* Names LLVM knows, but for the other word size: LLVM aborts the process
 * on these ("64-bit code requested on a subtarget that doesn't support
 * it!"), so tessera refuses them first. */
START_TEST(test_cpu_of_other_word_size)
{
	expect_refused("llvm -mtriple=x86_64-linux-gnu -mcpu=i686",
		       "build f: CPU 'i686' cannot generate code for target x86_64 (e.g. skylake-avx512");
	expect_refused("llvm -mtriple=x86_64-linux-gnu -mcpu=pentium4", "CPU 'pentium4' cannot");
	expect_refused("llvm -mattr=-64bit", "feature '64bit' follows from the triple");
	expect_refused("llvm -mattr=+32bit-mode", "feature '32bit-mode' follows from the triple");
#ifdef TS_HAVE_LLVM_NAMES
	expect_refused("llvm -mtriple=mips64-linux-gnu -mcpu=mips32",
		       "build f: CPU 'mips32' cannot generate code for target mips64");
	expect_refused("llvm -mtriple=ppc64le-linux-gnu -mcpu=e500", "CPU 'e500' cannot");
	expect_refused("llvm -mtriple=riscv64-linux-gnu -mcpu=generic-rv32",
		       "build f: CPU 'generic-rv32' cannot generate code for target riscv64 (e.g. "
		       "generic-rv64");
	expect_refused("llvm -mtriple=riscv32-linux-gnu -mcpu=sifive-u74", "CPU 'sifive-u74' cannot");
	/* RISC-V has no "generic" CPU, which tessera would pick otherwise */
	expect_refused("llvm -mtriple=riscv64-linux-gnu",
		       "build f: target 'llvm -mtriple=riscv64-linux-gnu': riscv64 has no generic "
		       "CPU; name one with -mcpu= (e.g. generic-rv64");
#endif
}
END_TEST

/* Code for another operating system or ABI on this architecture would be
 * called with the wrong conventions: it is built, but not run here. */
START_TEST(test_other_abi_is_not_the_host)
{
	static const char *const others[] = {
		"llvm -mtriple=x86_64-pc-windows-msvc", "llvm -mtriple=x86_64-w64-windows-gnu",
		"llvm -mtriple=x86_64-unknown-linux-gnux32", "llvm -mtriple=x86_64-apple-darwin",
	};
	if (!host_is_x86_64())
		return;
	for (size_t i = 0; i < TS_COUNT_OF(others); i++) {
		ts_ctx *ctx = ts_ctx_new();
		ts_func *f = vadd(ctx, 37);
		ck_assert_msg(ts_build(ctx, f, others[i]) == NULL, "'%s' was built to run here",
			      others[i]);
		ck_assert_int_eq(ts_last_status(ctx), TS_ERR_UNSUPPORTED);
		tu_assert_error(ctx, "is not the host, so the module cannot run here");
		ts_ctx_free(ctx);
	}
}
END_TEST

START_TEST(test_bad_features)
{
	expect_refused("llvm -mattr=+nonsense", "build f: target 'llvm -mattr=+nonsense': unknown "
						"feature 'nonsense' for target x86_64");
	expect_refused("llvm -mattr=+avx2,-nonsense", "unknown feature 'nonsense'");
	expect_refused("llvm -mattr=avx2", "feature 'avx2' must be written +name or -name");
	expect_refused("llvm -mattr=+avx2,,+fma", "feature '' must be written +name or -name");
	expect_refused("llvm -mattr=+", "feature '+' must be written +name or -name");
	expect_refused("llvm -mtriple=x86_64-linux-gnu -mattr=+neon", "unknown feature 'neon'");
}
END_TEST

/* GPUs, BPF and XCore: LLVM aborts on some of tessera's functions for
 * them, so only CPU targets are taken, here and for assembly and objects
 * (cg_llvm_compile resolves the target the same way). */
START_TEST(test_not_a_cpu_target)
{
	expect_refused("llvm -mtriple=amdgcn-amd-amdhsa",
		       "build f: target 'llvm -mtriple=amdgcn-amd-amdhsa': LLVM target amdgcn is not a CPU "
		       "tessera generates code for (x86-64, x86, aarch64");
	expect_refused("llvm -mtriple=bpf", "LLVM target bpfel is not a CPU");
	expect_refused("llvm -mtriple=xcore", "LLVM target xcore is not a CPU");
	expect_refused("llvm -mtriple=nvptx64-nvidia-cuda", "GPU code comes from the 'cuda' target");
	ts_ctx *ctx = ts_ctx_new();
	ck_assert_ptr_null(cg_llvm_compile(ctx, vadd(ctx, 37), "llvm -mtriple=xcore"));
	tu_assert_error(ctx, "LLVM target xcore is not a CPU");
	ts_ctx_free(ctx);
}
END_TEST

/* x86-64 returns floats in SSE registers: without SSE LLVM aborts on a
 * function with float calls, and soft-float code run by the JIT smashes
 * the caller's stack. */
START_TEST(test_float_abi_features)
{
	if (!host_is_x86_64())
		return;
	expect_refused("llvm -mattr=-sse", "build f: target 'llvm -mattr=-sse': feature '-sse' changes how "
					   "floats are passed; code run on this machine needs the platform's float ABI");
	expect_refused("llvm -mattr=+avx,-sse2", "feature '-sse2' changes how floats are passed");
	expect_refused("llvm -mattr=+soft-float", "feature '+soft-float' changes how floats are passed");
	expect_refused("llvm -mtriple=x86_64-apple-darwin -mcpu=generic -mattr=-sse",
		       "feature '-sse' changes how floats are passed; x86-64 code needs");
}
END_TEST

START_TEST(test_bad_syntax)
{
	expect_refused("llvm -mcpu=", "build f: target 'llvm -mcpu=': option '-mcpu' has no value");
	expect_refused("llvm -mattr=", "option '-mattr' has no value");
	expect_refused("llvm -mtriple=", "option '-mtriple' has no value");
	expect_refused("llvm -foo", "build f: target 'llvm -foo': unknown option '-foo' (expected "
				    "-mcpu=, -mattr= or -mtriple=)");
	expect_refused("llvm mcpu=skylake", "unknown option 'mcpu=skylake'");
	expect_refused("llvm -mcpu=haswell -mcpu=skx", "option '-mcpu' given twice");
	expect_refused("llvmx", "build f: unknown target 'llvmx'");
	expect_refused("llvm -mtriple=bogus-triple",
		       "build f: target 'llvm -mtriple=bogus-triple': no LLVM target for triple "
		       "'bogus-triple'");
	expect_refused("llvm -mtriple=x86_65-linux-gnu", "no LLVM target for triple");
}
END_TEST

/* The names the refusals above are measured against still build, and the
 * code is right. */
START_TEST(test_good_targets)
{
	if (!host_is_x86_64())
		return;
	static const char *const good[] = {
		"llvm", "llvm -mcpu=x86-64", "llvm -mcpu=native", "llvm -mattr=+sse4.2,-avx",
		" llvm", "llvm\t-mcpu=x86-64", "\tllvm  -mcpu=native ",
		"llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=generic", "llvm -mtriple=x86_64",
	};
	for (size_t i = 0; i < TS_COUNT_OF(good); i++) {
		ts_ctx *ctx = ts_ctx_new();
		ts_func *f = vadd(ctx, 37);
		tu_set_context(good[i]);
		tu_check_func_llvm(ctx, f, good[i], 1e-6);
		tu_set_context(NULL);
		ts_ctx_free(ctx);
	}
	/* known CPUs of this and other architectures compile (not run) */
	static const char *const cross[] = {
		"llvm -mcpu=skylake-avx512", "llvm -mcpu=znver3",
		"llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a53", "llvm -mtriple=i686-linux-gnu -mcpu=i686",
		"llvm -mtriple=riscv64-linux-gnu -mcpu=generic-rv64",
	};
	for (size_t i = 0; i < TS_COUNT_OF(cross); i++) {
		ts_ctx *ctx = ts_ctx_new();
		ts_func *f = vadd(ctx, 37);
		ts_module *m = ts_build(ctx, f, cross[i]);
		ck_assert_msg(m != NULL || ts_last_status(ctx) == TS_ERR_UNSUPPORTED, "%s: %s",
			      cross[i], ts_last_error(ctx));
		ts_module_free(m);
		ts_ctx_free(ctx);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mustfail_target");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_unknown_cpu);
	tcase_add_test(tc, test_unknown_cpu_other_arch);
	tcase_add_test(tc, test_cpu_of_other_word_size);
	tcase_add_test(tc, test_other_abi_is_not_the_host);
	tcase_add_test(tc, test_bad_features);
	tcase_add_test(tc, test_not_a_cpu_target);
	tcase_add_test(tc, test_float_abi_features);
	tcase_add_test(tc, test_bad_syntax);
	tcase_add_test(tc, test_good_targets);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
