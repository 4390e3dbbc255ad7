/* test_runtime.c - host arrays, the timer and time evaluator, phase-time
 * strings, and the argument checks of a call. */
#include "testutil.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "args.h"
#include "timer.h"

/* ---- arrays ----------------------------------------------------------------- */

START_TEST(test_array_bad_shapes)
{
	ts_ctx *ctx = ts_ctx_new();
	ck_assert_ptr_null(ts_array_new(ctx, ts_float32, 2, (int64_t[]){4, 0}));
	tu_assert_error(ctx, "array_new: bad extent 0 in dimension 1");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_array_new(ctx, ts_int32, 3, (int64_t[]){-3, 2, 2}));
	tu_assert_error(ctx, "array_new: bad extent -3 in dimension 0");
	ts_clear_error(ctx);
	int64_t nine[9] = {1, 2, 1, 2, 1, 2, 1, 2, 1};
	ck_assert_ptr_null(ts_array_new(ctx, ts_float32, 9, nine));
	tu_assert_error(ctx, "array_new: 9 dimensions (0 to 8 allowed)");
	ts_clear_error(ctx);
	/* overflowing element counts are refused, not wrapped */
	ck_assert_ptr_null(ts_array_new(ctx, ts_float64, 2, (int64_t[]){1 << 20, 1LL << 40}));
	tu_assert_error(ctx, "array_new: bad extent 1099511627776 in dimension 1");
	ts_clear_error(ctx);
	/* 2^52 bytes count without overflow but exceed any machine's memory:
	 * refused before an allocation (which under a sanitizer aborts, and
	 * otherwise zeroing would end in the out-of-memory killer) */
	ck_assert_ptr_null(ts_array_new(ctx, ts_float32, 2, (int64_t[]){1LL << 30, 1LL << 20}));
	ck_assert_int_eq(ts_last_status(ctx), TS_ERR_NOMEM);
	tu_assert_error(ctx, "array_new: 4503599627370496 bytes is more than this machine's memory");
	/* without a context the failure is still a NULL */
	ck_assert_ptr_null(ts_array_new(NULL, ts_float32, 1, (int64_t[]){0}));
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_array_layout_and_alignment)
{
	static const int64_t shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {17, 1, 3}, {2, 33, 65}};
	const ts_dtype dtypes[] = {ts_float32, ts_float64, ts_int8, ts_int64, ts_float16};
	for (size_t s = 0; s < TS_COUNT_OF(shapes); s++) {
		for (size_t d = 0; d < TS_COUNT_OF(dtypes); d++) {
			ts_array *a = ts_array_new(NULL, dtypes[d], 3, shapes[s]);
			ck_assert_ptr_nonnull(a);
			ck_assert_int_eq((uintptr_t)a->data % 64, 0);
			ck_assert_int_eq(a->strides[2], 1);
			ck_assert_int_eq(a->strides[1], shapes[s][2]);
			ck_assert_int_eq(a->strides[0], shapes[s][1] * shapes[s][2]);
			int64_t n = shapes[s][0] * shapes[s][1] * shapes[s][2];
			ck_assert_int_eq(ts_array_numel(a), n);
			ck_assert_uint_eq(ts_array_nbytes(a), (size_t)n * (size_t)ts_dtype_bytes(dtypes[d]));
			ck_assert_int_eq(a->device, TS_DEVICE_CPU);
			for (size_t i = 0; i < ts_array_nbytes(a); i++)
				ck_assert_int_eq(((unsigned char *)a->data)[i], 0);
			ts_array_free(a);
		}
	}
	ts_array_free(NULL);
}
END_TEST

