/*
 * c_emit_impl.h - what the three parts of the C and CUDA C emitter share
 * (internal to codegen/; the contract is c_emit.h):
 *
 *   c_emit.c       the walker: names, types, expressions, statements and
 *                  the entry points, for both dialects;
 *   c_emit_cuda.c  what only CUDA kernels have: loops bound to thread
 *                  indices, guards on stores every thread would make,
 *                  float4 and 16-byte accesses, tensorized nests as
 *                  mma.sync, and the launch configuration;
 *   c_emit_file.c  the text around the function's body: helpers emitted
 *                  on demand, 16-bit float conversions, the CUDA helpers,
 *                  the signature and the packed wrapper.
 *
 * Everything here is named cg_ce_ (codegen, C emitter).
 */
#ifndef TESSERA_CODEGEN_C_EMIT_IMPL_H
#define TESSERA_CODEGEN_C_EMIT_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "c_emit.h"
#include "cuda_mma.h"
#include "ranges.h"
#include "sbuf.h"

enum { P_OR = 1, P_AND, P_EQ, P_REL, P_ADD, P_MUL, P_UNARY, P_ATOM };

/* Scalar types the dialects know, indexed by type_index(). */
enum { T_I8, T_I16, T_I32, T_I64, T_U8, T_U16, T_U32, T_U64, T_F32, T_F64, T_BOOL, T_F16, T_BF16,
       T_COUNT };

/* 16-bit floats (float16, bfloat16) are stored as their bits in 16-bit
 * unsigned integers and computed in float: a load converts to float, a
 * store converts back, and every arithmetic result, call and cast of a
 * 16-bit dtype is rounded to it at once (ts_rh_f16 / ts_rh_bf16), so the
 * value a register holds is always one of the type's, as ir.h's "IEEE-754
 * in the operand dtype" asks (float has the bits for this double rounding
 * to be exact for + - * /).  The conversions are C in the plain dialect
 * and PTX cvt for float16 in CUDA, emitted on demand. */
enum { C16_FROM, C16_TO, C16_ROUND, C16_COUNT };

/* Helpers emitted on demand, per type.  The _z divisions accept any
 * divisor; the casts convert from float32 / float64 to the helper's type;
 * the _wrap operations compute in the unsigned twin, so that a signed
 * overflow wraps as ir.h says instead of being undefined in C. */
enum {
	H_FLOORDIV, H_FLOORMOD, H_MIN, H_MAX, H_SIGMOID, H_TRUNCDIV_Z, H_TRUNCMOD_Z,
	H_FLOORDIV_Z, H_FLOORMOD_Z, H_CAST_F32, H_CAST_F64, H_ADD_WRAP, H_SUB_WRAP,
	H_MUL_WRAP, H_FSUB, H_COUNT
};

typedef struct dialect {
	const char *name;           /* prefix of error messages */
	const char *file_head;      /* includes and macros */
	const char *func_qual;      /* before the return type of the function */
	bool launch_bounds;         /* __launch_bounds__(threads) */
	const char *restrict_kw;
	const char *helper_qual;
	const char *type[T_COUNT];
	const char *math32[IR_INTRIN_COUNT]; /* NULL: a helper */
	const char *math64[IR_INTRIN_COUNT];
	const char *inf32, *nan32, *inf64, *nan64;
	bool bind_threads;          /* thread loops read blockIdx/threadIdx */
	const char *shared_qual;    /* NULL: shared allocations are ordinary */
	const char *align_fmt;      /* alignment attribute, %d bytes */
	int local_align;            /* of stack temporaries; 0: natural */
	const char *barrier;        /* NULL: BARRIER is rejected */
	const char *prefetch;       /* NULL: PREFETCH emits nothing */
	const char *parallel_pragma;
	const char *simd_pragma;
	const char *unroll_pragma;
	bool packed_wrapper;
	bool float4;
	int64_t max_stack_bytes;    /* larger temporaries go to the heap */
} dialect;

typedef struct name_entry {
	const void *key; /* a VAR node or a buffer */
	const char *cname;
} name_entry;

/* An operand fragment loaded by ldmatrix: the buffer, the lane's row
 * index as printed, .trans, and the register array's name. */
typedef struct mma_frag {
	const ts_buffer *buf;
	const char *at;
	bool trans;
	const char *name;
} mma_frag;

/* A variable whose value depends on thread indices (1 << tag each). */
typedef struct thread_dep {
	const ts_expr *var;
	unsigned tags;
} thread_dep;

