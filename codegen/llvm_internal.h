/*
 * llvm_internal.h - what the files of the LLVM backend share: the resolved
 * target (llvm_target.c) and the module builder (llvm_emit.c), used by the
 * compile driver (llvm_jit.c).  Not part of the public API (see llvm.h).
 */
#ifndef TESSERA_CODEGEN_LLVM_INTERNAL_H
#define TESSERA_CODEGEN_LLVM_INTERNAL_H

#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

#include "ir.h"

/* A parsed and validated target string.  Strings are malloc'd. */
typedef struct cg_llvm_target {
	char *triple;   /* normalized */
	char *cpu;
	char *features; /* "+avx2,+fma" style, may be empty */
	char *str;      /* printable: "llvm -mtriple=... -mcpu=... [-mattr=...]" */
	LLVMTargetRef target;
	bool native;    /* the host's architecture: the JIT can run it */
	char vecmath;   /* libmvec variant for vector math (vecmath.h): 'e', 'd',
			 * 'b', or 0 for none (not x86-64, or not the host) */
} cg_llvm_target;

/* Registers LLVM's targets once per process. */
void cg_llvm_init(void);

/* Parses spec (NULL: "llvm") for function fname; on failure records an
 * error "build <fname>: ..." naming the bad name or option (CPU and
 * feature names are checked against the linked LLVM's lists) and returns
 * non-zero with *t zeroed. */
ts_status cg_llvm_target_parse(ts_ctx *ctx, const char *fname, const char *spec,
			       cg_llvm_target *t);
void cg_llvm_target_free(cg_llvm_target *t);
/* A machine for t at -O3 with the given relocation and code model. */
LLVMTargetMachineRef cg_llvm_target_machine(const cg_llvm_target *t, LLVMRelocMode reloc,
					    LLVMCodeModel cm);

/* Builds f (already vectorized) into mod, which has t's data layout and
 * triple (vecmath: the libmvec variant vector math may call, or 0),
 * triple: an internal always-inline function over noalias buffer pointers
 * and the exported wrapper `int32_t <symbol>(void **args)`, symbol being
 * f's name as a C identifier (ident.h).  Returns TS_OK or an error naming
 * the function (f->name) and the construct. */
ts_status cg_llvm_emit(ts_ctx *ctx, const ts_func *f, const char *symbol, ts_stmt *body,
		       LLVMModuleRef mod, char vecmath);

#endif
