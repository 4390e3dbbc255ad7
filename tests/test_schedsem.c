/*
 * test_schedsem.c - schedule semantics as TVM and Halide users expect them:
 * one index variable shared by several computes, distinct loops printed
 * distinctly, and compute_at into any stage whose loops enclose every
 * reader of the producer.  Each schedule is checked against the reference
 * evaluator on shapes the split factors do not divide.
 */
#include "testutil.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lower.h"
#include "printer.h"
#include "schedule.h"

/* B(i, j) = X(i, j) * 2 and C(j, i) = B(i, j) + X(i, j), both over the same
 * ts_var objects i and j. */
typedef struct shared {
	ts_ctx *ctx;
	ts_tensor *X, *B, *C;
	ts_schedule *s;
	ts_stage *sb, *sc;
} shared;

static shared shared_vars(int64_t M, int64_t N)
{
	shared g = {.ctx = ts_ctx_new()};
	ts_ctx *ctx = g.ctx;
	g.X = ts_placeholder(ctx, "X", TS_SHAPE(M, N), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	g.B = ts_compute(ctx, "B", TS_SHAPE(M, N), TS_VARS(i, j),
			 ts_mul(ctx, TS_READ(ctx, g.X, i, j), ts_float(ctx, 2)));
	/* C's first index is j and its second i: a variable that indexes one
	 * dimension of B indexes another of C */
	g.C = ts_compute(ctx, "C", TS_SHAPE(N, M), TS_VARS(j, i),
			 ts_add(ctx, TS_READ(ctx, g.B, i, j), TS_READ(ctx, g.X, i, j)));
	tu_nonnull(ctx, g.C);
	g.s = ts_create_schedule(ctx, 1, &g.C);
	tu_nonnull(ctx, g.s);
	g.sb = ts_stage_of(g.s, g.B);
	g.sc = ts_stage_of(g.s, g.C);
	return g;
}

static ts_func *lower_shared(shared *g)
{
	return ts_lower(g->s, "shared", 2, (ts_tensor *[]){g->X, g->C});
}

START_TEST(test_shared_vars_root)
{
	shared g = shared_vars(7, 5);
	tu_check_func(g.ctx, lower_shared(&g), 1e-5);
	ts_ctx_free(g.ctx);
}
END_TEST

START_TEST(test_shared_vars_compute_at)
{
	{
		/* B's loops i, j inside C's loops j, i: the same variables */
		shared g = shared_vars(7, 5);
		tu_ok(g.ctx, ts_compute_at(g.sb, g.sc, ts_axis_of(g.sc, 1)));
		tu_check_func(g.ctx, lower_shared(&g), 1e-5);
		ts_ctx_free(g.ctx);
	}
	for (int at = 0; at < 2; at++) {
		shared g = shared_vars(7, 5);
		ts_axis *o, *in, *bo, *bi;
		tu_ok(g.ctx, ts_split(g.sc, ts_axis_of(g.sc, 1 - at), 3, &o, &in));
		tu_ok(g.ctx, ts_split(g.sb, ts_axis_of(g.sb, 1), 2, &bo, &bi));
		tu_ok(g.ctx, ts_compute_at(g.sb, g.sc, at ? in : ts_axis_of(g.sc, 0)));
		tu_check_func(g.ctx, lower_shared(&g), 1e-5);
		ts_ctx_free(g.ctx);
	}
}
END_TEST

/* One reduction axis shared by two sums, one nested inside the other. */
START_TEST(test_shared_reduce_axis)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(6, 9), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 9);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *S = ts_compute(ctx, "S", TS_SHAPE(6), TS_VARS(i), TS_SUM(ctx, TS_READ(ctx, X, i, k->var), k));
	ts_tensor *T = ts_compute(ctx, "T", TS_SHAPE(6), TS_VARS(i),
				  TS_SUM(ctx, ts_mul(ctx, TS_READ(ctx, X, i, k->var), TS_READ(ctx, S, i)), k));
	ts_schedule *s = ts_create_schedule(ctx, 1, &T);
	ts_stage *st = ts_stage_of(s, T);
	tu_ok(ctx, ts_compute_at(ts_stage_of(s, S), st, ts_axis_of(st, 0)));
	tu_check_func(ctx, ts_lower(s, "shared_k", 2, (ts_tensor *[]){X, T}), 1e-5);
	ts_ctx_free(ctx);
}
END_TEST

