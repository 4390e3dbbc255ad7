/*
 * c_emit.c - plain C and CUDA C from the loop IR (contract in c_emit.h).
 *
 * One walker emits both dialects; everything that differs between them
 * (qualifiers, restrict spelling, type and math names, thread indices,
 * shared memory, barriers, loop pragmas) is a field of the `dialect` table,
 * so adding a dialect is adding a table.
 *
 * Conventions of the generated text:
 *  - Every variable and buffer gets a unique C name at its definition
 *    (made an identifier by cg_c_ident, which also renames keywords and
 *    library symbols, then suffixed `_1`, `_2`, ... on collision), because
 *    IR names need not be unique and variables are identified by pointer.
 *    The function's name goes through cg_c_ident too, so it matches the
 *    LLVM symbol and the exported header.
 *  - Parentheses follow C precedence; comparisons and && under || are always
 *    parenthesized so that -Wparentheses stays quiet.
 *  - Integer floordiv/floormod and min/max go through small helpers emitted
 *    before the function, only for the dtypes used.
 *  - Integer division follows ir.h, which C does not (x / 0 and INT_MIN / -1
 *    trap): a divisor that is not a constant other than 0 and -1 goes through
 *    a guarded helper (ts_truncdiv_z_i32, ...); a constant one keeps the plain
 *    operator.  Float to integer casts go through ts_cast_f32_i32 and the
 *    like, which map NaN to 0 and saturate, where C's cast is undefined.
 *  - Signed 32/64-bit + - * wrap (ir.h) where C's overflow is undefined:
 *    each goes through a _wrap helper unless the ranges of the variables
 *    in scope (loops, lets, size variables: set_range) keep it inside its
 *    dtype, so that loop and index arithmetic keeps C's operators.
 *  - Vector expressions are evaluated lane by lane: `lane` names the lane
 *    loop's variable, or `comp` (>= 0) selects a float4 component.
 */
#include "c_emit.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "arith.h"
#include "cuda_mma.h"
#include "eval.h"
#include "ident.h"
#include "ranges.h"
#include "sbuf.h"

enum { P_OR = 1, P_AND, P_EQ, P_REL, P_ADD, P_MUL, P_UNARY, P_ATOM };

/* Scalar types the dialects know, indexed by type_index(). */
enum { T_I8, T_I16, T_I32, T_I64, T_U8, T_U16, T_U32, T_U64, T_F32, T_F64, T_BOOL, T_F16, T_BF16,
       T_COUNT };
