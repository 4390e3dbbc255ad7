/*
 * test_op_schedules.c - the operator library's default schedules give the
 * reference result (loop-IR interpreter), for shapes the tiles divide and
 * shapes they do not.
 */
#include "testutil.h"

#include <string.h>

#include "lower.h"
#include "op_schedules.h"
#include "printer.h"

static void check_matmul_cpu(int64_t M, int64_t N, int64_t K, ts_matmul_cpu_params p)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(M, K), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(K, N), ts_float32);
	ts_tensor *C = ts_op_matmul_packed(ctx, A, B, p.nr);
	tu_nonnull(ctx, C);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	tu_ok(ctx, ts_schedule_matmul_cpu(s, C, &p));
	tu_check_func(ctx, ts_lower(s, "gemm", 3, (ts_tensor *[]){A, B, C}), 1e-4);
	ts_ctx_free(ctx);
}

START_TEST(test_matmul_cpu)
{
	ts_matmul_cpu_params p = ts_matmul_cpu_default();
	check_matmul_cpu(24, 64, 16, p);
	check_matmul_cpu(37, 45, 29, p);
	p = (ts_matmul_cpu_params){.mr = 3, .nr = 8, .kunroll = 2, .parallel = false};
	check_matmul_cpu(10, 13, 7, p);
}

/* Where B is packed: every mode, serial and parallel, few panels (6) and
 * many (25), a panel width the packing does not share (B packed by 16,
 * blocks of 8), shapes the blocks do not divide; the interpreter and the
 * LLVM build both give the reference.  The loop IR shows the placement: per
 * panel, Bp is allocated inside the panel loop; ahead, before the fused
 * tile loop. */
static void check_pack(int64_t N, int64_t pack_nr, ts_pack_mode mode, bool parallel)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(19, 13), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(13, N), ts_float32);
	ts_tensor *C = ts_op_matmul_packed(ctx, A, B, pack_nr);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_matmul_cpu_params p = {.mr = 4, .nr = 8, .kunroll = 2, .parallel = parallel, .pack = mode};
	tu_ok(ctx, ts_schedule_matmul_cpu(s, C, &p));
	ts_func *f = ts_lower(s, "gemm", 3, (ts_tensor *[]){A, B, C});
	tu_nonnull(ctx, f);
	char what[96];
	snprintf(what, sizeof what, "N %lld, packed by %lld, pack %d, parallel %d", (long long)N,
		 (long long)pack_nr, (int)mode, (int)parallel);
	tu_set_context(what);
	tu_check_func(ctx, f, 1e-4);
	tu_check_func_llvm(ctx, f, NULL, 1e-4);
	tu_set_context(NULL);
	bool panel = mode == TS_PACK_PANEL || (mode == TS_PACK_AUTO && (!parallel || N / 8 >= 16));
	const char *ir = ir_func_str(ctx, f), *loop = strstr(ir, "(j.outer, 0, ");
	const char *alloc = strstr(ir, "allocate Bp"), *fused = strstr(ir, "j.outer.i.outer.fused");
	ck_assert_msg(panel ? loop && alloc && loop < alloc && !fused : fused && alloc < fused,
		      "%s: B packed %s expected:\n%s", what, panel ? "per panel" : "ahead", ir);
	if (parallel)
		ck_assert_msg(strstr(ir, panel ? "parallel (j.outer, 0, " : "parallel (j.outer.i.outer.fused"),
			      "%s: the wrong loop is parallel:\n%s", what, ir);
	ts_ctx_free(ctx);
}

START_TEST(test_matmul_cpu_pack)
{
	static const ts_pack_mode modes[] = {TS_PACK_AUTO, TS_PACK_AHEAD, TS_PACK_PANEL};
	for (int m = 0; m < 3; m++)
		for (int par = 0; par < 2; par++) {
			check_pack(45, 8, modes[m], par);  /* 6 panels */
			check_pack(197, 8, modes[m], par); /* 25 panels */
		}
	check_pack(45, 16, TS_PACK_PANEL, true);
}
END_TEST

/* The reduction in chunks of kc: chunks that divide K and that do not
 * (a partial last chunk), rows, columns and unroll steps the blocks do not
 * divide, B packed (each mode) or read in place, serial and parallel; the
 * interpreter and the LLVM build give the reference.  A kc of K or more is
 * the whole reduction in registers (a local tile); below, C accumulates
 * in place, its chunk loop between the panels and the row tiles. */
static void check_k_chunks(int64_t kc, int64_t kunroll, bool packed, ts_pack_mode mode, bool parallel)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(21, 53), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(53, 45), ts_float32);
	ts_tensor *C = packed ? ts_op_matmul_packed(ctx, A, B, 16) : ts_op_matmul(ctx, A, B, false, false);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_matmul_cpu_params p = {.mr = 4, .nr = 16, .kunroll = kunroll, .parallel = parallel,
				  .pack = mode, .kc = kc};
	tu_ok(ctx, ts_schedule_matmul_cpu(s, C, &p));
	ts_func *f = ts_lower(s, "gemm", 3, (ts_tensor *[]){A, B, C});
	tu_nonnull(ctx, f);
	char what[96];
	snprintf(what, sizeof what, "kc %lld, kunroll %lld, packed %d, pack %d, parallel %d", (long long)kc,
		 (long long)kunroll, (int)packed, (int)mode, (int)parallel);
	tu_set_context(what);
	tu_check_func(ctx, f, 1e-4);
	tu_check_func_llvm(ctx, f, NULL, 1e-4);
	tu_set_context(NULL);
	const char *sched = ts_schedule_str(s), *ir = ir_func_str(ctx, f);
	bool chunked = kc < 53;
	ck_assert_msg((strstr(ir, " in local") == NULL) == chunked, "%s: local tile %s expected:\n%s", what,
		      chunked ? "not" : "", ir);
	if (chunked) {
		ck_assert_msg(strstr(sched, "loops: i.outer") == NULL && strstr(sched, "j.outer[") <
				      strstr(sched, "k.outer[") && strstr(sched, "k.outer[") < strstr(sched, "i.outer["),
			      "%s: panels, chunks, rows expected:\n%s", what, sched);
		if (parallel)
			ck_assert_msg(strstr(sched, "j.outer[3]@parallel"), "%s:\n%s", what, sched);
	}
	ts_ctx_free(ctx);
}

