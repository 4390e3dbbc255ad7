/* testutil.c - see testutil.h. */
#include "testutil.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char context[4096];

void tu_set_context(const char *text)
{
	snprintf(context, sizeof(context), "%s", text ? text : "");
}

int tu_run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

void tu_assert_close(const ts_array *got, const ts_array *want, double rtol, double atol)
{
	ck_assert_int_eq(got->ndim, want->ndim);
	int64_t n = ts_array_numel(want);
	ck_assert_int_eq(ts_array_numel(got), n);
	for (int64_t i = 0; i < n; i++) {
		double g = ts_elem_get_f64(got->data, got->dtype, i);
		double w = ts_elem_get_f64(want->data, want->dtype, i);
		/* equal infinities are close (their difference is NaN) */
		if (g != w && !(fabs(g - w) <= atol + rtol * fabs(w)))
			ck_abort_msg("element %lld: got %.9g, want %.9g%s", (long long)i, g, w, context);
	}
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	if (buf)
		buf[n] = '\0';
	fclose(f);
	return buf;
}

/* Prints the first differing line of two texts. */
static void first_diff(const char *a, const char *b, char *out, size_t cap)
{
	int line = 1;
	while (*a && *b) {
		const char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');
		size_t la = ea ? (size_t)(ea - a) : strlen(a), lb = eb ? (size_t)(eb - b) : strlen(b);
		if (la != lb || memcmp(a, b, la) != 0) {
			snprintf(out, cap, "line %d:\n  golden: %.*s\n  actual: %.*s", line, (int)la, a,
				 (int)lb, b);
			return;
		}
		a += la + (ea ? 1 : 0);
		b += lb + (eb ? 1 : 0);
		line++;
	}
	snprintf(out, cap, "line %d: one text ends early (golden: '%.60s', actual: '%.60s')", line,
		 a, b);
}

void tu_assert_golden(const char *name, const char *text)
{
	char rel[512];
	snprintf(rel, sizeof(rel), "tests/golden/%s", name);
	tu_assert_golden_path(rel, text);
}

void tu_assert_golden_path(const char *name, const char *text)
{
	char path[1024];
	ck_assert_msg(text != NULL, "no text to compare with %s", name);
	/* TESSERA_SOURCE_DIR: the source tree where the test binaries run away
	 * from the tree they were built from (scripts/gpu_check.sh --bundle) */
	const char *src = getenv("TESSERA_SOURCE_DIR");
	snprintf(path, sizeof(path), "%s/%s", src && *src ? src : TS_SOURCE_DIR, name);
	const char *upd = getenv("TESSERA_UPDATE_GOLDENS");
	if (upd && strcmp(upd, "1") == 0) {
		FILE *f = fopen(path, "wb");
		ck_assert_msg(f != NULL, "cannot write golden %s", path);
		fputs(text, f);
		fclose(f);
		return;
	}
	char *want = read_file(path);
	ck_assert_msg(want != NULL, "missing golden %s (run with TESSERA_UPDATE_GOLDENS=1)", path);
	if (strcmp(want, text) != 0) {
		char diff[2048];
		first_diff(want, text, diff, sizeof(diff));
		free(want);
		ck_abort_msg("golden %s differs at %s", name, diff);
	}
	free(want);
}

bool tu_have_cc(void)
{
	return system("cc --version >/dev/null 2>&1") == 0;
}

void tu_temp_source(const char *tag, const char *name, const char *src, char dir[64],
		    char path[128])
{
	snprintf(dir, 64, "/tmp/tessera_%s_XXXXXX", tag);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, 128, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(src, f);
	fclose(f);
}

/* Whether this process has AddressSanitizer's runtime, which an
 * ASan-instrumented shared object needs (it cannot load one otherwise). */
static bool host_has_asan(void)
{
#if defined(__SANITIZE_ADDRESS__)
	return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	return true;
#else
	return false;
#endif
#else
	return false;
#endif
}

