/*
 * graph_exec.c - compiling a graph into an executable and running it.
 *
 * ts_graph_compile copies the graph, folds and fuses it (graph_passes.c),
 * then lays the kernels out in order, choosing every value's layout as
 * it goes (the layout pass): a convolution's output is NCHW[x]c and stays
 * so through the elementwise nodes, pooling and convolutions after it; a
 * value is converted only where a consumer needs another layout, once per
 * value and layout.  Reshape, Flatten and Identity of a row-major value
 * are views: no kernel, the same storage.  Then memory planning puts
 * every intermediate in one arena by lifetime, and each kernel's
 * arguments are wrapped once, so a run is a loop of ts_module_run calls
 * between copying the inputs in and the outputs out.
 */
#include "graph_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "args.h"
#include "build.h"
#include "ctx.h"
#include "op_schedules.h"
#include "timer.h"
#include "tune.h"

int gx_new_value(ts_graph_exec *e, const char *name, int ndim, const int64_t *shape, int block)
{
	if (!g_grow((void **)&e->xv, e->nxv, &e->capxv, sizeof(*e->xv)))
		return ts_error(e->ctx, TS_ERR_NOMEM, "graph_compile: out of memory"), -1;
	xval *v = &e->xv[e->nxv];
	memset(v, 0, sizeof(*v));
	v->name = ts_strdup(e->ctx, name);
	v->ndim = ndim;
	memcpy(v->shape, shape, sizeof(int64_t) * (size_t)ndim);
	v->block = block;
	v->base = -1;
	int64_t n = 1;
	for (int d = 0; d < ndim; d++)
		n *= shape[d];
	v->bytes = n * (int64_t)sizeof(float);
	return e->nxv++;
}

static xkernel *new_kernel(ts_graph_exec *e, const char *desc)
{
	if (!g_grow((void **)&e->k, e->nk, &e->capk, sizeof(*e->k))) {
		ts_error(e->ctx, TS_ERR_NOMEM, "graph_compile: out of memory");
		return NULL;
	}
	xkernel *k = &e->k[e->nk];
	memset(k, 0, sizeof(*k));
	k->desc = desc;
	k->same_as = -1;
	return k;
}

void ts_graph_exec_free(ts_graph_exec *e)
{
	if (!e)
		return;
	if (e->lock_made)
		pthread_mutex_destroy(&e->lock);
	for (int i = 0; i < e->nk; i++) {
		if (e->k[i].owns_mod)
			ts_module_free(e->k[i].mod);
		for (int a = 0; a < e->k[i].nargs; a++)
			ts_array_free(e->k[i].arg[a].arr);
	}
	for (int i = 0; i < e->nxv; i++)
		if (e->xv[i].is_const && e->xv[i].base < 0)
			free(e->xv[i].data);
	free(e->xv);
	free(e->k);
	free(e->in);
	free(e->out);
	free(e->arena);
	ts_ctx_free(e->ctx);
	free(e);
}

/* ---- layout planning -------------------------------------------------------------- */

typedef struct planner {
	ts_graph_exec *e;
	ts_graph *g;
	gpass *p;
	const ts_graph_opts *o;
	int *gv2x;            /* graph value -> its xval */
	int nconv;
	struct conv_memo { int from, block, to; } memo[512];
} planner;

void *g_alloc(size_t bytes)
{
	/* Weights and the arena are streamed through every inference: on 2 MB
	 * pages, a megabytes-long weight tensor costs a few TLB entries
	 * instead of one per 4 KB. */
	size_t align = bytes >= ((size_t)1 << 20) ? (size_t)2 << 20 : TS_ARRAY_ALIGN;
	void *p = NULL;
	if (posix_memalign(&p, align, bytes ? bytes : 1))
		return NULL;
	if (align > TS_ARRAY_ALIGN)
		madvise(p, (bytes + align - 1) & ~(align - 1), MADV_HUGEPAGE);
	return p;
}

static float *aligned_copy(ts_graph_exec *e, const void *src, size_t bytes)
{
	void *p = g_alloc(bytes);
	if (!p) {
		ts_error(e->ctx, TS_ERR_NOMEM, "graph_compile: out of memory (%zu bytes)", bytes);
		return NULL;
	}
	memcpy(p, src, bytes);
	return p;
}

