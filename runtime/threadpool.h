/*
 * threadpool.h - a persistent pthread pool for parallel loops.
 *
 * Generated code outlines the body of a parallel loop into a function
 * `body(begin, end, closure)` and calls ts_parallel_for, which splits
 * [0, n) into contiguous chunks, one per worker, and returns when all are
 * done.  Nested calls from inside a worker run serially in that worker.
 */
#ifndef TESSERA_RUNTIME_THREADPOOL_H
#define TESSERA_RUNTIME_THREADPOOL_H

#include <stdint.h>

typedef void (*ts_parallel_body)(int64_t begin, int64_t end, void *closure);

/* Runs body over [0, n) on the global pool (created on first use with
 * TESSERA_NUM_THREADS threads, default all cores).  Returns 0. */
int32_t ts_parallel_for(int64_t n, ts_parallel_body body, void *closure);

/* Sets the number of threads used from now on (>= 1); returns the previous
 * count.  ts_num_threads() reports the current count. */
int ts_set_num_threads(int n);
int ts_num_threads(void);
/* Stops and joins the workers (they restart on next use). */
void ts_threadpool_shutdown(void);

#endif
