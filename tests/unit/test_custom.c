/* Custom ops (rlx/registry.h): registration rules, graph, host and CUDA kernels in every execution mode,
 * attributes, multiple outputs, replacement, unregistration, error propagation and concurrent use.
 * Expected values are computed here by plain C loops, independently of rlx. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"

/* Returns a failed status from the enclosing kernel function. */
#define TRY(expr)                 \
  do {                            \
    rlx_status *try_st_ = (expr); \
    if (try_st_) return try_st_;  \
  } while (0)

static const rlx_mode modes[] = {RLX_MODE_EAGER, RLX_MODE_LAZY, RLX_MODE_COMPILED};

/* ---- op definitions used by the tests ---- */

/* Inference for ops whose outputs all have the type of input 0 (n_out from the `outputs`
 * attribute, default 1); every input must have that type. */
static rlx_status *same_as_first(void *ud, size_t n_in, const rlx_type *in, size_t na, const rlx_attr *attrs, size_t cap,
                                 rlx_type *out, size_t *n_out) {
  (void)ud;
  for (size_t i = 1; i < n_in; i++)
    if (in[i].dtype != in[0].dtype || in[i].rank != in[0].rank)
      return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "input %zu differs from input 0", i);
  const rlx_attr *k = rlx_attr_find(na, attrs, "outputs");
  size_t n = k ? (size_t)k->i : 1;
  for (size_t i = 0; i < n && i < cap; i++) out[i] = in[0];
  *n_out = n;
  return NULL;
}

/* test.axpby(x, y) = alpha x + beta y (float attributes): a graph kernel. */
static rlx_status *axpby_expand(void *ud, rlx_graph *g, size_t n_in, const rlx_value *in, size_t na, const rlx_attr *attrs,
                                size_t n_out, rlx_value *out) {
  (void)ud, (void)n_in, (void)n_out;
  const rlx_attr *a = rlx_attr_find(na, attrs, "alpha"), *b = rlx_attr_find(na, attrs, "beta");
  if (!a || !b) return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "alpha and beta are required");
  if (rlx_attr_find(na, attrs, "name")) return rlx_status_make(RLX_STATUS_INTERNAL, "the name attribute was passed");
  float av = (float)a->f, bv = (float)b->f;
  rlx_type s = ttype(RLX_DTYPE_F32, 0, NULL);
  rlx_value ca, cb, ax, by;
  TRY(rlx_graph_add_constant(g, &s, &av, sizeof av, &ca));
  TRY(rlx_graph_add_constant(g, &s, &bv, sizeof bv, &cb));
  TRY(rlx_graph_add1(g, RLX_OP_MUL, "ax", 2, (rlx_value[]){in[0], ca}, 0, NULL, &ax));
  TRY(rlx_graph_add1(g, RLX_OP_MUL, "by", 2, (rlx_value[]){in[1], cb}, 0, NULL, &by));
  return rlx_graph_add1(g, RLX_OP_ADD, "sum", 2, (rlx_value[]){ax, by}, 0, NULL, &out[0]);
}

/* test.halves(x[..,2n]) -> (x[..,:n], x[..,n:]): a graph kernel with two outputs. */
static rlx_status *halves_infer(void *ud, size_t n_in, const rlx_type *in, size_t na, const rlx_attr *attrs, size_t cap, rlx_type *out,
                                size_t *n_out) {
  (void)ud, (void)n_in, (void)na, (void)attrs, (void)cap;
  int r = in[0].rank;
  if (r < 1 || in[0].dims[r - 1] % 2) return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "the last dim must be even");
  out[0] = out[1] = in[0];
  out[0].dims[r - 1] = out[1].dims[r - 1] = in[0].dims[r - 1] / 2;
  *n_out = 2;
  return NULL;
}

static rlx_status *halves_expand(void *ud, rlx_graph *g, size_t n_in, const rlx_value *in, size_t na, const rlx_attr *attrs,
                                 size_t n_out, rlx_value *out) {
  (void)ud, (void)n_in, (void)na, (void)attrs, (void)n_out;
  const rlx_type *t = rlx_graph_value_type(g, in[0]);
  int64_t h = t->dims[t->rank - 1] / 2;
  for (int k = 0; k < 2; k++) {
    rlx_attr a[3] = {RLX_ATTR_I("axis", -1), RLX_ATTR_I("start", k * h), RLX_ATTR_I("length", h)};
    TRY(rlx_graph_add1(g, RLX_OP_NARROW, NULL, 1, in, 3, a, &out[k]));
  }
  return NULL;
}

