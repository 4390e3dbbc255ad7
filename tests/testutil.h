/*
 * testutil.h - helpers shared by the Check suites.
 */
#ifndef TESSERA_TESTS_TESTUTIL_H
#define TESSERA_TESTS_TESTUTIL_H

#include <check.h>

#include "tessera.h"

/* Runs a suite and returns the process exit code (0, or 1 on failure). */
int tu_run_suite(Suite *s);

/* Compares two host arrays of the same dtype and shape element-wise with a
 * relative-plus-absolute tolerance; reports the first mismatch via Check. */
void tu_assert_close(const ts_array *got, const ts_array *want, double rtol, double atol);

/* Compares text with tests/golden/<name>; with TESSERA_UPDATE_GOLDENS=1 the
 * file is rewritten instead.  A mismatch fails with a line diff. */
void tu_assert_golden(const char *name, const char *text);

/* Asserts that the context holds an error whose message contains `part`. */
#define tu_assert_error(ctx, part)                                              \
	do {                                                                    \
		ck_assert_msg(ts_last_status(ctx) != TS_OK, "expected an error containing '%s'", (part)); \
		ck_assert_msg(strstr(ts_last_error(ctx), (part)) != NULL,       \
			      "error '%s' does not contain '%s'", ts_last_error(ctx), (part)); \
	} while (0)

#endif
