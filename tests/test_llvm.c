/* test_llvm.c - the vectorizer and the LLVM CPU backend on hand-built
 * lowered functions, checked against plain C loops on random data. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arith.h"
#include "llvm.h"
#include "vectorize.h"

/* ---- helpers ------------------------------------------------------------------- */

static ts_func *func(ts_ctx *ctx, const char *name, int n, ts_buffer *const *bufs, ts_stmt *body)
{
	ts_func *f = ts_alloc(ctx, sizeof(*f));
	ts_buffer **p = ts_alloc_array(ctx, (size_t)n, sizeof(*p));
	ck_assert_ptr_nonnull(body);
	memcpy(p, bufs, (size_t)n * sizeof(*p));
	f->name = name;
	f->nparams = n;
	f->params = p;
	f->body = body;
	return f;
}

static ts_buffer *buf1(ts_ctx *ctx, const char *name, ts_dtype t, int64_t n)
{
	return ir_buffer_new(ctx, name, t, 1, &n, TS_SCOPE_GLOBAL);
}

static ts_array *arr1(ts_ctx *ctx, ts_dtype t, int64_t n, uint64_t seed, double lo, double hi)
{
	ts_array *a = ts_array_new(ctx, t, 1, &n);
	ck_assert_ptr_nonnull(a);
	ts_array_fill_random(a, seed, lo, hi);
	return a;
}

static ts_expr *ld(ts_ctx *ctx, ts_buffer *b, ts_expr *i)
{
	return ts_load(ctx, b, i);
}

static ts_expr *ci(ts_ctx *ctx, int64_t v)
{
	return ts_int(ctx, v);
}

/* Compiles f for the host, failing the test with the error if it fails. */
static cg_llvm_module *compile(ts_ctx *ctx, ts_func *f, const char *target)
{
	cg_llvm_module *m = cg_llvm_compile(ctx, f, target);
	ck_assert_msg(m != NULL, "compile failed: %s", ts_last_error(ctx));
	ck_assert_ptr_nonnull(cg_llvm_entry(m));
	return m;
}

static void run(cg_llvm_module *m, int n, ts_array *const *arrays)
{
	void *args[8];
	for (int i = 0; i < n; i++)
		args[i] = arrays[i]->data;
	ck_assert_int_eq(cg_llvm_entry(m)(args), 0);
}

/* body(index) for every index of [0, n): a serial loop over vectors of w
 * lanes and a scalar tail for the n % w rest. */
typedef ts_stmt *(*elem_fn)(ts_ctx *ctx, ts_expr *i, void *user);

static ts_stmt *split_loop(ts_ctx *ctx, int64_t n, int w, elem_fn fn, void *user)
{
	ts_expr *io = ts_var(ctx, "io"), *ii = ts_var(ctx, "ii"), *t = ts_var(ctx, "t");
	ts_expr *idx = ts_add(ctx, ts_mul(ctx, io, ci(ctx, w)), ii);
	ts_stmt *vec = ir_for(ctx, ii, ci(ctx, 0), ci(ctx, w), TS_FOR_VECTORIZED, TS_THREAD_NONE,
			      fn(ctx, idx, user));
	ts_stmt *main = ir_for(ctx, io, ci(ctx, 0), ci(ctx, n / w), TS_FOR_SERIAL, TS_THREAD_NONE, vec);
	ts_stmt *tail = NULL;
	if (n % w)
		tail = ir_for(ctx, t, ci(ctx, n / w * w), ci(ctx, n % w), TS_FOR_SERIAL,
			      TS_THREAD_NONE, fn(ctx, t, user));
	return ir_seq2(ctx, main, tail);
}

typedef struct bufs3 {
	ts_buffer *a, *b, *c;
} bufs3;

static ts_stmt *add_body(ts_ctx *ctx, ts_expr *i, void *user)
{
	bufs3 *b = user;
	return ir_store(ctx, b->c, i, ts_add(ctx, ld(ctx, b->a, i), ld(ctx, b->b, i)));
}

/* ---- elementwise ------------------------------------------------------------------ */

/* C = A + B over 1003 floats, vectorized by w lanes with a scalar tail:
 * compiled, run and checked; the module is returned for its texts. */
static cg_llvm_module *add_float32(ts_ctx *ctx, int w)
{
	const int64_t n = 1003;
	bufs3 b = {buf1(ctx, "A", ts_float32, n), buf1(ctx, "B", ts_float32, n),
		   buf1(ctx, "C", ts_float32, n)};
	ts_func *f = func(ctx, "add_f32", 3, (ts_buffer *[]){b.a, b.b, b.c},
			  split_loop(ctx, n, w, add_body, &b));
	cg_llvm_module *m = compile(ctx, f, NULL);
	ts_array *A = arr1(ctx, ts_float32, n, 1, -5, 5), *B = arr1(ctx, ts_float32, n, 2, -5, 5);
	ts_array *C = arr1(ctx, ts_float32, n, 3, 0, 1), *W = arr1(ctx, ts_float32, n, 4, 0, 1);
	run(m, 3, (ts_array *[]){A, B, C});
	for (int64_t i = 0; i < n; i++)
		((float *)W->data)[i] = ((float *)A->data)[i] + ((float *)B->data)[i];
	tu_assert_close(C, W, 0, 0);
	ts_array_free(A);
	ts_array_free(B);
	ts_array_free(C);
	ts_array_free(W);
	return m;
}

START_TEST(test_add_float32_vector_and_tail)
{
	ts_ctx *ctx = ts_ctx_new();
	cg_llvm_module *m = add_float32(ctx, 8);
	const char *ir = cg_llvm_ir_text(ctx, m, false);
	ck_assert_ptr_nonnull(strstr(ir, "<8 x float>"));
	ck_assert_ptr_nonnull(strstr(ir, "noalias"));
	ck_assert_ptr_nonnull(strstr(cg_llvm_ir_text(ctx, m, true), "<8 x float>"));
	const char *as = cg_llvm_asm_text(ctx, m);
	ck_assert_ptr_nonnull(as);
	ck_assert_msg(strstr(as, "%ymm") || strstr(as, "%zmm"), "no vector registers in:\n%s", as);
	cg_llvm_times t = cg_llvm_get_times(m);
	ck_assert(t.build_ms > 0 && t.optimize_ms > 0 && t.codegen_ms > 0);
	ck_assert_ptr_nonnull(strstr(cg_llvm_target_str(m), "llvm -mtriple="));
	cg_llvm_free(m);
	ts_ctx_free(ctx);
}
END_TEST

/* A vectorized loop of 48 lanes runs as 32 + 16: LLVM handles vectors of
 * other lengths than powers of two lane by lane. */
START_TEST(test_vector_lanes_not_pow2)
{
	ts_ctx *ctx = ts_ctx_new();
	cg_llvm_module *m = add_float32(ctx, 48);
	const char *ir = cg_llvm_ir_text(ctx, m, false);
	ck_assert_msg(strstr(ir, "<32 x float>") && strstr(ir, "<16 x float>") && !strstr(ir, "<48 x float>"),
		      "48 lanes not run as 32 + 16:\n%s", ir);
	cg_llvm_free(m);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_add_int32_vector_and_tail)
{
	ts_ctx *ctx = ts_ctx_new();
	const int64_t n = 77;
	bufs3 b = {buf1(ctx, "A", ts_int32, n), buf1(ctx, "B", ts_int32, n),
		   buf1(ctx, "C", ts_int32, n)};
	ts_func *f = func(ctx, "add_i32", 3, (ts_buffer *[]){b.a, b.b, b.c},
			  split_loop(ctx, n, 16, add_body, &b));
	cg_llvm_module *m = compile(ctx, f, "llvm");
	ts_array *A = arr1(ctx, ts_int32, n, 5, -1000, 1000), *B = arr1(ctx, ts_int32, n, 6, -1000, 1000);
	ts_array *C = arr1(ctx, ts_int32, n, 7, 0, 9);
	run(m, 3, (ts_array *[]){A, B, C});
	for (int64_t i = 0; i < n; i++)
		ck_assert_int_eq(((int32_t *)C->data)[i], ((int32_t *)A->data)[i] + ((int32_t *)B->data)[i]);
	ck_assert_ptr_nonnull(strstr(cg_llvm_ir_text(ctx, m, false), "<16 x i32>"));
	cg_llvm_free(m);
	ts_array_free(A);
	ts_array_free(B);
	ts_array_free(C);
	ts_ctx_free(ctx);
}
END_TEST

