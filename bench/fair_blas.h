/*
 * fair_blas.h - make sure the OpenBLAS baseline runs the kernels meant for
 * this CPU.
 *
 * OpenBLAS 0.3.21 (Debian 12) takes some recent x86 CPUs, and CPUs under
 * some hypervisors, for a Prescott and runs its SSE3 kernels at a fraction
 * of their speed; a baseline that slow would flatter tessera.  The core type
 * is read when OpenBLAS loads, so the process starts again with
 * OPENBLAS_CORETYPE set (SkylakeX with AVX-512, Haswell with AVX2).  An
 * explicit OPENBLAS_CORETYPE is left alone.  Call first thing in main().
 */
#ifndef TESSERA_BENCH_FAIR_BLAS_H
#define TESSERA_BENCH_FAIR_BLAS_H

void bench_fair_openblas(char **argv);
/* The core OpenBLAS runs kernels for ("SkylakeX", ...). */
const char *bench_openblas_core(void);

#endif