const char *tu_cc_sanitize_flags(void)
{
	/* asked once per process: a probe costs a compiler run */
	static const char *flags;
	if (flags)
		return flags;
	const char *want = host_has_asan()
				   ? "-fsanitize=address,undefined -fno-sanitize-recover=all"
				   : "-fsanitize=undefined -fno-sanitize-recover=all";
	char cmd[256];
	snprintf(cmd, sizeof(cmd),
		 "echo 'int f(int x) { return x + 1; }' | cc -x c %s -fPIC -shared - -o /dev/null "
		 ">/dev/null 2>&1", want);
	flags = system(cmd) == 0 ? want : "";
	return flags;
}

void *tu_cc_load_with(const char *src, const char *flags, char dir[64])
{
	char path[128], cmd[768];
	tu_temp_source("cc", "k.c", src, dir, path);
	/* the source by its full path, which a sanitizer's report names */
	snprintf(cmd, sizeof(cmd),
		 "cc -std=c11 -Wall -Werror -O2 %s -fPIC -shared %s/k.c -o %s/k.so -lm >%s/cc.log 2>&1",
		 flags, dir, dir, dir);
	ck_assert_msg(system(cmd) == 0, "cc failed on the source in %s", dir);
	snprintf(path, sizeof(path), "%s/k.so", dir);
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(lib != NULL, "dlopen: %s", dlerror());
	return lib;
}

void *tu_cc_load(const char *src, char dir[64])
{
	return tu_cc_load_with(src, "", dir);
}

