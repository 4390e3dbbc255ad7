/*
 * test_tune.c - the tuner: a short search on a small matmul and on
 * generic-space operators picks a correct candidate no slower than the
 * default as the tuner measured them; random candidates of every space are
 * refused or compute the reference on shapes the tiles do not divide; the
 * tuning log round-trips and refuses what it must.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#include "threadpool.h"

#include "tune.h"

static ts_tune_task task(ts_ctx *ctx, const char *op, int n, const int64_t *shape)
{
	ts_tune_task t;
	tu_ok(ctx, ts_tune_task_init(ctx, &t, op, n, shape));
	return t;
}

/* The index of parameter `name` in the space, or -1. */
static int param_index(const ts_tune_space *sp, const char *name)
{
	for (int i = 0; i < sp->nparams; i++)
		if (!strcmp(sp->name[i], name))
			return i;
	return -1;
}

/* A short search: the chosen candidate computes the reference and was
 * measured no slower than the default in the same run, every call on the
 * next of the sets of buffers (these tasks' are small: as many sets as
 * ts_cold_sets gives). */
static void check_search(const char *op, int n, const int64_t *shape)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tune_task t = task(ctx, op, n, shape);
	ts_tune_opts o = ts_tune_opts_default();
	/* bounded by candidates, not time: on a loaded machine a time budget
	 * could end before a second candidate is measured */
	o.budget_s = 300;
	o.max_trials = 8;
	o.seed = 7;
	o.repeat = 3;
	ts_tune_result r;
	tu_ok(ctx, ts_tune(ctx, &t, &o, &r));
	ck_assert_int_ge(r.trials, 2);
	ck_assert_int_eq(r.wrong, 0);
	ck_assert_str_eq(r.reference, "ts_eval");
	ck_assert_int_eq(r.sets, TS_COLD_MAX_SETS);
	ck_assert(r.best_ms > 0 && r.default_ms > 0);
	ck_assert(r.best_ms <= r.default_ms);
	ts_tune_cand def = ts_tune_default(&t);
	ck_assert(!memcmp(&r.def, &def, sizeof def));
	if (!strcmp(t.space.kind, "conv2d") && shape[8] == 0) /* no padding: no pad mode */
		ck_assert_int_eq(r.best.v[param_index(&t.space, "pad")], def.v[param_index(&t.space, "pad")]);
	if (!strcmp(t.space.kind, "matmul")) {
		/* no value the schedule ignores: such twins are one candidate */
		int pack = param_index(&t.space, "pack"), at = param_index(&t.space, "pack_at"),
		    pf = param_index(&t.space, "prefetch");
		ck_assert(r.best.v[pack] || r.best.v[at] == def.v[at]);
		ck_assert(!r.best.v[pack] || r.best.v[pf] == def.v[pf]);
	}
	ts_func *f = ts_tune_lower(ctx, &t, &r.best);
	tu_nonnull(ctx, f);
	tu_check_func_llvm(ctx, f, NULL, 1e-4);
	ts_ctx_free(ctx);
}

START_TEST(test_search_matmul)
{
	check_search("matmul", TS_SHAPE(33, 29, 17));
}
END_TEST

START_TEST(test_search_pool)
{
	check_search("pool", TS_SHAPE(1, 8, 13, 13, 3, 2, 1));
}
END_TEST

START_TEST(test_search_depthwise)
{
	check_search("depthwise", TS_SHAPE(1, 6, 11, 11, 3, 1, 1));
}
END_TEST

/* conv2d is timed on the kernel alone, its inputs blocked by the tuner
 * for each candidate's channel blocks: every candidate measured computes
 * ts_eval's result (a wrong blocking would make even the default wrong,
 * failing the search), on extents no register block divides. */