/* The xval of constant or input value v, made on first use. */
static int value_of(planner *pl, int v)
{
	if (pl->gv2x[v] >= 0)
		return pl->gv2x[v];
	gvalue *gv = &pl->g->v[v];
	if (gv->kind != GV_CONST)
		return ts_error(pl->e->ctx, TS_ERR_INTERNAL, "graph_compile: value '%s' is used before it is computed",
				gv->name), -1;
	int x = gx_new_value(pl->e, gv->name, gv->ndim, gv->shape, 0);
	if (x < 0)
		return -1;
	xval *xv = &pl->e->xv[x];
	xv->is_const = true;
	/* compiled code assumes 64-byte aligned arrays */
	xv->data = aligned_copy(pl->e, gv->data, (size_t)xv->bytes);
	if (!xv->data)
		return -1;
	xv->scalar = gv_numel(gv) == 1 ? ((float *)gv->data)[0] : 0.0f;
	pl->gv2x[v] = x;
	return x;
}

/* Whether two layouts of a 4-D value are the same bytes: row-major and
 * blocks of one channel. */
static bool same_bytes(int a, int b)
{
	return (a <= 1) && (b <= 1);
}

/* x in layout `block` (0: row-major): x itself, a view, or a conversion
 * kernel (memoized per value and layout). */
static int in_layout(planner *pl, int x, int block)
{
	ts_graph_exec *e = pl->e;
	if (e->xv[x].block == block)
		return x;
	for (int i = 0; i < pl->nconv; i++)
		if (pl->memo[i].from == x && pl->memo[i].block == block)
			return pl->memo[i].to;
	int from = x;
	if (!same_bytes(e->xv[x].block, block) && e->xv[x].block > 1 && block > 1)
		from = in_layout(pl, x, 0); /* one block size to another: through row-major */
	if (from < 0)
		return -1;
	xval src = e->xv[from];
	int y = gx_new_value(e, ts_sprintf(e->ctx, "%s@%s", src.name, block ? ts_sprintf(e->ctx, "nchw%dc", block) : "nchw"),
			     src.ndim, src.shape, block);
	if (y < 0)
		return -1;
	if (same_bytes(src.block, block)) {
		e->xv[y].base = src.base >= 0 ? src.base : from;
	} else {
		xkernel *k = new_kernel(e, ts_sprintf(e->ctx, "layout %s -> %s", src.name, e->xv[y].name));
		if (!k || gx_build_conversion(e, from, y, k) != TS_OK)
			return -1;
		e->nk++;
		e->st.conversions++;
		if (pl->p->trace)
			fprintf(pl->p->trace, "layout: %s converted to %s for its consumer\n", src.name,
				block ? ts_sprintf(e->ctx, "NCHW%dc", block) : "NCHW");
	}
	if (pl->nconv < (int)(sizeof(pl->memo) / sizeof(pl->memo[0])))
		pl->memo[pl->nconv++] = (struct conv_memo){x, block, y};
	return y;
}

/* Replaces graph value v's xval by its form in `block` for this kernel. */
static ts_status want(planner *pl, int v, int block)
{
	int x = value_of(pl, v);
	if (x < 0)
		return ts_last_status(pl->e->ctx);
	if (pl->e->xv[x].is_const || pl->e->xv[x].ndim != 4)
		return TS_OK;
	int y = in_layout(pl, x, block);
	if (y < 0)
		return ts_last_status(pl->e->ctx);
	pl->gv2x[v] = y;
	return TS_OK;
}

static bool is_view(ts_gop op)
{
	return op == TS_GOP_RESHAPE || op == TS_GOP_FLATTEN || op == TS_GOP_IDENTITY;
}

/* Whether value v is the image of a depthwise convolution: those keep
 * blocks of at most two vectors (gx_depthwise_block), so a producer's
 * wider blocks would be converted for them. */
static bool feeds_depthwise(const ts_graph *g, int v)
{
	for (int i = 0; i < g->nn; i++)
		if (g->n[i].op == TS_GOP_CONV && g->n[i].in[0] == v && gx_is_depthwise(g, &g->n[i]))
			return true;
	return false;
}

/* The output layout of group gr, converting its inputs as its kernel
 * needs them; -1 with an error. */
