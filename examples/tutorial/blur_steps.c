/*
 * blur_steps.c - tessera-tutorial blur: Halide's two-stage 3x3 blur, and
 * where to compute the first stage.
 *
 *   blur_x[y, x] = (in[y, x] + in[y, x+1] + in[y, x+2]) / 3     (N+2) x N
 *   blur_y[y, x] = (blur_x[y, x] + blur_x[y+1, x] + blur_x[y+2, x]) / 3   N x N
 *
 * Inlining blur_x recomputes each of its points three times; computing it
 * at root computes each once but streams the whole intermediate image
 * through memory; computing it at a row or a tile of blur_y trades a few
 * recomputed rows for an intermediate that stays in cache; storing it at
 * a block of rows while computing it per row (store_at, Halide's sliding
 * window) computes each row once and keeps a block's rows.  Each step
 * prints the region of blur_x one iteration of its loop computes (bound
 * inference, ts_schedule_bounds_str) and how many blur_x points the whole
 * run computes, counted from the loop IR.  The tile step also prints the
 * nest after each of its primitives (ts_schedule_step_str, what
 * TESSERA_PRINT_STEPS prints to stderr).
 */
#include <stdio.h>
#include <string.h>

#include "tutorial.h"

/* The rows of blur_y per tile, and its columns in vectors. */
#define TILE_ROWS 32
#define TILE_VECTORS 16

static ts_tensor *blur_x_of(const tut_graph *g)
{
	return g->args[1]->inputs[0];
}

static bool make(tut_graph *g, int step)
{
	(void)step;
	ts_ctx *ctx = g->ctx;
	int64_t n = g->n;
	ts_tensor *in = ts_placeholder(ctx, "input", TS_SHAPE(n + 2, n + 2), ts_float32);
	ts_expr *y = ts_var(ctx, "y"), *x = ts_var(ctx, "x"), *third = ts_float(ctx, 1.0 / 3);
	ts_expr *one = ts_const(ctx, ts_int32, 1), *two = ts_const(ctx, ts_int32, 2);
	ts_expr *sx = ts_add(ctx, ts_add(ctx, TS_READ(ctx, in, y, x), TS_READ(ctx, in, y, ts_add(ctx, x, one))),
			     TS_READ(ctx, in, y, ts_add(ctx, x, two)));
	ts_tensor *bx = ts_compute(ctx, "blur_x", TS_SHAPE(n + 2, n), TS_VARS(y, x), ts_mul(ctx, sx, third));
	y = ts_var(ctx, "y"), x = ts_var(ctx, "x");
	ts_expr *sy = ts_add(ctx, ts_add(ctx, TS_READ(ctx, bx, y, x), TS_READ(ctx, bx, ts_add(ctx, y, one), x)),
			     TS_READ(ctx, bx, ts_add(ctx, y, two), x));
	ts_tensor *by = ts_compute(ctx, "blur_y", TS_SHAPE(n, n), TS_VARS(y, x), ts_mul(ctx, sy, third));
	if (!by)
		return false;
	g->nargs = 2;
	g->args[0] = in;
	g->args[1] = by;
	g->s = ts_create_schedule(ctx, 1, &by);
	return g->s != NULL;
}

#define SX(g) ts_stage_of((g)->s, blur_x_of(g))
#define SY(g) ts_stage_of((g)->s, (g)->args[1])

static ts_status inline_all(tut_graph *g)
{
	return ts_compute_inline(SX(g));
}

static ts_status root(tut_graph *g)
{
	(void)g;
	return TS_OK;
}

/* The last axis of st in vectors of lanes, the tail partitioned off, and
 * its first axis parallel (when it is not NULL). */
static ts_status vector_rows(tut_graph *g, ts_stage *st, ts_axis *par)
{
	ts_axis *xo, *xi;
	ts_status rc = ts_split_tail(st, ts_axis_of(st, 1), g->lanes, TS_TAIL_PARTITION, &xo, &xi);
	if (rc == TS_OK)
		rc = ts_vectorize(st, xi);
	if (rc == TS_OK && par)
		rc = ts_parallel(st, par);
	return rc;
}

