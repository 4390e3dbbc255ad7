/*
 * llvm_parallel_fallback.c - a serial ts_parallel_for for builds that do not
 * have the thread pool (runtime/threadpool.c) yet.
 *
 * Generated code calls ts_parallel_for for every parallel loop; running the
 * whole range as one chunk is a correct, if slow, implementation of its
 * contract.  Builds with the real pool define TS_HAVE_THREADPOOL (or drop
 * this file).
 */
#ifndef TS_HAVE_THREADPOOL
#include "threadpool.h"

int32_t ts_parallel_for(int64_t n, ts_parallel_body body, void *closure)
{
	if (n > 0)
		body(0, n, closure);
	return 0;
}
#endif
