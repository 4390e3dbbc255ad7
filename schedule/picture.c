/*
 * picture.c - the loop nest of a stage drawn for students (picture.h).
 *
 * Three sources, all the schedule's own: the leaf axes in order (the
 * loops), the split and fuse relations (how each loop variable relates to
 * the original axes, both ways), and bound inference (pass_schedule_ops's
 * log) for the extents of stages computed at a loop.  The tiling drawings
 * run the stage's data-parallel leaf loops as an odometer, rebuild the
 * root indices from the leaf values through the relations in reverse, skip
 * points a split's tail guard would skip, and record, per output element,
 * the order it is first written in and the tile it belongs to.
 */
#include "picture.h"

#include <stdlib.h>
#include <string.h>

#include "passes.h"
#include "sbuf.h"

#define MAX_AXES 64         /* as in schedule.c: axes ever made in one stage */
#define MAX_WORK (1 << 26)  /* leaf and relation updates for one drawing */
#define SVG_TILE_CLIP 32    /* elements per side of the enlarged tile */

/* ---- relations ---------------------------------------------------------------- */

static int axis_index(const ts_stage *st, const ts_axis *a)
{
	for (int i = 0; i < st->nall; i++)
		if (st->all[i] == a)
			return i;
	return -1;
}

/* The relation that made a (NULL for a root axis). */
static const sch_relation *made_by(const ts_stage *st, const ts_axis *a)
{
	for (int i = 0; i < st->nrel; i++) {
		const sch_relation *r = &st->rel[i];
		if (r->kind == SCH_REL_SPLIT ? r->outer == a || r->inner == a : r->fused == a)
			return r;
	}
	return NULL;
}

/* The relation that consumed a (NULL for a leaf). */
static const sch_relation *used_by(const ts_stage *st, const ts_axis *a)
{
	for (int i = 0; i < st->nrel; i++) {
		const sch_relation *r = &st->rel[i];
		if (r->kind == SCH_REL_SPLIT ? r->parent == a : r->outer == a || r->inner == a)
			return r;
	}
	return NULL;
}

/* a in terms of the root axes: i.outer = i / 32, i.j.fused = i*70 + j. */
static void forward(ts_sbuf *sb, const ts_stage *st, const ts_axis *a, bool paren)
{
	const sch_relation *r = made_by(st, a);
	if (!r) {
		ts_sb_puts(sb, a->name);
		return;
	}
	if (r->kind == SCH_REL_SPLIT) {
		ts_sb_puts(sb, paren ? "(" : "");
		forward(sb, st, r->parent, true);
		ts_sb_printf(sb, " %c %lld", a == r->outer ? '/' : '%', (long long)r->inner->extent);
		ts_sb_puts(sb, paren ? ")" : "");
		return;
	}
	ts_sb_puts(sb, paren ? "(" : "");
	forward(sb, st, r->outer, true);
	ts_sb_printf(sb, "*%lld + ", (long long)r->inner->extent);
	forward(sb, st, r->inner, true);
	ts_sb_puts(sb, paren ? ")" : "");
}

/* a in terms of the leaf axes: i = i.outer*32 + i.inner. */
static void backward(ts_sbuf *sb, const ts_stage *st, const ts_axis *a, bool paren)
{
	const sch_relation *r = used_by(st, a);
	if (!r) {
		ts_sb_puts(sb, a->name);
		return;
	}
	if (r->kind == SCH_REL_SPLIT) {
		ts_sb_puts(sb, paren ? "(" : "");
		backward(sb, st, r->outer, true);
		ts_sb_printf(sb, "*%lld + ", (long long)r->inner->extent);
		backward(sb, st, r->inner, true);
		ts_sb_puts(sb, paren ? ")" : "");
		return;
	}
	ts_sb_puts(sb, paren ? "(" : "");
	backward(sb, st, r->fused, true);
	ts_sb_printf(sb, " %c %lld", a == r->outer ? '/' : '%', (long long)r->inner->extent);
	ts_sb_puts(sb, paren ? ")" : "");
}

/* What a split or fuse that made a leaf adds: the tail when it does not
 * divide, the sources of a fuse. */
