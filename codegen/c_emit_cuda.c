/*
 * c_emit_cuda.c - the parts of the C emitter (c_emit.c) only CUDA kernels
 * have: loops bound to block and thread indices and the values that depend
 * on them, stores made once per block where every thread would make them,
 * float2/float4 and 16-byte accesses of vectorized loops, double-buffered
 * copies as cp.async, tensorized nests as mma.sync, and the launch
 * configuration with the shared buffers it needs.
 */
#include <stdio.h>
#include <string.h>

#include "arith.h"
#include "c_emit_impl.h"

/* ---- thread loops and stores made once per block ------------------------- */

static int tag_dim(ts_thread_tag t)
{
	return t >= TS_THREAD_X ? t - TS_THREAD_X : t - TS_BLOCK_X;
}

static int64_t launch_dim(const emitter *em, ts_thread_tag t)
{
	int d = tag_dim(t);
	return t >= TS_THREAD_X ? em->launch.block[d] : em->launch.grid[d];
}

/* The thread indices (1 << tag) e's value depends on, through the
 * variables of em->tdep; every index when the table overflowed. */
unsigned cg_ce_thread_tags(const emitter *em, const ts_expr *e)
{
	if (!e || !em->d->bind_threads)
		return 0;
	if (em->tdep_over)
		return ~0u;
	unsigned tags = 0;
	for (int i = 0; i < em->ntdep; i++)
		if (!(tags & em->tdep[i].tags) && ir_expr_uses_var((ts_expr *)e, em->tdep[i].var))
			tags |= em->tdep[i].tags;
	return tags;
}

/* Records that v's value depends on the thread indices `tags` (none: not
 * recorded); returns what tdep_pop takes to undo it: the table's size
 * before, or -1 for an entry that did not fit (while one is in scope,
 * every value counts as depending on every index). */
int cg_ce_tdep_push(emitter *em, const ts_expr *v, unsigned tags)
{
	if (!tags)
		return em->ntdep;
	if (em->ntdep == (int)TS_COUNT_OF(em->tdep)) {
		em->tdep_over++;
		return -1;
	}
	em->tdep[em->ntdep++] = (thread_dep){v, tags};
	return em->ntdep - 1;
}

void cg_ce_tdep_pop(emitter *em, int n)
{
	if (n < 0)
		em->tdep_over--;
	else
		em->ntdep = n;
}

/* CUDA: the loop's variable is a block or thread index; no loop. */
void cg_ce_thread_loop(emitter *em, const ts_stmt *s)
{
	const ts_expr *v = s->u.for_.var;
	const char *type = cg_ce_ctype(em, v->dtype);
	int64_t m = 0, ext = 0;
	bool offset = !ir_is_const_int(s->u.for_.min, &m) || m != 0;
	const char *min = offset ? cg_ce_expr_text(em, s->u.for_.min) : "";
	ir_interval lo = cg_ce_bound(em, s->u.for_.min);
	const char *n = cg_ce_define(em, v, v->u.var.name);
	if (!n || !min)
		return;
	ir_is_const_int(s->u.for_.extent, &ext);
	/* the index runs below the launch's dimension, and below a constant
	 * extent under the test below */
	int64_t dim = launch_dim(em, s->u.for_.thread);
	cg_ce_loop_range(em, v, lo, ext > 0 && ext < dim ? ext : dim);
	cg_ce_begin_line(em);
	ts_sb_printf(&em->out, "%s %s = %s%s%s%s;\n", type, n, ts_thread_tag_name(s->u.for_.thread),
		     offset ? " + (" : "", min, offset ? ")" : "");
	int ntdep = cg_ce_tdep_push(em, v, (1u << s->u.for_.thread) | cg_ce_thread_tags(em, s->u.for_.min));
	if (ext == launch_dim(em, s->u.for_.thread)) {
		cg_ce_stmt(em, s->u.for_.body);
	} else {
		cg_ce_begin_line(em);
		ts_sb_printf(&em->out, "if (%s < ", ts_thread_tag_name(s->u.for_.thread));
		cg_ce_sub(em, s->u.for_.extent, P_REL + 1);
		cg_ce_put(em, ") {\n");
		cg_ce_block_body(em, s->u.for_.body);
	}
	cg_ce_tdep_pop(em, ntdep);
}

/* CUDA: a store into a parameter (global memory) or a shared buffer whose
 * element, and whether it is made at all, do not depend on a thread index
 * the block has more than one of runs in all those threads at once,
 * storing to the same element: outside every loop bound to that index, or
 * inside one but into a region that is the same for all its threads (a
 * shared producer computed at a thread loop holds what all the block's
 * threads read).  Harmless for a plain write of one value, but a
 * reduction's updates (C[i] = C[i] + x) would race, threads re-adding what
 * others added (the final phase of partial sums rfactor'd across
 * threadIdx.x), or zeroing an element another had begun to sum.  Such a
 * store is made by thread 0 of each of those indices only, as TVM guards a
 * cross-thread reduction's result.  The kernel's own stages never read a
 * parameter another thread wrote; a shared buffer's readers are behind the
 * barrier cuda_sync.c puts after its writes (the guard is on the store
 * alone, so every thread still reaches each barrier).  A store whose
 * element or condition depends on the index is each thread's own. */
