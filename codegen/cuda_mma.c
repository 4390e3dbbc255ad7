/*
 * cuda_mma.c - tensorized nests on a warp's tensor cores (cuda_mma.h).
 *
 * Two walks over a kernel: the first matches and records the updates
 * (their stores name the accumulators, and one that does not match is
 * refused there, saying why, before a nest that reads its accumulator
 * could only say that it reads none); the second checks that a whole warp
 * runs each tensorized nest with one tile, matches the other nests, and
 * checks that nothing else touches an accumulator, since a lane holds only
 * 8 of each tile's 256 elements.
 */
#include "cuda_mma.h"

#include <stdarg.h>
#include <stdio.h>

#include "arith.h"
#include "ctx.h"
#include "printer.h"

#define MAX_CONDS 64

typedef struct scan {
	ts_ctx *ctx;
	cg_mma *mm;
	const int64_t *block;
	bool updates;           /* first walk: record accumulators only */
	const ts_stmt *x_loop;  /* enclosing loop bound to threadIdx.x */
	const ts_stmt *inner;   /* innermost enclosing loop */
	ts_expr *cond[MAX_CONDS];
	int ncond;
	ts_status st;
} scan;

__attribute__((format(printf, 3, 4)))
static bool fail(scan *sc, const ts_stmt *loop, const char *fmt, ...)
{
	if (sc->st != TS_OK)
		return false;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sc->st = loop ? ts_error(sc->ctx, TS_ERR_INVALID, "tensorize: loop '%s': %s",
				 loop->u.for_.var->u.var.name, msg)
		      : ts_error(sc->ctx, TS_ERR_INVALID, "tensorize: %s", msg);
	return false;
}

static bool is_f32(ts_dtype t)
{
	return ts_dtype_eq(t, ts_float32);
}

static ts_expr *simp(scan *sc, ts_expr *e)
{
	ts_expr *r = e ? ir_simplify(sc->ctx, e, 0, NULL) : NULL;
	if (!r && sc->st == TS_OK)
		sc->st = ts_last_status(sc->ctx) != TS_OK ? ts_last_status(sc->ctx) : TS_ERR_NOMEM;
	return r;
}

static bool const_of(scan *sc, ts_expr *e, int64_t *v)
{
	e = simp(sc, e);
	return e && ir_is_const_int(e, v);
}

/* e with vars[i] replaced by vals[i] (each cast to its variable's type). */
static ts_expr *subst(ts_ctx *ctx, ts_expr *e, int n, ts_expr *const *vars, ts_expr *const *vals)
{
	ts_expr *v[4];
	for (int i = 0; i < n; i++)
		if (!(v[i] = ir_index_cast(ctx, vals[i], vars[i]->dtype)))
			return NULL;
	return ir_substitute(ctx, e, n, vars, v);
}

/* ---- the accumulator's layout ------------------------------------------------ */

/* Row stride W of an accumulator: rows of a multiple of 16 elements, a
 * multiple of 16 rows (0: not such a buffer). */
static int64_t row_stride(const ts_buffer *b)
{
	if (b->ndim < 2 || b->strides[b->ndim - 1] != 1)
		return 0;
	int64_t w = b->strides[b->ndim - 2];
	return w > 0 && w % 16 == 0 && b->size % (16 * w) == 0 ? w : 0;
}

/* idx (an element of acc) is base + row * W + col over the nest's nv
 * variables, base a tile corner (row and column multiples of 16); sets
 * *row, *col and n->tile. */
