/*
 * model_files.c - see model_files.h.  Python runs through system() and
 * popen() on a command line whose arguments are single-quoted, so paths
 * with spaces work; a path holding a quote is refused.
 */
#include "model_files.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int fail(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (err && n)
		vsnprintf(err, n, fmt, ap);
	va_end(ap);
	return -1;
}

static bool quotable(const char *s)
{
	return s && !strchr(s, '\'');
}

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

int mf_python(const char *src, char *buf, size_t n, char *err, size_t errn)
{
	const char *env = getenv("TESSERA_PYTHON"), *venv = getenv("TESSERA_VENV");
	if (env && *env)
		snprintf(buf, n, "%s", env);
	else if (venv && *venv)
		snprintf(buf, n, "%s/bin/python", venv);
	else
		snprintf(buf, n, "%s/.venv/bin/python", src);
	if (!quotable(buf))
		return fail(err, errn, "the Python path %s holds a quote", buf);
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "'%s' -c 'import onnx, onnxruntime' >/dev/null 2>&1", buf);
	if (access(buf, X_OK) != 0 || system(cmd) != 0)
		return fail(err, errn,
			    "%s cannot import onnx and onnxruntime; run scripts/python-env.sh (scripts/setup.sh runs it) to install them",
			    buf);
	return 0;
}

int mf_make(const char *src, const char *model, bool small, const char *dir, char *base,
	    size_t n, char *err, size_t errn)
{
	if (strcmp(model, "resnet50") && strcmp(model, "bert-layer"))
		return fail(err, errn, "unknown model '%s' (resnet50, bert-layer)", model);
	snprintf(base, n, "%s/%s%s", dir, model, small ? "-small" : "");
	char f[3][4200];
	static const char *const ext[] = {".onnx", ".input.bin", ".ort.bin"};
	bool all = true;
	for (int i = 0; i < 3; i++) {
		snprintf(f[i], sizeof f[i], "%s%s", base, ext[i]);
		all &= exists(f[i]);
	}
	if (all)
		return 0;
	char py[4096], cmd[12800];
	if (mf_python(src, py, sizeof py, err, errn))
		return -1;
	if (!quotable(dir) || !quotable(src))
		return fail(err, errn, "the directory %s holds a quote", dir);
	snprintf(cmd, sizeof cmd, "'%s' '%s/scripts/onnx_models.py' make %s --out '%s'%s >/dev/null", py, src,
		 model, dir, small ? " --small" : "");
	int rc = system(cmd);
	if (rc != 0)
		return fail(err, errn, "making %s failed (%s exited with status %d)", base,
			    "scripts/onnx_models.py make", WIFEXITED(rc) ? WEXITSTATUS(rc) : -1);
	for (int i = 0; i < 3; i++)
		if (!exists(f[i]))
			return fail(err, errn, "scripts/onnx_models.py did not write %s", f[i]);
	return 0;
}

int mf_read_floats(const char *path, float *out, int64_t count, char *err, size_t errn)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return fail(err, errn, "cannot open %s", path);
	struct stat st;
	if (fstat(fileno(f), &st) || st.st_size != count * (int64_t)sizeof(float)) {
		fclose(f);
		return fail(err, errn, "%s has %lld bytes; %lld floats need %lld", path,
			    (long long)st.st_size, (long long)count, (long long)(count * 4));
	}
	size_t got = fread(out, sizeof(float), (size_t)count, f);
	fclose(f);
	if (got != (size_t)count)
		return fail(err, errn, "reading %s failed", path);
	return 0;
}

int mf_ort_time(const char *src, const char *onnx, const char *input, int threads, double min_seconds,
		double *median_ms, char *err, size_t errn)
{
	char py[4096], cmd[12800], line[512] = "";
	if (mf_python(src, py, sizeof py, err, errn))
		return -1;
	if (!quotable(onnx) || !quotable(input) || !quotable(src))
		return fail(err, errn, "a path holds a quote");
	snprintf(cmd, sizeof cmd, "'%s' '%s/scripts/onnx_models.py' time '%s' '%s' --threads %d --min-seconds %.3f",
		 py, src, onnx, input, threads, min_seconds);
	FILE *p = popen(cmd, "r");
	if (!p)
		return fail(err, errn, "cannot run %s", py);
	bool got = false;
	while (fgets(line, sizeof line, p))
		if (sscanf(line, "median_ms=%lf", median_ms) == 1)
			got = true;
	int rc = pclose(p);
	if (rc != 0 || !got)
		return fail(err, errn, "timing ONNX Runtime on %s failed (status %d)", onnx,
			    WIFEXITED(rc) ? WEXITSTATUS(rc) : -1);
	return 0;
}

double mf_rel_err(const float *a, const float *ref, int64_t n)
{
	double maxerr = 0, maxref = 0;
	for (int64_t i = 0; i < n; i++) {
		double d = fabs((double)a[i] - ref[i]);
		if (d != d)
			return INFINITY;
		maxerr = d > maxerr ? d : maxerr;
		maxref = fabs(ref[i]) > maxref ? fabs(ref[i]) : maxref;
	}
	return maxref > 0 ? maxerr / maxref : maxerr;
}
