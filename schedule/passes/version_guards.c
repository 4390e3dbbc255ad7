/*
 * version_guards.c - whole tiles run without the guards of symbolic extents.
 *
 * schedule_ops guards every point of a stage whose extent is a size
 * variable (te.h ts_size_var) with likely(index < n).  Tested point by
 * point, such a guard leaves vector stores masked and accumulators in
 * memory.  This pass tests each guard once per tile instead, at the
 * outermost place it can: the top of the body of a loop (or of the
 * function) below which every variable the guard uses is bound by a loop
 * of constant range in which the guard is monotone.  There the guard's
 * worst corner decides for the whole tile:
 *
 *     for f { if (worst(c1) && worst(c2)) body[likely(c1), likely(c2) := true]
 *             else body[likely(c1), likely(c2) := c1, c2] }
 *
 * Full tiles take the first copy, edge tiles the guarded one.  Guards that
 * cannot move as high (a reduction's, under a loop whose extent is known
 * only at run time) are taken at a deeper loop of each copy.  When the
 * worst corner is linear in the loop's own variable v (a*v + b < n, a > 0
 * constant), the loop is split at the first v where it fails instead of
 * testing every iteration: for v in [min, p) the unguarded body, then for v
 * in [p, end) the guarded one, p = min(end, max(min, ceil((n - b) / a))),
 * so the main loop keeps its registers to itself.  A path through
 * the copies splits at most MAX_SPLITS times, so code grows by a bounded
 * factor.  Guards with no size variable are loop_partition's.
 */
#include "arith.h"
#include "passes.h"

#define MAX_SPLITS 4
#define MAX_INNER 256
#define MAX_ATOMS 32

/* A variable bound inside the place being versioned: a loop of constant
 * range, or anything else (lo > hi), which no guard may use. */
typedef struct inner {
	const ts_expr *var;
	int64_t lo, hi;
} inner;

typedef struct collect {
	ts_ctx *ctx;
	inner in[MAX_INNER];
	int nin;
	bool overflow;            /* more inner bindings than in[] holds */
	ts_expr *atom[MAX_ATOMS]; /* conditions c of likely(c) to hoist */
	ts_expr *worst[MAX_ATOMS];
	int natoms;
} collect;

static bool size_var_fn(const ts_expr *e, const void *data)
{
	return e->kind == IR_VAR && ts_ctx_size_var_index(data, e) >= 0;
}

static bool opaque_fn(const ts_expr *e, const void *data)
{
	(void)data;
	return e->kind == IR_LOAD || e->kind == IR_READ || e->kind == IR_CALL;
}

/* The value of x that makes the comparison `a op b` hardest to meet;
 * false when c does not vary monotonically in x. */
static bool worst_value(const inner *x, ts_expr *a, ts_expr *b, ir_expr_kind op, int64_t *v)
{
	ir_mono m = ir_monotone_diff(a, b, x->var);
	if (m == IR_MONO_UNKNOWN)
		return false;
	bool less = op == IR_LT || op == IR_LE; /* hardest where a - b is largest */
	*v = (m == IR_MONO_UP) == less ? x->hi : x->lo;
	return true;
}

/* c at its worst corner over the inner loops; NULL when c is not a
 * conjunction of comparisons monotone in each inner variable it uses. */
static ts_expr *worst_of(collect *c, ts_expr *e)
{
	ts_ctx *ctx = c->ctx;
	if (e->kind == IR_AND) {
		ts_expr *a = worst_of(c, e->u.bin.a), *b = a ? worst_of(c, e->u.bin.b) : NULL;
		return b ? ts_and(ctx, a, b) : NULL;
	}
	if (e->kind != IR_LT && e->kind != IR_LE && e->kind != IR_GT && e->kind != IR_GE)
		return NULL;
	ts_expr *vars[MAX_INNER], *vals[MAX_INNER];
	int n = 0;
	for (int i = 0; i < c->nin; i++) {
		if (!ir_expr_uses_var(e, c->in[i].var))
			continue;
		int64_t v;
		if (c->in[i].lo > c->in[i].hi ||
		    !worst_value(&c->in[i], e->u.bin.a, e->u.bin.b, e->kind, &v))
			return NULL;
		vars[n] = (ts_expr *)c->in[i].var;
		vals[n++] = ts_const(ctx, c->in[i].var->dtype, v);
	}
	return n ? ir_substitute(ctx, e, n, vars, vals) : e;
}

