/*
 * printer.c - text form of the IR; conventions in printer.h.
 *
 * Precedence levels decide parentheses: a child is wrapped only when it
 * binds more loosely than its parent requires.
 */
#include "printer.h"

#include <stdlib.h>
#include <string.h>

enum { P_OR = 1, P_AND, P_CMP, P_ADD, P_MUL, P_UNARY, P_ATOM };

/* Binding strength and infix spelling per kind; 0 / NULL: not infix. */
static const int kind_prec[IR_EXPR_KIND_COUNT] = {
	[IR_OR] = P_OR, [IR_AND] = P_AND,
	[IR_EQ] = P_CMP, [IR_NE] = P_CMP, [IR_LT] = P_CMP, [IR_LE] = P_CMP,
	[IR_GT] = P_CMP, [IR_GE] = P_CMP,
	[IR_ADD] = P_ADD, [IR_SUB] = P_ADD,
	[IR_MUL] = P_MUL, [IR_DIV] = P_MUL, [IR_TRUNCDIV] = P_MUL, [IR_TRUNCMOD] = P_MUL,
	[IR_NOT] = P_UNARY,
};
static const char *const kind_infix[IR_EXPR_KIND_COUNT] = {
	[IR_ADD] = " + ", [IR_SUB] = " - ", [IR_MUL] = "*", [IR_DIV] = "/",
	[IR_TRUNCDIV] = "/", [IR_TRUNCMOD] = "%", [IR_EQ] = " == ", [IR_NE] = " != ",
	[IR_LT] = " < ", [IR_LE] = " <= ", [IR_GT] = " > ", [IR_GE] = " >= ",
	[IR_AND] = " && ", [IR_OR] = " || ",
};

static int prec(const ts_expr *e)
{
	if (e->kind == IR_INT_IMM)
		return e->u.int_imm < 0 ? P_UNARY : P_ATOM;
	if (e->kind == IR_FLOAT_IMM)
		return e->u.float_imm < 0 ? P_UNARY : P_ATOM;
	int p = (unsigned)e->kind < IR_EXPR_KIND_COUNT ? kind_prec[e->kind] : 0;
	return p ? p : P_ATOM;
}

static const char *infix(ir_expr_kind k)
{
	return (unsigned)k < IR_EXPR_KIND_COUNT ? kind_infix[k] : NULL;
}

static void sub(ts_sbuf *sb, const ts_expr *e, int min_prec)
{
	bool paren = prec(e) < min_prec;
	if (paren)
		ts_sb_putc(sb, '(');
	ir_sb_expr(sb, e);
	if (paren)
		ts_sb_putc(sb, ')');
}

static void imm(ts_sbuf *sb, const ts_expr *e)
{
	char t[24];
	if (e->kind == IR_INT_IMM) {
		if (e->dtype.code == TS_TYPE_BOOL)
			ts_sb_puts(sb, e->u.int_imm ? "true" : "false");
		else if (ts_dtype_eq(e->dtype, ts_int32))
			ts_sb_printf(sb, "%lld", (long long)e->u.int_imm);
		else
			ts_sb_printf(sb, "%s(%lld)", ts_dtype_str(e->dtype, t), (long long)e->u.int_imm);
		return;
	}
	char num[40];
	snprintf(num, sizeof(num), "%.9g", e->u.float_imm);
	if (!strpbrk(num, ".eni"))
		strcat(num, ".0");
	if (ts_dtype_eq(e->dtype, ts_float32))
		ts_sb_printf(sb, "%sf", num);
	else
		ts_sb_printf(sb, "%s(%s)", ts_dtype_str(e->dtype, t), num);
}

static void args(ts_sbuf *sb, int n, ts_expr *const *a)
{
	for (int i = 0; i < n; i++) {
		if (i)
			ts_sb_puts(sb, ", ");
		ir_sb_expr(sb, a[i]);
	}
}

