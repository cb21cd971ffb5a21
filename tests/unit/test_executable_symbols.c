/* Symbolic dims bound per run from the inputs, typed I/O, and the errors of bad inputs. */
#include "exec_test_util.h"

/* y[i, j] = x[i, j] * v[i] + u[j]: x [s0, s1], v [s0, 1], u [s1]. */
static rlx_graph *sym_graph(void) {
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 2, DIMS(RLX_DIM_SYMBOL(0), RLX_DIM_SYMBOL(1)));
  rlx_value v = g_input(g, "v", RLX_DTYPE_F32, 2, DIMS(RLX_DIM_SYMBOL(0), 1));
  rlx_value u = g_input(g, "u", RLX_DTYPE_F32, 1, DIMS(RLX_DIM_SYMBOL(1)));
  rlx_value y = g_op(g, RLX_OP_ADD, 2, VALS(g_op(g, RLX_OP_MUL, 2, VALS(x, v), 0, NULL), u), 0, NULL);
  OK(rlx_graph_set_outputs(g, 1, &y));
  return g;
}

static rlx_status *run_sym(rlx_executable *ex, int64_t r, int64_t c, int64_t vr, int64_t uc, rlx_tensor **out, uint32_t seed,
                           float *want) {
  float x[64], v[8], u[8];
  fill_random(x, (size_t)(r * c), seed);
  fill_random(v, (size_t)vr, seed + 1);
  fill_random(u, (size_t)uc, seed + 2);
  for (int64_t i = 0; want && i < r; i++)
    for (int64_t j = 0; j < c; j++) want[i * c + j] = x[i * c + j] * v[i] + u[j];
  rlx_tensor *tx = tf32(2, DIMS(r, c), x), *tv = tf32(2, DIMS(vr, 1), v), *tu = tf32(1, DIMS(uc), u);
  rlx_status *st = rlx_executable_run(ex, 3, (const char *const[]){"u", "x", "v"}, (rlx_tensor *const[]){tu, tx, tv}, 1, out);
  rlx_tensor_free(tx);
  rlx_tensor_free(tv);
  rlx_tensor_free(tu);
  return st;
}

static void test_symbols_bind_per_run(void **state) {
  (void)state;
  rlx_graph *g = sym_graph();
  const int64_t shapes[][2] = {{2, 3}, {4, 1}, {2, 3}, {1, 7}, {4, 1}};
  for (size_t m = 0; m < LEN(all_modes); m++) {
    rlx_executable *ex = make_exec(g, all_modes[m]);
    for (size_t k = 0; k < LEN(shapes); k++) {
      int64_t r = shapes[k][0], c = shapes[k][1];
      float want[64];
      rlx_tensor *out = NULL;
      OK(run_sym(ex, r, c, r, c, &out, 40 + (uint32_t)k, want));
      expect_f32(out, 2, DIMS(r, c), want, 1e-6);
      rlx_tensor_free(out);
    }
    /* compiled: one trace per distinct shape; returning to a shape replays its trace */
    if (all_modes[m] == RLX_MODE_COMPILED) assert_int_equal(rlx_executable_num_traces(ex), 3);
    rlx_tensor *out = NULL;
    FAILS(run_sym(ex, 2, 3, 3, 3, &out, 1, NULL), INVALID_ARGUMENT, "input 'v' dim 0 binds symbol s0 to 3, but it is already 2");
    FAILS(run_sym(ex, 2, 3, 2, 4, &out, 1, NULL), INVALID_ARGUMENT, "input 'u' dim 0 binds symbol s1 to 4, but it is already 3");
    assert_null(out);
    /* a good run after the errors */
    float want[64];
    OK(run_sym(ex, 3, 2, 3, 2, &out, 9, want));
    expect_f32(out, 2, DIMS(3, 2), want, 1e-6);
    rlx_tensor_free(out);
    rlx_executable_free(ex);
  }
  rlx_graph_free(g);
}

