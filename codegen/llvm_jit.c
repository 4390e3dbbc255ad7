/*
 * llvm_jit.c - the compile driver of the LLVM backend: vectorize, build,
 * verify, optimize, JIT; and the by-products (IR text, assembly, object
 * file and C header).
 *
 * Each module owns one ORC thread-safe context.  The optimized module goes
 * to its own LLJIT instance; a clone of it stays behind for assembly and
 * object output, each of which works on a fresh clone because code
 * generation passes rewrite the IR they run on.
 *
 * The JIT'd code calls few outside functions: ts_parallel_for, malloc-style
 * allocation and libm (tanh, erf, and whatever LLVM lowers math intrinsics
 * to).  They are defined in the JIT by address, so that they resolve even
 * when the program was linked without exporting them or without a direct
 * reference to libm; everything else falls back to the process's symbols.
 */
#include "llvm.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ident.h"
#include "llvm_internal.h"
#include "sbuf.h"
#include "threadpool.h"
#include "vecmath.h"
#include "vectorize.h"

struct cg_llvm_module {
	char *name;
	cg_llvm_target target;
	LLVMOrcThreadSafeContextRef tsc;
	LLVMModuleRef aot;    /* the optimized module, for assembly and objects */
	LLVMModuleRef before; /* the module before optimization */
	/* cloning or printing aot and before works in their LLVM context,
	 * which is not thread-safe: one at a time (runs need no lock) */
	pthread_mutex_t emit_lock;
	LLVMOrcLLJITRef jit;
	ts_cpu_entry entry;
	/* their text, printed when first asked for (LLVM messages): printing
	 * every module's IR twice took about 7% of a ResNet-50 compile */
	char *ir_before, *ir_after;
	ts_sbuf header;
	cg_llvm_times times;
	void *mvec; /* libmvec, open while the JIT'd code may call it */
	LLVMModuleRef pending; /* built, not yet optimized (cg_llvm_finish) */
	int64_t size;          /* its instructions */
	char *error;           /* the failure of cg_llvm_finish */
	bool error_nomem;      /* it failed, and its message could not be kept */
	bool finished;
};

typedef void (*any_fn)(void);

static const struct {
	const char *name;
	any_fn addr;
} runtime_symbols[] = {
	{"ts_parallel_for", (any_fn)ts_parallel_for},
	{"malloc", (any_fn)malloc}, {"free", (any_fn)free},
	{"aligned_alloc", (any_fn)aligned_alloc},
	{"memset", (any_fn)memset}, {"memcpy", (any_fn)memcpy}, {"memmove", (any_fn)memmove},
	{"expf", (any_fn)expf}, {"exp", (any_fn)exp}, {"exp2f", (any_fn)exp2f},
	{"exp2", (any_fn)exp2}, {"logf", (any_fn)logf}, {"log", (any_fn)log},
	{"sqrtf", (any_fn)sqrtf}, {"sqrt", (any_fn)sqrt}, {"tanhf", (any_fn)tanhf},
	{"tanh", (any_fn)tanh}, {"erff", (any_fn)erff}, {"erf", (any_fn)erf},
	{"powf", (any_fn)powf}, {"pow", (any_fn)pow}, {"fabsf", (any_fn)fabsf},
	{"fabs", (any_fn)fabs}, {"floorf", (any_fn)floorf}, {"floor", (any_fn)floor},
	{"ceilf", (any_fn)ceilf}, {"ceil", (any_fn)ceil}, {"ldexpf", (any_fn)ldexpf},
	{"ldexp", (any_fn)ldexp},
};

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Records an LLVM error (consuming it) in m, for cg_llvm_report: the
 * phases after the IR is built run without a context, perhaps on another
 * thread (ts_build_all).  The first error is the one kept. */
static ts_status llvm_error(cg_llvm_module *m, const char *what, LLVMErrorRef err)
{
	char *msg = LLVMGetErrorMessage(err);
	if (!m->error && !m->error_nomem) {
		size_t n = strlen(m->name) + strlen(what) + strlen(msg) + 16;
		m->error = malloc(n);
		if (m->error)
			snprintf(m->error, n, "llvm(%s): %s: %s", m->name, what, msg);
		else
			m->error_nomem = true;
	}
	LLVMDisposeErrorMessage(msg);
	return TS_ERR_RUNTIME;
}

/* ---- the module's phases ------------------------------------------------------ */

