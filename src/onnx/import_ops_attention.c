/* import_ops_attention.c: ONNX Attention (opset 23/24), RotaryEmbedding (23) and
 * RMSNormalization (23), after the ONNX operator documentation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/import_ops.h"

/* [B,S,H*D] -> [B,H,S,D] and back. */
static rlx_status *split_heads(rlx_imp *I, const Onnx__NodeProto *n, rlx_value v, int64_t h, rlx_value *out) {
  const rlx_type *t = imp_type(I, v);
  RLX_TRY(imp_reshape(I, n, v, 4, (int64_t[]){t->dims[0], t->dims[1], h, t->dims[2] / h}, out));
  return imp_transpose(I, n, *out, 4, (int64_t[]){0, 2, 1, 3}, out);
}

static rlx_status *merge_heads(rlx_imp *I, const Onnx__NodeProto *n, rlx_value v, rlx_value *out) {
  const rlx_type *t = imp_type(I, v);
  int64_t dims[3] = {t->dims[0], t->dims[2], t->dims[1] * t->dims[3]};
  RLX_TRY(imp_transpose(I, n, v, 4, (int64_t[]){0, 2, 1, 3}, out));
  return imp_reshape(I, n, *out, 3, dims, out);
}

/* The rlx mask of an ONNX Attention node, built up in steps: kind 0 none, 3 custom (bool), 4 bias. */
typedef struct att_mask {
  int kind;
  rlx_value m;
} att_mask;

/* Adds a bool "may attend" restriction `ok` (broadcastable to the scores). */
static rlx_status *restrict_mask(rlx_imp *I, const Onnx__NodeProto *n, att_mask *am, rlx_value ok, rlx_dtype dt) {
  if (am->kind == 0) {
    am->kind = 3, am->m = ok;
    return NULL;
  }
  if (am->kind == 3) return imp_bin(I, n, RLX_OP_AND, am->m, ok, &am->m);
  rlx_value ninf;
  RLX_TRY(imp_scalar(I, -INFINITY, dt, &ninf));
  return imp_select(I, n, ok, am->m, ninf, &am->m);
}

/* attn_mask (input 3): bool = may attend, float = added; a last dim shorter than the keys is
 * padded with false / -inf; rank < 2 gets a leading 1. */
static rlx_status *input_mask(rlx_imp *I, const Onnx__NodeProto *n, int64_t sk, rlx_dtype dt, att_mask *am) {
  rlx_value m;
  RLX_TRY(imp_in(I, n, 3, &m));
  rlx_type t = *imp_type(I, m);
  bool is_bool = t.dtype == RLX_DTYPE_BOOL;
  if (!is_bool) RLX_TRY(imp_cast(I, n, m, dt, &m));
  if (t.rank < 2) {
    int64_t d[2] = {1, t.rank ? t.dims[0] : 1};
    RLX_TRY(imp_reshape(I, n, m, 2, d, &m));
    t.rank = 2, t.dims[0] = 1, t.dims[1] = d[1];
  }
  int64_t last = t.dims[t.rank - 1];
  if (last >= 0 && sk >= 0 && last < sk) {
    int64_t pads[2 * RLX_MAX_RANK] = {0};
    pads[2 * t.rank - 1] = sk - last;
    rlx_attr a[3] = {RLX_ATTR_IS("pads", (size_t)(2 * t.rank), pads), RLX_ATTR_S("mode", "constant"),
                     RLX_ATTR_F("value", is_bool ? 0.0 : -INFINITY)};
    RLX_TRY(imp_add(I, n, RLX_OP_PAD, 1, &m, 3, a, &m));
  }
  am->kind = is_bool ? 3 : 4, am->m = m;
  return NULL;
}

/* nonpad_kv_seqlen (input 6, [B]): key j of batch b is visible iff j < nonpad[b]. */
static rlx_status *padding_mask(rlx_imp *I, const Onnx__NodeProto *n, int64_t B, int64_t sk, rlx_value *ok) {
  if (sk < 0) IMP_FAIL(UNIMPLEMENTED, "Attention nonpad_kv_seqlen with a symbolic key length");
  RLX_TRY(imp_table_size("the key positions", sizeof(int64_t), 1, &sk, &sk));
  rlx_tensor *t;
  RLX_TRY(rlx_tensor_create(RLX_DTYPE_I64, 1, &sk, NULL, 0, &t));
  for (int64_t j = 0; j < sk; j++) ((int64_t *)rlx_tensor_data(t))[j] = j;
  rlx_value pos, len;
  rlx_status *st = imp_tensor_const(I, t, &pos);
  rlx_tensor_free(t);
  RLX_TRY(st);
  RLX_TRY(imp_in(I, n, 6, &len));
  RLX_TRY(imp_cast(I, n, len, RLX_DTYPE_I64, &len));
  RLX_TRY(imp_reshape(I, n, len, 4, (int64_t[]){B, 1, 1, 1}, &len));
  return imp_bin(I, n, RLX_OP_LESS, pos, len, ok);
}

