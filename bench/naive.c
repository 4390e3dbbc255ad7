/*
 * naive.c - the kernels a user writes without a library: a GEMM triple loop
 * and a direct convolution, in plain C, built at -O3 on one thread.
 *
 * "Naive" means no tiling, packing or threads, not deliberately slow: the
 * loops run in the order that keeps the innermost access contiguous (i, k,
 * j for GEMM; output columns innermost for conv), as a careful C programmer
 * would write them, so the compiler can vectorize the inner loop.  They are
 * also the fallback reference when a library baseline is unavailable.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

void bench_naive_gemm(int64_t M, int64_t N, int64_t K, const float *restrict A,
		      const float *restrict B, float *restrict C)
{
	for (int64_t i = 0; i < M; i++) {
		float *restrict c = C + i * N;
		memset(c, 0, (size_t)N * sizeof(float));
		for (int64_t k = 0; k < K; k++) {
			float a = A[i * K + k];
			const float *restrict b = B + k * N;
			for (int64_t j = 0; j < N; j++)
				c[j] += a * b[j];
		}
	}
}

/* The output columns [*lo, *hi) whose input column ow*stride - pad + s lies
 * inside [0, W). */
static void valid_cols(const bench_conv *c, int64_t OW, int64_t s, int64_t *lo, int64_t *hi)
{
	int64_t off = s - c->pad;
	*lo = off >= 0 ? 0 : (-off + c->stride - 1) / c->stride;
	int64_t last = c->W - 1 - off; /* ow*stride <= last */
	*hi = last < 0 ? 0 : last / c->stride + 1;
	if (*hi > OW)
		*hi = OW;
}

/* Adds w * (row ih of input plane x) to output row y for tap column s. */
static void conv_row(const bench_conv *c, int64_t OW, int64_t s, float w,
		     const float *restrict xrow, float *restrict y)
{
	int64_t lo, hi, off = s - c->pad;
	valid_cols(c, OW, s, &lo, &hi);
	if (c->stride == 1) {
		for (int64_t ow = lo; ow < hi; ow++)
			y[ow] += w * xrow[ow + off];
	} else {
		for (int64_t ow = lo; ow < hi; ow++)
			y[ow] += w * xrow[ow * c->stride + off];
	}
}

void bench_naive_conv(const bench_conv *c, const float *X, const float *Wt, float *Y)
{
	int64_t OH = bench_conv_out(c->H, c->R, c->stride, c->pad);
	int64_t OW = bench_conv_out(c->W, c->S, c->stride, c->pad);
	for (int64_t n = 0; n < c->N; n++) {
		for (int64_t k = 0; k < c->K; k++) {
			float *y = Y + (n * c->K + k) * OH * OW;
			memset(y, 0, (size_t)(OH * OW) * sizeof(float));
			for (int64_t ch = 0; ch < c->C; ch++) {
				const float *x = X + (n * c->C + ch) * c->H * c->W;
				const float *w = Wt + (k * c->C + ch) * c->R * c->S;
				for (int64_t r = 0; r < c->R; r++) {
					for (int64_t oh = 0; oh < OH; oh++) {
						int64_t ih = oh * c->stride - c->pad + r;
						if (ih < 0 || ih >= c->H)
							continue;
						for (int64_t s = 0; s < c->S; s++)
							conv_row(c, OW, s, w[r * c->S + s],
								 x + ih * c->W, y + oh * OW);
					}
				}
			}
		}
	}
}

void bench_naive_depthwise(const bench_conv *c, const float *X, const float *Wt, float *Y)
{
	int64_t OH = bench_conv_out(c->H, c->R, c->stride, c->pad);
	int64_t OW = bench_conv_out(c->W, c->S, c->stride, c->pad);
	for (int64_t nc = 0; nc < c->N * c->C; nc++) {
		float *y = Y + nc * OH * OW;
		const float *x = X + nc * c->H * c->W, *w = Wt + nc % c->C * c->R * c->S;
		memset(y, 0, (size_t)(OH * OW) * sizeof(float));
		for (int64_t r = 0; r < c->R; r++) {
			for (int64_t oh = 0; oh < OH; oh++) {
				int64_t ih = oh * c->stride - c->pad + r;
				if (ih < 0 || ih >= c->H)
					continue;
				for (int64_t s = 0; s < c->S; s++)
					conv_row(c, OW, s, w[r * c->S + s], x + ih * c->W, y + oh * OW);
			}
		}
	}
}

void bench_im2col(const bench_conv *c, const float *Xn, float *cols)
{
	int64_t OH = bench_conv_out(c->H, c->R, c->stride, c->pad);
	int64_t OW = bench_conv_out(c->W, c->S, c->stride, c->pad);
	for (int64_t ch = 0; ch < c->C; ch++) {
		for (int64_t r = 0; r < c->R; r++) {
			for (int64_t s = 0; s < c->S; s++) {
				float *row = cols + ((ch * c->R + r) * c->S + s) * OH * OW;
				const float *x = Xn + ch * c->H * c->W;
				for (int64_t oh = 0; oh < OH; oh++) {
					int64_t ih = oh * c->stride - c->pad + r;
					for (int64_t ow = 0; ow < OW; ow++) {
						int64_t iw = ow * c->stride - c->pad + s;
						bool in = ih >= 0 && ih < c->H && iw >= 0 && iw < c->W;
						row[oh * OW + ow] = in ? x[ih * c->W + iw] : 0.0f;
					}
				}
			}
		}
	}
}

static int naive_run(bench_kernel *k, int i)
{
	const bench_bufs *b = &k->sets[i];
	const bench_problem *p = k->p;
	if (p->op == BENCH_GEMM)
		bench_naive_gemm(p->g.M, p->g.N, p->g.K, b->in0->data, b->in1->data, b->out->data);
	else if (p->op == BENCH_DEPTHWISE)
		bench_naive_depthwise(&p->c, b->in0->data, b->in1->data, b->out->data);
	else
		bench_naive_conv(&p->c, b->in0->data, b->in1->data, b->out->data);
	return 0;
}

static void naive_free(bench_kernel *k)
{
	(void)k;
}

int bench_make_naive(const bench_problem *p, const bench_opts *o, bench_kernel *k, char *err,
		     size_t n)
{
	if (o->target != BENCH_CPU) {
		snprintf(err, n, "naive runs on the cpu only");
		return BENCH_SKIP;
	}
	*k = (bench_kernel){.impl = BENCH_IMPL_NAIVE, .p = p, .threads = 1, .compile_ms = -1,
			    .run = naive_run, .free = naive_free};
	return BENCH_OK;
}

void bench_naive_softmax(int64_t rows, int64_t cols, const float *X, float *Y)
{
	for (int64_t r = 0; r < rows; r++) {
		const float *x = X + r * cols;
		float *y = Y + r * cols, m = -INFINITY, s = 0;
		for (int64_t k = 0; k < cols; k++)
			m = x[k] > m ? x[k] : m;
		for (int64_t k = 0; k < cols; k++) {
			y[k] = expf(x[k] - m);
			s += y[k];
		}
		float inv = 1.0f / s;
		for (int64_t k = 0; k < cols; k++)
			y[k] *= inv;
	}
}

void bench_naive_row_sum(int64_t rows, int64_t cols, const float *X, float *Y)
{
	for (int64_t r = 0; r < rows; r++) {
		float s = 0;
		for (int64_t k = 0; k < cols; k++)
			s += X[r * cols + k];
		Y[r] = s;
	}
}
