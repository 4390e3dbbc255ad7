/*
 * graph_ref.c - see graph_ref.h.  The reference keeps every value as a
 * row-major array of doubles and evaluates each node with the plainest
 * loops that state the operator's definition.
 */
#include "graph_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "threadpool.h"

#define TG_MAX 512

typedef struct tnode {
	ts_gop op;
	int nin, in[TS_GRAPH_MAX_INPUTS], out;
	ts_gattrs a;
} tnode;

struct tg {
	ts_ctx *ctx;
	ts_graph *g;
	uint64_t seed;
	double *val[TG_MAX];       /* reference values, by graph value */
	bool is_input[TG_MAX];
	tnode n[TG_MAX];
	int nn;
	int out[16], nout;
	bool f32; /* tg_eval's round_f32: GELU computed in float32 too */
};

static double rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(*s >> 11) / (double)(1ULL << 53);
}

tg *tg_new(ts_ctx *ctx, uint64_t seed)
{
	tg *t = calloc(1, sizeof(*t));
	t->ctx = ctx;
	t->g = ts_graph_new(ctx);
	t->seed = seed * 2654435761u + 1;
	return t;
}

void tg_free(tg *t)
{
	if (!t)
		return;
	for (int i = 0; i < TG_MAX; i++)
		free(t->val[i]);
	ts_graph_free(t->g);
	free(t);
}

ts_graph *tg_graph(tg *t)
{
	return t->g;
}

static int64_t numel_of(tg *t, int v, int *nd, int64_t *s)
{
	ts_graph_value_shape(t->g, v, nd, s);
	int64_t n = 1;
	for (int d = 0; d < *nd; d++)
		n *= s[d];
	return n;
}

static double *random_values(tg *t, int64_t n, double lo, double hi)
{
	double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
	for (int64_t i = 0; i < n; i++)
		v[i] = (double)(float)(lo + (hi - lo) * rnd(&t->seed));
	return v;
}

int tg_input(tg *t, const char *name, int ndim, const int64_t *shape)
{
	int v = ts_graph_input(t->g, name, ts_float32, ndim, shape);
	if (v >= 0 && v < TG_MAX) {
		int nd;
		int64_t s[TS_GRAPH_MAX_DIMS];
		t->val[v] = random_values(t, numel_of(t, v, &nd, s), -1, 1);
		t->is_input[v] = true;
	}
	return v;
}

int tg_const_data(tg *t, const char *name, int ndim, const int64_t *shape, const float *data)
{
	int v = ts_graph_constant(t->g, name, ts_float32, ndim, shape, data);
	if (v >= 0 && v < TG_MAX) {
		int nd;
		int64_t s[TS_GRAPH_MAX_DIMS], n = numel_of(t, v, &nd, s);
		t->val[v] = malloc(sizeof(double) * (size_t)n);
		for (int64_t i = 0; i < n; i++)
			t->val[v][i] = data[i];
	}
	return v;
}

int tg_const(tg *t, const char *name, int ndim, const int64_t *shape, double lo, double hi)
{
	int64_t n = 1;
	for (int d = 0; d < ndim; d++)
		n *= shape[d];
	float *f = malloc(sizeof(float) * (size_t)(n ? n : 1));
	for (int64_t i = 0; i < n; i++)
		f[i] = (float)(lo + (hi - lo) * rnd(&t->seed));
	int v = tg_const_data(t, name, ndim, shape, f);
	free(f);
	return v;
}

int tg_node(tg *t, const char *name, ts_gop op, int nin, const int *in, const ts_gattrs *a)
{
	int v = ts_graph_node(t->g, name, op, nin, in, a);
	if (v >= 0 && t->nn < TG_MAX) {
		tnode *n = &t->n[t->nn++];
		n->op = op;
		n->nin = nin;
		memcpy(n->in, in, sizeof(int) * (size_t)nin);
		n->out = v;
		n->a = a ? *a : ts_gattrs_default();
	}
	return v;
}

ts_status tg_output_named(tg *t, int v, const char *name)
{
	ts_status st = ts_graph_output(t->g, v, name);
	if (st == TS_OK && t->nout < (int)TS_COUNT_OF(t->out))
		t->out[t->nout++] = v;
	return st;
}

