/*
 * build_cuda.h - the CUDA half of ts_build: CUDA C from the emitter,
 * NVRTC for the device's sm_XY (or the arch in the target string), and the
 * driver API to load and launch it.  Without a GPU a module can still be
 * compiled (for an explicit -arch) but not run.
 */
#ifndef TESSERA_CODEGEN_BUILD_CUDA_H
#define TESSERA_CODEGEN_BUILD_CUDA_H

#include "array.h"
#include "cuda_driver.h"
#include "ir.h"
#include "timer.h"

typedef struct cg_cuda_module cg_cuda_module;

/* Compiles f's kernels with NVRTC for target's architecture (and loads
 * them where there is a GPU) into *out, which the caller frees even on
 * failure; times may be NULL. */
ts_status cg_cuda_build(ts_ctx *ctx, const ts_func *f, const char *target, cg_cuda_module **out,
			ts_phase_times *times);
/* TS_ERR_NO_DEVICE, naming the architecture, when m was compiled without
 * a GPU (no driver): checked before the arguments, whose devices then
 * tell nothing. */
ts_status cg_cuda_runnable(ts_ctx *ctx, const cg_cuda_module *m);
/* args are device arrays (ts_cuda_array_new) in f's parameter order. */
ts_status cg_cuda_run(ts_ctx *ctx, cg_cuda_module *m, int nargs, ts_array *const *args);
/* Launches without waiting (ts_module_launch). */
ts_status cg_cuda_launch(ts_ctx *ctx, cg_cuda_module *m, int nargs, ts_array *const *args);
/* CUDA events around each repeat (ts_cuda_time_kernel). */
ts_status cg_cuda_time(ts_ctx *ctx, cg_cuda_module *m, int nargs, ts_array *const *args,
		       int warmup, int repeat, ts_timing *out);
/* The CUDA C ts_build compiles for f: f checked for what one kernel cannot
 * compute (cuda_check.h), barriers inserted (cg_cuda_insert_sync), then
 * emitted.  cg_emit_cuda alone emits f as it is, barriers or not. */
const char *cg_cuda_kernel_source(ts_ctx *ctx, const ts_func *f, ts_launch *launch);
/* The CUDA C that was compiled, and the architecture it was compiled for. */
const char *cg_cuda_source(const cg_cuda_module *m);
const char *cg_cuda_arch_of(const cg_cuda_module *m);
void cg_cuda_free(cg_cuda_module *m);

#endif
