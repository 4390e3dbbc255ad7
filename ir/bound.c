/*
 * bound.c - intervals of integer expressions (ir_bound_of).
 *
 * Each node's interval is computed exactly from its operands' intervals in
 * 128-bit arithmetic and then clipped to the node's dtype: if the exact
 * result might leave the dtype's range, the value might have wrapped, so the
 * only sound answer is the whole range.  Division and modulo follow the
 * rounding rules of ir.h; a divisor interval containing zero is allowed,
 * and since x / 0 = x % 0 = 0 (ir.h), every such interval contains 0.
 */
#include "arith_impl.h"

/* ---- 128-bit helpers ------------------------------------------------------ */

static ir_i128 lo_of(ir_i128 a, ir_i128 b) { return a < b ? a : b; }
static ir_i128 hi_of(ir_i128 a, ir_i128 b) { return a > b ? a : b; }
static ir_i128 abs128(ir_i128 a) { return a < 0 ? -a : a; }

ir_i128 ir_mul_sat(ir_i128 a, ir_i128 b)
{
	if (a == 0 || b == 0)
		return 0;
	bool neg = (a < 0) != (b < 0);
	if (abs128(a) > IR_IVAL_BIG / abs128(b))
		return neg ? -IR_IVAL_BIG : IR_IVAL_BIG;
	return a * b;
}

ir_i128 ir_floordiv128(ir_i128 a, ir_i128 b)
{
	ir_i128 q = a / b;
	if (a % b != 0 && ((a < 0) != (b < 0)))
		q--;
	return q;
}

static ir_ival ival(ir_i128 lo, ir_i128 hi)
{
	return (ir_ival){lo, hi};
}

static ir_ival unknown(void)
{
	return ival(-IR_IVAL_BIG, IR_IVAL_BIG);
}

/* ---- dtypes ----------------------------------------------------------------- */

ir_ival ir_dtype_ival(ts_dtype t)
{
	switch ((ts_type_code)t.code) {
	case TS_TYPE_INT:
		return ival(-((ir_i128)1 << (t.bits - 1)), ((ir_i128)1 << (t.bits - 1)) - 1);
	case TS_TYPE_UINT:
		return ival(0, ((ir_i128)1 << t.bits) - 1);
	case TS_TYPE_BOOL:
		return ival(0, 1);
	case TS_TYPE_FLOAT:
	case TS_TYPE_BFLOAT:
	case TS_TYPE_HANDLE:
		break;
	}
	return unknown();
}

bool ir_ival_fits(ir_ival v, ts_dtype t)
{
	ir_ival r = ir_dtype_ival(t);
	return v.lo >= r.lo && v.hi <= r.hi && r.hi < IR_IVAL_BIG;
}

int64_t ir_wrap_int(ts_dtype t, int64_t v)
{
	if (t.code == TS_TYPE_BOOL)
		return v != 0;
	if (t.bits >= 64 || t.bits == 0)
		return v;
	uint64_t mask = (UINT64_C(1) << t.bits) - 1, u = (uint64_t)v & mask;
	if (t.code == TS_TYPE_INT && (u >> (t.bits - 1)))
		u |= ~mask;
	return (int64_t)u;
}

ir_i128 ir_imm_value(const ts_expr *e)
{
	int64_t v = ir_wrap_int(e->dtype, e->u.int_imm);
	if (e->dtype.code == TS_TYPE_UINT && e->dtype.bits >= 64)
		return (ir_i128)(uint64_t)v;
	return v;
}

/* ---- per-operator rules ----------------------------------------------------- */

static ir_ival add_iv(ir_ival a, ir_ival b)
{
	return ival(a.lo + b.lo, a.hi + b.hi);
}

static ir_ival sub_iv(ir_ival a, ir_ival b)
{
	return ival(a.lo - b.hi, a.hi - b.lo);
}

