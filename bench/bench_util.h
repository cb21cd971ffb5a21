/* bench_util.h: the timing helpers the C benchmarks share (header-only, static inline). */
#ifndef RLX_BENCH_UTIL_H
#define RLX_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "rlx/rlx.h"

/* CLOCK_MONOTONIC in milliseconds. */
static inline double bench_now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* qsort comparator for doubles, ascending. */
static inline int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Sorts v[0..n) and returns its median (the mean of the middle two for even n). */
static inline double bench_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Prints "prog: CODE: message" to stderr, frees st, returns 1 (an exit status). */
static inline int bench_fail(const char *prog, rlx_status *st) {
  fprintf(stderr, "%s: %s: %s\n", prog, rlx_status_code_name(rlx_status_code_of(st)), rlx_status_message(st));
  rlx_status_free(st);
  return 1;
}

#endif
