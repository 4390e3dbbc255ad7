/*
 * c_emit.c - plain C and CUDA C from the loop IR (contract in c_emit.h).
 *
 * One walker emits both dialects; everything that differs between them
 * (qualifiers, restrict spelling, type and math names, thread indices,
 * shared memory, barriers, loop pragmas) is a field of the `dialect` table,
 * so adding a dialect is adding a table.  What only kernels have (thread
 * loops, guarded stores, vector accesses, tensor cores, the launch) is in
 * c_emit_cuda.c, the text around the body in c_emit_file.c
 * (c_emit_impl.h).
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
#include "c_emit_impl.h"
#include "eval.h"
#include "ident.h"

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


static void expr(emitter *em, const ts_expr *e, int min_prec);

/* ---- errors and names --------------------------------------------------- */

__attribute__((format(printf, 3, 4)))
void cg_ce_fail(emitter *em, ts_status st, const char *fmt, ...)
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
const char *cg_ce_define(emitter *em, const void *key, const char *base)
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

const char *cg_ce_lookup(const emitter *em, const void *key)
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
const char *cg_ce_ctype(emitter *em, ts_dtype t)
{
	int i = type_index(t);
	if (i < 0) {
		char b[24];
		cg_ce_fail(em, TS_ERR_UNSUPPORTED, "dtype %s is not supported",
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
	return is_f16x(t) ? em->d->type[T_F32] : cg_ce_ctype(em, t);
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
		cg_ce_ctype(em, t);
		return "ts_invalid";
	}
	em->helpers[h][i] = true;
	return ts_sprintf(em->ctx, "ts_%s_%s", cg_ce_helper_name[h], cg_ce_type_suffix[i]);
}

/* ---- variable ranges ---------------------------------------------------- */

/* Records that the variable key, just defined, lies in [lo, hi]. */
void cg_ce_set_range(emitter *em, const void *key, int64_t lo, int64_t hi)
{
	cg_ranges_set(&em->ranges, key, (ir_interval){lo, hi});
}

/* The interval of the integer e over the ranges of the variables in scope. */
ir_interval cg_ce_bound(const emitter *em, const ts_expr *e)
{
	return cg_ranges_bound(&em->ranges, e);
}

static bool bounded(ir_interval iv)
{
	return cg_bounded(iv);
}

/* Gives v, just defined, the range [min, min + extent - 1] of a loop over
 * the bounds of min and extent (none where they are unbounded). */
void cg_ce_loop_range(emitter *em, const ts_expr *v, ir_interval min, int64_t ext_max)
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
	return !bounded(cg_ce_bound(em, e));
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

void cg_ce_put(emitter *em, const char *s)
{
	ts_sb_puts(&em->out, s);
}

static void int_imm(emitter *em, const ts_expr *e)
{
	int64_t v = e->u.int_imm;
	if (e->dtype.code == TS_TYPE_BOOL) {
		cg_ce_put(em, v ? "true" : "false");
	} else if (ts_dtype_eq(e->dtype, ts_int32)) {
		if (v == INT32_MIN)
			cg_ce_put(em, "(-2147483647 - 1)");
		else
			ts_sb_printf(&em->out, "%lld", (long long)v);
	} else if (e->dtype.code == TS_TYPE_UINT) {
		ts_sb_printf(&em->out, "((%s)%lluULL)", cg_ce_ctype(em, e->dtype), (unsigned long long)v);
	} else if (v == INT64_MIN) {
		ts_sb_printf(&em->out, "((%s)(-9223372036854775807LL - 1))", cg_ce_ctype(em, e->dtype));
	} else {
		ts_sb_printf(&em->out, "((%s)%lldLL)", cg_ce_ctype(em, e->dtype), (long long)v);
	}
}

static void float_imm(emitter *em, const ts_expr *e)
{
	bool f32 = e->dtype.bits == 32 || is_f16x(e->dtype);
	if (!is_f16x(e->dtype) && e->dtype.bits != 32 && e->dtype.bits != 64) {
		cg_ce_ctype(em, e->dtype);
		return;
	}
	/* the dtype's value, as the evaluators read the constant (ir.h: a
	 * 16-bit float through float32), written as a float: the digits of the
	 * unrounded double would round a second time in the C compiler (or
	 * directly to 16 bits), and one below float's range is a literal it
	 * warns about */
	double v = ir_cast_float_to_float(ts_dtype_element(e->dtype), e->u.float_imm);
	if (isnan(v)) {
		cg_ce_put(em, f32 ? em->d->nan32 : em->d->nan64);
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

void cg_ce_sub(emitter *em, const ts_expr *e, int min_prec)
{
	expr(em, e, min_prec);
}

static void call2(emitter *em, const char *fn, const ts_expr *a, const ts_expr *b)
{
	ts_sb_printf(&em->out, "%s(", fn);
	cg_ce_sub(em, a, 0);
	if (b) {
		cg_ce_put(em, ", ");
		cg_ce_sub(em, b, 0);
	}
	cg_ce_put(em, ")");
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
		ts_sb_printf(&em->out, "((%s)((%s)", cg_ce_ctype(em, t), u);
		cg_ce_sub(em, a, P_UNARY);
		ts_sb_printf(&em->out, "%s(%s)", infix_op(e->kind), u);
		cg_ce_sub(em, b, P_UNARY);
		cg_ce_put(em, "))");
		return;
	}
	if (rounds16(e)) {
		int op = e->kind == IR_ADD || e->kind == IR_SUB ? P_ADD : P_MUL;
		ts_sb_printf(&em->out, "%s(", conv16(em, t, C16_ROUND));
		cg_ce_sub(em, a, op);
		cg_ce_put(em, infix_op(e->kind));
		cg_ce_sub(em, b, op + 1);
		cg_ce_put(em, ")");
		return;
	}
	int p = prec(em, e), lp = p, rp = p + 1;
	if (ir_is_compare(e->kind))
		lp = rp = P_ADD; /* (a < b) == c reads ambiguously */
	else if (e->kind == IR_OR)
		lp = a->kind == IR_OR ? P_OR : P_EQ, rp = P_EQ;
	cg_ce_sub(em, a, lp);
	cg_ce_put(em, infix_op(e->kind));
	cg_ce_sub(em, b, rp);
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
		cg_ce_ctype(em, t);
		return;
	}
	if (h16)
		ts_sb_printf(&em->out, "%s(", conv16(em, t, C16_ROUND));
	call2(em, fn, e->u.call.args[0], e->u.call.nargs > 1 ? e->u.call.args[1] : NULL);
	if (h16)
		cg_ce_put(em, ")");
}

/* Whether C computes the ramp e's lanes, base + lane*stride, without
 * overflow: every lane inside the dtype (bound), and lane*stride inside
 * int, where the lane loop's int32 variable multiplies it. */
static bool ramp_fits(const emitter *em, const ts_expr *e)
{
	int64_t span;
	return bounded(cg_ce_bound(em, e)) &&
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
			cg_ce_fail(em, ts_last_status(em->ctx), "%s", ts_last_error(em->ctx));
			return;
		}
		bool lane = em->comp < 0 && (st == 1 || st == -1); /* base +- lane */
		ts_sb_printf(&em->out, "%s(", helper(em, lane && st < 0 ? H_SUB_WRAP : H_ADD_WRAP, t));
		cg_ce_sub(em, e->u.ramp.base, 0);
		if (lane) {
			ts_sb_printf(&em->out, ", %s)", em->lane);
			return;
		}
		if (em->comp >= 0)
			cg_ce_put(em, ", ");
		else
			ts_sb_printf(&em->out, ", %s(%s, ", helper(em, H_MUL_WRAP, t), em->lane);
		cg_ce_sub(em, kc, 0);
		cg_ce_put(em, em->comp >= 0 ? ")" : "))");
		return;
	}
	if (em->comp >= 0) {
		int64_t off = st * em->comp;
		cg_ce_sub(em, e->u.ramp.base, off ? P_ADD : 0);
		if (off)
			ts_sb_printf(&em->out, " %c %lld", off < 0 ? '-' : '+',
				     (long long)(off < 0 ? -off : off));
		return;
	}
	if (!em->lane) {
		cg_ce_fail(em, TS_ERR_INTERNAL, "vector expression outside a lane loop");
		return;
	}
	cg_ce_sub(em, e->u.ramp.base, st ? P_ADD : 0);
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
	const char *n = cg_ce_lookup(em, e->u.load.buf);
	if (!n) {
		cg_ce_fail(em, TS_ERR_INVALID, "buffer %s is neither a parameter nor allocated",
			   e->u.load.buf->name);
		return;
	}
	bool h16 = is_f16x(e->u.load.buf->dtype);
	if (h16)
		ts_sb_printf(&em->out, "%s(", conv16(em, e->u.load.buf->dtype, C16_FROM));
	ts_sb_printf(&em->out, "%s[", n);
	cg_ce_sub(em, e->u.load.index, 0);
	cg_ce_put(em, h16 ? "])" : "]");
}

