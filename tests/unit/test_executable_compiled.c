/* Executable modes: compiled mode (leaves, replays and re-traces, errors inside the trace,
 * params and sub-graph params, shapeless), RLX_MLX_MODE, agreement of every mode with closed
 * forms. */
#include "exec_test_util.h"

/* y = relu(x @ w + b) * 2 with x [s0, 3] (input), w [3, 2] (param), b [2] and 2 (constants). */
static rlx_graph *mlp_graph(void) {
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 2, DIMS(RLX_DIM_SYMBOL(0), 3));
  rlx_value w = g_param(g, "w", RLX_DTYPE_F32, 2, DIMS(3, 2));
  rlx_value b = g_const(g, RLX_DTYPE_F32, 1, DIMS(2), (const float[]){0.5f, -0.25f});
  rlx_value two = g_const(g, RLX_DTYPE_F32, 0, NULL, (const float[]){2.0f});
  rlx_value h = g_op(g, RLX_OP_ADD, 2, VALS(g_op(g, RLX_OP_MATMUL, 2, VALS(x, w), 0, NULL), b), 0, NULL);
  rlx_value y = g_op(g, RLX_OP_MUL, 2, VALS(g_op(g, RLX_OP_RELU, 1, &h, 0, NULL), two), 0, NULL);
  OK(rlx_graph_set_outputs(g, 1, &y));
  return g;
}

static void mlp_expected(const float *x, int64_t rows, const float *w, float *y) {
  const float b[2] = {0.5f, -0.25f};
  for (int64_t r = 0; r < rows; r++)
    for (int j = 0; j < 2; j++) {
      double acc = b[j];
      for (int k = 0; k < 3; k++) acc += (double)x[r * 3 + k] * w[k * 2 + j];
      y[r * 2 + j] = (float)(2 * (acc > 0 ? acc : 0));
    }
}

static void check_mlp(rlx_executable *ex, int64_t rows, const float *w, uint32_t seed) {
  float x[64 * 3], want[64 * 2];
  fill_random(x, (size_t)rows * 3, seed);
  mlp_expected(x, rows, w, want);
  rlx_tensor *tx = tf32(2, DIMS(rows, 3), x), *y = NULL;
  OK(run1(ex, "x", tx, &y));
  expect_f32(y, 2, DIMS(rows, 2), want, 1e-5);
  rlx_tensor_free(y);
  rlx_tensor_free(tx);
}

static void test_modes_agree_with_closed_form(void **state) {
  (void)state;
  rlx_graph *g = mlp_graph();
  const float w[6] = {0.3f, -0.7f, 1.1f, 0.2f, -0.4f, 0.9f};
  rlx_tensor *tw = tf32(2, DIMS(3, 2), w);
  for (size_t m = 0; m < LEN(all_modes); m++) {
    rlx_executable *ex = make_exec(g, all_modes[m]);
    assert_int_equal(rlx_executable_mode(ex), all_modes[m]);
    OK(rlx_executable_set_param(ex, "w", tw));
    check_mlp(ex, 4, w, 1);
    check_mlp(ex, 4, w, 2); /* compiled: a replay */
    check_mlp(ex, 7, w, 3); /* compiled: a new trace for the new size of s0 */
    check_mlp(ex, 4, w, 4); /* compiled: the first trace, still cached */
    if (all_modes[m] == RLX_MODE_COMPILED) assert_int_equal(rlx_executable_num_traces(ex), 2);
    else assert_int_equal(rlx_executable_num_traces(ex), 0);
    rlx_executable_free(ex);
  }
  rlx_tensor_free(tw);
  rlx_graph_free(g);
}

