/*
 * gpu_libs.c - the GPU baselines of tessera-bench: cuBLAS (GEMM) and cuDNN
 * (conv2d), opened with dlopen so that tessera-bench has no link-time CUDA
 * dependency and builds where no CUDA toolkit exists.
 *
 * The few types, constants and prototypes needed are declared here with
 * their C ABI (statuses and enums are ints, handles and descriptors opaque
 * pointers), values as in cublas_api.h and cudnn_graph.h / cudnn_cnn.h.
 * Both libraries use the CUDA runtime, which adopts the context current on
 * the calling thread: ts_cuda_open leaves device 0's primary context
 * current, and tessera's own arrays live in it, so device pointers are
 * shared.  Calls go to the default stream.  Each kernel's enqueue makes
 * the library call alone; run adds a synchronize (for the correctness
 * check), and the timing is bench_gpu_time's CUDA events, as for tessera.
 *
 * Both run in plain fp32: cuBLAS's default math mode never uses TF32 for
 * sgemm, and cuDNN is held to FMA math (CUDNN_FMA_MATH), since its default
 * lets Ampere and later GPUs round the inputs to TF32, which would compare
 * a 10-bit-mantissa product with tessera's fp32 one.  A GEMM with float16
 * or bfloat16 inputs (--dtype) is cublasGemmEx with a float32 C and
 * CUBLAS_COMPUTE_32F: tensor cores with fp32 accumulation, the compute of
 * tessera's tensor-core GEMM; a TF32 one (--dtype tf32, float32 inputs
 * that are TF32 values) is cublasGemmEx with CUBLAS_COMPUTE_32F_FAST_TF32,
 * the only place TF32 is asked for.
 *
 * TESSERA_CUBLAS_LIB / TESSERA_CUDNN_LIB name the one file to open instead
 * of the usual names (libcublas.so.13/.12/.11, libcudnn.so.9).
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_dev.h"

/* ---- loading --------------------------------------------------------------------- */

/* Opens the first of names that loads; NULL with why naming them all. */
static void *open_first(const char *const *names, int count, char *why, size_t n)
{
	for (int i = 0; i < count; i++) {
		void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (h)
			return h;
	}
	int k = snprintf(why, n, "%s not found (tried", names[0]);
	for (int i = 0; i < count && k >= 0 && (size_t)k < n; i++)
		k += snprintf(why + k, n - (size_t)k, "%s %s", i ? "," : "", names[i]);
	if (k >= 0 && (size_t)k < n)
		snprintf(why + k, n - (size_t)k, ")");
	return NULL;
}

/* Resolves `sym` into *slot; -1 with why naming the library and symbol. */
static int resolve(void *lib, const char *libname, const char *sym, void **slot, char *why,
		   size_t n)
{
	*slot = dlsym(lib, sym);
	if (*slot)
		return 0;
	snprintf(why, n, "%s lacks %s (too old a version)", libname, sym);
	return -1;
}

/* ---- cuBLAS ------------------------------------------------------------------------ */

typedef int cublas_status;
typedef struct cublas_ctx *cublas_handle;
enum { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_OP_N = 0 };
/* cublasGemmEx's enums, values as in cublas_api.h (cublasComputeType_t,
 * cublasGemmAlgo_t) and library_types.h (cudaDataType). */
enum {
	CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14,
	CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_32F_FAST_TF32 = 77, CUBLAS_GEMM_DEFAULT = -1,
};

#define CUBLAS_SYMS(X)                                                                  \
	X(create, cublas_status (*)(cublas_handle *), "cublasCreate_v2")                 \
	X(destroy, cublas_status (*)(cublas_handle), "cublasDestroy_v2")                 \
	X(sgemm,                                                                         \
	  cublas_status (*)(cublas_handle, int, int, int, int, int, const float *,        \
			    const float *, int, const float *, int, const float *, float *, \
			    int),                                                        \
	  "cublasSgemm_v2")                                                              \
	X(gemm_ex,                                                                       \
	  cublas_status (*)(cublas_handle, int, int, int, int, int, const void *,         \
			    const void *, int, int, const void *, int, int, const void *, \
			    void *, int, int, int, int),                                 \
	  "cublasGemmEx")                                                                \
	X(status_string, const char *(*)(cublas_status), "cublasGetStatusString")

