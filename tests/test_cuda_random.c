/*
 * test_cuda_random.c - random small computes under random GPU schedules,
 * built for "cuda" and run on the host CUDA emulator (tests/cuda_emu),
 * against the reference evaluator.
 *
 * A case is a seed.  The compute is one of four, over extents 1..70 that
 * the split factors often do not divide, each reading an elementwise
 * producer P = A + 1: a matmul C[i, j] = sum_k P[i, k] B[k, j]; an
 * elementwise C[i, j] = P[i, j] B[j] + D[i] (broadcasts both ways); a row
 * sum C[i] = sum_k P[i, k] (both sums sometimes a max instead); a windowed
 * sum C[i, j] = sum_{r, s} P[i + r, j + s] W[r, s] (a convolution's halo).
 * The schedule is what GPU users of TVM write: C's data axes split (tails
 * guarded or partitioned) into block, thread and per-thread parts, or
 * fused and split, reordered and bound to blockIdx.x/y/z and
 * threadIdx.x/y/z (sometimes to blocks only, or threads only); the inner
 * parts unrolled or vectorized; the reduction accumulated in registers
 * (cache_write local, computed at C's thread loop) or in shared memory,
 * and split into steps; inputs staged in shared memory (cache_read,
 * computed at a step, at a block loop or at any loop of C, fetched
 * cooperatively by the block's threads or by threads of their own,
 * sometimes vectorized, double-buffered or storage-aligned) and from
 * there into registers; the reduction of a row sum or a matmul factored
 * by rfactor across threads (the partial sums in shared memory, the part
 * on threadIdx.x) or in registers; P inlined, computed at a loop of its
 * reader (in registers, or in shared memory by the threads), a kernel of
 * its own, or at root; and a few random splits, reorders, fuses and
 * unrolls on top.
 *
 * A primitive that refuses is skipped; ts_lower or ts_build refusing the
 * schedule with an error counts as a refusal, and most cases must run.
 * Anything else is a failure: NVRTC (here the host compiler) rejecting the
 * emitted CUDA C, a launch that fails (a divergent barrier, unknown PTX),
 * an element that differs, or a crash.  A failure prints the seed, the
 * steps of the schedule (refused ones marked), ts_schedule_str, and the
 * element.  A case the generator finds wrong is to be kept as a fixed
 * case in a tcase of its own, as test_backends_random keeps its found
 * ones (none yet: 2,500 seeds, 1,000 of them under AddressSanitizer, all
 * matched).
 *
 * TESSERA_CUDA_RANDOM_SEEDS=first:count runs other seeds (reporting every
 * failure before failing); TESSERA_CUDA_RANDOM_VERBOSE=1 prints how many
 * cases ran and why the others were refused (=2: each seed as it starts,
 * so that a crash can be traced to it; =3: and its steps; =4: and the
 * CUDA C built).
 */
#include "testutil.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_test.h"
#include "lower.h"

/* ---- the case ------------------------------------------------------------------- */

typedef enum kind { K_MATMUL, K_BCAST, K_ROWSUM, K_CONV } kind;
static const char *const kind_name[] = {"matmul", "broadcast", "rowsum", "window"};

#define LOG_SIZE 8192

typedef struct gen {
	uint64_t s;
	ts_ctx *ctx;
	ts_schedule *sch;
	kind k;
	int64_t M, N, K, R, S;
	ts_tensor *A, *P, *B, *D, *C; /* B: the matmul's B, the broadcast's row, the window */
	int nargs;
	ts_tensor *args[4];
	char log[LOG_SIZE];
	size_t nlog;
	/* C's loops: the innermost bound to a block index and to a thread
	 * index, a serial step of the reduction (NULL where none), and the
	 * threads bound per index (0: unused) */
	ts_stage *sc, *sl, *reader; /* C, its register cache (or NULL), P's reader */
	ts_axis *block_ax, *thread_ax, *step_ax;
	ts_stage *step_st;
	int64_t threads[3];
	bool unbound_blocks, unbound_threads; /* C's loops left off blocks or threads */
} gen;

static int pick(gen *g, int n)
{
	g->s = g->s * 6364136223846793005ull + 1442695040888963407ull;
	return (int)((uint32_t)(g->s >> 33) % (uint32_t)n);
}

/* A thread count: mostly a power of two, sometimes any. */
static int64_t pick_threads(gen *g, int64_t max)
{
	int64_t t = pick(g, 3) ? (int64_t)1 << pick(g, 6) : 1 + pick(g, 24);
	return t < max ? t : max;
}

