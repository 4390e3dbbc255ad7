/*
 * op_schedules.h - default schedules for the operator library, written with
 * the ordinary primitives; their tile sizes are parameters.
 *
 * CPU GEMM follows the register-blocked structure of fast BLAS kernels:
 * B packed in panels of nr columns (ts_op_matmul_packed), an mr x nr block
 * of C accumulated in a local cache (registers after codegen) over the whole
 * K, the nr axis vectorized and the mr axis unrolled, outer loops fused and
 * parallel.  CPU conv2d works on the blocked NCHW[x]c layout the same way,
 * with a block of output columns x output-channel lanes as the accumulator,
 * and so does depthwise conv2d, whose vector (the channel lanes of one
 * output) is full whatever the width of the rows.  GPU schedules tile into
 * thread blocks with shared-memory operand tiles and a per-thread register
 * block.
 *
 * A NULL params pointer means the defaults (ts_matmul_cpu_default(), ...);
 * tile sizes must be positive, and a GEMM's nr (one vector) at most
 * TS_MAX_VECTOR_LANES.  The schedules check their parameters, and refuse
 * a stage of theirs that the caller already gave a primitive (split,
 * annotated, attached, inlined; a cache_write, cache_read or rfactor, which
 * rewrite its operation; a storage_align, double_buffer or prefetch; a
 * stage attached at its loops), before they change the schedule, with
 * TS_ERR_INVALID naming the stage and what it has.  A producer that the
 * caller scheduled keeps that schedule (it is not inlined or attached).
 * Apply a schedule function first and adjust its result afterwards, as
 * with TVM's TOPI schedules.  A NULL schedule gives TS_ERR_INVALID (with
 * no context to record a message in), a NULL tensor an error naming the
 * function.
 */
#ifndef TESSERA_SCHEDULE_OP_SCHEDULES_H
#define TESSERA_SCHEDULE_OP_SCHEDULES_H

#include "schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A reasonable CPU schedule for any graph (the default of every operator
 * without a dedicated one): elementwise intermediate stages are inlined
 * into their consumers, unless a stage reads one at two places or more
 * (inlined, it would be computed once per read, and a chain of them
 * doubles at every stage); every other stage fuses its outer data-parallel
 * axes into one parallel loop and, when its innermost data axis is wide
 * enough, vectorizes it by `lanes` (reduction loops move outside it, the
 * tail partitioned off).  A schedule with a stage already scheduled
 * (split, annotated, inlined, attached: the default applied twice, say) is
 * refused, naming the stage, before anything changes; so are the stages
 * of ts_schedule_softmax_cpu and ts_schedule_layer_norm_cpu. */
ts_status ts_schedule_default_cpu(ts_schedule *s, int lanes);

/* The GPU counterpart: elementwise intermediates inlined; every other stage
 * fuses its data-parallel axes, one output element per thread, `threads`
 * threads per block (reductions run serially in their thread, in a
 * register).  A reduction read only by the output at its own element (a
 * pooling window) is computed in the output's thread; any other (softmax's
 * row maximum and sum, layer norm's mean and variance) at root with its
 * own threads, so the function builds as several kernels launched in
 * order (docs/ARCHITECTURE.md, "CUDA: kernels"). */
ts_status ts_schedule_default_cuda(ts_schedule *s, int threads);

/* Softmax (Y = ts_op_softmax(X)) over rows: the leading axes fused into one
 * parallel row loop of Y; the max, the exponentials and the sum of a row
 * computed at that loop (compute_at), so a row stays in cache from its
 * exponentials to the division; the last axis of the exponentials and of
 * the division vectorized by `lanes` (1..TS_MAX_VECTOR_LANES), the tail
 * partitioned off; the max and the sum factored with ts_rfactor into
 * `lanes` partial results per row, in vectors (rows of at least `lanes`).
 * The inner stages are found with ts_op_stage; a Y without them is
 * refused.  1-D: one row, every stage at root. */
ts_status ts_schedule_softmax_cpu(ts_schedule *s, ts_tensor *Y, int lanes);

