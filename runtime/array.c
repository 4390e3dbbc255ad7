/*
 * array.c - host arrays; device arrays live in cuda.c.
 */
#include "array.h"

#include <stdlib.h>
#include <string.h>

#include "eval.h"

int64_t ts_array_numel(const ts_array *a)
{
	int64_t n = 1;
	for (int i = 0; i < a->ndim; i++)
		n *= a->shape[i];
	return n;
}

size_t ts_array_nbytes(const ts_array *a)
{
	return (size_t)ts_array_numel(a) * (size_t)ts_dtype_bytes(a->dtype);
}

ts_array *ts_array_new(ts_ctx *ctx, ts_dtype t, int ndim, const int64_t *shape)
{
	if (!ts_dtype_valid(t) || t.code == TS_TYPE_HANDLE || t.lanes != 1) {
		char b[24];
		if (ctx)
			ts_error(ctx, TS_ERR_INVALID, "array: dtype %s is not a scalar element type",
				 ts_dtype_str(t, b));
		return NULL;
	}
	if (ndim < 0 || ndim > TS_MAX_DIMS) {
		if (ctx)
			ts_error(ctx, TS_ERR_INVALID, "array: %d dimensions (at most %d, scalar dtype)",
				 ndim, TS_MAX_DIMS);
		return NULL;
	}
	int64_t n = 1;
	for (int i = 0; i < ndim; i++) {
		if (shape[i] <= 0 || n > INT64_MAX / 16 / shape[i]) {
			if (ctx)
				ts_error(ctx, TS_ERR_INVALID, "array: bad extent %lld in dimension %d",
					 (long long)shape[i], i);
			return NULL;
		}
		n *= shape[i];
	}
	ts_array *a = calloc(1, sizeof(*a));
	size_t bytes = (size_t)n * (size_t)ts_dtype_bytes(t);
	size_t rounded = (bytes + 63) & ~(size_t)63;
	void *data = a ? aligned_alloc(64, rounded ? rounded : 64) : NULL;
	if (!data) {
		free(a);
		if (ctx)
			ts_error(ctx, TS_ERR_NOMEM, "array: out of memory (%zu bytes)", bytes);
		return NULL;
	}
	memset(data, 0, rounded ? rounded : 64);
	a->data = data;
	a->dtype = t;
	a->ndim = ndim;
	int64_t stride = 1;
	for (int i = ndim - 1; i >= 0; i--) {
		a->shape[i] = shape[i];
		a->strides[i] = stride;
		stride *= shape[i];
	}
	a->device = TS_DEVICE_CPU;
	return a;
}

ts_array *ts_array_for(ts_ctx *ctx, const ts_tensor *t)
{
	return ts_array_new(ctx, t->dtype, t->ndim, t->shape);
}

void ts_array_free(ts_array *a)
{
	if (!a)
		return;
	if (a->device == TS_DEVICE_CPU)
		free(a->data);
	free(a);
}

/* splitmix64: a small, good, reproducible generator. */
static uint64_t next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void ts_array_fill_random(ts_array *a, uint64_t seed, double lo, double hi)
{
	int64_t n = ts_array_numel(a);
	uint64_t s = seed;
	for (int64_t i = 0; i < n; i++) {
		double u = (double)(next(&s) >> 11) / 9007199254740992.0;
		double v = lo + (hi - lo) * u;
		if (ts_dtype_is_float(a->dtype))
			ts_elem_set_f64(a->data, a->dtype, i, v);
		else
			ts_elem_set_i64(a->data, a->dtype, i, (int64_t)v);
	}
}