/* test.prefix_max(x float32 [n]) = running maximum: a host kernel. Fails on NaN. */
static rlx_status *prefix_max_host(void *ud, size_t n_in, const rlx_tensor *const *in, size_t na, const rlx_attr *attrs, size_t n_out,
                                   rlx_tensor *const *out) {
  (void)n_in, (void)na, (void)attrs, (void)n_out;
  atomic_int *calls = ud;
  if (calls) atomic_fetch_add(calls, 1);
  const float *x = rlx_tensor_cdata(in[0]);
  float *y = rlx_tensor_data(out[0]);
  int64_t n = rlx_tensor_numel(in[0]);
  for (int64_t i = 0; i < n; i++) {
    if (isnan(x[i])) return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "NaN at %lld", (long long)i);
    y[i] = i && y[i - 1] > x[i] ? y[i - 1] : x[i];
  }
  return NULL;
}

/* test.scale(x) = x * k, k from user_data (a graph kernel; replaced in a test). */
static rlx_status *scale_expand(void *ud, rlx_graph *g, size_t n_in, const rlx_value *in, size_t na, const rlx_attr *attrs,
                                size_t n_out, rlx_value *out) {
  (void)n_in, (void)na, (void)attrs, (void)n_out;
  float k = *(const float *)ud;
  rlx_type s = ttype(RLX_DTYPE_F32, 0, NULL);
  rlx_value c;
  TRY(rlx_graph_add_constant(g, &s, &k, sizeof k, &c));
  return rlx_graph_add1(g, RLX_OP_MUL, NULL, 2, (rlx_value[]){in[0], c}, 0, NULL, &out[0]);
}

static atomic_int freed;
static void count_free(void *ud) {
  (void)ud;
  atomic_fetch_add(&freed, 1);
}

static rlx_custom_op_def def_graph(const char *name, rlx_custom_expand_fn expand, int lo, int hi) {
  return (rlx_custom_op_def){.name = name, .min_inputs = lo, .max_inputs = hi, .infer = same_as_first, .expand = expand};
}

/* ---- helpers ---- */

static rlx_value add_input(rlx_graph *g, const char *name, int rank, const int64_t *dims) {
  rlx_type t = ttype(RLX_DTYPE_F32, rank, dims);
  rlx_value v = 0;
  OK(rlx_graph_add_input(g, name, &t, &v));
  return v;
}

static rlx_tensor *vec(const float *v, int64_t n) {
  rlx_tensor *t = NULL;
  OK(rlx_tensor_create(RLX_DTYPE_F32, 1, &n, v, (size_t)n * sizeof *v, &t));
  return t;
}

/* Runs g (inputs x, [y]) in `mode`; returns the run's status, outputs in outs. */
static rlx_status *run(const rlx_graph *g, rlx_mode mode, size_t n_in, const char *const *names, rlx_tensor *const *in, size_t n_out,
                       rlx_tensor **outs) {
  rlx_executable *ex;
  rlx_status *st = rlx_executable_create(g, RLX_DEVICE_CPU, mode, &ex);
  if (!st) st = rlx_executable_run(ex, n_in, names, in, n_out, outs);
  rlx_executable_free(ex);
  return st;
}

static void expect_floats(const rlx_tensor *t, const float *want, int64_t n, float tol) {
  assert_int_equal(rlx_tensor_numel(t), n);
  const float *got = rlx_tensor_cdata(t);
  for (int64_t i = 0; i < n; i++)
    if (fabsf(got[i] - want[i]) > tol) fail_msg("element %lld: got %g, expected %g", (long long)i, got[i], want[i]);
}

/* ---- tests ---- */

