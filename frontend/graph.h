/*
 * graph.h - whole models: a graph of operators from the operator library,
 * compiled into a sequence of fused kernels and run.
 *
 * A graph holds values (inputs, constants, node outputs) named by small
 * integers.  Each node is one operator with ONNX-like semantics (numpy
 * broadcasting for elementwise operators, NCHW images); its output shape
 * is inferred when the node is added, and a bad node is refused there with
 * an error naming the node, the operator and the shapes:
 *   "node 'conv3' (Conv): input channels differ: X[1, 64, 56, 56], W[128, 32, 3, 3]"
 *
 *   ts_graph *g = ts_graph_new(ctx);
 *   int x = ts_graph_input(g, "x", ts_float32, TS_SHAPE(1, 3, 224, 224));
 *   int w = ts_graph_constant(g, "w", ts_float32, TS_SHAPE(64, 3, 7, 7), data);
 *   ts_gattrs a = ts_gattrs_default();
 *   a.stride[0] = a.stride[1] = 2;  a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 3;
 *   int y = ts_graph_node(g, "conv1", TS_GOP_CONV, 2, (int[]){x, w}, &a);
 *   int r = ts_graph_node(g, "relu1", TS_GOP_RELU, 1, &y, NULL);
 *   ts_graph_output(g, r, "y");
 *   ts_graph_exec *e = ts_graph_compile(g, NULL);
 *   ts_graph_run(e, 1, &in, 1, &out);
 *
 * ts_graph_compile (graph.c, graph_passes.c) runs, in order and printing
 * what each did when opts->trace is set:
 *   fold       constant folding: a BatchNormalization after a Conv is
 *              folded into its weights and bias, any other becomes a
 *              per-channel multiply-add; nodes whose values nothing reads
 *              are removed.
 *   fuse       operator fusion: each anchor whose output tile can take
 *              more work (conv, matmul, pooling, transpose, concat) takes
 *              the elementwise nodes that follow it (bias, residual add,
 *              relu, an exported GELU's five nodes, ...) as long as they
 *              close on one value; elementwise chains without an anchor
 *              become one kernel.  Softmax and LayerNormalization are
 *              kernels of their own.
 *   layout     layout planning: convolutions run on NCHW[x]c and their
 *              outputs stay blocked through elementwise nodes, pooling and
 *              the next convolution; a conversion is placed only where a
 *              consumer needs NCHW.
 *   memory     memory planning: intermediate values share one arena by
 *              lifetime; reports the arena's size against the sum.  A
 *              convolution whose fused epilogue adds a residual that
 *              nothing reads afterwards (of its output's shape and
 *              layout, not read by the convolution itself) writes its
 *              sum over that residual, in place, as ONNX Runtime's Sum
 *              fusion does: one buffer's traffic less, and a chain of
 *              residual blocks passes one buffer on.
 *   codegen    each kernel lowered and built for the host CPU (identical
 *              kernels built once).  Reshape, Flatten and Identity of a
 *              row-major value are views of its storage: no kernel.
 *
 * Values are float32 (int64 constants are accepted by ts_graph_constant
 * for importers, but no node takes one: ONNX's Reshape shape becomes the
 * attribute).  Every value has at most 2^31 - 1 elements and node outputs
 * at least one dimension; window attributes (kernel, stride, pad,
 * dilation, group) fit in 32 bits.  Everything allocated belongs to the
 * graph or the executable; both are freed by their free functions, and
 * hold a reference to the context.
 */
#ifndef TESSERA_FRONTEND_GRAPH_H
#define TESSERA_FRONTEND_GRAPH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "array.h"
#include "te.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TS_GRAPH_MAX_DIMS 6
#define TS_GRAPH_MAX_INPUTS 16

