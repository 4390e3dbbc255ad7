/*
 * api_fuzz.h - a hostile sequence of public calls driven by bytes, shared by
 * tests/test_api_random.c (bytes from fixed seeds) and
 * tests/fuzz/fuzz_api.c (bytes from libFuzzer).
 *
 * The bytes pick, one choice each, calls over pools of objects of two
 * contexts: expressions, reduction axes, tensors (placeholders, computes,
 * the operator library), schedules, stages and axes, every schedule
 * primitive, lowering, printers, builds, module runs and the reference
 * evaluator, with arguments that are often wrong: NULL, of the other
 * context, stale, out of range, overflowing.  What must hold whatever the
 * bytes are:
 *   - no crash and no sanitizer report;
 *   - a call that fails leaves an error in the context it was given (the
 *     context argument, or the context of the stage, schedule, tensor,
 *     function or module it works on), and not TS_ERR_INTERNAL (a failed
 *     internal check);
 *   - a schedule primitive that fails leaves the schedule as it was (its
 *     ts_schedule_str unchanged);
 *   - a function that lowers and builds, run on random inputs, gives what
 *     the reference evaluator (ts_eval) gives, and so does the loop-IR
 *     interpreter;
 *   - with TESSERA_TEST_CUDA=1 in the environment and a CUDA driver that
 *     opens (a GPU, or the host emulator of tests/cuda_emu that
 *     TESSERA_CUDA_LIB and TESSERA_NVRTC_LIB name), a function bound to
 *     GPU blocks or threads that ts_build takes for "cuda" compiles in
 *     NVRTC, launches, and gives what ts_eval gives on the device.
 * A violation prints what was called and aborts.
 */
#ifndef TESSERA_TESTS_API_FUZZ_H
#define TESSERA_TESTS_API_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What runs of the harness did, added up over the runs given the same
 * counts: so that a seeded test can insist that it tested something. */
typedef struct api_fuzz_counts {
	int lowered;     /* functions lowered */
	int compared;    /* runs compared with the reference evaluator */
	int gpu_built;   /* functions bound to GPU threads given to ts_build for "cuda" */
	int gpu_refused; /* ... that it refused with a message */
	int gpu_ran;     /* ... that it built, run on the device and compared */
} api_fuzz_counts;

/* Runs the sequence data[0..size) describes; label (NULL: none) is printed
 * with a violation, so a seeded run can say which seed it was; counts
 * (NULL: none) gets what the run did added to it.  With TS_API_FUZZ_LOG=1
 * in the environment every failed call and its message go to stderr (to
 * review the messages by eye); with =2, every call made too. */
void api_fuzz_run(const uint8_t *data, size_t size, const char *label, api_fuzz_counts *counts);

/* Whether the runs check functions bound to GPU threads on the device:
 * TESSERA_TEST_CUDA=1 and a driver and NVRTC that load (probed once per
 * process, on the first call). */
bool api_fuzz_gpu(void);

#endif
