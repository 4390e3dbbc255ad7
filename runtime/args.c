/*
 * args.c - argument checks shared by every way of calling a compiled
 * function (see args.h).
 */
#include "args.h"

#include <stdio.h>
#include <stdint.h>

const char *ts_device_name(ts_device d)
{
	switch (d) {
	case TS_DEVICE_CPU:
		return "cpu";
	case TS_DEVICE_CUDA:
		return "cuda";
	}
	return "unknown";
}

/* "[512, 256]" into buf; callers pass at most TS_MAX_DIMS values (ndim is
 * checked first), and the loop stops short of the end in any case. */
static const char *shape_str(int ndim, const int64_t *shape, char buf[256])
{
	size_t len = 0;
	buf[len++] = '[';
	for (int i = 0; i < ndim && i < TS_MAX_DIMS && len < 200; i++)
		len += (size_t)snprintf(buf + len, 256 - len, "%s%lld", i ? ", " : "",
					(long long)shape[i]);
	snprintf(buf + len, 256 - len, "]");
	return buf;
}

/* A size-variable extent matches any value up to its bound; whether the
 * arrays agree on it is check_sizes'. */
static bool same_shape(const ts_array *a, const ts_buffer *b)
{
	if (a->ndim != b->ndim)
		return false;
	for (int i = 0; i < a->ndim; i++)
		if (b->dim_var[i] ? a->shape[i] < 1 || a->shape[i] > b->shape[i]
				  : a->shape[i] != b->shape[i])
			return false;
	return true;
}

/* "[n <= 4096, 64]": a parameter's shape, size variables by name. */
static const char *param_shape_str(const ts_buffer *p, char buf[256])
{
	size_t len = 0;
	buf[len++] = '[';
	for (int i = 0; i < p->ndim && i < TS_MAX_DIMS && len < 200; i++) {
		const char *sep = i ? ", " : "";
		if (p->dim_var[i])
			len += (size_t)snprintf(buf + len, 256 - len, "%s%.24s <= %lld", sep,
						p->dim_var[i]->u.var.name, (long long)p->shape[i]);
		else
			len += (size_t)snprintf(buf + len, 256 - len, "%s%lld", sep,
						(long long)p->shape[i]);
	}
	snprintf(buf + len, 256 - len, "]");
	return buf;
}

/* What a descriptor says about itself, before it is compared with the
 * parameter: data present, ndim in range, a dtype arrays can hold. */
static ts_status check_descriptor(ts_ctx *ctx, const char *fname, int i, const ts_array *a,
				  const ts_buffer *p)
{
	if (!a)
		return ts_error(ctx, TS_ERR_INVALID, "call %s: argument %d (%s) is NULL", fname, i,
				p->name);
	if (!a->data)
		return ts_error(ctx, TS_ERR_INVALID, "call %s: argument %d (%s) has NULL data", fname,
				i, p->name);
	if (a->ndim < 0 || a->ndim > TS_MAX_DIMS)
		return ts_error(ctx, TS_ERR_INVALID,
				"call %s: argument %d (%s) has %d dimensions (0 to %d allowed)", fname,
				i, p->name, a->ndim, TS_MAX_DIMS);
	/* vectors (lanes > 1) are reported below as a dtype mismatch */
	if (a->dtype.lanes < 2 && !ts_array_dtype_ok(a->dtype))
		return ts_error(ctx, TS_ERR_INVALID,
				"call %s: argument %d (%s) has an invalid dtype (code %d, %d bits, %d lanes)",
				fname, i, p->name, a->dtype.code, a->dtype.bits, a->dtype.lanes);
	return TS_OK;
}

/* Compiled code indexes every buffer as dense row-major.  The stride of a
 * dimension of extent 1 is never stepped along, so any value is dense
 * there (as in NumPy and DLPack, and ts_array_wrap_strided). */
static ts_status check_strides(ts_ctx *ctx, const char *fname, int i, const ts_array *a,
			       const ts_buffer *p)
{
	int64_t want[TS_MAX_DIMS], stride = 1;
	bool dense = true;
	for (int d = a->ndim - 1; d >= 0; d--) {
		want[d] = stride;
		dense = dense && (a->strides[d] == stride || a->shape[d] == 1);
		stride *= a->shape[d];
	}
	if (dense)
		return TS_OK;
	char got[256], exp[256];
	return ts_error(ctx, TS_ERR_INVALID,
			"call %s: argument %d (%s) has strides %s, expected dense row-major %s",
			fname, i, p->name, shape_str(a->ndim, a->strides, got),
			shape_str(a->ndim, want, exp));
}

static ts_status check_one(ts_ctx *ctx, const char *fname, int i, const ts_array *a,
			   const ts_buffer *p, ts_device want)
{
	ts_status st = check_descriptor(ctx, fname, i, a, p);
	if (st != TS_OK)
		return st;
	if (!ts_dtype_eq(a->dtype, p->dtype)) {
		char got[24], exp[24];
		return ts_error(ctx, TS_ERR_INVALID,
				"call %s: argument %d (%s) has dtype %s, expected %s", fname, i,
				p->name, ts_dtype_str(a->dtype, got), ts_dtype_str(p->dtype, exp));
	}
	if (!same_shape(a, p)) {
		char got[256], exp[256];
		return ts_error(ctx, TS_ERR_INVALID,
				"call %s: argument %d (%s) has shape %s, expected %s", fname, i,
				p->name, shape_str(a->ndim, a->shape, got), param_shape_str(p, exp));
	}
	st = check_strides(ctx, fname, i, a, p);
	if (st != TS_OK)
		return st;
	if (a->device != want)
		return ts_error(ctx, TS_ERR_INVALID,
				"call %s: argument %d (%s) is on the %s device, expected %s", fname,
				i, p->name, ts_device_name(a->device), ts_device_name(want));
	/* The LLVM backend marks every buffer parameter `align 64`. */
	if (want == TS_DEVICE_CPU && (uintptr_t)a->data % TS_ARRAY_ALIGN != 0)
		return ts_error(ctx, TS_ERR_INVALID,
				"call %s: argument %d (%s) data is not %d-byte aligned (compiled code assumes it)",
				fname, i, p->name, TS_ARRAY_ALIGN);
	return TS_OK;
}

