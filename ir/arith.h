/*
 * arith.h - arithmetic analysis of the IR: integer intervals, the simplifier
 * and a prover for conditions.
 *
 * Everything here reasons about the IR's stated semantics (ir.h): integers
 * wrap at their dtype's width, TRUNC* round toward zero and FLOOR* toward
 * negative infinity.  Ranges say which values variables take; a variable
 * without a range may take any value of its dtype.  Every answer is sound
 * for every assignment within the ranges: when a fact cannot be proved
 * (say, because an index might overflow), the expression is left as is.
 *
 * Simplified integer index expressions come out in one canonical, readable
 * form: a sum of terms `atom*coefficient` in order of first appearance,
 * then the constant, e.g. `i*4 + j - k*2 + 3`.
 */
#ifndef TESSERA_IR_ARITH_H
#define TESSERA_IR_ARITH_H

#include "ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Inclusive integer interval; IR_NEG_INF / IR_POS_INF (INT64_MIN/INT64_MAX)
 * mean unbounded. */
typedef struct ir_interval {
	int64_t min, max;
} ir_interval;
#define IR_NEG_INF INT64_MIN
#define IR_POS_INF INT64_MAX

/* A variable known to lie in [min, min + extent). */
typedef struct ir_range {
	const ts_expr *var;
	int64_t min, extent;
} ir_range;

/* Interval of an integer (or bool) scalar expression given variable ranges;
 * later ranges of the same variable take precedence.  Sound: the true value
 * always lies inside.  For dtypes of 32 bits or more an end that only the
 * dtype itself limits is reported as IR_NEG_INF / IR_POS_INF; for narrower
 * dtypes the dtype's limits are returned (uint8 x: [0, 255]).  Vectors bound
 * every lane; floats are unbounded.  There is no context to report to, so
 * invalid arguments (a NULL e, n < 0, NULL ranges with n > 0) give the
 * unbounded [IR_NEG_INF, IR_POS_INF]. */
ir_interval ir_bound_of(const ts_expr *e, int n, const ir_range *ranges);

/* How an integer expression varies with variable v, judged from its form
 * (+, -, min, max, multiplication and floor division by constants; any
 * other node using v is unknown), as values, ignoring wrap-around: index
 * arithmetic that is bounded never wraps. */
typedef enum ir_mono {
	IR_MONO_DOWN = -1, /* nonincreasing */
	IR_MONO_INDEP = 0, /* does not use v */
	IR_MONO_UP = 1,    /* nondecreasing */
	IR_MONO_UNKNOWN = 2
} ir_mono;
ir_mono ir_monotone(ts_expr *e, const ts_expr *v);
/* The direction of a - b in v. */
ir_mono ir_monotone_diff(ts_expr *a, ts_expr *b, const ts_expr *v);

/* Simplified expression (same value for every assignment within ranges).
 * Returns e itself when nothing changed; NULL on allocation failure, on a
 * NULL e, or on invalid ranges (n < 0, NULL ranges with n > 0, a
 * non-variable or a non-positive extent), with the error recorded in ctx. */
ts_expr *ir_simplify(ts_ctx *ctx, ts_expr *e, int n, const ir_range *ranges);

/* true if cond (bool) is provably true for all values within ranges; false
 * also for a NULL or non-bool cond, and for invalid ranges (recorded in ctx
 * as by ir_simplify). */
bool ir_can_prove(ts_ctx *ctx, ts_expr *cond, int n, const ir_range *ranges);

/* Simplifies every expression of a loop-IR statement, using the ranges of
 * the enclosing FOR loops (exact when min/extent are constants, otherwise
 * from their bounds) and of LET variables; a LET of a constant is
 * substituted away, and the branches of an IF comparing a variable with a
 * constant (or a conjunction of such) narrow that variable's range.  Removes IFs whose condition is provably true or false,
 * replaces a loop of extent 1 by its body with the variable substituted by
 * min (except thread-bound loops, which keep their binding), drops EVALUATE
 * (expressions have no side effects) and every statement left empty.  A
 * statement that vanishes entirely comes back as `EVALUATE(0)`, the empty
 * statement.  Returns s when unchanged; NULL on failure, as ir_simplify. */
ts_stmt *ir_simplify_stmt(ts_ctx *ctx, ts_stmt *s, int n, const ir_range *ranges);

/* Folds an operator whose operands are all immediates (binary operators,
 * NOT, CAST, CALL, SELECT on a constant condition) into an immediate.
 * Integers wrap to the dtype width, floats round to their dtype; division
 * by zero, MIN / -1 and conversions of NaN or out-of-range floats fold to
 * the values ir.h defines.  Returns e
 * itself when nothing folds; NULL on allocation failure or a NULL e (the
 * error recorded in ctx). */
ts_expr *ir_fold_const(ts_ctx *ctx, ts_expr *e);

/* The canonical stored form of an integer immediate of dtype t: wrapped to
 * t's width (sign-extended for int, zero-extended for uint, 0/1 for bool). */
int64_t ir_wrap_int(ts_dtype t, int64_t v);
/* ir.h's float to integer conversion, the one every evaluator and the
 * folder share: NaN is 0, values beyond t saturate to its ends (0 for
 * negative values of unsigned t), the rest truncates toward zero; bool is
 * v != 0.  Returned in ir_wrap_int's stored form; 0 for a non-integer t. */
int64_t ir_float_to_int(ts_dtype t, double v);
/* The values of integer (or bool) dtype t as doubles: [*lo, *top), both
 * exact (0 or powers of two); false, touching neither, for a float or
 * handle dtype or a NULL lo or top. */
bool ir_int_range(ts_dtype t, double *lo, double *top);
/* ir.h's float min (max when `max`), the one every evaluator, the folder
 * and the C emitter's helper share: a NaN operand is ignored (either
 * operand's NaN; both NaN gives NaN), and equal operands (+0 and -0) give
 * b, so the sign of a zero does not depend on the library. */
double ir_fminmax(bool max, double a, double b);

/* A double rounded to the precision and range of float dtype t (float16,
 * bfloat16, float32: round to nearest even, overflow to infinity). */
double ir_round_float(ts_dtype t, double v);
/* ir.h's CAST to float dtype t of an integer v (read as unsigned when
 * `is_unsigned`) or of a float64 value d: the value every evaluator,
 * backend and folder gives (float16 and bfloat16 through float32). */
double ir_cast_int_to_float(ts_dtype t, int64_t v, bool is_unsigned);
double ir_cast_float_to_float(ts_dtype t, double d);

/* A math intrinsic in double precision (the value both the folder and the
 * reference evaluator use); likely(x) is x. */
double ir_intrinsic_eval(ir_intrinsic op, double x, double y);
/* x rounded to TF32 as ts_round_tf32 says. */
float ir_round_tf32(float x);

#ifdef __cplusplus
}
#endif

#endif