/* ONNX causal masking is upper-left aligned after the past keys: query i sees key j iff
 * j <= i + past. rlx's "causal" is bottom-right aligned (j <= i + Sk - Sq), the same exactly when
 * the new keys number Sq; otherwise the mask is built here. */
static rlx_status *causal_mask(rlx_imp *I, int64_t sq, int64_t sk, int64_t past, rlx_value *ok) {
  if (sq < 0 || sk < 0) IMP_FAIL(UNIMPLEMENTED, "Attention is_causal with symbolic sequence lengths that differ");
  int64_t cells;
  RLX_TRY(imp_table_size("the causal mask", 1, 2, (int64_t[]){sq, sk}, &cells));
  rlx_tensor *t;
  RLX_TRY(rlx_tensor_create(RLX_DTYPE_BOOL, 2, (int64_t[]){sq, sk}, NULL, 0, &t));
  unsigned char *p = rlx_tensor_data(t);
  for (int64_t i = 0; i < sq; i++)
    for (int64_t j = 0; j < sk; j++) p[i * sk + j] = j <= i + past;
  rlx_status *st = imp_tensor_const(I, t, ok);
  rlx_tensor_free(t);
  return st;
}

/* Attention(Q, K, V, [attn_mask], [past_key], [past_value], [nonpad_kv_seqlen]) -> Y,
 * [present_key], [present_value], [qk_matmul_output]. softmax_precision is not honoured (the
 * softmax runs in Q's dtype). */
static rlx_status *map_attention(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type tq, tk;
  RLX_TRY(imp_in_type(I, n, 0, false, &tq));
  RLX_TRY(imp_in_type(I, n, 1, false, &tk));
  if (tq.rank != 3 && tq.rank != 4) IMP_FAIL(INVALID_ARGUMENT, "Attention Q must be 3-D or 4-D, got %s", RLX_TYPE_STR(&tq));
  bool packed = tq.rank == 3, has_past = imp_has(n, 4);
  if (has_past != imp_has(n, 5)) IMP_FAIL(INVALID_ARGUMENT, "Attention: past_key and past_value go together");
  int64_t hq = packed ? imp_attr_i(n, "q_num_heads", 0) : tq.dims[1], hkv = packed ? imp_attr_i(n, "kv_num_heads", 0) : tk.dims[1];
  if (hq <= 0 || hkv <= 0) IMP_FAIL(INVALID_ARGUMENT, "Attention with 3-D inputs needs q_num_heads and kv_num_heads");
  bool want_present = (n->n_output > 1 && n->output[1][0]) || (n->n_output > 2 && n->output[2][0]);
  rlx_value qkv[3];
  for (size_t i = 0; i < 3; i++) RLX_TRY(imp_in(I, n, i, &qkv[i]));
  bool to4 = packed && (has_past || want_present); /* the caches are [B,H,S,D] */
  for (int i = 0; to4 && i < 3; i++) RLX_TRY(split_heads(I, n, qkv[i], i ? hkv : hq, &qkv[i]));
  int64_t sq = tq.dims[packed ? 1 : 2], sk_new = tk.dims[packed ? 1 : 2], past = 0;
  for (int i = 0; has_past && i < 2; i++) {
    rlx_value in[2];
    RLX_TRY(imp_in(I, n, 4 + (size_t)i, &in[0]));
    in[1] = qkv[1 + i];
    past = imp_type(I, in[0])->dims[2];
    rlx_attr ax = RLX_ATTR_I("axis", 2);
    RLX_TRY(imp_add(I, n, RLX_OP_CONCAT, 2, in, 1, &ax, &qkv[1 + i]));
  }
  int64_t sk = past >= 0 && sk_new >= 0 ? past + sk_new : -1;
  RLX_TRY(imp_out(I, n, 1, qkv[1]));
  RLX_TRY(imp_out(I, n, 2, qkv[2]));
  att_mask am = {0};
  if (imp_has(n, 3)) RLX_TRY(input_mask(I, n, sk, tq.dtype, &am));
  if (imp_has(n, 6)) {
    rlx_value ok;
    RLX_TRY(padding_mask(I, n, tq.dims[0], sk, &ok));
    RLX_TRY(restrict_mask(I, n, &am, ok, tq.dtype));
  }
  const char *kind = "none";
  if (imp_attr_i(n, "is_causal", 0)) {
    if (am.kind == 0 && sq == sk_new) {
      kind = "causal";
    } else {
      rlx_value ok;
      RLX_TRY(causal_mask(I, sq, sk, past, &ok));
      RLX_TRY(restrict_mask(I, n, &am, ok, tq.dtype));
    }
  }
  if (am.kind) kind = am.kind == 3 ? "custom" : "bias";
  int64_t mode = imp_attr_i(n, "qk_matmul_output_mode", 0);
  bool want_qk = n->n_output > 3 && n->output[3][0];
  if (want_qk && (mode < 0 || mode > 3)) IMP_FAIL(INVALID_ARGUMENT, "Attention qk_matmul_output_mode %lld", (long long)mode);
  static const char *stages[] = {"raw", "capped", "masked", "probs"};
  rlx_attr a[6] = {RLX_ATTR_I("num_heads", hq), RLX_ATTR_I("num_kv_heads", hkv), RLX_ATTR_S("mask", kind),
                   RLX_ATTR_F("softcap", imp_attr_f(n, "softcap", 0)), RLX_ATTR_S("scores_output", want_qk ? stages[mode] : "none"),
                   RLX_ATTR_F("score_scale", imp_attr_f(n, "scale", 0))};
  size_t na = imp_attr(n, "scale") ? 6 : 5;
  rlx_value in[4] = {qkv[0], qkv[1], qkv[2], am.m}, out[2];
  RLX_TRY(imp_addn(I, n, RLX_OP_ATTENTION, am.kind ? 4 : 3, in, na, a, 2, out, NULL));
  if (to4) RLX_TRY(merge_heads(I, n, out[0], &out[0]));
  RLX_TRY(imp_out(I, n, 0, out[0]));
  return want_qk ? imp_out(I, n, 3, out[1]) : NULL;
}