static void test_register_rules(void **state) {
  (void)state;
  rlx_custom_op_def d = def_graph("test.rules", axpby_expand, 2, 2);
  FAILS(rlx_custom_op_register(NULL, NULL), INVALID_ARGUMENT, "NULL");
  d.name = "";
  FAILS(rlx_custom_op_register(&d, NULL), INVALID_ARGUMENT, "non-empty name");
  d.name = "test.rules";
  d.infer = NULL;
  FAILS(rlx_custom_op_register(&d, NULL), INVALID_ARGUMENT, "infer");
  d.infer = same_as_first;
  d.host = prefix_max_host;
  FAILS(rlx_custom_op_register(&d, NULL), INVALID_ARGUMENT, "both");
  d.host = NULL, d.expand = NULL;
  FAILS(rlx_custom_op_register(&d, NULL), INVALID_ARGUMENT, "got none");
  d.expand = axpby_expand, d.min_inputs = 3;
  FAILS(rlx_custom_op_register(&d, NULL), INVALID_ARGUMENT, "arity");
  assert_false(rlx_custom_op_is_registered("test.rules"));
  FAILS(rlx_custom_op_unregister("test.rules"), NOT_FOUND, "test.rules");
  assert_null(rlx_attr_find(0, NULL, "x"));
}

/* test.cuda_axpy(x, y) = a x + y as CUDA source, with a graph kernel for other devices. */
static const char *axpy_cuda_src =
    "  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < x_shape[0]) out[i] = static_cast<float>(A) * x[i] + y[i];\n";

static rlx_status *axpy_launch(void *ud, size_t n_in, const rlx_type *in, size_t na, const rlx_attr *attrs, size_t n_out,
                               const rlx_type *out, rlx_custom_cuda_launch *l) {
  (void)ud, (void)n_in, (void)na, (void)attrs, (void)n_out, (void)out;
  l->grid[0] = in[0].dims[0], l->grid[1] = l->grid[2] = 1;
  l->threadgroup[0] = 256, l->threadgroup[1] = l->threadgroup[2] = 1;
  l->n_template_args = 1;
  l->template_args[0] = (rlx_custom_template_arg){.name = "A", .kind = RLX_CUSTOM_TEMPLATE_INT, .i = 3};
  return NULL;
}

static rlx_status *axpy3_expand(void *ud, rlx_graph *g, size_t n_in, const rlx_value *in, size_t na, const rlx_attr *attrs,
                                size_t n_out, rlx_value *out) {
  (void)ud, (void)n_in, (void)na, (void)attrs, (void)n_out;
  float k = 3;
  rlx_type s = ttype(RLX_DTYPE_F32, 0, NULL);
  rlx_value c, ax;
  TRY(rlx_graph_add_constant(g, &s, &k, sizeof k, &c));
  TRY(rlx_graph_add1(g, RLX_OP_MUL, NULL, 2, (rlx_value[]){in[0], c}, 0, NULL, &ax));
  return rlx_graph_add1(g, RLX_OP_ADD, NULL, 2, (rlx_value[]){ax, in[1]}, 0, NULL, &out[0]);
}

