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
#include <sys/stat.h>

#include "graph.h"
#include "model_files.h"
#include "threadpool.h"

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
	tcase_add_test(tc, test_bert_layer_small);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
