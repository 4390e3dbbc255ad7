/*
 * test_symbolic_random.c - random programs over symbolic extents
 * (ts_size_var) under random schedules, each lowered and compiled once and
 * run on several extents, must all give the reference evaluator's result.
 *
 * A program is one of: a 1-D map, a 2-D map (sometimes with a bias row or
 * reading the transpose of a square input), a row reduction (sum or max
 * over a symbolic or constant reduction axis), a producer-consumer pair
 * (the consumer maps P or reduces its rows), a chain P1 -> P2 -> C (P1 read
 * by both), a row statistic S read by every element of its row, a stencil
 * reading rows i and i + 1 of P (rows constant), and ts_op_matmul (either
 * operand transposed).  Each logical extent m, n, k is a constant or a size
 * variable (sometimes one variable for two extents; sometimes a huge bound,
 * 2^20..2^40, for int64 indices, in programs without temporaries).  The
 * schedule is a random sequence of splits (factor, nparts, either tail),
 * tiles, fuses, reorders, vectorize/unroll/parallel, and for reductions
 * sometimes a cache_write, a cache_read (matmul) or an rfactor; each
 * intermediate is inlined, left at root, or computed at a random loop of a
 * later stage, sometimes stored further out (store_at / store_root).  A
 * primitive that refuses leaves the schedule as it was and is skipped; a
 * lowering that refuses is counted, and its message must be one of the
 * documented refusals (refusal_ok).
 *
 * Every lowered program runs on NCASE extent tuples: every variable 1, every
 * variable at its bound, extents that the split factors do not divide, and
 * random ones.  Each runs through the LLVM JIT (1, 2 or 3 threads) and the
 * loop-IR interpreter (sizes buffer appended), one tuple also through a
 * ts_lower_specialize twin fixing a random set of the variables (the
 * interpreter, and for every fourth program the JIT), and arrays one past
 * a bound must be refused.  The arrays sit between guard zones that must be
 * intact after the call, and the output starts as NaN, so a write past the
 * array of the call's extent or an element left unwritten shows.  The
 * expected outputs come from the same program built again with the
 * constant extents of the call, through ts_eval.
 *
 * Two bugs this suite found, now fixed, keep tests of their own
 * (test_bug1_nparts_unrolled, test_bug2_fused_unrolled: a loop that keeps
 * the bound's extent while its parts step by run-time ones); random
 * schedules of those shapes are tagged "[the shape of known bug N]" when
 * they fail, and TS_SYMRAND_AVOID_KNOWN=1 leaves them out.
 *
 * A failing run prints the seed, the program, the schedule and the
 * extents.  Each test prints how many programs and runs it made and
 * asserts a floor, so the suite cannot silently test nothing.  Exploring:
 * TS_SYMRAND_TRIALS=n (programs per kind), TS_SYMRAND_SEED0=s (another
 * seed range), TS_SYMRAND_KIND=name (one kind only), TS_SYMRAND_VERBOSE=1
 * (print every program as it starts, to find the one a crash or a hang
 * stops in), TS_SYMRAND_AVOID_KNOWN=1 (leave out the known bugs' shapes).
 */
#include "testutil.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp.h"
#include "lower.h"

#define MAXP 5      /* most parameters of a program (inputs, then the output) */
#define NCASE 5     /* extent tuples per program */
#define GUARD 64    /* floats of guard zone on each side of an array (64-byte aligned) */
#define TOL 1e-4

/* ---- random choices -------------------------------------------------------------- */

typedef struct rng {
	uint64_t s;
} rng;

static int pick(rng *r, int n)
{
	r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
	return (int)((uint32_t)(r->s >> 33) % (uint32_t)n);
}

/* ---- programs ---------------------------------------------------------------------- */

enum kind { K_MAP1, K_MAP2, K_ROWRED, K_PRODCONS, K_CHAIN, K_NORM, K_STENCIL, K_MATMUL, K_COUNT };
static const char *const kind_names[] = {"map1", "map2", "rowred", "prodcons", "chain", "norm",
					 "stencil", "matmul"};

/* Logical extents: 0 = m (rows), 1 = n (columns), 2 = k (reduction). */
typedef struct prog {
	int kind;
	bool sym[3];     /* extent d is size variable var[d] */
	int var[3];
	int64_t cext[3]; /* the constant extent d when not symbolic */
	int nvars;
	int64_t vmax[3]; /* each variable's bound */
	bool huge;       /* some bound is huge: no temporaries (they are allocated at it) */
	int fop;         /* which elementwise function */
	bool red_max;    /* reductions: max instead of sum */
	bool bias;       /* map2: + bias[j] */
	bool square;     /* map2: reads A[j, i], A square */
	bool trans_a, trans_b;
	bool cons_row;   /* prodcons, chain: the consumer reduces rows (else maps) */
} prog;

static int64_t ext_of(const prog *p, const int64_t *val, int d)
{
	return p->sym[d] ? val[p->var[d]] : p->cext[d];
}

/* The elementwise function number fop of x (and y when given) at index
 * variable i, over a dimension of extent size (a handle or a constant). */
static ts_expr *elem(ts_ctx *ctx, int fop, ts_expr *x, ts_expr *y, ts_expr *i, int64_t size)
{
	if (!y)
		y = ts_mul(ctx, x, x);
	switch (fop) {
	case 0:
		return ts_add(ctx, ts_mul(ctx, x, ts_float(ctx, 2)), ts_float(ctx, 1));
	case 1:
		return ts_sub(ctx, ts_max(ctx, x, ts_float(ctx, 0.25)), y);
	case 2:
		return ts_add(ctx, ts_mul(ctx, x, y), ts_mul(ctx, ts_cast(ctx, ts_float32, i), ts_float(ctx, 0.5)));
	case 3: /* the extent in the body */
		return ts_add(ctx, x, ts_mul(ctx, ts_cast(ctx, ts_float32, ts_size_expr(ctx, size)),
					     ts_float(ctx, 0.125)));
	default:
		return ts_select(ctx, ts_gt(ctx, x, ts_float(ctx, 0)), x, ts_mul(ctx, y, ts_float(ctx, 0.5)));
	}
}

#define MAXI 2 /* most intermediate computes */

/* Builds p over extents e (handles or constants): params[] in argument
 * order, the output last; inter[] the intermediate computes, producers
 * first. */
