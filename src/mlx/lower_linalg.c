/* lower_linalg.c: DenseSolve and BatchedDenseSolve through rlx_mx_solve_cpu (LU with partial
 * pivoting, LAPACK getrf, then triangular solves) on the CPU stream, whatever the executable's
 * device: MLX's factorizations have no GPU implementation. float16/bfloat16 solve in float32.
 * A singular A (an exactly zero pivot) fails the run with INVALID_ARGUMENT "singular matrix",
 * reported through the run-time checks (lower_check.c) and never raised inside MLX: in MLX 0.32.4
 * an error raised by a task of the CPU stream can leave the scheduler waiting forever in every
 * later evaluation (shim_ops.cpp). An empty system (n = 0, B = 0 or k = 0: b has no elements) has
 * the empty solution; MLX's LU divides by n * n (SIGFPE for n = 0), so it never sees one. */
#include "mlx/lower.h"

void rlx_lower_linalg(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  const rlx_type *ta = rlx_in_type(L, n, 0), *tb = rlx_in_type(L, n, 1);
  rlx_dtype dt = tb->dtype, work = dt == RLX_DTYPE_F64 ? RLX_DTYPE_F64 : RLX_DTYPE_F32;
  rlx_mx_arr *a = in[0], *b = in[1];
  bool empty = false;
  for (int d = 0; d < tb->rank; d++) empty |= tb->dims[d] == 0;
  if (empty) {
    out[0] = rlx_mx_full(c, tb->rank, tb->dims, 0, dt);
    return;
  }
  if (work != dt) a = rlx_mx_astype(c, a, work), b = rlx_mx_astype(c, b, work);
  int64_t m = ta->dims[ta->rank - 1];
  /* b as [.., n, k]: [n] -> [n, 1], BatchedDenseSolve's [B, n] -> [B, n, 1] */
  if (n->op == RLX_OP_BATCHED_DENSE_SOLVE) b = rlx_mx_reshape(c, b, 3, (int64_t[]){tb->dims[0], m, 1});
  else if (tb->rank == 1) b = rlx_mx_reshape(c, b, 2, (int64_t[]){m, 1});
  rlx_mx_arr *singular = NULL, *x = rlx_mx_solve_cpu(c, a, b, &singular);
  if (singular) rlx_l_nonsingular(L, n, singular);
  x = rlx_l_reshape(L, x, tb);
  out[0] = work != dt ? rlx_mx_astype(c, x, dt) : x;
}
