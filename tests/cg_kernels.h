/*
 * cg_kernels.h - hand-built lowered functions shared by the C/CUDA emitter,
 * NVRTC and CUDA execution tests (until lowering produces them).
 *
 *   kg_vadd       C = A + B over 1003 floats: a parallel loop of vectorized
 *                 4-lane chunks and a scalar tail.
 *   kg_vadd_cuda  C = A + B over n floats (n % 512 == 0): blockIdx.x,
 *                 threadIdx.x (128) and a 4-lane vectorized loop.
 *   kg_gemm       C = A * B (M, N, K multiples of 32): 32x32 block tiles
 *                 bound to blockIdx.y/x, 8x32 threads bound to threadIdx.y/x,
 *                 each computing 4 rows in a local accumulator; A and B tiles
 *                 staged in shared memory with float4-able vectorized copies.
 *   kg_conv       Y = relu(conv2d(X, W)), 3 -> 8 channels, 16x16, 3x3 kernel,
 *                 padding 1 handled with an IF.
 *   kg_divsem     64 threads: integer division by tensor values (int32,
 *                 int64), by the constants 8, 7, 0 and -1, and a float32 to
 *                 int32 cast: the guarded and the plain division code.
 */
#ifndef TESSERA_TESTS_CG_KERNELS_H
#define TESSERA_TESTS_CG_KERNELS_H

#include "tessera.h"
#include "c_emit.h"

#define KI(x) ts_int(ctx, (x))

static inline ts_buffer *kg_buf(ts_ctx *ctx, const char *name, ts_dtype t, int64_t n0,
				int64_t n1, ts_scope scope)
{
	int64_t shape[2] = {n0, n1};
	return ir_buffer_new(ctx, name, t, n1 ? 2 : 1, shape, scope);
}

static inline ts_func *kg_func(ts_ctx *ctx, const char *name, int n, ts_buffer *const *params,
			       ts_stmt *body)
{
	ts_func *f = ts_alloc(ctx, sizeof(*f));
	ts_buffer **p = ts_alloc_array(ctx, (size_t)n, sizeof(*p));
	if (!f || !p || !body)
		return NULL;
	for (int i = 0; i < n; i++)
		p[i] = params[i];
	f->name = name;
	f->nparams = n;
	f->params = p;
	f->body = body;
	return f;
}

static inline ts_stmt *kg_loop(ts_ctx *ctx, ts_expr *v, int64_t extent, ts_for_kind kind,
			       ts_stmt *body)
{
	return ir_for(ctx, v, KI(0), KI(extent), kind, TS_THREAD_NONE, body);
}

static inline ts_stmt *kg_bind(ts_ctx *ctx, ts_expr *v, int64_t extent, ts_thread_tag tag,
			       ts_stmt *body)
{
	return ir_for(ctx, v, KI(0), KI(extent), TS_FOR_THREAD, tag, body);
}

/* C[k] = A[k] + B[k] */
static inline ts_stmt *kg_add_store(ts_ctx *ctx, ts_buffer *A, ts_buffer *B, ts_buffer *C,
				    ts_expr *k)
{
	return ir_store(ctx, C, k, ts_add(ctx, ts_load(ctx, A, k), ts_load(ctx, B, k)));
}

static inline ts_func *kg_vadd(ts_ctx *ctx)
{
	ts_buffer *A = kg_buf(ctx, "A", ts_float32, 1003, 0, TS_SCOPE_GLOBAL);
	ts_buffer *B = kg_buf(ctx, "B", ts_float32, 1003, 0, TS_SCOPE_GLOBAL);
	ts_buffer *C = kg_buf(ctx, "C", ts_float32, 1003, 0, TS_SCOPE_GLOBAL);
	ts_expr *io = ts_var(ctx, "i.outer"), *ii = ts_var(ctx, "i.inner"), *t = ts_var(ctx, "i");
	ts_expr *k = ts_add(ctx, ts_mul(ctx, io, KI(4)), ii);
	ts_stmt *chunks = kg_loop(ctx, io, 250, TS_FOR_PARALLEL,
				kg_loop(ctx, ii, 4, TS_FOR_VECTORIZED, kg_add_store(ctx, A, B, C, k)));
	ts_stmt *tail = kg_loop(ctx, t, 3, TS_FOR_SERIAL,
				kg_add_store(ctx, A, B, C, ts_add(ctx, t, KI(1000))));
	return kg_func(ctx, "vadd", 3, (ts_buffer *[]){A, B, C}, ir_seq2(ctx, chunks, tail));
}

