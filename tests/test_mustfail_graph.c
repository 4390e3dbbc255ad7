/*
 * test_mustfail_graph.c - misuse of the graph API (graph.h): every call
 * given NULL pointers, counts and values out of range, absurd attributes,
 * shapes that overflow, arrays of the wrong kind, or an executable run
 * with the wrong arguments returns -1, NULL, false or an error status with
 * a message naming the call and the argument; none crashes.  Also the
 * edge cases that must work: graphs without nodes or inputs, outputs that
 * are inputs or constants, many outputs, outputs aliasing inputs.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"

#define BIG (INT64_C(1) << 31)

/* Constants' data, never zeros (filled by main). */
static float data[1024];

/* A node call that must fail with `part` in the error. */
#define NODE_FAILS(g, name, op, nin, in, attrs, part)                                   \
	do {                                                                            \
		ts_clear_error(ts_graph_ctx(g));                                        \
		ck_assert_int_eq(ts_graph_node(g, name, op, nin, in, attrs), -1);       \
		tu_assert_error(ts_graph_ctx(g), part);                                 \
	} while (0)

/* An int-returning builder call that must give -1 with `part` in the error. */
#define FAILS_NEG(ctx, call, part)                                                      \
	do {                                                                            \
		ts_clear_error(ctx);                                                    \
		ck_assert_int_eq((call), -1);                                           \
		tu_assert_error(ctx, part);                                             \
	} while (0)

static ts_gattrs attrs(void)
{
	return ts_gattrs_default();
}

/* A graph y = relu(x) + c over [2, 3], compiled; *g_out keeps the graph. */
static ts_graph_exec *small_exec(ts_ctx *ctx, ts_graph **g_out)
{
	ts_graph *g = ts_graph_new(ctx);
	int x = ts_graph_input(g, "x", ts_float32, TS_SHAPE(2, 3));
	int c = ts_graph_constant(g, "c", ts_float32, TS_SHAPE(3), data);
	int r = ts_graph_node(g, "relu", TS_GOP_RELU, 1, &x, NULL);
	int y = ts_graph_node(g, "add", TS_GOP_ADD, 2, (int[]){r, c}, NULL);
	tu_ok(ctx, ts_graph_output(g, y, "y"));
	ts_graph_exec *e = ts_graph_compile(g, NULL);
	tu_nonnull(ctx, e);
	*g_out = g;
	return e;
}

/* ---- names and defaults ------------------------------------------------------------ */

START_TEST(gop_names_out_of_range)
{
	ck_assert_str_eq(ts_gop_name(TS_GOP_CONV), "Conv");
	ck_assert_str_eq(ts_gop_name(TS_GOP_CLIP), "Clip");
	ck_assert_str_eq(ts_gop_name(TS_GOP_COUNT), "(not an operator)");
	ck_assert_str_eq(ts_gop_name((ts_gop)-1), "(not an operator)");
	ck_assert_str_eq(ts_gop_name((ts_gop)100000), "(not an operator)");
	for (int op = 0; op < TS_GOP_COUNT; op++)
		ck_assert_ptr_nonnull(ts_gop_name((ts_gop)op));
	ts_gattrs a = ts_gattrs_default();
	ck_assert_int_eq(a.stride[0], 1);
	ck_assert_int_eq(a.dilation[1], 1);
	ck_assert_int_eq(a.group, 1);
	ck_assert_int_eq(a.nperm, 0);
	ck_assert_int_eq(a.nshape, 0);
}
END_TEST

/* Without a graph or a context every call is a quiet failure. */
START_TEST(null_graph)
{
	ck_assert_ptr_null(ts_graph_new(NULL));
	ts_graph_free(NULL);
	ck_assert_ptr_null(ts_graph_ctx(NULL));
	ck_assert_int_eq(ts_graph_input(NULL, "x", ts_float32, TS_SHAPE(2)), -1);
	ck_assert_int_eq(ts_graph_constant(NULL, "c", ts_float32, TS_SHAPE(2), data), -1);
	ck_assert_int_eq(ts_graph_node(NULL, "r", TS_GOP_RELU, 1, (int[]){0}, NULL), -1);
	ck_assert_int_ne(ts_graph_output(NULL, 0, "y"), TS_OK);
	int nd = 77;
	int64_t s[TS_GRAPH_MAX_DIMS] = {0};
	ck_assert(!ts_graph_value_shape(NULL, 0, &nd, s));
	ck_assert_int_eq(nd, 77);
	ck_assert_int_eq(ts_graph_num_inputs(NULL), 0);
	ck_assert_int_eq(ts_graph_num_outputs(NULL), 0);
	ck_assert_int_eq(ts_graph_num_nodes(NULL), 0);
	ck_assert_int_eq(ts_graph_input_value(NULL, 0), -1);
	ck_assert_int_eq(ts_graph_output_value(NULL, 0), -1);
	ck_assert_ptr_null(ts_graph_value_name(NULL, 0));
	ts_graph_print(stderr, NULL);
	ts_graph_print(NULL, NULL);
	ck_assert_ptr_null(ts_graph_compile(NULL, NULL));
	ck_assert_int_ne(ts_graph_run(NULL, 0, NULL, 0, NULL), TS_OK);
	ck_assert_int_ne(ts_graph_profile(NULL, 0, NULL, 0, NULL, 1, stderr), TS_OK);
	ts_graph_exec_free(NULL);
	ts_graph_stats st = ts_graph_exec_stats(NULL);
	ck_assert_int_eq(st.kernels, 0);
	ck_assert_int_eq(st.arena_bytes, 0);
	ts_graph_exec_print(stderr, NULL);
	ts_graph_exec_print(NULL, NULL);
}
END_TEST

/* ---- inputs and constants ------------------------------------------------------------ */

START_TEST(input_bad_arguments)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = ts_graph_new(ctx);
	tu_nonnull(ctx, g);
	ck_assert_ptr_eq(ts_graph_ctx(g), ctx);
	FAILS_NEG(ctx, ts_graph_input(g, NULL, ts_float32, TS_SHAPE(2)), "graph_input: name is NULL");
	FAILS_NEG(ctx, ts_graph_input(g, "", ts_float32, TS_SHAPE(2)), "graph_input: name is empty");
	FAILS_NEG(ctx, ts_graph_input(g, "x", ts_float64, TS_SHAPE(2)),
		  "graph_input 'x': only float32 inputs are supported");
	FAILS_NEG(ctx, ts_graph_input(g, "x", ts_int64, TS_SHAPE(2)), "only float32 inputs");
	FAILS_NEG(ctx, ts_graph_input(g, "x", ts_dtype_with_lanes(ts_float32, 4), TS_SHAPE(2)),
		  "only float32 inputs");
	FAILS_NEG(ctx, ts_graph_input(g, "x", (ts_dtype){0}, TS_SHAPE(2)), "only float32 inputs");
	FAILS_NEG(ctx, ts_graph_input(g, "x", ts_float32, -1, (int64_t[]){2}),
		  "graph_input 'x': ndim -1 is out of range (0..6)");
	FAILS_NEG(ctx, ts_graph_input(g, "x", ts_float32, 7, (int64_t[]){1, 1, 1, 1, 1, 1, 1}),
		  "graph_input 'x': ndim 7 is out of range (0..6)");
	FAILS_NEG(ctx, ts_graph_input(g, "x", ts_float32, INT32_MAX, NULL), "ndim 2147483647 is out of range");
	FAILS_NEG(ctx, ts_graph_input(g, "x", ts_float32, 2, NULL),
		  "graph_input 'x': shape is NULL for 2 dimensions");
	FAILS_NEG(ctx, ts_graph_input(g, "x", ts_float32, TS_SHAPE(2, 0)),
		  "graph_input 'x': extent 0 in dimension 1 is out of range (1..2^31 - 1)");
	FAILS_NEG(ctx, ts_graph_input(g, "x", ts_float32, TS_SHAPE(-3)), "extent -3 in dimension 0");
	FAILS_NEG(ctx, ts_graph_input(g, "x", ts_float32, TS_SHAPE(BIG)), "extent 2147483648 in dimension 0");
	FAILS_NEG(ctx, ts_graph_input(g, "x", ts_float32, TS_SHAPE(INT64_MAX, 2)), "extent 9223372036854775807");
	/* every extent fits, the product does not (nor does it in int64) */
	FAILS_NEG(ctx, ts_graph_input(g, "x", ts_float32, TS_SHAPE(1 << 20, 1 << 20, 1 << 20, 1 << 20)),
		  "graph_input 'x': [1048576, 1048576, 1048576, 1048576] has more than 2^31 - 1 elements");
	FAILS_NEG(ctx, ts_graph_input(g, "x", ts_float32, TS_SHAPE(1 << 16, 1 << 15)),
		  "has more than 2^31 - 1 elements");
	ck_assert_int_eq(ts_graph_num_inputs(g), 0);
	ck_assert_int_eq(ts_graph_num_nodes(g), 0);
	/* the largest value there may be, and a scalar */
	ck_assert_int_ge(ts_graph_input(g, "x", ts_float32, TS_SHAPE(1 << 16, (1 << 15) - 1)), 0);
	ck_assert_int_ge(ts_graph_input(g, "s", ts_float32, 0, NULL), 0);
	FAILS_NEG(ctx, ts_graph_input(g, "x", ts_float32, TS_SHAPE(2)), "graph_input: the name 'x' is taken");
	ck_assert_int_eq(ts_graph_num_inputs(g), 2);
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(long_names)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = ts_graph_new(ctx);
	size_t n = 100000;
	char *name = malloc(n + 1);
	ck_assert_ptr_nonnull(name);
	memset(name, 'a', n);
	name[n] = 0;
	int x = ts_graph_input(g, name, ts_float32, TS_SHAPE(2));
	ck_assert_int_ge(x, 0);
	ck_assert_str_eq(ts_graph_value_name(g, x), name);
	/* messages are cut, not overrun */
	FAILS_NEG(ctx, ts_graph_input(g, name, ts_float32, TS_SHAPE(2)), "graph_input: the name 'aaaa");
	FAILS_NEG(ctx, ts_graph_node(g, name, TS_GOP_CONV, 1, &x, NULL), "node 'aaaa");
	int r = ts_graph_node(g, name, TS_GOP_RELU, 1, &x, NULL);
	ck_assert_int_ge(r, 0);
	FAILS_ST(ctx, ts_graph_output(g, r, NULL), "graph_output: the name 'aaaa");
	tu_ok(ctx, ts_graph_output(g, r, "y"));
	FILE *f = tmpfile();
	ck_assert_ptr_nonnull(f);
	ts_graph_print(f, g);
	ck_assert_int_gt(ftell(f), (long)n);
	fclose(f);
	free(name);
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(constant_bad_arguments)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = ts_graph_new(ctx);
	FAILS_NEG(ctx, ts_graph_constant(g, "c", ts_float32, TS_SHAPE(4), NULL), "graph_constant 'c': data is NULL");
	FAILS_NEG(ctx, ts_graph_constant(g, "c", ts_float64, TS_SHAPE(4), data),
		  "graph_constant 'c': only float32 and int64 constants are supported");
	FAILS_NEG(ctx, ts_graph_constant(g, "c", ts_int32, TS_SHAPE(4), data), "only float32 and int64");
	FAILS_NEG(ctx, ts_graph_constant(g, "c", ts_float32, 9, (int64_t[9]){0}, data), "graph_constant 'c': ndim 9 is out of range");
	FAILS_NEG(ctx, ts_graph_constant(g, "c", ts_float32, 1, NULL, data),
		  "graph_constant 'c': shape is NULL for 1 dimensions");
	FAILS_NEG(ctx, ts_graph_constant(g, "c", ts_float32, TS_SHAPE(4, -1), data), "extent -1 in dimension 1");
	FAILS_NEG(ctx, ts_graph_constant(g, "c", ts_float32, TS_SHAPE(BIG, BIG, BIG), data), "extent 2147483648");
	FAILS_NEG(ctx, ts_graph_constant(g, "c", ts_float32, TS_SHAPE(1 << 30, 1 << 30), data),
		  "has more than 2^31 - 1 elements");
	/* a constant without a name gets one */
	int c = ts_graph_constant(g, NULL, ts_float32, TS_SHAPE(4), data);
	ck_assert_int_ge(c, 0);
	ck_assert_str_eq(ts_graph_value_name(g, c), "c0");
	int e = ts_graph_constant(g, "", ts_float32, 0, NULL, data);
	ck_assert_str_eq(ts_graph_value_name(g, e), "c1");
	/* int64 constants are data, never operands or outputs */
	int64_t shape[2] = {3, 2};
	int i = ts_graph_constant(g, "shape", ts_int64, 1, (int64_t[]){2}, shape);
	ck_assert_int_ge(i, 0);
	NODE_FAILS(g, "r", TS_GOP_RELU, 1, &i, NULL, "node 'r' (Relu): input 0 (shape) is not float32");
	FAILS_ST(ctx, ts_graph_output(g, i, NULL), "graph_output: 'shape' is not float32");
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

