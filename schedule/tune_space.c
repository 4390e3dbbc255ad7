/*
 * tune_space.c - the tuner's tasks and search spaces (tune.h).
 *
 * A task names an operator of the library and its shape; this file builds
 * the operator's graph for a candidate, schedules it and lowers it.  The
 * specialised spaces are the parameters of the hand-written schedules
 * (op_schedules.h) with their defaults first; the generic space builds a
 * schedule for any single-output compute from the public primitives only.
 * Whatever a primitive refuses makes the candidate invalid: the error is
 * left in the context for the caller to clear.
 */
#include <math.h>
#include <string.h>

#include "lower.h"
#include "op_schedules.h"
#include "ops.h"
#include "tune_internal.h"

/* The spaces' kinds: a task's space.kind is one of these pointers, which
 * tune_task_check compares without reading through them. */
static const char KIND_MATMUL[] = "matmul", KIND_BATCH_MATMUL[] = "batch_matmul",
		  KIND_CONV2D[] = "conv2d", KIND_DEPTHWISE[] = "depthwise", KIND_SOFTMAX[] = "softmax",
		  KIND_GENERIC[] = "generic";

typedef struct op_info {
	const char *name;
	int nshape;
	const char *usage;
} op_info;

static const op_info ops[] = {
	{"matmul", 3, "matmul M N K"},
	{"dense", 3, "dense M N K"},
	{"batch_matmul", 4, "batch_matmul B M N K"},
	{"conv2d", 9, "conv2d N C H W K R S STRIDE PAD"},
	{"conv2d_nchw", 9, "conv2d_nchw N C H W K R S STRIDE PAD"},
	{"conv2d_nhwc", 9, "conv2d_nhwc N C H W K R S STRIDE PAD"},
	{"depthwise", 7, "depthwise N C H W R STRIDE PAD"},
	{"pool", 7, "pool N C H W R STRIDE PAD"},
	{"softmax", 2, "softmax ROWS COLS"},
	{"elementwise", 2, "elementwise ROWS COLS"},
};

const char *ts_tune_ops_usage(void)
{
	return "matmul M N K | dense M N K | batch_matmul B M N K |\n"
	       "conv2d N C H W K R S STRIDE PAD | conv2d_nchw N C H W K R S STRIDE PAD |\n"
	       "conv2d_nhwc N C H W K R S STRIDE PAD | depthwise N C H W R STRIDE PAD |\n"
	       "pool N C H W R STRIDE PAD | softmax ROWS COLS | elementwise ROWS COLS";
}

bool tune_is_conv(const char *op)
{
	return !strcmp(op, "conv2d") || !strcmp(op, "conv2d_nchw") || !strcmp(op, "conv2d_nhwc");
}

static const op_info *find_op(const char *op)
{
	for (size_t i = 0; i < TS_COUNT_OF(ops); i++)
		if (!strcmp(ops[i].name, op))
			return &ops[i];
	return NULL;
}

static const char *kind_of(const char *op)
{
	if (!strcmp(op, "matmul") || !strcmp(op, "dense"))
		return KIND_MATMUL;
	if (!strcmp(op, "batch_matmul"))
		return KIND_BATCH_MATMUL;
	if (!strcmp(op, "conv2d"))
		return KIND_CONV2D;
	if (!strcmp(op, "depthwise"))
		return KIND_DEPTHWISE;
	return !strcmp(op, "softmax") ? KIND_SOFTMAX : KIND_GENERIC;
}

/* FNV-1a over what ts_tune_task_init fixed: operator, extents, dtype,
 * target, lanes and the space's parameters by name (not their choices,
 * which a caller may narrow): a parameter renamed was ignored by the
 * schedule and written unescaped into the log, one dropped lowered the
 * default. */
static uint64_t task_seal(const ts_tune_task *t)
{
	uint64_t h = 0xcbf29ce484222325u;
	const unsigned char *parts[7] = {(const void *)t->op, (const void *)&t->nshape, (const void *)t->shape,
					 (const void *)t->target, (const void *)&t->lanes,
					 (const void *)&t->space.nparams, (const void *)t->space.name};
	size_t len[7] = {sizeof t->op, sizeof t->nshape, sizeof t->shape, sizeof t->target, sizeof t->lanes,
			 sizeof t->space.nparams, sizeof t->space.name};
	for (int p = 0; p < 7; p++)
		for (size_t i = 0; i < len[p]; i++)
			h = (h ^ parts[p][i]) * 0x100000001b3u;
	h = (h ^ (uint64_t)t->dtype.code) * 0x100000001b3u;
	h = (h ^ (uint64_t)t->dtype.bits) * 0x100000001b3u;
	return (h ^ (uint64_t)t->dtype.lanes) * 0x100000001b3u;
}

ts_status tune_space_check(ts_ctx *ctx, const ts_tune_space *sp, const char *what, const char *op)
{
	if (sp->nparams < 0 || sp->nparams > TS_TUNE_MAX_PARAMS)
		return ts_error(ctx, TS_ERR_INVALID, "%s: %s has %d parameters, at most %d", what, op,
				sp->nparams, TS_TUNE_MAX_PARAMS);
	for (int i = 0; i < sp->nparams; i++)
		if (sp->nchoice[i] < 1 || sp->nchoice[i] > TS_TUNE_MAX_CHOICES ||
		    !memchr(sp->name[i], 0, TS_TUNE_NAME))
			return ts_error(ctx, TS_ERR_INVALID, "%s: %s: parameter %d is malformed", what, op, i);
	return TS_OK;
}

ts_status tune_task_check(ts_ctx *ctx, const ts_tune_task *t, const char *what)
{
	if (!t)
		return ts_error(ctx, TS_ERR_INVALID, "%s: NULL task", what);
	const op_info *info = memchr(t->op, 0, sizeof t->op) ? find_op(t->op) : NULL;
	if (!info || t->nshape != info->nshape || t->space.kind != kind_of(t->op))
		return ts_error(ctx, TS_ERR_INVALID, "%s: the task is not one ts_tune_task_init made (op, "
				"extents or space changed)", what);
	char task[sizeof t->op + 8];
	snprintf(task, sizeof task, "task %s", t->op);
	if (tune_space_check(ctx, &t->space, what, task) != TS_OK)
		return TS_ERR_INVALID;
	if (t->seal != task_seal(t))
		return ts_error(ctx, TS_ERR_INVALID, "%s: task %s changed since ts_tune_task_init made it (its "
				"extents, dtype, target, lanes or parameter names)", what, t->op);
	return TS_OK;
}