START_TEST(test_matmul_cpu_k_chunks)
{
	static const ts_pack_mode modes[] = {TS_PACK_AUTO, TS_PACK_AHEAD, TS_PACK_PANEL};
	for (int par = 0; par < 2; par++) {
		check_k_chunks(16, 4, false, TS_PACK_AUTO, par); /* 3 chunks and 5 left */
		check_k_chunks(20, 3, false, TS_PACK_AUTO, par);
		check_k_chunks(1, 1, false, TS_PACK_AUTO, par);
		for (int m = 0; m < 3; m++)
			check_k_chunks(24, 4, true, modes[m], par);
	}
	check_k_chunks(53, 4, false, TS_PACK_AUTO, true); /* the whole K: a local tile */
	check_k_chunks(INT64_MAX, 4, true, TS_PACK_AUTO, true);
}
END_TEST

/* Parameters and stages refused before anything changes: the schedule
 * still takes the defaults afterwards.  A stage scheduled already is
 * refused by name; a dense Y that is the matmul is refused as dense's.
 * Bp as an output of the schedule is packed ahead by default (a panel
 * buffer would not be Bp), and per panel refused by compute_at. */
/* The default by column count: with AVX-512, 8 x 48 where 48-wide panels
 * waste at most 1% of the columns more than 32-wide ones, else 6 x 32;
 * with AVX2 the one default.  A schedule given no parameters uses it, its
 * columns as wide as B's panels where B is packed.  Whether to pack, by
 * row count. */
START_TEST(test_matmul_cpu_default_for)
{
	ts_matmul_cpu_params d = ts_matmul_cpu_default();
	bool wide = ts_cpu_vector_lanes() == 16;
	int64_t three[] = {48, 96, 768, 1000, 2048, 2304, 3072, INT64_MAX - 15};
	int64_t two[] = {1, 16, 32, 64, 256, 512, 1024, 0, -48, INT64_MIN};
	for (size_t i = 0; i < TS_COUNT_OF(three); i++) {
		ts_matmul_cpu_params p = ts_matmul_cpu_default_for(three[i]);
		ck_assert_msg(p.mr == (wide ? 8 : d.mr) && p.nr == (wide ? 48 : d.nr), "n %lld: %lld x %lld",
			      (long long)three[i], (long long)p.mr, (long long)p.nr);
		ck_assert(p.kunroll == d.kunroll && p.parallel == d.parallel && p.pack == d.pack);
	}
	for (size_t i = 0; i < TS_COUNT_OF(two); i++) {
		ts_matmul_cpu_params p = ts_matmul_cpu_default_for(two[i]);
		ck_assert_msg(p.mr == d.mr && p.nr == d.nr, "n %lld: %lld x %lld", (long long)two[i],
			      (long long)p.mr, (long long)p.nr);
	}
	/* B packed from 512 rows with AVX-512, 32 elsewhere */
	int64_t from = wide ? 512 : 32;
	ck_assert(ts_matmul_cpu_packs(from) && ts_matmul_cpu_packs(INT64_MAX));
	ck_assert(!ts_matmul_cpu_packs(from - 1) && !ts_matmul_cpu_packs(0) && !ts_matmul_cpu_packs(INT64_MIN));
	/* NULL parameters: 96 columns in tiles of the default for 96, or of
	 * the packing's panels; results checked on 37 rows */
	for (int packed = 0; packed < 3; packed++) {
		ts_ctx *ctx = ts_ctx_new();
		ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(37, 20), ts_float32);
		ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(20, 96), ts_float32);
		int64_t panel = packed == 1 ? ts_matmul_cpu_default().nr : ts_matmul_cpu_default_for(96).nr;
		ts_tensor *C = packed ? ts_op_matmul_packed(ctx, A, B, panel) : ts_op_matmul(ctx, A, B, false, false);
		ts_schedule *s = ts_create_schedule(ctx, 1, &C);
		tu_ok(ctx, ts_schedule_matmul_cpu(s, C, NULL));
		char want[64];
		snprintf(want, sizeof want, "split j -> j.outer, j.inner (factor %lld)",
			 (long long)(packed ? panel : ts_matmul_cpu_default_for(96).nr));
		ck_assert_msg(strstr(ts_schedule_str(s), want), "%s", ts_schedule_str(s));
		tu_check_func(ctx, ts_lower(s, "gemm", 3, (ts_tensor *[]){A, B, C}), 1e-4);
		ts_ctx_free(ctx);
	}
}
END_TEST

/* The default by shape: with AVX-512 a long reduction read in place runs
 * in chunks of 256 where there are two column panels a thread, and not
 * with B packed (from 512 rows), a short K, few panels, AVX2, or an
 * epilogue (dense).  Given no parameters, a plain matmul takes the same
 * chunks; results checked on a shape no tile, panel or chunk divides. */
START_TEST(test_matmul_cpu_default_shape)
{
	bool wide = ts_cpu_vector_lanes() == 16;
	int threads = ts_num_threads();
	int64_t panels = 2 * threads * 48; /* columns of 2 panels a thread */
	ck_assert_int_eq(ts_matmul_cpu_default_shape(128, 3072, 3072).kc, wide && 3072 / 48 >= 2 * threads ? 256 : 0);
	ck_assert_int_eq(ts_matmul_cpu_default_shape(128, panels, 512).kc, wide ? 256 : 0);
	ck_assert_int_eq(ts_matmul_cpu_default_shape(128, panels, 511).kc, 0);
	ck_assert_int_eq(ts_matmul_cpu_default_shape(128, panels - 48, 4096).kc, 0);
	ck_assert_int_eq(ts_matmul_cpu_default_shape(512, panels, 4096).kc, 0); /* packed */
	ck_assert_int_eq(ts_matmul_cpu_default_shape(0, panels, 4096).kc, 0);
	ts_matmul_cpu_params d = ts_matmul_cpu_default_shape(128, panels, 600), f = ts_matmul_cpu_default_for(panels);
	ck_assert(d.mr == f.mr && d.nr == f.nr && d.kunroll == f.kunroll && d.prefetch == f.prefetch);
	for (int dense = 0; dense < 2; dense++) {
		ts_ctx *ctx = ts_ctx_new();
		ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(37, 600), ts_float32);
		ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(600, panels + 5), ts_float32);
		ts_tensor *C = ts_op_matmul(ctx, A, B, false, false);
		ts_tensor *Y = dense ? ts_op_relu(ctx, C) : C;
		ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
		tu_ok(ctx, ts_schedule_dense_cpu(s, Y, NULL));
		bool chunks = strstr(ts_schedule_str(s), "split k -> k.outer, k.inner (factor 256") != NULL;
		ck_assert_msg(chunks == (wide && !dense), "%s", ts_schedule_str(s));
		tu_check_func(ctx, ts_lower(s, "gemm", 3, (ts_tensor *[]){A, B, Y}), 1e-4);
		ts_ctx_free(ctx);
	}
}
END_TEST