static void build(ts_ctx *ctx, const prog *p, const int64_t *e, ts_tensor **out, int *np,
		  ts_tensor **inter, int *ninter)
{
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	int64_t m = e[0], n = e[1], k = e[2];
	*np = *ninter = 0;
	switch (p->kind) {
	case K_MAP1: {
		ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(m), ts_float32);
		ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(m), ts_float32);
		ts_tensor *B = ts_compute(ctx, "B", TS_SHAPE(m), TS_VARS(i),
					  elem(ctx, p->fop, TS_READ(ctx, A, i), TS_READ(ctx, W, i), i, m));
		out[0] = A, out[1] = W, out[2] = B, *np = 3;
		break;
	}
	case K_MAP2: {
		ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(m, n), ts_float32);
		ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(m, n), ts_float32);
		ts_tensor *bias = ts_placeholder(ctx, "bias", TS_SHAPE(n), ts_float32);
		ts_expr *a = p->square ? TS_READ(ctx, A, j, i) : TS_READ(ctx, A, i, j);
		ts_expr *v = elem(ctx, p->fop, a, TS_READ(ctx, B, i, j), j, n);
		if (p->bias)
			v = ts_add(ctx, v, TS_READ(ctx, bias, j));
		ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(m, n), TS_VARS(i, j), v);
		out[(*np)++] = A, out[(*np)++] = B;
		if (p->bias)
			out[(*np)++] = bias;
		out[(*np)++] = C;
		break;
	}
	case K_ROWRED: {
		ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(m, k), ts_float32);
		ts_iter *r = ts_reduce_axis(ctx, "r", 0, k);
		ts_expr *src = elem(ctx, p->fop, TS_READ(ctx, A, i, r->var), NULL, r->var, k);
		ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(m), TS_VARS(i),
					  p->red_max ? TS_MAX(ctx, src, r) : TS_SUM(ctx, src, r));
		out[0] = A, out[1] = C, *np = 2;
		break;
	}
	case K_PRODCONS: {
		ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(m, n), ts_float32);
		ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(m, n), ts_float32);
		ts_expr *pi = ts_var(ctx, "pi"), *pj = ts_var(ctx, "pj");
		ts_tensor *Pt = ts_compute(ctx, "P", TS_SHAPE(m, n), TS_VARS(pi, pj),
					   elem(ctx, p->fop, TS_READ(ctx, A, pi, pj), NULL, pj, n));
		ts_tensor *C;
		if (p->cons_row) {
			ts_iter *r = ts_reduce_axis(ctx, "r", 0, n);
			ts_expr *src = ts_mul(ctx, TS_READ(ctx, Pt, i, r->var), ts_float(ctx, 0.5));
			C = ts_compute(ctx, "C", TS_SHAPE(m), TS_VARS(i),
				       p->red_max ? TS_MAX(ctx, src, r) : TS_SUM(ctx, src, r));
			out[0] = A, out[1] = C, *np = 2;
		} else {
			C = ts_compute(ctx, "C", TS_SHAPE(m, n), TS_VARS(i, j),
				       ts_mul(ctx, TS_READ(ctx, Pt, i, j), TS_READ(ctx, B, i, j)));
			out[0] = A, out[1] = B, out[2] = C, *np = 3;
		}
		inter[(*ninter)++] = Pt;
		break;
	}
	case K_CHAIN: { /* P1 read by P2 and C, P2 read by C */
		ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(m, n), ts_float32);
		ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(m, n), ts_float32);
		ts_expr *pi = ts_var(ctx, "pi"), *pj = ts_var(ctx, "pj");
		ts_expr *qi = ts_var(ctx, "qi"), *qj = ts_var(ctx, "qj");
		ts_tensor *P1 = ts_compute(ctx, "P1", TS_SHAPE(m, n), TS_VARS(pi, pj),
					   elem(ctx, p->fop, TS_READ(ctx, A, pi, pj), NULL, pj, n));
		ts_tensor *P2 = ts_compute(ctx, "P2", TS_SHAPE(m, n), TS_VARS(qi, qj),
					   ts_add(ctx, ts_mul(ctx, TS_READ(ctx, P1, qi, qj), TS_READ(ctx, B, qi, qj)),
						  ts_float(ctx, 0.5)));
		ts_tensor *C;
		if (p->cons_row) {
			ts_iter *r = ts_reduce_axis(ctx, "r", 0, n);
			ts_expr *src = ts_sub(ctx, TS_READ(ctx, P2, i, r->var), TS_READ(ctx, P1, i, r->var));
			C = ts_compute(ctx, "C", TS_SHAPE(m), TS_VARS(i),
				       p->red_max ? TS_MAX(ctx, src, r) : TS_SUM(ctx, src, r));
		} else {
			C = ts_compute(ctx, "C", TS_SHAPE(m, n), TS_VARS(i, j),
				       ts_sub(ctx, TS_READ(ctx, P2, i, j), TS_READ(ctx, P1, i, j)));
		}
		out[0] = A, out[1] = B, out[2] = C, *np = 3;
		inter[0] = P1, inter[1] = P2, *ninter = 2;
		break;
	}
	case K_NORM: { /* a row statistic S read by every element of its row */
		ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(m, n), ts_float32);
		ts_iter *r = ts_reduce_axis(ctx, "r", 0, n);
		ts_expr *si = ts_var(ctx, "si");
		ts_expr *src = ts_mul(ctx, TS_READ(ctx, A, si, r->var), ts_float(ctx, 0.5));
		ts_tensor *S = ts_compute(ctx, "S", TS_SHAPE(m), TS_VARS(si),
					  p->red_max ? TS_MAX(ctx, src, r) : TS_SUM(ctx, src, r));
		ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(m, n), TS_VARS(i, j),
					  ts_sub(ctx, elem(ctx, p->fop, TS_READ(ctx, A, i, j), TS_READ(ctx, S, i), j, n),
						 ts_mul(ctx, TS_READ(ctx, S, i), ts_float(ctx, 0.25))));
		out[0] = A, out[1] = C, *np = 2;
		inter[0] = S, *ninter = 1;
		break;
	}
	case K_STENCIL: { /* rows i and i + 1 of P: m is a constant (m + 1 rows) */
		ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(m + 1, n), ts_float32);
		ts_expr *pi = ts_var(ctx, "pi"), *pj = ts_var(ctx, "pj");
		ts_tensor *Pt = ts_compute(ctx, "P", TS_SHAPE(m + 1, n), TS_VARS(pi, pj),
					   elem(ctx, p->fop, TS_READ(ctx, A, pi, pj), NULL, pj, n));
		ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(m, n), TS_VARS(i, j),
					  ts_add(ctx, TS_READ(ctx, Pt, i, j),
						 ts_mul(ctx, TS_READ(ctx, Pt, ts_add(ctx, i, ts_int(ctx, 1)), j),
							ts_float(ctx, 0.5))));
		out[0] = A, out[1] = C, *np = 2;
		inter[0] = Pt, *ninter = 1;
		break;
	}
	default: {
		ts_tensor *A = p->trans_a ? ts_placeholder(ctx, "A", TS_SHAPE(k, m), ts_float32)
					  : ts_placeholder(ctx, "A", TS_SHAPE(m, k), ts_float32);
		ts_tensor *B = p->trans_b ? ts_placeholder(ctx, "B", TS_SHAPE(n, k), ts_float32)
					  : ts_placeholder(ctx, "B", TS_SHAPE(k, n), ts_float32);
		ts_tensor *C = ts_op_matmul(ctx, A, B, p->trans_a, p->trans_b);
		out[0] = A, out[1] = B, out[2] = C, *np = 3;
		break;
	}
	}
}

static const char *prog_str(const prog *p, char *buf, size_t cap)
{
	static const char dn[] = "mnk";
	int w = snprintf(buf, cap, "%s fop %d%s%s%s%s%s%s:", kind_names[p->kind], p->fop,
			 p->red_max ? " max" : "", p->bias ? " bias" : "", p->square ? " square" : "",
			 p->trans_a ? " transA" : "", p->trans_b ? " transB" : "",
			 p->cons_row ? " rowreduce" : "");
	for (int d = 0; d < 3 && w > 0 && (size_t)w < cap; d++)
		w += p->sym[d] ? snprintf(buf + w, cap - (size_t)w, " %c=var%d(<=%lld)", dn[d], p->var[d],
					  (long long)p->vmax[p->var[d]])
			       : snprintf(buf + w, cap - (size_t)w, " %c=%lld", dn[d], (long long)p->cext[d]);
	return buf;
}

