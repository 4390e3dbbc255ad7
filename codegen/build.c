/*
 * build.c - ts_build: a lowered function compiled for a target, and the
 * module that calls it with checked arguments.
 *
 * A module holds a reference to the context it was built in (its function,
 * names and error slot live there), so the context may be freed before the
 * module: the memory goes with the last of them.  The CPU path compiles
 * with the LLVM backend; the CUDA path emits CUDA C, compiles it with NVRTC
 * and, when a GPU is present, loads it with the driver API.
 */
#include "build.h"

#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "build_cuda.h"
#include "c_emit.h"
#include "llvm.h"

struct ts_module {
	ts_ctx *ctx;
	const ts_func *func;
	const char *target;
	bool cuda;
	cg_llvm_module *llvm;   /* CPU */
	ts_cpu_entry entry;
	cg_cuda_module *gpu;    /* CUDA */
	ts_phase_times times;
};

static bool starts_with(const char *s, const char *word)
{
	size_t n = strlen(word);
	return strncmp(s, word, n) == 0 && (s[n] == '\0' || s[n] == ' ');
}

static ts_status build_cpu(ts_module *m)
{
	m->llvm = cg_llvm_compile(m->ctx, m->func, m->target);
	if (!m->llvm)
		return ts_last_status(m->ctx);
	m->entry = cg_llvm_entry(m->llvm);
	if (!m->entry)
		return ts_error(m->ctx, TS_ERR_UNSUPPORTED,
				"build %s: target '%s' is not the host, so the module cannot run here (its assembly and object file can still be written)",
				m->func->name, m->target);
	cg_llvm_times t = cg_llvm_get_times(m->llvm);
	m->times.llvm_build_ms = t.build_ms;
	m->times.optimize_ms = t.optimize_ms;
	m->times.codegen_ms = t.codegen_ms;
	return TS_OK;
}

ts_module *ts_build(ts_ctx *ctx, const ts_func *f, const char *target)
{
	if (!ctx)
		return NULL;
	if (!f) {
		ts_error(ctx, TS_ERR_INVALID, "build: function is NULL (did lowering fail?)");
		return NULL;
	}
	if (f->ctx && f->ctx != ctx) {
		ts_error(ctx, TS_ERR_INVALID, "build %s: the function belongs to another context",
			 f->name);
		return NULL;
	}
	if (!target)
		target = "llvm";
	if (!starts_with(target, "llvm") && !starts_with(target, "cuda")) {
		ts_error(ctx, TS_ERR_INVALID, "build %s: unknown target '%s' (expected 'llvm ...' or 'cuda ...')",
			 f->name, target);
		return NULL;
	}
	if (starts_with(target, "cuda") && f->nsizes > 0) {
		ts_error(ctx, TS_ERR_UNSUPPORTED,
			 "build %s: size variable %s: symbolic shapes build for CPU targets only "
			 "(ts_lower_specialize gives a CUDA build constant extents)",
			 f->name, f->size_vars[0]->u.var.name);
		return NULL;
	}
	ts_clear_error(ctx); /* as ts_lower: an earlier call's error is not this build's */
	ts_module *m = calloc(1, sizeof(*m));
	if (!m) {
		ts_error(ctx, TS_ERR_NOMEM, "build %s: out of memory", f->name);
		return NULL;
	}
	m->ctx = ts_ctx_retain(ctx);
	m->func = f;
	m->target = ts_strdup(ctx, target);
	m->cuda = starts_with(target, "cuda");
	uint64_t t0 = ts_now_ns();
	ts_status st = !m->target ? TS_ERR_NOMEM
		       : m->cuda ? cg_cuda_build(ctx, f, target, &m->gpu, &m->times)
				 : build_cpu(m);
	m->times.total_ms = ts_ms_since(t0);
	if (st != TS_OK) {
		ts_module_free(m);
		return NULL;
	}
	return m;
}

ts_status ts_module_run(ts_module *m, int nargs, ts_array *const *args)
{
	if (!m)
		return TS_ERR_INVALID;
	int64_t sizes[TS_MAX_SIZE_VARS];
	ts_status st = ts_check_args_sizes(m->ctx, m->func, nargs, args,
					   m->cuda ? TS_DEVICE_CUDA : TS_DEVICE_CPU, sizes);
	if (st != TS_OK)
		return st;
	if (m->cuda)
		return cg_cuda_run(m->ctx, m->gpu, nargs, args);
	void *data[65];
	if (nargs > 64)
		return ts_error(m->ctx, TS_ERR_INVALID, "call %s: more than 64 arguments", m->func->name);
	for (int i = 0; i < nargs; i++)
		data[i] = args[i]->data;
	data[nargs] = sizes; /* the sizes parameter, when the function has one */
	int32_t rc = m->entry(data);
	return rc == 0 ? TS_OK : ts_error(m->ctx, TS_ERR_RUNTIME, "call %s: returned %d", m->func->name, rc);
}