static ir_ival mul_iv(ir_ival a, ir_ival b)
{
	ir_i128 p[4] = {ir_mul_sat(a.lo, b.lo), ir_mul_sat(a.lo, b.hi),
			ir_mul_sat(a.hi, b.lo), ir_mul_sat(a.hi, b.hi)};
	ir_ival r = ival(p[0], p[0]);
	for (int i = 1; i < 4; i++) {
		r.lo = lo_of(r.lo, p[i]);
		r.hi = hi_of(r.hi, p[i]);
	}
	return r;
}

/* Largest |b| - 1 over nonzero b in the interval: the largest remainder. */
/* The largest |x % y| for y in b; 0 when b is [0, 0] (x % 0 = 0). */
static ir_i128 max_rem(ir_ival b)
{
	return hi_of(hi_of(abs128(b.lo), abs128(b.hi)) - 1, 0);
}

static ir_ival div_iv(ir_ival a, ir_ival b, bool floor)
{
	if (b.lo > 0 || b.hi < 0) {
		/* the real quotient is monotone in each operand on this box, so
		 * its extremes (and those of its rounding) are at the corners */
		ir_i128 q[4] = {a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi};
		if (floor) {
			q[0] = ir_floordiv128(a.lo, b.lo);
			q[1] = ir_floordiv128(a.lo, b.hi);
			q[2] = ir_floordiv128(a.hi, b.lo);
			q[3] = ir_floordiv128(a.hi, b.hi);
		}
		ir_ival r = ival(q[0], q[0]);
		for (int i = 1; i < 4; i++) {
			r.lo = lo_of(r.lo, q[i]);
			r.hi = hi_of(r.hi, q[i]);
		}
		return r;
	}
	/* a nonzero b gives |a / b| <= |a|, and b = 0 gives 0 */
	ir_i128 m = hi_of(abs128(a.lo), abs128(a.hi));
	return ival(-m, m);
}

static ir_ival truncmod_iv(ir_ival a, ir_ival b)
{
	ir_i128 m = max_rem(b);
	if (b.lo == b.hi && b.lo != 0) {
		ir_i128 d = abs128(b.lo);
		if ((a.lo >= 0 || a.hi <= 0) && a.lo / d == a.hi / d)
			return ival(a.lo % d, a.hi % d); /* one block: exact */
	}
	if (a.lo >= 0)
		return ival(0, lo_of(a.hi, m));
	if (a.hi <= 0)
		return ival(hi_of(a.lo, -m), 0);
	return ival(hi_of(a.lo, -m), lo_of(a.hi, m));
}

static ir_ival floormod_iv(ir_ival a, ir_ival b)
{
	if (b.lo == b.hi && b.lo != 0) {
		ir_i128 d = b.lo, q = ir_floordiv128(a.lo, d);
		if (q == ir_floordiv128(a.hi, d))
			return ival(a.lo - q * d, a.hi - q * d); /* one block: exact */
	}
	if (b.lo > 0) /* the remainder lies in [0, b) and, for a >= 0, <= a */
		return ival(0, a.lo >= 0 ? lo_of(a.hi, b.hi - 1) : b.hi - 1);
	if (b.hi < 0)
		return ival(a.hi <= 0 ? hi_of(a.lo, b.lo + 1) : b.lo + 1, 0);
	ir_i128 m = max_rem(b);
	return ival(-m, m);
}

static ir_ival cast_iv(const ts_expr *e, ir_ival a)
{
	const ts_expr *src = e->u.un.a;
	if (ts_dtype_is_float(src->dtype))
		return ir_dtype_ival(e->dtype);
	if (e->dtype.code == TS_TYPE_BOOL)
		return a.lo > 0 || a.hi < 0 ? ival(1, 1) : a.lo == 0 && a.hi == 0 ? ival(0, 0) : ival(0, 1);
	return a;
}

