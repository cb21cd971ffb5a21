/* infer_norm.c: inference for normalization, softmax and attention ops. */
#include "ir/infer_util.h"

/* gamma/beta (inputs first..NIN-1) must be float vectors of length `len`, in x's dtype. */
static rlx_status *affine_params(const rlx_infer_ctx *c, int first, int64_t len) {
  for (int i = first; i < NIN; i++) {
    const rlx_type *t = IN(i);
    if (t->rank != 1 || !rlx_dim_compatible(t->dims[0], len))
      FAIL(INVALID_ARGUMENT, "input %d (%s) must be [%lld], got %s", i, i == first ? "gamma" : "beta", (long long)len, TSTR(t));
    RLX_TRY(infer_same_dtype(c, 0, i));
  }
  return NULL;
}

rlx_status *rlx_infer_norm(rlx_infer_ctx *c) {
  const rlx_type *x = IN(0);
  RLX_TRY(infer_need_float(c, 0));
  *OUT(0) = *x;
  switch (OP) {
    case RLX_OP_LAYER_NORM:
    case RLX_OP_RMS_NORM: {
      if (x->rank < 1) FAIL(INVALID_ARGUMENT, "input 0 must have rank >= 1");
      NORM_AXIS(axis, AI("axis"), x->rank, "axis");
      if (AF("epsilon") < 0) FAIL(INVALID_ARGUMENT, "epsilon must be >= 0");
      return affine_params(c, 1, x->dims[axis]);
    }
    case RLX_OP_LAYER_NORM_2D:
      RLX_TRY(infer_need_rank(c, 0, 4, 4));
      return affine_params(c, 1, x->dims[1]);
    case RLX_OP_GROUP_NORM: {
      if (x->rank < 2) FAIL(INVALID_ARGUMENT, "input 0 must be [N,C,...], got %s", TSTR(x));
      int64_t g = AI("num_groups");
      if (g <= 0 || (x->dims[1] >= 0 && x->dims[1] % g))
        FAIL(INVALID_ARGUMENT, "num_groups %lld must divide the %lld channels", (long long)g, (long long)x->dims[1]);
      return affine_params(c, 1, x->dims[1]);
    }
    case RLX_OP_SOFTMAX:
    case RLX_OP_LOG_SOFTMAX: {
      if (x->rank < 1) FAIL(INVALID_ARGUMENT, "input 0 must have rank >= 1");
      NORM_AXIS(axis, AI("axis"), x->rank, "axis");
      (void)axis;
      return NULL;
    }
    default:
      FAIL(INTERNAL, "not a norm op");
  }
}

static const char *mask_kinds[] = {"none", "causal", "sliding_window", "custom", "bias"};

/* Validates the Attention mask attribute against the input count; *with_input set when a mask
 * tensor is expected. Shared with the fused attention blocks. */
rlx_status *rlx_infer_attention_mask(const char *mask, int64_t window, bool *with_input) {
  int k = -1;
  for (int i = 0; i < 5; i++)
    if (strcmp(mask, mask_kinds[i]) == 0) k = i;
  if (k < 0) FAIL(INVALID_ARGUMENT, "mask '%s' (expected none, causal, sliding_window, custom or bias)", mask);
  if (k == 2 && window <= 0) FAIL(INVALID_ARGUMENT, "sliding_window mask needs window > 0, got %lld", (long long)window);
  *with_input = k >= 3;
  return NULL;
}

