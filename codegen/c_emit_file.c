/*
 * c_emit_file.c - the text around the function the C emitter (c_emit.c)
 * walks: the helpers its expressions asked for (guarded divisions,
 * saturating casts, wrapping arithmetic, NaN-aware min and max), the 16-bit
 * float conversions, what tensorized and double-buffered kernels need,
 * the signature with its shared buffers, and the packed wrapper.
 */
#include <math.h>

#include "c_emit_impl.h"

/* ---- helpers emitted on demand ------------------------------------------- */

const char *const cg_ce_type_suffix[T_COUNT] = {
	"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64", "bool", "f16", "bf16",
};

const char *const cg_ce_helper_name[H_COUNT] = {
	"floordiv", "floormod", "min", "max", "sigmoid", "truncdiv_z", "truncmod_z",
	"floordiv_z", "floormod_z", "cast_f32", "cast_f64", "add_wrap", "sub_wrap", "mul_wrap",
	"fsub",
};

/* The body of a _z division helper: ir.h's answers for b = 0 and b = -1
 * first, then the operator, which can no longer trap.  0 - a is computed
 * unsigned so that MIN / -1 wraps instead of overflowing. */
static void emit_div_z(emitter *em, ts_sbuf *sb, int h, int ti)
{
	const char *t = em->d->type[ti];
	bool sg = ti <= T_I64, div = h == H_TRUNCDIV_Z || h == H_FLOORDIV_Z;
	if (!sg) {
		ts_sb_printf(sb, "  return b == 0 ? 0 : a %c b;\n", div ? '/' : '%');
		return;
	}
	if (div)
		ts_sb_printf(sb, "  if (b == 0)\n    return 0;\n"
				 "  if (b == -1)\n    return (%s)(0 - (%s)a);\n", t,
			     em->d->type[ti - T_I8 + T_U8]);
	else
		ts_sb_puts(sb, "  if (b == 0 || b == -1)\n    return 0;\n");
	switch (h) {
	case H_TRUNCDIV_Z: ts_sb_puts(sb, "  return a / b;\n"); break;
	case H_TRUNCMOD_Z: ts_sb_puts(sb, "  return a % b;\n"); break;
	case H_FLOORDIV_Z:
		ts_sb_printf(sb, "  %s q = a / b;\n"
				 "  return (q * b != a && (a < 0) != (b < 0)) ? q - 1 : q;\n", t);
		break;
	default:
		ts_sb_printf(sb, "  %s r = a %% b;\n"
				 "  return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;\n", t);
		break;
	}
}

/* The body of a cast helper: NaN is 0, values beyond the type saturate
 * (ir.h).  The bounds compared with are powers of two, exact in float. */
static void emit_cast(emitter *em, ts_sbuf *sb, int h, int ti)
{
	static const char *const lo[T_COUNT] = {
		[T_I8] = "-128", [T_I16] = "-32768", [T_I32] = "(-2147483647 - 1)",
		[T_I64] = "(-9223372036854775807LL - 1)"};
	static const char *const hi[T_COUNT] = {
		[T_I8] = "127", [T_I16] = "32767", [T_I32] = "2147483647",
		[T_I64] = "9223372036854775807LL", [T_U8] = "255", [T_U16] = "65535",
		[T_U32] = "4294967295u", [T_U64] = "18446744073709551615ull"};
	static const int bits[T_COUNT] = {8, 16, 32, 64, 8, 16, 32, 64};
	const char *f = h == H_CAST_F32 ? "f" : "";
	bool sg = ti <= T_I64;
	double end = ldexp(1.0, sg ? bits[ti] - 1 : bits[ti]); /* max + 1 */
	if (sg)
		ts_sb_printf(sb, "  if (a != a)\n    return 0;\n"
				 "  if (a <= -%.1f%s)\n    return %s;\n", end, f, lo[ti]);
	else
		ts_sb_puts(sb, "  if (!(a > 0))\n    return 0;\n"); /* NaN too */
	ts_sb_printf(sb, "  if (a >= %.1f%s)\n    return %s;\n  return (%s)a;\n", end, f, hi[ti],
		     em->d->type[ti]);
}

