/*
 * test_mustfail_tune.c - every misuse of the tuner's API is refused with a
 * status and a message naming the call and the rule broken.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#include "tune.h"

START_TEST(test_task_init)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tune_task t;
	ck_assert_int_eq(ts_tune_task_init(ctx, &t, "gemv", TS_SHAPE(4, 4)), TS_ERR_INVALID);
	tu_assert_error(ctx, "tune: unknown operator 'gemv' (matmul, dense");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_tune_task_init(ctx, &t, "matmul", TS_SHAPE(4, 4)), TS_ERR_INVALID);
	tu_assert_error(ctx, "tune matmul: 2 extents given, the shape is matmul M N K");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_tune_task_init(ctx, &t, "softmax", TS_SHAPE(4, 0)), TS_ERR_INVALID);
	tu_assert_error(ctx, "tune softmax: extent 1 is 0; it must be from 1 to 2^24");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_tune_task_init(ctx, &t, "matmul", TS_SHAPE(4, 1 << 25, 4)), TS_ERR_INVALID);
	tu_assert_error(ctx, "tune matmul: extent 1 is 33554432");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_tune_task_init(ctx, &t, "matmul", TS_SHAPE(1 << 20, 1 << 20, 4)), TS_ERR_INVALID);
	tu_assert_error(ctx, "tune matmul: tensor C has 1.1e+12 elements; at most 2^31 - 1");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_tune_task_init(ctx, &t, "pool", TS_SHAPE(1, 2, 8, 8, 3, 1, 3)), TS_ERR_INVALID);
	tu_assert_error(ctx, "tune pool: padding 3 must be below the kernel 3");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_tune_task_init(ctx, &t, "depthwise", TS_SHAPE(1, 2, 4, 4, 9, 1, 0)), TS_ERR_INVALID);
	tu_assert_error(ctx, "tune depthwise: the kernel (9x9) is larger than the padded image (4x4)");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_tune_task_init(ctx, &t, "conv2d_nchw", TS_SHAPE(1, 4, 8, 8, 4, 3, 11, 1, 1)),
			 TS_ERR_INVALID);
	tu_assert_error(ctx, "tune conv2d_nchw: the kernel (3x11) is larger than the padded image (10x10)");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_tune_task_init(ctx, &t, "conv2d_nhwc", TS_SHAPE(1, 4, 8, 8, 4, 3, 3, 0, 1)),
			 TS_ERR_INVALID);
	tu_assert_error(ctx, "tune conv2d_nhwc: extent 7 is 0; it must be from 1 to 2^24");
	tu_assert_error(ctx, "(STRIDE, in conv2d_nhwc N C H W K R S STRIDE PAD)");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_tune_task_init(ctx, &t, "conv2d_nhwc", TS_SHAPE(1, 4, 8, 8, 4, 3, 3, 1)),
			 TS_ERR_INVALID);
	tu_assert_error(ctx, "tune conv2d_nhwc: 8 extents given, the shape is conv2d_nhwc N C H W K R S STRIDE PAD");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_tune_task_init(ctx, &t, "conv2d", TS_SHAPE(1, 4, 8, 8, 4, 3, 1, 1, 0)),
			 TS_ERR_INVALID);
	tu_assert_error(ctx, "tune conv2d: the kernel must be square (R = S), got 3x1");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_tune_task_init(ctx, NULL, "matmul", TS_SHAPE(4, 4, 4)), TS_ERR_INVALID);
	tu_assert_error(ctx, "tune_task_init: NULL task");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_tune_task_init(ctx, &t, NULL, 0, NULL), TS_ERR_INVALID);
	tu_assert_error(ctx, "tune_task_init: NULL op");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_tune_opts)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tune_task t;
	tu_ok(ctx, ts_tune_task_init(ctx, &t, "matmul", TS_SHAPE(4, 4, 4)));
	ts_tune_opts o = ts_tune_opts_default();
	ts_tune_result r;
	o.budget_s = 0;
	ck_assert_int_eq(ts_tune(ctx, &t, &o, &r), TS_ERR_INVALID);
	tu_assert_error(ctx, "tune matmul: budget_s must be above 0");
	ts_clear_error(ctx);
	o = ts_tune_opts_default();
	o.repeat = 0;
	ck_assert_int_eq(ts_tune(ctx, &t, &o, &r), TS_ERR_INVALID);
	tu_assert_error(ctx, "tune matmul: warmup 0..1048576, repeat 1..1048576");
	ts_clear_error(ctx);
	/* above ts_module_time's limits: refused here, not as the default
	 * schedule's failure */
	int big[][2] = {{0, 2000000}, {INT_MAX, 1}, {1048577, 1}, {0, INT_MAX}};
	for (int i = 0; i < 4; i++) {
		o = ts_tune_opts_default();
		o.warmup = big[i][0], o.repeat = big[i][1];
		ck_assert_int_eq(ts_tune(ctx, &t, &o, &r), TS_ERR_INVALID);
		tu_assert_error(ctx, "tune matmul: warmup 0..1048576, repeat 1..1048576");
		ts_clear_error(ctx);
	}
	/* the default narrowed to a value the schedule refuses: the caller's
	 * error (invalid), naming the schedule's complaint */
	ts_tune_task u = t;
	u.space.choice[0][0] = 0; /* mr 0 */
	o = ts_tune_opts_default();
	o.max_trials = 1;
	/* an error an earlier call left in the context is not reported as
	 * this run's */
	ts_error(ctx, TS_ERR_INVALID, "an earlier failure");
	ck_assert_int_eq(ts_tune(ctx, &u, &o, &r), TS_ERR_INVALID);
	tu_assert_error(ctx, "tune matmul: the default schedule fails: ");
	ts_clear_error(ctx);
	o = ts_tune_opts_default();
	ck_assert_int_eq(ts_tune(ctx, &t, NULL, &r), TS_ERR_INVALID);
	tu_assert_error(ctx, "tune: NULL options");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_tune(ctx, &t, &o, NULL), TS_ERR_INVALID);
	tu_assert_error(ctx, "tune: NULL result");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_lower_bad_candidate)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tune_task t;
	tu_ok(ctx, ts_tune_task_init(ctx, &t, "matmul", TS_SHAPE(4, 4, 4)));
	ts_tune_cand c = ts_tune_default(&t);
	c.v[0] = 5000;
	ck_assert_ptr_null(ts_tune_lower(ctx, &t, &c));
	tu_assert_error(ctx, "tune matmul: parameter mr is 5000; it must be from 0 to 4096");
	ts_clear_error(ctx);
	c.v[0] = 0; /* a primitive refuses: the message is its own */
	ck_assert_ptr_null(ts_tune_lower(ctx, &t, &c));
	tu_assert_error(ctx, "parameter mr must be positive, got 0");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_tune_lower(ctx, &t, NULL));
	tu_assert_error(ctx, "tune_lower: NULL candidate");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_generic_misuse)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(4, 4), ts_float32);
	ts_tensor *Y = ts_op_relu(ctx, X), *Z = ts_op_relu(ctx, Y);
	ts_tune_space sp;
	ck_assert_int_eq(ts_tune_space_generic(ctx, X, 8, &sp), TS_ERR_INVALID);
	tu_assert_error(ctx, "tune_space_generic: X is a placeholder, not a compute");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_tune_space_generic(ctx, Y, 0, &sp), TS_ERR_INVALID);
	tu_assert_error(ctx, "tune_space_generic(relu): lanes must be 1..64, got 0");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_tune_space_generic(ctx, NULL, 8, &sp), TS_ERR_INVALID);
	tu_assert_error(ctx, "tune_space_generic: NULL tensor");
	ts_clear_error(ctx);
	tu_ok(ctx, ts_tune_space_generic(ctx, Y, 8, &sp));
	ts_schedule *s = ts_create_schedule(ctx, 1, &Z);
	ts_tune_cand c = {{1}};
	ck_assert_int_eq(ts_tune_apply_generic(s, Y, 8, &sp, &c), TS_ERR_INVALID);
	tu_assert_error(ctx, "tune_apply_generic(relu): it must be the schedule's only output");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_tune_apply_generic(s, Z, 8, &sp, NULL), TS_ERR_INVALID);
	tu_assert_error(ctx, "tune_apply_generic: NULL candidate");
	ck_assert_int_eq(ts_tune_apply_generic(NULL, Z, 8, &sp, &c), TS_ERR_INVALID);
	ts_clear_error(ctx);
	/* a space the caller filled with anything: refused before a parameter
	 * is looked up (its names and values past the arrays) */
	ts_tune_space bad = sp;
	bad.nparams = 100;
	ck_assert_int_eq(ts_tune_apply_generic(s, Z, 8, &bad, &c), TS_ERR_INVALID);
	tu_assert_error(ctx, "tune_apply_generic: the space has 100 parameters, at most 20");
	ts_clear_error(ctx);
	bad = sp;
	bad.nparams = -1;
	ck_assert_int_eq(ts_tune_apply_generic(s, Z, 8, &bad, &c), TS_ERR_INVALID);
	ts_clear_error(ctx);
	bad = sp;
	bad.nchoice[1] = 0;
	ck_assert_int_eq(ts_tune_apply_generic(s, Z, 8, &bad, &c), TS_ERR_INVALID);
	tu_assert_error(ctx, "tune_apply_generic: the space: parameter 1 is malformed");
	ts_clear_error(ctx);
	bad = sp;
	memset(bad.name[0], 'x', sizeof bad.name[0]); /* no terminating NUL */
	ck_assert_int_eq(ts_tune_apply_generic(s, Z, 8, &bad, &c), TS_ERR_INVALID);
	tu_assert_error(ctx, "parameter 0 is malformed");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_log_misuse)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tune_task t;
	tu_ok(ctx, ts_tune_task_init(ctx, &t, "matmul", TS_SHAPE(4, 4, 4)));
	ts_tune_result r = {.best = ts_tune_default(&t), .def = ts_tune_default(&t), .best_ms = 1,
			    .default_ms = 1, .trials = 1};
	ck_assert_int_eq(ts_tune_log_append(ctx, "/nonexistent/dir/t.jsonl", &t, &r), TS_ERR_RUNTIME);
	tu_assert_error(ctx, "tune log /nonexistent/dir/t.jsonl: cannot write: No such file");
	/* a result the reader would refuse is not written (one bad line
	 * would refuse the whole log) */
	char path[] = "/tmp/tessera_append_XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	tu_ok(ctx, ts_tune_log_append(ctx, path, &t, &r));
	for (int k = 0; k < 5; k++) {
		ts_tune_result bad = r;
		if (k == 0)
			bad.best_ms = NAN;
		else if (k == 1)
			bad.default_ms = -1;
		else if (k == 2)
			bad.trials = -3;
		else if (k == 3)
			bad.best.v[0] = -1;
		else
			bad.best.v[0] = 5000;
		ts_clear_error(ctx);
		ck_assert_int_eq(ts_tune_log_append(ctx, path, &t, &bad), TS_ERR_INVALID);
		tu_assert_error(ctx, k < 3 ? "tune_log_append: the result's times must be finite and >= 0"
					   : "tune_log_append: parameter mr is");
	}
	/* an error left by an earlier call does not refuse a good log */
	ts_tune_task none;
	ck_assert_int_ne(ts_tune_task_init(ctx, &none, "matmul", TS_SHAPE(0, 1, 1)), TS_OK);
	ts_tune_log *log = ts_tune_log_load(ctx, path);
	tu_nonnull(ctx, log);
	ck_assert_int_eq(log->n, 1);
	unlink(path);
	ts_clear_error(ctx);
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_tune_log_append(ctx, NULL, &t, &r), TS_ERR_INVALID);
	tu_assert_error(ctx, "tune_log_append: NULL path");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_tune_log_load(ctx, NULL));
	tu_assert_error(ctx, "tune_log_load: NULL path");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_tune_log_load(ctx, "/"));
	tu_assert_error(ctx, "tune log /");
	ts_clear_error(ctx);
	ts_tune_cand c;
	/* a refused argument leaves *rec NULL too, as a refused record does
	 * (it once kept the caller's pointer; found by fuzz_graph_api) */
	const ts_tune_record *rec = (const ts_tune_record *)&t;
	ck_assert_int_eq(ts_tune_log_lookup(ctx, NULL, &t, &c, &rec), TS_ERR_INVALID);
	tu_assert_error(ctx, "tune_log_lookup: NULL log");
	ck_assert_ptr_null(rec);
	ts_clear_error(ctx);
	rec = (const ts_tune_record *)&t;
	ck_assert_int_eq(ts_tune_log_lookup(ctx, log, NULL, &c, &rec), TS_ERR_INVALID);
	ck_assert_ptr_null(rec);
	ts_clear_error(ctx);
	const char *note;
	ck_assert_ptr_null(ts_tune_lower_from_log(ctx, NULL, &t, NULL));
	tu_assert_error(ctx, "tune_lower_from_log: NULL note");
	ts_clear_error(ctx);
	/* no log at all: the default, and the note says so */
	tu_nonnull(ctx, ts_tune_lower_from_log(ctx, NULL, &t, &note));
	ck_assert_msg(strstr(note, "default: no record for matmul [4, 4, 4] float32 llvm in (no log)"), "%s", note);
	ts_ctx_free(ctx);
}
END_TEST

