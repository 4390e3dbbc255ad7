/*
 * tune.c - the tuner's search (tune.h): measure the default, then mutate
 * the best few candidates one parameter at a time, rank the mutants with
 * an analytic cost model and measure only the most promising.
 *
 * Every candidate is compiled in a context of its own, so a refused or
 * wrong candidate leaves nothing in the caller's context and the arena
 * does not grow with the number of trials.  The inputs are random (never
 * zeros) and made once per task; the reference output is ts_eval's when
 * the task is small enough for the naive evaluator, else the default
 * schedule's (which is then trusted: the tests check it against ts_eval).
 * Only the mutations drawn depend on the seed; timings never repeat
 * exactly, so the selection is by the medians measured in this run.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "eval.h"
#include "te.h"
#include "threadpool.h"
#include "tune_internal.h"

/* Tasks up to this many floating-point operations get ts_eval's result as
 * the reference (about a second of the naive evaluator). */
#define TUNE_EVAL_MAX_FLOPS 2e7
#define TUNE_RTOL 1e-3
#define TUNE_MAX_BEAM 16
/* candidates built at once (ts_build_all) before they are timed */
#define TUNE_MAX_BATCH 8
/* three-parameter mutants drawn per parent in a wide round */
#define TUNE_WIDE_TRIES 6

typedef struct scored {
	ts_tune_cand c;
	double ms;
} scored;

/* The buffers candidates are timed on: ts_cold_sets copies of the
 * arguments (the inputs in the candidates' layout, then the output),
 * kept while candidates take arguments of the same shapes, made again
 * when one's layout differs (conv2d's channel blocks). */
typedef struct tune_sets {
	int n, nargs;
	ts_array *a[TS_COLD_MAX_SETS][5];
} tune_sets;

typedef struct tune_run {
	ts_ctx *ctx;
	const ts_tune_task *t;
	const ts_tune_opts *o;
	ts_tune_result *r;
	int nin;
	ts_array *in[4];
	float *ref;          /* the plain output */
	int64_t nref;
	uint64_t start_ns, rng;
	int nseen, capseen;
	ts_tune_cand *seen;
	int nbeam;
	scored beam[TUNE_MAX_BEAM];
	bool wide;           /* mutants of three parameters (the near ones spent) */
	tune_sets sets;
} tune_run;

ts_tune_opts ts_tune_opts_default(void)
{
	return (ts_tune_opts){.budget_s = 10, .seed = 1, .patience = 8, .beam = 4, .measure_top = 6,
			      .warmup = 2, .repeat = 7};
}

static uint64_t next_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- the cost model ------------------------------------------------------------ */

static double spill(double vectors)
{
	return vectors > 28 ? vectors / 28 : 1; /* 32 vector registers, a few for operands */
}

static double cost_matmul(const ts_tune_task *t, const ts_tune_cand *c)
{
	const ts_tune_space *sp = &t->space;
	double mr = (double)tune_param(sp, c, "mr", 4), nr = (double)tune_param(sp, c, "nr", 16);
	double lanes = t->lanes, vecs = ceil(nr / lanes) * mr;
	double vec = fmod(nr, lanes) == 0 ? 1 : 0.6;
	double reuse = mr * nr / (mr + nr); /* FMAs per loaded element */
	double par = tune_param(sp, c, "parallel", 1) ? 2 : 1;
	double ku = tune_param(sp, c, "kunroll", 4) == 1 ? 1.15 : 1;
	double pack = !tune_param(sp, c, "pack", 1) && t->shape[0] >= 64 ? 1.3 : 1;
	return spill(vecs) * ku * pack / (vec * reuse * par);
}

/* blocked 0 is the default schedule: one vector, a parallel loop. */
static double cost_batch_matmul(const ts_tune_task *t, const ts_tune_cand *c)
{
	if (!tune_param(&t->space, c, "blocked", 0))
		return 2.0 / (double)t->lanes;
	return cost_matmul(t, c);
}

/* ow_block 0 is the schedule's own choice (ts_conv2d_cpu_ow_block of the
 * channel block), as wide as the output row at most: taken literally it
 * scored the default, and every neighbour keeping it, infinite, so the
 * search never measured them. */
