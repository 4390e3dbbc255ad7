/*
 * test_mustfail_public.c - the public calls the other must-fail suites do
 * not reach, each given bad arguments.
 *
 * NULL in each pointer position, negative, zero and huge counts and sizes,
 * out-of-range enum and dtype values, and objects of another context: a
 * call must come back as an error status, NULL or its documented neutral
 * value (0, -1, false), never crash or trip a sanitizer, and where a
 * context is at hand its message must name the call.  Pure helpers that
 * take no pointer are checked on the ends of their argument ranges (a
 * shift, division or conversion there must stay defined).
 */
#include "testutil.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "arith.h"
#include "build.h"
#include "cuda_driver.h"
#include "graph.h"
#include "llvm.h"
#include "lower.h"
#include "nvrtc.h"
#include "op_schedules.h"
#include "sbuf.h"
#include "timer.h"
#include "tune.h"

#define ST_NOCTX(call) ck_assert_msg((call) != TS_OK, "%s: expected an error", #call)

/* C[13, 11] = sum_k A[13, 7] * B[7, 11] with an intermediate T = A * 2
 * (a stage that is neither input nor output), its schedule and lowered
 * function. */
typedef struct fx {
	ts_ctx *ctx;
	ts_tensor *A, *B, *T, *C;
	ts_schedule *s;
	ts_stage *st, *sc;
	ts_func *f;
} fx;

static fx fx_new(void)
{
	fx x = {.ctx = ts_ctx_new()};
	ts_ctx *c = x.ctx;
	x.A = ts_placeholder(c, "A", TS_SHAPE(13, 7), ts_float32);
	x.B = ts_placeholder(c, "B", TS_SHAPE(7, 11), ts_float32);
	ts_expr *i = ts_var(c, "i"), *j = ts_var(c, "j");
	x.T = ts_compute(c, "T", TS_SHAPE(13, 7), TS_VARS(i, j),
			 ts_mul(c, TS_READ(c, x.A, i, j), ts_fconst(c, ts_float32, 2.0)));
	x.C = ts_rename(c, ts_op_matmul(c, x.T, x.B, false, false), "C");
	tu_nonnull(c, x.C);
	x.s = ts_create_schedule(c, 1, &x.C);
	x.st = ts_stage_of(x.s, x.T);
	x.sc = ts_stage_of(x.s, x.C);
	tu_nonnull(c, x.sc);
	x.f = ts_lower(ts_create_schedule(c, 1, &x.C), "mm", 3, (ts_tensor *[]){x.A, x.B, x.C});
	tu_nonnull(c, x.f);
	return x;
}

/* ---- ctx.h ------------------------------------------------------------------------- */

static ts_status verror_of(ts_ctx *ctx, ts_status st, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ts_status r = ts_verror(ctx, st, fmt, ap);
	va_end(ap);
	return r;
}

START_TEST(test_ctx_calls)
{
	ck_assert_ptr_null(ts_ctx_retain(NULL));
	ck_assert_int_eq(ts_ctx_next_id(NULL), 0);
	ck_assert_int_eq(ts_ctx_error_slots(NULL), 0);
	ts_ctx_set_print_passes(NULL, 1);
	ck_assert_int_eq(ts_ctx_print_passes(NULL), 0);
	ck_assert_int_eq(ts_ctx_print_steps(NULL), TS_PRINT_STEPS_OFF);
	ck_assert_ptr_null(ts_strdup(NULL, NULL));
	ck_assert_ptr_null(ts_strdup(NULL, "x"));
	ck_assert_int_eq(verror_of(NULL, TS_ERR_RUNTIME, "x"), TS_ERR_RUNTIME);
	ck_assert_int_eq(ts_error_within(NULL, TS_ERR_RUNTIME, "x"), TS_ERR_RUNTIME);

	ts_ctx *c = ts_ctx_new();
	/* a retained context outlives one free */
	ck_assert_ptr_eq(ts_ctx_retain(c), c);
	ts_ctx_free(c);
	ck_assert_int_gt(ts_ctx_next_id(c), 0);
	/* any mode other than diff is the nest */
	ts_ctx_set_print_steps(c, -7);
	ck_assert_int_eq(ts_ctx_print_steps(c), TS_PRINT_STEPS_NEST);
	ts_ctx_set_print_steps(c, 0);
	FAILS_NULL(c, ts_strdup(c, NULL), "strdup: the string is NULL");
	/* a NULL format still records the status, with a placeholder text */
	ts_clear_error(c);
	ck_assert_int_eq(verror_of(c, TS_ERR_RUNTIME, NULL), TS_ERR_RUNTIME);
	tu_assert_error(c, "(no message)");
	ts_clear_error(c);
	ck_assert_int_eq(verror_of(c, TS_OK, "nothing"), TS_OK);
	ck_assert_int_eq(ts_last_status(c), TS_OK);
	/* ts_error_within with a NULL format keeps the pending error */
	ts_error(c, TS_ERR_INVALID, "inner");
	ck_assert_int_eq(ts_error_within(c, TS_ERR_RUNTIME, NULL), TS_ERR_INVALID);
	ck_assert_str_eq(ts_last_error(c), "inner");
	ts_clear_error(c);
	ck_assert_int_eq(ts_error_within(c, TS_ERR_RUNTIME, NULL), TS_ERR_RUNTIME);
	ck_assert_str_eq(ts_last_error(c), "(no message)");
	ts_clear_error(c);
	ck_assert_int_eq(ts_error_within(c, TS_OK, "outer"), TS_OK);
	ck_assert_int_eq(ts_last_status(c), TS_OK);

	/* stashing: a NULL place is a no-op, a NULL context stashes no error */
	ts_error(c, TS_ERR_INVALID, "kept");
	ts_error_stash(c, NULL);
	tu_assert_error(c, "kept");
	ts_error_stashed saved;
	ts_error_stash(NULL, &saved);
	ck_assert_int_eq(saved.status, TS_OK);
	ck_assert_str_eq(saved.msg, "");
	ts_error_unstash(c, &saved);
	ck_assert_int_eq(ts_last_status(c), TS_OK);
	ts_ctx_free(c);
}
END_TEST