/* Layer normalization (Y = ts_op_layer_norm(X, ...)) as softmax: the
 * leading axes of Y fused into one parallel row loop, the mean and the
 * variance of a row computed at that loop, the last axis of Y vectorized by
 * `lanes` (1..TS_MAX_VECTOR_LANES) with its tail partitioned off, and both
 * sums factored with ts_rfactor into `lanes` partial results (rows of at
 * least `lanes`).  The inner stages are found with ts_op_stage; a Y without
 * them is refused.  1-D: one row, every stage at root (the sums still
 * factored). */
ts_status ts_schedule_layer_norm_cpu(ts_schedule *s, ts_tensor *Y, int lanes);

/* Where a packed B (ts_op_matmul_packed) is packed.  TS_PACK_AHEAD: all
 * of B, before the GEMM (a parallel loop of its own), and the GEMM's tile
 * loops fused into one parallel loop.  TS_PACK_PANEL: each panel of nr
 * columns just before the tiles that read it (compute_at the column-panel
 * loop, which is then the parallel loop), so the panel is read from cache
 * while it is still there instead of from memory: 1.1x-1.2x faster on
 * BERT's GEMMs on one core, less parallel slack with few panels.
 * TS_PACK_AUTO: per panel unless the GEMM is parallel and has fewer than
 * 16 panels, or packed ahead where Bp is itself an output of the
 * schedule. */
typedef enum ts_pack_mode { TS_PACK_AUTO = 0, TS_PACK_AHEAD, TS_PACK_PANEL } ts_pack_mode;

typedef struct ts_matmul_cpu_params {
	int64_t mr;       /* rows of the register block */
	int64_t nr;       /* columns of the register block = the packing panel */
	int64_t kunroll;  /* unroll factor of the k loop */
	bool parallel;    /* parallelize the outer loop */
	ts_pack_mode pack; /* where B is packed (TS_PACK_AUTO: 0) */
	/* 0: the tile accumulates over the whole K in registers (a local
	 * block).  kc > 0 (below K; ts_schedule_matmul_cpu, or dense without
	 * an epilogue): the reduction in chunks of kc, the chunk loop between
	 * the column panels and the row tiles, the tile accumulated in C
	 * itself, loaded and stored once a chunk, so a kc x nr panel and the
	 * A blocks a panel reads stay in cache: long reductions with B read
	 * in place (ts_matmul_cpu_default_shape).  Parallel over the panels;
	 * the partial tiles of the last rows and columns and the last partial
	 * chunk run in loop nests of their own. */
	int64_t kc;
	/* each k step of a tile fetches the rows of B that the next tile
	 * reads at that step (ts_prefetch_ahead on the tile loop), so the
	 * next column panel's B, read from memory by its first tile, arrives
	 * while this tile computes: BERT's GEMMs (128 rows, B read in place)
	 * 5-10% faster with their data out of cache, on one AVX-512 core and
	 * two.  Applies where B is an input read in place (a packed B is a
	 * stage of its own, read from cache) and kc is 0; by default with
	 * AVX-512 only, as the convolutions' prefetch. */
	bool prefetch;
} ts_matmul_cpu_params;

/* Parameters suited to the host's vector width (AVX-512: 6 x 32 blocks;
 * else 4 x 16), whatever the shape. */
ts_matmul_cpu_params ts_matmul_cpu_default(void);
/* The default for a product of n columns (C[M, n]): with AVX-512, 8 x 48
 * blocks (three vectors a row) where 48-wide panels waste at most 1% of
 * the columns more than 32-wide ones (n = 768, 1000, 2048, 3072), else
 * 6 x 32 (n = 256, 512, 1024); elsewhere, and for n < 1,
 * ts_matmul_cpu_default().  Schedules given no parameters use it on C's
 * constant column count; the graph layer, tessera-bench and the tuner
 * pack B into panels of its nr. */