/* A random program: kinds cycle with the seed so each test gets its own. */
static void random_prog(rng *r, int kind, prog *p)
{
	static const int64_t maxes[] = {1, 2, 5, 8, 13, 16, 24, 31, 40, 64};
	memset(p, 0, sizeof(*p));
	p->kind = kind;
	int nmax = kind == K_MATMUL ? 9 : 10; /* keep matmul's interpreter runs short */
	for (int d = 0; d < 3; d++) {
		p->sym[d] = pick(r, 4) != 0;
		p->cext[d] = pick(r, 5) ? 1 + pick(r, 12) : 17;
		if (!p->sym[d])
			continue;
		/* sometimes the variable of an earlier extent again */
		int prev = -1;
		for (int e = 0; e < d; e++)
			if (p->sym[e])
				prev = p->var[e];
		if (prev >= 0 && pick(r, 5) == 0) {
			p->var[d] = prev;
		} else {
			static const int64_t huge[] = {INT64_C(1) << 20, INT32_MAX, INT64_C(1) << 31,
							INT64_C(1) << 33, INT64_C(1) << 40};
			bool no_temps = kind == K_MAP1 || kind == K_MAP2 || kind == K_ROWRED ||
					kind == K_MATMUL;
			p->var[d] = p->nvars;
			/* a huge bound (int64 indices, run-time extents far below
			 * it) only without intermediates, which are allocated at
			 * the bound */
			p->vmax[p->nvars++] = no_temps && pick(r, 8) == 0 ? huge[pick(r, 5)]
					      : kind == K_MAP1 && pick(r, 3) == 0 ? 100 + pick(r, 157)
					      : maxes[pick(r, nmax)];
			p->huge |= p->vmax[p->nvars - 1] > 256;
		}
	}
	if (kind == K_STENCIL) /* P is read at i + 1 */
		p->sym[0] = false;
	p->fop = pick(r, 5);
	p->red_max = pick(r, 2);
	p->bias = kind == K_MAP2 && pick(r, 2);
	p->square = kind == K_MAP2 && pick(r, 3) == 0;
	if (p->square) { /* A[j, i] needs m and n the same extent */
		p->sym[0] = p->sym[1];
		p->var[0] = p->var[1];
		p->cext[0] = p->cext[1];
		/* number the variables still used 0.. again, in order of use */
		int map[3] = {-1, -1, -1}, nv = 0;
		int64_t vmax[3];
		for (int d = 0; d < 3; d++) {
			if (!p->sym[d])
				continue;
			if (map[p->var[d]] < 0) {
				vmax[nv] = p->vmax[p->var[d]];
				map[p->var[d]] = nv++;
			}
			p->var[d] = map[p->var[d]];
		}
		p->nvars = nv;
		memcpy(p->vmax, vmax, sizeof(vmax));
	}
	p->trans_a = kind == K_MATMUL && pick(r, 3) == 0;
	p->trans_b = kind == K_MATMUL && pick(r, 3) == 0;
	p->cons_row = (kind == K_PRODCONS || kind == K_CHAIN) && pick(r, 3) == 0;
}

/* ---- schedules ------------------------------------------------------------------------ */

/* The split factors and part counts a schedule used, for choosing extents
 * they do not divide. */
typedef struct factors {
	int n;
	int64_t f[64];
} factors;

static void note(factors *fs, int64_t f)
{
	if (f > 1 && fs->n < (int)TS_COUNT_OF(fs->f))
		fs->f[fs->n++] = f;
}

static int n_prim_ok, n_prim_refused;

static void tally(ts_ctx *ctx, ts_status st)
{
	if (st == TS_OK)
		n_prim_ok++;
	else
		n_prim_refused++;
	ts_clear_error(ctx);
}

static ts_axis *leaf(rng *r, ts_stage *st)
{
	return st->leaf[pick(r, st->nleaf)];
}

/* Whether a, if unrolled or vectorized, has the shape of a known (fixed)
 * bug: the loop keeps its constant extent while its parts divide by
 * run-time ones (bug 1, test_bug1_nparts_unrolled: the inner part of an nparts
 * split; bug 2, test_bug2_fused_unrolled: a fused axis). */
static int known_bug_axis(const ts_stage *st, const ts_axis *a)
{
	for (int i = 0; i < st->nrel; i++) {
		const sch_relation *r = &st->rel[i];
		if (r->kind == SCH_REL_SPLIT && r->nparts && r->inner == a)
			return 1;
		if (r->kind == SCH_REL_FUSE && r->fused == a)
			return 2;
	}
	return 0;
}

/* The known bug whose shape some unrolled or vectorized leaf of the
 * schedule has (0: none), for the failure messages. */
static int known_bug_shape(const ts_schedule *s)
{
	for (int i = 0; i < s->nstages; i++) {
		const ts_stage *st = s->stages[i];
		for (int l = 0; l < st->nleaf; l++) {
			ts_for_kind k = st->leaf[l]->loop;
			int b = k == TS_FOR_UNROLLED || k == TS_FOR_VECTORIZED ? known_bug_axis(st, st->leaf[l]) : 0;
			if (b)
				return b;
		}
	}
	return 0;
}

/* With TS_SYMRAND_AVOID_KNOWN set, the generator leaves out the shapes of
 * the known bugs, so that other failures show. */
static bool avoid_known(const ts_stage *st, const ts_axis *a)
{
	return getenv("TS_SYMRAND_AVOID_KNOWN") && known_bug_axis(st, a);
}

static void unroll(ts_stage *st, ts_axis *a)
{
	if (!avoid_known(st, a))
		tally(st->sch->ctx, ts_unroll(st, a));
}

static void vectorize(ts_stage *st, ts_axis *a)
{
	if (!avoid_known(st, a))
		tally(st->sch->ctx, ts_vectorize(st, a));
}

/* Unrolls, vectorizes or parallelizes a (the last only for data axes). */
static void loop_kind(rng *r, ts_stage *st, ts_axis *a)
{
	switch (pick(r, 3)) {
	case 0: unroll(st, a); break;
	case 1: vectorize(st, a); break;
	default: tally(st->sch->ctx, ts_parallel(st, a)); break;
	}
}

