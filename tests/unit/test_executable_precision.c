/* Float32 precision control (rlx_executable_set_precision): names, the default from
 * MLX_ENABLE_TF32, no effect on the CPU, and on a GPU one precision per process. The product
 * below is exact in float32 but not in TF32 (1 + 2^-20 needs 20 mantissa bits; TF32 keeps 10), so
 * an exact result shows full float32. */
#include <stdlib.h>

#include "exec_test_util.h"

static const float X[2] = {1.0f + 0x1p-20f, 3.0f};
static const float W[2] = {1.0f, 0.0f};

/* y[1,1] = x[1,2] @ w[2,1] = 1 + 2^-20 */
static rlx_graph *dot_graph(void) {
  rlx_graph *g = NULL;
  OK(rlx_graph_create(&g));
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 2, DIMS(1, 2));
  rlx_value w = g_const(g, RLX_DTYPE_F32, 2, DIMS(2, 1), W);
  rlx_value y = g_op(g, RLX_OP_MATMUL, 2, VALS(x, w), 0, NULL);
  OK(rlx_graph_set_outputs(g, 1, &y));
  return g;
}

static void run_exact(rlx_executable *ex) {
  rlx_tensor *x = tf32(2, DIMS(1, 2), X), *y = NULL;
  OK(run1(ex, "x", x, &y));
  expect_f32(y, 2, DIMS(1, 1), (const float[]){1.0f + 0x1p-20f}, 0.0);
  rlx_tensor_free(x);
  rlx_tensor_free(y);
}

static void test_names(void **state) {
  (void)state;
  rlx_precision p = RLX_PRECISION_DEFAULT;
  OK(rlx_precision_from_name("TF32", &p));
  assert_int_equal(p, RLX_PRECISION_TF32);
  OK(rlx_precision_from_name("fp32", &p));
  assert_int_equal(p, RLX_PRECISION_FP32);
  assert_string_equal(rlx_precision_name(RLX_PRECISION_TF32), "tf32");
  FAILS(rlx_precision_from_name("fp16", &p), INVALID_ARGUMENT, "unknown precision 'fp16'");
  assert_int_equal(p, RLX_PRECISION_FP32);
}

static void test_default_follows_env(void **state) {
  (void)state;
  rlx_graph *g = dot_graph();
  rlx_executable *ex = NULL;
  unsetenv("MLX_ENABLE_TF32");
  OK(rlx_executable_create(g, RLX_DEVICE_CPU, RLX_MODE_LAZY, &ex));
  assert_int_equal(rlx_executable_precision(ex), RLX_PRECISION_FP32);
  setenv("MLX_ENABLE_TF32", "1", 1);
  OK(rlx_executable_set_precision(ex, RLX_PRECISION_DEFAULT));
  assert_int_equal(rlx_executable_precision(ex), RLX_PRECISION_TF32);
  unsetenv("MLX_ENABLE_TF32");
  FAILS(rlx_executable_set_precision(ex, (rlx_precision)7), INVALID_ARGUMENT, "invalid precision 7");
  assert_int_equal(rlx_executable_precision(ex), RLX_PRECISION_TF32);
  FAILS(rlx_executable_set_precision(NULL, RLX_PRECISION_FP32), INVALID_ARGUMENT, "NULL executable");
  rlx_executable_free(ex);
  rlx_graph_free(g);
}

/* On the CPU, TF32 is accepted and changes nothing: the product stays exact, in every mode. */
static void test_cpu_tf32_has_no_effect(void **state) {
  (void)state;
  rlx_graph *g = dot_graph();
  for (size_t m = 0; m < LEN(all_modes); m++) {
    rlx_executable *ex = make_exec(g, all_modes[m]);
    OK(rlx_executable_set_precision(ex, RLX_PRECISION_TF32));
    run_exact(ex);
    rlx_executable_free(ex);
  }
  rlx_graph_free(g);
}

/* On a GPU: the first run fixes the process's precision (fp32 here, exact), a later executable
 * cannot switch it. */
static void test_gpu_one_precision_per_process(void **state) {
  (void)state;
  if (!rlx_gpu_available()) skip();
  rlx_graph *g = dot_graph();
  rlx_executable *a = NULL, *b = NULL;
  OK(rlx_executable_create(g, RLX_DEVICE_GPU, RLX_MODE_LAZY, &a));
  OK(rlx_executable_create(g, RLX_DEVICE_GPU, RLX_MODE_LAZY, &b));
  OK(rlx_executable_set_precision(b, RLX_PRECISION_TF32)); /* nothing fixed yet */
  OK(rlx_executable_set_precision(a, RLX_PRECISION_FP32));
  run_exact(a);
  assert_string_equal(getenv("MLX_ENABLE_TF32"), "0");
  rlx_tensor *x = tf32(2, DIMS(1, 2), X), *y = NULL;
  FAILS(run1(b, "x", x, &y), FAILED_PRECONDITION, "already runs GPU work in fp32");
  assert_null(y);
  FAILS(rlx_executable_set_precision(b, RLX_PRECISION_TF32), FAILED_PRECONDITION, "MLX_ENABLE_TF32");
  OK(rlx_executable_set_precision(b, RLX_PRECISION_FP32));
  run_exact(b);
  rlx_tensor_free(x);
  rlx_executable_free(a);
  rlx_executable_free(b);
  rlx_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_default_follows_env),
      cmocka_unit_test(test_cpu_tf32_has_no_effect),
      cmocka_unit_test(test_gpu_one_precision_per_process),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