static void test_cuda_kernel_rules(void **state) {
  (void)state;
  const char *ins[] = {"x", "y"}, *outs[] = {"out"}, *bad_ins[] = {"x", "2y"};
  rlx_custom_cuda_kernel k = {.source = axpy_cuda_src, .input_names = ins, .output_names = outs, .n_outputs = 1, .launch_fn = axpy_launch};
  rlx_custom_op_def d = {.name = "test.cuda_axpy", .min_inputs = 2, .max_inputs = 2, .infer = same_as_first, .cuda = &k};
  /* registration checks the kernel's description */
  d.min_inputs = 1;
  FAILS(rlx_custom_op_register(&d, NULL), INVALID_ARGUMENT, "needs a fixed one");
  d.min_inputs = 2;
  k.input_names = bad_ins;
  FAILS(rlx_custom_op_register(&d, NULL), INVALID_ARGUMENT, "input name 1 ('2y') is not a C identifier");
  k.input_names = ins;
  k.source = "";
  FAILS(rlx_custom_op_register(&d, NULL), INVALID_ARGUMENT, "source is empty");
  k.source = axpy_cuda_src;
  k.launch_fn = NULL; /* a fixed launch must be valid */
  FAILS(rlx_custom_op_register(&d, NULL), INVALID_ARGUMENT, "grid[0] is 0");
  k.launch = (rlx_custom_cuda_launch){.grid = {64, 1, 1}, .threadgroup = {64, 32, 1}};
  FAILS(rlx_custom_op_register(&d, NULL), INVALID_ARGUMENT, "a threadgroup of 2048 threads");
  k.launch_fn = axpy_launch;
  /* a CUDA-only op registers without a GPU; on a CPU executable it is UNAVAILABLE, naming it */
  OK(rlx_custom_op_register(&d, NULL));
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = add_input(g, "x", 1, (int64_t[]){4}), y = add_input(g, "y", 1, (int64_t[]){4}), z;
  rlx_attr a = RLX_ATTR_S("name", "test.cuda_axpy");
  OK(rlx_graph_add1(g, RLX_OP_CUSTOM, "axpy", 2, (rlx_value[]){x, y}, 1, &a, &z));
  OK(rlx_graph_set_outputs(g, 1, &z));
  float xs[4] = {1, 2, 3, -4}, ys[4] = {0.5f, 0, -1, 2}, want[4];
  for (int i = 0; i < 4; i++) want[i] = 3 * xs[i] + ys[i];
  rlx_tensor *in[2] = {vec(xs, 4), vec(ys, 4)}, *out = NULL;
  for (size_t m = 0; m < 3; m++)
    FAILS(run(g, modes[m], 2, (const char *[]){"x", "y"}, in, 1, &out), UNAVAILABLE, "custom op 'test.cuda_axpy': it has only a CUDA kernel");
  assert_null(out);
  /* with a graph kernel as well, the CPU runs that one (and the GPU, when there is one, the source) */
  d.expand = axpy3_expand;
  OK(rlx_custom_op_register(&d, NULL));
  for (size_t m = 0; m < 3; m++) {
    OK(run(g, modes[m], 2, (const char *[]){"x", "y"}, in, 1, &out));
    expect_floats(out, want, 4, 0);
    rlx_tensor_free(out);
  }
  if (rlx_gpu_available()) { /* the source kernel itself (the GPU machine runs this part) */
    for (size_t m = 0; m < 3; m++) {
      rlx_executable *ex;
      OK(rlx_executable_create(g, RLX_DEVICE_GPU, modes[m], &ex));
      OK(rlx_executable_run(ex, 2, (const char *[]){"x", "y"}, in, 1, &out));
      expect_floats(out, want, 4, 0);
      rlx_tensor_free(out);
      rlx_executable_free(ex);
    }
  }
  rlx_tensor_free(in[0]);
  rlx_tensor_free(in[1]);
  rlx_graph_free(g);
  OK(rlx_custom_op_unregister("test.cuda_axpy"));
}

static void test_unknown_op_not_found(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = add_input(g, "x", 1, (int64_t[]){3}), y = 77;
  rlx_attr a = RLX_ATTR_S("name", "test.nope");
  FAILS(rlx_graph_add1(g, RLX_OP_CUSTOM, "c", 1, &x, 1, &a, &y), NOT_FOUND, "custom op 'test.nope' is not registered");
  FAILS(rlx_graph_add1(g, RLX_OP_CUSTOM, "c", 1, &x, 0, NULL, &y), INVALID_ARGUMENT, "missing required attribute 'name'");
  assert_int_equal(y, 77);
  rlx_graph_free(g);
}

static void test_graph_kernel_every_mode(void **state) {
  (void)state;
  rlx_custom_op_def d = def_graph("test.axpby", axpby_expand, 2, 2);
  bool replaced = true;
  OK(rlx_custom_op_register(&d, &replaced));
  assert_false(replaced);
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  int64_t n = 5;
  rlx_value x = add_input(g, "x", 1, &n), y = add_input(g, "y", 1, &n), z;
  rlx_attr a[3] = {RLX_ATTR_S("name", "test.axpby"), RLX_ATTR_F("alpha", 2.0), RLX_ATTR_F("beta", -3.0)};
  OK(rlx_graph_add1(g, RLX_OP_CUSTOM, "axpby", 2, (rlx_value[]){x, y}, 3, a, &z));
  OK(rlx_graph_set_outputs(g, 1, &z));
  float xs[5] = {1, 2, 3, 4, 5}, ys[5] = {0.5f, -1, 2, 0, 10}, want[5];
  for (int i = 0; i < 5; i++) want[i] = 2 * xs[i] - 3 * ys[i];
  rlx_tensor *in[2] = {vec(xs, 5), vec(ys, 5)};
  for (size_t m = 0; m < 3; m++) {
    rlx_tensor *out = NULL;
    OK(run(g, modes[m], 2, (const char *[]){"x", "y"}, in, 1, &out));
    expect_floats(out, want, 5, 1e-6f);
    rlx_tensor_free(out);
  }
  /* arity and attribute errors name the op */
  rlx_value bad;
  FAILS(rlx_graph_add1(g, RLX_OP_CUSTOM, NULL, 1, &x, 3, a, &bad), INVALID_ARGUMENT, "custom op 'test.axpby': takes 2 to 2 inputs, got 1");
  rlx_tensor_free(in[0]);
  rlx_tensor_free(in[1]);
  rlx_graph_free(g);
  OK(rlx_custom_op_unregister("test.axpby"));
}