static bool is_output(const ts_func *f, int i)
{
	return f->param_tensors && f->param_tensors[i] &&
	       f->param_tensors[i]->op == TS_OP_COMPUTE;
}

bool ts_bytes_overlap(const void *a, uint64_t na, const void *b, uint64_t nb)
{
	uintptr_t a0 = (uintptr_t)a, b0 = (uintptr_t)b;
	return (uint64_t)(b0 - a0) < na || (uint64_t)(a0 - b0) < nb;
}

static bool overlap(const ts_array *a, const ts_array *b)
{
	return ts_bytes_overlap(a->data, ts_array_nbytes(a), b->data, ts_array_nbytes(b));
}

/* Compiled code assumes its buffers do not overlap (LLVM `noalias`, C
 * `restrict`): an output may share no byte with another argument, while
 * inputs, only read, may alias each other. */
static ts_status check_aliasing(ts_ctx *ctx, const ts_func *f, int n, ts_array *const *args)
{
	for (int i = 0; i < n; i++) {
		if (!is_output(f, i))
			continue;
		for (int j = 0; j < n; j++)
			if (j != i && args[j]->device == args[i]->device && overlap(args[i], args[j]))
				return ts_error(ctx, TS_ERR_INVALID,
						"call %s: argument %d (%s) overlaps argument %d (%s)",
						f->name, i, f->params[i]->name, j, f->params[j]->name);
	}
	return TS_OK;
}

int ts_func_nargs(const ts_func *f)
{
	return !f ? 0 : f->nsizes > 0 ? f->nparams - 1 : f->nparams;
}

/* Every size variable takes one value across the arguments; sizes[k]
 * receives size_vars[k]'s. */
static ts_status check_sizes(ts_ctx *ctx, const ts_func *f, int n, ts_array *const *args,
			     int64_t *sizes)
{
	int from[TS_MAX_SIZE_VARS];
	for (int k = 0; k < f->nsizes && k < TS_MAX_SIZE_VARS; k++)
		from[k] = -1;
	for (int i = 0; i < n; i++)
		for (int d = 0; d < f->params[i]->ndim; d++) {
			const ts_expr *v = f->params[i]->dim_var[d];
			int k = 0;
			while (v && k < f->nsizes && f->size_vars[k] != v)
				k++;
			if (!v || k >= f->nsizes || k >= TS_MAX_SIZE_VARS)
				continue;
			if (from[k] >= 0 && sizes[k] != args[i]->shape[d])
				return ts_error(ctx, TS_ERR_INVALID,
						"call %s: argument %d (%s) gives %s = %lld in dimension %d, "
						"but argument %d (%s) gave %lld",
						f->name, i, f->params[i]->name, v->u.var.name,
						(long long)args[i]->shape[d], d, from[k],
						f->params[from[k]]->name, (long long)sizes[k]);
			from[k] = i;
			sizes[k] = args[i]->shape[d];
		}
	return TS_OK;
}

ts_status ts_check_args(ts_ctx *ctx, const ts_func *f, int n, ts_array *const *args,
			ts_device want)
{
	int64_t sizes[TS_MAX_SIZE_VARS];
	return ts_check_args_sizes(ctx, f, n, args, want, sizes);
}

ts_status ts_check_args_sizes(ts_ctx *ctx, const ts_func *f, int n, ts_array *const *args,
			      ts_device want, int64_t *sizes)
{
	if (!ctx)
		return TS_ERR_INVALID;
	if (!f)
		return ts_error(ctx, TS_ERR_INVALID, "call: the function is NULL");
	/* as ts_build and cg_llvm_compile refuse it: the function's buffers
	 * are its context's, freed with that one, not with ctx */
	if (f->ctx && f->ctx != ctx)
		return ts_error(ctx, TS_ERR_INVALID, "call %s: the function belongs to another context",
				f->name);
	if (want != TS_DEVICE_CPU && want != TS_DEVICE_CUDA)
		return ts_error(ctx, TS_ERR_INVALID, "call %s: unknown device %d", f->name, (int)want);
	int want_n = ts_func_nargs(f);
	if (n != want_n)
		return ts_error(ctx, TS_ERR_INVALID, "call %s: expected %d argument%s, got %d",
				f->name, want_n, want_n == 1 ? "" : "s", n);
	if (f->nsizes > TS_MAX_SIZE_VARS || (f->nsizes > 0 && !f->size_vars))
		return ts_error(ctx, TS_ERR_INVALID, "call %s: %d size variables", f->name, f->nsizes);
	/* the caller's mistake, not the function's: said as such */
	if (f->nsizes > 0 && !sizes)
		return ts_error(ctx, TS_ERR_INVALID, "call %s: sizes is NULL, and the function has %d size "
				"variable%s to receive", f->name, f->nsizes, f->nsizes == 1 ? "" : "s");
	if (n > 0 && !args)
		return ts_error(ctx, TS_ERR_INVALID, "call %s: the argument list is NULL", f->name);
	for (int i = 0; i < n; i++) {
		ts_status st = check_one(ctx, f->name, i, args[i], f->params[i], want);
		if (st != TS_OK)
			return st;
	}
	ts_status st = check_sizes(ctx, f, n, args, sizes);
	return st == TS_OK ? check_aliasing(ctx, f, n, args) : st;
}
