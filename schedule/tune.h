/*
 * tune.h - the auto-scheduler: search spaces over the public primitives, a
 * measured search seeded by the default schedules, and a tuning log that
 * applies its results without the tuner.
 *
 * A task is an operator of the library at one shape ("matmul" 512 512 512,
 * "pool" 1 64 56 56 3 2 1, ...), float32, for the host ("llvm").  Its
 * search space is a list of named integer parameters, each with a few
 * allowed values; choice[i][0] is the default, so candidate 0 (every
 * parameter at its first value) is exactly the library's default schedule
 * and tuning never ends slower than it, as measured in the same run.
 *
 *   ts_tune_task t;
 *   ts_tune_task_init(ctx, &t, "matmul", 3, (int64_t[]){256, 256, 256});
 *   ts_tune_opts o = ts_tune_opts_default();   // 10 s, seed 1
 *   ts_tune_result r;
 *   ts_tune(ctx, &t, &o, &r);                   // r.best, r.best_ms, r.default_ms
 *   ts_tune_log_append(ctx, "tune.jsonl", &t, &r);
 *
 * and later, without the tuner:
 *
 *   ts_tune_log *log = ts_tune_log_load(ctx, "tune.jsonl");
 *   const char *note;
 *   ts_func *f = ts_tune_lower_from_log(ctx, log, &t, &note);  // the default
 *                                      // schedule when the log has no record
 *
 * Spaces (ts_tune_task_init picks one per operator):
 *   "matmul"   matmul and dense: ts_matmul_cpu_params (mr, nr, kunroll,
 *              parallel) and, for matmul, whether B is packed in panels.
 *   "conv2d"   conv2d (NCHW[x]c): ts_conv2d_cpu_params (ow_block,
 *              oh_block, parallel, pad: 0 auto, 1 copy, 2 inline,
 *              rc_block: 0 chosen, 1 << 30 no reduction chunks) and the
 *              channel blocks ic_block and oc_block.  ts_tune_lower's
 *              function converts the input and weights to the blocks
 *              (its arguments are X, W and the blocked Yc), but the search
 *              times the kernel alone, on inputs blocked once, as
 *              tessera-bench and the graph layer run it: a deep layer's
 *              weight conversion costs more than the kernel.
 *   "batch_matmul"  the default schedule (blocked 0) or each batch's
 *              matmul register-blocked with mr, nr, kunroll, parallel.
 *   "softmax"  softmax: the vector lanes of ts_schedule_softmax_cpu.
 *   "depthwise"  depthwise conv2d on NCHW[x]c (ts_op_depthwise_conv2d_nchwc,
 *              the channel block one vector): ts_depthwise_cpu_params
 *              (ow_block, oh_block, 0 meaning chosen from the shape;
 *              parallel).
 *   "generic"  any single-output compute (ts_tune_space_generic): pooling,
 *              the plain conv2d_nchw and
 *              conv2d_nhwc (ts_op_conv2d_nchw / ts_op_conv2d_nhwc, no
 *              layout conversion), elementwise chains.
 * A candidate that a primitive refuses is skipped, not an error.
 */
#ifndef TESSERA_SCHEDULE_TUNE_H
#define TESSERA_SCHEDULE_TUNE_H

#include <stdbool.h>
#include <stdint.h>

#include "schedule.h"
#include "op_schedules.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TS_TUNE_MAX_PARAMS 20
#define TS_TUNE_MAX_CHOICES 10
#define TS_TUNE_MAX_SHAPE 10
#define TS_TUNE_NAME 24
/* The version written into and required from every log record; 0.2:
 * depthwise records are for the NCHW[x]c schedule; 0.3: conv2d records
 * carry the pad mode; 0.4: matmul records carry where B is packed
 * (pack_at); 0.5: conv2d is timed on the kernel alone, its conversions
 * outside; 0.6: conv2d records carry rc_block, the reduction's chunks;
 * 0.7: matmul records (K above 128) carry kc, the reduction's chunks;
 * 0.8: every candidate is timed with its data out of cache (rotating
 * buffer sets, ts_cold_sets), and matmul and conv2d records carry
 * prefetch. */