bool cg_ce_replicated_store(emitter *em, const ts_stmt *s, char cond[96])
{
	const ts_buffer *buf = s->u.store.buf;
	cond[0] = '\0';
	if (!em->d->bind_threads || em->in_guard)
		return false;
	bool seen = buf->scope == TS_SCOPE_SHARED; /* by the block's other threads */
	for (int i = 0; i < em->f->nparams; i++)
		seen |= em->f->params[i] == buf;
	/* with tensorized nests the lanes of a warp are threadIdx.x, each
	 * storing its own fragment elements (indices of the lane's mma_g and
	 * mma_t) */
	unsigned own = cg_ce_thread_tags(em, s->u.store.index) | em->cond_tags |
		       (em->mma.nnest > 0 ? 1u << TS_THREAD_X : 0);
	for (int t = TS_THREAD_X; seen && t <= TS_THREAD_Z; t++)
		if (launch_dim(em, (ts_thread_tag)t) > 1 && !(own & (1u << t)))
			snprintf(cond + strlen(cond), 96 - strlen(cond), "%s%s == 0", cond[0] ? " && " : "",
				 ts_thread_tag_name((ts_thread_tag)t));
	return cond[0] != '\0';
}

/* Opens `if (cond) {` around what replicated_store guards (nothing when
 * cond is empty); close_guard ends it. */
void cg_ce_open_guard(emitter *em, const char *cond)
{
	if (!cond[0])
		return;
	cg_ce_begin_line(em);
	ts_sb_printf(&em->out, "if (%s) {\n", cond);
	em->indent++;
	em->in_guard = true;
}

void cg_ce_close_guard(emitter *em, const char *cond)
{
	if (!cond[0])
		return;
	em->in_guard = false;
	em->indent--;
	cg_ce_line(em, "}");
}

/* ---- float4 vector accesses --------------------------------------------- */

/* The coefficient of v in e when e is affine in v; false otherwise. */
static bool coeff(const ts_expr *e, const ts_expr *v, int64_t *c)
{
	int64_t a, b, k;
	if (!ir_expr_uses_var((ts_expr *)e, v)) {
		*c = 0;
		return true;
	}
	switch (e->kind) {
	case IR_VAR:
		*c = 1;
		return true;
	case IR_ADD: case IR_SUB:
		if (!coeff(e->u.bin.a, v, &a) || !coeff(e->u.bin.b, v, &b))
			return false;
		*c = e->kind == IR_ADD ? a + b : a - b;
		return true;
	case IR_MUL:
		if (ir_is_const_int(e->u.bin.a, &k) && coeff(e->u.bin.b, v, &b))
			return *c = k * b, true;
		if (ir_is_const_int(e->u.bin.b, &k) && coeff(e->u.bin.a, v, &a))
			return *c = k * a, true;
		return false;
	default:
		return false;
	}
}

/* e with every occurrence of v replaced by 0 and the zero terms dropped
 * (NULL means 0).  e is affine in v. */
static ts_expr *strip(ts_ctx *ctx, ts_expr *e, const ts_expr *v)
{
	if (!ir_expr_uses_var(e, v))
		return e;
	if (e->kind == IR_VAR)
		return NULL;
	ts_expr *a = strip(ctx, e->u.bin.a, v), *b = strip(ctx, e->u.bin.b, v);
	if (e->kind == IR_MUL)
		return a && b ? ts_mul(ctx, a, b) : NULL;
	if (!b)
		return a;
	if (!a)
		return e->kind == IR_ADD ? b : ts_sub(ctx, ts_int(ctx, 0), b);
	return ts_binary(ctx, e->kind, a, b);
}

/* The aligned base index of a unit-stride access over loop's variable in
 * [min, ...) of a buffer outside local memory, `lanes` elements from a
 * multiple of lanes, or NULL when the access is not one. */
static ts_expr *unit_base(emitter *em, const ts_buffer *buf, ts_expr *idx, const ts_stmt *loop,
			  int64_t lanes)
{
	int64_t c, m;
	if (buf->scope == TS_SCOPE_LOCAL || idx->dtype.lanes != 1 ||
	    !coeff(idx, loop->u.for_.var, &c) || c != 1 || !ir_is_const_int(loop->u.for_.min, &m))
		return NULL;
	ts_expr *base = strip(em->ctx, idx, loop->u.for_.var);
	if (m != 0)
		base = base ? ts_add(em->ctx, base, ts_int(em->ctx, m)) : ts_int(em->ctx, m);
	if (!ir_multiple_of(base, lanes))
		return NULL;
	return base ? base : ts_int(em->ctx, 0);
}

