/* Handles: host defaults, device-resident inputs, output feeds (the KV-cache pattern), readback. */
#include "exec_test_util.h"

/* y = a + b over [2]. */
static rlx_graph *add_graph(void) {
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value a = g_input(g, "a", RLX_DTYPE_F32, 1, DIMS(2));
  rlx_value b = g_input(g, "b", RLX_DTYPE_F32, 1, DIMS(2));
  rlx_value y = g_op(g, RLX_OP_ADD, 2, VALS(a, b), 0, NULL);
  OK(rlx_graph_set_outputs(g, 1, &y));
  return g;
}

static void test_host_and_device_handles(void **state) {
  (void)state;
  rlx_graph *g = add_graph();
  for (size_t m = 0; m < LEN(all_modes); m++) {
    rlx_executable *ex = make_exec(g, all_modes[m]);
    rlx_tensor *a = tf32(1, DIMS(2), (const float[]){1, 2}), *bh = tf32(1, DIMS(2), (const float[]){10, 20});
    rlx_tensor *bd = tf32(1, DIMS(2), (const float[]){100, 200}), *bx = tf32(1, DIMS(2), (const float[]){1000, 2000});
    rlx_tensor *out = NULL;
    FAILS(run1(ex, "a", a, &out), INVALID_ARGUMENT, "input 'b' (float32[2]) was not given and has no handle");
    FAILS(rlx_executable_read_handle(ex, "b", &out), FAILED_PRECONDITION, "input 'b' has no handle");
    OK(rlx_executable_bind_host_handle(ex, "b", bh));
    rlx_tensor_free(bh); /* copied */
    OK(run1(ex, "a", a, &out));
    expect_f32(out, 1, DIMS(2), (const float[]){11, 22}, 0);
    rlx_tensor_free(out);
    OK(rlx_executable_read_handle(ex, "b", &out));
    expect_f32(out, 1, DIMS(2), (const float[]){10, 20}, 0);
    rlx_tensor_free(out);
    /* a device handle wins over the host handle; a passed tensor wins over both */
    OK(rlx_executable_bind_device_handle(ex, "b", bd));
    OK(run1(ex, "a", a, &out));
    expect_f32(out, 1, DIMS(2), (const float[]){101, 202}, 0);
    rlx_tensor_free(out);
    OK(rlx_executable_run(ex, 2, (const char *const[]){"a", "b"}, (rlx_tensor *const[]){a, bx}, 1, &out));
    expect_f32(out, 1, DIMS(2), (const float[]){1001, 2002}, 0);
    rlx_tensor_free(out);
    OK(rlx_executable_read_handle(ex, "b", &out));
    expect_f32(out, 1, DIMS(2), (const float[]){100, 200}, 0);
    rlx_tensor_free(out);
    /* handles of both inputs: a run needs no tensor at all */
    OK(rlx_executable_bind_host_handle(ex, "a", a));
    OK(rlx_executable_run(ex, 0, NULL, NULL, 1, &out));
    expect_f32(out, 1, DIMS(2), (const float[]){101, 202}, 0);
    rlx_tensor_free(out);
    OK(rlx_executable_clear_handle(ex, "b"));
    out = NULL;
    FAILS(rlx_executable_run(ex, 0, NULL, NULL, 1, &out), INVALID_ARGUMENT, "input 'b'");
    OK(rlx_executable_bind_host_handle(ex, "b", bx));
    FAILS(rlx_executable_clear_handle(ex, "c"), NOT_FOUND, "no input named 'c' (inputs: a, b)");
    rlx_tensor *wrong = tf32(1, DIMS(3), (const float[]){1, 2, 3});
    FAILS(rlx_executable_bind_device_handle(ex, "b", wrong), INVALID_ARGUMENT, "expected float32[2], got float32[3]");
    FAILS(rlx_executable_bind_host_handle(ex, "b", wrong), INVALID_ARGUMENT, "expected float32[2], got float32[3]");
    OK(rlx_executable_run(ex, 0, NULL, NULL, 1, &out)); /* the failed binds kept b's host handle */
    expect_f32(out, 1, DIMS(2), (const float[]){1001, 2002}, 0);
    rlx_tensor_free(out);
    rlx_tensor_free(wrong);
    rlx_tensor_free(a);
    rlx_tensor_free(bd);
    rlx_tensor_free(bx);
    rlx_executable_free(ex);
  }
  rlx_graph_free(g);
}

