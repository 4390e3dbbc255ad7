/*
 * array.c - host arrays; device arrays live in cuda.c.
 *
 * An array either owns its data (ts_array_new: 64-byte aligned, freed with
 * the array) or wraps the caller's (ts_array_wrap: freed by the caller).
 * Every constructor checks dtype and shape the same way (checked_numel).
 */
#include "array.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eval.h"

bool ts_array_dtype_ok(ts_dtype t)
{
	/* an element type: a valid scalar that is not a handle */
	return ts_dtype_is_valid(t) && t.lanes == 1 && t.code != TS_TYPE_HANDLE;
}

int64_t ts_array_numel(const ts_array *a)
{
	if (!a || a->ndim < 0 || a->ndim > TS_MAX_DIMS)
		return 0;
	/* a shape no constructor would make (an array filled in by hand) has
	 * no elements rather than an overflowed count */
	int64_t n = 1;
	for (int i = 0; i < a->ndim; i++) {
		if (a->shape[i] <= 0 || n > INT64_MAX / 16 / a->shape[i])
			return 0;
		n *= a->shape[i];
	}
	return n;
}

size_t ts_array_nbytes(const ts_array *a)
{
	if (!a || !ts_array_dtype_ok(a->dtype))
		return 0;
	return (size_t)ts_array_numel(a) * (size_t)ts_dtype_bytes(a->dtype);
}

static bool dtype_ok(ts_ctx *ctx, const char *what, ts_dtype t)
{
	char buf[24];
	if (ts_dtype_is_valid(t) && t.lanes != 1)
		ts_error(ctx, TS_ERR_INVALID, "%s: dtype %s is not a scalar dtype", what,
			 ts_dtype_str(t, buf));
	else if (!ts_array_dtype_ok(t))
		ts_error(ctx, TS_ERR_INVALID, "%s: invalid dtype (code %d, %d bits, %d lanes)",
			 what, t.code, t.bits, t.lanes);
	return ts_array_dtype_ok(t);
}

/* The element count of a valid dtype and shape, or -1 after recording why.
 * `what` names the caller in the message. */
static int64_t checked_numel(ts_ctx *ctx, const char *what, ts_dtype t, int ndim,
			     const int64_t *shape)
{
	if (!dtype_ok(ctx, what, t))
		return -1;
	if (ndim < 0 || ndim > TS_MAX_DIMS) {
		ts_error(ctx, TS_ERR_INVALID, "%s: %d dimensions (0 to %d allowed)", what, ndim,
			 TS_MAX_DIMS);
		return -1;
	}
	if (ndim > 0 && !shape) {
		ts_error(ctx, TS_ERR_INVALID, "%s: shape is NULL for %d dimensions", what, ndim);
		return -1;
	}
	int64_t n = 1;
	for (int i = 0; i < ndim; i++) {
		if (shape[i] <= 0) {
			ts_error(ctx, TS_ERR_INVALID, "%s: bad extent %lld in dimension %d", what,
				    (long long)shape[i], i);
			return -1;
		}
		if (n > INT64_MAX / 16 / shape[i]) { /* each extent may be fine alone */
			ts_error(ctx, TS_ERR_INVALID, "%s: bad extent %lld in dimension %d: the array's "
				 "size overflows", what, (long long)shape[i], i);
			return -1;
		}
		n *= shape[i];
	}
	return n;
}

