/*
 * libs.c - the library baselines on the CPU: OpenBLAS (cblas_sgemm, and
 * conv2d as im2col + sgemm, Caffe style) and oneDNN (matmul and convolution
 * primitives through the C API); and the double-precision reference of the
 * 16-bit GEMMs (cblas_dgemm on the widened inputs).
 *
 * Depthwise convolution is oneDNN's convolution with groups = channels.
 * oneDNN convolution is measured the way benchdnn measures it: the
 * primitive picks its preferred (blocked) layouts for source, weights and
 * destination (`any` tags), and the reorders from and to NCHW happen in
 * bind/sync, outside the timed region.  Its matmul uses plain row-major
 * matrices, like sgemm.  Thread counts: OpenBLAS through
 * openblas_set_num_threads, oneDNN (OpenMP runtime) through
 * omp_set_num_threads on the calling thread.
 */
#include <cblas.h>
#include <dnnl.h>
#include <dnnl_debug.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "eval.h"

/* ---- OpenBLAS ---------------------------------------------------------------- */

typedef struct blas_state { float *cols; } blas_state;

static void sgemm_rm(int64_t M, int64_t N, int64_t K, const float *A, const float *B, float *C)
{
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, A,
		    (int)K, B, (int)N, 0.0f, C, (int)N);
}

static bool conv_is_pointwise(const bench_conv *c)
{
	return c->R == 1 && c->S == 1 && c->stride == 1 && c->pad == 0;
}

static int blas_run(bench_kernel *k, int i)
{
	const bench_bufs *b = &k->sets[i];
	const bench_problem *p = k->p;
	if (p->op == BENCH_GEMM) {
		sgemm_rm(p->g.M, p->g.N, p->g.K, b->in0->data, b->in1->data, b->out->data);
		return 0;
	}
	const bench_conv *c = &p->c;
	blas_state *st = k->state;
	int64_t OH = bench_conv_out(c->H, c->R, c->stride, c->pad);
	int64_t OW = bench_conv_out(c->W, c->S, c->stride, c->pad);
	int64_t crs = c->C * c->R * c->S;
	for (int64_t n = 0; n < c->N; n++) {
		const float *x = (const float *)b->in0->data + n * c->C * c->H * c->W;
		float *y = (float *)b->out->data + n * c->K * OH * OW;
		const float *cols = x;
		if (!conv_is_pointwise(c)) {
			bench_im2col(c, x, st->cols);
			cols = st->cols;
		}
		sgemm_rm(c->K, OH * OW, crs, b->in1->data, cols, y);
	}
	return 0;
}

static void blas_free(bench_kernel *k)
{
	blas_state *st = k->state;
	if (st)
		free(st->cols);
	free(st);
}

int bench_make_openblas(const bench_problem *p, const bench_opts *o, bench_kernel *k,
			char *err, size_t n)
{
	if (o->target != BENCH_CPU) {
		snprintf(err, n, "openblas runs on the cpu only");
		return BENCH_SKIP;
	}
	if (p->op == BENCH_DEPTHWISE) {
		snprintf(err, n, "openblas has no depthwise convolution");
		return BENCH_SKIP;
	}
	openblas_set_num_threads(o->threads);
	blas_state *st = calloc(1, sizeof *st);
	if (!st)
		return snprintf(err, n, "openblas: out of memory"), BENCH_ERROR;
	if (p->op == BENCH_CONV2D && !conv_is_pointwise(&p->c)) {
		const bench_conv *c = &p->c;
		int64_t OH = bench_conv_out(c->H, c->R, c->stride, c->pad);
		int64_t OW = bench_conv_out(c->W, c->S, c->stride, c->pad);
		st->cols = malloc((size_t)(c->C * c->R * c->S * OH * OW) * sizeof(float));
		if (!st->cols) {
			free(st);
			return snprintf(err, n, "openblas: out of memory for im2col"), BENCH_ERROR;
		}
	}
	*k = (bench_kernel){.impl = BENCH_IMPL_OPENBLAS, .p = p, .threads = o->threads,
			    .compile_ms = -1, .run = blas_run, .free = blas_free, .state = st};
	return BENCH_OK;
}