/* ---- nodes ---------------------------------------------------------------------------- */

START_TEST(node_bad_arguments)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = ts_graph_new(ctx);
	int x = ts_graph_input(g, "x", ts_float32, TS_SHAPE(2, 3));
	NODE_FAILS(g, "n", (ts_gop)-1, 1, &x, NULL, "node 'n': -1 is not an operator");
	NODE_FAILS(g, "n", TS_GOP_COUNT, 1, &x, NULL, "is not an operator");
	NODE_FAILS(g, "n", (ts_gop)123456, 1, &x, NULL, "node 'n': 123456 is not an operator");
	NODE_FAILS(g, "n", TS_GOP_RELU, -1, &x, NULL, "node 'n' (Relu): ninputs -1 is out of range (0..16)");
	NODE_FAILS(g, "n", TS_GOP_CONCAT, 17, &x, NULL, "node 'n' (Concat): ninputs 17 is out of range");
	NODE_FAILS(g, "n", TS_GOP_RELU, 1, NULL, NULL, "node 'n' (Relu): inputs is NULL for 1 inputs");
	NODE_FAILS(g, "n", TS_GOP_ADD, 2, ((int[]){x, -1}), NULL,
		   "node 'n' (Add): input 1 is -1, not a value of the graph");
	NODE_FAILS(g, "n", TS_GOP_ADD, 2, ((int[]){99, x}), NULL, "input 0 is 99, not a value of the graph");
	NODE_FAILS(g, "n", TS_GOP_RELU, 1, (int[]){INT32_MIN}, NULL, "input 0 is -2147483648");
	NODE_FAILS(g, "n", TS_GOP_RELU, 0, NULL, NULL, "node 'n' (Relu): has no inputs");
	NODE_FAILS(g, "n", TS_GOP_CONCAT, 0, NULL, NULL, "node 'n' (Concat): takes 1 to 16 inputs, got 0");
	NODE_FAILS(g, "n", TS_GOP_RELU, 2, ((int[]){x, x}), NULL, "node 'n' (Relu): takes 1 inputs, got 2");
	NODE_FAILS(g, "n", TS_GOP_ADD, 1, &x, NULL, "node 'n' (Add): takes 2 inputs, got 1");
	NODE_FAILS(g, "n", TS_GOP_CONV, 4, ((int[]){x, x, x, x}), NULL, "node 'n' (Conv): takes 2 to 3 inputs, got 4");
	NODE_FAILS(g, "n", TS_GOP_BATCHNORM, 3, ((int[]){x, x, x}), NULL, "takes 5 inputs, got 3");
	/* a value of another graph is only an index here: out of range, refused */
	ts_graph *h = ts_graph_new(ctx);
	int hx = -1;
	for (int i = 0; i < 5; i++)
		hx = ts_graph_input(h, ts_sprintf(ctx, "h%d", i), ts_float32, TS_SHAPE(2, 3));
	NODE_FAILS(g, "n", TS_GOP_RELU, 1, &hx, NULL, "input 0 is 4, not a value of the graph");
	ts_graph_free(h);
	/* no name: one is made */
	int r = ts_graph_node(g, NULL, TS_GOP_RELU, 1, &x, NULL);
	ck_assert_int_ge(r, 0);
	ck_assert_str_eq(ts_graph_value_name(g, r), "n0");
	r = ts_graph_node(g, "", TS_GOP_RELU, 1, &x, NULL);
	ck_assert_str_eq(ts_graph_value_name(g, r), "n1");
	NODE_FAILS(g, NULL, (ts_gop)-7, 1, &x, NULL, "node 'n2': -7 is not an operator");
	ck_assert_int_eq(ts_graph_num_nodes(g), 2);
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