static ts_status root_vector(tut_graph *g)
{
	ts_stage *sx = SX(g), *sy = SY(g);
	g->parallel = true;
	ts_status rc = vector_rows(g, sx, ts_axis_of(sx, 0));
	return rc == TS_OK ? vector_rows(g, sy, ts_axis_of(sy, 0)) : rc;
}

static ts_status at_row(tut_graph *g)
{
	ts_stage *sx = SX(g), *sy = SY(g);
	ts_axis *y = ts_axis_of(sy, 0);
	g->parallel = true;
	ts_status rc = vector_rows(g, sy, y);
	if (rc == TS_OK)
		rc = ts_compute_at(sx, sy, y);
	return rc == TS_OK ? vector_rows(g, sx, NULL) : rc;
}

/* blur_y in blocks of TILE_ROWS rows (in parallel), blur_x stored at the
 * block and computed per row: the window slides down the block. */
static ts_status sliding(tut_graph *g)
{
	ts_stage *sx = SX(g), *sy = SY(g);
	ts_axis *yo, *yi;
	g->parallel = true;
	ts_status rc = ts_split(sy, ts_axis_of(sy, 0), TILE_ROWS, &yo, &yi);
	if (rc == TS_OK)
		rc = vector_rows(g, sy, yo);
	if (rc == TS_OK)
		rc = ts_compute_at(sx, sy, yi);
	if (rc == TS_OK)
		rc = ts_store_at(sx, sy, yo);
	return rc == TS_OK ? vector_rows(g, sx, NULL) : rc;
}

/* Prints the nest as it stands after one call of the tile step. */
static void show(tut_graph *g, const char *call)
{
	printf("\nafter %s\n```\n", call);
	tut_print_head(ts_schedule_step_str(g->s), g->lines);
	printf("```\n");
}

#define STEP(g, call, text)                      \
	do {                                     \
		ts_status rc_ = (call);          \
		if (rc_ != TS_OK)                \
			return rc_;              \
		show((g), (text));               \
	} while (0)

static ts_status at_tile(tut_graph *g)
{
	ts_stage *sx = SX(g), *sy = SY(g);
	ts_axis *yo, *xo, *yi, *xi, *xio, *xii, *t;
	g->parallel = true;
	printf("\nthe nest after each call (ts_schedule_step_str; TESSERA_PRINT_STEPS=1 prints "
	       "the same to stderr):\n");
	STEP(g, ts_tile(sy, ts_axis_of(sy, 0), ts_axis_of(sy, 1), TILE_ROWS, TILE_VECTORS * g->lanes, &yo,
			&xo, &yi, &xi), "ts_tile(sy, ...)");
	STEP(g, ts_split(sy, xi, g->lanes, &xio, &xii), "ts_split(sy, xi, ...)");
	STEP(g, ts_vectorize(sy, xii), "ts_vectorize(sy, xii)");
	STEP(g, ts_fuse(sy, yo, xo, &t), "ts_fuse(sy, yo, xo, &t)");
	STEP(g, ts_parallel(sy, t), "ts_parallel(sy, t)");
	STEP(g, ts_compute_at(sx, sy, t), "ts_compute_at(sx, sy, t)");
	STEP(g, ts_split(sx, ts_axis_of(sx, 1), g->lanes, &xio, &xii), "ts_split(sx, ...)");
	STEP(g, ts_vectorize(sx, xii), "ts_vectorize(sx, xii)");
	return TS_OK;
}

/* The loops around the statement being counted. */
typedef struct trip_loops {
	const ts_expr *var[64];
	int64_t ext[64];
	int n;
} trip_loops;

/* The extent of the enclosing loop over v when cond is `v == 0` (the
 * first iteration of a sliding window), else 0. */
static int64_t first_of(const trip_loops *l, const ts_expr *cond)
{
	int64_t z;
	if (cond->kind != IR_EQ || !ir_is_const_int(cond->u.bin.b, &z) || z != 0)
		return 0;
	for (int i = 0; i < l->n; i++)
		if (l->var[i] == cond->u.bin.a)
			return l->ext[i];
	return 0;
}

