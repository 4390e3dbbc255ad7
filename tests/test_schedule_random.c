/*
 * test_schedule_random.c - random schedules on random shapes must all give
 * the reference evaluator's result.
 *
 * Each trial builds P = A + 1 (elementwise) and C = sum_k P[i, k] * B[k, j]
 * (a reduction) over random extents, then applies a random schedule
 * (random_schedule.h): splits (either tail strategy, factors that often do
 * not divide), fuses, reorders, vectorize/unroll/parallel, sometimes a
 * cache_write of C computed at a random loop of C, and P inlined, computed
 * at a random loop of its reader, or at root.  Every lowered function runs
 * in the interpreter (every access bounds-checked) and every fourth through
 * the LLVM JIT.  A second run adds the other kinds of C, tiles and rfactor.
 * A failing trial prints its seed and schedule.
 * fuzz/fuzz_schedule explores the same space from fuzzer input.
 */
#include "testutil.h"

#include <string.h>

#include "lower.h"
#include "printer.h"
#include "random_schedule.h"

/* One case drawn from r (a seed, or bytes as the fuzzer gives them). */
static void trial_rng(rs_rng r, bool jit, const rs_options *opts)
{
	uint64_t seed = r.s;
	rs_options o = *opts;
	rs_case c;
	ts_ctx *ctx = ts_ctx_new();
	ck_assert_msg(rs_build(ctx, &r, &o, &c), "seed %llu: %s", (unsigned long long)seed,
		      ts_last_error(ctx));
	ts_func *f = ts_lower(c.s, "random", c.nargs, c.args);
	if (!f) {
		/* only the limits checked at lowering may refuse a schedule */
		ck_assert_msg(rs_lower_refusal_ok(ts_last_error(ctx)), "seed %llu: %s\n%s",
			      (unsigned long long)seed, ts_last_error(ctx), ts_schedule_str(c.s));
		ts_ctx_free(ctx);
		return;
	}
	char what[4096];
	snprintf(what, sizeof(what), "\nseed %llu, M %lld N %lld K %lld, schedule:\n%s",
		 (unsigned long long)seed, (long long)c.M, (long long)c.N, (long long)c.K,
		 ts_schedule_str(c.s));
	tu_set_context(what);
	if (jit)
		tu_check_func(ctx, f, 1e-4);
	else
		tu_check_func_interp(ctx, f, 1e-4);
	tu_set_context(NULL);
	ts_ctx_free(ctx);
}

static void trial_with(uint64_t seed, bool jit, const rs_options *opts)
{
	trial_rng((rs_rng){seed, NULL, 0, 0}, jit, opts);
}

static void trial(uint64_t seed, bool jit, bool rfactor, bool store_at, bool prefetch, bool pad)
{
	rs_options o = {13, 9, rfactor, false, rfactor, store_at, prefetch, pad, false, false};
	trial_with(seed, jit, &o);
}

START_TEST(test_random_schedules)
{
	for (uint64_t seed = 1; seed <= 300; seed++)
		trial(seed, seed % 4 == 0, false, false, false, false);
}
END_TEST

/* Any kind of C, tiles, and rfactor of C's reduction with C.rf scheduled
 * at random as well (seeds 1000 and up, so the first test's stay). */
START_TEST(test_random_schedules_rfactor)
{
	for (uint64_t seed = 1000; seed < 1300; seed++)
		trial(seed, seed % 4 == 0, true, false, false, false);
}
END_TEST

/* The same with P sometimes stored outside the loop it is computed at
 * (store_at, store_root): seeds 2000 and up. */
START_TEST(test_random_schedules_store_at)
{
	for (uint64_t seed = 2000; seed < 2300; seed++)
		trial(seed, seed % 4 == 0, true, true, false, false);
}
END_TEST

/* Everything above, and prefetches of the inputs at random loops, ahead
 * along random enclosing loops by -3..3: results unchanged, and every
 * prefetched address in bounds (the interpreter checks a prefetch as a
 * load): seeds 3000 and up. */
START_TEST(test_random_schedules_prefetch)
{
	for (uint64_t seed = 3000; seed < 3300; seed++)
		trial(seed, seed % 4 == 0, true, true, true, false);
}
END_TEST

/* Everything above with P sometimes a zero padding of a smaller A: inlined
 * into C, or computed at one of its loops, the padding's tests are
 * partitioned out of the loops that cross no border (seeds 4000 and up). */
