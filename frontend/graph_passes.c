/*
 * graph_passes.c - the graph passes before code generation: constant
 * folding, operator fusion and memory planning (layout planning happens
 * as the kernels are laid out, in graph_exec.c, where every value's
 * layout is known).
 */
#include "graph_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"

ts_graph *g_clone(const ts_graph *g)
{
	ts_graph *c = ts_graph_new(g->ctx);
	if (!c)
		return NULL;
	c->v = calloc((size_t)g->nv + 1, sizeof(*c->v));
	c->n = calloc((size_t)g->nn + 1, sizeof(*c->n));
	c->in = calloc((size_t)g->nin + 1, sizeof(*c->in));
	c->out = calloc((size_t)g->nout + 1, sizeof(*c->out));
	if (!c->v || !c->n || !c->in || !c->out)
		goto nomem;
	c->capv = g->nv + 1, c->capn = g->nn + 1, c->capin = g->nin + 1, c->capout = g->nout + 1;
	for (int i = 0; i < g->nv; i++, c->nv++) {
		c->v[i] = g->v[i];
		c->v[i].data = NULL;
		c->v[i].name = strdup(g->v[i].name);
		if (!c->v[i].name)
			goto nomem;
		if (g->v[i].data) {
			size_t bytes = (size_t)gv_numel(&g->v[i]) * (g->v[i].dtype.bits / 8);
			c->v[i].data = malloc(bytes ? bytes : 1);
			if (!c->v[i].data)
				goto nomem;
			memcpy(c->v[i].data, g->v[i].data, bytes);
		}
	}
	for (int i = 0; i < g->nn; i++, c->nn++) {
		c->n[i] = g->n[i];
		c->n[i].name = strdup(g->n[i].name);
		if (!c->n[i].name)
			goto nomem;
	}
	if (g->nin)
		memcpy(c->in, g->in, sizeof(int) * (size_t)g->nin);
	if (g->nout)
		memcpy(c->out, g->out, sizeof(int) * (size_t)g->nout);
	c->nin = g->nin, c->nout = g->nout;
	return c;
nomem:
	ts_error(g->ctx, TS_ERR_NOMEM, "graph_compile: out of memory copying the graph");
	ts_graph_free(c);
	return NULL;
}

ts_status g_count_uses(gpass *p)
{
	ts_graph *g = p->g;
	/* passes add constants: the table grows with the graph */
	int *u = realloc(p->uses, sizeof(int) * ((size_t)g->nv + 1));
	if (!u)
		return ts_error(g->ctx, TS_ERR_NOMEM, "graph_compile: out of memory");
	p->uses = u;
	memset(p->uses, 0, sizeof(int) * (size_t)g->nv);
	for (int i = 0; i < g->nn; i++)
		if (!p->ns[i].dead)
			for (int k = 0; k < g->n[i].nin; k++)
				p->uses[g->n[i].in[k]]++;
	return TS_OK;
}

/* Replaces every use of value `from` by `to` (outputs included). */
static void replace_uses(gpass *p, int from, int to)
{
	ts_graph *g = p->g;
	for (int i = 0; i < g->nn; i++)
		for (int k = 0; k < g->n[i].nin; k++)
			if (g->n[i].in[k] == from)
				g->n[i].in[k] = to;
	for (int i = 0; i < g->nout; i++)
		if (g->out[i] == from) {
			g->out[i] = to;
			g->v[from].is_output = false;
			g->v[to].is_output = true;
			/* the output keeps its name */
			char *t = g->v[to].name;
			g->v[to].name = g->v[from].name;
			g->v[from].name = t;
		}
}

static bool is_const(const ts_graph *g, int v)
{
	return g->v[v].kind == GV_CONST;
}

/* scale[c] = gamma / sqrt(var + eps), shift[c] = beta - mean * scale. */
static void bn_coeffs(const ts_graph *g, const gnode *bn, int64_t C, float *scale, float *shift)
{
	const float *gamma = g->v[bn->in[1]].data, *beta = g->v[bn->in[2]].data;
	const float *mean = g->v[bn->in[3]].data, *var = g->v[bn->in[4]].data;
	for (int64_t c = 0; c < C; c++) {
		double s = gamma[c] / sqrt((double)var[c] + bn->a.epsilon);
		scale[c] = (float)s;
		shift[c] = (float)(beta[c] - mean[c] * s);
	}
}

