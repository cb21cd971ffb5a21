/* Weights kept in a kernel's layout by executables (exec_layout.c), in every mode against closed
 * forms: with the channels-last lowering (RLX_LAYOUT=channels_last), conv weights that are params
 * or constants, kept in channels-last form across runs and remade when a param is set, and the
 * conv epilogues (bias, residual add, ReLU in one compiled function in lazy runs; the ReLU a node
 * of its own or the Conv's activation); on the CPU, the GEMM panels of MatMul right operands that
 * are params, constants or their transposes (bias and activation in the kernel), likewise. */
#include "exec_test_util.h"

enum { CI = 2, CO = 3, H = 5, W = 4 };

/* p = conv3x3(x, w, b, pad 1), h = relu(p); y = relu(conv1x1(h, v, c) + h), and p as a second output
 * (form 1) or the ReLU of h as the activation of p's Conv (form 2): x [1,CI,H,W] (input),
 * w [CO,CI,3,3] (param), b, v [CO,CO,1,1], c (constants). */
static const float B[CO] = {0.1f, -0.2f, 0.05f}, C[CO] = {-0.3f, 0.2f, 0.1f};
static const float V[CO * CO] = {0.5f, -1.0f, 0.25f, 0.75f, 0.5f, -0.5f, -0.25f, 1.0f, 0.5f};

static rlx_graph *conv_graph(int form) {
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 4, DIMS(1, CI, H, W));
  rlx_value w = g_param(g, "w", RLX_DTYPE_F32, 4, DIMS(CO, CI, 3, 3));
  rlx_value b = g_const(g, RLX_DTYPE_F32, 1, DIMS(CO), B);
  rlx_value v = g_const(g, RLX_DTYPE_F32, 4, DIMS(CO, CO, 1, 1), V);
  rlx_value c = g_const(g, RLX_DTYPE_F32, 1, DIMS(CO), C);
  rlx_attr attrs[2] = {RLX_ATTR_IS("pads", 4, ((const int64_t[]){1, 1, 1, 1})), RLX_ATTR_S("activation", "Relu")};
  rlx_value p = g_op(g, RLX_OP_CONV, 3, VALS(x, w, b), form == 2 ? 2 : 1, attrs);
  rlx_value h = form == 2 ? p : g_op(g, RLX_OP_RELU, 1, &p, 0, NULL);
  rlx_value s = g_op(g, RLX_OP_ADD, 2, VALS(g_op(g, RLX_OP_CONV, 3, VALS(h, v, c), 0, NULL), h), 0, NULL);
  rlx_value y = g_op(g, RLX_OP_RELU, 1, &s, 0, NULL);
  OK(rlx_graph_set_outputs(g, form == 1 ? 2 : 1, VALS(y, p)));
  return g;
}

static void conv_expected(const float *x, const float *w, float *y, float *p) {
  float h[CO * H * W];
  for (int o = 0; o < CO; o++)
    for (int i = 0; i < H; i++)
      for (int j = 0; j < W; j++) {
        double acc = B[o];
        for (int ci = 0; ci < CI; ci++)
          for (int ki = 0; ki < 3; ki++)
            for (int kj = 0; kj < 3; kj++) {
              int ii = i + ki - 1, jj = j + kj - 1;
              if (ii >= 0 && ii < H && jj >= 0 && jj < W) acc += (double)x[(ci * H + ii) * W + jj] * w[((o * CI + ci) * 3 + ki) * 3 + kj];
            }
        p[(o * H + i) * W + j] = (float)acc;
        h[(o * H + i) * W + j] = (float)(acc > 0 ? acc : 0);
      }
  for (int o = 0; o < CO; o++)
    for (int q = 0; q < H * W; q++) {
      double acc = C[o] + h[o * H * W + q];
      for (int k = 0; k < CO; k++) acc += (double)V[o * CO + k] * h[k * H * W + q];
      y[o * H * W + q] = (float)(acc > 0 ? acc : 0);
    }
}

static void check_conv(rlx_executable *ex, const float *w, bool two_outputs, uint32_t seed) {
  float x[CI * H * W], want_y[CO * H * W], want_p[CO * H * W];
  fill_random(x, LEN(x), seed);
  conv_expected(x, w, want_y, want_p);
  rlx_tensor *tx = tf32(4, DIMS(1, CI, H, W), x), *y[2] = {NULL, NULL};
  OK(rlx_executable_run(ex, 1, (const char *const[]){"x"}, &tx, two_outputs ? 2 : 1, y));
  expect_f32(y[0], 4, DIMS(1, CO, H, W), want_y, 1e-5);
  if (two_outputs) expect_f32(y[1], 4, DIMS(1, CO, H, W), want_p, 1e-5);
  rlx_tensor_free(y[0]);
  rlx_tensor_free(y[1]);
  rlx_tensor_free(tx);
}

/* Every mode, with p read once (both epilogues fuse in lazy runs), twice (p is also an
 * output: its ReLU stays as it is) and with the ReLU carried by the Conv (fused too); a new w
 * changes the results (the channels-last weight is remade) without a new trace in compiled mode. */