/* Two computes share their variables, one with them swapped, and both are
 * attached or inlined at a sum's reduction axis: the same objects
 * everywhere.  (A reduction axis's own variable is no compute's index:
 * ts_compute refuses that, test_te.c.) */
START_TEST(test_shared_vars_inline_and_reduce)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(5, 7), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 7);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j"), *kv = k->var;
	ts_tensor *T = ts_compute(ctx, "T", TS_SHAPE(7, 5), TS_VARS(j, i),
				  ts_sub(ctx, TS_READ(ctx, X, i, j), ts_float(ctx, 0.5)));
	ts_tensor *U = ts_compute(ctx, "U", TS_SHAPE(5, 7), TS_VARS(i, j),
				  ts_mul(ctx, TS_READ(ctx, T, j, i), TS_READ(ctx, X, i, j)));
	ts_tensor *S = ts_compute(ctx, "S", TS_SHAPE(5), TS_VARS(i), TS_SUM(ctx, TS_READ(ctx, U, i, kv), k));
	tu_nonnull(ctx, S);
	for (int inl = 0; inl < 2; inl++) {
		ts_schedule *s = ts_create_schedule(ctx, 1, &S);
		ts_stage *ss = ts_stage_of(s, S);
		if (inl)
			tu_ok(ctx, ts_compute_inline(ts_stage_of(s, T)));
		else
			tu_ok(ctx, ts_compute_at(ts_stage_of(s, T), ss, ts_reduce_axis_of(ss, 0)));
		tu_ok(ctx, ts_compute_at(ts_stage_of(s, U), ss, ts_reduce_axis_of(ss, 0)));
		tu_check_func(ctx, ts_lower(s, "reduce_var", 2, (ts_tensor *[]){X, S}), 1e-5);
	}
	ts_ctx_free(ctx);
}
END_TEST

static int count(const char *text, const char *part)
{
	int n = 0;
	for (const char *p = strstr(text, part); p; p = strstr(p + 1, part))
		n++;
	return n;
}

/* Two stages split alike: their loops print as i.outer and i.outer_1, in
 * program order, whether the nests follow each other or nest. */
START_TEST(test_distinct_loop_names)
{
	for (int nested = 0; nested < 2; nested++) {
		shared g = shared_vars(7, 5);
		ts_axis *o, *in, *o2, *in2;
		tu_ok(g.ctx, ts_split(g.sb, ts_axis_of(g.sb, 0), 2, &o, &in));
		tu_ok(g.ctx, ts_split(g.sc, ts_axis_of(g.sc, 1), 4, &o2, &in2));
		if (nested)
			tu_ok(g.ctx, ts_compute_at(g.sb, g.sc, o2));
		ts_func *f = lower_shared(&g);
		tu_nonnull(g.ctx, f);
		const char *text = ir_func_str(g.ctx, f);
		ck_assert_msg(count(text, "(i.outer,") == 1 && count(text, "(i.outer_1,") == 1,
			      "nested %d:\n%s", nested, text);
		ck_assert_msg(strstr(text, "(i.outer,") < strstr(text, "(i.outer_1,"), "%s", text);
		tu_check_func(g.ctx, f, 1e-5);
		ts_ctx_free(g.ctx);
	}
}
END_TEST

