/*
 * printer.h - the stable text form of expressions, tensor graphs, loop IR
 * and lowered functions.
 *
 * This text is what golden tests compare and what people read, so changes
 * to it are deliberate.  Conventions:
 *   - infix arithmetic with minimal parentheses; `a / b` and `a % b` are
 *     truncating (C) for integers and real division for floats; floor
 *     division prints as floordiv(a, b) / floormod(a, b);
 *   - int32 immediates print bare, float32 with an `f` suffix, other dtypes
 *     as a cast: int64(4), float64(0.5);
 *   - loops print as `for (i, min, extent)`, with `parallel`, `vectorized`,
 *     `unrolled` or `bind threadIdx.x` in place of `for`.
 */
#ifndef TESSERA_IR_PRINTER_H
#define TESSERA_IR_PRINTER_H

#include "ir.h"
#include "sbuf.h"

#ifdef __cplusplus
extern "C" {
#endif

void ir_sb_expr(ts_sbuf *sb, const ts_expr *e);
/* indent: levels of two spaces, clamped as ts_sb_indent clamps them. */
void ir_sb_stmt(ts_sbuf *sb, const ts_stmt *s, int indent);
void ir_sb_func(ts_sbuf *sb, const ts_func *f);
/* Every tensor reachable from outputs, inputs first, one per line. */
void ir_sb_graph(ts_sbuf *sb, int n, ts_tensor *const *outputs);

/* The same text as an arena string (NULL on allocation failure). */
const char *ir_expr_str(ts_ctx *ctx, const ts_expr *e);
const char *ir_stmt_str(ts_ctx *ctx, const ts_stmt *s);
const char *ir_func_str(ts_ctx *ctx, const ts_func *f);
const char *ts_graph_str(ts_ctx *ctx, int n, ts_tensor *const *outputs);

void ir_print_expr(FILE *out, const ts_expr *e);
void ir_print_stmt(FILE *out, const ts_stmt *s);
void ir_print_func(FILE *out, const ts_func *f);
void ts_print_graph(FILE *out, int n, ts_tensor *const *outputs);

/* Tensors reachable from outputs in dependency order (inputs first); writes
 * at most max entries and returns how many there are; -1 for a negative n,
 * a NULL or NULL-holding outputs list, or a NULL order with max > 0.
 * It also returns -1 when a compute lists a NULL input, or when memory for
 * the walk runs out.
 * The printers print nothing for a NULL buffer or FILE; the *_str
 * functions return NULL for a NULL context, and NULL with an error for a
 * NULL node.  A function whose header is malformed (a NULL name, a
 * negative nparams, a NULL params list with nparams > 0, a NULL or unnamed
 * parameter) gives NULL with an error from ir_func_str, and the line
 * "<bad function: why>" from ir_sb_func and ir_print_func. */
int ts_graph_topo(int n, ts_tensor *const *outputs, ts_tensor **order, int max);

#ifdef __cplusplus
}
#endif

#endif