/* ---- matmul ------------------------------------------------------------------------- */

/* C[i, j] = sum_k A[i, k] * B[k, j] with i parallel, j split by 16
 * (vectorized inner, serial tail), k split by 4 (unrolled inner, tail). */
static ts_stmt *matmul_body(ts_ctx *ctx, ts_buffer *A, ts_buffer *B, ts_buffer *C, int64_t M,
			    int64_t N, int64_t K)
{
	ts_expr *i = ts_var(ctx, "i"), *jo = ts_var(ctx, "jo"), *ji = ts_var(ctx, "ji");
	ts_expr *ji2 = ts_var(ctx, "ji"), *ji3 = ts_var(ctx, "ji"), *ko = ts_var(ctx, "ko");
	ts_expr *ki = ts_var(ctx, "ki"), *kt = ts_var(ctx, "kt"), *jt = ts_var(ctx, "jt");
	ts_expr *k2 = ts_var(ctx, "k");
	/* accumulate C[i, j] += A[i, k] * B[k, j] */
#define ACC(jx, kx)                                                                       \
	ir_store(ctx, C, ts_add(ctx, ts_mul(ctx, i, ci(ctx, N)), (jx)),                        \
		 ts_add(ctx, ld(ctx, C, ts_add(ctx, ts_mul(ctx, i, ci(ctx, N)), (jx))),         \
			ts_mul(ctx, ld(ctx, A, ts_add(ctx, ts_mul(ctx, i, ci(ctx, K)), (kx))),  \
			       ld(ctx, B, ts_add(ctx, ts_mul(ctx, (kx), ci(ctx, N)), (jx))))))
#define VEC(v, body) ir_for(ctx, v, ci(ctx, 0), ci(ctx, 16), TS_FOR_VECTORIZED, TS_THREAD_NONE, body)
	ts_expr *j = ts_add(ctx, ts_mul(ctx, jo, ci(ctx, 16)), ji);
	ts_expr *j2 = ts_add(ctx, ts_mul(ctx, jo, ci(ctx, 16)), ji2);
	ts_expr *j3 = ts_add(ctx, ts_mul(ctx, jo, ci(ctx, 16)), ji3);
	ts_expr *k = ts_add(ctx, ts_mul(ctx, ko, ci(ctx, 4)), ki);
	ts_stmt *init = VEC(ji, ir_store(ctx, C, ts_add(ctx, ts_mul(ctx, i, ci(ctx, N)), j), ts_float(ctx, 0)));
	ts_stmt *kmain = ir_for(ctx, ko, ci(ctx, 0), ci(ctx, K / 4), TS_FOR_SERIAL, TS_THREAD_NONE,
				ir_for(ctx, ki, ci(ctx, 0), ci(ctx, 4), TS_FOR_UNROLLED,
				       TS_THREAD_NONE, VEC(ji2, ACC(j2, k))));
	ts_stmt *ktail = ir_for(ctx, kt, ci(ctx, K / 4 * 4), ci(ctx, K % 4), TS_FOR_SERIAL,
				TS_THREAD_NONE, VEC(ji3, ACC(j3, kt)));
	ts_stmt *jmain = ir_for(ctx, jo, ci(ctx, 0), ci(ctx, N / 16), TS_FOR_SERIAL, TS_THREAD_NONE,
				ir_seq(ctx, 3, (ts_stmt *[]){init, kmain, ktail}));
	ts_stmt *jtail = ir_for(ctx, jt, ci(ctx, N / 16 * 16), ci(ctx, N % 16), TS_FOR_SERIAL,
				TS_THREAD_NONE,
				ir_seq2(ctx, ir_store(ctx, C, ts_add(ctx, ts_mul(ctx, i, ci(ctx, N)), jt),
						      ts_float(ctx, 0)),
					ir_for(ctx, k2, ci(ctx, 0), ci(ctx, K), TS_FOR_SERIAL,
					       TS_THREAD_NONE, ACC(jt, k2))));
#undef ACC
#undef VEC
	return ir_for(ctx, i, ci(ctx, 0), ci(ctx, M), TS_FOR_PARALLEL, TS_THREAD_NONE,
		      ir_seq2(ctx, jmain, jtail));
}

START_TEST(test_matmul_parallel_vectorized_unrolled)
{
	ts_ctx *ctx = ts_ctx_new();
	const int64_t M = 35, N = 50, K = 29;
	ts_buffer *A = ir_buffer_new(ctx, "A", ts_float32, TS_SHAPE(M, K), TS_SCOPE_GLOBAL);
	ts_buffer *B = ir_buffer_new(ctx, "B", ts_float32, TS_SHAPE(K, N), TS_SCOPE_GLOBAL);
	ts_buffer *C = ir_buffer_new(ctx, "C", ts_float32, TS_SHAPE(M, N), TS_SCOPE_GLOBAL);
	ts_func *f = func(ctx, "matmul", 3, (ts_buffer *[]){A, B, C}, matmul_body(ctx, A, B, C, M, N, K));
	cg_llvm_module *m = compile(ctx, f, NULL);
	ts_array *a = ts_array_new(ctx, ts_float32, TS_SHAPE(M, K));
	ts_array *b = ts_array_new(ctx, ts_float32, TS_SHAPE(K, N));
	ts_array *c = ts_array_new(ctx, ts_float32, TS_SHAPE(M, N));
	ts_array *w = ts_array_new(ctx, ts_float32, TS_SHAPE(M, N));
	ts_array_fill_random(a, 11, -1, 1);
	ts_array_fill_random(b, 12, -1, 1);
	ts_array_fill_random(c, 13, -1, 1);
	run(m, 3, (ts_array *[]){a, b, c});
	const float *pa = a->data, *pb = b->data;
	float *pw = w->data;
	for (int64_t i = 0; i < M; i++)
		for (int64_t j = 0; j < N; j++) {
			float s = 0;
			for (int64_t k = 0; k < K; k++)
				s += pa[i * K + k] * pb[k * N + j];
			pw[i * N + j] = s;
		}
	tu_assert_close(c, w, 1e-5, 1e-5);
	const char *ir = cg_llvm_ir_text(ctx, m, false);
	ck_assert_ptr_nonnull(strstr(ir, "ts_parallel_for"));
	ck_assert_ptr_nonnull(strstr(ir, "<16 x float>"));
	cg_llvm_free(m);
	ts_array_free(a);
	ts_array_free(b);
	ts_array_free(c);
	ts_array_free(w);
	ts_ctx_free(ctx);
}
END_TEST

/* ---- integer arithmetic ------------------------------------------------------------ */

typedef struct divmod {
	ts_buffer *a, *b, *fd, *fm, *td, *tm;
} divmod;

static ts_stmt *divmod_body(ts_ctx *ctx, ts_expr *i, void *user)
{
	divmod *d = user;
	ts_expr *a = ld(ctx, d->a, i), *b = ld(ctx, d->b, i);
	return ir_seq(ctx, 4, (ts_stmt *[]){
		ir_store(ctx, d->fd, i, ts_floordiv(ctx, a, b)),
		ir_store(ctx, d->fm, i, ts_floormod(ctx, a, b)),
		ir_store(ctx, d->td, i, ts_truncdiv(ctx, a, b)),
		ir_store(ctx, d->tm, i, ts_truncmod(ctx, a, b)),
	});
}

static int64_t floordiv_ref(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && ((a % b < 0) != (b < 0))) ? q - 1 : q;
}

