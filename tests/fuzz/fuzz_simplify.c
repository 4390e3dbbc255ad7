/*
 * fuzz_simplify.c - libFuzzer harness for the simplifier, the interval
 * bounds and the prover (ir/arith.h).
 *
 * The input bytes, one per choice, describe up to three int32 variables with
 * ranges and an integer expression over them: every kind the simplifier
 * rewrites (+, -, *, floordiv/floormod/truncdiv/truncmod by constants and by
 * expressions, min, max, select on comparisons joined by &&, || and !, casts
 * of conditions) with small and extreme constants.  The expression is
 * simplified, and both forms are evaluated at every point of the ranges
 * (at sampled points, corners included, when there are too many) by the
 * small evaluator below, which implements ir.h's semantics: int32 wraps,
 * FLOOR* round down, TRUNC* toward zero.  A point where the original divides
 * by zero is skipped: what x/0 means is the evaluators' business, and the
 * simplifier leaves such divisions alone.  A mismatch, a value outside
 * ir_bound_of's interval, or a condition ir_can_prove claims but that is
 * false somewhere, prints both expressions and aborts: that is the finding.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera.h"
#include "int_eval.h"
#include "ir/arith.h"

#define NVARS 3
#define MAX_DEPTH 6
#define MAX_POINTS 4096

typedef struct src {
	const uint8_t *p;
	size_t n, pos;
} src;

static unsigned byte(src *s)
{
	return s->pos < s->n ? s->p[s->pos++] : 0;
}

typedef struct space {
	int nv;
	ts_expr *vars[NVARS];
	ir_range r[NVARS];
} space;

/* ---- decoding -------------------------------------------------------------- */

static const int64_t big_consts[] = {
	INT32_MAX, INT32_MIN, INT32_MAX - 1, INT32_MIN + 1, 1 << 24, -(1 << 20), 1 << 30, 65536, 255, 1000,
};

static ts_expr *gen_const(ts_ctx *ctx, src *s)
{
	unsigned b = byte(s);
	if (b < 224)
		return ts_int(ctx, (int64_t)(b % 33) - 16);
	return ts_int(ctx, big_consts[b % TS_COUNT_OF(big_consts)]);
}

static ts_expr *gen_leaf(ts_ctx *ctx, src *s, const space *sp)
{
	unsigned b = byte(s);
	if (b % 4 != 3)
		return sp->vars[(b / 4) % (unsigned)sp->nv];
	return gen_const(ctx, s);
}

static ts_expr *gen(ts_ctx *ctx, src *s, const space *sp, int depth);

static ts_expr *gen_cond(ts_ctx *ctx, src *s, const space *sp, int depth)
{
	unsigned b = byte(s);
	if (depth > 0 && b % 8 == 6)
		return ts_not(ctx, gen_cond(ctx, s, sp, depth - 1));
	if (depth > 0 && b % 8 == 7) {
		ts_expr *a = gen_cond(ctx, s, sp, depth - 1);
		ts_expr *c = gen_cond(ctx, s, sp, depth - 1);
		return (b / 8) % 2 ? ts_and(ctx, a, c) : ts_or(ctx, a, c);
	}
	ts_expr *l = gen(ctx, s, sp, depth), *r = gen(ctx, s, sp, depth);
	return ts_binary(ctx, (ir_expr_kind)(IR_EQ + b % 6), l, r);
}

/* A division: by a constant (zero included) or by an expression. */
static ts_expr *gen_div(ts_ctx *ctx, src *s, const space *sp, int depth, ts_expr *a)
{
	static const ir_expr_kind kinds[] = {IR_FLOORDIV, IR_FLOORMOD, IR_TRUNCDIV, IR_TRUNCMOD};
	unsigned b = byte(s);
	ts_expr *d;
	if (b % 3 == 2)
		d = gen(ctx, s, sp, depth);
	else
		d = (b / 4) % 8 == 0 ? gen_const(ctx, s) : ts_int(ctx, (int64_t)(byte(s) % 19) - 4);
	return ts_binary(ctx, kinds[(b / 32) % 4], a, d);
}

