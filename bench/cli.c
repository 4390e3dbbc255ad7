/*
 * cli.c - tessera-bench's command line and its problem tables.
 *
 * The default GEMM shapes are the square sizes people quote plus the GEMMs
 * inside ResNet-50 (its classifier and the im2col form of some of its
 * convolutions) and BERT-base at sequence length 128; the default conv2d
 * problems are ResNet-50's convolution layers at batch 1, the depthwise ones
 * MobileNet-v2's depthwise 3x3 layers at batch 1.  `summary` runs a
 * small subset of both so that it finishes in a few minutes on two cores.
 * With --target cuda the defaults are the sizes a GPU is judged on: GEMM
 * 4096^3 (1024..4096 in the summary) and ResNet-50's 3x3 layers; there
 * alone a GEMM may take 16-bit or TF32 inputs (--dtype f16|bf16|tf32).
 * Parsing never exits: every mistake comes back as one line naming the
 * argument, so main decides the exit code and tests can check the message.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "tune.h"

#define BENCH_IMPL_NAME(id, name) name,
const char *const bench_impl_names[BENCH_NIMPL] = {BENCH_IMPLS(BENCH_IMPL_NAME)};
#undef BENCH_IMPL_NAME

typedef struct named_gemm { const char *name; int64_t M, N, K; } named_gemm;
typedef struct named_conv {
	const char *name;
	int64_t C, H, K, R, stride, pad; /* batch 1, square images and kernels */
} named_conv;

static const int64_t default_squares[] = {256, 512, 1024, 2048};

static const named_gemm model_gemms[] = {
	{"resnet50.fc", 1, 1000, 2048},
	{"resnet50.res2_3x3.im2col", 64, 3136, 576},   /* K x (OH OW) x (C R S) */
	{"resnet50.res4_3x3.im2col", 256, 196, 2304},
	{"resnet50.res5_1x1.im2col", 2048, 49, 512},
	{"bert.qkv", 128, 768, 768},
	{"bert.ffn1", 128, 3072, 768},
	{"bert.ffn2", 128, 768, 3072},
};

/* ResNet-50 v1.5 (stride in the 3x3 convolutions), batch 1. */
static const named_conv resnet_layers[] = {
	{"conv1", 3, 224, 64, 7, 2, 3},
	{"res2_1x1a", 64, 56, 64, 1, 1, 0},
	{"res2_3x3", 64, 56, 64, 3, 1, 1},
	{"res2_1x1b", 64, 56, 256, 1, 1, 0},
	{"res3_3x3s2", 128, 56, 128, 3, 2, 1},
	{"res3_3x3", 128, 28, 128, 3, 1, 1},
	{"res3_1x1b", 128, 28, 512, 1, 1, 0},
	{"res4_3x3s2", 256, 28, 256, 3, 2, 1},
	{"res4_3x3", 256, 14, 256, 3, 1, 1},
	{"res4_1x1a", 1024, 14, 256, 1, 1, 0},
	{"res5_3x3s2", 512, 14, 512, 3, 2, 1},
	{"res5_3x3", 512, 7, 512, 3, 1, 1},
	{"res5_1x1b", 512, 7, 2048, 1, 1, 0},
};

/* MobileNet-v2's depthwise 3x3 layers (pad 1), batch 1: C, H = W, stride. */
typedef struct named_dw { const char *name; int64_t C, H, stride; } named_dw;
static const named_dw mobilenet_dw[] = {
	{"dw1", 32, 112, 1},  {"dw2", 96, 112, 2}, {"dw3", 144, 56, 1}, {"dw4", 144, 56, 2},
	{"dw5", 192, 28, 1},  {"dw6", 192, 28, 2}, {"dw7", 384, 14, 1}, {"dw8", 576, 14, 1},
	{"dw9", 576, 14, 2},  {"dw10", 960, 7, 1},
};

static const char *const dense_gemms[] = {"bert.qkv", "bert.ffn1", "bert.ffn2"};
/* symbolic: extents a register tile divides and extents it does not */
static const int64_t symbolic_squares[] = {256, 512, 1000, 1023, 1024};
static const char *const summary_gemms[] = {"sq512", "sq1024", "resnet50.fc", "bert.ffn1"};
static const char *const summary_convs[] = {"conv1", "res2_3x3", "res4_3x3", "res5_1x1b"};

/* On the GPU (--target cuda): large squares, where a GPU GEMM is judged,
 * and ResNet-50's 3x3 layers, the convolutions cuDNN works hardest on. */
static const int64_t gpu_squares[] = {4096};
static const int64_t gpu_summary_squares[] = {1024, 2048, 4096};
static const char *const gpu_convs[] = {"res2_3x3",   "res3_3x3s2", "res3_3x3", "res4_3x3s2",
					"res4_3x3",   "res5_3x3s2", "res5_3x3"};