int tune_param_index(const ts_tune_space *sp, const char *name)
{
	for (int i = 0; i < sp->nparams; i++)
		if (!strcmp(sp->name[i], name))
			return i;
	return -1;
}

int64_t tune_param(const ts_tune_space *sp, const ts_tune_cand *c, const char *name, int64_t def)
{
	int i = tune_param_index(sp, name);
	return i >= 0 ? c->v[i] : def;
}

/* Adds a parameter whose first value is the default; later values equal
 * to an earlier one are dropped. */
static void add_param(ts_tune_space *sp, const char *name, int n, const int64_t *v)
{
	int p = sp->nparams++;
	snprintf(sp->name[p], TS_TUNE_NAME, "%s", name);
	sp->nchoice[p] = 0;
	for (int i = 0; i < n && sp->nchoice[p] < TS_TUNE_MAX_CHOICES; i++) {
		bool seen = false;
		for (int j = 0; j < sp->nchoice[p]; j++)
			seen |= sp->choice[p][j] == v[i];
		if (!seen)
			sp->choice[p][sp->nchoice[p]++] = v[i];
	}
}

/* A split factor parameter: def first, then powers of two up to max that
 * do not exceed the extent (1 always allowed). */
static void add_factor(ts_tune_space *sp, const char *name, int64_t def, int64_t extent, int64_t max)
{
	int64_t v[TS_TUNE_MAX_CHOICES];
	int n = 0;
	v[n++] = def;
	for (int64_t f = 1; f <= max && f <= extent && n < TS_TUNE_MAX_CHOICES; f *= 2)
		v[n++] = f;
	add_param(sp, name, n, v);
}

static void space_matmul(ts_tune_task *t)
{
	ts_tune_space *sp = &t->space;
	const int64_t *mnk = t->shape + t->nshape - 3;
	bool packs = ts_matmul_cpu_packs(mnk[0]);
	/* the default candidate is the default schedule: a dense layer's
	 * epilogue reads the whole sum, so only a matmul's may be in chunks */
	ts_matmul_cpu_params d = !strcmp(t->op, "matmul") ? ts_matmul_cpu_default_shape(mnk[0], mnk[1], mnk[2])
							  : ts_matmul_cpu_default_for(mnk[1]);
	sp->kind = KIND_MATMUL;
	add_param(sp, "mr", 7, (int64_t[]){d.mr, 1, 2, 3, 4, 6, 8});
	add_param(sp, "nr", 6, (int64_t[]){d.nr, 8, 16, 32, 48, 64});
	add_param(sp, "kunroll", 5, (int64_t[]){d.kunroll, 1, 2, 8, 16});
	add_param(sp, "parallel", 2, (int64_t[]){d.parallel, !d.parallel});
	/* packing B pays off only when many rows reuse each panel */
	add_param(sp, "pack", 2, (int64_t[]){packs, !packs});
	/* and where: ts_pack_mode */
	add_param(sp, "pack_at", 3, (int64_t[]){d.pack, TS_PACK_AHEAD, TS_PACK_PANEL});
	/* the reduction in chunks (ts_matmul_cpu_params.kc), where C is the
	 * result in memory: a long K, without an epilogue */
	int64_t K = t->shape[t->nshape - 1];
	if (!strcmp(t->op, "matmul") && K > 128)
		add_param(sp, "kc", 4, (int64_t[]){d.kc, 128, 256, 512});
	/* the next tile's B fetched during this one's reduction */
	add_param(sp, "prefetch", 2, (int64_t[]){d.prefetch, !d.prefetch});
}

/* Batch matmul: the default schedule (blocked 0), or each batch's matmul
 * register-blocked as ts_schedule_matmul_cpu blocks a matmul (blocked 1):
 * mr x nr tiles of C accumulated in a local tile over the whole K. */
static void space_batch_matmul(ts_tune_task *t)
{
	ts_tune_space *sp = &t->space;
	ts_matmul_cpu_params d = ts_matmul_cpu_default_for(t->shape[t->nshape - 2]);
	sp->kind = KIND_BATCH_MATMUL;
	add_param(sp, "blocked", 2, (int64_t[]){0, 1});
	add_param(sp, "mr", 7, (int64_t[]){d.mr, 1, 2, 3, 4, 6, 8});
	add_param(sp, "nr", 6, (int64_t[]){d.nr, 8, 16, 32, 48, 64});
	add_param(sp, "kunroll", 5, (int64_t[]){d.kunroll, 1, 2, 8, 16});
	add_param(sp, "parallel", 2, (int64_t[]){d.parallel, !d.parallel});
}

static int64_t conv_out(int64_t in, int64_t k, int64_t stride, int64_t pad)
{
	return (in + 2 * pad - k) / stride + 1;
}

/* The columns of the rows conv2d task shape s (N C H W K R S STRIDE PAD)
 * runs over with the default blocks (ts_conv2d_cpu_row_width_for), as in
 * tessera-bench and the graph layer: a multiple of OW where several rows
 * are viewed as one. */
static int64_t conv2d_row(const int64_t *s)
{
	return ts_conv2d_cpu_row_width_for(s[5], s[6], s[7], s[7], 2 * s[8], 2 * s[8],
					   conv_out(s[2], s[5], s[7], s[8]), conv_out(s[3], s[6], s[7], s[8]),
					   s[1], ts_conv2d_cpu_out_block_for(s[1], s[3]), s[4]);
}

