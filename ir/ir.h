/*
 * ir.h - tessera's IR: dtypes, expressions, tensors, buffers and loop-IR
 * statements.
 *
 * Semantics, stated once:
 *  - Nodes are immutable and live in the context arena.  A mutator returns
 *    the same pointer when nothing under a node changed, so "did a pass change
 *    anything" is a pointer comparison.
 *  - Variables are identified by pointer, never by name; names are for
 *    printing only and need not be unique.
 *  - An int32 operand beside an int64 one is widened to int64 (as C
 *    promotes); other integer widths must agree.  A reduction axis whose
 *    range leaves int32 has an int64 variable.
 *  - Integer arithmetic is two's complement and wraps on overflow (evaluators
 *    compute in uint64 and truncate to the dtype's width).  Lowering picks
 *    int64 loop variables and indices when a function's extents need them,
 *    so lowered index arithmetic never wraps.
 *  - TRUNCDIV/TRUNCMOD round toward zero (C's / and %): -7 truncdiv 2 = -3,
 *    -7 truncmod 2 = -1.  FLOORDIV/FLOORMOD round toward negative infinity
 *    (Python's // and %): -7 floordiv 2 = -4, -7 floormod 2 = 1; the sign of a
 *    floormod result follows the divisor.  ts_div() on integers builds
 *    FLOORDIV (index arithmetic, as in TVM); DIV is float division only.
 *  - Integer division never traps (Halide's convention), in every dtype and
 *    for all four kinds: x / 0 = 0 and x % 0 = 0; MIN / -1 wraps to MIN
 *    and MIN % -1 = 0 (MIN: the dtype's smallest value).  Every evaluator,
 *    backend and folder gives exactly these values; code generators keep the
 *    plain instruction when the divisor is a constant other than 0 and -1.
 *  - A CAST from float to an integer dtype truncates toward zero, maps NaN
 *    to 0 and saturates values beyond the dtype to its min or max (to 0 for
 *    negatives and an unsigned dtype): int8(300.5) = 127, uint8(-3.7) = 0,
 *    int32(-inf) = INT32_MIN.  float16 and bfloat16 convert by the same rule
 *    (their values are exact in float32).  A CAST to bool is x != 0, so NaN
 *    gives true; integer to integer casts wrap.
 *  - A CAST to a float dtype rounds to nearest even once, from the exact
 *    value (an int64 to float32 too), except that a cast to float16 or
 *    bfloat16 rounds to float32 first, then to the 16-bit dtype: that
 *    second rounding can differ from one direct rounding where the source
 *    has more bits than float32 (float64, integers beyond 2^24), and every
 *    evaluator, backend and folder gives this value (ir_cast_to_float).
 *  - MIN and MAX of floats are C's fmin and fmax (IEEE-754 minNum and
 *    maxNum; ir_fminmax): a NaN operand, signalling or quiet, is ignored
 *    unless both are NaN (equal operands, +0 and -0, give the second in
 *    the evaluators and emitted C; LLVM code may give either), so a max or min
 *    reduction skips NaNs, whatever the order of its operands (over NaNs
 *    only it gives its identity, -inf for max, +inf for min).
 *  - Operands are evaluated left to right; expressions have no side effects,
 *    so order matters only for errors.
 *  - Comparisons and logical operators yield bool (with the operands' lanes).
 *  - Float math follows IEEE-754 in the operand dtype, except that a*b + c
 *    may be contracted into a fused multiply-add (one rounding), as C
 *    compilers do by default; reductions in the
 *    reference evaluator accumulate float in float64.
 *  - Vector values have dtype.lanes > 1: RAMP(base, stride, lanes) and
 *    BROADCAST(value, lanes) build them; a LOAD whose index is a vector reads
 *    one element per lane.
 */
#ifndef TESSERA_IR_IR_H
#define TESSERA_IR_IR_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TS_MAX_DIMS 8

/* Deepest expression a constructor builds.  Every walk over expressions
 * (printer, simplifier, bound analysis, evaluators, interpreter, LLVM and C
 * emitters) recurses once per level; this many levels fit with room to spare
 * in an 8 MB stack and in a thread-pool worker's stack under
 * AddressSanitizer (tests/test_limits.c builds one exactly this deep and
 * takes it through every stage).  Long chains such as a sum of 100,000
 * terms must be built as balanced trees. */