/* Every element of a float array (float16 and bfloat16 included) as double:
 * exact, since double holds every value of the narrower types. */
static void widen(const ts_array *a, double *out)
{
	int64_t n = ts_array_numel(a);
	for (int64_t i = 0; i < n; i++)
		out[i] = ts_elem_get_f64(a->data, a->dtype, i);
}

int bench_gemm_ref_f64(const bench_gemm *g, const ts_array *A, const ts_array *B, float *C,
		       int threads)
{
	size_t na = (size_t)(g->M * g->K), nb = (size_t)(g->K * g->N), nc = (size_t)(g->M * g->N);
	double *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b), *c = malloc(nc * sizeof *c);
	int rc = a && b && c ? 0 : -1;
	if (rc == 0) {
		widen(A, a);
		widen(B, b);
		openblas_set_num_threads(threads);
		cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)g->M, (int)g->N, (int)g->K,
			    1.0, a, (int)g->K, b, (int)g->N, 0.0, c, (int)g->N);
		for (size_t i = 0; i < nc; i++)
			C[i] = (float)c[i];
	}
	free(a);
	free(b);
	free(c);
	return rc;
}

/* ---- oneDNN ------------------------------------------------------------------------ */

#define DNN_MAX_SETS 64

typedef struct dnn_state {
	dnnl_engine_t eng;
	dnnl_stream_t stream;
	dnnl_primitive_desc_t pd;
	dnnl_primitive_t prim;
	dnnl_memory_desc_t plain[3];   /* src, weights, dst as the user holds them */
	const dnnl_memory_desc_t *want[3]; /* as the primitive wants them (pd-owned) */
	dnnl_memory_t mem[DNN_MAX_SETS][3];
} dnn_state;

static const int dnn_args[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};

