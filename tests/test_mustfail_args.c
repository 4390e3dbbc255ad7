/*
 * test_mustfail_args.c - arrays handed to a compiled function are checked
 * before the kernel runs: NULL data, misalignment, strides that are not
 * dense row-major, impossible ndim and dtypes, and an output that overlaps
 * another argument are refused with a message naming the argument.  Also
 * the host-array API on NULL and bad arguments, and ts_array_wrap of
 * caller-owned memory (positive: it runs and its memory survives the free).
 */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "build.h"
#include "lower.h"

/* f(A[13, 7], B[13, 7], C[13, 7]) with C = A + B, built for the host.
 * 13 x 7 float32 is 364 bytes: not a multiple of 64, so views into one
 * allocation land misaligned and overlap in telling ways. */
typedef struct fixture {
	ts_ctx *ctx;
	ts_func *f;
	ts_module *m;
	ts_array *args[3];
} fixture;

static fixture fixture_new(void)
{
	fixture x = {.ctx = ts_ctx_new()};
	ts_tensor *A = ts_placeholder(x.ctx, "A", TS_SHAPE(13, 7), ts_float32);
	ts_tensor *B = ts_placeholder(x.ctx, "B", TS_SHAPE(13, 7), ts_float32);
	ts_tensor *C = ts_rename(x.ctx, ts_op_add(x.ctx, A, B), "C");
	ts_schedule *s = ts_create_schedule(x.ctx, 1, &C);
	x.f = ts_lower(s, "vadd", 3, (ts_tensor *[]){A, B, C});
	tu_nonnull(x.ctx, x.f);
	x.m = ts_build(x.ctx, x.f, "llvm");
	tu_nonnull(x.ctx, x.m);
	for (int i = 0; i < 3; i++) {
		x.args[i] = ts_array_new(x.ctx, ts_float32, 2, (int64_t[]){13, 7});
		ts_array_fill_random(x.args[i], (uint64_t)i + 7, -2, 2);
	}
	return x;
}

static void fixture_free(fixture *x)
{
	for (int i = 0; i < 3; i++)
		ts_array_free(x->args[i]);
	ts_module_free(x->m);
	ts_ctx_free(x->ctx);
}

/* Runs the module and asserts TS_ERR_INVALID with `part` in the message. */
static void run_fails(fixture *x, ts_array *const *args, const char *part)
{
	ck_assert_int_eq(ts_module_run(x->m, 3, args), TS_ERR_INVALID);
	tu_assert_error(x->ctx, part);
	ts_clear_error(x->ctx);
}

START_TEST(test_null_data)
{
	fixture x = fixture_new();
	void *keep = x.args[1]->data;
	x.args[1]->data = NULL;
	run_fails(&x, x.args, "call vadd: argument 1 (B) has NULL data");
	x.args[1]->data = keep;
	fixture_free(&x);
}
END_TEST

START_TEST(test_misaligned_data)
{
	fixture x = fixture_new();
	float *raw = aligned_alloc(64, 64 * 8);
	ts_array *a = ts_array_wrap(x.ctx, raw + 1, ts_float32, 2, (int64_t[]){13, 7});
	tu_nonnull(x.ctx, a);
	run_fails(&x, (ts_array *[]){a, x.args[1], x.args[2]},
		  "call vadd: argument 0 (A) data is not 64-byte aligned");
	ts_array_free(a);
	free(raw);
	fixture_free(&x);
}
END_TEST

START_TEST(test_strides_not_dense)
{
	fixture x = fixture_new();
	x.args[2]->strides[0] = 8; /* a padded row pitch */
	run_fails(&x, x.args, "call vadd: argument 2 (C) has strides [8, 1], expected dense row-major [7, 1]");
	x.args[2]->strides[0] = 7;
	x.args[0]->strides[1] = 0;
	run_fails(&x, x.args, "call vadd: argument 0 (A) has strides [7, 0]");
	x.args[0]->strides[1] = 1;
	ck_assert_int_eq(ts_module_run(x.m, 3, x.args), TS_OK);
	fixture_free(&x);
}
END_TEST

START_TEST(test_bad_ndim)
{
	fixture x = fixture_new();
	x.args[0]->ndim = -1;
	run_fails(&x, x.args, "call vadd: argument 0 (A) has -1 dimensions (0 to 8 allowed)");
	x.args[0]->ndim = 1000000;
	run_fails(&x, x.args, "call vadd: argument 0 (A) has 1000000 dimensions (0 to 8 allowed)");
	x.args[0]->ndim = 2;
	fixture_free(&x);
}
END_TEST

