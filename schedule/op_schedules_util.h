/*
 * op_schedules_util.h - what the operator schedules share (op_schedules.c,
 * op_schedules_conv.c, op_schedules_cuda.c): the checks every schedule
 * function makes on its arguments and on stages the caller already
 * changed, and the walk from an output down its elementwise epilogue to
 * the reduction it ends at.  Internal to schedule/.
 */
#ifndef TESSERA_SCHEDULE_OP_SCHEDULES_UTIL_H
#define TESSERA_SCHEDULE_OP_SCHEDULES_UTIL_H

#include <stdbool.h>

#include "op_schedules.h"

/* s is not NULL and t is a tensor of s's context; `what` names the
 * schedule function in the message. */
ts_status sch_need(ts_schedule *s, const ts_tensor *t, const char *what);
/* Each v[i] positive (a tile size is a split factor), names[i] naming it. */
ts_status sch_positive(ts_schedule *s, const char *what, int n, const int64_t *v,
		       const char *const *names);

/* A stage as ts_create_schedule made it, which a schedule function may
 * place as it likes (not split, annotated, attached, cached, aligned, or
 * with another stage attached at its loops). */
bool sch_pristine(ts_schedule *s, const ts_stage *st);
/* A producer a schedule function may inline or attach: pristine, and not
 * an output (whose buffer the caller reads). */
bool sch_placeable(ts_schedule *s, const ts_tensor *P);
/* T's stage pristine, else an error "WHAT: T is already ...; give it a
 * schedule of its own". */
ts_status sch_untouched(ts_schedule *s, const char *what, const ts_tensor *T);
/* Every stage of s: a whole-schedule default refuses one already
 * scheduled before changing any. */
ts_status sch_all_untouched(ts_schedule *s, const char *what);
/* Y, its epilogue chain[0..n) and their root C, each sch_untouched. */
ts_status sch_chain_untouched(ts_schedule *s, const char *what, const ts_tensor *Y,
			      ts_tensor *const *chain, int n, const ts_tensor *C);
/* Whether producer P of `reader` is the schedule's to place: placeable,
 * and (when attach, not only inlined) read by no other stage; otherwise it
 * stays computed whole, at root, before its readers. */
bool sch_own_producer(ts_schedule *s, const ts_tensor *P, const ts_tensor *reader, bool attach);

/* The reduction an epilogue chain ends at, as a schedule names it in its
 * messages ("schedule_dense_cpu(Y): stage T reduces (it is not a matmul)"). */
typedef struct sch_epilogue_root {
	const char *what;   /* the schedule */
	const char *noun;   /* "matmul" */
	const char *a_noun; /* "a matmul" */
	bool (*is_root)(const ts_tensor *t);
} sch_epilogue_root;
extern const sch_epilogue_root sch_conv_root, sch_dw_nchwc_root;
/* Walks from Y down the elementwise chain to the root reduction (a matmul,
 * a convolution): chain[0..*n) are the epilogue stages, Y first, the root
 * into *root, and TS_OK when the chain and root are sch_untouched; else
 * the error naming the stage that is not elementwise, reads the root's
 * operands, is shaped otherwise, is read elsewhere or was scheduled. */
ts_status sch_epilogue_of(ts_schedule *s, const char *what, const sch_epilogue_root *r, ts_tensor *Y,
			  ts_tensor **chain, int *n, ts_tensor **root);
/* The epilogue run on the root's block in registers: the stages between Y
 * and the root inlined into Y, the root local, never stored. */
ts_status sch_fuse_epilogue(ts_schedule *s, ts_tensor *const *chain, int n, ts_tensor *C);
/* The accumulator of Y's register blocks: under an epilogue (n > 0) the
 * root C itself, the chain fused into Y (sch_fuse_epilogue); else a local
 * cache_write of Y (= C).  NULL with the error. */
ts_tensor *sch_block_accumulator(ts_schedule *s, ts_tensor *Y, ts_tensor *const *chain, int n,
				 ts_tensor *C);

#endif