static rlx_status *attention(rlx_infer_ctx *c) {
  const rlx_type *q = IN(0), *k = IN(1), *v = IN(2);
  RLX_TRY(infer_need_float(c, 0));
  RLX_TRY(infer_same_dtype(c, 0, 1));
  RLX_TRY(infer_same_dtype(c, 0, 2));
  if (q->rank != 3 && q->rank != 4) FAIL(INVALID_ARGUMENT, "q must be rank 3 [B,S,H*D] or 4 [B,H,S,D], got %s", TSTR(q));
  if (k->rank != q->rank || v->rank != q->rank) FAIL(INVALID_ARGUMENT, "q, k, v ranks differ: %s, %s, %s", TSTR(q), TSTR(k), TSTR(v));
  int64_t hq = AI("num_heads"), hkv = AI("num_kv_heads");
  if (hq <= 0) FAIL(INVALID_ARGUMENT, "num_heads must be > 0");
  if (hkv == 0) hkv = hq;
  if (hkv < 0 || hq % hkv) FAIL(INVALID_ARGUMENT, "num_heads %lld is not a multiple of num_kv_heads %lld", (long long)hq, (long long)hkv);
  int64_t B = q->dims[0], Sq, Sk, D, Dv;
  if (q->rank == 4) {
    if (q->dims[1] != hq || k->dims[1] != hkv || v->dims[1] != hkv)
      FAIL(INVALID_ARGUMENT, "head counts: q %s, k %s, v %s but num_heads %lld, num_kv_heads %lld", TSTR(q), TSTR(k), TSTR(v),
           (long long)hq, (long long)hkv);
    Sq = q->dims[2], Sk = k->dims[2], D = q->dims[3], Dv = v->dims[3];
    if (!rlx_dim_compatible(k->dims[3], D) || !rlx_dim_compatible(v->dims[2], Sk))
      FAIL(INVALID_ARGUMENT, "k %s / v %s do not match q %s", TSTR(k), TSTR(v), TSTR(q));
  } else {
    Sq = q->dims[1], Sk = k->dims[1];
    if (q->dims[2] < 0 || k->dims[2] < 0 || v->dims[2] < 0) FAIL(INVALID_ARGUMENT, "packed head dims must be static");
    if (q->dims[2] % hq || k->dims[2] % hkv || v->dims[2] % hkv)
      FAIL(INVALID_ARGUMENT, "packed dims %s, %s, %s are not multiples of the head counts", TSTR(q), TSTR(k), TSTR(v));
    D = q->dims[2] / hq, Dv = v->dims[2] / hkv;
    if (k->dims[2] / hkv != D || !rlx_dim_compatible(v->dims[1], Sk))
      FAIL(INVALID_ARGUMENT, "k %s / v %s do not match q %s", TSTR(k), TSTR(v), TSTR(q));
  }
  if (!rlx_dim_compatible(k->dims[0], B) || !rlx_dim_compatible(v->dims[0], B)) FAIL(INVALID_ARGUMENT, "batch sizes differ");
  bool with_input;
  RLX_TRY(rlx_infer_attention_mask(AS("mask"), AI("window"), &with_input));
  if (with_input != (NIN == 4))
    FAIL(INVALID_ARGUMENT, "mask '%s' %s a 4th input, got %d inputs", AS("mask"), with_input ? "needs" : "takes no", NIN);
  if (with_input) {
    const rlx_type *m = IN(3);
    if (m->rank < 2 || m->rank > 4) FAIL(INVALID_ARGUMENT, "mask must have rank 2..4, got %s", TSTR(m));
    rlx_type full = {.rank = 4, .dims = {B, hq, Sq, Sk}}, t;
    RLX_TRY(rlx_shape_broadcast(&full, m, &t));
    if (t.rank != 4 || !rlx_dim_compatible(t.dims[2], Sq) || !rlx_dim_compatible(t.dims[3], Sk) || !rlx_dim_compatible(t.dims[1], hq) ||
        !rlx_dim_compatible(t.dims[0], B))
      FAIL(INVALID_ARGUMENT, "mask %s does not broadcast to [B,H,Sq,Sk] = %s", TSTR(m), TSTR(&full));
  }
  if (AF("softcap") < 0) FAIL(INVALID_ARGUMENT, "softcap must be >= 0");
  *OUT(0) = *q;
  if (q->rank == 4) OUT(0)->dims[3] = Dv;
  else OUT(0)->dims[2] = hq * Dv;
  return NULL;
}

/* Rope: x[..,S,D] or packed [..,S,H*D]; cos/sin [S', R/2] with S' >= S. */
rlx_status *rlx_infer_rope_shapes(const rlx_infer_ctx *c, int64_t head_dim, int64_t n_rot) {
  const rlx_type *x = IN(0);
  RLX_TRY(infer_need_float(c, 0));
  RLX_TRY(infer_same_dtype(c, 0, 1));
  RLX_TRY(infer_same_dtype(c, 0, 2));
  if (x->rank < 2) FAIL(INVALID_ARGUMENT, "x must have rank >= 2 [..,S,D], got %s", TSTR(x));
  int64_t last = x->dims[x->rank - 1], S = x->dims[x->rank - 2];
  if (last < 0) FAIL(INVALID_ARGUMENT, "the last dim of x must be static");
  int64_t D = head_dim ? head_dim : last;
  if (D <= 0 || last % D) FAIL(INVALID_ARGUMENT, "head_dim %lld does not divide the last dim %lld", (long long)D, (long long)last);
  int64_t R = n_rot ? n_rot : D;
  if (R <= 0 || R > D || R % 2) FAIL(INVALID_ARGUMENT, "n_rot %lld must be even and in (0, %lld]", (long long)R, (long long)D);
  for (int i = 1; i < 3; i++) {
    const rlx_type *t = IN(i);
    if (t->rank != 2 || (t->dims[1] >= 0 && t->dims[1] < R / 2) || (t->dims[0] >= 0 && S >= 0 && t->dims[0] < S))
      FAIL(INVALID_ARGUMENT, "input %d (%s) must be [>=%lld, >=%lld], got %s", i, i == 1 ? "cos" : "sin", (long long)S,
           (long long)(R / 2), TSTR(t));
  }
  return NULL;
}

rlx_status *rlx_infer_attention(rlx_infer_ctx *c) {
  switch (OP) {
    case RLX_OP_ATTENTION:
      return attention(c);
    case RLX_OP_ROPE:
      RLX_TRY(rlx_infer_rope_shapes(c, AI("head_dim"), AI("n_rot")));
      *OUT(0) = *IN(0);
      return NULL;
    default:
      FAIL(INTERNAL, "not an attention op");
  }
}