/* unit_base of a float32 buffer: a float2/float4 access. */
static ts_expr *vec_base(emitter *em, ts_buffer *buf, ts_expr *idx, const ts_stmt *loop,
			 int lanes)
{
	return ts_dtype_eq(buf->dtype, ts_float32) ? unit_base(em, buf, idx, loop, lanes) : NULL;
}

/* Collects the loads of the loop variable in value; false if v appears in
 * any other way or a load is not a unit-stride aligned one. */
static bool vec_value(emitter *em, ts_expr *e, const ts_stmt *loop, int lanes,
		      ts_expr **bases)
{
	const ts_expr *v = loop->u.for_.var;
	if (!ir_expr_uses_var(e, v))
		return true;
	switch (e->kind) {
	case IR_LOAD:
		if (em->nvec == 4)
			return false;
		bases[em->nvec] = vec_base(em, e->u.load.buf, e->u.load.index, loop, lanes);
		em->vec_loads[em->nvec] = e;
		return bases[em->nvec++] != NULL;
	case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV: case IR_MIN: case IR_MAX:
		return vec_value(em, e->u.bin.a, loop, lanes, bases) &&
		       vec_value(em, e->u.bin.b, loop, lanes, bases);
	case IR_CALL:
		for (int i = 0; i < e->u.call.nargs; i++)
			if (!vec_value(em, e->u.call.args[i], loop, lanes, bases))
				return false;
		return true;
	default:
		return false;
	}
}

static void vec_access(emitter *em, const char *type, ts_buffer *buf, ts_expr *base, bool is_const)
{
	ts_sb_printf(&em->out, "*(%s%s *)&%s[", is_const ? "const " : "", type, cg_ce_lookup(em, buf));
	cg_ce_sub(em, base, 0);
	cg_ce_put(em, "]");
}

/* Emits the vector form of the general case: loads into temporaries, then
 * one make_floatN of the lanes. */
static void vec_compute(emitter *em, const ts_stmt *st, ts_expr *sbase, ts_expr **bases,
			int lanes)
{
	const char *type = lanes == 4 ? "float4" : "float2";
	cg_ce_line(em, "{");
	em->indent++;
	for (int i = 0; i < em->nvec; i++) {
		const char *base = ts_sprintf(em->ctx, "%s%d", em->vec_loads[i]->u.load.buf->name, lanes);
		em->vec_names[i] = cg_ce_define(em, em->vec_loads[i], base);
		cg_ce_begin_line(em);
		ts_sb_printf(&em->out, "const %s %s = ", type, em->vec_names[i]);
		vec_access(em, type, em->vec_loads[i]->u.load.buf, bases[i], true);
		cg_ce_put(em, ";\n");
	}
	cg_ce_begin_line(em);
	vec_access(em, type, st->u.store.buf, sbase, false);
	ts_sb_printf(&em->out, " = make_%s(", type);
	for (em->comp = 0; em->comp < lanes; em->comp++) {
		cg_ce_put(em, em->comp ? ", " : "");
		cg_ce_sub(em, st->u.store.value, 0);
	}
	cg_ce_put(em, ");\n");
	em->indent--;
	cg_ce_line(em, "}");
}

/* A copy into a double-buffered shared buffer from global memory, of 4,
 * 8 or 16 bytes from an address aligned to that: one cp.async
 * (ts_cp_async<bytes>, see async_head), which goes on while the thread
 * goes on to read the buffer's other copy. */
bool cg_ce_async_copy(emitter *em, const ts_buffer *dst, const ts_expr *dbase,
		      const ts_buffer *src, const ts_expr *sbase, int64_t bytes)
{
	if (!em->async_copy || !dst->double_buffer || dst->scope != TS_SCOPE_SHARED ||
	    src->scope != TS_SCOPE_GLOBAL || (bytes != 4 && bytes != 8 && bytes != 16))
		return false;
	cg_ce_begin_line(em);
	ts_sb_printf(&em->out, "ts_cp_async%lld(&%s[", (long long)bytes, cg_ce_lookup(em, dst));
	cg_ce_sub(em, dbase, 0);
	ts_sb_printf(&em->out, "], &%s[", cg_ce_lookup(em, src));
	cg_ce_sub(em, sbase, 0);
	cg_ce_put(em, "]);\n");
	return true;
}

/* Whether the loop variable v appears in e only in the indices of loads
 * from local buffers (registers, whose index is a constant per lane). */
static bool lanes_from_registers(const ts_expr *e, const ts_expr *v)
{
	if (!ir_expr_uses_var((ts_expr *)e, v))
		return true;
	switch (e->kind) {
	case IR_LOAD:
		return e->u.load.buf->scope == TS_SCOPE_LOCAL && e->dtype.lanes == 1;
	case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV: case IR_MIN: case IR_MAX:
		return lanes_from_registers(e->u.bin.a, v) && lanes_from_registers(e->u.bin.b, v);
	case IR_CAST:
		return lanes_from_registers(e->u.un.a, v);
	default:
		return false;
	}
}

