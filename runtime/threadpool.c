/*
 * threadpool.c - the persistent pthread pool behind ts_parallel_for.
 *
 * The pool is process-wide state, the one deliberate exception to "no global
 * mutable state": generated code calls ts_parallel_for(n, body, closure)
 * from deep inside a compiled kernel that has no context to carry a pool,
 * and the point of a pool is that every kernel of every compilation shares
 * the same sleeping threads instead of creating its own (OpenMP runtimes
 * are global for the same reason).  All of it lives in one struct guarded by
 * `call_lock`; a user thread that finds it taken by another's call runs
 * its loop serially instead of waiting (below).
 *
 * A job is published by writing (body, closure, n, nchunks) and then `job`,
 * its generation and chunk count in one word, under `lock`; workers spin
 * on `job` for half a
 * millisecond (SPIN_NS) and then sleep on `wake`, so an idle pool costs no
 * CPU.  The job is nchunks near-equal contiguous chunks of [0, n), as many
 * as threads (with n below the thread count, n chunks of one element).
 * Chunk i is thread i's (the caller is thread 0): each thread claims its
 * own first, so that consecutive loops over the same data give each
 * thread the same part (its caches hold it), then any chunk still
 * unclaimed.  A claim marks the chunk with the job's generation
 * (`chunk_gen`, by compare-and-swap), so each chunk runs once, and a
 * thread that read an older job finds all of its chunks marked.  The
 * caller then waits only until `pending`, the chunks not yet finished,
 * reaches zero (the last to finish signals `done`).  A worker asleep, or
 * preempted on a loaded machine, when a job starts thus finds its chunk
 * run by the caller rather than making the caller wait for it to start: a
 * parallel loop run many times inside serial loops (a stage computed at
 * an inner loop) took 126 s on two busy cores where one thread took 0.34 s.
 *
 * A thread running a chunk is marked in a thread-local flag, and a call
 * made there runs its whole range serially: nested parallelism would only
 * oversubscribe the cores, and waiting on `call_lock` would deadlock.  So
 * does a call from a user thread while another's holds the pool: waiting
 * could deadlock too, when that call's body waits on this thread.  For the
 * same reason ts_set_num_threads and ts_threadpool_shutdown never wait for
 * another thread's call: they leave the change to it (apply_pending).
 *
 * Workers start lazily on the first parallel call with ts_set_num_threads'
 * count, else TESSERA_NUM_THREADS (a positive integer; larger than 1024
 * is clamped, anything else falls back, each with a line on stderr), else
 * every online core.  Resizing or shutting down joins them; the next call restarts them.
 * Failing to create a thread is not an error: the pool runs with the
 * threads it got.  A fork handler resets the child's copy to "not started",
 * since the child inherits none of the worker threads.
 */
#include "threadpool.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 1024
_Static_assert(MAX_THREADS <= 0xfff, "a job's chunk count takes 12 bits of pool.job");
/* How long a worker polls `job` (and the caller `pending`)
 * before sleeping.  Waking a sleeping worker took about 60 us on a 2-core
 * VM, and with 2000 polls (68 us there, at 34 ns a pause) workers had
 * gone to sleep before 20% of a ResNet-50's kernels; with 500 us, before
 * 4%.  Half a millisecond of a core after the last call is the price. */
#define SPIN_NS 500000

typedef struct worker {
	pthread_t tid;
	int index;          /* 1.. ; the caller is worker 0 */
	uint64_t start_job; /* `job` when it was created */
} worker;

typedef struct pool {
	pthread_mutex_t call_lock; /* one parallel call or reconfiguration at a time */
	pthread_mutex_t lock;      /* guards the sleeps on wake and done */
	pthread_cond_t wake;       /* workers: a new job, or stop */
	pthread_cond_t done;       /* the caller: pending reached zero */
	atomic_int requested;      /* ts_set_num_threads' count; 0: default */
	/* a resize or shutdown asked for while another thread held call_lock,
	 * applied by the holder before it lets go (see apply_pending) */
	atomic_bool resize_pending, stop_pending;
	bool started;
	int nthreads;              /* caller + workers, once started */
	int nworkers;
	worker *workers;
	atomic_bool stop;
	atomic_int pending;        /* chunks of the current job not finished */
	/* the current job's generation (bits 12 on, counting jobs from 1)
	 * and chunk count (bits 0-11), read together in one load */
	atomic_uint_fast64_t job;
	/* per chunk, the generation of the last job that claimed it */
	atomic_uint_fast64_t chunk_gen[MAX_THREADS];
	atomic_int count;          /* nthreads, readable from inside a chunk */
	/* the current job, written before `job` */
	ts_parallel_body body;
	void *closure;
	int64_t n;
	int nchunks;
} pool;