/* __typeof__ turns the function pointer type into a declaration */
#define API_FIELD(field, type, sym) __typeof__(type) field;
typedef struct cublas_api {
	void *lib;
	CUBLAS_SYMS(API_FIELD)
} cublas_api;

static const char *const cublas_names[] = {
	"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "/usr/local/cuda/lib64/libcublas.so",
};

/* The library names to try: the one file an environment variable names
 * (tests point it at a missing file), else the usual names. */
static int lib_names(const char *env, const char *const *usual, int count,
		     const char *const **names)
{
	static const char *one[1];
	one[0] = getenv(env);
	*names = one[0] && *one[0] ? one : usual;
	return one[0] && *one[0] ? 1 : count;
}

/* The library named by `env`, else the first of `usual` that opens. */
static void *open_lib(const char *env, const char *const *usual, int count, char *why, size_t n)
{
	const char *const *names;
	int k = lib_names(env, usual, count, &names);
	return open_first(names, k, why, n);
}

static int cublas_load(cublas_api *api, char *why, size_t n)
{
	memset(api, 0, sizeof *api);
	api->lib = open_lib("TESSERA_CUBLAS_LIB", cublas_names, (int)TS_COUNT_OF(cublas_names), why, n);
	if (!api->lib)
		return -1;
#define API_RESOLVE(field, type, sym)                                                   \
	if (resolve(api->lib, "libcublas", sym, (void **)&api->field, why, n))          \
		return -1;
	CUBLAS_SYMS(API_RESOLVE)
#undef API_RESOLVE
	return 0;
}

/* ---- cuDNN ---------------------------------------------------------------------------- */

typedef int cudnn_status;
typedef struct cudnn_ctx *cudnn_handle;
typedef struct cudnn_tensor *cudnn_tensor_desc;
typedef struct cudnn_filter *cudnn_filter_desc;
typedef struct cudnn_conv *cudnn_conv_desc;
enum {
	CUDNN_STATUS_SUCCESS = 0, CUDNN_DATA_FLOAT = 0, CUDNN_TENSOR_NCHW = 0,
	CUDNN_CROSS_CORRELATION = 1,
	CUDNN_DEFAULT_MATH = 0, CUDNN_FMA_MATH = 3,
};
/* cudnnConvolutionFwdAlgoPerf_t */
typedef struct cudnn_fwd_perf {
	int algo;
	cudnn_status status;
	float time;
	size_t memory;
	int determinism;
	int math_type;
	int reserved[3];
} cudnn_fwd_perf;

#define CUDNN_SYMS(X)                                                                   \
	X(create, cudnn_status (*)(cudnn_handle *), "cudnnCreate")                       \
	X(destroy, cudnn_status (*)(cudnn_handle), "cudnnDestroy")                       \
	X(error_string, const char *(*)(cudnn_status), "cudnnGetErrorString")            \
	X(create_tensor, cudnn_status (*)(cudnn_tensor_desc *), "cudnnCreateTensorDescriptor") \
	X(destroy_tensor, cudnn_status (*)(cudnn_tensor_desc), "cudnnDestroyTensorDescriptor") \
	X(set_tensor, cudnn_status (*)(cudnn_tensor_desc, int, int, int, int, int, int), \
	  "cudnnSetTensor4dDescriptor")                                                  \
	X(create_filter, cudnn_status (*)(cudnn_filter_desc *), "cudnnCreateFilterDescriptor") \
	X(destroy_filter, cudnn_status (*)(cudnn_filter_desc), "cudnnDestroyFilterDescriptor") \
	X(set_filter, cudnn_status (*)(cudnn_filter_desc, int, int, int, int, int, int), \
	  "cudnnSetFilter4dDescriptor")                                                  \
	X(create_conv, cudnn_status (*)(cudnn_conv_desc *), "cudnnCreateConvolutionDescriptor") \
	X(destroy_conv, cudnn_status (*)(cudnn_conv_desc), "cudnnDestroyConvolutionDescriptor") \
	X(set_conv, cudnn_status (*)(cudnn_conv_desc, int, int, int, int, int, int, int, int), \
	  "cudnnSetConvolution2dDescriptor")                                             \
	X(set_math, cudnn_status (*)(cudnn_conv_desc, int), "cudnnSetConvolutionMathType") \
	X(get_algo,                                                                      \
	  cudnn_status (*)(cudnn_handle, cudnn_tensor_desc, cudnn_filter_desc, cudnn_conv_desc, \
			   cudnn_tensor_desc, int, int *, cudnn_fwd_perf *),             \
	  "cudnnGetConvolutionForwardAlgorithm_v7")                                      \
	X(workspace_size,                                                                \
	  cudnn_status (*)(cudnn_handle, cudnn_tensor_desc, cudnn_filter_desc, cudnn_conv_desc, \
			   cudnn_tensor_desc, int, size_t *),                            \
	  "cudnnGetConvolutionForwardWorkspaceSize")                                     \
	X(forward,                                                                       \
	  cudnn_status (*)(cudnn_handle, const void *, cudnn_tensor_desc, const void *,   \
			   cudnn_filter_desc, const void *, cudnn_conv_desc, int, void *, size_t, \
			   const void *, cudnn_tensor_desc, void *),                     \
	  "cudnnConvolutionForward")

