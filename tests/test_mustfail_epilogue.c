/*
 * test_mustfail_epilogue.c - ts_schedule_dense_cpu refuses what is not a
 * matmul followed by an elementwise chain: a reduction after the matmul,
 * a stage that changes the shape, a read at other indices (a transpose),
 * a stage reading two computed tensors,
 * no matmul at all, bad parameters and NULLs; and ts_op_gelu refuses
 * integer tensors.  ts_schedule_conv2d_nchwc_cpu refuses the same misuses
 * of an NCHW[x]c convolution's epilogue, and a chain too long.
 */
#include "testutil.h"

#include <string.h>

#include "op_schedules.h"

typedef struct mm {
	ts_ctx *ctx;
	ts_tensor *A, *B, *C;
} mm;

static mm matmul(int64_t M, int64_t N, int64_t K)
{
	mm m = {.ctx = ts_ctx_new()};
	m.A = ts_placeholder(m.ctx, "A", TS_SHAPE(M, K), ts_float32);
	m.B = ts_placeholder(m.ctx, "B", TS_SHAPE(K, N), ts_float32);
	m.C = ts_op_matmul(m.ctx, m.A, m.B, false, false);
	tu_nonnull(m.ctx, m.C);
	return m;
}

static void expect_refused(ts_ctx *ctx, ts_tensor *Y, const char *part)
{
	tu_nonnull(ctx, Y);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	tu_nonnull(ctx, s);
	ck_assert_int_eq(ts_schedule_dense_cpu(s, Y, NULL), TS_ERR_INVALID);
	tu_assert_error(ctx, part);
}

/* Y[i] = sum_j relu(C[i, j]): a reduction after the matmul */
START_TEST(reduction_after_matmul)
{
	mm m = matmul(8, 12, 5);
	ts_ctx *ctx = m.ctx;
	ts_tensor *R = ts_op_relu(ctx, m.C);
	ts_iter *j = ts_reduce_axis(ctx, "j", 0, 12);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *Y = ts_compute(ctx, "rowsum", TS_SHAPE(8), TS_VARS(i),
				  TS_SUM(ctx, TS_READ(ctx, R, i, j->var), j));
	expect_refused(ctx, Y, "schedule_dense_cpu(rowsum): stage rowsum reduces (it is not a matmul); an epilogue must be elementwise");
	ts_ctx_free(ctx);
}
END_TEST