typedef struct emitter {
	ts_ctx *ctx;
	const dialect *d;
	const ts_func *f;
	const char *fname;
	ts_sbuf out;
	int indent;
	bool failed;
	name_entry *names;
	int nnames, cap;
	cg_ranges ranges; /* an entry for every name, ranged for integer variables */
	bool helpers[H_COUNT][T_COUNT];
	bool conv16[2][C16_COUNT]; /* [bfloat16?][C16_*]: 16-bit float helpers used */
	/* lane evaluation of vector expressions */
	const char *lane;            /* lane loop variable, or NULL */
	int comp;                    /* float4 component, or -1 */
	const ts_expr *vec_loads[4]; /* float4 mode: loads read as a temporary */
	const char *vec_names[4];
	int nvec;
	/* allocation state */
	int parallel_depth;
	const char *heap[16]; /* heap temporaries in scope, innermost last */
	int nheap;
	/* CUDA */
	cg_launch launch;
	int64_t bound_ext[TS_THREAD_Z + 1]; /* extent of the enclosing loop bound to each tag */
	/* while emitting: the variables in scope whose value depends on a
	 * thread index (the bound loops' own, and lets and loops defined from
	 * them), with the tags (1 << tag) they depend on; past the table's
	 * size every value counts as depending on every index */
	thread_dep tdep[64];
	int ntdep;
	int tdep_over; /* entries that did not fit, still in scope */
	unsigned cond_tags; /* the tags the enclosing ifs' conditions depend on */
	bool in_guard;      /* inside a guard replicated_store asked for */
	ts_buffer *shared[32];
	int nshared;
	cg_mma mma; /* tensorized nests (cuda_mma.h) */
	bool tf32;  /* ts_round_tf32 is used */
	/* a shared buffer is double-buffered (ts_double_buffer): its fetches
	 * are cp.async copies, and each barrier waits for them first */
	bool async_copy;
	/* within a run of tensorized updates (mma_run): the operand
	 * fragments loaded so far, each loaded once for the run */
	bool in_run;
	int nfrag;
	mma_frag frag[64];
} emitter;

/* The helpers' and types' names in emitted symbols (ts_floordiv_i32). */
extern const char *const cg_ce_type_suffix[T_COUNT];
extern const char *const cg_ce_helper_name[H_COUNT];

/* ---- c_emit.c ------------------------------------------------------------ */

/* Records the first error, prefixed with the dialect and the function;
 * later ones are dropped (em->failed stops the walk). */
__attribute__((format(printf, 3, 4)))
void cg_ce_fail(emitter *em, ts_status st, const char *fmt, ...);
/* Gives key (a VAR node or a buffer) a fresh C name made from base;
 * cg_ce_lookup finds the innermost one (NULL: none). */
const char *cg_ce_define(emitter *em, const void *key, const char *base);
const char *cg_ce_lookup(const emitter *em, const void *key);
/* The dialect's name of t's element type ("void" after reporting). */
const char *cg_ce_ctype(emitter *em, ts_dtype t);
/* The variable ranges in scope: set one just defined, bound an integer
 * expression over them, range a loop variable from its min and extent. */
void cg_ce_set_range(emitter *em, const void *key, int64_t lo, int64_t hi);
ir_interval cg_ce_bound(const emitter *em, const ts_expr *e);
void cg_ce_loop_range(emitter *em, const ts_expr *v, ir_interval min, int64_t ext_max);
/* Text: s as is; e parenthesized below precedence min_prec (P_*); e as
 * a string; an indented line; the indentation alone. */
void cg_ce_put(emitter *em, const char *s);
void cg_ce_sub(emitter *em, const ts_expr *e, int min_prec);
const char *cg_ce_expr_text(emitter *em, const ts_expr *e);
void cg_ce_line(emitter *em, const char *s);
void cg_ce_begin_line(emitter *em);
/* A statement; a loop's or a guard's body, closing its brace. */
void cg_ce_stmt(emitter *em, const ts_stmt *s);
void cg_ce_block_body(emitter *em, const ts_stmt *body);

/* ---- c_emit_cuda.c -------------------------------------------------------- */

/* Before the body: the launch configuration (em->launch), the shared
 * buffers, the tensorized nests and the lane variables they use. */
void cg_ce_kernel_prologue(emitter *em);
/* A loop bound to a block or thread index: the index, guarded where the
 * loop is shorter than the launch's dimension. */
void cg_ce_thread_loop(emitter *em, const ts_stmt *s);
/* The thread indices (1 << tag) e depends on; record (push, returning
 * what pop takes) and forget that a variable depends on some. */
unsigned cg_ce_thread_tags(const emitter *em, const ts_expr *e);
int cg_ce_tdep_push(emitter *em, const ts_expr *v, unsigned tags);
void cg_ce_tdep_pop(emitter *em, int n);
/* A store every thread of a block would make: cond receives the test
 * that leaves it to thread 0 (empty: none), which open_guard and
 * close_guard put around it. */
bool cg_ce_replicated_store(emitter *em, const ts_stmt *s, char cond[96]);
void cg_ce_open_guard(emitter *em, const char *cond);
void cg_ce_close_guard(emitter *em, const char *cond);
/* A vectorized loop as one vector access or lane by lane (false: it
 * stays a loop). */
bool cg_ce_vector_loop(emitter *em, const ts_stmt *s);
/* A copy of `bytes` from global memory into a double-buffered shared
 * buffer as one cp.async (false: not such a copy, nothing emitted). */
bool cg_ce_async_copy(emitter *em, const ts_buffer *dst, const ts_expr *dbase,
		      const ts_buffer *src, const ts_expr *sbase, int64_t bytes);
/* A tensorized loop as mma.sync (cuda_mma.h). */
void cg_ce_mma_nest(emitter *em, const ts_stmt *s);
/* A shared buffer's bytes in the block's shared memory, 16-byte aligned. */
int64_t cg_ce_shared_slot_bytes(const ts_buffer *b);

/* ---- c_emit_file.c -------------------------------------------------------- */

/* The whole file into sb: on-demand helpers, the signature, em->out as
 * the body, and the packed wrapper where the dialect has one. */
void cg_ce_assemble(emitter *em, ts_sbuf *sb);

#endif
