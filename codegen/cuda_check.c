/*
 * cuda_check.c - what the "cuda" target refuses rather than compile into a
 * kernel that silently computes something else (cuda_check.h).
 *
 * A tessera function is one kernel.  Code outside every bound loop runs in
 * every thread; a buffer that is not shared is private to a thread (CUDA
 * local memory), and a shared one is private to a block.  So a buffer
 * written under a loop bound to threads (blocks, for shared) that sits
 * inside the buffer's allocation is only partly written in each copy: a
 * read outside that loop reads what other threads wrote into their own
 * copies, i.e. nothing.  Such reads are refused; they would need a second
 * kernel launch (or a grid-wide sync), which tessera does not emit.  A
 * producer with no bindings of its own is computed whole by every thread
 * into its private copy: slow but correct, so it is allowed while the copy
 * fits CUDA's local memory per thread.
 *
 * A __syncthreads() must be reached by every thread of the block.  It is
 * allowed only under conditions that are the same for all threads of a
 * block: blockIdx loops, sequential loops with a uniform trip count, threadIdx
 * loops that span the whole block dimension, and guards over uniform
 * variables.  threadIdx loop variables are not uniform, nor is anything
 * computed from them, nor a loaded value.
 */
#include "cuda_check.h"

#include <stdint.h>
#include <string.h>

#include "printer.h"

#define MAX_NEST 256

/* ---- cross-thread reads of private buffers --------------------------------------- */

typedef struct xread {
	const ts_buffer *buf;
	bool shared;               /* only block loops make copies of a shared buffer */
	const ts_stmt *key;        /* the loop a store sits under (see loop_key) */
	bool bound;                /* some store sits under such a loop */
	const ts_stmt *wkey;       /* the first such loop */
	const ts_buffer *consumer; /* the store a stray read feeds */
	bool stray;
} xread;

static bool is_copy_loop(const xread *x, const ts_stmt *s)
{
	if (s->kind != IR_S_FOR || s->u.for_.kind != TS_FOR_THREAD)
		return false;
	return !x->shared || s->u.for_.thread <= TS_BLOCK_Z;
}

static void note_read(xread *x, ts_expr *e, const ts_buffer *consumer)
{
	if (x->stray || !e || !ir_expr_loads(e, x->buf) || (x->bound && x->key == x->wkey))
		return;
	x->stray = x->bound;
	x->consumer = consumer;
}

/* Walks the allocation's body: the first pass (reads == false) finds the
 * outermost copy-making loop above each store, the second finds a read
 * outside it.  key is the outermost such loop entered so far. */
static void scan(xread *x, const ts_stmt *s, bool reads)
{
	if (!s || x->stray)
		return;
	switch (s->kind) {
	case IR_S_FOR: {
		const ts_stmt *saved = x->key;
		if (!x->key && is_copy_loop(x, s))
			x->key = s;
		if (reads) {
			note_read(x, s->u.for_.min, NULL);
			note_read(x, s->u.for_.extent, NULL);
		}
		scan(x, s->u.for_.body, reads);
		x->key = saved;
		return;
	}
	case IR_S_STORE:
		if (reads) {
			note_read(x, s->u.store.value, s->u.store.buf);
			note_read(x, s->u.store.index, s->u.store.buf);
		} else if (s->u.store.buf == x->buf && x->key && !x->bound) {
			x->bound = true;
			x->wkey = x->key;
		}
		return;
	case IR_S_ALLOCATE: scan(x, s->u.alloc.body, reads); return;
	case IR_S_LET:
		if (reads)
			note_read(x, s->u.let.value, NULL);
		scan(x, s->u.let.body, reads);
		return;
	case IR_S_IF:
		if (reads)
			note_read(x, s->u.if_.cond, NULL);
		scan(x, s->u.if_.then_s, reads);
		scan(x, s->u.if_.else_s, reads);
		return;
	case IR_S_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			scan(x, s->u.seq.s[i], reads);
		return;
	case IR_S_EVALUATE:
		if (reads)
			note_read(x, s->u.eval.value, NULL);
		return;
	case IR_S_BARRIER: case IR_S_PROVIDE: case IR_S_REALIZE: case IR_S_PREFETCH:
	case IR_STMT_KIND_COUNT:
		return;
	}
}

/* bound: the block/thread tags of the loops around the allocation, a bit
 * (1u << tag) each. */
