/*
 * graph_api_fuzz.c - see graph_api_fuzz.h.
 *
 * A choice is one byte.  Most choices are sensible (small extents, the
 * operator's own number of inputs, attributes that fit the input) so that
 * graphs get built, compiled and compared; a fixed share are absurd (the
 * table `wild` of int64 values, dtypes arrays cannot hold, ids of no
 * value).  Arguments are heap copies of exactly the size the call may
 * read, so that a call reading past them shows under ASan.
 *
 * Cost: the graph is compiled (LLVM) at most once per string, and only
 * when every value is small; the tuner (ts_tune) is called only with
 * options it must refuse.
 */
#include "graph_api_fuzz.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tessera.h"
#include "graph_ref.h"

#define MAX_ACTIONS 64
#define SMALL_NUMEL (1 << 14)   /* values the reference and the compile take */
#define TOTAL_NUMEL (1 << 17)   /* all values together, for a compile */
#define MAX_VALUES 400          /* the reference holds 512 */

typedef struct gaf {
	const uint8_t *d;
	size_t n, pos;
	const char *label;
	ts_ctx *ctx;
	tg *t;                 /* the graph under test and its reference */
	ts_graph *g;
	ts_graph *other;       /* another graph: its ids are not g's */
	bool unref;            /* g has a value the reference does not hold */
	bool i64[MAX_VALUES];  /* the int64 constants */
	bool noref[MAX_VALUES]; /* values the reference does not hold: the
				 * views a MatMul of a 1-D operand makes */
	bool compiled;         /* the one compile of this string was made */
	bool jitted;           /* the one tuning candidate built was */
	int64_t numel;         /* elements of all of g's values */
	int names;             /* fresh names made */
	ts_tune_log *log;      /* the last log loaded (ctx's arena) */
	ts_tune_task task;     /* the last task made */
	bool have_task;
	char path[64];         /* the temporary log file */
	FILE *null;
	gaf_stats st;
	char trace[8192];      /* the calls made, for reports */
	size_t tlen;
} gaf;

static const int64_t wild[] = {
	0, 1, 2, 3, -1, -2, 7, 16, 255, 4096, 65536, 1 << 20, INT32_MAX, (int64_t)INT32_MAX + 1,
	INT32_MIN, -(int64_t)INT32_MAX, (int64_t)1 << 32, (int64_t)1 << 40, INT64_MAX, INT64_MIN,
	INT64_MAX / 2, 3037000500, -65536,
};

static const double wild_f[] = {0, 1, -1, 0.5, 6, -6, 1e-5, 1e-50, 1e30, 1e300, NAN, INFINITY,
				-INFINITY, -0.0, 5e-324, 3.4e38};

/* ---- reading choices and reporting -------------------------------------------------- */

static unsigned byte(gaf *f)
{
	return f->pos < f->n ? f->d[f->pos++] : 0;
}

/* A choice in [0, n), n in 1..256. */
static int pick(gaf *f, int n)
{
	return (int)(byte(f) % (unsigned)n);
}

static bool chance(gaf *f, int percent)
{
	return (int)(byte(f) % 100) < percent;
}

static int64_t wild_i64(gaf *f)
{
	return wild[pick(f, (int)TS_COUNT_OF(wild))];
}

static double wild_double(gaf *f)
{
	return wild_f[pick(f, (int)TS_COUNT_OF(wild_f))];
}

/* A sensible extent (1..4, sometimes up to 20) mostly, else a wild one. */
static int64_t extent(gaf *f)
{
	int k = pick(f, 100);
	return k < 80 ? 1 + pick(f, 4) : k < 93 ? 5 + pick(f, 16) : wild_i64(f);
}