typedef struct cudnn_api {
	void *lib;
	CUDNN_SYMS(API_FIELD)
} cudnn_api;
#undef API_FIELD

static const char *const cudnn_names[] = {"libcudnn.so.9", "/usr/local/cuda/lib64/libcudnn.so.9"};

static int cudnn_load(cudnn_api *api, char *why, size_t n)
{
	memset(api, 0, sizeof *api);
	api->lib = open_lib("TESSERA_CUDNN_LIB", cudnn_names, (int)TS_COUNT_OF(cudnn_names), why, n);
	if (!api->lib)
		return -1;
#define API_RESOLVE(field, type, sym)                                                   \
	if (resolve(api->lib, "libcudnn", sym, (void **)&api->field, why, n))           \
		return -1;
	CUDNN_SYMS(API_RESOLVE)
#undef API_RESOLVE
	return 0;
}

/* The libraries stay loaded once opened: they carry their own C++
 * runtimes and the CUDA runtime, which do not expect to be unloaded while
 * the process runs (and whose allocations would then leak). */
int bench_gpu_lib_check(const char *lib, char *why, size_t n)
{
	if (strcmp(lib, "cublas") == 0) {
		cublas_api api;
		return cublas_load(&api, why, n) == 0;
	}
	if (strcmp(lib, "cudnn") == 0) {
		cudnn_api api;
		return cudnn_load(&api, why, n) == 0;
	}
	snprintf(why, n, "unknown GPU library '%s' (cublas or cudnn)", lib);
	return 0;
}

/* ---- the cuBLAS kernel ------------------------------------------------------------------ */

typedef struct cublas_state {
	gpu_dev dev;
	cublas_api api;
	cublas_handle h;
} cublas_state;

static const char *cublas_why(const cublas_api *api, cublas_status s)
{
	return api->status_string ? api->status_string(s) : "unknown status";
}

static int cublas_bind(bench_kernel *k, char *err, size_t n)
{
	cublas_state *st = k->state;
	return gpu_dev_bind(&st->dev, k, err, n);
}

/* Row-major C = A B is column-major C^T = B^T A^T: the column-major
 * product of B (n x k, ld n) and A (k x m, ld k) into C (n x m, ld n).
 * 16-bit A and B go through cublasGemmEx with the same operands, a
 * float32 C and fp32 accumulation (so alpha and beta are floats, as for
 * cublasSgemm_v2). */
static cublas_status cublas_gemm(cublas_state *st, const bench_problem *p, ts_array *const *a)
{
	const float one = 1, zero = 0;
	int m = (int)p->g.M, nn = (int)p->g.N, kk = (int)p->g.K;
	void *A = gpu_dev_ptr(a[0]), *B = gpu_dev_ptr(a[1]), *C = gpu_dev_ptr(a[2]);
	if (p->dtype == BENCH_F32)
		return st->api.sgemm(st->h, CUBLAS_OP_N, CUBLAS_OP_N, nn, m, kk, &one, B, nn, A, kk,
				     &zero, C, nn);
	bool tf32 = p->dtype == BENCH_TF32;
	int in = tf32 ? CUDA_R_32F : p->dtype == BENCH_F16 ? CUDA_R_16F : CUDA_R_16BF;
	return st->api.gemm_ex(st->h, CUBLAS_OP_N, CUBLAS_OP_N, nn, m, kk, &one, B, in, nn, A, in,
			       kk, &zero, C, CUDA_R_32F, nn,
			       tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
			       CUBLAS_GEMM_DEFAULT);
}

