/* fair_blas.c - see fair_blas.h. */
#include "fair_blas.h"

#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

char *openblas_get_corename(void);

const char *bench_openblas_core(void)
{
	const char *core = openblas_get_corename();
	return core ? core : "unknown";
}

/* The vector ISA a core's kernels use: 3 AVX-512, 2 AVX2, 1 anything
 * older (Prescott, Nehalem, Sandybridge, ...). */
static int core_level(const char *core)
{
	static const char *const avx512[] = {"skylakex", "cooperlake", "sapphirerapids"};
	static const char *const avx2[] = {"haswell", "zen"};
	for (size_t i = 0; i < sizeof(avx512) / sizeof(*avx512); i++)
		if (strcasecmp(core, avx512[i]) == 0)
			return 3;
	for (size_t i = 0; i < sizeof(avx2) / sizeof(*avx2); i++)
		if (strcasecmp(core, avx2[i]) == 0)
			return 2;
	return 1;
}

void bench_fair_openblas(char **argv)
{
	const char *core = openblas_get_corename();
	if (!core)
		return;
#if defined(__x86_64__)
	int level = __builtin_cpu_supports("avx512f") ? 3 : __builtin_cpu_supports("avx2") ? 2 : 1;
#else
	int level = 1;
#endif
	/* restart only when OpenBLAS picked kernels below what the CPU runs */
	if (level <= core_level(core))
		return;
	if (getenv("OPENBLAS_CORETYPE")) { /* the user's choice, but say what it costs */
		fprintf(stderr, "warning: OPENBLAS_CORETYPE=%s runs OpenBLAS kernels below this CPU's "
			"vector ISA: the OpenBLAS baseline is slower than it could be (unset it for a "
			"fair comparison)\n", getenv("OPENBLAS_CORETYPE"));
		return;
	}
	const char *want = level == 3 ? "SkylakeX" : "Haswell";
	fprintf(stderr, "OpenBLAS took this CPU for a %s; restarting with OPENBLAS_CORETYPE=%s\n",
		core, want);
	setenv("OPENBLAS_CORETYPE", want, 1);
	execv("/proc/self/exe", argv);
	perror("execv"); /* still correct, only with the slower baseline */
}
