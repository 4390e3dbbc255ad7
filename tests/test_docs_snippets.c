/*
 * test_docs_snippets.c - every C block of README.md and the pages in docs/ compiles.
 *
 * A block is a fence opened by ```c or ~~~c (the tutorial's output nests
 * the latter).  Most blocks are fragments, so each is compiled inside a
 * function of the preamble kept next to this test
 * (tests/docs_snippets/<page>.inc, at its "SNIPPET" line): the preamble
 * declares what the page takes as given (the context, the tensors, the
 * arrays), and the block itself goes in unchanged, in a scope of its own,
 * under a #line that points compiler messages at the page.  Compiling uses
 * this build's compiler and headers with -Wall -Wextra -Werror (unused
 * names allowed), -fsyntax-only.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_TEXT (1 << 20)

/* A whole file as a malloc'd string. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	char *text = malloc(MAX_TEXT);
	ck_assert_ptr_nonnull(text);
	size_t n = fread(text, 1, MAX_TEXT - 1, f);
	text[n] = '\0';
	fclose(f);
	return text;
}

/* Writes the preamble with the block (starting at line `line` of page) in
 * place of its SNIPPET line. */
static void write_unit(const char *path, const char *preamble, const char *page, int line,
		       const char *block, size_t len)
{
	FILE *f = fopen(path, "w");
	ck_assert_msg(f != NULL, "cannot write %s", path);
	const char *mark = strstr(preamble, "SNIPPET");
	ck_assert_msg(mark != NULL, "the preamble of %s has no SNIPPET line", page);
	const char *bol = mark;
	while (bol > preamble && bol[-1] != '\n')
		bol--;
	const char *eol = strchr(mark, '\n');
	fprintf(f, "%.*s{\n#line %d \"%s\"\n%.*s}\n%s", (int)(bol - preamble), preamble, line, page,
		(int)len, block, eol ? eol + 1 : "");
	fclose(f);
}

/* Compiles one unit; returns the compiler's exit status and its messages
 * (malloc'd) in *msgs. */
static int compile(const char *unit, char **msgs)
{
	char cmd[4096], log[96]; /* unit names are under 64 bytes */
	snprintf(log, sizeof(log), "%s.log", unit);
	snprintf(cmd, sizeof(cmd),
		 "%s -std=c11 -D_GNU_SOURCE -fsyntax-only -Wall -Wextra -Werror -Wno-unused-variable "
		 "-Wno-unused-but-set-variable -Wno-unused-but-set-parameter -Wno-unused-parameter -I%s -I%s/ir -I%s/frontend "
		 "-I%s/schedule -I%s/codegen -I%s/runtime -I%s/include %s >%s 2>&1",
		 TS_C_COMPILER, TS_SOURCE_DIR, TS_SOURCE_DIR, TS_SOURCE_DIR, TS_SOURCE_DIR,
		 TS_SOURCE_DIR, TS_SOURCE_DIR, TS_BINARY_DIR, unit, log);
	int rc = system(cmd);
	*msgs = slurp(log);
	unlink(log);
	return rc;
}

/* Compiles a block from `page` with `preamble`; returns its status. */
static int compile_block(const char *preamble, const char *page, int line, const char *block,
			 size_t len, char **msgs)
{
	char unit[64];
	snprintf(unit, sizeof(unit), "/tmp/ts_snippet_%d.c", (int)getpid());
	write_unit(unit, preamble, page, line, block, len);
	int rc = compile(unit, msgs);
	unlink(unit);
	return rc;
}

static bool opens_c_block(const char *p, char *fence)
{
	if ((strncmp(p, "```c\n", 5) == 0 || strncmp(p, "~~~c\n", 5) == 0)) {
		*fence = p[0];
		return true;
	}
	return false;
}

/* Compiles every C block of page (relative to the source tree) with its
 * preamble; fails naming each block that does not compile.  Returns the
 * number of blocks. */