/* A record for the task whose parameters are not the space's. */
START_TEST(test_log_wrong_params)
{
	ts_ctx *ctx = ts_ctx_new();
	char cpu[64], feat[40], path[] = "/tmp/tessera_mf_tune_XXXXXX";
	ts_tune_host(cpu, feat);
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	FILE *f = fdopen(fd, "w");
	fprintf(f, "{\"tessera\": \"%s\", \"op\": \"matmul\", \"shape\": [4, 4, 4], \"dtype\": \"float32\", "
		   "\"target\": \"llvm\", \"cpu\": \"%s\", \"features\": \"%s\", \"threads\": 1, "
		   "\"params\": {\"mr\": 2, \"nr\": 8, \"kunroll\": 2, \"parallel\": 0, \"packing\": 0, \"pack_at\": 0, \"prefetch\": 0}, "
		   "\"median_ms\": 0.01, \"default_ms\": 0.02, \"trials\": 3}\n",
		TS_TUNE_VERSION, cpu, feat);
	fclose(f);
	ts_tune_task t;
	tu_ok(ctx, ts_tune_task_init(ctx, &t, "matmul", TS_SHAPE(4, 4, 4)));
	ts_tune_log *log = ts_tune_log_load(ctx, path);
	tu_nonnull(ctx, log);
	ts_tune_cand c = {{7}};
	const ts_tune_record *rec = (const ts_tune_record *)log;
	ck_assert_int_eq(ts_tune_log_lookup(ctx, log, &t, &c, &rec), TS_ERR_INVALID);
	tu_assert_error(ctx, ":1: field params: no parameter pack (the matmul space's)");
	/* no record found, the candidate untouched */
	ck_assert_ptr_null(rec);
	ck_assert_int_eq(c.v[0], 7);
	ck_assert_int_eq(c.v[1], 0);
	/* the reader takes the values the writer writes, 0 to 4096 */
	f = fopen(path, "w");
	fprintf(f, "{\"tessera\": \"%s\", \"op\": \"matmul\", \"shape\": [4, 4, 4], \"dtype\": \"float32\", "
		   "\"target\": \"llvm\", \"cpu\": \"%s\", \"features\": \"%s\", \"threads\": 1, "
		   "\"params\": {\"mr\": 4097}, \"median_ms\": 0.01, \"default_ms\": 0.02, \"trials\": 3}\n",
		TS_TUNE_VERSION, cpu, feat);
	fclose(f);
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_tune_log_load(ctx, path));
	tu_assert_error(ctx, ":1: field mr: 4097 is out of range (0 to 4096)");
	unlink(path);
	ts_ctx_free(ctx);
}
END_TEST

