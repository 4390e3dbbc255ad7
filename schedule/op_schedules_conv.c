/*
 * op_schedules_conv.c - the CPU convolution schedules: conv2d and
 * depthwise conv2d on NCHW[x]c (register blocks of output columns by
 * channel vectors, reductions in chunks that keep their weights in L1,
 * padding copied or inlined) and depthwise conv2d on NCHW, with the
 * block-size helpers tessera-bench, the graph layer and the tuner share.
 * As in op_schedules.c, only public primitives are called.
 */
#include "op_schedules.h"
#include "op_schedules_util.h"

#include "ops.h"

/* The largest power of two up to max (a power of two) dividing channels
 * (>= 1): the lowest set bit of channels, at most max. */
static int64_t pow2_divisor(int64_t channels, int64_t max)
{
	int64_t low = channels & -channels;
	return low < max ? low : max;
}

int64_t ts_conv2d_cpu_out_block(int64_t channels)
{
	int lanes = ts_cpu_vector_lanes();
	return channels < 1 ? 0 : pow2_divisor(channels, lanes == 16 ? 2 * lanes : lanes);
}

/* Rows of at least 4 blocks of 3 columns take AVX2's blocks of four
 * vectors (ts_conv2d_cpu_out_block_for); with AVX-512, rows of 14 blocks
 * of 4 columns. */
static const int64_t wide_row = 12, wide_row_avx512 = 56;

int64_t ts_conv2d_cpu_out_block_for(int64_t channels, int64_t out_width)
{
	/* AVX2 on rows of 4 blocks of 3 columns or more: four vectors, whose
	 * step loads 3 inputs and 4 weight vectors for 12 multiply-adds, where
	 * one vector of 14 columns loads 15 for 14 (ResNet-50's layers at 56,
	 * 28 and 14 columns: 3% to 24% faster on one Zen 4 core, inputs in
	 * NCHW32c too).  On rows of 7, the 3 + 3 + 1 blocks lose (20% slower). */
	int lanes = ts_cpu_vector_lanes();
	if (channels >= 1 && lanes == 8 && out_width >= wide_row && channels % 32 == 0)
		return 32;
	/* AVX-512 likewise, four vectors by 4 columns (ts_conv2d_cpu_ow_block),
	 * on ResNet-50's rows of 56: the 1x1 layers 64 -> 64 and 64 -> 256
	 * from 0.74x-0.88x of oneDNN's speed to 0.99x-1.09x at 1 and 2
	 * threads (Zen 4), the 3x3 ones level; on rows of 28 the 3x3 layer
	 * lost 15%, so they keep two vectors */
	if (channels >= 1 && lanes == 16 && out_width >= wide_row_avx512 && channels % 64 == 0)
		return 64;
	return ts_conv2d_cpu_out_block(channels);
}

int64_t ts_conv2d_cpu_row_width(int64_t r, int64_t s, int64_t stride_h, int64_t stride_w, int64_t pad_h,
				int64_t pad_w, int64_t out_h, int64_t out_w)
{
	bool pointwise = r == 1 && s == 1 && stride_h == 1 && stride_w == 1 && pad_h == 0 && pad_w == 0;
	if (pointwise && ts_cpu_vector_lanes() == 8 && out_w >= 1 && out_w < wide_row && out_h > 1 &&
	    out_h <= INT64_MAX / out_w)
		return out_h * out_w;
	return out_w;
}

int64_t ts_conv2d_cpu_row_width_for(int64_t r, int64_t s, int64_t stride_h, int64_t stride_w, int64_t pad_h,
				    int64_t pad_w, int64_t out_h, int64_t out_w, int64_t in_channels,
				    int64_t in_block, int64_t out_channels)
{
	int64_t w = ts_conv2d_cpu_row_width(r, s, stride_h, stride_w, pad_h, pad_w, out_h, out_w);
	bool pointwise = r == 1 && s == 1 && stride_h == 1 && stride_w == 1 && pad_h == 0 && pad_w == 0;
	if (w != out_w || !pointwise || ts_cpu_vector_lanes() != 8 || out_w < 1 || out_h < 2 ||
	    out_h > INT64_MAX / out_w || in_channels < 1 || in_block < 1 || in_channels % in_block ||
	    out_channels < 1)
		return w;
	int64_t ob = ts_conv2d_cpu_out_block_for(out_channels, out_w), in_blocks = in_channels / in_block;
	/* a convolution reducing in chunks keeps its rows: merged, its
	 * stretches ran 2-3.5% slower on 1024 -> 256 at 14x14 */
	if (ts_conv2d_cpu_rc_block(in_blocks, in_block, 1, 1, ob) < in_blocks)
		return out_w;
	/* the fewest rows whose register blocks waste at most 1% of their
	 * columns, else the rows that waste the least */
	int64_t ow = ts_conv2d_cpu_ow_block(ob), best = 1;
	double best_use = 0;
	/* rows past 4096 (over 100 blocks, under 1% wasted) are not looked
	 * for: the search stays short on any out_h */
	for (int64_t k = 1; k <= out_h && k <= 4096; k++) {
		if (out_h % k)
			continue;
		int64_t cols = k * out_w, blocks = cols / ow + (cols % ow != 0);
		double use = (double)cols / ((double)blocks * (double)ow);
		if (use > best_use)
			best = k, best_use = use;
		if (use >= 0.99)
			break;
	}
	return best * out_w;
}