#define TS_MAX_EXPR_DEPTH 2000
/* Most nodes of an expression counted as a tree, a subexpression once for
 * each use (ts_expr.nodes).  Walks see trees, not shared graphs, so this
 * bounds their time as the depth bounds their stack: a stage that reads
 * its producer twice, inlined in a chain, doubles at every stage, and
 * lowering would otherwise run for minutes; constructors refuse larger
 * nodes. */
#define TS_MAX_EXPR_NODES (1 << 20)
/* Deepest statement a constructor builds (ts_stmt.depth).  Every walk over
 * the loop IR (printer, verifier, simplifier, visitors and mutators,
 * lowering passes, interpreter, LLVM and C emitters) recurses once or
 * twice per level, then into the expressions at the bottom: a function
 * body this deep, around an expression TS_MAX_EXPR_DEPTH deep, fits in
 * half of an 8 MB stack under AddressSanitizer (tests/test_ir.c builds one
 * and takes it through every walk, on the main stack and on a thread-pool
 * worker's).  Lowering stays well below: a loop nest with its lets and
 * guards is a few dozen levels, and each stage at root adds two (a
 * sequence and a realize), so the most stages a schedule holds, 256, come
 * to about 520.  A sequence is one level whatever its length, so long
 * lists must be built flat (one ir_seq), not by appending with ir_seq2. */
#define TS_MAX_STMT_DEPTH 1000
/* Most lanes of a vector dtype (ts_ramp, ts_broadcast, ts_dtype_with_lanes)
 * and of a vectorized loop. */
#define TS_MAX_VECTOR_LANES 64

/* ---- dtypes ------------------------------------------------------------ */

typedef enum ts_type_code {
	TS_TYPE_INT,
	TS_TYPE_UINT,
	TS_TYPE_FLOAT,
	TS_TYPE_BFLOAT,
	TS_TYPE_BOOL,
	TS_TYPE_HANDLE /* an opaque pointer: a buffer's data */
} ts_type_code;

typedef struct ts_dtype {
	uint8_t code;   /* ts_type_code */
	uint8_t bits;   /* 1 for bool */
	uint16_t lanes; /* 1 for scalars */
} ts_dtype;

#define TS_DTYPE(c, b) ((ts_dtype){(c), (b), 1})
#define ts_int8 TS_DTYPE(TS_TYPE_INT, 8)
#define ts_int16 TS_DTYPE(TS_TYPE_INT, 16)
#define ts_int32 TS_DTYPE(TS_TYPE_INT, 32)
#define ts_int64 TS_DTYPE(TS_TYPE_INT, 64)
#define ts_uint8 TS_DTYPE(TS_TYPE_UINT, 8)
#define ts_bool TS_DTYPE(TS_TYPE_BOOL, 1)
#define ts_float16 TS_DTYPE(TS_TYPE_FLOAT, 16)
#define ts_bfloat16 TS_DTYPE(TS_TYPE_BFLOAT, 16)
#define ts_float32 TS_DTYPE(TS_TYPE_FLOAT, 32)
#define ts_float64 TS_DTYPE(TS_TYPE_FLOAT, 64)
#define ts_handle TS_DTYPE(TS_TYPE_HANDLE, 64)

bool ts_dtype_eq(ts_dtype a, ts_dtype b);
/* A dtype tessera can compute with: a known code, bits that code allows
 * (int/uint 8..64, float 16/32/64, bfloat 16, bool 1, handle 64) and lanes
 * 1..TS_MAX_VECTOR_LANES (a handle has one lane). */
bool ts_dtype_is_valid(ts_dtype t);
/* Records "what: invalid dtype ..." and returns false unless t is valid. */
bool ts_dtype_check(ts_ctx *ctx, const char *what, ts_dtype t);
bool ts_dtype_is_float(ts_dtype t); /* float or bfloat */
bool ts_dtype_is_int(ts_dtype t);   /* int or uint */
bool ts_dtype_is_bool(ts_dtype t);
/* lanes outside 1..TS_MAX_VECTOR_LANES give lanes = 0, which no check
 * accepts (ts_dtype_is_valid is false). */
