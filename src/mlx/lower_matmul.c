/* lower_matmul.c: MatMul, DotGeneral and the matmul variants. */
#include <string.h>

#include "mlx/lower.h"

/* matmul of equal-dtype operands. MLX multiplies floating types only: integer operands go
 * through float64 on the CPU (exact while every partial sum stays below 2^53 in magnitude) and
 * float32 on a GPU (no float64 there; exact below 2^24); the result wraps to the integer dtype
 * through int64 like NumPy's integer matmul. */
static rlx_mx_arr *matmul(rlx_lower *L, rlx_mx_arr *a, rlx_mx_arr *b, rlx_dtype dt) {
  rlx_mx *c = L->mx;
  if (rlx_dtype_is_float(dt)) return rlx_mx_matmul(c, a, b);
  rlx_dtype acc = rlx_mx_get_device(c) == RLX_MX_GPU ? RLX_DTYPE_F32 : RLX_DTYPE_F64;
  rlx_mx_arr *y = rlx_mx_matmul(c, rlx_mx_astype(c, a, acc), rlx_mx_astype(c, b, acc));
  return rlx_mx_astype(c, rlx_mx_astype(c, y, RLX_DTYPE_I64), dt);
}

/* The weight W of x @ Transpose(W) for a 2-D float32 W, or of x @ Transpose(Cast(W)) for a 2-D
 * float16 W cast to float32 (an LLM's projection with [N, K] weights): the rlx_mx_matvec scheme
 * (2 float32, 3 float16, read as stored) with *w its array, or -1 (also for a float32 W with
 * f16_only). */
static int transposed_weight(const rlx_lower *L, const rlx_node *n, rlx_mx_arr *b, bool f16_only, rlx_mx_arr **w) {
  const rlx_node *p = rlx_value_node(L->g, n->in[1]);
  size_t np = 0;
  const int64_t *perm = p->op == RLX_OP_TRANSPOSE ? rlx_node_is(p, "perm", &np) : NULL;
  if (!perm || np != 2 || perm[0] != 1 || perm[1] != 0) return -1;
  const rlx_node *cast = rlx_value_node(L->g, p->in[0]);
  if (cast->op == RLX_OP_CAST && L->types[cast->in[0]].dtype == RLX_DTYPE_F16 && L->types[cast->in[0]].rank == 2 && L->vals[cast->in[0]]) {
    *w = L->vals[cast->in[0]];
    return 3;
  }
  if (f16_only) return -1;
  *w = rlx_mx_transpose(L->mx, b, 2, (int64_t[]){1, 0});
  return 2;
}

/* The kept GEMM panels of node n's right operand (lower.h w_packed) when its operands are float32
 * and the right one a matrix, else NULL. */
static rlx_mx_arr *packed_rhs(const rlx_lower *L, const rlx_node *n) {
  const rlx_type *ta = rlx_in_type(L, n, 0), *tb = rlx_in_type(L, n, 1);
  rlx_mx_arr *pk = L->w_packed ? L->w_packed[n->in[1]] : NULL;
  return pk && ta->dtype == RLX_DTYPE_F32 && ta->rank >= 1 && tb->dtype == RLX_DTYPE_F32 && tb->rank == 2 ? pk : NULL;
}

/* numpy.matmul: promote 1-D operands to matrices, then reshape to the inferred result. */
static void lower_matmul_np(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  const rlx_type *ta = rlx_in_type(L, n, 0), *tb = rlx_in_type(L, n, 1);
  rlx_mx_arr *a = in[0], *b = in[1], *w = NULL;
  int64_t rows = 1;
  for (int i = 0; i + 1 < ta->rank; i++) rows *= ta->dims[i];
  /* x times a transposed float32 weight (a few rows of x) or widened float16 one on the CPU:
   * rlx's matvec kernel reads W once, as stored, where sgemm would pack it first (float16: where
   * MLX would widen all of W first); on a GPU the widened float16 one times up to 8 rows of x
   * (a decode step's products: MLX's gemv would read twice the bytes, after widening W) */
  bool gpu = rlx_mx_get_device(L->mx) == RLX_MX_GPU;
  int scheme = ta->rank >= 1 && tb->rank == 2 && ta->dtype == RLX_DTYPE_F32 && tb->dtype == RLX_DTYPE_F32 &&
                       (!gpu || rows <= RLX_MX_CUDA_MATVEC_MAX_ROWS)
                   ? transposed_weight(L, n, b, gpu, &w)
                   : -1;
  if (scheme == 3 || (scheme == 2 && rows <= 4)) {
    out[0] = rlx_mx_matvec(L->mx, a, w, NULL, scheme, false, rlx_l_read_once(L, n->in[0])); /* [.., N] */
    return;
  }
  rlx_mx_arr *pk = packed_rhs(L, n);
  if (pk) {
    out[0] = rlx_l_reshape(L, rlx_mx_matmul_packed(L->mx, a, pk, tb->dims[1], NULL, (rlx_mx_act){RLX_MX_ACT_NONE, 0, 0}),
                           rlx_out_type(L, n, 0));
    return;
  }
  if (ta->rank == 1) a = rlx_mx_reshape(L->mx, a, 2, (int64_t[]){1, ta->dims[0]});
  if (tb->rank == 1) b = rlx_mx_reshape(L->mx, b, 2, (int64_t[]){tb->dims[0], 1});
  out[0] = rlx_l_reshape(L, matmul(L, a, b, ta->dtype), rlx_out_type(L, n, 0));
}

/* jax.lax.dot_general: permute to [batch, free, contract] x [batch, contract, free], flatten to
 * one batched matmul, reshape to [batch..., lhs free..., rhs free...]. */