static void reduce(ts_sbuf *sb, const ts_expr *e)
{
	ts_sb_printf(sb, "%s(", ts_reduce_op_name(e->u.reduce.op));
	ir_sb_expr(sb, e->u.reduce.source);
	ts_sb_puts(sb, ", axis=[");
	for (int i = 0; i < e->u.reduce.naxes; i++) {
		const ts_iter *it = e->u.reduce.axes[i];
		ts_sb_printf(sb, "%s%s: %lld..%lld", i ? ", " : "", it->var->u.var.name,
			     (long long)it->min, (long long)(it->min + it->extent));
	}
	ts_sb_putc(sb, ']');
	if (e->u.reduce.init) {
		ts_sb_puts(sb, ", init=");
		ir_sb_expr(sb, e->u.reduce.init);
	}
	ts_sb_putc(sb, ')');
}

void ir_sb_expr(ts_sbuf *sb, const ts_expr *e)
{
	char t[24];
	if (!sb)
		return;
	if (!e) {
		ts_sb_puts(sb, "<null>");
		return;
	}
	const char *op = infix(e->kind);
	if (op) {
		int p = prec(e);
		/* left-associative: the right operand needs strictly tighter binding */
		sub(sb, e->u.bin.a, p);
		ts_sb_puts(sb, op);
		sub(sb, e->u.bin.b, p + 1);
		return;
	}
	switch (e->kind) {
	case IR_INT_IMM:
	case IR_FLOAT_IMM:
		imm(sb, e);
		return;
	case IR_VAR:
		ts_sb_puts(sb, e->u.var.name);
		return;
	case IR_FLOORDIV: case IR_FLOORMOD: case IR_MIN: case IR_MAX:
		ts_sb_printf(sb, "%s(", e->kind == IR_FLOORDIV ? "floordiv" :
				       e->kind == IR_FLOORMOD ? "floormod" :
				       e->kind == IR_MIN ? "min" : "max");
		args(sb, 2, (ts_expr *[]){e->u.bin.a, e->u.bin.b});
		ts_sb_putc(sb, ')');
		return;
	case IR_NOT:
		ts_sb_putc(sb, '!');
		sub(sb, e->u.un.a, P_UNARY);
		return;
	case IR_CAST:
		ts_sb_printf(sb, "%s(", ts_dtype_str(e->dtype, t));
		ir_sb_expr(sb, e->u.un.a);
		ts_sb_putc(sb, ')');
		return;
	case IR_SELECT:
		ts_sb_puts(sb, "select(");
		args(sb, 3, (ts_expr *[]){e->u.select.cond, e->u.select.t, e->u.select.f});
		ts_sb_putc(sb, ')');
		return;
	case IR_CALL:
		ts_sb_printf(sb, "%s(", ir_intrinsic_name(e->u.call.op));
		args(sb, e->u.call.nargs, e->u.call.args);
		ts_sb_putc(sb, ')');
		return;
	case IR_READ:
		ts_sb_printf(sb, "%s[", e->u.read.tensor->name);
		args(sb, e->u.read.n, e->u.read.idx);
		ts_sb_putc(sb, ']');
		return;
	case IR_LOAD:
		ts_sb_printf(sb, "%s[", e->u.load.buf->name);
		ir_sb_expr(sb, e->u.load.index);
		ts_sb_putc(sb, ']');
		return;
	case IR_RAMP:
		ts_sb_puts(sb, "ramp(");
		ir_sb_expr(sb, e->u.ramp.base);
		ts_sb_printf(sb, ", %lld, %d)", (long long)e->u.ramp.stride, e->u.ramp.lanes);
		return;
	case IR_BROADCAST:
		ts_sb_puts(sb, "broadcast(");
		ir_sb_expr(sb, e->u.bcast.value);
		ts_sb_printf(sb, ", %d)", e->u.bcast.lanes);
		return;
	case IR_REDUCE:
		reduce(sb, e);
		return;
	case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV: case IR_TRUNCDIV:
	case IR_TRUNCMOD: case IR_EQ: case IR_NE: case IR_LT: case IR_LE: case IR_GT:
	case IR_GE: case IR_AND: case IR_OR: /* printed as infix above */
	case IR_EXPR_KIND_COUNT:
		break;
	}
	ts_sb_printf(sb, "<%s>", ir_expr_kind_name(e->kind));
}

