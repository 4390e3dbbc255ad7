/*
 * ctx.c - arena allocator, reference count and error slots of a tessera
 * context.
 *
 * The arena is a list of chunks; a request larger than a chunk gets a chunk
 * of its own.  Sizes are checked for overflow before any arithmetic.
 *
 * Contexts are shared: modules built in a context keep a reference to it,
 * and a context may be used by several threads at once (typically
 * ts_module_run on many threads).  One mutex guards the arena and the error
 * slots; each thread has its own error slot, so that a failed call on one
 * thread never overwrites or reads another thread's message.  A slot whose
 * error was cleared, or whose thread has exited, is handed to the next
 * thread that needs one, which bounds the slots by the number of live
 * threads with an error pending.
 */
#include "ctx.h"
#include "ir.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
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

/* One per thread that has recorded an error, shared by every slot that
 * holds that thread's error: pthread_t values are reused once a thread is
 * joined, and a new thread must not see an exited one's error as its own,
 * nor may the exited one's slot stay taken for the context's life. */
typedef struct thread_token {
	atomic_int refs;    /* the thread while it runs, and each slot */
	atomic_bool alive;  /* cleared when the thread exits */
	struct thread_token *prev, *next; /* in g_tokens */
} thread_token;

typedef struct err_slot {
	struct err_slot *next;
	thread_token *owner; /* the thread whose error it holds; NULL: none */
	ts_status status; /* TS_OK: free for any thread to take */
	char msg[ERR_SIZE];
} err_slot;

struct ts_ctx {
	pthread_mutex_t lock; /* the arena, the slots and fail_after */
	chunk *chunks;
	long fail_after;
	err_slot *slots;
	atomic_int next_id;
	atomic_int refs;
	atomic_int print_passes;
	atomic_int print_steps; /* TS_PRINT_STEPS_* */
	/* written under the lock, each entry before the count that
	 * publishes it, so lookups read without it */
	struct ts_expr *size_var[TS_MAX_SIZE_VARS];
	int64_t size_max[TS_MAX_SIZE_VARS];
	atomic_int nsize_vars;
	int size_tag; /* in every size-variable handle of this context */
};

static void token_release(thread_token *t);

/* What a NULL context reports: every call on one is an error, not a crash. */
static const char null_ctx_msg[] = "tessera: the context is NULL";

ts_ctx *ts_ctx_new(void)
{
	ts_ctx *ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return NULL;
	if (pthread_mutex_init(&ctx->lock, NULL) != 0) {
		free(ctx);
		return NULL;
	}
	atomic_init(&ctx->refs, 1);
	static atomic_int next_tag;
	ctx->size_tag = (atomic_fetch_add(&next_tag, 1) + 1) &
			(int)(TS_SIZE_VAR_SPAN / TS_SIZE_VAR_STRIDE / TS_MAX_SIZE_VARS - 1);
	const char *env = getenv("TESSERA_PRINT_PASSES");
	atomic_init(&ctx->print_passes, env && env[0] && strcmp(env, "0") != 0);
	env = getenv("TESSERA_PRINT_STEPS");
	atomic_init(&ctx->print_steps, !env || !env[0] || strcmp(env, "0") == 0 ? TS_PRINT_STEPS_OFF
				       : strcmp(env, "diff") == 0       ? TS_PRINT_STEPS_DIFF
									: TS_PRINT_STEPS_NEST);
	return ctx;
}

ts_ctx *ts_ctx_retain(ts_ctx *ctx)
{
	if (ctx)
		atomic_fetch_add(&ctx->refs, 1);
	return ctx;
}

static void destroy(ts_ctx *ctx)
{
	for (chunk *c = ctx->chunks, *next; c; c = next) {
		next = c->next;
		free(c);
	}
	for (err_slot *s = ctx->slots, *next; s; s = next) {
		next = s->next;
		token_release(s->owner);
		free(s);
	}
	pthread_mutex_destroy(&ctx->lock);
	free(ctx);
}

void ts_ctx_free(ts_ctx *ctx)
{
	if (ctx && atomic_fetch_sub(&ctx->refs, 1) == 1)
		destroy(ctx);
}

void ts_ctx_fail_alloc_after(ts_ctx *ctx, long n)
{
	if (!ctx)
		return;
	pthread_mutex_lock(&ctx->lock);
	ctx->fail_after = n;
	pthread_mutex_unlock(&ctx->lock);
}

