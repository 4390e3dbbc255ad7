/*
 * test_conv_fused.c - ts_schedule_conv2d_nchwc_cpu with an elementwise
 * epilogue (bias over the channels, relu, a residual add, clip) scheduled
 * as one pass, checked against the reference evaluator on shapes the
 * register block divides and on shapes it does not (odd images, stride 2,
 * 1x1 and 3x3 kernels, channel blocks of 4, 8 and 16), with the padding
 * copied or inlined; the convolution never gets a global buffer.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "lower.h"
#include "op_schedules.h"
#include "printer.h"

typedef enum epi { EPI_BIAS, EPI_BIAS_RELU, EPI_RESIDUAL_RELU, EPI_CLIP } epi;

/* One convolution: input [n, c/x, h, w, x], kernel k x k, y output lanes. */
typedef struct conv {
	int64_t n, c, h, w, o, k;
	int x, y, stride, pad;
} conv;

typedef struct built {
	ts_tensor *params[6];
	int np;
	ts_tensor *C, *Y;
} built;

/* Y = epilogue(conv2d_nchwc(X, W)) over placeholders X, W, bias, R. */
static built build(ts_ctx *ctx, epi e, const conv *g)
{
	built b = {.np = 0};
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(g->n, g->c / g->x, g->h, g->w, g->x),
				      ts_float32);
	ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(g->o / g->y, g->c / g->x, g->k, g->k,
							 g->x, g->y), ts_float32);
	b.C = ts_op_conv2d_nchwc(ctx, X, W, g->stride, g->stride, g->pad, g->pad, 1, 1);
	tu_nonnull(ctx, b.C);
	b.params[b.np++] = X, b.params[b.np++] = W;
	ts_tensor *Y = b.C;
	if (e == EPI_CLIP) {
		Y = ts_op_clip(ctx, Y, -0.5, 0.75);
	} else {
		ts_tensor *bias = ts_placeholder(ctx, "bias", TS_SHAPE(g->o), ts_float32);
		Y = tu_bias_nchwc(ctx, Y, bias);
		b.params[b.np++] = bias;
	}
	if (e == EPI_RESIDUAL_RELU) { /* ResNet's block end: relu(conv + bias + x) */
		ts_tensor *R = ts_placeholder(ctx, "R", b.C->ndim, b.C->shape, ts_float32);
		Y = ts_op_add(ctx, Y, R);
		b.params[b.np++] = R;
	}
	if (e == EPI_BIAS_RELU || e == EPI_RESIDUAL_RELU)
		Y = ts_op_relu(ctx, Y);
	tu_nonnull(ctx, Y);
	b.params[b.np++] = Y;
	b.Y = Y;
	return b;
}

/* Whether some line of text adds a product reading X without a select. */
static bool has_unguarded_read(const char *text)
{
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *end = strchr(l, '\n');
		size_t n = end ? (size_t)(end - l) : strlen(l);
		char line[1024];
		if (n >= sizeof line)
			continue;
		memcpy(line, l, n);
		line[n] = 0;
		if (strstr(line, "X[") && strstr(line, "*W[") && !strstr(line, "select("))
			return true;
	}
	return false;
}

/* The factor splitting Y's axis 1, the channel blocks, in a schedule's
 * text (its name: "cb" for bias_add, "oo" for the convolution itself,
 * "ax1" for an operator's elementwise stage), or 0. */
static long channel_group(const char *sched)
{
	static const char *const names[] = {"cb", "oo", "ax1"};
	for (int i = 0; i < 3; i++) {
		char want[64];
		snprintf(want, sizeof want, "split %s -> %s.outer, %s.inner (factor ", names[i], names[i], names[i]);
		const char *at = strstr(sched, want);
		if (at)
			return strtol(at + strlen(want), NULL, 10);
	}
	return 0;
}