START_TEST(test_floordiv_floormod_negative)
{
	ts_ctx *ctx = ts_ctx_new();
	const int64_t n = 203;
	const ts_dtype dts[] = {ts_int32, ts_int64, ts_int8};
	for (size_t t = 0; t < TS_COUNT_OF(dts); t++) {
		ts_dtype dt = dts[t];
		divmod d = {buf1(ctx, "A", dt, n), buf1(ctx, "B", dt, n), buf1(ctx, "FD", dt, n),
			    buf1(ctx, "FM", dt, n), buf1(ctx, "TD", dt, n), buf1(ctx, "TM", dt, n)};
		ts_func *f = func(ctx, "divmod", 6, (ts_buffer *[]){d.a, d.b, d.fd, d.fm, d.td, d.tm},
				  split_loop(ctx, n, 8, divmod_body, &d));
		cg_llvm_module *m = compile(ctx, f, NULL);
		ts_array *ar[6];
		ar[0] = arr1(ctx, dt, n, 21, -100, 100);
		ar[1] = arr1(ctx, dt, n, 22, -9, 9);
		for (int64_t i = 0; i < n; i++) /* no division by zero */
			if (ts_elem_get_i64(ar[1]->data, dt, i) == 0)
				ts_elem_set_i64(ar[1]->data, dt, i, -3);
		for (int k = 2; k < 6; k++)
			ar[k] = arr1(ctx, dt, n, 30 + (uint64_t)k, 0, 5);
		run(m, 6, ar);
		for (int64_t i = 0; i < n; i++) {
			int64_t a = ts_elem_get_i64(ar[0]->data, dt, i), b = ts_elem_get_i64(ar[1]->data, dt, i);
			ck_assert_int_eq(ts_elem_get_i64(ar[2]->data, dt, i), floordiv_ref(a, b));
			ck_assert_int_eq(ts_elem_get_i64(ar[3]->data, dt, i), a - floordiv_ref(a, b) * b);
			ck_assert_int_eq(ts_elem_get_i64(ar[4]->data, dt, i), a / b);
			ck_assert_int_eq(ts_elem_get_i64(ar[5]->data, dt, i), a % b);
		}
		cg_llvm_free(m);
		for (int k = 0; k < 6; k++)
			ts_array_free(ar[k]);
	}
	ts_ctx_free(ctx);
}
END_TEST

/* C = select(A < B, min(A, B) * 3 - B, max(A, B) + 7) for every integer
 * dtype and a cast of the result to float64 and bool. */
typedef struct mixed {
	ts_buffer *a, *b, *c, *f, *z;
} mixed;

static ts_stmt *mixed_body(ts_ctx *ctx, ts_expr *i, void *user)
{
	mixed *x = user;
	ts_expr *a = ld(ctx, x->a, i), *b = ld(ctx, x->b, i);
	ts_expr *v = ts_select(ctx, ts_lt(ctx, a, b), ts_sub(ctx, ts_mul(ctx, ts_min(ctx, a, b), ci(ctx, 3)), b),
			       ts_add(ctx, ts_max(ctx, a, b), ci(ctx, 7)));
	return ir_seq(ctx, 3, (ts_stmt *[]){
		ir_store(ctx, x->c, i, v),
		ir_store(ctx, x->f, i, ts_cast(ctx, ts_float64, ld(ctx, x->a, i))),
		ir_store(ctx, x->z, i, ts_and(ctx, ts_cast(ctx, ts_bool, a), ts_ne(ctx, a, b))),
	});
}

static int64_t wrap(int64_t v, ts_dtype t)
{
	int64_t r;
	uint8_t buf[8];
	ts_elem_set_i64(buf, t, 0, v);
	r = ts_elem_get_i64(buf, t, 0);
	return r;
}

START_TEST(test_integer_dtypes_select_min_max_cast)
{
	ts_ctx *ctx = ts_ctx_new();
	const int64_t n = 45;
	const ts_dtype dts[] = {ts_int8, ts_int16, ts_int32, ts_int64, ts_uint8};
	for (size_t t = 0; t < TS_COUNT_OF(dts); t++) {
		ts_dtype dt = dts[t];
		mixed x = {buf1(ctx, "A", dt, n), buf1(ctx, "B", dt, n), buf1(ctx, "C", dt, n),
			   buf1(ctx, "F", ts_float64, n), buf1(ctx, "Z", ts_bool, n)};
		ts_func *f = func(ctx, "mixed", 5, (ts_buffer *[]){x.a, x.b, x.c, x.f, x.z},
				  split_loop(ctx, n, 8, mixed_body, &x));
		cg_llvm_module *m = compile(ctx, f, NULL);
		double lo = dt.code == TS_TYPE_UINT ? 0 : -30;
		ts_array *ar[5] = {arr1(ctx, dt, n, 41, lo, 40), arr1(ctx, dt, n, 42, lo, 40),
				   arr1(ctx, dt, n, 43, 0, 5), arr1(ctx, ts_float64, n, 44, 0, 5),
				   arr1(ctx, ts_bool, n, 45, 0, 2)};
		ts_elem_set_i64(ar[0]->data, dt, 3, 0); /* a zero for the bool cast */
		run(m, 5, ar);
		for (int64_t i = 0; i < n; i++) {
			int64_t a = ts_elem_get_i64(ar[0]->data, dt, i), b = ts_elem_get_i64(ar[1]->data, dt, i);
			int64_t want = a < b ? wrap(wrap((a < b ? a : b) * 3, dt) - b, dt)
					     : wrap((a > b ? a : b) + 7, dt);
			ck_assert_int_eq(ts_elem_get_i64(ar[2]->data, dt, i), want);
			ck_assert(ts_elem_get_f64(ar[3]->data, ts_float64, i) == (double)a);
			ck_assert_int_eq(ts_elem_get_i64(ar[4]->data, ts_bool, i), a != 0 && a != b);
		}
		cg_llvm_free(m);
		for (int k = 0; k < 5; k++)
			ts_array_free(ar[k]);
	}
	ts_ctx_free(ctx);
}
END_TEST

/* ---- floats ---------------------------------------------------------------------------- */

typedef struct unary {
	ts_buffer *a, *b, *c;
	ir_intrinsic op;
} unary;

/* log, sqrt and pow see |a| + 0.25 so that every input is in the domain */
static ts_stmt *intrin_body(ts_ctx *ctx, ts_expr *i, void *user)
{
	unary *u = user;
	ts_expr *a = ld(ctx, u->a, i);
	if (u->op == IR_INTRIN_LOG || u->op == IR_INTRIN_SQRT || u->op == IR_INTRIN_POW)
		a = ts_add(ctx, ts_fabs(ctx, a), ts_fconst(ctx, a->dtype, 0.25));
	ts_expr *args[2] = {a, ld(ctx, u->b, i)};
	return ir_store(ctx, u->c, i, ts_call(ctx, u->op, ir_intrinsic_arity(u->op), args));
}

static double intrin_ref(ir_intrinsic op, double a, double b)
{
	switch (op) {
	case IR_INTRIN_EXP: return exp(a);
	case IR_INTRIN_LOG: return log(fabs(a) + 0.25);
	case IR_INTRIN_SQRT: return sqrt(fabs(a) + 0.25);
	case IR_INTRIN_TANH: return tanh(a);
	case IR_INTRIN_EXP2: return exp2(a);
	case IR_INTRIN_FABS: return fabs(a);
	case IR_INTRIN_POW: return pow(fabs(a) + 0.25, b);
	case IR_INTRIN_ERF: return erf(a);
	case IR_INTRIN_SIGMOID: return 1 / (1 + exp(-a));
	case IR_INTRIN_FLOOR: return floor(a);
	case IR_INTRIN_CEIL: return ceil(a);
	case IR_INTRIN_ROUND_TF32: return ir_round_tf32((float)a);
	case IR_INTRIN_LIKELY: /* a bool hint, not a math function */
	case IR_INTRIN_COUNT: break;
	}
	return NAN;
}

