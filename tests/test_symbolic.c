/*
 * test_symbolic.c - symbolic shapes (ts_size_var): one lowered function runs
 * on arrays of many extents.  Each case builds the same expression twice,
 * once over size variables (scheduled, lowered and compiled once) and once
 * with the constants of each call (evaluated by the reference evaluator),
 * and compares on random data: extents the split factors divide and
 * extents they do not, 1 and the bound included.  The specialized twin
 * (ts_lower_specialize) is checked the same way.
 */
#include "testutil.h"

#include <math.h>
#include <string.h>

#include "interp.h"
#include "lower.h"
#include "op_schedules.h"
#include "printer.h"

#define MAXP 6

/* Builds the program over extents ext (constants or size variables):
 * params[] in argument order, the output last. */
typedef void (*build_fn)(ts_ctx *ctx, const int64_t *ext, ts_tensor **params, int *np);
/* Schedules the output of a build. */
typedef ts_status (*sched_fn)(ts_schedule *s, ts_tensor *out);

/* ---- programs ------------------------------------------------------------------- */

static void build_scale(ts_ctx *ctx, const int64_t *ext, ts_tensor **p, int *np)
{
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(ext[0]), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *B = ts_compute(ctx, "B", TS_SHAPE(ext[0]), TS_VARS(i),
				  ts_add(ctx, ts_mul(ctx, TS_READ(ctx, A, i), ts_float(ctx, 2)), ts_float(ctx, 1)));
	p[0] = A, p[1] = B, *np = 2;
}

static void build_matmul(ts_ctx *ctx, const int64_t *ext, ts_tensor **p, int *np)
{
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(ext[0], ext[2]), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(ext[2], ext[1]), ts_float32);
	ts_tensor *C = ts_op_matmul(ctx, A, B, false, false);
	p[0] = A, p[1] = B, p[2] = C, *np = 3;
}

/* A dense layer: matmul, bias and relu, fused by ts_schedule_dense_cpu. */
static void build_dense(ts_ctx *ctx, const int64_t *ext, ts_tensor **p, int *np)
{
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(ext[0], ext[2]), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(ext[2], ext[1]), ts_float32);
	ts_tensor *bias = ts_placeholder(ctx, "bias", TS_SHAPE(ext[1]), ts_float32);
	ts_tensor *Y = ts_op_relu(ctx, ts_op_bias_add(ctx, ts_op_matmul(ctx, A, B, false, false), bias, 1));
	p[0] = A, p[1] = B, p[2] = bias, p[3] = Y, *np = 4;
}

/* Rows of a softmax: reductions over a symbolic extent. */
static void build_softmax(ts_ctx *ctx, const int64_t *ext, ts_tensor **p, int *np)
{
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(ext[0], ext[1]), ts_float32);
	p[0] = X, p[1] = ts_op_softmax(ctx, X), *np = 2;
}

/* ---- schedules -------------------------------------------------------------------- */

static ts_status sched_none(ts_schedule *s, ts_tensor *out)
{
	(void)s, (void)out;
	return TS_OK;
}

/* split by 16 (vectorized inner) and by nparts 3 (parallel outer) */
static ts_status sched_scale(ts_schedule *s, ts_tensor *out)
{
	ts_stage *st = ts_stage_of(s, out);
	ts_axis *o, *i, *oo, *oi;
	if (ts_split(st, ts_axis_of(st, 0), 16, &o, &i) != TS_OK ||
	    ts_split_nparts(st, o, 3, &oo, &oi) != TS_OK || ts_vectorize(st, i) != TS_OK)
		return ts_last_status(s->ctx);
	return ts_parallel(st, oo);
}

static ts_status sched_matmul(ts_schedule *s, ts_tensor *out)
{
	return ts_schedule_matmul_cpu(s, out, NULL);
}

/* A's row segments copied to a double-buffered local buffer at each step
 * of k (split by 4): the double_buffer pass's form for a symbolic number
 * of steps (guarded halves, the first fetch under n > 0). */
static ts_status sched_matmul_db(ts_schedule *s, ts_tensor *out)
{
	ts_tensor *AL = ts_cache_read(s, out->inputs[0], TS_SCOPE_LOCAL, 1, &out);
	if (!AL)
		return ts_last_status(s->ctx);
	ts_stage *sc = ts_stage_of(s, out), *sa = ts_stage_of(s, AL);
	ts_axis *ko, *ki;
	ts_status st = ts_split(sc, ts_reduce_axis_of(sc, 0), 4, &ko, &ki);
	if (st == TS_OK)
		st = ts_compute_at(sa, sc, ko);
	return st == TS_OK ? ts_double_buffer(sa) : st;
}

static ts_status sched_dense(ts_schedule *s, ts_tensor *out)
{
	return ts_schedule_dense_cpu(s, out, NULL);
}