static void note(gaf *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(gaf *f, const char *fmt, ...)
{
	if (f->tlen + 200 >= sizeof(f->trace))
		return;
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(f->trace + f->tlen, sizeof(f->trace) - f->tlen - 1, fmt, ap);
	va_end(ap);
	if (k > 0)
		f->tlen += (size_t)k < sizeof(f->trace) - f->tlen - 1 ? (size_t)k : 0;
	f->trace[f->tlen++] = '\n';
	f->trace[f->tlen] = 0;
}

static void violation(gaf *f, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void violation(gaf *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "graph_api_fuzz (%s): ", f->label ? f->label : "input");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n  last error: %s\ncalls so far:\n%s", ts_last_error(f->ctx), f->trace);
	if (f->g) {
		fprintf(stderr, "graph:\n");
		ts_graph_print(stderr, f->g);
	}
	abort();
}

/* A failed call: its message must be there. */
static void failed(gaf *f, const char *call)
{
	const char *m = ts_last_error(f->ctx);
	if (!m || !*m)
		violation(f, "%s failed without a message", call);
}

/* A call that must fail (bad says why) did or did not. */
static void must_fail(gaf *f, bool ok, const char *call, const char *bad)
{
	if (ok)
		violation(f, "%s succeeded, but %s", call, bad);
	failed(f, call);
}

static int64_t *heap_i64(const int64_t *v, int n)
{
	int64_t *p = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
	if (n > 0)
		memcpy(p, v, sizeof(int64_t) * (size_t)n);
	return p;
}

/* A name: mostly fresh, else one of a few that collide, or none. */
static const char *name_of(gaf *f, char *buf, size_t size)
{
	static const char *const fixed[] = {NULL, "", "x", "y", "w", "x.2d", "%s%n", "c0", "n1"};
	int k = pick(f, 16);
	if (k < (int)TS_COUNT_OF(fixed) && k != 0 && chance(f, 50))
		return fixed[k];
	if (k == 0 && chance(f, 30)) {
		memset(buf, 'n', size - 1); /* a long name */
		buf[size - 1] = 0;
		return buf;
	}
	snprintf(buf, size, "v%d", f->names++);
	return buf;
}

static bool fresh(const char *name)
{
	return name && name[0] == 'v';
}

/* ---- values ------------------------------------------------------------------------ */

static int nvalues(const gaf *f)
{
	int n = 0;
	while (ts_graph_value_shape(f->g, n, NULL, NULL))
		n++;
	return n;
}

/* An existing value (a recent one mostly), or -1 when there is none. */
static int some_value(gaf *f)
{
	int n = nvalues(f);
	if (!n)
		return -1;
	return chance(f, 60) ? n - 1 - pick(f, n < 4 ? n : 4) : pick(f, n < 256 ? n : 256);
}

/* A value id: an existing one mostly, else one of no value. */
static int value_id(gaf *f)
{
	int v = some_value(f);
	if (v >= 0 && chance(f, 90))
		return v;
	int n = nvalues(f);
	const int bad[] = {-1, n, n + 1, n + 100, INT32_MAX, INT32_MIN};
	return bad[pick(f, (int)TS_COUNT_OF(bad))];
}

static int shape_of(gaf *f, int v, int64_t *s)
{
	int nd = 0;
	if (!ts_graph_value_shape(f->g, v, &nd, s))
		violation(f, "value_shape(%d) is false for a value of the graph", v);
	return nd;
}

static int64_t numel_of(int nd, const int64_t *s)
{
	int64_t n = 1;
	for (int d = 0; d < nd; d++)
		n *= s[d];
	return n;
}

/* Whether ndim, shape are what graph.h accepts: 0..6 dimensions, each
 * extent 1..2^31 - 1, at most 2^31 - 1 elements. */
static bool graph_shape_ok(int ndim, const int64_t *shape, int64_t *numel)
{
	const int64_t max = ((int64_t)1 << 31) - 1;
	if (ndim < 0 || ndim > TS_GRAPH_MAX_DIMS || (ndim && !shape))
		return false;
	int64_t n = 1;
	for (int d = 0; d < ndim; d++) {
		if (shape[d] < 1 || shape[d] > max || n > max / shape[d])
			return false;
		n *= shape[d];
	}
	*numel = n;
	return true;
}

static int pick_ndim(gaf *f)
{
	if (chance(f, 90))
		return pick(f, 5);
	const int bad[] = {-1, 5, 6, 7, 9, 100, INT32_MIN};
	return bad[pick(f, (int)TS_COUNT_OF(bad))];
}

static ts_dtype pick_dtype(gaf *f)
{
	if (chance(f, 85))
		return ts_float32;
	const ts_dtype t[] = {ts_int64, ts_float64, ts_float16, ts_int32, ts_bool, ts_int8, TS_DTYPE(200, 32),
			      {TS_TYPE_FLOAT, 32, 4}, {TS_TYPE_FLOAT, 0, 1}, {TS_TYPE_FLOAT, 7, 1},
			      {TS_TYPE_INT, 64, 0}};
	return t[pick(f, (int)TS_COUNT_OF(t))];
}

static bool is_f32(ts_dtype t)
{
	return t.code == ts_float32.code && t.bits == 32 && t.lanes == 1;
}

static bool is_i64(ts_dtype t)
{
	return t.code == ts_int64.code && t.bits == 64 && t.lanes == 1;
}

static void act_input(gaf *f)
{
	char nb[400];
	const char *name = name_of(f, nb, sizeof(nb));
	ts_dtype dt = pick_dtype(f);
	int ndim = pick_ndim(f);
	int64_t s[TS_GRAPH_MAX_DIMS + 4], numel = 0;
	int have = ndim < 0 ? 0 : ndim < (int)TS_COUNT_OF(s) ? ndim : (int)TS_COUNT_OF(s);
	for (int d = 0; d < have; d++)
		s[d] = extent(f);
	int64_t *shape = chance(f, 4) ? NULL : heap_i64(s, have);
	bool shape_ok = graph_shape_ok(ndim, shape, &numel), small = shape_ok && numel <= SMALL_NUMEL;
	note(f, "input '%.20s' %s ndim %d%s", name ? name : "(null)", is_f32(dt) ? "f32" : "other", ndim,
	     shape ? "" : " shape NULL");
	ts_clear_error(f->ctx);
	int v = is_f32(dt) && small ? tg_input(f->t, name, ndim, shape)
				    : ts_graph_input(f->g, name, dt, ndim, shape);
	if (v < 0) {
		failed(f, "graph_input");
		if (fresh(name) && is_f32(dt) && shape_ok)
			violation(f, "graph_input refused a float32 input of a fresh name and a valid shape");
	} else {
		if (!is_f32(dt) || !shape_ok || !name || !*name)
			violation(f, "graph_input accepted an input graph.h refuses (dtype, shape or name)");
		f->unref |= !small;
		f->numel += numel;
	}
	free(shape);
}

static void act_constant(gaf *f)
{
	char nb[400];
	const char *name = name_of(f, nb, sizeof(nb));
	ts_dtype dt = chance(f, 80) ? ts_float32 : pick_dtype(f);
	int ndim = pick_ndim(f);
	int64_t s[TS_GRAPH_MAX_DIMS + 4], numel = 0;
	int have = ndim < 0 ? 0 : ndim < (int)TS_COUNT_OF(s) ? ndim : (int)TS_COUNT_OF(s);
	for (int d = 0; d < have; d++)
		s[d] = extent(f);
	int64_t *shape = chance(f, 3) ? NULL : heap_i64(s, have);
	bool shape_ok = graph_shape_ok(ndim, shape, &numel), small = shape_ok && numel <= SMALL_NUMEL;
	/* data of exactly the bytes the shape says (none for a shape that
	 * is refused or too large for the reference) */
	void *data = NULL;
	if (small && !chance(f, 5)) {
		data = malloc((size_t)numel * 8 + 1);
		for (int64_t i = 0; i < numel; i++) {
			if (is_i64(dt))
				((int64_t *)data)[i] = wild_i64(f);
			else /* mostly in [-1, 1], sometimes NaN, infinity, huge */
				((float *)data)[i] = chance(f, 97) ? (float)(pick(f, 256) - 128) / 128
								   : (float)wild_double(f);
		}
	}
	note(f, "constant '%.20s' %s ndim %d%s%s", name ? name : "(null)", is_f32(dt) ? "f32" : "other", ndim,
	     shape ? "" : " shape NULL", data ? "" : " data NULL");
	ts_clear_error(f->ctx);
	int v = is_f32(dt) && data ? tg_const_data(f->t, name, ndim, shape, data)
				   : ts_graph_constant(f->g, name, dt, ndim, shape, data);
	bool valid_dt = is_f32(dt) || is_i64(dt);
	if (v < 0) {
		failed(f, "graph_constant");
		if (valid_dt && shape_ok && data)
			violation(f, "graph_constant refused a constant with a valid dtype, shape and data");
	} else {
		if (!valid_dt || !shape_ok || !data)
			violation(f, "graph_constant accepted a constant graph.h refuses");
		if (is_i64(dt) && v < MAX_VALUES)
			f->i64[v] = true;
		f->numel += numel;
	}
	free(data);
	free(shape);
}

/* ---- nodes ------------------------------------------------------------------------- */

/* A float32 constant of random values in [-1, 1] for a node's operand;
 * -1 when it cannot be made. */
static int operand(gaf *f, int ndim, const int64_t *shape)
{
	int64_t numel = 0;
	if (!graph_shape_ok(ndim, shape, &numel) || numel > SMALL_NUMEL)
		return -1;
	char nb[32];
	snprintf(nb, sizeof(nb), "k%d", f->names++);
	float *data = malloc(sizeof(float) * (size_t)numel);
	for (int64_t i = 0; i < numel; i++)
		data[i] = (float)(pick(f, 256) - 128) / 128;
	int v = tg_const_data(f->t, nb, ndim, shape, data);
	free(data);
	if (v < 0)
		violation(f, "graph_constant refused the operand constant %s", nb);
	f->numel += numel;
	return v;
}

/* An earlier float32 value of x's shape other than x (a residual), -1
 * when there is none; the most recent mostly. */
static int same_shape_value(gaf *f, int x, int nd, const int64_t *s)
{
	int n = nvalues(f), skip = pick(f, 3);
	for (int v = n - 1; v >= 0; v--) {
		int64_t vs[TS_GRAPH_MAX_DIMS];
		int vnd = shape_of(f, v, vs);
		if (v == x || vnd != nd || memcmp(vs, s, sizeof(int64_t) * (size_t)nd) || (v < MAX_VALUES && f->i64[v]))
			continue;
		if (skip-- == 0)
			return v;
	}
	return -1;
}

/* Operands for op fitting input x (shape s of nd dimensions) into in[1..];
 * returns the number of inputs, 0 when there is no fit. */
static int fit_operands(gaf *f, ts_gop op, int nd, const int64_t *s, ts_gattrs *a, int *in)
{
	int64_t w[TS_GRAPH_MAX_DIMS];
	switch (op) {
	case TS_GOP_CONV: {
		if (nd != 4)
			return 0;
		int64_t group = chance(f, 25) && s[1] % 2 == 0 ? 2 : chance(f, 15) ? s[1] : 1;
		int64_t kh = 1 + pick(f, 3), kw = 1 + pick(f, 3);
		int64_t o = chance(f, 25) ? 8 * (1 + pick(f, 4)) * group : (1 + pick(f, 4)) * group;
		if (group > 1 && group == s[1] && chance(f, 50))
			o = group; /* depthwise */
		a->group = group;
		a->stride[0] = 1 + pick(f, 2), a->stride[1] = 1 + pick(f, 2);
		a->dilation[0] = 1 + pick(f, 2) * chance(f, 20), a->dilation[1] = 1 + pick(f, 2) * chance(f, 20);
		for (int i = 0; i < 4; i++)
			a->pad[i] = pick(f, 3) * chance(f, 50);
		memcpy(w, (int64_t[]){o, s[1] / group, kh, kw}, sizeof(int64_t) * 4);
		in[1] = operand(f, 4, w);
		if (chance(f, 50)) {
			in[2] = operand(f, 1, &o);
			return 3;
		}
		return 2;
	}
	case TS_GOP_GEMM:
	case TS_GOP_MATMUL: {
		if (nd < 1 || (op == TS_GOP_GEMM && nd != 2))
			return 0;
		a->trans_a = op == TS_GOP_GEMM && chance(f, 30);
		a->trans_b = op == TS_GOP_GEMM && chance(f, 30);
		a->alpha = chance(f, 80) ? 1 : wild_double(f);
		a->beta = chance(f, 80) ? 1 : wild_double(f);
		int64_t k = op == TS_GOP_GEMM && a->trans_a ? s[0] : s[nd - 1], n = 1 + pick(f, 5);
		int bn = op == TS_GOP_MATMUL && chance(f, 20) ? 1 : 2;
		w[0] = a->trans_b ? n : k, w[1] = a->trans_b ? k : n;
		if (op == TS_GOP_MATMUL && bn == 2 && chance(f, 40)) {
			/* batched: leading extents that broadcast against x's
			 * (the same, 1, or more of them) */
			int lead = pick(f, 4);
			if (lead + 2 > TS_GRAPH_MAX_DIMS)
				lead = TS_GRAPH_MAX_DIMS - 2;
			int64_t bs[TS_GRAPH_MAX_DIMS];
			for (int d = 0; d < lead; d++) {
				int xd = nd - 2 - lead + d;
				bs[d] = xd >= 0 && chance(f, 70) ? s[xd] : 1 + pick(f, 2) * (xd < 0 || s[xd] == 1);
			}
			bs[lead] = k, bs[lead + 1] = n;
			in[1] = operand(f, lead + 2, bs);
			return 2;
		}
		in[1] = operand(f, bn, bn == 1 ? &k : w);
		if (op == TS_GOP_GEMM && chance(f, 50)) {
			int64_t m = a->trans_a ? s[1] : s[0], c[2] = {chance(f, 50) ? m : 1, n};
			in[2] = chance(f, 50) ? operand(f, 2, c) : operand(f, 1, &n);
			return 3;
		}
		return 2;
	}
	case TS_GOP_LAYERNORM:
		if (nd < 1)
			return 0;
		in[1] = operand(f, 1, &s[nd - 1]);
		if (chance(f, 50)) {
			in[2] = operand(f, 1, &s[nd - 1]);
			return 3;
		}
		return 2;
	case TS_GOP_BATCHNORM:
		if (nd < 2)
			return 0;
		for (int i = 1; i < 5; i++)
			in[i] = operand(f, 1, &s[1]);
		return 5;
	case TS_GOP_CONCAT:
		if (nd < 1)
			return 0;
		a->axis = pick(f, nd) - (chance(f, 50) ? nd : 0);
		int ax = (int)(a->axis < 0 ? a->axis + nd : a->axis), n = 1 + pick(f, 3);
		for (int i = 1; i < n; i++) {
			memcpy(w, s, sizeof(int64_t) * (size_t)nd);
			w[ax] = 1 + pick(f, 3);
			in[i] = chance(f, 30) ? in[0] : operand(f, nd, w);
		}
		return n;
	default:
		if (op < TS_GOP_ADD || op > TS_GOP_POW)
			return 0;
		/* a broadcasting second operand: a suffix of x's shape, some
		 * extents 1, or x itself */
		if (chance(f, 20)) {
			in[1] = in[0];
			return 2;
		}
		if (chance(f, 40) && (in[1] = same_shape_value(f, in[0], nd, s)) >= 0) {
			if (chance(f, 50)) { /* a residual first or second */
				int t = in[0];
				in[0] = in[1], in[1] = t;
			}
			return 2;
		}
		int k = pick(f, nd + 1);
		for (int d = 0; d < k; d++)
			w[d] = chance(f, 30) ? 1 : s[nd - k + d];
		in[1] = operand(f, k, w);
		if (chance(f, 30)) { /* the operand first */
			int t = in[0];
			in[0] = in[1], in[1] = t;
		}
		return 2;
	}
}

/* Sensible attributes of op on x: pooling windows, axes, permutations and
 * shapes that fit. */
static void fit_attrs(gaf *f, ts_gop op, int nd, const int64_t *s, ts_gattrs *a)
{
	switch (op) {
	case TS_GOP_MAXPOOL:
	case TS_GOP_AVGPOOL:
		a->kernel[0] = 1 + pick(f, 3), a->kernel[1] = 1 + pick(f, 3);
		a->stride[0] = 1 + pick(f, 2), a->stride[1] = 1 + pick(f, 2);
		for (int i = 0; i < 4; i++)
			a->pad[i] = chance(f, 30) ? pick(f, (int)a->kernel[i % 2]) : 0;
		a->count_include_pad = chance(f, 50);
		break;
	case TS_GOP_SOFTMAX:
	case TS_GOP_LAYERNORM:
	case TS_GOP_FLATTEN:
		a->axis = chance(f, 70) ? -1 : pick(f, nd + 1) - (chance(f, 50) ? nd : 0);
		break;
	case TS_GOP_TRANSPOSE:
		a->nperm = chance(f, 20) ? 0 : nd;
		for (int d = 0; d < nd; d++)
			a->perm[d] = d;
		for (int d = nd - 1; d > 0; d--) {
			int j = pick(f, d + 1);
			int64_t t = a->perm[d];
			a->perm[d] = a->perm[j], a->perm[j] = t;
		}
		break;
	case TS_GOP_RESHAPE: {
		/* the elements regrouped: split off a factor, or all in one */
		int64_t n = numel_of(nd, s), p = 1 + pick(f, 4);
		a->nshape = 0;
		if (n % p == 0 && chance(f, 60)) {
			a->shape[a->nshape++] = p;
			a->shape[a->nshape++] = chance(f, 30) ? -1 : n / p;
		} else {
			a->shape[a->nshape++] = chance(f, 30) ? -1 : n;
		}
		if (chance(f, 20))
			a->shape[a->nshape++] = 1;
		if (chance(f, 20) && nd > 0)
			a->shape[0] = 0, a->nshape = 1, a->shape[a->nshape++] = -1;
		break;
	}
	case TS_GOP_GELU:
		a->approximate = chance(f, 50);
		break;
	case TS_GOP_CLIP:
		a->alpha = chance(f, 70) ? -0.5 : wild_double(f);
		a->beta = chance(f, 70) ? 0.5 : wild_double(f);
		break;
	default:
		break;
	}
}

/* A few attributes set to absurd values. */
static void wild_attrs(gaf *f, ts_gattrs *a)
{
	for (int k = 1 + pick(f, 3); k > 0; k--) {
		switch (pick(f, 14)) {
		case 0: a->kernel[pick(f, 2)] = wild_i64(f); break;
		case 1: a->stride[pick(f, 2)] = wild_i64(f); break;
		case 2: a->pad[pick(f, 4)] = wild_i64(f); break;
		case 3: a->dilation[pick(f, 2)] = wild_i64(f); break;
		case 4: a->group = wild_i64(f); break;
		case 5: a->axis = wild_i64(f); break;
		case 6: a->nperm = (int)wild_i64(f); break;
		case 7: a->perm[pick(f, TS_GRAPH_MAX_DIMS)] = wild_i64(f); break;
		case 8: a->nshape = (int)wild_i64(f); break;
		case 9: a->shape[pick(f, TS_GRAPH_MAX_DIMS)] = wild_i64(f); break;
		case 10: a->alpha = wild_double(f); break;
		case 11: a->beta = wild_double(f); break;
		case 12: a->epsilon = wild_double(f); break;
		default: a->perm[pick(f, TS_GRAPH_MAX_DIMS)] = a->perm[pick(f, TS_GRAPH_MAX_DIMS)]; break;
		}
	}
}

static int natural_inputs(ts_gop op)
{
	switch (op) {
	case TS_GOP_CONV:
	case TS_GOP_GEMM:
	case TS_GOP_MATMUL:
	case TS_GOP_LAYERNORM:
		return 2;
	case TS_GOP_BATCHNORM:
		return 5;
	default:
		return op >= TS_GOP_ADD && op <= TS_GOP_POW ? 2 : 1;
	}
}

/* A node; in a chain, of the last value with operands that fit. */
static void act_node(gaf *f, bool chain)
{
	ts_gop op = (ts_gop)pick(f, TS_GOP_COUNT);
	if (!chain && chance(f, 3)) {
		const int bad[] = {TS_GOP_COUNT, -1, 1000, INT32_MIN, INT32_MAX};
		op = (ts_gop)bad[pick(f, (int)TS_COUNT_OF(bad))];
	}
	char nb[400];
	const char *name = name_of(f, nb, sizeof(nb));
	int in[TS_GRAPH_MAX_INPUTS] = {0}, nin = natural_inputs(op);
	ts_gattrs a = ts_gattrs_default();
	in[0] = chain ? nvalues(f) - 1 : some_value(f);
	int64_t s[TS_GRAPH_MAX_DIMS] = {0};
	int nd = in[0] >= 0 ? shape_of(f, in[0], s) : 0;
	bool fitted = false;
	if (in[0] >= 0 && (chain || chance(f, 70))) {
		fit_attrs(f, op, nd, s, &a);
		int k = fit_operands(f, op, nd, s, &a, in);
		fitted = k > 0;
		nin = k ? k : nin;
	}
	for (int i = fitted ? nin : 1; i < nin; i++)
		in[i] = value_id(f);
	if (!fitted && in[0] >= 0 && chance(f, 10))
		in[0] = value_id(f);
	if (!chain && chance(f, 6)) {
		const int bad[] = {0, -1, 3, 17, 16, 100, INT32_MIN};
		nin = bad[pick(f, (int)TS_COUNT_OF(bad))];
		for (int i = 0; i < nin && i < TS_GRAPH_MAX_INPUTS; i++)
			if (in[i] == 0 && i > 0)
				in[i] = value_id(f);
	}
	if (!chain && chance(f, 12))
		wild_attrs(f, &a);
	bool null_attrs = !chain && chance(f, 8), null_inputs = !chain && nin > 0 && chance(f, 3);
	/* exactly the inputs the call may read */
	int have = nin < 0 ? 0 : nin > 128 ? 128 : nin;
	int *inputs = malloc(sizeof(int) * (size_t)(have ? have : 1));
	for (int i = 0; i < have; i++)
		inputs[i] = i < TS_GRAPH_MAX_INPUTS ? in[i] : 0;
	char desc[160];
	int k = snprintf(desc, sizeof(desc), "node '%.20s' %s(", name ? name : "(null)", ts_gop_name(op));
	for (int i = 0; i < have && i < 8 && k < 120; i++)
		k += snprintf(desc + k, sizeof(desc) - (size_t)k, "%s%d", i ? ", " : "", inputs[i]);
	note(f, "%s)%s%s nin %d", desc, null_attrs ? " attrs NULL" : "", null_inputs ? " inputs NULL" : "", nin);
	ts_clear_error(f->ctx);
	int before = nvalues(f);
	int v = tg_node(f->t, name, op, nin, null_inputs ? NULL : inputs, null_attrs ? NULL : &a);
	if (v < 0) {
		failed(f, "graph_node");
		if (nvalues(f) != before)
			violation(f, "graph_node failed but added %d values", nvalues(f) - before);
	} else {
		if ((unsigned)op >= TS_GOP_COUNT || nin < 0 || nin > TS_GRAPH_MAX_INPUTS || null_inputs)
			violation(f, "graph_node accepted an operator, count or input list graph.h refuses");
		int64_t ys[TS_GRAPH_MAX_DIMS], numel = 0;
		int ynd = shape_of(f, v, ys);
		if (ynd < 1 || !graph_shape_ok(ynd, ys, &numel))
			violation(f, "graph_node made a value of %d dimensions or a bad extent", ynd);
		for (int i = 0; i < nin; i++) {
			if (inputs[i] < MAX_VALUES && f->i64[inputs[i]])
				violation(f, "graph_node accepted input %d (value %d), an int64 constant", i,
					  inputs[i]);
			f->unref |= inputs[i] >= MAX_VALUES || f->noref[inputs[i]];
		}
		for (int w = before; w < v && w < MAX_VALUES; w++)
			f->noref[w] = true;
		f->numel += numel;
		f->unref |= numel > SMALL_NUMEL;
		f->st.nodes++;
	}
	free(inputs);
}

/* ---- outputs and queries ------------------------------------------------------------- */

static void act_output(gaf *f)
{
	int v = value_id(f);
	/* a node's value mostly */
	if (chance(f, 50) && nvalues(f) > 0)
		v = nvalues(f) - 1;
	char nb[400];
	const char *name = chance(f, 60) ? NULL : name_of(f, nb, sizeof(nb));
	note(f, "output %d '%.20s'", v, name ? name : "(null)");
	if (ts_graph_num_outputs(f->g) >= 16)
		return; /* the reference compares 16 */
	ts_clear_error(f->ctx);
	bool exists = ts_graph_value_shape(f->g, v, NULL, NULL);
	ts_status st = tg_output_named(f->t, v, name);
	if (st != TS_OK)
		failed(f, "graph_output");
	else if (!exists || (v < MAX_VALUES && f->i64[v]))
		violation(f, "graph_output accepted value %d, not a float32 value of the graph", v);
	else
		f->unref |= v >= MAX_VALUES || f->noref[v];
}

static void act_query(gaf *f)
{
	int v = value_id(f), nd = -7;
	int64_t s[TS_GRAPH_MAX_DIMS];
	bool exists = v >= 0 && v < nvalues(f);
	note(f, "queries on %d", v);
	if (ts_graph_value_shape(f->g, v, chance(f, 20) ? NULL : &nd, chance(f, 20) ? NULL : s) != exists)
		violation(f, "value_shape(%d) is %s", v, exists ? "false" : "true");
	if (exists && nd != -7 && (nd < 0 || nd > TS_GRAPH_MAX_DIMS))
		violation(f, "value_shape(%d): ndim %d", v, nd);
	const char *name = ts_graph_value_name(f->g, v);
	if ((name != NULL) != exists)
		violation(f, "value_name(%d) is %s", v, name ? name : "NULL");
	int i = (int)wild_i64(f), nin = ts_graph_num_inputs(f->g), nout = ts_graph_num_outputs(f->g);
	int in = ts_graph_input_value(f->g, i), out = ts_graph_output_value(f->g, i);
	if ((in >= 0) != (i >= 0 && i < nin) || (out >= 0) != (i >= 0 && i < nout))
		violation(f, "input_value/output_value(%d): %d, %d of %d inputs and %d outputs", i, in, out, nin,
			  nout);
	if (ts_graph_num_nodes(NULL) || ts_graph_num_inputs(NULL) || ts_graph_num_outputs(NULL) ||
	    ts_graph_value_name(NULL, 0) || ts_graph_input_value(NULL, 0) != -1 || ts_graph_ctx(NULL) ||
	    ts_graph_value_shape(NULL, 0, &nd, s))
		violation(f, "a query of the NULL graph answered");
	ts_graph_print(f->null, f->g);
	ts_graph_print(NULL, f->g);
	ts_graph_print(f->null, NULL);
	if (!ts_gop_name((ts_gop)wild_i64(f)))
		violation(f, "gop_name is NULL");
	/* the other graph's calls do not touch this one */
	bool theirs = ts_graph_value_shape(f->other, v, NULL, NULL);
	if ((ts_graph_node(f->other, NULL, TS_GOP_RELU, 1, &v, NULL) >= 0) != theirs)
		violation(f, "a node of the other graph %s value %d", theirs ? "refused its" : "took", v);
}

/* A candidate of t: each value among the parameter's choices mostly. */
static ts_tune_cand some_cand(gaf *f, const ts_tune_task *t)
{
	ts_tune_cand c = ts_tune_default(t);
	int n = t->space.nparams >= 0 && t->space.nparams <= TS_TUNE_MAX_PARAMS ? t->space.nparams : 0;
	for (int i = 0; i < n; i++) {
		int nc = t->space.nchoice[i];
		if (chance(f, 85) && nc >= 1 && nc <= TS_TUNE_MAX_CHOICES)
			c.v[i] = t->space.choice[i][pick(f, nc)];
		else if (chance(f, 50))
			c.v[i] = wild_i64(f);
	}
	return c;
}

static bool cand_in_space(const ts_tune_task *t, const ts_tune_cand *c)
{
	for (int i = 0; i < t->space.nparams; i++) {
		bool in = false;
		for (int j = 0; j < t->space.nchoice[i]; j++)
			in |= t->space.choice[i][j] == c->v[i];
		if (!in)
			return false;
	}
	return true;
}

/* ---- compiling and running ---------------------------------------------------------- */

typedef struct runset {
	int nin, nout;
	ts_array *in[TS_GRAPH_MAX_INPUTS * 8], *out[16];
} runset;

static ts_array *array_of(gaf *f, int v)
{
	int64_t s[TS_GRAPH_MAX_DIMS];
	int nd = shape_of(f, v, s);
	ts_array *a = ts_array_new(f->ctx, ts_float32, nd, s);
	if (!a)
		violation(f, "array_new failed for value %d", v);
	return a;
}

static void free_runset(runset *r)
{
	for (int i = 0; i < r->nin; i++)
		ts_array_free(r->in[i]);
	for (int i = 0; i < r->nout; i++)
		ts_array_free(r->out[i]);
}

/* The graph's inputs (the reference's random values) and outputs (garbage,
 * so that an element never written shows). */
static bool make_runset(gaf *f, runset *r)
{
	r->nin = ts_graph_num_inputs(f->g), r->nout = ts_graph_num_outputs(f->g);
	if (r->nin > (int)TS_COUNT_OF(r->in) || r->nout > (int)TS_COUNT_OF(r->out))
		return false;
	for (int i = 0; i < r->nin; i++) {
		int v = ts_graph_input_value(f->g, i);
		r->in[i] = array_of(f, v);
		const double *x = tg_value(f->t, v);
		for (int64_t k = 0; k < ts_array_numel(r->in[i]); k++)
			((float *)r->in[i]->data)[k] = (float)x[k];
	}
	for (int i = 0; i < r->nout; i++) {
		r->out[i] = array_of(f, ts_graph_output_value(f->g, i));
		ts_array_fill_random(r->out[i], 7 + (uint64_t)i, 1e6, 2e6);
	}
	return true;
}

static bool same_bits(const ts_array *a, const ts_array *b)
{
	for (int64_t k = 0; k < ts_array_numel(a); k++) {
		float x = ((float *)a->data)[k], y = ((float *)b->data)[k];
		if (!(x == y || (isnan(x) && isnan(y))))
			return false;
	}
	return true;
}

/* The reference's values, for a report (GAF_DUMP=1). */
static void dump_values(gaf *f)
{
	for (int v = 0; v < nvalues(f); v++) {
		const double *x = tg_value(f->t, v);
		int64_t s[TS_GRAPH_MAX_DIMS];
		int64_t n = numel_of(shape_of(f, v, s), s);
		fprintf(stderr, "%%%d:", v);
		for (int64_t k = 0; x && k < n && k < 64; k++)
			fprintf(stderr, " %.9g", x[k]);
		fprintf(stderr, "\n");
	}
}

/* The outputs against the reference: elementwise within a tolerance of
 * the output's scale, NaN where the reference has NaN.  An element whose
 * value float32 does not determine (the reference with every node's
 * result rounded to float32 differs from the double one in being NaN or
 * infinite) is not compared: the compiled graph computes in float32, so
 * either answer is right.  The two references' difference also widens the
 * tolerance, for values float32 determines only roughly (cancellation). */
static void compare(gaf *f, const runset *r, double *const *ref_f)
{
	/* a value beyond 1e18 anywhere is a graph float32 does not compute:
	 * its square overflows inside one node (a variance, a softmax's
	 * sum), which rounding the nodes' results does not show */
	for (int v = 0; v < nvalues(f); v++) {
		const double *x = tg_value(f->t, v);
		int64_t s[TS_GRAPH_MAX_DIMS];
		int64_t n = numel_of(shape_of(f, v, s), s);
		for (int64_t k = 0; x && k < n; k++)
			if (isfinite(x[k]) && fabs(x[k]) > 1e18)
				return;
	}
	for (int i = 0; i < r->nout; i++) {
		int v = ts_graph_output_value(f->g, i);
		const double *rd = tg_value(f->t, v), *rf = ref_f[i];
		const float *got = r->out[i]->data;
		int64_t n = ts_array_numel(r->out[i]);
		double scale = 1;
		for (int64_t k = 0; k < n; k++)
			if (isfinite(rd[k]) && fabs(rd[k]) > scale)
				scale = fabs(rd[k]);
		for (int64_t k = 0; k < n; k++) {
			double want = rd[k], alt = rf[k], x = got[k];
			if (getenv("GAF_DUMP") && k == 0)
				dump_values(f);
			if (isnan(want) != isnan(alt) || isinf(want) != isinf(alt) ||
			    (isinf(want) && want != alt))
				continue;
			bool ok = isnan(want) ? isnan(x)
				: isinf(want) ? x == want
				: fabs(x - want) <= 2e-3 * scale + 16 * fabs(want - alt);
			if (!ok)
				violation(f, "output %d ('%s') element %lld is %.9g, the reference says %.9g "
					  "(%.9g with float32 nodes)", i, ts_graph_value_name(f->g, v), (long long)k,
					  x, want, alt);
		}
	}
}

/* Runs that must be refused: wrong counts, NULL and wrong arrays. */
static void bad_runs(gaf *f, ts_graph_exec *e, runset *r)
{
	ts_array *in[TS_COUNT_OF(r->in) + 1], *out[TS_COUNT_OF(r->out) + 1];
	memcpy(in, r->in, sizeof(r->in));
	memcpy(out, r->out, sizeof(r->out));
	in[r->nin] = r->in[0], out[r->nout] = r->out[0];
	int k = pick(f, 9);
	note(f, "bad run %d", k);
	ts_status st = TS_OK;
	ts_array forged, *keep = NULL, **slot = NULL;
	switch (k) {
	case 0:
		st = ts_graph_run(e, r->nin + 1, in, r->nout, out);
		break;
	case 1:
		st = ts_graph_run(e, r->nin, in, r->nout - 1 - pick(f, 3), out);
		break;
	case 2:
		st = r->nin ? ts_graph_run(e, r->nin, NULL, r->nout, out) : ts_graph_run(e, r->nin, in, r->nout, NULL);
		break;
	case 3:
		st = ts_graph_profile(e, r->nin, in, r->nout, out, chance(f, 50) ? 0 : 10001, f->null);
		break;
	case 4:
		st = ts_graph_profile(e, r->nin, in, r->nout, out, 1, NULL);
		break;
	default: {
		/* one array NULL, of another dtype, shape, device or layout */
		bool use_in = r->nin && (chance(f, 50) || !r->nout);
		if (!use_in && !r->nout)
			return;
		slot = use_in ? &in[pick(f, r->nin)] : &out[pick(f, r->nout)];
		keep = *slot;
		forged = *keep;
		if (k == 5) {
			*slot = NULL;
			break;
		}
		*slot = &forged;
		int d = keep->ndim ? pick(f, keep->ndim) : 0;
		if (k == 6)
			forged.dtype = chance(f, 50) ? ts_float64 : ts_int32;
		else if (k == 7 && keep->ndim && chance(f, 50))
			forged.shape[d] += 1;
		else if (k == 7)
			forged.ndim = keep->ndim + 1 - 2 * (keep->ndim > 0 && chance(f, 50));
		else if (chance(f, 50))
			forged.device = TS_DEVICE_CUDA;
		else if (chance(f, 50))
			forged.data = NULL;
		else if (keep->ndim && keep->shape[d] > 1)
			forged.strides[d] += 1;
		else
			forged.data = NULL;
		break;
	}
	}
	if (k >= 5) {
		ts_clear_error(f->ctx);
		st = chance(f, 80) ? ts_graph_run(e, r->nin, in, r->nout, out)
				   : ts_graph_profile(e, r->nin, in, r->nout, out, 1, f->null);
	}
	must_fail(f, st == TS_OK, "graph_run", "its arguments are wrong");
	(void)slot;
}

/* The executable's tuning tasks; one of them into *one (false when it has
 * none). */
static bool check_tune_tasks(gaf *f, const ts_graph_exec *e, ts_tune_task *one)
{
	ts_clear_error(f->ctx);
	must_fail(f, ts_graph_exec_tune_tasks(e, NULL, -1 - pick(f, 3)) != -1, "graph_exec_tune_tasks",
		  "max is negative");
	ts_clear_error(f->ctx);
	must_fail(f, ts_graph_exec_tune_tasks(e, NULL, 1) != -1, "graph_exec_tune_tasks", "tasks is NULL");
	if (ts_graph_exec_tune_tasks(NULL, NULL, 0) != -1)
		violation(f, "exec_tune_tasks took a NULL executable");
	int n = ts_graph_exec_tune_tasks(e, NULL, 0);
	if (n < 0)
		violation(f, "exec_tune_tasks(e, NULL, 0) is %d", n);
	if (!n)
		return false;
	int max = pick(f, n + 1);
	ts_tune_task *tasks = malloc(sizeof(*tasks) * (size_t)(max ? max : 1));
	if (ts_graph_exec_tune_tasks(e, max ? tasks : NULL, max) != n)
		violation(f, "exec_tune_tasks counts differently with max %d", max);
	for (int i = 0; i < max; i++) {
		double fl = ts_tune_task_flops(&tasks[i]);
		if (!(fl > 0) || !isfinite(fl))
			violation(f, "the graph's tune task %d (%s) has %g flops", i, tasks[i].op, fl);
		ts_tune_cand c = ts_tune_default(&tasks[i]);
		if (!isfinite(ts_tune_cost(&tasks[i], &c)))
			violation(f, "the graph's tune task %d (%s): its default's cost is not finite", i, tasks[i].op);
	}
	if (max)
		*one = tasks[pick(f, max)];
	free(tasks);
	return max > 0;
}

/* The graph compiled again with a log holding a record, of random
 * values in its space, for one of its convolutions' tasks: the same
 * outputs as the reference. */
static void tuned_compile(gaf *f, const ts_tune_task *t, runset *r, double *const *ref_f)
{
	ts_tune_result res = {0};
	res.best = some_cand(f, t);
	res.def = ts_tune_default(t);
	res.best_ms = 1, res.default_ms = 2, res.trials = 3;
	if (!cand_in_space(t, &res.best))
		return; /* ts_tune_log_lookup prefers records in the space */
	remove(f->path);
	note(f, "tuned compile");
	if (ts_tune_log_append(f->ctx, f->path, t, &res) != TS_OK)
		violation(f, "tune_log_append refused the graph's task and a candidate of its space");
	ts_tune_log *log = ts_tune_log_load(f->ctx, f->path);
	if (!log)
		violation(f, "tune_log_load refused what tune_log_append wrote");
	ts_graph_opts o = {.tuned = log, .no_fuse = chance(f, 20)};
	ts_graph_exec *e = ts_graph_compile(f->g, &o);
	if (!e) {
		failed(f, "graph_compile (tuned)");
		ts_tune_cand c = res.best;
		ts_clear_error(f->ctx);
		if (ts_tune_lower(f->ctx, t, &c)) /* the candidate is valid */
			violation(f, "graph_compile refused a tuning record its task lowers with");
		return;
	}
	if (ts_graph_exec_stats(e).tuned_kernels < 1)
		violation(f, "graph_compile did not use the log's record");
	for (int i = 0; i < r->nout; i++)
		ts_array_fill_random(r->out[i], 11, 1e6, 2e6);
	if (ts_graph_run(e, r->nin, r->in, r->nout, r->out) != TS_OK)
		violation(f, "graph_run (tuned) failed on the right arrays");
	compare(f, r, ref_f);
	ts_graph_exec_free(e);
}

static void act_compile(gaf *f)
{
	if (f->compiled)
		return;
	f->compiled = true;
	ts_graph_opts o = {0};
	o.trace = chance(f, 10) ? f->null : NULL;
	o.no_fuse = chance(f, 20);
	o.no_layout = chance(f, 20);
	o.tuned = chance(f, 50) ? f->log : NULL;
	bool null_opts = chance(f, 30);
	note(f, "compile%s%s%s%s", null_opts ? " (NULL opts)" : "", o.no_fuse ? " no_fuse" : "",
	     o.no_layout ? " no_layout" : "", o.tuned ? " tuned" : "");
	/* the reference first, at both precisions; a string whose values the
	 * reference does not hold, or too many elements, is only compiled
	 * when it is cheap to */
	bool check = !f->unref && f->numel <= TOTAL_NUMEL && nvalues(f) < MAX_VALUES;
	if (!check && f->numel > TOTAL_NUMEL)
		return;
	runset r = {0};
	double *ref_f[16] = {0};
	if (check && !make_runset(f, &r))
		check = false;
	if (check) {
		tg_eval(f->t, true);
		for (int i = 0; i < r.nout; i++) {
			int64_t n = ts_array_numel(r.out[i]);
			const double *want = tg_value(f->t, ts_graph_output_value(f->g, i));
			/* every value is one a call made (a refused call adds none) */
			if (!want)
				violation(f, "output %d is value %d, which no accepted call made", i,
					  ts_graph_output_value(f->g, i));
			ref_f[i] = malloc(sizeof(double) * (size_t)n);
			memcpy(ref_f[i], want, sizeof(double) * (size_t)n);
		}
		tg_eval(f->t, false);
	}
	ts_graph_exec *e = ts_graph_compile(f->g, null_opts ? NULL : &o);
	f->st.compiled += e != NULL;
	if (!e) {
		failed(f, "graph_compile");
		if (check && ts_graph_num_outputs(f->g) > 0 && !(!null_opts && o.tuned))
			violation(f, "graph_compile refused a graph of accepted nodes");
	} else if (check) {
		f->st.compared++;
		ts_status st = ts_graph_run(e, r.nin, r.in, r.nout, r.out);
		if (st != TS_OK)
			violation(f, "graph_run failed on the right arrays");
		compare(f, &r, ref_f);
		ts_tune_task task;
		if (check_tune_tasks(f, e, &task) && chance(f, 60)) {
			ts_graph_exec_free(e);
			tuned_compile(f, &task, &r, ref_f);
			e = ts_graph_compile(f->g, null_opts ? NULL : &o);
			if (!e)
				violation(f, "graph_compile failed the second time");
			if (ts_graph_run(e, r.nin, r.in, r.nout, r.out) != TS_OK)
				violation(f, "graph_run failed on the right arrays");
		}
		ts_graph_exec_print(f->null, e);
		ts_graph_exec_stats(e);
		for (int k = pick(f, 4); k > 0; k--)
			bad_runs(f, e, &r);
		/* again, profiled or after the graph is gone: the same bits */
		runset again = r;
		for (int i = 0; i < r.nout; i++) {
			again.out[i] = array_of(f, ts_graph_output_value(f->g, i));
			ts_array_fill_random(again.out[i], 9, -5, 5);
		}
		bool gone = chance(f, 40);
		if (gone) {
			note(f, "graph freed");
			tg_free(f->t);
			f->t = NULL, f->g = NULL;
		}
		st = chance(f, 30) ? ts_graph_profile(e, r.nin, r.in, r.nout, again.out, 1 + pick(f, 2), f->null)
				   : ts_graph_run(e, r.nin, r.in, r.nout, again.out);
		if (st != TS_OK)
			violation(f, "graph_run failed the second time");
		for (int i = 0; i < r.nout; i++) {
			if (!same_bits(r.out[i], again.out[i]))
				violation(f, "output %d differs in the second run%s", i, gone ? " (graph freed)" : "");
			ts_array_free(again.out[i]);
		}
		if (gone) {
			f->t = tg_new(f->ctx, 5);
			f->g = tg_graph(f->t);
			f->unref = false, f->numel = 0;
			memset(f->i64, 0, sizeof(f->i64));
			memset(f->noref, 0, sizeof(f->noref));
		}
	}
	ts_graph_exec_free(e);
	free_runset(&r);
	for (int i = 0; i < 16; i++)
		free(ref_f[i]);
}

/* ---- tuning ------------------------------------------------------------------------ */

static const struct { const char *op; int n; } tune_ops[] = {
	{"matmul", 3}, {"dense", 3}, {"batch_matmul", 4}, {"conv2d", 9}, {"conv2d_nchw", 9},
	{"conv2d_nhwc", 9}, {"depthwise", 7}, {"pool", 7}, {"softmax", 2}, {"elementwise", 2},
	{"", 1}, {"matmul ", 3}, {"MATMUL", 3}, {NULL, 3}, {"generic", 2},
	{"conv2d_nchw_and_a_name_longer_than_the_field", 9},
};

/* fn (a tuning candidate lowered) built for the host and run on random
 * inputs gives what the reference evaluator gives, within float32
 * rounding of its sums. */
static void run_vs_eval(gaf *f, const ts_func *fn, const char *what)
{
	int n = fn->nparams;
	if (f->jitted || n > 8 || fn->nsizes)
		return;
	f->jitted = true;
	ts_array *got[8] = {0}, *want[8] = {0};
	void *data[8];
	for (int i = 0; i < n; i++) {
		got[i] = ts_array_for(f->ctx, fn->param_tensors[i]);
		want[i] = ts_array_for(f->ctx, fn->param_tensors[i]);
		if (!got[i] || !want[i])
			violation(f, "%s: no arrays for parameter %d", what, i);
		bool out = i == n - 1;
		ts_array_fill_random(want[i], 3 + (uint64_t)i, out ? 1e6 : -1, out ? 2e6 : 1);
		memcpy(got[i]->data, want[i]->data, ts_array_nbytes(want[i]));
		data[i] = want[i]->data;
	}
	note(f, "%s: built and run", what);
	ts_module *m = ts_build(f->ctx, fn, "llvm");
	if (!m)
		violation(f, "%s: ts_build failed on a lowered function", what);
	if (ts_module_run(m, n, got) != TS_OK)
		violation(f, "%s: ts_module_run failed", what);
	if (ts_eval(f->ctx, n, fn->param_tensors, data) != TS_OK)
		violation(f, "%s: ts_eval failed", what);
	const ts_array *g = got[n - 1], *w = want[n - 1];
	double scale = 1;
	for (int64_t k = 0; k < ts_array_numel(w); k++)
		scale = fmax(scale, fabs(ts_elem_get_f64(w->data, w->dtype, k)));
	for (int64_t k = 0; k < ts_array_numel(w); k++) {
		double x = ts_elem_get_f64(g->data, g->dtype, k), y = ts_elem_get_f64(w->data, w->dtype, k);
		if (!(fabs(x - y) <= 1e-4 * scale) && !(isnan(x) && isnan(y)))
			violation(f, "%s: output element %lld is %.9g, the reference evaluator says %.9g", what,
				  (long long)k, x, y);
	}
	ts_module_free(m);
	for (int i = 0; i < n; i++) {
		ts_array_free(got[i]);
		ts_array_free(want[i]);
	}
}

static void act_task(gaf *f)
{
	int k = pick(f, (int)TS_COUNT_OF(tune_ops));
	int n = chance(f, 90) ? tune_ops[k].n : (int)wild_i64(f) % 16;
	int64_t s[16];
	for (int i = 0; i < 16; i++)
		s[i] = chance(f, 90) ? 1 + pick(f, 8) : wild_i64(f);
	/* a pad below the kernel, a stride of 1 or 2 */
	if (chance(f, 70) && tune_ops[k].n >= 7) {
		s[tune_ops[k].n - 2] = 1 + pick(f, 2);
		s[tune_ops[k].n - 1] = pick(f, (int)(s[tune_ops[k].n - 3] > 0 && s[tune_ops[k].n - 3] < 9 ?
						    s[tune_ops[k].n - 3] : 1));
	}
	int64_t *shape = chance(f, 3) ? NULL : heap_i64(s, n < 0 ? 0 : n > 16 ? 16 : n);
	note(f, "tune_task_init %s n %d%s", tune_ops[k].op ? tune_ops[k].op : "(null)", n, shape ? "" : " shape NULL");
	ts_tune_task t;
	memset(&t, 0xa5, sizeof(t));
	ts_clear_error(f->ctx);
	ts_status st = ts_tune_task_init(f->ctx, chance(f, 3) ? NULL : &t, tune_ops[k].op, n, shape);
	free(shape);
	if (st != TS_OK) {
		failed(f, "tune_task_init");
		if (!isnan(ts_tune_task_flops(&t)) && ts_tune_task_flops(&t) != 0)
			violation(f, "a refused task has flops");
		return;
	}
	if (k >= 10 || n != tune_ops[k].n)
		violation(f, "tune_task_init accepted op '%s' with %d extents", tune_ops[k].op, n);
	f->task = t, f->have_task = true;
	f->st.tasks++;
	double fl = ts_tune_task_flops(&t);
	if (!(fl >= 0) || !isfinite(fl))
		violation(f, "tune task %s: flops %g", t.op, fl);
	ts_tune_cand def = ts_tune_default(&t);
	if (!cand_in_space(&t, &def) || !isfinite(ts_tune_cost(&t, &def)))
		violation(f, "tune task %s: the default is outside the space or has no cost", t.op);
	ts_conv2d_cpu_params cp = ts_tune_conv2d_params(&t, &def);
	(void)cp;
	/* candidate 0 lowers; another may be refused, with a message */
	ts_tune_cand c = chance(f, 30) ? def : some_cand(f, &t);
	note(f, "tune_lower %s", memcmp(&c, &def, sizeof(c)) ? "a candidate" : "the default");
	ts_clear_error(f->ctx);
	ts_func *fn = ts_tune_lower(f->ctx, &t, &c);
	if (!fn) {
		failed(f, "tune_lower");
		if (!memcmp(&c, &def, sizeof(c)))
			violation(f, "tune_lower refused the default candidate of %s", t.op);
	} else if (fl <= 1e6 && chance(f, 50)) {
		run_vs_eval(f, fn, "tune_lower");
	}
	double cost = ts_tune_cost(&t, &c);
	bool in_range = true;
	for (int i = 0; i < t.space.nparams; i++)
		in_range &= c.v[i] >= 0 && c.v[i] <= 4096;
	if (!in_range && cost != INFINITY)
		violation(f, "tune_cost of a candidate outside 0..4096 is %g", cost);
	if (ts_tune_cost(NULL, &c) != INFINITY || ts_tune_cost(&t, NULL) != INFINITY)
		violation(f, "tune_cost of NULL is finite");
	/* a task changed after init is refused or still read safely */
	ts_tune_task bad = t;
	for (int j = 1 + pick(f, 3); j > 0; j--) {
		size_t at = (size_t)(pick(f, 256) * 256 + pick(f, 256)) % sizeof(bad);
		((unsigned char *)&bad)[at] = (unsigned char)byte(f);
	}
	note(f, "changed task");
	ts_clear_error(f->ctx);
	ts_tune_task_flops(&bad);
	ts_tune_cand bc = ts_tune_default(&bad);
	ts_tune_cost(&bad, &bc);
	ts_tune_conv2d_params(&bad, &bc);
	if (!ts_tune_lower(f->ctx, &bad, &bc))
		failed(f, "tune_lower (changed task)");
	/* options the tuner must refuse, never run */
	ts_tune_opts o = ts_tune_opts_default();
	switch (pick(f, 5)) {
	case 0: o.budget_s = chance(f, 50) ? 0 : NAN; break;
	case 1: o.repeat = 0; break;
	case 2: o.warmup = -1; break;
	case 3: o.patience = 0; break;
	default: o.max_trials = -1; break;
	}
	ts_tune_result res;
	ts_clear_error(f->ctx);
	must_fail(f, ts_tune(f->ctx, &t, chance(f, 10) ? NULL : &o, &res) == TS_OK, "tune", "its options are bad");
	must_fail(f, ts_tune(f->ctx, &bad, &o, NULL) == TS_OK, "tune", "its result is NULL");
}

/* A log record line: fields right or wrong. */
static void write_record(gaf *f, FILE *fp)
{
	char cpu[64], feat[40];
	ts_tune_host(cpu, feat);
	const ts_tune_task *t = &f->task;
	fprintf(fp, "{\"tessera\": \"%s\", \"op\": \"%s\", \"dtype\": \"float32\", \"target\": \"llvm\", "
		"\"cpu\": \"%s\", \"features\": \"%s\", \"shape\": [",
		chance(f, 90) ? TS_TUNE_VERSION : "0.1", f->have_task && chance(f, 90) ? t->op : "matmul",
		chance(f, 90) ? cpu : "other", chance(f, 90) ? feat : "0");
	int ns = f->have_task ? t->nshape : 3;
	for (int i = 0; i < ns; i++)
		fprintf(fp, "%s%lld", i ? ", " : "",
			(long long)(!chance(f, 95) ? wild_i64(f) : f->have_task ? t->shape[i] : 1 + pick(f, 8)));
	fprintf(fp, "], \"threads\": %d, \"params\": {", chance(f, 90) ? ts_num_threads() : (int)wild_i64(f));
	int np = f->have_task ? t->space.nparams : 0;
	for (int i = 0; i < np; i++) {
		int nc = t->space.nchoice[i];
		fprintf(fp, "%s\"%s\": %lld", i ? ", " : "", chance(f, 95) ? t->space.name[i] : "bogus",
			(long long)(chance(f, 90) ? t->space.choice[i][pick(f, nc)] : wild_i64(f)));
	}
	fprintf(fp, "}, \"median_ms\": %g, \"default_ms\": %g, \"trials\": %d}\n", chance(f, 90) ? 1.5 : wild_double(f),
		chance(f, 90) ? 2.0 : wild_double(f), chance(f, 90) ? 5 : (int)wild_i64(f));
}

static void act_log(gaf *f)
{
	FILE *fp = fopen(f->path, "wb");
	if (!fp)
		violation(f, "cannot write %s", f->path);
	int lines = pick(f, 3);
	for (int i = 0; i < lines; i++)
		write_record(f, fp);
	/* then raw bytes of the input */
	size_t raw = chance(f, 25) ? (size_t)pick(f, 4) * (size_t)pick(f, 64) : 0;
	for (size_t i = 0; i < raw; i++)
		fputc((int)byte(f), fp);
	fclose(fp);
	static const char *const paths[] = {NULL, "", "/nonexistent/tune.jsonl", "/dev/zero", "/tmp"};
	const char *path = chance(f, 90) ? f->path : paths[pick(f, (int)TS_COUNT_OF(paths))];
	note(f, "tune_log_load %d records, %zu raw bytes%s", lines, raw, path == f->path ? "" : " (bad path)");
	ts_clear_error(f->ctx);
	ts_tune_log *log = ts_tune_log_load(f->ctx, path);
	if (!log) {
		failed(f, "tune_log_load");
		if (path != f->path)
			return;
	} else {
		if (path != f->path)
			violation(f, "tune_log_load read '%s'", path ? path : "(null)");
		if (log->n < 1 || !log->rec)
			violation(f, "tune_log_load gave a log of %d records", log->n);
		for (int i = 0; i < log->n; i++) {
			const ts_tune_record *rc = &log->rec[i];
			if (rc->nshape < 0 || rc->nshape > TS_TUNE_MAX_SHAPE || rc->nparams < 0 ||
			    rc->nparams > TS_TUNE_MAX_PARAMS || !memchr(rc->op, 0, sizeof(rc->op)) ||
			    !memchr(rc->cpu, 0, sizeof(rc->cpu)))
				violation(f, "tune_log_load: record %d has %d extents, %d parameters", i, rc->nshape,
					  rc->nparams);
		}
		f->log = log;
		f->st.logs++;
	}
	if (!f->have_task)
		return;
	ts_tune_cand c = ts_tune_default(&f->task), before = c;
	const ts_tune_record *rec = (const ts_tune_record *)1;
	ts_clear_error(f->ctx);
	note(f, "tune_log_lookup");
	ts_status st = ts_tune_log_lookup(f->ctx, chance(f, 10) ? NULL : f->log, &f->task, &c, &rec);
	if (st != TS_OK) {
		failed(f, "tune_log_lookup");
		if (rec || memcmp(&c, &before, sizeof(c)))
			violation(f, "tune_log_lookup failed but set the record or the candidate");
	} else if (rec == (const ts_tune_record *)1) {
		violation(f, "tune_log_lookup did not set *rec");
	}
	const char *why = NULL;
	ts_clear_error(f->ctx);
	if (!ts_tune_lower_from_log(f->ctx, f->log, &f->task, &why))
		failed(f, "tune_lower_from_log");
	else if (!why || !*why)
		violation(f, "tune_lower_from_log gave no note");
}

/* A result appended to a log is read back and found. */
static void act_append(gaf *f)
{
	if (!f->have_task)
		return;
	ts_tune_result r = {0};
	r.best = some_cand(f, &f->task);
	r.def = ts_tune_default(&f->task);
	r.best_ms = chance(f, 85) ? 1 + pick(f, 9) : wild_double(f);
	r.default_ms = chance(f, 85) ? 2 + pick(f, 9) : wild_double(f);
	r.trials = chance(f, 90) ? pick(f, 50) : (int)wild_i64(f);
	bool bad = !isfinite(r.best_ms) || r.best_ms < 0 || !isfinite(r.default_ms) || r.default_ms < 0 ||
		   r.trials < 0;
	for (int i = 0; i < f->task.space.nparams; i++)
		bad |= r.best.v[i] < 0 || r.best.v[i] > 4096;
	remove(f->path);
	note(f, "tune_log_append%s", bad ? " (bad result)" : "");
	ts_clear_error(f->ctx);
	ts_status st = ts_tune_log_append(f->ctx, f->path, &f->task, &r);
	if (st != TS_OK) {
		failed(f, "tune_log_append");
		if (!bad)
			violation(f, "tune_log_append refused a good result");
		return;
	}
	if (bad)
		violation(f, "tune_log_append wrote a result the reader refuses");
	ts_tune_log *log = ts_tune_log_load(f->ctx, f->path);
	if (!log)
		violation(f, "tune_log_load refused what tune_log_append wrote");
	ts_tune_cand c;
	const ts_tune_record *rec = NULL;
	if (ts_tune_log_lookup(f->ctx, log, &f->task, &c, &rec) != TS_OK || !rec)
		violation(f, "tune_log_lookup did not find the record tune_log_append wrote");
	for (int i = 0; i < f->task.space.nparams; i++)
		if (c.v[i] != r.best.v[i])
			violation(f, "the record read back has %s = %lld, written %lld", f->task.space.name[i],
				  (long long)c.v[i], (long long)r.best.v[i]);
	f->log = log;
}

/* The generic space of a small compute, a candidate applied and lowered. */
static void act_generic(gaf *f)
{
	int64_t m = 1 + pick(f, 6), k = 1 + pick(f, 6), n = 1 + pick(f, 6);
	ts_tensor *A = ts_placeholder(f->ctx, "A", TS_SHAPE(m, k), ts_float32);
	ts_tensor *B = ts_placeholder(f->ctx, "B", TS_SHAPE(k, n), ts_float32);
	int kind = pick(f, 3);
	ts_tensor *out = kind == 0 ? ts_op_matmul(f->ctx, A, B, false, false)
		       : kind == 1 ? ts_op_relu(f->ctx, A) : NULL;
	const int lanes_of[] = {8, 16, 4, 1, 0, -1, 3, 1 << 30};
	int lanes = lanes_of[pick(f, (int)TS_COUNT_OF(lanes_of))];
	ts_tune_space sp;
	note(f, "tune_space_generic %s lanes %d", kind == 0 ? "matmul" : kind == 1 ? "relu" : "NULL", lanes);
	ts_clear_error(f->ctx);
	if (ts_tune_space_generic(f->ctx, out, lanes, chance(f, 5) ? NULL : &sp) != TS_OK) {
		failed(f, "tune_space_generic");
		return;
	}
	if (!out)
		violation(f, "tune_space_generic took a NULL tensor");
	if (sp.nparams < 1 || sp.nparams > TS_TUNE_MAX_PARAMS)
		violation(f, "tune_space_generic made %d parameters", sp.nparams);
	ts_tune_task t = {0};
	t.space = sp;
	ts_tune_cand c = some_cand(f, &t);
	for (int i = 0; i < sp.nparams; i++)
		if (sp.nchoice[i] < 1 || sp.nchoice[i] > TS_TUNE_MAX_CHOICES)
			violation(f, "tune_space_generic: parameter %s has %d choices", sp.name[i], sp.nchoice[i]);
	if (chance(f, 10))
		sp.nparams = (int)wild_i64(f);
	ts_schedule *s = ts_create_schedule(f->ctx, 1, &out);
	ts_clear_error(f->ctx);
	note(f, "tune_apply_generic");
	if (ts_tune_apply_generic(s, out, lanes, &sp, &c) != TS_OK) {
		failed(f, "tune_apply_generic");
		return;
	}
	ts_tensor *args[3] = {A, kind == 0 ? B : out, out};
	ts_func *fn = ts_lower(s, "generic", kind == 0 ? 3 : 2, args);
	if (!fn)
		failed(f, "lower (a generic candidate)");
	else if (chance(f, 50))
		run_vs_eval(f, fn, "tune_apply_generic");
}

/* ---- arrays, threads, timers ------------------------------------------------------- */

static void act_array(gaf *f)
{
	const ts_dtype dts[] = {ts_float32, ts_float64, ts_int32, ts_int8, ts_uint8, ts_int64, ts_float16,
				ts_bfloat16, ts_bool, TS_DTYPE(200, 32), {TS_TYPE_FLOAT, 32, 4},
				{TS_TYPE_FLOAT, 0, 1}, {TS_TYPE_INT, 3, 1}};
	int di = chance(f, 80) ? pick(f, 9) : pick(f, (int)TS_COUNT_OF(dts));
	ts_dtype dt = dts[di];
	int ndim = chance(f, 90) ? pick(f, 5) : (int)wild_i64(f) % 12;
	int64_t s[12];
	int have = ndim < 0 ? 0 : ndim > 12 ? 12 : ndim;
	for (int d = 0; d < have; d++)
		s[d] = extent(f);
	int64_t *shape = chance(f, 4) && ndim > 0 ? NULL : heap_i64(s, have);
	/* the bytes, unless the product overflows */
	bool ok = di < 9 && ndim >= 0 && ndim <= TS_MAX_DIMS && (shape || !ndim);
	double bytes = (double)(dt.bits < 8 ? 1 : dt.bits / 8);
	for (int d = 0; ok && d < ndim; d++) {
		ok = shape[d] >= 1;
		bytes *= (double)shape[d];
	}
	int kind = pick(f, 3);
	note(f, "array %s dtype %d ndim %d%s", kind == 0 ? "new" : kind == 1 ? "wrap" : "wrap_strided", di, ndim,
	     shape ? "" : " shape NULL");
	/* too large: refused for more than the machine's memory (a new
	 * array) or for a size that overflows (any); else allowed, but too
	 * large to make here */
	if (ok && bytes > (double)(1 << 22)) {
		if (kind == 0 ? bytes <= (double)ts_phys_mem_bytes() : bytes < 0x1p63) {
			free(shape);
			return;
		}
		ok = false;
	}
	ts_array *a = NULL;
	void *buf = NULL;
	bool misaligned = false, bad_strides = false;
	ts_clear_error(f->ctx);
	if (kind == 0) {
		a = ts_array_new(f->ctx, dt, ndim, shape);
	} else {
		size_t nb = ok ? (size_t)bytes : 64;
		buf = aligned_alloc(64, (nb + 64 + 63) / 64 * 64);
		misaligned = chance(f, 10) && dt.bits > 8;
		void *data = chance(f, 5) ? NULL : (char *)buf + (misaligned ? 1 : 0);
		ok &= data != NULL && !misaligned;
		int64_t st[12];
		int64_t x = 1;
		for (int d = have - 1; d >= 0; d--) {
			st[d] = x;
			x *= s[d] > 0 && x <= INT64_MAX / s[d] ? s[d] : 1;
		}
		if (kind == 2 && have && chance(f, 30)) {
			int d = pick(f, have);
			/* a wrong stride is refused unless its extent is 1 */
			bad_strides = s[d] != 1;
			st[d] = st[d] > 4 ? st[d] - 1 - pick(f, 3) : st[d] + 1 + pick(f, 3);
		}
		int64_t *strides = kind == 2 && chance(f, 5) && have ? NULL : heap_i64(st, have);
		bad_strides |= kind == 2 && !strides;
		a = kind == 1 ? ts_array_wrap(f->ctx, data, dt, ndim, shape)
			      : ts_array_wrap_strided(f->ctx, data, dt, ndim, shape, strides);
		free(strides);
	}
	free(shape);
	if (!a) {
		failed(f, "array_new/wrap");
		if (ok && !bad_strides)
			violation(f, "array_new/wrap refused a valid dtype and shape");
		free(buf);
		return;
	}
	if (!ok || bad_strides)
		violation(f, "array_new/wrap accepted a bad dtype, shape, data or strides");
	if ((double)ts_array_nbytes(a) != bytes || a->ndim != ndim)
		violation(f, "array: %zu bytes, %d dimensions; expected %g, %d", ts_array_nbytes(a), a->ndim,
			  bytes, ndim);
	double lo = chance(f, 80) ? -2 + pick(f, 4) : wild_double(f);
	double hi = chance(f, 80) ? lo + pick(f, 5) : wild_double(f);
	ts_array_fill_random(a, byte(f), lo, hi);
	if (dt.code == ts_float64.code && dt.bits == 64 && isfinite(lo) && isfinite(hi) && lo <= hi)
		for (int64_t i = 0; i < ts_array_numel(a); i++) {
			double x = ((double *)a->data)[i];
			if (!(lo == hi ? x == lo : x >= lo && x < hi))
				violation(f, "fill_random [%g, %g) gave %g", lo, hi, x);
		}
	ts_array_free(a);
	free(buf);
	ts_array_free(NULL);
	if (ts_array_for(f->ctx, NULL) || ts_array_numel(NULL) || ts_array_nbytes(NULL))
		violation(f, "array_for/numel/nbytes of NULL answered");
	failed(f, "array_for(NULL)");
}

static void body_nothing(int64_t b, int64_t e, void *c)
{
	(void)b, (void)e, (void)c;
}

static int count_calls(void *arg)
{
	int *k = arg;
	return --*k == 0; /* fails at the k-th call */
}

/* A clock for ts_time_run_stable: each reading `step` ns later (a step
 * of 0 or below: a clock stuck or going back). */
typedef struct fake_clock {
	uint64_t now;
	int64_t step;
} fake_clock;

static uint64_t fake_now(void *arg)
{
	fake_clock *c = arg;
	c->now += (uint64_t)c->step;
	return c->now;
}

/* The adaptive timer with options right and wrong, on a fake clock mostly:
 * every run it accepts ends within its budget. */
static void time_stable(gaf *f)
{
	ts_time_opts o = ts_time_opts_default();
	fake_clock clk = {(uint64_t)1 << 40, chance(f, 80) ? 1000 * (1 + pick(f, 100)) : wild_i64(f)};
	if (chance(f, 90))
		o.clock_ns = fake_now, o.clock_arg = &clk;
	o.budget_s = 1e-3;
	o.number = 1 + pick(f, 2);
	switch (pick(f, 8)) {
	case 0: o.min_repeats = (int)wild_i64(f); break;
	case 1: o.max_repeats = (int)wild_i64(f); break;
	case 2: o.budget_s = wild_double(f); break;
	case 3: o.target_rel = wild_double(f); break;
	case 4: o.number = (int)wild_i64(f); break;
	case 5: o.max_warmup = (int)wild_i64(f); break;
	case 6: o.warmup_rel = wild_double(f); break;
	default: break;
	}
	bool ok = o.min_repeats >= 1 && o.max_repeats >= o.min_repeats && o.max_repeats <= TS_TIME_MAX_REPEATS &&
		  o.budget_s > 0 && o.target_rel >= 0 && o.number >= 1 && o.number <= TS_TIME_MAX_NUMBER &&
		  o.max_warmup >= 0 && o.warmup_rel > 0;
	/* a run is bounded by its budget only on a clock that moves */
	bool bounded = o.budget_s <= 1e-3 && o.number <= 4 && (o.clock_ns ? clk.step > 0 : o.budget_s > 0) &&
		       o.max_repeats <= (1 << 16) && isfinite(o.target_rel) && isfinite(o.warmup_rel);
	note(f, "time_run_stable%s%s", ok ? "" : " (bad options)", bounded ? "" : " (skipped)");
	if (ok && !bounded)
		return;
	int countdown = -1;
	ts_timing t;
	ts_clear_error(f->ctx);
	ts_status st = ts_time_run_stable(f->ctx, count_calls, &countdown, chance(f, 3) ? NULL : &o, &t);
	if (st != TS_OK)
		failed(f, "time_run_stable");
	else if (t.samples < 1 || t.samples > o.max_repeats)
		violation(f, "time_run_stable took %d samples (at most %d)", t.samples, o.max_repeats);
}

static void act_timer(gaf *f)
{
	if (chance(f, 30)) {
		time_stable(f);
		return;
	}
	int warmup = chance(f, 80) ? pick(f, 3) : (int)wild_i64(f);
	int repeat = chance(f, 80) ? pick(f, 4) : (int)wild_i64(f);
	int number = chance(f, 80) ? pick(f, 3) : (int)wild_i64(f);
	int fail_at = chance(f, 30) ? 1 + pick(f, 6) : -1, countdown = fail_at;
	bool ok = warmup >= 0 && warmup <= TS_TIME_MAX_REPEATS && repeat >= 1 && repeat <= TS_TIME_MAX_REPEATS &&
		  number >= 1 && number <= TS_TIME_MAX_NUMBER;
	bool cheap = (int64_t)(warmup + (int64_t)repeat * number) < 64;
	note(f, "time_run %d %d %d fail at %d", warmup, repeat, number, fail_at);
	if (ok && !cheap)
		return;
	ts_timing t;
	ts_clear_error(f->ctx);
	if (ts_time_run(f->ctx, count_calls, &countdown, warmup, repeat, number, &t) != TS_OK) {
		failed(f, "time_run");
		if (ok && fail_at <= 0)
			violation(f, "time_run refused good counts");
	} else if (!ok) {
		violation(f, "time_run accepted bad counts");
	} else if (t.samples != repeat || !(t.min <= t.median && t.median <= t.max)) {
		violation(f, "time_run: %d samples, min %g median %g max %g", t.samples, t.min, t.median, t.max);
	}
	double s[16];
	int n = pick(f, 17);
	for (int i = 0; i < n; i++)
		s[i] = chance(f, 80) ? 1e-3 * (1 + pick(f, 50)) : wild_double(f);
	ts_timing_from_samples(chance(f, 5) ? NULL : s, n, &t);
	ts_timing_from_samples(s, n, NULL);
	char buf[64];
	size_t bn = (size_t)pick(f, 65);
	ts_timing_verdict(chance(f, 10) ? NULL : &t, chance(f, 10) ? NULL : buf, bn);
	ts_median(s, n);
	int sets = ts_cold_sets(wild_double(f));
	if (sets < 1 || sets > TS_COLD_MAX_SETS)
		violation(f, "cold_sets gave %d", sets);
	ts_phase_times pt = {wild_double(f), wild_double(f), wild_double(f), wild_double(f), wild_double(f),
			     wild_double(f)};
	ts_clear_error(f->ctx);
	if (!ts_phase_times_str(f->ctx, chance(f, 10) ? NULL : &pt))
		failed(f, "phase_times_str");
	if (ts_parallel_for(1 + pick(f, 4), NULL, NULL) != -1)
		violation(f, "parallel_for took a NULL body");
	ts_parallel_for(wild_i64(f) % 64, body_nothing, NULL);
}

static void act_threads(gaf *f)
{
	int n = chance(f, 70) ? 1 + pick(f, 3) : (int)wild_i64(f);
	if (n > 4) /* a thousand threads are allowed, and slow to start */
		n = 4 + n % 3;
	note(f, "set_num_threads %d", n);
	ts_set_num_threads(n);
	int now = ts_num_threads();
	if (now < 1 || now > 1024 || (n >= 1 && now != n))
		violation(f, "set_num_threads(%d): num_threads is %d", n, now);
}

/* ---- the program ------------------------------------------------------------------- */

void gaf_run(const uint8_t *data, size_t size, const char *label, gaf_stats *st)
{
	static gaf f; /* the trace is large */
	memset(&f, 0, sizeof(f));
	f.d = data, f.n = size, f.label = label;
	f.ctx = ts_ctx_new();
	f.null = fopen("/dev/null", "w");
	if (!f.ctx || !f.null)
		violation(&f, "no context or /dev/null");
	f.t = tg_new(f.ctx, 1);
	f.g = tg_graph(f.t);
	f.other = ts_graph_new(f.ctx);
	ts_graph_input(f.other, "o0", ts_float32, TS_SHAPE(2));
	ts_graph_input(f.other, "o1", ts_float32, TS_SHAPE(3, 3));
	snprintf(f.path, sizeof(f.path), "/tmp/tessera_gaf_%d.jsonl", (int)getpid());
	int threads = ts_num_threads();
	for (int k = 0; k < MAX_ACTIONS && f.pos < f.n; k++) {
		if (nvalues(&f) >= MAX_VALUES - 20)
			break;
		f.st.calls++;
		switch (pick(&f, 16)) {
		case 0: case 1: act_input(&f); break;
		case 2: act_constant(&f); break;
		case 3: case 4: case 5: act_node(&f, false); break;
		case 6:
			for (int n = 2 + pick(&f, 5); n > 0; n--)
				act_node(&f, true);
			break;
		case 7: case 8: act_output(&f); break;
		case 9: act_query(&f); break;
		case 10: act_compile(&f); break;
		case 11: act_task(&f); break;
		case 12: act_log(&f); break;
		case 13: act_append(&f); break;
		case 14: act_array(&f); break;
		default:
			switch (pick(&f, 3)) {
			case 0: act_timer(&f); break;
			case 1: act_threads(&f); break;
			default: act_generic(&f); break;
			}
		}
	}
	/* a string that made outputs is compiled at its end */
	if (ts_graph_num_outputs(f.g) > 0)
		act_compile(&f);
	ts_set_num_threads(threads);
	if (st) {
		st->calls += f.st.calls, st->nodes += f.st.nodes, st->compiled += f.st.compiled;
		st->compared += f.st.compared, st->tasks += f.st.tasks, st->logs += f.st.logs;
	}
	tg_free(f.t);
	ts_graph_free(f.other);
	remove(f.path);
	fclose(f.null);
	ts_ctx_free(f.ctx);
}
