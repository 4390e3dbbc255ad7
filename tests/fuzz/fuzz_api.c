/*
 * fuzz_api.c - libFuzzer harness for hostile sequences of public calls.
 *
 * The input bytes drive tests/api_fuzz.c: calls over pools of objects of
 * two contexts, arguments often wrong (NULL, of the other context, stale,
 * out of range), every function that lowers checked against the reference
 * evaluator.  A violation (a crash, a sanitizer report, a failed call that
 * leaves no message, a failed primitive that changed its schedule, a wrong
 * element) prints the last calls and aborts.  tests/test_api_random.c runs
 * the same harness on seeded bytes under CTest.  With TESSERA_TEST_CUDA=1
 * and the host CUDA emulator's TESSERA_CUDA_LIB and TESSERA_NVRTC_LIB (or
 * a GPU) in the environment, functions bound to GPU threads are also
 * built for "cuda" and run on the device (about a second per input).
 */
#include <stddef.h>
#include <stdint.h>

#include "api_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	api_fuzz_run(data, size, NULL, NULL);
	return 0;
}