static ts_status build(ts_ctx *ctx, cg_llvm_module *m, const ts_func *f, LLVMModuleRef *out)
{
	ts_stmt *body = cg_vectorize(ctx, f->body);
	if (!body)
		return ts_last_status(ctx);
	LLVMContextRef lc = LLVMOrcThreadSafeContextGetContext(m->tsc);
	LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(m->name, lc);
	LLVMTargetMachineRef tm = cg_llvm_target_machine(&m->target, LLVMRelocDefault,
							 LLVMCodeModelDefault);
	LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
	LLVMSetModuleDataLayout(mod, dl);
	LLVMSetTarget(mod, m->target.triple);
	LLVMDisposeTargetData(dl);
	LLVMDisposeTargetMachine(tm);
	*out = mod;
	/* the symbol is the name as a C identifier, as in the header and in
	 * the C source (ident.h) */
	ts_status st = cg_llvm_emit(ctx, f, m->name, body, mod, m->target.vecmath);
	char *msg = NULL;
	if (!st && LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg))
		st = ts_error(ctx, TS_ERR_INTERNAL, "llvm(%s): the generated module is invalid: %s",
			      m->name, msg ? msg : "");
	LLVMDisposeMessage(msg);
	if (!st)
		m->before = LLVMCloneModule(mod);
	return st;
}

static ts_status optimize(cg_llvm_module *m, LLVMModuleRef mod)
{
	LLVMTargetMachineRef tm = cg_llvm_target_machine(&m->target, LLVMRelocDefault,
							 LLVMCodeModelDefault);
	LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
	/* tessera vectorized and unrolled what the schedule asked for; LLVM's
	 * own loop vectorizer and unroller would only second-guess the
	 * schedule, and cost much of the compile time.  LLVM 14 runs its loop
	 * and SLP vectorizers despite these options, so llvm_emit.c also
	 * marks the loops of a function that vectorizes nothing as scalar. */
	LLVMPassBuilderOptionsSetLoopVectorization(opts, 0);
	LLVMPassBuilderOptionsSetSLPVectorization(opts, 0);
	LLVMPassBuilderOptionsSetLoopUnrolling(opts, 0);
	LLVMErrorRef err = LLVMRunPasses(mod, "default<O3>", tm, opts);
	LLVMDisposePassBuilderOptions(opts);
	LLVMDisposeTargetMachine(tm);
	if (err)
		return llvm_error(m, "optimization failed", err);
	m->aot = LLVMCloneModule(mod);
	return TS_OK;
}

/* libmvec's functions by address (vecmath.h): the process need not have
 * loaded libmvec, and its symbols are versioned. */
static ts_status define_vecmath(cg_llvm_module *m, LLVMOrcJITDylibRef jd)
{
	LLVMJITCSymbolMapPair pairs[64];
	size_t n = 0;
	char buf[48];
	for (int i = 0; m->mvec && n < TS_COUNT_OF(pairs) && cg_vecmath_symbol_at(i, buf); i++) {
		void *addr = dlsym(m->mvec, buf);
		if (!addr)
			continue;
		pairs[n].Name = LLVMOrcLLJITMangleAndIntern(m->jit, buf);
		pairs[n].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)addr;
		pairs[n].Sym.Flags.GenericFlags = LLVMJITSymbolGenericFlagsExported |
						  LLVMJITSymbolGenericFlagsCallable;
		pairs[n].Sym.Flags.TargetFlags = 0;
		n++;
	}
	if (!n)
		return TS_OK;
	LLVMOrcMaterializationUnitRef mu = LLVMOrcAbsoluteSymbols(pairs, n);
	LLVMErrorRef err = LLVMOrcJITDylibDefine(jd, mu);
	if (err) {
		LLVMOrcDisposeMaterializationUnit(mu);
		return llvm_error(m, "cannot define libmvec's symbols", err);
	}
	return TS_OK;
}