static inline ts_func *kg_vadd_cuda(ts_ctx *ctx, int64_t n)
{
	ts_buffer *A = kg_buf(ctx, "A", ts_float32, n, 0, TS_SCOPE_GLOBAL);
	ts_buffer *B = kg_buf(ctx, "B", ts_float32, n, 0, TS_SCOPE_GLOBAL);
	ts_buffer *C = kg_buf(ctx, "C", ts_float32, n, 0, TS_SCOPE_GLOBAL);
	ts_expr *b = ts_var(ctx, "b"), *t = ts_var(ctx, "t"), *v = ts_var(ctx, "v");
	ts_expr *k = ts_add(ctx, ts_mul(ctx, ts_add(ctx, ts_mul(ctx, b, KI(128)), t), KI(4)), v);
	ts_stmt *s = kg_bind(ctx, b, n / 512, TS_BLOCK_X,
			     kg_bind(ctx, t, 128, TS_THREAD_X,
				     kg_loop(ctx, v, 4, TS_FOR_VECTORIZED, kg_add_store(ctx, A, B, C, k))));
	return kg_func(ctx, "vadd", 3, (ts_buffer *[]){A, B, C}, s);
}

/* dst[row*32 + col4 + v] = src[src_base + col4 + v], one float4 per thread. */
static inline ts_stmt *kg_tile_copy(ts_ctx *ctx, ts_buffer *dst, ts_buffer *src, ts_expr *row,
				    ts_expr *col4, ts_expr *src_base, const char *vname)
{
	ts_expr *v = ts_var(ctx, vname);
	ts_expr *di = ts_add(ctx, ts_add(ctx, ts_mul(ctx, row, KI(32)), col4), v);
	ts_expr *si = ts_add(ctx, ts_add(ctx, src_base, col4), v);
	return kg_loop(ctx, v, 4, TS_FOR_VECTORIZED, ir_store(ctx, dst, di, ts_load(ctx, src, si)));
}

