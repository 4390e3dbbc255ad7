/*
 * op_schedules.c - default schedules of the operator library (see
 * op_schedules.h for the structure of each).
 *
 * Each function only calls the public primitives, exactly as a user would;
 * the first failing primitive's error is returned unchanged.
 */
#include "op_schedules.h"

#include "ops.h"

#include <stdio.h>

#define TRY(call)                                                              \
	do {                                                                   \
		ts_status st_ = (call);                                        \
		if (st_ != TS_OK)                                              \
			return st_;                                            \
	} while (0)

static bool host_has_avx512(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_cpu_supports("avx512f");
#else
	return false;
#endif
}

static ts_status check_lanes(ts_schedule *s, const char *what, int lanes)
{
	if (lanes < 1 || lanes > TS_MAX_VECTOR_LANES)
		return ts_error(s->ctx, TS_ERR_INVALID, "%s: lanes must be 1..%d, got %d", what,
				TS_MAX_VECTOR_LANES, lanes);
	return TS_OK;
}

/* Parallel outer data axes; the innermost data axis vectorized when it is
 * at least `lanes` wide, with the reduction loops outside it. */
static ts_status default_stage(ts_stage *st, int lanes)
{
	int ndata = st->tensor->ndim;
	ts_axis *inner = ts_axis_of(st, ndata - 1), *outer = ndata > 1 ? ts_axis_of(st, 0) : NULL;
	for (int i = 1; i < ndata - 1; i++)
		TRY(ts_fuse(st, outer, ts_axis_of(st, i), &outer));
	if (outer)
		TRY(ts_parallel(st, outer));
	if (inner->extent < lanes)
		return TS_OK;
	ts_axis *io, *ii;
	TRY(ts_split_tail(st, inner, lanes, TS_TAIL_PARTITION, &io, &ii));
	/* the vector loop innermost, every reduction loop outside it */
	ts_axis *order[64];
	int n = 0;
	for (int i = 0; i < st->nleaf; i++)
		if (st->leaf[i] != ii && st->leaf[i] != outer)
			order[n++] = st->leaf[i];
	order[n++] = ii;
	TRY(ts_reorder(st, n, order));
	return ts_vectorize(st, ii);
}

typedef struct reads {
	const ts_tensor *t;
	int n;
} reads;

static bool count_reads(ts_expr *e, void *data)
{
	reads *r = data;
	r->n += e->kind == IR_READ && e->u.read.tensor == r->t;
	return true;
}

/* Whether some stage reads st's tensor at more than one place: inlined,
 * such a producer is computed once per read, and a chain of them doubles
 * in size at every stage (TS_MAX_EXPR_NODES), so it is computed at root. */
static bool read_twice(ts_schedule *s, const ts_stage *st)
{
	for (int i = 0; i < s->nstages; i++) {
		reads r = {st->tensor, 0};
		ir_expr_visit(s->stages[i]->body, count_reads, &r);
		if (r.n > 1)
			return true;
	}
	return false;
}

/* What the caller already gave st that a schedule function would lose
 * or break, NULL when nothing: its own primitives (cache_write first)
 * need the stage as ts_create_schedule made it. */
static const char *given(ts_schedule *s, const ts_stage *st)
{
	if (!sch_stage_untouched(st))
		return "is already scheduled (split, reordered, annotated, inlined or attached)";
	/* cache_write leaves the stage a copy of its cache, cache_read points
	 * its reads at a copy, rfactor moves its reduction into another stage;
	 * each rewrites the stage's operation */
	if (st->body != st->tensor->body)
		return "already has a cache_write, a cache_read or an rfactor (its operation reads another stage now)";
	if (st->double_buffer || st->nprefetch > 0)
		return "already has a double_buffer or a prefetch (each needs loops the schedule would change)";
	for (int d = 0; d < st->tensor->ndim; d++)
		if (st->align_factor[d])
			return "already has a storage_align (its buffer could be inlined away)";
	for (int i = 0; i < s->nstages; i++) {
		const ts_stage *o = s->stages[i];
		if ((o->attach == SCH_ATTACH_AT && o->attach_stage == st) ||
		    (o->store == SCH_STORE_AT && o->store_stage == st))
			return ts_sprintf(s->ctx, "already has stage %s attached at its loop '%s' (the schedule would split or fuse it away)",
					  o->name, (o->attach == SCH_ATTACH_AT ? o->attach_axis : o->store_axis)->name);
	}
	return NULL;
}

/* A stage the schedule functions may place as they like. */
static bool pristine(ts_schedule *s, const ts_stage *st)
{
	return st && !given(s, st);
}

/* A producer a schedule function may inline or attach: pristine, and not
 * an output (whose buffer the caller reads). */
static bool placeable(ts_schedule *s, const ts_tensor *P)
{
	const ts_stage *sp = P->op == TS_OP_COMPUTE ? ts_stage_of(s, P) : NULL;
	return pristine(s, sp) && !sp->is_output;
}

static ts_status untouched(ts_schedule *s, const char *what, const ts_tensor *T)
{
	const ts_stage *st = ts_stage_of(s, T);
	if (!st)
		return ts_last_status(s->ctx);
	const char *why = given(s, st);
	if (why)
		return ts_error(s->ctx, TS_ERR_INVALID, "%s: %s %s; give it a schedule of its own", what,
				T->name, why);
	return TS_OK;
}

/* untouched() of n stages. */
static ts_status stages_untouched(ts_schedule *s, const char *what, int n, const ts_stage *const *st)
{
	for (int i = 0; i < n; i++)
		TRY(untouched(s, what, st[i]->tensor));
	return TS_OK;
}

/* Every stage of s untouched: a whole-schedule default refuses one
 * already scheduled before changing any. */
static ts_status all_untouched(ts_schedule *s, const char *what)
{
	return stages_untouched(s, what, s->nstages, (const ts_stage *const *)s->stages);
}

/* Y, its epilogue chain[0..n) and their root C untouched(). */
static ts_status chain_untouched(ts_schedule *s, const char *what, const ts_tensor *Y, ts_tensor *const *chain,
				 int n, const ts_tensor *C)
{
	TRY(untouched(s, what, Y));
	for (int i = 0; i < n; i++)
		TRY(untouched(s, what, chain[i]));
	return untouched(s, what, C);
}

/* Whether producer P of `reader` is the operator schedule's to place: as
 * ts_create_schedule made it (one the caller scheduled keeps that
 * schedule), no output, and (unless only inlined) read by no other stage;
 * otherwise it stays computed whole, at root, before its readers. */
static bool own_producer(ts_schedule *s, const ts_tensor *P, const ts_tensor *reader, bool attach)
{
	if (!placeable(s, P))
		return false;
	for (int k = 0; attach && k < s->nstages; k++) {
		const ts_stage *o = s->stages[k];
		if (o->tensor != reader && o->tensor != P && ir_expr_reads(o->body, P))
			return false;
	}
	return true;
}

ts_status ts_schedule_default_cpu(ts_schedule *s, int lanes)
{
	if (!s)
		return TS_ERR_INVALID;
	TRY(check_lanes(s, "schedule_default_cpu", lanes));
	TRY(all_untouched(s, "schedule_default_cpu"));
	for (int i = 0; i < s->nstages; i++) {
		ts_stage *st = s->stages[i];
		if (!st->is_output && st->body->kind != IR_REDUCE && !read_twice(s, st))
			TRY(ts_compute_inline(st));
		else
			TRY(default_stage(st, lanes));
	}
	return TS_OK;
}

/* One output element per thread over the fused data axes; returns the
 * thread axis. */
static ts_status default_stage_cuda(ts_stage *st, int threads, ts_axis **thread)
{
	ts_axis *f = ts_axis_of(st, 0), *bx;
	for (int i = 1; i < st->tensor->ndim; i++)
		TRY(ts_fuse(st, f, ts_axis_of(st, i), &f));
	TRY(ts_split(st, f, threads, &bx, thread));
	TRY(ts_bind(st, bx, TS_BLOCK_X));
	return ts_bind(st, *thread, TS_THREAD_X);
}

ts_status ts_schedule_default_cuda(ts_schedule *s, int threads)
{
	if (!s)
		return TS_ERR_INVALID;
	if (threads < 1 || threads > 1024)
		return ts_error(s->ctx, TS_ERR_INVALID, "schedule_default_cuda: threads must be 1..1024, got %d",
				threads);
	if (s->nout != 1)
		return ts_error(s->ctx, TS_ERR_UNSUPPORTED,
				"schedule_default_cuda: a function is one kernel, so one output (got %d)", s->nout);
	TRY(all_untouched(s, "schedule_default_cuda"));
	ts_stage *out = ts_stage_of(s, s->outputs[0]);
	ts_axis *tx;
	TRY(default_stage_cuda(out, threads, &tx));
	/* elementwise stages inline; a reduction read only by the output, at
	 * its own element (a pooling window), runs in the output's thread, in
	 * registers.  Any other (softmax's row maximum and sum, layer norm's
	 * mean) is computed once per element of its own, at root, one thread
	 * each, accumulating in a register: a kernel of its own, launched
	 * before its readers' (build_cuda.c). */
	int64_t nout = ts_tensor_numel(out->tensor);
	ts_stage *red[64];
	int nred = 0;
	for (int i = 0; i < s->nstages; i++) {
		ts_stage *st = s->stages[i];
		if (st == out)
			continue;
		if (st->body->kind != IR_REDUCE)
			TRY(ts_compute_inline(st));
		else if (nred < (int)TS_COUNT_OF(red))
			red[nred++] = st;
		else
			return ts_error(s->ctx, TS_ERR_UNSUPPORTED, "schedule_default_cuda: more than %d "
					"reductions", (int)TS_COUNT_OF(red));
	}
	for (int i = 0; i < nred; i++) {
		ts_stage *st = red[i], *readers[2];
		if (sch_consumers(s, st->tensor, readers, 2) != 1 || readers[0] != out ||
		    ts_tensor_numel(st->tensor) < nout) {
			ts_tensor *acc = ts_cache_write(s, st->tensor, TS_SCOPE_LOCAL);
			ts_axis *t;
			if (!acc)
				return ts_last_status(s->ctx);
			TRY(default_stage_cuda(st, threads, &t));
			TRY(ts_compute_at(ts_stage_of(s, acc), st, t));
			continue;
		}
		TRY(ts_set_scope(st, TS_SCOPE_LOCAL));
		TRY(ts_compute_at(st, out, tx));
	}
	return TS_OK;
}

ts_matmul_cpu_params ts_matmul_cpu_default(void)
{
	bool wide = host_has_avx512();
	return (ts_matmul_cpu_params){.mr = wide ? 6 : 4, .nr = wide ? 32 : 16, .kunroll = 4,
				      .parallel = true, .prefetch = wide};
}

bool ts_matmul_cpu_packs(int64_t m)
{
	/* AVX-512, 8 x 48 blocks read in place against packed, one thread
	 * and two: 1-11% faster at 64-256 rows (BERT-base's 128 included),
	 * 1-3% at 512 x 768 x 768; packed 0-2% faster at 512^3, 3-12% at
	 * 1000-2048 rows, 1.6x at 2048^3 */
	return m >= (host_has_avx512() ? 512 : 32);
}

/* Columns computed past n by blocks of nr, per 10000 of n. */
static int64_t column_waste(int64_t n, int64_t nr)
{
	int64_t past = (nr - n % nr) % nr;
	return past * 10000 / n;
}

ts_matmul_cpu_params ts_matmul_cpu_default_for(int64_t n)
{
	ts_matmul_cpu_params d = ts_matmul_cpu_default();
	/* AVX-512: 8 x 48 blocks (24 accumulators of the 32 registers, three
	 * vectors a row) reuse each load more than 6 x 32, 4-17% faster on
	 * BERT-base's GEMMs (N 768, 2304, 3072) and 3-5% at N = 1000 and
	 * 2048, where the last panel wastes under 1%; where 48 wastes more
	 * columns than 32 does, 6 x 32 (N = 256: 10% faster; 512, 1024: 0-4%) */
	if (d.nr == 32 && n > 0 && column_waste(n, 48) <= column_waste(n, 32) + 100) {
		d.mr = 8;
		d.nr = 48;
	}
	return d;
}

static ts_status need(ts_schedule *s, const ts_tensor *t, const char *what)
{
	if (!s)
		return TS_ERR_INVALID;
	if (!t)
		return ts_error(s->ctx, TS_ERR_INVALID, "%s: tensor is NULL", what);
	/* named here, before a primitive names one of its operands */
	if (t->ctx && t->ctx != s->ctx)
		return ts_error(s->ctx, TS_ERR_INVALID, "%s: tensor %s belongs to another context", what,
				t->name);
	return TS_OK;
}

/* Tile sizes are split factors: each must be positive. */
static ts_status positive(ts_schedule *s, const char *what, int n, const int64_t *v,
			  const char *const *names)
{
	for (int i = 0; i < n; i++)
		if (v[i] <= 0)
			return ts_error(s->ctx, TS_ERR_INVALID, "%s: parameter %s must be positive, got %lld",
					what, names[i], (long long)v[i]);
	return TS_OK;
}

/* The packing stage: each panel row is one vector store. */
static ts_status schedule_packing(ts_schedule *s, ts_tensor *Bp, bool parallel)
{
	ts_stage *sp = ts_stage_of(s, Bp);
	if (!sp)
		return ts_last_status(s->ctx);
	TRY(ts_vectorize(sp, ts_axis_of(sp, 2)));
	if (parallel)
		TRY(ts_parallel(sp, ts_axis_of(sp, 0)));
	return TS_OK;
}

static bool is_matmul(const ts_tensor *C)
{
	if (C->op != TS_OP_COMPUTE || C->ndim != 2 || C->nreduce != 1)
		return false;
	if (C->ninputs == 2)
		return true;
	/* A x A reads one tensor: a square A, as large as C */
	const ts_tensor *A = C->ninputs == 1 ? C->inputs[0] : NULL;
	return A && A->ndim == 2 && A->shape[0] == A->shape[1] && C->shape[0] == A->shape[0] &&
	       C->shape[1] == A->shape[0] && C->reduce_axis[0]->extent == A->shape[0];
}

/* The packing stage of C's B operand (Bp[panels, K, nr] of
 * ts_op_matmul_packed), or NULL: B is an input, or a computed matrix
 * (relu(B)), which is left computed whole before the GEMM. */
static ts_tensor *packed_operand(const ts_tensor *C)
{
	ts_tensor *B = C->inputs[C->ninputs - 1];
	return B->op == TS_OP_COMPUTE && B->ndim == 3 ? B : NULL;
}

/* Where C's B is packed (ts_pack_mode), TS_PACK_AUTO resolved: per panel
 * at the column-panel loop, or ahead (also when B is not packed at all).
 * Serial, per panel only moves the packing next to its use; parallel, the
 * panels are the parallel loop's iterations, and fewer than 16 of them
 * would leave threads idle (or unevenly loaded) where the fused tile loop
 * would not. */
static ts_pack_mode pack_mode(ts_schedule *s, const ts_tensor *C, const ts_matmul_cpu_params *d)
{
	if (!packed_operand(C) || d->pack != TS_PACK_AUTO)
		return packed_operand(C) ? d->pack : TS_PACK_AHEAD;
	/* an output (the caller wants Bp too) stays at root: packed ahead */
	const ts_stage *sp = ts_stage_of(s, packed_operand(C));
	int64_t N = C->shape[1], panels = N / d->nr + (N % d->nr != 0);
	return sp && !sp->is_output && (!d->parallel || panels >= 16) ? TS_PACK_PANEL : TS_PACK_AHEAD;
}

/* The output stage O: mr x nr tiles, column panels outside (one panel of Bp
 * stays in L2 across the rows).  With B packed per panel (d->pack as
 * matmul_prologue resolved it), the packing is computed at the panel loop
 * and *f is the row loop; else the outer loops are fused into *f. */