#define TS_TUNE_VERSION "0.8"

typedef struct ts_tune_space {
	const char *kind;  /* "matmul", "batch_matmul", "conv2d", "softmax", "generic" */
	int nparams;
	char name[TS_TUNE_MAX_PARAMS][TS_TUNE_NAME];
	int nchoice[TS_TUNE_MAX_PARAMS];
	int64_t choice[TS_TUNE_MAX_PARAMS][TS_TUNE_MAX_CHOICES]; /* [i][0]: the default */
} ts_tune_space;

/* One value per parameter of a space, in its order. */
typedef struct ts_tune_cand {
	int64_t v[TS_TUNE_MAX_PARAMS];
} ts_tune_cand;

typedef struct ts_tune_task {
	char op[TS_TUNE_NAME];   /* matmul, dense, batch_matmul, conv2d, conv2d_nchw,
				  * conv2d_nhwc, depthwise, pool, softmax, elementwise */
	int nshape;
	int64_t shape[TS_TUNE_MAX_SHAPE];
	ts_dtype dtype;          /* float32 */
	char target[16];         /* "llvm": the host */
	int lanes;               /* the host's float32 vector lanes */
	ts_tune_space space;     /* a caller may narrow a parameter's choices
				  * (the graph holds channel blocks at one) */
	uint64_t seal;           /* ts_tune_task_init's hash of the fields above
				  * the space and of the space's parameter
				  * names: a task changed since is refused */
} ts_tune_task;

/* The operators and their shapes (every extent >= 1, every tensor below
 * 2^31 elements):
 *   matmul M N K          C[M,N] = A[M,K] B[K,N]
 *   dense M N K           relu(A B + bias[N])
 *   batch_matmul B M N K  C[b] = A[b] B[b]
 *   conv2d N C H W K R S stride pad    (square kernel R = S)
 *   conv2d_nchw N C H W K R S stride pad   X[N,C,H,W], W[K,C,R,S] (OIHW)
 *   conv2d_nhwc N C H W K R S stride pad   X[N,H,W,C], W[R,S,C,K] (HWIO)
 *   depthwise N C H W R stride pad     (multiplier 1)
 *   pool N C H W R stride pad          (max pooling, pad < R)
 *   softmax ROWS COLS
 *   elementwise ROWS COLS              relu(A + B) * A
 * Errors name the operator and what is wrong. */
ts_status ts_tune_task_init(ts_ctx *ctx, ts_tune_task *t, const char *op, int nshape,
			    const int64_t *shape);
/* "matmul M N K ..." usage lines, one per operator, for programs. */
const char *ts_tune_ops_usage(void);
/* Floating-point operations of one run of the task (for GFLOP/s); NaN
 * for a NULL task or one ts_tune_task_init did not make.  (Every call
 * taking a task checks it so: a known operator, its number of extents,
 * the space's kind and counts; a changed task is refused, never read past
 * its arrays.) */
double ts_tune_task_flops(const ts_tune_task *t);
/* Candidate 0: every parameter at its default (all zeros for a task that
 * is refused as above). */
ts_tune_cand ts_tune_default(const ts_tune_task *t);

/* The task's graph built, scheduled with candidate c and lowered.  The
 * arguments are the inputs, then the output.  NULL with the refusing
 * primitive's error when the candidate is not valid. */
ts_func *ts_tune_lower(ts_ctx *ctx, const ts_tune_task *t, const ts_tune_cand *c);
/* The ts_schedule_conv2d_nchwc_cpu parameters of candidate c of a
 * "conv2d" task (ow_block, oh_block, parallel, pad, rc_block; the channel
 * blocks are the caller's layout); ts_conv2d_cpu_default() for any other
 * task, or NULL arguments. */