/* A scalar result has no kernel: refused where it is made. */
START_TEST(node_scalar_output)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = ts_graph_new(ctx);
	int s = ts_graph_input(g, "s", ts_float32, 0, NULL);
	int k = ts_graph_constant(g, "k", ts_float32, 0, NULL, data);
	int v = ts_graph_input(g, "v", ts_float32, TS_SHAPE(1));
	NODE_FAILS(g, "r", TS_GOP_RELU, 1, &s, NULL,
		   "node 'r' (Relu): the output is a scalar; nodes compute values of 1 to 6 dimensions");
	NODE_FAILS(g, "m", TS_GOP_MUL, 2, ((int[]){s, k}), NULL, "node 'm' (Mul): the output is a scalar");
	ts_gattrs a = attrs();
	a.nshape = 0;
	NODE_FAILS(g, "rs", TS_GOP_RESHAPE, 1, &v, &a, "node 'rs' (Reshape): the output is a scalar");
	/* MatMul of a scalar and a vector, either way round */
	NODE_FAILS(g, "mm", TS_GOP_MATMUL, 2, ((int[]){s, v}), NULL,
		   "node 'mm' (MatMul): a scalar operand has no rows or columns: s[] x v[1]");
	NODE_FAILS(g, "mm", TS_GOP_MATMUL, 2, ((int[]){v, k}), NULL,
		   "node 'mm' (MatMul): a scalar operand has no rows or columns: v[1] x k[]");
	/* a scalar operand broadcasts */
	int y = ts_graph_node(g, "m", TS_GOP_MUL, 2, (int[]){v, k}, NULL);
	ck_assert_int_ge(y, 0);
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(conv_bad_attributes)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = ts_graph_new(ctx);
	int x = ts_graph_input(g, "x", ts_float32, TS_SHAPE(1, 4, 8, 8));
	int w = ts_graph_constant(g, "w", ts_float32, TS_SHAPE(2, 4, 3, 3), data);
	int wg = ts_graph_constant(g, "wg", ts_float32, TS_SHAPE(4, 2, 3, 3), data);
	int in[3] = {x, w, -1};
	ts_gattrs a = attrs();
	a.stride[0] = 0;
	NODE_FAILS(g, "c", TS_GOP_CONV, 2, in, &a,
		   "node 'c' (Conv): bad height window: kernel 3, stride 0, pads 0/0, dilation 1");
	a = attrs(), a.stride[1] = -2;
	NODE_FAILS(g, "c", TS_GOP_CONV, 2, in, &a, "bad width window: kernel 3, stride -2");
	a = attrs(), a.stride[1] = INT64_C(1) << 32;
	NODE_FAILS(g, "c", TS_GOP_CONV, 2, in, &a, "node 'c' (Conv): stride (width) 4294967296 does not fit in 32 bits");
	a = attrs(), a.stride[0] = INT64_MIN;
	NODE_FAILS(g, "c", TS_GOP_CONV, 2, in, &a, "stride (height) -9223372036854775808 does not fit in 32 bits");
	a = attrs(), a.pad[2] = -1;
	NODE_FAILS(g, "c", TS_GOP_CONV, 2, in, &a, "bad height window: kernel 3, stride 1, pads 0/-1");
	/* pads that would overflow int64 arithmetic */
	a = attrs(), a.pad[0] = a.pad[2] = INT64_MAX - 2;
	NODE_FAILS(g, "c", TS_GOP_CONV, 2, in, &a, "pad (top) 9223372036854775805 does not fit in 32 bits");
	a = attrs(), a.pad[3] = INT64_MAX;
	NODE_FAILS(g, "c", TS_GOP_CONV, 2, in, &a, "pad (right) 9223372036854775807 does not fit in 32 bits");
	/* pads that fit, whose output does not */
	a = attrs(), a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = INT32_MAX;
	NODE_FAILS(g, "c", TS_GOP_CONV, 2, in, &a, "node 'c' (Conv): the output [1, 2, 4294967300, 4294967300] has more than 2^31 - 1 elements");
	a = attrs(), a.dilation[0] = 0;
	NODE_FAILS(g, "c", TS_GOP_CONV, 2, in, &a, "bad height window: kernel 3, stride 1, pads 0/0, dilation 0");
	a = attrs(), a.dilation[1] = INT64_MAX / 2;
	NODE_FAILS(g, "c", TS_GOP_CONV, 2, in, &a, "dilation (width) 4611686018427387903 does not fit in 32 bits");
	a = attrs(), a.dilation[0] = INT32_MAX;
	NODE_FAILS(g, "c", TS_GOP_CONV, 2, in, &a,
		   "the height window (4294967295) is larger than the padded input (8)");
	a = attrs(), a.group = 0;
	NODE_FAILS(g, "c", TS_GOP_CONV, 2, in, &a, "node 'c' (Conv): group 0 must divide the input channels of x[1, 4, 8, 8] and the output channels of w[2, 4, 3, 3]");
	a = attrs(), a.group = -2;
	NODE_FAILS(g, "c", TS_GOP_CONV, 2, in, &a, "group -2 must divide");
	a = attrs(), a.group = 3;
	NODE_FAILS(g, "c", TS_GOP_CONV, 2, in, &a, "group 3 must divide");
	a = attrs(), a.group = INT64_C(1) << 40;
	NODE_FAILS(g, "c", TS_GOP_CONV, 2, in, &a, "group 1099511627776 does not fit in 32 bits");
	a = attrs(), a.group = 2;
	NODE_FAILS(g, "c", TS_GOP_CONV, 2, in, &a, "input channels differ: x[1, 4, 8, 8], w[2, 4, 3, 3] (group 2)");
	ck_assert_int_ge(ts_graph_node(g, "cg", TS_GOP_CONV, 2, (int[]){x, wg}, &a), 0);
	a = attrs(), a.kernel[0] = 5;
	NODE_FAILS(g, "c", TS_GOP_CONV, 2, in, &a, "kernel_shape 5x0 differs from the weights w[2, 4, 3, 3]");
	a = attrs(), a.kernel[1] = -3;
	NODE_FAILS(g, "c", TS_GOP_CONV, 2, in, &a, "kernel_shape 0x-3 differs");
	/* a kernel larger than the (padded) image */
	int big = ts_graph_constant(g, "big", ts_float32, TS_SHAPE(1, 4, 9, 1), data);
	NODE_FAILS(g, "c", TS_GOP_CONV, 2, ((int[]){x, big}), NULL,
		   "the height window (9) is larger than the padded input (8)");
	a = attrs(), a.pad[0] = 1;
	ck_assert_int_ge(ts_graph_node(g, "c9", TS_GOP_CONV, 2, (int[]){x, big}, &a), 0);
	/* operands of the wrong rank or size */
	int b = ts_graph_constant(g, "b", ts_float32, TS_SHAPE(3), data);
	in[2] = b;
	NODE_FAILS(g, "c", TS_GOP_CONV, 3, in, NULL, "node 'c' (Conv): the bias must be [2]: b[3]");
	NODE_FAILS(g, "c", TS_GOP_CONV, 2, ((int[]){b, w}), NULL, "input 0 must have 4 dimensions: b[3]");
	NODE_FAILS(g, "c", TS_GOP_CONV, 2, ((int[]){x, b}), NULL, "input 1 must have 4 dimensions: b[3]");
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(pool_bad_attributes)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = ts_graph_new(ctx);
	int x = ts_graph_input(g, "x", ts_float32, TS_SHAPE(1, 2, 6, 6));
	ts_gattrs a = attrs();
	NODE_FAILS(g, "p", TS_GOP_MAXPOOL, 1, &x, &a, "node 'p' (MaxPool): kernel 0x0 must be positive");
	NODE_FAILS(g, "p", TS_GOP_AVGPOOL, 1, &x, NULL, "node 'p' (AveragePool): kernel 0x0 must be positive");
	a.kernel[0] = 2, a.kernel[1] = -2;
	NODE_FAILS(g, "p", TS_GOP_MAXPOOL, 1, &x, &a, "kernel 2x-2 must be positive");
	a.kernel[1] = INT64_C(1) << 33;
	NODE_FAILS(g, "p", TS_GOP_MAXPOOL, 1, &x, &a, "node 'p' (MaxPool): kernel (width) 8589934592 does not fit in 32 bits");
	a.kernel[1] = 7;
	NODE_FAILS(g, "p", TS_GOP_MAXPOOL, 1, &x, &a, "the width window (7) is larger than the padded input (6)");
	a.kernel[1] = 2, a.stride[0] = 0;
	NODE_FAILS(g, "p", TS_GOP_AVGPOOL, 1, &x, &a, "bad height window: kernel 2, stride 0");
	a.stride[0] = INT64_MAX;
	NODE_FAILS(g, "p", TS_GOP_AVGPOOL, 1, &x, &a, "stride (height) 9223372036854775807 does not fit in 32 bits");
	a.stride[0] = 1, a.pad[1] = 2;
	NODE_FAILS(g, "p", TS_GOP_MAXPOOL, 1, &x, &a, "pads (0, 2, 0, 0) must be smaller than the kernel 2x2");
	a.pad[1] = -1;
	NODE_FAILS(g, "p", TS_GOP_MAXPOOL, 1, &x, &a, "bad width window: kernel 2, stride 1, pads -1/0");
	a.pad[1] = INT64_MIN;
	NODE_FAILS(g, "p", TS_GOP_MAXPOOL, 1, &x, &a, "pad (left) -9223372036854775808 does not fit in 32 bits");
	a.pad[1] = 0, a.dilation[0] = 2;
	NODE_FAILS(g, "p", TS_GOP_MAXPOOL, 1, &x, &a, "node 'p' (MaxPool): dilated pooling is not supported");
	a.dilation[0] = 1;
	ck_assert_int_ge(ts_graph_node(g, "p", TS_GOP_MAXPOOL, 1, &x, &a), 0);
	int v = ts_graph_input(g, "v", ts_float32, TS_SHAPE(2, 6));
	NODE_FAILS(g, "p", TS_GOP_MAXPOOL, 1, &v, &a, "input 0 must have 4 dimensions: v[2, 6]");
	NODE_FAILS(g, "gp", TS_GOP_GLOBALAVGPOOL, 1, &v, NULL,
		   "node 'gp' (GlobalAveragePool): input 0 must have 4 dimensions: v[2, 6]");
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(transpose_reshape_bad_attributes)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = ts_graph_new(ctx);
	int x = ts_graph_input(g, "x", ts_float32, TS_SHAPE(2, 3, 4));
	ts_gattrs a = attrs();
	a.nperm = 7;
	NODE_FAILS(g, "t", TS_GOP_TRANSPOSE, 1, &x, &a, "node 't' (Transpose): perm has 7 entries");
	a.nperm = -1;
	NODE_FAILS(g, "t", TS_GOP_TRANSPOSE, 1, &x, &a, "perm has -1 entries");
	a.nperm = INT32_MIN;
	NODE_FAILS(g, "r", TS_GOP_RELU, 1, &x, &a, "node 'r' (Relu): perm has -2147483648 entries");
	a.nperm = 2;
	NODE_FAILS(g, "t", TS_GOP_TRANSPOSE, 1, &x, &a, "perm has 2 entries for x[2, 3, 4]");
	a.nperm = 3, a.perm[0] = 0, a.perm[1] = 0, a.perm[2] = 1;
	NODE_FAILS(g, "t", TS_GOP_TRANSPOSE, 1, &x, &a, "perm is not a permutation of 0..2");
	a.perm[1] = 3;
	NODE_FAILS(g, "t", TS_GOP_TRANSPOSE, 1, &x, &a, "perm is not a permutation of 0..2");
	a.perm[1] = -1;
	NODE_FAILS(g, "t", TS_GOP_TRANSPOSE, 1, &x, &a, "perm is not a permutation of 0..2");
	a.perm[1] = INT64_MAX;
	NODE_FAILS(g, "t", TS_GOP_TRANSPOSE, 1, &x, &a, "perm is not a permutation of 0..2");
	a.perm[1] = 2;
	int t = ts_graph_node(g, "t", TS_GOP_TRANSPOSE, 1, &x, &a);
	int nd;
	int64_t s[TS_GRAPH_MAX_DIMS];
	ck_assert(ts_graph_value_shape(g, t, &nd, s));
	ck_assert_int_eq(nd, 3);
	ck_assert(s[0] == 2 && s[1] == 4 && s[2] == 3);

	a = attrs();
	a.nshape = -1;
	NODE_FAILS(g, "r", TS_GOP_RESHAPE, 1, &x, &a,
		   "node 'r' (Reshape): the target shape has -1 dimensions (at most 6)");
	a.nshape = 7;
	NODE_FAILS(g, "r", TS_GOP_RESHAPE, 1, &x, &a, "the target shape has 7 dimensions");
	a.nshape = 3, a.shape[0] = -1, a.shape[1] = -1, a.shape[2] = 4;
	NODE_FAILS(g, "r", TS_GOP_RESHAPE, 1, &x, &a,
		   "the target shape has -1 at dimensions 0 and 1; only one extent can be inferred");
	a.nshape = 5, a.shape[0] = 0, a.shape[1] = 0, a.shape[2] = 0, a.shape[3] = 0, a.shape[4] = 1;
	NODE_FAILS(g, "r", TS_GOP_RESHAPE, 1, &x, &a, "bad extent 0 at dimension 3 of the target shape");
	a.nshape = 2, a.shape[0] = -2, a.shape[1] = 12;
	NODE_FAILS(g, "r", TS_GOP_RESHAPE, 1, &x, &a, "bad extent -2 at dimension 0");
	a.shape[0] = INT64_MAX, a.shape[1] = INT64_MAX;
	NODE_FAILS(g, "r", TS_GOP_RESHAPE, 1, &x, &a, "bad extent 9223372036854775807 at dimension 0");
	a.shape[0] = 1 << 16, a.shape[1] = 1 << 16;
	NODE_FAILS(g, "r", TS_GOP_RESHAPE, 1, &x, &a, "bad extent 65536 at dimension 1");
	a.shape[0] = 5, a.shape[1] = -1;
	NODE_FAILS(g, "r", TS_GOP_RESHAPE, 1, &x, &a,
		   "cannot infer dimension 1: x[2, 3, 4] has 24 elements, not a multiple of 5");
	a.shape[0] = 5, a.shape[1] = 5;
	NODE_FAILS(g, "r", TS_GOP_RESHAPE, 1, &x, &a, "x[2, 3, 4] has 24 elements; the target [5, 5] has 25");
	a.shape[0] = 0, a.shape[1] = -1;
	int r = ts_graph_node(g, "r", TS_GOP_RESHAPE, 1, &x, &a);
	ck_assert(ts_graph_value_shape(g, r, &nd, s));
	ck_assert(nd == 2 && s[0] == 2 && s[1] == 12);

	a = attrs();
	a.axis = 4;
	NODE_FAILS(g, "f", TS_GOP_FLATTEN, 1, &x, &a, "node 'f' (Flatten): axis 4 is out of range for 3 dimensions");
	a.axis = -5;
	NODE_FAILS(g, "f", TS_GOP_FLATTEN, 1, &x, &a, "axis -5 is out of range");
	a.axis = INT64_MIN;
	NODE_FAILS(g, "f", TS_GOP_FLATTEN, 1, &x, &a, "axis -9223372036854775808 is out of range");
	a.axis = INT64_MAX;
	NODE_FAILS(g, "f", TS_GOP_FLATTEN, 1, &x, &a, "axis 9223372036854775807 is out of range");
	a.axis = 3;
	ck_assert_int_ge(ts_graph_node(g, "f", TS_GOP_FLATTEN, 1, &x, &a), 0);
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(norm_softmax_bad_attributes)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = ts_graph_new(ctx);
	int x = ts_graph_input(g, "x", ts_float32, TS_SHAPE(2, 4));
	int s = ts_graph_constant(g, "s", ts_float32, TS_SHAPE(4), data);
	int s0 = ts_graph_constant(g, "s0", ts_float32, 0, NULL, data);
	int x1 = ts_graph_input(g, "x1", ts_float32, TS_SHAPE(2, 1));
	ts_gattrs a = attrs();
	a.epsilon = NAN;
	NODE_FAILS(g, "ln", TS_GOP_LAYERNORM, 2, ((int[]){x, s}), &a,
		   "node 'ln' (LayerNormalization): epsilon must be positive, got nan");
	a.epsilon = 0;
	NODE_FAILS(g, "ln", TS_GOP_LAYERNORM, 2, ((int[]){x, s}), &a, "epsilon must be positive, got 0");
	a.epsilon = 1e-50; /* positive, but 0 in the float32 kernel */
	NODE_FAILS(g, "ln", TS_GOP_LAYERNORM, 2, ((int[]){x, s}), &a, "epsilon 1e-50 rounds to 0 in float32");
	a.epsilon = 1e39; /* finite, but infinite in the float32 kernel */
	NODE_FAILS(g, "ln", TS_GOP_LAYERNORM, 2, ((int[]){x, s}), &a,
		   "epsilon 1e+39 rounds to infinity in float32");
	a.epsilon = -1;
	NODE_FAILS(g, "ln", TS_GOP_LAYERNORM, 2, ((int[]){x, s}), &a, "epsilon must be positive, got -1");
	a.epsilon = INFINITY;
	NODE_FAILS(g, "ln", TS_GOP_LAYERNORM, 2, ((int[]){x, s}), &a, "epsilon must be positive, got inf");
	a = attrs(), a.axis = 0;
	NODE_FAILS(g, "ln", TS_GOP_LAYERNORM, 2, ((int[]){x, s}), &a, "only the last axis is supported (axis 0 of x[2, 4])");
	a.axis = 1000;
	NODE_FAILS(g, "ln", TS_GOP_LAYERNORM, 2, ((int[]){x, s}), &a, "axis 1000 is out of range for 2 dimensions");
	NODE_FAILS(g, "ln", TS_GOP_LAYERNORM, 2, ((int[]){x, x}), NULL, "scale and bias must be [4]: x[2, 4]");
	/* a scalar scale of a row of one */
	NODE_FAILS(g, "ln", TS_GOP_LAYERNORM, 2, ((int[]){x1, s0}), NULL, "scale and bias must be [1]: s0[]");
	NODE_FAILS(g, "ln", TS_GOP_LAYERNORM, 1, &x, NULL, "takes 2 to 3 inputs, got 1");
	ck_assert_int_ge(ts_graph_node(g, "ln", TS_GOP_LAYERNORM, 3, (int[]){x, s, s}, NULL), 0);

	a = attrs(), a.axis = 0;
	NODE_FAILS(g, "sm", TS_GOP_SOFTMAX, 1, &x, &a, "node 'sm' (Softmax): only the last axis is supported (axis 0 of x[2, 4])");
	a.axis = -3;
	NODE_FAILS(g, "sm", TS_GOP_SOFTMAX, 1, &x, &a, "axis -3 is out of range for 2 dimensions");

	int xb = ts_graph_input(g, "xb", ts_float32, TS_SHAPE(1, 2, 3));
	int c = ts_graph_constant(g, "c", ts_float32, TS_SHAPE(2), data);
	int c3 = ts_graph_constant(g, "c3", ts_float32, TS_SHAPE(3), data);
	int v = ts_graph_input(g, "v", ts_float32, TS_SHAPE(4));
	a = attrs(), a.epsilon = NAN;
	NODE_FAILS(g, "bn", TS_GOP_BATCHNORM, 5, ((int[]){xb, c, c, c, c}), &a,
		   "node 'bn' (BatchNormalization): epsilon must be positive, got nan");
	NODE_FAILS(g, "bn", TS_GOP_BATCHNORM, 5, ((int[]){xb, c, c3, c, c}), NULL,
		   "bias must have 2 elements along its first dimension: c3[3]");
	NODE_FAILS(g, "bn", TS_GOP_BATCHNORM, 5, ((int[]){x, c, c, c, c}), NULL,
		   "scale must have 4 elements along its first dimension: c[2]");
	NODE_FAILS(g, "bn", TS_GOP_BATCHNORM, 5, ((int[]){v, c, c, c, c}), NULL, "needs at least 2 dimensions: v[4]");
	/* statistics that are not constants: refused when added, not when compiled */
	int ci = ts_graph_input(g, "ci", ts_float32, TS_SHAPE(2));
	int cn = ts_graph_node(g, "cn", TS_GOP_NEG, 1, &c, NULL);
	NODE_FAILS(g, "bn", TS_GOP_BATCHNORM, 5, ((int[]){xb, c, c, ci, c}), NULL,
		   "node 'bn' (BatchNormalization): input 3 (ci) is not a constant; only inference-mode batch "
		   "normalization with constant statistics is supported");
	NODE_FAILS(g, "bn", TS_GOP_BATCHNORM, 5, ((int[]){xb, cn, c, c, c}), NULL, "input 1 (cn) is not a constant");
	ck_assert_int_ge(ts_graph_node(g, "bn", TS_GOP_BATCHNORM, 5, (int[]){xb, c, c, c, c}, NULL), 0);
	/* BatchNormalization has no axis: whatever attrs.axis says */
	a = attrs(), a.axis = 7;
	ck_assert_int_ge(ts_graph_node(g, "bn7", TS_GOP_BATCHNORM, 5, (int[]){xb, c, c, c, c}, &a), 0);
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(concat_elementwise_bad_attributes)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = ts_graph_new(ctx);
	int x = ts_graph_input(g, "x", ts_float32, TS_SHAPE(2, 3));
	int y = ts_graph_input(g, "y", ts_float32, TS_SHAPE(4, 3));
	int s = ts_graph_input(g, "s", ts_float32, 0, NULL);
	ts_gattrs a = attrs();
	a.axis = 2;
	NODE_FAILS(g, "cat", TS_GOP_CONCAT, 2, ((int[]){x, y}), &a, "node 'cat' (Concat): axis 2 is out of range for 2 dimensions");
	a.axis = 1;
	NODE_FAILS(g, "cat", TS_GOP_CONCAT, 2, ((int[]){x, y}), &a, "x[2, 3] and y[4, 3] differ outside axis 1");
	NODE_FAILS(g, "cat", TS_GOP_CONCAT, 2, ((int[]){s, s}), &a, "scalars cannot be concatenated");
	a.axis = 0;
	NODE_FAILS(g, "cat", TS_GOP_CONCAT, 2, ((int[]){x, s}), &a, "x[2, 3] and s[] differ outside axis 0");
	int sixteen[16];
	for (int i = 0; i < 16; i++)
		sixteen[i] = i % 2 ? x : y;
	int cat = ts_graph_node(g, "cat", TS_GOP_CONCAT, 16, sixteen, &a);
	int nd;
	int64_t sh[TS_GRAPH_MAX_DIMS];
	ck_assert(ts_graph_value_shape(g, cat, &nd, sh));
	ck_assert(nd == 2 && sh[0] == 48 && sh[1] == 3);

	NODE_FAILS(g, "add", TS_GOP_ADD, 2, ((int[]){x, y}), NULL,
		   "node 'add' (Add): shapes do not broadcast: x[2, 3] and y[4, 3] (dimension 0: 2 vs 4)");
	a = attrs(), a.alpha = 2, a.beta = 1; /* min above max: ONNX's Clip gives max */
	ck_assert_int_ge(ts_graph_node(g, "clip", TS_GOP_CLIP, 1, &x, &a), 0);
	a.alpha = NAN;
	NODE_FAILS(g, "clip", TS_GOP_CLIP, 1, &x, &a, "node 'clip' (Clip): min nan and max 1 must not be NaN");
	a.alpha = -INFINITY, a.beta = NAN;
	NODE_FAILS(g, "clip", TS_GOP_CLIP, 1, &x, &a, "min -inf and max nan must not be NaN");
	a.beta = INFINITY;
	ck_assert_int_ge(ts_graph_node(g, "clip", TS_GOP_CLIP, 1, &x, &a), 0);

	/* products of shapes that fit, whose result does not */
	int p = ts_graph_input(g, "p", ts_float32, TS_SHAPE(1 << 16, 1));
	int q = ts_graph_input(g, "q", ts_float32, TS_SHAPE(1, 1 << 16));
	NODE_FAILS(g, "pq", TS_GOP_MUL, 2, ((int[]){p, q}), NULL,
		   "node 'pq' (Mul): the output [65536, 65536] has more than 2^31 - 1 elements");
	NODE_FAILS(g, "mm", TS_GOP_MATMUL, 2, ((int[]){p, q}), NULL,
		   "node 'mm' (MatMul): the output [65536, 65536] has more than 2^31 - 1 elements");
	int w = ts_graph_input(g, "w", ts_float32, TS_SHAPE(1 << 30));
	int ws[3] = {w, w, w};
	a = attrs(), a.axis = 0;
	NODE_FAILS(g, "cat3", TS_GOP_CONCAT, 3, ws, &a, "node 'cat3' (Concat): the output [3221225472] has more than 2^31 - 1 elements");
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(matmul_gemm_bad_shapes)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = ts_graph_new(ctx);
	int a = ts_graph_input(g, "a", ts_float32, TS_SHAPE(2, 3));
	int b = ts_graph_input(g, "b", ts_float32, TS_SHAPE(4, 5));
	int v = ts_graph_input(g, "v", ts_float32, TS_SHAPE(3));
	int c = ts_graph_input(g, "c", ts_float32, TS_SHAPE(3, 5));
	NODE_FAILS(g, "mm", TS_GOP_MATMUL, 2, ((int[]){a, b}), NULL, "node 'mm' (MatMul): inner extents differ: a[2, 3] x b[4, 5] (3 vs 4)");
	NODE_FAILS(g, "mm", TS_GOP_MATMUL, 2, ((int[]){b, v}), NULL,
		   "node 'mm' (MatMul): inner extents differ: b[4, 5] x v[3] (5 vs 3)");
	NODE_FAILS(g, "mm", TS_GOP_MATMUL, 2, ((int[]){v, b}), NULL,
		   "node 'mm' (MatMul): inner extents differ: v[3] x b[4, 5] (3 vs 4)");
	NODE_FAILS(g, "mm", TS_GOP_MATMUL, 2, ((int[]){v, v}), NULL,
		   "two 1-D operands (a dot product) are not supported: v[3] x v[3]");
	/* batch dimensions that do not broadcast are named as such */
	int b2 = ts_graph_input(g, "b2", ts_float32, TS_SHAPE(2, 3, 4)),
	    b3 = ts_graph_input(g, "b3", ts_float32, TS_SHAPE(3, 4, 5));
	NODE_FAILS(g, "mm", TS_GOP_MATMUL, 2, ((int[]){b2, b3}), NULL,
		   "node 'mm' (MatMul): batch dimensions do not broadcast: b2[2, 3, 4] x b3[3, 4, 5] "
		   "(batch dimension 0: 2 vs 3)");
	/* a MatMul of a vector is three nodes inside: attributes it refuses
	 * are named by it, and the graph is left as it was */
	int b4 = ts_graph_input(g, "b4", ts_float32, TS_SHAPE(4, 2, 3));
	ts_gattrs badp = attrs();
	badp.nperm = -2;
	int nodes = ts_graph_num_nodes(g);
	NODE_FAILS(g, "mv", TS_GOP_MATMUL, 2, ((int[]){b4, v}), &badp, "node 'mv' (MatMul): perm has -2 entries");
	NODE_FAILS(g, "mv", TS_GOP_MATMUL, 2, ((int[]){v, c}), &badp, "node 'mv' (MatMul): perm has -2 entries");
	ck_assert_int_eq(ts_graph_num_nodes(g), nodes);
	ck_assert_int_ge(ts_graph_node(g, "mv", TS_GOP_MATMUL, 2, (int[]){b4, v}, NULL), 0);
	ck_assert_int_eq(ts_graph_num_nodes(g), nodes + 3);
	/* a 1-D operand of another dtype is named by the MatMul, not its views */
	int k = ts_graph_constant(g, "k", ts_int64, 1, (int64_t[]){5}, (int64_t[]){1, 2, 3, 4, 5});
	NODE_FAILS(g, "mm", TS_GOP_MATMUL, 2, ((int[]){b, k}), NULL,
		   "node 'mm' (MatMul): input 1 (k) is not float32");
	NODE_FAILS(g, "g", TS_GOP_GEMM, 2, ((int[]){a, b}), NULL, "node 'g' (Gemm): inner extents differ: a[2, 3] x b[4, 5] (3 vs 4)");
	NODE_FAILS(g, "g", TS_GOP_GEMM, 2, ((int[]){a, v}), NULL, "input 1 must have 2 dimensions: v[3]");
	ts_gattrs at = attrs();
	at.trans_a = true;
	NODE_FAILS(g, "g", TS_GOP_GEMM, 2, ((int[]){a, c}), &at, "inner extents differ: a[2, 3]' x c[3, 5] (2 vs 3)");
	NODE_FAILS(g, "g", TS_GOP_GEMM, 3, ((int[]){a, c, a}), NULL,
		   "shapes do not broadcast: (A x B)[2, 5] and a[2, 3]");
	int c3 = ts_graph_input(g, "c3", ts_float32, TS_SHAPE(1, 2, 5));
	NODE_FAILS(g, "g", TS_GOP_GEMM, 3, ((int[]){a, c, c3}), NULL, "C c3[1, 2, 5] does not broadcast to [2, 5]");
	/* a flag holding another byte than 0 or 1 is true */
	ts_gattrs odd = attrs();
	unsigned char two = 2;
	memcpy(&odd.trans_b, &two, 1);
	int bt = ts_graph_input(g, "bt", ts_float32, TS_SHAPE(5, 3));
	int y = ts_graph_node(g, "g", TS_GOP_GEMM, 2, (int[]){a, bt}, &odd);
	int nd;
	int64_t s[TS_GRAPH_MAX_DIMS];
	ck_assert(ts_graph_value_shape(g, y, &nd, s));
	ck_assert(nd == 2 && s[0] == 2 && s[1] == 5);
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