START_TEST(test_ctx_size_vars)
{
	ck_assert_ptr_null(ts_ctx_size_var(NULL, 0, NULL));
	ck_assert_int_eq(ts_ctx_size_var_index(NULL, NULL), -1);
	ck_assert_int_eq(ts_ctx_size_handle(NULL, 0), 0);
	ck_assert_int_eq(ts_ctx_size_handle_index(NULL, TS_SIZE_VAR_BASE), -1);

	ts_ctx *c = ts_ctx_new(), *d = ts_ctx_new();
	ck_assert_int_lt(ts_size_var(c, "n", 64), 0);
	ts_expr *n = ts_ctx_size_var(c, 0, NULL);
	tu_nonnull(c, n);
	int64_t max = -1;
	ck_assert_ptr_eq(ts_ctx_size_var(c, 0, &max), n);
	ck_assert_int_eq(max, 64);
	ck_assert_ptr_null(ts_ctx_size_var(c, 1, &max));
	ck_assert_ptr_null(ts_ctx_size_var(c, -1, NULL));
	ck_assert_ptr_null(ts_ctx_size_var(c, INT_MIN, NULL));
	ck_assert_ptr_null(ts_ctx_size_var(c, INT_MAX, NULL));
	ck_assert_int_eq(ts_ctx_size_var_index(c, NULL), -1);
	ck_assert_int_eq(ts_ctx_size_var_index(c, ts_var(c, "m")), -1);
	ck_assert_int_eq(ts_ctx_size_var_index(d, n), -1);

	int64_t h = ts_ctx_size_handle(c, 0);
	ck_assert_int_eq(ts_ctx_size_handle_index(c, h), 0);
	ck_assert_int_eq(ts_ctx_size_handle_index(d, h), -1);
	ck_assert_int_eq(ts_ctx_size_handle_index(c, h + 1), -1);
	ck_assert_int_eq(ts_ctx_size_handle_index(c, INT64_MIN), -1);
	ck_assert_int_eq(ts_ctx_size_handle_index(c, INT64_MAX), -1);
	ck_assert_int_eq(ts_ctx_size_handle_index(c, 0), -1);
	/* an index outside 0..TS_MAX_SIZE_VARS - 1 has no handle: one computed
	 * for it would be the handle of another context's variable */
	for (int i = 0; i < TS_MAX_SIZE_VARS; i++)
		ck_assert_int_ne(ts_ctx_size_handle(c, i), 0);
	ck_assert_int_eq(ts_ctx_size_handle(c, -1), 0);
	ck_assert_int_eq(ts_ctx_size_handle(c, TS_MAX_SIZE_VARS), 0);
	ck_assert_int_eq(ts_ctx_size_handle(c, INT_MIN), 0);
	ck_assert_int_eq(ts_ctx_size_handle(c, INT_MAX), 0);
	ts_ctx_free(d);
	ts_ctx_free(c);
}
END_TEST

/* ---- ir.h and arith.h: dtypes and the shared arithmetic ----------------------------- */

/* Every code and bit width a ts_dtype can hold, lanes 0, 1 and 65535. */
#define FOR_ALL_DTYPES(t)                                                                  \
	for (int code_ = 0; code_ < 256; code_++)                                          \
		for (int bits_ = 0; bits_ < 256; bits_++)                                  \
			for (int l_ = 0; l_ < 3; l_++)                                     \
				for (ts_dtype t = {(uint8_t)code_, (uint8_t)bits_,         \
						   (uint16_t)(l_ == 2 ? 65535 : l_)},      \
					      *once_ = &t;                                 \
				     once_; once_ = NULL)

START_TEST(test_dtypes)
{
	ts_ctx *c = ts_ctx_new();
	ts_dtype bad = {77, 9, 3};
	ck_assert(!ts_dtype_check(NULL, "x", bad));
	ck_assert(!ts_dtype_check(c, "probe", bad));
	tu_assert_error(c, "probe: invalid dtype (code 77, 9 bits, 3 lanes)");
	ts_clear_error(c);
	ck_assert(!ts_dtype_check(c, NULL, bad));
	tu_assert_error(c, "dtype: invalid dtype (code 77");
	ck_assert_ptr_null(strstr(ts_last_error(c), "null"));
	ts_clear_error(c);
	ck_assert(ts_dtype_check(c, NULL, ts_float32));
	ck_assert_int_eq(ts_last_status(c), TS_OK);
	FOR_ALL_DTYPES(t) {
		int b = ts_dtype_bytes(t);
		ck_assert_int_ge(b, 1);
		ck_assert_int_le(b, 31);
		ck_assert_int_eq(ts_dtype_element(t).lanes, 1);
		ck_assert_int_le(ts_dtype_is_float(t) + ts_dtype_is_int(t) + ts_dtype_is_bool(t), 1);
		if (ts_array_dtype_ok(t))
			ck_assert(ts_dtype_is_valid(t) && t.lanes == 1 && t.code != TS_TYPE_HANDLE);
		(void)ir_wrap_int(t, INT64_MIN);
		(void)ir_wrap_int(t, -1);
		(void)ir_float_to_int(t, 1e300);
		(void)ir_float_to_int(t, -INFINITY);
		(void)ir_float_to_int(t, NAN);
		(void)ir_round_float(t, DBL_MAX);
		(void)ir_cast_float_to_float(t, -DBL_MAX);
		(void)ir_cast_int_to_float(t, INT64_MIN, true);
	}
	ck_assert(!ts_array_dtype_ok(ts_handle));
	ck_assert(!ts_array_dtype_ok(ts_dtype_with_lanes(ts_float32, 4)));
	ck_assert_int_eq(ir_float_to_int(ts_float32, 3.0), 0);
	ck_assert_int_eq(ir_float_to_int(ts_int8, 1e10), 127);
	ck_assert_int_eq(ir_float_to_int(ts_uint8, -5.0), 0);
	ck_assert_int_eq(ir_float_to_int(ts_int64, NAN), 0);
	ck_assert_int_eq(ir_float_to_int(ts_int64, -1e300), INT64_MIN);
	ck_assert_int_eq(ir_wrap_int(ts_int8, 200), -56);
	ck_assert_int_eq(ir_wrap_int(ts_bool, -3), 1);
	ts_ctx_free(c);
}
END_TEST