static void emit_helper(emitter *em, ts_sbuf *sb, int h, int ti)
{
	const char *t = em->d->type[ti], *q = em->d->helper_qual, *sx = cg_ce_type_suffix[ti];
	if (h == H_CAST_F32 || h == H_CAST_F64)
		ts_sb_printf(sb, "\n%s %s ts_%s_%s(%s a", q, t, cg_ce_helper_name[h], sx,
			     em->d->type[h == H_CAST_F32 ? T_F32 : T_F64]);
	else
		ts_sb_printf(sb, "\n%s %s ts_%s_%s(%s a", q, t, cg_ce_helper_name[h], sx, t);
	if (h != H_SIGMOID && h != H_CAST_F32 && h != H_CAST_F64)
		ts_sb_printf(sb, ", %s b", t);
	ts_sb_puts(sb, ")\n{\n");
	switch (h) {
	case H_FLOORDIV:
		ts_sb_printf(sb, "  %s q = a / b;\n"
				 "  return (q * b != a && (a < 0) != (b < 0)) ? q - 1 : q;\n", t);
		break;
	case H_FLOORMOD:
		ts_sb_printf(sb, "  %s r = a %% b;\n"
				 "  return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;\n", t);
		break;
	case H_MIN: case H_MAX:
		/* floats as ir.h says: a NaN operand (signalling too, which libm's
		 * fmin returns as NaN) is ignored; equal operands give b */
		if (ti == T_F32 || ti == T_F64)
			ts_sb_puts(sb, "  if (b != b)\n    return a;\n  if (a != a)\n    return b;\n");
		ts_sb_printf(sb, "  return a %c b ? a : b;\n", h == H_MIN ? '<' : '>');
		break;
	case H_SIGMOID:
		if (ti == T_F32)
			ts_sb_puts(sb, "  return 1.0f / (1.0f + expf(-a));\n");
		else
			ts_sb_puts(sb, "  return 1.0 / (1.0 + exp(-a));\n");
		break;
	case H_TRUNCDIV_Z: case H_TRUNCMOD_Z: case H_FLOORDIV_Z: case H_FLOORMOD_Z:
		emit_div_z(em, sb, h, ti);
		break;
	case H_CAST_F32: case H_CAST_F64:
		emit_cast(em, sb, h, ti);
		break;
	case H_FSUB:
		ts_sb_puts(sb, "  return a - b;\n");
		break;
	case H_ADD_WRAP: case H_SUB_WRAP: case H_MUL_WRAP: {
		const char *u = em->d->type[ti - T_I8 + T_U8];
		ts_sb_printf(sb, "  return (%s)((%s)a %c (%s)b);\n", em->d->type[ti], u,
			     "+-*"[h - H_ADD_WRAP], u);
		break;
	}
	}
	ts_sb_puts(sb, "}\n");
}

/* ---- the function's frame ------------------------------------------------ */

static void signature(emitter *em, ts_sbuf *sb)
{
	const cg_launch *l = &em->launch;
	ts_sb_printf(sb, "\n%svoid ", em->d->func_qual);
	if (em->d->launch_bounds)
		ts_sb_printf(sb, "__launch_bounds__(%lld) ",
			     (long long)(l->block[0] * l->block[1] * l->block[2]));
	ts_sb_printf(sb, "%s(", em->fname);
	for (int i = 0; i < em->f->nparams; i++) {
		const ts_buffer *b = em->f->params[i];
		ts_sb_printf(sb, "%s%s *%s %s", i ? ", " : "", cg_ce_ctype(em, b->dtype), em->d->restrict_kw,
			     cg_ce_lookup(em, b));
	}
	ts_sb_puts(sb, em->f->nparams ? ")\n{\n" : "void)\n{\n");
}

