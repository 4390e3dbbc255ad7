/*
 * args.h - checking the arguments of a call to a compiled function.
 *
 * A compiled kernel trusts its arguments completely: a wrong shape or dtype
 * means reading out of bounds, not an error.  So every call path (the LLVM
 * module, the C module, the interpreter, CUDA launches) first checks the
 * arrays against the function's buffer parameters here, and a mistake comes
 * back as a message naming the function, the argument and what differed:
 *   call matmul: argument 0 (A) has shape [512, 256], expected [512, 512]
 */
#ifndef TESSERA_RUNTIME_ARGS_H
#define TESSERA_RUNTIME_ARGS_H

#include "array.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "cpu" or "cuda". */
const char *ts_device_name(ts_device d);

/* Checks that args[0..n) match f->params in count, and each in presence,
 * non-NULL data, ndim (0..TS_MAX_DIMS), a valid scalar dtype equal to the
 * parameter's, shape (ndim and every extent), dense row-major strides,
 * device (`want`) and, on the CPU, TS_ARRAY_ALIGN-aligned data, in that
 * order; then that no output (a parameter whose tensor is a compute)
 * overlaps another argument in memory, because compiled code assumes
 * buffers do not alias (inputs may alias each other):
 *   call f: argument 2 (C) overlaps argument 0 (A)
 * The first mismatch is recorded in ctx and returned as TS_ERR_INVALID; so
 * is a function of another context. */
ts_status ts_check_args(ts_ctx *ctx, const ts_func *f, int n, ts_array *const *args,
			ts_device want);
/* The same for a function with size variables (ts_func.nsizes): an extent
 * that is one may be anything from 1 to its bound, every array must agree
 * on each variable's value, and sizes (TS_MAX_SIZE_VARS elements) receives
 * the values in size_vars order, for the function's last parameter:
 *   call matmul: argument 1 (B) gives k = 100 in dimension 0, but argument 0 (A) gave 64 */
ts_status ts_check_args_sizes(ts_ctx *ctx, const ts_func *f, int n, ts_array *const *args,
			      ts_device want, int64_t *sizes);
/* The arrays a call passes: the parameters but the sizes one. */
int ts_func_nargs(const ts_func *f);
/* Whether bytes [a, a + na) and [b, b + nb) share one, without address
 * arithmetic that could wrap: the aliasing rule of ts_check_args and of
 * ts_eval (frontend/eval.h). */
bool ts_bytes_overlap(const void *a, uint64_t na, const void *b, uint64_t nb);

#ifdef __cplusplus
}
#endif

#endif