static bool tile_of(scan *sc, const ts_stmt *loop, const ts_buffer *acc, ts_expr *idx,
		    ts_expr *const *vars, int nv, ts_expr **row, ts_expr **col, cg_mma_nest *n)
{
	ts_ctx *ctx = sc->ctx;
	int64_t w = row_stride(acc);
	if (!w)
		return fail(sc, loop, "the accumulator %s (%lld elements) needs rows of a multiple of 16 "
			    "elements, a multiple of 16 of them, packed", acc->name, (long long)acc->size);
	ts_dtype it = idx->dtype;
	ts_expr *zero[4], *one[4];
	for (int i = 0; i < nv; i++) {
		zero[i] = ts_const(ctx, vars[i]->dtype, 0);
		one[i] = ts_const(ctx, vars[i]->dtype, 1);
	}
	ts_expr *base = simp(sc, subst(ctx, idx, nv, vars, zero));
	if (!base)
		return false;
	*row = *col = NULL;
	for (int i = 0; i < nv; i++) {
		ts_expr *at[4];
		for (int j = 0; j < nv; j++)
			at[j] = j == i ? one[j] : zero[j];
		int64_t d;
		if (!const_of(sc, ts_sub(ctx, subst(ctx, idx, nv, vars, at), base), &d))
			return sc->st == TS_OK ? fail(sc, loop, "the accumulator's index %s is not affine in "
						      "the nest's loops", ir_expr_str(ctx, idx)) : false;
		if (d == w && !*row)
			*row = vars[i];
		else if (d == 1 && !*col)
			*col = vars[i];
		else if (d != 0)
			return fail(sc, loop, "loop '%s' steps the accumulator %s by %lld elements; the tile's "
				    "rows step by %lld and its columns by 1", vars[i]->u.var.name, acc->name,
				    (long long)d, (long long)w);
	}
	if (!*row || !*col)
		return fail(sc, loop, "the nest does not cover a 16 x 16 tile of the accumulator %s (one "
			    "loop for its rows, one for its columns)", acc->name);
	int64_t rest, m1 = 1, m2 = 1;
	ts_expr *lin = ts_add(ctx, base, ts_add(ctx, ts_mul(ctx, ir_index_cast(ctx, *row, it),
							     ts_const(ctx, it, w)),
						ir_index_cast(ctx, *col, it)));
	if (!const_of(sc, ts_sub(ctx, idx, lin), &rest) || rest != 0)
		return sc->st == TS_OK ? fail(sc, loop, "the accumulator's index %s is not affine in the "
					      "nest's loops", ir_expr_str(ctx, idx)) : false;
	ts_expr *c16 = ts_const(ctx, it, 16), *cw = ts_const(ctx, it, w);
	/* base = 16 i * W + 16 j: its form shows it (a multiple of 16 W plus
	 * one of 16 below W), or its value does */
	bool corner = ir_multiple_of(base, 16 * w);
	if (!corner && (!const_of(sc, ts_floormod(ctx, base, c16), &m1) ||
			!const_of(sc, ts_floormod(ctx, ts_floordiv(ctx, base, cw), c16), &m2) || m1 || m2))
		return sc->st == TS_OK ? fail(sc, loop, "the tile at element %s of %s is not provably at "
					      "a row and a column that are multiples of 16",
					      ir_expr_str(ctx, base), acc->name) : false;
	/* tile (i, j) of W / 16 per row, 8 registers each */
	ts_expr *tile = ts_add(ctx, ts_mul(ctx, ts_floordiv(ctx, base, ts_const(ctx, it, 16 * w)),
					   ts_const(ctx, it, w / 16)),
			       ts_floordiv(ctx, ts_floormod(ctx, base, cw), c16));
	n->tile = simp(sc, ts_mul(ctx, tile, ts_const(ctx, it, 8)));
	return n->tile != NULL;
}

/* ---- matching the nests ---------------------------------------------------------- */

static int acc_index(const cg_mma *mm, const ts_buffer *b)
{
	for (int i = 0; i < mm->nacc; i++)
		if (mm->acc[i] == b)
			return i;
	return -1;
}

static bool add_acc(scan *sc, const ts_stmt *loop, ts_buffer *b)
{
	cg_mma *mm = sc->mm;
	if (acc_index(mm, b) >= 0)
		return true;
	if (mm->nacc == CG_MMA_MAX_ACC)
		return fail(sc, loop, "more than %d accumulators in one kernel", CG_MMA_MAX_ACC);
	int64_t w = row_stride(b);
	if (!w)
		return fail(sc, loop, "the accumulator %s (%lld elements) needs rows of a multiple of 16 "
			    "elements, a multiple of 16 of them, packed", b->name, (long long)b->size);
	int64_t regs = b->size / 32;
	ts_buffer *f = ir_buffer_new(sc->ctx, b->name, ts_float32, 1, &regs, TS_SCOPE_LOCAL);
	if (!f) {
		sc->st = ts_last_status(sc->ctx);
		return false;
	}
	mm->acc[mm->nacc] = b;
	mm->frag[mm->nacc++] = f;
	return true;
}