static void space_conv2d(ts_tune_task *t)
{
	ts_tune_space *sp = &t->space;
	ts_conv2d_cpu_params d = ts_conv2d_cpu_default();
	int64_t C = t->shape[1], K = t->shape[4];
	sp->kind = KIND_CONV2D;
	add_param(sp, "ow_block", 9, (int64_t[]){d.ow_block, 14, 3, 4, 6, 7, 8, 16, 28});
	add_param(sp, "oh_block", 4, (int64_t[]){d.oh_block, 1, 2, 4});
	add_param(sp, "parallel", 2, (int64_t[]){d.parallel, !d.parallel});
	add_param(sp, "pad", 3, (int64_t[]){d.pad, TS_PAD_COPY, TS_PAD_INLINE});
	/* input-channel blocks per reduction chunk; C (as many blocks as
	 * any input block leaves, or more): no chunks, where C is a value a
	 * candidate may take (1 << 30 was refused by every later call) */
	add_param(sp, "rc_block", C <= TUNE_MAX_VALUE ? 6 : 5, (int64_t[]){d.rc_block, 1, 2, 4, 8, C});
	/* the blocks tessera-bench and the graph layer use
	 * (ts_conv2d_cpu_out_block_for: one vector of output channels, two
	 * where the CPU has 32 vector registers, four on AVX2's wide rows; the
	 * input's as a convolution of its width would write them), then
	 * every power of two from 1 to 64 dividing its channel count */
	int64_t ic[8] = {ts_conv2d_cpu_out_block_for(C, t->shape[3])},
		oc[8] = {ts_conv2d_cpu_out_block_for(K, conv2d_row(t->shape))};
	int nic = 1, noc = 1;
	for (int64_t b = 1; b <= 64; b *= 2) {
		if (C % b == 0)
			ic[nic++] = b;
		if (K % b == 0)
			oc[noc++] = b;
	}
	add_param(sp, "ic_block", nic, ic);
	add_param(sp, "oc_block", noc, oc);
	/* the next block's weights fetched during the reduction: timed with
	 * the data out of cache, as the bench times, it decides layers either
	 * way */
	add_param(sp, "prefetch", 2, (int64_t[]){d.prefetch, !d.prefetch});
}

/* ts_depthwise_cpu_params of ts_schedule_depthwise_nchwc_cpu: the shape's
 * own blocks first, then register blocks of a few to 16 columns (one
 * vector each) by 1 to 8 rows. */
static void space_depthwise(ts_tune_task *t)
{
	ts_tune_space *sp = &t->space;
	ts_depthwise_cpu_params d = ts_depthwise_cpu_default();
	sp->kind = KIND_DEPTHWISE;
	add_param(sp, "ow_block", 8, (int64_t[]){d.ow_block, 4, 6, 7, 8, 12, 14, 16});
	add_param(sp, "oh_block", 7, (int64_t[]){d.oh_block, 1, 2, 3, 4, 7, 8});
	add_param(sp, "parallel", 2, (int64_t[]){d.parallel, !d.parallel});
}

static ts_status space_of(ts_ctx *ctx, ts_tune_task *t)
{
	const char *op = t->op;
	if (!strcmp(op, "matmul") || !strcmp(op, "dense")) {
		space_matmul(t);
		return TS_OK;
	}
	if (!strcmp(op, "conv2d")) {
		space_conv2d(t);
		return TS_OK;
	}
	if (!strcmp(op, "batch_matmul")) {
		space_batch_matmul(t);
		return TS_OK;
	}
	if (!strcmp(op, "depthwise")) {
		space_depthwise(t);
		return TS_OK;
	}
	if (!strcmp(op, "softmax")) {
		t->space.kind = KIND_SOFTMAX;
		add_param(&t->space, "lanes", 6, (int64_t[]){t->lanes, 4, 8, 16, 32, 1});
		return TS_OK;
	}
	/* the long tail: the generic space of the operator's graph */
	ts_tensor *args[4], *plain;
	ts_tune_cand none = {{0}};
	int n = tune_graph(ctx, t, &none, args, &plain);
	return n ? ts_tune_space_generic(ctx, args[n - 1], t->lanes, &t->space) : ts_last_status(ctx);
}

/* Shape rules of each operator, beyond positive extents. */
static ts_status check_shape(ts_ctx *ctx, const ts_tune_task *t)
{
	const int64_t *s = t->shape;
	bool conv = tune_is_conv(t->op), win = !strcmp(t->op, "depthwise") || !strcmp(t->op, "pool");
	if (conv || win) {
		int64_t R = s[conv ? 5 : 4], S = conv ? s[6] : R, pad = s[conv ? 8 : 6], H = s[2], W = s[3];
		/* the blocked space's schedule takes square kernels only */
		if (!strcmp(t->op, "conv2d") && R != S)
			return ts_error(ctx, TS_ERR_INVALID, "tune conv2d: the kernel must be square (R = S), got %lldx%lld",
					(long long)s[5], (long long)s[6]);
		if (R > H + 2 * pad || S > W + 2 * pad)
			return ts_error(ctx, TS_ERR_INVALID, "tune %s: the kernel (%lldx%lld) is larger than the padded "
					"image (%lldx%lld)", t->op, (long long)R, (long long)S,
					(long long)(H + 2 * pad), (long long)(W + 2 * pad));
		if (!strcmp(t->op, "pool") && pad >= R)
			return ts_error(ctx, TS_ERR_INVALID, "tune pool: padding %lld must be below the kernel %lld",
					(long long)pad, (long long)R);
	}
	return TS_OK;
}

/* Every extent >= 1 (the padding of conv2d, depthwise and pool >= 0) and
 * below 2^31, so every tensor of the task stays under 2^31 elements in
 * all but pathological cases, which the operators themselves refuse. */
/* The name of extent i in the operator's usage line ("STRIDE"). */
static const char *extent_name(const char *usage, int i, char *buf, size_t n)
{
	const char *p = usage;
	for (int k = 0; k <= i && p; k++) /* skip the operator's name, then i names */
		p = strchr(p, ' ') ? strchr(p, ' ') + 1 : NULL;
	size_t len = p ? strcspn(p, " ") : 0;
	snprintf(buf, n, "%.*s", (int)len, p ? p : "");
	return buf;
}

static ts_status check_extents(ts_ctx *ctx, const ts_tune_task *t, bool last_may_be_zero)
{
	const op_info *info = find_op(t->op);
	for (int i = 0; i < t->nshape; i++) {
		int64_t lo = last_may_be_zero && i == t->nshape - 1 ? 0 : 1;
		char name[24];
		if (t->shape[i] < lo || t->shape[i] > (int64_t)1 << 24)
			return ts_error(ctx, TS_ERR_INVALID, "tune %s: extent %d is %lld; it must be from %lld to "
					"2^24 (%s, in %s)", t->op, i, (long long)t->shape[i], (long long)lo,
					extent_name(info ? info->usage : "", i, name, sizeof name),
					info ? info->usage : t->op);
	}
	return TS_OK;
}

/* Every argument of the task's function below 2^31 elements, as arrays
 * and the generated code's int32 indices need. */
