/*
 * test_bench.c - tessera-bench's own pieces: the command line (and its
 * error messages), the naive kernels and im2col against the reference
 * evaluator, the tessera schedules it uses (lowered and interpreted), the
 * correctness metric, and a tiny run of the binary with JSON output.  The
 * GPU side without a GPU: its defaults, its schedules (interpreted), the
 * cuBLAS/cuDNN loaders, and the messages when no GPU is present.  No
 * assertion is about speed.
 */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "tune.h"
#include "fake_cuda.h"
#include "build.h"
#include "eval.h"
#include "ops.h"

static int parse(bench_opts *o, char *err, const char *line)
{
	static char buf[512];
	char *argv[32];
	int argc = 0;
	snprintf(buf, sizeof buf, "%s", line);
	argv[argc++] = "tessera-bench";
	for (char *save = NULL, *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save))
		argv[argc++] = t;
	err[0] = 0;
	return bench_parse_args(argc, argv, o, err, 256);
}

static void assert_parse_error(const char *line, const char *part)
{
	bench_opts o;
	char err[256];
	ck_assert_msg(parse(&o, err, line) != 0, "'%s' was accepted", line);
	ck_assert_msg(strstr(err, part), "'%s': error '%s' lacks '%s'", line, err, part);
}

START_TEST(test_cli_defaults)
{
	bench_opts o;
	char err[256];
	ck_assert_int_eq(parse(&o, err, "gemm"), 0);
	ck_assert_int_eq(o.cmd, BENCH_CMD_GEMM);
	ck_assert_int_ge(o.nproblems, 10);
	ck_assert_str_eq(o.problems[0].name, "sq256");
	ck_assert_int_ge(o.threads, 1);
	ck_assert_int_eq(parse(&o, err, "conv2d"), 0);
	ck_assert_int_ge(o.nproblems, 10);
	ck_assert_str_eq(o.problems[0].name, "conv1");
	ck_assert_int_eq(o.problems[0].c.stride, 2);
	ck_assert_int_eq(parse(&o, err, "summary"), 0);
	int convs = 0;
	for (int i = 0; i < o.nproblems; i++)
		convs += o.problems[i].op == BENCH_CONV2D;
	ck_assert_int_gt(convs, 0);
	ck_assert_int_gt(o.nproblems - convs, 0);
}
END_TEST

START_TEST(test_cli_flags)
{
	bench_opts o;
	char err[256];
	ck_assert_int_eq(parse(&o, err, "gemm --shape 33,17,29 --sizes 64,128 --threads 1 "
				       "--repeat 3 --impl tessera,openblas --json=x.json --plot p.png"), 0);
	ck_assert_int_eq(o.nproblems, 3);
	ck_assert_int_eq(o.problems[0].g.M, 33);
	ck_assert_int_eq(o.problems[0].g.N, 17);
	ck_assert_int_eq(o.problems[0].g.K, 29);
	ck_assert_int_eq(o.problems[2].g.K, 128);
	ck_assert_int_eq(o.threads, 1);
	ck_assert_int_eq(o.repeat, 3);
	ck_assert(bench_impl_selected(&o, BENCH_IMPL_TESSERA));
	ck_assert(bench_impl_selected(&o, BENCH_IMPL_OPENBLAS));
	ck_assert(!bench_impl_selected(&o, BENCH_IMPL_NAIVE));
	ck_assert_str_eq(o.json, "x.json");
	ck_assert_str_eq(o.plot, "p.png");
	ck_assert_int_eq(parse(&o, err, "conv2d --layer res4_3x3 --conv 2,3,9,10,5,3,2,2,1 "
				       "--target cuda"), 0);
	ck_assert_int_eq(o.nproblems, 2);
	ck_assert_int_eq(o.problems[0].c.C, 256);
	ck_assert_int_eq(o.problems[1].c.S, 2);
	ck_assert_int_eq(o.target, BENCH_CUDA);
	ck_assert_int_eq(parse(&o, err, "gemm --size 64 --size 3x5x7"), 0);
	ck_assert_int_eq(o.nproblems, 2);
	ck_assert_int_eq(o.problems[0].g.K, 64);
	ck_assert_int_eq(o.problems[1].g.M, 3);
	ck_assert_int_eq(o.problems[1].g.K, 7);
	ck_assert_int_eq(parse(&o, err, "conv2d --layer list"), 0);
	ck_assert(o.list_layers);
	ck_assert(!o.flush_l2);
	ck_assert_int_eq(parse(&o, err, "gemm --flush-l2 --target cuda"), 0);
	ck_assert(o.flush_l2);
	ck_assert_int_eq(parse(&o, err, "summary --flush-l2"), 0); /* for its GPU part */
	ck_assert(o.flush_l2);
	ck_assert_int_eq(parse(&o, err, "peak --help"), 0);
	ck_assert_int_eq(o.cmd, BENCH_CMD_HELP);
}
END_TEST

START_TEST(test_cli_errors)
{
	assert_parse_error("", "missing command");
	assert_parse_error("gemmm", "unknown command 'gemmm'");
	assert_parse_error("gemm --sizez 4", "unknown option '--sizez'");
	assert_parse_error("gemm --impl tessera,mkl", "unknown implementation 'mkl'");
	assert_parse_error("conv2d --layer res9", "unknown layer 'res9'");
	assert_parse_error("gemm --sizes 256,x", "--sizes: '256,x' is not a list");
	assert_parse_error("gemm --sizes 0", "must be >= 1");
	assert_parse_error("gemm --shape 4,5", "--shape: expected M,N,K");
	assert_parse_error("conv2d --conv 1,3,8,8,4,3,3,1", "--conv: expected N,C,H,W,K,R,S,stride,pad");
	assert_parse_error("conv2d --conv 1,3,2,2,4,5,5,1,0", "larger than the padded image");
	/* products of four extents below 2^31 each, and tensors other than
	 * the input and the weights: the padded input and the output */
	assert_parse_error("conv2d --conv 65536,65536,65536,65536,1,1,1,1,0",
			   "conv conv1x1_0: a tensor has more than 2^31 elements");
	assert_parse_error("conv2d --conv 1,1,40000,40000,40000,1,1,1,0",
			   "a tensor has more than 2^31 elements");
	assert_parse_error("conv2d --conv 1,1,1,1,1,1,1,1,2000000000", "a tensor has more than 2^31 elements");
	assert_parse_error("depthwise --conv 1,1,1,1,1,1,1,2147483647,2000000000",
			   "a tensor has more than 2^31 elements");
	assert_parse_error("gemm --threads 0", "--threads: must be an integer from 1 to 1024, got '0'");
	assert_parse_error("gemm --threads 100000", "--threads: must be an integer from 1 to 1024");
	assert_parse_error("gemm --threads -1", "--threads: must be an integer from 1 to 1024");
	assert_parse_error("gemm --repeat 2x", "--repeat: must be an integer from 1 to 1048576");
	assert_parse_error("gemm --sizes -5", "--sizes: '-5' is not a list of integers");
	assert_parse_error("gemm --sizes 99999999999", "is not a list of integers from 0 to 2^31-1");
	assert_parse_error("gemm --size 8x", "--size: '8x' is not N or MxNxK");
	assert_parse_error("gemm --size x8", "--size: 'x8' is not N or MxNxK");
	assert_parse_error("gemm --size 8x8", "--size: '8x8' is not N or MxNxK");
	assert_parse_error("gemm --size 0x8x8", "must be >= 1");
	assert_parse_error("gemm --size 65536x65536x1", "below 2^31 elements");
	assert_parse_error("conv2d --size 8", "--size applies to the gemm, dense and symbolic commands only");
	assert_parse_error("gemm --size", "--size needs a value");
	assert_parse_error("gemm --bogus", "unknown option '--bogus'");
	assert_parse_error("gemm --impl naive,tessera,naive", "--impl: 'naive' is named twice");
	assert_parse_error("gemm --impl tessera,,naive", "--impl: empty name in 'tessera,,naive'");
	assert_parse_error("gemm --target tpu", "unknown target 'tpu'");
	assert_parse_error("gemm --flush-l2", "--flush-l2 applies to --target cuda only");
	assert_parse_error("conv2d --target cpu --flush-l2", "--flush-l2 applies to --target cuda");
	assert_parse_error("gemm --target cuda --flush-l2=yes", "--flush-l2 takes no value (got 'yes')");
	assert_parse_error("gemm --layer conv1", "--layer applies to the conv2d and depthwise commands only");
	assert_parse_error("conv2d --sizes 64", "--sizes applies to the gemm, dense and symbolic commands only");
	assert_parse_error("gemm --json", "--json needs a value");
	assert_parse_error("gemm stray", "unexpected argument 'stray'");
	assert_parse_error("dense --target cuda", "dense: --target cuda does not apply");
	assert_parse_error("dense --impl tessera", "dense: --impl does not apply");
	assert_parse_error("dense --json out.json", "dense: --json does not apply");
	assert_parse_error("symbolic --target cuda", "symbolic: --target cuda does not apply");
	assert_parse_error("symbolic --layer conv1", "--layer applies to the conv2d and depthwise commands only");
	assert_parse_error("dense --layer conv1", "--layer applies to the conv2d and depthwise commands only");
	assert_parse_error("gemm --target cuda --dtype fp8", "--dtype: unknown type 'fp8' (f32, f16, bf16 or tf32)");
	assert_parse_error("gemm --target cuda --dtype F16", "--dtype: unknown type 'F16'");
	assert_parse_error("gemm --target cuda --dtype", "--dtype needs a value");
	assert_parse_error("gemm --dtype f16", "--dtype f16 applies to --target cuda only (tessera's CPU "
			   "GEMM, OpenBLAS and oneDNN run in fp32)");
	assert_parse_error("gemm --target cpu --dtype=bf16 --shape 16,16,16",
			   "--dtype bf16 applies to --target cuda only");
	assert_parse_error("conv2d --target cuda --dtype f16", "--dtype f16 applies to the gemm command only");
	assert_parse_error("summary --dtype bf16", "--dtype bf16 applies to the gemm command only");
	assert_parse_error("dense --dtype f16", "--dtype f16 applies to the gemm command only");
	assert_parse_error("softmax --dtype f16", "--dtype f16 applies to the gemm command only");
}
END_TEST