START_TEST(test_intrinsics_vs_libm)
{
	ts_ctx *ctx = ts_ctx_new();
	const int64_t n = 37;
	const ts_dtype dts[] = {ts_float32, ts_float64};
	for (size_t t = 0; t < TS_COUNT_OF(dts); t++) {
		ts_dtype dt = dts[t];
		ts_array *A = arr1(ctx, dt, n, 51, -3, 3), *B = arr1(ctx, dt, n, 52, -2, 2);
		ts_array *C = arr1(ctx, dt, n, 53, 0, 1), *W = arr1(ctx, dt, n, 54, 0, 1);
		for (int op = 0; op < IR_INTRIN_COUNT; op++) {
			if (op == IR_INTRIN_LIKELY || (op == IR_INTRIN_ROUND_TF32 && dt.bits != 32))
				continue; /* a hint; TF32 rounds float32 only */
			unary u = {buf1(ctx, "A", dt, n), buf1(ctx, "B", dt, n), buf1(ctx, "C", dt, n),
				   (ir_intrinsic)op};
			ts_func *f = func(ctx, ts_sprintf(ctx, "k_%s", ir_intrinsic_name(u.op)), 3, (ts_buffer *[]){u.a, u.b, u.c},
					  split_loop(ctx, n, 8, intrin_body, &u));
			cg_llvm_module *m = compile(ctx, f, NULL);
			run(m, 3, (ts_array *[]){A, B, C});
			for (int64_t i = 0; i < n; i++)
				ts_elem_set_f64(W->data, dt, i,
						intrin_ref(u.op, ts_elem_get_f64(A->data, dt, i),
							   ts_elem_get_f64(B->data, dt, i)));
			double tol = dt.bits == 32 ? 1e-5 : 1e-12;
			tu_assert_close(C, W, tol, tol);
			cg_llvm_free(m);
		}
		ts_array_free(A);
		ts_array_free(B);
		ts_array_free(C);
		ts_array_free(W);
	}
	ts_ctx_free(ctx);
}
END_TEST

static ts_stmt *select_body(ts_ctx *ctx, ts_expr *i, void *user)
{
	bufs3 *b = user;
	ts_expr *x = ld(ctx, b->a, i), *y = ld(ctx, b->b, i);
	ts_expr *v = ts_select(ctx, ts_gt(ctx, x, y), ts_mul(ctx, ts_min(ctx, x, y), ts_float(ctx, 2)),
			       ts_div(ctx, ts_max(ctx, x, y), ts_float(ctx, 4)));
	return ir_store(ctx, b->c, i, v);
}

START_TEST(test_select_min_max_float)
{
	ts_ctx *ctx = ts_ctx_new();
	const int64_t n = 29;
	bufs3 b = {buf1(ctx, "A", ts_float32, n), buf1(ctx, "B", ts_float32, n),
		   buf1(ctx, "C", ts_float32, n)};
	ts_func *f = func(ctx, "sel", 3, (ts_buffer *[]){b.a, b.b, b.c}, split_loop(ctx, n, 8, select_body, &b));
	cg_llvm_module *m = compile(ctx, f, NULL);
	ts_array *A = arr1(ctx, ts_float32, n, 61, -4, 4), *B = arr1(ctx, ts_float32, n, 62, -4, 4);
	ts_array *C = arr1(ctx, ts_float32, n, 63, 0, 1), *W = arr1(ctx, ts_float32, n, 64, 0, 1);
	run(m, 3, (ts_array *[]){A, B, C});
	for (int64_t i = 0; i < n; i++) {
		float x = ((float *)A->data)[i], y = ((float *)B->data)[i];
		((float *)W->data)[i] = x > y ? fminf(x, y) * 2 : fmaxf(x, y) / 4;
	}
	tu_assert_close(C, W, 0, 0);
	cg_llvm_free(m);
	ts_array_free(A);
	ts_array_free(B);
	ts_array_free(C);
	ts_array_free(W);
	ts_ctx_free(ctx);
}
END_TEST

/* ---- gathers, scatters, reductions, locals ----------------------------------- */

/* C[i] = A[5i] is a gather and D[2i + 1] = 3 A[i] a scatter; E[i] =
 * A[2i] is a stride-2 read, one masked load and a shuffle. */
START_TEST(test_gather_and_scatter)
{
	ts_ctx *ctx = ts_ctx_new();
	const int64_t n = 40;
	ts_buffer *A = buf1(ctx, "A", ts_float32, 5 * n), *C = buf1(ctx, "C", ts_float32, n);
	ts_buffer *D = buf1(ctx, "D", ts_float32, 2 * n), *E = buf1(ctx, "E", ts_float32, n);
	ts_expr *io = ts_var(ctx, "io"), *ii = ts_var(ctx, "ii");
	ts_expr *i = ts_add(ctx, ts_mul(ctx, io, ci(ctx, 8)), ii);
	ts_expr *two_i = ts_mul(ctx, i, ci(ctx, 2)), *five_i = ts_mul(ctx, i, ci(ctx, 5));
	ts_stmt *body = ir_seq2(ctx, ir_store(ctx, C, i, ld(ctx, A, five_i)),
				ir_seq2(ctx, ir_store(ctx, D, ts_add(ctx, two_i, ci(ctx, 1)),
						      ts_mul(ctx, ld(ctx, A, i), ts_float(ctx, 3))),
					ir_store(ctx, E, i, ld(ctx, A, two_i))));
	ts_stmt *s = ir_for(ctx, io, ci(ctx, 0), ci(ctx, n / 8), TS_FOR_SERIAL, TS_THREAD_NONE,
			    ir_for(ctx, ii, ci(ctx, 0), ci(ctx, 8), TS_FOR_VECTORIZED, TS_THREAD_NONE, body));
	cg_llvm_module *m = compile(ctx, func(ctx, "gather", 4, (ts_buffer *[]){A, C, D, E}, s), NULL);
	const char *ir = cg_llvm_ir_text(ctx, m, false);
	ck_assert_ptr_nonnull(strstr(ir, "llvm.masked.gather"));
	ck_assert_ptr_nonnull(strstr(ir, "llvm.masked.scatter"));
	ck_assert_ptr_nonnull(strstr(ir, "llvm.masked.load"));
	ts_array *a = arr1(ctx, ts_float32, 5 * n, 71, -2, 2), *c = arr1(ctx, ts_float32, n, 72, 0, 1);
	ts_array *d = arr1(ctx, ts_float32, 2 * n, 73, 0, 1), *d0 = arr1(ctx, ts_float32, 2 * n, 73, 0, 1);
	ts_array *e = arr1(ctx, ts_float32, n, 74, 0, 1);
	run(m, 4, (ts_array *[]){a, c, d, e});
	const float *pa = a->data, *pc = c->data, *pd = d->data, *pd0 = d0->data, *pe = e->data;
	for (int64_t k = 0; k < n; k++) {
		ck_assert(pc[k] == pa[5 * k]);
		ck_assert(pe[k] == pa[2 * k]);
		ck_assert(pd[2 * k + 1] == pa[k] * 3);
		ck_assert(pd[2 * k] == pd0[2 * k]);
	}
	cg_llvm_free(m);
	ts_array_free(a);
	ts_array_free(c);
	ts_array_free(d);
	ts_array_free(d0);
	ts_array_free(e);
	ts_ctx_free(ctx);
}
END_TEST