long ts_ctx_fail_alloc_pending(ts_ctx *ctx)
{
	if (!ctx)
		return 0;
	pthread_mutex_lock(&ctx->lock);
	long n = ctx->fail_after;
	pthread_mutex_unlock(&ctx->lock);
	return n;
}

/* ---- errors ------------------------------------------------------------- */

static pthread_key_t g_token_key;
static pthread_once_t g_token_once = PTHREAD_ONCE_INIT;
static bool g_token_key_ok;
static _Thread_local thread_token *t_token;
/* Every token, so that one still held (the main thread's, which no
 * thread-exit destructor releases) is reachable, not a leak to LeakSanitizer
 * and its kind. */
static pthread_mutex_t g_tokens_lock = PTHREAD_MUTEX_INITIALIZER;
static thread_token *g_tokens;

static void token_release(thread_token *t)
{
	if (!t || atomic_fetch_sub(&t->refs, 1) != 1)
		return;
	pthread_mutex_lock(&g_tokens_lock);
	if (t->prev)
		t->prev->next = t->next;
	else
		g_tokens = t->next;
	if (t->next)
		t->next->prev = t->prev;
	pthread_mutex_unlock(&g_tokens_lock);
	free(t);
}

/* The list's lock is held over a fork, so that the child's copy is whole
 * and unlocked. */
static void tokens_prepare(void)
{
	pthread_mutex_lock(&g_tokens_lock);
}

static void tokens_release_lock(void)
{
	pthread_mutex_unlock(&g_tokens_lock);
}

static void token_thread_exit(void *p)
{
	thread_token *t = p;
	atomic_store(&t->alive, false);
	token_release(t);
}

static void token_key_create(void)
{
	g_token_key_ok = pthread_key_create(&g_token_key, token_thread_exit) == 0;
	pthread_atfork(tokens_prepare, tokens_release_lock, tokens_release_lock);
}

/* The calling thread's token, made on its first error; NULL when malloc
 * fails (the error then goes unrecorded, as when a slot cannot be made). */
static thread_token *self_token(void)
{
	if (t_token)
		return t_token;
	pthread_once(&g_token_once, token_key_create);
	thread_token *t = malloc(sizeof(*t));
	if (!t)
		return NULL;
	atomic_init(&t->refs, 1);
	atomic_init(&t->alive, true);
	pthread_mutex_lock(&g_tokens_lock);
	t->prev = NULL;
	t->next = g_tokens;
	if (g_tokens)
		g_tokens->prev = t;
	g_tokens = t;
	pthread_mutex_unlock(&g_tokens_lock);
	/* Without the key the token outlives the thread: its slots are then
	 * only reused once cleared, as if the thread still ran. */
	if (g_token_key_ok && pthread_setspecific(g_token_key, t) != 0)
		atomic_fetch_add(&t->refs, 1);
	t_token = t;
	return t;
}

/* The calling thread's slot, or NULL when it has none; under the lock. */
static err_slot *own_slot(ts_ctx *ctx)
{
	thread_token *self = t_token;
	if (!self)
		return NULL;
	for (err_slot *s = ctx->slots; s; s = s->next)
		if (s->status != TS_OK && s->owner == self)
			return s;
	return NULL;
}

/* Free for another thread: cleared, or its thread has exited. */
static bool slot_free(const err_slot *s)
{
	return s->status == TS_OK || !s->owner || !atomic_load(&s->owner->alive);
}

/* A slot for the calling thread to record into: its own, a free one, or a
 * new one.  NULL only when malloc fails. */
static err_slot *take_slot(ts_ctx *ctx)
{
	thread_token *self = self_token();
	if (!self)
		return NULL;
	err_slot *s = own_slot(ctx);
	if (s)
		return s;
	for (s = ctx->slots; s; s = s->next)
		if (slot_free(s))
			break;
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s)
			return NULL;
		s->next = ctx->slots;
		ctx->slots = s;
	}
	if (s->owner != self) {
		token_release(s->owner);
		atomic_fetch_add(&self->refs, 1);
		s->owner = self;
	}
	s->status = TS_OK;
	s->msg[0] = '\0';
	return s;
}

/* Copies a message of len bytes into a slot's ERR_SIZE bytes.  One that
 * does not fit loses its middle, not its end: a message is "call NAME:
 * what is wrong", and a name of thousands of characters (or a long printed
 * expression) must not push out what is wrong.  Cuts fall on UTF-8
 * character boundaries. */