/* relu of a column max of C: a reduction inside the chain, below Y */
START_TEST(max_reduction_in_chain)
{
	mm m = matmul(8, 12, 5);
	ts_ctx *ctx = m.ctx;
	ts_iter *r = ts_reduce_axis(ctx, "r", 0, 8);
	ts_expr *i = ts_var(ctx, "i"), *jj = ts_var(ctx, "j");
	ts_tensor *M = ts_compute(ctx, "colmax", TS_SHAPE(1, 12), TS_VARS(i, jj),
				  TS_MAX(ctx, TS_READ(ctx, m.C, r->var, jj), r));
	tu_nonnull(ctx, M);
	expect_refused(ctx, ts_op_relu(ctx, M), "stage colmax reduces (it is not a matmul)");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(shape_changing_stage)
{
	mm m = matmul(8, 12, 5);
	ts_ctx *ctx = m.ctx;
	ts_tensor *P = ts_op_pad(ctx, m.C, (int64_t[]){1, 1}, (int64_t[]){1, 1}, 0);
	tu_nonnull(ctx, P);
	expect_refused(ctx, ts_op_relu(ctx, P), "schedule_dense_cpu(relu): epilogue stage pad reads matmul at other indices than its own element (ax0, ax1)");
	ts_ctx_free(ctx);
}
END_TEST

/* Y[i, j] = C[i, j] + 1 over the top-left 4 x 6 corner of C */
START_TEST(cropping_stage)
{
	mm m = matmul(8, 12, 5);
	ts_ctx *ctx = m.ctx;
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_tensor *Y = ts_compute(ctx, "crop", TS_SHAPE(4, 6), TS_VARS(i, j),
				  ts_add(ctx, TS_READ(ctx, m.C, i, j), ts_make_const(ctx, ts_float32, 1)));
	expect_refused(ctx, Y, "schedule_dense_cpu(crop): epilogue stage crop changes the shape of matmul matmul [8, 12]; an epilogue must be elementwise");
	ts_ctx_free(ctx);
}
END_TEST

/* Y[i, j] = C[j, i] + 1: same shape, but not elementwise */
START_TEST(transposed_read)
{
	mm m = matmul(12, 12, 5);
	ts_ctx *ctx = m.ctx;
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_tensor *Y = ts_compute(ctx, "Y", TS_SHAPE(12, 12), TS_VARS(i, j),
				  ts_add(ctx, TS_READ(ctx, m.C, j, i), ts_make_const(ctx, ts_float32, 1)));
	expect_refused(ctx, Y, "schedule_dense_cpu(Y): epilogue stage Y reads matmul at other indices than its own element (i, j); an epilogue must be elementwise");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(two_computed_operands)
{
	mm m = matmul(8, 12, 5);
	ts_ctx *ctx = m.ctx;
	ts_tensor *Y = ts_op_add(ctx, ts_op_relu(ctx, m.C), m.C);
	expect_refused(ctx, Y, "epilogue stage add reads 2 computed tensors");
	ts_ctx_free(ctx);
}
END_TEST

/* the matmul or an epilogue stage also an output, or read by another
 * stage: it would need a global buffer, and the epilogue keeps it in
 * registers.  Refused before the schedule changes (it was refused by the
 * primitive that would take the buffer away, half-way through, with
 * bias_add already inlined). */
START_TEST(chain_stage_is_output)
{
	mm m = matmul(8, 12, 5);
	ts_ctx *ctx = m.ctx;
	ts_tensor *T = ts_op_relu(ctx, m.C), *Y = ts_op_relu(ctx, T);
	ts_schedule *s = ts_create_schedule(ctx, 2, (ts_tensor *[]){Y, m.C});
	const char *before = ts_schedule_str(s);
	ck_assert_int_eq(ts_schedule_dense_cpu(s, Y, NULL), TS_ERR_INVALID);
	tu_assert_error(ctx, "schedule_dense_cpu(relu): matmul is an output of the schedule; with an epilogue "
			     "it is kept in registers and never stored");
	ck_assert_str_eq(ts_schedule_str(s), before);
	ts_clear_error(ctx);
	s = ts_create_schedule(ctx, 2, (ts_tensor *[]){Y, T});
	ck_assert_int_eq(ts_schedule_dense_cpu(s, Y, NULL), TS_ERR_INVALID);
	tu_assert_error(ctx, "relu is an output of the schedule");
	ts_clear_error(ctx);
	/* the matmul read by a second output */
	ts_tensor *Z = ts_op_add(ctx, m.C, m.C);
	s = ts_create_schedule(ctx, 2, (ts_tensor *[]){Y, Z});
	before = ts_schedule_str(s);
	ck_assert_int_eq(ts_schedule_dense_cpu(s, Y, NULL), TS_ERR_INVALID);
	tu_assert_error(ctx, "schedule_dense_cpu(relu): matmul is also read by add; with an epilogue it is "
			     "kept in registers, where no other stage can read it");
	ck_assert_str_eq(ts_schedule_str(s), before);
	ts_clear_error(ctx);
	/* an epilogue stage read by a second output */
	s = ts_create_schedule(ctx, 2, (ts_tensor *[]){Y, ts_op_gelu(ctx, T, true)});
	ck_assert_int_eq(ts_schedule_dense_cpu(s, Y, NULL), TS_ERR_INVALID);
	tu_assert_error(ctx, "relu is also read by gelu");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(no_matmul)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(4, 4), ts_float32);
	expect_refused(ctx, ts_op_relu(ctx, X), "schedule_dense_cpu(relu): relu is not computed from a matmul (stage relu reads only inputs)");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(bad_params_and_nulls)
{
	mm m = matmul(8, 12, 5);
	ts_ctx *ctx = m.ctx;
	ts_tensor *Y = ts_op_relu(ctx, m.C);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	ts_matmul_cpu_params p = {.mr = 4, .nr = 0, .kunroll = 2};
	ck_assert_int_eq(ts_schedule_dense_cpu(s, Y, &p), TS_ERR_INVALID);
	tu_assert_error(ctx, "schedule_dense_cpu: parameter nr must be positive, got 0");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_schedule_dense_cpu(s, NULL, NULL), TS_ERR_INVALID);
	tu_assert_error(ctx, "schedule_dense_cpu: tensor is NULL");
	ck_assert_int_eq(ts_schedule_dense_cpu(NULL, Y, NULL), TS_ERR_INVALID);
	ts_ctx_free(ctx);
}
END_TEST

/* The reduction in chunks accumulates C in memory: with an epilogue, or a
 * batch's tile, it is refused before the schedule changes (which then
 * takes kc 0); dense without an epilogue is the matmul and takes it. */
START_TEST(k_chunks_need_the_sum_in_memory)
{
	mm m = matmul(8, 12, 40);
	ts_ctx *ctx = m.ctx;
	ts_tensor *Y = ts_op_relu(ctx, m.C);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	ts_matmul_cpu_params p = {.mr = 4, .nr = 8, .kunroll = 2, .kc = 16};
	ck_assert_int_eq(ts_schedule_dense_cpu(s, Y, &p), TS_ERR_INVALID);
	tu_assert_error(ctx, "schedule_dense_cpu(relu): parameter kc is 16; the reduction in chunks "
			     "accumulates C in memory, so it applies to a matmul without an epilogue (kc 0 here)");
	ts_clear_error(ctx);
	p.kc = 0;
	tu_ok(ctx, ts_schedule_dense_cpu(s, Y, &p));
	tu_check_func(ctx, ts_lower(s, "dense", 3, (ts_tensor *[]){m.A, m.B, Y}), 1e-4);
	ts_schedule *s2 = ts_create_schedule(ctx, 1, &m.C);
	p.kc = 16;
	tu_ok(ctx, ts_schedule_dense_cpu(s2, m.C, &p));
	tu_check_func(ctx, ts_lower(s2, "chunks", 3, (ts_tensor *[]){m.A, m.B, m.C}), 1e-4);
	ts_tensor *A = ts_placeholder(ctx, "A3", TS_SHAPE(2, 8, 40), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B3", TS_SHAPE(2, 40, 12), ts_float32);
	ts_tensor *C = ts_op_batch_matmul(ctx, A, B, false, false);
	ts_schedule *s3 = ts_create_schedule(ctx, 1, &C);
	ck_assert_int_eq(ts_schedule_batch_matmul_cpu(s3, C, &p), TS_ERR_INVALID);
	tu_assert_error(ctx, "schedule_batch_matmul_cpu(batch_matmul): parameter kc is 16");
	ts_clear_error(ctx);
	p.kc = 0;
	tu_ok(ctx, ts_schedule_batch_matmul_cpu(s3, C, &p));
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(gelu_of_integers)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(4), ts_int32);
	ck_assert_ptr_null(ts_op_gelu(ctx, X, false));
	tu_assert_error(ctx, "gelu");
	ts_ctx_free(ctx);
}
END_TEST

/* ---- the epilogue of an NCHW[x]c convolution ------------------------------------ */

typedef struct cv {
	ts_ctx *ctx;
	ts_tensor *C; /* [1, 2, 6, 6, 8] */
	ts_expr *v[5];
} cv;

static cv conv(void)
{
	cv c = {.ctx = ts_ctx_new()};
	ts_tensor *X = ts_placeholder(c.ctx, "X", TS_SHAPE(1, 2, 6, 6, 4), ts_float32);
	ts_tensor *W = ts_placeholder(c.ctx, "W", TS_SHAPE(2, 2, 3, 3, 4, 8), ts_float32);
	c.C = ts_op_conv2d_nchwc(c.ctx, X, W, 1, 1, 1, 1, 1, 1);
	tu_nonnull(c.ctx, c.C);
	static const char *const names[] = {"n", "co", "h", "w", "ci"};
	for (int d = 0; d < 5; d++)
		c.v[d] = ts_var(c.ctx, names[d]);
	return c;
}

static void conv_refused(ts_ctx *ctx, ts_tensor *Y, const char *part)
{
	tu_nonnull(ctx, Y);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	tu_nonnull(ctx, s);
	ck_assert_int_eq(ts_schedule_conv2d_nchwc_cpu(s, Y, NULL), TS_ERR_INVALID);
	tu_assert_error(ctx, part);
}

/* Y[n, co, h, w] = sum_ci relu(C[n, co, h, w, ci]): a reduction after it */
START_TEST(conv_reduction_after)
{
	cv c = conv();
	ts_ctx *ctx = c.ctx;
	ts_tensor *R = ts_op_relu(ctx, c.C);
	ts_iter *r = ts_reduce_axis(ctx, "r", 0, 8);
	ts_tensor *Y = ts_compute(ctx, "chsum", TS_SHAPE(1, 2, 6, 6), c.v,
				  TS_SUM(ctx, TS_READ(ctx, R, c.v[0], c.v[1], c.v[2], c.v[3], r->var), r));
	conv_refused(ctx, Y, "schedule_conv2d_nchwc_cpu(chsum): stage chsum reduces (it is not an NCHW[x]c convolution); an epilogue must be elementwise");
	ts_ctx_free(ctx);
}
END_TEST

/* Y[n, co, h, w, ci] = C[n, co, h, w, ci] + 1 over a 4 x 4 corner */
START_TEST(conv_cropping_stage)
{
	cv c = conv();
	ts_ctx *ctx = c.ctx;
	ts_expr *const *v = c.v;
	ts_tensor *Y = ts_compute(ctx, "crop", TS_SHAPE(1, 2, 4, 4, 8), v,
				  ts_add(ctx, TS_READ(ctx, c.C, v[0], v[1], v[2], v[3], v[4]),
					 ts_make_const(ctx, ts_float32, 1)));
	conv_refused(ctx, Y, "schedule_conv2d_nchwc_cpu(crop): epilogue stage crop changes the shape of convolution conv2d_nchwc [1, 2, 6, 6, 8]; an epilogue must be elementwise");
	ts_ctx_free(ctx);
}
END_TEST

/* crop(relu(C)): the stage below Y has another shape than Y */
START_TEST(conv_stage_of_other_shape)
{
	cv c = conv();
	ts_ctx *ctx = c.ctx;
	ts_expr *const *v = c.v;
	ts_tensor *R = ts_op_relu(ctx, c.C);
	ts_tensor *Y = ts_compute(ctx, "crop", TS_SHAPE(1, 2, 4, 4, 8), v,
				  TS_READ(ctx, R, v[0], v[1], v[2], v[3], v[4]));
	conv_refused(ctx, Y, "schedule_conv2d_nchwc_cpu(crop): epilogue stage relu has a shape other than crop's [1, 2, 4, 4, 8]; an epilogue must be elementwise");
	ts_ctx_free(ctx);
}
END_TEST

/* Y[n, co, h, w, ci] = C[n, co, w, h, ci]: same shape, another element */
START_TEST(conv_transposed_read)
{
	cv c = conv();
	ts_ctx *ctx = c.ctx;
	ts_expr *const *v = c.v;
	ts_tensor *Y = ts_compute(ctx, "Y", 5, c.C->shape, v,
				  ts_add(ctx, TS_READ(ctx, c.C, v[0], v[1], v[3], v[2], v[4]),
					 ts_make_const(ctx, ts_float32, 1)));
	conv_refused(ctx, Y, "schedule_conv2d_nchwc_cpu(Y): epilogue stage Y reads conv2d_nchwc at other indices than its own element (n, co, h, w, ci); an epilogue must be elementwise");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(conv_two_computed_operands)
{
	cv c = conv();
	ts_ctx *ctx = c.ctx;
	ts_tensor *Y = ts_op_add(ctx, ts_op_relu(ctx, c.C), c.C);
	conv_refused(ctx, Y, "schedule_conv2d_nchwc_cpu(add): epilogue stage add reads 2 computed tensors; it must read the convolution's chain once, its other operands (bias, residual) being inputs");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(conv_no_convolution)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, 2, 6, 6, 8), ts_float32);
	ts_tensor *Y = ts_op_relu(ctx, X);
	conv_refused(ctx, Y, "schedule_conv2d_nchwc_cpu(relu): relu is not computed from an NCHW[x]c convolution (stage relu reads only inputs)");
	ts_clear_error(ctx);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	ck_assert_int_eq(ts_schedule_conv2d_nchwc_cpu(s, X, NULL), TS_ERR_INVALID);
	tu_assert_error(ctx, "schedule_conv2d_nchwc_cpu(X): X is an input; X is not computed from an NCHW[x]c convolution");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(conv_chain_too_long)
{
	cv c = conv();
	ts_ctx *ctx = c.ctx;
	ts_tensor *Y = c.C;
	for (int i = 0; i <= TS_MAX_EPILOGUE; i++)
		Y = ts_op_relu(ctx, Y);
	conv_refused(ctx, Y, "schedule_conv2d_nchwc_cpu(relu): more than 16 epilogue stages");
	ts_ctx_free(ctx);
}
END_TEST

/* the convolution also an output: it needs a global buffer */
START_TEST(conv_is_output)
{
	cv c = conv();
	ts_ctx *ctx = c.ctx;
	ts_tensor *Y = ts_op_relu(ctx, c.C);
	ts_schedule *s = ts_create_schedule(ctx, 2, (ts_tensor *[]){Y, c.C});
	ck_assert_int_eq(ts_schedule_conv2d_nchwc_cpu(s, Y, NULL), TS_ERR_INVALID);
	tu_assert_error(ctx, "schedule_conv2d_nchwc_cpu(relu): conv2d_nchwc is an output of the schedule");
	ts_ctx_free(ctx);
}
END_TEST

/* Whole-operator schedules on stages already scheduled are refused before
 * they change anything (softmax left its row axis parallel and the
 * default schedule its stages inlined and split, with a primitive's
 * message). */
START_TEST(rows_and_default_on_scheduled)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(6, 20), ts_float32);
	ts_tensor *S = ts_op_softmax(ctx, ts_op_relu(ctx, X));
	ts_schedule *s = ts_create_schedule(ctx, 1, &S);
	ts_stage *st = ts_stage_of(s, S);
	ts_axis *o, *i;
	tu_ok(ctx, ts_split(st, ts_axis_of(st, 1), 5, &o, &i));
	const char *before = ts_schedule_str(s);
	ck_assert_int_eq(ts_schedule_softmax_cpu(s, S, 8), TS_ERR_INVALID);
	tu_assert_error(ctx, "schedule_softmax_cpu: softmax is already scheduled");
	ck_assert_str_eq(ts_schedule_str(s), before);
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_schedule_default_cpu(s, 8), TS_ERR_INVALID);
	tu_assert_error(ctx, "schedule_default_cpu: softmax is already scheduled");
	ck_assert_str_eq(ts_schedule_str(s), before);
	/* twice on a fresh schedule: the second is refused the same way */
	ts_schedule *s2 = ts_create_schedule(ctx, 1, &S);
	tu_ok(ctx, ts_schedule_default_cpu(s2, 8));
	before = ts_schedule_str(s2);
	ck_assert_int_eq(ts_schedule_default_cpu(s2, 8), TS_ERR_INVALID);
	tu_assert_error(ctx, "is already scheduled");
	ck_assert_str_eq(ts_schedule_str(s2), before);
	ts_tensor *L = ts_op_layer_norm(ctx, X, ts_placeholder(ctx, "g", TS_SHAPE(20), ts_float32),
					ts_placeholder(ctx, "b", TS_SHAPE(20), ts_float32), 1e-5);
	ts_schedule *s3 = ts_create_schedule(ctx, 1, &L);
	tu_ok(ctx, ts_schedule_layer_norm_cpu(s3, L, 8));
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_schedule_layer_norm_cpu(s3, L, 8), TS_ERR_INVALID);
	tu_assert_error(ctx, "schedule_layer_norm_cpu: ");
	tu_assert_error(ctx, "is already scheduled");
	ts_ctx_free(ctx);
}
END_TEST

