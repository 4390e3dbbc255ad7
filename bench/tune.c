/*
 * tune.c - tessera-tune: tunes one operator at one shape on this machine
 * and appends the result to a tuning log (tune.h).
 *
 *   tessera-tune OP SHAPE... --log FILE [--budget SECONDS] [--threads T] [--seed S]
 *
 * conv2d, conv2d_nchw and conv2d_nhwc take the nine numbers of their shape
 * or a ResNet-50 layer name as tessera-bench names them
 * (`tessera-tune conv2d res2_3x3`); depthwise a MobileNet-v2 layer name
 * (`tessera-tune depthwise dw3`).  A record of
 * the log for the same task seeds the search (resume).  On a terminal a
 * progress line is rewritten in place; at the end a table compares the
 * default and the tuned schedule as measured in this run.  Exit status:
 * 0 tuned (the log written), 1 tuning or writing failed, 2 bad command
 * line (an unreadable, malformed or unwritable log included: found before
 * anything runs).
 *
 *   tessera-tune model FILE.onnx --log FILE [--budget SECONDS] ...
 *
 * tunes each distinct convolution of a model as the graph layer compiles
 * it (ts_graph_exec_tune_tasks: its channel blocks held at the graph's),
 * the budget per convolution, one record each; tessera-bench model
 * --tuned LOG (ts_graph_opts.tuned) applies them.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "graph.h"
#include "threadpool.h"
#include "tune.h"

typedef struct tune_cli {
	const char *op;
	int nshape;
	int64_t shape[TS_TUNE_MAX_SHAPE];
	const char *layer;   /* conv2d by name */
	const char *model;   /* "model": the .onnx file */
	const char *log;
	double budget;
	int threads;
	uint64_t seed;
	bool help;
} tune_cli;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: tessera-tune OP SHAPE... --log FILE [--budget SECONDS] [--threads T] [--seed S]\n"
		"       tessera-tune model FILE.onnx --log FILE [--budget SECONDS] [--threads T] [--seed S]\n"
		"\n"
		"Searches schedules for one operator at one shape on this machine (float32,\n"
		"target llvm), each candidate checked against a reference before it is timed,\n"
		"and appends the best to the tuning log FILE (JSON lines).  A record of FILE\n"
		"for the same task seeds the search.  tessera-bench --tuned FILE uses the log.\n"
		"\n"
		"operators and shapes:\n%s\n"
		"(conv2d, conv2d_nchw and conv2d_nhwc also take a ResNet-50 layer name:\n"
		" tessera-bench --layer list; depthwise a MobileNet-v2 one:\n"
		" tessera-bench depthwise --layer list)\n"
		"\n"
		"model FILE.onnx tunes each distinct convolution of the model as the graph\n"
		"layer compiles it (its channel blocks held at the graph's), the budget per\n"
		"convolution; tessera-bench model --tuned FILE applies the records.  The\n"
		"bench's models are out/models/resnet50.onnx and bert-layer.onnx once\n"
		"'tessera-bench model NAME' has made them.\n"
		"\n"
		"options:\n"
		"  --log FILE        the tuning log (required; created when missing)\n"
		"  --budget SECONDS  wall-clock budget, above 0 and at most 86400 (default 10)\n"
		"  --threads T       threads of the generated code, 1 to 1024 (default: all cores)\n"
		"  --seed S          seed of the mutations, 0 to 2^63-1 (default 1)\n"
		"  -h, --help        this text\n"
		"\n"
		"exit status: 0 tuned, 1 tuning or writing the log failed, 2 bad command line\n",
		ts_tune_ops_usage());
}

static int bad(const char *fmt, const char *arg)
{
	char a[80];
	snprintf(a, sizeof a, "%.64s%s", arg, strlen(arg) > 64 ? "..." : "");
	fprintf(stderr, "tessera-tune: ");
	fprintf(stderr, fmt, a);
	fprintf(stderr, "\nrun 'tessera-tune --help' for usage\n");
	return BENCH_EXIT_USAGE;
}

/* A library error, in full (it names the operator, the field or the line). */
static int refuse(ts_ctx *ctx)
{
	fprintf(stderr, "tessera-tune: %s\nrun 'tessera-tune --help' for usage\n", ts_last_error(ctx));
	return BENCH_EXIT_USAGE;
}

/* A decimal integer in [lo, hi]: digits only. */
static bool parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
	if (*s < '0' || *s > '9')
		return false;
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

