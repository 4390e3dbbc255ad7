/*
 * args.c - argument checks shared by every way of calling a compiled
 * function (see args.h).
 */
#include "args.h"

#include <stdio.h>

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

/* "[512, 256]" into buf; shapes have at most TS_MAX_DIMS extents, so 256
 * bytes always suffice. */
static const char *shape_str(int ndim, const int64_t *shape, char buf[256])
{
	size_t len = 0;
	buf[len++] = '[';
	for (int i = 0; i < ndim; i++)
		len += (size_t)snprintf(buf + len, 256 - len, "%s%lld", i ? ", " : "",
					(long long)shape[i]);
	snprintf(buf + len, 256 - len, "]");
	return buf;
}

static bool same_shape(const ts_array *a, const ts_buffer *b)
{
	if (a->ndim != b->ndim)
		return false;
	for (int i = 0; i < a->ndim; i++)
		if (a->shape[i] != b->shape[i])
			return false;
	return true;
}

static ts_status check_one(ts_ctx *ctx, const char *fname, int i, const ts_array *a,
			   const ts_buffer *p, ts_device want)
{
	if (!a)
		return ts_error(ctx, TS_ERR_INVALID, "call %s: argument %d (%s) is NULL", fname, i,
				p->name);
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
				p->name, shape_str(a->ndim, a->shape, got),
				shape_str(p->ndim, p->shape, exp));
	}
	if (a->device != want)
		return ts_error(ctx, TS_ERR_INVALID,
				"call %s: argument %d (%s) is on the %s device, expected %s", fname,
				i, p->name, ts_device_name(a->device), ts_device_name(want));
	return TS_OK;
}

ts_status ts_check_args(ts_ctx *ctx, const ts_func *f, int n, ts_array *const *args,
			ts_device want)
{
	if (!f)
		return ts_error(ctx, TS_ERR_INVALID, "call: the function is NULL");
	if (n != f->nparams)
		return ts_error(ctx, TS_ERR_INVALID, "call %s: expected %d argument%s, got %d",
				f->name, f->nparams, f->nparams == 1 ? "" : "s", n);
	if (n > 0 && !args)
		return ts_error(ctx, TS_ERR_INVALID, "call %s: the argument list is NULL", f->name);
	for (int i = 0; i < n; i++) {
		ts_status st = check_one(ctx, f->name, i, args[i], f->params[i], want);
		if (st != TS_OK)
			return st;
	}
	return TS_OK;
}