/* Fills in everything but the data: shape and dense row-major strides. */
static ts_array *describe(ts_dtype t, int ndim, const int64_t *shape)
{
	ts_array *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
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

size_t ts_phys_mem_bytes(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	if (pages <= 0 || size <= 0 || (unsigned long)pages > SIZE_MAX / (unsigned long)size)
		return SIZE_MAX;
	return (size_t)pages * (size_t)size;
}

/* ts_array_new, with `what` naming the public call in its messages. */
static ts_array *array_new(ts_ctx *ctx, const char *what, ts_dtype t, int ndim,
			   const int64_t *shape)
{
	int64_t n = checked_numel(ctx, what, t, ndim, shape);
	if (n < 0)
		return NULL;
	size_t bytes = (size_t)n * (size_t)ts_dtype_bytes(t);
	/* the array is zeroed, so every page of it is touched: one larger than
	 * the machine's memory could only end in the kernel's out-of-memory
	 * killer (or a sanitizer's abort), never in a usable array */
	size_t phys = ts_phys_mem_bytes();
	if (bytes > phys) {
		ts_error(ctx, TS_ERR_NOMEM, "%s: %zu bytes is more than this machine's memory (%zu bytes)",
			 what, bytes, phys);
		return NULL;
	}
	ts_array *a = describe(t, ndim, shape);
	size_t rounded = (bytes + TS_ARRAY_ALIGN - 1) & ~(size_t)(TS_ARRAY_ALIGN - 1);
	void *data = a ? aligned_alloc(TS_ARRAY_ALIGN, rounded ? rounded : TS_ARRAY_ALIGN) : NULL;
	if (!data) {
		free(a);
		ts_error(ctx, TS_ERR_NOMEM, "%s: out of memory (%zu bytes)", what, bytes);
		return NULL;
	}
	memset(data, 0, rounded ? rounded : TS_ARRAY_ALIGN);
	a->data = data;
	a->owns_data = true;
	return a;
}

ts_array *ts_array_new(ts_ctx *ctx, ts_dtype t, int ndim, const int64_t *shape)
{
	return array_new(ctx, "array_new", t, ndim, shape);
}

ts_array *ts_array_for(ts_ctx *ctx, const ts_tensor *t)
{
	if (!t) {
		ts_error(ctx, TS_ERR_INVALID, "array_for: tensor is NULL");
		return NULL;
	}
	return array_new(ctx, "array_for", t->dtype, t->ndim, t->shape);
}

ts_array *ts_array_wrap(ts_ctx *ctx, void *data, ts_dtype t, int ndim, const int64_t *shape)
{
	if (!data) {
		ts_error(ctx, TS_ERR_INVALID, "array_wrap: data is NULL");
		return NULL;
	}
	if (checked_numel(ctx, "array_wrap", t, ndim, shape) < 0)
		return NULL;
	int elem = ts_dtype_bytes(t);
	if ((uintptr_t)data % (uintptr_t)elem != 0) {
		ts_error(ctx, TS_ERR_INVALID,
			 "array_wrap: data is not aligned to its %d-byte elements", elem);
		return NULL;
	}
	ts_array *a = describe(t, ndim, shape);
	if (!a) {
		ts_error(ctx, TS_ERR_NOMEM, "array_wrap: out of memory");
		return NULL;
	}
	a->data = data;
	return a;
}

/* "[3, 1]" into buf (ndim is at most TS_MAX_DIMS, so 256 bytes suffice). */
static const char *ints_str(int ndim, const int64_t *v, char buf[256])
{
	size_t len = 0;
	buf[len++] = '[';
	for (int i = 0; i < ndim && len < 200; i++)
		len += (size_t)snprintf(buf + len, 256 - len, "%s%lld", i ? ", " : "",
					(long long)v[i]);
	snprintf(buf + len, 256 - len, "]");
	return buf;
}

ts_array *ts_array_wrap_strided(ts_ctx *ctx, void *data, ts_dtype t, int ndim,
				const int64_t *shape, const int64_t *strides)
{
	if (ndim > 0 && !strides) {
		ts_error(ctx, TS_ERR_INVALID, "array_wrap_strided: strides is NULL");
		return NULL;
	}
	ts_array *a = ts_array_wrap(ctx, data, t, ndim, shape);
	if (!a)
		return NULL;
	for (int i = 0; i < ndim; i++) {
		/* a dimension of extent 1 is never stepped along, so its stride
		 * says nothing about the layout (NumPy and DLPack leave it
		 * free too); the array keeps the dense one */
		if (strides[i] != a->strides[i] && a->shape[i] != 1) {
			char got[256], want[256];
			ts_error(ctx, TS_ERR_INVALID,
				    "array_wrap_strided: strides %s are not dense row-major (expected %s)",
				    ints_str(ndim, strides, got), ints_str(ndim, a->strides, want));
			ts_array_free(a);
			return NULL;
		}
	}
	return a;
}

void ts_array_free(ts_array *a)
{
	if (!a)
		return;
	if (a->owns_data && a->device == TS_DEVICE_CPU)
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

/* A uniform double in [lo, hi) (lo when they are equal).  hi - lo
 * overflows for bounds near the largest doubles; halves of it do not. */
static double uniform(uint64_t *s, double lo, double hi)
{
	double u = (double)(next(s) >> 11) / 9007199254740992.0;
	double v;
	if (isfinite(hi - lo)) {
		v = lo + (hi - lo) * u;
	} else {
		double half = 0.5 * hi - 0.5 * lo;
		v = lo + half * u + half * u;
	}
	/* rounding may reach hi itself */
	return v < hi || lo == hi ? v : nextafter(hi, lo);
}

static bool in_range(double v, double lo, double hi)
{
	return v >= lo && (v < hi || (lo == hi && v == lo));
}

/* The largest finite value of a float dtype narrower than float64. */
static double float_max(ts_dtype t)
{
	if (t.code == TS_TYPE_BFLOAT)
		return 0x1.fep127;
	return t.bits == 16 ? 65504.0 : 0x1.fffffep127;
}

void ts_array_fill_random(ts_array *a, uint64_t seed, double lo, double hi)
{
	if (!a || !a->data || a->device != TS_DEVICE_CPU || !ts_array_dtype_ok(a->dtype))
		return;
	/* a range with no values in it fills nothing (NaN bounds included) */
	if (!(isfinite(lo) && isfinite(hi) && lo <= hi))
		return;
	ts_dtype t = a->dtype;
	/* a float16, bfloat16 or float32 element rounds the double drawn, which
	 * may then be hi or leave the range: it is drawn again.  When 64 draws
	 * in a row all leave it, the dtype holds (almost) no value there: the
	 * search stops and the rounded values are kept, infinities made
	 * finite */
	bool narrow = ts_dtype_is_float(t) && t.bits < 64, search = narrow;
	int64_t n = ts_array_numel(a);
	uint64_t s = seed;
	for (int64_t i = 0; i < n; i++) {
		/* integers: the IR's float-to-integer cast, which saturates at the
		 * dtype's limits rather than wrapping, of the value truncated
		 * (for bool too, so that [0, 2) gives 0 and 1 evenly) */
		double v = uniform(&s, lo, hi);
		ts_elem_set_f64(a->data, t, i, ts_dtype_is_float(t) ? v : trunc(v));
		for (int k = 1; search && !in_range(ts_elem_get_f64(a->data, t, i), lo, hi); k++) {
			if (k == 64) {
				search = false;
				break;
			}
			ts_elem_set_f64(a->data, t, i, uniform(&s, lo, hi));
		}
		double r = narrow ? ts_elem_get_f64(a->data, t, i) : 0;
		if (isinf(r))
			ts_elem_set_f64(a->data, t, i, copysign(float_max(t), r));
	}
}
