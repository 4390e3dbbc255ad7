/*
 * graph_internal.h - the graph's tables, shared by the builder (graph.c),
 * the passes (graph_passes.c), the kernel builder (graph_kernels.c) and the
 * executable (graph_exec.c).
 */
#ifndef TESSERA_FRONTEND_GRAPH_INTERNAL_H
#define TESSERA_FRONTEND_GRAPH_INTERNAL_H

#include <pthread.h>

#include "build.h"
#include "graph.h"

typedef enum gv_kind { GV_INPUT, GV_CONST, GV_NODE } gv_kind;

typedef struct gvalue {
	char *name;           /* malloc'd */
	gv_kind kind;
	ts_dtype dtype;
	int ndim;
	int64_t shape[TS_GRAPH_MAX_DIMS];
	int node;             /* GV_NODE: the producer */
	void *data;           /* GV_CONST: malloc'd, row-major */
	bool is_output;
} gvalue;

typedef struct gnode {
	char *name;           /* malloc'd */
	ts_gop op;
	int nin;
	int in[TS_GRAPH_MAX_INPUTS];
	int out;
	ts_gattrs a;
} gnode;

struct ts_graph {
	ts_ctx *ctx;
	gvalue *v;
	int nv, capv;
	gnode *n;
	int nn, capn;
	int *in, nin, capin;  /* graph inputs, in order */
	int *out, nout, capout;
};

int64_t gv_numel(const gvalue *v);
/* Grows *p (n used of *cap elements of size elem) to hold one more; false
 * when out of memory (*p unchanged). */
bool g_grow(void **p, int n, int *cap, size_t elem);
/* "[1, 64, 56, 56]" in a static-free arena string. */
const char *g_shape_str(ts_ctx *ctx, int ndim, const int64_t *shape);
/* Whether op is elementwise (numpy broadcasting, one output element from
 * the inputs' elements at the same logical index). */
bool g_is_elementwise(ts_gop op);
/* The output shape of op on in[] (checked); false with an error naming
 * the node. */
bool g_infer(ts_graph *g, const char *node, ts_gop op, int nin, const int *in,
	     const ts_gattrs *a, int *ndim, int64_t *shape);

#endif

/* ---- compiling (graph_passes.c, graph_kernels.c, graph_exec.c) ------------------- */

/* A copy of g whose nodes the passes rewrite (constants copied). */
ts_graph *g_clone(const ts_graph *g);

/* Node flags the passes set (gnode.a stays as imported). */
typedef struct gnode_state {
	bool dead;            /* removed by a pass */
	bool affine;          /* a BatchNormalization rewritten to x * in[1] + in[2] */
	int group;            /* its kernel group, -1 before fusion */
} gnode_state;

/* One kernel's worth of nodes: an anchor (or none: an elementwise chain)
 * and the elementwise nodes fused into its output, in order. */
typedef struct ggroup {
	int anchor;           /* node, or -1 */
	int nreg;
	int reg[64];          /* fused elementwise nodes */
	int out;              /* the value the group produces */
} ggroup;

typedef struct gpass {
	ts_graph *g;
	gnode_state *ns;      /* per node */
	int *uses;            /* per value: live consumers */
	ggroup *groups;
	int ngroups;
	FILE *trace;
	int folded, fused;
} gpass;

/* Constant folding (BatchNormalization into Conv or into an affine
 * elementwise node) and dead-node removal. */
ts_status g_pass_fold(gpass *p);
/* Groups the live nodes into kernels; no_fuse: one node per group. */
ts_status g_pass_fuse(gpass *p, bool no_fuse);
ts_status g_count_uses(gpass *p);

/* Live ranges [first, last] of n buffers of size[i] bytes in kernel
 * steps; fills offset[i] (64-byte aligned) and returns the arena size. */
int64_t g_plan_memory(int n, const int64_t *size, const int *first, const int *last,
		      int64_t *offset);

/* ---- the executable ------------------------------------------------------------------ */

/* A value at run time.  Logical shape as in the graph; stored row-major
 * (block 0) or, for 4-D values, as NCHW[block]c. */