static void origin_note(ts_sbuf *sb, const ts_stage *st, const ts_axis *a)
{
	const sch_relation *r = made_by(st, a);
	if (!r)
		return;
	if (r->kind == SCH_REL_FUSE) {
		ts_sb_printf(sb, "   (fuses %s [%lld] and %s [%lld])", r->outer->name,
			     (long long)r->outer->extent, r->inner->name, (long long)r->inner->extent);
		return;
	}
	int64_t e = r->parent->extent, oe = r->outer->extent, ie = r->inner->extent;
	if (a != r->outer || oe * ie == e)
		return;
	ts_sb_printf(sb, "   (%s: %lld = %lld x %lld does not divide: the last %s runs %lld of %lld, %s)",
		     r->parent->name, (long long)e, (long long)oe, (long long)ie, r->inner->name,
		     (long long)(e - (oe - 1) * ie), (long long)ie,
		     r->tail == TS_TAIL_PARTITION ? "a separate tail nest" : "guarded");
}

/* ---- the text tree ------------------------------------------------------------ */

typedef struct pic {
	ts_schedule *s;
	ts_sbuf *sb;
	const char *log;     /* bound inference's log, NULL when it failed */
	const char *why;     /* why bound inference failed */
} pic;

static const char *kind_name(const ts_axis *a)
{
	if (a->loop == TS_FOR_THREAD)
		return ts_thread_tag_name(a->thread);
	return a->loop == TS_FOR_SERIAL ? "serial" : ts_for_kind_name(a->loop);
}

/* The start of the log's line "<name>: compute_at ..." (NULL if none). */
static const char *log_region_line(const char *log, const char *name)
{
	size_t n = strlen(name);
	for (const char *l = log; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, name, n) && !strncmp(l + n, ": compute_at ", 13))
			return l;
	return NULL;
}

/* The extent bound inference gave leaf i of an attached stage, from the
 * "  loops: a[3] b[4]" line after its region line; -1 if not found. */
static int64_t attached_extent(const pic *p, const ts_stage *x, int leaf)
{
	const char *l = p->log ? log_region_line(p->log, x->name) : NULL;
	l = l ? strstr(l, "\n  loops:") : NULL;
	if (!l)
		return -1;
	l += strlen("\n  loops:");
	for (int i = 0; i < x->nleaf; i++) {
		size_t n = strlen(x->leaf[i]->name);
		if (l[0] != ' ' || strncmp(l + 1, x->leaf[i]->name, n) || l[1 + n] != '[')
			return -1;
		char *end;
		long long v = strtoll(l + 2 + n, &end, 10);
		if (i == leaf)
			return v;
		l = strchr(end, ']') ? strchr(end, ']') + 1 : end;
	}
	return -1;
}

static void stage_lines(pic *p, const ts_stage *st, int depth);

/* One loop line: "for NAME [EXT]  KIND  FORMULA  NOTE". */
static void loop_line(pic *p, const ts_stage *st, int i, int depth)
{
	const ts_axis *a = st->leaf[i];
	int64_t ext = st->attach == SCH_ATTACH_AT ? attached_extent(p, st, i) : a->extent;
	char head[320], extent[32];
	if (ext < 0)
		snprintf(extent, sizeof(extent), "?");
	else
		snprintf(extent, sizeof(extent), "%lld", (long long)ext);
	snprintf(head, sizeof(head), "%*sfor %s [%s]", 2 * depth, "", a->name, extent);
	ts_sb_printf(p->sb, "%-34s %-11s ", head, kind_name(a));
	if (made_by(st, a)) {
		ts_sb_printf(p->sb, "%s = ", a->name);
		forward(p->sb, st, a, false);
	} else {
		ts_sb_puts(p->sb, a->kind == TS_ITER_REDUCE ? "reduction axis" : "original axis");
	}
	if (a->kind == TS_ITER_REDUCE && made_by(st, a))
		ts_sb_puts(p->sb, " (reduction)");
	origin_note(p->sb, st, a);
	ts_sb_putc(p->sb, '\n');
}

