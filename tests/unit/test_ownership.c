/* Ownership and API misuse: an executable keeps its graph alive and frozen (freeing the graph first
 * is safe, building on it fails), index getters check their index, constructors and parsers check
 * their out-pointer. */
#include "exec_test_util.h"

/* y = x + 1 over x [3]. */
static rlx_graph *plus_one(void) {
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 1, DIMS(3));
  rlx_value y = g_op(g, RLX_OP_ADD, 2, VALS(x, g_const(g, RLX_DTYPE_F32, 0, NULL, (const float[]){1})), 0, NULL);
  OK(rlx_graph_set_outputs(g, 1, &y));
  return g;
}

static void test_graph_freed_before_executable(void **state) {
  (void)state;
  for (size_t m = 0; m < LEN(all_modes); m++) {
    rlx_graph *g = plus_one();
    rlx_executable *ex = make_exec(g, all_modes[m]), *ex2 = make_exec(g, all_modes[m]);
    rlx_graph_free(g); /* the executables keep it */
    rlx_tensor *x = tf32(1, DIMS(3), (const float[]){1, 2, 3}), *y = NULL;
    OK(run1(ex, "x", x, &y));
    expect_f32(y, 1, DIMS(3), (const float[]){2, 3, 4}, 0);
    rlx_tensor_free(y);
    assert_string_equal(rlx_graph_input_name(rlx_executable_graph(ex), 0), "x");
    rlx_executable_free(ex);
    OK(run1(ex2, "x", x, &y)); /* the second executable still holds the graph */
    expect_f32(y, 1, DIMS(3), (const float[]){2, 3, 4}, 0);
    rlx_tensor_free(y);
    rlx_executable_free(ex2);
    rlx_tensor_free(x);
  }
}

static void test_graph_frozen_while_used(void **state) {
  (void)state;
  rlx_graph *g = plus_one();
  rlx_executable *ex = make_exec(g, RLX_MODE_LAZY);
  rlx_type t = ttype(RLX_DTYPE_F32, 1, DIMS(3));
  rlx_value v = 7;
  FAILS(rlx_graph_add_input(g, "z", &t, &v), FAILED_PRECONDITION, "used by an executable");
  FAILS(rlx_graph_add_constant(g, &t, (const float[]){1, 2, 3}, 12, &v), FAILED_PRECONDITION, "used by an executable");
  FAILS(rlx_graph_add1(g, RLX_OP_NEG, NULL, 1, VALS(0), 0, NULL, &v), FAILED_PRECONDITION, "Neg");
  FAILS(rlx_graph_set_outputs(g, 1, VALS(0)), FAILED_PRECONDITION, "used by an executable");
  FAILS(rlx_graph_set_output_name(g, 0, "y"), FAILED_PRECONDITION, "used by an executable");
  assert_int_equal(v, 7);
  rlx_executable_free(ex);
  OK(rlx_graph_set_output_name(g, 0, "y")); /* free again once the executable is gone */
  rlx_graph_free(g);
}

static void test_getters_check_index(void **state) {
  (void)state;
  rlx_graph *g = plus_one();
  assert_null(rlx_graph_input_name(g, 1));
  assert_null(rlx_graph_input_name(g, SIZE_MAX));
  assert_int_equal(rlx_graph_input_value(g, 1), RLX_NO_VALUE);
  assert_null(rlx_graph_param_name(g, 0));
  assert_int_equal(rlx_graph_param_value(g, 0), RLX_NO_VALUE);
  assert_null(rlx_graph_output_name(g, 1));
  assert_int_equal(rlx_graph_output_value(g, 1), RLX_NO_VALUE);
  assert_null(rlx_graph_value_type(g, 1000));
  assert_null(rlx_graph_input_name(NULL, 0));
  assert_int_equal(rlx_graph_num_inputs(NULL), 0);
  assert_string_equal(rlx_graph_input_name(g, 0), "x");
  rlx_executable *ex = make_exec(g, RLX_MODE_LAZY);
  assert_null(rlx_executable_param_name(ex, 0));
  FAILS(rlx_executable_set_output_readback(ex, 1, false), OUT_OF_RANGE, "output 1");
  rlx_executable_free(ex);
  rlx_graph_free(g);
}

static void test_out_pointers_checked(void **state) {
  (void)state;
  FAILS(rlx_type_make(RLX_DTYPE_F32, 1, DIMS(3), NULL), INVALID_ARGUMENT, "rlx_type_make: out is NULL");
  rlx_type t = ttype(RLX_DTYPE_F32, 1, DIMS(3));
  FAILS(rlx_type_numel(&t, NULL), INVALID_ARGUMENT, "NULL");
  FAILS(rlx_type_nbytes(NULL, NULL), INVALID_ARGUMENT, "NULL");
  FAILS(rlx_dtype_from_name("float32", NULL), INVALID_ARGUMENT, "out is NULL");
  FAILS(rlx_op_from_name("Add", NULL), INVALID_ARGUMENT, "out is NULL");
  FAILS(rlx_mode_from_name("lazy", NULL), INVALID_ARGUMENT, "out is NULL");
  FAILS(rlx_device_from_name("cpu", NULL), INVALID_ARGUMENT, "out is NULL");
  FAILS(rlx_graph_create(NULL), INVALID_ARGUMENT, "NULL");
  FAILS(rlx_tensor_create(RLX_DTYPE_F32, 1, DIMS(3), NULL, 0, NULL), INVALID_ARGUMENT, "out is NULL");
  rlx_graph *g = plus_one();
  FAILS(rlx_executable_create(g, RLX_DEVICE_CPU, RLX_MODE_LAZY, NULL), INVALID_ARGUMENT, "NULL");
  rlx_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_graph_freed_before_executable),
      cmocka_unit_test(test_graph_frozen_while_used),
      cmocka_unit_test(test_getters_check_index),
      cmocka_unit_test(test_out_pointers_checked),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
