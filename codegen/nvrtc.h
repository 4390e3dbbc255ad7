/*
 * nvrtc.h - CUDA C to CUBIN or PTX with NVRTC, opened at run time.
 *
 * tessera has no link-time dependency on CUDA: libnvrtc is found with
 * dlopen (TESSERA_NVRTC_LIB names the library to use instead of the usual
 * names; tests point it at a missing file to exercise that path).
 *
 * Architectures are spelled like nvcc's: `sm_XY` (optionally `sm_XYa` /
 * `sm_XYf`) compiles to a CUBIN for that GPU, `compute_XY` to PTX that the
 * driver compiles when loading.  A target string is `cuda` or
 * `cuda -arch=sm_90`.
 */
#ifndef TESSERA_CODEGEN_NVRTC_H
#define TESSERA_CODEGEN_NVRTC_H

#include <stdbool.h>
#include <stddef.h>

#include "ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CG_ARCH_MAX 16

typedef struct cg_nvrtc_result {
	char *image;       /* CUBIN bytes, or PTX text with its NUL (malloc'd) */
	size_t size;       /* bytes in image */
	bool is_cubin;
	char *log;         /* NVRTC's messages, "" if none (malloc'd) */
	double compile_ms; /* wall time of nvrtcCompileProgram */
	char arch[CG_ARCH_MAX];
} cg_nvrtc_result;

/* Reads a target string: "cuda" leaves arch empty (the caller picks the
 * device's own, see ts_cuda_arch), "cuda -arch=sm_90" sets it.  Errors name
 * the target and what is wrong with it. */
ts_status cg_cuda_parse_target(ts_ctx *ctx, const char *target, char arch[CG_ARCH_MAX]);

/* TS_OK if arch is spelled sm_XY[a|f] or compute_XY[a|f]. */
ts_status cg_cuda_check_arch(ts_ctx *ctx, const char *arch);

/* NVRTC's version; TS_ERR_NO_DEVICE with "libnvrtc not found" if absent,
 * TS_ERR_INVALID for a NULL major or minor. */
ts_status cg_nvrtc_version(ts_ctx *ctx, int *major, int *minor);

/* Compiles src, whose kernel is `name` (used for messages and the program
 * name), for arch.  On failure returns TS_ERR_RUNTIME with NVRTC's log in
 * the message; out->log keeps the whole log either way.  Free out with
 * cg_nvrtc_result_free in every case. */
ts_status cg_nvrtc_compile(ts_ctx *ctx, const char *src, const char *name, const char *arch,
			   cg_nvrtc_result *out);
void cg_nvrtc_result_free(cg_nvrtc_result *r);

#ifdef __cplusplus
}
#endif

#endif