ts_dtype ts_dtype_with_lanes(ts_dtype t, int lanes);
ts_dtype ts_dtype_element(ts_dtype t); /* lanes = 1 */
int ts_dtype_bytes(ts_dtype t);        /* of one element (bool: 1) */
/* "float32", "int64x8", "bool"; buf must hold 24 bytes.  Returns buf (NULL
 * when buf is NULL). */
const char *ts_dtype_str(ts_dtype t, char buf[24]);
/* Parses a scalar dtype name; returns false if unknown. */
bool ts_dtype_parse(const char *s, ts_dtype *out);

/* ---- expressions ------------------------------------------------------- */

/* One list generates the kind enum, the name table and every dispatch.
 * The binary kinds run from IR_ADD to IR_OR and use u.bin. */
#define IR_EXPR_KINDS(X)                                                       \
	X(INT_IMM)   /* u.int_imm: int, uint and bool constants */            \
	X(FLOAT_IMM) /* u.float_imm */                                         \
	X(VAR)       /* u.var */                                               \
	X(ADD) X(SUB) X(MUL)                                                   \
	X(DIV)       /* float division */                                      \
	X(TRUNCDIV) X(TRUNCMOD) X(FLOORDIV) X(FLOORMOD)                        \
	X(MIN) X(MAX)                                                          \
	X(EQ) X(NE) X(LT) X(LE) X(GT) X(GE)                                    \
	X(AND) X(OR) /* bool operands */                                       \
	X(NOT)       /* u.un */                                                \
	X(CAST)      /* u.un: convert to the node's dtype */                   \
	X(SELECT)    /* u.select: cond ? t : f, both arms evaluated; a         \
			scalar cond, or one of the arms' lanes, per lane */    \
	X(CALL)      /* u.call: a math intrinsic */                            \
	X(READ)      /* u.read: element of a tensor, n-d indices */            \
	X(LOAD)      /* u.load: element(s) of a flat buffer */                 \
	X(RAMP)      /* u.ramp: base + stride * lane */                        \
	X(BROADCAST) /* u.bcast */                                             \
	X(REDUCE)    /* u.reduce: a commutative reduction over axes */

typedef enum ir_expr_kind {
#define X(k) IR_##k,
	IR_EXPR_KINDS(X)
#undef X
	IR_EXPR_KIND_COUNT
} ir_expr_kind;

/* Math intrinsics: enum name, printed name, arity. */
#define IR_INTRINSICS(X)                                                       \
	X(EXP, "exp", 1) X(LOG, "log", 1) X(SQRT, "sqrt", 1)                   \
	X(TANH, "tanh", 1) X(EXP2, "exp2", 1) X(FABS, "fabs", 1)               \
	X(POW, "pow", 2) X(ERF, "erf", 1) X(SIGMOID, "sigmoid", 1)             \
	X(FLOOR, "floor", 1) X(CEIL, "ceil", 1)                                \
	X(LIKELY, "likely", 1) /* bool guard a loop partition may remove */  \
	X(ROUND_TF32, "round_tf32", 1) /* float32 to TF32's 10-bit mantissa */

typedef enum ir_intrinsic {
#define X(e, s, n) IR_INTRIN_##e,
	IR_INTRINSICS(X)
#undef X
	IR_INTRIN_COUNT
} ir_intrinsic;

typedef enum ts_reduce_op {
	TS_REDUCE_SUM,
	TS_REDUCE_MAX,
	TS_REDUCE_MIN,
	TS_REDUCE_PROD
} ts_reduce_op;

typedef struct ts_expr ts_expr;
typedef struct ts_stmt ts_stmt;
typedef struct ts_iter ts_iter;
typedef struct ts_tensor ts_tensor;
typedef struct ts_buffer ts_buffer;

