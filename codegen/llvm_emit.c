/*
 * llvm_emit.c - builds the LLVM IR of a lowered (and vectorized) function.
 *
 * Layout of the module for a function `f` with buffers A, B, C:
 *
 *   internal i32 @f.inner(float* noalias align 64 %A, ...)  alwaysinline
 *   i32 @f(i8** %args)                       loads args[i], calls f.inner
 *   internal void @f.par0(i64 %begin, i64 %end, i8* %closure)
 *   internal void @f.par0.inner(i64, i64, <captured values>, <noalias ptrs>)
 *
 * The inner functions are inlined by the O3 pipeline; their noalias
 * parameters become alias scopes on the way, so LLVM keeps knowing that the
 * buffers do not overlap.  A parallel loop is outlined into f.parN, which
 * ts_parallel_for calls on chunks [begin, end) of the iteration space; the
 * values it needs (every variable and buffer in scope, and the loop's
 * start) travel in a closure struct on the caller's stack.
 *
 * Conventions: bool values are i1 in registers and i8 in memory; integer
 * arithmetic wraps (no nsw) except the loop counters, which never overflow;
 * a division whose divisor is not a constant other than 0 and -1 is
 * guarded with selects, and float to integer casts use the saturating
 * llvm.fpto[su]i.sat, so that generated code has ir.h's answers and never
 * traps;
 * every function keeps its allocas in its entry block, so an ALLOCATE inside
 * a loop does not grow the stack, and one inside a parallel body is private
 * to each chunk.
 *
 * A function whose schedule vectorizes no loop is emitted with
 * `llvm.loop.vectorize.enable false` on every loop's back edge, so LLVM's
 * loop vectorizer leaves it scalar: an unscheduled or only tiled kernel runs
 * as scalar code, as its schedule says, and the vectorize step of a
 * schedule is where vector code appears.  (The pass builder's
 * loop-vectorization option alone does not stop it in LLVM 14.)  Where the
 * schedule vectorizes some loop, the loops it left serial are not marked
 * and LLVM may still vectorize the innermost ones (conv2d's padding loop
 * when its channel block is 1, say): tessera's schedules count on that.
 */
#include "llvm_internal.h"
#include "ranges.h"
#include "vecmath.h"

#include <llvm-c/DebugInfo.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Local buffers up to this size live on the stack, larger ones in malloc. */
#define MAX_STACK_BYTES (64 * 1024)

typedef struct binding {
	const void *key; /* a variable (ts_expr) or a buffer (ts_buffer) */
	LLVMValueRef value;
	bool buffer;
} binding;

typedef struct emitter {
	ts_ctx *ctx;
	const ts_func *f;
	const char *symbol; /* f->name as a C identifier: the wrapper's name */
	LLVMContextRef c;
	LLVMModuleRef mod;
	bool scalar_loops;      /* f vectorizes nothing: keep every loop scalar */
	LLVMBuilderRef b;       /* the code */
	LLVMBuilderRef ab;      /* allocas, at the end of the entry block */
	LLVMValueRef fn;        /* the function being built ... */
	LLVMBasicBlockRef entry; /* ... and its entry block */
	binding *bind;          /* innermost last */
	int nbind, capbind;
	cg_ranges ranges;       /* of the variables in scope (index_expr64) */
	int nparallel;          /* outlined loops so far, for names */
	ts_status st;
	char vecmath;           /* libmvec variant for vector math, or 0 */
	LLVMTypeRef i1, i8, i32, i64, i8p, void_t;
} emitter;

static void *fail(emitter *em, ts_status st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void *fail(emitter *em, ts_status st, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (em->st == TS_OK)
		em->st = ts_error(em->ctx, st, "llvm(%s): %s", em->f->name, msg);
	return NULL;
}

/* ---- types and small helpers ----------------------------------------------- */

/* The LLVM type of one element (bool: i1 in registers, i8 in memory). */
static LLVMTypeRef elem_type(emitter *em, ts_dtype t, bool memory)
{
	char buf[24];
	switch ((ts_type_code)t.code) {
	case TS_TYPE_INT:
	case TS_TYPE_UINT:
		return LLVMIntTypeInContext(em->c, t.bits);
	case TS_TYPE_BOOL:
		return memory ? em->i8 : em->i1;
	case TS_TYPE_FLOAT:
		if (t.bits == 32)
			return LLVMFloatTypeInContext(em->c);
		if (t.bits == 64)
			return LLVMDoubleTypeInContext(em->c);
		break;
	case TS_TYPE_BFLOAT:
		break;
	case TS_TYPE_HANDLE:
		return em->i8p;
	}
	return fail(em, TS_ERR_UNSUPPORTED,
		    "dtype %s is not supported by the LLVM backend (use float32 or float64)",
		    ts_dtype_str(ts_dtype_element(t), buf));
}

static LLVMTypeRef type_of(emitter *em, ts_dtype t, bool memory)
{
	LLVMTypeRef e = elem_type(em, t, memory);
	return e && t.lanes > 1 ? LLVMVectorType(e, t.lanes) : e;
}

static LLVMValueRef i32c(emitter *em, int64_t v)
{
	return LLVMConstInt(em->i32, (unsigned long long)v, 1);
}

static LLVMValueRef splat(emitter *em, LLVMValueRef s, int lanes)
{
	LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(s), (unsigned)lanes);
	LLVMValueRef v = LLVMBuildInsertElement(em->b, LLVMGetUndef(vt), s, i32c(em, 0), "");
	LLVMValueRef zeros = LLVMConstNull(LLVMVectorType(em->i32, (unsigned)lanes));
	return LLVMBuildShuffleVector(em->b, v, LLVMGetUndef(vt), zeros, "");
}

/* A float constant of type ty (a scalar or a vector of floats). */
static LLVMValueRef fconst(emitter *em, LLVMTypeRef ty, double v)
{
	if (LLVMGetTypeKind(ty) != LLVMVectorTypeKind)
		return LLVMConstReal(ty, v);
	return splat(em, LLVMConstReal(LLVMGetElementType(ty), v), (int)LLVMGetVectorSize(ty));
}

/* An integer constant of type ty (a scalar or a vector of integers). */
static LLVMValueRef iconst(emitter *em, LLVMTypeRef ty, int64_t v)
{
	if (LLVMGetTypeKind(ty) != LLVMVectorTypeKind)
		return LLVMConstInt(ty, (unsigned long long)v, 1);
	LLVMValueRef s = LLVMConstInt(LLVMGetElementType(ty), (unsigned long long)v, 1);
	return splat(em, s, (int)LLVMGetVectorSize(ty));
}

static void add_attr(emitter *em, LLVMValueRef fn, LLVMAttributeIndex idx, const char *name,
		     uint64_t val)
{
	unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
	LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(em->c, kind, val));
}

static LLVMValueRef declare(emitter *em, const char *name, LLVMTypeRef ty)
{
	LLVMValueRef fn = LLVMGetNamedFunction(em->mod, name);
	return fn ? fn : LLVMAddFunction(em->mod, name, ty);
}

static LLVMValueRef call_fn(emitter *em, const char *name, LLVMTypeRef ret, LLVMTypeRef *params,
			    unsigned n, LLVMValueRef *args)
{
	LLVMTypeRef ty = LLVMFunctionType(ret, params, n, 0);
	return LLVMBuildCall2(em->b, ty, declare(em, name, ty), args, n, "");
}

/* A call of the overloaded intrinsic `name` at the given types. */
static LLVMValueRef intrinsic(emitter *em, const char *name, LLVMTypeRef *over, size_t nover,
			      LLVMValueRef *args, unsigned nargs)
{
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	if (!id)
		return fail(em, TS_ERR_INTERNAL, "unknown intrinsic %s", name);
	LLVMValueRef fn = LLVMGetIntrinsicDeclaration(em->mod, id, over, nover);
	LLVMTypeRef ty = LLVMIntrinsicGetType(em->c, id, over, nover);
	return LLVMBuildCall2(em->b, ty, fn, args, nargs, "");
}

/* ---- scopes ------------------------------------------------------------------- */

static bool push(emitter *em, const void *key, LLVMValueRef value, bool buffer)
{
	if (em->nbind == em->capbind) {
		int cap = em->capbind ? em->capbind * 2 : 32;
		binding *nb = ts_alloc_array(em->ctx, (size_t)cap, sizeof(*nb));
		if (!nb)
			return fail(em, TS_ERR_NOMEM, "out of memory"), false;
		if (em->nbind)
			memcpy(nb, em->bind, (size_t)em->nbind * sizeof(*nb));
		em->bind = nb;
		em->capbind = cap;
	}
	em->bind[em->nbind++] = (binding){key, value, buffer};
	return true;
}

static LLVMValueRef lookup(emitter *em, const void *key)
{
	for (int i = em->nbind - 1; i >= 0; i--)
		if (em->bind[i].key == key)
			return em->bind[i].value;
	return NULL;
}

static LLVMValueRef buffer_ptr(emitter *em, const ts_buffer *b)
{
	LLVMValueRef p = lookup(em, b);
	return p ? p : fail(em, TS_ERR_INVALID, "buffer '%s' is neither a parameter nor allocated",
			    b->name);
}

/* ---- expressions ---------------------------------------------------------- */

static LLVMValueRef ex(emitter *em, const ts_expr *e);

static LLVMValueRef ex_var(emitter *em, const ts_expr *e)
{
	LLVMValueRef v = lookup(em, e);
	if (v)
		return v;
	/* a buffer's data handle */
	for (int i = em->nbind - 1; i >= 0; i--)
		if (em->bind[i].buffer && ((const ts_buffer *)em->bind[i].key)->data == e)
			return LLVMBuildBitCast(em->b, em->bind[i].value, em->i8p, "");
	return fail(em, TS_ERR_INVALID, "variable '%s' is used outside its scope", e->u.var.name);
}

