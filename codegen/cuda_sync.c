/*
 * cuda_sync.c - barrier insertion for shared memory (cg_cuda_insert_sync).
 *
 * Threads of a block see each other's shared-memory writes only after a
 * __syncthreads().  This pass walks every statement sequence keeping the
 * shared buffers read and written since the last barrier; a statement that
 * reads a buffer with pending writes (read after write), or writes one with
 * pending reads (write after read), gets a BARRIER before it.  Two writes
 * are not ordered: threads writing one element with no read between race
 * whatever the barriers.  A sequential loop whose body, ending with pending accesses, would
 * conflict with the accesses its next iteration makes before its first
 * barrier gets a BARRIER at the end of its body.
 *
 * A statement that holds barriers at its top level (a sequence, seen
 * through the ALLOCATEs around it) only conflicts through what it touches
 * before its first one, and leaves pending only what it touches after its
 * last one: the fetch of a second tile, allocated around the loop that
 * reads both, needs no barrier after the first fetch.  Loops and branches
 * are summarised whole (everything they might touch), so the pass may add
 * a barrier that a finer analysis would avoid, never omit one.  Last, a
 * barrier at the top level of a threadIdx loop narrower than the block is
 * moved out of it by splitting the loop (see hoist below); cuda_check.c
 * refuses any barrier still under a condition threads may take apart.  Only shared buffers are tracked.  Vectorized loops are
 * left alone: a barrier cannot sit between lanes.
 */
#include "c_emit.h"

#include <string.h>

/* A set of shared buffers; `all` stands for more than fit. */
typedef struct bufset {
	ts_buffer *b[32];
	int n;
	bool all;
} bufset;

typedef struct accesses {
	bufset reads, writes;
} accesses;

static void set_add(bufset *s, ts_buffer *b)
{
	for (int i = 0; i < s->n; i++)
		if (s->b[i] == b)
			return;
	if (s->n == (int)TS_COUNT_OF(s->b))
		s->all = true;
	else
		s->b[s->n++] = b;
}

static void set_union(bufset *s, const bufset *o)
{
	s->all |= o->all;
	for (int i = 0; i < o->n; i++)
		set_add(s, o->b[i]);
}

static bool set_empty(const bufset *s)
{
	return s->n == 0 && !s->all;
}

static bool sets_meet(const bufset *a, const bufset *b)
{
	if (set_empty(a) || set_empty(b))
		return false;
	if (a->all || b->all)
		return true;
	for (int i = 0; i < a->n; i++)
		for (int j = 0; j < b->n; j++)
			if (a->b[i] == b->b[j])
				return true;
	return false;
}

/* Whether doing `next` after `pending` without a barrier could race. */
static bool conflicts(const accesses *pending, const accesses *next)
{
	return sets_meet(&pending->writes, &next->reads) ||
	       sets_meet(&pending->reads, &next->writes);
}

static void acc_union(accesses *a, const accesses *b)
{
	set_union(&a->reads, &b->reads);
	set_union(&a->writes, &b->writes);
}

static bool note_store(ts_stmt *s, void *data)
{
	accesses *a = data;
	if (s->kind == IR_S_STORE && s->u.store.buf->scope == TS_SCOPE_SHARED)
		set_add(&a->writes, s->u.store.buf);
	return true;
}

static bool note_load(ts_expr *e, void *data)
{
	accesses *a = data;
	if (e->kind == IR_LOAD && e->u.load.buf->scope == TS_SCOPE_SHARED)
		set_add(&a->reads, e->u.load.buf);
	return true;
}

/* Every shared access anywhere under s. */
static accesses summary(ts_stmt *s)
{
	accesses a;
	memset(&a, 0, sizeof(a));
	ir_stmt_visit(s, note_store, note_load, &a);
	return a;
}

static ts_stmt *sync(ts_ctx *ctx, ts_stmt *s, void *data);

/* The statements s runs in order: the items of a SEQ, seen through the
 * ALLOCATEs around it (they only name a buffer), else s alone. */
static int as_list(ts_stmt *s, ts_stmt *const **items, ts_stmt **one)
{
	while (s->kind == IR_S_ALLOCATE)
		s = s->u.alloc.body;
	if (s->kind == IR_S_SEQ) {
		*items = s->u.seq.s;
		return s->u.seq.n;
	}
	*one = s;
	*items = one;
	return 1;
}

