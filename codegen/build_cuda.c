/*
 * build_cuda.c - see build_cuda.h.
 *
 * The architecture comes from the target string when it names one, else
 * from the device; with neither, building fails with a message that says
 * how to compile without a GPU.  Functions that would not run as one
 * kernel the way the reference evaluator computes them are refused first
 * (cuda_check.h).  Barriers are inserted before emission so shared-memory
 * tiles are never read while other threads still write them, and each must
 * be reached by every thread of the block.
 */
#include "build_cuda.h"

#include <stdlib.h>
#include <string.h>

#include "c_emit.h"
#include "cuda_check.h"
#include "cuda_driver.h"
#include "ident.h"
#include "nvrtc.h"

struct cg_cuda_module {
	ts_cuda *cuda; /* NULL when compiled without a device */
	ts_cuda_module *mod;
	ts_cuda_kernel kernel;
	cg_launch launch;
	const char *source;
	char arch[CG_ARCH_MAX];
	const char *name;
};

static ts_status pick_arch(ts_ctx *ctx, const char *target, cg_cuda_module *m)
{
	ts_status st = cg_cuda_parse_target(ctx, target, m->arch);
	if (st != TS_OK)
		return st;
	m->cuda = ts_cuda_open(ctx);
	if (m->cuda) {
		if (!m->arch[0])
			snprintf(m->arch, sizeof(m->arch), "%s", ts_cuda_arch(m->cuda));
		return TS_OK;
	}
	if (m->arch[0]) { /* compile only: forget why there is no device */
		ts_clear_error(ctx);
		return TS_OK;
	}
	char why[512];
	snprintf(why, sizeof(why), "%s", ts_last_error(ctx));
	ts_clear_error(ctx);
	return ts_error(ctx, TS_ERR_NO_DEVICE,
			"build: target '%s' takes the architecture from the GPU, and there is none (%s); "
			"give one, e.g. 'cuda -arch=sm_90', to compile without a GPU",
			target, why);
}

const char *cg_cuda_kernel_source(ts_ctx *ctx, const ts_func *f, ts_launch *launch)
{
	if (!f || cg_cuda_check(ctx, f) != TS_OK)
		return NULL;
	ts_func synced = *f;
	synced.body = cg_cuda_insert_sync(ctx, f->body);
	if (!synced.body || cg_cuda_check_barriers(ctx, &synced) != TS_OK)
		return NULL;
	return cg_emit_cuda(ctx, &synced, launch);
}

static ts_status compile(ts_ctx *ctx, const ts_func *f, cg_cuda_module *m, ts_phase_times *times)
{
	uint64_t t0 = ts_now_ns();
	m->source = cg_cuda_kernel_source(ctx, f, &m->launch);
	times->llvm_build_ms = ts_ms_since(t0); /* source emission */
	if (!m->source)
		return ts_last_status(ctx);
	cg_nvrtc_result r = {0};
	ts_status st = cg_nvrtc_compile(ctx, m->source, f->name, m->arch, &r);
	times->nvrtc_ms = r.compile_ms;
	if (st == TS_OK && m->cuda) {
		m->mod = ts_cuda_module_load(ctx, m->cuda, r.image, r.size);
		st = m->mod ? ts_cuda_module_kernel(ctx, m->mod, cg_c_ident(ctx, f->name), &m->kernel)
			    : ts_last_status(ctx);
	}
	cg_nvrtc_result_free(&r);
	return st;
}

ts_status cg_cuda_build(ts_ctx *ctx, const ts_func *f, const char *target, cg_cuda_module **out,
			ts_phase_times *times)
{
	cg_cuda_module *m = calloc(1, sizeof(*m));
	*out = m;
	if (!m)
		return ts_error(ctx, TS_ERR_NOMEM, "build %s: out of memory", f->name);
	m->name = f->name;
	ts_status st = pick_arch(ctx, target, m);
	return st == TS_OK ? compile(ctx, f, m, times) : st;
}

static ts_status runnable(ts_ctx *ctx, const cg_cuda_module *m)
{
	if (!m->mod)
		return ts_error(ctx, TS_ERR_NO_DEVICE,
				"call %s: compiled for %s without a GPU; it can be inspected but not run here",
				m->name, m->arch);
	return TS_OK;
}

ts_status cg_cuda_run(ts_ctx *ctx, cg_cuda_module *m, int nargs, ts_array *const *args)
{
	ts_status st = runnable(ctx, m);
	if (st == TS_OK)
		st = ts_cuda_launch(ctx, &m->kernel, &m->launch, nargs, args);
	return st == TS_OK ? ts_cuda_synchronize(ctx, m->cuda) : st;
}

ts_status cg_cuda_launch(ts_ctx *ctx, cg_cuda_module *m, int nargs, ts_array *const *args)
{
	ts_status st = runnable(ctx, m);
	return st == TS_OK ? ts_cuda_launch(ctx, &m->kernel, &m->launch, nargs, args) : st;
}

ts_status cg_cuda_time(ts_ctx *ctx, cg_cuda_module *m, int nargs, ts_array *const *args,
		       int warmup, int repeat, ts_timing *out)
{
	ts_status st = runnable(ctx, m);
	ts_cuda_time_opts o = {.warmup = warmup, .repeats = repeat, .what = m->name};
	return st == TS_OK ? ts_cuda_time_kernel(ctx, &m->kernel, &m->launch, nargs, args, &o, out)
			   : st;
}

const char *cg_cuda_source(const cg_cuda_module *m)
{
	return m ? m->source : NULL;
}

const char *cg_cuda_arch_of(const cg_cuda_module *m)
{
	return m ? m->arch : NULL;
}

void cg_cuda_free(cg_cuda_module *m)
{
	if (!m)
		return;
	ts_cuda_module_unload(m->mod);
	ts_cuda_close(m->cuda);
	free(m);
}
