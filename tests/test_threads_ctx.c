/*
 * test_threads_ctx.c - contexts shared between threads and outliving their
 * users: errors are per thread (concurrent ts_module_run calls never see
 * each other's messages), a module keeps its context alive after
 * ts_ctx_free, and a NULL context is an error, never a crash.
 */
#include "testutil.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "lower.h"

#define N 67

typedef struct fixture {
	ts_ctx *ctx;
	ts_tensor *A, *B, *C;
	ts_module *m;
} fixture;

/* C = A * 2 + B over N elements, compiled for the host. */
static fixture vadd(void)
{
	fixture x = {.ctx = ts_ctx_new()};
	ts_ctx *ctx = x.ctx;
	x.A = ts_placeholder(ctx, "A", TS_SHAPE(N), ts_float32);
	x.B = ts_placeholder(ctx, "B", TS_SHAPE(N), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	x.C = ts_compute(ctx, "C", TS_SHAPE(N), TS_VARS(i),
			 ts_add(ctx, ts_mul(ctx, TS_READ(ctx, x.A, i), ts_float(ctx, 2)),
				TS_READ(ctx, x.B, i)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &x.C);
	ts_stage *sc = ts_stage_of(s, x.C);
	ts_axis *o, *in;
	tu_ok(ctx, ts_split(sc, ts_axis_of(sc, 0), 8, &o, &in));
	tu_ok(ctx, ts_vectorize(sc, in));
	ts_func *f = ts_lower(s, "vadd", 3, (ts_tensor *[]){x.A, x.B, x.C});
	tu_nonnull(ctx, f);
	x.m = ts_build(ctx, f, "llvm");
	tu_nonnull(ctx, x.m);
	return x;
}

static void check_vadd(const ts_array *a, const ts_array *b, const ts_array *c)
{
	const float *pa = a->data, *pb = b->data, *pc = c->data;
	for (int e = 0; e < N; e++)
		ck_assert_float_eq(pc[e], pa[e] * 2 + pb[e]);
}

/* ---- lifetimes ------------------------------------------------------------ */

START_TEST(test_module_outlives_context)
{
	fixture x = vadd();
	ts_array *a = ts_array_for(x.ctx, x.A), *b = ts_array_for(x.ctx, x.B);
	ts_array *c = ts_array_for(x.ctx, x.C);
	ts_array_fill_random(a, 1, -1, 1);
	ts_array_fill_random(b, 2, -1, 1);
	ts_ctx *ctx = x.ctx;
	ts_ctx_free(ctx); /* the module still holds the context */
	tu_ok(ctx, ts_module_run(x.m, 3, (ts_array *[]){a, b, c}));
	check_vadd(a, b, c);
	/* errors and generated text still work: both live in the context */
	ck_assert_int_eq(ts_module_run(x.m, 2, (ts_array *[]){a, b}), TS_ERR_INVALID);
	tu_assert_error(ctx, "call vadd: expected 3 arguments, got 2");
	ts_clear_error(ctx);
	const char *src = ts_module_source(x.m, "c");
	ck_assert_ptr_nonnull(src);
	ck_assert_ptr_nonnull(strstr(src, "vadd"));
	ck_assert_str_eq(ts_module_func(x.m)->name, "vadd");
	ts_module_free(x.m); /* the last reference: the arena goes now */
	ts_array_free(a);
	ts_array_free(b);
	ts_array_free(c);
}
END_TEST

START_TEST(test_retain_counts)
{
	ts_ctx *ctx = ts_ctx_new();
	ck_assert_ptr_eq(ts_ctx_retain(ctx), ctx);
	ts_ctx_free(ctx);
	/* one reference left: the context is still usable */
	ck_assert_ptr_nonnull(ts_placeholder(ctx, "A", TS_SHAPE(4), ts_float32));
	ts_ctx_free(ctx);
	ck_assert_ptr_null(ts_ctx_retain(NULL));
	ts_ctx_free(NULL);
}
END_TEST

/* ---- a NULL context ------------------------------------------------------- */

START_TEST(test_null_context)
{
	ck_assert_int_eq(ts_error(NULL, TS_ERR_INVALID, "x %d", 1), TS_ERR_INVALID);
	ck_assert_int_eq(ts_last_status(NULL), TS_ERR_INVALID);
	ck_assert_ptr_nonnull(strstr(ts_last_error(NULL), "context is NULL"));
	ts_clear_error(NULL);
	ck_assert_ptr_null(ts_alloc(NULL, 16));
	ck_assert_ptr_null(ts_alloc_array(NULL, 4, 4));
	ck_assert_ptr_null(ts_strdup(NULL, "x"));
	ck_assert_ptr_null(ts_sprintf(NULL, "%d", 3));
	ck_assert_int_eq(ts_ctx_next_id(NULL), 0);
	ts_ctx_set_print_passes(NULL, 1);
	ck_assert_int_eq(ts_ctx_print_passes(NULL), 0);
	ts_ctx_fail_alloc_after(NULL, 3);

	ts_ctx *ctx = ts_ctx_new();
	ck_assert_ptr_null(ts_strdup(ctx, NULL));
	tu_assert_error(ctx, "strdup: the string is NULL");
	ck_assert_int_eq(ts_error_within(NULL, TS_ERR_INVALID, "x"), TS_ERR_INVALID);
	/* stashing: NULL arguments do nothing; a stash and unstash around a
	 * failing call leaves the first error, not the call's */
	ts_error_stashed saved;
	ts_error_stash(NULL, &saved);
	ts_error_unstash(NULL, &saved);
	ts_error_stash(ctx, NULL);
	ts_error_unstash(ctx, NULL);
	ts_error(ctx, TS_ERR_INVALID, "first");
	ts_error_stash(ctx, &saved);
	ck_assert_int_eq(ts_last_status(ctx), TS_OK);
	ts_error(ctx, TS_ERR_RUNTIME, "printer's own");
	ts_error_unstash(ctx, &saved);
	ck_assert_int_eq(ts_last_status(ctx), TS_ERR_INVALID);
	ck_assert_str_eq(ts_last_error(ctx), "first");
	ts_ctx_free(ctx);
}
END_TEST

/* ts_error_within puts what the caller did before the pending error and
 * keeps its status; with none pending it records its own. */
START_TEST(test_error_within)
{
	ts_ctx *ctx = ts_ctx_new();
	ck_assert_int_eq(ts_error(ctx, TS_ERR_NOMEM, "alloc failed"), TS_ERR_NOMEM);
	ck_assert_int_eq(ts_error_within(ctx, TS_ERR_INVALID, "building %s", "k1"), TS_ERR_NOMEM);
	ck_assert_str_eq(ts_last_error(ctx), "building k1: alloc failed");
	ck_assert_int_eq(ts_last_status(ctx), TS_ERR_NOMEM);
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_error_within(ctx, TS_ERR_INTERNAL, "step %d", 2), TS_ERR_INTERNAL);
	ck_assert_str_eq(ts_last_error(ctx), "step 2");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_error_within(ctx, TS_OK, "nothing"), TS_OK);
	ck_assert_int_eq(ts_last_status(ctx), TS_OK);
	/* a long prefix and message are cut at the slot, still terminated */
	char big[1500];
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	ts_error(ctx, TS_ERR_INVALID, "%s", big);
	ts_error_within(ctx, TS_ERR_INVALID, "%s", big);
	ck_assert_uint_gt(strlen(ts_last_error(ctx)), 500);
	ck_assert_uint_lt(strlen(ts_last_error(ctx)), sizeof big);
	ts_ctx_free(ctx);
}
END_TEST