/* A new float32 constant; -1 on error. */
static int new_const(ts_graph *g, const char *name, int ndim, const int64_t *shape, const float *data)
{
	return ts_graph_constant(g, name, ts_float32, ndim, shape, data);
}

/* Folds BatchNormalization node b into the Conv producing its input:
 * W'[o] = W[o] * scale[o], B'[o] = B[o] * scale[o] + shift[o]. */
static ts_status fold_into_conv(gpass *p, int b, int conv)
{
	ts_graph *g = p->g;
	gnode *bn = &g->n[b], *cv = &g->n[conv];
	const gvalue *w = &g->v[cv->in[1]];
	int64_t O = w->shape[0], per = gv_numel(w) / O;
	float *scale = malloc(sizeof(float) * (size_t)O * 2), *wd = malloc(sizeof(float) * (size_t)gv_numel(w));
	float *bias = malloc(sizeof(float) * (size_t)O);
	ts_status st = TS_OK;
	if (!scale || !wd || !bias) {
		st = ts_error(g->ctx, TS_ERR_NOMEM, "graph_compile: out of memory folding '%s'", bn->name);
		goto out;
	}
	float *shift = scale + O;
	bn_coeffs(g, bn, O, scale, shift);
	const float *w0 = w->data, *b0 = cv->nin == 3 ? g->v[cv->in[2]].data : NULL;
	for (int64_t o = 0; o < O; o++) {
		for (int64_t i = 0; i < per; i++)
			wd[o * per + i] = w0[o * per + i] * scale[o];
		bias[o] = (b0 ? b0[o] : 0.0f) * scale[o] + shift[o];
	}
	int64_t wshape[4];
	memcpy(wshape, w->shape, sizeof(wshape));
	int nw = new_const(g, ts_sprintf(g->ctx, "%s.folded_weight", cv->name), 4, wshape, wd);
	int nb = nw < 0 ? -1 : new_const(g, ts_sprintf(g->ctx, "%s.folded_bias", cv->name), 1, &O, bias);
	if (nb < 0) {
		st = ts_last_status(g->ctx);
		goto out;
	}
	cv = &g->n[conv]; /* g->v moved; g->n did not, but stay safe */
	bn = &g->n[b];
	cv->in[1] = nw;
	cv->in[2] = nb;
	cv->nin = 3;
	p->ns[b].dead = true;
	replace_uses(p, bn->out, cv->out);
out:
	free(scale);
	free(wd);
	free(bias);
	return st;
}

/* Rewrites BatchNormalization node b to x * scale + shift (per channel,
 * broadcast over the dimensions after the channel one). */
static ts_status make_affine(gpass *p, int b)
{
	ts_graph *g = p->g;
	gnode *bn = &g->n[b];
	const gvalue *x = &g->v[bn->in[0]];
	int64_t C = x->shape[1], shape[TS_GRAPH_MAX_DIMS];
	int nd = x->ndim - 1;
	shape[0] = C;
	for (int d = 1; d < nd; d++)
		shape[d] = 1;
	float *scale = malloc(sizeof(float) * (size_t)C * 2);
	if (!scale)
		return ts_error(g->ctx, TS_ERR_NOMEM, "graph_compile: out of memory folding '%s'", bn->name);
	bn_coeffs(g, bn, C, scale, scale + C);
	int s = new_const(g, ts_sprintf(g->ctx, "%s.scale", bn->name), nd, shape, scale);
	int t = s < 0 ? -1 : new_const(g, ts_sprintf(g->ctx, "%s.shift", bn->name), nd, shape, scale + C);
	free(scale);
	if (t < 0)
		return ts_last_status(g->ctx);
	bn = &g->n[b];
	bn->in[1] = s;
	bn->in[2] = t;
	bn->nin = 3;
	p->ns[b].affine = true;
	return TS_OK;
}