static void var(emitter *em, const ts_expr *e)
{
	const char *n = cg_ce_lookup(em, e);
	if (!n)
		cg_ce_fail(em, TS_ERR_INVALID, "variable %s is used but not defined", e->u.var.name);
	else if (e->dtype.lanes > 1)
		cg_ce_fail(em, TS_ERR_UNSUPPORTED, "vector variable %s", e->u.var.name);
	else
		cg_ce_put(em, n);
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
		cg_ce_put(em, "!");
		cg_ce_sub(em, e->u.un.a, P_UNARY);
		return;
	case IR_CAST:
		if (float_to_int(e)) { /* a 16-bit float's value is a float */
			int bits = e->u.un.a->dtype.bits;
			call2(em, helper(em, bits == 64 ? H_CAST_F64 : H_CAST_F32, ts_dtype_element(e->dtype)),
			      e->u.un.a, NULL);
			return;
		}
		if (to_bool(e)) {
			cg_ce_put(em, "(");
			cg_ce_sub(em, e->u.un.a, P_REL);
			cg_ce_put(em, " != 0)");
			return;
		}
		if (rounds16(e)) { /* a cast to a 16-bit float is a rounding */
			ts_sb_printf(&em->out, "%s((float)", conv16(em, ts_dtype_element(e->dtype), C16_ROUND));
			cg_ce_sub(em, e->u.un.a, P_UNARY);
			cg_ce_put(em, ")");
			return;
		}
		ts_sb_printf(&em->out, "(%s)", vtype(em, e->dtype));
		cg_ce_sub(em, e->u.un.a, P_UNARY);
		return;
	case IR_SELECT:
		cg_ce_put(em, "(");
		cg_ce_sub(em, e->u.select.cond, P_OR + 1);
		cg_ce_put(em, " ? ");
		cg_ce_sub(em, e->u.select.t, P_OR);
		cg_ce_put(em, " : ");
		cg_ce_sub(em, e->u.select.f, P_OR);
		cg_ce_put(em, ")");
		return;
	case IR_CALL: call(em, e); return;
	case IR_LOAD: load(em, e); return;
	case IR_RAMP: ramp_at_lane(em, e); return;
	case IR_BROADCAST: cg_ce_sub(em, e->u.bcast.value, 0); return;
	case IR_READ: case IR_REDUCE: case IR_EXPR_KIND_COUNT:
		break;
	}
	cg_ce_fail(em, TS_ERR_INVALID, "%s is not allowed in lowered code", ir_expr_kind_name(e->kind));
}

