/*
 * exercise.h - what tessera-exercise and the exercise files share.
 *
 * Each exercise declares a computation (problems.c, not to be edited) and
 * hands its tensors to a schedule function in a struct of its own.  The
 * student's function lives in exN_*.c, the reference solution in
 * solutions/exN_*.c; both are compiled into tessera-exercise, so editing
 * an exercise and rebuilding (cmake --build build --target tessera-exercise)
 * is the whole workflow.  A schedule function returns TS_OK, or the status
 * of the primitive that failed (its message is printed).
 */
#ifndef TESSERA_EXERCISES_EXERCISE_H
#define TESSERA_EXERCISES_EXERCISE_H

#include "tessera.h"

/* 1: C[i, j] = sum_k A[i, k] * B[k, j] */
typedef struct ex1_gemm {
	ts_tensor *A, *B, *C;
} ex1_gemm;

/* 2: R = relu(M + bias), M = X x W: the matmul and its bias + relu
 * epilogue (Y is the bias add, R the output) */
typedef struct ex2_epilogue {
	ts_tensor *X, *W, *bias, *M, *Y, *R;
} ex2_epilogue;

/* 3: a 3 x 3 box blur in two passes: Bx averages 3 columns, By 3 rows of Bx */
typedef struct ex3_blur {
	ts_tensor *In, *Bx, *By;
} ex3_blur;

/* 4: S[i] = sum_j X[i, j] */
typedef struct ex4_rowsum {
	ts_tensor *X, *S;
} ex4_rowsum;

/* 5: Y = softmax(X) over rows, in four stages (ts_op_softmax): Max (row
 * maximum), Exp = exp(x - max), Sum (row sum of Exp), Y = Exp / Sum */
typedef struct ex5_softmax {
	ts_tensor *X, *Max, *Exp, *Sum, *Y;
} ex5_softmax;

ts_status ex1_schedule(ts_schedule *s, const ex1_gemm *t);
ts_status ex2_schedule(ts_schedule *s, const ex2_epilogue *t);
ts_status ex3_schedule(ts_schedule *s, const ex3_blur *t);
ts_status ex4_schedule(ts_schedule *s, const ex4_rowsum *t);
ts_status ex5_schedule(ts_schedule *s, const ex5_softmax *t);

ts_status ex1_solution(ts_schedule *s, const ex1_gemm *t);
ts_status ex2_solution(ts_schedule *s, const ex2_epilogue *t);
ts_status ex3_solution(ts_schedule *s, const ex3_blur *t);
ts_status ex4_solution(ts_schedule *s, const ex4_rowsum *t);
ts_status ex5_solution(ts_schedule *s, const ex5_softmax *t);

/* ---- the checker's side (problems.c, main.c) ---- */

#define EX_MAX_ARGS 8
#define EX_MAX_SIZES 3

/* One instance of an exercise's computation. */
typedef struct ex_problem {
	int nargs;                      /* the function's parameters: inputs, then the output */
	ts_tensor *args[EX_MAX_ARGS];
	ts_tensor *out;
	void *tensors;                  /* the exercise's struct (ex1_gemm, ...) */
} ex_problem;

typedef struct ex_def {
	const char *title;
	const char *file;               /* below examples/exercises/ */
	double goal;                    /* the speed-up over unscheduled to reach */
	int ndims;                      /* numbers in a size */
	/* sizes[0] is timed; all are checked, the others chosen so that
	 * common split factors do not divide them */
	int64_t sizes[EX_MAX_SIZES][3];
	double lo, hi;                  /* the range of the random inputs */
	ts_status (*build)(ts_ctx *ctx, const int64_t *size, ex_problem *p);
	ts_status (*student)(ts_schedule *s, const void *tensors);
	ts_status (*solution)(ts_schedule *s, const void *tensors);
} ex_def;

extern const ex_def ex_defs[];
extern const int ex_ndefs;

#endif