#define DNN_TRY(call)                                                                    \
	do {                                                                             \
		dnnl_status_t s_ = (call);                                               \
		if (s_ != dnnl_success)                                                  \
			return snprintf(err, n, "onednn: %s: %s", #call, dnnl_status2str(s_)), \
			       BENCH_ERROR;                                              \
	} while (0)

static int dnn_reorder(dnn_state *st, dnnl_memory_t from, dnnl_memory_t to, char *err, size_t n)
{
	const dnnl_memory_desc_t *fmd, *tmd;
	DNN_TRY(dnnl_memory_get_memory_desc(from, &fmd));
	DNN_TRY(dnnl_memory_get_memory_desc(to, &tmd));
	dnnl_primitive_desc_t pd;
	DNN_TRY(dnnl_reorder_primitive_desc_create(&pd, fmd, st->eng, tmd, st->eng, NULL));
	dnnl_primitive_t r;
	dnnl_status_t s = dnnl_primitive_create(&r, pd);
	dnnl_primitive_desc_destroy(pd);
	DNN_TRY(s);
	dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
	s = dnnl_primitive_execute(r, st->stream, 2, args);
	if (s == dnnl_success)
		s = dnnl_stream_wait(st->stream);
	dnnl_primitive_destroy(r);
	DNN_TRY(s);
	return BENCH_OK;
}

/* The memory of argument a for set i: the user's buffer when the layouts
 * agree, else a library-allocated one filled by a reorder (inputs). */
static int dnn_bind_arg(dnn_state *st, int i, int a, void *user, char *err, size_t n)
{
	if (dnnl_memory_desc_equal(&st->plain[a], st->want[a])) {
		DNN_TRY(dnnl_memory_create(&st->mem[i][a], &st->plain[a], st->eng, user));
		return BENCH_OK;
	}
	DNN_TRY(dnnl_memory_create(&st->mem[i][a], st->want[a], st->eng, DNNL_MEMORY_ALLOCATE));
	if (a == 2)
		return BENCH_OK;
	dnnl_memory_t u;
	DNN_TRY(dnnl_memory_create(&u, &st->plain[a], st->eng, user));
	int rc = dnn_reorder(st, u, st->mem[i][a], err, n);
	dnnl_memory_destroy(u);
	return rc;
}

static int dnn_bind(bench_kernel *k, char *err, size_t n)
{
	dnn_state *st = k->state;
	if (k->nsets > DNN_MAX_SETS)
		return snprintf(err, n, "onednn: more than %d buffer sets", DNN_MAX_SETS), BENCH_ERROR;
	for (int i = 0; i < k->nsets; i++) {
		void *user[3] = {k->sets[i].in0->data, k->sets[i].in1->data, k->sets[i].out->data};
		for (int a = 0; a < 3; a++) {
			if (dnn_bind_arg(st, i, a, user[a], err, n))
				return BENCH_ERROR;
		}
	}
	return BENCH_OK;
}

static int dnn_run(bench_kernel *k, int i)
{
	dnn_state *st = k->state;
	dnnl_exec_arg_t args[3];
	for (int a = 0; a < 3; a++)
		args[a] = (dnnl_exec_arg_t){dnn_args[a], st->mem[i][a]};
	if (dnnl_primitive_execute(st->prim, st->stream, 3, args) != dnnl_success)
		return -1;
	return dnnl_stream_wait(st->stream) == dnnl_success ? 0 : -1;
}

static int dnn_sync(bench_kernel *k, int i)
{
	dnn_state *st = k->state;
	if (dnnl_memory_desc_equal(&st->plain[2], st->want[2]))
		return 0;
	char err[256];
	size_t n = sizeof err;
	dnnl_memory_t u;
	DNN_TRY(dnnl_memory_create(&u, &st->plain[2], st->eng, k->sets[i].out->data));
	int rc = dnn_reorder(st, st->mem[i][2], u, err, n);
	dnnl_memory_destroy(u);
	if (rc)
		fprintf(stderr, "%s\n", err);
	return rc;
}

static void dnn_free(bench_kernel *k)
{
	dnn_state *st = k->state;
	if (!st)
		return;
	for (int i = 0; i < DNN_MAX_SETS; i++)
		for (int a = 0; a < 3; a++)
			if (st->mem[i][a])
				dnnl_memory_destroy(st->mem[i][a]);
	if (st->prim)
		dnnl_primitive_destroy(st->prim);
	if (st->pd)
		dnnl_primitive_desc_destroy(st->pd);
	if (st->stream)
		dnnl_stream_destroy(st->stream);
	if (st->eng)
		dnnl_engine_destroy(st->eng);
	free(st);
}

static int dnn_md(dnnl_memory_desc_t *md, int nd, const int64_t *dims, dnnl_format_tag_t tag,
		  char *err, size_t n)
{
	dnnl_dims_t d;
	for (int i = 0; i < nd; i++)
		d[i] = dims[i];
	DNN_TRY(dnnl_memory_desc_init_by_tag(md, nd, d, dnnl_f32, tag));
	return BENCH_OK;
}

static int dnn_matmul_pd(dnn_state *st, const bench_gemm *g, char *err, size_t n)
{
	int64_t a[2] = {g->M, g->K}, b[2] = {g->K, g->N}, c[2] = {g->M, g->N};
	if (dnn_md(&st->plain[0], 2, a, dnnl_ab, err, n) ||
	    dnn_md(&st->plain[1], 2, b, dnnl_ab, err, n) ||
	    dnn_md(&st->plain[2], 2, c, dnnl_ab, err, n))
		return BENCH_ERROR;
	dnnl_matmul_desc_t d;
	DNN_TRY(dnnl_matmul_desc_init(&d, &st->plain[0], &st->plain[1], NULL, &st->plain[2]));
	DNN_TRY(dnnl_primitive_desc_create(&st->pd, &d, NULL, st->eng, NULL));
	return BENCH_OK;
}

/* Depthwise (groups = C, K = C): the weights W[C, 1, R, S] are oneDNN's
 * grouped goihw [C, 1, 1, R, S], the same bytes. */
static int dnn_conv_pd(dnn_state *st, const bench_conv *c, bool depthwise, char *err, size_t n)
{
	int64_t OH = bench_conv_out(c->H, c->R, c->stride, c->pad);
	int64_t OW = bench_conv_out(c->W, c->S, c->stride, c->pad);
	int64_t x[4] = {c->N, c->C, c->H, c->W}, w[5] = {c->K, c->C, c->R, c->S};
	int64_t y[4] = {c->N, c->K, OH, OW}, wd = 4;
	if (depthwise)
		memcpy(w, (int64_t[]){c->C, 1, 1, c->R, c->S}, sizeof w), wd = 5;
	dnnl_memory_desc_t any[3];
	if (dnn_md(&st->plain[0], 4, x, dnnl_nchw, err, n) ||
	    dnn_md(&st->plain[1], (int)wd, w, depthwise ? dnnl_goihw : dnnl_oihw, err, n) ||
	    dnn_md(&st->plain[2], 4, y, dnnl_nchw, err, n) ||
	    dnn_md(&any[0], 4, x, dnnl_format_tag_any, err, n) ||
	    dnn_md(&any[1], (int)wd, w, dnnl_format_tag_any, err, n) ||
	    dnn_md(&any[2], 4, y, dnnl_format_tag_any, err, n))
		return BENCH_ERROR;
	dnnl_dims_t stride = {c->stride, c->stride}, pad_l = {c->pad, c->pad};
	/* padding on the right so that the output extent comes out as computed */
	dnnl_dims_t pad_r = {(OH - 1) * c->stride + c->R - c->H - c->pad,
			     (OW - 1) * c->stride + c->S - c->W - c->pad};
	dnnl_convolution_desc_t d;
	DNN_TRY(dnnl_convolution_forward_desc_init(&d, dnnl_forward_inference,
						   dnnl_convolution_direct, &any[0], &any[1],
						   NULL, &any[2], stride, pad_l, pad_r));
	DNN_TRY(dnnl_primitive_desc_create(&st->pd, &d, NULL, st->eng, NULL));
	return BENCH_OK;
}

static int dnn_setup(dnn_state *st, const bench_problem *p, char *err, size_t n)
{
	DNN_TRY(dnnl_engine_create(&st->eng, dnnl_cpu, 0));
	DNN_TRY(dnnl_stream_create(&st->stream, st->eng, dnnl_stream_default_flags));
	int rc = p->op == BENCH_GEMM ? dnn_matmul_pd(st, &p->g, err, n)
				     : dnn_conv_pd(st, &p->c, p->op == BENCH_DEPTHWISE, err, n);
	if (rc)
		return rc;
	const dnnl_query_t q[3] = {dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md};
	for (int a = 0; a < 3; a++)
		st->want[a] = dnnl_primitive_desc_query_md(st->pd, q[a], 0);
	DNN_TRY(dnnl_primitive_create(&st->prim, st->pd));
	return BENCH_OK;
}

int bench_make_onednn(const bench_problem *p, const bench_opts *o, bench_kernel *k, char *err,
		      size_t n)
{
	if (o->target != BENCH_CPU) {
		snprintf(err, n, "onednn runs on the cpu only in this build");
		return BENCH_SKIP;
	}
	omp_set_num_threads(o->threads);
	dnn_state *st = calloc(1, sizeof *st);
	if (!st)
		return snprintf(err, n, "onednn: out of memory"), BENCH_ERROR;
	*k = (bench_kernel){.impl = BENCH_IMPL_ONEDNN, .p = p, .threads = o->threads,
			    .compile_ms = -1, .bind = dnn_bind, .run = dnn_run, .sync = dnn_sync,
			    .free = dnn_free, .state = st};
	if (dnn_setup(st, p, err, n)) {
		dnn_free(k);
		k->state = NULL;
		return BENCH_ERROR;
	}
	return BENCH_OK;
}