/* S[i] = sum_k A[i, k] and X[i] = max_k A[i, k], k vectorized. */
START_TEST(test_horizontal_reduction)
{
	ts_ctx *ctx = ts_ctx_new();
	const int64_t M = 13, K = 16;
	ts_buffer *A = ir_buffer_new(ctx, "A", ts_float32, TS_SHAPE(M, K), TS_SCOPE_GLOBAL);
	ts_buffer *S = buf1(ctx, "S", ts_float32, M), *X = buf1(ctx, "X", ts_float32, M);
	ts_buffer *P = buf1(ctx, "P", ts_int32, M);
	ts_expr *i = ts_var(ctx, "i"), *k = ts_var(ctx, "k"), *k2 = ts_var(ctx, "k"), *k3 = ts_var(ctx, "k");
#define AIK(kv) ld(ctx, A, ts_add(ctx, ts_mul(ctx, i, ci(ctx, K)), (kv)))
	ts_stmt *sum = ir_for(ctx, k, ci(ctx, 0), ci(ctx, K), TS_FOR_VECTORIZED, TS_THREAD_NONE,
			      ir_store(ctx, S, i, ts_add(ctx, ld(ctx, S, i), AIK(k))));
	ts_stmt *mx = ir_for(ctx, k2, ci(ctx, 0), ci(ctx, K), TS_FOR_VECTORIZED, TS_THREAD_NONE,
			     ir_store(ctx, X, i, ts_max(ctx, AIK(k2), ld(ctx, X, i))));
	ts_stmt *isum = ir_for(ctx, k3, ci(ctx, 0), ci(ctx, K), TS_FOR_VECTORIZED, TS_THREAD_NONE,
			       ir_store(ctx, P, i, ts_add(ctx, ld(ctx, P, i),
							  ts_cast(ctx, ts_int32, ts_mul(ctx, AIK(k3), ts_float(ctx, 10))))));
#undef AIK
	ts_stmt *init = ir_seq(ctx, 3, (ts_stmt *[]){ir_store(ctx, S, i, ts_float(ctx, 0)),
						     ir_store(ctx, X, i, ts_float(ctx, -1e30)),
						     ir_store(ctx, P, i, ci(ctx, 0))});
	ts_stmt *s = ir_for(ctx, i, ci(ctx, 0), ci(ctx, M), TS_FOR_SERIAL, TS_THREAD_NONE,
			    ir_seq(ctx, 4, (ts_stmt *[]){init, sum, mx, isum}));
	ts_stmt *v = cg_vectorize(ctx, s);
	const char *txt = ir_stmt_str(ctx, v);
	ck_assert_msg(strstr(txt, "sum(A[ramp(i*16, 1, 16)], axis=[])") != NULL, "%s", txt);
	ck_assert_msg(strstr(txt, "vectorized") == NULL, "%s", txt);
	cg_llvm_module *m = compile(ctx, func(ctx, "reduce", 4, (ts_buffer *[]){A, S, X, P}, s), NULL);
	const char *ir = cg_llvm_ir_text(ctx, m, false);
	ck_assert_ptr_nonnull(strstr(ir, "llvm.vector.reduce.fadd"));
	ck_assert_ptr_nonnull(strstr(ir, "llvm.vector.reduce.fmax"));
	ck_assert_ptr_nonnull(strstr(ir, "llvm.vector.reduce.add"));
	ts_array *a = ts_array_new(ctx, ts_float32, TS_SHAPE(M, K));
	ts_array_fill_random(a, 81, -3, 3);
	ts_array *sa = arr1(ctx, ts_float32, M, 82, 0, 1), *xa = arr1(ctx, ts_float32, M, 83, 0, 1);
	ts_array *pa = arr1(ctx, ts_int32, M, 84, 0, 9);
	run(m, 4, (ts_array *[]){a, sa, xa, pa});
	const float *pv = a->data;
	for (int64_t r = 0; r < M; r++) {
		float s0 = 0, x0 = -1e30f;
		int32_t p0 = 0;
		for (int64_t c = 0; c < K; c++) {
			s0 += pv[r * K + c]; /* the vector sum keeps this order */
			x0 = fmaxf(x0, pv[r * K + c]);
			p0 += (int32_t)(pv[r * K + c] * 10.0f);
		}
		ck_assert(((float *)sa->data)[r] == s0);
		ck_assert(((float *)xa->data)[r] == x0);
		ck_assert_int_eq(((int32_t *)pa->data)[r], p0);
	}
	cg_llvm_free(m);
	ts_array_free(a);
	ts_array_free(sa);
	ts_array_free(xa);
	ts_array_free(pa);
	ts_ctx_free(ctx);
}
END_TEST

/* C[i, j] = T[15 - j] + 1 with T[j] = A[i, j] * 2 in a local buffer, in a
 * parallel loop (one T per chunk), plus a large global scratch buffer. */
START_TEST(test_allocate_local_buffers)
{
	ts_ctx *ctx = ts_ctx_new();
	const int64_t M = 9, W = 16, BIG = 20000;
	ts_buffer *A = ir_buffer_new(ctx, "A", ts_float32, TS_SHAPE(M, W), TS_SCOPE_GLOBAL);
	ts_buffer *C = ir_buffer_new(ctx, "C", ts_float32, TS_SHAPE(M, W), TS_SCOPE_GLOBAL);
	ts_buffer *Y = buf1(ctx, "Y", ts_float32, 1);
	ts_buffer *T = ir_buffer_new(ctx, "T", ts_float32, TS_SHAPE(W), TS_SCOPE_LOCAL);
	ts_buffer *G = ir_buffer_new(ctx, "G", ts_float32, TS_SHAPE(BIG), TS_SCOPE_GLOBAL);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j"), *j2 = ts_var(ctx, "j");
	ts_expr *g = ts_var(ctx, "g"), *g2 = ts_var(ctx, "g");
	ts_stmt *fill = ir_for(ctx, j, ci(ctx, 0), ci(ctx, W), TS_FOR_VECTORIZED, TS_THREAD_NONE,
			       ir_store(ctx, T, j, ts_mul(ctx, ld(ctx, A, ts_add(ctx, ts_mul(ctx, i, ci(ctx, W)), j)),
							  ts_float(ctx, 2))));
	ts_stmt *use = ir_for(ctx, j2, ci(ctx, 0), ci(ctx, W), TS_FOR_SERIAL, TS_THREAD_NONE,
			      ir_store(ctx, C, ts_add(ctx, ts_mul(ctx, i, ci(ctx, W)), j2),
				       ts_add(ctx, ld(ctx, T, ts_sub(ctx, ci(ctx, W - 1), j2)), ts_float(ctx, 1))));
	ts_stmt *par = ir_for(ctx, i, ci(ctx, 0), ci(ctx, M), TS_FOR_PARALLEL, TS_THREAD_NONE,
			      ir_allocate(ctx, T, ir_seq2(ctx, fill, use)));
	/* Y[0] = sum over G where G[g] = g * 0.5 */
	ts_stmt *big = ir_allocate(ctx, G, ir_seq(ctx, 3, (ts_stmt *[]){
		ir_for(ctx, g, ci(ctx, 0), ci(ctx, BIG), TS_FOR_SERIAL, TS_THREAD_NONE,
		       ir_store(ctx, G, g, ts_mul(ctx, ts_cast(ctx, ts_float32, g), ts_float(ctx, 0.5)))),
		ir_store(ctx, Y, ci(ctx, 0), ts_float(ctx, 0)),
		ir_for(ctx, g2, ci(ctx, 0), ci(ctx, BIG), TS_FOR_SERIAL, TS_THREAD_NONE,
		       ir_store(ctx, Y, ci(ctx, 0), ts_add(ctx, ld(ctx, Y, ci(ctx, 0)), ld(ctx, G, g2)))),
	}));
	ts_func *f = func(ctx, "locals", 3, (ts_buffer *[]){A, C, Y}, ir_seq2(ctx, par, big));
	cg_llvm_module *m = compile(ctx, f, NULL);
	ck_assert_ptr_nonnull(strstr(cg_llvm_ir_text(ctx, m, false), "aligned_alloc"));
	ts_array *a = ts_array_new(ctx, ts_float32, TS_SHAPE(M, W)), *c = ts_array_new(ctx, ts_float32, TS_SHAPE(M, W));
	ts_array *y = arr1(ctx, ts_float32, 1, 91, 0, 1);
	ts_array_fill_random(a, 92, -1, 1);
	run(m, 3, (ts_array *[]){a, c, y});
	const float *pa = a->data, *pc = c->data;
	for (int64_t r = 0; r < M; r++)
		for (int64_t k = 0; k < W; k++)
			ck_assert(pc[r * W + k] == pa[r * W + (W - 1 - k)] * 2 + 1);
	float s = 0;
	for (int64_t k = 0; k < BIG; k++)
		s += (float)k * 0.5f;
	ck_assert(((float *)y->data)[0] == s);
	cg_llvm_free(m);
	ts_array_free(a);
	ts_array_free(c);
	ts_array_free(y);
	ts_ctx_free(ctx);
}
END_TEST

/* ---- the vectorizer's decisions -------------------------------------------------- */