/* TS_TRY returns the first failing call's status, its error standing,
 * and makes no call after it. */
static int try_calls;
static ts_status step(ts_ctx *ctx, ts_status st)
{
	try_calls++;
	return st == TS_OK ? TS_OK : ts_error(ctx, st, "step %d failed", try_calls);
}

static ts_status three_steps(ts_ctx *ctx, ts_status second)
{
	TS_TRY(step(ctx, TS_OK));
	TS_TRY(step(ctx, second));
	TS_TRY(step(ctx, TS_ERR_INTERNAL));
	return TS_OK;
}

START_TEST(test_try_returns_first_failure)
{
	ts_ctx *ctx = ts_ctx_new();
	try_calls = 0;
	ck_assert_int_eq(three_steps(ctx, TS_ERR_NOMEM), TS_ERR_NOMEM);
	ck_assert_int_eq(try_calls, 2);
	ck_assert_str_eq(ts_last_error(ctx), "step 2 failed");
	ts_clear_error(ctx);
	try_calls = 0;
	ck_assert_int_eq(three_steps(ctx, TS_OK), TS_ERR_INTERNAL);
	ck_assert_int_eq(try_calls, 3);
	ts_ctx_free(ctx);
}
END_TEST

/* A message too long for its slot loses its middle: the start (the call)
 * and the end (what is wrong) both stay, cut between UTF-8 characters. */