/* The loops of the nest from top: from 0, of extent 16, plain inside top. */
static int peel(scan *sc, const ts_stmt *top, ts_expr **vars, const ts_stmt **body)
{
	const ts_stmt *s = top;
	int n = 0;
	while (s->kind == IR_S_FOR && n < 3) {
		int64_t lo, ext;
		bool is16 = ir_is_const_int(s->u.for_.min, &lo) && lo == 0 &&
			    ir_is_const_int(s->u.for_.extent, &ext) && ext == 16;
		if (n == 2 && !is16)
			break; /* a loop of an elementwise nest's body */
		if (!is16)
			return fail(sc, top, "loop '%s' of the nest does not run from 0 to 16 (every loop of "
				    "the MMA's nest is a split by 16 of a shape the tiles divide)",
				    s->u.for_.var->u.var.name), -1;
		if (n > 0 && s->u.for_.kind != TS_FOR_SERIAL)
			return fail(sc, top, "loop '%s' inside it is %s; the MMA's inner loops stay plain",
				    s->u.for_.var->u.var.name, ts_for_kind_name(s->u.for_.kind)), -1;
		vars[n++] = s->u.for_.var;
		s = s->u.for_.body;
	}
	if (n < 2)
		return fail(sc, top, "the nest has one loop; the MMA takes a 16 x 16 tile (16 x 16 x 16 "
			    "for the update)"), -1;
	*body = s;
	return n;
}

/* cast(float32, a 16-bit float load), or round_tf32(a float32 load): the
 * load's buffer and index, and the operand's type. */
static ts_expr *operand(ts_expr *e, ts_buffer **buf, cg_mma_type *type)
{
	ts_expr *l = NULL;
	if (e->kind == IR_CAST && is_f32(e->dtype) && e->u.un.a->dtype.bits == 16 &&
	    ts_dtype_is_float(e->u.un.a->dtype)) {
		l = e->u.un.a;
		*type = l->dtype.code == TS_TYPE_BFLOAT ? CG_MMA_BF16 : CG_MMA_F16;
	} else if (e->kind == IR_CALL && e->u.call.op == IR_INTRIN_ROUND_TF32 && is_f32(e->dtype)) {
		l = e->u.call.args[0];
		*type = CG_MMA_TF32;
	}
	if (!l || l->kind != IR_LOAD || l->dtype.lanes != 1)
		return NULL;
	*buf = l->u.load.buf;
	return l->u.load.index;
}

