/*
 * verify.h - checks the invariants lowered IR must keep (see verify.c).
 */
#ifndef TESSERA_IR_VERIFY_H
#define TESSERA_IR_VERIFY_H

#include "ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* TS_OK, or TS_ERR_INTERNAL naming the pass and the broken invariant;
 * TS_ERR_INVALID for a NULL ctx, f or pass, or a bad parameter list;
 * TS_ERR_NOMEM when memory for the scope stacks runs out (scopes nest as
 * deep as the statements). */
ts_status ir_verify_func(ts_ctx *ctx, const ts_func *f, const char *pass);

#ifdef __cplusplus
}
#endif

#endif
