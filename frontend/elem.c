/*
 * elem.c - reading and writing one array element of any dtype as double or
 * int64, float16 and bfloat16 included.  Evaluators and tests use these so
 * that no dtype needs its own loop.
 */
#include "eval.h"

#include <math.h>
#include <string.h>

#include "arith.h"

static float half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
	float f;
	if (exp == 0)
		f = ldexpf((float)man, -24); /* zero or subnormal */
	else if (exp == 31)
		f = man ? NAN : INFINITY;
	else
		f = ldexpf((float)(man | 0x400), (int)exp - 25);
	return sign ? -f : f;
}

static uint16_t float_to_half(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
	if (isnan(f))
		return sign | 0x7e00;
	float a = fabsf(f);
	if (a >= 65520.0f)
		return sign | 0x7c00;
	if (a < ldexpf(1.0f, -24) * 0.5f)
		return sign;
	int e;
	frexpf(a, &e); /* a = m * 2^e, m in [0.5, 1) */
	int exp = e - 1 + 15;
	if (exp <= 0) /* subnormal: units of 2^-24, round to nearest even */
		return sign | (uint16_t)nearbyintf(ldexpf(a, 24));
	uint32_t man = (uint32_t)nearbyintf(ldexpf(a, 10 - (e - 1))); /* 1024..2048 */
	if (man == 2048) {
		man = 1024;
		exp++;
	}
	if (exp >= 31)
		return sign | 0x7c00;
	return sign | (uint16_t)(exp << 10) | (uint16_t)(man & 0x3ff);
}

static float bf16_to_float(uint16_t h)
{
	uint32_t x = (uint32_t)h << 16;
	float f;
	memcpy(&f, &x, 4);
	return f;
}

static uint16_t float_to_bf16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	if (isnan(f))
		return (uint16_t)((x >> 16) | 0x40);
	x += 0x7fff + ((x >> 16) & 1); /* round to nearest even */
	return (uint16_t)(x >> 16);
}

double ts_elem_get_f64(const void *data, ts_dtype t, int64_t i)
{
	if (!data || !ts_dtype_is_valid(t))
		return 0;
	switch (t.code) {
	case TS_TYPE_FLOAT:
		if (t.bits == 64)
			return ((const double *)data)[i];
		if (t.bits == 16)
			return half_to_float(((const uint16_t *)data)[i]);
		return ((const float *)data)[i];
	case TS_TYPE_BFLOAT:
		return bf16_to_float(((const uint16_t *)data)[i]);
	default:
		/* ts_elem_get_i64 gives uint64's bits as int64: 2^63 and up would
		 * read as negative */
		if (t.code == TS_TYPE_UINT && t.bits == 64)
			return (double)((const uint64_t *)data)[i];
		return (double)ts_elem_get_i64(data, t, i);
	}
}

int64_t ts_elem_get_i64(const void *data, ts_dtype t, int64_t i)
{
	if (!data || !ts_dtype_is_valid(t))
		return 0;
	switch (t.code) {
	case TS_TYPE_INT:
		switch (t.bits) {
		case 8: return ((const int8_t *)data)[i];
		case 16: return ((const int16_t *)data)[i];
		case 32: return ((const int32_t *)data)[i];
		default: return ((const int64_t *)data)[i];
		}
	case TS_TYPE_UINT:
		switch (t.bits) {
		case 8: return ((const uint8_t *)data)[i];
		case 16: return ((const uint16_t *)data)[i];
		case 32: return ((const uint32_t *)data)[i];
		default: return (int64_t)((const uint64_t *)data)[i];
		}
	case TS_TYPE_BOOL:
		return ((const uint8_t *)data)[i] != 0;
	case TS_TYPE_FLOAT:
	case TS_TYPE_BFLOAT:
		return ir_float_to_int(ts_int64, ts_elem_get_f64(data, t, i));
	default:
		return 0;
	}
}

void ts_elem_set_f64(void *data, ts_dtype t, int64_t i, double v)
{
	if (!data || !ts_dtype_is_valid(t))
		return;
	switch (t.code) {
	case TS_TYPE_FLOAT:
		if (t.bits == 64)
			((double *)data)[i] = v;
		else if (t.bits == 16)
			((uint16_t *)data)[i] = float_to_half((float)v);
		else
			((float *)data)[i] = (float)v;
		return;
	case TS_TYPE_BFLOAT:
		((uint16_t *)data)[i] = float_to_bf16((float)v);
		return;
	default:
		/* ir.h's cast rule: NaN is 0, out-of-range values saturate */
		ts_elem_set_i64(data, t, i, ir_float_to_int(t, v));
		return;
	}
}

void ts_elem_set_i64(void *data, ts_dtype t, int64_t i, int64_t v)
{
	if (!data || !ts_dtype_is_valid(t))
		return;
	switch (t.code) {
	case TS_TYPE_INT:
	case TS_TYPE_UINT:
		/* wrap to the width (two's complement), as the IR specifies */
		switch (t.bits) {
		case 8: ((uint8_t *)data)[i] = (uint8_t)v; return;
		case 16: ((uint16_t *)data)[i] = (uint16_t)v; return;
		case 32: ((uint32_t *)data)[i] = (uint32_t)v; return;
		default: ((uint64_t *)data)[i] = (uint64_t)v; return;
		}
	case TS_TYPE_BOOL:
		((uint8_t *)data)[i] = v != 0;
		return;
	case TS_TYPE_FLOAT:
	case TS_TYPE_BFLOAT:
		/* rounded once (through double it would round twice past 2^53) */
		ts_elem_set_f64(data, t, i, ir_cast_int_to_float(t, v, false));
		return;
	default:
		return;
	}
}
