/*
 * graph_ref.h - graphs for the graph-layer tests, with ground truth: every
 * node added through tg_node is also recorded here, and tg_check evaluates
 * the graph with plain loops in double precision (numpy semantics, no
 * fusion, no layouts) on random inputs and compares the compiled
 * executable's outputs with it.
 */
#ifndef TESSERA_TESTS_GRAPH_REF_H
#define TESSERA_TESTS_GRAPH_REF_H

#include "graph.h"

typedef struct tg tg;

tg *tg_new(ts_ctx *ctx, uint64_t seed);
void tg_free(tg *t);
ts_graph *tg_graph(tg *t);
/* An input, a constant of random values in [lo, hi], a node (-1 on error,
 * the message in the context), an output. */
int tg_input(tg *t, const char *name, int ndim, const int64_t *shape);
int tg_const(tg *t, const char *name, int ndim, const int64_t *shape, double lo, double hi);
/* A constant holding data (copied). */
int tg_const_data(tg *t, const char *name, int ndim, const int64_t *shape, const float *data);
int tg_node(tg *t, const char *name, ts_gop op, int nin, const int *in, const ts_gattrs *a);
void tg_output(tg *t, int v);
/* ts_graph_output with a name; the first 16 outputs are compared. */
ts_status tg_output_named(tg *t, int v, const char *name);

/* Evaluates every node into the reference values; with round_f32 each
 * node's result is rounded to float32 (the precision of the compiled
 * graph's intermediates: the two evaluations differing shows a value that
 * float32 does not determine), and GELU, whose 1 + erf cancels inside the
 * node, is computed in float32.  tg_value: the reference values of value v
 * (inputs and constants as given), NULL for a value the reference does
 * not hold. */
void tg_eval(tg *t, bool round_f32);
const double *tg_value(const tg *t, int v);

/* Compiles with opts, runs on random inputs and returns the largest
 * max |out - ref| / max(1, max |ref|) over the outputs; -1 when compiling
 * or running fails (the error is in the context).  *e_out, when not NULL,
 * receives the executable (the caller frees it). */
double tg_check(tg *t, const ts_graph_opts *opts, ts_graph_exec **e_out);

#endif