static void logf_(gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(gen *g, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (g->nlog < LOG_SIZE) {
		int n = vsnprintf(g->log + g->nlog, LOG_SIZE - g->nlog, fmt, ap);
		g->nlog += n > 0 ? (size_t)n : 0;
		if (g->nlog > LOG_SIZE)
			g->nlog = LOG_SIZE;
	}
	va_end(ap);
}

/* Logs a primitive and whether it was refused; true when it was taken. */
static bool did(gen *g, ts_status st, const char *what)
{
	if (st == TS_OK) {
		logf_(g, "  %s\n", what);
		return true;
	}
	logf_(g, "  %s  -- refused: %s\n", what, ts_last_error(g->ctx));
	ts_clear_error(g->ctx);
	return false;
}

static const char *an(const ts_axis *a)
{
	return a ? a->name : "(none)";
}

/* ---- logged primitives ---------------------------------------------------------- */

/* A split by factor f (by nparts f with nparts), its tail guarded or, one
 * time in six, partitioned into a nest of its own. */
static bool split(gen *g, ts_stage *st, ts_axis *a, int64_t f, bool nparts, ts_axis **o, ts_axis **i)
{
	*o = *i = NULL;
	if (!a)
		return false;
	bool part = !nparts && pick(g, 6) == 0;
	char w[256];
	snprintf(w, sizeof w, "%s(%s, %s, %lld%s)", nparts ? "split_nparts" : "split", st->name, a->name,
		 (long long)f, part ? ", partition" : "");
	ts_status r = nparts ? ts_split_nparts(st, a, f, o, i)
			     : ts_split_tail(st, a, f, part ? TS_TAIL_PARTITION : TS_TAIL_GUARD, o, i);
	if (did(g, r, w))
		return true;
	*o = *i = NULL;
	return false;
}

static ts_axis *fuse(gen *g, ts_stage *st, ts_axis *a, ts_axis *b)
{
	ts_axis *f = NULL;
	if (!a || !b)
		return a ? a : b;
	char w[256];
	snprintf(w, sizeof w, "fuse(%s, %s, %s)", st->name, a->name, b->name);
	return did(g, ts_fuse(st, a, b, &f), w) ? f : NULL;
}

static void reorder(gen *g, ts_stage *st, int n, ts_axis *const *axes)
{
	ts_axis *order[16];
	int m = 0;
	char w[512];
	int len = snprintf(w, sizeof w, "reorder(%s", st->name);
	for (int i = 0; i < n; i++)
		if (axes[i] && m < 16) {
			order[m++] = axes[i];
			len += snprintf(w + len, sizeof w - (size_t)len, ", %s", axes[i]->name);
		}
	snprintf(w + len, sizeof w - (size_t)len, ")");
	if (m > 1)
		did(g, ts_reorder(st, m, order), w);
}
#define REORDER(g, st, ...) reorder((g), (st), TS_AXES(__VA_ARGS__))

static const char *const tag_name[] = {"", "blockIdx.x", "blockIdx.y", "blockIdx.z",
				       "threadIdx.x", "threadIdx.y", "threadIdx.z"};

static bool bind(gen *g, ts_stage *st, ts_axis *a, ts_thread_tag t)
{
	if (!a)
		return false;
	char w[256];
	snprintf(w, sizeof w, "bind(%s, %s, %s)", st->name, a->name, tag_name[t]);
	return did(g, ts_bind(st, a, t), w);
}

typedef enum ann { ANN_UNROLL, ANN_VECTORIZE } ann;

static void annotate(gen *g, ts_stage *st, ts_axis *a, ann how)
{
	if (!a)
		return;
	char w[256];
	snprintf(w, sizeof w, "%s(%s, %s)", how == ANN_UNROLL ? "unroll" : "vectorize", st->name, a->name);
	did(g, how == ANN_UNROLL ? ts_unroll(st, a) : ts_vectorize(st, a), w);
}

static bool compute_at(gen *g, ts_stage *st, ts_stage *at, ts_axis *a)
{
	if (!a || !at)
		return false;
	char w[256];
	snprintf(w, sizeof w, "compute_at(%s, %s, %s)", st->name, at->name, a->name);
	return did(g, ts_compute_at(st, at, a), w);
}

static void inline_(gen *g, ts_stage *st)
{
	char w[256];
	snprintf(w, sizeof w, "compute_inline(%s)", st->name);
	did(g, ts_compute_inline(st), w);
}

static void set_scope(gen *g, ts_stage *st, ts_scope sc)
{
	char w[256];
	snprintf(w, sizeof w, "set_scope(%s, %s)", st->name, sc == TS_SCOPE_SHARED ? "shared" : "local");
	did(g, ts_set_scope(st, sc), w);
}

static ts_stage *cache_read(gen *g, ts_tensor *t, ts_scope sc, ts_tensor *reader)
{
	ts_tensor *c = ts_cache_read(g->sch, t, sc, 1, &reader);
	char w[256];
	snprintf(w, sizeof w, "cache_read(%s, %s, [%s])", t->name, sc == TS_SCOPE_SHARED ? "shared" : "local",
		 reader->name);
	return did(g, c ? TS_OK : ts_last_status(g->ctx), w) ? ts_stage_of(g->sch, c) : NULL;
}

/* ---- the computes --------------------------------------------------------------- */

static ts_expr *reduce(ts_ctx *ctx, bool max, ts_expr *src, ts_iter *k)
{
	return max ? TS_MAX(ctx, src, k) : TS_SUM(ctx, src, k);
}

static bool build_compute(gen *g)
{
	ts_ctx *ctx = g->ctx;
	g->k = (kind)pick(g, 4);
	g->M = 1 + pick(g, 70);
	/* half the time multiples of 4, so that float2/float4 accesses stay aligned */
	g->N = pick(g, 2) ? 1 + pick(g, 70) : 4 * (1 + pick(g, 17));
	g->K = pick(g, 2) ? 1 + pick(g, 70) : 4 * (1 + pick(g, 17));
	bool max = pick(g, 4) == 0; /* a max reduction instead of the sum */
	g->R = 1 + pick(g, 4);
	g->S = 1 + pick(g, 4);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j"), *pi = ts_var(ctx, "pi"), *pk = ts_var(ctx, "pk");
	int64_t pm = g->M, pn = g->k == K_BCAST ? g->N : g->K;
	if (g->k == K_CONV)
		pm = g->M + g->R - 1, pn = g->N + g->S - 1;
	g->A = ts_placeholder(ctx, "A", TS_SHAPE(pm, pn), ts_float32);
	g->P = ts_compute(ctx, "P", TS_SHAPE(pm, pn), TS_VARS(pi, pk),
			  ts_add(ctx, TS_READ(ctx, g->A, pi, pk), ts_float(ctx, 1)));
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, g->K);
	ts_iter *r = ts_reduce_axis(ctx, "r", 0, g->R), *s = ts_reduce_axis(ctx, "s", 0, g->S);
	g->nargs = 0;
	g->args[g->nargs++] = g->A;
	switch (g->k) {
	case K_MATMUL:
		g->B = ts_placeholder(ctx, "B", TS_SHAPE(g->K, g->N), ts_float32);
		g->C = ts_compute(ctx, "C", TS_SHAPE(g->M, g->N), TS_VARS(i, j),
				  reduce(ctx, max, ts_mul(ctx, TS_READ(ctx, g->P, i, k->var), TS_READ(ctx, g->B, k->var, j)),
					 k));
		g->args[g->nargs++] = g->B;
		break;
	case K_BCAST:
		g->B = ts_placeholder(ctx, "B", TS_SHAPE(g->N), ts_float32);
		g->D = ts_placeholder(ctx, "D", TS_SHAPE(g->M), ts_float32);
		g->C = ts_compute(ctx, "C", TS_SHAPE(g->M, g->N), TS_VARS(i, j),
				  ts_add(ctx, ts_mul(ctx, TS_READ(ctx, g->P, i, j), TS_READ(ctx, g->B, j)),
					 TS_READ(ctx, g->D, i)));
		g->args[g->nargs++] = g->B;
		g->args[g->nargs++] = g->D;
		break;
	case K_ROWSUM:
		g->C = ts_compute(ctx, "C", TS_SHAPE(g->M), TS_VARS(i),
				  reduce(ctx, max, TS_READ(ctx, g->P, i, k->var), k));
		break;
	case K_CONV:
		g->B = ts_placeholder(ctx, "W", TS_SHAPE(g->R, g->S), ts_float32);
		g->C = ts_compute(ctx, "C", TS_SHAPE(g->M, g->N), TS_VARS(i, j),
				  TS_SUM(ctx, ts_mul(ctx, TS_READ(ctx, g->P, ts_add(ctx, i, r->var), ts_add(ctx, j, s->var)),
						     TS_READ(ctx, g->B, r->var, s->var)),
					 r, s));
		g->args[g->nargs++] = g->B;
		break;
	}
	if (!g->C)
		return false;
	g->args[g->nargs++] = g->C;
	g->sch = ts_create_schedule(ctx, 1, &g->C);
	return g->sch != NULL;
}