START_TEST(test_vectorize_forms_and_fallbacks)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_buffer *A = buf1(ctx, "A", ts_float32, 64), *B = buf1(ctx, "B", ts_float32, 64);
	ts_expr *i = ts_var(ctx, "i"), *v = ts_var(ctx, "v");
	/* B[i*8 + v] = A[i*8 + v] * 2 + A[i]: contiguous ramps, broadcast scalar */
	ts_expr *ix = ts_add(ctx, ts_mul(ctx, i, ci(ctx, 8)), v);
	ts_stmt *s = ir_for(ctx, v, ci(ctx, 0), ci(ctx, 8), TS_FOR_VECTORIZED, TS_THREAD_NONE,
			    ir_store(ctx, B, ix, ts_add(ctx, ts_mul(ctx, ld(ctx, A, ix), ts_float(ctx, 2)),
							ld(ctx, A, i))));
	ck_assert_str_eq(ir_stmt_str(ctx, cg_vectorize(ctx, s)),
			 "B[ramp(i*8, 1, 8)] = A[ramp(i*8, 1, 8)]*broadcast(2.0f, 8) + broadcast(A[i], 8)\n");
	/* a lane-varying condition keeps the loop serial */
	ts_stmt *g = ir_for(ctx, v, ci(ctx, 0), ci(ctx, 8), TS_FOR_VECTORIZED, TS_THREAD_NONE,
			    ir_if(ctx, ts_lt(ctx, v, ci(ctx, 5)), ir_store(ctx, B, v, ld(ctx, A, v)), NULL));
	ck_assert_str_eq(ir_stmt_str(ctx, cg_vectorize(ctx, g)), "for (v, 0, 8) {\n  if (v < 5) {\n    B[v] = A[v]\n  }\n}\n");
	/* B[v + 1] = B[v]: a loop-carried dependence through B stays serial */
	ts_stmt *d = ir_for(ctx, v, ci(ctx, 0), ci(ctx, 8), TS_FOR_VECTORIZED, TS_THREAD_NONE,
			    ir_store(ctx, B, ts_add(ctx, v, ci(ctx, 1)), ld(ctx, B, v)));
	ck_assert_ptr_nonnull(strstr(ir_stmt_str(ctx, cg_vectorize(ctx, d)), "for (v, 0, 8)"));
	/* B[0] = B[0] + 1 done 8 times is not a reduction */
	ts_stmt *r = ir_for(ctx, v, ci(ctx, 0), ci(ctx, 8), TS_FOR_VECTORIZED, TS_THREAD_NONE,
			    ir_store(ctx, B, ci(ctx, 0), ts_add(ctx, ld(ctx, B, ci(ctx, 0)), ts_float(ctx, 1))));
	ck_assert_ptr_nonnull(strstr(ir_stmt_str(ctx, cg_vectorize(ctx, r)), "for (v, 0, 8)"));
	/* 7 lanes: loops of 4, 2 and 1 (that one serial), in order */
	ts_stmt *seven = ir_for(ctx, v, ci(ctx, 0), ci(ctx, 7), TS_FOR_VECTORIZED, TS_THREAD_NONE,
				ir_store(ctx, B, ts_add(ctx, ix, ci(ctx, 1)), ld(ctx, A, ix)));
	ck_assert_str_eq(ir_stmt_str(ctx, cg_vectorize(ctx, seven)),
			 "B[ramp(i*8 + 1, 1, 4)] = A[ramp(i*8, 1, 4)]\n"
			 "B[ramp(i*8 + 4 + 1, 1, 2)] = A[ramp(i*8 + 4, 1, 2)]\n"
			 "for (v, 6, 1) {\n  B[i*8 + v + 1] = A[i*8 + v]\n}\n");
	/* nothing to do: the same statement comes back */
	ts_stmt *plain = ir_store(ctx, B, i, ld(ctx, A, i));
	ck_assert_ptr_eq(cg_vectorize(ctx, plain), plain);
	ck_assert_int_eq(ts_last_status(ctx), TS_OK);
	ck_assert_ptr_null(cg_vectorize(ctx, NULL));
	tu_assert_error(ctx, "vectorize: no statement (NULL)");
	ts_ctx_free(ctx);
}
END_TEST

/* int64(i * 100000000) wraps in int32 before it is widened, vectorized or
 * not: a widened value is not an index (whose dtype lowering chose so that
 * it cannot wrap), so it is not kept as a 64-bit ramp, which skipped the
 * wrap (2200000000 for -2094967296 at i = 22).  Also int64(i + INT32_MAX). */
START_TEST(test_vectorized_widening_wraps_like_scalar)
{
	for (int form = 0; form < 2; form++) {
		ts_ctx *ctx = ts_ctx_new();
		ts_expr *i = ts_var(ctx, "i");
		ts_expr *narrow = form ? ts_add(ctx, i, ts_int(ctx, INT32_MAX)) : ts_mul(ctx, i, ts_int(ctx, 100000000));
		ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(64), TS_VARS(i), ts_cast(ctx, ts_int64, narrow));
		ts_schedule *s = ts_create_schedule(ctx, 1, &C);
		ts_stage *st = ts_stage_of(s, C);
		ts_axis *o, *in;
		tu_ok(ctx, ts_split_tail(st, ts_axis_of(st, 0), 8, TS_TAIL_PARTITION, &o, &in));
		tu_ok(ctx, ts_vectorize(st, in));
		ts_func *f = ts_lower(s, "widen", 1, &C);
		tu_nonnull(ctx, f);
		tu_check_func(ctx, f, 0);
		ts_module *m = ts_build(ctx, f, "llvm");
		tu_nonnull(ctx, m);
		ts_array *c = ts_array_for(ctx, C);
		tu_ok(ctx, ts_module_run(m, 1, &c));
		const int64_t *y = c->data;
		for (int64_t k = 0; k < 64; k++) {
			int32_t want = form ? (int32_t)((uint32_t)k + (uint32_t)INT32_MAX)
					    : (int32_t)((uint32_t)k * 100000000u);
			ck_assert_msg(y[k] == want, "form %d, i = %lld: %lld, want %d", form, (long long)k,
				      (long long)y[k], want);
		}
		ts_array_free(c);
		ts_module_free(m);
		ts_ctx_free(ctx);
	}
}
END_TEST

/* Fallback loops still compute the right thing. */
START_TEST(test_serial_fallback_runs)
{
	ts_ctx *ctx = ts_ctx_new();
	const int64_t n = 24;
	ts_buffer *B = buf1(ctx, "B", ts_int32, n + 1);
	ts_expr *v = ts_var(ctx, "v");
	ts_stmt *d = ir_for(ctx, v, ci(ctx, 0), ci(ctx, n), TS_FOR_VECTORIZED, TS_THREAD_NONE,
			    ir_store(ctx, B, ts_add(ctx, v, ci(ctx, 1)),
				     ts_add(ctx, ld(ctx, B, v), ts_mul(ctx, v, ci(ctx, 3)))));
	cg_llvm_module *m = compile(ctx, func(ctx, "prefix", 1, (ts_buffer *[]){B}, d), NULL);
	ts_array *b = arr1(ctx, ts_int32, n + 1, 95, -50, 50);
	int32_t want[25];
	memcpy(want, b->data, sizeof(want));
	for (int k = 0; k < n; k++)
		want[k + 1] = want[k] + k * 3;
	run(m, 1, (ts_array *[]){b});
	ck_assert_mem_eq(b->data, want, sizeof(want));
	cg_llvm_free(m);
	ts_array_free(b);
	ts_ctx_free(ctx);
}
END_TEST

/* A vectorized j around a serial k (C[i, j] = 0; for k: C[i, j] += ...),
 * a let whose value becomes a vector, an if on an outer variable, inside
 * nested parallel loops. */
