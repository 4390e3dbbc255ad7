/*
 * writable.h - whether an output path given on a command line can be
 * written, asked before a long run rather than found out at its end (the
 * tutorial's --plot, the exercises' --svg).  Header-only: each example is
 * its own program.
 */
#ifndef TESSERA_EXAMPLES_WRITABLE_H
#define TESSERA_EXAMPLES_WRITABLE_H

#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether path could be written, without creating or truncating it: an
 * existing file must be writable, a new one needs a writable folder. */
static inline bool writable(const char *path)
{
	struct stat st;
	if (stat(path, &st) == 0)
		return !S_ISDIR(st.st_mode) && access(path, W_OK) == 0;
	char dir[4096];
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 1;
	if (n >= sizeof(dir))
		return false;
	memcpy(dir, slash ? path : ".", n);
	dir[n ? n : 1] = 0;
	if (slash == path)
		dir[0] = '/';
	return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && access(dir, W_OK | X_OK) == 0;
}

#endif
