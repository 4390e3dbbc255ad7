/*
 * test_build.c - ts_build and the module it returns: calls are checked
 * argument by argument, generated code can be read in every form, an
 * object file can be exported, and bad targets are refused clearly;
 * ts_build_all builds many at once with the same results and errors.
 */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build.h"
#include "lower.h"

typedef struct fixture {
	ts_ctx *ctx;
	ts_tensor *A, *B, *C;
	ts_func *f;
} fixture;

static fixture add_fixture(void)
{
	fixture x = {.ctx = ts_ctx_new()};
	ts_ctx *ctx = x.ctx;
	x.A = ts_placeholder(ctx, "A", TS_SHAPE(37, 20), ts_float32);
	x.B = ts_placeholder(ctx, "B", TS_SHAPE(37, 20), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	x.C = ts_compute(ctx, "C", TS_SHAPE(37, 20), TS_VARS(i, j),
			 ts_add(ctx, TS_READ(ctx, x.A, i, j), TS_READ(ctx, x.B, i, j)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &x.C);
	ts_stage *sc = ts_stage_of(s, x.C);
	ts_axis *o, *in;
	tu_ok(ctx, ts_split_tail(sc, ts_axis_of(sc, 1), 8, TS_TAIL_PARTITION, &o, &in));
	tu_ok(ctx, ts_vectorize(sc, in));
	tu_ok(ctx, ts_parallel(sc, ts_axis_of(sc, 0)));
	x.f = ts_lower(s, "vadd", 3, (ts_tensor *[]){x.A, x.B, x.C});
	tu_nonnull(ctx, x.f);
	return x;
}

START_TEST(test_run_and_sources)
{
	fixture x = add_fixture();
	ts_ctx *ctx = x.ctx;
	ts_module *m = ts_build(ctx, x.f, "llvm");
	tu_nonnull(ctx, m);
	ts_array *a = ts_array_for(ctx, x.A), *b = ts_array_for(ctx, x.B), *c = ts_array_for(ctx, x.C);
	ts_array_fill_random(a, 1, -1, 1);
	ts_array_fill_random(b, 2, -1, 1);
	tu_ok(ctx, ts_module_run(m, 3, (ts_array *[]){a, b, c}));
	for (int e = 0; e < 37 * 20; e++)
		ck_assert_float_eq(((float *)c->data)[e], ((float *)a->data)[e] + ((float *)b->data)[e]);
	const char *kinds[] = {"llvm", "llvm-opt", "asm", "c"};
	for (size_t k = 0; k < TS_COUNT_OF(kinds); k++)
		ck_assert_msg(ts_module_source(m, kinds[k]) != NULL, "%s: %s", kinds[k], ts_last_error(ctx));
	ck_assert_ptr_nonnull(strstr(ts_module_source(m, "llvm"), "<8 x float>"));
	ck_assert_ptr_null(ts_module_source(m, "ptx"));
	tu_assert_error(ctx, "module vadd: no 'ptx' source");
	ts_clear_error(ctx);
	ck_assert_ptr_nonnull(strstr(ts_module_target(m), "-mcpu="));
	ts_timing t;
	tu_ok(ctx, ts_module_time(m, 3, (ts_array *[]){a, b, c}, 1, 3, &t));
	ck_assert(t.min <= t.median && t.median <= t.max);
	ts_phase_times pt = ts_module_times(m);
	ck_assert(pt.total_ms > 0 && pt.optimize_ms > 0);
	ts_module_free(m);
	ts_array_free(a);
	ts_array_free(b);
	ts_array_free(c);
	ts_ctx_free(ctx);
}
END_TEST

/* Every argument mistake is an error naming the function and the argument. */
START_TEST(test_argument_errors)
{
	fixture x = add_fixture();
	ts_ctx *ctx = x.ctx;
	ts_module *m = ts_build(ctx, x.f, "llvm");
	tu_nonnull(ctx, m);
	ts_array *a = ts_array_for(ctx, x.A), *c = ts_array_for(ctx, x.C);
	ts_array *wrong_shape = ts_array_new(ctx, ts_float32, 2, (int64_t[]){37, 21});
	ts_array *wrong_dtype = ts_array_new(ctx, ts_float64, 2, (int64_t[]){37, 20});
	ck_assert_int_ne(ts_module_run(m, 2, (ts_array *[]){a, a}), TS_OK);
	tu_assert_error(ctx, "call vadd: expected 3 arguments, got 2");
	ts_clear_error(ctx);
	ck_assert_int_ne(ts_module_run(m, 3, (ts_array *[]){a, wrong_shape, c}), TS_OK);
	tu_assert_error(ctx, "argument 1 (B) has shape [37, 21], expected [37, 20]");
	ts_clear_error(ctx);
	ck_assert_int_ne(ts_module_run(m, 3, (ts_array *[]){a, a, wrong_dtype}), TS_OK);
	tu_assert_error(ctx, "argument 2 (C) has dtype float64, expected float32");
	ts_clear_error(ctx);
	ck_assert_int_ne(ts_module_run(m, 3, (ts_array *[]){a, NULL, c}), TS_OK);
	tu_assert_error(ctx, "call vadd");
	ts_clear_error(ctx);
	ts_module_free(m);
	ts_array_free(a);
	ts_array_free(c);
	ts_array_free(wrong_shape);
	ts_array_free(wrong_dtype);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_target_errors)
{
	fixture x = add_fixture();
	ts_ctx *ctx = x.ctx;
	ck_assert_ptr_null(ts_build(ctx, x.f, "opencl"));
	tu_assert_error(ctx, "build vadd: unknown target 'opencl'");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_build(ctx, x.f, "llvm -mcpu=nosuchcpu"));
	tu_assert_error(ctx, "nosuchcpu");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_build(ctx, NULL, "llvm"));
	tu_assert_error(ctx, "build: function is NULL");
	ts_clear_error(ctx);
	/* a CPU build for another CPU of the same architecture still runs here
	 * only if the host supports it; a generic x86-64 build always does */
	ts_module *m = ts_build(ctx, x.f, "llvm -mcpu=x86-64");
	ck_assert_msg(m != NULL, "%s", ts_last_error(ctx));
	ck_assert_ptr_null(strstr(ts_module_source(m, "asm"), "zmm"));
	ts_module_free(m);
	ts_ctx_free(ctx);
}
END_TEST