void tg_output(tg *t, int v)
{
	tg_output_named(t, v, NULL);
}

/* ---- the reference ---------------------------------------------------------------- */

typedef struct shp {
	int nd;
	int64_t s[TS_GRAPH_MAX_DIMS];
	int64_t n;
} shp;

static shp shape_of(tg *t, int v)
{
	shp r;
	r.n = numel_of(t, v, &r.nd, r.s);
	return r;
}

/* Offset in x (broadcast to y's shape) of y's element at flat index i. */
static int64_t bcast(const shp *x, const shp *y, int64_t i)
{
	int64_t off = 0, stride = 1;
	for (int d = y->nd - 1; d >= 0; d--) {
		int64_t c = i % y->s[d];
		i /= y->s[d];
		int xd = d - (y->nd - x->nd);
		if (xd >= 0) {
			if (x->s[xd] > 1)
				off += c * stride;
			stride *= x->s[xd];
		}
	}
	return off;
}

/* GELU computed in float32, as the kernels compute it: below about -4,
 * 1 + erf (or 1 + tanh) cancels in float32 and the result keeps no
 * correct digit (GELU(-5.25) is -3.96e-8; float32 gives 0 or about 1.6e-7),
 * which a later division by it magnifies.  Rounding only the node's
 * result would not show that. */
static double gelu_f32(const ts_gattrs *a, double x)
{
	float v = (float)x;
	if (a->approximate)
		return 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
	return 0.5f * v * (1.0f + erff(v * 0.70710678f));
}

static double unary(ts_gop op, const ts_gattrs *a, double x, bool f32)
{
	switch (op) {
	case TS_GOP_RELU:
		/* max(x, 0): float min and max ignore a NaN operand (ir.h) */
		return fmax(x, 0);
	case TS_GOP_SIGMOID:
		return 1 / (1 + exp(-x));
	case TS_GOP_TANH:
		return tanh(x);
	case TS_GOP_ERF:
		return erf(x);
	case TS_GOP_SQRT:
		return sqrt(x);
	case TS_GOP_EXP:
		return exp(x);
	case TS_GOP_NEG:
		return -x;
	case TS_GOP_GELU:
		if (f32)
			return gelu_f32(a, x);
		if (a->approximate)
			return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
		return 0.5 * x * (1 + erf(x / sqrt(2)));
	case TS_GOP_CLIP:
		/* min(max(x, lo), hi): every element is hi when lo > hi, as
		 * graph.h says, and a NaN is dropped as min and max drop it */
		return fmin(fmax(x, a->alpha), a->beta);
	default:
		return NAN;
	}
}

static double binary(ts_gop op, double x, double y)
{
	switch (op) {
	case TS_GOP_ADD:
		return x + y;
	case TS_GOP_SUB:
		return x - y;
	case TS_GOP_MUL:
		return x * y;
	case TS_GOP_DIV:
		return x / y;
	case TS_GOP_POW:
		return pow(x, y);
	default:
		return NAN;
	}
}

static void conv(tg *t, const tnode *n, double *y)
{
	shp xs = shape_of(t, n->in[0]), ws = shape_of(t, n->in[1]), ys = shape_of(t, n->out);
	const double *x = t->val[n->in[0]], *w = t->val[n->in[1]], *b = n->nin > 2 ? t->val[n->in[2]] : NULL;
	const ts_gattrs *a = &n->a;
	int64_t C = xs.s[1], H = xs.s[2], W = xs.s[3], O = ws.s[0], CG = ws.s[1], KH = ws.s[2], KW = ws.s[3];
	int64_t OG = O / a->group;
	for (int64_t nn = 0; nn < ys.s[0]; nn++)
		for (int64_t o = 0; o < O; o++)
			for (int64_t oh = 0; oh < ys.s[2]; oh++)
				for (int64_t ow = 0; ow < ys.s[3]; ow++) {
					double acc = b ? b[o] : 0;
					int64_t g = o / OG;
					for (int64_t c = 0; c < CG; c++)
						for (int64_t kh = 0; kh < KH; kh++)
							for (int64_t kw = 0; kw < KW; kw++) {
								int64_t h = oh * a->stride[0] - a->pad[0] + kh * a->dilation[0];
								int64_t ww = ow * a->stride[1] - a->pad[1] + kw * a->dilation[1];
								if (h < 0 || h >= H || ww < 0 || ww >= W)
									continue;
								acc += x[((nn * C + g * CG + c) * H + h) * W + ww] *
								       w[((o * CG + c) * KH + kh) * KW + kw];
							}
					y[((nn * O + o) * ys.s[2] + oh) * ys.s[3] + ow] = acc;
				}
}