struct local_index {
	const ts_expr *v;
	bool found;
};

static bool local_index_fn(ts_expr *e, void *data)
{
	struct local_index *l = data;
	if (e->kind == IR_LOAD && e->u.load.buf->scope == TS_SCOPE_LOCAL &&
	    ir_expr_uses_var(e->u.load.index, l->v))
		l->found = true;
	return !l->found;
}

/* CUDA: a vectorized loop that is not one vector access (the guarded
 * edge of a register block's store) but indexes a local array with its
 * variable is written out lane by lane, the variable a constant in each,
 * so the array stays in registers (a loop would index it dynamically and
 * put it in local memory). */
static bool unrolled_lanes(emitter *em, const ts_stmt *s)
{
	int64_t lanes, m;
	ts_expr *v = s->u.for_.var;
	struct local_index l = {v, false};
	if (!em->d->bind_threads || !ir_is_const_int(s->u.for_.extent, &lanes) || lanes > 16 ||
	    !ir_is_const_int(s->u.for_.min, &m))
		return false;
	ir_stmt_visit(s->u.for_.body, NULL, local_index_fn, &l);
	if (!l.found)
		return false;
	for (int64_t i = 0; i < lanes && !em->failed; i++) {
		ts_expr *c = ts_const(em->ctx, v->dtype, m + i);
		ts_stmt *b = c ? ir_stmt_substitute(em->ctx, s->u.for_.body, 1, &v, &c) : NULL;
		b = b ? ir_simplify_stmt(em->ctx, b, 0, NULL) : NULL;
		if (!b)
			em->failed = true;
		else
			cg_ce_stmt(em, b);
	}
	return true;
}

/* A float2/float4 store of values computed from registers (a GEMM's
 * register block written out): each lane's value with the loop variable
 * fixed, in one make_floatN. */
static bool try_float4_from_registers(emitter *em, const ts_stmt *s, ts_expr *sbase, int64_t lanes)
{
	const ts_stmt *st = s->u.for_.body;
	ts_expr *v = s->u.for_.var;
	if (!lanes_from_registers(st->u.store.value, v))
		return false;
	ts_expr *lane[4];
	for (int i = 0; i < lanes; i++) {
		ts_expr *c = ts_const(em->ctx, v->dtype, i);
		lane[i] = c ? ir_substitute(em->ctx, st->u.store.value, 1, &v, &c) : NULL;
		lane[i] = lane[i] ? ir_simplify(em->ctx, lane[i], 0, NULL) : NULL;
		if (!lane[i]) {
			em->failed = true;
			return true;
		}
	}
	const char *type = lanes == 4 ? "float4" : "float2";
	cg_ce_begin_line(em);
	vec_access(em, type, st->u.store.buf, sbase, false);
	ts_sb_printf(&em->out, " = make_%s(", type);
	for (int i = 0; i < lanes; i++) {
		cg_ce_put(em, i ? ", " : "");
		cg_ce_sub(em, lane[i], 0);
	}
	cg_ce_put(em, ");\n");
	return true;
}

static bool try_float4(emitter *em, const ts_stmt *s)
{
	int64_t lanes;
	const ts_stmt *st = s->u.for_.body;
	if (!em->d->float4 || !ir_is_const_int(s->u.for_.extent, &lanes) ||
	    (lanes != 4 && lanes != 2) || st->kind != IR_S_STORE ||
	    st->u.store.value->dtype.lanes != 1)
		return false;
	ts_expr *bases[4];
	ts_expr *sbase = vec_base(em, st->u.store.buf, st->u.store.index, s, (int)lanes);
	em->nvec = 0;
	if (!sbase || !vec_value(em, st->u.store.value, s, (int)lanes, bases)) {
		em->nvec = 0;
		return sbase && try_float4_from_registers(em, s, sbase, lanes);
	}
	const char *type = lanes == 4 ? "float4" : "float2";
	if (em->nvec == 1 && em->vec_loads[0] == st->u.store.value) { /* a copy */
		ts_buffer *src = st->u.store.value->u.load.buf;
		if (!cg_ce_async_copy(em, st->u.store.buf, sbase, src, bases[0], lanes * 4)) {
			cg_ce_begin_line(em);
			vec_access(em, type, st->u.store.buf, sbase, false);
			cg_ce_put(em, " = ");
			vec_access(em, type, src, bases[0], true);
			cg_ce_put(em, ";\n");
		}
	} else {
		vec_compute(em, st, sbase, bases, (int)lanes);
	}
	em->nvec = 0;
	em->comp = -1;
	return true;
}

/* A vectorized copy of 2, 4 or 8 16-bit elements (a shared tile's fetch
 * of float16): one 4-, 8- or 16-byte move of the bits. */