typedef enum ts_gop {
	/* anchors */
	TS_GOP_CONV,          /* X[N,C,H,W], W[O,C/group,KH,KW] (, B[O]) */
	TS_GOP_GEMM,          /* ONNX Gemm: alpha * A' B' + beta * C, A', B' 2-D */
	TS_GOP_MATMUL,        /* numpy matmul: 2-D or batched (broadcast batch);
			       * one 1-D operand becomes Reshape views around
			       * a MatMul of matrices (nodes NAME.a2d or
			       * NAME.b2d, NAME.2d, then NAME) */
	TS_GOP_MAXPOOL,       /* kernel, stride, pad, dilation 1 */
	TS_GOP_AVGPOOL,       /* kernel, stride, pad, count_include_pad */
	TS_GOP_GLOBALAVGPOOL, /* [N,C,H,W] -> [N,C,1,1] */
	TS_GOP_SOFTMAX,       /* over `axis` (the last axis only) */
	TS_GOP_LAYERNORM,     /* X, scale (, bias) over the last axis; epsilon */
	TS_GOP_BATCHNORM,     /* X, scale, bias, mean, var (constants); epsilon (inference) */
	TS_GOP_TRANSPOSE,     /* perm */
	TS_GOP_CONCAT,        /* axis */
	/* views: no kernel on a plain layout */
	TS_GOP_RESHAPE,       /* shape (0 copies the input's extent, one -1 is inferred) */
	TS_GOP_FLATTEN,       /* axis: [d0..d(axis-1)] x [the rest] */
	TS_GOP_IDENTITY,      /* Identity, Dropout at inference */
	/* elementwise, numpy broadcasting */
	TS_GOP_ADD,
	TS_GOP_SUB,
	TS_GOP_MUL,
	TS_GOP_DIV,
	TS_GOP_POW,
	TS_GOP_RELU,
	TS_GOP_SIGMOID,
	TS_GOP_TANH,
	TS_GOP_ERF,
	TS_GOP_SQRT,
	TS_GOP_EXP,
	TS_GOP_NEG,
	TS_GOP_GELU,          /* approximate: the tanh form */
	TS_GOP_CLIP,          /* [lo, hi] = [alpha, beta]; lo > hi: every element is hi (ONNX) */
	TS_GOP_COUNT
} ts_gop;

/* The operator's name as ONNX spells it ("Conv", "MatMul", ...). */
const char *ts_gop_name(ts_gop op);

/* Attributes; ts_gattrs_default() gives ONNX's defaults. */
typedef struct ts_gattrs {
	int64_t kernel[2];   /* pooling window (KH, KW) */
	int64_t stride[2];
	int64_t pad[4];      /* top, left, bottom, right */
	int64_t dilation[2];
	int64_t group;
	int64_t axis;        /* softmax, concat, flatten, layernorm; may be < 0 */
	int nperm;           /* transpose; 0: reverse the dimensions */
	int64_t perm[TS_GRAPH_MAX_DIMS];
	int nshape;          /* reshape target */
	int64_t shape[TS_GRAPH_MAX_DIMS];
	bool trans_a, trans_b, count_include_pad, approximate;
	double alpha, beta;  /* Gemm scale factors; Clip bounds */
	double epsilon;
} ts_gattrs;

ts_gattrs ts_gattrs_default(void);

typedef struct ts_graph ts_graph;

ts_graph *ts_graph_new(ts_ctx *ctx);
void ts_graph_free(ts_graph *g);
ts_ctx *ts_graph_ctx(const ts_graph *g);

/* Each returns the new value (>= 0), or -1 with the error in the context.
 * Names must be unique among inputs and outputs; constants' data is
 * copied (float32 or int64, `numel` elements in row-major order). */
int ts_graph_input(ts_graph *g, const char *name, ts_dtype dtype, int ndim, const int64_t *shape);
int ts_graph_constant(ts_graph *g, const char *name, ts_dtype dtype, int ndim,
		      const int64_t *shape, const void *data);
/* attrs NULL: the defaults.  Inputs are earlier values. */
int ts_graph_node(ts_graph *g, const char *name, ts_gop op, int ninputs, const int *inputs,
		  const ts_gattrs *attrs);
/* Marks value as an output of the graph, in the order of the calls;
 * name (NULL or "": the value's own) becomes the value's name.  An input
 * keeps its name: an output of another name takes an Identity node on
 * it. */
ts_status ts_graph_output(ts_graph *g, int value, const char *name);

/* What a value is; false for a value that does not exist. */
bool ts_graph_value_shape(const ts_graph *g, int value, int *ndim, int64_t *shape);
int ts_graph_num_inputs(const ts_graph *g);
int ts_graph_num_outputs(const ts_graph *g);
int ts_graph_num_nodes(const ts_graph *g);
/* The i-th input / output value, -1 when i is out of range. */
int ts_graph_input_value(const ts_graph *g, int i);
int ts_graph_output_value(const ts_graph *g, int i);
const char *ts_graph_value_name(const ts_graph *g, int value);

/* One line per node: "%7 = Conv(%0, %1, %2) stride=2x2 pad=3,3,3,3 -> [1, 64, 112, 112]". */
void ts_graph_print(FILE *f, const ts_graph *g);

/* ---- compiling and running ------------------------------------------------------ */

