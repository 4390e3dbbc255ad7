/*
 * testutil.h - helpers shared by the Check suites.
 */
#ifndef TESSERA_TESTS_TESTUTIL_H
#define TESSERA_TESTS_TESTUTIL_H

#include <check.h>

#include "tessera.h"

/* C[i, j] = sum_k A[i, k] B[k, j] over M x N x K (float32) in a context
 * of its own, with its schedule and C's stage: the shared fixture of the
 * schedule tests.  The caller frees ctx. */
typedef struct tu_mm {
	ts_ctx *ctx;
	ts_tensor *A, *B, *C;
	ts_schedule *s;
	ts_stage *sc;
} tu_mm;
tu_mm tu_matmul(int64_t M, int64_t N, int64_t K);

/* Runs a suite and returns the process exit code (0, or 1 on failure). */
int tu_run_suite(Suite *s);

/* Compares two host arrays of the same dtype and shape element-wise with a
 * relative-plus-absolute tolerance; reports the first mismatch via Check. */
void tu_assert_close(const ts_array *got, const ts_array *want, double rtol, double atol);

/* Compares text with tests/golden/<name>; with TESSERA_UPDATE_GOLDENS=1 the
 * file is rewritten instead.  A mismatch fails with a line diff. */
void tu_assert_golden(const char *name, const char *text);
/* The same for any file below the source tree (e.g. "docs/PRIMITIVES.md"). */
void tu_assert_golden_path(const char *relpath, const char *text);

/* Asserts that the context holds an error whose message contains `part`. */
#define tu_assert_error(ctx, part)                                              \
	do {                                                                    \
		ck_assert_msg(ts_last_status(ctx) != TS_OK, "expected an error containing '%s'", (part)); \
		ck_assert_msg(strstr(ts_last_error(ctx), (part)) != NULL,       \
			      "error '%s' does not contain '%s'", ts_last_error(ctx), (part)); \
	} while (0)

/* ---- compiling generated C ------------------------------------------------ */

/* Whether the system C compiler (`cc`) runs. */
bool tu_have_cc(void);
/* Writes src to a new directory /tmp/tessera_<tag>_XXXXXX (dir) as name
 * (path). */
void tu_temp_source(const char *tag, const char *name, const char *src, char dir[64],
		    char path[128]);
/* Compiles src (-std=c11 -Wall -Werror -O2) into a shared object in a fresh
 * directory, named in dir, and loads it; a failure aborts the test. */
void *tu_cc_load(const char *src, char dir[64]);
/* The same with more cc flags (after -O2). */
void *tu_cc_load_with(const char *src, const char *flags, char dir[64]);
/* cc flags that stop the compiled code at its first undefined behaviour
 * (UBSan, -fno-sanitize-recover=all), with AddressSanitizer too when this
 * process has its runtime; "" where cc cannot build them.  UB in generated
 * code then ends the test with the sanitizer's report, which names the
 * source left in tu_cc_load's directory. */
const char *tu_cc_sanitize_flags(void);
/* Unloads what tu_cc_load loaded and removes its directory. */
void tu_cc_unload(void *lib, const char *dir);

/* ---- checking lowered functions against the reference evaluator ---------- */

/* Runs f on argument data (in f's parameter order). */
typedef ts_status (*tu_runner)(ts_ctx *ctx, const ts_func *f, void *const *args, void *user);

/* Fills every placeholder parameter of f with random data (never zeros),
 * runs f with `run`, evaluates the outputs with ts_eval, and asserts that
 * they agree within tol (relative + absolute). */
void tu_check_func_with(ts_ctx *ctx, const ts_func *f, tu_runner run, void *user, double tol);
/* The same through the loop-IR interpreter, and through the LLVM JIT for
 * the host (with 1, 2 and 4 threads when f has a parallel loop). */
void tu_check_func(ts_ctx *ctx, const ts_func *f, double tol);
/* Only through the loop-IR interpreter.  With TESSERA_TEST_CUDA=1 in the
 * environment, these two also run a function bound to GPU threads on the
 * CUDA device (a GPU, or the host emulator the TESSERA_CUDA_LIB and
 * TESSERA_NVRTC_LIB of the *_emu tests name). */
void tu_check_func_interp(ts_ctx *ctx, const ts_func *f, double tol);
/* A runner for tu_check_func_with: the loop-IR interpreter. */
ts_status tu_interp_runner(ts_ctx *ctx, const ts_func *f, void *const *args, void *user);
/* A runner for tu_check_func_with: f built with ts_build(f, "cuda") and run
 * through ts_module_run on device copies of the arguments, which come back
 * to args (at most 8 parameters). */
ts_status tu_cuda_runner(ts_ctx *ctx, const ts_func *f, void *const *args, void *user);
/* Runs module m (built for "cuda") on device copies of host[0..n-1] (at
 * most 8), which get the results back. */
ts_status tu_cuda_run_module(ts_ctx *ctx, ts_module *m, int n, ts_array *const *host);
/* The seeds a random test runs: *first and *count unless the environment
 * variable var says first:count. */
void tu_seed_range(const char *var, uint64_t *first, uint64_t *count);
/* Text added to the failure messages of the checks above (NULL: none), so
 * that a generated case can say which one failed. */
void tu_set_context(const char *text);
/* Only through the LLVM JIT for `target` (NULL: the host). */
void tu_check_func_llvm(ts_ctx *ctx, const ts_func *f, const char *target, double tol);
/* Asserts that a call returned TS_OK, printing the context's error if not. */
/* X + bias over the channels of an NCHW[x]c tensor X: bias[cb * x + ci]
 * (the epilogue tests of the blocked convolutions). */
ts_tensor *tu_bias_nchwc(ts_ctx *ctx, ts_tensor *X, ts_tensor *bias);
/* Whether the lowered text (ts_func_str) allocates a buffer named `name` in
 * global memory. */
bool tu_allocates_global(const char *text, const char *name);

#define tu_ok(ctx, call)                                                         \
	do {                                                                     \
		ts_status st_ = (call);                                          \
		ck_assert_msg(st_ == TS_OK, "%s failed: %s", #call, ts_last_error(ctx)); \
	} while (0)
#define tu_nonnull(ctx, p) ck_assert_msg((p) != NULL, "%s is NULL: %s", #p, ts_last_error(ctx))
/* A pointer-returning call that must give NULL with `part` in the error. */
#define FAILS_NULL(ctx, call, part)                                             \
	do {                                                                    \
		ts_clear_error(ctx);                                            \
		ck_assert_msg((call) == NULL, "%s: expected NULL", #call);      \
		tu_assert_error(ctx, part);                                     \
	} while (0)
/* A status-returning call that must fail with `part` in the error. */
#define FAILS_ST(ctx, call, part)                                               \
	do {                                                                    \
		ts_clear_error(ctx);                                            \
		ck_assert_msg((call) != TS_OK, "%s: expected an error", #call); \
		tu_assert_error(ctx, part);                                     \
	} while (0)

/* Whether two matmul parameter sets are the same, field by field (a
 * struct's padding bytes are not compared). */
static inline bool tu_same_matmul_params(ts_matmul_cpu_params a, ts_matmul_cpu_params b)
{
	return a.mr == b.mr && a.nr == b.nr && a.kunroll == b.kunroll && a.parallel == b.parallel &&
	       a.pack == b.pack && a.kc == b.kc && a.prefetch == b.prefetch;
}

#endif