void bench_usage(FILE *f)
{
	fputs("usage: tessera-bench COMMAND [options]\n"
	      "\n"
	      "Times tessera's generated kernels against naive C, OpenBLAS, oneDNN\n"
	      "(and cuBLAS/cuDNN with --target cuda) on the same data; every result is\n"
	      "checked against a baseline (max |err| / max |ref| <= 1e-3) before it is timed.\n"
	      "\n"
	      "commands:\n"
	      "  gemm      C[M,N] = A[M,K] B[K,N]; default: squares 256..2048, ResNet-50 and\n"
	      "            BERT-base GEMMs\n"
	      "  conv2d    NCHW conv2d; default: the ResNet-50 layers at batch 1\n"
	      "  depthwise NCHW depthwise 3x3 conv (multiplier 1): tessera's default CPU\n"
	      "            schedule (or --tuned) vs oneDNN (groups = channels) and naive C;\n"
	      "            default: the MobileNet-v2 depthwise layers at batch 1 (CPU only)\n"
	      "  summary   a few GEMMs and conv2d layers (a few minutes on two cores), then\n"
	      "            the --target cuda summary when a GPU is present\n"
	      "  dense     a dense layer relu(A B + bias): the fused tessera kernel\n"
	      "            (ts_schedule_dense_cpu) vs the tessera GEMM then separate bias and\n"
	      "            relu kernels vs OpenBLAS sgemm + a C loop, with the time ratios;\n"
	      "            default: the BERT-base GEMMs (also --size, --shape)\n"
	      "  symbolic  one GEMM compiled over size variables m, n, k (ts_size_var) run on\n"
	      "            every shape vs its specialized twin (ts_lower_specialize), with\n"
	      "            the ratio sym/spec; default: squares 256, 512, 1000, 1023, 1024\n"
	      "            (also --size, --shape; CPU only)\n"
	      "  model     a whole ONNX model (resnet50, bert-layer or FILE.onnx) compiled by\n"
	      "            the graph layer, checked and timed against ONNX Runtime; its own\n"
	      "            options: tessera-bench model --help\n"
	      "  peak      measure the fp32 FMA peak only\n"
	      "  softmax   softmax over rows (BERT attention 1536x128, 1000x1000, 64x4096):\n"
	      "            ts_schedule_softmax_cpu vs the unscheduled function, the generic\n"
	      "            default schedule and naive C, median us and speedups (CPU only;\n"
	      "            takes --threads and --repeat)\n"
	      "  reduce    float sums (2^24 elements, row sums of 4096x4096): rfactor +\n"
	      "            vectorize + parallel vs the unscheduled function and naive C,\n"
	      "            median us, GB/s and speedups (CPU only; takes --threads and\n"
	      "            --repeat)\n"
	      "  help      this text\n"
	      "\n"
	      "options:\n"
	      "  --sizes S1,S2,...      square GEMMs of these sizes\n"
	      "  --size N | MxNxK       one square or one M x N x K GEMM (repeatable)\n"
	      "  --shape M,N,K          one GEMM (repeatable)\n"
	      "  --layer NAME           one ResNet-50 conv layer, or with depthwise one\n"
	      "                         MobileNet-v2 layer (repeatable; 'list' lists them)\n"
	      "  --conv N,C,H,W,K,R,S,stride,pad   one conv2d: X[N,C,H,W], K filters RxS\n"
	      "                         (depthwise: K = C)\n"
	      "  --threads N            threads for every library, 1 to 1024 (default: all cores)\n"
	      "  --target cpu|cuda      where to run (default cpu); cuda times tessera, cuBLAS\n"
	      "                         and cuDNN on the GPU, by default GEMM 4096^3 and the\n"
	      "                         ResNet-50 3x3 layers (results checked against the CPU)\n"
	      "  --repeat N             timed samples, 1 to 2^20 (default: enough for 0.2 s,\n"
	      "                         at least 5); on the GPU each sample is one call\n"
	      "                         between its own pair of CUDA events, after warm-up\n"
	      "                         calls, for tessera, cuBLAS and cuDNN alike\n"
	      "  --flush-l2             GPU only: before each timed call, overwrite a device\n"
	      "                         buffer twice the L2 size (outside the timed events),\n"
	      "                         so every call starts with a cold L2\n"
	      "  --dtype f32|f16|bf16|tf32\n"
	      "                         gemm --target cuda only: A and B in float32 (default),\n"
	      "                         float16 or bfloat16, or float32 multiplied as TF32\n"
	      "                         (inputs already TF32 values, so both libraries' products\n"
	      "                         are exact), C in float32; tessera runs its tensor-core\n"
	      "                         GEMM (sm_80+, M, N, K multiples of 16, else the row is\n"
	      "                         skipped), cuBLAS cublasGemmEx (fp32 accumulation;\n"
	      "                         CUBLAS_COMPUTE_32F_FAST_TF32 for tf32); both checked\n"
	      "                         against the double product of the same inputs\n"
	      "  --impl A,B,...         only these of: tessera,naive,openblas,onednn,cublas,cudnn\n"
	      "                         (each at most once)\n"
	      "  --json PATH            write the results as a JSON array of records (with\n"
	      "                         median, min, mean and stddev of the samples)\n"
	      "  --plot PATH            write a PNG bar chart of GFLOP/s (needs gnuplot; its\n"
	      "                         data go next to it: x.png -> x.dat)\n"
	      "  --tuned LOG            tessera's CPU GEMM, conv2d and depthwise kernels from the records\n"
	      "                         of a tessera-tune log where it has one for the problem\n"
	      "                         (the default schedules elsewhere; never tunes)\n"
	      "  -h, --help             this text\n"
	      "\n"
	      "Sizes are decimal integers (no sign); every matrix and tensor must have fewer\n"
	      "than 2^31 elements.  The --json and --plot paths are checked for writing\n"
	      "before anything runs.\n"
	      "\n"
	      "Naive kernels run on one thread.  GFLOP/s is also given as %% of the measured\n"
	      "CPU fp32 peak (one core with --threads 1, all cores otherwise; none on the\n"
	      "GPU) and as ratios to the baselines (row GFLOP/s / baseline GFLOP/s, >1 is\n"
	      "faster).\n"
	      "\n"
	      "exit status: 0 all results correct, 1 a result was wrong or a kernel failed,\n"
	      "2 bad command line (or unwritable --json/--plot path), 3 --target cuda\n"
	      "without a usable GPU.\n",
	      f);
}