static double cost_conv2d(const ts_tune_task *t, const ts_tune_cand *c)
{
	const ts_tune_space *sp = &t->space;
	const int64_t *s = t->shape; /* N C H W K R S stride pad */
	int64_t owb = tune_param(sp, c, "ow_block", 14), ocb = tune_param(sp, c, "oc_block", 16);
	int64_t row = (s[3] + 2 * s[8] - s[6]) / s[7] + 1;
	if (owb == 0)
		owb = ts_conv2d_cpu_ow_block(ocb);
	owb = owb < row ? owb : row;
	double ow = (double)(owb > 1 ? owb : 1), oc = (double)ocb;
	double lanes = t->lanes, vecs = ow * ceil(oc / lanes);
	double vec = oc >= lanes ? 1 : oc / lanes;
	double reuse = ow * ceil(oc / lanes) / (ow + ceil(oc / lanes));
	double par = tune_param(sp, c, "parallel", 1) ? 2 : 1;
	return spill(vecs) / (vec * reuse * par);
}

/* depthwise, on NCHW[x]c: every output pixel's channel lanes are one full
 * vector, so a block of ow_block x oh_block pixels holds that many
 * accumulators (spilling past the registers); a block that does not divide
 * the row computes a partial one; a wider block reuses more of each input
 * row it loads (ow_block outputs from (ow_block - 1) * stride + R inputs).
 * A block of 0 is the shape's own choice: up to 14 columns, one row, more
 * rows on narrow planes. */
static double cost_depthwise(const ts_tune_task *t, const ts_tune_cand *c)
{
	const ts_tune_space *sp = &t->space;
	const int64_t *s = t->shape; /* N C H W R stride pad */
	double ow = (double)((s[3] + 2 * s[6] - s[4]) / s[5] + 1), r = (double)s[4], st = (double)s[5];
	double owb = (double)tune_param(sp, c, "ow_block", 0), ohb = (double)tune_param(sp, c, "oh_block", 0);
	owb = fmin(owb > 0 ? owb : 14, ow);
	ohb = ohb > 0 ? ohb : fmax(1, floor(14 / owb));
	double used = ow / (ceil(ow / owb) * owb);
	double reuse = owb * r / ((owb - 1) * st + r);
	double par = tune_param(sp, c, "parallel", 1) ? 2 : 1;
	return spill(owb * ohb) / (used * reuse * par);
}

/* The generic sketch: vector use of the inner tile, the parallel outer
 * loop, the loop overhead of small tiles and the inner working set
 * against a 32 KB L1. */
static double cost_generic(const ts_tune_task *t, const ts_tune_cand *c)
{
	const ts_tune_space *sp = &t->space;
	int64_t sketch = tune_param(sp, c, "sketch", 0);
	double inner = 1, tile[TS_TUNE_MAX_PARAMS] = {0};
	char name[TS_TUNE_NAME];
	int nd = 0;
	for (; nd < TS_TUNE_MAX_PARAMS; nd++) {
		snprintf(name, sizeof name, "tile%d", nd);
		int64_t f = tune_param(sp, c, name, -1);
		if (f < 0)
			break;
		inner *= (double)f;
		tile[nd] = (double)f;
	}
	int vd = nd - 1 - (nd > 1 && tune_param(sp, c, "vaxis", 0) == 1);
	double last = vd >= 0 ? tile[vd] : 1; /* the vectorized tile */
	if (sketch == 0)
		return 1.0 / ((double)t->lanes * 2); /* a vector and a parallel loop */
	bool vec = tune_param(sp, c, "vec", 0), inside = sketch == 2 && !tune_param(sp, c, "cache", 0);
	double v = vec && !inside ? (fmod(last, t->lanes) == 0 ? t->lanes : 1.5) : 1;
	double par = tune_param(sp, c, "parallel", 0) ? 2 : 1;
	double ws = inner * 4 * 3, mem = ws > 32768 ? 1 + ws / 32768 * 0.1 : 1;
	double overhead = 1 + 4.0 / inner + (tune_param(sp, c, "unroll", 0) ? 0 : 0.1);
	return mem * overhead / (v * par);
}

static double tune_cost(const ts_tune_task *t, const ts_tune_cand *c);