static void test_multiple_outputs_and_symbols(void **state) {
  (void)state;
  rlx_custom_op_def d = {.name = "test.halves", .min_inputs = 1, .max_inputs = 1, .infer = halves_infer, .expand = halves_expand};
  OK(rlx_custom_op_register(&d, NULL));
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = add_input(g, "x", 2, (int64_t[]){RLX_DIM_SYMBOL(0), 4}), parts[2];
  size_t np = 0;
  rlx_attr a = RLX_ATTR_S("name", "test.halves");
  OK(rlx_graph_add(g, RLX_OP_CUSTOM, NULL, 1, &x, 1, &a, 2, parts, &np));
  assert_int_equal(np, 2);
  assert_int_equal(rlx_graph_value_type(g, parts[1])->dims[1], 2);
  assert_int_equal(rlx_graph_value_type(g, parts[1])->dims[0], RLX_DIM_SYMBOL(0));
  OK(rlx_graph_set_outputs(g, 2, parts));
  float xs[12];
  for (int i = 0; i < 12; i++) xs[i] = (float)i * 1.5f;
  rlx_tensor *in;
  OK(rlx_tensor_create(RLX_DTYPE_F32, 2, (int64_t[]){3, 4}, xs, sizeof xs, &in));
  float lo[6], hi[6];
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 2; c++) lo[r * 2 + c] = xs[r * 4 + c], hi[r * 2 + c] = xs[r * 4 + 2 + c];
  for (size_t m = 0; m < 3; m++) {
    rlx_tensor *out[2] = {0};
    OK(run(g, modes[m], 1, (const char *[]){"x"}, &in, 2, out));
    expect_floats(out[0], lo, 6, 0);
    expect_floats(out[1], hi, 6, 0);
    rlx_tensor_free(out[0]);
    rlx_tensor_free(out[1]);
  }
  rlx_value odd = add_input(g, "odd", 1, (int64_t[]){3});
  FAILS(rlx_graph_add(g, RLX_OP_CUSTOM, NULL, 1, &odd, 1, &a, 2, parts, &np), INVALID_ARGUMENT, "custom op 'test.halves': the last dim must be even");
  rlx_tensor_free(in);
  rlx_graph_free(g);
  OK(rlx_custom_op_unregister("test.halves"));
}