typedef struct xval {
	const char *name;
	int ndim;
	int64_t shape[TS_GRAPH_MAX_DIMS];
	int block;
	int base;             /* -1, or the value whose storage this view shares */
	bool over;            /* base set because this value is written over it
			       * (a residual sum in place), not a view */
	bool is_const;
	float *data;          /* set at compile time (constants, planned buffers) */
	int64_t bytes;
	float scalar;         /* constants of one element */
} xval;

#define G_MAX_ARGS 32

typedef struct xarg {
	int val;
	int ndim;
	int64_t shape[TS_MAX_DIMS];
	ts_array *arr;
} xarg;

typedef struct xkernel {
	const char *desc;     /* its nodes, for printing */
	struct ts_tune_task *task; /* a convolution's tuning task, or NULL */
	const char *tuned;    /* "LOG:LINE" of the record that scheduled it, or NULL */
	int64_t rows_as_one;  /* a convolution's rows viewed as one row
			       * (gx_conv_row_width), or 0 */
	const char *key;      /* equal keys: the same code */
	const ts_func *func;  /* its lowered code, when it owns its module */
	ts_module *mod;       /* set by gx_build_all */
	bool owns_mod;
	int same_as;          /* the kernel whose module it shares, when not */
	int nargs;            /* inputs, then the output */
	xarg arg[G_MAX_ARGS];
} xkernel;

struct ts_graph_exec {
	ts_ctx *ctx;
	xval *xv;
	int nxv, capxv;
	xkernel *k;
	int nk, capk;
	int nin, nout;
	int *in, *out;        /* xvals of the graph's inputs and outputs */
	void *arena;
	ts_graph_stats st;
	const struct ts_tune_log *tuned; /* while compiling: ts_graph_opts.tuned */
	/* runs share the arena: two threads' runs take turns */
	pthread_mutex_t lock;
	bool lock_made;
};

/* Memory for weights and the arena: 64-byte aligned, large blocks on
 * 2 MB pages (madvise); freed with free(). */
void *g_alloc(size_t bytes);
/* A new xval (zeroed, base -1); -1 on no memory. */
int gx_new_value(ts_graph_exec *e, const char *name, int ndim, const int64_t *shape, int block);
/* Builds the modules of every kernel planned (ts_build_all: on several
 * threads) and hands each kernel that shares code its module. */
ts_status gx_build_all(ts_graph_exec *e);
/* Builds kernel k's code for group gr: its tensors on placeholders of the
 * xvals gv2x names, its schedule and ts_lower (gx_build_all builds it), or
 * the code of an earlier kernel with the same key.  k->arg gets the
 * arguments, the output last. */
ts_status gx_build_group(ts_graph_exec *e, ts_graph *g, const gpass *p, const ggroup *gr,
			 const int *gv2x, xkernel *k);
/* The same for a layout conversion of xval from into xval to. */
ts_status gx_build_conversion(ts_graph_exec *e, int from, int to, xkernel *k);
/* The xval whose storage x uses: x itself, or the one it is a view of or
 * is written over (xval.base; bases are never chained). */
int gx_root(const ts_graph_exec *e, int x);
/* The physical shape of xval v (blocked: [N, C/b, H, W, b]). */
int gx_phys_shape(const xval *v, int64_t *shape);
/* Channel block of a conv node's input when the producer's block does
 * not divide (host vector width). */
int64_t gx_conv_in_block(int64_t channels, int producer_block);
/* The columns of the rows blocked conv node n's kernel runs over, its
 * input in channel blocks of in_block (ts_conv2d_cpu_row_width_for): a
 * multiple of its output's rows when several are viewed as one; its
 * output block is chosen for that row. */
int64_t gx_conv_row_width(const ts_graph *g, const gnode *n, int64_t in_block);
/* Whether conv node n is depthwise (group = input channels = output
 * channels), and its channel block: the producer's when it divides and is
 * at most two vectors, else one vector or the largest power of two below
 * that divides. */
bool gx_is_depthwise(const ts_graph *g, const gnode *n);
int64_t gx_depthwise_block(int64_t channels, int producer_block);