static ts_status check_sizes(ts_ctx *ctx, const ts_tune_task *t)
{
	ts_tensor *args[4], *plain;
	ts_tune_cand def = ts_tune_default(t);
	int n = tune_graph(ctx, t, &def, args, &plain);
	if (!n)
		return ts_last_status(ctx);
	for (int i = 0; i < n; i++) {
		double numel = 1;
		for (int d = 0; d < args[i]->ndim; d++)
			numel *= (double)args[i]->shape[d];
		if (numel >= 2147483648.0)
			return ts_error(ctx, TS_ERR_INVALID, "tune %s: tensor %s has %.4g elements; at most 2^31 - 1",
					t->op, args[i]->name, numel);
	}
	return TS_OK;
}

static ts_status task_init(ts_ctx *ctx, ts_tune_task *t, const char *op, int nshape,
			   const int64_t *shape);

ts_status ts_tune_task_init(ts_ctx *ctx, ts_tune_task *t, const char *op, int nshape,
			    const int64_t *shape)
{
	if (!t || !op || (nshape > 0 && !shape))
		return ts_error(ctx, TS_ERR_INVALID, "tune_task_init: NULL %s", !t ? "task" : !op ? "op" : "shape");
	ts_status st = task_init(ctx, t, op, nshape, shape);
	if (st != TS_OK) /* a refused task is no task: every later call refuses it */
		memset(t, 0, sizeof *t);
	return st;
}

static ts_status task_init(ts_ctx *ctx, ts_tune_task *t, const char *op, int nshape,
			   const int64_t *shape)
{
	memset(t, 0, sizeof *t);
	const op_info *info = find_op(op);
	if (!info)
		return ts_error(ctx, TS_ERR_INVALID, "tune: unknown operator '%.40s' (%s)", op,
				"matmul, dense, batch_matmul, conv2d, conv2d_nchw, conv2d_nhwc, depthwise, pool, "
				"softmax, elementwise");
	if (nshape != info->nshape)
		return ts_error(ctx, TS_ERR_INVALID, "tune %s: %d extents given, the shape is %s", op,
				nshape, info->usage);
	snprintf(t->op, sizeof t->op, "%s", op);
	t->nshape = nshape;
	memcpy(t->shape, shape, (size_t)nshape * sizeof *shape);
	t->dtype = ts_float32;
	snprintf(t->target, sizeof t->target, "llvm");
	t->lanes = ts_cpu_vector_lanes();
	bool padded = tune_is_conv(op) || !strcmp(op, "depthwise") || !strcmp(op, "pool");
	TS_TRY(check_extents(ctx, t, padded));
	TS_TRY(check_shape(ctx, t));
	TS_TRY(space_of(ctx, t));
	t->seal = task_seal(t);
	return check_sizes(ctx, t);
}

ts_tune_cand ts_tune_default(const ts_tune_task *t)
{
	ts_tune_cand c = {{0}};
	if (tune_task_check(NULL, t, "tune_default") != TS_OK)
		return c;
	for (int i = 0; i < t->space.nparams; i++)
		c.v[i] = t->space.choice[i][0];
	return c;
}

double ts_tune_task_flops(const ts_tune_task *t)
{
	if (tune_task_check(NULL, t, "tune_task_flops") != TS_OK)
		return NAN;
	const int64_t *s = t->shape;
	double out = 1;
	if (!strcmp(t->op, "matmul") || !strcmp(t->op, "dense"))
		return 2.0 * (double)s[0] * (double)s[1] * (double)s[2];
	if (!strcmp(t->op, "batch_matmul"))
		return 2.0 * (double)s[0] * (double)s[1] * (double)s[2] * (double)s[3];
	if (tune_is_conv(t->op))
		return 2.0 * (double)s[0] * (double)s[4] * (double)s[1] * (double)(s[5] * s[6]) *
		       (double)conv_out(s[2], s[5], s[7], s[8]) * (double)conv_out(s[3], s[6], s[7], s[8]);
	if (!strcmp(t->op, "depthwise") || !strcmp(t->op, "pool"))
		return (!strcmp(t->op, "pool") ? 1.0 : 2.0) * (double)s[0] * (double)s[1] *
		       (double)(s[4] * s[4]) * (double)conv_out(s[2], s[4], s[5], s[6]) *
		       (double)conv_out(s[3], s[4], s[5], s[6]);
	for (int i = 0; i < t->nshape; i++)
		out *= (double)s[i];
	return !strcmp(t->op, "softmax") ? 5.0 * out : 3.0 * out;
}

/* The channel block of the depthwise task's NCHW[x]c tensors: a vector,
 * or the largest power of two below it dividing C. */
static int64_t depthwise_block(const ts_tune_task *t)
{
	return ts_depthwise_cpu_block(t->shape[1]);
}

int64_t tune_out_block(const ts_tune_task *t, const ts_tune_cand *c)
{
	if (!strcmp(t->op, "depthwise"))
		return depthwise_block(t);
	return !strcmp(t->op, "conv2d") ? tune_param(&t->space, c, "oc_block", 1) : 0;
}

/* ---- graphs ------------------------------------------------------------------ */

static ts_tensor *ph(ts_ctx *ctx, const char *name, int nd, const int64_t *shape)
{
	return ts_placeholder(ctx, name, nd, shape, ts_float32);
}

static int graph_gemm(ts_ctx *ctx, const ts_tune_task *t, const ts_tune_cand *c, ts_tensor **a)
{
	const int64_t *s = t->shape;
	bool dense = !strcmp(t->op, "dense");
	a[0] = ph(ctx, "A", TS_SHAPE(s[0], s[2]));
	a[1] = ph(ctx, "B", TS_SHAPE(s[2], s[1]));
	bool packed;
	ts_matmul_cpu_params p = ts_tune_matmul_params(t, c, &packed);
	ts_tensor *C = packed ? ts_op_matmul_packed(ctx, a[0], a[1], p.nr)
			      : ts_op_matmul(ctx, a[0], a[1], false, false);
	if (!dense)
		return (a[2] = C) ? 3 : 0;
	a[2] = ph(ctx, "bias", TS_SHAPE(s[1]));
	a[3] = ts_op_relu(ctx, ts_op_bias_add(ctx, C, a[2], 1));
	return a[3] ? 4 : 0;
}