static void test_host_kernel(void **state) {
  (void)state;
  atomic_int calls = 0;
  rlx_custom_op_def d = {.name = "test.prefix_max", .min_inputs = 1, .max_inputs = 1, .infer = same_as_first, .host = prefix_max_host,
                         .user_data = &calls};
  OK(rlx_custom_op_register(&d, NULL));
  /* y = prefix_max(x * 2) + 1: the host kernel sits between MLX ops */
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  int64_t n = 6;
  rlx_value x = add_input(g, "x", 1, &n), two, one, x2, pm, y;
  rlx_type s = ttype(RLX_DTYPE_F32, 0, NULL);
  float tv = 2, ov = 1;
  OK(rlx_graph_add_constant(g, &s, &tv, sizeof tv, &two));
  OK(rlx_graph_add_constant(g, &s, &ov, sizeof ov, &one));
  OK(rlx_graph_add1(g, RLX_OP_MUL, NULL, 2, (rlx_value[]){x, two}, 0, NULL, &x2));
  rlx_attr a = RLX_ATTR_S("name", "test.prefix_max");
  OK(rlx_graph_add1(g, RLX_OP_CUSTOM, "pm", 1, &x2, 1, &a, &pm));
  OK(rlx_graph_add1(g, RLX_OP_ADD, NULL, 2, (rlx_value[]){pm, one}, 0, NULL, &y));
  OK(rlx_graph_set_outputs(g, 1, &y));
  float xs[6] = {-1, 3, 2, 5, -4, 5.5f}, want[6];
  float m = -INFINITY;
  for (int i = 0; i < 6; i++) m = fmaxf(m, 2 * xs[i]), want[i] = m + 1;
  rlx_tensor *in = vec(xs, 6), *out = NULL;
  OK(run(g, RLX_MODE_EAGER, 1, (const char *[]){"x"}, &in, 1, &out));
  expect_floats(out, want, 6, 0);
  rlx_tensor_free(out);
  OK(run(g, RLX_MODE_LAZY, 1, (const char *[]){"x"}, &in, 1, &out));
  expect_floats(out, want, 6, 0);
  rlx_tensor_free(out);
  assert_int_equal(atomic_load(&calls), 2);
  /* compiled: the trace records the call; every replay calls the kernel on the new input */
  rlx_executable *ex;
  OK(rlx_executable_create(g, RLX_DEVICE_CPU, RLX_MODE_COMPILED, &ex));
  for (int r = 0; r < 3; r++) {
    float xr[6], wr[6], mr = -INFINITY;
    for (int i = 0; i < 6; i++) xr[i] = xs[i] * (float)(r + 1) - (float)r, mr = fmaxf(mr, 2 * xr[i]), wr[i] = mr + 1;
    rlx_tensor *tin = vec(xr, 6);
    OK(rlx_executable_run(ex, 1, (const char *[]){"x"}, &tin, 1, &out));
    expect_floats(out, wr, 6, 0);
    rlx_tensor_free(out);
    rlx_tensor_free(tin);
  }
  assert_int_equal(rlx_executable_num_traces(ex), 1);
  assert_int_equal(atomic_load(&calls), 5);
  /* kernel errors come back annotated with the op (NaN input), in every mode */
  float bad[6] = {0, 1, NAN, 0, 0, 0};
  rlx_tensor *nan_in = vec(bad, 6);
  out = NULL;
  FAILS(rlx_executable_run(ex, 1, (const char *[]){"x"}, &nan_in, 1, &out), INVALID_ARGUMENT,
        "custom op 'test.prefix_max': NaN at 2");
  assert_null(out);
  OK(rlx_executable_run(ex, 1, (const char *[]){"x"}, &in, 1, &out)); /* usable after the error */
  expect_floats(out, want, 6, 0);
  rlx_tensor_free(out);
  rlx_executable_free(ex);
  FAILS(run(g, RLX_MODE_LAZY, 1, (const char *[]){"x"}, &nan_in, 1, &out), INVALID_ARGUMENT, "custom op 'test.prefix_max': NaN at 2");
  FAILS(run(g, RLX_MODE_EAGER, 1, (const char *[]){"x"}, &nan_in, 1, &out), INVALID_ARGUMENT, "node 4 (Custom 'pm')");
  rlx_tensor_free(nan_in);
  rlx_tensor_free(in);
  rlx_graph_free(g);
  OK(rlx_custom_op_unregister("test.prefix_max"));
}

/* An expand that breaks its promise: float32 inference, an int32 output. */
static rlx_status *wrong_type_expand(void *ud, rlx_graph *g, size_t n_in, const rlx_value *in, size_t na, const rlx_attr *attrs,
                                     size_t n_out, rlx_value *out) {
  (void)ud, (void)n_in, (void)na, (void)attrs, (void)n_out;
  rlx_attr to = RLX_ATTR_I("to", RLX_DTYPE_I32);
  return rlx_graph_add1(g, RLX_OP_CAST, NULL, 1, in, 1, &to, &out[0]);
}

/* An infer function that returns an invalid type (rank 9). */
static rlx_status *bad_infer(void *ud, size_t n_in, const rlx_type *in, size_t na, const rlx_attr *attrs, size_t cap, rlx_type *out,
                             size_t *n_out) {
  (void)ud, (void)n_in, (void)na, (void)attrs, (void)cap;
  out[0] = in[0];
  out[0].rank = 9;
  *n_out = 1;
  return NULL;
}