/* ---- outputs and queries ----------------------------------------------------------- */

START_TEST(output_bad_arguments)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = ts_graph_new(ctx);
	int x = ts_graph_input(g, "x", ts_float32, TS_SHAPE(2));
	int r = ts_graph_node(g, "r", TS_GOP_RELU, 1, &x, NULL);
	int n = ts_graph_node(g, "n", TS_GOP_NEG, 1, &x, NULL);
	FAILS_ST(ctx, ts_graph_output(g, -1, "y"), "graph_output: -1 is not a value of the graph");
	FAILS_ST(ctx, ts_graph_output(g, 3, "y"), "graph_output: 3 is not a value of the graph");
	FAILS_ST(ctx, ts_graph_output(g, INT32_MAX, NULL), "graph_output: 2147483647 is not a value");
	FAILS_ST(ctx, ts_graph_output(g, r, "x"), "graph_output: the name 'x' is taken");
	tu_ok(ctx, ts_graph_output(g, r, "y"));
	FAILS_ST(ctx, ts_graph_output(g, r, "y2"),
		 "graph_output: value 1 ('y') is already an output; it cannot also be 'y2'");
	FAILS_ST(ctx, ts_graph_output(g, n, "y"), "graph_output: the name 'y' is taken");
	FAILS_NEG(ctx, ts_graph_input(g, "y", ts_float32, TS_SHAPE(2)), "graph_input: the name 'y' is taken");
	tu_ok(ctx, ts_graph_output(g, n, ""));
	ck_assert_int_eq(ts_graph_num_outputs(g), 2);
	ck_assert_str_eq(ts_graph_value_name(g, ts_graph_output_value(g, 1)), "n");
	/* an input keeps its name: another name for it takes an Identity */
	FAILS_ST(ctx, ts_graph_output(g, x, "z"),
		 "graph_output: value 0 is the input 'x'; an output of another name ('z') takes an Identity node");
	ck_assert_str_eq(ts_graph_value_name(g, x), "x");
	ck_assert_int_eq(ts_graph_num_outputs(g), 2);
	tu_ok(ctx, ts_graph_output(g, x, NULL));
	ck_assert_int_eq(ts_graph_num_outputs(g), 3);
	ck_assert_str_eq(ts_graph_value_name(g, x), "x");

	/* queries out of range */
	int nd = -5;
	int64_t s[TS_GRAPH_MAX_DIMS] = {0};
	ck_assert(!ts_graph_value_shape(g, -1, &nd, s));
	ck_assert(!ts_graph_value_shape(g, 3, &nd, s));
	ck_assert_int_eq(nd, -5);
	ck_assert(ts_graph_value_shape(g, r, NULL, NULL));
	ck_assert(ts_graph_value_shape(g, r, &nd, NULL));
	ck_assert_int_eq(nd, 1);
	ck_assert_int_eq(ts_graph_input_value(g, -1), -1);
	ck_assert_int_eq(ts_graph_input_value(g, 1), -1);
	ck_assert_int_eq(ts_graph_input_value(g, INT32_MIN), -1);
	ck_assert_int_eq(ts_graph_output_value(g, 2), x);
	ck_assert_int_eq(ts_graph_output_value(g, 3), -1);
	ck_assert_int_eq(ts_graph_output_value(g, -1), -1);
	ck_assert_ptr_null(ts_graph_value_name(g, -1));
	ck_assert_ptr_null(ts_graph_value_name(g, 3));
	ck_assert_ptr_null(ts_graph_value_name(g, INT32_MAX));
	ts_graph_print(NULL, g);
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