static pool g_pool = {
	.call_lock = PTHREAD_MUTEX_INITIALIZER,
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.wake = PTHREAD_COND_INITIALIZER,
	.done = PTHREAD_COND_INITIALIZER,
};
static _Thread_local bool t_in_chunk;
static _Thread_local bool t_fork_locked;
static pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Whether a spin that started at *start (0: not yet) has lasted SPIN_NS;
 * the clock is read every 64 polls. */
static bool spun_out(uint64_t *start, int i)
{
	if (i % 64)
		return false;
	uint64_t t = now_ns();
	if (!*start)
		*start = t;
	return t - *start >= SPIN_NS;
}

static int clamp_threads(long n)
{
	return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
}

/* TESSERA_NUM_THREADS if it is a positive integer (at most MAX_THREADS),
 * else the online cores.  With `report`, a value that is not used as given
 * is said on stderr: the pool has no context to record an error in, and a
 * silently ignored setting is worse than a line of output. */
static int default_threads(bool report)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	const char *env = getenv("TESSERA_NUM_THREADS");
	if (!env || !env[0])
		return clamp_threads(cores);
	char *end;
	errno = 0;
	long v = strtol(env, &end, 10);
	bool number = end != env && *end == '\0' && (errno == 0 || v == LONG_MAX);
	if (number && v > 0 && v <= MAX_THREADS)
		return (int)v;
	bool many = number && v > MAX_THREADS;
	int n = many ? MAX_THREADS : clamp_threads(cores);
	if (report)
		fprintf(stderr, "tessera: TESSERA_NUM_THREADS='%s' is %s; using %d threads\n", env,
			many ? "more than the maximum of 1024" : "not a positive integer", n);
	return n;
}

/* The count the pool starts with next. */
static int configured_threads(pool *p, bool report)
{
	int r = atomic_load(&p->requested);
	return r > 0 ? r : default_threads(report);
}

static int wanted_threads(pool *p, bool report)
{
	return p->started ? p->nthreads : configured_threads(p, report);
}

/* ---- one job ------------------------------------------------------------- */

/* Chunk i of nchunks near-equal contiguous chunks of [0, n): the first
 * n % nchunks chunks hold one element more. */
static void chunk_range(int64_t n, int nchunks, int i, int64_t *begin, int64_t *end)
{
	int64_t q = n / nchunks, r = n % nchunks;
	*begin = q * i + (i < r ? i : r);
	*end = *begin + q + (i < r ? 1 : 0);
}

static void run_chunk(const pool *p, int i)
{
	int64_t begin, end;
	chunk_range(p->n, p->nchunks, i, &begin, &end);
	t_in_chunk = true;
	p->body(begin, end, p->closure);
	t_in_chunk = false;
}

static void finish_chunk(pool *p)
{
	if (atomic_fetch_sub(&p->pending, 1) == 1) {
		pthread_mutex_lock(&p->lock);
		pthread_cond_signal(&p->done);
		pthread_mutex_unlock(&p->lock);
	}
}

/* Claims chunk i of job `gen`: false when it is claimed already (by this
 * job, or a later one when `gen` is over).  A claimed chunk keeps the
 * job's parameters fixed until it is finished: the caller publishes no
 * other job before. */
static bool claim_chunk(pool *p, uint64_t gen, int i)
{
	uint64_t s = atomic_load(&p->chunk_gen[i]);
	while (s < gen)
		if (atomic_compare_exchange_weak(&p->chunk_gen[i], &s, gen))
			return true;
	return false;
}

/* Runs chunk `own` of `job` (a value of p->job) if no one has claimed it,
 * then every other chunk still unclaimed. */
