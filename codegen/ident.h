/*
 * ident.h - C identifiers from tessera names.
 *
 * Tensor, buffer, variable and function names are free text ("i.outer",
 * a name holding a comment end and code, "float", "3d", "é").  Generated C and CUDA C, LLVM
 * symbols and exported headers need identifiers that compile and cannot
 * collide with the language or the libraries the code uses, so every name
 * goes through cg_c_ident before it is printed as code or as a comment.
 */
#ifndef TESSERA_CODEGEN_IDENT_H
#define TESSERA_CODEGEN_IDENT_H

#include <stdbool.h>

#include "ir.h"

/* An identifier for `name` (arena string): characters other than ASCII
 * letters, digits and '_' become '_' (each byte of a UTF-8 sequence, a
 * space, a newline, a comment delimiter); a name that is empty or starts
 * with a digit gets a 'v' in front, as does one starting with "__" or '_'
 * and a capital (reserved for the implementation) or with "ts_" (tessera's
 * helpers and runtime: "ts_parallel_for" becomes "vts_parallel_for"); a
 * C, C++ or CUDA keyword
 * or a known library symbol (cg_ident_reserved) gets a '_' appended.
 * Ordinary names map to themselves, and the result is never reserved.
 * Distinct names can map to one identifier: callers that need uniqueness
 * (c_emit.c) add suffixes. */
const char *cg_c_ident(ts_ctx *ctx, const char *name);

/* Whether an identifier is a C/C++/CUDA keyword, or a type, macro or
 * function of the headers generated code includes (stdint.h, math.h,
 * stdlib.h, string.h, the CUDA runtime), or a name generated code uses
 * itself ("main", "args"). */
bool cg_ident_reserved(const char *id);

#endif