/* --dtype: float32 by default and accepted anywhere; f16, bf16 and tf32
 * reach every GEMM problem of gemm --target cuda, given or default. */
START_TEST(test_cli_dtype)
{
	bench_opts o;
	char err[256];
	ck_assert_int_eq(parse(&o, err, "gemm --shape 33,17,29"), 0);
	ck_assert_int_eq(o.dtype, BENCH_F32);
	ck_assert_int_eq(o.problems[0].dtype, BENCH_F32);
	ck_assert_int_eq(parse(&o, err, "gemm --target cuda --dtype f16"), 0);
	ck_assert_int_eq(o.dtype, BENCH_F16);
	ck_assert_int_eq(o.nproblems, 1);
	ck_assert_int_eq(o.problems[0].g.M, 4096);
	ck_assert_int_eq(o.problems[0].dtype, BENCH_F16);
	/* before or after the shapes, with or without '=' */
	ck_assert_int_eq(parse(&o, err, "gemm --dtype=bf16 --shape 33,17,29 --size 64 --target cuda"), 0);
	ck_assert_int_eq(o.nproblems, 2);
	ck_assert_int_eq(o.problems[0].dtype, BENCH_BF16);
	ck_assert_int_eq(o.problems[1].dtype, BENCH_BF16);
	ck_assert_int_eq(parse(&o, err, "gemm --target cuda --dtype tf32 --shape 16,32,48"), 0);
	ck_assert_int_eq(o.problems[0].dtype, BENCH_TF32);
	ck_assert_int_ne(parse(&o, err, "gemm --target cuda --dtype tf16"), 0);
	ck_assert_msg(strstr(err, "--dtype: unknown type 'tf16' (f32, f16, bf16 or tf32)"), "%s", err);
	ck_assert_int_eq(parse(&o, err, "gemm --dtype f32 --shape 8,8,8"), 0);
	ck_assert_int_eq(o.problems[0].dtype, BENCH_F32);
	ck_assert_int_eq(parse(&o, err, "conv2d --dtype f32"), 0);
	ck_assert_int_eq(o.problems[0].dtype, BENCH_F32);
	ck_assert_int_eq(parse(&o, err, "conv2d --dtype f16 --help"), 0);
	ck_assert_int_eq(o.cmd, BENCH_CMD_HELP);
	ck_assert_str_eq(bench_dtype_name(BENCH_F32), "f32");
	ck_assert_str_eq(bench_dtype_name(BENCH_F16), "f16");
	ck_assert_str_eq(bench_dtype_name(BENCH_BF16), "bf16");
	ck_assert_str_eq(bench_dtype_name(BENCH_TF32), "tf32");
	ck_assert(ts_dtype_eq(bench_dtype_ts(BENCH_TF32), ts_float32));
	ck_assert(ts_dtype_eq(bench_dtype_ts(BENCH_F16), ts_float16));
	ck_assert(ts_dtype_eq(bench_dtype_ts(BENCH_BF16), ts_bfloat16));
	ck_assert(ts_dtype_eq(bench_dtype_ts(BENCH_F32), ts_float32));
}
END_TEST

/* depthwise: the MobileNet-v2 layers by default, --layer and --conv
 * (K = C), CPU only. */
START_TEST(test_cli_depthwise)
{
	bench_opts o;
	char err[256], buf[64];
	ck_assert_int_eq(parse(&o, err, "depthwise"), 0);
	ck_assert_int_eq(o.cmd, BENCH_CMD_DEPTHWISE);
	ck_assert_int_eq(o.nproblems, 10);
	ck_assert_str_eq(o.problems[1].name, "dw2");
	ck_assert_int_eq(o.problems[1].op, BENCH_DEPTHWISE);
	ck_assert_int_eq(o.problems[1].c.C, 96);
	ck_assert_int_eq(o.problems[1].c.K, 96);
	ck_assert_int_eq(o.problems[1].c.stride, 2);
	ck_assert_str_eq(bench_shape_str(&o.problems[1], buf, sizeof buf), "1x96x112x112 dw 3x3 s2 p1");
	ck_assert_str_eq(bench_op_name(o.problems[1].op), "depthwise");
	/* 2 C OH OW R S: 2 * 96 * 56 * 56 * 9 */
	ck_assert(bench_flops(&o.problems[1]) == 2.0 * 96 * 56 * 56 * 9);
	ck_assert_int_eq(parse(&o, err, "depthwise --layer dw10 --conv 1,4,9,9,4,3,3,2,1 --tuned t.jsonl"), 0);
	ck_assert_int_eq(o.nproblems, 2);
	ck_assert_int_eq(o.problems[0].c.C, 960);
	ck_assert_int_eq(o.problems[1].op, BENCH_DEPTHWISE);
	assert_parse_error("depthwise --layer res2_3x3", "--layer: unknown depthwise layer 'res2_3x3'");
	assert_parse_error("conv2d --layer dw1", "--layer: unknown layer 'dw1'");
	assert_parse_error("depthwise --conv 1,4,9,9,8,3,3,1,1", "K must equal C (multiplier 1), got K 8, C 4");
	assert_parse_error("depthwise --conv 1,4,2,2,4,5,5,1,0", "larger than the padded image");
	assert_parse_error("depthwise --conv 1,3,5,5,3,1,3,1,0", "the kernel must be square (R = S), got 1x3");
	assert_parse_error("depthwise --target cuda", "depthwise runs on the CPU only");
	assert_parse_error("depthwise --sizes 64", "--sizes applies to the gemm, dense and symbolic commands only");
	assert_parse_error("depthwisee", "unknown command 'depthwisee' (gemm, conv2d, depthwise,");
}
END_TEST

/* Unwritable --json and --plot paths are refused before anything runs,
 * and checking a writable path leaves nothing behind. */
START_TEST(test_cli_output_paths)
{
	bench_opts o;
	char err[256];
	ck_assert_int_eq(parse(&o, err, "gemm --json /nonexistent/dir/x.json"), 0);
	ck_assert_int_ne(bench_check_outputs(&o, err, sizeof err), 0);
	ck_assert_msg(strstr(err, "--json: cannot write '/nonexistent/dir/x.json': No such file"),
		      "%s", err);
	ck_assert_int_eq(parse(&o, err, "gemm --plot /proc/x.png"), 0);
	ck_assert_int_ne(bench_check_outputs(&o, err, sizeof err), 0);
	ck_assert_msg(strstr(err, "--plot: cannot write '/proc/x.png'"), "%s", err);
	ck_assert_int_eq(parse(&o, err, "gemm --json /tmp"), 0);
	ck_assert_int_ne(bench_check_outputs(&o, err, sizeof err), 0);
	ck_assert_msg(strstr(err, "--json: cannot write '/tmp': it is a directory"), "%s", err);
	remove("check_outputs.json");
	ck_assert_int_eq(parse(&o, err, "gemm --json check_outputs.json"), 0);
	ck_assert_int_eq(bench_check_outputs(&o, err, sizeof err), 0);
	ck_assert_int_ne(access("check_outputs.json", F_OK), 0);
}
END_TEST

static void fill(ts_array *a, uint64_t seed)
{
	ts_array_fill_random(a, seed, -1, 1);
}

START_TEST(test_naive_gemm)
{
	ts_ctx *ctx = ts_ctx_new();
	int64_t M = 13, N = 19, K = 7;
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(M, K), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(K, N), ts_float32);
	ts_tensor *C = ts_op_matmul(ctx, A, B, false, false);
	tu_nonnull(ctx, C);
	ts_array *a = ts_array_for(ctx, A), *b = ts_array_for(ctx, B);
	ts_array *want = ts_array_for(ctx, C), *got = ts_array_for(ctx, C);
	fill(a, 1);
	fill(b, 2);
	tu_ok(ctx, ts_eval(ctx, 3, (ts_tensor *[]){A, B, C}, (void *[]){a->data, b->data, want->data}));
	bench_naive_gemm(M, N, K, a->data, b->data, got->data);
	tu_assert_close(got, want, 1e-5, 1e-5);
	ts_array_free(a), ts_array_free(b), ts_array_free(want), ts_array_free(got);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_naive_softmax)
{
	ts_ctx *ctx = ts_ctx_new();
	int64_t R = 5, N = 37;
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(R, N), ts_float32);
	ts_tensor *Y = ts_op_softmax(ctx, X);
	tu_nonnull(ctx, Y);
	ts_array *x = ts_array_for(ctx, X), *want = ts_array_for(ctx, Y), *got = ts_array_for(ctx, Y);
	fill(x, 5);
	tu_ok(ctx, ts_eval(ctx, 2, (ts_tensor *[]){X, Y}, (void *[]){x->data, want->data}));
	bench_naive_softmax(R, N, x->data, got->data);
	tu_assert_close(got, want, 1e-5, 1e-6);
	ts_array_free(x), ts_array_free(want), ts_array_free(got);
	ts_ctx_free(ctx);
}
END_TEST