static int cublas_enqueue(bench_kernel *k, int i)
{
	cublas_state *st = k->state;
	cublas_status s = cublas_gemm(st, k->p, st->dev.arr[i]);
	if (s != CUBLAS_STATUS_SUCCESS) {
		fprintf(stderr, "cublas: %s failed: %s (%d)\n",
			k->p->dtype == BENCH_F32 ? "cublasSgemm_v2" : "cublasGemmEx",
			cublas_why(&st->api, s), s);
		return -1;
	}
	return 0;
}

static int cublas_run(bench_kernel *k, int i)
{
	cublas_state *st = k->state;
	return cublas_enqueue(k, i) ? -1 : gpu_dev_wait(&st->dev);
}

static int cublas_sync(bench_kernel *k, int i)
{
	cublas_state *st = k->state;
	return gpu_dev_sync(&st->dev, k, i);
}

static void cublas_free(bench_kernel *k)
{
	cublas_state *st = k->state;
	if (!st)
		return;
	cublas_status s = st->h ? st->api.destroy(st->h) : CUBLAS_STATUS_SUCCESS;
	if (s != CUBLAS_STATUS_SUCCESS)
		fprintf(stderr, "cublas: cublasDestroy_v2 failed: %s (%d)\n", cublas_why(&st->api, s), s);
	gpu_dev_close(&st->dev);
	/* the library stays loaded (see bench_gpu_lib_check) */
	free(st);
	k->state = NULL;
}

/* Loads cuBLAS, opens the device and makes a handle in its context. */
static int cublas_setup(cublas_state *st, char *err, size_t n)
{
	char why[256];
	if (cublas_load(&st->api, why, sizeof why))
		return snprintf(err, n, "cublas: %s", why), BENCH_ERROR;
	if (gpu_dev_open(&st->dev, "cublas", err, n))
		return BENCH_ERROR;
	cublas_status s = st->api.create(&st->h);
	if (s != CUBLAS_STATUS_SUCCESS) {
		st->h = NULL;
		return snprintf(err, n, "cublas: cublasCreate_v2 failed: %s (%d)",
				cublas_why(&st->api, s), s), BENCH_ERROR;
	}
	return BENCH_OK;
}

int bench_make_cublas(const bench_problem *p, const bench_opts *o, bench_kernel *k,
		      char *err, size_t n)
{
	int rc = gpu_applies("cublas", p, 1u << BENCH_GEMM, o, err, n);
	if (rc != BENCH_OK)
		return rc;
	cublas_state *st = calloc(1, sizeof *st);
	if (!st)
		return snprintf(err, n, "cublas: out of memory"), BENCH_ERROR;
	*k = (bench_kernel){.impl = BENCH_IMPL_CUBLAS, .p = p, .threads = 1, .compile_ms = -1,
			    .bind = cublas_bind, .run = cublas_run, .enqueue = cublas_enqueue,
			    .sync = cublas_sync, .free = cublas_free, .state = st};
	if (cublas_setup(st, err, n)) {
		cublas_free(k);
		return BENCH_ERROR;
	}
	k->cuda = st->dev.cuda;
	return BENCH_OK;
}

/* ---- the cuDNN kernel ------------------------------------------------------------------- */

#define CUDNN_MAX_ALGOS 16

typedef struct cudnn_state {
	gpu_dev dev;
	cudnn_api api;
	cudnn_handle h;
	cudnn_tensor_desc x, y;
	cudnn_filter_desc w;
	cudnn_conv_desc conv;
	int algo;
	ts_array *workspace; /* device bytes, NULL when the algorithm needs none */
	size_t workspace_bytes;
} cudnn_state;