static ts_status sched_softmax(ts_schedule *s, ts_tensor *out)
{
	return ts_schedule_softmax_cpu(s, out, 8);
}

/* ---- checking ------------------------------------------------------------------------ */

/* The expected outputs for extents ext, by the reference evaluator on the
 * inputs' data. */
static void reference(build_fn build, const int64_t *ext, ts_array **args, ts_array *want)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *p[MAXP];
	int np;
	build(ctx, ext, p, &np);
	tu_nonnull(ctx, p[np - 1]);
	void *data[MAXP];
	for (int i = 0; i < np - 1; i++)
		data[i] = args[i]->data;
	data[np - 1] = want->data;
	tu_ok(ctx, ts_eval(ctx, np, p, data));
	ts_ctx_free(ctx);
}

/* Runs m (or f through the interpreter when m is NULL) on extents ext and
 * compares with the reference. */
static void run_case(ts_ctx *ctx, const ts_func *f, ts_module *m, build_fn build, int np,
		     const int64_t *ext)
{
	ts_array *args[MAXP], *want;
	/* arrays shaped like the reference's tensors of these extents */
	ts_ctx *shapes = ts_ctx_new();
	ts_tensor *q[MAXP];
	int nq;
	build(shapes, ext, q, &nq);
	ck_assert_int_eq(nq, np);
	for (int i = 0; i < np; i++) {
		args[i] = ts_array_new(ctx, q[i]->dtype, q[i]->ndim, q[i]->shape);
		ts_array_fill_random(args[i], 7 + (uint64_t)i, -1, 1);
	}
	want = ts_array_new(ctx, q[np - 1]->dtype, q[np - 1]->ndim, q[np - 1]->shape);
	ts_ctx_free(shapes);
	reference(build, ext, args, want);
	if (m) {
		tu_ok(ctx, ts_module_run(m, np, args));
	} else {
		int64_t sizes[TS_MAX_SIZE_VARS];
		tu_ok(ctx, ts_check_args_sizes(ctx, f, np, args, TS_DEVICE_CPU, sizes));
		void *data[MAXP + 1];
		for (int i = 0; i < np; i++)
			data[i] = args[i]->data;
		data[np] = sizes;
		tu_ok(ctx, cg_interp_run(ctx, f, data));
	}
	char what[128];
	snprintf(what, sizeof(what), "extents %lld, %lld, %lld", (long long)ext[0],
		 (long long)ext[1], (long long)ext[2]);
	tu_set_context(what);
	tu_assert_close(args[np - 1], want, 1e-4, 1e-4);
	tu_set_context(NULL);
	for (int i = 0; i < np; i++)
		ts_array_free(args[i]);
	ts_array_free(want);
}

/* Lowers the symbolic program once and runs it on every case (n cases of
 * 3 extents; unused extents are ignored), through the JIT and the
 * interpreter. */
static void check_symbolic(build_fn build, sched_fn sched, const int64_t *max, int ncases,
			   const int64_t (*cases)[3])
{
	ts_ctx *ctx = ts_ctx_new();
	int64_t sv[3] = {ts_size_var(ctx, "m", max[0]), ts_size_var(ctx, "n", max[1]),
			 ts_size_var(ctx, "k", max[2])};
	ts_tensor *p[MAXP];
	int np;
	build(ctx, sv, p, &np);
	tu_nonnull(ctx, p[np - 1]);
	ts_schedule *s = ts_create_schedule(ctx, 1, &p[np - 1]);
	tu_ok(ctx, sched(s, p[np - 1]));
	ts_func *f = ts_lower(s, "sym", np, p);
	tu_nonnull(ctx, f);
	ts_module *m = ts_build(ctx, f, NULL);
	tu_nonnull(ctx, m);
	for (int c = 0; c < ncases; c++) {
		run_case(ctx, f, m, build, np, cases[c]);
		run_case(ctx, f, NULL, build, np, cases[c]);
	}
	ts_module_free(m);
	ts_ctx_free(ctx);
}

static const int64_t dense_cases[][3] = {
	{1, 1, 1}, {6, 32, 4}, {64, 64, 64}, {37, 45, 29}, {100, 17, 63}, {5, 100, 3}, {128, 128, 128},
};

START_TEST(test_elementwise)
{
	static const int64_t cases[][3] = {{1, 0, 0}, {16, 0, 0}, {48, 0, 0}, {47, 0, 0},
					   {1000, 0, 0}, {1023, 0, 0}, {4096, 0, 0}};
	check_symbolic(build_scale, sched_scale, (int64_t[]){4096, 1, 1}, 7, cases);
	check_symbolic(build_scale, sched_none, (int64_t[]){4096, 1, 1}, 7, cases);
}
END_TEST

