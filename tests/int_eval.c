/* int_eval.c - see int_eval.h. */
#include "int_eval.h"

static int64_t w32(int64_t v)
{
	return (int32_t)(uint32_t)(uint64_t)v;
}

static int64_t unknown(const ts_expr *e, ie_env *v)
{
	if (!v->unknown)
		v->unknown = e;
	return 0;
}

static int64_t eval_div(ir_expr_kind k, int64_t a, int64_t b, ie_env *v)
{
	if (b == 0) {
		v->div0 = true;
		return 0; /* x / 0 = x % 0 = 0 (ir.h) */
	}
	int64_t q = a / b, r = a % b; /* int32 operands: no int64 overflow */
	bool adj = r != 0 && ((r < 0) != (b < 0));
	switch (k) {
	case IR_TRUNCDIV: return w32(q);
	case IR_TRUNCMOD: return r;
	case IR_FLOORDIV: return w32(adj ? q - 1 : q);
	default: return adj ? r + b : r;
	}
}

static int64_t eval_bin(const ts_expr *e, ie_env *v)
{
	int64_t a = ie_eval(e->u.bin.a, v), b = ie_eval(e->u.bin.b, v);
	switch (e->kind) {
	case IR_ADD: return w32(a + b);
	case IR_SUB: return w32(a - b);
	case IR_MUL: return w32(a * b);
	case IR_TRUNCDIV: case IR_TRUNCMOD: case IR_FLOORDIV: case IR_FLOORMOD:
		return eval_div(e->kind, a, b, v);
	case IR_MIN: return a < b ? a : b;
	case IR_MAX: return a > b ? a : b;
	case IR_EQ: return a == b;
	case IR_NE: return a != b;
	case IR_LT: return a < b;
	case IR_LE: return a <= b;
	case IR_GT: return a > b;
	case IR_GE: return a >= b;
	case IR_AND: return a && b;
	case IR_OR: return a || b;
	default: return unknown(e, v);
	}
}

int64_t ie_eval(const ts_expr *e, ie_env *v)
{
	switch (e->kind) {
	case IR_INT_IMM: return e->u.int_imm;
	case IR_VAR:
		for (int i = 0; i < v->nv; i++)
			if (v->vars[i] == e)
				return v->vals[i];
		return unknown(e, v);
	case IR_NOT: return !ie_eval(e->u.un.a, v);
	case IR_CAST: {
		int64_t a = ie_eval(e->u.un.a, v);
		return e->dtype.code == TS_TYPE_BOOL ? a != 0 : w32(a);
	}
	case IR_SELECT: {
		int64_t c = ie_eval(e->u.select.cond, v);
		int64_t t = ie_eval(e->u.select.t, v), f = ie_eval(e->u.select.f, v);
		return c ? t : f;
	}
	default: return ir_is_binary(e->kind) ? eval_bin(e, v) : unknown(e, v);
	}
}