/* Formats a message about arg, shortened so that a huge argument still
 * gives a one-line message. */
static int fail(char *err, size_t n, const char *fmt, const char *arg)
{
	char a[80];
	snprintf(a, sizeof a, "%.64s%s", arg, strlen(arg) > 64 ? "..." : "");
	snprintf(err, n, fmt, a);
	return -1;
}

/* Parses up to max+1 decimal integers in [0, 2^31) separated by sep:
 * digits only (no sign, no spaces).  Returns the count (max+1 meaning
 * "too many"), or -1 on a malformed element. */
static int parse_list(const char *s, char sep, int64_t *out, int max)
{
	int count = 0;
	for (const char *p = s;; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		char *end;
		errno = 0;
		long long v = strtoll(p, &end, 10);
		if (errno || v > INT32_MAX || (*end != sep && *end))
			return -1;
		if (count < max)
			out[count] = v;
		if (++count > max || !*end)
			return count;
		p = end;
	}
}

/* Parses a comma-separated list of non-negative integers; returns the
 * count or -1 (with err set) on a bad element. */
static int parse_ints(const char *flag, const char *s, int64_t *out, int max, char *err,
		      size_t n)
{
	int count = parse_list(s, ',', out, max);
	if (count < 0)
		return snprintf(err, n, "%s: '%.64s' is not a list of integers from 0 to 2^31-1",
				flag, s), -1;
	if (count > max)
		return snprintf(err, n, "%s: '%.64s' has more than %d numbers", flag, s, max), -1;
	return count;
}

int64_t bench_conv_out(int64_t in, int64_t k, int64_t stride, int64_t pad)
{
	return (in + 2 * pad - k) / stride + 1;
}

static bench_problem *add_problem(bench_opts *o, bench_op op, const char *name, char *err,
				  size_t n)
{
	if (o->nproblems == BENCH_MAX_PROBLEMS) {
		snprintf(err, n, "too many problems (at most %d)", BENCH_MAX_PROBLEMS);
		return NULL;
	}
	bench_problem *p = &o->problems[o->nproblems++];
	memset(p, 0, sizeof *p);
	p->op = op;
	snprintf(p->name, sizeof p->name, "%s", name);
	return p;
}

static int add_gemm(bench_opts *o, const char *name, int64_t M, int64_t N, int64_t K,
		    char *err, size_t n)
{
	if (M < 1 || N < 1 || K < 1 || M * N > INT32_MAX || M * K > INT32_MAX || K * N > INT32_MAX) {
		snprintf(err, n, "gemm %s: M, N, K must be >= 1 and each matrix below 2^31 "
			 "elements, got %lldx%lldx%lld", name, (long long)M, (long long)N, (long long)K);
		return -1;
	}
	bench_problem *p = add_problem(o, BENCH_GEMM, name, err, n);
	if (!p)
		return -1;
	p->g = (bench_gemm){M, N, K};
	return 0;
}

/* a * b * c * d, or INT64_MAX when the product leaves int64. */
static int64_t elems4(int64_t a, int64_t b, int64_t c, int64_t d)
{
	int64_t r;
	if (__builtin_mul_overflow(a, b, &r) || __builtin_mul_overflow(r, c, &r) ||
	    __builtin_mul_overflow(r, d, &r))
		return INT64_MAX;
	return r;
}

static int check_conv(const bench_conv *c, const char *name, char *err, size_t n)
{
	const int64_t *v = &c->N;
	for (int i = 0; i < 8; i++) {
		if (v[i] < 1)
			return fail(err, n, "conv %s: N, C, H, W, K, R, S and stride must be >= 1", name);
	}
	if (c->R > c->H + 2 * c->pad || c->S > c->W + 2 * c->pad)
		return fail(err, n, "conv %s: the kernel is larger than the padded image", name);
	/* every value is below 2^31, so four of them multiply past int64, and
	 * a large padding or output is as real a tensor as the input */
	int64_t oh = bench_conv_out(c->H, c->R, c->stride, c->pad);
	int64_t ow = bench_conv_out(c->W, c->S, c->stride, c->pad);
	if (elems4(c->N, c->C, c->H + 2 * c->pad, c->W + 2 * c->pad) > INT32_MAX ||
	    elems4(c->K, c->C, c->R, c->S) > INT32_MAX || elems4(c->N, c->K, oh, ow) > INT32_MAX)
		return fail(err, n, "conv %s: a tensor has more than 2^31 elements", name);
	return 0;
}

