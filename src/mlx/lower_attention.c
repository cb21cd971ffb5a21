/* lower_attention.c: Attention (MLX fast::scaled_dot_product_attention, or a composed path for
 * soft-capping, shared with AttentionBackward) and Rope. */
#include <math.h>
#include <string.h>

#include "mlx/lower.h"

rlx_mx_arr *rlx_l_split_heads(rlx_lower *L, rlx_mx_arr *x, int64_t B, int64_t S, int64_t H, int64_t D) {
  rlx_mx_arr *r = rlx_mx_reshape(L->mx, x, 4, (int64_t[]){B, S, H, D});
  return rlx_mx_transpose(L->mx, r, 4, (int64_t[]){0, 2, 1, 3});
}

rlx_mx_arr *rlx_l_merge_heads(rlx_lower *L, rlx_mx_arr *x, int64_t B, int64_t S, int64_t H, int64_t D) {
  rlx_mx_arr *t = rlx_mx_transpose(L->mx, x, 4, (int64_t[]){0, 2, 1, 3});
  return rlx_mx_reshape(L->mx, t, 3, (int64_t[]){B, S, H * D});
}

rlx_mx_arr *rlx_l_attn_group(rlx_lower *L, const rlx_l_attn *a, rlx_mx_arr *x, int64_t s, int64_t d) {
  return rlx_mx_reshape(L->mx, x, 5, (int64_t[]){a->B, a->hkv, a->hq / a->hkv, s, d});
}

rlx_mx_arr *rlx_l_attn_ungroup(rlx_lower *L, const rlx_l_attn *a, rlx_mx_arr *x, int64_t s, int64_t d) {
  return rlx_mx_reshape(L->mx, x, 4, (int64_t[]){a->B, a->hq, s, d});
}

/* kv operand [B,hkv,s,d] -> [B,hkv,1,s,d], broadcasting over the query heads of its group. */
static rlx_mx_arr *kv_grouped(rlx_lower *L, const rlx_l_attn *a, rlx_mx_arr *x, int64_t d) {
  return rlx_mx_reshape(L->mx, x, 5, (int64_t[]){a->B, a->hkv, 1, a->sk, d});
}

/* The bool "may attend" mask [Sq,Sk] of causal / sliding-window attention, bottom-right aligned:
 * key j is visible to query i when j <= i + (Sk - Sq) (and j >= i + (Sk - Sq) - window). */
