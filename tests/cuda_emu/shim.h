/*
 * shim.h - CUDA C on the host: what the stand-in NVRTC (nvrtc.c) puts
 * before a kernel's source, so that the host C++ compiler builds it into a
 * shared object the stand-in driver (cuda.c) launches.
 *
 * A launch runs the blocks one after another (so a __shared__ array is an
 * ordinary static: one block owns it at a time), each CUDA thread of a
 * block a fiber of the launching thread, one at a time: a thread runs until
 * it reaches __syncthreads(), a warp-wide operation or its end, then the
 * next one runs.  Between two barriers the threads run in thread order,
 * and in the next interval in reverse order (odd blocks start reversed), so
 * a read of shared memory that another thread of the block writes without
 * a barrier between them sees the unwritten value in one of the two
 * orders: a missing barrier gives wrong results here, every time, not only
 * on some runs of a GPU.  The dynamic
 * shared memory is filled with 0xff bytes (a NaN in every float type) when
 * a block starts.
 *
 * A launch fails, naming the thread and block, where a GPU would hang or
 * run undefined code: a __syncthreads() that some threads of the block
 * never reach (they left the kernel or wait at another one), and a
 * warp-wide operation (ldmatrix, mma.sync) without all 32 lanes.
 *
 * The PTX that tessera emits inside asm statements (the stand-in NVRTC
 * turns each statement into a call of ts_emu::ptx) is carried out here from
 * the PTX ISA's definitions: cvt between float16 and float32, %laneid,
 * ldmatrix.x4 (.trans too), mma.sync m16n8k16 for float16 and bfloat16 and
 * m16n8k8 for TF32, with the operand fragments laid out as the ISA gives
 * them.  Other PTX fails the launch with its text.  __CUDA_ARCH__ is not
 * defined: the sm_80 cp.async copies take their plain fallbacks.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <initializer_list>
#include <utility>

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/common_interface_defs.h>
#endif

/* ---- the CUDA C dialect --------------------------------------------------------- */

struct uint3 {
	unsigned x, y, z;
};
struct __attribute__((aligned(8))) uint2 {
	unsigned x, y;
};
struct __attribute__((aligned(16))) uint4 {
	unsigned x, y, z, w;
};
struct __attribute__((aligned(8))) float2 {
	float x, y;
};
struct __attribute__((aligned(16))) float4 {
	float x, y, z, w;
};
static inline float2 make_float2(float x, float y)
{
	return {x, y};
}
static inline float4 make_float4(float x, float y, float z, float w)
{
	return {x, y, z, w};
}

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static
#define __syncthreads() ts_emu::sync_block(__LINE__)

template <typename To, typename From> static inline To ts_emu_bits(From v)
{
	static_assert(sizeof(To) == sizeof(From), "same size");
	To t;
	memcpy(&t, &v, sizeof(t));
	return t;
}
static inline float __int_as_float(int v) { return ts_emu_bits<float>(v); }
static inline float __uint_as_float(unsigned v) { return ts_emu_bits<float>(v); }
static inline int __float_as_int(float v) { return ts_emu_bits<int>(v); }
static inline unsigned __float_as_uint(float v) { return ts_emu_bits<unsigned>(v); }
static inline double __longlong_as_double(long long v) { return ts_emu_bits<double>(v); }
static inline long long __double_as_longlong(double v) { return ts_emu_bits<long long>(v); }

/* Set for the thread about to run: only one runs at a time. */
static uint3 threadIdx, blockIdx;
static uint3 blockDim, gridDim;
/* `extern __shared__` arrays (the stand-in NVRTC drops the __shared__):
 * the most dynamic shared memory a block may have on sm_90 */
alignas(16) unsigned char ts_shared[232448];

/* ---- the scheduler -------------------------------------------------------------- */