static void random_primitive(rng *r, ts_stage *st, factors *fs)
{
	ts_ctx *ctx = st->sch->ctx;
	ts_axis *o, *in, *f, *xo, *yo, *xi, *yi;
	ts_axis *a = leaf(r, st);
	int li = 0;
	while (st->leaf[li] != a)
		li++;
	switch (pick(r, 13)) {
	case 0:
	case 1: {
		int64_t fac = 1 + pick(r, 8);
		note(fs, fac);
		tally(ctx, ts_split_tail(st, a, fac, pick(r, 2) ? TS_TAIL_PARTITION : TS_TAIL_GUARD, &o, &in));
		break;
	}
	case 2: {
		int64_t np = 1 + pick(r, 4);
		note(fs, np);
		tally(ctx, ts_split_nparts(st, a, np, &o, &in));
		break;
	}
	case 3:
		if (li + 1 < st->nleaf && st->leaf[li + 1]->kind == a->kind)
			tally(ctx, ts_fuse(st, a, st->leaf[li + 1], &f));
		break;
	case 4: { /* a random permutation of all leaves, or a swap of two */
		ts_axis *order[TS_MAX_LOOP_NEST];
		int n = st->nleaf;
		if (n > (int)TS_COUNT_OF(order))
			break;
		memcpy(order, st->leaf, (size_t)n * sizeof(*order));
		if (pick(r, 2)) {
			for (int x = n - 1; x > 0; x--) {
				int y = pick(r, x + 1);
				ts_axis *t = order[x];
				order[x] = order[y], order[y] = t;
			}
			tally(ctx, ts_reorder(st, n, order));
		} else {
			ts_axis *b = leaf(r, st);
			if (b != a)
				tally(ctx, ts_reorder(st, TS_AXES(b, a)));
		}
		break;
	}
	case 5: {
		int64_t fx = 1 + pick(r, 8), fy = 1 + pick(r, 8);
		note(fs, fx), note(fs, fy);
		tally(ctx, ts_tile(st, a, leaf(r, st), fx, fy, &xo, &yo, &xi, &yi));
		break;
	}
	case 6:
	case 7:
		vectorize(st, a);
		break;
	case 8:
		unroll(st, a);
		break;
	case 9:
		tally(ctx, ts_parallel(st, a));
		break;
	case 10: { /* nparts, then a loop kind on one part */
		int64_t np = 2 + pick(r, 3);
		note(fs, np);
		ts_status s = ts_split_nparts(st, a, np, &o, &in);
		tally(ctx, s);
		if (s == TS_OK)
			loop_kind(r, st, pick(r, 3) ? in : o);
		break;
	}
	case 11: { /* factor split, the inner part vectorized or unrolled, the outer parallel */
		int64_t fac = 2 + pick(r, 7);
		note(fs, fac);
		ts_status s = ts_split_tail(st, a, fac, pick(r, 2) ? TS_TAIL_PARTITION : TS_TAIL_GUARD, &o, &in);
		tally(ctx, s);
		if (s == TS_OK) {
			loop_kind(r, st, in);
			if (pick(r, 2))
				tally(ctx, ts_parallel(st, o));
		}
		break;
	}
	default: /* fuse two neighbours, then split the fused axis */
		if (li + 1 < st->nleaf && st->leaf[li + 1]->kind == a->kind) {
			ts_status s = ts_fuse(st, a, st->leaf[li + 1], &f);
			tally(ctx, s);
			if (s == TS_OK) {
				int64_t fac = 1 + pick(r, 9);
				note(fs, fac);
				if (pick(r, 2))
					tally(ctx, ts_split(st, f, fac, &o, &in));
				else
					tally(ctx, ts_split_nparts(st, f, fac, &o, &in));
			}
		}
		break;
	}
}

/* The outermost serial data leaf may become parallel. */
static void maybe_parallel(rng *r, ts_stage *st)
{
	ts_axis *a = st->leaf[0];
	if (a->kind == TS_ITER_DATA && a->loop == TS_FOR_SERIAL && pick(r, 2))
		tally(st->sch->ctx, ts_parallel(st, a));
}

/* The blocked matmul schedule with random factors and loop kinds. */
static void blocked_matmul(rng *r, ts_stage *sc, factors *fs)
{
	ts_ctx *ctx = sc->sch->ctx;
	ts_axis *io, *jo, *ii, *ji, *ko, *ki, *fused;
	int64_t fx = 1 + pick(r, 8), fy = 1 << pick(r, 4), fk = 1 + pick(r, 6);
	note(fs, fx), note(fs, fy), note(fs, fk);
	ts_status st = ts_tile(sc, ts_axis_of(sc, 0), ts_axis_of(sc, 1), fx, fy, &io, &jo, &ii, &ji);
	tally(ctx, st);
	if (st != TS_OK)
		return;
	st = ts_split(sc, ts_reduce_axis_of(sc, 0), fk, &ko, &ki);
	tally(ctx, st);
	if (st != TS_OK)
		return;
	tally(ctx, ts_reorder(sc, TS_AXES(io, jo, ko, ii, ki, ji)));
	if (pick(r, 2))
		tally(ctx, ts_vectorize(sc, ji));
	if (pick(r, 3) == 0)
		tally(ctx, ts_unroll(sc, ki));
	if (pick(r, 2)) {
		st = ts_fuse(sc, io, jo, &fused);
		tally(ctx, st);
		if (st == TS_OK)
			io = fused;
	}
	if (pick(r, 2))
		tally(ctx, ts_parallel(sc, io));
}

static void random_schedule(rng *r, const prog *p, ts_schedule *s, ts_tensor *C,
			    ts_tensor *const *inter, int ninter, ts_tensor *const *params, factors *fs)
{
	ts_ctx *ctx = s->ctx;
	bool reduces = p->kind == K_ROWRED || p->kind == K_MATMUL ||
		       ((p->kind == K_PRODCONS || p->kind == K_CHAIN) && p->cons_row);
	ts_stage *cache = NULL, *rf = NULL, *cread = NULL;
	if (reduces && !p->huge && pick(r, 5) == 0) {
		ts_tensor *t = ts_cache_write(s, C, TS_SCOPE_LOCAL);
		tally(ctx, t ? TS_OK : TS_ERR_INVALID);
		cache = t ? ts_stage_of(s, t) : NULL;
	}
	if (p->kind == K_MATMUL && !p->huge && pick(r, 6) == 0) {
		ts_tensor *readers[] = {cache ? cache->tensor : C};
		ts_tensor *t = ts_cache_read(s, params[pick(r, 2)], TS_SCOPE_LOCAL, 1, readers);
		tally(ctx, t ? TS_OK : TS_ERR_INVALID);
		cread = t ? ts_stage_of(s, t) : NULL;
	}
	ts_stage *sc = ts_stage_of(s, C);
	if (p->kind == K_MATMUL && !cache && pick(r, 2))
		blocked_matmul(r, sc, fs);
	else
		for (int n = pick(r, 9); n > 0; n--)
			random_primitive(r, sc, fs);
	if (reduces && !cache && !p->huge && pick(r, 5) == 0) {
		ts_axis *red[TS_MAX_LOOP_NEST];
		int n = 0;
		for (int x = 0; x < sc->nleaf; x++)
			if (sc->leaf[x]->kind == TS_ITER_REDUCE)
				red[n++] = sc->leaf[x];
		if (n > 0) {
			ts_tensor *t = ts_rfactor(s, C, red[pick(r, n)], pick(r, C->ndim + 1));
			tally(ctx, t ? TS_OK : TS_ERR_INVALID);
			rf = t ? ts_stage_of(s, t) : NULL;
			if (rf) {
				for (int x = pick(r, 3); x > 0; x--)
					random_primitive(r, rf, fs);
				if (pick(r, 2))
					tally(ctx, ts_compute_at(rf, sc, leaf(r, sc)));
			}
		}
	}
	maybe_parallel(r, sc);
	if (cache) {
		tally(ctx, ts_compute_at(cache, sc, leaf(r, sc)));
		for (int n = pick(r, 4); n > 0; n--)
			random_primitive(r, cache, fs);
	}
	if (cread) {
		ts_stage *reader = cache ? cache : sc;
		if (pick(r, 2))
			tally(ctx, ts_compute_at(cread, reader, leaf(r, reader)));
	}
	/* the intermediates, the last producer first: each inlined, at root, or
	 * computed at a loop of a stage after it that is not inlined */
	ts_stage *targets[MAXI + 3];
	int ntargets = 0;
	targets[ntargets++] = sc;
	if (cache)
		targets[ntargets++] = cache;
	if (rf)
		targets[ntargets++] = rf;
	for (int x = ninter - 1; x >= 0; x--) {
		ts_stage *sp = ts_stage_of(s, inter[x]);
		ck_assert_msg(sp != NULL, "stage of %s: %s", inter[x]->name, ts_last_error(ctx));
		for (int n = pick(r, 5); n > 0; n--)
			random_primitive(r, sp, fs);
		ts_stage *to = targets[pick(r, ntargets)];
		switch (pick(r, 4)) {
		case 0: tally(ctx, ts_compute_inline(sp)); break;
		case 1:
		case 2: {
			int at = pick(r, to->nleaf);
			ts_status st = ts_compute_at(sp, to, to->leaf[at]);
			tally(ctx, st);
			/* sometimes stored further out (a sliding window where
			 * the region moves along one dimension) */
			if (st == TS_OK && pick(r, 2))
				tally(ctx, pick(r, 4) ? ts_store_at(sp, to, to->leaf[pick(r, at + 1)])
						      : ts_store_root(sp));
			break;
		}
		default: break;
		}
		if (sp->attach != SCH_ATTACH_INLINE)
			targets[ntargets++] = sp;
	}
	ts_clear_error(ctx);
}

