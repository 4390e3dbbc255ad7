/*
 * test_prefetch.c - ts_prefetch and ts_prefetch_ahead: the prefetch loops
 * lowering adds (region, line steps, the bounds test), results unchanged
 * through the interpreter (which also bounds-checks every prefetched
 * address) and the LLVM JIT on shapes the splits do not divide, what each
 * backend emits, and every refusal.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "c_emit.h"
#include "interp.h"
#include "lower.h"
#include "op_schedules.h"
#include "printer.h"
#include "schedule.h"

typedef tu_mm mm;

static ts_func *lower(mm *e)
{
	ts_func *f = ts_lower(e->s, "mm", 3, (ts_tensor *[]){e->A, e->B, e->C});
	tu_nonnull(e->ctx, f);
	return f;
}

/* The emitted C compiles warning-free with the system's compiler. */
static void compiles(const char *src)
{
	if (system("cc --version >/dev/null 2>&1") != 0)
		return;
	char dir[] = "/tmp/tessera_pf_XXXXXX", path[64], cmd[256];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/k.c", dir);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(src, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cd %s && cc -std=c11 -Wall -Werror -O2 -c k.c -o k.o", dir);
	int rc = system(cmd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_msg(rc == 0, "the emitted C does not compile:\n%s", src);
}

static int count(const char *text, const char *part)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, part)) != NULL; p++)
		n++;
	return n;
}

/* Rows of B a block of k reads, prefetched one block ahead; k = 10 is not
 * divisible by 4, so the last block reads 2 rows and the prefetch of
 * block 2 (rows 8..11) would leave B: it is skipped, as is every block's
 * past the end. */
START_TEST(test_prefetch_matmul)
{
	mm e = tu_matmul(7, 40, 10);
	ts_axis *ko, *ki, *i = ts_axis_of(e.sc, 0), *j = ts_axis_of(e.sc, 1);
	tu_ok(e.ctx, ts_split(e.sc, ts_reduce_axis_of(e.sc, 0), 4, &ko, &ki));
	tu_ok(e.ctx, ts_reorder(e.sc, TS_AXES(i, ko, ki, j)));
	tu_ok(e.ctx, ts_prefetch(e.sc, e.B, ko, 1));
	ts_func *f = lower(&e);
	const char *text = ir_func_str(e.ctx, f);
	ck_assert_msg(count(text, "prefetch(B[") == 1, "%s", text);
	/* 4 rows x 40 floats = 160 contiguous floats, 10 lines of 16 */
	ck_assert_msg(strstr(text, "< 10") != NULL, "%s", text);
	tu_check_func(e.ctx, f, 1e-5);
	/* the backends: llvm.prefetch, __builtin_prefetch */
	ts_module *m = ts_build(e.ctx, f, "llvm");
	tu_nonnull(e.ctx, m);
	ck_assert(strstr(ts_module_source(m, "llvm"), "llvm.prefetch") != NULL);
	ck_assert(strstr(ts_module_source(m, "asm"), "prefetch") != NULL);
	const char *c = cg_emit_c(e.ctx, f);
	tu_nonnull(e.ctx, c);
	ck_assert_msg(strstr(c, "__builtin_prefetch(&B[") != NULL, "%s", c);
	compiles(c);
	ts_module_free(m);
	ts_ctx_free(e.ctx);
}
END_TEST

/* A negative offset prefetches what an earlier iteration read; the first
 * iteration has none. */
