/*
 * double_buffer.c - two copies of a stage's buffer, so that the fetch of a
 * loop's next step overlaps the work on the current one (ts_double_buffer).
 *
 * flatten marks the buffers of stages given ts_double_buffer.  Each is
 * allocated in the body of the loop its stage is computed at; that body,
 * seen through its allocations and sequences, is a list of statements:
 * the fetches, each storing into double-buffered buffers only, and the
 * rest, which read them.  The loop over v in [min, min + n),
 *
 *     for v { F(v); R(v) }
 *
 * becomes, with copies 0 and 1 of each buffer (the second named
 * "<buffer>.1"),
 *
 *     if (n > 0) F(min) into 0
 *     for p in [0, ceil(n / 2)) {              v = min + 2p
 *       if (v + 1 < min + n) F(v + 1) into 1
 *       R(v) reading 0
 *       if (v + 2 < min + n) F(v + 2) into 0
 *       if (v + 1 < min + n) R(v + 1) reading 1
 *     }
 *
 * or, where n is a constant, the loop over the n / 2 whole pairs without
 * the tests of v + 1 and, for an odd n, R(min + n - 1) reading 0 after
 * it (a tensorized update must not be under a test, cuda_mma.c).
 * The loop is unrolled by two so that each half names its copy (TVM keeps
 * one buffer of twice the size, indexed by v % 2): the CUDA barrier pass
 * (codegen/cuda_sync.c) then sees that a fetch and the reads next to it
 * touch different buffers, and puts one barrier per step where it put two,
 * and the cuda target makes the fetches asynchronous copies (cp.async)
 * that run while the other copy is read.  The guards depend on v alone,
 * so every thread of a block takes them alike and no barrier ends up
 * under a condition threads may take apart; simplify drops them where n
 * is even.
 *
 * Results do not change: each R reads the copy its own step's fetch
 * filled, and that copy is refilled only after R is done.  Moving a fetch
 * ahead of the statements before it is sound when it reads nothing the
 * loop writes (so the same values whenever it runs) and none of them
 * reads its buffer; anything else is refused, naming the loop, as is a
 * loop that is not sequential.  A loop of one step is left as it is.
 */
#include <string.h>

#include "arith.h"
#include "passes.h"

#define MAX_ITEMS 64
#define MAX_BUFS 32

typedef struct bufs {
	ts_buffer *b[MAX_BUFS];
	int n;
	bool over; /* more than fit: treated as every buffer */
} bufs;

typedef struct item {
	ts_stmt *s;
	bufs reads, writes;
	bool fetch;
} item;

/* The loop body seen through its allocations and sequences. */
typedef struct peeled {
	ts_stmt *alloc[MAX_BUFS];
	int nalloc;
	item items[MAX_ITEMS];
	int nitems;
	bool over;
} peeled;

typedef struct dbuf {
	ts_ctx *ctx;
	const ts_buffer *left; /* a double-buffered buffer in no loop's body */
	ts_buffer *done[MAX_BUFS]; /* double-buffered buffers handled */
	int ndone;
	/* while copying: each buffer and its twin */
	ts_buffer *from[MAX_BUFS], *to[MAX_BUFS];
	int nmap;
} dbuf;

static bool has(const bufs *s, const ts_buffer *b)
{
	if (s->over)
		return true;
	for (int i = 0; i < s->n; i++)
		if (s->b[i] == b)
			return true;
	return false;
}

static void add(bufs *s, ts_buffer *b)
{
	if (has(s, b))
		return;
	if (s->n == MAX_BUFS)
		s->over = true;
	else
		s->b[s->n++] = b;
}

static bool meet(const bufs *a, const bufs *b)
{
	if ((a->over && (b->n || b->over)) || (b->over && a->n))
		return true;
	for (int i = 0; i < a->n; i++)
		if (has(b, a->b[i]))
			return true;
	return false;
}

static bool note_load(ts_expr *e, void *data)
{
	if (e->kind == IR_LOAD)
		add(&((item *)data)->reads, e->u.load.buf);
	return true;
}

static bool note_store(ts_stmt *s, void *data)
{
	if (s->kind == IR_S_STORE)
		add(&((item *)data)->writes, s->u.store.buf);
	return true;
}

static bool done(const dbuf *d, const ts_buffer *b)
{
	for (int i = 0; i < d->ndone; i++)
		if (d->done[i] == b)
			return true;
	return false;
}

