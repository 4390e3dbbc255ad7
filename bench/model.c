/*
 * model.c - `tessera-bench model`: a whole ONNX model imported, compiled
 * and run by tessera's graph layer (frontend/graph.h), its output checked
 * against ONNX Runtime's on the same input, then both timed on the same
 * machine in the same run, per thread count.
 *
 *   tessera-bench model resnet50|bert-layer|FILE.onnx [options]
 *
 * The named models are made by scripts/onnx_models.py (random weights)
 * into --models DIR when missing; FILE.onnx takes its input and expected
 * output from --input and --expect (raw float32).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "graph.h"
#include "model_files.h"
#include "threadpool.h"
#include "timer.h"
#include "tune.h"

typedef struct model_opts {
	const char *model, *dir, *input, *expect, *tuned;
	bool small, trace, no_fuse, no_layout, no_ort, profile;
	int threads[8], nthreads;
	double budget_s;
	int rounds;
} model_opts;

#define MAX_ROUNDS 50

static void model_usage(FILE *f)
{
	fputs("usage: tessera-bench model resnet50|bert-layer|FILE.onnx [options]\n"
	      "\n"
	      "Imports an ONNX model, compiles it (the time of each phase printed), runs it,\n"
	      "checks its output against ONNX Runtime's (max |err| / max |ref| <= 1e-3)\n"
	      "and times both on the same input, per thread count: in rounds, each timing\n"
	      "tessera then ONNX Runtime (median of repeated runs after warm-up), so that\n"
	      "a change in the machine's load falls on both; the times are the medians\n"
	      "over the rounds, the speed the median of the rounds' ratios (ONNX Runtime's\n"
	      "time / tessera's).\n"
	      "\n"
	      "  resnet50, bert-layer   made by scripts/onnx_models.py with random weights\n"
	      "                         (ResNet-50 batch 1 at 224x224; one BERT-base encoder\n"
	      "                         layer, sequence 128) into --models when missing\n"
	      "  FILE.onnx              any model of one float32 input and output, with\n"
	      "                         --input IN.bin and --expect OUT.bin (raw float32)\n"
	      "options:\n"
	      "  --small                the reduced models (as the tests use)\n"
	      "  --models DIR           where the named models are (default out/models)\n"
	      "  --threads N[,M...]     thread counts (default: 1 and all cores)\n"
	      "  --budget SECONDS       timing budget of each side per thread count, split\n"
	      "                         over the rounds (default 3)\n"
	      "  --rounds N             rounds of tessera then ONNX Runtime, 1..50 (default 3)\n"
	      "  --trace                print what each graph pass did and the kernels\n"
	      "  --profile              time each kernel (on the first thread count) and list\n"
	      "                         them slowest first\n"
	      "  --no-fuse              one kernel per node\n"
	      "  --no-layout            every convolution converts from and to NCHW\n"
	      "  --no-ort               do not time ONNX Runtime (the check still uses its\n"
	      "                         output file)\n"
	      "  --tuned LOG            convolutions with a record in the tuning log LOG\n"
	      "                         (tessera-tune model FILE.onnx --log LOG) take its\n"
	      "                         schedule; the model is compiled per thread count,\n"
	      "                         each preferring records tuned with that many threads\n",
	      f);
}

static int parse_threads(const char *s, model_opts *o)
{
	o->nthreads = 0;
	while (*s) {
		char *end;
		errno = 0;
		long v = strtol(s, &end, 10);
		if (errno || end == s || v < 1 || v > 1024 || o->nthreads == 8)
			return -1;
		o->threads[o->nthreads++] = (int)v;
		if (*end == ',')
			end++;
		else if (*end)
			return -1;
		s = end;
	}
	return o->nthreads ? 0 : -1;
}

static int parse(int argc, char **argv, model_opts *o)
{
	*o = (model_opts){.dir = "out/models", .budget_s = 3, .rounds = 3};
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	o->threads[o->nthreads++] = 1;
	if (cores > 1)
		o->threads[o->nthreads++] = (int)(cores > 1024 ? 1024 : cores);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			return model_usage(stdout), 1;
		else if (!strcmp(a, "--small"))
			o->small = true;
		else if (!strcmp(a, "--trace"))
			o->trace = true;
		else if (!strcmp(a, "--profile"))
			o->profile = true;
		else if (!strcmp(a, "--no-fuse"))
			o->no_fuse = true;
		else if (!strcmp(a, "--no-layout"))
			o->no_layout = true;
		else if (!strcmp(a, "--no-ort"))
			o->no_ort = true;
		else if (!strcmp(a, "--models") && v)
			o->dir = v, i++;
		else if (!strcmp(a, "--tuned") && v)
			o->tuned = v, i++;
		else if (!strcmp(a, "--input") && v)
			o->input = v, i++;
		else if (!strcmp(a, "--expect") && v)
			o->expect = v, i++;
		else if (!strcmp(a, "--threads") && v) {
			if (parse_threads(v, o))
				return fprintf(stderr, "tessera-bench model: --threads takes numbers 1..1024 separated by commas (at most 8), got '%s'\n", v), 2;
			i++;
		} else if (!strcmp(a, "--budget") && v) {
			char *end;
			o->budget_s = strtod(v, &end);
			if (*end || !(o->budget_s > 0 && o->budget_s <= 600))
				return fprintf(stderr, "tessera-bench model: --budget takes seconds in (0, 600], got '%s'\n", v), 2;
			i++;
		} else if (!strcmp(a, "--rounds") && v) {
			char *end;
			errno = 0;
			long r = strtol(v, &end, 10);
			if (errno || end == v || *end || r < 1 || r > MAX_ROUNDS)
				return fprintf(stderr, "tessera-bench model: --rounds takes a number 1..%d, got '%s'\n",
					       MAX_ROUNDS, v), 2;
			o->rounds = (int)r;
			i++;
		} else if (a[0] == '-')
			return fprintf(stderr, "tessera-bench model: unknown option or missing value: '%s'\n", a), 2;
		else if (o->model)
			return fprintf(stderr, "tessera-bench model: unexpected argument '%s'\n", a), 2;
		else
			o->model = a;
	}
	if (!o->model)
		return fprintf(stderr, "tessera-bench model: name a model (resnet50, bert-layer or FILE.onnx)\n"), 2;
	bool file = strlen(o->model) > 5 && !strcmp(o->model + strlen(o->model) - 5, ".onnx");
	if (file && (!o->input || !o->expect))
		return fprintf(stderr, "tessera-bench model: %s needs --input IN.bin and --expect OUT.bin\n", o->model), 2;
	if (!file && (o->input || o->expect))
		return fprintf(stderr, "tessera-bench model: --input and --expect apply to FILE.onnx only\n"), 2;
	if (!file && strcmp(o->model, "resnet50") && strcmp(o->model, "bert-layer"))
		return fprintf(stderr, "tessera-bench model: unknown model '%s' (resnet50, bert-layer or FILE.onnx)\n", o->model), 2;
	return 0;
}

typedef struct run_arg {
	ts_graph_exec *e;
	ts_array *in, *out;
} run_arg;

static int run_once(void *p)
{
	run_arg *r = p;
	return ts_graph_run(r->e, 1, &r->in, 1, &r->out) != TS_OK;
}

static void print_compile(const ts_graph_exec *e, double import_ms)
{
	ts_graph_stats s = ts_graph_exec_stats(e);
	printf("compile: %.1f ms = import %.1f + fold %.1f + fuse %.1f + layout %.1f + memory %.1f + codegen %.1f\n",
	       import_ms + s.total_ms, import_ms, s.fold_ms, s.fuse_ms, s.layout_ms, s.memory_ms,
	       s.codegen_ms);
	printf("graph: %d nodes -> %d kernels (%d compiled, the rest share their code); %d nodes fused, "
	       "%d folded, %d layout conversions\n",
	       s.nodes, s.kernels, s.modules, s.fused_nodes, s.folded_nodes, s.conversions);
	printf("memory: intermediates %.2f MB in one arena (%.2f MB without reuse); weights %.1f MB\n",
	       (double)s.arena_bytes / 1e6, (double)s.unplanned_bytes / 1e6, (double)s.constant_bytes / 1e6);
}

/* How many of e's convolutions a record of the log scheduled. */
static void print_tuned(const ts_graph_exec *e, const ts_tune_log *log)
{
	ts_graph_stats s = ts_graph_exec_stats(e);
	printf("tuned: %d kernels scheduled by records of %s (of %d distinct tunable convolutions; %d thread%s)\n",
	       s.tuned_kernels, log->path, ts_graph_exec_tune_tasks(e, NULL, 0), ts_num_threads(),
	       ts_num_threads() > 1 ? "s" : "");
}

