/*
 * vecmath.c - names of glibc's libmvec functions (see vecmath.h).
 */
#include "vecmath.h"

#include <stdio.h>

static const struct {
	ir_intrinsic op;
	const char *name; /* the double version; float appends 'f' */
	int nargs;
} funcs[] = {
	{IR_INTRIN_EXP, "exp", 1},   {IR_INTRIN_LOG, "log", 1}, {IR_INTRIN_EXP2, "exp2", 1},
	{IR_INTRIN_POW, "pow", 2},   {IR_INTRIN_TANH, "tanh", 1}, {IR_INTRIN_ERF, "erf", 1},
};

static const char isas[] = "bde";

bool cg_vecmath_has(ir_intrinsic op)
{
	for (size_t i = 0; i < TS_COUNT_OF(funcs); i++)
		if (funcs[i].op == op)
			return true;
	return false;
}

int cg_vecmath_lanes(char isa, int bits)
{
	if (bits != 32 && bits != 64)
		return 0;
	int per128 = 128 / bits;
	switch (isa) {
	case 'b': return per128;
	case 'd': return 2 * per128;
	case 'e': return 4 * per128;
	default: return 0;
	}
}

const char *cg_vecmath_symbol(char isa, ir_intrinsic op, int bits, char buf[48])
{
	int lanes = cg_vecmath_lanes(isa, bits);
	for (size_t i = 0; i < TS_COUNT_OF(funcs) && lanes; i++)
		if (funcs[i].op == op) {
			snprintf(buf, 48, "_ZGV%cN%d%s_%s%s", isa, lanes, funcs[i].nargs == 2 ? "vv" : "v",
				 funcs[i].name, bits == 32 ? "f" : "");
			return buf;
		}
	return NULL;
}

const char *cg_vecmath_symbol_at(int i, char buf[48])
{
	int per_isa = (int)TS_COUNT_OF(funcs) * 2, nisa = (int)(sizeof(isas) - 1);
	if (i < 0 || i >= per_isa * nisa)
		return NULL;
	int f = i % per_isa;
	return cg_vecmath_symbol(isas[i / per_isa], funcs[f / 2].op, f % 2 ? 64 : 32, buf);
}