static LLVMValueRef compare(emitter *em, ir_expr_kind k, ts_dtype t, LLVMValueRef a, LLVMValueRef b)
{
	static const LLVMRealPredicate fp[] = {LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT,
					       LLVMRealOLE, LLVMRealOGT, LLVMRealOGE};
	static const LLVMIntPredicate si[] = {LLVMIntEQ, LLVMIntNE, LLVMIntSLT,
					      LLVMIntSLE, LLVMIntSGT, LLVMIntSGE};
	static const LLVMIntPredicate ui[] = {LLVMIntEQ, LLVMIntNE, LLVMIntULT,
					      LLVMIntULE, LLVMIntUGT, LLVMIntUGE};
	int i = (int)(k - IR_EQ);
	if (ts_dtype_is_float(t))
		return LLVMBuildFCmp(em->b, fp[i], a, b, "");
	return LLVMBuildICmp(em->b, t.code == TS_TYPE_INT ? si[i] : ui[i], a, b, "");
}

/* Division rounding toward negative infinity: the truncated quotient is one
 * too large when the remainder is non-zero and its sign differs from the
 * divisor's; the floor remainder then moves by one divisor. */
static LLVMValueRef floor_divmod(emitter *em, bool mod, LLVMValueRef a, LLVMValueRef b)
{
	LLVMBuilderRef B = em->b;
	LLVMValueRef zero = LLVMConstNull(LLVMTypeOf(a));
	LLVMValueRef r = LLVMBuildSRem(B, a, b, "");
	LLVMValueRef fix = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntNE, r, zero, ""),
					LLVMBuildICmp(B, LLVMIntSLT, LLVMBuildXor(B, r, b, ""), zero, ""), "");
	if (mod)
		return LLVMBuildAdd(B, r, LLVMBuildSelect(B, fix, b, zero, ""), "");
	LLVMValueRef q = LLVMBuildSDiv(B, a, b, "");
	return LLVMBuildSub(B, q, LLVMBuildZExt(B, fix, LLVMTypeOf(a), ""), "");
}

/* The plain division instructions; they trap on a zero divisor and on
 * MIN / -1, so only divisors known to be neither reach them unguarded. */
static LLVMValueRef divmod(emitter *em, ir_expr_kind k, bool sg, LLVMValueRef a, LLVMValueRef b)
{
	LLVMBuilderRef B = em->b;
	switch (k) {
	case IR_TRUNCDIV: return sg ? LLVMBuildSDiv(B, a, b, "") : LLVMBuildUDiv(B, a, b, "");
	case IR_TRUNCMOD: return sg ? LLVMBuildSRem(B, a, b, "") : LLVMBuildURem(B, a, b, "");
	case IR_FLOORDIV: return sg ? floor_divmod(em, false, a, b) : LLVMBuildUDiv(B, a, b, "");
	default: return sg ? floor_divmod(em, true, a, b) : LLVMBuildURem(B, a, b, "");
	}
}

/* Division with ir.h's answers for any divisor: where b is 0 or -1 the
 * instruction divides by 1 instead, which already gives the remainder
 * wanted (0) for both; the quotient becomes 0 for b = 0 and the wrapping
 * 0 - a for b = -1.  Selects, not branches, so vectors work lane by lane. */
static LLVMValueRef guarded_divmod(emitter *em, ir_expr_kind k, bool sg, LLVMValueRef a,
				   LLVMValueRef b)
{
	LLVMBuilderRef B = em->b;
	LLVMTypeRef ty = LLVMTypeOf(a);
	LLVMValueRef zero = LLVMConstNull(ty);
	LLVMValueRef is0 = LLVMBuildICmp(B, LLVMIntEQ, b, zero, "");
	LLVMValueRef is_m1 = sg ? LLVMBuildICmp(B, LLVMIntEQ, b, LLVMConstAllOnes(ty), "") : NULL;
	LLVMValueRef bad = sg ? LLVMBuildOr(B, is0, is_m1, "") : is0;
	/* frozen: LLVM 14's instcombine folded the vector select of a divisor
	 * with a lane known to be 0 as if every lane were that arm (1 / [0,
	 * 1, 2, 3] gave [0, 1, 1, 1]); a freeze is opaque to that fold */
	LLVMValueRef safe = LLVMBuildFreeze(B, LLVMBuildSelect(B, bad, iconst(em, ty, 1), b, ""), "");
	LLVMValueRef r = divmod(em, k, sg, a, safe);
	if (k == IR_TRUNCMOD || k == IR_FLOORMOD)
		return r;
	if (sg)
		r = LLVMBuildSelect(B, is_m1, LLVMBuildNeg(B, a, ""), r, "");
	return LLVMBuildSelect(B, is0, zero, r, "");
}

/* Whether e's divisor is a constant other than 0 and -1 (in every lane):
 * index arithmetic by split factors, which keeps the plain instructions. */
static bool plain_divisor(const ts_expr *e)
{
	const ts_expr *b = e->u.bin.b;
	if (b->kind == IR_BROADCAST)
		b = b->u.bcast.value;
	return b->kind == IR_INT_IMM && b->u.int_imm != 0 && b->u.int_imm != -1;
}

static bool is_lane_reduce(const ts_expr *e, ts_reduce_op op)
{
	return e->kind == IR_REDUCE && e->u.reduce.naxes == 0 && e->u.reduce.op == op;
}

static LLVMValueRef lane_reduce(emitter *em, const ts_expr *e, LLVMValueRef start);

static LLVMValueRef arith(emitter *em, ir_expr_kind k, ts_dtype t, LLVMValueRef a, LLVMValueRef b)
{
	LLVMBuilderRef B = em->b;
	bool fl = ts_dtype_is_float(t), sg = t.code == TS_TYPE_INT;
	switch (k) {
	case IR_ADD: return fl ? LLVMBuildFAdd(B, a, b, "") : LLVMBuildAdd(B, a, b, "");
	case IR_SUB: return fl ? LLVMBuildFSub(B, a, b, "") : LLVMBuildSub(B, a, b, "");
	case IR_MUL: return fl ? LLVMBuildFMul(B, a, b, "") : LLVMBuildMul(B, a, b, "");
	case IR_DIV: return LLVMBuildFDiv(B, a, b, "");
	case IR_TRUNCDIV: case IR_TRUNCMOD: case IR_FLOORDIV: case IR_FLOORMOD:
		return divmod(em, k, sg, a, b);
	case IR_MIN: case IR_MAX:
		if (fl) { /* minnum/maxnum: a NaN operand is ignored, as ir.h says */
			LLVMTypeRef ty = LLVMTypeOf(a);
			return intrinsic(em, k == IR_MIN ? "llvm.minnum" : "llvm.maxnum", &ty, 1,
					 (LLVMValueRef[]){a, b}, 2);
		}
		return LLVMBuildSelect(B, compare(em, k == IR_MIN ? IR_LT : IR_GT, t, a, b), a, b, "");
	case IR_EQ: case IR_NE: case IR_LT: case IR_LE: case IR_GT: case IR_GE:
		return compare(em, k, t, a, b);
	case IR_AND: return LLVMBuildAnd(B, a, b, "");
	case IR_OR: return LLVMBuildOr(B, a, b, "");
	default: break;
	}
	return fail(em, TS_ERR_INTERNAL, "%s is not a binary operator", ir_expr_kind_name(k));
}

/* mul.a * mul.b + addend as llvm.fmuladd: ir.h allows a*b + c to be
 * contracted, and it becomes an FMA instruction where the target has one
 * (the C API of LLVM 14 cannot set fast-math contraction). */
static LLVMValueRef fmuladd(emitter *em, const ts_expr *mul, LLVMValueRef addend)
{
	if (!addend)
		return NULL;
	LLVMValueRef args[3] = {ex(em, mul->u.bin.a), ex(em, mul->u.bin.b), addend};
	if (!args[0] || !args[1])
		return NULL;
	LLVMTypeRef ty = LLVMTypeOf(addend);
	return intrinsic(em, "llvm.fmuladd", &ty, 1, args, 3);
}

/* Each operand is emitted once: emitting the product of a contracted
 * a*b + c and then its factors again would double the work at every level
 * of a chain, exponential in its depth. */
static LLVMValueRef ex_binary(emitter *em, const ts_expr *e)
{
	ts_dtype t = e->u.bin.a->dtype;
	const ts_expr *m = e->u.bin.a, *c = e->u.bin.b;
	bool fadd = e->kind == IR_ADD && ts_dtype_is_float(t);
	/* acc + sum(lanes) adds the lanes to acc one by one, as the serial
	 * loop did, so a vectorized float sum gives the same bits */
	if (fadd && is_lane_reduce(c, TS_REDUCE_SUM)) {
		LLVMValueRef a = ex(em, m);
		return a ? lane_reduce(em, c, a) : NULL;
	}
	if (fadd && m->kind == IR_MUL)
		return fmuladd(em, m, ex(em, c));
	if (fadd && c->kind == IR_MUL)
		return fmuladd(em, c, ex(em, m));
	LLVMValueRef a = ex(em, m);
	LLVMValueRef b = a ? ex(em, c) : NULL;
	if (!b)
		return NULL;
	if (e->kind >= IR_TRUNCDIV && e->kind <= IR_FLOORMOD && !plain_divisor(e))
		return guarded_divmod(em, e->kind, t.code == TS_TYPE_INT, a, b);
	return arith(em, e->kind, t, a, b);
}