static ts_status define_runtime(cg_llvm_module *m, LLVMOrcJITDylibRef jd)
{
	ts_status st_vecmath;
	size_t n = TS_COUNT_OF(runtime_symbols);
	LLVMJITCSymbolMapPair pairs[TS_COUNT_OF(runtime_symbols)];
	for (size_t i = 0; i < n; i++) {
		pairs[i].Name = LLVMOrcLLJITMangleAndIntern(m->jit, runtime_symbols[i].name);
		pairs[i].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)runtime_symbols[i].addr;
		pairs[i].Sym.Flags.GenericFlags = LLVMJITSymbolGenericFlagsExported |
						  LLVMJITSymbolGenericFlagsCallable;
		pairs[i].Sym.Flags.TargetFlags = 0;
	}
	LLVMOrcMaterializationUnitRef mu = LLVMOrcAbsoluteSymbols(pairs, n);
	LLVMErrorRef err = LLVMOrcJITDylibDefine(jd, mu);
	if (err) {
		LLVMOrcDisposeMaterializationUnit(mu);
		return llvm_error(m, "cannot define runtime symbols", err);
	}
	st_vecmath = define_vecmath(m, jd);
	if (st_vecmath)
		return st_vecmath;
	LLVMOrcDefinitionGeneratorRef gen;
	err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
		&gen, LLVMOrcLLJITGetGlobalPrefix(m->jit), NULL, NULL);
	if (err)
		return llvm_error(m, "cannot search the process's symbols", err);
	LLVMOrcJITDylibAddGenerator(jd, gen);
	return TS_OK;
}

static ts_status create_jit(cg_llvm_module *m)
{
	LLVMTargetMachineRef tm = cg_llvm_target_machine(&m->target, LLVMRelocDefault,
							 LLVMCodeModelJITDefault);
	LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
	LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(
		builder, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(tm));
	LLVMErrorRef err = LLVMOrcCreateLLJIT(&m->jit, builder);
	if (err) {
		m->jit = NULL;
		return llvm_error(m, "cannot create the JIT", err);
	}
	return define_runtime(m, LLVMOrcLLJITGetMainJITDylib(m->jit));
}

/* Hands mod to the JIT and compiles the entry point. */
static ts_status jit(cg_llvm_module *m, LLVMModuleRef mod)
{
	ts_status st = create_jit(m);
	if (st) {
		LLVMDisposeModule(mod);
		return st;
	}
	LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(mod, m->tsc);
	LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(m->jit);
	LLVMErrorRef err = LLVMOrcLLJITAddLLVMIRModule(m->jit, jd, tsm);
	if (err) {
		LLVMOrcDisposeThreadSafeModule(tsm);
		return llvm_error(m, "cannot add the module to the JIT", err);
	}
	LLVMOrcExecutorAddress addr = 0;
	err = LLVMOrcLLJITLookup(m->jit, &addr, m->name);
	if (err)
		return llvm_error(m, "cannot compile the entry point", err);
	m->entry = (ts_cpu_entry)(uintptr_t)addr;
	return TS_OK;
}

/* Text inside a C comment: no line breaks and no comment end, whatever a
 * target string holds (arena string; NULL when out of memory). */
static const char *comment_text(ts_ctx *ctx, const char *s)
{
	char *r = ts_strdup(ctx, s ? s : "");
	for (char *p = r; p && *p; p++)
		if (*p == '\n' || *p == '\r' || (*p == '*' && p[1] == '/') || (unsigned char)*p < ' ')
			*p = ' ';
	return r;
}

/* The C header text, made now so that the module needs nothing from f
 * later.  Names are printed as identifiers (cg_c_ident), so a tensor named
 * "A */ int x; /*" cannot end the comment and add code. */
