/* test_index64.c - index width: lowering picks int64 loop variables and
 * index arithmetic when extents, reduction ranges or buffer sizes need them
 * (and int32 otherwise); every evaluator and backend agrees on the result. */
#include "testutil.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c_emit.h"
#include "llvm.h"
#include "lower.h"
#include "printer.h"
#include "verify.h"

#define BASE ((int64_t)INT32_MAX - 2)

/* B[i] = sum(int64(A[i, k - BASE]) + int64(k), k over [BASE, BASE + 5)): the
 * reduction variable itself crosses INT32_MAX. */
static ts_func *reduce_near_max(ts_ctx *ctx, int64_t split)
{
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(7, 5), ts_int32);
	ts_iter *k = ts_reduce_axis(ctx, "k", BASE, 5);
	ts_expr *i = ts_var(ctx, "i");
	ts_expr *kk = ts_sub(ctx, k->var, ts_int(ctx, BASE));
	ts_expr *src = ts_add(ctx, ts_cast(ctx, ts_int64, TS_READ(ctx, A, i, kk)),
			      ts_cast(ctx, ts_int64, k->var));
	ts_tensor *B = ts_compute(ctx, "B", TS_SHAPE(7), TS_VARS(i), TS_SUM(ctx, src, k));
	ts_schedule *s = ts_create_schedule(ctx, 1, &B);
	ts_stage *st = ts_stage_of(s, B);
	ts_axis *ko, *ki;
	if (split)
		tu_ok(ctx, ts_split(st, ts_reduce_axis_of(st, 0), split, &ko, &ki));
	return ts_lower(s, "reduce_near_max", 2, (ts_tensor *[]){A, B});
}

START_TEST(test_reduce_axis_near_int32_max)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_func *f = reduce_near_max(ctx, 0);
	tu_nonnull(ctx, f);
	/* the exact answer for A = 1: 5 + sum of BASE .. BASE + 4 */
	int32_t a[35];
	int64_t b[7], want = 5 + 5 * BASE + 10;
	for (int x = 0; x < 35; x++)
		a[x] = 1;
	tu_ok(ctx, ts_eval(ctx, 2, f->param_tensors, (void *[]){a, b}));
	for (int x = 0; x < 7; x++)
		ck_assert_int_eq(b[x], want);
	tu_check_func(ctx, f, 0);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_reduce_axis_near_int32_max_split)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_func *f = reduce_near_max(ctx, 2); /* 2 does not divide 5: a guarded tail */
	tu_nonnull(ctx, f);
	tu_check_func(ctx, f, 0);
	ts_ctx_free(ctx);
}
END_TEST

/* sum of int64(k) over k in [lo, lo + K), split by a factor and one part
 * factored out with rfactor, compared with the exact answer. */
static void check_rfactor_sum(int64_t lo, int64_t K, int64_t fuse_with, int64_t factor, bool outer)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_iter *k = ts_reduce_axis(ctx, "k", lo, K);
	ts_iter *l = ts_reduce_axis(ctx, "l", 0, fuse_with ? fuse_with : 1);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(1), TS_VARS(i),
				  fuse_with ? TS_SUM(ctx, ts_cast(ctx, ts_int64, k->var), l, k)
					    : TS_SUM(ctx, ts_cast(ctx, ts_int64, k->var), k));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *r = ts_reduce_axis_of(sc, 0), *o, *in;
	if (fuse_with)
		tu_ok(ctx, ts_fuse(sc, r, ts_reduce_axis_of(sc, 1), &r));
	tu_ok(ctx, ts_split(sc, r, factor, &o, &in));
	tu_nonnull(ctx, ts_rfactor(s, C, outer ? o : in, 1));
	ts_func *f = ts_lower(s, "f", 1, &C);
	tu_nonnull(ctx, f);
	ts_module *m = ts_build(ctx, f, "llvm");
	tu_nonnull(ctx, m);
	ts_array *c = ts_array_for(ctx, C);
	tu_ok(ctx, ts_module_run(m, 1, &c));
	__int128 want = ((__int128)K * lo + (__int128)K * (K - 1) / 2) * (fuse_with ? fuse_with : 1);
	ck_assert_msg(((int64_t *)c->data)[0] == (int64_t)want, "lo %lld K %lld x %lld split %lld: %lld, want %lld",
		      (long long)lo, (long long)K, (long long)fuse_with, (long long)factor,
		      (long long)((int64_t *)c->data)[0], (long long)want);
	ts_array_free(c);
	ts_module_free(m);
	ts_ctx_free(ctx);
}