START_TEST(test_prefetch_negative)
{
	mm e = tu_matmul(5, 9, 6);
	tu_ok(e.ctx, ts_prefetch(e.sc, e.A, ts_axis_of(e.sc, 0), -2));
	ts_func *f = lower(&e);
	ck_assert(strstr(ir_func_str(e.ctx, f), "prefetch(A[") != NULL);
	tu_check_func(e.ctx, f, 1e-5);
	ts_ctx_free(e.ctx);
	/* the largest offsets: the moved index wraps past int32 or leaves the
	 * tensor, and the clipped region is empty, never addressed (the
	 * interpreter would say so) */
	e = tu_matmul(5, 9, 6);
	tu_ok(e.ctx, ts_prefetch(e.sc, e.A, ts_axis_of(e.sc, 0), INT32_MAX));
	tu_ok(e.ctx, ts_prefetch(e.sc, e.B, ts_reduce_axis_of(e.sc, 0), -INT32_MAX));
	tu_check_func(e.ctx, lower(&e), 1e-5);
	ts_ctx_free(e.ctx);
}
END_TEST

/* ts_prefetch_ahead: in each step of k, the row of A the next row of the
 * tile loop reads there.  The tile of 3 rows does not divide 8, so rows
 * past the end are guarded in the body and never prefetched. */
START_TEST(test_prefetch_ahead)
{
	mm e = tu_matmul(8, 12, 5);
	ts_axis *io, *ii, *k = ts_reduce_axis_of(e.sc, 0), *j = ts_axis_of(e.sc, 1);
	tu_ok(e.ctx, ts_split(e.sc, ts_axis_of(e.sc, 0), 3, &io, &ii));
	tu_ok(e.ctx, ts_reorder(e.sc, TS_AXES(io, k, ii, j)));
	tu_ok(e.ctx, ts_parallel(e.sc, io));
	tu_ok(e.ctx, ts_prefetch_ahead(e.sc, e.A, k, io, 1));
	ts_func *f = lower(&e);
	ck_assert(strstr(ir_func_str(e.ctx, f), "prefetch(A[") != NULL);
	tu_check_func(e.ctx, f, 1e-5);
	ts_ctx_free(e.ctx);
}
END_TEST

/* A GEMM's packing of B, one panel per step of C's panel loop, prefetching
 * the next panel's rows: B is read clamped (min(x*16 + z, 39), the columns
 * past N being zeros), yet the box is the panel's 16 columns, one line per
 * row, not the whole row of 40.  N = 40 leaves a last panel of 8 columns:
 * its prefetch is clipped to them, results unchanged (the interpreter
 * checks every prefetched address). */
START_TEST(test_prefetch_clamped_panel)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(12, 9), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(9, 40), ts_float32);
	ts_tensor *C = ts_op_matmul_packed(ctx, A, B, 16);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_matmul_cpu_params p = {.mr = 4, .nr = 16, .kunroll = 1, .parallel = true, .pack = TS_PACK_PANEL};
	tu_ok(ctx, ts_schedule_matmul_cpu(s, C, &p));
	ts_stage *sp = ts_stage_of(s, C->inputs[1]), *sc = ts_stage_of(s, C);
	tu_ok(ctx, ts_prefetch_ahead(sp, B, ts_axis_of(sp, 1), sc->leaf[0], 1));
	ts_func *f = ts_lower(s, "mm", 3, (ts_tensor *[]){A, B, C});
	tu_nonnull(ctx, f);
	const char *text = ir_func_str(ctx, f);
	/* from the next panel's first column to its end, clipped at 40 (a
	 * whole row would be 3 lines from column 0, whatever the panel) */
	ck_assert_msg(strstr(text, "prefetch(B[y*40 + j.outer*16 + pf*16 + 16])") &&
			      strstr(text, "floordiv(min(j.outer*16 + 32, 40) - 1, 16)") &&
			      !strstr(text, "for (pf, 0, 3)"),
		      "%s", text);
	tu_check_func(ctx, f, 1e-5);
	tu_check_func_llvm(ctx, f, NULL, 1e-5);
	ts_ctx_free(ctx);
}
END_TEST

/* Along a loop of the stage it is computed at: the cache of C computed at
 * C's row loop prefetches, in each step of its k loop, the element of A
 * the next row reads there.  An offset past the loop's end leaves no
 * prefetch at all (its test is provably false), results unchanged. */
