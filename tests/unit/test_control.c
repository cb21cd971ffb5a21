/* Control flow through the C API: sub-graph ownership, symbolic dims across the sub-graph
 * boundary, and params that only sub-graphs read, updated between compiled runs. */
#include <math.h>

#include "test_util.h"

/* A sub-graph x[rank dims] -> op(x) (op unary) or x * param (op Mul, param `pname`). */
static rlx_graph *unary_sub(rlx_op op, int rank, const int64_t *dims, const char *pname) {
  rlx_graph *g;
  rlx_value x, p, y;
  rlx_type t = ttype(RLX_DTYPE_F32, rank, dims);
  OK(rlx_graph_create(&g));
  OK(rlx_graph_add_input(g, "x", &t, &x));
  if (pname) {
    OK(rlx_graph_add_param(g, pname, &t, &p));
    OK(rlx_graph_add1(g, op, NULL, 2, (rlx_value[]){x, p}, 0, NULL, &y));
  } else {
    OK(rlx_graph_add1(g, op, NULL, 1, &x, 0, NULL, &y));
  }
  OK(rlx_graph_set_outputs(g, 1, &y));
  return g;
}

static rlx_tensor *f32(int rank, const int64_t *dims, const float *v) {
  rlx_tensor *t;
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= dims[i];
  OK(rlx_tensor_create(RLX_DTYPE_F32, rank, dims, v, (size_t)n * 4, &t));
  return t;
}

static void test_subgraph_ownership(void **state) {
  (void)state;
  rlx_graph *g, *a = unary_sub(RLX_OP_EXP, 1, (int64_t[]){3}, NULL), *b = unary_sub(RLX_OP_TANH, 1, (int64_t[]){2}, NULL);
  rlx_value c, x, y = 777;
  rlx_type tc = ttype(RLX_DTYPE_BOOL, 0, NULL), tx = ttype(RLX_DTYPE_F32, 1, (int64_t[]){3});
  OK(rlx_graph_create(&g));
  OK(rlx_graph_add_input(g, "c", &tc, &c));
  OK(rlx_graph_add_input(g, "x", &tx, &x));
  /* one graph for both branches would be owned twice */
  rlx_attr same[2] = {RLX_ATTR_G("then_branch", a), RLX_ATTR_G("else_branch", a)};
  FAILS(rlx_graph_add1(g, RLX_OP_IF, NULL, 2, (rlx_value[]){c, x}, 2, same, &y), INVALID_ARGUMENT, "same graph");
  /* a failing add leaves the sub-graphs with the caller (b takes [2], x is [3]) */
  rlx_attr bad[2] = {RLX_ATTR_G("then_branch", a), RLX_ATTR_G("else_branch", b)};
  FAILS(rlx_graph_add1(g, RLX_OP_IF, NULL, 2, (rlx_value[]){c, x}, 2, bad, &y), INVALID_ARGUMENT, "operand is float32[3]");
  assert_int_equal(y, 777);
  assert_int_equal(rlx_graph_num_nodes(g), 2);
  rlx_graph_free(b);
  b = unary_sub(RLX_OP_TANH, 1, (int64_t[]){3}, NULL);
  rlx_attr good[2] = {RLX_ATTR_G("then_branch", a), RLX_ATTR_G("else_branch", b)};
  OK(rlx_graph_add1(g, RLX_OP_IF, "if", 2, (rlx_value[]){c, x}, 2, good, &y)); /* a and b now belong to g */
  rlx_graph_free(g);
}

/* The branches are written for [s7, 2]; the graph's input is [s0, 2]: the If output carries s0,
 * and runs with two sizes (rebinding) in lazy and compiled mode. */
static void test_symbolic_dims(void **state) {
  (void)state;
  rlx_graph *g;
  rlx_value c, x, y;
  rlx_type tc = ttype(RLX_DTYPE_BOOL, 0, NULL), tx = ttype(RLX_DTYPE_F32, 2, (int64_t[]){RLX_DIM_SYMBOL(0), 2});
  OK(rlx_graph_create(&g));
  OK(rlx_graph_add_input(g, "c", &tc, &c));
  OK(rlx_graph_add_input(g, "x", &tx, &x));
  int64_t sd[2] = {RLX_DIM_SYMBOL(7), 2};
  rlx_attr br[2] = {RLX_ATTR_G("then_branch", unary_sub(RLX_OP_NEG, 2, sd, NULL)),
                    RLX_ATTR_G("else_branch", unary_sub(RLX_OP_ABS, 2, sd, NULL))};
  OK(rlx_graph_add1(g, RLX_OP_IF, NULL, 2, (rlx_value[]){c, x}, 2, br, &y));
  const rlx_type *t = rlx_graph_value_type(g, y);
  assert_int_equal(t->rank, 2);
  assert_true(t->dims[0] == RLX_DIM_SYMBOL(0));
  assert_int_equal(t->dims[1], 2);
  OK(rlx_graph_set_outputs(g, 1, &y));
  for (rlx_mode mode = RLX_MODE_LAZY; mode <= RLX_MODE_COMPILED; mode++) {
    rlx_executable *ex;
    OK(rlx_executable_create(g, RLX_DEVICE_CPU, mode, &ex));
    for (int64_t rows = 1; rows <= 3; rows += 2) {
      float xv[6] = {1, -2, 3, -4, 5, -6};
      bool cv = rows == 3;
      rlx_tensor *in[2], *out = NULL;
      OK(rlx_tensor_create(RLX_DTYPE_BOOL, 0, NULL, &cv, 1, &in[0]));
      in[1] = f32(2, (int64_t[]){rows, 2}, xv);
      OK(rlx_executable_run(ex, 2, (const char *[]){"c", "x"}, in, 1, &out));
      assert_int_equal(rlx_tensor_dims(out)[0], rows);
      for (int64_t i = 0; i < rows * 2; i++) assert_float_equal(rlx_tensor_get_f64(out, i), cv ? -xv[i] : fabsf(xv[i]), 0);
      rlx_tensor_free(out);
      rlx_tensor_free(in[0]);
      rlx_tensor_free(in[1]);
    }
    rlx_executable_free(ex);
  }
  rlx_graph_free(g);
}