static void check_conv(epi e, conv g, const ts_conv2d_cpu_params *p)
{
	ts_ctx *ctx = ts_ctx_new();
	built b = build(ctx, e, &g);
	ts_schedule *s = ts_create_schedule(ctx, 1, &b.Y);
	tu_nonnull(ctx, s);
	tu_ok(ctx, ts_schedule_conv2d_nchwc_cpu(s, b.Y, p));
	ts_func *f = ts_lower(s, "conv_fused", b.np, b.params);
	tu_nonnull(ctx, f);
	/* one pass over memory: the convolution is accumulated in a local
	 * block and only Y is stored */
	const char *text = ir_func_str(ctx, f);
	ck_assert_msg(strstr(text, " in local") != NULL, "no local accumulator:\n%s", text);
	ck_assert_msg(!tu_allocates_global(text, b.C->name), "the convolution has a global buffer:\n%s",
		      text);
	/* the next channel block's weights prefetched where weights outweigh
	 * the (padded) input, and the schedule asks for it */
	bool deep = g.o * g.c * g.k * g.k > g.n * g.c * (g.h + 2 * g.pad) * (g.w + 2 * g.pad);
	/* the padded input, computed once before the convolution, does,
	 * unless it is inlined */
	ts_conv2d_cpu_params d = p ? *p : ts_conv2d_cpu_default();
	if (d.ow_block == 0) /* chosen from the channel block */
		d.ow_block = ts_conv2d_cpu_ow_block(g.y);
	/* TS_PAD_AUTO inlines it: the sum skips the padding's taps, so the
	 * border blocks read none of it */
	bool inl = g.pad && d.pad != TS_PAD_COPY;
	bool copied = tu_allocates_global(text, "pad");
	ck_assert_msg(!g.pad || copied != inl, "padding %s, expected %s", copied ? "copied" : "inlined",
		      inl ? "inlined" : "copied");
	/* an image with room for it, in whole blocks of 14 columns, has an
	 * interior that reads X with no test of the padding */
	bool roomy = d.ow_block == 14 && g.h >= 14 && g.w % 14 == 0 && g.stride == 1;
	ck_assert_msg(!inl || !roomy || has_unguarded_read(text), "no interior without the padding's test");
	/* channel blocks in groups (their weights in cache, each row of
	 * input read by the whole group) need no prefetch */
	const char *sched = ts_schedule_str(s);
	bool grouped = channel_group(sched) > 1;
	ck_assert_msg(!grouped || deep, "channel blocks grouped with the rows outside");
	/* the reduction in chunks of rc input-channel blocks where asked
	 * (or chosen), fewer than all of them */
	int64_t blocks = g.c / g.x;
	int64_t rc = d.rc_block ? d.rc_block : ts_conv2d_cpu_rc_block(blocks, g.x, g.k, g.k, g.y);
	bool chunked = rc > 0 && rc < blocks;
	char split[96];
	snprintf(split, sizeof split, "split rc -> rc.outer, rc.inner (factor %lld", (long long)rc);
	ck_assert_msg((strstr(sched, split) != NULL) == chunked, "reduction %sin chunks of %lld:\n%s",
		      chunked ? "not " : "", (long long)rc, sched);
	/* ... and only where there is a next channel block (or image) to
	 * fetch: with one, the prefetch lies past the loop and lowers to
	 * nothing */
	bool want = deep && d.prefetch && !grouped && !chunked && g.n * (g.o / g.y) > 1;
	ck_assert_msg((strstr(text, "prefetch(W[") != NULL) == want,
		      "prefetch%s expected, c %lld h %lld w %lld o %lld k %lld\n%s", want ? "" : " not",
		      (long long)g.c, (long long)g.h, (long long)g.w, (long long)g.o, (long long)g.k, sched);
	char what[160];
	snprintf(what, sizeof what, "epilogue %d, X[%lld, %lld, %lld, %lld] / %d, %lld x %lld kernel, "
		 "O %lld / %d, stride %d, pad %d", (int)e, (long long)g.n, (long long)g.c,
		 (long long)g.h, (long long)g.w, g.x, (long long)g.k, (long long)g.k,
		 (long long)g.o, g.y, g.stride, g.pad);
	tu_set_context(what);
	tu_check_func(ctx, f, 1e-4);
	tu_set_context(NULL);
	ts_ctx_free(ctx);
}

/* 14-column blocks over 7 and 13 columns, oh_block from the row width */
static const ts_conv2d_cpu_params defaults = {.ow_block = 14, .oh_block = 0, .parallel = true,
					      .prefetch = true};
