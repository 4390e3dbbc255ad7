/*
 * schedule.h - schedules as data: stages, axes, relations and attachments.
 *
 * A schedule has one stage per compute tensor reachable from its outputs.
 * Each stage starts with its root axes (the compute's data-parallel axes,
 * then its reduction axes).  Primitives never build loops: split and fuse
 * append a relation and edit the stage's ordered list of leaf axes; vectorize,
 * parallel, unroll and bind set a leaf's loop kind; compute_at/inline/root set
 * where the stage is computed; cache_read, cache_write and rfactor add a
 * stage and rewrite the bodies of the stages they touch.  Loops appear only
 * at lowering (lower.h), by propagating the root domains through the
 * relations.
 *
 * The calls read like TVM's:
 *
 *   ts_schedule *s = ts_create_schedule(ctx, 1, &C);
 *   ts_stage *sc = ts_stage_of(s, C);
 *   ts_axis *xo, *yo, *xi, *yi;
 *   ts_tile(sc, ts_axis_of(sc, 0), ts_axis_of(sc, 1), 32, 32, &xo, &yo, &xi, &yi);
 *   ts_vectorize(sc, yi);
 *
 * Every primitive validates its arguments and, on a broken rule, returns an
 * error status with a message naming the primitive, the stage and the axis:
 * "reorder(C): axis 'i.inner' appears twice".  The schedule is unchanged
 * after a failed primitive.
 */
#ifndef TESSERA_SCHEDULE_SCHEDULE_H
#define TESSERA_SCHEDULE_SCHEDULE_H

#include "ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest unrolled extent (vectorize is refused beyond
 * TS_MAX_VECTOR_LANES, ir.h), and the most statements the unrolled loops of
 * one function may expand to: nested unrolled loops multiply (the product
 * of their extents times the statements of the body), so each loop's limit
 * alone would allow 1024 x 1024 x 1024 copies.  LLVM's optimizer is worse
 * than linear in straight-line code: 4096 unrolled multiply-adds compile in
 * about a second, 32768 in half a minute. */
#define TS_MAX_UNROLL 1024
#define TS_MAX_UNROLL_STMTS 4096
/* Most loops around a stage's body, counting those of the stages it is
 * computed at (ts_lower refuses deeper nests, naming the stage; the
 * schedule_ops pass keeps the same bound on the nest it builds): every
 * statement walk recurses once per loop, and long compute_at chains of
 * many-times-split stages would otherwise reach thousands of levels. */
#define TS_MAX_LOOP_NEST 128

/* How a split whose factor does not divide its extent handles the tail. */
typedef enum ts_tail {
	TS_TAIL_GUARD,     /* one loop nest, the body guarded by `if (index < extent)` */
	TS_TAIL_PARTITION  /* main loops without a guard, then a separate tail nest */
} ts_tail;

typedef struct ts_axis ts_axis;
typedef struct ts_stage ts_stage;
typedef struct ts_schedule ts_schedule;

struct ts_axis {
	const char *name;
	ts_expr *var;          /* the loop variable (int32), made when the axis is;
				* lowering with int64 indices uses an int64 copy */
	int64_t extent;        /* over the stage's full domain; lowering recomputes */
	ts_iter_kind kind;     /* reduce if derived from a reduction axis */
	ts_for_kind loop;      /* serial unless vectorize/parallel/unroll/bind */
	ts_thread_tag thread;
	ts_iter *root;         /* for root axes: the compute's axis */
};

typedef enum sch_rel_kind { SCH_REL_SPLIT, SCH_REL_FUSE } sch_rel_kind;

/* split: parent -> outer, inner (factor or nparts given); fuse: outer, inner
 * -> fused. */
typedef struct sch_relation {
	sch_rel_kind kind;
	ts_axis *parent, *outer, *inner, *fused;
	int64_t factor; /* split: inner extent, or 0 when nparts is given */
	int64_t nparts; /* split: outer extent, or 0 when factor is given */
	ts_tail tail;
} sch_relation;

typedef enum sch_attach { SCH_ATTACH_ROOT, SCH_ATTACH_INLINE, SCH_ATTACH_AT } sch_attach;
/* Where an attached stage's buffer lives: where it is computed (the
 * default), for the whole function, or at a loop outside the computation. */
typedef enum sch_store { SCH_STORE_COMPUTE, SCH_STORE_ROOT, SCH_STORE_AT } sch_store;

/* Most prefetches (ts_prefetch) one stage takes. */
#define TS_MAX_PREFETCH 8