/* acc[i] = acc[i] + cast(float32, x) * cast(float32, y) (either order). */
static bool match_update(scan *sc, const ts_stmt *top, ts_expr **vars, const ts_stmt *st,
			 cg_mma_nest *n)
{
	static const char what[] = "its body is not acc[m, n] = acc[m, n] + cast(float32, a[m, k]) * "
				   "cast(float32, b[k, n]) with float16 or bfloat16 a and b, or with "
				   "round_tf32(a[m, k]) and round_tf32(b[k, n]) of float32 ones (a guard "
				   "there means the tiles do not divide the shape)";
	if (st->kind != IR_S_STORE)
		return fail(sc, top, "%s", what);
	ts_buffer *acc = st->u.store.buf;
	ts_expr *idx = st->u.store.index, *v = st->u.store.value;
	if (v->kind != IR_ADD)
		return fail(sc, top, "%s", what);
	ts_expr *l = v->u.bin.a, *p = v->u.bin.b;
	if (l->kind != IR_LOAD) {
		ts_expr *t = l;
		l = p;
		p = t;
	}
	if (l->kind != IR_LOAD || l->u.load.buf != acc || !ir_expr_equal(l->u.load.index, idx) ||
	    p->kind != IR_MUL)
		return fail(sc, top, "%s", what);
	if (!is_f32(acc->dtype) || acc->scope != TS_SCOPE_LOCAL)
		return fail(sc, top, "it accumulates into %s, a %s %s buffer; the MMA's accumulator is a "
			    "local float32 buffer (cache_write(C, local))", acc->name,
			    ts_scope_name(acc->scope), ts_dtype_str(acc->dtype, (char[24]){0}));
	ts_buffer *xb = NULL, *yb = NULL;
	cg_mma_type xt = CG_MMA_F16, yt = CG_MMA_F16;
	ts_expr *x = operand(p->u.bin.a, &xb, &xt), *y = operand(p->u.bin.b, &yb, &yt);
	if (!x || !y)
		return fail(sc, top, "%s", what);
	if (xt != yt)
		return fail(sc, top, "its operands %s and %s are of two types (float16, bfloat16, TF32)",
			    xb->name, yb->name);
	ts_expr *row = NULL, *col = NULL;
	if (!tile_of(sc, top, acc, idx, vars, 3, &row, &col, n))
		return false;
	ts_expr *k = NULL;
	for (int i = 0; i < 3; i++)
		if (vars[i] != row && vars[i] != col)
			k = vars[i];
	if (!ir_expr_uses_var(x, col) && !ir_expr_uses_var(y, row)) {
		n->a = xb, n->a_idx = x, n->b = yb, n->b_idx = y;
	} else if (!ir_expr_uses_var(y, col) && !ir_expr_uses_var(x, row)) {
		n->a = yb, n->a_idx = y, n->b = xb, n->b_idx = x;
	} else {
		return fail(sc, top, "an operand depends on both the row and the column of the tile");
	}
	n->update = true;
	n->m = row, n->n = col, n->k = k;
	n->type = xt;
	n->acc = acc_index(sc->mm, acc);
	return n->acc >= 0 || fail(sc, top, "internal: accumulator %s not recorded", acc->name);
}

/* The accumulator accesses of an elementwise nest's body: all of one
 * accumulator, all at one index. */
typedef struct accesses {
	const cg_mma *mm;
	const ts_buffer *acc;
	ts_expr *idx;
	bool mixed;
} accesses;

static void note_access(accesses *a, const ts_buffer *b, ts_expr *idx)
{
	if (acc_index(a->mm, b) < 0)
		return;
	if (!a->acc) {
		a->acc = b;
		a->idx = idx;
	} else if (a->acc != b || !ir_expr_equal(a->idx, idx)) {
		a->mixed = true;
	}
}

static bool access_expr(ts_expr *e, void *data)
{
	if (e->kind == IR_LOAD)
		note_access(data, e->u.load.buf, e->u.load.index);
	return true;
}

static bool access_stmt(ts_stmt *s, void *data)
{
	if (s->kind == IR_S_STORE)
		note_access(data, s->u.store.buf, s->u.store.index);
	return true;
}

static bool match_elementwise(scan *sc, const ts_stmt *top, ts_expr **vars, ts_stmt *body,
			      cg_mma_nest *n)
{
	accesses a = {.mm = sc->mm};
	ir_stmt_visit(body, access_stmt, access_expr, &a);
	if (!a.acc)
		return fail(sc, top, "its nest reads and writes no accumulator of an MMA update "
			    "(tensorize the update, its init and the tile of the stage that reads it)");
	if (a.mixed)
		return fail(sc, top, "its body accesses accumulator elements other than the tile's "
			    "(m, n); each lane holds only its own");
	if (a.idx->dtype.lanes != 1)
		return fail(sc, top, "its body accesses the accumulator %s with vectors", a.acc->name);
	n->acc = acc_index(sc->mm, a.acc);
	n->body = body;
	n->idx = a.idx;
	return tile_of(sc, top, a.acc, a.idx, vars, 2, &n->row, &n->col, n);
}

