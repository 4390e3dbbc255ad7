/* test_threadpool.c - ts_parallel_for: coverage of [0, n), chunking, nesting,
 * thread counts (ts_set_num_threads and TESSERA_NUM_THREADS), shutdown and
 * concurrent callers.
 *
 * TESSERA_NUM_THREADS is read when the pool starts with no explicit count,
 * and an earlier test in the same process may already have set one; so the
 * environment is tested through ts_set_num_threads(0) (back to the default)
 * and once in a forked child, which also checks that a child restarts the
 * workers it did not inherit.  Every test ends with ts_threadpool_shutdown()
 * so that no thread or worker table outlives it. */
#include "testutil.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CHUNKS 64

/* ThreadSanitizer cannot follow threads started in the child of a
 * multi-threaded fork (it reuses the parent's thread ids and dies), so the
 * fork test does nothing in the ThreadSanitizer build (scripts/tsan.sh). */
#if defined(__SANITIZE_THREAD__)
#define TU_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TU_TSAN 1
#endif
#endif

/* What one ts_parallel_for did: hits per index and the chunks it ran.
 * With `rendezvous` set, each chunk waits (up to 10 s) until that many
 * have started: the pool's threads claim chunks as they come, and the
 * caller runs those no worker has claimed yet, so chunks land on distinct
 * threads only when they overlap in time (a pool without its workers
 * would run them all on the caller, one after another). */
typedef struct cover {
	int64_t n;
	int rendezvous;
	atomic_int started;
	atomic_uchar *hits;
	pthread_mutex_t lock;
	int nchunks;
	int64_t begin[MAX_CHUNKS], end[MAX_CHUNKS];
	pthread_t tid[MAX_CHUNKS];
} cover;

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void cover_body(int64_t begin, int64_t end, void *closure)
{
	cover *c = closure;
	atomic_fetch_add(&c->started, 1);
	for (double t0 = now_s(); c->rendezvous && atomic_load(&c->started) < c->rendezvous && now_s() - t0 < 10;)
		sched_yield();
	for (int64_t i = begin; i < end; i++)
		atomic_fetch_add(&c->hits[i], 1);
	pthread_mutex_lock(&c->lock);
	if (c->nchunks < MAX_CHUNKS) {
		c->begin[c->nchunks] = begin;
		c->end[c->nchunks] = end;
		c->tid[c->nchunks] = pthread_self();
	}
	c->nchunks++;
	pthread_mutex_unlock(&c->lock);
}

static cover *cover_new(int64_t n)
{
	cover *c = calloc(1, sizeof(*c));
	ck_assert_ptr_nonnull(c);
	c->n = n;
	c->hits = calloc((size_t)(n > 0 ? n : 1), sizeof(atomic_uchar));
	ck_assert_ptr_nonnull(c->hits);
	pthread_mutex_init(&c->lock, NULL);
	return c;
}

static void cover_free(cover *c)
{
	pthread_mutex_destroy(&c->lock);
	free(c->hits);
	free(c);
}

static int distinct_threads(const cover *c)
{
	int d = 0;
	for (int i = 0; i < c->nchunks; i++) {
		int seen = 0;
		for (int j = 0; j < i; j++)
			seen |= pthread_equal(c->tid[i], c->tid[j]);
		d += !seen;
	}
	return d;
}

/* Every index once; min(n, threads) contiguous chunks whose sizes differ by
 * at most one, each on its own thread. */
static void check_cover(const cover *c, int threads)
{
	for (int64_t i = 0; i < c->n; i++)
		if (c->hits[i] != 1)
			ck_abort_msg("n=%lld threads=%d: index %lld hit %d times", (long long)c->n,
				     threads, (long long)i, (int)c->hits[i]);
	int want = c->n <= 0 ? 0 : c->n < threads ? (int)c->n : threads;
	ck_assert_int_eq(c->nchunks, want);
	int64_t lo = INT64_MAX, hi = 0;
	for (int i = 0; i < c->nchunks; i++) {
		int64_t size = c->end[i] - c->begin[i];
		lo = size < lo ? size : lo;
		hi = size > hi ? size : hi;
	}
	if (c->nchunks > 0)
		ck_assert_msg(hi - lo <= 1, "n=%lld threads=%d: chunk sizes %lld..%lld",
			      (long long)c->n, threads, (long long)lo, (long long)hi);
	ck_assert_int_eq(distinct_threads(c), c->nchunks);
}