/* Params are leaves of the compiled function: a new value changes results without a new trace. */
static void test_set_param_replays(void **state) {
  (void)state;
  rlx_graph *g = mlp_graph();
  rlx_executable *ex = make_exec(g, RLX_MODE_COMPILED);
  float w1[6] = {1, 0, 0, 1, 1, 1}, w2[6] = {-1, 2, 0.5f, 0, 3, -2};
  rlx_tensor *t1 = tf32(2, DIMS(3, 2), w1), *t2 = tf32(2, DIMS(3, 2), w2);
  rlx_tensor *x = tf32(2, DIMS(2, 3), (const float[]){1, 2, 3, 4, 5, 6}), *y = NULL;
  FAILS(run1(ex, "x", x, &y), FAILED_PRECONDITION, "param 'w' was not set");
  assert_null(y);
  OK(rlx_executable_set_param(ex, "w", t1));
  check_mlp(ex, 2, w1, 5);
  OK(rlx_executable_set_param(ex, "w", t2));
  check_mlp(ex, 2, w2, 6);
  assert_int_equal(rlx_executable_num_traces(ex), 1);
  FAILS(rlx_executable_set_param(ex, "w", x), INVALID_ARGUMENT, "expected float32[3,2], got float32[2,3]");
  FAILS(rlx_executable_set_param(ex, "v", t1), NOT_FOUND, "params: w");
  check_mlp(ex, 2, w2, 7); /* a failed set keeps the old value */
  rlx_tensor_free(t1);
  rlx_tensor_free(t2);
  rlx_tensor_free(x);
  rlx_executable_free(ex);
  rlx_graph_free(g);
}

/* Many leaves of several dtypes: inputs, constants and params reach the trace in the documented
 * order (a wrong order would pair a leaf with another's shape or dtype). */
static void test_leaf_order(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value a = g_input(g, "a", RLX_DTYPE_F32, 1, DIMS(3));
  rlx_value k0 = g_const(g, RLX_DTYPE_I32, 1, DIMS(2), (const int32_t[]){7, -3});
  rlx_value p = g_param(g, "p", RLX_DTYPE_I32, 1, DIMS(2));
  rlx_value b = g_input(g, "b", RLX_DTYPE_I32, 1, DIMS(2));
  rlx_value k1 = g_const(g, RLX_DTYPE_F32, 1, DIMS(3), (const float[]){0.5f, 0.25f, 2});
  rlx_value q = g_param(g, "q", RLX_DTYPE_F32, 1, DIMS(3));
  rlx_value ya = g_op(g, RLX_OP_ADD, 2, VALS(g_op(g, RLX_OP_MUL, 2, VALS(a, k1), 0, NULL), q), 0, NULL);
  rlx_value yb = g_op(g, RLX_OP_SUB, 2, VALS(g_op(g, RLX_OP_MUL, 2, VALS(b, p), 0, NULL), k0), 0, NULL);
  OK(rlx_graph_set_outputs(g, 2, VALS(yb, ya)));
  for (size_t m = 0; m < LEN(all_modes); m++) {
    rlx_executable *ex = make_exec(g, all_modes[m]);
    assert_int_equal(rlx_executable_num_params(ex), 2);
    assert_string_equal(rlx_executable_param_name(ex, 0), "p");
    assert_string_equal(rlx_executable_param_name(ex, 1), "q");
    assert_null(rlx_executable_param_name(ex, 2));
    rlx_tensor *tp = tensor(RLX_DTYPE_I32, 1, DIMS(2), (const int32_t[]){3, 5});
    rlx_tensor *tq = tf32(1, DIMS(3), (const float[]){1, 2, 3});
    rlx_tensor *ta = tf32(1, DIMS(3), (const float[]){4, 8, -1});
    rlx_tensor *tb = tensor(RLX_DTYPE_I32, 1, DIMS(2), (const int32_t[]){10, -2});
    OK(rlx_executable_set_param(ex, "q", tq));
    OK(rlx_executable_set_param(ex, "p", tp));
    rlx_tensor *outs[2] = {0};
    OK(rlx_executable_run(ex, 2, (const char *const[]){"b", "a"}, (rlx_tensor *const[]){tb, ta}, 2, outs));
    assert_int_equal(rlx_tensor_dtype(outs[0]), RLX_DTYPE_I32);
    const int32_t *yb_got = rlx_tensor_cdata(outs[0]);
    assert_int_equal(yb_got[0], 10 * 3 - 7);
    assert_int_equal(yb_got[1], -2 * 5 + 3);
    expect_f32(outs[1], 1, DIMS(3), (const float[]){4 * 0.5f + 1, 8 * 0.25f + 2, -1 * 2.0f + 3}, 0);
    for (int i = 0; i < 2; i++) rlx_tensor_free(outs[i]);
    rlx_tensor_free(tp);
    rlx_tensor_free(tq);
    rlx_tensor_free(ta);
    rlx_tensor_free(tb);
    rlx_executable_free(ex);
  }
  rlx_graph_free(g);
}

