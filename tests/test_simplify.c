/* test_simplify.c - constant folding, canonical forms, division rules, the
 * prover and statement simplification; a randomized check that simplified
 * expressions keep their value at every point of their variables' ranges. */
#include "testutil.h"

#include <math.h>
#include <string.h>

#include "int_eval.h"
#include "ir/arith.h"

#define I(v) ts_int(ctx, (v))
#define F(v) ts_float(ctx, (v))
#define ADD(a, b) ts_add(ctx, (a), (b))
#define SUB(a, b) ts_sub(ctx, (a), (b))
#define MUL(a, b) ts_mul(ctx, (a), (b))
#define FDIV(a, b) ts_floordiv(ctx, (a), (b))
#define FMOD(a, b) ts_floormod(ctx, (a), (b))
#define TDIV(a, b) ts_truncdiv(ctx, (a), (b))
#define TMOD(a, b) ts_truncmod(ctx, (a), (b))
#define MIN(a, b) ts_min(ctx, (a), (b))
#define MAX(a, b) ts_max(ctx, (a), (b))
#define RANGES(...) TS_COUNT_OF(((ir_range[]){__VA_ARGS__})), ((ir_range[]){__VA_ARGS__})

static void check(ts_ctx *ctx, ts_expr *e, int n, const ir_range *r, const char *want, int line)
{
	ck_assert_msg(e != NULL, "line %d: expression not built: %s", line, ts_last_error(ctx));
	ts_expr *s = ir_simplify(ctx, e, n, r);
	ck_assert_msg(s != NULL, "line %d: simplify failed: %s", line, ts_last_error(ctx));
	const char *got = ir_expr_str(ctx, s);
	ck_assert_msg(strcmp(got, want) == 0, "line %d: %s simplified to '%s', want '%s'", line,
		      ir_expr_str(ctx, e), got, want);
}

#define CHECK(e, want) check(ctx, (e), 0, NULL, (want), __LINE__)
#define CHECK_R(e, want, ...) check(ctx, (e), RANGES(__VA_ARGS__), (want), __LINE__)

