/*
 * vectorize.c - rewrites VECTORIZED loops into vector expressions (see
 * vectorize.h for the contract).
 *
 * Each candidate loop is handled in two steps.  First the original body is
 * surveyed: every buffer access (buffer, index, load or store), the
 * variables bound inside the body, and statement kinds that are never
 * vectorized.  Then the body is rebuilt with the loop variable replaced by
 * a ramp; any rule broken on the way makes the rebuild give up, and the loop
 * is kept as a SERIAL loop instead.  Giving up is not an error: only a
 * failing IR constructor is.
 *
 * Affine index arithmetic is kept in ramp form (ramp + scalar, ramp * const)
 * so that a backend sees contiguous accesses as a stride-1 ramp.
 */
#include "vectorize.h"

#include <string.h>

/* Larger vectors are legal but only slow compilation down. */
#define MAX_LANES TS_MAX_VECTOR_LANES

typedef struct access {
	ts_buffer *buf;
	ts_expr *index;
	bool store;
} access;

typedef struct vec_ctx {
	ts_ctx *ctx;
	ts_expr *var;  /* the vectorized loop variable ... */
	ts_expr *ramp; /* ... and its value, ramp(min, 1, lanes) */
	int lanes;
	/* the survey of the original body */
	access *acc;
	int nacc, capacc;
	ts_expr **bound; /* variables bound inside the body */
	int nbound, capbound;
	bool bad; /* a statement that is never vectorized */
	/* let variables whose values became vectors, and their vector twins */
	struct remap {
		ts_expr *from, *to;
	} *map;
	int nmap, capmap;
	bool fail; /* gave up: keep the loop serial */
	int in_index; /* > 0 while vectorizing a buffer index */
} vec_ctx;

/* Makes room for one more element in an arena array (old copies are left
 * to the arena). */
static bool grow(ts_ctx *ctx, void **arr, int *cap, int n, size_t elem)
{
	if (n < *cap)
		return true;
	int ncap = *cap ? *cap * 2 : 16;
	void *p = ts_alloc_array(ctx, (size_t)ncap, elem);
	if (!p)
		return false;
	if (n)
		memcpy(p, *arr, (size_t)n * elem);
	*arr = p;
	*cap = ncap;
	return true;
}

static void add_access(vec_ctx *v, ts_buffer *b, ts_expr *index, bool store)
{
	if (!grow(v->ctx, (void **)&v->acc, &v->capacc, v->nacc, sizeof(access))) {
		v->fail = true;
		return;
	}
	v->acc[v->nacc++] = (access){b, index, store};
}

static void add_bound(vec_ctx *v, ts_expr *var)
{
	if (!grow(v->ctx, (void **)&v->bound, &v->capbound, v->nbound, sizeof(ts_expr *))) {
		v->fail = true;
		return;
	}
	v->bound[v->nbound++] = var;
}

/* ---- survey ----------------------------------------------------------------- */

static bool survey_stmt(ts_stmt *s, void *data)
{
	vec_ctx *v = data;
	switch (s->kind) {
	case IR_S_STORE:
		add_access(v, s->u.store.buf, s->u.store.index, true);
		break;
	case IR_S_FOR:
		if (s->u.for_.kind != TS_FOR_SERIAL && s->u.for_.kind != TS_FOR_UNROLLED)
			v->bad = true;
		add_bound(v, s->u.for_.var);
		break;
	case IR_S_LET:
		add_bound(v, s->u.let.var);
		break;
	case IR_S_ALLOCATE:
	case IR_S_BARRIER:
	case IR_S_PROVIDE:
	case IR_S_REALIZE:
		v->bad = true;
		break;
	case IR_S_IF:
	case IR_S_SEQ:
	case IR_S_EVALUATE:
	case IR_S_PREFETCH:
	case IR_STMT_KIND_COUNT:
		break;
	}
	return !v->bad;
}

static bool survey_expr(ts_expr *e, void *data)
{
	vec_ctx *v = data;
	if (e->kind == IR_LOAD)
		add_access(v, e->u.load.buf, e->u.load.index, false);
	return true;
}

static bool is_loaded(const vec_ctx *v, const ts_buffer *b)
{
	for (int i = 0; i < v->nacc; i++)
		if (v->acc[i].buf == b && !v->acc[i].store)
			return true;
	return false;
}

