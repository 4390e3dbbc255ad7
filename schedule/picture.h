/*
 * picture.h - pictures of a stage's loop nest for people learning to
 * schedule: a text tree of the loops and, for a 2-D output, a drawing of
 * how the output is tiled; and the same as a standalone SVG.
 *
 * Everything is derived from the schedule itself: the loops are the
 * stage's leaf axes in order, each line says how its variable relates to
 * the original axes (read off the split and fuse relations), the extents
 * of stages computed at a loop come from bound inference, and the tiling
 * drawings come from running the stage's data-parallel leaf loops (with
 * the guard of every split that does not divide) and noting which output
 * element each iteration writes.  Nothing is lowered or compiled.
 *
 * Both calls return a string in the schedule's arena.  A NULL schedule
 * gives NULL (with nowhere to record why); a NULL tensor, a tensor without
 * a stage, or a stage that has no loop nest of its own (inlined, or
 * computed at another stage: draw that stage instead, which shows it)
 * gives NULL with an error naming the call and the stage.  An error left
 * by an earlier call is cleared first (bound inference needs a clean
 * slate), as ts_lower does.  Drawing never changes the schedule.
 */
#ifndef TESSERA_SCHEDULE_PICTURE_H
#define TESSERA_SCHEDULE_PICTURE_H

#include "schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The loop nest of t's stage as an indented tree, one line per loop:
 *
 *   for i.outer [2]      parallel    i.outer = i / 32   (i: 50 = 2 x 32 does not
 *                                    divide: the last i.inner runs 18 of 32, guarded)
 *     for j.outer [2]    serial      j.outer = j / 32
 *       ...
 *           C[i, j] += ...  where i = i.outer*32 + i.inner, j = ...
 *
 * Stages computed at a loop appear under it with their loops.  For a 2-D
 * output a grid follows: the top-left corner of the output (at most
 * TS_PICTURE_WINDOW x TS_PICTURE_WINDOW elements), each element numbered
 * by the order in which the nest first writes it, with lines where the
 * tile loops (the leading loops made by the outer part of a split, or a
 * fuse of such) change value. */
const char *ts_schedule_picture(ts_schedule *s, const ts_tensor *t);

/* A standalone SVG of a 2-D stage: the whole output plane divided into its
 * tiles (numbered in the order they run, coloured by the value of the
 * parallel loop when a tile loop is parallel), the first tile enlarged
 * with each element numbered in visit order, and each run of the
 * innermost loop outlined (orange when that loop is vectorized), and the
 * loop list as text.  Refuses stages that are not 2-D and outputs of more
 * than TS_PICTURE_SVG_MAX elements. */
const char *ts_schedule_svg(ts_schedule *s, const ts_tensor *t);

#define TS_PICTURE_WINDOW 16
#define TS_PICTURE_SVG_MAX (1 << 20)

#ifdef __cplusplus
}
#endif

#endif