START_TEST(test_fold_int)
{
	ts_ctx *ctx = ts_ctx_new();
	CHECK(ADD(I(3), I(4)), "7");
	CHECK(MUL(I(7), I(-3)), "-21");
	CHECK(FDIV(I(-7), I(2)), "-4");
	CHECK(FMOD(I(-7), I(2)), "1");
	CHECK(FDIV(I(7), I(-2)), "-4");
	CHECK(FMOD(I(7), I(-2)), "-1");
	CHECK(FDIV(I(-7), I(-2)), "3");
	CHECK(FMOD(I(-7), I(-2)), "-1");
	CHECK(TDIV(I(-7), I(2)), "-3");
	CHECK(TMOD(I(-7), I(2)), "-1");
	CHECK(TMOD(I(7), I(-2)), "1");
	CHECK(TDIV(I(7), I(-2)), "-3");
	CHECK(FMOD(I(6), I(-3)), "0");
	/* wrapping at the dtype's width */
	CHECK(ADD(I(INT32_MAX), I(1)), "-2147483648");
	CHECK(ts_add(ctx, ts_const(ctx, ts_int8, 100), ts_const(ctx, ts_int8, 100)), "int8(-56)");
	CHECK(ts_add(ctx, ts_const(ctx, ts_uint8, 200), ts_const(ctx, ts_uint8, 100)), "uint8(44)");
	CHECK(ts_sub(ctx, ts_const(ctx, ts_uint8, 1), ts_const(ctx, ts_uint8, 2)), "uint8(255)");
	CHECK(TDIV(I(INT32_MIN), I(-1)), "-2147483648");
	/* unsigned division and comparison */
	CHECK(ts_floordiv(ctx, ts_const(ctx, ts_uint8, 250), ts_const(ctx, ts_uint8, 7)), "uint8(35)");
	CHECK(ts_lt(ctx, ts_const(ctx, ts_uint8, 100), ts_const(ctx, ts_uint8, 200)), "true");
	/* the defined corners (ir.h): x / 0 = x % 0 = 0, MIN / -1 = MIN */
	CHECK(TDIV(I(7), I(0)), "0");
	CHECK(FMOD(I(7), I(0)), "0");
	ts_expr *m = ts_const(ctx, ts_int64, INT64_MIN);
	CHECK(ts_truncdiv(ctx, m, ts_const(ctx, ts_int64, -1)), "int64(-9223372036854775808)");
	CHECK(ts_truncmod(ctx, m, ts_const(ctx, ts_int64, -1)), "int64(0)");
	ts_expr *y = ts_var(ctx, "y");
	CHECK(TDIV(y, I(0)), "0");
	CHECK(FMOD(y, I(-1)), "0");
	CHECK(MIN(I(3), I(-2)), "-2");
	CHECK(MAX(I(3), I(-2)), "3");
	CHECK(ts_le(ctx, I(3), I(3)), "true");
	CHECK(ts_ne(ctx, I(3), I(3)), "false");
	CHECK(ts_and(ctx, ts_lt(ctx, I(1), I(2)), ts_gt(ctx, I(1), I(2))), "false");
	CHECK(ts_or(ctx, ts_lt(ctx, I(1), I(2)), ts_gt(ctx, I(1), I(2))), "true");
	CHECK(ts_not(ctx, ts_eq(ctx, I(1), I(2))), "true");
	CHECK(ts_select(ctx, ts_ge(ctx, I(5), I(2)), I(10), I(20)), "10");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_fold_float_and_cast)
{
	ts_ctx *ctx = ts_ctx_new();
	/* float32 results are rounded to float */
	CHECK(ADD(F(0.1), F(0.2)), "0.300000012f");
	CHECK(ts_add(ctx, ts_fconst(ctx, ts_float64, 0.5), ts_fconst(ctx, ts_float64, 0.25)),
	      "float64(0.75)");
	CHECK(MUL(F(3e38), F(10)), "inff");
	CHECK(ts_add(ctx, ts_fconst(ctx, ts_float16, 1000), ts_fconst(ctx, ts_float16, 0.1)),
	      "float16(1000.0)");
	CHECK(ts_add(ctx, ts_fconst(ctx, ts_bfloat16, 1), ts_fconst(ctx, ts_bfloat16, 1.0 / 256)),
	      "bfloat16(1.0)");
	CHECK(ts_div(ctx, F(1), F(4)), "0.25f");
	CHECK(ts_lt(ctx, F(1.5), F(2)), "true");
	CHECK(MIN(F(1), F(-2.5)), "-2.5f");
	CHECK(ts_exp(ctx, F(0)), "1.0f");
	CHECK(ts_sqrt(ctx, F(2)), "1.41421354f");
	CHECK(ts_pow(ctx, F(2), F(10)), "1024.0f");
	CHECK(ts_fabs(ctx, F(-2.5)), "2.5f");
	CHECK(ts_sigmoid(ctx, F(0)), "0.5f");
	/* casts */
	CHECK(ts_cast(ctx, ts_int32, F(3.7)), "3");
	CHECK(ts_cast(ctx, ts_int32, F(-3.7)), "-3");
	CHECK(ts_cast(ctx, ts_float32, I(7)), "7.0f");
	CHECK(ts_cast(ctx, ts_int8, I(300)), "int8(44)");
	CHECK(ts_cast(ctx, ts_uint8, I(-1)), "uint8(255)");
	CHECK(ts_cast(ctx, ts_bool, I(5)), "true");
	CHECK(ts_cast(ctx, ts_int32, F(1e10)), "2147483647"); /* saturates (ir.h) */
	CHECK(ts_cast(ctx, ts_uint8, F(-3.7)), "uint8(0)");
	CHECK(ts_cast(ctx, ts_int8, ts_fconst(ctx, ts_float32, NAN)), "int8(0)");
	ts_expr *x = ts_var_typed(ctx, "x", ts_float32);
	CHECK(MUL(x, F(1)), "x");
	CHECK(ADD(x, F(0)), "x + 0.0f"); /* -0.0 + 0.0 is +0.0 */
	ts_expr *i = ts_var(ctx, "i");
	CHECK(ts_cast(ctx, ts_int32, ts_cast(ctx, ts_int64, i)), "i");
	CHECK(ts_cast(ctx, ts_int32, ts_cast(ctx, ts_int8, i)), "int32(int8(i))");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_logic_and_select)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *b = ts_var_typed(ctx, "b", ts_bool), *c = ts_var_typed(ctx, "c", ts_bool);
	ts_expr *t = ts_const(ctx, ts_bool, 1), *f = ts_const(ctx, ts_bool, 0);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	CHECK(ts_and(ctx, t, b), "b");
	CHECK(ts_and(ctx, b, f), "false");
	CHECK(ts_or(ctx, b, t), "true");
	CHECK(ts_or(ctx, f, b), "b");
	CHECK(ts_and(ctx, b, b), "b");
	CHECK(ts_and(ctx, b, c), "b && c");
	CHECK(ts_not(ctx, ts_not(ctx, b)), "b");
	CHECK(ts_not(ctx, ts_lt(ctx, i, j)), "i >= j");
	CHECK(ts_not(ctx, ts_eq(ctx, i, j)), "i != j");
	CHECK(ts_select(ctx, t, i, j), "i");
	CHECK(ts_select(ctx, b, ADD(i, I(1)), ADD(I(1), i)), "i + 1");
	CHECK(ts_select(ctx, b, i, j), "select(b, i, j)");
	ts_expr *x = ts_var_typed(ctx, "x", ts_float32), *y = ts_var_typed(ctx, "y", ts_float32);
	CHECK(ts_not(ctx, ts_lt(ctx, x, y)), "!(x < y)"); /* NaN */
	/* in select(c, t, f), c's conjuncts hold in t */
	ts_expr *inner = ts_select(ctx, b, x, F(0));
	CHECK(ts_select(ctx, b, MUL(inner, y), F(1)), "select(b, x*y, 1.0f)");
	CHECK(ts_select(ctx, ts_and(ctx, c, b), MUL(inner, y), F(1)), "select(c && b, x*y, 1.0f)");
	CHECK(ts_select(ctx, c, MUL(inner, y), F(1)), "select(c, select(b, x, 0.0f)*y, 1.0f)");
	/* but not in f: c false leaves b unknown */
	CHECK(ts_select(ctx, ts_and(ctx, c, b), F(1), inner), "select(c && b, 1.0f, select(b, x, 0.0f))");
	/* -0.0 is the identity of +, +0.0 is not (-0.0 + 0.0 is +0.0) */
	ts_expr *nz = F(-0.0);
	CHECK(ADD(x, nz), "x");
	CHECK(ADD(nz, x), "x");
	/* a term a test leaves out of a sum: the update or nothing */
	ts_expr *a = ts_var_typed(ctx, "a", ts_float32);
	CHECK(ADD(a, ts_select(ctx, b, MUL(x, y), nz)), "select(b, a + x*y, a)");
	CHECK(ADD(ts_select(ctx, b, MUL(x, y), nz), a), "select(b, a + x*y, a)");
	CHECK(ADD(a, ts_select(ctx, f, MUL(x, y), nz)), "a");
	CHECK(ADD(a, ts_select(ctx, b, MUL(x, y), F(0))), "a + select(b, x*y, 0.0f)");
	/* only onto one value: a written twice, a sum of such terms would
	 * double at each */
	CHECK(ADD(MUL(a, x), ts_select(ctx, b, y, nz)), "a*x + select(b, y, -0.0f)");
	ts_expr *sum = a;
	for (int k = 0; k < 40; k++)
		sum = ADD(sum, ts_select(ctx, ts_lt(ctx, i, I(k)), MUL(x, F(k + 1)), nz));
	ts_expr *once = ir_simplify(ctx, sum, 0, NULL), *twice = once ? ir_simplify(ctx, once, 0, NULL) : NULL;
	ck_assert_msg(twice != NULL, "%s", ts_last_error(ctx));
	ck_assert_uint_lt(strlen(ir_expr_str(ctx, twice)), 4000);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_canonical)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j"), *k = ts_var(ctx, "k");
	CHECK(SUB(ADD(MUL(i, I(4)), j), MUL(i, I(4))), "j");
	CHECK(ADD(MUL(i, I(2)), MUL(i, I(3))), "i*5");
	CHECK(SUB(MUL(ADD(i, I(1)), I(4)), I(4)), "i*4");
	CHECK(SUB(ADD(j, i), j), "i");
	CHECK(ADD(ADD(MUL(ADD(i, I(2)), I(3)), MUL(j, I(2))), I(-1)), "i*3 + j*2 + 5");
	CHECK(MUL(I(2), ADD(i, j)), "i*2 + j*2");
	CHECK(ADD(MUL(j, I(2)), i), "j*2 + i");
	CHECK(SUB(I(16), i), "16 - i");
	CHECK(SUB(i, ADD(i, j)), "0 - j");
	CHECK(SUB(ADD(k, I(3)), ADD(i, I(8))), "k - i - 5");
	CHECK(ADD(SUB(k, I(5)), MUL(i, I(0))), "k - 5");
	CHECK(MUL(MUL(i, I(3)), SUB(j, I(1))), "i*3*(j - 1)");
	CHECK(SUB(MUL(i, j), MUL(i, j)), "0");
	CHECK(ADD(FDIV(i, I(3)), FDIV(i, I(3))), "floordiv(i, 3)*2");
	/* the ring identities hold under wrapping, so no ranges are needed */
	CHECK(SUB(ADD(i, I(INT32_MAX)), I(INT32_MAX)), "i");
	ts_expr *u = ts_var_typed(ctx, "u", ts_uint8);
	CHECK(ts_sub(ctx, ts_add(ctx, u, ts_const(ctx, ts_uint8, 3)), ts_const(ctx, ts_uint8, 5)),
	      "u - uint8(2)");
	/* already canonical: the same pointer comes back */
	ts_expr *e = ADD(MUL(i, I(4)), j);
	ck_assert_ptr_eq(ir_simplify(ctx, e, 0, NULL), e);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_divmod)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *x = ts_var(ctx, "x"), *y = ts_var(ctx, "y"), *z = ts_var(ctx, "z");
	ts_expr *w = ts_var(ctx, "w"), *n = ts_var(ctx, "n");
	ir_range rx = {x, 0, 16}, ry = {y, 0, 8}, rz = {z, 0, 100}, rn = {n, -8, 16};
	ts_expr *xy = ADD(MUL(x, I(8)), y);
	CHECK_R(FDIV(xy, I(8)), "x", rx, ry);
	CHECK_R(FMOD(xy, I(8)), "y", rx, ry);
	CHECK_R(TDIV(xy, I(8)), "x", rx, ry);
	CHECK_R(TMOD(xy, I(8)), "y", rx, ry);
	CHECK_R(FDIV(MUL(x, I(8)), I(4)), "x*2", rx);
	CHECK_R(FMOD(ADD(MUL(x, I(8)), I(3)), I(4)), "3", rx);
	CHECK_R(FDIV(y, I(8)), "0", ry);
	CHECK_R(FMOD(y, I(8)), "y", ry);
	CHECK_R(FDIV(ADD(xy, I(8)), I(8)), "x + 1", rx, ry);
	CHECK_R(FDIV(ADD(MUL(x, I(8)), z), I(8)), "x + floordiv(z, 8)", rx, rz);
	CHECK_R(FMOD(ADD(MUL(x, I(8)), z), I(8)), "floormod(z, 8)", rx, rz);
	/* a 4-lane group inside blocks of 8: the lane index never carries */
	ts_expr *v = ts_var(ctx, "v");
	ir_range rv = {v, 0, 4};
	ts_expr *xv = ADD(MUL(x, I(4)), v);
	CHECK_R(FDIV(xv, I(8)), "floordiv(x, 2)", rx, rv);
	CHECK_R(FMOD(xv, I(8)), "floormod(x, 2)*4 + v", rx, rv);
	CHECK_R(ADD(MUL(FDIV(xv, I(8)), I(8)), FMOD(xv, I(8))), "v + x*4", rx, rv);
	/* the lane index may reach the next block: nothing to do */
	CHECK_R(FDIV(ADD(MUL(x, I(4)), z), I(8)), "floordiv(x*4 + z, 8)", rx, rz);
	CHECK_R(FDIV(FDIV(x, I(2)), I(4)), "floordiv(x, 8)");
	CHECK_R(TDIV(TDIV(x, I(2)), I(4)), "x/8");
	CHECK_R(FMOD(FMOD(x, I(8)), I(4)), "floormod(x, 4)");
	CHECK_R(FDIV(MUL(x, I(4)), I(8)), "floordiv(x, 2)", rx);
	CHECK_R(FMOD(MUL(x, I(4)), I(8)), "floormod(x, 2)*4", rx);
	CHECK_R(FDIV(x, I(1)), "x");
	CHECK_R(FMOD(x, I(1)), "0");
	CHECK_R(FDIV(x, I(-2)), "floordiv(x, -2)", rx);
	/* a divisor known to exceed the dividend */
	CHECK_R(FDIV(y, ADD(z, I(20))), "0", ry, rz);
	CHECK_R(TMOD(y, ADD(z, I(20))), "y", ry, rz);
	/* negative dividends */
	CHECK_R(FDIV(n, I(8)), "floordiv(n, 8)", rn);
	CHECK_R(FDIV(ADD(n, I(8)), I(16)), "0", rn);
	CHECK_R(FMOD(ADD(n, I(8)), I(16)), "n + 8", rn);
	CHECK_R(FDIV(ADD(n, I(-16)), I(32)), "-1", rn);
	CHECK_R(FMOD(ADD(n, I(-16)), I(32)), "n + 16", rn);
	CHECK_R(TDIV(n, I(8)), "n/8", rn);
	CHECK_R(TMOD(ADD(n, I(8)), I(16)), "n + 8", rn);
	/* unranged w: w*8 might wrap, so nothing is claimed */
	CHECK_R(FDIV(ADD(MUL(w, I(8)), y), I(8)), "floordiv(w*8 + y, 8)", ry);
	CHECK_R(FMOD(ADD(MUL(w, I(8)), y), I(8)), "floormod(w*8 + y, 8)", ry);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_minmax_compare)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *x = ts_var(ctx, "x"), *y = ts_var(ctx, "y"), *z = ts_var(ctx, "z");
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ir_range rx = {x, 0, 16}, ry = {y, 0, 8}, ri = {i, 0, 16}, rj = {j, 0, 4};
	CHECK(MIN(x, x), "x");
	CHECK_R(MAX(ADD(x, I(1)), x), "x + 1", rx);
	CHECK_R(MIN(ADD(x, I(1)), x), "x", rx);
	CHECK_R(MIN(x, I(100)), "x", rx);
	CHECK_R(MAX(x, I(100)), "100", rx);
	CHECK_R(MIN(x, y), "min(x, y)", rx, ry);
	CHECK_R(MIN(y, ADD(x, I(8))), "y", rx, ry);
	CHECK(MIN(MIN(z, I(4)), I(2)), "min(z, 2)");
	CHECK(MAX(MAX(z, I(4)), I(2)), "max(z, 4)");
	CHECK(MAX(ADD(z, I(1)), z), "max(z + 1, z)"); /* z + 1 wraps at INT32_MAX */
	CHECK_R(ts_lt(ctx, i, I(16)), "true", ri);
	CHECK_R(ts_lt(ctx, ADD(MUL(i, I(4)), j), I(64)), "true", ri, rj);
	CHECK_R(ts_lt(ctx, ADD(MUL(i, I(4)), j), I(63)), "i*4 + j < 63", ri, rj);
	CHECK_R(ts_ge(ctx, i, I(0)), "true", ri);
	CHECK_R(ts_eq(ctx, i, I(20)), "false", ri);
	CHECK_R(ts_gt(ctx, ADD(i, I(1)), i), "true", ri);
	CHECK_R(ts_ne(ctx, i, ADD(i, I(1))), "true", ri);
	CHECK_R(ts_le(ctx, i, j), "i <= j", ri, rj);
	CHECK(ts_eq(ctx, i, i), "true");
	CHECK(ts_lt(ctx, I(3), i), "i > 3");
	CHECK(ts_ge(ctx, I(3), ADD(i, j)), "i + j <= 3");
	/* a single-point range makes the variable a constant */
	CHECK_R(ADD(i, j), "i + 3", (ir_range){j, 3, 1});
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_can_prove)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ir_range r[] = {{i, 0, 16}, {j, 0, 4}};
	ck_assert(ir_can_prove(ctx, ts_lt(ctx, i, I(16)), 2, r));
	ck_assert(!ir_can_prove(ctx, ts_lt(ctx, i, I(15)), 2, r));
	ck_assert(ir_can_prove(ctx, ts_and(ctx, ts_lt(ctx, i, I(16)), ts_lt(ctx, j, I(4))), 2, r));
	ck_assert(ir_can_prove(ctx, ts_lt(ctx, ADD(MUL(j, I(16)), i), I(64)), 2, r));
	ck_assert(!ir_can_prove(ctx, ts_lt(ctx, i, j), 2, r));
	ck_assert(!ir_can_prove(ctx, ts_lt(ctx, i, I(16)), 0, NULL));
	ck_assert_int_eq(ts_last_status(ctx), TS_OK);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_reduce_axes_ranged)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_iter *k = ir_iter_new(ctx, "k", 0, 8, TS_ITER_REDUCE);
	ts_expr *x = ts_var_typed(ctx, "x", ts_float32);
	ts_expr *src = ts_select(ctx, ts_lt(ctx, k->var, I(8)), x, F(0));
	ts_expr *e = ts_reduce(ctx, TS_REDUCE_SUM, src, 1, &k, NULL);
	CHECK(e, "sum(x, axis=[k: 0..8])");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_misuse)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *i = ts_var(ctx, "i");
	ir_range bad = {i, 0, 0};
	ck_assert_ptr_null(ir_simplify(ctx, ADD(i, I(1)), 1, &bad));
	tu_assert_error(ctx, "simplify: range of 'i' [0, +0) is empty or overflows int64");
	ts_clear_error(ctx);
	ir_range notvar = {ADD(i, I(1)), 0, 4};
	ck_assert_ptr_null(ir_simplify(ctx, i, 1, &notvar));
	tu_assert_error(ctx, "simplify: range 0 is not over a variable");
	ts_clear_error(ctx);
	ir_range over = {i, INT64_MAX, 2};
	ck_assert(!ir_can_prove(ctx, ts_lt(ctx, i, I(3)), 1, &over));
	tu_assert_error(ctx, "is empty or overflows int64");
	ts_clear_error(ctx);
	/* a NULL operand propagates */
	ck_assert_ptr_null(ir_simplify(ctx, NULL, 0, NULL));
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_alloc_failure)
{
	for (long n = 1; n < 40; n++) {
		ts_ctx *ctx = ts_ctx_new();
		ts_expr *x = ts_var(ctx, "x"), *y = ts_var(ctx, "y");
		ir_range r[] = {{x, 0, 16}, {y, 0, 8}};
		ts_expr *e = FDIV(ADD(ADD(MUL(x, I(8)), I(3)), MUL(y, I(16))), I(8));
		ts_ctx_fail_alloc_after(ctx, n);
		ts_expr *s = ir_simplify(ctx, e, 2, r);
		if (!s) {
			ck_assert_int_eq(ts_last_status(ctx), TS_ERR_NOMEM);
		} else {
			/* a result means no allocation failed on the way */
			ck_assert_int_eq(ts_last_status(ctx), TS_OK);
			const char *str = ir_expr_str(ctx, s);
			ck_assert(str ? strcmp(str, "x + y*2") == 0 : ts_last_status(ctx) == TS_ERR_NOMEM);
		}
		ts_ctx_free(ctx);
	}
}
END_TEST

