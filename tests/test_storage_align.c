/*
 * test_storage_align.c - ts_storage_align: the padded strides and sizes
 * flatten gives a stage's buffer, results unchanged (reference evaluator,
 * interpreter, LLVM) for caches at root and attached ones, CUDA shared
 * tiles, and every refusal.
 */
#include "testutil.h"

#include <string.h>

#include "build.h"
#include "lower.h"
#include "printer.h"
#include "schedule.h"

typedef tu_mm mm;

static ts_func *lower(mm *e)
{
	ts_func *f = ts_lower(e->s, "mm", 3, (ts_tensor *[]){e->A, e->B, e->C});
	tu_nonnull(e->ctx, f);
	return f;
}

/* A copy of A at root, its rows padded from 10 to 16 + 3 = 19 floats:
 * 7 x 19 = 133 elements, row i at 19 * i. */
START_TEST(test_align_root_cache)
{
	mm e = tu_matmul(7, 9, 10);
	ts_tensor *AA = ts_cache_read(e.s, e.A, TS_SCOPE_GLOBAL, 1, &e.C);
	tu_nonnull(e.ctx, AA);
	tu_ok(e.ctx, ts_storage_align(ts_stage_of(e.s, AA), 0, 16, 3));
	ts_func *f = lower(&e);
	const char *text = ir_func_str(e.ctx, f);
	ck_assert_msg(strstr(text, "float32 * 133]") != NULL, "%s", text);
	ck_assert_msg(strstr(text, "*19") != NULL, "%s", text);
	tu_check_func(e.ctx, f, 1e-5);
	/* the schedule says so */
	ck_assert(strstr(ts_schedule_str(e.s), "storage_align dimension 0: stride = k * 16 + 3"));
	ts_ctx_free(e.ctx);
}
END_TEST

/* A tile of B attached inside C's loops, 3-D storage: every alignment
 * already met leaves the buffer as it is; one not met pads it. */
START_TEST(test_align_attached)
{
	for (int64_t off = 0; off < 2; off++) {
		mm e = tu_matmul(12, 20, 9);
		ts_tensor *BB = ts_cache_read(e.s, e.B, TS_SCOPE_LOCAL, 1, &e.C);
		tu_nonnull(e.ctx, BB);
		ts_axis *io, *ii, *jo, *ji;
		tu_ok(e.ctx, ts_tile(e.sc, ts_axis_of(e.sc, 0), ts_axis_of(e.sc, 1), 4, 8, &io, &jo, &ii, &ji));
		ts_stage *sb = ts_stage_of(e.s, BB);
		tu_ok(e.ctx, ts_compute_at(sb, e.sc, jo));
		/* B's tile is 9 x 8: the row stride 8 is 0 mod 4; offset 1 pads it to 9 */
		tu_ok(e.ctx, ts_storage_align(sb, 0, 4, off));
		ts_func *f = lower(&e);
		const char *text = ir_func_str(e.ctx, f);
		ck_assert_msg(strstr(text, off ? "float32 * 81]" : "float32 * 72]") != NULL, "%s", text);
		tu_check_func(e.ctx, f, 1e-5);
		ts_ctx_free(e.ctx);
	}
}
END_TEST

/* The CUDA GEMM's shared tile of A with padded rows compiles for sm_90
 * and computes the same through the interpreter. */