static int plan_group(planner *pl, const ggroup *gr)
{
	ts_graph *g = pl->g;
	const gnode *a = gr->anchor >= 0 ? &g->n[gr->anchor] : NULL;
	bool layouts = !pl->o->no_layout;
	int out_block = 0;
	/* every value the group reads from outside exists (constants made now) */
	for (int r = -1; r < gr->nreg; r++) {
		const gnode *n = r < 0 ? a : &g->n[gr->reg[r]];
		for (int i = 0; n && i < n->nin; i++) {
			const gvalue *v = &g->v[n->in[i]];
			if (v->kind == GV_NODE && pl->p->ns[v->node].group == (int)(gr - pl->p->groups))
				continue;
			if (value_of(pl, n->in[i]) < 0)
				return -1;
		}
	}
	/* the blocked convolutions block their weights at compile time: a
	 * convolution of computed weights (or of a constant image) stays on
	 * NCHW.  The image is looked at as planned: a constant, or a view of
	 * one (Identity, Reshape), is constant there, and want() leaves
	 * constants as they are, so a blocked kernel would find it unblocked */
	bool blockable = a && a->op == TS_GOP_CONV && g->v[a->in[1]].kind == GV_CONST &&
			 !pl->e->xv[pl->gv2x[a->in[0]]].is_const;
	if (blockable && gx_is_depthwise(g, a)) {
		/* channel for channel: the output keeps the input's blocks */
		int x = pl->gv2x[a->in[0]];
		int64_t C = g->v[a->in[0]].shape[1];
		int xb = (int)gx_depthwise_block(C, layouts ? pl->e->xv[x].block : 0);
		if (want(pl, a->in[0], xb))
			return -1;
		out_block = xb;
	} else if (blockable && a->a.group == 1) {
		int x = pl->gv2x[a->in[0]];
		int64_t C = g->v[a->in[0]].shape[1], O = g->v[a->out].shape[1];
		int xb = (int)gx_conv_in_block(C, layouts ? pl->e->xv[x].block : 0);
		if (want(pl, a->in[0], xb))
			return -1;
		/* one read by a depthwise convolution keeps a narrower block */
		out_block = (int)ts_conv2d_cpu_out_block_for(O, feeds_depthwise(g, gr->out) ? 0
										  : gx_conv_row_width(g, a, xb));
	} else if (a && (a->op == TS_GOP_MAXPOOL || a->op == TS_GOP_AVGPOOL)) {
		out_block = pl->e->xv[pl->gv2x[a->in[0]]].block;
	} else if (a && a->op == TS_GOP_GLOBALAVGPOOL) {
		out_block = 0;
	} else if (a) {
		for (int i = 0; i < a->nin; i++)
			if (want(pl, a->in[i], 0))
				return -1;
	} else {
		/* an elementwise chain keeps the layout of its first operand
		 * of the output's shape */
		const gvalue *o = &g->v[gr->out];
		const gnode *n = &g->n[gr->reg[0]];
		for (int i = 0; i < n->nin; i++) {
			const xval *x = &pl->e->xv[pl->gv2x[n->in[i]]];
			if (!x->is_const && x->ndim == o->ndim &&
			    !memcmp(x->shape, o->shape, sizeof(int64_t) * (size_t)o->ndim)) {
				out_block = x->block;
				break;
			}
		}
	}
	return out_block;
}

static const char *group_desc(ts_ctx *ctx, const ts_graph *g, const ggroup *gr)
{
	/* arena copies: the working graph is freed after compiling */
	const char *s = ts_strdup(ctx, gr->anchor >= 0 ? g->n[gr->anchor].name : "");
	for (int r = 0; s && r < gr->nreg; r++)
		s = ts_sprintf(ctx, "%s%s%s", s, *s ? " + " : "", g->n[gr->reg[r]].name);
	return s; /* NULL: out of memory, recorded */
}