START_TEST(test_search_conv2d)
{
	check_search("conv2d", TS_SHAPE(1, 8, 9, 11, 16, 3, 3, 1, 1));
	check_search("conv2d", TS_SHAPE(1, 12, 10, 7, 8, 3, 3, 2, 1));
	/* a 1x1 of stride 1 on rows of 7: timed on one row of 35 with AVX2
	 * (ts_conv2d_cpu_row_width); on rows of 13, on rows of 3 x 13
	 * (ts_conv2d_cpu_row_width_for) */
	check_search("conv2d", TS_SHAPE(1, 32, 5, 7, 64, 1, 1, 1, 0));
	check_search("conv2d", TS_SHAPE(2, 32, 6, 13, 64, 1, 1, 1, 0));
}
END_TEST

/* The plain convolutions in the generic space, the NHWC one with a
 * kernel that is not square. */
START_TEST(test_search_conv2d_plain)
{
	check_search("conv2d_nchw", TS_SHAPE(1, 4, 9, 9, 6, 3, 3, 1, 1));
	check_search("conv2d_nhwc", TS_SHAPE(1, 5, 8, 7, 6, 3, 1, 2, 1));
}
END_TEST

/* The default is candidate 0: with one trial allowed, it is the result. */
START_TEST(test_search_default_first)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tune_task t = task(ctx, "softmax", TS_SHAPE(5, 37));
	ts_tune_opts o = ts_tune_opts_default();
	o.max_trials = 1;
	ts_tune_result r;
	tu_ok(ctx, ts_tune(ctx, &t, &o, &r));
	ck_assert_int_eq(r.trials, 1);
	ck_assert(!memcmp(&r.best, &r.def, sizeof r.best));
	ck_assert(r.best_ms == r.default_ms);
	ts_ctx_free(ctx);
}
END_TEST

/* A space the search exhausts (softmax: one parameter, its lanes): the
 * near rounds run out, the wide ones find nothing new, and the search
 * ends with every value measured once, long before its budget. */
START_TEST(test_search_exhausts_space)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tune_task t = task(ctx, "softmax", TS_SHAPE(5, 37));
	ck_assert_int_eq(t.space.nparams, 1);
	ts_tune_opts o = ts_tune_opts_default();
	o.budget_s = 60;
	o.repeat = 3;
	ts_tune_result r;
	tu_ok(ctx, ts_tune(ctx, &t, &o, &r));
	ck_assert_int_eq(r.trials + r.invalid + r.wrong, t.space.nchoice[0]);
	ck_assert_msg(r.elapsed_s < 30, "the search ran %.1f s over a space of %d values", r.elapsed_s,
		      t.space.nchoice[0]);
	ts_ctx_free(ctx);
}
END_TEST

static uint64_t rng(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

/* Random candidates of the task's space: each refused by a primitive (with
 * a message) or equal to the reference. */
static void check_space(const char *op, int n, const int64_t *shape, int samples)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tune_task t = task(ctx, op, n, shape);
	uint64_t s = 42;
	int valid = 0;
	for (int k = 0; k < samples; k++) {
		ts_tune_cand c = ts_tune_default(&t);
		for (int p = 0; p < t.space.nparams && k > 0; p++)
			c.v[p] = t.space.choice[p][rng(&s) % (uint64_t)t.space.nchoice[p]];
		ts_ctx *cc = ts_ctx_new();
		ts_func *f = ts_tune_lower(cc, &t, &c);
		char what[128];
		snprintf(what, sizeof what, "%s candidate %d", op, k);
		tu_set_context(what);
		if (!f) {
			ck_assert_msg(k > 0, "%s: the default is refused: %s", op, ts_last_error(cc));
			ck_assert(strlen(ts_last_error(cc)) > 0);
		} else {
			tu_check_func_llvm(cc, f, NULL, 1e-4);
			valid++;
		}
		tu_set_context(NULL);
		ts_ctx_free(cc);
	}
	ck_assert_int_gt(valid, samples / 4);
	ts_ctx_free(ctx);
}