static void packed(emitter *em, ts_sbuf *sb)
{
	ts_sb_printf(sb, "\nint32_t %s_packed(void **args)\n{\n", em->fname);
	if (em->f->nparams == 0)
		ts_sb_puts(sb, "  (void)args;\n");
	ts_sb_printf(sb, "  %s(", em->fname);
	for (int i = 0; i < em->f->nparams; i++) {
		const char *t = cg_ce_ctype(em, em->f->params[i]->dtype);
		ts_sb_printf(sb, "%s(%s *)args[%d]", i ? ", " : "", t, i);
	}
	ts_sb_puts(sb, ");\n  return 0;\n}\n");
}

/* ---- what the body may call ---------------------------------------------- */

/* The 16-bit float conversions: float16 as the reference evaluator
 * rounds (to nearest even, overflow to infinity) in plain C, with PTX's
 * cvt on a GPU; bfloat16 by rounding the float's upper half. */
static const char *const conv16_c[2][C16_COUNT] = {
	{"float ts_f16_to_f32(uint16_t h)\n{\n"
	 "  int e = (h >> 10) & 0x1f;\n"
	 "  float f = e == 0 ? ldexpf((float)(h & 0x3ff), -24)\n"
	 "          : e == 31 ? ((h & 0x3ff) ? NAN : INFINITY)\n"
	 "          : ldexpf((float)((h & 0x3ff) | 0x400), e - 25);\n"
	 "  return (h >> 15) ? -f : f;\n}\n",
	 "uint16_t ts_f32_to_f16(float f)\n{\n"
	 "  uint16_t sign = signbit(f) ? 0x8000 : 0;\n"
	 "  if (isnan(f))\n    return sign | 0x7e00;\n"
	 "  float a = fabsf(f);\n"
	 "  if (a >= 65520.0f)\n    return sign | 0x7c00;\n"
	 "  if (a < 0x1p-25f)\n    return sign;\n"
	 "  int e;\n  frexpf(a, &e);\n  int exp = e + 14;\n"
	 "  if (exp <= 0) /* subnormal: units of 2^-24 */\n"
	 "    return sign | (uint16_t)nearbyintf(ldexpf(a, 24));\n"
	 "  uint32_t man = (uint32_t)nearbyintf(ldexpf(a, 11 - e));\n"
	 "  if (man == 2048) {\n    man = 1024;\n    exp++;\n  }\n"
	 "  if (exp >= 31)\n    return sign | 0x7c00;\n"
	 "  return sign | (uint16_t)(exp << 10) | (uint16_t)(man & 0x3ff);\n}\n",
	 "float ts_rh_f16(float x)\n{\n  return ts_f16_to_f32(ts_f32_to_f16(x));\n}\n"},
	{"float ts_bf16_to_f32(uint16_t h)\n{\n"
	 "  union { uint32_t u; float f; } v = {(uint32_t)h << 16};\n  return v.f;\n}\n",
	 "uint16_t ts_f32_to_bf16(float f)\n{\n"
	 "  union { float f; uint32_t u; } v = {f};\n"
	 "  if (isnan(f))\n    return (uint16_t)((v.u >> 16) | 0x40);\n"
	 "  v.u += 0x7fff + ((v.u >> 16) & 1); /* to nearest even */\n"
	 "  return (uint16_t)(v.u >> 16);\n}\n",
	 "float ts_rh_bf16(float x)\n{\n  return ts_bf16_to_f32(ts_f32_to_bf16(x));\n}\n"},
};
static const char *const conv16_cuda[2][C16_COUNT] = {
	{"float ts_f16_to_f32(unsigned short h)\n{\n"
	 "  float f;\n  asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h));\n  return f;\n}\n",
	 "unsigned short ts_f32_to_f16(float f)\n{\n"
	 "  unsigned short h;\n  asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f));\n  return h;\n}\n",
	 "float ts_rh_f16(float x)\n{\n  return ts_f16_to_f32(ts_f32_to_f16(x));\n}\n"},
	{"float ts_bf16_to_f32(unsigned short h)\n{\n"
	 "  return __uint_as_float((unsigned int)h << 16);\n}\n",
	 "unsigned short ts_f32_to_bf16(float f)\n{\n"
	 "  unsigned int u = __float_as_uint(f);\n"
	 "  if (f != f)\n    return (unsigned short)((u >> 16) | 0x40);\n"
	 "  u += 0x7fff + ((u >> 16) & 1); /* to nearest even */\n"
	 "  return (unsigned short)(u >> 16);\n}\n",
	 "float ts_rh_bf16(float x)\n{\n  return ts_bf16_to_f32(ts_f32_to_bf16(x));\n}\n"},
};