static void run_cover(int64_t n, int threads)
{
	cover *c = cover_new(n);
	c->rendezvous = n < threads ? (int)n : threads;
	ck_assert_int_eq(ts_parallel_for(n, cover_body, c), 0);
	check_cover(c, threads);
	cover_free(c);
}

START_TEST(test_covers_range_once)
{
	static const int threads[] = {1, 2, 3, 4, 8};
	static const int64_t sizes[] = {0, 1, 7, 1000, 1000003, 1000000};
	for (size_t t = 0; t < TS_COUNT_OF(threads); t++) {
		ts_set_num_threads(threads[t]);
		ck_assert_int_eq(ts_num_threads(), threads[t]);
		for (size_t s = 0; s < TS_COUNT_OF(sizes); s++)
			run_cover(sizes[s], threads[t]);
	}
	ts_threadpool_shutdown();
}
END_TEST

START_TEST(test_negative_n_calls_nothing)
{
	ts_set_num_threads(3);
	cover *c = cover_new(0);
	ck_assert_int_eq(ts_parallel_for(-5, cover_body, c), 0);
	ck_assert_int_eq(c->nchunks, 0);
	cover_free(c);
	ts_threadpool_shutdown();
}
END_TEST

/* The inner call of a nested loop runs whole, on the outer chunk's thread. */
typedef struct nest {
	int64_t inner_n;
	atomic_int inner_calls;
	atomic_int inner_wrong;
	atomic_llong sum;
} nest;

typedef struct inner_ctx {
	nest *nest;
	pthread_t outer_tid;
	int64_t row;
} inner_ctx;

static void inner_body(int64_t begin, int64_t end, void *closure)
{
	inner_ctx *ic = closure;
	atomic_fetch_add(&ic->nest->inner_calls, 1);
	if (begin != 0 || end != ic->nest->inner_n || !pthread_equal(pthread_self(), ic->outer_tid))
		atomic_fetch_add(&ic->nest->inner_wrong, 1);
	for (int64_t j = begin; j < end; j++)
		atomic_fetch_add(&ic->nest->sum, ic->row * 1000 + j);
}

static void outer_body(int64_t begin, int64_t end, void *closure)
{
	for (int64_t i = begin; i < end; i++) {
		inner_ctx ic = {closure, pthread_self(), i};
		ts_parallel_for(((nest *)closure)->inner_n, inner_body, &ic);
		/* reconfiguring from inside a body is ignored */
		nest *ns = closure;
		if (ts_set_num_threads(1) != 4 || ts_num_threads() != 4)
			atomic_fetch_add(&ns->inner_wrong, 1);
		ts_threadpool_shutdown();
	}
}

START_TEST(test_nested_runs_serially)
{
	ts_set_num_threads(4);
	nest ns = {.inner_n = 37};
	ts_parallel_for(10, outer_body, &ns);
	ck_assert_int_eq(atomic_load(&ns.inner_calls), 10);
	ck_assert_int_eq(atomic_load(&ns.inner_wrong), 0);
	long long want = 0;
	for (int i = 0; i < 10; i++)
		for (int j = 0; j < 37; j++)
			want += i * 1000 + j;
	ck_assert_int_eq(atomic_load(&ns.sum), want);
	ck_assert_int_eq(ts_num_threads(), 4);
	ts_threadpool_shutdown();
}
END_TEST

START_TEST(test_set_num_threads_resizes)
{
	ts_set_num_threads(4);
	run_cover(1000, 4);
	ck_assert_int_eq(ts_set_num_threads(2), 4);
	ck_assert_int_eq(ts_num_threads(), 2);
	run_cover(1000, 2);
	ck_assert_int_eq(ts_set_num_threads(3), 2);
	run_cover(1000, 3);
	/* clamped to at most 1024 threads */
	ck_assert_int_eq(ts_set_num_threads(5000), 3);
	ck_assert_int_eq(ts_num_threads(), 1024);
	ts_set_num_threads(1);
	run_cover(1000, 1);
	ts_threadpool_shutdown();
}
END_TEST

