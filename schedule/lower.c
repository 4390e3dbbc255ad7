/*
 * lower.c - the lowering pipeline: the whole compiler between a schedule
 * and codegen, as one flat list of passes.
 */
#include "lower.h"

#include <string.h>

#include "check_reads.h"
#include "passes.h"
#include "printer.h"
#include "te.h"
#include "verify.h"

const char *const ts_lower_pass_names[] = {
	"schedule_ops", "flatten", "double_buffer", "simplify", "version_guards", "loop_partition", "unroll",
	"vectorize_legal", NULL,
};

/* The passes after flatten, in order; some leave work for simplify. */
static const struct {
	const char *name;
	ts_stmt *(*pass)(ts_ctx *, ts_stmt *);
	bool then_simplify;
} pipeline[] = {
	{"double_buffer", pass_double_buffer, false},
	{"simplify", pass_simplify, false},
	{"version_guards", pass_version_guards, true},
	{"loop_partition", pass_loop_partition, true},
	{"unroll", pass_unroll, true},
	{"vectorize_legal", pass_vectorize_legal, false},
};

/* Parameters of one function; ts_module_run passes them in a fixed array. */
#define MAX_ARGS 64

static bool known_pass(const char *name)
{
	for (int i = 0; ts_lower_pass_names[i]; i++)
		if (strcmp(ts_lower_pass_names[i], name) == 0)
			return true;
	return false;
}

static bool in_args(const ts_tensor *t, int nargs, ts_tensor *const *args)
{
	for (int i = 0; i < nargs; i++)
		if (args[i] == t)
			return true;
	return false;
}

static ts_status check_args(ts_schedule *s, const char *name, int nargs, ts_tensor *const *args)
{
	ts_ctx *ctx = s->ctx;
	if (!name || !name[0])
		return ts_error(ctx, TS_ERR_INVALID, "lower: the function name is NULL or empty");
	if (nargs < 0 || nargs > MAX_ARGS || (nargs > 0 && !args))
		return ts_error(ctx, TS_ERR_INVALID, "lower(%s): %d arguments in %s (0 to %d allowed)",
				name, nargs, args ? "a list" : "a NULL list", MAX_ARGS);
	for (int i = 0; i < nargs; i++) {
		if (!args[i])
			return ts_error(ctx, TS_ERR_INVALID, "lower(%s): argument %d is NULL", name, i);
		if (args[i]->ctx && args[i]->ctx != ctx)
			return ts_error(ctx, TS_ERR_INVALID,
					"lower(%s): argument %d (%s) belongs to another context", name, i,
					args[i]->name);
		for (int j = 0; j < i; j++)
			if (args[j] == args[i])
				return ts_error(ctx, TS_ERR_INVALID, "lower(%s): tensor %s is listed twice",
						name, args[i]->name);
		bool output = false;
		for (int j = 0; j < s->nout; j++)
			output |= s->outputs[j] == args[i];
		if (args[i]->op != TS_OP_PLACEHOLDER && !output)
			return ts_error(ctx, TS_ERR_INVALID,
					"lower(%s): argument %s is an intermediate result, not a placeholder or an output",
					name, args[i]->name);
	}
	for (int j = 0; j < s->nout; j++)
		if (!in_args(s->outputs[j], nargs, args))
			return ts_error(ctx, TS_ERR_INVALID, "lower(%s): output %s is not in the argument list",
					name, s->outputs[j]->name);
	int m;
	ts_tensor **order = sch_tensors(s, &m);
	if (!order)
		return ts_last_status(ctx);
	for (int i = 0; i < m; i++)
		if (order[i]->op == TS_OP_PLACEHOLDER && !in_args(order[i], nargs, args))
			return ts_error(ctx, TS_ERR_INVALID,
					"lower(%s): placeholder %s is not in the argument list", name,
					order[i]->name);
	return TS_OK;
}

/* Loops around st's body: its leaf axes, plus, for each stage it is
 * computed at, the loops down to the attachment axis.  Attachments form no
 * cycle (compute_at checks), but the walk is bounded anyway. */
static int loop_nest(const ts_schedule *s, const ts_stage *st)
{
	int depth = st->nleaf;
	for (int hops = 0; st->attach == SCH_ATTACH_AT && st->attach_stage && hops < s->nstages;
	     hops++) {
		const ts_stage *p = st->attach_stage;
		int at = p->nleaf - 1;
		while (at >= 0 && p->leaf[at] != st->attach_axis)
			at--;
		depth += at < 0 ? p->nleaf : at + 1;
		st = p;
	}
	return depth;
}

static ts_status check_nesting(ts_schedule *s, const char *name)
{
	for (int i = 0; i < s->nstages; i++) {
		int depth = loop_nest(s, s->stages[i]);
		if (depth > TS_MAX_LOOP_NEST)
			return ts_error(s->ctx, TS_ERR_INVALID,
					"lower(%s): stage %s is nested %d loops deep (at most %d, "
					"TS_MAX_LOOP_NEST): fewer splits or a shorter compute_at chain",
					name, s->stages[i]->name, depth, TS_MAX_LOOP_NEST);
	}
	return TS_OK;
}