static int count_accesses(const vec_ctx *v, const ts_buffer *b)
{
	int n = 0;
	for (int i = 0; i < v->nacc; i++)
		n += v->acc[i].buf == b;
	return n;
}

/* A stored buffer must be accessed with one index that uses no variable
 * bound inside the body: then each lane owns its elements for the whole
 * body and the order of its accesses is the serial order. */
static bool store_index_ok(const vec_ctx *v, const ts_buffer *b, ts_expr *index)
{
	for (int i = 0; i < v->nacc; i++)
		if (v->acc[i].buf == b && !ir_expr_equal(v->acc[i].index, index))
			return false;
	for (int i = 0; i < v->nbound; i++)
		if (ir_expr_uses_var(index, v->bound[i]))
			return false;
	return true;
}

/* ---- expressions ------------------------------------------------------------ */

static void *give_up(vec_ctx *v)
{
	v->fail = true;
	return NULL;
}

static bool is_vec(const ts_expr *e)
{
	return e->dtype.lanes > 1;
}

static ts_expr *widen(vec_ctx *v, ts_expr *e)
{
	return is_vec(e) ? e : ts_broadcast(v->ctx, e, v->lanes);
}

static ts_expr *make_ramp(vec_ctx *v, ts_expr *base, int64_t stride)
{
	if (!base) /* a failed allocation, already reported */
		return NULL;
	return stride == 0 ? ts_broadcast(v->ctx, base, v->lanes)
			   : ts_ramp(v->ctx, base, stride, v->lanes);
}

/* a op b for the bases of ramps, without the `+ 0` and `* 1` that the
 * split of a loop starting at 0 leaves behind. */
static ts_expr *fold(ts_ctx *ctx, ir_expr_kind k, ts_expr *a, ts_expr *b)
{
	int64_t x, y;
	bool ca = ir_is_const_int(a, &x), cb = ir_is_const_int(b, &y);
	if (cb && y == 0 && (k == IR_ADD || k == IR_SUB))
		return a;
	if (ca && x == 0 && k == IR_ADD)
		return b;
	if ((cb && y == 1 && k == IR_MUL) || (ca && x == 1 && k == IR_MUL))
		return cb && y == 1 ? a : b;
	return ts_binary(ctx, k, a, b);
}

/* Strides of integer ramps combine as their lanes do, wrapping (ir.h): in
 * int64 arithmetic a few large factors ((i*2^30 + x)*2^30*2^30) overflow,
 * which C leaves undefined; modulo 2^64 they stay right modulo the
 * dtype's width, the only bits a lane keeps. */
static int64_t stride_add(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
}

static int64_t stride_mul(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a * (uint64_t)b);
}

/* ramp op scalar (or ramp op ramp) as one ramp when the result is affine
 * (*affine set; NULL then is a failed allocation); NULL when it is not. */
static ts_expr *fold_ramp(vec_ctx *v, ir_expr_kind k, ts_expr *a, ts_expr *b, bool *affine)
{
	ts_ctx *ctx = v->ctx;
	bool ra = a->kind == IR_RAMP, rb = b->kind == IR_RAMP;
	bool add = k == IR_ADD || k == IR_SUB;
	int64_t sign = k == IR_SUB ? -1 : 1;
	ts_expr *base;
	int64_t c, stride;
	*affine = true;
	if (!ts_dtype_is_int(a->dtype) || (!ra && !rb))
		return *affine = false, NULL;
	if (add && ra && rb) {
		base = fold(ctx, k, a->u.ramp.base, b->u.ramp.base);
		stride = stride_add(a->u.ramp.stride, stride_mul(sign, b->u.ramp.stride));
	} else if (add && ra && !is_vec(b)) {
		base = fold(ctx, k, a->u.ramp.base, b);
		stride = a->u.ramp.stride;
	} else if (add && rb && !is_vec(a)) {
		base = fold(ctx, k, a, b->u.ramp.base);
		stride = stride_mul(sign, b->u.ramp.stride);
	} else if (k == IR_MUL && ra && ir_is_const_int(b, &c)) {
		base = fold(ctx, IR_MUL, a->u.ramp.base, b);
		stride = stride_mul(a->u.ramp.stride, c);
	} else if (k == IR_MUL && rb && ir_is_const_int(a, &c)) {
		base = fold(ctx, IR_MUL, a, b->u.ramp.base);
		stride = stride_mul(b->u.ramp.stride, c);
	} else {
		return *affine = false, NULL;
	}
	/* a stride whose last lane leaves int64 (2^62 over 8 lanes), or a
	 * constant base whose last lane leaves its dtype, is no ramp the IR
	 * holds (ts_ramp refuses it, failing the whole vectorization): such
	 * lanes are computed one by one instead */
	if (base && !ir_ramp_fits(base, stride, v->lanes))
		return *affine = false, NULL;
	return make_ramp(v, base, stride);
}