START_TEST(test_vectorized_loop_around_inner_loop)
{
	ts_ctx *ctx = ts_ctx_new();
	const int64_t M = 6, N = 16, K = 7;
	ts_buffer *A = ir_buffer_new(ctx, "A", ts_float64, TS_SHAPE(M, K), TS_SCOPE_GLOBAL);
	ts_buffer *B = ir_buffer_new(ctx, "B", ts_float64, TS_SHAPE(K, N), TS_SCOPE_GLOBAL);
	ts_buffer *C = ir_buffer_new(ctx, "C", ts_float64, TS_SHAPE(M, N), TS_SCOPE_GLOBAL);
	ts_expr *io = ts_var(ctx, "io"), *ii = ts_var(ctx, "ii"), *j = ts_var(ctx, "j");
	ts_expr *k = ts_var(ctx, "k"), *x = ts_var_typed(ctx, "x", ts_float64);
	ts_expr *i = ts_add(ctx, ts_mul(ctx, io, ci(ctx, 2)), ii);
	ts_expr *cij = ts_add(ctx, ts_mul(ctx, i, ci(ctx, N)), j);
	ts_expr *prod = ts_mul(ctx, ld(ctx, A, ts_add(ctx, ts_mul(ctx, i, ci(ctx, K)), k)),
			       ld(ctx, B, ts_add(ctx, ts_mul(ctx, k, ci(ctx, N)), j)));
	/* odd k count twice: C[i, j] = sum_k A*B * (k odd ? 2 : 1) */
	ts_stmt *upd = ir_let(ctx, x, prod,
			      ir_if(ctx, ts_eq(ctx, ts_floormod(ctx, k, ci(ctx, 2)), ci(ctx, 1)),
				    ir_store(ctx, C, cij, ts_add(ctx, ld(ctx, C, cij), ts_mul(ctx, x, ts_fconst(ctx, ts_float64, 2)))),
				    ir_store(ctx, C, cij, ts_add(ctx, ld(ctx, C, cij), x))));
	ts_stmt *vec = ir_for(ctx, j, ci(ctx, 0), ci(ctx, N), TS_FOR_VECTORIZED, TS_THREAD_NONE,
			      ir_seq2(ctx, ir_store(ctx, C, cij, ts_fconst(ctx, ts_float64, 0)),
				      ir_for(ctx, k, ci(ctx, 0), ci(ctx, K), TS_FOR_SERIAL, TS_THREAD_NONE, upd)));
	ts_stmt *s = ir_for(ctx, io, ci(ctx, 0), ci(ctx, M / 2), TS_FOR_PARALLEL, TS_THREAD_NONE,
			    ir_for(ctx, ii, ci(ctx, 0), ci(ctx, 2), TS_FOR_PARALLEL, TS_THREAD_NONE, vec));
	const char *txt = ir_stmt_str(ctx, cg_vectorize(ctx, s));
	ck_assert_msg(strstr(txt, "vectorized") == NULL && strstr(txt, "for (k, 0, 7)") != NULL, "%s", txt);
	cg_llvm_module *m = compile(ctx, func(ctx, "inner", 3, (ts_buffer *[]){A, B, C}, s), NULL);
	ck_assert_ptr_nonnull(strstr(cg_llvm_ir_text(ctx, m, false), "<16 x double>"));
	ts_array *a = ts_array_new(ctx, ts_float64, TS_SHAPE(M, K)), *b = ts_array_new(ctx, ts_float64, TS_SHAPE(K, N));
	ts_array *c = ts_array_new(ctx, ts_float64, TS_SHAPE(M, N)), *w = ts_array_new(ctx, ts_float64, TS_SHAPE(M, N));
	ts_array_fill_random(a, 101, -1, 1);
	ts_array_fill_random(b, 102, -1, 1);
	ts_array_fill_random(c, 103, -1, 1);
	run(m, 3, (ts_array *[]){a, b, c});
	const double *pa = a->data, *pb = b->data;
	for (int64_t r = 0; r < M; r++)
		for (int64_t q = 0; q < N; q++) {
			double acc = 0;
			for (int64_t t = 0; t < K; t++)
				acc += pa[r * K + t] * pb[t * N + q] * (t % 2 ? 2 : 1);
			((double *)w->data)[r * N + q] = acc;
		}
	tu_assert_close(c, w, 1e-12, 1e-12);
	cg_llvm_free(m);
	ts_array_free(a);
	ts_array_free(b);
	ts_array_free(c);
	ts_array_free(w);
	ts_ctx_free(ctx);
}
END_TEST

/* ---- ahead-of-time output ------------------------------------------------------------ */

static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	char *buf = calloc(1, 1 << 20);
	*n = fread(buf, 1, (1 << 20) - 1, f);
	fclose(f);
	return buf;
}

/* Links the object into a C program with the system compiler (when there
 * is one) and runs it: the header and the object are usable ahead of time. */
static void link_and_run(const char *dir)
{
	if (system("command -v cc >/dev/null 2>&1") != 0)
		return;
	char path[160], cmd[512];
	snprintf(path, sizeof(path), "%s/main.c", dir);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("#include <stdlib.h>\n#include \"vadd.h\"\n"
	      "int main(void) {\n"
	      "  float *a = aligned_alloc(64, 512), *b = aligned_alloc(64, 512), *c = aligned_alloc(64, 512);\n"
	      "  for (int i = 0; i < 100; i++) { a[i] = i * 0.5f; b[i] = 3.0f - i; c[i] = -1; }\n"
	      "  void *args[3] = {a, b, c};\n"
	      "  if (vadd(args) != 0) return 2;\n"
	      "  for (int i = 0; i < 100; i++) if (c[i] != a[i] + b[i]) return 3;\n"
	      "  free(a); free(b); free(c);\n  return 0;\n}\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc -o %s/main %s/main.c %s/vadd.o -lm && %s/main", dir, dir, dir, dir);
	ck_assert_int_eq(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/main", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/main.c", dir);
	unlink(path);
}

START_TEST(test_object_and_header)
{
	ts_ctx *ctx = ts_ctx_new();
	const int64_t n = 100;
	bufs3 b = {buf1(ctx, "A", ts_float32, n), buf1(ctx, "B", ts_float32, n),
		   buf1(ctx, "C", ts_float32, n)};
	ts_func *f = func(ctx, "vadd", 3, (ts_buffer *[]){b.a, b.b, b.c}, split_loop(ctx, n, 8, add_body, &b));
	cg_llvm_module *m = compile(ctx, f, NULL);
	char dir[] = "/tmp/tessera_llvm_XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char obj[128], hdr[128];
	snprintf(obj, sizeof(obj), "%s/vadd.o", dir);
	snprintf(hdr, sizeof(hdr), "%s/vadd.h", dir);
	ck_assert_int_eq(cg_llvm_write_object(ctx, m, obj, hdr), TS_OK);
	size_t len;
	char *o = slurp(obj, &len);
	ck_assert(len > 64 && memcmp(o, "\177ELF", 4) == 0);
	free(o);
	char *h = slurp(hdr, &len);
	ck_assert_ptr_nonnull(strstr(h, "int32_t vadd(void **args);"));
	ck_assert_ptr_nonnull(strstr(h, "args[0]: A float32[100]"));
	ck_assert_ptr_nonnull(strstr(h, "args[2]: C float32[100]"));
	ck_assert_ptr_nonnull(strstr(h, "#include <stdint.h>"));
	free(h);
	link_and_run(dir);
	/* an unwritable path is an error, not a crash */
	char bad[160];
	snprintf(bad, sizeof(bad), "%s/missing/dir/x.o", dir);
	ck_assert_int_ne(cg_llvm_write_object(ctx, m, bad, NULL), TS_OK);
	tu_assert_error(ctx, "cannot open");
	unlink(obj);
	unlink(hdr);
	rmdir(dir);
	cg_llvm_free(m);
	ts_ctx_free(ctx);
}
END_TEST

/* ---- targets ----------------------------------------------------------------------- */

static ts_func *vadd16(ts_ctx *ctx)
{
	const int64_t n = 64;
	bufs3 *b = ts_alloc(ctx, sizeof(*b));
	*b = (bufs3){buf1(ctx, "A", ts_float32, n), buf1(ctx, "B", ts_float32, n),
		     buf1(ctx, "C", ts_float32, n)};
	return func(ctx, "vadd16", 3, (ts_buffer *[]){b->a, b->b, b->c}, split_loop(ctx, n, 16, add_body, b));
}