/* A ts_prefetch: at the top of each iteration of `axis`, the elements of
 * `tensor` that iteration reads once `ahead`'s variable is `offset`
 * further on. */
typedef struct sch_prefetch {
	ts_tensor *tensor;
	ts_axis *axis, *ahead;
	int64_t offset;
} sch_prefetch;

struct ts_stage {
	ts_schedule *sch;
	ts_tensor *tensor;    /* the tensor this stage computes */
	const char *name;
	/* The operation, owned by the stage so cache_read/cache_write can
	 * rewrite it without touching the user's tensors. */
	ts_expr *body;
	int nroot;            /* ndim data axes, then the reduction axes */
	ts_axis **root;
	int nleaf;
	ts_axis **leaf;       /* loop order, outermost first */
	int nall;
	ts_axis **all;        /* every axis ever made in this stage */
	int nrel, caprel;
	sch_relation *rel;
	sch_attach attach;
	ts_stage *attach_stage;
	ts_axis *attach_axis;
	sch_store store;      /* ts_store_at / ts_store_root */
	ts_stage *store_stage;
	ts_axis *store_axis;
	ts_scope scope;       /* where an intermediate result is realized */
	bool is_output;
	/* A stage made by rfactor: the stage it was factored out of, the leaf
	 * reduction axis it factored (now its data axis rf_factor_axis), NULL
	 * otherwise. */
	ts_stage *rf_of;
	ts_axis *rf_axis;
	int rf_factor_axis;
	int nprefetch;
	sch_prefetch prefetch[TS_MAX_PREFETCH];
	/* ts_storage_align, per dimension of the tensor: factor 0 = none */
	int64_t align_factor[TS_MAX_DIMS], align_offset[TS_MAX_DIMS];
	bool double_buffer; /* ts_double_buffer */
};

struct ts_schedule {
	ts_ctx *ctx;
	int nout;
	ts_tensor **outputs;
	int nstages;
	ts_stage **stages;    /* producers before consumers */
	int capstages;
	/* Step printing (ts_ctx_set_print_steps): the nest after the last
	 * step, for the diff, and how deep primitives are nested (a tile's own
	 * splits print nothing). */
	const char *step_prev;
	int step_quiet;
};

/* A schedule for outputs: one stage per compute tensor they depend on. */
ts_schedule *ts_create_schedule(ts_ctx *ctx, int n, ts_tensor *const *outputs);
/* s[t]: the stage computing t (NULL with an error if t has none). */
ts_stage *ts_stage_of(ts_schedule *s, const ts_tensor *t);
/* t.op.axis[i] and t.op.reduce_axis[i] of the stage. */
ts_axis *ts_axis_of(ts_stage *st, int i);
ts_axis *ts_reduce_axis_of(ts_stage *st, int i);

/* Split, tile and fuse take leaves that carry no annotation yet (an axis
 * vectorized, parallel, unrolled, bound or tensorized is refused: its new
 * axes would not carry it); annotate the axes they make. */
ts_status ts_split(ts_stage *st, ts_axis *parent, int64_t factor, ts_axis **outer,
		   ts_axis **inner);
ts_status ts_split_nparts(ts_stage *st, ts_axis *parent, int64_t nparts, ts_axis **outer,
			  ts_axis **inner);
/* split with an explicit tail strategy (ts_split uses TS_TAIL_GUARD). */
ts_status ts_split_tail(ts_stage *st, ts_axis *parent, int64_t factor, ts_tail tail,
			ts_axis **outer, ts_axis **inner);
/* Sets the tail strategy of the split that produced axis (outer or inner). */
ts_status ts_set_tail(ts_stage *st, ts_axis *axis, ts_tail tail);
ts_status ts_tile(ts_stage *st, ts_axis *x, ts_axis *y, int64_t fx, int64_t fy,
		  ts_axis **xo, ts_axis **yo, ts_axis **xi, ts_axis **yi);
ts_status ts_fuse(ts_stage *st, ts_axis *outer, ts_axis *inner, ts_axis **fused);
ts_status ts_reorder(ts_stage *st, int n, ts_axis *const *order);
#define TS_AXES(...) ((int)(sizeof((ts_axis *[]){__VA_ARGS__}) / sizeof(ts_axis *))), \
	(ts_axis *const[]){__VA_ARGS__}