START_TEST(test_arith_helpers)
{
	ck_assert(isnan(ir_intrinsic_eval((ir_intrinsic)-1, 1.0, 1.0)));
	ck_assert(isnan(ir_intrinsic_eval(IR_INTRIN_COUNT, 1.0, 1.0)));
	ck_assert(isnan(ir_intrinsic_eval((ir_intrinsic)12345, 1.0, 1.0)));
	ck_assert(isnan(ir_intrinsic_eval(IR_INTRIN_LOG, -1.0, 0)));
	ck_assert(isinf(ir_round_tf32(FLT_MAX)));
	ck_assert(isinf(ir_round_tf32(-FLT_MAX)));
	ck_assert(isnan(ir_round_tf32(NAN)));
	ck_assert(isinf(ir_round_tf32(INFINITY)));
	ck_assert(ir_round_tf32(-0.0f) == 0 && signbit(ir_round_tf32(-0.0f)));
	ck_assert(isnan(ir_fminmax(true, NAN, NAN)));
	ck_assert(ir_fminmax(false, NAN, 2.0) == 2.0);
	ck_assert(ir_fminmax(true, 1.0, NAN) == 1.0);
	ck_assert(isinf(ir_round_float(ts_float16, 1e10)));
	ck_assert(isinf(ir_cast_float_to_float(ts_float32, DBL_MAX)));
	ck_assert(ir_cast_int_to_float(ts_float64, -1, true) == 18446744073709551616.0);
	ck_assert_int_eq(ts_sb_indent_level(INT_MIN), 0);
	ck_assert_int_eq(ts_sb_indent_level(INT_MAX), TS_SB_MAX_INDENT);
	ck_assert_int_eq(ts_sb_indent_level(3), 3);
}
END_TEST

/* ---- ir.h: expression queries and ir_prefetch ---------------------------------------- */

static bool is_imm(const ts_expr *e, const void *data)
{
	(void)data;
	return e->kind == IR_INT_IMM;
}

START_TEST(test_expr_queries)
{
	ts_ctx *c = ts_ctx_new(), *d = ts_ctx_new();
	ts_expr *x = ts_var(c, "x");
	ts_expr *e = ts_add(c, ts_mul(c, x, ts_int(c, 4)), ts_int(c, 8));
	ck_assert(!ir_expr_any(NULL, is_imm, NULL));
	ck_assert(!ir_expr_any(e, NULL, NULL));
	ck_assert(ir_expr_any(e, is_imm, NULL));
	ck_assert(!ir_expr_reads(NULL, NULL));
	ck_assert(!ir_expr_reads(e, NULL));
	ck_assert(!ir_expr_loads(NULL, NULL));
	ck_assert(!ir_expr_loads(e, NULL));
	ck_assert(!ir_is_neg_zero(NULL));
	ck_assert(!ir_is_neg_zero(ts_fconst(c, ts_float32, 0.0)));
	ck_assert(ir_is_neg_zero(ts_fconst(c, ts_float32, -0.0)));
	ck_assert(!ir_is_neg_zero(ts_const(c, ts_int32, 0)));

	ck_assert_int_eq(ir_monotone(NULL, x), IR_MONO_UNKNOWN);
	ck_assert_int_eq(ir_monotone(e, NULL), IR_MONO_UNKNOWN);
	ck_assert_int_eq(ir_monotone(e, x), IR_MONO_UP);
	ck_assert_int_eq(ir_monotone(ts_mul(c, x, ts_int(c, INT32_MIN)), x), IR_MONO_DOWN);
	ck_assert_int_eq(ir_monotone_diff(NULL, NULL, x), IR_MONO_UNKNOWN);
	ck_assert_int_eq(ir_monotone_diff(e, NULL, NULL), IR_MONO_UNKNOWN);
	ck_assert_int_eq(ir_monotone_diff(ts_int(c, 3), e, x), IR_MONO_DOWN);

	/* what ts_ramp would accept: no base or lanes is no ramp */
	ck_assert(!ir_ramp_fits(NULL, 1, 8));
	ck_assert(!ir_ramp_fits(x, 1, 0));
	ck_assert(!ir_ramp_fits(x, 1, INT_MIN));
	ck_assert(ir_ramp_fits(x, 1, 8));
	ck_assert(!ir_ramp_fits(x, INT64_MAX, 8));
	ck_assert(!ir_ramp_fits(ts_int(c, INT32_MAX), 1, 2));
	ck_assert(ir_ramp_fits(ts_int(c, INT32_MAX - 1), 1, 2));

	ck_assert(ir_multiple_of(NULL, 3));
	ck_assert(ir_multiple_of(e, 4));
	ck_assert(!ir_multiple_of(e, 0));
	ck_assert(!ir_multiple_of(e, -4));
	ck_assert(!ir_multiple_of(e, INT64_MIN));
	ck_assert(ir_multiple_of(ts_const(c, ts_int64, INT64_MIN), 1));
	ck_assert(ir_multiple_of(ts_const(c, ts_int64, INT64_MIN), INT64_MAX) == false);
	ck_assert(ir_multiple_of(ts_const(c, ts_int64, 0), INT64_MAX));

	/* ownership: NULL passes, a foreign expression is named */
	ck_assert(ir_expr_owned(c, "probe", "x", NULL));
	ck_assert(ir_expr_owned(c, "probe", "x", x));
	ck_assert(!ir_expr_owned(NULL, "probe", "x", x));
	ck_assert(!ir_expr_owned(d, "probe", "operand x", x));
	tu_assert_error(d, "probe: operand x belongs to another context");
	ts_clear_error(d);
	ck_assert(!ir_expr_owned(d, NULL, NULL, x));
	tu_assert_error(d, "expression: operand belongs to another context");
	ts_clear_error(d);

	/* TF32 rounding takes one float32 operand of the context */
	ck_assert_ptr_null(ts_round_tf32(NULL, ts_fconst(c, ts_float32, 1.0)));
	FAILS_NULL(c, ts_round_tf32(c, NULL), "round_tf32");
	FAILS_NULL(c, ts_round_tf32(c, x), "round_tf32");
	FAILS_NULL(c, ts_round_tf32(c, ts_fconst(c, ts_float16, 1.0)), "round_tf32");
	FAILS_NULL(d, ts_round_tf32(d, ts_fconst(c, ts_float32, 1.0)), "another context");
	ts_clear_error(c);
	tu_nonnull(c, ts_round_tf32(c, ts_fconst(c, ts_float32, 1.0)));

	/* prefetch: a scalar READ or LOAD of this context only */
	ts_tensor *A = ts_placeholder(c, "A", TS_SHAPE(8), ts_float32);
	ts_expr *rd = TS_READ(c, A, x);
	ck_assert_ptr_null(ir_prefetch(NULL, rd));
	FAILS_NULL(c, ir_prefetch(c, NULL), "prefetch: value is NULL");
	FAILS_NULL(c, ir_prefetch(c, e), "prefetch: the value must be a scalar READ or LOAD, got ADD");
	FAILS_NULL(d, ir_prefetch(d, rd), "prefetch");
	FAILS_NULL(c, ir_prefetch(c, ts_broadcast(c, rd, 4)), "prefetch: the value must be a scalar");
	tu_nonnull(c, ir_prefetch(c, rd));
	ts_ctx_free(d);
	ts_ctx_free(c);
}
END_TEST