START_TEST(test_long_error_keeps_its_end)
{
	ts_ctx *ctx = ts_ctx_new();
	enum { LEN = 100000 };
	char *name = malloc(LEN + 1);
	ck_assert_ptr_nonnull(name);
	for (int i = 0; i < LEN; i += 2) { /* "é" over and over: 2 bytes each */
		name[i] = (char)0xc3;
		name[i + 1] = (char)0xa9;
	}
	name[LEN] = '\0';
	for (int odd = 0; odd < 2; odd++) {
		/* shifted by one byte, so that one of the two cuts would fall
		 * inside a character */
		ts_error(ctx, TS_ERR_INVALID, "split(%s%s): factor 0 must be positive", odd ? "x" : "",
			 name);
		const char *m = ts_last_error(ctx);
		ck_assert_uint_lt(strlen(m), 1024);
		ck_assert_msg(!strncmp(m, odd ? "split(x\xc3\xa9" : "split(\xc3\xa9", odd ? 9 : 8),
			      "start lost: %.40s", m);
		ck_assert_ptr_nonnull(strstr(m, " [...] \xc3\xa9"));
		size_t len = strlen(m), tail = strlen("): factor 0 must be positive");
		ck_assert_str_eq(m + len - tail, "): factor 0 must be positive");
		for (const char *c = m; *c; c++) /* every 0xc3 followed by its 0xa9 */
			if ((unsigned char)*c == 0xc3)
				ck_assert_int_eq((unsigned char)c[1], 0xa9);
			else if ((unsigned char)*c == 0xa9)
				ck_assert_int_eq((unsigned char)c[-1], 0xc3);
		ts_clear_error(ctx);
	}
	/* and through a public call: the reason survives a huge name */
	name[2000] = '\0';
	ts_tensor *A = ts_placeholder(ctx, name, TS_SHAPE(8, 0), ts_float32);
	ck_assert_ptr_null(A);
	ck_assert_ptr_nonnull(strstr(ts_last_error(ctx), "placeholder "));
	const char *m = ts_last_error(ctx);
	ck_assert_str_eq(m + strlen(m) - strlen(": extent 0 of dimension 1 is not positive"),
			 ": extent 0 of dimension 1 is not positive");
	free(name);
	ts_ctx_free(ctx);
}
END_TEST

/* ---- errors per thread ---------------------------------------------------- */

#define NTHREADS 4
#define ROUNDS 300

typedef struct worker {
	fixture *x;
	int id;
	char failure[512]; /* empty: all rounds as expected */
} worker;

/* Alternates good calls with a call on an array of a shape unique to this
 * thread; each failed call must report this thread's shape, and each good
 * call must leave no error behind. */