static int add_conv(bench_opts *o, const char *name, const bench_conv *c, char *err, size_t n)
{
	bool dw = o->cmd == BENCH_CMD_DEPTHWISE;
	if (check_conv(c, name, err, n))
		return -1;
	if (dw && c->K != c->C)
		return snprintf(err, n, "depthwise %s: K must equal C (multiplier 1), got K %lld, C %lld",
				name, (long long)c->K, (long long)c->C), -1;
	if (dw && c->R != c->S) /* the tuner's depthwise task is square */
		return snprintf(err, n, "depthwise %s: the kernel must be square (R = S), got %lldx%lld",
				name, (long long)c->R, (long long)c->S), -1;
	bench_problem *p = add_problem(o, dw ? BENCH_DEPTHWISE : BENCH_CONV2D, name, err, n);
	if (!p)
		return -1;
	p->c = *c;
	return 0;
}

static int add_square(bench_opts *o, int64_t s, char *err, size_t n)
{
	char name[32];
	snprintf(name, sizeof name, "sq%lld", (long long)s);
	return add_gemm(o, name, s, s, s, err, n);
}

int bench_find_layer(const char *name, bench_conv *c)
{
	for (size_t i = 0; i < TS_COUNT_OF(resnet_layers); i++) {
		const named_conv *l = &resnet_layers[i];
		if (strcmp(l->name, name) == 0) {
			*c = (bench_conv){1, l->C, l->H, l->H, l->K, l->R, l->R, l->stride, l->pad};
			return 0;
		}
	}
	return -1;
}

int bench_find_dw_layer(const char *name, bench_conv *c)
{
	for (size_t i = 0; i < TS_COUNT_OF(mobilenet_dw); i++) {
		const named_dw *l = &mobilenet_dw[i];
		if (strcmp(l->name, name) == 0) {
			*c = (bench_conv){1, l->C, l->H, l->H, l->C, 3, 3, l->stride, 1};
			return 0;
		}
	}
	return -1;
}

static int add_layer(bench_opts *o, const char *name, char *err, size_t n)
{
	bench_conv c;
	bool dw = o->cmd == BENCH_CMD_DEPTHWISE;
	if ((dw ? bench_find_dw_layer(name, &c) : bench_find_layer(name, &c)) == 0)
		return add_conv(o, name, &c, err, n);
	return fail(err, n, dw ? "--layer: unknown depthwise layer '%s' (try depthwise --layer list)"
			       : "--layer: unknown layer '%s' (try --layer list)", name);
}

static int add_model_gemm(bench_opts *o, const char *name, char *err, size_t n)
{
	for (size_t i = 0; i < TS_COUNT_OF(model_gemms); i++) {
		const named_gemm *g = &model_gemms[i];
		if (strcmp(g->name, name) == 0)
			return add_gemm(o, name, g->M, g->N, g->K, err, n);
	}
	if (strncmp(name, "sq", 2) == 0)
		return add_square(o, atoll(name + 2), err, n);
	return fail(err, n, "unknown gemm '%s'", name);
}

static int add_gpu_defaults(bench_opts *o, char *err, size_t n)
{
	int rc = 0;
	bool summary = o->cmd == BENCH_CMD_SUMMARY;
	const int64_t *sq = summary ? gpu_summary_squares : gpu_squares;
	size_t nsq = summary ? TS_COUNT_OF(gpu_summary_squares) : TS_COUNT_OF(gpu_squares);
	if (o->cmd == BENCH_CMD_GEMM || summary)
		for (size_t i = 0; i < nsq && !rc; i++)
			rc = add_square(o, sq[i], err, n);
	if (o->cmd == BENCH_CMD_CONV2D || summary)
		for (size_t i = 0; i < TS_COUNT_OF(gpu_convs) && !rc; i++)
			rc = add_layer(o, gpu_convs[i], err, n);
	return rc;
}

