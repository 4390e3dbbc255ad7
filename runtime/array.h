/*
 * array.h - n-d arrays on the host or a CUDA device.
 *
 * Data is dense row-major (strides in elements, innermost 1) and, on the
 * host, 64-byte aligned so that generated vector code may assume it.  Arrays
 * are malloc'd, not arena-allocated: they outlive compilations.
 * ts_array_wrap makes an array over memory the caller owns; such an array
 * may be less aligned, and ts_module_run refuses it unless its data is
 * 64-byte aligned (see args.h).
 */
#ifndef TESSERA_RUNTIME_ARRAY_H
#define TESSERA_RUNTIME_ARRAY_H

#include "ir.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ts_device { TS_DEVICE_CPU, TS_DEVICE_CUDA } ts_device;

typedef struct ts_array {
	void *data;            /* host pointer, or a CUdeviceptr cast to void* */
	ts_dtype dtype;
	int ndim;
	int64_t shape[TS_MAX_DIMS];
	int64_t strides[TS_MAX_DIMS];
	ts_device device;
	struct ts_cuda *cuda;  /* the driver that owns data (CUDA arrays only) */
	bool owns_data;        /* ts_array_free frees data (not for ts_array_wrap) */
} ts_array;

/* The 64-byte alignment of host data that compiled CPU code assumes. */
#define TS_ARRAY_ALIGN 64

/* Whether arrays may hold t: a scalar int8..64, uint8..64, float16/32/64,
 * bfloat16 or bool. */
bool ts_array_dtype_ok(ts_dtype t);

/* A zeroed host array; NULL (with an error in ctx if given) on a bad dtype,
 * a bad shape (ndim outside 0..TS_MAX_DIMS, a NULL shape for ndim > 0, an
 * extent < 1) or out of memory, and (TS_ERR_NOMEM) for more bytes than the
 * machine's memory, which zeroing it would have to touch. */
ts_array *ts_array_new(ts_ctx *ctx, ts_dtype t, int ndim, const int64_t *shape);
/* The machine's physical memory in bytes (SIZE_MAX when unknown):
 * ts_array_new and ts_eval's temporaries refuse more up front, with an
 * error, rather than asking the allocator. */
size_t ts_phys_mem_bytes(void);
/* A host array shaped like tensor t, zeroed (NULL with an error if t is
 * NULL or the array cannot be made).  An extent that is a size variable
 * (te.h ts_size_var) is taken at its upper bound; for another extent,
 * make the array with ts_array_new. */
ts_array *ts_array_for(ts_ctx *ctx, const ts_tensor *t);

/* A host array over caller-owned memory: dense row-major data of `shape`,
 * aligned at least to one element.  The caller keeps ownership:
 * ts_array_free frees the descriptor only, and data must outlive the array.
 * Compiled CPU code further needs TS_ARRAY_ALIGN-aligned data (ts_module_run
 * refuses less).  NULL with an error on NULL or misaligned data, a bad dtype
 * or a bad shape. */
ts_array *ts_array_wrap(ts_ctx *ctx, void *data, ts_dtype t, int ndim, const int64_t *shape);
/* The same with the caller's strides (in elements), which must be the dense
 * row-major ones (tessera does not handle other layouts), except that the
 * stride of a dimension of extent 1 may be anything: it is never used, and
 * the array takes the dense one. */
ts_array *ts_array_wrap_strided(ts_ctx *ctx, void *data, ts_dtype t, int ndim,
				const int64_t *shape, const int64_t *strides);

/* Frees the array, and its data when the array owns it; NULL is allowed. */
void ts_array_free(ts_array *a);
/* Element count and size in bytes; 0 for NULL. */
int64_t ts_array_numel(const ts_array *a);
size_t ts_array_nbytes(const ts_array *a);
/* Fills a float or integer host array with uniform values in [lo, hi)
 * (lo everywhere when lo == hi), whatever the bounds' magnitude; a float
 * narrower than float64 holds only values of [lo, hi) after rounding, or,
 * when it has (almost) none there, the rounded values made finite.
 * Integers (bool included) are truncated toward zero, then converted as
 * the IR casts a float: saturated at the dtype's limits, never wrapped
 * (bool: 1 for non-zero).  Does nothing for NULL, an array without data or not on the
 * host, and for bounds that are not finite or with hi < lo. */
void ts_array_fill_random(ts_array *a, uint64_t seed, double lo, double hi);

#ifdef __cplusplus
}
#endif

#endif