/* An object and its header are written; the header may not overwrite the
 * object under another spelling of its path or through a link, and a path
 * that cannot be written says why. */
START_TEST(test_export_object)
{
	fixture x = add_fixture();
	ts_ctx *ctx = x.ctx;
	ts_module *m = ts_build(ctx, x.f, "llvm");
	tu_nonnull(ctx, m);
	char dir[] = "/tmp/tessera-buildXXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char obj[256], hdr[256], dotted[256], link[256];
	snprintf(obj, sizeof(obj), "%s/vadd.o", dir);
	snprintf(hdr, sizeof(hdr), "%s/vadd.h", dir);
	snprintf(dotted, sizeof(dotted), "%s/./vadd.o", dir);
	snprintf(link, sizeof(link), "%s/link.h", dir);
	tu_ok(ctx, ts_module_export(m, obj, hdr));
	ck_assert_int_eq(access(obj, R_OK), 0);
	ck_assert_int_eq(access(hdr, R_OK), 0);
	const char *headers[] = {dotted, link};
	for (int i = 0; i < 2; i++) {
		if (i == 1)
			ck_assert_int_eq(symlink(obj, link), 0);
		ck_assert_int_eq(ts_module_export(m, obj, headers[i]), TS_ERR_INVALID);
		tu_assert_error(ctx, "is the object file");
		ts_clear_error(ctx);
		/* the object is still the object */
		char magic[4] = {0};
		FILE *f = fopen(obj, "rb");
		ck_assert_ptr_nonnull(f);
		ck_assert_uint_eq(fread(magic, 1, 4, f), 4);
		fclose(f);
		ck_assert_mem_eq(magic, "\x7f" "ELF", 4);
	}
	ck_assert_int_eq(ts_module_export(m, dir, NULL), TS_ERR_RUNTIME);
	tu_assert_error(ctx, "for writing: Is a directory");
	unlink(link);
	unlink(obj);
	unlink(hdr);
	rmdir(dir);
	ts_module_free(m);
	ts_ctx_free(ctx);
}
END_TEST

/* vadd over rows x cols, its columns split by `factor` and vectorized. */
static ts_func *vadd_split(ts_ctx *ctx, const char *name, int64_t rows, int64_t cols, int64_t factor)
{
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(rows, cols), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(rows, cols), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(rows, cols), TS_VARS(i, j),
				  ts_add(ctx, TS_READ(ctx, A, i, j),
					 ts_mul(ctx, TS_READ(ctx, B, i, j), ts_float(ctx, (double)factor))));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *o, *in;
	tu_ok(ctx, ts_split(sc, ts_axis_of(sc, 1), factor, &o, &in));
	tu_ok(ctx, ts_vectorize(sc, in));
	ts_func *f = ts_lower(s, name, 3, (ts_tensor *[]){A, B, C});
	tu_nonnull(ctx, f);
	return f;
}

/* ts_build_all builds each function as ts_build would, on several threads:
 * every module computes its own function (the factor it multiplies by
 * tells them apart), with tails the split factors leave. */