static void pool(tg *t, const tnode *n, double *y)
{
	shp xs = shape_of(t, n->in[0]), ys = shape_of(t, n->out);
	const double *x = t->val[n->in[0]];
	const ts_gattrs *a = &n->a;
	int64_t H = xs.s[2], W = xs.s[3];
	for (int64_t p = 0; p < xs.s[0] * xs.s[1]; p++)
		for (int64_t oh = 0; oh < ys.s[2]; oh++)
			for (int64_t ow = 0; ow < ys.s[3]; ow++) {
				double acc = n->op == TS_GOP_MAXPOOL ? -INFINITY : 0;
				int64_t cnt = 0;
				for (int64_t kh = 0; kh < a->kernel[0]; kh++)
					for (int64_t kw = 0; kw < a->kernel[1]; kw++) {
						int64_t h = oh * a->stride[0] - a->pad[0] + kh, w = ow * a->stride[1] - a->pad[1] + kw;
						if (h < 0 || h >= H || w < 0 || w >= W)
							continue;
						double v = x[(p * H + h) * W + w];
						acc = n->op == TS_GOP_MAXPOOL ? fmax(acc, v) : acc + v;
						cnt++;
					}
				if (n->op == TS_GOP_AVGPOOL)
					acc /= a->count_include_pad ? (double)(a->kernel[0] * a->kernel[1]) : (double)cnt;
				y[(p * ys.s[2] + oh) * ys.s[3] + ow] = acc;
			}
}

static void matmul(tg *t, const tnode *n, double *y)
{
	shp as = shape_of(t, n->in[0]), bs = shape_of(t, n->in[1]), ys = shape_of(t, n->out);
	const double *A = t->val[n->in[0]], *B = t->val[n->in[1]];
	bool gemm = n->op == TS_GOP_GEMM, ta = gemm && n->a.trans_a, tb = gemm && n->a.trans_b;
	/* a 1-D operand (MatMul) is a row on the left, a column on the
	 * right, and Y lacks that dimension */
	bool va = as.nd == 1, vb = bs.nd == 1;
	int64_t M = va ? 1 : ta ? as.s[1] : as.s[as.nd - 2], N = vb ? 1 : tb ? bs.s[0] : bs.s[bs.nd - 1];
	int64_t K = ta ? as.s[0] : as.s[as.nd - 1];
	int64_t batches = ys.n / (M * N);
	/* batch offsets through broadcasting of the leading dimensions */
	shp yb = {.nd = ys.nd - !va - !vb}, ab = {.nd = as.nd - 2}, bb = {.nd = bs.nd - 2};
	memcpy(yb.s, ys.s, sizeof(int64_t) * (size_t)yb.nd);
	memcpy(ab.s, as.s, sizeof(int64_t) * (size_t)(ab.nd > 0 ? ab.nd : 0));
	memcpy(bb.s, bs.s, sizeof(int64_t) * (size_t)(bb.nd > 0 ? bb.nd : 0));
	for (int64_t bt = 0; bt < batches; bt++) {
		int64_t ao = gemm ? 0 : bcast(&ab, &yb, bt) * M * K, bo = gemm ? 0 : bcast(&bb, &yb, bt) * K * N;
		for (int64_t i = 0; i < M; i++)
			for (int64_t j = 0; j < N; j++) {
				double acc = 0;
				for (int64_t k = 0; k < K; k++)
					acc += A[ao + (ta ? k * M + i : i * K + k)] * B[bo + (tb ? j * K + k : k * N + j)];
				if (gemm) {
					acc *= n->a.alpha;
					if (n->nin > 2) {
						shp cs = shape_of(t, n->in[2]);
						acc += n->a.beta * t->val[n->in[2]][bcast(&cs, &ys, i * N + j)];
					}
				}
				y[(bt * M + i) * N + j] = acc;
			}
	}
}