static const char *const type_suffix[T_COUNT] = {
	"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64", "bool", "f16", "bf16",
};

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
static const char *const helper_name[H_COUNT] = {
	"floordiv", "floormod", "min", "max", "sigmoid", "truncdiv_z", "truncmod_z",
	"floordiv_z", "floormod_z", "cast_f32", "cast_f64", "add_wrap", "sub_wrap", "mul_wrap",
	"fsub",
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

#define MATH_NAMES(f)                                                          \
	{ [IR_INTRIN_EXP] = "exp" f, [IR_INTRIN_LOG] = "log" f,                \
	  [IR_INTRIN_SQRT] = "sqrt" f, [IR_INTRIN_TANH] = "tanh" f,            \
	  [IR_INTRIN_EXP2] = "exp2" f, [IR_INTRIN_FABS] = "fabs" f,            \
	  [IR_INTRIN_POW] = "pow" f, [IR_INTRIN_ERF] = "erf" f,                \
	  [IR_INTRIN_FLOOR] = "floor" f, [IR_INTRIN_CEIL] = "ceil" f }

static const dialect dialect_c = {
	.name = "c",
	.file_head = "#include <math.h>\n#include <stdbool.h>\n#include <stdint.h>\n"
		     "#include <stdlib.h>\n\n"
		     "/* OpenMP pragmas take effect only when compiled with OpenMP. */\n"
		     "#ifdef _OPENMP\n#define TS_OMP(x) _Pragma(#x)\n#else\n"
		     "#define TS_OMP(x)\n#endif\n"
		     /* a buffer stored further out than it is computed is
		      * written in the first iteration that needs it (if (k ==
		      * 0)), which GCC cannot see comes first */
		     "/* Buffers kept across loop iterations are written under a condition\n"
		     " * GCC cannot see holds first (if (k == 0)): not uninitialized. */\n"
		     "#if defined(__GNUC__) && !defined(__clang__)\n"
		     "#pragma GCC diagnostic ignored \"-Wmaybe-uninitialized\"\n#endif\n"
		     /* a comparison of bools may have a constant operand
		      * (b <= true is legal IR), which -Wall calls always true */
		     "/* Bools compared with a constant (b <= true) are meant. */\n"
		     "#if defined(__clang__)\n"
		     "#pragma clang diagnostic ignored \"-Wtautological-constant-compare\"\n"
		     "#elif defined(__GNUC__)\n"
		     "#pragma GCC diagnostic ignored \"-Wbool-compare\"\n#endif\n",
	.func_qual = "",
	.restrict_kw = "restrict",
	.helper_qual = "static inline",
	.type = {"int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t",
		 "uint32_t", "uint64_t", "float", "double", "bool", "uint16_t", "uint16_t"},
	.math32 = MATH_NAMES("f"),
	.math64 = MATH_NAMES(""),
	.inf32 = "INFINITY", .nan32 = "NAN",
	.inf64 = "((double)INFINITY)", .nan64 = "((double)NAN)",
	.align_fmt = "_Alignas(%d) ",
	.local_align = 64,
	.parallel_pragma = "TS_OMP(omp parallel for)",
	.simd_pragma = "TS_OMP(omp simd)",
	/* GCC's and Clang's: read, kept in every cache level */
	.prefetch = "__builtin_prefetch",
	.packed_wrapper = true,
	.max_stack_bytes = 64 * 1024,
};

static const dialect dialect_cuda = {
	.name = "cuda",
	.file_head = "",
	.func_qual = "extern \"C\" __global__ ",
	.launch_bounds = true,
	.restrict_kw = "__restrict__",
	.helper_qual = "static __device__ __forceinline__",
	.type = {"signed char", "short", "int", "long long", "unsigned char",
		 "unsigned short", "unsigned int", "unsigned long long", "float", "double",
		 "bool", "unsigned short", "unsigned short"},
	.math32 = MATH_NAMES("f"),
	.math64 = MATH_NAMES(""),
	.inf32 = "__int_as_float(0x7f800000)", .nan32 = "__int_as_float(0x7fffffff)",
	.inf64 = "__longlong_as_double(0x7ff0000000000000LL)",
	.nan64 = "__longlong_as_double(0x7fffffffffffffffLL)",
	.bind_threads = true,
	.shared_qual = "__shared__ ",
	.align_fmt = "__align__(%d) ",
	.barrier = "__syncthreads();",
	.simd_pragma = "#pragma unroll",
	.unroll_pragma = "#pragma unroll",
	.float4 = true,
	.max_stack_bytes = INT64_MAX,
};

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

static void stmt(emitter *em, const ts_stmt *s);
static void expr(emitter *em, const ts_expr *e, int min_prec);

/* ---- errors and names --------------------------------------------------- */

__attribute__((format(printf, 3, 4)))
static void fail(emitter *em, ts_status st, const char *fmt, ...)
{
	if (em->failed)
		return;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ts_error(em->ctx, st, "%s: %s: %s", em->d->name, em->fname, msg);
	em->failed = true;
}

static bool name_taken(const emitter *em, const char *n)
{
	if (cg_ident_reserved(n))
		return true;
	if (strncmp(n, "ts_", 3) == 0 || strncmp(n, "__", 2) == 0)
		return true;
	for (int i = 0; i < em->nnames; i++)
		if (strcmp(em->names[i].cname, n) == 0)
			return true;
	return em->fname && strncmp(n, em->fname, strlen(em->fname)) == 0 &&
	       (n[strlen(em->fname)] == '\0' || strcmp(n + strlen(em->fname), "_packed") == 0);
}

/* A C identifier from an IR name (ident.h): never a keyword or a symbol
 * of the headers the code includes, never text that ends a comment. */
static const char *sanitize(ts_ctx *ctx, const char *s)
{
	return cg_c_ident(ctx, s);
}

/* Gives key a fresh unique C name based on `base`; later lookups of key see
 * this name (a rebinding of the same variable gets a new one). */
static const char *define(emitter *em, const void *key, const char *base)
{
	if (em->failed)
		return NULL;
	const char *s = sanitize(em->ctx, base && base[0] ? base : "v");
	const char *n = s;
	for (int k = 1; n && name_taken(em, n); k++)
		n = ts_sprintf(em->ctx, "%s_%d", s, k);
	if (em->nnames == em->cap) {
		int cap = em->cap ? em->cap * 2 : 32;
		name_entry *g = ts_alloc_array(em->ctx, (size_t)cap, sizeof(*g));
		if (g && em->nnames)
			memcpy(g, em->names, (size_t)em->nnames * sizeof(*g));
		em->names = g;
		em->cap = g ? cap : 0;
	}
	if (!n || !em->names || !cg_ranges_push(&em->ranges, key, (ir_interval){IR_NEG_INF, IR_POS_INF})) {
		em->failed = true;
		return NULL;
	}
	em->names[em->nnames++] = (name_entry){.key = key, .cname = n};
	return n;
}

static const char *lookup(const emitter *em, const void *key)
{
	for (int i = em->nnames - 1; i >= 0; i--)
		if (em->names[i].key == key)
			return em->names[i].cname;
	return NULL;
}

/* ---- types -------------------------------------------------------------- */

static int type_index(ts_dtype t)
{
	int b = t.bits == 8 ? 0 : t.bits == 16 ? 1 : t.bits == 32 ? 2 : t.bits == 64 ? 3 : -1;
	switch ((ts_type_code)t.code) {
	case TS_TYPE_INT: return b < 0 ? -1 : T_I8 + b;
	case TS_TYPE_UINT: return b < 0 ? -1 : T_U8 + b;
	case TS_TYPE_FLOAT: return t.bits == 32 ? T_F32 : t.bits == 64 ? T_F64 : t.bits == 16 ? T_F16 : -1;
	case TS_TYPE_BOOL: return T_BOOL;
	case TS_TYPE_BFLOAT: return t.bits == 16 ? T_BF16 : -1;
	case TS_TYPE_HANDLE:
		break;
	}
	return -1;
}

/* The dialect's name of t's element type, or NULL after reporting. */
static const char *ctype(emitter *em, ts_dtype t)
{
	int i = type_index(t);
	if (i < 0) {
		char b[24];
		fail(em, TS_ERR_UNSUPPORTED, "dtype %s is not supported",
		     ts_dtype_str(ts_dtype_element(t), b));
		return "void";
	}
	return em->d->type[i];
}

static bool is_f16x(ts_dtype t)
{
	return (t.code == TS_TYPE_FLOAT || t.code == TS_TYPE_BFLOAT) && t.bits == 16;
}

/* The C type of a value of dtype t: float for a 16-bit float (stored as
 * bits, see above), else the storage type. */
static const char *vtype(emitter *em, ts_dtype t)
{
	return is_f16x(t) ? em->d->type[T_F32] : ctype(em, t);
}

/* The name of 16-bit float helper `which` for t, marked as used. */
static const char *conv16(emitter *em, ts_dtype t, int which)
{
	static const char *const names[2][C16_COUNT] = {
		{"ts_f16_to_f32", "ts_f32_to_f16", "ts_rh_f16"},
		{"ts_bf16_to_f32", "ts_f32_to_bf16", "ts_rh_bf16"},
	};
	bool bf = t.code == TS_TYPE_BFLOAT;
	em->conv16[bf][which] = true;
	if (which == C16_ROUND) /* made of the other two */
		em->conv16[bf][C16_FROM] = em->conv16[bf][C16_TO] = true;
	return names[bf][which];
}

static const char *helper(emitter *em, int h, ts_dtype t)
{
	int i = type_index(t);
	if (i < 0) {
		ctype(em, t);
		return "ts_invalid";
	}
	em->helpers[h][i] = true;
	return ts_sprintf(em->ctx, "ts_%s_%s", helper_name[h], type_suffix[i]);
}

/* ---- variable ranges ---------------------------------------------------- */

/* Records that the variable key, just defined, lies in [lo, hi]. */
static void set_range(emitter *em, const void *key, int64_t lo, int64_t hi)
{
	cg_ranges_set(&em->ranges, key, (ir_interval){lo, hi});
}

/* The interval of the integer e over the ranges of the variables in scope. */
static ir_interval bound(const emitter *em, const ts_expr *e)
{
	return cg_ranges_bound(&em->ranges, e);
}

static bool bounded(ir_interval iv)
{
	return cg_bounded(iv);
}

/* Gives v, just defined, the range [min, min + extent - 1] of a loop over
 * the bounds of min and extent (none where they are unbounded). */
static void loop_range(emitter *em, const ts_expr *v, ir_interval min, int64_t ext_max)
{
	cg_ranges_set(&em->ranges, v, cg_loop_range(min, ext_max));
}

/* ---- expressions -------------------------------------------------------- */

static bool is_signed_int(ts_dtype t)
{
	return t.code == TS_TYPE_INT;
}

/* Whether a division's divisor is a constant other than 0 and -1 (in every
 * lane), the case C's operators get right: index arithmetic by split
 * factors keeps them, and its text does not change. */
static bool plain_divisor(const ts_expr *e)
{
	const ts_expr *b = e->u.bin.b;
	if (b->kind == IR_BROADCAST)
		b = b->u.bcast.value;
	return b->kind == IR_INT_IMM && b->u.int_imm != 0 && b->u.int_imm != -1;
}

/* A float to integer cast, which goes through a saturating helper. */
static bool float_to_int(const ts_expr *e)
{
	return e->kind == IR_CAST && ts_dtype_is_float(e->u.un.a->dtype) &&
	       ts_dtype_is_int(e->dtype);
}

static int vec_load_slot(const emitter *em, const ts_expr *e)
{
	for (int i = 0; i < em->nvec; i++)
		if (em->vec_loads[i] == e)
			return i;
	return -1;
}

/* Whether e is a signed + - * of 32 or 64 bits that the emitter writes as
 * a _wrap helper call: wherever the ranges of the variables in scope do
 * not keep it inside its dtype, in a stored value as in an index.  C's
 * operator would overflow there, which is undefined, where ir.h wraps:
 * A[i]*B[i], and indices in bounds as ir.h reads them, such as
 * (i*2^32)*(i*2^32) + i in int64 or i*2^30 + (i - i*2^30) in int32.
 * Arithmetic of loop variables (i.outer*8 + l) keeps the operator.
 * Narrower types compute in int, where they cannot overflow, and convert
 * back modulo 2^n. */
static bool wrapping(const emitter *em, const ts_expr *e)
{
	ts_dtype t = ts_dtype_element(e->dtype);
	if ((e->kind != IR_ADD && e->kind != IR_SUB && e->kind != IR_MUL) || !is_signed_int(t) ||
	    t.bits < 32)
		return false;
	return !bounded(bound(em, e));
}

/* Whether e is printed inside a rounding to its 16-bit float dtype: an
 * arithmetic result or a cast to float16 or bfloat16 (calls already print
 * as calls). */
static bool rounds16(const ts_expr *e)
{
	bool arith = e->kind == IR_ADD || e->kind == IR_SUB || e->kind == IR_MUL || e->kind == IR_DIV;
	return is_f16x(ts_dtype_element(e->dtype)) && (arith || e->kind == IR_CAST);
}

/* Whether e is + - * of 8- or 16-bit integers: C computes those in int
 * (where uint16 * uint16 may even overflow), so the emitter computes them
 * in uint32 and converts back, wrapping as ir.h says before the value is
 * compared or cast, not only when it is stored. */
static bool narrow_arith(const ts_expr *e)
{
	ts_dtype t = ts_dtype_element(e->dtype);
	return (e->kind == IR_ADD || e->kind == IR_SUB || e->kind == IR_MUL) &&
	       (t.code == TS_TYPE_INT || t.code == TS_TYPE_UINT) && t.bits < 32;
}

/* A cast to bool, printed as x != 0 (what ir.h says it is; `(bool)(a*b)`
 * also makes cc warn). */
static bool to_bool(const ts_expr *e)
{
	return e->kind == IR_CAST && ts_dtype_is_bool(e->dtype) && !ts_dtype_is_bool(e->u.un.a->dtype);
}

/* The precedence of e as this emitter prints it. */
static int prec(const emitter *em, const ts_expr *e)
{
	if (wrapping(em, e) || rounds16(e) || narrow_arith(e) || to_bool(e))
		return P_ATOM;
	switch (e->kind) {
	case IR_INT_IMM: return e->u.int_imm < 0 && ts_dtype_eq(e->dtype, ts_int32) ? P_UNARY : P_ATOM;
	case IR_FLOAT_IMM: return signbit(e->u.float_imm) ? P_UNARY : P_ATOM;
	case IR_ADD: case IR_SUB: return P_ADD;
	case IR_MUL: case IR_DIV: return P_MUL;
	case IR_TRUNCDIV: case IR_TRUNCMOD: return plain_divisor(e) ? P_MUL : P_ATOM;
	case IR_FLOORDIV: case IR_FLOORMOD:
		return is_signed_int(e->dtype) || !plain_divisor(e) ? P_ATOM : P_MUL;
	case IR_EQ: case IR_NE: return P_EQ;
	case IR_LT: case IR_LE: case IR_GT: case IR_GE: return P_REL;
	case IR_AND: return P_AND;
	case IR_OR: return P_OR;
	case IR_NOT: return P_UNARY;
	case IR_CAST: return float_to_int(e) ? P_ATOM : P_UNARY;
	case IR_RAMP:
		if (em->comp == 0 || e->u.ramp.stride == 0)
			return prec(em, e->u.ramp.base);
		return P_ADD;
	case IR_BROADCAST: return prec(em, e->u.bcast.value);
	case IR_VAR: case IR_MIN: case IR_MAX: case IR_SELECT: case IR_CALL:
	case IR_READ: case IR_LOAD: case IR_REDUCE: case IR_EXPR_KIND_COUNT:
		break;
	}
	return P_ATOM;
}

static void put(emitter *em, const char *s)
{
	ts_sb_puts(&em->out, s);
}

static void int_imm(emitter *em, const ts_expr *e)
{
	int64_t v = e->u.int_imm;
	if (e->dtype.code == TS_TYPE_BOOL) {
		put(em, v ? "true" : "false");
	} else if (ts_dtype_eq(e->dtype, ts_int32)) {
		if (v == INT32_MIN)
			put(em, "(-2147483647 - 1)");
		else
			ts_sb_printf(&em->out, "%lld", (long long)v);
	} else if (e->dtype.code == TS_TYPE_UINT) {
		ts_sb_printf(&em->out, "((%s)%lluULL)", ctype(em, e->dtype), (unsigned long long)v);
	} else if (v == INT64_MIN) {
		ts_sb_printf(&em->out, "((%s)(-9223372036854775807LL - 1))", ctype(em, e->dtype));
	} else {
		ts_sb_printf(&em->out, "((%s)%lldLL)", ctype(em, e->dtype), (long long)v);
	}
}

static void float_imm(emitter *em, const ts_expr *e)
{
	bool f32 = e->dtype.bits == 32 || is_f16x(e->dtype);
	if (!is_f16x(e->dtype) && e->dtype.bits != 32 && e->dtype.bits != 64) {
		ctype(em, e->dtype);
		return;
	}
	/* the dtype's value, as the evaluators read the constant (ir.h: a
	 * 16-bit float through float32), written as a float: the digits of the
	 * unrounded double would round a second time in the C compiler (or
	 * directly to 16 bits), and one below float's range is a literal it
	 * warns about */
	double v = ir_cast_float_to_float(ts_dtype_element(e->dtype), e->u.float_imm);
	if (isnan(v)) {
		put(em, f32 ? em->d->nan32 : em->d->nan64);
		return;
	}
	/* a double beyond float's range is infinite as a float constant: say
	 * so, rather than a literal the C compiler warns about */
	if (isinf(v) || (f32 && isinf((float)v))) {
		ts_sb_printf(&em->out, "%s%s", v < 0 ? "-" : "", f32 ? em->d->inf32 : em->d->inf64);
		return;
	}
	char num[48];
	snprintf(num, sizeof(num), f32 ? "%.9g" : "%.17g", v);
	if (!strpbrk(num, ".e"))
		strcat(num, ".0");
	ts_sb_printf(&em->out, "%s%s", num, f32 ? "f" : "");
}

static void sub(emitter *em, const ts_expr *e, int min_prec)
{
	expr(em, e, min_prec);
}

static void call2(emitter *em, const char *fn, const ts_expr *a, const ts_expr *b)
{
	ts_sb_printf(&em->out, "%s(", fn);
	sub(em, a, 0);
	if (b) {
		put(em, ", ");
		sub(em, b, 0);
	}
	put(em, ")");
}

static const char *infix_op(ir_expr_kind k)
{
	switch (k) {
	case IR_ADD: return " + ";
	case IR_SUB: return " - ";
	case IR_MUL: return "*";
	case IR_DIV: case IR_TRUNCDIV: case IR_FLOORDIV: return "/";
	case IR_TRUNCMOD: case IR_FLOORMOD: return "%";
	case IR_EQ: return " == ";
	case IR_NE: return " != ";
	case IR_LT: return " < ";
	case IR_LE: return " <= ";
	case IR_GT: return " > ";
	case IR_GE: return " >= ";
	case IR_AND: return " && ";
	case IR_OR: return " || ";
	default: return NULL;
	}
}

/* Whether e is +0.0 - x in float32 or float64.  GCC 12 folds the text
 * 0.0 - (double)i into -(double)i, even at -O0, which is -0.0 where i is
 * 0 (IEEE and ir.h say +0.0): such a subtraction is written as a helper
 * call, whose operands the fold cannot see together. */
static bool zero_minus(const ts_expr *e)
{
	const ts_expr *a = e->u.bin.a;
	ts_dtype t = ts_dtype_element(e->dtype);
	if (a->kind == IR_BROADCAST)
		a = a->u.bcast.value;
	if (e->kind != IR_SUB || t.code != TS_TYPE_FLOAT || (t.bits != 32 && t.bits != 64) ||
	    a->kind != IR_FLOAT_IMM)
		return false;
	/* the constant as written (float_imm): 4.94e-324 in float32 is 0.0f */
	double c = ir_cast_float_to_float(t, a->u.float_imm);
	return c == 0 && !signbit(c);
}

static void binary(emitter *em, const ts_expr *e)
{
	const ts_expr *a = e->u.bin.a, *b = e->u.bin.b;
	ts_dtype t = ts_dtype_element(a->dtype);
	if (wrapping(em, e)) {
		call2(em, helper(em, H_ADD_WRAP + (int)(e->kind - IR_ADD), t), a, b);
		return;
	}
	if (zero_minus(e)) {
		call2(em, helper(em, H_FSUB, t), a, b);
		return;
	}
	switch (e->kind) {
	case IR_TRUNCDIV: case IR_TRUNCMOD: case IR_FLOORDIV: case IR_FLOORMOD:
		if (!plain_divisor(e)) {
			call2(em, helper(em, H_TRUNCDIV_Z + (int)(e->kind - IR_TRUNCDIV), t), a, b);
			return;
		}
		if (e->kind >= IR_FLOORDIV && is_signed_int(t)) {
			call2(em, helper(em, e->kind == IR_FLOORDIV ? H_FLOORDIV : H_FLOORMOD, t), a, b);
			return;
		}
		break;
	case IR_MIN: case IR_MAX: /* exact on 16-bit values too: no rounding */
		call2(em, helper(em, e->kind == IR_MIN ? H_MIN : H_MAX, is_f16x(t) ? ts_float32 : t), a, b);
		return;
	default:
		break;
	}
	if (narrow_arith(e)) {
		const char *u = em->d->type[T_U32];
		ts_sb_printf(&em->out, "((%s)((%s)", ctype(em, t), u);
		sub(em, a, P_UNARY);
		ts_sb_printf(&em->out, "%s(%s)", infix_op(e->kind), u);
		sub(em, b, P_UNARY);
		put(em, "))");
		return;
	}
	if (rounds16(e)) {
		int op = e->kind == IR_ADD || e->kind == IR_SUB ? P_ADD : P_MUL;
		ts_sb_printf(&em->out, "%s(", conv16(em, t, C16_ROUND));
		sub(em, a, op);
		put(em, infix_op(e->kind));
		sub(em, b, op + 1);
		put(em, ")");
		return;
	}
	int p = prec(em, e), lp = p, rp = p + 1;
	if (ir_is_compare(e->kind))
		lp = rp = P_ADD; /* (a < b) == c reads ambiguously */
	else if (e->kind == IR_OR)
		lp = a->kind == IR_OR ? P_OR : P_EQ, rp = P_EQ;
	sub(em, a, lp);
	put(em, infix_op(e->kind));
	sub(em, b, rp);
}

static void call(emitter *em, const ts_expr *e)
{
	ts_dtype t = ts_dtype_element(e->dtype);
	ir_intrinsic op = e->u.call.op;
	bool h16 = is_f16x(t); /* computed in float, rounded back */
	const char *fn = t.bits == 64 ? em->d->math64[op] : em->d->math32[op];
	if (op == IR_INTRIN_SIGMOID)
		fn = helper(em, H_SIGMOID, h16 ? ts_float32 : t);
	if (op == IR_INTRIN_ROUND_TF32) { /* float32 only (ts_call) */
		em->tf32 = true;
		fn = "ts_round_tf32";
	}
	if (!fn || (t.bits != 32 && t.bits != 64 && !h16)) {
		ctype(em, t);
		return;
	}
	if (h16)
		ts_sb_printf(&em->out, "%s(", conv16(em, t, C16_ROUND));
	call2(em, fn, e->u.call.args[0], e->u.call.nargs > 1 ? e->u.call.args[1] : NULL);
	if (h16)
		put(em, ")");
}

/* Whether C computes the ramp e's lanes, base + lane*stride, without
 * overflow: every lane inside the dtype (bound), and lane*stride inside
 * int, where the lane loop's int32 variable multiplies it. */
static bool ramp_fits(const emitter *em, const ts_expr *e)
{
	int64_t span;
	return bounded(bound(em, e)) &&
	       !__builtin_mul_overflow(e->u.ramp.stride, e->dtype.lanes - 1, &span) &&
	       span >= -INT32_MAX && span <= INT32_MAX;
}

static void ramp_at_lane(emitter *em, const ts_expr *e)
{
	int64_t st = e->u.ramp.stride;
	ts_dtype t = ts_dtype_element(e->dtype);
	/* a signed ramp wraps as ir.h says (i * 2147483647 vectorized): base +
	 * lane*stride in C's int arithmetic would overflow, which is
	 * undefined, so it goes through the _wrap helpers where the ranges in
	 * scope do not rule that out */
	if (!ramp_fits(em, e) && is_signed_int(t) && t.bits >= 32 && st && (em->comp >= 0 || em->lane)) {
		uint64_t k = em->comp >= 0 ? (uint64_t)st * (uint64_t)em->comp : (uint64_t)st;
		ts_expr *kc = ts_const(em->ctx, t, ir_wrap_int(t, (int64_t)k));
		if (!kc) {
			fail(em, ts_last_status(em->ctx), "%s", ts_last_error(em->ctx));
			return;
		}
		bool lane = em->comp < 0 && (st == 1 || st == -1); /* base +- lane */
		ts_sb_printf(&em->out, "%s(", helper(em, lane && st < 0 ? H_SUB_WRAP : H_ADD_WRAP, t));
		sub(em, e->u.ramp.base, 0);
		if (lane) {
			ts_sb_printf(&em->out, ", %s)", em->lane);
			return;
		}
		if (em->comp >= 0)
			put(em, ", ");
		else
			ts_sb_printf(&em->out, ", %s(%s, ", helper(em, H_MUL_WRAP, t), em->lane);
		sub(em, kc, 0);
		put(em, em->comp >= 0 ? ")" : "))");
		return;
	}
	if (em->comp >= 0) {
		int64_t off = st * em->comp;
		sub(em, e->u.ramp.base, off ? P_ADD : 0);
		if (off)
			ts_sb_printf(&em->out, " %c %lld", off < 0 ? '-' : '+',
				     (long long)(off < 0 ? -off : off));
		return;
	}
	if (!em->lane) {
		fail(em, TS_ERR_INTERNAL, "vector expression outside a lane loop");
		return;
	}
	sub(em, e->u.ramp.base, st ? P_ADD : 0);
	if (st == 1)
		ts_sb_printf(&em->out, " + %s", em->lane);
	else if (st == -1)
		ts_sb_printf(&em->out, " - %s", em->lane);
	else if (st)
		ts_sb_printf(&em->out, " %c %s*%lld", st < 0 ? '-' : '+', em->lane,
			     (long long)(st < 0 ? -st : st));
}

static void load(emitter *em, const ts_expr *e)
{
	int slot = vec_load_slot(em, e);
	if (slot >= 0 && em->comp >= 0) {
		ts_sb_printf(&em->out, "%s.%c", em->vec_names[slot], "xyzw"[em->comp]);
		return;
	}
	const char *n = lookup(em, e->u.load.buf);
	if (!n) {
		fail(em, TS_ERR_INVALID, "buffer %s is neither a parameter nor allocated",
		     e->u.load.buf->name);
		return;
	}
	bool h16 = is_f16x(e->u.load.buf->dtype);
	if (h16)
		ts_sb_printf(&em->out, "%s(", conv16(em, e->u.load.buf->dtype, C16_FROM));
	ts_sb_printf(&em->out, "%s[", n);
	sub(em, e->u.load.index, 0);
	put(em, h16 ? "])" : "]");
}

static void var(emitter *em, const ts_expr *e)
{
	const char *n = lookup(em, e);
	if (!n)
		fail(em, TS_ERR_INVALID, "variable %s is used but not defined", e->u.var.name);
	else if (e->dtype.lanes > 1)
		fail(em, TS_ERR_UNSUPPORTED, "vector variable %s", e->u.var.name);
	else
		put(em, n);
}

static void expr_body(emitter *em, const ts_expr *e)
{
	switch (e->kind) {
	case IR_INT_IMM: int_imm(em, e); return;
	case IR_FLOAT_IMM: float_imm(em, e); return;
	case IR_VAR: var(em, e); return;
	case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV: case IR_TRUNCDIV:
	case IR_TRUNCMOD: case IR_FLOORDIV: case IR_FLOORMOD: case IR_MIN: case IR_MAX:
	case IR_EQ: case IR_NE: case IR_LT: case IR_LE: case IR_GT: case IR_GE:
	case IR_AND: case IR_OR:
		binary(em, e);
		return;
	case IR_NOT:
		put(em, "!");
		sub(em, e->u.un.a, P_UNARY);
		return;
	case IR_CAST:
		if (float_to_int(e)) { /* a 16-bit float's value is a float */
			int bits = e->u.un.a->dtype.bits;
			call2(em, helper(em, bits == 64 ? H_CAST_F64 : H_CAST_F32, ts_dtype_element(e->dtype)),
			      e->u.un.a, NULL);
			return;
		}
		if (to_bool(e)) {
			put(em, "(");
			sub(em, e->u.un.a, P_REL);
			put(em, " != 0)");
			return;
		}
		if (rounds16(e)) { /* a cast to a 16-bit float is a rounding */
			ts_sb_printf(&em->out, "%s((float)", conv16(em, ts_dtype_element(e->dtype), C16_ROUND));
			sub(em, e->u.un.a, P_UNARY);
			put(em, ")");
			return;
		}
		ts_sb_printf(&em->out, "(%s)", vtype(em, e->dtype));
		sub(em, e->u.un.a, P_UNARY);
		return;
	case IR_SELECT:
		put(em, "(");
		sub(em, e->u.select.cond, P_OR + 1);
		put(em, " ? ");
		sub(em, e->u.select.t, P_OR);
		put(em, " : ");
		sub(em, e->u.select.f, P_OR);
		put(em, ")");
		return;
	case IR_CALL: call(em, e); return;
	case IR_LOAD: load(em, e); return;
	case IR_RAMP: ramp_at_lane(em, e); return;
	case IR_BROADCAST: sub(em, e->u.bcast.value, 0); return;
	case IR_READ: case IR_REDUCE: case IR_EXPR_KIND_COUNT:
		break;
	}
	fail(em, TS_ERR_INVALID, "%s is not allowed in lowered code", ir_expr_kind_name(e->kind));
}

static void expr(emitter *em, const ts_expr *e, int min_prec)
{
	if (em->failed)
		return;
	bool paren = prec(em, e) < min_prec;
	if (paren)
		put(em, "(");
	expr_body(em, e);
	if (paren)
		put(em, ")");
}

/* Emission into a side buffer: the text comes back as an arena string, so
 * that a header can be read with the names in scope before it defines one. */
static ts_sbuf capture_begin(emitter *em)
{
	ts_sbuf saved = em->out;
	em->out = (ts_sbuf){0};
	return saved;
}

static const char *capture_end(emitter *em, ts_sbuf saved)
{
	const char *r = em->out.oom ? NULL : ts_strdup(em->ctx, ts_sb_str(&em->out));
	ts_sb_free(&em->out);
	em->out = saved;
	if (!r)
		em->failed = true;
	return r;
}

static const char *expr_text(emitter *em, const ts_expr *e)
{
	ts_sbuf saved = capture_begin(em);
	sub(em, e, 0);
	return capture_end(em, saved);
}

/* ---- statements --------------------------------------------------------- */

static void line(emitter *em, const char *s)
{
	ts_sb_indent(&em->out, em->indent);
	put(em, s);
	put(em, "\n");
}

static void begin_line(emitter *em)
{
	ts_sb_indent(&em->out, em->indent);
}

static void block_body(emitter *em, const ts_stmt *body)
{
	em->indent++;
	stmt(em, body);
	em->indent--;
	line(em, "}");
}

/* `i < end` of a loop from min over extent, folding constants. */
static void loop_end(emitter *em, const ts_stmt *s)
{
	int64_t m, e;
	if (ir_is_const_int(s->u.for_.min, &m) && ir_is_const_int(s->u.for_.extent, &e) &&
	    ts_dtype_eq(s->u.for_.min->dtype, ts_int32)) {
		ts_sb_printf(&em->out, "%lld", (long long)(m + e));
		return;
	}
	if (ir_is_const_int(s->u.for_.min, &m) && m == 0) {
		sub(em, s->u.for_.extent, P_REL + 1);
		return;
	}
	sub(em, s->u.for_.min, P_ADD);
	put(em, " + ");
	sub(em, s->u.for_.extent, P_ADD + 1);
}

static void loop_head(emitter *em, const ts_stmt *s, const char *pragma)
{
	const ts_expr *v = s->u.for_.var;
	const char *type = ctype(em, v->dtype);
	/* bounds are read with the names outside the loop */
	const char *min = expr_text(em, s->u.for_.min);
	ts_sbuf saved = capture_begin(em);
	loop_end(em, s);
	const char *end = capture_end(em, saved);
	ir_interval lo = bound(em, s->u.for_.min), ext = bound(em, s->u.for_.extent);
	const char *n = define(em, v, v->u.var.name);
	if (!min || !end || !n)
		return;
	loop_range(em, v, lo, ext.max);
	if (pragma)
		line(em, pragma);
	begin_line(em);
	ts_sb_printf(&em->out, "for (%s %s = %s; %s < %s; ++%s) {", type, n, min, n, end, n);
	if (s->u.for_.kind == TS_FOR_THREAD)
		ts_sb_printf(&em->out, " /* %s */", ts_thread_tag_name(s->u.for_.thread));
	put(em, "\n");
}

static void serial_loop(emitter *em, const ts_stmt *s, const char *pragma)
{
	bool par = s->u.for_.kind == TS_FOR_PARALLEL && pragma;
	loop_head(em, s, pragma);
	em->parallel_depth += par;
	block_body(em, s->u.for_.body);
	em->parallel_depth -= par;
}

static int tag_dim(ts_thread_tag t)
{
	return t >= TS_THREAD_X ? t - TS_THREAD_X : t - TS_BLOCK_X;
}

static int64_t launch_dim(const emitter *em, ts_thread_tag t)
{
	int d = tag_dim(t);
	return t >= TS_THREAD_X ? em->launch.block[d] : em->launch.grid[d];
}

/* The thread indices (1 << tag) e's value depends on, through the
 * variables of em->tdep; every index when the table overflowed. */
static unsigned thread_tags(const emitter *em, const ts_expr *e)
{
	if (!e || !em->d->bind_threads)
		return 0;
	if (em->tdep_over)
		return ~0u;
	unsigned tags = 0;
	for (int i = 0; i < em->ntdep; i++)
		if (!(tags & em->tdep[i].tags) && ir_expr_uses_var((ts_expr *)e, em->tdep[i].var))
			tags |= em->tdep[i].tags;
	return tags;
}

/* Records that v's value depends on the thread indices `tags` (none: not
 * recorded); returns what tdep_pop takes to undo it: the table's size
 * before, or -1 for an entry that did not fit (while one is in scope,
 * every value counts as depending on every index). */
static int tdep_push(emitter *em, const ts_expr *v, unsigned tags)
{
	if (!tags)
		return em->ntdep;
	if (em->ntdep == (int)TS_COUNT_OF(em->tdep)) {
		em->tdep_over++;
		return -1;
	}
	em->tdep[em->ntdep++] = (thread_dep){v, tags};
	return em->ntdep - 1;
}

static void tdep_pop(emitter *em, int n)
{
	if (n < 0)
		em->tdep_over--;
	else
		em->ntdep = n;
}

/* CUDA: the loop's variable is a block or thread index; no loop. */
static void thread_loop(emitter *em, const ts_stmt *s)
{
	const ts_expr *v = s->u.for_.var;
	const char *type = ctype(em, v->dtype);
	int64_t m = 0, ext = 0;
	bool offset = !ir_is_const_int(s->u.for_.min, &m) || m != 0;
	const char *min = offset ? expr_text(em, s->u.for_.min) : "";
	ir_interval lo = bound(em, s->u.for_.min);
	const char *n = define(em, v, v->u.var.name);
	if (!n || !min)
		return;
	ir_is_const_int(s->u.for_.extent, &ext);
	/* the index runs below the launch's dimension, and below a constant
	 * extent under the test below */
	int64_t dim = launch_dim(em, s->u.for_.thread);
	loop_range(em, v, lo, ext > 0 && ext < dim ? ext : dim);
	begin_line(em);
	ts_sb_printf(&em->out, "%s %s = %s%s%s%s;\n", type, n, ts_thread_tag_name(s->u.for_.thread),
		     offset ? " + (" : "", min, offset ? ")" : "");
	int ntdep = tdep_push(em, v, (1u << s->u.for_.thread) | thread_tags(em, s->u.for_.min));
	if (ext == launch_dim(em, s->u.for_.thread)) {
		stmt(em, s->u.for_.body);
	} else {
		begin_line(em);
		ts_sb_printf(&em->out, "if (%s < ", ts_thread_tag_name(s->u.for_.thread));
		sub(em, s->u.for_.extent, P_REL + 1);
		put(em, ") {\n");
		block_body(em, s->u.for_.body);
	}
	tdep_pop(em, ntdep);
}

/* CUDA: a store into a parameter (global memory) or a shared buffer whose
 * element, and whether it is made at all, do not depend on a thread index
 * the block has more than one of runs in all those threads at once,
 * storing to the same element: outside every loop bound to that index, or
 * inside one but into a region that is the same for all its threads (a
 * shared producer computed at a thread loop holds what all the block's
 * threads read).  Harmless for a plain write of one value, but a
 * reduction's updates (C[i] = C[i] + x) would race, threads re-adding what
 * others added (the final phase of partial sums rfactor'd across
 * threadIdx.x), or zeroing an element another had begun to sum.  Such a
 * store is made by thread 0 of each of those indices only, as TVM guards a
 * cross-thread reduction's result.  The kernel's own stages never read a
 * parameter another thread wrote; a shared buffer's readers are behind the
 * barrier cuda_sync.c puts after its writes (the guard is on the store
 * alone, so every thread still reaches each barrier).  A store whose
 * element or condition depends on the index is each thread's own. */
static bool replicated_store(emitter *em, const ts_stmt *s, char cond[96])
{
	const ts_buffer *buf = s->u.store.buf;
	cond[0] = '\0';
	if (!em->d->bind_threads || em->in_guard)
		return false;
	bool seen = buf->scope == TS_SCOPE_SHARED; /* by the block's other threads */
	for (int i = 0; i < em->f->nparams; i++)
		seen |= em->f->params[i] == buf;
	/* with tensorized nests the lanes of a warp are threadIdx.x, each
	 * storing its own fragment elements (indices of the lane's mma_g and
	 * mma_t) */
	unsigned own = thread_tags(em, s->u.store.index) | em->cond_tags |
		       (em->mma.nnest > 0 ? 1u << TS_THREAD_X : 0);
	for (int t = TS_THREAD_X; seen && t <= TS_THREAD_Z; t++)
		if (launch_dim(em, (ts_thread_tag)t) > 1 && !(own & (1u << t)))
			snprintf(cond + strlen(cond), 96 - strlen(cond), "%s%s == 0", cond[0] ? " && " : "",
				 ts_thread_tag_name((ts_thread_tag)t));
	return cond[0] != '\0';
}

/* Opens `if (cond) {` around what replicated_store guards (nothing when
 * cond is empty); close_guard ends it. */
static void open_guard(emitter *em, const char *cond)
{
	if (!cond[0])
		return;
	begin_line(em);
	ts_sb_printf(&em->out, "if (%s) {\n", cond);
	em->indent++;
	em->in_guard = true;
}

static void close_guard(emitter *em, const char *cond)
{
	if (!cond[0])
		return;
	em->in_guard = false;
	em->indent--;
	line(em, "}");
}

/* ---- float4 vector accesses (CUDA) ------------------------------------- */

/* The coefficient of v in e when e is affine in v; false otherwise. */
static bool coeff(const ts_expr *e, const ts_expr *v, int64_t *c)
{
	int64_t a, b, k;
	if (!ir_expr_uses_var((ts_expr *)e, v)) {
		*c = 0;
		return true;
	}
	switch (e->kind) {
	case IR_VAR:
		*c = 1;
		return true;
	case IR_ADD: case IR_SUB:
		if (!coeff(e->u.bin.a, v, &a) || !coeff(e->u.bin.b, v, &b))
			return false;
		*c = e->kind == IR_ADD ? a + b : a - b;
		return true;
	case IR_MUL:
		if (ir_is_const_int(e->u.bin.a, &k) && coeff(e->u.bin.b, v, &b))
			return *c = k * b, true;
		if (ir_is_const_int(e->u.bin.b, &k) && coeff(e->u.bin.a, v, &a))
			return *c = k * a, true;
		return false;
	default:
		return false;
	}
}

/* e with every occurrence of v replaced by 0 and the zero terms dropped
 * (NULL means 0).  e is affine in v. */
static ts_expr *strip(ts_ctx *ctx, ts_expr *e, const ts_expr *v)
{
	if (!ir_expr_uses_var(e, v))
		return e;
	if (e->kind == IR_VAR)
		return NULL;
	ts_expr *a = strip(ctx, e->u.bin.a, v), *b = strip(ctx, e->u.bin.b, v);
	if (e->kind == IR_MUL)
		return a && b ? ts_mul(ctx, a, b) : NULL;
	if (!b)
		return a;
	if (!a)
		return e->kind == IR_ADD ? b : ts_sub(ctx, ts_int(ctx, 0), b);
	return ts_binary(ctx, e->kind, a, b);
}

/* The aligned base index of a unit-stride access over loop's variable in
 * [min, ...) of a buffer outside local memory, `lanes` elements from a
 * multiple of lanes, or NULL when the access is not one. */
static ts_expr *unit_base(emitter *em, const ts_buffer *buf, ts_expr *idx, const ts_stmt *loop,
			  int64_t lanes)
{
	int64_t c, m;
	if (buf->scope == TS_SCOPE_LOCAL || idx->dtype.lanes != 1 ||
	    !coeff(idx, loop->u.for_.var, &c) || c != 1 || !ir_is_const_int(loop->u.for_.min, &m))
		return NULL;
	ts_expr *base = strip(em->ctx, idx, loop->u.for_.var);
	if (m != 0)
		base = base ? ts_add(em->ctx, base, ts_int(em->ctx, m)) : ts_int(em->ctx, m);
	if (!ir_multiple_of(base, lanes))
		return NULL;
	return base ? base : ts_int(em->ctx, 0);
}

/* unit_base of a float32 buffer: a float2/float4 access. */
static ts_expr *vec_base(emitter *em, ts_buffer *buf, ts_expr *idx, const ts_stmt *loop,
			 int lanes)
{
	return ts_dtype_eq(buf->dtype, ts_float32) ? unit_base(em, buf, idx, loop, lanes) : NULL;
}

/* Collects the loads of the loop variable in value; false if v appears in
 * any other way or a load is not a unit-stride aligned one. */
static bool vec_value(emitter *em, ts_expr *e, const ts_stmt *loop, int lanes,
		      ts_expr **bases)
{
	const ts_expr *v = loop->u.for_.var;
	if (!ir_expr_uses_var(e, v))
		return true;
	switch (e->kind) {
	case IR_LOAD:
		if (em->nvec == 4)
			return false;
		bases[em->nvec] = vec_base(em, e->u.load.buf, e->u.load.index, loop, lanes);
		em->vec_loads[em->nvec] = e;
		return bases[em->nvec++] != NULL;
	case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV: case IR_MIN: case IR_MAX:
		return vec_value(em, e->u.bin.a, loop, lanes, bases) &&
		       vec_value(em, e->u.bin.b, loop, lanes, bases);
	case IR_CALL:
		for (int i = 0; i < e->u.call.nargs; i++)
			if (!vec_value(em, e->u.call.args[i], loop, lanes, bases))
				return false;
		return true;
	default:
		return false;
	}
}

static void vec_access(emitter *em, const char *type, ts_buffer *buf, ts_expr *base, bool is_const)
{
	ts_sb_printf(&em->out, "*(%s%s *)&%s[", is_const ? "const " : "", type, lookup(em, buf));
	sub(em, base, 0);
	put(em, "]");
}

/* Emits the vector form of the general case: loads into temporaries, then
 * one make_floatN of the lanes. */
static void vec_compute(emitter *em, const ts_stmt *st, ts_expr *sbase, ts_expr **bases,
			int lanes)
{
	const char *type = lanes == 4 ? "float4" : "float2";
	line(em, "{");
	em->indent++;
	for (int i = 0; i < em->nvec; i++) {
		em->vec_names[i] = define(em, em->vec_loads[i],
					  ts_sprintf(em->ctx, "%s%d", em->vec_loads[i]->u.load.buf->name, lanes));
		begin_line(em);
		ts_sb_printf(&em->out, "const %s %s = ", type, em->vec_names[i]);
		vec_access(em, type, em->vec_loads[i]->u.load.buf, bases[i], true);
		put(em, ";\n");
	}
	begin_line(em);
	vec_access(em, type, st->u.store.buf, sbase, false);
	ts_sb_printf(&em->out, " = make_%s(", type);
	for (em->comp = 0; em->comp < lanes; em->comp++) {
		put(em, em->comp ? ", " : "");
		sub(em, st->u.store.value, 0);
	}
	put(em, ");\n");
	em->indent--;
	line(em, "}");
}

/* A copy into a double-buffered shared buffer from global memory, of 4,
 * 8 or 16 bytes from an address aligned to that: one cp.async
 * (ts_cp_async<bytes>, see async_head), which goes on while the thread
 * goes on to read the buffer's other copy. */
static bool async_copy(emitter *em, const ts_buffer *dst, const ts_expr *dbase,
		       const ts_buffer *src, const ts_expr *sbase, int64_t bytes)
{
	if (!em->async_copy || !dst->double_buffer || dst->scope != TS_SCOPE_SHARED ||
	    src->scope != TS_SCOPE_GLOBAL || (bytes != 4 && bytes != 8 && bytes != 16))
		return false;
	begin_line(em);
	ts_sb_printf(&em->out, "ts_cp_async%lld(&%s[", (long long)bytes, lookup(em, dst));
	sub(em, dbase, 0);
	ts_sb_printf(&em->out, "], &%s[", lookup(em, src));
	sub(em, sbase, 0);
	put(em, "]);\n");
	return true;
}

/* Whether the loop variable v appears in e only in the indices of loads
 * from local buffers (registers, whose index is a constant per lane). */
static bool lanes_from_registers(const ts_expr *e, const ts_expr *v)
{
	if (!ir_expr_uses_var((ts_expr *)e, v))
		return true;
	switch (e->kind) {
	case IR_LOAD:
		return e->u.load.buf->scope == TS_SCOPE_LOCAL && e->dtype.lanes == 1;
	case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV: case IR_MIN: case IR_MAX:
		return lanes_from_registers(e->u.bin.a, v) && lanes_from_registers(e->u.bin.b, v);
	case IR_CAST:
		return lanes_from_registers(e->u.un.a, v);
	default:
		return false;
	}
}

struct local_index {
	const ts_expr *v;
	bool found;
};

static bool local_index_fn(ts_expr *e, void *data)
{
	struct local_index *l = data;
	if (e->kind == IR_LOAD && e->u.load.buf->scope == TS_SCOPE_LOCAL &&
	    ir_expr_uses_var(e->u.load.index, l->v))
		l->found = true;
	return !l->found;
}

/* CUDA: a vectorized loop that is not one vector access (the guarded
 * edge of a register block's store) but indexes a local array with its
 * variable is written out lane by lane, the variable a constant in each,
 * so the array stays in registers (a loop would index it dynamically and
 * put it in local memory). */
static bool unrolled_lanes(emitter *em, const ts_stmt *s)
{
	int64_t lanes, m;
	ts_expr *v = s->u.for_.var;
	struct local_index l = {v, false};
	if (!em->d->bind_threads || !ir_is_const_int(s->u.for_.extent, &lanes) || lanes > 16 ||
	    !ir_is_const_int(s->u.for_.min, &m))
		return false;
	ir_stmt_visit(s->u.for_.body, NULL, local_index_fn, &l);
	if (!l.found)
		return false;
	for (int64_t i = 0; i < lanes && !em->failed; i++) {
		ts_expr *c = ts_const(em->ctx, v->dtype, m + i);
		ts_stmt *b = c ? ir_stmt_substitute(em->ctx, s->u.for_.body, 1, &v, &c) : NULL;
		b = b ? ir_simplify_stmt(em->ctx, b, 0, NULL) : NULL;
		if (!b)
			em->failed = true;
		else
			stmt(em, b);
	}
	return true;
}

/* A float2/float4 store of values computed from registers (a GEMM's
 * register block written out): each lane's value with the loop variable
 * fixed, in one make_floatN. */
static bool try_float4_from_registers(emitter *em, const ts_stmt *s, ts_expr *sbase, int64_t lanes)
{
	const ts_stmt *st = s->u.for_.body;
	ts_expr *v = s->u.for_.var;
	if (!lanes_from_registers(st->u.store.value, v))
		return false;
	ts_expr *lane[4];
	for (int i = 0; i < lanes; i++) {
		ts_expr *c = ts_const(em->ctx, v->dtype, i);
		lane[i] = c ? ir_substitute(em->ctx, st->u.store.value, 1, &v, &c) : NULL;
		lane[i] = lane[i] ? ir_simplify(em->ctx, lane[i], 0, NULL) : NULL;
		if (!lane[i]) {
			em->failed = true;
			return true;
		}
	}
	const char *type = lanes == 4 ? "float4" : "float2";
	begin_line(em);
	vec_access(em, type, st->u.store.buf, sbase, false);
	ts_sb_printf(&em->out, " = make_%s(", type);
	for (int i = 0; i < lanes; i++) {
		put(em, i ? ", " : "");
		sub(em, lane[i], 0);
	}
	put(em, ");\n");
	return true;
}

static bool try_float4(emitter *em, const ts_stmt *s)
{
	int64_t lanes;
	const ts_stmt *st = s->u.for_.body;
	if (!em->d->float4 || !ir_is_const_int(s->u.for_.extent, &lanes) ||
	    (lanes != 4 && lanes != 2) || st->kind != IR_S_STORE ||
	    st->u.store.value->dtype.lanes != 1)
		return false;
	ts_expr *bases[4];
	ts_expr *sbase = vec_base(em, st->u.store.buf, st->u.store.index, s, (int)lanes);
	em->nvec = 0;
	if (!sbase || !vec_value(em, st->u.store.value, s, (int)lanes, bases)) {
		em->nvec = 0;
		return sbase && try_float4_from_registers(em, s, sbase, lanes);
	}
	const char *type = lanes == 4 ? "float4" : "float2";
	if (em->nvec == 1 && em->vec_loads[0] == st->u.store.value) { /* a copy */
		ts_buffer *src = st->u.store.value->u.load.buf;
		if (!async_copy(em, st->u.store.buf, sbase, src, bases[0], lanes * 4)) {
			begin_line(em);
			vec_access(em, type, st->u.store.buf, sbase, false);
			put(em, " = ");
			vec_access(em, type, src, bases[0], true);
			put(em, ";\n");
		}
	} else {
		vec_compute(em, st, sbase, bases, (int)lanes);
	}
	em->nvec = 0;
	em->comp = -1;
	return true;
}

/* A vectorized copy of 2, 4 or 8 16-bit elements (a shared tile's fetch
 * of float16): one 4-, 8- or 16-byte move of the bits. */
static bool try_copy16(emitter *em, const ts_stmt *s)
{
	int64_t lanes;
	const ts_stmt *st = s->u.for_.body;
	if (!em->d->float4 || !ir_is_const_int(s->u.for_.extent, &lanes) ||
	    (lanes != 2 && lanes != 4 && lanes != 8) || st->kind != IR_S_STORE)
		return false;
	ts_expr *v = st->u.store.value;
	ts_buffer *dst = st->u.store.buf;
	if (v->kind != IR_LOAD || v->dtype.lanes != 1 || !ts_dtype_eq(v->dtype, dst->dtype) ||
	    !lookup(em, dst) || !lookup(em, v->u.load.buf))
		return false;
	/* lanes 16-bit elements from a multiple of lanes: 2 * lanes aligned bytes */
	ts_expr *db = dst->dtype.bits == 16 ? unit_base(em, dst, st->u.store.index, s, lanes) : NULL;
	ts_expr *sb = db ? unit_base(em, v->u.load.buf, v->u.load.index, s, lanes) : NULL;
	if (!sb)
		return false;
	if (async_copy(em, dst, db, v->u.load.buf, sb, lanes * 2))
		return true;
	const char *type = lanes == 8 ? "uint4" : lanes == 4 ? "uint2" : "unsigned";
	begin_line(em);
	vec_access(em, type, dst, db, false);
	put(em, " = ");
	vec_access(em, type, v->u.load.buf, sb, true);
	put(em, ";\n");
	return true;
}

/* ---- tensorized nests (CUDA, cuda_mma.h) ------------------------------------ */

/* A 16-bit float operand's bits (the buffer holds them). */
static const char *bits16(emitter *em, const ts_buffer *b, ts_expr *idx)
{
	const char *n = lookup(em, b), *i = idx ? expr_text(em, idx) : NULL;
	return n && i ? ts_sprintf(em->ctx, "%s[%s]", n, i) : NULL;
}

/* Two 16-bit elements in one register, lo in the low half: one 32-bit
 * load where they are adjacent and the pair is 4-byte aligned (an even
 * index: buffers are at least 16-byte aligned). */
static const char *pack(emitter *em, const ts_buffer *b, ts_expr *lo, ts_expr *hi)
{
	int64_t d;
	ts_expr *diff = lo && hi ? ir_simplify(em->ctx, ts_sub(em->ctx, hi, lo), 0, NULL) : NULL;
	if (diff && ir_is_const_int(diff, &d) && d == 1 && ir_multiple_of(lo, 2) && b->scope != TS_SCOPE_LOCAL) {
		const char *n = lookup(em, b), *i = expr_text(em, lo);
		return n && i ? ts_sprintf(em->ctx, "*(const unsigned *)&%s[%s]", n, i) : NULL;
	}
	const char *l = bits16(em, b, lo), *h = bits16(em, b, hi);
	return l && h ? ts_sprintf(em->ctx, "ts_pack16(%s, %s)", l, h) : NULL;
}

/* An operand loaded by one ldmatrix.x4 where its rows qualify
 * (cg_mma_ldsm_index): the register array's name, the load printed here,
 * before the nest's block, unless this run of updates loaded it already.
 * "" where the operand does not qualify, NULL on failure. */
static const char *operand_ldsm(emitter *em, const cg_mma_nest *n, bool b)
{
	ts_ctx *ctx = em->ctx;
	const ts_buffer *buf = b ? n->b : n->a;
	bool trans = false;
	ts_expr *at = cg_mma_ldsm_index(ctx, &em->mma, n, b, &trans);
	if (!at) /* each lane loads its elements (out of memory fails there) */
		return "";
	const char *i = expr_text(em, at), *bn = lookup(em, buf);
	if (!i || !bn)
		return NULL;
	for (int f = 0; em->in_run && f < em->nfrag; f++)
		if (em->frag[f].buf == buf && em->frag[f].trans == trans && !strcmp(em->frag[f].at, i))
			return em->frag[f].name;
	const char *name = define(em, at, b ? "mma_fb" : "mma_fa");
	if (!name)
		return NULL;
	line(em, ts_sprintf(ctx, "unsigned %s[4];", name));
	line(em, ts_sprintf(ctx, "ts_ldsm_x4%s(%s, &%s[%s]);", trans ? "_trans" : "", name, bn, i));
	if (em->in_run && em->nfrag < (int)TS_COUNT_OF(em->frag))
		em->frag[em->nfrag++] = (mma_frag){buf, i, trans, name};
	return name;
}

/* An operand each lane loads itself, 2 elements a register (A's a0..a7;
 * B's b0..b3 of columns 0-7, then of 8-15), as array `name`. */
static bool operand_lanes(emitter *em, const cg_mma_nest *n, bool b, const char *name)
{
	ts_ctx *ctx = em->ctx;
	const ts_buffer *buf = b ? n->b : n->a;
	const char *r[4];
	for (int j = 0; j < 4; j++) {
		ts_expr *lo = b ? cg_mma_b_index(ctx, &em->mma, n, j >> 1, 2 * (j & 1))
				: cg_mma_a_index(ctx, &em->mma, n, 2 * j);
		ts_expr *hi = b ? cg_mma_b_index(ctx, &em->mma, n, j >> 1, 2 * (j & 1) + 1)
				: cg_mma_a_index(ctx, &em->mma, n, 2 * j + 1);
		if (!(r[j] = pack(em, buf, lo, hi)))
			return false;
	}
	line(em, ts_sprintf(ctx, "const unsigned %s[4] = {%s, %s, %s, %s};", name, r[0], r[1], r[2], r[3]));
	return true;
}

/* An operand element rounded to TF32, as the bits mma.sync takes. */
static const char *tf32_bits(emitter *em, const ts_buffer *b, ts_expr *idx)
{
	const char *n = lookup(em, b), *i = idx ? expr_text(em, idx) : NULL;
	em->tf32 = true;
	return n && i ? ts_sprintf(em->ctx, "__float_as_uint(ts_round_tf32(%s[%s]))", n, i) : NULL;
}

/* One mma.sync of shape.types onto columns 8 * half .. + 7 of n's tile:
 * the accumulator's 4 registers there, a's 4 (array a), b's 2. */
static bool mma_asm(emitter *em, const cg_mma_nest *n, int half, const char *shape,
		    const char *a, const char *b0, const char *b1)
{
	const char *frag = lookup(em, em->mma.frag[n->acc]), *c[4];
	for (int i = 0; i < 4; i++) {
		ts_expr *ci = cg_mma_c_index(em->ctx, n, half, i);
		if (!frag || !ci || !(c[i] = expr_text(em, ci)))
			return false;
	}
	begin_line(em);
	ts_sb_printf(&em->out, "asm(\"mma.sync.aligned.%s {%%0, %%1, %%2, %%3}, {%%4, %%5, %%6, %%7}, "
		     "{%%8, %%9}, {%%0, %%1, %%2, %%3};\"\n", shape);
	ts_sb_indent(&em->out, em->indent + 1);
	ts_sb_printf(&em->out, ": \"+f\"(%s[%s]), \"+f\"(%s[%s]), \"+f\"(%s[%s]), \"+f\"(%s[%s])\n",
		     frag, c[0], frag, c[1], frag, c[2], frag, c[3]);
	ts_sb_indent(&em->out, em->indent + 1);
	ts_sb_printf(&em->out, ": \"r\"(%s[0]), \"r\"(%s[1]), \"r\"(%s[2]), \"r\"(%s[3]), "
		     "\"r\"(%s), \"r\"(%s));\n", a, a, a, a, b0, b1);
	return true;
}

/* A TF32 update: per k step of 8, each lane's A fragment (4 elements),
 * then for each 8 columns its B fragment (2) and one mma.sync m16n8k8. */
static bool mma_tf32(emitter *em, const cg_mma_nest *n)
{
	ts_ctx *ctx = em->ctx;
	const cg_mma *mm = &em->mma;
	for (int ks = 0; ks < 2; ks++) {
		const char *a[4], *b[2];
		for (int i = 0; i < 4; i++)
			if (!(a[i] = tf32_bits(em, n->a, cg_mma_tf32_a_index(ctx, mm, n, ks, i))))
				return false;
		line(em, ts_sprintf(ctx, "const unsigned mma_a%d[4] = {%s, %s, %s, %s};", ks, a[0], a[1], a[2], a[3]));
		for (int h = 0; h < 2; h++) {
			for (int i = 0; i < 2; i++)
				if (!(b[i] = tf32_bits(em, n->b, cg_mma_tf32_b_index(ctx, mm, n, ks, h, i))))
					return false;
			if (!mma_asm(em, n, h, "m16n8k8.row.col.f32.tf32.tf32.f32",
				     ts_sprintf(ctx, "mma_a%d", ks), b[0], b[1]))
				return false;
		}
	}
	return true;
}

/* A 16-bit update: A's and B's fragments (one ldmatrix each where they
 * qualify, loaded before the block), then two mma.sync m16n8k16. */
static bool mma_16bit(emitter *em, const cg_mma_nest *n, const char *fa, const char *fb)
{
	ts_ctx *ctx = em->ctx;
	if (*fa)
		line(em, ts_sprintf(ctx, "const unsigned *mma_a = %s;", fa));
	else if (!operand_lanes(em, n, false, "mma_a"))
		return false;
	if (*fb)
		line(em, ts_sprintf(ctx, "const unsigned *mma_b = %s;", fb));
	else if (!operand_lanes(em, n, true, "mma_b"))
		return false;
	const char *shape = n->type == CG_MMA_BF16 ? "m16n8k16.row.col.f32.bf16.bf16.f32"
						  : "m16n8k16.row.col.f32.f16.f16.f32";
	return mma_asm(em, n, 0, shape, "mma_a", "mma_b[0]", "mma_b[1]") &&
	       mma_asm(em, n, 1, shape, "mma_a", "mma_b[2]", "mma_b[3]");
}

/* An update as mma.sync in a block of its own; elementwise nests as the
 * lane's 8 elements. */
static void mma_nest(emitter *em, const ts_stmt *s)
{
	const cg_mma_nest *n = cg_mma_find(&em->mma, s);
	const char *loop = s->u.for_.var->u.var.name;
	if (!n) {
		fail(em, TS_ERR_INTERNAL, "tensorized loop %s was not matched", loop);
		return;
	}
	ts_ctx *ctx = em->ctx;
	if (!n->update) {
		line(em, ts_sprintf(ctx, "/* %s: this lane's 8 elements of the 16 x 16 tile */", loop));
		for (int k = 0; k < 8 && !em->failed; k++)
			stmt(em, cg_mma_slot(ctx, &em->mma, n, k));
		return;
	}
	bool tf32 = n->type == CG_MMA_TF32;
	const char *fa = tf32 ? "" : operand_ldsm(em, n, false), *fb = fa && !tf32 ? operand_ldsm(em, n, true) : "";
	line(em, ts_sprintf(ctx, "{ /* %s: 16 x 16 x 16 on tensor cores%s */", loop, tf32 ? ", TF32" : ""));
	em->indent++;
	bool ok = fa && fb && (tf32 ? mma_tf32(em, n) : mma_16bit(em, n, fa, fb));
	if (!ok && !em->failed)
		fail(em, ts_last_status(ctx) != TS_OK ? ts_last_status(ctx) : TS_ERR_NOMEM,
		     "tensorize: loop %s: out of memory", loop);
	em->indent--;
	line(em, "}");
}

static void loop_kind(emitter *em, const ts_stmt *s);

static void for_loop(emitter *em, const ts_stmt *s)
{
	if (s->u.for_.kind == TS_FOR_THREAD && em->d->bind_threads) {
		thread_loop(em, s);
		return;
	}
	/* a loop from a thread index to another takes different values in
	 * different threads */
	int ntdep = tdep_push(em, s->u.for_.var,
			      thread_tags(em, s->u.for_.min) | thread_tags(em, s->u.for_.extent));
	loop_kind(em, s);
	tdep_pop(em, ntdep);
}

static void loop_kind(emitter *em, const ts_stmt *s)
{
	const dialect *d = em->d;
	switch (s->u.for_.kind) {
	case TS_FOR_THREAD: /* with bind_threads, for_loop's thread_loop */
		serial_loop(em, s, NULL);
		return;
	case TS_FOR_PARALLEL:
		serial_loop(em, s, d->parallel_pragma);
		return;
	case TS_FOR_VECTORIZED: {
		/* a float4 store made by thread 0 alone (replicated_store)
		 * keeps its guard */
		char cond[96] = "";
		if (s->u.for_.body->kind == IR_S_STORE)
			replicated_store(em, s->u.for_.body, cond);
		open_guard(em, cond);
		if (!try_float4(em, s) && !try_copy16(em, s) && !unrolled_lanes(em, s))
			serial_loop(em, s, d->simd_pragma);
		close_guard(em, cond);
		return;
	}
	case TS_FOR_UNROLLED:
		serial_loop(em, s, d->unroll_pragma);
		return;
	case TS_FOR_TENSORIZED:
		if (d->bind_threads)
			mma_nest(em, s);
		else
			serial_loop(em, s, NULL);
		return;
	case TS_FOR_SERIAL:
		serial_loop(em, s, NULL);
		return;
	}
}

/* Whether v, stored into buf, is a plain copy: a scalar load of another
 * buffer in scope, of buf's dtype. */
static bool plain_copy(const emitter *em, const ts_buffer *buf, const ts_expr *v)
{
	return v->kind == IR_LOAD && v->dtype.lanes == 1 && ts_dtype_eq(v->dtype, buf->dtype) &&
	       vec_load_slot(em, v) < 0 && lookup(em, v->u.load.buf);
}

/* The value stored into buf: a 16-bit float converted to its bits. */
static void stored_value(emitter *em, const ts_buffer *buf, const ts_expr *v)
{
	bool h16 = is_f16x(buf->dtype);
	if (h16 && em->d->bind_threads && plain_copy(em, buf, v)) {
		/* CUDA: a copy (a cache_read's fetch into shared memory) moves
		 * the bits instead of converting to float and back; the two
		 * differ only for a signaling NaN, which the round trip quiets */
		ts_sb_printf(&em->out, "%s[", lookup(em, v->u.load.buf));
		sub(em, v->u.load.index, 0);
		put(em, "]");
		return;
	}
	if (h16)
		ts_sb_printf(&em->out, "%s(", conv16(em, buf->dtype, C16_TO));
	sub(em, v, 0);
	if (h16)
		put(em, ")");
}

/* A store of a vector: one assignment per lane, in a lane loop. */
static void vector_store(emitter *em, const ts_stmt *s)
{
	const char *l = define(em, s, "l");
	if (!l)
		return;
	line(em, em->d->simd_pragma);
	begin_line(em);
	ts_sb_printf(&em->out, "for (%s %s = 0; %s < %d; ++%s) {\n", em->d->type[T_I32], l, l,
		     s->u.store.index->dtype.lanes, l);
	em->indent++;
	em->lane = l;
	begin_line(em);
	ts_sb_printf(&em->out, "%s[", lookup(em, s->u.store.buf));
	sub(em, s->u.store.index, 0);
	put(em, "] = ");
	stored_value(em, s->u.store.buf, s->u.store.value);
	put(em, ";\n");
	em->lane = NULL;
	em->indent--;
	line(em, "}");
}

static void store(emitter *em, const ts_stmt *s)
{
	if (!lookup(em, s->u.store.buf)) {
		fail(em, TS_ERR_INVALID, "buffer %s is neither a parameter nor allocated",
		     s->u.store.buf->name);
		return;
	}
	if (s->u.store.index->dtype.lanes > 1) {
		vector_store(em, s);
		return;
	}
	const ts_expr *v = s->u.store.value;
	if (plain_copy(em, s->u.store.buf, v) &&
	    async_copy(em, s->u.store.buf, s->u.store.index, v->u.load.buf, v->u.load.index,
		       v->dtype.bits / 8))
		return;
	begin_line(em);
	ts_sb_printf(&em->out, "%s[", lookup(em, s->u.store.buf));
	sub(em, s->u.store.index, 0);
	put(em, "] = ");
	stored_value(em, s->u.store.buf, s->u.store.value);
	put(em, ";\n");
}

/* A hint, so a dialect without one emits nothing. */
static void prefetch(emitter *em, const ts_expr *e)
{
	if (!em->d->prefetch)
		return;
	if (e->kind != IR_LOAD || e->dtype.lanes != 1 || !lookup(em, e->u.load.buf)) {
		fail(em, TS_ERR_INVALID, "prefetch of something other than a scalar load of a buffer in scope");
		return;
	}
	begin_line(em);
	ts_sb_printf(&em->out, "%s(&%s[", em->d->prefetch, lookup(em, e->u.load.buf));
	sub(em, e->u.load.index, 0);
	put(em, "], 0, 3);\n");
}

static void heap_allocate(emitter *em, const ts_stmt *s, const char *type, const char *n)
{
	const ts_buffer *b = s->u.alloc.buf;
	if (em->parallel_depth > 0 || em->nheap == (int)TS_COUNT_OF(em->heap)) {
		fail(em, TS_ERR_UNSUPPORTED,
		     "allocate %s: %lld bytes inside a parallel loop exceed the stack limit of %lld",
		     b->name, (long long)(b->size * ts_dtype_bytes(b->dtype)),
		     (long long)em->d->max_stack_bytes);
		return;
	}
	begin_line(em);
	ts_sb_printf(&em->out, "%s *%s = (%s *)malloc(sizeof(%s) * %lld);\n", type, n, type, type,
		     (long long)b->size);
	begin_line(em);
	ts_sb_printf(&em->out, "if (!%s) {\n", n);
	for (int i = em->nheap - 1; i >= 0; i--) {
		ts_sb_indent(&em->out, em->indent + 1);
		ts_sb_printf(&em->out, "free(%s);\n", em->heap[i]);
	}
	ts_sb_indent(&em->out, em->indent + 1);
	put(em, "return;\n");
	line(em, "}");
	em->heap[em->nheap++] = n;
	stmt(em, s->u.alloc.body);
	em->nheap--;
	begin_line(em);
	ts_sb_printf(&em->out, "free(%s);\n", n);
}

struct loads {
	const ts_buffer *buf;
	bool *found;
};

static bool loads_fn(ts_expr *e, void *data)
{
	struct loads *l = data;
	*l->found |= e->kind == IR_LOAD && e->u.load.buf == l->buf;
	return !*l->found;
}

static void allocate(emitter *em, const ts_stmt *s)
{
	ts_buffer *b = s->u.alloc.buf;
	if (b->scope == TS_SCOPE_SHARED && em->d->shared_qual) {
		stmt(em, s->u.alloc.body); /* declared at the top of the kernel */
		return;
	}
	int acc = em->d->bind_threads ? cg_mma_acc_of(&em->mma, b) : -1;
	if (acc >= 0) { /* a tensor-core accumulator: this lane's registers of it */
		const ts_buffer *f = em->mma.frag[acc];
		const char *n = define(em, f, b->name);
		if (!n)
			return;
		line(em, ts_sprintf(em->ctx, "float %s[%lld]; /* %s: %lld elements, 1/32 per lane */", n,
				    (long long)f->size, b->name, (long long)b->size));
		stmt(em, s->u.alloc.body);
		return;
	}
	const char *type = ctype(em, b->dtype);
	const char *n = define(em, b, b->name);
	if (!n)
		return;
	if (b->size * ts_dtype_bytes(b->dtype) > em->d->max_stack_bytes) {
		heap_allocate(em, s, type, n);
		return;
	}
	begin_line(em);
	/* an array outside local scope (a stage computed at a thread loop)
	 * may be read and written as float4 (unit_base), which needs 16
	 * bytes that CUDA does not promise a float array */
	int align = em->d->local_align;
	if (!align && em->d->float4 && b->scope != TS_SCOPE_LOCAL)
		align = 16;
	if (align)
		ts_sb_printf(&em->out, em->d->align_fmt, align);
	ts_sb_printf(&em->out, "%s %s[%lld];\n", type, n, (long long)b->size);
	/* a buffer written and never read (a producer's copy in a tail the
	 * consumer's partition left empty) would be "set but not used" */
	bool read = false;
	ir_stmt_visit(s->u.alloc.body, NULL, loads_fn, &(struct loads){b, &read});
	if (!read)
		line(em, ts_sprintf(em->ctx, "(void)%s;", n));
	stmt(em, s->u.alloc.body);
}

static void if_branches(emitter *em, const ts_stmt *s);

static void if_stmt(emitter *em, const ts_stmt *s)
{
	unsigned saved = em->cond_tags;
	em->cond_tags |= thread_tags(em, s->u.if_.cond);
	if_branches(em, s);
	em->cond_tags = saved;
}

static void if_branches(emitter *em, const ts_stmt *s)
{
	begin_line(em);
	put(em, "if (");
	sub(em, s->u.if_.cond, 0);
	put(em, ") {\n");
	if (!s->u.if_.else_s) {
		block_body(em, s->u.if_.then_s);
		return;
	}
	em->indent++;
	stmt(em, s->u.if_.then_s);
	em->indent--;
	line(em, "} else {");
	block_body(em, s->u.if_.else_s);
}

static bool find_var(ts_expr *e, void *data)
{
	void **d = data;
	if (e == d[0])
		*(bool *)d[1] = true;
	return true;
}

static void let(emitter *em, const ts_stmt *s)
{
	const ts_expr *v = s->u.let.var;
	bool used = false;
	void *data[2] = {(void *)v, &used};
	ir_stmt_visit(s->u.let.body, NULL, find_var, data);
	if (v->dtype.lanes > 1) {
		fail(em, TS_ERR_UNSUPPORTED, "vector variable %s", v->u.var.name);
		return;
	}
	if (used) { /* an unused binding has no effect: expressions are pure */
		const char *type = vtype(em, v->dtype);
		const char *value = expr_text(em, s->u.let.value); /* before v's new name */
		ir_interval iv = bound(em, s->u.let.value);
		const char *n = define(em, v, v->u.var.name);
		if (!value || !n)
			return;
		/* a size variable lies in [1, its bound] (ir.h ts_func) */
		cg_ranges_set(&em->ranges, v, cg_let_range(em->f, v, iv));
		begin_line(em);
		ts_sb_printf(&em->out, "const %s %s = %s;\n", type, n, value);
	}
	int ntdep = tdep_push(em, v, used ? thread_tags(em, s->u.let.value) : 0);
	stmt(em, s->u.let.body);
	tdep_pop(em, ntdep);
}

/* Whether s is a tensorized update the CUDA dialect prints as MMAs. */
static bool is_update(const emitter *em, const ts_stmt *s)
{
	const cg_mma_nest *n;
	return em->d->bind_threads && s->kind == IR_S_FOR && s->u.for_.kind == TS_FOR_TENSORIZED &&
	       (n = cg_mma_find(&em->mma, s)) && n->update;
}

static void end_run(emitter *em)
{
	if (!em->in_run)
		return;
	em->in_run = false;
	em->indent--;
	line(em, "}");
}

/* The statements of s, nested sequences flattened, so that a run of
 * tensorized updates (the unrolled tiles of a warp) shares one block in
 * which each operand fragment is loaded once. */
static void seq_leaves(emitter *em, const ts_stmt *s)
{
	for (int i = 0; i < s->u.seq.n && !em->failed; i++) {
		const ts_stmt *c = s->u.seq.s[i];
		if (c && c->kind == IR_S_SEQ) {
			seq_leaves(em, c);
			continue;
		}
		if (c && is_update(em, c) && !em->in_run) {
			line(em, "{ /* tensorized updates: each fragment loaded once */");
			em->indent++;
			em->in_run = true;
			em->nfrag = 0;
		} else if (c && !is_update(em, c)) {
			end_run(em);
		}
		stmt(em, c);
	}
}

static void seq(emitter *em, const ts_stmt *s)
{
	bool outer = !em->in_run;
	seq_leaves(em, s);
	if (outer)
		end_run(em);
}

static void stmt(emitter *em, const ts_stmt *s)
{
	if (!s || em->failed)
		return;
	switch (s->kind) {
	case IR_S_FOR: for_loop(em, s); return;
	case IR_S_STORE: {
		char cond[96];
		replicated_store(em, s, cond);
		open_guard(em, cond);
		store(em, s);
		close_guard(em, cond);
		return;
	}
	case IR_S_ALLOCATE: allocate(em, s); return;
	case IR_S_IF: if_stmt(em, s); return;
	case IR_S_SEQ:
		seq(em, s);
		return;
	case IR_S_LET: let(em, s); return;
	case IR_S_EVALUATE:
		if (s->u.eval.value->dtype.lanes > 1) {
			fail(em, TS_ERR_UNSUPPORTED, "vector evaluate");
			return;
		}
		begin_line(em);
		put(em, "(void)(");
		sub(em, s->u.eval.value, 0);
		put(em, ");\n");
		return;
	case IR_S_PREFETCH:
		prefetch(em, s->u.prefetch.value);
		return;
	case IR_S_BARRIER:
		if (!em->d->barrier) {
			fail(em, TS_ERR_UNSUPPORTED, "barrier needs the cuda dialect");
			return;
		}
		if (em->async_copy)
			line(em, "ts_cp_async_wait();");
		line(em, em->d->barrier);
		return;
	case IR_S_PROVIDE: case IR_S_REALIZE: case IR_STMT_KIND_COUNT:
		break;
	}
	fail(em, TS_ERR_INVALID, "%s is not allowed in lowered code", ir_stmt_kind_name(s->kind));
}

/* ---- launch configuration and shared memory (CUDA) ----------------------- */

static void collect(emitter *em, const ts_stmt *s, unsigned bound);

static void collect_thread(emitter *em, const ts_stmt *s, unsigned bound)
{
	ts_thread_tag t = s->u.for_.thread;
	const char *v = s->u.for_.var->u.var.name;
	int64_t ext;
	if (t < TS_BLOCK_X || t > TS_THREAD_Z) {
		fail(em, TS_ERR_INVALID, "loop %s is a thread loop without a thread tag", v);
		return;
	}
	if (!ir_is_const_int(s->u.for_.extent, &ext)) {
		fail(em, TS_ERR_UNSUPPORTED, "loop %s bound to %s needs a constant extent", v,
		     ts_thread_tag_name(t));
		return;
	}
	/* A loop bound to an index that an enclosing loop is bound to already
	 * (a stage computed at a thread loop, fetching cooperatively) uses the
	 * same hardware index: it must not need more of it than the enclosing
	 * loop provides, or threads outside that loop's guard would be needed. */
	if ((bound & (1u << t)) && ext > em->bound_ext[t]) {
		fail(em, TS_ERR_INVALID,
		     "loop %s is bound to %s with extent %lld inside a loop bound to it with extent %lld",
		     v, ts_thread_tag_name(t), (long long)ext, (long long)em->bound_ext[t]);
		return;
	}
	int64_t *dim = t >= TS_THREAD_X ? &em->launch.block[tag_dim(t)] : &em->launch.grid[tag_dim(t)];
	if (ext > *dim)
		*dim = ext;
	int64_t saved = em->bound_ext[t];
	em->bound_ext[t] = ext;
	collect(em, s->u.for_.body, bound | (1u << t));
	em->bound_ext[t] = saved;
}

/* A shared buffer's bytes in the block's shared memory: each one 16-byte
 * aligned (float4 and ldmatrix accesses); the sizes are bounded by the
 * arena's 2^40 bytes, so no overflow. */
static int64_t shared_slot_bytes(const ts_buffer *b)
{
	return (b->size * ts_dtype_bytes(b->dtype) + 15) / 16 * 16;
}

static void collect_shared(emitter *em, ts_buffer *b)
{
	for (int i = 0; i < em->nshared; i++)
		if (em->shared[i] == b)
			return;
	if (em->nshared == (int)TS_COUNT_OF(em->shared)) {
		fail(em, TS_ERR_UNSUPPORTED, "more than %d shared buffers", em->nshared);
		return;
	}
	em->shared[em->nshared++] = b;
	em->launch.static_shared_bytes += shared_slot_bytes(b);
}

static void collect(emitter *em, const ts_stmt *s, unsigned bound)
{
	if (!s || em->failed)
		return;
	switch (s->kind) {
	case IR_S_FOR:
		if (s->u.for_.kind == TS_FOR_THREAD)
			collect_thread(em, s, bound);
		else
			collect(em, s->u.for_.body, bound);
		return;
	case IR_S_ALLOCATE:
		if (s->u.alloc.buf->scope == TS_SCOPE_SHARED)
			collect_shared(em, s->u.alloc.buf);
		collect(em, s->u.alloc.body, bound);
		return;
	case IR_S_IF:
		collect(em, s->u.if_.then_s, bound);
		collect(em, s->u.if_.else_s, bound);
		return;
	case IR_S_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			collect(em, s->u.seq.s[i], bound);
		return;
	case IR_S_LET:
		collect(em, s->u.let.body, bound);
		return;
	case IR_S_STORE: case IR_S_PROVIDE: case IR_S_REALIZE: case IR_S_EVALUATE:
	case IR_S_BARRIER: case IR_S_PREFETCH: case IR_STMT_KIND_COUNT:
		return;
	}
}

static void check_launch(emitter *em)
{
	const cg_launch *l = &em->launch;
	int64_t threads = l->block[0] * l->block[1] * l->block[2];
	if (threads > CG_CUDA_MAX_THREADS)
		fail(em, TS_ERR_UNSUPPORTED, "%lld threads per block (%lld x %lld x %lld), the limit is %d",
		     (long long)threads, (long long)l->block[0], (long long)l->block[1],
		     (long long)l->block[2], CG_CUDA_MAX_THREADS);
	else if (l->block[2] > CG_CUDA_MAX_BLOCK_Z)
		fail(em, TS_ERR_UNSUPPORTED, "a block %lld threads deep in z (threadIdx.z), the limit is %d",
		     (long long)l->block[2], CG_CUDA_MAX_BLOCK_Z);
	else if (l->grid[0] > INT32_MAX || l->grid[1] > 65535 || l->grid[2] > 65535)
		fail(em, TS_ERR_UNSUPPORTED, "grid (%lld, %lld, %lld) exceeds the CUDA limits",
		     (long long)l->grid[0], (long long)l->grid[1], (long long)l->grid[2]);
	else if (l->static_shared_bytes > CG_CUDA_MAX_SHARED)
		fail(em, TS_ERR_UNSUPPORTED, "%lld bytes of shared memory per block, more than any GPU "
		     "gives one (%d, sm_90)", (long long)l->static_shared_bytes, CG_CUDA_MAX_SHARED);
	else if (l->static_shared_bytes > CG_CUDA_MAX_STATIC_SHARED) {
		/* above 48 KB a kernel may only take shared memory dynamically:
		 * the buffers are carved from one extern array (assemble), the
		 * launch asks for the bytes, and the module allows them
		 * (cuFuncSetAttribute) */
		em->launch.shared_bytes = em->launch.static_shared_bytes;
		em->launch.static_shared_bytes = 0;
	}
}

/* ---- the function ---------------------------------------------------------- */

/* The body of a _z division helper: ir.h's answers for b = 0 and b = -1
 * first, then the operator, which can no longer trap.  0 - a is computed
 * unsigned so that MIN / -1 wraps instead of overflowing. */
static void emit_div_z(emitter *em, ts_sbuf *sb, int h, int ti)
{
	const char *t = em->d->type[ti];
	bool sg = ti <= T_I64, div = h == H_TRUNCDIV_Z || h == H_FLOORDIV_Z;
	if (!sg) {
		ts_sb_printf(sb, "  return b == 0 ? 0 : a %c b;\n", div ? '/' : '%');
		return;
	}
	if (div)
		ts_sb_printf(sb, "  if (b == 0)\n    return 0;\n"
				 "  if (b == -1)\n    return (%s)(0 - (%s)a);\n", t,
			     em->d->type[ti - T_I8 + T_U8]);
	else
		ts_sb_puts(sb, "  if (b == 0 || b == -1)\n    return 0;\n");
	switch (h) {
	case H_TRUNCDIV_Z: ts_sb_puts(sb, "  return a / b;\n"); break;
	case H_TRUNCMOD_Z: ts_sb_puts(sb, "  return a % b;\n"); break;
	case H_FLOORDIV_Z:
		ts_sb_printf(sb, "  %s q = a / b;\n"
				 "  return (q * b != a && (a < 0) != (b < 0)) ? q - 1 : q;\n", t);
		break;
	default:
		ts_sb_printf(sb, "  %s r = a %% b;\n"
				 "  return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;\n", t);
		break;
	}
}

/* The body of a cast helper: NaN is 0, values beyond the type saturate
 * (ir.h).  The bounds compared with are powers of two, exact in float. */
static void emit_cast(emitter *em, ts_sbuf *sb, int h, int ti)
{
	static const char *const lo[T_COUNT] = {
		[T_I8] = "-128", [T_I16] = "-32768", [T_I32] = "(-2147483647 - 1)",
		[T_I64] = "(-9223372036854775807LL - 1)"};
	static const char *const hi[T_COUNT] = {
		[T_I8] = "127", [T_I16] = "32767", [T_I32] = "2147483647",
		[T_I64] = "9223372036854775807LL", [T_U8] = "255", [T_U16] = "65535",
		[T_U32] = "4294967295u", [T_U64] = "18446744073709551615ull"};
	static const int bits[T_COUNT] = {8, 16, 32, 64, 8, 16, 32, 64};
	const char *f = h == H_CAST_F32 ? "f" : "";
	bool sg = ti <= T_I64;
	double end = ldexp(1.0, sg ? bits[ti] - 1 : bits[ti]); /* max + 1 */
	if (sg)
		ts_sb_printf(sb, "  if (a != a)\n    return 0;\n"
				 "  if (a <= -%.1f%s)\n    return %s;\n", end, f, lo[ti]);
	else
		ts_sb_puts(sb, "  if (!(a > 0))\n    return 0;\n"); /* NaN too */
	ts_sb_printf(sb, "  if (a >= %.1f%s)\n    return %s;\n  return (%s)a;\n", end, f, hi[ti],
		     em->d->type[ti]);
}

static void emit_helper(emitter *em, ts_sbuf *sb, int h, int ti)
{
	const char *t = em->d->type[ti], *q = em->d->helper_qual, *sx = type_suffix[ti];
	if (h == H_CAST_F32 || h == H_CAST_F64)
		ts_sb_printf(sb, "\n%s %s ts_%s_%s(%s a", q, t, helper_name[h], sx,
			     em->d->type[h == H_CAST_F32 ? T_F32 : T_F64]);
	else
		ts_sb_printf(sb, "\n%s %s ts_%s_%s(%s a", q, t, helper_name[h], sx, t);
	if (h != H_SIGMOID && h != H_CAST_F32 && h != H_CAST_F64)
		ts_sb_printf(sb, ", %s b", t);
	ts_sb_puts(sb, ")\n{\n");
	switch (h) {
	case H_FLOORDIV:
		ts_sb_printf(sb, "  %s q = a / b;\n"
				 "  return (q * b != a && (a < 0) != (b < 0)) ? q - 1 : q;\n", t);
		break;
	case H_FLOORMOD:
		ts_sb_printf(sb, "  %s r = a %% b;\n"
				 "  return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;\n", t);
		break;
	case H_MIN: case H_MAX:
		/* floats as ir.h says: a NaN operand (signalling too, which libm's
		 * fmin returns as NaN) is ignored; equal operands give b */
		if (ti == T_F32 || ti == T_F64)
			ts_sb_puts(sb, "  if (b != b)\n    return a;\n  if (a != a)\n    return b;\n");
		ts_sb_printf(sb, "  return a %c b ? a : b;\n", h == H_MIN ? '<' : '>');
		break;
	case H_SIGMOID:
		if (ti == T_F32)
			ts_sb_puts(sb, "  return 1.0f / (1.0f + expf(-a));\n");
		else
			ts_sb_puts(sb, "  return 1.0 / (1.0 + exp(-a));\n");
		break;
	case H_TRUNCDIV_Z: case H_TRUNCMOD_Z: case H_FLOORDIV_Z: case H_FLOORMOD_Z:
		emit_div_z(em, sb, h, ti);
		break;
	case H_CAST_F32: case H_CAST_F64:
		emit_cast(em, sb, h, ti);
		break;
	case H_FSUB:
		ts_sb_puts(sb, "  return a - b;\n");
		break;
	case H_ADD_WRAP: case H_SUB_WRAP: case H_MUL_WRAP: {
		const char *u = em->d->type[ti - T_I8 + T_U8];
		ts_sb_printf(sb, "  return (%s)((%s)a %c (%s)b);\n", em->d->type[ti], u,
			     "+-*"[h - H_ADD_WRAP], u);
		break;
	}
	}
	ts_sb_puts(sb, "}\n");
}

static void signature(emitter *em, ts_sbuf *sb)
{
	const cg_launch *l = &em->launch;
	ts_sb_printf(sb, "\n%svoid ", em->d->func_qual);
	if (em->d->launch_bounds)
		ts_sb_printf(sb, "__launch_bounds__(%lld) ",
			     (long long)(l->block[0] * l->block[1] * l->block[2]));
	ts_sb_printf(sb, "%s(", em->fname);
	for (int i = 0; i < em->f->nparams; i++) {
		const ts_buffer *b = em->f->params[i];
		ts_sb_printf(sb, "%s%s *%s %s", i ? ", " : "", ctype(em, b->dtype), em->d->restrict_kw,
			     lookup(em, b));
	}
	ts_sb_puts(sb, em->f->nparams ? ")\n{\n" : "void)\n{\n");
}

static void packed(emitter *em, ts_sbuf *sb)
{
	ts_sb_printf(sb, "\nint32_t %s_packed(void **args)\n{\n", em->fname);
	if (em->f->nparams == 0)
		ts_sb_puts(sb, "  (void)args;\n");
	ts_sb_printf(sb, "  %s(", em->fname);
	for (int i = 0; i < em->f->nparams; i++) {
		const char *t = ctype(em, em->f->params[i]->dtype);
		ts_sb_printf(sb, "%s(%s *)args[%d]", i ? ", " : "", t, i);
	}
	ts_sb_puts(sb, ");\n  return 0;\n}\n");
}

static void define_params(emitter *em)
{
	for (int i = 0; i < em->f->nparams; i++) {
		ts_buffer *b = em->f->params[i];
		if (!b || lookup(em, b)) {
			fail(em, TS_ERR_INVALID, "parameter %d is %s", i,
			     b ? "given twice" : "NULL");
			return;
		}
		ctype(em, b->dtype);
		define(em, b, b->name);
	}
}

/* The 16-bit float conversions: float16 as the reference evaluator
 * rounds (to nearest even, overflow to infinity) in plain C, with PTX's
 * cvt on a GPU; bfloat16 by rounding the float's upper half. */
static const char *const conv16_c[2][C16_COUNT] = {
	{"float ts_f16_to_f32(uint16_t h)\n{\n"
	 "  int e = (h >> 10) & 0x1f;\n"
	 "  float f = e == 0 ? ldexpf((float)(h & 0x3ff), -24)\n"
	 "          : e == 31 ? ((h & 0x3ff) ? NAN : INFINITY)\n"
	 "          : ldexpf((float)((h & 0x3ff) | 0x400), e - 25);\n"
	 "  return (h >> 15) ? -f : f;\n}\n",
	 "uint16_t ts_f32_to_f16(float f)\n{\n"
	 "  uint16_t sign = signbit(f) ? 0x8000 : 0;\n"
	 "  if (isnan(f))\n    return sign | 0x7e00;\n"
	 "  float a = fabsf(f);\n"
	 "  if (a >= 65520.0f)\n    return sign | 0x7c00;\n"
	 "  if (a < 0x1p-25f)\n    return sign;\n"
	 "  int e;\n  frexpf(a, &e);\n  int exp = e + 14;\n"
	 "  if (exp <= 0) /* subnormal: units of 2^-24 */\n"
	 "    return sign | (uint16_t)nearbyintf(ldexpf(a, 24));\n"
	 "  uint32_t man = (uint32_t)nearbyintf(ldexpf(a, 11 - e));\n"
	 "  if (man == 2048) {\n    man = 1024;\n    exp++;\n  }\n"
	 "  if (exp >= 31)\n    return sign | 0x7c00;\n"
	 "  return sign | (uint16_t)(exp << 10) | (uint16_t)(man & 0x3ff);\n}\n",
	 "float ts_rh_f16(float x)\n{\n  return ts_f16_to_f32(ts_f32_to_f16(x));\n}\n"},
	{"float ts_bf16_to_f32(uint16_t h)\n{\n"
	 "  union { uint32_t u; float f; } v = {(uint32_t)h << 16};\n  return v.f;\n}\n",
	 "uint16_t ts_f32_to_bf16(float f)\n{\n"
	 "  union { float f; uint32_t u; } v = {f};\n"
	 "  if (isnan(f))\n    return (uint16_t)((v.u >> 16) | 0x40);\n"
	 "  v.u += 0x7fff + ((v.u >> 16) & 1); /* to nearest even */\n"
	 "  return (uint16_t)(v.u >> 16);\n}\n",
	 "float ts_rh_bf16(float x)\n{\n  return ts_bf16_to_f32(ts_f32_to_bf16(x));\n}\n"},
};
static const char *const conv16_cuda[2][C16_COUNT] = {
	{"float ts_f16_to_f32(unsigned short h)\n{\n"
	 "  float f;\n  asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h));\n  return f;\n}\n",
	 "unsigned short ts_f32_to_f16(float f)\n{\n"
	 "  unsigned short h;\n  asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f));\n  return h;\n}\n",
	 "float ts_rh_f16(float x)\n{\n  return ts_f16_to_f32(ts_f32_to_f16(x));\n}\n"},
	{"float ts_bf16_to_f32(unsigned short h)\n{\n"
	 "  return __uint_as_float((unsigned int)h << 16);\n}\n",
	 "unsigned short ts_f32_to_bf16(float f)\n{\n"
	 "  unsigned int u = __float_as_uint(f);\n"
	 "  if (f != f)\n    return (unsigned short)((u >> 16) | 0x40);\n"
	 "  u += 0x7fff + ((u >> 16) & 1); /* to nearest even */\n"
	 "  return (unsigned short)(u >> 16);\n}\n",
	 "float ts_rh_bf16(float x)\n{\n  return ts_bf16_to_f32(ts_f32_to_bf16(x));\n}\n"},
};

static void emit_conv16(emitter *em, ts_sbuf *sb)
{
	const char *const (*text)[C16_COUNT] = em->d->bind_threads ? conv16_cuda : conv16_c;
	for (int bf = 0; bf < 2; bf++)
		for (int c = 0; c < C16_COUNT; c++)
			if (em->conv16[bf][c])
				ts_sb_printf(sb, "\n%s %s", em->d->helper_qual, text[bf][c]);
}

/* What a kernel with tensorized nests needs: mma.sync m16n8k16 is sm_80's.
 * ts_ldsm_x4 loads four 8 x 8 matrices of 16-bit elements from shared
 * memory, each lane giving one row's address (ldmatrix wants a shared
 * address: the generic pointer is converted). */
#define LDSM(suffix, qual)                                                             \
	"static __device__ __forceinline__ void ts_ldsm_x4" suffix "(unsigned *r, const void *p)\n{\n" \
	"  asm volatile(\"{ .reg .u64 a; .reg .u32 s; cvta.to.shared.u64 a, %4; cvt.u32.u64 s, a; \"\n" \
	"               \"ldmatrix.sync.aligned.m8n8.x4" qual ".shared.b16 {%0, %1, %2, %3}, [s]; }\"\n" \
	"               : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"l\"(p) : \"memory\");\n}\n"
static const char mma_head[] =
	"#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800\n"
	"#error \"tensorize: the MMA (mma.sync m16n8k16) needs sm_80 or newer\"\n"
	"#endif\n"
	"static __device__ __forceinline__ unsigned ts_laneid(void)\n{\n"
	"  unsigned r;\n  asm(\"mov.u32 %0, %%laneid;\" : \"=r\"(r));\n  return r;\n}\n"
	"static __device__ __forceinline__ unsigned ts_pack16(unsigned short lo, unsigned short hi)\n{\n"
	"  return (unsigned)lo | ((unsigned)hi << 16);\n}\n"
	LDSM("", "") LDSM("_trans", ".trans");

/* What a kernel with double-buffered shared buffers needs: from sm_80 on,
 * cp.async copies from global to shared memory that run while the thread
 * goes on, and the wait for them (cp.async.wait_all) that every barrier
 * is preceded by, so what the block reads after a barrier has arrived
 * (cuda_sync.c puts a barrier between every write of a shared buffer and
 * its reads).  16-byte copies bypass L1 (.cg), as a tile is read from
 * shared memory; 4- and 8-byte ones can only go through it (.ca).
 * Before sm_80, plain copies and no wait. */
#define CP_ASYNC(n, cache, type)                                                                \
	"static __device__ __forceinline__ void ts_cp_async" #n "(void *d, const void *s)\n{\n"   \
	"#if __CUDA_ARCH__ >= 800\n"                                                            \
	"  asm volatile(\"{ .reg .u64 a, g; .reg .u32 p; cvta.to.shared.u64 a, %0; "              \
	"cvt.u32.u64 p, a; cvta.to.global.u64 g, %1; \"\n"                                       \
	"               \"cp.async." cache ".shared.global [p], [g], " #n "; }\" "                 \
	":: \"l\"(d), \"l\"(s) : \"memory\");\n"                                                 \
	"#else\n"                                                                               \
	"  *(" type " *)d = *(const " type " *)s;\n"                                             \
	"#endif\n}\n"
static const char async_head[] =
	CP_ASYNC(4, "ca", "unsigned") CP_ASYNC(8, "ca", "uint2") CP_ASYNC(16, "cg", "uint4")
	"static __device__ __forceinline__ void ts_cp_async_wait(void)\n{\n"
	"#if __CUDA_ARCH__ >= 800\n"
	"  asm volatile(\"cp.async.wait_all;\" ::: \"memory\");\n"
	"#endif\n}\n";

static void assemble(emitter *em, ts_sbuf *sb)
{
	const cg_launch *l = &em->launch;
	if (em->d->bind_threads)
		ts_sb_printf(sb, "/* tessera: %s, grid (%lld, %lld, %lld), block (%lld, %lld, %lld), "
			     "%lld bytes of shared memory%s */\n", em->fname, (long long)l->grid[0],
			     (long long)l->grid[1], (long long)l->grid[2], (long long)l->block[0],
			     (long long)l->block[1], (long long)l->block[2],
			     (long long)(l->static_shared_bytes + l->shared_bytes),
			     l->shared_bytes ? " (dynamic)" : "");
	else
		ts_sb_printf(sb, "/* tessera: %s */\n", em->fname);
	ts_sb_puts(sb, em->d->file_head);
	if (em->mma.nnest)
		ts_sb_puts(sb, mma_head);
	if (em->async_copy)
		ts_sb_puts(sb, async_head);
	if (em->tf32) /* round_tf32 as ir_round_tf32 */
		ts_sb_puts(sb, em->d->bind_threads
			? "static __device__ __forceinline__ float ts_round_tf32(float a)\n{\n"
			  "  unsigned u = __float_as_uint(a);\n"
			  "  if ((u & 0x7f800000u) != 0x7f800000u)\n    u = (u + 0x1000u) & 0xffffe000u;\n"
			  "  return __uint_as_float(u);\n}\n"
			: "static inline float ts_round_tf32(float a)\n{\n"
			  "  union { float f; uint32_t u; } v = {a};\n"
			  "  if ((v.u & 0x7f800000u) != 0x7f800000u)\n    v.u = (v.u + 0x1000u) & 0xffffe000u;\n"
			  "  return v.f;\n}\n");
	emit_conv16(em, sb);
	for (int h = 0; h < H_COUNT; h++)
		for (int t = 0; t < T_COUNT; t++)
			if (em->helpers[h][t])
				emit_helper(em, sb, h, t);
	signature(em, sb);
	if (l->shared_bytes && em->nshared)
		ts_sb_printf(sb, "  extern %s__align__(16) unsigned char ts_shared[];\n",
			     em->d->shared_qual);
	int64_t at = 0;
	for (int i = 0; i < em->nshared; i++) {
		const ts_buffer *b = em->shared[i];
		const char *type = ctype(em, b->dtype);
		if (l->shared_bytes) { /* dynamic: a slice of ts_shared, 16-byte aligned */
			ts_sb_printf(sb, "  %s *const %s = (%s *)&ts_shared[%lld];\n", type, lookup(em, b),
				     type, (long long)at);
			at += shared_slot_bytes(b);
			continue;
		}
		ts_sb_printf(sb, "  %s", em->d->shared_qual);
		ts_sb_printf(sb, em->d->align_fmt, 16);
		ts_sb_printf(sb, "%s %s[%lld];\n", type, lookup(em, b), (long long)b->size);
	}
	ts_sb_puts(sb, ts_sb_str(&em->out));
	ts_sb_puts(sb, "}\n");
	if (em->d->packed_wrapper)
		packed(em, sb);
}

/* The lane's place in the MMA fragments: group g = laneid / 4 and t =
 * laneid % 4. */
static void lane_vars(emitter *em)
{
	const cg_mma *m = &em->mma;
	const char *g = define(em, m->g, "mma_g"), *t = define(em, m->t, "mma_t");
	const char *r = define(em, m->r, "mma_r"), *q0 = define(em, m->q0, "mma_q0");
	const char *q1 = define(em, m->q1, "mma_q1");
	set_range(em, m->g, 0, 7);
	set_range(em, m->t, 0, 3);
	set_range(em, m->r, 0, 7);
	set_range(em, m->q0, 0, 1);
	set_range(em, m->q1, 0, 1);
	if (g && t && r && q0 && q1)
		line(em, ts_sprintf(em->ctx, "const int %s = (int)(ts_laneid() >> 2), %s = (int)(ts_laneid() & 3), "
				    "%s = (int)(ts_laneid() & 7), %s = (int)((ts_laneid() >> 3) & 1), "
				    "%s = (int)(ts_laneid() >> 4);", g, t, r, q0, q1));
}

static const char *emit(ts_ctx *ctx, const ts_func *f, const dialect *d, cg_launch *launch)
{
	if (!ctx)
		return NULL;
	if (!f || !f->name || !f->body || (f->nparams > 0 && !f->params)) {
		ts_error(ctx, TS_ERR_INVALID, "%s: function is NULL or incomplete", d->name);
		return NULL;
	}
	if (f->ctx && f->ctx != ctx) {
		ts_error(ctx, TS_ERR_INVALID, "%s: function %s belongs to another context", d->name,
			 f->name);
		return NULL;
	}
	emitter em = {.ctx = ctx, .d = d, .f = f, .comp = -1, .indent = 1, .ranges = {.ctx = ctx},
		      .launch = {{1, 1, 1}, {1, 1, 1}, 0, 0}};
	em.fname = sanitize(ctx, f->name);
	if (!em.fname)
		return NULL;
	define_params(&em);
	if (d->bind_threads) {
		collect(&em, f->body, 0);
		check_launch(&em);
		for (int i = 0; i < em.nshared; i++) {
			define(&em, em.shared[i], em.shared[i]->name);
			em.async_copy |= em.shared[i]->double_buffer;
		}
		if (!em.failed && cg_mma_scan(ctx, f->body, em.launch.block, &em.mma) != TS_OK)
			em.failed = true;
		if (!em.failed && em.mma.nnest)
			lane_vars(&em);
	}
	stmt(&em, f->body);
	ts_sbuf sb = {0};
	if (!em.failed)
		assemble(&em, &sb);
	const char *r = NULL;
	if (!em.failed && (sb.oom || em.out.oom))
		ts_error(ctx, TS_ERR_NOMEM, "%s: %s: out of memory", d->name, em.fname);
	else if (!em.failed)
		r = ts_strdup(ctx, ts_sb_str(&sb));
	ts_sb_free(&sb);
	ts_sb_free(&em.out);
	if (r && launch)
		*launch = em.launch;
	return r;
}

const char *cg_emit_c(ts_ctx *ctx, const ts_func *f)
{
	return emit(ctx, f, &dialect_c, NULL);
}

const char *cg_emit_cuda(ts_ctx *ctx, const ts_func *f, cg_launch *launch)
{
	return emit(ctx, f, &dialect_cuda, launch);
}