START_TEST(test_explicit_targets)
{
	ts_ctx *ctx = ts_ctx_new();
	cg_llvm_module *m = cg_llvm_compile(ctx, vadd16(ctx), "llvm -mcpu=skylake-avx512");
	ck_assert_msg(m != NULL, "%s", ts_last_error(ctx));
	ck_assert_ptr_nonnull(strstr(cg_llvm_target_str(m), "-mcpu=skylake-avx512"));
	ck_assert_ptr_nonnull(strstr(cg_llvm_asm_text(ctx, m), "zmm"));
	cg_llvm_free(m);
	m = cg_llvm_compile(ctx, vadd16(ctx), "llvm  -mattr=+avx2,+fma");
	ck_assert_msg(m != NULL, "%s", ts_last_error(ctx));
	ck_assert_ptr_nonnull(strstr(cg_llvm_target_str(m), "-mcpu=generic -mattr=+avx2,+fma"));
	const char *as = cg_llvm_asm_text(ctx, m);
	ck_assert(strstr(as, "ymm") != NULL && strstr(as, "zmm") == NULL);
	cg_llvm_free(m);
	/* another architecture: assembly but no entry point */
	m = cg_llvm_compile(ctx, vadd16(ctx), "llvm -mtriple=aarch64-linux-gnu");
	ck_assert_msg(m != NULL, "%s", ts_last_error(ctx));
	ck_assert_ptr_null(cg_llvm_entry(m));
	ck_assert_ptr_nonnull(strstr(cg_llvm_asm_text(ctx, m), "fadd"));
	cg_llvm_free(m);
	ts_ctx_free(ctx);
}
END_TEST

/* ---- errors ----------------------------------------------------------------------------- */

static void expect_target_error(const char *target, const char *part)
{
	ts_ctx *ctx = ts_ctx_new();
	ck_assert_ptr_null(cg_llvm_compile(ctx, vadd16(ctx), target));
	tu_assert_error(ctx, part);
	ts_ctx_free(ctx);
}

START_TEST(test_bad_targets)
{
	expect_target_error("llvm -mcpu=foo", "build vadd16: unknown CPU 'foo' for target");
	expect_target_error("llvm -mfoo=1", "target 'llvm -mfoo=1': unknown option '-mfoo=1'");
	expect_target_error("cuda", "target 'cuda': not an LLVM target");
	expect_target_error("llvm -mattr=+avx9", "unknown feature 'avx9'");
	expect_target_error("llvm -mattr=avx2", "feature 'avx2' must be written +name or -name");
	expect_target_error("llvm -mcpu=", "option '-mcpu' has no value");
	expect_target_error("llvm -mcpu=haswell -mcpu=skx", "option '-mcpu' given twice");
	expect_target_error("llvm -mtriple=nonsense-cpu-os", "target 'llvm -mtriple=nonsense-cpu-os':");
}
END_TEST

START_TEST(test_unsupported_and_null)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_buffer *A = buf1(ctx, "A", ts_float16, 8);
	ts_expr *i = ts_var(ctx, "i");
	ts_stmt *s = ir_for(ctx, i, ci(ctx, 0), ci(ctx, 8), TS_FOR_SERIAL, TS_THREAD_NONE,
			    ir_store(ctx, A, i, ld(ctx, A, i)));
	ck_assert_ptr_null(cg_llvm_compile(ctx, func(ctx, "half", 1, (ts_buffer *[]){A}, s), NULL));
	tu_assert_error(ctx, "llvm(half): parameter A is float16, a dtype the LLVM backend does not support");
	ck_assert_int_eq(ts_last_status(ctx), TS_ERR_UNSUPPORTED);
	ts_clear_error(ctx);
	ck_assert_ptr_null(cg_llvm_compile(ctx, NULL, NULL));
	tu_assert_error(ctx, "llvm: no function (NULL)");
	ts_clear_error(ctx);
	/* GPU thread loops have no meaning on the CPU */
	ts_buffer *B = buf1(ctx, "B", ts_float32, 8);
	ts_stmt *t = ir_for(ctx, i, ci(ctx, 0), ci(ctx, 8), TS_FOR_THREAD, TS_THREAD_X,
			    ir_store(ctx, B, i, ld(ctx, B, i)));
	ck_assert_ptr_null(cg_llvm_compile(ctx, func(ctx, "gpu", 1, (ts_buffer *[]){B}, t), NULL));
	tu_assert_error(ctx, "loop 'i' is bound to threadIdx.x");
	ts_clear_error(ctx);
	/* a buffer that is neither a parameter nor allocated */
	ts_buffer *F = buf1(ctx, "F", ts_float32, 8);
	ts_stmt *u = ir_store(ctx, F, ci(ctx, 0), ld(ctx, B, ci(ctx, 0)));
	ck_assert_ptr_null(cg_llvm_compile(ctx, func(ctx, "stray", 1, (ts_buffer *[]){B}, u), NULL));
	tu_assert_error(ctx, "buffer 'F' is neither a parameter nor allocated");
	ck_assert_ptr_null(cg_llvm_entry(NULL));
	cg_llvm_free(NULL);
	ts_ctx_free(ctx);
}
END_TEST

/* A module prepared but not finished has no optimized code yet: its
 * optimized IR, assembly and object are refused, not read from nothing. */
START_TEST(test_prepared_not_finished)
{
	ts_ctx *ctx = ts_ctx_new();
	cg_llvm_module *m = cg_llvm_prepare(ctx, vadd16(ctx), NULL);
	ck_assert_msg(m != NULL, "%s", ts_last_error(ctx));
	ck_assert_ptr_nonnull(strstr(cg_llvm_ir_text(ctx, m, false), "define"));
	ck_assert_ptr_null(cg_llvm_ir_text(ctx, m, true));
	tu_assert_error(ctx, "llvm(vadd16): the optimized LLVM IR needs the optimized module; "
			"the module was prepared but not finished (cg_llvm_finish)");
	ts_clear_error(ctx);
	ck_assert_ptr_null(cg_llvm_asm_text(ctx, m));
	tu_assert_error(ctx, "llvm(vadd16): assembly needs the optimized module");
	ts_clear_error(ctx);
	ck_assert_int_eq(cg_llvm_write_object(ctx, m, "/tmp/tessera_unfinished.o", NULL), TS_ERR_INVALID);
	tu_assert_error(ctx, "llvm(vadd16): an object file needs the optimized module");
	ck_assert_int_ne(access("/tmp/tessera_unfinished.o", F_OK), 0);
	ck_assert_ptr_null(cg_llvm_entry(m));
	/* finished, all of it is there */
	ck_assert(cg_llvm_finish(m));
	ck_assert_ptr_nonnull(strstr(cg_llvm_ir_text(ctx, m, true), "define"));
	ck_assert_ptr_nonnull(cg_llvm_asm_text(ctx, m));
	ck_assert_ptr_nonnull(cg_llvm_entry(m));
	cg_llvm_free(m);
	ts_ctx_free(ctx);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("llvm");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_add_float32_vector_and_tail);
	tcase_add_test(tc, test_vector_lanes_not_pow2);
	tcase_add_test(tc, test_add_int32_vector_and_tail);
	tcase_add_test(tc, test_matmul_parallel_vectorized_unrolled);
	tcase_add_test(tc, test_floordiv_floormod_negative);
	tcase_add_test(tc, test_integer_dtypes_select_min_max_cast);
	tcase_add_test(tc, test_intrinsics_vs_libm);
	tcase_add_test(tc, test_select_min_max_float);
	tcase_add_test(tc, test_gather_and_scatter);
	tcase_add_test(tc, test_horizontal_reduction);
	tcase_add_test(tc, test_allocate_local_buffers);
	tcase_add_test(tc, test_vectorize_forms_and_fallbacks);
	tcase_add_test(tc, test_serial_fallback_runs);
	tcase_add_test(tc, test_vectorized_widening_wraps_like_scalar);
	tcase_add_test(tc, test_vectorized_loop_around_inner_loop);
	tcase_add_test(tc, test_object_and_header);
	tcase_add_test(tc, test_explicit_targets);
	tcase_add_test(tc, test_bad_targets);
	tcase_add_test(tc, test_unsupported_and_null);
	tcase_add_test(tc, test_prepared_not_finished);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