ts_status ts_vectorize(ts_stage *st, ts_axis *axis);
ts_status ts_parallel(ts_stage *st, ts_axis *axis);
ts_status ts_unroll(ts_stage *st, ts_axis *axis);
ts_status ts_bind(ts_stage *st, ts_axis *axis, ts_thread_tag tag);
/* Computes st inside parent's loop `axis`, the region one iteration needs.
 * parent must read st's tensor, directly or through other stages (TVM and
 * Halide allow a consumer's consumer); lowering then checks that the loop
 * encloses every reader of st (each is parent or attached at or below
 * axis, directly or through other attached stages), naming a reader that
 * is outside, and infers the union of the regions all readers need. */
ts_status ts_compute_at(ts_stage *st, ts_stage *parent, ts_axis *axis);
ts_status ts_compute_inline(ts_stage *st);
ts_status ts_compute_root(ts_stage *st);
/* Halide's store_at / store_root: st's buffer lives at parent's loop
 * `axis` (store_root: for the whole function) while compute_at places its
 * computation at or inside that loop, so the buffer outlives one
 * computation.  Lowering then slides the window: where the region one
 * iteration of the compute_at loop needs moves by a constant step along
 * one dimension (blur_x's rows for blur_y's row y), the first iteration
 * computes the whole region and each later one only the rows it did not
 * have, so every element is computed once instead of once per reader
 * iteration; otherwise each iteration computes its region into the shared
 * buffer.  At lowering st must be computed (compute_at) at parent at or
 * inside `axis`, and the loops from the storage down to the computation
 * must be serial or unrolled (iterations run in order and one at a time);
 * each rule broken is refused, naming it.  store_at at the compute_at
 * loop itself is the default, and so is store_root of a stage computed at
 * root. */
ts_status ts_store_at(ts_stage *st, ts_stage *parent, ts_axis *axis);
ts_status ts_store_root(ts_stage *st);
/* TVM's s[C].prefetch(t, axis, offset): at the top of each iteration of
 * axis (a leaf of st), a software prefetch of every cache line of the
 * elements of t that iteration axis + offset reads (on the CPU,
 * llvm.prefetch; CUDA code ignores it).  t is an input (a placeholder of
 * constant extents) that st reads, directly or through stages computed
 * inline into it (an epilogue's residual, read where the chain is
 * inlined); offset is nonzero, |offset| <= 2^31 - 1.
 * An iteration for which iteration axis + offset does not exist (past
 * either end of the loop) prefetches nothing: the last `offset`
 * iterations issue none.  The region is the box of t's indices over the
 * loops inside axis, taken from the lowered nest (an index clamped to a
 * constant, min(x*16 + z, 39), counts as unclamped); a dimension whose
 * index is not monotone in those loops is prefetched whole, and the
 * region is clipped to t.  A hint: results never change, and a vectorized axis
 * drops it.  Lowering refuses a
 * prefetch whose axis was split or fused afterwards, one of a stage
 * computed inline, one whose loop no longer reads t (a cache_read took
 * the reads), and one of more than 65536 cache lines (4 MB) per
 * iteration. */
ts_status ts_prefetch(ts_stage *st, ts_tensor *t, ts_axis *axis, int64_t offset);
/* ts_prefetch with the offset applied to another loop variable: at the
 * top of each iteration of axis, what that iteration reads when `ahead`
 * is offset further on.  ahead is axis itself, an outer leaf of st, or a
 * leaf of a stage st is computed at (directly or further out), whose loop
 * encloses axis's; lowering refuses one that does not.  A convolution
 * uses it to fetch the next channel block's weights a little in each step
 * of the reduction over the current one (ahead: the channel-block loop,
 * axis: the reduction's outer loop), so memory and arithmetic overlap. */
ts_status ts_prefetch_ahead(ts_stage *st, ts_tensor *t, ts_axis *axis, ts_axis *ahead,
			    int64_t offset);
/* TVM's s[T].storage_align(axis, factor, offset): the buffer T is
 * realized in (an intermediate stage: computed at root or attached) gets
 * a stride for dimension `dim` (0-based, of T's shape) that is
 * k * factor + offset elements for the smallest k making it at least the
 * packed stride, and the dimensions before it strides to match.  Padding
 * the rows of a shared-memory tile this way (factor 32, offset 1, say)
 * moves the column a warp reads across the 32 banks, so reads that would
 * all fall in one bank no longer conflict.  Results never change; the
 * buffer grows by the padding.  factor >= 1, 0 <= offset < factor; dim
 * in [0, ndim - 2] (the last dimension's stride is 1); not an output or
 * an input of the function (their layout is the caller's).  Lowering
 * refuses it on a stage computed inline (which has no buffer). */