/* An error raised while the compiled function traces (here MLX's int32 dims, hit by an Expand to
 * 2^31 elements) comes back as a status naming the node; the function is not left half-built, so
 * the next call traces again and fails the same way, and MLX on this thread keeps working. */
static void test_trace_error_is_a_status(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 1, DIMS(1));
  rlx_attr shape = RLX_ATTR_IS("shape", 1, DIMS(INT64_C(2147483648)));
  rlx_value y;
  OK(rlx_graph_add1(g, RLX_OP_EXPAND, "too_big", 1, &x, 1, &shape, &y));
  OK(rlx_graph_set_outputs(g, 1, &y));
  rlx_executable *ex = make_exec(g, RLX_MODE_COMPILED);
  rlx_tensor *tx = tf32(1, DIMS(1), (const float[]){1}), *out = NULL;
  for (int i = 0; i < 2; i++) {
    FAILS(run1(ex, "x", tx, &out), INVALID_ARGUMENT, "node 1 (Expand 'too_big')");
    assert_null(out);
    assert_int_equal(rlx_executable_num_traces(ex), (size_t)i + 1);
  }
  FAILS(rlx_executable_warmup(ex, 1, (const char *const[]){"x"}, (rlx_tensor *const[]){tx}), INVALID_ARGUMENT, "int32");
  rlx_executable_free(ex);
  rlx_graph_free(g);
  /* A compiled executable on the same thread traces and replays normally afterwards. */
  g = mlp_graph();
  ex = make_exec(g, RLX_MODE_COMPILED);
  const float w[6] = {1, 2, 3, 4, 5, 6};
  rlx_tensor *tw = tf32(2, DIMS(3, 2), w);
  OK(rlx_executable_set_param(ex, "w", tw));
  check_mlp(ex, 3, w, 8);
  check_mlp(ex, 3, w, 9);
  assert_int_equal(rlx_executable_num_traces(ex), 1);
  rlx_tensor_free(tw);
  rlx_tensor_free(tx);
  rlx_executable_free(ex);
  rlx_graph_free(g);
}

/* A custom op whose graph kernel refuses inputs of more than 3 rows: the error is raised inside
 * the trace, for some input sizes only. Failing sizes fail every time; the others trace, replay
 * and give results in between. */
static rlx_status *fussy_infer(void *ud, size_t n_in, const rlx_type *in, size_t na, const rlx_attr *attrs, size_t cap,
                               rlx_type *out, size_t *n_out) {
  (void)ud, (void)n_in, (void)na, (void)attrs, (void)cap;
  out[0] = in[0];
  *n_out = 1;
  return NULL;
}

static rlx_status *fussy_expand(void *ud, rlx_graph *g, size_t n_in, const rlx_value *in, size_t na, const rlx_attr *attrs,
                                size_t n_out, rlx_value *out) {
  (void)ud, (void)n_in, (void)na, (void)attrs, (void)n_out;
  int64_t rows = rlx_graph_value_type(g, in[0])->dims[0];
  if (rows > 3) return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "fussy takes at most 3 rows, got %lld", (long long)rows);
  return rlx_graph_add1(g, RLX_OP_NEG, NULL, 1, in, 0, NULL, out);
}