static int check_page(const char *page, const char *inc)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", TS_SOURCE_DIR, page);
	char *text = slurp(path);
	snprintf(path, sizeof(path), "%s/tests/docs_snippets/%s", TS_SOURCE_DIR, inc);
	char *preamble = slurp(path);
	int line = 1, blocks = 0, failed = 0;
	for (const char *p = text; *p; line++) {
		char fence;
		const char *eol = strchr(p, '\n');
		if (!eol)
			break;
		if (p == text || p[-1] == '\n') {
			if (opens_c_block(p, &fence)) {
				const char *body = eol + 1, *end = body;
				int lines = 0;
				while (*end && !(end[0] == fence && strncmp(end, fence == '`' ? "```" : "~~~", 3) == 0)) {
					const char *nl = strchr(end, '\n');
					end = nl ? nl + 1 : end + strlen(end);
					lines++;
				}
				char *msgs;
				blocks++;
				if (compile_block(preamble, page, line + 1, body, (size_t)(end - body), &msgs) != 0) {
					fprintf(stderr, "%s:%d: this C block does not compile:\n%s\n", page, line + 1, msgs);
					failed++;
				}
				free(msgs);
				line += lines;
				p = end;
				continue;
			}
		}
		p = eol + 1;
	}
	free(text);
	free(preamble);
	ck_assert_msg(failed == 0, "%d of %d C blocks of %s do not compile (messages above)", failed,
		      blocks, page);
	return blocks;
}

START_TEST(readme)
{
	ck_assert_int_ge(check_page("README.md", "README.inc"), 3);
}
END_TEST

START_TEST(primitives)
{
	ck_assert_int_ge(check_page("docs/PRIMITIVES.md", "PRIMITIVES.inc"), 17);
}
END_TEST

START_TEST(tutorial)
{
	ck_assert_int_ge(check_page("docs/TUTORIAL.md", "TUTORIAL.inc"), 9);
}
END_TEST

START_TEST(tutorial_blur)
{
	ck_assert_int_ge(check_page("docs/TUTORIAL_BLUR.md", "TUTORIAL_BLUR.inc"), 5);
}
END_TEST

START_TEST(tutorial_softmax)
{
	ck_assert_int_ge(check_page("docs/TUTORIAL_SOFTMAX.md", "TUTORIAL_SOFTMAX.inc"), 4);
}
END_TEST

START_TEST(tutorial_conv)
{
	ck_assert_int_ge(check_page("docs/TUTORIAL_CONV.md", "TUTORIAL_CONV.inc"), 5);
}
END_TEST

START_TEST(tutorial_gpu)
{
	ck_assert_int_ge(check_page("docs/TUTORIAL_GPU.md", "TUTORIAL_GPU.inc"), 3);
}
END_TEST

START_TEST(models)
{
	ck_assert_int_ge(check_page("docs/MODELS.md", "MODELS.inc"), 1);
}
END_TEST

START_TEST(onnx)
{
	ck_assert_int_ge(check_page("docs/ONNX.md", "ONNX.inc"), 1);
}
END_TEST

/* The harness itself: a block that passes a tensor where a stage belongs
 * (what the tutorial once showed) must not compile. */
START_TEST(wrong_block_is_caught)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/tests/docs_snippets/TUTORIAL.inc", TS_SOURCE_DIR);
	char *preamble = slurp(path), *msgs;
	static const char bad[] = "ts_tile(C, i, j, 32, 32, &mo, &no, &mi, &ni);\n";
	int rc = compile_block(preamble, "bad.md", 1, bad, strlen(bad), &msgs);
	ck_assert_msg(rc != 0, "a tensor passed as a stage compiled");
	ck_assert_msg(strstr(msgs, "bad.md:1") != NULL, "messages do not name the page: %s", msgs);
	free(msgs);
	free(preamble);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("docs_snippets");
	TCase *tc = tcase_create("docs_snippets");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, readme);
	tcase_add_test(tc, primitives);
	tcase_add_test(tc, tutorial);
	tcase_add_test(tc, tutorial_blur);
	tcase_add_test(tc, tutorial_softmax);
	tcase_add_test(tc, tutorial_conv);
	tcase_add_test(tc, tutorial_gpu);
	tcase_add_test(tc, models);
	tcase_add_test(tc, onnx);
	tcase_add_test(tc, wrong_block_is_caught);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
