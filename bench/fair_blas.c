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

void bench_fair_openblas(char **argv)
{
	const char *core = openblas_get_corename();
	if (getenv("OPENBLAS_CORETYPE") || !core || strcasecmp(core, "prescott") != 0)
		return;
#if defined(__x86_64__)
	const char *want = __builtin_cpu_supports("avx512f") ? "SkylakeX"
			   : __builtin_cpu_supports("avx2")   ? "Haswell"
							      : NULL;
#else
	const char *want = NULL;
#endif
	if (!want)
		return;
	fprintf(stderr, "OpenBLAS took this CPU for a %s; restarting with OPENBLAS_CORETYPE=%s\n",
		core, want);
	setenv("OPENBLAS_CORETYPE", want, 1);
	execv("/proc/self/exe", argv);
	perror("execv"); /* still correct, only with the slower baseline */
}
