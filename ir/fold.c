/*
 * fold.c - constant folding of operators on immediates (ir_fold_const).
 *
 * Integers are computed in 64 bits and wrapped to the dtype's width, signed
 * or unsigned as the dtype says; floats are computed in double from operands
 * rounded to their dtype and the result is rounded back, which is exact for
 * + - * / (double has more than twice the significand bits of float32).
 * Folding gives exactly the run-time answers of ir.h and never relies on
 * undefined C behaviour: x / 0 and x % 0 fold to 0, MIN / -1 to MIN, and a
 * float to integer conversion maps NaN to 0 and saturates.
 */
#include "arith_impl.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* Rounds to a binary format with `sig` significand bits, smallest normal
 * exponent emin, and largest finite value max. */
static double round_fmt(double x, int sig, int emin, double max)
{
	if (!isfinite(x) || x == 0)
		return x;
	int e;
	frexp(x, &e); /* |x| in [2^(e-1), 2^e) */
	int exp = e - 1 < emin ? emin : e - 1;
	double ulp = ldexp(1.0, exp - (sig - 1));
	double r = nearbyint(x / ulp) * ulp;
	return fabs(r) > max ? copysign(INFINITY, x) : r;
}

double ir_round_float(ts_dtype t, double v)
{
	if (t.code == TS_TYPE_BFLOAT)
		return round_fmt(v, 8, -126, 0x1.fep127);
	switch (t.bits) {
	case 16: return round_fmt(v, 11, -14, 65504.0);
	case 32: return round_fmt(v, 24, -126, FLT_MAX);
	default: return v;
	}
}

double ir_cast_float_to_float(ts_dtype t, double d)
{
	if (t.code == TS_TYPE_FLOAT && t.bits == 64)
		return d;
	/* one C conversion to float; the 16-bit dtypes round from there */
	float f = (float)d;
	return t.bits == 16 ? ir_round_float(t, (double)f) : (double)f;
}

double ir_cast_int_to_float(ts_dtype t, int64_t v, bool is_unsigned)
{
	if (t.code == TS_TYPE_FLOAT && t.bits == 64)
		return is_unsigned ? (double)(uint64_t)v : (double)v;
	/* C's integer to float conversion rounds once; through double it
	 * would round twice past 2^53 */
	float f = is_unsigned ? (float)(uint64_t)v : (float)v;
	return t.bits == 16 ? ir_round_float(t, (double)f) : (double)f;
}

/* ---- integers ------------------------------------------------------------------ */

static bool is_uint(ts_dtype t)
{
	return t.code == TS_TYPE_UINT;
}

static bool int_less(ts_dtype t, int64_t a, int64_t b)
{
	return is_uint(t) ? (uint64_t)a < (uint64_t)b : a < b;
}

/* Division and modulo of wrapped operands, with ir.h's answers for a zero
 * divisor and MIN / -1 (the caller wraps the result to the dtype). */
static bool int_div(ir_expr_kind k, ts_dtype t, int64_t a, int64_t b, int64_t *out)
{
	bool div = k == IR_TRUNCDIV || k == IR_FLOORDIV;
	if (b == 0 || (!is_uint(t) && b == -1)) {
		*out = b == 0 || !div ? 0 : (int64_t)(0 - (uint64_t)a);
		return true;
	}
	if (is_uint(t)) {
		*out = (int64_t)(div ? (uint64_t)a / (uint64_t)b : (uint64_t)a % (uint64_t)b);
		return true;
	}
	int64_t q = a / b, r = a % b;
	bool adjust = r != 0 && ((r < 0) != (b < 0));
	switch (k) {
	case IR_TRUNCDIV: *out = q; return true;
	case IR_TRUNCMOD: *out = r; return true;
	case IR_FLOORDIV: *out = adjust ? q - 1 : q; return true;
	case IR_FLOORMOD: *out = adjust ? r + b : r; return true;
	case IR_INT_IMM: case IR_FLOAT_IMM: case IR_VAR: case IR_ADD: case IR_SUB:
	case IR_MUL: case IR_DIV: case IR_MIN: case IR_MAX: case IR_EQ: case IR_NE:
	case IR_LT: case IR_LE: case IR_GT: case IR_GE: case IR_AND: case IR_OR:
	case IR_NOT: case IR_CAST: case IR_SELECT: case IR_CALL: case IR_READ:
	case IR_LOAD: case IR_RAMP: case IR_BROADCAST: case IR_REDUCE:
	case IR_EXPR_KIND_COUNT:
		break;
	}
	return false;
}