START_TEST(test_bad_dtype)
{
	fixture x = fixture_new();
	x.args[1]->dtype = ts_dtype_with_lanes(ts_float32, 4);
	run_fails(&x, x.args, "call vadd: argument 1 (B) has dtype float32x4, expected float32");
	x.args[1]->dtype = (ts_dtype){TS_TYPE_FLOAT, 24, 1};
	run_fails(&x, x.args, "call vadd: argument 1 (B) has an invalid dtype (code 2, 24 bits, 1 lanes)");
	x.args[1]->dtype = (ts_dtype){TS_TYPE_FLOAT, 32, 0};
	run_fails(&x, x.args, "call vadd: argument 1 (B) has an invalid dtype (code 2, 32 bits, 0 lanes)");
	x.args[1]->dtype = (ts_dtype){99, 32, 1};
	run_fails(&x, x.args, "call vadd: argument 1 (B) has an invalid dtype (code 99, 32 bits, 1 lanes)");
	x.args[1]->dtype = ts_float32;
	fixture_free(&x);
}
END_TEST

/* Views of one 64-aligned allocation, each 364 bytes, starting at the given
 * element offsets (multiples of 16 keep them aligned). */
static void views(fixture *x, float *raw, const int *offsets, ts_array **out)
{
	for (int i = 0; i < 3; i++) {
		out[i] = ts_array_wrap(x->ctx, raw + offsets[i], ts_float32, 2, (int64_t[]){13, 7});
		tu_nonnull(x->ctx, out[i]);
	}
}

static void views_free(ts_array **v)
{
	for (int i = 0; i < 3; i++)
		ts_array_free(v[i]);
}

START_TEST(test_output_overlaps_input)
{
	fixture x = fixture_new();
	float *raw = aligned_alloc(64, 4096);
	ts_array *v[3];
	/* C is A itself */
	views(&x, raw, (int[]){0, 128, 0}, v);
	run_fails(&x, v, "call vadd: argument 2 (C) overlaps argument 0 (A)");
	views_free(v);
	/* C starts inside B's last row */
	views(&x, raw, (int[]){0, 96, 176}, v);
	run_fails(&x, v, "call vadd: argument 2 (C) overlaps argument 1 (B)");
	views_free(v);
	/* the same array passed twice */
	run_fails(&x, (ts_array *[]){x.args[0], x.args[1], x.args[1]},
		  "call vadd: argument 2 (C) overlaps argument 1 (B)");
	free(raw);
	fixture_free(&x);
}
END_TEST

START_TEST(test_inputs_may_alias)
{
	fixture x = fixture_new();
	ts_array *args[3] = {x.args[0], x.args[0], x.args[2]};
	tu_ok(x.ctx, ts_module_run(x.m, 3, args));
	const float *a = x.args[0]->data, *c = x.args[2]->data;
	for (int i = 0; i < 13 * 7; i++)
		ck_assert_float_eq(c[i], a[i] + a[i]);
	/* adjacent, touching but not overlapping, views are fine too */
	float *raw = aligned_alloc(64, 4096);
	ts_array *v[3];
	for (int i = 0; i < 1024; i++)
		raw[i] = (float)(i % 17) - 8.0f;
	views(&x, raw, (int[]){0, 0, 96}, v);
	tu_ok(x.ctx, ts_module_run(x.m, 3, v));
	views_free(v);
	free(raw);
	fixture_free(&x);
}
END_TEST

START_TEST(test_time_checks_too)
{
	fixture x = fixture_new();
	ts_timing t;
	ck_assert_int_eq(ts_module_time(x.m, 3, (ts_array *[]){x.args[0], x.args[1], x.args[0]}, 0,
					1, &t),
			 TS_ERR_INVALID);
	tu_assert_error(x.ctx, "call vadd: argument 2 (C) overlaps argument 0 (A)");
	fixture_free(&x);
}
END_TEST

/* ---- the host-array API ------------------------------------------------------- */