static ts_status tile_output(ts_schedule *s, ts_stage *so, const ts_tensor *C,
			     const ts_matmul_cpu_params *d, ts_axis **f)
{
	ts_axis *mo, *no, *mi, *ni;
	TRY(ts_tile(so, ts_axis_of(so, 0), ts_axis_of(so, 1), d->mr, d->nr, &mo, &no, &mi, &ni));
	TRY(ts_reorder(so, TS_AXES(no, mo)));
	ts_axis *outer = no;
	bool panel = d->pack == TS_PACK_PANEL;
	if (panel)
		TRY(ts_compute_at(ts_stage_of(s, packed_operand(C)), so, no));
	else
		TRY(ts_fuse(so, no, mo, &outer));
	*f = panel ? mo : outer;
	TRY(ts_vectorize(so, ni));
	return d->parallel ? ts_parallel(so, outer) : TS_OK;
}

/* Whether t is an input of constant extents, as ts_prefetch wants. */
static bool constant_input(const ts_tensor *t)
{
	if (t->op != TS_OP_PLACEHOLDER)
		return false;
	for (int i = 0; i < t->ndim; i++)
		if (t->dim_var[i])
			return false;
	return true;
}

/* The local accumulator, one tile of O computed at O's tile loop f: k
 * outermost, the mr rows unrolled and the nr columns one vector each.
 * With d->prefetch, each k step also fetches the B rows the next tile
 * reads at that step: within a column panel they are in cache already (a
 * prefetch that hits costs a load slot, of which the block leaves
 * plenty), and the last tile of a panel brings in the next panel's, which
 * its first tile would otherwise wait for. */
static ts_status schedule_accumulator(ts_stage *scc, ts_stage *so, ts_axis *f,
				      const ts_matmul_cpu_params *d, const ts_tensor *C)
{
	ts_axis *ko, *ki;
	TRY(ts_compute_at(scc, so, f));
	ts_axis *mc = ts_axis_of(scc, 0), *nc = ts_axis_of(scc, 1);
	TRY(ts_split(scc, ts_reduce_axis_of(scc, 0), d->kunroll, &ko, &ki));
	TRY(ts_reorder(scc, TS_AXES(ko, ki, mc, nc)));
	TRY(ts_unroll(scc, ki));
	TRY(ts_unroll(scc, mc));
	ts_tensor *B = C->inputs[C->ninputs - 1];
	if (d->prefetch && constant_input(B))
		TRY(ts_prefetch_ahead(scc, B, ko, f, 1));
	return ts_vectorize(scc, nc);
}

/* The register block's columns are one vector: at most
 * TS_MAX_VECTOR_LANES, checked before any primitive changes the schedule. */
static ts_status block_params(ts_schedule *s, const char *what, const ts_matmul_cpu_params *d)
{
	TRY(positive(s, what, 3, (int64_t[]){d->mr, d->nr, d->kunroll},
		     (const char *[]){"mr", "nr", "kunroll"}));
	if (d->nr > TS_MAX_VECTOR_LANES)
		return ts_error(s->ctx, TS_ERR_INVALID,
				"%s: parameter nr is %lld; the columns of a register block are one vector of at most %d lanes",
				what, (long long)d->nr, TS_MAX_VECTOR_LANES);
	if (d->kc < 0)
		return ts_error(s->ctx, TS_ERR_INVALID,
				"%s: parameter kc must be 0 (the whole reduction at once) or positive, got %lld",
				what, (long long)d->kc);
	return TS_OK;
}

/* kc applies where C is the schedule's result in memory: an epilogue (or a
 * batch's tile) reads the whole sum from registers. */
static ts_status no_k_chunks(ts_schedule *s, const char *what, const ts_tensor *Y,
			     const ts_matmul_cpu_params *d)
{
	if (d->kc == 0)
		return TS_OK;
	return ts_error(s->ctx, TS_ERR_INVALID,
			"%s(%s): parameter kc is %lld; the reduction in chunks accumulates C in "
			"memory, so it applies to a matmul without an epilogue (kc 0 here)",
			what, Y->name, (long long)d->kc);
}

/* Checks the parameters and the matmul C; resolves d->pack; schedules C's
 * packing stage. */
static ts_status matmul_prologue(ts_schedule *s, const char *what, ts_tensor *C,
				 ts_matmul_cpu_params *d)
{
	TRY(block_params(s, what, d));
	if (!is_matmul(C))
		return ts_error(s->ctx, TS_ERR_INVALID,
				"%s: %s is not a matmul (ts_op_matmul or ts_op_matmul_packed)", what,
				C->name);
	if ((unsigned)d->pack > TS_PACK_PANEL)
		return ts_error(s->ctx, TS_ERR_INVALID,
				"%s: parameter pack must be TS_PACK_AUTO, TS_PACK_AHEAD or TS_PACK_PANEL, got %d",
				what, (int)d->pack);
	TRY(untouched(s, what, C));
	/* refused here, before anything changes: the panel loop would find
	 * Bp stored at root, after C was tiled */
	const ts_stage *sp = packed_operand(C) ? ts_stage_of(s, packed_operand(C)) : NULL;
	if (d->pack == TS_PACK_PANEL && sp && sp->is_output)
		return ts_error(s->ctx, TS_ERR_INVALID,
				"%s: %s is an output of the schedule, stored whole, so it cannot be packed "
				"per panel (TS_PACK_PANEL); use TS_PACK_AHEAD or TS_PACK_AUTO", what,
				packed_operand(C)->name);
	d->pack = pack_mode(s, C, d);
	if (packed_operand(C))
		/* a panel packed inside the parallel panel loop runs serially */
		TRY(schedule_packing(s, packed_operand(C), d->parallel && d->pack != TS_PACK_PANEL));
	if (d->mr > C->shape[0]) /* few rows (a dense layer): no idle accumulators */
		d->mr = C->shape[0];
	return TS_OK;
}

/* The default parameters for C: those for its columns, its tiles as wide
 * as B's panels where B is packed (a tile across two panels reads both).
 * With a symbolic extent among A's and B's inner dimensions their rows are
 * run-time strides apart, and each row an unrolled k step reads costs a
 * register for its address (constant strides are folded into
 * displacements): k stays rolled so the accumulators and addresses fit. */
static ts_matmul_cpu_params default_for(const ts_tensor *C)
{
	ts_matmul_cpu_params d = C->dim_var[1] ? ts_matmul_cpu_default()
					       : ts_matmul_cpu_default_for(C->shape[1]);
	const ts_tensor *Bp = C->ninputs == 2 ? packed_operand(C) : NULL;
	if (Bp && Bp->shape[2] != d.nr) {
		d = ts_matmul_cpu_default();
		d.nr = Bp->shape[2];
	}
	for (int i = 0; i < C->ninputs; i++)
		for (int k = 1; k < C->inputs[i]->ndim; k++)
			if (C->inputs[i]->dim_var[k])
				d.kunroll = 1;
	return d;
}

/* C's reduction in chunks of kc: the mr x nr tile accumulates in C itself,
 * loaded and stored once per chunk (LLVM keeps it in registers within
 * one), the chunk loop between the column panels and the row tiles, so
 * that a kc x nr panel of B and the mr x kc blocks of A a panel reads stay
 * in cache while the rows pass.  Parallel over the panels. */
static ts_status schedule_k_chunks(ts_schedule *s, ts_tensor *C, const ts_matmul_cpu_params *d)
{
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *mo, *no, *mi, *ni, *ko, *ki, *kio, *kii;
	TRY(ts_tile(sc, ts_axis_of(sc, 0), ts_axis_of(sc, 1), d->mr, d->nr, &mo, &no, &mi, &ni));
	/* the partial tiles of the last rows, columns and chunk in nests of
	 * their own: guarded inside, the tile's rows were tested at every step
	 * (12 x 32 over 128 rows ran 2x slower) */
	TRY(ts_set_tail(sc, mo, TS_TAIL_PARTITION));
	TRY(ts_set_tail(sc, no, TS_TAIL_PARTITION));
	TRY(ts_split_tail(sc, ts_reduce_axis_of(sc, 0), d->kc, TS_TAIL_PARTITION, &ko, &ki));
	TRY(ts_split_tail(sc, ki, d->kunroll, TS_TAIL_PARTITION, &kio, &kii));
	TRY(ts_reorder(sc, TS_AXES(no, ko, mo, kio, kii, mi, ni)));
	if (d->pack == TS_PACK_PANEL)
		TRY(ts_compute_at(ts_stage_of(s, packed_operand(C)), sc, no));
	TRY(ts_unroll(sc, kii));
	TRY(ts_unroll(sc, mi));
	TRY(ts_vectorize(sc, ni));
	return d->parallel ? ts_parallel(sc, no) : TS_OK;
}

static ts_status schedule_matmul(ts_schedule *s, const char *what, ts_tensor *C,
				 const ts_matmul_cpu_params *p)
{
	ts_matmul_cpu_params d = p ? *p : default_for(C);
	TRY(matmul_prologue(s, what, C, &d));
	if (d.kc > 0 && d.kc < C->reduce_axis[0]->extent)
		return schedule_k_chunks(s, C, &d);
	ts_tensor *CC = ts_cache_write(s, C, TS_SCOPE_LOCAL);
	if (!CC)
		return ts_last_status(s->ctx);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *f;
	TRY(tile_output(s, sc, C, &d, &f));
	return schedule_accumulator(ts_stage_of(s, CC), sc, f, &d, C);
}

ts_status ts_schedule_matmul_cpu(ts_schedule *s, ts_tensor *C, const ts_matmul_cpu_params *p)
{
	TRY(need(s, C, "schedule_matmul_cpu"));
	return schedule_matmul(s, "schedule_matmul_cpu", C, p);
}

/* ---- elementwise epilogues ----------------------------------------------------- */

/* The reduction an epilogue chain ends at, as a schedule names it in its
 * messages ("schedule_dense_cpu(Y): stage T reduces (it is not a matmul)"). */
typedef struct epilogue_root {
	const char *what;   /* the schedule */
	const char *noun;   /* "matmul" */
	const char *a_noun; /* "a matmul" */
	bool (*is_root)(const ts_tensor *t);
} epilogue_root;

static bool is_conv_nchwc(const ts_tensor *C)
{
	return C->op == TS_OP_COMPUTE && C->ndim == 5 && C->nreduce == 4;
}

static bool is_depthwise_nchwc(const ts_tensor *C)
{
	return C->op == TS_OP_COMPUTE && C->ndim == 5 && C->nreduce == 2;
}

static bool is_batch_matmul(const ts_tensor *C)
{
	/* A x A reads one tensor */
	return C->op == TS_OP_COMPUTE && C->ndim == 3 && (C->ninputs == 1 || C->ninputs == 2) &&
	       C->nreduce == 1;
}

static const epilogue_root dense_root = {"schedule_dense_cpu", "matmul", "a matmul", is_matmul};
static const epilogue_root bmm_root = {"schedule_batch_matmul_cpu", "batch matmul",
				       "a batch matmul", is_batch_matmul};
static const epilogue_root conv_root = {"schedule_conv2d_nchwc_cpu", "convolution",
					"an NCHW[x]c convolution", is_conv_nchwc};
static const epilogue_root dw_nchwc_root = {"schedule_depthwise_nchwc_cpu",
					    "depthwise convolution",
					    "an NCHW[x]c depthwise convolution",
					    is_depthwise_nchwc};

/* "[8, 12]": t's extents (a size variable by its name), for a message;
 * truncated to buf. */
static const char *extents_str(char *buf, size_t size, const ts_tensor *t)
{
	size_t n = 0;
	for (int d = 0; d < t->ndim && n < size; d++) {
		const char *sep = d ? ", " : "[";
		int w = t->dim_var[d] ? snprintf(buf + n, size - n, "%s%s", sep, t->dim_var[d]->u.var.name)
				      : snprintf(buf + n, size - n, "%s%lld", sep, (long long)t->shape[d]);
		n += w > 0 ? (size_t)w : size;
	}
	if (n < size)
		snprintf(buf + n, size - n, "]");
	return buf;
}

/* "i, j": the names of t's axes, for a message (truncated to buf). */
static const char *axes_str(char *buf, size_t size, const ts_tensor *t)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int d = 0; d < t->ndim && n < size; d++) {
		int w = snprintf(buf + n, size - n, "%s%s", d ? ", " : "", t->axis[d]->var->u.var.name);
		n += w > 0 ? (size_t)w : size;
	}
	return buf;
}

typedef struct same_element {
	const ts_tensor *T, *src;
	bool ok;
} same_element;

/* Whether a read of src in T's body is at T's own element (i, j, ...). */
static bool check_read(ts_expr *e, void *data)
{
	same_element *w = data;
	if (e->kind != IR_READ || e->u.read.tensor != w->src)
		return true;
	if (e->u.read.n != w->T->ndim) {
		w->ok = false;
		return true;
	}
	for (int d = 0; d < e->u.read.n; d++) {
		const ts_expr *x = e->u.read.idx[d], *v = w->T->axis[d]->var;
		if (x != v && !(x->kind == IR_VAR && x->u.var.id == v->u.var.id))
			w->ok = false;
	}
	return true;
}

/* Whether T and Y have the same extents (a size variable equals only
 * itself). */
static bool same_extents(const ts_tensor *T, const ts_tensor *Y)
{
	if (T->ndim != Y->ndim)
		return false;
	for (int d = 0; d < Y->ndim; d++)
		if (ts_tensor_dim(T, d) != ts_tensor_dim(Y, d))
			return false;
	return true;
}

/* One epilogue stage T of Y (T is not the root reduction): elementwise,
 * Y's shape, and reading exactly one computed tensor, returned in *next. */
static ts_status epilogue_step(ts_schedule *s, const epilogue_root *r, const ts_tensor *Y,
			       ts_tensor *T, ts_tensor **next)
{
	const char *what = r->what;
	char buf[256];
	if (T->op != TS_OP_COMPUTE)
		return ts_error(s->ctx, TS_ERR_INVALID, "%s(%s): %s is an input; %s is not computed from %s",
				what, Y->name, T->name, Y->name, r->a_noun);
	if (T->body->kind == IR_REDUCE)
		return ts_error(s->ctx, TS_ERR_INVALID,
				"%s(%s): stage %s reduces (it is not %s); an epilogue must be elementwise",
				what, Y->name, T->name, r->a_noun);
	if (!same_extents(T, Y))
		return ts_error(s->ctx, TS_ERR_INVALID,
				"%s(%s): epilogue stage %s has a shape other than %s's %s; an epilogue must be elementwise",
				what, Y->name, T->name, Y->name, extents_str(buf, sizeof buf, Y));
	int ncomp = 0;
	for (int i = 0; i < T->ninputs; i++)
		if (T->inputs[i]->op == TS_OP_COMPUTE)
			*next = T->inputs[i], ncomp++;
	if (ncomp == 0)
		return ts_error(s->ctx, TS_ERR_INVALID,
				"%s(%s): %s is not computed from %s (stage %s reads only inputs)",
				what, Y->name, Y->name, r->a_noun, T->name);
	if (ncomp != 1)
		return ts_error(s->ctx, TS_ERR_INVALID,
				"%s(%s): epilogue stage %s reads %d computed tensors; it must read the %s's chain once, its other operands (bias, residual) being inputs",
				what, Y->name, T->name, ncomp, r->noun);
	/* the root's block is computed for Y's block: a read elsewhere (a
	 * transpose, a shifted window) would need another block */
	same_element w = {.T = T, .src = *next, .ok = true};
	ir_expr_visit(T->body, check_read, &w);
	if (!w.ok)
		return ts_error(s->ctx, TS_ERR_INVALID,
				"%s(%s): epilogue stage %s reads %s at other indices than its own element (%s); an epilogue must be elementwise",
				what, Y->name, T->name, (*next)->name, axes_str(buf, sizeof buf, T));
	return TS_OK;
}