static ts_expr *vx(vec_ctx *v, ts_expr *e);

static ts_expr *vx_binary(vec_ctx *v, ts_expr *e)
{
	ts_expr *a = vx(v, e->u.bin.a), *b = vx(v, e->u.bin.b);
	if (!a || !b)
		return NULL;
	if (!is_vec(a) && !is_vec(b))
		return a == e->u.bin.a && b == e->u.bin.b ? e : ts_binary(v->ctx, e->kind, a, b);
	bool affine;
	ts_expr *r = fold_ramp(v, e->kind, a, b, &affine);
	/* a failed allocation must fail the vectorization, not fall back */
	return r || affine ? r : ts_binary(v->ctx, e->kind, widen(v, a), widen(v, b));
}

static ts_expr *vx_cast(vec_ctx *v, ts_expr *e)
{
	ts_expr *a = vx(v, e->u.un.a);
	if (!a || a == e->u.un.a)
		return a ? e : NULL;
	ts_dtype to = ts_dtype_element(e->dtype), from = ts_dtype_element(a->dtype);
	/* widening an index keeps it affine: lowering chose the index's dtype
	 * so that it never wraps.  A value may wrap in its narrow dtype, and
	 * is then widened lane by lane, wrapped as the scalar code has it. */
	if (a->kind == IR_RAMP && to.code == TS_TYPE_INT && from.code == TS_TYPE_INT &&
	    to.bits >= from.bits && (v->in_index || to.bits == from.bits))
		return make_ramp(v, ts_cast(v->ctx, to, a->u.ramp.base), a->u.ramp.stride);
	return ts_cast(v->ctx, ts_dtype_with_lanes(to, a->dtype.lanes), a);
}

static ts_expr *vx_select(vec_ctx *v, ts_expr *e)
{
	ts_expr *c = vx(v, e->u.select.cond), *t = vx(v, e->u.select.t), *f = vx(v, e->u.select.f);
	if (!c || !t || !f)
		return NULL;
	if (!is_vec(c) && !is_vec(t) && !is_vec(f))
		return c == e->u.select.cond && t == e->u.select.t && f == e->u.select.f
			       ? e : ts_select(v->ctx, c, t, f);
	return ts_select(v->ctx, widen(v, c), widen(v, t), widen(v, f));
}

static ts_expr *vx_call(vec_ctx *v, ts_expr *e)
{
	ts_expr *args[2] = {NULL, NULL};
	bool vec = false, changed = false;
	for (int i = 0; i < e->u.call.nargs; i++) {
		if (!(args[i] = vx(v, e->u.call.args[i])))
			return NULL;
		vec |= is_vec(args[i]);
		changed |= args[i] != e->u.call.args[i];
	}
	if (!changed)
		return e;
	for (int i = 0; vec && i < e->u.call.nargs; i++)
		args[i] = widen(v, args[i]);
	return ts_call(v->ctx, e->u.call.op, e->u.call.nargs, args);
}

/* e's vector form where e is a buffer index. */
static ts_expr *vx_index(vec_ctx *v, ts_expr *e)
{
	v->in_index++;
	ts_expr *r = vx(v, e);
	v->in_index--;
	return r;
}

static ts_expr *vx_load(vec_ctx *v, ts_expr *e)
{
	ts_expr *idx = vx_index(v, e->u.load.index);
	if (!idx || idx == e->u.load.index)
		return idx ? e : NULL;
	/* one element for every lane: load it once */
	if (idx->kind == IR_BROADCAST)
		return ts_broadcast(v->ctx, ts_load(v->ctx, e->u.load.buf, idx->u.bcast.value),
				    v->lanes);
	return ts_load(v->ctx, e->u.load.buf, idx);
}