static void test_trace_error_depends_on_input(void **state) {
  (void)state;
  rlx_custom_op_def def = {.name = "test.fussy", .min_inputs = 1, .max_inputs = 1, .infer = fussy_infer, .expand = fussy_expand};
  OK(rlx_custom_op_register(&def, NULL));
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 1, DIMS(RLX_DIM_SYMBOL(0))), y;
  OK(rlx_graph_add1(g, RLX_OP_CUSTOM, "picky", 1, &x, 1, (rlx_attr[]){RLX_ATTR_S("name", "test.fussy")}, &y));
  OK(rlx_graph_set_outputs(g, 1, &y));
  rlx_executable *ex = make_exec(g, RLX_MODE_COMPILED);
  const float xv[5] = {1, -2, 3, -4, 5}, neg[5] = {-1, 2, -3, 4, -5};
  /* a failed trace leaves nothing cached (the next try traces again); size 2 replays its trace */
  const int64_t sizes[] = {2, 5, 2, 3, 5, 1};
  const size_t traces[] = {1, 2, 2, 3, 4, 5};
  for (size_t k = 0; k < LEN(sizes); k++) {
    rlx_tensor *tx = tf32(1, DIMS(sizes[k]), xv), *out = NULL;
    if (sizes[k] > 3) {
      FAILS(run1(ex, "x", tx, &out), INVALID_ARGUMENT, "node 1 (Custom 'picky'): custom op 'test.fussy': fussy takes at most 3 rows, got 5");
      assert_null(out);
    } else {
      OK(run1(ex, "x", tx, &out));
      expect_f32(out, 1, DIMS(sizes[k]), neg, 0);
      rlx_tensor_free(out);
    }
    assert_int_equal(rlx_executable_num_traces(ex), traces[k]);
    rlx_tensor_free(tx);
  }
  rlx_executable_free(ex);
  rlx_graph_free(g);
  OK(rlx_custom_op_unregister("test.fussy"));
}

/* If with a branch that reads a param: the param reaches the sub-graph in every mode, compiled
 * included (as a leaf of the compiled function). */
static rlx_graph *branch_graph(bool then_branch) {
  rlx_graph *b;
  OK(rlx_graph_create(&b));
  rlx_value v = g_input(b, "v", RLX_DTYPE_F32, 1, DIMS(2));
  rlx_value s = g_param(b, "scale", RLX_DTYPE_F32, 1, DIMS(2));
  rlx_value y = g_op(b, then_branch ? RLX_OP_MUL : RLX_OP_SUB, 2, VALS(v, s), 0, NULL);
  OK(rlx_graph_set_outputs(b, 1, &y));
  return b;
}

static void test_subgraph_params_compiled(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value c = g_input(g, "c", RLX_DTYPE_BOOL, 0, NULL);
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 1, DIMS(2));
  rlx_attr br[2] = {RLX_ATTR_G("then_branch", branch_graph(true)), RLX_ATTR_G("else_branch", branch_graph(false))};
  rlx_value y;
  rlx_status *st = rlx_graph_add1(g, RLX_OP_IF, "if", 2, VALS(c, x), 2, br, &y);
  if (rlx_status_code_of(st) == RLX_STATUS_UNIMPLEMENTED) { /* If is built by another branch of the project */
    rlx_status_free(st);
    rlx_graph_free(br[0].graph);
    rlx_graph_free(br[1].graph);
    rlx_graph_free(g);
    skip();
  }
  OK(st);
  OK(rlx_graph_set_outputs(g, 1, &y));
  for (size_t m = 0; m < LEN(all_modes); m++) {
    rlx_executable *ex = make_exec(g, all_modes[m]);
    assert_int_equal(rlx_executable_num_params(ex), 1);
    rlx_tensor *ts = tf32(1, DIMS(2), (const float[]){3, -1});
    OK(rlx_executable_set_param(ex, "scale", ts));
    rlx_tensor *tx = tf32(1, DIMS(2), (const float[]){2, 5});
    for (int which = 1; which >= 0; which--) {
      bool cv = which;
      rlx_tensor *tc = tensor(RLX_DTYPE_BOOL, 0, NULL, &cv), *out = NULL;
      OK(rlx_executable_run(ex, 2, (const char *const[]){"c", "x"}, (rlx_tensor *const[]){tc, tx}, 1, &out));
      expect_f32(out, 1, DIMS(2), cv ? (const float[]){6, -5} : (const float[]){-1, 6}, 0);
      rlx_tensor_free(out);
      rlx_tensor_free(tc);
    }
    rlx_tensor_free(ts);
    rlx_tensor_free(tx);
    rlx_executable_free(ex);
  }
  rlx_graph_free(g);
}

