/*
 * check_reads.h - the check that every tensor read stays inside the read
 * tensor's shape, run by ts_lower before the passes (see check_reads.c for
 * the rule and what is refused).
 */
#ifndef TESSERA_SCHEDULE_CHECK_READS_H
#define TESSERA_SCHEDULE_CHECK_READS_H

#include "schedule.h"

/* Checks the reads of every stage of s over the stage's whole domain (data
 * axes x reduction axes).  Returns TS_OK, or TS_ERR_INVALID with a message
 * naming the reading stage, the read, its range and the shape:
 * "lower: C reads A[i + 8] over [8, 24) in dimension 0, but A has extent 16". */
ts_status sch_check_reads(ts_ctx *ctx, ts_schedule *s);

#endif
