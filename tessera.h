/*
 * tessera.h - the public API in one include.
 *
 * The layers, in the direction data flows:
 *   frontend/  tensor expressions, operator library, reference evaluator;
 *              whole models (graph.h: graphs of operators, ONNX import),
 *              which compile through schedule/ and codegen/
 *   ir/        expressions, statements, printer, simplifier, bounds
 *   schedule/  stages, primitives, bound inference, lowering passes
 *   codegen/   LLVM (CPU), C and CUDA C emitters, NVRTC, loop-IR interpreter
 *   runtime/   arrays, thread pool, CUDA driver, modules, timers
 *
 * In the source tree every folder is on the include path; an installed
 * tessera puts all these headers in <prefix>/include/tessera, so a program
 * writes #include <tessera/tessera.h> (or "tessera.h" with
 * `pkg-config --cflags tessera`).  Every header is usable from C++.
 */
#ifndef TESSERA_H
#define TESSERA_H

/* ir/ */
#include "ctx.h"
#include "ir.h"
#include "printer.h"
#include "arith.h"
#include "verify.h"
/* frontend/ */
#include "te.h"
#include "eval.h"
#include "ops.h"
#include "graph.h"
/* schedule/ */
#include "schedule.h"
#include "lower.h"
#include "op_schedules.h"
#include "picture.h"
#include "tune.h"
/* codegen/ */
#include "build.h"
#include "interp.h"
#include "c_emit.h"
#include "llvm.h"
#include "nvrtc.h"
/* runtime/ */
#include "array.h"
#include "args.h"
#include "threadpool.h"
#include "timer.h"
#include "cuda_driver.h"

#endif