double ts_tune_cost(const ts_tune_task *t, const ts_tune_cand *c)
{
	if (!c || tune_task_check(NULL, t, "tune_cost") != TS_OK)
		return INFINITY;
	/* a value no schedule takes (ts_tune_lower refuses it) never ranks */
	if (tune_check_cand(NULL, "tune_cost", t, c) != TS_OK)
		return INFINITY;
	double cost = tune_cost(t, c);
	return cost >= 0 ? cost : INFINITY; /* NaN too */
}

static double tune_cost(const ts_tune_task *t, const ts_tune_cand *c)
{
	const char *k = t->space.kind;
	if (!strcmp(k, "matmul"))
		return cost_matmul(t, c);
	if (!strcmp(k, "conv2d"))
		return cost_conv2d(t, c);
	if (!strcmp(k, "batch_matmul"))
		return cost_batch_matmul(t, c);
	if (!strcmp(k, "depthwise"))
		return cost_depthwise(t, c);
	if (!strcmp(k, "softmax")) {
		double l = (double)tune_param(&t->space, c, "lanes", t->lanes);
		return 1 + fabs(log2(l / t->lanes)) * 0.3;
	}
	return cost_generic(t, c);
}

/* ---- measuring one candidate ------------------------------------------------------ */

/* The candidate's output in the plain layout (conv2d's is blocked by
 * `y` output channels: Yc[N, K/y, OH, OW, y]). */
static float plain_at(const ts_array *a, int64_t y, int64_t i)
{
	const float *p = a->data;
	if (!y)
		return p[i];
	int64_t OW = a->shape[3], OH = a->shape[2], K = a->shape[1] * y;
	int64_t w = i % OW, h = i / OW % OH, k = i / (OW * OH) % K, n = i / (OW * OH * K);
	return p[(((n * a->shape[1] + k / y) * OH + h) * OW + w) * y + k % y];
}

static bool close_enough(const tune_run *R, const ts_array *got, int64_t y)
{
	double maxref = 0, maxerr = 0;
	for (int64_t i = 0; i < R->nref; i++) {
		double g = plain_at(got, y, i), w = R->ref[i];
		if (!(fabs(g - w) <= maxerr)) /* NaN counts */
			maxerr = isnan(g) ? INFINITY : fabs(g - w);
		maxref = fmax(maxref, fabs(w));
	}
	return maxerr <= TUNE_RTOL * (maxref > 0 ? maxref : 1);
}

typedef enum { M_OK, M_INVALID, M_WRONG } m_status;

/* ---- the buffers candidates run on ---------------------------------------------- */

static void free_sets(tune_sets *S)
{
	for (int i = 0; i < S->n; i++)
		for (int j = 0; j < S->nargs; j++)
			ts_array_free(S->a[i][j]);
	S->n = S->nargs = 0;
}

/* Whether the sets hold f's arguments (dtypes and shapes). */
static bool sets_fit(const tune_sets *S, const ts_func *f)
{
	if (S->n == 0 || S->nargs != f->nparams)
		return false;
	for (int j = 0; j < f->nparams; j++) {
		const ts_tensor *t = f->param_tensors[j];
		const ts_array *a = S->a[0][j];
		if (a->ndim != t->ndim || !ts_dtype_eq(a->dtype, t->dtype) ||
		    memcmp(a->shape, t->shape, (size_t)t->ndim * sizeof *t->shape))
			return false;
	}
	return true;
}

/* conv2d: the task's inputs X[N, C, H, W] and W[K, C, R, S] blocked into
 * the kernel's Xc[N, C/ib, H, W, ib] and Wc[K/ob, C/ib, R, S, ib, ob]. */
static void block_inputs(const tune_run *R, ts_array *const *bl)
{
	const int64_t *xs = bl[0]->shape, *ws = bl[1]->shape;
	int64_t N = xs[0], ib = xs[4], C = xs[1] * ib, HW = xs[2] * xs[3];
	int64_t ob = ws[5], K = ws[0] * ob, RS = ws[2] * ws[3];
	const float *x = R->in[0]->data, *w = R->in[1]->data;
	float *xc = bl[0]->data, *wc = bl[1]->data;
	for (int64_t n = 0; n < N; n++)
		for (int64_t ci = 0; ci < C; ci++)
			for (int64_t p = 0; p < HW; p++)
				xc[((n * (C / ib) + ci / ib) * HW + p) * ib + ci % ib] = x[(n * C + ci) * HW + p];
	for (int64_t k = 0; k < K; k++)
		for (int64_t ci = 0; ci < C; ci++)
			for (int64_t r = 0; r < RS; r++)
				wc[(((k / ob) * (C / ib) + ci / ib) * RS + r) * ib * ob + (ci % ib) * ob + k % ob] =
					w[(k * C + ci) * RS + r];
}

