/*
 * array.h - n-d arrays on the host or a CUDA device.
 *
 * Data is dense row-major (strides in elements, innermost 1) and, on the
 * host, 64-byte aligned so that generated vector code may assume it.  Arrays
 * are malloc'd, not arena-allocated: they outlive compilations.
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
} ts_array;

/* A zeroed host array; NULL (with an error in ctx if given) on a bad shape or
 * out of memory. */
ts_array *ts_array_new(ts_ctx *ctx, ts_dtype t, int ndim, const int64_t *shape);
/* A host array shaped like tensor t. */
ts_array *ts_array_for(ts_ctx *ctx, const ts_tensor *t);
void ts_array_free(ts_array *a);
int64_t ts_array_numel(const ts_array *a);
size_t ts_array_nbytes(const ts_array *a);
/* Fills a float or integer host array with uniform values in [lo, hi). */
void ts_array_fill_random(ts_array *a, uint64_t seed, double lo, double hi);

#ifdef __cplusplus
}
#endif

#endif
