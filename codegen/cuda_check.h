/*
 * cuda_check.h - the rules a function must follow to become one CUDA kernel
 * that computes what the reference evaluator does (codegen/cuda_check.c).
 * Both checks return TS_ERR_INVALID with a message naming the function,
 * the stage or loop and the rule; build_cuda.c runs them around barrier
 * insertion, before any CUDA C is emitted.
 */
#ifndef TESSERA_CODEGEN_CUDA_CHECK_H
#define TESSERA_CODEGEN_CUDA_CHECK_H

#include "ir.h"

/* CUDA's local memory per thread (compute capability 2.0 and later). */
#define CG_CUDA_MAX_LOCAL (512 * 1024)

/* Refuses a function with no loop bound to a block or thread (it would run
 * on one GPU thread), and a buffer written under its own block/thread loops
 * (block loops, for a shared one) but read outside them: each thread
 * (block) holds a private copy of it, so such a read sees what other
 * threads never wrote into this copy.  Refuses buffers that are not shared
 * and together are larger than CG_CUDA_MAX_LOCAL: every thread holds a copy
 * of each. */
ts_status cg_cuda_check(ts_ctx *ctx, const ts_func *f);
/* Refuses a BARRIER that some threads of a block may not reach: one under a
 * threadIdx loop narrower than the block, or under a condition or a loop
 * trip count that depends on threadIdx or on loaded values. */
ts_status cg_cuda_check_barriers(ts_ctx *ctx, const ts_func *f);

#endif
