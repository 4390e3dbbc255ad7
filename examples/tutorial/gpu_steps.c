/*
 * gpu_steps.c - tessera-tutorial gpu: C = A x B scheduled for CUDA, from
 * one thread per element to ts_schedule_matmul_cuda and its double buffer.
 *
 * Each step prints its schedule calls, the loop IR, the head of the CUDA C
 * that tessera generates for it and its launch (grid, block, shared
 * memory).  Where each step can run depends on the machine:
 *   - always: the function runs on the CPU in the loop-IR interpreter
 *     (codegen/interp.h, one thread at a time) and is checked against
 *     ts_eval, for sizes up to INTERP_MAX (the interpreter is slow);
 *   - with libnvrtc and no GPU: ts_build compiles the CUDA C to a CUBIN
 *     for COMPILE_ARCH, so the generated code is known to compile;
 *   - with a GPU: the step runs on it, is checked against ts_eval and
 *     timed with CUDA events.
 * What was found is printed outside --golden only (to stdout) so that the
 * golden output is the same on every machine; with --golden a failed NVRTC
 * compile is still an error, reported on stderr.
 */
#include <stdio.h>
#include <string.h>

#include "tutorial.h"

#define INTERP_MAX 128
#define COMPILE_ARCH "sm_80"

typedef struct gpu_env {
	ts_ctx *ctx;
	ts_cuda *cuda;     /* NULL: no GPU */
	bool nvrtc;
	ts_array *host[3]; /* A, B and C = ts_eval's result */
	ts_array *out;     /* the step's C, copied back */
} gpu_env;

static bool make(tut_graph *g)
{
	int64_t n = g->n;
	ts_tensor *A = ts_placeholder(g->ctx, "A", TS_SHAPE(n, n), ts_float32);
	ts_tensor *B = ts_placeholder(g->ctx, "B", TS_SHAPE(n, n), ts_float32);
	ts_tensor *C = ts_op_matmul(g->ctx, A, B, false, false);
	if (!C)
		return false;
	g->nargs = 3;
	g->args[0] = A;
	g->args[1] = B;
	g->args[2] = C;
	g->s = ts_create_schedule(g->ctx, 1, &C);
	return g->s != NULL;
}

/* C's 16 x 16 tiles to thread blocks, an element to each thread. */
static ts_status bind_tiles(ts_stage *sc, ts_axis **tx)
{
	ts_axis *by, *bx, *ty;
	TS_TRY(ts_tile(sc, ts_axis_of(sc, 0), ts_axis_of(sc, 1), 16, 16, &by, &bx, &ty, tx));
	TS_TRY(ts_bind(sc, by, TS_BLOCK_Y));
	TS_TRY(ts_bind(sc, bx, TS_BLOCK_X));
	TS_TRY(ts_bind(sc, ty, TS_THREAD_Y));
	return ts_bind(sc, *tx, TS_THREAD_X);
}

static ts_status per_element(tut_graph *g)
{
	ts_axis *tx;
	return bind_tiles(ts_stage_of(g->s, g->args[2]), &tx);
}

static ts_status shared_tiles(tut_graph *g)
{
	ts_tensor *C = g->args[2];
	ts_tensor *AS = ts_cache_read(g->s, g->args[0], TS_SCOPE_SHARED, 1, &C);
	ts_tensor *BS = AS ? ts_cache_read(g->s, g->args[1], TS_SCOPE_SHARED, 1, &C) : NULL;
	if (!BS)
		return ts_last_status(g->ctx);
	ts_stage *sc = ts_stage_of(g->s, C);
	ts_axis *tx, *ko, *ki;
	TS_TRY(bind_tiles(sc, &tx));
	TS_TRY(ts_split(sc, ts_reduce_axis_of(sc, 0), 16, &ko, &ki));
	ts_tensor *shared[2] = {AS, BS};
	for (int i = 0; i < 2; i++) {
		ts_stage *ss = ts_stage_of(g->s, shared[i]);
		TS_TRY(ts_compute_at(ss, sc, ko));
		TS_TRY(ts_bind(ss, ts_axis_of(ss, 0), TS_THREAD_Y));
		TS_TRY(ts_bind(ss, ts_axis_of(ss, 1), TS_THREAD_X));
	}
	return TS_OK;
}

static ts_status registers(tut_graph *g)
{
	ts_matmul_cuda_params p = ts_matmul_cuda_default();
	p.double_buffer = 0;
	return ts_schedule_matmul_cuda(g->s, g->args[2], &p);
}

static ts_status library(tut_graph *g)
{
	return ts_schedule_matmul_cuda(g->s, g->args[2], NULL);
}

/* Each step's code: C statements that compile with ctx, A, B, C, s and sc
 * (C's stage) in scope (docs/TUTORIAL_GPU.md). */