static bool add_nest(scan *sc, const cg_mma_nest *n)
{
	cg_mma *mm = sc->mm;
	if (mm->nnest == mm->cap) {
		int cap = mm->cap ? mm->cap * 2 : 16;
		cg_mma_nest *g = ts_alloc_array(sc->ctx, (size_t)cap, sizeof(*g));
		if (!g) {
			sc->st = ts_last_status(sc->ctx);
			return false;
		}
		for (int i = 0; i < mm->nnest; i++)
			g[i] = mm->nest[i];
		mm->nest = g;
		mm->cap = cap;
	}
	mm->nest[mm->nnest++] = *n;
	return true;
}

static bool loads_memory(ts_expr *e, void *data)
{
	*(bool *)data |= e->kind == IR_LOAD;
	return true;
}

/* The whole warp reaches the nest together with the same tile. */
static bool warp_uniform(scan *sc, const ts_stmt *top)
{
	const int64_t *b = sc->block;
	int64_t threads = b[0] * b[1] * b[2];
	if (sc->x_loop)
		return fail(sc, top, "it is inside loop '%s' bound to threadIdx.x, so the lanes of a warp "
			    "would hold different tiles; bind warps to threadIdx.y/z and leave threadIdx.x "
			    "to the stages that share the work", sc->x_loop->u.for_.var->u.var.name);
	if (threads % 32)
		return fail(sc, top, "the block has %lld threads, not a whole number of warps",
			    (long long)threads);
	if (b[0] % 32 && threads > b[0])
		return fail(sc, top, "threadIdx.x has %lld threads, so a warp would span threads of "
			    "different threadIdx.y or z (make it a multiple of 32)", (long long)b[0]);
	for (int i = 0; i < sc->ncond; i++) {
		bool loads = false;
		ir_expr_visit(sc->cond[i], loads_memory, &loads);
		if (loads)
			return fail(sc, top, "it is under the condition %s, which reads memory; a warp "
				    "runs the MMA together", ir_expr_str(sc->ctx, sc->cond[i]));
	}
	return true;
}

static bool find_tensorized(ts_stmt *s, void *data)
{
	if (s->kind == IR_S_FOR && s->u.for_.kind == TS_FOR_TENSORIZED && !*(const ts_stmt **)data)
		*(const ts_stmt **)data = s;
	return true;
}

static bool find_barrier(ts_stmt *s, void *data)
{
	*(bool *)data |= s->kind == IR_S_BARRIER;
	return true;
}

/* First walk: the nest's loops, and an update matched and recorded (its
 * store names the accumulator; one that does not match is refused here,
 * saying why, before the nests that read its accumulator would miss it).
 * Second walk: a warp reaches the nest together, and the other nests are
 * matched and recorded. */
static void tensorized(scan *sc, ts_stmt *s)
{
	if (!sc->updates && cg_mma_find(sc->mm, s)) { /* an update, matched already */
		warp_uniform(sc, s);
		return;
	}
	ts_expr *vars[3];
	const ts_stmt *body;
	bool barrier = false;
	ir_stmt_visit(s, find_barrier, NULL, &barrier);
	if (barrier) {
		fail(sc, s, "a barrier was placed inside its nest: it writes a buffer that the block's "
		     "threads share (the accumulator must be local: cache_write(C, local))");
		return;
	}
	int nv = peel(sc, s, vars, &body);
	if (nv < 0 || (sc->updates && nv != 3))
		return;
	cg_mma_nest n = {.loop = s};
	if (sc->updates) {
		ts_buffer *b = body->kind == IR_S_STORE ? body->u.store.buf : NULL;
		if (b && is_f32(b->dtype) && b->scope == TS_SCOPE_LOCAL && !add_acc(sc, s, b))
			return;
		if (match_update(sc, s, vars, body, &n))
			add_nest(sc, &n);
		return;
	}
	if (!warp_uniform(sc, s))
		return;
	const ts_stmt *inner = NULL;
	ir_stmt_visit((ts_stmt *)body, find_tensorized, NULL, &inner);
	if (inner) {
		fail(sc, s, "loop '%s' inside its nest is tensorized too", inner->u.for_.var->u.var.name);
		return;
	}
	if (match_elementwise(sc, s, vars, (ts_stmt *)body, &n))
		add_nest(sc, &n);
}