ts_conv2d_cpu_params ts_tune_conv2d_params(const ts_tune_task *t, const ts_tune_cand *c);
/* The ts_schedule_matmul_cpu / ts_schedule_dense_cpu parameters of
 * candidate c of a "matmul" or "dense" task (mr, nr, kunroll, parallel,
 * pack_at as .pack, kc, prefetch), and in *packed (where not NULL)
 * whether it multiplies by B packed into panels of its nr
 * (ts_op_matmul_packed; parameter "pack"); for any other task, or NULL
 * arguments, ts_matmul_cpu_default() and false. */
ts_matmul_cpu_params ts_tune_matmul_params(const ts_tune_task *t, const ts_tune_cand *c, bool *packed);

/* The generic space of out, a single-output compute: parameter "sketch"
 * (0: ts_schedule_default_cpu, the default; 1: tiles with the reductions
 * outside the inner tile; 2: reductions inside it), "tile<d>" per data
 * axis d (1: not split), "otile<d>" for the two innermost (inner tiles per
 * outer tile: a second level), "rsplit<r>" per reduction axis, "vec"
 * (vectorize the innermost tile), "vaxis" (0: of the innermost data axis,
 * 1: of the one before, moved innermost), "parallel" (the fused outer tile loops),
 * "unroll" (the inner reduction part), "cache" (cache_write into a local
 * accumulator computed at the tile) and "producers" (0: elementwise
 * producers inlined, 1: computed at the tile, 2: at root).  At most 6
 * data and 4 reduction axes get a parameter.  lanes: the vector width. */
ts_status ts_tune_space_generic(ts_ctx *ctx, const ts_tensor *out, int lanes, ts_tune_space *sp);
/* Schedules out (the only output of s) with a candidate of that space; the
 * refusing primitive's error when the candidate is not valid. */
ts_status ts_tune_apply_generic(ts_schedule *s, ts_tensor *out, int lanes,
				const ts_tune_space *sp, const ts_tune_cand *c);

typedef struct ts_tune_progress {
	int trials;          /* candidates measured so far */
	int invalid;         /* refused by a primitive */
	double best_ms;
	double best_gflops;
	double elapsed_s;
} ts_tune_progress;

typedef struct ts_tune_opts {
	double budget_s;     /* wall-clock budget of the search */
	uint64_t seed;       /* the mutations drawn depend only on it */
	int patience;        /* rounds without improvement before going wide, and
			      * wide ones before stopping */
	int beam;            /* best candidates kept as parents */
	int measure_top;     /* mutants measured per round, best by the cost model */
	int max_trials;      /* 0: no limit */
	int warmup, repeat;  /* calls of each candidate, rotating among the sets (median) */
	const ts_tune_cand *start; /* measured after the default (a log's record) */
	void (*progress)(const ts_tune_progress *p, void *user);
	void *user;
} ts_tune_opts;

/* budget 10 s, seed 1, patience 8, beam 4, measure_top 6, warmup 2, repeat 7. */
ts_tune_opts ts_tune_opts_default(void);

typedef struct ts_tune_result {
	ts_tune_cand best;
	ts_tune_cand def;
	double best_ms, default_ms; /* medians measured in this run */
	int trials;          /* candidates measured */
	int invalid;         /* refused by a primitive (skipped) */
	int wrong;           /* lowered but computed a wrong result (skipped) */
	int rounds;
	double elapsed_s;
	const char *reference; /* "ts_eval" or "the default schedule" */
	int sets;            /* buffer sets the calls rotated among (ts_cold_sets) */
} ts_tune_result;

/* Measures candidate 0, then searches: each round mutates one parameter of
 * each of the best `beam` candidates (and a few two-parameter mutants),
 * ranks the new mutants with an analytic cost model, and measures the
 * best `measure_top` of them: built together (ts_build_all: LLVM on
 * every core, up to 8 at a time), then one after another run, the output
 * checked against the reference on random data (ts_eval when the task is
 * small, else the default schedule's result), and timed (nothing else
 * running) as tessera-bench times: each call on the next of
 * ts_cold_sets(bytes of the arguments) copies of them, so with its data
 * out of cache (r->sets: how many).  After `patience` rounds without a
 * faster candidate (or none left to try), the rounds go wide: mutants of
 * three parameters at once, drawn at random from each parent, measured
 * without the cost model's ranking; one that is faster brings the near
 * mutants back.  Stops at the budget, after `patience` wide rounds
 * without a faster candidate, or at max_trials.  The winner and the default are then timed three more times
 * each, alternately, and the winner is kept only if its median is still
 * below the default's (a shared machine's noise would otherwise pick a
 * candidate timed in a quiet moment): r->best is never measured slower
 * than r->def in this run.  Once its arguments are checked it clears the
 * context's error, so a failure reports its own cause. */
