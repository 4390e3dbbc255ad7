/*
 * test_op_schedules_after.c - the operator schedules (op_schedules.h)
 * called after the caller already gave one of the operator's stages a
 * primitive of its own.
 *
 * For every operator of a small set (softmax, layer norm, matmul + relu,
 * dense, batch matmul, NCHWc and NCHW convolutions, depthwise, max pool),
 * every schedule function (CPU and GPU), and every stage of the operator
 * given one primitive first (cache_write, cache_read of its input,
 * compute_inline, compute_root, rfactor with and without a split,
 * storage_align, double_buffer, compute_at its reader, split, parallel,
 * reorder), the schedule function either refuses, with TS_ERR_INVALID and
 * the schedule left as it was, or succeeds with a schedule that lowers and
 * computes the reference evaluator's result (the interpreter runs the GPU
 * schedules' thread loops too).  The one refusal left to lowering is the
 * caller's own: a double_buffer on a producer the schedule function leaves
 * at root, where it has no loop to overlap.  Softmax read a NULL reduction axis after
 * a cache_write of its max; other combinations gave schedules that
 * lowering refused with messages about stages the caller never touched
 * (a padding inlined under the caller's storage_align, a compute_at loop
 * fused away).
 */
#include "testutil.h"

#include <string.h>

#include "lower.h"
#include "printer.h"

enum { OP_SOFTMAX, OP_LAYER_NORM, OP_MATMUL_RELU, OP_DENSE, OP_BATCH_MATMUL, OP_CONV_NCHWC,
       OP_DEPTHWISE, OP_CONV_NCHW, OP_POOL, NOPS };

typedef struct op_case {
	ts_ctx *ctx;
	ts_tensor *args[8]; /* inputs, then the output */
	int nargs;
} op_case;

static ts_tensor *input(op_case *c, const char *name, int ndim, const int64_t *shape)
{
	ts_tensor *t = ts_placeholder(c->ctx, name, ndim, shape, ts_float32);
	c->args[c->nargs++] = t;
	return t;
}

/* Shapes that the schedules' blocks and lanes do not divide. */
static ts_tensor *build(op_case *c, int op)
{
	ts_ctx *ctx = c->ctx;
	ts_tensor *X, *W, *Y;
	switch (op) {
	case OP_SOFTMAX:
		Y = ts_op_softmax(ctx, input(c, "X", TS_SHAPE(5, 19)));
		break;
	case OP_LAYER_NORM:
		X = input(c, "X", TS_SHAPE(5, 19));
		W = input(c, "gamma", TS_SHAPE(19));
		Y = ts_op_layer_norm(ctx, X, W, input(c, "beta", TS_SHAPE(19)), 1e-5);
		break;
	case OP_MATMUL_RELU:
		X = input(c, "A", TS_SHAPE(21, 17));
		Y = ts_op_relu(ctx, ts_op_matmul(ctx, X, input(c, "B", TS_SHAPE(17, 23)), false, false));
		break;
	case OP_DENSE:
		X = input(c, "X", TS_SHAPE(9, 17));
		W = input(c, "W", TS_SHAPE(13, 17));
		Y = ts_op_relu(ctx, ts_op_dense(ctx, X, W, input(c, "bias", TS_SHAPE(13))));
		break;
	case OP_BATCH_MATMUL:
		X = input(c, "A", TS_SHAPE(3, 9, 17));
		Y = ts_op_batch_matmul(ctx, X, input(c, "B", TS_SHAPE(3, 17, 11)), false, false);
		break;
	case OP_CONV_NCHWC:
		X = input(c, "Xc", TS_SHAPE(1, 2, 9, 9, 4));
		W = input(c, "Wc", TS_SHAPE(2, 2, 3, 3, 4, 8));
		Y = ts_op_relu(ctx, ts_op_conv2d_nchwc(ctx, X, W, 1, 1, 1, 1, 1, 1));
		break;
	case OP_DEPTHWISE:
		X = input(c, "X", TS_SHAPE(1, 6, 9, 9));
		W = input(c, "W", TS_SHAPE(6, 1, 3, 3));
		Y = ts_op_depthwise_conv2d_nchw(ctx, X, W, 1, 1, 1, 1, 1, 1);
		break;
	case OP_CONV_NCHW:
		X = input(c, "X", TS_SHAPE(1, 5, 9, 9));
		W = input(c, "W", TS_SHAPE(7, 5, 3, 3));
		Y = ts_op_conv2d_nchw(ctx, X, W, 1, 1, 1, 1, 1, 1, 1);
		break;
	default:
		Y = ts_op_max_pool2d(ctx, input(c, "X", TS_SHAPE(1, 3, 9, 9)), 3, 3, 2, 2, 1, 1);
		break;
	}
	c->args[c->nargs++] = Y;
	return Y;
}

enum { NSCHEDS = 12 };

static const char *const sched_names[NSCHEDS] = {
	"default_cpu", "matmul_cpu", "dense_cpu", "batch_matmul_cpu", "conv2d_nchwc_cpu", "depthwise_cpu",
	"softmax_cpu", "layer_norm_cpu", "default_cuda", "matmul_cuda", "conv2d_cuda", "matmul_tensorcore"};

