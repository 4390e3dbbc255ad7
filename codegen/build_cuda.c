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
 *
 * Several kernels: a function whose body is a sequence of nests each bound
 * to its own blocks and threads, under allocations of global buffers (the
 * stages computed at root with their own bindings: softmax's row maximum,
 * then its sum, then the output), needs every thread of one nest done
 * before the next reads its result.  That is a kernel boundary: each nest
 * becomes a kernel "<name>_k<i>" whose parameters are the function's and
 * then every such buffer, which the module allocates on the device once
 * and passes to each launch; the kernels are launched in order on one
 * stream, so each starts after the one before has finished.
 */
#include "build_cuda.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "c_emit.h"
#include "cuda_check.h"
#include "cuda_driver.h"
#include "ident.h"
#include "nvrtc.h"

/* Most kernels one function becomes, and global buffers between them. */
#define MAX_KERNELS 16
#define MAX_SCRATCH 16

struct cg_cuda_module {
	ts_cuda *cuda; /* NULL when compiled without a device */
	int nk;        /* kernels, launched in order */
	ts_cuda_module *mod[MAX_KERNELS];
	ts_cuda_kernel kernel[MAX_KERNELS];
	cg_launch launch[MAX_KERNELS];
	int ns;        /* global buffers between kernels, after f's parameters */
	ts_array *scratch_array[MAX_SCRATCH]; /* on the device (NULL without one) */
	const char *source;
	char arch[CG_ARCH_MAX];
	const char *name;
	/* a run's kernels are enqueued together, so runs from several host
	 * threads never interleave on the stream around the shared buffers */
	pthread_mutex_t lock;
	bool lock_made;
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

/* The kernels of f: its top-level thread-bound nests, under allocations
 * of global buffers (recorded as scratch).  false when f is not of that
 * form with two nests or more: it is then one kernel, as it stands. */
typedef struct split {
	ts_stmt *nest[MAX_KERNELS];
	int nk, ns;
	ts_buffer *scratch[MAX_SCRATCH];
	bool ok;
} split;

static void collect(split *sp, ts_stmt *s)
{
	int64_t v;
	if (!sp->ok)
		return;
	switch (s->kind) {
	case IR_S_ALLOCATE:
		if (s->u.alloc.buf->scope != TS_SCOPE_GLOBAL || sp->ns == MAX_SCRATCH) {
			sp->ok = false;
			return;
		}
		sp->scratch[sp->ns++] = s->u.alloc.buf;
		collect(sp, s->u.alloc.body);
		return;
	case IR_S_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			collect(sp, s->u.seq.s[i]);
		return;
	case IR_S_FOR:
		if (s->u.for_.kind != TS_FOR_THREAD || sp->nk == MAX_KERNELS) {
			sp->ok = false;
			return;
		}
		sp->nest[sp->nk++] = s;
		return;
	case IR_S_EVALUATE: /* the empty statement */
		if (ir_is_const_int(s->u.eval.value, &v))
			return;
		sp->ok = false;
		return;
	default:
		sp->ok = false;
		return;
	}
}

/* Kernel i of a split f: f's parameters, then the scratch buffers. */
static ts_func *kernel_func(ts_ctx *ctx, const ts_func *f, const split *sp, int i)
{
	ts_func *k = ts_alloc(ctx, sizeof(*k));
	int n = f->nparams + sp->ns;
	ts_buffer **p = ts_alloc_array(ctx, (size_t)n, sizeof(*p));
	ts_tensor **t = ts_alloc_array(ctx, (size_t)n, sizeof(*t));
	const char *name = ts_sprintf(ctx, "%s_k%d", f->name, i);
	if (!k || !p || !t || !name)
		return NULL;
	for (int j = 0; j < f->nparams; j++) {
		p[j] = f->params[j];
		t[j] = f->param_tensors ? f->param_tensors[j] : NULL;
	}
	for (int j = 0; j < sp->ns; j++)
		p[f->nparams + j] = sp->scratch[j];
	*k = *f;
	k->name = name;
	k->nparams = n;
	k->params = p;
	k->param_tensors = t;
	k->body = sp->nest[i];
	return k;
}

/* The most shared memory a block of sm_<num> can take (dynamically, past
 * 48 KB), from the CUDA programming guide's table of compute
 * capabilities; 48 KB for an architecture it does not list. */
static int64_t max_shared(int num)
{
	switch (num) {
	case 70: case 72: return 98304;
	case 75: return 65536;
	case 80: case 87: return 166912;
	case 86: case 89: case 120: case 121: return 101376;
	case 90: case 100: case 101: case 103: case 110: return 232448;
	default: return 49152;
	}
}

/* Kernel i's source, compiled, and loaded when there is a device. */
static ts_status compile_kernel(ts_ctx *ctx, const ts_func *k, cg_cuda_module *m, int i,
				ts_phase_times *times)
{
	uint64_t t0 = ts_now_ns();
	const char *src = cg_cuda_kernel_source(ctx, k, &m->launch[i]);
	times->llvm_build_ms += ts_ms_since(t0); /* source emission */
	if (!src)
		return ts_last_status(ctx);
	m->source = m->nk == 1 ? src
		    : ts_sprintf(ctx, "%s/* ---- kernel %d of %d: %s */\n%s", i ? m->source : "", i + 1,
				 m->nk, k->name, src);
	if (!m->source)
		return ts_last_status(ctx);
	/* tensorized nests print mma.sync m16n8k16 (m16n8k8 with TF32), which
	 * sm_80 introduced for these types:
	 * said here rather than as NVRTC's dump of the source's #error */
	const char *num = strrchr(m->arch, '_');
	if (strstr(src, "mma.sync.aligned.m16n8k") && num && atoi(num + 1) < 80)
		return ts_error(ctx, TS_ERR_UNSUPPORTED, "build %s: its tensorized nests (mma.sync "
				"m16n8k16, m16n8k8 for TF32) need sm_80 or newer; the target is %s", k->name,
				m->arch);
	int64_t shared = m->launch[i].shared_bytes, most = num ? max_shared(atoi(num + 1)) : INT64_MAX;
	if (shared > most)
		return ts_error(ctx, TS_ERR_UNSUPPORTED, "build %s: %lld bytes of shared memory per block; "
				"%s gives a block at most %lld (smaller tiles, or a newer -arch)", k->name,
				(long long)shared, m->arch, (long long)most);
	cg_nvrtc_result r = {0};
	ts_status st = cg_nvrtc_compile(ctx, src, k->name, m->arch, &r);
	times->nvrtc_ms += r.compile_ms;
	if (st == TS_OK && m->cuda) {
		m->mod[i] = ts_cuda_module_load(ctx, m->cuda, r.image, r.size);
		st = m->mod[i] ? ts_cuda_module_kernel(ctx, m->mod[i], cg_c_ident(ctx, k->name), &m->kernel[i])
			       : ts_last_status(ctx);
		/* over 48 KB, the dynamic shared memory the launches ask for */
		if (st == TS_OK && shared > 0)
			st = ts_cuda_kernel_allow_shared(ctx, &m->kernel[i], shared);
	}
	cg_nvrtc_result_free(&r);
	return st;
}

static ts_status compile(ts_ctx *ctx, const ts_func *f, cg_cuda_module *m, ts_phase_times *times)
{
	split sp = {.ok = true};
	collect(&sp, f->body);
	times->llvm_build_ms = times->nvrtc_ms = 0;
	if (!sp.ok || sp.nk < 2) {
		m->nk = 1;
		return compile_kernel(ctx, f, m, 0, times);
	}
	m->nk = sp.nk;
	m->ns = sp.ns;
	for (int j = 0; j < sp.ns; j++) {
		if (m->cuda && !(m->scratch_array[j] = ts_cuda_array_new(ctx, m->cuda, sp.scratch[j]->dtype, 1,
								      &sp.scratch[j]->size)))
			return ts_last_status(ctx);
	}
	for (int i = 0; i < sp.nk; i++) {
		ts_func *k = kernel_func(ctx, f, &sp, i);
		ts_status st = k ? compile_kernel(ctx, k, m, i, times) : ts_last_status(ctx);
		if (st != TS_OK)
			return st;
	}
	return TS_OK;
}

ts_status cg_cuda_build(ts_ctx *ctx, const ts_func *f, const char *target, cg_cuda_module **out,
			ts_phase_times *times)
{
	if (out)
		*out = NULL;
	if (!f || !target || !out)
		return ts_error(ctx, TS_ERR_INVALID, "cuda build: NULL %s",
				!f ? "function" : !target ? "target" : "module pointer");
	ts_phase_times ignored;
	if (!times) /* the caller does not want them */
		times = &ignored;
	cg_cuda_module *m = calloc(1, sizeof(*m));
	*out = m;
	if (!m)
		return ts_error(ctx, TS_ERR_NOMEM, "build %s: out of memory", f->name);
	m->name = f->name;
	m->lock_made = pthread_mutex_init(&m->lock, NULL) == 0;
	ts_status st = pick_arch(ctx, target, m);
	return st == TS_OK ? compile(ctx, f, m, times) : st;
}

ts_status cg_cuda_runnable(ts_ctx *ctx, const cg_cuda_module *m)
{
	if (!m->mod[0])
		return ts_error(ctx, TS_ERR_NO_DEVICE,
				"call %s: compiled for %s without a GPU; it can be inspected but not run here",
				m->name, m->arch);
	return TS_OK;
}

/* Every kernel in order, each given the arguments and the scratch
 * buffers: one stream, so kernel i + 1 starts once kernel i is done. */
static ts_status launch_all(ts_ctx *ctx, cg_cuda_module *m, int nargs, ts_array *const *args)
{
	if (nargs < 0 || nargs + m->ns > 64 || (nargs > 0 && !args))
		return ts_error(ctx, TS_ERR_INVALID, "call %s: bad argument list (%d arguments)", m->name,
				nargs);
	ts_array *all[64];
	for (int i = 0; i < nargs; i++)
		all[i] = args[i];
	for (int j = 0; j < m->ns; j++)
		all[nargs + j] = m->scratch_array[j];
	ts_status st = TS_OK;
	if (m->lock_made)
		pthread_mutex_lock(&m->lock);
	for (int i = 0; i < m->nk && st == TS_OK; i++)
		st = ts_cuda_launch(ctx, &m->kernel[i], &m->launch[i], nargs + m->ns, all);
	if (m->lock_made)
		pthread_mutex_unlock(&m->lock);
	return st;
}

ts_status cg_cuda_run(ts_ctx *ctx, cg_cuda_module *m, int nargs, ts_array *const *args)
{
	ts_status st = cg_cuda_runnable(ctx, m);
	if (st == TS_OK)
		st = launch_all(ctx, m, nargs, args);
	return st == TS_OK ? ts_cuda_synchronize(ctx, m->cuda) : st;
}

ts_status cg_cuda_launch(ts_ctx *ctx, cg_cuda_module *m, int nargs, ts_array *const *args)
{
	ts_status st = cg_cuda_runnable(ctx, m);
	return st == TS_OK ? launch_all(ctx, m, nargs, args) : st;
}

typedef struct all_work {
	ts_ctx *ctx;
	cg_cuda_module *m;
	int nargs;
	ts_array *const *args;
} all_work;

static int all_work_fn(void *arg)
{
	all_work *w = arg;
	return launch_all(w->ctx, w->m, w->nargs, w->args) != TS_OK;
}

ts_status cg_cuda_time(ts_ctx *ctx, cg_cuda_module *m, int nargs, ts_array *const *args,
		       int warmup, int repeat, ts_timing *out)
{
	ts_status st = cg_cuda_runnable(ctx, m);
	ts_cuda_time_opts o = {.warmup = warmup, .repeats = repeat, .what = m->name};
	if (st != TS_OK)
		return st;
	if (m->nk == 1)
		return ts_cuda_time_kernel(ctx, &m->kernel[0], &m->launch[0], nargs, args, &o, out);
	all_work w = {ctx, m, nargs, args};
	return ts_cuda_time(ctx, m->cuda, all_work_fn, &w, &o, out);
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
	for (int i = 0; i < m->nk; i++)
		ts_cuda_module_unload(m->mod[i]);
	for (int j = 0; j < m->ns; j++)
		ts_cuda_array_free(m->scratch_array[j]);
	ts_cuda_close(m->cuda);
	if (m->lock_made)
		pthread_mutex_destroy(&m->lock);
	free(m);
}
