/*
 * test_mustfail_symbolic.c - every misuse of symbolic shapes (ts_size_var)
 * is refused with a status and a message naming the call, the variable and
 * the rule: bad declarations, handles where plain extents belong, reads a
 * size variable cannot bound, specializations out of range, and calls whose
 * arrays disagree on a variable's value.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#include "lower.h"

START_TEST(test_declare)
{
	ts_ctx *ctx = ts_ctx_new();
	ck_assert_int_eq(ts_size_var(NULL, "n", 8), 0);
	ck_assert_int_eq(ts_size_var(ctx, "", 8), 0);
	tu_assert_error(ctx, "size_var: empty name");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_size_var(ctx, NULL, 8), 0);
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_size_var(ctx, "n", 0), 0);
	tu_assert_error(ctx, "size_var n: upper bound 0 is outside 1..2^40");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_size_var(ctx, "n", (INT64_C(1) << 40) + 1), 0);
	tu_assert_error(ctx, "outside 1..2^40");
	ts_clear_error(ctx);
	ck_assert(ts_is_size_var(ts_size_var(ctx, "v", 4)));
	/* a second variable of one name could not be told apart in errors */
	ck_assert_int_eq(ts_size_var(ctx, "v", 8), 0);
	tu_assert_error(ctx, "size_var v: the name is taken by another size variable");
	ts_clear_error(ctx);
	for (int i = 1; i < TS_MAX_SIZE_VARS; i++) {
		char name[16];
		snprintf(name, sizeof name, "v%d", i);
		ck_assert(ts_is_size_var(ts_size_var(ctx, name, 4)));
	}
	ck_assert_int_eq(ts_size_var(ctx, "w", 4), 0);
	tu_assert_error(ctx, "more than 64 size variables in one context");
	ts_ctx_free(ctx);
}
END_TEST

/* ts_ctx_add_size_var registers a variable the layers will read as one:
 * anything else is refused there (a constant registered once was read as
 * a variable's name by the next ts_size_var). */
static void refused(ts_ctx *ctx, ts_expr *var, int64_t max, const char *part)
{
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_ctx_add_size_var(ctx, var, max), -1);
	tu_assert_error(ctx, part);
}

