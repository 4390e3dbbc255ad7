/*
 * test_mustfail_schedsem.c - attachments lowering must refuse: a producer
 * computed at a loop that does not enclose all of its readers.  Each
 * message names the reader that is outside the loop.  And cache_write
 * after the stage's loops were changed, which the cache would lose.
 */
#include "testutil.h"

#include <string.h>

#include "lower.h"
#include "schedule.h"

typedef struct chain {
	ts_ctx *ctx;
	ts_tensor *X, *B, *C, *D;
	ts_schedule *s;
	ts_stage *sb, *sc, *sd;
} chain;

/* B = X + 1, C = B * 3 (reads B), D = C + B (reads both). */
static chain make_chain(void)
{
	chain g = {.ctx = ts_ctx_new()};
	ts_ctx *ctx = g.ctx;
	g.X = ts_placeholder(ctx, "X", TS_SHAPE(9, 5), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	g.B = ts_compute(ctx, "B", TS_SHAPE(9, 5), TS_VARS(i, j),
			 ts_add(ctx, TS_READ(ctx, g.X, i, j), ts_float(ctx, 1)));
	g.C = ts_compute(ctx, "C", TS_SHAPE(9, 5), TS_VARS(i, j),
			 ts_mul(ctx, TS_READ(ctx, g.B, i, j), ts_float(ctx, 3)));
	g.D = ts_compute(ctx, "D", TS_SHAPE(9, 5), TS_VARS(i, j),
			 ts_add(ctx, TS_READ(ctx, g.C, i, j), TS_READ(ctx, g.B, i, j)));
	g.s = ts_create_schedule(ctx, 1, &g.D);
	g.sb = ts_stage_of(g.s, g.B);
	g.sc = ts_stage_of(g.s, g.C);
	g.sd = ts_stage_of(g.s, g.D);
	return g;
}

static ts_func *lower_chain(chain *g)
{
	return ts_lower(g->s, "chain", 2, (ts_tensor *[]){g->X, g->D});
}

/* B at C's loop, but D reads B too and is outside C's loops. */
START_TEST(test_reader_outside_consumer)
{
	chain g = make_chain();
	tu_ok(g.ctx, ts_compute_at(g.sb, g.sc, ts_axis_of(g.sc, 0)));
	ck_assert_ptr_null(lower_chain(&g));
	tu_assert_error(g.ctx, "compute_at(B): stage D reads B but is not computed inside C's loop 'i'");
	ts_ctx_free(g.ctx);
}
END_TEST

/* B into D (its consumer's consumer) while C, also reading B, is at root. */
START_TEST(test_reader_at_root)
{
	chain g = make_chain();
	tu_ok(g.ctx, ts_compute_at(g.sb, g.sd, ts_axis_of(g.sd, 1)));
	ck_assert_ptr_null(lower_chain(&g));
	tu_assert_error(g.ctx, "compute_at(B): stage C reads B but is not computed inside D's loop 'j'");
	ts_clear_error(g.ctx);
	/* C attached at an outer loop of D than B: still outside B's loop */
	tu_ok(g.ctx, ts_compute_at(g.sc, g.sd, ts_axis_of(g.sd, 0)));
	ck_assert_ptr_null(lower_chain(&g));
	tu_assert_error(g.ctx, "compute_at(B): stage C reads B but is not computed inside D's loop 'j'");
	ts_clear_error(g.ctx);
	/* both at D's j (or C deeper): legal, and correct */
	tu_ok(g.ctx, ts_compute_at(g.sb, g.sd, ts_axis_of(g.sd, 0)));
	tu_check_func(g.ctx, lower_chain(&g), 1e-5);
	ts_ctx_free(g.ctx);
}
END_TEST

/* A target that does not depend on the producer at all. */
START_TEST(test_not_a_consumer)
{
	chain g = make_chain();
	ck_assert_int_ne(ts_compute_at(g.sc, g.sb, ts_axis_of(g.sb, 0)), TS_OK);
	tu_assert_error(g.ctx, "compute_at(C): stage B does not read C, directly or through other stages");
	ts_ctx_free(g.ctx);
}
END_TEST

/* C[i] = sum_k A[i, k]: cache_write after a reorder (which once kept the
 * reduction axis in C's copy stage and wrote out of bounds in lowering),
 * after compute_at and after a loop kind was given. */
START_TEST(test_cache_write_after_changes)
{
	for (int k = 0; k < 3; k++) {
		ts_ctx *ctx = ts_ctx_new();
		ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(4, 4), ts_float32);
		ts_iter *r = ts_reduce_axis(ctx, "k", 0, 4);
		ts_expr *i = ts_var(ctx, "i");
		ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(4), TS_VARS(i), TS_SUM(ctx, TS_READ(ctx, A, i, r->var), r));
		ts_tensor *D = ts_compute(ctx, "D", TS_SHAPE(4), TS_VARS(i), TS_READ(ctx, C, i));
		ts_schedule *s = ts_create_schedule(ctx, 1, &D);
		ts_stage *sc = ts_stage_of(s, C);
		if (k == 0)
			tu_ok(ctx, ts_reorder(sc, TS_AXES(ts_reduce_axis_of(sc, 0), ts_axis_of(sc, 0))));
		else if (k == 1)
			tu_ok(ctx, ts_compute_at(sc, ts_stage_of(s, D), ts_axis_of(ts_stage_of(s, D), 0)));
		else
			tu_ok(ctx, ts_parallel(sc, ts_axis_of(sc, 0)));
		ck_assert_ptr_null(ts_cache_write(s, C, TS_SCOPE_LOCAL));
		tu_assert_error(ctx, "cache_write(C): must come before C is split, fused, reordered, annotated");
		ts_clear_error(ctx);
		/* the schedule is unchanged and still lowers right */
		tu_check_func(ctx, ts_lower(s, "f", 2, (ts_tensor *[]){A, D}), 1e-5);
		ts_ctx_free(ctx);
	}
}
END_TEST