static ts_expr *vx_var(vec_ctx *v, ts_expr *e)
{
	if (e == v->var)
		return v->ramp;
	for (int i = 0; i < v->nmap; i++)
		if (v->map[i].from == e)
			return v->map[i].to;
	return e;
}

/* The vector form of e: e itself if lane-invariant and unchanged. */
static ts_expr *vx_node(vec_ctx *v, ts_expr *e)
{
	switch (e->kind) {
	case IR_INT_IMM:
	case IR_FLOAT_IMM:
		return e;
	case IR_VAR:
		return vx_var(v, e);
	case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV:
	case IR_TRUNCDIV: case IR_TRUNCMOD: case IR_FLOORDIV: case IR_FLOORMOD:
	case IR_MIN: case IR_MAX: case IR_EQ: case IR_NE: case IR_LT: case IR_LE:
	case IR_GT: case IR_GE: case IR_AND: case IR_OR:
		return vx_binary(v, e);
	case IR_NOT: {
		ts_expr *a = vx(v, e->u.un.a);
		return !a ? NULL : a == e->u.un.a ? e : ts_not(v->ctx, a);
	}
	case IR_CAST:
		return vx_cast(v, e);
	case IR_SELECT:
		return vx_select(v, e);
	case IR_CALL:
		return vx_call(v, e);
	case IR_LOAD:
		return vx_load(v, e);
	case IR_READ:
	case IR_RAMP:
	case IR_BROADCAST:
	case IR_REDUCE:
	case IR_EXPR_KIND_COUNT:
		break;
	}
	/* already vector code, or not lowered: leave the loop serial */
	return give_up(v);
}

static ts_expr *vx(vec_ctx *v, ts_expr *e)
{
	/* An index is an address only in its + - * and casts: below a
	 * floormod, a min or a select its lanes are values of the program,
	 * which wrap (ir.h), and vx_cast must not widen them as a ramp
	 * (floormod(int64(i*2^30), 37): lane 2 is -2^31, not 2^31). */
	int in_index = v->in_index;
	if (e->kind != IR_ADD && e->kind != IR_SUB && e->kind != IR_MUL && e->kind != IR_CAST)
		v->in_index = 0;
	ts_expr *r = vx_node(v, e);
	v->in_index = in_index;
	return r;
}

/* ---- statements ------------------------------------------------------------- */

/* A REDUCE with no axes: the lanes of src combined with op (vectorize.h). */
static ts_expr *lane_reduce(ts_ctx *ctx, ts_reduce_op op, ts_expr *src)
{
	if (src && src->depth >= TS_MAX_EXPR_DEPTH) {
		ts_error(ctx, TS_ERR_INVALID, "vectorize: expression nesting deeper than %d",
			 TS_MAX_EXPR_DEPTH);
		return NULL;
	}
	ts_expr *e = src ? ts_alloc(ctx, sizeof(*e)) : NULL;
	if (!e)
		return NULL;
	e->kind = IR_REDUCE;
	e->ctx = ctx;
	e->depth = src->depth + 1;
	e->nodes = src->nodes + 1; /* one node over a refused-size bound is harmless */
	e->dtype = ts_dtype_element(src->dtype);
	e->u.reduce.op = op;
	e->u.reduce.source = src;
	return e;
}

static bool is_self_load(const ts_expr *e, const ts_buffer *b, const ts_expr *index)
{
	return e->kind == IR_LOAD && e->u.load.buf == b && ir_expr_equal(e->u.load.index, index);
}

/* buf[i] = buf[i] op x with i lane-invariant and x lane-varying. */
static ts_stmt *vx_reduction(vec_ctx *v, ts_stmt *s, ts_expr *idx)
{
	ts_buffer *b = s->u.store.buf;
	ts_expr *val = s->u.store.value;
	ts_reduce_op op;
	switch (val->kind) {
	case IR_ADD: case IR_SUB: op = TS_REDUCE_SUM; break;
	case IR_MUL: op = TS_REDUCE_PROD; break;
	case IR_MAX: op = TS_REDUCE_MAX; break;
	case IR_MIN: op = TS_REDUCE_MIN; break;
	default: return give_up(v);
	}
	ts_expr *self = val->u.bin.a, *x = val->u.bin.b;
	if (!is_self_load(self, b, s->u.store.index)) {
		if (val->kind == IR_SUB)
			return give_up(v);
		self = val->u.bin.b;
		x = val->u.bin.a;
	}
	/* the store and its own load must be the buffer's only accesses */
	if (!is_self_load(self, b, s->u.store.index) || count_accesses(v, b) != 2)
		return give_up(v);
	ts_expr *xv = vx(v, x);
	if (!xv || !is_vec(xv))
		return xv ? give_up(v) : NULL;
	ts_expr *r = lane_reduce(v->ctx, op, xv);
	/* the buffer's value stays the first operand so that a float sum can
	 * be accumulated in serial order */
	ts_expr *nv = ts_binary(v->ctx, val->kind, ts_load(v->ctx, b, idx), r);
	return ir_store(v->ctx, b, idx, nv);
}