/* Operator schedules on stages the caller already gave a primitive that
 * the schedule would lose or break are refused by name, the schedule left
 * as it was: a cache_write (softmax then read a NULL reduction axis), an
 * rfactor, a cache_read of the stage's input, a storage_align or a
 * double_buffer (the stage was inlined, and lowering refused the
 * alignment), a stage attached at its loops (the schedule fused that loop
 * away, and lowering refused the attachment).  test_op_schedules_after
 * sweeps every such pair. */
START_TEST(schedules_after_primitives)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(6, 20), ts_float32);
	ts_tensor *S = ts_op_softmax(ctx, X);
	ts_tensor *L = ts_op_layer_norm(ctx, X, ts_placeholder(ctx, "g", TS_SHAPE(20), ts_float32),
					ts_placeholder(ctx, "b", TS_SHAPE(20), ts_float32), 1e-5);
	ts_tensor *I = ts_placeholder(ctx, "I", TS_SHAPE(1, 3, 9, 9), ts_float32);
	ts_tensor *D = ts_op_depthwise_conv2d_nchw(ctx, I, ts_placeholder(ctx, "W", TS_SHAPE(3, 1, 3, 3), ts_float32),
						   1, 1, 1, 1, 1, 1);
	for (int k = 0; k < 6; k++) {
		ts_tensor *Y = k == 1 ? L : k >= 4 ? D : S;
		ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
		ts_stage *sy = ts_stage_of(s, Y), *sp = ts_stage_of(s, ts_op_stage(Y, k >= 4 ? "pad" : "softmax_exp"));
		ts_axis *ko, *ki;
		const char *want = NULL;
		switch (k) {
		case 0:
			ck_assert_ptr_nonnull(ts_cache_write(s, ts_op_stage(S, "softmax_max"), TS_SCOPE_LOCAL));
			want = "schedule_softmax_cpu: softmax_max already has a cache_write, a cache_read or an rfactor";
			break;
		case 1: {
			ts_stage *sv = ts_stage_of(s, ts_op_stage(L, "layer_norm_var"));
			tu_ok(ctx, ts_split(sv, ts_reduce_axis_of(sv, 0), 4, &ko, &ki));
			ck_assert_ptr_nonnull(ts_rfactor(s, sv->tensor, ki, 0));
			want = "schedule_layer_norm_cpu: layer_norm_var already has a cache_write, a cache_read or an rfactor";
			break;
		}
		case 2:
			ck_assert_ptr_nonnull(ts_cache_read(s, sp->tensor, TS_SCOPE_LOCAL, 1, &S));
			want = "schedule_softmax_cpu: softmax already has a cache_write, a cache_read or an rfactor";
			break;
		case 3:
			tu_ok(ctx, ts_double_buffer(sp));
			want = "schedule_softmax_cpu: softmax_exp already has a double_buffer or a prefetch";
			break;
		case 4:
			tu_ok(ctx, ts_storage_align(sp, 0, 8, 1));
			want = "already has a storage_align";
			break;
		default:
			tu_ok(ctx, ts_compute_at(sp, sy, ts_axis_of(sy, 0)));
			want = "schedule_depthwise_cpu: depthwise_conv2d_nchw already has stage pad attached at its loop 'n'";
			break;
		}
		const char *before = ts_schedule_str(s);
		ts_status st = k == 1 ? ts_schedule_layer_norm_cpu(s, Y, 8)
			       : k == 4 ? ts_schedule_default_cpu(s, 8)
			       : k == 5 ? ts_schedule_depthwise_cpu(s, Y, NULL)
					: ts_schedule_softmax_cpu(s, Y, 8);
		ck_assert_msg(st == TS_ERR_INVALID, "case %d: status %d", k, st);
		tu_assert_error(ctx, want);
		ck_assert_str_eq(ts_schedule_str(s), before);
		ts_clear_error(ctx);
	}
	ts_ctx_free(ctx);
}
END_TEST