START_TEST(test_prefetch_attached)
{
	for (int64_t off = 1; off <= 9; off += 8) {
		mm e = tu_matmul(6, 16, 7);
		ts_tensor *cc = ts_cache_write(e.s, e.C, TS_SCOPE_LOCAL);
		tu_nonnull(e.ctx, cc);
		ts_stage *scc = ts_stage_of(e.s, cc);
		ts_axis *i = ts_axis_of(e.sc, 0);
		tu_ok(e.ctx, ts_compute_at(scc, e.sc, i));
		tu_ok(e.ctx, ts_reorder(scc, TS_AXES(ts_reduce_axis_of(scc, 0), ts_axis_of(scc, 1))));
		tu_ok(e.ctx, ts_vectorize(scc, ts_axis_of(scc, 1)));
		tu_ok(e.ctx, ts_prefetch_ahead(scc, e.A, ts_reduce_axis_of(scc, 0), i, off));
		ts_func *f = lower(&e);
		ck_assert((strstr(ir_func_str(e.ctx, f), "prefetch(A[") != NULL) == (off < 6));
		tu_check_func(e.ctx, f, 1e-5);
		ts_ctx_free(e.ctx);
	}
}
END_TEST

/* CUDA code has no prefetch: the emitter leaves the hint out. */
START_TEST(test_prefetch_cuda)
{
	mm e = tu_matmul(8, 32, 4);
	tu_ok(e.ctx, ts_bind(e.sc, ts_axis_of(e.sc, 0), TS_BLOCK_X));
	tu_ok(e.ctx, ts_bind(e.sc, ts_axis_of(e.sc, 1), TS_THREAD_X));
	tu_ok(e.ctx, ts_prefetch(e.sc, e.B, ts_reduce_axis_of(e.sc, 0), 1));
	ts_func *f = lower(&e);
	ck_assert(strstr(ir_func_str(e.ctx, f), "prefetch(B[") != NULL);
	cg_launch launch;
	const char *src = cg_emit_cuda(e.ctx, f, &launch);
	tu_nonnull(e.ctx, src);
	ck_assert_msg(strstr(src, "prefetch") == NULL, "%s", src);
	ts_ctx_free(e.ctx);
}
END_TEST

/* A vectorized axis drops the hint; results are unchanged. */
START_TEST(test_prefetch_vectorized)
{
	mm e = tu_matmul(4, 8, 3);
	ts_axis *j = ts_axis_of(e.sc, 1);
	tu_ok(e.ctx, ts_reorder(e.sc, TS_AXES(ts_axis_of(e.sc, 0), ts_reduce_axis_of(e.sc, 0), j)));
	tu_ok(e.ctx, ts_vectorize(e.sc, j));
	tu_ok(e.ctx, ts_prefetch(e.sc, e.B, j, 1));
	tu_check_func(e.ctx, lower(&e), 1e-5);
	ts_ctx_free(e.ctx);
}
END_TEST

/* The interpreter bounds-checks a prefetch as a load: a hand-built one
 * past the buffer is an error, not a silent hint. */
