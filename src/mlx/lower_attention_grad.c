/* lower_attention_grad.c: AttentionBackward (the softmax-attention gradient on the recomputed
 * probabilities) and RopeBackward (the inverse rotation). */
#include <string.h>

#include "mlx/lower.h"

/* Sums the query heads of each kv group: [B,hkv,rep,s,d] -> [B,hkv,s,d]. */
static rlx_mx_arr *fold_groups(rlx_lower *L, rlx_mx_arr *x) {
  int axis = 2;
  return rlx_mx_reduce(L->mx, x, 0, 1, &axis, false);
}

/* With s = scale q k^T, t = cap(s), P = softmax(M(t)), y = P v (per head; kv heads shared by
 * their query group):
 *   dV = sum_group P^T dy;  dP = dy v^T;  dT = P * (dP - rowsum(dP * P));
 *   dS = dT * (1 - tanh^2(s / softcap)) (dT without soft-capping);
 *   dQ = scale dS k;  dK = scale sum_group dS^T q.
 * Masked entries have P = 0 and so no gradient. */
static rlx_mx_arr *attention_backward(rlx_lower *L, const rlx_l_attn *a, rlx_mx_arr *const *qkv, rlx_mx_arr *dy, int wrt) {
  rlx_mx *c = L->mx;
  rlx_mx_arr *st[3], *p = rlx_l_attention_probs(L, a, qkv[0], qkv[1], st), *s = st[0];
  rlx_mx_arr *dy5 = rlx_l_attn_group(L, a, dy, a->sq, a->dv);
  if (wrt == 2) return fold_groups(L, rlx_mx_matmul(c, rlx_l_swap(L, rlx_l_attn_group(L, a, p, a->sq, a->sk), 5, 3, 4), dy5));
  rlx_mx_arr *vt = rlx_mx_reshape(c, rlx_l_swap(L, qkv[2], 4, 2, 3), 5, (int64_t[]){a->B, a->hkv, 1, a->dv, a->sk});
  rlx_mx_arr *dp = rlx_l_attn_ungroup(L, a, rlx_mx_matmul(c, dy5, vt), a->sq, a->sk);
  int last = -1;
  rlx_mx_arr *rowsum = rlx_mx_reduce(c, rlx_mx_binary(c, RLX_MXB_MULTIPLY, dp, p), 0, 1, &last, true);
  rlx_mx_arr *ds = rlx_mx_binary(c, RLX_MXB_MULTIPLY, p, rlx_mx_binary(c, RLX_MXB_SUBTRACT, dp, rowsum));
  if (a->softcap > 0) {
    rlx_mx_arr *th = rlx_mx_unary(c, RLX_MXU_TANH, rlx_mx_binary(c, RLX_MXB_DIVIDE, s, rlx_mx_scalar(c, a->softcap, a->dt)));
    ds = rlx_mx_binary(c, RLX_MXB_MULTIPLY, ds, rlx_mx_binary(c, RLX_MXB_SUBTRACT, rlx_mx_scalar(c, 1, a->dt), rlx_mx_unary(c, RLX_MXU_SQUARE, th)));
  }
  ds = rlx_mx_binary(c, RLX_MXB_MULTIPLY, ds, rlx_mx_scalar(c, a->scale, a->dt));
  rlx_mx_arr *ds5 = rlx_l_attn_group(L, a, ds, a->sq, a->sk);
  if (wrt == 0) {
    rlx_mx_arr *k5 = rlx_mx_reshape(c, qkv[1], 5, (int64_t[]){a->B, a->hkv, 1, a->sk, a->d});
    return rlx_l_attn_ungroup(L, a, rlx_mx_matmul(c, ds5, k5), a->sq, a->d);
  }
  return fold_groups(L, rlx_mx_matmul(c, rlx_l_swap(L, ds5, 5, 3, 4), rlx_l_attn_group(L, a, qkv[0], a->sq, a->d)));
}

static void lower_attention_backward(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_l_attn a;
  rlx_mx_arr *qkv[3];
  rlx_l_attn_from_node(L, n, in, 4, &a, qkv);
  const char *w = rlx_node_s(n, "wrt");
  int wrt = strcmp(w, "query") == 0 ? 0 : strcmp(w, "key") == 0 ? 1 : 2;
  rlx_mx_arr *dy = a.packed ? rlx_l_split_heads(L, in[3], a.B, a.sq, a.hq, a.dv) : in[3];
  rlx_mx_arr *g = attention_backward(L, &a, qkv, dy, wrt);
  if (a.packed) {
    int64_t h = wrt == 0 ? a.hq : a.hkv, s = wrt == 0 ? a.sq : a.sk, d = wrt == 2 ? a.dv : a.d;
    g = rlx_l_merge_heads(L, g, a.B, s, h, d);
  }
  out[0] = g;
}

void rlx_lower_attention_grad(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  switch (n->op) {
    case RLX_OP_ATTENTION_BACKWARD:
      lower_attention_backward(L, n, in, out);
      return;
    case RLX_OP_ROPE_BACKWARD:
      out[0] = rlx_l_rope_node(L, n, in, -1.0);
      return;
    default:
      rlx_lower_fail(L, RLX_STATUS_INTERNAL, "not an attention_grad op");
  }
}