static ts_stmt *vx_store(vec_ctx *v, ts_stmt *s)
{
	ts_buffer *b = s->u.store.buf;
	if (!store_index_ok(v, b, s->u.store.index))
		return give_up(v);
	ts_expr *idx = vx_index(v, s->u.store.index);
	if (!idx)
		return NULL;
	if (idx->kind == IR_BROADCAST)
		idx = idx->u.bcast.value;
	if (is_vec(idx)) {
		/* lanes of a gather index may collide: only a pure scatter
		 * keeps the serial result (the last lane wins) */
		if (idx->kind != IR_RAMP && is_loaded(v, b))
			return give_up(v);
		ts_expr *val = vx(v, s->u.store.value);
		return val ? ir_store(v->ctx, b, idx, widen(v, val)) : NULL;
	}
	/* a lane-invariant value stored once is what the last lane stores */
	ts_expr *val = vx(v, s->u.store.value);
	if (val && !is_vec(val) && !is_loaded(v, b))
		return ir_store(v->ctx, b, idx, val);
	return val ? vx_reduction(v, s, idx) : NULL;
}

static ts_stmt *vs(ts_ctx *ctx, ts_stmt *s, void *data);

static ts_stmt *vs_let(vec_ctx *v, ts_stmt *s)
{
	ts_expr *val = vx(v, s->u.let.value), *var = s->u.let.var;
	if (!val)
		return NULL;
	if (is_vec(val)) {
		ts_expr *nv = ts_var_typed(v->ctx, var->u.var.name, val->dtype);
		if (!nv || !grow(v->ctx, (void **)&v->map, &v->capmap, v->nmap, sizeof(*v->map)))
			return NULL;
		v->map[v->nmap++] = (struct remap){var, nv};
		var = nv;
	}
	ts_stmt *body = vs(v->ctx, s->u.let.body, v);
	return body ? ir_let(v->ctx, var, val, body) : NULL;
}

static ts_stmt *vs(ts_ctx *ctx, ts_stmt *s, void *data)
{
	vec_ctx *v = data;
	switch (s->kind) {
	case IR_S_STORE:
		return vx_store(v, s);
	case IR_S_SEQ:
		return ir_stmt_map_children(ctx, s, vs, NULL, v);
	case IR_S_FOR: {
		ts_expr *min = vx(v, s->u.for_.min), *ext = vx(v, s->u.for_.extent);
		if (!min || !ext || is_vec(min) || is_vec(ext))
			return min && ext ? give_up(v) : NULL;
		ts_stmt *body = vs(ctx, s->u.for_.body, v);
		return body ? ir_for(ctx, s->u.for_.var, min, ext, s->u.for_.kind,
				     s->u.for_.thread, body) : NULL;
	}
	case IR_S_IF: {
		ts_expr *c = vx(v, s->u.if_.cond);
		if (!c || is_vec(c))
			return c ? give_up(v) : NULL;
		ts_stmt *t = vs(ctx, s->u.if_.then_s, v);
		ts_stmt *f = s->u.if_.else_s ? vs(ctx, s->u.if_.else_s, v) : NULL;
		if (!t || (s->u.if_.else_s && !f))
			return NULL;
		return ir_if(ctx, c, t, f);
	}
	case IR_S_LET:
		return vs_let(v, s);
	case IR_S_EVALUATE: {
		ts_expr *e = vx(v, s->u.eval.value);
		return e ? ir_evaluate(ctx, e) : NULL;
	}
	case IR_S_PREFETCH: /* a hint: a vector loop drops it */
		return ir_evaluate(ctx, ts_int(ctx, 0));
	case IR_S_ALLOCATE:
	case IR_S_BARRIER:
	case IR_S_PROVIDE:
	case IR_S_REALIZE:
	case IR_STMT_KIND_COUNT:
		break;
	}
	return give_up(v);
}

