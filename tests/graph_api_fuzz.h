/*
 * graph_api_fuzz.h - hostile sequences of public calls on the graph, tuning,
 * array, thread pool and timer APIs, driven by bytes: shared by
 * fuzz/fuzz_graph_api (the fuzzer's input) and test_graph_api_random
 * (pseudo-random bytes from fixed seeds).
 *
 * Each byte string is read one choice at a time (0 once it runs out) as a
 * program of calls: graph inputs, constants and nodes of every operator
 * (and of none) with attributes, dtypes, shapes and value ids anywhere
 * from sensible to absurd; outputs; queries; at most one compile per
 * string, then runs with right and wrong arguments; tuning tasks,
 * candidates and logs (some of them the bytes themselves); arrays; thread
 * counts; timers.
 *
 * What must hold, whatever the calls (a violation prints the calls made
 * so far and what broke, then aborts):
 *   - no crash and no sanitizer report;
 *   - a call that fails leaves a non-empty message in ts_last_error;
 *   - a call whose arguments the headers call invalid fails, and one whose
 *     arguments are all valid (a fresh name, a float32 shape in range, a
 *     task's default candidate) succeeds;
 *   - a compiled graph gives the outputs of the plain-loop reference
 *     (graph_ref.h) on random inputs, NaN where it has NaN, and the same
 *     outputs again after the graph is freed and when profiled.
 */
#ifndef TESSERA_TESTS_GRAPH_API_FUZZ_H
#define TESSERA_TESTS_GRAPH_API_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* What the programs run so far did (added to by gaf_run). */
typedef struct gaf_stats {
	long calls;      /* actions run */
	long nodes;      /* nodes accepted */
	long compiled;   /* graphs compiled */
	long compared;   /* compiled graphs whose outputs were compared */
	long tasks;      /* tuning tasks made */
	long logs;       /* logs loaded */
} gaf_stats;

/* Runs the calls data[0..size) spells; label (a seed, a file name) is
 * printed with any violation.  Returns normally when every invariant
 * held; st (NULL: none) gets what was done added. */
void gaf_run(const uint8_t *data, size_t size, const char *label, gaf_stats *st);

#endif