static void test_kernel_contract_errors(void **state) {
  (void)state;
  rlx_custom_op_def d = def_graph("test.wrong_type", wrong_type_expand, 1, 1);
  OK(rlx_custom_op_register(&d, NULL));
  rlx_custom_op_def b = def_graph("test.bad_infer", wrong_type_expand, 1, 1);
  b.infer = bad_infer;
  OK(rlx_custom_op_register(&b, NULL));
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = add_input(g, "x", 1, (int64_t[]){2}), y;
  rlx_attr a = RLX_ATTR_S("name", "test.wrong_type"), ab = RLX_ATTR_S("name", "test.bad_infer");
  FAILS(rlx_graph_add1(g, RLX_OP_CUSTOM, NULL, 1, &x, 1, &ab, &y), INVALID_ARGUMENT, "bad type for output 0");
  OK(rlx_graph_add1(g, RLX_OP_CUSTOM, NULL, 1, &x, 1, &a, &y));
  OK(rlx_graph_set_outputs(g, 1, &y));
  float xs[2] = {1, 2};
  rlx_tensor *in = vec(xs, 2), *out = NULL;
  FAILS(run(g, RLX_MODE_LAZY, 1, (const char *[]){"x"}, &in, 1, &out), INVALID_ARGUMENT, "made output 0 of type int32[2], but its infer function says float32[2]");
  rlx_tensor_free(in);
  rlx_graph_free(g);
  OK(rlx_custom_op_unregister("test.wrong_type"));
  OK(rlx_custom_op_unregister("test.bad_infer"));
}

static void test_replace_and_unregister(void **state) {
  (void)state;
  static float k1 = 3, k2 = -0.5f;
  atomic_store(&freed, 0);
  rlx_custom_op_def d = def_graph("test.scale", scale_expand, 1, 1);
  d.user_data = &k1;
  d.free_user_data = count_free;
  OK(rlx_custom_op_register(&d, NULL));
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = add_input(g, "x", 1, (int64_t[]){3}), y;
  rlx_attr a = RLX_ATTR_S("name", "test.scale");
  OK(rlx_graph_add1(g, RLX_OP_CUSTOM, NULL, 1, &x, 1, &a, &y));
  OK(rlx_graph_set_outputs(g, 1, &y));
  float xs[3] = {1, -2, 4}, w1[3] = {3, -6, 12}, w2[3] = {-0.5f, 1, -2};
  rlx_tensor *in = vec(xs, 3), *out = NULL;
  OK(run(g, RLX_MODE_LAZY, 1, (const char *[]){"x"}, &in, 1, &out));
  expect_floats(out, w1, 3, 0);
  rlx_tensor_free(out);
  /* replace: the old user data is released once, the graph now runs the new kernel */
  d.user_data = &k2;
  bool replaced = false;
  OK(rlx_custom_op_register(&d, &replaced));
  assert_true(replaced);
  assert_int_equal(atomic_load(&freed), 1);
  OK(run(g, RLX_MODE_COMPILED, 1, (const char *[]){"x"}, &in, 1, &out));
  expect_floats(out, w2, 3, 0);
  rlx_tensor_free(out);
  /* unregister: building and running fail with NOT_FOUND */
  OK(rlx_custom_op_unregister("test.scale"));
  assert_int_equal(atomic_load(&freed), 2);
  assert_false(rlx_custom_op_is_registered("test.scale"));
  out = NULL;
  FAILS(run(g, RLX_MODE_LAZY, 1, (const char *[]){"x"}, &in, 1, &out), NOT_FOUND, "custom op 'test.scale' is not registered");
  FAILS(rlx_graph_add1(g, RLX_OP_CUSTOM, NULL, 1, &x, 1, &a, &y), NOT_FOUND, "test.scale");
  FAILS(rlx_custom_op_unregister("test.scale"), NOT_FOUND, "test.scale");
  rlx_tensor_free(in);
  rlx_graph_free(g);
}

/* test.nested(x) = test.axpby(x, x) with alpha 1, beta 1 plus the attributes' int list length:
 * a graph kernel that uses another custom op and reads a list attribute. */
static rlx_status *nested_expand(void *ud, rlx_graph *g, size_t n_in, const rlx_value *in, size_t na, const rlx_attr *attrs,
                                 size_t n_out, rlx_value *out) {
  (void)ud, (void)n_in, (void)n_out;
  const rlx_attr *l = rlx_attr_find(na, attrs, "list"), *tag = rlx_attr_find(na, attrs, "tag");
  if (!l || l->kind != RLX_ATTR_INTS || l->n != 3 || !tag || strcmp(tag->s, "hello"))
    return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "attributes did not come through");
  rlx_attr a[3] = {RLX_ATTR_S("name", "test.axpby"), RLX_ATTR_F("alpha", 1.0), RLX_ATTR_F("beta", (double)l->ints[2])};
  return rlx_graph_add1(g, RLX_OP_CUSTOM, NULL, 2, (rlx_value[]){in[0], in[0]}, 3, a, &out[0]);
}

