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
	{"riscv64", "generic-rv64, sifive-u74"},
	{"riscv32", "generic-rv32, sifive-e31"},
};

/* CPUs of the other word size: LLVM 14 aborts the process when it compiles
 * a function for them on these targets ("64-bit code requested on a
 * subtarget that doesn't support it!", "RV64 target requires an RV64
 * CPU").  Found by compiling one function with `llc -march=T -mcpu=C` for
 * every CPU of the 64-bit targets and of riscv32; old CPUs, so the lists
 * do not grow with new LLVM releases. */
static const struct {
	const char *target, *cpus;
} wrong_width_cpus[] = {
	{"x86-64", " athlon athlon-4 athlon-mp athlon-tbird athlon-xp c3 c3-2 geode i386 i486 "
		   "i586 i686 k6 k6-2 k6-3 lakemont pentium pentium-m pentium-mmx pentium2 "
		   "pentium3 pentium3m pentium4 pentium4m pentiumpro prescott winchip-c6 "
		   "winchip2 yonah "},
	{"mips64", " mips1 mips2 mips32 mips32r2 mips32r3 mips32r5 mips32r6 mips5 p5600 "},
	{"mips64el", " mips1 mips2 mips32 mips32r2 mips32r3 mips32r5 mips32r6 mips5 p5600 "},
	{"ppc64", " e500 "},
	{"ppc64le", " e500 "},
	{"riscv32", " generic-rv64 rocket-rv64 sifive-7-rv64 sifive-s21 sifive-s51 sifive-s54 "
		    "sifive-s76 sifive-u54 sifive-u74 "},
	{"riscv64", " generic-rv32 rocket-rv32 sifive-7-rv32 sifive-e20 sifive-e21 sifive-e24 "
		    "sifive-e31 sifive-e34 sifive-e76 "},
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

/* Component k of a triple (arch-vendor-os-environment); length 0 where
 * absent. */
static size_t triple_part(const char *triple, int k, const char **part)
{
	const char *p = triple;
	for (int i = 0; i < k && *p; i++)
		p += strcspn(p, "-") + (p[strcspn(p, "-")] == '-');
	*part = p;
	return strcspn(p, "-");
}

static bool same_part(const char *a, const char *b, int k, bool unknown_matches)
{
	const char *pa, *pb;
	size_t la = triple_part(a, k, &pa), lb = triple_part(b, k, &pb);
	if (unknown_matches && (la == 0 || (la == 7 && strncmp(pa, "unknown", 7) == 0)))
		return true;
	return la == lb && strncmp(pa, pb, la) == 0;
}

/* Whether code for triple can be called here: the host's architecture,
 * operating system and environment (Windows or x32 code on x86-64 Linux
 * takes its arguments elsewhere), an unnamed OS or environment meaning
 * the host's. */
static bool runs_here(const char *triple, const char *host)
{
	return same_part(triple, host, 0, false) && same_part(triple, host, 2, true) &&
	       same_part(triple, host, 3, true);
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

static bool wrong_width(const char *target, const char *cpu)
{
	for (size_t i = 0; i < TS_COUNT_OF(wrong_width_cpus); i++)
		if (strcmp(wrong_width_cpus[i].target, target) == 0)
			return listed(wrong_width_cpus[i].cpus, cpu, strlen(cpu));
	return false;
}

static ts_status check_cpu(ts_ctx *ctx, const where *w, const char *cpu, const cg_llvm_target *t)
{
	const cg_llvm_names *names = names_of(t->target);
	char buf[128];
	if (names && wrong_width(names->target, cpu))
		return ts_error(ctx, TS_ERR_INVALID,
				"build %s: CPU '%s' cannot generate code for target %.*s (e.g. %s, ...; "
				"it lacks the triple's word size)",
				w->fname, cpu, arch_len(t->triple), t->triple,
				examples(names, buf, sizeof buf));
	if (!names || listed(names->cpus, cpu, strlen(cpu)))
		return TS_OK;
	return ts_error(ctx, TS_ERR_INVALID,
			"build %s: unknown CPU '%s' for target %.*s (e.g. %s, ...; "
			"`llc -march=%s -mcpu=help` lists them)",
			w->fname, cpu, arch_len(t->triple), t->triple,
			examples(names, buf, sizeof buf), names->target);
}

/* The CPU used when none is named: "generic", where the target has one. */
static ts_status check_default_cpu(ts_ctx *ctx, const where *w, const cg_llvm_target *t)
{
	const cg_llvm_names *names = names_of(t->target);
	if (!names || listed(names->cpus, "generic", 7))
		return TS_OK;
	char buf[128];
	return bad_target(ctx, w, "%.*s has no generic CPU; name one with -mcpu= (e.g. %s, ...)",
			  arch_len(t->triple), t->triple, examples(names, buf, sizeof buf));
}

/* The word size and mode features are set by LLVM from the triple;
 * clearing "64bit" on a 64-bit triple aborts the process. */
static bool mode_feature(const char *name, size_t len)
{
	return (len == 5 && strncmp(name, "64bit", 5) == 0) ||
	       (len > 8 && strncmp(name + len - 8, "bit-mode", 8) == 0);
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
		if (mode_feature(p + 1, len - 1))
			return bad_target(ctx, w, "feature '%.*s' follows from the triple; it cannot be "
					  "set with -mattr", (int)len - 1, p + 1);
		if (names && !listed(names->features, p + 1, len - 1))
			return bad_target(ctx, w, "unknown feature '%.*s' for target %.*s", (int)len - 1,
					  p + 1, arch_len(t->triple), t->triple);
		p += len;
		if (!*p++)
			return TS_OK;
	}
}

/* LLVM targets whose code generator takes tessera's functions: CPUs with
 * a C-like ABI.  Others (GPUs, BPF, XCore, ...) abort the process on some
 * of them ("Cannot select", "unsupported alignment") instead of reporting
 * an error; tessera's GPU code goes through the "cuda" target. */
static const char *const cpu_targets[] = {
	"x86-64", "x86", "aarch64", "aarch64_be", "aarch64_32", "arm64", "arm64_32", "arm", "armeb",
	"thumb", "thumbeb", "riscv32", "riscv64", "ppc32", "ppc32le", "ppc64", "ppc64le", "systemz",
	"mips", "mipsel", "mips64", "mips64el", "wasm32", "wasm64", "sparc", "sparcv9", "sparcel",
};

static ts_status check_cpu_target(ts_ctx *ctx, const where *w, const cg_llvm_target *t)
{
	const char *name = LLVMGetTargetName(t->target);
	for (size_t i = 0; name && i < sizeof cpu_targets / sizeof cpu_targets[0]; i++)
		if (!strcmp(name, cpu_targets[i]))
			return TS_OK;
	return bad_target(ctx, w, "LLVM target %s is not a CPU tessera generates code for (x86-64, x86, "
			  "aarch64, arm, riscv, ppc, systemz, mips, wasm, sparc); GPU code comes from the "
			  "'cuda' target", name ? name : "?");
}

/* Features that change how floats are passed and returned: code built
 * with them does not follow the host's ABI, which the JIT calls with
 * (x86-64 returns floats in SSE registers: LLVM aborts on -sse, and
 * soft-float code smashes the caller's stack). */
static ts_status check_abi_features(ts_ctx *ctx, const where *w, const char *attr,
				    const cg_llvm_target *t)
{
	bool x86_64 = !strncmp(t->triple, "x86_64", 6);
	for (const char *p = attr; p && *p;) {
		size_t len = strcspn(p, ",");
		bool off = p[0] == '-', on = p[0] == '+';
		const char *n = p + 1;
		size_t nl = len ? len - 1 : 0;
		if ((x86_64 && off && ((nl == 3 && !strncmp(n, "sse", 3)) || (nl == 4 && !strncmp(n, "sse2", 4)))) ||
		    (t->native && on && nl == 10 && !strncmp(n, "soft-float", 10)))
			return bad_target(ctx, w, "feature '%.*s' changes how floats are passed; %s needs the "
					  "platform's float ABI", (int)len, p, t->native ? "code run on this machine"
					  : "x86-64 code");
		p += len;
		if (*p)
			p++;
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
static ts_status resolve_cpu(ts_ctx *ctx, const where *w, const options *o, cg_llvm_target *t)
{
	bool native_cpu = o->cpu && strcmp(o->cpu, "native") == 0;
	bool host = native_cpu || (!o->triple && !o->cpu && !o->attr);
	if (native_cpu && !t->native)
		return bad_target(ctx, w, "-mcpu=native names this machine's CPU, which does not "
				  "run code for %s", t->triple);
	ts_status st = o->cpu && !native_cpu ? check_cpu(ctx, w, o->cpu, t)
		       : !host && !o->cpu ? check_default_cpu(ctx, w, t)
					  : TS_OK;
	if (!st && o->attr)
		st = check_features(ctx, w, o->attr, t);
	if (!st && o->attr)
		st = check_abi_features(ctx, w, o->attr, t);
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

/* Whether feature `name` ends up on in a "+a,-b,..." list (the last
 * mention wins, as in LLVM). */
static bool feature_on(const char *features, const char *name)
{
	bool on = false;
	size_t n = strlen(name);
	for (const char *p = features; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if ((p[0] == '+' || p[0] == '-') && strncmp(p + 1, name, n) == 0 &&
		    (p[n + 1] == ',' || p[n + 1] == '\0'))
			on = p[0] == '+';
	return on;
}

/* The libmvec variant the JIT can call on this host (vecmath.h). */
static char vecmath_isa(const cg_llvm_target *t)
{
	if (!t->native || strncmp(t->triple, "x86_64", 6) != 0)
		return 0;
	return feature_on(t->features, "avx512f") ? 'e' : feature_on(t->features, "avx2") ? 'd' : 'b';
}

static ts_status resolve(ts_ctx *ctx, const where *w, const options *o, cg_llvm_target *t)
{
	char *def = LLVMGetDefaultTargetTriple();
	t->triple = LLVMNormalizeTargetTriple(o->triple ? o->triple : def);
	t->native = runs_here(t->triple, def);
	LLVMDisposeMessage(def);
	char *err = NULL;
	if (LLVMGetTargetFromTriple(t->triple, &t->target, &err)) {
		bad_target(ctx, w, "no LLVM target for triple '%s' (%s)", o->triple,
			   err ? err : "unknown architecture");
		LLVMDisposeMessage(err);
		return TS_ERR_INVALID;
	}
	ts_status st = check_cpu_target(ctx, w, t);
	if (!st)
		st = resolve_cpu(ctx, w, o, t);
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
	if (!st)
		t->vecmath = vecmath_isa(t);
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