/* `softmax` takes --threads and --repeat; it has its own table, so the
 * options of the GEMM/conv2d table are refused. */
START_TEST(test_cli_softmax)
{
	bench_opts o;
	char err[256];
	ck_assert_int_eq(parse(&o, err, "softmax --threads 1 --repeat 3"), 0);
	ck_assert_int_eq(o.cmd, BENCH_CMD_SOFTMAX);
	ck_assert_int_eq(o.threads, 1);
	ck_assert_int_eq(o.repeat, 3);
	ck_assert_int_eq(o.nproblems, 0);
	assert_parse_error("softmax --json x.json", "softmax takes only --threads and --repeat");
	assert_parse_error("softmax --target cuda", "softmax takes only --threads and --repeat");
	assert_parse_error("softmax --impl naive", "softmax takes only --threads and --repeat");
	assert_parse_error("softmax --size 8", "--size applies to the gemm, dense and symbolic commands only");
}
END_TEST

/* `reduce` takes --threads and --repeat, like softmax. */
START_TEST(test_cli_reduce)
{
	bench_opts o;
	char err[256];
	ck_assert_int_eq(parse(&o, err, "reduce --threads 2 --repeat 4"), 0);
	ck_assert_int_eq(o.cmd, BENCH_CMD_REDUCE);
	ck_assert_int_eq(o.threads, 2);
	ck_assert_int_eq(o.repeat, 4);
	ck_assert_int_eq(o.nproblems, 0);
	assert_parse_error("reduce --json x.json", "reduce takes only --threads and --repeat");
	assert_parse_error("reduce --target cuda", "reduce takes only --threads and --repeat");
	assert_parse_error("reduce --size 8", "--size applies to the gemm, dense and symbolic commands only");
}
END_TEST

/* reduce's schedule (both forms: parallel rows, and parallel chunks of
 * few rows) and its naive C against the evaluator, on extents 16 and 64
 * do not divide. */
static void check_reduce(int64_t rows, int64_t cols, int threads)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(rows, cols), ts_float32);
	ts_tensor *C = bench_reduce_graph(ctx, A);
	tu_nonnull(ctx, C);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	tu_ok(ctx, bench_schedule_reduce(s, C, threads));
	ts_func *f = ts_lower(s, "reduce", 2, (ts_tensor *[]){A, C});
	tu_nonnull(ctx, f);
	ck_assert_str_eq(ts_lower_warnings(f), "");
	tu_check_func(ctx, f, 1e-4);
	ts_array *a = ts_array_for(ctx, A), *want = ts_array_for(ctx, C), *got = ts_array_for(ctx, C);
	fill(a, 9);
	tu_ok(ctx, ts_eval(ctx, 2, (ts_tensor *[]){A, C}, (void *[]){a->data, want->data}));
	bench_naive_row_sum(rows, cols, a->data, got->data);
	tu_assert_close(got, want, 1e-4, 1e-4);
	ts_array_free(a), ts_array_free(want), ts_array_free(got);
	ts_ctx_free(ctx);
}

START_TEST(test_reduce_schedule)
{
	check_reduce(1, 5000, 2);
	check_reduce(3, 100, 1);
	check_reduce(9, 77, 2);
}
END_TEST

/* Naive direct conv and im2col + naive gemm against the evaluator. */
static void check_naive_conv(bench_conv c)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(c.N, c.C, c.H, c.W), ts_float32);
	ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(c.K, c.C, c.R, c.S), ts_float32);
	ts_tensor *Y = ts_op_conv2d_nchw(ctx, X, W, (int)c.stride, (int)c.stride, (int)c.pad,
					 (int)c.pad, 1, 1, 1);
	tu_nonnull(ctx, Y);
	ts_array *x = ts_array_for(ctx, X), *w = ts_array_for(ctx, W);
	ts_array *want = ts_array_for(ctx, Y), *got = ts_array_for(ctx, Y);
	fill(x, 3);
	fill(w, 4);
	tu_ok(ctx, ts_eval(ctx, 3, (ts_tensor *[]){X, W, Y}, (void *[]){x->data, w->data, want->data}));
	bench_naive_conv(&c, x->data, w->data, got->data);
	tu_assert_close(got, want, 1e-5, 1e-5);
	int64_t OH = Y->shape[2], OW = Y->shape[3], crs = c.C * c.R * c.S;
	float *cols = malloc((size_t)(crs * OH * OW) * sizeof(float));
	memset(got->data, 0, ts_array_nbytes(got));
	for (int64_t n = 0; n < c.N; n++) {
		bench_im2col(&c, (float *)x->data + n * c.C * c.H * c.W, cols);
		bench_naive_gemm(c.K, OH * OW, crs, w->data, cols,
				 (float *)got->data + n * c.K * OH * OW);
	}
	tu_assert_close(got, want, 1e-5, 1e-5);
	free(cols);
	ts_array_free(x), ts_array_free(w), ts_array_free(want), ts_array_free(got);
	ts_ctx_free(ctx);
}

static void check_naive_depthwise(bench_conv c)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(c.N, c.C, c.H, c.W), ts_float32);
	ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(c.C, 1, c.R, c.S), ts_float32);
	ts_tensor *Y = ts_op_depthwise_conv2d_nchw(ctx, X, W, (int)c.stride, (int)c.stride, (int)c.pad,
						   (int)c.pad, 1, 1);
	tu_nonnull(ctx, Y);
	ts_array *x = ts_array_for(ctx, X), *w = ts_array_for(ctx, W);
	ts_array *want = ts_array_for(ctx, Y), *got = ts_array_for(ctx, Y);
	fill(x, 5);
	fill(w, 6);
	tu_ok(ctx, ts_eval(ctx, 3, (ts_tensor *[]){X, W, Y}, (void *[]){x->data, w->data, want->data}));
	bench_naive_depthwise(&c, x->data, w->data, got->data);
	tu_assert_close(got, want, 1e-5, 1e-5);
	ts_array_free(x), ts_array_free(w), ts_array_free(want), ts_array_free(got);
	ts_ctx_free(ctx);
}

/* Odd shapes, stride 2, padding, a batch of two. */
START_TEST(test_naive_depthwise)
{
	check_naive_depthwise((bench_conv){1, 5, 9, 11, 5, 3, 3, 1, 1});
	check_naive_depthwise((bench_conv){2, 3, 10, 7, 3, 3, 3, 2, 1});
	check_naive_depthwise((bench_conv){1, 4, 7, 7, 4, 5, 5, 2, 2});
}
END_TEST

START_TEST(test_naive_conv)
{
	check_naive_conv((bench_conv){1, 3, 9, 11, 5, 3, 3, 1, 1});
	check_naive_conv((bench_conv){2, 4, 10, 7, 3, 3, 2, 2, 1});
	check_naive_conv((bench_conv){1, 2, 12, 12, 4, 7, 7, 2, 3});
	check_naive_conv((bench_conv){1, 6, 5, 5, 8, 1, 1, 1, 0});
}
END_TEST

/* The schedules tessera-bench compiles, run by the interpreter. */
START_TEST(test_tessera_schedules)
{
	bench_problem ps[] = {
		{.op = BENCH_GEMM, .name = "g", .g = {33, 17, 29}},
		{.op = BENCH_CONV2D, .name = "c", .c = {1, 6, 9, 10, 16, 3, 3, 1, 1}},
		{.op = BENCH_CONV2D, .name = "c2", .c = {1, 3, 11, 11, 8, 3, 3, 2, 1}},
		{.op = BENCH_DEPTHWISE, .name = "d", .c = {1, 5, 9, 11, 5, 3, 3, 2, 1}},
	};
	for (size_t i = 0; i < TS_COUNT_OF(ps); i++) {
		ts_ctx *ctx = ts_ctx_new();
		ts_func *f = bench_tessera_lower(ctx, &ps[i]);
		tu_nonnull(ctx, f);
		tu_check_func(ctx, f, 1e-4);
		ts_ctx_free(ctx);
	}
}
END_TEST

/* The GPU defaults: GEMM 4096^3, ResNet-50's 3x3 layers; summary's GPU
 * part adds squares 1024 and 2048. */