/* The stages computed at leaf i of st, with their own loops inside. */
static void attached_lines(pic *p, const ts_stage *st, int i, int depth)
{
	for (int k = 0; k < p->s->nstages; k++) {
		const ts_stage *x = p->s->stages[k];
		if (x->attach != SCH_ATTACH_AT || x->attach_stage != st || x->attach_axis != st->leaf[i])
			continue;
		ts_sb_printf(p->sb, "%*sstage %s computed here (compute_at %s.%s)", 2 * depth, "",
			     x->name, st->name, st->leaf[i]->name);
		const char *l = p->log ? log_region_line(p->log, x->name) : NULL;
		const char *reg = l ? strchr(l + strlen(x->name) + 13, ':') : NULL;
		if (reg)
			ts_sb_printf(p->sb, ", region%.*s", (int)(strchr(reg, '\n') - reg - 1), reg + 1);
		ts_sb_putc(p->sb, '\n');
		stage_lines(p, x, depth + 1);
	}
}

/* The body line: what the innermost loop computes, and the root indices
 * in terms of the loops. */
static void body_line(pic *p, const ts_stage *st, int depth)
{
	const ts_tensor *t = st->tensor;
	const ts_expr *b = st->body;
	ts_sb_printf(p->sb, "%*s%s[", 2 * depth, "", st->name);
	for (int d = 0; d < t->ndim; d++)
		ts_sb_printf(p->sb, "%s%s", d ? ", " : "", st->root[d]->name);
	if (b && b->kind == IR_REDUCE && b->u.reduce.op == TS_REDUCE_SUM)
		ts_sb_puts(p->sb, "] += ...");
	else if (b && b->kind == IR_REDUCE)
		ts_sb_printf(p->sb, "] = %s(itself, ...)", ts_reduce_op_name(b->u.reduce.op));
	else
		ts_sb_puts(p->sb, "] = ...");
	const char *sep = "  where ";
	for (int r = 0; r < st->nroot; r++) {
		if (!used_by(st, st->root[r]))
			continue;
		ts_sb_printf(p->sb, "%s%s = ", sep, st->root[r]->name);
		backward(p->sb, st, st->root[r], false);
		sep = ", ";
	}
	ts_sb_putc(p->sb, '\n');
}

static void stage_lines(pic *p, const ts_stage *st, int depth)
{
	for (int i = 0; i < st->nleaf; i++) {
		loop_line(p, st, i, depth + i);
		attached_lines(p, st, i, depth + i + 1);
	}
	body_line(p, st, depth + st->nleaf);
}

/* ---- running the data loops -------------------------------------------------- */

/* Per output element (row-major over the window or plane): the order it is
 * first written in, its tile (numbered in the order the tiles first write
 * an element), the innermost-loop run it is in, and the value of the
 * outermost parallel tile loop there (-1 in order and tile: never
 * written; -1 in par: no parallel tile loop). */
typedef struct grid {
	int64_t rows, cols;  /* the part of the output recorded */
	int64_t *order, *tile, *run, *par;
	int64_t left;        /* elements not yet written */
	int ntile;           /* the leading tile loops */
	int width;           /* characters per number in the text grid */
	bool truncated;      /* stopped at MAX_WORK, after `steps` iterations */
	int64_t steps;
	/* while running: elements written, tiles begun, the tile loops'
	 * values of the last write */
	int64_t seq, tiles;
	uint64_t last_tile;
} grid;

/* Where the odometer stands: the tile loops' values (as one number,
 * wrapping harmlessly: it is only compared), the other loops' values but
 * the innermost (the run), and the outermost parallel tile loop's value. */
typedef struct point {
	uint64_t tile, run;
	int64_t par;
} point;

/* Is a made by the outer part of a split, or a fuse of two such? */
static bool is_outer(const ts_stage *st, const ts_axis *a)
{
	const sch_relation *r = made_by(st, a);
	if (!r)
		return false;
	if (r->kind == SCH_REL_SPLIT)
		return r->outer == a;
	return is_outer(st, r->outer) && is_outer(st, r->inner);
}

/* The data leaves, outermost first; returns how many, and in *ntile how
 * many of the leading ones are tile loops. */
static int data_leaves(const ts_stage *st, const ts_axis **out, int *ntile)
{
	int n = 0;
	*ntile = -1;
	for (int i = 0; i < st->nleaf; i++) {
		if (st->leaf[i]->kind != TS_ITER_DATA)
			continue;
		if (*ntile < 0 && !is_outer(st, st->leaf[i]))
			*ntile = n;
		out[n++] = st->leaf[i];
	}
	if (*ntile < 0)
		*ntile = n;
	return n;
}

/* A stage's relations by index into st->all, looked up once per drawing
 * rather than once per iteration (a stage split 31 times drew for a
 * minute). */
