/*
 * tessera-tutorial - step-by-step optimization tutorials that run:
 *
 *   tessera-tutorial <gemm|blur|softmax|conv|gpu> [--size N] [--threads T]
 *                    [--lines L] [--step K] [--golden] [--plot FILE.svg]
 *
 * Each step prints its name, why it is faster, the schedule calls it adds,
 * its lowered loop IR and its measured speed (tutorial.h).  This file only
 * reads the command line, strictly (a bad value exits 2 before anything
 * runs), calls the tutorial and draws the chart.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fair_blas.h"
#include "../writable.h"
#include "tutorial.h"

#define MAX_THREADS 1024

static const tutorial *const tutorials[] = {&tut_gemm, &tut_blur, &tut_softmax, &tut_conv,
					    &tut_gpu};
#define NTUTORIALS ((int)TS_COUNT_OF(tutorials))

static const tutorial *find_tutorial(const char *name)
{
	for (int i = 0; i < NTUTORIALS; i++)
		if (!strcmp(tutorials[i]->name, name))
			return tutorials[i];
	return NULL;
}

static void print_steps(FILE *f, const tutorial *t)
{
	for (int i = 0; i < *t->nsteps; i++)
		fprintf(f, "      %2d  %s\n", i, t->step_name(i));
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s TUTORIAL [--size N] [--threads T] [--lines L]\n"
		"       [--step K] [--golden] [--plot FILE.svg]\n"
		"  TUTORIAL is one of those below.  Each step prints its schedule calls, its\n"
		"  lowered loop IR (first L lines, default 30) and its measured speed; every\n"
		"  result is checked first.\n"
		"  T is 1 to %d, L 0 or more, K one of the tutorial's steps.\n"
		"  --golden prints nothing measured and fixes the vector widths, so the\n"
		"  output is the same on every x86-64 machine.  --plot draws a bar per\n"
		"  step with gnuplot (or writes FILE.dat and FILE.gp to draw later).\n",
		prog, MAX_THREADS);
	for (int i = 0; i < NTUTORIALS; i++) {
		const tutorial *t = tutorials[i];
		fprintf(f, "\n  %s: %s\n  N is 1 to %lld; steps:\n", t->name, t->about,
			(long long)t->max_size);
		print_steps(f, t);
	}
	fprintf(f, "\n  A bad command line exits with status 2.\n");
}

/* A strict decimal integer: an optional '-', digits, nothing else (an
 * overflow saturates, so the range checks refuse it).  Prints why not. */
static int parse_int(const char *flag, const char *v, long long *out)
{
	const char *d = v + (*v == '-');
	char *end = NULL;
	if (*d >= '0' && *d <= '9')
		*out = strtoll(v, &end, 10);
	if (!end || *end)
		return fprintf(stderr, "tessera-tutorial: %s: '%s' is not an integer\n", flag, v), -1;
	return 0;
}

static int int_flag(const char *flag, const char *v, long long lo, long long hi, long long *out)
{
	if (parse_int(flag, v, out))
		return -1;
	if (*out < lo || *out > hi)
		return fprintf(stderr, "tessera-tutorial: %s: %s is out of range (%lld to %lld)\n", flag,
			       v, lo, hi), -1;
	return 0;
}

static int step_flag(const tutorial *t, const char *v, int *only)
{
	long long x;
	if (parse_int("--step", v, &x))
		return -1;
	if (x < 0 || x >= *t->nsteps) {
		fprintf(stderr, "tessera-tutorial: --step: %s is not a step of %s; the steps are 0 to %d:\n",
			v, t->name, *t->nsteps - 1);
		print_steps(stderr, t);
		return -1;
	}
	*only = (int)x;
	return 0;
}

/* The chart's path: FILE.svg, writable now (so that a long run does not
 * end in a path it cannot write; nothing is created before the run), with
 * no character that would need quoting in the gnuplot script. */
static int plot_flag(const char *v, const char **plot)
{
	size_t len = strlen(v);
	if (len < 5 || strcmp(v + len - 4, ".svg") != 0)
		return fprintf(stderr, "tessera-tutorial: --plot: '%s' does not end in .svg\n", v), -1;
	if (strpbrk(v, "'\"\\\n"))
		return fprintf(stderr, "tessera-tutorial: --plot: '%s' has a quote or a backslash\n", v),
		       -1;
	if (!writable(v))
		return fprintf(stderr, "tessera-tutorial: --plot: cannot write '%s'\n", v), -1;
	*plot = v;
	return 0;
}

/* Applies one "--flag value" pair. */
static int apply_flag(const tutorial *t, tut_opts *o, const char *flag, const char *v)
{
	long long x;
	if (!strcmp(flag, "--size"))
		return int_flag(flag, v, 1, t->max_size, &x) ? -1 : (o->size = x, 0);
	if (!strcmp(flag, "--threads"))
		return int_flag(flag, v, 1, MAX_THREADS, &x) ? -1 : (o->threads = (int)x, 0);
	if (!strcmp(flag, "--lines"))
		return int_flag(flag, v, 0, INT_MAX, &x) ? -1 : (o->lines = (int)x, 0);
	if (!strcmp(flag, "--step"))
		return step_flag(t, v, &o->only);
	if (!strcmp(flag, "--plot"))
		return plot_flag(v, &o->plot);
	if (!strcmp(flag, "--golden"))
		return o->golden = true, 0;
	return fprintf(stderr, "tessera-tutorial: unknown option '%s' (see --help)\n", flag), -1;
}

