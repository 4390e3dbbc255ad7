/*
 * vadd.c - a program outside tessera's source tree, built against an
 * installed tessera (see CMakeLists.txt here, or pkg-config):
 * C = A + 2*B, vectorized by 8 on a length that 8 does not divide,
 * compiled for the host and checked element by element.
 */
#include <stdio.h>

#include <tessera/tessera.h>

int main(void)
{
	enum { N = 1003 };
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(N), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(N), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(N), TS_VARS(i),
				  ts_add(ctx, TS_READ(ctx, A, i),
					 ts_mul(ctx, ts_float(ctx, 2), TS_READ(ctx, B, i))));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *xo, *xi;
	ts_split(sc, ts_axis_of(sc, 0), 8, &xo, &xi);
	ts_vectorize(sc, xi);
	ts_func *f = ts_lower(s, "vadd", 3, (ts_tensor *[]){A, B, C});
	ts_module *m = ts_build(ctx, f, "llvm");
	ts_array *a = ts_array_for(ctx, A), *b = ts_array_for(ctx, B), *c = ts_array_for(ctx, C);
	int bad = !m || !a || !b || !c;
	if (!bad) {
		ts_array_fill_random(a, 1, -1, 1);
		ts_array_fill_random(b, 2, -1, 1);
		bad = ts_module_run(m, 3, (ts_array *[]){a, b, c}) != TS_OK;
	}
	for (int e = 0; !bad && e < N; e++) {
		float want = ((float *)a->data)[e] + 2 * ((float *)b->data)[e];
		bad = ((float *)c->data)[e] != want;
	}
	if (bad)
		fprintf(stderr, "vadd: %s\n", ts_last_status(ctx) ? ts_last_error(ctx) : "wrong result");
	else
		printf("vadd: %d elements correct\n", N);
	ts_array_free(a);
	ts_array_free(b);
	ts_array_free(c);
	ts_module_free(m);
	ts_ctx_free(ctx);
	return bad;
}