static void peel(peeled *p, ts_stmt *s)
{
	if (s->kind == IR_S_ALLOCATE) {
		if (p->nalloc == MAX_BUFS) {
			p->over = true;
			return;
		}
		p->alloc[p->nalloc++] = s;
		peel(p, s->u.alloc.body);
	} else if (s->kind == IR_S_SEQ) {
		for (int i = 0; i < s->u.seq.n; i++)
			peel(p, s->u.seq.s[i]);
	} else if (p->nitems == MAX_ITEMS) {
		p->over = true;
	} else {
		item *it = &p->items[p->nitems++];
		*it = (item){.s = s};
		ir_stmt_visit(s, note_store, note_load, it);
	}
}

/* The double-buffered buffers allocated in p not handled yet. */
static int pending(const dbuf *d, const peeled *p, ts_buffer **out)
{
	int n = 0;
	for (int i = 0; i < p->nalloc; i++) {
		ts_buffer *b = p->alloc[i]->u.alloc.buf;
		if (b->double_buffer && !done(d, b))
			out[n++] = b;
	}
	return n;
}

static ts_stmt *refuse(dbuf *d, const ts_buffer *b, const ts_stmt *loop, const char *why)
{
	ts_error(d->ctx, TS_ERR_INVALID, "lower: double_buffer of %s at the loop %s: %s", b->name,
		 loop->u.for_.var->u.var.name, why);
	return NULL;
}

/* Marks the fetches (statements storing only into the buffers db) and
 * checks they may move to the front; NULL, or the buffer and reason of
 * the first violation (in *why). */
static const ts_buffer *classify(peeled *p, ts_buffer *const *db, int ndb, const char **why)
{
	bufs dbs = {0}, written = {0};
	for (int i = 0; i < ndb; i++)
		add(&dbs, db[i]);
	for (int i = 0; i < p->nitems; i++) {
		item *it = &p->items[i];
		bool only_db = it->writes.n > 0 && !it->writes.over;
		for (int k = 0; only_db && k < it->writes.n; k++)
			only_db = has(&dbs, it->writes.b[k]);
		it->fetch = only_db && !meet(&it->reads, &dbs);
		for (int k = 0; k < it->writes.n; k++)
			add(&written, it->writes.b[k]);
		written.over |= it->writes.over;
	}
	for (int b = 0; b < ndb; b++) {
		bool fetched = false;
		for (int i = 0; i < p->nitems; i++) {
			const item *it = &p->items[i];
			if (!has(&it->writes, db[b]))
				continue;
			if (!it->fetch) {
				*why = "a statement that stores into it also stores elsewhere or reads a "
				       "double-buffered buffer (compute the stage at this loop, its fetch a "
				       "statement of its own)";
				return db[b];
			}
			fetched = true;
			if (meet(&it->reads, &written)) {
				*why = "its fetch reads a buffer the loop writes, so it cannot run a step ahead";
				return db[b];
			}
			for (int j = 0; j < i; j++)
				if (!p->items[j].fetch && has(&p->items[j].reads, db[b])) {
					*why = "the loop reads it before fetching it";
					return db[b];
				}
		}
		if (!fetched) {
			*why = "nothing in the loop's body stores into it at the top level (computed at "
			       "this loop, its fetch is a statement of its own: a store_at further out?)";
			return db[b];
		}
	}
	return NULL;
}

static ts_buffer *twin_of(const dbuf *d, const ts_buffer *b)
{
	for (int i = 0; i < d->nmap; i++)
		if (d->from[i] == b)
			return d->to[i];
	return NULL;
}

static ts_expr *swap_expr(ts_ctx *ctx, ts_expr *e, void *data)
{
	ts_expr *m = ir_expr_map_children(ctx, e, swap_expr, data);
	ts_buffer *t = m && m->kind == IR_LOAD ? twin_of(data, m->u.load.buf) : NULL;
	return t ? ts_load(ctx, t, m->u.load.index) : m;
}

static ts_stmt *swap_stmt(ts_ctx *ctx, ts_stmt *s, void *data)
{
	ts_stmt *m = ir_stmt_map_children(ctx, s, swap_stmt, swap_expr, data);
	ts_buffer *t = m && m->kind == IR_S_STORE ? twin_of(data, m->u.store.buf) : NULL;
	return t ? ir_store(ctx, t, m->u.store.index, m->u.store.value) : m;
}

/* The fetches (fetch true) or the rest of p at v = at, on copy 1 (the
 * twins) when second; NULL on failure. */