static void trace(gpass *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void trace(gpass *p, const char *fmt, ...)
{
	if (!p->trace)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(p->trace, fmt, ap);
	va_end(ap);
}

/* Removes nodes whose values nothing reads (and are not outputs), last
 * first so that chains of them go in one sweep. */
static int remove_dead(gpass *p)
{
	ts_graph *g = p->g;
	int removed = 0;
	if (g_count_uses(p) != TS_OK)
		return -1;
	for (int i = g->nn - 1; i >= 0; i--) {
		gnode *n = &g->n[i];
		if (p->ns[i].dead || p->uses[n->out] || g->v[n->out].is_output)
			continue;
		p->ns[i].dead = true;
		for (int k = 0; k < n->nin; k++)
			p->uses[n->in[k]]--;
		removed++;
		trace(p, "fold: removed %s '%s' (its value is never read)\n", ts_gop_name(n->op), n->name);
	}
	return removed;
}

ts_status g_pass_fold(gpass *p)
{
	ts_graph *g = p->g;
	TS_TRY(g_count_uses(p));
	for (int i = 0; i < g->nn; i++) {
		gnode *n = &g->n[i];
		if (p->ns[i].dead || n->op != TS_GOP_BATCHNORM)
			continue;
		/* ts_graph_node refuses statistics that are not constants */
		for (int k = 1; k < 5; k++)
			if (!is_const(g, n->in[k]))
				return ts_error(g->ctx, TS_ERR_INTERNAL,
						"graph_compile: internal error: BatchNormalization '%s' has input %d (%s) not constant",
						n->name, k, g->v[n->in[k]].name);
		const gvalue *x = &g->v[n->in[0]];
		int prod = x->kind == GV_NODE ? x->node : -1;
		gnode *c = prod >= 0 ? &g->n[prod] : NULL;
		if (c && c->op == TS_GOP_CONV && !p->ns[prod].dead && p->uses[n->in[0]] == 1 &&
		    !x->is_output && is_const(g, c->in[1]) && (c->nin < 3 || is_const(g, c->in[2]))) {
			char *cname = c->name;
			TS_TRY(fold_into_conv(p, i, prod));
			/* the batch norm's readers now read the conv: a second
			 * batch norm on it must see them before folding too */
			TS_TRY(g_count_uses(p));
			trace(p, "fold: %s '%s' folded into the weights and bias of Conv '%s'\n",
			      ts_gop_name(TS_GOP_BATCHNORM), g->n[i].name, cname);
		} else {
			TS_TRY(make_affine(p, i));
			trace(p, "fold: %s '%s' became a per-channel multiply-add\n",
			      ts_gop_name(TS_GOP_BATCHNORM), g->n[i].name);
		}
		p->folded++;
	}
	int dead = remove_dead(p);
	if (dead < 0)
		return ts_last_status(g->ctx);
	p->folded += dead;
	return TS_OK;
}

/* ---- fusion ----------------------------------------------------------------------- */

/* Anchors whose output tile can take elementwise nodes. */
static bool fusable_anchor(ts_gop op)
{
	switch (op) {
	case TS_GOP_CONV:
	case TS_GOP_GEMM:
	case TS_GOP_MATMUL:
	case TS_GOP_MAXPOOL:
	case TS_GOP_AVGPOOL:
	case TS_GOP_GLOBALAVGPOOL:
	case TS_GOP_TRANSPOSE:
	case TS_GOP_CONCAT:
		return true;
	default:
		return false;
	}
}

static bool fusable_elementwise(const gpass *p, int node)
{
	return g_is_elementwise(p->g->n[node].op) || p->ns[node].affine;
}

static bool same_shape(const gvalue *a, const gvalue *b)
{
	return a->ndim == b->ndim && !memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim);
}

#define MAX_PENDING 64

/* The most nodes a fused group's epilogue may hold counted as a tree: a
 * node that reads a value twice (x * sigmoid(x)) doubles its operand, and
 * the register-blocked schedules and the simplifier expand the shared DAG
 * into that tree, so a chain of SiLUs grew its kernel's expression (and
 * compile time and memory) exponentially until it hit TS_MAX_EXPR_DEPTH.
 * Real epilogues (bias, batch norm, relu6, a residual, GELU) count 2 to
 * 20; a chain past the budget goes on in a kernel of its own. */
#define MAX_TREE 128