/* ---- the schedule --------------------------------------------------------------- */

/* Two distinct tags of blocks (b) and of threads (t), in a random order. */
static void pick_tags(gen *g, ts_thread_tag b[2], ts_thread_tag t[2])
{
	static const int perm[6][2] = {{0, 1}, {1, 0}, {0, 2}, {2, 0}, {1, 2}, {2, 1}};
	const int *p = perm[pick(g, 6)], *q = perm[pick(g, 6)];
	if (pick(g, 2))
		p = perm[1], q = perm[1]; /* the usual: rows on y, columns on x */
	b[0] = (ts_thread_tag)(TS_BLOCK_X + p[0]);
	b[1] = (ts_thread_tag)(TS_BLOCK_X + p[1]);
	t[0] = (ts_thread_tag)(TS_THREAD_X + q[0]);
	t[1] = (ts_thread_tag)(TS_THREAD_X + q[1]);
}

static void bind_thread(gen *g, ts_stage *st, ts_axis *a, ts_thread_tag t)
{
	if (a && !g->unbound_threads && bind(g, st, a, t)) {
		g->thread_ax = a;
		int64_t *n = &g->threads[t - TS_THREAD_X];
		*n = a->extent > *n ? a->extent : *n;
	}
}

static void bind_block(gen *g, ts_stage *st, ts_axis *a, ts_thread_tag t)
{
	if (a && !g->unbound_blocks && bind(g, st, a, t))
		g->block_ax = a;
}

/* The inner (per-thread) loops of C: unrolled, vectorized or left. */
static void annotate_inner(gen *g, ts_stage *st, ts_axis *a)
{
	switch (a ? pick(g, 4) : 3) {
	case 0: annotate(g, st, a, ANN_UNROLL); break;
	case 1: annotate(g, st, a, ANN_VECTORIZE); break;
	default: break;
	}
}