/* ---- schedule.h: storage and prefetch primitives ----------------------------------- */

START_TEST(test_schedule_primitives)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx;
	fx y = fx_new();
	ts_axis *ci = ts_axis_of(x.sc, 0), *ti = ts_axis_of(x.st, 0);
	ts_axis *yi = ts_axis_of(y.sc, 0);

	ST_NOCTX(ts_store_at(NULL, NULL, NULL));
	ST_NOCTX(ts_store_root(NULL));
	ST_NOCTX(ts_double_buffer(NULL));
	ST_NOCTX(ts_storage_align(NULL, 0, 1, 0));
	ST_NOCTX(ts_prefetch(NULL, NULL, NULL, 1));
	ST_NOCTX(ts_prefetch_ahead(NULL, NULL, NULL, NULL, 1));
	ST_NOCTX(ts_tensorize(NULL, NULL, TS_INTRIN_MMA_16X16X16));

	FAILS_ST(c, ts_store_at(NULL, x.sc, ci), "store_at: stage is NULL");
	FAILS_ST(c, ts_store_at(x.st, NULL, ci), "store_at(T): target stage is NULL");
	FAILS_ST(c, ts_store_at(x.st, x.sc, NULL), "store_at(T): axis is NULL");
	FAILS_ST(c, ts_store_at(x.st, x.st, ti), "store_at(T): a stage cannot be stored inside itself");
	FAILS_ST(c, ts_store_at(x.sc, x.st, ti), "store_at(C): C is an output");
	FAILS_ST(c, ts_store_at(x.st, x.sc, ti), "store_at(T): axis 'i' is not an axis of C");
	FAILS_ST(c, ts_store_at(x.st, x.sc, yi), "store_at(T): axis");
	FAILS_ST(c, ts_store_at(x.st, y.sc, yi), "store_at(T): stage C belongs to another schedule");

	FAILS_ST(c, ts_double_buffer(x.sc), "double_buffer(C): C is an output");

	FAILS_ST(c, ts_storage_align(x.sc, 0, 2, 0), "storage_align(C): C is an output");
	FAILS_ST(c, ts_storage_align(x.st, -1, 2, 0), "storage_align(T): dimension -1");
	FAILS_ST(c, ts_storage_align(x.st, 1, 2, 0), "storage_align(T): dimension 1");
	FAILS_ST(c, ts_storage_align(x.st, INT_MIN, 2, 0), "storage_align(T): dimension");
	FAILS_ST(c, ts_storage_align(x.st, 0, 0, 0), "storage_align(T): factor 0");
	FAILS_ST(c, ts_storage_align(x.st, 0, INT64_MAX, 0), "storage_align(T): factor");
	FAILS_ST(c, ts_storage_align(x.st, 0, INT64_MIN, 0), "storage_align(T): factor");
	FAILS_ST(c, ts_storage_align(x.st, 0, 4, 4), "storage_align(T): factor 4 and offset 4");
	FAILS_ST(c, ts_storage_align(x.st, 0, 4, -1), "storage_align(T): factor 4 and offset -1");

	FAILS_ST(c, ts_prefetch(x.sc, NULL, ci, 1), "prefetch(C): tensor is NULL");
	FAILS_ST(c, ts_prefetch(x.sc, x.B, NULL, 1), "prefetch(C): axis is NULL");
	FAILS_ST(c, ts_prefetch(x.sc, x.B, ti, 1), "prefetch(C): axis 'i' does not belong");
	FAILS_ST(c, ts_prefetch(x.sc, x.T, ci, 1), "prefetch(C): T is computed here");
	FAILS_ST(c, ts_prefetch(x.sc, x.A, ci, 1), "prefetch(C): the stage does not read A");
	FAILS_ST(c, ts_prefetch(x.sc, y.B, ci, 1), "prefetch(C): the stage does not read B");
	FAILS_ST(c, ts_prefetch(x.sc, x.B, ci, 0), "prefetch(C): offset 0");
	FAILS_ST(c, ts_prefetch(x.sc, x.B, ci, INT64_MIN), "prefetch(C): offset");
	FAILS_ST(c, ts_prefetch(x.sc, x.B, ci, INT64_MAX), "prefetch(C): offset");
	FAILS_ST(c, ts_prefetch_ahead(x.sc, x.B, ci, NULL, 1), "prefetch(C): the axis the offset applies to is NULL");
	FAILS_ST(c, ts_prefetch_ahead(x.sc, x.B, ci, yi, 1), "prefetch(C): axis 'i' belongs to no stage");

	/* a stage takes TS_MAX_PREFETCH prefetches */
	ts_clear_error(c);
	for (int k = 0; k < TS_MAX_PREFETCH; k++)
		tu_ok(c, ts_prefetch(x.sc, x.B, ci, k + 1));
	FAILS_ST(c, ts_prefetch(x.sc, x.B, ci, 99), "prefetch(C): more than");

	FAILS_ST(c, ts_tensorize(x.sc, NULL, TS_INTRIN_MMA_16X16X16), "tensorize(C): axis is NULL");
	FAILS_ST(c, ts_tensorize(x.sc, yi, TS_INTRIN_MMA_16X16X16), "tensorize(C): axis 'i' does not belong");
	FAILS_ST(c, ts_tensorize(x.sc, ci, (ts_intrin)0), "tensorize(C): unknown intrinsic");
	FAILS_ST(c, ts_tensorize(x.sc, ci, (ts_intrin)-1), "tensorize(C): unknown intrinsic");
	FAILS_ST(c, ts_tensorize(x.sc, ci, TS_INTRIN_MMA_16X16X16), "tensorize(C): loop 'i' has extent 13");

	/* the refusals left the stages untouched */
	ts_clear_error(c);
	tu_ok(c, ts_store_root(x.st));
	tu_ok(c, ts_double_buffer(x.st));
	ts_ctx_free(y.ctx);
	ts_ctx_free(c);
}
END_TEST