typedef struct nest_index {
	int nrel;
	int rel[MAX_AXES][3]; /* split: parent, outer, inner; fuse: fused, outer, inner */
	int root[2];
} nest_index;

static void index_nest(const ts_stage *st, nest_index *x)
{
	x->nrel = st->nrel < MAX_AXES ? st->nrel : MAX_AXES;
	for (int k = 0; k < x->nrel; k++) {
		const sch_relation *r = &st->rel[k];
		x->rel[k][0] = axis_index(st, r->kind == SCH_REL_SPLIT ? r->parent : r->fused);
		x->rel[k][1] = axis_index(st, r->outer);
		x->rel[k][2] = axis_index(st, r->inner);
	}
	x->root[0] = axis_index(st, st->root[0]);
	x->root[1] = axis_index(st, st->root[1]);
}

/* The root values from the leaf values in val[] (indexed like st->all),
 * through the relations in reverse. */
static void rebuild_roots(const ts_stage *st, const nest_index *x, int64_t *val)
{
	for (int k = x->nrel - 1; k >= 0; k--) {
		const sch_relation *r = &st->rel[k];
		int64_t ie = r->inner->extent;
		const int *ix = x->rel[k];
		if (r->kind == SCH_REL_SPLIT) {
			val[ix[0]] = val[ix[1]] * ie + val[ix[2]];
		} else {
			int64_t f = val[ix[0]];
			val[ix[1]] = f / ie;
			val[ix[2]] = f % ie;
		}
	}
}

/* Records one iteration: the element it writes, if inside the grid. */
static void visit(const ts_stage *st, const nest_index *x, grid *g, const int64_t *val, const point *pt)
{
	int64_t i = val[x->root[0]], j = val[x->root[1]];
	if (i >= st->tensor->shape[0] || j >= st->tensor->shape[1])
		return; /* a tail the split's guard skips */
	if (g->seq == 0 || pt->tile != g->last_tile)
		g->tiles++;
	g->last_tile = pt->tile;
	int64_t order = g->seq++, k = i * g->cols + j;
	if (i >= g->rows || j >= g->cols || g->order[k] >= 0)
		return;
	g->order[k] = order;
	g->tile[k] = g->tiles - 1;
	g->run[k] = (int64_t)(pt->run & INT64_MAX);
	g->par[k] = pt->par;
	g->left--;
}

/* The odometer's point for the loop values idx[] of the data leaves d[]. */
static point point_of(const grid *g, const ts_axis *const *d, int nd, const int64_t *idx)
{
	point pt = {.par = -1};
	for (int k = 0; k < nd; k++) {
		if (k < g->ntile)
			pt.tile = pt.tile * (uint64_t)d[k]->extent + (uint64_t)idx[k];
		if (k < nd - 1)
			pt.run = pt.run * (uint64_t)d[k]->extent + (uint64_t)idx[k];
		if (k < g->ntile && pt.par < 0 && d[k]->loop == TS_FOR_PARALLEL)
			pt.par = idx[k];
	}
	return pt;
}

/* Runs the data leaves of a 2-D stage until every element of the grid is
 * written, or the steps' work (each a pass over the leaves and the
 * relations) reaches MAX_WORK. */
static void run_nest(const ts_stage *st, grid *g)
{
	const ts_axis *d[MAX_AXES];
	int nd = data_leaves(st, d, &g->ntile), leaf[MAX_AXES];
	nest_index x;
	index_nest(st, &x);
	for (int k = 0; k < nd; k++)
		leaf[k] = axis_index(st, d[k]);
	int64_t val[MAX_AXES] = {0}, idx[MAX_AXES] = {0};
	int64_t steps = MAX_WORK / (nd + x.nrel + 1);
	for (int64_t step = 0; g->left > 0; step++) {
		if (step >= steps) {
			g->truncated = true;
			g->steps = steps;
			return;
		}
		for (int k = 0; k < nd; k++)
			val[leaf[k]] = idx[k];
		point pt = point_of(g, d, nd, idx);
		rebuild_roots(st, &x, val);
		visit(st, &x, g, val, &pt);
		int k = nd - 1;
		while (k >= 0 && ++idx[k] == d[k]->extent)
			idx[k--] = 0;
		if (k < 0)
			return;
	}
}

