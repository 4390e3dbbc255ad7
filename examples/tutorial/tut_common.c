/*
 * tut_common.c - the step printer and the runner of the CPU tutorials (see
 * tutorial.h).
 *
 * Every step builds its computation in a context of its own, lowers and
 * compiles it for the host, runs it on random inputs and compares the
 * output with ts_eval on the same inputs before anything is timed: a
 * mismatch is an error exit, so a tutorial never shows the speed of a
 * wrong schedule.
 */
#include "tutorial.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int tut_lanes(const tut_opts *o)
{
	if (o->golden)
		return TUT_GOLDEN_LANES;
#if defined(__x86_64__) || defined(__i386__)
	if (__builtin_cpu_supports("avx512f"))
		return 16;
#endif
	return 8;
}

void tut_print_head(const char *text, int max_lines)
{
	int line = 0;
	const char *p = text;
	for (; *p && line < max_lines; p++) {
		putchar(*p);
		line += *p == '\n';
	}
	int rest = 0;
	for (; *p; p++)
		rest += *p == '\n';
	if (rest)
		printf("  ... (%d more lines)\n", rest);
}

void tut_print_step(int idx, const char *name, const char *why, const char *code)
{
	printf("\n== step %d: %s ==\n%s\n\n```c\n%s\n```\n", idx, name, why, code);
}

void tut_print_ir(const ts_func *f, int lines)
{
	printf("\nlowered loop IR:\n```\n");
	tut_print_head(ir_stmt_str(f->ctx, f->body), lines);
	printf("```\n");
}

void tut_report_step(tut_report *rep, const char *name, double seconds, double work,
		     int threads)
{
	double rate = work / seconds / 1e9;
	printf("%-38s %9.3f ms  %8.2f %s", name, seconds * 1e3, rate, rep->unit);
	if (rep->n > 0)
		printf("  %6.2fx previous  %6.2fx step 0", rep->ms[rep->n - 1] / (seconds * 1e3),
		       rep->ms[0] / (seconds * 1e3));
	printf("  (%d thread%s)", threads, threads > 1 ? "s" : "");
	if (rep->n < TUT_MAX_STEPS) {
		rep->name[rep->n] = name;
		rep->ms[rep->n] = seconds * 1e3;
		rep->rate[rep->n] = rate;
		rep->n++;
	}
}

double tut_max_rel_err(const float *got, const float *want, int64_t n)
{
	double worst = 0, scale = 1e-30;
	for (int64_t i = 0; i < n; i++) {
		double d = fabs((double)got[i] - want[i]), m = fabs((double)want[i]);
		if (isnan(d))
			return INFINITY;
		worst = d > worst ? d : worst;
		scale = m > scale ? m : scale;
	}
	return worst / scale;
}

ts_status tut_time(ts_module *m, int nargs, ts_array *const *args, double *seconds)
{
	uint64_t t0 = ts_now_ns();
	ts_status st = ts_module_run(m, nargs, args);
	double once = ts_ms_since(t0) / 1e3;
	if (st != TS_OK)
		return st;
	int repeat = once > 0.2 ? 3 : once > 0.01 ? (int)(1.0 / once) : 100;
	ts_timing t;
	st = ts_module_time(m, nargs, args, 1, repeat, &t);
	*seconds = t.median;
	return st;
}

/* Arrays for the function's arguments: inputs random (the same seeds in
 * every step), outputs filled with values no step computes, so that an
 * element a schedule forgets shows.  Returns false when memory runs out. */
static bool make_arrays(tut_graph *g, ts_array **got, ts_array **want)
{
	for (int i = 0; i < g->nargs; i++) {
		got[i] = ts_array_for(g->ctx, g->args[i]);
		want[i] = ts_array_for(g->ctx, g->args[i]);
		if (!got[i] || !want[i])
			return false;
		bool input = g->args[i]->op == TS_OP_PLACEHOLDER;
		ts_array_fill_random(got[i], input ? 11 + (uint64_t)i : 99, input ? -1 : 1e6,
				     input ? 1 : 2e6);
		memcpy(want[i]->data, got[i]->data, ts_array_nbytes(got[i]));
	}
	return true;
}