/* cache_write copies the stage's axis names; the copy's loops are numbered. */
START_TEST(test_cache_write_names)
{
	shared g = shared_vars(6, 4);
	ts_tensor *cw = ts_cache_write(g.s, g.C, TS_SCOPE_LOCAL);
	tu_nonnull(g.ctx, cw);
	ts_func *f = lower_shared(&g);
	tu_nonnull(g.ctx, f);
	const char *text = ir_func_str(g.ctx, f);
	ck_assert_msg(strstr(text, "(j_1,") && !strstr(text, "(j_3,"), "%s", text);
	tu_check_func(g.ctx, f, 1e-5);
	ts_ctx_free(g.ctx);
}
END_TEST

/* softmax over rows: MX = max_k X, E = exp(X - MX), S = sum_k E, O = E / S. */
typedef struct softmax {
	ts_ctx *ctx;
	ts_tensor *X, *MX, *E, *S, *O;
	ts_schedule *s;
	ts_stage *smx, *se, *ss, *so;
} softmax;

static softmax softmax_graph(int64_t N, int64_t M)
{
	softmax g = {.ctx = ts_ctx_new()};
	ts_ctx *ctx = g.ctx;
	g.X = ts_placeholder(ctx, "X", TS_SHAPE(N, M), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, M), *k2 = ts_reduce_axis(ctx, "k", 0, M);
	ts_expr *n = ts_var(ctx, "n"), *m = ts_var(ctx, "m");
	g.MX = ts_compute(ctx, "MX", TS_SHAPE(N), TS_VARS(n), TS_MAX(ctx, TS_READ(ctx, g.X, n, k->var), k));
	g.E = ts_compute(ctx, "E", TS_SHAPE(N, M), TS_VARS(n, m),
			 ts_exp(ctx, ts_sub(ctx, TS_READ(ctx, g.X, n, m), TS_READ(ctx, g.MX, n))));
	g.S = ts_compute(ctx, "S", TS_SHAPE(N), TS_VARS(n), TS_SUM(ctx, TS_READ(ctx, g.E, n, k2->var), k2));
	g.O = ts_compute(ctx, "O", TS_SHAPE(N, M), TS_VARS(n, m),
			 ts_div(ctx, TS_READ(ctx, g.E, n, m), TS_READ(ctx, g.S, n)));
	tu_nonnull(ctx, g.O);
	g.s = ts_create_schedule(ctx, 1, &g.O);
	g.smx = ts_stage_of(g.s, g.MX);
	g.se = ts_stage_of(g.s, g.E);
	g.ss = ts_stage_of(g.s, g.S);
	g.so = ts_stage_of(g.s, g.O);
	return g;
}

static ts_func *lower_softmax(softmax *g)
{
	return ts_lower(g->s, "softmax", 2, (ts_tensor *[]){g->X, g->O});
}

/* MX's only reader E, and E's readers S and O, all inside O's row loop:
 * MX goes into its consumer's consumer. */
START_TEST(test_softmax_into_output_row)
{
	for (int split = 0; split < 2; split++) {
		softmax g = softmax_graph(7, 10);
		ts_axis *row = ts_axis_of(g.so, 0), *o, *in;
		if (split) {
			tu_ok(g.ctx, ts_split(g.so, row, 3, &row, &in));
			tu_ok(g.ctx, ts_split(g.so, ts_axis_of(g.so, 1), 4, &o, &in));
		}
		/* attached before their readers are: the rule is checked at lowering */
		tu_ok(g.ctx, ts_compute_at(g.smx, g.so, row));
		tu_ok(g.ctx, ts_compute_at(g.ss, g.so, row));
		tu_ok(g.ctx, ts_compute_at(g.se, g.so, row));
		tu_check_func(g.ctx, lower_softmax(&g), 1e-5);
		ts_ctx_free(g.ctx);
	}
}
END_TEST