START_TEST(test_space_matmul)
{
	check_space("matmul", TS_SHAPE(13, 37, 11), 10);
	check_space("dense", TS_SHAPE(9, 21, 13), 8);
	check_space("batch_matmul", TS_SHAPE(2, 7, 19, 5), 12);
	/* a long K: the reduction's chunks (kc) are a parameter of matmul's
	 * space (C in memory), not of dense's (its epilogue reads the sum in
	 * registers); candidates with partial chunks give the reference */
	ts_ctx *ctx = ts_ctx_new();
	ts_tune_task m = task(ctx, "matmul", TS_SHAPE(13, 37, 300)), d = task(ctx, "dense", TS_SHAPE(13, 37, 300));
	ts_tune_task k = task(ctx, "matmul", TS_SHAPE(13, 37, 128));
	ck_assert_int_ge(param_index(&m.space, "kc"), 0);
	ck_assert_int_lt(param_index(&d.space, "kc"), 0);
	ck_assert_int_lt(param_index(&k.space, "kc"), 0); /* nothing to chunk */
	ck_assert_int_eq(m.space.nchoice[param_index(&m.space, "kc")], 4);
	ck_assert_int_eq(m.space.choice[param_index(&m.space, "kc")][0], 0);
	/* a candidate read as the schedules take it: every parameter, B
	 * packed or not; any other task or a NULL one gives the defaults */
	ts_tune_cand c = ts_tune_default(&m);
	static const char *const names[] = {"mr", "nr", "kunroll", "parallel", "pack", "pack_at", "kc", "prefetch"};
	static const int64_t values[] = {3, 16, 2, 0, 1, TS_PACK_PANEL, 128, 1};
	for (size_t i = 0; i < TS_COUNT_OF(names); i++)
		c.v[param_index(&m.space, names[i])] = values[i];
	bool packed = false;
	ts_matmul_cpu_params p = ts_tune_matmul_params(&m, &c, &packed);
	ck_assert(p.mr == 3 && p.nr == 16 && p.kunroll == 2 && !p.parallel && p.pack == TS_PACK_PANEL &&
		  p.kc == 128 && p.prefetch && packed);
	ts_matmul_cpu_params dp = ts_matmul_cpu_default();
	ts_tune_task conv = task(ctx, "conv2d", TS_SHAPE(1, 8, 9, 9, 16, 3, 3, 1, 1));
	ts_tune_cand cc = ts_tune_default(&conv);
	const ts_tune_task *others[] = {&conv, NULL};
	for (size_t i = 0; i < TS_COUNT_OF(others); i++) {
		packed = true;
		p = ts_tune_matmul_params(others[i], &cc, &packed);
		ck_assert(tu_same_matmul_params(p, dp) && !packed);
	}
	p = ts_tune_matmul_params(&m, NULL, NULL);
	ck_assert(tu_same_matmul_params(p, dp));
	ts_ctx_free(ctx);
	check_space("matmul", TS_SHAPE(13, 37, 300), 12);
}
END_TEST