static void loop_head(ts_sbuf *sb, const ts_stmt *s)
{
	if (s->u.for_.kind == TS_FOR_THREAD)
		ts_sb_printf(sb, "bind %s (", ts_thread_tag_name(s->u.for_.thread));
	else
		ts_sb_printf(sb, "%s (", ts_for_kind_name(s->u.for_.kind));
	ts_sb_printf(sb, "%s, ", s->u.for_.var->u.var.name);
	ir_sb_expr(sb, s->u.for_.min);
	ts_sb_puts(sb, ", ");
	ir_sb_expr(sb, s->u.for_.extent);
	ts_sb_puts(sb, ") {\n");
}

static void block(ts_sbuf *sb, const ts_stmt *body, int indent)
{
	ir_sb_stmt(sb, body, indent + 1);
	ts_sb_indent(sb, indent);
	ts_sb_puts(sb, "}\n");
}

void ir_sb_stmt(ts_sbuf *sb, const ts_stmt *s, int indent)
{
	char t[24];
	if (!sb || !s)
		return;
	indent = ts_sb_indent_level(indent); /* the nested indent + 1 cannot overflow */
	if (s->kind == IR_S_SEQ) {
		for (int i = 0; i < s->u.seq.n; i++)
			ir_sb_stmt(sb, s->u.seq.s[i], indent);
		return;
	}
	ts_sb_indent(sb, indent);
	switch (s->kind) {
	case IR_S_FOR:
		loop_head(sb, s);
		block(sb, s->u.for_.body, indent);
		return;
	case IR_S_STORE:
		ts_sb_printf(sb, "%s[", s->u.store.buf->name);
		ir_sb_expr(sb, s->u.store.index);
		ts_sb_puts(sb, "] = ");
		ir_sb_expr(sb, s->u.store.value);
		ts_sb_putc(sb, '\n');
		return;
	case IR_S_PROVIDE:
		ts_sb_printf(sb, "%s[", s->u.provide.tensor->name);
		args(sb, s->u.provide.n, s->u.provide.idx);
		ts_sb_puts(sb, "] = ");
		ir_sb_expr(sb, s->u.provide.value);
		ts_sb_putc(sb, '\n');
		return;
	case IR_S_REALIZE:
		ts_sb_printf(sb, "realize %s(", s->u.realize.tensor->name);
		for (int i = 0; i < s->u.realize.n; i++) {
			ts_sb_puts(sb, i ? ", [" : "[");
			ir_sb_expr(sb, s->u.realize.min[i]);
			ts_sb_printf(sb, ", %lld]", (long long)s->u.realize.extent[i]);
		}
		ts_sb_printf(sb, ") in %s {\n", ts_scope_name(s->u.realize.scope));
		block(sb, s->u.realize.body, indent);
		return;
	case IR_S_ALLOCATE:
		ts_sb_printf(sb, "allocate %s[%s * %lld] in %s%s {\n", s->u.alloc.buf->name,
			     ts_dtype_str(s->u.alloc.buf->dtype, t),
			     (long long)s->u.alloc.buf->size, ts_scope_name(s->u.alloc.buf->scope),
			     s->u.alloc.buf->double_buffer ? ", double-buffered" : "");
		block(sb, s->u.alloc.body, indent);
		return;
	case IR_S_IF:
		ts_sb_puts(sb, "if (");
		ir_sb_expr(sb, s->u.if_.cond);
		ts_sb_puts(sb, ") {\n");
		ir_sb_stmt(sb, s->u.if_.then_s, indent + 1);
		if (s->u.if_.else_s) {
			ts_sb_indent(sb, indent);
			ts_sb_puts(sb, "} else {\n");
			ir_sb_stmt(sb, s->u.if_.else_s, indent + 1);
		}
		ts_sb_indent(sb, indent);
		ts_sb_puts(sb, "}\n");
		return;
	case IR_S_LET:
		ts_sb_printf(sb, "let %s = ", s->u.let.var->u.var.name);
		ir_sb_expr(sb, s->u.let.value);
		ts_sb_putc(sb, '\n');
		ir_sb_stmt(sb, s->u.let.body, indent);
		return;
	case IR_S_EVALUATE:
		ir_sb_expr(sb, s->u.eval.value);
		ts_sb_putc(sb, '\n');
		return;
	case IR_S_BARRIER:
		ts_sb_puts(sb, "barrier()\n");
		return;
	case IR_S_PREFETCH:
		ts_sb_puts(sb, "prefetch(");
		ir_sb_expr(sb, s->u.prefetch.value);
		ts_sb_puts(sb, ")\n");
		return;
	case IR_S_SEQ:
	case IR_STMT_KIND_COUNT:
		break;
	}
	ts_sb_puts(sb, "<?>\n");
}