START_TEST(test_matmul)
{
	check_symbolic(build_matmul, sched_matmul, (int64_t[]){128, 128, 128}, 7, dense_cases);
	check_symbolic(build_matmul, sched_none, (int64_t[]){128, 128, 128}, 7, dense_cases);
	check_symbolic(build_matmul, sched_matmul_db, (int64_t[]){128, 128, 128}, 7, dense_cases);
}
END_TEST

START_TEST(test_dense)
{
	check_symbolic(build_dense, sched_dense, (int64_t[]){128, 128, 128}, 7, dense_cases);
}
END_TEST

START_TEST(test_softmax)
{
	static const int64_t cases[][3] = {{1, 1, 0}, {3, 17, 0}, {8, 64, 0}, {13, 100, 0}};
	check_symbolic(build_softmax, sched_softmax, (int64_t[]){16, 128, 1}, 4, cases);
	check_symbolic(build_softmax, sched_none, (int64_t[]){16, 128, 1}, 4, cases);
}
END_TEST

/* The specialized twin: constant extents, arrays of exactly those. */
START_TEST(test_specialize)
{
	ts_ctx *ctx = ts_ctx_new();
	int64_t sv[3] = {ts_size_var(ctx, "m", 128), ts_size_var(ctx, "n", 128),
			 ts_size_var(ctx, "k", 128)};
	ts_tensor *p[MAXP];
	int np;
	build_matmul(ctx, sv, p, &np);
	ts_schedule *s = ts_create_schedule(ctx, 1, &p[2]);
	tu_ok(ctx, ts_schedule_matmul_cpu(s, p[2], NULL));
	static const int64_t ext[3] = {37, 64, 29};
	ts_func *f = ts_lower_specialize(s, "twin", 3, p, 3, sv, ext);
	tu_nonnull(ctx, f);
	ck_assert_int_eq(f->nsizes, 0);
	ck_assert_int_eq(f->params[0]->shape[0], 37);
	ts_module *m = ts_build(ctx, f, NULL);
	tu_nonnull(ctx, m);
	run_case(ctx, f, m, build_matmul, np, ext);
	/* only those extents */
	ts_array *a = ts_array_new(ctx, ts_float32, 2, (int64_t[]){36, 29});
	ts_array *b = ts_array_new(ctx, ts_float32, 2, (int64_t[]){29, 64});
	ts_array *c = ts_array_new(ctx, ts_float32, 2, (int64_t[]){36, 64});
	FAILS_ST(ctx, ts_module_run(m, 3, (ts_array *[]){a, b, c}), "has shape [36, 29], expected [37, 29]");
	ts_array_free(a), ts_array_free(b), ts_array_free(c);
	ts_module_free(m);
	/* partly specialized: k stays symbolic */
	f = ts_lower_specialize(s, "half", 3, p, 2, sv, ext);
	tu_nonnull(ctx, f);
	ck_assert_int_eq(f->nsizes, 1);
	m = ts_build(ctx, f, NULL);
	tu_nonnull(ctx, m);
	run_case(ctx, f, m, build_matmul, np, ext);
	ts_module_free(m);
	ts_ctx_free(ctx);
}
END_TEST

/* What the user sees: the size bound from the sizes parameter, the loop
 * that runs to ceil(n / 16), the last tile shifted inwards, and one test
 * per tile choosing the unguarded copy. */
START_TEST(test_printing)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *p[MAXP];
	int np;
	int64_t n = ts_size_var(ctx, "n", 4096);
	build_scale(ctx, (int64_t[]){n, 1, 1}, p, &np);
	ts_schedule *s = ts_create_schedule(ctx, 1, &p[1]);
	ts_stage *st = ts_stage_of(s, p[1]);
	ts_axis *o, *i;
	tu_ok(ctx, ts_split(st, ts_axis_of(st, 0), 16, &o, &i));
	tu_ok(ctx, ts_vectorize(st, i));
	tu_ok(ctx, ts_parallel(st, o));
	ts_func *f = ts_lower(s, "scale", 2, p);
	tu_nonnull(ctx, f);
	tu_assert_golden("symbolic_scale.txt", ir_func_str(ctx, f));
	const char *text = ts_schedule_str(s);
	ck_assert_msg(strstr(text, "i ranges over n <= 4096: its loops run to their share of n"), "%s", text);
	ck_assert_int_eq(ts_tensor_dim(p[0], 0), n);
	ck_assert_int_eq(ts_tensor_dim(p[0], 1), 0);
	ck_assert_ptr_nonnull(ts_size_expr(ctx, n));
	ts_ctx_free(ctx);
}
END_TEST