static ts_status plan_kernels(planner *pl)
{
	ts_graph_exec *e = pl->e;
	ts_graph *g = pl->g;
	gpass *p = pl->p;
	for (int i = 0; i < g->nin; i++) {
		const gvalue *v = &g->v[g->in[i]];
		int x = gx_new_value(e, v->name, v->ndim, v->shape, 0);
		if (x < 0)
			return ts_last_status(e->ctx);
		pl->gv2x[g->in[i]] = x;
		e->in[i] = x;
	}
	for (int gi = 0; gi < p->ngroups; gi++) {
		const ggroup *gr = &p->groups[gi];
		const gnode *a = gr->anchor >= 0 ? &g->n[gr->anchor] : NULL;
		const gvalue *o = &g->v[gr->out];
		if (a && is_view(a->op)) {
			/* a row-major view of the same storage */
			TS_TRY(want(pl, a->in[0], 0));
			int x = pl->gv2x[a->in[0]];
			int y = gx_new_value(e, o->name, o->ndim, o->shape, 0);
			if (y < 0)
				return ts_last_status(e->ctx);
			xval *xv = &e->xv[x], *yv = &e->xv[y];
			yv->base = xv->base >= 0 ? xv->base : x;
			/* a view of a constant is a constant on the same data */
			yv->is_const = xv->is_const;
			yv->data = xv->data;
			yv->scalar = xv->scalar;
			pl->gv2x[gr->out] = y;
			continue;
		}
		int block = plan_group(pl, gr);
		if (block < 0)
			return ts_last_status(e->ctx);
		if (o->ndim != 4)
			block = 0;
		int y = gx_new_value(e, o->name, o->ndim, o->shape, block);
		if (y < 0)
			return ts_last_status(e->ctx);
		pl->gv2x[gr->out] = y;
		const char *desc = group_desc(e->ctx, g, gr);
		xkernel *k = desc ? new_kernel(e, desc) : NULL;
		if (!k)
			return ts_last_status(e->ctx);
		TS_TRY(gx_build_group(e, g, p, gr, pl->gv2x, k));
		e->nk++;
		if (pl->p->trace && block > 1)
			fprintf(pl->p->trace, "layout: %s is NCHW%dc\n", o->name, block);
		if (pl->o->no_layout && block > 1)
			TS_TRY(want(pl, gr->out, 0));
	}
	for (int i = 0; i < g->nout; i++) {
		TS_TRY(want(pl, g->out[i], 0));
		e->out[i] = value_of(pl, g->out[i]);
		if (e->out[i] < 0)
			return ts_last_status(e->ctx);
	}
	return TS_OK;
}

/* ---- memory planning ---------------------------------------------------------------- */

int gx_root(const ts_graph_exec *e, int x)
{
	return e->xv[x].base >= 0 ? e->xv[x].base : x;
}