/* RotaryEmbedding(X, cos_cache, sin_cache, [position_ids]): with position_ids the caches
 * [max_pos, R/2] are gathered to per-batch tables [B,S,R/2]; without, they are such tables. */
static rlx_status *map_rotary(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type tx;
  RLX_TRY(imp_in_type(I, n, 0, false, &tx));
  int64_t heads = imp_attr_i(n, "num_heads", 0), head_dim = 0;
  if (tx.rank == 3) {
    if (heads <= 0 || tx.dims[2] < 0 || tx.dims[2] % heads)
      IMP_FAIL(INVALID_ARGUMENT, "RotaryEmbedding with 3-D input %s needs num_heads dividing its last dim", RLX_TYPE_STR(&tx));
    head_dim = tx.dims[2] / heads;
  } else if (tx.rank != 4) {
    IMP_FAIL(INVALID_ARGUMENT, "RotaryEmbedding input must be 3-D or 4-D, got %s", RLX_TYPE_STR(&tx));
  }
  rlx_value in[3];
  for (size_t i = 0; i < 3; i++) RLX_TRY(imp_in(I, n, i, &in[i]));
  if (imp_has(n, 3)) {
    rlx_value pos;
    RLX_TRY(imp_in(I, n, 3, &pos));
    for (int i = 1; i < 3; i++) RLX_TRY(imp_bin(I, n, RLX_OP_GATHER, in[i], pos, &in[i]));
  }
  rlx_attr a[3] = {RLX_ATTR_I("head_dim", head_dim), RLX_ATTR_I("n_rot", imp_attr_i(n, "rotary_embedding_dim", 0)),
                   RLX_ATTR_I("interleaved", imp_attr_i(n, "interleaved", 0))};
  rlx_value y;
  RLX_TRY(imp_add(I, n, RLX_OP_ROPE, 3, in, 3, a, &y));
  return imp_out(I, n, 0, y);
}

/* RMSNormalization(X, scale): over dims [axis, rank) (stash_type is not honoured: MLX's rms_norm
 * precision applies). */
static rlx_status *map_rms_norm(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_value y;
  RLX_TRY(imp_trailing_norm(I, n, RLX_OP_RMS_NORM, &y));
  return imp_out(I, n, 0, y);
}

const rlx_onnx_op rlx_onnx_attention_ops[] = {
    {"Attention", 23, map_attention, false},
    {"RotaryEmbedding", 23, map_rotary, false},
    {"RMSNormalization", 23, map_rms_norm, false},
};
const size_t rlx_onnx_attention_ops_len = RLX_ARRAY_LEN(rlx_onnx_attention_ops);