/* Handles keep their dtype: float16 and int64 bytes round-trip exactly. */
static void test_typed_handles(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value h = g_input(g, "h", RLX_DTYPE_F16, 1, DIMS(3));
  rlx_value i = g_input(g, "i", RLX_DTYPE_I64, 1, DIMS(2));
  OK(rlx_graph_set_outputs(g, 2, VALS(g_op(g, RLX_OP_NEG, 1, &h, 0, NULL), g_op(g, RLX_OP_NEG, 1, &i, 0, NULL))));
  rlx_executable *ex = make_exec(g, RLX_MODE_COMPILED);
  const uint16_t hv[3] = {0x3c00, 0x4500, 0x7bff}; /* 1, 5, 65504 */
  const int64_t iv[2] = {INT64_C(1) << 40, -3};
  rlx_tensor *th = tensor(RLX_DTYPE_F16, 1, DIMS(3), hv), *ti = tensor(RLX_DTYPE_I64, 1, DIMS(2), iv), *outs[2] = {0};
  OK(rlx_executable_bind_device_handle(ex, "h", th));
  OK(rlx_executable_bind_host_handle(ex, "i", ti));
  OK(rlx_executable_run(ex, 0, NULL, NULL, 2, outs));
  assert_int_equal(rlx_tensor_dtype(outs[0]), RLX_DTYPE_F16);
  const uint16_t *hn = rlx_tensor_cdata(outs[0]);
  for (int k = 0; k < 3; k++) assert_int_equal(hn[k], hv[k] | 0x8000);
  assert_int_equal(rlx_tensor_dtype(outs[1]), RLX_DTYPE_I64);
  assert_int_equal(((const int64_t *)rlx_tensor_cdata(outs[1]))[0], -(INT64_C(1) << 40));
  for (int k = 0; k < 2; k++) rlx_tensor_free(outs[k]);
  rlx_tensor *back = NULL;
  OK(rlx_executable_read_handle(ex, "h", &back));
  assert_int_equal(rlx_tensor_dtype(back), RLX_DTYPE_F16);
  assert_memory_equal(rlx_tensor_cdata(back), hv, sizeof hv);
  rlx_tensor_free(back);
  rlx_tensor_free(th);
  rlx_tensor_free(ti);
  rlx_executable_free(ex);
  rlx_graph_free(g);
}

/* acc' = acc + x, fed back into acc with no host copy; readback off for the fed output. */
static void test_feed_accumulates(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value acc = g_input(g, "acc", RLX_DTYPE_F32, 1, DIMS(2));
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 1, DIMS(2));
  rlx_value sum = g_op(g, RLX_OP_ADD, 2, VALS(acc, x), 0, NULL);
  rlx_value twice = g_op(g, RLX_OP_ADD, 2, VALS(sum, sum), 0, NULL);
  OK(rlx_graph_set_outputs(g, 2, VALS(sum, twice)));
  for (size_t m = 0; m < LEN(all_modes); m++) {
    rlx_executable *ex = make_exec(g, all_modes[m]);
    FAILS(rlx_executable_set_handle_feed(ex, "acc", 2), OUT_OF_RANGE, "output 2, but the graph has 2 outputs");
    FAILS(rlx_executable_set_handle_feed(ex, "nope", 0), NOT_FOUND, "no input named 'nope'");
    FAILS(rlx_executable_set_output_readback(ex, 5, false), OUT_OF_RANGE, "output 5");
    OK(rlx_executable_set_handle_feed(ex, "acc", 0));
    OK(rlx_executable_set_output_readback(ex, 0, false));
    rlx_tensor *zero = tf32(1, DIMS(2), (const float[]){0, 0}), *tx = tf32(1, DIMS(2), (const float[]){1.5f, -2});
    OK(rlx_executable_bind_device_handle(ex, "acc", zero));
    for (int k = 1; k <= 4; k++) {
      rlx_tensor *outs[2] = {(rlx_tensor *)1, NULL};
      OK(rlx_executable_run(ex, 1, (const char *const[]){"x"}, (rlx_tensor *const[]){tx}, 2, outs));
      assert_null(outs[0]);
      expect_f32(outs[1], 1, DIMS(2), (const float[]){3.0f * k, -4.0f * k}, 0);
      rlx_tensor_free(outs[1]);
    }
    rlx_tensor *acc_now = NULL;
    OK(rlx_executable_read_handle(ex, "acc", &acc_now));
    expect_f32(acc_now, 1, DIMS(2), (const float[]){6, -8}, 0);
    rlx_tensor_free(acc_now);
    /* without the feed the handle stays put */
    OK(rlx_executable_set_handle_feed(ex, "acc", RLX_NO_FEED));
    rlx_tensor *outs[2] = {0};
    OK(rlx_executable_run(ex, 1, (const char *const[]){"x"}, (rlx_tensor *const[]){tx}, 2, outs));
    expect_f32(outs[1], 1, DIMS(2), (const float[]){15, -20}, 0);
    rlx_tensor_free(outs[1]);
    OK(rlx_executable_run(ex, 1, (const char *const[]){"x"}, (rlx_tensor *const[]){tx}, 2, outs));
    expect_f32(outs[1], 1, DIMS(2), (const float[]){15, -20}, 0);
    rlx_tensor_free(outs[1]);
    rlx_tensor_free(zero);
    rlx_tensor_free(tx);
    rlx_executable_free(ex);
  }
  rlx_graph_free(g);
}

