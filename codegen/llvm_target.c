/*
 * llvm_target.c - target strings for the LLVM backend.
 *
 * "llvm [-mtriple=T] [-mcpu=C] [-mattr=+a,-b]" is resolved against the
 * host: without -mcpu/-mattr/-mtriple the host's CPU name and feature list
 * are used, so the code uses every vector extension the machine has.
 *
 * LLVM aborts the process on some invalid CPU names instead of reporting
 * them, prints its CPU table for "help", and only warns about unknown
 * features, so every name is checked here before any target machine is
 * made.  The LLVM-14 C API cannot list a target's CPUs, so the lists come
 * from `llc -mcpu=help` of the linked LLVM, run for every registered target
 * at configure time (llvm_names.h, see CMakeLists.txt).  Where llc was not
 * found, the x86 names of LLVM 14 below are used and other architectures
 * get only the syntax checks.  Every message starts "build <function>:".
 */
#include "llvm_internal.h"

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A target's CPU and feature names, each list " a b c " (a space before
 * and after every name). */
typedef struct cg_llvm_names {
	const char *target; /* LLVM's name: "x86-64", "aarch64", ... */
	const char *cpus, *features;
} cg_llvm_names;

#ifdef TS_HAVE_LLVM_NAMES
#include "llvm_names.h"
#else
#define X86_CPUS \
	" alderlake amdfam10 athlon athlon-4 athlon-fx athlon-mp athlon-tbird athlon-xp " \
	"athlon64 athlon64-sse3 atom barcelona bdver1 bdver2 bdver3 bdver4 bonnell " \
	"broadwell btver1 btver2 c3 c3-2 cannonlake cascadelake cooperlake core-avx-i " \
	"core-avx2 core2 corei7 corei7-avx generic geode goldmont goldmont-plus haswell " \
	"i386 i486 i586 i686 icelake-client icelake-server ivybridge k6 k6-2 k6-3 k8 " \
	"k8-sse3 knl knm lakemont nehalem nocona opteron opteron-sse3 penryn pentium " \
	"pentium-m pentium-mmx pentium2 pentium3 pentium3m pentium4 pentium4m pentiumpro " \
	"prescott rocketlake sandybridge sapphirerapids silvermont skx skylake " \
	"skylake-avx512 slm tigerlake tremont westmere winchip-c6 winchip2 x86-64 x86-64-v2 " \
	"x86-64-v3 x86-64-v4 yonah znver1 znver2 znver3 "
#define X86_FEATURES \
	" 16bit-mode 32bit-mode 3dnow 3dnowa 64bit 64bit-mode adx aes amx-bf16 amx-int8 " \
	"amx-tile avx avx2 avx512bf16 avx512bitalg avx512bw avx512cd avx512dq avx512er " \
	"avx512f avx512fp16 avx512ifma avx512pf avx512vbmi avx512vbmi2 avx512vl avx512vnni " \
	"avx512vp2intersect avx512vpopcntdq avxvnni bmi bmi2 branchfusion cldemote " \
	"clflushopt clwb clzero cmov crc32 cx16 cx8 enqcmd ermsb f16c " \
	"false-deps-lzcnt-tzcnt false-deps-popcnt fast-11bytenop fast-15bytenop " \
	"fast-7bytenop fast-bextr fast-gather fast-hops fast-lzcnt fast-movbe " \
	"fast-scalar-fsqrt fast-scalar-shift-masks fast-shld-rotate " \
	"fast-variable-crosslane-shuffle fast-variable-perlane-shuffle fast-vector-fsqrt " \
	"fast-vector-shift-masks fma fma4 fsgsbase fsrm fxsr gfni hreset idivl-to-divb " \
	"idivq-to-divl invpcid kl lea-sp lea-uses-ag lvi-cfi lvi-load-hardening lwp lzcnt " \
	"macrofusion mmx movbe movdir64b movdiri mwaitx nopl pad-short-functions pclmul " \
	"pconfig pku popcnt prefer-128-bit prefer-256-bit prefer-mask-registers prefetchwt1 " \
	"prfchw ptwrite rdpid rdrnd rdseed retpoline retpoline-external-thunk " \
	"retpoline-indirect-branches retpoline-indirect-calls rtm sahf serialize seses sgx " \
	"sha shstk slow-3ops-lea slow-incdec slow-lea slow-pmaddwd slow-pmulld slow-shld " \
	"slow-two-mem-ops slow-unaligned-mem-16 slow-unaligned-mem-32 soft-float sse " \
	"sse-unaligned-mem sse2 sse3 sse4.1 sse4.2 sse4a ssse3 tagged-globals tbm tsxldtrk " \
	"uintr use-aa use-glm-div-sqrt-costs use-slm-arith-costs vaes vpclmulqdq vzeroupper " \
	"waitpkg wbnoinvd widekl x87 xop xsave xsavec xsaveopt xsaves "
static const cg_llvm_names llvm_names[] = {
	{"x86-64", X86_CPUS, X86_FEATURES},
	{"x86", X86_CPUS, X86_FEATURES},
};
#endif