START_TEST(test_cli_gpu_defaults)
{
	bench_opts o, g;
	char err[256];
	ck_assert_int_eq(parse(&o, err, "gemm --target cuda"), 0);
	ck_assert_int_eq(o.nproblems, 1);
	ck_assert_int_eq(o.problems[0].g.M, 4096);
	ck_assert_int_eq(o.problems[0].g.K, 4096);
	ck_assert_int_eq(parse(&o, err, "conv2d --target cuda"), 0);
	ck_assert_int_eq(o.nproblems, 7);
	for (int i = 0; i < o.nproblems; i++)
		ck_assert_int_eq(o.problems[i].c.R, 3);
	ck_assert_int_eq(parse(&o, err, "summary --target cuda"), 0);
	ck_assert_int_eq(o.nproblems, 10);
	ck_assert_int_eq(parse(&o, err, "summary --repeat 2"), 0);
	ck_assert_int_eq(bench_gpu_summary_opts(&o, &g), 0);
	ck_assert_int_eq(g.target, BENCH_CUDA);
	ck_assert_int_eq(g.repeat, 2);
	ck_assert_int_eq(g.nproblems, 10);
	ck_assert_str_eq(g.problems[0].name, "sq1024");
	ck_assert_str_eq(g.problems[3].name, "res2_3x3");
	ck_assert_int_eq(o.target, BENCH_CPU);
	ck_assert_str_eq(o.problems[0].name, "sq512");
	/* dense: the BERT-base GEMMs, or the shapes given */
	ck_assert_int_eq(parse(&o, err, "dense"), 0);
	ck_assert_int_eq(o.cmd, BENCH_CMD_DENSE);
	ck_assert_int_eq(o.nproblems, 3);
	ck_assert_str_eq(o.problems[1].name, "bert.ffn1");
	ck_assert_int_eq(o.problems[2].g.K, 3072);
	ck_assert_int_eq(parse(&o, err, "dense --size 37x50x29"), 0);
	ck_assert_int_eq(o.nproblems, 1);
	ck_assert_int_eq(o.problems[0].g.N, 50);
	/* symbolic: squares the tiles divide and squares they do not */
	ck_assert_int_eq(parse(&o, err, "symbolic"), 0);
	ck_assert_int_eq(o.cmd, BENCH_CMD_SYMBOLIC);
	ck_assert_int_eq(o.nproblems, 5);
	ck_assert_int_eq(o.problems[3].g.M, 1023);
	ck_assert_int_eq(parse(&o, err, "symbolic --shape 7,9,11"), 0);
	ck_assert_int_eq(o.problems[0].g.K, 11);
}
END_TEST

/* The GPU schedules tessera-bench compiles, run by the interpreter (no GPU
 * needed), on shapes the tiles do not divide. */
START_TEST(test_tessera_cuda_schedules)
{
	bench_problem ps[] = {
		{.op = BENCH_GEMM, .name = "g", .g = {70, 90, 37}},
		{.op = BENCH_CONV2D, .name = "c", .c = {1, 6, 9, 10, 16, 3, 3, 1, 1}},
		{.op = BENCH_CONV2D, .name = "c2", .c = {2, 3, 11, 11, 8, 3, 3, 2, 1}},
	};
	for (size_t i = 0; i < TS_COUNT_OF(ps); i++) {
		ts_ctx *ctx = ts_ctx_new();
		ts_func *f = bench_tessera_cuda_lower(ctx, &ps[i]);
		tu_nonnull(ctx, f);
		tu_check_func(ctx, f, 1e-4);
		ts_ctx_free(ctx);
	}
	/* --dtype: the tensor-core GEMM, 16-bit A and B into a float32 C, or
	 * float32 ones rounded to TF32 */
	bench_problem tc[] = {
		{.op = BENCH_GEMM, .name = "h", .g = {64, 48, 32}, .dtype = BENCH_F16},
		{.op = BENCH_GEMM, .name = "b", .g = {32, 96, 64}, .dtype = BENCH_BF16},
		{.op = BENCH_GEMM, .name = "t", .g = {48, 32, 64}, .dtype = BENCH_TF32},
	};
	for (size_t i = 0; i < TS_COUNT_OF(tc); i++) {
		ts_ctx *ctx = ts_ctx_new();
		ts_func *f = bench_tessera_cuda_lower(ctx, &tc[i]);
		tu_nonnull(ctx, f);
		ck_assert(ts_dtype_eq(f->params[0]->dtype, bench_dtype_ts(tc[i].dtype)));
		ck_assert(ts_dtype_eq(f->params[2]->dtype, ts_float32));
		tu_check_func_interp(ctx, f, 1e-4);
		ts_ctx_free(ctx);
	}
}
END_TEST

/* The default GPU problems' kernels compile with NVRTC for an explicit
 * architecture (no GPU needed); skipped where libnvrtc is missing. */
START_TEST(test_tessera_cuda_compiles)
{
	bench_problem ps[] = {
		{.op = BENCH_GEMM, .name = "sq4096", .g = {4096, 4096, 4096}},
		{.op = BENCH_CONV2D, .name = "res3_3x3s2", .c = {1, 128, 56, 56, 128, 3, 3, 2, 1}},
		{.op = BENCH_GEMM, .name = "sq4096", .g = {4096, 4096, 4096}, .dtype = BENCH_F16},
		{.op = BENCH_GEMM, .name = "sq4096", .g = {4096, 4096, 4096}, .dtype = BENCH_BF16},
		{.op = BENCH_GEMM, .name = "sq4096", .g = {4096, 4096, 4096}, .dtype = BENCH_TF32},
	};
	for (size_t i = 0; i < TS_COUNT_OF(ps); i++) {
		ts_ctx *ctx = ts_ctx_new();
		ts_func *f = bench_tessera_cuda_lower(ctx, &ps[i]);
		tu_nonnull(ctx, f);
		ts_module *m = ts_build(ctx, f, "cuda -arch=sm_90");
		if (!m && strstr(ts_last_error(ctx), "libnvrtc not found")) {
			ts_ctx_free(ctx);
			return;
		}
		tu_nonnull(ctx, m);
		const char *src = ts_module_source(m, "cuda");
		ck_assert_ptr_nonnull(strstr(src, "__global__"));
		/* the 16-bit and TF32 GEMMs on tensor cores, the fp32 ones not */
		ck_assert_int_eq(strstr(src, "mma.sync") != NULL, ps[i].dtype != BENCH_F32);
		ck_assert_int_eq(strstr(src, ".tf32") != NULL, ps[i].dtype == BENCH_TF32);
		ck_assert_double_gt(ts_module_times(m).nvrtc_ms, 0);
		ts_module_free(m);
		ts_ctx_free(ctx);
	}
}
END_TEST

/* The library names a path when it is missing, and every symbol resolves
 * where the library is installed. */
static void check_gpu_lib(const char *lib, const char *env, const char *installed)
{
	char why[512];
	setenv(env, "/nonexistent/libgone.so", 1);
	ck_assert(!bench_gpu_lib_check(lib, why, sizeof why));
	ck_assert_msg(strstr(why, "/nonexistent/libgone.so not found"), "%s", why);
	unsetenv(env);
	if (access(installed, R_OK) == 0)
		ck_assert_msg(bench_gpu_lib_check(lib, why, sizeof why), "%s: %s", lib, why);
	else if (!bench_gpu_lib_check(lib, why, sizeof why))
		ck_assert_msg(strstr(why, "not found") || strstr(why, "lacks"), "%s", why);
}

START_TEST(test_gpu_libs)
{
	check_gpu_lib("cublas", "TESSERA_CUBLAS_LIB", "/usr/local/cuda/lib64/libcublas.so");
	check_gpu_lib("cudnn", "TESSERA_CUDNN_LIB", "/usr/local/cuda/lib64/libcudnn.so.9");
	char why[256];
	ck_assert(!bench_gpu_lib_check("cufft", why, sizeof why));
	ck_assert_str_eq(why, "unknown GPU library 'cufft' (cublas or cudnn)");
}
END_TEST

/* The tensor-core row is skipped, saying why, on a shape the MMA's tile
 * does not divide, before any device is opened; cuBLAS is not. */
START_TEST(test_tensorcore_skips)
{
	bench_opts o;
	char err[256];
	ck_assert_int_eq(parse(&o, err, "gemm --target cuda --dtype f16 --shape 33,17,29 --shape 48,16,40"), 0);
	for (int i = 0; i < 2; i++) {
		bench_kernel k;
		char why[256];
		memset(&k, 0, sizeof k);
		ck_assert_int_eq(bench_make_tessera_cuda(&o.problems[i], &o, &k, why, sizeof why), BENCH_SKIP);
		ck_assert_str_eq(why, i == 0 ? "tessera: the f16 tensor-core GEMM needs M, N and K multiples "
					       "of 16, got 33x17x29"
					     : "tessera: the f16 tensor-core GEMM needs M, N and K multiples "
					       "of 16, got 48x16x40");
		ck_assert_ptr_null(k.state);
	}
}
END_TEST

/* The 16-bit GEMMs' reference: the double product of the rounded inputs,
 * rounded once to float. */
static void check_gemm_ref(ts_dtype t, int64_t M, int64_t N, int64_t K)
{
	bench_gemm g = {M, N, K};
	ts_array *A = ts_array_new(NULL, t, 2, (int64_t[]){M, K});
	ts_array *B = ts_array_new(NULL, t, 2, (int64_t[]){K, N});
	float *C = malloc((size_t)(M * N) * sizeof *C);
	ck_assert(A && B && C);
	ts_array_fill_random(A, 11, -1, 1);
	ts_array_fill_random(B, 12, -1, 1);
	ck_assert_int_eq(bench_gemm_ref_f64(&g, A, B, C, 2), 0);
	double worst = 0;
	for (int64_t i = 0; i < M; i++) {
		for (int64_t j = 0; j < N; j++) {
			double want = 0;
			for (int64_t k = 0; k < K; k++)
				want += ts_elem_get_f64(A->data, t, i * K + k) *
					ts_elem_get_f64(B->data, t, k * N + j);
			worst = fmax(worst, fabs(C[i * N + j] - want) / fmax(fabs(want), 1e-30));
		}
	}
	/* one rounding to float; the double sums agree far below it */
	ck_assert_double_le(worst, 1.0 / (1 << 23));
	/* the inputs hold values of their type: significands of 11 (float16),
	 * 8 (bfloat16) or 24 bits */
	int bits = ts_dtype_eq(t, ts_float16) ? 11 : ts_dtype_eq(t, ts_bfloat16) ? 8 : 24, e;
	for (int64_t i = 0; i < M * K; i++) {
		double m = ldexp(frexp(ts_elem_get_f64(A->data, t, i), &e), bits);
		ck_assert_double_eq(m, floor(m));
	}
	free(C);
	ts_array_free(A);
	ts_array_free(B);
}