/* A feed whose output's type cannot become the input's is refused up front. */
static void test_feed_type_checked(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value a = g_input(g, "a", RLX_DTYPE_F32, 1, DIMS(2));
  rlx_value r = g_op(g, RLX_OP_REDUCE, 1, &a, 1, (rlx_attr[]){RLX_ATTR_S("kind", "sum")});
  rlx_value c = g_op(g, RLX_OP_CAST, 1, &a, 1, (rlx_attr[]){RLX_ATTR_I("to", RLX_DTYPE_I32)});
  OK(rlx_graph_set_outputs(g, 2, VALS(r, c)));
  rlx_executable *ex = make_exec(g, RLX_MODE_LAZY);
  FAILS(rlx_executable_set_handle_feed(ex, "a", 0), INVALID_ARGUMENT, "feed of input 'a' (float32[2]) from output 0 ('out0', float32[])");
  FAILS(rlx_executable_set_handle_feed(ex, "a", 1), INVALID_ARGUMENT, "int32[2]): types differ");
  rlx_executable_free(ex);
  rlx_graph_free(g);
}

/* A growing cache: cache [s0, 2] ++ new [1, 2] fed back into cache, in every mode. The symbol
 * takes a new size each run (compiled mode traces once per length). */
static void test_feed_grows_symbolic_cache(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value cache = g_input(g, "cache", RLX_DTYPE_F32, 2, DIMS(RLX_DIM_SYMBOL(0), 2));
  rlx_value row = g_input(g, "row", RLX_DTYPE_F32, 2, DIMS(1, 2));
  rlx_value cat = g_op(g, RLX_OP_CONCAT, 2, VALS(cache, row), 1, (rlx_attr[]){RLX_ATTR_I("axis", 0)});
  rlx_value total = g_op(g, RLX_OP_REDUCE, 1, &cat, 1, (rlx_attr[]){RLX_ATTR_S("kind", "sum")});
  OK(rlx_graph_set_outputs(g, 2, VALS(cat, total)));
  for (size_t m = 0; m < LEN(all_modes); m++) {
    rlx_executable *ex = make_exec(g, all_modes[m]);
    rlx_tensor *init = tf32(2, DIMS(1, 2), (const float[]){1, 1});
    OK(rlx_executable_bind_device_handle(ex, "cache", init));
    OK(rlx_executable_set_handle_feed(ex, "cache", 0));
    OK(rlx_executable_set_output_readback(ex, 0, false));
    double sum = 2;
    for (int k = 0; k < 4; k++) {
      float rv[2] = {(float)k, 0.5f};
      rlx_tensor *tr = tf32(2, DIMS(1, 2), rv), *outs[2] = {0};
      OK(rlx_executable_run(ex, 1, (const char *const[]){"row"}, (rlx_tensor *const[]){tr}, 2, outs));
      sum += rv[0] + rv[1];
      expect_f32(outs[1], 0, NULL, (const float[]){(float)sum}, 1e-6);
      rlx_tensor_free(outs[1]);
      rlx_tensor_free(tr);
    }
    rlx_tensor *c = NULL;
    OK(rlx_executable_read_handle(ex, "cache", &c));
    expect_f32(c, 2, DIMS(5, 2), (const float[]){1, 1, 0, 0.5f, 1, 0.5f, 2, 0.5f, 3, 0.5f}, 0);
    rlx_tensor_free(c);
    if (all_modes[m] == RLX_MODE_COMPILED) assert_int_equal(rlx_executable_num_traces(ex), 4);
    rlx_tensor_free(init);
    rlx_executable_free(ex);
  }
  rlx_graph_free(g);
}

