/*
 * prefetch.c - the loops a ts_prefetch adds at the top of a loop body
 * (called by schedule_ops while it emits the loop).
 *
 * The region is the box of the tensor's indices over the loops inside the
 * body: each index with every inner loop variable at the end of its range
 * that makes it smallest (its start) or largest (its end), judged by
 * ir_monotone, clamps to constants left out (unclamped); a dimension that
 * is not monotone in them, or whose extent
 * is not a constant, is taken whole.  Then the `ahead` variable moves
 * `offset` on.  The trailing dimensions the box covers entirely are one
 * contiguous run, walked one cache line at a time; the others get loops.
 * The box is clipped to the tensor (the last block of a split that does
 * not divide reaches past the end), and an iteration with nothing left
 * inside prefetches nothing: every address formed is in bounds.
 */
#include "arith.h"
#include "passes.h"

#define LINE_BYTES 64
#define MAX_INNER 256
#define MAX_READS 32
#define MAX_LINES 65536 /* 4 MB of 64-byte lines */
#define MAX_RANGES (MAX_INNER + 128)

typedef struct survey {
	const ts_tensor *t;
	int nreads;
	ts_expr **reads[MAX_READS]; /* index lists */
	int ninner;
	ts_expr *inner[MAX_INNER];  /* loop and let variables bound inside */
	int64_t min[MAX_INNER], ext[MAX_INNER]; /* ext 0: range unknown */
	bool overflow;
	int nrange;
	ir_range range[MAX_RANGES]; /* the loops around and inside, for the simplifier */
} survey;

static bool survey_expr(ts_expr *e, void *data)
{
	survey *v = data;
	if (e->kind == IR_READ && e->u.read.tensor == v->t) {
		if (v->nreads == MAX_READS)
			v->overflow = true;
		else
			v->reads[v->nreads++] = e->u.read.idx;
	}
	return true;
}

static bool survey_stmt(ts_stmt *s, void *data)
{
	survey *v = data;
	ts_expr *var = s->kind == IR_S_FOR ? s->u.for_.var : s->kind == IR_S_LET ? s->u.let.var : NULL;
	if (!var)
		return true;
	if (v->ninner == MAX_INNER) {
		v->overflow = true;
		return true;
	}
	int64_t mn = 0, ex = 0;
	if (s->kind == IR_S_FOR &&
	    !(ir_is_const_int(s->u.for_.min, &mn) && ir_is_const_int(s->u.for_.extent, &ex) && ex > 0))
		ex = 0;
	v->inner[v->ninner] = var;
	v->min[v->ninner] = mn;
	v->ext[v->ninner++] = ex;
	return true;
}

static bool uses_inner(const survey *v, ts_expr *e)
{
	for (int i = 0; i < v->ninner; i++)
		if (ir_expr_uses_var(e, v->inner[i]))
			return true;
	return false;
}

/* e with every inner variable at the end that makes it smallest (hi:
 * largest); NULL when some variable's direction or range is unknown. */
static ts_expr *at_end(ts_ctx *ctx, const survey *v, ts_expr *e, bool hi, ts_dtype it)
{
	for (int i = 0; e && i < v->ninner; i++) {
		ir_mono m = ir_monotone(e, v->inner[i]);
		if (m == IR_MONO_INDEP)
			continue;
		if (m == IR_MONO_UNKNOWN || v->ext[i] == 0)
			return NULL;
		int64_t at = (m == IR_MONO_UP) == hi ? v->min[i] + v->ext[i] - 1 : v->min[i];
		ts_expr *c = ts_const(ctx, v->inner[i]->dtype, at);
		e = c ? ir_substitute(ctx, e, 1, &v->inner[i], &c) : NULL;
	}
	if (e && uses_inner(v, e))
		return NULL;
	return e ? ir_index_cast(ctx, e, it) : NULL;
}

/* e without clamps to a constant (min(x*48 + z, 767) -> x*48 + z): the
 * clamp makes the box's extent depend on where it lies (min(x*48 + 47,
 * 767) - min(x*48, 767) is no constant), which would take the dimension
 * whole.  The box of the unclamped index covers every index not clamped;
 * the clamped ones are at the clamp, a line the box may miss, which a
 * prefetch (a hint) may; and the box is clipped to the tensor. */
static ts_expr *unclamped(ts_expr *e)
{
	while ((e->kind == IR_MIN || e->kind == IR_MAX) &&
	       (ir_is_const_int(e->u.bin.a, NULL) || ir_is_const_int(e->u.bin.b, NULL)))
		e = ir_is_const_int(e->u.bin.b, NULL) ? e->u.bin.a : e->u.bin.b;
	return e;
}

