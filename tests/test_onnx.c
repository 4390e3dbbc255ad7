/*
 * test_onnx.c - ONNX import (frontend/onnx.c): models built here with the
 * protobuf-c structs generated from frontend/onnx.proto, packed, and read
 * back with ts_onnx_load_bytes and ts_onnx_load; the graphs' shapes, and
 * every refusal with the node, value or file it names.
 *
 * Built without protobuf-c, only the message that says what to install is
 * checked.
 */
#include "testutil.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "graph.h"

#ifndef TS_HAVE_PROTOBUF_C

START_TEST(onnx_not_built)
{
	ts_ctx *ctx = ts_ctx_new();
	FAILS_NULL(ctx, ts_onnx_load(ctx, "model.onnx"), "built without ONNX import: install libprotobuf-c-dev");
	FAILS_NULL(ctx, ts_onnx_load_bytes(ctx, "x", 1, "x"), "protobuf-c-compiler and reconfigure");
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("onnx");
	TCase *tc = tcase_create("onnx");
	tcase_add_test(tc, onnx_not_built);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}

#else

#include "onnx.pb-c.h"

/* ---- building models ------------------------------------------------------------- */

#define MB_NODES 4096
#define MB_ATTRS 256
#define MB_TENSORS 64
#define MB_VALUES 32

/* A model under construction: every message lives in these arrays, and
 * every string in `pool`, so one free releases it. */
typedef struct mb {
	TesseraOnnx__ModelProto model;
	TesseraOnnx__OperatorSetIdProto opset[2], *opsetp[2];
	TesseraOnnx__GraphProto graph;
	TesseraOnnx__NodeProto node[MB_NODES], *nodep[MB_NODES];
	char *node_io[MB_NODES][24];
	TesseraOnnx__AttributeProto attr[MB_ATTRS], *attrp[MB_ATTRS];
	int nattr;
	TesseraOnnx__TensorProto tensor[MB_TENSORS], *initp[MB_TENSORS];
	int64_t tdims[MB_TENSORS][TS_GRAPH_MAX_DIMS];
	int ntensor;
	TesseraOnnx__StringStringEntryProto ext, *extp;
	TesseraOnnx__SparseTensorProto sparse, *sparsep;
	TesseraOnnx__ValueInfoProto vi[MB_VALUES], *inp[MB_VALUES], *outp[MB_VALUES];
	TesseraOnnx__TypeProto type[MB_VALUES];
	TesseraOnnx__TypeProto__Tensor ttype[MB_VALUES];
	TesseraOnnx__TensorShapeProto shape[MB_VALUES];
	TesseraOnnx__TensorShapeProto__Dimension dim[MB_VALUES][TS_GRAPH_MAX_DIMS];
	TesseraOnnx__TensorShapeProto__Dimension *dimp[MB_VALUES][TS_GRAPH_MAX_DIMS];
	int nvi;
	char pool[1 << 18];
	size_t npool;
} mb;

static char *mb_str(mb *m, const char *s)
{
	size_t n = strlen(s) + 1;
	ck_assert_uint_le(m->npool + n, sizeof(m->pool));
	char *p = memcpy(m->pool + m->npool, s, n);
	m->npool += n;
	return p;
}

static mb *mb_new(int64_t opset)
{
	mb *m = calloc(1, sizeof(*m));
	ck_assert_ptr_nonnull(m);
	tessera_onnx__model_proto__init(&m->model);
	tessera_onnx__graph_proto__init(&m->graph);
	tessera_onnx__operator_set_id_proto__init(&m->opset[0]);
	m->model.has_ir_version = 1;
	m->model.ir_version = 8;
	m->opset[0].domain = mb_str(m, "");
	m->opset[0].has_version = 1;
	m->opset[0].version = opset;
	m->opsetp[0] = &m->opset[0];
	m->model.opset_import = m->opsetp;
	m->model.n_opset_import = 1;
	m->graph.name = mb_str(m, "test");
	m->graph.node = m->nodep;
	m->graph.initializer = m->initp;
	m->graph.input = m->inp;
	m->graph.output = m->outp;
	m->model.graph = &m->graph;
	return m;
}

static TesseraOnnx__ValueInfoProto *mb_value(mb *m, const char *name, int ndim, const int64_t *dims)
{
	ck_assert_int_lt(m->nvi, MB_VALUES);
	int i = m->nvi++;
	TesseraOnnx__ValueInfoProto *v = &m->vi[i];
	tessera_onnx__value_info_proto__init(v);
	tessera_onnx__type_proto__init(&m->type[i]);
	tessera_onnx__type_proto__tensor__init(&m->ttype[i]);
	tessera_onnx__tensor_shape_proto__init(&m->shape[i]);
	v->name = mb_str(m, name);
	v->type = &m->type[i];
	m->type[i].value_case = TESSERA_ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	m->type[i].tensor_type = &m->ttype[i];
	m->ttype[i].has_elem_type = 1;
	m->ttype[i].elem_type = TESSERA_ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	m->ttype[i].shape = &m->shape[i];
	m->shape[i].n_dim = (size_t)ndim;
	m->shape[i].dim = m->dimp[i];
	for (int d = 0; d < ndim; d++) {
		tessera_onnx__tensor_shape_proto__dimension__init(&m->dim[i][d]);
		m->dim[i][d].value_case = TESSERA_ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
		m->dim[i][d].dim_value = dims[d];
		m->dimp[i][d] = &m->dim[i][d];
	}
	return v;
}

/* A float32 graph input of fixed shape. */
static TesseraOnnx__ValueInfoProto *mb_input(mb *m, const char *name, int ndim, const int64_t *dims)
{
	TesseraOnnx__ValueInfoProto *v = mb_value(m, name, ndim, dims);
	m->inp[m->graph.n_input++] = v;
	return v;
}

static void mb_output(mb *m, const char *name)
{
	TesseraOnnx__ValueInfoProto *v = mb_value(m, name, 0, NULL);
	v->type = NULL; /* ONNX files often leave the output's type to inference */
	m->outp[m->graph.n_output++] = v;
}

static TesseraOnnx__TensorProto *mb_tensor(mb *m, const char *name, int dtype, int ndim,
					   const int64_t *dims)
{
	ck_assert_int_lt(m->ntensor, MB_TENSORS);
	int i = m->ntensor++;
	TesseraOnnx__TensorProto *t = &m->tensor[i];
	tessera_onnx__tensor_proto__init(t);
	if (name)
		t->name = mb_str(m, name);
	t->has_data_type = 1;
	t->data_type = dtype;
	t->n_dims = (size_t)ndim;
	t->dims = m->tdims[i];
	if (ndim)
		memcpy(m->tdims[i], dims, sizeof(int64_t) * (size_t)ndim);
	return t;
}

static int64_t numel(int ndim, const int64_t *dims)
{
	int64_t n = 1;
	for (int d = 0; d < ndim; d++)
		n *= dims[d];
	return n;
}

/* A float tensor (data kept by the caller until packing), in raw_data or float_data. */
static TesseraOnnx__TensorProto *mb_ftensor(mb *m, const char *name, int ndim, const int64_t *dims,
					    const float *data, bool raw)
{
	TesseraOnnx__TensorProto *t = mb_tensor(m, name, TESSERA_ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, ndim, dims);
	size_t n = (size_t)numel(ndim, dims);
	if (raw) {
		t->has_raw_data = 1;
		t->raw_data.len = n * sizeof(float);
		t->raw_data.data = (uint8_t *)data;
	} else {
		t->n_float_data = n;
		t->float_data = (float *)data;
	}
	return t;
}

static TesseraOnnx__TensorProto *mb_init(mb *m, const char *name, int ndim, const int64_t *dims,
					 const float *data, bool raw)
{
	TesseraOnnx__TensorProto *t = mb_ftensor(m, name, ndim, dims, data, raw);
	m->initp[m->graph.n_initializer++] = t;
	return t;
}

/* A 1-D int64 initializer. */
static TesseraOnnx__TensorProto *mb_init_i64(mb *m, const char *name, int n, const int64_t *data)
{
	int64_t dims[1] = {n};
	TesseraOnnx__TensorProto *t = mb_tensor(m, name, TESSERA_ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, dims);
	t->n_int64_data = (size_t)n;
	t->int64_data = (int64_t *)data;
	m->initp[m->graph.n_initializer++] = t;
	return t;
}

