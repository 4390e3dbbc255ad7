/*
 * eval.c - the reference evaluator (contract in eval.h).
 *
 * Deliberately naive: every compute tensor, in dependency order, is filled
 * element by element by walking its body with an environment that maps
 * variables to integers.  A value is an int64 for int, uint and bool dtypes
 * (kept canonical: wrapped to the dtype's width, sign- or zero-extended) and
 * a double for floats, rounded to the dtype after every operation so that
 * float32 and float16 results are those of execution in that dtype.  Float
 * reductions accumulate in double and round once, as ir.h states.
 *
 * An error (unbound placeholder, out-of-bounds read) stops the evaluation;
 * every path frees the temporary storage of unbound intermediates.  Integer
 * division by zero and float to integer conversions have the defined
 * answers of ir.h.
 */
#include "eval.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "array.h"
#include "arith.h"
#include "printer.h"
#include "te.h"

#define MAX_ENV 64

typedef union val {
	int64_t i;
	double f;
} val;

typedef struct binding {
	const ts_expr *var;
	int64_t value;
} binding;

typedef struct evaluator {
	ts_ctx *ctx;
	int ntensors;
	ts_tensor **tensors; /* dependency order */
	void **data;
	bool *owned;         /* temporary storage to free */
	const ts_tensor *current;        /* the compute being filled */
	int nenv;
	binding env[MAX_ENV];
} evaluator;

/* ---- values -------------------------------------------------------------- */

static bool is_uint(ts_dtype t)
{
	return t.code == TS_TYPE_UINT;
}

/* The canonical int64 of v in dtype t: two's complement wrap to t.bits. */
static int64_t wrap(ts_dtype t, uint64_t v)
{
	if (t.code == TS_TYPE_BOOL)
		return v != 0;
	if (t.bits >= 64)
		return (int64_t)v;
	uint64_t mask = (UINT64_C(1) << t.bits) - 1;
	v &= mask;
	if (t.code == TS_TYPE_INT && (v >> (t.bits - 1)))
		return -(int64_t)(mask - v) - 1; /* sign-extend without overflow */
	return (int64_t)v;
}

static int64_t int_min_of(ts_dtype t)
{
	if (is_uint(t) || t.code == TS_TYPE_BOOL)
		return 0;
	return t.bits >= 64 ? INT64_MIN : -(INT64_C(1) << (t.bits - 1));
}

static int64_t int_max_of(ts_dtype t)
{
	if (t.code == TS_TYPE_BOOL)
		return 1;
	if (is_uint(t))
		return t.bits >= 64 ? -1 : (int64_t)((UINT64_C(1) << t.bits) - 1);
	return t.bits >= 64 ? INT64_MAX : (INT64_C(1) << (t.bits - 1)) - 1;
}

/* a < b in integer dtype t (unsigned for uint). */
static bool int_lt(ts_dtype t, int64_t a, int64_t b)
{
	return is_uint(t) ? (uint64_t)a < (uint64_t)b : a < b;
}

/* ---- errors and the environment ---------------------------------------- */