/* ---- randomized soundness --------------------------------------------------------- */

typedef struct {
	uint64_t s;
} rng;

static uint32_t next(rng *r)
{
	r->s = r->s * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(r->s >> 33);
}

static int64_t pick(rng *r, int64_t lo, int64_t hi)
{
	return lo + (int64_t)(next(r) % (uint64_t)(hi - lo + 1));
}

static ts_expr *gen(ts_ctx *ctx, rng *r, int depth, ts_expr **vars, int nv);

static ts_expr *gen_leaf(ts_ctx *ctx, rng *r, ts_expr **vars, int nv)
{
	if (next(r) % 10 < 7)
		return vars[next(r) % (unsigned)nv];
	return I(pick(r, -10, 10));
}

static ts_expr *gen_divisor(ts_ctx *ctx, rng *r)
{
	int64_t d = pick(r, -3, 9);
	if (next(r) % 16 == 0)
		d = 1 << 20;
	return I(d == 0 ? 4 : d);
}

static ts_expr *gen(ts_ctx *ctx, rng *r, int depth, ts_expr **vars, int nv)
{
	if (depth == 0 || next(r) % 5 == 0)
		return gen_leaf(ctx, r, vars, nv);
	ts_expr *a = gen(ctx, r, depth - 1, vars, nv);
	switch (next(r) % 12) {
	case 0: case 1: return ADD(a, gen(ctx, r, depth - 1, vars, nv));
	case 2: return SUB(a, gen(ctx, r, depth - 1, vars, nv));
	case 3: return MUL(a, I(next(r) % 8 == 0 ? 1 << 24 : pick(r, -4, 8)));
	case 4: return MUL(a, gen(ctx, r, depth - 1, vars, nv));
	case 5: return FDIV(a, gen_divisor(ctx, r));
	case 6: return FMOD(a, gen_divisor(ctx, r));
	case 7: return next(r) % 2 ? TDIV(a, gen_divisor(ctx, r)) : TMOD(a, gen_divisor(ctx, r));
	case 8: return MIN(a, gen(ctx, r, depth - 1, vars, nv));
	case 9: return MAX(a, gen(ctx, r, depth - 1, vars, nv));
	case 10: {
		ts_expr *b = gen(ctx, r, depth - 1, vars, nv);
		ir_expr_kind k = (ir_expr_kind)(IR_EQ + next(r) % 6);
		return ts_select(ctx, ts_binary(ctx, k, a, b), gen(ctx, r, depth - 1, vars, nv),
				 gen(ctx, r, depth - 1, vars, nv));
	}
	default: return FDIV(ADD(MUL(a, I(8)), gen(ctx, r, depth - 1, vars, nv)), I(8));
	}
}