static void test_nested_and_attributes(void **state) {
  (void)state;
  rlx_custom_op_def d = def_graph("test.axpby", axpby_expand, 2, 2), n = def_graph("test.nested", nested_expand, 1, 1);
  OK(rlx_custom_op_register(&d, NULL));
  OK(rlx_custom_op_register(&n, NULL));
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = add_input(g, "x", 1, (int64_t[]){2}), y;
  int64_t list[3] = {7, 8, 4};
  rlx_attr a[3] = {RLX_ATTR_S("name", "test.nested"), RLX_ATTR_IS("list", 3, list), RLX_ATTR_S("tag", "hello")};
  OK(rlx_graph_add1(g, RLX_OP_CUSTOM, NULL, 1, &x, 3, a, &y));
  OK(rlx_graph_set_outputs(g, 1, &y));
  float xs[2] = {1.5f, -2}, want[2] = {1.5f * 5, -2 * 5};
  rlx_tensor *in = vec(xs, 2);
  for (size_t m = 0; m < 3; m++) {
    rlx_tensor *out = NULL;
    OK(run(g, modes[m], 1, (const char *[]){"x"}, &in, 1, &out));
    expect_floats(out, want, 2, 0);
    rlx_tensor_free(out);
  }
  rlx_tensor_free(in);
  rlx_graph_free(g);
  OK(rlx_custom_op_unregister("test.nested"));
  OK(rlx_custom_op_unregister("test.axpby"));
}

/* Threads register, look up, build graphs with and unregister custom ops at once. */
static void *worker(void *arg) {
  int id = (int)(intptr_t)arg;
  char name[32];
  snprintf(name, sizeof name, "test.thread%d", id);
  for (int it = 0; it < 200; it++) {
    rlx_custom_op_def d = def_graph(name, axpby_expand, 2, 2);
    d.free_user_data = count_free;
    if (rlx_custom_op_register(&d, NULL)) return (void *)1;
    rlx_graph *g;
    if (rlx_graph_create(&g)) return (void *)1;
    rlx_type t = ttype(RLX_DTYPE_F32, 1, (int64_t[]){2});
    rlx_value x, y;
    rlx_attr a[2] = {RLX_ATTR_S("name", it % 2 ? name : "test.shared"), RLX_ATTR_F("alpha", 1)};
    bool ok = !rlx_graph_add_input(g, "x", &t, &x) && !rlx_graph_add1(g, RLX_OP_CUSTOM, NULL, 2, (rlx_value[]){x, x}, 2, a, &y);
    rlx_graph_free(g);
    if (!ok || rlx_custom_op_unregister(name)) return (void *)1;
  }
  return NULL;
}

static void test_concurrent_use(void **state) {
  (void)state;
  atomic_store(&freed, 0);
  rlx_custom_op_def shared = def_graph("test.shared", axpby_expand, 2, 2);
  OK(rlx_custom_op_register(&shared, NULL));
  pthread_t th[8];
  for (int i = 0; i < 8; i++) assert_int_equal(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i), 0);
  for (int i = 0; i < 8; i++) {
    void *r;
    pthread_join(th[i], &r);
    assert_null(r);
  }
  assert_int_equal(atomic_load(&freed), 8 * 200);
  assert_true(rlx_custom_op_is_registered("test.shared"));
  OK(rlx_custom_op_unregister("test.shared"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_register_rules),
      cmocka_unit_test(test_cuda_kernel_rules),
      cmocka_unit_test(test_unknown_op_not_found),
      cmocka_unit_test(test_graph_kernel_every_mode),
      cmocka_unit_test(test_multiple_outputs_and_symbols),
      cmocka_unit_test(test_host_kernel),
      cmocka_unit_test(test_kernel_contract_errors),
      cmocka_unit_test(test_replace_and_unregister),
      cmocka_unit_test(test_nested_and_attributes),
      cmocka_unit_test(test_concurrent_use),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
