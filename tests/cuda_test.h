/*
 * cuda_test.h - what every CUDA test binary needs; include it in exactly
 * one file of the binary.
 *
 * Sanitizer settings: the CUDA driver maps memory where AddressSanitizer
 * keeps its shadow gap and allocates for the process's lifetime.
 * LeakSanitizer's scan of dynamic TLS can read a bogus block after NVRTC ran
 * (a sanitizer bug with recent glibc) and crash; without that scan, the key
 * array pthread_setspecific keeps in the thread descriptor looks leaked.
 *
 * Probes run in a child process: CUDA and NVRTC must not be initialized in
 * this process before Check forks the tests.
 */
#ifndef TESSERA_TESTS_CUDA_TEST_H
#define TESSERA_TESTS_CUDA_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nvrtc.h"
#include "runtime/cuda_driver.h"

const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "protect_shadow_gap=0";
}

const char *__lsan_default_options(void);
const char *__lsan_default_options(void)
{
	return "use_tls=0";
}

const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libcuda.so\nleak:libnvrtc\nleak:pthread_setspecific\n";
}

static bool probe_child(bool need_device)
{
	pid_t pid = fork();
	if (pid == 0) {
		ts_ctx *ctx = ts_ctx_new();
		int major = 0, minor = 0;
		ts_cuda *c = need_device ? ts_cuda_open(ctx) : NULL;
		bool ok = (!need_device || c) && cg_nvrtc_version(ctx, &major, &minor) == TS_OK;
		if (!ok)
			printf("skipping %s tests: %s\n", need_device ? "GPU" : "NVRTC", ts_last_error(ctx));
		else if (c)
			printf("device: %s (%s)\n", ts_cuda_device_name(c), ts_cuda_arch(c));
		fflush(stdout);
		ts_cuda_close(c);
		ts_ctx_free(ctx);
		_exit(ok ? 0 : 1);
	}
	int status = 0;
	return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	       WEXITSTATUS(status) == 0;
}

/* Whether NVRTC loads; and whether a GPU (with NVRTC) can be used. */
static inline bool have_nvrtc(void)
{
	return probe_child(false);
}

static inline bool have_device(void)
{
	return probe_child(true);
}

#ifdef TS_EMU_CUDA_LIB
/* The host CUDA emulator's stand-ins that CMake built (TS_EMU_*), unless
 * TESSERA_CUDA_LIB / TESSERA_NVRTC_LIB name others. */
static inline void cuda_emu_select(void)
{
	setenv("TESSERA_CUDA_LIB", TS_EMU_CUDA_LIB, 0);
	setenv("TESSERA_NVRTC_LIB", TS_EMU_NVRTC_LIB, 0);
}
#endif

/* Softmax (2 arguments) and layer norm (4) of M[rows, cols] under the
 * default GPU schedule, lowered: each row reduction a kernel of its own
 * when built for "cuda". */
static inline void row_ops_cuda(ts_ctx *ctx, int64_t rows, int64_t cols, int threads, ts_func *out[2])
{
	ts_tensor *M = ts_placeholder(ctx, "M", TS_SHAPE(rows, cols), ts_float32);
	ts_tensor *gamma = ts_placeholder(ctx, "gamma", TS_SHAPE(cols), ts_float32);
	ts_tensor *beta = ts_placeholder(ctx, "beta", TS_SHAPE(cols), ts_float32);
	ts_tensor *y[2] = {ts_op_softmax(ctx, M), ts_op_layer_norm(ctx, M, gamma, beta, 1e-5)};
	int nargs[2] = {2, 4};
	ts_tensor *args[2][4] = {{M, y[0]}, {M, gamma, beta, y[1]}};
	for (int i = 0; i < 2; i++) {
		ck_assert_msg(y[i] != NULL, "%s", ts_last_error(ctx));
		ts_schedule *s = ts_create_schedule(ctx, 1, &y[i]);
		ck_assert_msg(s && ts_schedule_default_cuda(s, threads) == TS_OK, "%s", ts_last_error(ctx));
		out[i] = ts_lower(s, y[i]->name, nargs[i], args[i]);
		ck_assert_msg(out[i] != NULL, "%s", ts_last_error(ctx));
	}
}

#endif
