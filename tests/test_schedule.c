/*
 * test_schedule.c - every schedule primitive, alone and combined, lowered
 * and run by the loop-IR interpreter, must match the reference evaluator on
 * random data, on shapes the factors divide and shapes they do not.
 */
#include "testutil.h"

#include <string.h>
#include <unistd.h>

#include "lower.h"
#include "ops.h"
#include "schedule.h"

typedef tu_mm mm;

static ts_func *lower_mm(mm *m)
{
	return ts_lower(m->s, "matmul", 3, (ts_tensor *[]){m->A, m->B, m->C});
}

static const int64_t shapes[][3] = {{32, 48, 16}, {37, 29, 23}, {5, 3, 7}};

/* Applies `sched` to matmuls of every test shape and checks each result. */
static void each_shape(void (*sched)(mm *m))
{
	for (size_t i = 0; i < TS_COUNT_OF(shapes); i++) {
		mm m = tu_matmul(shapes[i][0], shapes[i][1], shapes[i][2]);
		sched(&m);
		ck_assert_msg(ts_last_status(m.ctx) == TS_OK, "schedule failed: %s", ts_last_error(m.ctx));
		tu_check_func(m.ctx, lower_mm(&m), 1e-5);
		ts_ctx_free(m.ctx);
	}
}

#define AX(m, n) ts_axis_of((m)->sc, (n))
#define RAX(m, n) ts_reduce_axis_of((m)->sc, (n))

static void s_default(mm *m) { (void)m; }
static void s_split(mm *m)
{
	ts_axis *o, *i;
	tu_ok(m->ctx, ts_split(m->sc, AX(m, 0), 8, &o, &i));
}
static void s_split_partition(mm *m)
{
	ts_axis *o, *i;
	tu_ok(m->ctx, ts_split_tail(m->sc, AX(m, 1), 8, TS_TAIL_PARTITION, &o, &i));
	tu_ok(m->ctx, ts_vectorize(m->sc, i));
}
static void s_split_nparts(mm *m)
{
	ts_axis *o, *i;
	tu_ok(m->ctx, ts_split_nparts(m->sc, AX(m, 1), 3, &o, &i));
}
static void s_split_reduce(mm *m)
{
	ts_axis *o, *i;
	tu_ok(m->ctx, ts_split(m->sc, RAX(m, 0), 4, &o, &i));
	tu_ok(m->ctx, ts_reorder(m->sc, TS_AXES(o, AX(m, 0), i, AX(m, 1))));
}
static void s_tile(mm *m)
{
	ts_axis *xo, *yo, *xi, *yi;
	tu_ok(m->ctx, ts_tile(m->sc, AX(m, 0), AX(m, 1), 8, 8, &xo, &yo, &xi, &yi));
}
static void s_fuse(mm *m)
{
	ts_axis *f, *o, *i;
	tu_ok(m->ctx, ts_fuse(m->sc, AX(m, 0), AX(m, 1), &f));
	tu_ok(m->ctx, ts_split(m->sc, f, 16, &o, &i));
}
static void s_reorder(mm *m)
{
	tu_ok(m->ctx, ts_reorder(m->sc, TS_AXES(RAX(m, 0), AX(m, 1), AX(m, 0))));
}
static void s_vectorize(mm *m)
{
	ts_axis *o, *i;
	tu_ok(m->ctx, ts_split(m->sc, AX(m, 1), 8, &o, &i));
	tu_ok(m->ctx, ts_reorder(m->sc, TS_AXES(o, RAX(m, 0), i)));
	tu_ok(m->ctx, ts_vectorize(m->sc, i));
}
static void s_parallel(mm *m)
{
	tu_ok(m->ctx, ts_parallel(m->sc, AX(m, 0)));
}
static void s_unroll(mm *m)
{
	ts_axis *o, *i;
	tu_ok(m->ctx, ts_split(m->sc, RAX(m, 0), 4, &o, &i));
	tu_ok(m->ctx, ts_unroll(m->sc, i));
}
static void s_tile_all(mm *m)
{
	ts_axis *xo, *yo, *xi, *yi, *ko, *ki, *f;
	tu_ok(m->ctx, ts_tile(m->sc, AX(m, 0), AX(m, 1), 16, 8, &xo, &yo, &xi, &yi));
	tu_ok(m->ctx, ts_split(m->sc, RAX(m, 0), 4, &ko, &ki));
	tu_ok(m->ctx, ts_reorder(m->sc, TS_AXES(xo, yo, ko, xi, ki, yi)));
	tu_ok(m->ctx, ts_vectorize(m->sc, yi));
	tu_ok(m->ctx, ts_unroll(m->sc, ki));
	tu_ok(m->ctx, ts_fuse(m->sc, xo, yo, &f));
	tu_ok(m->ctx, ts_parallel(m->sc, f));
}