static bool try_copy16(emitter *em, const ts_stmt *s)
{
	int64_t lanes;
	const ts_stmt *st = s->u.for_.body;
	if (!em->d->float4 || !ir_is_const_int(s->u.for_.extent, &lanes) ||
	    (lanes != 2 && lanes != 4 && lanes != 8) || st->kind != IR_S_STORE)
		return false;
	ts_expr *v = st->u.store.value;
	ts_buffer *dst = st->u.store.buf;
	if (v->kind != IR_LOAD || v->dtype.lanes != 1 || !ts_dtype_eq(v->dtype, dst->dtype) ||
	    !cg_ce_lookup(em, dst) || !cg_ce_lookup(em, v->u.load.buf))
		return false;
	/* lanes 16-bit elements from a multiple of lanes: 2 * lanes aligned bytes */
	ts_expr *db = dst->dtype.bits == 16 ? unit_base(em, dst, st->u.store.index, s, lanes) : NULL;
	ts_expr *sb = db ? unit_base(em, v->u.load.buf, v->u.load.index, s, lanes) : NULL;
	if (!sb)
		return false;
	if (cg_ce_async_copy(em, dst, db, v->u.load.buf, sb, lanes * 2))
		return true;
	const char *type = lanes == 8 ? "uint4" : lanes == 4 ? "uint2" : "unsigned";
	cg_ce_begin_line(em);
	vec_access(em, type, dst, db, false);
	cg_ce_put(em, " = ");
	vec_access(em, type, v->u.load.buf, sb, true);
	cg_ce_put(em, ";\n");
	return true;
}

/* A vectorized loop as one vector access, or lane by lane; false where
 * it is neither (it is then a loop). */
bool cg_ce_vector_loop(emitter *em, const ts_stmt *s)
{
	return try_float4(em, s) || try_copy16(em, s) || unrolled_lanes(em, s);
}

/* ---- tensorized nests (cuda_mma.h) -------------------------------------- */

/* A 16-bit float operand's bits (the buffer holds them). */
static const char *bits16(emitter *em, const ts_buffer *b, ts_expr *idx)
{
	const char *n = cg_ce_lookup(em, b), *i = idx ? cg_ce_expr_text(em, idx) : NULL;
	return n && i ? ts_sprintf(em->ctx, "%s[%s]", n, i) : NULL;
}

/* Two 16-bit elements in one register, lo in the low half: one 32-bit
 * load where they are adjacent and the pair is 4-byte aligned (an even
 * index: buffers are at least 16-byte aligned). */
static const char *pack(emitter *em, const ts_buffer *b, ts_expr *lo, ts_expr *hi)
{
	int64_t d;
	ts_expr *diff = lo && hi ? ir_simplify(em->ctx, ts_sub(em->ctx, hi, lo), 0, NULL) : NULL;
	if (diff && ir_is_const_int(diff, &d) && d == 1 && ir_multiple_of(lo, 2) && b->scope != TS_SCOPE_LOCAL) {
		const char *n = cg_ce_lookup(em, b), *i = cg_ce_expr_text(em, lo);
		return n && i ? ts_sprintf(em->ctx, "*(const unsigned *)&%s[%s]", n, i) : NULL;
	}
	const char *l = bits16(em, b, lo), *h = bits16(em, b, hi);
	return l && h ? ts_sprintf(em->ctx, "ts_pack16(%s, %s)", l, h) : NULL;
}

/* An operand loaded by one ldmatrix.x4 where its rows qualify
 * (cg_mma_ldsm_index): the register array's name, the load printed here,
 * before the nest's block, unless this run of updates loaded it already.
 * "" where the operand does not qualify, NULL on failure. */
static const char *operand_ldsm(emitter *em, const cg_mma_nest *n, bool b)
{
	ts_ctx *ctx = em->ctx;
	const ts_buffer *buf = b ? n->b : n->a;
	bool trans = false;
	ts_expr *at = cg_mma_ldsm_index(ctx, &em->mma, n, b, &trans);
	if (!at) /* each lane loads its elements (out of memory fails there) */
		return "";
	const char *i = cg_ce_expr_text(em, at), *bn = cg_ce_lookup(em, buf);
	if (!i || !bn)
		return NULL;
	for (int f = 0; em->in_run && f < em->nfrag; f++)
		if (em->frag[f].buf == buf && em->frag[f].trans == trans && !strcmp(em->frag[f].at, i))
			return em->frag[f].name;
	const char *name = cg_ce_define(em, at, b ? "mma_fb" : "mma_fa");
	if (!name)
		return NULL;
	cg_ce_line(em, ts_sprintf(ctx, "unsigned %s[4];", name));
	cg_ce_line(em, ts_sprintf(ctx, "ts_ldsm_x4%s(%s, &%s[%s]);", trans ? "_trans" : "", name, bn, i));
	if (em->in_run && em->nfrag < (int)TS_COUNT_OF(em->frag))
		em->frag[em->nfrag++] = (mma_frag){buf, i, trans, name};
	return name;
}

/* An operand each lane loads itself, 2 elements a register (A's a0..a7;
 * B's b0..b3 of columns 0-7, then of 8-15), as array `name`. */