static void consider(collect *c, ts_expr *cond)
{
	if (cond->kind == IR_AND) {
		consider(c, cond->u.bin.a);
		consider(c, cond->u.bin.b);
		return;
	}
	if (cond->kind != IR_CALL || cond->u.call.op != IR_INTRIN_LIKELY)
		return;
	ts_expr *atom = cond->u.call.args[0];
	if (!ir_expr_any(atom, size_var_fn, c->ctx) || ir_expr_any(atom, opaque_fn, NULL) ||
	    c->overflow || c->natoms >= MAX_ATOMS)
		return;
	for (int i = 0; i < c->natoms; i++)
		if (ir_expr_equal(c->atom[i], atom))
			return;
	ts_expr *w = worst_of(c, atom);
	if (w) {
		c->atom[c->natoms] = atom;
		c->worst[c->natoms++] = w;
	}
}

static void push(collect *c, const ts_expr *var, const ts_stmt *s)
{
	int64_t lo = 1, ext = 0; /* opaque unless a loop of constant range */
	if (s->kind == IR_S_FOR && ir_is_const_int(s->u.for_.min, &lo) &&
	    ir_is_const_int(s->u.for_.extent, &ext) && ext > 0)
		ext = lo + ext - 1;
	else
		lo = 1, ext = 0;
	if (c->nin < MAX_INNER)
		c->in[c->nin++] = (inner){var, lo, ext};
	else
		c->overflow = true;
}

/* Every hoistable guard in s, with the bindings between the place and it. */
static void gather(collect *c, ts_stmt *s)
{
	if (!s)
		return;
	int saved = c->nin;
	switch (s->kind) {
	case IR_S_FOR:
		push(c, s->u.for_.var, s);
		gather(c, s->u.for_.body);
		break;
	case IR_S_LET:
		push(c, s->u.let.var, s);
		gather(c, s->u.let.body);
		break;
	case IR_S_IF:
		consider(c, s->u.if_.cond);
		gather(c, s->u.if_.then_s);
		gather(c, s->u.if_.else_s);
		break;
	case IR_S_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			gather(c, s->u.seq.s[i]);
		break;
	case IR_S_ALLOCATE:
		gather(c, s->u.alloc.body);
		break;
	default:
		break;
	}
	c->nin = saved;
}

/* ---- rewriting ----------------------------------------------------------------- */

typedef struct rewrite {
	const collect *c;
	bool holds; /* the fast copy: the atoms are true */
} rewrite;

static ts_expr *replace_fn(ts_ctx *ctx, ts_expr *e, void *data)
{
	rewrite *r = data;
	ts_expr *m = ir_expr_map_children(ctx, e, replace_fn, data);
	if (!m || m->kind != IR_CALL || m->u.call.op != IR_INTRIN_LIKELY)
		return m;
	for (int i = 0; i < r->c->natoms; i++)
		if (ir_expr_equal(m->u.call.args[0], r->c->atom[i]))
			return r->holds ? ts_const(ctx, ts_bool, 1) : m->u.call.args[0];
	return m;
}

static ts_stmt *replace_stmt(ts_ctx *ctx, ts_stmt *s, void *data)
{
	return ir_stmt_map_children(ctx, s, replace_stmt, replace_fn, data);
}

typedef struct walk {
	int splits; /* along the current path */
} walk;

/* The first v in the loop where `w` (an atom at its worst corner, v's
 * loop outside) fails, if w is a*v + b < n or <= n with a > 0 constant;
 * NULL otherwise. */
