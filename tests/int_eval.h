/*
 * int_eval.h - brute-force evaluation of int32 index expressions with ir.h's
 * semantics (wrapping arithmetic; x / 0 = x % 0 = 0), independent of the
 * library's evaluators, for checking the simplifier and interval analysis
 * point by point (test_simplify, fuzz_simplify).
 */
#ifndef TESSERA_TESTS_INT_EVAL_H
#define TESSERA_TESTS_INT_EVAL_H

#include "ir.h"

typedef struct ie_env {
	int nv;
	ts_expr *const *vars;   /* the variables, by pointer ... */
	const int64_t *vals;    /* ... and their values */
	bool div0;              /* a division or modulo by zero was evaluated */
	const ts_expr *unknown; /* the first node it could not evaluate, or NULL */
} ie_env;

/* The value of e (int32 or bool) at v's point; 0 for an unknown node, which
 * is recorded in v->unknown. */
int64_t ie_eval(const ts_expr *e, ie_env *v);

#endif