/* C.rf's body rebuilds k as ko*f + ki, which must be int64 arithmetic (it
 * wrapped in int32 once, 2^35 short of the answer), and so must its tail
 * guard and clamp when f does not divide K (refused as "2147483648 does
 * not fit int32" once), and k's offset when the range starts past int32. */
START_TEST(test_rfactor_beyond_int32)
{
	int64_t big = ((int64_t)1 << 31) + 8;
	for (int outer = 0; outer < 2; outer++) {
		check_rfactor_sum(0, big, 0, 8, outer);
		check_rfactor_sum((int64_t)1 << 31, 100, 0, 48, outer);
	}
	check_rfactor_sum(0, big + 1, 0, 48, false);
	check_rfactor_sum(0, (int64_t)1 << 31, 0, 48, true);
	/* a fused axis of 2 x (2^30 + 3) points, split with a tail */
	check_rfactor_sum(0, ((int64_t)1 << 30) + 3, 2, 64, false);
}
END_TEST

/* A reduction over 2^32 + 2 points keeps its whole extent in the loop IR. */
START_TEST(test_reduce_extent_above_2p32)
{
	ts_ctx *ctx = ts_ctx_new();
	int64_t ext = ((int64_t)1 << 32) + 2;
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(3), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, ext);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *B = ts_compute(ctx, "B", TS_SHAPE(3), TS_VARS(i),
				  TS_SUM(ctx, TS_READ(ctx, A, i), k));
	ts_schedule *s = ts_create_schedule(ctx, 1, &B);
	ts_func *f = ts_lower(s, "wide", 2, (ts_tensor *[]){A, B});
	tu_nonnull(ctx, f);
	const char *text = ir_func_str(ctx, f);
	ck_assert_msg(strstr(text, "4294967298") != NULL, "extent lost:\n%s", text);
	ck_assert_msg(strstr(text, "int64") != NULL, "no int64 index:\n%s", text);
	ts_ctx_free(ctx);
}
END_TEST

/* Fusing two reduction axes of 65537 points makes a loop of 4295098369. */
START_TEST(test_fused_reduce_extent_above_2p32)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(3), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 65537), *l = ts_reduce_axis(ctx, "l", 0, 65537);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *B = ts_compute(ctx, "B", TS_SHAPE(3), TS_VARS(i),
				  TS_SUM(ctx, TS_READ(ctx, A, i), k, l));
	ts_schedule *s = ts_create_schedule(ctx, 1, &B);
	ts_stage *st = ts_stage_of(s, B);
	ts_axis *f;
	tu_ok(ctx, ts_fuse(st, ts_reduce_axis_of(st, 0), ts_reduce_axis_of(st, 1), &f));
	ts_func *fn = ts_lower(s, "fused", 2, (ts_tensor *[]){A, B});
	tu_nonnull(ctx, fn);
	const char *text = ir_func_str(ctx, fn);
	ck_assert_msg(strstr(text, "for (k.l.fused, int64(0), int64(4295098369))") != NULL,
		      "fused extent lost:\n%s", text);
	ts_ctx_free(ctx);
}
END_TEST