static void run_chunks(pool *p, uint64_t job, int own)
{
	uint64_t gen = job >> 12;
	int nchunks = (int)(job & 0xfff);
	for (int k = 0; k < nchunks; k++) {
		int i = (own + k) % nchunks;
		if (claim_chunk(p, gen, i)) {
			run_chunk(p, i);
			finish_chunk(p);
		}
	}
}

/* Waits for a job other than *seen; false when told to stop. */
static bool wait_for_job(pool *p, uint64_t *seen)
{
	uint64_t start = 0;
	for (int i = 0; !spun_out(&start, i); i++) {
		if (atomic_load(&p->stop))
			return false;
		uint64_t g = atomic_load(&p->job);
		if (g != *seen) {
			*seen = g;
			return true;
		}
		cpu_relax();
	}
	pthread_mutex_lock(&p->lock);
	while (!atomic_load(&p->stop) && atomic_load(&p->job) == *seen)
		pthread_cond_wait(&p->wake, &p->lock);
	bool stop = atomic_load(&p->stop);
	*seen = atomic_load(&p->job);
	pthread_mutex_unlock(&p->lock);
	return !stop;
}

static void *worker_main(void *arg)
{
	worker *w = arg;
	pool *p = &g_pool;
	uint64_t seen = w->start_job;
	while (wait_for_job(p, &seen))
		run_chunks(p, seen, w->index);
	return NULL;
}

static void wait_all_done(pool *p)
{
	uint64_t start = 0;
	for (int i = 0; atomic_load(&p->pending) > 0 && !spun_out(&start, i); i++)
		cpu_relax();
	if (atomic_load(&p->pending) == 0)
		return;
	pthread_mutex_lock(&p->lock);
	while (atomic_load(&p->pending) > 0)
		pthread_cond_wait(&p->done, &p->lock);
	pthread_mutex_unlock(&p->lock);
}

/* Publishes the job, runs the chunks no worker has claimed and waits for
 * those that workers run. */
static void dispatch(pool *p, int64_t n, int nchunks, ts_parallel_body body, void *closure)
{
	pthread_mutex_lock(&p->lock);
	p->body = body;
	p->closure = closure;
	p->n = n;
	p->nchunks = nchunks;
	atomic_store(&p->pending, nchunks);
	uint64_t job = (((atomic_load(&p->job) >> 12) + 1) << 12) | (uint64_t)nchunks;
	atomic_store(&p->job, job);
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
	run_chunks(p, job, 0);
	wait_all_done(p);
}

/* ---- starting and stopping ------------------------------------------------ */

static void atfork_prepare(void)
{
	/* A fork from inside a chunk cannot wait for its own call to end. */
	t_fork_locked = !t_in_chunk;
	if (t_fork_locked)
		pthread_mutex_lock(&g_pool.call_lock);
}

static void atfork_parent(void)
{
	if (t_fork_locked)
		pthread_mutex_unlock(&g_pool.call_lock);
}

/* The child has only the forking thread: forget the workers. */
static void atfork_child(void)
{
	pool *p = &g_pool;
	pthread_mutex_init(&p->call_lock, NULL);
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	pthread_cond_init(&p->done, NULL);
	free(p->workers);
	p->workers = NULL;
	p->nworkers = 0;
	p->nthreads = 0;
	p->started = false;
	atomic_store(&p->pending, 0);
	atomic_store(&p->stop, false);
	atomic_store(&p->count, 0);
	atomic_store(&p->resize_pending, false);
	atomic_store(&p->stop_pending, false);
}