START_TEST(test_prefetch_interp_bounds)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_buffer *b = ir_buffer_new(ctx, "b", ts_float32, TS_SHAPE(4), TS_SCOPE_GLOBAL);
	tu_nonnull(ctx, b);
	for (int64_t at = 3; at <= 4; at++) {
		ts_stmt *s = ir_prefetch(ctx, ts_load(ctx, b, ts_int(ctx, (int32_t)at)));
		tu_nonnull(ctx, s);
		ts_func f = {.name = "f", .nparams = 1, .params = &b, .body = s, .ctx = ctx};
		float data[4] = {0};
		ts_status st = cg_interp_run(ctx, &f, (void *[]){data});
		if (at < 4)
			tu_ok(ctx, st);
		else
			ck_assert_int_ne(st, TS_OK);
	}
	/* only a scalar READ or LOAD can be prefetched */
	ts_clear_error(ctx);
	ck_assert_ptr_null(ir_prefetch(ctx, ts_int(ctx, 1)));
	tu_assert_error(ctx, "scalar READ or LOAD");
	ck_assert_ptr_null(ir_prefetch(ctx, NULL));
	ck_assert_ptr_null(ir_prefetch(ctx, ts_load(ctx, b, ts_ramp(ctx, ts_int(ctx, 0), 1, 4))));
	ck_assert_ptr_null(ir_prefetch(NULL, ts_load(ctx, b, ts_int(ctx, 0))));
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_prefetch_refusals)
{
	mm e = tu_matmul(4, 4, 4);
	mm other = tu_matmul(4, 4, 4);
	ts_axis *i = ts_axis_of(e.sc, 0), *j = ts_axis_of(e.sc, 1), *o, *in;
	ts_clear_error(e.ctx);
	ck_assert_int_ne(ts_prefetch(NULL, e.A, i, 1), TS_OK);
	tu_assert_error(e.ctx, "prefetch: stage is NULL"); /* reported to the tensor's context */
	ts_clear_error(e.ctx);
	ck_assert_int_ne(ts_prefetch(e.sc, NULL, i, 1), TS_OK);
	tu_assert_error(e.ctx, "tensor is NULL");
	ts_clear_error(e.ctx);
	ck_assert_int_ne(ts_prefetch(e.sc, e.A, NULL, 1), TS_OK);
	tu_assert_error(e.ctx, "axis is NULL");
	ts_clear_error(e.ctx);
	ck_assert_int_ne(ts_prefetch(e.sc, e.C, i, 1), TS_OK);
	tu_assert_error(e.ctx, "only inputs");
	ts_clear_error(e.ctx);
	ck_assert_int_ne(ts_prefetch(e.sc, other.A, i, 1), TS_OK);
	tu_assert_error(e.ctx, "does not read A");
	ts_clear_error(e.ctx);
	ck_assert_int_ne(ts_prefetch(e.sc, e.A, ts_axis_of(other.sc, 0), 1), TS_OK);
	tu_assert_error(e.ctx, "does not belong");
	ts_clear_error(e.ctx);
	ck_assert_int_ne(ts_prefetch(e.sc, e.A, i, 0), TS_OK);
	tu_assert_error(e.ctx, "nonzero");
	ts_clear_error(e.ctx);
	ck_assert_int_ne(ts_prefetch(e.sc, e.A, i, INT64_MIN), TS_OK);
	ts_clear_error(e.ctx);
	ck_assert_int_ne(ts_prefetch(e.sc, e.A, i, (int64_t)1 << 31), TS_OK);
	tu_assert_error(e.ctx, "at most 2^31 - 1 in magnitude");
	ts_clear_error(e.ctx);
	{
		int64_t n = ts_size_var(e.ctx, "n", 64);
		ts_tensor *S = ts_placeholder(e.ctx, "S", TS_SHAPE(n), ts_float32);
		ts_expr *x = ts_var(e.ctx, "x");
		ts_tensor *T = ts_compute(e.ctx, "T", TS_SHAPE(n), TS_VARS(x), TS_READ(e.ctx, S, x));
		ts_schedule *ss = ts_create_schedule(e.ctx, 1, &T);
		ts_stage *st = ts_stage_of(ss, T);
		ck_assert_ptr_nonnull(st);
		ts_clear_error(e.ctx);
		ck_assert_int_ne(ts_prefetch(st, S, ts_axis_of(st, 0), 1), TS_OK);
		tu_assert_error(e.ctx, "symbolic extent");
	}
	ts_clear_error(e.ctx);
	ck_assert_int_ne(ts_prefetch_ahead(e.sc, e.A, i, NULL, 1), TS_OK);
	tu_assert_error(e.ctx, "is NULL");
	ts_clear_error(e.ctx);
	ck_assert_int_ne(ts_prefetch_ahead(e.sc, e.A, i, ts_axis_of(other.sc, 0), 1), TS_OK);
	tu_assert_error(e.ctx, "belongs to no stage");
	for (int n = 0; n < TS_MAX_PREFETCH; n++)
		tu_ok(e.ctx, ts_prefetch(e.sc, e.B, j, n + 1));
	ts_clear_error(e.ctx);
	ck_assert_int_ne(ts_prefetch(e.sc, e.B, j, 99), TS_OK);
	tu_assert_error(e.ctx, "more than 8 prefetches");
	/* a split axis is no longer a leaf */
	tu_ok(other.ctx, ts_split(other.sc, ts_axis_of(other.sc, 0), 2, &o, &in));
	ts_clear_error(other.ctx);
	ck_assert_int_ne(ts_prefetch(other.sc, other.A, ts_axis_of(other.sc, 0), 1), TS_OK);
	tu_assert_error(other.ctx, "no longer a leaf");
	ts_ctx_free(other.ctx);
	ts_ctx_free(e.ctx);
}
END_TEST