/* What makes f unprintable (a function built by hand may have anything in
 * its header), or NULL when it prints; a message made here goes in why. */
static const char *func_problem(const ts_func *f, char why[64])
{
	if (!f->name)
		return "its name is NULL";
	if (f->nparams < 0 || (f->nparams > 0 && !f->params)) {
		snprintf(why, 64, "%d parameters in %s", f->nparams,
			 f->params ? "a list" : "a NULL list");
		return why;
	}
	for (int i = 0; i < f->nparams; i++) {
		if (!f->params[i] || !f->params[i]->name) {
			snprintf(why, 64, "parameter %d is %s", i,
				 f->params[i] ? "unnamed" : "NULL");
			return why;
		}
	}
	return NULL;
}

void ir_sb_func(ts_sbuf *sb, const ts_func *f)
{
	char t[24], why[64];
	if (!sb || !f)
		return;
	const char *bad = func_problem(f, why);
	if (bad) {
		ts_sb_printf(sb, "<bad function: %s>\n", bad);
		return;
	}
	ts_sb_printf(sb, "func %s(", f->name);
	for (int i = 0; i < f->nparams; i++) {
		const ts_buffer *b = f->params[i];
		ts_sb_printf(sb, "%s%s: %s[", i ? ", " : "", b->name, ts_dtype_str(b->dtype, t));
		for (int d = 0; d < b->ndim; d++)
			ts_sb_printf(sb, "%s%lld", d ? ", " : "", (long long)b->shape[d]);
		ts_sb_putc(sb, ']');
	}
	ts_sb_puts(sb, ") {\n");
	ir_sb_stmt(sb, f->body, 1);
	ts_sb_puts(sb, "}\n");
}

/* The walk behind ts_graph_topo: a depth-first search with an explicit
 * stack, so that a chain of 100,000 stages does not overflow the C stack,
 * and a set of the tensors seen, so that a subgraph shared by many paths is
 * walked once.  Both grow on the heap as the graph needs. */
enum { TOPO_START = 64 };

typedef struct topo_frame {
	ts_tensor *t;
	int next; /* the next input of t to walk */
} topo_frame;

typedef struct topo_walk {
	ts_tensor **slot; /* open addressing; NULL: empty */
	size_t cap, n;    /* cap a power of two, never more than half full */
	topo_frame *stack;
	size_t depth, stack_cap;
} topo_walk;

static size_t topo_hash(const ts_tensor *t, size_t cap)
{
	uint64_t h = (uint64_t)(uintptr_t)t * UINT64_C(0x9e3779b97f4a7c15);
	return (size_t)(h >> 32) & (cap - 1);
}

/* Puts t in the slots (cap a power of two, with room). */
static void topo_put(ts_tensor **slot, size_t cap, ts_tensor *t)
{
	size_t i = topo_hash(t, cap);
	while (slot[i])
		i = (i + 1) & (cap - 1);
	slot[i] = t;
}