static ts_expr *gen(ts_ctx *ctx, src *s, const space *sp, int depth)
{
	unsigned b = byte(s);
	if (depth == 0 || b % 16 == 15)
		return gen_leaf(ctx, s, sp);
	ts_expr *a = gen(ctx, s, sp, depth - 1);
	switch (b % 16) {
	case 0: case 1: return ts_add(ctx, a, gen(ctx, s, sp, depth - 1));
	case 2: return ts_sub(ctx, a, gen(ctx, s, sp, depth - 1));
	case 3: return ts_mul(ctx, a, gen_const(ctx, s));
	case 4: return ts_mul(ctx, a, gen(ctx, s, sp, depth - 1));
	case 5: case 6: case 7: return gen_div(ctx, s, sp, depth - 1, a);
	case 8: return ts_min(ctx, a, gen(ctx, s, sp, depth - 1));
	case 9: return ts_max(ctx, a, gen(ctx, s, sp, depth - 1));
	case 10: case 11:
		return ts_select(ctx, gen_cond(ctx, s, sp, depth - 1), a, gen(ctx, s, sp, depth - 1));
	case 12: return ts_cast(ctx, ts_int32, gen_cond(ctx, s, sp, depth - 1));
	case 13: /* the split/fuse index pattern the lowering produces */
		return ts_floordiv(ctx, ts_add(ctx, ts_mul(ctx, a, ts_int(ctx, 8)), gen(ctx, s, sp, depth - 1)),
				   ts_int(ctx, 8));
	default:
		return ts_add(ctx, ts_mul(ctx, ts_floordiv(ctx, a, ts_int(ctx, 4)), ts_int(ctx, 4)),
			      ts_floormod(ctx, a, ts_int(ctx, 4)));
	}
}

/* Small ranges are enumerated; some are huge, so that overflow matters. */
static void gen_space(ts_ctx *ctx, src *s, space *sp)
{
	static const char *names[NVARS] = {"x", "y", "z"};
	static const int64_t big_extents[] = {100, 1000, 1 << 16, 1 << 20, 1 << 30, INT32_MAX};
	sp->nv = 1 + (int)(byte(s) % NVARS);
	for (int i = 0; i < sp->nv; i++) {
		unsigned m = byte(s), e = byte(s);
		int64_t min = (int64_t)(m % 33) - 16, ext = 1 + e % 16;
		if (e >= 232)
			ext = big_extents[e % TS_COUNT_OF(big_extents)];
		/* variables are int32: the range ends at INT32_MAX at most, and some
		 * ranges start at INT32_MIN or end at INT32_MAX */
		if (m >= 248)
			min = m % 2 ? INT32_MIN : INT32_MAX - ext + 1;
		if (min > INT32_MAX - ext + 1)
			min = INT32_MAX - ext + 1;
		sp->vars[i] = ts_var(ctx, names[i]);
		sp->r[i] = (ir_range){sp->vars[i], min, ext};
	}
}

/* ---- evaluation: tests/int_eval.c (ir.h semantics, int32) ------------------------- */

static void unexpected(const ts_expr *e)
{
	fprintf(stderr, "fuzz_simplify: the evaluator does not know %s\n", ir_expr_kind_name(e->kind));
	abort();
}

/* ---- checking ------------------------------------------------------------------- */

typedef struct job {
	ts_ctx *ctx;
	const space *sp;
	ts_expr *orig, *simp, *cond; /* cond: proved by ir_can_prove, or NULL */
	ir_interval bo, bs;
} job;

static void report(const job *j, const int64_t *vals, const char *what, int64_t got, int64_t want)
{
	fprintf(stderr, "fuzz_simplify: %s\n  original:   %s\n  simplified: %s\n", what,
		ir_expr_str(j->ctx, j->orig), ir_expr_str(j->ctx, j->simp));
	if (j->cond)
		fprintf(stderr, "  proved:     %s\n", ir_expr_str(j->ctx, j->cond));
	for (int i = 0; i < j->sp->nv; i++)
		fprintf(stderr, "  %s in [%lld, %lld + %lld) = %lld\n", j->sp->vars[i]->u.var.name,
			(long long)j->sp->r[i].min, (long long)j->sp->r[i].min,
			(long long)j->sp->r[i].extent, (long long)vals[i]);
	fprintf(stderr, "  got %lld, want %lld\n", (long long)got, (long long)want);
	abort();
}

