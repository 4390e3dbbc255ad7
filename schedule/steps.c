/*
 * steps.c - watching the loop nest change: the text of a schedule's current
 * loop nest, and the step printer that the primitives call.
 *
 * The nest is the schedule lowered through schedule_ops, flatten and
 * simplify only (ts_lower_until), with the outputs and the placeholders they
 * read as arguments: compact enough to read after every primitive, before
 * loop_partition and unroll multiply the code.  Taking it must be invisible
 * to the caller: an error already pending is kept as it was, and an error
 * from lowering the intermediate state becomes the text ("// cannot lower
 * yet: ...") instead of a pending error.  Lowering reads the schedule and
 * only allocates in the arena, so the schedule is unchanged.
 *
 * With TS_PRINT_STEPS_DIFF each step prints a line diff against the nest of
 * the step before (kept in the schedule), with one unchanged line of context
 * around each change and "..." for the unchanged runs in between.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower.h"
#include "printer.h"
#include "sbuf.h"

#define STEP_FUNC "steps"
#define DIFF_CONTEXT 1
/* Longer nests are printed whole in diff mode (the diff is quadratic). */
#define DIFF_MAX_LINES 2000

/* Lowers the schedule as it stands; the reason as text when it cannot. */
static const char *lower_now(ts_schedule *s)
{
	ts_ctx *ctx = s->ctx;
	ts_tensor *args[256];
	ts_tensor *order[256];
	int n = ts_graph_topo(s->nout, s->outputs, order, 256), nargs = 0;
	if (n < 0 || n > 256)
		return "// cannot lower yet: the graph has more than 256 tensors\n";
	for (int i = 0; i < n; i++)
		if (order[i]->op == TS_OP_PLACEHOLDER)
			args[nargs++] = order[i];
	for (int i = 0; i < s->nout && nargs < 256; i++)
		args[nargs++] = s->outputs[i];
	ts_func *f = ts_lower_until(s, STEP_FUNC, nargs, args, "simplify");
	if (!f)
		return ts_sprintf(ctx, "// cannot lower yet: %s\n", ts_last_error(ctx));
	const char *text = ir_stmt_str(ctx, f->body);
	return text ? text : ts_sprintf(ctx, "// cannot print: %s\n", ts_last_error(ctx));
}

const char *ts_schedule_step_str(ts_schedule *s)
{
	if (!s)
		return NULL;
	ts_ctx *ctx = s->ctx;
	/* Keep the caller's pending error (only the first is kept) and do not
	 * leave lowering's behind. */
	ts_error_stashed saved;
	ts_error_stash(ctx, &saved);
	/* one nest per step, not one IR per pass of each step's lowering */
	int passes = ts_ctx_print_passes(ctx);
	ts_ctx_set_print_passes(ctx, 0);
	const char *text = lower_now(s);
	ts_ctx_set_print_passes(ctx, passes);
	ts_error_unstash(ctx, &saved);
	return text;
}

/* ---- line diff ------------------------------------------------------------ */

typedef struct {
	int n;
	const char **at; /* start of each line */
	int *len;        /* its length, without the newline */
} lines;

static bool split_lines(const char *text, lines *l)
{
	int n = 0;
	for (const char *p = text; *p; p++)
		n += *p == '\n' || p[1] == '\0';
	l->n = n;
	l->at = calloc((size_t)n + 1, sizeof(*l->at));
	l->len = calloc((size_t)n + 1, sizeof(*l->len));
	if (!l->at || !l->len)
		return false;
	const char *p = text;
	for (int i = 0; i < n; i++) {
		const char *e = strchr(p, '\n');
		l->at[i] = p;
		l->len[i] = e ? (int)(e - p) : (int)strlen(p);
		p = e ? e + 1 : p + l->len[i];
	}
	return true;
}

static bool same_line(const lines *a, int i, const lines *b, int j)
{
	return a->len[i] == b->len[j] && memcmp(a->at[i], b->at[j], (size_t)a->len[i]) == 0;
}