/* A batch matmul's epilogue stage between the output and the matmul that
 * the caller scheduled is refused by name, as the other epilogue
 * schedules refuse it, before anything changes; untouched, the same chain
 * is fused and computes the reference. */
START_TEST(bmm_epilogue_middle_scheduled)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(2, 9, 20), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(2, 20, 13), ts_float32);
	ts_tensor *C = ts_op_batch_matmul(ctx, A, B, false, false);
	ts_tensor *R = ts_rename(ctx, ts_op_relu(ctx, C), "R");
	ts_tensor *Y = ts_rename(ctx, ts_op_add(ctx, R, R), "Y");
	tu_nonnull(ctx, Y);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	ts_stage *sr = ts_stage_of(s, R);
	ts_axis *o, *i;
	tu_ok(ctx, ts_split(sr, ts_axis_of(sr, 2), 4, &o, &i));
	const char *before = ts_schedule_str(s);
	ck_assert_int_eq(ts_schedule_batch_matmul_cpu(s, Y, NULL), TS_ERR_INVALID);
	tu_assert_error(ctx, "schedule_batch_matmul_cpu: R is already scheduled");
	ck_assert_str_eq(ts_schedule_str(s), before);
	ts_clear_error(ctx);
	ts_schedule *s2 = ts_create_schedule(ctx, 1, &Y);
	tu_ok(ctx, ts_schedule_batch_matmul_cpu(s2, Y, NULL));
	tu_check_func(ctx, ts_lower(s2, "bmm_relu_add", 3, (ts_tensor *[]){A, B, Y}), 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

/* The padded input of a convolution as it reads it (its 5-D producer). */
static ts_tensor *padded_input(ts_tensor *C)
{
	for (int i = 0; i < C->ninputs; i++)
		if (C->inputs[i]->ndim == 5)
			return C->inputs[i];
	return NULL;
}

/* The window schedules (conv2d, depthwise, pooling) on stages already
 * scheduled are refused before they change anything (a second call failed
 * half-way with a primitive's message, the schedule changed); a padding
 * that is an output is never inlined (TS_PAD_INLINE says so, AUTO copies
 * it); a producer another stage reads, or that is an output, stays at
 * root (it was attached to the pooling's planes, and lowering refused).
 * Each schedule that succeeds lowers and computes the reference's
 * results. */
START_TEST(window_schedules_on_scheduled_or_shared)
{
	ts_ctx *ctx = ts_ctx_new();
	for (int epi = 0; epi < 2; epi++) {
		ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, 2, 6, 7, 4), ts_float32);
		ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(2, 2, 3, 3, 4, 8), ts_float32);
		ts_tensor *C = ts_op_conv2d_nchwc(ctx, X, W, 1, 1, 1, 1, 1, 1);
		ts_tensor *Y = epi ? ts_op_relu(ctx, C) : C;
		ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
		tu_ok(ctx, ts_schedule_conv2d_nchwc_cpu(s, Y, NULL));
		const char *before = ts_schedule_str(s);
		ck_assert_int_eq(ts_schedule_conv2d_nchwc_cpu(s, Y, NULL), TS_ERR_INVALID);
		tu_assert_error(ctx, epi ? "schedule_conv2d_nchwc_cpu: relu is already scheduled"
					 : "schedule_conv2d_nchwc_cpu: conv2d_nchwc is already scheduled");
		ck_assert_str_eq(ts_schedule_str(s), before);
		ts_clear_error(ctx);
		/* the caller split the output first */
		ts_schedule *s2 = ts_create_schedule(ctx, 1, &Y);
		ts_stage *sy = ts_stage_of(s2, Y);
		ts_axis *o, *i;
		tu_ok(ctx, ts_split(sy, ts_axis_of(sy, 2), 2, &o, &i));
		before = ts_schedule_str(s2);
		ck_assert_int_eq(ts_schedule_conv2d_nchwc_cpu(s2, Y, NULL), TS_ERR_INVALID);
		tu_assert_error(ctx, "is already scheduled");
		ck_assert_str_eq(ts_schedule_str(s2), before);
		ts_clear_error(ctx);
	}
	/* the padding an output too */
	for (int mode = TS_PAD_AUTO; mode <= TS_PAD_INLINE; mode++) {
		ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, 2, 6, 7, 8), ts_float32);
		ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(2, 2, 3, 3, 8, 8), ts_float32);
		ts_tensor *C = ts_op_conv2d_nchwc(ctx, X, W, 1, 1, 1, 1, 1, 1), *P = padded_input(C);
		ck_assert_ptr_nonnull(P);
		ts_schedule *s = ts_create_schedule(ctx, 2, (ts_tensor *[]){P, C});
		ts_conv2d_cpu_params p = ts_conv2d_cpu_default();
		p.pad = (ts_pad_mode)mode;
		if (mode == TS_PAD_INLINE) {
			const char *before = ts_schedule_str(s);
			ck_assert_int_eq(ts_schedule_conv2d_nchwc_cpu(s, C, &p), TS_ERR_INVALID);
			tu_assert_error(ctx, "schedule_conv2d_nchwc_cpu: conv2d_nchwc's padded input is an output "
					     "of the schedule, so it is stored and cannot be inlined (TS_PAD_INLINE)");
			ck_assert_str_eq(ts_schedule_str(s), before);
			ts_clear_error(ctx);
			continue;
		}
		tu_ok(ctx, ts_schedule_conv2d_nchwc_cpu(s, C, &p));
		ts_func *f = ts_lower(s, "conv_pad_out", 4, (ts_tensor *[]){X, W, P, C});
		tu_nonnull(ctx, f);
		tu_check_func(ctx, f, 1e-4);
	}
	/* depthwise on NCHW[x]c: twice, and its padding an output */
	{
		ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, 2, 6, 7, 8), ts_float32);
		ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(2, 3, 3, 8), ts_float32);
		ts_tensor *C = ts_op_depthwise_conv2d_nchwc(ctx, X, W, 1, 1, 1, 1, 1, 1), *P = padded_input(C);
		ts_schedule *s = ts_create_schedule(ctx, 2, (ts_tensor *[]){P, C});
		tu_ok(ctx, ts_schedule_depthwise_nchwc_cpu(s, C, NULL));
		const char *before = ts_schedule_str(s);
		ck_assert_int_eq(ts_schedule_depthwise_nchwc_cpu(s, C, NULL), TS_ERR_INVALID);
		tu_assert_error(ctx, "schedule_depthwise_nchwc_cpu: ");
		tu_assert_error(ctx, "is already scheduled");
		ck_assert_str_eq(ts_schedule_str(s), before);
		ts_clear_error(ctx);
		ts_func *f = ts_lower(s, "dw_pad_out", 4, (ts_tensor *[]){X, W, P, C});
		tu_nonnull(ctx, f);
		tu_check_func(ctx, f, 1e-4);
	}
	/* pooling over relu(X), which another output reads, or which is an
	 * output itself */
	for (int shared = 0; shared < 2; shared++) {
		ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, 2, 6, 9), ts_float32);
		ts_tensor *R = ts_op_relu(ctx, X), *Y = ts_op_max_pool2d(ctx, R, 3, 3, 1, 1, 0, 0);
		ts_tensor *Z = shared ? ts_op_add(ctx, R, X) : R;
		ts_schedule *s = ts_create_schedule(ctx, 2, (ts_tensor *[]){Y, Z});
		tu_ok(ctx, ts_schedule_depthwise_cpu(s, Y, NULL));
		const char *before = ts_schedule_str(s);
		ck_assert_int_eq(ts_schedule_depthwise_cpu(s, Y, NULL), TS_ERR_INVALID);
		tu_assert_error(ctx, "schedule_depthwise_cpu: max_pool2d is already scheduled");
		ck_assert_str_eq(ts_schedule_str(s), before);
		ts_clear_error(ctx);
		ts_func *f = ts_lower(s, "pool_shared", 3, (ts_tensor *[]){X, Y, Z});
		tu_nonnull(ctx, f);
		tu_check_func(ctx, f, 1e-4);
	}
	ts_ctx_free(ctx);
}
END_TEST

