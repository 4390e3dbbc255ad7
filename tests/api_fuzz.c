/*
 * api_fuzz.c - the hostile API-sequence harness (api_fuzz.h).
 *
 * Each step reads a byte that picks a call, then one byte per argument
 * choice: an object from a pool (or NULL, now and then), a count, an
 * extent, a dtype.  Pools are small rings, so calls keep meeting the
 * objects earlier calls made, including axes a split has since replaced
 * and objects of the other context.  Every call goes through CALL_P or
 * CALL_S, which clear both contexts' errors first and, when the call
 * fails, check that the context it works in holds a message.
 *
 * Most of the construction is deliberately plausible (computes that read
 * their inputs in bounds, small extents, float32) so that lowering and
 * building are reached often; a byte in each choice turns it hostile.  A
 * function that lowers is run in the loop-IR interpreter and, at most
 * API_MAX_BUILDS times per input, built with LLVM and run, and compared
 * with the reference evaluator.
 *
 * Some pipelines are scheduled as GPU users write them (the data axes
 * split into blocks and threads, inputs staged in shared memory or
 * registers at a block or thread loop, reductions accumulated in
 * registers, producers inlined or computed in the threads, the operator
 * library's GPU schedules), with random primitives on top.  Such a
 * function is checked through the interpreter; with the GPU checks on
 * (api_fuzz_gpu), any function bound to blocks or threads is also built
 * for "cuda" (at most API_MAX_GPU_BUILDS times per input: on the host
 * emulator each build is a run of the host C++ compiler), run through the
 * module API on device copies of its arguments and compared with the
 * reference.  ts_build refusing it with TS_ERR_INVALID or
 * TS_ERR_UNSUPPORTED and a message is a refusal; any other failure of the
 * build (NVRTC rejecting the emitted CUDA C, a module that does not
 * load) or of the run is a violation.
 *
 * The harness keeps to the callers' side of each contract: every array it
 * passes holds as many elements as the count it passes with it (buffers of
 * API_BUF entries), and memory it hands the library (ts_eval's data,
 * ts_array_wrap) holds the elements its shape says.
 */
#include "api_fuzz.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera.h"

#define API_MAX_STEPS 160
#define API_MAX_BUILDS 2
#define API_MAX_GPU_BUILDS 2
#define API_BUF 128 /* entries of every array passed with a count */
/* Functions are run and evaluated only below this much work (elements of
 * every tensor in the graph times the reduction extents), so an input
 * stays in milliseconds. */
#define API_MAX_WORK (1 << 15)

enum { NEXPR = 48, NITER = 8, NTENSOR = 24, NSCH = 4, NSTAGE = 12, NAXIS = 32, NFUNC = 4,
       NMOD = 2, NARR = 8, NTRACE = 24 };

typedef struct fz {
	const uint8_t *data;
	size_t size, pos;
	const char *label;
	int log; /* TS_API_FUZZ_LOG */
	ts_ctx *ctx[2];
	ts_expr *expr[NEXPR];
	int nexpr;
	ts_iter *iter[NITER];
	int niter;
	ts_tensor *tensor[NTENSOR];
	int ntensor;
	ts_schedule *sch[NSCH];
	int nsch;
	ts_stage *stage[NSTAGE];
	int nstage;
	ts_axis *axis[NAXIS];
	int naxis;
	ts_func *func[NFUNC];
	int nfunc;
	ts_module *mod[NMOD];
	int nmod;
	ts_array *arr[NARR];
	int narr;
	int builds, gpu_builds;
	bool gpu; /* api_fuzz_gpu() */
	ts_dtype input_type; /* of the inputs of a GPU pipeline's operator (bits 0: any) */
	api_fuzz_counts counts;
	int64_t size_var[2];
	const char *trace[NTRACE]; /* the last calls made, for the report */
	int ntrace;
	int nfailed; /* for the log: calls failed */
} fz;

/* ---- choices ------------------------------------------------------------------ */

static unsigned u8(fz *f)
{
	return f->pos < f->size ? f->data[f->pos++] : 0;
}

static int pick(fz *f, int n)
{
	return (int)(u8(f) % (unsigned)n);
}

/* One in n. */
static bool rare(fz *f, int n)
{
	return pick(f, n) == 0;
}

static const int64_t hostile_i64[] = {
	0, -1, -2, INT32_MAX, INT32_MIN, (int64_t)INT32_MAX + 1, INT64_MAX, INT64_MIN,
	INT64_MAX / 2 + 1, (int64_t)1 << 31, (int64_t)1 << 40, (int64_t)1 << 62, 65536, 1025,
	4097, -65536,
};

/* Mostly 1..8; sometimes a value at an edge of int32 or int64. */
static int64_t pick_extent(fz *f)
{
	unsigned b = u8(f);
	if (b < 200)
		return 1 + b % 8;
	if (b < 216)
		return 9 + b % 24;
	if (b < 220 && f->size_var[b & 1])
		return f->size_var[b & 1];
	return hostile_i64[b % TS_COUNT_OF(hostile_i64)];
}

/* A small count or parameter (0..4), sometimes hostile. */
static int pick_int(fz *f)
{
	unsigned b = u8(f);
	if (b < 220)
		return (int)(b % 5);
	static const int h[] = {-1, -2, 5, 7, 8, 9, 16, 100, INT_MAX, INT_MIN, 127, 128};
	return h[b % TS_COUNT_OF(h)];
}

/* pick_extent() less k, saturating at INT64_MIN. */
static int64_t pick_extent_less(fz *f, int k)
{
	int64_t v = pick_extent(f), r;
	return __builtin_sub_overflow(v, k, &r) ? INT64_MIN : r;
}

static int pick_int_less(fz *f, int k)
{
	int v = pick_int(f), r;
	return __builtin_sub_overflow(v, k, &r) ? INT_MIN : r;
}

static int pick_int_times(fz *f, int k)
{
	int v = pick_int(f), r;
	return __builtin_mul_overflow(v, k, &r) ? INT_MAX : r;
}

/* A count for an array of API_BUF entries: never more. */
static int pick_count(fz *f, int usual)
{
	unsigned b = u8(f);
	if (b < 200)
		return usual;
	static const int h[] = {-1, 0, 1, 2, 3, 8, 9, 64, API_BUF, INT_MIN};
	return h[b % TS_COUNT_OF(h)];
}

static ts_dtype pick_dtype(fz *f)
{
	static const ts_dtype usual[] = {ts_float32, ts_float32, ts_float32, ts_int32, ts_int32,
					  ts_float64, ts_int64, ts_int8, ts_uint8, ts_int16,
					  ts_float16, ts_bfloat16, ts_bool};
	static const ts_dtype odd[] = {
		TS_DTYPE(TS_TYPE_UINT, 16), TS_DTYPE(TS_TYPE_UINT, 32), TS_DTYPE(TS_TYPE_UINT, 64),
		ts_handle, TS_DTYPE(9, 32), TS_DTYPE(TS_TYPE_INT, 7), TS_DTYPE(TS_TYPE_FLOAT, 8),
		TS_DTYPE(TS_TYPE_BOOL, 8), TS_DTYPE(TS_TYPE_BFLOAT, 32), {TS_TYPE_FLOAT, 32, 0},
		{TS_TYPE_FLOAT, 32, 4}, {TS_TYPE_INT, 32, 65}, {TS_TYPE_INT, 0, 1},
		{TS_TYPE_HANDLE, 64, 2}, {255, 255, 65535},
	};
	unsigned b = u8(f);
	if (b < 232)
		return usual[b % TS_COUNT_OF(usual)];
	return odd[b % TS_COUNT_OF(odd)];
}

static const char *pick_name(fz *f)
{
	static const char *names[] = {"A", "B", "C", "x", "k", "A", "T", "",
				      NULL, "a b", "3d", "C.local", "main", "%s%n", "\"*/", "A"};
	return names[pick(f, TS_COUNT_OF(names))];
}

static ts_ctx *pick_ctx(fz *f)
{
	unsigned b = u8(f);
	if (b < 4)
		return NULL;
	return f->ctx[b < 200 ? 0 : 1];
}

/* Pools are rings: once full, a new object replaces a random one, which
 * release() gives back when the pool owns its objects (modules, arrays). */
#define POOL_PUT(f, pool, n, cap, x, release)                                            \
	do {                                                                             \
		if ((n) < (cap)) {                                                       \
			(pool)[(n)++] = (x);                                             \
		} else {                                                                 \
			int i_ = pick((f), (cap));                                       \
			release((pool)[i_]);                                             \
			(pool)[i_] = (x);                                                \
		}                                                                        \
	} while (0)
/* Objects of a context, which frees them: NULL is left out. */
#define POOL_ADD(f, pool, n, cap, x)                                                     \
	do {                                                                             \
		if (x)                                                                   \
			POOL_PUT(f, pool, n, cap, x, (void));                            \
	} while (0)
/* A pool entry, or NULL for an empty pool and one choice in 24. */
#define POOL_PICK(f, pool, n)                                                            \
	__extension__({                                                                  \
		unsigned b_ = u8(f);                                                     \
		(n) == 0 || b_ % 24 == 23 ? NULL : (pool)[b_ % (unsigned)(n)];           \
	})

static ts_expr *any_expr(fz *f) { return POOL_PICK(f, f->expr, f->nexpr); }
static ts_iter *any_iter(fz *f) { return POOL_PICK(f, f->iter, f->niter); }
static ts_tensor *any_tensor(fz *f) { return POOL_PICK(f, f->tensor, f->ntensor); }
static ts_schedule *any_sch(fz *f) { return POOL_PICK(f, f->sch, f->nsch); }
static ts_stage *any_stage(fz *f) { return POOL_PICK(f, f->stage, f->nstage); }
static ts_axis *any_axis(fz *f) { return POOL_PICK(f, f->axis, f->naxis); }
static ts_func *any_func(fz *f) { return POOL_PICK(f, f->func, f->nfunc); }
static ts_array *any_array(fz *f) { return POOL_PICK(f, f->arr, f->narr); }

/* An axis, most often one of st's own leaves. */
static ts_axis *stage_axis(fz *f, ts_stage *st)
{
	if (st && st->nleaf > 0 && !rare(f, 4))
		return st->leaf[pick(f, st->nleaf)];
	return any_axis(f);
}

/* A tensor of ctx, when the pool has one (else any). */
static ts_tensor *tensor_of(fz *f, ts_ctx *ctx)
{
	for (int tries = 0; tries < 4; tries++) {
		ts_tensor *t = any_tensor(f);
		if (t && t->ctx == ctx)
			return t;
	}
	return any_tensor(f);
}

/* A compute tensor of ctx, when the pool has one. */
static ts_tensor *compute_of(fz *f, ts_ctx *ctx)
{
	for (int tries = 0; tries < 8; tries++) {
		ts_tensor *t = tensor_of(f, ctx);
		if (t && t->op == TS_OP_COMPUTE)
			return t;
	}
	return tensor_of(f, ctx);
}

/* ---- checking calls --------------------------------------------------------------- */

