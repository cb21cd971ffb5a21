/* exec_test_util.h: graph-building and tensor helpers for the executable tests (test_executable_*.c).
 * Expected values in these tests come from closed forms computed here in C, never from rlx. */
#ifndef RLX_EXEC_TEST_UTIL_H
#define RLX_EXEC_TEST_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define LEN(a) (sizeof(a) / sizeof((a)[0]))
#define VALS(...) ((const rlx_value[]){__VA_ARGS__})

static const rlx_mode all_modes[] = {RLX_MODE_EAGER, RLX_MODE_LAZY, RLX_MODE_COMPILED};

static inline rlx_tensor *tensor(rlx_dtype dt, int rank, const int64_t *dims, const void *data) {
  rlx_tensor *t = NULL;
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= dims[i];
  OK(rlx_tensor_create(dt, rank, dims, data, (size_t)n * rlx_dtype_size(dt), &t));
  return t;
}

static inline rlx_tensor *tf32(int rank, const int64_t *dims, const float *data) { return tensor(RLX_DTYPE_F32, rank, dims, data); }

static inline rlx_value g_input(rlx_graph *g, const char *name, rlx_dtype dt, int rank, const int64_t *dims) {
  rlx_type t = ttype(dt, rank, dims);
  rlx_value v;
  OK(rlx_graph_add_input(g, name, &t, &v));
  return v;
}

static inline rlx_value g_param(rlx_graph *g, const char *name, rlx_dtype dt, int rank, const int64_t *dims) {
  rlx_type t = ttype(dt, rank, dims);
  rlx_value v;
  OK(rlx_graph_add_param(g, name, &t, &v));
  return v;
}

static inline rlx_value g_const(rlx_graph *g, rlx_dtype dt, int rank, const int64_t *dims, const void *data) {
  rlx_type t = ttype(dt, rank, dims);
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= dims[i];
  rlx_value v;
  OK(rlx_graph_add_constant(g, &t, data, (size_t)n * rlx_dtype_size(dt), &v));
  return v;
}

static inline rlx_value g_op(rlx_graph *g, rlx_op op, size_t n, const rlx_value *in, size_t na, const rlx_attr *attrs) {
  rlx_value v;
  OK(rlx_graph_add1(g, op, NULL, n, in, na, attrs, &v));
  return v;
}

static inline rlx_executable *make_exec(const rlx_graph *g, rlx_mode mode) {
  rlx_executable *ex = NULL;
  OK(rlx_executable_create(g, RLX_DEVICE_CPU, mode, &ex));
  return ex;
}

/* Asserts t is float32 of the given shape with |t - want| <= tol elementwise. */
static inline void expect_f32(const rlx_tensor *t, int rank, const int64_t *dims, const float *want, double tol) {
  assert_non_null(t);
  assert_int_equal(rlx_tensor_dtype(t), RLX_DTYPE_F32);
  assert_int_equal(rlx_tensor_rank(t), rank);
  for (int i = 0; i < rank; i++) assert_int_equal(rlx_tensor_dims(t)[i], dims[i]);
  const float *got = rlx_tensor_cdata(t);
  for (int64_t i = 0; i < rlx_tensor_numel(t); i++)
    if (!(fabs((double)got[i] - (double)want[i]) <= tol))
      fail_msg("element %lld: got %.9g, expected %.9g", (long long)i, (double)got[i], (double)want[i]);
}

/* The executable's slot arena (allocated on first use). */
static inline unsigned char *arena_of(rlx_executable *ex) {
  rlx_arena a = {0};
  OK(rlx_executable_arena(ex, &a));
  assert_true(a.nbytes > 0);
  return a.base;
}

/* Runs with one named input and one output. */
static inline rlx_status *run1(rlx_executable *ex, const char *name, rlx_tensor *x, rlx_tensor **y) {
  return rlx_executable_run(ex, 1, (const char *const[]){name}, (rlx_tensor *const[]){x}, 1, y);
}

/* Deterministic pseudo-random floats in [-1, 1) (xorshift; the seed selects the stream). */
static inline void fill_random(float *x, size_t n, uint32_t seed) {
  uint32_t s = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; i++) {
    s ^= s << 13, s ^= s >> 17, s ^= s << 5;
    x[i] = (float)((double)s / 2147483648.0 - 1.0);
  }
}

#endif