/* One diff line: ' ' kept, '-' removed, '+' added. */
typedef struct {
	char op;
	const char *at;
	int len;
} diff_line;

/* The edit script from a to b by longest common subsequence; returns the
 * number of lines written to out (room for a->n + b->n), -1 on no memory. */
static int edit_script(const lines *a, const lines *b, diff_line *out)
{
	size_t w = (size_t)b->n + 1;
	int *lcs = calloc(((size_t)a->n + 1) * w, sizeof(int));
	if (!lcs)
		return -1;
	for (int i = a->n - 1; i >= 0; i--)
		for (int j = b->n - 1; j >= 0; j--)
			lcs[i * w + j] = same_line(a, i, b, j) ? lcs[(i + 1) * w + j + 1] + 1
				: lcs[(i + 1) * w + j] > lcs[i * w + j + 1] ? lcs[(i + 1) * w + j]
									      : lcs[i * w + j + 1];
	int i = 0, j = 0, n = 0;
	while (i < a->n || j < b->n) {
		if (i < a->n && j < b->n && same_line(a, i, b, j))
			out[n++] = (diff_line){' ', a->at[i], a->len[i]}, i++, j++;
		else if (i < a->n && (j == b->n || lcs[(i + 1) * w + j] >= lcs[i * w + j + 1]))
			out[n++] = (diff_line){'-', a->at[i], a->len[i]}, i++;
		else
			out[n++] = (diff_line){'+', b->at[j], b->len[j]}, j++;
	}
	free(lcs);
	return n;
}

/* Kept lines farther than DIFF_CONTEXT from any change become one "...". */
static void print_script(ts_sbuf *sb, const diff_line *d, int n)
{
	bool skipped = false;
	for (int k = 0; k < n; k++) {
		bool near = d[k].op != ' ';
		for (int o = 1; o <= DIFF_CONTEXT && !near; o++)
			near = (k - o >= 0 && d[k - o].op != ' ') || (k + o < n && d[k + o].op != ' ');
		if (!near) {
			if (!skipped)
				ts_sb_puts(sb, " ...\n");
			skipped = true;
			continue;
		}
		skipped = false;
		ts_sb_printf(sb, "%c%.*s\n", d[k].op, d[k].len, d[k].at);
	}
}

static void diff_into(ts_sbuf *sb, const char *before, const char *after)
{
	lines a = {0}, b = {0};
	diff_line *d = NULL;
	int n = -1;
	if (split_lines(before, &a) && split_lines(after, &b) && a.n <= DIFF_MAX_LINES &&
	    b.n <= DIFF_MAX_LINES && (d = calloc((size_t)a.n + (size_t)b.n + 1, sizeof(*d))))
		n = edit_script(&a, &b, d);
	if (n < 0)
		ts_sb_puts(sb, after);
	else if (strcmp(before, after) == 0)
		ts_sb_puts(sb, " (the loop nest is unchanged)\n");
	else
		print_script(sb, d, n);
	free(d);
	free(a.at), free(a.len), free(b.at), free(b.len);
}

/* ---- the step printer ------------------------------------------------------- */

void sch_step(ts_schedule *s, const char *fmt, ...)
{
	int mode = s ? ts_ctx_print_steps(s->ctx) : TS_PRINT_STEPS_OFF;
	if (mode == TS_PRINT_STEPS_OFF || s->step_quiet > 0 || !fmt)
		return;
	char head[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(head, sizeof(head), fmt, ap);
	va_end(ap);
	const char *now = ts_schedule_step_str(s);
	ts_sbuf sb = {0};
	ts_sb_printf(&sb, "== %s ==\n", head);
	if (!now)
		ts_sb_puts(&sb, "// cannot print: out of memory\n");
	else if (mode == TS_PRINT_STEPS_DIFF && s->step_prev)
		diff_into(&sb, s->step_prev, now);
	else
		ts_sb_puts(&sb, now);
	if (!sb.oom)
		fputs(ts_sb_str(&sb), stderr);
	ts_sb_free(&sb);
	s->step_prev = now;
}