/* The root C feeds stage T of Y's epilogue: Y's blocks must be C's. */
static bool same_shape(ts_schedule *s, const epilogue_root *r, const ts_tensor *Y,
		       const ts_tensor *C, const ts_tensor *T)
{
	char buf[256];
	if (same_extents(C, Y))
		return true;
	ts_error(s->ctx, TS_ERR_INVALID,
		 "%s(%s): epilogue stage %s changes the shape of %s %s %s; an epilogue must be elementwise",
		 r->what, Y->name, T->name, r->noun, C->name, extents_str(buf, sizeof buf, C));
	return false;
}

/* With an epilogue, the root and the stages between it and Y live in
 * registers: each may be read by the next stage of the chain only, and be
 * no output of the schedule.  Checked before anything changes. */
static bool chain_private(ts_schedule *s, const epilogue_root *r, const ts_tensor *Y,
			  ts_tensor *const *chain, int n, const ts_tensor *C)
{
	for (int i = 1; i <= n; i++) {
		const ts_tensor *T = i < n ? chain[i] : C, *next = chain[i - 1];
		const ts_stage *st = ts_stage_of(s, T);
		if (!st)
			return false;
		if (st->is_output) {
			ts_error(s->ctx, TS_ERR_INVALID, "%s(%s): %s is an output of the schedule; with an "
				 "epilogue it is kept in registers and never stored", r->what, Y->name, T->name);
			return false;
		}
		for (int k = 0; k < s->nstages; k++) {
			const ts_stage *o = s->stages[k];
			if (o->tensor != next && o->tensor != T && ir_expr_reads(o->body, T)) {
				ts_error(s->ctx, TS_ERR_INVALID, "%s(%s): %s is also read by %s; with an epilogue it "
					 "is kept in registers, where no other stage can read it", r->what, Y->name,
					 T->name, o->name);
				return false;
			}
		}
	}
	return true;
}

/* Walks from Y down the elementwise chain to the root reduction (a matmul,
 * a convolution); chain[0..*n) are the epilogue stages, Y first. */
static ts_tensor *find_root(ts_schedule *s, const epilogue_root *r, ts_tensor *Y,
			    ts_tensor **chain, int *n)
{
	*n = 0;
	for (ts_tensor *T = Y;;) {
		if (T->op == TS_OP_COMPUTE && T->body->kind == IR_REDUCE && r->is_root(T))
			return same_shape(s, r, Y, T, *n ? chain[*n - 1] : Y) &&
				       chain_private(s, r, Y, chain, *n, T) ? T : NULL;
		if (*n == TS_MAX_EPILOGUE) {
			ts_error(s->ctx, TS_ERR_INVALID, "%s(%s): more than %d epilogue stages", r->what,
				 Y->name, TS_MAX_EPILOGUE);
			return NULL;
		}
		ts_tensor *next = NULL;
		if (epilogue_step(s, r, Y, T, &next) != TS_OK)
			return NULL;
		chain[(*n)++] = T;
		T = next;
	}
}

/* The epilogue runs on the root's block in registers: the stages between Y
 * and the root are inlined into Y, and the root, local, is never stored. */
static ts_status fuse_epilogue(ts_schedule *s, ts_tensor *const *chain, int n, ts_tensor *C)
{
	for (int i = 1; i < n; i++)
		TRY(ts_compute_inline(ts_stage_of(s, chain[i])));
	return ts_set_scope(ts_stage_of(s, C), TS_SCOPE_LOCAL);
}

ts_status ts_schedule_dense_cpu(ts_schedule *s, ts_tensor *Y, const ts_matmul_cpu_params *p)
{
	TRY(need(s, Y, "schedule_dense_cpu"));
	ts_tensor *chain[TS_MAX_EPILOGUE];
	int n;
	ts_tensor *C = find_root(s, &dense_root, Y, chain, &n);
	if (!C)
		return ts_last_status(s->ctx);
	if (n == 0)
		return schedule_matmul(s, "schedule_dense_cpu", Y, p);
	ts_matmul_cpu_params d = p ? *p : default_for(C);
	TRY(chain_untouched(s, "schedule_dense_cpu", Y, chain, n, C));
	TRY(no_k_chunks(s, "schedule_dense_cpu", Y, &d));
	TRY(matmul_prologue(s, "schedule_dense_cpu", C, &d));
	TRY(fuse_epilogue(s, chain, n, C));
	ts_stage *sy = ts_stage_of(s, Y);
	ts_axis *f;
	TRY(tile_output(s, sy, C, &d, &f));
	return schedule_accumulator(ts_stage_of(s, C), sy, f, &d, C);
}

ts_status ts_schedule_batch_matmul_cpu(ts_schedule *s, ts_tensor *Y, const ts_matmul_cpu_params *p)
{
	const char *what = "schedule_batch_matmul_cpu";
	TRY(need(s, Y, what));
	ts_tensor *chain[TS_MAX_EPILOGUE];
	int n;
	ts_tensor *C = find_root(s, &bmm_root, Y, chain, &n);
	if (!C)
		return ts_last_status(s->ctx);
	ts_matmul_cpu_params d = p ? *p
				   : C->dim_var[2] ? ts_matmul_cpu_default()
						   : ts_matmul_cpu_default_for(C->shape[2]);
	TRY(block_params(s, what, &d));
	TRY(no_k_chunks(s, what, Y, &d));
	TRY(untouched(s, what, Y));
	TRY(untouched(s, what, C));
	/* no idle accumulators past the rows or the columns */
	if (d.mr > C->shape[1])
		d.mr = C->shape[1];
	if (d.nr > C->shape[2])
		d.nr = C->shape[2];
	ts_stage *sy, *sc;
	if (n == 0) {
		ts_tensor *CC = ts_cache_write(s, C, TS_SCOPE_LOCAL);
		if (!CC)
			return ts_last_status(s->ctx);
		sy = ts_stage_of(s, C), sc = ts_stage_of(s, CC);
	} else {
		TRY(fuse_epilogue(s, chain, n, C));
		sy = ts_stage_of(s, Y), sc = ts_stage_of(s, C);
	}
	/* batches and mr x nr tiles in one loop: each tile reads a panel of
	 * A's rows and B's columns of its batch */
	ts_axis *mo, *no, *mi, *ni, *f, *ko, *ki;
	TRY(ts_tile(sy, ts_axis_of(sy, 1), ts_axis_of(sy, 2), d.mr, d.nr, &mo, &no, &mi, &ni));
	TRY(ts_fuse(sy, ts_axis_of(sy, 0), mo, &f));
	TRY(ts_fuse(sy, f, no, &f));
	TRY(ts_vectorize(sy, ni));
	if (d.parallel)
		TRY(ts_parallel(sy, f));
	TRY(ts_compute_at(sc, sy, f));
	ts_axis *mc = ts_axis_of(sc, 1), *nc = ts_axis_of(sc, 2);
	TRY(ts_split(sc, ts_reduce_axis_of(sc, 0), d.kunroll, &ko, &ki));
	TRY(ts_reorder(sc, TS_AXES(ts_axis_of(sc, 0), ko, ki, mc, nc)));
	TRY(ts_unroll(sc, ki));
	TRY(ts_unroll(sc, mc));
	return ts_vectorize(sc, nc);
}

int ts_cpu_vector_lanes(void)
{
	return host_has_avx512() ? 16 : 8;
}

/* The largest power of two up to max (a power of two) dividing channels
 * (>= 1): the lowest set bit of channels, at most max. */
static int64_t pow2_divisor(int64_t channels, int64_t max)
{
	int64_t low = channels & -channels;
	return low < max ? low : max;
}

int64_t ts_conv2d_cpu_out_block(int64_t channels)
{
	int lanes = ts_cpu_vector_lanes();
	return channels < 1 ? 0 : pow2_divisor(channels, lanes == 16 ? 2 * lanes : lanes);
}

/* Rows of at least 4 blocks of 3 columns take AVX2's blocks of four
 * vectors (ts_conv2d_cpu_out_block_for). */
static const int64_t wide_row = 12;

int64_t ts_conv2d_cpu_out_block_for(int64_t channels, int64_t out_width)
{
	/* AVX2 on rows of 4 blocks of 3 columns or more: four vectors, whose
	 * step loads 3 inputs and 4 weight vectors for 12 multiply-adds, where
	 * one vector of 14 columns loads 15 for 14 (ResNet-50's layers at 56,
	 * 28 and 14 columns: 3% to 24% faster on one Zen 4 core, inputs in
	 * NCHW32c too).  On rows of 7, the 3 + 3 + 1 blocks lose (20% slower). */
	if (channels >= 1 && ts_cpu_vector_lanes() == 8 && out_width >= wide_row && channels % 32 == 0)
		return 32;
	return ts_conv2d_cpu_out_block(channels);
}

int64_t ts_conv2d_cpu_row_width(int64_t r, int64_t s, int64_t stride_h, int64_t stride_w, int64_t pad_h,
				int64_t pad_w, int64_t out_h, int64_t out_w)
{
	bool pointwise = r == 1 && s == 1 && stride_h == 1 && stride_w == 1 && pad_h == 0 && pad_w == 0;
	if (pointwise && ts_cpu_vector_lanes() == 8 && out_w >= 1 && out_w < wide_row && out_h > 1 &&
	    out_h <= INT64_MAX / out_w)
		return out_h * out_w;
	return out_w;
}

int64_t ts_conv2d_cpu_row_width_for(int64_t r, int64_t s, int64_t stride_h, int64_t stride_w, int64_t pad_h,
				    int64_t pad_w, int64_t out_h, int64_t out_w, int64_t in_channels,
				    int64_t in_block, int64_t out_channels)
{
	int64_t w = ts_conv2d_cpu_row_width(r, s, stride_h, stride_w, pad_h, pad_w, out_h, out_w);
	bool pointwise = r == 1 && s == 1 && stride_h == 1 && stride_w == 1 && pad_h == 0 && pad_w == 0;
	if (w != out_w || !pointwise || ts_cpu_vector_lanes() != 8 || out_w < 1 || out_h < 2 ||
	    out_h > INT64_MAX / out_w || in_channels < 1 || in_block < 1 || in_channels % in_block ||
	    out_channels < 1)
		return w;
	int64_t ob = ts_conv2d_cpu_out_block_for(out_channels, out_w), in_blocks = in_channels / in_block;
	/* a convolution reducing in chunks keeps its rows: merged, its
	 * stretches ran 2-3.5% slower on 1024 -> 256 at 14x14 */
	if (ts_conv2d_cpu_rc_block(in_blocks, in_block, 1, 1, ob) < in_blocks)
		return out_w;
	/* the fewest rows whose register blocks waste at most 1% of their
	 * columns, else the rows that waste the least */
	int64_t ow = ts_conv2d_cpu_ow_block(ob), best = 1;
	double best_use = 0;
	/* rows past 4096 (over 100 blocks, under 1% wasted) are not looked
	 * for: the search stays short on any out_h */
	for (int64_t k = 1; k <= out_h && k <= 4096; k++) {
		if (out_h % k)
			continue;
		int64_t cols = k * out_w, blocks = cols / ow + (cols % ow != 0);
		double use = (double)cols / ((double)blocks * (double)ow);
		if (use > best_use)
			best = k, best_use = use;
		if (use >= 0.99)
			break;
	}
	return best * out_w;
}

int64_t ts_conv2d_cpu_ow_block(int64_t out_block)
{
	int lanes = ts_cpu_vector_lanes(), regs = lanes == 16 ? 32 : 16;
	if (out_block < 1)
		return 0;
	int64_t v = out_block / lanes + (out_block % lanes != 0);
	/* up to two vectors: column by column, cols x v accumulators, the v
	 * weight vectors and one broadcast; more: vector by vector (see
	 * conv_accumulator), cols x v accumulators, cols broadcasts and one
	 * weight vector */
	int64_t cols = v <= 2 ? (regs - v - 1) / v : (regs - 1) / (v + 1);
	return cols < 1 ? 1 : cols > 14 ? 14 : cols;
}

int64_t ts_conv2d_cpu_in_block(int64_t channels)
{
	return channels < 1 ? 0 : pow2_divisor(channels, 16);
}

int64_t ts_depthwise_cpu_block(int64_t channels)
{
	return channels < 1 ? 0 : pow2_divisor(channels, ts_cpu_vector_lanes());
}

ts_conv2d_cpu_params ts_conv2d_cpu_default(void)
{
	/* the prefetch pays with AVX-512's blocks of two vectors (ResNet-50's
	 * layer4: 10-15% per convolution with cold weights); with AVX2's
	 * blocks of one vector, whose step's weights are half a cache line, it
	 * gained nothing cold and cost 10-30% at 2 threads (Zen 4) */
	return (ts_conv2d_cpu_params){.ow_block = 0, .oh_block = 0, .parallel = true,
				      .prefetch = ts_cpu_vector_lanes() == 16};
}

