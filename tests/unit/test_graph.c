/* Graph builder: inference, verification and the errors bad input gets. */
#include "test_util.h"

static void test_status(void **state) {
  (void)state;
  assert_null(rlx_status_make(RLX_STATUS_OK, "ignored"));
  rlx_status *st = rlx_status_make(RLX_STATUS_NOT_FOUND, "no input named '%s'", "x");
  st = rlx_status_annotate(st, "node %d", 3);
  assert_int_equal(rlx_status_code_of(st), RLX_STATUS_NOT_FOUND);
  assert_string_equal(rlx_status_message(st), "node 3: no input named 'x'");
  assert_string_equal(rlx_status_code_name(rlx_status_code_of(st)), "NOT_FOUND");
  rlx_status_free(st);
  rlx_status_free(NULL);
  assert_null(rlx_status_annotate(NULL, "x"));
}

static void test_infer_shapes(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value a, b, c, y;
  rlx_type ta = ttype(RLX_DTYPE_F32, 3, (int64_t[]){2, 1, 4}), tb = ttype(RLX_DTYPE_F32, 2, (int64_t[]){3, 1});
  OK(rlx_graph_add_input(g, "a", &ta, &a));
  OK(rlx_graph_add_input(g, "b", &tb, &b));
  OK(rlx_graph_add1(g, RLX_OP_ADD, "sum", 2, (rlx_value[]){a, b}, 0, NULL, &c));
  const rlx_type *t = rlx_graph_value_type(g, c);
  assert_int_equal(t->rank, 3);
  assert_int_equal(t->dims[0], 2);
  assert_int_equal(t->dims[1], 3);
  assert_int_equal(t->dims[2], 4);
  rlx_attr perm = RLX_ATTR_IS("perm", 3, ((int64_t[]){2, 0, 1}));
  OK(rlx_graph_add1(g, RLX_OP_TRANSPOSE, NULL, 1, &c, 1, &perm, &y));
  t = rlx_graph_value_type(g, y);
  assert_int_equal(t->dims[0], 4);
  assert_int_equal(t->dims[1], 2);
  assert_int_equal(t->dims[2], 3);
  rlx_graph_free(g);
}

static void test_errors_name_node_and_op(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value a, b, i, y = 12345;
  rlx_type ta = ttype(RLX_DTYPE_F32, 2, (int64_t[]){2, 3}), tb = ttype(RLX_DTYPE_F32, 1, (int64_t[]){4});
  rlx_type ti = ttype(RLX_DTYPE_I32, 1, (int64_t[]){3});
  OK(rlx_graph_add_input(g, "a", &ta, &a));
  OK(rlx_graph_add_input(g, "b", &tb, &b));
  OK(rlx_graph_add_input(g, "i", &ti, &i));
  FAILS(rlx_graph_add_input(g, "a", &ta, &a), ALREADY_EXISTS, "'a'");
  FAILS(rlx_graph_add1(g, RLX_OP_ADD, "add1", 2, (rlx_value[]){a, b}, 0, NULL, &y), INVALID_ARGUMENT, "node 3 (Add 'add1')");
  FAILS(rlx_graph_add1(g, RLX_OP_ADD, NULL, 2, (rlx_value[]){a, i}, 0, NULL, &y), INVALID_ARGUMENT, "dtypes");
  FAILS(rlx_graph_add1(g, RLX_OP_ADD, NULL, 1, &a, 0, NULL, &y), INVALID_ARGUMENT, "expected 2 inputs, got 1");
  FAILS(rlx_graph_add1(g, RLX_OP_ADD, NULL, 2, (rlx_value[]){a, 99}, 0, NULL, &y), NOT_FOUND, "value 99");
  rlx_attr bad = RLX_ATTR_I("axs", 1);
  FAILS(rlx_graph_add1(g, RLX_OP_SOFTMAX, NULL, 1, &a, 1, &bad, &y), INVALID_ARGUMENT, "unknown attribute 'axs'");
  rlx_attr wrong = RLX_ATTR_F("axis", 1.0);
  FAILS(rlx_graph_add1(g, RLX_OP_SOFTMAX, NULL, 1, &a, 1, &wrong, &y), INVALID_ARGUMENT, "must be int");
  rlx_attr axis = RLX_ATTR_I("axis", 5);
  FAILS(rlx_graph_add1(g, RLX_OP_SOFTMAX, NULL, 1, &a, 1, &axis, &y), OUT_OF_RANGE, "axis 5");
  FAILS(rlx_graph_add1(g, RLX_OP_NARROW, NULL, 1, &a, 0, NULL, &y), INVALID_ARGUMENT, "missing required attribute");
  rlx_attr shp = RLX_ATTR_IS("shape", 2, ((int64_t[]){4, 2}));
  FAILS(rlx_graph_add1(g, RLX_OP_RESHAPE, NULL, 1, &a, 1, &shp, &y), INVALID_ARGUMENT, "6 elements");
  rlx_attr dq = RLX_ATTR_S("scheme", "gguf_q4k");
  FAILS(rlx_graph_add1(g, RLX_OP_DEQUANT_MATMUL, NULL, 3, (rlx_value[]){a, a, a}, 1, &dq, &y), INVALID_ARGUMENT, "scheme 'gguf_q4k' takes 2 inputs");
  FAILS(rlx_graph_add1(g, RLX_OP_GAUSSIAN_SPLAT_RENDER, NULL, 1, &a, 0, NULL, &y), INVALID_ARGUMENT, "expected 7 inputs, got 1");
  assert_int_equal(y, 12345); /* untouched by failures */
  assert_int_equal(rlx_graph_num_nodes(g), 3);
  FAILS(rlx_graph_set_outputs(g, 0, NULL), INVALID_ARGUMENT, "at least one output");
  rlx_graph_free(g);
}