/* A register block of ow_block INT64_MAX columns with oh_block 0 (rows
 * chosen to fill it): clamped to the image at once (the row search ran
 * INT64_MAX / OW steps), and right. */
START_TEST(conv_huge_ow_block)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, 1, 4, 5, 8), ts_float32);
	ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(1, 1, 3, 3, 8, 8), ts_float32);
	ts_tensor *C = ts_op_conv2d_nchwc(ctx, X, W, 1, 1, 1, 1, 1, 1);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_conv2d_cpu_params p = ts_conv2d_cpu_default();
	p.ow_block = INT64_MAX;
	tu_ok(ctx, ts_schedule_conv2d_nchwc_cpu(s, C, &p));
	ts_func *f = ts_lower(s, "conv_wide", 3, (ts_tensor *[]){X, W, C});
	tu_nonnull(ctx, f);
	tu_check_func(ctx, f, 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mustfail_epilogue");
	TCase *tc = tcase_create("mustfail_epilogue");
	tcase_add_test(tc, reduction_after_matmul);
	tcase_add_test(tc, max_reduction_in_chain);
	tcase_add_test(tc, shape_changing_stage);
	tcase_add_test(tc, cropping_stage);
	tcase_add_test(tc, transposed_read);
	tcase_add_test(tc, two_computed_operands);
	tcase_add_test(tc, chain_stage_is_output);
	tcase_add_test(tc, no_matmul);
	tcase_add_test(tc, bad_params_and_nulls);
	tcase_add_test(tc, k_chunks_need_the_sum_in_memory);
	tcase_add_test(tc, gelu_of_integers);
	tcase_add_test(tc, conv_reduction_after);
	tcase_add_test(tc, conv_cropping_stage);
	tcase_add_test(tc, conv_stage_of_other_shape);
	tcase_add_test(tc, conv_transposed_read);
	tcase_add_test(tc, conv_two_computed_operands);
	tcase_add_test(tc, conv_no_convolution);
	tcase_add_test(tc, conv_chain_too_long);
	tcase_add_test(tc, conv_is_output);
	tcase_add_test(tc, rows_and_default_on_scheduled);
	tcase_add_test(tc, schedules_after_primitives);
	tcase_add_test(tc, bmm_epilogue_middle_scheduled);
	tcase_add_test(tc, window_schedules_on_scheduled_or_shared);
	tcase_add_test(tc, conv_huge_ow_block);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