START_TEST(test_matmul_cpu_refusals)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(20, 12), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(12, 90), ts_float32);
	ts_tensor *C = ts_op_matmul_packed(ctx, A, B, 16);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_matmul_cpu_params p = ts_matmul_cpu_default();
	p.nr = 80;
	ck_assert_int_eq(ts_schedule_matmul_cpu(s, C, &p), TS_ERR_INVALID);
	tu_assert_error(ctx, "schedule_matmul_cpu: parameter nr is 80; the columns of a register block are one vector of at most 64 lanes");
	ts_clear_error(ctx);
	p = ts_matmul_cpu_default();
	p.pack = (ts_pack_mode)7;
	ck_assert_int_eq(ts_schedule_matmul_cpu(s, C, &p), TS_ERR_INVALID);
	tu_assert_error(ctx, "schedule_matmul_cpu: parameter pack must be TS_PACK_AUTO, TS_PACK_AHEAD or TS_PACK_PANEL, got 7");
	ts_clear_error(ctx);
	p.pack = (ts_pack_mode)-1;
	ck_assert_int_eq(ts_schedule_dense_cpu(s, C, &p), TS_ERR_INVALID);
	tu_assert_error(ctx, "schedule_dense_cpu: parameter pack must be");
	ts_clear_error(ctx);
	p = ts_matmul_cpu_default();
	p.kc = -1;
	ck_assert_int_eq(ts_schedule_matmul_cpu(s, C, &p), TS_ERR_INVALID);
	tu_assert_error(ctx, "schedule_matmul_cpu: parameter kc must be 0 (the whole reduction at once) or positive, got -1");
	ts_clear_error(ctx);
	tu_ok(ctx, ts_schedule_matmul_cpu(s, C, NULL));
	tu_check_func(ctx, ts_lower(s, "gemm", 3, (ts_tensor *[]){A, B, C}), 1e-4);
	ck_assert_int_eq(ts_schedule_dense_cpu(s, C, NULL), TS_ERR_INVALID);
	tu_assert_error(ctx, "schedule_dense_cpu: C is already scheduled");
	ts_clear_error(ctx);
	ts_tensor *Y = ts_op_relu(ctx, C);
	ts_schedule *s2 = ts_create_schedule(ctx, 1, &Y);
	ts_axis *yo, *yi;
	tu_ok(ctx, ts_split(ts_stage_of(s2, Y), ts_axis_of(ts_stage_of(s2, Y), 0), 4, &yo, &yi));
	ck_assert_int_eq(ts_schedule_dense_cpu(s2, Y, NULL), TS_ERR_INVALID);
	tu_assert_error(ctx, "schedule_dense_cpu: relu is already scheduled");
	ts_clear_error(ctx);
	for (int panel = 0; panel < 2; panel++) {
		ts_tensor *out[2] = {C, C->inputs[1]};
		ts_schedule *s3 = ts_create_schedule(ctx, 2, out);
		p = (ts_matmul_cpu_params){.mr = 4, .nr = 16, .kunroll = 2, .parallel = false,
					   .pack = panel ? TS_PACK_PANEL : TS_PACK_AUTO};
		if (panel) {
			/* refused before anything changed: the schedule takes
			 * the next parameters */
			const char *before = ts_schedule_str(s3);
			ck_assert_int_eq(ts_schedule_matmul_cpu(s3, C, &p), TS_ERR_INVALID);
			tu_assert_error(ctx, "schedule_matmul_cpu: Bp is an output of the schedule, stored whole, "
					     "so it cannot be packed per panel (TS_PACK_PANEL)");
			ts_clear_error(ctx);
			ck_assert_str_eq(before, ts_schedule_str(s3));
			p.pack = TS_PACK_AHEAD;
		}
		tu_ok(ctx, ts_schedule_matmul_cpu(s3, C, &p));
		tu_check_func(ctx, ts_lower(s3, "gemm_bp", 4, (ts_tensor *[]){A, B, C, C->inputs[1]}), 1e-4);
	}
	ts_ctx_free(ctx);
}
END_TEST

/* unpacked B, and fewer rows than the register block */
START_TEST(test_matmul_cpu_plain)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(1, 40), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(40, 70), ts_float32);
	ts_tensor *C = ts_op_matmul(ctx, A, B, false, false);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	tu_ok(ctx, ts_schedule_matmul_cpu(s, C, NULL));
	tu_check_func(ctx, ts_lower(s, "dense", 3, (ts_tensor *[]){A, B, C}), 1e-4);
	ts_ctx_free(ctx);
}
END_TEST
END_TEST

/* C[i, j] = sum_k A[i, k] Bp[j / 8, k, j % 8]: B an input already packed
 * in panels of 8 columns, as the graph layer packs constant weights. */
static ts_tensor *matmul_prepacked(ts_ctx *ctx, ts_tensor *A, ts_tensor *Bp, int64_t n)
{
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, A->shape[1]);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j"), *eight = ts_int(ctx, 8);
	ts_expr *b = TS_READ(ctx, Bp, ts_floordiv(ctx, j, eight), k->var, ts_floormod(ctx, j, eight));
	return ts_compute(ctx, "C", TS_SHAPE(A->shape[0], n), TS_VARS(i, j),
			  TS_SUM(ctx, ts_mul(ctx, TS_READ(ctx, A, i, k->var), b), k));
}

/* prefetch: each k step of a tile fetches the B rows the next tile reads
 * (ts_prefetch_ahead on the tile loop) where B is an input of constant
 * extents read in place: plain, under a dense epilogue, and already packed
 * (kind 4: its panel index, floordiv(tile*8 + j, 8), is one panel, not
 * all of them), serial and parallel; not where B is packed by the
 * schedule (a stage of its own) nor symbolic.  Results are the
 * reference's either way, on blocks that do not divide the shape (4 x 8
 * tiles over 13 x 29, k 17 by 2). */