static int graph_conv2d(ts_ctx *ctx, const ts_tune_task *t, const ts_tune_cand *c, ts_tensor **a,
			ts_tensor **plain)
{
	const int64_t *s = t->shape;
	int st = (int)s[7], pd = (int)s[8];
	int ib = (int)tune_param(&t->space, c, "ic_block", 1), ob = (int)tune_out_block(t, c);
	a[0] = ph(ctx, "X", TS_SHAPE(s[0], s[1], s[2], s[3]));
	a[1] = ph(ctx, "W", TS_SHAPE(s[4], s[1], s[5], s[6]));
	ts_tensor *Xc = ts_op_layout_nchw_to_nchwc(ctx, a[0], ib);
	ts_tensor *Wc = ts_op_weight_oihw_to_blocked(ctx, a[1], ib, ob);
	a[2] = ts_op_conv2d_nchwc(ctx, Xc, Wc, st, st, pd, pd, 1, 1);
	*plain = ts_op_conv2d_nchw(ctx, a[0], a[1], st, st, pd, pd, 1, 1, 1);
	return a[2] && *plain ? 3 : 0;
}

/* conv2d as tessera-bench and the graph layer run it: Xc[N, C/ib, H, W,
 * ib] and Wc[K/ob, C/ib, R, S, ib, ob] already blocked, Yc[N, K/ob, OH,
 * OW, ob]; rows viewed as one (conv2d_row): k rows as one row of k*W. */
static int graph_conv2d_kernel(ts_ctx *ctx, const ts_tune_task *t, const ts_tune_cand *c,
			       ts_tensor **a)
{
	const int64_t *s = t->shape;
	int st = (int)s[7], pd = (int)s[8];
	int64_t ib = tune_param(&t->space, c, "ic_block", 1), ob = tune_out_block(t, c);
	if (ib < 1 || ob < 1 || s[1] % ib || s[4] % ob) {
		ts_error(ctx, TS_ERR_INVALID, "tune conv2d: channel blocks %lld and %lld do not divide %lld "
			 "and %lld channels", (long long)ib, (long long)ob, (long long)s[1], (long long)s[4]);
		return 0;
	}
	int64_t rw = conv2d_row(s), h = rw > s[3] ? s[2] / (rw / s[3]) : s[2];
	a[0] = ph(ctx, "Xc", TS_SHAPE(s[0], s[1] / ib, h, s[2] * s[3] / h, ib));
	a[1] = ph(ctx, "Wc", TS_SHAPE(s[4] / ob, s[1] / ib, s[5], s[6], ib, ob));
	a[2] = ts_op_conv2d_nchwc(ctx, a[0], a[1], st, st, pd, pd, 1, 1);
	return a[2] ? 3 : 0;
}

/* conv2d_nchw and conv2d_nhwc: the plain operators, for the generic space. */
static int graph_conv_plain(ts_ctx *ctx, const ts_tune_task *t, ts_tensor **a)
{
	const int64_t *s = t->shape;
	int st = (int)s[7], pd = (int)s[8];
	if (!strcmp(t->op, "conv2d_nchw")) {
		a[0] = ph(ctx, "X", TS_SHAPE(s[0], s[1], s[2], s[3]));
		a[1] = ph(ctx, "W", TS_SHAPE(s[4], s[1], s[5], s[6]));
		a[2] = ts_op_conv2d_nchw(ctx, a[0], a[1], st, st, pd, pd, 1, 1, 1);
	} else {
		a[0] = ph(ctx, "X", TS_SHAPE(s[0], s[2], s[3], s[1]));
		a[1] = ph(ctx, "W", TS_SHAPE(s[5], s[6], s[1], s[4]));
		a[2] = ts_op_conv2d_nhwc(ctx, a[0], a[1], st, st, pd, pd, 1, 1, 1);
	}
	return a[2] ? 3 : 0;
}

/* relu(A + B) + A: an elementwise chain of three stages. */
static int graph_elementwise(ts_ctx *ctx, const ts_tune_task *t, ts_tensor **a)
{
	a[0] = ph(ctx, "A", TS_SHAPE(t->shape[0], t->shape[1]));
	a[1] = ph(ctx, "B", TS_SHAPE(t->shape[0], t->shape[1]));
	a[2] = ts_op_add(ctx, ts_op_relu(ctx, ts_op_add(ctx, a[0], a[1])), a[0]);
	return a[2] ? 3 : 0;
}

static int graph_pool(ts_ctx *ctx, const ts_tune_task *t, ts_tensor **a)
{
	const int64_t *s = t->shape;
	int R = (int)s[4], st = (int)s[5], pd = (int)s[6];
	a[0] = ph(ctx, "X", TS_SHAPE(s[0], s[1], s[2], s[3]));
	return (a[1] = ts_op_max_pool2d(ctx, a[0], R, R, st, st, pd, pd)) ? 2 : 0;
}

/* depthwise on NCHW[x]c inputs Xc[N, C/x, H, W, x] and Wc[C/x, R, R, x]
 * (the kernel as tessera-bench times it, the conversions outside); the
 * plain output, for the reference, is Y converted back to NCHW. */
static int graph_depthwise(ts_ctx *ctx, const ts_tune_task *t, ts_tensor **a, ts_tensor **plain)
{
	const int64_t *s = t->shape;
	int64_t x = depthwise_block(t), R = s[4];
	int st = (int)s[5], pd = (int)s[6];
	a[0] = ph(ctx, "Xc", TS_SHAPE(s[0], s[1] / x, s[2], s[3], x));
	a[1] = ph(ctx, "Wc", TS_SHAPE(s[1] / x, R, R, x));
	a[2] = ts_op_depthwise_conv2d_nchwc(ctx, a[0], a[1], st, st, pd, pd, 1, 1);
	*plain = a[2] ? ts_op_layout_nchwc_to_nchw(ctx, a[2]) : NULL;
	return *plain ? 3 : 0;
}

int tune_graph(ts_ctx *ctx, const ts_tune_task *t, const ts_tune_cand *c, ts_tensor **a,
	       ts_tensor **plain)
{
	const int64_t *s = t->shape;
	int n = 0;
	*plain = NULL;
	if (!strcmp(t->op, "matmul") || !strcmp(t->op, "dense"))
		n = graph_gemm(ctx, t, c, a);
	else if (!strcmp(t->op, "conv2d"))
		return graph_conv2d(ctx, t, c, a, plain);
	else if (!strcmp(t->op, "batch_matmul")) {
		a[0] = ph(ctx, "A", TS_SHAPE(s[0], s[1], s[3]));
		a[1] = ph(ctx, "B", TS_SHAPE(s[0], s[3], s[2]));
		n = (a[2] = ts_op_batch_matmul(ctx, a[0], a[1], false, false)) ? 3 : 0;
	} else if (!strcmp(t->op, "softmax")) {
		a[0] = ph(ctx, "X", TS_SHAPE(s[0], s[1]));
		n = (a[1] = ts_op_softmax(ctx, a[0])) ? 2 : 0;
	} else if (!strcmp(t->op, "elementwise"))
		n = graph_elementwise(ctx, t, a);
	else if (!strcmp(t->op, "depthwise"))
		return graph_depthwise(ctx, t, a, plain);
	else if (tune_is_conv(t->op))
		n = graph_conv_plain(ctx, t, a);
	else
		n = graph_pool(ctx, t, a);
	if (n)
		*plain = a[n - 1];
	return n;
}

