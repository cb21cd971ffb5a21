/* The allocation limit (rlx/executable.h, rlx_executable_set_max_allocation): a node output, a
 * temporary of rlx's lowering or a buffer MLX allocates inside an op that would exceed it fails the
 * run with RESOURCE_EXHAUSTED naming the node, op, bytes and limit, in every mode, before MLX
 * allocates; graphs under it run. The expected errors and values are closed forms computed here. */
#include <unistd.h>

#include "exec_test_util.h"

#define MiB ((size_t)1 << 20)

/* y = ReduceSum(Expand(x[1], [n, n])) */
static rlx_graph *expand_sum_graph(int64_t n) {
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 1, DIMS(1)), e, y;
  int64_t shape[2] = {n, n};
  OK(rlx_graph_add1(g, RLX_OP_EXPAND, "big", 1, &x, 1, (rlx_attr[]){RLX_ATTR_IS("shape", 2, shape)}, &e));
  OK(rlx_graph_add1(g, RLX_OP_REDUCE, "sum", 1, &e, 1, (rlx_attr[]){RLX_ATTR_S("kind", "sum")}, &y));
  OK(rlx_graph_set_outputs(g, 1, &y));
  return g;
}

static rlx_status *run_scalar(rlx_executable *ex, float v, rlx_tensor **y) {
  rlx_tensor *x = tf32(1, DIMS(1), &v);
  rlx_status *st = run1(ex, "x", x, y);
  rlx_tensor_free(x);
  return st;
}

/* The default is the physical RAM on the CPU; a node output beyond it (1 PiB) fails every mode,
 * and the executable stays usable. */