START_TEST(test_gemm_ref_f64)
{
	check_gemm_ref(ts_float16, 7, 5, 33);
	check_gemm_ref(ts_bfloat16, 16, 9, 64);
	check_gemm_ref(ts_float32, 3, 4, 5);
}
END_TEST

START_TEST(test_rel_err)
{
	float want[4] = {1, -4, 0.5f, 2}, got[4] = {1, -4, 0.5f, 2};
	ck_assert(bench_rel_err(got, want, 4) == 0);
	got[2] = 0.54f; /* 0.04 off, relative to max |want| = 4 */
	ck_assert(fabs(bench_rel_err(got, want, 4) - 0.01) < 1e-6);
	got[0] = NAN;
	ck_assert(!(bench_rel_err(got, want, 4) <= BENCH_RTOL));
}
END_TEST

/* ---- flagged timings in the table ---------------------------------------------- */

static bench_result table_row(const bench_problem *p, bench_impl impl, double gflops,
			      const double *ms, int n)
{
	double s[16];
	for (int i = 0; i < n; i++)
		s[i] = ms[i] * 1e-3;
	ts_timing tm;
	ts_timing_from_samples(s, n, &tm);
	bench_result r = {.p = p, .impl = impl, .threads = 2, .status = BENCH_ROW_OK,
			  .median_ms = tm.median * 1e3, .min_ms = tm.min * 1e3,
			  .stddev_ms = tm.stddev * 1e3, .gflops = gflops, .compile_ms = -1,
			  .pct_peak = 50, .samples = n, .flags = tm.flags};
	if (tm.flags)
		ts_timing_verdict(&tm, r.verdict, sizeof r.verdict);
	return r;
}

static char *print_table_str(const bench_result *r, int n)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	ck_assert_ptr_nonnull(f);
	bench_print_table(f, r, n);
	fclose(f);
	return text;
}

/* The line of the table that starts with `problem` and has `impl`. */
static const char *table_line(const char *text, const char *problem, const char *impl,
			      char *buf, size_t n)
{
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		size_t len = strcspn(l, "\n");
		snprintf(buf, n, "%.*s", (int)len, l);
		if (strncmp(buf, problem, strlen(problem)) == 0 && strstr(buf, impl))
			return buf;
	}
	ck_abort_msg("no line for %s %s in:\n%s", problem, impl, text);
	return NULL;
}

/* oneDNN's timings on res2_3x3 are bimodal (a busy machine): its median,
 * every ratio it is part of, a warning line and the headline say so; the
 * clean problem's ratios do not. */
START_TEST(test_table_flagged_row)
{
	bench_problem p2 = {.op = BENCH_CONV2D, .name = "res2_3x3",
			    .c = {1, 64, 56, 56, 64, 3, 3, 1, 1}};
	bench_problem p3 = {.op = BENCH_CONV2D, .name = "res3_3x3",
			    .c = {1, 128, 28, 28, 128, 3, 3, 1, 1}};
	double steady[8] = {2.213, 2.217, 2.209, 2.221, 2.215, 2.211, 2.219, 2.214};
	double bimodal[15] = {2.081, 7.960, 2.088, 7.971, 2.095, 7.982, 2.102, 7.993,
			      2.109, 8.004, 2.116, 8.015, 8.026, 8.037, 8.048};
	bench_result r[4] = {
		table_row(&p2, BENCH_IMPL_TESSERA, 100, steady, 8),
		table_row(&p2, BENCH_IMPL_ONEDNN, 30, bimodal, 15),
		table_row(&p3, BENCH_IMPL_TESSERA, 120, steady, 8),
		table_row(&p3, BENCH_IMPL_ONEDNN, 100, steady, 8),
	};
	ck_assert_uint_eq(r[1].flags, TS_TIMING_BIMODAL);
	char *text = print_table_str(r, 4), line[512];
	ck_assert(strstr(table_line(text, "res2_3x3", "tessera", line, sizeof line), "3.33x!"));
	ck_assert(strstr(table_line(text, "res2_3x3", "onednn", line, sizeof line), "7.971!"));
	ck_assert(strstr(table_line(text, "res2_3x3", "onednn", line, sizeof line), "1.00x!"));
	table_line(text, "res3_3x3", "tessera", line, sizeof line);
	ck_assert_msg(strstr(line, "1.20x ") && !strchr(line, '!'), "%s", line);
	const char *warn = "\nwarning: onednn conv2d res2_3x3: bimodal timings (6 samples near "
			   "2.1 ms, 9 near 8.0 ms): ratio not reliable\n";
	ck_assert_msg(strstr(text, warn), "no '%s' in:\n%s", warn, text);
	ck_assert_msg(!strstr(text, "warning: tessera"), "%s", text);
	ck_assert_msg(strstr(text, "\ngeomean tessera / onednn: 1.20x over 1 problem "
				   "(1 flagged problem left out)\n"), "%s", text);
	free(text);
	/* every problem flagged: no number in the headline */
	r[2].flags = TS_TIMING_OUTLIERS;
	snprintf(r[2].verdict, sizeof r[2].verdict, "outliers (3 of 20 samples)");
	text = print_table_str(r, 4);
	ck_assert_msg(strstr(text, "\nwarning: tessera conv2d res3_3x3: outliers (3 of 20 "
				   "samples): ratio not reliable\n"), "%s", text);
	ck_assert_msg(strstr(text, "\ngeomean tessera / onednn: not reliable (2 flagged "
				   "problems left out)\n"), "%s", text);
	free(text);
	/* nothing flagged: no warning, the headline says so */
	r[1] = table_row(&p2, BENCH_IMPL_ONEDNN, 30, steady, 8);
	r[2].flags = 0;
	text = print_table_str(r, 4);
	ck_assert_msg(!strstr(text, "warning") && !strchr(text, '!'), "%s", text);
	ck_assert_msg(strstr(text, "geomean tessera / onednn: 2.00x over 2 problems (none "
				   "flagged)\n"), "%s", text);
	free(text);
}
END_TEST

/* The pieces the dense and softmax tables use: a marked number keeps the
 * column's width, a warning names what, where and why. */
START_TEST(test_marked_and_warning)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	bench_print_marked(f, 8, "%*.2fx", 3.5, true);
	bench_print_marked(f, 8, "%*.2fx", 1.25, false);
	bench_print_marked(f, 8, "%*.2fx", NAN, true);
	bench_print_marked(f, 9, "%*.3f", 8.0, true);
	double s[6] = {8e-3, 8e-3, 8e-3, 8e-3, 7.7e-3, 8.3e-3};
	ts_timing tm;
	ts_timing_from_samples(s, 6, &tm);
	fputc('\n', f);
	bench_warn_timing(f, "openblas", "dense", "bert.qkv", &tm);
	tm.flags = 0;
	bench_warn_timing(f, "fused", "dense", "bert.qkv", &tm);
	fclose(f);
	ck_assert_str_eq(text, "     3.50x!     1.25x          -      8.000!\n"
			       "warning: openblas dense bert.qkv: quantized timings (4 of 6 samples "
			       "on whole milliseconds, median 8.000 ms): sleep or scheduler-tick "
			       "artefact: ratio not reliable\n");
	free(text);
}
END_TEST

/* The runner's timing options: exact with --repeat, adaptive without. */
START_TEST(test_time_opts)
{
	ts_time_opts o = bench_time_opts(3, 1e-3, 4);
	ck_assert_int_eq(o.min_repeats, 3);
	ck_assert_int_eq(o.max_repeats, 3);
	ck_assert(o.target_rel == 0);
	ck_assert_int_eq(o.max_warmup, 4);
	o = bench_time_opts(0, 20e-6, 1);
	ck_assert_int_eq(o.min_repeats, 5000);
	ck_assert_int_eq(o.max_repeats, 20000);
	ck_assert_int_eq(o.max_warmup, 2);
	ck_assert(o.target_rel > 0 && o.budget_s >= 1);
	o = bench_time_opts(0, 0.5, 0);
	ck_assert_int_eq(o.min_repeats, 5);
	ck_assert_int_eq(o.max_repeats, 5);
	ck_assert_int_eq(o.max_warmup, 0);
	ck_assert(o.budget_s >= 5 * 0.5);
}
END_TEST

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	static char buf[1 << 16];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

/* A minimal well-formedness check: balanced brackets and braces outside
 * strings, one record per '{', every record with the documented keys. */
static void assert_json_records(const char *s, int want_records)
{
	int depth = 0, records = 0;
	bool in_str = false;
	for (const char *p = s; *p; p++) {
		if (in_str) {
			if (*p == '\\')
				p++;
			else if (*p == '"')
				in_str = false;
			continue;
		}
		in_str = *p == '"';
		depth += (*p == '[' || *p == '{') - (*p == ']' || *p == '}');
		records += *p == '{';
		ck_assert_int_ge(depth, 0);
	}
	ck_assert_int_eq(depth, 0);
	ck_assert(!in_str);
	ck_assert_int_eq(records, want_records);
	const char *keys[] = {"\"op\": \"gemm\"", "\"shape\": \"33x17x29\"", "\"impl\": ",
			      "\"threads\": ", "\"target\": \"cpu\"", "\"dtype\": \"f32\"", "\"median_ms\": ",
			      "\"gflops\": ", "\"compile_ms\": ", "\"pct_peak\": ",
			      "\"min_ms\": ", "\"stddev_ms\": ", "\"p10_ms\": ", "\"p90_ms\": ",
			      "\"warmups\": ", "\"flags\": [", "\"verdict\": ", "\"reliable\": "};
	for (size_t i = 0; i < TS_COUNT_OF(keys); i++)
		ck_assert_msg(strstr(s, keys[i]), "JSON lacks %s:\n%s", keys[i], s);
}

