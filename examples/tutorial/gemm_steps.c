/*
 * gemm_steps.c - the GEMM tutorial's schedules (see gemm_steps.h).
 */
#include "gemm_steps.h"

#include "op_schedules.h"

#define AXIS(g, i) ts_axis_of((g)->sc, (i))
#define RAXIS(g, i) ts_reduce_axis_of((g)->sc, (i))

static void baseline(gemm *g) { (void)g; }

static void blocking(gemm *g)
{
	ts_axis *mo, *no, *mi, *ni, *ko, *ki;
	ts_tile(g->sc, AXIS(g, 0), AXIS(g, 1), 32, 32, &mo, &no, &mi, &ni);
	ts_split(g->sc, RAXIS(g, 0), 4, &ko, &ki);
	ts_reorder(g->sc, TS_AXES(mo, no, ko, ki, mi, ni));
}

static void vectorize(gemm *g)
{
	ts_axis *mo, *no, *mi, *ni, *ko, *ki;
	ts_tile(g->sc, AXIS(g, 0), AXIS(g, 1), 32, 32, &mo, &no, &mi, &ni);
	ts_split(g->sc, RAXIS(g, 0), 4, &ko, &ki);
	ts_reorder(g->sc, TS_AXES(mo, no, ko, ki, mi, ni));
	ts_vectorize(g->sc, ni);
}

static void permute(gemm *g)
{
	ts_axis *mo, *no, *mi, *ni, *ko, *ki;
	ts_tile(g->sc, AXIS(g, 0), AXIS(g, 1), 32, 32, &mo, &no, &mi, &ni);
	ts_split(g->sc, RAXIS(g, 0), 4, &ko, &ki);
	ts_reorder(g->sc, TS_AXES(mo, no, ko, mi, ki, ni));
	ts_vectorize(g->sc, ni);
}

static void pack_stage(gemm *g)
{
	ts_stage *sp = ts_stage_of(g->s, g->C->inputs[1]);
	ts_vectorize(sp, ts_axis_of(sp, 2));
	if (g->parallel)
		ts_parallel(sp, ts_axis_of(sp, 0));
}

static void packing(gemm *g)
{
	permute(g);
	pack_stage(g);
}

static void write_cache(gemm *g)
{
	ts_tensor *CC = ts_cache_write(g->s, g->C, TS_SCOPE_LOCAL);
	ts_axis *mo, *no, *mi, *ni, *ko, *ki;
	ts_tile(g->sc, AXIS(g, 0), AXIS(g, 1), 32, 32, &mo, &no, &mi, &ni);
	ts_stage *cc = ts_stage_of(g->s, CC);
	ts_compute_at(cc, g->sc, no);
	ts_axis *mc = ts_axis_of(cc, 0), *nc = ts_axis_of(cc, 1);
	ts_split(cc, ts_reduce_axis_of(cc, 0), 4, &ko, &ki);
	ts_reorder(cc, TS_AXES(ko, mc, ki, nc));
	ts_unroll(cc, ki);
	ts_vectorize(cc, nc);
	ts_vectorize(g->sc, ni);
	if (g->parallel)
		ts_parallel(g->sc, mo);
	pack_stage(g);
}

static void parallel(gemm *g)
{
	g->parallel = true;
	write_cache(g);
}

static void register_block(gemm *g)
{
	ts_matmul_cpu_params p = g->mp;
	p.parallel = g->parallel;
	ts_schedule_matmul_cpu(g->s, g->C, &p);
}

static void register_block_parallel(gemm *g)
{
	g->parallel = true;
	register_block(g);
}

/* Each step's code as the tutorial shows it: C statements that compile
 * with ctx, A, B, C, s (the schedule), sc (C's stage) and sp (Bp's stage)
 * in scope (test_docs_snippets compiles them from docs/TUTORIAL.md). */
