/*
 * fuzz_schedule.c - libFuzzer harness for schedules, lowering and the CPU
 * code paths.
 *
 * The input bytes, one per choice, pick a small compute (matmul-like,
 * elementwise or a row sum, extents 1..40) and a random schedule over it:
 * the space of tests/test_schedule_random.c plus tile (the generator is
 * tests/random_schedule.c), rfactor and tensorize included.  The lowered function runs in the loop-IR
 * interpreter (every access bounds-checked) and through the LLVM JIT, and
 * both must match the reference evaluator (ts_eval) on random data.
 *
 * A primitive that refuses is part of the search, not a finding.  A finding
 * is anything else that fails: lowering a schedule the primitives accepted
 * (except the limits only lowering checks: vector lanes, unrolled extent),
 * the interpreter or the JIT refusing the lowered function, a wrong element,
 * or a crash.  It prints the case and the schedule and aborts.
 *
 * Compiling with LLVM takes tens of milliseconds per input, so this harness
 * runs at a few inputs per second: scripts/fuzz.sh gives it a per-input
 * timeout of seconds, not milliseconds.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera.h"
#include "interp.h"
#include "llvm.h"
#include "lower.h"
#include "random_schedule.h"

static const char *kind_names[] = {"matmul", "elementwise", "rowsum"};

typedef struct run {
	ts_ctx *ctx;
	const rs_case *c;
	const ts_func *f;
	ts_array *want[3], *got[3];
} run;

static void report(const run *r, const char *what)
{
	const rs_case *c = r->c;
	fprintf(stderr, "fuzz_schedule: %s\n  %s, M %lld N %lld K %lld\n  error: %s\nschedule:\n%s\n",
		what, kind_names[c->kind], (long long)c->M, (long long)c->N, (long long)c->K,
		ts_last_error(r->ctx), ts_schedule_str(c->s));
	if (r->f)
		fprintf(stderr, "lowered:\n%s\n", ir_func_str(r->ctx, r->f));
	abort();
}

/* Inputs get the same random data in both sets; outputs start as garbage
 * so that an element never written shows. */
static void make_arrays(run *r)
{
	for (int i = 0; i < r->c->nargs; i++) {
		ts_tensor *t = r->c->args[i];
		r->want[i] = ts_array_for(r->ctx, t);
		r->got[i] = ts_array_for(r->ctx, t);
		if (!r->want[i] || !r->got[i])
			report(r, "no memory for the arrays");
		bool in = t->op == TS_OP_PLACEHOLDER;
		ts_array_fill_random(r->want[i], 1234 + (uint64_t)i, in ? -1.0 : 1e6, in ? 1.0 : 2e6);
	}
}

static void reset_got(run *r)
{
	for (int i = 0; i < r->c->nargs; i++)
		memcpy(r->got[i]->data, r->want[i]->data, ts_array_nbytes(r->want[i]));
}

static void compare(run *r, const char *path)
{
	ts_array *w = r->want[r->c->nargs - 1], *g = r->got[r->c->nargs - 1];
	for (int64_t i = 0; i < ts_array_numel(w); i++) {
		double x = ts_elem_get_f64(g->data, g->dtype, i), y = ts_elem_get_f64(w->data, w->dtype, i);
		if (!(fabs(x - y) <= 1e-4 + 1e-4 * fabs(y))) {
			char what[256];
			snprintf(what, sizeof(what), "%s: C element %lld is %.9g, the reference says %.9g", path,
				 (long long)i, x, y);
			report(r, what);
		}
	}
}

static void data_of(ts_array *const *a, int n, void **out)
{
	for (int i = 0; i < n; i++)
		out[i] = a[i]->data;
}

static void check(run *r)
{
	void *args[3];
	int n = r->c->nargs;
	make_arrays(r);
	reset_got(r);
	data_of(r->want, n, args);
	if (ts_eval(r->ctx, n, r->c->args, args) != TS_OK)
		report(r, "the reference evaluator failed");
	data_of(r->got, n, args);
	if (cg_interp_run(r->ctx, r->f, args) != TS_OK)
		report(r, "the interpreter failed");
	compare(r, "interpreter");
	reset_got(r);
	cg_llvm_module *m = cg_llvm_compile(r->ctx, r->f, NULL);
	ts_cpu_entry entry = m ? cg_llvm_entry(m) : NULL;
	if (!entry)
		report(r, "LLVM compilation failed");
	if (entry(args) != 0)
		report(r, "the compiled function returned an error");
	cg_llvm_free(m);
	compare(r, "LLVM");
	for (int i = 0; i < n; i++) {
		ts_array_free(r->want[i]);
		ts_array_free(r->got[i]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ts_ctx *ctx = ts_ctx_new();
	if (!ctx)
		return 0;
	rs_rng rng = {0, data, size, 0};
	rs_options o = {40, 40, true, true, true, true, true, true, true, true};
	rs_case c;
	run r = {ctx, &c, NULL, {NULL}, {NULL}};
	if (!rs_build(ctx, &rng, &o, &c)) {
		fprintf(stderr, "fuzz_schedule: the compute was not built: %s\n", ts_last_error(ctx));
		abort();
	}
	r.f = ts_lower(c.s, "fuzz", c.nargs, c.args);
	if (!r.f && !rs_lower_refusal_ok(ts_last_error(ctx)))
		report(&r, "lowering refused a schedule the primitives accepted");
	if (r.f)
		check(&r);
	ts_ctx_free(ctx);
	return 0;
}