/* Bad inputs (a fixed dim contradicted, a wrong dtype, unknown or repeated names, NULL arguments)
 * fail the run with a status naming the input, in every mode. */
static void test_input_errors(void **state) {
  (void)state;
  rlx_graph *g = sym_graph();
  for (size_t m = 0; m < LEN(all_modes); m++) {
    rlx_executable *ex = make_exec(g, all_modes[m]);
    rlx_tensor *x = tf32(2, DIMS(2, 2), (const float[]){1, 2, 3, 4}), *v = tf32(2, DIMS(2, 2), (const float[]){1, 2, 3, 4});
    rlx_tensor *u = tf32(1, DIMS(2), (const float[]){1, 2}), *xi = tensor(RLX_DTYPE_I32, 2, DIMS(2, 2), (const int32_t[]){1, 2, 3, 4});
    rlx_tensor *out = NULL, *outs2[2] = {0};
    const char *const names[] = {"x", "v", "u"};
    FAILS(rlx_executable_run(ex, 3, names, (rlx_tensor *const[]){x, v, u}, 1, &out), INVALID_ARGUMENT,
          "input 'v': expected float32[s0,1], got float32[2,2]");
    FAILS(rlx_executable_run(ex, 3, names, (rlx_tensor *const[]){xi, v, u}, 1, &out), INVALID_ARGUMENT, "got int32[2,2]");
    FAILS(rlx_executable_run(ex, 3, (const char *const[]){"x", "x", "u"}, (rlx_tensor *const[]){x, x, u}, 1, &out),
          INVALID_ARGUMENT, "input 'x' given twice");
    FAILS(rlx_executable_run(ex, 1, (const char *const[]){"w"}, (rlx_tensor *const[]){x}, 1, &out), NOT_FOUND,
          "no input named 'w' (inputs: x, v, u)");
    FAILS(rlx_executable_run(ex, 3, names, (rlx_tensor *const[]){x, NULL, u}, 1, &out), INVALID_ARGUMENT, "'v': value is NULL");
    FAILS(rlx_executable_run(ex, 3, names, (rlx_tensor *const[]){x, v, u}, 2, outs2), INVALID_ARGUMENT,
          "n_outputs is 2 but the graph has 1 outputs");
    FAILS(rlx_executable_run(ex, 3, names, (rlx_tensor *const[]){x, v, u}, 1, NULL), INVALID_ARGUMENT, "outputs is NULL");
    FAILS(rlx_executable_run(ex, 3, NULL, NULL, 1, &out), INVALID_ARGUMENT, "input names or values are NULL");
    assert_null(out);
    assert_null(outs2[0]);
    rlx_tensor_free(x);
    rlx_tensor_free(v);
    rlx_tensor_free(u);
    rlx_tensor_free(xi);
    rlx_executable_free(ex);
  }
  rlx_graph_free(g);
}