ts_status ts_tune(ts_ctx *ctx, const ts_tune_task *t, const ts_tune_opts *o, ts_tune_result *r);

/* The analytic cost of a candidate (lower is better): an estimate of
 * vector use, parallel use and the inner working set against the cache.
 * INFINITY for a NULL or refused task, a NULL candidate, or one with a
 * value outside 0..4096 (which ts_tune_lower refuses). */
double ts_tune_cost(const ts_tune_task *t, const ts_tune_cand *c);

/* ---- the tuning log: JSON lines --------------------------------------------------- */

typedef struct ts_tune_record {
	char version[16], op[TS_TUNE_NAME], dtype[16], target[16], cpu[64], features[40];
	int nshape;
	int64_t shape[TS_TUNE_MAX_SHAPE];
	int threads;
	int nparams;
	char pname[TS_TUNE_MAX_PARAMS][TS_TUNE_NAME];
	int64_t pval[TS_TUNE_MAX_PARAMS];
	double median_ms, default_ms;
	int trials;
	int line;            /* in the file */
} ts_tune_record;

typedef struct ts_tune_log {
	const char *path;
	int n;
	ts_tune_record *rec;
} ts_tune_log;

/* This machine's CPU name (LLVM's) and a hash of its features, as records
 * carry them; either may be NULL (not written). */
void ts_tune_host(char cpu[64], char features[40]);

/* Appends one record for the task's result (threads: the thread pool's
 * size).  A result the reader would refuse (a time that is not finite or
 * is negative, negative trials, a parameter outside 0..4096) is refused
 * and nothing is written; an error names the path when it cannot be
 * written. */
ts_status ts_tune_log_append(ts_ctx *ctx, const char *path, const ts_tune_task *t,
			     const ts_tune_result *r);
/* Reads a log (in ctx's arena); as ts_lower, it starts afresh (an error
 * an earlier call left is cleared).  A file that cannot be read, is empty, or
 * has a malformed line (not one JSON object, a wrong type, a number out of
 * range, a missing or unknown field) is refused: NULL with an error
 * "PATH:LINE: what is wrong". */
ts_tune_log *ts_tune_log_load(ts_ctx *ctx, const char *path);
/* The last record of the log for the task (op, shape, dtype, target) into
 * *c, preferring the last one whose values are all among the task's
 * choices (a graph's convolution task holds its channel blocks at the
 * graph's: ts_graph_exec_tune_tasks) and then the last one tuned with the
 * thread pool's present size (ts_num_threads()) to later ones; *rec is
 * NULL (and TS_OK) when there is none.  A matching record
 * tuned with another tessera version, CPU or CPU features, or whose
 * parameters are not the task's, is refused with an error naming the
 * field and the line (*rec NULL, *c unchanged); so is a NULL log, task or
 * candidate, or a task ts_tune_task_init did not make. */
ts_status ts_tune_log_lookup(ts_ctx *ctx, const ts_tune_log *log, const ts_tune_task *t,
			     ts_tune_cand *c, const ts_tune_record **rec);
/* The task lowered with the log's record, or with the default schedule
 * when the log (which may be NULL) has none; *note says which, in words
 * the user can read ("tuned: LOG:3" / "default: no record for ...").
 * NULL with the error when the record is refused. */
ts_func *ts_tune_lower_from_log(ts_ctx *ctx, const ts_tune_log *log, const ts_tune_task *t,
				const char **note);

#ifdef __cplusplus
}
#endif

#endif