START_TEST(test_register_only_variables)
{
	ts_ctx *ctx = ts_ctx_new(), *other = ts_ctx_new();
	ck_assert_int_eq(ts_ctx_add_size_var(NULL, ts_var(ctx, "n"), 8), -1);
	refused(ctx, NULL, 8, "size_var: no variable (NULL)");
	refused(ctx, ts_int(ctx, 5), 10, "size_var: not a scalar integer variable");
	refused(ctx, ts_var_typed(ctx, "f", ts_float32), 10, "size_var: not a scalar integer variable");
	refused(ctx, ts_var(other, "o"), 10, "size_var: the variable belongs to another context");
	ts_expr *k = ts_var(ctx, "k");
	refused(ctx, k, 0, "size_var k: upper bound 0 is outside 1..2^40");
	ck_assert_int_eq(ts_ctx_add_size_var(ctx, k, 10), 0);
	refused(ctx, k, 10, "size_var k: registered already");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_size_var(ctx, "k", 8), 0);
	tu_assert_error(ctx, "size_var k: the name is taken by another size variable");
	ts_clear_error(ctx);
	/* nothing refused was registered: the next variable is index 1 */
	ck_assert_int_eq(ts_ctx_size_var_count(ctx), 1);
	ck_assert(ts_is_size_var(ts_size_var(ctx, "n", 8)));
	ck_assert_int_eq(ts_ctx_size_var_count(ctx), 2);
	ts_ctx_free(other);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_handles)
{
	ts_ctx *ctx = ts_ctx_new();
	int64_t n = ts_size_var(ctx, "n", 64);
	/* a handle of no variable of this context */
	FAILS_NULL(ctx, ts_placeholder(ctx, "A", TS_SHAPE(TS_SIZE_VAR_BASE + 5), ts_float32),
		   "placeholder A: extent");
	tu_assert_error(ctx, "is arithmetic on a size variable (a handle, not a number)");
	/* arithmetic on a handle lands on no other variable's handle: n + 1
	 * is not m (it was, silently naming m's extent) */
	int64_t m = ts_size_var(ctx, "m", 8);
	ck_assert(ts_is_size_var(n) && ts_is_size_var(m) && !ts_is_size_var(n + 1) && !ts_is_size_var(n - 1));
	for (int64_t d = -2; d <= 2; d++) {
		if (d == 0)
			continue;
		FAILS_NULL(ctx, ts_placeholder(ctx, "N1", TS_SHAPE(n + d), ts_float32), "placeholder N1: extent");
		tu_assert_error(ctx, "arithmetic on a size variable");
		FAILS_NULL(ctx, ts_size_expr(ctx, m + d), "size_expr: extent");
	}
	FAILS_NULL(ctx, ts_placeholder(ctx, "M", TS_SHAPE(m + TS_SIZE_VAR_STRIDE * 3), ts_float32),
		   "placeholder M: extent");
	/* another context's handle, even of the same index */
	ts_ctx *other = ts_ctx_new();
	int64_t foreign = ts_size_var(other, "n", 1000);
	FAILS_NULL(ctx, ts_placeholder(ctx, "F", TS_SHAPE(foreign), ts_float32),
		   "placeholder F: extent");
	tu_assert_error(ctx, "a size variable of another context");
	ck_assert_int_ne(foreign, n);
	ts_ctx_free(other);
	FAILS_NULL(ctx, ts_placeholder(ctx, "G", TS_SHAPE(-7), ts_float32),
		   "placeholder G: extent -7 of dimension 0 is not positive");
	FAILS_NULL(ctx, ts_reduce_axis(ctx, "k", 0, TS_SIZE_VAR_BASE + 9), "reduce_axis k: extent");
	FAILS_NULL(ctx, ts_size_expr(ctx, TS_SIZE_VAR_BASE + 9), "size_expr");
	FAILS_NULL(ctx, ts_size_expr(ctx, -3), "size_expr: extent -3 is neither positive nor a size variable");
	ck_assert_int_eq(ts_tensor_dim(NULL, 0), 0);
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(n, 4), ts_float32);
	tu_nonnull(ctx, A);
	ck_assert_int_eq(ts_tensor_dim(A, 2), 0);
	ck_assert_int_eq(ts_tensor_dim(A, -1), 0);
	ck_assert_int_eq(ts_tensor_dim(A, 1), 4);
	/* a handle is no split factor, pad width or tile size */
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *B = ts_compute(ctx, "B", TS_SHAPE(n), TS_VARS(i), TS_READ(ctx, A, i, ts_int(ctx, 0)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &B);
	ts_stage *st = ts_stage_of(s, B);
	ts_axis *o, *in;
	FAILS_ST(ctx, ts_split(st, ts_axis_of(st, 0), n, &o, &in), "split");
	/* operators name the variable when extents differ */
	ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(8, 4), ts_float32);
	FAILS_NULL(ctx, ts_op_matmul(ctx, A, W, false, false),
		   "matmul: inner extents differ: A[n, 4] x W[8, 4] (4 vs 8)");
	ts_tensor *V = ts_placeholder(ctx, "V", TS_SHAPE(4, 4), ts_float32);
	FAILS_NULL(ctx, ts_op_add(ctx, A, V), "add: shapes differ: A[n, 4] vs V[4, 4]");
	/* operators whose extents are arithmetic on their inputs' */
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, n, 8, 8), ts_float32);
	ts_tensor *K = ts_placeholder(ctx, "K", TS_SHAPE(4, 4, 3, 3), ts_float32);
	FAILS_NULL(ctx, ts_op_conv2d_nchw(ctx, X, K, 1, 1, 1, 1, 1, 1, 1),
		   "conv2d_nchw: X[1, n, 8, 8] has the symbolic extent n; conv2d_nchw needs constant extents");
	FAILS_NULL(ctx, ts_op_max_pool2d(ctx, X, 2, 2, 2, 2, 0, 0), "max_pool2d: X[1, n, 8, 8] has the symbolic extent n");
	FAILS_NULL(ctx, ts_op_layout_nchw_to_nchwc(ctx, X, 4), "has the symbolic extent n");
	FAILS_NULL(ctx, ts_op_matmul_packed(ctx, A, W, 4), "matmul_packed: A[n, 4] has the symbolic extent n");
	/* a size variable where a constant is meant is named, not printed as
	 * its handle's number */
	FAILS_NULL(ctx, ts_op_matmul_packed(ctx, V, W, n),
		   "matmul_packed: nr is a size variable (ts_size_var); the panel width must be a constant");
	FAILS_NULL(ctx, ts_op_pad(ctx, A, (int64_t[]){1, 0}, (int64_t[]){0, 0}, 0),
		   "pad: A[n, 4]: dimension 0 has the symbolic extent n; a padded dimension needs a constant extent");
	ts_tensor *Pd = ts_op_pad(ctx, A, (int64_t[]){0, 1}, (int64_t[]){0, 1}, 0);
	tu_nonnull(ctx, Pd);
	ck_assert_int_eq(ts_tensor_dim(Pd, 0), n); /* unpadded: still n */
	ck_assert_int_eq(ts_tensor_dim(Pd, 1), 6);
	ts_ctx_free(ctx);
}
END_TEST