static const tut_step steps[] = {
	{"one thread per element",
	 "Runs on the GPU: a 16x16 block of threads per 16x16 tile of C, each thread one element, "
	 "its row of A and column of B read from global memory (each read by 16 threads of the block).",
	 "ts_axis *by, *bx, *ty, *tx;\n"
	 "ts_tile(sc, ts_axis_of(sc, 0), ts_axis_of(sc, 1), 16, 16, &by, &bx, &ty, &tx);\n"
	 "ts_bind(sc, by, TS_BLOCK_Y);\nts_bind(sc, bx, TS_BLOCK_X);\n"
	 "ts_bind(sc, ty, TS_THREAD_Y);\nts_bind(sc, tx, TS_THREAD_X);",
	 per_element},
	{"shared-memory tiles",
	 "Each block stages 16x16 tiles of A and B in shared memory, one element loaded by each "
	 "thread, then all threads read them 16 times: global reads drop 16-fold.",
	 "ts_tensor *AS = ts_cache_read(s, A, TS_SCOPE_SHARED, 1, &C);\n"
	 "ts_tensor *BS = ts_cache_read(s, B, TS_SCOPE_SHARED, 1, &C);\n"
	 "/* the calls of step 0, then */\n"
	 "ts_axis *ko, *ki;\n"
	 "ts_split(sc, ts_reduce_axis_of(sc, 0), 16, &ko, &ki);\n"
	 "ts_stage *sa = ts_stage_of(s, AS), *sb = ts_stage_of(s, BS);\n"
	 "ts_compute_at(sa, sc, ko);\nts_compute_at(sb, sc, ko);\n"
	 "ts_bind(sa, ts_axis_of(sa, 0), TS_THREAD_Y); ts_bind(sa, ts_axis_of(sa, 1), TS_THREAD_X);\n"
	 "ts_bind(sb, ts_axis_of(sb, 0), TS_THREAD_Y); ts_bind(sb, ts_axis_of(sb, 1), TS_THREAD_X);",
	 shared_tiles},
	{"register blocking (ts_schedule_matmul_cuda)",
	 "The library schedule: 64x64 tiles per block, a 4x4 block of C per thread held in "
	 "registers, 8-deep shared tiles loaded with float4 by all threads; A's tile rows "
	 "padded to 12 floats (storage_align), so the two rows a warp reads fall in different "
	 "banks.  Its double buffer is off here, for the next step.",
	 "ts_matmul_cuda_params p = ts_matmul_cuda_default();\n"
	 "p.double_buffer = 0;\n"
	 "ts_schedule_matmul_cuda(s, C, &p);", registers},
	{"double buffering (the library default)",
	 "ts_double_buffer on both shared tiles: two copies of each, the k loop unrolled by two, "
	 "the next step's tiles fetched into one copy while the other is read; one barrier per "
	 "step instead of two, and from sm_80 on the fetches are cp.async copies that run during "
	 "the multiply-adds.",
	 "ts_schedule_matmul_cuda(s, C, NULL);\n"
	 "/* which, with the calls of the last step, makes for A's and B's\n"
	 " * shared tiles (AS, BS):\n"
	 " *   ts_double_buffer(ts_stage_of(s, AS));\n"
	 " *   ts_double_buffer(ts_stage_of(s, BS)); */", library},
};

static const int nsteps = (int)TS_COUNT_OF(steps);

/* "grid (x, y, z) x block (x, y, z), N bytes of shared memory" */
static void print_launch(const ts_launch *l)
{
	printf("launch: grid (%lld, %lld, %lld) x block (%lld, %lld, %lld) = %lld threads per block, "
	       "%lld bytes of shared memory per block\n",
	       (long long)l->grid[0], (long long)l->grid[1], (long long)l->grid[2],
	       (long long)l->block[0], (long long)l->block[1], (long long)l->block[2],
	       (long long)(l->block[0] * l->block[1] * l->block[2]), (long long)l->static_shared_bytes);
}

/* The step on the CPU in the interpreter, against ts_eval's C. */
static int check_interp(gpu_env *e, tut_graph *g, const ts_func *f)
{
	if (g->n > INTERP_MAX) {
		printf("not run on the CPU: the interpreter takes too long beyond --size %d\n",
		       INTERP_MAX);
		return 0;
	}
	void *data[3] = {e->host[0]->data, e->host[1]->data, e->out->data};
	ts_array_fill_random(e->out, 99, 1e6, 2e6);
	if (cg_interp_run(g->ctx, f, data) != TS_OK)
		return fprintf(stderr, "interpreter: %s\n", ts_last_error(g->ctx)), 1;
	double err = tut_max_rel_err(e->out->data, e->host[2]->data, g->n * g->n);
	if (err > 1e-4)
		return fprintf(stderr, "the interpreter's C differs from ts_eval (%g)\n", err), 1;
	printf("ran on the CPU in the loop-IR interpreter, one thread at a time: matches ts_eval\n");
	return 0;
}

