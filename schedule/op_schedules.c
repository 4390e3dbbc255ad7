/*
 * op_schedules.c - default schedules of the operator library (see
 * op_schedules.h for the structure of each).
 *
 * Each function only calls the public primitives, exactly as a user would;
 * the first failing primitive's error is returned unchanged.  This file
 * has the checks all of them share (op_schedules_util.h), the generic
 * defaults, matmul, dense and batch matmul with their epilogues, and the
 * row operators; op_schedules_conv.c the CPU convolutions,
 * op_schedules_cuda.c the GPU schedules.
 */
#include "op_schedules.h"
#include "op_schedules_util.h"

#include "ops.h"
#include "threadpool.h"

#include <stdio.h>

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
		TS_TRY(ts_fuse(st, outer, ts_axis_of(st, i), &outer));
	if (outer)
		TS_TRY(ts_parallel(st, outer));
	if (inner->extent < lanes)
		return TS_OK;
	ts_axis *io, *ii;
	TS_TRY(ts_split_tail(st, inner, lanes, TS_TAIL_PARTITION, &io, &ii));
	/* the vector loop innermost, every reduction loop outside it */
	ts_axis *order[64];
	int n = 0;
	for (int i = 0; i < st->nleaf; i++)
		if (st->leaf[i] != ii && st->leaf[i] != outer)
			order[n++] = st->leaf[i];
	order[n++] = ii;
	TS_TRY(ts_reorder(st, n, order));
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
bool sch_pristine(ts_schedule *s, const ts_stage *st)
{
	return st && !given(s, st);
}

/* A producer a schedule function may inline or attach: pristine, and not
 * an output (whose buffer the caller reads). */
bool sch_placeable(ts_schedule *s, const ts_tensor *P)
{
	const ts_stage *sp = P->op == TS_OP_COMPUTE ? ts_stage_of(s, P) : NULL;
	return sch_pristine(s, sp) && !sp->is_output;
}

ts_status sch_untouched(ts_schedule *s, const char *what, const ts_tensor *T)
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

/* sch_untouched() of n stages. */
static ts_status stages_untouched(ts_schedule *s, const char *what, int n, const ts_stage *const *st)
{
	for (int i = 0; i < n; i++)
		TS_TRY(sch_untouched(s, what, st[i]->tensor));
	return TS_OK;
}

/* Every stage of s untouched: a whole-schedule default refuses one
 * already scheduled before changing any. */
ts_status sch_all_untouched(ts_schedule *s, const char *what)
{
	return stages_untouched(s, what, s->nstages, (const ts_stage *const *)s->stages);
}

/* Y, its epilogue chain[0..n) and their root C sch_untouched(). */
ts_status sch_chain_untouched(ts_schedule *s, const char *what, const ts_tensor *Y, ts_tensor *const *chain,
				 int n, const ts_tensor *C)
{
	TS_TRY(sch_untouched(s, what, Y));
	for (int i = 0; i < n; i++)
		TS_TRY(sch_untouched(s, what, chain[i]));
	return sch_untouched(s, what, C);
}

/* Whether producer P of `reader` is the operator schedule's to place: as
 * ts_create_schedule made it (one the caller scheduled keeps that
 * schedule), no output, and (unless only inlined) read by no other stage;
 * otherwise it stays computed whole, at root, before its readers. */
bool sch_own_producer(ts_schedule *s, const ts_tensor *P, const ts_tensor *reader, bool attach)
{
	if (!sch_placeable(s, P))
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
	TS_TRY(check_lanes(s, "schedule_default_cpu", lanes));
	TS_TRY(sch_all_untouched(s, "schedule_default_cpu"));
	for (int i = 0; i < s->nstages; i++) {
		ts_stage *st = s->stages[i];
		if (!st->is_output && st->body->kind != IR_REDUCE && !read_twice(s, st))
			TS_TRY(ts_compute_inline(st));
		else
			TS_TRY(default_stage(st, lanes));
	}
	return TS_OK;
}