/* Indices a size variable cannot bound are refused at lower time. */
START_TEST(test_reads)
{
	ts_ctx *ctx = ts_ctx_new();
	int64_t n = ts_size_var(ctx, "n", 64), m = ts_size_var(ctx, "m", 64);
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(n), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	/* a shifted read: i + 1 reaches n */
	ts_tensor *B = ts_compute(ctx, "B", TS_SHAPE(n), TS_VARS(i),
				  TS_READ(ctx, A, ts_add(ctx, i, ts_int(ctx, 1))));
	ts_schedule *s = ts_create_schedule(ctx, 1, &B);
	FAILS_NULL(ctx, ts_lower(s, "shift", 2, (ts_tensor *[]){A, B}),
		   "lower: B reads A[i + 1], whose dimension 0 has the symbolic extent n: its index must be an axis ranging over n itself");
	/* another variable's axis: m may exceed n */
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(m), TS_VARS(i), TS_READ(ctx, A, i));
	s = ts_create_schedule(ctx, 1, &C);
	FAILS_NULL(ctx, ts_lower(s, "other", 2, (ts_tensor *[]){A, C}), "symbolic extent n");
	/* a constant axis over n's bound */
	ts_tensor *D = ts_compute(ctx, "D", TS_SHAPE(64), TS_VARS(i), TS_READ(ctx, A, i));
	s = ts_create_schedule(ctx, 1, &D);
	FAILS_NULL(ctx, ts_lower(s, "fixed", 2, (ts_tensor *[]){A, D}), "symbolic extent n");
	/* a reduction over n split by rfactor: k = ko*4 + ki */
	ts_clear_error(ctx);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, n);
	ts_tensor *S = ts_compute(ctx, "S", TS_SHAPE(1), TS_VARS(i), TS_SUM(ctx, TS_READ(ctx, A, k->var), k));
	s = ts_create_schedule(ctx, 1, &S);
	ts_stage *ss = ts_stage_of(s, S);
	ts_axis *ko, *ki;
	tu_ok(ctx, ts_split(ss, ts_reduce_axis_of(ss, 0), 4, &ko, &ki));
	FAILS_NULL(ctx, ts_rfactor(s, S, ki, 0),
		   "rfactor(S): reduction axis 'k' has the symbolic extent n; the factored stage would read it at its parts");
	/* an axis over a constant: named in the refusal */
	ts_tensor *E = ts_compute(ctx, "E", TS_SHAPE(64), TS_VARS(i), TS_READ(ctx, A, i));
	s = ts_create_schedule(ctx, 1, &E);
	FAILS_NULL(ctx, ts_lower(s, "fixed", 2, (ts_tensor *[]){A, E}), "; i ranges over the constant 64");
	ts_ctx_free(ctx);
}
END_TEST

