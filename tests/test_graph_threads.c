/*
 * test_graph_threads.c - one executable run from several threads at once:
 * the runs share the executable's buffers, so they take turns, and every
 * thread gets the output of its own input (ThreadSanitizer runs this
 * suite: scripts/tsan.sh).
 */
#include "testutil.h"

#include <pthread.h>
#include <string.h>

#include "graph.h"
#include "threadpool.h"

#define NTHREADS 4
#define NRUNS 8

typedef struct worker {
	ts_graph_exec *e;
	ts_array *in, *out, *want;
	int bad;
} worker;

static void *work(void *p)
{
	worker *w = p;
	for (int r = 0; r < NRUNS; r++) {
		if (ts_graph_run(w->e, 1, &w->in, 1, &w->out) != TS_OK ||
		    memcmp(w->out->data, w->want->data, ts_array_nbytes(w->out)))
			w->bad++;
	}
	return NULL;
}

START_TEST(test_concurrent_runs)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_graph *g = ts_graph_new(ctx);
	int x = ts_graph_input(g, "x", ts_float32, TS_SHAPE(1, 8, 9, 9));
	float wd[16 * 8 * 9];
	for (int i = 0; i < 16 * 8 * 9; i++)
		wd[i] = (float)((i * 37 % 101) - 50) / 100.0f;
	int w = ts_graph_constant(g, "w", ts_float32, TS_SHAPE(16, 8, 3, 3), wd);
	ts_gattrs a = ts_gattrs_default();
	a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 1;
	int c = ts_graph_node(g, "conv", TS_GOP_CONV, 2, (int[]){x, w}, &a);
	int r = ts_graph_node(g, "relu", TS_GOP_RELU, 1, &c, NULL);
	tu_ok(ctx, ts_graph_output(g, r, "y"));
	ts_graph_exec *e = ts_graph_compile(g, NULL);
	tu_nonnull(ctx, e);
	ts_set_num_threads(2);
	worker ws[NTHREADS];
	pthread_t th[NTHREADS];
	for (int i = 0; i < NTHREADS; i++) {
		ws[i] = (worker){.e = e};
		ws[i].in = ts_array_new(ctx, ts_float32, TS_SHAPE(1, 8, 9, 9));
		ws[i].out = ts_array_new(ctx, ts_float32, TS_SHAPE(1, 16, 9, 9));
		ws[i].want = ts_array_new(ctx, ts_float32, TS_SHAPE(1, 16, 9, 9));
		ts_array_fill_random(ws[i].in, 100 + (uint64_t)i, -1, 1);
		/* each thread's own answer, from a run alone */
		tu_ok(ctx, ts_graph_run(e, 1, &ws[i].in, 1, &ws[i].want));
	}
	for (int i = 0; i < NTHREADS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, work, &ws[i]), 0);
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], NULL);
		ck_assert_msg(ws[i].bad == 0, "thread %d: %d of %d runs wrong", i, ws[i].bad, NRUNS);
		ts_array_free(ws[i].in);
		ts_array_free(ws[i].out);
		ts_array_free(ws[i].want);
	}
	ts_set_num_threads(1);
	ts_graph_exec_free(e);
	ts_graph_free(g);
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("graph_threads");
	TCase *tc = tcase_create("graph_threads");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_concurrent_runs);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