/* Trip counts of the stores to the buffer `name` under s, each store
 * counted once per iteration of the loops around it (both branches of an
 * if: an upper bound where a tail is guarded; a sliding window's first
 * iteration once per run of its loop). */
static int64_t stores_to(const ts_stmt *s, const char *name, int64_t trips, trip_loops *l)
{
	int64_t n = 0, ext;
	switch (s ? s->kind : IR_S_EVALUATE) {
	case IR_S_FOR:
		if (!ir_is_const_int(s->u.for_.extent, &ext))
			ext = 1;
		if (l->n < 64)
			l->var[l->n] = s->u.for_.var, l->ext[l->n++] = ext;
		n = stores_to(s->u.for_.body, name, trips * ext, l);
		l->n--;
		return n;
	case IR_S_STORE:
		return strcmp(s->u.store.buf->name, name) == 0 ? trips * s->u.store.value->dtype.lanes : 0;
	case IR_S_ALLOCATE:
		return stores_to(s->u.alloc.body, name, trips, l);
	case IR_S_IF:
		ext = first_of(l, s->u.if_.cond);
		if (ext > 0)
			return stores_to(s->u.if_.then_s, name, trips / ext, l) +
			       stores_to(s->u.if_.else_s, name, trips - trips / ext, l);
		return stores_to(s->u.if_.then_s, name, trips, l) + stores_to(s->u.if_.else_s, name, trips, l);
	case IR_S_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			n += stores_to(s->u.seq.s[i], name, trips, l);
		return n;
	case IR_S_LET:
		return stores_to(s->u.let.body, name, trips, l);
	default:
		return 0;
	}
}

/* The line of ts_schedule_bounds_str about blur_x. */
static void print_region(tut_graph *g)
{
	const char *b = ts_schedule_bounds_str(g->s), *p = b ? strstr(b, "blur_x:") : NULL;
	if (p)
		printf("  blur_x%.*s\n", (int)strcspn(p + 7, "\n"), p + 7);
}

static void explain(tut_graph *g, const ts_func *f)
{
	trip_loops loops = {.n = 0};
	int64_t n = g->n, image = n * n, pts = stores_to(f->body, "blur_x", 1, &loops);
	printf("\nblur_x region (bound inference: per iteration of the loop it is computed at):\n");
	if (pts == 0) {
		printf("  inlined: each blur_y point computes the 3 blur_x points it reads\n");
		pts = 3 * image;
	} else {
		print_region(g);
	}
	printf("blur_x points computed: %lld for %lld points of blur_y (%.2f per point; blur_x has "
	       "%lld)\n",
	       (long long)pts, (long long)image, (double)pts / (double)image, (long long)((n + 2) * n));
}

static void describe(const tut_graph *g)
{
	printf("blur_y[%lld, %lld] = 3x3 box blur of input[%lld, %lld] in two passes, float32",
	       (long long)g->n, (long long)g->n, (long long)g->n + 2, (long long)g->n + 2);
}

/* Bytes a perfect cache would move: the input read once, blur_y written. */
static double work(const tut_graph *g)
{
	return 4.0 * ((double)(g->n + 2) * (g->n + 2) + (double)g->n * g->n);
}

/* Each step's code: C statements that compile with s, sx (blur_x's stage),
 * sy (blur_y's) and lanes in scope (docs/TUTORIAL_BLUR.md). */