/* A tiny int32 evaluator with the IR's wrapping semantics. */
/* Calls fn at every point of the ranges (odometer order). */
static void each_point(int nv, const ir_range *r, int64_t *vals,
		       void (*fn)(const int64_t *vals, void *data), void *data)
{
	for (int i = 0; i < nv; i++)
		vals[i] = r[i].min;
	for (;;) {
		fn(vals, data);
		int d = 0;
		while (d < nv && ++vals[d] == r[d].min + r[d].extent) {
			vals[d] = r[d].min;
			d++;
		}
		if (d == nv)
			return;
	}
}

typedef struct {
	ts_ctx *ctx;
	ts_expr *orig, *simp;
	ir_interval bo, bs;
	int nv;
	ts_expr **vars;
	long checked;
} sound_case;

static void check_point(const int64_t *vals, void *data)
{
	sound_case *c = data;
	ie_env eo = {c->nv, c->vars, vals, false, NULL}, es = eo;
	int64_t a = ie_eval(c->orig, &eo);
	int64_t b = ie_eval(c->simp, &es);
	ck_assert_msg(!eo.unknown && !es.unknown, "eval: cannot evaluate %s",
		      ir_expr_kind_name((eo.unknown ? eo.unknown : es.unknown)->kind));
	ck_assert_msg(a == b, "%s -> %s: at x=%lld y=%lld z=%lld got %lld, want %lld",
		      ir_expr_str(c->ctx, c->orig), ir_expr_str(c->ctx, c->simp), (long long)vals[0],
		      (long long)vals[1], (long long)vals[2], (long long)b, (long long)a);
	ck_assert_msg(a >= c->bo.min && a <= c->bo.max, "%s = %lld outside [%lld, %lld]",
		      ir_expr_str(c->ctx, c->orig), (long long)a, (long long)c->bo.min,
		      (long long)c->bo.max);
	ck_assert_msg(b >= c->bs.min && b <= c->bs.max, "%s = %lld outside [%lld, %lld]",
		      ir_expr_str(c->ctx, c->simp), (long long)b, (long long)c->bs.min,
		      (long long)c->bs.max);
	c->checked++;
}