/* ---- arrays between guard zones ---------------------------------------------------- */

typedef struct garray {
	float *base;     /* GUARD floats, the data, tail floats */
	float guard;     /* the guard zones' value */
	ts_array *a;
	int64_t numel, tail;
} garray;

/* Argument a's guard value: large (a read of it shows in the results) and
 * different per argument (a value copied from one guard zone into another
 * shows as a change). */
static float guard_value(int a)
{
	return 7.77e19f * (1.0f + 0.3719f * (float)a);
}

/* An array shaped like t, argument a, whose tail zone reaches at least
 * element `bound` (the element count at the variables' bounds, which the
 * lowered function declares, when not huge): an access past the array of
 * the call but inside what the function declares changes a guard instead
 * of crashing the interpreter, so the other programs still run. */
static garray garray_new(ts_ctx *ctx, const ts_tensor *t, int a, int64_t bound)
{
	garray g = {.guard = guard_value(a)};
	g.numel = 1;
	for (int d = 0; d < t->ndim; d++)
		g.numel *= t->shape[d];
	g.tail = GUARD + (bound > g.numel && bound <= (1 << 20) ? bound - g.numel : 0);
	size_t bytes = (size_t)(GUARD + g.numel + g.tail) * sizeof(float);
	g.base = aligned_alloc(64, (bytes + 63) / 64 * 64);
	ck_assert_ptr_nonnull(g.base);
	for (int64_t x = 0; x < GUARD + g.numel + g.tail; x++)
		g.base[x] = g.guard;
	g.a = ts_array_wrap(ctx, g.base + GUARD, ts_float32, t->ndim, t->shape);
	tu_nonnull(ctx, g.a);
	return g;
}

static void garray_free(garray *g)
{
	ts_array_free(g->a);
	free(g->base);
}

static bool guards_intact(const garray *g)
{
	for (int64_t x = 0; x < GUARD; x++)
		if (g->base[x] != g->guard)
			return false;
	for (int64_t x = 0; x < g->tail; x++)
		if (g->base[GUARD + g->numel + x] != g->guard)
			return false;
	return true;
}

static void fill_nan(garray *g)
{
	for (int64_t x = 0; x < g->numel; x++)
		g->base[GUARD + x] = NAN;
}

/* ---- running ------------------------------------------------------------------------ */

static int n_build_refused, n_failures_known, n_failed_seeds;
static uint64_t failed_seeds[64];
static int failed_known[64];
static int n_programs, n_lowered, n_lower_refused, n_runs_jit, n_runs_interp, n_runs_spec,
	n_failures;
static char refusals[8][256]; /* the first distinct lowering refusals, for the summary */
static int n_refusal_kinds;

/* Refusals documented for primitive sequences each primitive accepted: the
 * symbolic read rule (rfactor's clamped reads), the vector-lane and unroll
 * limits, and a stage computed at a loop that does not enclose all its
 * readers (chain: P1 at a loop of P2 that C is not inside). */
static bool refusal_ok(const char *msg)
{
	return strstr(msg, "symbolic") || strstr(msg, "lanes") || strstr(msg, "unroll") ||
	       strstr(msg, "vectoriz") || strstr(msg, "size variable") ||
	       strstr(msg, "is not computed inside") || strstr(msg, "store_at(") ||
	       strstr(msg, "store_root(");
}

static void note_refusal(const char *msg)
{
	char key[256];
	snprintf(key, sizeof(key), "%.200s", msg);
	for (int x = 0; x < n_refusal_kinds; x++)
		if (strncmp(refusals[x], key, 40) == 0)
			return;
	if (n_refusal_kinds < (int)TS_COUNT_OF(refusals))
		snprintf(refusals[n_refusal_kinds++], sizeof(refusals[0]), "%s", key);
}

typedef struct trial {
	uint64_t seed;
	int known;     /* the known bug whose shape the schedule has (0: none) */
	prog p;
	ts_schedule *s;
	char desc[4096];
} trial;