static bool operand_lanes(emitter *em, const cg_mma_nest *n, bool b, const char *name)
{
	ts_ctx *ctx = em->ctx;
	const ts_buffer *buf = b ? n->b : n->a;
	const char *r[4];
	for (int j = 0; j < 4; j++) {
		ts_expr *lo = b ? cg_mma_b_index(ctx, &em->mma, n, j >> 1, 2 * (j & 1))
				: cg_mma_a_index(ctx, &em->mma, n, 2 * j);
		ts_expr *hi = b ? cg_mma_b_index(ctx, &em->mma, n, j >> 1, 2 * (j & 1) + 1)
				: cg_mma_a_index(ctx, &em->mma, n, 2 * j + 1);
		if (!(r[j] = pack(em, buf, lo, hi)))
			return false;
	}
	cg_ce_line(em, ts_sprintf(ctx, "const unsigned %s[4] = {%s, %s, %s, %s};", name, r[0], r[1], r[2], r[3]));
	return true;
}

/* An operand element rounded to TF32, as the bits mma.sync takes. */
static const char *tf32_bits(emitter *em, const ts_buffer *b, ts_expr *idx)
{
	const char *n = cg_ce_lookup(em, b), *i = idx ? cg_ce_expr_text(em, idx) : NULL;
	em->tf32 = true;
	return n && i ? ts_sprintf(em->ctx, "__float_as_uint(ts_round_tf32(%s[%s]))", n, i) : NULL;
}

/* One mma.sync of shape.types onto columns 8 * half .. + 7 of n's tile:
 * the accumulator's 4 registers there, a's 4 (array a), b's 2. */
static bool mma_asm(emitter *em, const cg_mma_nest *n, int half, const char *shape,
		    const char *a, const char *b0, const char *b1)
{
	const char *frag = cg_ce_lookup(em, em->mma.frag[n->acc]), *c[4];
	for (int i = 0; i < 4; i++) {
		ts_expr *ci = cg_mma_c_index(em->ctx, n, half, i);
		if (!frag || !ci || !(c[i] = cg_ce_expr_text(em, ci)))
			return false;
	}
	cg_ce_begin_line(em);
	ts_sb_printf(&em->out, "asm(\"mma.sync.aligned.%s {%%0, %%1, %%2, %%3}, {%%4, %%5, %%6, %%7}, "
		     "{%%8, %%9}, {%%0, %%1, %%2, %%3};\"\n", shape);
	ts_sb_indent(&em->out, em->indent + 1);
	ts_sb_printf(&em->out, ": \"+f\"(%s[%s]), \"+f\"(%s[%s]), \"+f\"(%s[%s]), \"+f\"(%s[%s])\n",
		     frag, c[0], frag, c[1], frag, c[2], frag, c[3]);
	ts_sb_indent(&em->out, em->indent + 1);
	ts_sb_printf(&em->out, ": \"r\"(%s[0]), \"r\"(%s[1]), \"r\"(%s[2]), \"r\"(%s[3]), "
		     "\"r\"(%s), \"r\"(%s));\n", a, a, a, a, b0, b1);
	return true;
}

/* A TF32 update: per k step of 8, each lane's A fragment (4 elements),
 * then for each 8 columns its B fragment (2) and one mma.sync m16n8k8. */
static bool mma_tf32(emitter *em, const cg_mma_nest *n)
{
	ts_ctx *ctx = em->ctx;
	const cg_mma *mm = &em->mma;
	for (int ks = 0; ks < 2; ks++) {
		const char *a[4], *b[2];
		for (int i = 0; i < 4; i++)
			if (!(a[i] = tf32_bits(em, n->a, cg_mma_tf32_a_index(ctx, mm, n, ks, i))))
				return false;
		cg_ce_line(em, ts_sprintf(ctx, "const unsigned mma_a%d[4] = {%s, %s, %s, %s};", ks, a[0], a[1], a[2], a[3]));
		for (int h = 0; h < 2; h++) {
			for (int i = 0; i < 2; i++)
				if (!(b[i] = tf32_bits(em, n->b, cg_mma_tf32_b_index(ctx, mm, n, ks, h, i))))
					return false;
			if (!mma_asm(em, n, h, "m16n8k8.row.col.f32.tf32.tf32.f32",
				     ts_sprintf(ctx, "mma_a%d", ks), b[0], b[1]))
				return false;
		}
	}
	return true;
}

/* A 16-bit update: A's and B's fragments (one ldmatrix each where they
 * qualify, loaded before the block), then two mma.sync m16n8k16. */
static bool mma_16bit(emitter *em, const cg_mma_nest *n, const char *fa, const char *fb)
{
	ts_ctx *ctx = em->ctx;
	if (*fa)
		cg_ce_line(em, ts_sprintf(ctx, "const unsigned *mma_a = %s;", fa));
	else if (!operand_lanes(em, n, false, "mma_a"))
		return false;
	if (*fb)
		cg_ce_line(em, ts_sprintf(ctx, "const unsigned *mma_b = %s;", fb));
	else if (!operand_lanes(em, n, true, "mma_b"))
		return false;
	const char *shape = n->type == CG_MMA_BF16 ? "m16n8k16.row.col.f32.bf16.bf16.f32"
						  : "m16n8k16.row.col.f32.f16.f16.f32";
	return mma_asm(em, n, 0, shape, "mma_a", "mma_b[0]", "mma_b[1]") &&
	       mma_asm(em, n, 1, shape, "mma_a", "mma_b[2]", "mma_b[3]");
}