/* Adds t to the seen set: 1 when new, 0 when seen before, -1 when out of
 * memory. */
static int topo_mark(topo_walk *w, ts_tensor *t)
{
	size_t i = topo_hash(t, w->cap);
	for (; w->slot[i]; i = (i + 1) & (w->cap - 1))
		if (w->slot[i] == t)
			return 0;
	if (2 * (w->n + 1) <= w->cap) {
		w->slot[i] = t;
		w->n++;
		return 1;
	}
	size_t cap = 2 * w->cap;
	ts_tensor **slot = cap <= SIZE_MAX / sizeof(*slot) ? calloc(cap, sizeof(*slot)) : NULL;
	if (!slot)
		return -1;
	for (size_t j = 0; j < w->cap; j++)
		if (w->slot[j])
			topo_put(slot, cap, w->slot[j]);
	free(w->slot);
	w->slot = slot;
	w->cap = cap;
	topo_put(slot, cap, t);
	w->n++;
	return 1;
}

static bool topo_push(topo_walk *w, ts_tensor *t)
{
	if (w->depth == w->stack_cap) {
		size_t cap = 2 * w->stack_cap;
		topo_frame *st = cap <= SIZE_MAX / sizeof(*st) ? realloc(w->stack, cap * sizeof(*st)) : NULL;
		if (!st)
			return false;
		w->stack = st;
		w->stack_cap = cap;
	}
	w->stack[w->depth++] = (topo_frame){t, 0};
	return true;
}

/* Walks t's producers, then t, unless seen; the count of tensors so far
 * (order takes the first max), or -1 when out of memory or a compute
 * lists a NULL input. */
static int topo_visit(topo_walk *w, ts_tensor *root, ts_tensor **order, int count, int max)
{
	int r = topo_mark(w, root);
	if (r <= 0)
		return r < 0 ? -1 : count;
	if (!topo_push(w, root))
		return -1;
	while (w->depth > 0) {
		topo_frame *f = &w->stack[w->depth - 1];
		ts_tensor *t = f->t;
		if (t->op == TS_OP_COMPUTE && f->next < t->ninputs) {
			ts_tensor *in = t->inputs[f->next++];
			r = in ? topo_mark(w, in) : -1;
			if (r < 0 || (r > 0 && !topo_push(w, in)))
				return -1;
			continue;
		}
		/* every input is placed: t comes after its producers */
		if (count < max)
			order[count] = t;
		count++;
		w->depth--;
	}
	return count;
}

int ts_graph_topo(int n, ts_tensor *const *outputs, ts_tensor **order, int max)
{
	int count = 0;
	if (n < 0 || (n > 0 && !outputs) || (max > 0 && !order))
		return -1;
	for (int i = 0; i < n; i++)
		if (!outputs[i])
			return -1;
	topo_walk w = {.slot = calloc(TOPO_START, sizeof(ts_tensor *)), .cap = TOPO_START,
		       .stack = malloc(TOPO_START * sizeof(topo_frame)), .stack_cap = TOPO_START};
	if (!w.slot || !w.stack)
		count = -1;
	for (int i = 0; i < n && count >= 0; i++)
		count = topo_visit(&w, outputs[i], order, count, max);
	free(w.slot);
	free(w.stack);
	return count;
}

void ir_sb_graph(ts_sbuf *sb, int n, ts_tensor *const *outputs)
{
	ts_tensor *order[256];
	int m = sb ? ts_graph_topo(n, outputs, order, 256) : -1;
	char t[24];
	for (int i = 0; i < m && i < 256; i++) {
		const ts_tensor *x = order[i];
		ts_sb_printf(sb, "%s = %s(%s, [", x->name,
			     x->op == TS_OP_PLACEHOLDER ? "placeholder" : "compute",
			     ts_dtype_str(x->dtype, t));
		for (int d = 0; d < x->ndim; d++)
			ts_sb_printf(sb, "%s%lld", d ? ", " : "", (long long)x->shape[d]);
		ts_sb_puts(sb, "])\n");
		if (x->op != TS_OP_COMPUTE)
			continue;
		ts_sb_printf(sb, "  %s[", x->name);
		for (int d = 0; d < x->ndim; d++)
			ts_sb_printf(sb, "%s%s", d ? ", " : "", x->axis[d]->var->u.var.name);
		ts_sb_puts(sb, "] = ");
		ir_sb_expr(sb, x->body);
		ts_sb_putc(sb, '\n');
	}
}