/* a * b, or INT64_MAX where it would overflow (both >= 0) */
static int64_t mul_sat(int64_t a, int64_t b)
{
	int64_t r;
	return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

int64_t ts_conv2d_cpu_rc_block(int64_t in_blocks, int64_t in_block, int64_t r, int64_t s,
			       int64_t out_block)
{
	if (in_blocks < 1 || in_block < 1 || r < 1 || s < 1 || out_block < 1)
		return 0;
	/* bytes of one input-channel block's weights, for one output block */
	int64_t per = mul_sat(mul_sat(mul_sat(mul_sat(in_block, r), s), out_block), 4);
	/* measured on 1x1 kernels only: 3x3 ones in chunks ran 0-1.5% slower */
	if (ts_cpu_vector_lanes() != 8 || r != 1 || s != 1 || mul_sat(per, in_blocks) <= 32 * 1024)
		return in_blocks;
	int64_t best = 0;
	for (int64_t c = 1; c < in_blocks && mul_sat(c, per) <= 16 * 1024; c++)
		if (in_blocks % c == 0)
			best = c;
	return best > 0 ? best : in_blocks;
}

/* The padded input (any 5-D producer of the convolution C) is computed
 * once, before the convolution, unless `inl`: inlined, its select and
 * clamped index sit in the innermost loop, where only partitioning the
 * loops around it (likely() tests, loop_partition) takes them out. */
static ts_status conv_input(ts_schedule *s, const ts_tensor *C, bool parallel, bool inl)
{
	for (int i = 0; i < C->ninputs; i++) {
		ts_tensor *P = C->inputs[i];
		if (P->op != TS_OP_COMPUTE || P->ndim != 5 || !pristine(s, ts_stage_of(s, P)))
			continue;
		ts_stage *sp = ts_stage_of(s, P);
		if (inl) {
			TRY(ts_compute_inline(sp));
			continue;
		}
		ts_axis *f;
		TRY(ts_vectorize(sp, ts_axis_of(sp, 4)));
		TRY(ts_fuse(sp, ts_axis_of(sp, 0), ts_axis_of(sp, 1), &f));
		if (parallel)
			TRY(ts_parallel(sp, f));
	}
	return TS_OK;
}

/* Whether convolution C reads more input than weights: then its row
 * blocks go outside its channel blocks, so that a block of input rows
 * serves every channel block while it is in cache, and threads split the
 * image rather than each reading all of it.  With more weights (deep
 * layers), the channel blocks stay outside and each block's weights serve
 * every row. */
static bool rows_outer(const ts_tensor *C)
{
	int64_t in = 0, w = 0;
	for (int i = 0; i < C->ninputs; i++) {
		const ts_tensor *t = C->inputs[i];
		int64_t n = ts_tensor_numel(t);
		if (t->ndim == 6)
			w += n;
		else
			in += n;
	}
	return in > w;
}

/* oh_block 0: on narrow images, several rows per register block, up to
 * ow_block positions, as many as leave the fewest rows computed twice (a
 * tail block is shifted inward over rows done already).  ResNet-50's 7x7
 * layers take 1 row of 7, not 2 (8 rows for 7): 5% faster with its
 * weights coming from cache, at 1 and 2 threads, although 2 rows are
 * faster with the weights in registers' reach (hot). */
static int64_t auto_rows(int64_t oh, int64_t ow, int64_t ow_block, int64_t cap)
{
	/* more rows than the image never waste fewer, nor than `cap` (the
	 * rows are unrolled) unroll: the search stays within both whatever
	 * ow_block is (INT64_MAX searched for ages) */
	int64_t most = ow < ow_block ? ow_block / ow : 1, best = 1;
	if (most > oh)
		most = oh;
	if (most > cap)
		most = cap;
	for (int64_t r = 2; r <= most; r++)
		if ((oh + r - 1) / r * r <= (oh + best - 1) / best * best)
			best = r;
	return best;
}

/* The weights Wc[O/y, C/x, R, S, x, y] of convolution C (its 6-D input). */
static const ts_tensor *conv_weights(const ts_tensor *C)
{
	for (int i = 0; i < C->ninputs; i++)
		if (C->inputs[i]->ndim == 6)
			return C->inputs[i];
	return NULL;
}

/* With channel blocks outside the rows (weights outweigh the input),
 * every channel block reads the whole input once more.  Where one block's
 * weights are small (1x1 convolutions, one vector of channels per block),
 * that is many passes over an input larger than the cache: ResNet-50's
 * stride-2 1x1 layer 512 -> 1024 at 28x28 read its input 128 times on
 * AVX2.  Such blocks go in groups: a group's weights (at most 128 KB) stay
 * in cache while its row blocks run, and each row of input serves every
 * block of the group in turn.  The group: the largest power of two whose
 * weights fit, dividing the channel blocks and leaving at least 8 groups
 * to run in parallel; 1 (no groups) where none is 2 or more. */
static int64_t channel_group(const ts_tensor *C, const ts_tensor *Y)
{
	const ts_tensor *W = conv_weights(C);
	/* one output block's weights, in bytes */
	int64_t per_block = W ? ts_tensor_numel(W) / W->shape[0] * 4 : 0, blocks = Y->shape[1];
	int64_t g = 1;
	while (per_block > 0 && 2 * g * per_block <= 128 * 1024 && blocks % (2 * g) == 0 &&
	       blocks / (2 * g) >= 8)
		g *= 2;
	return g;
}

/* The vectors of output channels conv_accumulator unrolls: more than two
 * vectors go one by one. */
static int64_t channel_vectors(int64_t channels)
{
	int64_t lanes = ts_cpu_vector_lanes();
	return channels > 2 * lanes && channels % lanes == 0 ? channels / lanes : 1;
}

/* Whether convolution C's sum skips padding taps: its term is
 * select(inside, x * w, -0.0) (ts_op_conv2d_nchwc with padding). */
static bool skips_padding(const ts_tensor *C)
{
	const ts_expr *b = C->body;
	if (b->kind != IR_REDUCE)
		return false;
	const ts_expr *t = b->u.reduce.source;
	return t->kind == IR_SELECT && ir_is_neg_zero(t->u.select.f);
}

/* Resolves d->oh_block (0: auto_rows) and checks that the register block
 * it makes with d->ow_block, both clamped to the image, can be unrolled
 * (rows x columns x channel vectors copies of the body): refused before the
 * schedule changes, not by the unroll half-way through it. */
static ts_status conv_block(ts_schedule *s, const char *what, const ts_tensor *Y,
			    ts_conv2d_cpu_params *d)
{
	int64_t oh = Y->shape[2], ow = Y->shape[3], vecs = channel_vectors(Y->shape[4]);
	int64_t cols = d->ow_block < ow ? d->ow_block : ow;
	int64_t cap = TS_MAX_UNROLL_STMTS / mul_sat(cols, vecs);
	if (cap > TS_MAX_UNROLL)
		cap = TS_MAX_UNROLL;
	if (d->oh_block == 0)
		d->oh_block = auto_rows(oh, ow, d->ow_block, cap < 1 ? 1 : cap);
	if (d->oh_block > oh)
		d->oh_block = oh;
	int64_t copies = mul_sat(mul_sat(d->oh_block, cols), vecs);
	if (d->oh_block > TS_MAX_UNROLL || cols > TS_MAX_UNROLL || copies > TS_MAX_UNROLL_STMTS)
		return ts_error(s->ctx, TS_ERR_INVALID,
				"%s: a register block of %lld rows x %lld columns x %lld channel vectors is "
				"unrolled into %lld copies of the body; the limits are %d rows or columns and "
				"%d copies (choose a smaller oh_block or ow_block)", what,
				(long long)d->oh_block, (long long)cols, (long long)vecs, (long long)copies,
				TS_MAX_UNROLL, TS_MAX_UNROLL_STMTS);
	return TS_OK;
}

/* Y in blocks of oh_block rows x ow_block columns x the channel lanes (one
 * vector), images, channel blocks and row blocks fused into one parallel
 * loop (rows outside the channel blocks when rows_outer; channel blocks in
 * groups of `group` around the rows, the groups parallel, when group > 1);
 * *owo is the loop over a row's column blocks.  With padding, the rows
 * stay monotone in the loop that holds them, so that loop_partition can
 * split the border rows, whose padding taps the sum skips, from the rest:
 * their own loop, or the fused loop's outer part (the images of a batch
 * then run one after the other, each a parallel loop). */
static ts_status conv_output(ts_stage *sy, const ts_conv2d_cpu_params *d, bool rows, bool padded,
			     int64_t group, ts_axis **owo, ts_axis **outer, int64_t *row_blocks,
			     int64_t block[2])
{
	int64_t ow = sy->tensor->shape[3], oh_block = d->oh_block;
	/* a block no wider than the row: the columns past it would still
	 * take accumulators, and twice the registers spill */
	int64_t ow_block = block[1] = d->ow_block < ow ? d->ow_block : ow;
	block[0] = oh_block;
	ts_axis *img = ts_axis_of(sy, 0), *cb = ts_axis_of(sy, 1), *oho, *ohi, *owi, *f1, *f2;
	TRY(ts_split(sy, ts_axis_of(sy, 2), oh_block, &oho, &ohi));
	*row_blocks = oho->extent;
	TRY(ts_split(sy, ts_axis_of(sy, 3), ow_block, owo, &owi));
	if (rows) {
		TRY(ts_reorder(sy, TS_AXES(img, oho, cb, *owo, ohi, owi)));
		if (img->extent == 1 || !padded) {
			TRY(ts_fuse(sy, img, oho, &f1));
			TRY(ts_fuse(sy, f1, cb, &f2));
		} else {
			TRY(ts_fuse(sy, oho, cb, &f2));
		}
	} else if (group > 1) {
		/* each group's rows in a loop of their own */
		ts_axis *cbo, *cbi;
		TRY(ts_split(sy, cb, group, &cbo, &cbi));
		TRY(ts_reorder(sy, TS_AXES(img, cbo, oho, cbi, *owo, ohi, owi)));
		TRY(ts_fuse(sy, img, cbo, &f2));
		*row_blocks = 0; /* the next block's weights: the group's, in cache */
	} else if (padded) {
		TRY(ts_reorder(sy, TS_AXES(oho, *owo, ohi, owi)));
		TRY(ts_fuse(sy, img, cb, &f2));
		*row_blocks = 1; /* the next channel block is the next iteration */
	} else {
		TRY(ts_reorder(sy, TS_AXES(oho, *owo, ohi, owi)));
		TRY(ts_fuse(sy, img, cb, &f1));
		TRY(ts_fuse(sy, f1, oho, &f2));
	}
	TRY(ts_vectorize(sy, ts_axis_of(sy, 4)));
	/* the block's store unrolled: with an epilogue (max(acc, 0)) a loop
	 * over the accumulator's columns kept LLVM from promoting it to
	 * registers in the border blocks, whose accumulators then lived on
	 * the stack: ResNet-50's 3x3 convolution + relu at 14x14 ran 23%
	 * slower than without relu, 5.5% at 56x56; unrolled, as fast */
	TRY(ts_unroll(sy, ohi));
	TRY(ts_unroll(sy, owi));
	*outer = f2;
	return d->parallel ? ts_parallel(sy, f2) : TS_OK;
}

/* The input-channel blocks per reduction chunk of convolution C under d
 * (its weights Wc[O/y, C/x, R, S, x, y]); 0: no chunks. */
static int64_t reduce_chunk(const ts_tensor *C, const ts_conv2d_cpu_params *d)
{
	const ts_tensor *W = conv_weights(C);
	if (!W)
		return 0;
	int64_t rc = d->rc_block ? d->rc_block
				 : ts_conv2d_cpu_rc_block(W->shape[1], W->shape[4], W->shape[2], W->shape[3],
							  W->shape[5]);
	return rc > 0 && rc < W->shape[1] ? rc : 0;
}

/* The accumulator block, computed at Y's loop `at`: rows x columns x
 * channel lanes, under the reduction (input channel blocks, kernel rows,
 * kernel columns, input channel lanes); rows and columns unrolled, the
 * lanes one vector (up to two vectors) or vectors in an unrolled loop of
 * their own.  With rc_block > 0, `at` encloses a stretch of register
 * blocks of ow_block columns: the input channel blocks run in chunks of
 * rc_block outside the stretch's blocks, and a block's accumulators are
 * loaded and stored once per chunk (the tail block partitioned off, so
 * that LLVM keeps the main blocks' in registers through the chunk). */
static ts_status conv_accumulator(ts_stage *sc, ts_stage *sy, ts_axis *at, int64_t ow_block,
				  int64_t rc_block)
{
	TRY(ts_compute_at(sc, sy, at));
	ts_axis *h = ts_axis_of(sc, 2), *w = ts_axis_of(sc, 3), *oc = ts_axis_of(sc, 4);
	ts_axis *rco = ts_reduce_axis_of(sc, 0), *kh = ts_reduce_axis_of(sc, 1),
		*kw = ts_reduce_axis_of(sc, 2), *rci = ts_reduce_axis_of(sc, 3);
	ts_axis *order[11];
	int n = 0;
	if (rc_block > 0) {
		ts_axis *wo, *ro;
		TRY(ts_split_tail(sc, w, ow_block, TS_TAIL_PARTITION, &wo, &w));
		TRY(ts_split(sc, rco, rc_block, &ro, &rco));
		order[n++] = ro;
		order[n++] = wo;
	}
	order[n++] = rco, order[n++] = kh, order[n++] = kw, order[n++] = rci, order[n++] = h;
	int lanes = ts_cpu_vector_lanes();
	ts_axis *vec = oc; /* the lanes */
	if (channel_vectors(oc->extent) > 1) {
		/* more than two vectors of channels: vector by vector, each
		 * weight vector loaded once and used for every column, the
		 * columns' inputs broadcast once per step; column by column,
		 * all the weight vectors would stay live and spill */
		ts_axis *ocv;
		TRY(ts_split(sc, oc, lanes, &ocv, &vec));
		TRY(ts_unroll(sc, ocv));
		order[n++] = ocv;
	}
	order[n++] = w;
	order[n++] = vec;
	TRY(ts_reorder(sc, n, order));
	TRY(ts_unroll(sc, h));
	TRY(ts_unroll(sc, w));
	return ts_vectorize(sc, vec);
}

ts_status ts_schedule_conv2d_nchwc_cpu(ts_schedule *s, ts_tensor *Y, const ts_conv2d_cpu_params *p)
{
	const char *what = "schedule_conv2d_nchwc_cpu";
	TRY(need(s, Y, what));
	ts_conv2d_cpu_params d = p ? *p : ts_conv2d_cpu_default();
	if (d.ow_block < 0 || d.oh_block < 0 || d.rc_block < 0)
		return ts_error(s->ctx, TS_ERR_INVALID, "%s: ow_block, oh_block and rc_block must be >= 0 "
				"(0: chosen), got %lld, %lld and %lld", what, (long long)d.ow_block,
				(long long)d.oh_block, (long long)d.rc_block);
	if ((int)d.pad < TS_PAD_AUTO || (int)d.pad > TS_PAD_INLINE)
		return ts_error(s->ctx, TS_ERR_INVALID, "%s: pad mode %d is none of TS_PAD_AUTO, TS_PAD_COPY, "
				"TS_PAD_INLINE", what, (int)d.pad);
	ts_tensor *chain[TS_MAX_EPILOGUE];
	int n;
	ts_tensor *C = find_root(s, &conv_root, Y, chain, &n);
	if (!C)
		return ts_last_status(s->ctx);
	TRY(chain_untouched(s, what, Y, chain, n, C));
	/* a padding that is an output of the schedule is stored, so it
	 * cannot be inlined: AUTO copies it */
	bool pad_output = false;
	for (int i = 0; i < C->ninputs; i++) {
		const ts_stage *sp = C->inputs[i]->op == TS_OP_COMPUTE && C->inputs[i]->ndim == 5
					     ? ts_stage_of(s, C->inputs[i]) : NULL;
		if (sp && sp->is_output && pristine(s, sp))
			pad_output = true;
	}
	if (pad_output && d.pad == TS_PAD_INLINE)
		return ts_error(s->ctx, TS_ERR_INVALID, "%s: %s's padded input is an output of the schedule, "
				"so it is stored and cannot be inlined (TS_PAD_INLINE); use TS_PAD_COPY or "
				"TS_PAD_AUTO", what, C->name);
	if (d.ow_block == 0)
		d.ow_block = ts_conv2d_cpu_ow_block(Y->shape[4]);
	TRY(conv_block(s, what, Y, &d));
	bool rows = rows_outer(C);
	/* the sum skips the padding's taps (ts_op_conv2d_nchwc), so the
	 * border blocks loop_partition splits off read no padding: inlined,
	 * it costs no more than its tests there, and the copy's pass over
	 * the input is saved (ResNet-50's 3x3 layers at 2 threads: up to 1.2x
	 * faster than copied, none slower beyond noise) */
	bool inl = d.pad != TS_PAD_COPY && !pad_output;
	TRY(conv_input(s, C, d.parallel, inl));
	/* the accumulator: C itself under an epilogue, else a cache of Y (= C) */
	ts_tensor *acc = n ? C : ts_cache_write(s, Y, TS_SCOPE_LOCAL);
	if (!acc)
		return ts_last_status(s->ctx);
	if (n)
		TRY(fuse_epilogue(s, chain, n, C));
	ts_stage *sy = ts_stage_of(s, Y);
	ts_axis *owo, *outer;
	int64_t row_blocks, block[2]; /* the register block's rows and columns */
	TRY(conv_output(sy, &d, rows, skips_padding(C), rows ? 1 : channel_group(C, Y), &owo, &outer, &row_blocks,
			block));
	int64_t rc_block = reduce_chunk(C, &d);
	if (rc_block > 0) {
		/* a stretch of column blocks whose accumulators (at most 8 KB)
		 * stay in L1 between chunks; stretches of equal length, since
		 * the last one is computed whole, moved back inside the row
		 * (with 21 blocks a stretch, a row of 22 computed 42: 1.7x
		 * slower than no chunks; 2 of 11: 4.5% faster) */
		int64_t bytes = mul_sat(mul_sat(mul_sat(block[0], block[1]), Y->shape[4]), 4);
		int64_t span = 8 * 1024 / bytes, blocks = owo->extent;
		span = span < 1 ? 1 : span > blocks ? blocks : span;
		int64_t stretches = blocks / span + (blocks % span != 0);
		span = blocks / stretches + (blocks % stretches != 0);
		ts_axis *in_stretch;
		TRY(ts_split(sy, owo, span, &owo, &in_stretch));
	}
	TRY(conv_accumulator(ts_stage_of(s, acc), sy, owo, block[1], rc_block));
	/* weights outweigh the input: each channel block's weights come from
	 * memory in its first row block, while the others find them in
	 * cache.  Fetching the next block's weights a little in every step of
	 * the innermost reduction spreads that traffic over the whole block
	 * (ResNet-50's layer4 at batch 1: -10% to -15% per convolution with
	 * cold weights; at the reduction's outer loops the bursts of
	 * prefetches cost more than they save). */
	ts_stage *sc = ts_stage_of(s, acc);
	if (!rows && d.prefetch && row_blocks > 0 && rc_block == 0)
		for (int i = 0; i < C->ninputs; i++)
			if (C->inputs[i]->ndim == 6 && C->inputs[i]->op == TS_OP_PLACEHOLDER)
				TRY(ts_prefetch_ahead(sc, C->inputs[i], ts_reduce_axis_of(sc, 3), outer,
						      row_blocks));
	return TS_OK;
}

ts_depthwise_cpu_params ts_depthwise_cpu_default(void)
{
	return (ts_depthwise_cpu_params){.ow_block = 0, .oh_block = 0, .parallel = true};
}

/* The register block of a window stage over ow output columns and oh rows
 * with `lanes`-wide vectors: two vectors of columns where the row has
 * them, else one, else the whole row; then up to 2 rows (8 for rows
 * narrower than a vector), a divisor of oh where one is near, since a
 * guarded tail row costs more than a smaller block. */
static void window_block(int64_t ow, int64_t oh, int lanes, ts_depthwise_cpu_params *d)
{
	if (d->ow_block <= 0)
		d->ow_block = ow >= 2 * lanes ? 2 * lanes : ow >= lanes ? lanes : ow;
	if (d->ow_block > ow) /* as oh_block: no block wider than the row */
		d->ow_block = ow;
	if (d->oh_block <= 0) {
		int64_t want = d->ow_block < lanes ? 8 : 2, best = 1;
		for (int64_t r = 1; r <= want && r <= oh; r++)
			if (oh % r == 0)
				best = r;
		d->oh_block = best * 2 > want ? best : want;
	}
	if (d->oh_block > oh)
		d->oh_block = oh;
}

/* The padding stage P of a window stage, computed per (image, channel)
 * plane just before the plane is read: one plane stays in cache, and the
 * padded tensor is never written whole. */
static ts_status schedule_window_pad(ts_schedule *s, ts_tensor *P, ts_stage *sy, ts_axis *plane,
				     int lanes)
{
	ts_stage *sp = ts_stage_of(s, P);
	ts_axis *po, *pi;
	if (!sp)
		return ts_last_status(s->ctx);
	TRY(ts_compute_at(sp, sy, plane));
	TRY(ts_split_tail(sp, ts_axis_of(sp, 3), lanes, TS_TAIL_PARTITION, &po, &pi));
	return ts_vectorize(sp, pi);
}

/* *p or the defaults; blocks of 0 are chosen from the shape later,
 * negative ones refused. */
static ts_status depthwise_params(ts_schedule *s, const char *what, const ts_depthwise_cpu_params *p,
				  ts_depthwise_cpu_params *d)
{
	*d = p ? *p : ts_depthwise_cpu_default();
	if (d->ow_block < 0 || d->oh_block < 0)
		return ts_error(s->ctx, TS_ERR_INVALID, "%s: ow_block and oh_block must be >= 0 (0: "
				"chosen from the shape), got %lld and %lld", what, (long long)d->ow_block,
				(long long)d->oh_block);
	return TS_OK;
}

ts_status ts_schedule_depthwise_cpu(ts_schedule *s, ts_tensor *Y, const ts_depthwise_cpu_params *p)
{
	const char *what = "schedule_depthwise_cpu";
	TRY(need(s, Y, what));
	ts_depthwise_cpu_params d;
	TRY(depthwise_params(s, what, p, &d));
	if (Y->op != TS_OP_COMPUTE || Y->ndim != 4 || Y->nreduce != 2 || Y->ninputs < 1)
		return ts_error(s->ctx, TS_ERR_INVALID, "%s: %s is not a 2-D window over NCHW (a depthwise "
				"convolution or a max pooling: 4 axes, 2 reduction axes; an average "
				"pooling's window is its stage avg_pool2d_sum, ts_op_stage)", what, Y->name);
	TRY(untouched(s, what, Y));
	/* the producers attached to Y's planes, chosen while Y is still
	 * their reader (the cache below reads them after) */
	uint64_t attach = 0;
	for (int i = 0; i < Y->ninputs && i < 64; i++) {
		ts_tensor *P = Y->inputs[i];
		if (P->op == TS_OP_COMPUTE && P->ndim == 4 && P->nreduce == 0 && own_producer(s, P, Y, true))
			attach |= (uint64_t)1 << i;
	}
	int lanes = ts_cpu_vector_lanes();
	window_block(Y->shape[3], Y->shape[2], lanes, &d);
	ts_tensor *YC = ts_cache_write(s, Y, TS_SCOPE_LOCAL);
	if (!YC)
		return ts_last_status(s->ctx);
	ts_stage *sy = ts_stage_of(s, Y), *sc = ts_stage_of(s, YC);
	ts_axis *f, *yo, *yi, *xo, *xi;
	TRY(ts_fuse(sy, ts_axis_of(sy, 0), ts_axis_of(sy, 1), &f));
	TRY(ts_split(sy, ts_axis_of(sy, 2), d.oh_block, &yo, &yi));
	TRY(ts_split_tail(sy, ts_axis_of(sy, 3), d.ow_block, TS_TAIL_PARTITION, &xo, &xi));
	TRY(ts_reorder(sy, TS_AXES(f, yo, xo, yi, xi)));
	if (d.parallel)
		TRY(ts_parallel(sy, f));
	TRY(ts_vectorize(sy, xi));
	/* the accumulator block: the window outside, rows unrolled, columns a
	 * vector; a small window unrolled too, so that every multiply-add of
	 * a block is straight-line code with its inputs in registers */
	TRY(ts_compute_at(sc, sy, xo));
	ts_axis *h = ts_axis_of(sc, 2), *w = ts_axis_of(sc, 3);
	ts_axis *ry = ts_reduce_axis_of(sc, 0), *rx = ts_reduce_axis_of(sc, 1);
	TRY(ts_reorder(sc, TS_AXES(ry, rx, h, w)));
	TRY(ts_unroll(sc, h));
	TRY(ts_vectorize(sc, w));
	if (mul_sat(mul_sat(ry->extent, rx->extent), d.oh_block) <= 256) {
		TRY(ts_unroll(sc, rx));
		TRY(ts_unroll(sc, ry));
	}
	/* the padding (or any elementwise producer), one plane at a time,
	 * where nothing else reads it */
	for (int i = 0; i < Y->ninputs && i < 64; i++)
		if (attach >> i & 1)
			TRY(schedule_window_pad(s, Y->inputs[i], sy, f, lanes));
	return TS_OK;
}

/* ---- depthwise on NCHW[x]c ------------------------------------------------------ */

/* The largest divisor of n from lo to hi, or 0. */
static int64_t divisor_in(int64_t n, int64_t lo, int64_t hi)
{
	for (int64_t f = hi; f >= lo; f--)
		if (n % f == 0)
			return f;
	return 0;
}

/* The register block of an NCHW[x]c depthwise convolution over ow output
 * columns and oh rows, each output `vectors` vectors of channel lanes, the
 * window `taps` multiply-adds: at most hi columns, as many as leave the
 * window's weights and a few input vectors in the CPU's vector registers
 * (14 with AVX-512's 32 registers and a 3x3 window; 4 with AVX2's 16,
 * where 14 columns spilled and ran 1.5-2x slower), a divisor of the row
 * from about hi/2 to hi columns (a partitioned tail costs a second copy
 * of the block's code), else the whole row when narrower than 8, else up
 * to 8; then one row, or on rows narrower than 8 columns enough rows for
 * about 8 vectors (hi, when fewer), a divisor of oh where one is near,
 * since a guarded row costs a test per row of the block.  More rows would
 * reuse the input rows in registers, but the kernel is bound by memory
 * (each input vector feeds 9 multiply-adds of a 3x3 window), and taller
 * blocks only spill. */
static void dw_nchwc_block(int64_t ow, int64_t oh, int64_t vectors, int64_t taps,
			   ts_depthwise_cpu_params *d)
{
	int64_t regs = ts_cpu_vector_lanes() == 16 ? 32 : 16;
	int64_t hi = regs / (vectors > 0 ? vectors : 1) - taps - 3;
	hi = hi < 4 ? 4 : hi > 14 ? 14 : hi;
	if (d->ow_block <= 0) {
		int64_t f = divisor_in(ow, hi >= 8 ? (hi + 1) / 2 : hi - 1, hi);
		d->ow_block = f ? f : ow < 8 ? ow : hi < 8 ? hi : 8;
	}
	if (d->ow_block > ow)
		d->ow_block = ow;
	if (d->oh_block <= 0) {
		int64_t want = d->ow_block >= 8 ? 1 : (hi < 8 ? hi : 8) / d->ow_block;
		want = want < 1 ? 1 : want;
		int64_t best = divisor_in(oh, (want + 1) / 2, want);
		d->oh_block = best ? best : want;
	}
	if (d->oh_block > oh)
		d->oh_block = oh;
}

/* Y (or the chain's end) in blocks of oh_block rows x ow_block columns x
 * the channel lanes, images, channel blocks and row blocks fused into one
 * (parallel) loop; *xo is the loop over a row's column blocks, the last
 * partial block partitioned off. */
static ts_status dw_nchwc_output(ts_stage *sy, const ts_depthwise_cpu_params *d, ts_axis **xo)
{
	ts_axis *yo, *yi, *xi, *f;
	TRY(ts_split(sy, ts_axis_of(sy, 2), d->oh_block, &yo, &yi));
	TRY(ts_split_tail(sy, ts_axis_of(sy, 3), d->ow_block, TS_TAIL_PARTITION, xo, &xi));
	TRY(ts_reorder(sy, TS_AXES(yo, *xo, yi, xi)));
	TRY(ts_fuse(sy, ts_axis_of(sy, 0), ts_axis_of(sy, 1), &f));
	TRY(ts_fuse(sy, f, yo, &f));
	TRY(ts_unroll(sy, yi));
	TRY(ts_unroll(sy, xi));
	TRY(ts_vectorize(sy, ts_axis_of(sy, 4)));
	return d->parallel ? ts_parallel(sy, f) : TS_OK;
}

/* The accumulator block at Y's column block xo: the window outermost,
 * rows and columns unrolled, the lanes one vector; a window of up to 512
 * multiply-adds per block unrolled too, so that the block is straight-line
 * code with its inputs and weights in registers (the partitioned tail
 * block is a second copy: larger ones would pass TS_MAX_UNROLL_STMTS). */
static ts_status dw_nchwc_accumulator(ts_stage *sc, ts_stage *sy, ts_axis *xo,
				      const ts_depthwise_cpu_params *d)
{
	TRY(ts_compute_at(sc, sy, xo));
	ts_axis *h = ts_axis_of(sc, 2), *w = ts_axis_of(sc, 3), *ci = ts_axis_of(sc, 4);
	ts_axis *ry = ts_reduce_axis_of(sc, 0), *rx = ts_reduce_axis_of(sc, 1);
	TRY(ts_reorder(sc, TS_AXES(ry, rx, h, w, ci)));
	TRY(ts_unroll(sc, h));
	TRY(ts_unroll(sc, w));
	TRY(ts_vectorize(sc, ci));
	if (mul_sat(mul_sat(mul_sat(ry->extent, rx->extent), d->oh_block), d->ow_block) <= 512) {
		TRY(ts_unroll(sc, rx));
		TRY(ts_unroll(sc, ry));
	}
	return TS_OK;
}

ts_status ts_schedule_depthwise_nchwc_cpu(ts_schedule *s, ts_tensor *Y,
					  const ts_depthwise_cpu_params *p)
{
	const char *what = "schedule_depthwise_nchwc_cpu";
	TRY(need(s, Y, what));
	ts_depthwise_cpu_params d;
	TRY(depthwise_params(s, what, p, &d));
	ts_tensor *chain[TS_MAX_EPILOGUE];
	int n;
	ts_tensor *C = find_root(s, &dw_nchwc_root, Y, chain, &n);
	if (!C)
		return ts_last_status(s->ctx);
	TRY(chain_untouched(s, what, Y, chain, n, C));
	/* the window's taps and the vectors of a block of channel lanes, each
	 * clamped (beyond the registers, any larger count chooses the same) */
	int64_t lanes = ts_cpu_vector_lanes(), taps = 1, vectors = C->shape[4] > 0 && C->shape[4] <= 1024
									? (C->shape[4] + lanes - 1) / lanes : 64;
	for (int i = 0; i < 2; i++) {
		int64_t e = C->reduce_axis[i]->extent;
		taps *= e >= 1 && e <= 64 ? e : 64;
	}
	dw_nchwc_block(C->shape[3], C->shape[2], vectors, taps, &d);
	/* the accumulator: C itself under an epilogue, else a cache of Y (= C) */
	ts_tensor *acc = n ? C : ts_cache_write(s, Y, TS_SCOPE_LOCAL);
	if (!acc)
		return ts_last_status(s->ctx);
	if (n)
		TRY(fuse_epilogue(s, chain, n, C));
	ts_stage *sy = ts_stage_of(s, Y);
	ts_axis *xo;
	TRY(dw_nchwc_output(sy, &d, &xo));
	TRY(dw_nchwc_accumulator(ts_stage_of(s, acc), sy, xo, &d));
	/* the padding (or any elementwise producer) inlined: the block reads
	 * the input itself, each vector under the padding's test (a masked
	 * load), whose row and column parts LLVM computes once per row and
	 * column of the block.  The kernel is bound by memory, and a padded
	 * copy, even of the few rows a block reads and kept in cache, costs
	 * more than the tests: 15-25% on MobileNet-v2's layers.  One that
	 * is an output is stored, so it stays at root. */
	for (int i = 0; i < C->ninputs; i++) {
		ts_tensor *P = C->inputs[i];
		if (P->op == TS_OP_COMPUTE && P->ndim == 5 && !P->nreduce && own_producer(s, P, C, false))
			TRY(ts_compute_inline(ts_stage_of(s, P)));
	}
	return TS_OK;
}

ts_matmul_cuda_params ts_matmul_cuda_default(void)
{
	return (ts_matmul_cuda_params){.block_m = 64, .block_n = 64, .thread_m = 4, .thread_n = 4,
				       .tile_k = 8, .double_buffer = 1};
}

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* a / b rounded up, for a >= 0 and b >= 1, without forming a + b - 1
 * (a caller's parameter may be near INT64_MAX) */
static int64_t ceil_div64(int64_t a, int64_t b)
{
	return a / b + (a % b != 0);
}

/* Tile sizes from the shape (m, n: C's rows and columns, k: the reduction).
 * A block tile never exceeds the dimension it covers, nor a thread's
 * register block its block tile, nor the k step k: a split larger than its
 * axis would leave threads bound past the loops of the other stages
 * (a GEMV's block would be 16 threads over one row).  With the default
 * tiles (`widen`), the threads a skinny dimension leaves idle go to the
 * other one, doubling its block tile up to 256 threads per block; with
 * 4 x 4 register blocks and an 8-deep k step, shared memory stays at
 * (block_m + block_n) * 8 * 4 bytes, at most 33 KB, under the 48 KB of
 * static shared memory.  Shapes the tiles do not divide keep these tiles:
 * bound inference sizes the shared tiles by the tile and guards the
 * cooperative loads and the final stores at the edges. */
static ts_matmul_cuda_params fit_tiles(ts_matmul_cuda_params d, int64_t m, int64_t n, int64_t k,
				       bool widen)
{
	d.block_m = min64(d.block_m, m);
	d.block_n = min64(d.block_n, n);
	d.thread_m = min64(d.thread_m, d.block_m);
	d.thread_n = min64(d.thread_n, d.block_n);
	d.tile_k = min64(d.tile_k, k);
	int64_t tm = ceil_div64(d.block_m, d.thread_m), tn = ceil_div64(d.block_n, d.thread_n);
	while (widen && tm * tn * 2 <= 256 && d.block_n * 2 <= ceil_div64(n, d.thread_n) * d.thread_n) {
		d.block_n *= 2;
		tn *= 2;
	}
	while (widen && tm * tn * 2 <= 256 && d.block_m * 2 <= ceil_div64(m, d.thread_m) * d.thread_m) {
		d.block_m *= 2;
		tm *= 2;
	}
	return d;
}

/* C tiled into blocks of block_m x block_n, each thread accumulating a
 * thread_m x thread_n block in registers; the A and B tiles of each k step
 * are staged in shared memory by all threads of the block. */
/* Elements added to each row of the shared A tile: a warp's threads read
 * one column of it, rows thread_m apart per threadIdx.y; when those rows
 * are a multiple of 32 elements apart they fall in one bank, and 4 more
 * per row (keeping rows 16-byte aligned) moves them apart, where the
 * tiles still fit the 48 KB of static shared memory (a skinny shape's
 * widened tiles may fill it). */
static int64_t a_tile_pad(const ts_matmul_cuda_params *d, int64_t elem_bytes)
{
	if ((d->thread_m * d->tile_k) % 32 != 0 || (d->thread_m * (d->tile_k + 4)) % 32 == 0 ||
	    d->block_m > 65536 || d->block_n > 65536 || d->tile_k > 65536)
		return 0;
	int64_t bytes = elem_bytes * (d->block_m * (d->tile_k + 4) + d->block_n * d->tile_k);
	return bytes * (d->double_buffer ? 2 : 1) <= 49152 ? 4 : 0;
}

/* The shared tiles' bytes, both copies of a double buffer counted
 * (INT64_MAX for tiles past 2^16, which never fit). */
static int64_t cuda_tile_bytes(const ts_matmul_cuda_params *d, int64_t elem_bytes)
{
	if (d->block_m > 65536 || d->block_n > 65536 || d->tile_k > 65536)
		return INT64_MAX;
	/* each factor is at most 2^16: no overflow */
	return elem_bytes * (d->block_m * (d->tile_k + a_tile_pad(d, elem_bytes)) +
			     d->block_n * d->tile_k) * (d->double_buffer ? 2 : 1);
}

/* A GPU GEMM's tile loops: block rows and columns on blockIdx.y/x, the
 * threads' (the SIMT GEMM's) or warps' (the tensor-core GEMM's, its lanes
 * on threadIdx.x) rows and columns on `rows` and the next index below. */
static ts_status bind_tiles(ts_stage *sc, ts_axis *by, ts_axis *bx, ts_axis *ty, ts_axis *tx,
			    ts_thread_tag rows)
{
	TRY(ts_bind(sc, by, TS_BLOCK_Y));
	TRY(ts_bind(sc, bx, TS_BLOCK_X));
	TRY(ts_bind(sc, ty, rows));
	return ts_bind(sc, tx, (ts_thread_tag)(rows - 1));
}

/* A shared-memory tile T computed at `at`'s loop `axis` by all the
 * block's ty x tx threads (the CUDA GEMM's and convolution's cooperative
 * fetch): its axes fused, `vec` consecutive elements per thread (a
 * vectorized loop; 1: none), double-buffered with db. */
static ts_status cuda_fetch(ts_schedule *s, ts_tensor *T, ts_stage *at, ts_axis *axis, int64_t ty,
			    int64_t tx, int64_t vec, bool db)
{
	ts_stage *ss = ts_stage_of(s, T);
	TRY(ts_compute_at(ss, at, axis));
	ts_axis *f = ts_axis_of(ss, 0), *v, *o, *t, *o2, *t2;
	for (int i = 1; i < T->ndim; i++)
		TRY(ts_fuse(ss, f, ts_axis_of(ss, i), &f));
	if (vec > 1) {
		TRY(ts_split(ss, f, vec, &f, &v));
		TRY(ts_vectorize(ss, v));
	}
	TRY(ts_split(ss, f, ty * tx, &o, &t));
	TRY(ts_split(ss, t, tx, &o2, &t2));
	TRY(ts_bind(ss, o2, TS_THREAD_Y));
	TRY(ts_bind(ss, t2, TS_THREAD_X));
	return db ? ts_double_buffer(ss) : TS_OK;
}

static ts_status schedule_gemm_like_cuda(ts_schedule *s, ts_tensor *C, int a_in, int b_in,
					 const ts_matmul_cuda_params *d)
{
	ts_ctx *ctx = s->ctx;
	ts_tensor *A = C->inputs[a_in], *B = C->inputs[b_in];
	ts_tensor *AS = ts_cache_read(s, A, TS_SCOPE_SHARED, 1, &C);
	ts_tensor *BS = AS ? ts_cache_read(s, B, TS_SCOPE_SHARED, 1, &C) : NULL;
	ts_tensor *CL = BS ? ts_cache_write(s, C, TS_SCOPE_LOCAL) : NULL;
	if (!CL)
		return ts_last_status(ctx);
	int64_t pad = a_tile_pad(d, C->dtype.bits / 8);
	if (pad && AS->ndim >= 2)
		TRY(ts_storage_align(ts_stage_of(s, AS), AS->ndim - 2, 32, (d->tile_k + pad) % 32));
	ts_stage *sc = ts_stage_of(s, C), *sl = ts_stage_of(s, CL);
	int64_t tm = ceil_div64(d->block_m, d->thread_m), tn = ceil_div64(d->block_n, d->thread_n);
	ts_axis *by, *bx, *yi, *xi, *ty, *tx, *yr, *xr;
	TRY(ts_tile(sc, ts_axis_of(sc, C->ndim - 2), ts_axis_of(sc, C->ndim - 1), d->block_m,
		    d->block_n, &by, &bx, &yi, &xi));
	TRY(ts_split(sc, yi, d->thread_m, &ty, &yr));
	TRY(ts_split(sc, xi, d->thread_n, &tx, &xr));
	TRY(ts_reorder(sc, TS_AXES(by, bx, ty, tx, yr, xr)));
	if (C->ndim > 2) {
		/* a batched product: the batches (fused) are the grid's z, so
		 * every batch's tiles run at once */
		ts_axis *bz = ts_axis_of(sc, 0);
		for (int i = 1; i < C->ndim - 2; i++)
			TRY(ts_fuse(sc, bz, ts_axis_of(sc, i), &bz));
		TRY(ts_bind(sc, bz, TS_BLOCK_Z));
	}
	TRY(bind_tiles(sc, by, bx, ty, tx, TS_THREAD_Y));
	/* unrolled, the register block is indexed by constants: a loop would
	 * index it dynamically and put it in local memory; a row of 2 or 4 is
	 * stored as one float2/float4 where its columns are aligned (the
	 * emitter builds it from the registers) */
	TRY(ts_unroll(sc, yr));
	if (d->thread_n == 2 || d->thread_n == 4)
		TRY(ts_vectorize(sc, xr));
	else
		TRY(ts_unroll(sc, xr));
	TRY(ts_compute_at(sl, sc, tx));
	ts_axis *ko, *ki;
	ts_axis *ly = ts_axis_of(sl, C->ndim - 2), *lx = ts_axis_of(sl, C->ndim - 1);
	TRY(ts_split(sl, ts_reduce_axis_of(sl, 0), d->tile_k, &ko, &ki));
	TRY(ts_reorder(sl, TS_AXES(ko, ki, ly, lx)));
	TRY(ts_unroll(sl, ly));
	TRY(ts_unroll(sl, lx));
	/* 4 consecutive floats per thread: one 16-byte load where aligned */
	TRY(cuda_fetch(s, AS, sl, ko, tm, tn, 4, d->double_buffer));
	TRY(cuda_fetch(s, BS, sl, ko, tm, tn, 4, d->double_buffer));
	return TS_OK;
}

/* A block of more than 1024 threads cannot launch, and shared tiles over
 * 48 KB cannot be declared statically: refused here, naming the tiles,
 * rather than by the CUDA compiler. */
static ts_status fits_block(ts_schedule *s, const char *what, int64_t threads, int64_t shared,
			    const char *tiles)
{
	if (threads > 1024)
		return ts_error(s->ctx, TS_ERR_INVALID,
				"%s: %lld threads per block, more than 1024 (fewer, larger thread blocks: raise thread_m/thread_n or lower block_m/block_n)",
				what, (long long)threads);
	if (shared > 49152)
		return ts_error(s->ctx, TS_ERR_INVALID,
				"%s: shared tiles %s take %lld bytes (both copies of a double buffer), more than the 48 KB of static shared memory",
				what, tiles, (long long)shared);
	return TS_OK;
}

/* A batched product's batches are the grid's z: at most 65535 blocks. */
static ts_status grid_z_refused(ts_schedule *s, const char *what, int64_t batches, const ts_tensor *C)
{
	return ts_error(s->ctx, TS_ERR_INVALID, "%s: %lld batches, more than the 65535 blocks of the "
			"grid's z (%s)", what, (long long)batches, C->name);
}

static ts_status cuda_params(ts_schedule *s, const char *what, const ts_matmul_cuda_params *d)
{
	return positive(s, what, 5,
			(int64_t[]){d->block_m, d->block_n, d->thread_m, d->thread_n, d->tile_k},
			(const char *[]){"block_m", "block_n", "thread_m", "thread_n", "tile_k"});
}

ts_status ts_schedule_matmul_cuda(ts_schedule *s, ts_tensor *C, const ts_matmul_cuda_params *p)
{
	TRY(need(s, C, "schedule_matmul_cuda"));
	ts_matmul_cuda_params d = p ? *p : ts_matmul_cuda_default();
	TRY(cuda_params(s, "schedule_matmul_cuda", &d));
	if (C->ninputs != 2 || C->nreduce != 1 || C->ndim < 2)
		return ts_error(s->ctx, TS_ERR_INVALID, "schedule_matmul_cuda: %s is not a matmul", C->name);
	d = fit_tiles(d, C->shape[C->ndim - 2], C->shape[C->ndim - 1], C->reduce_axis[0]->extent, !p);
	int64_t batches = 1;
	for (int i = 0; i + 2 < C->ndim; i++)
		batches *= C->shape[i]; /* no overflow: C has fewer than 2^31 elements */
	if (batches > 65535)
		return grid_z_refused(s, "schedule_matmul_cuda", batches, C);
	int64_t bytes = cuda_tile_bytes(&d, C->dtype.bits / 8);
	if (!p && bytes > 49152) { /* a skinny shape's widened tiles: one copy */
		d.double_buffer = 0;
		bytes = cuda_tile_bytes(&d, C->dtype.bits / 8);
	}
	int64_t tm = ceil_div64(d.block_m, d.thread_m), tn = ceil_div64(d.block_n, d.thread_n);
	int64_t threads = tm > 1024 || tn > 1024 ? (tm > tn ? tm : tn) : tm * tn; /* no overflow */
	TRY(fits_block(s, "schedule_matmul_cuda", threads, bytes, "(block_m + block_n) x tile_k"));
	TRY(untouched(s, "schedule_matmul_cuda", C));
	return schedule_gemm_like_cuda(s, C, 0, 1, &d);
}

/* The coefficient of v in an index a*v + b*r (+ ...) built by fe_window,
 * 0 where it is not of that form. */
static int64_t index_coef(const ts_expr *e, const ts_expr *v)
{
	int64_t k;
	switch (e->kind) {
	case IR_VAR:
		return e == v;
	case IR_ADD:
		return index_coef(e->u.bin.a, v) + index_coef(e->u.bin.b, v);
	case IR_MUL:
		if (ir_is_const_int(e->u.bin.b, &k) && e->u.bin.a == v)
			return k;
		if (ir_is_const_int(e->u.bin.a, &k) && e->u.bin.b == v)
			return k;
		return 0;
	default:
		return 0;
	}
}

/* A convolution's window: its read of the (padded) input P and of the
 * weights, and each output row's and column's stride and each tap's
 * dilation; false where Y is not the plain (one group) NCHW convolution
 * ts_op_conv2d_nchw builds. */
typedef struct conv_win {
	ts_tensor *P, *W;
	int64_t stride[2], dil[2], R, S;
} conv_win;

static bool conv_window_of(const ts_tensor *Y, conv_win *w)
{
	const ts_expr *b = Y->body;
	if (Y->ninputs != 2 || !b || b->kind != IR_REDUCE || b->u.reduce.op != TS_REDUCE_SUM ||
	    b->u.reduce.init || b->u.reduce.source->kind != IR_MUL)
		return false;
	const ts_expr *in = b->u.reduce.source->u.bin.a, *wt = b->u.reduce.source->u.bin.b;
	if (in->kind != IR_READ || wt->kind != IR_READ || in->u.read.n != 4 || wt->u.read.n != 4)
		return false;
	w->P = in->u.read.tensor;
	w->W = wt->u.read.tensor;
	/* one group: the input channel is the reduction's channel itself */
	if (w->W->op != TS_OP_PLACEHOLDER || in->u.read.idx[1] != Y->reduce_axis[0]->var ||
	    w->W->shape[1] != w->P->shape[1])
		return false;
	for (int d = 0; d < 2; d++) {
		w->stride[d] = index_coef(in->u.read.idx[2 + d], Y->axis[2 + d]->var);
		w->dil[d] = index_coef(in->u.read.idx[2 + d], Y->reduce_axis[1 + d]->var);
		if (w->stride[d] < 1 || w->dil[d] < 1 || w->stride[d] > 64 || w->dil[d] > 64)
			return false;
	}
	w->R = Y->reduce_axis[1]->extent;
	w->S = Y->reduce_axis[2]->extent;
	/* bounded, with the strides and dilations, so that the tiles' sizes
	 * (conv_tiles_of) cannot overflow; a larger kernel takes the simple
	 * schedule */
	return w->R <= 4096 && w->S <= 4096;
}

/* The largest divisor of n in [4, 8], else min(n, 8): output columns per
 * block, so that rows are whole where the width allows. */
static int64_t conv_cols(int64_t n)
{
	for (int64_t c = 8; c >= 4; c--)
		if (n % c == 0)
			return c;
	return min64(n, 8);
}

/* A block's tiles: block_m output channels, bh x bw output pixels; the
 * shared input tile (tile_k channels, the rows and columns the pixels'
 * windows cover) and weight tile, both copies of a double buffer. */
typedef struct conv_tiles {
	int64_t bh, bw, threads, bytes;
} conv_tiles;

static conv_tiles conv_tiles_of(const ts_tensor *Y, const conv_win *w, const ts_matmul_cuda_params *d)
{
	conv_tiles t;
	t.bw = conv_cols(Y->shape[3]);
	t.bh = min64(Y->shape[2], d->block_n / t.bw > 0 ? d->block_n / t.bw : 1);
	/* the loops cover whole thread steps: ceil(bw / thread_n) of
	 * thread_n columns, ceil(block_m / thread_m) of thread_m channels,
	 * and bound inference sizes the tiles to them; the parameters and
	 * the window are bounded (ts_schedule_conv2d_cuda): no overflow */
	int64_t tw = ceil_div64(t.bw, d->thread_n), tk = ceil_div64(d->block_m, d->thread_m);
	int64_t rows = (t.bh - 1) * w->stride[0] + (w->R - 1) * w->dil[0] + 1;
	int64_t cols = (tw * d->thread_n - 1) * w->stride[1] + (w->S - 1) * w->dil[1] + 1;
	int64_t in = d->tile_k * min64(rows, w->P->shape[2]) * min64(cols, w->P->shape[3]);
	int64_t wt = tk * d->thread_m * d->tile_k * w->R * w->S;
	t.threads = tk * t.bh * tw;
	/* each buffer 16-byte aligned by the emitter */
	t.bytes = (ceil_div64(4 * in, 16) + ceil_div64(4 * wt, 16)) * 16 * (d->double_buffer ? 2 : 1);
	return t;
}

/* The default tiles for the layer.  A late layer at batch 1 has few
 * outputs (14 x 14 x 256: 50176), and 4 x 4 per thread would leave most
 * of a GPU idle (3136 threads), so each thread's register block shrinks,
 * columns first, until there are CONV_THREADS threads or it is one
 * output; then a block's channels, and then its rows, halve until it has
 * at most 256 threads, and on until there are CONV_BLOCKS blocks, keeping
 * 16 channels and 64 threads (a wave over the 100-odd SMs of a large
 * GPU, with some over for the tail). */
#define CONV_THREADS 32768
#define CONV_BLOCKS 160

static int64_t conv_blocks(const ts_tensor *Y, const ts_matmul_cuda_params *d, conv_tiles t)
{
	return Y->shape[0] * ceil_div64(Y->shape[1], d->block_m) * ceil_div64(Y->shape[2], t.bh) *
	       ceil_div64(Y->shape[3], t.bw);
}

static void conv_default_tiles(const ts_tensor *Y, const conv_win *w, ts_matmul_cuda_params *d,
			       conv_tiles *t)
{
	int64_t outputs = Y->shape[0] * Y->shape[1] * Y->shape[2] * Y->shape[3];
	while (outputs / (d->thread_m * d->thread_n) < CONV_THREADS && d->thread_m * d->thread_n > 1) {
		if (d->thread_n >= d->thread_m)
			d->thread_n /= 2;
		else
			d->thread_m /= 2;
	}
	*t = conv_tiles_of(Y, w, d);
	for (;;) {
		bool big = t->threads > 256, few = conv_blocks(Y, d, *t) < CONV_BLOCKS;
		if (!big && !few)
			return;
		ts_matmul_cuda_params e = *d;
		if (d->block_m / 2 >= 16 && d->block_m / 2 >= d->thread_m)
			e.block_m = d->block_m / 2;
		else if (t->bh > 1)
			e.block_n = (t->bh / 2) * t->bw;
		else
			return;
		conv_tiles u = conv_tiles_of(Y, w, &e);
		if (!big && u.threads < 64)
			return;
		*d = e;
		*t = u;
	}
}

/* The naive schedule, for what the tiled one does not take (grouped
 * convolutions): one thread per output element of a (channel, column)
 * tile, padding inlined, accumulating in a register. */
static ts_status conv2d_cuda_simple(ts_schedule *s, ts_tensor *Y, const ts_matmul_cuda_params *d)
{
	int64_t tn = min64(d->thread_n, Y->shape[1]); /* bounded: no overflow below */
	int64_t ch = tn >= Y->shape[1] ? Y->shape[1] : min64(tn * 4, Y->shape[1]);
	TRY(fits_block(s, "schedule_conv2d_cuda", ch * min64(d->block_n, Y->shape[2] * Y->shape[3]), 0, ""));
	/* a producer the caller scheduled keeps that schedule */
	for (int i = 0; i < Y->ninputs; i++)
		if (placeable(s, Y->inputs[i]))
			TRY(ts_compute_inline(ts_stage_of(s, Y->inputs[i])));
	ts_tensor *YL = ts_cache_write(s, Y, TS_SCOPE_LOCAL);
	if (!YL)
		return ts_last_status(s->ctx);
	ts_stage *sy = ts_stage_of(s, Y), *sl = ts_stage_of(s, YL);
	ts_axis *f, *ko, *ki, *fo, *fi;
	TRY(ts_split(sy, ts_axis_of(sy, 1), tn * 4, &ko, &ki));
	TRY(ts_fuse(sy, ts_axis_of(sy, 2), ts_axis_of(sy, 3), &f));
	TRY(ts_split(sy, f, d->block_n, &fo, &fi));
	TRY(ts_reorder(sy, TS_AXES(ko, fo, ki, fi)));
	TRY(ts_bind(sy, ko, TS_BLOCK_Y));
	TRY(ts_bind(sy, fo, TS_BLOCK_X));
	TRY(ts_bind(sy, ki, TS_THREAD_Y));
	TRY(ts_bind(sy, fi, TS_THREAD_X));
	return ts_compute_at(sl, sy, fi);
}

ts_status ts_schedule_conv2d_cuda(ts_schedule *s, ts_tensor *Y, const ts_matmul_cuda_params *p)
{
	TRY(need(s, Y, "schedule_conv2d_cuda"));
	ts_matmul_cuda_params d = p ? *p : ts_matmul_cuda_default();
	TRY(cuda_params(s, "schedule_conv2d_cuda", &d));
	if (Y->ndim != 4 || Y->nreduce != 3)
		return ts_error(s->ctx, TS_ERR_INVALID, "schedule_conv2d_cuda: %s is not an NCHW convolution",
				Y->name);
	TRY(untouched(s, "schedule_conv2d_cuda", Y));
	conv_win w;
	if (!conv_window_of(Y, &w))
		return conv2d_cuda_simple(s, Y, &d);
	/* tiles clamped to the layer (as split does), so that small layers
	 * launch; bounded so that their products cannot overflow */
	d.block_m = min64(min64(d.block_m, Y->shape[1]), 4096);
	d.thread_m = min64(d.thread_m, d.block_m);
	d.block_n = min64(d.block_n, 65536);
	d.thread_n = min64(d.thread_n, conv_cols(Y->shape[3]));
	d.tile_k = min64(min64(d.tile_k, w.P->shape[1]), 4096);
	conv_tiles t = conv_tiles_of(Y, &w, &d);
	if (!p)
		conv_default_tiles(Y, &w, &d, &t);
	/* the defaults give up the double buffer, then halve the channel
	 * step, until the tiles fit the 48 KB of static shared memory */
	while (!p && t.bytes > 49152 && (d.double_buffer || d.tile_k > 1)) {
		if (d.double_buffer)
			d.double_buffer = 0;
		else
			d.tile_k = (d.tile_k + 1) / 2;
		t = conv_tiles_of(Y, &w, &d);
	}
	TRY(fits_block(s, "schedule_conv2d_cuda", t.threads, t.bytes,
		       "(the input's rows x columns the block's windows cover + block_m x the kernel's taps) x tile_k"));
	ts_tensor *XS = ts_cache_read(s, w.P, TS_SCOPE_SHARED, 1, &Y);
	ts_tensor *WS = XS ? ts_cache_read(s, w.W, TS_SCOPE_SHARED, 1, &Y) : NULL;
	ts_tensor *YL = WS ? ts_cache_write(s, Y, TS_SCOPE_LOCAL) : NULL;
	if (!YL)
		return ts_last_status(s->ctx);
	/* the padding is computed by the input tile's fetch (one the caller
	 * scheduled keeps that schedule, and the fetch reads its buffer) */
	if (placeable(s, w.P))
		TRY(ts_compute_inline(ts_stage_of(s, w.P)));
	ts_stage *sy = ts_stage_of(s, Y), *sl = ts_stage_of(s, YL);
	ts_axis *ko, *ki, *kt, *kr, *ho, *hi, *wo, *wi, *wt, *wr, *pix, *px;
	TRY(ts_split(sy, ts_axis_of(sy, 1), d.block_m, &ko, &ki));
	TRY(ts_split(sy, ki, d.thread_m, &kt, &kr));
	TRY(ts_split(sy, ts_axis_of(sy, 2), t.bh, &ho, &hi));
	TRY(ts_split(sy, ts_axis_of(sy, 3), t.bw, &wo, &wi));
	TRY(ts_split(sy, wi, d.thread_n, &wt, &wr));
	TRY(ts_reorder(sy, TS_AXES(ts_axis_of(sy, 0), ko, ho, wo, kt, hi, wt, kr, wr)));
	TRY(ts_fuse(sy, ho, wo, &pix));
	TRY(ts_fuse(sy, hi, wt, &px));
	TRY(ts_bind(sy, ts_axis_of(sy, 0), TS_BLOCK_Z));
	TRY(ts_bind(sy, ko, TS_BLOCK_Y));
	TRY(ts_bind(sy, pix, TS_BLOCK_X));
	TRY(ts_bind(sy, kt, TS_THREAD_Y));
	TRY(ts_bind(sy, px, TS_THREAD_X));
	/* the thread's thread_m x thread_n outputs, in registers */
	TRY(ts_unroll(sy, kr));
	TRY(ts_unroll(sy, wr));
	TRY(ts_compute_at(sl, sy, px));
	ts_axis *rco, *rci;
	TRY(ts_split(sl, ts_reduce_axis_of(sl, 0), d.tile_k, &rco, &rci));
	TRY(ts_reorder(sl, TS_AXES(rco, rci, ts_reduce_axis_of(sl, 1), ts_reduce_axis_of(sl, 2),
				   ts_axis_of(sl, 1), ts_axis_of(sl, 3))));
	TRY(ts_unroll(sl, ts_axis_of(sl, 1)));
	TRY(ts_unroll(sl, ts_axis_of(sl, 3)));
	int64_t ty = ceil_div64(d.block_m, d.thread_m), tx = t.bh * ceil_div64(t.bw, d.thread_n);
	TRY(cuda_fetch(s, XS, sl, rco, ty, tx, 1, d.double_buffer));
	return cuda_fetch(s, WS, sl, rco, ty, tx, 1, d.double_buffer);
}

/* ---- row operators: softmax, layer norm ---------------------------------------- */

/* The row axis (the fused leading axes, parallel) of a stage over rows,
 * NULL for 1-D; the last axis vectorized by lanes, its tail partitioned
 * off so the main loop runs whole vectors unguarded. */
static ts_status row_loops(ts_stage *st, int lanes, bool parallel, ts_axis **row)
{
	int nd = st->tensor->ndim;
	ts_axis *inner = ts_axis_of(st, nd - 1), *io, *ii;
	*row = nd > 1 ? ts_axis_of(st, 0) : NULL;
	for (int i = 1; i < nd - 1; i++)
		TRY(ts_fuse(st, *row, ts_axis_of(st, i), row));
	if (*row && parallel)
		TRY(ts_parallel(st, *row));
	if (inner->extent < lanes)
		return TS_OK;
	TRY(ts_split_tail(st, inner, lanes, TS_TAIL_PARTITION, &io, &ii));
	return ts_vectorize(st, ii);
}

/* An inner stage of a row operator (op, "a softmax (ts_op_softmax)"),
 * found by name (ops.h). */
static ts_stage *row_stage(ts_schedule *s, ts_tensor *Y, const char *what, const char *op,
			   const char *name)
{
	ts_tensor *t = ts_op_stage(Y, name);
	if (!t) {
		ts_clear_error(s->ctx);
		ts_error(s->ctx, TS_ERR_INVALID, "%s: %s is not %s: it has no stage %s", what, Y->name,
			 op, name);
		return NULL;
	}
	return ts_stage_of(s, t);
}

/* A row reduction (max, sum) factored by lanes: its .rf stage keeps
 * `lanes` partial results in one vector, so the reduction is not one chain
 * of dependent scalar operations per row (LLVM may not reassociate a float
 * reduction by itself); the stage then reduces the lanes.  The .rf stage
 * is computed at the output's row (at root for 1-D, row NULL). */
static ts_status row_rfactor(ts_schedule *s, ts_stage *st, ts_stage *sy, ts_axis *row, int lanes)
{
	ts_tensor *t = st->tensor;
	ts_axis *ko, *ki;
	/* a row of symbolic length stays one reduction: a dimension of size n
	 * is read only at an axis over n (check_reads), not at ko*lanes + ki */
	const ts_axis *k = ts_reduce_axis_of(st, 0);
	if (!k)
		return ts_last_status(s->ctx);
	if (lanes < 2 || k->extent < lanes || (k->root && k->root->extent_var))
		return TS_OK;
	TRY(ts_split(st, ts_reduce_axis_of(st, 0), lanes, &ko, &ki));
	ts_tensor *rf = ts_rfactor(s, t, ki, t->ndim);
	ts_stage *sr = rf ? ts_stage_of(s, rf) : NULL;
	if (!sr)
		return ts_last_status(s->ctx);
	ts_axis *lead = ts_axis_of(sr, 0), *lane = ts_axis_of(sr, t->ndim);
	for (int i = 1; i < t->ndim; i++)
		TRY(ts_fuse(sr, lead, ts_axis_of(sr, i), &lead));
	TRY(ts_reorder(sr, TS_AXES(lead, ts_reduce_axis_of(sr, 0), lane)));
	TRY(ts_vectorize(sr, lane));
	return row ? ts_compute_at(sr, sy, row) : TS_OK;
}

ts_status ts_schedule_softmax_cpu(ts_schedule *s, ts_tensor *Y, int lanes)
{
	const char *what = "schedule_softmax_cpu", *op = "a softmax (ts_op_softmax)";
	TRY(need(s, Y, what));
	TRY(check_lanes(s, what, lanes));
	ts_stage *sy = ts_stage_of(s, Y);
	if (!sy)
		return ts_last_status(s->ctx);
	ts_stage *sm = row_stage(s, Y, what, op, "softmax_max");
	ts_stage *se = sm ? row_stage(s, Y, what, op, "softmax_exp") : NULL;
	ts_stage *ss = se ? row_stage(s, Y, what, op, "softmax_sum") : NULL;
	if (!ss)
		return ts_last_status(s->ctx);
	const ts_stage *mine[] = {sy, sm, se, ss};
	TRY(stages_untouched(s, what, 4, mine));
	ts_axis *row, *erow;
	TRY(row_loops(sy, lanes, true, &row));
	TRY(row_loops(se, lanes, false, &erow));
	if (!row) /* 1-D: one row, every stage at root */
		return TS_OK;
	/* max, exp and sum per row of the output: the row's exponentials stay
	 * in cache between the sum and the division */
	TRY(ts_compute_at(sm, sy, row));
	TRY(ts_compute_at(se, sy, row));
	TRY(ts_compute_at(ss, sy, row));
	TRY(row_rfactor(s, sm, sy, row, lanes));
	return row_rfactor(s, ss, sy, row, lanes);
}

ts_status ts_schedule_layer_norm_cpu(ts_schedule *s, ts_tensor *Y, int lanes)
{
	const char *what = "schedule_layer_norm_cpu", *op = "a layer norm (ts_op_layer_norm)";
	TRY(need(s, Y, what));
	TRY(check_lanes(s, what, lanes));
	ts_stage *sy = ts_stage_of(s, Y);
	if (!sy)
		return ts_last_status(s->ctx);
	ts_stage *sm = row_stage(s, Y, what, op, "layer_norm_mean");
	ts_stage *sv = sm ? row_stage(s, Y, what, op, "layer_norm_var") : NULL;
	if (!sv)
		return ts_last_status(s->ctx);
	const ts_stage *mine[] = {sy, sm, sv};
	TRY(stages_untouched(s, what, 3, mine));
	ts_axis *row;
	TRY(row_loops(sy, lanes, true, &row));
	/* the mean and the variance per row of the output: the row stays in
	 * cache across its three passes */
	if (row) {
		TRY(ts_compute_at(sm, sy, row));
		TRY(ts_compute_at(sv, sy, row));
	}
	TRY(row_rfactor(s, sm, sy, row, lanes));
	return row_rfactor(s, sv, sy, row, lanes);
}

/* ---- tensor cores ------------------------------------------------------------------ */

ts_matmul_tc_params ts_matmul_tc_default(void)
{
	return (ts_matmul_tc_params){.block_m = 64, .block_n = 64, .warp_m = 32, .warp_n = 32,
				     .tile_k = 32, .double_buffer = 1};
}

/* The largest of v, v / 2, v / 4, ... that divides n, at least 16 (n is a
 * multiple of 16). */
static int64_t fit16(int64_t v, int64_t n)
{
	while (v > 16 && n % v)
		v /= 2;
	return v < 16 ? 16 : v;
}

/* f32(read of one input), or round_tf32(read) */
static bool tc_operand(const ts_expr *e)
{
	if (e->kind == IR_CALL && e->u.call.op == IR_INTRIN_ROUND_TF32)
		return e->u.call.args[0]->kind == IR_READ;
	return e->kind == IR_CAST && ts_dtype_eq(e->dtype, ts_float32) && e->u.un.a->kind == IR_READ;
}

static const ts_tensor *tc_read(const ts_expr *e)
{
	return (e->kind == IR_CALL ? e->u.call.args[0] : e->u.un.a)->u.read.tensor;
}

/* C's body is sum_k f32(x) * f32(y), reads of its two inputs. */
static bool tc_body(const ts_tensor *C)
{
	const ts_expr *b = C->body;
	if (!b || b->kind != IR_REDUCE || b->u.reduce.op != TS_REDUCE_SUM || b->u.reduce.init)
		return false;
	const ts_expr *p = b->u.reduce.source;
	return p->kind == IR_MUL && tc_operand(p->u.bin.a) && tc_operand(p->u.bin.b) &&
	       p->u.bin.a->kind == p->u.bin.b->kind &&
	       tc_read(p->u.bin.a) != tc_read(p->u.bin.b);
}

/* The most shared memory a block of every tensor-core GPU (sm_80 and
 * newer) takes: sm_86's and sm_89's 99 KB; past 48 KB the kernel takes it
 * dynamically (c_emit.c, build_cuda.c). */
#define TC_MAX_SHARED 101376

/* The shared tiles' bytes, rows padded by 8 (tc_fetch), counted on the
 * longer side, both copies of a double buffer; the tiles are at most 4096
 * (tc_check), so no overflow. */
static int64_t tc_tile_bytes(const ts_tensor *A, const ts_matmul_tc_params *d)
{
	return (A->dtype.bits / 8) * (d->block_m + d->block_n + 16) * (d->tile_k + 8) *
	       (d->double_buffer ? 2 : 1);
}

static ts_status tc_check(ts_schedule *s, const ts_tensor *C, const ts_matmul_tc_params *d)
{
	const char *w = "schedule_matmul_tensorcore";
	ts_ctx *ctx = s->ctx;
	bool mm = C->op == TS_OP_COMPUTE && (C->ndim == 2 || C->ndim == 3) && C->nreduce == 1;
	if (mm && C->ninputs == 1 && C->inputs[0]->ndim == C->ndim)
		return ts_error(ctx, TS_ERR_INVALID, "%s: both operands of %s are %s; the shared tiles "
				"need two tensors (read one of them through a copy)", w, C->name,
				C->inputs[0]->name);
	if (!mm || C->ninputs != 2)
		return ts_error(ctx, TS_ERR_INVALID, "%s: %s is not a matmul of two tensors (C[M, N] = "
				"sum_k float32(A) x float32(B), e.g. ts_op_matmul_acc, or its batched "
				"C[b, M, N])", w, C->name);
	const ts_tensor *A = C->inputs[0], *B = C->inputs[1];
	for (int i = 0; i < 2; i++)
		if (C->inputs[i]->ndim != C->ndim)
			return ts_error(ctx, TS_ERR_INVALID, "%s: operand %s has %d dimensions; the "
					"tensor-core GEMM takes %d-D A and B for its %d-D %s", w,
					C->inputs[i]->name, C->inputs[i]->ndim, C->ndim, C->ndim, C->name);
	if (C->ndim == 3 && C->shape[0] > 65535)
		return grid_z_refused(s, w, C->shape[0], C);
	for (int i = 0; i < 3; i++) {
		const ts_tensor *t = i < 2 ? C->inputs[i] : C;
		for (int d = 0; d < t->ndim; d++)
			if (t->dim_var[d])
				return ts_error(ctx, TS_ERR_INVALID, "%s: %s has a symbolic extent; the "
						"tensor-core GEMM needs constant shapes", w, t->name);
	}
	TRY(untouched(s, w, C));
	char c[24], a[24], b[24];
	bool f32 = ts_dtype_eq(A->dtype, ts_float32);
	if (!ts_dtype_eq(C->dtype, ts_float32) || !ts_dtype_is_float(A->dtype) ||
	    (A->dtype.bits != 16 && !f32) || !ts_dtype_eq(A->dtype, B->dtype))
		return ts_error(ctx, TS_ERR_INVALID, "%s: %s is %s from %s and %s; tensor cores take float16 "
				"or bfloat16 operands (both the same) into float32 (ts_op_matmul_acc(..., "
				"ts_float32)), or float32 ones rounded to TF32 (ts_op_matmul_tf32)", w, C->name,
				ts_dtype_str(C->dtype, c), ts_dtype_str(A->dtype, a), ts_dtype_str(B->dtype, b));
	if (!tc_body(C) || (f32 != (C->body->u.reduce.source->u.bin.a->kind == IR_CALL)))
		return ts_error(ctx, TS_ERR_INVALID, "%s: %s is not a sum of products float32(A) x "
				"float32(B) of its two operands (ts_op_matmul_acc), nor of round_tf32(A) x "
				"round_tf32(B) (ts_op_matmul_tf32)%s", w, C->name,
				f32 ? "; float32 operands take tensor cores rounded to TF32 first" : "");
	int64_t ext[3] = {C->shape[C->ndim - 2], C->shape[C->ndim - 1], C->reduce_axis[0]->extent};
	static const char *const dim[3] = {"M", "N", "K"};
	for (int i = 0; i < 3; i++)
		if (ext[i] % 16)
			return ts_error(ctx, TS_ERR_INVALID, "%s: %s = %lld is not a multiple of 16, the MMA's "
					"tile (pad the operands, or use ts_schedule_matmul_cuda)", w, dim[i],
					(long long)ext[i]);
	TRY(positive(s, w, 5, (int64_t[]){d->block_m, d->block_n, d->warp_m, d->warp_n, d->tile_k},
		     (const char *[]){"block_m", "block_n", "warp_m", "warp_n", "tile_k"}));
	const int64_t t[3][2] = {{d->block_m, ext[0]}, {d->block_n, ext[1]}, {d->tile_k, ext[2]}};
	static const char *const name[3] = {"block_m", "block_n", "tile_k"};
	for (int i = 0; i < 3; i++)
		if (t[i][0] % 16 || t[i][1] % t[i][0])
			return ts_error(ctx, TS_ERR_INVALID, "%s: %s = %lld must be a multiple of 16 that "
					"divides %s = %lld", w, name[i], (long long)t[i][0], dim[i],
					(long long)t[i][1]);
	if (d->warp_m % 16 || d->block_m % d->warp_m || d->warp_n % 16 || d->block_n % d->warp_n)
		return ts_error(ctx, TS_ERR_INVALID, "%s: warp tiles %lld x %lld must be multiples of 16 "
				"that divide the block tile %lld x %lld", w, (long long)d->warp_m,
				(long long)d->warp_n, (long long)d->block_m, (long long)d->block_n);
	int64_t warps = (d->block_m / d->warp_m) * (d->block_n / d->warp_n);
	if (warps > 32)
		return ts_error(ctx, TS_ERR_INVALID, "%s: %lld warps per block, more than 32 (1024 threads)",
				w, (long long)warps);
	if (d->warp_m * d->warp_n > 64 * 64)
		return ts_error(ctx, TS_ERR_INVALID, "%s: a warp tile of %lld x %lld holds %lld registers "
				"per lane; at most 64 x 64 (128)", w, (long long)d->warp_m,
				(long long)d->warp_n, (long long)(d->warp_m * d->warp_n / 32));
	/* each tile's rows padded by 8 (tc_fetch), counted on the longer side;
	 * the tiles are bounded first, so the product cannot overflow */
	if (d->block_m > 4096 || d->block_n > 4096 || d->tile_k > 4096 || tc_tile_bytes(A, d) > TC_MAX_SHARED)
		return ts_error(ctx, TS_ERR_INVALID, "%s: shared tiles (block_m + block_n) x tile_k, their "
				"rows padded, take more than the %d bytes of shared memory every tensor-core "
				"GPU gives a block (%lld + %lld by %lld%s)", w, TC_MAX_SHARED,
				(long long)d->block_m, (long long)d->block_n, (long long)d->tile_k,
				d->double_buffer ? ", two copies of each" : "");
	return TS_OK;
}

/* The cooperative load of a shared tile: its elements spread over the
 * block's threads, 32 lanes of threadIdx.x under the warps' y and z.  Its
 * rows (a multiple of 16 elements) get 8 more: the 8 rows g and the 4
 * column pairs t that a fragment's lanes read then fall in 32 different
 * banks, where unpadded rows of 32 or 64 halves put 4 lanes in each.
 * TF32 operands (float32, each lane loading its elements) get rows 4
 * more (A: rows g read at columns t: 4 g + t covers the banks) or 8 more
 * (B: rows t read at columns g: 8 t + g). */
static ts_status tc_fetch(ts_schedule *s, ts_tensor *T, ts_stage *at, ts_axis *ko, int64_t wy,
			  int64_t wx, int64_t pad)
{
	ts_stage *ss = ts_stage_of(s, T);
	ts_axis *f, *fo, *fv, *o, *t, *tyz, *tx, *tz, *ty;
	int64_t vec = 16 / (T->dtype.bits / 8);
	TRY(ts_storage_align(ss, T->ndim - 2, 16, pad));
	TRY(ts_compute_at(ss, at, ko));
	f = ts_axis_of(ss, 0); /* a batch (one per block) and the tile's rows and columns */
	for (int i = 1; i < T->ndim; i++)
		TRY(ts_fuse(ss, f, ts_axis_of(ss, i), &f));
	/* 16 bytes per thread: one move (rows are multiples of 16 bytes) */
	TRY(ts_split(ss, f, vec, &fo, &fv));
	TRY(ts_vectorize(ss, fv));
	TRY(ts_split(ss, fo, 32 * wy * wx, &o, &t));
	TRY(ts_split(ss, t, 32, &tyz, &tx));
	TRY(ts_split(ss, tyz, wx, &tz, &ty));
	TRY(ts_bind(ss, tz, TS_THREAD_Z));
	TRY(ts_bind(ss, ty, TS_THREAD_Y));
	return ts_bind(ss, tx, TS_THREAD_X);
}

ts_status ts_schedule_matmul_tensorcore(ts_schedule *s, ts_tensor *C, const ts_matmul_tc_params *p)
{
	TRY(need(s, C, "schedule_matmul_tensorcore"));
	if (!ts_stage_of(s, C))
		return ts_last_status(s->ctx);
	ts_matmul_tc_params d = p ? *p : ts_matmul_tc_default();
	int nd = C->ndim >= 2 ? C->ndim : 2;
	int64_t m = C->ndim >= 2 ? C->shape[nd - 2] : 0, n = C->ndim >= 2 ? C->shape[nd - 1] : 0;
	int64_t batches = C->ndim == 3 ? C->shape[0] : 1;
	if (!p && (C->ndim == 2 || C->ndim == 3) && m % 128 == 0 && n % 128 == 0 &&
	    batches * m * n >= 2048 * 2048) {
		/* enough 128 x 128 blocks to fill a GPU: 64 x 64 per warp, so
		 * that each fragment loaded feeds 4 MMAs (about 220 registers) */
		d = (ts_matmul_tc_params){.block_m = 128, .block_n = 128, .warp_m = 64, .warp_n = 64,
					  .tile_k = 32, .double_buffer = 1};
	}
	if (!p && (C->ndim == 2 || C->ndim == 3) && C->nreduce == 1 && m % 16 == 0 && n % 16 == 0 &&
	    C->reduce_axis[0]->extent % 16 == 0) {
		/* the defaults, halved until they divide the shape */
		d.block_m = fit16(d.block_m, m);
		d.block_n = fit16(d.block_n, n);
		d.tile_k = fit16(d.tile_k, C->reduce_axis[0]->extent);
		d.warp_m = min64(d.warp_m, d.block_m);
		d.warp_n = min64(d.warp_n, d.block_n);
	}
	if (!p && C->ninputs == 2 && d.block_m <= 4096 && d.block_n <= 4096 && d.tile_k <= 4096 &&
	    tc_tile_bytes(C->inputs[0], &d) > TC_MAX_SHARED)
		d.double_buffer = 0;
	TRY(tc_check(s, C, &d));
	TRY(untouched(s, "schedule_matmul_tensorcore", C));
	ts_tensor *A = C->inputs[0], *B = C->inputs[1];
	ts_tensor *AS = ts_cache_read(s, A, TS_SCOPE_SHARED, 1, &C);
	ts_tensor *BS = AS ? ts_cache_read(s, B, TS_SCOPE_SHARED, 1, &C) : NULL;
	ts_tensor *CL = BS ? ts_cache_write(s, C, TS_SCOPE_LOCAL) : NULL;
	if (!CL)
		return ts_last_status(s->ctx);
	ts_stage *sc = ts_stage_of(s, C), *sl = ts_stage_of(s, CL);
	int64_t wy = d.block_m / d.warp_m, wx = d.block_n / d.warp_n;
	/* C: blocks (a batch's on the grid's z), warps (threadIdx.z, y),
	 * 16 x 16 tiles stored per lane */
	ts_axis *by, *bx, *yi, *xi, *ty, *tx, *ym, *xm, *y16, *x16, *yw, *xw;
	TRY(ts_tile(sc, ts_axis_of(sc, nd - 2), ts_axis_of(sc, nd - 1), d.block_m, d.block_n, &by, &bx,
		    &yi, &xi));
	if (nd == 3)
		TRY(ts_bind(sc, ts_axis_of(sc, 0), TS_BLOCK_Z));
	TRY(ts_split(sc, yi, d.warp_m, &ty, &yw));
	TRY(ts_split(sc, xi, d.warp_n, &tx, &xw));
	TRY(ts_split(sc, yw, 16, &ym, &y16));
	TRY(ts_split(sc, xw, 16, &xm, &x16));
	TRY(ts_reorder(sc, TS_AXES(by, bx, ty, tx, ym, xm, y16, x16)));
	TRY(bind_tiles(sc, by, bx, ty, tx, TS_THREAD_Z));
	/* unrolled, the accumulator's registers are indexed by constants */
	TRY(ts_unroll(sc, ym));
	TRY(ts_unroll(sc, xm));
	TRY(ts_tensorize(sc, y16, TS_INTRIN_MMA_16X16X16));
	/* the warp's accumulator: k steps of tile_k, each 16-deep MMAs over
	 * the warp's 16 x 16 tiles */
	TRY(ts_compute_at(sl, sc, tx));
	ts_axis *ko, *kr, *kro, *kri, *lyo, *lyi, *lxo, *lxi;
	TRY(ts_split(sl, ts_axis_of(sl, nd - 2), 16, &lyo, &lyi));
	TRY(ts_split(sl, ts_axis_of(sl, nd - 1), 16, &lxo, &lxi));
	TRY(ts_split(sl, ts_reduce_axis_of(sl, 0), d.tile_k, &ko, &kr));
	TRY(ts_split(sl, kr, 16, &kro, &kri));
	TRY(ts_reorder(sl, TS_AXES(ko, kro, lyo, lxo, lyi, lxi, kri)));
	TRY(ts_unroll(sl, kro));
	TRY(ts_unroll(sl, lyo));
	TRY(ts_unroll(sl, lxo));
	TRY(ts_tensorize(sl, lyi, TS_INTRIN_MMA_16X16X16));
	bool tf32 = A->dtype.bits == 32;
	TRY(tc_fetch(s, AS, sl, ko, wy, wx, tf32 ? 4 : 8));
	TRY(tc_fetch(s, BS, sl, ko, wy, wx, 8));
	if (d.double_buffer) {
		TRY(ts_double_buffer(ts_stage_of(s, AS)));
		TRY(ts_double_buffer(ts_stage_of(s, BS)));
	}
	return TS_OK;
}
