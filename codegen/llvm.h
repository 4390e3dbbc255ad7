/*
 * llvm.h - the LLVM CPU backend: a lowered function to native code.
 *
 * cg_llvm_compile vectorizes the function (vectorize.h), builds an LLVM
 * module, verifies it, optimizes it with the O3 pipeline for the chosen
 * target and compiles it in-process with ORC LLJIT.  The result is called
 * through one exported entry per function:
 *
 *     int32_t <name>(void **args);   args[i]: data of f->params[i]
 *
 * Buffers are dense and row-major; the code assumes they do not overlap and
 * are 64-byte aligned (ts_array_new guarantees the alignment, and
 * ts_module_run checks both through ts_check_args), except the size
 * variables' values (the last argument of a function over size variables:
 * int64_t[nsizes], aligned as any int64 array).  It returns 0.
 *
 * Targets are strings: "llvm" (the host: its CPU name and features, so
 * AVX-512 is used where present), optionally followed by -mcpu=NAME,
 * -mattr=+feat,-feat and -mtriple=TRIPLE.  -mcpu=native is the host; with
 * any other -mcpu, or -mattr/-mtriple alone (CPU "generic"), the host's
 * feature list is not added.  A triple for another architecture, operating
 * system or ABI (Windows, x32) can still produce assembly and objects, but
 * no entry point.  CPU and feature names are checked against the linked
 * LLVM's lists before LLVM sees them (it aborts on some bad names), as are
 * CPUs of the wrong word size for the triple; the errors start
 * "build <function>:" and name the CPU or feature and the architecture.
 *
 * Parallel loops call ts_parallel_for (runtime/threadpool.h); an object
 * written with cg_llvm_write_object needs libtessera and libm at link time.
 */
#ifndef TESSERA_CODEGEN_LLVM_H
#define TESSERA_CODEGEN_LLVM_H

#include "ir.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cg_llvm_module cg_llvm_module;
typedef int32_t (*ts_cpu_entry)(void **args);

/* Wall-clock milliseconds spent in each phase of cg_llvm_compile. */
typedef struct cg_llvm_times {
	double build_ms;    /* vectorize + LLVM IR construction + verification */
	double optimize_ms; /* the O3 pipeline */
	double codegen_ms;  /* JIT: machine code for the entry point */
} cg_llvm_times;

/* Compiles f for `target` (NULL means "llvm").  Returns NULL with an error
 * in ctx on a bad target string, an unsupported dtype or statement, or an
 * LLVM failure.  The module does not refer to ctx or f afterwards. */
cg_llvm_module *cg_llvm_compile(ts_ctx *ctx, const ts_func *f, const char *target);

/* cg_llvm_compile in two steps, so that the expensive one can run on
 * several threads.  cg_llvm_prepare does what needs ctx and f (target,
 * LLVM IR, verification, header) and fails as cg_llvm_compile does.
 * cg_llvm_finish optimizes and JIT-compiles; it touches no context and
 * nothing shared, so different modules may finish on different threads at
 * once (each has its own LLVM context).  It returns false on an LLVM
 * failure, which cg_llvm_report then records in ctx (TS_OK when it did not
 * fail; an error for a module not finished).  Finishing twice does
 * nothing. */
cg_llvm_module *cg_llvm_prepare(ts_ctx *ctx, const ts_func *f, const char *target);
bool cg_llvm_finish(cg_llvm_module *m);
ts_status cg_llvm_report(ts_ctx *ctx, const cg_llvm_module *m);
/* A prepared module's instructions: what finishing it costs, roughly. */
int64_t cg_llvm_size(const cg_llvm_module *m);

/* The JIT'd entry point; NULL for a module built for another architecture. */
ts_cpu_entry cg_llvm_entry(const cg_llvm_module *m);

/* LLVM IR text before or after optimization, copied into ctx's arena.
 * The optimized IR, the assembly and the object file need a finished
 * module (cg_llvm_finish, or cg_llvm_compile); for a module only prepared,
 * or whose optimization failed, they are refused with an error (NULL or
 * the status). */
const char *cg_llvm_ir_text(ts_ctx *ctx, const cg_llvm_module *m, bool optimized);

/* Assembly text of the optimized module for the module's target. */
const char *cg_llvm_asm_text(ts_ctx *ctx, cg_llvm_module *m);

/* Writes a relocatable object (position independent) and, if header_path
 * is not NULL, a C header declaring the entry point with a comment that
 * lists the buffer parameters (name, dtype, shape). */
ts_status cg_llvm_write_object(ts_ctx *ctx, cg_llvm_module *m, const char *obj_path,
			       const char *header_path);

/* The resolved target: "llvm -mtriple=... -mcpu=... -mattr=..." */
const char *cg_llvm_target_str(const cg_llvm_module *m);

cg_llvm_times cg_llvm_get_times(const cg_llvm_module *m);

/* Frees the module, its JIT and its code; NULL is allowed. */
void cg_llvm_free(cg_llvm_module *m);

#ifdef __cplusplus
}
#endif

#endif