static const char *to_arena(ts_ctx *ctx, ts_sbuf *sb)
{
	const char *r = NULL;
	if (sb->oom)
		ts_error(ctx, TS_ERR_NOMEM, "printer: out of memory");
	else
		r = ts_strdup(ctx, ts_sb_str(sb));
	ts_sb_free(sb);
	return r;
}

/* A NULL context gives NULL; a NULL node is an error naming the caller. */
static bool check_str_args(ts_ctx *ctx, const char *what, const void *node, const char *kind)
{
	if (!ctx)
		return false;
	if (!node)
		ts_error(ctx, TS_ERR_INVALID, "%s: %s is NULL", what, kind);
	return node != NULL;
}

const char *ir_expr_str(ts_ctx *ctx, const ts_expr *e)
{
	if (!check_str_args(ctx, "expr_str", e, "expression"))
		return NULL;
	ts_sbuf sb = {0};
	ir_sb_expr(&sb, e);
	return to_arena(ctx, &sb);
}

const char *ir_stmt_str(ts_ctx *ctx, const ts_stmt *s)
{
	if (!check_str_args(ctx, "stmt_str", s, "statement"))
		return NULL;
	ts_sbuf sb = {0};
	ir_sb_stmt(&sb, s, 0);
	return to_arena(ctx, &sb);
}

const char *ir_func_str(ts_ctx *ctx, const ts_func *f)
{
	char why[64];
	if (!check_str_args(ctx, "func_str", f, "function"))
		return NULL;
	const char *bad = func_problem(f, why);
	if (bad) {
		ts_error(ctx, TS_ERR_INVALID, "func_str: bad function: %s", bad);
		return NULL;
	}
	ts_sbuf sb = {0};
	ir_sb_func(&sb, f);
	return to_arena(ctx, &sb);
}

const char *ts_graph_str(ts_ctx *ctx, int n, ts_tensor *const *outputs)
{
	if (!ctx)
		return NULL;
	if (n < 1 || !outputs) {
		ts_error(ctx, TS_ERR_INVALID, "graph_str: needs 1 or more outputs (got %d%s)", n,
			 outputs ? "" : ", NULL list");
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		if (!outputs[i]) {
			ts_error(ctx, TS_ERR_INVALID, "graph_str: output %d is NULL", i);
			return NULL;
		}
	}
	ts_sbuf sb = {0};
	ir_sb_graph(&sb, n, outputs);
	return to_arena(ctx, &sb);
}

static void to_file(FILE *out, ts_sbuf *sb)
{
	if (out)
		fputs(ts_sb_str(sb), out);
	ts_sb_free(sb);
}

void ir_print_expr(FILE *out, const ts_expr *e)
{
	ts_sbuf sb = {0};
	ir_sb_expr(&sb, e);
	ts_sb_putc(&sb, '\n');
	to_file(out, &sb);
}

void ir_print_stmt(FILE *out, const ts_stmt *s)
{
	ts_sbuf sb = {0};
	ir_sb_stmt(&sb, s, 0);
	to_file(out, &sb);
}

void ir_print_func(FILE *out, const ts_func *f)
{
	ts_sbuf sb = {0};
	ir_sb_func(&sb, f);
	to_file(out, &sb);
}

void ts_print_graph(FILE *out, int n, ts_tensor *const *outputs)
{
	ts_sbuf sb = {0};
	ir_sb_graph(&sb, n, outputs);
	to_file(out, &sb);
}