/* blocks neither 13 nor 11 divides, serial, no prefetch, a padded copy */
static const ts_conv2d_cpu_params odd = {.ow_block = 4, .oh_block = 3, .parallel = false,
					 .pad = TS_PAD_COPY};

static const conv shapes[] = {
	{.n = 1, .c = 8, .h = 7, .w = 7, .o = 16, .k = 3, .x = 4, .y = 8, .stride = 1, .pad = 1},
	{.n = 2, .c = 8, .h = 13, .w = 11, .o = 8, .k = 1, .x = 8, .y = 4, .stride = 1, .pad = 0},
	{.n = 1, .c = 4, .h = 13, .w = 11, .o = 16, .k = 3, .x = 4, .y = 16, .stride = 2, .pad = 1},
	{.n = 1, .c = 16, .h = 7, .w = 7, .o = 8, .k = 1, .x = 16, .y = 8, .stride = 2, .pad = 0},
	/* weights outweigh the input: channel blocks outside, the next one's
	 * weights prefetched (its last block has none to prefetch) */
	{.n = 1, .c = 16, .h = 5, .w = 3, .o = 24, .k = 3, .x = 8, .y = 8, .stride = 1, .pad = 1},
};

/* the padding inlined, with both kinds of blocks */
static const ts_conv2d_cpu_params defaults_inl = {.ow_block = 14, .oh_block = 0, .parallel = true,
						  .prefetch = true, .pad = TS_PAD_INLINE};
static const ts_conv2d_cpu_params odd_inl = {.ow_block = 4, .oh_block = 3, .parallel = false,
					     .pad = TS_PAD_INLINE};

static void check_all(epi e)
{
	for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
		check_conv(e, shapes[i], &defaults);
		check_conv(e, shapes[i], &odd);
		check_conv(e, shapes[i], &defaults_inl);
		check_conv(e, shapes[i], &odd_inl);
	}
}

/* The sum leaves the padding's taps out (ts_op_conv2d_nchwc): a weight of
 * inf at kernel row 0 reaches no output of row 0, whose row-0 taps are
 * padding, in ts_eval and in compiled code with the padding inlined or
 * copied; every other row multiplies it by its input.  A 7x7 image in one
 * block per row keeps no test anywhere: loop_partition splits the border
 * rows and columns off, and their padding taps are gone. */
START_TEST(test_conv_padding_taps_skipped)
{
	static const ts_pad_mode modes[] = {TS_PAD_AUTO, TS_PAD_COPY, TS_PAD_INLINE};
	for (int m = 0; m < 3; m++) {
		ts_ctx *ctx = ts_ctx_new();
		ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, 2, 7, 7, 8), ts_float32);
		ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(1, 2, 3, 3, 8, 16), ts_float32);
		ts_tensor *Y = ts_op_conv2d_nchwc(ctx, X, W, 1, 1, 1, 1, 1, 1);
		ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
		ts_conv2d_cpu_params p = ts_conv2d_cpu_default();
		p.pad = modes[m];
		tu_ok(ctx, ts_schedule_conv2d_nchwc_cpu(s, Y, &p));
		ts_func *f = ts_lower(s, "conv", 3, (ts_tensor *[]){X, W, Y});
		tu_nonnull(ctx, f);
		if (modes[m] != TS_PAD_COPY)
			ck_assert_msg(!strstr(ir_func_str(ctx, f), "select("), "a test is left:\n%s",
				      ir_func_str(ctx, f));
		ts_array *a[3] = {ts_array_for(ctx, X), ts_array_for(ctx, W), ts_array_for(ctx, Y)};
		ts_array *want = ts_array_for(ctx, Y);
		float *x = a[0]->data, *w = a[1]->data, *y = a[2]->data, *ref = want->data;
		for (int64_t i = 0; i < ts_tensor_numel(X); i++)
			x[i] = (float)((i * 37 % 101) - 50) / 64.0f;
		for (int64_t i = 0; i < ts_tensor_numel(W); i++) /* W[0, c, kh, kw, ci, oi] */
			w[i] = (i / (3 * 8 * 16)) % 3 == 0 ? INFINITY : (float)((i * 13 % 29) - 14) / 32.0f;
		tu_ok(ctx, ts_eval(ctx, 3, (ts_tensor *[]){X, W, Y}, (void *[]){x, w, ref}));
		ts_module *mod = ts_build(ctx, f, "llvm");
		tu_nonnull(ctx, mod);
		tu_ok(ctx, ts_module_run(mod, 3, a));
		for (int64_t i = 0; i < ts_tensor_numel(Y); i++) { /* Y[0, 0, oh, ow, oi] */
			bool row0 = i / (7 * 16) == 0;
			ck_assert_msg(row0 ? isfinite(ref[i]) : !isfinite(ref[i]), "ts_eval: Y[%lld] = %g",
				      (long long)i, ref[i]);
			ck_assert_msg(y[i] == ref[i] || (isnan(y[i]) && isnan(ref[i])),
				      "pad mode %d: Y[%lld] = %g, ts_eval %g", (int)modes[m], (long long)i, y[i],
				      ref[i]);
		}
		ts_module_free(mod);
		for (int i = 0; i < 3; i++)
			ts_array_free(a[i]);
		ts_array_free(want);
		ts_ctx_free(ctx);
	}
}
END_TEST