static void expr(emitter *em, const ts_expr *e, int min_prec)
{
	if (em->failed)
		return;
	bool paren = prec(em, e) < min_prec;
	if (paren)
		cg_ce_put(em, "(");
	expr_body(em, e);
	if (paren)
		cg_ce_put(em, ")");
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

const char *cg_ce_expr_text(emitter *em, const ts_expr *e)
{
	ts_sbuf saved = capture_begin(em);
	cg_ce_sub(em, e, 0);
	return capture_end(em, saved);
}

/* ---- statements --------------------------------------------------------- */

void cg_ce_line(emitter *em, const char *s)
{
	ts_sb_indent(&em->out, em->indent);
	cg_ce_put(em, s);
	cg_ce_put(em, "\n");
}

void cg_ce_begin_line(emitter *em)
{
	ts_sb_indent(&em->out, em->indent);
}

void cg_ce_block_body(emitter *em, const ts_stmt *body)
{
	em->indent++;
	cg_ce_stmt(em, body);
	em->indent--;
	cg_ce_line(em, "}");
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
		cg_ce_sub(em, s->u.for_.extent, P_REL + 1);
		return;
	}
	cg_ce_sub(em, s->u.for_.min, P_ADD);
	cg_ce_put(em, " + ");
	cg_ce_sub(em, s->u.for_.extent, P_ADD + 1);
}