/* ---- op_schedules.h and ops.h ------------------------------------------------------ */

static const int64_t ends[] = {INT64_MIN, INT64_MIN + 1, -1, 0, 1, 2, 3, 7, 32, 48, 4096,
			       INT64_MAX / 2, INT64_MAX - 1, INT64_MAX};
#define NENDS ((int)(sizeof ends / sizeof ends[0]))

START_TEST(test_op_schedule_helpers)
{
	int lanes = ts_cpu_vector_lanes();
	ck_assert(lanes == 8 || lanes == 16);
	for (int i = 0; i < NENDS; i++) {
		int64_t v = ends[i];
		int64_t ob = ts_conv2d_cpu_out_block(v), ib = ts_conv2d_cpu_in_block(v);
		int64_t db = ts_depthwise_cpu_block(v), ow = ts_conv2d_cpu_ow_block(v);
		if (v < 1) {
			ck_assert_int_eq(ob, 0);
			ck_assert_int_eq(ib, 0);
			ck_assert_int_eq(db, 0);
			ck_assert_int_eq(ow, 0);
		} else {
			ck_assert(ob >= 1 && v % ob == 0);
			ck_assert(ib >= 1 && ib <= 16 && v % ib == 0);
			ck_assert(db >= 1 && db <= lanes && v % db == 0);
			ck_assert(ow >= 1 && ow <= 14);
		}
		ts_matmul_cpu_params p = ts_matmul_cpu_default_for(v);
		ck_assert(p.mr >= 1 && p.nr >= 1 && p.kunroll >= 1);
		(void)ts_matmul_cpu_packs(v);
		for (int j = 0; j < NENDS; j++) {
			int64_t w = ends[j];
			int64_t obf = ts_conv2d_cpu_out_block_for(v, w);
			ck_assert(v < 1 ? obf == 0 : obf >= 1 && v % obf == 0);
			int64_t rw = ts_conv2d_cpu_row_width(1, 1, 1, 1, 0, 0, v, w);
			ck_assert(rw == w || (w >= 1 && rw % w == 0));
			rw = ts_conv2d_cpu_row_width(v, w, v, w, v, w, v, w);
			ck_assert(rw == w || (w >= 1 && rw % w == 0));
			for (int k = 0; k < NENDS; k += 3) {
				int64_t u = ends[k];
				ts_matmul_cpu_params ps = ts_matmul_cpu_default_shape(v, w, u);
				ck_assert(ps.mr >= 1 && ps.nr >= 1 && ps.kunroll >= 1 && ps.kc >= 0);
				ck_assert(ps.kc == 0 || ps.kc < u);
				rw = ts_conv2d_cpu_row_width_for(1, 1, 1, 1, 0, 0, v, w, u, ends[(k + 5) % NENDS], u);
				ck_assert(rw == w || (w >= 1 && rw % w == 0));
				int64_t rc = ts_conv2d_cpu_rc_block(v, w, 1, 1, u);
				ck_assert(v < 1 || w < 1 || u < 1 ? rc == 0 : rc >= 1 && v % rc == 0);
				rc = ts_conv2d_cpu_rc_block(v, u, w, v, u);
				ck_assert(rc >= 0);
			}
		}
	}
	/* the defaults are usable as they are */
	ts_depthwise_cpu_params dw = ts_depthwise_cpu_default();
	(void)dw;
	ts_matmul_tc_params tc = ts_matmul_tc_default();
	ck_assert(tc.block_m >= tc.warp_m && tc.warp_m >= 16 && tc.tile_k >= 16);
}
END_TEST