static void report(const trial *t, const char *backend, const int64_t *val, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void report(const trial *t, const char *backend, const int64_t *val, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	n_failures++;
	if (t->known)
		n_failures_known++;
	if (n_failures <= 12)
		fprintf(stderr, "FAIL seed %llu %s, sizes (%lld, %lld, %lld): %s%s\n  %s\n",
			(unsigned long long)t->seed, backend, (long long)val[0], (long long)val[1],
			(long long)val[2], msg,
			t->known == 1 ? " [the shape of known bug 1]"
			: t->known == 2 ? " [the shape of known bug 2]" : "",
			t->desc);
	if (n_failed_seeds == 0 || failed_seeds[n_failed_seeds - 1] != t->seed) {
		if (n_failed_seeds < (int)TS_COUNT_OF(failed_seeds))
			failed_seeds[n_failed_seeds] = t->seed, failed_known[n_failed_seeds] = t->known;
		n_failed_seeds++;
	}
}

/* The first element where got and want differ, or -1. */
static int64_t mismatch(const garray *got, const float *want, int64_t n)
{
	for (int64_t x = 0; x < n; x++) {
		double g = got->base[GUARD + x], w = want[x];
		if (g != w && !(fabs(g - w) <= TOL + TOL * fabs(w)))
			return x;
	}
	return -1;
}

/* Checks one run's output and every guard zone. */
static void check_run(const trial *t, const char *backend, const int64_t *val, garray *g, int np,
		      const float *want)
{
	garray *out = &g[np - 1];
	int64_t x = mismatch(out, want, out->numel);
	if (x >= 0)
		report(t, backend, val, "element %lld of %lld: got %.9g, want %.9g", (long long)x,
		     (long long)out->numel, out->base[GUARD + x], want[x]);
	for (int a = 0; a < np; a++)
		if (!guards_intact(&g[a]))
			report(t, backend, val, "argument %d written outside its array", a);
}

/* Extents tested for a variable go up to its bound or SIZE_CAP. */
#define SIZE_CAP 64

/* Extent tuples for the variables: all 1, all at the bound (or SIZE_CAP),
 * not divided by a split factor, random, and a mix. */
static void pick_sizes(rng *r, const prog *p, const factors *fs, int64_t (*val)[3])
{
	for (int v = 0; v < 3; v++) {
		int64_t max = v >= p->nvars ? 1 : p->vmax[v] > 256 ? SIZE_CAP : p->vmax[v];
		val[0][v] = 1;
		val[1][v] = max;
		int64_t nd = 1 + pick(r, (int)max);
		for (int tries = 0; fs->n > 0 && tries < 16; tries++) {
			int64_t f = fs->f[pick(r, fs->n)];
			int64_t c = 1 + pick(r, (int)max);
			if (c % f != 0) {
				nd = c;
				break;
			}
		}
		val[2][v] = nd;
		val[3][v] = 1 + pick(r, (int)max);
		int w = pick(r, 3);
		val[4][v] = w == 0 ? 1 : w == 1 ? max : 1 + pick(r, (int)max);
	}
}

static void run_sizes(trial *t, ts_ctx *ctx, const ts_func *f, ts_module *m, ts_tensor *const *params,
		      int np, const int64_t *handles, const int64_t *val, int spec, bool spec_jit,
		      int threads)
{
	const prog *p = &t->p;
	int64_t e[3];
	for (int d = 0; d < 3; d++)
		e[d] = ext_of(p, val, d);
	/* the reference program of these extents */
	ts_ctx *rc = ts_ctx_new();
	ts_tensor *q[MAXP], *qi[MAXI];
	int nq, nqi;
	build(rc, p, e, q, &nq, qi, &nqi);
	ck_assert_msg(nq == np && q[np - 1], "reference build: %s", ts_last_error(rc));
	garray g[MAXP];
	for (int a = 0; a < np; a++) {
		g[a] = garray_new(ctx, q[a], a, ts_tensor_numel(params[a]));
		if (a < np - 1)
			ts_array_fill_random(g[a].a, t->seed * 31 + (uint64_t)a, -1, 1);
	}
	float *want = malloc((size_t)g[np - 1].numel * sizeof(float));
	ck_assert_ptr_nonnull(want);
	void *data[MAXP + 1];
	for (int a = 0; a < np - 1; a++)
		data[a] = g[a].a->data;
	data[np - 1] = want;
	ck_assert_msg(ts_eval(rc, np, q, data) == TS_OK, "ts_eval: %s", ts_last_error(rc));
	ts_ctx_free(rc);
	ts_array *args[MAXP];
	for (int a = 0; a < np; a++)
		args[a] = g[a].a;

	/* the JIT */
	fill_nan(&g[np - 1]);
	int old = ts_set_num_threads(threads);
	ts_status st = ts_module_run(m, np, args);
	ts_set_num_threads(old);
	char what[32];
	snprintf(what, sizeof(what), "jit, %d threads", threads);
	if (st != TS_OK)
		report(t, what, val, "ts_module_run: %s", ts_last_error(ctx));
	else
		check_run(t, what, val, g, np, want);
	n_runs_jit++;

	/* the interpreter */
	fill_nan(&g[np - 1]);
	int64_t sizes[TS_MAX_SIZE_VARS];
	st = ts_check_args_sizes(ctx, f, np, args, TS_DEVICE_CPU, sizes);
	if (st == TS_OK) {
		for (int a = 0; a < np; a++)
			data[a] = args[a]->data;
		data[np] = sizes;
		st = cg_interp_run(ctx, f, data);
	}
	if (st != TS_OK)
		report(t, "interp", val, "%s", ts_last_error(ctx));
	else
		check_run(t, "interp", val, g, np, want);
	n_runs_interp++;

	/* the specialized twin: spec's bits name the variables fixed (the
	 * others stay symbolic), through the interpreter, and with spec_jit
	 * through the JIT too */
	int64_t fixed[3], fixed_val[3];
	int nfixed = 0;
	for (int v = 0; v < p->nvars; v++)
		if (spec & (1 << v))
			fixed[nfixed] = handles[v], fixed_val[nfixed++] = val[v];
	if (nfixed > 0) {
		ts_func *tw = ts_lower_specialize(t->s, "twin", np, params, nfixed, fixed, fixed_val);
		int64_t tsizes[TS_MAX_SIZE_VARS];
		if (!tw) {
			report(t, "specialize", val, "ts_lower_specialize: %s", ts_last_error(ctx));
		} else if (ts_check_args_sizes(ctx, tw, np, args, TS_DEVICE_CPU, tsizes) != TS_OK) {
			report(t, "specialize", val, "the twin refuses the arrays: %s", ts_last_error(ctx));
		} else {
			fill_nan(&g[np - 1]);
			for (int a = 0; a < np; a++)
				data[a] = args[a]->data;
			data[np] = tsizes;
			st = cg_interp_run(ctx, tw, data);
			if (st != TS_OK)
				report(t, "specialized interp", val, "%s", ts_last_error(ctx));
			else
				check_run(t, "specialized interp", val, g, np, want);
			n_runs_spec++;
			ts_module *tm = spec_jit ? ts_build(ctx, tw, NULL) : NULL;
			if (spec_jit && !tm) {
				report(t, "specialized jit", val, "ts_build: %s", ts_last_error(ctx));
			} else if (tm) {
				fill_nan(&g[np - 1]);
				st = ts_module_run(tm, np, args);
				if (st != TS_OK)
					report(t, "specialized jit", val, "%s", ts_last_error(ctx));
				else
					check_run(t, "specialized jit", val, g, np, want);
				n_runs_spec++;
				ts_module_free(tm);
			}
		}
		ts_clear_error(ctx);
	}
	ts_clear_error(ctx);
	free(want);
	for (int a = 0; a < np; a++)
		garray_free(&g[a]);
}

/* Whether some tensor of p has an extent that is variable v. */
static bool uses_var(const prog *p, int v)
{
	static const int dims[K_COUNT] = {[K_MAP1] = 1, [K_MAP2] = 3, [K_ROWRED] = 5, [K_PRODCONS] = 3,
					  [K_CHAIN] = 3, [K_NORM] = 3, [K_STENCIL] = 3, [K_MATMUL] = 7};
	for (int d = 0; d < 3; d++)
		if ((dims[p->kind] >> d & 1) && p->sym[d] && p->var[d] == v)
			return true;
	return false;
}

/* Arrays giving variable 0 the value bound + 1 must be refused, and
 * nothing written. */
static void check_over_bound(trial *t, ts_ctx *ctx, ts_module *m, ts_tensor *const *params, int np)
{
	const prog *p = &t->p;
	if (p->nvars == 0 || !uses_var(p, 0) || p->vmax[0] > 256)
		return;
	int64_t val[3] = {p->vmax[0] + 1, 1, 1}, e[3];
	for (int d = 0; d < 3; d++)
		e[d] = ext_of(p, val, d);
	ts_ctx *rc = ts_ctx_new();
	ts_tensor *q[MAXP], *qi[MAXI];
	int nq, nqi;
	build(rc, p, e, q, &nq, qi, &nqi);
	ck_assert_msg(nq == np && q[np - 1], "reference build: %s", ts_last_error(rc));
	garray g[MAXP];
	ts_array *args[MAXP];
	for (int a = 0; a < np; a++) {
		g[a] = garray_new(ctx, q[a], a, ts_tensor_numel(params[a]));
		args[a] = g[a].a;
	}
	ts_ctx_free(rc);
	fill_nan(&g[np - 1]);
	if (ts_module_run(m, np, args) == TS_OK)
		report(t, "jit", val, "arrays past the bound of variable 0 were accepted");
	for (int a = 0; a < np; a++)
		if (!guards_intact(&g[a]))
			report(t, "jit", val, "argument %d written outside its array in a refused call", a);
	for (int64_t x = 0; x < g[np - 1].numel; x++)
		if (!isnan(g[np - 1].base[GUARD + x])) {
			report(t, "jit", val, "a refused call wrote element %lld of its output", (long long)x);
			break;
		}
	ts_clear_error(ctx);
	for (int a = 0; a < np; a++)
		garray_free(&g[a]);
}

static void trial_run(uint64_t seed, int kind)
{
	trial *t = calloc(1, sizeof(*t));
	ck_assert_ptr_nonnull(t);
	t->seed = seed;
	rng r = {seed * 0x9E3779B97F4A7C15ull + 12345};
	random_prog(&r, kind, &t->p);
	const prog *p = &t->p;
	ts_ctx *ctx = ts_ctx_new();
	static const char *const names[] = {"m", "n", "k"};
	int64_t handles[3] = {0, 0, 0}, e[3];
	for (int v = 0; v < p->nvars; v++) {
		handles[v] = ts_size_var(ctx, names[v], p->vmax[v]);
		ck_assert_msg(handles[v] != 0, "size_var: %s", ts_last_error(ctx));
	}
	for (int d = 0; d < 3; d++)
		e[d] = ext_of(p, handles, d);
	ts_tensor *params[MAXP], *inter[MAXI];
	int np, ninter;
	build(ctx, p, e, params, &np, inter, &ninter);
	if (np > 0 && !params[np - 1] && strstr(ts_last_error(ctx), "number of elements overflows")) {
		/* two huge bounds in one tensor */
		n_build_refused++;
		ts_ctx_free(ctx);
		free(t);
		return;
	}
	ck_assert_msg(np > 0 && params[np - 1], "seed %llu build: %s", (unsigned long long)seed,
		      ts_last_error(ctx));
	t->s = ts_create_schedule(ctx, 1, &params[np - 1]);
	tu_nonnull(ctx, t->s);
	factors fs = {0};
	random_schedule(&r, p, t->s, params[np - 1], inter, ninter, params, &fs);
	t->known = known_bug_shape(t->s);
	char pd[512];
	snprintf(t->desc, sizeof(t->desc), "%s\n%s", prog_str(p, pd, sizeof(pd)), ts_schedule_str(t->s));
	if (getenv("TS_SYMRAND_VERBOSE"))
		fprintf(stderr, "seed %llu: %s\n", (unsigned long long)seed, t->desc);
	n_programs++;
	ts_func *f = ts_lower(t->s, "symrand", np, params);
	if (!f) {
		const char *msg = ts_last_error(ctx);
		n_lower_refused++;
		note_refusal(msg);
		if (!refusal_ok(msg))
			report(t, "ts_lower", (int64_t[]){0, 0, 0}, "unexpected refusal: %s", msg);
		ts_ctx_free(ctx);
		free(t);
		return;
	}
	n_lowered++;
	ts_module *m = ts_build(ctx, f, NULL);
	if (!m) {
		/* a temporary of a huge bound does not fit in memory */
		if (strstr(ts_last_error(ctx), "bytes of memory"))
			n_build_refused++;
		else
			report(t, "ts_build", (int64_t[]){0, 0, 0}, "%s", ts_last_error(ctx));
		ts_ctx_free(ctx);
		free(t);
		return;
	}
	int64_t val[NCASE][3];
	pick_sizes(&r, p, &fs, val);
	/* one tuple also through a twin fixing a random nonempty set of the
	 * variables, every fourth program through its JIT too */
	int spec_case = pick(&r, NCASE);
	int spec = p->nvars ? 1 + pick(&r, (1 << p->nvars) - 1) : 0;
	bool spec_jit = pick(&r, 4) == 0;
	for (int c = 0; c < NCASE; c++)
		run_sizes(t, ctx, f, m, params, np, handles, val[c], c == spec_case ? spec : 0, spec_jit,
			  1 + (int)((seed + (uint64_t)c) % 3));
	check_over_bound(t, ctx, m, params, np);
	ts_module_free(m);
	ts_ctx_free(ctx);
	free(t);
}

static void run_kind(int kind, int ntrials, int min_runs)
{
	n_programs = n_lowered = n_lower_refused = n_runs_jit = n_runs_interp = n_runs_spec = 0;
	n_failures = n_prim_ok = n_prim_refused = n_refusal_kinds = n_build_refused = 0;
	n_failures_known = n_failed_seeds = 0;
	/* TS_SYMRAND_TRIALS and TS_SYMRAND_SEED0 explore further (the floor
	 * of runs scales along) */
	const char *env = getenv("TS_SYMRAND_TRIALS");
	uint64_t seed0 = 1000 * (uint64_t)(kind + 1);
	if (env && atoi(env) > 0) {
		min_runs = (int)((int64_t)min_runs * atoi(env) / ntrials);
		ntrials = atoi(env);
	}
	if ((env = getenv("TS_SYMRAND_SEED0")))
		seed0 += strtoull(env, NULL, 10);
	if ((env = getenv("TS_SYMRAND_KIND")) && strcmp(env, kind_names[kind]) != 0)
		return;
	for (int x = 0; x < ntrials; x++)
		trial_run(seed0 + (uint64_t)x, kind);
	printf("symbolic_random %-8s: %d programs, %d lowered, %d refused by ts_lower, %d by ts_build; "
	       "%d jit + %d interp + %d specialized runs; primitives %d applied, %d refused; "
	       "%d failures\n",
	       kind_names[kind], n_programs, n_lowered, n_lower_refused, n_build_refused, n_runs_jit,
	       n_runs_interp,
	       n_runs_spec, n_prim_ok, n_prim_refused, n_failures);
	for (int x = 0; x < n_refusal_kinds; x++)
		printf("  refusal: %s\n", refusals[x]);
	if (n_failed_seeds > 0) {
		printf("  failing seeds:");
		for (int x = 0; x < n_failed_seeds && x < (int)TS_COUNT_OF(failed_seeds); x++)
			printf(" %llu%s", (unsigned long long)failed_seeds[x],
			       failed_known[x] == 1 ? "(bug1?)" : failed_known[x] == 2 ? "(bug2?)" : "");
		printf("\n");
	}
	fflush(stdout);
	ck_assert_msg(n_failures == 0,
		      "%s: %d failing runs in %d programs, %d runs in schedules of the known bugs' shape "
		      "(see stderr)",
		      kind_names[kind], n_failures, n_failed_seeds, n_failures_known);
	ck_assert_msg(n_runs_jit >= min_runs && n_runs_interp >= min_runs,
		      "%s: only %d jit / %d interp runs (want at least %d)", kind_names[kind], n_runs_jit,
		      n_runs_interp, min_runs);
}

/* ---- two bugs the random tests found, minimized ---------------------------------------
 *
 * Both had one cause: schedule_ops kept the constant extent (from the
 * bound) for an unrolled or vectorized loop while the values of its parts
 * divide by run-time extents, and no guard covered the iterations past the
 * run-time extent; it now guards them (guard_constant_loops). */

/* Runs f (through m and through the interpreter) on arrays shaped as given
 * (the output last), between guard zones, inputs 1, 2, 3, ...; returns the
 * output's element 0..n-1 in got (NaN where not written) and whether the
 * guards held, per backend (0: jit, 1: interp). */
static void run_small(ts_ctx *ctx, const ts_func *f, ts_module *m, int np, const int *ndim,
		      const int64_t (*shape)[2], float (*got)[8], bool *guards)
{
	for (int b = 0; b < 2; b++) {
		garray g[MAXP];
		ts_array *args[MAXP];
		for (int a = 0; a < np; a++) {
			ts_tensor fake = {.ndim = ndim[a]};
			memcpy(fake.shape, shape[a], (size_t)ndim[a] * sizeof(int64_t));
			g[a] = garray_new(ctx, &fake, a, 64);
			args[a] = g[a].a;
			for (int64_t x = 0; x < g[a].numel; x++)
				g[a].base[GUARD + x] = (float)(x + 1);
		}
		fill_nan(&g[np - 1]);
		if (b == 0) {
			tu_ok(ctx, ts_module_run(m, np, args));
		} else {
			int64_t sizes[TS_MAX_SIZE_VARS];
			void *data[MAXP + 1];
			tu_ok(ctx, ts_check_args_sizes(ctx, f, np, args, TS_DEVICE_CPU, sizes));
			for (int a = 0; a < np; a++)
				data[a] = args[a]->data;
			data[np] = sizes;
			tu_ok(ctx, cg_interp_run(ctx, f, data));
		}
		guards[b] = true;
		for (int a = 0; a < np; a++)
			guards[b] &= guards_intact(&g[a]);
		for (int64_t x = 0; x < 8; x++)
			got[b][x] = x < g[np - 1].numel ? g[np - 1].base[GUARD + x] : NAN;
		for (int a = 0; a < np; a++)
			garray_free(&g[a]);
	}
}

/* Bug 1: the inner part of an nparts split of a symbolic reduction axis, unrolled, keeps the bound's extent (4 for
 * n <= 8, 2 parts) while the outer part steps by ceil(n / 2): for n = 3
 * the iterations overlap and element 2 is added twice, 9 instead of 6,
 * in the JIT, the interpreter, and the ts_lower_specialize twin (its loop
 * ran to 4, stepping by 2). */
START_TEST(test_bug1_nparts_unrolled)
{
	ts_ctx *ctx = ts_ctx_new();
	int64_t n = ts_size_var(ctx, "n", 8);
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(n), ts_float32);
	ts_iter *r = ts_reduce_axis(ctx, "r", 0, n);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(1), TS_VARS(i), TS_SUM(ctx, TS_READ(ctx, A, r->var), r));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *ro, *ri;
	tu_ok(ctx, ts_split_nparts(sc, ts_reduce_axis_of(sc, 0), 2, &ro, &ri));
	tu_ok(ctx, ts_unroll(sc, ri));
	ts_func *f = ts_lower(s, "f", 2, (ts_tensor *[]){A, C});
	tu_nonnull(ctx, f);
	ts_module *m = ts_build(ctx, f, NULL);
	tu_nonnull(ctx, m);
	float got[2][8], twin;
	bool guards[2];
	run_small(ctx, f, m, 2, (int[]){1, 1}, (const int64_t[][2]){{3}, {1}}, got, guards);
	/* the twin for n = 3 */
	int64_t three = 3;
	ts_func *tw = ts_lower_specialize(s, "twin", 2, (ts_tensor *[]){A, C}, 1, &n, &three);
	tu_nonnull(ctx, tw);
	float a[3] = {1, 2, 3}, c[1] = {NAN};
	tu_ok(ctx, cg_interp_run(ctx, tw, (void *[]){a, c}));
	twin = c[0];
	ck_assert_msg(got[0][0] == 6 && got[1][0] == 6 && twin == 6,
		      "sum of 1, 2, 3 over an nparts split, inner unrolled: jit %g, interp %g, "
		      "specialized interp %g (want 6)", got[0][0], got[1][0], twin);
	ts_module_free(m);
	ts_ctx_free(ctx);
}
END_TEST

