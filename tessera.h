/*
 * tessera.h - the public API in one include.
 *
 * The layers, in the direction data flows:
 *   frontend/  tensor expressions, operator library, reference evaluator
 *   ir/        expressions, statements, printer, simplifier, bounds
 *   schedule/  stages, primitives, bound inference, lowering passes
 *   codegen/   LLVM (CPU), C and CUDA C emitters, loop-IR interpreter
 *   runtime/   arrays, thread pool, CUDA driver, modules, timers
 */
#ifndef TESSERA_H
#define TESSERA_H

#include "ir/ctx.h"
#include "ir/ir.h"
#include "ir/printer.h"
#include "frontend/te.h"
#include "frontend/eval.h"
#include "frontend/ops.h"
#include "runtime/array.h"
#include "runtime/threadpool.h"
#include "runtime/timer.h"
#include "runtime/args.h"

#endif
