/* Active extent: running only the used rows of a bucketed axis 0, or falling back (and saying why). */
#include "exec_test_util.h"

#define UPPER 8

/* p = softmax(x @ w + b) over the last axis, r = relu(x): x [UPPER, 4], w [4, 3] param, b [3]. */
static rlx_graph *rows_graph(void) {
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 2, DIMS(UPPER, 4));
  rlx_value w = g_param(g, "w", RLX_DTYPE_F32, 2, DIMS(4, 3));
  rlx_value b = g_const(g, RLX_DTYPE_F32, 1, DIMS(3), (const float[]){0.1f, 0.2f, -0.3f});
  rlx_value h = g_op(g, RLX_OP_ADD, 2, VALS(g_op(g, RLX_OP_MATMUL, 2, VALS(x, w), 0, NULL), b), 0, NULL);
  rlx_value p = g_op(g, RLX_OP_SOFTMAX, 1, &h, 0, NULL);
  rlx_value r = g_op(g, RLX_OP_RELU, 1, &x, 0, NULL);
  OK(rlx_graph_set_outputs(g, 2, VALS(p, r)));
  return g;
}

static const float W[12] = {0.5f, -1, 0.25f, 1, 0.5f, -0.5f, -0.75f, 0.2f, 1.5f, 0.3f, 0.3f, 0.3f};

static void expected(const float *x, int64_t rows, float *p, float *r) {
  const float b[3] = {0.1f, 0.2f, -0.3f};
  for (int64_t i = 0; i < rows; i++) {
    double h[3], mx = -INFINITY, s = 0;
    for (int j = 0; j < 3; j++) {
      h[j] = b[j];
      for (int k = 0; k < 4; k++) h[j] += (double)x[i * 4 + k] * W[k * 3 + j];
      mx = h[j] > mx ? h[j] : mx;
    }
    for (int j = 0; j < 3; j++) s += exp(h[j] - mx);
    for (int j = 0; j < 3; j++) p[i * 3 + j] = (float)(exp(h[j] - mx) / s);
    for (int k = 0; k < 4; k++) r[i * 4 + k] = x[i * 4 + k] > 0 ? x[i * 4 + k] : 0;
  }
}

static void check_rows(rlx_executable *ex, int64_t rows, bool handle) {
  float x[UPPER * 4], p[UPPER * 3], r[UPPER * 4];
  fill_random(x, UPPER * 4, (uint32_t)rows + 100);
  expected(x, rows, p, r);
  rlx_tensor *tx = tf32(2, DIMS(UPPER, 4), x), *outs[2] = {0};
  if (handle) {
    OK(rlx_executable_bind_device_handle(ex, "x", tx));
    OK(rlx_executable_run(ex, 0, NULL, NULL, 2, outs));
  } else {
    OK(rlx_executable_run(ex, 1, (const char *const[]){"x"}, (rlx_tensor *const[]){tx}, 2, outs));
  }
  expect_f32(outs[0], 2, DIMS(rows, 3), p, 1e-6);
  expect_f32(outs[1], 2, DIMS(rows, 4), r, 0);
  for (int i = 0; i < 2; i++) rlx_tensor_free(outs[i]);
  rlx_tensor_free(tx);
}

static void test_extent_applies(void **state) {
  (void)state;
  rlx_graph *g = rows_graph();
  rlx_tensor *tw = tf32(2, DIMS(4, 3), W);
  for (size_t m = 0; m < LEN(all_modes); m++) {
    rlx_executable *ex = make_exec(g, all_modes[m]);
    OK(rlx_executable_set_param(ex, "w", tw));
    check_rows(ex, UPPER, false);
    OK(rlx_executable_set_active_extent(ex, 3, UPPER));
    assert_null(rlx_executable_active_extent_fallback(ex));
    check_rows(ex, 3, false);
    check_rows(ex, 3, true); /* a device handle is cut too */
    OK(rlx_executable_set_active_extent(ex, 5, UPPER));
    check_rows(ex, 5, false);
    OK(rlx_executable_set_active_extent(ex, 3, UPPER));
    check_rows(ex, 3, false);
    if (all_modes[m] == RLX_MODE_COMPILED) assert_int_equal(rlx_executable_num_traces(ex), 3); /* 8, 3, 5 rows */
    OK(rlx_executable_set_active_extent(ex, 0, 0));
    check_rows(ex, UPPER, true);
    FAILS(rlx_executable_set_active_extent(ex, 9, UPPER), INVALID_ARGUMENT, "expected 0 < actual <= upper");
    FAILS(rlx_executable_set_active_extent(ex, 0, UPPER), INVALID_ARGUMENT, "active extent 0 of 8");
    rlx_executable_free(ex);
  }
  rlx_tensor_free(tw);
  rlx_graph_free(g);
}

