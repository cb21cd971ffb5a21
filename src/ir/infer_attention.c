/* infer_attention.c: inference for Attention and Rope (and the operand checks the attention
 * gradients and fused attention blocks share). */
#include "ir/infer_util.h"

static const char *mask_kinds[] = {"none", "causal", "sliding_window", "custom", "bias"};

rlx_status *rlx_infer_attention_mask(const char *mask, int64_t window, int *kind, bool *with_input) {
  int k = -1;
  for (int i = 0; i < 5; i++)
    if (strcmp(mask, mask_kinds[i]) == 0) k = i;
  if (k < 0) FAIL(INVALID_ARGUMENT, "mask '%s' (expected none, causal, sliding_window, custom or bias)", mask);
  if (window < 0 || (k == 2 && window == 0))
    FAIL(INVALID_ARGUMENT, "window %lld: sliding_window needs window > 0 (and no mask a negative one)", (long long)window);
  *kind = k;
  *with_input = k >= 3;
  return NULL;
}

rlx_status *rlx_infer_attention_mask_input(const rlx_type *m, int kind, const int64_t *full) {
  if (kind == 3 && m->dtype != RLX_DTYPE_BOOL && !rlx_dtype_is_float(m->dtype) && !rlx_dtype_is_int(m->dtype))
    FAIL(INVALID_ARGUMENT, "a custom mask must be bool or numeric (nonzero = may attend), got %s", rlx_dtype_name(m->dtype));
  if (kind == 4 && !rlx_dtype_is_float(m->dtype))
    FAIL(INVALID_ARGUMENT, "a bias mask must be a float type, got %s", rlx_dtype_name(m->dtype));
  if (m->rank < 2 || m->rank > 4) FAIL(INVALID_ARGUMENT, "the mask must have rank 2..4, got %s", TSTR(m));
  rlx_type want = {.rank = 4}, t;
  memcpy(want.dims, full, 4 * sizeof *full);
  rlx_status *st = rlx_shape_broadcast(&want, m, &t);
  bool ok = !st;
  rlx_status_free(st);
  for (int i = 0; ok && i < 4; i++) ok = rlx_dim_compatible(t.dims[i], full[i]);
  if (!ok) FAIL(INVALID_ARGUMENT, "mask %s does not broadcast to [B,H,Sq,Sk] = %s", TSTR(m), TSTR(&want));
  return NULL;
}

rlx_status *rlx_infer_attention_operands(const rlx_infer_ctx *c, int mask_in, rlx_type *y) {
  const rlx_type *q = IN(0), *k = IN(1), *v = IN(2);
  RLX_TRY(infer_need_float(c, 0));
  RLX_TRY(infer_same_dtype(c, 0, 1));
  RLX_TRY(infer_same_dtype(c, 0, 2));
  if (q->rank != 3 && q->rank != 4) FAIL(INVALID_ARGUMENT, "q must be rank 3 [B,S,H*D] or 4 [B,H,S,D], got %s", TSTR(q));
  if (k->rank != q->rank || v->rank != q->rank) FAIL(INVALID_ARGUMENT, "q, k, v ranks differ: %s, %s, %s", TSTR(q), TSTR(k), TSTR(v));
  int64_t hq = AI("num_heads"), hkv = AI("num_kv_heads");
  if (hq <= 0) FAIL(INVALID_ARGUMENT, "num_heads must be > 0, got %lld", (long long)hq);
  if (hkv == 0) hkv = hq;
  if (hkv < 0 || hq % hkv) FAIL(INVALID_ARGUMENT, "num_heads %lld is not a multiple of num_kv_heads %lld", (long long)hq, (long long)hkv);
  int64_t B = q->dims[0], Sq, Sk, D, Dv;
  if (q->rank == 4) {
    if (!rlx_dim_compatible(q->dims[1], hq) || !rlx_dim_compatible(k->dims[1], hkv) || !rlx_dim_compatible(v->dims[1], hkv))
      FAIL(INVALID_ARGUMENT, "head counts: q %s, k %s, v %s but num_heads %lld, num_kv_heads %lld", TSTR(q), TSTR(k), TSTR(v),
           (long long)hq, (long long)hkv);
    Sq = q->dims[2], Sk = k->dims[2], D = q->dims[3], Dv = v->dims[3];
    if (!rlx_dim_compatible(k->dims[3], D) || !rlx_dim_compatible(v->dims[2], Sk))
      FAIL(INVALID_ARGUMENT, "k %s / v %s do not match q %s", TSTR(k), TSTR(v), TSTR(q));
  } else {
    Sq = q->dims[1], Sk = k->dims[1];
    if (q->dims[2] < 0 || k->dims[2] < 0 || v->dims[2] < 0) FAIL(INVALID_ARGUMENT, "packed head dims must be static");
    if (q->dims[2] % hq || k->dims[2] % hkv || v->dims[2] % hkv)
      FAIL(INVALID_ARGUMENT, "packed dims %s, %s, %s are not multiples of the head counts %lld, %lld", TSTR(q), TSTR(k), TSTR(v),
           (long long)hq, (long long)hkv);
    D = q->dims[2] / hq, Dv = v->dims[2] / hkv;
    if (k->dims[2] / hkv != D || !rlx_dim_compatible(v->dims[1], Sk))
      FAIL(INVALID_ARGUMENT, "k %s / v %s do not match q %s", TSTR(k), TSTR(v), TSTR(q));
  }
  if (!rlx_dim_compatible(k->dims[0], B) || !rlx_dim_compatible(v->dims[0], B))
    FAIL(INVALID_ARGUMENT, "batch sizes differ: q %s, k %s, v %s", TSTR(q), TSTR(k), TSTR(v));
  int kind;
  bool with_input;
  RLX_TRY(rlx_infer_attention_mask(AS("mask"), AI("window"), &kind, &with_input));
  if (with_input != (NIN == mask_in + 1))
    FAIL(INVALID_ARGUMENT, "mask '%s' %s a mask input (input %d), got %d inputs", AS("mask"), with_input ? "needs" : "takes no",
         mask_in, NIN);
  if (with_input) RLX_TRY(rlx_infer_attention_mask_input(IN(mask_in), kind, (int64_t[]){B, hq, Sq, Sk}));
  if (AF("softcap") < 0) FAIL(INVALID_ARGUMENT, "softcap must be >= 0, got %g", AF("softcap"));
  *y = *q;
  if (q->rank == 4) y->dims[3] = Dv;
  else if (!rlx_mul_i64(hq, Dv, &y->dims[2]))
    FAIL(RESOURCE_EXHAUSTED, "the packed output dim num_heads %lld * %lld overflows int64", (long long)hq, (long long)Dv);
  return NULL;
}