static void rows(tg *t, const tnode *n, double *y)
{
	shp xs = shape_of(t, n->in[0]);
	const double *x = t->val[n->in[0]];
	int64_t D = xs.s[xs.nd - 1];
	for (int64_t r = 0; r < xs.n / D; r++) {
		const double *xr = x + r * D;
		double *yr = y + r * D;
		if (n->op == TS_GOP_SOFTMAX) {
			double m = -INFINITY, s = 0;
			for (int64_t i = 0; i < D; i++)
				m = fmax(m, xr[i]);
			for (int64_t i = 0; i < D; i++)
				s += yr[i] = exp(xr[i] - m);
			for (int64_t i = 0; i < D; i++)
				yr[i] /= s;
		} else {
			double mean = 0, var = 0;
			for (int64_t i = 0; i < D; i++)
				mean += xr[i] / (double)D;
			for (int64_t i = 0; i < D; i++)
				var += (xr[i] - mean) * (xr[i] - mean) / (double)D;
			for (int64_t i = 0; i < D; i++)
				yr[i] = (xr[i] - mean) / sqrt(var + n->a.epsilon) * t->val[n->in[1]][i] +
					(n->nin > 2 ? t->val[n->in[2]][i] : 0);
		}
	}
}

static void eval_node(tg *t, const tnode *n, double *y)
{
	shp ys = shape_of(t, n->out);
	switch (n->op) {
	case TS_GOP_CONV:
		conv(t, n, y);
		return;
	case TS_GOP_GEMM:
	case TS_GOP_MATMUL:
		matmul(t, n, y);
		return;
	case TS_GOP_MAXPOOL:
	case TS_GOP_AVGPOOL:
		pool(t, n, y);
		return;
	case TS_GOP_GLOBALAVGPOOL: {
		shp xs = shape_of(t, n->in[0]);
		int64_t hw = xs.s[2] * xs.s[3];
		for (int64_t p = 0; p < ys.n; p++) {
			double s = 0;
			for (int64_t i = 0; i < hw; i++)
				s += t->val[n->in[0]][p * hw + i];
			y[p] = s / (double)hw;
		}
		return;
	}
	case TS_GOP_SOFTMAX:
	case TS_GOP_LAYERNORM:
		rows(t, n, y);
		return;
	case TS_GOP_BATCHNORM: {
		shp xs = shape_of(t, n->in[0]);
		int64_t C = xs.s[1], inner = xs.n / (xs.s[0] * C);
		double *const *v = t->val;
		for (int64_t i = 0; i < xs.n; i++) {
			int64_t c = i / inner % C;
			y[i] = (v[n->in[0]][i] - v[n->in[3]][c]) / sqrt(v[n->in[4]][c] + n->a.epsilon) * v[n->in[1]][c] +
			       v[n->in[2]][c];
		}
		return;
	}
	case TS_GOP_TRANSPOSE: {
		shp xs = shape_of(t, n->in[0]);
		for (int64_t i = 0; i < ys.n; i++) {
			int64_t rem = i, idx[TS_GRAPH_MAX_DIMS], off = 0;
			for (int d = ys.nd - 1; d >= 0; d--)
				idx[d] = rem % ys.s[d], rem /= ys.s[d];
			int64_t xi[TS_GRAPH_MAX_DIMS];
			for (int d = 0; d < ys.nd; d++)
				xi[n->a.nperm ? n->a.perm[d] : ys.nd - 1 - d] = idx[d];
			for (int d = 0; d < xs.nd; d++)
				off = off * xs.s[d] + xi[d];
			y[i] = t->val[n->in[0]][off];
		}
		return;
	}
	case TS_GOP_CONCAT: {
		int ax = (int)(n->a.axis < 0 ? n->a.axis + ys.nd : n->a.axis);
		int64_t outer = 1, inner = 1;
		for (int d = 0; d < ax; d++)
			outer *= ys.s[d];
		for (int d = ax + 1; d < ys.nd; d++)
			inner *= ys.s[d];
		int64_t pos = 0;
		for (int k = 0; k < n->nin; k++) {
			shp xs = shape_of(t, n->in[k]);
			int64_t e = xs.s[ax];
			for (int64_t o = 0; o < outer; o++)
				memcpy(y + (o * ys.s[ax] + pos) * inner, t->val[n->in[k]] + o * e * inner,
				       sizeof(double) * (size_t)(e * inner));
			pos += e;
		}
		return;
	}
	case TS_GOP_RESHAPE:
	case TS_GOP_FLATTEN:
	case TS_GOP_IDENTITY:
		memcpy(y, t->val[n->in[0]], sizeof(double) * (size_t)ys.n);
		return;
	default:
		break;
	}
	if (n->nin == 1) {
		for (int64_t i = 0; i < ys.n; i++)
			y[i] = unary(n->op, &n->a, t->val[n->in[0]][i], t->f32);
		return;
	}
	shp as = shape_of(t, n->in[0]), bs = shape_of(t, n->in[1]);
	for (int64_t i = 0; i < ys.n; i++)
		y[i] = binary(n->op, t->val[n->in[0]][bcast(&as, &ys, i)], t->val[n->in[1]][bcast(&bs, &ys, i)]);
}

