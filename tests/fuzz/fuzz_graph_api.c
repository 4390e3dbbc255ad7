/*
 * fuzz_graph_api.c - libFuzzer harness for hostile sequences of public
 * calls: the input bytes are a program of graph, tuning, array, thread
 * and timer calls (tests/graph_api_fuzz.c, whose programs
 * tests/test_graph_api_random.c runs from fixed seeds).  A finding is a
 * crash, a sanitizer report, a failure without a message, an invalid
 * argument accepted or a valid one refused, or a compiled graph whose
 * outputs differ from the reference's; it prints the calls and aborts.
 *
 * A program compiles its graph (LLVM) at most once, so an input takes up
 * to a second: scripts/fuzz.sh gives it a timeout of seconds.
 */
#include <stddef.h>
#include <stdint.h>

#include "graph_api_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gaf_run(data, size, "fuzz input", NULL);
	return 0;
}