START_TEST(test_random_soundness)
{
	rng r = {12345};
	long changed = 0, checked = 0;
	for (int iter = 0; iter < 600; iter++) {
		ts_ctx *ctx = ts_ctx_new();
		ts_expr *vars[3] = {ts_var(ctx, "x"), ts_var(ctx, "y"), ts_var(ctx, "z")};
		ir_range rg[3];
		for (int v = 0; v < 3; v++)
			rg[v] = (ir_range){vars[v], pick(&r, -9, 9), pick(&r, 1, 9)};
		ts_expr *e = gen(ctx, &r, 4, vars, 3);
		ck_assert_ptr_nonnull(e);
		ts_expr *s = ir_simplify(ctx, e, 3, rg);
		ck_assert_msg(s != NULL, "simplify failed: %s", ts_last_error(ctx));
		changed += s != e;
		int64_t vals[3];
		sound_case c = {ctx, e, s, ir_bound_of(e, 3, rg), ir_bound_of(s, 3, rg), 3, vars, 0};
		each_point(3, rg, vals, check_point, &c);
		checked += c.checked;
		ts_ctx_free(ctx);
	}
	ck_assert_int_gt(changed, 300);
	ck_assert_int_gt(checked, 50000);
}
END_TEST

/* ---- float rules: signed zeros, NaN, selects -------------------------------------- */