/* ---- vectorize demotions ----------------------------------------------------------- */

/* The vectorized loops of a body, by variable, and a reason each may not
 * stay vectorized (what vectorize_legal looks for). */
typedef struct vec_loops {
	ts_expr *var[256];
	const char *why[256];
	int n;
	const char *inner; /* scratch: what the loop being looked at holds */
} vec_loops;

static bool inner_fn(ts_stmt *s, void *data)
{
	vec_loops *v = data;
	if (v->inner)
		return false;
	if (s->kind == IR_S_FOR)
		v->inner = "an inner loop";
	else if (s->kind == IR_S_ALLOCATE)
		v->inner = "an allocation";
	else if (s->kind == IR_S_BARRIER)
		v->inner = "a barrier";
	return !v->inner;
}

static bool vec_fn(ts_stmt *s, void *data)
{
	vec_loops *v = data;
	if (s->kind != IR_S_FOR || s->u.for_.kind != TS_FOR_VECTORIZED || v->n >= 256)
		return true;
	v->inner = NULL;
	ir_stmt_visit(s->u.for_.body, inner_fn, NULL, v);
	v->why[v->n] = v->inner ? v->inner : "its extent is 1";
	v->var[v->n++] = s->u.for_.var;
	return true;
}

static bool still_vectorized(const vec_loops *after, const ts_expr *var)
{
	for (int i = 0; i < after->n; i++)
		if (after->var[i] == var)
			return true;
	return false;
}

/* f->warnings: one line per vectorized loop of `before` that the
 * vectorize_legal pass made serial in f's body; printed to stderr once
 * when the context prints passes. */
static void note_demotions(ts_ctx *ctx, ts_func *f, ts_stmt *before)
{
	vec_loops *b = ts_alloc(ctx, sizeof(*b)), *a = ts_alloc(ctx, sizeof(*a));
	if (!b || !a)
		return;
	ir_stmt_visit(before, vec_fn, NULL, b);
	ir_stmt_visit(f->body, vec_fn, NULL, a);
	ts_sbuf sb = {0};
	for (int i = 0; i < b->n; i++) {
		if (still_vectorized(a, b->var[i]))
			continue;
		/* a loop copied by partitioning is one loop to the user: one line */
		bool said = false;
		for (int j = 0; j < i && !said; j++)
			said = !still_vectorized(a, b->var[j]) && b->why[j] == b->why[i] &&
			       !strcmp(b->var[j]->u.var.name, b->var[i]->u.var.name);
		if (!said)
			ts_sb_printf(&sb, "vectorize: loop '%s' runs serially: its body has %s\n",
				     b->var[i]->u.var.name, b->why[i]);
	}
	if (sb.len && !sb.oom) {
		f->warnings = ts_strdup(ctx, ts_sb_str(&sb));
		if (ts_ctx_print_passes(ctx))
			fprintf(stderr, "// ---- warnings\n%s", ts_sb_str(&sb));
	}
	ts_sb_free(&sb);
}

static void show(ts_ctx *ctx, const char *pass, const ts_func *f)
{
	if (!ts_ctx_print_passes(ctx) || !f)
		return;
	fprintf(stderr, "// ---- after %s\n", pass);
	ir_print_func(stderr, f);
}

/* One step of the pipeline: print and verify what the pass made, and stop
 * (returning true) after the pass named last or on a verifier failure. */
static bool step(ts_ctx *ctx, const char *pass, ts_func *f, const char *last)
{
	show(ctx, pass, f);
	if (ir_verify_func(ctx, f, pass) != TS_OK) {
		f->body = NULL;
		return true;
	}
	return last && strcmp(pass, last) == 0;
}

/* The pipeline, after the arguments are checked (and cleared the error
 * slot), up to the pass named last (NULL: all). */
static ts_func *lower(ts_schedule *s, const char *name, int nargs, ts_tensor *const *args,
		      const char *last, const sch_spec *spec)
{
	ts_ctx *ctx = s->ctx;
	if (check_nesting(s, name) != TS_OK || sch_check_reads(ctx, s) != TS_OK)
		return NULL;
	ts_stmt *body = pass_schedule_ops(ctx, s, NULL);
	/* a failure inside a sequence of statements leaves the others (ir_seq
	 * drops NULL entries) but not the error slot, which lower_args
	 * cleared: a nest that lost a part is a failure, not a smaller nest */
	if (!body || ts_last_status(ctx) != TS_OK)
		return NULL;
	if (last && strcmp(last, "schedule_ops") == 0) {
		ts_func *f = pass_flatten(ctx, ir_evaluate(ctx, ts_int(ctx, 0)), name, nargs, args, s);
		if (f)
			f->body = body;
		show(ctx, "schedule_ops", f);
		return f;
	}
	ts_func *f = pass_flatten(ctx, body, name, nargs, args, s);
	if (f && ts_last_status(ctx) != TS_OK)
		return NULL;
	if (!f || step(ctx, "flatten", f, last))
		return f && f->body ? f : NULL;
	for (size_t i = 0; i < TS_COUNT_OF(pipeline); i++) {
		ts_stmt *before = f->body;
		f->body = pipeline[i].pass(ctx, f->body);
		if (f->body && pipeline[i].pass == pass_vectorize_legal)
			note_demotions(ctx, f, before);
		/* a specialization's constants enter once the tile tests are
		 * placed, so its twin runs the same code (passes.h) */
		if (f->body && spec && pipeline[i].pass == pass_version_guards && !sch_specialize(ctx, f, spec))
			f->body = NULL;
		if (f->body && pipeline[i].then_simplify)
			f->body = pass_simplify(ctx, f->body);
		if (f->body && ts_last_status(ctx) != TS_OK)
			return NULL;
		if (!f->body || step(ctx, pipeline[i].name, f, last))
			return f->body ? f : NULL;
	}
	return f;
}

