/*
 * test_schedule_random.c - random schedules on random shapes must all give
 * the reference evaluator's result.
 *
 * Each trial builds P = A + 1 (elementwise) and C = sum_k P[i, k] * B[k, j]
 * (a reduction) over random extents, then applies a random sequence of
 * primitives: splits (either tail strategy, factors that often do not
 * divide), fuses, reorders, vectorize/unroll/parallel, sometimes a
 * cache_write of C computed at a random loop of C, and P inlined, computed
 * at a random loop of its reader, or at root.  Every lowered function runs
 * in the interpreter (every access bounds-checked) and every fourth through
 * the LLVM JIT.  A failing trial prints its seed and schedule.
 */
#include "testutil.h"

#include <string.h>

#include "lower.h"

typedef struct rng {
	uint64_t s;
} rng;

static uint32_t next(rng *r)
{
	r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(r->s >> 33);
}

static int pick(rng *r, int n)
{
	return (int)(next(r) % (uint32_t)n);
}

/* A random leaf of the stage. */
static ts_axis *leaf(rng *r, ts_stage *st)
{
	return st->leaf[pick(r, st->nleaf)];
}

static void random_primitive(rng *r, ts_stage *st)
{
	ts_axis *o, *i, *f;
	ts_axis *a = leaf(r, st);
	int li = 0;
	while (st->leaf[li] != a)
		li++;
	switch (pick(r, 6)) {
	case 0:
	case 1:
		ts_split_tail(st, a, 1 + pick(r, 7), pick(r, 2) ? TS_TAIL_PARTITION : TS_TAIL_GUARD, &o, &i);
		break;
	case 2:
		ts_split_nparts(st, a, 1 + pick(r, 4), &o, &i);
		break;
	case 3:
		if (li + 1 < st->nleaf && st->leaf[li + 1]->kind == a->kind)
			ts_fuse(st, a, st->leaf[li + 1], &f);
		break;
	case 4: {
		ts_axis *b = leaf(r, st);
		if (b != a)
			ts_reorder(st, TS_AXES(b, a));
		break;
	}
	default:
		if (a->kind == TS_ITER_REDUCE || pick(r, 2))
			ts_unroll(st, a);
		else
			ts_vectorize(st, a);
		break;
	}
}

/* The innermost serial data leaf may become parallel. */
static void maybe_parallel(rng *r, ts_stage *st)
{
	ts_axis *a = st->leaf[0];
	if (a->kind == TS_ITER_DATA && a->loop == TS_FOR_SERIAL && pick(r, 2))
		ts_parallel(st, a);
}

static void trial(uint64_t seed, bool jit)
{
	rng r = {seed};
	ts_ctx *ctx = ts_ctx_new();
	int64_t M = 1 + pick(&r, 13), N = 1 + pick(&r, 13), K = 1 + pick(&r, 9);
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(M, K), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(K, N), ts_float32);
	ts_expr *pi = ts_var(ctx, "pi"), *pk = ts_var(ctx, "pk");
	ts_tensor *P = ts_compute(ctx, "P", TS_SHAPE(M, K), TS_VARS(pi, pk),
				  ts_add(ctx, TS_READ(ctx, A, pi, pk), ts_float(ctx, 1)));
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, K);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(M, N), TS_VARS(i, j),
				  TS_SUM(ctx, ts_mul(ctx, TS_READ(ctx, P, i, k->var), TS_READ(ctx, B, k->var, j)), k));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *cache = NULL;
	if (pick(&r, 3) == 0) /* accumulate in a cache computed inside C's loops */
		cache = ts_stage_of(s, ts_cache_write(s, C, TS_SCOPE_LOCAL));
	ts_stage *sc = ts_stage_of(s, C), *sp = ts_stage_of(s, P);
	int steps = pick(&r, 6);
	for (int n = 0; n < steps; n++) {
		random_primitive(&r, sc);
		ts_clear_error(ctx); /* refused primitives leave the schedule as it was */
	}
	for (int n = pick(&r, 3); n > 0; n--) {
		random_primitive(&r, sp);
		ts_clear_error(ctx);
	}
	maybe_parallel(&r, sc);
	if (cache) {
		ts_compute_at(cache, sc, leaf(&r, sc));
		for (int n = pick(&r, 4); n > 0; n--) {
			random_primitive(&r, cache);
			ts_clear_error(ctx);
		}
	}
	/* P is read by the cache stage when there is one */
	ts_stage *reader = cache ? cache : sc;
	switch (pick(&r, 3)) {
	case 0: ts_compute_inline(sp); break;
	case 1: ts_compute_at(sp, reader, leaf(&r, reader)); break;
	default: break;
	}
	ts_clear_error(ctx);
	ts_func *f = ts_lower(s, "random", 3, (ts_tensor *[]){A, B, C});
	if (!f) {
		/* only the limits checked at lowering may refuse a schedule */
		ck_assert_msg(strstr(ts_last_error(ctx), "lanes") || strstr(ts_last_error(ctx), "unroll"),
			      "seed %llu: %s\n%s", (unsigned long long)seed, ts_last_error(ctx),
			      ts_schedule_str(s));
		ts_ctx_free(ctx);
		return;
	}
	char what[4096];
	snprintf(what, sizeof(what), "\nseed %llu, M %lld N %lld K %lld, schedule:\n%s",
		 (unsigned long long)seed, (long long)M, (long long)N, (long long)K, ts_schedule_str(s));
	tu_set_context(what);
	if (jit)
		tu_check_func(ctx, f, 1e-4);
	else
		tu_check_func_interp(ctx, f, 1e-4);
	tu_set_context(NULL);
	ts_ctx_free(ctx);
}

START_TEST(test_random_schedules)
{
	for (uint64_t seed = 1; seed <= 300; seed++)
		trial(seed, seed % 4 == 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("schedule_random");
	TCase *tc = tcase_create("random");
	tcase_set_timeout(tc, 900);
	tcase_add_test(tc, test_random_schedules);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