/* A condition on i: a comparison, likely() or not, or two of them. */
static ts_expr *gen_cond(ts_ctx *ctx, rng *r, ts_expr *i, int depth)
{
	if (depth > 0 && pick(r, 0, 3) == 0)
		return ts_and(ctx, gen_cond(ctx, r, i, depth - 1), gen_cond(ctx, r, i, depth - 1));
	ts_expr *c = pick(r, 0, 1) ? ts_lt(ctx, i, I(pick(r, 0, 16))) : ts_ge(ctx, i, I(pick(r, 0, 16)));
	return pick(r, 0, 1) ? ts_call(ctx, IR_INTRIN_LIKELY, 1, &c) : c;
}

/* A float expression over reads A[i], B[i]: +, *, selects whose false arm
 * is often -0.0 (a term a test leaves out of a sum) and whose conditions
 * repeat (a padding's select inlined into such a term). */
static ts_expr *gen_float(ts_ctx *ctx, rng *r, int depth, ts_expr *i, ts_expr **leaves,
			  ts_expr **conds)
{
	if (depth == 0 || pick(r, 0, 4) == 0) {
		int k = (int)pick(r, 0, 4);
		return k < 2 ? leaves[k] : F(k == 2 ? -0.0 : k == 3 ? 0.0 : 1.5);
	}
	ts_expr *a = gen_float(ctx, r, depth - 1, i, leaves, conds);
	ts_expr *b = gen_float(ctx, r, depth - 1, i, leaves, conds);
	switch (pick(r, 0, 3)) {
	case 0:
		return ADD(a, b);
	case 1:
		return MUL(a, b);
	default:
		return ts_select(ctx, conds[pick(r, 0, 2)], a, pick(r, 0, 1) ? F(-0.0) : b);
	}
}

/* Simplified float expressions give the same bits as before (NaN for NaN)
 * at every i, with A and B holding signed zeros, infinities and NaN. */