static bool stray_expr(ts_expr *e, void *data)
{
	scan *sc = data;
	if (sc->st == TS_OK && e->kind == IR_LOAD && acc_index(sc->mm, e->u.load.buf) >= 0)
		fail(sc, sc->inner, "it reads the accumulator %s outside a tensorized nest (tensorize "
		     "the 16 x 16 tile of the stage that reads it)", e->u.load.buf->name);
	return sc->st == TS_OK;
}

static void walk(scan *sc, ts_stmt *s)
{
	if (!s || sc->st != TS_OK)
		return;
	switch (s->kind) {
	case IR_S_FOR: {
		if (!sc->updates)
			ir_expr_visit(s->u.for_.extent, stray_expr, sc);
		if (s->u.for_.kind == TS_FOR_TENSORIZED) {
			tensorized(sc, s);
			return;
		}
		const ts_stmt *x = sc->x_loop, *in = sc->inner;
		if (s->u.for_.kind == TS_FOR_THREAD && s->u.for_.thread == TS_THREAD_X)
			sc->x_loop = s;
		sc->inner = s;
		walk(sc, s->u.for_.body);
		sc->x_loop = x;
		sc->inner = in;
		return;
	}
	case IR_S_IF:
		if (!sc->updates)
			ir_expr_visit(s->u.if_.cond, stray_expr, sc);
		if (sc->ncond == MAX_CONDS) {
			fail(sc, sc->inner, "conditions nested deeper than %d", MAX_CONDS);
			return;
		}
		sc->cond[sc->ncond++] = s->u.if_.cond;
		walk(sc, s->u.if_.then_s);
		walk(sc, s->u.if_.else_s);
		sc->ncond--;
		return;
	case IR_S_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			walk(sc, s->u.seq.s[i]);
		return;
	case IR_S_LET:
		if (!sc->updates)
			ir_expr_visit(s->u.let.value, stray_expr, sc);
		walk(sc, s->u.let.body);
		return;
	case IR_S_ALLOCATE:
		walk(sc, s->u.alloc.body);
		return;
	case IR_S_STORE:
		if (sc->updates)
			return;
		if (acc_index(sc->mm, s->u.store.buf) >= 0)
			fail(sc, sc->inner, "it writes the accumulator %s outside a tensorized nest "
			     "(tensorize the update and its init)", s->u.store.buf->name);
		ir_expr_visit(s->u.store.index, stray_expr, sc);
		ir_expr_visit(s->u.store.value, stray_expr, sc);
		return;
	case IR_S_EVALUATE:
		if (!sc->updates)
			ir_expr_visit(s->u.eval.value, stray_expr, sc);
		return;
	case IR_S_PREFETCH:
		if (!sc->updates)
			ir_expr_visit(s->u.prefetch.value, stray_expr, sc);
		return;
	case IR_S_BARRIER: case IR_S_PROVIDE: case IR_S_REALIZE: case IR_STMT_KIND_COUNT:
		return;
	}
}

ts_status cg_mma_scan(ts_ctx *ctx, ts_stmt *body, const int64_t block[3], cg_mma *mm)
{
	*mm = (cg_mma){0};
	scan sc = {.ctx = ctx, .mm = mm, .block = block, .updates = true};
	walk(&sc, body);
	if (sc.st != TS_OK)
		return sc.st;
	mm->g = ts_var(ctx, "mma_g");
	mm->t = ts_var(ctx, "mma_t");
	mm->r = ts_var(ctx, "mma_r");
	mm->q0 = ts_var(ctx, "mma_q0");
	mm->q1 = ts_var(ctx, "mma_q1");
	if (!mm->g || !mm->t || !mm->r || !mm->q0 || !mm->q1)
		return ts_last_status(ctx);
	sc.updates = false;
	walk(&sc, body);
	return sc.st;
}

const cg_mma_nest *cg_mma_find(const cg_mma *mm, const ts_stmt *s)
{
	for (int i = 0; i < mm->nnest; i++)
		if (mm->nest[i].loop == s)
			return &mm->nest[i];
	return NULL;
}