/* x[..,S,D] or packed [..,S,H*D]; cos/sin [S',R'] or [B|1,S',R'] with S' >= S, R' >= R/2. */
rlx_status *rlx_infer_rope_shapes(const rlx_infer_ctx *c) {
  const rlx_type *x = IN(0);
  RLX_TRY(infer_need_float(c, 0));
  RLX_TRY(infer_same_dtype(c, 0, 1));
  RLX_TRY(infer_same_dtype(c, 0, 2));
  if (x->rank < 2) FAIL(INVALID_ARGUMENT, "x must have rank >= 2 [..,S,D], got %s", TSTR(x));
  int64_t last = x->dims[x->rank - 1], S = x->dims[x->rank - 2], head_dim = AI("head_dim"), n_rot = AI("n_rot");
  if (last < 0) FAIL(INVALID_ARGUMENT, "the last dim of x must be static, got %s", TSTR(x));
  int64_t D = head_dim ? head_dim : last;
  if (D <= 0 || last % D) FAIL(INVALID_ARGUMENT, "head_dim %lld does not divide the last dim %lld", (long long)D, (long long)last);
  if (D != last && x->rank >= RLX_MAX_RANK) /* viewed as [.., S, H, D] */
    FAIL(UNIMPLEMENTED, "x %s with head_dim %lld is viewed as [..,S,H,D] of rank %d; the limit is %d", TSTR(x), (long long)D,
         x->rank + 1, RLX_MAX_RANK);
  int64_t R = n_rot ? n_rot : D;
  if (R <= 0 || R > D || R % 2) FAIL(INVALID_ARGUMENT, "n_rot %lld must be even and in (0, %lld]", (long long)R, (long long)D);
  if (AI("interleaved") != 0 && AI("interleaved") != 1) FAIL(INVALID_ARGUMENT, "interleaved must be 0 or 1, got %lld", (long long)AI("interleaved"));
  for (int i = 1; i < 3; i++) {
    const rlx_type *t = IN(i);
    const char *what = i == 1 ? "cos" : "sin";
    if (t->rank != 2 && !(t->rank == 3 && x->rank >= 3))
      FAIL(INVALID_ARGUMENT, "input %d (%s) must be [S',R'] (or [B,S',R'] when x has a batch dim), got %s", i, what, TSTR(t));
    int64_t ts = t->dims[t->rank - 2], tr = t->dims[t->rank - 1];
    if ((tr >= 0 && tr < R / 2) || (ts >= 0 && S >= 0 && ts < S))
      FAIL(INVALID_ARGUMENT, "input %d (%s) %s must cover %lld positions and %lld frequencies", i, what, TSTR(t), (long long)S, (long long)(R / 2));
    if (t->rank == 3 && t->dims[0] != 1 && !rlx_dim_compatible(t->dims[0], x->dims[0]))
      FAIL(INVALID_ARGUMENT, "input %d (%s) %s: its batch dim must be 1 or x's %lld", i, what, TSTR(t), (long long)x->dims[0]);
  }
  bool same = IN(1)->rank == IN(2)->rank;
  for (int i = 0; same && i < IN(1)->rank; i++) same = rlx_dim_compatible(IN(1)->dims[i], IN(2)->dims[i]);
  if (!same) FAIL(INVALID_ARGUMENT, "cos %s and sin %s must have the same shape", TSTR(IN(1)), TSTR(IN(2)));
  return NULL;
}

rlx_status *rlx_infer_attention(rlx_infer_ctx *c) {
  switch (OP) {
    case RLX_OP_ATTENTION: {
      RLX_TRY(rlx_infer_attention_operands(c, 3, OUT(0)));
      const char *so = AS("scores_output");
      if (strcmp(so, "none") == 0) return NULL;
      if (strcmp(so, "raw") && strcmp(so, "capped") && strcmp(so, "masked") && strcmp(so, "probs"))
        FAIL(INVALID_ARGUMENT, "scores_output '%s' (expected none, raw, capped, masked or probs)", so);
      const rlx_type *q = IN(0), *k = IN(1);
      bool packed = q->rank == 3;
      c->n_out = 2;
      *OUT(1) = (rlx_type){.dtype = q->dtype, .rank = 4, .dims = {q->dims[0], AI("num_heads"), q->dims[packed ? 1 : 2], k->dims[packed ? 1 : 2]}};
      return NULL;
    }
    case RLX_OP_ROPE:
      RLX_TRY(rlx_infer_rope_shapes(c));
      *OUT(0) = *IN(0);
      return NULL;
    default:
      FAIL(INTERNAL, "not an attention op");
  }
}