static LLVMValueRef ex_cast(emitter *em, const ts_expr *e)
{
	LLVMBuilderRef B = em->b;
	ts_dtype from = e->u.un.a->dtype, to = e->dtype;
	LLVMValueRef a = ex(em, e->u.un.a);
	LLVMTypeRef ty = type_of(em, to, false);
	if (!a || !ty)
		return NULL;
	bool fs = ts_dtype_is_float(from), ft = ts_dtype_is_float(to);
	if (ts_dtype_is_bool(to))
		return fs ? LLVMBuildFCmp(B, LLVMRealUNE, a, LLVMConstNull(LLVMTypeOf(a)), "")
			  : LLVMBuildICmp(B, LLVMIntNE, a, LLVMConstNull(LLVMTypeOf(a)), "");
	bool sg = from.code == TS_TYPE_INT; /* bool and uint extend with zeros */
	if (fs && ft)
		return LLVMBuildFPCast(B, a, ty, "");
	if (fs) { /* NaN -> 0 and saturation, as ir.h states */
		LLVMTypeRef over[2] = {ty, LLVMTypeOf(a)};
		return intrinsic(em, to.code == TS_TYPE_INT ? "llvm.fptosi.sat" : "llvm.fptoui.sat",
				 over, 2, &a, 1);
	}
	if (ft)
		return sg ? LLVMBuildSIToFP(B, a, ty, "") : LLVMBuildUIToFP(B, a, ty, "");
	return LLVMBuildIntCast2(B, a, ty, sg, "");
}

/* A libm function of one argument, once per lane for vectors. */
static LLVMValueRef libm_call(emitter *em, const char *f32, const char *f64, ts_dtype t,
			      LLVMValueRef x)
{
	LLVMTypeRef st = elem_type(em, t, false);
	const char *name = t.bits == 32 ? f32 : f64;
	if (t.lanes == 1)
		return call_fn(em, name, st, &st, 1, &x);
	LLVMValueRef r = LLVMGetUndef(LLVMTypeOf(x));
	for (int l = 0; l < t.lanes; l++) {
		LLVMValueRef xl = LLVMBuildExtractElement(em->b, x, i32c(em, l), "");
		LLVMValueRef yl = call_fn(em, name, st, &st, 1, &xl);
		r = LLVMBuildInsertElement(em->b, r, yl, i32c(em, l), "");
	}
	return r;
}

/* Lanes lo..lo+n-1 of vector x. */
static LLVMValueRef lanes_of(emitter *em, LLVMValueRef x, int lo, int n)
{
	LLVMValueRef mask[64];
	for (int l = 0; l < n; l++)
		mask[l] = i32c(em, lo + l);
	return LLVMBuildShuffleVector(em->b, x, LLVMGetUndef(LLVMTypeOf(x)),
				      LLVMConstVector(mask, (unsigned)n), "");
}

/* The widest libmvec variant at or below the target's whose lanes divide
 * t's ('e', then 'd', then 'b'); 0 when none does. */
static char vecmath_pick(const emitter *em, ts_dtype t, int *width)
{
	static const char order[] = "edb";
	const char *p = em->vecmath ? strchr(order, em->vecmath) : NULL;
	for (; p && *p; p++) {
		int w = cg_vecmath_lanes(*p, t.bits);
		if (w && t.lanes % w == 0) {
			*width = w;
			return *p;
		}
	}
	return 0;
}

/* op on whole vector registers through libmvec (vecmath.h), a register at
 * a time; NULL without a recorded error when no variant fits, so that the
 * caller falls back to LLVM's intrinsic or libm. */
static LLVMValueRef vecmath_call(emitter *em, ir_intrinsic op, ts_dtype t, LLVMValueRef *args,
				 int nargs)
{
	int w = 0;
	char isa = t.lanes > 1 && t.code == TS_TYPE_FLOAT && cg_vecmath_has(op)
			   ? vecmath_pick(em, t, &w) : 0;
	char name[48];
	if (!isa || !cg_vecmath_symbol(isa, op, t.bits, name))
		return NULL;
	LLVMTypeRef vt = LLVMVectorType(elem_type(em, t, false), (unsigned)w);
	LLVMTypeRef params[2] = {vt, vt};
	LLVMValueRef out = NULL;
	for (int lo = 0; lo < t.lanes; lo += w) {
		LLVMValueRef part[2];
		for (int a = 0; a < nargs; a++)
			part[a] = w == t.lanes ? args[a] : lanes_of(em, args[a], lo, w);
		LLVMValueRef r = call_fn(em, name, vt, params, (unsigned)nargs, part);
		if (w == t.lanes)
			return r;
		/* put the register's lanes back in place */
		for (int l = 0; l < w; l++) {
			LLVMValueRef v = LLVMBuildExtractElement(em->b, r, i32c(em, l), "");
			out = LLVMBuildInsertElement(em->b, out ? out : LLVMGetUndef(LLVMTypeOf(args[0])),
						     v, i32c(em, lo + l), "");
		}
	}
	return out;
}

/* exp(x) for sigmoid: libmvec's when it fits, else LLVM's. */
static LLVMValueRef vexp(emitter *em, ts_dtype t, LLVMValueRef x)
{
	LLVMValueRef r = vecmath_call(em, IR_INTRIN_EXP, t, &x, 1);
	LLVMTypeRef ty = LLVMTypeOf(x);
	return r ? r : intrinsic(em, "llvm.exp", &ty, 1, &x, 1);
}

static LLVMValueRef ex_call(emitter *em, const ts_expr *e)
{
	static const char *const llvm_name[IR_INTRIN_COUNT] = {
		[IR_INTRIN_EXP] = "llvm.exp", [IR_INTRIN_LOG] = "llvm.log",
		[IR_INTRIN_SQRT] = "llvm.sqrt", [IR_INTRIN_EXP2] = "llvm.exp2",
		[IR_INTRIN_FABS] = "llvm.fabs", [IR_INTRIN_POW] = "llvm.pow",
		[IR_INTRIN_FLOOR] = "llvm.floor", [IR_INTRIN_CEIL] = "llvm.ceil",
	};
	LLVMValueRef args[2];
	for (int i = 0; i < e->u.call.nargs; i++)
		if (!(args[i] = ex(em, e->u.call.args[i])))
			return NULL;
	LLVMTypeRef ty = LLVMTypeOf(args[0]);
	LLVMValueRef v = vecmath_call(em, e->u.call.op, e->dtype, args, e->u.call.nargs);
	if (v)
		return v;
	switch (e->u.call.op) {
	case IR_INTRIN_LIKELY: /* a hint for loop partitioning: the value is the condition */
		return args[0];
	case IR_INTRIN_TANH:
		return libm_call(em, "tanhf", "tanh", e->dtype, args[0]);
	case IR_INTRIN_ERF:
		return libm_call(em, "erff", "erf", e->dtype, args[0]);
	case IR_INTRIN_ROUND_TF32: {
		/* finite x: (bits + 0x1000) & ~0x1fff (nearest, ties away), as
		 * ir_round_tf32 */
		int n = e->dtype.lanes;
		LLVMTypeRef iv = n > 1 ? LLVMVectorType(em->i32, (unsigned)n) : em->i32;
		LLVMValueRef c[3];
		static const unsigned k[3] = {0x7f800000u, 0x1000u, 0xffffe000u};
		for (int i = 0; i < 3; i++) {
			c[i] = LLVMConstInt(em->i32, k[i], 0);
			c[i] = n > 1 ? splat(em, c[i], n) : c[i];
		}
		LLVMValueRef bits = LLVMBuildBitCast(em->b, args[0], iv, "");
		LLVMValueRef fin = LLVMBuildICmp(em->b, LLVMIntNE, LLVMBuildAnd(em->b, bits, c[0], ""), c[0], "");
		LLVMValueRef r = LLVMBuildAnd(em->b, LLVMBuildAdd(em->b, bits, c[1], ""), c[2], "");
		return LLVMBuildBitCast(em->b, LLVMBuildSelect(em->b, fin, r, bits, ""), ty, "");
	}
	case IR_INTRIN_SIGMOID: {
		/* 1 / (1 + exp(-x)), with vector exp */
		LLVMValueRef n = LLVMBuildFNeg(em->b, args[0], "");
		LLVMValueRef x = vexp(em, e->dtype, n);
		LLVMValueRef one = fconst(em, ty, 1.0);
		return x ? LLVMBuildFDiv(em->b, one, LLVMBuildFAdd(em->b, one, x, ""), "") : NULL;
	}
	default:
		break;
	}
	const char *name = (unsigned)e->u.call.op < IR_INTRIN_COUNT ? llvm_name[e->u.call.op] : NULL;
	if (!name)
		return fail(em, TS_ERR_UNSUPPORTED, "intrinsic %s", ir_intrinsic_name(e->u.call.op));
	return intrinsic(em, name, &ty, 1, args, (unsigned)e->u.call.nargs);
}

static LLVMValueRef ex_ramp(emitter *em, const ts_expr *e)
{
	LLVMValueRef base = ex(em, e->u.ramp.base);
	int lanes = e->u.ramp.lanes;
	LLVMValueRef *steps = ts_alloc_array(em->ctx, (size_t)lanes, sizeof(*steps));
	if (!base || !steps)
		return base ? fail(em, TS_ERR_NOMEM, "out of memory") : NULL;
	for (int l = 0; l < lanes; l++)
		steps[l] = LLVMConstInt(LLVMTypeOf(base), (unsigned long long)(e->u.ramp.stride * l), 1);
	return LLVMBuildAdd(em->b, splat(em, base, lanes), LLVMConstVector(steps, (unsigned)lanes), "");
}