/* An epilogue's operand is read by the stage the chain is inlined into:
 * relu(A B + R) under ts_schedule_dense_cpu reads R in Y's tile loop, so
 * a prefetch of the next tile's R there is taken (before, the stage "did
 * not read R", its read being in the inlined add), and results are
 * unchanged.  A tensor no stage of the chain reads is still refused. */
START_TEST(test_prefetch_through_inline)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(13, 9), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(9, 21), ts_float32);
	ts_tensor *R = ts_placeholder(ctx, "R", TS_SHAPE(13, 21), ts_float32);
	ts_tensor *Q = ts_placeholder(ctx, "Q", TS_SHAPE(13, 21), ts_float32);
	ts_tensor *Y = ts_op_relu(ctx, ts_op_add(ctx, ts_op_matmul(ctx, A, B, false, false), R));
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	ts_matmul_cpu_params p = {.mr = 4, .nr = 8, .kunroll = 1, .parallel = false};
	tu_ok(ctx, ts_schedule_dense_cpu(s, Y, &p));
	ts_stage *sy = ts_stage_of(s, Y);
	tu_ok(ctx, ts_prefetch_ahead(sy, R, sy->leaf[0], sy->leaf[0], 1));
	ts_clear_error(ctx);
	ck_assert_int_ne(ts_prefetch(sy, Q, sy->leaf[0], 1), TS_OK);
	tu_assert_error(ctx, "does not read Q, directly or through stages computed inline into it");
	ts_func *f = ts_lower(s, "dense", 4, (ts_tensor *[]){A, B, R, Y});
	tu_nonnull(ctx, f);
	const char *text = ir_func_str(ctx, f);
	ck_assert_msg(count(text, "prefetch(R[") >= 1, "%s", text);
	tu_check_func(ctx, f, 1e-5);
	tu_check_func_llvm(ctx, f, NULL, 1e-5);
	ts_ctx_free(ctx);
}
END_TEST

/* Lowering refuses an offset axis whose loop does not enclose the
 * prefetch's, and a tensor the loop no longer reads. */