/* Splits "a,,b" into its names ("" for a left-out input). */
static size_t mb_names(mb *m, const char *list, char **out, size_t max)
{
	size_t n = 0;
	if (!*list)
		return 0;
	for (const char *p = list;; n++) {
		size_t w = strcspn(p, ",");
		char buf[128];
		ck_assert_uint_lt(n, max);
		ck_assert_uint_lt(w, sizeof(buf));
		memcpy(buf, p, w);
		buf[w] = 0;
		out[n] = mb_str(m, buf);
		if (!p[w])
			return n + 1;
		p += w + 1;
	}
}

/* A node: inputs and outputs as comma-separated names; name NULL: none.
 * Attributes added next belong to it. */
static TesseraOnnx__NodeProto *mb_node(mb *m, const char *op, const char *name, const char *ins,
				       const char *outs)
{
	size_t i = m->graph.n_node++;
	ck_assert_uint_lt(i, MB_NODES);
	TesseraOnnx__NodeProto *n = &m->node[i];
	tessera_onnx__node_proto__init(n);
	n->op_type = mb_str(m, op);
	if (name)
		n->name = mb_str(m, name);
	n->input = m->node_io[i];
	n->n_input = mb_names(m, ins, n->input, 20);
	n->output = m->node_io[i] + n->n_input;
	n->n_output = mb_names(m, outs, n->output, 24 - n->n_input);
	n->attribute = m->attrp + m->nattr;
	m->nodep[i] = n;
	return n;
}

static TesseraOnnx__AttributeProto *mb_attr(mb *m, const char *name, int type)
{
	TesseraOnnx__NodeProto *n = &m->node[m->graph.n_node - 1];
	ck_assert_int_lt(m->nattr, MB_ATTRS);
	TesseraOnnx__AttributeProto *a = &m->attr[m->nattr];
	tessera_onnx__attribute_proto__init(a);
	a->name = mb_str(m, name);
	a->has_type = 1;
	a->type = type;
	m->attrp[m->nattr++] = a;
	n->n_attribute++;
	return a;
}