/* E inlined: MX is read by S and O, S is attached inside O's row loop. */
START_TEST(test_softmax_inlined_exp)
{
	softmax g = softmax_graph(9, 6);
	ts_axis *o, *in;
	tu_ok(g.ctx, ts_split(g.so, ts_axis_of(g.so, 0), 2, &o, &in));
	tu_ok(g.ctx, ts_compute_inline(g.se));
	tu_ok(g.ctx, ts_compute_at(g.smx, g.so, o));
	tu_ok(g.ctx, ts_compute_at(g.ss, g.so, in));
	tu_check_func(g.ctx, lower_softmax(&g), 1e-5);
	ts_ctx_free(g.ctx);
}
END_TEST

/* P read by R1 (P[i], P[i+1]) and R2 (P[i+2]), both attached in Out's loops:
 * P's region is the union of what both need. */
START_TEST(test_two_readers_one_nest)
{
	for (int deep = 0; deep < 3; deep++) {
		ts_ctx *ctx = ts_ctx_new();
		const int64_t N = 23;
		ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(N), ts_float32);
		ts_expr *i = ts_var(ctx, "i");
		ts_tensor *P = ts_compute(ctx, "P", TS_SHAPE(N), TS_VARS(i),
					  ts_mul(ctx, TS_READ(ctx, X, i), ts_float(ctx, 2)));
		ts_tensor *R1 = ts_compute(ctx, "R1", TS_SHAPE(N - 1), TS_VARS(i),
					   ts_add(ctx, TS_READ(ctx, P, i),
						  TS_READ(ctx, P, ts_add(ctx, i, ts_int(ctx, 1)))));
		ts_tensor *R2 = ts_compute(ctx, "R2", TS_SHAPE(N - 2), TS_VARS(i),
					   ts_mul(ctx, TS_READ(ctx, P, ts_add(ctx, i, ts_int(ctx, 2))),
						  ts_float(ctx, 3)));
		ts_tensor *Out = ts_compute(ctx, "Out", TS_SHAPE(N - 2), TS_VARS(i),
					    ts_sub(ctx, TS_READ(ctx, R1, i), TS_READ(ctx, R2, i)));
		ts_schedule *s = ts_create_schedule(ctx, 1, &Out);
		ts_stage *so = ts_stage_of(s, Out);
		ts_axis *o, *in;
		tu_ok(ctx, ts_split(so, ts_axis_of(so, 0), 4, &o, &in));
		tu_ok(ctx, ts_compute_at(ts_stage_of(s, R1), so, deep == 1 ? in : o));
		tu_ok(ctx, ts_compute_at(ts_stage_of(s, R2), so, deep == 2 ? in : o));
		tu_ok(ctx, ts_compute_at(ts_stage_of(s, P), so, o));
		tu_check_func(ctx, ts_lower(s, "two_readers", 2, (ts_tensor *[]){X, Out}), 1e-5);
		ts_ctx_free(ctx);
	}
}
END_TEST

/* P(i, j) = X(i, j) + 1, C(i, j) = P(i, j) * P(i, j) over 8 x 6. */
typedef struct two {
	ts_ctx *ctx;
	ts_tensor *X, *P, *C;
	ts_schedule *s;
	ts_stage *sp, *sc;
} two;