/* C[i] = P[i, 0] + sum_k P[i, k]: the sum starts from P before its loop
 * over k, so P computed inside k is refused, naming the init (the message
 * said P was neither an argument nor computed); at i it is legal. */
START_TEST(test_init_reads_producer_inside)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(4, 5), ts_int32);
	ts_expr *p0 = ts_var(ctx, "p0"), *p1 = ts_var(ctx, "p1"), *i = ts_var(ctx, "i");
	ts_tensor *P = ts_compute(ctx, "P", TS_SHAPE(4, 5), TS_VARS(p0, p1),
				  ts_add(ctx, TS_READ(ctx, A, p0, p1), ts_int(ctx, 1)));
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 5);
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(4), TS_VARS(i),
				  ts_reduce(ctx, TS_REDUCE_SUM, TS_READ(ctx, P, i, k->var), 1, (ts_iter *[]){k},
					    TS_READ(ctx, P, i, ts_int(ctx, 0))));
	for (int at = 0; at < 2; at++) {
		ts_schedule *s = ts_create_schedule(ctx, 1, &C);
		ts_stage *sc = ts_stage_of(s, C);
		tu_ok(ctx, ts_compute_at(ts_stage_of(s, P), sc, at ? ts_axis_of(sc, 0) : ts_reduce_axis_of(sc, 0)));
		ts_func *f = ts_lower(s, "init", 2, (ts_tensor *[]){A, C});
		if (at) {
			tu_check_func(ctx, f, 0);
			continue;
		}
		ck_assert_ptr_null(f);
		tu_assert_error(ctx, "compute_at(P): C's reduction starts from P (its init), which is computed before "
				     "C's first reduction loop 'k', but P is computed inside C's loop 'k'; attach P "
				     "outside 'k'");
		ts_clear_error(ctx);
	}
	ts_ctx_free(ctx);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mustfail_schedsem");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_reader_outside_consumer);
	tcase_add_test(tc, test_reader_at_root);
	tcase_add_test(tc, test_init_reads_producer_inside);
	tcase_add_test(tc, test_not_a_consumer);
	tcase_add_test(tc, test_cache_write_after_changes);
	suite_add_tcase(s, tc);
	return s;
}


int main(void)
{
	return tu_run_suite(suite());
}
