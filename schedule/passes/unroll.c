/*
 * unroll.c - replace each UNROLLED loop by copies of its body.
 *
 * The loop must have constant bounds and an extent within TS_MAX_UNROLL.
 * Nested unrolled loops multiply, and so does the size of their body, so
 * before copying anything the pass counts the statements every unrolled
 * loop would expand to (the product of its extent and those of the
 * unrolled loops around it, times the statements of its body once the
 * unrolled loops inside are expanded) and refuses more than
 * TS_MAX_UNROLL_STMTS, blaming the innermost loop that crosses the limit.
 * The expansions of all the outermost unrolled loops of the function, which
 * loop partitioning may have copied, must fit in the same limit together.
 * Then inner loops are unrolled first; each copy has the loop variable
 * replaced by its constant value, and simplify folds the indices.
 */
#include "passes.h"
#include "schedule.h"

/* Counts saturate here, far above any limit and far from overflow. */
#define COUNT_CAP ((int64_t)1 << 62)

static int64_t mul_sat(int64_t a, int64_t b)
{
	return a != 0 && b > COUNT_CAP / a ? COUNT_CAP : a * b;
}

static int64_t add_sat(int64_t a, int64_t b)
{
	return a > COUNT_CAP - b ? COUNT_CAP : a + b;
}

/* Is s an unrolled loop with a constant extent (then in *ext)?  One with a
 * non-constant extent is reported when it is unrolled. */
static bool unrolled(const ts_stmt *s, int64_t *ext)
{
	return s->kind == IR_S_FOR && s->u.for_.kind == TS_FOR_UNROLLED &&
	       ir_is_const_int(s->u.for_.extent, ext) && *ext >= 0;
}

/* The statements s becomes once every unrolled loop in it is expanded. */
static int64_t size_of(const ts_stmt *s)
{
	int64_t ext, n = 0;
	switch (s->kind) {
	case IR_S_FOR:
		if (unrolled(s, &ext))
			return mul_sat(ext, size_of(s->u.for_.body));
		return add_sat(1, size_of(s->u.for_.body));
	case IR_S_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			n = add_sat(n, size_of(s->u.seq.s[i]));
		return n;
	case IR_S_IF:
		n = add_sat(1, size_of(s->u.if_.then_s));
		return s->u.if_.else_s ? add_sat(n, size_of(s->u.if_.else_s)) : n;
	case IR_S_LET:
		return add_sat(1, size_of(s->u.let.body));
	case IR_S_ALLOCATE:
		return add_sat(1, size_of(s->u.alloc.body));
	case IR_S_REALIZE:
		return add_sat(1, size_of(s->u.realize.body));
	default:
		return 1;
	}
}

/* An unrolled loop and the unrolled loops around it, innermost first. */
typedef struct chain {
	const struct chain *up;
	const ts_stmt *loop;
	int64_t copies; /* of loop's body: the product of the extents */
} chain;

static ts_status too_big(ts_ctx *ctx, const chain *c, int64_t body)
{
	ts_sbuf sb = {0};
	for (const chain *p = c; p; p = p->up)
		ts_sb_printf(&sb, "%s%s", p == c ? "" : " inside ", p->loop->u.for_.var->u.var.name);
	const char *loops = sb.oom ? "?" : ts_sb_str(&sb);
	ts_status st;
	if (body == 1)
		st = ts_error(ctx, TS_ERR_INVALID,
			      "unroll: unrolling %s would make %lld copies of the body (limit %d)",
			      loops, (long long)c->copies, TS_MAX_UNROLL_STMTS);
	else
		st = ts_error(ctx, TS_ERR_INVALID,
			      "unroll: unrolling %s would make %lld copies of a body of %lld statements (%lld statements, limit %d)",
			      loops, (long long)c->copies, (long long)body,
			      (long long)mul_sat(c->copies, body), TS_MAX_UNROLL_STMTS);
	ts_sb_free(&sb);
	return st;
}

static ts_status check(ts_ctx *ctx, const ts_stmt *s, const chain *up);