static void test_constant_size_checked(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value v;
  rlx_type t = ttype(RLX_DTYPE_F32, 1, (int64_t[]){3});
  float data[3] = {1, 2, 3};
  FAILS(rlx_graph_add_constant(g, &t, data, 8, &v), INVALID_ARGUMENT, "needs 12 bytes, got 8");
  OK(rlx_graph_add_constant(g, &t, data, sizeof data, &v));
  rlx_type huge = ttype(RLX_DTYPE_F64, 3, (int64_t[]){INT64_MAX / 2, 4, 4});
  FAILS(rlx_graph_add_constant(g, &huge, data, 12, &v), RESOURCE_EXHAUSTED, "overflow");
  rlx_graph_free(g);
}

/* Conv / ConvTranspose: the weight's channels times group overflowing int64 is a status (the
 * product was undefined behaviour, with a symbolic weight dim too: fuzz_graph). */
static void test_conv_group_overflow(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x, xs, w, ws, y;
  rlx_type tx = ttype(RLX_DTYPE_F32, 3, (int64_t[]){1, 4, 5}), txs = ttype(RLX_DTYPE_F32, 3, (int64_t[]){1, RLX_DIM_SYMBOL(0), 5});
  rlx_type tw = ttype(RLX_DTYPE_F32, 3, (int64_t[]){4, 2, 3}), tws = ttype(RLX_DTYPE_F32, 3, (int64_t[]){4, RLX_DIM_SYMBOL(1), 3});
  OK(rlx_graph_add_input(g, "x", &tx, &x));
  OK(rlx_graph_add_input(g, "xs", &txs, &xs));
  OK(rlx_graph_add_input(g, "w", &tw, &w));
  OK(rlx_graph_add_input(g, "ws", &tws, &ws));
  rlx_attr big = RLX_ATTR_I("group", (int64_t)1 << 62), max = RLX_ATTR_I("group", INT64_MAX);
  FAILS(rlx_graph_add1(g, RLX_OP_CONV, NULL, 2, (rlx_value[]){x, w}, 1, &big, &y), RESOURCE_EXHAUSTED, "times group");
  FAILS(rlx_graph_add1(g, RLX_OP_CONV_TRANSPOSE, NULL, 2, (rlx_value[]){xs, w}, 1, &big, &y), RESOURCE_EXHAUSTED, "times group");
  /* a symbolic weight dim times a group above 1: an unknown channel count, not a product */
  OK(rlx_graph_add1(g, RLX_OP_CONV_TRANSPOSE, NULL, 2, (rlx_value[]){xs, ws}, 1, &max, &y));
  assert_int_equal(rlx_graph_value_type(g, y)->dims[1], RLX_DIM_DYNAMIC);
  OK(rlx_graph_add1(g, RLX_OP_CONV_TRANSPOSE, NULL, 2, (rlx_value[]){xs, ws}, 0, NULL, &y));
  assert_int_equal(rlx_graph_value_type(g, y)->dims[1], RLX_DIM_SYMBOL(1));
  rlx_graph_free(g);
}

/* Pool and MaxPool2dBackward: window geometry whose arithmetic leaves int64 is a status (a
 * kernel times a dilation of INT64_MAX was undefined behaviour: fuzz_graph). */