START_TEST(test_tensorcore)
{
	ts_ctx *c = ts_ctx_new(), *d = ts_ctx_new();
	ts_tensor *A = ts_placeholder(c, "A", TS_SHAPE(64, 64), ts_float32);
	ts_tensor *B = ts_placeholder(c, "B", TS_SHAPE(64, 64), ts_float32);
	ts_tensor *H = ts_placeholder(c, "H", TS_SHAPE(64, 64), ts_float16);
	ts_tensor *D = ts_placeholder(d, "D", TS_SHAPE(64, 64), ts_float32);
	ck_assert_ptr_null(ts_op_matmul_tf32(NULL, A, B, false, false));
	FAILS_NULL(c, ts_op_matmul_tf32(c, NULL, B, false, false), "matmul");
	FAILS_NULL(c, ts_op_matmul_tf32(c, A, NULL, false, false), "matmul");
	FAILS_NULL(c, ts_op_matmul_tf32(c, A, H, false, false), "matmul_tf32: operands must be float32, got float32 and float16");
	FAILS_NULL(c, ts_op_matmul_tf32(c, H, A, true, true), "matmul_tf32: operands must be float32");
	FAILS_NULL(c, ts_op_matmul_tf32(c, A, D, false, false), "another context");
	ts_clear_error(c);
	ts_tensor *C = ts_op_matmul_tf32(c, A, B, false, true);
	tu_nonnull(c, C);
	ts_tensor *P = ts_op_matmul(c, A, B, false, false);

	ts_schedule *s = ts_create_schedule(c, 1, &C);
	ST_NOCTX(ts_schedule_matmul_tensorcore(NULL, C, NULL));
	FAILS_ST(c, ts_schedule_matmul_tensorcore(s, NULL, NULL), "schedule_matmul_tensorcore: tensor is NULL");
	FAILS_ST(c, ts_schedule_matmul_tensorcore(s, D, NULL), "schedule_matmul_tensorcore: tensor D belongs to another context");
	FAILS_ST(c, ts_schedule_matmul_tensorcore(s, P, NULL), "has no stage");
	/* parameters out of range, one field at a time */
	ts_matmul_tc_params good = ts_matmul_tc_default();
	int64_t bad[] = {0, -16, INT64_MIN, INT64_MAX, 8, 24};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		for (int f = 0; f < 5; f++) {
			ts_matmul_tc_params p = good;
			int64_t *field[] = {&p.block_m, &p.block_n, &p.warp_m, &p.warp_n, &p.tile_k};
			*field[f] = bad[i];
			FAILS_ST(c, ts_schedule_matmul_tensorcore(s, C, &p), "schedule_matmul_tensorcore");
		}
	ts_matmul_tc_params p = good;
	p.double_buffer = -5;
	ts_clear_error(c);
	(void)ts_schedule_matmul_tensorcore(ts_create_schedule(c, 1, &C), C, &p);
	ts_ctx_free(d);
	ts_ctx_free(c);
}
END_TEST

/* ---- runtime ----------------------------------------------------------------------- */

START_TEST(test_runtime_helpers)
{
	ck_assert_uint_gt(ts_phys_mem_bytes(), 0);
	/* empty ranges share nothing; ranges that would wrap are compared
	 * without address arithmetic */
	char buf[16];
	ck_assert(!ts_bytes_overlap(buf, 0, buf, 0));
	ck_assert(!ts_bytes_overlap(NULL, 0, NULL, 0));
	ck_assert(ts_bytes_overlap(buf, 1, buf, 1));
	ck_assert(ts_bytes_overlap(buf, UINT64_MAX, buf + 8, 1));
	ck_assert(!ts_bytes_overlap(buf, 8, buf + 8, 8));
	ck_assert(ts_bytes_overlap((void *)(UINTPTR_MAX - 3), UINT64_MAX, buf, 1));
	ck_assert_int_eq(ts_func_nargs(NULL), 0);

	ck_assert_int_eq(ts_cold_sets(NAN), 1);
	ck_assert_int_eq(ts_cold_sets(-INFINITY), 1);
	ck_assert_int_eq(ts_cold_sets(INFINITY), 1);
	ck_assert_int_eq(ts_cold_sets(-5), 1);
	ck_assert_int_eq(ts_cold_sets(0), 1);
	ck_assert_int_eq(ts_cold_sets(1), TS_COLD_MAX_SETS);
	ck_assert_int_eq(ts_cold_sets(DBL_MAX), 1);

	/* a start not yet reached is a negative time, not 584 years */
	uint64_t now = ts_now_ns();
	ck_assert(ts_ms_since(now) >= 0);
	ck_assert(ts_ms_since(now + 1000000000u) < 0);
	ck_assert(ts_ms_since(now + 1000000000u) > -1001);
	ck_assert(ts_ms_since(0) > 0);
	ck_assert(isfinite(ts_ms_since(UINT64_MAX)));
	ck_assert(ts_ms_since(UINT64_MAX) < 0);

	ck_assert_ptr_nonnull(ts_tune_ops_usage());
	ck_assert_ptr_nonnull(strstr(ts_tune_ops_usage(), "matmul"));
	ck_assert_int_eq(ts_graph_exec_tune_tasks(NULL, NULL, 0), -1);
	ck_assert_int_eq(ts_graph_exec_tune_tasks(NULL, NULL, -1), -1);
}
END_TEST