/* The verifier between passes catches an int64 loop given int32 bounds. */
START_TEST(test_verifier_loop_bound_dtype)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *i = ts_var_typed(ctx, "i", ts_int64);
	ts_stmt *body = ir_evaluate(ctx, ts_int(ctx, 0));
	ts_func f = {.name = "f", .body = ir_for(ctx, i, ts_int(ctx, 0), ts_int(ctx, 7),
						 TS_FOR_SERIAL, TS_THREAD_NONE, body)};
	ck_assert_int_eq(ir_verify_func(ctx, &f, "test"), TS_ERR_INTERNAL);
	tu_assert_error(ctx, "verify after test: loop bounds of another dtype than the variable 'i'");
	ts_ctx_free(ctx);
}
END_TEST

/* Small shapes keep int32 indices: no int64 anywhere in the lowered IR. */
START_TEST(test_small_shapes_stay_int32)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(37, 41), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_tensor *B = ts_compute(ctx, "B", TS_SHAPE(37, 41), TS_VARS(i, j),
				  ts_add(ctx, TS_READ(ctx, A, i, j), ts_float(ctx, 1)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &B);
	ts_stage *st = ts_stage_of(s, B);
	ts_axis *io, *ii;
	tu_ok(ctx, ts_split(st, ts_axis_of(st, 0), 8, &io, &ii));
	ts_func *f = ts_lower(s, "small", 2, (ts_tensor *[]){A, B});
	tu_nonnull(ctx, f);
	const char *text = ir_func_str(ctx, f);
	ck_assert_msg(strstr(text, "int64") == NULL, "int64 in a small kernel:\n%s", text);
	tu_check_func(ctx, f, 0);
	ts_ctx_free(ctx);
}
END_TEST

/* A 1-D uint8 kernel over 2^31 + 13 elements, split by 64 (which does not
 * divide it), the inner loop vectorized and the outer parallel: the last
 * elements are right and the canary after the output is untouched. */
#define BIG_N (((int64_t)1 << 31) + 13)
#define CANARY 64

static ts_func *big_add(ts_ctx *ctx)
{
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(BIG_N), ts_uint8);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *B = ts_compute(ctx, "B", TS_SHAPE(BIG_N), TS_VARS(i),
				  ts_add(ctx, TS_READ(ctx, A, i), ts_const(ctx, ts_uint8, 3)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &B);
	ts_stage *st = ts_stage_of(s, B);
	ts_axis *io, *ii;
	tu_ok(ctx, ts_split(st, ts_axis_of(st, 0), 64, &io, &ii));
	tu_ok(ctx, ts_parallel(st, io));
	tu_ok(ctx, ts_vectorize(st, ii));
	return ts_lower(s, "big_add", 2, (ts_tensor *[]){A, B});
}

START_TEST(test_tail_guard_near_2p31)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_func *f = big_add(ctx);
	tu_nonnull(ctx, f);
	cg_llvm_module *m = cg_llvm_compile(ctx, f, NULL);
	ck_assert_msg(m != NULL, "compile failed: %s", ts_last_error(ctx));
	/* calloc: untouched pages of the input stay shared zero pages */
	uint8_t *a = calloc((size_t)BIG_N, 1);
	uint8_t *b = malloc((size_t)BIG_N + CANARY);
	if (!a || !b) {
		printf("test_tail_guard_near_2p31: skipped, cannot allocate 2 x %lld bytes\n",
		       (long long)BIG_N);
		free(a);
		free(b);
		cg_llvm_free(m);
		ts_ctx_free(ctx);
		return;
	}
	for (int64_t x = BIG_N - 200; x < BIG_N; x++)
		a[x] = (uint8_t)(x * 7 + 1);
	memset(b + BIG_N, 0xA5, CANARY);
	ck_assert_int_eq(cg_llvm_entry(m)((void *[]){a, b}), 0);
	for (int64_t x = BIG_N - 200; x < BIG_N; x++)
		ck_assert_msg(b[x] == (uint8_t)(a[x] + 3), "element %lld: got %d, want %d",
			      (long long)x, b[x], (uint8_t)(a[x] + 3));
	ck_assert_int_eq(b[0], 3);
	for (int x = 0; x < CANARY; x++)
		ck_assert_msg(b[BIG_N + x] == 0xA5, "canary byte %d overwritten", x);
	free(a);
	free(b);
	cg_llvm_free(m);
	ts_ctx_free(ctx);
}
END_TEST

