/*
 * nvrtc.c - a stand-in libnvrtc for the host CUDA emulator: "compiles" a
 * kernel's CUDA C with the host C++ compiler, after shim.h, into a shared
 * object whose bytes are the program's CUBIN (and PTX); the stand-in
 * driver (cuda.c) loads and launches it.  TESSERA_NVRTC_LIB names it.
 *
 * The source is rewritten first, as little as the host compiler needs:
 * `extern __shared__` loses its __shared__ (shim.h gives the array), each
 * asm statement becomes a call of ts_emu::ptx with its template, its
 * outputs' addresses and its inputs' values, and each `extern "C"` kernel
 * gets its launch entry (TS_EMU_KERNEL).  Where the process runs under
 * AddressSanitizer the kernel is built with it, so an access outside a
 * device array or a shared array fails the test that made it.  The
 * compiler's messages are the program log.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "emu_image.h"

extern char **environ;

enum { NVRTC_SUCCESS = 0, NVRTC_ERROR_OUT_OF_MEMORY = 1, NVRTC_ERROR_INVALID_INPUT = 3,
       NVRTC_ERROR_INVALID_PROGRAM = 4, NVRTC_ERROR_COMPILATION = 6 };

typedef struct program {
	char *src, *log;
	unsigned char *image; /* EMU_MAGIC, the size, the shared object */
	size_t size;
} program;

/* A growing string. */
typedef struct text {
	char *s;
	size_t n, cap;
	bool oom;
} text;

static void put(text *t, const char *s, size_t n)
{
	if (t->oom)
		return;
	if (t->n + n + 1 > t->cap) {
		size_t cap = (t->n + n + 1) * 2;
		char *p = realloc(t->s, cap);
		if (!p) {
			t->oom = true;
			return;
		}
		t->s = p;
		t->cap = cap;
	}
	memcpy(t->s + t->n, s, n);
	t->n += n;
	t->s[t->n] = '\0';
}

static void puts_(text *t, const char *s)
{
	put(t, s, strlen(s));
}

int nvrtcVersion(int *major, int *minor)
{
	*major = 12;
	*minor = 0;
	return NVRTC_SUCCESS;
}

const char *nvrtcGetErrorString(int r)
{
	switch (r) {
	case NVRTC_SUCCESS: return "NVRTC_SUCCESS";
	case NVRTC_ERROR_OUT_OF_MEMORY: return "NVRTC_ERROR_OUT_OF_MEMORY";
	case NVRTC_ERROR_INVALID_INPUT: return "NVRTC_ERROR_INVALID_INPUT";
	case NVRTC_ERROR_INVALID_PROGRAM: return "NVRTC_ERROR_INVALID_PROGRAM";
	case NVRTC_ERROR_COMPILATION: return "NVRTC_ERROR_COMPILATION";
	default: return "NVRTC_ERROR_INTERNAL";
	}
}

static const int archs[] = {50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90};

int nvrtcGetNumSupportedArchs(int *n)
{
	*n = (int)(sizeof(archs) / sizeof(archs[0]));
	return NVRTC_SUCCESS;
}

int nvrtcGetSupportedArchs(int *list)
{
	memcpy(list, archs, sizeof(archs));
	return NVRTC_SUCCESS;
}

int nvrtcCreateProgram(program **prog, const char *src, const char *name, int nheaders,
		       const char *const *headers, const char *const *include_names)
{
	(void)name, (void)headers, (void)include_names;
	if (!prog || !src || nheaders != 0)
		return NVRTC_ERROR_INVALID_INPUT;
	program *p = calloc(1, sizeof(*p));
	if (!p || !(p->src = strdup(src))) {
		free(p);
		return NVRTC_ERROR_OUT_OF_MEMORY;
	}
	*prog = p;
	return NVRTC_SUCCESS;
}

int nvrtcDestroyProgram(program **prog)
{
	if (!prog || !*prog)
		return NVRTC_ERROR_INVALID_PROGRAM;
	free((*prog)->src);
	free((*prog)->log);
	free((*prog)->image);
	free(*prog);
	*prog = NULL;
	return NVRTC_SUCCESS;
}

/* ---- the rewrite ------------------------------------------------------------------ */

static bool ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Past the string or character literal that starts at p. */
static const char *skip_literal(const char *p)
{
	char q = *p++;
	while (*p && *p != q)
		p += p[0] == '\\' && p[1] ? 2 : 1;
	return *p ? p + 1 : p;
}

/* The end of [p, end) at depth 0 where stop holds (or end): parentheses,
 * brackets and braces nest, literals are skipped. */