/* TVM's "How to optimize GEMM on CPU", final schedule (write cache). */
static void s_opt_gemm(mm *m)
{
	ts_ctx *ctx = m->ctx;
	ts_tensor *CC = ts_cache_write(m->s, m->C, TS_SCOPE_GLOBAL);
	tu_nonnull(ctx, CC);
	ts_axis *mo, *no, *mi, *ni, *ko, *ki;
	tu_ok(ctx, ts_tile(m->sc, AX(m, 0), AX(m, 1), 8, 8, &mo, &no, &mi, &ni));
	ts_stage *scc = ts_stage_of(m->s, CC);
	tu_ok(ctx, ts_compute_at(scc, m->sc, no));
	ts_axis *mc = ts_axis_of(scc, 0), *nc = ts_axis_of(scc, 1);
	tu_ok(ctx, ts_split(scc, ts_reduce_axis_of(scc, 0), 4, &ko, &ki));
	tu_ok(ctx, ts_reorder(scc, TS_AXES(ko, mc, ki, nc)));
	tu_ok(ctx, ts_vectorize(scc, nc));
	tu_ok(ctx, ts_unroll(scc, ki));
	tu_ok(ctx, ts_vectorize(m->sc, ni));
	tu_ok(ctx, ts_parallel(m->sc, mo));
}

static void s_cache_read(mm *m)
{
	ts_tensor *AA = ts_cache_read(m->s, m->A, TS_SCOPE_LOCAL, 1, &m->C);
	tu_nonnull(m->ctx, AA);
	ts_axis *ko, *ki;
	tu_ok(m->ctx, ts_split(m->sc, RAX(m, 0), 4, &ko, &ki));
	tu_ok(m->ctx, ts_compute_at(ts_stage_of(m->s, AA), m->sc, ko));
}

/* A read and written through two caches each: every cache its own stage,
 * named apart as rfactor names C.rf2 (the schedule's text tells them
 * apart), and the result unchanged. */
static void s_caches_twice(mm *m)
{
	ts_tensor *A1 = ts_cache_read(m->s, m->A, TS_SCOPE_LOCAL, 1, &m->C);
	ts_tensor *A2 = ts_cache_read(m->s, A1, TS_SCOPE_LOCAL, 1, &m->C);
	ts_tensor *A3 = ts_cache_read(m->s, m->A, TS_SCOPE_LOCAL, 1, &A1);
	ts_tensor *C1 = ts_cache_write(m->s, m->C, TS_SCOPE_LOCAL);
	ts_tensor *C2 = ts_cache_write(m->s, m->C, TS_SCOPE_LOCAL);
	tu_nonnull(m->ctx, A3);
	tu_nonnull(m->ctx, C2);
	ck_assert_str_eq(A1->name, "A.local");
	ck_assert_str_eq(A2->name, "A.local.local");
	ck_assert_str_eq(A3->name, "A.local2");
	ck_assert_str_eq(C1->name, "C.local");
	ck_assert_str_eq(C2->name, "C.local2");
	const char *text = ts_schedule_str(m->s);
	ck_assert_ptr_nonnull(strstr(text, "stage C.local2:"));
	ck_assert_ptr_nonnull(strstr(text, "stage A.local2:"));
}

/* A GPU-style schedule: bound blocks and threads, a shared tile filled
 * cooperatively and a local accumulator (run serially by the interpreter). */
static void s_gpu(mm *m)
{
	ts_ctx *ctx = m->ctx;
	ts_tensor *AS = ts_cache_read(m->s, m->A, TS_SCOPE_SHARED, 1, &m->C);
	ts_tensor *CL = ts_cache_write(m->s, m->C, TS_SCOPE_LOCAL);
	tu_nonnull(ctx, CL);
	ts_axis *by, *bx, *ty, *tx, *ko, *ki;
	tu_ok(ctx, ts_tile(m->sc, AX(m, 0), AX(m, 1), 4, 4, &by, &bx, &ty, &tx));
	tu_ok(ctx, ts_bind(m->sc, by, TS_BLOCK_Y));
	tu_ok(ctx, ts_bind(m->sc, bx, TS_BLOCK_X));
	tu_ok(ctx, ts_bind(m->sc, ty, TS_THREAD_Y));
	tu_ok(ctx, ts_bind(m->sc, tx, TS_THREAD_X));
	ts_stage *cl = ts_stage_of(m->s, CL);
	tu_ok(ctx, ts_compute_at(cl, m->sc, tx));
	tu_ok(ctx, ts_split(cl, ts_reduce_axis_of(cl, 0), 4, &ko, &ki));
	ts_stage *as = ts_stage_of(m->s, AS);
	tu_ok(ctx, ts_compute_at(as, cl, ko));
}

