/* batched_dense_solve.c: the built-in custom op rlx_linalg_batched_dense_solve (the reference's
 * batched LU kernel, inventory section 2.8), registered when the registry is first used.
 *
 * rlx_linalg_batched_dense_solve(A float32 [B,n,n], b float32 [B,n]) -> (x float32 [B,n], status
 * int32 [B]) with A[i] x[i] = b[i] for every i, 1 <= n <= 128 (rlx/registry.h).
 * - GPU: a CUDA source kernel, one system per thread block: A[i] and b[i] are loaded into shared
 *   memory, factored by Gaussian elimination with partial pivoting (the row of the largest
 *   |a[r][k]| at or below the diagonal becomes row k; Golub & Van Loan, Matrix Computations,
 *   algorithm 3.4.1), the multipliers applied to b on the way, then x is found by back
 *   substitution. A zero pivot (a singular A[i]) makes x[i] all NaN and status[i] 1.
 * - Other devices: the BatchedDenseSolve op (MLX's LU, LAPACK getrf, and triangular solves on the
 *   CPU stream; lower_linalg.c), which fails the run with INVALID_ARGUMENT "singular matrix" on a zero pivot, and
 *   zeros for status. */
#include <string.h>

#include "ir/custom.h"

#define SOLVE_MAX_N 128

static const char *const solve_source =
    "  extern __shared__ float sm[];\n"
    "  float *a = sm, *r = sm + N * N;\n"
    "  __shared__ int piv, bad;\n"
    "  const int sys = blockIdx.x, t = threadIdx.x, nt = blockDim.x;\n"
    "  if (sys >= A_shape[0]) return; /* an empty batch still launches one block */\n"
    "  const float *ag = A + (size_t)sys * N * N;\n"
    "  for (int i = t; i < N * N; i += nt) a[i] = ag[i];\n"
    "  for (int i = t; i < N; i += nt) r[i] = b[(size_t)sys * N + i];\n"
    "  if (t == 0) bad = 0;\n"
    "  __syncthreads();\n"
    "  for (int k = 0; k < N; k++) {\n"
    "    if (t == 0) {\n"
    "      int p = k;\n"
    "      float best = fabsf(a[k * N + k]);\n"
    "      for (int i = k + 1; i < N; i++) {\n"
    "        float v = fabsf(a[i * N + k]);\n"
    "        if (v > best) best = v, p = i;\n"
    "      }\n"
    "      piv = p;\n"
    "      if (!(best > 0.0f)) bad = 1;\n"
    "    }\n"
    "    __syncthreads();\n"
    "    if (bad) break;\n"
    "    const int p = piv;\n"
    "    if (p != k) {\n"
    "      for (int j = t; j < N; j += nt) { float s = a[k * N + j]; a[k * N + j] = a[p * N + j]; a[p * N + j] = s; }\n"
    "      if (t == 0) { float s = r[k]; r[k] = r[p]; r[p] = s; }\n"
    "    }\n"
    "    __syncthreads();\n"
    "    const float inv = 1.0f / a[k * N + k];\n"
    "    for (int i = k + 1 + t; i < N; i += nt) {\n"
    "      const float f = a[i * N + k] * inv;\n"
    "      for (int j = k + 1; j < N; j++) a[i * N + j] -= f * a[k * N + j];\n"
    "      r[i] -= f * r[k];\n"
    "    }\n"
    "    __syncthreads();\n"
    "  }\n"
    "  if (t == 0 && !bad) {\n"
    "    for (int i = N - 1; i >= 0; i--) {\n"
    "      float s = r[i];\n"
    "      for (int j = i + 1; j < N; j++) s -= a[i * N + j] * r[j];\n"
    "      r[i] = s / a[i * N + i];\n"
    "    }\n"
    "  }\n"
    "  __syncthreads();\n"
    "  for (int i = t; i < N; i += nt) x[(size_t)sys * N + i] = bad ? __int_as_float(0x7fc00000) : r[i];\n"
    "  if (t == 0) status[sys] = bad;\n";