/* A size variable no argument carries cannot be known at a call. */
START_TEST(test_unbound)
{
	ts_ctx *ctx = ts_ctx_new();
	int64_t n = ts_size_var(ctx, "n", 64);
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(8), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *B = ts_compute(ctx, "B", TS_SHAPE(8), TS_VARS(i),
				  ts_mul(ctx, TS_READ(ctx, A, i), ts_cast(ctx, ts_float32, ts_size_expr(ctx, n))));
	tu_nonnull(ctx, B);
	ts_schedule *s = ts_create_schedule(ctx, 1, &B);
	FAILS_NULL(ctx, ts_lower(s, "f", 2, (ts_tensor *[]){A, B}),
		   "lower(f): size variable n is not the extent of any argument's dimension");
	ts_ctx_free(ctx);
}
END_TEST

typedef struct prog {
	ts_ctx *ctx;
	int64_t n;
	ts_tensor *A, *B;
	ts_schedule *s;
} prog;

/* B[i] = A[i] * 2 over n <= 4096. */
static prog scale(void)
{
	prog p = {.ctx = ts_ctx_new()};
	p.n = ts_size_var(p.ctx, "n", 4096);
	p.A = ts_placeholder(p.ctx, "A", TS_SHAPE(p.n), ts_float32);
	ts_expr *i = ts_var(p.ctx, "i");
	p.B = ts_compute(p.ctx, "B", TS_SHAPE(p.n), TS_VARS(i),
			 ts_mul(p.ctx, TS_READ(p.ctx, p.A, i), ts_float(p.ctx, 2)));
	p.s = ts_create_schedule(p.ctx, 1, &p.B);
	return p;
}

