/*
 * threadpool.h - a persistent pthread pool for parallel loops.
 *
 * Generated code outlines the body of a parallel loop into a function
 * `body(begin, end, closure)` and calls ts_parallel_for, which splits
 * [0, n) into contiguous chunks, one per thread, and returns when all are
 * done.  Nested calls from inside a worker run serially in that worker.
 */
#ifndef TESSERA_RUNTIME_THREADPOOL_H
#define TESSERA_RUNTIME_THREADPOOL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*ts_parallel_body)(int64_t begin, int64_t end, void *closure);

/* Runs body over [0, n) on the global pool (created on first use with
 * TESSERA_NUM_THREADS threads, default all cores).  Returns 0.  [0, n) is
 * min(n, threads) near-equal contiguous chunks; chunk i is thread i's
 * (the caller is thread 0), and a thread that has run its own runs any
 * chunk nobody has started, so a worker still asleep (or preempted) when
 * the call starts leaves its chunk to the caller instead of holding it up.  n <= 0 calls nothing; a NULL body with n > 0 returns
 * -1.  A call while another user thread's call has the pool runs its whole
 * range serially in its own thread (waiting could deadlock: that call's
 * body may be waiting on this thread). */
int32_t ts_parallel_for(int64_t n, ts_parallel_body body, void *closure);

/* Sets the number of threads used from now on (>= 1, at most 1024); returns
 * the previous count.  n <= 0 restores the default (TESSERA_NUM_THREADS,
 * else all cores), read again when the pool next starts.  A running pool of
 * another size is joined and restarts on next use.  ts_num_threads() reports
 * the current count (what the pool has, or will start with).  Both calls,
 * and ts_threadpool_shutdown, do nothing from inside a parallel body.  None
 * of the three waits for another thread's parallel call (its body may be
 * waiting on this thread): a resize or shutdown that finds the pool busy
 * is carried out by that call before it returns. */
int ts_set_num_threads(int n);
int ts_num_threads(void);
/* Stops and joins the workers (they restart on next use); while another
 * thread's parallel call runs, that call does so when it ends. */
void ts_threadpool_shutdown(void);

#ifdef __cplusplus
}
#endif

#endif