static void loop_head(emitter *em, const ts_stmt *s, const char *pragma)
{
	const ts_expr *v = s->u.for_.var;
	const char *type = cg_ce_ctype(em, v->dtype);
	/* bounds are read with the names outside the loop */
	const char *min = cg_ce_expr_text(em, s->u.for_.min);
	ts_sbuf saved = capture_begin(em);
	loop_end(em, s);
	const char *end = capture_end(em, saved);
	ir_interval lo = cg_ce_bound(em, s->u.for_.min), ext = cg_ce_bound(em, s->u.for_.extent);
	const char *n = cg_ce_define(em, v, v->u.var.name);
	if (!min || !end || !n)
		return;
	cg_ce_loop_range(em, v, lo, ext.max);
	if (pragma)
		cg_ce_line(em, pragma);
	cg_ce_begin_line(em);
	ts_sb_printf(&em->out, "for (%s %s = %s; %s < %s; ++%s) {", type, n, min, n, end, n);
	if (s->u.for_.kind == TS_FOR_THREAD)
		ts_sb_printf(&em->out, " /* %s */", ts_thread_tag_name(s->u.for_.thread));
	cg_ce_put(em, "\n");
}

static void serial_loop(emitter *em, const ts_stmt *s, const char *pragma)
{
	bool par = s->u.for_.kind == TS_FOR_PARALLEL && pragma;
	loop_head(em, s, pragma);
	em->parallel_depth += par;
	cg_ce_block_body(em, s->u.for_.body);
	em->parallel_depth -= par;
}

static void loop_kind(emitter *em, const ts_stmt *s);

static void for_loop(emitter *em, const ts_stmt *s)
{
	if (s->u.for_.kind == TS_FOR_THREAD && em->d->bind_threads) {
		cg_ce_thread_loop(em, s);
		return;
	}
	/* a loop from a thread index to another takes different values in
	 * different threads */
	unsigned tags = cg_ce_thread_tags(em, s->u.for_.min) | cg_ce_thread_tags(em, s->u.for_.extent);
	int ntdep = cg_ce_tdep_push(em, s->u.for_.var, tags);
	loop_kind(em, s);
	cg_ce_tdep_pop(em, ntdep);
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
			cg_ce_replicated_store(em, s->u.for_.body, cond);
		cg_ce_open_guard(em, cond);
		if (!cg_ce_vector_loop(em, s))
			serial_loop(em, s, d->simd_pragma);
		cg_ce_close_guard(em, cond);
		return;
	}
	case TS_FOR_UNROLLED:
		serial_loop(em, s, d->unroll_pragma);
		return;
	case TS_FOR_TENSORIZED:
		if (d->bind_threads)
			cg_ce_mma_nest(em, s);
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
	       vec_load_slot(em, v) < 0 && cg_ce_lookup(em, v->u.load.buf);
}

/* The value stored into buf: a 16-bit float converted to its bits. */
static void stored_value(emitter *em, const ts_buffer *buf, const ts_expr *v)
{
	bool h16 = is_f16x(buf->dtype);
	if (h16 && em->d->bind_threads && plain_copy(em, buf, v)) {
		/* CUDA: a copy (a cache_read's fetch into shared memory) moves
		 * the bits instead of converting to float and back; the two
		 * differ only for a signaling NaN, which the round trip quiets */
		ts_sb_printf(&em->out, "%s[", cg_ce_lookup(em, v->u.load.buf));
		cg_ce_sub(em, v->u.load.index, 0);
		cg_ce_put(em, "]");
		return;
	}
	if (h16)
		ts_sb_printf(&em->out, "%s(", conv16(em, buf->dtype, C16_TO));
	cg_ce_sub(em, v, 0);
	if (h16)
		cg_ce_put(em, ")");
}

/* A store of a vector: one assignment per lane, in a lane loop. */
static void vector_store(emitter *em, const ts_stmt *s)
{
	const char *l = cg_ce_define(em, s, "l");
	if (!l)
		return;
	cg_ce_line(em, em->d->simd_pragma);
	cg_ce_begin_line(em);
	ts_sb_printf(&em->out, "for (%s %s = 0; %s < %d; ++%s) {\n", em->d->type[T_I32], l, l,
		     s->u.store.index->dtype.lanes, l);
	em->indent++;
	em->lane = l;
	cg_ce_begin_line(em);
	ts_sb_printf(&em->out, "%s[", cg_ce_lookup(em, s->u.store.buf));
	cg_ce_sub(em, s->u.store.index, 0);
	cg_ce_put(em, "] = ");
	stored_value(em, s->u.store.buf, s->u.store.value);
	cg_ce_put(em, ";\n");
	em->lane = NULL;
	em->indent--;
	cg_ce_line(em, "}");
}