struct ts_tune_log;
struct ts_tune_task;

typedef struct ts_graph_opts {
	FILE *trace;          /* what each pass did, and the kernels; NULL: quiet */
	bool no_fuse;         /* one kernel per node (for comparisons) */
	bool no_layout;       /* convolutions convert to and from NCHW each */
	/* a tuning log (tune.h ts_tune_log_load), read while compiling: a
	 * convolution on NCHW[x]c with a record for its "conv2d" task (one
	 * group, square kernel, one stride and one pad for both dimensions,
	 * no dilation) takes the record's register blocks, parallel and pad
	 * mode instead of the defaults; its channel blocks stay the graph's
	 * (the layout plan's).  A record the log refuses (another version,
	 * CPU or feature set) fails the compile with the log's message.
	 * NULL: the default schedules. */
	const struct ts_tune_log *tuned;
} ts_graph_opts;

typedef struct ts_graph_exec ts_graph_exec;

/* Compiles g for the host CPU; g may be freed afterwards.  NULL with the
 * error in g's context.  Like ts_lower, compiling (and running, below)
 * starts afresh: an error an earlier call left in the context is cleared. */
ts_graph_exec *ts_graph_compile(ts_graph *g, const ts_graph_opts *opts);
/* Runs the model: inputs and outputs in the graph's order, each a float32
 * array of exactly the value's shape (checked; an error names the
 * argument; outputs must not overlap one another, an input may be an
 * output).  Uses ts_num_threads() threads.  Runs of one executable share
 * its buffers, so calls from several threads take turns; compile one
 * executable per thread to run them at the same time. */
ts_status ts_graph_run(ts_graph_exec *e, int ninputs, ts_array *const *inputs, int noutputs,
		       ts_array *const *outputs);
void ts_graph_exec_free(ts_graph_exec *e);
/* Runs the model once to warm up and `repeat` times (1..10000) timing each
 * kernel; prints the kernels to f, slowest first, with their median time
 * and share of the sum. */
ts_status ts_graph_profile(ts_graph_exec *e, int ninputs, ts_array *const *inputs, int noutputs,
			   ts_array *const *outputs, int repeat, FILE *f);

typedef struct ts_graph_stats {
	double fold_ms, fuse_ms, layout_ms, memory_ms, codegen_ms, total_ms;
	int nodes;            /* nodes of the graph as given */
	int kernels;          /* kernels run per inference */
	int modules;          /* distinct kernels compiled */
	int fused_nodes;      /* nodes fused into another node's kernel */
	int folded_nodes;     /* nodes removed by constant folding */
	int conversions;      /* layout conversions run per inference */
	int tuned_kernels;    /* kernels a tuning log's record scheduled */
	int64_t arena_bytes;  /* intermediates after memory planning */
	int64_t unplanned_bytes; /* the sum of every intermediate's size */
	int64_t constant_bytes;  /* weights, after folding and repacking */
} ts_graph_stats;

ts_graph_stats ts_graph_exec_stats(const ts_graph_exec *e);
/* The kernels in order, one per line, with their nodes and layouts (and
 * "tuned LOG:LINE" for a convolution a log's record scheduled). */
void ts_graph_exec_print(FILE *f, const ts_graph_exec *e);
/* The tuning tasks of e's convolutions that a log can schedule (see
 * ts_graph_opts.tuned): "conv2d" at the layer's shape with the space's
 * ic_block and oc_block held at the graph's channel blocks, each distinct
 * task once, in kernel order.  Writes at most max of them to tasks (which
 * may be NULL when max is 0) and returns how many there are; -1 for a
 * NULL e, and with an error in e's context for a negative max or NULL
 * tasks with a positive max. */
int ts_graph_exec_tune_tasks(const ts_graph_exec *e, struct ts_tune_task *tasks, int max);

/* ---- ONNX (onnx.c) ---------------------------------------------------------------- */

/* Reads an .onnx file (protobuf; opsets 11-21 of the default domain) into
 * a graph.  Unsupported operators, attributes or data types are refused
 * with the node's name and op type; NULL with the error in ctx.  A device
 * (/dev/zero) and a file of 2 GiB or more (more than one protobuf message
 * holds; external data is not supported) are refused. */
ts_graph *ts_onnx_load(ts_ctx *ctx, const char *path);
/* The same from bytes in memory. */
ts_graph *ts_onnx_load_bytes(ts_ctx *ctx, const void *data, size_t size, const char *what);

#ifdef __cplusplus
}
#endif

#endif