void tu_cc_unload(void *lib, const char *dir)
{
	static const char *const files[] = {"k.c", "cc.log", "k.so"};
	char path[128];
	dlclose(lib);
	for (size_t i = 0; i < TS_COUNT_OF(files); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
}

#include "build.h"
#include "interp.h"
#include "llvm.h"

ts_status tu_interp_runner(ts_ctx *ctx, const ts_func *f, void *const *args, void *user)
{
	(void)user;
	return cg_interp_run(ctx, f, args);
}

static ts_status llvm_runner(ts_ctx *ctx, const ts_func *f, void *const *args, void *user)
{
	cg_llvm_module *m = cg_llvm_compile(ctx, f, user);
	if (!m)
		return ts_last_status(ctx);
	ts_cpu_entry entry = cg_llvm_entry(m);
	int32_t rc = entry ? entry((void **)args) : -1;
	cg_llvm_free(m);
	return rc == 0 ? TS_OK : ts_error(ctx, TS_ERR_RUNTIME, "%s returned %d", f->name, rc);
}

void tu_check_func_llvm(ts_ctx *ctx, const ts_func *f, const char *target, double tol)
{
	tu_check_func_with(ctx, f, llvm_runner, (void *)target, tol);
}

typedef struct {
	bool parallel, gpu;
} loop_kinds;

static bool kinds_fn(ts_stmt *s, void *data)
{
	loop_kinds *k = data;
	if (s->kind == IR_S_FOR) {
		k->parallel |= s->u.for_.kind == TS_FOR_PARALLEL;
		k->gpu |= s->u.for_.kind == TS_FOR_THREAD;
	}
	return true;
}

ts_status tu_cuda_run_module(ts_ctx *ctx, ts_module *m, int n, ts_array *const *host)
{
	enum { MAX_ARGS = 8 };
	ck_assert_int_le(n, MAX_ARGS);
	ts_cuda *cuda = ts_cuda_open(ctx);
	ts_array *dev[MAX_ARGS] = {0};
	ts_status st = cuda ? TS_OK : ts_last_status(ctx);
	for (int i = 0; st == TS_OK && i < n; i++) {
		dev[i] = ts_cuda_array_new(ctx, cuda, host[i]->dtype, host[i]->ndim, host[i]->shape);
		st = dev[i] ? ts_cuda_copy_to_device(ctx, dev[i], host[i]) : ts_last_status(ctx);
	}
	if (st == TS_OK)
		st = ts_module_run(m, n, dev);
	for (int i = 0; st == TS_OK && i < n; i++)
		st = ts_cuda_copy_to_host(ctx, host[i], dev[i]);
	for (int i = 0; i < n; i++)
		ts_cuda_array_free(dev[i]);
	ts_cuda_close(cuda);
	return st;
}

ts_status tu_cuda_runner(ts_ctx *ctx, const ts_func *f, void *const *args, void *user)
{
	(void)user;
	enum { MAX_ARGS = 8 };
	ck_assert_int_le(f->nparams, MAX_ARGS);
	ts_module *m = ts_build(ctx, f, "cuda");
	ts_array *host[MAX_ARGS] = {0};
	ts_status st = m ? TS_OK : ts_last_status(ctx);
	for (int i = 0; st == TS_OK && i < f->nparams; i++) {
		host[i] = ts_array_for(ctx, f->param_tensors[i]);
		if (host[i])
			memcpy(host[i]->data, args[i], ts_array_nbytes(host[i]));
		else
			st = ts_last_status(ctx);
	}
	if (st == TS_OK)
		st = tu_cuda_run_module(ctx, m, f->nparams, host);
	for (int i = 0; st == TS_OK && i < f->nparams; i++)
		memcpy(args[i], host[i]->data, ts_array_nbytes(host[i]));
	for (int i = 0; i < f->nparams; i++)
		ts_array_free(host[i]);
	ts_module_free(m);
	return st;
}

static loop_kinds kinds_of(const ts_func *f)
{
	loop_kinds k = {false, false};
	ir_stmt_visit(f->body, kinds_fn, NULL, &k);
	return k;
}

/* With TESSERA_TEST_CUDA set, a function bound to GPU threads (gpu) also
 * runs on the CUDA device (a GPU, or the host emulator of tests/cuda_emu). */
static void check_on_device(ts_ctx *ctx, const ts_func *f, bool gpu, double tol)
{
	const char *env = getenv("TESSERA_TEST_CUDA");
	if (gpu && env && env[0] && strcmp(env, "0") != 0)
		tu_check_func_with(ctx, f, tu_cuda_runner, NULL, tol);
}

void tu_check_func_interp(ts_ctx *ctx, const ts_func *f, double tol)
{
	tu_check_func_with(ctx, f, tu_interp_runner, NULL, tol);
	check_on_device(ctx, f, kinds_of(f).gpu, tol);
}

void tu_check_func(ts_ctx *ctx, const ts_func *f, double tol)
{
	tu_check_func_with(ctx, f, tu_interp_runner, NULL, tol);
	loop_kinds k = kinds_of(f);
	if (k.gpu) { /* GPU schedules: the interpreter here, NVRTC and the device elsewhere */
		check_on_device(ctx, f, true, tol);
		return;
	}
	for (int i = 0; i < f->nparams; i++)
		if (ts_dtype_is_float(f->params[i]->dtype) && f->params[i]->dtype.bits == 16)
			return; /* the LLVM backend has no 16-bit floats; the C emitter's tests cover them */
	static const int threads[] = {1, 2, 4};
	for (int i = 0; i < (k.parallel ? 3 : 1); i++) {
		int old = ts_set_num_threads(threads[i]);
		tu_check_func_llvm(ctx, f, NULL, tol);
		ts_set_num_threads(old);
	}
}

void tu_check_func_with(ts_ctx *ctx, const ts_func *f, tu_runner run, void *user, double tol)
{
	ck_assert_msg(f != NULL, "lowering failed: %s", ts_last_error(ctx));
	int n = f->nparams;
	ts_array *got[64], *want[64];
	void *gd[64], *wd[64];
	ck_assert_int_le(n, 64);
	for (int i = 0; i < n; i++) {
		ts_tensor *t = f->param_tensors[i];
		got[i] = ts_array_for(ctx, t);
		want[i] = ts_array_for(ctx, t);
		ck_assert_ptr_nonnull(got[i]);
		ck_assert_ptr_nonnull(want[i]);
		if (t->op == TS_OP_PLACEHOLDER) {
			bool fl = ts_dtype_is_float(t->dtype);
			ts_array_fill_random(got[i], 1234 + (uint64_t)i, fl ? -1.0 : -10.0, fl ? 1.0 : 10.0);
			memcpy(want[i]->data, got[i]->data, ts_array_nbytes(got[i]));
		} else {
			/* outputs start as garbage so that unwritten elements show */
			ts_array_fill_random(got[i], 99, 1e6, 2e6);
		}
		gd[i] = got[i]->data;
		wd[i] = want[i]->data;
	}
	ts_status st = run(ctx, f, gd, user);
	ck_assert_msg(st == TS_OK, "running %s failed: %s%s", f->name, ts_last_error(ctx), context);
	st = ts_eval(ctx, n, f->param_tensors, wd);
	ck_assert_msg(st == TS_OK, "reference evaluation failed: %s", ts_last_error(ctx));
	for (int i = 0; i < n; i++) {
		if (f->param_tensors[i]->op != TS_OP_PLACEHOLDER)
			tu_assert_close(got[i], want[i], tol, tol);
		ts_array_free(got[i]);
		ts_array_free(want[i]);
	}
}

ts_tensor *tu_bias_nchwc(ts_ctx *ctx, ts_tensor *X, ts_tensor *bias)
{
	static const char *const names[] = {"n", "cb", "h", "w", "ci"};
	ts_expr *v[5];
	for (int d = 0; d < 5; d++)
		v[d] = ts_var(ctx, names[d]);
	ts_expr *ch = ts_add(ctx, ts_mul(ctx, v[1], ts_make_const(ctx, ts_int32, (double)X->shape[4])), v[4]);
	ts_expr *body = ts_add(ctx, TS_READ(ctx, X, v[0], v[1], v[2], v[3], v[4]), TS_READ(ctx, bias, ch));
	return ts_compute(ctx, "bias_add", 5, X->shape, v, body);
}

bool tu_allocates_global(const char *text, const char *name)
{
	char want[128];
	snprintf(want, sizeof want, "%s[", name);
	for (const char *a = strstr(text, "allocate "); a; a = strstr(a + 1, "allocate ")) {
		const char *end = strchr(a, '\n');
		const char *g = strstr(a, " in global");
		if (g && (!end || g < end) && !strncmp(a + 9, want, strlen(want)))
			return true;
	}
	return false;
}

tu_mm tu_matmul(int64_t M, int64_t N, int64_t K)
{
	tu_mm m = {.ctx = ts_ctx_new()};
	ts_ctx *ctx = m.ctx;
	m.A = ts_placeholder(ctx, "A", TS_SHAPE(M, K), ts_float32);
	m.B = ts_placeholder(ctx, "B", TS_SHAPE(K, N), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, K);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	m.C = ts_compute(ctx, "C", TS_SHAPE(M, N), TS_VARS(i, j),
			 TS_SUM(ctx, ts_mul(ctx, TS_READ(ctx, m.A, i, k->var), TS_READ(ctx, m.B, k->var, j)), k));
	tu_nonnull(ctx, m.C);
	m.s = ts_create_schedule(ctx, 1, &m.C);
	tu_nonnull(ctx, m.s);
	m.sc = ts_stage_of(m.s, m.C);
	tu_nonnull(ctx, m.sc);
	return m;
}

void tu_seed_range(const char *var, uint64_t *first, uint64_t *count)
{
	const char *env = getenv(var);
	if (!env || !*env)
		return;
	unsigned long long f, n;
	ck_assert_msg(sscanf(env, "%llu:%llu", &f, &n) == 2, "%s: first:count", var);
	*first = f;
	*count = n;
}