ts_matmul_cpu_params ts_matmul_cpu_default_for(int64_t n);
/* The default for C[m, n] = A[m, k] B[k, n] with B read in place where
 * ts_matmul_cpu_packs(m) says so: ts_matmul_cpu_default_for(n), and with
 * AVX-512, for k >= 512 and at least two n / nr column panels for each
 * thread of the pool (ts_num_threads(), read now), the reduction in
 * chunks of kc = 256 (AVX-512, 1 and 2 threads: ResNet-50's fc 1 x 1000
 * x 2048 1.8-2.0x faster, BERT's 128 x 768 x 3072 1.2-1.6x, ResNet-50's
 * im2col GEMMs 1.2-1.6x).  ts_schedule_matmul_cpu given no parameters
 * applies the same rule to a plain ts_op_matmul of constant extents;
 * tessera-bench and the tuner's default use it.  Any argument < 1:
 * ts_matmul_cpu_default_for(n). */
ts_matmul_cpu_params ts_matmul_cpu_default_shape(int64_t m, int64_t n, int64_t k);
/* Whether a product of m rows (C[m, N]) is faster with B packed
 * (ts_op_matmul_packed) than read in place (ts_op_matmul): packing is a
 * pass over B that pays where many row blocks reuse each panel: from 512
 * rows with AVX-512, 32 elsewhere.  tessera-bench and the tuner's default
 * follow it; the graph layer packs constant weights once, at compile
 * time. */
bool ts_matmul_cpu_packs(int64_t m);
/* Schedules C = ts_op_matmul_packed(A, B, p->nr) (its Bp stage included),
 * or a plain ts_op_matmul(A, B) without transposes, which suits few rows
 * and symbolic shapes (packing needs constant extents).  p NULL: the
 * default for C's columns (ts_matmul_cpu_default_for; its nr the panels'
 * where B is packed), with kunroll 1 when A or B has a symbolic inner
 * extent (rows a run-time stride apart each take an address register). */
ts_status ts_schedule_matmul_cpu(ts_schedule *s, ts_tensor *C, const ts_matmul_cpu_params *p);

/* The longest elementwise epilogue ts_schedule_dense_cpu,
 * ts_schedule_conv2d_nchwc_cpu and ts_schedule_depthwise_nchwc_cpu
 * accept. */
#define TS_MAX_EPILOGUE 16
/* Schedules Y = epilogue(C), C a matmul as above and the epilogue a chain of
 * elementwise stages of C's shape (ts_op_bias_add, ts_op_relu, ts_op_gelu,
 * ts_op_add of a residual, ...), each reading the chain once, its other
 * operands being inputs.  The chain is inlined into Y; Y is tiled like C
 * in ts_schedule_matmul_cpu and C becomes Y's local accumulator tile,
 * computed at Y's tile loop, so the epilogue is applied to the register
 * tile before the one store: C never goes to memory.  A stage that reduces
 * (other than the matmul), changes the shape, reads the chain at indices
 * other than its own element (a transpose) or reads two computed tensors
 * is refused (TS_ERR_INVALID), and so is a matmul or chain stage that is
 * an output of the schedule or that another stage reads (it lives in
 * registers), before the schedule changes.  With no epilogue (Y is the matmul) this is
 * ts_schedule_matmul_cpu. */
ts_status ts_schedule_dense_cpu(ts_schedule *s, ts_tensor *Y, const ts_matmul_cpu_params *p);

/* Schedules Y = epilogue(C), C = ts_op_batch_matmul(A, B) without
 * transposes ([b, M, N]), the epilogue as in ts_schedule_dense_cpu (a
 * scale, a mask, ...; none: Y is C): the batches and the mr x nr tiles of
 * each fused into one (parallel) loop, the tile accumulated over the whole
 * K in a local block (k outermost, the mr rows unrolled, the nr columns one
 * vector) and the epilogue applied to it before the one store.  mr and nr
 * are clamped to M and N; p NULL: ts_matmul_cpu_default_for(N). */
ts_status ts_schedule_batch_matmul_cpu(ts_schedule *s, ts_tensor *Y, const ts_matmul_cpu_params *p);

