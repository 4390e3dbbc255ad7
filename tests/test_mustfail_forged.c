/*
 * test_mustfail_forged.c - structures a program filled in by hand rather
 * than through a constructor (an array's shape or device, a misaligned
 * pointer), the output arguments of the NVRTC helpers, and the schedule
 * calls that primitives share (sch_*): each is refused or made harmless,
 * never dereferenced or overflowed.
 */
#include "testutil.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_driver.h"
#include "nvrtc.h"

/* A host array whose shape was edited after ts_array_new: no element
 * count overflows, and the calls that walk the elements do nothing. */
START_TEST(array_shape_edited)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_array *a = ts_array_new(ctx, ts_float32, TS_SHAPE(4, 4));
	tu_nonnull(ctx, a);
	static const int64_t bad[] = {INT64_MAX, -5, 0, INT64_MIN};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ts_array forged = *a;
		forged.owns_data = false;
		forged.shape[0] = bad[i];
		ck_assert_int_eq(ts_array_numel(&forged), 0);
		ck_assert_uint_eq(ts_array_nbytes(&forged), 0);
		ts_array_fill_random(&forged, 1, -1, 1);
	}
	ts_array big = *a;
	big.owns_data = false;
	big.shape[0] = big.shape[1] = INT64_C(1) << 40; /* the product overflows */
	ck_assert_int_eq(ts_array_numel(&big), 0);
	ts_array_free(a);
	ts_ctx_free(ctx);
}
END_TEST

/* An array marked as a device array by hand has no driver behind it. */
START_TEST(array_device_forged)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_array *a = ts_array_new(ctx, ts_float32, TS_SHAPE(4));
	tu_nonnull(ctx, a);
	ts_array dev = *a;
	dev.owns_data = false;
	dev.device = TS_DEVICE_CUDA;
	dev.cuda = NULL;
	ck_assert_int_eq(ts_cuda_copy_to_device(ctx, &dev, a), TS_ERR_INVALID);
	tu_assert_error(ctx, "cuda: copy to device: needs a device array (from ts_cuda_array_new)");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_cuda_copy_to_host(ctx, a, &dev), TS_ERR_INVALID);
	tu_assert_error(ctx, "cuda: copy to host: needs a device array");
	/* a copy of the struct: freeing it frees nothing of a's */
	ts_array *copy = malloc(sizeof *copy);
	ck_assert_ptr_nonnull(copy);
	*copy = dev;
	ts_cuda_array_free(copy);
	ts_array_free(a);
	ts_ctx_free(ctx);
}
END_TEST

/* ts_eval reads elements as their C types: a float at an odd address is
 * refused, not read misaligned. */
START_TEST(eval_misaligned)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(4), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *B = ts_compute(ctx, "B", TS_SHAPE(4), TS_VARS(i), TS_READ(ctx, A, i));
	char *raw = calloc(64, 1);
	ck_assert_ptr_nonnull(raw);
	ck_assert_int_eq(ts_eval(ctx, 2, (ts_tensor *[]){A, B}, (void *[]){raw + 1, raw + 32}), TS_ERR_INVALID);
	tu_assert_error(ctx, "eval: the data of tensor A is not aligned to its 4-byte elements");
	ts_clear_error(ctx);
	tu_ok(ctx, ts_eval(ctx, 2, (ts_tensor *[]){A, B}, (void *[]){raw, raw + 32}));
	free(raw);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(nvrtc_null_outputs)
{
	ts_ctx *ctx = ts_ctx_new();
	ck_assert_int_eq(cg_cuda_parse_target(ctx, "cuda -arch=sm_80", NULL), TS_ERR_INVALID);
	tu_assert_error(ctx, "cuda target: arch is NULL");
	ts_clear_error(ctx);
	ck_assert_int_eq(cg_nvrtc_compile(ctx, "__global__ void k() {}", "k", "sm_80", NULL), TS_ERR_INVALID);
	tu_assert_error(ctx, "nvrtc: result is NULL");
	ts_ctx_free(ctx);
}
END_TEST

/* The calls primitives share check what they are given like the
 * primitives do. */
START_TEST(schedule_internals)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(4), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *B = ts_compute(ctx, "B", TS_SHAPE(4), TS_VARS(i), TS_READ(ctx, A, i));
	ts_schedule *s = ts_create_schedule(ctx, 1, &B);
	tu_nonnull(ctx, s);
	ck_assert_ptr_null(sch_stage_new(NULL, B, 0));
	ck_assert_ptr_null(sch_stage_new(s, NULL, 0));
	tu_assert_error(ctx, "stage_new: tensor is NULL");
	ts_clear_error(ctx);
	ck_assert_ptr_null(sch_stage_new(s, A, 0));
	tu_assert_error(ctx, "stage_new: a placeholder has no stage");
	static const int at[] = {-1, INT32_MIN, 2, 1000, INT32_MAX};
	for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
		ts_clear_error(ctx);
		ck_assert_ptr_null(sch_stage_new(s, B, at[k]));
		tu_assert_error(ctx, "stage_new: position out of range");
	}
	ts_stage *sb = ts_stage_of(s, B);
	ck_assert_ptr_null(sch_axis_new(NULL, "x", 4, TS_ITER_DATA, NULL));
	ts_clear_error(ctx);
	ck_assert_ptr_null(sch_axis_new(sb, NULL, 4, TS_ITER_DATA, NULL));
	tu_assert_error(ctx, "axis_new(B): name is NULL");
	ts_clear_error(ctx);
	ck_assert_ptr_null(sch_axis_new(sb, "x", 0, TS_ITER_DATA, NULL));
	tu_assert_error(ctx, "axis_new(B): extent must be positive");
	ts_clear_error(ctx);
	ck_assert_ptr_null(sch_reduce_identity(ctx, TS_REDUCE_SUM, (ts_dtype){0, 0, 1}));
	tu_assert_error(ctx, "reduce_identity: invalid dtype");
	ts_clear_error(ctx);
	ck_assert_ptr_null(sch_reduce_identity(ctx, (ts_reduce_op)9999, ts_float32));
	tu_assert_error(ctx, "reduce_identity: unknown reduction");
	ck_assert_ptr_nonnull(sch_reduce_identity(ctx, TS_REDUCE_MAX, ts_uint8));
	ts_ctx_set_print_steps(ctx, TS_PRINT_STEPS_NEST);
	sch_step(s, NULL);
	sch_step(NULL, "x");
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mustfail_forged");
	TCase *tc = tcase_create("mustfail_forged");
	tcase_add_test(tc, array_shape_edited);
	tcase_add_test(tc, array_device_forged);
	tcase_add_test(tc, eval_misaligned);
	tcase_add_test(tc, nvrtc_null_outputs);
	tcase_add_test(tc, schedule_internals);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