static int add_defaults(bench_opts *o, char *err, size_t n)
{
	int rc = 0;
	if (o->target == BENCH_CUDA)
		return add_gpu_defaults(o, err, n);
	if (o->cmd == BENCH_CMD_GEMM) {
		for (size_t i = 0; i < TS_COUNT_OF(default_squares) && !rc; i++)
			rc = add_square(o, default_squares[i], err, n);
		for (size_t i = 0; i < TS_COUNT_OF(model_gemms) && !rc; i++)
			rc = add_model_gemm(o, model_gemms[i].name, err, n);
	} else if (o->cmd == BENCH_CMD_DENSE) {
		for (size_t i = 0; i < TS_COUNT_OF(dense_gemms) && !rc; i++)
			rc = add_model_gemm(o, dense_gemms[i], err, n);
	} else if (o->cmd == BENCH_CMD_SYMBOLIC) {
		for (size_t i = 0; i < TS_COUNT_OF(symbolic_squares) && !rc; i++)
			rc = add_square(o, symbolic_squares[i], err, n);
	} else if (o->cmd == BENCH_CMD_CONV2D) {
		for (size_t i = 0; i < TS_COUNT_OF(resnet_layers) && !rc; i++)
			rc = add_layer(o, resnet_layers[i].name, err, n);
	} else if (o->cmd == BENCH_CMD_DEPTHWISE) {
		for (size_t i = 0; i < TS_COUNT_OF(mobilenet_dw) && !rc; i++)
			rc = add_layer(o, mobilenet_dw[i].name, err, n);
	} else if (o->cmd == BENCH_CMD_SUMMARY) {
		for (size_t i = 0; i < TS_COUNT_OF(summary_gemms) && !rc; i++)
			rc = add_model_gemm(o, summary_gemms[i], err, n);
		for (size_t i = 0; i < TS_COUNT_OF(summary_convs) && !rc; i++)
			rc = add_layer(o, summary_convs[i], err, n);
	}
	return rc;
}

static int find_impl(const char *name, size_t len)
{
	for (int i = 0; i < BENCH_NIMPL; i++)
		if (strlen(bench_impl_names[i]) == len && !strncmp(name, bench_impl_names[i], len))
			return i;
	return -1;
}

/* Walks the list in place: any length, any number of names, no copy. */
static int parse_impls(bench_opts *o, const char *s, char *err, size_t n)
{
	o->impls = 0;
	for (const char *p = s;; p++) {
		size_t len = strcspn(p, ",");
		int found = find_impl(p, len);
		if (len == 0)
			return snprintf(err, n, "--impl: empty name in '%.64s'", s), -1;
		if (found < 0)
			return snprintf(err, n, "--impl: unknown implementation '%.*s%s' (known: tessera, "
				 "naive, openblas, onednn, cublas, cudnn)", (int)(len < 40 ? len : 40), p,
				 len > 40 ? "..." : ""), -1;
		if (o->impls >> found & 1u)
			return fail(err, n, "--impl: '%s' is named twice", bench_impl_names[found]);
		o->impls |= 1u << found;
		p += len;
		if (!*p)
			return 0;
	}
}

static int parse_int_flag(const char *flag, const char *v, int lo, int hi, int *out, char *err,
			  size_t n)
{
	int64_t x;
	if (parse_list(v, ',', &x, 1) != 1 || x < lo || x > hi)
		return snprintf(err, n, "%s: must be an integer from %d to %d, got '%.64s'", flag, lo,
				hi, v), -1;
	*out = (int)x;
	return 0;
}

static int parse_sizes(bench_opts *o, const char *v, char *err, size_t n)
{
	int64_t s[BENCH_MAX_PROBLEMS];
	int k = parse_ints("--sizes", v, s, BENCH_MAX_PROBLEMS, err, n);
	for (int i = 0; i < k; i++)
		if (add_square(o, s[i], err, n))
			return -1;
	return k < 0 ? -1 : 0;
}

/* --size N (a square) or MxNxK. */
static int parse_size(bench_opts *o, const char *v, char *err, size_t n)
{
	int64_t s[3];
	int k = parse_list(v, 'x', s, 3);
	if (k != 1 && k != 3)
		return snprintf(err, n, "--size: '%.64s' is not N or MxNxK (decimal integers from 0 "
				"to 2^31-1)", v), -1;
	if (k == 1)
		return add_square(o, s[0], err, n);
	char name[40];
	snprintf(name, sizeof name, "%lldx%lldx%lld", (long long)s[0], (long long)s[1],
		 (long long)s[2]);
	return add_gemm(o, name, s[0], s[1], s[2], err, n);
}

static int parse_shape(bench_opts *o, const char *v, char *err, size_t n)
{
	int64_t s[3];
	int k = parse_ints("--shape", v, s, 3, err, n);
	if (k >= 0 && k != 3)
		return fail(err, n, "--shape: expected M,N,K, got '%s'", v);
	if (k < 0)
		return -1;
	char name[40];
	snprintf(name, sizeof name, "%lldx%lldx%lld", (long long)s[0], (long long)s[1],
		 (long long)s[2]);
	return add_gemm(o, name, s[0], s[1], s[2], err, n);
}

static int parse_conv(bench_opts *o, const char *v, char *err, size_t n)
{
	int64_t s[9];
	int k = parse_ints("--conv", v, s, 9, err, n);
	if (k >= 0 && k != 9)
		return fail(err, n, "--conv: expected N,C,H,W,K,R,S,stride,pad, got '%s'", v);
	if (k < 0)
		return -1;
	bench_conv c = {s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8]};
	char name[40];
	snprintf(name, sizeof name, "conv%lldx%lld_%lld", (long long)c.R, (long long)c.S,
		 (long long)o->nproblems);
	return add_conv(o, name, &c, err, n);
}

/* Whether path can be written, found by opening it as the run will (and
 * removing it again if this made it): permissions alone say nothing when
 * running as root or on a read-only file system. */
