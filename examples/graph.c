/*
 * graph.c - the README's second worked example: a whole model through the
 * graph layer (graph.h).  It builds a small convolutional network by hand
 * with random weights,
 *
 *   x[1, 3, 32, 32] -> Conv 3x3 -> BatchNormalization -> Relu -> MaxPool 2x2
 *     -> Conv 3x3 (+ bias) -> Relu -> GlobalAveragePool -> Flatten -> Gemm -> [1, 10]
 *
 * prints the graph, compiles it with the passes' trace on stdout, prints
 * the kernels and what compiling did, runs it on a random input, and checks
 * the output against the same graph compiled with one kernel per node and
 * no layout planning.
 *
 *   build/graph               the network above
 *   build/graph MODEL.onnx    an ONNX model instead (ts_onnx_load), on
 *                             random inputs of its input shapes
 *
 * Exit status: 0 done, 1 a step failed (the message on stderr), 2 a bad
 * command line.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera.h"

static int usage(FILE *f, int rc)
{
	fprintf(f, "usage: graph [MODEL.onnx]\n"
		   "  Builds a small CNN with the graph API (or imports MODEL.onnx), prints it,\n"
		   "  compiles it with the passes' trace, runs it on random inputs and checks\n"
		   "  the output against an unfused build of the same graph.\n");
	return rc;
}

/* A float32 constant of uniform random values in [lo, hi]; -1 on error.
 * ts_graph_constant copies the data, so the array is freed at once. */
static int random_constant(ts_graph *g, const char *name, int ndim, const int64_t *shape,
			   uint64_t seed, double lo, double hi)
{
	ts_array *a = ts_array_new(ts_graph_ctx(g), ts_float32, ndim, shape);
	if (!a)
		return -1;
	ts_array_fill_random(a, seed, lo, hi);
	int v = ts_graph_constant(g, name, ts_float32, ndim, shape, a->data);
	ts_array_free(a);
	return v;
}

/* The network of the header comment.  Every call is made even after one
 * fails: a node given -1 is refused, and the context keeps the first
 * error, so one check at the end reports what went wrong first. */
static ts_graph *build_network(ts_ctx *ctx)
{
	ts_graph *g = ts_graph_new(ctx);
	if (!g)
		return NULL;
	int x = ts_graph_input(g, "x", ts_float32, TS_SHAPE(1, 3, 32, 32));

	/* conv1 (no bias) and a batch norm, which compiling folds into
	 * conv1's weights and a bias */
	ts_gattrs same = ts_gattrs_default(); /* stride 1, no padding, group 1 */
	same.pad[0] = same.pad[1] = same.pad[2] = same.pad[3] = 1;
	int w1 = random_constant(g, "conv1.weight", TS_SHAPE(16, 3, 3, 3), 1, -0.5, 0.5);
	int c1 = ts_graph_node(g, "conv1", TS_GOP_CONV, 2, (int[]){x, w1}, &same);
	ts_gattrs bn = ts_gattrs_default(); /* epsilon 1e-5 */
	int bn_in[5] = {c1, random_constant(g, "bn1.scale", TS_SHAPE(16), 2, 0.8, 1.2),
			random_constant(g, "bn1.bias", TS_SHAPE(16), 3, -0.1, 0.1),
			random_constant(g, "bn1.mean", TS_SHAPE(16), 4, -0.1, 0.1),
			random_constant(g, "bn1.var", TS_SHAPE(16), 5, 0.5, 1.5)};
	int b1 = ts_graph_node(g, "bn1", TS_GOP_BATCHNORM, 5, bn_in, &bn);
	int r1 = ts_graph_node(g, "relu1", TS_GOP_RELU, 1, &b1, NULL);

	ts_gattrs pool = ts_gattrs_default();
	pool.kernel[0] = pool.kernel[1] = 2;
	pool.stride[0] = pool.stride[1] = 2;
	int p1 = ts_graph_node(g, "pool1", TS_GOP_MAXPOOL, 1, &r1, &pool);

	/* conv2 with a bias; the relu after it is fused into its kernel */
	int w2 = random_constant(g, "conv2.weight", TS_SHAPE(32, 16, 3, 3), 6, -0.1, 0.1);
	int bias2 = random_constant(g, "conv2.bias", TS_SHAPE(32), 7, -0.1, 0.1);
	int c2 = ts_graph_node(g, "conv2", TS_GOP_CONV, 3, (int[]){p1, w2, bias2}, &same);
	int r2 = ts_graph_node(g, "relu2", TS_GOP_RELU, 1, &c2, NULL);

	/* the classifier: [1, 32, 16, 16] -> [1, 32, 1, 1] -> [1, 32] -> [1, 10] */
	int gap = ts_graph_node(g, "gap", TS_GOP_GLOBALAVGPOOL, 1, &r2, NULL);
	ts_gattrs flat = ts_gattrs_default();
	flat.axis = 1;
	int f = ts_graph_node(g, "flatten", TS_GOP_FLATTEN, 1, &gap, &flat);
	ts_gattrs fc = ts_gattrs_default(); /* alpha = beta = 1 */
	fc.trans_b = true;                  /* W is [out, in], as exporters write it */
	int wf = random_constant(g, "fc.weight", TS_SHAPE(10, 32), 8, -0.3, 0.3);
	int bf = random_constant(g, "fc.bias", TS_SHAPE(10), 9, -0.1, 0.1);
	int y = ts_graph_node(g, "fc", TS_GOP_GEMM, 3, (int[]){f, wf, bf}, &fc);

	if (ts_graph_output(g, y, "logits") != TS_OK) {
		ts_graph_free(g);
		return NULL;
	}
	return g;
}