/* Checks the arguments every entry shares; clears a stale error. */
static bool lower_args(ts_schedule *s, const char *name, int nargs, ts_tensor *const *args,
		       const char *last)
{
	ts_ctx *ctx = s->ctx;
	if (check_args(s, name, nargs, args) != TS_OK)
		return false;
	if (last && !known_pass(last)) {
		ts_error(ctx, TS_ERR_INVALID,
			 "lower(%s): unknown pass '%s' (schedule_ops, flatten, double_buffer, simplify, version_guards, loop_partition, unroll, vectorize_legal)",
			 name, last);
		return false;
	}
	/* the arguments are sound: an error left from an earlier call (a
	 * refused build, a primitive that failed) is not this lowering's, and
	 * the passes, which tell failure by the error slot, must not see it */
	ts_clear_error(ctx);
	return true;
}

ts_func *ts_lower_until(ts_schedule *s, const char *name, int nargs, ts_tensor *const *args,
			const char *last)
{
	if (!s || !lower_args(s, name, nargs, args, last))
		return NULL;
	return lower(s, name, nargs, args, last, NULL);
}

ts_func *ts_lower(ts_schedule *s, const char *name, int nargs, ts_tensor *const *args)
{
	return ts_lower_until(s, name, nargs, args, NULL);
}

static ts_status check_spec(ts_ctx *ctx, const char *name, int n, const int64_t *sizes,
			    const int64_t *values, sch_spec *spec)
{
	if (n < 0 || n > TS_MAX_SIZE_VARS || (n > 0 && (!sizes || !values)))
		return ts_error(ctx, TS_ERR_INVALID,
				"lower_specialize(%s): %d sizes with %s (0 to %d, and both lists)", name,
				n, !sizes || !values ? "a NULL list" : "lists", TS_MAX_SIZE_VARS);
	spec->n = 0;
	for (int i = 0; i < n; i++) {
		int64_t max = 0;
		ts_expr *v = ts_is_size_var(sizes[i])
			? ts_ctx_size_var(ctx, ts_ctx_size_handle_index(ctx, sizes[i]), &max) : NULL;
		if (!v && ts_is_size_var(sizes[i]))
			return ts_error(ctx, TS_ERR_INVALID,
					"lower_specialize(%s): size %d is a size variable of another context",
					name, i);
		if (!v)
			return ts_error(ctx, TS_ERR_INVALID,
					"lower_specialize(%s): size %d (%lld) is not a size variable",
					name, i, (long long)sizes[i]);
		if (values[i] < 1 || values[i] > max)
			return ts_error(ctx, TS_ERR_INVALID,
					"lower_specialize(%s): %s = %lld is outside 1..%lld", name,
					v->u.var.name, (long long)values[i], (long long)max);
		for (int j = 0; j < i; j++)
			if (spec->var[j] == v)
				return ts_error(ctx, TS_ERR_INVALID,
						"lower_specialize(%s): %s is given twice", name,
						v->u.var.name);
		spec->var[spec->n] = v;
		spec->value[spec->n++] = values[i];
	}
	return TS_OK;
}

ts_func *ts_lower_specialize(ts_schedule *s, const char *name, int nargs, ts_tensor *const *args,
			     int nsizes, const int64_t *sizes, const int64_t *values)
{
	if (!s || !lower_args(s, name, nargs, args, NULL))
		return NULL;
	sch_spec *spec = ts_alloc(s->ctx, sizeof(*spec));
	if (!spec || check_spec(s->ctx, name, nsizes, sizes, values, spec) != TS_OK)
		return NULL;
	return lower(s, name, nargs, args, NULL, spec);
}

const char *ts_lower_warnings(const ts_func *f)
{
	return !f ? NULL : f->warnings ? f->warnings : "";
}

const char *ts_schedule_bounds_str(ts_schedule *s)
{
	if (!s)
		return NULL;
	ts_ctx *ctx = s->ctx;
	ts_error_stashed saved;
	ts_error_stash(ctx, &saved);
	ts_sbuf sb = {0};
	ts_stmt *body = pass_schedule_ops(ctx, s, &sb);
	const char *r = sb.oom ? NULL
		: body ? ts_strdup(ctx, ts_sb_str(&sb))
		       : ts_sprintf(ctx, "  (lowering fails: %s)\n", ts_last_error(ctx));
	ts_sb_free(&sb);
	ts_error_unstash(ctx, &saved);
	return r;
}