static int check_writable(const char *flag, const char *path, char *err, size_t n)
{
	struct stat st;
	bool existed = stat(path, &st) == 0;
	if (existed && S_ISDIR(st.st_mode))
		return snprintf(err, n, "%s: cannot write '%.200s': it is a directory", flag, path), -1;
	int fd = open(path, existed ? O_WRONLY : O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		return snprintf(err, n, "%s: cannot write '%.200s': %s", flag, path, strerror(errno)),
		       -1;
	close(fd);
	if (!existed)
		unlink(path);
	return 0;
}

/* The --tuned log parses (its records are checked against this machine
 * when a kernel looks its task up). */
static int check_tuned(const char *path, char *err, size_t n)
{
	ts_ctx *ctx = ts_ctx_new();
	int rc = ctx && ts_tune_log_load(ctx, path) ? 0 : -1;
	if (rc)
		snprintf(err, n, "--tuned: %.400s", ctx ? ts_last_error(ctx) : "out of memory");
	ts_ctx_free(ctx);
	return rc;
}

int bench_check_outputs(const bench_opts *o, char *err, size_t n)
{
	if (o->cmd == BENCH_CMD_HELP || o->list_layers)
		return 0;
	if (o->json && check_writable("--json", o->json, err, n))
		return -1;
	if (o->plot && check_writable("--plot", o->plot, err, n))
		return -1;
	return o->tuned ? check_tuned(o->tuned, err, n) : 0;
}

void bench_print_layers(FILE *f, bool depthwise)
{
	for (size_t i = 0; depthwise && i < TS_COUNT_OF(mobilenet_dw); i++) {
		const named_dw *l = &mobilenet_dw[i];
		fprintf(f, "%-11s 1x%lldx%lldx%lld dw 3x3 s%lld p1\n", l->name, (long long)l->C,
			(long long)l->H, (long long)l->H, (long long)l->stride);
	}
	if (depthwise)
		return;
	for (size_t i = 0; i < TS_COUNT_OF(resnet_layers); i++) {
		const named_conv *l = &resnet_layers[i];
		fprintf(f, "%-11s 1x%lldx%lldx%lld k%lld %lldx%lld s%lld p%lld\n", l->name,
			(long long)l->C, (long long)l->H, (long long)l->H, (long long)l->K,
			(long long)l->R, (long long)l->R, (long long)l->stride, (long long)l->pad);
	}
}

static int parse_dtype(bench_opts *o, const char *v, char *err, size_t n)
{
	static const bench_dtype all[] = {BENCH_F32, BENCH_F16, BENCH_BF16, BENCH_TF32};
	for (size_t i = 0; i < TS_COUNT_OF(all); i++) {
		if (strcmp(v, bench_dtype_name(all[i])) == 0) {
			o->dtype = all[i];
			return 0;
		}
	}
	return fail(err, n, "--dtype: unknown type '%s' (f32, f16, bf16 or tf32)", v);
}

static int parse_target(bench_opts *o, const char *v, char *err, size_t n)
{
	if (strcmp(v, "cpu") == 0)
		o->target = BENCH_CPU;
	else if (strcmp(v, "cuda") == 0)
		o->target = BENCH_CUDA;
	else
		return fail(err, n, "--target: unknown target '%s' (cpu or cuda)", v);
	return 0;
}

/* The option flags that take a value, applied in command-line order. */
static int apply_flag(bench_opts *o, const char *flag, const char *v, char *err, size_t n)
{
	bool conv_cmd = o->cmd == BENCH_CMD_CONV2D || o->cmd == BENCH_CMD_DEPTHWISE;
	bool gemm_cmd = o->cmd == BENCH_CMD_GEMM || o->cmd == BENCH_CMD_DENSE ||
			o->cmd == BENCH_CMD_SYMBOLIC;
	bool sizes = !strcmp(flag, "--sizes"), shape = !strcmp(flag, "--shape");
	bool size = !strcmp(flag, "--size");
	bool layer = !strcmp(flag, "--layer"), conv = !strcmp(flag, "--conv");
	if ((sizes || shape || size) && !gemm_cmd)
		return fail(err, n, "%s applies to the gemm, dense and symbolic commands only", flag);
	if ((layer || conv) && !conv_cmd)
		return fail(err, n, "%s applies to the conv2d and depthwise commands only", flag);
	if (size)
		return parse_size(o, v, err, n);
	if (sizes || shape)
		return sizes ? parse_sizes(o, v, err, n) : parse_shape(o, v, err, n);
	if (layer && !strcmp(v, "list")) {
		o->list_layers = true;
		return 0;
	}
	if (layer || conv)
		return layer ? add_layer(o, v, err, n) : parse_conv(o, v, err, n);
	if (!strcmp(flag, "--threads"))
		return parse_int_flag(flag, v, 1, BENCH_MAX_THREADS, &o->threads, err, n);
	if (!strcmp(flag, "--repeat"))
		return parse_int_flag(flag, v, 1, BENCH_MAX_REPEAT, &o->repeat, err, n);
	if (!strcmp(flag, "--target"))
		return parse_target(o, v, err, n);
	if (!strcmp(flag, "--dtype"))
		return parse_dtype(o, v, err, n);
	if (!strcmp(flag, "--impl"))
		return parse_impls(o, v, err, n);
	if (!strcmp(flag, "--tuned")) {
		if (!*v)
			return fail(err, n, "%s: empty path", flag);
		o->tuned = v;
		return 0;
	}
	if (!strcmp(flag, "--json") || !strcmp(flag, "--plot")) {
		if (!*v)
			return fail(err, n, "%s: empty path", flag);
		*(!strcmp(flag, "--json") ? &o->json : &o->plot) = v;
		return 0;
	}
	return fail(err, n, "unknown option '%s' (see tessera-bench --help)", flag);
}

static bool known_flag(const char *a, size_t len)
{
	static const char *const flags[] = {"--sizes", "--size",   "--shape", "--layer",
					    "--conv",  "--threads", "--target", "--repeat",
					    "--impl",  "--json",   "--plot",  "--tuned",
					    "--dtype"};
	for (size_t i = 0; i < TS_COUNT_OF(flags); i++)
		if (strlen(flags[i]) == len && !strncmp(a, flags[i], len))
			return true;
	return false;
}

static int parse_command(bench_opts *o, const char *c, char *err, size_t n)
{
	static const struct { const char *name; bench_cmd cmd; } cmds[] = {
		{"gemm", BENCH_CMD_GEMM}, {"conv2d", BENCH_CMD_CONV2D},
		{"summary", BENCH_CMD_SUMMARY}, {"peak", BENCH_CMD_PEAK}, {"dense", BENCH_CMD_DENSE},
		{"softmax", BENCH_CMD_SOFTMAX}, {"reduce", BENCH_CMD_REDUCE},
		{"depthwise", BENCH_CMD_DEPTHWISE}, {"symbolic", BENCH_CMD_SYMBOLIC},
		{"help", BENCH_CMD_HELP}, {"-h", BENCH_CMD_HELP}, {"--help", BENCH_CMD_HELP},
	};
	for (size_t i = 0; i < TS_COUNT_OF(cmds); i++) {
		if (strcmp(c, cmds[i].name) == 0) {
			o->cmd = cmds[i].cmd;
			return 0;
		}
	}
	return snprintf(err, n, "unknown command '%.64s' (gemm, conv2d, depthwise, dense, symbolic, "
			"summary, peak, softmax, reduce or help)", c), -1;
}

static void set_defaults(bench_opts *o)
{
	memset(o, 0, sizeof *o);
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	o->threads = cores > 0 ? (int)cores : 1;
	o->target = BENCH_CPU;
}

/* dense and symbolic print their own table of fixed CPU kernels. */
static int dense_refuses(const bench_opts *o, char *err, size_t n)
{
	const char *flag = o->target == BENCH_CUDA ? "--target cuda" : o->impls ? "--impl"
			   : o->json ? "--json" : o->plot ? "--plot" : NULL;
	if (flag)
		return fail(err, n, o->cmd == BENCH_CMD_DENSE
			    ? "dense: %s does not apply (dense times fixed CPU kernels and prints one table)"
			    : "symbolic: %s does not apply (symbolic times fixed CPU kernels and prints one table)",
			    flag);
	return 0;
}

/* The 16-bit types and TF32 are the GPU GEMMs' only: every other kernel,
 * and every CPU library, is fp32. */
static int dtype_refused(const bench_opts *o, char *err, size_t n)
{
	const char *t = bench_dtype_name(o->dtype);
	if (o->dtype == BENCH_F32 || o->cmd == BENCH_CMD_HELP)
		return 0;
	if (o->cmd != BENCH_CMD_GEMM)
		return fail(err, n, "--dtype %s applies to the gemm command only (with --target cuda; "
			    "the other commands run in fp32)", t);
	if (o->target != BENCH_CUDA)
		return fail(err, n, "--dtype %s applies to --target cuda only (tessera's CPU GEMM, "
			    "OpenBLAS and oneDNN run in fp32)", t);
	return 0;
}

int bench_parse_args(int argc, char **argv, bench_opts *o, char *err, size_t errlen)
{
	set_defaults(o);
	if (argc < 2)
		return fail(err, errlen, "%s",
			    "missing command (gemm, conv2d, depthwise, dense, symbolic, summary, peak, softmax, "
			    "reduce or help)");
	if (parse_command(o, argv[1], err, errlen))
		return -1;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			o->cmd = BENCH_CMD_HELP;
			return 0;
		}
		if (strncmp(a, "--", 2) != 0)
			return snprintf(err, errlen, "unexpected argument '%.64s'", a), -1;
		if (!strncmp(a, "--flush-l2", 10) && (a[10] == '\0' || a[10] == '=')) {
			if (a[10] == '=')
				return fail(err, errlen, "--flush-l2 takes no value (got '%s')", a + 11);
			o->flush_l2 = true;
			continue;
		}
		const char *eq = strchr(a, '=');
		size_t len = eq ? (size_t)(eq - a) : strlen(a);
		if (!known_flag(a, len))
			return snprintf(err, errlen, "unknown option '%.*s%s' (see tessera-bench --help)",
					(int)(len < 40 ? len : 40), a, len > 40 ? "..." : ""), -1;
		char flag[32]; /* every known flag fits */
		snprintf(flag, sizeof flag, "%.*s", (int)len, a);
		const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
		if (!v)
			return fail(err, errlen, "%s needs a value", flag);
		if (apply_flag(o, flag, v, err, errlen))
			return -1;
	}
	/* summary has a GPU part, where the flag applies */
	if (o->flush_l2 && o->target != BENCH_CUDA && o->cmd != BENCH_CMD_SUMMARY &&
	    o->cmd != BENCH_CMD_HELP)
		return snprintf(err, errlen, "--flush-l2 applies to --target cuda only (it flushes "
				"the GPU's L2)"), -1;
	if ((o->cmd == BENCH_CMD_SOFTMAX || o->cmd == BENCH_CMD_REDUCE) &&
	    (o->target != BENCH_CPU || o->impls || o->json || o->plot))
		return snprintf(err, errlen, "%s takes only --threads and --repeat (it runs on "
				"the CPU and prints its own table)",
				o->cmd == BENCH_CMD_SOFTMAX ? "softmax" : "reduce"), -1;
	if (o->tuned && (o->target != BENCH_CPU || o->cmd == BENCH_CMD_DENSE ||
			 o->cmd == BENCH_CMD_SYMBOLIC || o->cmd == BENCH_CMD_SOFTMAX ||
			 o->cmd == BENCH_CMD_REDUCE))
		return snprintf(err, errlen, "--tuned applies to the CPU gemm, conv2d, depthwise and "
				"summary commands (the tuning log holds CPU schedules)"), -1;
	if (o->cmd == BENCH_CMD_DEPTHWISE && o->target != BENCH_CPU)
		return snprintf(err, errlen, "depthwise runs on the CPU only (--target cuda does not "
				"apply)"), -1;
	if ((o->cmd == BENCH_CMD_DENSE || o->cmd == BENCH_CMD_SYMBOLIC) &&
	    dense_refuses(o, err, errlen))
		return -1;
	if (dtype_refused(o, err, errlen))
		return -1;
	if (o->nproblems == 0 && add_defaults(o, err, errlen))
		return -1;
	for (int i = 0; i < o->nproblems; i++)
		o->problems[i].dtype = o->problems[i].op == BENCH_GEMM ? o->dtype : BENCH_F32;
	return 0;
}

