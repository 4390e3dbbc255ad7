/*
 * gemm_steps.h - the steps of TVM's "How to optimize GEMM on CPU" and
 * tessera's own, as schedule functions over one GEMM.  Shared by
 * tessera-tutorial and the golden test of each step's loop IR.
 */
#ifndef TESSERA_EXAMPLES_GEMM_STEPS_H
#define TESSERA_EXAMPLES_GEMM_STEPS_H

#include "tessera.h"
#include "op_schedules.h"
#include "schedule.h"

typedef struct gemm {
	ts_ctx *ctx;
	int64_t n;
	ts_tensor *A, *B, *C;
	ts_schedule *s;
	ts_stage *sc;
	bool parallel;
	/* the register blocking steps' parameters: ts_matmul_cpu_default(),
	 * or fixed ones where the output must not depend on the host */
	ts_matmul_cpu_params mp;
} gemm;

typedef struct gemm_step {
	const char *name;
	const char *why;
	const char *code;
	bool packed;
	void (*apply)(gemm *g);
} gemm_step;

extern const gemm_step gemm_steps[];
extern const int gemm_nsteps;

/* The register block the golden outputs use, whatever the host: 6x32
 * (what ts_matmul_cpu_default gives with AVX-512). */
ts_matmul_cpu_params gemm_golden_params(void);

/* A fresh context with C[n, n] = A x B (packed B when asked) and its
 * schedule; free with ts_ctx_free(g.ctx). */
gemm gemm_make(int64_t n, bool packed);

#endif