static void make_header(ts_ctx *ctx, cg_llvm_module *m, const ts_func *f)
{
	ts_sbuf *sb = &m->header;
	char t[24];
	const char *target = comment_text(ctx, m->target.str);
	bool lost = !target;
	ts_sb_printf(sb, "/*\n * %s.h - generated by tessera for target '%s'.\n *\n", m->name,
		     target ? target : "");
	ts_sb_printf(sb, " * int32_t %s(void **args) runs the function; args[i] is the data of\n"
		     " * buffer i (dense, row-major, 64-byte aligned, not overlapping):\n", m->name);
	for (int i = 0; i < f->nparams; i++) {
		const ts_buffer *b = f->params[i];
		const char *name = cg_c_ident(ctx, b->name);
		lost |= !name;
		ts_sb_printf(sb, " *   args[%d]: %s %s[", i, name ? name : "?",
			     ts_dtype_str(b->dtype, t));
		for (int d = 0; d < b->ndim; d++) {
			const char *v = b->dim_var[d] ? cg_c_ident(ctx, b->dim_var[d]->u.var.name) : NULL;
			lost |= b->dim_var[d] && !v;
			if (v)
				ts_sb_printf(sb, "%s%s", d ? ", " : "", v);
			else
				ts_sb_printf(sb, "%s%lld", d ? ", " : "", (long long)b->shape[d]);
		}
		ts_sb_puts(sb, "]\n");
	}
	/* symbolic extents: named above, their values in the last buffer */
	for (int k = 0; k < f->nsizes; k++) {
		const char *v = cg_c_ident(ctx, f->size_vars[k]->u.var.name);
		lost |= !v;
		ts_sb_printf(sb, " *   %s = args[%d][%d] (int64), 1 to %lld\n", v ? v : "?",
			     f->nparams - 1, k, (long long)f->size_max[k]);
	}
	ts_sb_puts(sb, " * It returns 0.  Link with libtessera (parallel loops) and libm.\n */\n");
	ts_sb_printf(sb, "#ifndef TS_GENERATED_%s_H\n#define TS_GENERATED_%s_H\n\n", m->name, m->name);
	ts_sb_puts(sb, "#include <stdint.h>\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
	ts_sb_printf(sb, "int32_t %s(void **args);\n\n", m->name);
	ts_sb_puts(sb, "#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
	/* a name that could not be made (a failed allocation, reported) is
	 * a header with "?" in it: the build fails instead */
	if (!lost)
		return;
	sb->oom = true;
}

/* ---- public API ------------------------------------------------------------- */

static ts_status check_func(ts_ctx *ctx, const ts_func *f)
{
	if (!f)
		return ts_error(ctx, TS_ERR_INVALID, "llvm: no function (NULL)");
	if (!f->name || !f->name[0] || !f->body)
		return ts_error(ctx, TS_ERR_INVALID, "llvm: function '%s' has no %s",
				f->name ? f->name : "?", f->body ? "name" : "body");
	if (f->ctx && f->ctx != ctx)
		return ts_error(ctx, TS_ERR_INVALID, "llvm(%s): the function belongs to another context",
				f->name);
	for (int i = 0; i < f->nparams; i++)
		if (!f->params[i])
			return ts_error(ctx, TS_ERR_INVALID, "llvm(%s): parameter %d is NULL", f->name, i);
	return TS_OK;
}

/* Instructions in mod: what optimizing and compiling it cost, roughly. */
static int64_t module_size(LLVMModuleRef mod)
{
	int64_t n = 0;
	for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn))
		for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
			for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in))
				n++;
	return n;
}

/* The phases that need the context and the function: target, IR, header. */
static ts_status prepare(ts_ctx *ctx, cg_llvm_module *m, const ts_func *f, const char *target)
{
	ts_status st = cg_llvm_target_parse(ctx, f->name, target, &m->target);
	if (st)
		return st;
	/* vector math calls libmvec only where this process can open it */
	if (m->target.vecmath && !(m->mvec = dlopen("libmvec.so.1", RTLD_NOW | RTLD_LOCAL)))
		m->target.vecmath = 0;
	m->tsc = LLVMOrcCreateNewThreadSafeContext();
	double t0 = now_ms();
	st = build(ctx, m, f, &m->pending);
	m->times.build_ms = now_ms() - t0;
	m->size = st ? 0 : module_size(m->pending);
	make_header(ctx, m, f);
	return st ? st : m->header.oom ? ts_error(ctx, TS_ERR_NOMEM, "llvm(%s): out of memory", m->name)
				       : TS_OK;
}

cg_llvm_module *cg_llvm_prepare(ts_ctx *ctx, const ts_func *f, const char *target)
{
	if (!ctx || check_func(ctx, f))
		return NULL;
	/* the symbol: an identifier that no runtime function the JIT resolves
	 * in the module's namespace has (ident.h reserves them all) */
	const char *symbol = cg_c_ident(ctx, f->name);
	if (!symbol)
		return NULL;
	for (size_t i = 0; i < TS_COUNT_OF(runtime_symbols); i++)
		if (strcmp(symbol, runtime_symbols[i].name) == 0) {
			ts_error(ctx, TS_ERR_INTERNAL, "llvm(%s): symbol %s is not reserved in ident.c",
				 f->name, symbol);
			return NULL;
		}
	cg_llvm_module *m = calloc(1, sizeof(*m));
	if (!m || !(m->name = strdup(symbol))) {
		free(m);
		ts_error(ctx, TS_ERR_NOMEM, "llvm(%s): out of memory", f->name);
		return NULL;
	}
	pthread_mutex_init(&m->emit_lock, NULL);
	if (prepare(ctx, m, f, target)) {
		cg_llvm_free(m);
		return NULL;
	}
	return m;
}