static rlx_status *solve_infer(void *ud, size_t n_in, const rlx_type *in, size_t na, const rlx_attr *attrs, size_t cap, rlx_type *out,
                               size_t *n_out) {
  (void)ud, (void)n_in, (void)na, (void)attrs, (void)cap;
  const rlx_type *a = &in[0], *b = &in[1];
  if (a->dtype != RLX_DTYPE_F32 || b->dtype != RLX_DTYPE_F32)
    return RLX_ERR(INVALID_ARGUMENT, "A and b must be float32, got %s and %s", RLX_TYPE_STR(a), RLX_TYPE_STR(b));
  if (a->rank != 3 || b->rank != 2 || !rlx_dim_compatible(a->dims[1], a->dims[2]) || !rlx_dim_compatible(a->dims[0], b->dims[0]) ||
      !rlx_dim_compatible(a->dims[2], b->dims[1]))
    return RLX_ERR(INVALID_ARGUMENT, "expected A [B,n,n] and b [B,n], got %s and %s", RLX_TYPE_STR(a), RLX_TYPE_STR(b));
  int64_t n = a->dims[2];
  if (n >= 0 && (n < 1 || n > SOLVE_MAX_N)) return RLX_ERR(INVALID_ARGUMENT, "n is %lld; expected 1 to %d", (long long)n, SOLVE_MAX_N);
  out[0] = *b;
  out[1] = (rlx_type){.dtype = RLX_DTYPE_I32, .rank = 1, .dims = {b->dims[0]}};
  *n_out = 2;
  return NULL;
}

static rlx_status *solve_expand(void *ud, rlx_graph *g, size_t n_in, const rlx_value *in, size_t na, const rlx_attr *attrs,
                                size_t n_out, rlx_value *out) {
  (void)ud, (void)n_in, (void)na, (void)attrs, (void)n_out;
  RLX_TRY(rlx_graph_add1(g, RLX_OP_BATCHED_DENSE_SOLVE, "solve", 2, in, 0, NULL, &out[0]));
  /* a singular system fails the solve itself, so every status is 0 */
  const rlx_type *tb = rlx_graph_value_type(g, in[1]);
  int32_t zero = 0;
  rlx_type s = {.dtype = RLX_DTYPE_I32, .rank = 0};
  rlx_value z;
  RLX_TRY(rlx_graph_add_constant(g, &s, &zero, sizeof zero, &z));
  rlx_attr shape = RLX_ATTR_IS("shape", 1, &tb->dims[0]);
  return rlx_graph_add1(g, RLX_OP_EXPAND, "status", 1, &z, 1, &shape, &out[1]);
}

static rlx_status *solve_launch(void *ud, size_t n_in, const rlx_type *in, size_t na, const rlx_attr *attrs, size_t n_out,
                                const rlx_type *out, rlx_custom_cuda_launch *l) {
  (void)ud, (void)n_in, (void)na, (void)attrs, (void)n_out, (void)out;
  int64_t batch = in[0].dims[0], n = in[0].dims[2], threads = (n + 31) / 32 * 32;
  l->threadgroup[0] = threads, l->threadgroup[1] = l->threadgroup[2] = 1;
  l->grid[0] = (batch > 0 ? batch : 1) * threads, l->grid[1] = l->grid[2] = 1;
  l->shared_memory = (int32_t)((n * n + n) * (int64_t)sizeof(float));
  l->n_template_args = 1;
  l->template_args[0] = (rlx_custom_template_arg){.name = "N", .kind = RLX_CUSTOM_TEMPLATE_INT, .i = n};
  return NULL;
}

static const char *const solve_inputs[] = {"A", "b"}, *const solve_outputs[] = {"x", "status"};

rlx_status *rlx_kernel_register_batched_dense_solve(void) {
  static const rlx_custom_cuda_kernel cuda = {.source = solve_source, .input_names = solve_inputs, .output_names = solve_outputs,
                                              .n_outputs = 2, .launch_fn = solve_launch};
  rlx_custom_op_def d = {.name = RLX_CUSTOM_BATCHED_DENSE_SOLVE, .min_inputs = 2, .max_inputs = 2, .infer = solve_infer,
                         .expand = solve_expand, .cuda = &cuda};
  return rlx_custom_register_builtin(&d);
}