START_TEST(test_build_all)
{
	ts_ctx *ctx = ts_ctx_new();
	enum { N = 7 };
	const int64_t factor[N] = {1, 3, 4, 8, 16, 5, 8}, cols[N] = {20, 20, 13, 37, 64, 9, 1};
	const ts_func *f[N];
	for (int k = 0; k < N; k++)
		f[k] = vadd_split(ctx, ts_sprintf(ctx, "vadd%d", k), 11, cols[k], factor[k]);
	ts_module *m[N];
	tu_ok(ctx, ts_build_all(ctx, N, f, NULL, m));
	for (int k = 0; k < N; k++) {
		ck_assert_ptr_eq(ts_module_func(m[k]), f[k]);
		ck_assert(ts_module_times(m[k]).total_ms > 0);
		const int64_t shape[2] = {11, cols[k]};
		ts_array *a = ts_array_new(ctx, ts_float32, 2, shape);
		ts_array *b = ts_array_new(ctx, ts_float32, 2, shape);
		ts_array *c = ts_array_new(ctx, ts_float32, 2, shape);
		ts_array_fill_random(a, 1 + (uint64_t)k, -1, 1);
		ts_array_fill_random(b, 9 + (uint64_t)k, -1, 1);
		tu_ok(ctx, ts_module_run(m[k], 3, (ts_array *[]){a, b, c}));
		const float *pa = a->data, *pb = b->data, *pc = c->data;
		for (int64_t e = 0; e < 11 * cols[k]; e++)
			ck_assert_float_eq_tol(pc[e], pa[e] + pb[e] * (float)factor[k], 1e-6);
		ts_array_free(a);
		ts_array_free(b);
		ts_array_free(c);
		ts_module_free(m[k]);
	}
	/* nothing to build is no error */
	tu_ok(ctx, ts_build_all(ctx, 0, NULL, "llvm", NULL));
	ts_ctx_free(ctx);
}
END_TEST

/* Every failure, before or after the threads ran, leaves no module: the
 * error names the function (or its place, when NULL). */
START_TEST(test_build_all_errors)
{
	ts_ctx *ctx = ts_ctx_new(), *other = ts_ctx_new();
	const ts_func *f[3] = {vadd_split(ctx, "first", 4, 16, 8), vadd_split(ctx, "second", 4, 5, 4),
			       vadd_split(ctx, "third", 3, 3, 2)};
	ts_module *m[3];
	ck_assert_int_eq(ts_build_all(NULL, 3, f, "llvm", m), TS_ERR_INVALID);
	FAILS_ST(ctx, ts_build_all(ctx, -1, f, "llvm", m), "build_all: needs n >= 0");
	FAILS_ST(ctx, ts_build_all(ctx, 3, NULL, "llvm", m), "functions NULL");
	FAILS_ST(ctx, ts_build_all(ctx, 3, f, "llvm", NULL), "output NULL");
	const ts_func *with_null[3] = {f[0], NULL, f[2]};
	m[0] = m[1] = m[2] = (ts_module *)(uintptr_t)1; /* overwritten */
	FAILS_ST(ctx, ts_build_all(ctx, 3, with_null, "llvm", m), "build_all: function 1 is NULL");
	ck_assert(!m[0] && !m[1] && !m[2]);
	const ts_func *foreign[3] = {f[0], vadd_split(other, "foreign", 2, 2, 2), f[2]};
	FAILS_ST(ctx, ts_build_all(ctx, 3, foreign, "llvm", m),
		 "build foreign: the function belongs to another context");
	ck_assert(!m[0] && !m[1] && !m[2]);
	FAILS_ST(ctx, ts_build_all(ctx, 3, f, "opencl", m), "build first: unknown target 'opencl'");
	/* code for another architecture fails once compiled, after the threads */
	FAILS_ST(ctx, ts_build_all(ctx, 3, f, "llvm -mtriple=aarch64-linux-gnu", m),
		 "build first: target 'llvm -mtriple=aarch64-linux-gnu' is not the host");
	ck_assert(!m[0] && !m[1] && !m[2]);
	/* and the context still builds */
	tu_ok(ctx, ts_build_all(ctx, 3, f, "llvm", m));
	for (int k = 0; k < 3; k++)
		ts_module_free(m[k]);
	ts_ctx_free(other);
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("build");
	TCase *tc = tcase_create("cpu");
	tcase_add_test(tc, test_run_and_sources);
	tcase_add_test(tc, test_argument_errors);
	tcase_add_test(tc, test_target_errors);
	tcase_add_test(tc, test_export_object);
	tcase_add_test(tc, test_build_all);
	tcase_add_test(tc, test_build_all_errors);
	suite_add_tcase(s, tc);
	int rc = tu_run_suite(s);
	ts_threadpool_shutdown();
	return rc;
}