/* Binary operator on wrapped integer operands of dtype t. */
static bool int_bin(ir_expr_kind k, ts_dtype t, int64_t a, int64_t b, int64_t *out)
{
	uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
	switch (k) {
	case IR_ADD: *out = (int64_t)(ua + ub); return true;
	case IR_SUB: *out = (int64_t)(ua - ub); return true;
	case IR_MUL: *out = (int64_t)(ua * ub); return true;
	case IR_TRUNCDIV: case IR_TRUNCMOD: case IR_FLOORDIV: case IR_FLOORMOD:
		return int_div(k, t, a, b, out);
	case IR_MIN: *out = int_less(t, b, a) ? b : a; return true;
	case IR_MAX: *out = int_less(t, a, b) ? b : a; return true;
	case IR_EQ: *out = a == b; return true;
	case IR_NE: *out = a != b; return true;
	case IR_LT: *out = int_less(t, a, b); return true;
	case IR_LE: *out = !int_less(t, b, a); return true;
	case IR_GT: *out = int_less(t, b, a); return true;
	case IR_GE: *out = !int_less(t, a, b); return true;
	case IR_AND: *out = a && b; return true;
	case IR_OR: *out = a || b; return true;
	case IR_INT_IMM: case IR_FLOAT_IMM: case IR_VAR: case IR_DIV: case IR_NOT:
	case IR_CAST: case IR_SELECT: case IR_CALL: case IR_READ: case IR_LOAD:
	case IR_RAMP: case IR_BROADCAST: case IR_REDUCE: case IR_EXPR_KIND_COUNT:
		break;
	}
	return false;
}

/* ---- floats ------------------------------------------------------------------- */

/* Binary operator on float operands (comparisons give 0 or 1). */
static bool float_bin(ir_expr_kind k, double a, double b, double *out)
{
	switch (k) {
	case IR_ADD: *out = a + b; return true;
	case IR_SUB: *out = a - b; return true;
	case IR_MUL: *out = a * b; return true;
	case IR_DIV: *out = a / b; return true;
	case IR_MIN: *out = ir_fminmax(false, a, b); return true; /* NaN as ir.h says */
	case IR_MAX: *out = ir_fminmax(true, a, b); return true;
	case IR_EQ: *out = a == b; return true;
	case IR_NE: *out = a != b; return true;
	case IR_LT: *out = a < b; return true;
	case IR_LE: *out = a <= b; return true;
	case IR_GT: *out = a > b; return true;
	case IR_GE: *out = a >= b; return true;
	case IR_INT_IMM: case IR_FLOAT_IMM: case IR_VAR: case IR_TRUNCDIV:
	case IR_TRUNCMOD: case IR_FLOORDIV: case IR_FLOORMOD: case IR_AND: case IR_OR:
	case IR_NOT: case IR_CAST: case IR_SELECT: case IR_CALL: case IR_READ:
	case IR_LOAD: case IR_RAMP: case IR_BROADCAST: case IR_REDUCE:
	case IR_EXPR_KIND_COUNT:
		break;
	}
	return false;
}

float ir_round_tf32(float x)
{
	uint32_t u;
	memcpy(&u, &x, sizeof(u));
	if ((u & 0x7f800000u) != 0x7f800000u) /* finite: half a TF32 ulp added, then cut */
		u = (u + 0x1000u) & 0xffffe000u;
	memcpy(&x, &u, sizeof(x));
	return x;
}

double ir_intrinsic_eval(ir_intrinsic op, double x, double y)
{
	switch (op) {
	case IR_INTRIN_EXP: return exp(x);
	case IR_INTRIN_LOG: return log(x);
	case IR_INTRIN_SQRT: return sqrt(x);
	case IR_INTRIN_TANH: return tanh(x);
	case IR_INTRIN_EXP2: return exp2(x);
	case IR_INTRIN_FABS: return fabs(x);
	case IR_INTRIN_POW: return pow(x, y);
	case IR_INTRIN_ERF: return erf(x);
	case IR_INTRIN_SIGMOID: return 1.0 / (1.0 + exp(-x));
	case IR_INTRIN_LIKELY: return x; /* bool argument: never folded here */
	case IR_INTRIN_FLOOR: return floor(x);
	case IR_INTRIN_CEIL: return ceil(x);
	case IR_INTRIN_ROUND_TF32: return ir_round_tf32((float)x);
	case IR_INTRIN_COUNT: break;
	}
	return NAN;
}

/* ---- the folder ------------------------------------------------------------------ */

static double fval(const ts_expr *e)
{
	return ir_round_float(e->dtype, e->u.float_imm);
}

/* Both operands immediates of the same kind: their folded value, or e. */
static ts_expr *fold_binary(ts_ctx *ctx, ts_expr *e)
{
	ts_expr *a = e->u.bin.a, *b = e->u.bin.b;
	ts_dtype t = a->dtype;
	if (a->kind == IR_INT_IMM && b->kind == IR_INT_IMM) {
		int64_t r;
		if (!int_bin(e->kind, t, ir_wrap_int(t, a->u.int_imm), ir_wrap_int(t, b->u.int_imm), &r))
			return e;
		return ts_const(ctx, e->dtype, ir_wrap_int(e->dtype, r));
	}
	if (a->kind == IR_FLOAT_IMM && b->kind == IR_FLOAT_IMM) {
		double r;
		if (!float_bin(e->kind, fval(a), fval(b), &r))
			return e;
		if (ts_dtype_is_bool(e->dtype))
			return ts_const(ctx, e->dtype, r != 0);
		return ts_fconst(ctx, e->dtype, ir_round_float(e->dtype, r));
	}
	return e;
}