/* One data axis of C split into a block part, a thread part of t threads
 * and a per-thread part of v (each NULL where the split was not made). */
static void split3(gen *g, ts_stage *st, ts_axis *a, int64_t t, int64_t v, ts_axis **bo, ts_axis **to,
		   ts_axis **in)
{
	ts_axis *rest = NULL;
	*bo = *to = *in = NULL;
	if (!split(g, st, a, t * v, false, bo, &rest))
		return;
	if (v > 1 && split(g, st, rest, v, false, to, in))
		return;
	*to = rest;
}

/* C's reduction axes moved (some split into steps) between its thread
 * loops and the per-thread loops, or left innermost. */
static void place_reduction(gen *g, ts_stage *st, ts_axis *in0, ts_axis *in1)
{
	int nr = 0;
	ts_axis *red[2] = {NULL, NULL}, *ko = NULL, *ki = NULL;
	for (int i = 0; i < st->nroot; i++)
		if (st->root[i]->kind == TS_ITER_REDUCE && nr < 2)
			red[nr++] = st->root[i];
	if (!nr)
		return;
	if (pick(g, 2) && split(g, st, red[0], 1 + pick(g, 12), false, &ko, &ki)) {
		g->step_ax = ko;
		g->step_st = st;
		if (pick(g, 2))
			annotate(g, st, ki, ANN_UNROLL);
		REORDER(g, st, ko, in0, in1, ki, red[1]);
	} else if (pick(g, 2)) {
		REORDER(g, st, red[0], red[1], in0, in1);
		g->step_ax = red[0];
		g->step_st = st;
	}
}

/* C's data axes over blocks and threads, in one of three patterns. */
static void schedule_output(gen *g, ts_stage *sc, bool reduce_here)
{
	ts_thread_tag bt[2], tt[2];
	pick_tags(g, bt, tt);
	ts_axis *d0 = ts_axis_of(sc, 0), *d1 = g->C->ndim > 1 ? ts_axis_of(sc, 1) : NULL;
	ts_axis *bo0, *to0, *in0, *bo1 = NULL, *to1 = NULL, *in1 = NULL;
	int pattern = d1 ? pick(g, 4) : 3;
	/* sometimes one block (its loops serial) or one thread per block
	 * (the fetches bound to threads of their own) */
	g->unbound_blocks = pick(g, 12) == 0;
	g->unbound_threads = !g->unbound_blocks && pick(g, 8) == 0;
	if (pattern <= 1) { /* a 2-D tile per block, a 2-D block of threads */
		split3(g, sc, d0, pick_threads(g, 16), pick(g, 2) ? 1 : 1 + pick(g, 4), &bo0, &to0, &in0);
		split3(g, sc, d1, pick_threads(g, 32), pick(g, 2) ? 1 : 1 + pick(g, 4), &bo1, &to1, &in1);
		if (pattern == 0)
			REORDER(g, sc, bo0, bo1, to0, to1, in0, in1);
		else /* the per-thread loops between the block and thread loops */
			REORDER(g, sc, bo0, bo1, in0, in1, to0, to1);
		bind_block(g, sc, bo0, bt[0]);
		bind_block(g, sc, bo1, bt[1]);
		bind_thread(g, sc, to0, tt[0]);
		bind_thread(g, sc, to1, tt[1]);
	} else if (pattern == 2) { /* the axes fused, one index of each */
		ts_axis *f = fuse(g, sc, d0, d1), *v = NULL;
		if (pick(g, 3) == 0 && split(g, sc, f, 1 + pick(g, 4), false, &f, &v))
			in0 = v;
		else
			in0 = NULL;
		split(g, sc, f, pick_threads(g, 256), pick(g, 4) == 0, &bo0, &to0);
		REORDER(g, sc, bo0, to0, in0);
		bind_block(g, sc, bo0, TS_BLOCK_X);
		bind_thread(g, sc, to0, tt[0]);
	} else { /* rows on blocks (or split), columns (or rows) on threads */
		ts_axis *outer = NULL;
		if (d1) {
			bo0 = d0;
			split(g, sc, d1, pick_threads(g, 128), false, &outer, &to0);
			in0 = outer;
		} else {
			split3(g, sc, d0, pick_threads(g, 128), pick(g, 3) ? 1 : 1 + pick(g, 3), &bo0, &to0, &in0);
		}
		REORDER(g, sc, bo0, to0, in0);
		bind_block(g, sc, bo0, bt[0]);
		bind_thread(g, sc, to0, tt[0]);
	}
	g->unbound_blocks = g->unbound_threads = false;
	annotate_inner(g, sc, in0);
	annotate_inner(g, sc, in1);
	if (reduce_here)
		place_reduction(g, sc, in0, in1);
}

/* The register cache of C's reduction at C's innermost thread loop (or
 * a loop inside it), its reduction split into steps outside its data
 * loops, which are unrolled. */