/* Arrays for the graph's inputs (random) and outputs, in the graph's order. */
typedef struct io {
	int nin, nout;
	ts_array **in, **out, **check;
} io;

static void io_free(io *b)
{
	for (int i = 0; b->in && i < b->nin; i++)
		ts_array_free(b->in[i]);
	for (int i = 0; b->out && b->check && i < b->nout; i++) {
		ts_array_free(b->out[i]);
		ts_array_free(b->check[i]);
	}
	free(b->in);
	free(b->out);
	free(b->check);
}

/* An array of value v's shape; NULL with the error in ctx. */
static ts_array *array_of(ts_ctx *ctx, const ts_graph *g, int v)
{
	int ndim;
	int64_t shape[TS_GRAPH_MAX_DIMS];
	if (!ts_graph_value_shape(g, v, &ndim, shape))
		return NULL;
	return ts_array_new(ctx, ts_float32, ndim, shape);
}

static ts_status io_new(ts_ctx *ctx, const ts_graph *g, io *b)
{
	b->nin = ts_graph_num_inputs(g);
	b->nout = ts_graph_num_outputs(g);
	b->in = calloc((size_t)b->nin + 1, sizeof(ts_array *));
	b->out = calloc((size_t)b->nout + 1, sizeof(ts_array *));
	b->check = calloc((size_t)b->nout + 1, sizeof(ts_array *));
	if (!b->in || !b->out || !b->check)
		return ts_error(ctx, TS_ERR_NOMEM, "graph: out of memory");
	for (int i = 0; i < b->nin; i++) {
		if (!(b->in[i] = array_of(ctx, g, ts_graph_input_value(g, i))))
			return ts_last_status(ctx);
		ts_array_fill_random(b->in[i], 100 + (uint64_t)i, -1, 1);
	}
	for (int i = 0; i < b->nout; i++)
		if (!(b->out[i] = array_of(ctx, g, ts_graph_output_value(g, i))) ||
		    !(b->check[i] = array_of(ctx, g, ts_graph_output_value(g, i))))
			return ts_last_status(ctx);
	return TS_OK;
}