static void register_atfork(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* Creates up to wanted_threads() - 1 workers; call with call_lock held. */
static void start_pool(pool *p)
{
	pthread_once(&g_atfork_once, register_atfork);
	int want = wanted_threads(p, true);
	p->nworkers = 0;
	p->workers = want > 1 ? calloc((size_t)want - 1, sizeof(worker)) : NULL;
	uint64_t job = atomic_load(&p->job);
	for (int i = 0; p->workers && i < want - 1; i++) {
		worker *w = &p->workers[i];
		w->index = i + 1;
		w->start_job = job;
		if (pthread_create(&w->tid, NULL, worker_main, w) != 0)
			break;
		p->nworkers++;
	}
	p->nthreads = p->nworkers + 1;
	p->started = true;
	atomic_store(&p->count, p->nthreads);
}

/* Joins the workers; call with call_lock held and no job running. */
static void stop_pool(pool *p)
{
	if (!p->started)
		return;
	pthread_mutex_lock(&p->lock);
	atomic_store(&p->stop, true);
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
	for (int i = 0; i < p->nworkers; i++)
		pthread_join(p->workers[i].tid, NULL);
	free(p->workers);
	p->workers = NULL;
	p->nworkers = 0;
	p->nthreads = 0;
	p->started = false;
	atomic_store(&p->stop, false);
	atomic_store(&p->count, 0);
}

/* Carries out a resize or shutdown asked for while another thread held
 * call_lock; call with call_lock held and no job running. */
static void apply_pending(pool *p)
{
	bool stop = atomic_exchange(&p->stop_pending, false);
	bool resize = atomic_exchange(&p->resize_pending, false);
	if (stop || (resize && p->started && configured_threads(p, false) != p->nthreads))
		stop_pool(p);
}

static bool anything_pending(pool *p)
{
	return atomic_load(&p->stop_pending) || atomic_load(&p->resize_pending);
}

/* Releases call_lock, first carrying out what is pending.  A request made
 * just before the unlock is seen by the check after it; one made after
 * finds the lock free and carries itself out (request_change). */
static void unlock_applying(pool *p)
{
	do {
		apply_pending(p);
		pthread_mutex_unlock(&p->call_lock);
	} while (anything_pending(p) && pthread_mutex_trylock(&p->call_lock) == 0);
}

/* Raises a request flag and carries it out now if the pool is free; else
 * the thread holding it will, before it lets go. */
static void request_change(pool *p, atomic_bool *flag)
{
	atomic_store(flag, true);
	if (pthread_mutex_trylock(&p->call_lock) == 0)
		unlock_applying(p);
}

/* ---- the API ------------------------------------------------------------- */

/* The whole range on the calling thread, marked as in a chunk so that
 * calls nested in it run serially too. */
static void run_serially(int64_t n, ts_parallel_body body, void *closure)
{
	bool outer = t_in_chunk;
	t_in_chunk = true;
	body(0, n, closure);
	t_in_chunk = outer;
}

int32_t ts_parallel_for(int64_t n, ts_parallel_body body, void *closure)
{
	if (n <= 0)
		return 0;
	if (!body)
		return -1;
	pool *p = &g_pool;
	/* inside a chunk, or another user thread's call holds the pool: run
	 * here, serially.  Waiting would deadlock where that call's body waits
	 * on this thread (a graph run inside a parallel body, while this
	 * thread runs the same executable), and the cores are busy with that
	 * call anyway. */
	if (t_in_chunk || pthread_mutex_trylock(&p->call_lock) != 0) {
		run_serially(n, body, closure);
		return 0;
	}
	apply_pending(p);
	if (!p->started)
		start_pool(p);
	int nchunks = n < p->nthreads ? (int)n : p->nthreads;
	if (nchunks <= 1)
		run_serially(n, body, closure);
	else
		dispatch(p, n, nchunks, body, closure);
	unlock_applying(p);
	return 0;
}

/* None of the three below waits for another thread's parallel call: its
 * body may be waiting on this thread.  A resize or shutdown that finds the
 * pool taken is left to that call, which carries it out before it returns. */
int ts_num_threads(void)
{
	pool *p = &g_pool;
	int running = atomic_load(&p->count);
	if (t_in_chunk || (running > 0 && !atomic_load(&p->resize_pending)))
		return running;
	return configured_threads(p, false);
}

int ts_set_num_threads(int n)
{
	if (t_in_chunk)
		return atomic_load(&g_pool.count);
	pool *p = &g_pool;
	int prev = ts_num_threads();
	atomic_store(&p->requested, n > 0 ? clamp_threads(n) : 0);
	request_change(p, &p->resize_pending);
	return prev;
}

void ts_threadpool_shutdown(void)
{
	if (t_in_chunk)
		return;
	request_change(&g_pool, &g_pool.stop_pending);
}
