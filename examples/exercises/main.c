/*
 * main.c - tessera-exercise: scheduling exercises with checkable answers.
 *
 *   tessera-exercise list
 *   tessera-exercise check N|all [--solution] [--no-time] [--picture] [--svg FILE]
 *
 * `check` schedules exercise N with the student's function (exN_*.c) or,
 * with --solution, the reference solution (solutions/exN_*.c); prints the
 * loop nest picture (ts_schedule_picture); builds it for the host CPU and
 * compares its result with the reference evaluator (ts_eval) on random
 * data at every size of the exercise (the later ones chosen so that usual
 * split factors do not divide them); then times it against the
 * unscheduled version (median of repeats after warm-up) and says whether
 * the exercise's speed-up goal is met.  --no-time checks correctness only
 * (what CTest runs), --picture prints the picture and stops, --svg writes
 * the picture as SVG.  Exit status: 0 when every result is correct, 1
 * when one is not or a schedule fails, 2 for a bad command line.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exercise.h"
#include "../writable.h"

#define ROUNDS 5
#define WARMUP 2
#define REPEAT 5
#define RTOL 1e-3
#define ATOL 1e-3

typedef struct opts {
	int first, last;     /* exercises to check, 0-based, inclusive */
	bool solution, no_time, picture_only;
	const char *svg;     /* path, or NULL */
} opts;

static int usage(FILE *f, int rc)
{
	fprintf(f, "usage: tessera-exercise list\n"
		   "       tessera-exercise check N|all [--solution] [--no-time] [--picture] [--svg FILE]\n"
		   "  check: schedule exercise N (1 to %d) with examples/exercises/exN_*.c,\n"
		   "  check it against the reference evaluator, print its loop nest, and time\n"
		   "  it against the unscheduled version.\n"
		   "    --solution  use the reference solution (examples/exercises/solutions/)\n"
		   "    --no-time   check correctness only\n"
		   "    --picture   print the loop nest picture and stop\n"
		   "    --svg FILE  also write the picture as SVG\n"
		   "  Edit an exercise, then rebuild: cmake --build build --target tessera-exercise\n",
		ex_ndefs);
	return rc;
}