/* ---- compiling ---------------------------------------------------------------------- */

START_TEST(compile_without_outputs)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = ts_graph_new(ctx);
	FAILS_NULL(ctx, ts_graph_compile(g, NULL), "graph_compile: the graph has no outputs (ts_graph_output)");
	int x = ts_graph_input(g, "x", ts_float32, TS_SHAPE(2));
	ck_assert_int_ge(ts_graph_node(g, "r", TS_GOP_RELU, 1, &x, NULL), 0);
	FAILS_NULL(ctx, ts_graph_compile(g, &(ts_graph_opts){.no_fuse = true}), "graph_compile: the graph has no outputs");
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

/* Runs e on inputs of the graph's shapes filled from `data` and checks
 * output i against want[i] (its elements, in order). */
static void run_and_check(ts_ctx *ctx, ts_graph *g, ts_graph_exec *e, const float *const *want)
{
	ts_array *in[4], *out[24];
	int nin = ts_graph_num_inputs(g), nout = ts_graph_num_outputs(g), nd;
	int64_t s[TS_GRAPH_MAX_DIMS];
	ck_assert_int_le(nin, 4);
	ck_assert_int_le(nout, 24);
	for (int i = 0; i < nin; i++) {
		ck_assert(ts_graph_value_shape(g, ts_graph_input_value(g, i), &nd, s));
		in[i] = ts_array_new(ctx, ts_float32, nd, s);
		memcpy(in[i]->data, data + i, ts_array_nbytes(in[i]));
	}
	for (int i = 0; i < nout; i++) {
		ck_assert(ts_graph_value_shape(g, ts_graph_output_value(g, i), &nd, s));
		out[i] = ts_array_new(ctx, ts_float32, nd, s);
		ts_array_fill_random(out[i], 9, 100, 200);
	}
	tu_ok(ctx, ts_graph_run(e, nin, in, nout, out));
	for (int i = 0; i < nout; i++) {
		const float *got = out[i]->data;
		for (int64_t k = 0; k < ts_array_numel(out[i]); k++)
			ck_assert_msg(fabsf(got[k] - want[i][k]) <= 1e-5f, "output %d element %lld: %g, want %g", i,
				      (long long)k, got[k], want[i][k]);
	}
	for (int i = 0; i < nin; i++)
		ts_array_free(in[i]);
	for (int i = 0; i < nout; i++)
		ts_array_free(out[i]);
}