/* The CUDA C as ts_build makes it: barriers inserted where threads of a
 * block share a buffer (cg_cuda_insert_sync), then emitted. */
static const char *cuda_source(tut_graph *g, const ts_func *f, ts_launch *launch)
{
	ts_func synced = *f;
	synced.body = cg_cuda_insert_sync(g->ctx, f->body);
	return synced.body ? cg_emit_cuda(g->ctx, &synced, launch) : NULL;
}

/* Without a GPU, where libnvrtc is installed: ts_build compiles the step
 * to a CUBIN for COMPILE_ARCH, from the same CUDA C as printed. */
static int check_nvrtc(gpu_env *e, const tut_opts *o, tut_graph *g, const ts_func *f,
		       const char *src)
{
	if (!e->nvrtc || e->cuda)
		return 0;
	ts_module *m = ts_build(g->ctx, f, "cuda -arch=" COMPILE_ARCH);
	const char *built = m ? ts_module_source(m, "cuda") : NULL;
	int rc = 0;
	if (!built)
		rc = (fprintf(stderr, "NVRTC: %s\n", ts_last_error(g->ctx)), 1);
	else if (strcmp(built, src) != 0)
		rc = (fprintf(stderr, "NVRTC: ts_build compiled other CUDA C than the printed\n"), 1);
	else if (!o->golden)
		printf("NVRTC: compiled to a CUBIN for %s in %.0f ms\n", COMPILE_ARCH,
		       ts_module_times(m).nvrtc_ms);
	ts_module_free(m);
	return rc;
}

static int dev_fail(tut_graph *g, const char *what)
{
	return fprintf(stderr, "GPU: %s: %s\n", what, ts_last_error(g->ctx)), 1;
}

/* Runs the module on the device arrays, checks C against ts_eval, times. */
static int run_on_gpu(gpu_env *e, const tut_opts *o, tut_report *rep, tut_graph *g,
		      ts_module *m, ts_array **dev, const char *name)
{
	if (ts_module_run(m, 3, dev) != TS_OK || ts_cuda_synchronize(g->ctx, e->cuda) != TS_OK ||
	    ts_cuda_copy_to_host(g->ctx, e->out, dev[2]) != TS_OK)
		return dev_fail(g, "run");
	double err = tut_max_rel_err(e->out->data, e->host[2]->data, g->n * g->n);
	if (err > 1e-4)
		return fprintf(stderr, "GPU: C differs from ts_eval (%g)\n", err), 1;
	ts_timing t;
	if (ts_module_time(m, 3, dev, 3, 20, &t) != TS_OK)
		return dev_fail(g, "timing");
	if (!o->golden) {
		printf("ran on the GPU: matches ts_eval\n");
		tut_report_step(rep, name, t.median, 2.0 * g->n * g->n * g->n, 1);
		printf("  (GPU)\n");
	}
	return 0;
}

static int gpu_step(gpu_env *e, const tut_opts *o, tut_report *rep, tut_graph *g, const ts_func *f,
		    const char *name)
{
	ts_module *m = ts_build(g->ctx, f, "cuda");
	if (!m)
		return dev_fail(g, "build");
	ts_array *dev[3] = {0};
	int rc = 0;
	for (int i = 0; i < 3 && rc == 0; i++) {
		const ts_array *h = i < 2 ? e->host[i] : e->out;
		dev[i] = ts_cuda_array_new(g->ctx, e->cuda, h->dtype, h->ndim, h->shape);
		if (!dev[i] || ts_cuda_copy_to_device(g->ctx, dev[i], h) != TS_OK)
			rc = dev_fail(g, "device arrays");
	}
	if (rc == 0)
		rc = run_on_gpu(e, o, rep, g, m, dev, name);
	for (int i = 0; i < 3; i++)
		ts_cuda_array_free(dev[i]);
	ts_module_free(m);
	return rc;
}