ts_status ts_module_launch(ts_module *m, int nargs, ts_array *const *args)
{
	if (!m)
		return TS_ERR_INVALID;
	if (!m->cuda)
		return ts_module_run(m, nargs, args);
	ts_status st = ts_check_args(m->ctx, m->func, nargs, args, TS_DEVICE_CUDA);
	return st == TS_OK ? cg_cuda_launch(m->ctx, m->gpu, nargs, args) : st;
}

typedef struct {
	ts_module *m;
	int nargs;
	ts_array *const *args;
} call_args;

static int call_once(void *p)
{
	call_args *c = p;
	return ts_module_run(c->m, c->nargs, c->args) == TS_OK ? 0 : 1;
}

ts_status ts_module_time(ts_module *m, int nargs, ts_array *const *args, int warmup,
			 int repeat, ts_timing *out)
{
	if (out)
		memset(out, 0, sizeof(*out)); /* as ts_time_run: zero on any error */
	if (!m)
		return TS_ERR_INVALID;
	if (!out)
		return ts_error(m->ctx, TS_ERR_INVALID, "time %s: out is NULL", m->func->name);
	if (warmup < 0 || repeat < 1 || warmup > TS_TIME_MAX_REPEATS || repeat > TS_TIME_MAX_REPEATS)
		return ts_error(m->ctx, TS_ERR_INVALID,
				"time %s: needs warmup 0..%d and repeat 1..%d (got %d, %d)", m->func->name,
				TS_TIME_MAX_REPEATS, TS_TIME_MAX_REPEATS, warmup, repeat);
	ts_status st = ts_check_args(m->ctx, m->func, nargs, args,
				     m->cuda ? TS_DEVICE_CUDA : TS_DEVICE_CPU);
	if (st != TS_OK)
		return st;
	if (m->cuda)
		return cg_cuda_time(m->ctx, m->gpu, nargs, args, warmup, repeat, out);
	call_args c = {m, nargs, args};
	return ts_time_run(m->ctx, call_once, &c, warmup, repeat, 1, out);
}

const char *ts_module_source(ts_module *m, const char *kind)
{
	if (!m)
		return NULL;
	if (!kind) {
		ts_error(m->ctx, TS_ERR_INVALID, "module %s: source kind is NULL", m->func->name);
		return NULL;
	}
	if (strcmp(kind, "c") == 0)
		return cg_emit_c(m->ctx, m->func);
	if (strcmp(kind, "cuda") == 0)
		return m->gpu ? cg_cuda_source(m->gpu) : cg_emit_cuda(m->ctx, m->func, NULL);
	if (m->llvm && strcmp(kind, "llvm") == 0)
		return cg_llvm_ir_text(m->ctx, m->llvm, false);
	if (m->llvm && strcmp(kind, "llvm-opt") == 0)
		return cg_llvm_ir_text(m->ctx, m->llvm, true);
	if (m->llvm && strcmp(kind, "asm") == 0)
		return cg_llvm_asm_text(m->ctx, m->llvm);
	ts_error(m->ctx, TS_ERR_INVALID,
		 "module %s: no '%s' source for target '%s' (have: c, cuda%s)", m->func->name, kind,
		 m->target, m->llvm ? ", llvm, llvm-opt, asm" : "");
	return NULL;
}

ts_status ts_module_export(ts_module *m, const char *obj_path, const char *header_path)
{
	if (!m)
		return TS_ERR_INVALID;
	if (!obj_path)
		return ts_error(m->ctx, TS_ERR_INVALID, "export %s: the object path is NULL",
				m->func->name);
	if (!m->llvm)
		return ts_error(m->ctx, TS_ERR_UNSUPPORTED,
				"export %s: only CPU modules are written as object files (target '%s')",
				m->func->name, m->target);
	return cg_llvm_write_object(m->ctx, m->llvm, obj_path, header_path);
}

ts_phase_times ts_module_times(const ts_module *m)
{
	return m ? m->times : (ts_phase_times){0};
}

const char *ts_module_target(const ts_module *m)
{
	if (m && m->llvm)
		return cg_llvm_target_str(m->llvm);
	return m ? m->target : NULL;
}

const ts_func *ts_module_func(const ts_module *m)
{
	return m ? m->func : NULL;
}

void ts_module_free(ts_module *m)
{
	if (!m)
		return;
	cg_llvm_free(m->llvm);
	cg_cuda_free(m->gpu);
	ts_ctx_free(m->ctx);
	free(m);
}