static int run_bench(const char *args)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "'%s' %s >bench_stdout.txt 2>bench_stderr.txt", TESSERA_BENCH_EXE,
		 args);
	int rc = system(cmd);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* tessera-bench model on the small models (made into the build tree by
 * the Python environment, as test_models does): checked against ONNX
 * Runtime's output, what the passes did printed, the command line
 * refused where it is wrong.  ONNX Runtime is not timed here (--no-ort). */
START_TEST(test_binary_model)
{
	int rc = run_bench("model bert-layer --small --models models --no-ort --threads 1 --budget 0.2");
	ck_assert_msg(rc == 0, "tessera-bench exited %d: %s", rc, slurp("bench_stderr.txt"));
	const char *out = slurp("bench_stdout.txt");
	ck_assert_msg(strstr(out, "(limit 1e-3): ok"), "%s", out);
	ck_assert_msg(strstr(out, "graph: 33 nodes -> 15 kernels"), "%s", out);
	ck_assert_msg(strstr(out, "compile: "), "%s", out);
	rc = run_bench("model resnet50 --small --models models --no-ort --threads 1 --budget 0.2 --trace --profile");
	ck_assert_msg(rc == 0, "tessera-bench exited %d: %s", rc, slurp("bench_stderr.txt"));
	out = slurp("bench_stdout.txt");
	ck_assert_msg(strstr(out, "fold: BatchNormalization 'bn1' folded into the weights and bias of Conv 'conv1'"),
		      "%s", out);
	ck_assert_msg(strstr(out, "per kernel, 1 thread:"), "%s", out);
	ck_assert_msg(strstr(out, "0 layout conversions"), "%s", out);
	/* tessera-tune model, then the bench with its log, per thread count */
	char cmd[1024];
	remove("bench_model.jsonl");
	snprintf(cmd, sizeof cmd, "'%s' model models/resnet50-small.onnx --budget 0.05 --threads 1 "
		 "--log bench_model.jsonl >bench_stdout.txt 2>bench_stderr.txt </dev/null", TESSERA_TUNE_EXE);
	rc = system(cmd);
	ck_assert_msg(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "%s", slurp("bench_stderr.txt"));
	out = slurp("bench_stdout.txt");
	ck_assert_msg(strstr(out, "16 distinct convolutions") && strstr(out, "[16/16] conv2d ") &&
			      strstr(out, "16 convolutions, each once: default "),
		      "%s", out);
	rc = run_bench("model resnet50 --small --models models --no-ort --threads 1,2 --budget 0.2 "
		       "--tuned bench_model.jsonl");
	ck_assert_msg(rc == 0, "tessera-bench exited %d: %s", rc, slurp("bench_stderr.txt"));
	out = slurp("bench_stdout.txt");
	ck_assert_msg(strstr(out, "tuned: 17 kernels scheduled by records of bench_model.jsonl (of 16 distinct "
				  "tunable convolutions; 1 thread)") &&
			      strstr(out, "recompiling for 2 threads") && strstr(out, "; 2 threads)") &&
			      !strstr(out, "WRONG"),
		      "%s", out);
	remove("bench_model.jsonl");
	ck_assert_int_eq(run_bench("model"), BENCH_EXIT_USAGE);
	ck_assert(strstr(slurp("bench_stderr.txt"), "name a model (resnet50, bert-layer or FILE.onnx)"));
	ck_assert_int_eq(run_bench("model x.onnx"), BENCH_EXIT_USAGE);
	ck_assert(strstr(slurp("bench_stderr.txt"), "x.onnx needs --input IN.bin and --expect OUT.bin"));
	ck_assert_int_eq(run_bench("model resnet50 --budget 0"), BENCH_EXIT_USAGE);
	ck_assert(strstr(slurp("bench_stderr.txt"), "--budget takes seconds in (0, 600], got '0'"));
	ck_assert_int_eq(run_bench("model missing.onnx --input a.bin --expect b.bin"), BENCH_EXIT_FAILED);
	ck_assert(strstr(slurp("bench_stderr.txt"), "cannot open 'missing.onnx'"));
}
END_TEST

START_TEST(test_binary_gemm_json)
{
	remove("bench_test.json");
	int rc = run_bench("gemm --shape 33,17,29 --repeat 2 --threads 2 "
			   "--impl tessera,naive,openblas,onednn --json bench_test.json");
	ck_assert_msg(rc == 0, "tessera-bench exited %d: %s", rc, slurp("bench_stderr.txt"));
	const char *s = slurp("bench_test.json");
	ck_assert_ptr_nonnull(s);
	assert_json_records(s, 4);
	ck_assert_msg(!strstr(s, "FAILED"), "a row failed:\n%s", s);
	ck_assert(strstr(s, "\"impl\": \"tessera\""));
	/* two samples are too few to judge: every row says so */
	ck_assert(strstr(s, "\"flags\": [\"few\"], \"verdict\": \"too few samples (2 < 5)\", "
			    "\"reliable\": false"));
	ck_assert(strstr(slurp("bench_stdout.txt"), "warning: tessera gemm 33x17x29: too few "
				    "samples (2 < 5): ratio not reliable\n"));
	remove("bench_test.json");
}
END_TEST

/* summary without a GPU: the CPU part, then one line saying why the GPU
 * part was skipped (cuBLAS alone keeps the CPU part short: it only skips,
 * the reference still runs). */
START_TEST(test_binary_summary_gpu_part)
{
	char why[256], line[512];
	if (bench_gpu_available(why, sizeof why))
		return; /* with a GPU the GPU part runs; nothing to check here */
	int rc = run_bench("summary --impl cublas --repeat 1");
	ck_assert_msg(rc == 0, "tessera-bench exited %d: %s", rc, slurp("bench_stderr.txt"));
	snprintf(line, sizeof line, "\nGPU part skipped: %s\n", why);
	const char *out = slurp("bench_stdout.txt");
	ck_assert_msg(strstr(out, line), "no '%s' in:\n%s", line, out);
	ck_assert(strstr(out, "res5_1x1b"));
	remove("bench_stderr.txt");
	remove("bench_stdout.txt");
}
END_TEST

/* --tuned: records of a tuning log (here with non-default parameters)
 * build the kernels, which the runner checks against the baseline; a
 * problem without a record keeps the default; a foreign record fails. */
static void append_tuned(ts_ctx *ctx, const char *op, int n, const int64_t *shape,
			 const char *const *names, const int64_t *values, int nv)
{
	ts_tune_task t;
	ck_assert_int_eq(ts_tune_task_init(ctx, &t, op, n, shape), TS_OK);
	ts_tune_result r = {.best = ts_tune_default(&t), .def = ts_tune_default(&t), .best_ms = 1,
			    .default_ms = 2, .trials = 1};
	for (int i = 0; i < t.space.nparams; i++)
		for (int k = 0; k < nv; k++)
			if (!strcmp(t.space.name[i], names[k]))
				r.best.v[i] = values[k];
	ck_assert_int_eq(ts_tune_log_append(ctx, "bench_tuned.jsonl", &t, &r), TS_OK);
}

/* 1x1 convolutions of stride 1 on narrow rows (viewed as one row with
 * AVX2, ts_conv2d_cpu_row_width), on rows of 13 and 28 (3 and 14 of them
 * viewed as one, ts_conv2d_cpu_row_width_for) and a wider one, checked
 * against naive C: a row is "ok" only when the results match. */
START_TEST(test_binary_conv_pointwise)
{
	int rc = run_bench("conv2d --conv 1,64,7,7,64,1,1,1,0 --conv 2,32,5,9,96,1,1,1,0 "
			   "--conv 1,32,3,14,32,1,1,1,0 --conv 2,32,6,13,64,1,1,1,0 "
			   "--conv 1,64,28,28,128,1,1,1,0 --repeat 2 --threads 2 --impl tessera,naive");
	ck_assert_msg(rc == 0, "tessera-bench exited %d: %s", rc, slurp("bench_stderr.txt"));
	const char *out = slurp("bench_stdout.txt");
	int ok = 0;
	for (const char *q = out; (q = strstr(q, "  ok\n")) != NULL; q++)
		ok++;
	ck_assert_msg(ok == 10 && !strstr(out, "FAILED"), "%s", out);
}
END_TEST