static bool grid_init(ts_ctx *ctx, grid *g, int64_t rows, int64_t cols)
{
	size_t n = (size_t)(rows * cols);
	*g = (grid){.rows = rows, .cols = cols, .left = rows * cols};
	g->order = ts_alloc_array(ctx, n, sizeof(int64_t));
	g->tile = ts_alloc_array(ctx, n, sizeof(int64_t));
	g->run = ts_alloc_array(ctx, n, sizeof(int64_t));
	g->par = ts_alloc_array(ctx, n, sizeof(int64_t));
	if (!g->order || !g->tile || !g->run || !g->par)
		return false;
	for (size_t k = 0; k < n; k++)
		g->order[k] = g->tile[k] = -1;
	return true;
}

/* ---- the text grid ------------------------------------------------------------ */

static void grid_legend(ts_sbuf *sb, const ts_stage *st, const grid *g)
{
	const ts_axis *d[MAX_AXES];
	int ntile;
	data_leaves(st, d, &ntile);
	ts_sb_printf(sb, "order in which the nest first writes %s[0..%lld, 0..%lld]", st->name,
		     (long long)g->rows - 1, (long long)g->cols - 1);
	if (g->rows < st->tensor->shape[0] || g->cols < st->tensor->shape[1])
		ts_sb_printf(sb, " (of %lld x %lld)", (long long)st->tensor->shape[0],
			     (long long)st->tensor->shape[1]);
	if (ntile == 0) {
		ts_sb_puts(sb, "; no tile loops\n");
		return;
	}
	ts_sb_puts(sb, "; | and - separate tiles (values of");
	for (int k = 0; k < ntile; k++)
		ts_sb_printf(sb, "%s%s", k ? ", " : " ", d[k]->name);
	ts_sb_puts(sb, ")\n");
}

/* Wide enough for the largest number, with a space before it. */
static void grid_width(grid *g)
{
	int64_t most = 0;
	for (int64_t k = 0; k < g->rows * g->cols; k++)
		most = g->order[k] > most ? g->order[k] : most;
	g->width = 2;
	for (; most >= 10; most /= 10)
		g->width++;
	g->width = g->width < 4 ? 4 : g->width;
}

/* Do elements a and b lie in different tiles?  (Not known when either
 * was never written.) */
static bool tile_edge(const grid *g, int64_t a, int64_t b)
{
	return g->tile[a] >= 0 && g->tile[b] >= 0 && g->tile[a] != g->tile[b];
}

static void grid_row(ts_sbuf *sb, const grid *g, int64_t i)
{
	ts_sb_puts(sb, "  ");
	for (int64_t j = 0; j < g->cols; j++) {
		int64_t o = g->order[i * g->cols + j];
		if (o < 0)
			ts_sb_printf(sb, "%*s", g->width, "?");
		else
			ts_sb_printf(sb, "%*lld", g->width, (long long)o);
		bool edge = j + 1 < g->cols && tile_edge(g, i * g->cols + j, i * g->cols + j + 1);
		ts_sb_putc(sb, edge ? '|' : ' ');
	}
	ts_sb_putc(sb, '\n');
}

/* The line under row i: dashes below elements whose tile changes. */
static void grid_rule(ts_sbuf *sb, const grid *g, int64_t i)
{
	bool any = false;
	for (int64_t j = 0; j < g->cols; j++)
		any |= tile_edge(g, i * g->cols + j, (i + 1) * g->cols + j);
	if (!any)
		return;
	ts_sb_puts(sb, "  ");
	for (int64_t j = 0; j < g->cols; j++) {
		char c = tile_edge(g, i * g->cols + j, (i + 1) * g->cols + j) ? '-' : ' ';
		for (int k = 0; k <= g->width; k++)
			ts_sb_putc(sb, c);
	}
	ts_sb_putc(sb, '\n');
}

static void text_grid(ts_ctx *ctx, ts_sbuf *sb, const ts_stage *st)
{
	grid g;
	int64_t rows = st->tensor->shape[0], cols = st->tensor->shape[1];
	if (!grid_init(ctx, &g, rows < TS_PICTURE_WINDOW ? rows : TS_PICTURE_WINDOW,
		       cols < TS_PICTURE_WINDOW ? cols : TS_PICTURE_WINDOW))
		return;
	run_nest(st, &g);
	grid_width(&g);
	ts_sb_putc(sb, '\n');
	grid_legend(sb, st, &g);
	for (int64_t i = 0; i < g.rows; i++) {
		grid_row(sb, &g, i);
		if (i + 1 < g.rows)
			grid_rule(sb, &g, i);
	}
	if (g.truncated)
		ts_sb_printf(sb, "  (? elements: not written in the first %lld iterations)\n",
			     (long long)g.steps);
}

