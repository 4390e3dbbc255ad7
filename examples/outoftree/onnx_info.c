/*
 * onnx_info.c - a program outside tessera's source tree that imports an
 * ONNX model: prints the graph tessera reads from it, or the reason the
 * model is refused.  Built against the static library, it also shows that
 * the library's own dependencies (protobuf-c for ONNX) come along.
 *   onnx_info MODEL.onnx
 */
#include <stdio.h>

#include <tessera/tessera.h>
#include <tessera/graph.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: onnx_info MODEL.onnx\n");
		return 2;
	}
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = ts_onnx_load(ctx, argv[1]);
	if (!g) {
		fprintf(stderr, "onnx_info: %s\n", ts_last_error(ctx));
		ts_ctx_free(ctx);
		return 1;
	}
	printf("%s: %d inputs, %d outputs, %d nodes\n", argv[1], ts_graph_num_inputs(g),
	       ts_graph_num_outputs(g), ts_graph_num_nodes(g));
	ts_graph_print(stdout, g);
	ts_graph_free(g);
	ts_ctx_free(ctx);
	return 0;
}