/* Makes the sets for f's arguments unless they are there: set 0's inputs
 * are the task's (blocked for conv2d), the other sets copies of them;
 * every output is written once here, so that no timed call pays for its
 * pages' first touch.  Errors go to ctx. */
static bool make_sets(tune_run *R, ts_ctx *ctx, const ts_func *f)
{
	tune_sets *S = &R->sets;
	if (sets_fit(S, f))
		return true;
	free_sets(S);
	int nargs = f->nparams;
	if (nargs != R->nin + 1)
		return false;
	double bytes = 0;
	for (int j = 0; j < nargs; j++)
		bytes += (double)ts_tensor_numel(f->param_tensors[j]) * ts_dtype_bytes(f->param_tensors[j]->dtype);
	int n = ts_cold_sets(bytes);
	bool conv = !strcmp(R->t->op, "conv2d");
	for (int i = 0; i < n; i++) {
		ts_array **a = S->a[i];
		S->n = i + 1, S->nargs = nargs; /* free_sets frees what was made */
		for (int j = 0; j < nargs; j++)
			if (!(a[j] = ts_array_for(ctx, f->param_tensors[j])))
				return false;
		for (int j = 0; j < R->nin; j++) {
			const ts_array *from = i > 0 ? S->a[0][j] : R->in[j];
			if (!conv || i > 0)
				memcpy(a[j]->data, from->data, ts_array_nbytes(a[j]));
		}
		if (conv && i == 0)
			block_inputs(R, a);
		memset(a[R->nin]->data, 0, ts_array_nbytes(a[R->nin]));
	}
	return true;
}

typedef struct rotor {
	ts_module *m;
	const tune_sets *S;
	int next;
} rotor;

static int rotor_call(void *arg)
{
	rotor *r = arg;
	int i = r->next;
	r->next = (i + 1) % r->S->n;
	return ts_module_run(r->m, r->S->nargs, r->S->a[i]) == TS_OK ? 0 : 1;
}

/* Runs c's module m, built in ctx from f (what tune_lower_timed gives),
 * on set 0 and checks its output (*out, owned by the sets) against the
 * reference when there is one; then times it, each call on the next set
 * (ts_cold_sets: as tessera-bench does), *ms the median. */
static m_status run_built(tune_run *R, ts_ctx *ctx, const ts_tune_cand *c, const ts_func *f,
			  ts_module *m, const ts_array **out, double *ms)
{
	*out = NULL;
	if (!m || !make_sets(R, ctx, f))
		return M_INVALID;
	const tune_sets *S = &R->sets;
	R->r->sets = S->n;
	*out = S->a[0][S->nargs - 1];
	if (ts_module_run(m, S->nargs, S->a[0]) != TS_OK)
		return M_INVALID;
	if (R->ref && !close_enough(R, *out, tune_out_block(R->t, c)))
		return M_WRONG;
	rotor r = {m, S, 1 % S->n};
	ts_timing tm;
	if (ts_time_run(ctx, rotor_call, &r, R->o->warmup, R->o->repeat, 1, &tm) != TS_OK)
		return M_INVALID;
	*ms = tm.median * 1e3;
	return M_OK;
}

/* Builds, runs, checks and times c in ctx. */
static m_status measure_in(tune_run *R, ts_ctx *ctx, const ts_tune_cand *c, const ts_array **out,
			   ts_module **m, double *ms)
{
	ts_func *f = tune_lower_timed(ctx, R->t, c);
	*m = f ? ts_build(ctx, f, "llvm") : NULL;
	return run_built(R, ctx, c, f, *m, out, ms);
}