/* The operator library over a dimension of 2^31 + 13: ts_op_pad's index
 * constants (the clamp at n - 1, the test v < pb + n) do not fit int32 and
 * must widen instead of refusing the constant. */
START_TEST(test_pad_over_2p31)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(BIG_N), ts_uint8);
	ts_tensor *P = ts_op_pad(ctx, A, (int64_t[]){2}, (int64_t[]){1}, 9.0);
	tu_nonnull(ctx, P);
	ck_assert_int_eq(P->shape[0], BIG_N + 3);
	ts_schedule *s = ts_create_schedule(ctx, 1, &P);
	ts_stage *st = ts_stage_of(s, P);
	ts_axis *io, *ii;
	tu_ok(ctx, ts_split(st, ts_axis_of(st, 0), 64, &io, &ii));
	tu_ok(ctx, ts_parallel(st, io));
	ts_func *f = ts_lower(s, "big_pad", 2, (ts_tensor *[]){A, P});
	tu_nonnull(ctx, f);
	cg_llvm_module *m = cg_llvm_compile(ctx, f, NULL);
	ck_assert_msg(m != NULL, "compile failed: %s", ts_last_error(ctx));
	int64_t n = BIG_N + 3;
	uint8_t *a = calloc((size_t)BIG_N, 1), *b = malloc((size_t)n + CANARY);
	if (a && b) {
		a[0] = 5;
		a[BIG_N - 1] = 7;
		memset(b + n, 0xA5, CANARY);
		ck_assert_int_eq(cg_llvm_entry(m)((void *[]){a, b}), 0);
		ck_assert_int_eq(b[0], 9);
		ck_assert_int_eq(b[1], 9);
		ck_assert_int_eq(b[2], 5);
		ck_assert_int_eq(b[n - 2], 7);
		ck_assert_int_eq(b[n - 1], 9);
		for (int x = 0; x < CANARY; x++)
			ck_assert_msg(b[n + x] == 0xA5, "canary byte %d overwritten", x);
	} else {
		printf("test_pad_over_2p31: run skipped, cannot allocate 2 x %lld bytes\n",
		       (long long)BIG_N);
	}
	free(a);
	free(b);
	cg_llvm_free(m);
	ts_ctx_free(ctx);
}
END_TEST

/* Everything at once in a function that needs int64 indices (R's reduction
 * starts near INT32_MAX) on small data: a producer computed at a consumer's
 * loop, a gather through an int32 tensor, axis variables used as values, a
 * guarded split, parallel, unrolled and vectorized loops. */