START_TEST(test_check_args_sizes)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx;
	fx y = fx_new();
	int64_t sizes[TS_MAX_SIZE_VARS];
	ts_array *A = ts_array_new(c, ts_float32, TS_SHAPE(13, 7));
	ts_array *B = ts_array_new(c, ts_float32, TS_SHAPE(7, 11));
	ts_array *C = ts_array_new(c, ts_float32, TS_SHAPE(13, 11));
	ts_array *args[] = {A, B, C};
	ck_assert_int_eq(ts_func_nargs(x.f), 3);
	ST_NOCTX(ts_check_args_sizes(NULL, x.f, 3, args, TS_DEVICE_CPU, sizes));
	FAILS_ST(c, ts_check_args_sizes(c, NULL, 3, args, TS_DEVICE_CPU, sizes), "call: the function is NULL");
	FAILS_ST(c, ts_check_args_sizes(c, x.f, 3, args, (ts_device)-1, sizes), "call mm: unknown device -1");
	FAILS_ST(c, ts_check_args_sizes(c, x.f, -1, args, TS_DEVICE_CPU, sizes), "call mm: expected 3 arguments, got -1");
	FAILS_ST(c, ts_check_args_sizes(c, x.f, INT_MAX, args, TS_DEVICE_CPU, sizes), "call mm: expected 3 arguments");
	FAILS_ST(c, ts_check_args_sizes(c, x.f, 3, NULL, TS_DEVICE_CPU, sizes), "call mm: the argument list is NULL");
	FAILS_ST(c, ts_check_args_sizes(c, x.f, 3, (ts_array *[]){A, NULL, C}, TS_DEVICE_CPU, sizes),
		 "call mm: argument 1 (B) is NULL");
	FAILS_ST(c, ts_check_args_sizes(c, x.f, 3, (ts_array *[]){A, B, A}, TS_DEVICE_CPU, sizes),
		 "call mm: argument 2 (C) has shape");
	FAILS_ST(c, ts_check_args_sizes(c, x.f, 3, args, TS_DEVICE_CUDA, sizes), "is on the cpu device");
	/* a function of another context is refused (its buffers are that
	 * context's, freed with it) */
	FAILS_ST(c, ts_check_args_sizes(c, y.f, 3, args, TS_DEVICE_CPU, sizes),
		 "call mm: the function belongs to another context");
	/* without size variables the sizes may be NULL */
	ts_clear_error(c);
	tu_ok(c, ts_check_args_sizes(c, x.f, 3, args, TS_DEVICE_CPU, NULL));
	ts_array_free(A);
	ts_array_free(B);
	ts_array_free(C);
	ts_ctx_free(y.ctx);

	/* a function with a size variable needs a place for its value */
	int64_t n = ts_size_var(c, "n", 64);
	ts_tensor *V = ts_placeholder(c, "V", TS_SHAPE(n), ts_float32);
	ts_expr *i = ts_var(c, "i");
	ts_tensor *W = ts_compute(c, "W", TS_SHAPE(n), TS_VARS(i),
				  ts_add(c, TS_READ(c, V, i), ts_fconst(c, ts_float32, 1.0)));
	ts_func *g = ts_lower(ts_create_schedule(c, 1, &W), "inc", 2, (ts_tensor *[]){V, W});
	tu_nonnull(c, g);
	ck_assert_int_eq(ts_func_nargs(g), 2);
	ts_array *v = ts_array_new(c, ts_float32, TS_SHAPE(5)), *w = ts_array_new(c, ts_float32, TS_SHAPE(5));
	FAILS_ST(c, ts_check_args_sizes(c, g, 2, (ts_array *[]){v, w}, TS_DEVICE_CPU, NULL),
		 "call inc: sizes is NULL, and the function has 1 size variable to receive");
	ts_clear_error(c);
	tu_ok(c, ts_check_args_sizes(c, g, 2, (ts_array *[]){v, w}, TS_DEVICE_CPU, sizes));
	ck_assert_int_eq(sizes[0], 5);
	ts_array_free(v);
	ts_array_free(w);
	ts_ctx_free(c);
}
END_TEST

/* ---- codegen ----------------------------------------------------------------------- */

START_TEST(test_cuda_helpers)
{
	ts_ctx *c = ts_ctx_new();
	ST_NOCTX(cg_cuda_check_arch(NULL, NULL));
	FAILS_ST(c, cg_cuda_check_arch(c, NULL), "cuda: bad architecture '(null)'");
	FAILS_ST(c, cg_cuda_check_arch(c, ""), "cuda: bad architecture ''");
	FAILS_ST(c, cg_cuda_check_arch(c, "sm_"), "cuda: bad architecture 'sm_'");
	FAILS_ST(c, cg_cuda_check_arch(c, "sm_9"), "cuda: bad architecture 'sm_9'");
	FAILS_ST(c, cg_cuda_check_arch(c, "sm_9999"), "cuda: bad architecture");
	FAILS_ST(c, cg_cuda_check_arch(c, "sm_90x"), "cuda: bad architecture");
	FAILS_ST(c, cg_cuda_check_arch(c, "sm_-90"), "cuda: bad architecture");
	FAILS_ST(c, cg_cuda_check_arch(c, "sm_99999999999999999999"), "cuda: bad architecture");
	char longarch[4096];
	memset(longarch, '9', sizeof longarch - 1);
	longarch[sizeof longarch - 1] = '\0';
	memcpy(longarch, "sm_", 3);
	FAILS_ST(c, cg_cuda_check_arch(c, longarch), "cuda: bad architecture");
	ts_clear_error(c);
	tu_ok(c, cg_cuda_check_arch(c, "sm_90a"));
	tu_ok(c, cg_cuda_check_arch(c, "compute_80"));

	/* the version needs both outputs; without libnvrtc it says so */
	int major = -1, minor = -1;
	ST_NOCTX(cg_nvrtc_version(NULL, NULL, NULL));
	FAILS_ST(c, cg_nvrtc_version(c, NULL, &minor), "nvrtc_version: major is NULL");
	FAILS_ST(c, cg_nvrtc_version(c, &major, NULL), "nvrtc_version: minor is NULL");
	ts_clear_error(c);
	if (cg_nvrtc_version(c, &major, &minor) == TS_OK)
		ck_assert_int_ge(major, 1);
	else
		tu_assert_error(c, "libnvrtc");

	/* freeing: NULL and an empty result are no-ops, twice is fine */
	cg_nvrtc_result_free(NULL);
	cg_nvrtc_result r = {0};
	cg_nvrtc_result_free(&r);
	r.image = malloc(4);
	r.log = malloc(4);
	r.size = 4;
	cg_nvrtc_result_free(&r);
	ck_assert_ptr_null(r.image);
	ck_assert_ptr_null(r.log);
	ck_assert_uint_eq(r.size, 0);
	cg_nvrtc_result_free(&r);

	/* allowing shared memory needs a kernel ts_cuda_module_kernel made */
	ST_NOCTX(ts_cuda_kernel_allow_shared(NULL, NULL, 0));
	FAILS_ST(c, ts_cuda_kernel_allow_shared(c, NULL, 1024), "cuda: allow_shared: no kernel");
	ts_cuda_kernel k = {0};
	FAILS_ST(c, ts_cuda_kernel_allow_shared(c, &k, 1024), "cuda: allow_shared: no kernel");
	FAILS_ST(c, ts_cuda_kernel_allow_shared(c, &k, -1), "cuda: allow_shared");
	ts_ctx_free(c);
}
END_TEST