int cg_mma_acc_of(const cg_mma *mm, const ts_buffer *b)
{
	return acc_index(mm, b);
}

/* ---- per-lane statements ----------------------------------------------------------- */

/* a * v + c for a lane variable v */
static ts_expr *lane(ts_ctx *ctx, ts_expr *v, int64_t a, int64_t c)
{
	return ts_add(ctx, ts_mul(ctx, ts_int(ctx, a), v), ts_int(ctx, c));
}

typedef struct to_reg {
	const cg_mma *mm;
	ts_buffer *acc, *frag;
	ts_expr *reg;
} to_reg;

static ts_expr *reg_expr(ts_ctx *ctx, ts_expr *e, void *data)
{
	to_reg *r = data;
	if (e->kind == IR_LOAD && e->u.load.buf == r->acc)
		return ts_load(ctx, r->frag, r->reg);
	return ir_expr_map_children(ctx, e, reg_expr, data);
}

static ts_stmt *reg_stmt(ts_ctx *ctx, ts_stmt *s, void *data)
{
	to_reg *r = data;
	if (s->kind == IR_S_STORE && s->u.store.buf == r->acc) {
		ts_expr *v = reg_expr(ctx, s->u.store.value, data);
		return v ? ir_store(ctx, r->frag, r->reg, v) : NULL;
	}
	return ir_stmt_map_children(ctx, s, reg_stmt, reg_expr, data);
}

ts_stmt *cg_mma_slot(ts_ctx *ctx, const cg_mma *mm, const cg_mma_nest *n, int s)
{
	to_reg r = {mm, mm->acc[n->acc], mm->frag[n->acc], NULL};
	r.reg = ir_simplify(ctx, ts_add(ctx, n->tile, ts_const(ctx, n->tile->dtype, s)), 0, NULL);
	ts_stmt *b = r.reg ? reg_stmt(ctx, n->body, &r) : NULL;
	ts_expr *vars[2] = {n->row, n->col};
	ts_expr *vals[2] = {lane(ctx, mm->g, 1, 8 * ((s >> 1) & 1)),
			    lane(ctx, mm->t, 2, 8 * (s >> 2) + (s & 1))};
	ts_expr *v[2];
	for (int i = 0; i < 2; i++)
		if (!(v[i] = ir_index_cast(ctx, vals[i], vars[i]->dtype)))
			return NULL;
	b = b ? ir_stmt_substitute(ctx, b, 2, vars, v) : NULL;
	return b ? ir_simplify_stmt(ctx, b, 0, NULL) : NULL;
}

/* Operand element idx at v0 = e0, v1 = e1, simplified. */
static ts_expr *element(ts_ctx *ctx, ts_expr *idx, ts_expr *v0, ts_expr *e0, ts_expr *v1, ts_expr *e1)
{
	ts_expr *e = subst(ctx, idx, 2, (ts_expr *[]){v0, v1}, (ts_expr *[]){e0, e1});
	return e ? ir_simplify(ctx, e, 0, NULL) : NULL;
}

ts_expr *cg_mma_a_index(ts_ctx *ctx, const cg_mma *mm, const cg_mma_nest *n, int i)
{
	return element(ctx, n->a_idx, n->m, lane(ctx, mm->g, 1, 8 * ((i >> 1) & 1)),
		       n->k, lane(ctx, mm->t, 2, (i & 1) + 8 * (i >> 2)));
}

ts_expr *cg_mma_b_index(ts_ctx *ctx, const cg_mma *mm, const cg_mma_nest *n, int half, int i)
{
	return element(ctx, n->b_idx, n->k, lane(ctx, mm->t, 2, (i & 1) + 8 * (i >> 1)),
		       n->n, lane(ctx, mm->g, 1, 8 * half));
}

/* mma.sync m16n8k8 with TF32 operands: a_i at row g + 8 (i % 2), column
 * t + 4 (i / 2); b_i at row t + 4 i, column g (PTX's fragment layout). */