/* An update as mma.sync in a block of its own; elementwise nests as the
 * lane's 8 elements. */
void cg_ce_mma_nest(emitter *em, const ts_stmt *s)
{
	const cg_mma_nest *n = cg_mma_find(&em->mma, s);
	const char *loop = s->u.for_.var->u.var.name;
	if (!n) {
		cg_ce_fail(em, TS_ERR_INTERNAL, "tensorized loop %s was not matched", loop);
		return;
	}
	ts_ctx *ctx = em->ctx;
	if (!n->update) {
		cg_ce_line(em, ts_sprintf(ctx, "/* %s: this lane's 8 elements of the 16 x 16 tile */", loop));
		for (int k = 0; k < 8 && !em->failed; k++)
			cg_ce_stmt(em, cg_mma_slot(ctx, &em->mma, n, k));
		return;
	}
	bool tf32 = n->type == CG_MMA_TF32;
	const char *fa = tf32 ? "" : operand_ldsm(em, n, false), *fb = fa && !tf32 ? operand_ldsm(em, n, true) : "";
	cg_ce_line(em, ts_sprintf(ctx, "{ /* %s: 16 x 16 x 16 on tensor cores%s */", loop, tf32 ? ", TF32" : ""));
	em->indent++;
	bool ok = fa && fb && (tf32 ? mma_tf32(em, n) : mma_16bit(em, n, fa, fb));
	if (!ok && !em->failed)
		cg_ce_fail(em, ts_last_status(ctx) != TS_OK ? ts_last_status(ctx) : TS_ERR_NOMEM,
			   "tensorize: loop %s: out of memory", loop);
	em->indent--;
	cg_ce_line(em, "}");
}

/* ---- launch configuration and shared memory ----------------------------- */

static void collect(emitter *em, const ts_stmt *s, unsigned bound);

static void collect_thread(emitter *em, const ts_stmt *s, unsigned bound)
{
	ts_thread_tag t = s->u.for_.thread;
	const char *v = s->u.for_.var->u.var.name;
	int64_t ext;
	if (t < TS_BLOCK_X || t > TS_THREAD_Z) {
		cg_ce_fail(em, TS_ERR_INVALID, "loop %s is a thread loop without a thread tag", v);
		return;
	}
	if (!ir_is_const_int(s->u.for_.extent, &ext)) {
		cg_ce_fail(em, TS_ERR_UNSUPPORTED, "loop %s bound to %s needs a constant extent", v,
			   ts_thread_tag_name(t));
		return;
	}
	/* A loop bound to an index that an enclosing loop is bound to already
	 * (a stage computed at a thread loop, fetching cooperatively) uses the
	 * same hardware index: it must not need more of it than the enclosing
	 * loop provides, or threads outside that loop's guard would be needed. */
	if ((bound & (1u << t)) && ext > em->bound_ext[t]) {
		cg_ce_fail(em, TS_ERR_INVALID,
			   "loop %s is bound to %s with extent %lld inside a loop bound to it with extent %lld",
			   v, ts_thread_tag_name(t), (long long)ext, (long long)em->bound_ext[t]);
		return;
	}
	int64_t *dim = t >= TS_THREAD_X ? &em->launch.block[tag_dim(t)] : &em->launch.grid[tag_dim(t)];
	if (ext > *dim)
		*dim = ext;
	int64_t saved = em->bound_ext[t];
	em->bound_ext[t] = ext;
	collect(em, s->u.for_.body, bound | (1u << t));
	em->bound_ext[t] = saved;
}

/* A shared buffer's bytes in the block's shared memory: each one 16-byte
 * aligned (float4 and ldmatrix accesses); the sizes are bounded by the
 * arena's 2^40 bytes, so no overflow. */
int64_t cg_ce_shared_slot_bytes(const ts_buffer *b)
{
	return (b->size * ts_dtype_bytes(b->dtype) + 15) / 16 * 16;
}

static void collect_shared(emitter *em, ts_buffer *b)
{
	for (int i = 0; i < em->nshared; i++)
		if (em->shared[i] == b)
			return;
	if (em->nshared == (int)TS_COUNT_OF(em->shared)) {
		cg_ce_fail(em, TS_ERR_UNSUPPORTED, "more than %d shared buffers", em->nshared);
		return;
	}
	em->shared[em->nshared++] = b;
	em->launch.static_shared_bytes += cg_ce_shared_slot_bytes(b);
}