START_TEST(test_binary_tuned)
{
	ts_ctx *ctx = ts_ctx_new();
	remove("bench_tuned.jsonl");
	append_tuned(ctx, "matmul", TS_SHAPE(33, 17, 29), (const char *[]){"mr", "nr", "kunroll", "pack"},
		     (int64_t[]){3, 8, 2, 0}, 4);
	append_tuned(ctx, "conv2d", TS_SHAPE(1, 8, 9, 9, 16, 3, 3, 1, 1),
		     (const char *[]){"ow_block", "ic_block", "oc_block"}, (int64_t[]){4, 2, 8}, 3);
	/* every parameter of the record counts: the reduction in chunks too */
	append_tuned(ctx, "matmul", TS_SHAPE(20, 40, 300), (const char *[]){"mr", "kc"}, (int64_t[]){3, 128}, 2);
	int rc = run_bench("gemm --shape 33,17,29 --shape 8,8,8 --shape 20,40,300 --repeat 2 --threads 2 "
			   "--impl tessera,naive --tuned bench_tuned.jsonl");
	ck_assert_msg(rc == 0, "tessera-bench exited %d: %s", rc, slurp("bench_stderr.txt"));
	const char *out = slurp("bench_stdout.txt");
	ck_assert_msg(strstr(out, "tessera 33x17x29: tuned schedule (bench_tuned.jsonl:1): mr 3, nr 8, kunroll 2"),
		      "%s", out);
	ck_assert_msg(strstr(out, "tessera 20x40x300: tuned schedule (bench_tuned.jsonl:3): mr 3, kc 128\n"),
		      "%s", out);
	ck_assert_msg(strstr(out, "tessera 8x8x8: default schedule (no record"), "%s", out);
	rc = run_bench("conv2d --conv 1,8,9,9,16,3,3,1,1 --repeat 2 --threads 2 --impl tessera,naive "
		       "--tuned bench_tuned.jsonl");
	ck_assert_msg(rc == 0, "tessera-bench exited %d: %s", rc, slurp("bench_stderr.txt"));
	ck_assert(strstr(slurp("bench_stdout.txt"), "tuned schedule (bench_tuned.jsonl:2)"));
	FILE *f = fopen("bench_tuned.jsonl", "a");
	fprintf(f, "{\"tessera\": \"%s\", \"op\": \"matmul\", \"shape\": [8, 8, 8], \"dtype\": \"float32\", "
		"\"target\": \"llvm\", \"cpu\": \"not-this-cpu\", \"features\": \"x\", \"threads\": 1, "
		"\"params\": {}, \"median_ms\": 1, \"default_ms\": 1, \"trials\": 1}\n", TS_TUNE_VERSION);
	fclose(f);
	rc = run_bench("gemm --shape 8,8,8 --repeat 2 --impl tessera --tuned bench_tuned.jsonl");
	ck_assert_int_eq(rc, BENCH_EXIT_FAILED);
	ck_assert(strstr(slurp("bench_stdout.txt"), "field cpu is 'not-this-cpu'"));
	ck_assert_int_eq(run_bench("dense --tuned bench_tuned.jsonl"), BENCH_EXIT_USAGE);
	ck_assert(strstr(slurp("bench_stderr.txt"), "--tuned applies to the CPU gemm, conv2d, depthwise and summary"));
	f = fopen("bench_tuned.jsonl", "a");
	fputs("{\"tessera\"\n", f);
	fclose(f);
	ck_assert_int_eq(run_bench("gemm --tuned bench_tuned.jsonl"), BENCH_EXIT_USAGE);
	ck_assert(strstr(slurp("bench_stderr.txt"), "--tuned: bench_tuned.jsonl:5: "));
	remove("bench_tuned.jsonl");
	ts_ctx_free(ctx);
}
END_TEST

/* depthwise end to end on a tiny shape: tessera, naive and oneDNN checked
 * and timed, JSON written; then a tuned record (non-default parameters)
 * builds tessera's kernel, still checked against oneDNN. */
/* A chart gnuplot cannot write (the device is full) is an error, not a
 * success with no chart. */
START_TEST(test_binary_plot_unwritable)
{
	if (system("command -v gnuplot >/dev/null 2>&1") != 0 || access("/dev/full", W_OK) != 0)
		return;
	remove("bench_full.png");
	ck_assert_int_eq(symlink("/dev/full", "bench_full.png"), 0);
	int rc = run_bench("gemm --shape 16,16,16 --repeat 2 --threads 1 --impl naive --plot bench_full.png");
	remove("bench_full.png");
	remove("bench_full.dat");
	ck_assert_int_ne(rc, 0);
	ck_assert(strstr(slurp("bench_stderr.txt"), "--plot: the chart bench_full.png was not written"));
}
END_TEST

START_TEST(test_binary_depthwise)
{
	remove("bench_dw.json");
	int rc = run_bench("depthwise --conv 1,5,9,11,5,3,3,2,1 --repeat 2 --threads 2 "
			   "--impl tessera,naive,onednn --json bench_dw.json");
	ck_assert_msg(rc == 0, "tessera-bench exited %d: %s", rc, slurp("bench_stderr.txt"));
	const char *s = slurp("bench_dw.json");
	ck_assert_ptr_nonnull(s);
	ck_assert(strstr(s, "\"op\": \"depthwise\""));
	ck_assert(strstr(s, "\"shape\": \"1x5x9x11 dw 3x3 s2 p1\""));
	ck_assert(strstr(s, "\"impl\": \"onednn\""));
	ck_assert_msg(!strstr(s, "FAILED"), "a row failed:\n%s", s);
	remove("bench_dw.json");
	ts_ctx *ctx = ts_ctx_new();
	remove("bench_tuned.jsonl");
	append_tuned(ctx, "depthwise", TS_SHAPE(1, 5, 9, 11, 3, 2, 1),
		     (const char *[]){"sketch", "tile1", "tile3", "cache"}, (int64_t[]){1, 4, 2, 1}, 4);
	rc = run_bench("depthwise --conv 1,5,9,11,5,3,3,2,1 --conv 1,3,8,8,3,3,3,1,1 --repeat 2 --threads 2 "
		       "--impl tessera,onednn --tuned bench_tuned.jsonl");
	ck_assert_msg(rc == 0, "tessera-bench exited %d: %s", rc, slurp("bench_stderr.txt"));
	const char *out = slurp("bench_stdout.txt");
	ck_assert_msg(strstr(out, "tessera conv3x3_0: tuned: bench_tuned.jsonl:1"), "%s", out);
	ck_assert_msg(strstr(out, "tessera conv3x3_1: default: no record"), "%s", out);
	ck_assert_int_eq(run_bench("depthwise --target cuda"), BENCH_EXIT_USAGE);
	ck_assert(strstr(slurp("bench_stderr.txt"), "depthwise runs on the CPU only"));
	remove("bench_tuned.jsonl");
	/* tessera-tune by layer name: the record has dw10's shape */
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "'%s' depthwise dw10 --budget 0.5 --threads 1 --log bench_tuned.jsonl "
		 ">bench_stdout.txt 2>bench_stderr.txt </dev/null", TESSERA_TUNE_EXE);
	rc = system(cmd);
	ck_assert_msg(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "%s", slurp("bench_stderr.txt"));
	ts_tune_log *log = ts_tune_log_load(ctx, "bench_tuned.jsonl");
	ck_assert_msg(log && log->n == 1, "%s", ts_last_error(ctx));
	ck_assert_str_eq(log->rec[0].op, "depthwise");
	int64_t want[] = {1, 960, 7, 7, 3, 1, 1};
	ck_assert_int_eq(log->rec[0].nshape, 7);
	ck_assert(!memcmp(log->rec[0].shape, want, sizeof want));
	remove("bench_tuned.jsonl");
	remove("bench_stderr.txt");
	remove("bench_stdout.txt");
	ts_ctx_free(ctx);
}
END_TEST

/* tessera-tune end to end: a short run appends a record, a second run
 * resumes from it; without a terminal no progress line is printed. */
START_TEST(test_binary_tune)
{
	char cmd[1024];
	remove("bench_tune.jsonl");
	snprintf(cmd, sizeof cmd, "'%s' matmul 19 23 7 --budget 1 --threads 2 --seed 3 --log bench_tune.jsonl "
		 ">bench_stdout.txt 2>bench_stderr.txt </dev/null", TESSERA_TUNE_EXE);
	for (int run = 0; run < 2; run++) {
		int rc = system(cmd);
		ck_assert_msg(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "tessera-tune failed: %s",
			      slurp("bench_stderr.txt"));
		const char *out = slurp("bench_stdout.txt");
		ck_assert_msg(strstr(out, "  default  ") && strstr(out, "  tuned  ") &&
			      strstr(out, "log: appended to bench_tune.jsonl"), "%s", out);
		ck_assert_msg(!strchr(out, '\r'), "a progress line without a terminal:\n%s", out);
		ck_assert_msg(!run == !strstr(out, "resuming from bench_tune.jsonl:1"), "%s", out);
	}
	ts_ctx *ctx = ts_ctx_new();
	ts_tune_log *log = ts_tune_log_load(ctx, "bench_tune.jsonl");
	ck_assert_msg(log && log->n == 2, "%s", ts_last_error(ctx));
	ts_ctx_free(ctx);
	remove("bench_tune.jsonl");
}
END_TEST

