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

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* Whether target s names `word` first, spaces and tabs around it, as the
 * LLVM and CUDA target parsers read it ("cuda\t-arch=sm_90" was refused
 * here while "cuda  -arch=sm_90" was taken). */
static bool starts_with(const char *s, const char *word)
{
	size_t n = strlen(word);
	s += strspn(s, " \t");
	return strncmp(s, word, n) == 0 && (s[n] == '\0' || s[n] == ' ' || s[n] == '\t');
}

/* The CPU module once its LLVM module is finished: the entry and times. */
static ts_status end_cpu(ts_module *m)
{
	ts_status st = cg_llvm_report(m->ctx, m->llvm);
	if (st)
		return st;
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

/* ts_build's checks and the module around the code: NULL with an error. */
static ts_module *start(ts_ctx *ctx, const ts_func *f, const char *target)
{
	if (!f) {
		ts_error(ctx, TS_ERR_INVALID, "build: function is NULL (did lowering fail?)");
		return NULL;
	}
	if (f->ctx && f->ctx != ctx) {
		ts_error(ctx, TS_ERR_INVALID, "build %s: the function belongs to another context",
			 f->name);
		return NULL;
	}
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
	ts_module *m = calloc(1, sizeof(*m));
	if (!m) {
		ts_error(ctx, TS_ERR_NOMEM, "build %s: out of memory", f->name);
		return NULL;
	}
	m->ctx = ts_ctx_retain(ctx);
	m->func = f;
	m->target = ts_strdup(ctx, target);
	m->cuda = starts_with(target, "cuda");
	if (!m->target) {
		ts_error(ctx, TS_ERR_NOMEM, "build %s: out of memory", f->name);
		ts_module_free(m);
		return NULL;
	}
	return m;
}

/* The first step of a build: all of a CUDA one; a CPU one's LLVM IR. */
static ts_status begin(ts_module *m)
{
	uint64_t t0 = ts_now_ns();
	ts_status st;
	if (m->cuda) {
		st = cg_cuda_build(m->ctx, m->func, m->target, &m->gpu, &m->times);
	} else {
		m->llvm = cg_llvm_prepare(m->ctx, m->func, m->target);
		st = m->llvm ? TS_OK : ts_last_status(m->ctx);
	}
	m->times.total_ms = ts_ms_since(t0);
	return st;
}

ts_module *ts_build(ts_ctx *ctx, const ts_func *f, const char *target)
{
	if (!ctx)
		return NULL;
	ts_clear_error(ctx); /* as ts_lower: an earlier call's error is not this build's */
	ts_module *m = start(ctx, f, target ? target : "llvm");
	ts_status st = m ? begin(m) : TS_ERR_INVALID;
	if (!st && !m->cuda) {
		uint64_t t0 = ts_now_ns();
		cg_llvm_finish(m->llvm);
		m->times.total_ms += ts_ms_since(t0);
		st = end_cpu(m);
	}
	if (st != TS_OK) {
		ts_module_free(m);
		return NULL;
	}
	return m;
}

/* ---- ts_build_all: the LLVM pipelines on several threads ---------------------- */

typedef struct {
	ts_module **m; /* largest first */
	int n;
	atomic_int next;
} finish_queue;

static int larger_first(const void *a, const void *b)
{
	const ts_module *x = *(ts_module *const *)a, *y = *(ts_module *const *)b;
	int64_t sx = cg_llvm_size(x->llvm), sy = cg_llvm_size(y->llvm);
	return sx > sy ? -1 : sx < sy;
}

static void *finish_worker(void *p)
{
	finish_queue *q = p;
	for (int i; (i = atomic_fetch_add(&q->next, 1)) < q->n;) {
		ts_module *m = q->m[i];
		if (m->cuda)
			continue;
		uint64_t t0 = ts_now_ns();
		cg_llvm_finish(m->llvm); /* a failure stays in the module */
		m->times.total_ms += ts_ms_since(t0);
	}
	return NULL;
}

/* Finishes the n CPU modules on up to one thread per online core, the
 * calling thread one of them (all of them if no thread can start).  The
 * largest go first, so that no thread is left with a large one at the end
 * (a ResNet-50 has a few 3x3 convolutions that take 10x the time of the
 * rest).  Returns false when out of memory. */
static bool finish_all(ts_module *const *mods, int n)
{
	enum { MAX_COMPILE_THREADS = 16 };
	ts_module **m = malloc(sizeof(*m) * ((size_t)n + 1));
	if (!m)
		return false;
	memcpy(m, mods, sizeof(*m) * (size_t)n);
	qsort(m, (size_t)n, sizeof(*m), larger_first);
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int threads = cores < 1 ? 1 : cores > MAX_COMPILE_THREADS ? MAX_COMPILE_THREADS : (int)cores;
	if (threads > n)
		threads = n;
	/* the smallest CPU module first, alone: LLVM creates some of its
	 * shared state (timer groups, registries behind ManagedStatic) on
	 * first use, and once this thread has, the workers it starts see it
	 * made; ThreadSanitizer, which cannot see inside LLVM, saw the workers
	 * race to make it */
	int last = n - 1;
	while (last >= 0 && m[last]->cuda)
		last--;
	if (last >= 0) {
		finish_queue first = {.m = m + last, .n = 1};
		atomic_init(&first.next, 0);
		finish_worker(&first);
	}
	finish_queue q = {.m = m, .n = last > 0 ? last : 0};
	atomic_init(&q.next, 0);
	if (threads > q.n)
		threads = q.n > 0 ? q.n : 1;
	pthread_t tid[MAX_COMPILE_THREADS];
	int started = 0;
	while (started < threads - 1 && pthread_create(&tid[started], NULL, finish_worker, &q) == 0)
		started++;
	finish_worker(&q);
	for (int i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	free(m);
	return true;
}

ts_status ts_build_all(ts_ctx *ctx, int n, const ts_func *const *funcs, const char *target,
		       ts_module **out)
{
	if (!ctx)
		return TS_ERR_INVALID;
	ts_clear_error(ctx);
	if (n < 0 || (n > 0 && (!funcs || !out)))
		return ts_error(ctx, TS_ERR_INVALID,
				"build_all: needs n >= 0 and, when n > 0, functions and an output array "
				"(got n %d, functions %s, output %s)", n, funcs ? "given" : "NULL",
				out ? "given" : "NULL");
	if (n == 0)
		return TS_OK;
	for (int i = 0; i < n; i++)
		out[i] = NULL;
	ts_status st = TS_OK;
	for (int i = 0; i < n && !st; i++) {
		/* the errors name the function; a NULL one has only its place */
		if (!funcs[i]) {
			st = ts_error(ctx, TS_ERR_INVALID, "build_all: function %d is NULL", i);
			break;
		}
		out[i] = start(ctx, funcs[i], target ? target : "llvm");
		st = out[i] ? begin(out[i]) : ts_last_status(ctx);
	}
	if (!st && !finish_all(out, n))
		st = ts_error(ctx, TS_ERR_NOMEM, "build_all: out of memory");
	for (int i = 0; i < n && !st; i++)
		if (!out[i]->cuda)
			st = end_cpu(out[i]);
	if (st)
		for (int i = 0; i < n; i++) {
			ts_module_free(out[i]);
			out[i] = NULL;
		}
	return st;
}

/* What a call checks before it runs m: a CUDA module compiled without a
 * GPU says so first (the arguments' devices would tell nothing), then the
 * arguments against the function; sizes receives the size variables. */
static ts_status call_checks(ts_module *m, int nargs, ts_array *const *args, int64_t *sizes)
{
	ts_status st = m->cuda ? cg_cuda_runnable(m->ctx, m->gpu) : TS_OK;
	return st == TS_OK ? ts_check_args_sizes(m->ctx, m->func, nargs, args,
						 m->cuda ? TS_DEVICE_CUDA : TS_DEVICE_CPU, sizes)
			   : st;
}

ts_status ts_module_run(ts_module *m, int nargs, ts_array *const *args)
{
	if (!m)
		return TS_ERR_INVALID;
	int64_t sizes[TS_MAX_SIZE_VARS];
	ts_status st = call_checks(m, nargs, args, sizes);
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
	int64_t sizes[TS_MAX_SIZE_VARS];
	ts_status st = call_checks(m, nargs, args, sizes);
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
	int64_t sizes[TS_MAX_SIZE_VARS];
	ts_status st = call_checks(m, nargs, args, sizes);
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