static ts_status refuse_xread(ts_ctx *ctx, const ts_func *f, const xread *x, unsigned bound)
{
	const char *p = x->buf->name, *c = x->consumer ? x->consumer->name : "another stage";
	const unsigned threads = (1u << TS_THREAD_X) | (1u << TS_THREAD_Y) | (1u << TS_THREAD_Z);
	if (bound == 0)
		return ts_error(ctx, TS_ERR_INVALID,
				"build %s: stage %s is computed at root with its own thread bindings; its consumer %s would read it across threads without a grid-wide sync (compute %s at %s's loops with compute_at, or inline it; in global memory, at root, it would be a kernel of its own)",
				f->name, p, c, p, c);
	if (x->shared)
		return ts_error(ctx, TS_ERR_INVALID,
				"build %s: stage %s is computed outside %s's block loops with its own block bindings; blocks do not see each other's shared memory (compute %s at %s's loops with compute_at)",
				f->name, p, c, p, c);
	/* already inside the consumer's thread loops: its own binding is what
	 * splits the buffer between threads, so moving it would not help */
	if (bound & threads)
		return ts_error(ctx, TS_ERR_INVALID,
				"build %s: stage %s is computed inside %s's thread loops, in per-thread memory, with a thread binding of its own (loop %s bound to %s): each thread would write only its part of its own copy and %s would read the rest, never written (give %s shared scope, or leave that loop unbound)",
				f->name, p, c, x->wkey->u.for_.var->u.var.name,
				ts_thread_tag_name(x->wkey->u.for_.thread), c, p);
	return ts_error(ctx, TS_ERR_INVALID,
			"build %s: stage %s is computed outside %s's thread loops with its own thread bindings, in per-thread memory; %s would read other threads' copies (give %s shared scope, or compute it at %s's thread loops)",
			f->name, p, c, c, p, c);
}

/* bound: the block/thread tags of the loops around s, a bit each. */
static ts_status check_allocs(ts_ctx *ctx, const ts_func *f, const ts_stmt *s, unsigned bound)
{
	if (!s)
		return TS_OK;
	switch (s->kind) {
	case IR_S_FOR:
		return check_allocs(ctx, f, s->u.for_.body,
				    bound | (s->u.for_.kind == TS_FOR_THREAD ? 1u << s->u.for_.thread : 0));
	case IR_S_ALLOCATE: {
		xread x = {.buf = s->u.alloc.buf, .shared = s->u.alloc.buf->scope == TS_SCOPE_SHARED};
		scan(&x, s->u.alloc.body, false);
		if (x.bound)
			scan(&x, s->u.alloc.body, true);
		if (x.stray)
			return refuse_xread(ctx, f, &x, bound);
		return check_allocs(ctx, f, s->u.alloc.body, bound);
	}
	case IR_S_LET: return check_allocs(ctx, f, s->u.let.body, bound);
	case IR_S_IF: {
		ts_status st = check_allocs(ctx, f, s->u.if_.then_s, bound);
		return st == TS_OK ? check_allocs(ctx, f, s->u.if_.else_s, bound) : st;
	}
	case IR_S_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			if (check_allocs(ctx, f, s->u.seq.s[i], bound) != TS_OK)
				return ts_last_status(ctx);
		return TS_OK;
	case IR_S_STORE: case IR_S_EVALUATE: case IR_S_BARRIER: case IR_S_PROVIDE:
	case IR_S_REALIZE: case IR_S_PREFETCH: case IR_STMT_KIND_COUNT:
		return TS_OK;
	}
	return TS_OK;
}

static bool find_bound(ts_stmt *s, void *data)
{
	if (s->kind == IR_S_FOR && s->u.for_.kind == TS_FOR_THREAD)
		*(bool *)data = true;
	return !*(bool *)data;
}

/* The local memory of one thread: every buffer that is not shared.  The
 * emitter declares them all in the kernel's scope (no braces around an
 * allocation), so they are live together and ptxas gives each its own
 * part of the stack frame; a frame over CUDA's limit compiles, and only
 * the launch fails. */
typedef struct local_use {
	int64_t bytes, largest_bytes;
	int n;
	const ts_buffer *largest;
} local_use;

