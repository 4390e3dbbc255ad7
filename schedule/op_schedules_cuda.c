/*
 * op_schedules_cuda.c - the GPU schedules: matmul and conv2d tiled for
 * shared memory and registers (any shape: tiles sized to the problem,
 * edges guarded), and the tensor-core matmul on warp-level MMA.  As in
 * op_schedules.c, only public primitives are called.
 */
#include "op_schedules.h"
#include "op_schedules_util.h"

#include "ops.h"

ts_matmul_cuda_params ts_matmul_cuda_default(void)
{
	return (ts_matmul_cuda_params){.block_m = 64, .block_n = 64, .thread_m = 4, .thread_n = 4,
				       .tile_k = 8, .double_buffer = 1};
}

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* a / b rounded up, for a >= 0 and b >= 1, without forming a + b - 1
 * (a caller's parameter may be near INT64_MAX) */
static int64_t ceil_div64(int64_t a, int64_t b)
{
	return a / b + (a % b != 0);
}

/* Tile sizes from the shape (m, n: C's rows and columns, k: the reduction).
 * A block tile never exceeds the dimension it covers, nor a thread's
 * register block its block tile, nor the k step k: a split larger than its
 * axis would leave threads bound past the loops of the other stages
 * (a GEMV's block would be 16 threads over one row).  With the default
 * tiles (`widen`), the threads a skinny dimension leaves idle go to the
 * other one, doubling its block tile up to 256 threads per block; with
 * 4 x 4 register blocks and an 8-deep k step, shared memory stays at
 * (block_m + block_n) * 8 * 4 bytes, at most 33 KB, under the 48 KB of
 * static shared memory.  Shapes the tiles do not divide keep these tiles:
 * bound inference sizes the shared tiles by the tile and guards the
 * cooperative loads and the final stores at the edges. */
static ts_matmul_cuda_params fit_tiles(ts_matmul_cuda_params d, int64_t m, int64_t n, int64_t k,
				       bool widen)
{
	d.block_m = min64(d.block_m, m);
	d.block_n = min64(d.block_n, n);
	d.thread_m = min64(d.thread_m, d.block_m);
	d.thread_n = min64(d.thread_n, d.block_n);
	d.tile_k = min64(d.tile_k, k);
	int64_t tm = ceil_div64(d.block_m, d.thread_m), tn = ceil_div64(d.block_n, d.thread_n);
	while (widen && tm * tn * 2 <= 256 && d.block_n * 2 <= ceil_div64(n, d.thread_n) * d.thread_n) {
		d.block_n *= 2;
		tn *= 2;
	}
	while (widen && tm * tn * 2 <= 256 && d.block_m * 2 <= ceil_div64(m, d.thread_m) * d.thread_m) {
		d.block_m *= 2;
		tm *= 2;
	}
	return d;
}

/* C tiled into blocks of block_m x block_n, each thread accumulating a
 * thread_m x thread_n block in registers; the A and B tiles of each k step
 * are staged in shared memory by all threads of the block. */
/* Elements added to each row of the shared A tile: a warp's threads read
 * one column of it, rows thread_m apart per threadIdx.y; when those rows
 * are a multiple of 32 elements apart they fall in one bank, and 4 more
 * per row (keeping rows 16-byte aligned) moves them apart, where the
 * tiles still fit the 48 KB of static shared memory (a skinny shape's
 * widened tiles may fill it). */
static int64_t a_tile_pad(const ts_matmul_cuda_params *d, int64_t elem_bytes)
{
	if ((d->thread_m * d->tile_k) % 32 != 0 || (d->thread_m * (d->tile_k + 4)) % 32 == 0 ||
	    d->block_m > 65536 || d->block_n > 65536 || d->tile_k > 65536)
		return 0;
	int64_t bytes = elem_bytes * (d->block_m * (d->tile_k + 4) + d->block_n * d->tile_k);
	return bytes * (d->double_buffer ? 2 : 1) <= 49152 ? 4 : 0;
}

/* The shared tiles' bytes, both copies of a double buffer counted
 * (INT64_MAX for tiles past 2^16, which never fit). */
static int64_t cuda_tile_bytes(const ts_matmul_cuda_params *d, int64_t elem_bytes)
{
	if (d->block_m > 65536 || d->block_n > 65536 || d->tile_k > 65536)
		return INT64_MAX;
	/* each factor is at most 2^16: no overflow */
	return elem_bytes * (d->block_m * (d->tile_k + a_tile_pad(d, elem_bytes)) +
			     d->block_n * d->tile_k) * (d->double_buffer ? 2 : 1);
}

/* A GPU GEMM's tile loops: block rows and columns on blockIdx.y/x, the
 * threads' (the SIMT GEMM's) or warps' (the tensor-core GEMM's, its lanes
 * on threadIdx.x) rows and columns on `rows` and the next index below. */
static ts_status bind_tiles(ts_stage *sc, ts_axis *by, ts_axis *bx, ts_axis *ty, ts_axis *tx,
			    ts_thread_tag rows)
{
	TS_TRY(ts_bind(sc, by, TS_BLOCK_Y));
	TS_TRY(ts_bind(sc, bx, TS_BLOCK_X));
	TS_TRY(ts_bind(sc, ty, rows));
	return ts_bind(sc, tx, (ts_thread_tag)(rows - 1));
}

/* A shared-memory tile T computed at `at`'s loop `axis` by all the
 * block's ty x tx threads (the CUDA GEMM's and convolution's cooperative
 * fetch): its axes fused, `vec` consecutive elements per thread (a
 * vectorized loop; 1: none), double-buffered with db. */
static ts_status cuda_fetch(ts_schedule *s, ts_tensor *T, ts_stage *at, ts_axis *axis, int64_t ty,
			    int64_t tx, int64_t vec, bool db)
{
	ts_stage *ss = ts_stage_of(s, T);
	TS_TRY(ts_compute_at(ss, at, axis));
	ts_axis *f = ts_axis_of(ss, 0), *v, *o, *t, *o2, *t2;
	for (int i = 1; i < T->ndim; i++)
		TS_TRY(ts_fuse(ss, f, ts_axis_of(ss, i), &f));
	if (vec > 1) {
		TS_TRY(ts_split(ss, f, vec, &f, &v));
		TS_TRY(ts_vectorize(ss, v));
	}
	TS_TRY(ts_split(ss, f, ty * tx, &o, &t));
	TS_TRY(ts_split(ss, t, tx, &o2, &t2));
	TS_TRY(ts_bind(ss, o2, TS_THREAD_Y));
	TS_TRY(ts_bind(ss, t2, TS_THREAD_X));
	return db ? ts_double_buffer(ss) : TS_OK;
}

static ts_status schedule_gemm_like_cuda(ts_schedule *s, ts_tensor *C, int a_in, int b_in,
					 const ts_matmul_cuda_params *d)
{
	ts_ctx *ctx = s->ctx;
	ts_tensor *A = C->inputs[a_in], *B = C->inputs[b_in];
	ts_tensor *AS = ts_cache_read(s, A, TS_SCOPE_SHARED, 1, &C);
	ts_tensor *BS = AS ? ts_cache_read(s, B, TS_SCOPE_SHARED, 1, &C) : NULL;
	ts_tensor *CL = BS ? ts_cache_write(s, C, TS_SCOPE_LOCAL) : NULL;
	if (!CL)
		return ts_last_status(ctx);
	int64_t pad = a_tile_pad(d, C->dtype.bits / 8);
	if (pad && AS->ndim >= 2)
		TS_TRY(ts_storage_align(ts_stage_of(s, AS), AS->ndim - 2, 32, (d->tile_k + pad) % 32));
	ts_stage *sc = ts_stage_of(s, C), *sl = ts_stage_of(s, CL);
	int64_t tm = ceil_div64(d->block_m, d->thread_m), tn = ceil_div64(d->block_n, d->thread_n);
	ts_axis *by, *bx, *yi, *xi, *ty, *tx, *yr, *xr;
	TS_TRY(ts_tile(sc, ts_axis_of(sc, C->ndim - 2), ts_axis_of(sc, C->ndim - 1), d->block_m,
		    d->block_n, &by, &bx, &yi, &xi));
	TS_TRY(ts_split(sc, yi, d->thread_m, &ty, &yr));
	TS_TRY(ts_split(sc, xi, d->thread_n, &tx, &xr));
	TS_TRY(ts_reorder(sc, TS_AXES(by, bx, ty, tx, yr, xr)));
	if (C->ndim > 2) {
		/* a batched product: the batches (fused) are the grid's z, so
		 * every batch's tiles run at once */
		ts_axis *bz = ts_axis_of(sc, 0);
		for (int i = 1; i < C->ndim - 2; i++)
			TS_TRY(ts_fuse(sc, bz, ts_axis_of(sc, i), &bz));
		TS_TRY(ts_bind(sc, bz, TS_BLOCK_Z));
	}
	TS_TRY(bind_tiles(sc, by, bx, ty, tx, TS_THREAD_Y));
	/* unrolled, the register block is indexed by constants: a loop would
	 * index it dynamically and put it in local memory; a row of 2 or 4 is
	 * stored as one float2/float4 where its columns are aligned (the
	 * emitter builds it from the registers) */
	TS_TRY(ts_unroll(sc, yr));
	if (d->thread_n == 2 || d->thread_n == 4)
		TS_TRY(ts_vectorize(sc, xr));
	else
		TS_TRY(ts_unroll(sc, xr));
	TS_TRY(ts_compute_at(sl, sc, tx));
	ts_axis *ko, *ki;
	ts_axis *ly = ts_axis_of(sl, C->ndim - 2), *lx = ts_axis_of(sl, C->ndim - 1);
	TS_TRY(ts_split(sl, ts_reduce_axis_of(sl, 0), d->tile_k, &ko, &ki));
	TS_TRY(ts_reorder(sl, TS_AXES(ko, ki, ly, lx)));
	TS_TRY(ts_unroll(sl, ly));
	TS_TRY(ts_unroll(sl, lx));
	/* 4 consecutive floats per thread: one 16-byte load where aligned */
	TS_TRY(cuda_fetch(s, AS, sl, ko, tm, tn, 4, d->double_buffer));
	TS_TRY(cuda_fetch(s, BS, sl, ko, tm, tn, 4, d->double_buffer));
	return TS_OK;
}

/* A block of more than 1024 threads cannot launch, and shared tiles over
 * 48 KB cannot be declared statically: refused here, naming the tiles,
 * rather than by the CUDA compiler. */
static ts_status fits_block(ts_schedule *s, const char *what, int64_t threads, int64_t shared,
			    const char *tiles)
{
	if (threads > 1024)
		return ts_error(s->ctx, TS_ERR_INVALID,
				"%s: %lld threads per block, more than 1024 (fewer, larger thread blocks: raise thread_m/thread_n or lower block_m/block_n)",
				what, (long long)threads);
	if (shared > 49152)
		return ts_error(s->ctx, TS_ERR_INVALID,
				"%s: shared tiles %s take %lld bytes (both copies of a double buffer), more than the 48 KB of static shared memory",
				what, tiles, (long long)shared);
	return TS_OK;
}

/* A batched product's batches are the grid's z: at most 65535 blocks. */
static ts_status grid_z_refused(ts_schedule *s, const char *what, int64_t batches, const ts_tensor *C)
{
	return ts_error(s->ctx, TS_ERR_INVALID, "%s: %lld batches, more than the 65535 blocks of the "
			"grid's z (%s)", what, (long long)batches, C->name);
}

static ts_status cuda_params(ts_schedule *s, const char *what, const ts_matmul_cuda_params *d)
{
	return sch_positive(s, what, 5,
			(int64_t[]){d->block_m, d->block_n, d->thread_m, d->thread_n, d->tile_k},
			(const char *[]){"block_m", "block_n", "thread_m", "thread_n", "tile_k"});
}

ts_status ts_schedule_matmul_cuda(ts_schedule *s, ts_tensor *C, const ts_matmul_cuda_params *p)
{
	TS_TRY(sch_need(s, C, "schedule_matmul_cuda"));
	ts_matmul_cuda_params d = p ? *p : ts_matmul_cuda_default();
	TS_TRY(cuda_params(s, "schedule_matmul_cuda", &d));
	if (C->ninputs != 2 || C->nreduce != 1 || C->ndim < 2)
		return ts_error(s->ctx, TS_ERR_INVALID, "schedule_matmul_cuda: %s is not a matmul", C->name);
	d = fit_tiles(d, C->shape[C->ndim - 2], C->shape[C->ndim - 1], C->reduce_axis[0]->extent, !p);
	int64_t batches = 1;
	for (int i = 0; i + 2 < C->ndim; i++)
		batches *= C->shape[i]; /* no overflow: C has fewer than 2^31 elements */
	if (batches > 65535)
		return grid_z_refused(s, "schedule_matmul_cuda", batches, C);
	int64_t bytes = cuda_tile_bytes(&d, C->dtype.bits / 8);
	if (!p && bytes > 49152) { /* a skinny shape's widened tiles: one copy */
		d.double_buffer = 0;
		bytes = cuda_tile_bytes(&d, C->dtype.bits / 8);
	}
	int64_t tm = ceil_div64(d.block_m, d.thread_m), tn = ceil_div64(d.block_n, d.thread_n);
	int64_t threads = tm > 1024 || tn > 1024 ? (tm > tn ? tm : tn) : tm * tn; /* no overflow */
	TS_TRY(fits_block(s, "schedule_matmul_cuda", threads, bytes, "(block_m + block_n) x tile_k"));
	TS_TRY(sch_untouched(s, "schedule_matmul_cuda", C));
	return schedule_gemm_like_cuda(s, C, 0, 1, &d);
}

/* The coefficient of v in an index a*v + b*r (+ ...) built by fe_window,
 * 0 where it is not of that form. */
static int64_t index_coef(const ts_expr *e, const ts_expr *v)
{
	int64_t k;
	switch (e->kind) {
	case IR_VAR:
		return e == v;
	case IR_ADD:
		return index_coef(e->u.bin.a, v) + index_coef(e->u.bin.b, v);
	case IR_MUL:
		if (ir_is_const_int(e->u.bin.b, &k) && e->u.bin.a == v)
			return k;
		if (ir_is_const_int(e->u.bin.a, &k) && e->u.bin.b == v)
			return k;
		return 0;
	default:
		return 0;
	}
}

/* A convolution's window: its read of the (padded) input P and of the
 * weights, and each output row's and column's stride and each tap's
 * dilation; false where Y is not the plain (one group) NCHW convolution
 * ts_op_conv2d_nchw builds. */
typedef struct conv_win {
	ts_tensor *P, *W;
	int64_t stride[2], dil[2], R, S;
} conv_win;

static bool conv_window_of(const ts_tensor *Y, conv_win *w)
{
	const ts_expr *b = Y->body;
	if (Y->ninputs != 2 || !b || b->kind != IR_REDUCE || b->u.reduce.op != TS_REDUCE_SUM ||
	    b->u.reduce.init || b->u.reduce.source->kind != IR_MUL)
		return false;
	const ts_expr *in = b->u.reduce.source->u.bin.a, *wt = b->u.reduce.source->u.bin.b;
	if (in->kind != IR_READ || wt->kind != IR_READ || in->u.read.n != 4 || wt->u.read.n != 4)
		return false;
	w->P = in->u.read.tensor;
	w->W = wt->u.read.tensor;
	/* one group: the input channel is the reduction's channel itself */
	if (w->W->op != TS_OP_PLACEHOLDER || in->u.read.idx[1] != Y->reduce_axis[0]->var ||
	    w->W->shape[1] != w->P->shape[1])
		return false;
	for (int d = 0; d < 2; d++) {
		w->stride[d] = index_coef(in->u.read.idx[2 + d], Y->axis[2 + d]->var);
		w->dil[d] = index_coef(in->u.read.idx[2 + d], Y->reduce_axis[1 + d]->var);
		if (w->stride[d] < 1 || w->dil[d] < 1 || w->stride[d] > 64 || w->dil[d] > 64)
			return false;
	}
	w->R = Y->reduce_axis[1]->extent;
	w->S = Y->reduce_axis[2]->extent;
	/* bounded, with the strides and dilations, so that the tiles' sizes
	 * (conv_tiles_of) cannot overflow; a larger kernel takes the simple
	 * schedule */
	return w->R <= 4096 && w->S <= 4096;
}

/* The largest divisor of n in [4, 8], else min(n, 8): output columns per
 * block, so that rows are whole where the width allows. */
static int64_t conv_cols(int64_t n)
{
	for (int64_t c = 8; c >= 4; c--)
		if (n % c == 0)
			return c;
	return min64(n, 8);
}

/* A block's tiles: block_m output channels, bh x bw output pixels; the
 * shared input tile (tile_k channels, the rows and columns the pixels'
 * windows cover) and weight tile, both copies of a double buffer. */
typedef struct conv_tiles {
	int64_t bh, bw, threads, bytes;
} conv_tiles;

static conv_tiles conv_tiles_of(const ts_tensor *Y, const conv_win *w, const ts_matmul_cuda_params *d)
{
	conv_tiles t;
	t.bw = conv_cols(Y->shape[3]);
	t.bh = min64(Y->shape[2], d->block_n / t.bw > 0 ? d->block_n / t.bw : 1);
	/* the loops cover whole thread steps: ceil(bw / thread_n) of
	 * thread_n columns, ceil(block_m / thread_m) of thread_m channels,
	 * and bound inference sizes the tiles to them; the parameters and
	 * the window are bounded (ts_schedule_conv2d_cuda): no overflow */
	int64_t tw = ceil_div64(t.bw, d->thread_n), tk = ceil_div64(d->block_m, d->thread_m);
	int64_t rows = (t.bh - 1) * w->stride[0] + (w->R - 1) * w->dil[0] + 1;
	int64_t cols = (tw * d->thread_n - 1) * w->stride[1] + (w->S - 1) * w->dil[1] + 1;
	int64_t in = d->tile_k * min64(rows, w->P->shape[2]) * min64(cols, w->P->shape[3]);
	int64_t wt = tk * d->thread_m * d->tile_k * w->R * w->S;
	t.threads = tk * t.bh * tw;
	/* each buffer 16-byte aligned by the emitter */
	t.bytes = (ceil_div64(4 * in, 16) + ceil_div64(4 * wt, 16)) * 16 * (d->double_buffer ? 2 : 1);
	return t;
}

/* The default tiles for the layer.  A late layer at batch 1 has few
 * outputs (14 x 14 x 256: 50176), and 4 x 4 per thread would leave most
 * of a GPU idle (3136 threads), so each thread's register block shrinks,
 * columns first, until there are CONV_THREADS threads or it is one
 * output; then a block's channels, and then its rows, halve until it has
 * at most 256 threads, and on until there are CONV_BLOCKS blocks, keeping
 * 16 channels and 64 threads (a wave over the 100-odd SMs of a large
 * GPU, with some over for the tail). */
#define CONV_THREADS 32768
#define CONV_BLOCKS 160

static int64_t conv_blocks(const ts_tensor *Y, const ts_matmul_cuda_params *d, conv_tiles t)
{
	return Y->shape[0] * ceil_div64(Y->shape[1], d->block_m) * ceil_div64(Y->shape[2], t.bh) *
	       ceil_div64(Y->shape[3], t.bw);
}

static void conv_default_tiles(const ts_tensor *Y, const conv_win *w, ts_matmul_cuda_params *d,
			       conv_tiles *t)
{
	int64_t outputs = Y->shape[0] * Y->shape[1] * Y->shape[2] * Y->shape[3];
	while (outputs / (d->thread_m * d->thread_n) < CONV_THREADS && d->thread_m * d->thread_n > 1) {
		if (d->thread_n >= d->thread_m)
			d->thread_n /= 2;
		else
			d->thread_m /= 2;
	}
	*t = conv_tiles_of(Y, w, d);
	for (;;) {
		bool big = t->threads > 256, few = conv_blocks(Y, d, *t) < CONV_BLOCKS;
		if (!big && !few)
			return;
		ts_matmul_cuda_params e = *d;
		if (d->block_m / 2 >= 16 && d->block_m / 2 >= d->thread_m)
			e.block_m = d->block_m / 2;
		else if (t->bh > 1)
			e.block_n = (t->bh / 2) * t->bw;
		else
			return;
		conv_tiles u = conv_tiles_of(Y, w, &e);
		if (!big && u.threads < 64)
			return;
		*d = e;
		*t = u;
	}
}

/* The naive schedule, for what the tiled one does not take (grouped
 * convolutions): one thread per output element of a (channel, column)
 * tile, padding inlined, accumulating in a register. */
static ts_status conv2d_cuda_simple(ts_schedule *s, ts_tensor *Y, const ts_matmul_cuda_params *d)
{
	int64_t tn = min64(d->thread_n, Y->shape[1]); /* bounded: no overflow below */
	int64_t ch = tn >= Y->shape[1] ? Y->shape[1] : min64(tn * 4, Y->shape[1]);
	TS_TRY(fits_block(s, "schedule_conv2d_cuda", ch * min64(d->block_n, Y->shape[2] * Y->shape[3]), 0, ""));
	/* a producer the caller scheduled keeps that schedule */
	for (int i = 0; i < Y->ninputs; i++)
		if (sch_placeable(s, Y->inputs[i]))
			TS_TRY(ts_compute_inline(ts_stage_of(s, Y->inputs[i])));
	ts_tensor *YL = ts_cache_write(s, Y, TS_SCOPE_LOCAL);
	if (!YL)
		return ts_last_status(s->ctx);
	ts_stage *sy = ts_stage_of(s, Y), *sl = ts_stage_of(s, YL);
	ts_axis *f, *ko, *ki, *fo, *fi;
	TS_TRY(ts_split(sy, ts_axis_of(sy, 1), tn * 4, &ko, &ki));
	TS_TRY(ts_fuse(sy, ts_axis_of(sy, 2), ts_axis_of(sy, 3), &f));
	TS_TRY(ts_split(sy, f, d->block_n, &fo, &fi));
	TS_TRY(ts_reorder(sy, TS_AXES(ko, fo, ki, fi)));
	TS_TRY(ts_bind(sy, ko, TS_BLOCK_Y));
	TS_TRY(ts_bind(sy, fo, TS_BLOCK_X));
	TS_TRY(ts_bind(sy, ki, TS_THREAD_Y));
	TS_TRY(ts_bind(sy, fi, TS_THREAD_X));
	return ts_compute_at(sl, sy, fi);
}

ts_status ts_schedule_conv2d_cuda(ts_schedule *s, ts_tensor *Y, const ts_matmul_cuda_params *p)
{
	TS_TRY(sch_need(s, Y, "schedule_conv2d_cuda"));
	ts_matmul_cuda_params d = p ? *p : ts_matmul_cuda_default();
	TS_TRY(cuda_params(s, "schedule_conv2d_cuda", &d));
	if (Y->ndim != 4 || Y->nreduce != 3)
		return ts_error(s->ctx, TS_ERR_INVALID, "schedule_conv2d_cuda: %s is not an NCHW convolution",
				Y->name);
	TS_TRY(sch_untouched(s, "schedule_conv2d_cuda", Y));
	conv_win w;
	if (!conv_window_of(Y, &w))
		return conv2d_cuda_simple(s, Y, &d);
	/* tiles clamped to the layer (as split does), so that small layers
	 * launch; bounded so that their products cannot overflow */
	d.block_m = min64(min64(d.block_m, Y->shape[1]), 4096);
	d.thread_m = min64(d.thread_m, d.block_m);
	d.block_n = min64(d.block_n, 65536);
	d.thread_n = min64(d.thread_n, conv_cols(Y->shape[3]));
	d.tile_k = min64(min64(d.tile_k, w.P->shape[1]), 4096);
	conv_tiles t = conv_tiles_of(Y, &w, &d);
	if (!p)
		conv_default_tiles(Y, &w, &d, &t);
	/* the defaults give up the double buffer, then halve the channel
	 * step, until the tiles fit the 48 KB of static shared memory */
	while (!p && t.bytes > 49152 && (d.double_buffer || d.tile_k > 1)) {
		if (d.double_buffer)
			d.double_buffer = 0;
		else
			d.tile_k = (d.tile_k + 1) / 2;
		t = conv_tiles_of(Y, &w, &d);
	}
	TS_TRY(fits_block(s, "schedule_conv2d_cuda", t.threads, t.bytes,
		       "(the input's rows x columns the block's windows cover + block_m x the kernel's taps) x tile_k"));
	ts_tensor *XS = ts_cache_read(s, w.P, TS_SCOPE_SHARED, 1, &Y);
	ts_tensor *WS = XS ? ts_cache_read(s, w.W, TS_SCOPE_SHARED, 1, &Y) : NULL;
	ts_tensor *YL = WS ? ts_cache_write(s, Y, TS_SCOPE_LOCAL) : NULL;
	if (!YL)
		return ts_last_status(s->ctx);
	/* the padding is computed by the input tile's fetch (one the caller
	 * scheduled keeps that schedule, and the fetch reads its buffer) */
	if (sch_placeable(s, w.P))
		TS_TRY(ts_compute_inline(ts_stage_of(s, w.P)));
	ts_stage *sy = ts_stage_of(s, Y), *sl = ts_stage_of(s, YL);
	ts_axis *ko, *ki, *kt, *kr, *ho, *hi, *wo, *wi, *wt, *wr, *pix, *px;
	TS_TRY(ts_split(sy, ts_axis_of(sy, 1), d.block_m, &ko, &ki));
	TS_TRY(ts_split(sy, ki, d.thread_m, &kt, &kr));
	TS_TRY(ts_split(sy, ts_axis_of(sy, 2), t.bh, &ho, &hi));
	TS_TRY(ts_split(sy, ts_axis_of(sy, 3), t.bw, &wo, &wi));
	TS_TRY(ts_split(sy, wi, d.thread_n, &wt, &wr));
	TS_TRY(ts_reorder(sy, TS_AXES(ts_axis_of(sy, 0), ko, ho, wo, kt, hi, wt, kr, wr)));
	TS_TRY(ts_fuse(sy, ho, wo, &pix));
	TS_TRY(ts_fuse(sy, hi, wt, &px));
	TS_TRY(ts_bind(sy, ts_axis_of(sy, 0), TS_BLOCK_Z));
	TS_TRY(ts_bind(sy, ko, TS_BLOCK_Y));
	TS_TRY(ts_bind(sy, pix, TS_BLOCK_X));
	TS_TRY(ts_bind(sy, kt, TS_THREAD_Y));
	TS_TRY(ts_bind(sy, px, TS_THREAD_X));
	/* the thread's thread_m x thread_n outputs, in registers */
	TS_TRY(ts_unroll(sy, kr));
	TS_TRY(ts_unroll(sy, wr));
	TS_TRY(ts_compute_at(sl, sy, px));
	ts_axis *rco, *rci;
	TS_TRY(ts_split(sl, ts_reduce_axis_of(sl, 0), d.tile_k, &rco, &rci));
	TS_TRY(ts_reorder(sl, TS_AXES(rco, rci, ts_reduce_axis_of(sl, 1), ts_reduce_axis_of(sl, 2),
				   ts_axis_of(sl, 1), ts_axis_of(sl, 3))));
	TS_TRY(ts_unroll(sl, ts_axis_of(sl, 1)));
	TS_TRY(ts_unroll(sl, ts_axis_of(sl, 3)));
	int64_t ty = ceil_div64(d.block_m, d.thread_m), tx = t.bh * ceil_div64(t.bw, d.thread_n);
	TS_TRY(cuda_fetch(s, XS, sl, rco, ty, tx, 1, d.double_buffer));
	return cuda_fetch(s, WS, sl, rco, ty, tx, 1, d.double_buffer);
}

/* ---- tensor cores ------------------------------------------------------------------ */

ts_matmul_tc_params ts_matmul_tc_default(void)
{
	return (ts_matmul_tc_params){.block_m = 64, .block_n = 64, .warp_m = 32, .warp_n = 32,
				     .tile_k = 32, .double_buffer = 1};
}

/* The largest of v, v / 2, v / 4, ... that divides n, at least 16 (n is a
 * multiple of 16). */
static int64_t fit16(int64_t v, int64_t n)
{
	while (v > 16 && n % v)
		v /= 2;
	return v < 16 ? 16 : v;
}

/* f32(read of one input), or round_tf32(read) */
static bool tc_operand(const ts_expr *e)
{
	if (e->kind == IR_CALL && e->u.call.op == IR_INTRIN_ROUND_TF32)
		return e->u.call.args[0]->kind == IR_READ;
	return e->kind == IR_CAST && ts_dtype_eq(e->dtype, ts_float32) && e->u.un.a->kind == IR_READ;
}

static const ts_tensor *tc_read(const ts_expr *e)
{
	return (e->kind == IR_CALL ? e->u.call.args[0] : e->u.un.a)->u.read.tensor;
}

/* C's body is sum_k f32(x) * f32(y), reads of its two inputs. */
static bool tc_body(const ts_tensor *C)
{
	const ts_expr *b = C->body;
	if (!b || b->kind != IR_REDUCE || b->u.reduce.op != TS_REDUCE_SUM || b->u.reduce.init)
		return false;
	const ts_expr *p = b->u.reduce.source;
	return p->kind == IR_MUL && tc_operand(p->u.bin.a) && tc_operand(p->u.bin.b) &&
	       p->u.bin.a->kind == p->u.bin.b->kind &&
	       tc_read(p->u.bin.a) != tc_read(p->u.bin.b);
}

/* The most shared memory a block of every tensor-core GPU (sm_80 and
 * newer) takes: sm_86's and sm_89's 99 KB; past 48 KB the kernel takes it
 * dynamically (c_emit.c, build_cuda.c). */
#define TC_MAX_SHARED 101376

/* The shared tiles' bytes, rows padded by 8 (tc_fetch), counted on the
 * longer side, both copies of a double buffer; the tiles are at most 4096
 * (tc_check), so no overflow. */
static int64_t tc_tile_bytes(const ts_tensor *A, const ts_matmul_tc_params *d)
{
	return (A->dtype.bits / 8) * (d->block_m + d->block_n + 16) * (d->tile_k + 8) *
	       (d->double_buffer ? 2 : 1);
}

static ts_status tc_check(ts_schedule *s, const ts_tensor *C, const ts_matmul_tc_params *d)
{
	const char *w = "schedule_matmul_tensorcore";
	ts_ctx *ctx = s->ctx;
	bool mm = C->op == TS_OP_COMPUTE && (C->ndim == 2 || C->ndim == 3) && C->nreduce == 1;
	if (mm && C->ninputs == 1 && C->inputs[0]->ndim == C->ndim)
		return ts_error(ctx, TS_ERR_INVALID, "%s: both operands of %s are %s; the shared tiles "
				"need two tensors (read one of them through a copy)", w, C->name,
				C->inputs[0]->name);
	if (!mm || C->ninputs != 2)
		return ts_error(ctx, TS_ERR_INVALID, "%s: %s is not a matmul of two tensors (C[M, N] = "
				"sum_k float32(A) x float32(B), e.g. ts_op_matmul_acc, or its batched "
				"C[b, M, N])", w, C->name);
	const ts_tensor *A = C->inputs[0], *B = C->inputs[1];
	for (int i = 0; i < 2; i++)
		if (C->inputs[i]->ndim != C->ndim)
			return ts_error(ctx, TS_ERR_INVALID, "%s: operand %s has %d dimensions; the "
					"tensor-core GEMM takes %d-D A and B for its %d-D %s", w,
					C->inputs[i]->name, C->inputs[i]->ndim, C->ndim, C->ndim, C->name);
	if (C->ndim == 3 && C->shape[0] > 65535)
		return grid_z_refused(s, w, C->shape[0], C);
	for (int i = 0; i < 3; i++) {
		const ts_tensor *t = i < 2 ? C->inputs[i] : C;
		for (int d = 0; d < t->ndim; d++)
			if (t->dim_var[d])
				return ts_error(ctx, TS_ERR_INVALID, "%s: %s has a symbolic extent; the "
						"tensor-core GEMM needs constant shapes", w, t->name);
	}
	TS_TRY(sch_untouched(s, w, C));
	char c[24], a[24], b[24];
	bool f32 = ts_dtype_eq(A->dtype, ts_float32);
	if (!ts_dtype_eq(C->dtype, ts_float32) || !ts_dtype_is_float(A->dtype) ||
	    (A->dtype.bits != 16 && !f32) || !ts_dtype_eq(A->dtype, B->dtype))
		return ts_error(ctx, TS_ERR_INVALID, "%s: %s is %s from %s and %s; tensor cores take float16 "
				"or bfloat16 operands (both the same) into float32 (ts_op_matmul_acc(..., "
				"ts_float32)), or float32 ones rounded to TF32 (ts_op_matmul_tf32)", w, C->name,
				ts_dtype_str(C->dtype, c), ts_dtype_str(A->dtype, a), ts_dtype_str(B->dtype, b));
	if (!tc_body(C) || (f32 != (C->body->u.reduce.source->u.bin.a->kind == IR_CALL)))
		return ts_error(ctx, TS_ERR_INVALID, "%s: %s is not a sum of products float32(A) x "
				"float32(B) of its two operands (ts_op_matmul_acc), nor of round_tf32(A) x "
				"round_tf32(B) (ts_op_matmul_tf32)%s", w, C->name,
				f32 ? "; float32 operands take tensor cores rounded to TF32 first" : "");
	int64_t ext[3] = {C->shape[C->ndim - 2], C->shape[C->ndim - 1], C->reduce_axis[0]->extent};
	static const char *const dim[3] = {"M", "N", "K"};
	for (int i = 0; i < 3; i++)
		if (ext[i] % 16)
			return ts_error(ctx, TS_ERR_INVALID, "%s: %s = %lld is not a multiple of 16, the MMA's "
					"tile (pad the operands, or use ts_schedule_matmul_cuda)", w, dim[i],
					(long long)ext[i]);
	TS_TRY(sch_positive(s, w, 5, (int64_t[]){d->block_m, d->block_n, d->warp_m, d->warp_n, d->tile_k},
		     (const char *[]){"block_m", "block_n", "warp_m", "warp_n", "tile_k"}));
	const int64_t t[3][2] = {{d->block_m, ext[0]}, {d->block_n, ext[1]}, {d->tile_k, ext[2]}};
	static const char *const name[3] = {"block_m", "block_n", "tile_k"};
	for (int i = 0; i < 3; i++)
		if (t[i][0] % 16 || t[i][1] % t[i][0])
			return ts_error(ctx, TS_ERR_INVALID, "%s: %s = %lld must be a multiple of 16 that "
					"divides %s = %lld", w, name[i], (long long)t[i][0], dim[i],
					(long long)t[i][1]);
	if (d->warp_m % 16 || d->block_m % d->warp_m || d->warp_n % 16 || d->block_n % d->warp_n)
		return ts_error(ctx, TS_ERR_INVALID, "%s: warp tiles %lld x %lld must be multiples of 16 "
				"that divide the block tile %lld x %lld", w, (long long)d->warp_m,
				(long long)d->warp_n, (long long)d->block_m, (long long)d->block_n);
	int64_t warps = (d->block_m / d->warp_m) * (d->block_n / d->warp_n);
	if (warps > 32)
		return ts_error(ctx, TS_ERR_INVALID, "%s: %lld warps per block, more than 32 (1024 threads)",
				w, (long long)warps);
	if (d->warp_m * d->warp_n > 64 * 64)
		return ts_error(ctx, TS_ERR_INVALID, "%s: a warp tile of %lld x %lld holds %lld registers "
				"per lane; at most 64 x 64 (128)", w, (long long)d->warp_m,
				(long long)d->warp_n, (long long)(d->warp_m * d->warp_n / 32));
	/* each tile's rows padded by 8 (tc_fetch), counted on the longer side;
	 * the tiles are bounded first, so the product cannot overflow */
	if (d->block_m > 4096 || d->block_n > 4096 || d->tile_k > 4096 || tc_tile_bytes(A, d) > TC_MAX_SHARED)
		return ts_error(ctx, TS_ERR_INVALID, "%s: shared tiles (block_m + block_n) x tile_k, their "
				"rows padded, take more than the %d bytes of shared memory every tensor-core "
				"GPU gives a block (%lld + %lld by %lld%s)", w, TC_MAX_SHARED,
				(long long)d->block_m, (long long)d->block_n, (long long)d->tile_k,
				d->double_buffer ? ", two copies of each" : "");
	return TS_OK;
}

/* The cooperative load of a shared tile: its elements spread over the
 * block's threads, 32 lanes of threadIdx.x under the warps' y and z.  Its
 * rows (a multiple of 16 elements) get 8 more: the 8 rows g and the 4
 * column pairs t that a fragment's lanes read then fall in 32 different
 * banks, where unpadded rows of 32 or 64 halves put 4 lanes in each.
 * TF32 operands (float32, each lane loading its elements) get rows 4
 * more (A: rows g read at columns t: 4 g + t covers the banks) or 8 more
 * (B: rows t read at columns g: 8 t + g). */
static ts_status tc_fetch(ts_schedule *s, ts_tensor *T, ts_stage *at, ts_axis *ko, int64_t wy,
			  int64_t wx, int64_t pad)
{
	ts_stage *ss = ts_stage_of(s, T);
	ts_axis *f, *fo, *fv, *o, *t, *tyz, *tx, *tz, *ty;
	int64_t vec = 16 / (T->dtype.bits / 8);
	TS_TRY(ts_storage_align(ss, T->ndim - 2, 16, pad));
	TS_TRY(ts_compute_at(ss, at, ko));
	f = ts_axis_of(ss, 0); /* a batch (one per block) and the tile's rows and columns */
	for (int i = 1; i < T->ndim; i++)
		TS_TRY(ts_fuse(ss, f, ts_axis_of(ss, i), &f));
	/* 16 bytes per thread: one move (rows are multiples of 16 bytes) */
	TS_TRY(ts_split(ss, f, vec, &fo, &fv));
	TS_TRY(ts_vectorize(ss, fv));
	TS_TRY(ts_split(ss, fo, 32 * wy * wx, &o, &t));
	TS_TRY(ts_split(ss, t, 32, &tyz, &tx));
	TS_TRY(ts_split(ss, tyz, wx, &tz, &ty));
	TS_TRY(ts_bind(ss, tz, TS_THREAD_Z));
	TS_TRY(ts_bind(ss, ty, TS_THREAD_Y));
	return ts_bind(ss, tx, TS_THREAD_X);
}

ts_status ts_schedule_matmul_tensorcore(ts_schedule *s, ts_tensor *C, const ts_matmul_tc_params *p)
{
	TS_TRY(sch_need(s, C, "schedule_matmul_tensorcore"));
	if (!ts_stage_of(s, C))
		return ts_last_status(s->ctx);
	ts_matmul_tc_params d = p ? *p : ts_matmul_tc_default();
	int nd = C->ndim >= 2 ? C->ndim : 2;
	int64_t m = C->ndim >= 2 ? C->shape[nd - 2] : 0, n = C->ndim >= 2 ? C->shape[nd - 1] : 0;
	int64_t batches = C->ndim == 3 ? C->shape[0] : 1;
	if (!p && (C->ndim == 2 || C->ndim == 3) && m % 128 == 0 && n % 128 == 0 &&
	    batches * m * n >= 2048 * 2048) {
		/* enough 128 x 128 blocks to fill a GPU: 64 x 64 per warp, so
		 * that each fragment loaded feeds 4 MMAs (about 220 registers) */
		d = (ts_matmul_tc_params){.block_m = 128, .block_n = 128, .warp_m = 64, .warp_n = 64,
					  .tile_k = 32, .double_buffer = 1};
	}
	if (!p && (C->ndim == 2 || C->ndim == 3) && C->nreduce == 1 && m % 16 == 0 && n % 16 == 0 &&
	    C->reduce_axis[0]->extent % 16 == 0) {
		/* the defaults, halved until they divide the shape */
		d.block_m = fit16(d.block_m, m);
		d.block_n = fit16(d.block_n, n);
		d.tile_k = fit16(d.tile_k, C->reduce_axis[0]->extent);
		d.warp_m = min64(d.warp_m, d.block_m);
		d.warp_n = min64(d.warp_n, d.block_n);
	}
	if (!p && C->ninputs == 2 && d.block_m <= 4096 && d.block_n <= 4096 && d.tile_k <= 4096 &&
	    tc_tile_bytes(C->inputs[0], &d) > TC_MAX_SHARED)
		d.double_buffer = 0;
	TS_TRY(tc_check(s, C, &d));
	TS_TRY(sch_untouched(s, "schedule_matmul_tensorcore", C));
	ts_tensor *A = C->inputs[0], *B = C->inputs[1];
	ts_tensor *AS = ts_cache_read(s, A, TS_SCOPE_SHARED, 1, &C);
	ts_tensor *BS = AS ? ts_cache_read(s, B, TS_SCOPE_SHARED, 1, &C) : NULL;
	ts_tensor *CL = BS ? ts_cache_write(s, C, TS_SCOPE_LOCAL) : NULL;
	if (!CL)
		return ts_last_status(s->ctx);
	ts_stage *sc = ts_stage_of(s, C), *sl = ts_stage_of(s, CL);
	int64_t wy = d.block_m / d.warp_m, wx = d.block_n / d.warp_n;
	/* C: blocks (a batch's on the grid's z), warps (threadIdx.z, y),
	 * 16 x 16 tiles stored per lane */
	ts_axis *by, *bx, *yi, *xi, *ty, *tx, *ym, *xm, *y16, *x16, *yw, *xw;
	TS_TRY(ts_tile(sc, ts_axis_of(sc, nd - 2), ts_axis_of(sc, nd - 1), d.block_m, d.block_n, &by, &bx,
		    &yi, &xi));
	if (nd == 3)
		TS_TRY(ts_bind(sc, ts_axis_of(sc, 0), TS_BLOCK_Z));
	TS_TRY(ts_split(sc, yi, d.warp_m, &ty, &yw));
	TS_TRY(ts_split(sc, xi, d.warp_n, &tx, &xw));
	TS_TRY(ts_split(sc, yw, 16, &ym, &y16));
	TS_TRY(ts_split(sc, xw, 16, &xm, &x16));
	TS_TRY(ts_reorder(sc, TS_AXES(by, bx, ty, tx, ym, xm, y16, x16)));
	TS_TRY(bind_tiles(sc, by, bx, ty, tx, TS_THREAD_Z));
	/* unrolled, the accumulator's registers are indexed by constants */
	TS_TRY(ts_unroll(sc, ym));
	TS_TRY(ts_unroll(sc, xm));
	TS_TRY(ts_tensorize(sc, y16, TS_INTRIN_MMA_16X16X16));
	/* the warp's accumulator: k steps of tile_k, each 16-deep MMAs over
	 * the warp's 16 x 16 tiles */
	TS_TRY(ts_compute_at(sl, sc, tx));
	ts_axis *ko, *kr, *kro, *kri, *lyo, *lyi, *lxo, *lxi;
	TS_TRY(ts_split(sl, ts_axis_of(sl, nd - 2), 16, &lyo, &lyi));
	TS_TRY(ts_split(sl, ts_axis_of(sl, nd - 1), 16, &lxo, &lxi));
	TS_TRY(ts_split(sl, ts_reduce_axis_of(sl, 0), d.tile_k, &ko, &kr));
	TS_TRY(ts_split(sl, kr, 16, &kro, &kri));
	TS_TRY(ts_reorder(sl, TS_AXES(ko, kro, lyo, lxo, lyi, lxi, kri)));
	TS_TRY(ts_unroll(sl, kro));
	TS_TRY(ts_unroll(sl, lyo));
	TS_TRY(ts_unroll(sl, lxo));
	TS_TRY(ts_tensorize(sl, lyi, TS_INTRIN_MMA_16X16X16));
	bool tf32 = A->dtype.bits == 32;
	TS_TRY(tc_fetch(s, AS, sl, ko, wy, wx, tf32 ? 4 : 8));
	TS_TRY(tc_fetch(s, BS, sl, ko, wy, wx, 8));
	if (d.double_buffer) {
		TS_TRY(ts_double_buffer(ts_stage_of(s, AS)));
		TS_TRY(ts_double_buffer(ts_stage_of(s, BS)));
	}
	return TS_OK;
}