START_TEST(test_space_conv2d)
{
	check_space("conv2d", TS_SHAPE(1, 8, 9, 11, 16, 3, 3, 1, 1), 6);
	/* each pad mode (auto, copy, inline) and prefetch or not, the rest
	 * the default: each lowers and computes the reference */
	ts_ctx *ctx = ts_ctx_new();
	ts_tune_task t = task(ctx, "conv2d", TS_SHAPE(1, 8, 9, 11, 16, 3, 3, 1, 1));
	int pad = param_index(&t.space, "pad"), pf = param_index(&t.space, "prefetch");
	ck_assert_int_ge(pad, 0);
	ck_assert_int_ge(pf, 0);
	ck_assert_int_eq(t.space.nchoice[pad], 3);
	ck_assert_int_eq(t.space.nchoice[pf], 2);
	for (int m = 0; m < 5; m++) {
		ts_tune_cand c = ts_tune_default(&t);
		if (m < 3)
			c.v[pad] = t.space.choice[pad][m];
		else
			c.v[pf] = t.space.choice[pf][m - 3];
		ts_ctx *cc = ts_ctx_new();
		ts_func *f = ts_tune_lower(cc, &t, &c);
		tu_nonnull(cc, f);
		tu_check_func_llvm(cc, f, NULL, 1e-4);
		ts_ctx_free(cc);
	}
	/* the cost model ranks the default (ow_block 0: the schedule's own
	 * choice) and its neighbours, which it scored infinite */
	ts_tune_cand def = ts_tune_default(&t);
	ck_assert(isfinite(ts_tune_cost(&t, &def)) && ts_tune_cost(&t, &def) > 0);
	def.v[pad] = TS_PAD_INLINE;
	ck_assert(isfinite(ts_tune_cost(&t, &def)));
	/* every reduction-chunk choice is a value a candidate may take: "no
	 * chunks" lowers, is logged and read back */
	int rc = param_index(&t.space, "rc_block");
	ck_assert_int_ge(rc, 0);
	for (int m = 0; m < t.space.nchoice[rc]; m++) {
		ts_tune_cand c = ts_tune_default(&t);
		c.v[rc] = t.space.choice[rc][m];
		ck_assert(t.space.choice[rc][m] >= 0 && t.space.choice[rc][m] <= 4096);
		ck_assert(isfinite(ts_tune_cost(&t, &c)));
		ts_ctx *cc = ts_ctx_new();
		ts_func *f = ts_tune_lower(cc, &t, &c);
		tu_nonnull(cc, f);
		tu_check_func_llvm(cc, f, NULL, 1e-4);
		ts_ctx_free(cc);
	}
	ck_assert_int_eq(t.space.choice[rc][t.space.nchoice[rc] - 1], 8); /* C: no chunks */
	ts_ctx_free(ctx);
}
END_TEST

/* Extents no tile of the space divides (7, 10, 11, 13), stride 2. */
START_TEST(test_space_conv2d_plain)
{
	check_space("conv2d_nchw", TS_SHAPE(1, 3, 10, 7, 5, 3, 3, 2, 1), 14);
	check_space("conv2d_nhwc", TS_SHAPE(1, 5, 11, 13, 7, 3, 2, 1, 0), 14);
}
END_TEST

/* Channel counts that every power of two up to 64 divides: the channel
 * blocks are the preferred one (the graph layer's, first) and every power
 * of two from 1 to 64, each once. */
START_TEST(test_space_conv2d_blocks)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tune_task t;
	tu_ok(ctx, ts_tune_task_init(ctx, &t, "conv2d", TS_SHAPE(1, 64, 56, 56, 128, 3, 3, 1, 1)));
	int found = 0;
	for (int i = 0; i < t.space.nparams; i++) {
		bool ic = !strcmp(t.space.name[i], "ic_block"), oc = !strcmp(t.space.name[i], "oc_block");
		if (!ic && !oc)
			continue;
		found++;
		ck_assert_int_eq(t.space.choice[i][0], ts_conv2d_cpu_out_block_for(ic ? 64 : 128, 56));
		int seen = 0;
		for (int c = 0; c < t.space.nchoice[i]; c++) {
			int64_t b = t.space.choice[i][c];
			ck_assert_msg(b >= 1 && b <= 64 && (b & (b - 1)) == 0, "block %lld", (long long)b);
			ck_assert_msg(!(seen & (int)b), "block %lld twice", (long long)b);
			seen |= (int)b;
		}
		ck_assert_int_eq(seen, 127); /* 1, 2, ..., 64 */
	}
	ck_assert_int_eq(found, 2);
	ts_ctx_free(ctx);
}
END_TEST

/* ts_depthwise_cpu_params on rows narrower than a vector, rows of a
 * vector and a tail, stride 2 */
START_TEST(test_space_depthwise)
{
	check_space("depthwise", TS_SHAPE(1, 5, 10, 7, 3, 1, 1), 12);
	check_space("depthwise", TS_SHAPE(1, 3, 9, 37, 3, 1, 1), 12);
	check_space("depthwise", TS_SHAPE(1, 4, 13, 45, 3, 2, 1), 12);
}
END_TEST

START_TEST(test_space_generic)
{
	check_space("pool", TS_SHAPE(1, 3, 11, 9, 3, 2, 1), 12);
	check_space("elementwise", TS_SHAPE(7, 45), 12);
	check_space("softmax", TS_SHAPE(3, 29), 6);
}
END_TEST

