/* random_schedule.c - see random_schedule.h.  The order of the choices is
 * part of the contract: test_schedule_random's seeds name the same
 * schedules as before the generator moved here. */
#include "random_schedule.h"

#include <string.h>

int rs_pick(rs_rng *r, int n)
{
	if (r->data) /* one byte per choice, so a mutated byte changes one choice */
		return r->pos < r->size ? r->data[r->pos++] % n : 0;
	r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
	return (int)((uint32_t)(r->s >> 33) % (uint32_t)n);
}

/* A random leaf of the stage. */
static ts_axis *leaf(rs_rng *r, ts_stage *st)
{
	return st->leaf[rs_pick(r, st->nleaf)];
}

static void random_tile(rs_rng *r, ts_stage *st, ts_axis *a)
{
	ts_axis *xo, *yo, *xi, *yi;
	ts_axis *b = leaf(r, st);
	/* one pick per statement: C leaves the order of a call's arguments
	 * open, and a fuzzer's input (clang) must replay in the tests (gcc) */
	int64_t fx = 1 + rs_pick(r, 8);
	int64_t fy = 1 + rs_pick(r, 8);
	ts_tile(st, a, b, fx, fy, &xo, &yo, &xi, &yi);
}

static void random_primitive(rs_rng *r, const rs_options *o, ts_stage *st)
{
	ts_axis *out, *in, *f;
	ts_axis *a = leaf(r, st);
	int li = 0;
	while (st->leaf[li] != a)
		li++;
	switch (rs_pick(r, o->tile ? 7 : 6)) {
	case 0:
	case 1: {
		int64_t factor = o->tensorize && rs_pick(r, 3) == 0 ? 16 : 1 + rs_pick(r, 7);
		ts_split_tail(st, a, factor, rs_pick(r, 2) ? TS_TAIL_PARTITION : TS_TAIL_GUARD, &out, &in);
		break;
	}
	case 2:
		ts_split_nparts(st, a, 1 + rs_pick(r, 4), &out, &in);
		break;
	case 3:
		if (li + 1 < st->nleaf && st->leaf[li + 1]->kind == a->kind)
			ts_fuse(st, a, st->leaf[li + 1], &f);
		break;
	case 4: {
		ts_axis *b = leaf(r, st);
		if (b != a)
			ts_reorder(st, TS_AXES(b, a));
		break;
	}
	case 6:
		random_tile(r, st, a);
		break;
	default:
		if (o->tensorize && rs_pick(r, 2) == 0)
			ts_tensorize(st, a, TS_INTRIN_MMA_16X16X16); /* refused unless 16s end the nest */
		else if (a->kind == TS_ITER_REDUCE || rs_pick(r, 2))
			ts_unroll(st, a);
		else
			ts_vectorize(st, a);
		break;
	}
	ts_clear_error(st->sch->ctx); /* a refused primitive leaves the schedule as it was */
}

/* The outermost serial data leaf may become parallel. */
static void maybe_parallel(rs_rng *r, ts_stage *st)
{
	ts_axis *a = st->leaf[0];
	if (a->kind == TS_ITER_DATA && a->loop == TS_FOR_SERIAL && rs_pick(r, 2))
		ts_parallel(st, a);
}

/* C from P (M x K, or M x N when elementwise) and B. */
static ts_tensor *consumer(ts_ctx *ctx, rs_case *c, ts_tensor *P, ts_tensor *B)
{
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	if (c->kind == RS_ELEMWISE)
		return ts_compute(ctx, "C", TS_SHAPE(c->M, c->N), TS_VARS(i, j),
				  ts_mul(ctx, TS_READ(ctx, P, i, j), TS_READ(ctx, B, i, j)));
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, c->K);
	if (!k)
		return NULL;
	if (c->kind == RS_ROWSUM)
		return ts_compute(ctx, "C", TS_SHAPE(c->M), TS_VARS(i),
				  TS_SUM(ctx, TS_READ(ctx, P, i, k->var), k));
	return ts_compute(ctx, "C", TS_SHAPE(c->M, c->N), TS_VARS(i, j),
			  TS_SUM(ctx, ts_mul(ctx, TS_READ(ctx, P, i, k->var), TS_READ(ctx, B, k->var, j)), k));
}

/* With o->pad, half the time: the paddings of P = pad(A), each 0..2 and
 * leaving A at least one element wide; false for P = A + 1. */
static bool pick_pads(rs_rng *r, const rs_options *o, const int64_t *ext, int64_t *before,
		      int64_t *after)
{
	if (!o->pad || !rs_pick(r, 2))
		return false;
	for (int d = 0; d < 2; d++) {
		before[d] = rs_pick(r, 3), after[d] = rs_pick(r, 3);
		while (before[d] + after[d] >= ext[d])
			*(before[d] > after[d] ? &before[d] : &after[d]) -= 1;
	}
	return true;
}