START_TEST(test_primitives_alone)
{
	each_shape(s_default);
	each_shape(s_split);
	each_shape(s_split_partition);
	each_shape(s_split_nparts);
	each_shape(s_split_reduce);
	each_shape(s_tile);
	each_shape(s_fuse);
	each_shape(s_reorder);
	each_shape(s_vectorize);
	each_shape(s_parallel);
	each_shape(s_unroll);
}
END_TEST

START_TEST(test_combinations)
{
	each_shape(s_tile_all);
	each_shape(s_opt_gemm);
	each_shape(s_cache_read);
	each_shape(s_caches_twice);
	each_shape(s_gpu);
}
END_TEST

/* D = relu(C + bias), with C inlined or computed at D. */
static ts_tensor *relu_bias(ts_ctx *ctx, ts_tensor *C, ts_tensor *bias)
{
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_expr *v = ts_add(ctx, TS_READ(ctx, C, i, j), TS_READ(ctx, bias, j));
	return ts_compute(ctx, "D", TS_SHAPE(C->shape[0], C->shape[1]), TS_VARS(i, j),
			  ts_max(ctx, v, ts_float(ctx, 0)));
}

START_TEST(test_inline_and_compute_at)
{
	for (int variant = 0; variant < 3; variant++) {
		ts_ctx *ctx = ts_ctx_new();
		ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(19, 13), ts_float32);
		ts_tensor *bias = ts_placeholder(ctx, "bias", TS_SHAPE(13), ts_float32);
		ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
		ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(19, 13), TS_VARS(i, j),
					  ts_mul(ctx, TS_READ(ctx, A, i, j), ts_float(ctx, 2)));
		ts_tensor *D = relu_bias(ctx, C, bias);
		ts_schedule *s = ts_create_schedule(ctx, 1, &D);
		ts_stage *sd = ts_stage_of(s, D), *scs = ts_stage_of(s, C);
		ts_axis *o, *in;
		tu_ok(ctx, ts_split(sd, ts_axis_of(sd, 0), 4, &o, &in));
		if (variant == 0)
			tu_ok(ctx, ts_compute_inline(scs));
		else if (variant == 1)
			tu_ok(ctx, ts_compute_at(scs, sd, o));
		else
			tu_ok(ctx, ts_compute_root(scs));
		tu_check_func(ctx, ts_lower(s, "relu_bias", 3, (ts_tensor *[]){A, bias, D}), 1e-6);
		ts_ctx_free(ctx);
	}
}
END_TEST

/* Padding computed at the conv's output rows (TVM's conv2d schedules). */
START_TEST(test_conv2d_pad_compute_at)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, 3, 11, 9), ts_float32);
	ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(4, 3, 3, 3), ts_float32);
	ts_tensor *Y = ts_op_conv2d_nchw(ctx, X, W, 2, 2, 1, 1, 1, 1, 1);
	tu_nonnull(ctx, Y);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	ts_stage *sy = ts_stage_of(s, Y);
	ts_tensor *P = Y->inputs[0];
	ts_stage *sp = ts_stage_of(s, P);
	tu_nonnull(ctx, sp);
	ts_axis *ho, *hi;
	tu_ok(ctx, ts_split(sy, ts_axis_of(sy, 2), 2, &ho, &hi));
	tu_ok(ctx, ts_compute_at(sp, sy, ho));
	const char *bounds = ts_schedule_bounds_str(s);
	tu_nonnull(ctx, bounds);
	ck_assert_msg(strstr(bounds, "compute_at") != NULL, "%s", bounds);
	tu_check_func(ctx, ts_lower(s, "conv", 3, (ts_tensor *[]){X, W, Y}), 1e-5);
	ts_ctx_free(ctx);
}
END_TEST

/* The bounds printer is a printer: a pending error neither empties it nor
 * is lost, and a schedule lowering refuses gives the reason as text and
 * leaves no error that would hide the caller's next one. */