static void print_stats(const ts_graph_exec *e)
{
	ts_graph_stats s = ts_graph_exec_stats(e);
	printf("compiled in %.1f ms (fold %.1f, fuse %.1f, layout %.1f, memory %.1f, codegen %.1f)\n",
	       s.total_ms, s.fold_ms, s.fuse_ms, s.layout_ms, s.memory_ms, s.codegen_ms);
	printf("%d nodes -> %d kernels (%d compiled); %d fused, %d folded, %d layout conversions\n",
	       s.nodes, s.kernels, s.modules, s.fused_nodes, s.folded_nodes, s.conversions);
	printf("intermediates: %.1f kB in one arena (%.1f kB without reuse); weights %.1f kB\n",
	       (double)s.arena_bytes / 1e3, (double)s.unplanned_bytes / 1e3, (double)s.constant_bytes / 1e3);
}

/* Prints each output's first values; returns the largest
 * max |out - check| / max(1, max |check|) over the outputs. */
static double report(const ts_graph *g, const io *b)
{
	double worst = 0;
	for (int i = 0; i < b->nout; i++) {
		const float *y = b->out[i]->data, *c = b->check[i]->data;
		int64_t n = ts_array_numel(b->out[i]);
		double diff = 0, scale = 1;
		bool nan = false; /* fmax ignores NaN: count it apart */
		for (int64_t k = 0; k < n; k++) {
			double d = fabs((double)y[k] - c[k]);
			nan |= isnan(d);
			diff = fmax(diff, d);
			scale = fmax(scale, fabs((double)c[k]));
		}
		worst = fmax(worst, nan ? INFINITY : diff / scale);
		printf("output '%s':", ts_graph_value_name(g, ts_graph_output_value(g, i)));
		for (int64_t k = 0; k < n && k < 6; k++)
			printf(" %.4f", y[k]);
		printf("%s\n", n > 6 ? " ..." : "");
	}
	return worst;
}

int main(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))
		return usage(stdout, 0);
	if (argc > 1 && argv[1][0] == '-')
		return fprintf(stderr, "graph: unknown option '%s'\n", argv[1]), usage(stderr, 2);
	if (argc > 2)
		return fprintf(stderr, "graph: unexpected argument '%s'\n", argv[2]), usage(stderr, 2);

	ts_ctx *ctx = ts_ctx_new();
	ts_graph_exec *e = NULL, *plain = NULL;
	io b = {0};
	int rc = 1;

	/* 1. the graph: built by hand, or imported */
	ts_graph *g = argc > 1 ? ts_onnx_load(ctx, argv[1]) : build_network(ctx);
	if (!g)
		goto out;
	ts_graph_print(stdout, g);

	/* 2. compile: fold, fuse, layout, memory, codegen, each printing what
	 * it did; then the kernels in the order they run */
	printf("\n");
	ts_graph_opts opts = {.trace = stdout};
	if (!(e = ts_graph_compile(g, &opts)))
		goto out;
	ts_graph_exec_print(stdout, e);
	print_stats(e);

	/* 3. the same graph without fusion or layouts, for comparison */
	ts_graph_opts unfused = {.no_fuse = true, .no_layout = true};
	if (!(plain = ts_graph_compile(g, &unfused)))
		goto out;

	/* 4. run both on the same random inputs */
	if (io_new(ctx, g, &b) != TS_OK ||
	    ts_graph_run(e, b.nin, b.in, b.nout, b.out) != TS_OK ||
	    ts_graph_run(plain, b.nin, b.in, b.nout, b.check) != TS_OK)
		goto out;
	printf("\n");
	double err = report(g, &b);
	printf("max |fused - unfused| / max(1, max |unfused|) = %.2e\n", err);
	if (err <= 1e-4)
		rc = 0;
	else
		fprintf(stderr, "graph: the fused and unfused kernels disagree (%.2e)\n", err);
out:
	if (rc && ts_last_status(ctx) != TS_OK)
		fprintf(stderr, "graph: %s\n", ts_last_error(ctx));
	io_free(&b);
	ts_graph_exec_free(e);
	ts_graph_exec_free(plain);
	ts_graph_free(g);
	ts_ctx_free(ctx);
	ts_threadpool_shutdown();
	return rc;
}
