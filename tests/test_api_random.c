/*
 * test_api_random.c - hostile sequences of public calls from seeded bytes.
 *
 * Each seed makes a string of pseudo-random bytes that tests/api_fuzz.c
 * turns into calls over two contexts' objects, with arguments often wrong;
 * the harness aborts, printing the seed and the last calls, on a crash, a
 * failed call that leaves no message, a failed primitive that changed its
 * schedule, or a function whose compiled or interpreted result differs
 * from the reference evaluator's.  fuzz/fuzz_api explores the same space
 * from libFuzzer's input.  TS_API_SEEDS=first:count picks other seeds.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>

#include "api_fuzz.h"

static void run_seed(uint64_t seed)
{
	uint8_t bytes[1024];
	uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
	/* lengths from 64 to 1023 bytes: short sequences and long ones */
	size_t n = 64 + (size_t)(seed * 7919 % 960);
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		bytes[i] = (uint8_t)(x >> 24);
	}
	char label[32];
	snprintf(label, sizeof(label), "seed %llu", (unsigned long long)seed);
	api_fuzz_run(bytes, n, label);
}

START_TEST(test_api_sequences)
{
	uint64_t first = 1, count = 300;
	tu_seed_range("TS_API_SEEDS", &first, &count);
	for (uint64_t s = first; s < first + count; s++)
		run_seed(s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("api_random");
	TCase *tc = tcase_create("api_random");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_api_sequences);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
