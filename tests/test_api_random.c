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
 *
 * With TESSERA_TEST_CUDA=1 (test_api_random_emu: on the host CUDA
 * emulator) the harness also builds functions bound to GPU threads for
 * "cuda" and runs them on the device, and more of its steps schedule for a
 * GPU; the default seeds are then fewer (each build runs the host C++
 * compiler), and enough functions must have run on the device.  Without a
 * device or NVRTC that run is skipped (77).
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_fuzz.h"
#include "cuda_test.h"

static void run_seed(uint64_t seed, api_fuzz_counts *counts)
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
	api_fuzz_run(bytes, n, label, counts);
}

static bool gpu_wanted(void)
{
	const char *env = getenv("TESSERA_TEST_CUDA");
	return env && env[0] && strcmp(env, "0") != 0;
}

START_TEST(test_api_sequences)
{
	bool gpu = api_fuzz_gpu();
	uint64_t first = 1, count = gpu ? 40 : 300;
	tu_seed_range("TS_API_SEEDS", &first, &count);
	api_fuzz_counts c = {0};
	for (uint64_t s = first; s < first + count; s++)
		run_seed(s, &c);
	printf("api_random: seeds %llu..%llu: %d functions lowered, %d runs compared",
	       (unsigned long long)first, (unsigned long long)(first + count - 1), c.lowered, c.compared);
	if (gpu)
		printf("; %d built for cuda: %d refused, %d run on the device", c.gpu_built, c.gpu_refused,
		       c.gpu_ran);
	printf("\n");
	/* a harness that stopped reaching its checks would pass silently */
	ck_assert_msg(count < 50 || c.compared >= (int)count, "only %d runs compared over %llu seeds",
		      c.compared, (unsigned long long)count);
	ck_assert_msg(!gpu || count < 20 || c.gpu_ran * 2 >= (int)count,
		      "only %d functions ran on the device over %llu seeds", c.gpu_ran,
		      (unsigned long long)count);
	ck_assert_msg(!gpu_wanted() || gpu, "TESSERA_TEST_CUDA is set and the device opened in the "
		      "probe, but not in the test");
}
END_TEST

int main(void)
{
	if (gpu_wanted() && !have_device())
		return 77;
	Suite *s = suite_create("api_random");
	TCase *tc = tcase_create("api_random");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_api_sequences);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