/* The innermost range of the variable, within what its dtype can hold. */
static ir_ival var_iv(const ts_expr *e, int n, const ir_range *r)
{
	ir_ival t = ir_dtype_ival(e->dtype);
	for (int i = n - 1; i >= 0; i--) {
		if (r[i].var != e || r[i].extent <= 0)
			continue;
		ir_ival v = ival(hi_of(r[i].min, t.lo), lo_of((ir_i128)r[i].min + r[i].extent - 1, t.hi));
		return v.lo <= v.hi ? v : t;
	}
	return t;
}

static ir_ival ramp_iv(ir_ival base, const ts_expr *e)
{
	ir_i128 span = (ir_i128)e->u.ramp.stride * (e->u.ramp.lanes - 1);
	return ival(base.lo + lo_of(span, 0), base.hi + hi_of(span, 0));
}

/* ---- the walk ------------------------------------------------------------------ */

typedef struct {
	int n;
	const ir_range *r;
} scope;

static ir_ival walk(const ts_expr *e, const scope *s);

static ir_ival bin(const ts_expr *e, const scope *s)
{
	ir_ival a = walk(e->u.bin.a, s), b = walk(e->u.bin.b, s);
	switch (e->kind) {
	case IR_ADD: return add_iv(a, b);
	case IR_SUB: return sub_iv(a, b);
	case IR_MUL: return mul_iv(a, b);
	case IR_TRUNCDIV: return div_iv(a, b, false);
	case IR_FLOORDIV: return div_iv(a, b, true);
	case IR_TRUNCMOD: return truncmod_iv(a, b);
	case IR_FLOORMOD: return floormod_iv(a, b);
	case IR_MIN: return ival(lo_of(a.lo, b.lo), lo_of(a.hi, b.hi));
	case IR_MAX: return ival(hi_of(a.lo, b.lo), hi_of(a.hi, b.hi));
	case IR_INT_IMM: case IR_FLOAT_IMM: case IR_VAR: case IR_DIV:
	case IR_EQ: case IR_NE: case IR_LT: case IR_LE: case IR_GT: case IR_GE:
	case IR_AND: case IR_OR: case IR_NOT: case IR_CAST: case IR_SELECT:
	case IR_CALL: case IR_READ: case IR_LOAD: case IR_RAMP: case IR_BROADCAST:
	case IR_REDUCE: case IR_EXPR_KIND_COUNT:
		break;
	}
	return ir_dtype_ival(e->dtype);
}

/* The interval before clipping to the dtype. */
static ir_ival raw(const ts_expr *e, const scope *s)
{
	switch (e->kind) {
	case IR_INT_IMM:
		return ival(ir_imm_value(e), ir_imm_value(e));
	case IR_VAR:
		return var_iv(e, s->n, s->r);
	case IR_ADD: case IR_SUB: case IR_MUL: case IR_TRUNCDIV: case IR_TRUNCMOD:
	case IR_FLOORDIV: case IR_FLOORMOD: case IR_MIN: case IR_MAX:
		return bin(e, s);
	case IR_CAST:
		return cast_iv(e, walk(e->u.un.a, s));
	case IR_SELECT: {
		ir_ival t = walk(e->u.select.t, s), f = walk(e->u.select.f, s);
		return ival(lo_of(t.lo, f.lo), hi_of(t.hi, f.hi));
	}
	case IR_RAMP:
		return ramp_iv(walk(e->u.ramp.base, s), e);
	case IR_BROADCAST:
		return walk(e->u.bcast.value, s);
	case IR_FLOAT_IMM: case IR_DIV: case IR_EQ: case IR_NE: case IR_LT: case IR_LE:
	case IR_GT: case IR_GE: case IR_AND: case IR_OR: case IR_NOT: case IR_CALL:
	case IR_READ: case IR_LOAD: case IR_REDUCE: case IR_EXPR_KIND_COUNT:
		break;
	}
	return ir_dtype_ival(e->dtype);
}