/* The box of dimension d over every read: start and constant extent, or
 * the whole dimension. */
static bool dim_box(ts_ctx *ctx, const survey *v, int d, ts_dtype it, ts_expr **lo, int64_t *ext)
{
	ts_expr *l = NULL, *h = NULL;
	for (int r = 0; r < v->nreads; r++) {
		ts_expr *x = unclamped(v->reads[r][d]);
		ts_expr *a = at_end(ctx, v, x, false, it);
		ts_expr *b = a ? at_end(ctx, v, x, true, it) : NULL;
		if (!b) {
			l = NULL;
			break;
		}
		l = l ? ts_min(ctx, l, a) : a;
		h = h ? ts_max(ctx, h, b) : b;
	}
	ts_expr *span = l ? ir_simplify(ctx, ts_sub(ctx, h, l), v->nrange, v->range) : NULL;
	int64_t s;
	if (span && ir_is_const_int(span, &s) && s >= 0 && s < v->t->shape[d]) {
		*lo = ir_simplify(ctx, l, v->nrange, v->range);
		*ext = s + 1;
		return *lo != NULL;
	}
	*lo = ts_const(ctx, it, 0);
	*ext = v->t->shape[d];
	return *lo != NULL;
}

/* The ranges the simplifier may assume: the loops around (from 0) and
 * inside the body (those of constant bounds). */
static void add_ranges(survey *v, const sch_loop *outer, int nouter)
{
	for (int i = 0; i < nouter && v->nrange < MAX_RANGES; i++)
		if (outer[i].extent > 0)
			v->range[v->nrange++] = (ir_range){outer[i].var, 0, outer[i].extent};
	for (int i = 0; i < v->ninner && v->nrange < MAX_RANGES; i++)
		if (v->ext[i] > 0)
			v->range[v->nrange++] = (ir_range){v->inner[i], v->min[i], v->ext[i]};
}