START_TEST(test_bounds_str_keeps_errors)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(8, 8), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_tensor *P = ts_compute(ctx, "P", TS_SHAPE(8, 8), TS_VARS(i, j),
				  ts_add(ctx, TS_READ(ctx, A, i, j), ts_float(ctx, 1)));
	ts_expr *y = ts_var(ctx, "y"), *x = ts_var(ctx, "x");
	ts_tensor *Q = ts_compute(ctx, "Q", TS_SHAPE(8, 8), TS_VARS(y, x),
				  ts_mul(ctx, TS_READ(ctx, P, y, x), ts_float(ctx, 2)));
	ts_expr *u = ts_var(ctx, "u"), *v = ts_var(ctx, "v");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(8, 8), TS_VARS(u, v),
				  ts_sub(ctx, TS_READ(ctx, Q, u, v), ts_float(ctx, 3)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sp = ts_stage_of(s, P), *sq = ts_stage_of(s, Q), *sc = ts_stage_of(s, C);
	ts_axis *o, *in;
	tu_ok(ctx, ts_compute_at(sq, sc, ts_axis_of(sc, 0)));
	const char *clean = ts_schedule_bounds_str(s);
	tu_nonnull(ctx, clean);
	/* with the caller's error pending: the same text, the error kept */
	ck_assert_int_ne(ts_split(sc, ts_axis_of(sc, 1), 0, &o, &in), TS_OK);
	char pending[256];
	snprintf(pending, sizeof pending, "%s", ts_last_error(ctx));
	const char *again = ts_schedule_bounds_str(s);
	ck_assert_ptr_nonnull(again);
	ck_assert_str_eq(again, clean);
	ck_assert_str_eq(ts_last_error(ctx), pending);
	ck_assert_msg(strstr(ts_schedule_str(s), "after bound inference:"), "%s", ts_schedule_str(s));
	ck_assert_str_eq(ts_last_error(ctx), pending);
	ts_clear_error(ctx);
	/* a schedule lowering refuses: the reason as text, no error left */
	tu_ok(ctx, ts_compute_root(sq));
	tu_ok(ctx, ts_compute_at(sp, sc, ts_axis_of(sc, 1)));
	const char *bad = ts_schedule_bounds_str(s);
	ck_assert_ptr_nonnull(bad);
	ck_assert_msg(strstr(bad, "(lowering fails: compute_at(P)"), "%s", bad);
	ck_assert_int_eq(ts_last_status(ctx), TS_OK);
	ck_assert_int_ne(ts_split(sc, ts_axis_of(sc, 0), -3, &o, &in), TS_OK);
	ck_assert_msg(strstr(ts_last_error(ctx), "split"), "%s", ts_last_error(ctx));
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_softmax_like)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(7, 10), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 10), *k2 = ts_reduce_axis(ctx, "k2", 0, 10);
	ts_expr *i = ts_var(ctx, "i"), *i2 = ts_var(ctx, "i");
	ts_tensor *M = ts_compute(ctx, "M", TS_SHAPE(7), TS_VARS(i), TS_MAX(ctx, TS_READ(ctx, X, i, k->var), k));
	ts_tensor *S = ts_compute(ctx, "S", TS_SHAPE(7), TS_VARS(i2),
				  TS_SUM(ctx, ts_exp(ctx, ts_sub(ctx, TS_READ(ctx, X, i2, k2->var), TS_READ(ctx, M, i2))), k2));
	ts_schedule *s = ts_create_schedule(ctx, 1, &S);
	ts_stage *ss = ts_stage_of(s, S);
	tu_ok(ctx, ts_compute_at(ts_stage_of(s, M), ss, ts_axis_of(ss, 0)));
	tu_check_func(ctx, ts_lower(s, "softmax_sum", 2, (ts_tensor *[]){X, S}), 1e-5);
	ts_ctx_free(ctx);
}
END_TEST

/* The printed schedule shows the relations and the loop order. */
START_TEST(test_schedule_print)
{
	mm m = tu_matmul(64, 64, 64);
	s_tile_all(&m);
	tu_assert_golden("schedule_tile_all.txt", ts_schedule_str(m.s));
	ts_ctx_free(m.ctx);
}
END_TEST

/* Every pass can be the last, its output printed; TESSERA_PRINT_PASSES's
 * switch prints them all; bound inference prints each stage's region. */