static inline ts_func *kg_gemm(ts_ctx *ctx, int64_t M, int64_t N, int64_t K, bool sync)
{
	ts_buffer *A = kg_buf(ctx, "A", ts_float32, M, K, TS_SCOPE_GLOBAL);
	ts_buffer *B = kg_buf(ctx, "B", ts_float32, K, N, TS_SCOPE_GLOBAL);
	ts_buffer *C = kg_buf(ctx, "C", ts_float32, M, N, TS_SCOPE_GLOBAL);
	ts_buffer *As = kg_buf(ctx, "As", ts_float32, 32, 32, TS_SCOPE_SHARED);
	ts_buffer *Bs = kg_buf(ctx, "Bs", ts_float32, 32, 32, TS_SCOPE_SHARED);
	ts_buffer *acc = kg_buf(ctx, "acc", ts_float32, 4, 0, TS_SCOPE_LOCAL);
	ts_expr *by = ts_var(ctx, "by"), *bx = ts_var(ctx, "bx"), *ty = ts_var(ctx, "ty");
	ts_expr *tx = ts_var(ctx, "tx"), *k0 = ts_var(ctx, "k0"), *kk = ts_var(ctx, "kk");
	ts_expr *r = ts_var(ctx, "r"), *r0 = ts_var(ctx, "r"), *r1 = ts_var(ctx, "r");
	/* each thread copies 4 consecutive floats of a 32x32 tile */
	ts_expr *row = ts_add(ctx, ts_mul(ctx, ty, KI(4)), ts_floordiv(ctx, tx, KI(8)));
	ts_expr *col4 = ts_mul(ctx, ts_floormod(ctx, tx, KI(8)), KI(4));
	ts_expr *a_base = ts_add(ctx, ts_mul(ctx, ts_add(ctx, ts_mul(ctx, by, KI(32)), row), KI(K)),
				 ts_mul(ctx, k0, KI(32)));
	ts_expr *b_base = ts_add(ctx, ts_mul(ctx, ts_add(ctx, ts_mul(ctx, k0, KI(32)), row), KI(N)),
				 ts_mul(ctx, bx, KI(32)));
	ts_stmt *load_a = kg_tile_copy(ctx, As, A, row, col4, a_base, "v");
	ts_stmt *load_b = kg_tile_copy(ctx, Bs, B, row, col4, b_base, "v");
	ts_expr *arow = ts_add(ctx, ts_mul(ctx, ts_add(ctx, ts_mul(ctx, ty, KI(4)), r), KI(32)), kk);
	ts_expr *prod = ts_mul(ctx, ts_load(ctx, As, arow),
			       ts_load(ctx, Bs, ts_add(ctx, ts_mul(ctx, kk, KI(32)), tx)));
	ts_stmt *compute = kg_loop(ctx, kk, 32, TS_FOR_SERIAL,
				   kg_loop(ctx, r, 4, TS_FOR_UNROLLED,
					   ir_store(ctx, acc, r, ts_add(ctx, ts_load(ctx, acc, r), prod))));
	ts_stmt *kloop = kg_loop(ctx, k0, K / 32, TS_FOR_SERIAL,
				 ir_seq(ctx, 3, (ts_stmt *[]){load_a, load_b, compute}));
	ts_stmt *init = kg_loop(ctx, r0, 4, TS_FOR_UNROLLED, ir_store(ctx, acc, r0, ts_float(ctx, 0)));
	ts_expr *ci = ts_add(ctx, ts_mul(ctx, ts_add(ctx, ts_add(ctx, ts_mul(ctx, by, KI(32)),
								      ts_mul(ctx, ty, KI(4))), r1), KI(N)),
			     ts_add(ctx, ts_mul(ctx, bx, KI(32)), tx));
	ts_stmt *write = kg_loop(ctx, r1, 4, TS_FOR_UNROLLED, ir_store(ctx, C, ci, ts_load(ctx, acc, r1)));
	ts_stmt *body = ir_allocate(ctx, As, ir_allocate(ctx, Bs, ir_allocate(ctx, acc,
				    ir_seq(ctx, 3, (ts_stmt *[]){init, kloop, write}))));
	if (sync)
		body = cg_cuda_insert_sync(ctx, body);
	ts_stmt *s = kg_bind(ctx, by, M / 32, TS_BLOCK_Y,
			     kg_bind(ctx, bx, N / 32, TS_BLOCK_X,
				     kg_bind(ctx, ty, 8, TS_THREAD_Y, kg_bind(ctx, tx, 32, TS_THREAD_X, body))));
	return kg_func(ctx, "gemm", 3, (ts_buffer *[]){A, B, C}, s);
}