/* Accesses of s before its first barrier (head) and after its last one
 * (tail), looking into nested sequences; whether it has a barrier there.
 * Without one, head and tail are everything s touches. */
static bool head_tail(ts_stmt *s, accesses *head, accesses *tail)
{
	ts_stmt *const *items, *one;
	int n = as_list(s, &items, &one);
	bool seen_barrier = false;
	memset(head, 0, sizeof(*head));
	memset(tail, 0, sizeof(*tail));
	for (int i = 0; i < n; i++) {
		accesses h, t;
		bool inner = false;
		if (items[i]->kind == IR_S_BARRIER) {
			inner = true;
			memset(&h, 0, sizeof(h));
			memset(&t, 0, sizeof(t));
		} else if (n > 1 || items[i] != s) {
			inner = head_tail(items[i], &h, &t);
		} else {
			h = t = summary(items[i]);
		}
		if (!seen_barrier)
			acc_union(head, &h);
		if (inner)
			*tail = t;
		else
			acc_union(tail, &t);
		seen_barrier |= inner;
	}
	return seen_barrier;
}

/* A statement needs a barrier before it when what it touches before its own
 * first barrier conflicts with what is pending; after it, what it touches
 * after its last barrier is pending (all of it, if it has none).  Two
 * writes to different buffers, like the fetches of two tiles, need none. */
static ts_stmt *sync_seq(ts_ctx *ctx, ts_stmt *s)
{
	int n = s->u.seq.n;
	ts_stmt **out = ts_alloc_array(ctx, (size_t)n * 2, sizeof(*out));
	if (!out)
		return NULL;
	accesses pending;
	memset(&pending, 0, sizeof(pending));
	bool changed = false;
	int m = 0;
	for (int i = 0; i < n; i++) {
		ts_stmt *c = sync(ctx, s->u.seq.s[i], NULL);
		if (!c)
			return NULL;
		changed |= c != s->u.seq.s[i];
		if (c->kind == IR_S_BARRIER) {
			memset(&pending, 0, sizeof(pending));
			out[m++] = c;
			continue;
		}
		accesses head, tail;
		bool inner = head_tail(c, &head, &tail);
		if (conflicts(&pending, &head)) {
			if (!(out[m++] = ir_barrier(ctx)))
				return NULL;
			memset(&pending, 0, sizeof(pending));
			changed = true;
		}
		if (inner)
			pending = tail;
		else
			acc_union(&pending, &tail);
		out[m++] = c;
	}
	return changed ? ir_seq(ctx, m, out) : s;
}

static ts_stmt *sync_for(ts_ctx *ctx, ts_stmt *s)
{
	if (s->u.for_.kind == TS_FOR_VECTORIZED)
		return s;
	ts_stmt *body = sync(ctx, s->u.for_.body, NULL);
	if (!body)
		return NULL;
	if (s->u.for_.kind != TS_FOR_THREAD) {
		accesses head, tail;
		head_tail(body, &head, &tail);
		if (conflicts(&tail, &head))
			body = ir_seq2(ctx, body, ir_barrier(ctx));
	}
	if (body == s->u.for_.body)
		return s;
	return ir_for(ctx, s->u.for_.var, s->u.for_.min, s->u.for_.extent, s->u.for_.kind,
		      s->u.for_.thread, body);
}

static ts_stmt *sync(ts_ctx *ctx, ts_stmt *s, void *data)
{
	(void)data;
	if (s->kind == IR_S_SEQ)
		return sync_seq(ctx, s);
	if (s->kind == IR_S_FOR)
		return sync_for(ctx, s);
	return ir_stmt_map_children(ctx, s, sync, NULL, NULL);
}

/* ---- barriers out of narrow thread loops ----------------------------------- */

/* A threadIdx loop narrower than the block is `if (threadIdx.x < extent)`:
 * a barrier inside would not be reached by the threads outside it.  When
 * the barriers sit at the top level of the loop's body (seen through the
 * shared allocations around it, which live at kernel scope anyway), the
 * loop is split at each barrier, so the guard moves inside and the barrier
 * outside: for t { a; sync; b } becomes for t { a }; sync; for t { b }.
 * Each thread runs the same iterations of each part, in the same order;
 * per-thread state cannot cross a part (a local allocation or a LET around
 * the sequence keeps the loop whole, and cuda_check.c refuses it). */