/* One output element per thread over the fused data axes; returns the
 * thread axis. */
static ts_status default_stage_cuda(ts_stage *st, int threads, ts_axis **thread)
{
	ts_axis *f = ts_axis_of(st, 0), *bx;
	for (int i = 1; i < st->tensor->ndim; i++)
		TS_TRY(ts_fuse(st, f, ts_axis_of(st, i), &f));
	TS_TRY(ts_split(st, f, threads, &bx, thread));
	TS_TRY(ts_bind(st, bx, TS_BLOCK_X));
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
	TS_TRY(sch_all_untouched(s, "schedule_default_cuda"));
	ts_stage *out = ts_stage_of(s, s->outputs[0]);
	ts_axis *tx;
	TS_TRY(default_stage_cuda(out, threads, &tx));
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
			TS_TRY(ts_compute_inline(st));
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
			TS_TRY(default_stage_cuda(st, threads, &t));
			TS_TRY(ts_compute_at(ts_stage_of(s, acc), st, t));
			continue;
		}
		TS_TRY(ts_set_scope(st, TS_SCOPE_LOCAL));
		TS_TRY(ts_compute_at(st, out, tx));
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

/* kc by default for a product of n columns over k with B read in place,
 * nr-column panels (0: the whole reduction).  AVX-512, one thread and
 * two, against kc 0: long reductions read in place lose the most where
 * each tile streams its whole k of A and B (ResNet-50's fc 1 x 1000 x
 * 2048 1.8-2.0x faster in chunks of 256, the im2col GEMMs 64 x 3136 x 576
 * 1.2-1.3x and 256 x 196 x 2304 1.5-1.6x, BERT's 128 x 768 x 3072
 * 1.2-1.6x, 128 x 768 x 768 0-9%).  The chunks' parallel loop is the
 * column panels alone, so they are taken only where there are at least
 * two a thread (with fewer, 2048 x 49 x 512 ran 2.5x slower at two
 * threads); with AVX2 they were not measured (none). */
static int64_t default_kc(int64_t n, int64_t k, int64_t nr)
{
	if (!host_has_avx512() || k < 512 || nr < 1 || n / nr < 2 * (int64_t)ts_num_threads())
		return 0;
	return 256;
}

ts_matmul_cpu_params ts_matmul_cpu_default_shape(int64_t m, int64_t n, int64_t k)
{
	ts_matmul_cpu_params d = ts_matmul_cpu_default_for(n);
	if (m > 0 && n > 0 && k > 0 && !ts_matmul_cpu_packs(m))
		d.kc = default_kc(n, k, d.nr);
	return d;
}

ts_status sch_need(ts_schedule *s, const ts_tensor *t, const char *what)
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
ts_status sch_positive(ts_schedule *s, const char *what, int n, const int64_t *v,
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
	TS_TRY(ts_vectorize(sp, ts_axis_of(sp, 2)));
	if (parallel)
		TS_TRY(ts_parallel(sp, ts_axis_of(sp, 0)));
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
	TS_TRY(ts_tile(so, ts_axis_of(so, 0), ts_axis_of(so, 1), d->mr, d->nr, &mo, &no, &mi, &ni));
	TS_TRY(ts_reorder(so, TS_AXES(no, mo)));
	ts_axis *outer = no;
	bool panel = d->pack == TS_PACK_PANEL;
	if (panel)
		TS_TRY(ts_compute_at(ts_stage_of(s, packed_operand(C)), so, no));
	else
		TS_TRY(ts_fuse(so, no, mo, &outer));
	*f = panel ? mo : outer;
	TS_TRY(ts_vectorize(so, ni));
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
	TS_TRY(ts_compute_at(scc, so, f));
	ts_axis *mc = ts_axis_of(scc, 0), *nc = ts_axis_of(scc, 1);
	TS_TRY(ts_split(scc, ts_reduce_axis_of(scc, 0), d->kunroll, &ko, &ki));
	TS_TRY(ts_reorder(scc, TS_AXES(ko, ki, mc, nc)));
	TS_TRY(ts_unroll(scc, ki));
	TS_TRY(ts_unroll(scc, mc));
	ts_tensor *B = C->inputs[C->ninputs - 1];
	if (d->prefetch && constant_input(B))
		TS_TRY(ts_prefetch_ahead(scc, B, ko, f, 1));
	return ts_vectorize(scc, nc);
}