static ts_status plan_memory(ts_graph_exec *e, FILE *trace)
{
	int n = e->nxv;
	int64_t *size = calloc((size_t)n + 1, sizeof(int64_t)), *off = calloc((size_t)n + 1, sizeof(int64_t));
	int *first = malloc(sizeof(int) * ((size_t)n + 1)), *last = malloc(sizeof(int) * ((size_t)n + 1));
	int *slot = malloc(sizeof(int) * ((size_t)n + 1));
	ts_status st = TS_OK;
	if (!size || !off || !first || !last || !slot) {
		st = ts_error(e->ctx, TS_ERR_NOMEM, "graph_compile: out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++)
		first[i] = INT32_MAX, last[i] = -1;
	for (int i = 0; i < e->nin; i++)
		first[e->in[i]] = -1;
	for (int k = 0; k < e->nk; k++)
		for (int a = 0; a < e->k[k].nargs; a++) {
			int r = gx_root(e, e->k[k].arg[a].val);
			first[r] = first[r] < k ? first[r] : k;
			last[r] = last[r] > k ? last[r] : k;
		}
	for (int i = 0; i < e->nout; i++) {
		int r = gx_root(e, e->out[i]);
		last[r] = e->nk;
		if (first[r] == INT32_MAX)
			first[r] = -1;
	}
	int m = 0;
	int64_t sum = 0;
	for (int i = 0; i < n; i++) {
		if (e->xv[i].over) /* its own buffer, were it not written in place */
			sum += (e->xv[i].bytes + 63) & ~63;
		if (e->xv[i].is_const || e->xv[i].base >= 0 || first[i] == INT32_MAX)
			continue;
		slot[m] = i;
		size[m] = e->xv[i].bytes;
		first[m] = first[i];
		last[m] = last[i];
		sum += (e->xv[i].bytes + 63) & ~63;
		m++;
	}
	int64_t total = g_plan_memory(m, size, first, last, off);
	if (total < 0) {
		st = ts_error(e->ctx, TS_ERR_NOMEM, "graph_compile: out of memory");
		goto out;
	}
	if (!(e->arena = g_alloc((size_t)(total ? total : 64)))) {
		e->arena = NULL;
		st = ts_error(e->ctx, TS_ERR_NOMEM, "graph_compile: out of memory for a %lld-byte arena",
			      (long long)total);
		goto out;
	}
	memset(e->arena, 0, (size_t)(total ? total : 64));
	for (int j = 0; j < m; j++)
		e->xv[slot[j]].data = (float *)((char *)e->arena + off[j]);
	for (int i = 0; i < n; i++)
		if (e->xv[i].base >= 0)
			e->xv[i].data = e->xv[e->xv[i].base].data;
	e->st.arena_bytes = total;
	e->st.unplanned_bytes = sum;
	if (trace)
		fprintf(trace, "memory: %d buffers, %.2f MB in one arena (%.2f MB without reuse)\n", m,
			(double)total / 1e6, (double)sum / 1e6);
out:
	free(size);
	free(off);
	free(first);
	free(last);
	free(slot);
	return st;
}

static ts_status wrap_args(ts_graph_exec *e)
{
	for (int k = 0; k < e->nk; k++) {
		xkernel *kr = &e->k[k];
		for (int a = 0; a < kr->nargs; a++) {
			xarg *x = &kr->arg[a];
			x->arr = ts_array_wrap(e->ctx, e->xv[x->val].data, ts_float32, x->ndim, x->shape);
			if (!x->arr)
				return ts_last_status(e->ctx);
		}
	}
	/* constants only the compiler read (weights before blocking or
	 * packing, folded batch norms) are dropped */
	bool *used = calloc((size_t)e->nxv + 1, sizeof(bool));
	if (!used)
		return ts_error(e->ctx, TS_ERR_NOMEM, "graph_compile: out of memory");
	for (int k = 0; k < e->nk; k++)
		for (int a = 0; a < e->k[k].nargs; a++)
			used[gx_root(e, e->k[k].arg[a].val)] = true;
	for (int i = 0; i < e->nout; i++)
		used[gx_root(e, e->out[i])] = true;
	for (int i = 0; i < e->nxv; i++) {
		if (!e->xv[i].is_const || e->xv[i].base >= 0)
			continue;
		if (used[i]) {
			e->st.constant_bytes += e->xv[i].bytes;
		} else {
			free(e->xv[i].data);
			e->xv[i].data = NULL;
		}
	}
	free(used);
	return TS_OK;
}

ts_graph_exec *ts_graph_compile(ts_graph *g, const ts_graph_opts *opts)
{
	if (!g)
		return NULL;
	ts_graph_opts o = opts ? *opts : (ts_graph_opts){0};
	ts_ctx *ctx = g->ctx;
	/* as ts_lower: an error an earlier call left never fails the compile
	 * nor stands in for its own */
	ts_clear_error(ctx);
	if (g->nout == 0) {
		ts_error(ctx, TS_ERR_INVALID, "graph_compile: the graph has no outputs (ts_graph_output)");
		return NULL;
	}
	uint64_t t_all = ts_now_ns(), t = t_all;
	ts_graph_exec *e = calloc(1, sizeof(*e));
	gpass p = {.trace = o.trace};
	planner pl = {.e = e, .p = &p, .o = &o};
	if (!e) {
		ts_error(ctx, TS_ERR_NOMEM, "graph_compile: out of memory");
		return NULL;
	}
	e->ctx = ts_ctx_retain(ctx);
	e->tuned = o.tuned;
	e->lock_made = pthread_mutex_init(&e->lock, NULL) == 0;
	e->st.nodes = g->nn;
	p.g = pl.g = g_clone(g);
	if (!p.g)
		goto fail;
	p.ns = calloc((size_t)g->nn + 1, sizeof(*p.ns));
	e->in = calloc((size_t)g->nin + 1, sizeof(int));
	e->out = calloc((size_t)g->nout + 1, sizeof(int));
	e->nin = g->nin, e->nout = g->nout;
	if (!p.ns || !e->in || !e->out) {
		ts_error(ctx, TS_ERR_NOMEM, "graph_compile: out of memory");
		goto fail;
	}
	if (g_pass_fold(&p) != TS_OK)
		goto fail;
	e->st.fold_ms = ts_ms_since(t);
	t = ts_now_ns();
	if (g_pass_fuse(&p, o.no_fuse) != TS_OK)
		goto fail;
	e->st.fuse_ms = ts_ms_since(t);
	t = ts_now_ns();
	pl.gv2x = malloc(sizeof(int) * ((size_t)p.g->nv + 1));
	if (!pl.gv2x) {
		ts_error(ctx, TS_ERR_NOMEM, "graph_compile: out of memory");
		goto fail;
	}
	for (int i = 0; i < p.g->nv; i++)
		pl.gv2x[i] = -1;
	if (plan_kernels(&pl) != TS_OK)
		goto fail;
	e->st.layout_ms = ts_ms_since(t) - e->st.codegen_ms;
	if (gx_build_all(e) != TS_OK)
		goto fail;
	t = ts_now_ns();
	if (plan_memory(e, o.trace) != TS_OK || wrap_args(e) != TS_OK)
		goto fail;
	e->st.memory_ms = ts_ms_since(t);
	e->st.kernels = e->nk;
	e->st.fused_nodes = p.fused;
	e->st.folded_nodes = p.folded;
	e->st.total_ms = ts_ms_since(t_all);
	e->tuned = NULL; /* the caller's: not kept past the compile */
	for (int k = 0; k < e->nk; k++)
		e->st.tuned_kernels += e->k[k].tuned != NULL;
	free(pl.gv2x);
	free(p.groups);
	free(p.ns);
	free(p.uses);
	ts_graph_free(p.g);
	return e;
fail:
	free(pl.gv2x);
	free(p.groups);
	free(p.ns);
	free(p.uses);
	ts_graph_free(p.g);
	ts_graph_exec_free(e);
	return NULL;
}

/* ---- running ---------------------------------------------------------------------- */

/* Argument i of fn (graph_run or graph_profile), an input or an output:
 * a contiguous float32 host array of exactly v's shape. */
static ts_status check_one(ts_graph_exec *e, const char *fn, const char *what, int i, const ts_array *a,
			   const xval *v)
{
	const char *want = g_shape_str(e->ctx, v->ndim, v->shape);
	char dt[24];
	if (!a)
		return ts_error(e->ctx, TS_ERR_INVALID, "%s: %s %d ('%s') is NULL", fn, what, i, v->name);
	if (!a->data)
		return ts_error(e->ctx, TS_ERR_INVALID, "%s: %s %d ('%s') has no data", fn, what, i, v->name);
	if (a->dtype.code != ts_float32.code || a->dtype.bits != 32 || a->dtype.lanes != 1)
		return ts_error(e->ctx, TS_ERR_INVALID, "%s: %s %d ('%s') is %s; the model takes float32", fn,
				what, i, v->name, ts_dtype_str(a->dtype, dt));
	if (a->device != TS_DEVICE_CPU)
		return ts_error(e->ctx, TS_ERR_INVALID, "%s: %s %d ('%s') is not a host array", fn, what, i,
				v->name);
	bool ok = a->ndim == v->ndim;
	for (int d = 0; ok && d < v->ndim; d++)
		ok = a->shape[d] == v->shape[d];
	if (!ok)
		return ts_error(e->ctx, TS_ERR_INVALID, "%s: %s %d ('%s') has shape %s; the model's is %s", fn,
				what, i, v->name,
				a->ndim >= 0 && a->ndim <= TS_MAX_DIMS ? g_shape_str(e->ctx, a->ndim, a->shape)
								       : ts_sprintf(e->ctx, "of %d dimensions", a->ndim),
				want);
	int64_t stride = 1;
	for (int d = v->ndim - 1; ok && d >= 0; d--) {
		ok = a->shape[d] == 1 || a->strides[d] == stride;
		stride *= v->shape[d];
	}
	if (!ok)
		return ts_error(e->ctx, TS_ERR_INVALID, "%s: %s %d ('%s') is not contiguous (row-major strides)",
				fn, what, i, v->name);
	return TS_OK;
}

/* The counts and arrays of a run by fn, each named in the error. */
static ts_status check_args(ts_graph_exec *e, const char *fn, int ninputs, ts_array *const *inputs,
			    int noutputs, ts_array *const *outputs)
{
	if (ninputs != e->nin || noutputs != e->nout)
		return ts_error(e->ctx, TS_ERR_INVALID, "%s: the model takes %d inputs and %d outputs, got %d and %d",
				fn, e->nin, e->nout, ninputs, noutputs);
	if (ninputs && !inputs)
		return ts_error(e->ctx, TS_ERR_INVALID, "%s: inputs is NULL for %d inputs", fn, ninputs);
	if (noutputs && !outputs)
		return ts_error(e->ctx, TS_ERR_INVALID, "%s: outputs is NULL for %d outputs", fn, noutputs);
	for (int i = 0; i < ninputs; i++)
		TS_TRY(check_one(e, fn, "input", i, inputs[i], &e->xv[e->in[i]]));
	for (int i = 0; i < noutputs; i++)
		TS_TRY(check_one(e, fn, "output", i, outputs[i], &e->xv[e->out[i]]));
	/* outputs are copied out one after another: two that share bytes
	 * would keep only the later result.  Inputs are copied in before
	 * anything runs, so an input may be an output. */
	for (int i = 0; i < noutputs; i++)
		for (int j = 0; j < i; j++)
			if (ts_bytes_overlap(outputs[i]->data, (uint64_t)e->xv[e->out[i]].bytes, outputs[j]->data,
					     (uint64_t)e->xv[e->out[j]].bytes))
				return ts_error(e->ctx, TS_ERR_INVALID,
						"%s: output %d ('%s') overlaps output %d ('%s'); each output "
						"needs memory of its own", fn, i, e->xv[e->out[i]].name, j,
						e->xv[e->out[j]].name);
	return TS_OK;
}

static ts_status run_locked(ts_graph_exec *e, int ninputs, ts_array *const *inputs, int noutputs,
			    ts_array *const *outputs, double *kernel_ms);

/* One run on arrays check_args accepted.  Runs share the arena: a second
 * thread's run waits for the first. */
static ts_status run(ts_graph_exec *e, int ninputs, ts_array *const *inputs, int noutputs,
		     ts_array *const *outputs, double *kernel_ms)
{
	if (!e->lock_made)
		return ts_error(e->ctx, TS_ERR_RUNTIME, "graph_run: the executable's lock could not be made");
	pthread_mutex_lock(&e->lock);
	ts_status st = run_locked(e, ninputs, inputs, noutputs, outputs, kernel_ms);
	pthread_mutex_unlock(&e->lock);
	return st;
}

/* One run; the caller holds e->lock. */
static ts_status run_locked(ts_graph_exec *e, int ninputs, ts_array *const *inputs, int noutputs,
			    ts_array *const *outputs, double *kernel_ms)
{
	for (int i = 0; i < ninputs; i++)
		memcpy(e->xv[e->in[i]].data, inputs[i]->data, (size_t)e->xv[e->in[i]].bytes);
	for (int k = 0; k < e->nk; k++) {
		xkernel *kr = &e->k[k];
		ts_array *args[G_MAX_ARGS];
		for (int a = 0; a < kr->nargs; a++)
			args[a] = kr->arg[a].arr;
		uint64_t t0 = kernel_ms ? ts_now_ns() : 0;
		ts_status st = ts_module_run(kr->mod, kr->nargs, args);
		if (kernel_ms)
			kernel_ms[k] = ts_ms_since(t0);
		if (st != TS_OK)
			return ts_error(e->ctx, st, "graph_run: kernel %d (%s): %s", k, kr->desc, ts_last_error(e->ctx));
	}
	for (int i = 0; i < noutputs; i++)
		memmove(outputs[i]->data, e->xv[e->out[i]].data, (size_t)e->xv[e->out[i]].bytes);
	return TS_OK;
}

ts_status ts_graph_run(ts_graph_exec *e, int ninputs, ts_array *const *inputs, int noutputs,
		       ts_array *const *outputs)
{
	if (!e)
		return TS_ERR_INVALID;
	ts_clear_error(e->ctx);
	TS_TRY(check_args(e, "graph_run", ninputs, inputs, noutputs, outputs));
	return run(e, ninputs, inputs, noutputs, outputs, NULL);
}

static int by_time_desc(const void *a, const void *b, void *ms)
{
	const double *t = ms;
	int x = *(const int *)a, y = *(const int *)b;
	return t[x] < t[y] ? 1 : t[x] > t[y] ? -1 : x - y;
}

ts_status ts_graph_profile(ts_graph_exec *e, int ninputs, ts_array *const *inputs, int noutputs,
			   ts_array *const *outputs, int repeat, FILE *f)
{
	if (!e)
		return TS_ERR_INVALID;
	ts_clear_error(e->ctx);
	if (repeat < 1 || repeat > 10000)
		return ts_error(e->ctx, TS_ERR_INVALID, "graph_profile: repeat %d is out of range (1..10000)", repeat);
	if (!f)
		return ts_error(e->ctx, TS_ERR_INVALID, "graph_profile: f is NULL");
	TS_TRY(check_args(e, "graph_profile", ninputs, inputs, noutputs, outputs));
	int nk = e->nk;
	double *ms = calloc((size_t)nk * (size_t)repeat + 1, sizeof(double));
	double *med = calloc((size_t)nk + 1, sizeof(double));
	int *order = calloc((size_t)nk + 1, sizeof(int));
	ts_status st = TS_OK;
	if (!ms || !med || !order) {
		st = ts_error(e->ctx, TS_ERR_NOMEM, "graph_profile: out of memory");
		goto out;
	}
	/* one warm-up run, then `repeat` timed ones; per kernel the median */
	for (int r = -1; r < repeat && st == TS_OK; r++)
		st = run(e, ninputs, inputs, noutputs, outputs, ms + (size_t)(r < 0 ? 0 : r) * (size_t)nk);
	if (st != TS_OK)
		goto out;
	double total = 0;
	double *col = calloc((size_t)repeat, sizeof(double));
	if (!col) {
		st = ts_error(e->ctx, TS_ERR_NOMEM, "graph_profile: out of memory");
		goto out;
	}
	for (int k = 0; k < nk; k++) {
		for (int r = 0; r < repeat; r++)
			col[r] = ms[(size_t)r * (size_t)nk + (size_t)k];
		med[k] = ts_median(col, repeat);
		total += med[k];
		order[k] = k;
	}
	free(col);
	qsort_r(order, (size_t)nk, sizeof(int), by_time_desc, med);
	fprintf(f, "%-8s %10s %7s  %s\n", "kernel", "median ms", "share", "nodes");
	for (int i = 0; i < nk; i++) {
		int k = order[i];
		fprintf(f, "%-8d %10.3f %6.1f%%  %s\n", k, med[k], total > 0 ? 100 * med[k] / total : 0, e->k[k].desc);
	}
	fprintf(f, "%-8s %10.3f\n", "total", total);
out:
	free(ms);
	free(med);
	free(order);
	return st;
}

ts_graph_stats ts_graph_exec_stats(const ts_graph_exec *e)
{
	return e ? e->st : (ts_graph_stats){0};
}

void ts_graph_exec_print(FILE *f, const ts_graph_exec *e)
{
	if (!f || !e)
		return;
	for (int k = 0; k < e->nk; k++) {
		const xkernel *kr = &e->k[k];
		const xval *y = &e->xv[kr->arg[kr->nargs - 1].val];
		fprintf(f, "kernel %3d: %s -> %s%s%s%s%s%s\n", k, kr->desc, g_shape_str(e->ctx, y->ndim, y->shape),
			y->block > 1 ? ts_sprintf(e->ctx, " NCHW%dc", y->block) : "",
			kr->rows_as_one > 1 ? ts_sprintf(e->ctx, ", %lld rows as one", (long long)kr->rows_as_one)
					    : "",
			kr->owns_mod ? "" : " (shared code)", kr->tuned ? ", tuned " : "", kr->tuned ? kr->tuned : "");
	}
}

static bool same_tune_task(const ts_tune_task *a, const ts_tune_task *b)
{
	if (a->nshape != b->nshape || memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->nshape))
		return false;
	for (int i = 0; i < a->space.nparams; i++)
		if (a->space.choice[i][0] != b->space.choice[i][0])
			return false;
	return true;
}

int ts_graph_exec_tune_tasks(const ts_graph_exec *e, ts_tune_task *tasks, int max)
{
	if (!e)
		return -1;
	if (max < 0 || (max > 0 && !tasks))
		return ts_error(e->ctx, TS_ERR_INVALID, max < 0 ? "graph_exec_tune_tasks: max %d is negative"
								: "graph_exec_tune_tasks: tasks is NULL for max %d",
				max), -1;
	int n = 0;
	for (int k = 0; k < e->nk; k++) {
		const ts_tune_task *t = e->k[k].task;
		bool seen = false;
		for (int j = 0; t && j < k && !seen; j++)
			seen = e->k[j].task && same_tune_task(e->k[j].task, t);
		if (!t || seen)
			continue;
		if (n < max)
			tasks[n] = *t;
		n++;
	}
	return n;
}