/* Runs m once and compares the output with ts_eval: 0 or 1. */
static int check(tut_graph *g, ts_module *m, const char *step, ts_array **got, ts_array **want)
{
	void *wd[TUT_MAX_ARGS];
	for (int i = 0; i < g->nargs; i++)
		wd[i] = want[i]->data;
	int out = g->nargs - 1;
	if (ts_module_run(m, g->nargs, got) != TS_OK ||
	    ts_eval(g->ctx, g->nargs, g->args, wd) != TS_OK) {
		fprintf(stderr, "step %s: %s\n", step, ts_last_error(g->ctx));
		return 1;
	}
	double err = tut_max_rel_err(got[out]->data, want[out]->data, ts_array_numel(got[out]));
	if (err > 1e-4) {
		fprintf(stderr, "step %s: the result differs from ts_eval (relative error %g)\n", step,
			err);
		return 1;
	}
	return 0;
}

static int fail(tut_graph *g, const char *step)
{
	fprintf(stderr, "step %s: %s\n", step, ts_last_error(g->ctx));
	return 1;
}

/* Checks, then times, the compiled step. */
static int measure(const tut_cpu *t, const tut_opts *o, tut_report *rep, tut_graph *g,
		   ts_module *m, const tut_step *st)
{
	ts_array *got[TUT_MAX_ARGS] = {0}, *want[TUT_MAX_ARGS] = {0};
	int rc = make_arrays(g, got, want) ? check(g, m, st->name, got, want) : fail(g, st->name);
	if (rc == 0 && !o->golden) {
		int threads = g->parallel ? o->threads : 1;
		ts_set_num_threads(threads);
		double sec;
		if (tut_time(m, g->nargs, got, &sec) != TS_OK)
			rc = fail(g, st->name);
		else
			tut_report_step(rep, st->name, sec, t->work(g), threads), printf("\n");
	}
	for (int i = 0; i < g->nargs; i++) {
		ts_array_free(got[i]);
		ts_array_free(want[i]);
	}
	return rc;
}

static int run_step(const tut_cpu *t, const tut_opts *o, tut_report *rep, int i)
{
	const tut_step *st = &t->steps[i];
	tut_graph g = {.ctx = ts_ctx_new(), .n = o->size, .lanes = tut_lanes(o), .lines = o->lines};
	if (!g.ctx)
		return fprintf(stderr, "step %s: out of memory\n", st->name), 1;
	tut_print_step(i, st->name, st->why, st->code);
	int rc = 0;
	if (!t->make(&g, i) || st->apply(&g) != TS_OK) {
		rc = fail(&g, st->name);
		goto out;
	}
	ts_func *f = ts_lower(g.s, t->name, g.nargs, g.args);
	ts_module *m = f ? ts_build(g.ctx, f, "llvm") : NULL;
	if (!m) {
		rc = fail(&g, st->name);
		goto out;
	}
	tut_print_ir(f, o->lines);
	if (t->explain)
		t->explain(&g, f);
	if (t->verify)
		rc = t->verify(&g, i, f);
	if (rc == 0)
		rc = measure(t, o, rep, &g, m, st);
	ts_module_free(m);
out:
	ts_ctx_free(g.ctx);
	return rc;
}

int tut_run_cpu(const tut_cpu *t, const tut_opts *o, tut_report *rep)
{
	tut_graph g = {.ctx = ts_ctx_new(), .n = o->size, .lanes = tut_lanes(o)};
	if (!g.ctx || !t->make(&g, 0))
		return fprintf(stderr, "tessera-tutorial %s: %s\n", t->name, ts_last_error(g.ctx)), 1;
	rep->unit = t->unit;
	printf("tessera-tutorial %s: ", t->name);
	t->describe(&g);
	if (!o->golden)
		printf(", %d threads available, vectors of %d float32 lanes", o->threads, g.lanes);
	printf("\n");
	ts_ctx_free(g.ctx);
	int rc = 0;
	for (int i = 0; i < t->nsteps; i++)
		if (o->only < 0 || o->only == i)
			rc |= run_step(t, o, rep, i);
	return rc;
}