/* Loads, compiles and checks; returns the executable (NULL on failure,
 * with *rc set). */
static ts_graph_exec *compile_and_check(ts_ctx *ctx, const model_opts *o, const ts_tune_log *log,
					const char *onnx, const char *in_path, const char *expect_path,
					run_arg *ra, int *rc)
{
	char err[1024];
	uint64_t t0 = ts_now_ns();
	ts_graph *g = ts_onnx_load(ctx, onnx);
	double import_ms = ts_ms_since(t0);
	*rc = BENCH_EXIT_FAILED;
	if (!g)
		return fprintf(stderr, "tessera-bench model: %s\n", ts_last_error(ctx)), NULL;
	if (ts_graph_num_inputs(g) != 1 || ts_graph_num_outputs(g) != 1) {
		fprintf(stderr, "tessera-bench model: %s has %d inputs and %d outputs; the bench runs models of one each\n",
			onnx, ts_graph_num_inputs(g), ts_graph_num_outputs(g));
		ts_graph_free(g);
		return NULL;
	}
	printf("model: %s, %d nodes\n", onnx, ts_graph_num_nodes(g));
	int nd[2];
	int64_t shape[2][TS_GRAPH_MAX_DIMS];
	ts_graph_value_shape(g, ts_graph_input_value(g, 0), &nd[0], shape[0]);
	ts_graph_value_shape(g, ts_graph_output_value(g, 0), &nd[1], shape[1]);
	ts_graph_opts go = {.trace = o->trace ? stdout : NULL, .no_fuse = o->no_fuse, .no_layout = o->no_layout,
			    .tuned = log};
	ts_graph_exec *e = ts_graph_compile(g, &go);
	ts_graph_free(g);
	if (!e)
		return fprintf(stderr, "tessera-bench model: %s\n", ts_last_error(ctx)), NULL;
	if (o->trace)
		ts_graph_exec_print(stdout, e);
	print_compile(e, import_ms);
	if (log)
		print_tuned(e, log);
	ra->e = e;
	ra->in = ts_array_new(ctx, ts_float32, nd[0], shape[0]);
	ra->out = ts_array_new(ctx, ts_float32, nd[1], shape[1]);
	ts_array *ref = ts_array_new(ctx, ts_float32, nd[1], shape[1]);
	if (!ra->in || !ra->out || !ref ||
	    mf_read_floats(in_path, ra->in->data, ts_array_numel(ra->in), err, sizeof err) ||
	    mf_read_floats(expect_path, ref->data, ts_array_numel(ref), err, sizeof err)) {
		fprintf(stderr, "tessera-bench model: %s\n", ra->in && ra->out && ref ? err : ts_last_error(ctx));
		ts_array_free(ref);
		return e;
	}
	if (run_once(ra)) {
		fprintf(stderr, "tessera-bench model: %s\n", ts_last_error(ctx));
		ts_array_free(ref);
		return e;
	}
	double rel = mf_rel_err(ra->out->data, ref->data, ts_array_numel(ref));
	printf("check: max |tessera - onnxruntime| / max |onnxruntime| = %.2e (limit 1e-3): %s\n", rel,
	       rel <= 1e-3 ? "ok" : "WRONG");
	ts_array_free(ref);
	if (rel <= 1e-3)
		*rc = BENCH_EXIT_OK;
	return e;
}