struct ts_expr {
	ir_expr_kind kind;
	ts_ctx *ctx; /* the context whose arena holds it: operands come from one */
	ts_dtype dtype;
	int depth; /* 1 for a leaf, else 1 + the deepest child's; <= TS_MAX_EXPR_DEPTH */
	int64_t nodes; /* 1 + the children's nodes: the size as a tree; <= TS_MAX_EXPR_NODES */
	union {
		int64_t int_imm;
		double float_imm;
		struct {
			const char *name;
			int id; /* unique within the context */
			/* the variable of a reduction axis (ir_iter_new): it
			 * stands for a point of that reduction only, so no
			 * compute may take it as an index variable (te.c) */
			bool reduction;
		} var;
		struct {
			ts_expr *a, *b;
		} bin;
		struct {
			ts_expr *a;
		} un;
		struct {
			ts_expr *cond, *t, *f;
		} select;
		struct {
			ir_intrinsic op;
			int nargs;
			ts_expr *args[2];
		} call;
		struct {
			ts_tensor *tensor;
			int n;
			ts_expr **idx;
		} read;
		struct {
			ts_buffer *buf;
			ts_expr *index; /* int32/int64 scalar, or a vector */
		} load;
		struct {
			ts_expr *base;
			int64_t stride;
			int lanes;
		} ramp;
		struct {
			ts_expr *value;
			int lanes;
		} bcast;
		struct {
			ts_reduce_op op;
			ts_expr *source;
			ts_expr *init; /* NULL: the op's identity */
			int naxes;
			ts_iter **axes;
		} reduce;
	} u;
};

/* ---- iteration axes, tensors and buffers -------------------------------- */

typedef enum ts_iter_kind { TS_ITER_DATA, TS_ITER_REDUCE } ts_iter_kind;

/* An axis of a compute: its variable ranges over [min, min + extent).  An
 * extent given by a size variable (te.h ts_size_var) is that variable's
 * upper bound here, and extent_var is the variable: the axis really ranges
 * over [min, min + extent_var), extent_var <= extent, fixed at each call. */
struct ts_iter {
	ts_expr *var;
	int64_t min, extent;
	ts_iter_kind kind;
	ts_expr *extent_var; /* NULL: the extent is the constant */
};

typedef enum ts_op_kind { TS_OP_PLACEHOLDER, TS_OP_COMPUTE } ts_op_kind;

/* A tensor and the operation that produces it.  Shapes are constants, or
 * size variables: then shape[d] is the variable's upper bound (what
 * allocation and every static check use) and dim_var[d] the variable. */
struct ts_tensor {
	const char *name;
	ts_dtype dtype;
	int ndim;
	int64_t shape[TS_MAX_DIMS];
	ts_expr *dim_var[TS_MAX_DIMS]; /* NULL: dimension d is shape[d] */
	ts_op_kind op;
	int id;
	/* TS_OP_COMPUTE only: */
	ts_iter **axis;        /* ndim data-parallel axes, one per dimension */
	ts_expr *body;         /* value of element (axis[0].var, ...) */
	int nreduce;           /* reduction axes of a top-level REDUCE body */
	ts_iter **reduce_axis;
	int ninputs;           /* tensors read by body, each once, in order */
	ts_tensor **inputs;
	ts_ctx *ctx;           /* the context whose arena holds the tensor */
};

typedef enum ts_scope { TS_SCOPE_GLOBAL, TS_SCOPE_SHARED, TS_SCOPE_LOCAL } ts_scope;
const char *ts_scope_name(ts_scope s);

/* A flat buffer: `size` elements, addressed with one index.  shape/strides
 * record the n-d layout it was flattened from (row-major, in elements). */
struct ts_buffer {
	const char *name;
	ts_dtype dtype;
	ts_scope scope;
	int ndim;
	int64_t shape[TS_MAX_DIMS];
	int64_t strides[TS_MAX_DIMS];
	int64_t size;
	ts_expr *data; /* a handle variable naming the buffer's storage */
	int id;
	/* a parameter whose extent d is a size variable: that variable
	 * (shape[d] is its bound; strides follow the run-time extents) */
	ts_expr *dim_var[TS_MAX_DIMS];
	ts_ctx *ctx; /* the context whose arena holds the buffer */
	/* a stage's buffer given ts_double_buffer: the double_buffer pass
	 * makes its twin, and the cuda target may fill either with
	 * asynchronous copies (cp.async), waited for at each barrier */
	bool double_buffer;
};

/* ---- statements -------------------------------------------------------- */

#define IR_STMT_KINDS(X)                                                       \
	X(FOR)      /* u.for_ */                                               \
	X(STORE)    /* u.store: flat buffer element(s) */                      \
	X(PROVIDE)  /* u.provide: tensor element, before flattening */         \
	X(REALIZE)  /* u.realize: a tensor's region lives in body */           \
	X(ALLOCATE) /* u.alloc: a buffer lives in body */                      \
	X(IF)       /* u.if_ */                                                \
	X(SEQ)      /* u.seq */                                                \
	X(LET)      /* u.let: var bound to value in body */                    \
	X(EVALUATE) /* u.eval */                                               \
	X(BARRIER)  /* no payload: all threads of a block meet */              \
	X(PREFETCH) /* u.prefetch: a hint to bring an element into cache */

