/* lower_attention.c: Attention (MLX fast::scaled_dot_product_attention, or a composed path for
 * soft-capping and distinct value head dims) and Rope. */
#include <math.h>
#include <string.h>

#include "mlx/lower.h"

/* [B,S,H*D] -> [B,H,S,D] */
static rlx_mx_arr *unpack_heads(rlx_lower *L, rlx_mx_arr *x, const rlx_type *t, int64_t h) {
  int64_t d = t->dims[2] / h;
  rlx_mx_arr *r = rlx_mx_reshape(L->mx, x, 4, (int64_t[]){t->dims[0], t->dims[1], h, d});
  return rlx_mx_transpose(L->mx, r, 4, (int64_t[]){0, 2, 1, 3});
}

/* The boolean "may attend" mask [Sq,Sk] for causal / sliding-window attention, bottom-right
 * aligned: key j is visible to query i when j <= i + (Sk - Sq) (and j >= i + (Sk - Sq) - w). */
rlx_mx_arr *rlx_l_causal_mask(rlx_lower *L, int64_t sq, int64_t sk, int64_t window) {
  rlx_mx *c = L->mx;
  rlx_mx_arr *qi = rlx_mx_reshape(c, rlx_mx_arange(c, 0, (double)sq, 1, RLX_DTYPE_I32), 2, (int64_t[]){sq, 1});
  rlx_mx_arr *kj = rlx_mx_reshape(c, rlx_mx_arange(c, 0, (double)sk, 1, RLX_DTYPE_I32), 2, (int64_t[]){1, sk});
  rlx_mx_arr *diag = rlx_mx_binary(c, RLX_MXB_ADD, qi, rlx_mx_scalar(c, (double)(sk - sq), RLX_DTYPE_I32));
  rlx_mx_arr *m = rlx_mx_binary(c, RLX_MXB_LESS_EQUAL, kj, diag);
  if (window > 0) {
    rlx_mx_arr *lo = rlx_mx_binary(c, RLX_MXB_SUBTRACT, diag, rlx_mx_scalar(c, (double)window, RLX_DTYPE_I32));
    m = rlx_mx_binary(c, RLX_MXB_LOGICAL_AND, m, rlx_mx_binary(c, RLX_MXB_GREATER_EQUAL, kj, lo));
  }
  return m;
}

/* Attention on [B,H,S,D] operands. mask_kind: 0 none, 1 causal, 2 sliding, 3 custom, 4 bias. */
rlx_mx_arr *rlx_l_attention(rlx_lower *L, rlx_mx_arr *q, rlx_mx_arr *k, rlx_mx_arr *v, const int64_t *qd,
                            const int64_t *kd, int64_t dv, rlx_dtype dt, float scale, float softcap, int mask_kind,
                            int64_t window, rlx_mx_arr *mask, rlx_dtype mask_dt) {
  rlx_mx *c = L->mx;
  int64_t B = qd[0], hq = qd[1], sq = qd[2], d = qd[3], hkv = kd[1], sk = kd[2];
  rlx_mx_arr *m = NULL;
  const char *mode = "";
  if (mask_kind == 1 && softcap <= 0 && dv == d) mode = "causal";
  else if (mask_kind == 1 || mask_kind == 2) m = rlx_l_causal_mask(L, sq, sk, mask_kind == 2 ? window : 0), mode = "array";
  else if (mask_kind == 3) m = rlx_mx_binary(c, RLX_MXB_NOT_EQUAL, mask, rlx_mx_scalar(c, 0, mask_dt)), mode = "array";
  else if (mask_kind == 4) m = rlx_mx_astype(c, mask, dt), mode = "array";
  if (softcap <= 0 && dv == d) return rlx_mx_sdpa(c, q, k, v, scale, mode, m);
  /* Composed path: scores = scale q k^T, soft-capped, masked, softmax, @ v. */
  if (hkv != hq) { /* repeat kv heads for grouped-query attention */
    int64_t rep = hq / hkv;
    k = rlx_mx_reshape(c, rlx_mx_broadcast_to(c, rlx_mx_reshape(c, k, 5, (int64_t[]){B, hkv, 1, sk, d}), 5, (int64_t[]){B, hkv, rep, sk, d}), 4, (int64_t[]){B, hq, sk, d});
    v = rlx_mx_reshape(c, rlx_mx_broadcast_to(c, rlx_mx_reshape(c, v, 5, (int64_t[]){B, hkv, 1, sk, dv}), 5, (int64_t[]){B, hkv, rep, sk, dv}), 4, (int64_t[]){B, hq, sk, dv});
  }
  rlx_mx_arr *s = rlx_mx_matmul(c, rlx_mx_binary(c, RLX_MXB_MULTIPLY, q, rlx_mx_scalar(c, scale, dt)), rlx_l_swap(L, k, 4, 2, 3));
  if (softcap > 0) {
    rlx_mx_arr *cap = rlx_mx_scalar(c, softcap, dt);
    s = rlx_mx_binary(c, RLX_MXB_MULTIPLY, rlx_mx_unary(c, RLX_MXU_TANH, rlx_mx_binary(c, RLX_MXB_DIVIDE, s, cap)), cap);
  }
  if (mask_kind == 4) s = rlx_mx_binary(c, RLX_MXB_ADD, s, m);
  else if (m) s = rlx_mx_where(c, m, s, rlx_mx_scalar(c, -INFINITY, dt));
  rlx_mx_arr *p = rlx_mx_softmax(c, s, 3, true);
  return rlx_mx_matmul(c, p, v);
}

