/*
 * build.h - compile a lowered function for a target and call it, like
 * tvm.build(f, target) and the module it returns.
 *
 * Targets: "llvm" (the host CPU, all its features), "llvm -mcpu=NAME",
 * "llvm -mattr=+avx2,+fma", and "cuda" (the GPU in hand) or
 * "cuda -arch=sm_XY" (compile only when no GPU is present).
 *
 * Every call checks its arguments: a NULL context or module gives NULL or
 * TS_ERR_INVALID (there is nowhere to record a message); with a module, a
 * NULL argument list, source kind, object path or timing output, a bad
 * count, or warmup < 0 / repeat < 1, is an error recorded in the module's
 * context and naming the function.
 */
#ifndef TESSERA_CODEGEN_BUILD_H
#define TESSERA_CODEGEN_BUILD_H

#include "array.h"
#include "ir.h"
#include "timer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ts_module ts_module;

/* NULL with an error naming the target or the failing phase. */
ts_module *ts_build(ts_ctx *ctx, const ts_func *f, const char *target);

/* Builds n functions for one target, as n calls of ts_build would, but
 * runs LLVM's optimization and machine code generation (most of a CPU
 * build's time) for different functions on different threads: one per
 * online core, at most 16.  The result does not depend on the thread
 * count.  Returns TS_OK with out[i] the module of funcs[i]; on any failure
 * every out[i] is NULL and the error names the first function that failed
 * (or its place in the list, when it is NULL).  n 0 builds nothing; a
 * negative n, or a NULL list or output with n > 0, is refused.  CUDA
 * targets build one after another. */
ts_status ts_build_all(ts_ctx *ctx, int n, const ts_func *const *funcs, const char *target,
		       ts_module **out);

/* Calls the compiled function.  Checks the argument count, dtypes, shapes
 * and devices first and returns a clear error on mismatch. */
ts_status ts_module_run(ts_module *m, int nargs, ts_array *const *args);

/* Starts the function without waiting for it: on a GPU module, launches
 * the kernel on the default stream (errors raised while it runs come from
 * the next synchronize); on a CPU module, the same as ts_module_run. */
ts_status ts_module_launch(ts_module *m, int nargs, ts_array *const *args);

/* Times the function: on the CPU ts_time_run (warm-up, repeats, each
 * repeat one call); on a GPU module ts_cuda_time_kernel (warm-up launches,
 * then one CUDA event pair around each repeat).  *out has min, median,
 * mean, max and stddev of the repeats, in seconds. */
ts_status ts_module_time(ts_module *m, int nargs, ts_array *const *args, int warmup,
			 int repeat, ts_timing *out);

/* Generated code as text: "llvm" (LLVM IR before optimization), "llvm-opt",
 * "asm", "c" (the plain C emitter), "cuda" (CUDA C).  NULL with an error if
 * the module has no such form. */
const char *ts_module_source(ts_module *m, const char *kind);

/* Ahead-of-time use (CPU modules): writes an object file and a C header
 * declaring `int32_t <name>(void **args)`; link with libtessera and libm.
 * <name> is the function's name as a C identifier (codegen/ident.h: "main"
 * becomes "main_", "3d conv" "v3d_conv"), the same in the object, the
 * header and the "c" source; the header's comment names the arguments the
 * same way, so no name can end the comment or add code.  header_path NULL:
 * the object only; a NULL obj_path is refused, and so is a header that
 * names the object's file (the same path, another spelling of it or a
 * link), which is left as the object. */
ts_status ts_module_export(ts_module *m, const char *obj_path, const char *header_path);

/* Per-phase compile times of ts_build (lowering is timed by the caller). */
ts_phase_times ts_module_times(const ts_module *m);
/* The target as resolved: for the host, its CPU name and features. */
const char *ts_module_target(const ts_module *m);
const ts_func *ts_module_func(const ts_module *m);
void ts_module_free(ts_module *m);

#ifdef __cplusplus
}
#endif

#endif