namespace ts_emu {

enum { RUN, AT_BARRIER, AT_WARP, DONE };

/* Each CUDA thread of a block is a fiber (ucontext) on a stack of its own
 * with a guard page below it; the launching thread runs them one at a time
 * and each yields back at a barrier, a warp-wide operation or its end.
 * Under AddressSanitizer every switch is announced to it, as its fiber
 * interface asks. */
enum { STACK = 256 << 10, PAGE = 4096 };

struct launch_state {
	void (*body)(void **);
	void **params;
	int nthreads;
	long block;    /* the block running */
	int interval;  /* barriers passed in this block; odd: reverse order */
	int *st, *line;
	ucontext_t sched, *fiber;
	unsigned char *stacks;
	void **fake;   /* AddressSanitizer's fake stack of each fiber */
	const void *sched_bottom;
	size_t sched_size;
	uint64_t (*slot)[32][8]; /* per warp and lane: what a warp-wide operation exchanges */
	bool failed;
	char err[512];
};

static launch_state *L;
static int self;

static void *stack_of(int t)
{
	return L->stacks + (size_t)t * (STACK + PAGE) + PAGE;
}

/* swapcontext by getcontext and setcontext: AddressSanitizer's
 * swapcontext warns that it is not fully supported, where the switches
 * here are announced to it (below). */
static void switch_to(ucontext_t *save, const ucontext_t *to)
{
	volatile bool resumed = false;
	getcontext(save);
	if (!resumed) {
		resumed = true;
		setcontext(to);
	}
}

/* From fiber `self` to the scheduler, and back when it is resumed. */
static void yield(void)
{
	int t = self;
#ifdef __SANITIZE_ADDRESS__
	__sanitizer_start_switch_fiber(&L->fake[t], L->sched_bottom, L->sched_size);
#endif
	switch_to(&L->fiber[t], &L->sched);
#ifdef __SANITIZE_ADDRESS__
	__sanitizer_finish_switch_fiber(L->fake[t], &L->sched_bottom, &L->sched_size);
#endif
}

static uint3 coords(long i, const uint3 &d)
{
	return {(unsigned)(i % d.x), (unsigned)(i / d.x % d.y), (unsigned)(i / d.x / d.y)};
}

/* From the scheduler to fiber t until it yields. */
static void resume(int t)
{
	self = t;
	threadIdx = coords(t, blockDim);
	void *fake = NULL;
#ifdef __SANITIZE_ADDRESS__
	__sanitizer_start_switch_fiber(&fake, stack_of(t), STACK);
#endif
	switch_to(&L->sched, &L->fiber[t]);
#ifdef __SANITIZE_ADDRESS__
	__sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
	(void)fake;
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Records the first failure and leaves the fiber for good: the launch
 * stops and its fibers are dropped. */
static void fail(const char *fmt, ...)
{
	if (!L->failed) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(L->err, sizeof(L->err), fmt, ap);
		va_end(ap);
	}
	L->failed = true;
	yield();
	abort(); /* a failed launch resumes no fiber */
}

static inline void sync_block(int line)
{
	L->st[self] = AT_BARRIER;
	L->line[self] = line;
	yield();
}

/* All 32 lanes of this thread's warp meet here (a warp-wide operation). */
static void sync_warp(void)
{
	int t = self, w0 = t & ~31;
	if (w0 + 32 > L->nthreads)
		fail("a warp-wide operation in a block of %d threads, whose last warp is partial",
		     L->nthreads);
	L->st[t] = AT_WARP;
	yield();
}

static void fiber_main(int t)
{
#ifdef __SANITIZE_ADDRESS__
	__sanitizer_finish_switch_fiber(NULL, &L->sched_bottom, &L->sched_size);
#endif
	L->body(L->params);
	L->st[t] = DONE;
#ifdef __SANITIZE_ADDRESS__
	__sanitizer_start_switch_fiber(NULL, L->sched_bottom, L->sched_size); /* this fiber ends */
#endif
	setcontext(&L->sched);
}

/* After every fiber of the block has yielded: a warp whose lanes all wait
 * at a warp-wide operation goes on; else the barrier opens when every
 * thread waits at the same one; else the block is done.  false: the
 * block stopped (L->failed says why). */
static bool settle(bool *done)
{
	int n = L->nthreads, waiting = -1, gone = -1, warp = -1;
	uint3 g = coords(L->block, gridDim);
	bool released = false;
	*done = false;
	for (int w0 = 0; w0 < n; w0 += 32) {
		int at = 0, left = -1;
		for (int i = w0; i < w0 + 32 && i < n; i++) {
			at += L->st[i] == AT_WARP;
			if (L->st[i] == DONE && left < 0)
				left = i;
		}
		if (at == 32) {
			for (int i = w0; i < w0 + 32; i++)
				L->st[i] = RUN;
			released = true;
		} else if (at && left >= 0) {
			uint3 b = coords(left, blockDim);
			snprintf(L->err, sizeof(L->err), "block (%u, %u, %u): thread (%u, %u, %u) left the "
				 "kernel without reaching a warp-wide operation the lanes of its warp wait at",
				 g.x, g.y, g.z, b.x, b.y, b.z);
			return false;
		}
	}
	if (released)
		return true;
	for (int i = 0; i < n; i++) {
		if (L->st[i] == AT_BARRIER && (waiting < 0 || L->line[i] != L->line[waiting])) {
			if (waiting >= 0) {
				uint3 a = coords(waiting, blockDim), b = coords(i, blockDim);
				snprintf(L->err, sizeof(L->err), "block (%u, %u, %u): thread (%u, %u, %u) waits "
					 "at the __syncthreads() of line %d, thread (%u, %u, %u) at the one of "
					 "line %d", g.x, g.y, g.z, a.x, a.y, a.z, L->line[waiting], b.x, b.y,
					 b.z, L->line[i]);
				return false;
			}
			waiting = i;
		}
		if (L->st[i] == DONE && gone < 0)
			gone = i;
		if (L->st[i] == AT_WARP && warp < 0)
			warp = i;
	}
	if (warp >= 0) {
		uint3 a = coords(warp, blockDim);
		snprintf(L->err, sizeof(L->err), "block (%u, %u, %u): thread (%u, %u, %u) waits at a "
			 "warp-wide operation that lanes of its warp never reach", g.x, g.y, g.z, a.x, a.y,
			 a.z);
		return false;
	}
	if (waiting >= 0 && gone >= 0) {
		uint3 a = coords(waiting, blockDim), b = coords(gone, blockDim);
		snprintf(L->err, sizeof(L->err), "block (%u, %u, %u): thread (%u, %u, %u) waits at the "
			 "__syncthreads() of line %d, which thread (%u, %u, %u) left the kernel without "
			 "reaching (a barrier under a divergent condition)", g.x, g.y, g.z, a.x, a.y, a.z,
			 L->line[waiting], b.x, b.y, b.z);
		return false;
	}
	if (waiting >= 0) { /* the barrier opens */
		L->interval++;
		for (int i = 0; i < n; i++)
			L->st[i] = RUN;
		return true;
	}
	*done = true;
	return true;
}

/* Runs one block; false when it failed. */
static bool run_block(unsigned shared)
{
	int n = L->nthreads;
	memset(ts_shared, 0xff, shared);
	blockIdx = coords(L->block, gridDim);
	L->interval = 0;
	for (int t = 0; t < n; t++) {
		L->st[t] = RUN;
		getcontext(&L->fiber[t]);
		L->fiber[t].uc_stack.ss_sp = stack_of(t);
		L->fiber[t].uc_stack.ss_size = STACK;
		L->fiber[t].uc_link = NULL;
		makecontext(&L->fiber[t], (void (*)(void))fiber_main, 1, t);
	}
	for (;;) {
		/* one pass in this interval's order; odd blocks start reversed,
		 * so a kernel without barriers meets both orders in two blocks */
		bool rev = (L->interval + L->block) & 1;
		for (int k = 0; k < n; k++) {
			int t = rev ? n - 1 - k : k;
			if (L->st[t] != RUN)
				continue;
			resume(t);
			if (L->failed)
				return false;
		}
		bool done;
		if (!settle(&done)) {
			L->failed = true;
			return false;
		}
		if (done)
			return true;
	}
}

/* Runs the grid; 0, or -1 with the reason in err. */
static int launch(void (*body)(void **), void **params, const unsigned grid[3],
		  const unsigned block[3], unsigned shared, char *err, size_t errsize)
{
	launch_state s = {};
	int n = (int)(block[0] * block[1] * block[2]);
	long nblocks = (long)grid[0] * grid[1] * grid[2];
	if (n <= 0 || nblocks <= 0)
		return 0;
	s.body = body;
	s.params = params;
	s.nthreads = n;
	blockDim = {block[0], block[1], block[2]};
	gridDim = {grid[0], grid[1], grid[2]};
	size_t bytes = (size_t)n * (STACK + PAGE);
	void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED) {
		snprintf(err, errsize, "cannot map the stacks of a block of %d threads", n);
		return -1;
	}
	s.stacks = (unsigned char *)m;
	for (int t = 0; t < n; t++) /* a guard page below each stack */
		mprotect(s.stacks + (size_t)t * (STACK + PAGE), PAGE, PROT_NONE);
	s.st = new int[n];
	s.line = new int[n];
	s.fiber = new ucontext_t[n];
	s.fake = new void *[n]();
	s.slot = new uint64_t[(n + 31) / 32][32][8];
	L = &s;
	for (s.block = 0; s.block < nblocks; s.block++)
		if (!run_block(shared))
			break;
	snprintf(err, errsize, "%s", s.err);
	delete[] s.slot;
	delete[] s.fake;
	delete[] s.fiber;
	delete[] s.line;
	delete[] s.st;
	munmap(m, bytes);
	L = NULL;
	return s.failed ? -1 : 0;
}