static void *work(void *p)
{
	worker *w = p;
	ts_ctx *ctx = w->x->ctx;
	ts_array *a = ts_array_for(NULL, w->x->A), *b = ts_array_for(NULL, w->x->B);
	ts_array *c = ts_array_for(NULL, w->x->C);
	ts_array *bad = ts_array_new(NULL, ts_float32, 1, (int64_t[]){100 + w->id});
	ts_array_fill_random(a, (uint64_t)w->id, -1, 1);
	ts_array_fill_random(b, (uint64_t)w->id + 7, -1, 1);
	char want[64];
	snprintf(want, sizeof(want), "has shape [%d], expected [%d]", 100 + w->id, N);
	for (int r = 0; r < ROUNDS && !w->failure[0]; r++) {
		if (ts_module_run(w->x->m, 3, (ts_array *[]){a, b, c}) != TS_OK ||
		    ts_last_status(ctx) != TS_OK) {
			snprintf(w->failure, sizeof(w->failure), "round %d: good call failed: %s", r,
				 ts_last_error(ctx));
			break;
		}
		ts_status st = ts_module_run(w->x->m, 3, (ts_array *[]){bad, b, c});
		if (st != TS_ERR_INVALID || !strstr(ts_last_error(ctx), want))
			snprintf(w->failure, sizeof(w->failure),
				 "round %d: thread %d expected '%s', got status %d '%s'", r, w->id,
				 want, st, ts_last_error(ctx));
		ts_clear_error(ctx);
	}
	const float *pa = a->data, *pb = b->data, *pc = c->data;
	for (int e = 0; e < N && !w->failure[0]; e++)
		if (pc[e] != pa[e] * 2 + pb[e])
			snprintf(w->failure, sizeof(w->failure), "thread %d: C[%d] wrong", w->id, e);
	ts_array_free(a);
	ts_array_free(b);
	ts_array_free(c);
	ts_array_free(bad);
	return NULL;
}

START_TEST(test_concurrent_errors_per_thread)
{
	fixture x = vadd();
	pthread_t t[NTHREADS];
	worker w[NTHREADS];
	for (int i = 0; i < NTHREADS; i++) {
		w[i] = (worker){.x = &x, .id = i};
		ck_assert_int_eq(pthread_create(&t[i], NULL, work, &w[i]), 0);
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < NTHREADS; i++)
		ck_assert_msg(!w[i].failure[0], "%s", w[i].failure);
	/* none of the workers' errors is visible on this thread */
	ck_assert_int_eq(ts_last_status(x.ctx), TS_OK);
	ts_module_free(x.m);
	ts_ctx_free(x.ctx);
}
END_TEST

static void *fail_once(void *p)
{
	ts_error(p, TS_ERR_INVALID, "recorded on another thread");
	return NULL;
}

START_TEST(test_error_stays_on_its_thread)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_error(ctx, TS_ERR_RUNTIME, "recorded here");
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, fail_once, ctx), 0);
	pthread_join(t, NULL);
	ck_assert_int_eq(ts_last_status(ctx), TS_ERR_RUNTIME);
	ck_assert_str_eq(ts_last_error(ctx), "recorded here");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_last_status(ctx), TS_OK);
	ck_assert_str_eq(ts_last_error(ctx), "");
	ts_ctx_free(ctx);
}
END_TEST

/* A thread made after one that exited with its error pending never sees
 * that error as its own (glibc reuses the exited thread's pthread_t). */
typedef struct later {
	fixture *x;
	ts_status status;
	char msg[256];
} later;

static void *bad_call_then_exit(void *p)
{
	fixture *x = p;
	ts_array *a = ts_array_new(x->ctx, ts_float32, TS_SHAPE(7));
	ts_module_run(x->m, 3, (ts_array *[]){a, a, a}); /* refused, not cleared */
	ts_array_free(a);
	return NULL;
}