START_TEST(test_array_new_null_shape)
{
	ts_ctx *ctx = ts_ctx_new();
	ck_assert_ptr_null(ts_array_new(ctx, ts_float32, 2, NULL));
	tu_assert_error(ctx, "array_new: shape is NULL for 2 dimensions");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_array_new(NULL, ts_float32, 2, NULL));
	/* a scalar needs no shape */
	ts_array *s = ts_array_new(ctx, ts_float32, 0, NULL);
	tu_nonnull(ctx, s);
	ck_assert_int_eq(ts_array_numel(s), 1);
	ts_array_free(s);
	ck_assert_ptr_null(ts_array_new(ctx, ts_dtype_with_lanes(ts_float32, 8), 1, (int64_t[]){4}));
	tu_assert_error(ctx, "array_new: dtype float32x8 is not a scalar dtype");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_array_new(ctx, (ts_dtype){TS_TYPE_INT, 12, 1}, 1, (int64_t[]){4}));
	tu_assert_error(ctx, "array_new: invalid dtype (code 0, 12 bits, 1 lanes)");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_array_new(ctx, ts_float32, -1, (int64_t[]){4}));
	tu_assert_error(ctx, "array_new: -1 dimensions (0 to 8 allowed)");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_array_null_helpers)
{
	ts_ctx *ctx = ts_ctx_new();
	ck_assert_int_eq(ts_array_numel(NULL), 0);
	ck_assert_uint_eq(ts_array_nbytes(NULL), 0);
	ts_array_fill_random(NULL, 1, 0, 1);
	ts_array bad = {.data = NULL, .dtype = ts_float32, .ndim = 1, .shape = {4}};
	ts_array_fill_random(&bad, 1, 0, 1); /* no data: nothing to fill */
	ck_assert_ptr_null(ts_array_for(ctx, NULL));
	tu_assert_error(ctx, "array_for: tensor is NULL");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_array_for(NULL, NULL));
	/* a size variable's extent is its upper bound */
	int64_t n = ts_size_var(ctx, "n", 64);
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(4, n), ts_float32);
	tu_nonnull(ctx, A);
	ts_array *a = ts_array_for(ctx, A);
	tu_nonnull(ctx, a);
	ck_assert(a->ndim == 2 && a->shape[0] == 4 && a->shape[1] == 64);
	ts_array_free(a);
	/* errors name the call */
	ts_tensor *big = ts_placeholder(ctx, "big", TS_SHAPE(INT64_C(1) << 30, 1 << 12), ts_float32);
	tu_nonnull(ctx, big);
	ck_assert_ptr_null(ts_array_for(ctx, big)); /* 16 TiB */
	tu_assert_error(ctx, "array_for: 17592186044416 bytes is more than this machine's memory");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_array_wrap_errors)
{
	ts_ctx *ctx = ts_ctx_new();
	float buf[32];
	ck_assert_ptr_null(ts_array_wrap(ctx, NULL, ts_float32, 1, (int64_t[]){4}));
	tu_assert_error(ctx, "array_wrap: data is NULL");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_array_wrap(ctx, buf, ts_float32, 1, NULL));
	tu_assert_error(ctx, "array_wrap: shape is NULL for 1 dimensions");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_array_wrap(ctx, buf, ts_float32, 9, (int64_t[9]){1}));
	tu_assert_error(ctx, "array_wrap: 9 dimensions (0 to 8 allowed)");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_array_wrap(ctx, buf, ts_float32, 1, (int64_t[]){0}));
	tu_assert_error(ctx, "array_wrap: bad extent 0 in dimension 0");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_array_wrap(ctx, (char *)buf + 1, ts_float32, 1, (int64_t[]){4}));
	tu_assert_error(ctx, "array_wrap: data is not aligned to its 4-byte elements");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_array_wrap(ctx, buf, ts_dtype_with_lanes(ts_float32, 4), 1,
					 (int64_t[]){4}));
	tu_assert_error(ctx, "array_wrap: dtype float32x4 is not a scalar dtype");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_array_wrap_strided(ctx, buf, ts_float32, 2, (int64_t[]){2, 3},
						 (int64_t[]){4, 1}));
	tu_assert_error(ctx, "array_wrap_strided: strides [4, 1] are not dense row-major (expected [3, 1])");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_array_wrap_strided(ctx, buf, ts_float32, 2, (int64_t[]){2, 3}, NULL));
	tu_assert_error(ctx, "array_wrap_strided: strides is NULL");
	ts_clear_error(ctx);
	ts_array *ok = ts_array_wrap_strided(ctx, buf, ts_float32, 2, (int64_t[]){2, 3},
					     (int64_t[]){3, 1});
	tu_nonnull(ctx, ok);
	ts_array_free(ok);
	/* an extent-1 dimension's stride is free, and the array keeps the
	 * dense one; the other dimensions' strides still must be dense */
	ok = ts_array_wrap_strided(ctx, buf, ts_float32, 3, (int64_t[]){2, 1, 3},
				   (int64_t[]){3, 99, 1});
	tu_nonnull(ctx, ok);
	ck_assert_int_eq(ok->strides[1], 3);
	ts_array_free(ok);
	ck_assert_ptr_null(ts_array_wrap_strided(ctx, buf, ts_float32, 3, (int64_t[]){2, 1, 3},
						 (int64_t[]){4, 99, 1}));
	tu_assert_error(ctx, "array_wrap_strided: strides [4, 99, 1] are not dense row-major "
			     "(expected [3, 3, 1])");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_array_wrap(NULL, NULL, ts_float32, 1, (int64_t[]){4}));
	ts_ctx_free(ctx);
}
END_TEST