static void check_matmul_prefetch(int kind, bool prefetch, bool parallel)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(13, 17), ts_float32);
	int64_t n = kind == 3 ? ts_size_var(ctx, "n", 64) : 29;
	ts_tensor *B = kind == 4 ? ts_placeholder(ctx, "B", TS_SHAPE(4, 17, 8), ts_float32)
				 : ts_placeholder(ctx, "B", TS_SHAPE(17, n), ts_float32);
	ts_tensor *bias = ts_placeholder(ctx, "bias", TS_SHAPE(29), ts_float32);
	ts_tensor *C = kind == 1 ? ts_op_matmul_packed(ctx, A, B, 8)
		       : kind == 4 ? matmul_prepacked(ctx, A, B, 29)
				   : ts_op_matmul(ctx, A, B, false, false);
	ts_tensor *Y = kind == 2 ? ts_op_relu(ctx, ts_op_bias_add(ctx, C, bias, 1)) : C;
	tu_nonnull(ctx, Y);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	ts_matmul_cpu_params p = {.mr = 4, .nr = 8, .kunroll = 2, .parallel = parallel, .prefetch = prefetch};
	tu_ok(ctx, kind == 2 ? ts_schedule_dense_cpu(s, Y, &p) : ts_schedule_matmul_cpu(s, Y, &p));
	ts_func *f = kind == 2 ? ts_lower(s, "dense", 4, (ts_tensor *[]){A, B, bias, Y})
			       : ts_lower(s, "gemm", 3, (ts_tensor *[]){A, B, Y});
	tu_nonnull(ctx, f);
	char what[64];
	snprintf(what, sizeof what, "B %s, prefetch %d, parallel %d",
		 (const char *[]){"plain", "packed", "under an epilogue", "symbolic", "prepacked"}[kind],
		 (int)prefetch, (int)parallel);
	const char *ir = ir_func_str(ctx, f);
	bool fetched = strstr(ir, "prefetch(B[") != NULL;
	ck_assert_msg(fetched == (prefetch && kind != 1 && kind != 3), "%s: prefetch of B %s expected:\n%s",
		      what, fetched ? "not" : "", ir);
	/* prepacked, the box is two contiguous rows of one panel: a loop over
	 * its lines, none over the panels (taken whole, every panel was
	 * fetched at every step: the graph's BERT layer ran 4.5x slower) */
	ck_assert_msg(kind != 4 || !strstr(ir, "(pd, "), "%s: a prefetch loop over B's panels:\n%s", what, ir);
	if (kind != 3) {
		tu_set_context(what);
		tu_check_func(ctx, f, 1e-4);
		tu_check_func_llvm(ctx, f, NULL, 1e-4);
		tu_set_context(NULL);
	}
	ts_ctx_free(ctx);
}

START_TEST(test_matmul_cpu_prefetch)
{
	for (int kind = 0; kind < 5; kind++)
		for (int pf = 0; pf < 2; pf++)
			for (int par = 0; par < 2; par++)
				check_matmul_prefetch(kind, pf, par);
	/* the default fetches with AVX-512's blocks, as the convolutions do */
	ck_assert(ts_matmul_cpu_default().prefetch == (ts_cpu_vector_lanes() == 16));
	ck_assert(ts_matmul_cpu_default_for(768).prefetch == ts_matmul_cpu_default().prefetch);
}
END_TEST

/* Batch matmul, alone and with a scale-and-mask epilogue (attention's
 * scores), on shapes the register blocks do not divide. */
static ts_expr *scale_mask(ts_ctx *ctx, ts_expr *const *ax, void *user)
{
	ts_tensor **t = user; /* C, mask */
	ts_expr *c = ts_read(ctx, t[0], 3, ax);
	return ts_add(ctx, ts_mul(ctx, c, ts_float(ctx, 0.125f)), TS_READ(ctx, t[1], ax[1], ax[2]));
}

START_TEST(test_batch_matmul_cpu)
{
	static const int64_t shapes[][4] = {{3, 13, 37, 9}, {2, 1, 5, 17}, {4, 16, 64, 8}};
	for (int i = 0; i < 3; i++)
		for (int epi = 0; epi < 2; epi++) {
			const int64_t *d = shapes[i];
			ts_ctx *ctx = ts_ctx_new();
			ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(d[0], d[1], d[3]), ts_float32);
			ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(d[0], d[3], d[2]), ts_float32);
			ts_tensor *M = ts_placeholder(ctx, "M", TS_SHAPE(d[1], d[2]), ts_float32);
			ts_tensor *C = ts_op_batch_matmul(ctx, A, B, false, false);
			ts_tensor *Y = C;
			if (epi)
				Y = ts_compute_lambda(ctx, "Y", TS_SHAPE(d[0], d[1], d[2]), scale_mask,
						      (ts_tensor *[]){C, M});
			tu_nonnull(ctx, Y);
			ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
			ts_matmul_cpu_params p = ts_matmul_cpu_default();
			tu_ok(ctx, ts_schedule_batch_matmul_cpu(s, Y, i == 1 ? NULL : &p));
			ts_tensor *args[4] = {A, B, epi ? M : Y, Y};
			tu_check_func(ctx, ts_lower(s, "bmm", 3 + epi, args), 1e-4);
			ts_ctx_free(ctx);
		}
}
END_TEST

/* Unusual operands, under the matmul and the dense schedule: C = A x A
 * reads one tensor; relu(A) x relu(B) reads computed operands, which are
 * computed whole before the GEMM (B's not taken for a packing stage). */
START_TEST(test_matmul_unusual_operands)
{
	for (int self = 0; self < 2; self++)
		for (int dense = 0; dense < 2; dense++) {
			ts_ctx *ctx = ts_ctx_new();
			ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(19, self ? 19 : 30), ts_float32);
			ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(30, 45), ts_float32);
			ts_tensor *C = self ? ts_op_matmul(ctx, A, A, false, false)
					    : ts_op_matmul(ctx, ts_op_relu(ctx, A), ts_op_relu(ctx, B), false, false);
			tu_nonnull(ctx, C);
			ts_schedule *s = ts_create_schedule(ctx, 1, &C);
			tu_ok(ctx, dense ? ts_schedule_dense_cpu(s, C, NULL) : ts_schedule_matmul_cpu(s, C, NULL));
			ts_func *f = self ? ts_lower(s, "aa", 2, (ts_tensor *[]){A, C})
					  : ts_lower(s, "gemm", 3, (ts_tensor *[]){A, B, C});
			tu_check_func(ctx, f, 1e-4);
			tu_check_func_llvm(ctx, f, NULL, 1e-4);
			ts_ctx_free(ctx);
		}
}
END_TEST