/* No nodes: the outputs are an input (twice over: as itself and through
 * Identity) and a constant, copied. */
START_TEST(compile_outputs_without_nodes)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = ts_graph_new(ctx);
	int x = ts_graph_input(g, "x", ts_float32, TS_SHAPE(2, 3));
	int s = ts_graph_input(g, "s", ts_float32, 0, NULL);
	int c = ts_graph_constant(g, "c", ts_float32, TS_SHAPE(5), data + 7);
	tu_ok(ctx, ts_graph_output(g, c, NULL));
	tu_ok(ctx, ts_graph_output(g, x, NULL));
	tu_ok(ctx, ts_graph_output(g, s, NULL));
	ts_graph_exec *e = ts_graph_compile(g, NULL);
	tu_nonnull(ctx, e);
	ck_assert_int_eq(ts_graph_exec_stats(e).kernels, 0);
	ts_graph_exec_print(stderr, e);
	/* input i holds data + i */
	run_and_check(ctx, g, e, (const float *const[]){data + 7, data, data + 1});
	ts_graph_exec_free(e);

	int id = ts_graph_node(g, "id", TS_GOP_IDENTITY, 1, &x, NULL);
	int rs = ts_graph_node(g, "rs", TS_GOP_RESHAPE, 1, &c, &(ts_gattrs){.nshape = 2, .shape = {5, 1}});
	tu_ok(ctx, ts_graph_output(g, id, "id"));
	tu_ok(ctx, ts_graph_output(g, rs, "rs"));
	e = ts_graph_compile(g, NULL);
	tu_nonnull(ctx, e);
	run_and_check(ctx, g, e, (const float *const[]){data + 7, data, data + 1, data, data + 7});
	ts_graph_exec_free(e);
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

/* Clip with min above max sets every element to max, as ONNX defines it
 * (and numpy's clip does). */
START_TEST(compile_clip_min_above_max)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = ts_graph_new(ctx);
	int x = ts_graph_input(g, "x", ts_float32, TS_SHAPE(2, 3));
	ts_gattrs a = attrs();
	a.alpha = 2, a.beta = 1;
	int y = ts_graph_node(g, "clip", TS_GOP_CLIP, 1, &x, &a);
	tu_ok(ctx, ts_graph_output(g, y, "y"));
	ts_graph_exec *e = ts_graph_compile(g, NULL);
	tu_nonnull(ctx, e);
	static const float ones[6] = {1, 1, 1, 1, 1, 1};
	run_and_check(ctx, g, e, (const float *const[]){ones});
	ts_graph_exec_free(e);
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

/* No inputs: nodes of constants only. */
START_TEST(compile_without_inputs)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = ts_graph_new(ctx);
	int c = ts_graph_constant(g, "c", ts_float32, TS_SHAPE(2, 2), data);
	int r = ts_graph_node(g, "r", TS_GOP_RELU, 1, &c, NULL);
	tu_ok(ctx, ts_graph_output(g, r, NULL));
	tu_ok(ctx, ts_graph_output(g, c, NULL));
	ts_graph_exec *e = ts_graph_compile(g, NULL);
	tu_nonnull(ctx, e);
	float want[4];
	for (int i = 0; i < 4; i++)
		want[i] = data[i] > 0 ? data[i] : 0;
	run_and_check(ctx, g, e, (const float *const[]){want, data});
	FAILS_ST(ctx, ts_graph_run(e, 1, (ts_array *[]){NULL}, 2, NULL),
		 "graph_run: the model takes 0 inputs and 2 outputs, got 1 and 2");
	ts_graph_exec_free(e);
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

/* g compiled and run on the first n elements of data (its one input and
 * output are float32 [n]); the output array, which the caller frees. */
static ts_array *compile_run(ts_ctx *ctx, ts_graph *g, int64_t n)
{
	ts_graph_exec *e = ts_graph_compile(g, NULL);
	tu_nonnull(ctx, e);
	ts_array *in = ts_array_wrap(ctx, data, ts_float32, 1, &n);
	ts_array *out = ts_array_new(ctx, ts_float32, 1, &n);
	tu_ok(ctx, ts_graph_run(e, 1, &in, 1, &out));
	ts_array_free(in);
	ts_graph_exec_free(e);
	return out;
}

/* A chain of nodes that read their input several times (GELU: 2 or 5
 * times) is split into kernels before its fused expression outgrows
 * TS_MAX_EXPR_NODES; a chain of eight GELUs once failed to compile
 * (found by fuzz_graph_api). */
START_TEST(compile_long_gelu_chain)
{
	ts_ctx *ctx = ts_ctx_new();
	for (int approximate = 0; approximate < 2; approximate++) {
		ts_graph *g = ts_graph_new(ctx);
		int v = ts_graph_input(g, "x", ts_float32, TS_SHAPE(6));
		ts_gattrs a = attrs();
		a.approximate = approximate;
		for (int i = 0; i < 16; i++)
			v = ts_graph_node(g, NULL, TS_GOP_GELU, 1, &v, &a);
		tu_ok(ctx, ts_graph_output(g, v, "y"));
		ts_array *out = compile_run(ctx, g, 6);
		for (int i = 0; i < 6; i++) {
			double x = data[i];
			for (int k = 0; k < 16; k++)
				x = approximate ? 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)))
						: 0.5 * x * (1 + erf(x / sqrt(2)));
			ck_assert_msg(fabs(((float *)out->data)[i] - x) < 1e-4, "gelu^16(%g): %g, want %g", data[i],
				      ((float *)out->data)[i], x);
		}
		ts_array_free(out);
		ts_graph_free(g);
	}
	ts_ctx_free(ctx);
}
END_TEST

/* Clip's infinite bounds are bounds too: lo = +inf makes every element hi
 * (lo > hi), hi = -inf every element -inf; the kernel once left an
 * infinite bound out and returned x (found by fuzz_graph_api). */
START_TEST(clip_infinite_bounds)
{
	ts_ctx *ctx = ts_ctx_new();
	const double lohi[][2] = {{INFINITY, 1}, {-0.5, -INFINITY}, {INFINITY, INFINITY}, {-INFINITY, 0.25}};
	for (size_t k = 0; k < TS_COUNT_OF(lohi); k++) {
		ts_graph *g = ts_graph_new(ctx);
		int x = ts_graph_input(g, "x", ts_float32, TS_SHAPE(8));
		ts_gattrs a = attrs();
		a.alpha = lohi[k][0], a.beta = lohi[k][1];
		int y = ts_graph_node(g, "clip", TS_GOP_CLIP, 1, &x, &a);
		tu_ok(ctx, ts_graph_output(g, y, "y"));
		ts_array *out = compile_run(ctx, g, 8);
		for (int i = 0; i < 8; i++) {
			double want = fmin(fmax(data[i], lohi[k][0]), lohi[k][1]);
			ck_assert_msg(((float *)out->data)[i] == (float)want, "clip [%g, %g] of %g: %g, want %g",
				      lohi[k][0], lohi[k][1], data[i], ((float *)out->data)[i], want);
		}
		ts_array_free(out);
		ts_graph_free(g);
	}
	ts_ctx_free(ctx);
}
END_TEST

/* More outputs than a node has inputs; the graph may be freed before
 * the executable. */
START_TEST(compile_many_outputs)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = ts_graph_new(ctx);
	int x = ts_graph_input(g, "x", ts_float32, TS_SHAPE(3));
	float want[20][3];
	for (int i = 0; i < 20; i++) {
		ts_gop op = i % 2 ? TS_GOP_RELU : TS_GOP_NEG;
		int y = ts_graph_node(g, ts_sprintf(ctx, "y%d", i), op, 1, &x, NULL);
		tu_ok(ctx, ts_graph_output(g, y, NULL));
		for (int k = 0; k < 3; k++)
			want[i][k] = op == TS_GOP_NEG ? -data[k] : data[k] > 0 ? data[k] : 0;
	}
	ts_graph_exec *e = ts_graph_compile(g, NULL);
	tu_nonnull(ctx, e);
	const float *w[20];
	for (int i = 0; i < 20; i++)
		w[i] = want[i];
	run_and_check(ctx, g, e, w);
	ts_graph_free(g);
	ts_array *in = ts_array_new(ctx, ts_float32, TS_SHAPE(3)), *out[20];
	for (int i = 0; i < 20; i++)
		out[i] = ts_array_new(ctx, ts_float32, TS_SHAPE(3));
	tu_ok(ctx, ts_graph_run(e, 1, &in, 20, out));
	FAILS_ST(ctx, ts_graph_run(e, 1, &in, 19, out), "graph_run: the model takes 1 inputs and 20 outputs, got 1 and 19");
	FAILS_ST(ctx, ts_graph_run(e, 1, &in, 21, out), "got 1 and 21");
	ts_array_free(in);
	for (int i = 0; i < 20; i++)
		ts_array_free(out[i]);
	ts_graph_exec_free(e);
	ts_ctx_free(ctx);
}
END_TEST

/* ---- running -------------------------------------------------------------------------- */

