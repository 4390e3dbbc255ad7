/*
 * linear.c - the canonical linear form of integer index expressions.
 *
 * An integer scalar expression built from + - and multiplication by
 * constants is flattened into sum(coef * atom) + k, where an atom is any
 * other subexpression (a variable, a division, a product of two variables)
 * compared structurally.  Because + - * are exact in the ring of integers
 * modulo 2^bits, the flattening and the cancellation of terms are valid
 * even when the expression wraps; rules that need the true integer value
 * (division, comparisons) must check with ir_lin_bound that it fits.
 *
 * The rebuilt expression lists terms in order of first appearance and the
 * constant last (`i*4 + j - k*2 + 3`); a leading negative term is written
 * after the constant (`16 - i`, `0 - i`), so the form is a fixed point.
 */
#include "arith_impl.h"

void ir_lin_init(ir_lin *l, ts_dtype t)
{
	*l = (ir_lin){.dtype = t};
}

int64_t ir_lin_wrap(ts_dtype t, int64_t v)
{
	ts_dtype s = t;
	s.code = TS_TYPE_INT;
	return ir_wrap_int(s, v);
}

static int64_t wmul(ts_dtype t, int64_t a, int64_t b)
{
	return ir_lin_wrap(t, (int64_t)((uint64_t)a * (uint64_t)b));
}

static int64_t wadd(ts_dtype t, int64_t a, int64_t b)
{
	return ir_lin_wrap(t, (int64_t)((uint64_t)a + (uint64_t)b));
}

static int64_t wneg(ts_dtype t, int64_t a)
{
	return ir_lin_wrap(t, (int64_t)(0 - (uint64_t)a));
}

/* w, the wrapped form of the exact x, noted in l when they differ. */
static int64_t noted(ir_lin *l, ir_i128 x, int64_t w)
{
	l->wrapped |= l->dtype.code == TS_TYPE_INT && x != (ir_i128)w;
	return w;
}

static int64_t lmul(ir_lin *l, int64_t a, int64_t b)
{
	return noted(l, (ir_i128)a * b, wmul(l->dtype, a, b));
}

static int64_t ladd(ir_lin *l, int64_t a, int64_t b)
{
	return noted(l, (ir_i128)a + b, wadd(l->dtype, a, b));
}

static int64_t lneg(ir_lin *l, int64_t a)
{
	return noted(l, -(ir_i128)a, wneg(l->dtype, a));
}

bool ir_lin_add_term(ts_ctx *ctx, ir_lin *l, ts_expr *atom, int64_t coef)
{
	for (int i = 0; i < l->n; i++) {
		if (ir_expr_equal(l->t[i].atom, atom)) {
			l->t[i].coef = ladd(l, l->t[i].coef, coef);
			return true;
		}
	}
	if (l->n == l->cap) {
		int cap = l->cap ? 2 * l->cap : 8;
		ir_term *t = ts_alloc_array(ctx, (size_t)cap, sizeof(*t));
		if (!t)
			return false;
		for (int i = 0; i < l->n; i++)
			t[i] = l->t[i];
		l->t = t;
		l->cap = cap;
	}
	l->t[l->n++] = (ir_term){atom, noted(l, coef, ir_lin_wrap(l->dtype, coef))};
	return true;
}

bool ir_lin_add_expr(ts_ctx *ctx, ir_lin *l, ts_expr *e, int64_t scale)
{
	if (e->kind == IR_INT_IMM) {
		l->k = ladd(l, l->k, lmul(l, scale, e->u.int_imm));
		return true;
	}
	if (e->kind == IR_ADD || e->kind == IR_SUB) {
		int64_t sb = e->kind == IR_ADD ? scale : lneg(l, scale);
		return ir_lin_add_expr(ctx, l, e->u.bin.a, scale) &&
		       ir_lin_add_expr(ctx, l, e->u.bin.b, sb);
	}
	if (e->kind == IR_MUL && e->u.bin.b->kind == IR_INT_IMM)
		return ir_lin_add_expr(ctx, l, e->u.bin.a, lmul(l, scale, e->u.bin.b->u.int_imm));
	if (e->kind == IR_MUL && e->u.bin.a->kind == IR_INT_IMM)
		return ir_lin_add_expr(ctx, l, e->u.bin.b, lmul(l, scale, e->u.bin.a->u.int_imm));
	return ir_lin_add_term(ctx, l, e, scale);
}

bool ir_lin_add_lin(ts_ctx *ctx, ir_lin *dst, const ir_lin *b, int64_t scale)
{
	for (int i = 0; i < b->n; i++)
		if (!ir_lin_add_term(ctx, dst, b->t[i].atom, lmul(dst, scale, b->t[i].coef)))
			return false;
	dst->k = ladd(dst, dst->k, lmul(dst, scale, b->k));
	dst->wrapped |= b->wrapped;
	return true;
}

bool ir_lin_has_terms(const ir_lin *l)
{
	for (int i = 0; i < l->n; i++)
		if (l->t[i].coef != 0)
			return true;
	return false;
}

/* ---- rebuilding ----------------------------------------------------------------- */

static ts_expr *cst(ts_ctx *ctx, ts_dtype t, int64_t v)
{
	return ts_const(ctx, t, ir_wrap_int(t, v));
}

/* -c, when it is representable (c is not the most negative value). */
static bool negatable(ts_dtype t, int64_t c)
{
	return c < 0 && wneg(t, c) > 0;
}

static ts_expr *term(ts_ctx *ctx, ts_dtype t, ts_expr *atom, int64_t c)
{
	return c == 1 ? atom : ts_mul(ctx, atom, cst(ctx, t, c));
}