/* How a convolution reads its padded input.  TS_PAD_INLINE: the padding
 * inlined, no copy; its border tests are partitioned out of the loops
 * (loop_partition), leaving them in border blocks only, where the sum
 * skips the padding's taps (ts_op_conv2d_nchwc) and so reads no padding
 * at all (more code, compiled 2-8x slower, more with large register
 * blocks).  TS_PAD_COPY: a padded copy computed once before the
 * convolution; the taps' test stays (partitioned out of the interior
 * too).  TS_PAD_AUTO: inlined, which saves the copy's pass and the
 * skipped taps' work: ResNet-50 at 2 threads (AVX-512), 3-20% faster per
 * 3x3 layer than before, when AUTO copied 28x28 and 56x56 layers and
 * every layer computed its padding's taps.  A padding that is an output
 * of the schedule is stored: AUTO copies it. */
typedef enum ts_pad_mode { TS_PAD_AUTO = 0, TS_PAD_COPY, TS_PAD_INLINE } ts_pad_mode;

typedef struct ts_conv2d_cpu_params {
	int64_t ow_block; /* output columns per register block; 0: chosen
			   * from the output's channel block
			   * (ts_conv2d_cpu_ow_block) */
	int64_t oh_block; /* output rows per register block; 0: up to enough
			   * rows to fill ow_block columns when the image is
			   * narrower, as many as waste the fewest rows */
	bool parallel;
	bool prefetch;    /* when the weights outweigh the input: fetch the next
			   * channel block's weights during the current one's
			   * reduction (ts_prefetch_ahead); by default with
			   * AVX-512 only (with AVX2's one-vector blocks it
			   * gained nothing and cost up to 30% at 2 threads) */
	ts_pad_mode pad;  /* how the input's padding is read (TS_PAD_AUTO: 0) */
	int64_t rc_block; /* input-channel blocks per reduction chunk: the
			   * reduction runs in chunks, each over a stretch of
			   * columns whose accumulators wait in cache (not
			   * registers) between chunks, so that one chunk's
			   * weights stay in L1 for the whole stretch.  0:
			   * chosen (ts_conv2d_cpu_rc_block); a value at or
			   * above the input's channel blocks: no chunks */
} ts_conv2d_cpu_params;

ts_conv2d_cpu_params ts_conv2d_cpu_default(void);
/* The default rc_block of a convolution over in_blocks input-channel
 * blocks of in_block channels, with r x s taps and out_block output
 * channels per block: with AVX2 and a 1x1 kernel, where a channel block's
 * weights (in_blocks x in_block x out_block floats) are over 32 KB, the
 * largest divisor of in_blocks whose chunk of them fits 16 KB, half of
 * L1; otherwise (and where no chunk fits) in_blocks, no chunks.  Each
 * register block of columns would otherwise stream the whole block's
 * weights from L2.  On one Zen 4 core, in chunks of 128 channels,
 * ResNet-50's 1x1 layers 1024 -> 256 at 14x14 ran 6-11% faster with data
 * in cache (15-20% in tessera-bench, inputs rotated), 512 -> 128 at 28x28
 * 5%, 512 -> 1024 of stride 2 3%; those over rows viewed as one
 * (ts_conv2d_cpu_row_width) were unchanged, and 3x3 kernels 0-1.5% slower,
 * so they keep one reduction.  With AVX-512 and a kernel larger than 1x1
 * whose channel block's weights are over 512 KB (half of a 1 MB L2), the
 * largest divisor whose chunk fits 80 KB: ResNet-50's 3x3 layers of 512
 * channels (590 KB a block; the same on 7x7 and, of stride 2, 14x14
 * inputs) went from 0.74x-0.83x of oneDNN's speed in tessera-bench to
 * 1.02x-1.06x at 1 and 2 threads on a Zen 4 (chunks of 1, 2 or 4 blocks
 * alike), while chunking the 256-channel ones (295 KB) cost them 3-9%.
 * 0 for arguments below 1. */