int64_t ts_conv2d_cpu_ow_block(int64_t out_block)
{
	int lanes = ts_cpu_vector_lanes(), regs = lanes == 16 ? 32 : 16;
	if (out_block < 1)
		return 0;
	int64_t v = out_block / lanes + (out_block % lanes != 0);
	/* up to two vectors: column by column, cols x v accumulators, the v
	 * weight vectors and one broadcast; more: vector by vector (see
	 * conv_accumulator), cols x v accumulators, cols broadcasts and one
	 * weight vector */
	int64_t cols = v <= 2 ? (regs - v - 1) / v : (regs - 1) / (v + 1);
	/* vector by vector, at most 16 accumulators: AVX-512's four vectors
	 * by 6 columns (24 of the 32 registers) ran 10-25% slower than by 4
	 * on ResNet-50's 1x1 layers; AVX2 is at 12 or fewer anyway */
	if (v > 2 && cols > 16 / v)
		cols = 16 / v;
	return cols < 1 ? 1 : cols > 14 ? 14 : cols;
}

int64_t ts_conv2d_cpu_in_block(int64_t channels)
{
	return channels < 1 ? 0 : pow2_divisor(channels, 16);
}

int64_t ts_depthwise_cpu_block(int64_t channels)
{
	return channels < 1 ? 0 : pow2_divisor(channels, ts_cpu_vector_lanes());
}

ts_conv2d_cpu_params ts_conv2d_cpu_default(void)
{
	/* the prefetch pays with AVX-512's blocks of two vectors (ResNet-50's
	 * layer4: 10-15% per convolution with cold weights); with AVX2's
	 * blocks of one vector, whose step's weights are half a cache line, it
	 * gained nothing cold and cost 10-30% at 2 threads (Zen 4) */
	return (ts_conv2d_cpu_params){.ow_block = 0, .oh_block = 0, .parallel = true,
				      .prefetch = ts_cpu_vector_lanes() == 16};
}