/* A task changed after ts_tune_task_init (counts past its arrays, another
 * operator, another space) is refused by every call that takes one,
 * before any of its arrays is read. */
START_TEST(test_forged_task)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tune_task good;
	tu_ok(ctx, ts_tune_task_init(ctx, &good, "matmul", TS_SHAPE(8, 8, 8)));
	ts_tune_result r = {0};
	ts_tune_cand c = ts_tune_default(&good);
	ts_tune_opts o = ts_tune_opts_default();
	char path[] = "/tmp/tessera_forged_XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ts_tune_task pool, big;
	tu_ok(ctx, ts_tune_task_init(ctx, &pool, "pool", TS_SHAPE(1, 8, 8, 8, 3, 1, 1)));
	/* refused at init (2^32 elements): no task for any later call */
	ck_assert_int_ne(ts_tune_task_init(ctx, &big, "matmul", TS_SHAPE(65536, 65536, 1)), TS_OK);
	for (int k = 0; k < 13; k++) {
		ts_tune_task t = k == 5 ? pool : good;
		if (k == 0)
			t.nshape = 11;
		else if (k == 1)
			t.space.nparams = 21;
		else if (k == 2)
			t.space.nchoice[0] = 99;
		else if (k == 3)
			memset(t.op, 'x', sizeof t.op); /* no terminating NUL */
		else if (k == 4)
			snprintf(t.op, sizeof t.op, "softmax"); /* the matmul space */
		else if (k == 5)
			t.shape[5] = 0; /* a zero stride (divided by, before) */
		else if (k == 6)
			t.shape[1] = 1 << 24; /* extents of 2^36 elements */
		else if (k == 7)
			memset(t.target, 'l', sizeof t.target);
		else if (k == 8)
			t.lanes = 1000;
		else if (k == 10) /* the log would hold a name it cannot read */
			snprintf(t.space.name[5], TS_TUNE_NAME, "pack\"at");
		else if (k == 11) /* the schedule would ignore it: a default */
			snprintf(t.space.name[0], TS_TUNE_NAME, "rows");
		else if (k == 12)
			t.space.nparams = 0;
		else
			t = big;
		ts_clear_error(ctx);
		ck_assert_ptr_null(ts_tune_lower(ctx, &t, &c));
		tu_assert_error(ctx, "tune_lower: ");
		ts_clear_error(ctx);
		ck_assert_int_eq(ts_tune_log_append(ctx, path, &t, &r), TS_ERR_INVALID);
		tu_assert_error(ctx, "tune_log_append: ");
		ts_clear_error(ctx);
		ck_assert_int_eq(ts_tune(ctx, &t, &o, &r), TS_ERR_INVALID);
		tu_assert_error(ctx, "tune: ");
		const char *note = NULL;
		ts_clear_error(ctx);
		ck_assert_ptr_null(ts_tune_lower_from_log(ctx, NULL, &t, &note));
		tu_assert_error(ctx, "tune_lower_from_log: ");
		ck_assert(isnan(ts_tune_task_flops(&t)));
		ck_assert(isinf(ts_tune_cost(&t, &c)));
		ts_tune_cand d = ts_tune_default(&t);
		for (int i = 0; i < TS_TUNE_MAX_PARAMS; i++)
			ck_assert_int_eq(d.v[i], 0);
	}
	/* candidates no schedule takes never rank */
	ts_tune_cand z = {{0}}, neg = c;
	neg.v[0] = -1;
	ck_assert(isinf(ts_tune_cost(&good, &z)) || ts_tune_cost(&good, &z) >= 0);
	ck_assert(isinf(ts_tune_cost(&good, &neg)));
	ck_assert(ts_tune_cost(&good, &c) >= 0 && isfinite(ts_tune_cost(&good, &c)));
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_tune_lower(ctx, NULL, &c));
	tu_assert_error(ctx, "tune_lower: NULL task");
	ck_assert(isnan(ts_tune_task_flops(NULL)));
	ck_assert(isinf(ts_tune_cost(NULL, &c)));
	unlink(path);
	ts_ctx_free(ctx);
}
END_TEST