static void check_bound(const job *j, const int64_t *vals, const char *which, int64_t v,
			ir_interval b)
{
	if (v >= b.min && v <= b.max)
		return;
	char msg[128];
	snprintf(msg, sizeof(msg), "the %s value lies outside ir_bound_of's [%lld, %lld]", which,
		 (long long)b.min, (long long)b.max);
	report(j, vals, msg, v, v);
}

static void check_point(const job *j, const int64_t *vals)
{
	ie_env eo = {j->sp->nv, j->sp->vars, vals, false, NULL}, es = eo;
	int64_t a = ie_eval(j->orig, &eo);
	if (eo.div0)
		return;
	int64_t b = ie_eval(j->simp, &es);
	if (eo.unknown || es.unknown)
		unexpected(eo.unknown ? eo.unknown : es.unknown);
	if (a != b)
		report(j, vals, "simplified value differs", b, a);
	check_bound(j, vals, "original", a, j->bo);
	check_bound(j, vals, "simplified", b, j->bs);
	if (j->cond) {
		ie_env ec = eo;
		int64_t c = ie_eval(j->cond, &ec);
		if (ec.unknown)
			unexpected(ec.unknown);
		if (!ec.div0 && !c)
			report(j, vals, "ir_can_prove proved a false condition", c, 1);
	}
}

static uint64_t total_points(const space *sp)
{
	uint64_t n = 1;
	for (int i = 0; i < sp->nv; i++) {
		if ((uint64_t)sp->r[i].extent > MAX_POINTS)
			return MAX_POINTS + 1;
		n *= (uint64_t)sp->r[i].extent;
	}
	return n;
}

static void each_point(const job *j)
{
	const space *sp = j->sp;
	int64_t vals[NVARS];
	for (int i = 0; i < sp->nv; i++)
		vals[i] = sp->r[i].min;
	for (;;) {
		check_point(j, vals);
		int d = 0;
		while (d < sp->nv && ++vals[d] == sp->r[d].min + sp->r[d].extent) {
			vals[d] = sp->r[d].min;
			d++;
		}
		if (d == sp->nv)
			return;
	}
}

/* Too many points: corners and near-corners often, else anywhere. */
static void sample_points(const job *j, uint64_t seed)
{
	const space *sp = j->sp;
	for (int n = 0; n < MAX_POINTS; n++) {
		int64_t vals[NVARS];
		for (int i = 0; i < sp->nv; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			uint64_t x = seed >> 33, ext = (uint64_t)sp->r[i].extent;
			int64_t off = (int64_t)(x % ext);
			switch (x % 8) {
			case 0: off = (int64_t)(x / 8 % 3 % ext); break;
			case 1: off = (int64_t)(ext - 1 - x / 8 % 3 % ext); break;
			default: break;
			}
			vals[i] = sp->r[i].min + off;
		}
		check_point(j, vals);
	}
}

static uint64_t hash(const uint8_t *data, size_t size)
{
	uint64_t h = 14695981039346656037ull; /* FNV-1a */
	for (size_t i = 0; i < size; i++)
		h = (h ^ data[i]) * 1099511628211ull;
	return h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	src s = {data, size, 0};
	ts_ctx *ctx = ts_ctx_new();
	if (!ctx)
		return 0;
	space sp;
	gen_space(ctx, &s, &sp);
	job j = {ctx, &sp, gen(ctx, &s, &sp, MAX_DEPTH), NULL, NULL, {0, 0}, {0, 0}};
	ts_expr *c = gen_cond(ctx, &s, &sp, 2);
	if (!j.orig || !c) {
		fprintf(stderr, "fuzz_simplify: building failed: %s\n", ts_last_error(ctx));
		abort();
	}
	j.simp = ir_simplify(ctx, j.orig, sp.nv, sp.r);
	if (!j.simp) {
		fprintf(stderr, "fuzz_simplify: simplify failed: %s\n  %s\n", ts_last_error(ctx),
			ir_expr_str(ctx, j.orig));
		abort();
	}
	j.bo = ir_bound_of(j.orig, sp.nv, sp.r);
	j.bs = ir_bound_of(j.simp, sp.nv, sp.r);
	if (ir_can_prove(ctx, c, sp.nv, sp.r))
		j.cond = c;
	if (total_points(&sp) <= MAX_POINTS)
		each_point(&j);
	else
		sample_points(&j, hash(data, size));
	ts_ctx_free(ctx);
	return 0;
}