const gemm_step gemm_steps[] = {
	{"baseline", "The default schedule: the loop nest of the compute, i, j, then k.",
	 "/* no schedule calls */", false, baseline},
	{"blocking", "Tiles C into 32x32 blocks and splits k, so a block of C and of B stays in cache.",
	 "ts_axis *mo, *no, *mi, *ni, *ko, *ki;\n"
	 "ts_tile(sc, ts_axis_of(sc, 0), ts_axis_of(sc, 1), 32, 32, &mo, &no, &mi, &ni);\n"
	 "ts_split(sc, ts_reduce_axis_of(sc, 0), 4, &ko, &ki);\n"
	 "ts_reorder(sc, TS_AXES(mo, no, ko, ki, mi, ni));",
	 false, blocking},
	{"vectorize", "Vectorizes the innermost loop over 32 columns of C.",
	 "/* the blocking calls, then */\nts_vectorize(sc, ni);", false, vectorize},
	{"loop permutation", "Moves ki inside mi so the innermost loops walk rows of B and C contiguously.",
	 "/* the blocking calls, with ki inside mi */\n"
	 "ts_reorder(sc, TS_AXES(mo, no, ko, mi, ki, ni));\nts_vectorize(sc, ni);",
	 false, permute},
	{"array packing", "Packs B into panels of 32 columns (Bp[n/32, k, n%32]) so the inner loop reads it sequentially.",
	 "C = ts_op_matmul_packed(ctx, A, B, 32);  /* before ts_create_schedule */\n"
	 "/* the loop permutation calls, then */\n"
	 "ts_stage *sp = ts_stage_of(s, C->inputs[1]);  /* Bp */\n"
	 "ts_vectorize(sp, ts_axis_of(sp, 2));",
	 true, packing},
	{"write cache", "Accumulates a 32x32 block in a local buffer computed at C's tile, then copies it out.",
	 "ts_tensor *CC = ts_cache_write(s, C, TS_SCOPE_LOCAL);\n"
	 "ts_stage *cc = ts_stage_of(s, CC);\n"
	 "ts_tile(sc, ts_axis_of(sc, 0), ts_axis_of(sc, 1), 32, 32, &mo, &no, &mi, &ni);\n"
	 "ts_compute_at(cc, sc, no);\n"
	 "ts_axis *mc = ts_axis_of(cc, 0), *nc = ts_axis_of(cc, 1);\n"
	 "ts_split(cc, ts_reduce_axis_of(cc, 0), 4, &ko, &ki);\n"
	 "ts_reorder(cc, TS_AXES(ko, mc, ki, nc));\n"
	 "ts_unroll(cc, ki); ts_vectorize(cc, nc); ts_vectorize(sc, ni);\n"
	 "/* and Bp vectorized as in array packing */",
	 true, write_cache},
	{"parallel", "Runs the outer row blocks on all cores.",
	 "/* the write cache calls, then */\n"
	 "ts_parallel(sc, mo); ts_parallel(sp, ts_axis_of(sp, 0));",
	 true, parallel},
	{"register blocking (tessera)",
	 "A 6x32 (AVX-512) block of C held in registers over the whole k, panels of B outside, "
	 "rows inside, each panel packed just before its rows, so it stays in L2: ts_schedule_matmul_cpu.",
	 "ts_matmul_cpu_params p = ts_matmul_cpu_default();\np.parallel = false;\n"
	 "ts_schedule_matmul_cpu(s, C, &p);",
	 true, register_block},
	{"register blocking, parallel (tessera)", "The same, the panels on all cores.",
	 "ts_matmul_cpu_params p = ts_matmul_cpu_default();\nts_schedule_matmul_cpu(s, C, &p);", true,
	 register_block_parallel},
};

const int gemm_nsteps = (int)TS_COUNT_OF(gemm_steps);

gemm gemm_make(int64_t n, bool packed)
{
	gemm g = {.ctx = ts_ctx_new(), .n = n, .mp = ts_matmul_cpu_default()};
	ts_ctx *ctx = g.ctx;
	g.A = ts_placeholder(ctx, "A", TS_SHAPE(n, n), ts_float32);
	g.B = ts_placeholder(ctx, "B", TS_SHAPE(n, n), ts_float32);
	g.C = packed ? ts_op_matmul_packed(ctx, g.A, g.B, 32) : ts_op_matmul(ctx, g.A, g.B, false, false);
	g.s = ts_create_schedule(ctx, 1, &g.C);
	g.sc = ts_stage_of(g.s, g.C);
	return g;
}


ts_matmul_cpu_params gemm_golden_params(void)
{
	return (ts_matmul_cpu_params){.mr = 6, .nr = 32, .kunroll = 4, .parallel = true};
}