static ir_ival walk(const ts_expr *e, const scope *s)
{
	if (!ts_dtype_is_int(e->dtype) && !ts_dtype_is_bool(e->dtype))
		return unknown();
	ir_ival v = raw(e, s);
	if (v.lo > v.hi || !ir_ival_fits(v, e->dtype))
		return ir_dtype_ival(e->dtype);
	return v;
}

ir_ival ir_bound_ival(const ts_expr *e, int n, const ir_range *ranges)
{
	scope s = {n, ranges};
	return e ? walk(e, &s) : unknown();
}

ir_interval ir_bound_of(const ts_expr *e, int n, const ir_range *ranges)
{
	ir_interval out = {IR_NEG_INF, IR_POS_INF};
	/* no context to report bad arguments to: "unbounded" is always sound */
	if (!e || n < 0 || (n > 0 && !ranges))
		return out;
	if (!ts_dtype_is_int(e->dtype) && !ts_dtype_is_bool(e->dtype))
		return out;
	ir_ival v = ir_bound_ival(e, n, ranges), full = ir_dtype_ival(e->dtype);
	bool wide = e->dtype.bits >= 32;
	if (v.lo > INT64_MIN && !(wide && v.lo == full.lo && full.lo < 0))
		out.min = (int64_t)v.lo;
	if (v.hi < INT64_MAX && !(wide && v.hi == full.hi))
		out.max = (int64_t)v.hi;
	return out;
}

/* ---- monotonicity --------------------------------------------------------- */

static ir_mono mono_neg(ir_mono m)
{
	return m == IR_MONO_UNKNOWN ? m : (ir_mono)-m;
}

static ir_mono mono_join(ir_mono a, ir_mono b)
{
	if (a == IR_MONO_UNKNOWN || b == IR_MONO_UNKNOWN)
		return IR_MONO_UNKNOWN;
	return a == IR_MONO_INDEP ? b : b == IR_MONO_INDEP || a == b ? a : IR_MONO_UNKNOWN;
}

static ir_mono uses(ts_expr *e, const ts_expr *v)
{
	return ir_expr_uses_var(e, v) ? IR_MONO_UNKNOWN : IR_MONO_INDEP;
}

ir_mono ir_monotone(ts_expr *e, const ts_expr *v)
{
	int64_t c;
	if (!e || !v)
		return IR_MONO_UNKNOWN;
	ir_expr_kind k = e->kind;
	if (k == IR_VAR)
		return e == v ? IR_MONO_UP : IR_MONO_INDEP;
	if (k == IR_INT_IMM)
		return IR_MONO_INDEP;
	/* a widening integer cast keeps the value */
	if (k == IR_CAST && ts_dtype_is_int(e->dtype) && ts_dtype_is_int(e->u.un.a->dtype) &&
	    e->u.un.a->dtype.bits <= e->dtype.bits)
		return ir_monotone(e->u.un.a, v);
	if (k == IR_ADD || k == IR_MIN || k == IR_MAX)
		return mono_join(ir_monotone(e->u.bin.a, v), ir_monotone(e->u.bin.b, v));
	if (k == IR_SUB)
		return ir_monotone_diff(e->u.bin.a, e->u.bin.b, v);
	if (k == IR_MUL && ir_is_const_int(e->u.bin.b, &c))
		return c > 0 ? ir_monotone(e->u.bin.a, v)
		       : c < 0 ? mono_neg(ir_monotone(e->u.bin.a, v)) : IR_MONO_INDEP;
	if (k == IR_FLOORDIV && ir_is_const_int(e->u.bin.b, &c) && c > 0)
		return ir_monotone(e->u.bin.a, v);
	return uses(e, v);
}

ir_mono ir_monotone_diff(ts_expr *a, ts_expr *b, const ts_expr *v)
{
	return mono_join(ir_monotone(a, v), mono_neg(ir_monotone(b, v)));
}