/* Measures c; with keep_ref, its output becomes the reference. */
static m_status measure(tune_run *R, const ts_tune_cand *c, double *ms, bool keep_ref)
{
	ts_ctx *ctx = ts_ctx_new();
	if (!ctx)
		return M_INVALID;
	const ts_array *out = NULL;
	ts_module *m = NULL;
	m_status st = measure_in(R, ctx, c, &out, &m, ms);
	if (st == M_OK && keep_ref && !R->ref) {
		R->nref = ts_array_numel(out);
		R->ref = malloc((size_t)R->nref * sizeof *R->ref);
		for (int64_t i = 0; R->ref && i < R->nref; i++)
			R->ref[i] = plain_at(out, tune_out_block(R->t, c), i);
	}
	/* a wrong result is tessera's fault; a failure keeps its cause's
	 * status (choices narrowed to values a primitive refuses: invalid) */
	ts_status why = st == M_WRONG || ts_last_status(ctx) == TS_OK ? TS_ERR_INTERNAL : ts_last_status(ctx);
	if (st != M_OK && keep_ref)
		ts_error(R->ctx, why, "tune %s: the default schedule %s%s", R->t->op,
			 st == M_WRONG ? "computes a wrong result (off the reference by more than 1e-3 of "
					 "its largest value)" : "fails: ",
			 st == M_WRONG ? "" : ts_last_error(ctx));
	ts_module_free(m);
	ts_ctx_free(ctx);
	return st;
}

/* ---- inputs and the reference ------------------------------------------------------ */

static ts_status make_inputs(tune_run *R)
{
	ts_tensor *args[4], *plain;
	ts_tune_cand def = ts_tune_default(R->t);
	int n = tune_graph(R->ctx, R->t, &def, args, &plain);
	if (!n)
		return ts_last_status(R->ctx);
	R->nin = n - 1;
	for (int i = 0; i < R->nin; i++) {
		R->in[i] = ts_array_for(R->ctx, args[i]);
		if (!R->in[i])
			return ts_last_status(R->ctx);
		ts_array_fill_random(R->in[i], 1234 + (uint64_t)i, -1, 1);
	}
	if (ts_tune_task_flops(R->t) > TUNE_EVAL_MAX_FLOPS) {
		R->r->reference = "the default schedule";
		return TS_OK;
	}
	R->r->reference = "ts_eval";
	R->nref = ts_tensor_numel(plain);
	R->ref = calloc((size_t)R->nref, sizeof *R->ref);
	if (!R->ref)
		return ts_error(R->ctx, TS_ERR_NOMEM, "tune %s: out of memory", R->t->op);
	ts_tensor *bind[5];
	void *data[5];
	for (int i = 0; i < R->nin; i++)
		bind[i] = args[i], data[i] = R->in[i]->data;
	bind[R->nin] = plain, data[R->nin] = R->ref;
	return ts_eval(R->ctx, R->nin + 1, bind, data);
}

/* ---- the search ------------------------------------------------------------------- */

static double elapsed_s(const tune_run *R)
{
	return ts_ms_since(R->start_ns) / 1e3;
}

/* The default's value for parameters the schedule ignores, so that equal
 * schedules are one candidate, measured once: all of them where sketch or
 * blocked is 0 (the default schedule); a conv2d's pad mode where it has no
 * padding; a matmul's pack_at where B is not packed, and its prefetch
 * where B is packed (a stage read from cache) or the reduction runs in
 * chunks. */
static ts_tune_cand canonical(const ts_tune_task *t, ts_tune_cand c)
{
	const ts_tune_space *sp = &t->space;
	const char *first = sp->name[0];
	if ((!strcmp(first, "sketch") || !strcmp(first, "blocked")) && c.v[0] == 0)
		for (int i = 1; i < sp->nparams; i++)
			c.v[i] = sp->choice[i][0];
	int pad = tune_param_index(sp, "pad");
	if (!strcmp(sp->kind, "conv2d") && pad >= 0 && t->shape[8] == 0)
		c.v[pad] = sp->choice[pad][0];
	if (strcmp(sp->kind, "matmul"))
		return c;
	int pack = tune_param_index(sp, "pack"), at = tune_param_index(sp, "pack_at");
	int kc = tune_param_index(sp, "kc"), pf = tune_param_index(sp, "prefetch");
	bool packed = pack >= 0 && c.v[pack] != 0;
	if (at >= 0 && !packed)
		c.v[at] = sp->choice[at][0];
	if (pf >= 0 && (packed || (kc >= 0 && c.v[kc] > 0 && c.v[kc] < t->shape[t->nshape - 1])))
		c.v[pf] = sp->choice[pf][0];
	return c;
}