static two two_stage(void)
{
	two g = {.ctx = ts_ctx_new()};
	ts_ctx *ctx = g.ctx;
	g.X = ts_placeholder(ctx, "X", TS_SHAPE(8, 6), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	g.P = ts_compute(ctx, "P", TS_SHAPE(8, 6), TS_VARS(i, j),
			 ts_add(ctx, TS_READ(ctx, g.X, i, j), ts_float(ctx, 1)));
	g.C = ts_compute(ctx, "C", TS_SHAPE(8, 6), TS_VARS(i, j),
			 ts_mul(ctx, TS_READ(ctx, g.P, i, j), TS_READ(ctx, g.P, i, j)));
	g.s = ts_create_schedule(ctx, 1, &g.C);
	g.sp = ts_stage_of(g.s, g.P);
	g.sc = ts_stage_of(g.s, g.C);
	return g;
}

static ts_func *lower_two(two *g)
{
	return ts_lower(g->s, "two", 2, (ts_tensor *[]){g->X, g->C});
}

/* An attached stage: where, and its loops' extents after bound inference. */
START_TEST(test_schedule_str_attached)
{
	two g = two_stage();
	ts_axis *o, *in;
	tu_ok(g.ctx, ts_split(g.sc, ts_axis_of(g.sc, 0), 3, &o, &in));
	tu_ok(g.ctx, ts_compute_at(g.sp, g.sc, o));
	const char *text = ts_schedule_str(g.s);
	tu_nonnull(g.ctx, text);
	ck_assert_msg(strstr(text, "stage P: compute_at C.i.outer\n  loops: i[8] j[6]\n"), "%s", text);
	ck_assert_msg(strstr(text, "after bound inference:\n"), "%s", text);
	ck_assert_msg(strstr(text, "P: compute_at C.i.outer: [min(i.outer*3, 5), 3] x [0, 6]\n  loops: i[3] j[6]\n"),
		      "%s", text);
	ck_assert_int_eq(ts_last_status(g.ctx), TS_OK);
	tu_check_func(g.ctx, lower_two(&g), 1e-5);
	ts_ctx_free(g.ctx);
}
END_TEST

/* A schedule lowering refuses prints why, and leaves no error behind. */
START_TEST(test_schedule_str_refused)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(5), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *B = ts_compute(ctx, "B", TS_SHAPE(5), TS_VARS(i), ts_exp(ctx, TS_READ(ctx, X, i)));
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(5), TS_VARS(i), ts_exp(ctx, TS_READ(ctx, B, i)));
	ts_tensor *D = ts_compute(ctx, "D", TS_SHAPE(5), TS_VARS(i),
				  ts_add(ctx, TS_READ(ctx, C, i), TS_READ(ctx, B, i)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &D);
	ts_stage *sc = ts_stage_of(s, C);
	tu_ok(ctx, ts_compute_at(ts_stage_of(s, B), sc, ts_axis_of(sc, 0)));
	const char *text = ts_schedule_str(s);
	tu_nonnull(ctx, text);
	ck_assert_msg(strstr(text, "(lowering fails: compute_at(B): stage D reads B but is not computed inside C's loop 'i'"),
		      "%s", text);
	ck_assert_int_eq(ts_last_status(ctx), TS_OK);
	ts_ctx_free(ctx);
}
END_TEST

/* Runs ts_lower with the passes printed; returns what went to stderr. */
static const char *lower_printing(two *g, ts_func **f)
{
	static char buf[1 << 16];
	FILE *tmp = tmpfile();
	ck_assert_ptr_nonnull(tmp);
	int saved = dup(fileno(stderr));
	fflush(stderr);
	dup2(fileno(tmp), fileno(stderr));
	ts_ctx_set_print_passes(g->ctx, 1);
	*f = lower_two(g);
	ts_ctx_set_print_passes(g->ctx, 0);
	fflush(stderr);
	dup2(saved, fileno(stderr));
	close(saved);
	rewind(tmp);
	size_t n = fread(buf, 1, sizeof(buf) - 1, tmp);
	buf[n] = 0;
	fclose(tmp);
	return buf;
}

/* vectorize on a loop with a loop inside: warned in the schedule text,
 * recorded by lowering, printed once with the passes; the result is right. */
START_TEST(test_vectorize_demoted)
{
	two g = two_stage();
	tu_ok(g.ctx, ts_compute_inline(g.sp));
	tu_ok(g.ctx, ts_vectorize(g.sc, ts_axis_of(g.sc, 0)));
	const char *text = ts_schedule_str(g.s);
	ck_assert_msg(strstr(text, "  warning: vectorize(C): 'i' encloses loop 'j'; lowering makes it serial"),
		      "%s", text);
	ts_func *f;
	const char *err = lower_printing(&g, &f);
	tu_nonnull(g.ctx, f);
	ck_assert_str_eq(ts_lower_warnings(f), "vectorize: loop 'i' runs serially: its body has an inner loop\n");
	const char *w = strstr(err, "// ---- warnings\nvectorize: loop 'i' runs serially");
	ck_assert_msg(w && !strstr(w + 1, "// ---- warnings"), "%s", err);
	tu_check_func(g.ctx, f, 1e-5);
	ts_ctx_free(g.ctx);
}
END_TEST