static void fit_message(char dst[ERR_SIZE], const char *src, size_t len)
{
	if (len < ERR_SIZE) {
		memcpy(dst, src, len + 1);
		return;
	}
	static const char gap[] = " [...] ";
	size_t head = ERR_SIZE / 3, tail = ERR_SIZE - 1 - head - (sizeof(gap) - 1);
	while (head > 0 && ((unsigned char)src[head] & 0xc0) == 0x80)
		head--; /* src[head] starts a character: the head ends before it */
	size_t from = len - tail;
	while (from < len && ((unsigned char)src[from] & 0xc0) == 0x80)
		from++;
	memcpy(dst, src, head);
	memcpy(dst + head, gap, sizeof(gap) - 1);
	memcpy(dst + head + sizeof(gap) - 1, src + from, len - from + 1);
}

ts_status ts_verror(ts_ctx *ctx, ts_status status, const char *fmt, va_list ap)
{
	if (!ctx || status == TS_OK)
		return status;
	/* only the first error is kept: a later one in a chain of calls is
	 * not even formatted (own_slot finds the thread's pending one) */
	pthread_mutex_lock(&ctx->lock);
	bool pending = own_slot(ctx) != NULL;
	pthread_mutex_unlock(&ctx->lock);
	if (pending)
		return status;
	/* formatted whole first (outside the lock: a user's name may be
	 * megabytes), then fitted into the slot */
	char small[ERR_SIZE];
	va_list again;
	va_copy(again, ap);
	int len = vsnprintf(small, sizeof(small), fmt ? fmt : "(no message)", ap);
	char *whole = len >= (int)sizeof(small) ? malloc((size_t)len + 1) : NULL;
	if (whole)
		vsnprintf(whole, (size_t)len + 1, fmt ? fmt : "", again);
	va_end(again);
	pthread_mutex_lock(&ctx->lock);
	err_slot *s = take_slot(ctx);
	if (s && s->status == TS_OK) {
		fit_message(s->msg, whole ? whole : small, whole ? (size_t)len : strlen(small));
		s->status = status;
	}
	pthread_mutex_unlock(&ctx->lock);
	free(whole);
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

ts_status ts_error_within(ts_ctx *ctx, ts_status status, const char *fmt, ...)
{
	if (!ctx)
		return status;
	char prefix[ERR_SIZE] = "";
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(prefix, sizeof(prefix), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_lock(&ctx->lock);
	err_slot *s = take_slot(ctx);
	if (s && s->status != TS_OK && !fmt) {
		/* no prefix to put: the pending error stays as it is (not ": msg") */
		status = s->status;
	} else if (s && s->status != TS_OK) {
		/* room for both whole, then fitted to the slot's size */
		char both[2 * ERR_SIZE + 2];
		snprintf(both, sizeof(both), "%s: %s", prefix, s->msg);
		fit_message(s->msg, both, strlen(both));
		status = s->status;
	} else if (s && status != TS_OK) {
		/* as ts_verror: an error recorded without a format still says so */
		snprintf(s->msg, sizeof(s->msg), "%s", fmt ? prefix : "(no message)");
		s->status = status;
	}
	pthread_mutex_unlock(&ctx->lock);
	return status;
}

void ts_error_stash(ts_ctx *ctx, ts_error_stashed *saved)
{
	if (!saved)
		return;
	/* a NULL context holds no error to stash (ts_last_status's
	 * TS_ERR_INVALID for it would come back, without a message, from
	 * ts_error_unstash into whatever context that is given) */
	saved->status = ctx ? ts_last_status(ctx) : TS_OK;
	snprintf(saved->msg, sizeof(saved->msg), "%s", ctx ? ts_last_error(ctx) : "");
	ts_clear_error(ctx);
}

void ts_error_unstash(ts_ctx *ctx, const ts_error_stashed *saved)
{
	ts_clear_error(ctx);
	if (saved && saved->status != TS_OK)
		ts_error(ctx, saved->status, "%.*s", (int)sizeof saved->msg, saved->msg);
}

const char *ts_last_error(const ts_ctx *ctx)
{
	if (!ctx)
		return null_ctx_msg;
	ts_ctx *c = (ts_ctx *)ctx; /* the lock is not part of the value */
	pthread_mutex_lock(&c->lock);
	err_slot *s = own_slot(c);
	pthread_mutex_unlock(&c->lock);
	/* The slot stays this thread's until it clears the error. */
	return s ? s->msg : "";
}

ts_status ts_last_status(const ts_ctx *ctx)
{
	if (!ctx)
		return TS_ERR_INVALID;
	ts_ctx *c = (ts_ctx *)ctx;
	pthread_mutex_lock(&c->lock);
	err_slot *s = own_slot(c);
	ts_status st = s ? s->status : TS_OK;
	pthread_mutex_unlock(&c->lock);
	return st;
}

void ts_clear_error(ts_ctx *ctx)
{
	if (!ctx)
		return;
	pthread_mutex_lock(&ctx->lock);
	err_slot *s = own_slot(ctx);
	if (s) {
		s->msg[0] = '\0';
		s->status = TS_OK;
	}
	pthread_mutex_unlock(&ctx->lock);
}

int ts_ctx_error_slots(const ts_ctx *ctx)
{
	if (!ctx)
		return 0;
	ts_ctx *c = (ts_ctx *)ctx;
	int n = 0;
	pthread_mutex_lock(&c->lock);
	for (const err_slot *s = c->slots; s; s = s->next)
		n++;
	pthread_mutex_unlock(&c->lock);
	return n;
}

/* ---- the arena ---------------------------------------------------------- */

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

/* Carves `size` (a multiple of 16) out of the arena; under the lock. */
static void *carve(ts_ctx *ctx, size_t size)
{
	chunk *c = ctx->chunks;
	if (c && c->cap - c->used >= size) {
		void *p = c->data + c->used;
		c->used += size;
		return p;
	}
	chunk *n = new_chunk(size > CHUNK_SIZE / 4 ? size : CHUNK_SIZE);
	if (!n)
		return NULL;
	if (c && size > CHUNK_SIZE / 4) {
		/* keep the partly used chunk at the head */
		n->next = c->next;
		c->next = n;
	} else {
		n->next = c;
		ctx->chunks = n;
	}
	n->used = size;
	return n->data;
}

void *ts_alloc(ts_ctx *ctx, size_t size)
{
	if (!ctx)
		return NULL;
	/* no arena block is ever this large: refused here rather than asked
	 * of malloc, which AddressSanitizer aborts on instead of failing */
	if (size > TS_ALLOC_MAX) {
		ts_error(ctx, TS_ERR_NOMEM, "allocation of %zu bytes is more than the arena gives (2^40)", size);
		return NULL;
	}
	size = size ? (size + 15) & ~(size_t)15 : 16;
	pthread_mutex_lock(&ctx->lock);
	bool injected = ctx->fail_after > 0 && --ctx->fail_after == 0;
	void *p = injected ? NULL : carve(ctx, size);
	pthread_mutex_unlock(&ctx->lock);
	if (!p) {
		if (injected)
			ts_error(ctx, TS_ERR_NOMEM, "out of memory (injected)");
		else
			ts_error(ctx, TS_ERR_NOMEM, "out of memory (%zu bytes)", size);
		return NULL;
	}
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
	if (!s) {
		ts_error(ctx, TS_ERR_INVALID, "strdup: the string is NULL");
		return NULL;
	}
	size_t n = strlen(s) + 1;
	char *p = ts_alloc(ctx, n);
	if (p)
		memcpy(p, s, n);
	return p;
}

char *ts_sprintf(ts_ctx *ctx, const char *fmt, ...)
{
	if (!ctx || !fmt)
		return NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		ts_error(ctx, TS_ERR_INVALID, "sprintf: bad format '%s'", fmt);
		return NULL;
	}
	char *p = ts_alloc(ctx, (size_t)n + 1);
	if (!p)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

/* ---- the rest ----------------------------------------------------------- */

int ts_ctx_next_id(ts_ctx *ctx)
{
	return ctx ? atomic_fetch_add(&ctx->next_id, 1) + 1 : 0;
}

void ts_ctx_set_print_passes(ts_ctx *ctx, int on)
{
	if (ctx)
		atomic_store(&ctx->print_passes, on);
}

int ts_ctx_print_passes(const ts_ctx *ctx)
{
	return ctx ? atomic_load(&((ts_ctx *)ctx)->print_passes) : 0;
}

void ts_ctx_set_print_steps(ts_ctx *ctx, int mode)
{
	if (ctx)
		atomic_store(&ctx->print_steps, mode == TS_PRINT_STEPS_DIFF ? TS_PRINT_STEPS_DIFF
						: mode ? TS_PRINT_STEPS_NEST : TS_PRINT_STEPS_OFF);
}

int ts_ctx_print_steps(const ts_ctx *ctx)
{
	return ctx ? atomic_load(&((ts_ctx *)ctx)->print_steps) : TS_PRINT_STEPS_OFF;
}

/* ---- size variables ----------------------------------------------------- */

int ts_ctx_add_size_var(ts_ctx *ctx, struct ts_expr *var, int64_t max)
{
	if (!ctx)
		return -1;
	/* every layer reads a size variable as a variable: anything else
	 * registered here would be read as one */
	if (!var || var->ctx != ctx || var->kind != IR_VAR || !ts_dtype_is_int(var->dtype) ||
	    var->dtype.lanes != 1) {
		ts_error(ctx, TS_ERR_INVALID, "size_var: %s",
			 !var ? "no variable (NULL)"
			 : var->ctx != ctx ? "the variable belongs to another context"
					   : "not a scalar integer variable");
		return -1;
	}
	if (max < 1 || max > TS_SIZE_VAR_MAX) {
		ts_error(ctx, TS_ERR_INVALID, "size_var %s: upper bound %lld is outside 1..2^40",
			 var->u.var.name, (long long)max);
		return -1;
	}
	/* errors at a call name the variable: two of one name could not be
	 * told apart */
	for (int k = 0; k < ts_ctx_size_var_count(ctx); k++) {
		const ts_expr *old = ts_ctx_size_var(ctx, k, NULL);
		if (old == var || !strcmp(old->u.var.name, var->u.var.name)) {
			ts_error(ctx, TS_ERR_INVALID, "size_var %s: %s", var->u.var.name,
				 old == var ? "registered already" : "the name is taken by another size variable");
			return -1;
		}
	}
	pthread_mutex_lock(&ctx->lock);
	int i = atomic_load(&ctx->nsize_vars);
	if (i < TS_MAX_SIZE_VARS) {
		ctx->size_var[i] = var;
		ctx->size_max[i] = max;
		atomic_store(&ctx->nsize_vars, i + 1);
	} else {
		i = -1;
	}
	pthread_mutex_unlock(&ctx->lock);
	if (i < 0)
		ts_error(ctx, TS_ERR_INVALID, "size_var: more than %d size variables in one context",
			 TS_MAX_SIZE_VARS);
	return i;
}

int ts_ctx_size_var_count(const ts_ctx *ctx)
{
	return ctx ? atomic_load(&ctx->nsize_vars) : 0;
}

struct ts_expr *ts_ctx_size_var(const ts_ctx *ctx, int index, int64_t *max)
{
	if (!ctx || index < 0 || index >= ts_ctx_size_var_count(ctx))
		return NULL;
	if (max)
		*max = ctx->size_max[index];
	return ctx->size_var[index];
}

int64_t ts_ctx_size_handle(const ts_ctx *ctx, int index)
{
	/* an index outside the context's slots has no handle: the formula
	 * would give the handle of another tag, i.e. of another context's
	 * variable (index -1 is the previous tag's last, 64 the next's first) */
	if (!ctx || index < 0 || index >= TS_MAX_SIZE_VARS)
		return 0;
	return TS_SIZE_VAR_BASE + ((int64_t)ctx->size_tag * TS_MAX_SIZE_VARS + index) * TS_SIZE_VAR_STRIDE;
}

int ts_ctx_size_handle_index(const ts_ctx *ctx, int64_t h)
{
	if (!ctx || h < TS_SIZE_VAR_BASE || h >= TS_SIZE_VAR_BASE + TS_SIZE_VAR_SPAN)
		return -1;
	int64_t off = h - TS_SIZE_VAR_BASE;
	if (off % TS_SIZE_VAR_STRIDE)
		return -1;
	off /= TS_SIZE_VAR_STRIDE;
	if (off / TS_MAX_SIZE_VARS != ctx->size_tag)
		return -1;
	int i = (int)(off % TS_MAX_SIZE_VARS);
	return i < ts_ctx_size_var_count(ctx) ? i : -1;
}

int ts_ctx_size_var_index(const ts_ctx *ctx, const struct ts_expr *var)
{
	int n = ts_ctx_size_var_count(ctx);
	for (int i = 0; var && i < n; i++)
		if (ctx->size_var[i] == var)
			return i;
	return -1;
}
