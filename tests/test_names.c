/*
 * test_names.c - hostile tensor, variable and function names: a name that
 * closes a comment and adds code, keywords and library symbols of C, C++
 * and CUDA, names starting with digits or holding spaces, punctuation,
 * newlines and UTF-8.  Functions made of them build with LLVM and compute
 * what the reference evaluator does; their C source compiles with the
 * system compiler (-Wall -Werror), their CUDA C with NVRTC, and the exported
 * header compiles, links against the object and holds no injected code.
 * Compiler and NVRTC checks skip (pass) where those are missing.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build.h"
#include "c_emit.h"
#include "ident.h"
#include "lower.h"
#include "cuda_test.h"

#define M 7
#define N 20

static const char *const input_names[] = {
	"A */ int x; /*", "NULL", "int32_t", "expf", "catch", "class", "float",
	"__syncthreads", "threadIdx", "3d", "my tensor", "a.b", "a-b", "\xc3\xa9t\xc3\xa9",
	"line\nbreak", "main", "args", "ts_parallel_for", "_Bool", "for",
};
#define NIN ((int)TS_COUNT_OF(input_names))

typedef struct named {
	ts_ctx *ctx;
	ts_tensor *in[NIN], *out;
	ts_schedule *s;
	ts_stage *st;
} named;

/* out[i, j] = sum over inputs of (k + 1) * in_k[i, j], out named "int" and
 * the axes "for" and "threadIdx.x". */
static named build_named(void)
{
	named x = {.ctx = ts_ctx_new()};
	ts_ctx *ctx = x.ctx;
	ts_expr *i = ts_var(ctx, "for"), *j = ts_var(ctx, "threadIdx.x");
	ts_expr *body = NULL;
	for (int k = 0; k < NIN; k++) {
		x.in[k] = ts_placeholder(ctx, input_names[k], TS_SHAPE(M, N), ts_float32);
		ts_expr *t = ts_mul(ctx, TS_READ(ctx, x.in[k], i, j), ts_float(ctx, k + 1));
		body = body ? ts_add(ctx, body, t) : t;
	}
	x.out = ts_compute(ctx, "int", TS_SHAPE(M, N), TS_VARS(i, j), body);
	tu_nonnull(ctx, x.out);
	x.s = ts_create_schedule(ctx, 1, &x.out);
	x.st = ts_stage_of(x.s, x.out);
	tu_nonnull(ctx, x.st);
	return x;
}

static ts_func *lower_named(named *x, const char *fname)
{
	ts_tensor *args[NIN + 1];
	memcpy(args, x->in, sizeof(x->in));
	args[NIN] = x->out;
	ts_func *f = ts_lower(x->s, fname, NIN + 1, args);
	tu_nonnull(x->ctx, f);
	return f;
}

static bool have_cc(void)
{
	return system("cc --version >/dev/null 2>&1") == 0;
}

static void write_text(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");
	ck_assert_ptr_nonnull(fp);
	fputs(text, fp);
	fclose(fp);
}

static char *read_text(const char *path)
{
	FILE *fp = fopen(path, "r");
	ck_assert_ptr_nonnull(fp);
	static char buf[1 << 16];
	size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
	buf[n] = '\0';
	fclose(fp);
	return buf;
}

/* Runs `cc args` in dir; a failure shows the compiler's messages. */
static void cc_ok(const char *dir, const char *args)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "cd %s && cc -std=c11 -Wall -Werror %s >cc.log 2>&1", dir, args);
	if (system(cmd) != 0) {
		char log[256];
		snprintf(log, sizeof(log), "%s/cc.log", dir);
		ck_abort_msg("cc %s failed:\n%s", args, read_text(log));
	}
}

static const char *const function_names[] = {
	"main", "float", "3d kernel */ int y; /*", "expf", "ts_parallel_for", "line\nbreak",
};

START_TEST(test_hostile_names_build_and_run)
{
	for (size_t fn = 0; fn < TS_COUNT_OF(function_names); fn++) {
		named x = build_named();
		ts_axis *o, *in;
		tu_ok(x.ctx, ts_split(x.st, ts_axis_of(x.st, 1), 8, &o, &in));
		tu_ok(x.ctx, ts_vectorize(x.st, in));
		tu_ok(x.ctx, ts_parallel(x.st, ts_axis_of(x.st, 0)));
		ts_func *f = lower_named(&x, function_names[fn]);
		tu_set_context(function_names[fn]);
		tu_check_func(x.ctx, f, 1e-5);
		tu_set_context(NULL);
		ts_ctx_free(x.ctx);
	}
}
END_TEST