typedef enum ir_stmt_kind {
#define X(k) IR_S_##k,
	IR_STMT_KINDS(X)
#undef X
	IR_STMT_KIND_COUNT
} ir_stmt_kind;

typedef enum ts_for_kind {
	TS_FOR_SERIAL,
	TS_FOR_PARALLEL,
	TS_FOR_VECTORIZED,
	TS_FOR_UNROLLED,
	TS_FOR_THREAD, /* bound to u.for_.thread */
	/* the top of a 16x16(x16) nest that the cuda target maps onto a
	 * warp's tensor-core MMA (ts_tensorize); a serial loop elsewhere */
	TS_FOR_TENSORIZED
} ts_for_kind;

typedef enum ts_thread_tag {
	TS_THREAD_NONE,
	TS_BLOCK_X, TS_BLOCK_Y, TS_BLOCK_Z,
	TS_THREAD_X, TS_THREAD_Y, TS_THREAD_Z
} ts_thread_tag;
const char *ts_for_kind_name(ts_for_kind k);
const char *ts_thread_tag_name(ts_thread_tag t); /* "blockIdx.x", ... */

struct ts_stmt {
	ir_stmt_kind kind;
	ts_ctx *ctx; /* the context whose arena holds it */
	/* 1 for a statement with no statement inside (STORE, PROVIDE,
	 * EVALUATE, BARRIER, PREFETCH), else 1 + the deepest child's;
	 * <= TS_MAX_STMT_DEPTH */
	int depth;
	union {
		struct {
			ts_expr *var;
			ts_expr *min, *extent;
			ts_for_kind kind;
			ts_thread_tag thread;
			ts_stmt *body;
		} for_;
		struct {
			ts_buffer *buf;
			ts_expr *index;
			ts_expr *value;
		} store;
		struct {
			ts_tensor *tensor;
			int n;
			ts_expr **idx;
			ts_expr *value;
		} provide;
		struct {
			ts_tensor *tensor;
			int n;
			ts_expr **min;    /* region start per dimension */
			int64_t *extent;  /* region extent per dimension */
			ts_scope scope;
			ts_stmt *body;
		} realize;
		struct {
			ts_buffer *buf;
			ts_stmt *body;
		} alloc;
		struct {
			ts_expr *cond;
			ts_stmt *then_s, *else_s; /* else_s may be NULL */
		} if_;
		struct {
			int n;
			ts_stmt **s;
		} seq;
		struct {
			ts_expr *var, *value;
			ts_stmt *body;
		} let;
		struct {
			ts_expr *value;
		} eval;
		/* the element a READ (before flattening) or scalar LOAD names;
		 * never read, so its index may be computed but is in bounds
		 * (schedule_ops guards it), and evaluators skip it */
		struct {
			ts_expr *value;
		} prefetch;
	} u;
};

/* A lowered function: buffer parameters (one per argument tensor, in the
 * order given to lowering) and a body over flat buffers. */
typedef struct ts_func {
	const char *name;
	int nparams;
	ts_buffer **params;
	ts_tensor **param_tensors; /* the tensor each parameter holds */
	ts_stmt *body;
	ts_ctx *ctx;               /* the context whose arena holds it (NULL: unknown) */
	const char *warnings;      /* what lowering could not honour, one line each
				    * (NULL: nothing); see ts_lower_warnings */
	/* Size variables the body uses (te.h ts_size_var): the last parameter
	 * is then an int64 buffer of nsizes values, size_vars[k] = element k,
	 * which callers fill from the arrays' shapes (ts_module_run does);
	 * the body binds each variable from it first.  0: no such parameter. */
	int nsizes;
	ts_expr **size_vars;
	int64_t *size_max;
} ts_func;

/* ---- names -------------------------------------------------------------- */

const char *ir_expr_kind_name(ir_expr_kind k);
const char *ir_stmt_kind_name(ir_stmt_kind k);
const char *ir_intrinsic_name(ir_intrinsic op);
int ir_intrinsic_arity(ir_intrinsic op);
const char *ts_reduce_op_name(ts_reduce_op op); /* "sum", "max", ... */
bool ir_is_binary(ir_expr_kind k);              /* IR_ADD..IR_OR */
bool ir_is_compare(ir_expr_kind k);             /* IR_EQ..IR_GE */