/* A size variable in the body: the mean of a row of length n. */
START_TEST(test_size_in_body)
{
	ts_ctx *ctx = ts_ctx_new();
	int64_t n = ts_size_var(ctx, "n", 64);
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(n), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, n);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *S = ts_compute(ctx, "S", TS_SHAPE(1), TS_VARS(i), TS_SUM(ctx, TS_READ(ctx, X, k->var), k));
	ts_tensor *M = ts_compute(ctx, "M", TS_SHAPE(1), TS_VARS(i),
				  ts_div(ctx, TS_READ(ctx, S, i), ts_cast(ctx, ts_float32, ts_size_expr(ctx, n))));
	tu_nonnull(ctx, M);
	ts_schedule *s = ts_create_schedule(ctx, 1, &M);
	ts_func *f = ts_lower(s, "mean", 2, (ts_tensor *[]){X, M});
	tu_nonnull(ctx, f);
	ts_module *m = ts_build(ctx, f, NULL);
	tu_nonnull(ctx, m);
	for (int64_t len = 1; len <= 64; len += 21) {
		ts_array *x = ts_array_new(ctx, ts_float32, 1, &len);
		ts_array *y = ts_array_new(ctx, ts_float32, 1, (int64_t[]){1});
		double sum = 0;
		for (int64_t j = 0; j < len; j++)
			sum += ((float *)x->data)[j] = (float)(j % 7);
		tu_ok(ctx, ts_module_run(m, 2, (ts_array *[]){x, y}));
		ck_assert_double_eq_tol(((float *)y->data)[0], sum / (double)len, 1e-5);
		ts_array_free(x), ts_array_free(y);
	}
	ts_module_free(m);
	ts_ctx_free(ctx);
}
END_TEST

/* The size variables' values reach the kernel as a plain int64 array of
 * the caller's, 8-byte aligned: with four variables, a batch matmul's
 * entry read them with one 32-byte load that assumed 64-byte alignment,
 * and faulted when ts_module_run's frame put the array at 16 mod 32.
 * Calls from frames of several depths put it at every alignment. */
static ts_status run_at_depth(ts_module *m, ts_array **args, int pad)
{
	volatile char *p = __builtin_alloca((size_t)pad);
	p[0] = 0;
	return ts_module_run(m, 3, args);
}

START_TEST(test_sizes_any_alignment)
{
	ts_ctx *ctx = ts_ctx_new();
	int64_t b = ts_size_var(ctx, "b", 4), mv = ts_size_var(ctx, "m", 64);
	int64_t n = ts_size_var(ctx, "n", 64), k = ts_size_var(ctx, "k", 64);
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(b, mv, k), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(b, k, n), ts_float32);
	ts_tensor *C = ts_op_batch_matmul(ctx, A, B, false, false);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	tu_ok(ctx, ts_schedule_batch_matmul_cpu(s, C, NULL));
	ts_func *f = ts_lower(s, "bmm", 3, (ts_tensor *[]){A, B, C});
	tu_nonnull(ctx, f);
	ts_module *m = ts_build(ctx, f, "llvm");
	tu_nonnull(ctx, m);
	ts_array *args[3] = {ts_array_new(ctx, ts_float32, TS_SHAPE(2, 3, 5)),
			     ts_array_new(ctx, ts_float32, TS_SHAPE(2, 5, 7)),
			     ts_array_new(ctx, ts_float32, TS_SHAPE(2, 3, 7))};
	ts_array *want = ts_array_new(ctx, ts_float32, TS_SHAPE(2, 3, 7));
	ts_array_fill_random(args[0], 1, -1, 1);
	ts_array_fill_random(args[1], 2, -1, 1);
	const float *a = args[0]->data, *bb = args[1]->data;
	float *w = want->data;
	for (int q = 0; q < 2; q++)
		for (int i = 0; i < 3; i++)
			for (int j = 0; j < 7; j++) {
				float acc = 0;
				for (int r = 0; r < 5; r++)
					acc += a[(q * 3 + i) * 5 + r] * bb[(q * 5 + r) * 7 + j];
				w[(q * 3 + i) * 7 + j] = acc;
			}
	for (int pad = 8; pad <= 64; pad += 8) {
		ts_array_fill_random(args[2], 3, 100, 200);
		tu_ok(ctx, run_at_depth(m, args, pad));
		const float *c = args[2]->data;
		for (int e = 0; e < 42; e++)
			ck_assert_msg(fabsf(c[e] - w[e]) <= 1e-5f, "pad %d, element %d: %g, want %g", pad, e, c[e],
				      w[e]);
	}
	for (int i = 0; i < 3; i++)
		ts_array_free(args[i]);
	ts_array_free(want);
	ts_module_free(m);
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("symbolic");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_elementwise);
	tcase_add_test(tc, test_matmul);
	tcase_add_test(tc, test_dense);
	tcase_add_test(tc, test_softmax);
	tcase_add_test(tc, test_specialize);
	tcase_add_test(tc, test_printing);
	tcase_add_test(tc, test_size_in_body);
	tcase_add_test(tc, test_sizes_any_alignment);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