START_TEST(test_align_cuda_shared)
{
	mm e = tu_matmul(40, 24, 16);
	ts_tensor *AS = ts_cache_read(e.s, e.A, TS_SCOPE_SHARED, 1, &e.C);
	tu_nonnull(e.ctx, AS);
	ts_axis *by, *bx, *ty, *tx;
	tu_ok(e.ctx, ts_tile(e.sc, ts_axis_of(e.sc, 0), ts_axis_of(e.sc, 1), 8, 8, &by, &bx, &ty, &tx));
	tu_ok(e.ctx, ts_bind(e.sc, by, TS_BLOCK_Y));
	tu_ok(e.ctx, ts_bind(e.sc, bx, TS_BLOCK_X));
	tu_ok(e.ctx, ts_bind(e.sc, ty, TS_THREAD_Y));
	tu_ok(e.ctx, ts_bind(e.sc, tx, TS_THREAD_X));
	ts_stage *sa = ts_stage_of(e.s, AS);
	tu_ok(e.ctx, ts_compute_at(sa, e.sc, bx));
	ts_axis *r = ts_axis_of(sa, 0), *c = ts_axis_of(sa, 1);
	tu_ok(e.ctx, ts_bind(sa, r, TS_THREAD_Y));
	ts_axis *co, *ci;
	tu_ok(e.ctx, ts_split(sa, c, 8, &co, &ci));
	tu_ok(e.ctx, ts_bind(sa, ci, TS_THREAD_X));
	tu_ok(e.ctx, ts_storage_align(sa, 0, 32, 17));
	ts_func *f = lower(&e);
	ck_assert_msg(strstr(ir_func_str(e.ctx, f), "float32 * 136] in shared"), "%s", ir_func_str(e.ctx, f));
	tu_check_func_interp(e.ctx, f, 1e-5);
	ts_module *m = ts_build(e.ctx, f, "cuda -arch=sm_90");
	if (!m) /* no NVRTC here: the source is checked by the emitter alone */
		ck_assert_msg(ts_last_status(e.ctx) != TS_ERR_INVALID, "%s", ts_last_error(e.ctx));
	ts_module_free(m);
	ts_ctx_free(e.ctx);
}
END_TEST

START_TEST(test_align_refusals)
{
	mm e = tu_matmul(4, 4, 4);
	ts_tensor *AA = ts_cache_read(e.s, e.A, TS_SCOPE_LOCAL, 1, &e.C);
	ts_stage *sa = ts_stage_of(e.s, AA);
	ck_assert_int_ne(ts_storage_align(NULL, 0, 4, 1), TS_OK);
	ck_assert_int_ne(ts_storage_align(e.sc, 0, 4, 1), TS_OK);
	tu_assert_error(e.ctx, "is an output");
	ts_clear_error(e.ctx);
	ck_assert_int_ne(ts_storage_align(sa, 1, 4, 1), TS_OK);
	tu_assert_error(e.ctx, "dimension 1: give 0 to 0");
	ts_clear_error(e.ctx);
	ck_assert_int_ne(ts_storage_align(sa, -1, 4, 1), TS_OK);
	ts_clear_error(e.ctx);
	ck_assert_int_ne(ts_storage_align(sa, 0, 0, 0), TS_OK);
	tu_assert_error(e.ctx, "needs 1 <= factor <= 2^20");
	ts_clear_error(e.ctx);
	ck_assert_int_ne(ts_storage_align(sa, 0, 4, 4), TS_OK);
	ts_clear_error(e.ctx);
	ck_assert_int_ne(ts_storage_align(sa, 0, 4, -1), TS_OK);
	ts_clear_error(e.ctx);
	ck_assert_int_ne(ts_storage_align(sa, 0, INT64_MAX, 0), TS_OK);
	ts_clear_error(e.ctx);
	/* a 1-D stage has no stride to pad */
	{
		ts_tensor *X = ts_placeholder(e.ctx, "X", TS_SHAPE(8), ts_float32);
		ts_tensor *T = ts_op_relu(e.ctx, X), *U = ts_op_relu(e.ctx, T);
		ts_schedule *s1 = ts_create_schedule(e.ctx, 1, &U);
		tu_nonnull(e.ctx, s1);
		ck_assert_int_ne(ts_storage_align(ts_stage_of(s1, T), 0, 4, 1), TS_OK);
		tu_assert_error(e.ctx, "has fewer than two dimensions: no stride to pad");
		ts_clear_error(e.ctx);
	}
	tu_ok(e.ctx, ts_storage_align(sa, 0, 1 << 20, 7));
	/* a 4 x 4 buffer padded to rows of 2^20 + 7: large, but lowered */
	tu_nonnull(e.ctx, lower(&e));
	/* inlined, the stage has no buffer to align */
	tu_ok(e.ctx, ts_compute_inline(sa));
	ck_assert_ptr_null(ts_lower(e.s, "mm", 3, (ts_tensor *[]){e.A, e.B, e.C}));
	tu_assert_error(e.ctx, "lower: stage A.local is computed inline: it has no buffer for its storage_align");
	ts_ctx_free(e.ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("storage_align");
	TCase *tc = tcase_create("storage_align");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_align_root_cache);
	tcase_add_test(tc, test_align_attached);
	tcase_add_test(tc, test_align_cuda_shared);
	tcase_add_test(tc, test_align_refusals);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