/* ---- PTX ------------------------------------------------------------------------ */

/* An asm operand: an output's address, or an input's value. */
struct opnd {
	void *p;
	uint64_t v;
};
template <typename T> static inline opnd out(T *p)
{
	return {(void *)p, 0};
}
template <typename T> static inline opnd in(T v)
{
	static_assert(sizeof(T) <= 8, "a register");
	opnd o = {NULL, 0};
	memcpy(&o.v, &v, sizeof(T));
	return o;
}

static float half_to_float(uint16_t h)
{
	int e = (h >> 10) & 0x1f, m = h & 0x3ff;
	float f = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 0x400), e - 25);
	return (h & 0x8000) ? -f : f;
}

/* cvt.rn.f16.f32: to nearest even, overflow to infinity, NaN kept quiet. */
static uint16_t float_to_half(float f)
{
	uint32_t u = ts_emu_bits<uint32_t>(f), sign = (u >> 16) & 0x8000;
	if ((u & 0x7fffffff) > 0x7f800000)
		return (uint16_t)(sign | 0x7e00);
	float a = fabsf(f);
	if (a >= 65520.0f)
		return (uint16_t)(sign | 0x7c00);
	if (a < 6.103515625e-05f) /* subnormal: units of 2^-24, rint rounds to even */
		return (uint16_t)(sign | (uint32_t)rintf(a * 16777216.0f));
	int e;
	float m = frexpf(a, &e); /* a = m * 2^e, m in [0.5, 1) */
	uint32_t q = (uint32_t)rintf(m * 2048.0f); /* 11 bits, 1024..2048 */
	int exp = e + 14;
	if (q == 2048) {
		q = 1024;
		exp++;
	}
	return exp >= 31 ? (uint16_t)(sign | 0x7c00) : (uint16_t)(sign | (uint32_t)exp << 10 | (q & 0x3ff));
}