/* ---- entry points ---------------------------------------------------------------- */

/* The stage to draw, or NULL with an error naming prim. */
static ts_stage *drawable(ts_schedule *s, const ts_tensor *t, const char *prim)
{
	if (!t) {
		ts_error(s->ctx, TS_ERR_INVALID, "%s: tensor is NULL", prim);
		return NULL;
	}
	ts_stage *st = NULL;
	for (int i = 0; i < s->nstages && !st; i++)
		if (s->stages[i]->tensor == t)
			st = s->stages[i];
	if (!st) {
		ts_error(s->ctx, TS_ERR_INVALID, "%s(%s): tensor has no stage in this schedule (a placeholder, or not reached from the outputs)",
			 prim, t->name);
		return NULL;
	}
	if (st->attach == SCH_ATTACH_INLINE)
		ts_error(s->ctx, TS_ERR_INVALID, "%s(%s): stage is inlined into its readers and has no loops of its own",
			 prim, st->name);
	else if (st->attach == SCH_ATTACH_AT)
		ts_error(s->ctx, TS_ERR_INVALID, "%s(%s): stage is computed at %s.%s; draw %s, whose picture shows it there",
			 prim, st->name, st->attach_stage->name, st->attach_axis->name,
			 st->attach_stage->name);
	return st->attach == SCH_ATTACH_ROOT ? st : NULL;
}

/* Bound inference's log when some stage is attached (it gives their
 * extents); a failure is reported in the picture, not as an error. */
static void infer_bounds(pic *p, ts_sbuf *log)
{
	bool attached = false;
	for (int i = 0; i < p->s->nstages; i++)
		attached |= p->s->stages[i]->attach == SCH_ATTACH_AT;
	if (!attached)
		return;
	if (pass_schedule_ops(p->s->ctx, p->s, log) && !log->oom) {
		p->log = ts_sb_str(log);
		return;
	}
	p->why = ts_strdup(p->s->ctx, ts_last_error(p->s->ctx));
	ts_clear_error(p->s->ctx);
}

static const char *finish(ts_ctx *ctx, ts_sbuf *sb)
{
	const char *r = sb->oom ? NULL : ts_strdup(ctx, ts_sb_str(sb));
	if (sb->oom)
		ts_error(ctx, TS_ERR_NOMEM, "picture: out of memory");
	ts_sb_free(sb);
	return r;
}

const char *ts_schedule_picture(ts_schedule *s, const ts_tensor *t)
{
	if (!s)
		return NULL;
	ts_clear_error(s->ctx); /* as ts_lower: an earlier call's error is not this one's */
	ts_stage *st = drawable(s, t, "picture");
	if (!st)
		return NULL;
	ts_sbuf sb = {0}, log = {0};
	pic p = {.s = s, .sb = &sb};
	infer_bounds(&p, &log);
	ts_sb_printf(&sb, "loop nest of %s (%d loops, outermost first):\n", st->name, st->nleaf);
	if (p.why)
		ts_sb_printf(&sb, "(bound inference fails, so attached extents are ?: %s)\n", p.why);
	stage_lines(&p, st, 1);
	if (st->tensor->ndim == 2)
		text_grid(s->ctx, &sb, st);
	ts_sb_free(&log);
	return finish(s->ctx, &sb);
}

/* ---- SVG ------------------------------------------------------------------------- */

#define SVG_PLANE 400.0 /* pixels per side of the output plane */
#define SVG_TILE 360.0  /* pixels per side of the enlarged tile */

static const char *const palette[] = {"#9ecae1", "#a1d99b", "#fdae6b", "#bcbddc",
				       "#fc9272", "#c7e9c0", "#fdd0a2", "#dadaeb"};

/* Per tile: its bounding box (lo/hi row and column) and the value of its
 * parallel tile loop, 5 numbers each. */