START_TEST(test_random_float_soundness)
{
	static const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.5f, -2.0f, 3.0f};
	rng r = {777};
	int changed = 0;
	float a[16], b[16], want[16], got[16];
	for (int k = 0; k < 16; k++)
		a[k] = special[k % 8], b[k] = special[(k * 3 + 1) % 8];
	for (int iter = 0; iter < 400; iter++) {
		ts_ctx *ctx = ts_ctx_new();
		ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(16), ts_float32);
		ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(16), ts_float32);
		ts_expr *i = ts_var(ctx, "i");
		ts_expr *leaves[2] = {TS_READ(ctx, A, i), TS_READ(ctx, B, i)};
		ts_expr *conds[3];
		for (int c = 0; c < 3; c++)
			conds[c] = gen_cond(ctx, &r, i, 1);
		ts_expr *e = gen_float(ctx, &r, 4, i, leaves, conds);
		ts_expr *simple = ir_simplify(ctx, e, 1, &(ir_range){i, 0, 16});
		ck_assert_msg(simple != NULL, "simplify failed: %s", ts_last_error(ctx));
		changed += simple != e;
		ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(16), TS_VARS(i), e);
		ts_tensor *D = ts_compute(ctx, "D", TS_SHAPE(16), TS_VARS(i), simple);
		tu_nonnull(ctx, C);
		tu_nonnull(ctx, D);
		tu_ok(ctx, ts_eval(ctx, 3, (ts_tensor *[]){A, B, C}, (void *[]){a, b, want}));
		tu_ok(ctx, ts_eval(ctx, 3, (ts_tensor *[]){A, B, D}, (void *[]){a, b, got}));
		for (int k = 0; k < 16; k++)
			ck_assert_msg(memcmp(&want[k], &got[k], sizeof(float)) == 0 ||
					      (isnan(want[k]) && isnan(got[k])),
				      "i = %d: %s = %g, simplified %s = %g", k, ir_expr_str(ctx, e), want[k],
				      ir_expr_str(ctx, simple), got[k]);
		ts_ctx_free(ctx);
	}
	ck_assert_int_gt(changed, 100);
}
END_TEST

/* ---- statements -------------------------------------------------------------------- */

#define CHECK_S(st, want) check_stmt(ctx, (st), (want), __LINE__)

static void check_stmt(ts_ctx *ctx, ts_stmt *st, const char *want, int line)
{
	ck_assert_msg(st != NULL, "line %d: statement not built: %s", line, ts_last_error(ctx));
	ts_stmt *s = ir_simplify_stmt(ctx, st, 0, NULL);
	ck_assert_msg(s != NULL, "line %d: simplify failed: %s", line, ts_last_error(ctx));
	const char *got = ir_stmt_str(ctx, s);
	ck_assert_msg(strcmp(got, want) == 0, "line %d: got\n%s\nwant\n%s", line, got, want);
}

static ts_stmt *loop(ts_ctx *ctx, ts_expr *v, int64_t min, ts_expr *ext, ts_stmt *body)
{
	return ir_for(ctx, v, I(min), ext, TS_FOR_SERIAL, TS_THREAD_NONE, body);
}

/* 0.0 and -0.0 are two values (1 / x tells them apart): a select or a
 * min/max between them is not one of its arms. */
