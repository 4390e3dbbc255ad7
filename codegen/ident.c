/*
 * ident.c - C identifiers from tessera names (see ident.h).
 *
 * The reserved table lists every word that would break or change the meaning
 * of generated code if a tensor were named after it.  It errs on the side of
 * renaming: a tensor called "min" costs nothing more than an underscore.
 */
#include "ident.h"

#include <string.h>

static const char *const reserved[] = {
	/* C11 */
	"auto", "break", "case", "char", "const", "continue", "default", "do", "double",
	"else", "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long",
	"register", "restrict", "return", "short", "signed", "sizeof", "static", "struct",
	"switch", "typedef", "union", "unsigned", "void", "volatile", "while",
	/* C++ (CUDA C is C++) and alternative tokens */
	"alignas", "alignof", "and", "and_eq", "asm", "bitand", "bitor", "bool", "catch",
	"char16_t", "char32_t", "char8_t", "class", "compl", "concept", "const_cast",
	"consteval", "constexpr", "constinit", "co_await", "co_return", "co_yield", "decltype",
	"delete", "dynamic_cast", "explicit", "export", "false", "friend", "mutable",
	"namespace", "new", "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq",
	"private", "protected", "public", "reinterpret_cast", "requires", "static_assert",
	"static_cast", "template", "this", "thread_local", "throw", "true", "try", "typeid",
	"typename", "using", "virtual", "wchar_t", "xor", "xor_eq",
	/* stdint.h, stddef.h, stdbool.h and friends */
	"int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t",
	"uint64_t", "intptr_t", "uintptr_t", "intmax_t", "uintmax_t", "size_t", "ssize_t",
	"ptrdiff_t", "NULL", "offsetof", "errno", "assert", "FILE", "stdin", "stdout", "stderr",
	/* math.h as generated code calls it */
	"exp", "expf", "exp2", "exp2f", "log", "logf", "log2", "log2f", "sqrt", "sqrtf",
	"rsqrtf", "tanh", "tanhf", "erf", "erff", "pow", "powf", "fabs", "fabsf", "floor",
	"floorf", "ceil", "ceilf", "ldexp", "ldexpf", "fma", "fmaf", "fmin", "fminf", "fmax",
	"fmaxf", "isnan", "isinf", "NAN", "INFINITY", "HUGE_VAL", "abs", "min", "max",
	/* stdlib.h, string.h, stdio.h */
	"malloc", "calloc", "realloc", "free", "aligned_alloc", "memset", "memcpy", "memmove",
	"printf", "exit", "abort",
	/* CUDA */
	"blockIdx", "threadIdx", "blockDim", "gridDim", "warpSize", "float2", "float4",
	"make_float2", "make_float4", "half", "half2", "dim3",
	/* names generated code defines */
	"main", "args",
};

bool cg_ident_reserved(const char *id)
{
	for (size_t i = 0; i < TS_COUNT_OF(reserved); i++)
		if (strcmp(reserved[i], id) == 0)
			return true;
	return false;
}

static bool ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

/* Names the implementation reserves ("__x", "_X") and those of tessera's
 * generated helpers and runtime ("ts_..."). */
static bool reserved_prefix(const char *s)
{
	return (s[0] == '_' && (s[1] == '_' || (s[1] >= 'A' && s[1] <= 'Z'))) ||
	       strncmp(s, "ts_", 3) == 0;
}

const char *cg_c_ident(ts_ctx *ctx, const char *name)
{
	const char *s = name ? name : "";
	size_t n = strlen(s);
	char *r = ts_alloc(ctx, n + 3);
	if (!r)
		return NULL;
	char *p = r;
	if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_') ||
	    reserved_prefix(s))
		*p++ = 'v';
	for (size_t i = 0; i < n; i++)
		*p++ = ident_char(s[i]) ? s[i] : '_';
	*p = '\0';
	if (cg_ident_reserved(r))
		*p++ = '_', *p = '\0';
	return r;
}