START_TEST(test_binary_errors)
{
	ck_assert_int_eq(run_bench("gemm --impl blas"), BENCH_EXIT_USAGE);
	ck_assert(strstr(slurp("bench_stderr.txt"), "unknown implementation 'blas'"));
	ck_assert_int_eq(run_bench("frobnicate"), BENCH_EXIT_USAGE);
	ck_assert_int_eq(run_bench("--help"), BENCH_EXIT_OK);
	ck_assert(strstr(slurp("bench_stdout.txt"), "--dtype f32|f16|bf16|tf32"));
	ck_assert_int_eq(run_bench("gemm --dtype f16"), BENCH_EXIT_USAGE);
	ck_assert(strstr(slurp("bench_stderr.txt"), "--dtype f16 applies to --target cuda only"));
	ck_assert_int_eq(run_bench("gemm --target cuda --dtype f64"), BENCH_EXIT_USAGE);
	ck_assert(strstr(slurp("bench_stderr.txt"), "--dtype: unknown type 'f64' (f32, f16, bf16 or tf32)"));
	char why[256];
	if (!bench_gpu_available(why, sizeof why)) {
		ck_assert_int_eq(run_bench("gemm --shape 8,8,8 --target cuda"), BENCH_EXIT_DEVICE);
		ck_assert(strstr(slurp("bench_stderr.txt"), why));
		ck_assert(strstr(slurp("bench_stderr.txt"), "--target cpu"));
		ck_assert_int_eq(run_bench("conv2d --target cuda"), BENCH_EXIT_DEVICE);
		ck_assert(strstr(slurp("bench_stderr.txt"), why));
		/* the 16-bit GEMM exits as every GPU run does without a GPU */
		ck_assert_int_eq(run_bench("gemm --target cuda --dtype f16"), BENCH_EXIT_DEVICE);
		ck_assert(strstr(slurp("bench_stderr.txt"), why));
		ck_assert(strstr(slurp("bench_stderr.txt"), "--target cpu"));
		ck_assert_int_eq(run_bench("gemm --target cuda --dtype bf16 --shape 33,17,29"), BENCH_EXIT_DEVICE);
		ck_assert(strstr(slurp("bench_stderr.txt"), why));
	}
	remove("bench_stderr.txt");
	remove("bench_stdout.txt");
}
END_TEST

/* --dtype through the runner on the stand-in driver (a "GPU" that runs no
 * kernel): the 16-bit inputs and their double reference are made, a shape
 * the MMA's tile does not divide skips tessera's row saying why, one it
 * divides is built for the device (and then fails on the stand-in). */
START_TEST(test_binary_dtype_fake_gpu)
{
	char dir[64], lib[128];
	if (!build_fake_driver(dir, lib))
		return;
	setenv("TESSERA_CUDA_LIB", lib, 1);
	remove("bench_tc.json");
	int rc = run_bench("gemm --target cuda --dtype f16 --shape 33,17,29 --impl tessera --repeat 1 "
			   "--json bench_tc.json");
	ck_assert_msg(rc == 0, "tessera-bench exited %d: %s", rc, slurp("bench_stderr.txt"));
	const char *out = slurp("bench_stdout.txt");
	ck_assert_msg(strstr(out, "GPU: Fake GPU (sm_90)\nGEMM inputs A and B float16, C float32 "
				  "(fp32 accumulation): tessera's tensor-core GEMM vs cublasGemmEx\n"), "%s", out);
	ck_assert_msg(strstr(out, "skipped: tessera: the f16 tensor-core GEMM needs M, N and K "
				  "multiples of 16, got 33x17x29"), "%s", out);
	const char *json = slurp("bench_tc.json");
	ck_assert_msg(strstr(json, "\"shape\": \"33x17x29\", \"dtype\": \"f16\""), "%s", json);
	rc = run_bench("gemm --target cuda --dtype bf16 --shape 32,48,64 --impl tessera --repeat 1");
	ck_assert_int_eq(rc, BENCH_EXIT_FAILED); /* the stand-in has no such kernel */
	out = slurp("bench_stdout.txt");
	ck_assert_msg(strstr(out, "GEMM inputs A and B bfloat16"), "%s", out);
	ck_assert_msg(strstr(out, "FAILED: tessera: build: ") && !strstr(out, "skipped"), "%s", out);
	rc = run_bench("gemm --target cuda --dtype tf32 --shape 40,24,20 --impl tessera --repeat 1");
	ck_assert_msg(rc == 0, "tessera-bench exited %d: %s", rc, slurp("bench_stderr.txt"));
	out = slurp("bench_stdout.txt");
	ck_assert_msg(strstr(out, "GEMM inputs A and B float32 as TF32, C float32"), "%s", out);
	ck_assert_msg(strstr(out, "skipped: tessera: the tf32 tensor-core GEMM needs M, N and K "
				  "multiples of 16, got 40x24x20"), "%s", out);
	drop_fake_driver(dir, lib);
	remove("bench_tc.json");
	remove("bench_stderr.txt");
	remove("bench_stdout.txt");
}
END_TEST

/* bench_gpu_time, the one timing path of the GPU rows (tessera, cuBLAS,
 * cuDNN), against the stand-in driver: warm-up calls, one event pair per
 * call rotating over the sets, statistics of the per-call times, the L2
 * flush outside the events, nothing left alive. */
typedef struct gpu_calls {
	fake_gpu *g;
	int calls[2];
} gpu_calls;

static int fake_enqueue(bench_kernel *k, int i)
{
	gpu_calls *c = k->state;
	c->calls[i]++;
	return ts_cuda_launch(c->g->ctx, &c->g->k, &c->g->launch, 3, c->g->d) == TS_OK ? 0 : -1;
}

static int failing_enqueue(bench_kernel *k, int i)
{
	(void)k, (void)i;
	return -1;
}

START_TEST(test_gpu_time_shared)
{
	fake_gpu g;
	if (!fake_gpu_open(&g))
		return;
	gpu_calls c = {.g = &g};
	bench_kernel k = {.impl = BENCH_IMPL_CUBLAS, .nsets = 2, .enqueue = fake_enqueue,
			  .cuda = g.cuda, .state = &c};
	setenv("FAKE_CUDA_TICKS", "1,3,1,1,1,8", 1);
	setenv("FAKE_CUDA_L2", "1000", 1);
	long memsets = fake_stat(g.lib, "fake_memsets");
	ts_timing tm;
	ck_assert_int_eq(bench_gpu_time(g.ctx, &k, 2, 3, true, &tm), 0);
	unsetenv("FAKE_CUDA_TICKS");
	ck_assert_double_eq_tol(tm.min, 1e-3, 1e-12);
	ck_assert_double_eq_tol(tm.median, 3e-3, 1e-12);
	ck_assert_double_eq_tol(tm.mean, 4e-3, 1e-12);
	ck_assert_double_eq_tol(tm.max, 8e-3, 1e-12);
	ck_assert_int_eq(tm.samples, 3);
	ck_assert_uint_eq(tm.flags, TS_TIMING_FEW); /* judged like every timing */
	ck_assert_int_eq(c.calls[0], 3); /* calls 0, 2, 4 of 5 */
	ck_assert_int_eq(c.calls[1], 2);
	ck_assert_int_eq(fake_stat(g.lib, "fake_memsets") - memsets, 3);
	ck_assert_int_eq(fake_stat(g.lib, "fake_last_alloc"), 2000);
	ck_assert_int_eq(fake_stat(g.lib, "fake_flushes_timed"), 0);
	ck_assert_int_eq(fake_stat(g.lib, "fake_live_allocs"), 3);
	ck_assert_int_eq(fake_stat(g.lib, "fake_live_events"), 0);
	/* a failing call fails the timing, with the library named */
	k.enqueue = failing_enqueue;
	ck_assert_int_eq(bench_gpu_time(g.ctx, &k, 0, 1, false, &tm), -1);
	ck_assert_str_eq(ts_last_error(g.ctx), "cuda: time cublas: the work returned -1 in repeat 0");
	ts_clear_error(g.ctx);
	ck_assert_int_eq(fake_stat(g.lib, "fake_live_events"), 0);
	unsetenv("FAKE_CUDA_L2");
	fake_gpu_close(&g);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("bench");
	TCase *tc = tcase_create("bench");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_cli_defaults);
	tcase_add_test(tc, test_cli_flags);
	tcase_add_test(tc, test_cli_errors);
	tcase_add_test(tc, test_cli_dtype);
	tcase_add_test(tc, test_cli_output_paths);
	tcase_add_test(tc, test_naive_gemm);
	tcase_add_test(tc, test_naive_conv);
	tcase_add_test(tc, test_naive_depthwise);
	tcase_add_test(tc, test_cli_depthwise);
	tcase_add_test(tc, test_naive_softmax);
	tcase_add_test(tc, test_cli_softmax);
	tcase_add_test(tc, test_cli_reduce);
	tcase_add_test(tc, test_reduce_schedule);
	tcase_add_test(tc, test_tessera_schedules);
	tcase_add_test(tc, test_cli_gpu_defaults);
	tcase_add_test(tc, test_tessera_cuda_schedules);
	tcase_add_test(tc, test_tessera_cuda_compiles);
	tcase_add_test(tc, test_gpu_libs);
	tcase_add_test(tc, test_tensorcore_skips);
	tcase_add_test(tc, test_gemm_ref_f64);
	tcase_add_test(tc, test_gpu_time_shared);
	tcase_add_test(tc, test_rel_err);
	tcase_add_test(tc, test_table_flagged_row);
	tcase_add_test(tc, test_time_opts);
	tcase_add_test(tc, test_marked_and_warning);
	tcase_add_test(tc, test_binary_gemm_json);
	tcase_add_test(tc, test_binary_summary_gpu_part);
	tcase_add_test(tc, test_binary_errors);
	tcase_add_test(tc, test_binary_dtype_fake_gpu);
	tcase_add_test(tc, test_binary_conv_pointwise);
	tcase_add_test(tc, test_binary_tuned);
	tcase_add_test(tc, test_binary_tune);
	tcase_add_test(tc, test_binary_depthwise);
	tcase_add_test(tc, test_binary_model);
	tcase_add_test(tc, test_binary_plot_unwritable);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