static bool eval_error(evaluator *s, ts_status st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static bool eval_error(evaluator *s, ts_status st, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ts_error(s->ctx, st, "eval: %s (computing %s)", msg,
		 s->current ? s->current->name : "?");
	return false;
}

static bool push(evaluator *s, const ts_expr *var, int64_t value)
{
	if (s->nenv == MAX_ENV)
		return eval_error(s, TS_ERR_UNSUPPORTED, "more than %d nested variables", MAX_ENV);
	s->env[s->nenv++] = (binding){var, value};
	return true;
}

static bool lookup(evaluator *s, const ts_expr *var, int64_t *out)
{
	for (int i = s->nenv - 1; i >= 0; i--) {
		if (s->env[i].var == var) {
			*out = s->env[i].value;
			return true;
		}
	}
	return eval_error(s, TS_ERR_INVALID, "variable '%s' is not bound", var->u.var.name);
}

/* ---- operators ------------------------------------------------------------ */

static bool ev(evaluator *s, const ts_expr *e, val *out);

static bool float_binary(const ts_expr *e, double a, double b, val *out)
{
	switch (e->kind) {
	case IR_ADD: out->f = a + b; break;
	case IR_SUB: out->f = a - b; break;
	case IR_MUL: out->f = a * b; break;
	case IR_DIV: out->f = a / b; break;
	case IR_MIN: out->f = ir_fminmax(false, a, b); break;
	case IR_MAX: out->f = ir_fminmax(true, a, b); break;
	case IR_EQ: out->i = a == b; return true;
	case IR_NE: out->i = a != b; return true;
	case IR_LT: out->i = a < b; return true;
	case IR_LE: out->i = a <= b; return true;
	case IR_GT: out->i = a > b; return true;
	case IR_GE: out->i = a >= b; return true;
	default: return false;
	}
	out->f = ir_cast_float_to_float(e->dtype, out->f);
	return true;
}

/* Integer division and modulus, truncating or flooring, with ir.h's
 * answers for a zero divisor and MIN / -1. */
static int64_t int_divmod(ir_expr_kind k, ts_dtype t, int64_t a, int64_t b)
{
	bool mod = k == IR_TRUNCMOD || k == IR_FLOORMOD;
	if (b == 0)
		return 0;
	if (is_uint(t)) /* both roundings agree on non-negative operands */
		return mod ? (int64_t)((uint64_t)a % (uint64_t)b)
			   : (int64_t)((uint64_t)a / (uint64_t)b);
	if (b == -1) /* INT64_MIN / -1 overflows in C: wrap instead */
		return mod ? 0 : wrap(t, 0 - (uint64_t)a);
	int64_t q = a / b, r = a % b;
	if ((k == IR_FLOORDIV || k == IR_FLOORMOD) && r != 0 && ((r < 0) != (b < 0))) {
		q -= 1;
		r += b;
	}
	return mod ? r : wrap(t, (uint64_t)q);
}

static bool int_binary(evaluator *s, const ts_expr *e, ts_dtype t, int64_t a, int64_t b,
		       val *out)
{
	uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
	switch (e->kind) {
	case IR_ADD: out->i = wrap(t, ua + ub); return true;
	case IR_SUB: out->i = wrap(t, ua - ub); return true;
	case IR_MUL: out->i = wrap(t, ua * ub); return true;
	case IR_TRUNCDIV: case IR_TRUNCMOD: case IR_FLOORDIV: case IR_FLOORMOD:
		out->i = int_divmod(e->kind, t, a, b);
		return true;
	case IR_MIN: out->i = int_lt(t, b, a) ? b : a; return true;
	case IR_MAX: out->i = int_lt(t, a, b) ? b : a; return true;
	case IR_EQ: out->i = a == b; return true;
	case IR_NE: out->i = a != b; return true;
	case IR_LT: out->i = int_lt(t, a, b); return true;
	case IR_LE: out->i = !int_lt(t, b, a); return true;
	case IR_GT: out->i = int_lt(t, b, a); return true;
	case IR_GE: out->i = !int_lt(t, a, b); return true;
	case IR_AND: out->i = a && b; return true;
	case IR_OR: out->i = a || b; return true;
	default:
		return eval_error(s, TS_ERR_INTERNAL, "%s is not an integer operator",
				  ir_expr_kind_name(e->kind));
	}
}

static bool ev_binary(evaluator *s, const ts_expr *e, val *out)
{
	val a, b;
	if (!ev(s, e->u.bin.a, &a) || !ev(s, e->u.bin.b, &b))
		return false;
	ts_dtype t = e->u.bin.a->dtype; /* the operands'; compares yield bool */
	if (!ts_dtype_is_float(t))
		return int_binary(s, e, t, a.i, b.i, out);
	if (!float_binary(e, a.f, b.f, out))
		return eval_error(s, TS_ERR_INTERNAL, "%s is not a float operator",
				  ir_expr_kind_name(e->kind));
	return true;
}

static bool ev_cast(evaluator *s, const ts_expr *e, val *out)
{
	val a;
	if (!ev(s, e->u.un.a, &a))
		return false;
	ts_dtype from = e->u.un.a->dtype, to = e->dtype;
	if (ts_dtype_is_float(from)) {
		if (ts_dtype_is_float(to))
			out->f = ir_cast_float_to_float(to, a.f);
		else
			out->i = ir_float_to_int(to, a.f);
	} else if (ts_dtype_is_float(to)) {
		out->f = ir_cast_int_to_float(to, a.i, is_uint(from));
	} else {
		out->i = wrap(to, (uint64_t)a.i);
	}
	return true;
}


static bool ev_call(evaluator *s, const ts_expr *e, val *out)
{
	val a[2] = {{0}, {0}};
	for (int i = 0; i < e->u.call.nargs && i < 2; i++)
		if (!ev(s, e->u.call.args[i], &a[i]))
			return false;
	if (e->u.call.op == IR_INTRIN_LIKELY) { /* a hint: the value is the condition */
		*out = a[0];
		return true;
	}
	out->f = ir_cast_float_to_float(e->dtype, ir_intrinsic_eval(e->u.call.op, a[0].f, a[1].f));
	return true;
}

static bool ev_select(evaluator *s, const ts_expr *e, val *out)
{
	val c, t, f; /* both arms are evaluated, as ir.h specifies */
	if (!ev(s, e->u.select.cond, &c) || !ev(s, e->u.select.t, &t) ||
	    !ev(s, e->u.select.f, &f))
		return false;
	*out = c.i ? t : f;
	return true;
}

static int find_tensor(const evaluator *s, const ts_tensor *t)
{
	for (int i = 0; i < s->ntensors; i++)
		if (s->tensors[i] == t)
			return i;
	return -1;
}

static bool ev_read(evaluator *s, const ts_expr *e, val *out)
{
	const ts_tensor *t = e->u.read.tensor;
	int ti = find_tensor(s, t);
	if (ti < 0)
		return eval_error(s, TS_ERR_INTERNAL, "tensor %s is not in the graph", t->name);
	int64_t offset = 0;
	for (int d = 0; d < e->u.read.n; d++) {
		val ix;
		if (!ev(s, e->u.read.idx[d], &ix))
			return false;
		if (ix.i < 0 || ix.i >= t->shape[d])
			return eval_error(s, TS_ERR_INVALID,
					  "read of %s out of bounds: index %lld in dimension %d of extent %lld",
					  t->name, (long long)ix.i, d, (long long)t->shape[d]);
		offset = offset * t->shape[d] + ix.i;
	}
	if (ts_dtype_is_float(t->dtype))
		out->f = ts_elem_get_f64(s->data[ti], t->dtype, offset);
	else
		out->i = ts_elem_get_i64(s->data[ti], t->dtype, offset);
	return true;
}

/* ---- reductions ------------------------------------------------------------ */

static val reduce_identity(ts_reduce_op op, ts_dtype t)
{
	bool fl = ts_dtype_is_float(t);
	val v;
	switch (op) {
	case TS_REDUCE_SUM: if (fl) v.f = 0; else v.i = 0; return v;
	case TS_REDUCE_PROD: if (fl) v.f = 1; else v.i = 1; return v;
	case TS_REDUCE_MAX: if (fl) v.f = -INFINITY; else v.i = int_min_of(t); return v;
	case TS_REDUCE_MIN: if (fl) v.f = INFINITY; else v.i = int_max_of(t); return v;
	}
	v.i = 0;
	return v;
}

/* acc = acc (op) v: in double for floats, wrapped to t for integers. */
static void combine(ts_reduce_op op, ts_dtype t, val *acc, val v)
{
	if (ts_dtype_is_float(t)) {
		switch (op) {
		case TS_REDUCE_SUM: acc->f += v.f; return;
		case TS_REDUCE_PROD: acc->f *= v.f; return;
		case TS_REDUCE_MAX: acc->f = ir_fminmax(true, acc->f, v.f); return;
		case TS_REDUCE_MIN: acc->f = ir_fminmax(false, acc->f, v.f); return;
		}
		return;
	}
	switch (op) {
	case TS_REDUCE_SUM: acc->i = wrap(t, (uint64_t)acc->i + (uint64_t)v.i); return;
	case TS_REDUCE_PROD: acc->i = wrap(t, (uint64_t)acc->i * (uint64_t)v.i); return;
	case TS_REDUCE_MAX: if (int_lt(t, acc->i, v.i)) acc->i = v.i; return;
	case TS_REDUCE_MIN: if (int_lt(t, v.i, acc->i)) acc->i = v.i; return;
	}
}

/* Advances the innermost-fastest counter over axes bound at env[base..];
 * returns false after the last point. */
static bool next_point(evaluator *s, int base, int naxes, ts_iter *const *axes)
{
	for (int a = naxes - 1; a >= 0; a--) {
		binding *b = &s->env[base + a];
		/* compared with the last point: no overflow even for ranges built
		 * without ts_reduce_axis's check */
		if (b->value < axes[a]->min + (axes[a]->extent - 1)) {
			b->value++;
			return true;
		}
		b->value = axes[a]->min;
	}
	return false;
}

static bool ev_reduce(evaluator *s, const ts_expr *e, val *out)
{
	ts_dtype t = e->dtype;
	ts_reduce_op op = e->u.reduce.op;
	val acc = reduce_identity(op, t), v;
	if (e->u.reduce.init && !ev(s, e->u.reduce.init, &acc))
		return false;
	int base = s->nenv, naxes = e->u.reduce.naxes;
	for (int a = 0; a < naxes; a++)
		if (!push(s, e->u.reduce.axes[a]->var, e->u.reduce.axes[a]->min))
			return false;
	bool ok = true;
	do {
		ok = ev(s, e->u.reduce.source, &v);
		if (ok)
			combine(op, t, &acc, v);
	} while (ok && next_point(s, base, naxes, e->u.reduce.axes));
	s->nenv = base;
	if (ts_dtype_is_float(t))
		acc.f = ir_cast_float_to_float(t, acc.f);
	*out = acc;
	return ok;
}

/* ---- dispatch ---------------------------------------------------------------- */

static bool ev(evaluator *s, const ts_expr *e, val *out)
{
	switch (e->kind) {
	case IR_INT_IMM:
		out->i = wrap(e->dtype, (uint64_t)e->u.int_imm);
		return true;
	case IR_FLOAT_IMM:
		out->f = ir_cast_float_to_float(e->dtype, e->u.float_imm);
		return true;
	case IR_VAR:
		return lookup(s, e, &out->i);
	case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV:
	case IR_TRUNCDIV: case IR_TRUNCMOD: case IR_FLOORDIV: case IR_FLOORMOD:
	case IR_MIN: case IR_MAX: case IR_EQ: case IR_NE: case IR_LT: case IR_LE:
	case IR_GT: case IR_GE: case IR_AND: case IR_OR:
		return ev_binary(s, e, out);
	case IR_NOT:
		if (!ev(s, e->u.un.a, out))
			return false;
		out->i = !out->i;
		return true;
	case IR_CAST:
		return ev_cast(s, e, out);
	case IR_SELECT:
		return ev_select(s, e, out);
	case IR_CALL:
		return ev_call(s, e, out);
	case IR_READ:
		return ev_read(s, e, out);
	case IR_REDUCE:
		return ev_reduce(s, e, out);
	case IR_LOAD:
	case IR_RAMP:
	case IR_BROADCAST:
	case IR_EXPR_KIND_COUNT:
		break;
	}
	return eval_error(s, TS_ERR_UNSUPPORTED, "%s is not a tensor-expression node",
			  ir_expr_kind_name(e->kind));
}

/* ---- tensors ------------------------------------------------------------------- */

static bool fill_tensor(evaluator *s, int ti)
{
	const ts_tensor *t = s->tensors[ti];
	void *data = s->data[ti];
	bool fl = ts_dtype_is_float(t->dtype);
	s->current = t;
	s->nenv = 0;
	for (int d = 0; d < t->ndim; d++)
		if (!push(s, t->axis[d]->var, 0))
			return false;
	int64_t n = ts_tensor_numel(t);
	for (int64_t i = 0; i < n; i++) {
		val v;
		if (!ev(s, t->body, &v))
			return false;
		if (fl)
			ts_elem_set_f64(data, t->dtype, i, v.f);
		else
			ts_elem_set_i64(data, t->dtype, i, v.i);
		next_point(s, 0, t->ndim, t->axis);
	}
	return true;
}

/* The storage bound to t, or NULL; a tensor bound twice is an error. */
static ts_status find_binding(ts_ctx *ctx, const ts_tensor *t, int n, ts_tensor *const *bind,
			      void *const *data, void **out)
{
	*out = NULL;
	for (int i = 0; i < n; i++) {
		if (bind[i] != t)
			continue;
		if (*out && *out != data[i])
			return ts_error(ctx, TS_ERR_INVALID, "eval: tensor %s is bound twice", t->name);
		*out = data[i];
	}
	return TS_OK;
}

/* Gives every tensor of the graph its storage: bound, or temporary. */
static ts_status assign_storage(evaluator *s, int n, ts_tensor *const *bind, void *const *data)
{
	for (int i = 0; i < s->ntensors; i++) {
		const ts_tensor *t = s->tensors[i];
		ts_status st = find_binding(s->ctx, t, n, bind, data, &s->data[i]);
		if (st != TS_OK)
			return st;
		if (s->data[i])
			continue;
		if (t->op == TS_OP_PLACEHOLDER)
			return ts_error(s->ctx, TS_ERR_INVALID, "eval: placeholder %s is not bound",
					t->name);
		size_t n = (size_t)ts_tensor_numel(t), elem = (size_t)ts_dtype_bytes(t->dtype);
		if (n > ts_phys_mem_bytes() / elem)
			return ts_error(s->ctx, TS_ERR_NOMEM,
					"eval: the intermediate %s needs %zu x %zu bytes, more than this "
					"machine's memory", t->name, n, elem);
		s->data[i] = calloc(n, elem);
		if (!s->data[i])
			return ts_error(s->ctx, TS_ERR_NOMEM, "eval: out of memory for %s", t->name);
		s->owned[i] = true;
	}
	return TS_OK;
}

static ts_status check_args(ts_ctx *ctx, int n, ts_tensor *const *bind, void *const *data)
{
	if (n < 0 || (n > 0 && (!bind || !data)))
		return ts_error(ctx, TS_ERR_INVALID, "eval: bad bindings (n = %d)", n);
	for (int i = 0; i < n; i++) {
		if (!bind[i])
			return ts_error(ctx, TS_ERR_INVALID, "eval: binding %d names no tensor", i);
		if (!data[i])
			return ts_error(ctx, TS_ERR_INVALID, "eval: tensor %s is bound to NULL",
					bind[i]->name);
		if (bind[i]->ctx && bind[i]->ctx != ctx)
			return ts_error(ctx, TS_ERR_INVALID,
					"eval: tensor %s belongs to another context", bind[i]->name);
		/* elements are read as their C types, which need their alignment */
		int bytes = ts_dtype_bytes(bind[i]->dtype);
		if (bytes > 0 && (uintptr_t)data[i] % (uintptr_t)bytes)
			return ts_error(ctx, TS_ERR_INVALID, "eval: the data of tensor %s is not aligned to "
					"its %d-byte elements", bind[i]->name, bytes);
	}
	return TS_OK;
}

/* Bytes of t's data, saturated (a shape's element count fits int64, its
 * bytes may not). */
static uint64_t data_bytes(const ts_tensor *t)
{
	uint64_t n = (uint64_t)ts_tensor_numel(t), b = (uint64_t)ts_dtype_bytes(t->dtype), out;
	return __builtin_mul_overflow(n, b, &out) ? UINT64_MAX : out;
}

/* Outputs are written element by element while inputs are still read, so
 * an output sharing a byte with another binding would be read back
 * half-written (the same rule as ts_module_run's): inputs, only read, may
 * alias each other, and a tensor bound twice to the same data is one
 * binding. */
static ts_status check_aliasing(ts_ctx *ctx, int n, ts_tensor *const *bind, void *const *data)
{
	for (int i = 0; i < n; i++) {
		if (bind[i]->op != TS_OP_COMPUTE)
			continue;
		for (int j = 0; j < n; j++)
			if (bind[j] != bind[i] &&
			    ts_bytes_overlap(data[i], data_bytes(bind[i]), data[j], data_bytes(bind[j])))
				return ts_error(ctx, TS_ERR_INVALID,
						"eval: binding %d (%s) overlaps binding %d (%s)", i,
						bind[i]->name, j, bind[j]->name);
	}
	return TS_OK;
}

/* Orders the graph of the bound compute tensors, inputs first, into
 * arrays of the graph's size. */
static ts_status collect_graph(evaluator *s, int n, ts_tensor *const *bind)
{
	ts_tensor **outs = malloc(((size_t)n + 1) * sizeof(*outs));
	if (!outs)
		return ts_error(s->ctx, TS_ERR_NOMEM, "eval: out of memory");
	int nout = 0;
	for (int i = 0; i < n; i++)
		if (bind[i]->op == TS_OP_COMPUTE)
			outs[nout++] = bind[i];
	ts_status st = TS_OK;
	int count = ts_graph_topo(nout, outs, NULL, 0);
	if (count < 0) {
		st = ts_error(s->ctx, TS_ERR_NOMEM, "eval: out of memory ordering the graph");
	} else {
		size_t m = (size_t)count + 1;
		s->tensors = malloc(m * sizeof(*s->tensors));
		s->data = calloc(m, sizeof(*s->data));
		s->owned = calloc(m, sizeof(*s->owned));
		if (!s->tensors || !s->data || !s->owned)
			st = ts_error(s->ctx, TS_ERR_NOMEM, "eval: out of memory for a graph of %d tensors", count);
		else if (ts_graph_topo(nout, outs, s->tensors, count) != count)
			st = ts_error(s->ctx, TS_ERR_INTERNAL, "eval: the graph changed while being ordered");
		else
			s->ntensors = count;
	}
	free(outs);
	return st;
}

/* The evaluator walks shapes as constants: a size variable's bound is not
 * the extent of the caller's data. */
static ts_status check_constant_shapes(const evaluator *s)
{
	for (int i = 0; i < s->ntensors; i++) {
		const ts_tensor *t = s->tensors[i];
		const ts_expr *v = NULL;
		for (int d = 0; d < t->ndim && !v; d++)
			v = t->dim_var[d];
		for (int r = 0; r < t->nreduce && !v; r++)
			v = t->reduce_axis[r]->extent_var;
		if (v)
			return ts_error(s->ctx, TS_ERR_UNSUPPORTED,
					"eval: tensor %s has the symbolic extent %s; the reference "
					"evaluator needs constant shapes (build the expression again "
					"with the extents of the data)",
					t->name, v->u.var.name);
	}
	return TS_OK;
}

ts_status ts_eval(ts_ctx *ctx, int n, ts_tensor *const *bind, void *const *data)
{
	if (!ctx)
		return TS_ERR_INVALID;
	ts_status st = check_args(ctx, n, bind, data);
	if (st != TS_OK)
		return st;
	evaluator *s = calloc(1, sizeof(*s));
	if (!s)
		return ts_error(ctx, TS_ERR_NOMEM, "eval: out of memory");
	s->ctx = ctx;
	st = collect_graph(s, n, bind);
	if (st == TS_OK)
		st = check_constant_shapes(s);
	if (st == TS_OK)
		st = check_aliasing(ctx, n, bind, data);
	if (st == TS_OK)
		st = assign_storage(s, n, bind, data);
	for (int i = 0; st == TS_OK && i < s->ntensors; i++)
		if (s->tensors[i]->op == TS_OP_COMPUTE && !fill_tensor(s, i))
			st = ts_last_status(ctx) != TS_OK ? ts_last_status(ctx) : TS_ERR_INTERNAL;
	for (int i = 0; i < s->ntensors; i++)
		if (s->owned[i])
			free(s->data[i]);
	free(s->tensors);
	free(s->data);
	free(s->owned);
	free(s);
	return st;
}
