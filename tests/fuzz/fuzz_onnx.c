/*
 * fuzz_onnx.c - libFuzzer harness for ONNX import (frontend/onnx.c) and, for
 * the models that import, the graph compiler and its kernels.
 *
 * The input is an .onnx file's bytes, read with ts_onnx_load_bytes.  A
 * refusal is part of the search: every one must leave a message that
 * starts with "onnx: ".  A model that imports and is small (at most
 * MAX_NODES nodes, no value of more than MAX_NUMEL elements, so that each
 * input costs milliseconds, not seconds) is compiled twice, as
 * ts_graph_compile does by default and with one kernel per node and no
 * layouts, and both are run on the same inputs; they must agree.  A compile
 * may refuse what the kernels do not support, with a message and a status
 * other than TS_ERR_INTERNAL.
 *
 * Byte-level mutations of a protobuf rarely make another valid model, so
 * most mutations here are made on the unpacked model (protobuf-c, the
 * schema of frontend/onnx.proto) and packed again: a node reads another
 * value or none, becomes another operator, gets an extreme attribute value
 * or loses one; nodes change places, or the last one goes; graph inputs
 * change extents or rank; outputs and initializers change names.  The inputs stay .onnx files, so a finding is
 * a model to open with any ONNX tool.
 *
 * A finding is a crash, a sanitizer report, a leak, a refusal without a
 * message, an internal error, a run that fails, or two runs that disagree:
 * the harness prints the graph and aborts.  The seed corpus
 * (tests/fuzz/corpus/fuzz_onnx) is made by tests/fuzz/onnx_seeds.py.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera.h"

#ifdef TS_HAVE_PROTOBUF_C
#include "onnx.pb-c.h"
#endif

#define MAX_NODES 20
#define MAX_NUMEL 100000
#define MAX_IO 24

typedef struct fz {
	ts_ctx *ctx;
	ts_graph *g;
	int nin, nout;
	ts_array *in[MAX_IO], *out[2][MAX_IO];
} fz;

static void finding(const fz *f, const char *what)
{
	fprintf(stderr, "fuzz_onnx: %s\n  error: %s\ngraph:\n", what, ts_last_error(f->ctx));
	if (f->g)
		ts_graph_print(stderr, f->g);
	abort();
}

/* Whether g is small enough to compile for every input. */
static bool small(const ts_graph *g)
{
	if (ts_graph_num_nodes(g) > MAX_NODES || ts_graph_num_inputs(g) > MAX_IO ||
	    ts_graph_num_outputs(g) > MAX_IO)
		return false;
	int nd;
	int64_t s[TS_GRAPH_MAX_DIMS];
	for (int v = 0; ts_graph_value_shape(g, v, &nd, s); v++) {
		int64_t n = 1;
		for (int d = 0; d < nd; d++) {
			if (s[d] > MAX_NUMEL || n * s[d] > MAX_NUMEL)
				return false;
			n *= s[d];
		}
	}
	return true;
}

/* Value v's shape as a new host array, or NULL. */
static ts_array *array_of(fz *f, int v)
{
	int nd = 0;
	int64_t s[TS_GRAPH_MAX_DIMS];
	if (!ts_graph_value_shape(f->g, v, &nd, s))
		finding(f, "an input or output of the graph has no shape");
	ts_array *a = ts_array_new(f->ctx, ts_float32, nd, s);
	if (!a)
		finding(f, "no memory for an array");
	return a;
}

static void make_arrays(fz *f)
{
	for (int i = 0; i < f->nin; i++) {
		f->in[i] = array_of(f, ts_graph_input_value(f->g, i));
		ts_array_fill_random(f->in[i], 17 + (uint64_t)i, -1.0, 1.0);
	}
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < f->nout; i++) {
			f->out[k][i] = array_of(f, ts_graph_output_value(f->g, i));
			ts_array_fill_random(f->out[k][i], 99, 1e6, 2e6);
		}
}

static void free_arrays(fz *f)
{
	for (int i = 0; i < f->nin; i++)
		ts_array_free(f->in[i]);
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < f->nout; i++)
			ts_array_free(f->out[k][i]);
}

/* Compiles with opts and runs into f->out[k]; false when the compile
 * refused the graph (with a message, not an internal error). */
static bool compile_run(fz *f, const ts_graph_opts *opts, int k)
{
	ts_clear_error(f->ctx);
	ts_graph_exec *e = ts_graph_compile(f->g, opts);
	if (!e) {
		if (ts_last_status(f->ctx) == TS_OK || !*ts_last_error(f->ctx))
			finding(f, "ts_graph_compile failed without an error");
		if (ts_last_status(f->ctx) == TS_ERR_INTERNAL)
			finding(f, "ts_graph_compile failed with an internal error");
		return false;
	}
	if (ts_graph_run(e, f->nin, f->in, f->nout, f->out[k]) != TS_OK)
		finding(f, "ts_graph_run failed");
	ts_graph_exec_free(e);
	return true;
}

