/*
 * cuda_mma.h - tensorized nests (ts_tensorize) on a warp's tensor cores.
 *
 * A TS_FOR_TENSORIZED loop tops a nest of 16 x 16 (x 16) plain loops.  In
 * tessera's semantics every thread computes the whole nest; the cuda target
 * instead has the 32 lanes of a warp compute it together, each holding 8 of
 * the tile's 256 accumulator elements in registers, as PTX mma.sync
 * m16n8k16 lays them out:
 *
 *   g = laneid / 4, t = laneid % 4
 *   register slot s (0..7) of a tile: row g + 8 * ((s >> 1) & 1),
 *                                     column 8 * (s >> 2) + 2 * t + (s & 1)
 *
 * So the accumulator, a local float32 buffer of W-element rows, becomes
 * size / 32 registers per lane: the tile at (16 * i, 16 * j) is registers
 * 8 * (i * W / 16 + j) .. + 7.  This is equivalent to the per-thread
 * semantics when every access to the accumulator is a tensorized nest that
 * the whole warp runs with the same tile: the nests that write or read it
 * elementwise (its init, the stage that stores it) run per lane for the 8
 * elements that lane holds, and the update runs as two mma.sync.
 *
 * An update's operands reach the lanes as mma.sync's A and B fragments:
 * by ldmatrix where an operand sits in shared memory in rows of 8
 * contiguous, 16-byte aligned elements (cg_mma_ldsm_index), else by each
 * lane's own loads of the elements its fragment holds.
 *
 * cg_mma_scan checks those conditions over a kernel's body and records each
 * nest; the CUDA C emitter (c_emit.c) prints what it recorded.
 */
#ifndef TESSERA_CUDA_MMA_H
#define TESSERA_CUDA_MMA_H

#include "ir.h"

#define CG_MMA_MAX_ACC 16

/* An update's operands: float16 or bfloat16 (mma.sync m16n8k16), or
 * float32 rounded to TF32 (round_tf32; two mma.sync m16n8k8 per k step
 * of 16, each lane loading its own elements). */
typedef enum cg_mma_type { CG_MMA_F16, CG_MMA_BF16, CG_MMA_TF32 } cg_mma_type;

typedef struct cg_mma_nest {
	const ts_stmt *loop; /* the tensorized loop */
	bool update;         /* acc += a * b over 16 x 16 x 16; else elementwise */
	int acc;             /* index in cg_mma.acc */
	ts_expr *tile;       /* the tile's first register in the lane's array */
	/* update: element (m, k) of a and (k, n) of b, and their type */
	ts_buffer *a, *b;
	ts_expr *a_idx, *b_idx, *m, *n, *k;
	cg_mma_type type;
	/* elementwise: the statement under the two loops, its row and column
	 * variables and the accumulator element it accesses */
	ts_stmt *body;
	ts_expr *row, *col, *idx;
} cg_mma_nest;

typedef struct cg_mma {
	int nacc;
	ts_buffer *acc[CG_MMA_MAX_ACC];  /* accumulators */
	ts_buffer *frag[CG_MMA_MAX_ACC]; /* their registers per lane */
	int nnest, cap;
	cg_mma_nest *nest;
	ts_expr *g, *t; /* int32 variables: laneid / 4 and laneid % 4 */
	/* laneid % 8, (laneid / 8) % 2 and laneid / 16: the row and the
	 * matrix whose address a lane gives to ldmatrix */
	ts_expr *r, *q0, *q1;
} cg_mma;

/* Records the tensorized nests of body (a kernel launched with `block`
 * threads), or fails with an error naming the loop and what does not
 * hold.  mm->nnest == 0 when body has none. */
ts_status cg_mma_scan(ts_ctx *ctx, ts_stmt *body, const int64_t block[3], cg_mma *mm);
/* The nest recorded for tensorized loop s (NULL: none). */
const cg_mma_nest *cg_mma_find(const cg_mma *mm, const ts_stmt *s);
/* The accumulator index of buffer b (-1: not one). */
int cg_mma_acc_of(const cg_mma *mm, const ts_buffer *b);
/* An elementwise nest's statement for this lane's register slot s (0..7):
 * row and column replaced by the slot's, the accumulator by its register. */
ts_stmt *cg_mma_slot(ts_ctx *ctx, const cg_mma *mm, const cg_mma_nest *n, int s);
/* An update's operands: a's element for fragment element i (0..7), b's for
 * element i (0..3) of the 8 columns from 8 * half, and the register of
 * accumulator element i (0..3) of that half. */
ts_expr *cg_mma_a_index(ts_ctx *ctx, const cg_mma *mm, const cg_mma_nest *n, int i);
ts_expr *cg_mma_b_index(ts_ctx *ctx, const cg_mma *mm, const cg_mma_nest *n, int half, int i);
ts_expr *cg_mma_c_index(ts_ctx *ctx, const cg_mma_nest *n, int half, int i);
/* A TF32 update's operands in k step ks (0, 1: k 0-7, 8-15) of mma.sync
 * m16n8k8: a's element for fragment element i (0..3), b's for element i
 * (0, 1) of the 8 columns from 8 * half. */
ts_expr *cg_mma_tf32_a_index(ts_ctx *ctx, const cg_mma *mm, const cg_mma_nest *n, int ks, int i);
ts_expr *cg_mma_tf32_b_index(ts_ctx *ctx, const cg_mma *mm, const cg_mma_nest *n, int ks, int half,
			     int i);
/* Where an update's operand (b: B, else A) can come from one
 * ldmatrix.x4 (four 8 x 8 matrices of 16-bit elements, each row 8
 * contiguous, 16-byte aligned elements of shared memory): the element
 * whose address this lane gives, and whether the matrices are read
 * transposed (.trans: rows of the operand's other dimension are
 * contiguous).  The four registers are A's fragment a0..a7, or B's b0..b3
 * for columns 0-7 and then for columns 8-15.  NULL (nothing recorded in
 * ctx) where the operand does not qualify: each lane then loads its
 * elements itself. */
ts_expr *cg_mma_ldsm_index(ts_ctx *ctx, const cg_mma *mm, const cg_mma_nest *n, bool b, bool *trans);

#endif