ts_status ts_storage_align(ts_stage *st, int dim, int64_t factor, int64_t offset);
/* TVM's s[T].double_buffer(): the stage's buffer, computed at a loop of
 * its consumer (a shared-memory tile fetched at each step of a GEMM's
 * reduction), gets two copies, and the loop fetches the next step's tile
 * into one copy while its statements read the other: lowering (the
 * double_buffer pass) unrolls the loop by two, each half naming its copy,
 * with the first fetch before the loop.  On the cuda target the block then
 * meets at one barrier per step instead of two, and from sm_80 on the
 * fetches are asynchronous copies (cp.async) that run while the other copy
 * is read, waited for at each barrier.  Results never change; the buffer's
 * memory doubles.  Not an output (the caller's buffer); lowering refuses a
 * stage computed inline or at root, at a loop that is not sequential (bound
 * to a thread, parallel, vectorized), or whose fetch is not a statement of
 * that loop of its own (one that also reads what the loop writes, or that
 * other statements read before it), naming the loop. */
ts_status ts_double_buffer(ts_stage *st);
/* Tensor intrinsics for ts_tensorize. */
typedef enum ts_intrin {
	/* a warp's 16 x 16 x 16 matrix multiply-accumulate on tensor cores:
	 * float16 or bfloat16 operands (PTX mma.sync m16n8k16), or float32
	 * ones rounded to TF32 (ts_round_tf32; four mma.sync m16n8k8), into
	 * a float32 accumulator; sm_80 and newer */
	TS_INTRIN_MMA_16X16X16 = 1
} ts_intrin;
/* TVM's s[C].tensorize(axis, intrin): the loops from `axis` (a data axis
 * of st) to the innermost, each of extent 16 and plain, are computed by
 * the intrinsic.  Three forms, told apart by what the nest computes:
 *   - the update of a sum reduction acc[m, n] += cast(float32, a(m, k)) *
 *     cast(float32, b(k, n)) (16-bit a and b), or += round_tf32(a(m, k)) *
 *     round_tf32(b(k, n)) (float32 a and b), loops m, n, k in any order
 *     with k a reduction axis: one warp-wide MMA;
 *   - that reduction's init (acc[m, n] = 0, made with the update): a
 *     fill of the accumulator's registers;
 *   - any statement that reads acc[m, n] over a 16 x 16 tile (the stage
 *     that stores the accumulator, with an epilogue if it has one): each
 *     lane runs it for the 8 elements its registers hold.
 * a(m, k) and b(k, n) are loads of any layout and memory: from shared
 * memory with rows of 8 contiguous, 16-byte aligned elements a fragment is
 * one ldmatrix (.trans where k is not the contiguous dimension), loaded
 * once per run of updates; otherwise each lane loads the elements its
 * fragment holds.  The accumulator is a local (cache_write) buffer of
 * float32 whose rows are a multiple of 16 elements, every tile of it at a
 * row and column that are multiples of 16; every access to it is
 * tensorized.  A warp runs each tensorized nest together: no loop bound
 * to threadIdx.x may enclose it, no condition over it reads memory, and
 * threads are whole warps (threadIdx.x's extent a multiple of 32 where
 * threadIdx.y or z is used).  The cuda target checks all this when it
 * builds and refuses what does not hold, naming the loop; tensorize
 * itself refuses a nest that is not 2 or 3 loops of 16 (checked at
 * lowering for a stage computed at another), and once it is given, the
 * loops inside the nest take no other kind (unroll, vectorize, parallel,
 * bind, tensorize).  The CPU targets, the C emitter and the interpreter
 * run the nest as the loops it is, so results can be checked on any
 * machine. */
ts_status ts_tensorize(ts_stage *st, ts_axis *axis, ts_intrin intrin);
/* Where the stage's result lives when it is realized (TVM's set_scope). */
ts_status ts_set_scope(ts_stage *st, ts_scope scope);
/* A stage that copies t into `scope` and is read by `readers` instead of t. */
ts_tensor *ts_cache_read(ts_schedule *s, ts_tensor *t, ts_scope scope, int nreaders,
			 ts_tensor *const *readers);
/* A stage that computes t's value in `scope`; t's stage becomes a copy of it.
 * As in TVM, it comes first: t's stage must not be split, fused, reordered,
 * given a loop kind, attached or inlined yet (refused, naming the stage). */