static int parse_flag(tune_cli *c, const char *flag, const char *v)
{
	int64_t x;
	if (!strcmp(flag, "--log")) {
		if (!*v)
			return bad("--log: empty path%s", "");
		c->log = v;
	} else if (!strcmp(flag, "--budget")) {
		char *end;
		errno = 0;
		c->budget = strtod(v, &end);
		if (errno || end == v || *end || !(c->budget > 0) || c->budget > 86400)
			return bad("--budget: must be a number of seconds above 0 and at most 86400, got '%s'", v);
	} else if (!strcmp(flag, "--threads")) {
		if (!parse_i64(v, 1, BENCH_MAX_THREADS, &x))
			return bad("--threads: must be an integer from 1 to 1024, got '%s'", v);
		c->threads = (int)x;
	} else if (!strcmp(flag, "--seed")) {
		if (!parse_i64(v, 0, INT64_MAX, &x))
			return bad("--seed: must be an integer from 0 to 2^63-1, got '%s'", v);
		c->seed = (uint64_t)x;
	} else {
		return bad("unknown option '%s'", flag);
	}
	return 0;
}

static int parse_shape_arg(tune_cli *c, const char *a)
{
	int64_t x;
	if (!strcmp(c->op, "model")) {
		if (c->model)
			return bad("unexpected argument '%s' after the model file", a);
		c->model = a;
		return 0;
	}
	bool named = !strncmp(c->op, "conv2d", 6) || !strcmp(c->op, "depthwise");
	if (named && c->nshape == 0 && !c->layer && (*a < '0' || *a > '9')) {
		c->layer = a;
		return 0;
	}
	if (c->layer)
		return bad("unexpected argument '%s' after the layer name", a);
	if (c->nshape == TS_TUNE_MAX_SHAPE)
		return bad("too many extents (from '%s' on)", a);
	if (!parse_i64(a, 0, (int64_t)1 << 24, &x))
		return bad("extent '%s' is not an integer from 0 to 2^24 (0 only as a padding)", a);
	c->shape[c->nshape++] = x;
	return 0;
}

static int parse(int argc, char **argv, tune_cli *c)
{
	*c = (tune_cli){.budget = 10, .seed = 1};
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	c->threads = cores > 0 ? (int)cores : 1;
	if (argc < 2)
		return bad("missing operator (%s)", "matmul, dense, batch_matmul, conv2d, conv2d_nchw, conv2d_nhwc, "
			   "depthwise, pool, softmax, elementwise");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			c->help = true;
			return 0;
		}
		if (i == 1) {
			if (a[0] == '-')
				return bad("missing operator before '%s'", a);
			c->op = a;
			continue;
		}
		if (a[0] != '-' || a[1] != '-') {
			if (parse_shape_arg(c, a))
				return BENCH_EXIT_USAGE;
			continue;
		}
		bool known = !strcmp(a, "--log") || !strcmp(a, "--budget") || !strcmp(a, "--threads") ||
			     !strcmp(a, "--seed");
		if (!known)
			return bad("unknown option '%s'", a);
		if (i + 1 >= argc)
			return bad("%s needs a value", a);
		if (parse_flag(c, a, argv[++i]))
			return BENCH_EXIT_USAGE;
	}
	if (!c->log)
		return bad("missing --log FILE%s", "");
	if (!strcmp(c->op, "model") && !c->model)
		return bad("model: name the model's file (FILE.onnx)%s", "");
	return 0;
}

/* ---- the log given: readable when it exists, and writable ------------------------ */

static int check_log(const char *path)
{
	struct stat st;
	bool existed = stat(path, &st) == 0;
	if (existed && S_ISDIR(st.st_mode))
		return bad("--log: cannot write '%s': it is a directory", path);
	int fd = open(path, existed ? O_WRONLY | O_APPEND : O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0) {
		char msg[320];
		snprintf(msg, sizeof msg, "--log: cannot write '%%s': %s", strerror(errno));
		return bad(msg, path);
	}
	close(fd);
	if (!existed)
		unlink(path);
	return 0;
}

/* The log's record for the task, if the log exists: the search's start. */
static int resume_from(ts_ctx *ctx, const char *path, const ts_tune_task *t, ts_tune_cand *c,
		       bool *found)
{
	struct stat st;
	const ts_tune_record *rec = NULL;
	*found = false;
	if (stat(path, &st) != 0 || st.st_size == 0)
		return 0;
	ts_tune_log *log = ts_tune_log_load(ctx, path);
	if (!log || ts_tune_log_lookup(ctx, log, t, c, &rec) != TS_OK)
		return refuse(ctx);
	*found = rec != NULL;
	if (rec)
		printf("resuming from %s:%d (%.4g ms)\n", path, rec->line, rec->median_ms);
	return 0;
}