START_TEST(test_hostile_names_c_source_compiles)
{
	if (!have_cc())
		return;
	char dir[] = "/tmp/tessera-namesXXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof(path), "%s/k.c", dir);
	for (size_t fn = 0; fn < TS_COUNT_OF(function_names); fn++) {
		named x = build_named();
		ts_func *f = lower_named(&x, function_names[fn]);
		const char *src = cg_emit_c(x.ctx, f);
		tu_nonnull(x.ctx, src);
		ck_assert_msg(strstr(src, "int x;") == NULL && strstr(src, "int y;") == NULL,
			      "injected code in:\n%s", src);
		write_text(path, src);
		cc_ok(dir, "-c k.c -o k.o");
		ts_ctx_free(x.ctx);
	}
	static const char *const files[] = {"k.c", "k.o", "cc.log"};
	for (size_t i = 0; i < TS_COUNT_OF(files); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
}
END_TEST

START_TEST(test_hostile_names_cuda_source_compiles)
{
	if (!have_nvrtc())
		return;
	for (size_t fn = 0; fn < TS_COUNT_OF(function_names); fn++) {
		named x = build_named();
		ts_ctx *ctx = x.ctx;
		tu_ok(ctx, ts_bind(x.st, ts_axis_of(x.st, 0), TS_BLOCK_X));
		tu_ok(ctx, ts_bind(x.st, ts_axis_of(x.st, 1), TS_THREAD_X));
		ts_func *f = lower_named(&x, function_names[fn]);
		const char *src = cg_emit_cuda(ctx, f, NULL);
		tu_nonnull(ctx, src);
		ck_assert_msg(strstr(src, "int x;") == NULL && strstr(src, "int y;") == NULL,
			      "injected code in:\n%s", src);
		cg_nvrtc_result r;
		ts_status st = cg_nvrtc_compile(ctx, src, "names", "compute_80", &r);
		ck_assert_msg(st == TS_OK, "%s\n%s", ts_last_error(ctx), src);
		cg_nvrtc_result_free(&r);
		ts_ctx_free(ctx);
	}
}
END_TEST

/* A program that includes the header and calls the function through it:
 * the header must compile and name the object's symbol. */
static const char *caller_source(const char *header, const char *symbol)
{
	static char text[2048];
	snprintf(text, sizeof(text),
		 "#include <stdlib.h>\n#include \"%s\"\n\n"
		 "int main(void)\n{\n"
		 "\tvoid *args[%d];\n"
		 "\tfor (int i = 0; i < %d; i++)\n"
		 "\t\targs[i] = aligned_alloc(64, %d);\n"
		 "\treturn %s(args);\n}\n",
		 header, NIN + 1, NIN + 1, (int)(((M * N * 4) + 63) / 64 * 64), symbol);
	return text;
}

START_TEST(test_hostile_names_export_header)
{
	static const struct {
		const char *fname, *symbol;
	} cases[] = {
		{"3d kernel */ int y; /*", "v3d_kernel____int_y____"},
		{"main", "main_"},
		{"float", "float_"},
		{"ts_parallel_for", "vts_parallel_for"},
	};
	char dir[] = "/tmp/tessera-namesXXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char obj[256], hdr[256], caller[256], path[256];
	snprintf(obj, sizeof(obj), "%s/k.o", dir);
	snprintf(hdr, sizeof(hdr), "%s/k.h", dir);
	snprintf(caller, sizeof(caller), "%s/caller.c", dir);
	for (size_t c = 0; c < TS_COUNT_OF(cases); c++) {
		named x = build_named();
		ts_func *f = lower_named(&x, cases[c].fname);
		ts_module *m = ts_build(x.ctx, f, "llvm");
		tu_nonnull(x.ctx, m);
		tu_ok(x.ctx, ts_module_export(m, obj, hdr));
		const char *h = read_text(hdr);
		ck_assert_msg(strstr(h, "int x;") == NULL && strstr(h, "int y;") == NULL,
			      "injected code in:\n%s", h);
		char decl[128];
		snprintf(decl, sizeof(decl), "int32_t %s(void **args);", cases[c].symbol);
		ck_assert_msg(strstr(h, decl) != NULL, "no '%s' in:\n%s", decl, h);
		/* the comment names every argument by its identifier */
		ck_assert_msg(strstr(h, "args[0]: A____int_x____ float32[7, 20]") != NULL, "%s", h);
		if (have_cc()) {
			write_text(caller, caller_source("k.h", cases[c].symbol));
			cc_ok(dir, "caller.c k.o -lm -o caller");
			snprintf(path, sizeof(path), "%s/caller", dir);
			ck_assert_int_eq(system(path), 0);
		}
		ts_module_free(m);
		ts_ctx_free(x.ctx);
	}
	static const char *const files[] = {"k.o", "k.h", "caller.c", "caller", "cc.log"};
	for (size_t i = 0; i < TS_COUNT_OF(files); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
}
END_TEST

/* The mapping itself: legal, never reserved, ordinary names unchanged. */
START_TEST(test_identifier_mapping)
{
	ts_ctx *ctx = ts_ctx_new();
	static const struct {
		const char *name, *ident;
	} cases[] = {
		{"A", "A"}, {"i.outer", "i_outer"}, {"A */ int x; /*", "A____int_x____"},
		{"NULL", "NULL_"}, {"int32_t", "int32_t_"}, {"catch", "catch_"},
		{"__syncthreads", "v__syncthreads"}, {"_Bool", "v_Bool"}, {"3d", "v3d"},
		{"", "v"}, {"my tensor", "my_tensor"}, {"\xc3\xa9", "v__"}, {"a\nb", "a_b"},
		{"threadIdx", "threadIdx_"}, {"main", "main_"}, {"x_", "x_"},
		{"ts_parallel_for", "vts_parallel_for"}, {"ts_floordiv_i32", "vts_floordiv_i32"},
	};
	for (size_t c = 0; c < TS_COUNT_OF(cases); c++) {
		const char *id = cg_c_ident(ctx, cases[c].name);
		ck_assert_str_eq(id, cases[c].ident);
		ck_assert(!cg_ident_reserved(id));
	}
	ts_ctx_free(ctx);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("names");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_identifier_mapping);
	tcase_add_test(tc, test_hostile_names_build_and_run);
	tcase_add_test(tc, test_hostile_names_c_source_compiles);
	tcase_add_test(tc, test_hostile_names_cuda_source_compiles);
	tcase_add_test(tc, test_hostile_names_export_header);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	int rc = tu_run_suite(suite());
	ts_threadpool_shutdown();
	return rc;
}