static ts_func *mixed(ts_ctx *ctx, bool vectorize)
{
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(29, 16), ts_float32);
	ts_tensor *Idx = ts_placeholder(ctx, "Idx", TS_SHAPE(29), ts_int32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_tensor *P = ts_compute(ctx, "P", TS_SHAPE(29, 16), TS_VARS(i, j),
				  ts_add(ctx, ts_mul(ctx, TS_READ(ctx, A, i, j), ts_float(ctx, 2)),
					 ts_cast(ctx, ts_float32, i)));
	ts_iter *k = ts_reduce_axis(ctx, "k", BASE, 5);
	ts_expr *r = ts_var(ctx, "r");
	ts_expr *kk = ts_add(ctx, ts_sub(ctx, k->var, ts_int(ctx, BASE)), ts_int(ctx, 3));
	ts_tensor *R = ts_compute(ctx, "R", TS_SHAPE(29), TS_VARS(r),
				  TS_SUM(ctx, TS_READ(ctx, A, r, kk), k));
	ts_expr *ci = ts_var(ctx, "ci"), *cj = ts_var(ctx, "cj");
	ts_expr *g = ts_floormod(ctx, TS_READ(ctx, Idx, ci), ts_int(ctx, 16));
	ts_expr *body = ts_add(ctx, ts_add(ctx, TS_READ(ctx, P, ci, g), TS_READ(ctx, R, ci)),
			       ts_cast(ctx, ts_float32, ts_mul(ctx, cj, ci)));
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(29, 16), TS_VARS(ci, cj), body);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *io, *ii, *jo, *ji;
	tu_ok(ctx, ts_split(sc, ts_axis_of(sc, 0), 8, &io, &ii));
	tu_ok(ctx, ts_split(sc, ts_axis_of(sc, 1), 4, &jo, &ji));
	tu_ok(ctx, ts_parallel(sc, io));
	tu_ok(ctx, vectorize ? ts_vectorize(sc, ji) : ts_unroll(sc, ji));
	tu_ok(ctx, ts_compute_at(ts_stage_of(s, P), sc, ii));
	tu_ok(ctx, ts_compute_at(ts_stage_of(s, R), sc, io));
	return ts_lower(s, "mixed", 3, (ts_tensor *[]){A, Idx, C});
}

START_TEST(test_mixed_int64_unrolled)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_func *f = mixed(ctx, false);
	tu_nonnull(ctx, f);
	ck_assert_msg(strstr(ir_func_str(ctx, f), "int64") != NULL, "int32 indices");
	tu_check_func(ctx, f, 1e-5);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_mixed_int64_vectorized)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_func *f = mixed(ctx, true);
	tu_nonnull(ctx, f);
	tu_check_func(ctx, f, 1e-5);
	ts_ctx_free(ctx);
}
END_TEST

/* Runs f through its generated C: compiled with cc (under UBSan) into a
 * shared object (f's C source is passed as user). */
static ts_status run_c(ts_ctx *ctx, const ts_func *f, void *const *args, void *user)
{
	char dir[64], flags[160], sym[96];
	snprintf(flags, sizeof(flags), "-O1 %s", tu_cc_sanitize_flags());
	void *lib = tu_cc_load_with(user, flags, dir);
	snprintf(sym, sizeof(sym), "%s_packed", f->name);
	int32_t (*fn)(void **) = (int32_t (*)(void **))(uintptr_t)dlsym(lib, sym);
	ck_assert_ptr_nonnull(fn);
	int32_t rc = fn((void **)args);
	tu_cc_unload(lib, dir);
	return rc == 0 ? TS_OK : ts_error(ctx, TS_ERR_INTERNAL, "%s returned %d", f->name, rc);
}

/* The C emitter declares int64 loop variables and gives the same results. */
START_TEST(test_mixed_int64_c)
{
	if (!tu_have_cc()) {
		printf("test_mixed_int64_c: skipped, no C compiler\n");
		return;
	}
	ts_ctx *ctx = ts_ctx_new();
	ts_func *f = mixed(ctx, true);
	tu_nonnull(ctx, f);
	const char *src = cg_emit_c(ctx, f);
	tu_nonnull(ctx, src);
	ck_assert_msg(strstr(src, "for (int64_t ci_outer") != NULL, "no int64 loop:\n%s", src);
	tu_check_func_with(ctx, f, run_c, (void *)src, 1e-5);
	f = reduce_near_max(ctx, 2);
	tu_nonnull(ctx, f);
	src = cg_emit_c(ctx, f);
	tu_nonnull(ctx, src);
	tu_check_func_with(ctx, f, run_c, (void *)src, 0);
	ts_ctx_free(ctx);
}
END_TEST

/* A GPU schedule of a function with int64 indices: the CUDA C reads the
 * block and thread indices into 64-bit variables; the interpreter checks
 * the arithmetic (this test neither compiles nor runs the CUDA C). */