START_TEST(test_fill_random_deterministic)
{
	int64_t shape[2] = {13, 29};
	ts_array *a = ts_array_new(NULL, ts_float32, 2, shape);
	ts_array *b = ts_array_new(NULL, ts_float32, 2, shape);
	ts_array *c = ts_array_new(NULL, ts_float32, 2, shape);
	ts_array_fill_random(a, 42, -1.0, 2.0);
	ts_array_fill_random(b, 42, -1.0, 2.0);
	ts_array_fill_random(c, 43, -1.0, 2.0);
	ck_assert_mem_eq(a->data, b->data, ts_array_nbytes(a));
	int same = 0, neg = 0;
	const float *fa = a->data, *fc = c->data;
	for (int64_t i = 0; i < ts_array_numel(a); i++) {
		ck_assert(fa[i] >= -1.0f && fa[i] < 2.0f);
		same += fa[i] == fc[i];
		neg += fa[i] < 0;
	}
	ck_assert_int_lt(same, 5);
	/* a uniform spread: about a third are negative */
	ck_assert_int_gt(neg, 13 * 29 / 6);
	ck_assert_int_lt(neg, 13 * 29 / 2);
	ts_array *i1 = ts_array_new(NULL, ts_int32, 1, (int64_t[]){200});
	ts_array *i2 = ts_array_new(NULL, ts_int32, 1, (int64_t[]){200});
	ts_array_fill_random(i1, 7, 0, 100);
	ts_array_fill_random(i2, 7, 0, 100);
	ck_assert_mem_eq(i1->data, i2->data, ts_array_nbytes(i1));
	int distinct = 0;
	for (int i = 0; i < 200; i++) {
		int32_t v = ((int32_t *)i1->data)[i];
		ck_assert(v >= 0 && v < 100);
		distinct += i > 0 && v != ((int32_t *)i1->data)[i - 1];
	}
	ck_assert_int_gt(distinct, 150);
	ts_array_free(a);
	ts_array_free(b);
	ts_array_free(c);
	ts_array_free(i1);
	ts_array_free(i2);
}
END_TEST

/* [lo, hi) holds for every dtype and bound: hi - lo past the largest double,
 * 16-bit floats that round a draw up to hi, integers past the dtype's
 * limits (which saturate rather than wrap), and a range a dtype cannot
 * hold (its largest finite value, not infinity). */
static void assert_filled_within(ts_dtype t, double lo, double hi)
{
	enum { N = 100000 };
	ts_array *a = ts_array_new(NULL, t, 1, (int64_t[]){N});
	ck_assert_ptr_nonnull(a);
	ts_array_fill_random(a, 11, lo, hi);
	int distinct = 0;
	for (int64_t i = 0; i < N; i++) {
		double v = ts_elem_get_f64(a->data, t, i);
		ck_assert_msg(v >= lo && v < hi, "element %lld is %g, outside [%g, %g)", (long long)i,
			      v, lo, hi);
		distinct += i > 0 && v != ts_elem_get_f64(a->data, t, i - 1);
	}
	ck_assert_int_gt(distinct, N / 4);
	ts_array_free(a);
}

START_TEST(test_fill_random_bounds)
{
	assert_filled_within(ts_float64, -1e308, 1e308);
	assert_filled_within(ts_float32, -3e38, 3e38);
	assert_filled_within(ts_float16, 0, 1);
	assert_filled_within(ts_bfloat16, 0, 1);
	assert_filled_within(ts_float16, 250, 300);
	assert_filled_within(ts_bfloat16, 0.5, 0.6);
	assert_filled_within(ts_uint8, 0, 3);
	assert_filled_within(ts_bool, 0, 2);
	/* negative draws saturate to 0 in an unsigned dtype, not to 254, 255 */
	ts_array *u = ts_array_new(NULL, ts_uint8, 1, (int64_t[]){1000});
	ts_array_fill_random(u, 3, -3, 3);
	for (int i = 0; i < 1000; i++)
		ck_assert_int_le(((uint8_t *)u->data)[i], 2);
	/* past int8's limits: its largest value, not a wrapped negative one */
	ts_array *i8 = ts_array_new(NULL, ts_int8, 1, (int64_t[]){1000});
	ts_array_fill_random(i8, 3, 250, 300);
	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(((int8_t *)i8->data)[i], 127);
	/* float16 holds nothing in [1e20, 1e30): its largest finite value */
	ts_array *h = ts_array_new(NULL, ts_float16, 1, (int64_t[]){1000});
	ts_array_fill_random(h, 3, 1e20, 1e30);
	for (int i = 0; i < 1000; i++)
		ck_assert_double_eq(ts_elem_get_f64(h->data, ts_float16, i), 65504.0);
	ts_array_free(u);
	ts_array_free(i8);
	ts_array_free(h);
}
END_TEST

/* ---- timer -------------------------------------------------------------------- */

typedef struct dummy {
	int calls;
	int fail_at; /* the call (counting from 0) that returns 7; -1: never */
	volatile double acc;
} dummy;

static int dummy_fn(void *arg)
{
	dummy *d = arg;
	for (int i = 0; i < 2000; i++)
		d->acc += sqrt((double)i + d->calls);
	return d->calls++ == d->fail_at ? 7 : 0;
}

START_TEST(test_now_monotonic)
{
	uint64_t a = ts_now_ns();
	dummy d = {.fail_at = -1};
	dummy_fn(&d);
	uint64_t b = ts_now_ns();
	ck_assert_uint_ge(b, a);
	ck_assert(ts_ms_since(a) >= 0);
}
END_TEST