typedef struct hoist {
	int64_t block[3];
} hoist;

static bool note_block(ts_stmt *s, void *data)
{
	hoist *h = data;
	int64_t ext;
	if (s->kind == IR_S_FOR && s->u.for_.kind == TS_FOR_THREAD &&
	    s->u.for_.thread >= TS_THREAD_X && ir_is_const_int(s->u.for_.extent, &ext)) {
		int64_t *d = &h->block[s->u.for_.thread - TS_THREAD_X];
		*d = ext > *d ? ext : *d;
	}
	return true;
}

static bool narrow_thread_loop(const hoist *h, const ts_stmt *s)
{
	int64_t ext;
	return s->kind == IR_S_FOR && s->u.for_.kind == TS_FOR_THREAD &&
	       s->u.for_.thread >= TS_THREAD_X && ir_is_const_int(s->u.for_.extent, &ext) &&
	       ext < h->block[s->u.for_.thread - TS_THREAD_X];
}

/* One part of the loop s: its var renamed after the first part (every
 * loop defines its own variable). */
static ts_stmt *part(ts_ctx *ctx, const ts_stmt *s, ts_stmt *const *items, int n, bool first)
{
	ts_expr *v = s->u.for_.var;
	ts_stmt *body = n == 1 ? items[0] : ir_seq(ctx, n, items);
	if (!first) {
		ts_expr *w = ts_var_typed(ctx, v->u.var.name, v->dtype);
		body = w && body ? ir_stmt_substitute(ctx, body, 1, &v, &w) : NULL;
		v = w;
	}
	return body ? ir_for(ctx, v, s->u.for_.min, s->u.for_.extent, s->u.for_.kind,
			     s->u.for_.thread, body) : NULL;
}

static ts_stmt *split_loop(ts_ctx *ctx, ts_stmt *s)
{
	ts_buffer *shared[64];
	int nshared = 0;
	ts_stmt *body = s->u.for_.body;
	while (body->kind == IR_S_ALLOCATE && body->u.alloc.buf->scope == TS_SCOPE_SHARED &&
	       nshared < (int)TS_COUNT_OF(shared)) {
		shared[nshared++] = body->u.alloc.buf;
		body = body->u.alloc.body;
	}
	if (body->kind != IR_S_SEQ)
		return s;
	int n = body->u.seq.n, m = 0, start = 0;
	ts_stmt *const *items = body->u.seq.s;
	ts_stmt **out = ts_alloc_array(ctx, (size_t)n * 2 + 1, sizeof(*out));
	if (!out)
		return NULL;
	for (int i = 0; i <= n; i++) {
		if (i < n && items[i]->kind != IR_S_BARRIER)
			continue;
		bool first = m == 0;
		if (i > start && !(out[m++] = part(ctx, s, items + start, i - start, first)))
			return NULL;
		if (i < n)
			out[m++] = items[i];
		start = i + 1;
	}
	if (m == 1)
		return s; /* no barrier at the top level: nothing to split */
	ts_stmt *r = ir_seq(ctx, m, out);
	for (int i = nshared - 1; r && i >= 0; i--)
		r = ir_allocate(ctx, shared[i], r);
	return r;
}

static ts_stmt *hoist_barriers(ts_ctx *ctx, ts_stmt *s, void *data)
{
	ts_stmt *m = ir_stmt_map_children(ctx, s, hoist_barriers, NULL, data);
	if (!m || !narrow_thread_loop(data, m))
		return m;
	return split_loop(ctx, m);
}

ts_stmt *cg_cuda_insert_sync(ts_ctx *ctx, ts_stmt *s)
{
	if (!ctx)
		return NULL;
	if (!s) {
		ts_error(ctx, TS_ERR_INVALID, "insert_sync: statement is NULL");
		return NULL;
	}
	ts_stmt *synced = sync(ctx, s, NULL);
	hoist h = {{1, 1, 1}};
	ir_stmt_visit(synced, note_block, NULL, &h);
	return synced ? hoist_barriers(ctx, synced, &h) : NULL;
}