/* ---- output ------------------------------------------------------------------------ */

static void progress(const ts_tune_progress *p, void *user)
{
	(void)user;
	printf("\r  trials %4d  refused %3d  best %8.2f GFLOP/s  elapsed %5.1f s", p->trials, p->invalid,
	       p->best_gflops, p->elapsed_s);
	fflush(stdout);
}

static void print_table(const ts_tune_task *t, const ts_tune_result *r)
{
	double fl = ts_tune_task_flops(t);
	printf("            median ms     GFLOP/s    ratio\n");
	printf("  default  %10.4f  %10.2f     1.00\n", r->default_ms, fl / (r->default_ms * 1e6));
	printf("  tuned    %10.4f  %10.2f  %7.2f\n", r->best_ms, fl / (r->best_ms * 1e6),
	       r->default_ms / r->best_ms);
	int n = 0;
	printf("params that differ from the default:");
	for (int i = 0; i < t->space.nparams; i++)
		if (r->best.v[i] != r->def.v[i])
			printf("%s %s %lld (default %lld)", n++ ? "," : "", t->space.name[i],
			       (long long)r->best.v[i], (long long)r->def.v[i]);
	printf("%s\n", n ? "" : " none (the default is the fastest found)");
	printf("%d candidates measured, %d refused by a primitive, %d wrong; %d rounds in %.1f s; "
	       "reference: %s; ", r->trials, r->invalid, r->wrong, r->rounds, r->elapsed_s, r->reference);
	if (r->sets > 1)
		printf("timed on %d buffer sets in turn (data out of cache, as tessera-bench)\n", r->sets);
	else /* ts_cold_sets: one set from 8 MiB */
		printf("timed on one buffer set (8 MiB or more of data, as tessera-bench)\n");
}

static int init_task(ts_ctx *ctx, const tune_cli *c, ts_tune_task *t)
{
	int64_t shape[TS_TUNE_MAX_SHAPE];
	int n = c->nshape;
	memcpy(shape, c->shape, sizeof shape);
	bench_conv bc;
	if (c->layer && !strcmp(c->op, "depthwise")) {
		if (bench_find_dw_layer(c->layer, &bc))
			return bad("depthwise: unknown layer '%s' (tessera-bench depthwise --layer list)", c->layer);
		int64_t v[7] = {bc.N, bc.C, bc.H, bc.W, bc.R, bc.stride, bc.pad};
		memcpy(shape, v, sizeof v);
		n = 7;
	} else if (c->layer) {
		if (bench_find_layer(c->layer, &bc))
			return bad("conv2d: unknown layer '%s' (tessera-bench --layer list)", c->layer);
		int64_t v[9] = {bc.N, bc.C, bc.H, bc.W, bc.K, bc.R, bc.S, bc.stride, bc.pad};
		memcpy(shape, v, sizeof v);
		n = 9;
	}
	if (ts_tune_task_init(ctx, t, c->op, n, shape) != TS_OK)
		return refuse(ctx);
	return 0;
}

/* The search from start (NULL: the default only), its table printed and
 * its record appended to the log; 0, or -1 with the error printed. */
static int search(ts_ctx *ctx, const tune_cli *c, const ts_tune_task *t, const ts_tune_cand *start,
		  ts_tune_result *r)
{
	ts_tune_opts o = ts_tune_opts_default();
	o.budget_s = c->budget;
	o.seed = c->seed;
	o.start = start;
	o.progress = isatty(STDOUT_FILENO) ? progress : NULL;
	ts_status st = ts_tune(ctx, t, &o, r);
	if (o.progress)
		printf("\n");
	if (st == TS_OK)
		print_table(t, r);
	if (st != TS_OK || ts_tune_log_append(ctx, c->log, t, r) != TS_OK)
		return fprintf(stderr, "tessera-tune: %s\n", ts_last_error(ctx)), -1;
	return 0;
}

static int run(ts_ctx *ctx, const tune_cli *c)
{
	ts_tune_task t;
	ts_tune_cand start;
	bool found;
	if (init_task(ctx, c, &t) || check_log(c->log) || resume_from(ctx, c->log, &t, &start, &found))
		return BENCH_EXIT_USAGE;
	ts_set_num_threads(c->threads);
	char cpu[64], feat[40];
	ts_tune_host(cpu, feat);
	printf("tuning %s (%s space, %d parameters) on %s, %d thread%s, budget %.1f s, seed %llu\n",
	       c->op, t.space.kind, t.space.nparams, cpu, c->threads, c->threads > 1 ? "s" : "", c->budget,
	       (unsigned long long)c->seed);
	ts_tune_result r;
	if (search(ctx, c, &t, found ? &start : NULL, &r))
		return BENCH_EXIT_FAILED;
	printf("log: appended to %s\n", c->log);
	return BENCH_EXIT_OK;
}

