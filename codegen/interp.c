/*
 * interp.c - the loop-IR interpreter; contract and semantics in interp.h.
 *
 * A lane is an int64 (integers sign- or zero-extended from their width,
 * bools 0/1, uint64 as its bit pattern) or a double (floats, already rounded
 * to their dtype).  ev() computes one lane of an expression and returns it by
 * value: a scalar node ignores the lane number, a vector node passes it down
 * (RAMP, vector variables and vector loads pick their lane), so a vector
 * expression is evaluated lane by lane with the same code as a scalar one,
 * and scalar evaluation keeps everything in registers.  Only statements that
 * store or bind a vector hold its lanes (at most 64) in an array.
 *
 * Errors are sticky: the first is recorded in the context and in `st`, and
 * ev() returns zero lanes from then on.  Every statement checks `st` before
 * it writes memory, binds a variable or runs a body, so nothing is written
 * after an error.
 *
 * Variables live in an environment stack of slots (innermost last) whose
 * lanes sit in a separate pool; a lookup scans the few live slots from the
 * top, comparing variable pointers.  Buffers are bound the same way: the
 * parameters first, then each ALLOCATE for the duration of its body.  Both
 * stacks grow by doubling, so a run mallocs a handful of times in all.
 */
#include "interp.h"
#include "args.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "arith.h"
#include "eval.h"
#include "printer.h"

#define MAX_LANES CG_INTERP_MAX_LANES

typedef union lane {
	int64_t i;
	double f;
} lane;

static const lane ZERO = {0};

typedef struct binding {
	const ts_buffer *buf;
	void *data;
} binding;

typedef struct var_slot {
	const ts_expr *var;
	size_t off; /* first lane in the pool */
} var_slot;

typedef struct interp {
	ts_ctx *ctx;
	binding *bufs;
	size_t nbufs, capbufs;
	var_slot *vars;
	size_t nvars, capvars;
	lane *pool;
	size_t npool, cappool;
	ts_status st; /* the run's first error */
} interp;

static lane ev(interp *in, const ts_expr *e, int l);
static ts_status exec(interp *in, const ts_stmt *s);

/* ---- errors ------------------------------------------------------------- */