/* How many times the kernel's expression of node n (graph_kernels.c
 * node_expr) reads its input k: GELU reads x twice (exact) or five times
 * (the tanh form), a Pow by a constant 2 or 3 its base up to three times;
 * counted once, a chain of eight GELUs passed the budget's check and
 * still grew past TS_MAX_EXPR_NODES. */
static int reads_of(const gnode *n, int k)
{
	switch (n->op) {
	case TS_GOP_GELU:
		return n->a.approximate ? 5 : 2;
	case TS_GOP_POW:
		return k == 0 ? 3 : 1;
	default:
		return 1;
	}
}

/* The tree size of node n over operands of size 1. */
static int tree_of(const gnode *n)
{
	int size = 1;
	for (int k = 0; k < n->nin; k++)
		size += reads_of(n, k);
	return size;
}

typedef struct pending {
	int v[MAX_PENDING], left[MAX_PENDING];
	int n;
} pending;

static int pending_find(const pending *q, int v)
{
	for (int i = 0; i < q->n; i++)
		if (q->v[i] == v)
			return i;
	return -1;
}

/* Adds value v to the n values of list (at most G_MAX_ARGS - 1) unless it
 * is there; false when it is not and the list is full. */
static bool add_outside(int *list, int *n, int v)
{
	for (int i = 0; i < *n; i++)
		if (list[i] == v)
			return true;
	if (*n == G_MAX_ARGS - 1)
		return false;
	list[(*n)++] = v;
	return true;
}

/* Extends group gr, whose value so far is gr->out, with the longest run
 * of elementwise nodes after it that reads only gr's values and values
 * computed before gr's first node, and that closes again on one value (a
 * region with one way out: x -> {div, erf, add, mul} -> y).  start is
 * the index of gr's first node. */
static void extend(gpass *p, ggroup *gr, int start)
{
	ts_graph *g = p->g;
	const gvalue *shape = &g->v[gr->out];
	pending q = {.n = 1};
	q.v[0] = gr->out;
	q.left[0] = p->uses[gr->out];
	if (g->v[gr->out].is_output || !q.left[0])
		return;
	/* room left in gr->reg; the values the kernel reads from outside
	 * (one argument each, the output being the last of G_MAX_ARGS) */
	int room = (int)(sizeof gr->reg / sizeof gr->reg[0]) - gr->nreg;
	int reg[64], nreg = 0, best = 0, best_out = -1, next = 0, outside[G_MAX_ARGS];
	const gnode *head = &g->n[gr->anchor >= 0 ? gr->anchor : gr->reg[0]];
	for (int k = 0; k < head->nin; k++)
		add_outside(outside, &next, head->in[k]);
	int first = g->v[gr->out].node + 1;
	/* tree sizes: of the group's value so far, and of each reg[] node's */
	int out_tree = gr->anchor >= 0 ? 1 : tree_of(&g->n[gr->reg[0]]), tree[64];
	for (int m = first; m < g->nn && q.n; m++) {
		gnode *n = &g->n[m];
		if (p->ns[m].dead)
			continue;
		bool reads = false;
		for (int k = 0; k < n->nin; k++)
			reads |= pending_find(&q, n->in[k]) >= 0;
		if (!reads)
			continue;
		if (p->ns[m].group >= 0 || !fusable_elementwise(p, m) || nreg == room ||
		    !same_shape(&g->v[n->out], shape))
			break;
		bool ok = true;
		int grown = next, size = 1;
		for (int k = 0; k < n->nin && ok; k++) {
			const gvalue *in = &g->v[n->in[k]];
			bool inside = n->in[k] == gr->out;
			int in_tree = inside ? out_tree : 1;
			for (int r = 0; r < nreg && !inside; r++)
				if (g->n[reg[r]].out == n->in[k]) {
					inside = true;
					in_tree = tree[r];
				}
			size += in_tree * reads_of(n, k);
			/* computed by a node the outer loop has not reached:
			 * its kernel would run after this one */
			if (!inside && in->kind == GV_NODE && in->node > start &&
			    p->ns[in->node].group < 0)
				ok = false;
			/* one argument more than a kernel takes: the chain
			 * goes on in a kernel of its own */
			if (!inside && !add_outside(outside, &grown, n->in[k]))
				ok = false;
		}
		if (!ok || size > MAX_TREE)
			break;
		next = grown;
		for (int k = 0; k < n->nin; k++) {
			int i = pending_find(&q, n->in[k]);
			if (i >= 0 && --q.left[i] == 0) {
				q.v[i] = q.v[q.n - 1];
				q.left[i] = q.left[--q.n];
			}
		}
		tree[nreg] = size;
		reg[nreg++] = m;
		if (q.n == MAX_PENDING)
			break;
		q.v[q.n] = n->out;
		q.left[q.n++] = p->uses[n->out];
		if (q.n == 1) {
			best = nreg;
			best_out = n->out;
		}
		if (g->v[n->out].is_output || !p->uses[n->out])
			break;
	}
	for (int r = 0; r < best; r++) {
		gr->reg[gr->nreg++] = reg[r];
		p->ns[reg[r]].group = (int)(gr - p->groups);
	}
	if (best)
		gr->out = best_out;
}