void tg_eval(tg *t, bool round_f32)
{
	t->f32 = round_f32;
	for (int i = 0; i < t->nn; i++) {
		shp ys = shape_of(t, t->n[i].out);
		double *y = calloc((size_t)ys.n, sizeof(double));
		eval_node(t, &t->n[i], y);
		for (int64_t k = 0; round_f32 && k < ys.n; k++)
			y[k] = (double)(float)y[k];
		free(t->val[t->n[i].out]);
		t->val[t->n[i].out] = y;
	}
}

const double *tg_value(const tg *t, int v)
{
	return v >= 0 && v < TG_MAX ? t->val[v] : NULL;
}

double tg_check(tg *t, const ts_graph_opts *opts, ts_graph_exec **e_out)
{
	tg_eval(t, false);
	ts_graph_exec *e = ts_graph_compile(t->g, opts);
	if (!e)
		return -1;
	int nin = ts_graph_num_inputs(t->g);
	ts_array *in[16], *out[16];
	for (int i = 0; i < nin; i++) {
		int v = ts_graph_input_value(t->g, i);
		shp s = shape_of(t, v);
		in[i] = ts_array_new(t->ctx, ts_float32, s.nd, s.s);
		for (int64_t k = 0; k < s.n; k++)
			((float *)in[i]->data)[k] = (float)t->val[v][k];
	}
	for (int i = 0; i < t->nout; i++) {
		shp s = shape_of(t, t->out[i]);
		out[i] = ts_array_new(t->ctx, ts_float32, s.nd, s.s);
	}
	double worst = 0;
	if (ts_graph_run(e, nin, in, t->nout, out) != TS_OK)
		worst = -1;
	for (int i = 0; i < t->nout && worst >= 0; i++) {
		shp s = shape_of(t, t->out[i]);
		double maxerr = 0, maxref = 1;
		for (int64_t k = 0; k < s.n; k++) {
			double r = t->val[t->out[i]][k], d = fabs(((float *)out[i]->data)[k] - r);
			maxerr = d > maxerr || d != d ? d : maxerr;
			maxref = fabs(r) > maxref ? fabs(r) : maxref;
		}
		double rel = maxerr / maxref;
		worst = rel > worst || rel != rel ? rel : worst;
	}
	for (int i = 0; i < nin; i++)
		ts_array_free(in[i]);
	for (int i = 0; i < t->nout; i++)
		ts_array_free(out[i]);
	if (e_out)
		*e_out = e;
	else
		ts_graph_exec_free(e);
	return worst != worst ? INFINITY : worst;
}