static void test_mode_from_environment(void **state) {
  (void)state;
  rlx_graph *g = mlp_graph();
  rlx_executable *ex = NULL;
  setenv("RLX_MLX_MODE", "Compiled", 1);
  OK(rlx_executable_create(g, RLX_DEVICE_CPU, RLX_MODE_DEFAULT, &ex));
  assert_int_equal(rlx_executable_mode(ex), RLX_MODE_COMPILED);
  OK(rlx_executable_set_mode(ex, RLX_MODE_EAGER));
  assert_int_equal(rlx_executable_mode(ex), RLX_MODE_EAGER);
  OK(rlx_executable_set_mode(ex, RLX_MODE_DEFAULT));
  assert_int_equal(rlx_executable_mode(ex), RLX_MODE_COMPILED);
  rlx_executable_free(ex);
  setenv("RLX_MLX_MODE", "fast", 1);
  ex = NULL;
  FAILS(rlx_executable_create(g, RLX_DEVICE_CPU, RLX_MODE_DEFAULT, &ex), INVALID_ARGUMENT, "RLX_MLX_MODE: unknown mode 'fast'");
  assert_null(ex);
  unsetenv("RLX_MLX_MODE");
  OK(rlx_executable_create(g, RLX_DEVICE_CPU, RLX_MODE_DEFAULT, &ex));
  assert_int_equal(rlx_executable_mode(ex), RLX_MODE_LAZY);
  FAILS(rlx_executable_set_mode(ex, (rlx_mode)9), INVALID_ARGUMENT, "invalid mode 9");
  rlx_executable_free(ex);
  rlx_graph_free(g);
}

/* Shapeless: one trace serves every size of s0. The graph mixes the shapeless-safe families. */
static void test_shapeless_one_trace(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 2, DIMS(RLX_DIM_SYMBOL(0), 4));
  rlx_value w = g_param(g, "w", RLX_DTYPE_F32, 2, DIMS(4, 3));
  rlx_value wr = g_op(g, RLX_OP_RESHAPE, 1, &w, 1, (rlx_attr[]){RLX_ATTR_IS("shape", 2, DIMS(4, 3))}); /* static: fine */
  rlx_value h = g_op(g, RLX_OP_MATMUL, 2, VALS(x, wr), 0, NULL);
  rlx_value s = g_op(g, RLX_OP_SOFTMAX, 1, &h, 1, (rlx_attr[]){RLX_ATTR_I("axis", -1)});
  rlx_value t = g_op(g, RLX_OP_TANH, 1, &s, 0, NULL);
  rlx_value y = g_op(g, RLX_OP_TRANSPOSE, 1, &t, 0, NULL);
  OK(rlx_graph_set_outputs(g, 1, &y));
  rlx_executable *ex = make_exec(g, RLX_MODE_COMPILED);
  OK(rlx_executable_set_shapeless(ex, true));
  assert_true(rlx_executable_shapeless(ex));
  float wv[12];
  fill_random(wv, 12, 11);
  rlx_tensor *tw = tf32(2, DIMS(4, 3), wv);
  OK(rlx_executable_set_param(ex, "w", tw));
  const int64_t sizes[] = {2, 5, 1, 9};
  for (size_t si = 0; si < LEN(sizes); si++) {
    int64_t n = sizes[si];
    float xv[9 * 4], want[3 * 9];
    fill_random(xv, (size_t)n * 4, 20 + (uint32_t)si);
    for (int64_t r = 0; r < n; r++) {
      double hv[3], mx = -INFINITY, sum = 0;
      for (int j = 0; j < 3; j++) {
        hv[j] = 0;
        for (int k = 0; k < 4; k++) hv[j] += (double)xv[r * 4 + k] * wv[k * 3 + j];
        mx = hv[j] > mx ? hv[j] : mx;
      }
      for (int j = 0; j < 3; j++) sum += exp(hv[j] - mx);
      for (int j = 0; j < 3; j++) want[j * n + r] = (float)tanh(exp(hv[j] - mx) / sum);
    }
    rlx_tensor *tx = tf32(2, DIMS(n, 4), xv), *out = NULL;
    OK(run1(ex, "x", tx, &out));
    expect_f32(out, 2, DIMS(3, n), want, 1e-5);
    rlx_tensor_free(out);
    rlx_tensor_free(tx);
  }
  assert_int_equal(rlx_executable_num_traces(ex), 1);
  OK(rlx_executable_set_shapeless(ex, false)); /* back to one trace per shape */
  rlx_tensor *tx = tf32(2, DIMS(2, 4), (const float[]){1, 2, 3, 4, 5, 6, 7, 8}), *out = NULL;
  OK(run1(ex, "x", tx, &out));
  assert_int_equal(rlx_executable_num_traces(ex), 2);
  rlx_tensor_free(out);
  rlx_tensor_free(tx);
  rlx_tensor_free(tw);
  rlx_executable_free(ex);
  rlx_graph_free(g);
}