/* One thread count's figures (ort_ms and speed NaN when ONNX Runtime was
 * not timed). */
typedef struct figures {
	double tessera_ms, ort_ms, speed;
	double ratio[MAX_ROUNDS]; /* per round: ONNX Runtime's time / tessera's */
	int nratio;
	int flagged;              /* rounds whose tessera timings were flagged */
	char verdict[256];        /* the last flagged round's verdict */
} figures;

/* Times tessera and ONNX Runtime alternately, o->rounds rounds of
 * budget / rounds seconds each: a shared machine's load changes over a
 * run, and timing one side after the other for the whole budget would
 * put such a change on one side only.  -1 when tessera's run fails. */
static int time_rounds(ts_ctx *ctx, const model_opts *o, run_arg *ra, const char *onnx, const char *in,
		       int threads, figures *f)
{
	double tess[MAX_ROUNDS], ort[MAX_ROUNDS];
	bool with_ort = !o->no_ort;
	*f = (figures){.ort_ms = NAN, .speed = NAN};
	ts_time_opts to = ts_time_opts_default();
	to.budget_s = o->budget_s / o->rounds;
	for (int r = 0; r < o->rounds; r++) {
		ts_timing tm;
		if (ts_time_run_stable(ctx, run_once, ra, &to, &tm) != TS_OK)
			return fprintf(stderr, "tessera-bench model: %s\n", ts_last_error(ctx)), -1;
		tess[r] = tm.median * 1e3;
		if (tm.flags) {
			f->flagged++;
			ts_timing_verdict(&tm, f->verdict, sizeof f->verdict);
		}
		char err[1024];
		if (with_ort && mf_ort_time(TS_SOURCE_DIR, onnx, in, threads, to.budget_s, &ort[r], err, sizeof err)) {
			fprintf(stderr, "tessera-bench model: %s\n", err);
			with_ort = false; /* the same failure each round: said once */
		}
		if (with_ort)
			f->ratio[r] = ort[r] / tess[r];
	}
	f->tessera_ms = ts_median(tess, o->rounds);
	if (with_ort) {
		f->nratio = o->rounds;
		f->ort_ms = ts_median(ort, o->rounds);
		f->speed = ts_median(f->ratio, o->rounds);
	}
	return 0;
}