START_TEST(test_passes_and_bounds)
{
	mm m = tu_matmul(37, 29, 23);
	s_opt_gemm(&m);
	ts_ctx *ctx = m.ctx;
	ts_tensor *args[3] = {m.A, m.B, m.C};
	const char *expect[] = {"realize C.global", "allocate C.global", "allocate C.global",
				"allocate C.global", "allocate C.global", "allocate C.global",
				"allocate C.global", "vectorized"};
	ck_assert_int_eq(TS_COUNT_OF(expect), 8);
	for (int i = 0; ts_lower_pass_names[i]; i++) {
		ts_func *f = ts_lower_until(m.s, "mm", 3, args, ts_lower_pass_names[i]);
		tu_nonnull(ctx, f);
		const char *text = ir_func_str(ctx, f);
		ck_assert_msg(strstr(text, expect[i]) != NULL, "after %s:\n%s", ts_lower_pass_names[i], text);
	}
	/* unrolled k: four copies after unroll, one loop before */
	const char *before = ir_func_str(ctx, ts_lower_until(m.s, "mm", 3, args, "loop_partition"));
	const char *after = ir_func_str(ctx, ts_lower_until(m.s, "mm", 3, args, "unroll"));
	ck_assert_ptr_nonnull(strstr(before, "unrolled (k.inner"));
	ck_assert_ptr_null(strstr(after, "unrolled (k.inner"));
	ck_assert_ptr_null(ts_lower_until(m.s, "mm", 3, args, "no_such_pass"));
	tu_assert_error(ctx, "lower(mm): unknown pass 'no_such_pass'");
	ts_clear_error(ctx);

	FILE *tmp = tmpfile();
	ck_assert_ptr_nonnull(tmp);
	int saved = dup(fileno(stderr));
	fflush(stderr);
	dup2(fileno(tmp), fileno(stderr));
	ts_ctx_set_print_passes(ctx, 1);
	ts_func *f = ts_lower(m.s, "mm", 3, args);
	ts_ctx_set_print_passes(ctx, 0);
	fflush(stderr);
	dup2(saved, fileno(stderr));
	close(saved);
	tu_nonnull(ctx, f);
	char buf[1 << 16];
	rewind(tmp);
	size_t n = fread(buf, 1, sizeof(buf) - 1, tmp);
	buf[n] = '\0';
	fclose(tmp);
	for (int i = 1; ts_lower_pass_names[i]; i++) {
		char head[64];
		snprintf(head, sizeof(head), "// ---- after %s", ts_lower_pass_names[i]);
		ck_assert_msg(strstr(buf, head) != NULL, "missing '%s'", head);
	}
	tu_assert_golden("schedule_opt_gemm_bounds.txt", ts_schedule_bounds_str(m.s));
	ts_ctx_free(ctx);
}
END_TEST

/* ---- errors: each names the primitive, the stage, the axis and the rule --- */