static bool build_compute(ts_ctx *ctx, rs_rng *r, const rs_options *o, rs_case *c)
{
	int64_t pn = c->kind == RS_ELEMWISE ? c->N : c->K, pb[2] = {0}, pa[2] = {0};
	bool padded = pick_pads(r, o, (int64_t[]){c->M, pn}, pb, pa);
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(c->M - pb[0] - pa[0], pn - pb[1] - pa[1]),
				      ts_float32);
	ts_tensor *B = c->kind == RS_ELEMWISE ? ts_placeholder(ctx, "B", TS_SHAPE(c->M, c->N), ts_float32)
					      : ts_placeholder(ctx, "B", TS_SHAPE(c->K, c->N), ts_float32);
	ts_expr *pi = ts_var(ctx, "pi"), *pk = ts_var(ctx, "pk");
	ts_tensor *P = padded ? ts_op_pad(ctx, A, pb, pa, 0.5)
			      : ts_compute(ctx, "P", TS_SHAPE(c->M, pn), TS_VARS(pi, pk),
					   ts_add(ctx, TS_READ(ctx, A, pi, pk), ts_float(ctx, 1)));
	if (!P)
		return false;
	ts_tensor *C = consumer(ctx, c, P, B);
	if (!C)
		return false;
	c->P = P;
	c->nargs = 0;
	c->args[c->nargs++] = A;
	if (c->kind != RS_ROWSUM)
		c->args[c->nargs++] = B;
	c->args[c->nargs++] = C;
	c->s = ts_create_schedule(ctx, 1, &C);
	return c->s != NULL;
}

/* C's reduction factored over one of its reduction leaves (C.rf scheduled
 * at random, and sometimes computed at a loop of C); the choices are made
 * only with o->rfactor, so seeds without it keep their schedules.  Returns
 * C.rf's stage, which then reads P instead of C, or NULL. */
static ts_stage *maybe_rfactor(rs_rng *r, const rs_options *o, rs_case *c, ts_stage *sc)
{
	ts_axis *red[TS_MAX_LOOP_NEST];
	int n = 0;
	if (!o->rfactor || rs_pick(r, 3) != 0)
		return NULL;
	for (int i = 0; i < sc->nleaf && n < (int)TS_COUNT_OF(red); i++)
		if (sc->leaf[i]->kind == TS_ITER_REDUCE)
			red[n++] = sc->leaf[i];
	if (n == 0)
		return NULL;
	ts_tensor *C = c->args[c->nargs - 1];
	ts_axis *kf = red[rs_pick(r, n)];
	ts_tensor *rf = ts_rfactor(c->s, C, kf, rs_pick(r, C->ndim + 1));
	ts_stage *srf = rf ? ts_stage_of(c->s, rf) : NULL;
	if (srf) {
		for (int k = rs_pick(r, 4); k > 0; k--)
			random_primitive(r, o, srf);
		maybe_parallel(r, srf);
		if (rs_pick(r, 2))
			ts_compute_at(srf, sc, leaf(r, sc));
	}
	ts_clear_error(c->s->ctx);
	return srf;
}

/* With o->store_at, P computed at a loop of its reader sometimes gets its
 * buffer at root or at that loop or one outside it; the choices are made
 * only then, so seeds without it keep their schedules. */
static void maybe_store(rs_rng *r, const rs_options *o, ts_stage *sp, ts_stage *reader)
{
	if (!o->store_at || sp->attach != SCH_ATTACH_AT || rs_pick(r, 2) == 0)
		return;
	int at = 0;
	while (at < reader->nleaf && reader->leaf[at] != sp->attach_axis)
		at++;
	int pick = rs_pick(r, at + 2); /* at + 1: store_root */
	if (pick > at || at >= reader->nleaf)
		ts_store_root(sp);
	else
		ts_store_at(sp, reader, reader->leaf[pick]);
}

/* With o->prefetch, st (which reads input t) sometimes prefetches t at a
 * random leaf, ahead along that leaf or another leaf of st or of the stage
 * st is computed at, by -3..3 (0 refused).  The choices are made only
 * then, so seeds without it keep their schedules. */
static void maybe_prefetch(rs_rng *r, const rs_options *o, ts_stage *st, ts_tensor *t)
{
	if (!o->prefetch || !st || rs_pick(r, 2) == 0)
		return;
	ts_axis *at = leaf(r, st);
	ts_stage *outer = st->attach == SCH_ATTACH_AT && rs_pick(r, 2) ? st->attach_stage : st;
	ts_axis *ahead = rs_pick(r, 2) ? at : leaf(r, outer);
	ts_prefetch_ahead(st, t, at, ahead, rs_pick(r, 7) - 3);
	ts_clear_error(st->sch->ctx);
}