START_TEST(test_prefetch_lowering_refusals)
{
	mm e = tu_matmul(4, 4, 4);
	ts_axis *i = ts_axis_of(e.sc, 0), *j = ts_axis_of(e.sc, 1);
	tu_ok(e.ctx, ts_prefetch_ahead(e.sc, e.A, i, j, 1));
	ck_assert_ptr_null(ts_lower(e.s, "mm", 3, (ts_tensor *[]){e.A, e.B, e.C}));
	tu_assert_error(e.ctx, "does not enclose");
	ts_ctx_free(e.ctx);

	e = tu_matmul(4, 4, 4);
	tu_ok(e.ctx, ts_prefetch(e.sc, e.A, ts_axis_of(e.sc, 0), 1));
	tu_nonnull(e.ctx, ts_cache_read(e.s, e.A, TS_SCOPE_LOCAL, 1, &e.C));
	ck_assert_ptr_null(ts_lower(e.s, "mm", 3, (ts_tensor *[]){e.A, e.B, e.C}));
	tu_assert_error(e.ctx, "nothing inside loop");
	ts_ctx_free(e.ctx);

	/* all of a 16 MB B per row of C: more lines than a prefetch issues */
	e = tu_matmul(4, 1024, 4096);
	tu_ok(e.ctx, ts_prefetch(e.sc, e.B, ts_axis_of(e.sc, 0), 1));
	ck_assert_ptr_null(ts_lower(e.s, "mm", 3, (ts_tensor *[]){e.A, e.B, e.C}));
	tu_assert_error(e.ctx, "lower: prefetch(B) at 'i': 262144 cache lines per iteration, more than 65536");
	ts_ctx_free(e.ctx);

	/* a reduction axis replaced by rfactor after the prefetch named it */
	e = tu_matmul(7, 11, 13);
	ts_axis *ko, *ki;
	tu_ok(e.ctx, ts_split(e.sc, ts_reduce_axis_of(e.sc, 0), 4, &ko, &ki));
	tu_ok(e.ctx, ts_prefetch(e.sc, e.A, ko, 1));
	tu_nonnull(e.ctx, ts_rfactor(e.s, e.C, ki, 0));
	ck_assert_ptr_null(ts_lower(e.s, "mm", 3, (ts_tensor *[]){e.A, e.B, e.C}));
	tu_assert_error(e.ctx, "or replaced by rfactor");
	ts_ctx_free(e.ctx);

	/* an axis split after the prefetch named it */
	e = tu_matmul(4, 4, 4);
	ts_axis *o, *in;
	tu_ok(e.ctx, ts_prefetch(e.sc, e.A, ts_axis_of(e.sc, 0), 1));
	tu_ok(e.ctx, ts_split(e.sc, ts_axis_of(e.sc, 0), 2, &o, &in));
	ck_assert_ptr_null(ts_lower(e.s, "mm", 3, (ts_tensor *[]){e.A, e.B, e.C}));
	tu_assert_error(e.ctx, "was split or fused after the prefetch");
	ts_ctx_free(e.ctx);

	/* a stage inlined after its prefetch */
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(8), ts_float32);
	ts_expr *x = ts_var(ctx, "x");
	ts_tensor *P = ts_compute(ctx, "P", TS_SHAPE(8), TS_VARS(x), ts_add(ctx, TS_READ(ctx, A, x), ts_float(ctx, 1)));
	ts_tensor *Q = ts_compute(ctx, "Q", TS_SHAPE(8), TS_VARS(x), ts_mul(ctx, TS_READ(ctx, P, x), ts_float(ctx, 2)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &Q);
	ts_stage *sp = ts_stage_of(s, P);
	tu_ok(ctx, ts_prefetch(sp, A, ts_axis_of(sp, 0), 1));
	tu_ok(ctx, ts_compute_inline(sp));
	ck_assert_ptr_null(ts_lower(s, "f", 2, (ts_tensor *[]){A, Q}));
	tu_assert_error(ctx, "computed inline");
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("prefetch");
	TCase *tc = tcase_create("prefetch");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_prefetch_matmul);
	tcase_add_test(tc, test_prefetch_negative);
	tcase_add_test(tc, test_prefetch_ahead);
	tcase_add_test(tc, test_prefetch_attached);
	tcase_add_test(tc, test_prefetch_clamped_panel);
	tcase_add_test(tc, test_prefetch_vectorized);
	tcase_add_test(tc, test_prefetch_cuda);
	tcase_add_test(tc, test_prefetch_interp_bounds);
	tcase_add_test(tc, test_prefetch_refusals);
	tcase_add_test(tc, test_prefetch_through_inline);
	tcase_add_test(tc, test_prefetch_lowering_refusals);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