START_TEST(test_llvm_steps)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx;
	fx y = fx_new();
	ck_assert_ptr_null(cg_llvm_prepare(NULL, x.f, NULL));
	FAILS_NULL(c, cg_llvm_prepare(c, NULL, NULL), "llvm: no function (NULL)");
	FAILS_NULL(c, cg_llvm_prepare(c, y.f, NULL), "llvm(mm): the function belongs to another context");
	FAILS_NULL(c, cg_llvm_prepare(c, x.f, "not-a-target"), "not-a-target");
	FAILS_NULL(c, cg_llvm_prepare(c, x.f, "llvm -mcpu=no-such-cpu-xyz"), "no-such-cpu-xyz");
	ck_assert(!cg_llvm_finish(NULL));
	ck_assert_int_eq(cg_llvm_size(NULL), 0);
	ck_assert_int_eq(cg_llvm_report(NULL, NULL), TS_ERR_INVALID);
	FAILS_ST(c, cg_llvm_report(c, NULL), "llvm: no module (NULL)");

	ts_clear_error(c);
	cg_llvm_module *m = cg_llvm_prepare(c, x.f, NULL);
	tu_nonnull(c, m);
	ck_assert_int_gt(cg_llvm_size(m), 0);
	ST_NOCTX(cg_llvm_report(NULL, m));
	FAILS_ST(c, cg_llvm_report(c, m), "llvm(mm): the module was never finished");
	ck_assert(cg_llvm_finish(m));
	ck_assert(cg_llvm_finish(m)); /* twice: nothing more */
	ts_clear_error(c);
	tu_ok(c, cg_llvm_report(c, m));
	cg_llvm_free(m);
	cg_llvm_free(NULL);
	/* another architecture's module finishes without an entry point */
	m = cg_llvm_prepare(c, x.f, "llvm -mtriple=aarch64-linux-gnu");
	if (m) {
		ck_assert(cg_llvm_finish(m));
		tu_ok(c, cg_llvm_report(c, m));
		ck_assert_ptr_null(cg_llvm_entry(m));
		cg_llvm_free(m);
	} else {
		tu_assert_error(c, "aarch64");
	}
	ts_ctx_free(y.ctx);
	ts_ctx_free(c);
}
END_TEST

START_TEST(test_build_all)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx;
	fx y = fx_new();
	ts_module *out[2] = {(ts_module *)&out, (ts_module *)&out};
	const ts_func *fs[] = {x.f, x.f};
	ST_NOCTX(ts_build_all(NULL, 1, fs, NULL, out));
	FAILS_ST(c, ts_build_all(c, -1, fs, NULL, out), "build_all: needs n >= 0");
	FAILS_ST(c, ts_build_all(c, INT_MIN, fs, NULL, out), "build_all: needs n >= 0");
	FAILS_ST(c, ts_build_all(c, 1, NULL, NULL, out), "build_all: needs n >= 0 and, when n > 0, functions");
	FAILS_ST(c, ts_build_all(c, 1, fs, NULL, NULL), "output NULL");
	tu_ok(c, ts_build_all(c, 0, NULL, NULL, NULL));
	FAILS_ST(c, ts_build_all(c, 2, (const ts_func *[]){x.f, NULL}, NULL, out), "build_all: function 1 is NULL");
	ck_assert_ptr_null(out[0]);
	ck_assert_ptr_null(out[1]);
	FAILS_ST(c, ts_build_all(c, 2, (const ts_func *[]){x.f, y.f}, NULL, out), "build mm: the function belongs to another context");
	ck_assert_ptr_null(out[0]);
	FAILS_ST(c, ts_build_all(c, 2, fs, "gpu", out), "build mm: unknown target 'gpu'");
	FAILS_ST(c, ts_build_all(c, 2, fs, "llvm -mcpu=no-such-cpu-xyz", out), "no-such-cpu-xyz");
	FAILS_ST(c, ts_build_all(c, 2, fs, "cuda -arch=sm_1", out), "sm_1");
	FAILS_ST(c, ts_build_all(c, 2, fs, "cuda -arch=", out), "arch");
	FAILS_ST(c, ts_build_all(c, 2, fs, "llvm -mcpu=", out), "mcpu");
	FAILS_ST(c, ts_build_all(c, 2, fs, "llvm -mtriple=", out), "mtriple");
	FAILS_ST(c, ts_build_all(c, 2, fs, "llvm -bogus", out), "bogus");
	size_t nlong = 100000;
	char *longt = malloc(nlong + 1);
	memcpy(longt, "llvm -mcpu=", 11);
	memset(longt + 11, 'x', nlong - 11);
	longt[nlong] = '\0';
	FAILS_ST(c, ts_build_all(c, 2, fs, longt, out), "build");
	longt[3] = 'x';
	FAILS_ST(c, ts_build_all(c, 2, fs, longt, out), "build");
	memcpy(longt, "cuda -arch=", 11);
	FAILS_ST(c, ts_build_all(c, 2, fs, longt, out), "cuda: bad architecture 'xxx");
	free(longt);
	ck_assert_ptr_null(out[0]);
	ck_assert_ptr_null(out[1]);
	ts_ctx_free(y.ctx);
	ts_ctx_free(c);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mustfail_public");
	TCase *ir = tcase_create("ir");
	tcase_add_test(ir, test_ctx_calls);
	tcase_add_test(ir, test_ctx_size_vars);
	tcase_add_test(ir, test_dtypes);
	tcase_add_test(ir, test_arith_helpers);
	tcase_add_test(ir, test_expr_queries);
	suite_add_tcase(s, ir);
	TCase *sch = tcase_create("schedule");
	tcase_add_test(sch, test_schedule_primitives);
	tcase_add_test(sch, test_op_schedule_helpers);
	tcase_add_test(sch, test_tensorcore);
	suite_add_tcase(s, sch);
	TCase *rt = tcase_create("runtime");
	tcase_add_test(rt, test_runtime_helpers);
	tcase_add_test(rt, test_check_args_sizes);
	suite_add_tcase(s, rt);
	TCase *cg = tcase_create("codegen");
	tcase_set_timeout(cg, 120);
	tcase_add_test(cg, test_cuda_helpers);
	tcase_add_test(cg, test_llvm_steps);
	tcase_add_test(cg, test_build_all);
	suite_add_tcase(s, cg);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