/* Slots: a cut output fills the first rows of its slot. */
static void test_extent_slots(void **state) {
  (void)state;
  rlx_graph *g = rows_graph();
  rlx_tensor *tw = tf32(2, DIMS(4, 3), W);
  rlx_executable *ex = make_exec(g, RLX_MODE_COMPILED);
  OK(rlx_executable_set_param(ex, "w", tw));
  OK(rlx_executable_set_active_extent(ex, 2, UPPER));
  float x[UPPER * 4], p[UPPER * 3], r[UPPER * 4];
  fill_random(x, UPPER * 4, 7);
  expected(x, 2, p, r);
  size_t off, nb;
  OK(rlx_executable_output_slot(ex, 1, &off, &nb));
  float *slot = (float *)(arena_of(ex) + off);
  for (int i = 0; i < UPPER * 4; i++) slot[i] = -99;
  OK(rlx_executable_run_slots(ex, 1, (const void *const[]){x}));
  for (int i = 0; i < 2 * 4; i++) assert_true(slot[i] == r[i]);
  for (int i = 2 * 4; i < UPPER * 4; i++) assert_true(slot[i] == -99);
  rlx_tensor_free(tw);
  rlx_executable_free(ex);
  rlx_graph_free(g);
}

/* Graphs that mix rows fall back to the full extent and name the op that prevents the cut. */
static void expect_fallback(rlx_graph *g, const char *needle) {
  rlx_executable *ex = make_exec(g, RLX_MODE_LAZY);
  OK(rlx_executable_set_active_extent(ex, 2, UPPER));
  const char *why = rlx_executable_active_extent_fallback(ex);
  assert_non_null(why);
  if (!strstr(why, needle)) fail_msg("fallback reason '%s' lacks '%s'", why, needle);
  float x[UPPER * 4];
  fill_random(x, UPPER * 4, 3);
  rlx_tensor *tx = tf32(2, DIMS(UPPER, 4), x), *out = NULL;
  OK(run1(ex, "x", tx, &out));
  assert_int_equal(rlx_tensor_dims(out)[0], rlx_graph_value_type(g, rlx_graph_output_value(g, 0))->dims[0]);
  rlx_tensor_free(out);
  rlx_tensor_free(tx);
  rlx_executable_free(ex);
  rlx_graph_free(g);
}

static rlx_graph *unary_graph(rlx_op op, const char *name, size_t na, const rlx_attr *attrs) {
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 2, DIMS(UPPER, 4)), y;
  OK(rlx_graph_add1(g, op, name, 1, &x, na, attrs, &y));
  OK(rlx_graph_set_outputs(g, 1, &y));
  return g;
}

static void test_extent_fallbacks(void **state) {
  (void)state;
  expect_fallback(unary_graph(RLX_OP_RESHAPE, "r", 1, (rlx_attr[]){RLX_ATTR_IS("shape", 3, DIMS(UPPER, 2, 2))}),
                  "active extent: node 1 (Reshape 'r'): its shape attribute holds the full extent");
  expect_fallback(unary_graph(RLX_OP_REDUCE, "s", 2, (rlx_attr[]){RLX_ATTR_S("kind", "sum"), RLX_ATTR_IS("axes", 1, DIMS(0))}),
                  "node 1 (Reduce 's'): it reduces over axis 0");
  expect_fallback(unary_graph(RLX_OP_TRANSPOSE, "t", 0, NULL), "node 1 (Transpose 't'): it moves axis 0");
  expect_fallback(unary_graph(RLX_OP_SOFTMAX, "sm", 1, (rlx_attr[]){RLX_ATTR_I("axis", 0)}), "it works along axis 0");
  /* x @ x^T contracts the rows of its second operand */
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 2, DIMS(UPPER, 4)), y;
  rlx_value xt = g_op(g, RLX_OP_TRANSPOSE, 1, &x, 0, NULL);
  OK(rlx_graph_add1(g, RLX_OP_MATMUL, "gram", 2, VALS(xt, x), 0, NULL, &y));
  OK(rlx_graph_set_outputs(g, 1, &y));
  expect_fallback(g, "Transpose");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_extent_applies),
      cmocka_unit_test(test_extent_slots),
      cmocka_unit_test(test_extent_fallbacks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