START_TEST(test_cuda_int64_indices)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(100, 5), ts_int32);
	ts_iter *k = ts_reduce_axis(ctx, "k", BASE, 5);
	ts_expr *i = ts_var(ctx, "i");
	ts_expr *src = ts_add(ctx, ts_cast(ctx, ts_int64, TS_READ(ctx, A, i, ts_sub(ctx, k->var,
										 ts_int(ctx, BASE)))),
			      ts_cast(ctx, ts_int64, ts_mul(ctx, k->var, i)));
	ts_tensor *B = ts_compute(ctx, "B", TS_SHAPE(100), TS_VARS(i), TS_SUM(ctx, src, k));
	ts_schedule *s = ts_create_schedule(ctx, 1, &B);
	ts_stage *st = ts_stage_of(s, B);
	ts_axis *bx, *tx;
	tu_ok(ctx, ts_split(st, ts_axis_of(st, 0), 32, &bx, &tx));
	tu_ok(ctx, ts_bind(st, bx, TS_BLOCK_X));
	tu_ok(ctx, ts_bind(st, tx, TS_THREAD_X));
	ts_func *f = ts_lower(s, "gpu64", 2, (ts_tensor *[]){A, B});
	tu_nonnull(ctx, f);
	cg_launch l;
	const char *cu = cg_emit_cuda(ctx, f, &l);
	tu_nonnull(ctx, cu);
	ck_assert_msg(strstr(cu, "long long i_outer = blockIdx.x") != NULL &&
			      strstr(cu, "long long i_inner = threadIdx.x") != NULL,
		      "no int64 thread indices:\n%s", cu);
	ck_assert_int_eq(l.grid[0], 4);
	ck_assert_int_eq(l.block[0], 32);
	tu_check_func(ctx, f, 0);
	ts_ctx_free(ctx);
}
END_TEST

/* P[i] = max(i, 3 - i), an index variable as the stored value, at root
 * in a function whose reduction near INT32_MAX needs int64 indices: the
 * widened value (int64, as a lone variable stays) is stored as P's int32,
 * where lowering refused it as "provide P: wrong arity or dtype".  On the
 * CPU, and bound to GPU threads. */
static ts_func *index_value_wide(ts_ctx *ctx, bool gpu)
{
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(7, 5), ts_int32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_tensor *P = ts_compute(ctx, "P", TS_SHAPE(7), TS_VARS(j),
				  ts_max(ctx, j, ts_sub(ctx, ts_int(ctx, 3), j)));
	ts_iter *k = ts_reduce_axis(ctx, "k", BASE, 5);
	ts_expr *src = ts_add(ctx, ts_cast(ctx, ts_int64, TS_READ(ctx, A, i, ts_sub(ctx, k->var, ts_int(ctx, BASE)))),
			      ts_cast(ctx, ts_int64, TS_READ(ctx, P, i)));
	ts_tensor *B = ts_compute(ctx, "B", TS_SHAPE(7), TS_VARS(i), TS_SUM(ctx, src, k));
	ts_schedule *s = ts_create_schedule(ctx, 1, &B);
	if (gpu) {
		ts_stage *sb = ts_stage_of(s, B), *sp = ts_stage_of(s, P);
		ts_axis *bx, *tx;
		tu_ok(ctx, ts_split(sb, ts_axis_of(sb, 0), 4, &bx, &tx));
		tu_ok(ctx, ts_bind(sb, bx, TS_BLOCK_X));
		tu_ok(ctx, ts_bind(sb, tx, TS_THREAD_X));
		tu_ok(ctx, ts_compute_at(sp, sb, tx));
	}
	ts_func *f = ts_lower(s, "index_value", 2, (ts_tensor *[]){A, B});
	tu_nonnull(ctx, f);
	return f;
}

