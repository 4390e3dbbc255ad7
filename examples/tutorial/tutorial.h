/*
 * tutorial.h - what the tutorials of tessera-tutorial share.
 *
 * A tutorial is a list of steps over one computation; each step is a
 * schedule function with the text a reader sees (its name, why it is
 * faster, the calls it adds as C code).  The driver (tutorial.c) parses the
 * command line and calls the tutorial's run function, which builds, checks,
 * prints and times each step (tut_run_cpu does that for the CPU tutorials;
 * gemm checks against OpenBLAS and gpu against the loop-IR interpreter).
 *
 * With --golden nothing measured is printed (no times, ratios, thread
 * counts or CPU names) and vector widths are fixed (TUT_GOLDEN_LANES), so
 * the output is the same on every x86-64 machine; the tutorial_*_golden
 * tests compare it with tests/golden/tutorial_<name>.txt.
 */
#ifndef TESSERA_EXAMPLES_TUTORIAL_H
#define TESSERA_EXAMPLES_TUTORIAL_H

#include <stdbool.h>
#include <stdint.h>

#include "tessera.h"
#include "lower.h"

#define TUT_MAX_STEPS 16
#define TUT_MAX_ARGS 8
/* The vector lanes of the steps with --golden: what AVX2 holds in one
 * register, and what every x86-64 machine that runs CI can compile. */
#define TUT_GOLDEN_LANES 8

typedef struct tut_opts {
	int64_t size;     /* the tutorial's size parameter (see its help) */
	int threads;      /* threads of the parallel steps */
	int lines;        /* lines of loop IR (and of each nest) shown */
	int only;         /* the one step to run, -1 for all */
	bool golden;      /* print nothing measured; fixed vector widths */
	const char *plot; /* the SVG chart to draw, NULL for none */
} tut_opts;

/* The measured steps, for the ratios and the chart. */
typedef struct tut_report {
	const char *unit; /* "GFLOP/s" or "GB/s" */
	int n;
	const char *name[TUT_MAX_STEPS];
	double ms[TUT_MAX_STEPS], rate[TUT_MAX_STEPS];
} tut_report;

typedef struct tutorial {
	const char *name;
	const char *about; /* the --help paragraph: what it shows, what the size means */
	int64_t default_size, max_size;
	const int *nsteps;
	const char *(*step_name)(int i);
	/* Runs the selected steps; 0, or 1 after printing what failed. */
	int (*run)(const tut_opts *o, tut_report *rep);
} tutorial;

extern const tutorial tut_gemm, tut_blur, tut_softmax, tut_conv, tut_gpu;

/* ---- steps of the CPU tutorials ---------------------------------------------- */

/* One step's computation: its own context, the function's arguments
 * (inputs, then the output) and their schedule. */
typedef struct tut_graph {
	ts_ctx *ctx;
	ts_schedule *s;
	int nargs;
	ts_tensor *args[TUT_MAX_ARGS];
	int64_t n;     /* the size */
	int lanes;     /* the vector lanes of the steps */
	int lines;     /* as in tut_opts, for the steps that print nests */
	bool parallel; /* set by a step that runs on the thread pool */
} tut_graph;

typedef struct tut_step {
	const char *name, *why, *code;
	/* Schedules g (and, for the steps that change the computation, sets
	 * it up: see tut_cpu.make); an error status leaves the message in
	 * g->ctx. */
	ts_status (*apply)(tut_graph *g);
} tut_step;

typedef struct tut_cpu {
	const char *name;
	const tut_step *steps;
	int nsteps;
	/* Builds step i's computation in g (ctx, n, lanes set) and its
	 * schedule; false with the error in g->ctx. */
	bool (*make)(tut_graph *g, int step);
	/* The header line (after "tessera-tutorial NAME: ", without the
	 * newline), the work of one call (floating-point operations or bytes)
	 * and its unit. */
	void (*describe)(const tut_graph *g);
	double (*work)(const tut_graph *g);
	const char *unit;
	/* Prints what a step shows beyond its loop IR (may be NULL). */
	void (*explain)(tut_graph *g, const ts_func *f);
	/* Checks step i beyond its result (may be NULL): 0 or 1. */
	int (*verify)(tut_graph *g, int step, const ts_func *f);
} tut_cpu;

/* Builds, checks against ts_eval, prints and (without --golden) times each
 * selected step of t. */
int tut_run_cpu(const tut_cpu *t, const tut_opts *o, tut_report *rep);

/* ---- printing ------------------------------------------------------------------- */

/* The vector lanes of the steps: TUT_GOLDEN_LANES with --golden, else one
 * register of float32 on this CPU (16 with AVX-512, else 8). */
int tut_lanes(const tut_opts *o);
/* At most max_lines of text, then how many were left out. */
void tut_print_head(const char *text, int max_lines);
/* "== step i: name ==", why, and the code in a C block. */
void tut_print_step(int idx, const char *name, const char *why, const char *code);
/* The lowered loop IR, its head. */
void tut_print_ir(const ts_func *f, int lines);
/* Records a measured step and prints its line, without the newline: the
 * median time, the rate (work per second in the report's unit), the ratios
 * to the previous and the first measured step, the threads. */
void tut_report_step(tut_report *rep, const char *name, double seconds, double work,
		     int threads);
/* Largest difference relative to the largest magnitude of the reference. */
double tut_max_rel_err(const float *got, const float *want, int64_t n);
/* A median time of m, repeated so that the whole takes about a second. */
ts_status tut_time(ts_module *m, int nargs, ts_array *const *args, double *seconds);

#endif