static void store(emitter *em, const ts_stmt *s)
{
	if (!cg_ce_lookup(em, s->u.store.buf)) {
		cg_ce_fail(em, TS_ERR_INVALID, "buffer %s is neither a parameter nor allocated",
			   s->u.store.buf->name);
		return;
	}
	if (s->u.store.index->dtype.lanes > 1) {
		vector_store(em, s);
		return;
	}
	const ts_expr *v = s->u.store.value;
	if (plain_copy(em, s->u.store.buf, v) &&
	    cg_ce_async_copy(em, s->u.store.buf, s->u.store.index, v->u.load.buf, v->u.load.index,
			     v->dtype.bits / 8))
		return;
	cg_ce_begin_line(em);
	ts_sb_printf(&em->out, "%s[", cg_ce_lookup(em, s->u.store.buf));
	cg_ce_sub(em, s->u.store.index, 0);
	cg_ce_put(em, "] = ");
	stored_value(em, s->u.store.buf, s->u.store.value);
	cg_ce_put(em, ";\n");
}

/* A hint, so a dialect without one emits nothing. */
static void prefetch(emitter *em, const ts_expr *e)
{
	if (!em->d->prefetch)
		return;
	if (e->kind != IR_LOAD || e->dtype.lanes != 1 || !cg_ce_lookup(em, e->u.load.buf)) {
		cg_ce_fail(em, TS_ERR_INVALID, "prefetch of something other than a scalar load of a buffer in scope");
		return;
	}
	cg_ce_begin_line(em);
	ts_sb_printf(&em->out, "%s(&%s[", em->d->prefetch, cg_ce_lookup(em, e->u.load.buf));
	cg_ce_sub(em, e->u.load.index, 0);
	cg_ce_put(em, "], 0, 3);\n");
}

static void heap_allocate(emitter *em, const ts_stmt *s, const char *type, const char *n)
{
	const ts_buffer *b = s->u.alloc.buf;
	if (em->parallel_depth > 0 || em->nheap == (int)TS_COUNT_OF(em->heap)) {
		cg_ce_fail(em, TS_ERR_UNSUPPORTED,
			   "allocate %s: %lld bytes inside a parallel loop exceed the stack limit of %lld",
			   b->name, (long long)(b->size * ts_dtype_bytes(b->dtype)),
			   (long long)em->d->max_stack_bytes);
		return;
	}
	cg_ce_begin_line(em);
	ts_sb_printf(&em->out, "%s *%s = (%s *)malloc(sizeof(%s) * %lld);\n", type, n, type, type,
		     (long long)b->size);
	cg_ce_begin_line(em);
	ts_sb_printf(&em->out, "if (!%s) {\n", n);
	for (int i = em->nheap - 1; i >= 0; i--) {
		ts_sb_indent(&em->out, em->indent + 1);
		ts_sb_printf(&em->out, "free(%s);\n", em->heap[i]);
	}
	ts_sb_indent(&em->out, em->indent + 1);
	cg_ce_put(em, "return;\n");
	cg_ce_line(em, "}");
	em->heap[em->nheap++] = n;
	cg_ce_stmt(em, s->u.alloc.body);
	em->nheap--;
	cg_ce_begin_line(em);
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
		cg_ce_stmt(em, s->u.alloc.body); /* declared at the top of the kernel */
		return;
	}
	int acc = em->d->bind_threads ? cg_mma_acc_of(&em->mma, b) : -1;
	if (acc >= 0) { /* a tensor-core accumulator: this lane's registers of it */
		const ts_buffer *f = em->mma.frag[acc];
		const char *n = cg_ce_define(em, f, b->name);
		if (!n)
			return;
		cg_ce_line(em, ts_sprintf(em->ctx, "float %s[%lld]; /* %s: %lld elements, 1/32 per lane */", n,
					  (long long)f->size, b->name, (long long)b->size));
		cg_ce_stmt(em, s->u.alloc.body);
		return;
	}
	const char *type = cg_ce_ctype(em, b->dtype);
	const char *n = cg_ce_define(em, b, b->name);
	if (!n)
		return;
	if (b->size * ts_dtype_bytes(b->dtype) > em->d->max_stack_bytes) {
		heap_allocate(em, s, type, n);
		return;
	}
	cg_ce_begin_line(em);
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
		cg_ce_line(em, ts_sprintf(em->ctx, "(void)%s;", n));
	cg_ce_stmt(em, s->u.alloc.body);
}

static void if_branches(emitter *em, const ts_stmt *s);

static void if_stmt(emitter *em, const ts_stmt *s)
{
	unsigned saved = em->cond_tags;
	em->cond_tags |= cg_ce_thread_tags(em, s->u.if_.cond);
	if_branches(em, s);
	em->cond_tags = saved;
}