static ts_expr *first_failing(ts_ctx *ctx, ts_expr *w, ts_expr *v)
{
	if ((w->kind != IR_LT && w->kind != IR_LE) ||
	    ir_monotone_diff(w->u.bin.a, w->u.bin.b, v) != IR_MONO_UP)
		return NULL;
	ts_expr *zero = ts_const(ctx, v->dtype, 0), *one = ts_const(ctx, v->dtype, 1);
	ts_expr *diff = ts_sub(ctx, w->u.bin.a, w->u.bin.b);
	ts_expr *d0 = diff ? ir_simplify(ctx, ir_substitute(ctx, diff, 1, &v, &zero), 0, NULL) : NULL;
	ts_expr *d1 = diff ? ir_simplify(ctx, ir_substitute(ctx, diff, 1, &v, &one), 0, NULL) : NULL;
	ts_expr *step = d0 && d1 ? ir_simplify(ctx, ts_sub(ctx, d1, d0), 0, NULL) : NULL;
	int64_t a, rest;
	if (!step || !ir_is_const_int(step, &a) || a <= 0)
		return NULL;
	/* linear: diff - d0 - a*v is 0 */
	ts_expr *r = ir_simplify(ctx, ts_sub(ctx, ts_sub(ctx, diff, d0), ts_mul(ctx, v, step)), 0, NULL);
	if (!r || !ir_is_const_int(r, &rest) || rest != 0)
		return NULL;
	/* d0 + a*v < 0  <=>  v < ceil(-d0 / a);  d0 + a*v <= 0  <=>  v < floor(-d0 / a) + 1 */
	ts_expr *neg = ts_sub(ctx, zero, d0);
	return w->kind == IR_LT ? ts_floordiv(ctx, ts_add(ctx, neg, ts_const(ctx, v->dtype, a - 1)), step)
				: ts_add(ctx, ts_floordiv(ctx, neg, step), one);
}

static ts_stmt *version(ts_ctx *ctx, ts_stmt *s, walk *w);
static ts_stmt *descend(ts_ctx *ctx, ts_stmt *s, void *data);

/* The guards of s that hoist to its top (NULL past MAX_SPLITS). */
static collect *gathered(ts_ctx *ctx, ts_stmt *s, const walk *w)
{
	collect *c = w->splits < MAX_SPLITS ? ts_alloc(ctx, sizeof(*c)) : NULL;
	if (c) {
		c->ctx = ctx;
		gather(c, s);
	}
	return c;
}

/* s with c's atoms true (*fast) and plain (*slow), each then continued by
 * next one split deeper; false on failure. */
static bool copies(ts_ctx *ctx, ts_stmt *s, const collect *c, walk *w,
		   ts_stmt *(*next)(ts_ctx *, ts_stmt *, void *), ts_stmt **fast, ts_stmt **slow)
{
	*fast = replace_stmt(ctx, s, &(rewrite){c, true});
	*slow = replace_stmt(ctx, s, &(rewrite){c, false});
	if (!*fast || !*slow)
		return false;
	w->splits++;
	*fast = next(ctx, *fast, w);
	*slow = *fast ? next(ctx, *slow, w) : NULL;
	w->splits--;
	return *slow != NULL;
}

static ts_stmt *version_next(ts_ctx *ctx, ts_stmt *s, void *data)
{
	return version(ctx, s, data);
}

/* Loop s over [lo, hi) with body b: hi - lo may be 0 or less, so the loop
 * runs under hi > lo, with an extent that stays positive when the bounds
 * fold to constants (a specialization's). */
static ts_stmt *part(ts_ctx *ctx, const ts_stmt *s, ts_expr *lo, ts_expr *hi, ts_stmt *b)
{
	ts_expr *ext = ts_max(ctx, ts_sub(ctx, hi, lo), ts_const(ctx, lo->dtype, 1));
	ts_stmt *loop = ext ? ir_for(ctx, s->u.for_.var, lo, ext, s->u.for_.kind, s->u.for_.thread, b)
			    : NULL;
	return loop ? ir_if(ctx, ts_lt(ctx, lo, hi), loop, NULL) : NULL;
}

