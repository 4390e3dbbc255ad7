/*
 * llvm_target.c - target strings for the LLVM backend.
 *
 * "llvm [-mtriple=T] [-mcpu=C] [-mattr=+a,-b]" is resolved against the
 * host: without -mcpu/-mattr/-mtriple the host's CPU name and feature list
 * are used, so the code uses every vector extension the machine has.
 *
 * LLVM aborts the process on some invalid CPU names instead of reporting
 * them, and only prints a warning for unknown features, so names are checked
 * here before any target machine is made.  For x86 (the architecture that
 * tessera targets on the CPU) the check uses the CPU and feature names of
 * LLVM 14's X86 backend; other architectures get only the syntax checks
 * (LLVM warns on stderr about unknown names there and ignores them).
 */
#include "llvm_internal.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const x86_cpus[] = {
	"alderlake", "amdfam10", "athlon", "athlon-4", "athlon-fx", "athlon-mp",
	"athlon-tbird", "athlon-xp", "athlon64", "athlon64-sse3", "atom", "barcelona",
	"bdver1", "bdver2", "bdver3", "bdver4", "bonnell", "broadwell", "btver1",
	"btver2", "c3", "c3-2", "cannonlake", "cascadelake", "cooperlake", "core-avx-i",
	"core-avx2", "core2", "corei7", "corei7-avx", "generic", "geode", "goldmont",
	"goldmont-plus", "haswell", "i386", "i486", "i586", "i686", "icelake-client",
	"icelake-server", "ivybridge", "k6", "k6-2", "k6-3", "k8", "k8-sse3", "knl",
	"knm", "lakemont", "nehalem", "nocona", "opteron", "opteron-sse3", "penryn",
	"pentium", "pentium-m", "pentium-mmx", "pentium2", "pentium3", "pentium3m",
	"pentium4", "pentium4m", "pentiumpro", "prescott", "rocketlake", "sandybridge",
	"sapphirerapids", "silvermont", "skx", "skylake", "skylake-avx512", "slm",
	"tigerlake", "tremont", "westmere", "winchip-c6", "winchip2", "x86-64",
	"x86-64-v2", "x86-64-v3", "x86-64-v4", "yonah", "znver1", "znver2", "znver3",
};

static const char *const x86_features[] = {
	"16bit-mode", "32bit-mode", "3dnow", "3dnowa", "64bit", "64bit-mode", "adx", "aes",
	"amx-bf16", "amx-int8", "amx-tile", "avx", "avx2", "avx512bf16", "avx512bitalg",
	"avx512bw", "avx512cd", "avx512dq", "avx512er", "avx512f", "avx512fp16",
	"avx512ifma", "avx512pf", "avx512vbmi", "avx512vbmi2", "avx512vl", "avx512vnni",
	"avx512vp2intersect", "avx512vpopcntdq", "avxvnni", "bmi", "bmi2", "branchfusion",
	"cldemote", "clflushopt", "clwb", "clzero", "cmov", "crc32", "cx16", "cx8", "enqcmd",
	"ermsb", "f16c", "false-deps-lzcnt-tzcnt", "false-deps-popcnt", "fast-11bytenop",
	"fast-15bytenop", "fast-7bytenop", "fast-bextr", "fast-gather", "fast-hops",
	"fast-lzcnt", "fast-movbe", "fast-scalar-fsqrt", "fast-scalar-shift-masks",
	"fast-shld-rotate", "fast-variable-crosslane-shuffle",
	"fast-variable-perlane-shuffle", "fast-vector-fsqrt", "fast-vector-shift-masks",
	"fma", "fma4", "fsgsbase", "fsrm", "fxsr", "gfni", "hreset", "idivl-to-divb",
	"idivq-to-divl", "invpcid", "kl", "lea-sp", "lea-uses-ag", "lvi-cfi",
	"lvi-load-hardening", "lwp", "lzcnt", "macrofusion", "mmx", "movbe", "movdir64b",
	"movdiri", "mwaitx", "nopl", "pad-short-functions", "pclmul", "pconfig", "pku",
	"popcnt", "prefer-128-bit", "prefer-256-bit", "prefer-mask-registers",
	"prefetchwt1", "prfchw", "ptwrite", "rdpid", "rdrnd", "rdseed", "retpoline",
	"retpoline-external-thunk", "retpoline-indirect-branches",
	"retpoline-indirect-calls", "rtm", "sahf", "serialize", "seses", "sgx", "sha",
	"shstk", "slow-3ops-lea", "slow-incdec", "slow-lea", "slow-pmaddwd", "slow-pmulld",
	"slow-shld", "slow-two-mem-ops", "slow-unaligned-mem-16", "slow-unaligned-mem-32",
	"soft-float", "sse", "sse-unaligned-mem", "sse2", "sse3", "sse4.1", "sse4.2",
	"sse4a", "ssse3", "tagged-globals", "tbm", "tsxldtrk", "uintr", "use-aa",
	"use-glm-div-sqrt-costs", "use-slm-arith-costs", "vaes", "vpclmulqdq",
	"vzeroupper", "waitpkg", "wbnoinvd", "widekl", "x87", "xop", "xsave", "xsavec",
	"xsaveopt", "xsaves",
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

static bool in_list(const char *const *list, size_t n, const char *s, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(list[i]) == len && strncmp(list[i], s, len) == 0)
			return true;
	return false;
}