/* A stage attached inside the vectorized loop: warned and recorded. */
START_TEST(test_vectorize_demoted_by_attach)
{
	two g = two_stage();
	tu_ok(g.ctx, ts_vectorize(g.sc, ts_axis_of(g.sc, 1)));
	tu_ok(g.ctx, ts_compute_at(g.sp, g.sc, ts_axis_of(g.sc, 1)));
	const char *text = ts_schedule_str(g.s);
	ck_assert_msg(strstr(text, "  warning: vectorize(C): 'j' encloses stage P;"), "%s", text);
	ts_func *f = lower_two(&g);
	tu_nonnull(g.ctx, f);
	ck_assert_msg(strstr(ts_lower_warnings(f), "vectorize: loop 'j' runs serially: its body has an "),
		      "%s", ts_lower_warnings(f));
	tu_check_func(g.ctx, f, 1e-5);
	ts_ctx_free(g.ctx);
}
END_TEST

/* The same, under a split whose tail is partitioned: the loop is copied
 * into the main part and the tail, but it is one loop to the user, and
 * one line (it was two). */
START_TEST(test_vectorize_demoted_once_when_partitioned)
{
	two g = two_stage();
	ts_axis *o, *in;
	tu_ok(g.ctx, ts_split_tail(g.sc, ts_axis_of(g.sc, 1), 4, TS_TAIL_PARTITION, &o, &in));
	tu_ok(g.ctx, ts_vectorize(g.sc, in));
	tu_ok(g.ctx, ts_compute_at(g.sp, g.sc, in));
	ts_func *f = lower_two(&g);
	tu_nonnull(g.ctx, f);
	ck_assert_str_eq(ts_lower_warnings(f), "vectorize: loop 'j.inner' runs serially: its body has an allocation\n");
	tu_check_func(g.ctx, f, 1e-5);
	ts_ctx_free(g.ctx);
}
END_TEST

/* An honoured vectorize: no warning anywhere. */
START_TEST(test_vectorize_kept)
{
	two g = two_stage();
	tu_ok(g.ctx, ts_vectorize(g.sc, ts_axis_of(g.sc, 1)));
	ck_assert_ptr_null(strstr(ts_schedule_str(g.s), "warning"));
	ts_func *f = lower_two(&g);
	tu_nonnull(g.ctx, f);
	ck_assert_str_eq(ts_lower_warnings(f), "");
	ck_assert_ptr_null(ts_lower_warnings(NULL));
	tu_check_func(g.ctx, f, 1e-5);
	ts_ctx_free(g.ctx);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("schedsem");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_shared_vars_root);
	tcase_add_test(tc, test_shared_vars_compute_at);
	tcase_add_test(tc, test_shared_reduce_axis);
	tcase_add_test(tc, test_shared_vars_inline_and_reduce);
	tcase_add_test(tc, test_distinct_loop_names);
	tcase_add_test(tc, test_cache_write_names);
	tcase_add_test(tc, test_softmax_into_output_row);
	tcase_add_test(tc, test_softmax_inlined_exp);
	tcase_add_test(tc, test_two_readers_one_nest);
	tcase_add_test(tc, test_schedule_str_attached);
	tcase_add_test(tc, test_schedule_str_refused);
	tcase_add_test(tc, test_vectorize_demoted);
	tcase_add_test(tc, test_vectorize_demoted_by_attach);
	tcase_add_test(tc, test_vectorize_demoted_once_when_partitioned);
	tcase_add_test(tc, test_vectorize_kept);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