static void mb_int(mb *m, const char *name, int64_t v)
{
	TesseraOnnx__AttributeProto *a = mb_attr(m, name, TESSERA_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
	a->has_i = 1;
	a->i = v;
}

static void mb_float(mb *m, const char *name, float v)
{
	TesseraOnnx__AttributeProto *a = mb_attr(m, name, TESSERA_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
	a->has_f = 1;
	a->f = v;
}

/* An INTS attribute: mb_ints(m, "strides", TS_SHAPE(2, 2)); the values are
 * copied into the pool. */
static void mb_ints(mb *m, const char *name, int n, const int64_t *v)
{
	TesseraOnnx__AttributeProto *a = mb_attr(m, name, TESSERA_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
	m->npool = (m->npool + 7) & ~(size_t)7;
	ck_assert_uint_le(m->npool + sizeof(int64_t) * (size_t)n, sizeof(m->pool));
	a->ints = n ? (int64_t *)(void *)(m->pool + m->npool) : NULL; /* as protobuf-c reads [] */
	if (n)
		memcpy(a->ints, v, sizeof(int64_t) * (size_t)n);
	m->npool += sizeof(int64_t) * (size_t)n;
	a->n_ints = (size_t)n;
}

static void mb_string(mb *m, const char *name, const char *s)
{
	TesseraOnnx__AttributeProto *a = mb_attr(m, name, TESSERA_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
	a->has_s = 1;
	a->s.len = strlen(s);
	a->s.data = (uint8_t *)mb_str(m, s);
}

static void mb_tensor_attr(mb *m, const char *name, TesseraOnnx__TensorProto *t)
{
	TesseraOnnx__AttributeProto *a = mb_attr(m, name, TESSERA_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
	a->t = t;
}

/* The model's bytes (malloc'd); the builder is freed. */
static uint8_t *mb_pack(mb *m, size_t *size)
{
	*size = tessera_onnx__model_proto__get_packed_size(&m->model);
	uint8_t *buf = malloc(*size ? *size : 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(tessera_onnx__model_proto__pack(&m->model, buf), *size);
	free(m);
	return buf;
}

static ts_graph *mb_load(ts_ctx *ctx, mb *m)
{
	size_t size;
	uint8_t *buf = mb_pack(m, &size);
	ts_graph *g = ts_onnx_load_bytes(ctx, buf, size, "test.onnx");
	free(buf);
	return g;
}

/* The model must be refused with `part` in the message. */
static void refused(mb *m, const char *part)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = mb_load(ctx, m);
	ck_assert_msg(g == NULL, "the model was imported; expected '%s'", part);
	tu_assert_error(ctx, part);
	ck_assert_msg(strncmp(ts_last_error(ctx), "onnx: test.onnx: ", 17) == 0,
		      "'%s' does not name the model", ts_last_error(ctx));
	ts_ctx_free(ctx);
}

/* m imports (and is freed). */
static void imported(mb *m)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = mb_load(ctx, m);
	tu_nonnull(ctx, g);
	ts_graph_free(g);
	ts_ctx_free(ctx);
}

static void assert_shape(const ts_graph *g, int value, int ndim, const int64_t *want)
{
	int nd = -1;
	int64_t s[TS_GRAPH_MAX_DIMS];
	ck_assert(ts_graph_value_shape(g, value, &nd, s));
	ck_assert_int_eq(nd, ndim);
	for (int d = 0; d < ndim; d++)
		ck_assert_msg(s[d] == want[d], "dimension %d is %lld, not %lld", d, (long long)s[d],
			      (long long)want[d]);
}

/* Deterministic values in [-1, 1), never all zero. */
static void fill(float *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
	}
}

/* x[1, 4] -> Relu -> y: the base of the refusal tests. */
static mb *relu_model(int64_t opset)
{
	mb *m = mb_new(opset);
	mb_input(m, "x", TS_SHAPE(1, 4));
	mb_node(m, "Relu", "r", "x", "y");
	mb_output(m, "y");
	return m;
}

/* ---- models that import ------------------------------------------------------------ */

static float w_conv[4 * 3 * 3 * 3], b_conv[4], bn[4][4], w_fc[3 * 4], b_fc[3];

/* A small CNN: every image operator, weights in raw_data and float_data. */
START_TEST(cnn_shapes)
{
	fill(w_conv, TS_COUNT_OF(w_conv), 1);
	fill(b_conv, 4, 2);
	fill(bn[0], 16, 3);
	for (int i = 0; i < 4; i++)
		bn[3][i] = 0.5f + (float)i; /* variance > 0 */
	fill(w_fc, 12, 4);
	fill(b_fc, 3, 5);
	mb *m = mb_new(13);
	mb_input(m, "image", TS_SHAPE(1, 3, 8, 8));
	mb_init(m, "w", TS_SHAPE(4, 3, 3, 3), w_conv, true);
	mb_init(m, "b", TS_SHAPE(4), b_conv, false);
	mb_init(m, "scale", TS_SHAPE(4), bn[0], true);
	mb_init(m, "shift", TS_SHAPE(4), bn[1], false);
	mb_init(m, "mean", TS_SHAPE(4), bn[2], true);
	mb_init(m, "var", TS_SHAPE(4), bn[3], false);
	mb_init(m, "fc_w", TS_SHAPE(3, 4), w_fc, true);
	mb_init(m, "fc_b", TS_SHAPE(3), b_fc, true);
	mb_node(m, "Conv", "conv", "image,w,b", "c");
	mb_ints(m, "kernel_shape", TS_SHAPE(3, 3));
	mb_ints(m, "pads", TS_SHAPE(1, 1, 1, 1));
	mb_ints(m, "strides", TS_SHAPE(1, 1));
	mb_string(m, "auto_pad", "NOTSET");
	mb_node(m, "BatchNormalization", "bn", "c,scale,shift,mean,var", "n");
	mb_float(m, "epsilon", 1e-3f);
	mb_node(m, "Relu", NULL, "n", "r");
	mb_node(m, "MaxPool", "pool", "r", "p");
	mb_ints(m, "kernel_shape", TS_SHAPE(2, 2));
	mb_ints(m, "strides", TS_SHAPE(2, 2));
	mb_node(m, "AveragePool", "avg", "p", "a");
	mb_ints(m, "kernel_shape", TS_SHAPE(3, 3));
	mb_ints(m, "pads", TS_SHAPE(1, 1, 1, 1));
	mb_int(m, "count_include_pad", 1);
	mb_node(m, "GlobalAveragePool", "gap", "a", "gp");
	mb_node(m, "Flatten", "flat", "gp", "f");
	mb_node(m, "Gemm", "fc", "f,fc_w,fc_b", "logits");
	mb_int(m, "transB", 1);
	mb_float(m, "alpha", 0.5f);
	mb_node(m, "Softmax", "softmax", "logits", "prob");
	mb_output(m, "prob");
	mb_output(m, "a");

	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = mb_load(ctx, m);
	tu_nonnull(ctx, g);
	ck_assert_int_eq(ts_graph_num_inputs(g), 1);
	ck_assert_int_eq(ts_graph_num_outputs(g), 2);
	ck_assert_int_eq(ts_graph_num_nodes(g), 9);
	assert_shape(g, ts_graph_input_value(g, 0), TS_SHAPE(1, 3, 8, 8));
	assert_shape(g, ts_graph_output_value(g, 0), TS_SHAPE(1, 3));
	assert_shape(g, ts_graph_output_value(g, 1), TS_SHAPE(1, 4, 4, 4));
	ck_assert_str_eq(ts_graph_value_name(g, ts_graph_output_value(g, 0)), "prob");
	ck_assert_str_eq(ts_graph_value_name(g, ts_graph_input_value(g, 0)), "image");
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

static float ln[2][8], w_mm[8 * 8], b_mm[8], pow_e[1] = {2.0f}, clip_hi[1] = {3.0f},
	ratio[1] = {0.1f};

/* A transformer-like block: Constant nodes (int64 shape, scalars), the
 * elementwise operators, Reshape, Transpose, Concat, Dropout and Clip with
 * constant operands and left-out inputs. */
START_TEST(transformer_shapes)
{
	fill(ln[0], 16, 6);
	fill(w_mm, 64, 7);
	fill(b_mm, 8, 8);
	mb *m = mb_new(21);
	m->opset[0].domain = mb_str(m, "ai.onnx");
	mb_input(m, "x", TS_SHAPE(2, 5, 8));
	mb_init(m, "gamma", TS_SHAPE(8), ln[0], true);
	mb_init(m, "beta", TS_SHAPE(8), ln[1], false);
	mb_init(m, "w", TS_SHAPE(8, 8), w_mm, true);
	mb_init(m, "bias", TS_SHAPE(8), b_mm, false);
	mb_init(m, "e", 0, NULL, pow_e, true);
	mb_init(m, "hi", 0, NULL, clip_hi, false);
	mb_init(m, "ratio", 0, NULL, ratio, true);
	TesseraOnnx__TensorProto *off = mb_tensor(m, NULL, TESSERA_ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, 0, NULL);
	static int32_t no[1] = {0};
	off->n_int32_data = 1;
	off->int32_data = no;
	static const int64_t target[2] = {2, -1};
	TesseraOnnx__TensorProto *shape = mb_tensor(m, NULL, TESSERA_ONNX__TENSOR_PROTO__DATA_TYPE__INT64, TS_SHAPE(2));
	shape->has_raw_data = 1;
	shape->raw_data.len = sizeof(target);
	shape->raw_data.data = (uint8_t *)target;

	mb_node(m, "LayerNormalization", "ln", "x,gamma,beta", "l");
	mb_float(m, "epsilon", 1e-6f);
	mb_int(m, "axis", -1);
	mb_node(m, "MatMul", "mm", "l,w", "h");
	mb_node(m, "Add", "add", "h,bias", "hb");
	mb_node(m, "Gelu", "gelu", "hb", "ge");
	mb_string(m, "approximate", "tanh");
	mb_node(m, "Pow", "pow", "ge,e", "sq");
	mb_node(m, "Sqrt", "sqrt", "sq", "rt");
	mb_node(m, "Sub", "sub", "rt,hb", "d1");
	mb_node(m, "Mul", "mul", "d1,d1", "d2");
	mb_node(m, "Constant", "two", "", "two_v");
	mb_float(m, "value_float", 2.0f);
	mb_node(m, "Div", "div", "d2,two_v", "d3");
	mb_node(m, "Sigmoid", "sig", "d3", "s1");
	mb_node(m, "Tanh", "tanh", "s1", "s2");
	mb_node(m, "Erf", "erf", "s2", "s3");
	mb_node(m, "Exp", "exp", "s3", "s4");
	mb_node(m, "Neg", "neg", "s4", "s5");
	mb_node(m, "Identity", "id", "s5", "s6");
	mb_node(m, "Constant", "train", "", "training");
	mb_tensor_attr(m, "value", off);
	mb_node(m, "Dropout", "drop", "s6,ratio,training", "s7,mask");
	mb_node(m, "Clip", "clip", "s7,,hi", "s8");
	mb_node(m, "Transpose", "tr", "s8", "t");
	mb_ints(m, "perm", TS_SHAPE(0, 2, 1));
	mb_node(m, "Constant", "shape", "", "target");
	mb_tensor_attr(m, "value", shape);
	mb_node(m, "Reshape", "flat", "t,target", "flat");
	mb_node(m, "Concat", "cat", "flat,flat", "cat");
	mb_int(m, "axis", 1);
	mb_node(m, "Softmax", "sm", "cat", "out");
	mb_output(m, "out");
	mb_output(m, "t");

	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = mb_load(ctx, m);
	tu_nonnull(ctx, g);
	ck_assert_int_eq(ts_graph_num_inputs(g), 1);
	ck_assert_int_eq(ts_graph_num_outputs(g), 2);
	assert_shape(g, ts_graph_output_value(g, 0), TS_SHAPE(2, 80));
	assert_shape(g, ts_graph_output_value(g, 1), TS_SHAPE(2, 8, 5));
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

/* Opset 11: Clip's bounds as constants, Softmax over the last axis only,
 * Dropout without training_mode, Reshape's shape an initializer. */
START_TEST(opset11)
{
	static float lo[1] = {-1.0f};
	static const int64_t target[3] = {0, 2, 2};
	mb *m = mb_new(11);
	mb_input(m, "x", TS_SHAPE(3, 4));
	mb_init(m, "lo", 0, NULL, lo, false);
	mb_init_i64(m, "target", 3, target);
	mb_node(m, "Clip", "clip", "x,lo", "c");
	mb_node(m, "Dropout", "drop", "c", "d");
	mb_float(m, "ratio", 0.25f);
	mb_node(m, "Softmax", "sm", "d", "s");
	mb_int(m, "axis", 1);
	mb_node(m, "Reshape", "rs", "s,target", "y");
	mb_output(m, "y");
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = mb_load(ctx, m);
	tu_nonnull(ctx, g);
	assert_shape(g, ts_graph_output_value(g, 0), TS_SHAPE(3, 2, 2));
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

/* y = x * w, w an initializer [4] listed among the graph inputs too, its
 * input declared with shape wshape (*wi, to change before loading). */
static mb *mul_listed_weight(int wn, const int64_t *wshape, TesseraOnnx__ValueInfoProto **wi)
{
	static float w[4] = {1, 2, 3, 4};
	mb *m = mb_new(13);
	mb_input(m, "x", TS_SHAPE(1, 4));
	*wi = mb_input(m, "w", wn, wshape);
	mb_init(m, "w", TS_SHAPE(4), w, false);
	mb_node(m, "Mul", "mul", "x,w", "y");
	mb_output(m, "y");
	return m;
}

/* The IR 3 convention: weights listed among the graph inputs too.  The
 * input's declared element type, rank and fixed extents must agree with
 * the initializer (a disagreeing one was read as the initializer,
 * silently); a symbolic extent agrees. */
START_TEST(initializer_listed_as_input)
{
	TesseraOnnx__ValueInfoProto *wi;
	for (int symbolic = 0; symbolic < 2; symbolic++) {
		mb *m = mul_listed_weight(TS_SHAPE(4), &wi);
		if (symbolic) {
			TesseraOnnx__TensorShapeProto__Dimension *d = wi->type->tensor_type->shape->dim[0];
			d->value_case = TESSERA_ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
			d->dim_param = mb_str(m, "n");
		}
		ts_ctx *ctx = ts_ctx_new();
		ts_graph *g = mb_load(ctx, m);
		tu_nonnull(ctx, g);
		ck_assert_int_eq(ts_graph_num_inputs(g), 1);
		ts_graph_free(g);
		ts_ctx_free(ctx);
	}
	refused(mul_listed_weight(TS_SHAPE(2, 2), &wi),
		"graph input 'w' declares the shape [2, 2], its initializer [4]");
	refused(mul_listed_weight(TS_SHAPE(5), &wi), "graph input 'w' declares the shape [5], its initializer [4]");
	mb *m = mul_listed_weight(TS_SHAPE(5, 3), &wi);
	TesseraOnnx__TensorShapeProto__Dimension *d = wi->type->tensor_type->shape->dim[1];
	d->value_case = TESSERA_ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
	d->dim_param = mb_str(m, "n");
	refused(m, "graph input 'w' declares the shape [5, ?], its initializer [4]");
	m = mul_listed_weight(TS_SHAPE(4), &wi);
	wi->type->tensor_type->elem_type = TESSERA_ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
	refused(m, "graph input 'w' has element type INT64, its initializer FLOAT");
}
END_TEST

/* A graph output may be a graph input or a constant as well as a node's. */
START_TEST(outputs_of_every_kind)
{
	static float w[4] = {1, 2, 3, 4};
	mb *m = mb_new(13);
	mb_input(m, "x", TS_SHAPE(1, 4));
	mb_init(m, "w", TS_SHAPE(4), w, true);
	mb_node(m, "Add", NULL, "x,w", "y");
	mb_output(m, "y");
	mb_output(m, "x");
	mb_output(m, "w");
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = mb_load(ctx, m);
	tu_nonnull(ctx, g);
	ck_assert_int_eq(ts_graph_num_outputs(g), 3);
	assert_shape(g, ts_graph_output_value(g, 2), TS_SHAPE(4));
	ck_assert_str_eq(ts_graph_value_name(g, ts_graph_output_value(g, 0)), "y");
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

/* Thousands of values: the name table keeps the import linear. */
START_TEST(long_chain)
{
	mb *m = mb_new(17);
	char in[32], out[32];
	mb_input(m, "v0", TS_SHAPE(2, 3));
	for (int i = 0; i < MB_NODES; i++) {
		snprintf(in, sizeof(in), "v%d", i);
		snprintf(out, sizeof(out), "v%d", i + 1);
		mb_node(m, i % 2 ? "Relu" : "Neg", NULL, in, out);
	}
	mb_output(m, out);
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = mb_load(ctx, m);
	tu_nonnull(ctx, g);
	ck_assert_int_eq(ts_graph_num_nodes(g), MB_NODES);
	assert_shape(g, ts_graph_output_value(g, 0), TS_SHAPE(2, 3));
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

/* ts_onnx_load reads a file; an error an earlier call left does not fail it. */
START_TEST(load_file)
{
	char path[] = "/tmp/tessera_onnx_XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	size_t size;
	uint8_t *buf = mb_pack(relu_model(13), &size);
	ck_assert_int_eq(write(fd, buf, size), (ssize_t)size);
	close(fd);
	free(buf);
	ts_ctx *ctx = ts_ctx_new();
	ts_error(ctx, TS_ERR_INVALID, "an earlier error");
	ts_graph *g = ts_onnx_load(ctx, path);
	tu_nonnull(ctx, g);
	ck_assert_int_eq(ts_last_status(ctx), TS_OK);
	ck_assert_int_eq(ts_graph_num_nodes(g), 1);
	ts_graph_free(g);
	/* an empty file */
	fd = open(path, O_WRONLY | O_TRUNC);
	ck_assert_int_ge(fd, 0);
	close(fd);
	FAILS_NULL(ctx, ts_onnx_load(ctx, path), "' is empty");
	unlink(path);
	FAILS_NULL(ctx, ts_onnx_load(ctx, path), "onnx: cannot open '/tmp/tessera_onnx_");
	tu_assert_error(ctx, "No such file or directory");
	FAILS_NULL(ctx, ts_onnx_load(ctx, NULL), "onnx: no file named");
	/* a device never ends; a file of 2 GiB (sparse here) is more than
	 * a protobuf message holds: both refused before reading them whole */
	FAILS_NULL(ctx, ts_onnx_load(ctx, "/dev/zero"), "onnx: '/dev/zero' is a device, not an ONNX model file");
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)1 << 31), 0);
	close(fd);
	FAILS_NULL(ctx, ts_onnx_load(ctx, path), "' is larger than 2 GiB, more than a protobuf message (an ONNX model) can hold");
	unlink(path);
	ck_assert_ptr_null(ts_onnx_load(NULL, path));
	ts_ctx_free(ctx);
}
END_TEST

/* ---- imported models that run ------------------------------------------------------- */

/* Compiles g, runs it on `in` (float32 of the graph's input shape) and
 * returns its output 0 (a new array). */
static ts_array *run1(ts_ctx *ctx, ts_graph *g, ts_array *in)
{
	int nd;
	int64_t s[TS_GRAPH_MAX_DIMS];
	ts_graph_exec *e = ts_graph_compile(g, NULL);
	tu_nonnull(ctx, e);
	ck_assert(ts_graph_value_shape(g, ts_graph_output_value(g, 0), &nd, s));
	ts_array *out = ts_array_new(ctx, ts_float32, nd, s);
	tu_nonnull(ctx, out);
	tu_ok(ctx, ts_graph_run(e, 1, &in, 1, &out));
	ts_graph_exec_free(e);
	return out;
}

/* ONNX's pads [top, left, bottom, right] on a Conv whose four pads all
 * differ, against a direct convolution. */
START_TEST(run_conv_pads)
{
	enum { C = 2, H = 5, W = 6, O = 3, K = 3, TOP = 1, LEFT = 0, BOTTOM = 2, RIGHT = 1 };
	enum { OH = H + TOP + BOTTOM - K + 1, OW = W + LEFT + RIGHT - K + 1 };
	static float w[O * C * K * K], b[O];
	fill(w, TS_COUNT_OF(w), 11);
	fill(b, O, 12);
	mb *m = mb_new(13);
	mb_input(m, "x", TS_SHAPE(1, C, H, W));
	mb_init(m, "w", TS_SHAPE(O, C, K, K), w, true);
	mb_init(m, "b", TS_SHAPE(O), b, false);
	mb_node(m, "Conv", "conv", "x,w,b", "y");
	mb_ints(m, "pads", TS_SHAPE(TOP, LEFT, BOTTOM, RIGHT));
	mb_output(m, "y");
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = mb_load(ctx, m);
	tu_nonnull(ctx, g);
	assert_shape(g, ts_graph_output_value(g, 0), TS_SHAPE(1, O, OH, OW));
	ts_array *x = ts_array_new(ctx, ts_float32, TS_SHAPE(1, C, H, W));
	ts_array_fill_random(x, 13, -1, 1);
	ts_array *y = run1(ctx, g, x), *want = ts_array_new(ctx, ts_float32, TS_SHAPE(1, O, OH, OW));
	const float *xd = x->data;
	float *wd = want->data;
	for (int o = 0; o < O; o++)
		for (int i = 0; i < OH; i++)
			for (int j = 0; j < OW; j++) {
				float acc = b[o];
				for (int c = 0; c < C; c++)
					for (int p = 0; p < K; p++)
						for (int q = 0; q < K; q++) {
							int r = i + p - TOP, t = j + q - LEFT;
							if (r >= 0 && r < H && t >= 0 && t < W)
								acc += xd[(c * H + r) * W + t] * w[((o * C + c) * K + p) * K + q];
						}
				wd[(o * OH + i) * OW + j] = acc;
			}
	tu_assert_close(y, want, 1e-5, 1e-5);
	ts_array_free(x);
	ts_array_free(y);
	ts_array_free(want);
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

/* Gemm's alpha, beta and transB, a weight in raw_data and one in
 * float_data, and Clip's bounds from Constant nodes. */
START_TEST(run_gemm_clip)
{
	enum { M = 3, K = 5, N = 4 };
	static float bt[N * K], c[N];
	fill(bt, TS_COUNT_OF(bt), 21);
	fill(c, N, 22);
	mb *m = mb_new(13);
	mb_input(m, "x", TS_SHAPE(M, K));
	mb_init(m, "bt", TS_SHAPE(N, K), bt, true);
	mb_init(m, "c", TS_SHAPE(N), c, false);
	mb_node(m, "Gemm", "fc", "x,bt,c", "h");
	mb_int(m, "transB", 1);
	mb_float(m, "alpha", 0.5f);
	mb_float(m, "beta", 2.0f);
	mb_node(m, "Constant", "lo", "", "lo");
	mb_float(m, "value_float", -0.25f);
	mb_node(m, "Constant", "hi", "", "hi");
	mb_float(m, "value_float", 0.75f);
	mb_node(m, "Clip", "clip", "h,lo,hi", "y");
	mb_output(m, "y");
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = mb_load(ctx, m);
	tu_nonnull(ctx, g);
	ts_array *x = ts_array_new(ctx, ts_float32, TS_SHAPE(M, K));
	ts_array_fill_random(x, 23, -1, 1);
	ts_array *y = run1(ctx, g, x), *want = ts_array_new(ctx, ts_float32, TS_SHAPE(M, N));
	const float *xd = x->data;
	float *wd = want->data;
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			float acc = 0;
			for (int k = 0; k < K; k++)
				acc += xd[i * K + k] * bt[j * K + k];
			wd[i * N + j] = fminf(fmaxf(0.5f * acc + 2.0f * c[j], -0.25f), 0.75f);
		}
	tu_assert_close(y, want, 1e-5, 1e-5);
	ts_array_free(x);
	ts_array_free(y);
	ts_array_free(want);
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

/* ---- files that are not models ---------------------------------------------------- */

START_TEST(not_a_model)
{
	ts_ctx *ctx = ts_ctx_new();
	static const uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x00, 0x12};
	FAILS_NULL(ctx, ts_onnx_load_bytes(ctx, garbage, sizeof(garbage), "garbage.onnx"),
		   "onnx: garbage.onnx: not an ONNX model: the protobuf does not parse");
	size_t size;
	uint8_t *buf = mb_pack(relu_model(13), &size);
	FAILS_NULL(ctx, ts_onnx_load_bytes(ctx, buf, size / 2, "half.onnx"), "onnx: half.onnx: not an ONNX model");
	FAILS_NULL(ctx, ts_onnx_load_bytes(ctx, buf, size - 1, "cut.onnx"), "onnx: cut.onnx: not an ONNX model");
	FAILS_NULL(ctx, ts_onnx_load_bytes(ctx, buf, 0, NULL), "onnx: no data (0 bytes)");
	FAILS_NULL(ctx, ts_onnx_load_bytes(ctx, NULL, 4, "x"), "onnx: x: no data");
	ck_assert_ptr_null(ts_onnx_load_bytes(NULL, buf, size, "x"));
	free(buf);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(no_graph)
{
	mb *m = relu_model(13);
	m->model.graph = NULL;
	refused(m, "the model has no graph");
}
END_TEST

START_TEST(no_outputs)
{
	mb *m = relu_model(13);
	m->graph.n_output = 0;
	refused(m, "the graph has no outputs");
}
END_TEST

/* ---- opsets and domains ---------------------------------------------------------- */

START_TEST(opset_out_of_range)
{
	refused(relu_model(10), "opset 10 of the default domain is not supported; tessera imports opsets 11 to 21");
	refused(relu_model(22), "opset 22 of the default domain is not supported");
	mb *m = relu_model(13);
	m->opset[0].domain = mb_str(m, "ai.onnx.ml");
	refused(m, "the model imports no opset of the default ONNX domain");
}
END_TEST

/* Another domain may be imported, but none of its operators used. */
START_TEST(foreign_domain)
{
	mb *m = relu_model(13);
	m->opset[1] = m->opset[0];
	m->opset[1].domain = mb_str(m, "com.microsoft");
	m->opset[1].version = 1;
	m->opsetp[1] = &m->opset[1];
	m->model.n_opset_import = 2;
	mb_node(m, "FusedConv", "fc", "y", "z");
	m->node[1].domain = mb_str(m, "com.microsoft");
	refused(m, "node 'fc' (op FusedConv): domain 'com.microsoft' is not supported");
}
END_TEST

START_TEST(unsupported_op)
{
	mb *m = relu_model(13);
	mb_node(m, "LSTM", "n7", "y", "z");
	refused(m, "onnx: test.onnx: node 'n7' (op LSTM) is not supported; tessera imports: Constant, Conv, Gemm, MatMul");
	m = relu_model(13);
	mb_node(m, "Resize", NULL, "y", "z");
	refused(m, "node #1 (op Resize) is not supported; tessera imports:");
}
END_TEST

/* ---- graph inputs -------------------------------------------------------------------- */

START_TEST(symbolic_dim)
{
	mb *m = relu_model(13);
	TesseraOnnx__TensorShapeProto__Dimension *d = &m->dim[0][0];
	d->value_case = TESSERA_ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
	d->dim_param = mb_str(m, "batch");
	refused(m, "input 'x' dimension 0 is symbolic ('batch'); tessera needs every extent fixed");
	m = relu_model(13);
	m->dim[0][1].value_case = TESSERA_ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE__NOT_SET;
	refused(m, "input 'x' dimension 1 is unknown");
	m = relu_model(13);
	m->dim[0][1].dim_value = 0;
	refused(m, "input 'x' dimension 1 is 0; tessera has no empty tensors");
	m = relu_model(13);
	m->dim[0][0].dim_value = -1;
	refused(m, "input 'x' dimension 0 is -1; an extent is positive (an unknown one is a dim_param)");
	m = relu_model(13);
	m->ttype[0].shape = NULL;
	refused(m, "input 'x' has no shape");
}
END_TEST

START_TEST(input_not_float)
{
	mb *m = relu_model(13);
	m->ttype[0].elem_type = TESSERA_ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
	refused(m, "input 'x' has element type INT64; tessera takes FLOAT inputs only");
	m = relu_model(13);
	m->type[0].value_case = TESSERA_ONNX__TYPE_PROTO__VALUE__NOT_SET;
	refused(m, "input 'x' is not a tensor");
}
END_TEST

/* ---- order and names ------------------------------------------------------------------ */

START_TEST(undefined_input)
{
	mb *m = relu_model(13);
	mb_node(m, "Add", "add", "y,z", "s");
	refused(m, "node 'add' (op Add): input 'z' is not defined by a graph input, an initializer or an earlier node");
	/* a node before the one that defines its input */
	m = mb_new(13);
	mb_input(m, "x", TS_SHAPE(4));
	mb_node(m, "Relu", "late", "early_out", "y");
	mb_node(m, "Neg", "early", "x", "early_out");
	mb_output(m, "y");
	refused(m, "node 'late' (op Relu): input 'early_out' is not defined");
}
END_TEST

/* An output tessera does not compute (Dropout's mask) is named as such
 * when read; an attribute given twice is refused (the first is not taken
 * silently); a node given more inputs than it takes says how many. */
START_TEST(uncomputed_and_twice)
{
	mb *m = relu_model(13);
	mb_node(m, "Dropout", "drop", "y", "z,mask");
	mb_node(m, "Add", "add", "z,mask", "s");
	mb_output(m, "s");
	refused(m, "node 'add' (op Add): input 'mask' is output 1 of node 'drop' (op Dropout), which "
		   "tessera does not compute (only its first output)");
	m = relu_model(13);
	mb_node(m, "Dropout", "", "y", "z,mask");
	mb_output(m, "mask");
	refused(m, "onnx: test.onnx: graph output 'mask' is output 1 of node #1 (op Dropout), which");
	/* of a constant, Dropout is that constant; its mask is still named */
	static float k4[4];
	m = relu_model(13);
	mb_init(m, "k", TS_SHAPE(4), k4, false);
	mb_node(m, "Dropout", "dk", "k", "kz,kmask");
	mb_output(m, "kmask");
	refused(m, "graph output 'kmask' is output 1 of node 'dk' (op Dropout)");
	m = relu_model(13);
	mb_node(m, "Softmax", "sm", "y", "z");
	mb_int(m, "axis", -1);
	mb_int(m, "axis", 0);
	mb_output(m, "z");
	refused(m, "node 'sm' (op Softmax): attribute 'axis' is given twice");
	m = relu_model(13);
	mb_node(m, "Relu", "r2", "y,y", "z");
	mb_output(m, "z");
	refused(m, "node 'r2' (op Relu): takes 1 input, not 2");
	/* Concat takes any number of inputs; past tessera's 16 per node the
	 * refusal says whose limit it is */
	m = relu_model(13);
	mb_node(m, "Concat", "cat", "y,y,y,y,y,y,y,y,y,y,y,y,y,y,y,y,y", "z");
	mb_int(m, "axis", 1);
	mb_output(m, "z");
	refused(m, "node 'cat' (op Concat): has 17 inputs; tessera takes at most 16 per node");
}
END_TEST

START_TEST(defined_twice)
{
	mb *m = relu_model(13);
	mb_node(m, "Neg", "neg", "x", "y");
	refused(m, "node 'neg' (op Neg): value 'y' is defined twice");
	static float w[4];
	m = relu_model(13);
	mb_init(m, "w", TS_SHAPE(4), w, false);
	mb_init(m, "w", TS_SHAPE(4), w, false);
	refused(m, "initializer 'w' is defined twice");
	m = relu_model(13);
	mb_output(m, "nowhere");
	refused(m, "graph output 'nowhere' is not computed by any node");
	m = relu_model(13);
	mb_output(m, "y");
	refused(m, "onnx: test.onnx: graph output 'y' is listed twice; tessera takes each output once");
}
END_TEST

/* ---- tensors -------------------------------------------------------------------------- */

static float w4[4] = {0.5f, -1.0f, 2.0f, 0.25f};

static mb *add_const_model(void)
{
	mb *m = mb_new(13);
	mb_input(m, "x", TS_SHAPE(1, 4));
	mb_node(m, "Add", "add", "x,w", "y");
	mb_output(m, "y");
	return m;
}

START_TEST(external_data)
{
	mb *m = add_const_model();
	TesseraOnnx__TensorProto *t = mb_tensor(m, "w", TESSERA_ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, TS_SHAPE(4));
	m->initp[m->graph.n_initializer++] = t;
	t->has_data_location = 1;
	t->data_location = TESSERA_ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
	tessera_onnx__string_string_entry_proto__init(&m->ext);
	m->ext.key = mb_str(m, "location");
	m->ext.value = mb_str(m, "weights.bin");
	m->extp = &m->ext;
	t->external_data = &m->extp;
	t->n_external_data = 1;
	refused(m, "node 'add' (op Add): tensor 'w' keeps its data in an external file ('weights.bin')");
}
END_TEST

START_TEST(bad_initializer_size)
{
	mb *m = add_const_model();
	mb_init(m, "w", TS_SHAPE(4), w4, true)->raw_data.len = 12;
	refused(m, "tensor 'w' holds 12 bytes of raw_data; FLOAT [4] needs 16");
	m = add_const_model();
	mb_init(m, "w", TS_SHAPE(4), w4, false)->n_float_data = 3;
	refused(m, "tensor 'w' holds 3 values; FLOAT [4] needs 4");
	m = add_const_model();
	TesseraOnnx__TensorProto *t = mb_init(m, "w", TS_SHAPE(4), w4, true);
	t->n_float_data = 4;
	t->float_data = w4;
	refused(m, "tensor 'w' has both raw_data and typed data");
	m = add_const_model();
	mb_init(m, "w", TS_SHAPE(2, -2), w4, false)->n_float_data = 4;
	refused(m, "tensor 'w' has extent -2 in dimension 1");
}
END_TEST

START_TEST(bad_data_type)
{
	static double d4[4] = {1, 2, 3, 4};
	mb *m = add_const_model();
	TesseraOnnx__TensorProto *t = mb_tensor(m, "w", TESSERA_ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE, TS_SHAPE(4));
	m->initp[m->graph.n_initializer++] = t;
	t->n_double_data = 4;
	t->double_data = d4;
	refused(m, "node 'add' (op Add): tensor 'w' has data type DOUBLE; tessera reads FLOAT and INT64 tensors");
	static const int64_t i4[4] = {1, 2, 3, 4};
	m = add_const_model();
	mb_init_i64(m, "w", 4, i4);
	refused(m, "node 'add' (op Add): 'w' is a tensor of INT64; tessera computes in float32");
}
END_TEST

/* A sparse initializer is named as such where it is used, not taken for
 * an undefined value. */
START_TEST(sparse_initializer)
{
	for (int as_output = 0; as_output < 2; as_output++) {
		mb *m = add_const_model();
		tessera_onnx__sparse_tensor_proto__init(&m->sparse);
		m->sparse.values = mb_tensor(m, "w", TESSERA_ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, TS_SHAPE(1));
		m->sparsep = &m->sparse;
		m->graph.sparse_initializer = &m->sparsep;
		m->graph.n_sparse_initializer = 1;
		if (as_output) {
			mb_output(m, "w");
			refused(m, "'w' is a sparse initializer; tessera reads dense initializers only");
		} else {
			refused(m, "node 'add' (op Add): 'w' is a sparse initializer; tessera reads dense initializers only");
		}
	}
}
END_TEST

/* Both ways of storing a weight give the same graph. */
START_TEST(raw_and_float_data_agree)
{
	int64_t s[TS_GRAPH_MAX_DIMS];
	int nd;
	for (int raw = 0; raw < 2; raw++) {
		mb *m = add_const_model();
		mb_init(m, "w", TS_SHAPE(4), w4, raw);
		ts_ctx *ctx = ts_ctx_new();
		ts_graph *g = mb_load(ctx, m);
		tu_nonnull(ctx, g);
		ck_assert(ts_graph_value_shape(g, ts_graph_output_value(g, 0), &nd, s));
		assert_shape(g, ts_graph_output_value(g, 0), TS_SHAPE(1, 4));
		ts_graph_free(g);
		ts_ctx_free(ctx);
	}
}
END_TEST

/* ---- attributes ---------------------------------------------------------------------- */

static float w_c[2 * 1 * 3 * 3];

static mb *conv_model(void)
{
	mb *m = mb_new(13);
	mb_input(m, "x", TS_SHAPE(1, 1, 6, 6));
	mb_init(m, "w", TS_SHAPE(2, 1, 3, 3), w_c, true);
	mb_node(m, "Conv", "conv", "x,w", "y");
	mb_output(m, "y");
	return m;
}

START_TEST(conv_attributes)
{
	mb *m = conv_model();
	mb_string(m, "auto_pad", "SAME_UPPER");
	refused(m, "node 'conv' (op Conv): auto_pad 'SAME_UPPER' is not supported");
	m = conv_model();
	mb_ints(m, "strides", TS_SHAPE(1, 1, 1));
	refused(m, "attribute 'strides' has 3 values; tessera imports 2-D images only (2 values)");
	m = conv_model();
	mb_int(m, "strides", 2);
	refused(m, "attribute 'strides' is INT, not INTS");
	m = conv_model();
	mb_ints(m, "kernel_shape", TS_SHAPE(5, 5));
	refused(m, "kernel_shape [5, 5] differs from the weights' [3, 3]");
	m = conv_model();
	mb_int(m, "groups", 2);
	refused(m, "node 'conv' (op Conv): attribute 'groups' is not supported (tessera reads: auto_pad dilations group");
	/* VALID: no padding, the output shrinks */
	m = conv_model();
	mb_string(m, "auto_pad", "VALID");
	mb_ints(m, "dilations", TS_SHAPE(1, 1));
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = mb_load(ctx, m);
	tu_nonnull(ctx, g);
	assert_shape(g, ts_graph_output_value(g, 0), TS_SHAPE(1, 2, 4, 4));
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(pool_attributes)
{
	mb *m = relu_model(13);
	mb_node(m, "MaxPool", "mp", "y", "p");
	mb_ints(m, "kernel_shape", TS_SHAPE(2, 2));
	mb_int(m, "ceil_mode", 1);
	refused(m, "node 'mp' (op MaxPool): ceil_mode=1 is not supported");
	m = relu_model(13);
	mb_node(m, "AveragePool", "ap", "y", "p");
	refused(m, "node 'ap' (op AveragePool): kernel_shape is missing");
	m = relu_model(13);
	mb_node(m, "MaxPool", "mp", "y", "p,indices");
	mb_ints(m, "kernel_shape", TS_SHAPE(2, 2));
	refused(m, "output 1 ('indices') is not supported; tessera computes only the first output of MaxPool");
	m = relu_model(13);
	mb_node(m, "MaxPool", "mp", "y", "p");
	mb_ints(m, "kernel_shape", TS_SHAPE(2, 2));
	mb_ints(m, "dilations", TS_SHAPE(2, 2));
	refused(m, "dilations [2, 2] are not supported");
	m = relu_model(13);
	mb_node(m, "AveragePool", "ap", "y", "p");
	mb_ints(m, "kernel_shape", TS_SHAPE(2, 2));
	mb_int(m, "storage_order", 1);
	refused(m, "attribute 'storage_order' is not supported");
}
END_TEST

START_TEST(reshape_attributes)
{
	static const int64_t target[2] = {2, 2}, zero[2] = {0, 2};
	/* allowzero=1 means the same as 0 for a shape without a 0 */
	mb *m = relu_model(13);
	mb_init_i64(m, "shape", 2, target);
	mb_node(m, "Reshape", "rs", "y,shape", "z");
	mb_int(m, "allowzero", 1);
	mb_output(m, "z");
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = mb_load(ctx, m);
	tu_nonnull(ctx, g);
	assert_shape(g, ts_graph_output_value(g, 1), 2, target);
	ts_graph_free(g);
	ts_ctx_free(ctx);
	m = relu_model(13);
	mb_init_i64(m, "shape", 2, zero);
	mb_node(m, "Reshape", "rs", "y,shape", "z");
	mb_int(m, "allowzero", 1);
	refused(m, "node 'rs' (op Reshape): allowzero=1 with a 0 in the shape makes an empty dimension");
	m = relu_model(13);
	mb_node(m, "Reshape", "rs", "y,x", "z");
	refused(m, "node 'rs' (op Reshape): its shape 'x' is computed by the graph");
	m = relu_model(13);
	mb_init(m, "fshape", TS_SHAPE(2), w4, false);
	mb_node(m, "Reshape", "rs", "y,fshape", "z");
	refused(m, "its shape 'fshape' is FLOAT, not INT64");
	/* a rank-0 shape says so, not "1 entries" */
	m = relu_model(13);
	TesseraOnnx__TensorProto *t0 = mb_init_i64(m, "shape", 1, target);
	t0->n_dims = 0;
	mb_node(m, "Reshape", "rs", "y,shape", "z");
	refused(m, "node 'rs' (op Reshape): its shape 'shape' has 0 dimensions; a shape is 1-D");
	/* the shape is checked against the input by the graph */
	m = relu_model(13);
	static const int64_t bad[2] = {3, 3};
	mb_init_i64(m, "shape", 2, bad);
	mb_node(m, "Reshape", "rs", "y,shape", "z");
	refused(m, "rs");
}
END_TEST

START_TEST(norm_attributes)
{
	static float p4[4] = {1, 1, 1, 1};
	mb *m = mb_new(15);
	mb_input(m, "x", TS_SHAPE(1, 4, 2, 2));
	for (int i = 0; i < 4; i++) {
		static const char *const names[] = {"s", "b", "m", "v"};
		mb_init(m, names[i], TS_SHAPE(4), p4, false);
	}
	mb_node(m, "BatchNormalization", "bn", "x,s,b,m,v", "y,running_mean,running_var");
	mb_int(m, "training_mode", 0);
	mb_output(m, "y");
	refused(m, "node 'bn' (op BatchNormalization): output 1 ('running_mean') is not supported");
	m = mb_new(15);
	mb_input(m, "x", TS_SHAPE(1, 4, 2, 2));
	for (int i = 0; i < 4; i++) {
		static const char *const names[] = {"s", "b", "m", "v"};
		mb_init(m, names[i], TS_SHAPE(4), p4, false);
	}
	mb_node(m, "BatchNormalization", "bn", "x,s,b,m,v", "y");
	mb_int(m, "training_mode", 1);
	mb_output(m, "y");
	refused(m, "training_mode=1 is not supported");
	/* statistics computed by the graph: legal ONNX, refused at import */
	m = mb_new(15);
	mb_input(m, "x", TS_SHAPE(1, 4, 2, 2));
	for (int i = 0; i < 4; i++) {
		static const char *const names[] = {"s", "b", "m0", "v"};
		mb_init(m, names[i], TS_SHAPE(4), p4, false);
	}
	mb_node(m, "Exp", "exp", "m0", "m");
	mb_node(m, "BatchNormalization", "bn", "x,s,b,m,v", "y");
	mb_output(m, "y");
	refused(m, "node 'bn' (op BatchNormalization): its input_mean 'm' is computed by the graph; tessera "
		   "takes batch normalization with constant parameters and statistics only");
}
END_TEST

START_TEST(other_attributes)
{
	mb *m = relu_model(20);
	mb_node(m, "Gelu", "g", "y", "z");
	mb_string(m, "approximate", "erf");
	refused(m, "node 'g' (op Gelu): approximate 'erf' is not supported");
	m = relu_model(17);
	mb_node(m, "Gelu", "g", "y", "z");
	refused(m, "node 'g' (op Gelu): Gelu is an operator of opset 20 on; the model imports opset 17");
	m = relu_model(13);
	mb_node(m, "Concat", "cat", "y,y", "z");
	refused(m, "node 'cat' (op Concat): the axis attribute is missing");
	m = relu_model(13);
	mb_node(m, "Gemm", "fc", "y", "z");
	refused(m, "node 'fc' (op Gemm): takes 2 to 3 inputs, not 1");
	m = relu_model(13);
	mb_float(m, "alpha", 0.1f);
	refused(m, "node 'r' (op Relu): attribute 'alpha' is not supported");
	m = relu_model(13);
	mb_node(m, "Transpose", "t", "y", "z");
	mb_ints(m, "perm", TS_SHAPE(0, 1, 2, 3, 4, 5, 6));
	refused(m, "attribute 'perm' has 7 values; tessera handles at most 6");
	/* an empty perm is not "no perm" (which reverses the axes) */
	m = relu_model(13);
	mb_node(m, "Transpose", "t", "y", "z");
	mb_ints(m, "perm", 0, NULL);
	refused(m, "node 't' (op Transpose): attribute 'perm' is empty; it must list every axis of the input");
	m = relu_model(13);
	mb_node(m, "Exp", "e", "", "z");
	refused(m, "node 'e' (op Exp): takes 1 input, not 0");
}
END_TEST

/* Opset 11 Softmax flattens the axes from `axis` on. */
START_TEST(softmax_legacy_axis)
{
	mb *m = mb_new(11);
	mb_input(m, "x", TS_SHAPE(1, 3, 2, 2));
	mb_node(m, "Softmax", "sm", "x", "y");
	mb_output(m, "y");
	refused(m, "node 'sm' (op Softmax): opset 11 Softmax over axes 1.. of a 4-D input taken together is not supported");
	/* an axis past the input's is the model's mistake, not a limit */
	m = mb_new(11);
	mb_input(m, "x", TS_SHAPE(1, 3, 2, 2));
	mb_node(m, "Softmax", "sm", "x", "y");
	mb_int(m, "axis", 5);
	mb_output(m, "y");
	ts_ctx *ctx = ts_ctx_new();
	ck_assert_ptr_null(mb_load(ctx, m));
	tu_assert_error(ctx, "node 'sm' (op Softmax): axis 5 is out of range for a 4-D input");
	ck_assert_int_eq(ts_last_status(ctx), TS_ERR_INVALID);
	/* a legal axis tessera does not normalize over is a limit */
	m = mb_new(13);
	mb_input(m, "x", TS_SHAPE(2, 3));
	mb_node(m, "Softmax", "sm", "x", "y");
	mb_int(m, "axis", 0);
	mb_output(m, "y");
	ck_assert_ptr_null(mb_load(ctx, m));
	tu_assert_error(ctx, "node 'sm' (Softmax): only the last axis is supported (axis 0 of x[2, 3])");
	ck_assert_int_eq(ts_last_status(ctx), TS_ERR_UNSUPPORTED);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(dropout_training)
{
	static int32_t yes[1] = {1};
	mb *m = relu_model(13);
	TesseraOnnx__TensorProto *t = mb_tensor(m, "train", TESSERA_ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, 0, NULL);
	t->n_int32_data = 1;
	t->int32_data = yes;
	m->initp[m->graph.n_initializer++] = t;
	mb_node(m, "Dropout", "drop", "y,,train", "z");
	refused(m, "node 'drop' (op Dropout): training_mode is true; tessera imports inference models only");
	m = relu_model(13);
	mb_node(m, "Dropout", "drop", "y,,x", "z");
	refused(m, "its training_mode 'x' is computed by the graph");
}
END_TEST

/* Dropout's ratio is an attribute before opset 12 and an input (a float
 * scalar) from it on, beside a seed attribute. */
START_TEST(dropout_ratio)
{
	mb *m = relu_model(13);
	mb_node(m, "Dropout", "drop", "y", "z");
	mb_float(m, "ratio", 0.25f);
	refused(m, "node 'drop' (op Dropout): attribute 'ratio' is not an attribute of Dropout in opset 13 "
		   "(the ratio is its second input)");
	m = relu_model(11);
	mb_node(m, "Dropout", "drop", "y", "z");
	mb_int(m, "seed", 3);
	refused(m, "node 'drop' (op Dropout): attribute 'seed' is not an attribute of Dropout in opset 11");
	static int64_t two[2] = {1, 2};
	m = relu_model(13);
	mb_init_i64(m, "r", 2, two);
	mb_node(m, "Dropout", "drop", "y,r", "z");
	refused(m, "node 'drop' (op Dropout): its ratio 'r' is INT64 [2]; the ratio is one float");
	static float halves[2] = {0.5f, 0.5f};
	m = relu_model(13);
	mb_init(m, "r", TS_SHAPE(2), halves, false);
	mb_node(m, "Dropout", "drop", "y,r", "z");
	refused(m, "its ratio 'r' is FLOAT [2]; the ratio is one float");
	/* a float scalar ratio and a seed: the identity */
	static float half[1] = {0.5f};
	m = relu_model(13);
	mb_init(m, "r", 0, NULL, half, false);
	mb_node(m, "Dropout", "drop", "y,r", "z");
	mb_int(m, "seed", 7);
	mb_output(m, "z");
	imported(m);
}
END_TEST

/* Float specials where ONNX defines the result: Clip without bounds takes
 * infinities to the largest floats, Neg(+0) is -0, and Pow(x, 0.5) is +0
 * at -0 and +inf at -inf (tessera computes it as a square root). */
START_TEST(run_float_specials)
{
	static float half[1] = {0.5f};
	mb *m = mb_new(13);
	mb_input(m, "x", TS_SHAPE(4));
	mb_init(m, "e", 0, NULL, half, false);
	mb_node(m, "Clip", "clip", "x", "c");
	mb_node(m, "Neg", "neg", "x", "n");
	mb_node(m, "Pow", "pow", "x,e", "p");
	mb_output(m, "c");
	mb_output(m, "n");
	mb_output(m, "p");
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = mb_load(ctx, m);
	tu_nonnull(ctx, g);
	ts_array *x = ts_array_new(ctx, ts_float32, TS_SHAPE(4)), *out[3];
	for (int i = 0; i < 3; i++)
		tu_nonnull(ctx, out[i] = ts_array_new(ctx, ts_float32, TS_SHAPE(4)));
	float *xd = x->data;
	xd[0] = -INFINITY, xd[1] = INFINITY, xd[2] = 0.0f, xd[3] = -0.0f;
	ts_graph_exec *e = ts_graph_compile(g, NULL);
	tu_nonnull(ctx, e);
	tu_ok(ctx, ts_graph_run(e, 1, &x, 3, out));
	const float *c = out[0]->data, *n = out[1]->data, *p = out[2]->data;
	ck_assert(c[0] == -FLT_MAX && c[1] == FLT_MAX && c[2] == 0.0f && signbit(c[3]));
	ck_assert(n[0] == INFINITY && n[1] == -INFINITY);
	ck_assert_msg(n[2] == 0.0f && signbit(n[2]) && !signbit(n[3]), "Neg(+0) = %g, Neg(-0) = %g", n[2], n[3]);
	ck_assert_msg(p[0] == INFINITY && p[1] == INFINITY, "Pow(-inf, 0.5) = %g", p[0]);
	ck_assert_msg(p[2] == 0.0f && !signbit(p[2]) && p[3] == 0.0f && !signbit(p[3]), "Pow(-0, 0.5) = %g",
		      p[3]);
	ts_graph_exec_free(e);
	for (int i = 0; i < 3; i++)
		ts_array_free(out[i]);
	ts_array_free(x);
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(clip_bounds)
{
	static float two[2] = {1, 2};
	mb *m = relu_model(13);
	mb_init(m, "lohi", TS_SHAPE(2), two, false);
	mb_node(m, "Clip", "clip", "y,lohi", "z");
	refused(m, "node 'clip' (op Clip): its min has 2 values, not one");
	m = relu_model(13);
	mb_node(m, "Clip", "clip", "y,,x", "z");
	refused(m, "its max 'x' is computed by the graph");
	/* the min and max attributes ended at opset 11 */
	m = relu_model(13);
	mb_node(m, "Clip", "clip", "y", "z");
	mb_float(m, "max", 0.5f);
	refused(m, "node 'clip' (op Clip): attribute 'max' is not supported");
	/* min above max is legal ONNX (every element becomes max): imported,
	 * and computed as such in test_mustfail_graph */
	static float lo[1] = {2}, hi[1] = {1};
	m = relu_model(13);
	mb_init(m, "lo", 0, NULL, lo, false);
	mb_init(m, "hi", 0, NULL, hi, true);
	mb_node(m, "Clip", "clip", "y,lo,hi", "z");
	mb_output(m, "z");
	imported(m);
}
END_TEST

START_TEST(constant_forms)
{
	mb *m = relu_model(13);
	mb_node(m, "Constant", "k", "", "kv");
	mb_string(m, "value_string", "hello");
	refused(m, "node 'k' (op Constant): attribute 'value_string' is not supported");
	m = relu_model(13);
	mb_node(m, "Constant", "k", "", "kv");
	refused(m, "node 'k' (op Constant): has 0 attributes; a Constant has one");
	m = relu_model(13);
	mb_node(m, "Constant", "k", "", "kv");
	mb_int(m, "value_floats", 3);
	refused(m, "attribute 'value_floats' is INT, not FLOATS");
	/* value_ints as a Reshape shape, through an Identity: a constant still */
	m = relu_model(13);
	mb_node(m, "Constant", "k", "", "kv");
	mb_ints(m, "value_ints", TS_SHAPE(2, 2));
	mb_node(m, "Identity", "kid", "kv", "kv2");
	mb_node(m, "Reshape", "rs", "y,kv2", "z");
	m->outp[0]->name = mb_str(m, "z");
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = mb_load(ctx, m);
	tu_nonnull(ctx, g);
	assert_shape(g, ts_graph_output_value(g, 0), TS_SHAPE(2, 2));
	ck_assert_int_eq(ts_graph_num_nodes(g), 2);
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("onnx");
	TCase *tc = tcase_create("import");
	tcase_add_test(tc, cnn_shapes);
	tcase_add_test(tc, transformer_shapes);
	tcase_add_test(tc, opset11);
	tcase_add_test(tc, initializer_listed_as_input);
	tcase_add_test(tc, outputs_of_every_kind);
	tcase_add_test(tc, long_chain);
	tcase_add_test(tc, load_file);
	tcase_add_test(tc, raw_and_float_data_agree);
	tcase_add_test(tc, run_conv_pads);
	tcase_add_test(tc, run_gemm_clip);
	tcase_add_test(tc, run_float_specials);
	suite_add_tcase(s, tc);
	TCase *bad = tcase_create("refused");
	tcase_add_test(bad, not_a_model);
	tcase_add_test(bad, no_graph);
	tcase_add_test(bad, no_outputs);
	tcase_add_test(bad, opset_out_of_range);
	tcase_add_test(bad, foreign_domain);
	tcase_add_test(bad, unsupported_op);
	tcase_add_test(bad, symbolic_dim);
	tcase_add_test(bad, input_not_float);
	tcase_add_test(bad, undefined_input);
	tcase_add_test(bad, defined_twice);
	tcase_add_test(bad, uncomputed_and_twice);
	tcase_add_test(bad, external_data);
	tcase_add_test(bad, bad_initializer_size);
	tcase_add_test(bad, bad_data_type);
	tcase_add_test(bad, sparse_initializer);
	tcase_add_test(bad, conv_attributes);
	tcase_add_test(bad, pool_attributes);
	tcase_add_test(bad, reshape_attributes);
	tcase_add_test(bad, norm_attributes);
	tcase_add_test(bad, other_attributes);
	tcase_add_test(bad, softmax_legacy_axis);
	tcase_add_test(bad, dropout_training);
	tcase_add_test(bad, dropout_ratio);
	tcase_add_test(bad, clip_bounds);
	tcase_add_test(bad, constant_forms);
	suite_add_tcase(s, bad);
	return tu_run_suite(s);
}

#endif /* TS_HAVE_PROTOBUF_C */