static void if_branches(emitter *em, const ts_stmt *s)
{
	cg_ce_begin_line(em);
	cg_ce_put(em, "if (");
	cg_ce_sub(em, s->u.if_.cond, 0);
	cg_ce_put(em, ") {\n");
	if (!s->u.if_.else_s) {
		cg_ce_block_body(em, s->u.if_.then_s);
		return;
	}
	em->indent++;
	cg_ce_stmt(em, s->u.if_.then_s);
	em->indent--;
	cg_ce_line(em, "} else {");
	cg_ce_block_body(em, s->u.if_.else_s);
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
		cg_ce_fail(em, TS_ERR_UNSUPPORTED, "vector variable %s", v->u.var.name);
		return;
	}
	if (used) { /* an unused binding has no effect: expressions are pure */
		const char *type = vtype(em, v->dtype);
		const char *value = cg_ce_expr_text(em, s->u.let.value); /* before v's new name */
		ir_interval iv = cg_ce_bound(em, s->u.let.value);
		const char *n = cg_ce_define(em, v, v->u.var.name);
		if (!value || !n)
			return;
		/* a size variable lies in [1, its bound] (ir.h ts_func) */
		cg_ranges_set(&em->ranges, v, cg_let_range(em->f, v, iv));
		cg_ce_begin_line(em);
		ts_sb_printf(&em->out, "const %s %s = %s;\n", type, n, value);
	}
	int ntdep = cg_ce_tdep_push(em, v, used ? cg_ce_thread_tags(em, s->u.let.value) : 0);
	cg_ce_stmt(em, s->u.let.body);
	cg_ce_tdep_pop(em, ntdep);
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
	cg_ce_line(em, "}");
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
			cg_ce_line(em, "{ /* tensorized updates: each fragment loaded once */");
			em->indent++;
			em->in_run = true;
			em->nfrag = 0;
		} else if (c && !is_update(em, c)) {
			end_run(em);
		}
		cg_ce_stmt(em, c);
	}
}

static void seq(emitter *em, const ts_stmt *s)
{
	bool outer = !em->in_run;
	seq_leaves(em, s);
	if (outer)
		end_run(em);
}

void cg_ce_stmt(emitter *em, const ts_stmt *s)
{
	if (!s || em->failed)
		return;
	switch (s->kind) {
	case IR_S_FOR: for_loop(em, s); return;
	case IR_S_STORE: {
		char cond[96];
		cg_ce_replicated_store(em, s, cond);
		cg_ce_open_guard(em, cond);
		store(em, s);
		cg_ce_close_guard(em, cond);
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
			cg_ce_fail(em, TS_ERR_UNSUPPORTED, "vector evaluate");
			return;
		}
		cg_ce_begin_line(em);
		cg_ce_put(em, "(void)(");
		cg_ce_sub(em, s->u.eval.value, 0);
		cg_ce_put(em, ");\n");
		return;
	case IR_S_PREFETCH:
		prefetch(em, s->u.prefetch.value);
		return;
	case IR_S_BARRIER:
		if (!em->d->barrier) {
			cg_ce_fail(em, TS_ERR_UNSUPPORTED, "barrier needs the cuda dialect");
			return;
		}
		if (em->async_copy)
			cg_ce_line(em, "ts_cp_async_wait();");
		cg_ce_line(em, em->d->barrier);
		return;
	case IR_S_PROVIDE: case IR_S_REALIZE: case IR_STMT_KIND_COUNT:
		break;
	}
	cg_ce_fail(em, TS_ERR_INVALID, "%s is not allowed in lowered code", ir_stmt_kind_name(s->kind));
}

/* ---- the function ---------------------------------------------------------- */

static void define_params(emitter *em)
{
	for (int i = 0; i < em->f->nparams; i++) {
		ts_buffer *b = em->f->params[i];
		if (!b || cg_ce_lookup(em, b)) {
			cg_ce_fail(em, TS_ERR_INVALID, "parameter %d is %s", i,
				   b ? "given twice" : "NULL");
			return;
		}
		cg_ce_ctype(em, b->dtype);
		cg_ce_define(em, b, b->name);
	}
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
	if (d->bind_threads)
		cg_ce_kernel_prologue(&em);
	cg_ce_stmt(&em, f->body);
	ts_sbuf sb = {0};
	if (!em.failed)
		cg_ce_assemble(&em, &sb);
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