static int bad(const char *fmt, const char *arg)
{
	fputs("tessera-exercise: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs("\n", stderr);
	return 2;
}

/* ---- sizes and arrays ------------------------------------------------------- */

static const char *size_str(const ex_def *d, const int64_t *n, char *buf, size_t len)
{
	size_t at = 0;
	for (int k = 0; k < d->ndims && at < len; k++)
		at += (size_t)snprintf(buf + at, len - at, "%s%lld", k ? " x " : "", (long long)n[k]);
	return buf;
}

static void free_arrays(ts_array **a, int n)
{
	for (int k = 0; k < n; k++)
		ts_array_free(a[k]);
}

/* Arrays for every argument, the inputs random; false when out of memory. */
static bool make_arrays(ts_ctx *ctx, const ex_def *d, const ex_problem *p, ts_array **a,
			uint64_t seed)
{
	for (int k = 0; k < p->nargs; k++) {
		a[k] = ts_array_for(ctx, p->args[k]);
		if (!a[k]) {
			free_arrays(a, k);
			return false;
		}
		if (k < p->nargs - 1)
			ts_array_fill_random(a[k], seed + (uint64_t)k, d->lo, d->hi);
	}
	return true;
}

/* ---- one size: build, run, compare ------------------------------------------------ */

static ts_module *build(ts_ctx *ctx, ts_schedule *s, const ex_problem *p)
{
	ts_func *f = ts_lower(s, "exercise", p->nargs, p->args);
	return f ? ts_build(ctx, f, "llvm") : NULL;
}

/* The first element of got that differs from want, or -1. */
static int64_t mismatch(const ts_array *got, const ts_array *want)
{
	for (int64_t k = 0; k < ts_array_numel(got); k++) {
		double g = ts_elem_get_f64(got->data, got->dtype, k);
		double w = ts_elem_get_f64(want->data, want->dtype, k);
		if (!(fabs(g - w) <= ATOL + RTOL * fabs(w)))
			return k;
	}
	return -1;
}

static void print_index(const ts_array *a, int64_t k)
{
	int64_t idx[TS_MAX_DIMS];
	for (int d = a->ndim - 1; d >= 0; d--) {
		idx[d] = k % a->shape[d];
		k /= a->shape[d];
	}
	for (int d = 0; d < a->ndim; d++)
		printf("%s%lld", d ? ", " : "", (long long)idx[d]);
}

/* Runs m on random inputs and compares with ts_eval; prints the verdict. */
static bool compare(ts_ctx *ctx, const ex_def *d, const ex_problem *p, ts_module *m,
		    const char *size, uint64_t seed)
{
	ts_array *a[EX_MAX_ARGS], *ref = ts_array_for(ctx, p->out);
	if (!ref || !make_arrays(ctx, d, p, a, seed)) {
		ts_array_free(ref);
		printf("error: %s\n", ts_last_error(ctx));
		return false;
	}
	void *data[EX_MAX_ARGS];
	for (int k = 0; k < p->nargs; k++)
		data[k] = k < p->nargs - 1 ? a[k]->data : ref->data;
	bool ok = ts_module_run(m, p->nargs, a) == TS_OK &&
		  ts_eval(ctx, p->nargs, p->args, data) == TS_OK;
	int64_t bad_at = ok ? mismatch(a[p->nargs - 1], ref) : -1;
	if (!ok) {
		printf("error on %s: %s\n", size, ts_last_error(ctx));
	} else if (bad_at >= 0) {
		printf("WRONG on %s: %s[", size, p->out->name);
		print_index(ref, bad_at);
		printf("] is %g, the reference evaluator says %g\n",
		       ts_elem_get_f64(a[p->nargs - 1]->data, ts_float32, bad_at),
		       ts_elem_get_f64(ref->data, ts_float32, bad_at));
	} else {
		printf("correct on %s: %s matches the reference evaluator on random data\n", size,
		       p->out->name);
	}
	free_arrays(a, p->nargs);
	ts_array_free(ref);
	return ok && bad_at < 0;
}

/* ---- timing -------------------------------------------------------------------------- */

/* Times m0 and m1 in alternating rounds (so that a change in the
 * machine's load hits both alike): each round WARMUP untimed calls and
 * REPEAT timed ones of each; *t0 and *t1 get the median of all the
 * timed calls.  False (with the message printed) on an error. */
static bool time_both(ts_ctx *ctx, ts_module *m0, ts_module *m1, const ex_problem *p,
		      ts_array **a, double *t0, double *t1)
{
	double s0[ROUNDS], s1[ROUNDS];
	for (int r = 0; r < ROUNDS; r++) {
		ts_timing x, y;
		if (ts_module_time(m0, p->nargs, a, WARMUP, REPEAT, &x) != TS_OK ||
		    ts_module_time(m1, p->nargs, a, WARMUP, REPEAT, &y) != TS_OK) {
			printf("error timing: %s\n", ts_last_error(ctx));
			return false;
		}
		s0[r] = x.median, s1[r] = y.median;
	}
	*t0 = ts_median(s0, ROUNDS), *t1 = ts_median(s1, ROUNDS);
	return true;
}

/* Times m against the unscheduled version of the same problem. */
static void time_it(ts_ctx *ctx, const ex_def *d, const ex_problem *p, ts_module *m,
		    const char *who)
{
	ts_schedule *s0 = ts_create_schedule(ctx, 1, &p->out);
	ts_module *m0 = s0 ? build(ctx, s0, p) : NULL;
	ts_array *a[EX_MAX_ARGS];
	if (!m0 || !make_arrays(ctx, d, p, a, 7)) {
		printf("error: %s\n", ts_last_error(ctx));
		ts_module_free(m0);
		return;
	}
	double t0, t1;
	bool ok = time_both(ctx, m0, m, p, a, &t0, &t1);
	free_arrays(a, p->nargs);
	ts_module_free(m0);
	if (!ok)
		return;
	printf("time: unscheduled %.3f ms, %s %.3f ms (medians of %d rounds of %d runs, after warm-up)\n",
	       t0 * 1e3, who, t1 * 1e3, ROUNDS, REPEAT);
	printf("speed-up: %.2fx; goal %.1fx: %s\n", t0 / t1, d->goal,
	       t0 / t1 >= d->goal ? "met" : "not met yet");
	printf("(speed depends on the machine: its CPU, its cores, and what else runs on it)\n");
}

/* ---- one exercise -------------------------------------------------------------------- */

static bool write_svg(ts_schedule *s, const ex_problem *p, const char *path)
{
	const char *svg = ts_schedule_svg(s, p->out);
	if (!svg) {
		printf("error: no SVG: %s\n", ts_last_error(s->ctx));
		return false;
	}
	FILE *f = fopen(path, "w");
	bool ok = f && fputs(svg, f) >= 0;
	if (f && fclose(f) != 0)
		ok = false;
	printf(ok ? "wrote %s\n" : "error: cannot write %s\n", path);
	return ok;
}

/* Schedules one instance with the student's function or the solution;
 * NULL (with the message printed) when the schedule fails. */
static ts_schedule *schedule(ts_ctx *ctx, const ex_def *d, const ex_problem *p, bool solution)
{
	ts_schedule *s = ts_create_schedule(ctx, 1, (ts_tensor *const *)&p->out);
	if (s && (solution ? d->solution : d->student)(s, p->tensors) == TS_OK &&
	    ts_last_status(ctx) == TS_OK)
		return s;
	printf("the schedule fails: %s\n", ts_last_error(ctx));
	return NULL;
}

/* Size k of exercise d: schedule, picture (first size), check, time
 * (first size).  Returns whether it is correct. */
static bool check_size(const ex_def *d, int k, const opts *o)
{
	ts_ctx *ctx = ts_ctx_new();
	ex_problem p;
	char size[64];
	size_str(d, d->sizes[k], size, sizeof(size));
	bool ok = ctx && d->build(ctx, d->sizes[k], &p) == TS_OK;
	ts_schedule *s = ok ? schedule(ctx, d, &p, o->solution) : NULL;
	ok = s != NULL;
	if (ok && k == 0) {
		const char *pic = ts_schedule_picture(s, p.out);
		printf("\n%s\n", pic ? pic : ts_last_error(ctx));
		ts_clear_error(ctx);
		if (o->svg)
			ok = write_svg(s, &p, o->svg);
	}
	if (ok && !o->picture_only) {
		ts_module *m = build(ctx, s, &p);
		ok = m && compare(ctx, d, &p, m, size, 100 + (uint64_t)k);
		if (!m)
			printf("the schedule does not compile: %s\n", ts_last_error(ctx));
		if (ok && k == 0 && !o->no_time)
			time_it(ctx, d, &p, m, o->solution ? "the solution" : "yours");
		ts_module_free(m);
	}
	ts_ctx_free(ctx);
	return ok;
}

static bool check_one(int n, const opts *o)
{
	const ex_def *d = &ex_defs[n];
	printf("exercise %d: %s\n", n + 1, d->title);
	printf("schedule: %s (examples/exercises/%s%s)\n",
	       o->solution ? "the reference solution" : "yours", o->solution ? "solutions/" : "",
	       d->file);
	bool ok = true;
	for (int k = 0; k < EX_MAX_SIZES && ok; k++) {
		if (d->sizes[k][0] == 0)
			break;
		ok = check_size(d, k, o);
		if (o->picture_only)
			break;
	}
	printf("%s\n\n", ok ? "result: correct" : "result: NOT correct");
	return ok;
}

static void list(void)
{
	for (int n = 0; n < ex_ndefs; n++) {
		char size[64];
		printf("%d  %-46s goal %.1fx, timed at %s  (examples/exercises/%s)\n", n + 1,
		       ex_defs[n].title, ex_defs[n].goal,
		       size_str(&ex_defs[n], ex_defs[n].sizes[0], size, sizeof(size)), ex_defs[n].file);
	}
}

/* ---- the command line -------------------------------------------------------------- */

/* The exercise argument of check: 1..ex_ndefs or "all". */
static int parse_which(const char *arg, opts *o)
{
	if (!strcmp(arg, "all")) {
		o->first = 0, o->last = ex_ndefs - 1;
		return 0;
	}
	char *end;
	long n = strtol(arg, &end, 10);
	if (arg[0] < '0' || arg[0] > '9' || *end || n < 1 || n > ex_ndefs) {
		fprintf(stderr, "tessera-exercise: '%s' is not an exercise; the exercises are 1 to %d (or all)\n",
			arg, ex_ndefs);
		return 2;
	}
	o->first = o->last = (int)n - 1;
	return 0;
}

static int parse_option(int argc, char **argv, int *i, opts *o)
{
	const char *a = argv[*i];
	if (!strcmp(a, "--solution"))
		o->solution = true;
	else if (!strcmp(a, "--no-time"))
		o->no_time = true;
	else if (!strcmp(a, "--picture"))
		o->picture_only = true;
	else if (!strcmp(a, "--svg")) {
		if (*i + 1 >= argc || !argv[*i + 1][0])
			return bad("--svg needs a file name", NULL);
		o->svg = argv[++*i];
		/* asked now: the answer would otherwise come after the run */
		if (!writable(o->svg))
			return bad("--svg: cannot write '%s'", o->svg);
	} else if (a[0] == '-')
		return bad("unknown option '%s'", a);
	else
		return bad("unexpected argument '%s'", a);
	return 0;
}

/* Parses `check ...`; 0 to go on, 2 on a bad command line. */
static int parse_check(int argc, char **argv, opts *o)
{
	if (argc < 3) {
		fprintf(stderr, "tessera-exercise: check needs an exercise number (1 to %d, or all)\n",
			ex_ndefs);
		return 2;
	}
	if (parse_which(argv[2], o))
		return 2;
	for (int i = 3; i < argc; i++)
		if (parse_option(argc, argv, &i, o))
			return 2;
	if (o->svg && o->first != o->last)
		return bad("--svg draws one exercise, not all", NULL);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return bad("missing command (list or check); --help says more", NULL);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		return usage(stdout, 0);
	if (!strcmp(argv[1], "list")) {
		if (argc > 2)
			return bad("unexpected argument '%s'", argv[2]);
		list();
		return 0;
	}
	if (strcmp(argv[1], "check"))
		return bad("unknown command '%s' (list or check)", argv[1]);
	opts o = {0};
	if (parse_check(argc, argv, &o))
		return 2;
	bool ok = true;
	for (int n = o.first; n <= o.last; n++)
		ok &= check_one(n, &o);
	return ok ? 0 : 1;
}