/* The lanes of e's vector source combined into one scalar; start (may be
 * NULL) is the accumulator a float sum starts from. */
static LLVMValueRef lane_reduce(emitter *em, const ts_expr *e, LLVMValueRef start)
{
	if (e->u.reduce.naxes != 0 || e->u.reduce.source->dtype.lanes < 2)
		return fail(em, TS_ERR_INVALID, "a reduction over axes is not lowered");
	LLVMValueRef src = ex(em, e->u.reduce.source);
	if (!src)
		return NULL;
	LLVMTypeRef vt = LLVMTypeOf(src), st = LLVMGetElementType(vt);
	ts_dtype t = e->dtype;
	bool sg = t.code == TS_TYPE_INT;
	const char *name = NULL;
	switch (e->u.reduce.op) {
	case TS_REDUCE_SUM:
		if (!ts_dtype_is_float(t))
			return intrinsic(em, "llvm.vector.reduce.add", &vt, 1, &src, 1);
		/* -0.0 is the identity of IEEE addition */
		return intrinsic(em, "llvm.vector.reduce.fadd", &vt, 1,
				 (LLVMValueRef[]){start ? start : LLVMConstReal(st, -0.0), src}, 2);
	case TS_REDUCE_PROD:
		if (!ts_dtype_is_float(t))
			return intrinsic(em, "llvm.vector.reduce.mul", &vt, 1, &src, 1);
		return intrinsic(em, "llvm.vector.reduce.fmul", &vt, 1,
				 (LLVMValueRef[]){LLVMConstReal(st, 1.0), src}, 2);
	case TS_REDUCE_MAX:
		name = ts_dtype_is_float(t) ? "llvm.vector.reduce.fmax"
		       : sg ? "llvm.vector.reduce.smax" : "llvm.vector.reduce.umax";
		break;
	case TS_REDUCE_MIN:
		name = ts_dtype_is_float(t) ? "llvm.vector.reduce.fmin"
		       : sg ? "llvm.vector.reduce.smin" : "llvm.vector.reduce.umin";
		break;
	}
	return name ? intrinsic(em, name, &vt, 1, &src, 1) : fail(em, TS_ERR_INTERNAL, "reduce op");
}

/* A scalar index of a signed dtype narrower than 64 bits computed in 64
 * bits.  Where the ranges of the variables in scope keep a + - * inside
 * its dtype (loop arithmetic, i.outer*8 + l), it is evaluated in 64 bits
 * with no-signed-wrap, which gives the same address and saves LLVM from
 * widening long chains of 32-bit arithmetic itself (much of its
 * loop-optimization time).  Elsewhere it wraps in its own width (ir.h)
 * and is sign-extended: an access is legal when the wrapped index is in
 * bounds, so (i*65536)*(i*65536) + i in int32 reads element i, where 64
 * bits gave i*2^32 + i.  Any other node (a min or max, a load, a cast)
 * takes a value in its own width too: the access bounds the clamp, not
 * what it clamps, and in max(min(2147483647 + B[30], 36), 0) the int32
 * sum wraps to a small value the clamp keeps, where 64 bits gave 36. */
static LLVMValueRef index_expr64(emitter *em, const ts_expr *e)
{
	LLVMBuilderRef B = em->b;
	if (e->dtype.lanes != 1 || e->dtype.code != TS_TYPE_INT)
		return NULL;
	if (e->kind == IR_INT_IMM)
		return LLVMConstInt(em->i64, (unsigned long long)e->u.int_imm, 1);
	if ((e->kind != IR_ADD && e->kind != IR_SUB && e->kind != IR_MUL) ||
	    !cg_ranges_fit(&em->ranges, e)) {
		LLVMValueRef v = ex(em, e);
		return v ? LLVMBuildSExt(B, v, em->i64, "") : NULL;
	}
	LLVMValueRef a = index_expr64(em, e->u.bin.a), b = a ? index_expr64(em, e->u.bin.b) : NULL;
	if (!b)
		return NULL;
	switch (e->kind) {
	case IR_ADD: return LLVMBuildNSWAdd(B, a, b, "");
	case IR_SUB: return LLVMBuildNSWSub(B, a, b, "");
	default: return LLVMBuildNSWMul(B, a, b, "");
	}
}

/* An index (scalar or vector, any integer dtype) widened to i64 lanes;
 * an int64 one keeps its wrapping arithmetic. */
static LLVMValueRef index64(emitter *em, const ts_expr *ix)
{
	if (ix->dtype.lanes == 1 && ix->dtype.code == TS_TYPE_INT && ix->dtype.bits <= 32)
		return index_expr64(em, ix);
	LLVMValueRef v = ex(em, ix);
	if (!v)
		return NULL;
	LLVMTypeRef ty = ix->dtype.lanes > 1 ? LLVMVectorType(em->i64, ix->dtype.lanes) : em->i64;
	return LLVMBuildIntCast2(em->b, v, ty, ix->dtype.code == TS_TYPE_INT, "");
}

/* How a buffer is addressed: one element, a contiguous vector, the same
 * element for every lane, or a gather/scatter. */
typedef enum access_kind { ACC_SCALAR, ACC_CONTIGUOUS, ACC_SPLAT, ACC_GATHER } access_kind;

static access_kind classify(const ts_expr *ix)
{
	if (ix->dtype.lanes == 1)
		return ACC_SCALAR;
	if (ix->kind == IR_RAMP && ix->u.ramp.stride == 1)
		return ACC_CONTIGUOUS;
	return ix->kind == IR_BROADCAST ? ACC_SPLAT : ACC_GATHER;
}

/* The address of the access: an element pointer, or a vector of them. */
static LLVMValueRef address(emitter *em, const ts_buffer *buf, const ts_expr *ix, access_kind k)
{
	LLVMValueRef base = buffer_ptr(em, buf);
	LLVMTypeRef et = elem_type(em, buf->dtype, true);
	const ts_expr *first = k == ACC_CONTIGUOUS ? ix->u.ramp.base
			       : k == ACC_SPLAT ? ix->u.bcast.value : ix;
	LLVMValueRef i = base && et ? index64(em, first) : NULL;
	if (!i)
		return NULL;
	LLVMValueRef p = LLVMBuildInBoundsGEP2(em->b, et, base, &i, 1, "");
	if (k != ACC_CONTIGUOUS)
		return p;
	LLVMTypeRef vt = LLVMVectorType(et, ix->dtype.lanes);
	return LLVMBuildBitCast(em->b, p, LLVMPointerType(vt, 0), "");
}

static LLVMValueRef all_lanes(emitter *em, int lanes)
{
	return LLVMConstAllOnes(LLVMVectorType(em->i1, (unsigned)lanes));
}

/* A load of every stride-th element, stride 2 to 4 (a stride-2 window of
 * a convolution): one masked contiguous load covering exactly the
 * elements from the first lane's to the last lane's, so nothing past the
 * last one is touched, then a shuffle picking every stride-th.  Cheaper
 * than a gather, which fetches lane by lane. */
static LLVMValueRef strided_load(emitter *em, const ts_buffer *buf, const ts_expr *ix, unsigned align)
{
	int lanes = ix->dtype.lanes, stride = (int)ix->u.ramp.stride, wide = lanes * stride;
	LLVMTypeRef et = elem_type(em, buf->dtype, true);
	/* the first lane's element, as a contiguous access would address it */
	LLVMValueRef p = et ? address(em, buf, ix, ACC_CONTIGUOUS) : NULL;
	if (!p)
		return NULL;
	LLVMTypeRef wt = LLVMVectorType(et, (unsigned)wide);
	LLVMValueRef mask[256], pick[64];
	for (int w = 0; w < wide; w++)
		mask[w] = LLVMConstInt(em->i1, w <= stride * (lanes - 1), 0);
	for (int l = 0; l < lanes; l++)
		pick[l] = i32c(em, (int64_t)l * stride);
	LLVMValueRef vp = LLVMBuildBitCast(em->b, p, LLVMPointerType(wt, 0), "");
	LLVMTypeRef over[2] = {wt, LLVMTypeOf(vp)};
	LLVMValueRef args[4] = {vp, i32c(em, align), LLVMConstVector(mask, (unsigned)wide), LLVMGetUndef(wt)};
	LLVMValueRef v = intrinsic(em, "llvm.masked.load", over, 2, args, 4);
	return v ? LLVMBuildShuffleVector(em->b, v, LLVMGetUndef(wt), LLVMConstVector(pick, (unsigned)lanes), "")
		 : NULL;
}

/* A clamped index: base +- clamp(ramp(r, 1, n)) with lane-invariant base
 * terms (added or subtracted) and bounds (min and/or max of the ramp with broadcasts), the index
 * a padding stage reads its input with.  Fills *clamp and the broadcast
 * terms added to it (at most 8). */
typedef struct clamped {
	const ts_expr *clamp, *ramp;
	const ts_expr *terms[8];
	bool neg[8]; /* the term is subtracted */
	int nterms;
} clamped;

static bool match_clamp(const ts_expr *e, clamped *c)
{
	bool minmax = e->kind == IR_MIN || e->kind == IR_MAX;
	if (e->kind == IR_RAMP && e->u.ramp.stride == 1) {
		c->ramp = e;
		return true;
	}
	if (!minmax)
		return false;
	const ts_expr *a = e->u.bin.a, *b = e->u.bin.b;
	if (b->kind != IR_BROADCAST)
		a = e->u.bin.b, b = e->u.bin.a;
	return b->kind == IR_BROADCAST && match_clamp(a, c);
}