int64_t ts_conv2d_cpu_rc_block(int64_t in_blocks, int64_t in_block, int64_t r, int64_t s,
			       int64_t out_block);
/* The float32 lanes of this CPU's vectors: 16 with AVX-512, else 8. */
int ts_cpu_vector_lanes(void);
/* The output-channel block (the y of NCHW[y]c) the default conv2d schedule
 * is made for: the largest power of two dividing `channels`, up to two
 * vectors where the CPU has 32 vector registers (AVX-512) and one where it
 * has 16 (AVX2).  A block of ow_block columns keeps ow_block x vectors
 * accumulators in registers, plus the weights' vectors and a broadcast
 * input: the default 14 columns of two vectors take 31 of 32 registers,
 * and on 16 registers would spill every accumulator at every step (2x
 * slower), where one vector of 14 columns takes all 16.  0 for channels
 * below 1. */
int64_t ts_conv2d_cpu_out_block(int64_t channels);
/* The output-channel block for an output `out_width` columns wide: with
 * AVX2, four vectors (32 channels) where 32 divides `channels` and a row
 * has 12 columns or more, computed 3 columns at a time (a step loads 3
 * inputs and 4 weight vectors for 12 multiply-adds, against 15 loads for
 * 14 with one vector); with AVX-512, four vectors (64 channels) where 64
 * divides `channels` and a row has 56 columns or more, 4 columns at a
 * time; otherwise ts_conv2d_cpu_out_block(channels).  0 for channels
 * below 1. */
int64_t ts_conv2d_cpu_out_block_for(int64_t channels, int64_t out_width);
/* The columns of the rows tessera's conv2d kernels run over, for an
 * r x s kernel, strides stride_h, stride_w, total paddings pad_h, pad_w
 * (both sides of each dimension) and an output of out_h x out_w: out_w,
 * or out_h * out_w where the rows are viewed as one.  A 1x1 convolution
 * of stride 1 without padding reads input position p for output position
 * p, so its NCHW[x]c input and output of out_h rows are also one row, the
 * same memory; with AVX2, where a row is too narrow for
 * ts_conv2d_cpu_out_block_for's four vectors (ResNet-50's 7x7 layers),
 * the graph layer, tessera-bench and the tuner declare them so and take
 * the block for that row: one row of 49 takes four vectors by three
 * columns where a row of 7 took one vector by 7 (20-28% faster alone). */
int64_t ts_conv2d_cpu_row_width(int64_t r, int64_t s, int64_t stride_h, int64_t stride_w, int64_t pad_h,
				int64_t pad_w, int64_t out_h, int64_t out_w);
/* The same with the channels: in_channels in blocks of in_block (the x of
 * the input's NCHW[x]c) and out_channels.  Where ts_conv2d_cpu_row_width
 * keeps the rows, a 1x1 convolution of stride 1 without padding with AVX2
 * that does not reduce in chunks (ts_conv2d_cpu_rc_block) is viewed as
 * rows of k x out_w columns, k the fewest rows dividing out_h (up to
 * 4096) whose register blocks (ts_conv2d_cpu_ow_block) waste at most 1%
 * of their columns, else the fewest that waste the least: a row of 28
 * takes 9 blocks of 3 columns and one of 1 (28 of 30 columns do work),
 * 14 rows of 28 take 131 (392 of 393).  ResNet-50's 1x1 layers on one Zen 4 core,
 * alone: 128 -> 512 at 28x28 and 256 -> 1024 at 14x14 6% faster at 1 and
 * 2 threads, 64 -> 256 and 256 -> 64 at 56x56 about 1%.  Those reducing
 * in chunks keep their rows (1024 -> 256 at 14x14 ran 2-3.5% slower
 * merged).  Returns a multiple of out_w dividing out_h * out_w; out_w, or
 * ts_conv2d_cpu_row_width's width, for arguments it does not apply to. */
