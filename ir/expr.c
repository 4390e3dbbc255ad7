/*
 * expr.c - dtypes, names, and the checked expression constructors.
 *
 * Constructors are the only way nodes are made, so their checks are the
 * IR's type system: a NULL operand gives NULL and records "add: operand a
 * is NULL" (when a failed builder call produced the NULL, its message was
 * recorded first and is the one kept), and a broken rule records an error
 * naming the operator and the offending dtypes.  A NULL context gives NULL
 * and records nothing.
 */
#include "ir.h"
#include "arith.h"

#include <math.h>
#include <string.h>

/* ---- dtypes ------------------------------------------------------------ */

bool ts_dtype_eq(ts_dtype a, ts_dtype b)
{
	return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

bool ts_dtype_is_float(ts_dtype t)
{
	return t.code == TS_TYPE_FLOAT || t.code == TS_TYPE_BFLOAT;
}

bool ts_dtype_is_int(ts_dtype t)
{
	return t.code == TS_TYPE_INT || t.code == TS_TYPE_UINT;
}

bool ts_dtype_is_bool(ts_dtype t)
{
	return t.code == TS_TYPE_BOOL;
}

ts_dtype ts_dtype_with_lanes(ts_dtype t, int lanes)
{
	t.lanes = lanes >= 1 && lanes <= TS_MAX_VECTOR_LANES ? (uint16_t)lanes : 0;
	return t;
}

bool ts_dtype_check(ts_ctx *ctx, const char *what, ts_dtype t)
{
	if (ts_dtype_is_valid(t))
		return true;
	/* a NULL `what` is no string for %s (glibc's "(null)" is not C's) */
	ts_error(ctx, TS_ERR_INVALID,
		 "%s: invalid dtype (code %d, %d bits, %d lanes): expected int/uint 8-64, "
		 "float 16/32/64, bfloat16, bool or handle with 1..%d lanes",
		 what ? what : "dtype", t.code, t.bits, t.lanes, TS_MAX_VECTOR_LANES);
	return false;
}

ts_dtype ts_dtype_element(ts_dtype t)
{
	t.lanes = 1;
	return t;
}

bool ts_dtype_is_valid(ts_dtype t)
{
	if (t.lanes < 1 || t.lanes > TS_MAX_VECTOR_LANES)
		return false;
	switch (t.code) {
	case TS_TYPE_INT:
	case TS_TYPE_UINT:
		return t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64;
	case TS_TYPE_FLOAT:
		return t.bits == 16 || t.bits == 32 || t.bits == 64;
	case TS_TYPE_BFLOAT:
		return t.bits == 16;
	case TS_TYPE_BOOL:
		return t.bits == 1;
	case TS_TYPE_HANDLE:
		return t.bits == 64 && t.lanes == 1;
	default:
		return false;
	}
}

int ts_dtype_bytes(ts_dtype t)
{
	return t.bits < 8 ? 1 : t.bits / 8;
}

static const char *const type_code_names[] = {"int", "uint", "float", "bfloat",
					       "bool", "handle"};

const char *ts_dtype_str(ts_dtype t, char buf[24])
{
	if (!buf)
		return NULL;
	const char *base = t.code < TS_COUNT_OF(type_code_names) ? type_code_names[t.code] : "?";
	int n;
	if (t.code == TS_TYPE_BOOL || t.code == TS_TYPE_HANDLE)
		n = snprintf(buf, 24, "%s", base);
	else
		n = snprintf(buf, 24, "%s%d", base, t.bits);
	if (t.lanes > 1 && n > 0 && n < 24)
		snprintf(buf + n, (size_t)(24 - n), "x%d", t.lanes);
	return buf;
}

bool ts_dtype_parse(const char *s, ts_dtype *out)
{
	if (!s || !out)
		return false;
	static const struct {
		const char *name;
		ts_dtype t;
	} table[] = {
		{"int8", ts_int8},       {"int16", ts_int16},     {"int32", ts_int32},
		{"int64", ts_int64},     {"uint8", ts_uint8},     {"bool", ts_bool},
		/* every name ts_dtype_str gives a scalar reads back */
		{"uint16", TS_DTYPE(TS_TYPE_UINT, 16)}, {"uint32", TS_DTYPE(TS_TYPE_UINT, 32)},
		{"uint64", TS_DTYPE(TS_TYPE_UINT, 64)},
		{"float16", ts_float16}, {"bfloat16", ts_bfloat16}, {"float32", ts_float32},
		{"float64", ts_float64},
	};
	for (size_t i = 0; i < TS_COUNT_OF(table); i++) {
		if (strcmp(s, table[i].name) == 0) {
			*out = table[i].t;
			return true;
		}
	}
	return false;
}

const char *ts_scope_name(ts_scope s)
{
	switch (s) {
	case TS_SCOPE_GLOBAL: return "global";
	case TS_SCOPE_SHARED: return "shared";
	case TS_SCOPE_LOCAL: return "local";
	}
	return "?";
}

const char *ts_for_kind_name(ts_for_kind k)
{
	switch (k) {
	case TS_FOR_SERIAL: return "for";
	case TS_FOR_PARALLEL: return "parallel";
	case TS_FOR_VECTORIZED: return "vectorized";
	case TS_FOR_UNROLLED: return "unrolled";
	case TS_FOR_THREAD: return "thread";
	case TS_FOR_TENSORIZED: return "tensorized";
	}
	return "?";
}

const char *ts_thread_tag_name(ts_thread_tag t)
{
	switch (t) {
	case TS_THREAD_NONE: return "none";
	case TS_BLOCK_X: return "blockIdx.x";
	case TS_BLOCK_Y: return "blockIdx.y";
	case TS_BLOCK_Z: return "blockIdx.z";
	case TS_THREAD_X: return "threadIdx.x";
	case TS_THREAD_Y: return "threadIdx.y";
	case TS_THREAD_Z: return "threadIdx.z";
	}
	return "?";
}

/* ---- names -------------------------------------------------------------- */

static const char *const expr_kind_names[] = {
#define X(k) #k,
	IR_EXPR_KINDS(X)
#undef X
};
static const char *const stmt_kind_names[] = {
#define X(k) #k,
	IR_STMT_KINDS(X)
#undef X
};
static const struct {
	const char *name;
	int arity;
} intrinsics[] = {
#define X(e, s, n) {s, n},
	IR_INTRINSICS(X)
#undef X
};

const char *ir_expr_kind_name(ir_expr_kind k)
{
	return (unsigned)k < IR_EXPR_KIND_COUNT ? expr_kind_names[k] : "?";
}

const char *ir_stmt_kind_name(ir_stmt_kind k)
{
	return (unsigned)k < IR_STMT_KIND_COUNT ? stmt_kind_names[k] : "?";
}

const char *ir_intrinsic_name(ir_intrinsic op)
{
	return (unsigned)op < IR_INTRIN_COUNT ? intrinsics[op].name : "?";
}

int ir_intrinsic_arity(ir_intrinsic op)
{
	return (unsigned)op < IR_INTRIN_COUNT ? intrinsics[op].arity : 0;
}

const char *ts_reduce_op_name(ts_reduce_op op)
{
	switch (op) {
	case TS_REDUCE_SUM: return "sum";
	case TS_REDUCE_MAX: return "max";
	case TS_REDUCE_MIN: return "min";
	case TS_REDUCE_PROD: return "prod";
	}
	return "?";
}

bool ir_is_binary(ir_expr_kind k)
{
	return k >= IR_ADD && k <= IR_OR;
}

bool ir_is_compare(ir_expr_kind k)
{
	return k >= IR_EQ && k <= IR_GE;
}

/* ---- constructors --------------------------------------------------------- */

static int deeper(const ts_expr *a, const ts_expr *b)
{
	int da = a ? a->depth : 0, db = b ? b->depth : 0;
	return da > db ? da : db;
}

/* The tree node counts of up to three children (NULL counts 0); the sum
 * saturates above TS_MAX_EXPR_NODES, which node() refuses anyway. */
static int64_t nodes_of(const ts_expr *a, const ts_expr *b, const ts_expr *c)
{
	int64_t n = (a ? a->nodes : 0) + (b ? b->nodes : 0) + (c ? c->nodes : 0);
	return n > TS_MAX_EXPR_NODES ? TS_MAX_EXPR_NODES + 1 : n;
}

/* A node one level above children at most `below` deep, whose children
 * count `nodes_below` nodes as trees.  Refusing depth and size here, where
 * every node is made, bounds every recursive walk: walks see expressions
 * as trees, so a shared subexpression costs each time it is used, and a
 * chain of stages that each read their input twice, inlined, doubles at
 * every stage. */
static ts_expr *node(ts_ctx *ctx, ir_expr_kind k, ts_dtype t, int below, int64_t nodes_below)
{
	if (below >= TS_MAX_EXPR_DEPTH) {
		ts_error(ctx, TS_ERR_INVALID,
			 "%s: expression nesting deeper than %d (TS_MAX_EXPR_DEPTH; "
			 "build long chains as balanced trees)",
			 ir_expr_kind_name(k), TS_MAX_EXPR_DEPTH);
		return NULL;
	}
	if (nodes_below >= TS_MAX_EXPR_NODES) {
		ts_error(ctx, TS_ERR_INVALID,
			 "%s: expression of more than %d nodes counted as a tree (TS_MAX_EXPR_NODES; "
			 "a subexpression counts each time it is used: compute a stage read several "
			 "times at root or at a loop rather than inline)",
			 ir_expr_kind_name(k), TS_MAX_EXPR_NODES);
		return NULL;
	}
	ts_expr *e = ctx ? ts_alloc(ctx, sizeof(*e)) : NULL;
	if (e) {
		e->kind = k;
		e->ctx = ctx;
		e->dtype = t;
		e->depth = below + 1;
		e->nodes = nodes_below + 1;
	}
	return e;
}

static const char foreign_msg[] =
	"belongs to another context (an expression is used only with the context that made it)";

bool ir_expr_owned(ts_ctx *ctx, const char *what, const char *which, const ts_expr *e)
{
	if (!e || e->ctx == ctx)
		return true;
	/* NULL names are no strings for %s */
	ts_error(ctx, TS_ERR_INVALID, "%s: %s %s", what ? what : "expression", which ? which : "operand",
		 foreign_msg);
	return false;
}

/* Records that operand `which` of `what` is NULL (a root cause recorded
 * earlier is kept: only the first error stays). */
static ts_expr *null_operand(ts_ctx *ctx, const char *what, const char *which)
{
	ts_error(ctx, TS_ERR_INVALID, "%s: %s is NULL", what, which);
	return NULL;
}

/* Whether v is a value of integer dtype t.  A constant that does not fit
 * would be silently wrapped by every backend (ts_int(ctx, 5000000000) is
 * not an int32), so it is refused.  Unsigned dtypes also take the negative
 * values of their signed twin, as the bit pattern C programmers write
 * (-1 for 0xff...). */
static bool const_fits(ts_dtype t, int64_t v)
{
	if (t.code == TS_TYPE_BOOL || t.bits >= 64)
		return true;
	int64_t half = (int64_t)1 << (t.bits - 1);
	if (t.code == TS_TYPE_INT)
		return v >= -half && v < half;
	return v >= -half && v < 2 * half;
}

ts_expr *ts_const(ts_ctx *ctx, ts_dtype t, int64_t v)
{
	if (!ctx || !ts_dtype_check(ctx, "const", t))
		return NULL;
	if (t.code == TS_TYPE_HANDLE) {
		ts_error(ctx, TS_ERR_INVALID, "const: a handle cannot be a constant");
		return NULL;
	}
	if (ts_dtype_is_float(t))
		return ts_fconst(ctx, t, (double)v);
	if (!const_fits(t, v)) {
		char b[24];
		ts_error(ctx, TS_ERR_INVALID, "const: %lld does not fit %s (use a wider dtype)",
			 (long long)v, ts_dtype_str(t, b));
		return NULL;
	}
	ts_expr *e = node(ctx, IR_INT_IMM, t, 0, 0);
	if (e)
		e->u.int_imm = ir_wrap_int(t, v); /* uint8 -1 is stored as 255 */
	return e;
}

ts_expr *ts_int(ts_ctx *ctx, int64_t v)
{
	return ts_const(ctx, ts_int32, v);
}

ts_expr *ts_fconst(ts_ctx *ctx, ts_dtype t, double v)
{
	if (!ctx || !ts_dtype_check(ctx, "fconst", t))
		return NULL;
	if (!ts_dtype_is_float(t))
		return ts_const(ctx, t, ir_float_to_int(t, v));
	ts_expr *e = node(ctx, IR_FLOAT_IMM, t, 0, 0);
	if (e)
		e->u.float_imm = v;
	return e;
}

ts_expr *ts_float(ts_ctx *ctx, double v)
{
	return ts_fconst(ctx, ts_float32, v);
}

ts_expr *ts_make_const(ts_ctx *ctx, ts_dtype t, double v)
{
	return ts_dtype_is_float(t) ? ts_fconst(ctx, t, v)
				    : ts_const(ctx, t, ir_float_to_int(t, v));
}

ts_expr *ts_var_typed(ts_ctx *ctx, const char *name, ts_dtype t)
{
	if (!ctx)
		return NULL;
	if (!name || !name[0]) {
		ts_error(ctx, TS_ERR_INVALID, "var: empty name");
		return NULL;
	}
	char what[160];
	snprintf(what, sizeof(what), "var %s", name);
	if (!ts_dtype_check(ctx, what, t))
		return NULL;
	ts_expr *e = node(ctx, IR_VAR, t, 0, 0);
	if (!e)
		return NULL;
	e->u.var.name = ts_strdup(ctx, name);
	e->u.var.id = ts_ctx_next_id(ctx);
	return e->u.var.name ? e : NULL;
}

ts_expr *ts_var(ts_ctx *ctx, const char *name)
{
	return ts_var_typed(ctx, name, ts_int32);
}

static const char *op_name(ir_expr_kind k)
{
	static const char *const names[] = {
		[IR_ADD] = "add", [IR_SUB] = "sub", [IR_MUL] = "mul", [IR_DIV] = "div",
		[IR_TRUNCDIV] = "truncdiv", [IR_TRUNCMOD] = "truncmod",
		[IR_FLOORDIV] = "floordiv", [IR_FLOORMOD] = "floormod",
		[IR_MIN] = "min", [IR_MAX] = "max", [IR_EQ] = "eq", [IR_NE] = "ne",
		[IR_LT] = "lt", [IR_LE] = "le", [IR_GT] = "gt", [IR_GE] = "ge",
		[IR_AND] = "and", [IR_OR] = "or",
	};
	return ir_is_binary(k) ? names[k] : ir_expr_kind_name(k);
}

/* An immediate adopts the dtype of the other operand, as in TVM, so that
 * `A[i] * 2` and `i + 1` need no casts.  An integer immediate adopts an
 * integer dtype only when its value fits (exactly, not through a double);
 * one that does not fit stays as it is, for promote_index or the mismatch
 * error: saturating it would silently change the program. */
static ts_expr *adapt_imm(ts_ctx *ctx, ts_expr *imm, ts_dtype t)
{
	if (ts_dtype_eq(imm->dtype, t) || t.lanes != 1)
		return imm;
	if (imm->kind == IR_INT_IMM && ts_dtype_is_int(t))
		return const_fits(t, imm->u.int_imm) ? ts_const(ctx, t, imm->u.int_imm) : imm;
	if (imm->kind == IR_INT_IMM)
		return ts_make_const(ctx, t, (double)imm->u.int_imm);
	if (imm->kind == IR_FLOAT_IMM && ts_dtype_is_float(t))
		return ts_fconst(ctx, t, imm->u.float_imm);
	return imm;
}

static bool is_imm(const ts_expr *e)
{
	return e->kind == IR_INT_IMM || e->kind == IR_FLOAT_IMM;
}

/* After adapt_imm, for operands that still differ: an int32 operand beside
 * an int64 one is widened to int64; an int64 immediate
 * beside an int32 index expression widens it (an operator over a dimension
 * of 2^31 or more compares its int32 variables with int64 extents); any
 * other integer immediate that does not fit the other operand is refused,
 * naming both.  Returns false after recording an error. */
static bool promote_index(ts_ctx *ctx, ir_expr_kind k, ts_expr **a, ts_expr **b)
{
	/* an int32 expression beside an int64 one is widened, as C promotes:
	 * a reduction variable past int32 is int64 (ir_iter_new), and k * i
	 * with an int32 i must mean the exact product */
	bool a32 = ts_dtype_eq((*a)->dtype, ts_int32), b32 = ts_dtype_eq((*b)->dtype, ts_int32);
	if ((a32 && ts_dtype_eq((*b)->dtype, ts_int64)) || (b32 && ts_dtype_eq((*a)->dtype, ts_int64))) {
		ts_expr **narrow = a32 ? a : b;
		*narrow = ts_cast(ctx, ts_int64, *narrow);
		return *narrow != NULL;
	}
	ts_expr **imm = (*b)->kind == IR_INT_IMM ? b : (*a)->kind == IR_INT_IMM ? a : NULL;
	ts_expr **other = imm == b ? a : b;
	if (!imm || !ts_dtype_is_int((*imm)->dtype) || !ts_dtype_is_int((*other)->dtype) ||
	    (*other)->dtype.lanes != 1)
		return true; /* the mismatch error names the dtypes */
	if (ts_dtype_eq((*imm)->dtype, ts_int64) && ts_dtype_eq((*other)->dtype, ts_int32)) {
		*other = ts_cast(ctx, ts_int64, *other);
		return *other != NULL;
	}
	char t[24];
	ts_error(ctx, TS_ERR_INVALID,
		 "%s: the constant %lld does not fit %s, the dtype of the other operand (cast one of them)",
		 op_name(k), (long long)(*imm)->u.int_imm, ts_dtype_str((*other)->dtype, t));
	return false;
}

ts_expr *ts_binary(ts_ctx *ctx, ir_expr_kind k, ts_expr *a, ts_expr *b)
{
	if (!ctx)
		return NULL;
	if (!ir_is_binary(k)) {
		ts_error(ctx, TS_ERR_INVALID, "binary: %s (%d) is not a binary kind",
			 ir_expr_kind_name(k), (int)k);
		return NULL;
	}
	if (!a || !b)
		return null_operand(ctx, op_name(k), !a ? "operand a" : "operand b");
	if (!ir_expr_owned(ctx, op_name(k), "operand a", a) || !ir_expr_owned(ctx, op_name(k), "operand b", b))
		return NULL;
	if (!ts_dtype_eq(a->dtype, b->dtype)) {
		if (is_imm(b) && !is_imm(a))
			b = adapt_imm(ctx, b, a->dtype);
		else if (is_imm(a))
			a = adapt_imm(ctx, a, b->dtype);
		if (!a || !b || (!ts_dtype_eq(a->dtype, b->dtype) && !promote_index(ctx, k, &a, &b)))
			return NULL;
	}
	char ta[24], tb[24];
	if (!ts_dtype_eq(a->dtype, b->dtype)) {
		ts_error(ctx, TS_ERR_INVALID, "%s: dtype mismatch: %s vs %s", op_name(k),
			 ts_dtype_str(a->dtype, ta), ts_dtype_str(b->dtype, tb));
		return NULL;
	}
	ts_dtype t = a->dtype;
	if (t.code == TS_TYPE_HANDLE) {
		ts_error(ctx, TS_ERR_INVALID, "%s: operands are handles", op_name(k));
		return NULL;
	}
	if ((k == IR_AND || k == IR_OR) && !ts_dtype_is_bool(t)) {
		ts_error(ctx, TS_ERR_INVALID, "%s: operands must be bool, got %s",
			 op_name(k), ts_dtype_str(t, ta));
		return NULL;
	}
	if (k == IR_DIV && !ts_dtype_is_float(t)) {
		ts_error(ctx, TS_ERR_INVALID, "div: operands must be float, got %s (use floordiv or truncdiv)",
			 ts_dtype_str(t, ta));
		return NULL;
	}
	if (k >= IR_TRUNCDIV && k <= IR_FLOORMOD && !ts_dtype_is_int(t)) {
		ts_error(ctx, TS_ERR_INVALID, "%s: operands must be integers, got %s",
			 op_name(k), ts_dtype_str(t, ta));
		return NULL;
	}
	if (ts_dtype_is_bool(t) && k <= IR_MAX) {
		ts_error(ctx, TS_ERR_INVALID, "%s: arithmetic on bool", op_name(k));
		return NULL;
	}
	if (ir_is_compare(k))
		t = ts_dtype_with_lanes(ts_bool, a->dtype.lanes);
	ts_expr *e = node(ctx, k, t, deeper(a, b), nodes_of(a, b, NULL));
	if (e) {
		e->u.bin.a = a;
		e->u.bin.b = b;
	}
	return e;
}

ts_expr *ts_add(ts_ctx *c, ts_expr *a, ts_expr *b) { return ts_binary(c, IR_ADD, a, b); }
ts_expr *ts_sub(ts_ctx *c, ts_expr *a, ts_expr *b) { return ts_binary(c, IR_SUB, a, b); }
ts_expr *ts_mul(ts_ctx *c, ts_expr *a, ts_expr *b) { return ts_binary(c, IR_MUL, a, b); }
ts_expr *ts_truncdiv(ts_ctx *c, ts_expr *a, ts_expr *b) { return ts_binary(c, IR_TRUNCDIV, a, b); }
ts_expr *ts_truncmod(ts_ctx *c, ts_expr *a, ts_expr *b) { return ts_binary(c, IR_TRUNCMOD, a, b); }
ts_expr *ts_floordiv(ts_ctx *c, ts_expr *a, ts_expr *b) { return ts_binary(c, IR_FLOORDIV, a, b); }
ts_expr *ts_floormod(ts_ctx *c, ts_expr *a, ts_expr *b) { return ts_binary(c, IR_FLOORMOD, a, b); }
ts_expr *ts_min(ts_ctx *c, ts_expr *a, ts_expr *b) { return ts_binary(c, IR_MIN, a, b); }
ts_expr *ts_max(ts_ctx *c, ts_expr *a, ts_expr *b) { return ts_binary(c, IR_MAX, a, b); }
ts_expr *ts_eq(ts_ctx *c, ts_expr *a, ts_expr *b) { return ts_binary(c, IR_EQ, a, b); }
ts_expr *ts_ne(ts_ctx *c, ts_expr *a, ts_expr *b) { return ts_binary(c, IR_NE, a, b); }
ts_expr *ts_lt(ts_ctx *c, ts_expr *a, ts_expr *b) { return ts_binary(c, IR_LT, a, b); }
ts_expr *ts_le(ts_ctx *c, ts_expr *a, ts_expr *b) { return ts_binary(c, IR_LE, a, b); }
ts_expr *ts_gt(ts_ctx *c, ts_expr *a, ts_expr *b) { return ts_binary(c, IR_GT, a, b); }
ts_expr *ts_ge(ts_ctx *c, ts_expr *a, ts_expr *b) { return ts_binary(c, IR_GE, a, b); }
ts_expr *ts_and(ts_ctx *c, ts_expr *a, ts_expr *b) { return ts_binary(c, IR_AND, a, b); }
ts_expr *ts_or(ts_ctx *c, ts_expr *a, ts_expr *b) { return ts_binary(c, IR_OR, a, b); }

ts_expr *ts_div(ts_ctx *ctx, ts_expr *a, ts_expr *b)
{
	if (!ctx)
		return NULL;
	if (!a || !b)
		return null_operand(ctx, "div", !a ? "operand a" : "operand b");
	bool fl = ts_dtype_is_float(a->dtype) || ts_dtype_is_float(b->dtype);
	return ts_binary(ctx, fl ? IR_DIV : IR_FLOORDIV, a, b);
}

ts_expr *ts_not(ts_ctx *ctx, ts_expr *a)
{
	if (!ctx)
		return NULL;
	if (!a)
		return null_operand(ctx, "not", "operand");
	if (!ir_expr_owned(ctx, "not", "the operand", a))
		return NULL;
	if (!ts_dtype_is_bool(a->dtype)) {
		char t[24];
		ts_error(ctx, TS_ERR_INVALID, "not: operand must be bool, got %s",
			 ts_dtype_str(a->dtype, t));
		return NULL;
	}
	ts_expr *e = node(ctx, IR_NOT, a->dtype, a->depth, a->nodes);
	if (e)
		e->u.un.a = a;
	return e;
}

ts_expr *ts_select(ts_ctx *ctx, ts_expr *cond, ts_expr *t, ts_expr *f)
{
	if (!ctx)
		return NULL;
	if (!cond || !t || !f)
		return null_operand(ctx, "select", !cond ? "condition" : !t ? "true value" : "false value");
	if (!ir_expr_owned(ctx, "select", "the condition", cond) ||
	    !ir_expr_owned(ctx, "select", "the true value", t) || !ir_expr_owned(ctx, "select", "the false value", f))
		return NULL;
	char b1[24], b2[24];
	if (!ts_dtype_is_bool(cond->dtype)) {
		ts_error(ctx, TS_ERR_INVALID, "select: condition must be bool, got %s",
			 ts_dtype_str(cond->dtype, b1));
		return NULL;
	}
	if (!ts_dtype_eq(t->dtype, f->dtype)) {
		if (is_imm(f))
			f = adapt_imm(ctx, f, t->dtype);
		else if (is_imm(t))
			t = adapt_imm(ctx, t, f->dtype);
		if (!t || !f)
			return NULL;
	}
	if (!ts_dtype_eq(t->dtype, f->dtype)) {
		ts_error(ctx, TS_ERR_INVALID, "select: dtype mismatch: %s vs %s",
			 ts_dtype_str(t->dtype, b1), ts_dtype_str(f->dtype, b2));
		return NULL;
	}
	/* a scalar condition picks whole vectors; a vector one picks per
	 * lane, so it needs the arms' lanes (no backend widens scalar arms) */
	if (cond->dtype.lanes != 1 && cond->dtype.lanes != t->dtype.lanes) {
		ts_error(ctx, TS_ERR_INVALID,
			 "select: condition has %d lanes, the values %d (a condition is a scalar or "
			 "has the values' lanes)", cond->dtype.lanes, t->dtype.lanes);
		return NULL;
	}
	ts_expr *e = node(ctx, IR_SELECT, t->dtype, deeper(cond, t->depth >= f->depth ? t : f),
			    nodes_of(cond, t, f));
	if (e) {
		e->u.select.cond = cond;
		e->u.select.t = t;
		e->u.select.f = f;
	}
	return e;
}

ts_expr *ts_cast(ts_ctx *ctx, ts_dtype t, ts_expr *a)
{
	if (!ctx)
		return NULL;
	if (!a)
		return null_operand(ctx, "cast", "operand");
	if (!ir_expr_owned(ctx, "cast", "the operand", a))
		return NULL;
	if (!ts_dtype_check(ctx, "cast", t))
		return NULL;
	if (ts_dtype_eq(t, a->dtype))
		return a;
	if (t.lanes != a->dtype.lanes || t.code == TS_TYPE_HANDLE ||
	    a->dtype.code == TS_TYPE_HANDLE) {
		char b1[24], b2[24];
		ts_error(ctx, TS_ERR_INVALID, "cast: cannot convert %s to %s",
			 ts_dtype_str(a->dtype, b1), ts_dtype_str(t, b2));
		return NULL;
	}
	ts_expr *e = node(ctx, IR_CAST, t, a->depth, a->nodes);
	if (e)
		e->u.un.a = a;
	return e;
}

ts_expr *ts_call(ts_ctx *ctx, ir_intrinsic op, int nargs, ts_expr **args)
{
	if (!ctx)
		return NULL;
	if ((unsigned)op >= IR_INTRIN_COUNT) {
		ts_error(ctx, TS_ERR_INVALID, "call: unknown intrinsic %d", (int)op);
		return NULL;
	}
	const char *name = ir_intrinsic_name(op);
	if (nargs != ir_intrinsic_arity(op)) {
		ts_error(ctx, TS_ERR_INVALID, "%s: expects %d argument(s), got %d", name,
			 ir_intrinsic_arity(op), nargs);
		return NULL;
	}
	if (!args) {
		ts_error(ctx, TS_ERR_INVALID, "%s: the argument list is NULL", name);
		return NULL;
	}
	for (int i = 0; i < nargs; i++) {
		if (!args[i]) {
			ts_error(ctx, TS_ERR_INVALID, "%s: argument %d is NULL", name, i);
			return NULL;
		}
		if (!ir_expr_owned(ctx, name, i ? "argument 1" : "argument 0", args[i]))
			return NULL;
	}
	char b1[24], b2[24];
	if (op == IR_INTRIN_LIKELY) {
		if (!ts_dtype_is_bool(args[0]->dtype)) {
			ts_error(ctx, TS_ERR_INVALID, "likely: argument must be bool, got %s",
				 ts_dtype_str(args[0]->dtype, b1));
			return NULL;
		}
	} else if (op == IR_INTRIN_ROUND_TF32 && !ts_dtype_eq(ts_dtype_element(args[0]->dtype), ts_float32)) {
		ts_error(ctx, TS_ERR_INVALID, "round_tf32: argument must be float32, got %s",
			 ts_dtype_str(args[0]->dtype, b1));
		return NULL;
	} else if (!ts_dtype_is_float(args[0]->dtype)) {
		ts_error(ctx, TS_ERR_INVALID, "%s: argument must be float, got %s", name,
			 ts_dtype_str(args[0]->dtype, b1));
		return NULL;
	}
	ts_expr *a1 = nargs > 1 ? adapt_imm(ctx, args[1], args[0]->dtype) : NULL;
	if (nargs > 1 && (!a1 || !ts_dtype_eq(a1->dtype, args[0]->dtype))) {
		if (a1)
			ts_error(ctx, TS_ERR_INVALID, "%s: dtype mismatch: %s vs %s", name,
				 ts_dtype_str(args[0]->dtype, b1), ts_dtype_str(a1->dtype, b2));
		return NULL;
	}
	ts_expr *e = node(ctx, IR_CALL, args[0]->dtype, deeper(args[0], a1), nodes_of(args[0], a1, NULL));
	if (e) {
		e->u.call.op = op;
		e->u.call.nargs = nargs;
		e->u.call.args[0] = args[0];
		e->u.call.args[1] = a1;
	}
	return e;
}

static ts_expr *call1(ts_ctx *ctx, ir_intrinsic op, ts_expr *a)
{
	return ts_call(ctx, op, 1, &a);
}

ts_expr *ts_exp(ts_ctx *c, ts_expr *a) { return call1(c, IR_INTRIN_EXP, a); }
ts_expr *ts_log(ts_ctx *c, ts_expr *a) { return call1(c, IR_INTRIN_LOG, a); }
ts_expr *ts_sqrt(ts_ctx *c, ts_expr *a) { return call1(c, IR_INTRIN_SQRT, a); }
ts_expr *ts_tanh(ts_ctx *c, ts_expr *a) { return call1(c, IR_INTRIN_TANH, a); }
ts_expr *ts_exp2(ts_ctx *c, ts_expr *a) { return call1(c, IR_INTRIN_EXP2, a); }
ts_expr *ts_fabs(ts_ctx *c, ts_expr *a) { return call1(c, IR_INTRIN_FABS, a); }
ts_expr *ts_erf(ts_ctx *c, ts_expr *a) { return call1(c, IR_INTRIN_ERF, a); }
ts_expr *ts_sigmoid(ts_ctx *c, ts_expr *a) { return call1(c, IR_INTRIN_SIGMOID, a); }
ts_expr *ts_round_tf32(ts_ctx *c, ts_expr *a) { return call1(c, IR_INTRIN_ROUND_TF32, a); }

ts_expr *ts_pow(ts_ctx *ctx, ts_expr *a, ts_expr *b)
{
	ts_expr *args[2] = {a, b};
	return ts_call(ctx, IR_INTRIN_POW, 2, args);
}

static bool check_index(ts_ctx *ctx, const char *what, const char *name, int dim,
			const ts_expr *ix)
{
	if (!ix) {
		ts_error(ctx, TS_ERR_INVALID, "%s %s: index %d is NULL", what, name, dim);
		return false;
	}
	if (ix->ctx != ctx) {
		ts_error(ctx, TS_ERR_INVALID, "%s %s: index %d %s", what, name, dim, foreign_msg);
		return false;
	}
	if (!ts_dtype_is_int(ix->dtype) || ix->dtype.lanes != 1) {
		char b[24];
		ts_error(ctx, TS_ERR_INVALID, "%s %s: index %d must be an integer scalar, got %s",
			 what, name, dim, ts_dtype_str(ix->dtype, b));
		return false;
	}
	return true;
}

ts_expr *ts_read(ts_ctx *ctx, ts_tensor *t, int n, ts_expr *const *idx)
{
	if (!ctx)
		return NULL;
	if (!t) {
		ts_error(ctx, TS_ERR_INVALID, "read: unknown tensor (NULL)");
		return NULL;
	}
	if (t->ctx && t->ctx != ctx) {
		ts_error(ctx, TS_ERR_INVALID, "read %s: tensor belongs to another context", t->name);
		return NULL;
	}
	if (n != t->ndim) {
		ts_error(ctx, TS_ERR_INVALID, "read %s: tensor has %d dimension(s), got %d index(es)",
			 t->name, t->ndim, n);
		return NULL;
	}
	if (n > 0 && !idx) {
		ts_error(ctx, TS_ERR_INVALID, "read %s: the index list is NULL", t->name);
		return NULL;
	}
	for (int i = 0; i < n; i++)
		if (!check_index(ctx, "read", t->name, i, idx[i]))
			return NULL;
	int below = 0;
	int64_t nodes = 0;
	for (int i = 0; i < n; i++) {
		below = idx[i]->depth > below ? idx[i]->depth : below;
		nodes += idx[i]->nodes; /* each at most TS_MAX_EXPR_NODES: no overflow */
	}
	ts_expr *e = node(ctx, IR_READ, t->dtype, below, nodes);
	ts_expr **copy = ts_alloc_array(ctx, (size_t)(n ? n : 1), sizeof(*copy));
	if (!e || !copy)
		return NULL;
	memcpy(copy, idx, (size_t)n * sizeof(*copy));
	e->u.read.tensor = t;
	e->u.read.n = n;
	e->u.read.idx = copy;
	return e;
}

ts_expr *ts_load(ts_ctx *ctx, ts_buffer *buf, ts_expr *index)
{
	if (!ctx)
		return NULL;
	if (!buf) {
		ts_error(ctx, TS_ERR_INVALID, "load: unknown buffer (NULL)");
		return NULL;
	}
	/* another context's buffer dies with it, leaving the load dangling */
	if (buf->ctx && buf->ctx != ctx) {
		ts_error(ctx, TS_ERR_INVALID, "load %s: buffer belongs to another context",
			 buf->name);
		return NULL;
	}
	if (!index) {
		ts_error(ctx, TS_ERR_INVALID, "load %s: index is NULL", buf->name);
		return NULL;
	}
	if (!ir_expr_owned(ctx, "load", "the index", index))
		return NULL;
	if (!ts_dtype_is_int(index->dtype)) {
		char b[24];
		ts_error(ctx, TS_ERR_INVALID, "load %s: index must be an integer, got %s",
			 buf->name, ts_dtype_str(index->dtype, b));
		return NULL;
	}
	ts_expr *e = node(ctx, IR_LOAD, ts_dtype_with_lanes(buf->dtype, index->dtype.lanes),
			  index->depth, index->nodes);
	if (e) {
		e->u.load.buf = buf;
		e->u.load.index = index;
	}
	return e;
}

bool ir_ramp_fits(const ts_expr *base, int64_t stride, int lanes)
{
	int64_t span, last;
	/* no ramp at all is none that fits (lanes - 1 must not overflow) */
	if (!base || lanes < 1)
		return false;
	if (__builtin_mul_overflow(stride, (int64_t)(lanes - 1), &span))
		return false;
	if (base->kind != IR_INT_IMM)
		return true;
	if (__builtin_add_overflow(base->u.int_imm, span, &last))
		return false;
	int bits = base->dtype.bits;
	if (bits >= 64)
		return base->dtype.code == TS_TYPE_INT || last >= 0;
	int64_t lo = base->dtype.code == TS_TYPE_INT ? -((int64_t)1 << (bits - 1)) : 0;
	int64_t hi = base->dtype.code == TS_TYPE_INT ? ((int64_t)1 << (bits - 1)) - 1
						     : ((int64_t)1 << bits) - 1;
	return last >= lo && last <= hi;
}

ts_expr *ts_ramp(ts_ctx *ctx, ts_expr *base, int64_t stride, int lanes)
{
	if (!ctx)
		return NULL;
	if (!base)
		return null_operand(ctx, "ramp", "base");
	if (!ir_expr_owned(ctx, "ramp", "the base", base))
		return NULL;
	if (lanes < 2 || lanes > TS_MAX_VECTOR_LANES || base->dtype.lanes != 1 ||
	    !ts_dtype_is_int(base->dtype)) {
		ts_error(ctx, TS_ERR_INVALID,
			 "ramp: needs an integer scalar base and lanes 2..%d (got %d)",
			 TS_MAX_VECTOR_LANES, lanes);
		return NULL;
	}
	if (!ir_ramp_fits(base, stride, lanes)) {
		ts_error(ctx, TS_ERR_INVALID,
			 "ramp: base + stride * (lanes - 1) overflows (stride %lld, %d lanes)",
			 (long long)stride, lanes);
		return NULL;
	}
	ts_expr *e = node(ctx, IR_RAMP, ts_dtype_with_lanes(base->dtype, lanes), base->depth, base->nodes);
	if (e) {
		e->u.ramp.base = base;
		e->u.ramp.stride = stride;
		e->u.ramp.lanes = lanes;
	}
	return e;
}

ts_expr *ts_broadcast(ts_ctx *ctx, ts_expr *value, int lanes)
{
	if (!ctx)
		return NULL;
	if (!value)
		return null_operand(ctx, "broadcast", "value");
	if (!ir_expr_owned(ctx, "broadcast", "the value", value))
		return NULL;
	if (lanes < 2 || lanes > TS_MAX_VECTOR_LANES || value->dtype.lanes != 1) {
		ts_error(ctx, TS_ERR_INVALID, "broadcast: needs a scalar and lanes 2..%d (got %d)",
			 TS_MAX_VECTOR_LANES, lanes);
		return NULL;
	}
	ts_expr *e = node(ctx, IR_BROADCAST, ts_dtype_with_lanes(value->dtype, lanes), value->depth,
			    value->nodes);
	if (e) {
		e->u.bcast.value = value;
		e->u.bcast.lanes = lanes;
	}
	return e;
}

ts_expr *ts_reduce(ts_ctx *ctx, ts_reduce_op op, ts_expr *source, int naxes,
		   ts_iter *const *axes, ts_expr *init)
{
	const char *name = ts_reduce_op_name(op);
	if (!ctx)
		return NULL;
	if ((unsigned)op > TS_REDUCE_PROD) {
		ts_error(ctx, TS_ERR_INVALID, "reduce: unknown reduction %d", (int)op);
		return NULL;
	}
	if (!source)
		return null_operand(ctx, name, "source");
	if (!ir_expr_owned(ctx, name, "the source", source) || !ir_expr_owned(ctx, name, "the init", init))
		return NULL;
	if (naxes > 0 && !axes) {
		ts_error(ctx, TS_ERR_INVALID, "%s: the axis list is NULL", name);
		return NULL;
	}
	if (naxes < 1 || naxes > TS_MAX_DIMS) {
		ts_error(ctx, TS_ERR_INVALID, "%s: needs 1 to %d reduction axes, got %d", name,
			 TS_MAX_DIMS, naxes);
		return NULL;
	}
	for (int i = 0; i < naxes; i++) {
		if (!axes[i]) {
			ts_error(ctx, TS_ERR_INVALID, "%s: reduction axis %d is NULL", name, i);
			return NULL;
		}
		if (axes[i]->kind != TS_ITER_REDUCE) {
			ts_error(ctx, TS_ERR_INVALID, "%s: axis '%s' is not a reduction axis",
				 name, axes[i]->var->u.var.name);
			return NULL;
		}
		if (!ir_expr_owned(ctx, name, "a reduction axis", axes[i]->var))
			return NULL;
	}
	if (source->dtype.lanes != 1 || ts_dtype_is_bool(source->dtype)) {
		ts_error(ctx, TS_ERR_INVALID, "%s: source must be a numeric scalar", name);
		return NULL;
	}
	if (init) {
		init = adapt_imm(ctx, init, source->dtype);
		if (!init)
			return NULL;
		if (!ts_dtype_eq(init->dtype, source->dtype)) {
			char b1[24], b2[24];
			ts_error(ctx, TS_ERR_INVALID, "%s: init dtype %s differs from source dtype %s",
				 name, ts_dtype_str(init->dtype, b1), ts_dtype_str(source->dtype, b2));
			return NULL;
		}
	}
	ts_expr *e = node(ctx, IR_REDUCE, source->dtype, deeper(source, init), nodes_of(source, init, NULL));
	ts_iter **copy = ts_alloc_array(ctx, (size_t)naxes, sizeof(*copy));
	if (!e || !copy)
		return NULL;
	memcpy(copy, axes, (size_t)naxes * sizeof(*copy));
	e->u.reduce.op = op;
	e->u.reduce.source = source;
	e->u.reduce.init = init;
	e->u.reduce.naxes = naxes;
	e->u.reduce.axes = copy;
	return e;
}

ts_iter *ir_iter_new(ts_ctx *ctx, const char *name, int64_t min, int64_t extent,
		     ts_iter_kind kind)
{
	if (!ctx)
		return NULL;
	if (!name || !name[0]) {
		ts_error(ctx, TS_ERR_INVALID, "axis: name is NULL or empty");
		return NULL;
	}
	if (kind != TS_ITER_DATA && kind != TS_ITER_REDUCE) {
		ts_error(ctx, TS_ERR_INVALID, "axis '%s': unknown kind %d", name, (int)kind);
		return NULL;
	}
	if (extent <= 0) {
		ts_error(ctx, TS_ERR_INVALID, "axis '%s': extent must be positive, got %lld",
			 name ? name : "?", (long long)extent);
		return NULL;
	}
	int64_t end;
	if (__builtin_add_overflow(min, extent, &end)) {
		ts_error(ctx, TS_ERR_INVALID, "axis '%s': min %lld + extent %lld overflows int64",
			 name ? name : "?", (long long)min, (long long)extent);
		return NULL;
	}
	ts_iter *it = ts_alloc(ctx, sizeof(*it));
	if (!it)
		return NULL;
	/* an axis whose values leave int32 gets an int64 variable, so that
	 * arithmetic on it (k + 1, rfactor's rebuilt k = ko*8 + ki) is exact
	 * rather than wrapping as int32 arithmetic does */
	bool wide = min < INT32_MIN || end - 1 > INT32_MAX;
	it->var = wide ? ts_var_typed(ctx, name, ts_int64) : ts_var(ctx, name);
	if (it->var)
		it->var->u.var.reduction = kind == TS_ITER_REDUCE;
	it->min = min;
	it->extent = extent;
	it->kind = kind;
	return it->var ? it : NULL;
}

ts_buffer *ir_buffer_new(ts_ctx *ctx, const char *name, ts_dtype t, int ndim,
			 const int64_t *shape, ts_scope scope)
{
	if (!ctx)
		return NULL;
	if (!name) {
		ts_error(ctx, TS_ERR_INVALID, "buffer: name is NULL");
		return NULL;
	}
	if (ndim < 0 || ndim > TS_MAX_DIMS) {
		ts_error(ctx, TS_ERR_INVALID, "buffer %s: %d dimensions (at most %d)", name, ndim,
			 TS_MAX_DIMS);
		return NULL;
	}
	if (ndim > 0 && !shape) {
		ts_error(ctx, TS_ERR_INVALID, "buffer %s: shape is NULL", name);
		return NULL;
	}
	if ((unsigned)scope > TS_SCOPE_LOCAL) {
		ts_error(ctx, TS_ERR_INVALID, "buffer %s: unknown scope %d", name, (int)scope);
		return NULL;
	}
	char what[160];
	snprintf(what, sizeof(what), "buffer %s", name ? name : "(NULL)");
	if (!ts_dtype_check(ctx, what, t))
		return NULL;
	ts_buffer *b = ts_alloc(ctx, sizeof(*b));
	if (!b)
		return NULL;
	b->name = ts_strdup(ctx, name);
	b->dtype = t;
	b->scope = scope;
	b->ndim = ndim;
	int64_t size = 1;
	for (int i = ndim - 1; i >= 0; i--) {
		if (shape[i] <= 0) {
			ts_error(ctx, TS_ERR_INVALID, "buffer %s: extent %lld of dimension %d is not positive",
				 name, (long long)shape[i], i);
			return NULL;
		}
		b->shape[i] = shape[i];
		b->strides[i] = size;
		if (size > INT64_MAX / shape[i]) {
			ts_error(ctx, TS_ERR_INVALID, "buffer %s: size overflows", name);
			return NULL;
		}
		size *= shape[i];
	}
	b->size = size;
	b->data = ts_var_typed(ctx, name, ts_handle);
	b->id = ts_ctx_next_id(ctx);
	b->ctx = ctx;
	return b->name && b->data ? b : NULL;
}

bool ir_multiple_of(const ts_expr *e, int64_t n)
{
	int64_t k;
	if (!e)
		return true;
	if (n <= 0)
		return false;
	if (ir_is_const_int(e, &k))
		return k % n == 0;
	switch (e->kind) {
	case IR_ADD: case IR_SUB:
		return ir_multiple_of(e->u.bin.a, n) && ir_multiple_of(e->u.bin.b, n);
	case IR_MUL:
		return ir_multiple_of(e->u.bin.a, n) || ir_multiple_of(e->u.bin.b, n);
	case IR_CAST: /* an integer widened keeps its value */
		return e->u.un.a->dtype.code == e->dtype.code && e->u.un.a->dtype.bits <= e->dtype.bits &&
		       ir_multiple_of(e->u.un.a, n);
	case IR_INT_IMM: case IR_FLOAT_IMM: case IR_VAR: case IR_DIV: case IR_TRUNCDIV:
	case IR_TRUNCMOD: case IR_FLOORDIV: case IR_FLOORMOD: case IR_MIN: case IR_MAX: case IR_EQ:
	case IR_NE: case IR_LT: case IR_LE: case IR_GT: case IR_GE: case IR_AND: case IR_OR:
	case IR_NOT: case IR_SELECT: case IR_CALL: case IR_READ: case IR_LOAD: case IR_RAMP:
	case IR_BROADCAST: case IR_REDUCE: case IR_EXPR_KIND_COUNT:
		break;
	}
	return false;
}