int bench_gpu_summary_opts(const bench_opts *o, bench_opts *gpu)
{
	char err[256];
	*gpu = *o;
	gpu->target = BENCH_CUDA;
	gpu->nproblems = 0;
	return add_gpu_defaults(gpu, err, sizeof err);
}

bool bench_impl_selected(const bench_opts *o, bench_impl i)
{
	return o->impls == 0 || (o->impls >> i) & 1u;
}

const char *bench_op_name(bench_op op)
{
	return op == BENCH_GEMM ? "gemm" : op == BENCH_CONV2D ? "conv2d" : "depthwise";
}

const char *bench_dtype_name(bench_dtype t)
{
	return t == BENCH_F16 ? "f16" : t == BENCH_BF16 ? "bf16" : t == BENCH_TF32 ? "tf32" : "f32";
}

ts_dtype bench_dtype_ts(bench_dtype t)
{
	return t == BENCH_F16 ? ts_float16 : t == BENCH_BF16 ? ts_bfloat16 : ts_float32;
}

double bench_flops(const bench_problem *p)
{
	if (p->op == BENCH_GEMM)
		return 2.0 * (double)p->g.M * (double)p->g.N * (double)p->g.K;
	const bench_conv *c = &p->c;
	double oh = (double)bench_conv_out(c->H, c->R, c->stride, c->pad);
	double ow = (double)bench_conv_out(c->W, c->S, c->stride, c->pad);
	double per_out = (double)((p->op == BENCH_DEPTHWISE ? 1 : c->C) * c->R * c->S);
	return 2.0 * (double)c->N * (double)c->K * oh * ow * per_out;
}

const char *bench_shape_str(const bench_problem *p, char *buf, size_t n)
{
	const bench_conv *c = &p->c;
	if (p->op == BENCH_GEMM)
		snprintf(buf, n, "%lldx%lldx%lld", (long long)p->g.M, (long long)p->g.N,
			 (long long)p->g.K);
	else if (p->op == BENCH_DEPTHWISE)
		snprintf(buf, n, "%lldx%lldx%lldx%lld dw %lldx%lld s%lld p%lld", (long long)c->N,
			 (long long)c->C, (long long)c->H, (long long)c->W, (long long)c->R,
			 (long long)c->S, (long long)c->stride, (long long)c->pad);
	else
		snprintf(buf, n, "%lldx%lldx%lldx%lld k%lld %lldx%lld s%lld p%lld", (long long)c->N,
			 (long long)c->C, (long long)c->H, (long long)c->W, (long long)c->K,
			 (long long)c->R, (long long)c->S, (long long)c->stride, (long long)c->pad);
	return buf;
}
