/*
 * c_emit.h - C-like source from lowered functions: plain C for the CPU and
 * CUDA C for NVRTC, from one walker and a table of dialect differences.
 *
 * Both emitters take a lowered ts_func (the loop IR of ir.h: FOR, STORE,
 * ALLOCATE, IF, SEQ, LET, EVALUATE, BARRIER over flat buffers) and return
 * the source as an arena string, or NULL with an error naming the function
 * and the construct that cannot be emitted.
 *
 * Plain C:  `void name(float *restrict A, ...)` plus
 *           `int32_t name_packed(void **args)`, which takes one data pointer
 *           per parameter and returns 0.  Parallel loops carry
 *           `#pragma omp parallel for` and vectorized ones `#pragma omp simd`
 *           (both only when compiled with OpenMP, so -Wall stays quiet
 *           otherwise; the file also turns off GCC's -Wmaybe-uninitialized,
 *           which takes a buffer stored outside the loop it is computed in,
 *           written under if (k == 0), for one read before written); thread-bound loops run serially, which is exact
 *           because threads cannot communicate without a BARRIER, and
 *           BARRIER is rejected.  Temporaries up to 64 KiB live on the stack; larger
 *           ones, outside parallel loops only, on the heap (if that
 *           allocation fails the function returns early, outputs unwritten).
 *
 * CUDA C:   `extern "C" __global__ void __launch_bounds__(T) name(...)`.
 *           Loops bound to blockIdx/threadIdx become index reads, the launch
 *           configuration comes from their constant extents (a loop shorter
 *           than its launch dimension is guarded), shared allocations are
 *           declared at the top of the kernel, a vectorized loop of 4 (or 2)
 *           float32 lanes that stores unit-stride, provably aligned data is
 *           one float4 (float2) access, and other vectorized or unrolled
 *           loops get `#pragma unroll`.
 *
 * Vector expressions (RAMP / BROADCAST, lanes > 1) are emitted lane by lane
 * inside a short loop over the lanes.
 */
#ifndef TESSERA_CODEGEN_C_EMIT_H
#define TESSERA_CODEGEN_C_EMIT_H

#include "cuda_driver.h"
#include "ir.h"

/* How a CUDA kernel is launched (the runtime's ts_launch, filled in by the
 * emitter from the bound loops). */
typedef ts_launch cg_launch;

/* Limits of the CUDA C dialect checked at emission time. */
#define CG_CUDA_MAX_THREADS 1024
/* blockDim.z is bounded on its own (x and y only by the product): a larger
 * block compiles but its launch fails. */
#define CG_CUDA_MAX_BLOCK_Z 64
#define CG_CUDA_MAX_STATIC_SHARED 49152
/* Past the static 48 KB a block takes shared memory dynamically, up to
 * what the architecture allows (cg_cuda_max_shared): this much on sm_90,
 * the most of any. */
#define CG_CUDA_MAX_SHARED 232448

const char *cg_emit_c(ts_ctx *ctx, const ts_func *f);
/* f's CUDA C exactly as f is: no barriers are inserted and f is not
 * checked for cross-thread races, so a kernel that shares memory between
 * threads needs cg_cuda_insert_sync first.  The source ts_build(f,
 * "cuda -arch=sm_XY") compiles, which ts_module_source(m, "cuda") prints
 * (no GPU needed), comes from cg_cuda_kernel_source (build_cuda.h), which
 * does both.  launch may be NULL when the caller only wants the text. */
const char *cg_emit_cuda(ts_ctx *ctx, const ts_func *f, cg_launch *launch);

/* Inserts BARRIERs so that threads of a block never race on shared buffers:
 * between a statement that writes a shared buffer and a later one that reads
 * it (or overwrites what others still read), and at the end of a sequential
 * loop body whose next iteration would overwrite or read such a buffer.
 * Conservative: accesses are summarised per statement.  A threadIdx loop
 * narrower than the block with barriers at the top level of its body is
 * split at them, so that every thread of the block reaches each one.
 * Returns s itself when no barrier is needed (codegen/cuda_sync.c). */
ts_stmt *cg_cuda_insert_sync(ts_ctx *ctx, ts_stmt *s);

#endif