static void emit_conv16(emitter *em, ts_sbuf *sb)
{
	const char *const (*text)[C16_COUNT] = em->d->bind_threads ? conv16_cuda : conv16_c;
	for (int bf = 0; bf < 2; bf++)
		for (int c = 0; c < C16_COUNT; c++)
			if (em->conv16[bf][c])
				ts_sb_printf(sb, "\n%s %s", em->d->helper_qual, text[bf][c]);
}

/* What a kernel with tensorized nests needs: mma.sync m16n8k16 is sm_80's.
 * ts_ldsm_x4 loads four 8 x 8 matrices of 16-bit elements from shared
 * memory, each lane giving one row's address (ldmatrix wants a shared
 * address: the generic pointer is converted). */
#define LDSM(suffix, qual)                                                             \
	"static __device__ __forceinline__ void ts_ldsm_x4" suffix "(unsigned *r, const void *p)\n{\n" \
	"  asm volatile(\"{ .reg .u64 a; .reg .u32 s; cvta.to.shared.u64 a, %4; cvt.u32.u64 s, a; \"\n" \
	"               \"ldmatrix.sync.aligned.m8n8.x4" qual ".shared.b16 {%0, %1, %2, %3}, [s]; }\"\n" \
	"               : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"l\"(p) : \"memory\");\n}\n"
static const char mma_head[] =
	"#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800\n"
	"#error \"tensorize: the MMA (mma.sync m16n8k16) needs sm_80 or newer\"\n"
	"#endif\n"
	"static __device__ __forceinline__ unsigned ts_laneid(void)\n{\n"
	"  unsigned r;\n  asm(\"mov.u32 %0, %%laneid;\" : \"=r\"(r));\n  return r;\n}\n"
	"static __device__ __forceinline__ unsigned ts_pack16(unsigned short lo, unsigned short hi)\n{\n"
	"  return (unsigned)lo | ((unsigned)hi << 16);\n}\n"
	LDSM("", "") LDSM("_trans", ".trans");

/* What a kernel with double-buffered shared buffers needs: from sm_80 on,
 * cp.async copies from global to shared memory that run while the thread
 * goes on, and the wait for them (cp.async.wait_all) that every barrier
 * is preceded by, so what the block reads after a barrier has arrived
 * (cuda_sync.c puts a barrier between every write of a shared buffer and
 * its reads).  16-byte copies bypass L1 (.cg), as a tile is read from
 * shared memory; 4- and 8-byte ones can only go through it (.ca).
 * Before sm_80, plain copies and no wait. */
#define CP_ASYNC(n, cache, type)                                                                \
	"static __device__ __forceinline__ void ts_cp_async" #n "(void *d, const void *s)\n{\n"   \
	"#if __CUDA_ARCH__ >= 800\n"                                                            \
	"  asm volatile(\"{ .reg .u64 a, g; .reg .u32 p; cvta.to.shared.u64 a, %0; "              \
	"cvt.u32.u64 p, a; cvta.to.global.u64 g, %1; \"\n"                                       \
	"               \"cp.async." cache ".shared.global [p], [g], " #n "; }\" "                 \
	":: \"l\"(d), \"l\"(s) : \"memory\");\n"                                                 \
	"#else\n"                                                                               \
	"  *(" type " *)d = *(const " type " *)s;\n"                                             \
	"#endif\n}\n"