/* One search of a model's task i (of n), from the log's record for it
 * held at the task's channel blocks; appends the result.  *def and *best
 * get the medians. */
static int tune_one(ts_ctx *ctx, const tune_cli *c, const ts_tune_task *t, int i, int n, double *def,
		    double *best)
{
	const int64_t *s = t->shape;
	ts_tune_cand start;
	bool found;
	printf("\n[%d/%d] conv2d %lld %lld %lld %lld %lld %lld %lld %lld %lld (N C H W K R S stride pad), "
	       "channel blocks", i + 1, n, (long long)s[0], (long long)s[1], (long long)s[2], (long long)s[3],
	       (long long)s[4], (long long)s[5], (long long)s[6], (long long)s[7], (long long)s[8]);
	for (int p = 0; p < t->space.nparams; p++)
		if (t->space.nchoice[p] == 1)
			printf(" %s %lld", t->space.name[p], (long long)t->space.choice[p][0]);
	printf("\n");
	if (resume_from(ctx, c->log, t, &start, &found))
		return BENCH_EXIT_FAILED;
	/* a record of other blocks (a standalone tuning) starts at the graph's */
	for (int p = 0; found && p < t->space.nparams; p++)
		if (t->space.nchoice[p] == 1)
			start.v[p] = t->space.choice[p][0];
	ts_tune_result r;
	if (search(ctx, c, t, found ? &start : NULL, &r))
		return BENCH_EXIT_FAILED;
	*def = r.default_ms;
	*best = r.best_ms;
	return BENCH_EXIT_OK;
}

static int run_model(ts_ctx *ctx, const tune_cli *c)
{
	if (check_log(c->log))
		return BENCH_EXIT_USAGE;
	ts_set_num_threads(c->threads);
	ts_graph *g = ts_onnx_load(ctx, c->model);
	if (!g)
		return refuse(ctx);
	ts_graph_exec *e = ts_graph_compile(g, NULL);
	ts_graph_free(g);
	if (!e)
		return fprintf(stderr, "tessera-tune: %s\n", ts_last_error(ctx)), BENCH_EXIT_FAILED;
	int n = ts_graph_exec_tune_tasks(e, NULL, 0);
	ts_tune_task *tasks = n > 0 ? malloc(sizeof *tasks * (size_t)n) : NULL;
	if (n > 0 && tasks)
		ts_graph_exec_tune_tasks(e, tasks, n);
	ts_graph_exec_free(e);
	if (n > 0 && !tasks)
		return fprintf(stderr, "tessera-tune: out of memory\n"), BENCH_EXIT_FAILED;
	char cpu[64], feat[40];
	ts_tune_host(cpu, feat);
	printf("tuning %s: %d distinct convolution%s on %s, %d thread%s, budget %.1f s each, seed %llu\n",
	       c->model, n, n == 1 ? "" : "s", cpu, c->threads, c->threads > 1 ? "s" : "", c->budget,
	       (unsigned long long)c->seed);
	double sum_def = 0, sum_best = 0;
	int rc = BENCH_EXIT_OK;
	for (int i = 0; i < n && rc == BENCH_EXIT_OK; i++) {
		double d = 0, b = 0;
		rc = tune_one(ctx, c, &tasks[i], i, n, &d, &b);
		sum_def += d, sum_best += b;
	}
	free(tasks);
	if (rc == BENCH_EXIT_OK && n > 0)
		printf("\n%d convolutions, each once: default %.3f ms, tuned %.3f ms (%.2fx); log: appended to %s\n",
		       n, sum_def, sum_best, sum_def / sum_best, c->log);
	return rc;
}

int main(int argc, char **argv)
{
	tune_cli c;
	if (parse(argc, argv, &c))
		return BENCH_EXIT_USAGE;
	if (c.help) {
		usage(stdout);
		return BENCH_EXIT_OK;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	ts_ctx *ctx = ts_ctx_new();
	if (!ctx)
		return fprintf(stderr, "tessera-tune: out of memory\n"), BENCH_EXIT_FAILED;
	int rc = !strcmp(c.op, "model") ? run_model(ctx, &c) : run(ctx, &c);
	ts_ctx_free(ctx);
	return rc;
}