/* Loop s split at the first iteration one of c's guards linear in its
 * variable fails (see the top), the others left to each part; NULL when c
 * has no such guard (the error slot says whether that is a failure). */
static ts_stmt *split_loop(ts_ctx *ctx, ts_stmt *s, const collect *c, walk *w)
{
	ts_expr *v = s->u.for_.var, *p = NULL;
	collect *lin = ts_alloc(ctx, sizeof(*lin));
	for (int i = 0; lin && i < c->natoms; i++) {
		ts_expr *f = ir_expr_uses_var(c->worst[i], v) ? first_failing(ctx, c->worst[i], v) : NULL;
		if (!f)
			continue;
		p = p ? ts_min(ctx, p, f) : f;
		lin->atom[lin->natoms] = c->atom[i];
		lin->worst[lin->natoms++] = c->worst[i];
	}
	if (!p)
		return NULL;
	ts_expr *lo = s->u.for_.min, *end = ts_add(ctx, lo, s->u.for_.extent);
	ts_stmt *fast, *slow;
	p = ir_simplify(ctx, ts_min(ctx, end, ts_max(ctx, lo, p)), 0, NULL);
	if (!p || !copies(ctx, s->u.for_.body, lin, w, version_next, &fast, &slow))
		return NULL;
	ts_stmt *main = part(ctx, s, lo, p, fast);
	ts_stmt *tail = main ? part(ctx, s, p, end, slow) : NULL;
	return tail ? ir_seq2(ctx, main, tail) : NULL;
}

/* s versioned on the guards c gathered from it (none: s as it is, its
 * loops' bodies versioned). */
static ts_stmt *version_with(ts_ctx *ctx, ts_stmt *s, const collect *c, walk *w)
{
	if (!c || !c->natoms)
		return descend(ctx, s, w);
	ts_expr *test = c->worst[0];
	for (int i = 1; i < c->natoms && test; i++)
		test = ts_and(ctx, test, c->worst[i]);
	ts_stmt *fast, *slow;
	if (!test || !copies(ctx, s, c, w, descend, &fast, &slow))
		return NULL;
	return ir_if(ctx, test, fast, slow);
}

static ts_stmt *version(ts_ctx *ctx, ts_stmt *s, walk *w)
{
	return version_with(ctx, s, gathered(ctx, s, w), w);
}

/* s with the body of every loop below it versioned: a loop is split where
 * a guard linear in its variable can, else its body versioned. */
static ts_stmt *descend(ts_ctx *ctx, ts_stmt *s, void *data)
{
	walk *w = data;
	if (s->kind != IR_S_FOR)
		return ir_stmt_map_children(ctx, s, descend, NULL, data);
	/* the bodies of vector, unrolled and thread loops stay straight */
	if (s->u.for_.kind != TS_FOR_SERIAL && s->u.for_.kind != TS_FOR_PARALLEL)
		return ir_stmt_map_children(ctx, s, descend, NULL, data);
	collect *c = gathered(ctx, s->u.for_.body, w); /* once, for both ways */
	ts_stmt *split = c ? split_loop(ctx, s, c, w) : NULL;
	if (split || ts_last_status(ctx) != TS_OK)
		return split;
	ts_stmt *body = version_with(ctx, s->u.for_.body, c, w);
	if (!body)
		return NULL;
	if (body == s->u.for_.body)
		return s;
	return ir_for(ctx, s->u.for_.var, s->u.for_.min, s->u.for_.extent, s->u.for_.kind,
		      s->u.for_.thread, body);
}

ts_stmt *pass_version_guards(ts_ctx *ctx, ts_stmt *s)
{
	if (!s)
		return NULL;
	if (ts_ctx_size_var_count(ctx) == 0) /* nothing symbolic in this context */
		return s;
	walk w = {0};
	return version(ctx, s, &w);
}