static void *good_call(void *p)
{
	later *l = p;
	fixture *x = l->x;
	ts_array *a = ts_array_new(x->ctx, ts_float32, TS_SHAPE(N));
	ts_array *b = ts_array_new(x->ctx, ts_float32, TS_SHAPE(N));
	ts_array *c = ts_array_new(x->ctx, ts_float32, TS_SHAPE(N));
	ts_status st = ts_module_run(x->m, 3, (ts_array *[]){a, b, c});
	l->status = st != TS_OK ? st : ts_last_status(x->ctx);
	snprintf(l->msg, sizeof l->msg, "%s", ts_last_error(x->ctx));
	ts_array_free(a);
	ts_array_free(b);
	ts_array_free(c);
	return NULL;
}

/* fn(arg) on a thread of its own, run to its end. */
static void run_thread(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, fn, arg), 0);
	pthread_join(t, NULL);
}

START_TEST(test_new_thread_inherits_no_error)
{
	fixture x = vadd();
	for (int round = 0; round < 8; round++) {
		run_thread(bad_call_then_exit, &x);
		later l = {.x = &x};
		run_thread(good_call, &l);
		ck_assert_msg(l.status == TS_OK, "round %d: a new thread sees '%s'", round, l.msg);
	}
	ts_module_free(x.m);
	ts_ctx_free(x.ctx);
}
END_TEST

/* Threads that exit with an error pending do not each keep a slot for the
 * context's life: the next thread with an error takes the exited one's. */
START_TEST(test_exited_threads_slots_reused)
{
	fixture x = vadd();
	for (int round = 0; round < 64; round++)
		run_thread(bad_call_then_exit, &x);
	ck_assert_int_le(ts_ctx_error_slots(x.ctx), 1);
	/* a live thread's pending error is kept, and its slot is its own */
	ck_assert_int_eq(ts_error(x.ctx, TS_ERR_INVALID, "mine"), TS_ERR_INVALID);
	run_thread(bad_call_then_exit, &x);
	ck_assert_str_eq(ts_last_error(x.ctx), "mine");
	ck_assert_int_le(ts_ctx_error_slots(x.ctx), 2);
	ck_assert_int_eq(ts_ctx_error_slots(NULL), 0);
	ts_clear_error(x.ctx);
	ts_module_free(x.m);
	ts_ctx_free(x.ctx);
}
END_TEST

/* Assembly and object files of one module from several threads at once:
 * each emission clones the module in an LLVM context that is not
 * thread-safe (it crashed in LLVMCloneModule). */
static const char *g_asm;

static void *emit_asm(void *p)
{
	fixture *x = p;
	for (int i = 0; i < 25; i++) {
		const char *s = ts_module_source(x->m, "asm");
		if (!s || strcmp(s, g_asm))
			return (void *)1;
	}
	return NULL;
}

START_TEST(test_concurrent_assembly)
{
	fixture x = vadd();
	g_asm = ts_module_source(x.m, "asm");
	tu_nonnull(x.ctx, g_asm);
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, emit_asm, &x), 0);
	for (int i = 0; i < 4; i++) {
		void *r;
		pthread_join(t[i], &r);
		ck_assert_ptr_null(r);
	}
	ts_module_free(x.m);
	ts_ctx_free(x.ctx);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("threads_ctx");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_module_outlives_context);
	tcase_add_test(tc, test_retain_counts);
	tcase_add_test(tc, test_null_context);
	tcase_add_test(tc, test_error_within);
	tcase_add_test(tc, test_long_error_keeps_its_end);
	tcase_add_test(tc, test_try_returns_first_failure);
	tcase_add_test(tc, test_new_thread_inherits_no_error);
	tcase_add_test(tc, test_exited_threads_slots_reused);
	tcase_add_test(tc, test_concurrent_assembly);
	tcase_add_test(tc, test_concurrent_errors_per_thread);
	tcase_add_test(tc, test_error_stays_on_its_thread);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