/* A dimension of extent 1 may carry any stride (it is never stepped
 * along); the other dimensions' strides are still checked. */
START_TEST(test_extent_one_stride_is_free)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(1, 5), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(1, 5), ts_float32);
	ts_tensor *C = ts_rename(ctx, ts_op_add(ctx, A, B), "C");
	ts_func *f = ts_lower(ts_create_schedule(ctx, 1, &C), "row", 3, (ts_tensor *[]){A, B, C});
	ts_module *m = ts_build(ctx, f, "llvm");
	tu_nonnull(ctx, m);
	ts_array *a[3];
	for (int i = 0; i < 3; i++) {
		a[i] = ts_array_new(ctx, ts_float32, 2, (int64_t[]){1, 5});
		tu_nonnull(ctx, a[i]);
		ts_array_fill_random(a[i], (uint64_t)i + 3, -2, 2);
		a[i]->strides[0] = 1000 * i - 7; /* a view's pitch, or garbage */
	}
	tu_ok(ctx, ts_module_run(m, 3, a));
	for (int j = 0; j < 5; j++)
		ck_assert_float_eq(((float *)a[2]->data)[j], ((float *)a[0]->data)[j] + ((float *)a[1]->data)[j]);
	a[1]->strides[1] = 2;
	ck_assert_int_eq(ts_module_run(m, 3, a), TS_ERR_INVALID);
	tu_assert_error(ctx, "call row: argument 1 (B) has strides [993, 2], expected dense row-major [5, 1]");
	for (int i = 0; i < 3; i++)
		ts_array_free(a[i]);
	ts_module_free(m);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_array_wrap_runs)
{
	fixture x = fixture_new();
	float *mem[3];
	ts_array *w[3];
	for (int i = 0; i < 3; i++) {
		mem[i] = aligned_alloc(64, 384);
		for (int j = 0; j < 96; j++)
			mem[i][j] = (float)((j * 7 + i * 3) % 11) - 5.0f;
		w[i] = ts_array_wrap(x.ctx, mem[i], ts_float32, 2, (int64_t[]){13, 7});
		tu_nonnull(x.ctx, w[i]);
		ck_assert_ptr_eq(w[i]->data, mem[i]);
		ck_assert_int_eq(w[i]->strides[0], 7);
	}
	tu_ok(x.ctx, ts_module_run(x.m, 3, w));
	for (int i = 0; i < 3; i++)
		ts_array_free(w[i]);
	/* the caller's memory is intact after the free: results readable, the
	 * bytes past the array untouched */
	for (int j = 0; j < 91; j++)
		ck_assert_float_eq(mem[2][j], mem[0][j] + mem[1][j]);
	for (int j = 91; j < 96; j++)
		ck_assert_float_eq(mem[2][j], (float)((j * 7 + 6) % 11) - 5.0f);
	for (int i = 0; i < 3; i++)
		free(mem[i]);
	fixture_free(&x);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mustfail_args");
	TCase *run = tcase_create("run");
	tcase_add_test(run, test_null_data);
	tcase_add_test(run, test_misaligned_data);
	tcase_add_test(run, test_strides_not_dense);
	tcase_add_test(run, test_extent_one_stride_is_free);
	tcase_add_test(run, test_bad_ndim);
	tcase_add_test(run, test_bad_dtype);
	tcase_add_test(run, test_output_overlaps_input);
	tcase_add_test(run, test_inputs_may_alias);
	tcase_add_test(run, test_time_checks_too);
	suite_add_tcase(s, run);
	TCase *arrays = tcase_create("arrays");
	tcase_add_test(arrays, test_array_new_null_shape);
	tcase_add_test(arrays, test_array_null_helpers);
	tcase_add_test(arrays, test_array_wrap_errors);
	tcase_add_test(arrays, test_array_wrap_runs);
	suite_add_tcase(s, arrays);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