/* Nodes whose lowering bakes symbol-dependent sizes are rejected, naming the node. */
static void test_shapeless_rejected(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 2, DIMS(RLX_DIM_SYMBOL(0), 4));
  rlx_value r;
  OK(rlx_graph_add1(g, RLX_OP_RESHAPE, "flat", 1, &x, 1, (rlx_attr[]){RLX_ATTR_IS("shape", 3, DIMS(RLX_DIM_SYMBOL(0), 2, 2))}, &r));
  OK(rlx_graph_set_outputs(g, 1, &r));
  rlx_executable *ex = make_exec(g, RLX_MODE_COMPILED);
  FAILS(rlx_executable_set_shapeless(ex, true), UNIMPLEMENTED, "shapeless compile: node 1 (Reshape 'flat')");
  assert_false(rlx_executable_shapeless(ex));
  OK(rlx_executable_set_shapeless(ex, false));
  rlx_executable_free(ex);
  rlx_graph_free(g);
}

/* A binding where some node output has no elements runs lazily in compiled mode (exec_pipeline.c:
 * MLX's fused CUDA kernels launch a grid of 0, and a shapeless trace made at other sizes has no
 * empty-array guard): no trace is made or replayed for it, and the others still replay. y =
 * LogSoftmax(x, axis 0) + 1 with x [s0, 3], s0 = 0 between runs of 2 and 3 rows. */
static void test_empty_binding_runs_lazily(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 2, DIMS(RLX_DIM_SYMBOL(0), 3));
  rlx_value one = g_const(g, RLX_DTYPE_F32, 0, NULL, (const float[]){1.0f});
  rlx_value ls = g_op(g, RLX_OP_LOG_SOFTMAX, 1, &x, 1, (rlx_attr[]){RLX_ATTR_I("axis", 0)});
  rlx_value y = g_op(g, RLX_OP_ADD, 2, VALS(ls, one), 0, NULL);
  OK(rlx_graph_set_outputs(g, 1, &y));
  for (int shapeless = 0; shapeless < 2; shapeless++) {
    rlx_executable *ex = make_exec(g, RLX_MODE_COMPILED);
    OK(rlx_executable_set_shapeless(ex, shapeless));
    const int64_t sizes[] = {0, 2, 0, 3};
    for (size_t si = 0; si < LEN(sizes); si++) {
      int64_t n = sizes[si];
      float xv[3 * 3], want[3 * 3];
      fill_random(xv, (size_t)n * 3, 40 + (uint32_t)si);
      for (int j = 0; j < 3; j++) {
        double sum = 0;
        for (int64_t r = 0; r < n; r++) sum += exp(xv[r * 3 + j]);
        for (int64_t r = 0; r < n; r++) want[r * 3 + j] = (float)(xv[r * 3 + j] - log(sum) + 1);
      }
      rlx_tensor *tx = tf32(2, DIMS(n, 3), xv), *out = NULL;
      OK(run1(ex, "x", tx, &out));
      expect_f32(out, 2, DIMS(n, 3), want, 1e-5);
      rlx_tensor_free(out);
      rlx_tensor_free(tx);
      /* traces: none for the empty bindings; one per size, or one in all when shapeless */
      assert_int_equal(rlx_executable_num_traces(ex), n == 0 ? (si ? 1 : 0) : shapeless ? 1 : (si == 1 ? 1 : 2));
    }
    rlx_executable_free(ex);
  }
  rlx_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_modes_agree_with_closed_form),
      cmocka_unit_test(test_set_param_replays),
      cmocka_unit_test(test_leaf_order),
      cmocka_unit_test(test_trace_error_is_a_status),
      cmocka_unit_test(test_trace_error_depends_on_input),
      cmocka_unit_test(test_subgraph_params_compiled),
      cmocka_unit_test(test_mode_from_environment),
      cmocka_unit_test(test_shapeless_one_trace),
      cmocka_unit_test(test_shapeless_rejected),
      cmocka_unit_test(test_empty_binding_runs_lazily),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