/* ---- expression constructors ---------------------------------------------
 * Each checks its operands and returns NULL (with ts_last_error set) on a
 * NULL operand or a violated rule.  Binary operands must have equal dtypes,
 * except that an immediate operand takes the other operand's dtype. */

ts_expr *ts_int(ts_ctx *ctx, int64_t v); /* int32 */
ts_expr *ts_const(ts_ctx *ctx, ts_dtype t, int64_t v);
ts_expr *ts_float(ts_ctx *ctx, double v); /* float32 */
ts_expr *ts_fconst(ts_ctx *ctx, ts_dtype t, double v);
/* A constant of any dtype from a double (integer dtypes truncate). */
ts_expr *ts_make_const(ts_ctx *ctx, ts_dtype t, double v);
ts_expr *ts_var(ts_ctx *ctx, const char *name); /* int32 */
ts_expr *ts_var_typed(ts_ctx *ctx, const char *name, ts_dtype t);

ts_expr *ts_binary(ts_ctx *ctx, ir_expr_kind k, ts_expr *a, ts_expr *b);
ts_expr *ts_add(ts_ctx *ctx, ts_expr *a, ts_expr *b);
ts_expr *ts_sub(ts_ctx *ctx, ts_expr *a, ts_expr *b);
ts_expr *ts_mul(ts_ctx *ctx, ts_expr *a, ts_expr *b);
ts_expr *ts_div(ts_ctx *ctx, ts_expr *a, ts_expr *b); /* float DIV, int FLOORDIV */
ts_expr *ts_truncdiv(ts_ctx *ctx, ts_expr *a, ts_expr *b);
ts_expr *ts_truncmod(ts_ctx *ctx, ts_expr *a, ts_expr *b);
ts_expr *ts_floordiv(ts_ctx *ctx, ts_expr *a, ts_expr *b);
ts_expr *ts_floormod(ts_ctx *ctx, ts_expr *a, ts_expr *b);
ts_expr *ts_min(ts_ctx *ctx, ts_expr *a, ts_expr *b);
ts_expr *ts_max(ts_ctx *ctx, ts_expr *a, ts_expr *b);
ts_expr *ts_eq(ts_ctx *ctx, ts_expr *a, ts_expr *b);
ts_expr *ts_ne(ts_ctx *ctx, ts_expr *a, ts_expr *b);
ts_expr *ts_lt(ts_ctx *ctx, ts_expr *a, ts_expr *b);
ts_expr *ts_le(ts_ctx *ctx, ts_expr *a, ts_expr *b);
ts_expr *ts_gt(ts_ctx *ctx, ts_expr *a, ts_expr *b);
ts_expr *ts_ge(ts_ctx *ctx, ts_expr *a, ts_expr *b);
ts_expr *ts_and(ts_ctx *ctx, ts_expr *a, ts_expr *b);
ts_expr *ts_or(ts_ctx *ctx, ts_expr *a, ts_expr *b);
ts_expr *ts_not(ts_ctx *ctx, ts_expr *a);
ts_expr *ts_select(ts_ctx *ctx, ts_expr *cond, ts_expr *t, ts_expr *f);
ts_expr *ts_cast(ts_ctx *ctx, ts_dtype t, ts_expr *a);
ts_expr *ts_call(ts_ctx *ctx, ir_intrinsic op, int nargs, ts_expr **args);
ts_expr *ts_exp(ts_ctx *ctx, ts_expr *a);
ts_expr *ts_log(ts_ctx *ctx, ts_expr *a);
ts_expr *ts_sqrt(ts_ctx *ctx, ts_expr *a);
ts_expr *ts_tanh(ts_ctx *ctx, ts_expr *a);
ts_expr *ts_exp2(ts_ctx *ctx, ts_expr *a);
ts_expr *ts_fabs(ts_ctx *ctx, ts_expr *a);
ts_expr *ts_pow(ts_ctx *ctx, ts_expr *a, ts_expr *b);
ts_expr *ts_erf(ts_ctx *ctx, ts_expr *a);
ts_expr *ts_sigmoid(ts_ctx *ctx, ts_expr *a);
/* a (float32) rounded to TF32, the tensor cores' 19-bit float: its low 13
 * mantissa bits rounded off to nearest, ties away from zero (PTX
 * cvt.rna.tf32.f32), still a float32; infinities unchanged, NaNs stay NaN. */