static bool seen(const tune_run *R, const ts_tune_cand *c)
{
	for (int i = 0; i < R->nseen; i++)
		if (!memcmp(&R->seen[i], c, sizeof *c))
			return true;
	return false;
}

static void mark_seen(tune_run *R, const ts_tune_cand *c)
{
	if (R->nseen == R->capseen) {
		int cap = R->capseen ? 2 * R->capseen : 64;
		ts_tune_cand *p = realloc(R->seen, (size_t)cap * sizeof *p);
		if (!p)
			return; /* may measure a candidate twice; harmless */
		R->seen = p, R->capseen = cap;
	}
	R->seen[R->nseen++] = *c;
}

static void keep(tune_run *R, const ts_tune_cand *c, double ms)
{
	int cap = R->o->beam < 1 ? 1 : R->o->beam > TUNE_MAX_BEAM ? TUNE_MAX_BEAM : R->o->beam;
	int i;
	if (R->nbeam < cap)
		i = R->nbeam++;
	else if (ms < R->beam[cap - 1].ms)
		i = cap - 1;
	else
		return;
	while (i > 0 && R->beam[i - 1].ms > ms) {
		R->beam[i] = R->beam[i - 1];
		i--;
	}
	R->beam[i] = (scored){*c, ms};
}

static void report(tune_run *R)
{
	if (!R->o->progress)
		return;
	double gf = ts_tune_task_flops(R->t) / (R->r->best_ms * 1e6);
	ts_tune_progress p = {R->r->trials, R->r->invalid, R->r->best_ms, gf, elapsed_s(R)};
	R->o->progress(&p, R->o->user);
}

/* Counts a measured candidate of the search; true when it is the new
 * best. */
static bool counted(tune_run *R, const ts_tune_cand *c, m_status st, double ms)
{
	R->r->invalid += st == M_INVALID;
	R->r->wrong += st == M_WRONG;
	if (st != M_OK)
		return false;
	R->r->trials++;
	keep(R, c, ms);
	bool better = ms < R->r->best_ms;
	if (better)
		R->r->best = *c, R->r->best_ms = ms;
	report(R);
	return better;
}

/* Measures one candidate of the search; true when it is the new best. */
static bool trial(tune_run *R, const ts_tune_cand *c)
{
	double ms;
	mark_seen(R, c);
	m_status st = measure(R, c, &ms, false);
	return counted(R, c, st, ms);
}

static bool out_of_budget(const tune_run *R);

/* Measures the n candidates c[] as trial would, one after another, but
 * builds them first all at once (ts_build_all: compiling, most of a
 * trial's time, on every core; the runs are timed alone).  Where the
 * batch fails to build, each candidate is built on its own, so that one
 * that cannot be built counts as invalid and the others still run.
 * Stops when the budget is spent, after the first; true when one was
 * the new best. */
static bool trials(tune_run *R, const ts_tune_cand *c, int n)
{
	ts_ctx *ctx = ts_ctx_new();
	const ts_func *f[TUNE_MAX_BATCH] = {0}, *ok[TUNE_MAX_BATCH];
	ts_module *m[TUNE_MAX_BATCH] = {0}, *built[TUNE_MAX_BATCH];
	int nok = 0;
	bool better = false;
	n = n > TUNE_MAX_BATCH ? TUNE_MAX_BATCH : n;
	for (int i = 0; ctx && i < n; i++)
		if ((f[i] = tune_lower_timed(ctx, R->t, &c[i])))
			ok[nok++] = f[i];
	if (ctx && ts_build_all(ctx, nok, ok, "llvm", built) == TS_OK)
		for (int i = 0, j = 0; i < n; i++)
			m[i] = f[i] ? built[j++] : NULL;
	else
		for (int i = 0; ctx && i < n; i++)
			m[i] = f[i] ? ts_build(ctx, f[i], "llvm") : NULL;
	/* the first is measured even when the builds spent the budget: a
	 * round measures one candidate at least, as one at a time did */
	for (int i = 0; i < n && (i == 0 || !out_of_budget(R)); i++) {
		double ms = 0;
		const ts_array *out = NULL;
		mark_seen(R, &c[i]);
		m_status st = ctx ? run_built(R, ctx, &c[i], f[i], m[i], &out, &ms) : M_INVALID;
		better |= counted(R, &c[i], st, ms);
	}
	for (int i = 0; i < n; i++)
		ts_module_free(m[i]);
	ts_ctx_free(ctx);
	return better;
}