static bool sum_local(ts_stmt *s, void *data)
{
	local_use *u = data;
	if (s->kind != IR_S_ALLOCATE || s->u.alloc.buf->scope == TS_SCOPE_SHARED)
		return true;
	const ts_buffer *b = s->u.alloc.buf;
	int64_t bytes = b->size * ts_dtype_bytes(b->dtype);
	u->bytes = bytes > INT64_MAX - u->bytes ? INT64_MAX : u->bytes + bytes;
	u->n++;
	if (!u->largest || bytes > u->largest_bytes) {
		u->largest = b;
		u->largest_bytes = bytes;
	}
	return true;
}

/* Refuses the buffers that are not shared when one thread's copies of them
 * exceed CG_CUDA_MAX_LOCAL, naming the one that does alone. */
static ts_status check_local_total(ts_ctx *ctx, const ts_func *f)
{
	local_use u = {0};
	ir_stmt_visit(f->body, sum_local, NULL, &u);
	if (u.bytes <= CG_CUDA_MAX_LOCAL)
		return TS_OK;
	if (u.largest_bytes > CG_CUDA_MAX_LOCAL)
		return ts_error(ctx, TS_ERR_INVALID,
				"build %s: stage %s needs %lld bytes of local memory in every thread, the limit is %d (every thread holds its own copy: compute it at its consumer's thread loops with compute_at, or inline it)",
				f->name, u.largest->name, (long long)u.largest_bytes, CG_CUDA_MAX_LOCAL);
	return ts_error(ctx, TS_ERR_INVALID,
			"build %s: its %d buffers that are not shared need %lld bytes of local memory in every thread together (the largest: stage %s), the limit is %d (compute them at their consumers' thread loops with compute_at, or inline them)",
			f->name, u.n, (long long)u.bytes, u.largest->name, CG_CUDA_MAX_LOCAL);
}

ts_status cg_cuda_check(ts_ctx *ctx, const ts_func *f)
{
	bool bound = false;
	ir_stmt_visit(f->body, find_bound, NULL, &bound);
	if (!bound)
		return ts_error(ctx, TS_ERR_INVALID,
				"build %s: no loop is bound to blockIdx/threadIdx, so the kernel would run on one GPU thread (bind an axis with ts_bind)",
				f->name);
	ts_status st = check_allocs(ctx, f, f->body, 0u);
	return st == TS_OK ? check_local_total(ctx, f) : st;
}

/* ---- barriers under divergent conditions --------------------------------------- */

typedef struct uniform {
	ts_ctx *ctx;
	const ts_func *f;
	int64_t block[3];                /* the block's extent per threadIdx dimension */
	const ts_expr *varying[MAX_NEST]; /* variables that differ between threads */
	int nvarying;
	const ts_stmt *diverge;           /* the outermost divergent construct entered */
	const char *why;                  /* what makes it divergent */
} uniform;

static bool find_block_dims(ts_stmt *s, void *data)
{
	int64_t *block = data, ext;
	if (s->kind == IR_S_FOR && s->u.for_.kind == TS_FOR_THREAD &&
	    s->u.for_.thread >= TS_THREAD_X && ir_is_const_int(s->u.for_.extent, &ext)) {
		int d = s->u.for_.thread - TS_THREAD_X;
		block[d] = ext > block[d] ? ext : block[d];
	}
	return true;
}

/* A load, or a variable that differs between the threads of a block. */
static bool varying_node(const ts_expr *e, const void *data)
{
	const uniform *u = data;
	if (e->kind == IR_LOAD)
		return true;
	for (int i = 0; e->kind == IR_VAR && i < u->nvarying; i++)
		if (e == u->varying[i])
			return true;
	return false;
}

static bool varies(const uniform *u, ts_expr *e)
{
	return ir_expr_any(e, varying_node, u);
}

static void enter(uniform *u, const ts_stmt *s, const char *why)
{
	if (!u->diverge) {
		u->diverge = s;
		u->why = why;
	}
}

static const char *loop_name(const ts_stmt *s)
{
	return s->u.for_.var->u.var.name;
}

/* Why the loop s makes its body divergent, or NULL when it does not. */
static const char *loop_divergence(uniform *u, const ts_stmt *s)
{
	int64_t ext = 0;
	if (s->u.for_.kind == TS_FOR_THREAD) {
		if (s->u.for_.thread < TS_THREAD_X)
			return NULL; /* every thread of a block has the same blockIdx */
		int d = s->u.for_.thread - TS_THREAD_X;
		if (ir_is_const_int(s->u.for_.extent, &ext) && ext == u->block[d])
			return NULL;
		return ts_sprintf(u->ctx, "loop '%s' bound to %s with extent %lld of the block's %lld",
				  loop_name(s), ts_thread_tag_name(s->u.for_.thread), (long long)ext,
				  (long long)u->block[d]);
	}
	if (varies(u, s->u.for_.extent))
		return ts_sprintf(u->ctx, "loop '%s', whose trip count differs between threads",
				  loop_name(s));
	return NULL;
}