static const char *scan(const char *p, const char *end, const char *stops)
{
	int depth = 0;
	while (p < end) {
		if (*p == '"' || *p == '\'') {
			p = skip_literal(p);
			continue;
		}
		if (depth == 0 && strchr(stops, *p))
			return p;
		if (*p == '(' || *p == '[' || *p == '{')
			depth++;
		else if (*p == ')' || *p == ']' || *p == '}')
			depth--;
		p++;
	}
	return end;
}

/* The operands `"c"(expr), ...` of [p, end) as ts_emu::out(&(expr)) or
 * ts_emu::in(expr), in braces. */
static void operands(text *t, const char *p, const char *end, bool outputs)
{
	puts_(t, "{");
	bool first = true;
	while (p < end) {
		const char *item_end = scan(p, end, ",");
		const char *lit = strchr(p, '"');
		const char *open = lit && lit < item_end ? strchr(skip_literal(lit), '(') : NULL;
		if (open && open < item_end) {
			const char *close = scan(open + 1, item_end, ")");
			puts_(t, first ? "" : ", ");
			puts_(t, outputs ? "ts_emu::out(&(" : "ts_emu::in((");
			put(t, open + 1, (size_t)(close - open - 1));
			puts_(t, "))");
			first = false;
		}
		p = item_end < end ? item_end + 1 : end;
	}
	puts_(t, "}");
}

/* At p (just past `asm`, any `volatile` after it): the statement's
 * parenthesised body rewritten; returns the position after its ')'. */
static const char *rewrite_asm(text *t, const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n')
		p++;
	if (strncmp(p, "volatile", 8) == 0)
		p += 8;
	while (*p == ' ' || *p == '\t' || *p == '\n')
		p++;
	if (*p != '(') {
		puts_(t, "asm ");
		return p;
	}
	const char *end = scan(p + 1, p + strlen(p), ")");
	const char *sec[4] = {p + 1, NULL, NULL, NULL}, *sec_end[4] = {end, end, end, end};
	for (int i = 1; i < 4; i++) {
		const char *c = scan(sec[i - 1], end, ":");
		sec_end[i - 1] = c;
		if (c == end)
			break;
		sec[i] = c + 1;
	}
	puts_(t, "ts_emu::ptx(");
	put(t, sec[0], (size_t)(sec_end[0] - sec[0]));
	puts_(t, ", ");
	if (sec[1])
		operands(t, sec[1], sec_end[1], true);
	else
		puts_(t, "{}");
	puts_(t, ", ");
	if (sec[2])
		operands(t, sec[2], sec_end[2], false);
	else
		puts_(t, "{}");
	puts_(t, ")");
	return *end ? end + 1 : end;
}

/* The kernel named after `extern "C"` at p (its parameter list's '('
 * follows the name), into name. */
static bool kernel_name(const char *p, char *name, size_t size)
{
	const char *open = strchr(p, '(');
	if (open && open - p >= 17 && strncmp(open - 17, "__launch_bounds__", 17) == 0)
		open = strchr(scan(open + 1, open + strlen(open), ")"), '(');
	if (!open)
		return false;
	const char *e = open;
	while (e > p && (e[-1] == ' ' || e[-1] == '\n'))
		e--;
	const char *b = e;
	while (b > p && ident_char(b[-1]))
		b--;
	if (b == e || (size_t)(e - b) >= size)
		return false;
	memcpy(name, b, (size_t)(e - b));
	name[e - b] = '\0';
	return true;
}

static char *rewrite(const char *src)
{
	text t = {0}, entries = {0};
	const char *p = src;
	while (*p) {
		if (*p == '"' || *p == '\'') {
			const char *e = skip_literal(p);
			put(&t, p, (size_t)(e - p));
			p = e;
		} else if (p[0] == '/' && p[1] == '*') {
			const char *e = strstr(p + 2, "*/");
			e = e ? e + 2 : p + strlen(p);
			put(&t, p, (size_t)(e - p));
			p = e;
		} else if ((p == src || !ident_char(p[-1])) && strncmp(p, "asm", 3) == 0 &&
			   !ident_char(p[3])) {
			p = rewrite_asm(&t, p + 3);
		} else if (strncmp(p, "extern __shared__", 17) == 0) {
			puts_(&t, "extern");
			p += 17;
		} else if (strncmp(p, "extern \"C\"", 10) == 0) {
			char name[256];
			if (kernel_name(p, name, sizeof(name))) {
				puts_(&entries, "TS_EMU_KERNEL(");
				puts_(&entries, name);
				puts_(&entries, ")\n");
			}
			put(&t, p, 10);
			p += 10;
		} else {
			put(&t, p, 1);
			p++;
		}
	}
	puts_(&t, "\n");
	if (entries.s)
		puts_(&t, entries.s);
	bool oom = t.oom || entries.oom;
	free(entries.s);
	if (oom) {
		free(t.s);
		return NULL;
	}
	return t.s;
}

