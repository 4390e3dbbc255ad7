/* sbuf.c - growable string; see sbuf.h. */
#include "sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(ts_sbuf *sb, size_t extra)
{
	if (!sb || sb->oom)
		return false;
	if (extra > (size_t)-1 / 2 - sb->len) {
		sb->oom = true;
		return false;
	}
	size_t need = sb->len + extra + 1;
	if (need <= sb->cap)
		return true;
	size_t cap = sb->cap ? sb->cap : 256;
	while (cap < need)
		cap *= 2;
	char *p = realloc(sb->data, cap);
	if (!p) {
		sb->oom = true;
		return false;
	}
	sb->data = p;
	sb->cap = cap;
	return true;
}

void ts_sb_puts(ts_sbuf *sb, const char *s)
{
	if (!s)
		return;
	size_t n = strlen(s);
	if (!reserve(sb, n))
		return;
	memcpy(sb->data + sb->len, s, n + 1);
	sb->len += n;
}

void ts_sb_putc(ts_sbuf *sb, char c)
{
	if (!reserve(sb, 1))
		return;
	sb->data[sb->len++] = c;
	sb->data[sb->len] = '\0';
}

void ts_sb_printf(ts_sbuf *sb, const char *fmt, ...)
{
	va_list ap;
	if (!sb || !fmt)
		return;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !reserve(sb, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
}

int ts_sb_indent_level(int level)
{
	return level < 0 ? 0 : level > TS_SB_MAX_INDENT ? TS_SB_MAX_INDENT : level;
}

void ts_sb_indent(ts_sbuf *sb, int level)
{
	level = ts_sb_indent_level(level);
	for (int i = 0; i < level; i++)
		ts_sb_puts(sb, "  ");
}

const char *ts_sb_str(const ts_sbuf *sb)
{
	return sb && sb->data ? sb->data : "";
}

void ts_sb_free(ts_sbuf *sb)
{
	if (!sb)
		return;
	free(sb->data);
	sb->data = NULL;
	sb->len = sb->cap = 0;
	sb->oom = false;
}