static const char async_head[] =
	CP_ASYNC(4, "ca", "unsigned") CP_ASYNC(8, "ca", "uint2") CP_ASYNC(16, "cg", "uint4")
	"static __device__ __forceinline__ void ts_cp_async_wait(void)\n{\n"
	"#if __CUDA_ARCH__ >= 800\n"
	"  asm volatile(\"cp.async.wait_all;\" ::: \"memory\");\n"
	"#endif\n}\n";

void cg_ce_assemble(emitter *em, ts_sbuf *sb)
{
	const cg_launch *l = &em->launch;
	if (em->d->bind_threads)
		ts_sb_printf(sb, "/* tessera: %s, grid (%lld, %lld, %lld), block (%lld, %lld, %lld), "
			     "%lld bytes of shared memory%s */\n", em->fname, (long long)l->grid[0],
			     (long long)l->grid[1], (long long)l->grid[2], (long long)l->block[0],
			     (long long)l->block[1], (long long)l->block[2],
			     (long long)(l->static_shared_bytes + l->shared_bytes),
			     l->shared_bytes ? " (dynamic)" : "");
	else
		ts_sb_printf(sb, "/* tessera: %s */\n", em->fname);
	ts_sb_puts(sb, em->d->file_head);
	if (em->mma.nnest)
		ts_sb_puts(sb, mma_head);
	if (em->async_copy)
		ts_sb_puts(sb, async_head);
	if (em->tf32) /* round_tf32 as ir_round_tf32 */
		ts_sb_puts(sb, em->d->bind_threads
			? "static __device__ __forceinline__ float ts_round_tf32(float a)\n{\n"
			  "  unsigned u = __float_as_uint(a);\n"
			  "  if ((u & 0x7f800000u) != 0x7f800000u)\n    u = (u + 0x1000u) & 0xffffe000u;\n"
			  "  return __uint_as_float(u);\n}\n"
			: "static inline float ts_round_tf32(float a)\n{\n"
			  "  union { float f; uint32_t u; } v = {a};\n"
			  "  if ((v.u & 0x7f800000u) != 0x7f800000u)\n    v.u = (v.u + 0x1000u) & 0xffffe000u;\n"
			  "  return v.f;\n}\n");
	emit_conv16(em, sb);
	for (int h = 0; h < H_COUNT; h++)
		for (int t = 0; t < T_COUNT; t++)
			if (em->helpers[h][t])
				emit_helper(em, sb, h, t);
	signature(em, sb);
	if (l->shared_bytes && em->nshared)
		ts_sb_printf(sb, "  extern %s__align__(16) unsigned char ts_shared[];\n",
			     em->d->shared_qual);
	int64_t at = 0;
	for (int i = 0; i < em->nshared; i++) {
		const ts_buffer *b = em->shared[i];
		const char *type = cg_ce_ctype(em, b->dtype);
		if (l->shared_bytes) { /* dynamic: a slice of ts_shared, 16-byte aligned */
			ts_sb_printf(sb, "  %s *const %s = (%s *)&ts_shared[%lld];\n", type, cg_ce_lookup(em, b),
				     type, (long long)at);
			at += cg_ce_shared_slot_bytes(b);
			continue;
		}
		ts_sb_printf(sb, "  %s", em->d->shared_qual);
		ts_sb_printf(sb, em->d->align_fmt, 16);
		ts_sb_printf(sb, "%s %s[%lld];\n", type, cg_ce_lookup(em, b), (long long)b->size);
	}
	ts_sb_puts(sb, ts_sb_str(&em->out));
	ts_sb_puts(sb, "}\n");
	if (em->d->packed_wrapper)
		packed(em, sb);
}