static bool is_x86(const char *triple)
{
	return strncmp(triple, "x86_64", 6) == 0 ||
	       (triple[0] == 'i' && strncmp(triple + 2, "86", 2) == 0);
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

static ts_status parse_option(ts_ctx *ctx, const char *spec, const char *tok, size_t len,
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
			return ts_error(ctx, TS_ERR_INVALID, "target '%s': option '%.*s' given twice",
					spec, (int)pl - 1, tok);
		if (len == pl)
			return ts_error(ctx, TS_ERR_INVALID, "target '%s': option '%.*s' has no value",
					spec, (int)pl - 1, tok);
		*slot = strndup(tok + pl, len - pl);
		return *slot ? TS_OK : ts_error(ctx, TS_ERR_NOMEM, "target '%s': out of memory", spec);
	}
	return ts_error(ctx, TS_ERR_INVALID,
			"target '%s': unknown option '%.*s' (expected -mcpu=, -mattr= or -mtriple=)",
			spec, (int)len, tok);
}

static ts_status parse_options(ts_ctx *ctx, const char *spec, options *o)
{
	const char *p = spec + strspn(spec, " \t");
	size_t len = strcspn(p, " \t");
	if (len != 4 || strncmp(p, "llvm", 4) != 0)
		return ts_error(ctx, TS_ERR_INVALID, "target '%s': not an LLVM target (expected 'llvm ...')",
				spec);
	for (p += len;; p += len) {
		p += strspn(p, " \t");
		if (!*p)
			return TS_OK;
		len = strcspn(p, " \t");
		ts_status st = parse_option(ctx, spec, p, len, o);
		if (st)
			return st;
	}
}

static ts_status check_features(ts_ctx *ctx, const char *spec, const char *attr, bool x86)
{
	for (const char *p = attr; *p;) {
		size_t len = strcspn(p, ",");
		if (len < 2 || (p[0] != '+' && p[0] != '-'))
			return ts_error(ctx, TS_ERR_INVALID,
					"target '%s': feature '%.*s' must be written +name or -name",
					spec, (int)len, p);
		if (x86 && !in_list(x86_features, TS_COUNT_OF(x86_features), p + 1, len - 1))
			return ts_error(ctx, TS_ERR_INVALID, "target '%s': unknown feature '%.*s'",
					spec, (int)len - 1, p + 1);
		p += len;
		p += *p == ',';
	}
	return TS_OK;
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
static ts_status resolve_cpu(ts_ctx *ctx, const char *spec, const options *o, cg_llvm_target *t)
{
	bool native_cpu = o->cpu && strcmp(o->cpu, "native") == 0;
	bool host = native_cpu || (!o->triple && !o->cpu && !o->attr);
	if (o->cpu && !native_cpu && is_x86(t->triple) &&
	    !in_list(x86_cpus, TS_COUNT_OF(x86_cpus), o->cpu, strlen(o->cpu)))
		return ts_error(ctx, TS_ERR_INVALID, "target '%s': unknown CPU '%s'", spec, o->cpu);
	if (o->attr) {
		ts_status st = check_features(ctx, spec, o->attr, is_x86(t->triple));
		if (st)
			return st;
	}
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
	return t->cpu && t->features ? TS_OK : ts_error(ctx, TS_ERR_NOMEM, "target '%s': out of memory", spec);
}

static ts_status resolve(ts_ctx *ctx, const char *spec, const options *o, cg_llvm_target *t)
{
	char *def = LLVMGetDefaultTargetTriple();
	t->triple = LLVMNormalizeTargetTriple(o->triple ? o->triple : def);
	t->native = same_arch(t->triple, def);
	LLVMDisposeMessage(def);
	char *err = NULL;
	if (LLVMGetTargetFromTriple(t->triple, &t->target, &err)) {
		ts_error(ctx, TS_ERR_INVALID, "target '%s': %s", spec, err ? err : "unknown triple");
		LLVMDisposeMessage(err);
		return TS_ERR_INVALID;
	}
	ts_status st = resolve_cpu(ctx, spec, o, t);
	if (st)
		return st;
	size_t n = strlen(t->triple) + strlen(t->cpu) + (o->attr ? strlen(o->attr) : 0) + 40;
	t->str = malloc(n);
	if (!t->str)
		return ts_error(ctx, TS_ERR_NOMEM, "target '%s': out of memory", spec);
	snprintf(t->str, n, "llvm -mtriple=%s -mcpu=%s%s%s", t->triple, t->cpu,
		 o->attr ? " -mattr=" : "", o->attr ? o->attr : "");
	return TS_OK;
}

ts_status cg_llvm_target_parse(ts_ctx *ctx, const char *spec, cg_llvm_target *t)
{
	memset(t, 0, sizeof(*t));
	cg_llvm_init();
	options o = {0};
	const char *s = spec ? spec : "llvm";
	ts_status st = parse_options(ctx, s, &o);
	if (!st)
		st = resolve(ctx, s, &o, t);
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
