/*
 * onnx.c - ONNX import: an .onnx file into a graph (graph.h).
 *
 * The file is a protobuf ModelProto.  protobuf-c unpacks it with the schema
 * in onnx.proto (a wire-compatible subset of ONNX's, compiled by protoc-c
 * at build time); the importer then walks the graph once, in file order,
 * which ONNX requires to be topological:
 *   graph inputs that are not initializers -> ts_graph_input (float32,
 *       every extent fixed);
 *   initializers and Constant nodes -> data kept aside, read on first use:
 *       made a graph constant when a node takes it as an operand (float32
 *       only), or read directly where the operand must be known now
 *       (Reshape's shape, Clip's bounds, Dropout's training_mode);
 *   every other node -> one ts_graph_node, its attributes checked and
 *       translated into ts_gattrs;
 *   graph outputs -> ts_graph_output.
 * ONNX value names map to graph values through one open-addressing hash
 * table sized once from the model, so models of thousands of values are
 * read in linear time.
 *
 * Whatever tessera cannot run exactly as written (an operator, an attribute
 * or attribute value, a data type, a symbolic extent, a foreign domain) is
 * refused with a message naming the node (its name, or "#index" when it has
 * none) and op type; nothing is approximated silently.  Unknown attributes
 * are refused too, so that none is ignored by mistake.  An import frees all
 * it allocated (the unpacked message, the table, copies of raw tensor
 * data) before it returns, and a failed one frees its partial graph.  Like
 * ts_lower, an import starts afresh: an error an earlier call left in the
 * context is cleared first.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctx.h"
#include "graph.h"

#ifndef TS_HAVE_PROTOBUF_C

#define ONNX_MISSING                                                                   \
	"onnx: tessera was built without ONNX import: "                                \
	"install libprotobuf-c-dev and protobuf-c-compiler and reconfigure"

ts_graph *ts_onnx_load(ts_ctx *ctx, const char *path)
{
	(void)path;
	ts_clear_error(ctx);
	ts_error(ctx, TS_ERR_UNSUPPORTED, ONNX_MISSING);
	return NULL;
}

ts_graph *ts_onnx_load_bytes(ts_ctx *ctx, const void *data, size_t size, const char *what)
{
	(void)data, (void)size, (void)what;
	ts_clear_error(ctx);
	ts_error(ctx, TS_ERR_UNSUPPORTED, ONNX_MISSING);
	return NULL;
}

#else

#include "onnx.pb-c.h"

typedef TesseraOnnx__ModelProto onnx_model;
typedef TesseraOnnx__GraphProto onnx_graph;
typedef TesseraOnnx__NodeProto onnx_node;
typedef TesseraOnnx__AttributeProto onnx_attr;
typedef TesseraOnnx__TensorProto onnx_tensor;
typedef TesseraOnnx__ValueInfoProto onnx_value_info;

#define DT_FLOAT TESSERA_ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define DT_INT64 TESSERA_ONNX__TENSOR_PROTO__DATA_TYPE__INT64
#define DT_BOOL TESSERA_ONNX__TENSOR_PROTO__DATA_TYPE__BOOL
#define AT(kind) TESSERA_ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__##kind

/* ---- the importer's state ---------------------------------------------------------- */

/* A constant's content: float32, int64 or bool (bool only for Dropout's
 * training_mode), row-major. */
typedef struct onnx_data {
	int dtype;              /* DT_FLOAT, DT_INT64 or DT_BOOL */
	int ndim;
	int64_t dims[TS_GRAPH_MAX_DIMS];
	int64_t numel;
	const void *data;       /* in the unpacked message, or `owned` */
	void *owned;            /* malloc'd: raw_data copied to an aligned buffer */
} onnx_data;

/* One ONNX value name.  A constant (is_data) gets a graph value only when
 * a node takes it as an operand; other names get theirs when defined. */
typedef struct onnx_name {
	const char *name;       /* in the unpacked message; NULL: a free slot */
	int value;              /* graph value, -1 while there is none */
	bool is_data;           /* an initializer or a Constant node's output */
	bool data_read;         /* `data` holds the content */
	const onnx_tensor *tensor; /* is_data: where the content is, read on first use */
	onnx_data data;
	const onnx_node *dropped; /* an output after the first of this node,
				   * which tessera does not compute (Dropout's mask) */
	size_t dropped_index;     /* that node's index, and which output */
	size_t dropped_output;
	bool listed_output;       /* among the graph's outputs already */
	bool sparse;              /* a sparse initializer: refused where used */
} onnx_name;

typedef struct importer {
	ts_ctx *ctx;
	const char *what;       /* the file, or the caller's label; NULL: none */
	ts_graph *g;
	int64_t opset;          /* of the default domain */
	onnx_name *names;
	size_t mask;            /* the table's size - 1; the size is a power of two */
	const onnx_node *node;  /* the node being imported, for messages; NULL: none */
	size_t node_index;
} importer;

static const char *str(const char *s)
{
	return s ? s : "";
}

/* ONNX's names of its data types, for messages. */
static const char *const dt_names[] = {
	"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "STRING",
	"BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16",
	"FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4", "INT4",
	"FLOAT4E2M1",
};

static const char *dt_name(int64_t dt)
{
	return dt >= 0 && dt < (int64_t)TS_COUNT_OF(dt_names) ? dt_names[dt] : "an unknown type";
}

static const char *const at_names[] = {
	"UNDEFINED", "FLOAT", "INT", "STRING", "TENSOR", "GRAPH", "FLOATS", "INTS", "STRINGS",
	"TENSORS", "GRAPHS", "SPARSE_TENSOR", "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS",
};

static const char *at_name(int at)
{
	return at >= 0 && at < (int)TS_COUNT_OF(at_names) ? at_names[at] : "an unknown kind";
}

/* "[4, 3, 3, 3]" into buf. */
static const char *dims_str(char *buf, size_t size, int ndim, const int64_t *dims)
{
	size_t k = (size_t)snprintf(buf, size, "[");
	for (int d = 0; d < ndim && k < size; d++)
		k += (size_t)snprintf(buf + k, size - k, "%s%lld", d ? ", " : "", (long long)dims[d]);
	if (k < size)
		snprintf(buf + k, size - k, "]");
	return buf;
}

/* ---- errors ------------------------------------------------------------------------ */

