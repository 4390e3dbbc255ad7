/* test_mustfail_divsem.c - float to integer casts from the 16-bit floats,
 * which ir.h defines: the LLVM backend, which has no 16-bit floats, must
 * refuse them with a clear error, never emit an undefined conversion; the
 * C and CUDA C emitters convert through float and saturate (test_c_emit
 * runs them). */
#include "testutil.h"

#include <string.h>

#include "build.h"
#include "c_emit.h"
#include "cg_kernels.h"

/* N[i] = int32(H[i]) with H of dtype `from`. */
static ts_func *half_cast(ts_ctx *ctx, ts_dtype from)
{
	ts_buffer *H = kg_buf(ctx, "H", from, 16, 0, TS_SCOPE_GLOBAL);
	ts_buffer *N = kg_buf(ctx, "N", ts_int32, 16, 0, TS_SCOPE_GLOBAL);
	ts_expr *i = ts_var(ctx, "i");
	ts_stmt *s = ir_store(ctx, N, i, ts_cast(ctx, ts_int32, ts_load(ctx, H, i)));
	return kg_func(ctx, "half_cast", 2, (ts_buffer *[]){H, N},
		       kg_loop(ctx, i, 16, TS_FOR_SERIAL, s));
}

static void refused(ts_dtype from, const char *name)
{
	char want[64];
	ts_ctx *ctx = ts_ctx_new();
	ts_func *f = half_cast(ctx, from);
	tu_nonnull(ctx, f);
	snprintf(want, sizeof(want), "parameter H is %s, a dtype the LLVM backend does not support", name);
	const char *c = cg_emit_c(ctx, f);
	ck_assert_msg(c && strstr(c, "ts_cast_f32_i32("), "%s", c ? c : ts_last_error(ctx));
	ck_assert_ptr_nonnull(cg_emit_cuda(ctx, f, NULL));
	ck_assert_ptr_null(ts_build(ctx, f, "llvm"));
	tu_assert_error(ctx, want);
	ts_ctx_free(ctx);
}

START_TEST(test_float16_cast_refused)
{
	refused(ts_float16, "float16");
}
END_TEST

START_TEST(test_bfloat16_cast_refused)
{
	refused(ts_bfloat16, "bfloat16");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mustfail_divsem");
	TCase *tc = tcase_create("half_casts");
	tcase_add_test(tc, test_float16_cast_refused);
	tcase_add_test(tc, test_bfloat16_cast_refused);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