START_TEST(test_specialize_args)
{
	prog p = scale();
	ts_ctx *ctx = p.ctx;
	ts_tensor *args[2] = {p.A, p.B};
	int64_t v = 100, bad = 5000, two[2] = {p.n, p.n}, vals[2] = {3, 4};
	FAILS_NULL(ctx, ts_lower_specialize(p.s, "f", 2, args, 1, NULL, &v), "lower_specialize(f): 1 sizes with a NULL list");
	FAILS_NULL(ctx, ts_lower_specialize(p.s, "f", 2, args, -1, &p.n, &v), "lower_specialize(f): -1 sizes");
	FAILS_NULL(ctx, ts_lower_specialize(p.s, "f", 2, args, 1, &v, &v),
		   "lower_specialize(f): size 0 (100) is not a size variable");
	ts_ctx *other = ts_ctx_new();
	int64_t m = ts_size_var(other, "m", 64);
	FAILS_NULL(ctx, ts_lower_specialize(p.s, "f", 2, args, 1, &m, &v),
		   "lower_specialize(f): size 0 is a size variable of another context");
	ts_ctx_free(other);
	FAILS_NULL(ctx, ts_lower_specialize(p.s, "f", 2, args, 1, &p.n, &bad),
		   "lower_specialize(f): n = 5000 is outside 1..4096");
	FAILS_NULL(ctx, ts_lower_specialize(p.s, "f", 2, args, 2, two, vals),
		   "lower_specialize(f): n is given twice");
	ck_assert_ptr_null(ts_lower_specialize(NULL, "f", 2, args, 1, &p.n, &v));
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_call)
{
	prog p = scale();
	ts_ctx *ctx = p.ctx;
	ts_func *f = ts_lower(p.s, "scale", 2, (ts_tensor *[]){p.A, p.B});
	tu_nonnull(ctx, f);
	ts_module *m = ts_build(ctx, f, NULL);
	tu_nonnull(ctx, m);
	ts_array *a = ts_array_new(ctx, ts_float32, 1, (int64_t[]){10});
	ts_array *b = ts_array_new(ctx, ts_float32, 1, (int64_t[]){11});
	ts_array *big = ts_array_new(ctx, ts_float32, 1, (int64_t[]){5000});
	ts_array *two = ts_array_new(ctx, ts_float32, 2, (int64_t[]){2, 5});
	FAILS_ST(ctx, ts_module_run(m, 2, (ts_array *[]){a, b}),
		 "call scale: argument 1 (B) gives n = 11 in dimension 0, but argument 0 (A) gave 10");
	FAILS_ST(ctx, ts_module_run(m, 2, (ts_array *[]){big, b}),
		 "call scale: argument 0 (A) has shape [5000], expected [n <= 4096]");
	FAILS_ST(ctx, ts_module_run(m, 2, (ts_array *[]){two, b}), "argument 0 (A) has shape [2, 5]");
	/* the sizes parameter is tessera's, not the caller's */
	FAILS_ST(ctx, ts_module_run(m, 3, (ts_array *[]){a, a, a}), "call scale: expected 2 arguments, got 3");
	ts_timing t;
	FAILS_ST(ctx, ts_module_time(m, 2, (ts_array *[]){a, b}, 1, 1, &t), "gives n = 11");
	ts_array_free(b);
	b = ts_array_new(ctx, ts_float32, 1, (int64_t[]){10});
	tu_ok(ctx, ts_module_time(m, 2, (ts_array *[]){a, b}, 1, 3, &t));
	/* symbolic functions build for the CPU only; the evaluator needs constants */
	FAILS_NULL(ctx, ts_build(ctx, f, "cuda -arch=sm_80"),
		   "build scale: size variable n: symbolic shapes build for CPU targets only");
	FAILS_ST(ctx, ts_eval(ctx, 2, (ts_tensor *[]){p.A, p.B}, (void *[]){a->data, b->data}),
		 "eval: tensor A has the symbolic extent n");
	/* a vector loop keeps the constant extent (the bound's): within the lane limit */
	ts_stage *st = ts_stage_of(p.s, p.B);
	FAILS_ST(ctx, ts_vectorize(st, ts_axis_of(st, 0)),
		 "vectorize(B): extent 4096 of axis 'i' exceeds the limit of 64 lanes");
	/* the interpreter checks the values of the sizes parameter */
	int64_t bad[1] = {0}, good[1] = {10};
	FAILS_ST(ctx, cg_interp_run(ctx, f, (void *[]){a->data, b->data, bad}),
		 "interp: scale: size variable n = 0 is outside 1..4096");
	tu_ok(ctx, cg_interp_run(ctx, f, (void *[]){a->data, b->data, good}));
	/* an exported header names the extents and where their values go */
	char dir[] = "/tmp/tessera_sym_XXXXXX", obj[64], hdr[64];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(obj, sizeof obj, "%s/k.o", dir);
	snprintf(hdr, sizeof hdr, "%s/k.h", dir);
	tu_ok(ctx, ts_module_export(m, obj, hdr));
	FILE *fh = fopen(hdr, "r");
	char text[4096] = "";
	ck_assert_ptr_nonnull(fh);
	text[fread(text, 1, sizeof text - 1, fh)] = '\0';
	fclose(fh);
	ck_assert_msg(strstr(text, "args[0]: A float32[n]") && strstr(text, "n = args[2][0] (int64), 1 to 4096"),
		      "header:\n%s", text);
	unlink(obj), unlink(hdr), rmdir(dir);
	ts_array_free(a), ts_array_free(b), ts_array_free(big), ts_array_free(two);
	ts_module_free(m);
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mustfail_symbolic");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_declare);
	tcase_add_test(tc, test_register_only_variables);
	tcase_add_test(tc, test_handles);
	tcase_add_test(tc, test_reads);
	tcase_add_test(tc, test_unbound);
	tcase_add_test(tc, test_specialize_args);
	tcase_add_test(tc, test_call);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