ts_stmt *sch_prefetch_nest(ts_ctx *ctx, const sch_prefetch *p, ts_expr *ahead, int64_t ahead_ext,
			   const sch_loop *outer, int nouter, ts_stmt *body, ts_dtype it)
{
	const ts_tensor *t = p->tensor;
	survey v = {.t = t};
	ir_stmt_visit(body, survey_stmt, survey_expr, &v);
	add_ranges(&v, outer, nouter);
	if (v.overflow) {
		ts_error(ctx, TS_ERR_INVALID, "lower: prefetch(%s): the loop body of '%s' holds more than %d "
			 "reads of it or %d loops", t->name, p->axis->name, MAX_READS, MAX_INNER);
		return NULL;
	}
	if (v.nreads == 0) {
		ts_error(ctx, TS_ERR_INVALID, "lower: prefetch(%s): nothing inside loop '%s' reads it (a "
			 "cache_read or an inline stage took its reads away)", t->name, p->axis->name);
		return NULL;
	}
	int n = t->ndim;
	/* a scalar is not worth a prefetch; no iteration is `offset` away
	 * from any other of a loop no longer than that */
	if (n == 0 || p->offset >= ahead_ext || -p->offset >= ahead_ext)
		return body;
	ts_expr *lo[TS_MAX_DIMS];
	int64_t ext[TS_MAX_DIMS] = {0};
	ts_expr *moved = ts_add(ctx, ahead, ts_const(ctx, ahead->dtype, p->offset));
	for (int d = 0; d < n; d++) {
		if (!moved || !dim_box(ctx, &v, d, it, &lo[d], &ext[d]))
			return NULL;
		lo[d] = ir_simplify(ctx, ir_substitute(ctx, lo[d], 1, &ahead, &moved), v.nrange, v.range);
		if (!lo[d])
			return NULL;
	}
	/* dimensions k.. are one contiguous run: those after k covered whole */
	int k = n - 1;
	int64_t inner = 1;
	while (k > 0 && ext[k] == t->shape[k]) {
		int64_t z;
		if (!ir_is_const_int(lo[k], &z) || z != 0)
			break;
		inner *= t->shape[k];
		k--;
	}
	/* only where iteration ahead + offset exists, tested without forming
	 * it (so nothing wraps: the moved indices are those of an iteration
	 * the loop has); then each dimension up to k clipped to the tensor: a
	 * single index must lie inside, a range runs over its part inside
	 * (the box of a split's last block may reach past the end) */
	ts_expr *exists = p->offset > 0
				  ? ts_lt(ctx, ahead, ts_const(ctx, ahead->dtype, ahead_ext - p->offset))
				  : ts_ge(ctx, ahead, ts_const(ctx, ahead->dtype, -p->offset));
	ts_expr *cond = NULL, *first[TS_MAX_DIMS], *count[TS_MAX_DIMS];
	for (int d = 0; d <= k; d++) {
		ts_expr *zero = ts_const(ctx, it, 0), *size = ts_const(ctx, it, t->shape[d]);
		ts_expr *in;
		if (ext[d] == 1 && d < k) {
			first[d] = lo[d];
			count[d] = NULL;
			in = ts_and(ctx, ts_ge(ctx, lo[d], zero), ts_lt(ctx, lo[d], size));
		} else {
			first[d] = ir_simplify(ctx, ts_max(ctx, lo[d], zero), 0, NULL);
			ts_expr *end = ts_min(ctx, ts_add(ctx, lo[d], ts_const(ctx, it, ext[d])), size);
			count[d] = ir_simplify(ctx, ts_sub(ctx, end, first[d]), 0, NULL);
			in = count[d] ? ts_gt(ctx, count[d], zero) : NULL;
		}
		in = in ? ir_simplify(ctx, in, 0, NULL) : NULL;
		int64_t c;
		if (!in || !first[d])
			return NULL;
		if (ir_is_const_int(in, &c) && c)
			continue;
		cond = cond ? ts_and(ctx, cond, in) : in;
	}
	int64_t step = LINE_BYTES / ts_dtype_bytes(t->dtype);
	if (step < 1)
		step = 1;
	/* at most MAX_LINES per iteration: a box taken whole (an index not
	 * monotone in the inner loops) can be the whole tensor */
	double per_iter = (double)((ext[k] * inner + step - 1) / step);
	for (int d = 0; d < k; d++)
		per_iter *= (double)ext[d];
	if (per_iter > MAX_LINES)
		return ts_error(ctx, TS_ERR_INVALID, "lower: prefetch(%s) at '%s': %.0f cache lines per "
				"iteration, more than %d (an index not monotone in the loops inside takes its "
				"whole dimension)", t->name, p->axis->name, per_iter, MAX_LINES), NULL;
	ts_expr *q = ts_var_typed(ctx, "pf", it);
	ts_expr *off = q ? ts_mul(ctx, q, ts_const(ctx, it, step)) : NULL;
	ts_expr *lines = ts_floordiv(ctx, ts_add(ctx, ts_mul(ctx, count[k], ts_const(ctx, it, inner)),
						 ts_const(ctx, it, step - 1)),
				     ts_const(ctx, it, step));
	ts_expr *idx[TS_MAX_DIMS], *loopv[TS_MAX_DIMS] = {0};
	/* the run's offset on the last index, the others of the run at their
	 * start: the same flat address as the offset split into indices
	 * (dimensions k+1.. are whole, so row-major strides add up), without
	 * a division per line */
	for (int d = k; d < n && off; d++)
		idx[d] = d == k ? first[d] : ts_const(ctx, it, 0);
	idx[n - 1] = off ? ts_add(ctx, idx[n - 1], off) : NULL;
	for (int d = 0; d < k; d++) {
		if (!count[d]) {
			idx[d] = first[d];
			continue;
		}
		loopv[d] = ts_var_typed(ctx, "pd", it);
		idx[d] = loopv[d] ? ts_add(ctx, first[d], loopv[d]) : NULL;
	}
	for (int d = 0; d < n; d++)
		if (!idx[d] || !(idx[d] = ir_simplify(ctx, idx[d], 0, NULL)))
			return NULL;
	lines = lines ? ir_simplify(ctx, lines, 0, NULL) : NULL;
	ts_stmt *s = lines ? ir_prefetch(ctx, ts_read(ctx, (ts_tensor *)t, n, idx)) : NULL;
	s = s ? ir_for(ctx, q, ts_const(ctx, it, 0), lines, TS_FOR_SERIAL, TS_THREAD_NONE, s) : NULL;
	for (int d = k - 1; s && d >= 0; d--)
		if (loopv[d])
			s = ir_for(ctx, loopv[d], ts_const(ctx, it, 0), count[d], TS_FOR_SERIAL,
				   TS_THREAD_NONE, s);
	if (s && cond)
		s = ir_if(ctx, cond, s, NULL);
	s = s && exists ? ir_if(ctx, exists, s, NULL) : NULL;
	return s ? ir_seq2(ctx, s, body) : NULL;
}