double ir_fminmax(bool max, double a, double b)
{
	if (isnan(b))
		return a;
	if (isnan(a))
		return b;
	return (max ? a > b : a < b) ? a : b;
}

int64_t ir_float_to_int(ts_dtype t, double v)
{
	if (!ts_dtype_is_valid(t) || ts_dtype_is_float(t) || t.code == TS_TYPE_HANDLE)
		return 0;
	if (t.code == TS_TYPE_BOOL)
		return v != 0; /* NaN != 0 */
	/* the dtype's limits lo and hi + 1 are powers of two, exact as doubles */
	ir_ival r = ir_dtype_ival(t);
	double w = trunc(v);
	if (isnan(w))
		return 0;
	if (w <= (double)r.lo)
		return ir_wrap_int(t, (int64_t)r.lo);
	if (w >= (double)(r.hi + 1))
		return ir_wrap_int(t, (int64_t)(uint64_t)r.hi);
	if (t.code == TS_TYPE_UINT)
		return ir_wrap_int(t, (int64_t)(uint64_t)w);
	return (int64_t)w;
}

bool ir_int_range(ts_dtype t, double *lo, double *top)
{
	if (!lo || !top || !ts_dtype_is_valid(t) || ts_dtype_is_float(t) || t.code == TS_TYPE_HANDLE)
		return false;
	ir_ival r = ir_dtype_ival(t);
	*lo = (double)r.lo;
	*top = (double)(r.hi + 1);
	return true;
}

static ts_expr *fold_cast(ts_ctx *ctx, ts_expr *e)
{
	ts_expr *a = e->u.un.a;
	ts_dtype t = e->dtype;
	if (a->kind == IR_INT_IMM) {
		ir_i128 v = ir_imm_value(a);
		if (ts_dtype_is_float(t))
			return ts_fconst(ctx, t, ir_cast_int_to_float(t, (int64_t)v, is_uint(a->dtype)));
		return ts_const(ctx, t, ir_wrap_int(t, (int64_t)v));
	}
	if (a->kind != IR_FLOAT_IMM)
		return e;
	double v = fval(a);
	if (ts_dtype_is_float(t))
		return ts_fconst(ctx, t, ir_cast_float_to_float(t, v));
	if (ts_dtype_is_bool(t))
		return ts_const(ctx, t, v != 0);
	return ts_const(ctx, t, ir_float_to_int(t, v));
}

static ts_expr *fold_call(ts_ctx *ctx, ts_expr *e)
{
	int n = e->u.call.nargs;
	for (int i = 0; i < n; i++)
		if (e->u.call.args[i]->kind != IR_FLOAT_IMM)
			return e;
	double x = fval(e->u.call.args[0]), y = n > 1 ? fval(e->u.call.args[1]) : 0;
	return ts_fconst(ctx, e->dtype, ir_round_float(e->dtype, ir_intrinsic_eval(e->u.call.op, x, y)));
}

ts_expr *ir_fold_const(ts_ctx *ctx, ts_expr *e)
{
	if (!e) {
		ts_error(ctx, TS_ERR_INVALID, "fold_const: expression is NULL");
		return NULL;
	}
	switch (e->kind) {
	case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV: case IR_TRUNCDIV:
	case IR_TRUNCMOD: case IR_FLOORDIV: case IR_FLOORMOD: case IR_MIN: case IR_MAX:
	case IR_EQ: case IR_NE: case IR_LT: case IR_LE: case IR_GT: case IR_GE:
	case IR_AND: case IR_OR:
		return e->dtype.lanes == 1 ? fold_binary(ctx, e) : e;
	case IR_NOT:
		if (e->u.un.a->kind == IR_INT_IMM)
			return ts_const(ctx, e->dtype, !e->u.un.a->u.int_imm);
		return e;
	case IR_CAST:
		return e->dtype.lanes == 1 ? fold_cast(ctx, e) : e;
	case IR_SELECT:
		if (e->u.select.cond->kind == IR_INT_IMM)
			return e->u.select.cond->u.int_imm ? e->u.select.t : e->u.select.f;
		return e;
	case IR_CALL:
		return fold_call(ctx, e);
	case IR_INT_IMM: case IR_FLOAT_IMM: case IR_VAR: case IR_READ: case IR_LOAD:
	case IR_RAMP: case IR_BROADCAST: case IR_REDUCE: case IR_EXPR_KIND_COUNT:
		break;
	}
	return e;
}
