/*
 * ctx.c - arena allocator and error slot of a tessera context.
 *
 * The arena is a list of chunks; a request larger than a chunk gets a chunk
 * of its own.  Sizes are checked for overflow before any arithmetic.
 */
#include "ctx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_SIZE (64 * 1024)
#define ERR_SIZE 1024

typedef struct chunk {
	struct chunk *next;
	size_t used, cap;
	_Alignas(16) unsigned char data[];
} chunk;

struct ts_ctx {
	chunk *chunks;
	long fail_after;
	int next_id;
	int print_passes;
	ts_status status;
	char err[ERR_SIZE];
};

ts_ctx *ts_ctx_new(void)
{
	ts_ctx *ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return NULL;
	const char *env = getenv("TESSERA_PRINT_PASSES");
	ctx->print_passes = env && env[0] && strcmp(env, "0") != 0;
	return ctx;
}

void ts_ctx_free(ts_ctx *ctx)
{
	if (!ctx)
		return;
	for (chunk *c = ctx->chunks, *next; c; c = next) {
		next = c->next;
		free(c);
	}
	free(ctx);
}

void ts_ctx_fail_alloc_after(ts_ctx *ctx, long n)
{
	ctx->fail_after = n;
}

static chunk *new_chunk(size_t cap)
{
	if (cap > SIZE_MAX - sizeof(chunk))
		return NULL;
	chunk *c = malloc(sizeof(chunk) + cap);
	if (!c)
		return NULL;
	c->next = NULL;
	c->used = 0;
	c->cap = cap;
	return c;
}

void *ts_alloc(ts_ctx *ctx, size_t size)
{
	if (ctx->fail_after > 0 && --ctx->fail_after == 0) {
		ts_error(ctx, TS_ERR_NOMEM, "out of memory (injected)");
		return NULL;
	}
	if (size == 0)
		size = 1;
	if (size > SIZE_MAX - 15) {
		ts_error(ctx, TS_ERR_NOMEM, "allocation of %zu bytes overflows", size);
		return NULL;
	}
	size = (size + 15) & ~(size_t)15;
	chunk *c = ctx->chunks;
	if (!c || c->cap - c->used < size) {
		chunk *n = new_chunk(size > CHUNK_SIZE / 4 ? size : CHUNK_SIZE);
		if (!n) {
			ts_error(ctx, TS_ERR_NOMEM, "out of memory (%zu bytes)", size);
			return NULL;
		}
		if (c && size > CHUNK_SIZE / 4) {
			/* keep the partly used chunk at the head */
			n->next = c->next;
			c->next = n;
			n->used = size;
			memset(n->data, 0, size);
			return n->data;
		}
		n->next = c;
		ctx->chunks = c = n;
	}
	void *p = c->data + c->used;
	c->used += size;
	memset(p, 0, size);
	return p;
}

void *ts_alloc_array(ts_ctx *ctx, size_t n, size_t elem)
{
	if (elem && n > SIZE_MAX / elem) {
		ts_error(ctx, TS_ERR_NOMEM, "array of %zu x %zu bytes overflows", n, elem);
		return NULL;
	}
	return ts_alloc(ctx, n * elem);
}

char *ts_strdup(ts_ctx *ctx, const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = ts_alloc(ctx, n);
	if (p)
		memcpy(p, s, n);
	return p;
}

char *ts_sprintf(ts_ctx *ctx, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	char *p = ts_alloc(ctx, (size_t)n + 1);
	if (!p)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

ts_status ts_verror(ts_ctx *ctx, ts_status status, const char *fmt, va_list ap)
{
	if (ctx->status == TS_OK) {
		ctx->status = status;
		vsnprintf(ctx->err, sizeof(ctx->err), fmt, ap);
	}
	return status;
}

ts_status ts_error(ts_ctx *ctx, ts_status status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ts_verror(ctx, status, fmt, ap);
	va_end(ap);
	return status;
}

const char *ts_last_error(const ts_ctx *ctx)
{
	return ctx->err;
}

ts_status ts_last_status(const ts_ctx *ctx)
{
	return ctx->status;
}

void ts_clear_error(ts_ctx *ctx)
{
	ctx->status = TS_OK;
	ctx->err[0] = '\0';
}

int ts_ctx_next_id(ts_ctx *ctx)
{
	return ++ctx->next_id;
}

void ts_ctx_set_print_passes(ts_ctx *ctx, int on)
{
	ctx->print_passes = on;
}

int ts_ctx_print_passes(const ts_ctx *ctx)
{
	return ctx->print_passes;
}