static void test_node_output_over_default(void **state) {
  (void)state;
  size_t ram = (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
  rlx_graph *big = expand_sum_graph((int64_t)1 << 24), *small = expand_sum_graph(64);
  char want[200];
  snprintf(want, sizeof want,
           "node 1 (Expand 'big'): output 0 of float32[16777216,16777216] would take 1125899906842624 bytes, more than the "
           "allocation limit of %zu bytes",
           ram);
  for (size_t m = 0; m < LEN(all_modes); m++) {
    rlx_executable *ex = make_exec(big, all_modes[m]);
    assert_int_equal(rlx_executable_max_allocation(ex), ram);
    rlx_tensor *y = NULL;
    FAILS(run_scalar(ex, 1, &y), RESOURCE_EXHAUSTED, want);
    assert_null(y);
    rlx_executable_free(ex);
    ex = make_exec(small, all_modes[m]);
    OK(run_scalar(ex, 0.5f, &y));
    expect_f32(y, 0, NULL, (const float[]){0.5f * 64 * 64}, 0);
    rlx_tensor_free(y);
    rlx_executable_free(ex);
  }
  rlx_graph_free(big);
  rlx_graph_free(small);
}

/* A temporary of the lowering: a Pool whose kernel of 100 taps reduces a window view of output x
 * taps elements (int32[1,1,3997,100], 1598800 bytes) while its input and output take 16 KiB. */
static void test_lowering_temporary(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = g_input(g, "x", RLX_DTYPE_I32, 3, DIMS(1, 1, 4096)), p;
  int64_t k[1] = {100};
  OK(rlx_graph_add1(g, RLX_OP_POOL, "p", 1, &x, 2, (rlx_attr[]){RLX_ATTR_S("kind", "sum"), RLX_ATTR_IS("kernel_shape", 1, k)}, &p));
  OK(rlx_graph_set_outputs(g, 1, &p));
  static int32_t ones[4096];
  for (int i = 0; i < 4096; i++) ones[i] = 1;
  rlx_tensor *xt = tensor(RLX_DTYPE_I32, 3, DIMS(1, 1, 4096), ones);
  for (size_t m = 0; m < LEN(all_modes); m++) {
    rlx_executable *ex = make_exec(g, all_modes[m]);
    OK(rlx_executable_set_max_allocation(ex, MiB));
    rlx_tensor *y = NULL;
    FAILS(run1(ex, "x", xt, &y), RESOURCE_EXHAUSTED,
          "node 1 (Pool 'p'): an array of int32[1,1,3997,100] would take 1598800 bytes, more than the allocation limit of 1048576 bytes");
    OK(rlx_executable_set_max_allocation(ex, 2 * MiB));
    OK(run1(ex, "x", xt, &y));
    assert_int_equal(rlx_tensor_numel(y), 3997);
    const int32_t *got = rlx_tensor_cdata(y);
    for (int i = 0; i < 3997; i++) assert_int_equal(got[i], 100);
    rlx_tensor_free(y);
    rlx_executable_free(ex);
  }
  rlx_tensor_free(xt);
  rlx_graph_free(g);
}

/* A buffer MLX allocates inside an op: its CPU convolution (3D, one group) unfolds the input into
 * [N * 14^3 positions, 4 channels * 27 taps] float32 = 1185408 bytes; x, w and y take < 64 KiB. */
static void test_mlx_internal_buffer(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 5, DIMS(1, 4, 16, 16, 16)), w = g_input(g, "w", RLX_DTYPE_F32, 5, DIMS(4, 4, 3, 3, 3)), y;
  OK(rlx_graph_add1(g, RLX_OP_CONV, "c3", 2, VALS(x, w), 0, NULL, &y));
  OK(rlx_graph_set_outputs(g, 1, &y));
  float *xs = malloc(sizeof(float) * 16384), ws[432];
  assert_non_null(xs);
  for (int i = 0; i < 16384; i++) xs[i] = 1;
  for (int i = 0; i < 432; i++) ws[i] = 1;
  rlx_tensor *xt = tf32(5, DIMS(1, 4, 16, 16, 16), xs), *wt = tf32(5, DIMS(4, 4, 3, 3, 3), ws);
  const char *names[] = {"x", "w"};
  rlx_tensor *vals[] = {xt, wt};
  for (size_t m = 0; m < LEN(all_modes); m++) {
    rlx_executable *ex = make_exec(g, all_modes[m]);
    OK(rlx_executable_set_max_allocation(ex, MiB));
    rlx_tensor *out = NULL;
    FAILS(rlx_executable_run(ex, 2, names, vals, 1, &out), RESOURCE_EXHAUSTED,
          "node 2 (Conv 'c3'): MLX's CPU convolution's unfolded input would take 1185408 bytes, more than the allocation limit of "
          "1048576 bytes");
    OK(rlx_executable_set_max_allocation(ex, 2 * MiB));
    OK(rlx_executable_run(ex, 2, names, vals, 1, &out));
    assert_int_equal(rlx_tensor_numel(out), 4 * 14 * 14 * 14);
    const float *got = rlx_tensor_cdata(out);
    for (int i = 0; i < 4 * 14 * 14 * 14; i++) assert_true(got[i] == 4 * 27);
    rlx_tensor_free(out);
    rlx_executable_free(ex);
  }
  rlx_tensor_free(xt);
  rlx_tensor_free(wt);
  free(xs);
  rlx_graph_free(g);
}

/* A shapeless compiled function replays its trace for new sizes without lowering: the node
 * outputs are checked at the run's sizes all the same. y[s0,s0] = a[s0,1] + b[1,s0]. */