/* The generic space of a hand-written compute (not from the tuner's list):
 * a row sum. */
START_TEST(test_generic_user_compute)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(11, 23), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 23);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *Y = ts_compute(ctx, "Y", TS_SHAPE(11), TS_VARS(i), TS_SUM(ctx, TS_READ(ctx, X, i, k->var), k));
	ts_tune_space sp;
	tu_ok(ctx, ts_tune_space_generic(ctx, Y, 8, &sp));
	ck_assert_str_eq(sp.name[0], "sketch");
	ts_tune_cand c = {{0}};
	for (int p = 0; p < sp.nparams; p++)
		c.v[p] = sp.choice[p][sp.nchoice[p] - 1];
	c.v[0] = 1;
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	tu_ok(ctx, ts_tune_apply_generic(s, Y, 8, &sp, &c));
	tu_check_func_llvm(ctx, ts_lower(s, "rowsum", 2, (ts_tensor *[]){X, Y}), NULL, 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

/* ---- the log ------------------------------------------------------------------- */

static char *tmp_path(char *buf, size_t n)
{
	snprintf(buf, n, "%s/tessera_tune_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	int fd = mkstemp(buf);
	ck_assert_int_ge(fd, 0);
	close(fd);
	return buf;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

START_TEST(test_log_round_trip)
{
	ts_ctx *ctx = ts_ctx_new();
	char path[256];
	tmp_path(path, sizeof path);
	ts_tune_task t = task(ctx, "matmul", TS_SHAPE(8, 24, 9));
	ts_tune_opts o = ts_tune_opts_default();
	o.max_trials = 4;
	o.repeat = 1;
	ts_tune_result r;
	tu_ok(ctx, ts_tune(ctx, &t, &o, &r));
	r.best.v[0] = t.space.choice[0][1]; /* not the default, whatever won */
	tu_ok(ctx, ts_tune_log_append(ctx, path, &t, &r));
	ts_tune_log *log = ts_tune_log_load(ctx, path);
	tu_nonnull(ctx, log);
	ck_assert_int_eq(log->n, 1);
	ck_assert_str_eq(log->rec[0].op, "matmul");
	ck_assert_int_eq(log->rec[0].nshape, 3);
	ts_tune_cand c;
	const ts_tune_record *rec;
	tu_ok(ctx, ts_tune_log_lookup(ctx, log, &t, &c, &rec));
	ck_assert_ptr_nonnull(rec);
	ck_assert(!memcmp(c.v, r.best.v, sizeof c.v[0] * (size_t)t.space.nparams));
	ck_assert(fabs(log->rec[0].median_ms - r.best_ms) <= 1e-5 * r.best_ms);
	/* whatever the writer accepts, the reader reads: subnormal times
	 * (printed as 5.56268e-309) and zero */
	ts_tune_result tiny = r;
	tiny.best_ms = DBL_MIN / 4, tiny.default_ms = 0;
	tu_ok(ctx, ts_tune_log_append(ctx, path, &t, &tiny));
	ts_tune_log *log2 = ts_tune_log_load(ctx, path);
	tu_nonnull(ctx, log2);
	ck_assert_int_eq(log2->n, 2);
	ck_assert(fabs(log2->rec[1].median_ms - DBL_MIN / 4) <= 1e-5 * (DBL_MIN / 4));
	ck_assert(log2->rec[1].default_ms == 0);
	const char *note;
	tu_nonnull(ctx, ts_tune_lower_from_log(ctx, log, &t, &note));
	ck_assert_msg(strstr(note, "tuned: ") && strstr(note, ":1"), "%s", note);
	/* another shape: no record, the default, and the note says so */
	ts_tune_task u = task(ctx, "matmul", TS_SHAPE(8, 24, 10));
	ts_func *f = ts_tune_lower_from_log(ctx, log, &u, &note);
	tu_nonnull(ctx, f);
	ck_assert_msg(strstr(note, "default: no record for matmul [8, 24, 10] float32 llvm"), "%s", note);
	tu_check_func_llvm(ctx, f, NULL, 1e-4);
	unlink(path);
	ts_ctx_free(ctx);
}
END_TEST

/* A record of this machine for matmul 8 8 8, with one field replaced. */
static void record(char *buf, size_t n, const char *version, const char *cpu, const char *feat)
{
	char hc[64], hf[40];
	ts_tune_host(hc, hf);
	snprintf(buf, n,
		 "{\"tessera\": \"%s\", \"op\": \"matmul\", \"shape\": [8, 8, 8], \"dtype\": \"float32\", "
		 "\"target\": \"llvm\", \"cpu\": \"%s\", \"features\": \"%s\", \"threads\": 1, "
		 "\"params\": {\"mr\": 2, \"nr\": 8, \"kunroll\": 2, \"parallel\": 0, \"pack\": 0, \"pack_at\": 2, \"prefetch\": 1}, "
		 "\"median_ms\": 0.01, \"default_ms\": 0.02, \"trials\": 3}\n",
		 version ? version : TS_TUNE_VERSION, cpu ? cpu : hc, feat ? feat : hf);
}

static void check_lookup(const char *line, const char *want)
{
	ts_ctx *ctx = ts_ctx_new();
	char path[256];
	write_file(tmp_path(path, sizeof path), line);
	ts_tune_task t = task(ctx, "matmul", TS_SHAPE(8, 8, 8));
	ts_tune_log *log = ts_tune_log_load(ctx, path);
	tu_nonnull(ctx, log);
	ts_tune_cand c;
	const ts_tune_record *rec;
	if (!want) {
		tu_ok(ctx, ts_tune_log_lookup(ctx, log, &t, &c, &rec));
		ck_assert_ptr_nonnull(rec);
		ck_assert_int_eq(c.v[0], 2);
	} else {
		ck_assert_int_eq(ts_tune_log_lookup(ctx, log, &t, &c, &rec), TS_ERR_INVALID);
		tu_assert_error(ctx, want);
		tu_assert_error(ctx, ":1: ");
		const char *note;
		ts_clear_error(ctx);
		ck_assert_ptr_null(ts_tune_lower_from_log(ctx, log, &t, &note));
		tu_assert_error(ctx, want);
	}
	unlink(path);
	ts_ctx_free(ctx);
}

START_TEST(test_log_foreign)
{
	char line[1024];
	record(line, sizeof line, NULL, NULL, NULL);
	check_lookup(line, NULL);
	record(line, sizeof line, "0.0", NULL, NULL);
	check_lookup(line, "field tessera is '0.0'");
	record(line, sizeof line, NULL, "not-this-cpu", NULL);
	check_lookup(line, "field cpu is 'not-this-cpu'");
	record(line, sizeof line, NULL, NULL, "fnv1a:0000000000000000");
	check_lookup(line, "field features is 'fnv1a:0000000000000000'");
}
END_TEST

/* Records for one task tuned with 1 and with 2 threads (mr 3 and 5): the
 * one of the present thread count is applied, whichever is later in the
 * log; with neither count present, the later. */
/* Two records of this machine for matmul 8 8 8, of mr mr1 and mr2. */
static void two_records(char *one, char *two, size_t n, char mr1, char mr2)
{
	char *p;
	record(one, n, NULL, NULL, NULL);
	record(two, n, NULL, NULL, NULL);
	ck_assert_ptr_nonnull(p = strstr(one, "\"mr\": 2"));
	p[6] = mr1;
	ck_assert_ptr_nonnull(p = strstr(two, "\"mr\": 2"));
	p[6] = mr2;
}

START_TEST(test_log_threads)
{
	char one[1024], two[1024], text[4096], *p;
	two_records(one, two, sizeof one, '3', '6');
	ck_assert_ptr_nonnull(p = strstr(two, "\"threads\": 1"));
	p[11] = '2';
	int saved = ts_num_threads();
	for (int order = 0; order < 2; order++)
		for (int threads = 1; threads <= 3; threads++) {
			ts_ctx *ctx = ts_ctx_new();
			char path[256];
			snprintf(text, sizeof text, "%s%s", order ? two : one, order ? one : two);
			write_file(tmp_path(path, sizeof path), text);
			ts_set_num_threads(threads);
			ck_assert_int_eq(ts_num_threads(), threads);
			ts_tune_task t = task(ctx, "matmul", TS_SHAPE(8, 8, 8));
			ts_tune_log *log = ts_tune_log_load(ctx, path);
			tu_nonnull(ctx, log);
			ts_tune_cand c;
			const ts_tune_record *rec;
			tu_ok(ctx, ts_tune_log_lookup(ctx, log, &t, &c, &rec));
			int64_t want = threads == 1 ? 3 : threads == 2 ? 6 : order ? 3 : 6;
			ck_assert_msg(rec && c.v[0] == want, "%d threads, order %d: mr %lld, want %lld",
				      threads, order, (long long)c.v[0], (long long)want);
			unlink(path);
			ts_ctx_free(ctx);
		}
	ts_set_num_threads(saved);
}
END_TEST

/* A task whose space holds a parameter at one value (a graph's channel
 * blocks) takes the newest record within its choices before a newer one
 * outside them (a standalone tuning of the same shape), whatever the
 * threads; the full space takes the newest. */
START_TEST(test_log_fits_space)
{
	char one[1024], two[1024], text[4096], path[256];
	two_records(one, two, sizeof one, '3', '6');
	int saved = ts_num_threads();
	ts_set_num_threads(1);
	snprintf(text, sizeof text, "%s%s", one, two);
	write_file(tmp_path(path, sizeof path), text);
	ts_ctx *ctx = ts_ctx_new();
	ts_tune_log *log = ts_tune_log_load(ctx, path);
	tu_nonnull(ctx, log);
	ts_tune_cand c;
	const ts_tune_record *rec;
	ts_tune_task t = task(ctx, "matmul", TS_SHAPE(8, 8, 8));
	tu_ok(ctx, ts_tune_log_lookup(ctx, log, &t, &c, &rec));
	ck_assert(rec && rec->line == 2 && c.v[0] == 6);
	ck_assert_str_eq(t.space.name[0], "mr");
	t.space.nchoice[0] = 1;
	t.space.choice[0][0] = 3;
	tu_ok(ctx, ts_tune_log_lookup(ctx, log, &t, &c, &rec));
	ck_assert(rec && rec->line == 1 && c.v[0] == 3);
	t.space.choice[0][0] = 5; /* neither fits: the newest */
	tu_ok(ctx, ts_tune_log_lookup(ctx, log, &t, &c, &rec));
	ck_assert(rec && rec->line == 2 && c.v[0] == 6);
	unlink(path);
	ts_ctx_free(ctx);
	ts_set_num_threads(saved);
}
END_TEST

static void check_malformed(const char *text, const char *want)
{
	ts_ctx *ctx = ts_ctx_new();
	char path[256];
	write_file(tmp_path(path, sizeof path), text);
	ck_assert_ptr_null(ts_tune_log_load(ctx, path));
	tu_assert_error(ctx, path);
	tu_assert_error(ctx, want);
	unlink(path);
	ts_ctx_free(ctx);
}

START_TEST(test_log_malformed)
{
	char good[1024], text[4096];
	record(good, sizeof good, NULL, NULL, NULL);
	check_malformed("", ":1: empty tune log");
	check_malformed("\n\n", ":1: empty tune log");
	snprintf(text, sizeof text, "%s%.60s\n", good, good);
	check_malformed(text, ":2: truncated record");
	check_malformed("garbage\n", ":1: expected '{'");
	check_malformed("{\"op\": 3}\n", ":1: expected '\"'");
	check_malformed("{\"bogus\": 1}\n", ":1: unknown field 'bogus'");
	check_malformed("{\"tessera\": \"0.1\"}\n", ":1: missing field op");
	check_malformed("{\"shape\": [1e400]}\n", ":1: field shape: number out of range");
	check_malformed("{\"shape\": [99999999999999999999]}\n", ":1: field shape: 1e+20 is out of range");
	check_malformed("{\"shape\": [1.5]}\n", ":1: field shape: expected an integer");
	check_malformed("{\"shape\": [0x10]}\n", ":1: field shape: expected a JSON number");
	check_malformed("{\"median_ms\": 0x1p-4}\n", ":1: field median_ms: expected a JSON number");
	/* JSON's numbers only: no bare point, leading zero or empty exponent */
	const char *not_json[] = {"1.", "012", "1e", "1e+", "1.e5", "-", "-.5", "00", "1.5e", "1ee3"};
	for (int i = 0; i < 10; i++) {
		snprintf(text, sizeof text, "{\"median_ms\": %s}\n", not_json[i]);
		check_malformed(text, i == 5 || i == 6 ? ":1: field median_ms: expected a number"
					       : ":1: field median_ms: expected a JSON number");
	}
	check_malformed("{\"threads\": \"two\"}\n", ":1: field threads: expected a number");
	check_malformed("{\"op\": \"a\", \"op\": \"b\"}\n", ":1: field op appears twice");
	check_malformed("{\"params\": {\"mr\": -1}}\n", ":1: field mr: -1 is out of range");
	check_malformed("{\"median_ms\": -1}\n", ":1: field median_ms: negative time");
	snprintf(text, sizeof text, "%.*s} extra\n", (int)strlen(good) - 1, good);
	check_malformed(text, ":1: text after the record");
	/* every prefix of a good record is refused, never read past */
	for (size_t n = 0; n + 2 < strlen(good); n += 7) {
		snprintf(text, sizeof text, "%.*s\n", (int)n, good);
		check_malformed(text, n ? ":1: " : "empty tune log");
	}
	/* random bytes (NUL excepted) after a good record: refused at line 2 */
	uint64_t seed = 99;
	for (int k = 0; k < 40; k++) {
		size_t len = strlen(good), n = 1 + rng(&seed) % 200;
		memcpy(text, good, len);
		for (size_t i = 0; i < n; i++)
			text[len + i] = (char)(1 + rng(&seed) % 255);
		text[len + n] = '\n';
		text[len + n + 1] = 0;
		if (!strchr(text + len, '\n') || strchr(text + len, '\n') == text + len + n)
			if (strspn(text + len, " \t\r\n") < n + 1)
				check_malformed(text, ":2: ");
	}
	char *huge = malloc(70000);
	memset(huge, ' ', 69998);
	huge[0] = '{', huge[69998] = '\n', huge[69999] = 0;
	check_malformed(huge, ":1: line longer than 64 KB");
	free(huge);
	ts_ctx *ctx = ts_ctx_new();
	ck_assert_ptr_null(ts_tune_log_load(ctx, "/nonexistent/tune.jsonl"));
	tu_assert_error(ctx, "tune log /nonexistent/tune.jsonl: cannot read: No such file");
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tune");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_search_matmul);
	tcase_add_test(tc, test_search_pool);
	tcase_add_test(tc, test_search_depthwise);
	tcase_add_test(tc, test_search_conv2d);
	tcase_add_test(tc, test_search_conv2d_plain);
	tcase_add_test(tc, test_search_default_first);
	tcase_add_test(tc, test_search_exhausts_space);
	tcase_add_test(tc, test_space_matmul);
	tcase_add_test(tc, test_space_conv2d);
	tcase_add_test(tc, test_space_conv2d_plain);
	tcase_add_test(tc, test_space_conv2d_blocks);
	tcase_add_test(tc, test_space_depthwise);
	tcase_add_test(tc, test_space_generic);
	tcase_add_test(tc, test_generic_user_compute);
	tcase_add_test(tc, test_log_round_trip);
	tcase_add_test(tc, test_log_foreign);
	tcase_add_test(tc, test_log_threads);
	tcase_add_test(tc, test_log_fits_space);
	tcase_add_test(tc, test_log_malformed);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