static void test_conv_params_and_epilogues(void **state) {
  (void)state;
  setenv("RLX_LAYOUT", "channels_last", 1);
  float w1[CO * CI * 9], w2[CO * CI * 9];
  fill_random(w1, LEN(w1), 11);
  fill_random(w2, LEN(w2), 12);
  rlx_tensor *t1 = tf32(4, DIMS(CO, CI, 3, 3), w1), *t2 = tf32(4, DIMS(CO, CI, 3, 3), w2);
  for (int form = 0; form < 3; form++) {
    rlx_graph *g = conv_graph(form);
    bool two = form == 1;
    for (size_t m = 0; m < LEN(all_modes); m++) {
      rlx_executable *ex = make_exec(g, all_modes[m]);
      OK(rlx_executable_set_param(ex, "w", t1));
      check_conv(ex, w1, two, 1);
      check_conv(ex, w1, two, 2);
      OK(rlx_executable_set_param(ex, "w", t2));
      check_conv(ex, w2, two, 3);
      assert_int_equal(rlx_executable_num_traces(ex), all_modes[m] == RLX_MODE_COMPILED);
      rlx_executable_free(ex);
    }
    rlx_graph_free(g);
  }
  rlx_tensor_free(t1);
  rlx_tensor_free(t2);
  unsetenv("RLX_LAYOUT");
}

enum { MB = 3, MR = 5, MK = 300, MN = 19, MN2 = 33 };

/* y = x @ w (w [MK,MN] a param), z = relu(x @ Transpose(v) + c) (v [MN2,MK], c [MN2] constants);
 * x [MB,MR,MK]: rows past one micro-kernel call, K past one KC slice, N not a multiple of 16. */
static rlx_graph *matmul_graph(const float *v, const float *c) {
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 3, DIMS(MB, MR, MK));
  rlx_value w = g_param(g, "w", RLX_DTYPE_F32, 2, DIMS(MK, MN));
  rlx_value vv = g_const(g, RLX_DTYPE_F32, 2, DIMS(MN2, MK), v), cc = g_const(g, RLX_DTYPE_F32, 1, DIMS(MN2), c);
  rlx_attr perm = RLX_ATTR_IS("perm", 2, ((const int64_t[]){1, 0})), act = RLX_ATTR_S("activation", "Relu");
  rlx_value vt = g_op(g, RLX_OP_TRANSPOSE, 1, &vv, 1, &perm);
  rlx_value y = g_op(g, RLX_OP_MATMUL, 2, VALS(x, w), 0, NULL);
  rlx_value z = g_op(g, RLX_OP_FUSED_MATMUL_BIAS_ACT, 3, VALS(x, vt, cc), 1, &act);
  OK(rlx_graph_set_outputs(g, 2, VALS(y, z)));
  return g;
}

static void check_matmul(rlx_executable *ex, const float *w, const float *v, const float *c, uint32_t seed) {
  static float x[MB * MR * MK], want_y[MB * MR * MN], want_z[MB * MR * MN2];
  fill_random(x, LEN(x), seed);
  for (int r = 0; r < MB * MR; r++) {
    for (int j = 0; j < MN; j++) {
      double acc = 0;
      for (int k = 0; k < MK; k++) acc += (double)x[r * MK + k] * w[k * MN + j];
      want_y[r * MN + j] = (float)acc;
    }
    for (int j = 0; j < MN2; j++) {
      double acc = c[j];
      for (int k = 0; k < MK; k++) acc += (double)x[r * MK + k] * v[j * MK + k];
      want_z[r * MN2 + j] = (float)(acc > 0 ? acc : 0);
    }
  }
  rlx_tensor *tx = tf32(3, DIMS(MB, MR, MK), x), *y[2] = {NULL, NULL};
  OK(rlx_executable_run(ex, 1, (const char *const[]){"x"}, &tx, 2, y));
  expect_f32(y[0], 3, DIMS(MB, MR, MN), want_y, 1e-4);
  expect_f32(y[1], 3, DIMS(MB, MR, MN2), want_z, 1e-4);
  rlx_tensor_free(y[0]);
  rlx_tensor_free(y[1]);
  rlx_tensor_free(tx);
}

/* Every mode: a new w changes the results (its panels are remade) without a new trace. */
static void test_packed_matmul_weights(void **state) {
  (void)state;
  static float w1[MK * MN], w2[MK * MN], v[MN2 * MK], c[MN2];
  fill_random(w1, LEN(w1), 21);
  fill_random(w2, LEN(w2), 22);
  fill_random(v, LEN(v), 23);
  fill_random(c, LEN(c), 24);
  rlx_graph *g = matmul_graph(v, c);
  rlx_tensor *t1 = tf32(2, DIMS(MK, MN), w1), *t2 = tf32(2, DIMS(MK, MN), w2);
  for (size_t m = 0; m < LEN(all_modes); m++) {
    rlx_executable *ex = make_exec(g, all_modes[m]);
    OK(rlx_executable_set_param(ex, "w", t1));
    check_matmul(ex, w1, v, c, 1);
    check_matmul(ex, w1, v, c, 2);
    OK(rlx_executable_set_param(ex, "w", t2));
    check_matmul(ex, w2, v, c, 3);
    assert_int_equal(rlx_executable_num_traces(ex), all_modes[m] == RLX_MODE_COMPILED);
    rlx_executable_free(ex);
  }
  rlx_graph_free(g);
  rlx_tensor_free(t1);
  rlx_tensor_free(t2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv_params_and_epilogues),
      cmocka_unit_test(test_packed_matmul_weights),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