/* ts_tune_host writes whichever of its outputs is there. */
START_TEST(test_host_null)
{
	char cpu[64] = "", feat[40] = "";
	ts_tune_host(NULL, NULL);
	ts_tune_host(cpu, NULL);
	ck_assert(strlen(cpu) > 0);
	ts_tune_host(NULL, feat);
	ck_assert(!strncmp(feat, "fnv1a:", 6));
}
END_TEST

/* A "log" with no end of line is refused at the line limit, not read
 * into memory without bound. */
START_TEST(test_log_endless_file)
{
	ts_ctx *ctx = ts_ctx_new();
	if (access("/dev/zero", R_OK) == 0) {
		ck_assert_ptr_null(ts_tune_log_load(ctx, "/dev/zero"));
		tu_assert_error(ctx, "/dev/zero:1: line longer than 64 KB");
	}
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mustfail_tune");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_task_init);
	tcase_add_test(tc, test_tune_opts);
	tcase_add_test(tc, test_lower_bad_candidate);
	tcase_add_test(tc, test_generic_misuse);
	tcase_add_test(tc, test_log_misuse);
	tcase_add_test(tc, test_log_wrong_params);
	tcase_add_test(tc, test_forged_task);
	tcase_add_test(tc, test_host_null);
	tcase_add_test(tc, test_log_endless_file);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