START_TEST(test_errors)
{
	mm m = tu_matmul(16, 16, 16);
	ts_ctx *ctx = m.ctx;
	ts_axis *o, *i, *f, *o2, *i2;
	ts_axis *x = AX(&m, 0), *y = AX(&m, 1), *k = RAX(&m, 0);

	ck_assert_int_ne(ts_split(m.sc, x, 0, &o, &i), TS_OK);
	tu_assert_error(ctx, "split(C): factor must be positive, got 0");
	ts_clear_error(ctx);
	ck_assert_int_ne(ts_split_nparts(m.sc, x, -2, &o, &i), TS_OK);
	tu_assert_error(ctx, "split(C): nparts must be positive, got -2");
	ts_clear_error(ctx);
	int64_t n = ts_size_var(ctx, "n", 64);
	ck_assert_int_ne(ts_split(m.sc, x, n, &o, &i), TS_OK);
	tu_assert_error(ctx, "split(C): factor is a size variable (ts_size_var); it must be a constant");
	ts_clear_error(ctx);
	ck_assert_int_ne(ts_tile(m.sc, x, y, 4, n, &o, &i, &o2, &i2), TS_OK);
	tu_assert_error(ctx, "tile(C): factor is a size variable (ts_size_var); it must be a constant");
	ts_clear_error(ctx);
	{
		/* an annotated axis keeps its annotation: splitting or fusing it,
		 * which would drop it silently, is refused */
		mm a = tu_matmul(8, 8, 8);
		ts_axis *ax = AX(&a, 0), *ay = AX(&a, 1);
		tu_ok(a.ctx, ts_vectorize(a.sc, ay));
		ck_assert_int_ne(ts_split(a.sc, ay, 4, &o, &i), TS_OK);
		tu_assert_error(a.ctx, "split(C): axis 'j' is vectorized; split it before annotating it");
		ts_clear_error(a.ctx);
		ck_assert_int_ne(ts_fuse(a.sc, ax, ay, &f), TS_OK);
		tu_assert_error(a.ctx, "fuse(C): axis 'j' is vectorized; fuse it before annotating it");
		ts_clear_error(a.ctx);
		tu_ok(a.ctx, ts_parallel(a.sc, ax));
		ck_assert_int_ne(ts_split(a.sc, ax, 2, &o, &i), TS_OK);
		tu_assert_error(a.ctx, "axis 'i' is parallel; split it before annotating it");
		ts_ctx_free(a.ctx);
	}

	tu_ok(ctx, ts_split(m.sc, x, 4, &o, &i));
	ck_assert_int_ne(ts_split(m.sc, x, 2, &o2, &i2), TS_OK);
	tu_assert_error(ctx, "split(C): axis 'i' is no longer a leaf");
	ts_clear_error(ctx);

	mm other = tu_matmul(8, 8, 8);
	ck_assert_int_ne(ts_vectorize(m.sc, AX(&other, 0)), TS_OK);
	tu_assert_error(ctx, "vectorize(C): axis 'i' does not belong to this stage");
	ts_clear_error(ctx);
	ts_ctx_free(other.ctx);

	ck_assert_int_ne(ts_reorder(m.sc, TS_AXES(i, o, i)), TS_OK);
	tu_assert_error(ctx, "reorder(C): axis 'i.inner' appears twice");
	ts_clear_error(ctx);

	ck_assert_int_ne(ts_fuse(m.sc, o, y, &f), TS_OK);
	tu_assert_error(ctx, "fuse(C): axes 'i.outer' and 'j' are not adjacent");
	ts_clear_error(ctx);
	ck_assert_int_ne(ts_fuse(m.sc, o, o, &f), TS_OK);
	tu_assert_error(ctx, "fuse(C): outer and inner are the same axis ('i.outer')");
	ts_clear_error(ctx);
	ck_assert_int_ne(ts_fuse(m.sc, y, k, &f), TS_OK);
	tu_assert_error(ctx, "fuse(C): cannot fuse a data-parallel axis with a reduction axis ('k')");
	ts_clear_error(ctx);

	ck_assert_int_ne(ts_vectorize(m.sc, k), TS_OK);
	tu_assert_error(ctx, "vectorize(C): axis 'k' is a reduction axis");
	ts_clear_error(ctx);
	ck_assert_int_ne(ts_parallel(m.sc, k), TS_OK);
	tu_assert_error(ctx, "parallel(C): axis 'k' is a reduction axis");
	ts_clear_error(ctx);
	ck_assert_int_ne(ts_set_scope(m.sc, TS_SCOPE_SHARED), TS_OK);
	tu_assert_error(ctx, "set_scope(C): C is an output of the schedule and lives in global memory");
	ts_clear_error(ctx);

	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_errors_limits_and_bind)
{
	mm m = tu_matmul(256, 2048, 8);
	ts_ctx *ctx = m.ctx;
	ts_axis *o, *i;
	ck_assert_int_ne(ts_vectorize(m.sc, AX(&m, 0)), TS_OK);
	tu_assert_error(ctx, "vectorize(C): extent 256 of axis 'i' exceeds the limit of 64 lanes");
	ts_clear_error(ctx);
	ck_assert_int_ne(ts_unroll(m.sc, AX(&m, 1)), TS_OK);
	tu_assert_error(ctx, "unroll(C): extent 2048 of axis 'j' exceeds the unroll limit of 1024");
	ts_clear_error(ctx);
	tu_ok(ctx, ts_split(m.sc, AX(&m, 1), 32, &o, &i));
	tu_ok(ctx, ts_bind(m.sc, i, TS_THREAD_X));
	ck_assert_int_ne(ts_bind(m.sc, o, TS_THREAD_X), TS_OK);
	tu_assert_error(ctx, "bind(C): threadIdx.x is already bound to axis 'j.inner'");
	ts_clear_error(ctx);
	ck_assert_int_ne(ts_bind(m.sc, RAX(&m, 0), TS_BLOCK_X), TS_OK);
	tu_assert_error(ctx, "bind(C): axis 'k' is a reduction axis");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_errors_attach)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(8, 8), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_tensor *B = ts_compute(ctx, "B", TS_SHAPE(8, 8), TS_VARS(i, j),
				  ts_add(ctx, TS_READ(ctx, A, i, j), ts_float(ctx, 1)));
	ts_expr *i2 = ts_var(ctx, "i"), *j2 = ts_var(ctx, "j");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(8, 8), TS_VARS(i2, j2),
				  ts_mul(ctx, TS_READ(ctx, B, i2, j2), ts_float(ctx, 3)));
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 8);
	ts_expr *i3 = ts_var(ctx, "i");
	ts_tensor *R = ts_compute(ctx, "R", TS_SHAPE(8), TS_VARS(i3), TS_SUM(ctx, TS_READ(ctx, C, i3, k->var), k));
	ts_expr *i4 = ts_var(ctx, "i");
	ts_tensor *E = ts_compute(ctx, "E", TS_SHAPE(8), TS_VARS(i4),
				  ts_add(ctx, TS_READ(ctx, R, i4), TS_READ(ctx, A, i4, i4)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &E);
	ts_stage *sb = ts_stage_of(s, B), *sc = ts_stage_of(s, C), *sr = ts_stage_of(s, R),
		 *se = ts_stage_of(s, E);

	/* R reads B through C: legal once C is inside R's loop too */
	tu_ok(ctx, ts_compute_at(sb, sr, ts_axis_of(sr, 0)));
	ck_assert_ptr_null(ts_lower(s, "chain", 2, (ts_tensor *[]){A, E}));
	tu_assert_error(ctx, "compute_at(B): stage C reads B but is not computed inside R's loop 'i'");
	ts_clear_error(ctx);

	tu_ok(ctx, ts_compute_at(sc, sr, ts_axis_of(sr, 0)));
	ck_assert_int_ne(ts_compute_at(sr, sc, ts_axis_of(sc, 0)), TS_OK);
	tu_assert_error(ctx, "compute_at(R): stage C does not read R");
	ts_clear_error(ctx);
	tu_ok(ctx, ts_compute_at(sb, sc, ts_axis_of(sc, 1)));
	ck_assert_int_ne(ts_compute_at(sc, sb, ts_axis_of(sb, 0)), TS_OK);
	tu_assert_error(ctx, "compute_at(C)");
	ts_clear_error(ctx);

	ck_assert_int_ne(ts_compute_inline(sr), TS_OK);
	tu_assert_error(ctx, "compute_inline(R): R is a reduction and cannot be inlined");
	ts_clear_error(ctx);
	ck_assert_int_ne(ts_compute_inline(se), TS_OK);
	tu_assert_error(ctx, "compute_inline(E): E is an output of the schedule and cannot be inlined");
	ts_clear_error(ctx);

	/* the legal parts still lower and run correctly */
	tu_check_func(ctx, ts_lower(s, "chain", 2, (ts_tensor *[]){A, E}), 1e-5);
	ck_assert_ptr_null(ts_lower(s, "chain", 1, (ts_tensor *[]){E}));
	tu_assert_error(ctx, "lower(chain): placeholder A is not in the argument list");
	ts_ctx_free(ctx);
}
END_TEST

