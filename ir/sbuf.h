/*
 * sbuf.h - a growable string used by printers and emitters.
 *
 * Backed by malloc (not the arena) because emitted sources can be large and
 * short-lived.  A failed allocation sets `oom` and later appends are no-ops,
 * so callers check once at the end.  A NULL buffer, string or format is
 * ignored (ts_sb_str(NULL) is "").
 */
#ifndef TESSERA_IR_SBUF_H
#define TESSERA_IR_SBUF_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ts_sbuf {
	char *data; /* always NUL-terminated once anything was appended */
	size_t len, cap;
	bool oom;
} ts_sbuf;

void ts_sb_puts(ts_sbuf *sb, const char *s);
void ts_sb_putc(ts_sbuf *sb, char c);
void ts_sb_printf(ts_sbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Deepest indentation written: deeper levels print at this one, so that a
 * wild level (INT_MAX) costs 512 spaces, not gigabytes. */
#define TS_SB_MAX_INDENT 256
/* Two spaces per level; level is clamped to [0, TS_SB_MAX_INDENT]. */
void ts_sb_indent(ts_sbuf *sb, int level);
/* level clamped to [0, TS_SB_MAX_INDENT], for printers that add to it. */
int ts_sb_indent_level(int level);
/* The text so far ("" when empty); valid until the next append or free. */
const char *ts_sb_str(const ts_sbuf *sb);
void ts_sb_free(ts_sbuf *sb);

#ifdef __cplusplus
}
#endif

#endif
