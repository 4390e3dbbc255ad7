/*
 * test_graph_api_random.c - the graph API fuzzer's programs
 * (graph_api_fuzz.h) from pseudo-random bytes: hostile sequences of graph,
 * tuning, array, thread and timer calls, each compiled graph checked
 * against the reference.  A violation prints the seed and the calls, and
 * aborts.
 *
 * TESSERA_GRAPH_API_SEEDS=first:count runs other seeds (the default is
 * 1:500, about 15 s with the sanitizers); a seed's bytes depend only on
 * it, so a failure reruns with TESSERA_GRAPH_API_SEEDS=SEED:1.
 */
#include "testutil.h"

#include <stdio.h>

#include "graph_api_fuzz.h"

static uint64_t next(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return *s >> 33;
}

START_TEST(test_random_api_sequences)
{
	uint64_t first = 1, count = 500;
	tu_seed_range("TESSERA_GRAPH_API_SEEDS", &first, &count);
	uint8_t bytes[1024];
	gaf_stats st = {0};
	for (uint64_t seed = first; seed < first + count; seed++) {
		uint64_t s = seed * 0x9e3779b97f4a7c15ULL + 1;
		size_t n = 64 + next(&s) % (sizeof(bytes) - 64);
		for (size_t i = 0; i < n; i++)
			bytes[i] = (uint8_t)next(&s);
		char label[32];
		snprintf(label, sizeof(label), "seed %llu", (unsigned long long)seed);
		gaf_run(bytes, n, label, &st);
	}
	printf("graph_api_random: %llu programs, %ld calls: %ld nodes, %ld graphs compiled (%ld compared), "
	       "%ld tuning tasks, %ld logs loaded\n", (unsigned long long)count, st.calls, st.nodes, st.compiled,
	       st.compared, st.tasks, st.logs);
	ck_assert_msg(count < 50 || st.compared > 0, "no graph was compiled and compared");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("graph_api_random");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_random_api_sequences);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