START_TEST(test_conv2d_nchwc_cpu)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, 2, 9, 11, 4), ts_float32);
	ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(2, 2, 3, 3, 4, 8), ts_float32);
	ts_tensor *Y = ts_op_conv2d_nchwc(ctx, X, W, 1, 1, 1, 1, 1, 1);
	tu_nonnull(ctx, Y);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	ts_conv2d_cpu_params p = {.ow_block = 4, .parallel = true};
	tu_ok(ctx, ts_schedule_conv2d_nchwc_cpu(s, Y, &p));
	tu_check_func(ctx, ts_lower(s, "conv", 3, (ts_tensor *[]){X, W, Y}), 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

/* The channel blocks the default conv2d schedule is made for: powers of
 * two dividing the channels, and a default register block (ow_block
 * columns of out_block / lanes vectors, plus the weights' vectors and a
 * broadcast input) that fits the CPU's vector registers: 32 with AVX-512,
 * 16 with AVX2, where two vectors of 14 columns spilled every accumulator. */
START_TEST(test_conv2d_cpu_blocks)
{
	int lanes = ts_cpu_vector_lanes();
	ck_assert(lanes == 8 || lanes == 16);
	int regs = lanes == 16 ? 32 : 16;
	ck_assert_int_eq(ts_conv2d_cpu_default().ow_block, 0); /* chosen from the block */
	for (int64_t c = 1; c <= 4096; c++) {
		int64_t y = ts_conv2d_cpu_out_block(c), x = ts_conv2d_cpu_in_block(c);
		ck_assert_msg(y >= 1 && c % y == 0 && (y & (y - 1)) == 0, "out block %lld for %lld", (long long)y,
			      (long long)c);
		/* on a wide row, four vectors where they divide: 12 columns
		 * with AVX2, 56 with AVX-512 */
		int64_t yw = ts_conv2d_cpu_out_block_for(c, 56);
		ck_assert_int_eq(yw, c % (4 * lanes) == 0 ? 4 * lanes : y);
		ck_assert_int_eq(ts_conv2d_cpu_out_block_for(c, 28), lanes == 8 && c % 32 == 0 ? 32 : y);
		ck_assert_int_eq(ts_conv2d_cpu_out_block_for(c, 7), y);
		ck_assert_msg(x >= 1 && x <= 16 && c % x == 0 && (x & (x - 1)) == 0, "in block %lld for %lld",
			      (long long)x, (long long)c);
		int64_t dw = ts_depthwise_cpu_block(c);
		ck_assert_msg(dw >= 1 && dw <= lanes && c % dw == 0 && (dw & (dw - 1)) == 0 &&
				      (dw == lanes || c % (2 * dw) != 0),
			      "depthwise block %lld for %lld", (long long)dw, (long long)c);
		/* accumulators, weight vectors and broadcasts in registers:
		 * column by column up to two vectors (v weights, 1 input),
		 * vector by vector beyond (1 weight, ow inputs) */
		for (int64_t b = y; b <= yw; b *= 2) {
			int64_t v = (b + lanes - 1) / lanes, ow = ts_conv2d_cpu_ow_block(b);
			int64_t need = ow * v + (v <= 2 ? v + 1 : ow + 1);
			ck_assert_msg(ow >= 1 && ow <= 14 && need <= regs,
				      "%lld columns of %lld vectors need %lld registers of %d", (long long)ow,
				      (long long)v, (long long)need, regs);
		}
	}
	ck_assert_int_eq(ts_conv2d_cpu_ow_block(8), 14);
	ck_assert_int_eq(ts_conv2d_cpu_ow_block(4 * lanes), lanes == 8 ? 3 : 4); /* 16 accumulators at most */
	ck_assert_int_eq(ts_conv2d_cpu_ow_block(3 * lanes), lanes == 8 ? 3 : 5);
	ck_assert_int_eq(ts_conv2d_cpu_ow_block(0), 0);
	ck_assert_int_eq(ts_conv2d_cpu_ow_block(INT64_MIN), 0);
	ck_assert_int_eq(ts_conv2d_cpu_ow_block(INT64_MAX), 1);
	ck_assert_int_eq(ts_conv2d_cpu_out_block_for(0, 56), 0);
	ck_assert_int_eq(ts_conv2d_cpu_out_block_for(-32, 56), 0);
	ck_assert_int_eq(ts_conv2d_cpu_out_block_for(INT64_MIN, INT64_MIN), 0);
	ck_assert_int_eq(ts_conv2d_cpu_out_block_for(64, INT64_MIN), ts_conv2d_cpu_out_block(64));
	/* rows viewed as one: 1x1, stride 1, no padding, narrow rows, AVX2 */
	ck_assert_int_eq(ts_conv2d_cpu_row_width(1, 1, 1, 1, 0, 0, 7, 7), lanes == 8 ? 49 : 7);
	ck_assert_int_eq(ts_conv2d_cpu_row_width(1, 1, 1, 1, 0, 0, 14, 14), 14);
	ck_assert_int_eq(ts_conv2d_cpu_row_width(1, 1, 1, 1, 0, 0, 1, 7), 7);
	ck_assert_int_eq(ts_conv2d_cpu_row_width(3, 3, 1, 1, 2, 2, 7, 7), 7);
	ck_assert_int_eq(ts_conv2d_cpu_row_width(1, 1, 2, 2, 0, 0, 7, 7), 7);
	ck_assert_int_eq(ts_conv2d_cpu_row_width(1, 1, 1, 1, 1, 0, 7, 7), 7);
	ck_assert_int_eq(ts_conv2d_cpu_row_width(1, 1, 1, 1, 0, 0, INT64_MAX, 7), 7);
	ck_assert_int_eq(ts_conv2d_cpu_row_width(1, 1, 1, 1, 0, 0, -5, 7), 7);
	ck_assert_int_eq(ts_conv2d_cpu_row_width(1, 1, 1, 1, 0, 0, 7, -3), -3);
	/* with the channels: the fewest rows whose 3-column blocks (four
	 * vectors, AVX2) waste at most 1%; rows that reduce in chunks kept */
	bool avx2 = lanes == 8;
	ck_assert_int_eq(ts_conv2d_cpu_row_width_for(1, 1, 1, 1, 0, 0, 28, 28, 128, 32, 512), avx2 ? 392 : 28);
	ck_assert_int_eq(ts_conv2d_cpu_row_width_for(1, 1, 1, 1, 0, 0, 56, 56, 256, 32, 64), avx2 ? 224 : 56);
	ck_assert_int_eq(ts_conv2d_cpu_row_width_for(1, 1, 1, 1, 0, 0, 14, 14, 256, 32, 1024), avx2 ? 98 : 14);
	ck_assert_int_eq(ts_conv2d_cpu_row_width_for(1, 1, 1, 1, 0, 0, 6, 13, 32, 16, 64), avx2 ? 39 : 13);
	ck_assert_int_eq(ts_conv2d_cpu_row_width_for(1, 1, 1, 1, 0, 0, 14, 14, 1024, 32, 256), 14); /* chunks */
	ck_assert_int_eq(ts_conv2d_cpu_row_width_for(1, 1, 1, 1, 0, 0, 7, 7, 64, 16, 64), avx2 ? 49 : 7);
	ck_assert_int_eq(ts_conv2d_cpu_row_width_for(1, 1, 1, 1, 0, 0, 12, 12, 64, 16, 64), 12); /* 4 blocks */
	ck_assert_int_eq(ts_conv2d_cpu_row_width_for(1, 1, 1, 1, 0, 0, 13, 14, 64, 16, 64), avx2 ? 182 : 14);
	ck_assert_int_eq(ts_conv2d_cpu_row_width_for(1, 1, 1, 1, 0, 0, 28, 28, 24, 8, 24), 28); /* 14 columns */
	ck_assert_int_eq(ts_conv2d_cpu_row_width_for(1, 1, 1, 1, 0, 0, 20, 20, 24, 8, 24), avx2 ? 400 : 20);
	ck_assert_int_eq(ts_conv2d_cpu_row_width_for(3, 3, 1, 1, 2, 2, 28, 28, 128, 32, 512), 28);
	ck_assert_int_eq(ts_conv2d_cpu_row_width_for(1, 1, 2, 2, 0, 0, 28, 28, 128, 32, 512), 28);
	ck_assert_int_eq(ts_conv2d_cpu_row_width_for(1, 1, 1, 1, 0, 0, 28, 28, 128, 0, 512), 28);
	ck_assert_int_eq(ts_conv2d_cpu_row_width_for(1, 1, 1, 1, 0, 0, 28, 28, 128, 48, 512), 28);
	ck_assert_int_eq(ts_conv2d_cpu_row_width_for(1, 1, 1, 1, 0, 0, 28, 28, -128, 32, 512), 28);
	ck_assert_int_eq(ts_conv2d_cpu_row_width_for(1, 1, 1, 1, 0, 0, 28, 28, 128, 32, INT64_MIN), 28);
	ck_assert_int_eq(ts_conv2d_cpu_row_width_for(1, 1, 1, 1, 0, 0, 28, -3, 128, 32, 512), -3);
	ck_assert_int_eq(ts_conv2d_cpu_row_width_for(1, 1, 1, 1, 0, 0, INT64_MAX, 28, 128, 32, 512), 28);
	/* rows past the search (a prime): a bounded search, rows kept */
	ck_assert_int_eq(ts_conv2d_cpu_row_width_for(1, 1, 1, 1, 0, 0, 1000000007, 13, 32, 32, 32), 13);
	ck_assert_int_eq(ts_conv2d_cpu_row_width_for(1, 1, 1, 1, 0, 0, 1LL << 40, 13, 32, 32, 32), avx2 ? 104 : 13);
	ck_assert_int_eq(ts_conv2d_cpu_row_width_for(1, 1, 1, 1, 0, 0, 2305843009213693951LL, 13, 32, 32, 32),
			 13);
	ck_assert_int_eq(ts_conv2d_cpu_row_width_for(INT64_MIN, INT64_MAX, 0, -1, INT64_MIN, INT64_MAX, 0, 0, 0, 0,
						     0), 0);
	/* reduction chunks (AVX2, 1x1): where a block's weights pass 32 KB, the
	 * largest divisor of the input blocks whose chunk fits 16 KB */
	ck_assert_int_eq(ts_conv2d_cpu_rc_block(32, 32, 1, 1, 32), lanes == 8 ? 4 : 32); /* 1024 -> 256 */
	ck_assert_int_eq(ts_conv2d_cpu_rc_block(4, 32, 1, 1, 32), 4);  /* 16 KB: whole */
	ck_assert_int_eq(ts_conv2d_cpu_rc_block(8, 32, 1, 1, 32), 8); /* 32 KB: not over */
	ck_assert_int_eq(ts_conv2d_cpu_rc_block(9, 32, 1, 1, 32), lanes == 8 ? 3 : 9);
	/* 3x3, 16 blocks of 36 KB: none fits AVX2's 16 KB; 590 KB in all
	 * is over AVX-512's 512 KB, chunks of two (72 KB) */
	ck_assert_int_eq(ts_conv2d_cpu_rc_block(16, 32, 3, 3, 32), lanes == 8 ? 16 : 2);
	ck_assert_int_eq(ts_conv2d_cpu_rc_block(8, 32, 3, 3, 32), 8); /* 295 KB: whole */
	ck_assert_int_eq(ts_conv2d_cpu_rc_block(15, 32, 3, 3, 32), lanes == 8 ? 15 : 1);
	ck_assert_int_eq(ts_conv2d_cpu_rc_block(17, 32, 3, 3, 32), lanes == 8 ? 17 : 1); /* a prime */
	ck_assert_int_eq(ts_conv2d_cpu_rc_block(64, 8, 3, 3, 8), 64); /* 3x3: one reduction */
	ck_assert_int_eq(ts_conv2d_cpu_rc_block(64, 8, 1, 3, 8), 64);
	ck_assert_int_eq(ts_conv2d_cpu_rc_block(13, 32, 1, 1, 32), lanes == 8 ? 1 : 13); /* a prime */
	ck_assert_int_eq(ts_conv2d_cpu_rc_block(0, 32, 1, 1, 32), 0);
	ck_assert_int_eq(ts_conv2d_cpu_rc_block(32, -1, 1, 1, 32), 0);
	ck_assert_int_eq(ts_conv2d_cpu_rc_block(INT64_MIN, 32, 1, 1, 32), 0);
	ck_assert_int_eq(ts_conv2d_cpu_rc_block(8, 32, 1, 1, INT64_MIN), 0);
	ck_assert_int_eq(ts_conv2d_cpu_rc_block(INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX),
			 INT64_MAX);
	ck_assert_int_eq(ts_conv2d_cpu_rc_block(1 << 20, 1, 1, 1, 1), lanes == 8 ? 4096 : 1 << 20);
	ck_assert_int_eq(ts_conv2d_cpu_out_block(256), lanes == 16 ? 32 : 8);
	ck_assert_int_eq(ts_conv2d_cpu_out_block(12), 4);
	ck_assert_int_eq(ts_conv2d_cpu_in_block(256), 16);
	ck_assert_int_eq(ts_conv2d_cpu_in_block(24), 8);
	ck_assert_int_eq(ts_conv2d_cpu_out_block(0), 0);
	ck_assert_int_eq(ts_conv2d_cpu_out_block(-64), 0);
	ck_assert_int_eq(ts_conv2d_cpu_in_block(INT64_MIN), 0);
	ck_assert_int_eq(ts_depthwise_cpu_block(0), 0);
	ck_assert_int_eq(ts_depthwise_cpu_block(96), lanes == 16 ? 16 : 8);

	/* those blocks under the default schedule, on a row of 17 columns
	 * that neither 14 nor 3 divides, compiled for this CPU */
	ts_ctx *ctx = ts_ctx_new();
	int64_t C = 24, K = 64, yb = ts_conv2d_cpu_out_block_for(K, 17), xb = ts_conv2d_cpu_in_block(C);
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, C / xb, 9, 17, xb), ts_float32);
	ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(K / yb, C / xb, 3, 3, xb, yb), ts_float32);
	ts_tensor *Y = ts_op_conv2d_nchwc(ctx, X, W, 1, 1, 1, 1, 1, 1);
	tu_nonnull(ctx, Y);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	tu_ok(ctx, ts_schedule_conv2d_nchwc_cpu(s, Y, NULL));
	ts_func *f = ts_lower(s, "conv", 3, (ts_tensor *[]){X, W, Y});
	tu_check_func_llvm(ctx, f, NULL, 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

/* Register blocks too large to unroll are refused before the schedule
 * changes (a block of 2000 columns was refused by the unroll, half-way,
 * leaving a schedule that took no other parameters); rows chosen for a huge
 * ow_block stop at what unrolls (on an image 2^40 rows tall the search for
 * them ran for hours). */
static ts_schedule *conv_1x1(ts_ctx *ctx, int64_t h, int64_t w, ts_tensor **Y)
{
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, 1, h, w, 8), ts_float32);
	ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(1, 1, 1, 1, 8, 8), ts_float32);
	*Y = ts_op_conv2d_nchwc(ctx, X, W, 1, 1, 0, 0, 1, 1);
	return ts_create_schedule(ctx, 1, Y);
}