/* A padding's border tests are likely() hints: loop_partition splits the
 * rows and the columns that cross a border into head, interior and tail,
 * and the interior reads X with neither the test nor the clamps.  Padded
 * both sides, one side, and wider than the image; results against the
 * reference evaluator. */
START_TEST(test_partition_padding)
{
	static const int64_t cases[][5] = {
		/* h, w, pad before, pad after, (unused) */
		{9, 13, 1, 1, 0}, {9, 13, 2, 0, 0}, {5, 3, 4, 6, 0}, {1, 1, 1, 1, 0},
	};
	for (size_t k = 0; k < TS_COUNT_OF(cases); k++) {
		ts_ctx *ctx = ts_ctx_new();
		const int64_t *c = cases[k];
		ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(c[0], c[1]), ts_float32);
		ts_tensor *P = ts_op_pad(ctx, X, (int64_t[]){c[2], c[2]}, (int64_t[]){c[3], c[3]}, 0.25);
		tu_nonnull(ctx, P);
		ts_schedule *s = ts_create_schedule(ctx, 1, &P);
		ts_func *f = ts_lower(s, "pad", 2, (ts_tensor *[]){X, P});
		tu_nonnull(ctx, f);
		const char *text = ir_func_str(ctx, f);
		ck_assert_msg(!strstr(text, "likely"), "a likely() left:\n%s", text);
		/* an interior exists where the image is wider than 2 */
		if (c[0] > 2 && c[1] > 2)
			ck_assert_msg(strstr(text, "= X[") != NULL, "no unguarded interior:\n%s", text);
		tu_check_func(ctx, f, 0);
		ts_ctx_free(ctx);
	}
}
END_TEST

static bool count_stmt(ts_stmt *s, void *data)
{
	*(int64_t *)data += s->kind != IR_S_SEQ;
	return true;
}