static void test_pool_geometry_overflow(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x, x4, dy, y;
  rlx_type tx = ttype(RLX_DTYPE_F32, 3, (int64_t[]){1, 2, 5}), tx4 = ttype(RLX_DTYPE_F32, 4, (int64_t[]){1, 2, 5, 5});
  OK(rlx_graph_add_input(g, "x", &tx, &x));
  OK(rlx_graph_add_input(g, "x4", &tx4, &x4));
  OK(rlx_graph_add_input(g, "dy", &tx4, &dy));
  const int64_t k2[] = {2}, dmax[] = {INT64_MAX}, pmax[] = {INT64_MAX - 8, 0}, smax[] = {INT64_MAX}, d62[] = {(int64_t)1 << 62};
  rlx_attr dilated[] = {RLX_ATTR_S("kind", "max"), RLX_ATTR_IS("kernel_shape", 1, k2), RLX_ATTR_IS("dilations", 1, dmax)};
  FAILS(rlx_graph_add1(g, RLX_OP_POOL, NULL, 1, &x, 3, dilated, &y), RESOURCE_EXHAUSTED, "dilation 9223372036854775807 overflow");
  rlx_attr padded[] = {RLX_ATTR_S("kind", "max"), RLX_ATTR_IS("kernel_shape", 1, k2), RLX_ATTR_IS("dilations", 1, d62),
                       RLX_ATTR_IS("pads", 2, pmax), RLX_ATTR_IS("strides", 1, smax)};
  FAILS(rlx_graph_add1(g, RLX_OP_POOL, NULL, 1, &x, 5, padded, &y), RESOURCE_EXHAUSTED, "spatial dim 0: size 5");
  /* a geometry near the edge still infers: window 3 * 2^61, pads 2^62, stride 2^61 */
  const int64_t k3[] = {3}, d61[] = {(int64_t)1 << 61}, pok[] = {(int64_t)1 << 62, 0}, s61[] = {(int64_t)1 << 61};
  rlx_attr fits[] = {RLX_ATTR_S("kind", "max"), RLX_ATTR_IS("kernel_shape", 1, k3), RLX_ATTR_IS("dilations", 1, d61),
                     RLX_ATTR_IS("pads", 2, pok), RLX_ATTR_IS("strides", 1, s61)};
  OK(rlx_graph_add1(g, RLX_OP_POOL, NULL, 1, &x, 5, fits, &y));
  assert_int_equal(rlx_graph_value_type(g, y)->dims[2], 1); /* ONNX: floor((5 + 2^62 - 2 * 2^61 - 1) / 2^61) + 1 */
  const int64_t k2m[] = {2, INT64_MAX}, p2m[] = {0, INT64_MAX - 1, 0, INT64_MAX - 1};
  rlx_attr back[] = {RLX_ATTR_IS("kernel_shape", 2, k2m), RLX_ATTR_IS("pads", 4, p2m)};
  FAILS(rlx_graph_add1(g, RLX_OP_MAXPOOL2D_BACKWARD, NULL, 2, (rlx_value[]){x4, dy}, 2, back, &y), RESOURCE_EXHAUSTED, "spatial dim 1");
  rlx_graph_free(g);
}

/* Output dims computed from huge input dims (an empty tensor may have any other dim) that leave
 * int64: Rfft's 2 * (N / 2 + 1), Dequantize's blocks times elements per block, packed Attention's
 * num_heads * Dv (the products were undefined behaviour: fuzz_graph). */
static void test_length_arithmetic_overflow(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x, p, q, k, v, y;
  const int64_t h = (int64_t)1 << 40;
  rlx_type tx = ttype(RLX_DTYPE_F32, 2, (int64_t[]){0, INT64_MAX});
  rlx_type tp = ttype(RLX_DTYPE_U8, 2, (int64_t[]){0, 18 * (((int64_t)1 << 58) + 1)}); /* 2^58 + 1 q4_0 blocks of 32 */
  rlx_type tq = ttype(RLX_DTYPE_F32, 3, (int64_t[]){0, 1, h}), tk = ttype(RLX_DTYPE_F32, 3, (int64_t[]){0, 1, 1});
  OK(rlx_graph_add_input(g, "x", &tx, &x));
  OK(rlx_graph_add_input(g, "p", &tp, &p));
  OK(rlx_graph_add_input(g, "q", &tq, &q));
  OK(rlx_graph_add_input(g, "k", &tk, &k));
  OK(rlx_graph_add_input(g, "v", &tq, &v));
  FAILS(rlx_graph_add1(g, RLX_OP_RFFT, NULL, 1, &x, 0, NULL, &y), RESOURCE_EXHAUSTED, "overflows int64");
  rlx_attr q4 = RLX_ATTR_S("scheme", "gguf_q4_0");
  FAILS(rlx_graph_add1(g, RLX_OP_DEQUANTIZE, NULL, 1, &p, 1, &q4, &y), RESOURCE_EXHAUSTED, "more than 2^63 values");
  rlx_attr heads[] = {RLX_ATTR_I("num_heads", h), RLX_ATTR_I("num_kv_heads", 1)};
  FAILS(rlx_graph_add1(g, RLX_OP_ATTENTION, NULL, 3, (rlx_value[]){q, k, v}, 2, heads, &y), RESOURCE_EXHAUSTED, "overflows int64");
  rlx_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_status),
      cmocka_unit_test(test_infer_shapes),
      cmocka_unit_test(test_errors_name_node_and_op),
      cmocka_unit_test(test_constant_size_checked),
      cmocka_unit_test(test_conv_group_overflow),
      cmocka_unit_test(test_pool_geometry_overflow),
      cmocka_unit_test(test_length_arithmetic_overflow),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