/* a * b, or INT64_MAX where it would overflow (both >= 0) */
static int64_t mul_sat(int64_t a, int64_t b)
{
	int64_t r;
	return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

/* The largest divisor of n (below n) whose chunk of c * per bytes fits
 * `fit`; 0 for none. */
static int64_t chunk_within(int64_t n, int64_t per, int64_t fit)
{
	int64_t best = 0;
	for (int64_t c = 1; c < n && mul_sat(c, per) <= fit; c++)
		if (n % c == 0)
			best = c;
	return best;
}

int64_t ts_conv2d_cpu_rc_block(int64_t in_blocks, int64_t in_block, int64_t r, int64_t s,
			       int64_t out_block)
{
	if (in_blocks < 1 || in_block < 1 || r < 1 || s < 1 || out_block < 1)
		return 0;
	/* bytes of one input-channel block's weights, for one output block */
	int64_t per = mul_sat(mul_sat(mul_sat(mul_sat(in_block, r), s), out_block), 4);
	int64_t all = mul_sat(per, in_blocks), best = 0;
	if (ts_cpu_vector_lanes() == 8 && r == 1 && s == 1 && all > 32 * 1024)
		/* AVX2's 1x1: a chunk in half of L1 (3x3 ones ran 0-1.5% slower) */
		best = chunk_within(in_blocks, per, 16 * 1024);
	else if (ts_cpu_vector_lanes() == 16 && (r > 1 || s > 1) && all > 512 * 1024)
		/* AVX-512, a kernel wider than 1x1 whose block of weights is
		 * over half of L2: each register block of columns would stream
		 * all of it again; chunks of 1 to 4 blocks measured alike */
		best = chunk_within(in_blocks, per, 80 * 1024);
	return best > 0 ? best : in_blocks;
}

/* The padded input (any 5-D producer of the convolution C) is computed
 * once, before the convolution, unless `inl`: inlined, its select and
 * clamped index sit in the innermost loop, where only partitioning the
 * loops around it (likely() tests, loop_partition) takes them out. */
static ts_status conv_input(ts_schedule *s, const ts_tensor *C, bool parallel, bool inl)
{
	for (int i = 0; i < C->ninputs; i++) {
		ts_tensor *P = C->inputs[i];
		if (P->op != TS_OP_COMPUTE || P->ndim != 5 || !sch_pristine(s, ts_stage_of(s, P)))
			continue;
		ts_stage *sp = ts_stage_of(s, P);
		if (inl) {
			TS_TRY(ts_compute_inline(sp));
			continue;
		}
		ts_axis *f;
		TS_TRY(ts_vectorize(sp, ts_axis_of(sp, 4)));
		TS_TRY(ts_fuse(sp, ts_axis_of(sp, 0), ts_axis_of(sp, 1), &f));
		if (parallel)
			TS_TRY(ts_parallel(sp, f));
	}
	return TS_OK;
}

/* Whether convolution C reads more input than weights: then its row
 * blocks go outside its channel blocks, so that a block of input rows
 * serves every channel block while it is in cache, and threads split the
 * image rather than each reading all of it.  With more weights (deep
 * layers), the channel blocks stay outside and each block's weights serve
 * every row. */
static bool rows_outer(const ts_tensor *C)
{
	int64_t in = 0, w = 0;
	for (int i = 0; i < C->ninputs; i++) {
		const ts_tensor *t = C->inputs[i];
		int64_t n = ts_tensor_numel(t);
		if (t->ndim == 6)
			w += n;
		else
			in += n;
	}
	return in > w;
}

/* oh_block 0: on narrow images, several rows per register block, up to
 * ow_block positions, as many as leave the fewest rows computed twice (a
 * tail block is shifted inward over rows done already).  ResNet-50's 7x7
 * layers take 1 row of 7, not 2 (8 rows for 7): 5% faster with its
 * weights coming from cache, at 1 and 2 threads, although 2 rows are
 * faster with the weights in registers' reach (hot). */
static int64_t auto_rows(int64_t oh, int64_t ow, int64_t ow_block, int64_t cap)
{
	/* more rows than the image never waste fewer, nor than `cap` (the
	 * rows are unrolled) unroll: the search stays within both whatever
	 * ow_block is (INT64_MAX searched for ages) */
	int64_t most = ow < ow_block ? ow_block / ow : 1, best = 1;
	if (most > oh)
		most = oh;
	if (most > cap)
		most = cap;
	for (int64_t r = 2; r <= most; r++)
		if ((oh + r - 1) / r * r <= (oh + best - 1) / best * best)
			best = r;
	return best;
}

/* The weights Wc[O/y, C/x, R, S, x, y] of convolution C (its 6-D input). */
static const ts_tensor *conv_weights(const ts_tensor *C)
{
	for (int i = 0; i < C->ninputs; i++)
		if (C->inputs[i]->ndim == 6)
			return C->inputs[i];
	return NULL;
}

/* With channel blocks outside the rows (weights outweigh the input),
 * every channel block reads the whole input once more.  Where one block's
 * weights are small (1x1 convolutions, one vector of channels per block),
 * that is many passes over an input larger than the cache: ResNet-50's
 * stride-2 1x1 layer 512 -> 1024 at 28x28 read its input 128 times on
 * AVX2.  Such blocks go in groups: a group's weights (at most 128 KB) stay
 * in cache while its row blocks run, and each row of input serves every
 * block of the group in turn.  The group: the largest power of two whose
 * weights fit, dividing the channel blocks and leaving at least 8 groups
 * to run in parallel; 1 (no groups) where none is 2 or more. */
static int64_t channel_group(const ts_tensor *C, const ts_tensor *Y)
{
	const ts_tensor *W = conv_weights(C);
	/* one output block's weights, in bytes */
	int64_t per_block = W ? ts_tensor_numel(W) / W->shape[0] * 4 : 0, blocks = Y->shape[1];
	int64_t g = 1;
	while (per_block > 0 && 2 * g * per_block <= 128 * 1024 && blocks % (2 * g) == 0 &&
	       blocks / (2 * g) >= 8)
		g *= 2;
	return g;
}

/* The vectors of output channels conv_accumulator unrolls: more than two
 * vectors go one by one. */
static int64_t channel_vectors(int64_t channels)
{
	int64_t lanes = ts_cpu_vector_lanes();
	return channels > 2 * lanes && channels % lanes == 0 ? channels / lanes : 1;
}

/* Whether convolution C's sum skips padding taps: its term is
 * select(inside, x * w, -0.0) (ts_op_conv2d_nchwc with padding). */
static bool skips_padding(const ts_tensor *C)
{
	const ts_expr *b = C->body;
	if (b->kind != IR_REDUCE)
		return false;
	const ts_expr *t = b->u.reduce.source;
	return t->kind == IR_SELECT && ir_is_neg_zero(t->u.select.f);
}

/* Resolves d->oh_block (0: auto_rows) and checks that the register block
 * it makes with d->ow_block, both clamped to the image, can be unrolled
 * (rows x columns x channel vectors copies of the body): refused before the
 * schedule changes, not by the unroll half-way through it. */
static ts_status conv_block(ts_schedule *s, const char *what, const ts_tensor *Y,
			    ts_conv2d_cpu_params *d)
{
	int64_t oh = Y->shape[2], ow = Y->shape[3], vecs = channel_vectors(Y->shape[4]);
	int64_t cols = d->ow_block < ow ? d->ow_block : ow;
	int64_t cap = TS_MAX_UNROLL_STMTS / mul_sat(cols, vecs);
	if (cap > TS_MAX_UNROLL)
		cap = TS_MAX_UNROLL;
	if (d->oh_block == 0)
		d->oh_block = auto_rows(oh, ow, d->ow_block, cap < 1 ? 1 : cap);
	if (d->oh_block > oh)
		d->oh_block = oh;
	int64_t copies = mul_sat(mul_sat(d->oh_block, cols), vecs);
	if (d->oh_block > TS_MAX_UNROLL || cols > TS_MAX_UNROLL || copies > TS_MAX_UNROLL_STMTS)
		return ts_error(s->ctx, TS_ERR_INVALID,
				"%s: a register block of %lld rows x %lld columns x %lld channel vectors is "
				"unrolled into %lld copies of the body; the limits are %d rows or columns and "
				"%d copies (choose a smaller oh_block or ow_block)", what,
				(long long)d->oh_block, (long long)cols, (long long)vecs, (long long)copies,
				TS_MAX_UNROLL, TS_MAX_UNROLL_STMTS);
	return TS_OK;
}

/* Y in blocks of oh_block rows x ow_block columns x the channel lanes (one
 * vector), images, channel blocks and row blocks fused into one parallel
 * loop (rows outside the channel blocks when rows_outer; channel blocks in
 * groups of `group` around the rows, the groups parallel, when group > 1);
 * *owo is the loop over a row's column blocks.  With padding, the rows
 * stay monotone in the loop that holds them, so that loop_partition can
 * split the border rows, whose padding taps the sum skips, from the rest:
 * their own loop, or the fused loop's outer part (the images of a batch
 * then run one after the other, each a parallel loop). */
static ts_status conv_output(ts_stage *sy, const ts_conv2d_cpu_params *d, bool rows, bool padded,
			     int64_t group, ts_axis **owo, ts_axis **outer, int64_t *row_blocks,
			     int64_t block[2])
{
	int64_t ow = sy->tensor->shape[3], oh_block = d->oh_block;
	/* a block no wider than the row: the columns past it would still
	 * take accumulators, and twice the registers spill */
	int64_t ow_block = block[1] = d->ow_block < ow ? d->ow_block : ow;
	block[0] = oh_block;
	ts_axis *img = ts_axis_of(sy, 0), *cb = ts_axis_of(sy, 1), *oho, *ohi, *owi, *f1, *f2;
	TS_TRY(ts_split(sy, ts_axis_of(sy, 2), oh_block, &oho, &ohi));
	*row_blocks = oho->extent;
	TS_TRY(ts_split(sy, ts_axis_of(sy, 3), ow_block, owo, &owi));
	if (rows) {
		TS_TRY(ts_reorder(sy, TS_AXES(img, oho, cb, *owo, ohi, owi)));
		if (img->extent == 1 || !padded) {
			TS_TRY(ts_fuse(sy, img, oho, &f1));
			TS_TRY(ts_fuse(sy, f1, cb, &f2));
		} else {
			TS_TRY(ts_fuse(sy, oho, cb, &f2));
		}
	} else if (group > 1) {
		/* each group's rows in a loop of their own */
		ts_axis *cbo, *cbi;
		TS_TRY(ts_split(sy, cb, group, &cbo, &cbi));
		TS_TRY(ts_reorder(sy, TS_AXES(img, cbo, oho, cbi, *owo, ohi, owi)));
		TS_TRY(ts_fuse(sy, img, cbo, &f2));
		*row_blocks = 0; /* the next block's weights: the group's, in cache */
	} else if (padded) {
		TS_TRY(ts_reorder(sy, TS_AXES(oho, *owo, ohi, owi)));
		TS_TRY(ts_fuse(sy, img, cb, &f2));
		*row_blocks = 1; /* the next channel block is the next iteration */
	} else {
		TS_TRY(ts_reorder(sy, TS_AXES(oho, *owo, ohi, owi)));
		TS_TRY(ts_fuse(sy, img, cb, &f1));
		TS_TRY(ts_fuse(sy, f1, oho, &f2));
	}
	TS_TRY(ts_vectorize(sy, ts_axis_of(sy, 4)));
	/* the block's store unrolled: with an epilogue (max(acc, 0)) a loop
	 * over the accumulator's columns kept LLVM from promoting it to
	 * registers in the border blocks, whose accumulators then lived on
	 * the stack: ResNet-50's 3x3 convolution + relu at 14x14 ran 23%
	 * slower than without relu, 5.5% at 56x56; unrolled, as fast */
	TS_TRY(ts_unroll(sy, ohi));
	TS_TRY(ts_unroll(sy, owi));
	*outer = f2;
	return d->parallel ? ts_parallel(sy, f2) : TS_OK;
}

/* The input-channel blocks per reduction chunk of convolution C under d
 * (its weights Wc[O/y, C/x, R, S, x, y]); 0: no chunks. */
static int64_t reduce_chunk(const ts_tensor *C, const ts_conv2d_cpu_params *d)
{
	const ts_tensor *W = conv_weights(C);
	if (!W)
		return 0;
	int64_t rc = d->rc_block ? d->rc_block
				 : ts_conv2d_cpu_rc_block(W->shape[1], W->shape[4], W->shape[2], W->shape[3],
							  W->shape[5]);
	return rc > 0 && rc < W->shape[1] ? rc : 0;
}

/* The accumulator block, computed at Y's loop `at`: rows x columns x
 * channel lanes, under the reduction (input channel blocks, kernel rows,
 * kernel columns, input channel lanes); rows and columns unrolled, the
 * lanes one vector (up to two vectors) or vectors in an unrolled loop of
 * their own.  With rc_block > 0, `at` encloses a stretch of register
 * blocks of ow_block columns: the input channel blocks run in chunks of
 * rc_block outside the stretch's blocks, and a block's accumulators are
 * loaded and stored once per chunk (the tail block partitioned off, so
 * that LLVM keeps the main blocks' in registers through the chunk). */
static ts_status conv_accumulator(ts_stage *sc, ts_stage *sy, ts_axis *at, int64_t ow_block,
				  int64_t rc_block)
{
	TS_TRY(ts_compute_at(sc, sy, at));
	ts_axis *h = ts_axis_of(sc, 2), *w = ts_axis_of(sc, 3), *oc = ts_axis_of(sc, 4);
	ts_axis *rco = ts_reduce_axis_of(sc, 0), *kh = ts_reduce_axis_of(sc, 1),
		*kw = ts_reduce_axis_of(sc, 2), *rci = ts_reduce_axis_of(sc, 3);
	ts_axis *order[11];
	int n = 0;
	if (rc_block > 0) {
		ts_axis *wo, *ro;
		TS_TRY(ts_split_tail(sc, w, ow_block, TS_TAIL_PARTITION, &wo, &w));
		TS_TRY(ts_split(sc, rco, rc_block, &ro, &rco));
		order[n++] = ro;
		order[n++] = wo;
	}
	order[n++] = rco, order[n++] = kh, order[n++] = kw, order[n++] = rci, order[n++] = h;
	int lanes = ts_cpu_vector_lanes();
	ts_axis *vec = oc; /* the lanes */
	if (channel_vectors(oc->extent) > 1) {
		/* more than two vectors of channels: vector by vector, each
		 * weight vector loaded once and used for every column, the
		 * columns' inputs broadcast once per step; column by column,
		 * all the weight vectors would stay live and spill */
		ts_axis *ocv;
		TS_TRY(ts_split(sc, oc, lanes, &ocv, &vec));
		TS_TRY(ts_unroll(sc, ocv));
		order[n++] = ocv;
	}
	order[n++] = w;
	order[n++] = vec;
	TS_TRY(ts_reorder(sc, n, order));
	TS_TRY(ts_unroll(sc, h));
	TS_TRY(ts_unroll(sc, w));
	return ts_vectorize(sc, vec);
}

ts_status ts_schedule_conv2d_nchwc_cpu(ts_schedule *s, ts_tensor *Y, const ts_conv2d_cpu_params *p)
{
	const char *what = "schedule_conv2d_nchwc_cpu";
	TS_TRY(sch_need(s, Y, what));
	ts_conv2d_cpu_params d = p ? *p : ts_conv2d_cpu_default();
	if (d.ow_block < 0 || d.oh_block < 0 || d.rc_block < 0)
		return ts_error(s->ctx, TS_ERR_INVALID, "%s: ow_block, oh_block and rc_block must be >= 0 "
				"(0: chosen), got %lld, %lld and %lld", what, (long long)d.ow_block,
				(long long)d.oh_block, (long long)d.rc_block);
	if ((int)d.pad < TS_PAD_AUTO || (int)d.pad > TS_PAD_INLINE)
		return ts_error(s->ctx, TS_ERR_INVALID, "%s: pad mode %d is none of TS_PAD_AUTO, TS_PAD_COPY, "
				"TS_PAD_INLINE", what, (int)d.pad);
	ts_tensor *chain[TS_MAX_EPILOGUE], *C;
	int n;
	TS_TRY(sch_epilogue_of(s, what, &sch_conv_root, Y, chain, &n, &C));
	/* a padding that is an output of the schedule is stored, so it
	 * cannot be inlined: AUTO copies it */
	bool pad_output = false;
	for (int i = 0; i < C->ninputs; i++) {
		const ts_stage *sp = C->inputs[i]->op == TS_OP_COMPUTE && C->inputs[i]->ndim == 5
					     ? ts_stage_of(s, C->inputs[i]) : NULL;
		if (sp && sp->is_output && sch_pristine(s, sp))
			pad_output = true;
	}
	if (pad_output && d.pad == TS_PAD_INLINE)
		return ts_error(s->ctx, TS_ERR_INVALID, "%s: %s's padded input is an output of the schedule, "
				"so it is stored and cannot be inlined (TS_PAD_INLINE); use TS_PAD_COPY or "
				"TS_PAD_AUTO", what, C->name);
	if (d.ow_block == 0)
		d.ow_block = ts_conv2d_cpu_ow_block(Y->shape[4]);
	TS_TRY(conv_block(s, what, Y, &d));
	bool rows = rows_outer(C);
	/* the sum skips the padding's taps (ts_op_conv2d_nchwc), so the
	 * border blocks loop_partition splits off read no padding: inlined,
	 * it costs no more than its tests there, and the copy's pass over
	 * the input is saved (ResNet-50's 3x3 layers at 2 threads: up to 1.2x
	 * faster than copied, none slower beyond noise) */
	bool inl = d.pad != TS_PAD_COPY && !pad_output;
	TS_TRY(conv_input(s, C, d.parallel, inl));
	ts_tensor *acc = sch_block_accumulator(s, Y, chain, n, C);
	if (!acc)
		return ts_last_status(s->ctx);
	ts_stage *sy = ts_stage_of(s, Y);
	ts_axis *owo, *outer;
	int64_t row_blocks, block[2]; /* the register block's rows and columns */
	TS_TRY(conv_output(sy, &d, rows, skips_padding(C), rows ? 1 : channel_group(C, Y), &owo, &outer, &row_blocks,
			block));
	int64_t rc_block = reduce_chunk(C, &d);
	if (rc_block > 0) {
		/* a stretch of column blocks whose accumulators (at most 8 KB)
		 * stay in L1 between chunks; stretches of equal length, since
		 * the last one is computed whole, moved back inside the row
		 * (with 21 blocks a stretch, a row of 22 computed 42: 1.7x
		 * slower than no chunks; 2 of 11: 4.5% faster) */
		int64_t bytes = mul_sat(mul_sat(mul_sat(block[0], block[1]), Y->shape[4]), 4);
		int64_t span = 8 * 1024 / bytes, blocks = owo->extent;
		span = span < 1 ? 1 : span > blocks ? blocks : span;
		int64_t stretches = blocks / span + (blocks % span != 0);
		span = blocks / stretches + (blocks % stretches != 0);
		ts_axis *in_stretch;
		TS_TRY(ts_split(sy, owo, span, &owo, &in_stretch));
	}
	TS_TRY(conv_accumulator(ts_stage_of(s, acc), sy, owo, block[1], rc_block));
	/* weights outweigh the input: each channel block's weights come from
	 * memory in its first row block, while the others find them in
	 * cache.  Fetching the next block's weights a little in every step of
	 * the innermost reduction spreads that traffic over the whole block
	 * (ResNet-50's layer4 at batch 1: -10% to -15% per convolution with
	 * cold weights; at the reduction's outer loops the bursts of
	 * prefetches cost more than they save). */
	ts_stage *sc = ts_stage_of(s, acc);
	if (!rows && d.prefetch && row_blocks > 0 && rc_block == 0)
		for (int i = 0; i < C->ninputs; i++)
			if (C->inputs[i]->ndim == 6 && C->inputs[i]->op == TS_OP_PLACEHOLDER)
				TS_TRY(ts_prefetch_ahead(sc, C->inputs[i], ts_reduce_axis_of(sc, 3), outer,
						      row_blocks));
	return TS_OK;
}

ts_depthwise_cpu_params ts_depthwise_cpu_default(void)
{
	return (ts_depthwise_cpu_params){.ow_block = 0, .oh_block = 0, .parallel = true};
}

/* The register block of a window stage over ow output columns and oh rows
 * with `lanes`-wide vectors: two vectors of columns where the row has
 * them, else one, else the whole row; then up to 2 rows (8 for rows
 * narrower than a vector), a divisor of oh where one is near, since a
 * guarded tail row costs more than a smaller block. */
static void window_block(int64_t ow, int64_t oh, int lanes, ts_depthwise_cpu_params *d)
{
	if (d->ow_block <= 0)
		d->ow_block = ow >= 2 * lanes ? 2 * lanes : ow >= lanes ? lanes : ow;
	if (d->ow_block > ow) /* as oh_block: no block wider than the row */
		d->ow_block = ow;
	if (d->oh_block <= 0) {
		int64_t want = d->ow_block < lanes ? 8 : 2, best = 1;
		for (int64_t r = 1; r <= want && r <= oh; r++)
			if (oh % r == 0)
				best = r;
		d->oh_block = best * 2 > want ? best : want;
	}
	if (d->oh_block > oh)
		d->oh_block = oh;
}

/* The padding stage P of a window stage, computed per (image, channel)
 * plane just before the plane is read: one plane stays in cache, and the
 * padded tensor is never written whole. */
static ts_status schedule_window_pad(ts_schedule *s, ts_tensor *P, ts_stage *sy, ts_axis *plane,
				     int lanes)
{
	ts_stage *sp = ts_stage_of(s, P);
	ts_axis *po, *pi;
	if (!sp)
		return ts_last_status(s->ctx);
	TS_TRY(ts_compute_at(sp, sy, plane));
	TS_TRY(ts_split_tail(sp, ts_axis_of(sp, 3), lanes, TS_TAIL_PARTITION, &po, &pi));
	return ts_vectorize(sp, pi);
}

/* *p or the defaults; blocks of 0 are chosen from the shape later,
 * negative ones refused. */
static ts_status depthwise_params(ts_schedule *s, const char *what, const ts_depthwise_cpu_params *p,
				  ts_depthwise_cpu_params *d)
{
	*d = p ? *p : ts_depthwise_cpu_default();
	if (d->ow_block < 0 || d->oh_block < 0)
		return ts_error(s->ctx, TS_ERR_INVALID, "%s: ow_block and oh_block must be >= 0 (0: "
				"chosen from the shape), got %lld and %lld", what, (long long)d->ow_block,
				(long long)d->oh_block);
	return TS_OK;
}

ts_status ts_schedule_depthwise_cpu(ts_schedule *s, ts_tensor *Y, const ts_depthwise_cpu_params *p)
{
	const char *what = "schedule_depthwise_cpu";
	TS_TRY(sch_need(s, Y, what));
	ts_depthwise_cpu_params d;
	TS_TRY(depthwise_params(s, what, p, &d));
	if (Y->op != TS_OP_COMPUTE || Y->ndim != 4 || Y->nreduce != 2 || Y->ninputs < 1)
		return ts_error(s->ctx, TS_ERR_INVALID, "%s: %s is not a 2-D window over NCHW (a depthwise "
				"convolution or a max pooling: 4 axes, 2 reduction axes; an average "
				"pooling's window is its stage avg_pool2d_sum, ts_op_stage)", what, Y->name);
	TS_TRY(sch_untouched(s, what, Y));
	/* the producers attached to Y's planes, chosen while Y is still
	 * their reader (the cache below reads them after) */
	uint64_t attach = 0;
	for (int i = 0; i < Y->ninputs && i < 64; i++) {
		ts_tensor *P = Y->inputs[i];
		if (P->op == TS_OP_COMPUTE && P->ndim == 4 && P->nreduce == 0 && sch_own_producer(s, P, Y, true))
			attach |= (uint64_t)1 << i;
	}
	int lanes = ts_cpu_vector_lanes();
	window_block(Y->shape[3], Y->shape[2], lanes, &d);
	ts_tensor *YC = ts_cache_write(s, Y, TS_SCOPE_LOCAL);
	if (!YC)
		return ts_last_status(s->ctx);
	ts_stage *sy = ts_stage_of(s, Y), *sc = ts_stage_of(s, YC);
	ts_axis *f, *yo, *yi, *xo, *xi;
	TS_TRY(ts_fuse(sy, ts_axis_of(sy, 0), ts_axis_of(sy, 1), &f));
	TS_TRY(ts_split(sy, ts_axis_of(sy, 2), d.oh_block, &yo, &yi));
	TS_TRY(ts_split_tail(sy, ts_axis_of(sy, 3), d.ow_block, TS_TAIL_PARTITION, &xo, &xi));
	TS_TRY(ts_reorder(sy, TS_AXES(f, yo, xo, yi, xi)));
	if (d.parallel)
		TS_TRY(ts_parallel(sy, f));
	TS_TRY(ts_vectorize(sy, xi));
	/* the accumulator block: the window outside, rows unrolled, columns a
	 * vector; a small window unrolled too, so that every multiply-add of
	 * a block is straight-line code with its inputs in registers */
	TS_TRY(ts_compute_at(sc, sy, xo));
	ts_axis *h = ts_axis_of(sc, 2), *w = ts_axis_of(sc, 3);
	ts_axis *ry = ts_reduce_axis_of(sc, 0), *rx = ts_reduce_axis_of(sc, 1);
	TS_TRY(ts_reorder(sc, TS_AXES(ry, rx, h, w)));
	TS_TRY(ts_unroll(sc, h));
	TS_TRY(ts_vectorize(sc, w));
	if (mul_sat(mul_sat(ry->extent, rx->extent), d.oh_block) <= 256) {
		TS_TRY(ts_unroll(sc, rx));
		TS_TRY(ts_unroll(sc, ry));
	}
	/* the padding (or any elementwise producer), one plane at a time,
	 * where nothing else reads it */
	for (int i = 0; i < Y->ninputs && i < 64; i++)
		if (attach >> i & 1)
			TS_TRY(schedule_window_pad(s, Y->inputs[i], sy, f, lanes));
	return TS_OK;
}

/* ---- depthwise on NCHW[x]c ------------------------------------------------------ */

/* The largest divisor of n from lo to hi, or 0. */
static int64_t divisor_in(int64_t n, int64_t lo, int64_t hi)
{
	for (int64_t f = hi; f >= lo; f--)
		if (n % f == 0)
			return f;
	return 0;
}

/* The register block of an NCHW[x]c depthwise convolution over ow output
 * columns and oh rows, each output `vectors` vectors of channel lanes, the
 * window `taps` multiply-adds: at most hi columns, as many as leave the
 * window's weights and a few input vectors in the CPU's vector registers
 * (14 with AVX-512's 32 registers and a 3x3 window; 4 with AVX2's 16,
 * where 14 columns spilled and ran 1.5-2x slower), a divisor of the row
 * from about hi/2 to hi columns (a partitioned tail costs a second copy
 * of the block's code), else the whole row when narrower than 8, else up
 * to 8; then one row, or on rows narrower than 8 columns enough rows for
 * about 8 vectors (hi, when fewer), a divisor of oh where one is near,
 * since a guarded row costs a test per row of the block.  More rows would
 * reuse the input rows in registers, but the kernel is bound by memory
 * (each input vector feeds 9 multiply-adds of a 3x3 window), and taller
 * blocks only spill. */
static void dw_nchwc_block(int64_t ow, int64_t oh, int64_t vectors, int64_t taps,
			   ts_depthwise_cpu_params *d)
{
	int64_t regs = ts_cpu_vector_lanes() == 16 ? 32 : 16;
	int64_t hi = regs / (vectors > 0 ? vectors : 1) - taps - 3;
	hi = hi < 4 ? 4 : hi > 14 ? 14 : hi;
	if (d->ow_block <= 0) {
		int64_t f = divisor_in(ow, hi >= 8 ? (hi + 1) / 2 : hi - 1, hi);
		d->ow_block = f ? f : ow < 8 ? ow : hi < 8 ? hi : 8;
	}
	if (d->ow_block > ow)
		d->ow_block = ow;
	if (d->oh_block <= 0) {
		int64_t want = d->ow_block >= 8 ? 1 : (hi < 8 ? hi : 8) / d->ow_block;
		want = want < 1 ? 1 : want;
		int64_t best = divisor_in(oh, (want + 1) / 2, want);
		d->oh_block = best ? best : want;
	}
	if (d->oh_block > oh)
		d->oh_block = oh;
}

/* Y (or the chain's end) in blocks of oh_block rows x ow_block columns x
 * the channel lanes, images, channel blocks and row blocks fused into one
 * (parallel) loop; *xo is the loop over a row's column blocks, the last
 * partial block partitioned off. */
static ts_status dw_nchwc_output(ts_stage *sy, const ts_depthwise_cpu_params *d, ts_axis **xo)
{
	ts_axis *yo, *yi, *xi, *f;
	TS_TRY(ts_split(sy, ts_axis_of(sy, 2), d->oh_block, &yo, &yi));
	TS_TRY(ts_split_tail(sy, ts_axis_of(sy, 3), d->ow_block, TS_TAIL_PARTITION, xo, &xi));
	TS_TRY(ts_reorder(sy, TS_AXES(yo, *xo, yi, xi)));
	TS_TRY(ts_fuse(sy, ts_axis_of(sy, 0), ts_axis_of(sy, 1), &f));
	TS_TRY(ts_fuse(sy, f, yo, &f));
	TS_TRY(ts_unroll(sy, yi));
	TS_TRY(ts_unroll(sy, xi));
	TS_TRY(ts_vectorize(sy, ts_axis_of(sy, 4)));
	return d->parallel ? ts_parallel(sy, f) : TS_OK;
}

/* The accumulator block at Y's column block xo: the window outermost,
 * rows and columns unrolled, the lanes one vector; a window of up to 512
 * multiply-adds per block unrolled too, so that the block is straight-line
 * code with its inputs and weights in registers (the partitioned tail
 * block is a second copy: larger ones would pass TS_MAX_UNROLL_STMTS). */
static ts_status dw_nchwc_accumulator(ts_stage *sc, ts_stage *sy, ts_axis *xo,
				      const ts_depthwise_cpu_params *d)
{
	TS_TRY(ts_compute_at(sc, sy, xo));
	ts_axis *h = ts_axis_of(sc, 2), *w = ts_axis_of(sc, 3), *ci = ts_axis_of(sc, 4);
	ts_axis *ry = ts_reduce_axis_of(sc, 0), *rx = ts_reduce_axis_of(sc, 1);
	TS_TRY(ts_reorder(sc, TS_AXES(ry, rx, h, w, ci)));
	TS_TRY(ts_unroll(sc, h));
	TS_TRY(ts_unroll(sc, w));
	TS_TRY(ts_vectorize(sc, ci));
	if (mul_sat(mul_sat(mul_sat(ry->extent, rx->extent), d->oh_block), d->ow_block) <= 512) {
		TS_TRY(ts_unroll(sc, rx));
		TS_TRY(ts_unroll(sc, ry));
	}
	return TS_OK;
}

ts_status ts_schedule_depthwise_nchwc_cpu(ts_schedule *s, ts_tensor *Y,
					  const ts_depthwise_cpu_params *p)
{
	const char *what = "schedule_depthwise_nchwc_cpu";
	TS_TRY(sch_need(s, Y, what));
	ts_depthwise_cpu_params d;
	TS_TRY(depthwise_params(s, what, p, &d));
	ts_tensor *chain[TS_MAX_EPILOGUE], *C;
	int n;
	TS_TRY(sch_epilogue_of(s, what, &sch_dw_nchwc_root, Y, chain, &n, &C));
	/* the window's taps and the vectors of a block of channel lanes, each
	 * clamped (beyond the registers, any larger count chooses the same) */
	int64_t lanes = ts_cpu_vector_lanes(), taps = 1, vectors = C->shape[4] > 0 && C->shape[4] <= 1024
									? (C->shape[4] + lanes - 1) / lanes : 64;
	for (int i = 0; i < 2; i++) {
		int64_t e = C->reduce_axis[i]->extent;
		taps *= e >= 1 && e <= 64 ? e : 64;
	}
	dw_nchwc_block(C->shape[3], C->shape[2], vectors, taps, &d);
	ts_tensor *acc = sch_block_accumulator(s, Y, chain, n, C);
	if (!acc)
		return ts_last_status(s->ctx);
	ts_stage *sy = ts_stage_of(s, Y);
	ts_axis *xo;
	TS_TRY(dw_nchwc_output(sy, &d, &xo));
	TS_TRY(dw_nchwc_accumulator(ts_stage_of(s, acc), sy, xo, &d));
	/* the padding (or any elementwise producer) inlined: the block reads
	 * the input itself, each vector under the padding's test (a masked
	 * load), whose row and column parts LLVM computes once per row and
	 * column of the block.  The kernel is bound by memory, and a padded
	 * copy, even of the few rows a block reads and kept in cache, costs
	 * more than the tests: 15-25% on MobileNet-v2's layers.  One that
	 * is an output is stored, so it stays at root. */
	for (int i = 0; i < C->ninputs; i++) {
		ts_tensor *P = C->inputs[i];
		if (P->op == TS_OP_COMPUTE && P->ndim == 5 && !P->nreduce && sch_own_producer(s, P, C, false))
			TS_TRY(ts_compute_inline(ts_stage_of(s, P)));
	}
	return TS_OK;
}