static void collect(emitter *em, const ts_stmt *s, unsigned bound)
{
	if (!s || em->failed)
		return;
	switch (s->kind) {
	case IR_S_FOR:
		if (s->u.for_.kind == TS_FOR_THREAD)
			collect_thread(em, s, bound);
		else
			collect(em, s->u.for_.body, bound);
		return;
	case IR_S_ALLOCATE:
		if (s->u.alloc.buf->scope == TS_SCOPE_SHARED)
			collect_shared(em, s->u.alloc.buf);
		collect(em, s->u.alloc.body, bound);
		return;
	case IR_S_IF:
		collect(em, s->u.if_.then_s, bound);
		collect(em, s->u.if_.else_s, bound);
		return;
	case IR_S_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			collect(em, s->u.seq.s[i], bound);
		return;
	case IR_S_LET:
		collect(em, s->u.let.body, bound);
		return;
	case IR_S_STORE: case IR_S_PROVIDE: case IR_S_REALIZE: case IR_S_EVALUATE:
	case IR_S_BARRIER: case IR_S_PREFETCH: case IR_STMT_KIND_COUNT:
		return;
	}
}

static void check_launch(emitter *em)
{
	const cg_launch *l = &em->launch;
	int64_t threads = l->block[0] * l->block[1] * l->block[2];
	if (threads > CG_CUDA_MAX_THREADS)
		cg_ce_fail(em, TS_ERR_UNSUPPORTED, "%lld threads per block (%lld x %lld x %lld), the limit is %d",
			   (long long)threads, (long long)l->block[0], (long long)l->block[1],
			   (long long)l->block[2], CG_CUDA_MAX_THREADS);
	else if (l->block[2] > CG_CUDA_MAX_BLOCK_Z)
		cg_ce_fail(em, TS_ERR_UNSUPPORTED, "a block %lld threads deep in z (threadIdx.z), the limit is %d",
			   (long long)l->block[2], CG_CUDA_MAX_BLOCK_Z);
	else if (l->grid[0] > INT32_MAX || l->grid[1] > 65535 || l->grid[2] > 65535)
		cg_ce_fail(em, TS_ERR_UNSUPPORTED, "grid (%lld, %lld, %lld) exceeds the CUDA limits",
			   (long long)l->grid[0], (long long)l->grid[1], (long long)l->grid[2]);
	else if (l->static_shared_bytes > CG_CUDA_MAX_SHARED)
		cg_ce_fail(em, TS_ERR_UNSUPPORTED, "%lld bytes of shared memory per block, more than any GPU "
			   "gives one (%d, sm_90)", (long long)l->static_shared_bytes, CG_CUDA_MAX_SHARED);
	else if (l->static_shared_bytes > CG_CUDA_MAX_STATIC_SHARED) {
		/* above 48 KB a kernel may only take shared memory dynamically:
		 * the buffers are carved from one extern array (assemble), the
		 * launch asks for the bytes, and the module allows them
		 * (cuFuncSetAttribute) */
		em->launch.shared_bytes = em->launch.static_shared_bytes;
		em->launch.static_shared_bytes = 0;
	}
}

/* The lane's place in the MMA fragments: group g = laneid / 4 and t =
 * laneid % 4. */
static void lane_vars(emitter *em)
{
	const cg_mma *m = &em->mma;
	const char *g = cg_ce_define(em, m->g, "mma_g"), *t = cg_ce_define(em, m->t, "mma_t");
	const char *r = cg_ce_define(em, m->r, "mma_r"), *q0 = cg_ce_define(em, m->q0, "mma_q0");
	const char *q1 = cg_ce_define(em, m->q1, "mma_q1");
	cg_ce_set_range(em, m->g, 0, 7);
	cg_ce_set_range(em, m->t, 0, 3);
	cg_ce_set_range(em, m->r, 0, 7);
	cg_ce_set_range(em, m->q0, 0, 1);
	cg_ce_set_range(em, m->q1, 0, 1);
	if (g && t && r && q0 && q1)
		cg_ce_line(em, ts_sprintf(em->ctx, "const int %s = (int)(ts_laneid() >> 2), %s = (int)(ts_laneid() & 3), "
					  "%s = (int)(ts_laneid() & 7), %s = (int)((ts_laneid() >> 3) & 1), "
					  "%s = (int)(ts_laneid() >> 4);", g, t, r, q0, q1));
}

/* CUDA, before the body: the launch configuration, the shared buffers'
 * names, the tensorized nests and the lane's place in their fragments. */
void cg_ce_kernel_prologue(emitter *em)
{
	collect(em, em->f->body, 0);
	check_launch(em);
	for (int i = 0; i < em->nshared; i++) {
		cg_ce_define(em, em->shared[i], em->shared[i]->name);
		em->async_copy |= em->shared[i]->double_buffer;
	}
	if (!em->failed && cg_mma_scan(em->ctx, em->f->body, em->launch.block, &em->mma) != TS_OK)
		em->failed = true;
	if (!em->failed && em->mma.nnest)
		lane_vars(em);
}