static ts_status check_children(ts_ctx *ctx, const ts_stmt *s, const chain *up)
{
	ts_status st = TS_OK;
	switch (s->kind) {
	case IR_S_FOR:
		return check(ctx, s->u.for_.body, up);
	case IR_S_SEQ:
		for (int i = 0; i < s->u.seq.n && st == TS_OK; i++)
			st = check(ctx, s->u.seq.s[i], up);
		return st;
	case IR_S_IF:
		st = check(ctx, s->u.if_.then_s, up);
		return st == TS_OK && s->u.if_.else_s ? check(ctx, s->u.if_.else_s, up) : st;
	case IR_S_LET:
		return check(ctx, s->u.let.body, up);
	case IR_S_ALLOCATE:
		return check(ctx, s->u.alloc.body, up);
	case IR_S_REALIZE:
		return check(ctx, s->u.realize.body, up);
	default:
		return TS_OK;
	}
}

/* Refuses an unrolled loop whose expansion, within the unrolled loops
 * around it, exceeds the limit; inner loops are checked first so that the
 * message names the innermost loop that crosses it. */
static ts_status check(ts_ctx *ctx, const ts_stmt *s, const chain *up)
{
	int64_t ext;
	if (!unrolled(s, &ext))
		return check_children(ctx, s, up);
	chain c = {up, s, mul_sat(up ? up->copies : 1, ext)};
	ts_status st = check_children(ctx, s, &c);
	if (st != TS_OK)
		return st;
	int64_t body = size_of(s->u.for_.body);
	return mul_sat(c.copies, body) > TS_MAX_UNROLL_STMTS ? too_big(ctx, &c, body) : TS_OK;
}

static ts_stmt *unroll(ts_ctx *ctx, ts_stmt *s, void *data)
{
	ts_stmt *m = ir_stmt_map_children(ctx, s, unroll, NULL, data);
	if (!m || m->kind != IR_S_FOR || m->u.for_.kind != TS_FOR_UNROLLED)
		return m;
	int64_t lo, ext;
	if (!ir_is_const_int(m->u.for_.min, &lo) || !ir_is_const_int(m->u.for_.extent, &ext)) {
		ts_error(ctx, TS_ERR_INVALID, "unroll: loop %s has a non-constant extent",
			 m->u.for_.var->u.var.name);
		return NULL;
	}
	if (ext > TS_MAX_UNROLL) {
		ts_error(ctx, TS_ERR_INVALID, "unroll: loop %s has extent %lld, beyond the limit of %d",
			 m->u.for_.var->u.var.name, (long long)ext, TS_MAX_UNROLL);
		return NULL;
	}
	ts_stmt **copies = ts_alloc_array(ctx, (size_t)ext, sizeof(ts_stmt *));
	if (!copies)
		return NULL;
	for (int64_t i = 0; i < ext; i++) {
		ts_expr *val = ts_const(ctx, m->u.for_.var->dtype, lo + i);
		copies[i] = ir_stmt_substitute(ctx, m->u.for_.body, 1, &m->u.for_.var, &val);
		if (!copies[i])
			return NULL;
	}
	return ir_seq(ctx, (int)ext, copies);
}

/* Adds up what the outermost unrolled loops expand to (visited in
 * pre-order, so their inner loops are skipped: size_of counts them). */
typedef struct total {
	int64_t stmts;
	int nests;
} total;

static bool add_nest(ts_stmt *s, void *data)
{
	total *t = data;
	int64_t ext;
	if (!unrolled(s, &ext))
		return true;
	t->stmts = add_sat(t->stmts, size_of(s));
	t->nests++;
	return false;
}

ts_stmt *pass_unroll(ts_ctx *ctx, ts_stmt *s)
{
	if (!s || check(ctx, s, NULL) != TS_OK)
		return NULL;
	total t = {0, 0};
	ir_stmt_visit(s, add_nest, NULL, &t);
	if (t.stmts > TS_MAX_UNROLL_STMTS) {
		ts_error(ctx, TS_ERR_INVALID,
			 "unroll: the %d unrolled loop nests of the function would expand to %lld statements in all (limit %d)",
			 t.nests, (long long)t.stmts, TS_MAX_UNROLL_STMTS);
		return NULL;
	}
	return unroll(ctx, s, NULL);
}