static ts_stmt *part(dbuf *d, const peeled *p, bool fetch, ts_expr *v, ts_expr *at, bool second)
{
	ts_stmt *list[MAX_ITEMS];
	int n = 0;
	for (int i = 0; i < p->nitems; i++) {
		if (p->items[i].fetch != fetch)
			continue;
		ts_stmt *s = ir_stmt_substitute(d->ctx, p->items[i].s, 1, &v, &at);
		if (s && second)
			s = swap_stmt(d->ctx, s, d);
		if (!s)
			return NULL;
		list[n++] = s;
	}
	return n ? ir_seq(d->ctx, n, list) : ir_evaluate(d->ctx, ts_int(d->ctx, 0));
}

static ts_stmt *guard(ts_ctx *ctx, ts_expr *cond, ts_stmt *s)
{
	return cond && s ? ir_if(ctx, cond, s, NULL) : NULL;
}

static ts_stmt *transform(dbuf *d, ts_stmt *loop, peeled *p, ts_buffer *const *db, int ndb)
{
	ts_ctx *ctx = d->ctx;
	ts_expr *v = loop->u.for_.var, *min = loop->u.for_.min, *n = loop->u.for_.extent;
	ts_dtype t = v->dtype;
	d->nmap = 0;
	for (int i = 0; i < ndb; i++) {
		ts_buffer *b = db[i];
		ts_buffer *c = ir_buffer_new(ctx, ts_sprintf(ctx, "%s.1", b->name), b->dtype, b->ndim,
					     b->shape, b->scope);
		if (!c)
			return NULL;
		memcpy(c->strides, b->strides, sizeof(c->strides));
		memcpy(c->dim_var, b->dim_var, sizeof(c->dim_var));
		c->size = b->size;
		c->double_buffer = true;
		d->from[d->nmap] = b;
		d->to[d->nmap++] = c;
		d->done[d->ndone++] = b;
		d->done[d->ndone++] = c;
	}
	ts_expr *pv = ts_var_typed(ctx, ts_sprintf(ctx, "%s.pair", v->u.var.name), t);
	/* folded, so the pass's output reads as it runs (2*p + 1, not
	 * 0 + 2*p + 1) */
	ts_expr *v0 = pv ? ir_simplify(ctx, ts_add(ctx, min, ts_mul(ctx, ts_const(ctx, t, 2), pv)), 0, NULL)
			 : NULL;
	ts_expr *v1 = v0 ? ir_simplify(ctx, ts_add(ctx, v0, ts_const(ctx, t, 1)), 0, NULL) : NULL;
	ts_expr *v2 = v0 ? ir_simplify(ctx, ts_add(ctx, v0, ts_const(ctx, t, 2)), 0, NULL) : NULL;
	ts_expr *end = ir_simplify(ctx, ts_add(ctx, min, n), 0, NULL);
	/* a constant number of steps: whole pairs, whose second half needs no
	 * test, and the odd last step after them (a tensorized update may not
	 * be guarded, cuda_mma.c) */
	int64_t steps;
	bool known = ir_is_const_int(n, &steps);
	ts_stmt *body[4] = {
		part(d, p, true, v, v1, true),
		part(d, p, false, v, v0, false),
		guard(ctx, ts_lt(ctx, v2, end), part(d, p, true, v, v2, false)),
		part(d, p, false, v, v1, true),
	};
	if (!known) {
		body[0] = guard(ctx, ts_lt(ctx, v1, end), body[0]);
		body[3] = guard(ctx, ts_lt(ctx, v1, end), body[3]);
	}
	for (int i = 0; i < 4; i++)
		if (!body[i])
			return NULL;
	ts_expr *pairs = known ? ts_const(ctx, t, steps / 2)
			       : ts_floordiv(ctx, ts_add(ctx, n, ts_const(ctx, t, 1)), ts_const(ctx, t, 2));
	ts_stmt *seq[3] = {
		known ? part(d, p, true, v, min, false)
		      : guard(ctx, ts_lt(ctx, ts_const(ctx, t, 0), n), part(d, p, true, v, min, false)),
		pairs ? ir_for(ctx, pv, ts_const(ctx, t, 0), pairs, loop->u.for_.kind, TS_THREAD_NONE,
			       ir_seq(ctx, 4, body))
		      : NULL,
		known && steps % 2 ? part(d, p, false, v, ts_add(ctx, min, ts_const(ctx, t, steps - 1)),
					  false)
				   : NULL,
	};
	ts_stmt *r = seq[0] && seq[1] && (!known || steps % 2 == 0 || seq[2])
			     ? ir_seq(ctx, seq[2] ? 3 : 2, seq) : NULL;
	for (int i = d->nmap - 1; r && i >= 0; i--)
		r = ir_allocate(ctx, d->to[i], r);
	for (int i = p->nalloc - 1; r && i >= 0; i--)
		r = ir_allocate(ctx, p->alloc[i]->u.alloc.buf, r);
	return r;
}