/* ---- scheduling a candidate ---------------------------------------------------------- */

/* A stage no primitive touched yet (the layout conversions of conv2d):
 * its outermost loop parallel. */
static ts_status parallel_if_untouched(ts_schedule *s, ts_tensor *T)
{
	ts_stage *st = ts_stage_of(s, T);
	if (!st)
		return ts_last_status(s->ctx);
	if (st->nrel || st->attach != SCH_ATTACH_ROOT)
		return TS_OK;
	for (int i = 0; i < st->nleaf; i++)
		if (st->leaf[i]->loop != TS_FOR_SERIAL)
			return TS_OK;
	return ts_parallel(st, ts_axis_of(st, 0));
}

ts_conv2d_cpu_params ts_tune_conv2d_params(const ts_tune_task *t, const ts_tune_cand *c)
{
	ts_conv2d_cpu_params p = ts_conv2d_cpu_default();
	/* checked like every call given a task: a forged one is not read */
	if (!c || tune_task_check(NULL, t, "tune_conv2d_params") != TS_OK ||
	    strcmp(t->space.kind, KIND_CONV2D))
		return p;
	const ts_tune_space *sp = &t->space;
	p.ow_block = tune_param(sp, c, "ow_block", p.ow_block);
	p.oh_block = tune_param(sp, c, "oh_block", p.oh_block);
	p.parallel = tune_param(sp, c, "parallel", p.parallel) != 0;
	p.pad = (ts_pad_mode)tune_param(sp, c, "pad", p.pad);
	p.rc_block = tune_param(sp, c, "rc_block", p.rc_block);
	p.prefetch = tune_param(sp, c, "prefetch", p.prefetch) != 0;
	return p;
}

ts_matmul_cpu_params ts_tune_matmul_params(const ts_tune_task *t, const ts_tune_cand *c, bool *packed)
{
	ts_matmul_cpu_params p = ts_matmul_cpu_default();
	if (packed)
		*packed = false;
	if (!c || tune_task_check(NULL, t, "tune_matmul_params") != TS_OK ||
	    strcmp(t->space.kind, KIND_MATMUL))
		return p;
	const ts_tune_space *sp = &t->space;
	p.mr = tune_param(sp, c, "mr", p.mr);
	p.nr = tune_param(sp, c, "nr", p.nr);
	p.kunroll = tune_param(sp, c, "kunroll", p.kunroll);
	p.parallel = tune_param(sp, c, "parallel", p.parallel) != 0;
	p.pack = (ts_pack_mode)tune_param(sp, c, "pack_at", p.pack);
	p.kc = tune_param(sp, c, "kc", p.kc);
	p.prefetch = tune_param(sp, c, "prefetch", p.prefetch) != 0;
	if (packed)
		*packed = tune_param(sp, c, "pack", 0) != 0;
	return p;
}

static ts_status schedule_conv2d(ts_schedule *s, const ts_tune_task *t, const ts_tune_cand *c,
				 ts_tensor *Y)
{
	ts_conv2d_cpu_params p = ts_tune_conv2d_params(t, c);
	TS_TRY(ts_schedule_conv2d_nchwc_cpu(s, Y, &p));
	/* Y reads the padded Xc (or Xc) and Wc; Wc and Xc are layout stages */
	for (int i = 0; i < Y->ninputs; i++) {
		ts_tensor *T = Y->inputs[i];
		if (T->op == TS_OP_COMPUTE && T->ndim == 5 && T->ninputs == 1 && T->inputs[0]->op == TS_OP_COMPUTE)
			TS_TRY(parallel_if_untouched(s, T->inputs[0]));
		if (T->op == TS_OP_COMPUTE)
			TS_TRY(parallel_if_untouched(s, T));
	}
	return TS_OK;
}

/* C[b, m, n]: ts_schedule_batch_matmul_cpu with the candidate's blocks, or
 * the default schedule. */
static ts_status schedule_batch_matmul(ts_schedule *s, const ts_tune_task *t,
				       const ts_tune_cand *c, ts_tensor *C)
{
	const ts_tune_space *sp = &t->space;
	if (!tune_param(sp, c, "blocked", 0))
		return ts_schedule_default_cpu(s, t->lanes);
	ts_matmul_cpu_params p = {.mr = tune_param(sp, c, "mr", 4), .nr = tune_param(sp, c, "nr", 16),
				  .kunroll = tune_param(sp, c, "kunroll", 4),
				  .parallel = tune_param(sp, c, "parallel", 1) != 0};
	return ts_schedule_batch_matmul_cpu(s, C, &p);
}

static ts_status schedule_task(ts_schedule *s, const ts_tune_task *t, const ts_tune_cand *c,
			       ts_tensor *out)
{
	const ts_tune_space *sp = &t->space;
	if (!strcmp(sp->kind, KIND_MATMUL)) {
		ts_matmul_cpu_params p = ts_tune_matmul_params(t, c, NULL);
		return ts_schedule_dense_cpu(s, out, &p);
	}
	if (!strcmp(sp->kind, "conv2d"))
		return schedule_conv2d(s, t, c, out);
	if (!strcmp(sp->kind, "batch_matmul"))
		return schedule_batch_matmul(s, t, c, out);
	if (!strcmp(sp->kind, "softmax"))
		return ts_schedule_softmax_cpu(s, out, (int)tune_param(sp, c, "lanes", t->lanes));
	if (!strcmp(sp->kind, "depthwise")) {
		ts_depthwise_cpu_params p = {.ow_block = tune_param(sp, c, "ow_block", 0),
					     .oh_block = tune_param(sp, c, "oh_block", 0),
					     .parallel = tune_param(sp, c, "parallel", 1) != 0};
		return ts_schedule_depthwise_nchwc_cpu(s, out, &p);
	}
	return ts_tune_apply_generic(s, out, t->lanes, sp, c);
}

/* Parameters a candidate may take: those of the space, each within the
 * range a schedule accepts (a log's values are checked the same way). */