/* Bug 2: i (constant 2) fused with j (size
 * variable n <= 4), the fused loop unrolled or vectorized: it runs to the
 * bound's 8 while i = fused / n, so for n = 1 i reaches 7 and the JIT and
 * the interpreter read A and write C up to element 7 of arrays of 2
 * (caught here by the guard zones; the interpreter on exactly-sized
 * buffers is a heap-buffer-overflow under ASan). */
START_TEST(test_bug2_fused_unrolled)
{
	char msg[2][256];
	bool ok[2];
	for (int vec = 0; vec < 2; vec++) {
		ts_ctx *ctx = ts_ctx_new();
		int64_t n = ts_size_var(ctx, "n", 4);
		ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(2, n), ts_float32);
		ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
		ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(2, n), TS_VARS(i, j),
					  ts_add(ctx, TS_READ(ctx, A, i, j), ts_float(ctx, 1)));
		ts_schedule *s = ts_create_schedule(ctx, 1, &C);
		ts_stage *sc = ts_stage_of(s, C);
		ts_axis *fused;
		tu_ok(ctx, ts_fuse(sc, ts_axis_of(sc, 0), ts_axis_of(sc, 1), &fused));
		tu_ok(ctx, vec ? ts_vectorize(sc, fused) : ts_unroll(sc, fused));
		ts_func *f = ts_lower(s, "f", 2, (ts_tensor *[]){A, C});
		tu_nonnull(ctx, f);
		ts_module *m = ts_build(ctx, f, NULL);
		tu_nonnull(ctx, m);
		float got[2][8];
		bool guards[2];
		run_small(ctx, f, m, 2, (int[]){2, 2}, (const int64_t[][2]){{2, 1}, {2, 1}}, got, guards);
		ok[vec] = guards[0] && guards[1] && got[0][0] == 2 && got[0][1] == 3 && got[1][0] == 2 &&
			  got[1][1] == 3;
		snprintf(msg[vec], sizeof(msg[vec]),
			 "%s fused loop, n = 1: jit C = {%g, %g}, guards %s; interp C = {%g, %g}, guards %s",
			 vec ? "vectorized" : "unrolled", got[0][0], got[0][1],
			 guards[0] ? "intact" : "written", got[1][0], got[1][1],
			 guards[1] ? "intact" : "written");
		ts_module_free(m);
		ts_ctx_free(ctx);
	}
	ck_assert_msg(ok[0] && ok[1], "%s\n%s\n(want C = {2, 3} and the guards intact)", msg[0], msg[1]);
}
END_TEST