static void schedule_cache_write(gen *g, ts_stage *sl)
{
	ts_stage *sc = g->sc;
	ts_axis *at = g->thread_ax;
	if (at && pick(g, 4) == 0) { /* sometimes a loop further in */
		int i = 0;
		while (i < sc->nleaf && sc->leaf[i] != at)
			i++;
		if (i + 1 < sc->nleaf)
			at = sc->leaf[i + 1 + pick(g, sc->nleaf - i - 1)];
	}
	if (!compute_at(g, sl, sc, at ? at : g->block_ax))
		return;
	ts_axis *red = ts_reduce_axis_of(sl, 0), *red2 = g->k == K_CONV ? ts_reduce_axis_of(sl, 1) : NULL;
	ts_axis *d0 = ts_axis_of(sl, 0), *d1 = g->C->ndim > 1 ? ts_axis_of(sl, 1) : NULL, *ko, *ki;
	if (split(g, sl, red, 1 + pick(g, 16), false, &ko, &ki)) {
		REORDER(g, sl, ko, ki, red2, d0, d1);
		g->step_ax = ko;
	} else {
		REORDER(g, sl, red, red2, d0, d1);
		g->step_ax = red;
	}
	g->step_st = sl;
	if (pick(g, 3))
		annotate(g, sl, d0, ANN_UNROLL);
	if (pick(g, 3))
		annotate(g, sl, d1, pick(g, 3) ? ANN_UNROLL : ANN_VECTORIZE);
}

/* A stage computed at a loop of C by the block's threads together: its
 * axes fused and spread over the threads C binds (or over threadIdx.x,
 * or over each axis), sometimes a vectorized run per thread. */
static void cooperative(gen *g, ts_stage *st)
{
	int64_t tx = g->threads[0] ? g->threads[0] : 1, ty = g->threads[1] ? g->threads[1] : 1;
	if (tx * ty == 1 && !g->threads[2])
		tx = pick_threads(g, 64);
	ts_axis *f = ts_axis_of(st, 0), *v = NULL, *o, *t, *o2, *t2;
	switch (pick(g, 5)) {
	case 0: /* each axis on a thread index */
		if (st->tensor->ndim > 1) {
			split(g, st, ts_axis_of(st, 1), tx, false, &o, &t);
			bind(g, st, t, TS_THREAD_X);
			split(g, st, f, ty, false, &o2, &t2);
			REORDER(g, st, o2, o, t2, t);
			bind(g, st, t2, TS_THREAD_Y);
		} else {
			split(g, st, f, tx, false, &o, &t);
			bind(g, st, t, TS_THREAD_X);
		}
		return;
	case 1: /* no threads: every thread computes it (thread 0 stores) */
		return;
	default:
		break;
	}
	for (int i = 1; i < st->tensor->ndim; i++)
		f = fuse(g, st, f, ts_axis_of(st, i));
	if (pick(g, 3) == 0 && split(g, st, f, (int64_t)1 << pick(g, 3), false, &f, &v))
		annotate(g, st, v, ANN_VECTORIZE);
	if (pick(g, 4) == 0) { /* a thread count of its own, on any index */
		split(g, st, f, pick_threads(g, 256), false, &o, &t);
		bind(g, st, t, (ts_thread_tag)(TS_THREAD_X + (pick(g, 2) ? 0 : pick(g, 3))));
		return;
	}
	split(g, st, f, tx * ty, false, &o, &t);
	split(g, st, t, tx, false, &o2, &t2);
	if (ty > 1)
		bind(g, st, o2, TS_THREAD_Y);
	bind(g, st, t2, TS_THREAD_X);
}

/* Input t of the reduction (or elementwise) stage staged in shared memory,
 * computed at a step of the reduction or at C's block loop; sometimes
 * storage-aligned, double-buffered, or read from there through registers. */
static void shared_fetch(gen *g, ts_tensor *t, ts_tensor *reader)
{
	ts_stage *ss = cache_read(g, t, TS_SCOPE_SHARED, reader);
	if (!ss)
		return;
	bool at_step = g->step_ax && pick(g, 3);
	ts_stage *at = at_step ? g->step_st : g->sc;
	ts_axis *ax = at_step ? g->step_ax : g->block_ax;
	if (!at_step && pick(g, 4) == 0) /* any loop of C: outer blocks, threads, inner loops */
		ax = g->sc->leaf[pick(g, g->sc->nleaf)];
	if (!compute_at(g, ss, at, ax))
		return;
	cooperative(g, ss);
	if (ss->tensor->ndim > 1 && pick(g, 4) == 0) {
		int64_t f = 1 + pick(g, 33), off = pick(g, (int)f);
		char w[256];
		snprintf(w, sizeof w, "storage_align(%s, 0, %lld, %lld)", ss->name, (long long)f, (long long)off);
		did(g, ts_storage_align(ss, 0, f, off), w);
	}
	if (at_step && pick(g, 3) == 0) {
		char w[256];
		snprintf(w, sizeof w, "double_buffer(%s)", ss->name);
		did(g, ts_double_buffer(ss), w);
	}
	if (g->sl && reader == g->sl->tensor && pick(g, 5) == 0) {
		/* TVM's AL = cache_read(AS, "local", [CL]) at the inner step */
		ts_stage *rl = cache_read(g, ss->tensor, TS_SCOPE_LOCAL, reader);
		if (rl)
			compute_at(g, rl, g->sl, g->sl->leaf[pick(g, g->sl->nleaf)]);
	}
}