static float bf16_to_float(uint16_t h)
{
	return ts_emu_bits<float>((uint32_t)h << 16);
}

static uint32_t lane(void)
{
	return (uint32_t)self & 31;
}

/* The 16-bit half of a 32-bit fragment register. */
static uint16_t half_of(uint64_t reg, int k)
{
	return (uint16_t)(reg >> (16 * k));
}

/* ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16: lanes 8j..8j+7 give
 * the row addresses of matrix j; lane l receives, of each matrix, the
 * elements (l/4, 2(l%4)) and (l/4, 2(l%4)+1), or transposed
 * (2(l%4), l/4) and (2(l%4)+1, l/4). */
static void ldmatrix(const opnd *o, const opnd *i, bool trans)
{
	uint32_t l = lane(), w = (uint32_t)self >> 5;
	L->slot[w][l][0] = i[0].v;
	sync_warp();
	for (uint32_t j = 0; j < 4; j++) {
		uint16_t h[2];
		for (uint32_t k = 0; k < 2; k++) {
			uint32_t row = trans ? 2 * (l % 4) + k : l / 4, col = trans ? l / 4 : 2 * (l % 4) + k;
			const uint16_t *p = (const uint16_t *)(uintptr_t)L->slot[w][8 * j + row][0];
			h[k] = p[col];
		}
		uint32_t r = (uint32_t)h[0] | (uint32_t)h[1] << 16;
		memcpy(o[j].p, &r, 4);
	}
	sync_warp();
}

/* mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16} and m16n8k8 .tf32:
 * D = A * B + C, with groupID g = lane/4 and t = lane%4:
 *   A (16 x K): register r holds rows g + 8(r%2), columns of its k block
 *     (k/8 for K=16 holding 2t, 2t+1; k/4 for TF32 holding t);
 *   B (K x 8): register r holds column g, rows of k block r;
 *   C, D: rows g, g+8 (registers 0-1, 2-3), columns 2t, 2t+1. */