START_TEST(test_time_run_statistics)
{
	ts_ctx *ctx = ts_ctx_new();
	dummy d = {.fail_at = -1};
	ts_timing t;
	ck_assert_int_eq(ts_time_run(ctx, dummy_fn, &d, 2, 7, 3, &t), TS_OK);
	ck_assert_int_eq(d.calls, 2 + 7 * 3);
	ck_assert_int_eq(t.samples, 7);
	ck_assert(t.min >= 0);
	ck_assert(t.min <= t.median && t.median <= t.max);
	double eps = 1e-12 * t.max;
	ck_assert(t.min - eps <= t.mean && t.mean <= t.max + eps);
	ck_assert(t.stddev >= 0 && t.stddev <= t.max - t.min + eps);
	/* one sample has no spread */
	ck_assert_int_eq(ts_time_run(ctx, dummy_fn, &d, 0, 1, 1, &t), TS_OK);
	ck_assert_int_eq(t.samples, 1);
	ck_assert(t.min == t.median && t.median == t.max && t.stddev == 0);
	ck_assert_int_eq(ts_last_status(ctx), TS_OK);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_time_run_errors)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_timing t;
	/* warmup 1, number 2: call 6 is the second call of repeat 2 */
	dummy d = {.fail_at = 6};
	ck_assert_int_eq(ts_time_run(ctx, dummy_fn, &d, 1, 4, 2, &t), TS_ERR_RUNTIME);
	tu_assert_error(ctx, "time_run: function returned 7 in repeat 2 (call 1 of 2)");
	ck_assert_int_eq(d.calls, 7);
	ck_assert_int_eq(t.samples, 0);
	ts_clear_error(ctx);
	d = (dummy){.fail_at = 1};
	ck_assert_int_eq(ts_time_run(ctx, dummy_fn, &d, 3, 4, 2, &t), TS_ERR_RUNTIME);
	tu_assert_error(ctx, "time_run: function returned 7 in warmup call 1");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_time_run(ctx, dummy_fn, &d, 0, 0, 1, &t), TS_ERR_INVALID);
	tu_assert_error(ctx, "time_run: repeat must be 1..1048576, got 0");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_time_run(ctx, dummy_fn, &d, 0, 1, -2, &t), TS_ERR_INVALID);
	tu_assert_error(ctx, "time_run: number must be 1..65536, got -2");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_time_run(ctx, dummy_fn, &d, -1, 1, 1, &t), TS_ERR_INVALID);
	tu_assert_error(ctx, "time_run: warmup must be 0..1048576, got -1");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_time_run(ctx, NULL, &d, 0, 1, 1, &t), TS_ERR_INVALID);
	tu_assert_error(ctx, "time_run: fn is NULL");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_median)
{
	double odd[] = {5.0, -1.5, 3.25, 9.0, 0.5};
	ck_assert_double_eq(ts_median(odd, 5), 3.25);
	ck_assert_double_eq(odd[0], 5.0); /* the input is not sorted in place */
	ck_assert_double_eq(odd[1], -1.5);
	double even[] = {4.0, 1.0, 10.0, 2.0};
	ck_assert_double_eq(ts_median(even, 4), 3.0);
	ck_assert_double_eq(ts_median(even, 1), 4.0);
	ck_assert(isnan(ts_median(even, 0)));
}
END_TEST

/* A NaN makes the median NaN wherever it is (sorting with a comparison
 * that orders NaN with nothing gave 1, NaN or 2 by position), and the
 * middle two of an even count are averaged without overflowing. */
START_TEST(test_median_nan_and_extremes)
{
	double nan_first[] = {NAN, 1.0, 2.0}, nan_mid[] = {1.0, NAN, 2.0}, nan_last[] = {1.0, 2.0, NAN};
	ck_assert(isnan(ts_median(nan_first, 3)));
	ck_assert(isnan(ts_median(nan_mid, 3)));
	ck_assert(isnan(ts_median(nan_last, 3)));
	double big[] = {1.5e308, 1e308};
	ck_assert_double_eq(ts_median(big, 2), 1.25e308);
	double low[] = {-1.5e308, -1e308, 7.0, -1.75e308};
	ck_assert_double_eq(ts_median(low, 4), -1.25e308);
	double inf[] = {INFINITY, 3.0, 1.0};
	ck_assert_double_eq(ts_median(inf, 3), 3.0);
}
END_TEST