/* The register block's columns are one vector: at most
 * TS_MAX_VECTOR_LANES, checked before any primitive changes the schedule. */
static ts_status block_params(ts_schedule *s, const char *what, const ts_matmul_cpu_params *d)
{
	TS_TRY(sch_positive(s, what, 3, (int64_t[]){d->mr, d->nr, d->kunroll},
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
	TS_TRY(block_params(s, what, d));
	if (!is_matmul(C))
		return ts_error(s->ctx, TS_ERR_INVALID,
				"%s: %s is not a matmul (ts_op_matmul or ts_op_matmul_packed)", what,
				C->name);
	if ((unsigned)d->pack > TS_PACK_PANEL)
		return ts_error(s->ctx, TS_ERR_INVALID,
				"%s: parameter pack must be TS_PACK_AUTO, TS_PACK_AHEAD or TS_PACK_PANEL, got %d",
				what, (int)d->pack);
	TS_TRY(sch_untouched(s, what, C));
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
		TS_TRY(schedule_packing(s, packed_operand(C), d->parallel && d->pack != TS_PACK_PANEL));
	if (d->mr > C->shape[0]) /* few rows (a dense layer): no idle accumulators */
		d->mr = C->shape[0];
	return TS_OK;
}

/* The default parameters for C: those for its columns, its tiles as wide
 * as B's panels where B is packed (a tile across two panels reads both).
 * With a symbolic extent among A's and B's inner dimensions their rows are
 * run-time strides apart, and each row an unrolled k step reads costs a
 * register for its address (constant strides are folded into
 * displacements): k stays rolled so the accumulators and addresses fit.
 * in_memory: C is the result, stored (no epilogue), so the reduction may
 * run in chunks (default_kc) where B is read in place and every extent
 * is constant. */
static ts_matmul_cpu_params default_for(const ts_tensor *C, bool in_memory)
{
	ts_matmul_cpu_params d = C->dim_var[1] ? ts_matmul_cpu_default()
					       : ts_matmul_cpu_default_for(C->shape[1]);
	const ts_tensor *Bp = C->ninputs == 2 ? packed_operand(C) : NULL;
	if (Bp && Bp->shape[2] != d.nr) {
		d = ts_matmul_cpu_default();
		d.nr = Bp->shape[2];
	}
	if (in_memory && C->ninputs == 2 && !Bp && C->nreduce == 1 && !C->dim_var[0] && !C->dim_var[1] &&
	    !C->reduce_axis[0]->extent_var)
		d.kc = default_kc(C->shape[1], C->reduce_axis[0]->extent, d.nr);
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
	TS_TRY(ts_tile(sc, ts_axis_of(sc, 0), ts_axis_of(sc, 1), d->mr, d->nr, &mo, &no, &mi, &ni));
	/* the partial tiles of the last rows, columns and chunk in nests of
	 * their own: guarded inside, the tile's rows were tested at every step
	 * (12 x 32 over 128 rows ran 2x slower) */
	TS_TRY(ts_set_tail(sc, mo, TS_TAIL_PARTITION));
	TS_TRY(ts_set_tail(sc, no, TS_TAIL_PARTITION));
	TS_TRY(ts_split_tail(sc, ts_reduce_axis_of(sc, 0), d->kc, TS_TAIL_PARTITION, &ko, &ki));
	TS_TRY(ts_split_tail(sc, ki, d->kunroll, TS_TAIL_PARTITION, &kio, &kii));
	TS_TRY(ts_reorder(sc, TS_AXES(no, ko, mo, kio, kii, mi, ni)));
	if (d->pack == TS_PACK_PANEL)
		TS_TRY(ts_compute_at(ts_stage_of(s, packed_operand(C)), sc, no));
	TS_TRY(ts_unroll(sc, kii));
	TS_TRY(ts_unroll(sc, mi));
	TS_TRY(ts_vectorize(sc, ni));
	return d->parallel ? ts_parallel(sc, no) : TS_OK;
}

static ts_status schedule_matmul(ts_schedule *s, const char *what, ts_tensor *C,
				 const ts_matmul_cpu_params *p)
{
	ts_matmul_cpu_params d = p ? *p : default_for(C, true);
	TS_TRY(matmul_prologue(s, what, C, &d));
	if (d.kc > 0 && d.kc < C->reduce_axis[0]->extent)
		return schedule_k_chunks(s, C, &d);
	ts_tensor *CC = ts_cache_write(s, C, TS_SCOPE_LOCAL);
	if (!CC)
		return ts_last_status(s->ctx);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *f;
	TS_TRY(tile_output(s, sc, C, &d, &f));
	return schedule_accumulator(ts_stage_of(s, CC), sc, f, &d, C);
}

ts_status ts_schedule_matmul_cpu(ts_schedule *s, ts_tensor *C, const ts_matmul_cpu_params *p)
{
	TS_TRY(sch_need(s, C, "schedule_matmul_cpu"));
	return schedule_matmul(s, "schedule_matmul_cpu", C, p);
}

/* ---- elementwise epilogues ----------------------------------------------------- */


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

static const sch_epilogue_root sch_dense_root = {"schedule_dense_cpu", "matmul", "a matmul", is_matmul};
static const sch_epilogue_root sch_bmm_root = {"schedule_batch_matmul_cpu", "batch matmul",
				       "a batch matmul", is_batch_matmul};
const sch_epilogue_root sch_conv_root = {"schedule_conv2d_nchwc_cpu", "convolution",
					"an NCHW[x]c convolution", is_conv_nchwc};
const sch_epilogue_root sch_dw_nchwc_root = {"schedule_depthwise_nchwc_cpu",
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
static ts_status epilogue_step(ts_schedule *s, const sch_epilogue_root *r, const ts_tensor *Y,
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
static bool same_shape(ts_schedule *s, const sch_epilogue_root *r, const ts_tensor *Y,
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
static bool chain_private(ts_schedule *s, const sch_epilogue_root *r, const ts_tensor *Y,
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
static ts_tensor *find_root(ts_schedule *s, const sch_epilogue_root *r, ts_tensor *Y,
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

ts_status sch_epilogue_of(ts_schedule *s, const char *what, const sch_epilogue_root *r, ts_tensor *Y,
			  ts_tensor **chain, int *n, ts_tensor **root)
{
	*root = find_root(s, r, Y, chain, n);
	if (!*root)
		return ts_last_status(s->ctx);
	return sch_chain_untouched(s, what, Y, chain, *n, *root);
}

/* The epilogue runs on the root's block in registers: the stages between Y
 * and the root are inlined into Y, and the root, local, is never stored. */
ts_status sch_fuse_epilogue(ts_schedule *s, ts_tensor *const *chain, int n, ts_tensor *C)
{
	for (int i = 1; i < n; i++)
		TS_TRY(ts_compute_inline(ts_stage_of(s, chain[i])));
	return ts_set_scope(ts_stage_of(s, C), TS_SCOPE_LOCAL);
}

ts_tensor *sch_block_accumulator(ts_schedule *s, ts_tensor *Y, ts_tensor *const *chain, int n,
				 ts_tensor *C)
{
	if (!n)
		return ts_cache_write(s, Y, TS_SCOPE_LOCAL);
	return sch_fuse_epilogue(s, chain, n, C) == TS_OK ? C : NULL;
}

ts_status ts_schedule_dense_cpu(ts_schedule *s, ts_tensor *Y, const ts_matmul_cpu_params *p)
{
	TS_TRY(sch_need(s, Y, "schedule_dense_cpu"));
	ts_tensor *chain[TS_MAX_EPILOGUE], *C;
	int n;
	TS_TRY(sch_epilogue_of(s, "schedule_dense_cpu", &sch_dense_root, Y, chain, &n, &C));
	if (n == 0)
		return schedule_matmul(s, "schedule_dense_cpu", Y, p);
	ts_matmul_cpu_params d = p ? *p : default_for(C, false);
	TS_TRY(no_k_chunks(s, "schedule_dense_cpu", Y, &d));
	TS_TRY(matmul_prologue(s, "schedule_dense_cpu", C, &d));
	TS_TRY(sch_fuse_epilogue(s, chain, n, C));
	ts_stage *sy = ts_stage_of(s, Y);
	ts_axis *f;
	TS_TRY(tile_output(s, sy, C, &d, &f));
	return schedule_accumulator(ts_stage_of(s, C), sy, f, &d, C);
}

ts_status ts_schedule_batch_matmul_cpu(ts_schedule *s, ts_tensor *Y, const ts_matmul_cpu_params *p)
{
	const char *what = "schedule_batch_matmul_cpu";
	TS_TRY(sch_need(s, Y, what));
	ts_tensor *chain[TS_MAX_EPILOGUE], *C;
	int n;
	TS_TRY(sch_epilogue_of(s, what, &sch_bmm_root, Y, chain, &n, &C));
	ts_matmul_cpu_params d = p ? *p
				   : C->dim_var[2] ? ts_matmul_cpu_default()
						   : ts_matmul_cpu_default_for(C->shape[2]);
	TS_TRY(block_params(s, what, &d));
	TS_TRY(no_k_chunks(s, what, Y, &d));
	/* no idle accumulators past the rows or the columns */
	if (d.mr > C->shape[1])
		d.mr = C->shape[1];
	if (d.nr > C->shape[2])
		d.nr = C->shape[2];
	ts_tensor *acc = sch_block_accumulator(s, Y, chain, n, C);
	if (!acc)
		return ts_last_status(s->ctx);
	ts_stage *sy = ts_stage_of(s, Y), *sc = ts_stage_of(s, acc);
	/* batches and mr x nr tiles in one loop: each tile reads a panel of
	 * A's rows and B's columns of its batch */
	ts_axis *mo, *no, *mi, *ni, *f, *ko, *ki;
	TS_TRY(ts_tile(sy, ts_axis_of(sy, 1), ts_axis_of(sy, 2), d.mr, d.nr, &mo, &no, &mi, &ni));
	TS_TRY(ts_fuse(sy, ts_axis_of(sy, 0), mo, &f));
	TS_TRY(ts_fuse(sy, f, no, &f));
	TS_TRY(ts_vectorize(sy, ni));
	if (d.parallel)
		TS_TRY(ts_parallel(sy, f));
	TS_TRY(ts_compute_at(sc, sy, f));
	ts_axis *mc = ts_axis_of(sc, 1), *nc = ts_axis_of(sc, 2);
	TS_TRY(ts_split(sc, ts_reduce_axis_of(sc, 0), d.kunroll, &ko, &ki));
	TS_TRY(ts_reorder(sc, TS_AXES(ts_axis_of(sc, 0), ko, ki, mc, nc)));
	TS_TRY(ts_unroll(sc, ki));
	TS_TRY(ts_unroll(sc, mc));
	return ts_vectorize(sc, nc);
}

int ts_cpu_vector_lanes(void)
{
	return host_has_avx512() ? 16 : 8;
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
		TS_TRY(ts_fuse(st, *row, ts_axis_of(st, i), row));
	if (*row && parallel)
		TS_TRY(ts_parallel(st, *row));
	if (inner->extent < lanes)
		return TS_OK;
	TS_TRY(ts_split_tail(st, inner, lanes, TS_TAIL_PARTITION, &io, &ii));
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
	TS_TRY(ts_split(st, ts_reduce_axis_of(st, 0), lanes, &ko, &ki));
	ts_tensor *rf = ts_rfactor(s, t, ki, t->ndim);
	ts_stage *sr = rf ? ts_stage_of(s, rf) : NULL;
	if (!sr)
		return ts_last_status(s->ctx);
	ts_axis *lead = ts_axis_of(sr, 0), *lane = ts_axis_of(sr, t->ndim);
	for (int i = 1; i < t->ndim; i++)
		TS_TRY(ts_fuse(sr, lead, ts_axis_of(sr, i), &lead));
	TS_TRY(ts_reorder(sr, TS_AXES(lead, ts_reduce_axis_of(sr, 0), lane)));
	TS_TRY(ts_vectorize(sr, lane));
	return row ? ts_compute_at(sr, sy, row) : TS_OK;
}

ts_status ts_schedule_softmax_cpu(ts_schedule *s, ts_tensor *Y, int lanes)
{
	const char *what = "schedule_softmax_cpu", *op = "a softmax (ts_op_softmax)";
	TS_TRY(sch_need(s, Y, what));
	TS_TRY(check_lanes(s, what, lanes));
	ts_stage *sy = ts_stage_of(s, Y);
	if (!sy)
		return ts_last_status(s->ctx);
	ts_stage *sm = row_stage(s, Y, what, op, "softmax_max");
	ts_stage *se = sm ? row_stage(s, Y, what, op, "softmax_exp") : NULL;
	ts_stage *ss = se ? row_stage(s, Y, what, op, "softmax_sum") : NULL;
	if (!ss)
		return ts_last_status(s->ctx);
	const ts_stage *mine[] = {sy, sm, se, ss};
	TS_TRY(stages_untouched(s, what, 4, mine));
	ts_axis *row, *erow;
	TS_TRY(row_loops(sy, lanes, true, &row));
	TS_TRY(row_loops(se, lanes, false, &erow));
	if (!row) /* 1-D: one row, every stage at root */
		return TS_OK;
	/* max, exp and sum per row of the output: the row's exponentials stay
	 * in cache between the sum and the division */
	TS_TRY(ts_compute_at(sm, sy, row));
	TS_TRY(ts_compute_at(se, sy, row));
	TS_TRY(ts_compute_at(ss, sy, row));
	TS_TRY(row_rfactor(s, sm, sy, row, lanes));
	return row_rfactor(s, ss, sy, row, lanes);
}

ts_status ts_schedule_layer_norm_cpu(ts_schedule *s, ts_tensor *Y, int lanes)
{
	const char *what = "schedule_layer_norm_cpu", *op = "a layer norm (ts_op_layer_norm)";
	TS_TRY(sch_need(s, Y, what));
	TS_TRY(check_lanes(s, what, lanes));
	ts_stage *sy = ts_stage_of(s, Y);
	if (!sy)
		return ts_last_status(s->ctx);
	ts_stage *sm = row_stage(s, Y, what, op, "layer_norm_mean");
	ts_stage *sv = sm ? row_stage(s, Y, what, op, "layer_norm_var") : NULL;
	if (!sv)
		return ts_last_status(s->ctx);
	const ts_stage *mine[] = {sy, sm, sv};
	TS_TRY(stages_untouched(s, what, 3, mine));
	ts_axis *row;
	TS_TRY(row_loops(sy, lanes, true, &row));
	/* the mean and the variance per row of the output: the row stays in
	 * cache across its three passes */
	if (row) {
		TS_TRY(ts_compute_at(sm, sy, row));
		TS_TRY(ts_compute_at(sv, sy, row));
	}
	TS_TRY(row_rfactor(s, sm, sy, row, lanes));
	return row_rfactor(s, sv, sy, row, lanes);
}
