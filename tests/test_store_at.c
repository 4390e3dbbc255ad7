/*
 * test_store_at.c - store_at / store_root (Halide's storage placement):
 * results against the reference evaluator for the classic two-stage blur
 * with the producer stored outside the loop it is computed at, on heights
 * a split does not divide; the sliding window computes each producer row
 * once (counted through the interpreter); the rules are refused by name.
 */
#include "testutil.h"

#include <string.h>

#include "lower.h"
#include "printer.h"

typedef struct blur {
	ts_ctx *ctx;
	ts_tensor *in, *bx, *by;
	ts_schedule *s;
	ts_stage *sx, *sy;
} blur;

/* bx[y, x] = in[y, x] + in[y, x + 1] + in[y, x + 2] over H + 2 rows;
 * by[y, x] = bx[y, x] + bx[y + 1, x] + bx[y + 2, x]. */
static blur make_blur(int64_t H, int64_t W)
{
	blur b = {.ctx = ts_ctx_new()};
	ts_ctx *ctx = b.ctx;
	b.in = ts_placeholder(ctx, "in", TS_SHAPE(H + 2, W + 2), ts_float32);
	ts_expr *y = ts_var(ctx, "y"), *x = ts_var(ctx, "x");
	ts_expr *r[3], *c[3];
	for (int k = 0; k < 3; k++) {
		r[k] = TS_READ(ctx, b.in, y, ts_add(ctx, x, ts_int(ctx, k)));
	}
	b.bx = ts_compute(ctx, "bx", TS_SHAPE(H + 2, W), TS_VARS(y, x),
			  ts_add(ctx, ts_add(ctx, r[0], r[1]), r[2]));
	for (int k = 0; k < 3; k++)
		c[k] = TS_READ(ctx, b.bx, ts_add(ctx, y, ts_int(ctx, k)), x);
	b.by = ts_compute(ctx, "by", TS_SHAPE(H, W), TS_VARS(y, x), ts_add(ctx, ts_add(ctx, c[0], c[1]), c[2]));
	tu_nonnull(ctx, b.by);
	b.s = ts_create_schedule(ctx, 1, &b.by);
	b.sx = ts_stage_of(b.s, b.bx);
	b.sy = ts_stage_of(b.s, b.by);
	return b;
}

static ts_func *lower_blur(blur *b)
{
	ts_func *f = ts_lower(b->s, "blur", 2, (ts_tensor *[]){b->in, b->by});
	tu_nonnull(b->ctx, f);
	return f;
}

/* PROVIDEs of bx the lowered function makes: every store to bx's buffer
 * counted by running f through the interpreter is hard to reach, so the
 * nest is counted instead: its loops' trip counts times its stores. */
typedef struct count {
	const char *name;
	int nests;
} count;

static bool count_fn(ts_stmt *s, void *data)
{
	count *c = data;
	if (s->kind == IR_S_STORE && strcmp(s->u.store.buf->name, c->name) == 0)
		c->nests++;
	return true;
}

static int stores_to(const ts_func *f, const char *buf)
{
	count c = {buf, 0};
	ir_stmt_visit(f->body, count_fn, NULL, &c);
	return c.nests;
}

/* store_root + compute_at(by, y): the window slides down the rows. */
START_TEST(test_store_root_slides)
{
	blur b = make_blur(13, 9);
	tu_ok(b.ctx, ts_compute_at(b.sx, b.sy, ts_axis_of(b.sy, 0)));
	tu_ok(b.ctx, ts_store_root(b.sx));
	ts_func *f = lower_blur(&b);
	tu_assert_golden("store_root_blur.txt", ir_func_str(b.ctx, f));
	/* one nest for the first row's window, one for each new row */
	ck_assert_int_eq(stores_to(f, "bx"), 2);
	tu_check_func(b.ctx, f, 1e-5);
	ck_assert_ptr_nonnull(strstr(ts_schedule_str(b.s), "compute_at by.y, store_root"));
	ts_ctx_free(b.ctx);
}
END_TEST

/* store_at an outer loop of a split: the window slides within each block
 * of 4 rows (whose outer loop may be parallel), 13 rows: a partial block. */
START_TEST(test_store_at_split)
{
	for (int par = 0; par < 2; par++) {
		blur b = make_blur(13, 9);
		ts_axis *yo, *yi;
		tu_ok(b.ctx, ts_split(b.sy, ts_axis_of(b.sy, 0), 4, &yo, &yi));
		if (par)
			tu_ok(b.ctx, ts_parallel(b.sy, yo));
		tu_ok(b.ctx, ts_compute_at(b.sx, b.sy, yi));
		tu_ok(b.ctx, ts_store_at(b.sx, b.sy, yo));
		ts_func *f = lower_blur(&b);
		ck_assert_int_eq(stores_to(f, "bx"), 2);
		tu_check_func(b.ctx, f, 1e-5);
		ts_ctx_free(b.ctx);
	}
}
END_TEST

/* Storage outside, but a region that does not slide (computed at the
 * column loop): each iteration computes its region into the one buffer. */