static ts_status apply_schedule(ts_schedule *s, int k, ts_tensor *Y)
{
	switch (k) {
	case 0: return ts_schedule_default_cpu(s, 8);
	case 1: return ts_schedule_matmul_cpu(s, Y, NULL);
	case 2: return ts_schedule_dense_cpu(s, Y, NULL);
	case 3: return ts_schedule_batch_matmul_cpu(s, Y, NULL);
	case 4: return ts_schedule_conv2d_nchwc_cpu(s, Y, NULL);
	case 5: return ts_schedule_depthwise_cpu(s, Y, NULL);
	case 6: return ts_schedule_softmax_cpu(s, Y, 8);
	case 7: return ts_schedule_layer_norm_cpu(s, Y, 8);
	case 8: return ts_schedule_default_cuda(s, 64);
	case 9: return ts_schedule_matmul_cuda(s, Y, NULL);
	case 10: return ts_schedule_conv2d_cuda(s, Y, NULL);
	default: return ts_schedule_matmul_tensorcore(s, Y, NULL);
	}
}

static ts_axis *first_reduce_leaf(const ts_stage *st)
{
	for (int i = 0; i < st->nleaf; i++)
		if (st->leaf[i]->kind == TS_ITER_REDUCE)
			return st->leaf[i];
	return NULL;
}

/* The first stage that reads st's tensor, or NULL. */
static ts_stage *reader_of(ts_schedule *s, const ts_stage *st)
{
	for (int i = 0; i < s->nstages; i++)
		for (int q = 0; q < s->stages[i]->tensor->ninputs; q++)
			if (s->stages[i]->tensor->inputs[q] == st->tensor)
				return s->stages[i];
	return NULL;
}

enum { NPRIMS = 12 };

/* Primitive p on st; false when it does not apply or is refused. */
static bool give(ts_schedule *s, ts_stage *st, int p)
{
	ts_tensor *t = st->tensor;
	ts_axis *o, *i, *k = first_reduce_leaf(st);
	ts_stage *r;
	switch (p) {
	case 0: return ts_cache_write(s, t, TS_SCOPE_LOCAL) != NULL;
	case 1: return t->ninputs > 0 && ts_cache_read(s, t->inputs[0], TS_SCOPE_LOCAL, 1, &t) != NULL;
	case 2: return ts_compute_inline(st) == TS_OK;
	case 3: return ts_compute_root(st) == TS_OK;
	case 4: return k && ts_rfactor(s, t, k, 0) != NULL;
	case 5: return k && ts_split(st, k, 4, &o, &i) == TS_OK && ts_rfactor(s, t, i, 0) != NULL;
	case 6: return ts_storage_align(st, 0, 8, 1) == TS_OK;
	case 7: return ts_double_buffer(st) == TS_OK;
	case 8: r = reader_of(s, st);
		return r && r->nleaf > 0 && ts_compute_at(st, r, r->leaf[0]) == TS_OK;
	case 9: return st->nleaf > 0 && ts_split(st, st->leaf[0], 3, &o, &i) == TS_OK;
	case 10: return st->nleaf > 0 && ts_parallel(st, st->leaf[0]) == TS_OK;
	default: return st->nleaf > 1 && ts_reorder(st, TS_AXES(st->leaf[1], st->leaf[0])) == TS_OK;
	}
}

/* Schedule function k on operator op after primitive p (none when p < 0)
 * on stage si: refused as it was, or lowered and checked.  Returns 1 when
 * a schedule was checked. */
static int check_case(ts_ctx *ctx, int op, int k, int p, int si)
{
	op_case c = {.ctx = ctx};
	ts_tensor *Y = build(&c, op);
	tu_nonnull(ctx, Y);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	tu_nonnull(ctx, s);
	if (p >= 0 && (si >= s->nstages || !give(s, s->stages[si], p)))
		return 0;
	ts_clear_error(ctx);
	char what[256];
	snprintf(what, sizeof(what), "\n%s after primitive %d on stage %d of\n%s", sched_names[k], p, si,
		 ts_schedule_str(s));
	const char *before = ts_schedule_str(s);
	ts_status st = apply_schedule(s, k, Y);
	if (st != TS_OK) {
		ck_assert_msg(st == TS_ERR_INVALID, "%s: status %d: %s", what, st, ts_last_error(ctx));
		ck_assert_msg(strcmp(before, ts_schedule_str(s)) == 0,
			      "%s: refused (%s) but changed the schedule to\n%s", what, ts_last_error(ctx),
			      ts_schedule_str(s));
		return 0;
	}
	ts_func *f = ts_lower(s, "f", c.nargs, c.args);
	/* a double buffer the caller gave a producer that stays at root:
	 * lowering says so, as it would without the schedule function */
	if (!f && p == 7 && strstr(ts_last_error(ctx), "is computed at root"))
		return 0;
	ck_assert_msg(f != NULL, "%s: accepted, but lowering refused: %s", what, ts_last_error(ctx));
	tu_set_context(what);
	tu_check_func_interp(ctx, f, 1e-4);
	tu_set_context(NULL);
	return 1;
}

/* One operator under every schedule function, given primitive p (or none,
 * p < 0) on each of its stages. */
static void sweep(int op, int *scheduled)
{
	for (int k = 0; k < NSCHEDS; k++)
		for (int p = -1; p < NPRIMS; p++)
			for (int si = 0; si < (p < 0 ? 1 : 8); si++) {
				ts_ctx *ctx = ts_ctx_new();
				*scheduled += check_case(ctx, op, k, p, si);
				ts_ctx_free(ctx);
			}
}

START_TEST(test_schedules_after_primitives)
{
	int scheduled = 0;
	sweep(_i, &scheduled);
	/* each operator has a schedule function of its own that takes it */
	ck_assert_int_gt(scheduled, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("op_schedules_after");
	TCase *tc = tcase_create("sweep");
	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, test_schedules_after_primitives, 0, NOPS);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