START_TEST(test_conv2d_cpu_block_limits)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *Y;
	ts_schedule *s = conv_1x1(ctx, 8, 2000, &Y);
	const char *before = ts_schedule_str(s);
	ts_conv2d_cpu_params p = ts_conv2d_cpu_default();
	p.ow_block = 1 << 20; /* clamped to the row: 2000 columns, 2 rows at most */
	ck_assert_int_eq(ts_schedule_conv2d_nchwc_cpu(s, Y, &p), TS_ERR_INVALID);
	tu_assert_error(ctx, "schedule_conv2d_nchwc_cpu: a register block of 2 rows x 2000 columns x 1 channel "
			     "vectors is unrolled into 4000 copies of the body; the limits are 1024 rows or "
			     "columns and 4096 copies");
	ts_clear_error(ctx);
	ck_assert_str_eq(before, ts_schedule_str(s));
	p.ow_block = 1000;
	p.oh_block = 5;
	ck_assert_int_eq(ts_schedule_conv2d_nchwc_cpu(s, Y, &p), TS_ERR_INVALID);
	tu_assert_error(ctx, "5 rows x 1000 columns x 1 channel vectors is unrolled into 5000 copies");
	ts_clear_error(ctx);
	p.oh_block = 50;
	ck_assert_int_eq(ts_schedule_conv2d_nchwc_cpu(s, Y, &p), TS_ERR_INVALID);
	tu_assert_error(ctx, "8 rows x 1000 columns"); /* rows clamped to the image */
	ts_clear_error(ctx);
	ck_assert_str_eq(before, ts_schedule_str(s));
	p.ow_block = 64;
	p.oh_block = 0;
	tu_ok(ctx, ts_schedule_conv2d_nchwc_cpu(s, Y, &p));
	tu_check_func(ctx, ts_lower(s, "conv", 3, (ts_tensor *[]){Y->inputs[0], Y->inputs[1], Y}), 1e-4);
	/* a tall, narrow image: rows found at once, and at most 4096 / 1 */
	s = conv_1x1(ctx, INT64_C(1) << 40, 1, &Y);
	p.ow_block = 1 << 20;
	tu_ok(ctx, ts_schedule_conv2d_nchwc_cpu(s, Y, &p));
	s = conv_1x1(ctx, 2000, 1, &Y);
	p.oh_block = 1500;
	ck_assert_int_eq(ts_schedule_conv2d_nchwc_cpu(s, Y, &p), TS_ERR_INVALID);
	tu_assert_error(ctx, "a register block of 1500 rows x 1 columns");
	ts_clear_error(ctx);
	/* depthwise windows of 2^26 and 2^31 on a side: whether to unroll
	 * them is asked without overflowing (the product wrapped) */
	int64_t k = INT64_C(1) << 26, r = INT64_C(1) << 31;
	ts_tensor *X = ts_placeholder(ctx, "Xd", TS_SHAPE(1, 1, k + 63, k + 63, 1), ts_float32);
	ts_tensor *W = ts_placeholder(ctx, "Wd", TS_SHAPE(1, k, k, 1), ts_float32);
	Y = ts_op_depthwise_conv2d_nchwc(ctx, X, W, 1, 1, 0, 0, 1, 1);
	s = ts_create_schedule(ctx, 1, &Y);
	tu_ok(ctx, ts_schedule_depthwise_nchwc_cpu(s, Y, &(ts_depthwise_cpu_params){64, 64, false}));
	X = ts_placeholder(ctx, "Xn", TS_SHAPE(1, 1, r + 1, r + 1), ts_int8);
	W = ts_placeholder(ctx, "Wn", TS_SHAPE(1, 1, r, r), ts_int8);
	Y = ts_op_depthwise_conv2d_nchw(ctx, X, W, 1, 1, 0, 0, 1, 1);
	s = ts_create_schedule(ctx, 1, &Y);
	tu_ok(ctx, ts_schedule_depthwise_cpu(s, Y, &(ts_depthwise_cpu_params){2, 2, false}));
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_matmul_cuda_schedule)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(40, 24), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(24, 36), ts_float32);
	ts_tensor *C = ts_op_matmul(ctx, A, B, false, false);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_matmul_cuda_params p = {.block_m = 16, .block_n = 16, .thread_m = 2, .thread_n = 2,
				   .tile_k = 4};
	tu_ok(ctx, ts_schedule_matmul_cuda(s, C, &p));
	tu_check_func(ctx, ts_lower(s, "gemm", 3, (ts_tensor *[]){A, B, C}), 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_conv2d_cuda_schedule)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, 3, 10, 9), ts_float32);
	ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(8, 3, 3, 3), ts_float32);
	ts_tensor *Y = ts_op_conv2d_nchw(ctx, X, W, 1, 1, 1, 1, 1, 1, 1);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	ts_matmul_cuda_params p = ts_matmul_cuda_default();
	tu_ok(ctx, ts_schedule_conv2d_cuda(s, Y, &p));
	tu_check_func(ctx, ts_lower(s, "conv", 3, (ts_tensor *[]){X, W, Y}), 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

/* The generic default schedule on every operator without a dedicated one. */
static void check_default(ts_ctx *ctx, ts_tensor *out, int nin, ts_tensor *const *in)
{
	tu_nonnull(ctx, out);
	ts_tensor *args[8];
	for (int i = 0; i < nin; i++)
		args[i] = in[i];
	args[nin] = out;
	ts_schedule *s = ts_create_schedule(ctx, 1, &out);
	tu_ok(ctx, ts_schedule_default_cpu(s, 8));
	tu_check_func(ctx, ts_lower(s, out->name, nin + 1, args), 1e-4);
	/* the GPU default, through the interpreter (NVRTC compiles it in
	 * test_cuda_schedules) */
	s = ts_create_schedule(ctx, 1, &out);
	tu_ok(ctx, ts_schedule_default_cuda(s, 64));
	tu_check_func(ctx, ts_lower(s, out->name, nin + 1, args), 1e-4);
}

/* The conv2d block's store is unrolled over its rows and columns, with an
 * epilogue and without: as a loop, LLVM kept an epilogue's accumulators
 * on the stack in the border blocks (3x3 + relu at 14x14: 23% slower). */
START_TEST(test_conv_store_unrolled)
{
	for (int epi = 0; epi < 2; epi++) {
		ts_ctx *ctx = ts_ctx_new();
		ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, 2, 6, 14, 8), ts_float32);
		ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(2, 2, 3, 3, 8, 8), ts_float32);
		ts_tensor *C = ts_op_conv2d_nchwc(ctx, X, W, 1, 1, 1, 1, 1, 1);
		ts_tensor *Y = epi ? ts_op_relu(ctx, C) : C;
		ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
		ts_conv2d_cpu_params p = ts_conv2d_cpu_default();
		p.ow_block = 4, p.oh_block = 2;
		tu_ok(ctx, ts_schedule_conv2d_nchwc_cpu(s, Y, &p));
		const char *text = ts_schedule_str(s);
		const char *rows = epi ? "ax2.inner[2]@unrolled" : "y.inner[2]@unrolled";
		const char *cols = epi ? "ax3.inner[4]@unrolled" : "x.inner[4]@unrolled";
		ck_assert_msg(strstr(text, rows) && strstr(text, cols), "%s", text);
		ts_ctx_free(ctx);
	}
}
END_TEST