int64_t ts_conv2d_cpu_row_width_for(int64_t r, int64_t s, int64_t stride_h, int64_t stride_w, int64_t pad_h,
				    int64_t pad_w, int64_t out_h, int64_t out_w, int64_t in_channels,
				    int64_t in_block, int64_t out_channels);
/* The register block's columns (ow_block 0) for an output-channel block
 * of `out_block` lanes: as many as fit the vector registers with their
 * accumulators, up to 14: 14 for one vector (and two with AVX-512), 6 for
 * two vectors with AVX2, 3 for four (then the block runs vector by vector:
 * 12 accumulators, 3 broadcast inputs and one weight vector).  Vector by
 * vector (over two vectors) it keeps to 16 accumulators: 4 columns of
 * four vectors with AVX-512.  0 for out_block below 1. */
int64_t ts_conv2d_cpu_ow_block(int64_t out_block);
/* The input-channel block (the x of NCHW[x]c) tessera's conv2d kernels
 * take when they choose: the largest power of two up to 16 dividing
 * `channels`; 0 for channels below 1. */
int64_t ts_conv2d_cpu_in_block(int64_t channels);
/* The channel block (the x of NCHW[x]c) of a depthwise convolution whose
 * input tessera lays out: the largest power of two up to one vector
 * dividing `channels`; 0 for channels below 1. */
int64_t ts_depthwise_cpu_block(int64_t channels);
/* Schedules Y = epilogue(C), C = ts_op_conv2d_nchwc(...) (its padding stage
 * included, computed once before C or inlined: p->pad), the
 * epilogue being a chain of
 * elementwise stages of C's shape [N, O/y, OH, OW, y] as in
 * ts_schedule_dense_cpu: a bias over the channels (reading bias[co*y + ci]),
 * a residual add of a 5-D input, relu, clip, ...  Y is split into blocks of
 * oh_block rows x ow_block columns x y channel lanes (one vector), its outer
 * loops fused and parallel, a block's rows and columns unrolled; the
 * accumulator of a block, computed at Y's column-block loop, runs the
 * whole reduction with its rows and columns unrolled (stored through a
 * loop, an epilogue's accumulators stayed in memory in LLVM's border
 * blocks: 3x3 + relu at 14x14 23% slower).  With an epilogue, the chain is inlined into Y and C is that
 * local accumulator, so the epilogue is applied to the registers before
 * the one store and C never goes to memory; without one (Y is C), the
 * accumulator is a cache_write of Y.  Epilogues are refused as
 * ts_schedule_dense_cpu refuses them (TS_ERR_INVALID).  With more weights
 * than input (deep layers), channel blocks are the outer loop and each
 * block's weights serve all its row blocks (where a block's weights are
 * small, in groups of blocks whose weights, up to 128 KB, stay in cache
 * while the group's rows run, each row of input read by the group's
 * blocks in turn rather than once per block over the whole input; at
 * least 8 groups, which run in parallel); otherwise p->prefetch adds a
 * software prefetch, in each step of the input-channel lanes, of the
 * lines the next channel block reads there (its weights come from memory
 * while this block computes, instead of all at once in its first row
 * block).  Weights Wc must be an input (a placeholder) for that.
 * Y, its epilogue and C must be as ts_create_schedule made them (else
 * TS_ERR_INVALID, "... is already scheduled", before anything changes);
 * a padding stage the caller scheduled keeps its schedule, and one that
 * is an output of the schedule is stored, so AUTO copies it and
 * TS_PAD_INLINE is refused.  A huge ow_block is clamped to the row and
 * oh_block to the image; the rows ow_block chooses (oh_block 0) stop
 * where the block unrolls.  A block of more than TS_MAX_UNROLL rows or
 * columns, or of more than TS_MAX_UNROLL_STMTS rows x columns x vectors of
 * output channels (unrolled one by one beyond two), is refused before
 * anything changes. */
ts_status ts_schedule_conv2d_nchwc_cpu(ts_schedule *s, ts_tensor *Y, const ts_conv2d_cpu_params *p);