static void mma(const opnd *o, const opnd *i, int kind)
{
	uint32_t l = lane(), w = (uint32_t)self >> 5, kdim = kind == 2 ? 8 : 16;
	for (int r = 0; r < 6; r++)
		L->slot[w][l][r] = i[r].v;
	sync_warp();
	auto value = [&](uint64_t reg, int k) -> float {
		if (kind == 2)
			return ts_emu_bits<float>((uint32_t)reg);
		return kind == 0 ? half_to_float(half_of(reg, k)) : bf16_to_float(half_of(reg, k));
	};
	auto a = [&](uint32_t row, uint32_t k) {
		uint32_t reg = row / 8 + 2 * (kind == 2 ? k / 4 : k / 8);
		uint32_t owner = (row % 8) * 4 + (kind == 2 ? k % 4 : (k % 8) / 2);
		return value(L->slot[w][owner][reg], kind == 2 ? 0 : (int)(k % 2));
	};
	auto b = [&](uint32_t k, uint32_t col) {
		uint32_t reg = kind == 2 ? k / 4 : k / 8;
		uint32_t owner = col * 4 + (kind == 2 ? k % 4 : (k % 8) / 2);
		return value(L->slot[w][owner][4 + reg], kind == 2 ? 0 : (int)(k % 2));
	};
	float d[4];
	for (uint32_t r = 0; r < 4; r++) {
		uint32_t row = l / 4 + 8 * (r / 2), col = 2 * (l % 4) + r % 2;
		float acc;
		memcpy(&acc, o[r].p, 4);
		for (uint32_t k = 0; k < kdim; k++)
			acc += a(row, k) * b(k, col);
		d[r] = acc;
	}
	sync_warp();
	for (int r = 0; r < 4; r++)
		memcpy(o[r].p, &d[r], 4);
}

static void ptx(const char *text, std::initializer_list<opnd> outs, std::initializer_list<opnd> ins)
{
	const opnd *o = outs.begin(), *i = ins.begin();
	if (strstr(text, "cvt.f32.f16")) {
		float f = half_to_float((uint16_t)i[0].v);
		memcpy(o[0].p, &f, 4);
	} else if (strstr(text, "cvt.rn.f16.f32")) {
		uint16_t h = float_to_half(ts_emu_bits<float>((uint32_t)i[0].v));
		memcpy(o[0].p, &h, 2);
	} else if (strstr(text, "%laneid")) {
		uint32_t l = lane();
		memcpy(o[0].p, &l, 4);
	} else if (strstr(text, "ldmatrix.sync.aligned.m8n8.x4")) {
		ldmatrix(o, i, strstr(text, ".trans") != NULL);
	} else if (strstr(text, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")) {
		mma(o, i, 0);
	} else if (strstr(text, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32")) {
		mma(o, i, 1);
	} else if (strstr(text, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32")) {
		mma(o, i, 2);
	} else {
		fail("PTX the emulator does not carry out: %.200s", text);
	}
}

} /* namespace ts_emu */

/* ---- entry points ---------------------------------------------------------------- */

template <typename... P, size_t... I>
static void ts_emu_call(void (*f)(P...), void **params, std::index_sequence<I...>)
{
	f(*static_cast<P *>(params[I])...);
}

/* What the stand-in driver calls for kernel `name` (appended after the
 * source by the stand-in NVRTC): params as cuLaunchKernel's kernelParams. */
#define TS_EMU_KERNEL(name)                                                                   \
	static void ts_emu_body_##name(void **params)                                          \
	{                                                                                      \
		ts_emu_call(name, params, std::make_index_sequence<ts_emu_arity(name)>{});     \
	}                                                                                      \
	extern "C" int ts_emu_launch_##name(const unsigned grid[3], const unsigned block[3],  \
					    unsigned shared, void **params, char *err,         \
					    size_t errsize)                                    \
	{                                                                                      \
		return ts_emu::launch(ts_emu_body_##name, params, grid, block, shared, err,    \
				      errsize);                                                \
	}

template <typename... P> constexpr size_t ts_emu_arity(void (*)(P...))
{
	return sizeof...(P);
}