/* Records the run's first error and returns its status. */
static ts_status raise(interp *in, ts_status status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static ts_status raise(interp *in, ts_status status, const char *fmt, ...)
{
	if (in->st == TS_OK) {
		va_list ap;
		va_start(ap, fmt);
		in->st = ts_verror(in->ctx, status, fmt, ap);
		va_end(ap);
	}
	return in->st;
}

/* The expression's text for a message, or its kind if printing fails. */
static const char *expr_text(interp *in, const ts_expr *e)
{
	const char *s = ir_expr_str(in->ctx, e);
	return s ? s : ir_expr_kind_name(e->kind);
}

static ts_status not_lowered(interp *in, const char *kind)
{
	return raise(in, TS_ERR_UNSUPPORTED,
		     "interp: %s is not lowered IR (flatten tensors to buffers first)", kind);
}

static __attribute__((noinline)) ts_status lanes_error(interp *in, const ts_expr *e, int lanes)
{
	char t[24];
	if (e->dtype.lanes > MAX_LANES)
		return raise(in, TS_ERR_INVALID, "interp: %s has %d lanes (at most %d)",
			     expr_text(in, e), e->dtype.lanes, MAX_LANES);
	return raise(in, TS_ERR_INVALID, "interp: %s is %s, expected %d lane(s)",
		     expr_text(in, e), ts_dtype_str(e->dtype, t), lanes);
}

/* Checks that e has `lanes` lanes (1 where a scalar is required), at most 64. */
static inline ts_status check_lanes(interp *in, const ts_expr *e, int lanes)
{
	if (e->dtype.lanes != lanes || lanes > MAX_LANES)
		return lanes_error(in, e, lanes);
	return in->st;
}

/* ---- growable stacks ------------------------------------------------------ */

/* Makes room for `need` elements of `elem` bytes in *p (capacity *cap). */
static ts_status reserve(interp *in, void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return TS_OK;
	size_t n = *cap ? *cap : 16;
	while (n < need)
		n *= 2;
	void *q = n <= SIZE_MAX / elem ? realloc(*p, n * elem) : NULL;
	if (!q)
		return raise(in, TS_ERR_NOMEM, "interp: out of memory growing a stack to %zu entries", n);
	*p = q;
	*cap = n;
	return TS_OK;
}

static ts_status reserve_lanes(interp *in, int n)
{
	return reserve(in, (void **)&in->pool, &in->cappool, in->npool + (size_t)n, sizeof(lane));
}

/* Binds var to the n lanes at the top of the pool (filled by the caller). */
static ts_status push_var(interp *in, const ts_expr *var, int n)
{
	TS_TRY(reserve_lanes(in, n));
	TS_TRY(reserve(in, (void **)&in->vars, &in->capvars, in->nvars + 1, sizeof(var_slot)));
	in->vars[in->nvars++] = (var_slot){var, in->npool};
	in->npool += (size_t)n;
	return TS_OK;
}

static void pop_var(interp *in)
{
	in->nvars--;
	in->npool = in->vars[in->nvars].off;
}

static ts_status check_buffer(interp *in, const ts_buffer *b)
{
	if (b->dtype.lanes != 1 || b->dtype.code == TS_TYPE_HANDLE || b->size <= 0) {
		char t[24];
		return raise(in, TS_ERR_INVALID, "interp: buffer %s: cannot hold %lld element(s) of %s",
			     b->name, (long long)b->size, ts_dtype_str(b->dtype, t));
	}
	return TS_OK;
}

static ts_status push_buf(interp *in, const ts_buffer *b, void *data)
{
	TS_TRY(check_buffer(in, b));
	TS_TRY(reserve(in, (void **)&in->bufs, &in->capbufs, in->nbufs + 1, sizeof(binding)));
	in->bufs[in->nbufs++] = (binding){b, data};
	return TS_OK;
}

/* The data bound to b, or NULL after recording an error. */
static void *find_buf(interp *in, const ts_buffer *b)
{
	for (size_t k = in->nbufs; k-- > 0;)
		if (in->bufs[k].buf == b)
			return in->bufs[k].data;
	raise(in, TS_ERR_INVALID, "interp: buffer %s is not bound (neither a parameter nor allocated)",
	      b->name);
	return NULL;
}

/* ---- one lane ------------------------------------------------------------- */

static bool is_float(ts_dtype t)
{
	return t.code == TS_TYPE_FLOAT || t.code == TS_TYPE_BFLOAT;
}

/* Truncates an integer result to t's width, sign- or zero-extending it. */
static inline int64_t wrap(ts_dtype t, uint64_t v)
{
	if (t.code == TS_TYPE_BOOL)
		return v != 0;
	bool s = t.code == TS_TYPE_INT;
	switch (t.bits) {
	case 8: return s ? (int64_t)(int8_t)v : (int64_t)(uint8_t)v;
	case 16: return s ? (int64_t)(int16_t)v : (int64_t)(uint16_t)v;
	case 32: return s ? (int64_t)(int32_t)v : (int64_t)(uint32_t)v;
	default: return (int64_t)v;
	}
}

/* Rounds a float result to t, as compiled code of that dtype would. */
static double round_to(ts_dtype t, double v)
{
	if (t.code == TS_TYPE_FLOAT && t.bits == 64)
		return v;
	float f = (float)v;
	if (t.code == TS_TYPE_FLOAT && t.bits == 32)
		return f;
	uint16_t h;
	ts_elem_set_f64(&h, ts_dtype_element(t), 0, f);
	return ts_elem_get_f64(&h, ts_dtype_element(t), 0);
}

static bool is_u64(ts_dtype t)
{
	return t.code == TS_TYPE_UINT && t.bits == 64;
}

/* Integer division; b != 0.  b == -1 is split off because INT64_MIN / -1
 * overflows in C, while the IR wraps (ir.h). */
static int64_t int_div(ir_expr_kind k, ts_dtype t, int64_t a, int64_t b)
{
	if (is_u64(t)) {
		uint64_t x = (uint64_t)a, y = (uint64_t)b;
		bool div = k == IR_TRUNCDIV || k == IR_FLOORDIV;
		return (int64_t)(div ? x / y : x % y);
	}
	int64_t q = b == -1 ? (int64_t)(0 - (uint64_t)a) : a / b;
	int64_t r = b == -1 ? 0 : a % b;
	bool adjust = r != 0 && ((r < 0) != (b < 0));
	if (k == IR_FLOORDIV)
		return adjust ? q - 1 : q;
	if (k == IR_FLOORMOD)
		return adjust ? r + b : r;
	return k == IR_TRUNCDIV ? q : r;
}

/* A binary operation on one lane of integer or bool operands of dtype t. */
static int64_t int_bin(ir_expr_kind k, ts_dtype t, int64_t a, int64_t b)
{
	/* zero-extended narrow uints order correctly as int64; only uint64
	 * needs unsigned comparison */
	bool lt = is_u64(t) ? (uint64_t)a < (uint64_t)b : a < b;
	uint64_t x = (uint64_t)a, y = (uint64_t)b;
	switch (k) {
	case IR_ADD: return wrap(t, x + y);
	case IR_SUB: return wrap(t, x - y);
	case IR_MUL: return wrap(t, x * y);
	case IR_TRUNCDIV: case IR_TRUNCMOD: case IR_FLOORDIV: case IR_FLOORMOD:
		return wrap(t, (uint64_t)int_div(k, t, a, b));
	case IR_MIN: return lt ? a : b;
	case IR_MAX: return lt ? b : a;
	case IR_EQ: return a == b;
	case IR_NE: return a != b;
	case IR_LT: return lt;
	case IR_LE: return lt || a == b;
	case IR_GT: return !lt && a != b;
	case IR_GE: return !lt;
	case IR_AND: return a && b;
	case IR_OR: return a || b;
	case IR_DIV: /* float only: the constructors reject it on integers */
	case IR_INT_IMM: case IR_FLOAT_IMM: case IR_VAR: case IR_NOT: case IR_CAST:
	case IR_SELECT: case IR_CALL: case IR_READ: case IR_LOAD: case IR_RAMP:
	case IR_BROADCAST: case IR_REDUCE: case IR_EXPR_KIND_COUNT:
		break;
	}
	return 0;
}

/* A binary operation on one lane of float operands of dtype t. */
static lane float_bin(ir_expr_kind k, ts_dtype t, double a, double b)
{
	lane r = {0};
	switch (k) {
	case IR_ADD: r.f = round_to(t, a + b); break;
	case IR_SUB: r.f = round_to(t, a - b); break;
	case IR_MUL: r.f = round_to(t, a * b); break;
	case IR_DIV: r.f = round_to(t, a / b); break;
	case IR_MIN: r.f = ir_fminmax(false, a, b); break; /* NaN as ir.h says */
	case IR_MAX: r.f = ir_fminmax(true, a, b); break;
	case IR_EQ: r.i = a == b; break;
	case IR_NE: r.i = a != b; break;
	case IR_LT: r.i = a < b; break;
	case IR_LE: r.i = a <= b; break;
	case IR_GT: r.i = a > b; break;
	case IR_GE: r.i = a >= b; break;
	case IR_TRUNCDIV: case IR_TRUNCMOD: case IR_FLOORDIV: case IR_FLOORMOD:
	case IR_AND: case IR_OR: /* integer or bool only: rejected by the constructors */
	case IR_INT_IMM: case IR_FLOAT_IMM: case IR_VAR: case IR_NOT: case IR_CAST:
	case IR_SELECT: case IR_CALL: case IR_READ: case IR_LOAD: case IR_RAMP:
	case IR_BROADCAST: case IR_REDUCE: case IR_EXPR_KIND_COUNT:
		break;
	}
	return r;
}

/* A math intrinsic on one lane.  float32 (and the 16-bit floats, which
 * compute in float32) use the C library's float functions, as compiled
 * float32 code does. */
static double intrinsic(ir_intrinsic op, ts_dtype t, double a, double b)
{
	bool d = t.code == TS_TYPE_FLOAT && t.bits == 64;
	float x = (float)a, y = (float)b;
	double r = 0;
	switch (op) {
	case IR_INTRIN_EXP: r = d ? exp(a) : expf(x); break;
	case IR_INTRIN_LOG: r = d ? log(a) : logf(x); break;
	case IR_INTRIN_SQRT: r = d ? sqrt(a) : sqrtf(x); break;
	case IR_INTRIN_TANH: r = d ? tanh(a) : tanhf(x); break;
	case IR_INTRIN_EXP2: r = d ? exp2(a) : exp2f(x); break;
	case IR_INTRIN_FABS: r = d ? fabs(a) : fabsf(x); break;
	case IR_INTRIN_POW: r = d ? pow(a, b) : powf(x, y); break;
	case IR_INTRIN_ERF: r = d ? erf(a) : erff(x); break;
	case IR_INTRIN_SIGMOID: r = d ? 1 / (1 + exp(-a)) : 1.0f / (1.0f + expf(-x)); break;
	case IR_INTRIN_FLOOR: r = d ? floor(a) : floorf(x); break;
	case IR_INTRIN_CEIL: r = d ? ceil(a) : ceilf(x); break;
	case IR_INTRIN_ROUND_TF32: r = ir_round_tf32(x); break;
	case IR_INTRIN_LIKELY: /* handled by ev_call */
	case IR_INTRIN_COUNT: break;
	}
	return round_to(t, r);
}

static double int_to_float(ts_dtype from, ts_dtype to, int64_t v)
{
	/* straight to float, so that an int64 rounds once, not via double */
	if (to.code == TS_TYPE_FLOAT && to.bits == 32)
		return is_u64(from) ? (float)(uint64_t)v : (float)v;
	return round_to(to, is_u64(from) ? (double)(uint64_t)v : (double)v);
}

static lane convert(ts_dtype from, ts_dtype to, lane v)
{
	bool ff = is_float(from);
	lane r;
	if (is_float(to))
		r.f = ff ? round_to(to, v.f) : int_to_float(from, to, v.i);
	else if (to.code == TS_TYPE_BOOL)
		r.i = ff ? v.f != 0 : v.i != 0;
	else
		r.i = ff ? ir_float_to_int(to, v.f) : wrap(to, (uint64_t)v.i);
	return r;
}

static lane read_elem(const void *data, ts_dtype t, int64_t i)
{
	lane r;
	if (t.code == TS_TYPE_FLOAT && t.bits == 32)
		r.f = ((const float *)data)[i];
	else if (is_float(t))
		r.f = ts_elem_get_f64(data, t, i);
	else
		r.i = ts_elem_get_i64(data, t, i);
	return r;
}

static void write_elem(void *data, ts_dtype t, int64_t i, lane v)
{
	if (t.code == TS_TYPE_FLOAT && t.bits == 32)
		((float *)data)[i] = (float)v.f;
	else if (is_float(t))
		ts_elem_set_f64(data, t, i, v.f);
	else
		ts_elem_set_i64(data, t, i, v.i);
}

/* ---- expressions ------------------------------------------------------------ */

static lane ev_imm(const ts_expr *e)
{
	lane v;
	if (e->kind == IR_FLOAT_IMM)
		v.f = round_to(e->dtype, e->u.float_imm);
	else
		v.i = wrap(e->dtype, (uint64_t)e->u.int_imm);
	return v;
}

static lane ev_var(interp *in, const ts_expr *e, int l)
{
	for (size_t k = in->nvars; k-- > 0;)
		if (in->vars[k].var == e)
			return in->pool[in->vars[k].off + (e->dtype.lanes == 1 ? 0 : (size_t)l)];
	raise(in, TS_ERR_INVALID, "interp: variable '%s' is not defined", e->u.var.name);
	return ZERO;
}

/* Variables and integer constants, the leaves of most index arithmetic, are
 * read without a trip through ev()'s dispatch; this halves its calls. */
static inline lane operand(interp *in, const ts_expr *e, int l)
{
	if (e->kind == IR_VAR)
		return ev_var(in, e, l);
	if (e->kind == IR_INT_IMM)
		return (lane){.i = wrap(e->dtype, (uint64_t)e->u.int_imm)};
	return ev(in, e, l);
}

static lane ev_binary(interp *in, const ts_expr *e, int l)
{
	ts_dtype t = e->u.bin.a->dtype;
	ir_expr_kind k = e->kind;
	lane x = operand(in, e->u.bin.a, l), y = operand(in, e->u.bin.b, l);
	/* int32 index arithmetic and float32 math first: they dominate */
	if (t.code == TS_TYPE_INT && t.bits == 32 && k >= IR_ADD && k <= IR_MUL) {
		uint64_t a = (uint64_t)x.i, b = (uint64_t)y.i;
		return (lane){.i = (int32_t)(k == IR_ADD ? a + b : k == IR_SUB ? a - b : a * b)};
	}
	if (t.code == TS_TYPE_FLOAT && t.bits == 32 && k >= IR_ADD && k <= IR_MUL) {
		float a = (float)x.f, b = (float)y.f;
		return (lane){.f = k == IR_ADD ? a + b : k == IR_SUB ? a - b : a * b};
	}
	if (is_float(t))
		return float_bin(k, t, x.f, y.f);
	if (k >= IR_TRUNCDIV && k <= IR_FLOORMOD && y.i == 0)
		return ZERO; /* x / 0 = x % 0 = 0 (ir.h) */
	return (lane){.i = int_bin(k, t, x.i, y.i)};
}

static __attribute__((noinline)) lane ev_unary(interp *in, const ts_expr *e, int l)
{
	lane x = ev(in, e->u.un.a, l);
	if (e->kind == IR_NOT)
		return (lane){.i = !x.i};
	return convert(e->u.un.a->dtype, e->dtype, x);
}

/* Both arms are evaluated (their errors count); a scalar condition chooses
 * for every lane. */
static __attribute__((noinline)) lane ev_select(interp *in, const ts_expr *e, int l)
{
	const ts_expr *c = e->u.select.cond;
	if (c->dtype.lanes != 1 && c->dtype.lanes != e->dtype.lanes) {
		if (in->st == TS_OK)
			raise(in, TS_ERR_INVALID, "interp: %s: condition has %d lanes, arms %d",
			      expr_text(in, e), c->dtype.lanes, e->dtype.lanes);
		return ZERO;
	}
	lane cv = ev(in, c, l);
	lane t = ev(in, e->u.select.t, l), f = ev(in, e->u.select.f, l);
	return cv.i ? t : f;
}

static __attribute__((noinline)) lane ev_call(interp *in, const ts_expr *e, int l)
{
	lane x = ev(in, e->u.call.args[0], l);
	lane y = e->u.call.nargs > 1 ? ev(in, e->u.call.args[1], l) : ZERO;
	if (e->u.call.op == IR_INTRIN_LIKELY) /* a hint: the value is the condition */
		return x;
	return (lane){.f = intrinsic(e->u.call.op, e->dtype, x.f, y.f)};
}

static lane ev_load(interp *in, const ts_expr *e, int l)
{
	const ts_buffer *b = e->u.load.buf;
	lane ix = operand(in, e->u.load.index, l);
	void *data = find_buf(in, b);
	if (!data)
		return ZERO;
	if (ix.i < 0 || ix.i >= b->size) {
		raise(in, TS_ERR_INVALID, "interp: load from %s out of bounds: index %lld, size %lld",
		      b->name, (long long)ix.i, (long long)b->size);
		return ZERO;
	}
	return read_elem(data, b->dtype, ix.i);
}

static __attribute__((noinline)) lane ev_ramp(interp *in, const ts_expr *e, int l)
{
	lane base = ev(in, e->u.ramp.base, 0);
	uint64_t step = (uint64_t)e->u.ramp.stride * (uint64_t)l;
	return (lane){.i = wrap(e->dtype, (uint64_t)base.i + step)};
}

/* Lane l of e (a scalar e ignores l).  The statement that asks for lanes has
 * checked there are at most 64; the constructors keep every vector node's
 * operands at its own lane count, so l is in range everywhere below. */
static lane ev(interp *in, const ts_expr *e, int l)
{
	switch (e->kind) {
	case IR_INT_IMM:
	case IR_FLOAT_IMM:
		return ev_imm(e);
	case IR_VAR:
		return ev_var(in, e, l);
	case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV:
	case IR_TRUNCDIV: case IR_TRUNCMOD: case IR_FLOORDIV: case IR_FLOORMOD:
	case IR_MIN: case IR_MAX: case IR_EQ: case IR_NE: case IR_LT: case IR_LE:
	case IR_GT: case IR_GE: case IR_AND: case IR_OR:
		return ev_binary(in, e, l);
	case IR_NOT:
	case IR_CAST:
		return ev_unary(in, e, l);
	case IR_SELECT:
		return ev_select(in, e, l);
	case IR_CALL:
		return ev_call(in, e, l);
	case IR_LOAD:
		return ev_load(in, e, l);
	case IR_RAMP:
		return ev_ramp(in, e, l);
	case IR_BROADCAST:
		return ev(in, e->u.bcast.value, 0);
	case IR_READ:
	case IR_REDUCE:
		not_lowered(in, ir_expr_kind_name(e->kind));
		return ZERO;
	case IR_EXPR_KIND_COUNT:
		break;
	}
	raise(in, TS_ERR_INTERNAL, "interp: unknown expression kind %d", (int)e->kind);
	return ZERO;
}

/* ---- statements ------------------------------------------------------------- */

static ts_status out_of_bounds_store(interp *in, const ts_buffer *b, int64_t i)
{
	return raise(in, TS_ERR_INVALID, "interp: store to %s out of bounds: index %lld, size %lld",
		     b->name, (long long)i, (long long)b->size);
}

/* Every lane is checked before any is written: no partial vector stores. */
static ts_status store_vector(interp *in, const ts_stmt *s, void *data, int n)
{
	const ts_buffer *b = s->u.store.buf;
	lane idx[MAX_LANES], v[MAX_LANES];
	for (int l = 0; l < n; l++)
		idx[l] = ev(in, s->u.store.index, l);
	for (int l = 0; l < n; l++)
		v[l] = ev(in, s->u.store.value, l);
	TS_TRY(in->st);
	for (int l = 0; l < n; l++)
		if (idx[l].i < 0 || idx[l].i >= b->size)
			return out_of_bounds_store(in, b, idx[l].i);
	for (int l = 0; l < n; l++)
		write_elem(data, b->dtype, idx[l].i, v[l]);
	return TS_OK;
}

static ts_status exec_store(interp *in, const ts_stmt *s)
{
	const ts_buffer *b = s->u.store.buf;
	int n = s->u.store.index->dtype.lanes;
	TS_TRY(check_lanes(in, s->u.store.index, n));
	TS_TRY(check_lanes(in, s->u.store.value, n));
	void *data = find_buf(in, b);
	if (!data)
		return in->st;
	if (n > 1)
		return store_vector(in, s, data, n);
	lane ix = operand(in, s->u.store.index, 0), v = ev(in, s->u.store.value, 0);
	TS_TRY(in->st);
	if (ix.i < 0 || ix.i >= b->size)
		return out_of_bounds_store(in, b, ix.i);
	write_elem(data, b->dtype, ix.i, v);
	return TS_OK;
}

/* min and extent are evaluated once; the variable takes min .. min+extent-1
 * (none when extent <= 0).  Every loop kind runs serially in index order. */
static ts_status exec_for(interp *in, const ts_stmt *s)
{
	const ts_expr *var = s->u.for_.var;
	if (var->kind != IR_VAR || var->dtype.lanes != 1 || !ts_dtype_is_int(var->dtype))
		return raise(in, TS_ERR_INVALID, "interp: loop variable %s is not an integer scalar",
			     expr_text(in, var));
	TS_TRY(check_lanes(in, s->u.for_.min, 1));
	TS_TRY(check_lanes(in, s->u.for_.extent, 1));
	int64_t min = ev(in, s->u.for_.min, 0).i, extent = ev(in, s->u.for_.extent, 0).i;
	TS_TRY(in->st);
	TS_TRY(push_var(in, var, 1));
	size_t slot = in->vars[in->nvars - 1].off;
	ts_status st = TS_OK;
	for (int64_t k = 0; k < extent && st == TS_OK; k++) {
		/* the body may grow the pool: index it afresh */
		in->pool[slot].i = wrap(var->dtype, (uint64_t)min + (uint64_t)k);
		st = exec(in, s->u.for_.body);
	}
	pop_var(in);
	return st;
}

static ts_status exec_let(interp *in, const ts_stmt *s)
{
	const ts_expr *var = s->u.let.var, *value = s->u.let.value;
	int n = var->dtype.lanes;
	TS_TRY(check_lanes(in, value, n));
	/* evaluated before the variable is bound: the value cannot see it */
	TS_TRY(reserve_lanes(in, n));
	for (int l = 0; l < n; l++)
		in->pool[in->npool + (size_t)l] = ev(in, value, l);
	TS_TRY(in->st);
	TS_TRY(push_var(in, var, n));
	ts_status st = exec(in, s->u.let.body);
	pop_var(in);
	return st;
}

/* Garbage that shows: NaN in every float element, 0x5a in every other byte. */
static void fill_garbage(const ts_buffer *b, void *data)
{
	if (!is_float(b->dtype)) {
		memset(data, 0x5a, (size_t)b->size * (size_t)ts_dtype_bytes(b->dtype));
		return;
	}
	for (int64_t i = 0; i < b->size; i++)
		ts_elem_set_f64(data, b->dtype, i, NAN);
}

static ts_status exec_allocate(interp *in, const ts_stmt *s)
{
	const ts_buffer *b = s->u.alloc.buf;
	TS_TRY(check_buffer(in, b));
	size_t elem = (size_t)ts_dtype_bytes(b->dtype);
	void *data = (uint64_t)b->size <= SIZE_MAX / elem ? malloc((size_t)b->size * elem) : NULL;
	if (!data)
		return raise(in, TS_ERR_NOMEM, "interp: cannot allocate %s (%lld elements)", b->name,
			     (long long)b->size);
	fill_garbage(b, data);
	ts_status st = push_buf(in, b, data);
	if (st == TS_OK) {
		st = exec(in, s->u.alloc.body);
		in->nbufs--;
	}
	free(data);
	return st;
}

static ts_status exec_if(interp *in, const ts_stmt *s)
{
	TS_TRY(check_lanes(in, s->u.if_.cond, 1));
	lane c = ev(in, s->u.if_.cond, 0);
	TS_TRY(in->st);
	if (c.i)
		return exec(in, s->u.if_.then_s);
	return s->u.if_.else_s ? exec(in, s->u.if_.else_s) : TS_OK;
}

/* Evaluated only for its errors: expressions have no side effects. */
static ts_status exec_evaluate(interp *in, const ts_stmt *s)
{
	const ts_expr *v = s->u.eval.value;
	TS_TRY(check_lanes(in, v, v->dtype.lanes));
	for (int l = 0; l < v->dtype.lanes; l++)
		ev(in, v, l);
	return in->st;
}

static ts_status exec(interp *in, const ts_stmt *s)
{
	switch (s->kind) {
	case IR_S_FOR:
		return exec_for(in, s);
	case IR_S_STORE:
		return exec_store(in, s);
	case IR_S_ALLOCATE:
		return exec_allocate(in, s);
	case IR_S_IF:
		return exec_if(in, s);
	case IR_S_SEQ:
		for (int k = 0; k < s->u.seq.n; k++)
			TS_TRY(exec(in, s->u.seq.s[k]));
		return TS_OK;
	case IR_S_LET:
		return exec_let(in, s);
	case IR_S_EVALUATE:
		return exec_evaluate(in, s);
	case IR_S_PREFETCH:
		/* a hint, whose load is done and dropped: so the interpreter's
		 * bounds check covers the addresses compiled code would form */
		ev(in, s->u.prefetch.value, 0);
		return in->st;
	case IR_S_BARRIER:
		/* thread loops run one thread at a time, so every write of the
		 * threads before this barrier is already done */
		return TS_OK;
	case IR_S_PROVIDE:
	case IR_S_REALIZE:
		return not_lowered(in, ir_stmt_kind_name(s->kind));
	case IR_STMT_KIND_COUNT:
		break;
	}
	return raise(in, TS_ERR_INTERNAL, "interp: unknown statement kind %d", (int)s->kind);
}

/* ---- entry points ------------------------------------------------------------ */

static ts_status run(ts_ctx *ctx, const ts_stmt *s, int nbuf, ts_buffer *const *bufs,
		     void *const *data)
{
	interp in = {.ctx = ctx};
	ts_status st = TS_OK;
	for (int k = 0; k < nbuf && st == TS_OK; k++)
		st = push_buf(&in, bufs[k], data[k]);
	if (st == TS_OK)
		st = exec(&in, s);
	free(in.bufs);
	free(in.vars);
	free(in.pool);
	return st;
}

/* Every buffer and its data must be given. */
static ts_status check_bindings(ts_ctx *ctx, const char *what, int nbuf,
				ts_buffer *const *bufs, void *const *data)
{
	if (nbuf < 0 || (nbuf > 0 && (!bufs || !data)))
		return ts_error(ctx, TS_ERR_INVALID, "interp: %s: %d buffer(s) but no %s", what,
				nbuf, !bufs ? "buffers" : "data");
	for (int k = 0; k < nbuf; k++) {
		if (!bufs[k])
			return ts_error(ctx, TS_ERR_INVALID, "interp: %s: buffer %d is NULL", what, k);
		if (!data[k])
			return ts_error(ctx, TS_ERR_INVALID, "interp: %s: argument %d (%s) is NULL",
					what, k, bufs[k]->name);
	}
	return TS_OK;
}

/* The size variables' values (the last parameter, ts_func.nsizes) within
 * 1..their bounds: past them the function's indices leave its analyses. */
static ts_status check_sizes(ts_ctx *ctx, const ts_func *f, void *const *args)
{
	if (f->nsizes <= 0)
		return TS_OK;
	if (!f->size_vars || !f->size_max || f->nparams < 1 || f->nsizes > TS_MAX_SIZE_VARS)
		return ts_error(ctx, TS_ERR_INVALID, "interp: %s: malformed size variables", f->name);
	const int64_t *v = args[f->nparams - 1];
	for (int k = 0; k < f->nsizes; k++)
		if (v[k] < 1 || v[k] > f->size_max[k])
			return ts_error(ctx, TS_ERR_INVALID,
					"interp: %s: size variable %s = %lld is outside 1..%lld", f->name,
					f->size_vars[k]->u.var.name, (long long)v[k], (long long)f->size_max[k]);
	return TS_OK;
}

/* The bytes parameter i spans at this call: its extents, a size
 * variable's taken from the call's sizes. */
static uint64_t param_bytes(const ts_func *f, int i, void *const *args)
{
	const ts_buffer *b = f->params[i];
	const int64_t *v = f->nsizes > 0 ? args[f->nparams - 1] : NULL;
	uint64_t n = (uint64_t)ts_dtype_bytes(b->dtype);
	for (int d = 0; d < b->ndim; d++) {
		int64_t e = b->shape[d];
		for (int k = 0; v && b->dim_var[d] && k < f->nsizes; k++)
			if (f->size_vars[k] == b->dim_var[d])
				e = v[k];
		n *= (uint64_t)e; /* each extent within its checked bound */
	}
	return n;
}

/* As ts_module_run: an output shares no byte with another argument (the
 * interpreter would run what an aliased call computes, which no compiled
 * function promises). */
static ts_status check_aliasing(ts_ctx *ctx, const ts_func *f, void *const *args)
{
	int n = f->nsizes > 0 ? f->nparams - 1 : f->nparams;
	for (int i = 0; i < n; i++) {
		if (!f->param_tensors || !f->param_tensors[i] || f->param_tensors[i]->op != TS_OP_COMPUTE)
			continue;
		for (int j = 0; j < n; j++)
			if (j != i && ts_bytes_overlap(args[i], param_bytes(f, i, args), args[j],
						       param_bytes(f, j, args)))
				return ts_error(ctx, TS_ERR_INVALID, "interp: %s: argument %d (%s) overlaps "
						"argument %d (%s)", f->name, i, f->params[i]->name, j,
						f->params[j]->name);
	}
	return TS_OK;
}

ts_status cg_interp_run(ts_ctx *ctx, const ts_func *f, void *const *args)
{
	if (!ctx)
		return TS_ERR_INVALID;
	if (!f)
		return ts_error(ctx, TS_ERR_INVALID, "interp: function is NULL");
	const char *name = f->name ? f->name : "?";
	if (f->ctx && f->ctx != ctx)
		return ts_error(ctx, TS_ERR_INVALID, "interp: function %s belongs to another context",
				name);
	if (!f->body)
		return ts_error(ctx, TS_ERR_INVALID, "interp: function %s has no body", name);
	if (f->nparams > 0 && !args)
		return ts_error(ctx, TS_ERR_INVALID, "interp: %s: args is NULL for %d parameter(s)",
				name, f->nparams);
	TS_TRY(check_bindings(ctx, name, f->nparams, f->params, args));
	TS_TRY(check_sizes(ctx, f, args));
	TS_TRY(check_aliasing(ctx, f, args));
	return run(ctx, f->body, f->nparams, f->params, args);
}

ts_status cg_interp_stmt(ts_ctx *ctx, const ts_stmt *s, int nbuf, ts_buffer *const *bufs,
			 void *const *data)
{
	if (!ctx)
		return TS_ERR_INVALID;
	if (!s)
		return ts_error(ctx, TS_ERR_INVALID, "interp: statement is NULL");
	TS_TRY(check_bindings(ctx, "statement", nbuf, bufs, data));
	return run(ctx, s, nbuf, bufs, data);
}