/* A donated cache (rlx_executable_set_handle_donation): rows scattered into a fed [4, 2] handle
 * that the runs give to MLX; the results are those of an undonated one. A run that fails while
 * evaluating (an index out of range, lazy and compiled) leaves the input without a handle until
 * it is bound again; eager mode, which never donates, keeps it. */
static void test_feed_donated_cache(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value c = g_input(g, "cache", RLX_DTYPE_F32, 2, DIMS(4, 2)), p = g_input(g, "pos", RLX_DTYPE_I64, 2, DIMS(1, 1));
  rlx_value r = g_input(g, "row", RLX_DTYPE_F32, 2, DIMS(1, 2));
  rlx_value y = g_op(g, RLX_OP_SCATTER_ND, 3, VALS(c, p, r), 0, NULL);
  rlx_value total = g_op(g, RLX_OP_REDUCE, 1, &y, 1, (rlx_attr[]){RLX_ATTR_S("kind", "sum")});
  OK(rlx_graph_set_outputs(g, 2, VALS(y, total)));
  float zero[8] = {0};
  rlx_tensor *z = tf32(2, DIMS(4, 2), zero);
  for (size_t m = 0; m < LEN(all_modes); m++) {
    rlx_executable *ex = make_exec(g, all_modes[m]);
    FAILS(rlx_executable_set_handle_donation(ex, "nope", true), NOT_FOUND, "no input named 'nope'");
    OK(rlx_executable_bind_device_handle(ex, "cache", z));
    OK(rlx_executable_set_handle_feed(ex, "cache", 0));
    OK(rlx_executable_set_handle_donation(ex, "cache", true));
    float want[8] = {0}, sum = 0;
    for (int64_t k = 0; k < 5; k++) {
      float row[2] = {(float)k + 1, -0.5f * (float)k};
      rlx_tensor *tp = tensor(RLX_DTYPE_I64, 2, DIMS(1, 1), &k), *tr = tf32(2, DIMS(1, 2), row), *outs[2] = {0};
      rlx_status *st = rlx_executable_run(ex, 2, (const char *const[]){"pos", "row"}, (rlx_tensor *const[]){tp, tr}, 2, outs);
      rlx_tensor_free(tp);
      rlx_tensor_free(tr);
      if (k == 4) {
        FAILS(st, OUT_OF_RANGE, "input 1 holds index 4");
        break;
      }
      OK(st);
      want[2 * k] = row[0], want[2 * k + 1] = row[1], sum += row[0] + row[1];
      assert_null(outs[0]);
      expect_f32(outs[1], 0, NULL, &sum, 1e-6);
      rlx_tensor_free(outs[1]);
      rlx_tensor *now = NULL;
      OK(rlx_executable_read_handle(ex, "cache", &now));
      expect_f32(now, 2, DIMS(4, 2), want, 0);
      rlx_tensor_free(now);
    }
    rlx_tensor *now = NULL;
    if (all_modes[m] == RLX_MODE_EAGER) {
      OK(rlx_executable_read_handle(ex, "cache", &now));
      expect_f32(now, 2, DIMS(4, 2), want, 0);
      rlx_tensor_free(now);
    } else {
      FAILS(rlx_executable_read_handle(ex, "cache", &now), FAILED_PRECONDITION, "input 'cache' has no handle");
      OK(rlx_executable_bind_device_handle(ex, "cache", z));
      int64_t k = 1;
      rlx_tensor *tp = tensor(RLX_DTYPE_I64, 2, DIMS(1, 1), &k), *tr = tf32(2, DIMS(1, 2), (const float[]){7, 8}), *outs[2] = {0};
      OK(rlx_executable_run(ex, 2, (const char *const[]){"pos", "row"}, (rlx_tensor *const[]){tp, tr}, 2, outs));
      expect_f32(outs[1], 0, NULL, (const float[]){15}, 0);
      rlx_tensor_free(outs[1]);
      rlx_tensor_free(tp);
      rlx_tensor_free(tr);
    }
    rlx_executable_free(ex);
  }
  rlx_tensor_free(z);
  rlx_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_host_and_device_handles),
      cmocka_unit_test(test_typed_handles),
      cmocka_unit_test(test_feed_accumulates),
      cmocka_unit_test(test_feed_type_checked),
      cmocka_unit_test(test_feed_grows_symbolic_cache),
      cmocka_unit_test(test_feed_donated_cache),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