ts_expr *cg_mma_tf32_a_index(ts_ctx *ctx, const cg_mma *mm, const cg_mma_nest *n, int ks, int i)
{
	return element(ctx, n->a_idx, n->m, lane(ctx, mm->g, 1, 8 * (i & 1)),
		       n->k, lane(ctx, mm->t, 1, 4 * (i >> 1) + 8 * ks));
}

ts_expr *cg_mma_tf32_b_index(ts_ctx *ctx, const cg_mma *mm, const cg_mma_nest *n, int ks, int half,
			     int i)
{
	return element(ctx, n->b_idx, n->k, lane(ctx, mm->t, 1, 4 * i + 8 * ks),
		       n->n, lane(ctx, mm->g, 1, 8 * half));
}

ts_expr *cg_mma_c_index(ts_ctx *ctx, const cg_mma_nest *n, int half, int i)
{
	return ir_simplify(ctx, ts_add(ctx, n->tile, ts_const(ctx, n->tile->dtype, 4 * half + i)), 0,
			   NULL);
}

/* e's value as a constant, without recording anything on failure. */
static bool quiet_const(ts_ctx *ctx, ts_expr *e, int64_t *v)
{
	ts_expr *r = e ? ir_simplify(ctx, e, 0, NULL) : NULL;
	return r && ir_is_const_int(r, v);
}

ts_expr *cg_mma_ldsm_index(ts_ctx *ctx, const cg_mma *mm, const cg_mma_nest *n, bool b, bool *trans)
{
	const ts_buffer *buf = b ? n->b : n->a;
	ts_expr *idx = b ? n->b_idx : n->a_idx, *p = b ? n->n : n->m, *k = n->k;
	if (!n->update || n->type == CG_MMA_TF32 || buf->scope != TS_SCOPE_SHARED)
		return NULL; /* ldmatrix moves 16-bit elements */
	ts_status before = ts_last_status(ctx);
	ts_expr *vars[2] = {p, k};
	ts_expr *zero = ts_const(ctx, ts_int32, 0), *one = ts_const(ctx, ts_int32, 1);
	ts_expr *base = subst(ctx, idx, 2, vars, (ts_expr *[]){zero, zero});
	int64_t dp, dk, rest;
	if (!base || !quiet_const(ctx, ts_sub(ctx, subst(ctx, idx, 2, vars, (ts_expr *[]){one, zero}), base), &dp) ||
	    !quiet_const(ctx, ts_sub(ctx, subst(ctx, idx, 2, vars, (ts_expr *[]){zero, one}), base), &dk))
		goto none;
	ts_dtype it = idx->dtype;
	ts_expr *lin = ts_add(ctx, base, ts_add(ctx, ts_mul(ctx, ir_index_cast(ctx, p, it), ts_const(ctx, it, dp)),
					      ts_mul(ctx, ir_index_cast(ctx, k, it), ts_const(ctx, it, dk))));
	/* affine in both, rows of 8 contiguous elements starting at multiples
	 * of 8: 16-byte aligned in a 16-byte aligned shared buffer */
	if (!quiet_const(ctx, ts_sub(ctx, idx, lin), &rest) || rest != 0 || (dk != 1 && dp != 1) ||
	    (dk == 1 ? dp : dk) % 8 != 0 ||
	    !ir_multiple_of(base, 8))
		goto none;
	*trans = dk != 1;
	/* matrix i = laneid / 8 of A is (rows 8 * (i % 2), k 8 * (i / 2)); of B
	 * (columns 8 * (i / 2), k 8 * (i % 2)); the lane gives row laneid % 8
	 * of its matrix, along the operand's dimension that is not contiguous */
	ts_expr *pm = b ? mm->q1 : mm->q0, *km = b ? mm->q0 : mm->q1;
	ts_expr *pv = lane(ctx, pm, 8, 0), *kv = lane(ctx, km, 8, 0);
	if (*trans)
		kv = ts_add(ctx, kv, mm->r);
	else
		pv = ts_add(ctx, pv, mm->r);
	ts_expr *e = element(ctx, idx, p, pv, k, kv);
	if (e)
		return e;
none:
	if (before == TS_OK) /* what failed here only means: not this way */
		ts_clear_error(ctx);
	return NULL;
}