START_TEST(test_index_value_int64)
{
	ts_ctx *ctx = ts_ctx_new();
	tu_check_func(ctx, index_value_wide(ctx, false), 0);
	tu_check_func(ctx, index_value_wide(ctx, true), 0);
	ts_ctx_free(ctx);
}
END_TEST

/* A partitioned tail near 2^31: the main loop covers the 33554432 full
 * blocks without a guard, the tail loop the 13 elements from 2^31 on (IR
 * only). */
/* A[floormod(0 - floordiv(i - 2147483647, 3), 2), j]: every value fits
 * int32 and the row is 0 or 1.  The simplifier took the floormod for
 * x - 715827882 (x is 715827882 or 715827883), then flattened the row
 * times 9 into x*9 - 6442450938, wrapped to int32: equal modulo 2^32,
 * but the LLVM backend computes int32 indices in 64 bits and read 6e9
 * elements off (a crash).  A linear form whose constant wraps is no
 * longer rebuilt. */
START_TEST(test_simplify_keeps_index_unwrapped)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(2, 9), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_expr *q = ts_floordiv(ctx, ts_sub(ctx, i, ts_int(ctx, 2147483647)), ts_int(ctx, 3));
	ts_expr *row = ts_floormod(ctx, ts_sub(ctx, ts_int(ctx, 0), q), ts_int(ctx, 2));
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(4, 9), TS_VARS(i, j), TS_READ(ctx, A, row, j));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_func *f = ts_lower(s, "wrapless", 2, (ts_tensor *[]){A, C});
	tu_nonnull(ctx, f);
	const char *text = ir_func_str(ctx, f);
	ck_assert_msg(!strstr(text, "2147483642"), "%s", text);
	tu_check_func(ctx, f, 0);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_partitioned_tail_near_2p31)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(BIG_N), ts_uint8);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *B = ts_compute(ctx, "B", TS_SHAPE(BIG_N), TS_VARS(i),
				  ts_add(ctx, TS_READ(ctx, A, i), ts_const(ctx, ts_uint8, 3)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &B);
	ts_stage *st = ts_stage_of(s, B);
	ts_axis *io, *ii;
	tu_ok(ctx, ts_split_tail(st, ts_axis_of(st, 0), 64, TS_TAIL_PARTITION, &io, &ii));
	ts_func *f = ts_lower(s, "big_part", 2, (ts_tensor *[]){A, B});
	tu_nonnull(ctx, f);
	const char *text = ir_func_str(ctx, f);
	ck_assert_msg(strstr(text, "for (i.outer, int64(0), int64(33554432))") != NULL,
		      "no guard-free main loop:\n%s", text);
	ck_assert_msg(strstr(text, "for (i.inner, int64(0), int64(13))") != NULL &&
			      strstr(text, "B[i.inner + int64(2147483648)]") != NULL,
		      "no tail of 13 from 2^31:\n%s", text);
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("index64");
	TCase *tc = tcase_create("index64");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_reduce_axis_near_int32_max);
	tcase_add_test(tc, test_simplify_keeps_index_unwrapped);
	tcase_add_test(tc, test_reduce_axis_near_int32_max_split);
	tcase_add_test(tc, test_reduce_extent_above_2p32);
	tcase_add_test(tc, test_fused_reduce_extent_above_2p32);
	tcase_add_test(tc, test_small_shapes_stay_int32);
	tcase_add_test(tc, test_verifier_loop_bound_dtype);
	tcase_add_test(tc, test_tail_guard_near_2p31);
	tcase_add_test(tc, test_partitioned_tail_near_2p31);
	tcase_add_test(tc, test_pad_over_2p31);
	tcase_add_test(tc, test_cuda_int64_indices);
	tcase_add_test(tc, test_index_value_int64);
	tcase_add_test(tc, test_mixed_int64_unrolled);
	tcase_add_test(tc, test_mixed_int64_vectorized);
	tcase_add_test(tc, test_mixed_int64_c);
	tcase_add_test(tc, test_rfactor_beyond_int32);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