typedef struct ts_depthwise_cpu_params {
	int64_t ow_block; /* output columns per register block; 0: chosen from
			   * the row (NCHW: two vectors, or one, or the whole
			   * row; NCHW[x]c: 7 to 14 columns with AVX-512,
			   * 4 with AVX2, for a 3x3 window) */
	int64_t oh_block; /* output rows per register block; 0: chosen (NCHW:
			   * about two vectors of outputs, at least 2 rows;
			   * NCHW[x]c: 1 row, more on narrow rows) */
	bool parallel;    /* (image, channel) planes in parallel (NCHW[x]c:
			   * their row blocks too) */
} ts_depthwise_cpu_params;

ts_depthwise_cpu_params ts_depthwise_cpu_default(void);
/* Schedules a 2-D window over NCHW: Y = ts_op_depthwise_conv2d_nchw(...)
 * or a pooling (ts_op_max_pool2d, ...), any stride, padding, dilation.
 * Each (image, channel) plane is one parallel iteration; its padding stage
 * is computed there, one plane at a time; each oh_block x ow_block block
 * of outputs is accumulated in registers over the window (the window
 * unrolled when small) and stored once.  A padding (any elementwise
 * producer) that another stage reads, that is an output or that the
 * caller scheduled stays as it is (at root: computed whole first).  Y
 * must be as ts_create_schedule made it ("... is already scheduled"). */
ts_status ts_schedule_depthwise_cpu(ts_schedule *s, ts_tensor *Y, const ts_depthwise_cpu_params *p);
/* Schedules Y = epilogue(C), C = ts_op_depthwise_conv2d_nchwc(...) on the
 * blocked layout [N, C/x, OH, OW, x], the epilogue a chain of elementwise
 * stages of C's shape as in ts_schedule_conv2d_nchwc_cpu (a bias over the
 * channels, relu, clip: a MobileNet block's relu6), refused as
 * ts_schedule_dense_cpu refuses them (TS_ERR_INVALID).  Y is split into
 * blocks of oh_block rows x ow_block columns x the x channel lanes (one
 * vector per output, whatever the width of the row); images, channel
 * blocks and row blocks are fused into one loop, parallel with
 * p->parallel.  The accumulator block (C itself under an epilogue, else a
 * cache of Y) runs the window with its rows and columns unrolled (the
 * window too, when small) and is stored once.  C's padding stage (any
 * elementwise 5-D producer of C) is inlined: the block reads the input
 * under the padding's test, with no padded copy.  Blocks of 0 are chosen
 * from the shape: as many columns as leave the window's weights in the
 * CPU's vector registers with the accumulators (a 3x3 window: 7 to 14
 * columns with AVX-512, 4 with AVX2) by one row, more rows on narrow
 * rows.  Stages already scheduled and paddings that are outputs as in
 * ts_schedule_conv2d_nchwc_cpu (such a padding stays at root). */
ts_status ts_schedule_depthwise_nchwc_cpu(ts_schedule *s, ts_tensor *Y,
					  const ts_depthwise_cpu_params *p);

typedef struct ts_matmul_cuda_params {
	int64_t block_m, block_n; /* C tile per thread block */
	int64_t thread_m, thread_n; /* C block per thread (registers) */
	int64_t tile_k;           /* k step of the shared-memory tiles */
	/* nonzero: the shared tiles double-buffered (ts_double_buffer), the
	 * next k step's fetched (cp.async from sm_80 on) while this one's
	 * are read; 1 in the defaults.  Ignored by ts_schedule_conv2d_cuda. */
	int double_buffer;
} ts_matmul_cuda_params;

ts_matmul_cuda_params ts_matmul_cuda_default(void);
/* Schedules C = ts_op_matmul(A, B) for a GPU, any M, N, K: the tiles are
 * clamped to the shape (and, for the defaults, widened along the larger
 * dimension of a skinny shape); see fit_tiles in op_schedules_cuda.c.  Tiles of
 * more than 1024 threads per block, or shared tiles over 48 KB (both
 * copies of a double buffer counted), are refused (TS_ERR_INVALID); the
 * defaults drop the double buffer where its two copies would not fit.  A's
 * shared tile has its rows padded by 4 elements (ts_storage_align) where
 * its rows thread_m apart would share a bank, and the padded tiles still
 * fit.  A batched product (ts_op_batch_matmul
 * without transposes: C[b, M, N]) gets the same tiles per batch, its
 * batches bound to the grid's z (at most 65535). */