START_TEST(test_store_at_no_slide)
{
	blur b = make_blur(7, 10);
	ts_axis *xo, *xi;
	tu_ok(b.ctx, ts_split(b.sy, ts_axis_of(b.sy, 1), 4, &xo, &xi));
	tu_ok(b.ctx, ts_compute_at(b.sx, b.sy, xo));
	tu_ok(b.ctx, ts_store_at(b.sx, b.sy, ts_axis_of(b.sy, 0)));
	ts_func *f = lower_blur(&b);
	tu_check_func(b.ctx, f, 1e-5);
	/* store_at the compute_at loop itself is the default */
	blur c = make_blur(7, 10);
	tu_ok(c.ctx, ts_compute_at(c.sx, c.sy, ts_axis_of(c.sy, 0)));
	tu_ok(c.ctx, ts_store_at(c.sx, c.sy, ts_axis_of(c.sy, 0)));
	ts_func *g = lower_blur(&c);
	ck_assert_int_eq(stores_to(g, "bx"), 1);
	tu_check_func(c.ctx, g, 1e-5);
	ts_ctx_free(b.ctx);
	ts_ctx_free(c.ctx);
}
END_TEST

/* A stage computed inside the stored one is built again with the sliding
 * window's second nest: R at P's row, P stored at root and computed at
 * C's row (C[y] = P[y] + P[y + 1], P[y] = R[y] + R[y + 1]). */
START_TEST(test_store_root_chain)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(12, 5), ts_float32);
	ts_expr *y = ts_var(ctx, "y"), *x = ts_var(ctx, "x"), *one = ts_int(ctx, 1);
	ts_tensor *R = ts_compute(ctx, "R", TS_SHAPE(12, 5), TS_VARS(y, x),
				  ts_mul(ctx, TS_READ(ctx, A, y, x), ts_float(ctx, 3)));
	ts_tensor *P = ts_compute(ctx, "P", TS_SHAPE(11, 5), TS_VARS(y, x),
				  ts_add(ctx, TS_READ(ctx, R, y, x), TS_READ(ctx, R, ts_add(ctx, y, one), x)));
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(10, 5), TS_VARS(y, x),
				  ts_add(ctx, TS_READ(ctx, P, y, x), TS_READ(ctx, P, ts_add(ctx, y, one), x)));
	for (int v = 0; v < 4; v++) {
		ts_schedule *s = ts_create_schedule(ctx, 1, &C);
		ts_stage *sr = ts_stage_of(s, R), *sp = ts_stage_of(s, P), *sc = ts_stage_of(s, C);
		tu_ok(ctx, ts_compute_at(sr, sp, ts_axis_of(sp, 0)));
		tu_ok(ctx, ts_compute_at(sp, sc, ts_axis_of(sc, 0)));
		if (v & 1)
			tu_ok(ctx, ts_store_root(sp));
		if (v & 2)
			tu_ok(ctx, ts_store_root(sr));
		ts_func *f = ts_lower(s, "chain", 2, (ts_tensor *[]){A, C});
		tu_nonnull(ctx, f);
		tu_check_func(ctx, f, 1e-5);
	}
	ts_ctx_free(ctx);
}
END_TEST

/* A producer whose reads stay in bounds past its own end (a padding reads
 * its input through clamps), computed at a split's loop and stored at
 * root: the last tile's region moves back inside the shape, because the
 * buffer is the whole tensor, not the tile (it used to be written past
 * its end). */
START_TEST(test_store_root_no_overhang)
{
	static const int tails[] = {TS_TAIL_GUARD, TS_TAIL_PARTITION};
	for (int t = 0; t < 2; t++) {
		ts_ctx *ctx = ts_ctx_new();
		ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(10, 10), ts_float32);
		ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(12, 12), ts_float32);
		ts_tensor *P = ts_op_pad(ctx, A, (int64_t[]){1, 0}, (int64_t[]){1, 2}, 0.5);
		ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
		ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(12, 12), TS_VARS(i, j),
					  ts_mul(ctx, TS_READ(ctx, P, i, j), TS_READ(ctx, B, i, j)));
		ts_schedule *s = ts_create_schedule(ctx, 1, &C);
		ts_stage *sc = ts_stage_of(s, C), *sp = ts_stage_of(s, P);
		ts_axis *o, *in;
		tu_ok(ctx, ts_split_tail(sc, ts_axis_of(sc, 1), 5, (ts_tail)tails[t], &o, &in));
		tu_ok(ctx, ts_compute_at(sp, sc, o));
		tu_ok(ctx, ts_store_root(sp));
		tu_check_func_interp(ctx, ts_lower(s, "pc", 3, (ts_tensor *[]){A, B, C}), 0);
		tu_check_func(ctx, ts_lower(s, "pc", 3, (ts_tensor *[]){A, B, C}), 0);
		ts_ctx_free(ctx);
	}
}
END_TEST