static bool out_of_budget(const tune_run *R)
{
	return elapsed_s(R) >= R->o->budget_s ||
	       (R->o->max_trials > 0 && R->r->trials + R->r->invalid + R->r->wrong >= R->o->max_trials);
}

/* One parameter of c set to another of its values. */
static ts_tune_cand mutate(tune_run *R, ts_tune_cand c, int p)
{
	const ts_tune_space *sp = &R->t->space;
	int n = sp->nchoice[p];
	int k = (int)(next_rand(&R->rng) % (uint64_t)n);
	if (sp->choice[p][k] == c.v[p])
		k = (k + 1) % n;
	c.v[p] = sp->choice[p][k];
	return canonical(R->t, c);
}

typedef struct mutant {
	ts_tune_cand c;
	double cost;
} mutant;

static int by_cost(const void *a, const void *b)
{
	double x = ((const mutant *)a)->cost, y = ((const mutant *)b)->cost;
	return x < y ? -1 : x > y;
}

static void add_mutant(tune_run *R, mutant *m, int *n, int cap, ts_tune_cand c)
{
	if (*n == cap || seen(R, &c))
		return;
	for (int i = 0; i < *n; i++)
		if (!memcmp(&m[i].c, &c, sizeof c))
			return;
	m[(*n)++] = (mutant){c, ts_tune_cost(R->t, &c)};
}

/* One round: the parents' mutants ranked by the cost model, the best few
 * measured.  Returns whether one was faster than the best so far, and -1
 * when there was nothing left to try. */
static int round_once(tune_run *R)
{
	enum { CAP = TUNE_MAX_BEAM * (TS_TUNE_MAX_PARAMS + 4) };
	mutant m[CAP];
	int n = 0, np = R->t->space.nparams;
	if (R->wide) {
		/* three parameters at once, each parent in turn, in the order
		 * drawn: the cost model ranked the near ones already */
		for (int k = 0; k < TUNE_WIDE_TRIES; k++)
			for (int b = 0; b < R->nbeam; b++) {
				ts_tune_cand c = R->beam[b].c;
				for (int j = 0; j < 3; j++) {
					int p = (int)(next_rand(&R->rng) % (uint64_t)np);
					if (R->t->space.nchoice[p] > 1)
						c = mutate(R, c, p);
				}
				add_mutant(R, m, &n, CAP, c);
			}
	}
	for (int b = 0; b < R->nbeam && !R->wide; b++) {
		for (int p = 0; p < np; p++)
			if (R->t->space.nchoice[p] > 1)
				add_mutant(R, m, &n, CAP, mutate(R, R->beam[b].c, p));
		for (int k = 0; k < 3 && np > 1; k++) {
			int p = (int)(next_rand(&R->rng) % (uint64_t)np), q = (int)(next_rand(&R->rng) % (uint64_t)np);
			if (R->t->space.nchoice[p] > 1 && R->t->space.nchoice[q] > 1)
				add_mutant(R, m, &n, CAP, mutate(R, mutate(R, R->beam[b].c, p), q));
		}
	}
	if (n == 0)
		return -1;
	if (!R->wide)
		qsort(m, (size_t)n, sizeof *m, by_cost);
	int top = R->o->measure_top < 1 ? 1 : R->o->measure_top, better = 0;
	ts_tune_cand batch[TUNE_MAX_BATCH];
	for (int i = 0; i < n && i < top && !out_of_budget(R);) {
		/* no more than max_trials leaves to measure */
		int k = 0, left = TUNE_MAX_BATCH;
		if (R->o->max_trials > 0)
			left = R->o->max_trials - (R->r->trials + R->r->invalid + R->r->wrong);
		for (; i < n && i < top && k < TUNE_MAX_BATCH && k < left; i++)
			batch[k++] = m[i].c;
		better |= trials(R, batch, k);
	}
	return better;
}