static const tut_step steps[] = {
	{"inline", "blur_x inlined into blur_y: no intermediate image, but every blur_x point is "
		   "computed three times, once for each blur_y row that reads it.",
	 "ts_compute_inline(sx);", inline_all},
	{"compute_root", "blur_x computed once, whole, before blur_y (the default): no redundant "
			 "work, but the intermediate image goes through memory between the passes.",
	 "/* no schedule calls: every stage is computed at root */", root},
	{"compute_root, vectorized and parallel",
	 "The same two passes with rows on all cores and vectors of `lanes` floats along x.",
	 "ts_axis *xo, *xi;\n"
	 "ts_split_tail(sx, ts_axis_of(sx, 1), lanes, TS_TAIL_PARTITION, &xo, &xi);\n"
	 "ts_vectorize(sx, xi);\nts_parallel(sx, ts_axis_of(sx, 0));\n"
	 "ts_split_tail(sy, ts_axis_of(sy, 1), lanes, TS_TAIL_PARTITION, &xo, &xi);\n"
	 "ts_vectorize(sy, xi);\nts_parallel(sy, ts_axis_of(sy, 0));",
	 root_vector},
	{"compute_at a row", "blur_x computed per row of blur_y: the 3 rows it needs stay in L1, "
			     "but each blur_x row is computed 3 times (by 3 rows of blur_y).",
	 "ts_axis *y = ts_axis_of(sy, 0), *xo, *xi;\n"
	 "ts_split_tail(sy, ts_axis_of(sy, 1), lanes, TS_TAIL_PARTITION, &xo, &xi);\n"
	 "ts_vectorize(sy, xi);\nts_parallel(sy, y);\n"
	 "ts_compute_at(sx, sy, y);\n"
	 "ts_split_tail(sx, ts_axis_of(sx, 1), lanes, TS_TAIL_PARTITION, &xo, &xi);\n"
	 "ts_vectorize(sx, xi);",
	 at_row},
	{"compute_at a tile", "blur_x computed per tile of 32 rows x 16 vectors of blur_y: 34 rows "
			      "for 32, so only 2 in 32 are recomputed, and the tile stays in L2.",
	 "ts_axis *yo, *xo, *yi, *xi, *xio, *xii, *t;\n"
	 "ts_tile(sy, ts_axis_of(sy, 0), ts_axis_of(sy, 1), 32, 16 * lanes, &yo, &xo, &yi, &xi);\n"
	 "ts_split(sy, xi, lanes, &xio, &xii);\nts_vectorize(sy, xii);\n"
	 "ts_fuse(sy, yo, xo, &t);\nts_parallel(sy, t);\n"
	 "ts_compute_at(sx, sy, t);\n"
	 "ts_split(sx, ts_axis_of(sx, 1), lanes, &xio, &xii);\nts_vectorize(sx, xii);",
	 at_tile},
	{"sliding window", "blur_y in blocks of 32 rows on the cores; blur_x stored at the block "
			   "(store_at) and computed per row: the first row of a block computes 3 rows, "
			   "each later row only the one it lacks.",
	 "ts_axis *yo, *yi, *xo, *xi;\n"
	 "ts_split(sy, ts_axis_of(sy, 0), 32, &yo, &yi);\n"
	 "ts_split_tail(sy, ts_axis_of(sy, 1), lanes, TS_TAIL_PARTITION, &xo, &xi);\n"
	 "ts_vectorize(sy, xi);\nts_parallel(sy, yo);\n"
	 "ts_compute_at(sx, sy, yi);\nts_store_at(sx, sy, yo);\n"
	 "ts_split_tail(sx, ts_axis_of(sx, 1), lanes, TS_TAIL_PARTITION, &xo, &xi);\n"
	 "ts_vectorize(sx, xi);",
	 sliding},
};

static const int nsteps = (int)TS_COUNT_OF(steps);

static const tut_cpu blur = {
	.name = "blur",
	.steps = steps,
	.nsteps = (int)TS_COUNT_OF(steps),
	.make = make,
	.describe = describe,
	.work = work,
	.unit = "GB/s",
	.explain = explain,
};

static int run(const tut_opts *o, tut_report *rep)
{
	return tut_run_cpu(&blur, o, rep);
}

static const char *step_name(int i)
{
	return steps[i].name;
}

const tutorial tut_blur = {
	.name = "blur",
	.about = "Halide's two-stage 3x3 blur of an (N+2) x (N+2) float32 image: inline,\n"
		 "  root, or computed at a row or a tile of the output.  N defaults to 4096.",
	.default_size = 4096,
	.max_size = 32768,
	.nsteps = &nsteps,
	.step_name = step_name,
	.run = run,
};