/* ---- loops ------------------------------------------------------------------ */

static ts_stmt *mutate(ts_ctx *ctx, ts_stmt *s, void *data);

/* The vector form of a vectorized loop's body, or NULL with v->fail set
 * when it must stay serial. */
static ts_stmt *try_vectorize(ts_ctx *ctx, ts_stmt *s)
{
	int64_t lanes;
	if (!ir_is_const_int(s->u.for_.extent, &lanes) || lanes < 2 || lanes > MAX_LANES)
		return NULL;
	vec_ctx v = {.ctx = ctx, .var = s->u.for_.var, .lanes = (int)lanes};
	v.ramp = ts_ramp(ctx, s->u.for_.min, 1, (int)lanes);
	if (!v.ramp)
		return NULL;
	ir_stmt_visit(s->u.for_.body, survey_stmt, survey_expr, &v);
	if (v.bad || v.fail)
		return NULL;
	return vs(ctx, s->u.for_.body, &v);
}

static ts_stmt *vectorize_loop(ts_ctx *ctx, ts_stmt *s)
{
	ts_status before = ts_last_status(ctx);
	ts_stmt *r = try_vectorize(ctx, s);
	if (r)
		return r;
	if (before == TS_OK && ts_last_status(ctx) != TS_OK)
		return NULL;
	ts_stmt *body = mutate(ctx, s->u.for_.body, NULL);
	return body ? ir_for(ctx, s->u.for_.var, s->u.for_.min, s->u.for_.extent, TS_FOR_SERIAL,
			     TS_THREAD_NONE, body) : NULL;
}

/* A vectorized loop whose extent is not a power of two, as loops of
 * power-of-two extents, largest first (48 lanes: 32 then 16), each
 * vectorized on its own.  LLVM legalizes a vector of another length by
 * widening it and moving lanes one at a time: 48 floats ran 12x slower than
 * 32 + 16.  NULL with an error only if building IR failed. */
static ts_stmt *split_pow2(ts_ctx *ctx, ts_stmt *s, int64_t lanes)
{
	ts_stmt *part[8];
	int n = 0;
	const ts_expr *min = s->u.for_.min;
	for (int64_t off = 0, c = MAX_LANES; c >= 1; c /= 2) {
		if (lanes - off < c)
			continue;
		int64_t m0;
		ts_expr *lo = ir_is_const_int(min, &m0) ? ts_const(ctx, min->dtype, m0 + off)
			      : off ? ts_add(ctx, s->u.for_.min, ts_const(ctx, min->dtype, off))
				    : s->u.for_.min;
		ts_stmt *l = lo ? ir_for(ctx, s->u.for_.var, lo, ts_const(ctx, min->dtype, c),
					 TS_FOR_VECTORIZED, TS_THREAD_NONE, s->u.for_.body)
				: NULL;
		if (!l || !(part[n++] = vectorize_loop(ctx, l)))
			return NULL;
		off += c;
	}
	return ir_seq(ctx, n, part);
}

static bool pow2(int64_t x)
{
	return x > 0 && !(x & (x - 1));
}

static ts_stmt *mutate(ts_ctx *ctx, ts_stmt *s, void *data)
{
	int64_t lanes;
	if (s->kind == IR_S_FOR && s->u.for_.kind == TS_FOR_VECTORIZED &&
	    ir_is_const_int(s->u.for_.extent, &lanes) && lanes > 2 && lanes <= MAX_LANES &&
	    !pow2(lanes))
		return split_pow2(ctx, s, lanes);
	if (s->kind == IR_S_FOR && s->u.for_.kind == TS_FOR_VECTORIZED)
		return vectorize_loop(ctx, s);
	return ir_stmt_map_children(ctx, s, mutate, NULL, data);
}

ts_stmt *cg_vectorize(ts_ctx *ctx, ts_stmt *s)
{
	if (!s) {
		ts_error(ctx, TS_ERR_INVALID, "vectorize: no statement (NULL)");
		return NULL;
	}
	return mutate(ctx, s, NULL);
}