static bool match_clamped(const ts_expr *ix, clamped *c, bool top)
{
	if (ix->kind == IR_ADD || ix->kind == IR_SUB) {
		const ts_expr *a = ix->u.bin.a, *b = ix->u.bin.b;
		if (ix->kind == IR_ADD && a->kind == IR_BROADCAST)
			a = ix->u.bin.b, b = ix->u.bin.a;
		if (b->kind != IR_BROADCAST || c->nterms >= 8)
			return false;
		c->neg[c->nterms] = ix->kind == IR_SUB;
		c->terms[c->nterms++] = b;
		return match_clamped(a, c, false);
	}
	/* a bare ramp is a contiguous access, not this pattern */
	if (top && ix->kind == IR_RAMP)
		return false;
	c->clamp = ix;
	return (ix->kind == IR_MIN || ix->kind == IR_MAX) && match_clamp(ix, c);
}

/* The load of a clamped index (see match_clamped), one that the ranges in
 * scope keep inside its dtype, since the terms, the clamp's ends and the
 * ramp's base are added in 64 bits (a wrapping one is a gather, computed
 * in its own width).  The clamp is monotone
 * in the lane, so the lanes it changes are at the ends and read what the
 * first or the last lane reads: the lanes it leaves alone come from one
 * masked contiguous load, the others from two scalar loads of the
 * first and last lanes' elements, which the original access reads too,
 * so no address outside what a gather would touch is read. */
static LLVMValueRef clamped_load(emitter *em, const ts_buffer *buf, const clamped *c, int lanes,
				 unsigned align)
{
	LLVMBuilderRef B = em->b;
	LLVMTypeRef et = elem_type(em, buf->dtype, true);
	LLVMValueRef base = buffer_ptr(em, buf);
	/* lanes compared in the index's own width: 16 x i32 is one register */
	LLVMValueRef cv = ex(em, c->clamp), lv = ex(em, c->ramp);
	LLVMValueRef off = LLVMConstInt(em->i64, 0, 1);
	for (int i = 0; i < c->nterms && off; i++) {
		LLVMValueRef t = index64(em, c->terms[i]->u.bcast.value);
		off = !t ? NULL : c->neg[i] ? LLVMBuildSub(B, off, t, "") : LLVMBuildAdd(B, off, t, "");
	}
	LLVMValueRef r0 = index64(em, c->ramp->u.ramp.base);
	if (!et || !base || !cv || !lv || !off || !r0)
		return NULL;
	LLVMTypeRef vt = LLVMVectorType(et, (unsigned)lanes);
	LLVMValueRef c0 = LLVMBuildExtractElement(B, cv, i32c(em, 0), "");
	LLVMValueRef cn = LLVMBuildExtractElement(B, cv, i32c(em, lanes - 1), "");
	LLVMValueRef same = LLVMBuildICmp(B, LLVMIntEQ, cv, lv, "");
	LLVMValueRef first = LLVMBuildICmp(B, LLVMIntEQ, cv, splat(em, c0, lanes), "");
	c0 = LLVMBuildIntCast2(B, c0, em->i64, 1, "");
	cn = LLVMBuildIntCast2(B, cn, em->i64, 1, "");
	/* the masked lanes are never dereferenced: a plain (not inbounds)
	 * address, which may point before the buffer */
	LLVMValueRef at = LLVMBuildAdd(B, off, r0, "");
	LLVMValueRef p = LLVMBuildBitCast(B, LLVMBuildGEP2(B, et, base, &at, 1, ""), LLVMPointerType(vt, 0), "");
	LLVMTypeRef over[2] = {vt, LLVMTypeOf(p)};
	LLVMValueRef args[4] = {p, i32c(em, align), same, LLVMGetUndef(vt)};
	LLVMValueRef mid = intrinsic(em, "llvm.masked.load", over, 2, args, 4);
	LLVMValueRef ends[2], idx[2] = {c0, cn};
	for (int i = 0; i < 2; i++) {
		LLVMValueRef a = LLVMBuildAdd(B, off, idx[i], "");
		ends[i] = LLVMBuildLoad2(B, et, LLVMBuildInBoundsGEP2(B, et, base, &a, 1, ""), "");
		LLVMSetAlignment(ends[i], align);
	}
	if (!mid)
		return NULL;
	LLVMValueRef edge = LLVMBuildSelect(B, first, splat(em, ends[0], lanes), splat(em, ends[1], lanes), "");
	return LLVMBuildSelect(B, same, mid, edge, "");
}

static bool is_short_stride(const ts_expr *ix)
{
	return ix->kind == IR_RAMP && ix->u.ramp.stride >= 2 && ix->u.ramp.stride <= 4 &&
	       ix->dtype.lanes * ix->u.ramp.stride <= 256;
}

/* A load of access kind k as memory holds it (bool as bytes). */
static LLVMValueRef load_kind(emitter *em, const ts_buffer *buf, const ts_expr *ix, access_kind k,
			      unsigned align)
{
	int lanes = ix->dtype.lanes;
	LLVMValueRef p = address(em, buf, ix, k), v;
	LLVMTypeRef et = elem_type(em, buf->dtype, true);
	if (!p || !et)
		return NULL;
	if (k == ACC_GATHER) {
		LLVMTypeRef over[2] = {LLVMVectorType(et, lanes), LLVMTypeOf(p)};
		LLVMValueRef args[4] = {p, i32c(em, align), all_lanes(em, lanes), LLVMGetUndef(over[0])};
		return intrinsic(em, "llvm.masked.gather", over, 2, args, 4);
	}
	v = LLVMBuildLoad2(em->b, k == ACC_CONTIGUOUS ? LLVMVectorType(et, lanes) : et, p, "");
	LLVMSetAlignment(v, align);
	return k == ACC_SPLAT ? splat(em, v, lanes) : v;
}