static void print_figures(const model_opts *o, int threads, const figures *f)
{
	if (f->nratio) {
		printf("%-8d %12.3f %16.3f %21.2fx%s", threads, f->tessera_ms, f->ort_ms, f->speed,
		       f->flagged ? "  !" : "");
		if (f->nratio > 1) {
			printf("  rounds:");
			for (int r = 0; r < f->nratio; r++)
				printf(" %.2fx", f->ratio[r]);
		}
		printf("\n");
	} else {
		printf("%-8d %12.3f %16s %22s%s\n", threads, f->tessera_ms, "-", "-", f->flagged ? "  !" : "");
	}
	if (f->flagged)
		printf("  ! tessera timings, %d of %d rounds: %s\n", f->flagged, o->rounds, f->verdict);
}

int bench_model_main(int argc, char **argv)
{
	model_opts o;
	int rc = parse(argc, argv, &o);
	if (rc)
		return rc == 1 ? BENCH_EXIT_OK : BENCH_EXIT_USAGE;
	setvbuf(stdout, NULL, _IOLBF, 0);
	ts_ctx *ctx = ts_ctx_new();
	ts_tune_log *log = NULL;
	/* a bad log is a bad command line: refused before any model is made */
	if (!ctx || (o.tuned && !(log = ts_tune_log_load(ctx, o.tuned)))) {
		fprintf(stderr, "tessera-bench model: --tuned: %s\n", ctx ? ts_last_error(ctx) : "out of memory");
		ts_ctx_free(ctx);
		return BENCH_EXIT_USAGE;
	}
	char base[4096], onnx[4200], in[4200], expect[4200], err[1024];
	if (o.input) {
		snprintf(onnx, sizeof onnx, "%s", o.model);
		snprintf(in, sizeof in, "%s", o.input);
		snprintf(expect, sizeof expect, "%s", o.expect);
	} else {
		mkdir(o.dir, 0777);
		if (mf_make(TS_SOURCE_DIR, o.model, o.small, o.dir, base, sizeof base, err, sizeof err)) {
			fprintf(stderr, "tessera-bench model: %s\n", err);
			ts_ctx_free(ctx);
			return BENCH_EXIT_FAILED;
		}
		snprintf(onnx, sizeof onnx, "%s.onnx", base);
		snprintf(in, sizeof in, "%s.input.bin", base);
		snprintf(expect, sizeof expect, "%s.ort.bin", base);
	}
	run_arg ra = {0};
	/* records are looked up for the thread count at compile time */
	ts_set_num_threads(o.threads[0]);
	ts_graph_exec *e = compile_and_check(ctx, &o, log, onnx, in, expect, &ra, &rc);
	if (rc == BENCH_EXIT_OK) {
		if (o.profile) {
			ts_set_num_threads(o.threads[0]);
			printf("\nper kernel, %d thread%s:\n", o.threads[0], o.threads[0] > 1 ? "s" : "");
			if (ts_graph_profile(e, 1, &ra.in, 1, &ra.out, 20, stdout) != TS_OK)
				fprintf(stderr, "tessera-bench model: %s\n", ts_last_error(ctx));
		}
		printf("\n%-8s %12s %16s %22s\n", "threads", "tessera ms", "onnxruntime ms", "speed vs onnxruntime");
		for (int t = 0; t < o.nthreads && rc == BENCH_EXIT_OK; t++) {
			ts_set_num_threads(o.threads[t]);
			if (log && t > 0) {
				ts_array_free(ra.in);
				ts_array_free(ra.out);
				ts_graph_exec_free(e);
				ra = (run_arg){0};
				printf("recompiling for %d thread%s:\n", o.threads[t], o.threads[t] > 1 ? "s" : "");
				e = compile_and_check(ctx, &o, log, onnx, in, expect, &ra, &rc);
				if (rc != BENCH_EXIT_OK)
					break;
			}
			figures f;
			if (time_rounds(ctx, &o, &ra, onnx, in, o.threads[t], &f)) {
				rc = BENCH_EXIT_FAILED;
				break;
			}
			print_figures(&o, o.threads[t], &f);
		}
	}
	ts_array_free(ra.in);
	ts_array_free(ra.out);
	ts_graph_exec_free(e);
	ts_ctx_free(ctx);
	return rc;
}
