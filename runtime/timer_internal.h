/*
 * timer_internal.h - the sorted-sample helpers timer.c (medians, the
 * stable run's confidence interval) and timer_stats.c (the verdict's
 * statistics) share, so that both order NaN and average the middle pair
 * the same way.
 */
#ifndef TESSERA_RUNTIME_TIMER_INTERNAL_H
#define TESSERA_RUNTIME_TIMER_INTERNAL_H

/* Sorts v[0..n) ascending, NaN after every number: a comparison that
 * orders NaN with nothing is no order at all, and qsort would then place
 * the numbers by their input order. */
void rt_sort_doubles(double *v, int n);
/* The median of sorted s[0..n), n >= 1; the middle pair's mean without
 * overflowing their sum. */
double rt_sorted_median(const double *s, int n);

#endif
