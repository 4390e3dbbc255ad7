/*
 * stderr_capture.h - collect what a piece of code writes to stderr, for the
 * tests of debug printing (TESSERA_PRINT_STEPS).  Header-only so that any
 * test can use it without a build change.
 */
#ifndef TESSERA_TESTS_STDERR_CAPTURE_H
#define TESSERA_TESTS_STDERR_CAPTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct tu_capture {
	int saved; /* the real stderr */
	FILE *tmp;
} tu_capture;

/* Sends stderr to a temporary file until tu_capture_end. */
static inline void tu_capture_begin(tu_capture *c)
{
	fflush(stderr);
	c->tmp = tmpfile();
	c->saved = dup(STDERR_FILENO);
	ck_assert_msg(c->tmp && c->saved >= 0, "cannot capture stderr");
	dup2(fileno(c->tmp), STDERR_FILENO);
}

/* Restores stderr and returns what was written meanwhile (malloc'd). */
static inline char *tu_capture_end(tu_capture *c)
{
	fflush(stderr);
	dup2(c->saved, STDERR_FILENO);
	close(c->saved);
	long n = ftell(c->tmp);
	char *text = malloc((size_t)(n > 0 ? n : 0) + 1);
	ck_assert_msg(text != NULL, "out of memory");
	rewind(c->tmp);
	size_t got = n > 0 ? fread(text, 1, (size_t)n, c->tmp) : 0;
	text[got] = '\0';
	fclose(c->tmp);
	return text;
}

#endif