START_TEST(test_phase_times_str)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_phase_times t = {.lower_ms = 0.41, .llvm_build_ms = 0.83, .optimize_ms = 12.1,
			    .codegen_ms = 9.7, .total_ms = 23.04};
	ck_assert_str_eq(ts_phase_times_str(ctx, &t),
			 "lower 0.41 ms, llvm ir 0.83 ms, opt 12.1 ms, machine code 9.7 ms, total 23.0 ms");
	ts_phase_times cuda = {.lower_ms = 1.26, .nvrtc_ms = 180.44, .total_ms = 182.0};
	ck_assert_str_eq(ts_phase_times_str(ctx, &cuda), "lower 1.3 ms, nvrtc 180.4 ms, total 182.0 ms");
	ts_phase_times none = {0};
	ck_assert_str_eq(ts_phase_times_str(ctx, &none), "total 0.00 ms");
	/* absurd values take an exponent: the total is never cut off */
	ts_phase_times huge = {.lower_ms = 1e300, .llvm_build_ms = -1e300, .optimize_ms = NAN,
			       .codegen_ms = INFINITY, .nvrtc_ms = 1e300, .total_ms = 1e300};
	ck_assert_str_eq(ts_phase_times_str(ctx, &huge), "lower 1e+300 ms, llvm ir -1e+300 ms, opt nan ms, "
			 "machine code inf ms, nvrtc 1e+300 ms, total 1e+300 ms");
	ts_ctx_free(ctx);
}
END_TEST

/* ---- argument checks ---------------------------------------------------------- */

/* matmul(A[512, 512], B[512, 512], C[512, 512]) in float32, as lowering
 * would describe it. */
static ts_func *matmul_func(ts_ctx *ctx)
{
	ts_func *f = ts_alloc(ctx, sizeof(*f));
	f->name = "matmul";
	f->nparams = 3;
	f->params = ts_alloc_array(ctx, 3, sizeof(ts_buffer *));
	const char *names[3] = {"A", "B", "C"};
	for (int i = 0; i < 3; i++)
		f->params[i] = ir_buffer_new(ctx, names[i], ts_float32, 2, (int64_t[]){512, 512},
					     TS_SCOPE_GLOBAL);
	ck_assert_int_eq(ts_last_status(ctx), TS_OK);
	return f;
}

typedef struct call_fixture {
	ts_ctx *ctx;
	ts_func *f;
	ts_array *args[3];
} call_fixture;

static call_fixture fixture_new(void)
{
	call_fixture c = {.ctx = ts_ctx_new()};
	c.f = matmul_func(c.ctx);
	for (int i = 0; i < 3; i++) {
		c.args[i] = ts_array_new(c.ctx, ts_float32, 2, (int64_t[]){512, 512});
		ts_array_fill_random(c.args[i], (uint64_t)i + 1, -1, 1);
	}
	return c;
}

static void fixture_free(call_fixture *c)
{
	for (int i = 0; i < 3; i++)
		ts_array_free(c->args[i]);
	ts_ctx_free(c->ctx);
}

/* Replaces argument i with a fresh host array. */
static void replace_arg(call_fixture *c, int i, ts_dtype t, int ndim, const int64_t *shape)
{
	ts_array_free(c->args[i]);
	c->args[i] = ts_array_new(c->ctx, t, ndim, shape);
	ck_assert_ptr_nonnull(c->args[i]);
}

START_TEST(test_check_args_pass)
{
	call_fixture c = fixture_new();
	ck_assert_int_eq(ts_check_args(c.ctx, c.f, 3, c.args, TS_DEVICE_CPU), TS_OK);
	ck_assert_int_eq(ts_last_status(c.ctx), TS_OK);
	fixture_free(&c);
}
END_TEST

START_TEST(test_check_args_count)
{
	call_fixture c = fixture_new();
	ck_assert_int_eq(ts_check_args(c.ctx, c.f, 2, c.args, TS_DEVICE_CPU), TS_ERR_INVALID);
	tu_assert_error(c.ctx, "call matmul: expected 3 arguments, got 2");
	ts_clear_error(c.ctx);
	ck_assert_int_eq(ts_check_args(c.ctx, c.f, 3, NULL, TS_DEVICE_CPU), TS_ERR_INVALID);
	tu_assert_error(c.ctx, "call matmul: the argument list is NULL");
	ts_clear_error(c.ctx);
	ck_assert_int_eq(ts_check_args(c.ctx, NULL, 3, c.args, TS_DEVICE_CPU), TS_ERR_INVALID);
	tu_assert_error(c.ctx, "call: the function is NULL");
	fixture_free(&c);
}
END_TEST