/* A chain of padded convolutions, each (with its padding) computed at the
 * innermost data loop of the next: partitioning the padding's tests copies
 * the nests inside every border loop, and the copies multiply down the
 * chain (four levels: 46 statements became 3276, LLVM took 14 s).  The
 * copies stop at the pass's budget, the rest keeping their tests; the
 * results stay the reference evaluator's. */
START_TEST(test_partition_growth_bounded)
{
	for (int depth = 2; depth <= 5; depth++) {
		ts_ctx *ctx = ts_ctx_new();
		ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, 1, 2, 9), ts_int32), *args[8], *convs[8];
		int nargs = 0;
		args[nargs++] = X;
		ts_tensor *cur = X;
		for (int d = 0; d < depth; d++) {
			char name[8];
			snprintf(name, sizeof(name), "W%d", d);
			ts_tensor *W = ts_placeholder(ctx, name, TS_SHAPE(1, 1, 3, 3), ts_int32);
			args[nargs++] = W;
			convs[d] = cur = ts_op_conv2d_nchw(ctx, cur, W, 1, 1, 1, 1, 1, 1, 1);
			tu_nonnull(ctx, cur);
		}
		args[nargs++] = cur;
		ts_schedule *s = ts_create_schedule(ctx, 1, &cur);
		for (int d = depth - 1; d >= 0; d--) {
			ts_stage *conv = ts_stage_of(s, convs[d]), *pad = ts_stage_of(s, ts_op_stage(convs[d], "pad"));
			tu_ok(ctx, ts_compute_at(pad, conv, ts_axis_of(conv, 3)));
			if (d > 0) {
				ts_stage *prev = ts_stage_of(s, convs[d - 1]);
				tu_ok(ctx, ts_compute_at(prev, pad, ts_axis_of(pad, 3)));
			}
		}
		ts_func *f = ts_lower(s, "chain", nargs, args);
		tu_nonnull(ctx, f);
		int64_t n = 0;
		ir_stmt_visit(f->body, count_stmt, NULL, &n);
		ck_assert_msg(n < 1500, "depth %d: %lld statements", depth, (long long)n);
		if (depth <= 3)
			tu_check_func(ctx, f, 0);
		else
			tu_check_func_interp(ctx, f, 0);
		ts_ctx_free(ctx);
	}
}
END_TEST

START_TEST(test_compute_at_cycle)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(8), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *i2 = ts_var(ctx, "i"), *i3 = ts_var(ctx, "i");
	ts_tensor *B = ts_compute(ctx, "B", TS_SHAPE(8), TS_VARS(i), ts_exp(ctx, TS_READ(ctx, A, i)));
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(8), TS_VARS(i2), ts_exp(ctx, TS_READ(ctx, B, i2)));
	ts_tensor *D = ts_compute(ctx, "D", TS_SHAPE(8), TS_VARS(i3), ts_exp(ctx, TS_READ(ctx, C, i3)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &D);
	ts_stage *sb = ts_stage_of(s, B), *sc = ts_stage_of(s, C);
	tu_ok(ctx, ts_compute_at(sc, ts_stage_of(s, D), ts_axis_of(ts_stage_of(s, D), 0)));
	tu_ok(ctx, ts_compute_at(sb, sc, ts_axis_of(sc, 0)));
	/* a stage may only go inside a consumer, and data flow has no cycles, so
	 * the attempt to put C inside its own producer B is refused */
	ck_assert_int_ne(ts_compute_at(sc, sb, ts_axis_of(sb, 0)), TS_OK);
	tu_assert_error(ctx, "compute_at(C): stage B does not read C");
	ts_clear_error(ctx);
	tu_check_func(ctx, ts_lower(s, "chain", 2, (ts_tensor *[]){A, D}), 1e-5);
	ts_ctx_free(ctx);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("schedule");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_primitives_alone);
	tcase_add_test(tc, test_combinations);
	tcase_add_test(tc, test_inline_and_compute_at);
	tcase_add_test(tc, test_conv2d_pad_compute_at);
	tcase_add_test(tc, test_softmax_like);
	tcase_add_test(tc, test_schedule_print);
	tcase_add_test(tc, test_passes_and_bounds);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_errors_limits_and_bind);
	tcase_add_test(tc, test_errors_attach);
	tcase_add_test(tc, test_compute_at_cycle);
	tcase_add_test(tc, test_partition_padding);
	tcase_add_test(tc, test_partition_growth_bounded);
	tcase_add_test(tc, test_bounds_str_keeps_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
