/*
 * tune_log.c - the tuning log (tune.h): one JSON object per line, written
 * and read by hand so that tessera needs no JSON library.
 *
 * The reader accepts exactly the records the writer makes: every field
 * present once, with its type, integers within range, and nothing else.
 * Anything else refuses the whole file with "PATH:LINE: what is wrong",
 * so a damaged log is noticed rather than half applied.  A record that
 * parses but was tuned elsewhere (another tessera version, CPU or CPU
 * features) is refused when it is looked up, naming the field.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "lower.h"
#include "threadpool.h"
#include "tune_internal.h"

/* A log line longer than this is not one of tessera's records. */
#define LOG_MAX_LINE 65536

void ts_tune_host(char cpu[64], char features[40])
{
	if (!cpu && !features)
		return;
	char *name = LLVMGetHostCPUName(), *feat = LLVMGetHostCPUFeatures();
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a: the list is long */
	for (const char *p = feat; p && *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
	if (cpu)
		snprintf(cpu, 64, "%s", name ? name : "unknown");
	if (features)
		snprintf(features, 40, "fnv1a:%016llx", (unsigned long long)h);
	LLVMDisposeMessage(name);
	LLVMDisposeMessage(feat);
}

/* ---- writing ---------------------------------------------------------------- */

static void put_str(FILE *f, const char *key, const char *s)
{
	fprintf(f, "\"%s\": \"", key);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", (unsigned char)*s);
		else
			fputc(*s, f);
	}
	fputs("\", ", f);
}