ts_status tune_check_cand(ts_ctx *ctx, const char *what, const ts_tune_task *t, const ts_tune_cand *c)
{
	for (int i = 0; i < t->space.nparams; i++)
		if (c->v[i] < 0 || c->v[i] > TUNE_MAX_VALUE)
			return ts_error(ctx, TS_ERR_INVALID, "%s%s: parameter %s is %lld; it must be from 0 to %d",
					what ? what : "tune ", what ? "" : t->op, t->space.name[i], (long long)c->v[i],
					TUNE_MAX_VALUE);
	return TS_OK;
}

ts_func *ts_tune_lower(ts_ctx *ctx, const ts_tune_task *t, const ts_tune_cand *c)
{
	if (tune_task_check(ctx, t, "tune_lower") != TS_OK)
		return NULL;
	if (!c) {
		ts_error(ctx, TS_ERR_INVALID, "tune_lower: NULL candidate");
		return NULL;
	}
	if (tune_check_cand(ctx, NULL, t, c) != TS_OK)
		return NULL;
	ts_tensor *args[4], *plain;
	int n = tune_graph(ctx, t, c, args, &plain);
	ts_schedule *s = n ? ts_create_schedule(ctx, 1, &args[n - 1]) : NULL;
	if (!s || schedule_task(s, t, c, args[n - 1]) != TS_OK)
		return NULL;
	return ts_lower(s, t->op, n, args);
}

ts_func *tune_lower_timed(ts_ctx *ctx, const ts_tune_task *t, const ts_tune_cand *c)
{
	if (strcmp(t->op, "conv2d"))
		return ts_tune_lower(ctx, t, c);
	if (tune_check_cand(ctx, NULL, t, c) != TS_OK)
		return NULL;
	ts_tensor *args[3];
	int n = graph_conv2d_kernel(ctx, t, c, args);
	ts_schedule *s = n ? ts_create_schedule(ctx, 1, &args[2]) : NULL;
	if (!s || schedule_task(s, t, c, args[2]) != TS_OK)
		return NULL;
	return ts_lower(s, "conv2d_kernel", 3, args);
}

/* ---- the generic space -------------------------------------------------------------- */

#define GEN_MAX_DATA 6
#define GEN_MAX_RED 4

ts_status ts_tune_space_generic(ts_ctx *ctx, const ts_tensor *out, int lanes, ts_tune_space *sp)
{
	if (!out || !sp)
		return ts_error(ctx, TS_ERR_INVALID, "tune_space_generic: NULL %s", !out ? "tensor" : "space");
	if (out->op != TS_OP_COMPUTE)
		return ts_error(ctx, TS_ERR_INVALID, "tune_space_generic: %s is a placeholder, not a compute",
				out->name);
	if (lanes < 1 || lanes > TS_MAX_VECTOR_LANES)
		return ts_error(ctx, TS_ERR_INVALID, "tune_space_generic(%s): lanes must be 1..%d, got %d",
				out->name, TS_MAX_VECTOR_LANES, lanes);
	memset(sp, 0, sizeof *sp);
	sp->kind = KIND_GENERIC;
	add_param(sp, "sketch", 3, (int64_t[]){0, 1, 2});
	char name[TS_TUNE_NAME];
	int nd = out->ndim < GEN_MAX_DATA ? out->ndim : GEN_MAX_DATA;
	for (int d = 0; d < nd; d++) {
		int64_t ext = out->shape[d];
		bool last = d == out->ndim - 1;
		/* a vector of the innermost axis; the others start whole */
		int64_t def = last ? (ext >= lanes ? lanes : 1) : 1;
		snprintf(name, sizeof name, "tile%d", d);
		add_factor(sp, name, def, ext, 64);
	}
	/* a second level on the two innermost axes: tiles of tiles, so that
	 * the inner tiles of one outer tile share their operands in cache */
	for (int d = nd - 2 < 0 ? 0 : nd - 2; d < nd; d++) {
		snprintf(name, sizeof name, "otile%d", d);
		add_param(sp, name, 4, (int64_t[]){1, 2, 4, 8});
	}
	int nr = out->nreduce < GEN_MAX_RED ? out->nreduce : GEN_MAX_RED;
	for (int r = 0; r < nr; r++) {
		snprintf(name, sizeof name, "rsplit%d", r);
		add_factor(sp, name, 1, out->reduce_axis[r]->extent, 16);
	}
	add_param(sp, "vec", 2, (int64_t[]){1, 0});
	if (out->ndim > 1) /* 0: the innermost data axis is vectorized; 1: the one before */
		add_param(sp, "vaxis", 2, (int64_t[]){0, 1});
	add_param(sp, "parallel", 2, (int64_t[]){1, 0});
	add_param(sp, "unroll", 2, (int64_t[]){0, 1});
	if (out->body->kind == IR_REDUCE)
		add_param(sp, "cache", 2, (int64_t[]){0, 1});
	add_param(sp, "producers", 3, (int64_t[]){0, 1, 2});
	return TS_OK;
}

/* The axes of the generic sketch: per data axis its outer, middle and
 * inner part (middle and inner NULL when not split), per reduction axis
 * its outer and inner part. */
typedef struct gen_axes {
	int nd, nr;
	int vd;      /* the data axis whose inner part is innermost (vectorized) */
	ts_axis *o[TS_MAX_DIMS], *m[TS_MAX_DIMS], *i[TS_MAX_DIMS];
	ts_axis *ro[TS_MAX_DIMS], *ri[TS_MAX_DIMS];
} gen_axes;

static ts_status split_opt(ts_stage *st, ts_axis *a, int64_t f, ts_axis **o, ts_axis **i)
{
	*o = a, *i = NULL;
	return f > 1 ? ts_split(st, a, f, o, i) : TS_OK;
}

static ts_status gen_split(ts_stage *so, ts_stage *sc, const ts_tune_space *sp,
			   const ts_tune_cand *c, gen_axes *g)
{
	char name[TS_TUNE_NAME];
	g->nd = so->tensor->ndim;
	g->nr = sc->nroot - sc->tensor->ndim;
	g->vd = g->nd - 1 - (g->nd > 1 && tune_param(sp, c, "vaxis", 0) == 1);
	for (int d = 0; d < g->nd; d++) {
		snprintf(name, sizeof name, "tile%d", d);
		TS_TRY(split_opt(so, ts_axis_of(so, d), tune_param(sp, c, name, 1), &g->o[d], &g->i[d]));
		snprintf(name, sizeof name, "otile%d", d);
		TS_TRY(split_opt(so, g->o[d], tune_param(sp, c, name, 1), &g->o[d], &g->m[d]));
	}
	for (int r = 0; r < g->nr; r++) {
		snprintf(name, sizeof name, "rsplit%d", r);
		TS_TRY(split_opt(sc, ts_reduce_axis_of(sc, r), tune_param(sp, c, name, 1), &g->ro[r], &g->ri[r]));
	}
	return TS_OK;
}