/* Where P is computed, when no fetch took it. */
static void place_producer(gen *g, ts_stage *sp)
{
	ts_stage *rd = g->reader;
	ts_axis *f, *o, *t;
	switch (pick(g, 9)) {
	case 0: /* in registers at a random loop of its reader */
		compute_at(g, sp, rd, rd->leaf[pick(g, rd->nleaf)]);
		break;
	case 1: /* in shared memory at C's block loop or a step, by the threads */
		set_scope(g, sp, TS_SCOPE_SHARED);
		if (g->step_ax && pick(g, 2) ? compute_at(g, sp, g->step_st, g->step_ax)
					     : compute_at(g, sp, g->sc, g->block_ax))
			cooperative(g, sp);
		break;
	case 4: /* in shared or local memory at C's thread loop (the same region in every thread) */
		if (pick(g, 2))
			set_scope(g, sp, TS_SCOPE_SHARED);
		/* bound to threads, a register stage would leave its copies part-computed: refused */
		if (compute_at(g, sp, g->sc, g->thread_ax) && pick(g, 3) == 0)
			cooperative(g, sp);
		break;
	case 2: /* a kernel of its own */
		f = fuse(g, sp, ts_axis_of(sp, 0), ts_axis_of(sp, 1));
		split(g, sp, f, pick_threads(g, 256), false, &o, &t);
		bind(g, sp, o, TS_BLOCK_X);
		bind(g, sp, t, TS_THREAD_X);
		break;
	case 3:
		if (pick(g, 4) == 0) /* at root, every thread computing all of it */
			break;
		/* fall through */
	default:
		inline_(g, sp);
		break;
	}
}

/* The reduction factored over a part of k (TVM's cross-thread reduction):
 * the partial sums in shared memory, one per (row, column, part) thread,
 * the part on threadIdx.x, then added by C's threads; or in each
 * thread's registers at C's thread loop. */
static bool schedule_rfactor(gen *g)
{
	ts_stage *sc = g->sc;
	int nd = g->C->ndim;
	ts_axis *ko, *ki, *bo[2] = {NULL, NULL}, *to[2] = {NULL, NULL};
	if (!split(g, sc, ts_reduce_axis_of(sc, 0), pick_threads(g, nd > 1 ? 16 : 64), pick(g, 4) == 0, &ko,
		   &ki))
		return false;
	bool inner = pick(g, 2);
	ts_tensor *rf = ts_rfactor(g->sch, g->C, inner ? ki : ko, nd);
	char w[256];
	snprintf(w, sizeof w, "rfactor(C, %s, %d)", an(inner ? ki : ko), nd);
	if (!did(g, rf ? TS_OK : ts_last_status(g->ctx), w))
		return false;
	ts_stage *sr = ts_stage_of(g->sch, rf);
	/* C's rows (and columns) on threadIdx.y/z; the parts on x */
	ts_thread_tag tags[2] = {nd > 1 ? TS_THREAD_Z : pick(g, 2) ? TS_THREAD_Y : TS_THREAD_Z, TS_THREAD_Y};
	for (int d = 0; d < nd; d++)
		split(g, sc, ts_axis_of(sc, d), pick_threads(g, 8), false, &bo[d], &to[d]);
	REORDER(g, sc, bo[0], bo[1], to[0], to[1]);
	for (int d = 0; d < nd; d++) {
		bind_block(g, sc, bo[d], (ts_thread_tag)(TS_BLOCK_X + nd - 1 - d));
		bind_thread(g, sc, to[d], tags[d]);
	}
	if (pick(g, 3)) {
		set_scope(g, sr, TS_SCOPE_SHARED);
		if (compute_at(g, sr, sc, g->block_ax)) {
			for (int d = 0; d < nd; d++)
				bind(g, sr, ts_axis_of(sr, d), tags[d]);
			bind(g, sr, ts_axis_of(sr, nd), TS_THREAD_X);
		}
	} else {
		set_scope(g, sr, TS_SCOPE_LOCAL);
		if (compute_at(g, sr, sc, g->thread_ax)) {
			REORDER(g, sr, ts_reduce_axis_of(sr, 0), ts_axis_of(sr, nd));
			if (pick(g, 2))
				annotate(g, sr, ts_axis_of(sr, nd), ANN_UNROLL);
		}
	}
	g->reader = sr;
	return true;
}

/* A few random primitives on loops of st that are not bound: splits,
 * reorders, fuses of neighbours, unrolls. */
static void noise(gen *g, ts_stage *st)
{
	ts_axis *free_[32], *o, *i;
	int n = 0;
	for (int k = 0; k < st->nleaf && n < 32; k++)
		if (st->leaf[k]->loop == TS_FOR_SERIAL)
			free_[n++] = st->leaf[k];
	if (!n)
		return;
	ts_axis *a = free_[pick(g, n)], *b = free_[pick(g, n)];
	switch (pick(g, 4)) {
	case 0:
		split(g, st, a, 1 + pick(g, 8), pick(g, 4) == 0, &o, &i);
		break;
	case 1: /* bound loops too */
		b = st->leaf[pick(g, st->nleaf)];
		if (a != b)
			REORDER(g, st, a, b);
		break;
	case 2:
		for (int k = 0; k + 1 < st->nleaf; k++)
			if (st->leaf[k] == a && st->leaf[k + 1]->loop == TS_FOR_SERIAL &&
			    st->leaf[k + 1]->kind == a->kind) {
				fuse(g, st, a, st->leaf[k + 1]);
				break;
			}
		break;
	default:
		annotate(g, st, a, ANN_UNROLL);
		break;
	}
}