static void shared_writes(ts_stmt *s, ts_sbuf *sb);

static ts_status refuse_barrier(uniform *u)
{
	ts_sbuf sb = {0};
	shared_writes((ts_stmt *)u->diverge, &sb);
	ts_status st = ts_error(u->ctx, TS_ERR_INVALID,
				"build %s: a __syncthreads() for %s would be inside %s, which not every thread of a block reaches (all threads must reach each barrier: attach the shared stage outside that loop or guard, or bind the loops around it to the whole block)",
				u->f->name, sb.len ? ts_sb_str(&sb) : "shared memory", u->why);
	ts_sb_free(&sb);
	return st;
}

static bool note_shared_write(ts_stmt *s, void *data)
{
	ts_sbuf *sb = data;
	if (s->kind == IR_S_STORE && s->u.store.buf->scope == TS_SCOPE_SHARED &&
	    !strstr(ts_sb_str(sb), s->u.store.buf->name))
		ts_sb_printf(sb, "%s%s", sb->len ? ", " : "", s->u.store.buf->name);
	return true;
}

static void shared_writes(ts_stmt *s, ts_sbuf *sb)
{
	ir_stmt_visit(s, note_shared_write, NULL, sb);
}

static ts_status check_uniform(uniform *u, const ts_stmt *s);

static ts_status uniform_loop(uniform *u, const ts_stmt *s)
{
	const ts_stmt *saved = u->diverge;
	int nv = u->nvarying;
	const char *why = loop_divergence(u, s);
	if (why)
		enter(u, s, why);
	bool thread = s->u.for_.kind == TS_FOR_THREAD && s->u.for_.thread >= TS_THREAD_X;
	if ((thread || why || varies(u, s->u.for_.min)) && u->nvarying < MAX_NEST)
		u->varying[u->nvarying++] = s->u.for_.var;
	ts_status st = check_uniform(u, s->u.for_.body);
	u->diverge = saved;
	u->nvarying = nv;
	return st;
}

static ts_status uniform_if(uniform *u, const ts_stmt *s)
{
	const ts_stmt *saved = u->diverge;
	if (varies(u, s->u.if_.cond))
		enter(u, s, ts_sprintf(u->ctx, "the guard '%s', which differs between threads",
				       ir_expr_str(u->ctx, s->u.if_.cond)));
	ts_status st = check_uniform(u, s->u.if_.then_s);
	if (st == TS_OK)
		st = check_uniform(u, s->u.if_.else_s);
	u->diverge = saved;
	return st;
}

static ts_status check_uniform(uniform *u, const ts_stmt *s)
{
	if (!s)
		return TS_OK;
	switch (s->kind) {
	case IR_S_FOR: return uniform_loop(u, s);
	case IR_S_IF: return uniform_if(u, s);
	case IR_S_ALLOCATE: return check_uniform(u, s->u.alloc.body);
	case IR_S_LET: {
		int nv = u->nvarying;
		if (varies(u, s->u.let.value) && u->nvarying < MAX_NEST)
			u->varying[u->nvarying++] = s->u.let.var;
		ts_status st = check_uniform(u, s->u.let.body);
		u->nvarying = nv;
		return st;
	}
	case IR_S_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			if (check_uniform(u, s->u.seq.s[i]) != TS_OK)
				return ts_last_status(u->ctx);
		return TS_OK;
	case IR_S_BARRIER: return u->diverge ? refuse_barrier(u) : TS_OK;
	case IR_S_STORE: case IR_S_EVALUATE: case IR_S_PROVIDE: case IR_S_REALIZE:
	case IR_S_PREFETCH: case IR_STMT_KIND_COUNT:
		return TS_OK;
	}
	return TS_OK;
}

ts_status cg_cuda_check_barriers(ts_ctx *ctx, const ts_func *f)
{
	uniform u = {.ctx = ctx, .f = f, .block = {1, 1, 1}};
	ir_stmt_visit(f->body, find_block_dims, NULL, u.block);
	return check_uniform(&u, f->body);
}