/* Inlined paddings wider than the kernel's reach on some sides, images
 * that the blocks do not divide, two images (whose padded copy stays when
 * rows are outside the channel blocks), stride 2. */
START_TEST(test_conv_inline_pad)
{
	static const conv more[] = {
		{.n = 1, .c = 8, .h = 9, .w = 10, .o = 16, .k = 3, .x = 8, .y = 16, .stride = 1, .pad = 2},
		{.n = 2, .c = 4, .h = 6, .w = 5, .o = 32, .k = 3, .x = 4, .y = 8, .stride = 1, .pad = 1},
		{.n = 2, .c = 4, .h = 12, .w = 12, .o = 8, .k = 3, .x = 4, .y = 8, .stride = 1, .pad = 1},
		{.n = 1, .c = 3, .h = 15, .w = 17, .o = 8, .k = 7, .x = 3, .y = 8, .stride = 2, .pad = 3},
		{.n = 1, .c = 16, .h = 7, .w = 7, .o = 32, .k = 3, .x = 16, .y = 16, .stride = 2, .pad = 1},
		{.n = 1, .c = 16, .h = 20, .w = 28, .o = 32, .k = 3, .x = 16, .y = 16, .stride = 1, .pad = 1},
		{.n = 1, .c = 64, .h = 14, .w = 14, .o = 64, .k = 3, .x = 16, .y = 32, .stride = 1, .pad = 1},
		/* under TS_PAD_AUTO: inlined for three column blocks and for a
		 * stride of 2 with two, copied for two (the 28-wide one above) */
		{.n = 1, .c = 4, .h = 5, .w = 44, .o = 8, .k = 3, .x = 4, .y = 8, .stride = 1, .pad = 1},
		{.n = 1, .c = 4, .h = 5, .w = 30, .o = 8, .k = 3, .x = 4, .y = 8, .stride = 2, .pad = 1},
	};
	for (size_t i = 0; i < sizeof more / sizeof *more; i++) {
		check_conv(EPI_BIAS_RELU, more[i], &defaults_inl);
		check_conv(EPI_RESIDUAL_RELU, more[i], &odd_inl);
		check_conv(EPI_CLIP, more[i], NULL); /* TS_PAD_AUTO */
	}
	/* a pad mode out of the enum is refused by name */
	ts_ctx *ctx = ts_ctx_new();
	built b = build(ctx, EPI_CLIP, &more[0]);
	ts_schedule *s = ts_create_schedule(ctx, 1, &b.Y);
	ts_conv2d_cpu_params bad = ts_conv2d_cpu_default();
	bad.pad = (ts_pad_mode)7;
	ck_assert_int_ne(ts_schedule_conv2d_nchwc_cpu(s, b.Y, &bad), TS_OK);
	tu_assert_error(ctx, "schedule_conv2d_nchwc_cpu: pad mode 7 is none of");
	/* so are negative blocks (0 is chosen) */
	ts_clear_error(ctx);
	bad = ts_conv2d_cpu_default();
	bad.ow_block = -3;
	ck_assert_int_ne(ts_schedule_conv2d_nchwc_cpu(s, b.Y, &bad), TS_OK);
	tu_assert_error(ctx, "schedule_conv2d_nchwc_cpu: ow_block, oh_block and rc_block must be >= 0 (0: "
			"chosen), got -3, 0 and 0");
	ts_clear_error(ctx);
	bad = ts_conv2d_cpu_default();
	bad.rc_block = INT64_MIN;
	ck_assert_int_ne(ts_schedule_conv2d_nchwc_cpu(s, b.Y, &bad), TS_OK);
	tu_assert_error(ctx, "rc_block must be >= 0 (0: chosen), got 0, 0 and -9223372036854775808");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_conv_bias)
{
	check_all(EPI_BIAS);
	check_conv(EPI_BIAS, shapes[0], NULL);
}
END_TEST