/* Typed I/O: bfloat16, uint8 and bool data cross the API as their own bytes, in every mode. */
static void test_typed_io(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value b = g_input(g, "b", RLX_DTYPE_BF16, 1, DIMS(RLX_DIM_SYMBOL(0)));
  rlx_value q = g_input(g, "q", RLX_DTYPE_U8, 1, DIMS(3));
  rlx_value m = g_input(g, "m", RLX_DTYPE_BOOL, 1, DIMS(3));
  rlx_value nb = g_op(g, RLX_OP_NEG, 1, &b, 0, NULL);
  rlx_value q2 = g_op(g, RLX_OP_ADD, 2, VALS(q, q), 0, NULL);
  rlx_value nm = g_op(g, RLX_OP_NOT, 1, &m, 0, NULL);
  OK(rlx_graph_set_outputs(g, 3, VALS(nb, q2, nm)));
  const uint16_t bv[4] = {0x3f80, 0x4049, 0xc2f7, 0x0001}; /* 1, 3.140625, -123.5, denormal */
  const uint8_t qv[3] = {1, 100, 200};
  const bool mv[3] = {true, false, true};
  for (size_t k = 0; k < LEN(all_modes); k++) {
    rlx_executable *ex = make_exec(g, all_modes[k]);
    rlx_tensor *tb = tensor(RLX_DTYPE_BF16, 1, DIMS(4), bv), *tq = tensor(RLX_DTYPE_U8, 1, DIMS(3), qv);
    rlx_tensor *tm = tensor(RLX_DTYPE_BOOL, 1, DIMS(3), mv), *outs[3] = {0};
    OK(rlx_executable_run(ex, 3, (const char *const[]){"b", "q", "m"}, (rlx_tensor *const[]){tb, tq, tm}, 3, outs));
    assert_int_equal(rlx_tensor_dtype(outs[0]), RLX_DTYPE_BF16);
    for (int i = 0; i < 4; i++) assert_int_equal(((const uint16_t *)rlx_tensor_cdata(outs[0]))[i], bv[i] ^ 0x8000);
    assert_int_equal(rlx_tensor_dtype(outs[1]), RLX_DTYPE_U8);
    const uint8_t *q2v = rlx_tensor_cdata(outs[1]);
    assert_int_equal(q2v[0], 2);
    assert_int_equal(q2v[1], 200);
    assert_int_equal(q2v[2], (uint8_t)400); /* uint8 wraps */
    assert_int_equal(rlx_tensor_dtype(outs[2]), RLX_DTYPE_BOOL);
    for (int i = 0; i < 3; i++) assert_int_equal(((const uint8_t *)rlx_tensor_cdata(outs[2]))[i], !mv[i]);
    for (int i = 0; i < 3; i++) rlx_tensor_free(outs[i]);
    rlx_tensor_free(tb);
    rlx_tensor_free(tq);
    rlx_tensor_free(tm);
    rlx_executable_free(ex);
  }
  rlx_graph_free(g);
}

/* Empty inputs (a symbol bound to 0) run like any other size, passed or as handles. */
static void test_empty_inputs(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 2, DIMS(RLX_DIM_SYMBOL(0), 2));
  rlx_value s = g_op(g, RLX_OP_REDUCE, 1, &x, 2, (rlx_attr[]){RLX_ATTR_S("kind", "sum"), RLX_ATTR_IS("axes", 1, DIMS(0))});
  OK(rlx_graph_set_outputs(g, 2, VALS(s, x)));
  for (size_t m = 0; m < LEN(all_modes); m++) {
    rlx_executable *ex = make_exec(g, all_modes[m]);
    for (int64_t rows = 0; rows < 3; rows += 2) {
      float xv[4] = {1, 2, 3, 4};
      rlx_tensor *tx = tf32(2, DIMS(rows, 2), xv), *outs[2] = {0};
      for (int handle = 0; handle < 2; handle++) {
        if (handle) {
          OK(rlx_executable_bind_device_handle(ex, "x", tx));
          OK(rlx_executable_run(ex, 0, NULL, NULL, 2, outs));
        } else {
          OK(rlx_executable_run(ex, 1, (const char *const[]){"x"}, (rlx_tensor *const[]){tx}, 2, outs));
        }
        expect_f32(outs[0], 1, DIMS(2), rows ? (const float[]){4, 6} : (const float[]){0, 0}, 0);
        expect_f32(outs[1], 2, DIMS(rows, 2), xv, 0);
        for (int i = 0; i < 2; i++) rlx_tensor_free(outs[i]);
      }
      rlx_tensor_free(tx);
    }
    rlx_executable_free(ex);
  }
  rlx_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_symbols_bind_per_run),
      cmocka_unit_test(test_input_errors),
      cmocka_unit_test(test_typed_io),
      cmocka_unit_test(test_empty_inputs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