START_TEST(run_bad_counts)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g;
	ts_graph_exec *e = small_exec(ctx, &g);
	ts_array *in = ts_array_new(ctx, ts_float32, TS_SHAPE(2, 3));
	ts_array *out = ts_array_new(ctx, ts_float32, TS_SHAPE(2, 3));
	FAILS_ST(ctx, ts_graph_run(e, 0, &in, 1, &out), "graph_run: the model takes 1 inputs and 1 outputs, got 0 and 1");
	FAILS_ST(ctx, ts_graph_run(e, -1, &in, 1, &out), "got -1 and 1");
	FAILS_ST(ctx, ts_graph_run(e, 1, &in, INT32_MIN, &out), "got 1 and -2147483648");
	FAILS_ST(ctx, ts_graph_run(e, 2, &in, 1, &out), "got 2 and 1");
	FAILS_ST(ctx, ts_graph_run(e, 1, NULL, 1, &out), "graph_run: inputs is NULL for 1 inputs");
	FAILS_ST(ctx, ts_graph_run(e, 1, &in, 1, NULL), "graph_run: outputs is NULL for 1 outputs");
	FAILS_ST(ctx, ts_graph_run(e, 1, (ts_array *[]){NULL}, 1, &out), "graph_run: input 0 ('x') is NULL");
	FAILS_ST(ctx, ts_graph_run(e, 1, &in, 1, (ts_array *[]){NULL}), "graph_run: output 0 ('y') is NULL");
	tu_ok(ctx, ts_graph_run(e, 1, &in, 1, &out));
	ts_array_free(in);
	ts_array_free(out);
	ts_graph_exec_free(e);
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(run_bad_arrays)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g;
	ts_graph_exec *e = small_exec(ctx, &g);
	ts_array *in = ts_array_new(ctx, ts_float32, TS_SHAPE(2, 3));
	ts_array *out = ts_array_new(ctx, ts_float32, TS_SHAPE(2, 3));
	ts_array *f64 = ts_array_new(ctx, ts_float64, TS_SHAPE(2, 3));
	ts_array *i32 = ts_array_new(ctx, ts_int32, TS_SHAPE(2, 3));
	ts_array *wrong = ts_array_new(ctx, ts_float32, TS_SHAPE(3, 2));
	ts_array *flat = ts_array_new(ctx, ts_float32, TS_SHAPE(6));
	ts_array *more = ts_array_new(ctx, ts_float32, TS_SHAPE(1, 2, 3));
	FAILS_ST(ctx, ts_graph_run(e, 1, &f64, 1, &out), "graph_run: input 0 ('x') is float64; the model takes float32");
	FAILS_ST(ctx, ts_graph_run(e, 1, &in, 1, &i32), "graph_run: output 0 ('y') is int32; the model takes float32");
	FAILS_ST(ctx, ts_graph_run(e, 1, &wrong, 1, &out), "graph_run: input 0 ('x') has shape [3, 2]; the model's is [2, 3]");
	FAILS_ST(ctx, ts_graph_run(e, 1, &flat, 1, &out), "input 0 ('x') has shape [6]; the model's is [2, 3]");
	FAILS_ST(ctx, ts_graph_run(e, 1, &in, 1, &more), "output 0 ('y') has shape [1, 2, 3]; the model's is [2, 3]");
	/* descriptors filled in by hand: a device array, vector lanes, no
	 * data, strides that are not row-major, a garbage rank */
	ts_array bad = *in;
	bad.device = TS_DEVICE_CUDA;
	FAILS_ST(ctx, ts_graph_run(e, 1, (ts_array *[]){&bad}, 1, &out), "graph_run: input 0 ('x') is not a host array");
	bad = *in;
	bad.dtype = ts_dtype_with_lanes(ts_float32, 4);
	FAILS_ST(ctx, ts_graph_run(e, 1, (ts_array *[]){&bad}, 1, &out), "input 0 ('x') is float32x4; the model takes float32");
	bad = *out;
	bad.data = NULL;
	FAILS_ST(ctx, ts_graph_run(e, 1, &in, 1, (ts_array *[]){&bad}), "graph_run: output 0 ('y') has no data");
	bad = *in;
	bad.strides[0] = 1, bad.strides[1] = 2;
	FAILS_ST(ctx, ts_graph_run(e, 1, (ts_array *[]){&bad}, 1, &out),
		 "graph_run: input 0 ('x') is not contiguous (row-major strides)");
	bad = *in;
	bad.strides[0] = 4;
	FAILS_ST(ctx, ts_graph_run(e, 1, (ts_array *[]){&bad}, 1, &out), "is not contiguous");
	bad = *in;
	bad.ndim = -7;
	FAILS_ST(ctx, ts_graph_run(e, 1, (ts_array *[]){&bad}, 1, &out), "input 0 ('x') has shape of -7 dimensions");
	bad.ndim = 1000;
	FAILS_ST(ctx, ts_graph_run(e, 1, (ts_array *[]){&bad}, 1, &out), "has shape of 1000 dimensions");
	bad.ndim = TS_MAX_DIMS;
	for (int d = 0; d < TS_MAX_DIMS; d++)
		bad.shape[d] = INT64_MIN;
	FAILS_ST(ctx, ts_graph_run(e, 1, (ts_array *[]){&bad}, 1, &out),
		 "input 0 ('x') has shape [-9223372036854775808, -9223372036854775808, -9223372036854775808, "
		 "-9223372036854775808, -9223372036854775808, -9223372036854775808, -9223372036854775808, "
		 "-9223372036854775808]; the model's is [2, 3]");
	/* extents of one may have any stride */
	ts_array *row = ts_array_new(ctx, ts_float32, TS_SHAPE(1, 3));
	ts_graph *g1 = ts_graph_new(ctx);
	int x1 = ts_graph_input(g1, "x", ts_float32, TS_SHAPE(1, 3));
	tu_ok(ctx, ts_graph_output(g1, ts_graph_node(g1, "r", TS_GOP_RELU, 1, &x1, NULL), "y"));
	ts_graph_exec *e1 = ts_graph_compile(g1, NULL);
	tu_nonnull(ctx, e1);
	bad = *row;
	bad.strides[0] = 12345;
	tu_ok(ctx, ts_graph_run(e1, 1, (ts_array *[]){&bad}, 1, &row));
	ts_graph_exec_free(e1);
	ts_graph_free(g1);
	ts_array_free(row);
	tu_ok(ctx, ts_graph_run(e, 1, &in, 1, &out));
	ts_array *arrays[] = {in, out, f64, i32, wrong, flat, more};
	for (size_t i = 0; i < TS_COUNT_OF(arrays); i++)
		ts_array_free(arrays[i]);
	ts_graph_exec_free(e);
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

/* The same array as input and output: the output overwrites the input
 * only once the input was read. */
START_TEST(run_aliased_arrays)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g;
	ts_graph_exec *e = small_exec(ctx, &g);
	ts_array *a = ts_array_new(ctx, ts_float32, TS_SHAPE(2, 3));
	memcpy(a->data, data, 6 * sizeof(float));
	tu_ok(ctx, ts_graph_run(e, 1, &a, 1, &a));
	const float *got = a->data;
	for (int i = 0; i < 6; i++) {
		float want = (data[i] > 0 ? data[i] : 0) + data[i % 3];
		ck_assert_msg(fabsf(got[i] - want) <= 1e-6f, "element %d: %g, want %g", i, got[i], want);
	}
	ts_array_free(a);
	ts_graph_exec_free(e);
	ts_graph_free(g);

	/* an input that is also an output, given one array for both */
	g = ts_graph_new(ctx);
	int x = ts_graph_input(g, "x", ts_float32, TS_SHAPE(4));
	int n = ts_graph_node(g, "n", TS_GOP_NEG, 1, &x, NULL);
	tu_ok(ctx, ts_graph_output(g, x, NULL));
	tu_ok(ctx, ts_graph_output(g, n, "y"));
	e = ts_graph_compile(g, NULL);
	tu_nonnull(ctx, e);
	a = ts_array_new(ctx, ts_float32, TS_SHAPE(4));
	ts_array *b = ts_array_new(ctx, ts_float32, TS_SHAPE(4));
	memcpy(a->data, data, 4 * sizeof(float));
	tu_ok(ctx, ts_graph_run(e, 1, &a, 2, (ts_array *[]){a, b}));
	got = a->data;
	const float *neg = b->data;
	for (int i = 0; i < 4; i++)
		ck_assert(got[i] == data[i] && neg[i] == -data[i]);
	/* one array for two outputs would keep only one of them: refused
	 * before anything runs, the array as it was */
	FAILS_ST(ctx, ts_graph_run(e, 1, &a, 2, (ts_array *[]){a, a}),
		 "graph_run: output 1 ('y') overlaps output 0 ('x'); each output needs memory of its own");
	FAILS_ST(ctx, ts_graph_profile(e, 1, &b, 2, (ts_array *[]){b, b}, 1, stderr),
		 "graph_profile: output 1 ('y') overlaps output 0 ('x')");
	for (int i = 0; i < 4; i++)
		ck_assert(got[i] == data[i] && neg[i] == -data[i]);
	/* views sharing part of their bytes overlap too */
	ts_array *c = ts_array_new(ctx, ts_float32, TS_SHAPE(6));
	ts_array v0 = *a, v1 = *a;
	v0.data = c->data;
	v1.data = (float *)c->data + 2;
	FAILS_ST(ctx, ts_graph_run(e, 1, &b, 2, (ts_array *[]){&v0, &v1}), "output 1 ('y') overlaps output 0 ('x')");
	ts_array *d = ts_array_new(ctx, ts_float32, TS_SHAPE(8));
	v0.data = d->data, v1.data = (float *)d->data + 4;
	tu_ok(ctx, ts_graph_run(e, 1, &b, 2, (ts_array *[]){&v0, &v1}));
	ts_array_free(c);
	ts_array_free(d);
	ts_array_free(a);
	ts_array_free(b);
	ts_graph_exec_free(e);
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(profile_bad_arguments)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g;
	ts_graph_exec *e = small_exec(ctx, &g);
	ts_array *in = ts_array_new(ctx, ts_float32, TS_SHAPE(2, 3));
	ts_array *out = ts_array_new(ctx, ts_float32, TS_SHAPE(2, 3));
	ts_array *f64 = ts_array_new(ctx, ts_float64, TS_SHAPE(2, 3));
	FILE *f = tmpfile();
	ck_assert_ptr_nonnull(f);
	FAILS_ST(ctx, ts_graph_profile(e, 1, &in, 1, &out, 0, f), "graph_profile: repeat 0 is out of range (1..10000)");
	FAILS_ST(ctx, ts_graph_profile(e, 1, &in, 1, &out, -5, f), "repeat -5 is out of range");
	FAILS_ST(ctx, ts_graph_profile(e, 1, &in, 1, &out, 10001, f), "repeat 10001 is out of range");
	FAILS_ST(ctx, ts_graph_profile(e, 1, &in, 1, &out, 2, NULL), "graph_profile: f is NULL");
	FAILS_ST(ctx, ts_graph_profile(e, 2, &in, 1, &out, 2, f), "graph_profile: the model takes 1 inputs and 1 outputs, got 2 and 1");
	FAILS_ST(ctx, ts_graph_profile(e, 1, NULL, 1, &out, 2, f), "graph_profile: inputs is NULL for 1 inputs");
	FAILS_ST(ctx, ts_graph_profile(e, 1, &in, 1, &f64, 2, f), "graph_profile: output 0 ('y') is float64");
	FAILS_ST(ctx, ts_graph_profile(e, 1, &in, 1, (ts_array *[]){NULL}, 2, f), "graph_profile: output 0 ('y') is NULL");
	ck_assert_int_eq(ftell(f), 0);
	tu_ok(ctx, ts_graph_profile(e, 1, &in, 1, &out, 3, f));
	ck_assert_int_gt(ftell(f), 0);
	ts_graph_exec_print(f, e);
	fclose(f);
	/* the tuning tasks' count: refusals say why (they once returned -1
	 * without a message; found by fuzz_graph_api) */
	FAILS_NEG(ctx, ts_graph_exec_tune_tasks(e, NULL, -1), "graph_exec_tune_tasks: max -1 is negative");
	FAILS_NEG(ctx, ts_graph_exec_tune_tasks(e, NULL, 2), "graph_exec_tune_tasks: tasks is NULL for max 2");
	ck_assert_int_eq(ts_graph_exec_tune_tasks(e, NULL, 0), 0);
	ts_array_free(in);
	ts_array_free(out);
	ts_array_free(f64);
	ts_graph_exec_free(e);
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

