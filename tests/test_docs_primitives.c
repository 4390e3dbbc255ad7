/*
 * test_docs_primitives.c - writes docs/PRIMITIVES.md: for each schedule
 * primitive, the call and the loop nest tessera lowers before and after it.
 *
 * The page is a golden file: this test fails when lowering changes what the
 * page shows, and TESSERA_UPDATE_GOLDENS=1 rewrites it, so the page is
 * always tessera's own output.  Each example's code is written once: the
 * DOC() macro both runs it and prints it.
 */
#include "testutil.h"

#include <string.h>

#include "lower.h"
#include "schedule.h"

typedef struct ex {
	ts_ctx *ctx;
	ts_tensor *A, *B, *C, *P;
	ts_schedule *s;
	ts_stage *sc, *sp;
	ts_axis *i, *j, *k;
	int nargs;
	ts_tensor *args[4];
} ex;

/* C[i, j] = A[i, j] * 2 over 16 x 10 */
static ex elementwise(void)
{
	ex e = {.ctx = ts_ctx_new()};
	ts_ctx *ctx = e.ctx;
	e.A = ts_placeholder(ctx, "A", TS_SHAPE(16, 10), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	e.C = ts_compute(ctx, "C", TS_SHAPE(16, 10), TS_VARS(i, j),
			 ts_mul(ctx, TS_READ(ctx, e.A, i, j), ts_float(ctx, 2)));
	e.s = ts_create_schedule(ctx, 1, &e.C);
	e.sc = ts_stage_of(e.s, e.C);
	e.i = ts_axis_of(e.sc, 0);
	e.j = ts_axis_of(e.sc, 1);
	e.nargs = 2;
	e.args[0] = e.A;
	e.args[1] = e.C;
	return e;
}

/* C = A x B over n x n x k; operands of dtype t, cast to float32 unless
 * they are float32 already */
static ex matmul_of(int64_t n, int64_t k, ts_dtype t)
{
	ex e = {.ctx = ts_ctx_new()};
	ts_ctx *ctx = e.ctx;
	e.A = ts_placeholder(ctx, "A", TS_SHAPE(n, k), t);
	e.B = ts_placeholder(ctx, "B", TS_SHAPE(k, n), t);
	ts_iter *r = ts_reduce_axis(ctx, "k", 0, k);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_expr *a = TS_READ(ctx, e.A, i, r->var), *b = TS_READ(ctx, e.B, r->var, j);
	if (!ts_dtype_eq(t, ts_float32)) {
		a = ts_cast(ctx, ts_float32, a);
		b = ts_cast(ctx, ts_float32, b);
	}
	e.C = ts_compute(ctx, "C", TS_SHAPE(n, n), TS_VARS(i, j), TS_SUM(ctx, ts_mul(ctx, a, b), r));
	e.s = ts_create_schedule(ctx, 1, &e.C);
	e.sc = ts_stage_of(e.s, e.C);
	e.i = ts_axis_of(e.sc, 0);
	e.j = ts_axis_of(e.sc, 1);
	e.k = ts_reduce_axis_of(e.sc, 0);
	e.nargs = 3;
	e.args[0] = e.A;
	e.args[1] = e.B;
	e.args[2] = e.C;
	return e;
}

/* C = A x B over 8 x 8 x 8 */
static ex matmul(void)
{
	return matmul_of(8, 8, ts_float32);
}

/* C = A x B over 32 x 32 x 16, float16 operands accumulated in float32 */
static ex matmul_f16(void)
{
	return matmul_of(32, 16, ts_float16);
}

/* P[i, j] = A[i, j] + 1; C[i, j] = P[i, j] * P[i, j] over 8 x 6 */
static ex two_stage(void)
{
	ex e = {.ctx = ts_ctx_new()};
	ts_ctx *ctx = e.ctx;
	e.A = ts_placeholder(ctx, "A", TS_SHAPE(8, 6), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	e.P = ts_compute(ctx, "P", TS_SHAPE(8, 6), TS_VARS(i, j),
			 ts_add(ctx, TS_READ(ctx, e.A, i, j), ts_float(ctx, 1)));
	ts_expr *i2 = ts_var(ctx, "i"), *j2 = ts_var(ctx, "j");
	e.C = ts_compute(ctx, "C", TS_SHAPE(8, 6), TS_VARS(i2, j2),
			 ts_mul(ctx, TS_READ(ctx, e.P, i2, j2), TS_READ(ctx, e.P, i2, j2)));
	e.s = ts_create_schedule(ctx, 1, &e.C);
	e.sc = ts_stage_of(e.s, e.C);
	e.sp = ts_stage_of(e.s, e.P);
	e.i = ts_axis_of(e.sc, 0);
	e.j = ts_axis_of(e.sc, 1);
	e.nargs = 2;
	e.args[0] = e.A;
	e.args[1] = e.C;
	return e;
}

/* P[i, j] = A[i, j] * 2 over 9 x 6; C[i, j] = P[i, j] + P[i + 1, j] over 8 x 6 */
static ex stencil(void)
{
	ex e = {.ctx = ts_ctx_new()};
	ts_ctx *ctx = e.ctx;
	e.A = ts_placeholder(ctx, "A", TS_SHAPE(9, 6), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	e.P = ts_compute(ctx, "P", TS_SHAPE(9, 6), TS_VARS(i, j),
			 ts_mul(ctx, TS_READ(ctx, e.A, i, j), ts_float(ctx, 2)));
	e.C = ts_compute(ctx, "C", TS_SHAPE(8, 6), TS_VARS(i, j),
			 ts_add(ctx, TS_READ(ctx, e.P, i, j), TS_READ(ctx, e.P, ts_add(ctx, i, ts_int(ctx, 1)), j)));
	e.s = ts_create_schedule(ctx, 1, &e.C);
	e.sc = ts_stage_of(e.s, e.C);
	e.sp = ts_stage_of(e.s, e.P);
	e.i = ts_axis_of(e.sc, 0);
	e.j = ts_axis_of(e.sc, 1);
	e.nargs = 2;
	e.args[0] = e.A;
	e.args[1] = e.C;
	return e;
}

/* C[i] = sum_k A[i, k] over 4 x 10 */
static ex rowsum(void)
{
	ex e = {.ctx = ts_ctx_new()};
	ts_ctx *ctx = e.ctx;
	e.A = ts_placeholder(ctx, "A", TS_SHAPE(4, 10), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 10);
	ts_expr *i = ts_var(ctx, "i");
	e.C = ts_compute(ctx, "C", TS_SHAPE(4), TS_VARS(i), TS_SUM(ctx, TS_READ(ctx, e.A, i, k->var), k));
	e.s = ts_create_schedule(ctx, 1, &e.C);
	e.sc = ts_stage_of(e.s, e.C);
	e.i = ts_axis_of(e.sc, 0);
	e.k = ts_reduce_axis_of(e.sc, 0);
	e.nargs = 2;
	e.args[0] = e.A;
	e.args[1] = e.C;
	return e;
}

static void lowered(ts_sbuf *out, ex *e)
{
	ts_func *f = ts_lower(e->s, "f", e->nargs, e->args);
	ck_assert_msg(f != NULL, "lowering failed: %s", ts_last_error(e->ctx));
	tu_check_func(e->ctx, f, 1e-5); /* every example is also checked */
	ts_sb_puts(out, "```\n");
	ir_sb_stmt(out, f->body, 0);
	ts_sb_puts(out, "```\n\n");
}

/* The example's code as C statements, one per line: DOC's argument comes
 * stringized, on one line and without its last semicolon.  (Every page's C
 * block is compiled by test_docs_snippets.) */
static void put_code(ts_sbuf *out, const char *code)
{
	ts_sb_puts(out, "```c\n");
	for (const char *p = code; *p; p++) {
		if (p[0] == ';' && p[1] == ' ') {
			ts_sb_puts(out, ";\n");
			p++;
		} else {
			ts_sb_putc(out, *p);
		}
	}
	ts_sb_puts(out, ";\n```\n\nAfter:\n\n");
}

#define DOC(out, title, text, make, code)                                      \
	do {                                                                   \
		ex e = make();                                                 \
		ts_axis *o, *in, *xo, *yo, *xi, *yi, *f;                       \
		(void)o, (void)in, (void)xo, (void)yo, (void)xi, (void)yi, (void)f; \
		ts_sb_printf(out, "## %s\n\n%s\n\nBefore:\n\n", title, text);  \
		lowered(out, &e);                                              \
		code;                                                          \
		ck_assert_msg(ts_last_status(e.ctx) == TS_OK, "%s: %s", title, \
			      ts_last_error(e.ctx));                           \
		put_code(out, #code);                                          \
		lowered(out, &e);                                              \
		ts_ctx_free(e.ctx);                                            \
	} while (0)

START_TEST(test_primitives_page)
{
	ts_sbuf out = {0};
	ts_sb_puts(&out,
		   "# Schedule primitives\n\n"
		   "Each section shows a primitive's call and the loop nest tessera lowers\n"
		   "before and after it (the output of `ts_lower`, printed with\n"
		   "`ir_print_stmt`).  In the code, `e.sc` is the stage of C (`e.sp` of\n"
		   "P), `e.i`, `e.j` and `e.k` are its axes, and `o`, `in`, `xo`, `yo`, `xi`,\n"
		   "`yi` and `f` are `ts_axis *` variables.  This page is generated by\n"
		   "`tests/test_docs_primitives.c`; every example is also run and checked\n"
		   "against the reference evaluator.  Regenerate with\n"
		   "`TESSERA_UPDATE_GOLDENS=1 build/test_docs_primitives`.\n\n");
	DOC(&out, "split", "Splits an axis into an outer and an inner axis of the given factor. "
		"16 is divisible by 4, so no guard is needed.", elementwise,
	    ts_split(e.sc, e.i, 4, &o, &in));
	DOC(&out, "split with a guarded tail", "10 is not divisible by 4: the default tail strategy "
		"(TS_TAIL_GUARD) keeps one loop nest and guards the body.", elementwise,
	    ts_split(e.sc, e.j, 4, &o, &in));
	DOC(&out, "split with a partitioned tail", "TS_TAIL_PARTITION emits the main loops without a "
		"guard (so they can be vectorized or unrolled) and a separate tail.", elementwise,
	    ts_split_tail(e.sc, e.j, 4, TS_TAIL_PARTITION, &o, &in));
	DOC(&out, "split by nparts", "Splits so that the outer axis has the given extent.", elementwise,
	    ts_split_nparts(e.sc, e.i, 2, &o, &in));
	DOC(&out, "tile", "Splits two axes and reorders them into (xo, yo, xi, yi).", elementwise,
	    ts_tile(e.sc, e.i, e.j, 4, 5, &xo, &yo, &xi, &yi));
	DOC(&out, "fuse", "Fuses two adjacent axes into one loop over their product.", elementwise,
	    ts_fuse(e.sc, e.i, e.j, &f));
	DOC(&out, "reorder", "Changes the loop order of the named axes.", elementwise,
	    ts_reorder(e.sc, TS_AXES(e.j, e.i)));
	DOC(&out, "vectorize", "Marks an axis for vector code (constant extent, at most 64 lanes).  An extent that is not a power of two runs as vectors of power-of-two lanes, largest first (5 as 4 then 1; 48 as 32 then 16).",
	    elementwise, ts_split(e.sc, e.j, 5, &o, &in); ts_vectorize(e.sc, in));
	DOC(&out, "parallel", "Runs an axis's iterations on the thread pool.", elementwise,
	    ts_parallel(e.sc, e.i));
	DOC(&out, "unroll", "Replaces the loop by copies of its body (at most 1024; nested unrolled "
		"loops multiply, and a function's unrolled loops may expand to at most 4096 "
		"statements in all).", elementwise,
	    ts_split(e.sc, e.j, 2, &o, &in); ts_unroll(e.sc, in));
	DOC(&out, "split of a reduction axis", "The init of the reduction stays before the first "
		"reduction loop.", matmul,
	    ts_split(e.sc, e.k, 4, &o, &in); ts_reorder(e.sc, TS_AXES(o, e.i, in, e.j)));
	DOC(&out, "rfactor", "Factors a reduction over one of its leaf reduction axes: a new stage "
		"C.rf computes partial results with that axis as a data axis (here innermost, "
		"factor_axis 1), which can be vectorized or parallelized, and C reduces C.rf over it.  "
		"10 is not divisible by 4, so C.rf adds 0 past the end through a select over a "
		"clamped read.", rowsum,
	    ts_split(e.sc, e.k, 4, &o, &in);
	    ts_tensor *rf = ts_rfactor(e.s, e.C, in, 1);
	    ts_stage *srf = ts_stage_of(e.s, rf);
	    ts_reorder(srf, TS_AXES(ts_reduce_axis_of(srf, 0), ts_axis_of(srf, 1)));
	    ts_vectorize(srf, ts_axis_of(srf, 1)));
	DOC(&out, "compute_inline", "Substitutes P's expression into its consumer.", two_stage,
	    ts_compute_inline(e.sp));
	DOC(&out, "compute_at", "Computes the region of P that one iteration of C's axis needs, "
		"inside that loop.  The target may be any stage that reads P, directly or through "
		"other stages, provided its loop encloses every reader of P (each reader is that "
		"stage or attached at or below that loop, as softmax's max computed in the output's "
		"row loop); the region is the union of what all readers need.", two_stage,
	    ts_split(e.sc, e.i, 4, &o, &in); ts_compute_at(e.sp, e.sc, o));
	DOC(&out, "compute_root", "Computes P over its whole shape before its consumer (undoes "
		"compute_at and compute_inline).", two_stage,
	    ts_compute_at(e.sp, e.sc, e.i); ts_compute_root(e.sp));
	DOC(&out, "store_root", "Halide's store_root: P's buffer lives for the whole function while "
		"P is computed at C's row loop.  The region a row needs moves down by one row per "
		"iteration, so the window slides: the first iteration computes both rows, each later "
		"one only the row it lacks (compute_at alone computes two rows per row of C).",
	    stencil, ts_compute_at(e.sp, e.sc, e.i); ts_store_root(e.sp));
	DOC(&out, "store_at", "Halide's store_at: P's buffer lives at C's outer loop and slides "
		"within each block of 4 rows; the outer loop may then be parallel, each block having "
		"its own buffer.  The loops from the storage down to the computation must be serial.",
	    stencil, ts_split(e.sc, e.i, 4, &o, &in); ts_compute_at(e.sp, e.sc, in);
	    ts_store_at(e.sp, e.sc, o); ts_parallel(e.sc, o));
	DOC(&out, "cache_write", "Computes C in a cache stage and copies it out; here the cache is "
		"computed at C's tile loop, as in TVM's GEMM tutorial.", matmul,
	    ts_tensor *cc = ts_cache_write(e.s, e.C, TS_SCOPE_LOCAL);
	    ts_tile(e.sc, e.i, e.j, 4, 4, &xo, &yo, &xi, &yi);
	    ts_compute_at(ts_stage_of(e.s, cc), e.sc, yo));
	DOC(&out, "cache_read", "Copies the region of A that a tile of C reads into a local buffer.",
	    matmul,
	    ts_tensor *aa = ts_cache_read(e.s, e.A, TS_SCOPE_LOCAL, 1, &e.C);
	    ts_split(e.sc, e.i, 4, &o, &in);
	    ts_compute_at(ts_stage_of(e.s, aa), e.sc, o));
	DOC(&out, "prefetch", "TVM's prefetch: at the top of each iteration of an axis, a software "
		"prefetch of every cache line of an input that the iteration `offset` further on "
		"reads (llvm.prefetch on the CPU, into L2; CUDA code ignores it).  The region is "
		"clipped to the tensor, so the last iteration prefetches nothing.  A hint: results "
		"never change.", matmul,
	    ts_split(e.sc, e.k, 4, &o, &in); ts_reorder(e.sc, TS_AXES(e.i, o, in, e.j));
	    ts_prefetch(e.sc, e.B, o, 1));
	DOC(&out, "prefetch_ahead", "The offset applied to an enclosing loop instead: in each step "
		"of k, the element of A that the next row reads there, so that the next row's "
		"data arrive a little at a time while this row computes (the NCHW[x]c convolution "
		"schedule fetches the next channel block's weights this way, and the CPU GEMM the "
		"next tile's rows of B).  The box of each index is worked out with the ranges of "
		"the loops around it, so a blocked index such as a packed panel's "
		"`floordiv(tile*48 + j, 48)` is known to be one panel; an index whose span over the "
		"inner loops is still not a constant is fetched whole along its dimension.", matmul,
	    ts_reorder(e.sc, TS_AXES(e.i, e.k, e.j)); ts_prefetch_ahead(e.sc, e.A, e.k, e.i, 1));
	DOC(&out, "storage_align", "TVM's storage_align: the stride of a dimension of a stage's "
		"buffer becomes k * factor + offset (the smallest such stride at least the packed "
		"one), here rows of 8 padded to 9, so that a column read by a warp spreads over "
		"shared memory's banks instead of falling in one.  The buffer grows by the "
		"padding; results never change.", matmul,
	    ts_tensor *aa = ts_cache_read(e.s, e.A, TS_SCOPE_LOCAL, 1, &e.C);
	    ts_storage_align(ts_stage_of(e.s, aa), 0, 8, 1));
	DOC(&out, "double_buffer", "TVM's double_buffer: a stage computed at a loop gets two "
		"copies of its buffer (here A's row segment, a local copy per step of k), and the "
		"loop is unrolled by two: the first step's fetch comes before the loop, and each "
		"half fetches the next step into one copy while reading the other.  On a GPU the "
		"shared tiles of a GEMM then need one barrier per step instead of two, and from "
		"sm_80 on their fetches are cp.async copies that run during the arithmetic "
		"(ts_schedule_matmul_cuda and ts_schedule_matmul_tensorcore do this by default).  "
		"Results never change; the buffer's memory doubles.", matmul,
	    ts_tensor *aa = ts_cache_read(e.s, e.A, TS_SCOPE_LOCAL, 1, &e.C);
	    ts_split(e.sc, e.k, 2, &o, &in);
	    ts_compute_at(ts_stage_of(e.s, aa), e.sc, o);
	    ts_double_buffer(ts_stage_of(e.s, aa)));
	DOC(&out, "tensorize", "TVM's tensorize: the loops from an axis inward, each of extent 16, "
		"are one 16 x 16 x 16 matrix multiply-accumulate (float16 or bfloat16 operands, or "
		"float32 ones rounded by round_tf32, and a float32 accumulator).  The loop IR keeps the loops, marked: the CPU, the C "
		"emitter and the interpreter run them as written, and the cuda target (sm_80 and "
		"newer) has a warp run each such nest as two mma.sync m16n8k16, its accumulator in "
		"registers, 8 elements per lane.  There the accumulator must be a local buffer "
		"(cache_write) whose init and store are tensorized too, and a whole warp must reach "
		"the nest (ts_schedule_matmul_tensorcore builds such a schedule; "
		"docs/TUTORIAL_GPU.md shows the CUDA C).", matmul_f16,
	    ts_split(e.sc, e.i, 16, &yo, &yi); ts_split(e.sc, e.j, 16, &xo, &xi);
	    ts_split(e.sc, e.k, 16, &o, &in); ts_reorder(e.sc, TS_AXES(yo, xo, o, yi, xi, in));
	    ts_tensorize(e.sc, yi, TS_INTRIN_MMA_16X16X16));
	DOC(&out, "bind", "Binds axes to GPU block and thread indices.", elementwise,
	    ts_bind(e.sc, e.i, TS_BLOCK_X); ts_bind(e.sc, e.j, TS_THREAD_X));
	ck_assert(!out.oom);
	tu_assert_golden_path("docs/PRIMITIVES.md", ts_sb_str(&out));
	ts_sb_free(&out);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("docs");
	TCase *tc = tcase_create("primitives");
	tcase_add_test(tc, test_primitives_page);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