/* ---- compilation ------------------------------------------------------------------ */

static bool write_file(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return false;
	bool ok = fputs(s, f) >= 0;
	return fclose(f) == 0 && ok;
}

static unsigned char *read_image(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	unsigned char *img = NULL;
	if (fseek(f, 0, SEEK_END) == 0) {
		long n = ftell(f);
		if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (img = malloc(EMU_HEADER + (size_t)n))) {
			uint64_t v = (uint64_t)n;
			memcpy(img, EMU_MAGIC, 8);
			memcpy(img + 8, &v, 8);
			if (fread(img + EMU_HEADER, 1, (size_t)n, f) != (size_t)n) {
				free(img);
				img = NULL;
			}
			*size = EMU_HEADER + (size_t)n;
		}
	}
	fclose(f);
	return img;
}

/* Runs argv with stderr and stdout into log_path; its exit status. */
static int run(char *const *argv, const char *log_path)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 2, log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_adddup2(&fa, 2, 1);
	pid_t pid;
	int status = -1;
	/* the compiler must not inherit the sanitizers' preload or options */
	char *env[] = {"PATH=/usr/local/bin:/usr/bin:/bin", NULL};
	if (posix_spawn(&pid, argv[0], &fa, NULL, argv, env) == 0)
		waitpid(pid, &status, 0);
	posix_spawn_file_actions_destroy(&fa);
	return status;
}

static char *read_log(const char *path)
{
	FILE *f = fopen(path, "r");
	text t = {0};
	char buf[4096];
	size_t n;
	while (f && (n = fread(buf, 1, sizeof(buf), f)) > 0)
		put(&t, buf, n);
	if (f)
		fclose(f);
	if (!t.s)
		put(&t, "", 0);
	return t.s;
}

int nvrtcCompileProgram(program *prog, int nopts, const char *const *opts)
{
	(void)nopts, (void)opts;
	if (!prog)
		return NVRTC_ERROR_INVALID_PROGRAM;
	free(prog->log);
	free(prog->image);
	prog->log = NULL;
	prog->image = NULL;
	char dir[] = "/tmp/tessera-emu-XXXXXX";
	if (!mkdtemp(dir))
		return NVRTC_ERROR_OUT_OF_MEMORY;
	char src[64], so[64], log[64];
	snprintf(src, sizeof(src), "%s/k.cc", dir);
	snprintf(so, sizeof(so), "%s/k.so", dir);
	snprintf(log, sizeof(log), "%s/log", dir);
	char *code = rewrite(prog->src);
	int r = NVRTC_ERROR_OUT_OF_MEMORY;
	if (code && write_file(src, code)) {
		/* the kernel shares the process's AddressSanitizer, if any */
		bool asan = dlsym(RTLD_DEFAULT, "__asan_init") != NULL;
		char *argv[] = {EMU_CXX, "-std=gnu++17", "-O1", "-w", "-fPIC", "-shared",
				"-include", EMU_SHIM, "-o", so, src, "-lpthread",
				asan ? "-fsanitize=address" : NULL, NULL};
		int status = run(argv, log);
		prog->log = read_log(log);
		if (status != 0)
			r = NVRTC_ERROR_COMPILATION;
		else if ((prog->image = read_image(so, &prog->size)))
			r = NVRTC_SUCCESS;
	}
	free(code);
	unlink(src);
	unlink(so);
	unlink(log);
	rmdir(dir);
	return r;
}

int nvrtcGetProgramLogSize(program *prog, size_t *n)
{
	*n = prog->log ? strlen(prog->log) + 1 : 1;
	return NVRTC_SUCCESS;
}

int nvrtcGetProgramLog(program *prog, char *log)
{
	strcpy(log, prog->log ? prog->log : "");
	return NVRTC_SUCCESS;
}

int nvrtcGetCUBINSize(program *prog, size_t *n)
{
	if (!prog->image)
		return NVRTC_ERROR_INVALID_PROGRAM;
	*n = prog->size;
	return NVRTC_SUCCESS;
}

int nvrtcGetCUBIN(program *prog, char *out)
{
	if (!prog->image)
		return NVRTC_ERROR_INVALID_PROGRAM;
	memcpy(out, prog->image, prog->size);
	return NVRTC_SUCCESS;
}

int nvrtcGetPTXSize(program *prog, size_t *n)
{
	return nvrtcGetCUBINSize(prog, n);
}

int nvrtcGetPTX(program *prog, char *out)
{
	return nvrtcGetCUBIN(prog, out);
}