static rlx_mx_arr *causal_mask(rlx_lower *L, int64_t sq, int64_t sk, int64_t window) {
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

/* The bool validity mask of the causal, sliding-window and custom kinds; NULL for none / bias. */
static rlx_mx_arr *valid_mask(rlx_lower *L, const rlx_l_attn *a) {
  switch (a->mask_kind) {
    case 1:
    case 2:
      return causal_mask(L, a->sq, a->sk, a->mask_kind == 2 ? a->window : 0);
    case 3:
      return a->mask_dt == RLX_DTYPE_BOOL ? a->mask : rlx_mx_binary(L->mx, RLX_MXB_NOT_EQUAL, a->mask, rlx_mx_scalar(L->mx, 0, a->mask_dt));
    default:
      return NULL;
  }
}

rlx_mx_arr *rlx_l_attention_probs(rlx_lower *L, const rlx_l_attn *a, rlx_mx_arr *q, rlx_mx_arr *k, rlx_mx_arr **stages) {
  rlx_mx *c = L->mx;
  rlx_mx_arr *qs = rlx_mx_binary(c, RLX_MXB_MULTIPLY, q, rlx_mx_scalar(c, a->scale, a->dt));
  rlx_mx_arr *kt = rlx_l_swap(L, kv_grouped(L, a, k, a->d), 5, 3, 4);
  rlx_mx_arr *s = rlx_l_attn_ungroup(L, a, rlx_mx_matmul(c, rlx_l_attn_group(L, a, qs, a->sq, a->d), kt), a->sq, a->sk);
  if (stages) stages[0] = s;
  if (a->softcap > 0) {
    rlx_mx_arr *cap = rlx_mx_scalar(c, a->softcap, a->dt);
    s = rlx_mx_binary(c, RLX_MXB_MULTIPLY, rlx_mx_unary(c, RLX_MXU_TANH, rlx_mx_binary(c, RLX_MXB_DIVIDE, s, cap)), cap);
  }
  if (stages) stages[1] = s;
  if (a->mask_kind == 4) s = rlx_mx_binary(c, RLX_MXB_ADD, s, rlx_mx_astype(c, a->mask, a->dt));
  /* Hidden keys score -inf; a row with no visible key is NaN after softmax and becomes 0 again. */
  rlx_mx_arr *valid = valid_mask(L, a);
  if (valid) s = rlx_mx_where(c, valid, s, rlx_mx_scalar(c, -INFINITY, a->dt));
  if (stages) stages[2] = s;
  rlx_mx_arr *p = rlx_mx_softmax(c, s, 3, true);
  return valid ? rlx_mx_where(c, valid, p, rlx_mx_scalar(c, 0, a->dt)) : p;
}

/* MLX's fused kernel: no soft-capping. MLX aligns "causal" bottom-right like rlx; for Sq > Sk the
 * first rows see no key, where MLX (a bool mask selects a finite minimum) would average every
 * value: such rows (and those of custom masks) are set to 0 explicitly. */
static rlx_mx_arr *fast_attention(rlx_lower *L, const rlx_l_attn *a, rlx_mx_arr *q, rlx_mx_arr *k, rlx_mx_arr *v) {
  rlx_mx *c = L->mx;
  if (a->mask_kind == 0) return rlx_mx_sdpa(c, q, k, v, a->scale, "", NULL);
  if (a->mask_kind == 1 && a->sq <= a->sk) return rlx_mx_sdpa(c, q, k, v, a->scale, "causal", NULL);
  if (a->mask_kind == 4) return rlx_mx_sdpa(c, q, k, v, a->scale, "array", rlx_mx_astype(c, a->mask, a->dt));
  rlx_mx_arr *valid = valid_mask(L, a);
  rlx_mx_arr *y = rlx_mx_sdpa(c, q, k, v, a->scale, "array", valid);
  bool may_be_empty = a->mask_kind == 3 || a->sq > a->sk;
  if (!may_be_empty) return y;
  int last = -1;
  rlx_mx_arr *any = rlx_mx_reduce(c, valid, 7, 1, &last, true);
  return rlx_mx_where(c, any, y, rlx_mx_scalar(c, 0, a->dt));
}

rlx_mx_arr *rlx_l_attention(rlx_lower *L, const rlx_l_attn *a, rlx_mx_arr *q, rlx_mx_arr *k, rlx_mx_arr *v, rlx_mx_arr **scores,
                            int stage) {
  rlx_mx *c = L->mx;
  bool gpu = rlx_mx_get_device(c) == RLX_MX_GPU;
  /* a decode step's few queries: rlx's kernel (MLX's fused kernels take no float32 mask array) */
  if (gpu && a->softcap <= 0 && !scores && a->mask_kind == 4 && a->dt == RLX_DTYPE_F32 && a->sq <= 8 &&
      rlx_mx_attention_bias_cuda_fits(a->sk, a->d, a->dv))
    return rlx_mx_attention_bias_cuda(c, q, k, v, a->mask, a->scale);
  /* MLX's kernels, after k and v where they were written in place (a KV cache, exec_handles.c) */
  if (gpu && !(q = rlx_mx_after_writes(c, q, (rlx_mx_arr *const[]){k, v}, 2))) return NULL;
  if (a->softcap <= 0 && !scores) return fast_attention(L, a, q, k, v);
  rlx_mx_arr *st[3], *p = rlx_l_attention_probs(L, a, q, k, st);
  if (scores) *scores = stage < 3 ? st[stage] : p;
  p = rlx_l_attn_group(L, a, p, a->sq, a->sk);
  return rlx_l_attn_ungroup(L, a, rlx_mx_matmul(c, p, kv_grouped(L, a, v, a->dv)), a->sq, a->dv);
}

/* Index of s in names[0..n), 0 when absent (inference validated it). */
static int kind_of(const char *s, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (strcmp(s, names[i]) == 0) return i;
  return 0;
}

void rlx_l_attn_from_node(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, uint32_t mask_in, rlx_l_attn *a,
                          rlx_mx_arr **qkv) {
  const rlx_type *tq = rlx_in_type(L, n, 0), *tk = rlx_in_type(L, n, 1), *tv = rlx_in_type(L, n, 2);
  int64_t hq = rlx_node_i(n, "num_heads"), hkv = rlx_node_i(n, "num_kv_heads");
  if (!hkv) hkv = hq;
  memset(a, 0, sizeof *a);
  a->B = tq->dims[0], a->hq = hq, a->hkv = hkv, a->dt = tq->dtype;
  a->packed = tq->rank == 3;
  if (a->packed) {
    a->sq = tq->dims[1], a->sk = tk->dims[1], a->d = tq->dims[2] / hq, a->dv = tv->dims[2] / hkv;
    qkv[0] = rlx_l_split_heads(L, in[0], a->B, a->sq, hq, a->d);
    qkv[1] = rlx_l_split_heads(L, in[1], a->B, a->sk, hkv, a->d);
    qkv[2] = rlx_l_split_heads(L, in[2], a->B, a->sk, hkv, a->dv);
  } else {
    a->sq = tq->dims[2], a->sk = tk->dims[2], a->d = tq->dims[3], a->dv = tv->dims[3];
    memcpy(qkv, in, 3 * sizeof *qkv);
  }
  double ss = rlx_node_f(n, "score_scale");
  a->scale = (float)(ss != 0 ? ss : 1.0 / sqrt((double)a->d));
  a->softcap = (float)rlx_node_f(n, "softcap");
  rlx_l_attn_set_mask(L, n, in, (int)mask_in, a);
}

void rlx_l_attn_set_mask(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, int mask_in, rlx_l_attn *a) {
  static const char *kinds[] = {"none", "causal", "sliding_window", "custom", "bias"};
  a->mask_kind = kind_of(rlx_node_s(n, "mask"), kinds, 5);
  a->window = rlx_node_i(n, "window");
  if (mask_in >= 0 && (uint32_t)mask_in < n->n_in) a->mask = in[mask_in], a->mask_dt = rlx_in_type(L, n, (uint32_t)mask_in)->dtype;
}

/* Packed float32 operands on the CPU: rlx's kernel reads them as they are (rlx_mx_sdpa_packed), no
 * split or merge of the heads (five graph nodes fewer). false where that does not apply. */
static bool packed_kernel(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  const rlx_type *tq = rlx_in_type(L, n, 0), *tk = rlx_in_type(L, n, 1);
  if (tq->rank != 3 || tq->dtype != RLX_DTYPE_F32 || rlx_mx_get_device(L->mx) == RLX_MX_GPU || rlx_node_f(n, "softcap") > 0 ||
      strcmp(rlx_node_s(n, "scores_output"), "none"))
    return false;
  const char *mask = rlx_node_s(n, "mask");
  bool none = !strcmp(mask, "none"), bias = !strcmp(mask, "bias"), causal = !strcmp(mask, "causal") && tq->dims[1] <= tk->dims[1];
  if (!none && !bias && !causal) return false;
  int64_t hq = rlx_node_i(n, "num_heads"), hkv = rlx_node_i(n, "num_kv_heads");
  double ss = rlx_node_f(n, "score_scale");
  float scale = (float)(ss != 0 ? ss : 1.0 / sqrt((double)(tq->dims[2] / hq)));
  out[0] = rlx_mx_sdpa_packed(L->mx, in[0], in[1], in[2], hq, hkv ? hkv : hq, scale, none ? "" : bias ? "array" : "causal",
                              bias ? in[3] : NULL);
  return true;
}

static void lower_attention(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  if (packed_kernel(L, n, in, out)) return;
  rlx_l_attn a;
  rlx_mx_arr *qkv[3];
  rlx_l_attn_from_node(L, n, in, 3, &a, qkv);
  static const char *stages[] = {"none", "raw", "capped", "masked", "probs"};
  int stage = kind_of(rlx_node_s(n, "scores_output"), stages, 5);
  rlx_mx_arr *y = rlx_l_attention(L, &a, qkv[0], qkv[1], qkv[2], stage ? &out[1] : NULL, stage - 1);
  out[0] = a.packed ? rlx_l_merge_heads(L, y, a.B, a.sq, a.hq, a.dv) : y;
}

/* cos/sin [S',R'] or [Bc,S',R'] -> [.., S, R/2] shaped to broadcast over x (rank `rank`, packed
 * heads add a size-1 axis before the last). */
static rlx_mx_arr *rope_table(rlx_lower *L, rlx_mx_arr *t, const rlx_type *tt, int rank, int64_t S, int64_t half, bool packed) {
  int64_t lo[3] = {0, 0, 0}, hi[3], st[3] = {1, 1, 1}, dims[RLX_MAX_RANK + 1];
  memcpy(hi, tt->dims, sizeof hi);
  hi[tt->rank - 2] = S, hi[tt->rank - 1] = half;
  rlx_mx_arr *s = rlx_mx_slice(L->mx, t, tt->rank, lo, hi, st);
  for (int i = 0; i < rank; i++) dims[i] = 1;
  if (tt->rank == 3) dims[0] = tt->dims[0];
  dims[rank - 1] = half;
  dims[rank - (packed ? 3 : 2)] = S;
  return rlx_mx_reshape(L->mx, s, rank, dims);
}

rlx_mx_arr *rlx_l_rope(rlx_lower *L, rlx_mx_arr *x, const rlx_type *t, rlx_mx_arr *cs, rlx_mx_arr *sn, const rlx_type *tc,
                       int64_t head_dim, int64_t n_rot, bool interleaved, double sign) {
  rlx_mx *c = L->mx;
  int64_t last = t->dims[t->rank - 1], D = head_dim ? head_dim : last, R = n_rot ? n_rot : D, S = t->dims[t->rank - 2];
  bool packed = D != last;
  /* float32 with tables of one batch: rlx's kernel (CPU or GPU), one node instead of about fifteen */
  if (t->dtype == RLX_DTYPE_F32 && tc->dtype == RLX_DTYPE_F32 && tc->rank == 2)
    return rlx_mx_rope(c, x, cs, sn, D, R, interleaved, (float)sign);
  rlx_type tx = *t;
  if (packed) { /* [.., S, H*D] -> [.., S, H, D] */
    tx.dims[tx.rank - 1] = last / D;
    tx.dims[tx.rank++] = D;
    x = rlx_l_reshape(L, x, &tx);
  }
  rlx_mx_arr *cc = rope_table(L, cs, tc, tx.rank, S, R / 2, packed), *ss = rope_table(L, sn, tc, tx.rank, S, R / 2, packed);
  if (sign < 0) ss = rlx_mx_unary(c, RLX_MXU_NEGATIVE, ss);
  int ax = tx.rank - 1;
  rlx_mx_arr *x1, *x2;
  if (interleaved) { /* x1 = x[.., 0:R:2], x2 = x[.., 1:R:2] */
    int64_t lo[RLX_MAX_RANK + 1] = {0}, hi[RLX_MAX_RANK + 1], st[RLX_MAX_RANK + 1];
    for (int i = 0; i < tx.rank; i++) hi[i] = tx.dims[i], st[i] = 1;
    hi[ax] = R, st[ax] = 2;
    x1 = rlx_mx_slice(c, x, tx.rank, lo, hi, st);
    lo[ax] = 1;
    x2 = rlx_mx_slice(c, x, tx.rank, lo, hi, st);
  } else {
    x1 = rlx_l_narrow(L, x, &tx, ax, 0, R / 2), x2 = rlx_l_narrow(L, x, &tx, ax, R / 2, R / 2);
  }
  rlx_mx_arr *y1 = rlx_mx_binary(c, RLX_MXB_SUBTRACT, rlx_mx_binary(c, RLX_MXB_MULTIPLY, x1, cc), rlx_mx_binary(c, RLX_MXB_MULTIPLY, x2, ss));
  rlx_mx_arr *y2 = rlx_mx_binary(c, RLX_MXB_ADD, rlx_mx_binary(c, RLX_MXB_MULTIPLY, x2, cc), rlx_mx_binary(c, RLX_MXB_MULTIPLY, x1, ss));
  rlx_mx_arr *parts[3] = {y1, y2, NULL}, *rot;
  if (interleaved) { /* [.., R/2, 2] -> [.., R] */
    rlx_type tr = tx;
    tr.dims[ax] = R;
    rot = rlx_l_reshape(L, rlx_mx_stack(c, parts, 2, tx.rank), &tr);
  } else {
    rot = rlx_mx_concatenate(c, parts, 2, ax);
  }
  if (R < D) {
    rlx_mx_arr *whole[2] = {rot, rlx_l_narrow(L, x, &tx, ax, R, D - R)};
    rot = rlx_mx_concatenate(c, whole, 2, ax);
  }
  return packed ? rlx_l_reshape(L, rot, t) : rot;
}

rlx_mx_arr *rlx_l_rope_node(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, double sign) {
  return rlx_l_rope(L, in[0], rlx_in_type(L, n, 0), in[1], in[2], rlx_in_type(L, n, 1), rlx_node_i(n, "head_dim"), rlx_node_i(n, "n_rot"),
                    rlx_node_i(n, "interleaved") != 0, sign);
}

void rlx_lower_attention(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  switch (n->op) {
    case RLX_OP_ATTENTION:
      lower_attention(L, n, in, out);
      return;
    case RLX_OP_ROPE:
      out[0] = rlx_l_rope_node(L, n, in, 1.0);
      return;
    default:
      rlx_lower_fail(L, RLX_STATUS_INTERNAL, "not an attention op");
  }
}