ts_expr *ts_round_tf32(ts_ctx *ctx, ts_expr *a);
/* Element of a tensor; indices are integer scalars, one per dimension. */
ts_expr *ts_read(ts_ctx *ctx, ts_tensor *t, int n, ts_expr *const *idx);
#define TS_NARGS(...) ((int)(sizeof((ts_expr *[]){__VA_ARGS__}) / sizeof(ts_expr *)))
#define TS_READ(ctx, t, ...) ts_read((ctx), (t), TS_NARGS(__VA_ARGS__), (ts_expr *[]){__VA_ARGS__})
ts_expr *ts_load(ts_ctx *ctx, ts_buffer *buf, ts_expr *index);
ts_expr *ts_ramp(ts_ctx *ctx, ts_expr *base, int64_t stride, int lanes);
/* Whether ts_ramp accepts base, stride and lanes: the step to the last
 * lane fits int64 and, with a constant base, that lane's value fits base's
 * dtype (false for a NULL base or fewer than one lane). */
bool ir_ramp_fits(const ts_expr *base, int64_t stride, int lanes);
ts_expr *ts_broadcast(ts_ctx *ctx, ts_expr *value, int lanes);
/* A reduction of `source` over reduction axes (init NULL: identity). */
ts_expr *ts_reduce(ts_ctx *ctx, ts_reduce_op op, ts_expr *source, int naxes,
		   ts_iter *const *axes, ts_expr *init);

/* ---- iteration axes and buffers ------------------------------------------ */

ts_iter *ir_iter_new(ts_ctx *ctx, const char *name, int64_t min, int64_t extent,
		     ts_iter_kind kind);
/* A buffer with a row-major layout of `shape`; scope and dtype as given. */
ts_buffer *ir_buffer_new(ts_ctx *ctx, const char *name, ts_dtype t, int ndim,
			 const int64_t *shape, ts_scope scope);

/* ---- statement constructors (the loop IR) -------------------------------- */

ts_stmt *ir_for(ts_ctx *ctx, ts_expr *var, ts_expr *min, ts_expr *extent,
		ts_for_kind kind, ts_thread_tag thread, ts_stmt *body);
ts_stmt *ir_store(ts_ctx *ctx, ts_buffer *buf, ts_expr *index, ts_expr *value);
ts_stmt *ir_provide(ts_ctx *ctx, ts_tensor *t, int n, ts_expr *const *idx, ts_expr *value);
ts_stmt *ir_realize(ts_ctx *ctx, ts_tensor *t, int n, ts_expr *const *min,
		    const int64_t *extent, ts_scope scope, ts_stmt *body);
ts_stmt *ir_allocate(ts_ctx *ctx, ts_buffer *buf, ts_stmt *body);
ts_stmt *ir_if(ts_ctx *ctx, ts_expr *cond, ts_stmt *then_s, ts_stmt *else_s);
/* A sequence; NULL entries are dropped, one statement is returned as is.
 * A list with no statement at all (n = 0, or only NULL entries, which a
 * failed constructor upstream leaves) is an error: NULL with a message, so
 * that a failure is never mistaken for "nothing to do".  The empty
 * statement is EVALUATE(0) (arith.h). */
ts_stmt *ir_seq(ts_ctx *ctx, int n, ts_stmt *const *s);
ts_stmt *ir_seq2(ts_ctx *ctx, ts_stmt *a, ts_stmt *b);
ts_stmt *ir_let(ts_ctx *ctx, ts_expr *var, ts_expr *value, ts_stmt *body);
ts_stmt *ir_evaluate(ts_ctx *ctx, ts_expr *value);
ts_stmt *ir_barrier(ts_ctx *ctx);
/* A prefetch of the element `value` names: a scalar READ of a tensor or a
 * scalar LOAD of a buffer (anything else is refused).  It has no effect on
 * results; the LLVM backend emits llvm.prefetch (read, into all cache
 * levels), the C emitter __builtin_prefetch, CUDA nothing. */
ts_stmt *ir_prefetch(ts_ctx *ctx, ts_expr *value);