START_TEST(test_env_sets_default)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int want_cores = cores < 1 ? 1 : cores > 1024 ? 1024 : (int)cores;
	ck_assert_int_eq(setenv("TESSERA_NUM_THREADS", "3", 1), 0);
	ts_set_num_threads(0);
	ck_assert_int_eq(ts_num_threads(), 3);
	run_cover(1000, 3);
	static const char *bad[] = {"0", "-2", "abc", "4x", ""};
	for (size_t i = 0; i < TS_COUNT_OF(bad); i++) {
		setenv("TESSERA_NUM_THREADS", bad[i], 1);
		ts_set_num_threads(0);
		ck_assert_msg(ts_num_threads() == want_cores, "TESSERA_NUM_THREADS='%s': %d threads",
			      bad[i], ts_num_threads());
	}
	/* an explicit count wins over the environment */
	setenv("TESSERA_NUM_THREADS", "3", 1);
	ts_set_num_threads(2);
	ck_assert_int_eq(ts_num_threads(), 2);
	unsetenv("TESSERA_NUM_THREADS");
	ts_threadpool_shutdown();
}
END_TEST

/* A child of a process with a running pool starts its own workers, and its
 * first use honours TESSERA_NUM_THREADS. */
static int child_main(void)
{
	cover *c = cover_new(500);
	c->rendezvous = 2;
	ts_parallel_for(500, cover_body, c);
	int ok = c->nchunks == 2 && distinct_threads(c) == 2;
	cover_free(c);
	setenv("TESSERA_NUM_THREADS", "3", 1);
	ts_set_num_threads(0);
	c = cover_new(500);
	c->rendezvous = 3;
	ts_parallel_for(500, cover_body, c);
	ok = ok && c->nchunks == 3 && distinct_threads(c) == 3;
	for (int i = 0; i < 500; i++)
		ok = ok && c->hits[i] == 1;
	cover_free(c);
	ts_threadpool_shutdown();
	return ok ? 0 : 1;
}

START_TEST(test_fork_child_restarts)
{
#ifdef TU_TSAN
	return;
#endif
	ts_set_num_threads(2);
	run_cover(100, 2);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(child_main());
	int status = 0;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	run_cover(100, 2);
	ts_threadpool_shutdown();
}
END_TEST

START_TEST(test_shutdown_then_reuse)
{
	ts_set_num_threads(3);
	run_cover(999, 3);
	ts_threadpool_shutdown();
	ts_threadpool_shutdown();
	ck_assert_int_eq(ts_num_threads(), 3);
	run_cover(999, 3);
	ts_threadpool_shutdown();
	run_cover(5, 3);
	ts_threadpool_shutdown();
}
END_TEST

static void *caller_main(void *arg)
{
	int64_t n = 10007;
	for (int rep = 0; rep < 40; rep++) {
		cover *c = cover_new(n);
		ts_parallel_for(n, cover_body, c);
		for (int64_t i = 0; i < n; i++)
			if (c->hits[i] != 1)
				*(int *)arg = 1;
		/* the pool's 3 chunks, or the whole range serially when another
		 * caller had the pool */
		if (c->nchunks != 3 && !(c->nchunks == 1 && c->begin[0] == 0 && c->end[0] == n))
			*(int *)arg = 1;
		cover_free(c);
	}
	return NULL;
}

START_TEST(test_concurrent_callers)
{
	ts_set_num_threads(3);
	pthread_t t[3];
	int bad[3] = {0, 0, 0};
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, caller_main, &bad[i]), 0);
	for (int i = 0; i < 3; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(bad[i], 0);
	}
	ts_threadpool_shutdown();
}
END_TEST

/* A call from a user thread while another thread's call has the pool runs
 * serially instead of waiting: the other call's worker here waits on a
 * lock this thread holds until its own call returns (as a graph run inside
 * a parallel body waits on an executable another thread is running). */
typedef struct handoff {
	pthread_mutex_t held;
	atomic_int holding, pool_busy;
	cover *c;
} handoff;