static void random_schedule(gen *g)
{
	ts_stage *sp = ts_stage_of(g->sch, g->P);
	g->sc = ts_stage_of(g->sch, g->C);
	bool reduce = g->k != K_BCAST;
	bool rfactor = (g->k == K_ROWSUM && pick(g, 3) == 0) || (g->k == K_MATMUL && pick(g, 6) == 0);
	bool shared_acc = false;
	if (reduce && !rfactor && pick(g, 3)) {
		shared_acc = pick(g, 6) == 0;
		ts_tensor *cl = ts_cache_write(g->sch, g->C, shared_acc ? TS_SCOPE_SHARED : TS_SCOPE_LOCAL);
		did(g, cl ? TS_OK : ts_last_status(g->ctx), shared_acc ? "cache_write(C, shared)"
								  : "cache_write(C, local)");
		g->sl = cl ? ts_stage_of(g->sch, cl) : NULL;
	}
	g->reader = g->sl ? g->sl : g->sc;
	if (!rfactor || !schedule_rfactor(g))
		schedule_output(g, g->sc, reduce && !g->sl);
	if (g->sl && shared_acc) {
		/* the block's sums in shared memory, by its threads or by one */
		if (compute_at(g, g->sl, g->sc, g->block_ax) && pick(g, 2))
			cooperative(g, g->sl);
	} else if (g->sl) {
		schedule_cache_write(g, g->sl);
	}
	/* the inputs of the stage that reads them, staged in shared memory */
	ts_tensor *rt = g->reader->tensor;
	int fetch_p = pick(g, 3); /* 0: P's copy (P inlined into it), 1: A's (read by P, inlined) */
	if (fetch_p == 0)
		shared_fetch(g, g->P, rt);
	else if (fetch_p == 1)
		shared_fetch(g, g->A, g->P);
	if (g->B && pick(g, 2))
		shared_fetch(g, g->B, rt);
	if (g->D && pick(g, 3) == 0)
		shared_fetch(g, g->D, rt);
	if (fetch_p == 1 || (fetch_p == 0 && pick(g, 3)))
		inline_(g, sp);
	else
		place_producer(g, sp);
	for (int n = pick(g, 3); n > 0; n--) {
		ts_stage *st = g->sch->stages[pick(g, g->sch->nstages)];
		if (st->attach != SCH_ATTACH_INLINE)
			noise(g, st);
	}
}

/* ---- running a case ------------------------------------------------------------- */

typedef enum outcome { RAN, REFUSED_LOWER, REFUSED_BUILD, FAILED } outcome;

static int failures;
static char first_failure[16384];
static struct {
	int built;
	int nrefusal;
	char refusal[64][96];
	int refusal_count[64];
} stats;

/* A refusal's message with its numbers and names blurred, for counting
 * alike ones together. */
static void count_refusal(const char *msg)
{
	char key[96];
	size_t n = 0;
	for (const char *p = msg; *p && *p != '\n' && n + 1 < sizeof key; p++)
		key[n++] = (*p >= '0' && *p <= '9') ? '#' : *p;
	key[n] = 0;
	if (n > 60)
		key[60] = 0;
	for (int i = 0; i < stats.nrefusal; i++)
		if (!strcmp(stats.refusal[i], key)) {
			stats.refusal_count[i]++;
			return;
		}
	if (stats.nrefusal < 64) {
		strcpy(stats.refusal[stats.nrefusal], key);
		stats.refusal_count[stats.nrefusal++] = 1;
	}
}