bool cg_llvm_finish(cg_llvm_module *m)
{
	if (!m || m->finished)
		return m && !m->error && !m->error_nomem;
	m->finished = true;
	LLVMModuleRef mod = m->pending;
	m->pending = NULL;
	double t1 = now_ms();
	ts_status st = optimize(m, mod);
	double t2 = now_ms();
	if (st || !m->target.native)
		LLVMDisposeModule(mod);
	else
		st = jit(m, mod);
	m->times.optimize_ms = t2 - t1;
	m->times.codegen_ms = now_ms() - t2;
	return st == TS_OK;
}

int64_t cg_llvm_size(const cg_llvm_module *m)
{
	return m ? m->size : 0;
}

ts_status cg_llvm_report(ts_ctx *ctx, const cg_llvm_module *m)
{
	if (!ctx)
		return TS_ERR_INVALID;
	if (!m)
		return ts_error(ctx, TS_ERR_INVALID, "llvm: no module (NULL)");
	if (!m->finished)
		return ts_error(ctx, TS_ERR_INTERNAL, "llvm(%s): the module was never finished", m->name);
	if (m->error)
		return ts_error(ctx, TS_ERR_RUNTIME, "%s", m->error);
	if (m->error_nomem)
		return ts_error(ctx, TS_ERR_NOMEM, "llvm(%s): out of memory while reporting an LLVM error",
				m->name);
	return TS_OK;
}

cg_llvm_module *cg_llvm_compile(ts_ctx *ctx, const ts_func *f, const char *target)
{
	cg_llvm_module *m = cg_llvm_prepare(ctx, f, target);
	if (m && !cg_llvm_finish(m)) {
		cg_llvm_report(ctx, m);
		cg_llvm_free(m);
		return NULL;
	}
	return m;
}

ts_cpu_entry cg_llvm_entry(const cg_llvm_module *m)
{
	return m ? m->entry : NULL;
}

/* The optimized module exists only once cg_llvm_finish optimized it: a
 * module prepared but not finished, or whose optimization failed, has no
 * optimized IR, assembly or object to give. */
static ts_status need_optimized(ts_ctx *ctx, const cg_llvm_module *m, const char *what)
{
	if (m->aot)
		return TS_OK;
	if (!m->finished)
		return ts_error(ctx, TS_ERR_INVALID,
				"llvm(%s): %s needs the optimized module; the module was prepared but "
				"not finished (cg_llvm_finish)", m->name, what);
	if (cg_llvm_report(ctx, m) != TS_OK)
		return ts_last_status(ctx);
	return ts_error(ctx, TS_ERR_INTERNAL, "llvm(%s): %s: the module has no optimized code",
			m->name, what);
}

const char *cg_llvm_ir_text(ts_ctx *ctx, const cg_llvm_module *m, bool optimized)
{
	if (!ctx)
		return NULL;
	if (!m) {
		ts_error(ctx, TS_ERR_INVALID, "llvm: no module (NULL)");
		return NULL;
	}
	if (optimized && need_optimized(ctx, m, "the optimized LLVM IR") != TS_OK)
		return NULL;
	/* the text is a cache of a module m owns: filled under the lock, as
	 * emit_code's clone, by any caller that holds m */
	cg_llvm_module *mm = (cg_llvm_module *)m;
	pthread_mutex_lock(&mm->emit_lock);
	char **text = optimized ? &mm->ir_after : &mm->ir_before;
	LLVMModuleRef mod = optimized ? mm->aot : mm->before;
	if (!*text && mod)
		*text = LLVMPrintModuleToString(mod);
	const char *r = ts_strdup(ctx, *text ? *text : "");
	pthread_mutex_unlock(&mm->emit_lock);
	return r;
}

/* Code for the module's target into a memory buffer (assembly or object). */
static LLVMMemoryBufferRef emit_code(ts_ctx *ctx, cg_llvm_module *m, LLVMCodeGenFileType kind)
{
	if (need_optimized(ctx, m, kind == LLVMAssemblyFile ? "assembly" : "an object file") != TS_OK)
		return NULL;
	pthread_mutex_lock(&m->emit_lock);
	LLVMTargetMachineRef tm = cg_llvm_target_machine(&m->target, LLVMRelocPIC,
							 LLVMCodeModelDefault);
	LLVMModuleRef clone = LLVMCloneModule(m->aot);
	LLVMMemoryBufferRef buf = NULL;
	char *err = NULL;
	if (LLVMTargetMachineEmitToMemoryBuffer(tm, clone, kind, &err, &buf)) {
		ts_error(ctx, TS_ERR_RUNTIME, "llvm(%s): code generation failed: %s", m->name,
			 err ? err : "");
		buf = NULL;
	}
	LLVMDisposeMessage(err);
	LLVMDisposeModule(clone);
	LLVMDisposeTargetMachine(tm);
	pthread_mutex_unlock(&m->emit_lock);
	return buf;
}