/* CPUs worth naming in a message, where the list's first names are not. */
static const struct {
	const char *target, *examples;
} cpu_examples[] = {
	{"x86-64", "skylake-avx512, znver3"},
	{"x86", "i686, pentium4"},
	{"aarch64", "neoverse-n1, apple-m1"},
	{"arm64", "neoverse-n1, apple-m1"},
};

/* LLVM's target registry is process-wide; registering twice is harmless
 * but not thread-safe, hence the once-flag (the only mutable static). */
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_targets(void)
{
	LLVMInitializeAllTargetInfos();
	LLVMInitializeAllTargets();
	LLVMInitializeAllTargetMCs();
	LLVMInitializeAllAsmPrinters();
}

void cg_llvm_init(void)
{
	pthread_once(&init_once, init_targets);
}

/* What a message needs to say where: the function and the target string. */
typedef struct where {
	const char *fname, *spec;
} where;

/* Records "build f: target 'spec': <what>" and returns TS_ERR_INVALID. */
static ts_status bad_target(ts_ctx *ctx, const where *w, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static ts_status bad_target(ts_ctx *ctx, const where *w, const char *fmt, ...)
{
	char what[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	return ts_error(ctx, TS_ERR_INVALID, "build %s: target '%s': %s", w->fname, w->spec, what);
}

static const cg_llvm_names *names_of(LLVMTargetRef target)
{
	const char *name = LLVMGetTargetName(target);
	for (size_t i = 0; name && i < TS_COUNT_OF(llvm_names); i++)
		if (strcmp(llvm_names[i].target, name) == 0)
			return &llvm_names[i];
	return NULL;
}

/* Whether s[0..len) is one of the names in list (" a b c "). */
static bool listed(const char *list, const char *s, size_t len)
{
	if (len == 0)
		return false;
	for (const char *p = strstr(list, " "); p; p = strchr(p + 1, ' '))
		if (strncmp(p + 1, s, len) == 0 && p[len + 1] == ' ')
			return true;
	return false;
}

/* "skylake-avx512, znver3" or the first two names of the list into buf. */
static const char *examples(const cg_llvm_names *names, char *buf, size_t n)
{
	for (size_t i = 0; i < TS_COUNT_OF(cpu_examples); i++)
		if (strcmp(cpu_examples[i].target, names->target) == 0)
			return cpu_examples[i].examples;
	const char *a = names->cpus + strspn(names->cpus, " ");
	size_t la = strcspn(a, " ");
	const char *b = a + la + strspn(a + la, " ");
	snprintf(buf, n, "%.*s, %.*s", (int)la, a, (int)strcspn(b, " "), b);
	return buf;
}

/* The architecture part of a triple ("x86_64"), for messages. */
static int arch_len(const char *triple)
{
	return (int)strcspn(triple, "-");
}

/* Same architecture (the part of the triple before the first '-'). */
static bool same_arch(const char *a, const char *b)
{
	size_t la = strcspn(a, "-"), lb = strcspn(b, "-");
	return la == lb && strncmp(a, b, la) == 0;
}

/* The options of a target string, each a malloc'd value or NULL. */
typedef struct options {
	char *cpu, *attr, *triple;
} options;

static void options_free(options *o)
{
	free(o->cpu);
	free(o->attr);
	free(o->triple);
}

static ts_status parse_option(ts_ctx *ctx, const where *w, const char *tok, size_t len,
			      options *o)
{
	static const struct {
		const char *prefix;
		size_t off;
	} opts[] = {
		{"-mcpu=", offsetof(options, cpu)},
		{"-mattr=", offsetof(options, attr)},
		{"-mtriple=", offsetof(options, triple)},
	};
	for (size_t i = 0; i < TS_COUNT_OF(opts); i++) {
		size_t pl = strlen(opts[i].prefix);
		if (len < pl || strncmp(tok, opts[i].prefix, pl) != 0)
			continue;
		char **slot = (char **)((char *)o + opts[i].off);
		if (*slot)
			return bad_target(ctx, w, "option '%.*s' given twice", (int)pl - 1, tok);
		if (len == pl)
			return bad_target(ctx, w, "option '%.*s' has no value", (int)pl - 1, tok);
		*slot = strndup(tok + pl, len - pl);
		return *slot ? TS_OK
			     : ts_error(ctx, TS_ERR_NOMEM, "build %s: out of memory", w->fname);
	}
	return bad_target(ctx, w, "unknown option '%.*s' (expected -mcpu=, -mattr= or -mtriple=)",
			  (int)len, tok);
}

static ts_status parse_options(ts_ctx *ctx, const where *w, options *o)
{
	const char *p = w->spec + strspn(w->spec, " \t");
	size_t len = strcspn(p, " \t");
	if (len != 4 || strncmp(p, "llvm", 4) != 0)
		return bad_target(ctx, w, "not an LLVM target (expected 'llvm ...')");
	for (p += len;; p += len) {
		p += strspn(p, " \t");
		if (!*p)
			return TS_OK;
		len = strcspn(p, " \t");
		ts_status st = parse_option(ctx, w, p, len, o);
		if (st)
			return st;
	}
}

static ts_status check_cpu(ts_ctx *ctx, const where *w, const char *cpu, const cg_llvm_target *t)
{
	const cg_llvm_names *names = names_of(t->target);
	if (!names || listed(names->cpus, cpu, strlen(cpu)))
		return TS_OK;
	char buf[128];
	return ts_error(ctx, TS_ERR_INVALID,
			"build %s: unknown CPU '%s' for target %.*s (e.g. %s, ...; "
			"`llc -march=%s -mcpu=help` lists them)",
			w->fname, cpu, arch_len(t->triple), t->triple,
			examples(names, buf, sizeof buf), names->target);
}

static ts_status check_features(ts_ctx *ctx, const where *w, const char *attr,
				const cg_llvm_target *t)
{
	const cg_llvm_names *names = names_of(t->target);
	for (const char *p = attr;;) {
		size_t len = strcspn(p, ",");
		if (len < 2 || (p[0] != '+' && p[0] != '-'))
			return bad_target(ctx, w, "feature '%.*s' must be written +name or -name",
					  (int)len, p);
		if (names && !listed(names->features, p + 1, len - 1))
			return bad_target(ctx, w, "unknown feature '%.*s' for target %.*s", (int)len - 1,
					  p + 1, arch_len(t->triple), t->triple);
		p += len;
		if (!*p++)
			return TS_OK;
	}
}

/* Joins a and b with a comma (either may be empty); malloc'd. */
static char *join_features(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *s = malloc(la + lb + 2);
	if (s)
		snprintf(s, la + lb + 2, "%s%s%s", a, la && lb ? "," : "", b);
	return s;
}

/* Fills cpu and features from the options and the host. */
static ts_status resolve_cpu(ts_ctx *ctx, const where *w, const options *o, cg_llvm_target *t)
{
	bool native_cpu = o->cpu && strcmp(o->cpu, "native") == 0;
	bool host = native_cpu || (!o->triple && !o->cpu && !o->attr);
	ts_status st = o->cpu && !native_cpu ? check_cpu(ctx, w, o->cpu, t) : TS_OK;
	if (!st && o->attr)
		st = check_features(ctx, w, o->attr, t);
	if (st)
		return st;
	if (host) {
		char *name = LLVMGetHostCPUName(), *feat = LLVMGetHostCPUFeatures();
		t->cpu = strdup(name);
		t->features = join_features(feat, o->attr ? o->attr : "");
		LLVMDisposeMessage(name);
		LLVMDisposeMessage(feat);
	} else {
		t->cpu = strdup(o->cpu ? o->cpu : "generic");
		t->features = strdup(o->attr ? o->attr : "");
	}
	return t->cpu && t->features ? TS_OK
				     : ts_error(ctx, TS_ERR_NOMEM, "build %s: out of memory", w->fname);
}

static ts_status resolve(ts_ctx *ctx, const where *w, const options *o, cg_llvm_target *t)
{
	char *def = LLVMGetDefaultTargetTriple();
	t->triple = LLVMNormalizeTargetTriple(o->triple ? o->triple : def);
	t->native = same_arch(t->triple, def);
	LLVMDisposeMessage(def);
	char *err = NULL;
	if (LLVMGetTargetFromTriple(t->triple, &t->target, &err)) {
		bad_target(ctx, w, "no LLVM target for triple '%s' (%s)", o->triple,
			   err ? err : "unknown architecture");
		LLVMDisposeMessage(err);
		return TS_ERR_INVALID;
	}
	ts_status st = resolve_cpu(ctx, w, o, t);
	if (st)
		return st;
	size_t n = strlen(t->triple) + strlen(t->cpu) + (o->attr ? strlen(o->attr) : 0) + 40;
	t->str = malloc(n);
	if (!t->str)
		return ts_error(ctx, TS_ERR_NOMEM, "build %s: out of memory", w->fname);
	snprintf(t->str, n, "llvm -mtriple=%s -mcpu=%s%s%s", t->triple, t->cpu,
		 o->attr ? " -mattr=" : "", o->attr ? o->attr : "");
	return TS_OK;
}

ts_status cg_llvm_target_parse(ts_ctx *ctx, const char *fname, const char *spec,
			       cg_llvm_target *t)
{
	memset(t, 0, sizeof(*t));
	cg_llvm_init();
	options o = {0};
	where w = {fname ? fname : "?", spec ? spec : "llvm"};
	ts_status st = parse_options(ctx, &w, &o);
	if (!st)
		st = resolve(ctx, &w, &o, t);
	options_free(&o);
	if (st)
		cg_llvm_target_free(t);
	return st;
}

void cg_llvm_target_free(cg_llvm_target *t)
{
	if (t->triple)
		LLVMDisposeMessage(t->triple);
	free(t->cpu);
	free(t->features);
	free(t->str);
	memset(t, 0, sizeof(*t));
}

LLVMTargetMachineRef cg_llvm_target_machine(const cg_llvm_target *t, LLVMRelocMode reloc,
					    LLVMCodeModel cm)
{
	return LLVMCreateTargetMachine(t->target, t->triple, t->cpu, t->features,
				       LLVMCodeGenLevelAggressive, reloc, cm);
}