ts_status ts_schedule_matmul_cuda(ts_schedule *s, ts_tensor *C, const ts_matmul_cuda_params *p);
/* Schedules Y = ts_op_conv2d_nchw(...) (one group) for a GPU, as direct
 * convolution on shared-memory tiles: each block computes block_m output
 * channels by a tile of output rows x columns (columns: the largest
 * divisor of the width in 4..8, else 8; rows: block_n / columns), each
 * thread thread_m channels x thread_n adjacent columns in registers; per
 * step of tile_k input channels the block stages the padded input its
 * windows cover (the padding computed by the fetch) and the weights in
 * shared memory, double-buffered with double_buffer (cp.async for the
 * weights from sm_80 on).  The batch is the grid's z.  The defaults fit
 * the layer: register blocks shrink until there are 32768 threads, blocks
 * until they have at most 256 threads and there are 160 of them, and the
 * double buffer, then tile_k, give way until the tiles fit 48 KB; given
 * parameters over 1024 threads or 48 KB are refused.  A grouped
 * convolution gets one thread per output, padding inlined. */
ts_status ts_schedule_conv2d_cuda(ts_schedule *s, ts_tensor *Y, const ts_matmul_cuda_params *p);

/* The tensor-core GEMM (sm_80 and newer). */
typedef struct ts_matmul_tc_params {
	int64_t block_m, block_n; /* C tile per thread block */
	int64_t warp_m, warp_n;   /* C tile per warp, in 16 x 16 MMA tiles */
	int64_t tile_k;           /* k step of the shared-memory tiles */
	int double_buffer;        /* as ts_matmul_cuda_params's; 1 in the defaults */
} ts_matmul_tc_params;

/* 64 x 64 blocks, 32 x 32 warps, k steps of 32.  Without parameters,
 * ts_schedule_matmul_tensorcore takes 128 x 128 blocks of 64 x 64 warps
 * where M and N are multiples of 128 and M x N is at least 2048 x 2048. */
ts_matmul_tc_params ts_matmul_tc_default(void);
/* Schedules C = ts_op_matmul_acc(A, B, ..., ts_float32) with A and B
 * float16 or bfloat16, or C = ts_op_matmul_tf32(A, B, ...) with float32 A
 * and B (TF32), either transposed, on tensor cores: each block
 * stages A's and B's tiles in shared memory, each warp accumulates its
 * warp_m x warp_n tile in registers with 16 x 16 x 16 MMAs (ts_tensorize)
 * and stores it from them.  A batched product (3-D operands, C[b, M, N])
 * gets the same tiles per batch, its batches on the grid's z (at most
 * 65535).  M, N and K are multiples of 16; the tiles are
 * multiples of 16 that divide them (the defaults are halved until they
 * do; given ones that do not are refused, as are more than 32 warps,
 * warp tiles over 64 x 64 and shared tiles over 99 KB (101376 bytes, what
 * every sm_80+ GPU gives a block; over 48 KB the kernel takes them as
 * dynamic shared memory), both copies of a double buffer counted: the
 * defaults drop the double buffer where they would not fit).  Refused by name:
 * a compute that is not sum_k float32(A) x float32(B) of two 2-D tensors
 * (the same tensor twice included), symbolic extents, and a C whose stage
 * is already scheduled.  The shared tiles' rows are padded by 8 halves
 * (no bank conflicts in the ldmatrix reads) and filled 16 bytes at a
 * time. */
ts_status ts_schedule_matmul_tensorcore(ts_schedule *s, ts_tensor *C, const ts_matmul_tc_params *p);

#ifdef __cplusplus
}
#endif

#endif