START_TEST(test_signed_zeros_differ)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *i = ts_var(ctx, "i");
	ts_expr *sel = ts_select(ctx, ts_lt(ctx, i, ts_int(ctx, 2)), ts_float(ctx, 0.0), ts_float(ctx, -0.0));
	ck_assert(!ir_expr_equal(ts_float(ctx, 0.0), ts_float(ctx, -0.0)));
	ck_assert(ir_expr_equal(ts_float(ctx, -0.0), ts_float(ctx, -0.0)));
	ck_assert(ir_expr_equal(ts_float(ctx, NAN), ts_float(ctx, NAN)));
	/* -0.0 alone is a sum's identity */
	ck_assert(ir_is_neg_zero(ts_float(ctx, -0.0)));
	ck_assert(!ir_is_neg_zero(ts_float(ctx, 0.0)) && !ir_is_neg_zero(ts_float(ctx, -NAN)));
	ck_assert(!ir_is_neg_zero(ts_int(ctx, 0)) && !ir_is_neg_zero(NULL));
	ck_assert_int_eq(ir_simplify(ctx, sel, 0, NULL)->kind, IR_SELECT);
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(4), TS_VARS(i), ts_div(ctx, ts_float(ctx, 1.0), sel));
	float want[4], got[4];
	tu_ok(ctx, ts_eval(ctx, 1, &C, (void *[]){want}));
	ts_func *f = ts_lower(ts_create_schedule(ctx, 1, &C), "f", 1, &C);
	tu_nonnull(ctx, f);
	tu_ok(ctx, cg_interp_run(ctx, f, (void *[]){got}));
	for (int k = 0; k < 4; k++)
		ck_assert_msg(isinf(got[k]) && signbit(got[k]) == signbit(want[k]) && (k < 2) == !signbit(got[k]),
			      "C[%d] = %g, the evaluator's %g", k, got[k], want[k]);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_stmt)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_buffer *A = ir_buffer_new(ctx, "A", ts_float32, 1, (int64_t[]){100}, TS_SCOPE_GLOBAL);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j"), *n = ts_var(ctx, "n");
	ts_expr *x = ts_var_typed(ctx, "x", ts_float32);
	ts_expr *ij = ADD(MUL(i, I(4)), j);
	ts_stmt *store = ir_store(ctx, A, ij, x);
	/* an if that the loop ranges prove is removed */
	CHECK_S(loop(ctx, i, 0, I(16), loop(ctx, j, 0, I(4), ir_if(ctx, ts_lt(ctx, ij, I(64)), store, NULL))),
		"for (i, 0, 16) {\n  for (j, 0, 4) {\n    A[i*4 + j] = x\n  }\n}\n");
	/* a tail guard that is not provable stays */
	CHECK_S(loop(ctx, i, 0, I(16), loop(ctx, j, 0, I(4), ir_if(ctx, ts_lt(ctx, ij, I(62)), store, NULL))),
		"for (i, 0, 16) {\n  for (j, 0, 4) {\n    if (i*4 + j < 62) {\n"
		"      A[i*4 + j] = x\n    }\n  }\n}\n");
	/* a loop of extent 1 disappears */
	CHECK_S(loop(ctx, i, 0, I(16), loop(ctx, j, 2, I(1), store)),
		"for (i, 0, 16) {\n  A[i*4 + 2] = x\n}\n");
	/* a store of the element it loads changes nothing: gone (a loop
	 * left empty with it) */
	CHECK_S(loop(ctx, i, 0, I(16), loop(ctx, j, 0, I(4), ir_store(ctx, A, ij, ts_load(ctx, A, ij)))),
		"0\n");
	/* another element, or another buffer, stays */
	CHECK_S(ir_store(ctx, A, ij, ts_load(ctx, A, ADD(ij, I(1)))), "A[i*4 + j] = A[i*4 + j + 1]\n");
	/* provably false: the else branch remains */
	CHECK_S(loop(ctx, i, 0, I(16), ir_if(ctx, ts_ge(ctx, i, I(16)), ir_store(ctx, A, i, x),
					      ir_store(ctx, A, i, F(2)))),
		"for (i, 0, 16) {\n  A[i] = 2.0f\n}\n");
	/* a let of a constant is substituted; EVALUATE is dropped */
	ts_expr *k = ts_var(ctx, "k");
	CHECK_S(ir_let(ctx, k, ADD(I(3), I(4)), ir_seq2(ctx, ir_evaluate(ctx, x), ir_store(ctx, A, ADD(k, I(1)), x))),
		"A[8] = x\n");
	/* a loop with a symbolic extent ranges its variable through the bounds */
	CHECK_S(ir_let(ctx, n, MIN(j, I(10)),
		       loop(ctx, i, 0, n, ir_if(ctx, ts_lt(ctx, i, I(10)), ir_store(ctx, A, i, x), NULL))),
		"let n = min(j, 10)\nfor (i, 0, n) {\n  A[i] = x\n}\n");
	/* everything vanishes: the empty statement */
	CHECK_S(loop(ctx, i, 0, I(8), ir_if(ctx, ts_gt(ctx, i, I(20)), ir_store(ctx, A, i, x), NULL)), "0\n");
	/* an empty then-branch turns into a negated condition */
	CHECK_S(loop(ctx, i, 0, I(8), ir_if(ctx, ts_lt(ctx, i, j), ir_evaluate(ctx, x), ir_store(ctx, A, i, x))),
		"for (i, 0, 8) {\n  if (i >= j) {\n    A[i] = x\n  }\n}\n");
	/* branches know their condition */
	ts_stmt *inner = ir_if(ctx, ts_lt(ctx, i, I(12)), ir_store(ctx, A, i, x), NULL);
	CHECK_S(loop(ctx, i, 0, I(16), ir_if(ctx, ts_lt(ctx, i, I(10)), inner, NULL)),
		"for (i, 0, 16) {\n  if (i < 10) {\n    A[i] = x\n  }\n}\n");
	CHECK_S(loop(ctx, i, 0, I(16), ir_if(ctx, ts_ge(ctx, i, I(8)), ir_store(ctx, A, FDIV(i, I(8)), x),
					      ir_store(ctx, A, FMOD(i, I(8)), x))),
		"for (i, 0, 16) {\n  if (i >= 8) {\n    A[1] = x\n  } else {\n    A[i] = x\n  }\n}\n");
	ts_expr *c2 = ts_and(ctx, ts_not(ctx, ts_gt(ctx, I(4), j)), ts_eq(ctx, k, I(2)));
	CHECK_S(ir_if(ctx, c2, ir_store(ctx, A, ADD(k, MAX(j, I(3))), x), NULL),
		"if (j >= 4 && k == 2) {\n  A[j + 2] = x\n}\n");
	/* thread-bound loops of extent 1 keep their binding */
	ts_stmt *t = ir_for(ctx, i, I(0), I(1), TS_FOR_THREAD, TS_THREAD_X, ir_store(ctx, A, ADD(i, j), x));
	CHECK_S(t, "bind threadIdx.x (i, 0, 1) {\n  A[j] = x\n}\n");
	/* unchanged statements come back as the same pointer */
	ts_stmt *u = loop(ctx, i, 0, I(16), ir_store(ctx, A, i, x));
	ck_assert_ptr_eq(ir_simplify_stmt(ctx, u, 0, NULL), u);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_stmt_misuse)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *i = ts_var(ctx, "i");
	ir_range bad = {i, 5, -1};
	ck_assert_ptr_null(ir_simplify_stmt(ctx, ir_evaluate(ctx, i), 1, &bad));
	tu_assert_error(ctx, "simplify_stmt: range of 'i' [5, +-1) is empty");
	ts_ctx_free(ctx);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("simplify");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_fold_int);
	tcase_add_test(tc, test_fold_float_and_cast);
	tcase_add_test(tc, test_logic_and_select);
	tcase_add_test(tc, test_canonical);
	tcase_add_test(tc, test_divmod);
	tcase_add_test(tc, test_minmax_compare);
	tcase_add_test(tc, test_can_prove);
	tcase_add_test(tc, test_reduce_axes_ranged);
	tcase_add_test(tc, test_misuse);
	tcase_add_test(tc, test_alloc_failure);
	tcase_add_test(tc, test_random_soundness);
	tcase_add_test(tc, test_random_float_soundness);
	tcase_add_test(tc, test_signed_zeros_differ);
	tcase_add_test(tc, test_stmt);
	tcase_add_test(tc, test_stmt_misuse);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