/* ---- traversal and rewriting --------------------------------------------- */

/* Pre-order visit of every expression node under e (REDUCE visits source,
 * init; READ/LOAD visit indices).  Return false from fn to skip children. */
typedef bool (*ir_expr_visit_fn)(ts_expr *e, void *data);
void ir_expr_visit(ts_expr *e, ir_expr_visit_fn fn, void *data);
/* Visits statements pre-order, and with efn every expression they hold. */
typedef bool (*ir_stmt_visit_fn)(ts_stmt *s, void *data);
void ir_stmt_visit(ts_stmt *s, ir_stmt_visit_fn sfn, ir_expr_visit_fn efn, void *data);

/* Rebuilds e with fn applied to each direct child; returns e itself when
 * every child comes back unchanged.  NULL from fn propagates as NULL. */
typedef ts_expr *(*ir_expr_fn)(ts_ctx *ctx, ts_expr *e, void *data);
ts_expr *ir_expr_map_children(ts_ctx *ctx, ts_expr *e, ir_expr_fn fn, void *data);
/* Rebuilds s with sfn applied to each child statement and efn to each
 * expression it holds directly (either may be NULL: identity). */
typedef ts_stmt *(*ir_stmt_fn)(ts_ctx *ctx, ts_stmt *s, void *data);
ts_stmt *ir_stmt_map_children(ts_ctx *ctx, ts_stmt *s, ir_stmt_fn sfn,
			      ir_expr_fn efn, void *data);

/* Replaces variables (by pointer) with values; returns e when none occurs. */
ts_expr *ir_substitute(ts_ctx *ctx, ts_expr *e, int n, ts_expr *const *vars,
		       ts_expr *const *values);
ts_stmt *ir_stmt_substitute(ts_ctx *ctx, ts_stmt *s, int n, ts_expr *const *vars,
			    ts_expr *const *values);
/* ir_substitute for int64 indices (widen.c): vars are int32 and values
 * int64.  Integer arithmetic over a replaced variable is rebuilt in int64;
 * inside READ indices it stays int64 (no wrap), elsewhere an int32
 * + - * / % is cast back to int32 (it wraps as in the reference evaluator)
 * while a lone variable keeps its exact value.  READ indices come back
 * int64.  Its arguments are checked as ir_substitute's are. */
ts_expr *ir_substitute_wide(ts_ctx *ctx, ts_expr *e, int n, ts_expr *const *vars,
			    ts_expr *const *values);
/* e as an integer of dtype t: a constant is rebuilt with its value, any
 * other expression is cast.  NULL (recorded in ctx) for a NULL e. */
ts_expr *ir_index_cast(ts_ctx *ctx, ts_expr *e, ts_dtype t);
bool ir_expr_uses_var(ts_expr *e, const ts_expr *var);
/* Whether any node under e (pre-order, as ir_expr_visit) satisfies pred;
 * the walk stops at the first. */
typedef bool (*ir_expr_pred)(const ts_expr *e, const void *data);
bool ir_expr_any(ts_expr *e, ir_expr_pred pred, const void *data);
/* Whether e reads tensor t (a READ of it), or loads from buffer b. */
bool ir_expr_reads(ts_expr *e, const ts_tensor *t);
bool ir_expr_loads(ts_expr *e, const ts_buffer *b);
bool ir_expr_equal(const ts_expr *a, const ts_expr *b); /* structural */
bool ir_is_const_int(const ts_expr *e, int64_t *out);
/* Whether e is the float constant -0.0, the exact identity of a float sum
 * (x + -0.0 is x for every x, -0 and NaN included; x + 0.0 is not). */
bool ir_is_neg_zero(const ts_expr *e);
/* Whether e (NULL passes) lives in ctx; if not, records "`what`: `which`
 * belongs to another context" there.  Expressions of one computation come
 * from one context: another's are freed with it. */
bool ir_expr_owned(ts_ctx *ctx, const char *what, const char *which, const ts_expr *e);
/* Whether e is a multiple of n (> 0) for every value of its variables,
 * seen from its form: constants, sums and differences of multiples, and
 * products with a multiple (NULL is 0).  false when it cannot tell. */
bool ir_multiple_of(const ts_expr *e, int64_t n);

#ifdef __cplusplus
}
#endif

#endif