static void tile_boxes(const grid *g, int64_t ntiles, int64_t *box)
{
	for (int64_t t = 0; t < ntiles; t++) {
		int64_t *b = &box[5 * t];
		b[0] = b[1] = INT64_MAX, b[2] = b[3] = b[4] = -1;
	}
	for (int64_t i = 0; i < g->rows; i++)
		for (int64_t j = 0; j < g->cols; j++) {
			int64_t t = g->tile[i * g->cols + j];
			if (t < 0)
				continue;
			int64_t *b = &box[5 * t];
			b[0] = i < b[0] ? i : b[0], b[1] = j < b[1] ? j : b[1];
			b[2] = i > b[2] ? i : b[2], b[3] = j > b[3] ? j : b[3];
			b[4] = g->par[i * g->cols + j];
		}
}

static void svg_plane(ts_ctx *ctx, ts_sbuf *sb, const ts_stage *st, const grid *g)
{
	int64_t ntiles = 0;
	for (int64_t k = 0; k < g->rows * g->cols; k++)
		ntiles = g->tile[k] + 1 > ntiles ? g->tile[k] + 1 : ntiles;
	int64_t *box = ts_alloc_array(ctx, (size_t)ntiles * 5, sizeof(int64_t));
	if (!box)
		return;
	tile_boxes(g, ntiles, box);
	double cell = SVG_PLANE / (double)(g->rows > g->cols ? g->rows : g->cols);
	ts_sb_printf(sb, "<text x=\"20\" y=\"24\">%s: %lld x %lld, %lld tile%s numbered in the order they run</text>\n",
		     st->name, (long long)g->rows, (long long)g->cols, (long long)ntiles,
		     ntiles == 1 ? "" : "s");
	ts_sb_printf(sb, "<text x=\"20\" y=\"42\">%s</text>\n",
		     g->par[0] >= 0 ? "colour: the value of the parallel loop (one thread each)"
						: "no parallel tile loop");
	for (int64_t t = 0; t < ntiles; t++) {
		const int64_t *b = &box[5 * t];
		if (b[2] < 0)
			continue;
		int64_t pv = b[4];
		const char *fill = pv >= 0 ? palette[pv % 8] : (t % 2 ? "#e0e0e0" : "#f4f4f4");
		double x = 20 + (double)b[1] * cell, y = 60 + (double)b[0] * cell;
		double w = (double)(b[3] - b[1] + 1) * cell, h = (double)(b[2] - b[0] + 1) * cell;
		ts_sb_printf(sb, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" stroke=\"#333\"/>\n",
			     x, y, w, h, fill);
		if (w >= 16 && h >= 12)
			ts_sb_printf(sb, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" font-size=\"10\">%lld</text>\n",
				     x + w / 2, y + h / 2 + 4, (long long)t);
	}
}

/* The first tile, element by element: visit order, and the runs of the
 * innermost loop outlined (orange when it is vectorized). */
static void svg_tile(ts_sbuf *sb, const ts_stage *st, const grid *g, bool vector)
{
	int64_t r0 = INT64_MAX, c0 = INT64_MAX, r1 = -1, c1 = -1;
	for (int64_t i = 0; i < g->rows; i++)
		for (int64_t j = 0; j < g->cols; j++)
			if (g->tile[i * g->cols + j] == 0) {
				r0 = i < r0 ? i : r0, c0 = j < c0 ? j : c0;
				r1 = i > r1 ? i : r1, c1 = j > c1 ? j : c1;
			}
	if (r1 < 0)
		return;
	bool clipped = r1 - r0 >= SVG_TILE_CLIP || c1 - c0 >= SVG_TILE_CLIP;
	r1 = r1 - r0 >= SVG_TILE_CLIP ? r0 + SVG_TILE_CLIP - 1 : r1;
	c1 = c1 - c0 >= SVG_TILE_CLIP ? c0 + SVG_TILE_CLIP - 1 : c1;
	int64_t h = r1 - r0 + 1, w = c1 - c0 + 1;
	double cell = SVG_TILE / (double)(h > w ? h : w), x0 = 460, y0 = 60;
	ts_sb_printf(sb, "<text x=\"%.0f\" y=\"24\">tile 0, %s[%lld..%lld, %lld..%lld]%s: the order of its elements</text>\n",
		     x0, st->name, (long long)r0, (long long)r1, (long long)c0, (long long)c1,
		     clipped ? " (its first 32 x 32)" : "");
	ts_sb_printf(sb, "<text x=\"%.0f\" y=\"42\">%s</text>\n", x0,
		     vector ? "shades of orange: one vector of the innermost loop each"
			    : "shades of blue: one run of the innermost loop each");
	for (int64_t i = r0; i <= r1; i++)
		for (int64_t j = c0; j <= c1; j++) {
			int64_t k = i * g->cols + j;
			if (g->tile[k] != 0)
				continue;
			double x = x0 + (double)(j - c0) * cell, y = y0 + (double)(i - r0) * cell;
			const char *fill = vector ? (g->run[k] % 2 ? "#fdae6b" : "#fd8d3c")
						  : (g->run[k] % 2 ? "#deebf7" : "#c6dbef");
			ts_sb_printf(sb, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" stroke=\"#fff\"/>\n",
				     x, y, cell, cell, fill);
			if (cell >= 14)
				ts_sb_printf(sb, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" font-size=\"%.0f\">%lld</text>\n",
					     x + cell / 2, y + cell / 2 + 3, cell / 3 > 10 ? 10.0 : cell / 3,
					     (long long)g->order[k]);
		}
}