/* acc + c*atom (acc NULL: the first term). */
static ts_expr *append(ts_ctx *ctx, ts_dtype t, ts_expr *acc, ts_expr *atom, int64_t c)
{
	if (!acc)
		return term(ctx, t, atom, c);
	if (negatable(t, c))
		return ts_sub(ctx, acc, term(ctx, t, atom, wneg(t, c)));
	return ts_add(ctx, acc, term(ctx, t, atom, c));
}

/* The divisor of floordiv/truncdiv(e, c) or floormod/truncmod(e, c) when
 * it is a non-zero constant; 0 otherwise. */
static int64_t const_divisor(const ts_expr *e, ir_expr_kind k)
{
	int64_t c;
	return e->kind == k && ir_is_const_int(e->u.bin.b, &c) ? c : 0;
}

/* a*c*floordiv(e, c) + a*floormod(e, c) is a*e exactly (and likewise for
 * the truncating pair), which index arithmetic of fused or split axes
 * produces; folding it back lets e simplify further. */
static bool merge_divmod(ts_ctx *ctx, ir_lin *l)
{
	static const ir_expr_kind div[2] = {IR_FLOORDIV, IR_TRUNCDIV};
	static const ir_expr_kind mod[2] = {IR_FLOORMOD, IR_TRUNCMOD};
	for (int i = 0; i < l->n; i++) {
		for (int p = 0; p < 2; p++) {
			int64_t c = const_divisor(l->t[i].atom, div[p]);
			if (!c || !l->t[i].coef)
				continue;
			for (int j = 0; j < l->n; j++) {
				const ts_expr *m = l->t[j].atom;
				if (const_divisor(m, mod[p]) != c || !l->t[j].coef ||
				    l->t[i].coef != wmul(l->dtype, l->t[j].coef, c) ||
				    !ir_expr_equal(m->u.bin.a, l->t[i].atom->u.bin.a))
					continue;
				int64_t a = l->t[j].coef;
				ts_expr *e = m->u.bin.a;
				l->t[i].coef = l->t[j].coef = 0;
				if (!ir_lin_add_expr(ctx, l, e, a))
					return false;
				return merge_divmod(ctx, l);
			}
		}
	}
	return true;
}

ts_expr *ir_lin_expr(ts_ctx *ctx, const ir_lin *in)
{
	ir_lin copy = *in, *l = &copy;
	copy.t = ts_alloc_array(ctx, (size_t)(in->cap ? in->cap : 1), sizeof(ir_term));
	if (!copy.t)
		return NULL;
	for (int i = 0; i < in->n; i++)
		copy.t[i] = in->t[i];
	if (!merge_divmod(ctx, l))
		return NULL;
	ts_dtype t = l->dtype;
	int first = 0;
	while (first < l->n && l->t[first].coef == 0)
		first++;
	if (first == l->n)
		return cst(ctx, t, l->k);
	bool k_first = negatable(t, l->t[first].coef);
	ts_expr *acc = k_first ? cst(ctx, t, l->k) : NULL;
	for (int i = first; i < l->n; i++) {
		if (l->t[i].coef != 0)
			acc = append(ctx, t, acc, l->t[i].atom, l->t[i].coef);
		if (!acc)
			return NULL;
	}
	if (k_first || l->k == 0)
		return acc;
	if (negatable(t, l->k))
		return ts_sub(ctx, acc, cst(ctx, t, wneg(t, l->k)));
	return ts_add(ctx, acc, cst(ctx, t, l->k));
}

/* ---- bounds --------------------------------------------------------------------- */

/* acc += c * atom; false when the product is beyond every dtype. */
static bool acc_term(ir_ival *acc, ir_i128 c, const ts_expr *atom, int n, const ir_range *r)
{
	if (c == 0)
		return true;
	ir_ival a = ir_bound_ival(atom, n, r);
	ir_i128 p = ir_mul_sat(c, a.lo), q = ir_mul_sat(c, a.hi);
	if (p <= -IR_IVAL_BIG || p >= IR_IVAL_BIG || q <= -IR_IVAL_BIG || q >= IR_IVAL_BIG)
		return false;
	acc->lo += p < q ? p : q;
	acc->hi += p < q ? q : p;
	return true;
}

bool ir_lin_bound(const ir_lin *l, int n, const ir_range *ranges, ir_ival *out)
{
	ir_ival acc = {l->k, l->k};
	for (int i = 0; i < l->n; i++)
		if (!acc_term(&acc, l->t[i].coef, l->t[i].atom, n, ranges))
			return false;
	*out = acc;
	return true;
}

static ir_i128 coef_of(const ir_lin *l, const ts_expr *atom)
{
	for (int i = 0; i < l->n; i++)
		if (ir_expr_equal(l->t[i].atom, atom))
			return l->t[i].coef;
	return 0;
}

bool ir_lin_diff_bound(const ir_lin *a, const ir_lin *b, int n, const ir_range *r, ir_ival *out)
{
	ir_ival acc = {(ir_i128)a->k - b->k, (ir_i128)a->k - b->k};
	for (int i = 0; i < a->n; i++)
		if (!acc_term(&acc, a->t[i].coef - coef_of(b, a->t[i].atom), a->t[i].atom, n, r))
			return false;
	for (int i = 0; i < b->n; i++)
		if (coef_of(a, b->t[i].atom) == 0 && !acc_term(&acc, -(ir_i128)b->t[i].coef, b->t[i].atom, n, r))
			return false;
	*out = acc;
	return true;
}
