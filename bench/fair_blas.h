/*
 * fair_blas.h - make sure the OpenBLAS baseline runs the kernels meant for
 * this CPU.
 *
 * OpenBLAS 0.3.21 (Debian 12) takes some recent x86 CPUs, and CPUs under
 * some hypervisors, for an older core (a Prescott with SSE3 kernels, or a
 * Haswell on an AVX-512 machine) and runs kernels slower than the CPU
 * allows; a baseline that slow would flatter tessera.  The core type is read
 * when OpenBLAS loads, so when its kernels are below the CPU's vector ISA
 * the process starts again with OPENBLAS_CORETYPE set (SkylakeX with
 * AVX-512, Haswell with AVX2).  An explicit OPENBLAS_CORETYPE is obeyed,
 * with a warning when it is below the CPU.  Call first thing in main().
 */
#ifndef TESSERA_BENCH_FAIR_BLAS_H
#define TESSERA_BENCH_FAIR_BLAS_H

void bench_fair_openblas(char **argv);
/* The core OpenBLAS runs kernels for ("SkylakeX", ...). */
const char *bench_openblas_core(void);

#endif
