/*
 * test_steps.c - step printing (ts_ctx_set_print_steps, TESSERA_PRINT_STEPS):
 * every successful primitive prints its call and the loop nest (or a diff
 * of it) to stderr, and ts_schedule_step_str gives the nest as text.
 * Printing must change neither the schedule nor the error state.
 */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "stderr_capture.h"

typedef struct bias_add {
	ts_ctx *ctx;
	ts_tensor *A, *B, *C;
	ts_schedule *s;
	ts_stage *sc;
} bias_add;

/* C[i, j] = A[i, j] + B[j]; 10 is not a multiple of the split factor 4. */
static bias_add make(int mode)
{
	bias_add b = {.ctx = ts_ctx_new()};
	ts_ctx *ctx = b.ctx;
	ts_ctx_set_print_steps(ctx, mode);
	b.A = ts_placeholder(ctx, "A", TS_SHAPE(3, 10), ts_float32);
	b.B = ts_placeholder(ctx, "B", TS_SHAPE(10), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	b.C = ts_compute(ctx, "C", TS_SHAPE(3, 10), TS_VARS(i, j),
			 ts_add(ctx, TS_READ(ctx, b.A, i, j), TS_READ(ctx, b.B, j)));
	tu_nonnull(ctx, b.C);
	b.s = ts_create_schedule(ctx, 1, &b.C);
	tu_nonnull(ctx, b.s);
	b.sc = ts_stage_of(b.s, b.C);
	return b;
}

/* split j by 4, move its outer part out, vectorize the inner part. */
static void schedule_it(bias_add *b)
{
	ts_axis *jo, *ji;
	tu_ok(b->ctx, ts_split(b->sc, ts_axis_of(b->sc, 1), 4, &jo, &ji));
	tu_ok(b->ctx, ts_reorder(b->sc, TS_AXES(jo, ts_axis_of(b->sc, 0), ji)));
	tu_ok(b->ctx, ts_vectorize(b->sc, ji));
}

static ts_func *lower_it(bias_add *b)
{
	return ts_lower(b->s, "bias_add", 3, (ts_tensor *[]){b->A, b->B, b->C});
}

/* Everything printed while making and scheduling the example. */
static char *printed(int mode, bias_add *out)
{
	tu_capture cap;
	tu_capture_begin(&cap);
	bias_add b = make(mode);
	schedule_it(&b);
	char *text = tu_capture_end(&cap);
	*out = b;
	return text;
}

START_TEST(nest_golden)
{
	bias_add b;
	char *text = printed(TS_PRINT_STEPS_NEST, &b);
	tu_assert_golden("steps_nest.txt", text);
	/* the last step shows the nest ts_schedule_step_str gives */
	const char *now = ts_schedule_step_str(b.s);
	tu_nonnull(b.ctx, now);
	size_t n = strlen(text), m = strlen(now);
	ck_assert(n >= m && strcmp(text + n - m, now) == 0);
	free(text);
	ts_ctx_free(b.ctx);
}
END_TEST

START_TEST(diff_golden)
{
	bias_add b;
	char *text = printed(TS_PRINT_STEPS_DIFF, &b);
	tu_assert_golden("steps_diff.txt", text);
	ck_assert_ptr_nonnull(strstr(text, "\n-"));
	ck_assert_ptr_nonnull(strstr(text, "\n+"));
	free(text);
	ts_ctx_free(b.ctx);
}
END_TEST

/* The same schedule lowers to the same function, printing or not, and
 * computes what the reference evaluator does. */
START_TEST(printing_changes_nothing)
{
	bias_add quiet = make(TS_PRINT_STEPS_OFF), loud;
	schedule_it(&quiet);
	char *text = printed(TS_PRINT_STEPS_DIFF, &loud);
	free(text);
	ck_assert_str_eq(ts_schedule_str(quiet.s), ts_schedule_str(loud.s));
	ts_func *fq = lower_it(&quiet), *fl = lower_it(&loud);
	tu_nonnull(quiet.ctx, fq);
	tu_nonnull(loud.ctx, fl);
	ck_assert_str_eq(ir_func_str(quiet.ctx, fq), ir_func_str(loud.ctx, fl));
	tu_check_func(loud.ctx, fl, 1e-6);
	ts_ctx_free(quiet.ctx);
	ts_ctx_free(loud.ctx);
}
END_TEST

/* An error the caller has pending survives the printing of later steps. */
START_TEST(pending_error_kept)
{
	bias_add b = make(TS_PRINT_STEPS_OFF);
	ts_error(b.ctx, TS_ERR_INVALID, "the caller's own error");
	ts_ctx_set_print_steps(b.ctx, TS_PRINT_STEPS_NEST);
	tu_capture cap;
	tu_capture_begin(&cap);
	schedule_it(&b);
	char *text = tu_capture_end(&cap);
	ck_assert_ptr_nonnull(strstr(text, "== vectorize(C, j.inner) =="));
	ck_assert_ptr_null(strstr(text, "cannot lower"));
	ck_assert_int_eq(ts_last_status(b.ctx), TS_ERR_INVALID);
	ck_assert_str_eq(ts_last_error(b.ctx), "the caller's own error");
	free(text);
	ts_ctx_free(b.ctx);
}
END_TEST

/* Where lowering the current state fails, the text says why and no error
 * is left behind. */
START_TEST(failed_lowering_is_text)
{
	bias_add b = make(TS_PRINT_STEPS_OFF);
	ts_ctx_fail_alloc_after(b.ctx, 1);
	const char *now = ts_schedule_step_str(b.s);
	tu_nonnull(b.ctx, now);
	ck_assert_msg(strstr(now, "cannot lower yet: out of memory (injected)") != NULL, "%s", now);
	ck_assert_int_eq(ts_last_status(b.ctx), TS_OK);
	ts_ctx_free(b.ctx);
}
END_TEST

/* tile prints one step, not its own splits and reorder. */
START_TEST(tile_is_one_step)
{
	tu_capture cap;
	tu_capture_begin(&cap);
	bias_add b = make(TS_PRINT_STEPS_NEST);
	ts_axis *io, *jo, *ii, *ji;
	tu_ok(b.ctx, ts_tile(b.sc, ts_axis_of(b.sc, 0), ts_axis_of(b.sc, 1), 2, 4, &io, &jo, &ii, &ji));
	char *text = tu_capture_end(&cap);
	ck_assert_ptr_nonnull(strstr(text, "== tile(C, i, j, 2, 4) =="));
	ck_assert_ptr_null(strstr(text, "== split"));
	ck_assert_ptr_null(strstr(text, "== reorder"));
	free(text);
	ts_ctx_free(b.ctx);
}
END_TEST

/* With TESSERA_PRINT_PASSES on as well, a step prints its nest only, not
 * the IR after each pass of the lowering behind it. */
START_TEST(steps_without_passes)
{
	bias_add b = make(TS_PRINT_STEPS_OFF);
	ts_ctx_set_print_passes(b.ctx, 1);
	ts_ctx_set_print_steps(b.ctx, TS_PRINT_STEPS_NEST);
	tu_capture cap;
	tu_capture_begin(&cap);
	schedule_it(&b);
	char *text = tu_capture_end(&cap);
	ck_assert_ptr_nonnull(strstr(text, "== vectorize(C, j.inner) =="));
	ck_assert_msg(strstr(text, "// ---- after") == NULL, "a step printed passes:\n%s", text);
	ck_assert_int_eq(ts_ctx_print_passes(b.ctx), 1);
	free(text);
	ts_ctx_free(b.ctx);
}
END_TEST

/* TESSERA_PRINT_STEPS is read when the context is made. */
START_TEST(environment)
{
	static const struct {
		const char *value;
		int mode;
	} cases[] = {{"1", TS_PRINT_STEPS_NEST}, {"diff", TS_PRINT_STEPS_DIFF},
		     {"0", TS_PRINT_STEPS_OFF}, {"", TS_PRINT_STEPS_OFF}};
	for (size_t i = 0; i < TS_COUNT_OF(cases); i++) {
		setenv("TESSERA_PRINT_STEPS", cases[i].value, 1);
		ts_ctx *ctx = ts_ctx_new();
		ck_assert_int_eq(ts_ctx_print_steps(ctx), cases[i].mode);
		ts_ctx_free(ctx);
	}
	unsetenv("TESSERA_PRINT_STEPS");
	ts_ctx *ctx = ts_ctx_new();
	ck_assert_int_eq(ts_ctx_print_steps(ctx), TS_PRINT_STEPS_OFF);
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("steps");
	TCase *tc = tcase_create("steps");
	tcase_add_test(tc, nest_golden);
	tcase_add_test(tc, diff_golden);
	tcase_add_test(tc, printing_changes_nothing);
	tcase_add_test(tc, pending_error_kept);
	tcase_add_test(tc, failed_lowering_is_text);
	tcase_add_test(tc, tile_is_one_step);
	tcase_add_test(tc, steps_without_passes);
	tcase_add_test(tc, environment);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
