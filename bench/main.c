/*
 * main.c - tessera-bench: parse the command line, measure the machine's
 * peak, run the problems, print the table and write the JSON and chart.
 * Exit status: 0 when every result was correct, 1 when one was wrong, a
 * kernel failed or an output could not be written, 2 for a bad command
 * line (an unwritable --json or --plot path included: it is found before
 * anything runs), 3 for --target cuda without a usable GPU.  `summary` runs the
 * GPU summary after the CPU one when a GPU is present, and says in one
 * line why not otherwise.
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "fair_blas.h"

static int print_peak(const bench_peak *pk)
{
	printf("fp32 FMA peak (%s): %.1f GFLOP/s on one core, %.1f GFLOP/s on %d threads\n",
	       pk->isa, pk->gflops_1, pk->gflops_all, pk->threads);
	return BENCH_EXIT_OK;
}

static int count_failed(const bench_result *r, int n)
{
	int failed = 0;
	for (int i = 0; i < n; i++)
		failed += r[i].status == BENCH_ROW_FAILED;
	return failed;
}

static int write_outputs(const bench_opts *o, const bench_result *r, int n)
{
	int rc = BENCH_EXIT_OK;
	if (o->json) {
		if (bench_write_json(o->json, r, n))
			rc = BENCH_EXIT_FAILED;
		else
			printf("results: %s\n", o->json);
	}
	if (o->plot) {
		int p = bench_write_plot(o->plot, r, n);
		if (p < 0)
			rc = BENCH_EXIT_FAILED;
		else if (p == 0)
			printf("chart: %s\n", o->plot);
	}
	return rc;
}

/* Runs o's problems into r, prints their table; returns the row count. */
static int run_table(const bench_opts *o, const bench_peak *pk, bench_result *r, int cap)
{
	int n = bench_run_all(o, pk, r, cap);
	printf("\n");
	bench_print_table(stdout, r, n);
	return n;
}

/* summary's GPU part, after the CPU part: run where there is a GPU, one
 * line saying why not where there is none. */
static int run_gpu_summary(const bench_opts *o, const bench_peak *pk, bench_result *r, int cap)
{
	char why[256];
	bench_opts gpu;
	if (!bench_gpu_available(why, sizeof why)) {
		printf("\nGPU part skipped: %s\n", why);
		return 0;
	}
	if (bench_gpu_summary_opts(o, &gpu))
		return 0;
	printf("\nGPU: %s%s\n", why, o->flush_l2 ? "; L2 flushed before each timed call" : "");
	return run_table(&gpu, pk, r, cap);
}

static int run(const bench_opts *o)
{
	char why[256];
	bench_peak pk = {0};
	if (o->target == BENCH_CUDA) {
		if (!bench_gpu_available(why, sizeof why)) {
			fprintf(stderr, "tessera-bench: %s; run with --target cpu\n", why);
			return BENCH_EXIT_DEVICE;
		}
		printf("GPU: %s%s\n", why, o->flush_l2 ? "; L2 flushed before each timed call" : "");
		if (o->dtype != BENCH_F32)
			printf("GEMM inputs A and B %s, C float32 (fp32 accumulation): tessera's "
			       "tensor-core GEMM vs cublasGemmEx\n",
			       o->dtype == BENCH_F16 ? "float16" : o->dtype == BENCH_BF16 ? "bfloat16"
							  : "float32 as TF32");
	} else {
		pk = bench_measure_peak(o->threads, 0.4);
		print_peak(&pk);
	}
	if (o->cmd == BENCH_CMD_PEAK)
		return BENCH_EXIT_OK;
	if (o->cmd == BENCH_CMD_DENSE)
		return bench_dense(o) ? BENCH_EXIT_FAILED : BENCH_EXIT_OK;
	if (o->cmd == BENCH_CMD_SYMBOLIC)
		return bench_symbolic(o) ? BENCH_EXIT_FAILED : BENCH_EXIT_OK;
	/* room for summary's GPU part */
	int cap = (o->nproblems + BENCH_MAX_PROBLEMS) * BENCH_NIMPL;
	bench_result *r = calloc((size_t)cap, sizeof *r);
	if (!r)
		return fprintf(stderr, "tessera-bench: out of memory\n"), BENCH_EXIT_FAILED;
	int n = run_table(o, &pk, r, cap);
	if (o->cmd == BENCH_CMD_SUMMARY && o->target == BENCH_CPU)
		n += run_gpu_summary(o, &pk, r + n, cap - n);
	int failed = count_failed(r, n);
	int rc = write_outputs(o, r, n);
	if (failed) {
		fprintf(stderr, "tessera-bench: %d result%s FAILED\n", failed, failed > 1 ? "s" : "");
		rc = BENCH_EXIT_FAILED;
	}
	free(r);
	return rc;
}

int main(int argc, char **argv)
{
	bench_opts o;
	char err[512];
	/* model has its own options (bench/model.c) */
	if (argc > 1 && !strcmp(argv[1], "model"))
		return bench_model_main(argc - 1, argv + 1);
	if (bench_parse_args(argc, argv, &o, err, sizeof err) ||
	    bench_check_outputs(&o, err, sizeof err)) {
		fprintf(stderr, "tessera-bench: %s\n", err);
		fprintf(stderr, "run 'tessera-bench --help' for usage\n");
		return BENCH_EXIT_USAGE;
	}
	if (o.cmd == BENCH_CMD_HELP) {
		bench_usage(stdout);
		return BENCH_EXIT_OK;
	}
	if (o.cmd == BENCH_CMD_SOFTMAX) {
		setvbuf(stdout, NULL, _IOLBF, 0);
		return bench_softmax(&o);
	}
	if (o.cmd == BENCH_CMD_REDUCE) {
		setvbuf(stdout, NULL, _IOLBF, 0);
		return bench_reduce(&o);
	}
	if (o.list_layers) {
		bench_print_layers(stdout, o.cmd == BENCH_CMD_DEPTHWISE);
		return BENCH_EXIT_OK;
	}
	/* after parsing: it may restart the process, which parses again */
	bench_fair_openblas(argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	return run(&o);
}
