/* custom_ops: registering custom ops (rlx/registry.h) and running them in compiled mode.
 *
 * - example.softsign(x) = x / (1 + |x|): a CUDA source kernel for the GPU, with a graph kernel
 *   (rlx ops) that serves every other device;
 * - example.cummax(x[n]): the running maximum, a host kernel (C on host memory);
 * - rlx_linalg_batched_dense_solve: the built-in batched LU solve.
 * The program builds y = cummax(softsign(x)) and a 2x2 solve, runs them compiled on the CPU (or
 * the GPU with --device gpu), and checks the results against plain C loops.
 *
 * usage: custom_ops [--device cpu|gpu] */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rlx/rlx.h"

/* Both ops keep the type of their input. */
static rlx_status *same_type(void *ud, size_t n_in, const rlx_type *in, size_t na, const rlx_attr *attrs, size_t cap, rlx_type *out,
                             size_t *n_out) {
  (void)ud, (void)n_in, (void)na, (void)attrs, (void)cap;
  if (in[0].dtype != RLX_DTYPE_F32) return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "x must be float32");
  out[0] = in[0];
  *n_out = 1;
  return NULL;
}

/* softsign as rlx ops: x / (1 + |x|). */
static rlx_status *softsign_expand(void *ud, rlx_graph *g, size_t n_in, const rlx_value *in, size_t na, const rlx_attr *attrs,
                                   size_t n_out, rlx_value *out) {
  (void)ud, (void)n_in, (void)na, (void)attrs, (void)n_out;
  float one = 1;
  rlx_type scalar = {.dtype = RLX_DTYPE_F32, .rank = 0};
  rlx_value c1, ax, den;
  RLX_RETURN_IF_ERROR(rlx_graph_add_constant(g, &scalar, &one, sizeof one, &c1));
  RLX_RETURN_IF_ERROR(rlx_graph_add1(g, RLX_OP_ABS, NULL, 1, in, 0, NULL, &ax));
  RLX_RETURN_IF_ERROR(rlx_graph_add1(g, RLX_OP_ADD, NULL, 2, (rlx_value[]){ax, c1}, 0, NULL, &den));
  return rlx_graph_add1(g, RLX_OP_DIV, NULL, 2, (rlx_value[]){in[0], den}, 0, NULL, &out[0]);
}

/* softsign in CUDA: one thread per element; the grid depends on the size. */
static rlx_status *softsign_launch(void *ud, size_t n_in, const rlx_type *in, size_t na, const rlx_attr *attrs, size_t n_out,
                                   const rlx_type *out, rlx_custom_cuda_launch *l) {
  (void)ud, (void)n_in, (void)na, (void)attrs, (void)n_out, (void)out;
  int64_t n = 1;
  for (int d = 0; d < in[0].rank; d++) n *= in[0].dims[d];
  l->grid[0] = n > 0 ? n : 1, l->grid[1] = l->grid[2] = 1;
  l->threadgroup[0] = 256, l->threadgroup[1] = l->threadgroup[2] = 1;
  l->n_template_args = 1;
  l->template_args[0] = (rlx_custom_template_arg){.name = "SIZE", .kind = RLX_CUSTOM_TEMPLATE_INT, .i = n};
  return NULL;
}

static const char *const softsign_in[] = {"x"}, *const softsign_out[] = {"y"};
static const rlx_custom_cuda_kernel softsign_cuda = {
    .source = "  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;\n"
              "  if (i < SIZE) y[i] = x[i] / (1.0f + fabsf(x[i]));\n",
    .input_names = softsign_in, .output_names = softsign_out, .n_outputs = 1, .launch_fn = softsign_launch};

/* cummax on host memory. */
static rlx_status *cummax_host(void *ud, size_t n_in, const rlx_tensor *const *in, size_t na, const rlx_attr *attrs, size_t n_out,
                               rlx_tensor *const *out) {
  (void)ud, (void)n_in, (void)na, (void)attrs, (void)n_out;
  const float *x = rlx_tensor_cdata(in[0]);
  float *y = rlx_tensor_data(out[0]);
  for (int64_t i = 0; i < rlx_tensor_numel(in[0]); i++) y[i] = i && y[i - 1] > x[i] ? y[i - 1] : x[i];
  return NULL;
}

static int check(rlx_status *st) {
  if (!st) return 0;
  fprintf(stderr, "custom_ops: %s: %s\n", rlx_status_code_name(rlx_status_code_of(st)), rlx_status_message(st));
  rlx_status_free(st);
  return 1;
}