static ts_status check_opts(ts_ctx *ctx, const ts_tune_task *t, const ts_tune_opts *o)
{
	if (tune_task_check(ctx, t, "tune") != TS_OK)
		return ts_last_status(ctx);
	if (!o)
		return ts_error(ctx, TS_ERR_INVALID, "tune: NULL options");
	if (!(o->budget_s > 0) || o->budget_s > 1e6)
		return ts_error(ctx, TS_ERR_INVALID, "tune %s: budget_s must be above 0 (and at most 10^6 s), got %g",
				t->op, o->budget_s);
	if (o->warmup < 0 || o->repeat < 1 || o->patience < 1 || o->max_trials < 0 ||
	    o->warmup > TS_TIME_MAX_REPEATS || o->repeat > TS_TIME_MAX_REPEATS)
		return ts_error(ctx, TS_ERR_INVALID,
				"tune %s: warmup 0..%d, repeat 1..%d, patience >= 1 and max_trials >= 0 (got %d, %d, %d, %d)",
				t->op, TS_TIME_MAX_REPEATS, TS_TIME_MAX_REPEATS, o->warmup, o->repeat, o->patience,
				o->max_trials);
	return TS_OK;
}

/* The default, then the start candidate (a log's record) if any. */
static ts_status seed_search(tune_run *R)
{
	ts_tune_cand def = ts_tune_default(R->t);
	double ms;
	R->r->def = R->r->best = def;
	mark_seen(R, &def);
	if (measure(R, &def, &ms, true) != M_OK)
		return ts_last_status(R->ctx);
	R->r->trials = 1;
	R->r->default_ms = R->r->best_ms = ms;
	keep(R, &def, ms);
	report(R);
	if (R->o->start) {
		ts_tune_cand s = canonical(R->t, *R->o->start);
		if (!seen(R, &s))
			trial(R, &s);
	}
	return TS_OK;
}

/* The search kept the candidate with the smallest median, which on a
 * shared, noisy machine may have been timed in a quiet moment: the
 * default and the winner are timed again, alternately, and the winner
 * stays only if it is still faster.  Both results are this run's
 * measurements, so the winner is never recorded slower than the default. */
static void confirm(tune_run *R)
{
	ts_tune_result *r = R->r;
	if (!memcmp(&r->best, &r->def, sizeof r->best))
		return;
	double d[3], b[3];
	for (int i = 0; i < 3; i++)
		if (measure(R, &r->def, &d[i], false) != M_OK || measure(R, &r->best, &b[i], false) != M_OK)
			return;
	r->default_ms = fmin(r->default_ms, ts_median(d, 3));
	r->best_ms = ts_median(b, 3);
	if (r->best_ms >= r->default_ms)
		r->best = r->def, r->best_ms = r->default_ms;
}

ts_status ts_tune(ts_ctx *ctx, const ts_tune_task *t, const ts_tune_opts *o, ts_tune_result *r)
{
	if (!r)
		return ts_error(ctx, TS_ERR_INVALID, "tune: NULL result");
	memset(r, 0, sizeof *r);
	if (check_opts(ctx, t, o) != TS_OK)
		return ts_last_status(ctx);
	/* a fresh start, as ts_lower's: an error left from an earlier call
	 * must not stand for this run's */
	ts_clear_error(ctx);
	tune_run R = {.ctx = ctx, .t = t, .o = o, .r = r, .start_ns = ts_now_ns(), .rng = o->seed};
	ts_status st = make_inputs(&R);
	if (st == TS_OK)
		st = seed_search(&R);
	/* near mutants until `patience` rounds find nothing faster (or none is
	 * left), then wide ones (three parameters) while budget remains,
	 * until they too go `patience` rounds without a faster candidate; a
	 * wide round that finds one goes back to the near mutants of it */
	for (int stale = 0; st == TS_OK && !out_of_budget(&R);) {
		int b = stale < o->patience ? round_once(&R) : -1;
		if (b < 0) {
			if (R.wide)
				break;
			R.wide = true, stale = 0;
			continue;
		}
		r->rounds++;
		if (b)
			R.wide = false;
		stale = b ? 0 : stale + 1;
	}
	if (st == TS_OK)
		confirm(&R);
	r->elapsed_s = elapsed_s(&R);
	for (int i = 0; i < R.nin; i++)
		ts_array_free(R.in[i]);
	free_sets(&R.sets);
	free(R.ref);
	free(R.seen);
	return st;
}
