/*
 * eval.h - the reference evaluator: ground truth for every tensor expression.
 *
 * It walks the expression tree naively, element by element, on dense
 * row-major host arrays in each tensor's dtype.  It shares nothing with
 * scheduling or codegen, so a schedule or a backend is correct exactly when
 * its output matches this.  Float reductions accumulate in float64 and are
 * rounded to the output dtype once at the end.
 */
#ifndef TESSERA_FRONTEND_EVAL_H
#define TESSERA_FRONTEND_EVAL_H

#include "ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Evaluates every compute tensor reachable from the bound tensors that is
 * needed by a bound compute tensor.  bind[i] names a tensor and data[i] its
 * storage: every placeholder reached must be bound; bound compute tensors
 * receive their results; unbound intermediates are computed in temporary
 * memory.  Returns TS_OK or an error naming the tensor (unbound placeholder,
 * out-of-bounds read, data not aligned to the element size, a bound compute
 * tensor whose data shares a byte with another binding's: outputs are
 * written while inputs are read; inputs may alias each other).  Integer
 * division by zero is not an error: it gives 0, as ir.h states. */
ts_status ts_eval(ts_ctx *ctx, int n, ts_tensor *const *bind, void *const *data);

/* Element conversions used by evaluators for every dtype (float16 and
 * bfloat16 included): read element i of an array as double / int64, and
 * store a double / int64 into element i.  NULL data or an invalid dtype
 * reads as 0 and stores nothing. */
double ts_elem_get_f64(const void *data, ts_dtype t, int64_t i);
int64_t ts_elem_get_i64(const void *data, ts_dtype t, int64_t i);
void ts_elem_set_f64(void *data, ts_dtype t, int64_t i, double v);
void ts_elem_set_i64(void *data, ts_dtype t, int64_t i, int64_t v);

#ifdef __cplusplus
}
#endif

#endif