START_TEST(test_default_cpu)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(2, 3, 11, 13), ts_float32);
	ts_tensor *X2 = ts_placeholder(ctx, "X2", TS_SHAPE(2, 3, 11, 13), ts_float32);
	ts_tensor *b = ts_placeholder(ctx, "b", TS_SHAPE(3), ts_float32);
	ts_tensor *M = ts_placeholder(ctx, "M", TS_SHAPE(9, 21), ts_float32);
	ts_tensor *Wd = ts_placeholder(ctx, "Wd", TS_SHAPE(10, 21), ts_float32);
	ts_tensor *bd = ts_placeholder(ctx, "bd", TS_SHAPE(10), ts_float32);
	ts_tensor *Bm = ts_placeholder(ctx, "Bm", TS_SHAPE(3, 5, 17), ts_float32);
	ts_tensor *Bn = ts_placeholder(ctx, "Bn", TS_SHAPE(3, 17, 12), ts_float32);
	ts_tensor *Wdw = ts_placeholder(ctx, "Wdw", TS_SHAPE(3, 2, 3, 3), ts_float32);
	ts_tensor *Xh = ts_placeholder(ctx, "Xh", TS_SHAPE(1, 9, 10, 4), ts_float32);
	ts_tensor *Wh = ts_placeholder(ctx, "Wh", TS_SHAPE(3, 3, 4, 16), ts_float32);
	check_default(ctx, ts_op_relu(ctx, ts_op_add(ctx, X, X2)), 2, (ts_tensor *[]){X, X2});
	check_default(ctx, ts_op_clip(ctx, ts_op_bias_add(ctx, X, b, 1), -0.5, 0.5), 2,
		      (ts_tensor *[]){X, b});
	check_default(ctx, ts_op_max_pool2d(ctx, X, 3, 3, 2, 2, 1, 1), 1, &X);
	check_default(ctx, ts_op_avg_pool2d(ctx, X, 3, 3, 2, 2, 1, 1, false), 1, &X);
	check_default(ctx, ts_op_softmax(ctx, M), 1, &M);
	check_default(ctx, ts_op_dense(ctx, M, Wd, bd), 3, (ts_tensor *[]){M, Wd, bd});
	check_default(ctx, ts_op_batch_matmul(ctx, Bm, Bn, false, false), 2, (ts_tensor *[]){Bm, Bn});
	check_default(ctx, ts_op_depthwise_conv2d_nchw(ctx, X, Wdw, 1, 1, 1, 1, 1, 1), 2,
		      (ts_tensor *[]){X, Wdw});
	check_default(ctx, ts_op_conv2d_nhwc(ctx, Xh, Wh, 1, 1, 1, 1, 1, 1, 1), 2,
		      (ts_tensor *[]){Xh, Wh});
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_errors)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(8, 8), ts_float32);
	ts_tensor *C = ts_op_matmul(ctx, A, A, false, false);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ck_assert_int_ne(ts_schedule_matmul_cpu(s, ts_op_relu(ctx, C), NULL), TS_OK);
	tu_assert_error(ctx, "is not a matmul");
	ts_clear_error(ctx);
	ck_assert_int_ne(ts_schedule_conv2d_nchwc_cpu(s, C, NULL), TS_OK);
	tu_assert_error(ctx, "is not an NCHW[x]c convolution");
	ts_clear_error(ctx);
	ck_assert_int_ne(ts_schedule_batch_matmul_cpu(s, C, NULL), TS_OK);
	tu_assert_error(ctx, "it is not a batch matmul");
	ts_clear_error(ctx);
	ts_matmul_cpu_params bad = {.mr = 0, .nr = 8, .kunroll = 1};
	ts_tensor *Ab = ts_placeholder(ctx, "Ab", TS_SHAPE(2, 4, 4), ts_float32);
	ts_tensor *Cb = ts_op_batch_matmul(ctx, Ab, Ab, false, false);
	ts_schedule *sb = ts_create_schedule(ctx, 1, &Cb);
	ck_assert_int_ne(ts_schedule_batch_matmul_cpu(sb, Cb, &bad), TS_OK);
	tu_assert_error(ctx, "schedule_batch_matmul_cpu: parameter mr must be positive, got 0");
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("op_schedules");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_matmul_cpu);
	tcase_add_test(tc, test_matmul_cpu_plain);
	tcase_add_test(tc, test_matmul_cpu_prefetch);
	tcase_add_test(tc, test_matmul_cpu_pack);
	tcase_add_test(tc, test_matmul_cpu_k_chunks);
	tcase_add_test(tc, test_matmul_cpu_default_for);
	tcase_add_test(tc, test_matmul_cpu_default_shape);
	tcase_add_test(tc, test_matmul_cpu_refusals);
	tcase_add_test(tc, test_batch_matmul_cpu);
	tcase_add_test(tc, test_conv2d_nchwc_cpu);
	tcase_add_test(tc, test_conv2d_cpu_blocks);
	tcase_add_test(tc, test_conv2d_cpu_block_limits);
	tcase_add_test(tc, test_matmul_unusual_operands);
	tcase_add_test(tc, test_matmul_cuda_schedule);
	tcase_add_test(tc, test_conv2d_cuda_schedule);
	tcase_add_test(tc, test_default_cpu);
	tcase_add_test(tc, test_conv_store_unrolled);
	tcase_add_test(tc, test_errors);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