/* The loop tree as SVG text lines, below the drawings. */
static void svg_loops(ts_sbuf *sb, const char *tree)
{
	double y = 500;
	for (const char *l = tree; *l; y += 14) {
		const char *e = strchr(l, '\n');
		int n = e ? (int)(e - l) : (int)strlen(l);
		if (n == 0)
			break; /* the text grid follows: the drawing has it */
		ts_sb_puts(sb, "<text x=\"20\" y=\"");
		ts_sb_printf(sb, "%.0f\" font-family=\"monospace\" font-size=\"11\" xml:space=\"preserve\" style=\"white-space:pre\">", y);
		for (int k = 0; k < n; k++) {
			char c = l[k];
			if (c == '<' || c == '>' || c == '&')
				ts_sb_puts(sb, c == '<' ? "&lt;" : c == '>' ? "&gt;" : "&amp;");
			else
				ts_sb_putc(sb, c);
		}
		ts_sb_puts(sb, "</text>\n");
		l = e ? e + 1 : l + n;
	}
}

static int count_lines(const char *s)
{
	int n = 0;
	for (; *s && !(s[0] == '\n' && s[1] == '\n'); s++)
		n += *s == '\n';
	return n;
}

const char *ts_schedule_svg(ts_schedule *s, const ts_tensor *t)
{
	if (!s)
		return NULL;
	ts_clear_error(s->ctx); /* as ts_lower: an earlier call's error is not this one's */
	ts_stage *st = drawable(s, t, "svg");
	if (!st)
		return NULL;
	if (st->tensor->ndim != 2) {
		ts_error(s->ctx, TS_ERR_INVALID, "svg(%s): draws 2-D outputs only, %s has %d dimensions",
			 st->name, st->name, st->tensor->ndim);
		return NULL;
	}
	int64_t rows = st->tensor->shape[0], cols = st->tensor->shape[1];
	if (rows > TS_PICTURE_SVG_MAX / cols) {
		ts_error(s->ctx, TS_ERR_INVALID, "svg(%s): %lld x %lld elements are more than %d to draw",
			 st->name, (long long)rows, (long long)cols, TS_PICTURE_SVG_MAX);
		return NULL;
	}
	const char *tree = ts_schedule_picture(s, t);
	grid g;
	if (!tree || !grid_init(s->ctx, &g, rows, cols))
		return NULL;
	run_nest(st, &g);
	const ts_axis *d[MAX_AXES];
	int ntile, nd = data_leaves(st, d, &ntile);
	bool vector = nd > 0 && d[nd - 1]->loop == TS_FOR_VECTORIZED;
	ts_sbuf sb = {0};
	ts_sb_printf(&sb, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"860\" height=\"%d\" font-family=\"sans-serif\" font-size=\"13\">\n",
		     520 + 14 * count_lines(tree));
	ts_sb_puts(&sb, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
	svg_plane(s->ctx, &sb, st, &g);
	svg_tile(&sb, st, &g, vector);
	svg_loops(&sb, tree);
	ts_sb_puts(&sb, "</svg>\n");
	return finish(s->ctx, &sb);
}