/* A model without kernels profiles to an empty table. */
START_TEST(profile_without_kernels)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = ts_graph_new(ctx);
	int x = ts_graph_input(g, "x", ts_float32, TS_SHAPE(3));
	tu_ok(ctx, ts_graph_output(g, x, NULL));
	ts_graph_exec *e = ts_graph_compile(g, NULL);
	tu_nonnull(ctx, e);
	ts_array *in = ts_array_new(ctx, ts_float32, TS_SHAPE(3)), *out = ts_array_new(ctx, ts_float32, TS_SHAPE(3));
	memcpy(in->data, data, 3 * sizeof(float));
	FILE *f = tmpfile();
	ck_assert_ptr_nonnull(f);
	tu_ok(ctx, ts_graph_profile(e, 1, &in, 1, &out, 10000, f));
	ck_assert(!memcmp(out->data, data, 3 * sizeof(float)));
	fclose(f);
	ts_array_free(in);
	ts_array_free(out);
	ts_graph_exec_free(e);
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

/* ---- ONNX ------------------------------------------------------------------------------- */

START_TEST(onnx_bad_arguments)
{
	ts_ctx *ctx = ts_ctx_new();
	const unsigned char junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x08};
	ck_assert_ptr_null(ts_onnx_load_bytes(NULL, junk, sizeof(junk), "m"));
	ck_assert_ptr_null(ts_onnx_load(NULL, "model.onnx"));
	ck_assert_ptr_null(ts_onnx_load_bytes(ctx, junk, sizeof(junk), "m"));
	if (strstr(ts_last_error(ctx), "built without ONNX import")) {
		FAILS_NULL(ctx, ts_onnx_load_bytes(ctx, NULL, 0, NULL), "built without ONNX import");
		FAILS_NULL(ctx, ts_onnx_load(ctx, NULL), "built without ONNX import");
		ts_ctx_free(ctx);
		return;
	}
	FAILS_NULL(ctx, ts_onnx_load_bytes(ctx, NULL, 0, NULL), "onnx: no data (a NULL pointer, size 0)");
	FAILS_NULL(ctx, ts_onnx_load_bytes(ctx, NULL, 100, "m.onnx"),
		   "onnx: m.onnx: no data (a NULL pointer, size 100)");
	FAILS_NULL(ctx, ts_onnx_load_bytes(ctx, junk, 0, "m.onnx"), "onnx: m.onnx: no data (0 bytes)");
	FAILS_NULL(ctx, ts_onnx_load_bytes(ctx, junk, sizeof(junk), ""),
		   "onnx: not an ONNX model: the protobuf does not parse (6 bytes");
	/* a message of one field parses: a model without a graph */
	const unsigned char ir_version[] = {0x08, 0x07};
	FAILS_NULL(ctx, ts_onnx_load_bytes(ctx, ir_version, sizeof(ir_version), "m"), "onnx: m: the model has no graph");
	FAILS_NULL(ctx, ts_onnx_load(ctx, NULL), "onnx: no file named");
	FAILS_NULL(ctx, ts_onnx_load(ctx, ""), "onnx: no file named");
	FAILS_NULL(ctx, ts_onnx_load(ctx, "/nonexistent/dir/model.onnx"), "onnx: cannot open '/nonexistent/dir/model.onnx'");
	FAILS_NULL(ctx, ts_onnx_load(ctx, "/"), "onnx: cannot read '/'");
	FAILS_NULL(ctx, ts_onnx_load(ctx, "/dev/null"), "onnx: '/dev/null' is a device, not an ONNX model file");
	ts_ctx_free(ctx);
}
END_TEST

/* A padded convolution with a bias and relu, and a concat of it with
 * its input: the kernels whose expressions (the padding's bounds tests,
 * the concat's selects) are built from many small allocations. */
static ts_graph *pad_concat_graph(ts_ctx *ctx)
{
	ts_graph *g = ts_graph_new(ctx);
	int x = ts_graph_input(g, "x", ts_float32, TS_SHAPE(1, 4, 5, 5));
	int w = ts_graph_constant(g, "w", ts_float32, TS_SHAPE(16, 4, 3, 3), data);
	int b = ts_graph_constant(g, "b", ts_float32, TS_SHAPE(16), data + 5);
	ts_gattrs a = attrs();
	a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 1;
	int c = ts_graph_node(g, "conv", TS_GOP_CONV, 3, (int[]){x, w, b}, &a);
	int r = ts_graph_node(g, "relu", TS_GOP_RELU, 1, &c, NULL);
	ts_gattrs ca = attrs();
	ca.axis = 1;
	int y = ts_graph_node(g, "cat", TS_GOP_CONCAT, 2, (int[]){r, x}, &ca);
	tu_ok(ctx, ts_graph_output(g, y, "y"));
	return g;
}

/* The n-th allocation of a compile of pad_concat_graph failing: the
 * compile fails with TS_ERR_NOMEM, or it succeeds and the executable
 * computes `want`.  Returns whether n was past the compile's last
 * allocation; counts the failed compiles in *failed. */
static bool compile_failing(long n, ts_array *in, const ts_array *want, ts_array *got, int *failed)
{
	ts_ctx *c = ts_ctx_new();
	ts_graph *g = pad_concat_graph(c);
	ts_ctx_fail_alloc_after(c, n);
	ts_graph_exec *e = ts_graph_compile(g, NULL);
	bool past_end = ts_ctx_fail_alloc_pending(c) > 0;
	if (!e) {
		ck_assert_msg(ts_last_status(c) == TS_ERR_NOMEM, "allocation %ld: status %d: %s", n,
			      ts_last_status(c), ts_last_error(c));
		(*failed)++;
	} else {
		ck_assert_msg(past_end, "allocation %ld failed and the compile succeeded", n);
		ts_array_fill_random(got, 9, 100, 200);
		tu_ok(c, ts_graph_run(e, 1, &in, 1, &got));
		ck_assert(!memcmp(got->data, want->data, ts_array_nbytes(want)));
		ts_graph_exec_free(e);
	}
	ts_graph_free(g);
	ts_ctx_free(c);
	return past_end;
}

/* Every n over the planning and the first kernels' expressions (group
 * names, the padding's bounds tests, the tuning task), then a sample of n
 * up to the compile's last allocation (lowering and code generation: tens
 * of thousands of allocations), then every n of the last 2000 (code
 * generation: the vectorizer's folded ramps and the modules' headers
 * each dropped a failed allocation, the compile succeeding). */
START_TEST(compile_allocation_failures)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = pad_concat_graph(ctx);
	ts_graph_exec *e = ts_graph_compile(g, NULL);
	tu_nonnull(ctx, e);
	ts_array *in = ts_array_new(ctx, ts_float32, TS_SHAPE(1, 4, 5, 5));
	ts_array *want = ts_array_new(ctx, ts_float32, TS_SHAPE(1, 20, 5, 5));
	ts_array *got = ts_array_new(ctx, ts_float32, TS_SHAPE(1, 20, 5, 5));
	ts_array_fill_random(in, 3, -1, 1);
	tu_ok(ctx, ts_graph_run(e, 1, &in, 1, &want));
	ts_graph_exec_free(e);
	ts_graph_free(g);
	int failed = 0;
	long last = 1;
	for (long n = 1; !compile_failing(n, in, want, got, &failed); n += n < 800 ? 1 : 997)
		last = n;
	ck_assert_int_gt(failed, 800);
	for (long n = last > 2000 ? last - 2000 : 1; !compile_failing(n, in, want, got, &failed); n++)
		;
	ts_array_free(in);
	ts_array_free(want);
	ts_array_free(got);
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	for (int i = 0; i < (int)TS_COUNT_OF(data); i++)
		data[i] = (float)((i * 37) % 23 - 11) * 0.25f + 0.125f;
	Suite *s = suite_create("mustfail_graph");
	TCase *tc = tcase_create("mustfail_graph");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, gop_names_out_of_range);
	tcase_add_test(tc, compile_clip_min_above_max);
	TCase *slow = tcase_create("allocation_failures");
	tcase_set_timeout(slow, 900);
	tcase_add_test(slow, compile_allocation_failures);
	suite_add_tcase(s, slow);
	tcase_add_test(tc, null_graph);
	tcase_add_test(tc, input_bad_arguments);
	tcase_add_test(tc, long_names);
	tcase_add_test(tc, constant_bad_arguments);
	tcase_add_test(tc, node_bad_arguments);
	tcase_add_test(tc, node_scalar_output);
	tcase_add_test(tc, conv_bad_attributes);
	tcase_add_test(tc, pool_bad_attributes);
	tcase_add_test(tc, transpose_reshape_bad_attributes);
	tcase_add_test(tc, norm_softmax_bad_attributes);
	tcase_add_test(tc, concat_elementwise_bad_attributes);
	tcase_add_test(tc, matmul_gemm_bad_shapes);
	tcase_add_test(tc, output_bad_arguments);
	tcase_add_test(tc, compile_without_outputs);
	tcase_add_test(tc, compile_outputs_without_nodes);
	tcase_add_test(tc, compile_without_inputs);
	tcase_add_test(tc, compile_many_outputs);
	tcase_add_test(tc, clip_infinite_bounds);
	tcase_add_test(tc, compile_long_gelu_chain);
	tcase_add_test(tc, run_bad_counts);
	tcase_add_test(tc, run_bad_arrays);
	tcase_add_test(tc, run_aliased_arrays);
	tcase_add_test(tc, profile_bad_arguments);
	tcase_add_test(tc, profile_without_kernels);
	tcase_add_test(tc, onnx_bad_arguments);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
