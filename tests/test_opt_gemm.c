/*
 * test_opt_gemm.c - each step of the GEMM tutorial (TVM's "How to optimize
 * GEMM on CPU", then tessera's register blocking): its lowered loop IR
 * matches a golden file (the register block fixed at 6x32, as on AVX-512,
 * so that the golden holds on any host), and it computes the reference
 * result through the interpreter and the LLVM JIT, on a size the tiles
 * divide and one they do not.
 */
#include "testutil.h"

#include "gemm_steps.h"
#include "lower.h"

START_TEST(test_step_goldens)
{
	for (int i = 0; i < gemm_nsteps; i++) {
		gemm g = gemm_make(64, gemm_steps[i].packed);
		g.mp = gemm_golden_params(); /* the golden IR must not depend on the host */
		gemm_steps[i].apply(&g);
		ck_assert_msg(ts_last_status(g.ctx) == TS_OK, "%s: %s", gemm_steps[i].name,
			      ts_last_error(g.ctx));
		ts_func *f = ts_lower(g.s, "gemm", 3, (ts_tensor *[]){g.A, g.B, g.C});
		tu_nonnull(g.ctx, f);
		char name[64];
		snprintf(name, sizeof(name), "opt_gemm_step%d.txt", i);
		tu_assert_golden(name, ir_func_str(g.ctx, f));
		tu_check_func(g.ctx, f, 1e-4);
		ts_ctx_free(g.ctx);
	}
}
END_TEST

START_TEST(test_steps_odd_size)
{
	for (int i = 0; i < gemm_nsteps; i++) {
		gemm g = gemm_make(45, gemm_steps[i].packed);
		gemm_steps[i].apply(&g);
		tu_check_func(g.ctx, ts_lower(g.s, "gemm", 3, (ts_tensor *[]){g.A, g.B, g.C}), 1e-4);
		ts_ctx_free(g.ctx);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("opt_gemm");
	TCase *tc = tcase_create("steps");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_step_goldens);
	tcase_add_test(tc, test_steps_odd_size);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