static void report(gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report(gen *g, const char *fmt, ...)
{
	char what[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	fprintf(f, "seed %llu: %s, M %lld N %lld K %lld R %lld S %lld: %s\nsteps:\n%s%s\n",
		(unsigned long long)g->s, kind_name[g->k], (long long)g->M, (long long)g->N, (long long)g->K,
		(long long)g->R, (long long)g->S, what, g->log, ts_schedule_str(g->sch));
	fclose(f);
	fprintf(stderr, "%s\n", text);
	if (!failures++)
		snprintf(first_failure, sizeof first_failure, "%s", text);
	free(text);
}

static int verbosity(void)
{
	const char *v = getenv("TESSERA_CUDA_RANDOM_VERBOSE");
	return v && *v ? atoi(v) : 0;
}

/* Builds f for "cuda" and runs it on device copies of data (the host
 * arrays, read back into them afterwards). */
static outcome run_cuda(gen *g, const ts_func *f, ts_array **data)
{
	ts_ctx *ctx = g->ctx;
	ts_module *m = ts_build(ctx, f, "cuda");
	if (!m) {
		const char *e = ts_last_error(ctx);
		if (strstr(e, "nvrtc") || strstr(e, "CUDA")) {
			report(g, "build failed: %s", e);
			return FAILED;
		}
		count_refusal(e);
		return REFUSED_BUILD;
	}
	stats.built++;
	if (verbosity() > 3)
		fprintf(stderr, "%s\n", ts_module_source(m, "cuda"));
	ts_status st = tu_cuda_run_module(ctx, m, f->nparams, data);
	if (st != TS_OK)
		report(g, "running failed: %s", ts_last_error(ctx));
	ts_module_free(m);
	return st == TS_OK ? RAN : FAILED;
}

/* Lowers, builds and runs the case's schedule and compares C with the
 * reference evaluator. */
static outcome run_case(gen *g)
{
	ts_ctx *ctx = g->ctx;
	ts_func *f = ts_lower(g->sch, "rnd", g->nargs, g->args);
	if (!f) {
		count_refusal(ts_last_error(ctx));
		return REFUSED_LOWER;
	}
	ts_array *got[4], *want[4];
	for (int i = 0; i < g->nargs; i++) {
		got[i] = ts_array_for(ctx, g->args[i]);
		want[i] = ts_array_for(ctx, g->args[i]);
		ck_assert(got[i] && want[i]);
		if (i + 1 < g->nargs)
			ts_array_fill_random(got[i], 1234 + (uint64_t)i, -1.0, 1.0);
		else
			ts_array_fill_random(got[i], 99, 1e6, 2e6); /* unwritten elements show */
		memcpy(want[i]->data, got[i]->data, ts_array_nbytes(got[i]));
	}
	outcome o = run_cuda(g, f, got);
	if (o == RAN) {
		void *wd[4];
		for (int i = 0; i < g->nargs; i++)
			wd[i] = want[i]->data;
		ck_assert_msg(ts_eval(ctx, g->nargs, g->args, wd) == TS_OK, "%s", ts_last_error(ctx));
		const float *gc = got[g->nargs - 1]->data, *wc = want[g->nargs - 1]->data;
		int64_t n = ts_tensor_numel(g->C);
		for (int64_t e = 0; e < n; e++) {
			double d = fabs((double)gc[e] - wc[e]);
			if (!(d <= 1e-3 + 1e-4 * fabs(wc[e]))) {
				report(g, "C[%lld] (row %lld) = %.9g, want %.9g", (long long)e,
				     (long long)(g->C->ndim > 1 ? e / g->N : e), gc[e], wc[e]);
				o = FAILED;
				break;
			}
		}
	}
	for (int i = 0; i < g->nargs; i++) {
		ts_array_free(got[i]);
		ts_array_free(want[i]);
	}
	return o;
}

static outcome run_seed(uint64_t seed)
{
	gen g;
	memset(&g, 0, sizeof g);
	g.s = seed;
	g.ctx = ts_ctx_new();
	ck_assert_msg(build_compute(&g), "seed %llu: %s", (unsigned long long)seed, ts_last_error(g.ctx));
	random_schedule(&g);
	g.s = seed; /* for the report */
	if (verbosity() > 2)
		fprintf(stderr, "seed %llu steps:\n%s", (unsigned long long)seed, g.log);
	outcome o = run_case(&g);
	ts_ctx_free(g.ctx);
	return o;
}

/* ---- suites --------------------------------------------------------------------- */

START_TEST(test_random_gpu_schedules)
{
	uint64_t first = 1, count = 64; /* about 30 s: each kernel is compiled by the host C++ compiler */
	tu_seed_range("TESSERA_CUDA_RANDOM_SEEDS", &first, &count);
	int verbose = verbosity(), n[4] = {0};
	failures = 0;
	memset(&stats, 0, sizeof stats);
	for (uint64_t seed = first; seed < first + count; seed++) {
		if (verbose > 1)
			fprintf(stderr, "seed %llu\n", (unsigned long long)seed);
		n[run_seed(seed)]++;
	}
	if (verbose) {
		fprintf(stderr, "cuda_random: seeds %llu..%llu: %d ran, %d refused (%d by ts_lower, %d by "
			"ts_build), %d failed\n", (unsigned long long)first, (unsigned long long)(first + count - 1),
			n[RAN], n[REFUSED_LOWER] + n[REFUSED_BUILD], n[REFUSED_LOWER], n[REFUSED_BUILD], n[FAILED]);
		for (int i = 0; i < stats.nrefusal; i++)
			fprintf(stderr, "  %5d  %s\n", stats.refusal_count[i], stats.refusal[i]);
	}
	ck_assert_msg(failures == 0, "%d failure(s), the first:\n%s", failures, first_failure);
	/* most cases must run, or the search tests little (about 80% do) */
	ck_assert_msg(stats.built * 3 >= (int)count * 2, "only %d of %llu cases built", stats.built,
		      (unsigned long long)count);
}
END_TEST

int main(void)
{
	cuda_emu_select();
	Suite *s = suite_create("cuda_random");
	TCase *tc = tcase_create("random");
	tcase_set_timeout(tc, 900);
	tcase_add_test(tc, test_random_gpu_schedules);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