/* Params read only by sub-graphs (an If branch and a Scan body) are leaves of the compiled
 * function: a new value set between runs is used, not a value baked into the first trace. */
static void test_compiled_subgraph_params(void **state) {
  (void)state;
  rlx_graph *g;
  rlx_value c, x, y, z;
  rlx_type tc = ttype(RLX_DTYPE_BOOL, 0, NULL), tx = ttype(RLX_DTYPE_F32, 1, (int64_t[]){2});
  OK(rlx_graph_create(&g));
  OK(rlx_graph_add_input(g, "c", &tc, &c));
  OK(rlx_graph_add_input(g, "x", &tx, &x));
  rlx_attr br[2] = {RLX_ATTR_G("then_branch", unary_sub(RLX_OP_MUL, 1, (int64_t[]){2}, "w")),
                    RLX_ATTR_G("else_branch", unary_sub(RLX_OP_NEG, 1, (int64_t[]){2}, NULL))};
  OK(rlx_graph_add1(g, RLX_OP_IF, NULL, 2, (rlx_value[]){c, x}, 2, br, &y));
  /* Scan over xs = stack(y, y) with carry s: s = s * v (v a body param), length 2 */
  rlx_value xs;
  rlx_attr ax = RLX_ATTR_I("axis", 0), shape = RLX_ATTR_IS("shape", 2, ((int64_t[]){2, 2}));
  OK(rlx_graph_add1(g, RLX_OP_CONCAT, NULL, 2, (rlx_value[]){y, y}, 1, &ax, &xs));
  OK(rlx_graph_add1(g, RLX_OP_RESHAPE, NULL, 1, &xs, 1, &shape, &xs));
  rlx_graph *body = unary_sub(RLX_OP_MUL, 1, (int64_t[]){2}, "v");
  rlx_value bx;
  OK(rlx_graph_add_input(body, "x_t", &tx, &bx)); /* the step of xs, unused */
  rlx_attr sc[3] = {RLX_ATTR_G("body", body), RLX_ATTR_I("length", 2), RLX_ATTR_I("num_xs", 1)};
  OK(rlx_graph_add1(g, RLX_OP_SCAN, NULL, 2, (rlx_value[]){y, xs}, 3, sc, &z));
  OK(rlx_graph_set_outputs(g, 2, (rlx_value[]){y, z}));
  rlx_executable *ex;
  OK(rlx_executable_create(g, RLX_DEVICE_CPU, RLX_MODE_COMPILED, &ex));
  assert_int_equal(rlx_executable_num_params(ex), 2);
  bool cv = true;
  rlx_tensor *in[2];
  OK(rlx_tensor_create(RLX_DTYPE_BOOL, 0, NULL, &cv, 1, &in[0]));
  in[1] = f32(1, (int64_t[]){2}, (float[]){1, 2});
  for (int run = 1; run <= 2; run++) {
    float k = (float)run * 3;
    rlx_tensor *w = f32(1, (int64_t[]){2}, (float[]){k, k}), *v = f32(1, (int64_t[]){2}, (float[]){k + 1, k + 1}), *out[2] = {0};
    OK(rlx_executable_set_param(ex, "w", w));
    OK(rlx_executable_set_param(ex, "v", v));
    OK(rlx_executable_run(ex, 2, (const char *[]){"c", "x"}, in, 2, out));
    for (int i = 0; i < 2; i++) {
      double yv = (i + 1) * k;
      assert_float_equal(rlx_tensor_get_f64(out[0], i), yv, 1e-6);
      assert_float_equal(rlx_tensor_get_f64(out[1], i), yv * (k + 1) * (k + 1), 1e-3);
    }
    rlx_tensor_free(out[0]);
    rlx_tensor_free(out[1]);
    rlx_tensor_free(w);
    rlx_tensor_free(v);
  }
  rlx_tensor_free(in[0]);
  rlx_tensor_free(in[1]);
  rlx_executable_free(ex);
  rlx_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_subgraph_ownership),
      cmocka_unit_test(test_symbolic_dims),
      cmocka_unit_test(test_compiled_subgraph_params),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
