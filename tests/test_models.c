/*
 * test_models.c - whole models end to end: the reduced ResNet-50 and BERT
 * encoder layer of scripts/onnx_models.py, made with random weights into
 * the build tree, imported from their ONNX files, compiled, run and
 * checked against ONNX Runtime's outputs on the same input (max |err| /
 * max |ref| <= 1e-3), with what the passes did checked too.  The Python
 * environment comes from scripts/python-env.sh (scripts/setup.sh runs it);
 * without it the test fails and says so.
 */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "graph.h"
#include "model_files.h"
#include "threadpool.h"
#include "tune.h"

typedef struct model_run {
	double rel_err;
	ts_graph_stats st;
	int nodes;
} model_run;

static model_run run_model(const char *model, const ts_graph_opts *opts, int threads)
{
	char base[4096], path[4200], err[1024];
	const char *dir = "models";
	mkdir(dir, 0777);
	ck_assert_msg(mf_make(TS_SOURCE_DIR, model, true, dir, base, sizeof base, err, sizeof err) == 0,
		      "%s", err);
	ts_ctx *ctx = ts_ctx_new();
	snprintf(path, sizeof path, "%s.onnx", base);
	ts_graph *g = ts_onnx_load(ctx, path);
	tu_nonnull(ctx, g);
	model_run r = {.nodes = ts_graph_num_nodes(g)};
	ck_assert_int_eq(ts_graph_num_inputs(g), 1);
	ck_assert_int_eq(ts_graph_num_outputs(g), 1);
	int nd[2];
	int64_t s[2][TS_GRAPH_MAX_DIMS];
	ck_assert(ts_graph_value_shape(g, ts_graph_input_value(g, 0), &nd[0], s[0]));
	ck_assert(ts_graph_value_shape(g, ts_graph_output_value(g, 0), &nd[1], s[1]));
	ts_graph_exec *e = ts_graph_compile(g, opts);
	ts_graph_free(g); /* the executable does not need the graph */
	tu_nonnull(ctx, e);
	ts_array *in = ts_array_new(ctx, ts_float32, nd[0], s[0]);
	ts_array *out = ts_array_new(ctx, ts_float32, nd[1], s[1]);
	ts_array *ref = ts_array_new(ctx, ts_float32, nd[1], s[1]);
	snprintf(path, sizeof path, "%s.input.bin", base);
	ck_assert_msg(mf_read_floats(path, in->data, ts_array_numel(in), err, sizeof err) == 0, "%s", err);
	snprintf(path, sizeof path, "%s.ort.bin", base);
	ck_assert_msg(mf_read_floats(path, ref->data, ts_array_numel(ref), err, sizeof err) == 0, "%s", err);
	ts_set_num_threads(threads);
	/* twice: a run must not depend on what the previous one left */
	for (int k = 0; k < 2; k++) {
		ck_assert_msg(ts_graph_run(e, 1, &in, 1, &out) == TS_OK, "%s", ts_last_error(ctx));
		double rel = mf_rel_err(out->data, ref->data, ts_array_numel(ref));
		r.rel_err = rel > r.rel_err ? rel : r.rel_err;
	}
	ts_set_num_threads(1);
	r.st = ts_graph_exec_stats(e);
	ts_array_free(in);
	ts_array_free(out);
	ts_array_free(ref);
	ts_graph_exec_free(e);
	ts_ctx_free(ctx);
	return r;
}

START_TEST(test_resnet50_small)
{
	model_run r = run_model("resnet50", NULL, 2);
	ck_assert_msg(r.rel_err <= 1e-3, "max |tessera - onnxruntime| / max |onnxruntime| = %g", r.rel_err);
	/* every BatchNormalization folded into its convolution; relu and the
	 * residual adds fused into the convolutions; the NCHW[x]c layout kept
	 * from the first convolution (3 input channels: blocks of 1, a view)
	 * to the global average pool: no conversions */
	ck_assert_int_eq(r.st.folded_nodes, 17);
	ck_assert_int_eq(r.st.conversions, 0);
	ck_assert_int_eq(r.st.fused_nodes, 17);
	ck_assert_int_eq(r.st.kernels, 20);
	ck_assert_int_lt(r.st.arena_bytes, r.st.unplanned_bytes);
	model_run u = run_model("resnet50", &(ts_graph_opts){.no_fuse = true, .no_layout = true}, 1);
	ck_assert_msg(u.rel_err <= 1e-3, "unfused: %g", u.rel_err);
	ck_assert_int_gt(u.st.kernels, r.st.kernels);
	ck_assert_int_gt(u.st.conversions, 0);
}
END_TEST