int main(int argc, char **argv) {
  rlx_device dev = RLX_DEVICE_CPU;
  if (argc == 3 && !strcmp(argv[1], "--device") && check(rlx_device_from_name(argv[2], &dev))) return 2;
  rlx_custom_op_def softsign = {.name = "example.softsign", .min_inputs = 1, .max_inputs = 1, .infer = same_type,
                                .expand = softsign_expand, .cuda = &softsign_cuda};
  rlx_custom_op_def cummax = {.name = "example.cummax", .min_inputs = 1, .max_inputs = 1, .infer = same_type, .host = cummax_host};
  if (check(rlx_custom_op_register(&softsign, NULL)) || check(rlx_custom_op_register(&cummax, NULL))) return 1;

  /* y = cummax(softsign(x)); s = solve(A, b) */
  enum { N = 8 };
  rlx_graph *g;
  if (check(rlx_graph_create(&g))) return 1;
  rlx_type tx = {.dtype = RLX_DTYPE_F32, .rank = 1, .dims = {N}};
  rlx_type ta = {.dtype = RLX_DTYPE_F32, .rank = 3, .dims = {1, 2, 2}}, tb = {.dtype = RLX_DTYPE_F32, .rank = 2, .dims = {1, 2}};
  rlx_value x, a, b, soft, y, solved[2];
  rlx_attr n1 = RLX_ATTR_S("name", "example.softsign"), n2 = RLX_ATTR_S("name", "example.cummax"),
           n3 = RLX_ATTR_S("name", RLX_CUSTOM_BATCHED_DENSE_SOLVE);
  rlx_status *st = rlx_graph_add_input(g, "x", &tx, &x);
  if (!st) st = rlx_graph_add_input(g, "a", &ta, &a);
  if (!st) st = rlx_graph_add_input(g, "b", &tb, &b);
  if (!st) st = rlx_graph_add1(g, RLX_OP_CUSTOM, "softsign", 1, &x, 1, &n1, &soft);
  if (!st) st = rlx_graph_add1(g, RLX_OP_CUSTOM, "cummax", 1, &soft, 1, &n2, &y);
  if (!st) st = rlx_graph_add(g, RLX_OP_CUSTOM, "solve", 2, (rlx_value[]){a, b}, 1, &n3, 2, solved, NULL);
  if (!st) st = rlx_graph_set_outputs(g, 2, (rlx_value[]){y, solved[0]});
  rlx_executable *ex = NULL;
  if (!st) st = rlx_executable_create(g, dev, RLX_MODE_COMPILED, &ex);

  float xs[N] = {-3, 0.5f, -1, 2, 7, -8, 1, 0}, as[4] = {0, 2, 1, 1}, bs[2] = {4, 3};
  rlx_tensor *in[3] = {NULL, NULL, NULL}, *out[2] = {NULL, NULL};
  if (!st) st = rlx_tensor_create(RLX_DTYPE_F32, 1, tx.dims, xs, sizeof xs, &in[0]);
  if (!st) st = rlx_tensor_create(RLX_DTYPE_F32, 3, ta.dims, as, sizeof as, &in[1]);
  if (!st) st = rlx_tensor_create(RLX_DTYPE_F32, 2, tb.dims, bs, sizeof bs, &in[2]);
  if (!st) st = rlx_executable_run(ex, 3, (const char *[]){"x", "a", "b"}, in, 2, out);
  int bad = check(st);
  if (!bad) {
    const float *yv = rlx_tensor_cdata(out[0]), *sv = rlx_tensor_cdata(out[1]);
    float m = -INFINITY;
    for (int i = 0; i < N; i++) {
      m = fmaxf(m, xs[i] / (1 + fabsf(xs[i])));
      printf("x %5.1f  cummax(softsign) %.6f (expected %.6f)\n", xs[i], yv[i], m);
      bad |= fabsf(yv[i] - m) > 1e-6f;
    }
    /* [[0 2] [1 1]] s = [4 3]  ->  s = [1 2] */
    printf("solve: %.6f %.6f (expected 1 2) on %s\n", sv[0], sv[1], rlx_device_name(dev));
    bad |= fabsf(sv[0] - 1) > 1e-5f || fabsf(sv[1] - 2) > 1e-5f;
  }
  for (int i = 0; i < 3; i++) rlx_tensor_free(in[i]);
  for (int i = 0; i < 2; i++) rlx_tensor_free(out[i]);
  rlx_executable_free(ex);
  rlx_graph_free(g);
  printf("%s\n", bad ? "FAILED" : "ok");
  return bad;
}