static LLVMValueRef ex_load(emitter *em, const ts_expr *e)
{
	const ts_buffer *buf = e->u.load.buf;
	const ts_expr *ix = e->u.load.index;
	access_kind k = classify(ix);
	unsigned align = (unsigned)ts_dtype_bytes(buf->dtype);
	clamped cl = {0};
	/* a gather but for two index shapes that masked loads read cheaper */
	LLVMValueRef v = k != ACC_GATHER ? load_kind(em, buf, ix, k, align)
			 : match_clamped(ix, &cl, true) && cg_ranges_fit(&em->ranges, ix)
			 ? clamped_load(em, buf, &cl, ix->dtype.lanes, align)
			 : is_short_stride(ix) ? strided_load(em, buf, ix, align)
					       : load_kind(em, buf, ix, k, align);
	if (v && ts_dtype_is_bool(buf->dtype))
		v = LLVMBuildICmp(em->b, LLVMIntNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
	return v;
}

/* llvm.prefetch of the element a scalar LOAD names: a read, kept in every
 * cache level but the first (locality 2: prefetcht1 on x86, so that data
 * fetched ahead does not evict what the loop reads now), into the data cache. */
static bool st_prefetch(emitter *em, const ts_expr *e)
{
	if (e->kind != IR_LOAD || e->dtype.lanes != 1)
		return fail(em, TS_ERR_INVALID, "prefetch of something other than a scalar load"), false;
	LLVMValueRef p = address(em, e->u.load.buf, e->u.load.index, ACC_SCALAR);
	if (!p)
		return false;
	LLVMTypeRef i8p = LLVMPointerType(LLVMInt8TypeInContext(em->c), 0);
	LLVMValueRef args[4] = {LLVMBuildBitCast(em->b, p, i8p, ""), i32c(em, 0), i32c(em, 2),
				i32c(em, 1)};
	return intrinsic(em, "llvm.prefetch", &i8p, 1, args, 4) != NULL;
}

static LLVMValueRef ex(emitter *em, const ts_expr *e)
{
	if (em->st)
		return NULL;
	LLVMTypeRef ty;
	switch (e->kind) {
	case IR_INT_IMM:
	case IR_FLOAT_IMM:
		if (!(ty = elem_type(em, e->dtype, false)))
			return NULL;
		return e->kind == IR_FLOAT_IMM ? LLVMConstReal(ty, e->u.float_imm)
		       : LLVMConstInt(ty, (unsigned long long)e->u.int_imm, 1);
	case IR_VAR:
		return ex_var(em, e);
	case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV:
	case IR_TRUNCDIV: case IR_TRUNCMOD: case IR_FLOORDIV: case IR_FLOORMOD:
	case IR_MIN: case IR_MAX: case IR_EQ: case IR_NE: case IR_LT: case IR_LE:
	case IR_GT: case IR_GE: case IR_AND: case IR_OR:
		return ex_binary(em, e);
	case IR_NOT: {
		LLVMValueRef a = ex(em, e->u.un.a);
		return a ? LLVMBuildNot(em->b, a, "") : NULL;
	}
	case IR_CAST:
		return ex_cast(em, e);
	case IR_SELECT: {
		LLVMValueRef c = ex(em, e->u.select.cond), t = ex(em, e->u.select.t);
		LLVMValueRef f = ex(em, e->u.select.f);
		return c && t && f ? LLVMBuildSelect(em->b, c, t, f, "") : NULL;
	}
	case IR_CALL:
		return ex_call(em, e);
	case IR_LOAD:
		return ex_load(em, e);
	case IR_RAMP:
		return ex_ramp(em, e);
	case IR_BROADCAST: {
		LLVMValueRef v = ex(em, e->u.bcast.value);
		return v ? splat(em, v, e->u.bcast.lanes) : NULL;
	}
	case IR_REDUCE:
		return lane_reduce(em, e, NULL);
	case IR_READ:
		return fail(em, TS_ERR_INVALID, "tensor read of '%s' is not lowered to a buffer load",
			    e->u.read.tensor->name);
	case IR_EXPR_KIND_COUNT:
		break;
	}
	return fail(em, TS_ERR_INTERNAL, "unknown expression kind %d", (int)e->kind);
}

/* ---- statements ----------------------------------------------------------- */

static bool st(emitter *em, const ts_stmt *s);

static bool st_store(emitter *em, const ts_stmt *s)
{
	const ts_buffer *buf = s->u.store.buf;
	const ts_expr *ix = s->u.store.index;
	access_kind k = classify(ix);
	int lanes = ix->dtype.lanes;
	unsigned align = (unsigned)ts_dtype_bytes(buf->dtype);
	LLVMValueRef v = ex(em, s->u.store.value);
	LLVMValueRef p = v ? address(em, buf, ix, k) : NULL;
	if (!p)
		return false;
	if (ts_dtype_is_bool(buf->dtype))
		v = LLVMBuildZExt(em->b, v, type_of(em, s->u.store.value->dtype, true), "");
	if (k == ACC_SPLAT) /* every lane writes one element: the last wins */
		v = LLVMBuildExtractElement(em->b, v, i32c(em, lanes - 1), "");
	if (k == ACC_GATHER) {
		LLVMTypeRef over[2] = {LLVMTypeOf(v), LLVMTypeOf(p)};
		LLVMValueRef args[4] = {v, p, i32c(em, align), all_lanes(em, lanes)};
		return intrinsic(em, "llvm.masked.scatter", over, 2, args, 4) != NULL;
	}
	LLVMSetAlignment(LLVMBuildStore(em->b, v, p), align);
	return true;
}

static bool count_vectorized(ts_stmt *s, void *data)
{
	if (s->kind == IR_S_FOR && s->u.for_.kind == TS_FOR_VECTORIZED)
		++*(int *)data;
	return true;
}

/* Marks the loop whose back edge is br as not to be vectorized by LLVM:
 * !llvm.loop !0, !0 = distinct !{!0, !{"llvm.loop.vectorize.enable", i1 0}}.
 * The self-reference makes each loop's ID its own. */
static void keep_scalar(emitter *em, LLVMValueRef br)
{
	static const char key[] = "llvm.loop.vectorize.enable";
	LLVMMetadataRef off[2] = {
		LLVMMDStringInContext2(em->c, key, sizeof(key) - 1),
		LLVMValueAsMetadata(LLVMConstInt(LLVMInt1TypeInContext(em->c), 0, 0)),
	};
	LLVMMetadataRef self = LLVMTemporaryMDNode(em->c, NULL, 0);
	LLVMMetadataRef ops[2] = {self, LLVMMDNodeInContext2(em->c, off, 2)};
	LLVMMetadataRef id = LLVMMDNodeInContext2(em->c, ops, 2);
	LLVMMetadataReplaceAllUsesWith(self, id);
	LLVMSetMetadata(br, LLVMGetMDKindIDInContext(em->c, "llvm.loop", 9),
			LLVMMetadataAsValue(em->c, id));
}

/* The range of the loop s's variable over the ranges in scope. */
static ir_interval loop_range(emitter *em, const ts_stmt *s)
{
	ir_interval ext = cg_ranges_bound(&em->ranges, s->u.for_.extent);
	return cg_loop_range(cg_ranges_bound(&em->ranges, s->u.for_.min), ext.max);
}

/* Binds the variable var to value, in the range iv, until the mark. */
static bool bind_var(emitter *em, const ts_expr *var, LLVMValueRef value, ir_interval iv)
{
	if (!cg_ranges_push(&em->ranges, var, iv))
		return fail(em, TS_ERR_NOMEM, "out of memory"), false;
	return push(em, var, value, false);
}

/* for (var = lo; var < lo + n; var++) body, var in the range iv */
static bool loop(emitter *em, const ts_expr *var, LLVMValueRef lo, LLVMValueRef n, ir_interval iv,
		 const ts_stmt *body)
{
	LLVMBuilderRef B = em->b;
	LLVMTypeRef ty = LLVMTypeOf(lo);
	LLVMValueRef end = LLVMBuildAdd(B, lo, n, "");
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(B);
	LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(em->c, em->fn, "for.head");
	LLVMBasicBlockRef bb = LLVMAppendBasicBlockInContext(em->c, em->fn, "for.body");
	LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(em->c, em->fn, "for.end");
	LLVMBuildBr(B, head);
	LLVMPositionBuilderAtEnd(B, head);
	LLVMValueRef v = LLVMBuildPhi(B, ty, var->u.var.name);
	bool sg = var->dtype.code == TS_TYPE_INT;
	LLVMBuildCondBr(B, LLVMBuildICmp(B, sg ? LLVMIntSLT : LLVMIntULT, v, end, ""), bb, exit);
	LLVMPositionBuilderAtEnd(B, bb);
	int mark = em->nbind, rmark = em->ranges.n;
	if (!bind_var(em, var, v, iv) || !st(em, body))
		return false;
	em->nbind = mark;
	cg_ranges_pop(&em->ranges, rmark);
	/* v < end, so v + 1 cannot overflow */
	LLVMValueRef next = sg ? LLVMBuildNSWAdd(B, v, LLVMConstInt(ty, 1, 0), "")
			       : LLVMBuildNUWAdd(B, v, LLVMConstInt(ty, 1, 0), "");
	LLVMBasicBlockRef latch = LLVMGetInsertBlock(B);
	LLVMValueRef back = LLVMBuildBr(B, head);
	if (em->scalar_loops)
		keep_scalar(em, back);
	LLVMAddIncoming(v, (LLVMValueRef[]){lo, next}, (LLVMBasicBlockRef[]){pre, latch}, 2);
	LLVMPositionBuilderAtEnd(B, exit);
	return true;
}

/* The loop's min and extent in the variable's dtype. */
static bool bounds(emitter *em, const ts_stmt *s, LLVMValueRef *lo, LLVMValueRef *n)
{
	LLVMTypeRef ty = type_of(em, s->u.for_.var->dtype, false);
	*lo = ex(em, s->u.for_.min);
	*n = ex(em, s->u.for_.extent);
	if (!ty || !*lo || !*n)
		return false;
	*lo = LLVMBuildIntCast2(em->b, *lo, ty, s->u.for_.min->dtype.code == TS_TYPE_INT, "");
	*n = LLVMBuildIntCast2(em->b, *n, ty, s->u.for_.extent->dtype.code == TS_TYPE_INT, "");
	return true;
}

/* The body once per iteration, with the variable bound to a constant
 * offset from min. */
static bool st_unrolled(emitter *em, const ts_stmt *s, int64_t n)
{
	LLVMValueRef lo, ext;
	if (!bounds(em, s, &lo, &ext))
		return false;
	ir_interval iv = loop_range(em, s);
	for (int64_t k = 0; k < n; k++) {
		LLVMValueRef v = k ? LLVMBuildNSWAdd(em->b, lo, LLVMConstInt(LLVMTypeOf(lo),
								       (unsigned long long)k, 0), "")
				   : lo;
		int mark = em->nbind, rmark = em->ranges.n;
		if (!bind_var(em, s->u.for_.var, v, iv) || !st(em, s->u.for_.body))
			return false;
		em->nbind = mark;
		cg_ranges_pop(&em->ranges, rmark);
	}
	return true;
}

/* ---- functions and parallel loops ------------------------------------------ */

/* Starts a function: an entry block for allocas, then the code. */
static void begin_function(emitter *em, LLVMValueRef fn)
{
	em->fn = fn;
	em->entry = LLVMAppendBasicBlockInContext(em->c, fn, "entry");
	LLVMPositionBuilderAtEnd(em->b, LLVMAppendBasicBlockInContext(em->c, fn, "start"));
}

static void end_function(emitter *em)
{
	LLVMPositionBuilderAtEnd(em->ab, em->entry);
	LLVMBuildBr(em->ab, LLVMGetNextBasicBlock(em->entry));
}

static LLVMValueRef entry_alloca(emitter *em, LLVMTypeRef ty, unsigned align)
{
	LLVMPositionBuilderAtEnd(em->ab, em->entry);
	LLVMValueRef a = LLVMBuildAlloca(em->ab, ty, "");
	LLVMSetAlignment(a, align);
	return a;
}

/* An internal function inlined into its only caller. */
static LLVMValueRef inner_function(emitter *em, const char *name, LLVMTypeRef ret,
				   LLVMTypeRef *params, unsigned n)
{
	LLVMValueRef fn = LLVMAddFunction(em->mod, name, LLVMFunctionType(ret, params, n, 0));
	LLVMSetLinkage(fn, LLVMInternalLinkage);
	add_attr(em, fn, LLVMAttributeFunctionIndex, "alwaysinline", 0);
	add_attr(em, fn, LLVMAttributeFunctionIndex, "nounwind", 0);
	return fn;
}

/* Buffers do not overlap and are 64-byte aligned: parameters by the
 * contract of llvm.h, local buffers by st_allocate.  The size variables'
 * values (the last parameter of a function that has them) are a plain
 * int64 array of the caller's, aligned as int64 only: a wide load of them
 * assumed 64 faulted. */
static void buffer_param(emitter *em, LLVMValueRef fn, unsigned i, const ts_buffer *b)
{
	const ts_func *f = em->f;
	bool sizes = f->nsizes > 0 && b == f->params[f->nparams - 1];
	add_attr(em, fn, i + 1, "noalias", 0);
	add_attr(em, fn, i + 1, "align", sizes ? 8 : 64);
	LLVMSetValueName2(LLVMGetParam(fn, i), b->name, strlen(b->name));
}

/* The emitter state that a nested function replaces. */
typedef struct saved {
	LLVMValueRef fn;
	LLVMBasicBlockRef entry, block;
	binding *bind;
	int nbind, capbind;
} saved;

static saved save(emitter *em)
{
	return (saved){em->fn, em->entry, LLVMGetInsertBlock(em->b), em->bind, em->nbind,
		       em->capbind};
}

static void restore(emitter *em, saved s)
{
	em->fn = s.fn;
	em->entry = s.entry;
	LLVMPositionBuilderAtEnd(em->b, s.block);
	em->bind = s.bind;
	em->nbind = s.nbind;
	em->capbind = s.capbind;
}

/* f.parN.inner(begin, end, lo, captures...): the loop over its chunk. */
static LLVMValueRef parallel_inner(emitter *em, const ts_stmt *s, const char *name,
				   LLVMTypeRef *fields, unsigned nf)
{
	LLVMTypeRef *params = ts_alloc_array(em->ctx, nf + 2, sizeof(*params));
	if (!params)
		return fail(em, TS_ERR_NOMEM, "out of memory");
	params[0] = params[1] = em->i64;
	memcpy(params + 2, fields, nf * sizeof(*fields));
	LLVMValueRef fn = inner_function(em, name, em->void_t, params, nf + 2);
	saved sv = save(em);
	binding *outer = sv.bind;
	em->bind = NULL;
	em->nbind = em->capbind = 0;
	begin_function(em, fn);
	for (int i = 0; i < sv.nbind; i++) {
		if (outer[i].buffer)
			buffer_param(em, fn, (unsigned)i + 3, outer[i].key);
		push(em, outer[i].key, LLVMGetParam(fn, (unsigned)i + 3), outer[i].buffer);
	}
	LLVMValueRef lo = LLVMGetParam(fn, 2), begin = LLVMGetParam(fn, 0);
	LLVMTypeRef ty = LLVMTypeOf(lo);
	LLVMValueRef n = LLVMBuildTrunc(em->b, LLVMBuildSub(em->b, LLVMGetParam(fn, 1), begin, ""), ty, "");
	LLVMValueRef start = LLVMBuildAdd(em->b, lo, LLVMBuildTrunc(em->b, begin, ty, ""), "");
	bool ok = loop(em, s->u.for_.var, start, n, loop_range(em, s), s->u.for_.body);
	if (ok) {
		LLVMBuildRetVoid(em->b);
		end_function(em);
	}
	restore(em, sv);
	return ok ? fn : NULL;
}

/* f.parN(begin, end, closure): unpacks the closure and calls the inner. */
static LLVMValueRef parallel_body(emitter *em, const char *name, LLVMValueRef inner,
				  LLVMTypeRef closure, LLVMTypeRef *fields, unsigned nf)
{
	LLVMTypeRef params[3] = {em->i64, em->i64, em->i8p};
	LLVMValueRef fn = LLVMAddFunction(em->mod, name, LLVMFunctionType(em->void_t, params, 3, 0));
	LLVMValueRef *args = ts_alloc_array(em->ctx, nf + 2, sizeof(*args));
	if (!args)
		return fail(em, TS_ERR_NOMEM, "out of memory");
	LLVMSetLinkage(fn, LLVMInternalLinkage);
	add_attr(em, fn, LLVMAttributeFunctionIndex, "nounwind", 0);
	LLVMBasicBlockRef block = LLVMGetInsertBlock(em->b);
	LLVMPositionBuilderAtEnd(em->b, LLVMAppendBasicBlockInContext(em->c, fn, "entry"));
	LLVMValueRef cp = LLVMBuildBitCast(em->b, LLVMGetParam(fn, 2), LLVMPointerType(closure, 0), "");
	args[0] = LLVMGetParam(fn, 0);
	args[1] = LLVMGetParam(fn, 1);
	for (unsigned i = 0; i < nf; i++)
		args[i + 2] = LLVMBuildLoad2(em->b, fields[i],
					     LLVMBuildStructGEP2(em->b, closure, cp, i, ""), "");
	LLVMBuildCall2(em->b, LLVMGlobalGetValueType(inner), inner, args, nf + 2, "");
	LLVMBuildRetVoid(em->b);
	LLVMPositionBuilderAtEnd(em->b, block);
	return fn;
}

/* A parallel loop: outlined and handed to ts_parallel_for, which runs the
 * body on chunks of [0, extent).  Everything in scope is captured. */
static bool st_parallel(emitter *em, const ts_stmt *s)
{
	LLVMValueRef lo, n;
	if (!bounds(em, s, &lo, &n))
		return false;
	unsigned nf = (unsigned)em->nbind + 1;
	LLVMTypeRef *fields = ts_alloc_array(em->ctx, nf, sizeof(*fields));
	if (!fields)
		return fail(em, TS_ERR_NOMEM, "out of memory"), false;
	fields[0] = LLVMTypeOf(lo);
	for (int i = 0; i < em->nbind; i++)
		fields[i + 1] = LLVMTypeOf(em->bind[i].value);
	LLVMTypeRef closure = LLVMStructTypeInContext(em->c, fields, nf, 0);
	int id = em->nparallel++;
	char *iname = ts_sprintf(em->ctx, "%s.par%d.inner", em->symbol, id);
	char *bname = ts_sprintf(em->ctx, "%s.par%d", em->symbol, id);
	LLVMValueRef inner = iname && bname ? parallel_inner(em, s, iname, fields, nf) : NULL;
	LLVMValueRef body = inner ? parallel_body(em, bname, inner, closure, fields, nf) : NULL;
	if (!body)
		return fail(em, TS_ERR_NOMEM, "out of memory"), false;
	LLVMValueRef cp = entry_alloca(em, closure, 8);
	for (unsigned i = 0; i < nf; i++)
		LLVMBuildStore(em->b, i ? em->bind[i - 1].value : lo,
			       LLVMBuildStructGEP2(em->b, closure, cp, i, ""));
	LLVMTypeRef bty = LLVMPointerType(LLVMGlobalGetValueType(body), 0);
	LLVMValueRef args[3] = {LLVMBuildIntCast2(em->b, n, em->i64, 1, ""), body,
				LLVMBuildBitCast(em->b, cp, em->i8p, "")};
	call_fn(em, "ts_parallel_for", em->i32, (LLVMTypeRef[]){em->i64, bty, em->i8p}, 3, args);
	return true;
}

static bool st_for(emitter *em, const ts_stmt *s)
{
	int64_t n;
	switch (s->u.for_.kind) {
	case TS_FOR_THREAD:
		return fail(em, TS_ERR_UNSUPPORTED, "loop '%s' is bound to %s; the CPU backend has no GPU threads",
			    s->u.for_.var->u.var.name, ts_thread_tag_name(s->u.for_.thread)), false;
	case TS_FOR_PARALLEL:
		return st_parallel(em, s);
	case TS_FOR_UNROLLED:
		if (ir_is_const_int(s->u.for_.extent, &n))
			return st_unrolled(em, s, n);
		break;
	case TS_FOR_SERIAL:
	case TS_FOR_TENSORIZED: /* tensor cores are the cuda target's */
	case TS_FOR_VECTORIZED: /* left serial by cg_vectorize */
		break;
	}
	LLVMValueRef lo, ext;
	return bounds(em, s, &lo, &ext) && loop(em, s->u.for_.var, lo, ext, loop_range(em, s), s->u.for_.body);
}

static bool st_allocate(emitter *em, const ts_stmt *s)
{
	const ts_buffer *buf = s->u.alloc.buf;
	LLVMTypeRef et = elem_type(em, buf->dtype, true);
	int64_t bytes = buf->size * ts_dtype_bytes(buf->dtype);
	if (!et)
		return false;
	if (buf->size > INT64_MAX / 8)
		return fail(em, TS_ERR_INVALID, "buffer '%s' is too large", buf->name), false;
	/* a temporary larger than the machine cannot be had: refused here,
	 * where it can be said, rather than failing inside the kernel */
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	if (pages > 0 && page > 0 && bytes / page >= pages)
		return fail(em, TS_ERR_INVALID, "temporary '%s' needs %lld bytes, more than this machine's "
			    "%lld bytes of memory", buf->name, (long long)bytes,
			    (long long)pages * (long long)page), false;
	LLVMValueRef p, mem = NULL;
	if (bytes <= MAX_STACK_BYTES) {
		LLVMValueRef a = entry_alloca(em, LLVMArrayType(et, (unsigned)buf->size), 64);
		p = LLVMBuildBitCast(em->b, a, LLVMPointerType(et, 0), buf->name);
	} else {
		/* 64-byte aligned like every other buffer (buffer_param) */
		LLVMValueRef args[2] = {LLVMConstInt(em->i64, 64, 0),
					LLVMConstInt(em->i64, (unsigned long long)((bytes + 63) & ~63LL), 0)};
		mem = call_fn(em, "aligned_alloc", em->i8p, (LLVMTypeRef[]){em->i64, em->i64}, 2, args);
		p = LLVMBuildBitCast(em->b, mem, LLVMPointerType(et, 0), buf->name);
	}
	/* an allocation that fails anyway (the memory is taken) skips the body
	 * instead of writing through NULL */
	LLVMBasicBlockRef body = NULL, done = NULL;
	if (mem) {
		body = LLVMAppendBasicBlockInContext(em->c, em->fn, "alloc.ok");
		done = LLVMAppendBasicBlockInContext(em->c, em->fn, "alloc.done");
		LLVMBuildCondBr(em->b, LLVMBuildIsNull(em->b, mem, ""), done, body);
		LLVMPositionBuilderAtEnd(em->b, body);
	}
	int mark = em->nbind;
	if (!push(em, buf, p, true) || !st(em, s->u.alloc.body))
		return false;
	em->nbind = mark;
	if (mem) {
		call_fn(em, "free", em->void_t, &em->i8p, 1, &mem);
		LLVMBuildBr(em->b, done);
		LLVMPositionBuilderAtEnd(em->b, done);
	}
	return true;
}

static bool st_if(emitter *em, const ts_stmt *s)
{
	LLVMValueRef c = ex(em, s->u.if_.cond);
	if (!c)
		return false;
	LLVMBasicBlockRef then_b = LLVMAppendBasicBlockInContext(em->c, em->fn, "if.then");
	LLVMBasicBlockRef else_b = s->u.if_.else_s ? LLVMAppendBasicBlockInContext(em->c, em->fn, "if.else") : NULL;
	LLVMBasicBlockRef end = LLVMAppendBasicBlockInContext(em->c, em->fn, "if.end");
	LLVMBuildCondBr(em->b, c, then_b, else_b ? else_b : end);
	LLVMPositionBuilderAtEnd(em->b, then_b);
	if (!st(em, s->u.if_.then_s))
		return false;
	LLVMBuildBr(em->b, end);
	if (else_b) {
		LLVMPositionBuilderAtEnd(em->b, else_b);
		if (!st(em, s->u.if_.else_s))
			return false;
		LLVMBuildBr(em->b, end);
	}
	LLVMPositionBuilderAtEnd(em->b, end);
	return true;
}

static bool st(emitter *em, const ts_stmt *s)
{
	if (em->st)
		return false;
	switch (s->kind) {
	case IR_S_FOR:
		return st_for(em, s);
	case IR_S_STORE:
		return st_store(em, s);
	case IR_S_ALLOCATE:
		return st_allocate(em, s);
	case IR_S_IF:
		return st_if(em, s);
	case IR_S_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			if (!st(em, s->u.seq.s[i]))
				return false;
		return true;
	case IR_S_LET: {
		LLVMValueRef v = ex(em, s->u.let.value);
		/* a size variable lies in [1, its bound] (ir.h ts_func) */
		ir_interval iv = cg_let_range(em->f, s->u.let.var, cg_ranges_bound(&em->ranges, s->u.let.value));
		int mark = em->nbind, rmark = em->ranges.n;
		if (!v || !bind_var(em, s->u.let.var, v, iv) || !st(em, s->u.let.body))
			return false;
		em->nbind = mark;
		cg_ranges_pop(&em->ranges, rmark);
		return true;
	}
	case IR_S_EVALUATE:
		return ex(em, s->u.eval.value) != NULL;
	case IR_S_PREFETCH:
		return st_prefetch(em, s->u.prefetch.value);
	case IR_S_BARRIER:
		/* no GPU threads on the CPU: nothing to wait for */
		return true;
	case IR_S_PROVIDE:
	case IR_S_REALIZE:
		return fail(em, TS_ERR_INVALID, "%s is not lowered to buffers",
			    ir_stmt_kind_name(s->kind)), false;
	case IR_STMT_KIND_COUNT:
		break;
	}
	return fail(em, TS_ERR_INTERNAL, "unknown statement kind %d", (int)s->kind), false;
}

/* ---- the entry point ---------------------------------------------------------- */

static LLVMValueRef emit_inner(emitter *em, ts_stmt *body)
{
	const ts_func *f = em->f;
	unsigned n = (unsigned)f->nparams;
	LLVMTypeRef *params = ts_alloc_array(em->ctx, n ? n : 1, sizeof(*params));
	char *name = ts_sprintf(em->ctx, "%s.inner", em->symbol);
	if (!params || !name)
		return fail(em, TS_ERR_NOMEM, "out of memory");
	for (unsigned i = 0; i < n; i++) {
		LLVMTypeRef et = elem_type(em, f->params[i]->dtype, true);
		if (!et)
			return NULL;
		params[i] = LLVMPointerType(et, 0);
	}
	LLVMValueRef fn = inner_function(em, name, em->i32, params, n);
	begin_function(em, fn);
	for (unsigned i = 0; i < n; i++) {
		buffer_param(em, fn, i, f->params[i]);
		push(em, f->params[i], LLVMGetParam(fn, i), true);
	}
	if (!st(em, body))
		return NULL;
	LLVMBuildRet(em->b, LLVMConstInt(em->i32, 0, 0));
	end_function(em);
	return fn;
}

/* int32_t name(void **args): args[i] is the data of parameter i. */
static void emit_wrapper(emitter *em, LLVMValueRef inner)
{
	const ts_func *f = em->f;
	LLVMTypeRef argt = LLVMPointerType(em->i8p, 0);
	LLVMValueRef fn = LLVMAddFunction(em->mod, em->symbol, LLVMFunctionType(em->i32, &argt, 1, 0));
	add_attr(em, fn, LLVMAttributeFunctionIndex, "nounwind", 0);
	LLVMSetValueName2(LLVMGetParam(fn, 0), "args", 4);
	LLVMPositionBuilderAtEnd(em->b, LLVMAppendBasicBlockInContext(em->c, fn, "entry"));
	LLVMValueRef *args = ts_alloc_array(em->ctx, (size_t)f->nparams + 1, sizeof(*args));
	if (!args) {
		fail(em, TS_ERR_NOMEM, "out of memory");
		return;
	}
	for (int i = 0; i < f->nparams; i++) {
		LLVMValueRef ix = LLVMConstInt(em->i64, (unsigned long long)i, 0);
		LLVMValueRef slot = LLVMBuildInBoundsGEP2(em->b, em->i8p, LLVMGetParam(fn, 0), &ix, 1, "");
		LLVMValueRef p = LLVMBuildLoad2(em->b, em->i8p, slot, f->params[i]->name);
		args[i] = LLVMBuildBitCast(em->b, p, LLVMTypeOf(LLVMGetParam(inner, (unsigned)i)), "");
	}
	LLVMValueRef r = LLVMBuildCall2(em->b, LLVMGlobalGetValueType(inner), inner, args,
					(unsigned)f->nparams, "");
	LLVMBuildRet(em->b, r);
}

/* 16-bit floats: what has one first, to name it in the refusal. */
static bool f16x(ts_dtype t)
{
	return ts_dtype_is_float(t) && t.bits == 16;
}

typedef struct half_use {
	const char *what, *name;
	ts_dtype dtype;
} half_use;

static bool half_alloc(ts_stmt *s, void *data)
{
	half_use *h = data;
	if (!h->what && s->kind == IR_S_ALLOCATE && f16x(s->u.alloc.buf->dtype))
		*h = (half_use){"buffer", s->u.alloc.buf->name, s->u.alloc.buf->dtype};
	return !h->what;
}

static bool half_expr(ts_expr *e, void *data)
{
	half_use *h = data;
	if (!h->what && f16x(e->dtype))
		*h = (half_use){e->kind == IR_CAST ? "a cast to" : "an expression of", NULL, e->dtype};
	return !h->what;
}

/* The LLVM backend computes in float32 and float64 only: a 16-bit float
 * parameter, buffer or value is refused by name, before any code. */
static ts_status no_half(ts_ctx *ctx, const ts_func *f)
{
	half_use h = {0};
	for (int i = 0; i < f->nparams && !h.what; i++)
		if (f->params[i] && f16x(f->params[i]->dtype))
			h = (half_use){"parameter", f->params[i]->name, f->params[i]->dtype};
	if (!h.what && f->body)
		ir_stmt_visit(f->body, half_alloc, half_expr, &h);
	if (!h.what)
		return TS_OK;
	char buf[24];
	ts_dtype_str(ts_dtype_element(h.dtype), buf);
	return ts_error(ctx, TS_ERR_UNSUPPORTED,
			"llvm(%s): %s %s%s%s, a dtype the LLVM backend does not support (use float32 or "
			"float64 there; the C and CUDA targets take 16-bit floats)",
			f->name, h.what, h.name ? h.name : buf, h.name ? " is " : "", h.name ? buf : "");
}

ts_status cg_llvm_emit(ts_ctx *ctx, const ts_func *f, const char *symbol, ts_stmt *body,
		       LLVMModuleRef mod, char vecmath)
{
	ts_status half = no_half(ctx, f);
	if (half)
		return half;
	emitter em = {.ctx = ctx, .f = f, .symbol = symbol, .mod = mod, .ranges = {.ctx = ctx},
		      .c = LLVMGetModuleContext(mod), .vecmath = vecmath};
	em.i1 = LLVMInt1TypeInContext(em.c);
	em.i8 = LLVMInt8TypeInContext(em.c);
	em.i32 = LLVMInt32TypeInContext(em.c);
	em.i64 = LLVMInt64TypeInContext(em.c);
	em.i8p = LLVMPointerType(em.i8, 0);
	em.void_t = LLVMVoidTypeInContext(em.c);
	em.b = LLVMCreateBuilderInContext(em.c);
	em.ab = LLVMCreateBuilderInContext(em.c);
	/* f's loops before cg_vectorize, which leaves serial those it cannot
	 * turn into vector code */
	int nvec = 0;
	if (f->body)
		ir_stmt_visit(f->body, count_vectorized, NULL, &nvec);
	em.scalar_loops = nvec == 0;
	LLVMValueRef inner = emit_inner(&em, body);
	if (inner)
		emit_wrapper(&em, inner);
	LLVMDisposeBuilder(em.b);
	LLVMDisposeBuilder(em.ab);
	if (!inner && !em.st)
		em.st = ts_error(ctx, TS_ERR_INTERNAL, "llvm(%s): code generation failed", f->name);
	return em.st;
}