/* Records "onnx: WHAT: message" in the context; returns false. */
static bool fail(importer *im, ts_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(importer *im, ts_status st, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (im->what && *im->what)
		ts_error(im->ctx, st, "onnx: %s: %s", im->what, msg);
	else
		ts_error(im->ctx, st, "onnx: %s", msg);
	return false;
}

/* "node 'conv3' (op Conv)", or "node #12 (op Conv)" for a node without a name. */
static const char *label_of(const onnx_node *n, size_t index, char *buf, size_t size)
{
	if (n->name && *n->name)
		snprintf(buf, size, "node '%s' (op %s)", n->name, str(n->op_type));
	else
		snprintf(buf, size, "node #%zu (op %s)", index, str(n->op_type));
	return buf;
}

static const char *node_label(const importer *im, char *buf, size_t size)
{
	return label_of(im->node, im->node_index, buf, size);
}

/* fail() about the node being imported: "node 'conv3' (op Conv): message". */
static bool node_fail(importer *im, ts_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool node_fail(importer *im, ts_status st, const char *fmt, ...)
{
	char msg[1024], who[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!im->node)
		return fail(im, st, "%s", msg);
	return fail(im, st, "%s: %s", node_label(im, who, sizeof(who)), msg);
}

/* A graph builder call failed, its message (naming the node and the
 * shapes) in the context: the message is kept, prefixed like the
 * importer's own, so that every error of an import names the model. */
static bool graph_failed(importer *im)
{
	char msg[1024];
	ts_status st = ts_last_status(im->ctx);
	snprintf(msg, sizeof(msg), "%s", ts_last_error(im->ctx));
	ts_clear_error(im->ctx);
	return fail(im, st != TS_OK ? st : TS_ERR_INTERNAL, "%s", msg);
}

/* ---- value names --------------------------------------------------------------------- */

static size_t name_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3u;
	return (size_t)h;
}

/* The slot of `name`: its entry, or the free slot where it would go.  The
 * table is sized for every name the model can define, at most half full,
 * so the probe always ends. */
static onnx_name *name_slot(importer *im, const char *name)
{
	size_t i = name_hash(name) & im->mask;
	while (im->names[i].name && strcmp(im->names[i].name, name))
		i = (i + 1) & im->mask;
	return &im->names[i];
}

static onnx_name *name_find(importer *im, const char *name)
{
	onnx_name *n = name_slot(im, name);
	return n->name ? n : NULL;
}

/* A new entry for `name`; NULL when the name is defined already. */
static onnx_name *name_define(importer *im, const char *name)
{
	onnx_name *n = name_slot(im, name);
	if (n->name)
		return NULL;
	n->name = name;
	n->value = -1;
	return n;
}

/* One slot per name the model can define (graph inputs, initializers and
 * node outputs), twice over. */
static bool names_alloc(importer *im, const onnx_graph *gr)
{
	size_t count = gr->n_input + gr->n_initializer + gr->n_sparse_initializer, size = 16;
	for (size_t i = 0; i < gr->n_node; i++)
		count += gr->node[i]->n_output;
	while (size < 2 * count && size < ((size_t)1 << 40))
		size <<= 1;
	if (size < 2 * count)
		return fail(im, TS_ERR_NOMEM, "%zu values are too many", count);
	im->names = calloc(size, sizeof(*im->names));
	if (!im->names)
		return fail(im, TS_ERR_NOMEM, "out of memory for %zu values", count);
	im->mask = size - 1;
	return true;
}

static void names_free(importer *im)
{
	if (!im->names)
		return;
	for (size_t i = 0; i <= im->mask; i++)
		free(im->names[i].data.owned);
	free(im->names);
}

/* ---- tensors ------------------------------------------------------------------------- */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
/* raw_data is little-endian whatever the host. */
static void to_host_order(unsigned char *p, size_t n, size_t elem)
{
	for (size_t i = 0; i < n; i++, p += elem)
		for (size_t a = 0, b = elem - 1; a < b; a++, b--) {
			unsigned char t = p[a];
			p[a] = p[b];
			p[b] = t;
		}
}
#else
static void to_host_order(unsigned char *p, size_t n, size_t elem)
{
	(void)p, (void)n, (void)elem;
}
#endif

/* Refuses a tensor whose data is in a file beside the model, naming the file. */
static bool check_not_external(importer *im, const onnx_tensor *t, const char *name)
{
	if (t->data_location != TESSERA_ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL &&
	    !t->n_external_data)
		return true;
	const char *file = "";
	for (size_t i = 0; i < t->n_external_data; i++)
		if (!strcmp(str(t->external_data[i]->key), "location"))
			file = str(t->external_data[i]->value);
	return node_fail(im, TS_ERR_UNSUPPORTED,
			 "tensor '%s' keeps its data in an external file ('%s'); tessera reads only models with their weights inside the .onnx file",
			 name, file);
}

/* Type, shape and element count of t into d. */
static bool tensor_header(importer *im, const onnx_tensor *t, const char *name, onnx_data *d)
{
	d->dtype = t->data_type;
	if (d->dtype != DT_FLOAT && d->dtype != DT_INT64 && d->dtype != DT_BOOL)
		return node_fail(im, TS_ERR_UNSUPPORTED,
				 "tensor '%s' has data type %s; tessera reads FLOAT and INT64 tensors", name,
				 dt_name(t->data_type));
	if (t->n_dims > TS_GRAPH_MAX_DIMS)
		return node_fail(im, TS_ERR_UNSUPPORTED, "tensor '%s' has %zu dimensions; tessera handles at most %d",
				 name, t->n_dims, TS_GRAPH_MAX_DIMS);
	d->ndim = (int)t->n_dims;
	d->numel = 1;
	for (int i = 0; i < d->ndim; i++) {
		d->dims[i] = t->dims[i];
		if (d->dims[i] < 0 || __builtin_mul_overflow(d->numel, d->dims[i], &d->numel) ||
		    d->numel > INT64_MAX / 8)
			return node_fail(im, TS_ERR_INVALID, "tensor '%s' has extent %lld in dimension %d", name,
					 (long long)t->dims[i], i);
	}
	return true;
}

/* The content of t (raw_data, or the typed field of its data type) into d,
 * its size checked against its shape. */
static bool tensor_read(importer *im, const onnx_tensor *t, const char *name, onnx_data *d)
{
	char shape[TS_GRAPH_MAX_DIMS * 24 + 4];
	if (!check_not_external(im, t, name) || !tensor_header(im, t, name, d))
		return false;
	size_t elem = d->dtype == DT_FLOAT ? 4 : d->dtype == DT_INT64 ? 8 : 1;
	size_t typed = d->dtype == DT_FLOAT ? t->n_float_data :
		       d->dtype == DT_INT64 ? t->n_int64_data : t->n_int32_data;
	dims_str(shape, sizeof(shape), d->ndim, d->dims);
	if (t->has_raw_data) {
		size_t want = (size_t)d->numel * elem;
		if (typed)
			return node_fail(im, TS_ERR_INVALID, "tensor '%s' has both raw_data and typed data", name);
		if (t->raw_data.len != want)
			return node_fail(im, TS_ERR_INVALID,
					 "tensor '%s' holds %zu bytes of raw_data; %s %s needs %zu", name,
					 t->raw_data.len, dt_name(d->dtype), shape, want);
		d->owned = malloc(want ? want : 1);
		if (!d->owned)
			return node_fail(im, TS_ERR_NOMEM, "tensor '%s': out of memory (%zu bytes)", name, want);
		if (want)
			memcpy(d->owned, t->raw_data.data, want);
		to_host_order(d->owned, (size_t)d->numel, elem);
		d->data = d->owned;
		return true;
	}
	if (typed != (size_t)d->numel)
		return node_fail(im, TS_ERR_INVALID, "tensor '%s' holds %zu values; %s %s needs %lld", name,
				 typed, dt_name(d->dtype), shape, (long long)d->numel);
	if (d->dtype == DT_FLOAT) {
		d->data = t->float_data;
	} else if (d->dtype == DT_INT64) {
		d->data = t->int64_data;
	} else {
		/* ONNX stores bools one per int32 */
		unsigned char *b = malloc(typed ? typed : 1);
		if (!b)
			return node_fail(im, TS_ERR_NOMEM, "tensor '%s': out of memory", name);
		for (size_t i = 0; i < typed; i++)
			b[i] = t->int32_data[i] != 0;
		d->data = d->owned = b;
	}
	return true;
}

/* The content of constant n, read from its tensor the first time. */
static const onnx_data *const_data(importer *im, onnx_name *n)
{
	if (n->sparse)
		return node_fail(im, TS_ERR_UNSUPPORTED,
				 "'%s' is a sparse initializer; tessera reads dense initializers only", n->name), NULL;
	if (!n->data_read) {
		if (!tensor_read(im, n->tensor, n->name, &n->data))
			return NULL;
		n->data_read = true;
	}
	return &n->data;
}

/* ---- operands ---------------------------------------------------------------------- */

/* Input i of the node being imported; NULL when absent or "" (an optional
 * input left out). */
static const char *input_name(const importer *im, size_t i)
{
	const onnx_node *n = im->node;
	return i < n->n_input && n->input[i] && *n->input[i] ? n->input[i] : NULL;
}

static bool undefined(importer *im, const char *name)
{
	return node_fail(im, TS_ERR_INVALID,
			 "input '%s' is not defined by a graph input, an initializer or an earlier node (ONNX nodes are listed in topological order)",
			 name);
}

/* A node's input, or a graph output (no node being imported), that is
 * a further output of an earlier node. */
static bool dropped(importer *im, const onnx_name *n)
{
	char by[512];
	return node_fail(im, TS_ERR_UNSUPPORTED,
			 "%s '%s' is output %zu of %s, which tessera does not compute (only its first output)",
			 im->node ? "input" : "graph output", n->name, n->dropped_output,
			 label_of(n->dropped, n->dropped_index, by, sizeof(by)));
}

/* The graph value of `name`: a graph input, an earlier node's output, or a
 * float constant, made a graph constant the first time; -1 on error. */
static int operand(importer *im, const char *name)
{
	if (!name)
		return node_fail(im, TS_ERR_UNSUPPORTED, "an input it needs is left out"), -1;
	onnx_name *n = name_find(im, name);
	if (!n)
		return undefined(im, name), -1;
	if (n->dropped)
		return dropped(im, n), -1;
	if (n->value >= 0)
		return n->value;
	const onnx_data *d = const_data(im, n);
	if (!d)
		return -1;
	if (d->dtype != DT_FLOAT)
		return node_fail(im, TS_ERR_UNSUPPORTED,
				 "'%s' is a tensor of %s; tessera computes in float32 (int64 only as Reshape's shape)",
				 name, dt_name(d->dtype)), -1;
	n->value = ts_graph_constant(im->g, name, ts_float32, d->ndim, d->dims, d->data);
	if (n->value < 0)
		graph_failed(im);
	return n->value;
}

/* The content of the node's input i, which must be a constant: `role` is
 * what the node reads it as, for messages. */
static const onnx_data *input_data(importer *im, size_t i, const char *role, int dtype)
{
	const char *name = input_name(im, i);
	if (!name)
		return node_fail(im, TS_ERR_UNSUPPORTED, "its %s is left out", role), NULL;
	onnx_name *n = name_find(im, name);
	if (!n)
		return undefined(im, name), NULL;
	if (n->dropped)
		return dropped(im, n), NULL;
	if (!n->is_data)
		return node_fail(im, TS_ERR_UNSUPPORTED,
				 "its %s '%s' is computed by the graph; tessera needs a constant there (an initializer or a Constant node)",
				 role, name), NULL;
	const onnx_data *d = const_data(im, n);
	if (d && d->dtype != dtype)
		return node_fail(im, TS_ERR_INVALID, "its %s '%s' is %s, not %s", role, name,
				 dt_name(d->dtype), dt_name(dtype)), NULL;
	return d;
}

/* ---- attributes ---------------------------------------------------------------------- */

static const onnx_attr *attr_get(const importer *im, const char *name)
{
	for (size_t i = 0; i < im->node->n_attribute; i++)
		if (!strcmp(str(im->node->attribute[i]->name), name))
			return im->node->attribute[i];
	return NULL;
}

/* The attribute's kind; files of the first IR versions leave it out, and
 * then the field that is set says. */
static int attr_type(const onnx_attr *a)
{
	if (a->has_type)
		return a->type;
	if (a->has_f)
		return AT(FLOAT);
	if (a->has_i)
		return AT(INT);
	if (a->has_s)
		return AT(STRING);
	if (a->t)
		return AT(TENSOR);
	if (a->n_floats)
		return AT(FLOATS);
	if (a->n_ints)
		return AT(INTS);
	return a->n_strings ? AT(STRINGS) : AT(UNDEFINED);
}

/* The attribute `name` of kind `kind`; NULL (and true) when absent. */
static bool attr_of(importer *im, const char *name, int kind, const onnx_attr **a)
{
	*a = attr_get(im, name);
	if (*a && attr_type(*a) != kind)
		return node_fail(im, TS_ERR_INVALID, "attribute '%s' is %s, not %s", name,
				 at_name(attr_type(*a)), at_name(kind));
	return true;
}

/* Each get_* leaves *v as it is (the default) when the attribute is absent. */
static bool get_int(importer *im, const char *name, int64_t *v)
{
	const onnx_attr *a;
	if (!attr_of(im, name, AT(INT), &a))
		return false;
	if (a)
		*v = a->i;
	return true;
}

static bool get_float(importer *im, const char *name, double *v)
{
	const onnx_attr *a;
	if (!attr_of(im, name, AT(FLOAT), &a))
		return false;
	if (a)
		*v = a->f;
	return true;
}

/* An INTS attribute of at most max values; *count is 0 when absent. */
static bool get_ints(importer *im, const char *name, size_t max, int64_t *v, int *count)
{
	const onnx_attr *a;
	*count = 0;
	if (!attr_of(im, name, AT(INTS), &a))
		return false;
	if (!a)
		return true;
	if (a->n_ints > max)
		return node_fail(im, TS_ERR_UNSUPPORTED, "attribute '%s' has %zu values; tessera handles at most %zu",
				 name, a->n_ints, max);
	if (a->n_ints) /* an empty list has no array */
		memcpy(v, a->ints, a->n_ints * sizeof(*v));
	*count = (int)a->n_ints;
	return true;
}

/* A spatial INTS attribute of a 2-D image operator: exactly n values (2,
 * or 4 for pads); *present says whether it was given. */
static bool get_spatial(importer *im, const char *name, size_t n, int64_t *v, bool *present)
{
	const onnx_attr *a;
	if (!attr_of(im, name, AT(INTS), &a))
		return false;
	if (present)
		*present = a != NULL;
	if (!a)
		return true;
	if (a->n_ints != n)
		return node_fail(im, TS_ERR_UNSUPPORTED,
				 "attribute '%s' has %zu values; tessera imports 2-D images only (%zu values)",
				 name, a->n_ints, n);
	memcpy(v, a->ints, n * sizeof(*v));
	return true;
}

/* A STRING attribute, compared with the accepted values in `ok` (NULL
 * terminated): *which is the index of the match, -1 when absent. */
static bool get_choice(importer *im, const char *name, const char *const *ok, int *which)
{
	const onnx_attr *a;
	*which = -1;
	if (!attr_of(im, name, AT(STRING), &a))
		return false;
	if (!a)
		return true;
	for (int i = 0; ok[i]; i++)
		if (a->s.len == strlen(ok[i]) && !memcmp(a->s.data, ok[i], a->s.len)) {
			*which = i;
			return true;
		}
	return node_fail(im, TS_ERR_UNSUPPORTED, "%s '%.*s' is not supported", name,
			 (int)(a->s.len > 64 ? 64 : a->s.len), a->s.data ? (const char *)a->s.data : "");
}

/* Refuses every attribute not in `known` (names separated by spaces). */
static bool check_attrs(importer *im, const char *known)
{
	for (size_t i = 0; i < im->node->n_attribute; i++) {
		const char *name = str(im->node->attribute[i]->name), *k = known;
		size_t len = strlen(name);
		bool found = false;
		while (*k && !found) {
			size_t w = strcspn(k, " ");
			found = w == len && len && !strncmp(k, name, len);
			k += w + (k[w] == ' ');
		}
		if (!found)
			return node_fail(im, TS_ERR_UNSUPPORTED, "attribute '%s' is not supported%s%s%s",
					 name, *known ? " (tessera reads: " : "", known, *known ? ")" : "");
		/* the reader takes the first of two: which one was meant is
		 * not for it to guess */
		for (size_t j = 0; j < i; j++)
			if (!strcmp(str(im->node->attribute[j]->name), name))
				return node_fail(im, TS_ERR_INVALID, "attribute '%s' is given twice", name);
	}
	return true;
}

/* ---- operators ----------------------------------------------------------------------- */

/* Each fills a from the node's attributes and may lower *nin, the number
 * of inputs that become graph operands (the rest it read as constants). */
typedef bool (*onnx_fn)(importer *im, ts_gattrs *a, int *nin);

/* auto_pad: NOTSET (or absent) uses the pads given; VALID means none.  The
 * SAME modes depend on the input's extents and are refused. */
static bool get_pads(importer *im, int64_t pad[4])
{
	static const char *const modes[] = {"NOTSET", "VALID", NULL};
	int mode;
	if (!get_choice(im, "auto_pad", modes, &mode) || !get_spatial(im, "pads", 4, pad, NULL))
		return false;
	if (mode == 1 && (pad[0] || pad[1] || pad[2] || pad[3]))
		return node_fail(im, TS_ERR_INVALID, "auto_pad VALID with non-zero pads");
	return true;
}

static bool imp_conv(importer *im, ts_gattrs *a, int *nin)
{
	int64_t k[2];
	bool has_k;
	(void)nin;
	if (!get_pads(im, a->pad) || !get_spatial(im, "kernel_shape", 2, k, &has_k) ||
	    !get_spatial(im, "strides", 2, a->stride, NULL) ||
	    !get_spatial(im, "dilations", 2, a->dilation, NULL) || !get_int(im, "group", &a->group))
		return false;
	if (!has_k)
		return true;
	/* the weights' shape decides; a kernel_shape that disagrees is a broken file */
	int w = operand(im, input_name(im, 1)), nd;
	int64_t s[TS_GRAPH_MAX_DIMS];
	if (w < 0)
		return false;
	if (ts_graph_value_shape(im->g, w, &nd, s) && nd == 4 && (s[2] != k[0] || s[3] != k[1]))
		return node_fail(im, TS_ERR_INVALID, "kernel_shape [%lld, %lld] differs from the weights' [%lld, %lld]",
				 (long long)k[0], (long long)k[1], (long long)s[2], (long long)s[3]);
	return true;
}

static bool imp_pool(importer *im, ts_gattrs *a, int *nin)
{
	int64_t ceil_mode = 0, storage_order = 0, count_include_pad = 0, dil[2] = {1, 1};
	bool has_k;
	(void)nin;
	if (!get_pads(im, a->pad) || !get_spatial(im, "kernel_shape", 2, a->kernel, &has_k) ||
	    !get_spatial(im, "strides", 2, a->stride, NULL) || !get_spatial(im, "dilations", 2, dil, NULL) ||
	    !get_int(im, "ceil_mode", &ceil_mode) || !get_int(im, "storage_order", &storage_order) ||
	    !get_int(im, "count_include_pad", &count_include_pad))
		return false;
	if (!has_k)
		return node_fail(im, TS_ERR_INVALID, "kernel_shape is missing");
	if (ceil_mode)
		return node_fail(im, TS_ERR_UNSUPPORTED,
				 "ceil_mode=%lld is not supported (tessera rounds output extents down)",
				 (long long)ceil_mode);
	if (dil[0] != 1 || dil[1] != 1)
		return node_fail(im, TS_ERR_UNSUPPORTED, "dilations [%lld, %lld] are not supported (only 1)",
				 (long long)dil[0], (long long)dil[1]);
	if (storage_order)
		return node_fail(im, TS_ERR_UNSUPPORTED, "storage_order=%lld is not supported",
				 (long long)storage_order);
	a->count_include_pad = count_include_pad != 0;
	return true;
}

static bool imp_gemm(importer *im, ts_gattrs *a, int *nin)
{
	int64_t ta = 0, tb = 0;
	(void)nin;
	if (!get_float(im, "alpha", &a->alpha) || !get_float(im, "beta", &a->beta) ||
	    !get_int(im, "transA", &ta) || !get_int(im, "transB", &tb))
		return false;
	a->trans_a = ta != 0;
	a->trans_b = tb != 0;
	return true;
}

/* Before opset 13, Softmax normalized over all the axes from `axis` on
 * (default 1) taken together; that agrees with tessera's only when `axis`
 * is the last one. */
static bool imp_softmax(importer *im, ts_gattrs *a, int *nin)
{
	(void)nin;
	a->axis = im->opset >= 13 ? -1 : 1;
	if (!get_int(im, "axis", &a->axis))
		return false;
	if (im->opset >= 13)
		return true;
	int x = operand(im, input_name(im, 0)), nd;
	if (x < 0 || !ts_graph_value_shape(im->g, x, &nd, NULL))
		return false;
	if (a->axis < -nd || a->axis >= nd)
		return node_fail(im, TS_ERR_INVALID, "axis %lld is out of range for a %d-D input",
				 (long long)a->axis, nd);
	if (a->axis != nd - 1 && a->axis != -1)
		return node_fail(im, TS_ERR_UNSUPPORTED,
				 "opset %lld Softmax over axes %lld.. of a %d-D input taken together is not supported (only over the last axis)",
				 (long long)im->opset, (long long)a->axis, nd);
	return true;
}

static bool imp_layernorm(importer *im, ts_gattrs *a, int *nin)
{
	int64_t stash_type = 1; /* the precision of the statistics; tessera's is float32 */
	(void)nin;
	return get_int(im, "axis", &a->axis) && get_float(im, "epsilon", &a->epsilon) &&
	       get_int(im, "stash_type", &stash_type);
}

static bool imp_batchnorm(importer *im, ts_gattrs *a, int *nin)
{
	int64_t training = 0;
	double momentum = 0.9; /* only used in training */
	(void)nin;
	if (!get_float(im, "epsilon", &a->epsilon) || !get_float(im, "momentum", &momentum) ||
	    !get_int(im, "training_mode", &training))
		return false;
	if (training)
		return node_fail(im, TS_ERR_UNSUPPORTED, "training_mode=1 is not supported (inference only)");
	/* statistics computed by the graph are legal ONNX, but the graph
	 * layer folds them as data; refused here, so that a model is imported
	 * exactly or not at all */
	static const char *const roles[] = {"scale", "B", "input_mean", "input_var"};
	for (size_t i = 1; i < 5; i++) {
		const char *name = input_name(im, i);
		const onnx_name *n = name ? name_find(im, name) : NULL;
		if (n && !n->is_data && !n->dropped)
			return node_fail(im, TS_ERR_UNSUPPORTED,
					 "its %s '%s' is computed by the graph; tessera takes batch normalization "
					 "with constant parameters and statistics only", roles[i - 1], name);
	}
	return true;
}

static bool imp_transpose(importer *im, ts_gattrs *a, int *nin)
{
	(void)nin;
	if (!get_ints(im, "perm", TS_GRAPH_MAX_DIMS, a->perm, &a->nperm))
		return false;
	/* no perm reverses the axes; an empty one is a permutation of none
	 * (nperm 0 would read as no perm) */
	if (attr_get(im, "perm") && a->nperm == 0)
		return node_fail(im, TS_ERR_INVALID,
				 "attribute 'perm' is empty; it must list every axis of the input");
	return true;
}

static bool imp_concat(importer *im, ts_gattrs *a, int *nin)
{
	(void)nin;
	if (!attr_get(im, "axis"))
		return node_fail(im, TS_ERR_INVALID, "the axis attribute is missing");
	return get_int(im, "axis", &a->axis);
}

/* The target shape is an int64 operand in ONNX; tessera needs it fixed. */
static bool imp_reshape(importer *im, ts_gattrs *a, int *nin)
{
	int64_t allowzero = 0;
	if (!get_int(im, "allowzero", &allowzero))
		return false;
	const onnx_data *d = input_data(im, 1, "shape", DT_INT64);
	if (!d)
		return false;
	if (d->ndim != 1)
		return node_fail(im, TS_ERR_INVALID, "its shape '%s' has %d dimensions; a shape is 1-D",
				 input_name(im, 1), d->ndim);
	if (d->numel < 1 || d->numel > TS_GRAPH_MAX_DIMS)
		return node_fail(im, TS_ERR_UNSUPPORTED, "its shape '%s' has %lld entries; tessera reshapes to 1..%d dimensions",
				 input_name(im, 1), (long long)d->numel, TS_GRAPH_MAX_DIMS);
	/* allowzero=1 differs only where the shape holds a 0: an empty
	 * dimension then, not the input's extent */
	for (int64_t i = 0; allowzero && i < d->numel; i++)
		if (((const int64_t *)d->data)[i] == 0)
			return node_fail(im, TS_ERR_UNSUPPORTED,
					 "allowzero=1 with a 0 in the shape makes an empty dimension; tessera has no "
					 "empty tensors");
	a->nshape = (int)d->numel;
	memcpy(a->shape, d->data, (size_t)d->numel * sizeof(int64_t));
	*nin = 1;
	return true;
}

static bool imp_flatten(importer *im, ts_gattrs *a, int *nin)
{
	(void)nin;
	a->axis = 1;
	return get_int(im, "axis", &a->axis);
}

/* Dropout at inference is the identity; its ratio and seed do not matter,
 * but they must be what the opset defines (the ratio an attribute before
 * opset 12, then a float scalar input, beside a seed attribute), and a
 * training_mode input must be a constant false. */
static bool imp_dropout(importer *im, ts_gattrs *a, int *nin)
{
	double ratio = 0.5;
	int64_t seed = 0;
	bool inputs = im->opset >= 12;
	(void)a;
	const char *other = inputs ? "ratio" : "seed";
	if (attr_get(im, other))
		return node_fail(im, TS_ERR_INVALID, "attribute '%s' is not an attribute of Dropout in opset %lld%s",
				 other, (long long)im->opset, inputs ? " (the ratio is its second input)" : "");
	if (!inputs && input_name(im, 1))
		return node_fail(im, TS_ERR_INVALID, "takes 1 input in opset %lld, not %zu (ratio and training_mode "
				 "are inputs from opset 12 on)", (long long)im->opset, im->node->n_input);
	if (!get_float(im, "ratio", &ratio) || !get_int(im, "seed", &seed))
		return false;
	/* a constant ratio is one float (its value is not needed) */
	onnx_name *r = input_name(im, 1) ? name_find(im, input_name(im, 1)) : NULL;
	const onnx_data *rd = r && r->is_data ? const_data(im, r) : NULL;
	if (r && r->is_data && !rd)
		return false;
	char shape[TS_GRAPH_MAX_DIMS * 24 + 4];
	if (rd && (rd->dtype != DT_FLOAT || rd->numel != 1))
		return node_fail(im, TS_ERR_INVALID, "its ratio '%s' is %s %s; the ratio is one float",
				 input_name(im, 1), dt_name(rd->dtype), dims_str(shape, sizeof(shape), rd->ndim, rd->dims));
	if (input_name(im, 2)) {
		const onnx_data *d = input_data(im, 2, "training_mode", DT_BOOL);
		if (!d)
			return false;
		if (d->numel != 1)
			return node_fail(im, TS_ERR_INVALID, "its training_mode has %lld values, not one",
					 (long long)d->numel);
		if (*(const unsigned char *)d->data)
			return node_fail(im, TS_ERR_UNSUPPORTED, "training_mode is true; tessera imports inference models only");
	}
	*nin = 1;
	return true;
}

static bool imp_gelu(importer *im, ts_gattrs *a, int *nin)
{
	static const char *const forms[] = {"none", "tanh", NULL};
	int form;
	(void)nin;
	if (im->opset < 20)
		return node_fail(im, TS_ERR_INVALID, "Gelu is an operator of opset 20 on; the model imports opset %lld",
				 (long long)im->opset);
	if (!get_choice(im, "approximate", forms, &form))
		return false;
	a->approximate = form == 1;
	return true;
}

/* The bounds of Clip: operands in every opset tessera imports (the min
 * and max attributes ended at opset 11), each one float; a bound left out
 * is the lowest or largest float (ONNX's numeric_limits), so that Clip
 * takes infinities to them. */
static bool imp_clip(importer *im, ts_gattrs *a, int *nin)
{
	static const char *const roles[] = {"min", "max"};
	double bound[2] = {-FLT_MAX, FLT_MAX};
	for (int i = 0; i < 2; i++) {
		if (!input_name(im, 1 + (size_t)i))
			continue;
		const onnx_data *d = input_data(im, 1 + (size_t)i, roles[i], DT_FLOAT);
		if (!d)
			return false;
		if (d->numel != 1)
			return node_fail(im, TS_ERR_INVALID, "its %s has %lld values, not one", roles[i],
					 (long long)d->numel);
		bound[i] = *(const float *)d->data;
	}
	a->alpha = bound[0];
	a->beta = bound[1];
	*nin = 1;
	return true;
}

static const struct onnx_op {
	const char *name;
	ts_gop op;
	int min_in, max_in;     /* inputs, optional ones left out at the end not counted */
	const char *attrs;      /* every attribute read, separated by spaces */
	onnx_fn fn;             /* NULL: no attributes */
	bool first_output_only; /* further outputs are left undefined, not refused */
} onnx_ops[] = {
	{"Conv", TS_GOP_CONV, 2, 3, "auto_pad dilations group kernel_shape pads strides", imp_conv, false},
	{"Gemm", TS_GOP_GEMM, 2, 3, "alpha beta transA transB", imp_gemm, false},
	{"MatMul", TS_GOP_MATMUL, 2, 2, "", NULL, false},
	{"MaxPool", TS_GOP_MAXPOOL, 1, 1,
	 "auto_pad ceil_mode dilations kernel_shape pads storage_order strides", imp_pool, false},
	{"AveragePool", TS_GOP_AVGPOOL, 1, 1,
	 "auto_pad ceil_mode count_include_pad dilations kernel_shape pads strides", imp_pool, false},
	{"GlobalAveragePool", TS_GOP_GLOBALAVGPOOL, 1, 1, "", NULL, false},
	{"Softmax", TS_GOP_SOFTMAX, 1, 1, "axis", imp_softmax, false},
	{"LayerNormalization", TS_GOP_LAYERNORM, 2, 3, "axis epsilon stash_type", imp_layernorm, false},
	{"BatchNormalization", TS_GOP_BATCHNORM, 5, 5, "epsilon momentum training_mode", imp_batchnorm, false},
	{"Transpose", TS_GOP_TRANSPOSE, 1, 1, "perm", imp_transpose, false},
	{"Concat", TS_GOP_CONCAT, 1, TS_GRAPH_MAX_INPUTS, "axis", imp_concat, false},
	{"Reshape", TS_GOP_RESHAPE, 2, 2, "allowzero", imp_reshape, false},
	{"Flatten", TS_GOP_FLATTEN, 1, 1, "axis", imp_flatten, false},
	{"Identity", TS_GOP_IDENTITY, 1, 1, "", NULL, false},
	{"Dropout", TS_GOP_IDENTITY, 1, 3, "ratio seed", imp_dropout, true},
	{"Add", TS_GOP_ADD, 2, 2, "", NULL, false},
	{"Sub", TS_GOP_SUB, 2, 2, "", NULL, false},
	{"Mul", TS_GOP_MUL, 2, 2, "", NULL, false},
	{"Div", TS_GOP_DIV, 2, 2, "", NULL, false},
	{"Pow", TS_GOP_POW, 2, 2, "", NULL, false},
	{"Relu", TS_GOP_RELU, 1, 1, "", NULL, false},
	{"Sigmoid", TS_GOP_SIGMOID, 1, 1, "", NULL, false},
	{"Tanh", TS_GOP_TANH, 1, 1, "", NULL, false},
	{"Erf", TS_GOP_ERF, 1, 1, "", NULL, false},
	{"Sqrt", TS_GOP_SQRT, 1, 1, "", NULL, false},
	{"Exp", TS_GOP_EXP, 1, 1, "", NULL, false},
	{"Neg", TS_GOP_NEG, 1, 1, "", NULL, false},
	{"Gelu", TS_GOP_GELU, 1, 1, "approximate", imp_gelu, false},
	{"Clip", TS_GOP_CLIP, 1, 3, "", imp_clip, false},
};

static const struct onnx_op *find_op(const char *type)
{
	for (size_t i = 0; i < TS_COUNT_OF(onnx_ops); i++)
		if (!strcmp(onnx_ops[i].name, type))
			return &onnx_ops[i];
	return NULL;
}

static bool unsupported_op(importer *im)
{
	char list[1024], who[512];
	size_t k = (size_t)snprintf(list, sizeof(list), "Constant");
	for (size_t i = 0; i < TS_COUNT_OF(onnx_ops) && k < sizeof(list); i++)
		k += (size_t)snprintf(list + k, sizeof(list) - k, ", %s", onnx_ops[i].name);
	return fail(im, TS_ERR_UNSUPPORTED, "%s is not supported; tessera imports: %s",
		    node_label(im, who, sizeof(who)), list);
}

/* ---- nodes --------------------------------------------------------------------------- */

/* A Constant node: its single attribute is the value (a tensor, or the
 * shorthand forms of opset 12 on); read now, so that a bad one is refused
 * at its node. */
static bool imp_constant(importer *im)
{
	const onnx_node *n = im->node;
	const char *out = n->n_output == 1 ? str(n->output[0]) : "";
	if (!*out)
		return node_fail(im, TS_ERR_INVALID, "needs exactly one output");
	if (n->n_attribute != 1)
		return node_fail(im, TS_ERR_INVALID, "has %zu attributes; a Constant has one", n->n_attribute);
	if (!check_attrs(im, "value value_float value_floats value_int value_ints"))
		return false;
	onnx_name *v = name_define(im, out);
	if (!v)
		return node_fail(im, TS_ERR_INVALID, "value '%s' is defined twice", out);
	const onnx_attr *a = n->attribute[0];
	const char *kind = str(a->name);
	onnx_data *d = &v->data;
	v->is_data = true;
	if (!strcmp(kind, "value")) {
		if (attr_type(a) != AT(TENSOR) || !a->t)
			return node_fail(im, TS_ERR_INVALID, "attribute 'value' is %s, not TENSOR",
					 at_name(attr_type(a)));
		v->tensor = a->t;
		return const_data(im, v) != NULL;
	}
	bool floats = !strncmp(kind, "value_float", 11), list = kind[strlen(kind) - 1] == 's';
	int want = floats ? (list ? AT(FLOATS) : AT(FLOAT)) : (list ? AT(INTS) : AT(INT));
	if (attr_type(a) != want)
		return node_fail(im, TS_ERR_INVALID, "attribute '%s' is %s, not %s", kind,
				 at_name(attr_type(a)), at_name(want));
	d->dtype = floats ? DT_FLOAT : DT_INT64;
	d->ndim = list;
	d->numel = !list ? 1 : floats ? (int64_t)a->n_floats : (int64_t)a->n_ints;
	d->dims[0] = d->numel;
	d->data = floats ? (list ? (const void *)a->floats : &a->f) : (list ? (const void *)a->ints : &a->i);
	v->data_read = true;
	return true;
}

/* The node's first output names the value it computes; any further
 * output (BatchNormalization's running statistics, MaxPool's indices,
 * LayerNormalization's mean) would be left undefined, so it is refused. */
static bool check_outputs(importer *im, const struct onnx_op *op)
{
	const onnx_node *n = im->node;
	if (!n->n_output || !*str(n->output[0]))
		return node_fail(im, TS_ERR_INVALID, "has no output");
	for (size_t i = 1; i < n->n_output && !op->first_output_only; i++)
		if (*str(n->output[i]))
			return node_fail(im, TS_ERR_UNSUPPORTED,
					 "output %zu ('%s') is not supported; tessera computes only the first output of %s",
					 i, n->output[i], op->name);
	return true;
}

/* The node's further outputs (Dropout's mask): defined, but not
 * computed, so that a reader is told which node left them out. */
static bool define_dropped(importer *im)
{
	const onnx_node *n = im->node;
	for (size_t i = 1; i < n->n_output; i++) {
		const char *o = str(n->output[i]);
		onnx_name *d = *o ? name_define(im, o) : NULL;
		if (*o && !d)
			return node_fail(im, TS_ERR_INVALID, "value '%s' is defined twice", o);
		if (d) {
			d->dropped = n;
			d->dropped_index = im->node_index;
			d->dropped_output = i;
		}
	}
	return true;
}

/* Identity (or Dropout) of a constant is that constant, kept as data: an
 * int64 shape passed through one still reaches its Reshape. */
static bool imp_alias(importer *im, onnx_name *from)
{
	const char *out = im->node->output[0];
	const onnx_data *d = const_data(im, from);
	if (!d)
		return false;
	onnx_name *n = name_define(im, out);
	if (!n)
		return node_fail(im, TS_ERR_INVALID, "value '%s' is defined twice", out);
	n->is_data = n->data_read = true;
	n->data = *d;
	n->data.owned = NULL; /* the buffer stays `from`'s */
	return define_dropped(im);
}

static bool imp_node(importer *im)
{
	const onnx_node *n = im->node;
	const char *type = str(n->op_type), *domain = str(n->domain);
	if (*domain && strcmp(domain, "ai.onnx"))
		return node_fail(im, TS_ERR_UNSUPPORTED,
				 "domain '%s' is not supported; tessera imports operators of the default ONNX domain only",
				 domain);
	if (!strcmp(type, "Constant"))
		return imp_constant(im);
	const struct onnx_op *op = find_op(type);
	if (!op)
		return unsupported_op(im);
	size_t given = n->n_input;
	while (given > 0 && !input_name(im, given - 1))
		given--;
	/* a variadic operator (Concat) past the graph's inputs per node is
	 * tessera's limit, not the model's mistake */
	if (op->max_in == TS_GRAPH_MAX_INPUTS && given > (size_t)op->max_in)
		return node_fail(im, TS_ERR_UNSUPPORTED, "has %zu inputs; tessera takes at most %d per node "
				 "(TS_GRAPH_MAX_INPUTS)", given, TS_GRAPH_MAX_INPUTS);
	if (given < (size_t)op->min_in || given > (size_t)op->max_in)
		return op->min_in == op->max_in
			       ? node_fail(im, TS_ERR_INVALID, "takes %d input%s, not %zu", op->min_in,
					   op->min_in == 1 ? "" : "s", given)
			       : node_fail(im, TS_ERR_INVALID, "takes %d to %d inputs, not %zu", op->min_in,
					   op->max_in, given);
	int nin = (int)given;
	ts_gattrs a = ts_gattrs_default();
	if (!check_attrs(im, op->attrs) || (op->fn && !op->fn(im, &a, &nin)) || !check_outputs(im, op))
		return false;
	const char *x = input_name(im, 0);
	onnx_name *src = op->op == TS_GOP_IDENTITY && x ? name_find(im, x) : NULL;
	if (src && src->is_data)
		return imp_alias(im, src);
	int in[TS_GRAPH_MAX_INPUTS];
	for (int i = 0; i < nin; i++) {
		const char *name = input_name(im, (size_t)i);
		if (!name)
			return node_fail(im, TS_ERR_UNSUPPORTED, "input %d is left out; tessera needs it", i);
		in[i] = operand(im, name);
		if (in[i] < 0)
			return false;
	}
	const char *out = n->output[0];
	if (name_find(im, out))
		return node_fail(im, TS_ERR_INVALID, "value '%s' is defined twice", out);
	int v = ts_graph_node(im->g, n->name && *n->name ? n->name : out, op->op, nin, in, &a);
	if (v < 0)
		return graph_failed(im);
	name_define(im, out)->value = v;
	return define_dropped(im);
}

/* ---- the graph ------------------------------------------------------------------------- */

static bool check_opset(importer *im, const onnx_model *m)
{
	bool found = false;
	for (size_t i = 0; i < m->n_opset_import; i++) {
		const char *domain = str(m->opset_import[i]->domain);
		if (!*domain || !strcmp(domain, "ai.onnx")) {
			found = true;
			im->opset = m->opset_import[i]->version;
		}
	}
	if (!found)
		return fail(im, TS_ERR_INVALID, "the model imports no opset of the default ONNX domain");
	if (im->opset < 11 || im->opset > 21)
		return fail(im, TS_ERR_UNSUPPORTED,
			    "opset %lld of the default domain is not supported; tessera imports opsets 11 to 21",
			    (long long)im->opset);
	return true;
}

static bool imp_initializers(importer *im, const onnx_graph *gr)
{
	for (size_t i = 0; i < gr->n_initializer; i++) {
		const char *name = str(gr->initializer[i]->name);
		if (!*name)
			return fail(im, TS_ERR_INVALID, "initializer #%zu has no name", i);
		onnx_name *n = name_define(im, name);
		if (!n)
			return fail(im, TS_ERR_INVALID, "initializer '%s' is defined twice", name);
		n->is_data = true;
		n->tensor = gr->initializer[i];
	}
	for (size_t i = 0; i < gr->n_sparse_initializer; i++) {
		const TesseraOnnx__TensorProto *v = gr->sparse_initializer[i]->values;
		const char *name = v ? str(v->name) : "";
		if (!*name)
			return fail(im, TS_ERR_INVALID, "sparse initializer #%zu has no name", i);
		onnx_name *n = name_define(im, name);
		if (!n)
			return fail(im, TS_ERR_INVALID, "initializer '%s' is defined twice", name);
		n->is_data = n->sparse = true;
	}
	return true;
}

/* The fixed shape of graph input `name` into dims. */
static bool input_shape(importer *im, const onnx_value_info *vi, const char *name, int *ndim,
			int64_t *dims)
{
	const TesseraOnnx__TypeProto *t = vi->type;
	if (!t || t->value_case != TESSERA_ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
		return fail(im, TS_ERR_UNSUPPORTED, "input '%s' is not a tensor", name);
	const TesseraOnnx__TypeProto__Tensor *tt = t->tensor_type;
	if (tt->elem_type != DT_FLOAT)
		return fail(im, TS_ERR_UNSUPPORTED, "input '%s' has element type %s; tessera takes FLOAT inputs only",
			    name, dt_name(tt->elem_type));
	if (!tt->shape)
		return fail(im, TS_ERR_UNSUPPORTED, "input '%s' has no shape; tessera needs every extent fixed", name);
	if (tt->shape->n_dim > TS_GRAPH_MAX_DIMS)
		return fail(im, TS_ERR_UNSUPPORTED, "input '%s' has %zu dimensions; tessera handles at most %d",
			    name, tt->shape->n_dim, TS_GRAPH_MAX_DIMS);
	for (size_t d = 0; d < tt->shape->n_dim; d++) {
		const TesseraOnnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
		if (dim->value_case == TESSERA_ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM)
			return fail(im, TS_ERR_UNSUPPORTED,
				    "input '%s' dimension %zu is symbolic ('%s'); tessera needs every extent fixed (export the model with fixed shapes)",
				    name, d, str(dim->dim_param));
		if (dim->value_case != TESSERA_ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
			return fail(im, TS_ERR_UNSUPPORTED, "input '%s' dimension %zu is unknown; tessera needs every extent fixed",
				    name, d);
		if (dim->dim_value < 1)
			return fail(im, dim->dim_value ? TS_ERR_INVALID : TS_ERR_UNSUPPORTED,
				    "input '%s' dimension %zu is %lld%s", name, d, (long long)dim->dim_value,
				    dim->dim_value ? "; an extent is positive (an unknown one is a dim_param)"
						   : "; tessera has no empty tensors");
		dims[d] = dim->dim_value;
	}
	*ndim = (int)tt->shape->n_dim;
	return true;
}

/* Whether graph input `name`, also initializer t, declares nothing that
 * disagrees with it: element type, rank and the fixed extents (a symbolic
 * or unknown one agrees).  ONNX Runtime refuses such a model; reading the
 * constant gave an output of the initializer's shape, silently. */
static bool input_agrees(importer *im, const onnx_value_info *vi, const char *name,
			 const TesseraOnnx__TensorProto *t)
{
	const TesseraOnnx__TypeProto *ty = vi->type;
	if (!t || !ty || ty->value_case != TESSERA_ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
		return true;
	const TesseraOnnx__TypeProto__Tensor *tt = ty->tensor_type;
	if (tt->elem_type && tt->elem_type != t->data_type)
		return fail(im, TS_ERR_INVALID, "graph input '%s' has element type %s, its initializer %s", name,
			    dt_name(tt->elem_type), dt_name(t->data_type));
	if (!tt->shape)
		return true;
	bool same = tt->shape->n_dim == t->n_dims;
	for (size_t d = 0; same && d < tt->shape->n_dim; d++) {
		const TesseraOnnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
		same = dim->value_case != TESSERA_ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ||
		       dim->dim_value == t->dims[d];
	}
	if (!same) {
		/* the declared shape as dims_str writes one, '?' where symbolic */
		char declared[160], given[160];
		size_t k = (size_t)snprintf(declared, sizeof(declared), "[");
		for (size_t d = 0; d < tt->shape->n_dim && k < sizeof(declared); d++) {
			const TesseraOnnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
			bool fixed = dim->value_case == TESSERA_ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
			k += fixed ? (size_t)snprintf(declared + k, sizeof(declared) - k, "%s%lld", d ? ", " : "",
						      (long long)dim->dim_value)
				   : (size_t)snprintf(declared + k, sizeof(declared) - k, "%s?", d ? ", " : "");
		}
		if (k < sizeof(declared))
			snprintf(declared + k, sizeof(declared) - k, "]");
		return fail(im, TS_ERR_INVALID, "graph input '%s' declares the shape %s, its initializer %s: "
			    "the initializer gives the input's default value, of its own shape", name, declared,
			    dims_str(given, sizeof(given), (int)t->n_dims, t->dims));
	}
	return true;
}

/* Graph inputs, in order; an input that is also an initializer (IR
 * version 3 lists every weight among the inputs; later ones use it for a
 * default that may be overridden) is read as the constant, and must agree
 * with it. */
static bool imp_inputs(importer *im, const onnx_graph *gr)
{
	for (size_t i = 0; i < gr->n_input; i++) {
		const char *name = str(gr->input[i]->name);
		int ndim = 0;
		int64_t dims[TS_GRAPH_MAX_DIMS];
		if (!*name)
			return fail(im, TS_ERR_INVALID, "graph input #%zu has no name", i);
		onnx_name *n = name_find(im, name);
		if (n && n->is_data) {
			if (!input_agrees(im, gr->input[i], name, n->tensor))
				return false;
			continue;
		}
		if (n)
			return fail(im, TS_ERR_INVALID, "graph input '%s' is listed twice", name);
		if (!input_shape(im, gr->input[i], name, &ndim, dims))
			return false;
		n = name_define(im, name);
		n->value = ts_graph_input(im->g, name, ts_float32, ndim, dims);
		if (n->value < 0)
			return graph_failed(im);
	}
	return true;
}

static bool imp_outputs(importer *im, const onnx_graph *gr)
{
	if (!gr->n_output)
		return fail(im, TS_ERR_INVALID, "the graph has no outputs");
	for (size_t i = 0; i < gr->n_output; i++) {
		const char *name = str(gr->output[i]->name);
		onnx_name *n = name_find(im, name);
		if (!n)
			return fail(im, TS_ERR_INVALID, "graph output '%s' is not computed by any node", name);
		if (n->listed_output)
			return fail(im, TS_ERR_UNSUPPORTED,
				    "graph output '%s' is listed twice; tessera takes each output once", name);
		n->listed_output = true;
		int v = operand(im, name);
		if (v < 0)
			return false;
		if (ts_graph_output(im->g, v, name) != TS_OK)
			return graph_failed(im);
	}
	return true;
}

static bool import(importer *im, const onnx_model *m)
{
	const onnx_graph *gr = m->graph;
	if (!gr)
		return fail(im, TS_ERR_INVALID, "the model has no graph");
	if (!check_opset(im, m) || !names_alloc(im, gr))
		return false;
	im->g = ts_graph_new(im->ctx);
	if (!im->g)
		return graph_failed(im);
	if (!imp_initializers(im, gr) || !imp_inputs(im, gr))
		return false;
	for (size_t i = 0; i < gr->n_node; i++) {
		im->node = gr->node[i];
		im->node_index = i;
		if (!imp_node(im))
			return false;
	}
	im->node = NULL;
	return imp_outputs(im, gr);
}

ts_graph *ts_onnx_load_bytes(ts_ctx *ctx, const void *data, size_t size, const char *what)
{
	if (!ctx)
		return NULL;
	ts_clear_error(ctx);
	importer im = {.ctx = ctx, .what = what};
	if (!data || !size) {
		if (data)
			fail(&im, TS_ERR_INVALID, "no data (0 bytes)");
		else
			fail(&im, TS_ERR_INVALID, "no data (a NULL pointer, size %zu)", size);
		return NULL;
	}
	onnx_model *m = tessera_onnx__model_proto__unpack(NULL, size, data);
	if (!m) {
		fail(&im, TS_ERR_INVALID,
		     "not an ONNX model: the protobuf does not parse (%zu bytes; truncated, or not a .onnx file)",
		     size);
		return NULL;
	}
	bool ok = import(&im, m);
	names_free(&im);
	tessera_onnx__model_proto__free_unpacked(m, NULL);
	if (ok)
		return im.g;
	ts_graph_free(im.g);
	return NULL;
}

/* A protobuf message, and so an ONNX model without external data, is
 * below 2 GiB. */
#define ONNX_MAX_BYTES ((size_t)1 << 31)

/* The whole file into a malloc'd buffer.  Devices are refused and reads
 * stop at ONNX_MAX_BYTES, so an endless source (/dev/zero, a pipe that
 * never closes with data) ends in an error rather than all of memory. */
static void *read_file(importer *im, const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return fail(im, TS_ERR_INVALID, "cannot open '%s': %s", path, strerror(errno)), NULL;
	struct stat st = {0};
	if (fstat(fileno(f), &st) == 0 && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))) {
		fclose(f);
		return fail(im, TS_ERR_INVALID, "'%s' is a device, not an ONNX model file", path), NULL;
	}
	size_t cap = 1 << 16, n = 0;
	unsigned char *buf = malloc(cap);
	bool big = S_ISREG(st.st_mode) && (uint64_t)st.st_size >= ONNX_MAX_BYTES;
	while (buf && !big) {
		n += fread(buf + n, 1, cap - n, f);
		if (n < cap || ferror(f))
			break;
		if (cap >= ONNX_MAX_BYTES) {
			big = true;
			break;
		}
		unsigned char *more = realloc(buf, cap * 2);
		if (!more)
			free(buf);
		buf = more;
		cap *= 2;
	}
	bool bad = ferror(f);
	int err = errno;
	fclose(f);
	if (!buf)
		return fail(im, TS_ERR_NOMEM, "'%s': out of memory", path), NULL;
	if (bad || big) {
		free(buf);
		if (big)
			return fail(im, TS_ERR_INVALID,
				    "'%s' is larger than 2 GiB, more than a protobuf message (an ONNX "
				    "model) can hold", path), NULL;
		return fail(im, TS_ERR_INVALID, "cannot read '%s': %s", path, strerror(err)), NULL;
	}
	*size = n;
	return buf;
}

ts_graph *ts_onnx_load(ts_ctx *ctx, const char *path)
{
	if (!ctx)
		return NULL;
	ts_clear_error(ctx);
	importer im = {.ctx = ctx};
	if (!path || !*path)
		return fail(&im, TS_ERR_INVALID, "no file named"), NULL;
	size_t size = 0;
	void *data = read_file(&im, path, &size);
	if (!data)
		return NULL;
	ts_graph *g = NULL;
	if (!size)
		fail(&im, TS_ERR_INVALID, "'%s' is empty", path);
	else
		g = ts_onnx_load_bytes(ctx, data, size, path);
	free(data);
	return g;
}

#endif /* TS_HAVE_PROTOBUF_C */