/* Programs per kind, and the floor of JIT (and interpreter) runs: at most
 * NCASE per program, fewer where ts_lower refuses. */
START_TEST(test_map1) { run_kind(K_MAP1, 64, 250); }
END_TEST
START_TEST(test_map2) { run_kind(K_MAP2, 64, 250); }
END_TEST
START_TEST(test_rowred) { run_kind(K_ROWRED, 64, 220); }
END_TEST
START_TEST(test_prodcons) { run_kind(K_PRODCONS, 64, 220); }
END_TEST
START_TEST(test_chain) { run_kind(K_CHAIN, 48, 120); }
END_TEST
START_TEST(test_norm) { run_kind(K_NORM, 48, 180); }
END_TEST
START_TEST(test_stencil) { run_kind(K_STENCIL, 48, 180); }
END_TEST
START_TEST(test_matmul) { run_kind(K_MATMUL, 64, 220); }
END_TEST

int main(void)
{
	Suite *s = suite_create("symbolic_random");
	TCase *tc = tcase_create("random");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_bug1_nparts_unrolled);
	tcase_add_test(tc, test_bug2_fused_unrolled);
	tcase_add_test(tc, test_map1);
	tcase_add_test(tc, test_map2);
	tcase_add_test(tc, test_rowred);
	tcase_add_test(tc, test_prodcons);
	tcase_add_test(tc, test_chain);
	tcase_add_test(tc, test_norm);
	tcase_add_test(tc, test_stencil);
	tcase_add_test(tc, test_matmul);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