static bool takes_value(const char *a)
{
	return !strcmp(a, "--size") || !strcmp(a, "--threads") || !strcmp(a, "--lines") ||
	       !strcmp(a, "--step") || !strcmp(a, "--plot");
}

/* Fills o from argv; returns -1 to go on, else the exit status (after
 * printing the help or what is wrong). */
static int parse_args(int argc, char **argv, const tutorial **t, tut_opts *o)
{
	*o = (tut_opts){0, ts_num_threads(), 30, -1, false, NULL};
	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))
		return usage(stdout, argv[0]), 0;
	if (argc < 2)
		return usage(stderr, argv[0]), 2;
	if (!(*t = find_tutorial(argv[1]))) {
		fprintf(stderr, "tessera-tutorial: unknown tutorial '%s' (available:", argv[1]);
		for (int i = 0; i < NTUTORIALS; i++)
			fprintf(stderr, "%s %s", i ? "," : "", tutorials[i]->name);
		return fprintf(stderr, ")\n"), 2;
	}
	o->size = (*t)->default_size;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			return usage(stdout, argv[0]), 0;
		if (strncmp(a, "-", 1) != 0)
			return fprintf(stderr, "tessera-tutorial: unexpected argument '%s'\n", a), 2;
		if (takes_value(a) && i + 1 >= argc)
			return fprintf(stderr, "tessera-tutorial: %s needs a value\n", a), 2;
		if (apply_flag(*t, o, a, takes_value(a) ? argv[++i] : NULL))
			return 2;
	}
	if (o->plot && o->golden)
		return fprintf(stderr, "tessera-tutorial: --plot draws measured speeds and --golden "
				       "measures nothing; give one of them\n"), 2;
	return -1;
}

/* FILE.svg's FILE. */
static void plot_base(const char *svg, char *base, size_t cap)
{
	snprintf(base, cap, "%.*s", (int)(strlen(svg) - 4), svg);
}

static int write_plot_files(const char *name, const tut_report *rep, const char *svg,
			    const char *base)
{
	char path[PATH_MAX + 8];
	snprintf(path, sizeof(path), "%s.dat", base);
	FILE *f = fopen(path, "w");
	if (!f)
		return fprintf(stderr, "tessera-tutorial: --plot: cannot write '%s'\n", path), 1;
	fprintf(f, "# step  name  median_ms  %s\n", rep->unit);
	for (int i = 0; i < rep->n; i++)
		fprintf(f, "%d \"%s\" %.6f %.6f\n", i, rep->name[i], rep->ms[i], rep->rate[i]);
	fclose(f);
	snprintf(path, sizeof(path), "%s.gp", base);
	if (!(f = fopen(path, "w")))
		return fprintf(stderr, "tessera-tutorial: --plot: cannot write '%s'\n", path), 1;
	fprintf(f,
		"set terminal svg size %d,480 dynamic font 'sans,11'\n"
		"set output '%s'\n"
		"set title 'tessera-tutorial %s: %s per step (higher is faster)'\n"
		"set ylabel '%s'\nset style fill solid 0.8\nset boxwidth 0.6\nset grid ytics\n"
		"set yrange [0:*]\nset xtics nomirror font ',9'\n"
		"plot '%s.dat' using 0:4:xtic(2) with boxes notitle, \\\n"
		"     '' using 0:4:(sprintf('%%.2f', $4)) with labels offset 0,0.8 notitle\n",
		/* labels stay horizontal (some SVG renderers misplace rotated
		 * text), so each bar gets room for its name */
		rep->n * 230 > 900 ? rep->n * 230 : 900, svg, name, rep->unit, rep->unit, base);
	fclose(f);
	return 0;
}

/* Draws the chart with gnuplot, or says how to once it is installed. */
static int plot(const char *name, const tut_report *rep, const char *svg)
{
	char base[PATH_MAX], cmd[2 * PATH_MAX];
	if (rep->n == 0) { /* gpu without a GPU: compile-only */
		remove(svg);
		fprintf(stderr, "tessera-tutorial: --plot: no step was timed, so there is no chart\n");
		return 0;
	}
	plot_base(svg, base, sizeof(base));
	if (write_plot_files(name, rep, svg, base))
		return 1;
	if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
		remove(svg); /* the empty file that proved it writable */
		fprintf(stderr,
			"tessera-tutorial: gnuplot is not installed; wrote %s.dat and %s.gp: "
			"draw %s with `gnuplot '%s.gp'`\n",
			base, base, svg, base);
		return 0;
	}
	snprintf(cmd, sizeof(cmd), "gnuplot '%s.gp'", base);
	if (system(cmd) != 0)
		return fprintf(stderr, "tessera-tutorial: gnuplot '%s.gp' failed\n", base), 1;
	fprintf(stderr, "tessera-tutorial: drew %s (data in %s.dat)\n", svg, base);
	return 0;
}

int main(int argc, char **argv)
{
	const tutorial *t = NULL;
	tut_opts o;
	int status = parse_args(argc, argv, &t, &o);
	if (status >= 0)
		return status;
	/* after parsing: it may restart the process, which would parse again */
	if (t == &tut_gemm)
		bench_fair_openblas(argv);
	tut_report rep = {0};
	int rc = t->run(&o, &rep);
	if (rc == 0 && o.plot)
		rc = plot(t->name, &rep, o.plot);
	else if (o.plot)
		remove(o.plot); /* nothing to draw: no empty chart left behind */
	ts_threadpool_shutdown();
	return rc;
}