const char *cg_llvm_asm_text(ts_ctx *ctx, cg_llvm_module *m)
{
	if (!ctx)
		return NULL;
	if (!m) {
		ts_error(ctx, TS_ERR_INVALID, "llvm: no module (NULL)");
		return NULL;
	}
	LLVMMemoryBufferRef buf = emit_code(ctx, m, LLVMAssemblyFile);
	if (!buf)
		return NULL;
	size_t n = LLVMGetBufferSize(buf);
	char *s = ts_alloc(ctx, n + 1);
	if (s)
		memcpy(s, LLVMGetBufferStart(buf), n);
	LLVMDisposeMemoryBuffer(buf);
	return s;
}

static bool is_identifier(const char *s)
{
	if (!isalpha((unsigned char)s[0]) && s[0] != '_')
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return false;
	return true;
}

static ts_status write_file(ts_ctx *ctx, const char *name, const char *path, const void *data,
			    size_t n)
{
	FILE *fp = fopen(path, "wb");
	if (!fp)
		return ts_error(ctx, TS_ERR_RUNTIME, "llvm(%s): cannot open '%s' for writing: %s", name,
				path, strerror(errno));
	size_t w = fwrite(data, 1, n, fp);
	if (fclose(fp) != 0 || w != n)
		return ts_error(ctx, TS_ERR_RUNTIME, "llvm(%s): cannot write '%s'", name, path);
	return TS_OK;
}

/* Whether two paths name one file ("./x.o" and "x.o", a link to it): asked
 * once the first exists, since names alone cannot tell. */
static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

ts_status cg_llvm_write_object(ts_ctx *ctx, cg_llvm_module *m, const char *obj_path,
			       const char *header_path)
{
	if (!ctx)
		return TS_ERR_INVALID;
	if (!m || !obj_path)
		return ts_error(ctx, TS_ERR_INVALID, "llvm: write_object needs a module and a path");
	if (header_path && !is_identifier(m->name))
		return ts_error(ctx, TS_ERR_INVALID,
				"llvm(%s): the function name is not a C identifier; cannot write a header",
				m->name);
	LLVMMemoryBufferRef buf = emit_code(ctx, m, LLVMObjectFile);
	if (!buf)
		return ts_last_status(ctx);
	ts_status st = write_file(ctx, m->name, obj_path, LLVMGetBufferStart(buf),
				  LLVMGetBufferSize(buf));
	LLVMDisposeMemoryBuffer(buf);
	if (!st && header_path && same_file(obj_path, header_path))
		return ts_error(ctx, TS_ERR_INVALID,
				"llvm(%s): the header '%s' is the object file '%s' under another name; "
				"it would overwrite the object", m->name, header_path, obj_path);
	if (!st && header_path)
		st = write_file(ctx, m->name, header_path, ts_sb_str(&m->header), m->header.len);
	return st;
}

const char *cg_llvm_target_str(const cg_llvm_module *m)
{
	return m ? m->target.str : NULL;
}

cg_llvm_times cg_llvm_get_times(const cg_llvm_module *m)
{
	return m ? m->times : (cg_llvm_times){0, 0, 0};
}

void cg_llvm_free(cg_llvm_module *m)
{
	if (!m)
		return;
	/* the clone lives in the thread-safe context: dispose it first */
	if (m->aot)
		LLVMDisposeModule(m->aot);
	if (m->pending)
		LLVMDisposeModule(m->pending);
	if (m->before)
		LLVMDisposeModule(m->before);
	if (m->jit) {
		LLVMErrorRef err = LLVMOrcDisposeLLJIT(m->jit);
		if (err)
			LLVMConsumeError(err);
	}
	if (m->tsc)
		LLVMOrcDisposeThreadSafeContext(m->tsc);
	LLVMDisposeMessage(m->ir_before);
	LLVMDisposeMessage(m->ir_after);
	if (m->mvec)
		dlclose(m->mvec);
	ts_sb_free(&m->header);
	cg_llvm_target_free(&m->target);
	pthread_mutex_destroy(&m->emit_lock);
	free(m->error);
	free(m->name);
	free(m);
}