/* The reduced ResNet-50 scheduled by a tuning log: its convolutions' tasks
 * (channel blocks held at the graph's), three tuned briefly and every
 * other given a record with register blocks and a pad mode unlike the
 * defaults; compiled with the log, every convolution takes its record and
 * the output still matches ONNX Runtime's. */
START_TEST(test_resnet50_small_tuned)
{
	char base[4096], path[4200], err[1024];
	mkdir("models", 0777);
	ck_assert_msg(mf_make(TS_SOURCE_DIR, "resnet50", true, "models", base, sizeof base, err, sizeof err) == 0,
		      "%s", err);
	ts_ctx *ctx = ts_ctx_new();
	snprintf(path, sizeof path, "%s.onnx", base);
	ts_graph *g = ts_onnx_load(ctx, path);
	tu_nonnull(ctx, g);
	ts_graph_exec *e = ts_graph_compile(g, NULL);
	ts_graph_free(g);
	tu_nonnull(ctx, e);
	ts_tune_task tasks[64];
	int n = ts_graph_exec_tune_tasks(e, tasks, 64);
	ck_assert_int_eq(n, 16); /* 17 convolutions, two alike */
	ts_graph_exec_free(e);
	snprintf(path, sizeof path, "%s.tune.jsonl", base);
	remove(path);
	for (int i = 0; i < n; i++) {
		ts_tune_result r;
		if (i < 3) {
			ts_tune_opts o = ts_tune_opts_default();
			o.budget_s = 0.5;
			o.max_trials = 6;
			o.repeat = 3;
			tu_ok(ctx, ts_tune(ctx, &tasks[i], &o, &r));
			ck_assert_int_eq(r.wrong, 0);
		} else {
			r = (ts_tune_result){.best = ts_tune_default(&tasks[i]), .best_ms = 1, .default_ms = 1};
			r.def = r.best;
			for (int p = 0; p < tasks[i].space.nparams; p++) {
				const char *name = tasks[i].space.name[p];
				if (!strcmp(name, "ow_block"))
					r.best.v[p] = i % 2 ? 4 : 7;
				else if (!strcmp(name, "oh_block"))
					r.best.v[p] = 1 + i % 3;
				else if (!strcmp(name, "pad"))
					r.best.v[p] = i % 2 ? TS_PAD_INLINE : TS_PAD_COPY;
			}
		}
		tu_ok(ctx, ts_tune_log_append(ctx, path, &tasks[i], &r));
	}
	ts_tune_log *log = ts_tune_log_load(ctx, path);
	tu_nonnull(ctx, log);
	model_run r = run_model("resnet50", &(ts_graph_opts){.tuned = log}, 2);
	ck_assert_msg(r.rel_err <= 1e-3, "tuned: max |tessera - onnxruntime| / max |onnxruntime| = %g", r.rel_err);
	ck_assert_int_eq(r.st.tuned_kernels, 17);
	ck_assert_int_eq(r.st.kernels, 20);
	remove(path);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_bert_layer_small)
{
	model_run r = run_model("bert-layer", NULL, 2);
	ck_assert_msg(r.rel_err <= 1e-3, "max |tessera - onnxruntime| / max |onnxruntime| = %g", r.rel_err);
	/* biases, the scale, the residual adds and the exported GELU (div,
	 * erf, add, mul, mul) fused into the products before them */
	ck_assert_int_eq(r.st.fused_nodes, 14);
	ck_assert_int_eq(r.st.kernels, 15);
	ck_assert_int_lt(r.st.modules, r.st.kernels); /* equal kernels share code */
	model_run u = run_model("bert-layer", &(ts_graph_opts){.no_fuse = true}, 1);
	ck_assert_msg(u.rel_err <= 1e-3, "unfused: %g", u.rel_err);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("models");
	TCase *tc = tcase_create("models");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_resnet50_small);
	tcase_add_test(tc, test_resnet50_small_tuned);
	tcase_add_test(tc, test_bert_layer_small);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