/* With o->tensorize, half the time: the innermost two or three leaves of
 * st split by 16 where they are longer and tensorized (refused unless the
 * nest is then 16s: a split of a shorter axis, or one made earlier by
 * another factor, leaves it as it is). */
static void maybe_tensorize(rs_rng *r, const rs_options *o, ts_stage *st)
{
	if (!o->tensorize || rs_pick(r, 2))
		return;
	int n = 2 + rs_pick(r, 2), nout = 0;
	if (st->nleaf < n)
		return;
	ts_axis *outs[3], *ins[3], *order[6];
	for (int i = 0; i < n; i++) {
		ts_axis *a = st->leaf[st->nleaf - n + i], *out; /* each split adds one leaf before */
		ins[i] = a;
		if (a->extent > 16 && ts_split(st, a, 16, &out, &ins[i]) == TS_OK)
			outs[nout++] = out;
	}
	for (int i = 0; i < nout; i++)
		order[i] = outs[i];
	for (int i = 0; i < n; i++)
		order[nout + i] = ins[i];
	if (nout)
		ts_reorder(st, nout + n, order);
	ts_tensorize(st, ins[0], TS_INTRIN_MMA_16X16X16);
}

static void random_schedule(rs_rng *r, const rs_options *o, rs_case *c)
{
	ts_schedule *s = c->s;
	ts_tensor *C = c->args[c->nargs - 1];
	ts_stage *cache = NULL;
	if (rs_pick(r, 3) == 0) /* accumulate in a cache computed inside C's loops */
		cache = ts_stage_of(s, ts_cache_write(s, C, TS_SCOPE_LOCAL));
	ts_clear_error(s->ctx);
	ts_stage *sc = ts_stage_of(s, C);
	ts_stage *sp = ts_stage_of(s, c->P);
	for (int n = rs_pick(r, 6); n > 0; n--)
		random_primitive(r, o, sc);
	for (int n = rs_pick(r, 3); n > 0; n--)
		random_primitive(r, o, sp);
	ts_stage *rf = cache ? NULL : maybe_rfactor(r, o, c, sc);
	maybe_parallel(r, sc);
	if (cache) {
		ts_compute_at(cache, sc, leaf(r, sc));
		for (int n = rs_pick(r, 4); n > 0; n--)
			random_primitive(r, o, cache);
	}
	/* P is read by the cache stage or C.rf when there is one */
	ts_stage *reader = cache ? cache : rf ? rf : sc;
	maybe_tensorize(r, o, reader); /* before anything is placed at its leaves */
	switch (rs_pick(r, 3)) {
	case 0: ts_compute_inline(sp); break;
	case 1: ts_compute_at(sp, reader, leaf(r, reader)); break;
	default: break;
	}
	maybe_store(r, o, sp, reader);
	/* the choice made only then, so seeds without it keep their schedules */
	if (o->double_buffer && rs_pick(r, 2))
		ts_double_buffer(sp);
	/* B is read by the reduction's stage (or C), A by P or, P inlined,
	 * by P's reader */
	if (c->kind != RS_ROWSUM)
		maybe_prefetch(r, o, reader, c->args[1]);
	maybe_prefetch(r, o, sp->attach == SCH_ATTACH_INLINE ? reader : sp, c->args[0]);
	ts_clear_error(s->ctx);
}

bool rs_build(ts_ctx *ctx, rs_rng *r, const rs_options *o, rs_case *c)
{
	memset(c, 0, sizeof(*c));
	c->kind = o->any_kind ? (rs_kind)rs_pick(r, 3) : RS_MATMUL;
	c->M = 1 + rs_pick(r, o->max_mn);
	c->N = 1 + rs_pick(r, o->max_mn);
	c->K = 1 + rs_pick(r, o->max_k);
	if (!build_compute(ctx, r, o, c))
		return false;
	random_schedule(r, o, c);
	return true;
}

bool rs_lower_refusal_ok(const char *msg)
{
	return strstr(msg, "lanes") || strstr(msg, "unroll") ||
	       strstr(msg, "its iterations would share the buffer") ||
	       (strstr(msg, "lower: prefetch(") && (strstr(msg, "does not enclose") ||
						    strstr(msg, "was split or fused"))) ||
	       (strstr(msg, "lower: stage ") && strstr(msg, "no loops for its prefetch")) ||
	       /* P inline or at root, at a thread or parallel loop, or
		* stored further out than it is computed */
	       strstr(msg, "lower: double_buffer");
}