static handoff g_handoff = {.held = PTHREAD_MUTEX_INITIALIZER};

static void waits_on_holder(int64_t begin, int64_t end, void *closure)
{
	handoff *h = closure;
	(void)end;
	if (begin == 0) { /* the caller's chunk: the pool is taken now */
		atomic_store(&h->pool_busy, 1);
		return;
	}
	pthread_mutex_lock(&h->held);
	pthread_mutex_unlock(&h->held);
}

static void *holder_main(void *arg)
{
	handoff *h = arg;
	pthread_mutex_lock(&h->held);
	atomic_store(&h->holding, 1);
	while (!atomic_load(&h->pool_busy))
		sched_yield();
	ts_parallel_for(h->c->n, cover_body, h->c);
	pthread_mutex_unlock(&h->held);
	return NULL;
}

START_TEST(test_busy_pool_runs_caller_serially)
{
	ts_set_num_threads(2);
	handoff *h = &g_handoff;
	atomic_store(&h->holding, 0);
	atomic_store(&h->pool_busy, 0);
	h->c = cover_new(1000);
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, holder_main, h), 0);
	while (!atomic_load(&h->holding))
		sched_yield();
	ts_parallel_for(2, waits_on_holder, h);
	pthread_join(t, NULL);
	ck_assert_int_eq(h->c->nchunks, 1);
	for (int64_t i = 0; i < h->c->n; i++)
		ck_assert_int_eq(h->c->hits[i], 1);
	cover_free(h->c);
	ts_threadpool_shutdown();
}
END_TEST

/* The pool calls from a thread that a running parallel body waits on must
 * not wait for that call: asking the size, resizing and shutting down all
 * return at once, and the call carries out the resize and shutdown when it
 * ends.  The body gives up after 10 s, so a regression fails, not hangs. */
typedef struct asker {
	atomic_int started, answered;
	int seen_threads, prev_threads;
} asker;

static asker g_asker;

static void *asker_main(void *arg)
{
	asker *a = arg;
	while (!atomic_load(&a->started))
		sched_yield();
	a->seen_threads = ts_num_threads();
	a->prev_threads = ts_set_num_threads(3);
	ts_threadpool_shutdown();
	atomic_store(&a->answered, 1);
	return NULL;
}

static void waits_on_asker(int64_t begin, int64_t end, void *closure)
{
	asker *a = closure;
	(void)end;
	if (begin != 0)
		return;
	atomic_store(&a->started, 1);
	for (int i = 0; i < 10000 && !atomic_load(&a->answered); i++)
		usleep(1000);
}

START_TEST(test_pool_calls_never_wait_on_a_busy_pool)
{
	ts_set_num_threads(2);
	asker *a = &g_asker;
	atomic_store(&a->started, 0);
	atomic_store(&a->answered, 0);
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, asker_main, a), 0);
	ck_assert_int_eq(ts_parallel_for(2, waits_on_asker, a), 0);
	ck_assert_msg(atomic_load(&a->answered), "ts_num_threads/ts_set_num_threads/ts_threadpool_shutdown "
		"waited for the parallel call their thread was blocking");
	pthread_join(t, NULL);
	ck_assert_int_eq(a->seen_threads, 2);
	ck_assert_int_eq(a->prev_threads, 2);
	/* the resize took effect: the pool restarts with three threads */
	ck_assert_int_eq(ts_num_threads(), 3);
	run_cover(1000, 3);
	ts_threadpool_shutdown();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("threadpool");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_covers_range_once);
	tcase_add_test(tc, test_negative_n_calls_nothing);
	tcase_add_test(tc, test_nested_runs_serially);
	tcase_add_test(tc, test_set_num_threads_resizes);
	tcase_add_test(tc, test_env_sets_default);
	tcase_add_test(tc, test_fork_child_restarts);
	tcase_add_test(tc, test_shutdown_then_reuse);
	tcase_add_test(tc, test_concurrent_callers);
	tcase_add_test(tc, test_busy_pool_runs_caller_serially);
	tcase_add_test(tc, test_pool_calls_never_wait_on_a_busy_pool);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