/* Windows wider than their reads, stored outside: C[i] = sum_k P[i, k]
 * over 33 k, k split by 16 and fused again, split by 6 and factored
 * (rfactor) over the outer part, the rest split by 5; P computed at that
 * split and stored at C.rf's fused outer loop.  Through the factored
 * index, P's window rounds to blocks of 16 and moves back inside the
 * shape, so the two windows computed under one storage iteration span 33
 * elements where the reads span 32: the buffer must hold both windows (it
 * held the reads' 32, and the second window was written one past its
 * end). */
START_TEST(test_store_at_windows_wider_than_reads)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(4, 33), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_tensor *P = ts_compute(ctx, "P", TS_SHAPE(4, 33), TS_VARS(i, j),
				  ts_add(ctx, TS_READ(ctx, A, i, j), ts_float(ctx, 1)));
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 33);
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(4), TS_VARS(i), TS_SUM(ctx, TS_READ(ctx, P, i, k->var), k));
	for (int root = 0; root < 2; root++) {
		ts_schedule *s = ts_create_schedule(ctx, 1, &C);
		ts_stage *sp = ts_stage_of(s, P), *sc = ts_stage_of(s, C);
		ts_axis *ko, *ki, *f, *fo, *fi, *g, *fio, *fii;
		tu_ok(ctx, ts_split(sc, ts_reduce_axis_of(sc, 0), 16, &ko, &ki));
		tu_ok(ctx, ts_fuse(sc, ko, ki, &f));
		tu_ok(ctx, ts_split(sc, f, 6, &fo, &fi));
		ts_stage *sr = ts_stage_of(s, ts_rfactor(s, C, fo, 0));
		tu_nonnull(ctx, sr);
		tu_ok(ctx, ts_fuse(sr, ts_axis_of(sr, 0), ts_axis_of(sr, 1), &g));
		tu_ok(ctx, ts_split(sr, ts_reduce_axis_of(sr, 0), 5, &fio, &fii));
		tu_ok(ctx, ts_compute_at(sp, sr, fio));
		tu_ok(ctx, root ? ts_store_root(sp) : ts_store_at(sp, sr, g));
		ts_tensor *args[] = {A, C};
		tu_check_func_interp(ctx, ts_lower(s, "wide", 2, args), 1e-5);
		tu_check_func(ctx, ts_lower(s, "wide", 2, args), 1e-5);
	}
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_store_refused)
{
	blur b = make_blur(8, 8);
	ts_ctx *ctx = b.ctx;
	ts_stage *sx = b.sx, *sy = b.sy;
	ts_axis *y = ts_axis_of(sy, 0), *x = ts_axis_of(sy, 1);
	FAILS_ST(ctx, ts_store_at(NULL, sy, y), "store_at");
	FAILS_ST(ctx, ts_store_at(sx, NULL, y), "store_at(bx): target stage is NULL");
	FAILS_ST(ctx, ts_store_at(sx, sy, NULL), "store_at(bx): axis is NULL (a leaf axis of by is needed)");
	FAILS_ST(ctx, ts_compute_at(sx, sy, NULL), "compute_at(bx): axis is NULL (a leaf axis of by is needed)");
	FAILS_ST(ctx, ts_store_at(sy, sx, ts_axis_of(sx, 0)), "by is an output of the schedule");
	FAILS_ST(ctx, ts_store_at(sx, sx, ts_axis_of(sx, 0)), "cannot be stored inside itself");
	FAILS_ST(ctx, ts_store_at(sx, sy, ts_axis_of(sx, 0)), "store_at(bx): axis 'y' is not an axis of by");
	ck_assert_int_ne(ts_store_root(NULL), TS_OK);
	ts_tensor *args[2] = {b.in, b.by};
	/* stored at by.x but computed at root */
	tu_ok(ctx, ts_store_at(sx, sy, x));
	FAILS_NULL(ctx, ts_lower(b.s, "blur", 2, args),
		   "store_at(bx): bx must be computed at by (compute_at), at or inside loop 'x'");
	/* storage inside the computation */
	tu_ok(ctx, ts_compute_at(sx, sy, y));
	FAILS_NULL(ctx, ts_lower(b.s, "blur", 2, args),
		   "store_at(bx): the storage loop 'x' is inside the compute_at loop 'y'");
	/* a parallel loop between storage and computation */
	ts_clear_error(ctx);
	tu_ok(ctx, ts_store_root(sx));
	tu_ok(ctx, ts_parallel(sy, y));
	FAILS_NULL(ctx, ts_lower(b.s, "blur", 2, args),
		   "store_root(bx): loop 'y' between bx's storage and its computation is parallel");
	/* an inlined stage has no buffer */
	ts_clear_error(ctx);
	tu_ok(ctx, ts_compute_inline(sx));
	FAILS_NULL(ctx, ts_lower(b.s, "blur", 2, args), "store_root(bx): bx is inlined and has no buffer");
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("store_at");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_store_root_slides);
	tcase_add_test(tc, test_store_at_split);
	tcase_add_test(tc, test_store_at_no_slide);
	tcase_add_test(tc, test_store_root_chain);
	tcase_add_test(tc, test_store_refused);
	tcase_add_test(tc, test_store_root_no_overhang);
	tcase_add_test(tc, test_store_at_windows_wider_than_reads);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