static void put_record(FILE *f, const ts_tune_task *t, const ts_tune_result *r)
{
	char cpu[64], feat[40];
	ts_tune_host(cpu, feat);
	fputc('{', f);
	put_str(f, "tessera", TS_TUNE_VERSION);
	put_str(f, "op", t->op);
	fputs("\"shape\": [", f);
	for (int i = 0; i < t->nshape; i++)
		fprintf(f, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
	fputs("], ", f);
	put_str(f, "dtype", "float32");
	put_str(f, "target", t->target);
	put_str(f, "cpu", cpu);
	put_str(f, "features", feat);
	fprintf(f, "\"threads\": %d, \"params\": {", ts_num_threads());
	for (int i = 0; i < t->space.nparams; i++)
		fprintf(f, "%s\"%s\": %lld", i ? ", " : "", t->space.name[i], (long long)r->best.v[i]);
	fprintf(f, "}, \"median_ms\": %.6g, \"default_ms\": %.6g, \"trials\": %d}\n", r->best_ms,
		r->default_ms, r->trials);
}

ts_status ts_tune_log_append(ts_ctx *ctx, const char *path, const ts_tune_task *t,
			     const ts_tune_result *r)
{
	if (!path || !r)
		return ts_error(ctx, TS_ERR_INVALID, "tune_log_append: NULL %s", !path ? "path" : "result");
	if (tune_task_check(ctx, t, "tune_log_append") != TS_OK)
		return ts_last_status(ctx);
	/* what the reader would refuse is not written: one bad line refuses
	 * the whole log */
	if (!(isfinite(r->best_ms) && r->best_ms >= 0 && isfinite(r->default_ms) && r->default_ms >= 0) ||
	    r->trials < 0)
		return ts_error(ctx, TS_ERR_INVALID, "tune_log_append: the result's times must be finite and >= 0 "
				"and its trials >= 0 (median %g ms, default %g ms, %d trials)", r->best_ms,
				r->default_ms, r->trials);
	if (tune_check_cand(ctx, "tune_log_append", t, &r->best) != TS_OK)
		return ts_last_status(ctx);
	FILE *f = fopen(path, "a");
	if (!f)
		return ts_error(ctx, TS_ERR_RUNTIME, "tune log %s: cannot write: %s", path, strerror(errno));
	put_record(f, t, r);
	if (fclose(f) != 0)
		return ts_error(ctx, TS_ERR_RUNTIME, "tune log %s: cannot write: %s", path, strerror(errno));
	return TS_OK;
}

/* ---- reading ------------------------------------------------------------------ */

typedef struct parser {
	ts_ctx *ctx;
	const char *path;
	int line;
	const char *p;
} parser;

static bool fail(parser *P, const char *fmt, const char *what)
{
	char msg[160];
	snprintf(msg, sizeof msg, fmt, what);
	ts_error(P->ctx, TS_ERR_INVALID, "%s:%d: %s", P->path, P->line, msg);
	return false;
}

static void skip_ws(parser *P)
{
	while (*P->p == ' ' || *P->p == '\t' || *P->p == '\r' || *P->p == '\n')
		P->p++;
}

static bool expect(parser *P, char c)
{
	skip_ws(P);
	if (*P->p != c) {
		char want[2] = {c, 0};
		return fail(P, *P->p ? "expected '%s'" : "truncated record: expected '%s' at the end of the line", want);
	}
	P->p++;
	return true;
}

static bool parse_string(parser *P, char *out, size_t cap, const char *field)
{
	size_t n = 0;
	if (!expect(P, '"'))
		return false;
	for (;; P->p++) {
		char c = *P->p;
		if (!c)
			return fail(P, "truncated record: unterminated string in %s", field);
		if (c == '"')
			break;
		if (c == '\\') {
			c = *++P->p;
			if (c != '"' && c != '\\' && c != '/')
				return fail(P, "unsupported escape in %s", field);
		}
		if (n + 1 >= cap)
			return fail(P, "string %s is too long", field);
		out[n++] = c;
	}
	P->p++;
	out[n] = 0;
	return true;
}

/* The end of the JSON number at s (-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?),
 * or NULL where none starts there. */
static const char *json_number_end(const char *s)
{
	if (*s == '-')
		s++;
	if (*s == '0')
		s++;
	else if (*s >= '1' && *s <= '9')
		while (isdigit((unsigned char)*s))
			s++;
	else
		return NULL;
	if (*s == '.') {
		if (!isdigit((unsigned char)*++s))
			return NULL;
		while (isdigit((unsigned char)*s))
			s++;
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (!isdigit((unsigned char)*s))
			return NULL;
		while (isdigit((unsigned char)*s))
			s++;
	}
	return s;
}

/* A JSON number. */
static bool parse_number(parser *P, double *v, const char *field)
{
	skip_ws(P);
	const char *s = P->p;
	if (*s == '-')
		s++;
	if (*s < '0' || *s > '9')
		return fail(P, *P->p ? "field %s: expected a number" : "truncated record: field %s has no value", field);
	char *end;
	*v = strtod(P->p, &end);
	/* strtod takes more than JSON does (0x10, 0x1p2, 1., 012): the
	 * number must be JSON's, all of it */
	if (end != json_number_end(P->p))
		return fail(P, "field %s: expected a JSON number", field);
	/* an overflow is infinite; an underflow (a subnormal, as the
	 * writer may print one) is the nearest value, and kept */
	if (!isfinite(*v))
		return fail(P, "field %s: number out of range", field);
	P->p = end;
	return true;
}

/* A JSON number that is an integer in [lo, hi]. */
static bool parse_int(parser *P, int64_t *v, int64_t lo, int64_t hi, const char *field)
{
	double d;
	if (!parse_number(P, &d, field))
		return false;
	if (d != floor(d))
		return fail(P, "field %s: expected an integer", field);
	if (d < (double)lo || d > (double)hi) {
		char msg[96];
		snprintf(msg, sizeof msg, "field %%s: %.6g is out of range (%lld to %lld)", d, (long long)lo,
			 (long long)hi);
		return fail(P, msg, field);
	}
	*v = (int64_t)d;
	return true;
}

static bool parse_shape(parser *P, ts_tune_record *r)
{
	if (!expect(P, '['))
		return false;
	skip_ws(P);
	if (*P->p == ']')
		return fail(P, "field %s: empty", "shape");
	for (r->nshape = 0;; r->nshape++) {
		if (r->nshape == TS_TUNE_MAX_SHAPE)
			return fail(P, "field %s: too many extents", "shape");
		if (!parse_int(P, &r->shape[r->nshape], 0, (int64_t)1 << 31, "shape"))
			return false;
		skip_ws(P);
		if (*P->p == ']')
			break;
		if (!expect(P, ','))
			return false;
	}
	P->p++;
	r->nshape++;
	return true;
}

static bool parse_params(parser *P, ts_tune_record *r)
{
	if (!expect(P, '{'))
		return false;
	skip_ws(P);
	if (*P->p == '}')
		return P->p++, true;
	for (r->nparams = 0;; r->nparams++) {
		if (r->nparams == TS_TUNE_MAX_PARAMS)
			return fail(P, "field %s: too many parameters", "params");
		if (!parse_string(P, r->pname[r->nparams], TS_TUNE_NAME, "params") || !expect(P, ':') ||
		    !parse_int(P, &r->pval[r->nparams], 0, TUNE_MAX_VALUE, r->pname[r->nparams]))
			return false;
		skip_ws(P);
		if (*P->p == '}')
			break;
		if (!expect(P, ','))
			return false;
	}
	P->p++;
	r->nparams++;
	return true;
}

static const char *const fields[] = {"tessera", "op", "shape", "dtype", "target", "cpu",
				     "features", "threads", "params", "median_ms", "default_ms", "trials"};

static bool parse_field(parser *P, ts_tune_record *r, int k)
{
	int64_t v;
	double d;
	char *strs[] = {r->version, r->op, NULL, r->dtype, r->target, r->cpu, r->features};
	size_t caps[] = {sizeof r->version, sizeof r->op, 0, sizeof r->dtype, sizeof r->target,
			 sizeof r->cpu, sizeof r->features};
	if (k < 7 && k != 2)
		return parse_string(P, strs[k], caps[k], fields[k]);
	switch (k) {
	case 2:
		return parse_shape(P, r);
	case 8:
		return parse_params(P, r);
	case 9:
	case 10:
		if (!parse_number(P, &d, fields[k]))
			return false;
		if (d < 0)
			return fail(P, "field %s: negative time", fields[k]);
		*(k == 9 ? &r->median_ms : &r->default_ms) = d;
		return true;
	default:
		if (!parse_int(P, &v, k == 7 ? 1 : 0, k == 7 ? 1024 : INT32_MAX, fields[k]))
			return false;
		*(k == 7 ? &r->threads : &r->trials) = (int)v;
		return true;
	}
}

static bool parse_record(parser *P, ts_tune_record *r)
{
	unsigned have = 0;
	char key[32];
	if (!expect(P, '{'))
		return false;
	for (;;) {
		if (!parse_string(P, key, sizeof key, "a field name") || !expect(P, ':'))
			return false;
		int k = -1;
		for (int i = 0; i < (int)TS_COUNT_OF(fields); i++)
			if (!strcmp(key, fields[i]))
				k = i;
		if (k < 0)
			return fail(P, "unknown field '%s'", key);
		if (have >> k & 1)
			return fail(P, "field %s appears twice", key);
		have |= 1u << k;
		if (!parse_field(P, r, k))
			return false;
		skip_ws(P);
		if (*P->p == '}')
			break;
		if (!expect(P, ','))
			return false;
	}
	P->p++;
	skip_ws(P);
	if (*P->p)
		return fail(P, "%s", "text after the record");
	for (int i = 0; i < (int)TS_COUNT_OF(fields); i++)
		if (!(have >> i & 1))
			return fail(P, "missing field %s", fields[i]);
	return true;
}

static bool blank(const char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
		s++;
	return !*s;
}

/* One line of f into buf (LOG_MAX_LINE + 2 bytes), never reading more
 * than one byte past the limit, so that a file with no end of line
 * (/dev/zero) is refused rather than read into memory without bound:
 * its length, -1 at the end of the file, -2 for a longer line; *nul when
 * it holds a NUL byte. */
static long read_line(FILE *f, char *buf, bool *nul)
{
	size_t n = 0;
	int ch = EOF;
	*nul = false;
	while ((ch = getc(f)) != EOF) {
		if (n > LOG_MAX_LINE)
			return -2;
		*nul |= ch == 0;
		buf[n++] = (char)ch;
		if (ch == '\n')
			break;
	}
	buf[n] = '\0';
	return n == 0 && ch == EOF ? -1 : (long)n;
}

/* Reads every record of f into log; false with the error set. */
static bool read_records(ts_ctx *ctx, FILE *f, ts_tune_log *log)
{
	char *buf = malloc(LOG_MAX_LINE + 2);
	int capr = 0;
	bool ok = buf != NULL, nul;
	errno = 0;
	parser P = {.ctx = ctx, .path = log->path};
	if (!buf)
		ts_error(ctx, TS_ERR_NOMEM, "tune log %s: out of memory", log->path);
	for (long len; ok && (len = read_line(f, buf, &nul)) != -1;) {
		P.line++;
		if (len == -2)
			ok = fail(&P, "%s", "line longer than 64 KB");
		else if (nul)
			ok = fail(&P, "%s", "a NUL byte in the line");
		if (!ok || blank(buf))
			continue;
		if (log->n == capr) {
			ts_tune_record *p = ts_alloc_array(ctx, (size_t)(capr = capr ? 2 * capr : 16), sizeof *p);
			if (!p)
				break;
			if (log->n)
				memcpy(p, log->rec, (size_t)log->n * sizeof *p);
			log->rec = p;
		}
		ts_tune_record *r = &log->rec[log->n];
		P.p = buf;
		memset(r, 0, sizeof *r);
		r->line = P.line;
		ok = parse_record(&P, r);
		log->n += ok;
	}
	free(buf);
	if (ok && ferror(f))
		ts_error(ctx, TS_ERR_INVALID, "tune log %s: cannot read: %s", log->path, strerror(errno));
	return ok && ts_last_status(ctx) == TS_OK;
}

ts_tune_log *ts_tune_log_load(ts_ctx *ctx, const char *path)
{
	/* an error an earlier call left never refuses a good log */
	ts_clear_error(ctx);
	if (!path) {
		ts_error(ctx, TS_ERR_INVALID, "tune_log_load: NULL path");
		return NULL;
	}
	ts_tune_log *log = ts_alloc(ctx, sizeof *log);
	if (!log || !(log->path = ts_strdup(ctx, path)))
		return NULL;
	FILE *f = fopen(path, "r");
	if (!f) {
		ts_error(ctx, TS_ERR_INVALID, "tune log %s: cannot read: %s", path, strerror(errno));
		return NULL;
	}
	bool ok = read_records(ctx, f, log);
	fclose(f);
	if (ok && log->n == 0)
		ts_error(ctx, TS_ERR_INVALID, "%s:1: empty tune log (no records)", path);
	return ok && log->n ? log : NULL;
}

/* ---- applying ------------------------------------------------------------------- */

static bool same_task(const ts_tune_record *r, const ts_tune_task *t)
{
	if (strcmp(r->op, t->op) || strcmp(r->dtype, "float32") || strcmp(r->target, t->target) ||
	    r->nshape != t->nshape)
		return false;
	return !memcmp(r->shape, t->shape, (size_t)t->nshape * sizeof *t->shape);
}

/* The field in which a record for this task differs from this machine
 * and this tessera, or NULL. */
static const char *foreign_field(const ts_tune_record *r, const char *cpu, const char *feat,
				 const char **want)
{
	if (strcmp(r->version, TS_TUNE_VERSION))
		return *want = TS_TUNE_VERSION, "tessera";
	if (strcmp(r->cpu, cpu))
		return *want = cpu, "cpu";
	if (strcmp(r->features, feat))
		return *want = feat, "features";
	return NULL;
}

/* The record's parameters, by name, into c; every parameter of the space
 * must be there and no other. */
/* The index of parameter `name` among r's, or -1. */
static int record_param(const ts_tune_record *r, const char *name)
{
	for (int k = 0; k < r->nparams; k++)
		if (!strcmp(r->pname[k], name))
			return k;
	return -1;
}

static ts_status record_params(ts_ctx *ctx, const ts_tune_log *log, const ts_tune_record *r,
			       const ts_tune_task *t, ts_tune_cand *c)
{
	const ts_tune_space *sp = &t->space;
	if (r->nparams != sp->nparams)
		return ts_error(ctx, TS_ERR_INVALID, "%s:%d: field params: %d parameters, the %s space has %d",
				log->path, r->line, r->nparams, sp->kind, sp->nparams);
	for (int i = 0; i < sp->nparams; i++) {
		int k = record_param(r, sp->name[i]);
		if (k < 0)
			return ts_error(ctx, TS_ERR_INVALID, "%s:%d: field params: no parameter %s (the %s space's)",
					log->path, r->line, sp->name[i], sp->kind);
		c->v[i] = r->pval[k];
	}
	return TS_OK;
}

/* Whether every parameter of r has a value among the space's choices
 * (false when r lacks one: record_params then refuses it). */
static bool fits_space(const ts_tune_record *r, const ts_tune_space *sp)
{
	for (int i = 0; i < sp->nparams; i++) {
		int k = record_param(r, sp->name[i]);
		bool in = false;
		for (int j = 0; k >= 0 && j < sp->nchoice[i] && !in; j++)
			in = sp->choice[i][j] == r->pval[k];
		if (!in)
			return false;
	}
	return true;
}

static const char *shape_str(ts_ctx *ctx, const ts_tune_task *t)
{
	char buf[256];
	size_t n = 0;
	for (int i = 0; i < t->nshape; i++)
		n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
	return ts_sprintf(ctx, "%s [%s] float32 %s", t->op, buf, t->target);
}

ts_status ts_tune_log_lookup(ts_ctx *ctx, const ts_tune_log *log, const ts_tune_task *t,
			     ts_tune_cand *c, const ts_tune_record **rec)
{
	/* every failure leaves *rec NULL, the refusals of arguments too */
	if (rec)
		*rec = NULL;
	if (!log || !c || !rec)
		return ts_error(ctx, TS_ERR_INVALID, "tune_log_lookup: NULL %s",
				!log ? "log" : !c ? "candidate" : "record");
	if (tune_task_check(ctx, t, "tune_log_lookup") != TS_OK)
		return ts_last_status(ctx);
	char cpu[64], feat[40];
	const ts_tune_record *foreign = NULL;
	ts_tune_host(cpu, feat);
	/* the newest record whose values are among the space's choices (a
	 * graph's convolution holds its channel blocks at one value) and that
	 * was tuned with as many threads as now run (a schedule tuned on one
	 * core is often serial); failing both, the one failing the thread
	 * count, then the one failing the choices, then any */
	const ts_tune_record *best[4] = {NULL, NULL, NULL, NULL};
	int threads = ts_num_threads();
	for (int i = log->n - 1; i >= 0 && !best[0]; i--) {
		const char *want;
		const ts_tune_record *r = &log->rec[i];
		if (!same_task(r, t))
			continue;
		if (foreign_field(r, cpu, feat, &want)) {
			if (!foreign)
				foreign = r;
			continue;
		}
		int rank = (fits_space(r, &t->space) ? 0 : 2) + (r->threads == threads ? 0 : 1);
		if (!best[rank])
			best[rank] = r;
	}
	const ts_tune_record *found = NULL;
	for (int k = 0; k < 4 && !found; k++)
		found = best[k];
	if (found) {
		/* *rec and *c only for a record the space takes: on an error the
		 * caller finds no record, and its candidate unchanged */
		ts_tune_cand got = *c;
		if (record_params(ctx, log, found, t, &got) != TS_OK)
			return ts_last_status(ctx);
		*c = got;
		*rec = found;
		return TS_OK;
	}
	if (!foreign)
		return TS_OK;
	const char *want, *field = foreign_field(foreign, cpu, feat, &want);
	const char *have = !strcmp(field, "tessera") ? foreign->version : !strcmp(field, "cpu") ? foreign->cpu
											       : foreign->features;
	return ts_error(ctx, TS_ERR_INVALID,
			"%s:%d: the record for %s is refused: field %s is '%s', this machine's is '%s' (tune again here)",
			log->path, foreign->line, shape_str(ctx, t), field, have, want);
}

ts_func *ts_tune_lower_from_log(ts_ctx *ctx, const ts_tune_log *log, const ts_tune_task *t,
				const char **note)
{
	if (!note) {
		ts_error(ctx, TS_ERR_INVALID, "tune_lower_from_log: NULL note");
		return NULL;
	}
	if (tune_task_check(ctx, t, "tune_lower_from_log") != TS_OK)
		return NULL;
	ts_tune_cand c = ts_tune_default(t);
	const ts_tune_record *r = NULL;
	if (log && ts_tune_log_lookup(ctx, log, t, &c, &r) != TS_OK)
		return NULL;
	*note = r ? ts_sprintf(ctx, "tuned: %s:%d", log->path, r->line)
		  : ts_sprintf(ctx, "default: no record for %s in %s", shape_str(ctx, t),
			       log ? log->path : "(no log)");
	return ts_tune_lower(ctx, t, &c);
}