START_TEST(test_random_schedules_pad)
{
	for (uint64_t seed = 4000; seed < 4300; seed++)
		trial(seed, seed % 4 == 0, true, true, true, true);
}
END_TEST

/* Whether the case of a seed has what the test asks for (its schedule
 * tensorized, its lowered function a double buffer's twin). */
typedef bool (*has_fn)(ts_ctx *ctx, rs_case *c);

/* Checks the cases of seeds [from, to) (through LLVM too for every
 * jit_every-th) and returns how many have what `has` asks for. */
static int trials_counting(uint64_t from, uint64_t to, int jit_every, const rs_options *o, has_fn has)
{
	int n = 0;
	for (uint64_t seed = from; seed < to; seed++) {
		trial_with(seed, seed % (uint64_t)jit_every == 0, o);
		rs_rng r = {seed, NULL, 0, 0};
		rs_case c;
		ts_ctx *ctx = ts_ctx_new();
		if (rs_build(ctx, &r, o, &c) && has(ctx, &c))
			n++;
		ts_ctx_free(ctx);
	}
	return n;
}

static bool tensorized(ts_ctx *ctx, rs_case *c)
{
	(void)ctx;
	return strstr(ts_schedule_str(c->s), "@tensorized") != NULL;
}

static bool doubled(ts_ctx *ctx, rs_case *c)
{
	ts_func *f = ts_lower(c->s, "f", c->nargs, c->args);
	return f && strstr(ir_func_str(ctx, f), ".1[");
}

/* Extents up to 40, splits by 16 and tensorize among the primitives: a
 * tensorized nest is the loops it marks on the CPU, through every pass
 * (seeds 5000 and up; those whose tensorize was accepted are counted). */
START_TEST(test_random_schedules_tensorize)
{
	rs_options o = {40, 40, true, true, true, true, false, true, true, false};
	ck_assert_int_gt(trials_counting(5000, 5150, 8, &o, tensorized), 5);
}
END_TEST

/* Everything of the tests before tensorize, with P sometimes
 * double-buffered: its loop unrolled by two, each half fetching the next
 * step's P into one copy while reading the other (seeds 6000 and up;
 * those whose double buffer lowered are counted). */
START_TEST(test_random_schedules_double_buffer)
{
	rs_options o = {13, 9, true, false, true, true, true, true, false, true};
	ck_assert_int_gt(trials_counting(6000, 6300, 4, &o, doubled), 10);
}
END_TEST

/* Inputs fuzz/fuzz_schedule found, replayed with its options (their
 * files are in its corpus too). */
static const uint8_t found_store_at_window[] = { /* rowsum, M 20 K 33: a buffer
	stored at a fused loop held the reads' 32 elements, while the two
	windows computed under it spanned 33 (each rounded to blocks of 16 and
	moved back inside the shape): one was written past the buffer */
	0xb3, 0xb3, 0xc7, 0x70, 0xdb, 0x41, 0x06, 0xc6, 0xba, 0x7c, 0xbf, 0x0f,
	0x2b, 0x33, 0x3b, 0x6f, 0xcb, 0x3f, 0xea, 0xf2, 0x50, 0xde, 0x61, 0xbf,
	0x0f, 0x9d, 0x22, 0xcc, 0xc4, 0x90, 0xcb, 0x3f, 0xea, 0xb1, 0x32, 0xd5,
	0x78, 0xa4, 0x9f, 0x01, 0x31, 0x21, 0xae, 0x4d, 0xeb, 0xd3, 0x61};

START_TEST(test_fuzz_findings)
{
	static const struct {
		const uint8_t *data;
		size_t size;
	} found[] = {{found_store_at_window, sizeof(found_store_at_window)}};
	rs_options o = {40, 40, true, true, true, true, true, true, true, true};
	for (size_t i = 0; i < TS_COUNT_OF(found); i++)
		trial_rng((rs_rng){0, found[i].data, found[i].size, 0}, true, &o);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("schedule_random");
	TCase *tc = tcase_create("random");
	tcase_set_timeout(tc, 900);
	tcase_add_test(tc, test_random_schedules);
	tcase_add_test(tc, test_random_schedules_rfactor);
	tcase_add_test(tc, test_random_schedules_store_at);
	tcase_add_test(tc, test_random_schedules_prefetch);
	tcase_add_test(tc, test_random_schedules_pad);
	tcase_add_test(tc, test_random_schedules_tensorize);
	tcase_add_test(tc, test_random_schedules_double_buffer);
	tcase_add_test(tc, test_fuzz_findings);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
