/* bench_solve: rlx's built-in batched LU solve (rlx_linalg_batched_dense_solve: the CUDA kernel on
 * the GPU) against MLX's own solve (the BatchedDenseSolve op: mx::linalg::solve, LAPACK on the CPU
 * stream, since MLX has no GPU factorization), both in compiled executables on the same device, on
 * random well-conditioned float32 batches (A = R + n I). bench/solve_torch.py times
 * torch.linalg.solve on the same sizes (the GPU peer); run both in one session and compare.
 *
 * usage: bench_solve [--device cpu|gpu] [--repeat N]   (default: gpu when available, 20 repeats)
 *
 * Each size: one warm-up run of each, then the two alternate; prints the median ms per batch, the
 * ratio, and the max |x_rlx - x_mlx| (a check that both solved the same systems). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "rlx/rlx.h"

/* A [B,n,n], b [B,n] -> the solution, by the built-in op (builtin) or BatchedDenseSolve. */
static rlx_status *make(bool builtin, int64_t B, int64_t n, rlx_device dev, rlx_graph **gout, rlx_executable **exout) {
  rlx_graph *g;
  RLX_RETURN_IF_ERROR(rlx_graph_create(&g));
  rlx_type ta = {.dtype = RLX_DTYPE_F32, .rank = 3, .dims = {B, n, n}}, tb = {.dtype = RLX_DTYPE_F32, .rank = 2, .dims = {B, n}};
  rlx_value v[2], x[2];
  rlx_status *st = rlx_graph_add_input(g, "a", &ta, &v[0]);
  if (!st) st = rlx_graph_add_input(g, "b", &tb, &v[1]);
  rlx_attr name = RLX_ATTR_S("name", RLX_CUSTOM_BATCHED_DENSE_SOLVE);
  if (!st) st = builtin ? rlx_graph_add(g, RLX_OP_CUSTOM, "solve", 2, v, 1, &name, 2, x, NULL)
                        : rlx_graph_add1(g, RLX_OP_BATCHED_DENSE_SOLVE, "solve", 2, v, 0, NULL, &x[0]);
  if (!st) st = rlx_graph_set_outputs(g, 1, x);
  if (!st) st = rlx_executable_create(g, dev, RLX_MODE_COMPILED, exout);
  if (st) rlx_graph_free(g);
  else *gout = g;
  return st;
}

static rlx_status *run(rlx_executable *ex, rlx_tensor *const *in, rlx_tensor **out, double *ms) {
  double t0 = bench_now_ms();
  rlx_status *st = rlx_executable_run(ex, 2, (const char *[]){"a", "b"}, in, 1, out);
  *ms = bench_now_ms() - t0;
  return st;
}

int main(int argc, char **argv) {
  rlx_device dev = rlx_gpu_available() ? RLX_DEVICE_GPU : RLX_DEVICE_CPU;
  int repeat = 20;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--device") && i + 1 < argc) {
      rlx_status *st = rlx_device_from_name(argv[++i], &dev);
      if (st) return bench_fail("bench_solve", st);
    } else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) {
      repeat = atoi(argv[++i]);
    } else {
      fprintf(stderr, "usage: bench_solve [--device cpu|gpu] [--repeat N]\n");
      return 2;
    }
  }
  if (repeat < 1 || repeat > 1000) repeat = 20;
  static const int64_t sizes[][2] = {{1024, 8}, {4096, 16}, {1024, 32}, {256, 64}, {128, 128}};
  printf("device %s, median of %d runs (ms per batch, inputs uploaded each run)\n", rlx_device_name(dev), repeat);
  printf("%6s %4s %12s %12s %8s %10s\n", "B", "n", "rlx builtin", "mlx solve", "ratio", "max|diff|");
  srand(7);
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    int64_t B = sizes[s][0], n = sizes[s][1];
    rlx_tensor *in[2];
    rlx_status *st = rlx_tensor_create(RLX_DTYPE_F32, 3, (int64_t[]){B, n, n}, NULL, 0, &in[0]);
    if (!st) st = rlx_tensor_create(RLX_DTYPE_F32, 2, (int64_t[]){B, n}, NULL, 0, &in[1]);
    if (st) return bench_fail("bench_solve", st);
    float *a = rlx_tensor_data(in[0]), *b = rlx_tensor_data(in[1]);
    for (int64_t i = 0; i < B * n * n; i++) a[i] = (float)rand() / RAND_MAX - 0.5f + (i % (n * n) % (n + 1) == 0 ? (float)n : 0);
    for (int64_t i = 0; i < B * n; i++) b[i] = (float)rand() / RAND_MAX - 0.5f;
    rlx_graph *g[2];
    rlx_executable *ex[2];
    for (int k = 0; k < 2; k++)
      if ((st = make(k == 0, B, n, dev, &g[k], &ex[k]))) return bench_fail("bench_solve", st);
    double *t[2] = {calloc((size_t)repeat, sizeof(double)), calloc((size_t)repeat, sizeof(double))}, diff = 0;
    rlx_tensor *x[2];
    for (int k = 0; k < 2; k++)
      if ((st = run(ex[k], in, &x[k], &t[k][0]))) return bench_fail("bench_solve", st);
    const float *x0 = rlx_tensor_cdata(x[0]), *x1 = rlx_tensor_cdata(x[1]);
    for (int64_t i = 0; i < B * n; i++) diff = fmax(diff, fabs((double)x0[i] - x1[i]));
    for (int k = 0; k < 2; k++) rlx_tensor_free(x[k]);
    for (int r = 0; r < repeat; r++)
      for (int k = 0; k < 2; k++) {
        if ((st = run(ex[k], in, &x[k], &t[k][r]))) return bench_fail("bench_solve", st);
        rlx_tensor_free(x[k]);
      }
    for (int k = 0; k < 2; k++) qsort(t[k], (size_t)repeat, sizeof(double), bench_cmp_double);
    double m0 = t[0][repeat / 2], m1 = t[1][repeat / 2];
    printf("%6lld %4lld %12.3f %12.3f %8.2f %10.2e\n", (long long)B, (long long)n, m0, m1, m0 / m1, diff);
    for (int k = 0; k < 2; k++) rlx_executable_free(ex[k]), rlx_graph_free(g[k]), free(t[k]);
    rlx_tensor_free(in[0]);
    rlx_tensor_free(in[1]);
  }
  return 0;
}