static int run_step(gpu_env *e, const tut_opts *o, tut_report *rep, int i)
{
	const tut_step *st = &steps[i];
	tut_graph g = {.ctx = ts_ctx_new(), .n = o->size, .lines = o->lines};
	tut_print_step(i, st->name, st->why, st->code);
	ts_launch launch;
	ts_func *f = NULL;
	const char *src = NULL;
	if (g.ctx && make(&g) && st->apply(&g) == TS_OK &&
	    (f = ts_lower(g.s, "gemm", g.nargs, g.args)))
		src = cuda_source(&g, f, &launch);
	if (!src) {
		fprintf(stderr, "step %s: %s\n", st->name, ts_last_error(g.ctx));
		ts_ctx_free(g.ctx);
		return 1;
	}
	tut_print_ir(f, o->lines);
	/* from the kernel on: the helpers above it (cp.async's) are the same
	 * in every kernel that uses them */
	const char *kernel = strstr(src, "extern \"C\"");
	printf("\nCUDA C%s:\n```cuda\n", kernel ? ", from the kernel" : "");
	tut_print_head(kernel ? kernel : src, o->lines);
	printf("```\n");
	print_launch(&launch);
	int rc = check_interp(e, &g, f);
	if (rc == 0)
		rc = check_nvrtc(e, o, &g, f, src);
	if (rc == 0 && e->cuda)
		rc = gpu_step(e, o, rep, &g, f, st->name);
	ts_ctx_free(g.ctx);
	return rc;
}

/* A and B random, C = ts_eval(A x B): the reference of every step. */
static bool make_reference(gpu_env *e, int64_t n)
{
	tut_graph g = {.ctx = e->ctx, .n = n};
	if (!make(&g))
		return false;
	for (int i = 0; i < 3; i++)
		if (!(e->host[i] = ts_array_for(e->ctx, g.args[i])))
			return false;
	if (!(e->out = ts_array_for(e->ctx, g.args[2])))
		return false;
	ts_array_fill_random(e->host[0], 1, -1, 1);
	ts_array_fill_random(e->host[1], 2, -1, 1);
	void *data[3] = {e->host[0]->data, e->host[1]->data, e->host[2]->data};
	return ts_eval(e->ctx, 3, g.args, data) == TS_OK;
}

/* What this machine can do with CUDA, said once (outside --golden). */
static void open_devices(gpu_env *e, const tut_opts *o)
{
	int major = 0, minor = 0;
	e->nvrtc = cg_nvrtc_version(e->ctx, &major, &minor) == TS_OK;
	ts_clear_error(e->ctx);
	e->cuda = ts_cuda_open(e->ctx);
	const char *why = e->cuda ? "" : ts_last_error(e->ctx);
	if (!o->golden && e->cuda)
		printf("GPU: %s (%s): every step runs on it, is checked against ts_eval and timed\n",
		       ts_cuda_device_name(e->cuda), ts_cuda_arch(e->cuda));
	else if (!o->golden)
		printf("no GPU (%s): compile-only; nothing is timed\n", why);
	if (!o->golden && e->nvrtc)
		printf("NVRTC %d.%d: each step's CUDA C is compiled to a CUBIN for %s\n", major, minor,
		       e->cuda ? ts_cuda_arch(e->cuda) : COMPILE_ARCH);
	else if (!o->golden)
		printf("no NVRTC (libnvrtc not found): the CUDA C is printed, not compiled\n");
	ts_clear_error(e->ctx);
}

static int run(const tut_opts *o, tut_report *rep)
{
	gpu_env e = {.ctx = ts_ctx_new()};
	rep->unit = "GFLOP/s";
	int rc = 0;
	printf("tessera-tutorial gpu: C[%lld, %lld] = A x B, float32, scheduled for CUDA\n",
	       (long long)o->size, (long long)o->size);
	if (e.ctx)
		open_devices(&e, o);
	/* the reference only where something runs: ts_eval is slow at large N */
	bool runs = o->size <= INTERP_MAX || e.cuda;
	if (!e.ctx || (runs && !make_reference(&e, o->size))) {
		fprintf(stderr, "tessera-tutorial gpu: %s\n", ts_last_error(e.ctx));
		rc = 1;
	} else {
		for (int i = 0; i < nsteps; i++)
			if (o->only < 0 || o->only == i)
				rc |= run_step(&e, o, rep, i);
	}
	for (int i = 0; i < 3; i++)
		ts_array_free(e.host[i]);
	ts_array_free(e.out);
	ts_cuda_close(e.cuda);
	ts_ctx_free(e.ctx);
	return rc;
}

static const char *step_name(int i)
{
	return steps[i].name;
}

const tutorial tut_gpu = {
	.name = "gpu",
	.about = "C[N, N] = A x B scheduled for CUDA: one thread per element, shared-memory\n"
		 "  tiles, then ts_schedule_matmul_cuda.  Prints each step's CUDA C; runs and\n"
		 "  times it only on a GPU (else compile-only with NVRTC).  N defaults to 1024\n"
		 "  (the CPU check in the interpreter needs N <= 128).",
	.default_size = 1024,
	.max_size = 16384,
	.nsteps = &nsteps,
	.step_name = step_name,
	.run = run,
};