/* Whether the allocations s opens (through sequences) hold a
 * double-buffered buffer not handled yet: checked before a loop's body is
 * peeled, which takes a peeled of arena memory. */
static bool allocates_pending(const dbuf *d, const ts_stmt *s)
{
	if (s->kind == IR_S_ALLOCATE)
		return (s->u.alloc.buf->double_buffer && !done(d, s->u.alloc.buf)) ||
		       allocates_pending(d, s->u.alloc.body);
	if (s->kind == IR_S_SEQ)
		for (int i = 0; i < s->u.seq.n; i++)
			if (allocates_pending(d, s->u.seq.s[i]))
				return true;
	return false;
}

static ts_stmt *visit(ts_ctx *ctx, ts_stmt *s, void *data)
{
	dbuf *d = data;
	ts_stmt *m = ir_stmt_map_children(ctx, s, visit, NULL, data);
	if (!m || m->kind != IR_S_FOR || !allocates_pending(d, m->u.for_.body))
		return m;
	peeled *p = ts_alloc(ctx, sizeof(*p));
	if (!p)
		return NULL;
	peel(p, m->u.for_.body);
	ts_buffer *db[MAX_BUFS];
	int ndb = pending(d, p, db);
	if (ndb == 0)
		return m;
	if (p->over || d->ndone + 2 * ndb > MAX_BUFS)
		return refuse(d, db[0], m, "its body has too many statements or buffers to rearrange");
	int64_t ext;
	if (ir_is_const_int(m->u.for_.extent, &ext) && ext <= 1) {
		for (int i = 0; i < ndb; i++) /* one step: nothing to overlap */
			d->done[d->ndone++] = db[i];
		return m;
	}
	ts_for_kind k = m->u.for_.kind;
	if (k != TS_FOR_SERIAL && k != TS_FOR_UNROLLED)
		return refuse(d, db[0], m, ts_sprintf(ctx, "the loop is %s%s; the steps of a double "
						      "buffer follow one another (compute the stage "
						      "at a sequential loop)",
						      k == TS_FOR_THREAD ? "bound to " : "",
						      k == TS_FOR_THREAD ? ts_thread_tag_name(m->u.for_.thread)
									 : ts_for_kind_name(k)));
	const char *why = NULL;
	const ts_buffer *bad = classify(p, db, ndb, &why);
	if (bad)
		return refuse(d, bad, m, why);
	return transform(d, m, p, db, ndb);
}

/* A double-buffered buffer no loop's body allocates: its stage's loop
 * is one thread's, or it was computed at a loop lowering dropped. */
static bool find_left(ts_stmt *s, void *data)
{
	dbuf *d = data;
	if (s->kind == IR_S_ALLOCATE && s->u.alloc.buf->double_buffer && !done(d, s->u.alloc.buf) &&
	    !d->left)
		d->left = s->u.alloc.buf;
	return true;
}

static bool marked(ts_stmt *s, void *data)
{
	*(bool *)data |= s->kind == IR_S_ALLOCATE && s->u.alloc.buf->double_buffer;
	return !*(bool *)data;
}

ts_stmt *pass_double_buffer(ts_ctx *ctx, ts_stmt *s)
{
	if (!s)
		return NULL;
	bool any = false; /* most functions have no double buffer: nothing to do */
	ir_stmt_visit(s, marked, NULL, &any);
	if (!any)
		return s;
	dbuf *d = ts_alloc(ctx, sizeof(*d));
	if (!d)
		return NULL;
	d->ctx = ctx;
	ts_stmt *r = visit(ctx, s, d);
	if (!r)
		return NULL;
	ir_stmt_visit(r, find_left, NULL, d);
	if (d->left) {
		ts_error(ctx, TS_ERR_INVALID, "lower: double_buffer of %s: its allocation is not in the "
			 "body of a loop (compute the stage at a loop of its consumer)", d->left->name);
		return NULL;
	}
	return r;
}