/* Checks a cuDNN status; BENCH_ERROR with the call named in err. */
#define DNN_TRY(st, call, name)                                                          \
	do {                                                                             \
		cudnn_status s_ = (call);                                                \
		if (s_ != CUDNN_STATUS_SUCCESS)                                          \
			return snprintf(err, n, "cudnn: %s failed: %s (%d)", name,        \
					(st)->api.error_string(s_), s_), BENCH_ERROR;    \
	} while (0)

/* The tensor, filter and convolution descriptors of the problem. */
static int cudnn_descs(cudnn_state *st, const bench_conv *c, char *err, size_t n)
{
	cudnn_api *a = &st->api;
	int OH = (int)bench_conv_out(c->H, c->R, c->stride, c->pad);
	int OW = (int)bench_conv_out(c->W, c->S, c->stride, c->pad);
	DNN_TRY(st, a->create_tensor(&st->x), "cudnnCreateTensorDescriptor(x)");
	DNN_TRY(st, a->create_tensor(&st->y), "cudnnCreateTensorDescriptor(y)");
	DNN_TRY(st, a->create_filter(&st->w), "cudnnCreateFilterDescriptor");
	DNN_TRY(st, a->create_conv(&st->conv), "cudnnCreateConvolutionDescriptor");
	DNN_TRY(st, a->set_tensor(st->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, (int)c->N, (int)c->C,
				  (int)c->H, (int)c->W), "cudnnSetTensor4dDescriptor(x)");
	DNN_TRY(st, a->set_tensor(st->y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, (int)c->N, (int)c->K,
				  OH, OW), "cudnnSetTensor4dDescriptor(y)");
	/* NCHW filters are OIHW */
	DNN_TRY(st, a->set_filter(st->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, (int)c->K, (int)c->C,
				  (int)c->R, (int)c->S), "cudnnSetFilter4dDescriptor");
	DNN_TRY(st, a->set_conv(st->conv, (int)c->pad, (int)c->pad, (int)c->stride, (int)c->stride,
				1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
		"cudnnSetConvolution2dDescriptor");
	DNN_TRY(st, a->set_math(st->conv, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType");
	return BENCH_OK;
}

/* The heuristics' first usable algorithm that keeps to fp32 FMA math, and
 * the workspace it needs. */
static int cudnn_pick_algo(cudnn_state *st, char *err, size_t n)
{
	cudnn_api *a = &st->api;
	cudnn_fwd_perf perf[CUDNN_MAX_ALGOS];
	int count = 0;
	DNN_TRY(st, a->get_algo(st->h, st->x, st->w, st->conv, st->y, CUDNN_MAX_ALGOS, &count, perf),
		"cudnnGetConvolutionForwardAlgorithm_v7");
	int i = 0;
	while (i < count && (perf[i].status != CUDNN_STATUS_SUCCESS ||
			     (perf[i].math_type != CUDNN_FMA_MATH &&
			      perf[i].math_type != CUDNN_DEFAULT_MATH)))
		i++;
	if (i == count)
		return snprintf(err, n, "cudnn: no fp32 forward algorithm for this convolution "
				"(%d candidates)", count), BENCH_ERROR;
	st->algo = perf[i].algo;
	DNN_TRY(st, a->workspace_size(st->h, st->x, st->w, st->conv, st->y, st->algo,
				      &st->workspace_bytes),
		"cudnnGetConvolutionForwardWorkspaceSize");
	return BENCH_OK;
}

/* Device workspace as a 1-d byte array (freed with the kernel). */
static int cudnn_workspace(cudnn_state *st, char *err, size_t n)
{
	if (st->workspace_bytes == 0)
		return BENCH_OK;
	int64_t bytes = (int64_t)st->workspace_bytes;
	st->workspace = ts_cuda_array_new(st->dev.ctx, st->dev.cuda, ts_uint8, 1, &bytes);
	if (!st->workspace)
		return snprintf(err, n, "cudnn: workspace of %lld bytes: %s", (long long)bytes,
				ts_last_error(st->dev.ctx)), BENCH_ERROR;
	return BENCH_OK;
}

static int cudnn_bind(bench_kernel *k, char *err, size_t n)
{
	cudnn_state *st = k->state;
	return gpu_dev_bind(&st->dev, k, err, n);
}

static int cudnn_enqueue(bench_kernel *k, int i)
{
	cudnn_state *st = k->state;
	ts_array *const *a = st->dev.arr[i];
	const float one = 1, zero = 0;
	void *ws = st->workspace ? gpu_dev_ptr(st->workspace) : NULL;
	cudnn_status s = st->api.forward(st->h, &one, st->x, gpu_dev_ptr(a[0]), st->w,
					 gpu_dev_ptr(a[1]), st->conv, st->algo, ws,
					 st->workspace_bytes, &zero, st->y, gpu_dev_ptr(a[2]));
	if (s != CUDNN_STATUS_SUCCESS) {
		fprintf(stderr, "cudnn: cudnnConvolutionForward failed: %s (%d)\n",
			st->api.error_string(s), s);
		return -1;
	}
	return 0;
}

static int cudnn_run(bench_kernel *k, int i)
{
	cudnn_state *st = k->state;
	return cudnn_enqueue(k, i) ? -1 : gpu_dev_wait(&st->dev);
}

static int cudnn_sync(bench_kernel *k, int i)
{
	cudnn_state *st = k->state;
	return gpu_dev_sync(&st->dev, k, i);
}

/* Destroys whatever was created; a failure here is reported, not fatal. */
static void cudnn_destroy_all(cudnn_state *st)
{
	cudnn_api *a = &st->api;
	cudnn_status s[5] = {
		st->conv ? a->destroy_conv(st->conv) : 0, st->w ? a->destroy_filter(st->w) : 0,
		st->y ? a->destroy_tensor(st->y) : 0, st->x ? a->destroy_tensor(st->x) : 0,
		st->h ? a->destroy(st->h) : 0,
	};
	for (int i = 0; i < 5; i++)
		if (s[i] != CUDNN_STATUS_SUCCESS)
			fprintf(stderr, "cudnn: destroying a %s failed: %s (%d)\n",
				i == 4 ? "handle" : "descriptor", a->error_string(s[i]), s[i]);
}

static void cudnn_free(bench_kernel *k)
{
	cudnn_state *st = k->state;
	if (!st)
		return;
	if (st->api.lib)
		cudnn_destroy_all(st);
	ts_cuda_array_free(st->workspace);
	gpu_dev_close(&st->dev);
	/* the library stays loaded (see bench_gpu_lib_check) */
	free(st);
	k->state = NULL;
}

static int cudnn_setup(cudnn_state *st, const bench_conv *c, char *err, size_t n)
{
	char why[256];
	if (cudnn_load(&st->api, why, sizeof why))
		return snprintf(err, n, "cudnn: %s", why), BENCH_ERROR;
	if (gpu_dev_open(&st->dev, "cudnn", err, n))
		return BENCH_ERROR;
	cudnn_status s = st->api.create(&st->h);
	if (s != CUDNN_STATUS_SUCCESS) {
		st->h = NULL;
		return snprintf(err, n, "cudnn: cudnnCreate failed: %s (%d)",
				st->api.error_string(s), s), BENCH_ERROR;
	}
	if (cudnn_descs(st, c, err, n) || cudnn_pick_algo(st, err, n))
		return BENCH_ERROR;
	return cudnn_workspace(st, err, n);
}

int bench_make_cudnn(const bench_problem *p, const bench_opts *o, bench_kernel *k, char *err,
		     size_t n)
{
	int rc = gpu_applies("cudnn", p, 1u << BENCH_CONV2D, o, err, n);
	if (rc != BENCH_OK)
		return rc;
	cudnn_state *st = calloc(1, sizeof *st);
	if (!st)
		return snprintf(err, n, "cudnn: out of memory"), BENCH_ERROR;
	*k = (bench_kernel){.impl = BENCH_IMPL_CUDNN, .p = p, .threads = 1, .compile_ms = -1,
			    .bind = cudnn_bind, .run = cudnn_run, .enqueue = cudnn_enqueue,
			    .sync = cudnn_sync, .free = cudnn_free, .state = st};
	if (cudnn_setup(st, &p->c, err, n)) {
		cudnn_free(k);
		return BENCH_ERROR;
	}
	k->cuda = st->dev.cuda;
	return BENCH_OK;
}