START_TEST(test_conv_bias_relu)
{
	check_all(EPI_BIAS_RELU);
}
END_TEST

START_TEST(test_conv_bias_residual_relu)
{
	check_all(EPI_RESIDUAL_RELU);
}
END_TEST

START_TEST(test_conv_clip)
{
	check_all(EPI_CLIP);
}
END_TEST

/* No epilogue: the convolution is Y, accumulated in a cache of it. */
START_TEST(test_conv_no_epilogue)
{
	ts_ctx *ctx = ts_ctx_new();
	conv g = shapes[2];
	built b = build(ctx, EPI_CLIP, &g);
	ts_tensor *X = b.params[0], *W = b.params[1];
	ts_schedule *s = ts_create_schedule(ctx, 1, &b.C);
	tu_ok(ctx, ts_schedule_conv2d_nchwc_cpu(s, b.C, &odd));
	tu_check_func(ctx, ts_lower(s, "conv", 3, (ts_tensor *[]){X, W, b.C}), 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

/* oh_block 0 on narrow images: as many rows per block as fit ow_block
 * positions and compute the fewest rows twice: 1 row of 7 for a 7x7
 * output (2 would compute 8), 2 for 7 columns by 8 rows; the results
 * checked against the reference either way. */
START_TEST(test_conv_auto_rows)
{
	static const struct {
		int64_t h, w;
		const char *split;
	} cases[] = {
		{7, 7, "split ax2 -> ax2.outer, ax2.inner (factor 1)"},
		{8, 7, "split ax2 -> ax2.outer, ax2.inner (factor 2)"},
		{9, 4, "split ax2 -> ax2.outer, ax2.inner (factor 3)"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		/* one vector of channels: 14 columns (ts_conv2d_cpu_ow_block) */
		conv g = {.n = 1, .c = 8, .h = cases[i].h, .w = cases[i].w, .o = 32, .k = 3, .x = 8, .y = 8,
			  .stride = 1, .pad = 1};
		ts_ctx *ctx = ts_ctx_new();
		built b = build(ctx, EPI_BIAS_RELU, &g);
		ts_schedule *s = ts_create_schedule(ctx, 1, &b.Y);
		tu_ok(ctx, ts_schedule_conv2d_nchwc_cpu(s, b.Y, NULL));
		const char *text = ts_schedule_str(s);
		ck_assert_msg(strstr(text, cases[i].split), "%lldx%lld: want '%s' in\n%s", (long long)g.h,
			      (long long)g.w, cases[i].split, text);
		ts_ctx_free(ctx);
		check_conv(EPI_BIAS_RELU, g, NULL);
	}
}
END_TEST

/* Deep layers whose channel blocks have small weights (a 1x1 or a few
 * input channels) go in groups around the rows: 32 blocks of 8 channels
 * whose weights take 4.6 KB each, in 8 groups of 4 (at least 8 groups
 * run in parallel), with every epilogue, the padding inlined or copied,
 * stride 1 and 2; results against the reference. */
START_TEST(test_conv_channel_groups)
{
	static const conv grouped[] = {
		{.n = 1, .c = 16, .h = 5, .w = 9, .o = 256, .k = 3, .x = 8, .y = 8, .stride = 1, .pad = 1},
		{.n = 1, .c = 16, .h = 9, .w = 11, .o = 256, .k = 3, .x = 8, .y = 8, .stride = 2, .pad = 1},
		{.n = 2, .c = 16, .h = 3, .w = 5, .o = 256, .k = 1, .x = 16, .y = 8, .stride = 1, .pad = 0},
	};
	ts_ctx *ctx = ts_ctx_new();
	built b = build(ctx, EPI_BIAS_RELU, &grouped[0]);
	ts_schedule *s = ts_create_schedule(ctx, 1, &b.Y);
	tu_ok(ctx, ts_schedule_conv2d_nchwc_cpu(s, b.Y, NULL));
	const char *text = ts_schedule_str(s);
	ck_assert_msg(channel_group(text) == 4, "%s", text);
	ts_ctx_free(ctx);
	for (size_t i = 0; i < sizeof grouped / sizeof *grouped; i++)
		for (int e = 0; e <= (int)EPI_CLIP; e++) {
			check_conv((epi)e, grouped[i], NULL);
			check_conv((epi)e, grouped[i], &odd);
			check_conv((epi)e, grouped[i], &defaults_inl);
		}
}
END_TEST

/* Blocks of four vectors of channels (NCHW32c with AVX2, NCHW64c with
 * AVX-512) run vector by vector, a few columns at a time
 * (ts_conv2d_cpu_ow_block: 3 with AVX2, 4 with AVX-512): rows the columns
 * do not divide, strides, 1x1 and 3x3 kernels, channel blocks inside and
 * outside the rows, chosen and explicit columns, every epilogue; results
 * against the reference. */
START_TEST(test_conv_vector_by_vector)
{
	int y = 4 * ts_cpu_vector_lanes();
	ck_assert_int_eq(ts_conv2d_cpu_ow_block(y), y == 32 ? 3 : 4);
	const conv wide[] = {
		{.n = 1, .c = 8, .h = 5, .w = 14, .o = 2 * y, .k = 3, .x = 8, .y = y, .stride = 1, .pad = 1},
		{.n = 1, .c = 16, .h = 13, .w = 13, .o = y, .k = 3, .x = 16, .y = y, .stride = 2, .pad = 1},
		{.n = 2, .c = 8, .h = 4, .w = 11, .o = y, .k = 1, .x = 8, .y = y, .stride = 1, .pad = 0},
		/* weights outweigh the input: channel blocks outside the rows */
		{.n = 1, .c = 64, .h = 3, .w = 5, .o = 2 * y, .k = 3, .x = 16, .y = y, .stride = 1, .pad = 1},
	};
	const ts_conv2d_cpu_params five = {.ow_block = 5, .oh_block = 2, .parallel = true};
	for (size_t i = 0; i < sizeof wide / sizeof *wide; i++)
		for (int e = 0; e <= (int)EPI_CLIP; e++) {
			check_conv((epi)e, wide[i], NULL);
			check_conv((epi)e, wide[i], &five);
		}
	check_conv(EPI_BIAS_RELU, wide[0], &odd);
	check_conv(EPI_BIAS_RELU, wide[0], &defaults_inl);
}
END_TEST

/* The reduction in chunks of input-channel blocks (rc_block), each chunk
 * over a stretch of register blocks whose accumulators wait in memory:
 * chunks that divide the blocks and one that does not, a stretch longer
 * than a row's blocks and rows whose blocks the columns do not divide,
 * 1x1 and 3x3 kernels, stride 2, the padding inlined and copied, rows
 * inside and outside the channel blocks, every epilogue; chosen chunks for
 * a deep 1x1 layer (AVX2) and a deep 3x3 one (AVX-512).  Results against the reference; check_conv also finds
 * the split of the reduction in the schedule. */
START_TEST(test_conv_reduce_chunks)
{
	int lanes = ts_cpu_vector_lanes();
	const conv deep[] = {
		{.n = 1, .c = 64, .h = 3, .w = 13, .o = 16, .k = 1, .x = 8, .y = 8, .stride = 1, .pad = 0},
		{.n = 1, .c = 48, .h = 5, .w = 7, .o = 8, .k = 3, .x = 8, .y = 8, .stride = 2, .pad = 1},
		{.n = 2, .c = 32, .h = 4, .w = 9, .o = 4 * lanes, .k = 1, .x = 4, .y = 4 * lanes, .stride = 1,
		 .pad = 0},
		{.n = 1, .c = 32, .h = 6, .w = 6, .o = 8, .k = 3, .x = 4, .y = 8, .stride = 1, .pad = 1},
	};
	const ts_conv2d_cpu_params two = {.parallel = true, .rc_block = 2},
				   three_odd = {.ow_block = 4, .oh_block = 2, .rc_block = 3,
						.pad = TS_PAD_COPY},
				   three_inl = {.rc_block = 3, .pad = TS_PAD_INLINE, .parallel = true};
	for (size_t i = 0; i < sizeof deep / sizeof *deep; i++)
		for (int e = 0; e <= (int)EPI_CLIP; e++) {
			check_conv((epi)e, deep[i], &two);
			check_conv((epi)e, deep[i], &three_odd);
			check_conv((epi)e, deep[i], &three_inl);
		}
	/* a row of more blocks than a stretch holds (22 blocks of 3 columns
	 * and four vectors with AVX2: 8 KB of accumulators is 21 blocks, so
	 * two stretches of 11, not 21 and a whole second one moved back) */
	const conv row66 = {.n = 1, .c = 32, .h = 2, .w = 66, .o = 4 * lanes, .k = 1, .x = 4, .y = 4 * lanes,
			    .stride = 1, .pad = 0};
	check_conv(EPI_RESIDUAL_RELU, row66, &two);
	check_conv(EPI_CLIP, row66, &three_odd);
	if (lanes == 8) {
		ts_ctx *ctx = ts_ctx_new();
		built b = build(ctx, EPI_CLIP, &row66);
		ts_schedule *s = ts_create_schedule(ctx, 1, &b.Y);
		tu_ok(ctx, ts_schedule_conv2d_nchwc_cpu(s, b.Y, &two));
		const char *text = ts_schedule_str(s);
		ck_assert_msg(strstr(text, "3.outer.inner (factor 11)"), "%s", text);
		ts_ctx_free(ctx);
	}
	/* chosen: 2048 input channels in blocks of 8 with AVX2, whose 64 KB
	 * of weights per output block go in chunks of 16 KB */
	const conv wide = {.n = 1, .c = 2048, .h = 2, .w = 5, .o = 8, .k = 1, .x = 8, .y = 8, .stride = 1,
			   .pad = 0};
	ck_assert_int_eq(ts_conv2d_cpu_rc_block(256, 8, 1, 1, 8), lanes == 8 ? 64 : 256);
	check_conv(EPI_BIAS_RELU, wide, NULL);
	/* chosen with AVX-512: a 3x3 kernel over 1024 channels in blocks of
	 * 16, whose 590 KB of weights per output block go in chunks of 8
	 * blocks (72 KB) */
	const conv deep3 = {.n = 1, .c = 1024, .h = 3, .w = 5, .o = 16, .k = 3, .x = 16, .y = 16,
			    .stride = 1, .pad = 1};
	ck_assert_int_eq(ts_conv2d_cpu_rc_block(64, 16, 3, 3, 16), lanes == 16 ? 8 : 64);
	check_conv(EPI_BIAS_RELU, deep3, NULL);
	check_conv(EPI_RESIDUAL_RELU, deep3, &(ts_conv2d_cpu_params){.parallel = true, .pad = TS_PAD_INLINE});
}
END_TEST

int main(void)
{
	Suite *s = suite_create("conv_fused");
	TCase *tc = tcase_create("conv_fused");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_conv_bias);
	tcase_add_test(tc, test_conv_bias_relu);
	tcase_add_test(tc, test_conv_bias_residual_relu);
	tcase_add_test(tc, test_conv_clip);
	tcase_add_test(tc, test_conv_no_epilogue);
	tcase_add_test(tc, test_conv_inline_pad);
	tcase_add_test(tc, test_conv_padding_taps_skipped);
	tcase_add_test(tc, test_conv_auto_rows);
	tcase_add_test(tc, test_conv_channel_groups);
	tcase_add_test(tc, test_conv_vector_by_vector);
	tcase_add_test(tc, test_conv_reduce_chunks);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