static void lower_dot_general(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  const rlx_type *t[2] = {rlx_in_type(L, n, 0), rlx_in_type(L, n, 1)};
  size_t nc, nb;
  const int64_t *con[2] = {rlx_node_is(n, "lhs_contracting", &nc), rlx_node_is(n, "rhs_contracting", &nc)};
  const int64_t *bat[2] = {rlx_node_is(n, "lhs_batch", &nb), rlx_node_is(n, "rhs_batch", &nb)};
  rlx_mx_arr *m[2];
  for (int s = 0; s < 2; s++) {
    int r = t[s]->rank;
    bool used[RLX_MAX_RANK] = {0};
    int64_t perm[RLX_MAX_RANK], bsz = 1, csz = 1, fsz = 1;
    int k = 0;
    int64_t cidx[RLX_MAX_RANK], fidx[RLX_MAX_RANK];
    int nf = 0;
    for (size_t i = 0; i < nb; i++) {
      int64_t a = bat[s][i] < 0 ? bat[s][i] + r : bat[s][i];
      perm[k++] = a, used[a] = true, bsz *= t[s]->dims[a];
    }
    for (size_t i = 0; i < nc; i++) {
      int64_t a = con[s][i] < 0 ? con[s][i] + r : con[s][i];
      cidx[i] = a, used[a] = true, csz *= t[s]->dims[a];
    }
    for (int i = 0; i < r; i++)
      if (!used[i]) fidx[nf++] = i, fsz *= t[s]->dims[i];
    /* lhs: batch, free, contract; rhs: batch, contract, free */
    if (s == 0) {
      for (int i = 0; i < nf; i++) perm[k++] = fidx[i];
      for (size_t i = 0; i < nc; i++) perm[k++] = cidx[i];
    } else {
      for (size_t i = 0; i < nc; i++) perm[k++] = cidx[i];
      for (int i = 0; i < nf; i++) perm[k++] = fidx[i];
    }
    rlx_mx_arr *x = rlx_mx_transpose(L->mx, in[s], r, perm);
    int64_t shp[3] = {bsz, s == 0 ? fsz : csz, s == 0 ? csz : fsz};
    m[s] = rlx_mx_reshape(L->mx, x, 3, shp);
  }
  out[0] = rlx_l_reshape(L, matmul(L, m[0], m[1], t[0]->dtype), rlx_out_type(L, n, 0));
}

void rlx_lower_matmul(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  switch (n->op) {
    case RLX_OP_MATMUL:
      lower_matmul_np(L, n, in, out);
      return;
    case RLX_OP_DOT_GENERAL:
      lower_dot_general(L, n, in, out);
      return;
    case RLX_OP_FUSED_MATMUL_BIAS_ACT: {
      rlx_dtype dt = rlx_in_type(L, n, 0)->dtype;
      rlx_mx_arr *pk = packed_rhs(L, n);
      if (pk) { /* the bias ([N], as x) and the activation where the kernel has it in the kernel */
        const char *act = rlx_node_s(n, "activation");
        rlx_mx_act ka = {RLX_MX_ACT_NONE, 0, 0};
        bool fused = rlx_l_kernel_act(act, &ka);
        rlx_mx_arr *y = rlx_mx_matmul_packed(c, in[0], pk, rlx_in_type(L, n, 1)->dims[1], n->n_in == 3 ? in[2] : NULL, ka);
        out[0] = fused ? y : rlx_l_activation(L, act, y, dt);
        return;
      }
      rlx_mx_arr *y = rlx_mx_matmul(c, in[0], in[1]);
      /* CPU float32: bias and activation in one pass of rlx's kernel on the pool */
      rlx_mx_act ka;
      if (rlx_mx_get_device(c) == RLX_MX_CPU && dt == RLX_DTYPE_F32 && rlx_l_kernel_act(rlx_node_s(n, "activation"), &ka) &&
          (n->n_in == 3 || ka.kind != RLX_MX_ACT_NONE)) {
        out[0] = rlx_mx_bias_act(c, y, n->n_in == 3 ? in[2] : NULL, ka);
        return;
      }
      if (n->n_in == 3) y = rlx_mx_binary(c, RLX_MXB_ADD, y, in[2]);
      out[0] = rlx_l_activation(L, rlx_node_s(n, "activation"), y, dt);
      return;
    }
    case RLX_OP_LORA_MATMUL: {
      rlx_dtype dt = rlx_in_type(L, n, 0)->dtype;
      rlx_mx_arr *base = rlx_mx_matmul(c, in[0], in[1]);
      rlx_mx_arr *low = rlx_mx_matmul(c, rlx_mx_matmul(c, in[0], in[2]), in[3]);
      out[0] = rlx_mx_binary(c, RLX_MXB_ADD, base, rlx_mx_binary(c, RLX_MXB_MULTIPLY, low, rlx_mx_scalar(c, rlx_node_f(n, "scale"), dt)));
      return;
    }
    case RLX_OP_GROUPED_MATMUL: {
      /* gather_mm: x[M,1,K] @ w[idx[m]] -> [M,1,N] */
      const rlx_type *tx = rlx_in_type(L, n, 0);
      rlx_mx_arr *x = rlx_mx_reshape(c, in[0], 3, (int64_t[]){tx->dims[0], 1, tx->dims[1]});
      rlx_mx_arr *idx = rlx_l_expert_index(L, in[2], rlx_in_type(L, n, 1)->dims[0]);
      out[0] = rlx_l_reshape(L, rlx_mx_gather_mm(c, x, in[1], NULL, idx), rlx_out_type(L, n, 0));
      return;
    }
    default:
      rlx_lower_fail(L, RLX_STATUS_INTERNAL, "not a matmul op");
  }
}