static int mask_kind(const char *m) {
  static const char *kinds[] = {"none", "causal", "sliding_window", "custom", "bias"};
  for (int i = 0; i < 5; i++)
    if (strcmp(m, kinds[i]) == 0) return i;
  return 0;
}

static void lower_attention(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  const rlx_type *tq = rlx_in_type(L, n, 0), *tk = rlx_in_type(L, n, 1), *tv = rlx_in_type(L, n, 2);
  int64_t hq = rlx_node_i(n, "num_heads"), hkv = rlx_node_i(n, "num_kv_heads");
  if (!hkv) hkv = hq;
  rlx_mx_arr *q = in[0], *k = in[1], *v = in[2];
  int64_t qd[4], kd[4], dv;
  if (tq->rank == 3) {
    q = unpack_heads(L, q, tq, hq);
    k = unpack_heads(L, k, tk, hkv);
    v = unpack_heads(L, v, tv, hkv);
    int64_t d = tq->dims[2] / hq;
    memcpy(qd, (int64_t[]){tq->dims[0], hq, tq->dims[1], d}, sizeof qd);
    memcpy(kd, (int64_t[]){tk->dims[0], hkv, tk->dims[1], d}, sizeof kd);
    dv = tv->dims[2] / hkv;
  } else {
    memcpy(qd, tq->dims, sizeof qd);
    memcpy(kd, tk->dims, sizeof kd);
    dv = tv->dims[3];
  }
  double ss = rlx_node_f(n, "score_scale");
  float scale = (float)(ss != 0 ? ss : 1.0 / sqrt((double)qd[3]));
  rlx_mx_arr *y = rlx_l_attention(L, q, k, v, qd, kd, dv, tq->dtype, scale, (float)rlx_node_f(n, "softcap"),
                                  mask_kind(rlx_node_s(n, "mask")), rlx_node_i(n, "window"), n->n_in > 3 ? in[3] : NULL,
                                  n->n_in > 3 ? rlx_in_type(L, n, 3)->dtype : tq->dtype);
  if (tq->rank == 3) y = rlx_l_reshape(L, rlx_mx_transpose(c, y, 4, (int64_t[]){0, 2, 1, 3}), rlx_out_type(L, n, 0));
  out[0] = y;
}

/* NeoX rotary embedding; sign = -1 applies the inverse rotation (RopeBackward). */
rlx_mx_arr *rlx_l_rope(rlx_lower *L, rlx_mx_arr *x, const rlx_type *t, rlx_mx_arr *cs, rlx_mx_arr *sn,
                       const rlx_type *tcs, int64_t head_dim, int64_t n_rot, double sign) {
  rlx_mx *c = L->mx;
  int64_t last = t->dims[t->rank - 1], D = head_dim ? head_dim : last, R = n_rot ? n_rot : D, S = t->dims[t->rank - 2];
  rlx_type tx = *t;
  if (D != last) { /* packed heads: [.., S, H*D] -> [.., S, H, D] */
    tx.dims[tx.rank - 1] = last / D;
    tx.dims[tx.rank++] = D;
    x = rlx_l_reshape(L, x, &tx);
  }
  /* cos/sin [S', >=R/2] -> [S, R/2], shaped to broadcast over x. */
  int64_t lo[2] = {0, 0}, hi[2] = {S, R / 2}, st[2] = {1, 1};
  (void)tcs;
  rlx_mx_arr *cc = rlx_mx_slice(c, cs, 2, lo, hi, st), *ss = rlx_mx_slice(c, sn, 2, lo, hi, st);
  if (D != last) {
    cc = rlx_mx_reshape(c, cc, 3, (int64_t[]){S, 1, R / 2});
    ss = rlx_mx_reshape(c, ss, 3, (int64_t[]){S, 1, R / 2});
  }
  if (sign < 0) ss = rlx_mx_unary(c, RLX_MXU_NEGATIVE, ss);
  int ax = tx.rank - 1;
  rlx_mx_arr *x1 = rlx_l_narrow(L, x, &tx, ax, 0, R / 2), *x2 = rlx_l_narrow(L, x, &tx, ax, R / 2, R / 2);
  rlx_mx_arr *y1 = rlx_mx_binary(c, RLX_MXB_SUBTRACT, rlx_mx_binary(c, RLX_MXB_MULTIPLY, x1, cc), rlx_mx_binary(c, RLX_MXB_MULTIPLY, x2, ss));
  rlx_mx_arr *y2 = rlx_mx_binary(c, RLX_MXB_ADD, rlx_mx_binary(c, RLX_MXB_MULTIPLY, x2, cc), rlx_mx_binary(c, RLX_MXB_MULTIPLY, x1, ss));
  rlx_mx_arr *parts[3] = {y1, y2, NULL};
  size_t np = 2;
  if (R < D) parts[np++] = rlx_l_narrow(L, x, &tx, ax, R, D - R);
  rlx_mx_arr *y = rlx_mx_concatenate(c, parts, np, ax);
  return D != last ? rlx_l_reshape(L, y, t) : y;
}

void rlx_lower_attention(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  switch (n->op) {
    case RLX_OP_ATTENTION:
      lower_attention(L, n, in, out);
      return;
    case RLX_OP_ROPE:
      out[0] = rlx_l_rope(L, in[0], rlx_in_type(L, n, 0), in[1], in[2], rlx_in_type(L, n, 1), rlx_node_i(n, "head_dim"),
                          rlx_node_i(n, "n_rot"), 1.0);
      return;
    default:
      rlx_lower_fail(L, RLX_STATUS_INTERNAL, "not an attention op");
  }
}