static void test_shapeless_replay(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value a = g_input(g, "a", RLX_DTYPE_F32, 2, DIMS(RLX_DIM_SYMBOL(0), 1)), b = g_input(g, "b", RLX_DTYPE_F32, 2, DIMS(1, RLX_DIM_SYMBOL(0))), y;
  OK(rlx_graph_add1(g, RLX_OP_ADD, "outer", 2, VALS(a, b), 0, NULL, &y));
  OK(rlx_graph_set_outputs(g, 1, &y));
  rlx_executable *ex = make_exec(g, RLX_MODE_COMPILED);
  OK(rlx_executable_set_shapeless(ex, true));
  OK(rlx_executable_set_max_allocation(ex, MiB));
  float av[1024], bv[1024];
  for (int i = 0; i < 1024; i++) av[i] = (float)i, bv[i] = (float)(1000 * i);
  const int64_t sizes[] = {4, 256, 1024, 8};
  for (size_t k = 0; k < LEN(sizes); k++) {
    int64_t s = sizes[k];
    rlx_tensor *at = tf32(2, DIMS(s, 1), av), *bt = tf32(2, DIMS(1, s), bv), *out = NULL;
    rlx_status *st = rlx_executable_run(ex, 2, (const char *const[]){"a", "b"}, (rlx_tensor *const[]){at, bt}, 1, &out);
    if (s == 1024) {
      FAILS(st, RESOURCE_EXHAUSTED, "node 2 (Add 'outer'): output 0 of float32[1024,1024] would take 4194304 bytes, more than the allocation limit of 1048576 bytes");
    } else {
      OK(st);
      const float *got = rlx_tensor_cdata(out);
      for (int64_t i = 0; i < s * s; i++) assert_true(got[i] == (float)(i / s) + (float)(1000 * (i % s)));
    }
    rlx_tensor_free(out);
    rlx_tensor_free(at);
    rlx_tensor_free(bt);
  }
  assert_int_equal(rlx_executable_num_traces(ex), 1);
  rlx_executable_free(ex);
  rlx_graph_free(g);
}

/* RLX_MAX_ALLOCATION: bytes or K/M/G/T binary multiples; anything else fails creation; the
 * setter's 0 goes back to it. */
static void test_environment(void **state) {
  (void)state;
  rlx_graph *g = expand_sum_graph(512); /* Expand: 1 MiB */
  static const struct {
    const char *env;
    size_t bytes;
  } good[] = {{"12", 12}, {"2k", 2048}, {"3M", 3 * MiB}, {"1G", 1024 * MiB}, {"2T", (size_t)2 << 40}};
  for (size_t i = 0; i < LEN(good); i++) {
    setenv("RLX_MAX_ALLOCATION", good[i].env, 1);
    rlx_executable *ex = make_exec(g, RLX_MODE_LAZY);
    assert_int_equal(rlx_executable_max_allocation(ex), good[i].bytes);
    OK(rlx_executable_set_max_allocation(ex, 5));
    assert_int_equal(rlx_executable_max_allocation(ex), 5);
    OK(rlx_executable_set_max_allocation(ex, 0));
    assert_int_equal(rlx_executable_max_allocation(ex), good[i].bytes);
    rlx_tensor *y = NULL;
    if (good[i].bytes < MiB) {
      FAILS(run_scalar(ex, 1, &y), RESOURCE_EXHAUSTED, "(Expand 'big'): output 0 of float32[512,512] would take 1048576 bytes");
    } else {
      OK(run_scalar(ex, 1, &y));
      expect_f32(y, 0, NULL, (const float[]){512 * 512}, 0);
      rlx_tensor_free(y);
    }
    rlx_executable_free(ex);
  }
  static const char *const bad[] = {"abc", "0", "1X", "-5", "1.5G", "99999999999999999999", "17179869184T", "1KM"};
  for (size_t i = 0; i < LEN(bad); i++) {
    setenv("RLX_MAX_ALLOCATION", bad[i], 1);
    rlx_executable *ex = NULL;
    FAILS(rlx_executable_create(g, RLX_DEVICE_CPU, RLX_MODE_LAZY, &ex), INVALID_ARGUMENT, "environment variable RLX_MAX_ALLOCATION");
    assert_null(ex);
  }
  unsetenv("RLX_MAX_ALLOCATION");
  FAILS(rlx_executable_set_max_allocation(NULL, 1), INVALID_ARGUMENT, "NULL executable");
  rlx_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_node_output_over_default),
      cmocka_unit_test(test_lowering_temporary),
      cmocka_unit_test(test_mlx_internal_buffer),
      cmocka_unit_test(test_shapeless_replay),
      cmocka_unit_test(test_environment),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