ts_tensor *ts_cache_write(ts_schedule *s, ts_tensor *t, ts_scope scope);
/* TVM's s.rfactor(t, kf, factor_axis), Halide's Func::rfactor: factors the
 * reduction of t over its leaf reduction axis kf (a part of a split
 * reduction axis, usually) into a new stage "<t>.rf" ("<t>.rf2", ... when
 * t was factored before), returned.  t.rf has
 * t's data axes with kf inserted as a data axis at position factor_axis
 * (0 = outermost, t->ndim = innermost) and reduces over t's other leaf
 * reduction axes, so its kf axis can be parallelized or vectorized; t's
 * stage then reduces t.rf over kf's domain (a new reduction axis "<kf>.v").
 * t keeps its data axes, their splits and loop kinds; its reduction leaves
 * and their relations are replaced.  Where a split of the reduction does
 * not divide, t.rf adds the reducer's identity for the indices past the end
 * (a select over a clamped read, so no read leaves the source's shape).
 * Refused: a stage that is not a reduction or is inlined, kf not a leaf
 * reduction axis of t's stage (or already factored), factor_axis outside
 * 0..t->ndim, and stages computed at t's loops that the reduction reads
 * (call rfactor first, then compute_at them into t.rf). */
ts_tensor *ts_rfactor(ts_schedule *s, ts_tensor *t, ts_axis *kf, int factor_axis);

/* The schedule as text: each stage with its attachment, relations and leaf
 * loop order (extents over the stage's whole domain), and a warning line
 * under a vectorized leaf that has loops or attached stages inside it
 * (lowering runs such a loop serially; ts_lower_warnings says for sure).
 * When some stage is computed at another, an "after bound inference:"
 * section follows: each stage's region and an attached stage's loops with
 * the extents its region gives them (ts_schedule_bounds_str), or why
 * lowering refuses the schedule. */
const char *ts_schedule_str(ts_schedule *s);

/* The loop nest as it now stands: the schedule lowered through schedule_ops,
 * flatten and simplify, with the outputs and the placeholders they read as
 * arguments (an arena string; NULL only for a NULL schedule or no memory).
 * Where the schedule cannot be lowered yet, the text says why.  Neither the
 * schedule nor the calling thread's error state changes.  This is what
 * ts_ctx_set_print_steps prints after each primitive. */
const char *ts_schedule_step_str(ts_schedule *s);

/* Internal: called by each primitive after it succeeded; prints the step
 * (header from fmt) when the context asks for it. */
void sch_step(ts_schedule *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Internal, for primitives that make stages (rfactor.c): a stage for
 * compute t inserted at position at of the stage list, an axis of st, and
 * the identity of a reduction (the init of a reduction with none). */
ts_stage *sch_stage_new(ts_schedule *s, ts_tensor *t, int at);
ts_axis *sch_axis_new(ts_stage *st, const char *name, int64_t extent, ts_iter_kind kind,
		      ts_expr *var);
ts_expr *sch_reduce_identity(ts_ctx *ctx, ts_reduce_op op, ts_dtype t);
/* Internal: whether st is as its schedule made it: not split, fused,
 * reordered, annotated (a loop kind), attached or inlined (false for
 * NULL). */
bool sch_stage_untouched(const ts_stage *st);
/* Internal: the size variable (te.h ts_size_var) root axis r of st ranges
 * over: its tensor's dim_var for a data axis, its extent_var for a
 * reduction; NULL for a constant extent, a NULL st or an r that is not
 * a root axis. */
ts_expr *sch_root_size_var(const ts_stage *st, int r);

/* Internal: "<base>.<suffix>", or "<base>.<suffix>2", "<base>.<suffix>3",
 * ... when a stage of s already has that name: the stages a primitive
 * makes (C.local, C.rf) print in schedules and steps, so their names
 * should tell them apart.  NULL when out of memory, and for a NULL
 * argument. */
const char *sch_fresh_name(const ts_schedule *s, const char *base, const char *suffix);

/* Internal: every tensor the outputs of s depend on (placeholders too),
 * in dependency order, in s's arena; *n their number.  NULL with an error
 * when out of memory, and for a NULL argument. */
ts_tensor **sch_tensors(ts_schedule *s, int *n);

/* Internal: the stages that read tensor t (in stage order); writes at most
 * max and returns how many there are (0 for a NULL t, -1 for a NULL
 * schedule or a NULL out with max > 0). */
int sch_consumers(ts_schedule *s, const ts_tensor *t, ts_stage **out, int max);

#ifdef __cplusplus
}
#endif

#endif