START_TEST(test_check_args_null)
{
	call_fixture c = fixture_new();
	ts_array *args[3] = {c.args[0], NULL, c.args[2]};
	ck_assert_int_eq(ts_check_args(c.ctx, c.f, 3, args, TS_DEVICE_CPU), TS_ERR_INVALID);
	tu_assert_error(c.ctx, "call matmul: argument 1 (B) is NULL");
	fixture_free(&c);
}
END_TEST

START_TEST(test_check_args_dtype)
{
	call_fixture c = fixture_new();
	replace_arg(&c, 2, ts_float64, 2, (int64_t[]){512, 512});
	ck_assert_int_eq(ts_check_args(c.ctx, c.f, 3, c.args, TS_DEVICE_CPU), TS_ERR_INVALID);
	tu_assert_error(c.ctx, "call matmul: argument 2 (C) has dtype float64, expected float32");
	fixture_free(&c);
}
END_TEST

START_TEST(test_check_args_extent)
{
	call_fixture c = fixture_new();
	replace_arg(&c, 0, ts_float32, 2, (int64_t[]){512, 256});
	ck_assert_int_eq(ts_check_args(c.ctx, c.f, 3, c.args, TS_DEVICE_CPU), TS_ERR_INVALID);
	tu_assert_error(c.ctx, "call matmul: argument 0 (A) has shape [512, 256], expected [512, 512]");
	fixture_free(&c);
}
END_TEST

START_TEST(test_check_args_ndim)
{
	call_fixture c = fixture_new();
	replace_arg(&c, 1, ts_float32, 3, (int64_t[]){512, 512, 1});
	ck_assert_int_eq(ts_check_args(c.ctx, c.f, 3, c.args, TS_DEVICE_CPU), TS_ERR_INVALID);
	tu_assert_error(c.ctx, "call matmul: argument 1 (B) has shape [512, 512, 1], expected [512, 512]");
	fixture_free(&c);
}
END_TEST

START_TEST(test_check_args_device)
{
	call_fixture c = fixture_new();
	ck_assert_int_eq(ts_check_args(c.ctx, c.f, 3, c.args, TS_DEVICE_CUDA), TS_ERR_INVALID);
	tu_assert_error(c.ctx, "call matmul: argument 0 (A) is on the cpu device, expected cuda");
	ts_clear_error(c.ctx);
	/* pretend B lives on the GPU; restored before freeing the host data */
	c.args[1]->device = TS_DEVICE_CUDA;
	ck_assert_int_eq(ts_check_args(c.ctx, c.f, 3, c.args, TS_DEVICE_CPU), TS_ERR_INVALID);
	c.args[1]->device = TS_DEVICE_CPU;
	tu_assert_error(c.ctx, "call matmul: argument 1 (B) is on the cuda device, expected cpu");
	fixture_free(&c);
}
END_TEST

START_TEST(test_check_args_no_params)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_func f = {.name = "noop"};
	ck_assert_int_eq(ts_check_args(ctx, &f, 0, NULL, TS_DEVICE_CPU), TS_OK);
	ck_assert_int_eq(ts_check_args(ctx, &f, 1, NULL, TS_DEVICE_CPU), TS_ERR_INVALID);
	tu_assert_error(ctx, "call noop: expected 0 arguments, got 1");
	ts_ctx_free(ctx);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("runtime");
	TCase *arrays = tcase_create("arrays");
	tcase_add_test(arrays, test_array_bad_shapes);
	tcase_add_test(arrays, test_array_layout_and_alignment);
	tcase_add_test(arrays, test_fill_random_deterministic);
	tcase_add_test(arrays, test_fill_random_bounds);
	suite_add_tcase(s, arrays);
	TCase *timer = tcase_create("timer");
	tcase_add_test(timer, test_now_monotonic);
	tcase_add_test(timer, test_time_run_statistics);
	tcase_add_test(timer, test_time_run_errors);
	tcase_add_test(timer, test_median);
	tcase_add_test(timer, test_median_nan_and_extremes);
	tcase_add_test(timer, test_phase_times_str);
	suite_add_tcase(s, timer);
	TCase *args = tcase_create("args");
	tcase_add_test(args, test_check_args_pass);
	tcase_add_test(args, test_check_args_count);
	tcase_add_test(args, test_check_args_null);
	tcase_add_test(args, test_check_args_dtype);
	tcase_add_test(args, test_check_args_extent);
	tcase_add_test(args, test_check_args_ndim);
	tcase_add_test(args, test_check_args_device);
	tcase_add_test(args, test_check_args_no_params);
	suite_add_tcase(s, args);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