static void die(fz *f, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

static void die(fz *f, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "api_fuzz%s%s: ", f->label ? " " : "", f->label ? f->label : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nthe last calls, oldest first:\n");
	int n = f->ntrace < NTRACE ? f->ntrace : NTRACE;
	for (int i = f->ntrace - n; i < f->ntrace; i++)
		fprintf(stderr, "  %s\n", f->trace[i % NTRACE]);
	abort();
}

static void begin(fz *f, const char *call)
{
	ts_clear_error(f->ctx[0]);
	ts_clear_error(f->ctx[1]);
	f->trace[f->ntrace++ % NTRACE] = call;
	if (f->log > 1)
		fprintf(stderr, "%s\n", call);
}

/* A call failed: the context it works in (NULL: it has none to record
 * in) must say why. */
static void failed(fz *f, ts_ctx *ctx)
{
	const char *call = f->trace[(f->ntrace - 1) % NTRACE];
	f->nfailed++;
	if (!ctx)
		return;
	if (ts_last_status(ctx) == TS_OK || !ts_last_error(ctx)[0])
		die(f, "%s failed and left no error in its context (status %d, '%s')", call,
		    (int)ts_last_status(ctx), ts_last_error(ctx));
	/* TS_ERR_INTERNAL is a failed TS_ASSERT: the library's bug, whatever
	 * the arguments */
	if (ts_last_status(ctx) == TS_ERR_INTERNAL)
		die(f, "%s failed on an internal check: %s", call, ts_last_error(ctx));
	if (f->log)
		fprintf(stderr, "%s\n    => %s\n", call, ts_last_error(ctx));
}

static void *check_p(fz *f, ts_ctx *ctx, void *p)
{
	if (!p)
		failed(f, ctx);
	return p;
}

static ts_status check_s(fz *f, ts_ctx *ctx, ts_status st)
{
	if (st != TS_OK)
		failed(f, ctx);
	return st;
}

#define CALL_P(f, ctx, call) (begin((f), #call), check_p((f), (ctx), (void *)(call)))
#define CALL_S(f, ctx, call) (begin((f), #call), check_s((f), (ctx), (call)))

static ts_ctx *ctx_of_stage(const ts_stage *st) { return st ? st->sch->ctx : NULL; }
static ts_ctx *ctx_of_sch(const ts_schedule *s) { return s ? s->ctx : NULL; }
static ts_ctx *ctx_of_tensor(const ts_tensor *t) { return t ? t->ctx : NULL; }

/* ---- expressions -------------------------------------------------------------------- */

/* What an expression may use: the index variables of the compute being
 * built and its reduction axes. */
typedef struct scope {
	ts_ctx *ctx;
	int nv;
	ts_expr *vars[TS_MAX_DIMS];
	const int64_t *shape;
	int nred;
	ts_iter *red[2];
	/* fewer hostile choices, so that most bodies are valid: no pool
	 * expressions, vectors or nested reductions, reads of tensors of the
	 * context with one index per dimension */
	bool nice;
} scope;

static ts_expr *gen_expr(fz *f, scope *sc, int depth);

static ts_expr *add_expr(fz *f, ts_expr *e)
{
	POOL_ADD(f, f->expr, f->nexpr, NEXPR, e);
	return e;
}

static ts_expr *gen_const(fz *f, ts_ctx *ctx, bool nice)
{
	switch (pick(f, nice ? 2 : 6)) {
	case 0:
		return CALL_P(f, ctx, ts_int(ctx, nice ? pick(f, 9) - 4 : pick_extent(f)));
	case 1:
		return CALL_P(f, ctx, ts_float(ctx, (double)pick(f, 17) / 4 - 2));
	case 2:
		return CALL_P(f, ctx, ts_const(ctx, pick_dtype(f), pick_extent(f)));
	case 3: {
		static const double v[] = {0.5, -0.0, 1e10, 1e300, -3.75, INFINITY, NAN, 65504.0};
		return CALL_P(f, ctx, ts_fconst(ctx, pick_dtype(f), v[pick(f, 8)]));
	}
	case 4:
		return CALL_P(f, ctx, ts_make_const(ctx, pick_dtype(f), (double)pick_extent(f) / 2));
	default:
		return CALL_P(f, ctx, ts_var_typed(ctx, pick_name(f), pick_dtype(f)));
	}
}

/* An index into dimension d of t: in bounds most of the time. */
static ts_expr *gen_index(fz *f, scope *sc, const ts_tensor *t, int d)
{
	ts_ctx *ctx = sc->ctx;
	int64_t ext = d < t->ndim ? t->shape[d] : 1;
	ts_expr *v = NULL;
	if (sc->nv > 0 || sc->nred > 0) {
		int k = pick(f, sc->nv + sc->nred);
		v = k < sc->nv ? sc->vars[k] : sc->red[k - sc->nv]->var;
	}
	switch (v ? pick(f, sc->nice ? 6 : 8) : 4) {
	case 0:
	case 1:
	case 2: /* wraps into the dimension */
		return CALL_P(f, ctx, ts_floormod(ctx, v, ts_const(ctx, v->dtype, ext)));
	case 3: /* the variable as it is: in bounds where the extents agree */
		return v;
	case 4:
		return CALL_P(f, ctx, ts_int(ctx, ext > 1 ? pick(f, (int)(ext < 200 ? ext : 200)) : 0));
	case 5:
		return CALL_P(f, ctx, ts_add(ctx, v, ts_int(ctx, sc->nice ? pick(f, 5) - 2 : pick_extent_less(f, 4))));
	case 6:
		return CALL_P(f, ctx, ts_int(ctx, pick_extent(f)));
	default:
		return gen_expr(f, sc, 1);
	}
}

static ts_expr *gen_read(fz *f, scope *sc)
{
	ts_tensor *t = tensor_of(f, sc->ctx);
	ts_expr *idx[API_BUF] = {NULL};
	if (sc->nice && (!t || t->ctx != sc->ctx))
		return gen_const(f, sc->ctx, sc->nice);
	int n = t ? t->ndim : 1;
	n = n < 0 || n > TS_MAX_DIMS ? 1 : n;
	if (!sc->nice && rare(f, 10))
		n = pick_count(f, n + 1);
	for (int d = 0; d < n && d < API_BUF && d < TS_MAX_DIMS + 2; d++)
		idx[d] = t ? gen_index(f, sc, t, d) : any_expr(f);
	return CALL_P(f, sc->ctx, ts_read(sc->ctx, t, n, idx));
}

static ts_expr *gen_binary(fz *f, scope *sc, int depth)
{
	ts_ctx *ctx = sc->ctx;
	ts_expr *a = gen_expr(f, sc, depth - 1), *b = gen_expr(f, sc, depth - 1);
	/* most of the time, operands of one dtype */
	if (a && b && !ts_dtype_eq(a->dtype, b->dtype) && (sc->nice || !rare(f, 4)))
		b = CALL_P(f, ctx, ts_cast(ctx, a->dtype, b));
	unsigned k = u8(f);
	if (sc->nice) {
		bool fl = a && ts_dtype_is_float(a->dtype);
		switch (k % 8) {
		case 0: return CALL_P(f, ctx, ts_add(ctx, a, b));
		case 1: return CALL_P(f, ctx, ts_sub(ctx, a, b));
		case 2: return CALL_P(f, ctx, ts_mul(ctx, a, b));
		case 3: return CALL_P(f, ctx, ts_div(ctx, a, b));
		case 4: return CALL_P(f, ctx, fl ? ts_min(ctx, a, b) : ts_truncdiv(ctx, a, b));
		case 5: return CALL_P(f, ctx, fl ? ts_max(ctx, a, b) : ts_truncmod(ctx, a, b));
		case 6: return CALL_P(f, ctx, fl ? ts_add(ctx, a, b) : ts_floormod(ctx, a, b));
		default: return CALL_P(f, ctx, ts_max(ctx, a, b));
		}
	}
	if (k >= 240)
		return CALL_P(f, ctx, ts_binary(ctx, (ir_expr_kind)(k - 240 + IR_INT_IMM), a, b));
	if (k >= 224)
		return CALL_P(f, ctx, ts_binary(ctx, (ir_expr_kind)(k % 64 - 16), a, b));
	switch (k % 18) {
	case 0: return CALL_P(f, ctx, ts_add(ctx, a, b));
	case 1: return CALL_P(f, ctx, ts_sub(ctx, a, b));
	case 2: return CALL_P(f, ctx, ts_mul(ctx, a, b));
	case 3: return CALL_P(f, ctx, ts_div(ctx, a, b));
	case 4: return CALL_P(f, ctx, ts_truncdiv(ctx, a, b));
	case 5: return CALL_P(f, ctx, ts_truncmod(ctx, a, b));
	case 6: return CALL_P(f, ctx, ts_floordiv(ctx, a, b));
	case 7: return CALL_P(f, ctx, ts_floormod(ctx, a, b));
	case 8: return CALL_P(f, ctx, ts_min(ctx, a, b));
	case 9: return CALL_P(f, ctx, ts_max(ctx, a, b));
	case 10: return CALL_P(f, ctx, ts_eq(ctx, a, b));
	case 11: return CALL_P(f, ctx, ts_ne(ctx, a, b));
	case 12: return CALL_P(f, ctx, ts_lt(ctx, a, b));
	case 13: return CALL_P(f, ctx, ts_le(ctx, a, b));
	case 14: return CALL_P(f, ctx, ts_gt(ctx, a, b));
	case 15: return CALL_P(f, ctx, ts_ge(ctx, a, b));
	case 16: return CALL_P(f, ctx, ts_and(ctx, a, b));
	default: return CALL_P(f, ctx, ts_or(ctx, a, b));
	}
}

static ts_expr *gen_call(fz *f, scope *sc, int depth)
{
	ts_ctx *ctx = sc->ctx;
	ts_expr *a = gen_expr(f, sc, depth - 1);
	if (a && !ts_dtype_is_float(a->dtype) && !rare(f, 4))
		a = CALL_P(f, ctx, ts_cast(ctx, ts_float32, a));
	switch (pick(f, 12)) {
	case 0: return CALL_P(f, ctx, ts_exp(ctx, a));
	case 1: return CALL_P(f, ctx, ts_log(ctx, a));
	case 2: return CALL_P(f, ctx, ts_sqrt(ctx, a));
	case 3: return CALL_P(f, ctx, ts_tanh(ctx, a));
	case 4: return CALL_P(f, ctx, ts_exp2(ctx, a));
	case 5: return CALL_P(f, ctx, ts_fabs(ctx, a));
	case 6: return CALL_P(f, ctx, ts_pow(ctx, a, gen_expr(f, sc, depth - 1)));
	case 7: return CALL_P(f, ctx, ts_erf(ctx, a));
	case 8: return CALL_P(f, ctx, ts_sigmoid(ctx, a));
	case 9: return CALL_P(f, ctx, ts_round_tf32(ctx, a));
	case 10: return CALL_P(f, ctx, ts_not(ctx, a));
	default: {
		if (sc->nice)
			return CALL_P(f, ctx, ts_exp(ctx, a));
		ts_expr *args[API_BUF] = {a, gen_expr(f, sc, depth - 1)};
		int op = pick(f, IR_INTRIN_COUNT + 3) - 1;
		return CALL_P(f, ctx, ts_call(ctx, (ir_intrinsic)op, pick_count(f, 1 + pick(f, 2)), args));
	}
	}
}

static ts_expr *gen_reduce(fz *f, scope *sc, int depth)
{
	ts_ctx *ctx = sc->ctx;
	ts_iter *axes[API_BUF] = {NULL};
	int n = sc->nred > 0 ? sc->nred : 1;
	for (int i = 0; i < n; i++)
		axes[i] = sc->nred > 0 && !rare(f, 8) ? sc->red[i] : any_iter(f);
	n = pick_count(f, n);
	ts_expr *src = gen_expr(f, sc, depth - 1);
	switch (pick(f, 4)) {
	case 0: return CALL_P(f, ctx, ts_sum(ctx, src, n, axes));
	case 1: return CALL_P(f, ctx, ts_reduce_max(ctx, src, n, axes));
	case 2: return CALL_P(f, ctx, ts_reduce_min(ctx, src, n, axes));
	default:
		return CALL_P(f, ctx, ts_reduce(ctx, (ts_reduce_op)(pick(f, 6) - 1), src, n, axes,
						 rare(f, 2) ? gen_expr(f, sc, 0) : NULL));
	}
}

static ts_expr *gen_expr(fz *f, scope *sc, int depth)
{
	ts_ctx *ctx = sc->ctx;
	ts_expr *e;
	int c = depth <= 0 ? pick(f, 4) : pick(f, 16);
	if (sc->nice && (c == 4 || c == 12 || c == 13 || c == 14))
		c = 5;
	switch (c) {
	case 0:
		if (sc->nv + sc->nred == 0)
			return gen_const(f, ctx, sc->nice);
		{
			int k = pick(f, sc->nv + sc->nred);
			return k < sc->nv ? sc->vars[k] : sc->red[k - sc->nv]->var;
		}
	case 1:
		return gen_const(f, ctx, sc->nice);
	case 2:
	case 3:
		return gen_read(f, sc);
	case 4:
		return any_expr(f);
	case 5:
	case 6:
	case 7:
	case 8:
		return add_expr(f, gen_binary(f, sc, depth));
	case 9:
		return add_expr(f, CALL_P(f, ctx, ts_cast(ctx, sc->nice ? (rare(f, 2) ? ts_int32 : ts_float32) : pick_dtype(f),
							   gen_expr(f, sc, depth - 1))));
	case 10:
		return add_expr(f, gen_call(f, sc, depth));
	case 11: {
		ts_expr *c = gen_expr(f, sc, depth - 1), *a = gen_expr(f, sc, depth - 1);
		ts_expr *b = gen_expr(f, sc, depth - 1);
		if (a && b && !ts_dtype_eq(a->dtype, b->dtype) && !rare(f, 4))
			b = CALL_P(f, ctx, ts_cast(ctx, a->dtype, b));
		if (c && !ts_dtype_is_bool(c->dtype) && !rare(f, 4))
			c = CALL_P(f, ctx, ts_lt(ctx, c, ts_make_const(ctx, c->dtype, 1)));
		return add_expr(f, CALL_P(f, ctx, ts_select(ctx, c, a, b)));
	}
	case 12:
		e = gen_expr(f, sc, depth - 1);
		if (rare(f, 2))
			return add_expr(f, CALL_P(f, ctx, ts_ramp(ctx, e, pick_extent_less(f, 4), pick_int(f))));
		return add_expr(f, CALL_P(f, ctx, ts_broadcast(ctx, e, pick_int(f))));
	case 13:
	case 14:
		return add_expr(f, gen_reduce(f, sc, depth));
	default:
		return gen_read(f, sc);
	}
}

/* ---- tensors ------------------------------------------------------------------------ */

static void fill_shape(int64_t *shape, int64_t v)
{
	for (int d = 0; d < API_BUF; d++)
		shape[d] = v;
}

static ts_tensor *add_tensor(fz *f, ts_tensor *t)
{
	POOL_ADD(f, f->tensor, f->ntensor, NTENSOR, t);
	return t;
}

static void step_placeholder(fz *f)
{
	ts_ctx *ctx = pick_ctx(f);
	int64_t shape[API_BUF];
	bool nice = !rare(f, 4);
	int ndim = nice ? 1 + pick(f, 4) : pick_int(f);
	fill_shape(shape, 1);
	for (int d = 0; d < ndim && d < TS_MAX_DIMS; d++)
		shape[d] = nice ? 1 + pick(f, 6) : pick_extent(f);
	if (rare(f, 5) && ndim >= 1 && ndim <= TS_MAX_DIMS) /* an NCHW image */
		shape[0] = 1;
	ts_dtype t = nice && !rare(f, 3) ? ts_float32 : pick_dtype(f);
	const char *name = nice ? "A" : pick_name(f);
	add_tensor(f, CALL_P(f, ctx, ts_placeholder(ctx, name, ndim, rare(f, 32) ? NULL : shape, t)));
}

static void step_size_var(fz *f)
{
	ts_ctx *ctx = pick_ctx(f);
	int i = pick(f, 2);
	int64_t max = rare(f, 3) ? pick_extent(f) : 1 + pick(f, 8);
	begin(f, "ts_size_var(ctx, name, max)");
	int64_t h = ts_size_var(ctx, pick_name(f), max);
	if (h)
		f->size_var[i] = h;
	else
		failed(f, ctx);
	ts_expr *e = CALL_P(f, ctx, ts_size_expr(ctx, h ? h : pick_extent(f)));
	add_expr(f, e);
}

static void step_reduce_axis(fz *f)
{
	ts_ctx *ctx = pick_ctx(f);
	int64_t min = rare(f, 4) ? pick_extent(f) : 0;
	ts_iter *it = CALL_P(f, ctx, ts_reduce_axis(ctx, pick_name(f), min, pick_extent(f)));
	POOL_ADD(f, f->iter, f->niter, NITER, it);
}

typedef struct lambda_user {
	fz *f;
	scope *sc;
} lambda_user;

static ts_expr *lambda_body(ts_ctx *ctx, ts_expr *const *axes, void *user)
{
	lambda_user *u = user;
	u->sc->ctx = ctx;
	for (int d = 0; d < u->sc->nv; d++)
		u->sc->vars[d] = axes[d];
	return gen_expr(u->f, u->sc, 2);
}

/* A compute of ctx over the shape of a tensor of the pool (or a random
 * one): an elementwise function of reads, or a reduction over fresh
 * axes. */
static ts_tensor *compute_in(fz *f, ts_ctx *ctx)
{
	scope sc = {.ctx = ctx, .nice = !rare(f, 4)};
	ts_tensor *like = tensor_of(f, ctx);
	int64_t shape[API_BUF];
	ts_expr *vars[API_BUF] = {NULL};
	int ndim = like && !rare(f, 6) ? like->ndim : pick_int(f);
	fill_shape(shape, 1);
	for (int d = 0; d < ndim && d < TS_MAX_DIMS; d++)
		shape[d] = like && d < like->ndim && !rare(f, 8) ? ts_tensor_dim(like, d) : pick_extent(f);
	sc.nv = ndim > 0 && ndim <= TS_MAX_DIMS ? ndim : 0;
	sc.shape = shape;
	static const char *vn[] = {"i", "j", "k", "l", "m", "n", "o", "p"};
	for (int d = 0; d < sc.nv; d++)
		sc.vars[d] = vars[d] = CALL_P(f, ctx, ts_var(ctx, vn[d]));
	if (sc.nv > 0 && rare(f, 8)) { /* an index variable that is not a fresh int32 one */
		int d = pick(f, sc.nv);
		switch (pick(f, 5)) {
		case 0: vars[d] = vars[pick(f, sc.nv)]; break;
		case 1: vars[d] = any_expr(f); break;
		case 2: vars[d] = CALL_P(f, ctx, ts_var_typed(ctx, "w", rare(f, 2) ? ts_int64 : pick_dtype(f))); break;
		case 3: vars[d] = f->niter ? f->iter[pick(f, f->niter)]->var : NULL; break;
		default: vars[d] = CALL_P(f, ctx, ts_add(ctx, vars[d], ts_int(ctx, 1))); break;
		}
		sc.vars[d] = vars[d];
	}
	int mode = pick(f, 8);
	if (mode >= 5) { /* a reduction */
		sc.nred = 1 + pick(f, 2);
		for (int r = 0; r < sc.nred; r++) {
			sc.red[r] = rare(f, 4) ? any_iter(f)
					       : CALL_P(f, ctx, ts_reduce_axis(ctx, "r", 0, rare(f, 4) ? pick_extent(f) : 1 + pick(f, 5)));
			if (!sc.red[r])
				sc.nred = r;
		}
	}
	const char *name = rare(f, 8) ? pick_name(f) : "C";
	ts_tensor *t;
	if (mode == 4) {
		lambda_user u = {f, &sc};
		t = CALL_P(f, ctx, ts_compute_lambda(ctx, name, ndim, shape, lambda_body, &u));
	} else {
		ts_expr *body = gen_expr(f, &sc, 1 + pick(f, 3));
		if (mode >= 5 && sc.nred > 0) {
			ts_iter *axes[API_BUF] = {sc.red[0], sc.red[1]};
			body = pick(f, 3) ? CALL_P(f, ctx, ts_sum(ctx, body, sc.nred, axes))
					  : CALL_P(f, ctx, ts_reduce_max(ctx, body, sc.nred, axes));
		}
		if (mode == 3)
			t = CALL_P(f, ctx, ts_compute_n(ctx, name, ndim, shape, pick_count(f, ndim), vars, body));
		else
			t = CALL_P(f, ctx, ts_compute(ctx, name, ndim, shape, vars, body));
	}
	return add_tensor(f, t);
}

static void step_compute(fz *f)
{
	compute_in(f, pick_ctx(f));
}

static int64_t pads[API_BUF];

static void step_op(fz *f)
{
	ts_ctx *ctx = pick_ctx(f);
	ts_tensor *a = tensor_of(f, ctx), *b = tensor_of(f, ctx), *t = NULL;
	int p[8];
	for (int i = 0; i < 8; i++)
		p[i] = rare(f, 3) ? pick_int(f) : 1;
	/* one off the ends of int, so that p[i] - 1 and p[i] + 1 are defined */
	for (int i = 0; i < 8; i++)
		p[i] = p[i] == INT_MIN ? INT_MIN + 1 : p[i] == INT_MAX ? INT_MAX - 1 : p[i];
	switch (pick(f, 26)) {
	case 0: t = CALL_P(f, ctx, ts_op_matmul(ctx, a, b, rare(f, 3), rare(f, 3))); break;
	case 1: t = CALL_P(f, ctx, ts_op_matmul_acc(ctx, a, b, rare(f, 3), rare(f, 3), pick_dtype(f))); break;
	case 2: t = CALL_P(f, ctx, ts_op_matmul_tf32(ctx, a, b, rare(f, 3), rare(f, 3))); break;
	case 3: t = CALL_P(f, ctx, ts_op_batch_matmul(ctx, a, b, rare(f, 3), rare(f, 3))); break;
	case 4: t = CALL_P(f, ctx, ts_op_dense(ctx, a, b, rare(f, 2) ? NULL : tensor_of(f, ctx))); break;
	case 5: t = CALL_P(f, ctx, ts_op_relu(ctx, a)); break;
	case 6: t = CALL_P(f, ctx, ts_op_add(ctx, a, b)); break;
	case 7: t = CALL_P(f, ctx, ts_op_bias_add(ctx, a, b, pick_int_less(f, 2))); break;
	case 8: t = CALL_P(f, ctx, ts_op_gelu(ctx, a, rare(f, 2))); break;
	case 9: t = CALL_P(f, ctx, ts_op_clip(ctx, a, pick(f, 5) - 2.5, pick(f, 5) - 1.5)); break;
	case 10:
		fill_shape(pads, 0);
		for (int i = 0; i < TS_MAX_DIMS; i++) {
			pads[i] = rare(f, 6) ? pick_extent(f) : pick(f, 3);
			pads[64 + i] = rare(f, 6) ? pick_extent(f) : pick(f, 3);
		}
		t = CALL_P(f, ctx, ts_op_pad(ctx, a, pads, rare(f, 8) ? NULL : pads + 64,
					      rare(f, 4) ? 1e10 : 0.5));
		break;
	case 11:
		t = CALL_P(f, ctx, ts_op_conv2d_nchw(ctx, a, b, p[0], p[1], p[2] - 1, p[3] - 1, p[4], p[5], p[6]));
		break;
	case 12:
		t = CALL_P(f, ctx, ts_op_conv2d_nhwc(ctx, a, b, p[0], p[1], p[2] - 1, p[3] - 1, p[4], p[5], p[6]));
		break;
	case 13:
		t = CALL_P(f, ctx, ts_op_depthwise_conv2d_nchw(ctx, a, b, p[0], p[1], p[2] - 1, p[3] - 1, p[4], p[5]));
		break;
	case 14: t = CALL_P(f, ctx, ts_op_layout_nchw_to_nchwc(ctx, a, p[0] + pick(f, 2))); break;
	case 15: t = CALL_P(f, ctx, ts_op_layout_nchwc_to_nchw(ctx, a)); break;
	case 16: t = CALL_P(f, ctx, ts_op_weight_oihw_to_blocked(ctx, a, p[0], p[1])); break;
	case 17:
		t = CALL_P(f, ctx, ts_op_conv2d_nchwc(ctx, a, b, p[0], p[1], p[2] - 1, p[3] - 1, p[4], p[5]));
		break;
	case 18:
		t = CALL_P(f, ctx, ts_op_depthwise_conv2d_nchwc(ctx, a, b, p[0], p[1], p[2] - 1, p[3] - 1, p[4], p[5]));
		break;
	case 19:
		t = CALL_P(f, ctx, ts_op_max_pool2d(ctx, a, p[0] + 1, p[1], p[2], p[3], p[4] - 1, p[5] - 1));
		break;
	case 20:
		t = CALL_P(f, ctx, ts_op_avg_pool2d(ctx, a, p[0] + 1, p[1], p[2], p[3], p[4] - 1, p[5] - 1, rare(f, 2)));
		break;
	case 21: t = CALL_P(f, ctx, ts_op_softmax(ctx, a)); break;
	case 22:
		t = CALL_P(f, ctx, ts_op_layer_norm(ctx, a, b, rare(f, 2) ? NULL : tensor_of(f, ctx),
						     rare(f, 4) ? 0.0 : 1e-5));
		break;
	case 23: {
		static const char *stages[] = {"softmax_max", "softmax_sum", "pad", "matmul", "nope",
					       NULL, "layer_norm_mean", "dense"};
		t = CALL_P(f, ctx_of_tensor(a), ts_op_stage(a, stages[pick(f, 8)]));
		break;
	}
	case 24: t = CALL_P(f, ctx, ts_op_matmul_packed(ctx, a, b, pick_extent(f))); break;
	default: t = CALL_P(f, ctx, ts_rename(ctx, a, pick_name(f))); break;
	}
	add_tensor(f, t);
}

/* ---- schedules ------------------------------------------------------------------------ */

static void add_stage(fz *f, ts_stage *st)
{
	POOL_ADD(f, f->stage, f->nstage, NSTAGE, st);
	if (!st)
		return;
	for (int i = 0; i < st->nleaf; i++)
		POOL_ADD(f, f->axis, f->naxis, NAXIS, st->leaf[i]);
}

static void step_schedule(fz *f)
{
	ts_ctx *ctx = pick_ctx(f);
	ts_tensor *outs[API_BUF] = {NULL};
	int n = 1 + (rare(f, 3) ? pick(f, 3) : 0);
	for (int i = 0; i < n; i++)
		outs[i] = rare(f, 6) ? any_tensor(f) : compute_of(f, ctx);
	ts_schedule *s = CALL_P(f, ctx, ts_create_schedule(ctx, pick_count(f, n), outs));
	POOL_ADD(f, f->sch, f->nsch, NSCH, s);
	if (!s)
		return;
	for (int i = 0; i < s->nstages && i < 4; i++)
		add_stage(f, s->stages[s->nstages - 1 - i]);
}

static void step_stage_of(fz *f)
{
	ts_schedule *s = any_sch(f);
	ts_stage *st = any_stage(f);
	switch (pick(f, 3)) {
	case 0:
		add_stage(f, CALL_P(f, ctx_of_sch(s), ts_stage_of(s, any_tensor(f))));
		break;
	case 1:
		POOL_ADD(f, f->axis, f->naxis, NAXIS,
			 (ts_axis *)CALL_P(f, ctx_of_stage(st), ts_axis_of(st, pick_int(f))));
		break;
	default:
		POOL_ADD(f, f->axis, f->naxis, NAXIS,
			 (ts_axis *)CALL_P(f, ctx_of_stage(st), ts_reduce_axis_of(st, pick_int(f))));
		break;
	}
}

static int64_t pick_factor(fz *f)
{
	return rare(f, 5) ? pick_extent(f) : 1 << pick(f, 4);
}

/* A primitive on a stage: the schedule must not change when it fails. */
static void primitive_on(fz *f, ts_stage *st, ts_stage *other)
{
	ts_schedule *s = st ? st->sch : any_sch(f);
	/* a stage's primitives record in its context; the schedule's in s's */
	ts_ctx *ctx = ctx_of_stage(st), *sctx = ctx_of_sch(s);
	const char *before = s ? ts_schedule_str(s) : NULL;
	ts_axis *a = stage_axis(f, st), *b = stage_axis(f, st), *o1 = NULL, *o2 = NULL, *o3 = NULL,
		*o4 = NULL;
	ts_status r = TS_OK;
	void *made = NULL;
	bool is_ptr = false;
	switch (pick(f, 30)) {
	case 0:
	case 1: r = CALL_S(f, ctx, ts_split(st, a, pick_factor(f), &o1, &o2)); break;
	case 2: r = CALL_S(f, ctx, ts_split_nparts(st, a, pick_factor(f), &o1, &o2)); break;
	case 3: r = CALL_S(f, ctx, ts_split_tail(st, a, pick_factor(f), (ts_tail)(pick(f, 4) - 1), &o1, &o2)); break;
	case 4: r = CALL_S(f, ctx, ts_set_tail(st, a, (ts_tail)(pick(f, 4) - 1))); break;
	case 5:
		r = CALL_S(f, ctx, ts_tile(st, a, b, pick_factor(f), pick_factor(f), &o1, &o2, &o3, &o4));
		break;
	case 6: r = CALL_S(f, ctx, ts_fuse(st, a, b, &o1)); break;
	case 7: {
		ts_axis *order[API_BUF] = {NULL};
		int n = st && !rare(f, 4) ? st->nleaf : pick_int(f);
		for (int i = 0; i < n && i < API_BUF; i++)
			order[i] = st && i < st->nleaf && !rare(f, 6) ? st->leaf[st->nleaf - 1 - i] : stage_axis(f, st);
		r = CALL_S(f, ctx, ts_reorder(st, n < API_BUF ? n : API_BUF, order));
		break;
	}
	case 8: r = CALL_S(f, ctx, ts_vectorize(st, a)); break;
	case 9: r = CALL_S(f, ctx, ts_parallel(st, a)); break;
	case 10: r = CALL_S(f, ctx, ts_unroll(st, a)); break;
	case 11: r = CALL_S(f, ctx, ts_bind(st, a, (ts_thread_tag)(pick(f, 9) - 1))); break;
	case 12:
	case 13: r = CALL_S(f, ctx, ts_compute_at(st, other, stage_axis(f, other))); break;
	case 14: r = CALL_S(f, ctx, ts_compute_inline(st)); break;
	case 15: r = CALL_S(f, ctx, ts_compute_root(st)); break;
	case 16: r = CALL_S(f, ctx, ts_store_at(st, other, stage_axis(f, other))); break;
	case 17: r = CALL_S(f, ctx, ts_store_root(st)); break;
	case 18: r = CALL_S(f, ctx, ts_prefetch(st, any_tensor(f), a, pick_extent_less(f, 3))); break;
	case 19: r = CALL_S(f, ctx, ts_prefetch_ahead(st, any_tensor(f), a, b, pick_extent_less(f, 3))); break;
	case 20: r = CALL_S(f, ctx, ts_storage_align(st, pick_int_less(f, 1), pick_factor(f), pick_extent_less(f, 2))); break;
	case 21: r = CALL_S(f, ctx, ts_double_buffer(st)); break;
	case 22: r = CALL_S(f, ctx, ts_tensorize(st, a, (ts_intrin)pick(f, 3))); break;
	case 23: r = CALL_S(f, ctx, ts_set_scope(st, (ts_scope)(pick(f, 5) - 1))); break;
	case 24:
	case 25: {
		ts_tensor *readers[API_BUF] = {NULL};
		int n = 1 + pick(f, 2);
		for (int i = 0; i < n; i++)
			readers[i] = other && !rare(f, 4) ? other->tensor : any_tensor(f);
		is_ptr = true;
		made = CALL_P(f, sctx, ts_cache_read(s, any_tensor(f), (ts_scope)(pick(f, 5) - 1),
						     pick_count(f, n), readers));
		break;
	}
	case 26:
		is_ptr = true;
		made = CALL_P(f, sctx, ts_cache_write(s, st ? st->tensor : any_tensor(f), (ts_scope)(pick(f, 5) - 1)));
		break;
	case 27:
	case 28:
		is_ptr = true;
		made = CALL_P(f, sctx, ts_rfactor(s, st ? st->tensor : any_tensor(f), a, pick_int(f)));
		break;
	default: r = CALL_S(f, ctx, ts_compute_root(st)); break;
	}
	bool fail = is_ptr ? made == NULL : r != TS_OK;
	if (fail && before) {
		const char *after = ts_schedule_str(s);
		if (after && strcmp(before, after) != 0)
			die(f, "%s failed ('%s') but changed the schedule:\n--- before\n%s\n--- after\n%s",
			    f->trace[(f->ntrace - 1) % NTRACE], ts_last_error(sctx), before, after);
	}
	ts_axis *made_axes[] = {o1, o2, o3, o4};
	for (int i = 0; i < 4; i++)
		POOL_ADD(f, f->axis, f->naxis, NAXIS, made_axes[i]);
	if (made && s)
		add_stage(f, CALL_P(f, sctx, ts_stage_of(s, made)));
}

static void step_primitive(fz *f)
{
	ts_stage *st = any_stage(f), *other = any_stage(f);
	ts_schedule *last = f->nsch ? f->sch[f->nsch - 1] : NULL;
	if (last && last->nstages > 0 && !rare(f, 3)) { /* mostly the latest schedule's */
		st = last->stages[pick(f, last->nstages)];
		other = rare(f, 4) ? other : last->stages[pick(f, last->nstages)];
	}
	primitive_on(f, st, other);
}

static void step_op_schedule(fz *f)
{
	ts_schedule *s = any_sch(f);
	ts_ctx *ctx = ctx_of_sch(s);
	ts_tensor *t = s && s->nout > 0 && !rare(f, 4) ? s->outputs[0] : any_tensor(f);
	bool dflt = !rare(f, 3);
	ts_matmul_cpu_params mp = ts_matmul_cpu_default();
	ts_conv2d_cpu_params cp = ts_conv2d_cpu_default();
	ts_depthwise_cpu_params dp = ts_depthwise_cpu_default();
	ts_matmul_cuda_params gp = ts_matmul_cuda_default();
	if (!dflt) {
		mp.mr = pick_factor(f), mp.nr = pick_factor(f), mp.kunroll = pick_factor(f), mp.kc = pick_extent_less(f, 1);
		mp.pack = (ts_pack_mode)(pick(f, 4) - 1);
		cp.ow_block = pick_extent_less(f, 1), cp.oh_block = pick_extent_less(f, 1), cp.rc_block = pick_extent_less(f, 1);
		cp.pad = (ts_pad_mode)(pick(f, 4) - 1);
		dp.ow_block = pick_extent_less(f, 1), dp.oh_block = pick_extent_less(f, 1);
		gp.block_m = pick_factor(f), gp.block_n = pick_factor(f), gp.thread_m = pick_factor(f);
		gp.thread_n = pick_factor(f), gp.tile_k = pick_factor(f);
	}
	bool np = rare(f, 3);
	switch (pick(f, 11)) {
	case 0: CALL_S(f, ctx, ts_schedule_default_cpu(s, pick_int_times(f, 4))); break;
	case 1: CALL_S(f, ctx, ts_schedule_softmax_cpu(s, t, pick_int_times(f, 4))); break;
	case 2: CALL_S(f, ctx, ts_schedule_layer_norm_cpu(s, t, pick_int_times(f, 4))); break;
	case 3: CALL_S(f, ctx, ts_schedule_matmul_cpu(s, t, np ? NULL : &mp)); break;
	case 4: CALL_S(f, ctx, ts_schedule_dense_cpu(s, t, np ? NULL : &mp)); break;
	case 5: CALL_S(f, ctx, ts_schedule_batch_matmul_cpu(s, t, np ? NULL : &mp)); break;
	case 6: CALL_S(f, ctx, ts_schedule_conv2d_nchwc_cpu(s, t, np ? NULL : &cp)); break;
	case 7: CALL_S(f, ctx, ts_schedule_depthwise_cpu(s, t, np ? NULL : &dp)); break;
	case 8: CALL_S(f, ctx, ts_schedule_depthwise_nchwc_cpu(s, t, np ? NULL : &dp)); break;
	case 9: CALL_S(f, ctx, ts_schedule_matmul_cuda(s, t, np ? NULL : &gp)); break;
	default: CALL_S(f, ctx, ts_schedule_default_cuda(s, pick_int_times(f, 32))); break;
	}
}

/* ---- printers ------------------------------------------------------------------------- */

static void step_print(fz *f)
{
	ts_schedule *s = any_sch(f);
	ts_tensor *t = any_tensor(f);
	ts_ctx *ctx = pick_ctx(f);
	switch (pick(f, 10)) {
	case 0: CALL_P(f, ctx_of_sch(s), ts_schedule_str(s)); break;
	case 1: CALL_P(f, ctx_of_sch(s), ts_schedule_step_str(s)); break;
	case 2: CALL_P(f, ctx_of_sch(s), ts_schedule_bounds_str(s)); break;
	case 3: CALL_P(f, ctx_of_sch(s), ts_schedule_picture(s, t)); break;
	case 4: CALL_P(f, ctx_of_sch(s), ts_schedule_svg(s, t)); break;
	case 5: CALL_P(f, ctx, ir_expr_str(ctx, any_expr(f))); break;
	case 6: CALL_P(f, ctx, ir_func_str(ctx, any_func(f))); break;
	case 7: {
		ts_tensor *outs[API_BUF] = {t, any_tensor(f)};
		CALL_P(f, ctx, ts_graph_str(ctx, pick_count(f, 1 + pick(f, 2)), outs));
		break;
	}
	case 8: {
		ts_func *fn = any_func(f);
		begin(f, "ts_lower_warnings(fn)");
		if (fn && !ts_lower_warnings(fn))
			die(f, "ts_lower_warnings gave NULL for a function");
		break;
	}
	default: {
		ts_module *m = f->nmod ? f->mod[pick(f, f->nmod)] : NULL;
		static const char *kinds[] = {"llvm", "llvm-opt", "asm", "c", "cuda", "", NULL, "x"};
		ts_ctx *mctx = m ? ts_module_func(m)->ctx : NULL;
		CALL_P(f, mctx, ts_module_source(m, kinds[pick(f, 8)]));
		begin(f, "ts_module_target(m)");
		(void)ts_module_target(m);
		break;
	}
	}
}

/* ---- lowering, building, running ------------------------------------------------------- */

/* The placeholders the outputs of s read, then the outputs: what
 * ts_lower expects.  Returns the count (at most max). */
static int proper_args(const ts_schedule *s, ts_tensor **args, int max)
{
	ts_tensor *order[256];
	int n = ts_graph_topo(s->nout, s->outputs, order, 256);
	int k = 0;
	for (int i = 0; i < n && k < max; i++)
		if (order[i]->op == TS_OP_PLACEHOLDER)
			args[k++] = order[i];
	for (int i = 0; i < s->nout && k < max; i++)
		args[k++] = s->outputs[i];
	return k;
}

static void check_gpu(fz *f, ts_func *fn);

static void step_lower(fz *f)
{
	ts_schedule *s = f->nsch && !rare(f, 3) ? f->sch[f->nsch - 1] : any_sch(f);
	ts_tensor *args[API_BUF] = {NULL};
	int n = s ? proper_args(s, args, 32) : 0;
	if (rare(f, 3)) { /* spoil the list */
		switch (pick(f, 4)) {
		case 0: if (n > 0) n--; break;
		case 1: args[n++] = any_tensor(f); break;
		case 2: if (n > 1) args[0] = args[n - 1]; break;
		default: n = pick_count(f, n); break;
		}
	}
	ts_ctx *ctx = ctx_of_sch(s);
	ts_func *fn;
	switch (pick(f, 6)) {
	case 0: {
		static const char *passes[] = {"schedule_ops", "flatten", "simplify", "unroll", "nope", NULL};
		/* the IR after a pass is for printing: any later call may
		 * refuse it, none may crash on it */
		fn = CALL_P(f, ctx, ts_lower_until(s, "f", n, args, passes[pick(f, 6)]));
		if (fn) {
			CALL_P(f, ctx, ir_func_str(ctx, fn));
			if (f->builds < API_MAX_BUILDS && rare(f, 4)) {
				f->builds++;
				ts_module_free(CALL_P(f, ctx, ts_build(ctx, fn, "llvm")));
			}
		}
		return;
	}
	case 1: {
		int64_t sizes[API_BUF] = {f->size_var[0], f->size_var[1], pick_extent(f)};
		int64_t values[API_BUF] = {pick_extent(f), pick_extent(f), pick_extent(f)};
		fn = CALL_P(f, ctx, ts_lower_specialize(s, "f", n, args, pick_count(f, 1 + pick(f, 2)), sizes, values));
		break;
	}
	default:
		fn = CALL_P(f, ctx, ts_lower(s, rare(f, 8) ? pick_name(f) : "f", n, args));
		break;
	}
	f->counts.lowered += fn != NULL;
	POOL_ADD(f, f->func, f->nfunc, NFUNC, fn);
	/* random schedules bound to threads, on the device now and then */
	if (fn && f->gpu && rare(f, 2))
		check_gpu(f, fn);
}

/* Work to evaluate fn's graph (elements times reduction extents), capped. */
static int64_t graph_work(const ts_func *fn)
{
	ts_tensor *order[256];
	int n = ts_graph_topo(fn->nparams, fn->param_tensors, order, 256);
	if (n < 0 || n > 256)
		return INT64_MAX;
	int64_t work = 0;
	for (int i = 0; i < n; i++) {
		int64_t w = 1;
		for (int d = 0; d < order[i]->ndim; d++)
			w = w > API_MAX_WORK || order[i]->shape[d] > API_MAX_WORK ? API_MAX_WORK + 1 : w * order[i]->shape[d];
		for (int r = 0; r < order[i]->nreduce; r++)
			w = w > API_MAX_WORK || order[i]->reduce_axis[r]->extent > API_MAX_WORK
				    ? API_MAX_WORK + 1
				    : w * order[i]->reduce_axis[r]->extent;
		work += w;
		if (work > API_MAX_WORK)
			return work;
	}
	return work;
}

/* Small values exact in every dtype, so that sums and products agree
 * whatever the order and contraction. */
static void fill_input(ts_array *a, uint64_t seed)
{
	uint64_t x = seed * 6364136223846793005ULL + 1442695040888963407ULL;
	for (int64_t i = 0; i < ts_array_numel(a); i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		int v = (int)((x >> 33) % 17) - 8;
		if (ts_dtype_is_float(a->dtype))
			ts_elem_set_f64(a->data, a->dtype, i, v / 4.0);
		else if (a->dtype.code == TS_TYPE_UINT || ts_dtype_is_bool(a->dtype))
			ts_elem_set_i64(a->data, a->dtype, i, ts_dtype_is_bool(a->dtype) ? (v & 1) : v + 8);
		else
			ts_elem_set_i64(a->data, a->dtype, i, v);
	}
}

/* half: the function computes in a 16-bit float somewhere, where its
 * reductions accumulate in that dtype and the reference evaluator in
 * double (ir.h), so even a float32 result differs by 16-bit roundings. */
static bool close_enough(ts_dtype t, bool half, double got, double want)
{
	if (isnan(got) || isnan(want))
		return isnan(got) && isnan(want);
	if (got == want)
		return true;
	if (!ts_dtype_is_float(t))
		return false;
	double rtol = t.bits == 16 || half ? 2e-2 : 1e-3;
	return fabs(got - want) <= rtol * (1 + fmax(fabs(got), fabs(want)));
}

static bool half_fn(ts_expr *e, void *data)
{
	bool *half = data;
	*half |= ts_dtype_is_float(e->dtype) && e->dtype.bits == 16;
	return !*half;
}

/* Whether fn computes in a 16-bit float anywhere (a load, a cast, an
 * operation). */
static bool computes_in_half(const ts_func *fn)
{
	bool half = false;
	ir_stmt_visit(fn->body, NULL, half_fn, &half);
	return half;
}

typedef struct run_set {
	int n;
	ts_array *want[API_BUF], *got[API_BUF];
	void *want_data[API_BUF], *got_data[API_BUF];
} run_set;

static void free_set(run_set *rs)
{
	for (int i = 0; i < rs->n; i++) {
		ts_array_free(rs->want[i]);
		ts_array_free(rs->got[i]);
	}
}

/* Arrays for fn's parameters, inputs random, outputs garbage, and the
 * reference evaluator's results in want; false when the evaluator
 * refuses (or the function is not one it can check). */
static bool make_set(fz *f, const ts_func *fn, run_set *rs)
{
	ts_ctx *ctx = fn->ctx;
	rs->n = 0;
	if (fn->nsizes > 0 || fn->nparams > API_BUF || graph_work(fn) > API_MAX_WORK)
		return false;
	for (int i = 0; i < fn->nparams; i++) {
		ts_tensor *t = fn->param_tensors[i];
		rs->want[i] = CALL_P(f, ctx, ts_array_for(ctx, t));
		rs->got[i] = CALL_P(f, ctx, ts_array_for(ctx, t));
		rs->n = i + 1;
		if (!rs->want[i] || !rs->got[i])
			return false;
		if (t->op == TS_OP_PLACEHOLDER)
			fill_input(rs->want[i], 99 + (uint64_t)i);
		else
			for (int64_t e = 0; e < ts_array_numel(rs->want[i]); e++)
				ts_elem_set_f64(rs->want[i]->data, t->dtype, e, 77.0);
		memcpy(rs->got[i]->data, rs->want[i]->data, ts_array_nbytes(rs->want[i]));
		rs->want_data[i] = rs->want[i]->data;
		rs->got_data[i] = rs->got[i]->data;
	}
	return CALL_S(f, ctx, ts_eval(ctx, fn->nparams, fn->param_tensors, rs->want_data)) == TS_OK;
}

/* source: printed with a wrong element after the function (NULL: none). */
static void compare_set(fz *f, const ts_func *fn, const run_set *rs, const char *path,
			const char *source)
{
	f->counts.compared++;
	bool half = computes_in_half(fn);
	for (int i = 0; i < rs->n; i++) {
		const ts_tensor *t = fn->param_tensors[i];
		for (int64_t e = 0; e < ts_array_numel(rs->want[i]); e++) {
			double w = ts_elem_get_f64(rs->want[i]->data, t->dtype, e);
			double g = ts_elem_get_f64(rs->got[i]->data, t->dtype, e);
			if (!close_enough(t->dtype, half, g, w))
				die(f, "%s: %s element %lld is %.9g, the reference evaluator says %.9g\n%s%s",
				    path, t->name, (long long)e, g, w, ir_func_str(fn->ctx, fn),
				    source ? source : "");
		}
	}
}

/* The interpreter, and the module when there is one, against ts_eval. */
static void check_func(fz *f, const ts_func *fn, ts_module *m)
{
	run_set rs;
	if (make_set(f, fn, &rs)) {
		if (m) {
			if (CALL_S(f, fn->ctx, ts_module_run(m, rs.n, rs.got)) != TS_OK)
				die(f, "the module refused arrays made for its function: %s", ts_last_error(fn->ctx));
			compare_set(f, fn, &rs, "module", NULL);
		} else {
			if (CALL_S(f, fn->ctx, cg_interp_run(fn->ctx, fn, rs.got_data)) != TS_OK)
				die(f, "the interpreter failed on a function ts_eval runs: %s",
				    ts_last_error(fn->ctx));
			compare_set(f, fn, &rs, "interpreter", NULL);
		}
	}
	free_set(&rs);
}

/* ---- the CUDA path ------------------------------------------------------------------ */

static struct {
	int state;     /* -1 not probed yet, 0 off, 1 on */
	char arch[16]; /* the device's, e.g. "90" for sm_90 */
} gpu_probe = {-1, ""};

bool api_fuzz_gpu(void)
{
	if (gpu_probe.state >= 0)
		return gpu_probe.state;
	const char *env = getenv("TESSERA_TEST_CUDA");
	gpu_probe.state = 0;
	if (!env || !env[0] || !strcmp(env, "0"))
		return false;
	ts_ctx *ctx = ts_ctx_new();
	ts_cuda *cuda = ts_cuda_open(ctx);
	int major = 0, minor = 0;
	if (cuda && cg_nvrtc_version(ctx, &major, &minor) == TS_OK) {
		ts_cuda_compute_capability(cuda, &major, &minor);
		snprintf(gpu_probe.arch, sizeof(gpu_probe.arch), "%d%d", major, minor);
		gpu_probe.state = 1;
	} else {
		fprintf(stderr, "api_fuzz: TESSERA_TEST_CUDA is set, but the CUDA path does not open "
			"(%s); functions bound to GPU threads are checked through the interpreter only\n",
			ts_last_error(ctx));
	}
	ts_cuda_close(cuda);
	ts_ctx_free(ctx);
	return gpu_probe.state;
}

static bool thread_loop_fn(ts_stmt *s, void *data)
{
	if (s->kind == IR_S_FOR && s->u.for_.kind == TS_FOR_THREAD)
		*(bool *)data = true;
	return true;
}

/* Whether fn has a loop bound to blocks or threads: a function to check
 * on the device. */
static bool bound_to_threads(const ts_func *fn)
{
	bool bound = false;
	if (fn && fn->body)
		ir_stmt_visit(fn->body, thread_loop_fn, NULL, &bound);
	return bound;
}

/* A "cuda" target: the device's own architecture, named or not, or its
 * PTX (which the driver compiles for the device when the module loads). */
static const char *gpu_target(fz *f, char *buf, size_t size)
{
	switch (pick(f, 4)) {
	case 0: snprintf(buf, size, "cuda -arch=sm_%s", gpu_probe.arch); break;
	case 1: snprintf(buf, size, "cuda -arch=compute_%s", gpu_probe.arch); break;
	default: snprintf(buf, size, "cuda"); break;
	}
	return buf;
}

/* m run with one of its device arrays dev[0..rs->n) swapped for a wrong
 * one: of another shape or dtype, a host array, another argument.  It
 * must refuse with a message, or run where the swap fits (an access
 * past a device array then stops the emulator under AddressSanitizer). */
static void run_wrong_arrays(fz *f, ts_module *m, ts_cuda *cuda, ts_array **dev, const run_set *rs)
{
	ts_ctx *ctx = ts_module_func(m)->ctx;
	ts_array *args[API_BUF], *made = NULL;
	int i = pick(f, rs->n);
	memcpy(args, dev, sizeof(args[0]) * (size_t)rs->n);
	int64_t shape[TS_MAX_DIMS];
	int ndim = dev[i]->ndim;
	memcpy(shape, dev[i]->shape, sizeof(shape[0]) * (size_t)ndim);
	switch (pick(f, 4)) {
	case 0: /* one extent off by one, or one dimension fewer */
		if (ndim > 0 && rare(f, 2)) {
			ndim--;
		} else if (ndim > 0) {
			int d = pick(f, ndim);
			shape[d] += rare(f, 2) && shape[d] > 1 ? -1 : 1;
		}
		made = CALL_P(f, ctx, ts_cuda_array_new(ctx, cuda, dev[i]->dtype, ndim, shape));
		args[i] = made;
		break;
	case 1:
		made = CALL_P(f, ctx, ts_cuda_array_new(ctx, cuda, pick_dtype(f), ndim, shape));
		args[i] = made;
		break;
	case 2: args[i] = rs->got[i]; break;
	default: args[i] = dev[pick(f, rs->n)]; break;
	}
	if (rare(f, 2))
		CALL_S(f, ctx, ts_module_run(m, rs->n, args));
	else if (CALL_S(f, ctx, ts_module_launch(m, rs->n, args)) == TS_OK)
		CALL_S(f, ctx, ts_cuda_synchronize(ctx, cuda));
	ts_cuda_array_free(made);
}

/* Runs m (fn built for "cuda") on device copies of rs's arrays and brings
 * the results back into rs->got; dies when any step fails. */
static void run_on_device(fz *f, const ts_func *fn, ts_module *m, run_set *rs)
{
	ts_ctx *ctx = fn->ctx;
	ts_array *dev[API_BUF] = {NULL};
	ts_cuda *cuda = CALL_P(f, ctx, ts_cuda_open(ctx));
	const char *step = "ts_cuda_open";
	bool ok = cuda != NULL;
	for (int i = 0; ok && i < rs->n; i++) {
		const ts_array *h = rs->got[i];
		step = "ts_cuda_array_new";
		dev[i] = CALL_P(f, ctx, ts_cuda_array_new(ctx, cuda, h->dtype, h->ndim, h->shape));
		step = "ts_cuda_copy_to_device";
		ok = dev[i] && CALL_S(f, ctx, ts_cuda_copy_to_device(ctx, dev[i], h)) == TS_OK;
	}
	if (ok) {
		step = "ts_module_run";
		ok = CALL_S(f, ctx, ts_module_run(m, rs->n, dev)) == TS_OK;
	}
	for (int i = 0; ok && i < rs->n; i++) {
		step = "ts_cuda_copy_to_host";
		ok = CALL_S(f, ctx, ts_cuda_copy_to_host(ctx, rs->got[i], dev[i])) == TS_OK;
	}
	if (!ok)
		die(f, "%s failed on the device for a function built for \"cuda\": %s\n%s%s", step,
		    ts_last_error(ctx), ir_func_str(ctx, fn), ts_module_source(m, "cuda"));
	compare_set(f, fn, rs, "cuda", ts_module_source(m, "cuda"));
	if (rs->n > 0 && rare(f, 3))
		run_wrong_arrays(f, m, cuda, dev, rs);
	for (int i = 0; i < rs->n; i++)
		ts_cuda_array_free(dev[i]);
	ts_cuda_close(cuda);
}

/* ts_build refusing a function for "cuda" with a message is a refusal;
 * anything else that fails is the library's fault. */
static bool gpu_refusal(ts_ctx *ctx)
{
	ts_status st = ts_last_status(ctx);
	return st == TS_ERR_INVALID || st == TS_ERR_UNSUPPORTED;
}

/* fn, when it is bound to GPU threads and the input has GPU builds left:
 * built for "cuda" and run on the device against the reference.  The
 * module joins the pool (for hostile runs with host arrays, printers). */
static void check_gpu(fz *f, ts_func *fn)
{
	if (!f->gpu || !fn || f->gpu_builds >= API_MAX_GPU_BUILDS || !bound_to_threads(fn))
		return;
	run_set rs;
	if (!make_set(f, fn, &rs)) {
		free_set(&rs);
		return;
	}
	char buf[48];
	const char *target = gpu_target(f, buf, sizeof(buf));
	f->gpu_builds++;
	f->counts.gpu_built++;
	ts_module *m = CALL_P(f, fn->ctx, ts_build(fn->ctx, fn, target));
	if (!m) {
		if (!gpu_refusal(fn->ctx))
			die(f, "ts_build(f, \"%s\") failed: %s\n%s", target, ts_last_error(fn->ctx),
			    ir_func_str(fn->ctx, fn));
		f->counts.gpu_refused++;
		free_set(&rs);
		return;
	}
	run_on_device(f, fn, m, &rs);
	f->counts.gpu_ran++;
	free_set(&rs);
	POOL_PUT(f, f->mod, f->nmod, NMOD, m, ts_module_free);
}

static void step_build(fz *f)
{
	ts_func *fn = f->nfunc && !rare(f, 3) ? f->func[f->nfunc - 1] : any_func(f);
	ts_ctx *ctx = fn && !rare(f, 8) ? fn->ctx : pick_ctx(f);
	if (fn && rare(f, 2)) {
		check_func(f, fn, NULL);
		return;
	}
	static const char *targets[] = {"llvm", "llvm", "llvm", "llvm", NULL, "", "c", "cuda -arch=sm_1",
					"llvm -mcpu=nope", "llvm -mattr=+avx2", "llvm -mattr=", "llvm x", "cuda"};
	const char *target = targets[pick(f, TS_COUNT_OF(targets))];
	/* "cuda" for a function of ctx goes the checked way (or nowhere: a
	 * module built there could not run on host arrays); with a wrong
	 * function or context it is refused before anything compiles */
	if (target && !strcmp(target, "cuda") && fn && fn->ctx == ctx) {
		check_gpu(f, fn);
		return;
	}
	if (fn && f->builds >= API_MAX_BUILDS)
		return;
	f->builds += fn != NULL;
	ts_module *m = CALL_P(f, ctx, ts_build(ctx, fn, target));
	if (!m)
		return;
	if (fn && fn->ctx == ctx)
		check_func(f, fn, m);
	POOL_PUT(f, f->mod, f->nmod, NMOD, m, ts_module_free);
}

/* ---- whole pipelines ------------------------------------------------------------------------ */

static ts_tensor *input(fz *f, ts_ctx *ctx, const char *name, int ndim, const int64_t *shape)
{
	ts_dtype t = rare(f, 8) ? (rare(f, 2) ? ts_float64 : ts_int32) : ts_float32;
	if (f->input_type.bits && !rare(f, 8))
		t = f->input_type;
	return add_tensor(f, CALL_P(f, ctx, ts_placeholder(ctx, name, ndim, shape, t)));
}

/* An operator of the library on inputs shaped for it (parameters mostly
 * valid), or a compute over fresh inputs. */
static ts_tensor *shaped_op(fz *f, ts_ctx *ctx)
{
	int64_t m = 1 + pick(f, 9), n = 1 + pick(f, 9), k = 1 + pick(f, 9);
	int64_t c = 1 << pick(f, 3), h = 1 + pick(f, 7), w = 1 + pick(f, 7), o = 1 << pick(f, 3);
	int64_t kh = 1 + pick(f, 3), kw = 1 + pick(f, 3);
	int sh = 1 + pick(f, 2), sw = 1 + pick(f, 2), ph = pick(f, 2), pw = pick(f, 2);
	int dh = 1 + rare(f, 4), dw = 1 + rare(f, 4);
	bool ta = rare(f, 3), tb = rare(f, 3);
	ts_tensor *A, *B;
	switch (pick(f, 14)) {
	case 0:
		A = input(f, ctx, "A", 2, ta ? (int64_t[]){k, m} : (int64_t[]){m, k});
		B = input(f, ctx, "B", 2, tb ? (int64_t[]){n, k} : (int64_t[]){k, n});
		return CALL_P(f, ctx, ts_op_matmul(ctx, A, B, ta, tb));
	case 1:
		A = input(f, ctx, "X", 2, (int64_t[]){m, k});
		B = input(f, ctx, "W", 2, (int64_t[]){n, k});
		return CALL_P(f, ctx, ts_op_dense(ctx, A, B, rare(f, 2) ? NULL : input(f, ctx, "bias", 1, &n)));
	case 2: {
		int64_t g = rare(f, 3) ? c : 1;
		A = input(f, ctx, "X", 4, (int64_t[]){1, c, h, w});
		B = input(f, ctx, "W", 4, (int64_t[]){o * g, c / g, kh, kw});
		return CALL_P(f, ctx, ts_op_conv2d_nchw(ctx, A, B, sh, sw, ph, pw, dh, dw, (int)g));
	}
	case 3:
		A = input(f, ctx, "X", 4, (int64_t[]){1, h, w, c});
		B = input(f, ctx, "W", 4, (int64_t[]){kh, kw, c, o});
		return CALL_P(f, ctx, ts_op_conv2d_nhwc(ctx, A, B, sh, sw, ph, pw, dh, dw, 1));
	case 4:
		A = input(f, ctx, "X", 4, (int64_t[]){1, c, h, w});
		B = input(f, ctx, "W", 4, (int64_t[]){c, 1 + rare(f, 2), kh, kw});
		return CALL_P(f, ctx, ts_op_depthwise_conv2d_nchw(ctx, A, B, sh, sw, ph, pw, dh, dw));
	case 5:
		A = input(f, ctx, "X", 4, (int64_t[]){1, c, h, w});
		return rare(f, 2) ? CALL_P(f, ctx, ts_op_max_pool2d(ctx, A, (int)kh, (int)kw, sh, sw, ph % kh, pw % kw))
				  : CALL_P(f, ctx, ts_op_avg_pool2d(ctx, A, (int)kh, (int)kw, sh, sw, ph % kh, pw % kw, rare(f, 2)));
	case 6:
		A = input(f, ctx, "X", 2, (int64_t[]){m, n});
		return CALL_P(f, ctx, ts_op_softmax(ctx, A));
	case 7:
		A = input(f, ctx, "X", 2, (int64_t[]){m, n});
		return CALL_P(f, ctx, ts_op_layer_norm(ctx, A, input(f, ctx, "gamma", 1, &n),
							rare(f, 2) ? NULL : input(f, ctx, "beta", 1, &n), 1e-5));
	case 8: {
		A = input(f, ctx, "X", 2, (int64_t[]){m, n});
		int64_t pb[API_BUF] = {pick(f, 3), pick(f, 3)}, pa[API_BUF] = {pick(f, 3), pick(f, 3)};
		return CALL_P(f, ctx, ts_op_pad(ctx, A, pb, pa, pick(f, 3)));
	}
	case 9:
		A = input(f, ctx, "A", 2, (int64_t[]){m, n});
		B = input(f, ctx, "B", 2, (int64_t[]){m, n});
		switch (pick(f, 4)) {
		case 0: return CALL_P(f, ctx, ts_op_relu(ctx, CALL_P(f, ctx, ts_op_add(ctx, A, B))));
		case 1: return CALL_P(f, ctx, ts_op_gelu(ctx, A, rare(f, 2)));
		case 2: return CALL_P(f, ctx, ts_op_clip(ctx, A, -0.5, 1.25));
		default: return CALL_P(f, ctx, ts_op_bias_add(ctx, A, input(f, ctx, "b", 1, &n), -1));
		}
	case 10: {
		int64_t cb = c > 1 ? c / 2 : 1, ob = o > 1 ? o / 2 : 1;
		A = input(f, ctx, "X", 4, (int64_t[]){1, c, h, w});
		B = input(f, ctx, "W", 4, (int64_t[]){o, c, kh, kw});
		ts_tensor *Xc = CALL_P(f, ctx, ts_op_layout_nchw_to_nchwc(ctx, A, (int)cb));
		ts_tensor *Wc = CALL_P(f, ctx, ts_op_weight_oihw_to_blocked(ctx, B, (int)cb, (int)ob));
		ts_tensor *Y = CALL_P(f, ctx, ts_op_conv2d_nchwc(ctx, Xc, Wc, sh, sw, ph, pw, dh, dw));
		return rare(f, 2) ? Y : CALL_P(f, ctx, ts_op_layout_nchwc_to_nchw(ctx, Y));
	}
	case 11:
		A = input(f, ctx, "A", 2, (int64_t[]){m, k});
		B = input(f, ctx, "B", 2, (int64_t[]){k, n});
		return CALL_P(f, ctx, ts_op_matmul_packed(ctx, A, B, 1 + pick(f, 8)));
	case 12:
		A = input(f, ctx, "A", 3, (int64_t[]){2, m, k});
		B = input(f, ctx, "B", 3, (int64_t[]){2, k, n});
		return CALL_P(f, ctx, ts_op_batch_matmul(ctx, A, B, false, false));
	default:
		input(f, ctx, "A", 2, (int64_t[]){m, n});
		return compute_in(f, ctx);
	}
}

/* A plausible pipeline in one go: an operator on fitting inputs, its
 * schedule, an operator schedule or a few random primitives, lowering,
 * and the check of what lowers (through LLVM while the input has builds
 * left). */
/* A pipeline's last stages join the pools; its function, if it lowers,
 * is checked against the reference on the CPU and, bound to threads, on
 * the device. */
static ts_func *lower_pipeline(fz *f, ts_ctx *ctx, ts_schedule *s, const char *name)
{
	for (int i = 0; i < s->nstages && i < 4; i++)
		add_stage(f, s->stages[s->nstages - 1 - i]);
	ts_tensor *args[API_BUF];
	int n = proper_args(s, args, 32);
	ts_func *fn = CALL_P(f, ctx, ts_lower(s, name, n, args));
	if (!fn)
		return NULL;
	f->counts.lowered++;
	POOL_ADD(f, f->func, f->nfunc, NFUNC, fn);
	check_func(f, fn, NULL);
	check_gpu(f, fn);
	return fn;
}

static void step_pipeline(fz *f)
{
	ts_ctx *ctx = f->ctx[rare(f, 4)];
	ts_tensor *Y = add_tensor(f, shaped_op(f, ctx));
	if (!Y || Y->ctx != ctx || Y->op != TS_OP_COMPUTE)
		return;
	ts_schedule *s = CALL_P(f, ctx, ts_create_schedule(ctx, 1, &Y));
	POOL_ADD(f, f->sch, f->nsch, NSCH, s);
	if (!s)
		return;
	int lanes = 4 << pick(f, 3);
	switch (pick(f, 4)) {
	case 0: CALL_S(f, ctx, ts_schedule_default_cpu(s, lanes)); break;
	case 1: {
		ts_status (*const fns[])(ts_schedule *, ts_tensor *, int) = {ts_schedule_softmax_cpu, ts_schedule_layer_norm_cpu};
		CALL_S(f, ctx, fns[pick(f, 2)](s, Y, lanes));
		break;
	}
	case 2:
		switch (pick(f, 6)) {
		case 0: CALL_S(f, ctx, ts_schedule_matmul_cpu(s, Y, NULL)); break;
		case 1: CALL_S(f, ctx, ts_schedule_dense_cpu(s, Y, NULL)); break;
		case 2: CALL_S(f, ctx, ts_schedule_batch_matmul_cpu(s, Y, NULL)); break;
		case 3: CALL_S(f, ctx, ts_schedule_conv2d_nchwc_cpu(s, Y, NULL)); break;
		case 4: CALL_S(f, ctx, ts_schedule_depthwise_cpu(s, Y, NULL)); break;
		default: CALL_S(f, ctx, ts_schedule_depthwise_nchwc_cpu(s, Y, NULL)); break;
		}
		break;
	default:
		for (int i = pick(f, 8); i > 0 && s->nstages > 0; i--)
			primitive_on(f, s->stages[pick(f, s->nstages)], s->stages[pick(f, s->nstages)]);
		break;
	}
	ts_func *fn = lower_pipeline(f, ctx, s, "f");
	if (!fn || f->builds >= API_MAX_BUILDS)
		return;
	f->builds++;
	ts_module *m = CALL_P(f, ctx, ts_build(ctx, fn, "llvm"));
	if (m)
		check_func(f, fn, m);
	ts_module_free(m);
}

/* A thread count for a block dimension: mostly a power of two up to 128,
 * sometimes one the launch limits or the split refuse. */
static int64_t pick_threads(fz *f, int most_log2)
{
	if (rare(f, 16))
		return rare(f, 2) ? pick_factor(f) : 2048;
	return (int64_t)1 << pick(f, most_log2 + 1);
}

/* The data axes of st bound as GPU users bind them: fused into one, split
 * into blocks of threads (with a few elements per thread inside, now and
 * then), or the last two tiled into a 2-D grid of 2-D blocks, the leading
 * ones fused onto blockIdx.z.  Returns the innermost thread-bound axis
 * (NULL when a primitive refused), its block axis in *block and the
 * threads along x in *nthreads. */
static ts_axis *gpu_bind_data(fz *f, ts_stage *st, int ndim, ts_axis **block, int64_t *nthreads)
{
	ts_ctx *ctx = ctx_of_stage(st);
	ts_axis *x = ndim > 0 ? CALL_P(f, ctx, ts_axis_of(st, 0)) : NULL, *o1 = NULL, *o2 = NULL;
	ts_axis *o3 = NULL, *o4 = NULL;
	if (!x)
		return NULL;
	if (ndim >= 2 && rare(f, 2)) { /* 2-D blocks */
		int64_t ty = pick_threads(f, 4), tx = pick_threads(f, 5);
		ts_axis *i = CALL_P(f, ctx, ts_axis_of(st, ndim - 2)), *j = CALL_P(f, ctx, ts_axis_of(st, ndim - 1));
		if (CALL_S(f, ctx, ts_tile(st, i, j, ty, tx, &o1, &o2, &o3, &o4)) != TS_OK)
			return NULL;
		for (int d = 1; d < ndim - 2 && x; d++) { /* the leading axes, fused */
			ts_axis *z = NULL;
			CALL_S(f, ctx, ts_fuse(st, x, ts_axis_of(st, d), &z));
			x = z;
		}
		if (ndim > 2 && x)
			CALL_S(f, ctx, ts_bind(st, x, TS_BLOCK_Z));
		CALL_S(f, ctx, ts_bind(st, o1, TS_BLOCK_Y));
		CALL_S(f, ctx, ts_bind(st, o2, TS_BLOCK_X));
		CALL_S(f, ctx, ts_bind(st, o3, TS_THREAD_Y));
		CALL_S(f, ctx, ts_bind(st, o4, TS_THREAD_X));
		*block = o2;
		*nthreads = tx;
		return o4;
	}
	for (int d = 1; d < ndim && x; d++) {
		ts_axis *fused = NULL;
		CALL_S(f, ctx, ts_fuse(st, x, ts_axis_of(st, d), &fused));
		x = fused;
	}
	ts_axis *per_thread = NULL;
	if (x && rare(f, 3) && CALL_S(f, ctx, ts_split(st, x, rare(f, 3) ? 3 : 2 << pick(f, 3), &o1, &per_thread)) == TS_OK)
		x = o1;
	int64_t threads = pick_threads(f, 7);
	ts_status r = rare(f, 4) ? CALL_S(f, ctx, ts_split_nparts(st, x, threads, &o2, &o3))
				 : CALL_S(f, ctx, ts_split_tail(st, x, threads, (ts_tail)pick(f, 2), &o2, &o3));
	if (r != TS_OK)
		return NULL;
	if (!rare(f, 8)) /* now and then threads only: one block */
		CALL_S(f, ctx, ts_bind(st, o2, TS_BLOCK_X));
	CALL_S(f, ctx, ts_bind(st, o3, TS_THREAD_X));
	if (per_thread && rare(f, 3))
		CALL_S(f, ctx, ts_unroll(st, per_thread));
	else if (per_thread && !rare(f, 3))
		CALL_S(f, ctx, ts_vectorize(st, per_thread));
	*block = o2;
	*nthreads = threads;
	return o3;
}

/* The data axes of st (the first ndim leaves) fused into one; NULL when
 * a fuse refused. */
static ts_axis *fuse_data(fz *f, ts_stage *st, int ndim)
{
	ts_ctx *ctx = ctx_of_stage(st);
	ts_axis *x = ndim > 0 && st->nleaf >= ndim ? st->leaf[0] : NULL;
	for (int d = 1; d < ndim && x; d++) {
		ts_axis *fused = NULL;
		CALL_S(f, ctx, ts_fuse(st, x, st->leaf[1], &fused));
		x = fused;
	}
	return x;
}

/* An input of the stage reader staged in shared memory or registers,
 * computed at a loop of at (the block's, the thread's or a reduction
 * step's), a shared tile fetched by the block's threads together. */
static void gpu_stage_input(fz *f, ts_schedule *s, ts_tensor *in, ts_stage *reader, ts_stage *at,
			    ts_axis *axis, int64_t nthreads)
{
	ts_ctx *ctx = s->ctx;
	bool shared = !rare(f, 3);
	ts_tensor *r = reader->tensor, *t = NULL;
	/* the reader given, else the first stage that reads in */
	for (int i = -1; !t && i < s->nstages && i < 8; i++) {
		if (i >= 0)
			r = s->stages[i]->tensor;
		t = CALL_P(f, ctx, ts_cache_read(s, in, shared ? TS_SCOPE_SHARED : TS_SCOPE_LOCAL, 1, &r));
	}
	ts_stage *st = t ? CALL_P(f, ctx, ts_stage_of(s, t)) : NULL;
	if (!st)
		return;
	add_stage(f, st);
	if (CALL_S(f, ctx, ts_compute_at(st, at, axis)) != TS_OK || !shared || rare(f, 3))
		return;
	/* the block's threads fetch the tile together, a few elements each
	 * now and then (one vector access where they line up) */
	ts_axis *x = fuse_data(f, st, t->ndim), *o = NULL, *i = NULL, *v = NULL;
	if (x && rare(f, 3) && CALL_S(f, ctx, ts_split(st, x, 2 << pick(f, 3), &o, &v)) == TS_OK) {
		x = o;
		CALL_S(f, ctx, rare(f, 4) ? ts_unroll(st, v) : ts_vectorize(st, v));
	}
	if (x && CALL_S(f, ctx, ts_split(st, x, rare(f, 6) ? pick_threads(f, 7) : nthreads, &o, &i)) == TS_OK)
		CALL_S(f, ctx, ts_bind(st, i, TS_THREAD_X));
	if (rare(f, 4))
		CALL_S(f, ctx, ts_double_buffer(st));
	if (rare(f, 4))
		CALL_S(f, ctx, ts_storage_align(st, t->ndim > 1 ? t->ndim - 2 : 0, 1 << pick(f, 6), 1 + pick(f, 4)));
}

/* Y's reduction factored across threads (TVM's cross-thread reduction):
 * a part of its first reduction axis taken out by rfactor, computed by
 * threadIdx.x in shared memory at Y's block loop (or in registers at Y's
 * thread loop), Y's elements on blockIdx.x and threadIdx.y adding the
 * parts up. */
static void gpu_rfactor(fz *f, ts_schedule *s, ts_tensor *Y)
{
	ts_ctx *ctx = s->ctx;
	ts_stage *sy = CALL_P(f, ctx, ts_stage_of(s, Y));
	ts_axis *ko = NULL, *ki = NULL, *bo = NULL, *to = NULL;
	if (!sy || CALL_S(f, ctx, ts_split(sy, ts_reduce_axis_of(sy, 0), pick_threads(f, 6), &ko, &ki)) != TS_OK)
		return;
	int nd = Y->ndim;
	ts_tensor *rf = CALL_P(f, ctx, ts_rfactor(s, Y, rare(f, 3) ? ko : ki, nd));
	ts_stage *sr = rf ? CALL_P(f, ctx, ts_stage_of(s, rf)) : NULL;
	ts_axis *x = sr ? fuse_data(f, sy, nd) : NULL;
	if (!x || CALL_S(f, ctx, ts_split(sy, x, pick_threads(f, 3), &bo, &to)) != TS_OK)
		return;
	add_stage(f, sr);
	CALL_S(f, ctx, ts_bind(sy, bo, TS_BLOCK_X));
	CALL_S(f, ctx, ts_bind(sy, to, TS_THREAD_Y));
	bool shared = !rare(f, 3);
	CALL_S(f, ctx, ts_set_scope(sr, shared ? TS_SCOPE_SHARED : TS_SCOPE_LOCAL));
	if (CALL_S(f, ctx, ts_compute_at(sr, sy, shared ? bo : to)) != TS_OK || !shared)
		return;
	ts_axis *part = CALL_P(f, ctx, ts_axis_of(sr, nd)), *rows = fuse_data(f, sr, nd);
	if (rows)
		CALL_S(f, ctx, ts_bind(sr, rows, TS_THREAD_Y));
	CALL_S(f, ctx, ts_bind(sr, part, TS_THREAD_X));
}

/* Y's schedule as GPU users write it (Y's stage unscheduled): its data axes
 * bound to blocks and threads; a reduction accumulated in registers
 * (cache_write local computed at the thread loop), sometimes in steps;
 * inputs staged in shared memory or registers; the other stages inlined,
 * computed in Y's threads, bound to threads of their own (a kernel of
 * their own) or left at root. */
static void gpu_schedule(fz *f, ts_schedule *s, ts_tensor *Y)
{
	ts_ctx *ctx = s->ctx;
	ts_stage *others[16];
	int nothers = 0;
	for (int i = 0; i < s->nstages && nothers < 16; i++)
		if (s->stages[i]->tensor != Y && s->stages[i]->tensor->op == TS_OP_COMPUTE)
			others[nothers++] = s->stages[i];
	ts_tensor *ins[API_BUF];
	int nins = proper_args(s, ins, 32) - s->nout;
	if (Y->nreduce > 0 && rare(f, 4)) {
		gpu_rfactor(f, s, Y);
		return;
	}
	ts_tensor *YL = Y->nreduce > 0 && !rare(f, 3) ? CALL_P(f, ctx, ts_cache_write(s, Y, TS_SCOPE_LOCAL)) : NULL;
	ts_stage *sy = CALL_P(f, ctx, ts_stage_of(s, Y)), *sl = YL ? CALL_P(f, ctx, ts_stage_of(s, YL)) : NULL;
	ts_axis *block = NULL, *step = NULL;
	int64_t nthreads = 1;
	ts_axis *thread = sy ? gpu_bind_data(f, sy, Y->ndim, &block, &nthreads) : NULL;
	if (!thread)
		return;
	if (sl && CALL_S(f, ctx, ts_compute_at(sl, sy, rare(f, 4) ? sy->leaf[sy->nleaf - 1] : thread)) == TS_OK &&
	    rare(f, 2)) {
		ts_axis *k = CALL_P(f, ctx, ts_reduce_axis_of(sl, 0)), *ki = NULL;
		if (CALL_S(f, ctx, ts_split(sl, k, 1 + pick(f, 8), &step, &ki)) == TS_OK && rare(f, 2)) {
			ts_axis *order[API_BUF] = {step};
			int n = 1;
			for (int i = 0; i < sl->nleaf; i++)
				if (sl->leaf[i] != step)
					order[n++] = sl->leaf[i];
			CALL_S(f, ctx, ts_reorder(sl, n, order));
		}
	}
	for (int i = 0; i < nins; i++) {
		if (rare(f, 2))
			continue;
		ts_stage *reader = sl ? sl : sy;
		if (rare(f, 3) && s->nstages > 0)
			reader = s->stages[pick(f, s->nstages)];
		switch (pick(f, step ? 4 : 3)) {
		case 0: gpu_stage_input(f, s, ins[i], reader, sy, block, nthreads); break;
		case 1: gpu_stage_input(f, s, ins[i], reader, sy, thread, nthreads); break;
		case 2:
			if (reader->nleaf > 0)
				gpu_stage_input(f, s, ins[i], reader, reader, reader->leaf[reader->nleaf - 1], nthreads);
			break;
		default: gpu_stage_input(f, s, ins[i], reader, sl, step, nthreads); break;
		}
	}
	for (int i = 0; i < nothers; i++) {
		ts_stage *st = others[i], *at = sl && rare(f, 2) ? sl : sy;
		ts_axis *b = NULL;
		int64_t n = 0;
		switch (pick(f, 4)) {
		case 0: CALL_S(f, ctx, ts_compute_inline(st)); break;
		case 1:
			if (at->nleaf > 0)
				CALL_S(f, ctx, ts_compute_at(st, at, at == sy ? thread : at->leaf[pick(f, at->nleaf)]));
			break;
		case 2: gpu_bind_data(f, st, st->tensor->ndim, &b, &n); break;
		default: break;
		}
	}
}

/* A pipeline scheduled for a GPU: an operator on fitting inputs (or a
 * tensor-core GEMM), the operator library's GPU schedule or one written
 * as GPU users write them, a few random primitives on top, lowering, and
 * the check of what lowers through the interpreter and, with the GPU
 * checks on, on the device. */
static void step_gpu_pipeline(fz *f)
{
	ts_ctx *ctx = f->ctx[rare(f, 4)];
	int how = pick(f, 10); /* 6 and up: a chain of random computes */
	ts_tensor *Y;
	if (how == 0) { /* tensor cores: 16-multiples, TF32 or half inputs */
		int64_t m = 16 << rare(f, 2), n = 16 << rare(f, 2), k = 16 << rare(f, 3);
		bool half = rare(f, 2);
		ts_dtype t = half ? (rare(f, 2) ? ts_float16 : ts_bfloat16) : ts_float32;
		ts_tensor *A = add_tensor(f, CALL_P(f, ctx, ts_placeholder(ctx, "A", 2, (int64_t[]){m, k}, t)));
		ts_tensor *B = add_tensor(f, CALL_P(f, ctx, ts_placeholder(ctx, "B", 2, (int64_t[]){k, n}, t)));
		Y = half ? CALL_P(f, ctx, ts_op_matmul_acc(ctx, A, B, false, rare(f, 3), ts_float32))
			 : CALL_P(f, ctx, ts_op_matmul_tf32(ctx, A, B, false, rare(f, 3)));
	} else {
		/* the dtypes the CUDA C spells its own way, now and then */
		static const ts_dtype types[] = {ts_float16, ts_bfloat16, ts_int8, ts_uint8, ts_int64, ts_int16,
						 ts_float64, ts_int32};
		if (rare(f, 3))
			f->input_type = types[pick(f, TS_COUNT_OF(types))];
		if (how < 6) {
			Y = shaped_op(f, ctx);
		} else { /* a chain of random computes over fresh inputs */
			int64_t m = 1 + pick(f, 12), n = 1 + pick(f, 12);
			input(f, ctx, "A", 2, (int64_t[]){m, n});
			if (rare(f, 2))
				input(f, ctx, "B", 1, rare(f, 2) ? &m : &n);
			Y = compute_in(f, ctx);
			for (int i = pick(f, 3); i > 0 && Y; i--)
				Y = compute_in(f, ctx);
		}
		f->input_type = (ts_dtype){0, 0, 0};
	}
	add_tensor(f, Y);
	if (!Y || Y->ctx != ctx || Y->op != TS_OP_COMPUTE)
		return;
	ts_schedule *s = CALL_P(f, ctx, ts_create_schedule(ctx, 1, &Y));
	POOL_ADD(f, f->sch, f->nsch, NSCH, s);
	if (!s)
		return;
	ts_matmul_cuda_params gp = ts_matmul_cuda_default();
	if (rare(f, 2)) {
		gp.block_m = 1 << pick(f, 6), gp.block_n = 1 << pick(f, 6), gp.thread_m = 1 << pick(f, 3);
		gp.thread_n = 1 << pick(f, 3), gp.tile_k = 1 << pick(f, 4), gp.double_buffer = rare(f, 2);
	}
	switch (how) {
	case 0: CALL_S(f, ctx, ts_schedule_matmul_tensorcore(s, Y, NULL)); break;
	case 1:
	case 9: CALL_S(f, ctx, ts_schedule_default_cuda(s, (int)pick_threads(f, 8))); break;
	case 2:
		switch (pick(f, 3)) {
		case 0: CALL_S(f, ctx, ts_schedule_matmul_cuda(s, Y, rare(f, 2) ? NULL : &gp)); break;
		case 1: CALL_S(f, ctx, ts_schedule_conv2d_cuda(s, Y, rare(f, 2) ? NULL : &gp)); break;
		default: CALL_S(f, ctx, ts_schedule_default_cuda(s, 32)); break;
		}
		break;
	default: gpu_schedule(f, s, Y); break;
	}
	for (int i = rare(f, 2) ? 1 + pick(f, 3) : 0; i > 0 && s->nstages > 0; i--)
		primitive_on(f, s->stages[pick(f, s->nstages)], s->stages[pick(f, s->nstages)]);
	lower_pipeline(f, ctx, s, "g");
}

static void step_array(fz *f)
{
	ts_ctx *ctx = pick_ctx(f);
	ts_array *a = NULL;
	switch (pick(f, 4)) {
	case 0: {
		int64_t shape[API_BUF];
		int ndim = pick_int(f);
		fill_shape(shape, 1);
		for (int d = 0; d < ndim && d < TS_MAX_DIMS; d++)
			shape[d] = rare(f, 6) ? pick_extent(f) : 1 + pick(f, 6);
		/* memory the library would rightly allocate is not ours to ask
		 * for: 2^24 elements to 2^50 are left out, larger counts are
		 * asked (and must be refused) */
		double numel = 1;
		for (int d = 0; d < ndim && d < TS_MAX_DIMS; d++)
			numel *= shape[d] > 0 ? (double)shape[d] : 1;
		if (numel > (1 << 24) && numel < 0x1p50)
			return;
		a = CALL_P(f, ctx, ts_array_new(ctx, pick_dtype(f), ndim, shape));
		break;
	}
	case 1:
	case 2: {
		ts_tensor *t = any_tensor(f);
		if (t && graph_work(&(ts_func){.nparams = 1, .param_tensors = &t}) > API_MAX_WORK)
			return;
		a = CALL_P(f, ctx, ts_array_for(ctx, t));
		break;
	}
	default: {
		/* over memory of ours: 4 KiB, the shape at most 8 x 8 x 8 of 8 bytes */
		static _Alignas(64) unsigned char mem[4096 + 64];
		int64_t shape[API_BUF];
		int ndim = pick(f, 4);
		fill_shape(shape, 1);
		for (int d = 0; d < ndim; d++)
			shape[d] = 1 + pick(f, 8) - (rare(f, 8) ? 5 : 0);
		void *data = rare(f, 6) ? NULL : mem + (rare(f, 3) ? pick(f, 64) : 0);
		a = CALL_P(f, ctx, ts_array_wrap(ctx, data, pick_dtype(f), ndim, shape));
		break;
	}
	}
	if (!a)
		return;
	if (rare(f, 2))
		ts_array_fill_random(a, u8(f), pick(f, 5) - 2.0, rare(f, 4) ? -INFINITY : 2.0);
	POOL_PUT(f, f->arr, f->narr, NARR, a, ts_array_free);
}

static void step_run(fz *f)
{
	ts_module *m = f->nmod ? f->mod[pick(f, f->nmod)] : NULL;
	ts_array *args[API_BUF] = {NULL};
	const ts_func *fn = m ? ts_module_func(m) : NULL;
	int n = fn ? fn->nparams : pick_int(f);
	for (int i = 0; i < n && i < API_BUF; i++)
		args[i] = any_array(f);
	n = pick_count(f, n < API_BUF ? n : API_BUF);
	ts_ctx *ctx = fn ? fn->ctx : NULL;
	switch (pick(f, 3)) {
	case 0: CALL_S(f, ctx, ts_module_run(m, n, args)); break;
	case 1: CALL_S(f, ctx, ts_module_launch(m, n, args)); break;
	default: {
		ts_func *g = any_func(f);
		ts_ctx *c = rare(f, 4) ? pick_ctx(f) : g ? g->ctx : NULL;
		CALL_S(f, c, ts_check_args(c, g, n, args, (ts_device)(pick(f, 3) - 1 + TS_DEVICE_CPU)));
		break;
	}
	}
}

/* ts_eval on tensors of the pool, with data of the right size, NULL,
 * misaligned or shared. */
static void step_eval(fz *f)
{
	ts_ctx *ctx = pick_ctx(f);
	ts_tensor *bind[API_BUF] = {NULL};
	void *data[API_BUF] = {NULL};
	void *owned[8] = {NULL};
	int n = 1 + pick(f, 3);
	for (int i = 0; i < n; i++) {
		bind[i] = any_tensor(f);
		if (!bind[i] || rare(f, 12))
			continue;
		if (i > 0 && rare(f, 6)) {
			data[i] = data[i - 1];
			continue;
		}
		ts_tensor *t = bind[i];
		if (graph_work(&(ts_func){.nparams = 1, .param_tensors = &t}) > API_MAX_WORK)
			continue;
		size_t bytes = (size_t)ts_tensor_numel(t) * 8 + 64;
		owned[i] = calloc(1, bytes);
		data[i] = (char *)owned[i] + (rare(f, 8) ? 1 : 0);
	}
	CALL_S(f, ctx, ts_eval(ctx, pick_count(f, n), bind, data));
	for (int i = 0; i < 8; i++)
		free(owned[i]);
}

static void step_expr(fz *f)
{
	scope sc = {.ctx = pick_ctx(f)};
	add_expr(f, gen_expr(f, &sc, 1 + pick(f, 3)));
}

/* ---- the sequence ------------------------------------------------------------------------ */

typedef void (*step_fn)(fz *f);

static const step_fn steps[] = {
	step_placeholder, step_placeholder, step_placeholder, step_compute, step_compute,
	step_compute, step_compute, step_op, step_op, step_op, step_schedule, step_schedule,
	step_schedule, step_stage_of, step_primitive, step_primitive, step_primitive,
	step_primitive, step_primitive, step_primitive, step_op_schedule, step_print,
	step_lower, step_lower, step_lower, step_build, step_build, step_array, step_run,
	step_eval, step_expr, step_reduce_axis, step_size_var, step_pipeline, step_pipeline,
	step_pipeline, step_gpu_pipeline, step_gpu_pipeline,
};

void api_fuzz_run(const uint8_t *data, size_t size, const char *label, api_fuzz_counts *counts)
{
	fz *f = calloc(1, sizeof(*f));
	if (!f)
		return;
	f->data = data;
	f->size = size;
	f->label = label;
	const char *log = getenv("TS_API_FUZZ_LOG");
	f->log = log ? atoi(log) : 0;
	f->gpu = api_fuzz_gpu();
	f->ctx[0] = ts_ctx_new();
	f->ctx[1] = ts_ctx_new();
	/* with the GPU checks on, one step in four more a GPU pipeline, so that
	 * most inputs reach the device */
	for (int i = 0; i < API_MAX_STEPS && f->pos < f->size; i++)
		(f->gpu && rare(f, 4) ? step_gpu_pipeline : steps[pick(f, TS_COUNT_OF(steps))])(f);
	/* the last function of the pool, built if the input has not built two */
	if (f->nfunc > 0 && f->builds < API_MAX_BUILDS) {
		ts_func *fn = f->func[f->nfunc - 1];
		ts_module *m = CALL_P(f, fn->ctx, ts_build(fn->ctx, fn, "llvm"));
		if (m)
			check_func(f, fn, m);
		ts_module_free(m);
	}
	/* and the latest function bound to GPU threads, on the device */
	for (int i = f->nfunc - 1; i >= 0 && f->gpu && f->gpu_builds < API_MAX_GPU_BUILDS; i--)
		if (bound_to_threads(f->func[i])) {
			check_gpu(f, f->func[i]);
			break;
		}
	if (f->log)
		fprintf(stderr, "api_fuzz%s%s: %d calls, %d failed, %d functions lowered, %d built, %d compared, "
			"%d built for cuda (%d refused, %d run)\n", label ? " " : "", label ? label : "",
			f->ntrace, f->nfailed, f->counts.lowered, f->builds, f->counts.compared,
			f->counts.gpu_built, f->counts.gpu_refused, f->counts.gpu_ran);
	if (counts) {
		counts->lowered += f->counts.lowered;
		counts->compared += f->counts.compared;
		counts->gpu_built += f->counts.gpu_built;
		counts->gpu_refused += f->counts.gpu_refused;
		counts->gpu_ran += f->counts.gpu_ran;
	}
	for (int i = 0; i < f->nmod; i++)
		ts_module_free(f->mod[i]);
	for (int i = 0; i < f->narr; i++)
		ts_array_free(f->arr[i]);
	ts_ctx_free(f->ctx[0]);
	ts_ctx_free(f->ctx[1]);
	free(f);
}