ts_status g_pass_fuse(gpass *p, bool no_fuse)
{
	ts_graph *g = p->g;
	TS_TRY(g_count_uses(p));
	p->groups = calloc((size_t)g->nn + 1, sizeof(*p->groups));
	if (!p->groups)
		return ts_error(g->ctx, TS_ERR_NOMEM, "graph_compile: out of memory");
	for (int i = 0; i < g->nn; i++)
		p->ns[i].group = -1;
	for (int i = 0; i < g->nn; i++) {
		if (p->ns[i].dead || p->ns[i].group >= 0)
			continue;
		ggroup *gr = &p->groups[p->ngroups];
		gnode *n = &g->n[i];
		gr->out = n->out;
		gr->anchor = -1;
		if (fusable_elementwise(p, i))
			gr->reg[gr->nreg++] = i;
		else
			gr->anchor = i;
		p->ns[i].group = p->ngroups++;
		if (!no_fuse && (gr->anchor < 0 || fusable_anchor(n->op)))
			extend(p, gr, i);
		if (gr->nreg > (gr->anchor < 0))
			p->fused += gr->nreg - (gr->anchor < 0);
		if (p->trace && gr->nreg > (gr->anchor < 0)) {
			trace(p, "fuse: %s", gr->anchor >= 0 ? g->n[gr->anchor].name : "");
			for (int r = 0; r < gr->nreg; r++)
				trace(p, "%s%s", r || gr->anchor >= 0 ? " + " : "", g->n[gr->reg[r]].name);
			trace(p, "\n");
		}
	}
	return TS_OK;
}

/* ---- memory planning ---------------------------------------------------------------- */

typedef struct placed {
	int64_t off, end;
	int first, last;
} placed;

static int by_size_desc(const void *a, const void *b, void *size)
{
	const int64_t *s = size;
	int x = *(const int *)a, y = *(const int *)b;
	return s[x] < s[y] ? 1 : s[x] > s[y] ? -1 : x - y;
}

int64_t g_plan_memory(int n, const int64_t *size, const int *first, const int *last,
		      int64_t *offset)
{
	/* greedy by size, largest first: each buffer goes to the lowest offset
	 * where no buffer live at the same time overlaps it */
	int *order = malloc(sizeof(int) * (size_t)(n + 1));
	placed *pl = malloc(sizeof(placed) * (size_t)(n + 1));
	if (!order || !pl) {
		free(order);
		free(pl);
		return -1;
	}
	for (int i = 0; i < n; i++)
		order[i] = i;
	qsort_r(order, (size_t)n, sizeof(int), by_size_desc, (void *)size);
	int np = 0;
	int64_t total = 0;
	for (int oi = 0; oi < n; oi++) {
		int i = order[oi];
		int64_t sz = (size[i] + 63) & ~(int64_t)63, off = 0;
		for (bool moved = true; moved;) {
			moved = false;
			for (int k = 0; k < np; k++)
				if (pl[k].first <= last[i] && first[i] <= pl[k].last && off < pl[k].end &&
				    pl[k].off < off + sz) {
					off = pl[k].end;
					moved = true;
				}
		}
		pl[np++] = (placed){off, off + sz, first[i], last[i]};
		offset[i] = off;
		if (off + sz > total)
			total = off + sz;
	}
	free(order);
	free(pl);
	return total;
}