static inline ts_func *kg_conv(ts_ctx *ctx)
{
	ts_buffer *X = kg_buf(ctx, "X", ts_float32, 3 * 16, 16, TS_SCOPE_GLOBAL);
	ts_buffer *W = kg_buf(ctx, "W", ts_float32, 8 * 3 * 3, 3, TS_SCOPE_GLOBAL);
	ts_buffer *Y = kg_buf(ctx, "Y", ts_float32, 8 * 16, 16, TS_SCOPE_GLOBAL);
	ts_buffer *s = kg_buf(ctx, "s", ts_float32, 1, 0, TS_SCOPE_LOCAL);
	ts_expr *f = ts_var(ctx, "f"), *y = ts_var(ctx, "y"), *x = ts_var(ctx, "x");
	ts_expr *c = ts_var(ctx, "c"), *ky = ts_var(ctx, "ky"), *kx = ts_var(ctx, "kx");
	ts_expr *iy = ts_var(ctx, "iy"), *ix = ts_var(ctx, "ix");
	ts_expr *in = ts_and(ctx, ts_and(ctx, ts_ge(ctx, iy, KI(0)), ts_lt(ctx, iy, KI(16))),
			     ts_and(ctx, ts_ge(ctx, ix, KI(0)), ts_lt(ctx, ix, KI(16))));
	ts_expr *xv = ts_load(ctx, X, ts_add(ctx, ts_mul(ctx, ts_add(ctx, ts_mul(ctx, c, KI(16)), iy), KI(16)), ix));
	ts_expr *wi = ts_add(ctx, ts_mul(ctx, ts_add(ctx, ts_mul(ctx, ts_add(ctx, ts_mul(ctx, f, KI(3)), c),
							    KI(3)), ky), KI(3)), kx);
	ts_stmt *acc = ir_store(ctx, s, KI(0), ts_add(ctx, ts_load(ctx, s, KI(0)),
						      ts_mul(ctx, xv, ts_load(ctx, W, wi))));
	ts_stmt *tap = ir_let(ctx, iy, ts_sub(ctx, ts_add(ctx, y, ky), KI(1)),
			      ir_let(ctx, ix, ts_sub(ctx, ts_add(ctx, x, kx), KI(1)), ir_if(ctx, in, acc, NULL)));
	ts_stmt *red = kg_loop(ctx, c, 3, TS_FOR_SERIAL, kg_loop(ctx, ky, 3, TS_FOR_UNROLLED,
								   kg_loop(ctx, kx, 3, TS_FOR_UNROLLED, tap)));
	ts_expr *yi = ts_add(ctx, ts_mul(ctx, ts_add(ctx, ts_mul(ctx, f, KI(16)), y), KI(16)), x);
	ts_stmt *out = ir_store(ctx, Y, yi, ts_max(ctx, ts_load(ctx, s, KI(0)), ts_float(ctx, 0)));
	ts_stmt *body = ir_allocate(ctx, s, ir_seq(ctx, 3, (ts_stmt *[]){
		ir_store(ctx, s, KI(0), ts_float(ctx, 0)), red, out}));
	ts_stmt *k = kg_bind(ctx, f, 8, TS_BLOCK_X, kg_bind(ctx, y, 16, TS_BLOCK_Y,
							   kg_bind(ctx, x, 16, TS_THREAD_X, body)));
	return kg_func(ctx, "conv", 3, (ts_buffer *[]){X, W, Y}, k);
}

static inline ts_func *kg_divsem(ts_ctx *ctx)
{
	ts_buffer *b[9];
	static const char *const names[9] = {"A", "B", "L", "M", "X", "I", "J", "K", "N"};
	for (int n = 0; n < 9; n++) {
		ts_dtype t = n == 4 ? ts_float32 : n == 2 || n == 3 || n == 6 ? ts_int64 : ts_int32;
		b[n] = kg_buf(ctx, names[n], t, 64, 0, TS_SCOPE_GLOBAL);
	}
	ts_expr *i = ts_var(ctx, "i");
	ts_expr *a = ts_load(ctx, b[0], i), *d = ts_load(ctx, b[1], i);
	ts_expr *l = ts_load(ctx, b[2], i), *m = ts_load(ctx, b[3], i);
	ts_expr *consts = ts_add(ctx, ts_add(ctx, ts_floordiv(ctx, a, KI(8)), ts_truncdiv(ctx, a, KI(7))),
				 ts_add(ctx, ts_truncdiv(ctx, a, KI(0)), ts_floormod(ctx, a, KI(-1))));
	ts_stmt *body = ir_seq(ctx, 4, (ts_stmt *[]){
		ir_store(ctx, b[5], i, ts_add(ctx, ts_truncdiv(ctx, a, d), ts_truncmod(ctx, a, d))),
		ir_store(ctx, b[6], i, ts_add(ctx, ts_floordiv(ctx, l, m), ts_floormod(ctx, l, m))),
		ir_store(ctx, b[7], i, consts),
		ir_store(ctx, b[8], i, ts_cast(ctx, ts_int32, ts_load(ctx, b[4], i))),
	});
	return kg_func(ctx, "divsem", 9, b, kg_bind(ctx, i, 64, TS_THREAD_X, body));
}

#endif