/* The largest |a - b| over the elements finite in both, relative to the
 * largest |b| (at least 1). */
static void compare(fz *f)
{
	for (int i = 0; i < f->nout; i++) {
		const float *a = f->out[0][i]->data, *b = f->out[1][i]->data;
		double err = 0, scale = 1;
		for (int64_t j = 0; j < ts_array_numel(f->out[0][i]); j++) {
			if (!isfinite(a[j]) || !isfinite(b[j]))
				continue;
			err = fmax(err, fabs((double)a[j] - b[j]));
			scale = fmax(scale, fabs((double)b[j]));
		}
		if (err > 1e-2 * scale) {
			char what[160];
			snprintf(what, sizeof(what), "output %d differs between fused and unfused kernels: %g (scale %g)",
				 i, err, scale);
			finding(f, what);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz f = {.ctx = ts_ctx_new()};
	if (!f.ctx)
		return 0;
	f.g = ts_onnx_load_bytes(f.ctx, data, size, "fuzz");
	if (!f.g) {
		if (ts_last_status(f.ctx) == TS_OK || strncmp(ts_last_error(f.ctx), "onnx: ", 6))
			finding(&f, "an import failed without an 'onnx: ' message");
		ts_ctx_free(f.ctx);
		return 0;
	}
	if (small(f.g)) {
		f.nin = ts_graph_num_inputs(f.g);
		f.nout = ts_graph_num_outputs(f.g);
		make_arrays(&f);
		ts_graph_opts plain = {.no_fuse = true, .no_layout = true};
		if (compile_run(&f, NULL, 0) && compile_run(&f, &plain, 1))
			compare(&f);
		free_arrays(&f);
	}
	ts_graph_free(f.g);
	ts_ctx_free(f.ctx);
	return 0;
}

#ifdef TS_HAVE_PROTOBUF_C

/* ---- mutations of the unpacked model ---------------------------------------------- */

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

#define MAX_UNDO 16
#define MAX_NAMES 256

/* Every change is a store of up to 8 bytes into the unpacked message,
 * undone before it is freed: names point at other strings of the same
 * message (or at static ones) only while it is packed. */
typedef struct mut {
	uint64_t rng;
	struct undo { void *at; size_t len; unsigned char old[8]; } undo[MAX_UNDO];
	int nundo;
	char *names[MAX_NAMES];
	int nnames;
} mut;

static uint64_t next(mut *m)
{
	m->rng ^= m->rng << 13;
	m->rng ^= m->rng >> 7;
	m->rng ^= m->rng << 17;
	return m->rng;
}

static size_t pick(mut *m, size_t n)
{
	return n ? (size_t)(next(m) % n) : 0;
}

static void store(mut *m, void *at, const void *value, size_t len)
{
	if (m->nundo == MAX_UNDO)
		return;
	struct undo *u = &m->undo[m->nundo++];
	u->at = at;
	u->len = len;
	memcpy(u->old, at, len);
	memcpy(at, value, len);
}

static void undo_all(mut *m)
{
	while (m->nundo > 0) {
		struct undo *u = &m->undo[--m->nundo];
		memcpy(u->at, u->old, u->len);
	}
}

static void add_name(mut *m, char *name)
{
	if (name && m->nnames < MAX_NAMES)
		m->names[m->nnames++] = name;
}

static void collect_names(mut *m, TesseraOnnx__GraphProto *g)
{
	static char empty[] = "";
	add_name(m, empty);
	for (size_t i = 0; i < g->n_input; i++)
		add_name(m, g->input[i]->name);
	for (size_t i = 0; i < g->n_initializer; i++)
		add_name(m, g->initializer[i]->name);
	for (size_t i = 0; i < g->n_node; i++)
		for (size_t k = 0; k < g->node[i]->n_output; k++)
			add_name(m, g->node[i]->output[k]);
}

static const int64_t some_ints[] = {
	-3, -1, 0, 1, 1, 2, 2, 3, 4, 5, 7, 8, 16, INT32_MAX, (int64_t)INT32_MAX + 1,
	INT64_MAX, INT64_MIN, INT64_C(1) << 40,
};
static const char *const some_ops[] = {
	"Conv", "Gemm", "MatMul", "MaxPool", "AveragePool", "GlobalAveragePool", "Softmax",
	"LayerNormalization", "BatchNormalization", "Transpose", "Concat", "Reshape", "Flatten",
	"Identity", "Dropout", "Add", "Sub", "Mul", "Div", "Pow", "Relu", "Sigmoid", "Tanh", "Erf",
	"Sqrt", "Exp", "Neg", "Gelu", "Clip", "Constant",
};

static void mutate_attribute(mut *m, TesseraOnnx__AttributeProto *a)
{
	static const float some_floats[] = {
		0.0f, -1.0f, 1.0f, 2.0f, 0.5f, 1e-5f, NAN, INFINITY, -INFINITY, 1e30f,
	};
	int64_t i = some_ints[pick(m, TS_COUNT_OF(some_ints))];
	float f = some_floats[pick(m, TS_COUNT_OF(some_floats))];
	if (a->n_ints)
		store(m, &a->ints[pick(m, a->n_ints)], &i, sizeof(i));
	else if (a->has_i)
		store(m, &a->i, &i, sizeof(i));
	else if (a->n_floats)
		store(m, &a->floats[pick(m, a->n_floats)], &f, sizeof(f));
	else if (a->has_f)
		store(m, &a->f, &f, sizeof(f));
}

/* Drops the last of some list: a node's inputs or attributes, the graph's
 * nodes, a graph input's dimensions. */
static void fewer(mut *m, TesseraOnnx__NodeProto *n, TesseraOnnx__GraphProto *g)
{
	TesseraOnnx__ValueInfoProto *v = g->n_input ? g->input[pick(m, g->n_input)] : NULL;
	TesseraOnnx__TensorShapeProto *shape = NULL;
	if (v && v->type && v->type->value_case == TESSERA_ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
		shape = v->type->tensor_type->shape;
	size_t *count[] = {
		n ? &n->n_input : NULL, n ? &n->n_attribute : NULL, &g->n_node,
		shape ? &shape->n_dim : NULL,
	};
	size_t *c = count[pick(m, TS_COUNT_OF(count))];
	if (c && *c) {
		size_t less = *c - 1;
		store(m, c, &less, sizeof(less));
	}
}

/* One change to the graph. */
static void mutate_graph(mut *m, TesseraOnnx__GraphProto *g)
{
	TesseraOnnx__NodeProto *n = g->n_node ? g->node[pick(m, g->n_node)] : NULL;
	char *name = m->names[pick(m, (size_t)m->nnames)];
	switch (pick(m, 9)) {
	case 0:
	case 1: /* a node reads another value, or leaves an input out */
		if (n && n->n_input)
			store(m, &n->input[pick(m, n->n_input)], &name, sizeof(name));
		break;
	case 2: { /* another operator */
		const char *op = some_ops[pick(m, TS_COUNT_OF(some_ops))];
		if (n)
			store(m, &n->op_type, &op, sizeof(op));
		break;
	}
	case 3:
	case 4:
		if (n && n->n_attribute)
			mutate_attribute(m, n->attribute[pick(m, n->n_attribute)]);
		break;
	case 5: /* two nodes change places */
		if (g->n_node > 1) {
			size_t a = pick(m, g->n_node), b = pick(m, g->n_node);
			TesseraOnnx__NodeProto *na = g->node[a], *nb = g->node[b];
			store(m, &g->node[a], &nb, sizeof(nb));
			store(m, &g->node[b], &na, sizeof(na));
		}
		break;
	case 6: /* fewer inputs, attributes, nodes, or dimensions of a graph input */
		fewer(m, n, g);
		break;
	case 7: { /* a graph input of other extents */
		TesseraOnnx__ValueInfoProto *v = g->n_input ? g->input[pick(m, g->n_input)] : NULL;
		TesseraOnnx__TypeProto__Tensor *t = NULL;
		if (v && v->type && v->type->value_case == TESSERA_ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
			t = v->type->tensor_type;
		if (t && t->shape && t->shape->n_dim) {
			TesseraOnnx__TensorShapeProto__Dimension *d = t->shape->dim[pick(m, t->shape->n_dim)];
			int64_t e = pick(m, 4) ? 1 + (int64_t)pick(m, 9) : some_ints[pick(m, TS_COUNT_OF(some_ints))];
			if (d->value_case == TESSERA_ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
				store(m, &d->dim_value, &e, sizeof(e));
		}
		break;
	}
	default: /* an output or an initializer of another name */
		if (pick(m, 2) && g->n_output)
			store(m, &g->output[pick(m, g->n_output)]->name, &name, sizeof(name));
		else if (g->n_initializer)
			store(m, &g->initializer[pick(m, g->n_initializer)]->name, &name, sizeof(name));
		break;
	}
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	mut m = {.rng = ((uint64_t)seed * 0x9e3779b97f4a7c15u) | 1};
	if (pick(&m, 4) == 0)
		return LLVMFuzzerMutate(data, size, max_size);
	TesseraOnnx__ModelProto *model = tessera_onnx__model_proto__unpack(NULL, size, data);
	if (!model || !model->graph) {
		if (model)
			tessera_onnx__model_proto__free_unpacked(model, NULL);
		return LLVMFuzzerMutate(data, size, max_size);
	}
	collect_names(&m, model->graph);
	for (size_t k = 1 + pick(&m, 3); k > 0; k--)
		mutate_graph(&m, model->graph);
	size_t n = tessera_onnx__model_proto__get_packed_size(model);
	if (n <= max_size)
		tessera_onnx__model_proto__pack(model, data);
	undo_all(&m);
	tessera_onnx__model_proto__free_unpacked(model, NULL);
	return n <= max_size ? n : LLVMFuzzerMutate(data, size, max_size);
}

#endif