static void push(ts_axis **order, int *n, ts_axis *a)
{
	if (a)
		order[(*n)++] = a;
}

static void push_red(ts_axis **order, int *n, const gen_axes *g)
{
	for (int r = 0; r < g->nr; r++)
		push(order, n, g->ro[r]);
	for (int r = 0; r < g->nr; r++)
		push(order, n, g->ri[r]);
}

/* Data axes d of `a` in order, axis g->vd last (it is vectorized). */
static void push_data(ts_axis **order, int *n, const gen_axes *g, ts_axis *const *a)
{
	for (int d = 0; d < g->nd; d++)
		if (d != g->vd)
			push(order, n, a[d]);
	push(order, n, a[g->vd]);
}

/* The output stage's order: outer tiles, then (sketch 1) the reductions
 * and the inner tile or (sketch 2) the inner tile and the reductions;
 * with a cache stage the reductions are its own. */
static ts_status gen_order(ts_stage *so, const gen_axes *g, int sketch, bool cache)
{
	ts_axis *order[4 * TS_MAX_DIMS];
	int n = 0;
	for (int d = 0; d < g->nd; d++)
		push(order, &n, g->o[d]);
	for (int d = 0; d < g->nd; d++)
		push(order, &n, g->m[d]);
	if (sketch == 1 && !cache)
		push_red(order, &n, g);
	push_data(order, &n, g, g->i);
	if (sketch == 2 && !cache)
		push_red(order, &n, g);
	return ts_reorder(so, n, order);
}

/* The cache stage, computed at the tile: its data axes after (sketch 1)
 * or before (sketch 2) its reductions, the innermost data axis vectorized
 * when it is innermost. */
static ts_status gen_cache(ts_stage *sc, ts_stage *so, ts_axis *at, const gen_axes *g, int sketch,
			   bool vec)
{
	ts_axis *order[4 * TS_MAX_DIMS], *data[TS_MAX_DIMS];
	int n = 0;
	TS_TRY(ts_compute_at(sc, so, at));
	for (int d = 0; d < g->nd; d++)
		data[d] = ts_axis_of(sc, d);
	if (sketch == 2)
		push_data(order, &n, g, data);
	push_red(order, &n, g);
	if (sketch == 1)
		push_data(order, &n, g, data);
	TS_TRY(ts_reorder(sc, n, order));
	return vec && sketch == 1 ? ts_vectorize(sc, data[g->vd]) : TS_OK;
}

/* Fuses the outer tile loops into one; returns it in *at. */
static ts_status gen_fuse(ts_stage *so, const gen_axes *g, ts_axis **at)
{
	*at = g->o[0];
	for (int d = 1; d < g->nd; d++)
		TS_TRY(ts_fuse(so, *at, g->o[d], at));
	return TS_OK;
}

/* The elementwise producers (other stages than out and its cache): inlined,
 * at the tile loop, or at root; reductions stay at root. */
static ts_status gen_producers(ts_schedule *s, ts_stage *so, ts_stage *sc, ts_axis *at, int64_t how)
{
	for (int i = 0; i < s->nstages; i++) {
		ts_stage *st = s->stages[i];
		if (st == so || st == sc || st->body->kind == IR_REDUCE)
			continue;
		if (how == 0)
			TS_TRY(ts_compute_inline(st));
		else if (how == 1)
			TS_TRY(ts_compute_at(st, so, at));
	}
	return TS_OK;
}

ts_status ts_tune_apply_generic(ts_schedule *s, ts_tensor *out, int lanes,
				const ts_tune_space *sp, const ts_tune_cand *c)
{
	if (!s)
		return TS_ERR_INVALID;
	if (!out || !sp || !c)
		return ts_error(s->ctx, TS_ERR_INVALID, "tune_apply_generic: NULL %s",
				!out ? "tensor" : !sp ? "space" : "candidate");
	if (s->nout != 1 || s->outputs[0] != out)
		return ts_error(s->ctx, TS_ERR_INVALID, "tune_apply_generic(%s): it must be the schedule's only output",
				out->name);
	TS_TRY(tune_space_check(s->ctx, sp, "tune_apply_generic", "the space"));
	int sketch = (int)tune_param(sp, c, "sketch", 0);
	if (sketch == 0)
		return ts_schedule_default_cpu(s, lanes);
	bool cache = tune_param(sp, c, "cache", 0) && out->body->kind == IR_REDUCE;
	bool vec = tune_param(sp, c, "vec", 0);
	ts_stage *sc = NULL;
	if (cache) {
		ts_tensor *CC = ts_cache_write(s, out, TS_SCOPE_LOCAL);
		if (!CC)
			return ts_last_status(s->ctx);
		sc = ts_stage_of(s, CC);
	}
	ts_stage *so = ts_stage_of(s, out);
	if (!so)
		return ts_last_status(s->ctx);
	gen_axes g;
	TS_TRY(gen_split(so, cache ? sc : so, sp, c, &g));
	TS_TRY(gen_order(so, &g, sketch, cache));
	ts_axis *at = g.o[g.nd - 1];
	if (tune_param(sp, c, "parallel", 0)) {
		TS_TRY(gen_fuse(so, &g, &at));
		TS_TRY(ts_parallel(so, at));
	}
	for (int d = 0; d < g.nd; d++) /* the tile loop: the innermost outer one */
		if (g.m[d])
			at = g.m[d];
	if (vec && g.i[g.vd])
		TS_TRY(ts_vectorize(so, g.i[g.vd]));
	if (cache)
		TS_TRY(gen_cache(sc, so, at, &g, sketch, vec));
	ts_stage *red = cache ? sc : so;
	if (tune_param(sp, c, "unroll", 0) && g.nr > 0) {
		ts_axis *u = g.ri[g.nr - 1] ? g.ri[g.nr - 1] : g.ro[g.nr - 1];
		TS_TRY(ts_unroll(red, u));
	}
	return gen_producers(s, so, sc, at, tune_param(sp, c, "producers", 0));
}
