/* import_ops_stateful.c: ONNX-27 sequence ops that carry a state: CausalConvWithState (a
 * depthwise rlx Conv over [past_state, input]) and LinearAttention (its recurrence unrolled over
 * the static sequence length with MatMul and elementwise ops). Semantics from the ONNX operator
 * docs and the ONNX reference implementation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/import_ops_importer.h"

/* CausalConvWithState(input [B,C,L], weight [C,1,k], [bias], [past_state [B,C,k-1]]):
 * padded = concat(past_state or zeros, input) along the length; output = depthwise conv of
 * padded without padding (length L), plus bias, then silu/swish when asked; present_state = the
 * last k-1 positions of padded. */
rlx_status *rlx_onnx_map_causal_conv_with_state(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type tx, tw;
  RLX_TRY(imp_in_type(I, n, 0, true, &tx));
  RLX_TRY(imp_in_type(I, n, 1, true, &tw));
  if (tx.rank != 3 || tw.rank != 3 || tw.dims[0] != tx.dims[1] || tw.dims[1] != 1 || tw.dims[2] < 1)
    IMP_FAIL(INVALID_ARGUMENT, "input %s and weight %s must be [B,C,L] and [C,1,k]", RLX_TYPE_STR(&tx), RLX_TYPE_STR(&tw));
  char ab[16];
  const char *act = imp_attr_s(n, "activation", "none", ab, sizeof ab);
  bool silu = !strcmp(act, "silu") || !strcmp(act, "swish");
  if (!silu && strcmp(act, "none")) IMP_FAIL(INVALID_ARGUMENT, "activation '%s' (expected silu, swish or none)", act);
  int64_t B = tx.dims[0], C = tx.dims[1], L = tx.dims[2], k = tw.dims[2];
  rlx_value x, w, past, padded, y, in[3];
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(imp_in(I, n, 1, &w));
  if (imp_has(n, 3)) {
    RLX_TRY(imp_in(I, n, 3, &past));
  } else {
    RLX_TRY(imp_filled(I, n, 0, tx.dtype, 3, (int64_t[]){B, C, k - 1}, &past));
  }
  rlx_attr ax = RLX_ATTR_I("axis", 2);
  rlx_value parts[2] = {past, x};
  RLX_TRY(imp_add(I, n, RLX_OP_CONCAT, 2, parts, 1, &ax, &padded));
  in[0] = padded, in[1] = w;
  size_t nin = 2;
  if (imp_has(n, 2)) RLX_TRY(imp_in(I, n, 2, &in[nin++]));
  rlx_attr ca = RLX_ATTR_I("group", C);
  RLX_TRY(imp_add(I, n, RLX_OP_CONV, nin, in, 1, &ca, &y));
  if (silu) RLX_TRY(imp_un(I, n, RLX_OP_SILU, y, &y));
  RLX_TRY(imp_out(I, n, 0, y));
  rlx_value st;
  RLX_TRY(imp_narrow(I, n, padded, 2, L, k - 1, &st));
  return imp_out(I, n, 1, st);
}

typedef struct lin_att {
  rlx_value q, k, v, g, beta;
  int64_t B, T, Hq, Hkv, G, dk, dv, gl, bl;
  double scale;
  bool gated, delta;
} lin_att;

/* The unrolled steps: updates *Sp, writes o_t [B,1,Hq dv] to outs[t]. */
static rlx_status *lin_att_steps(rlx_imp *I, const Onnx__NodeProto *n, const lin_att *A, rlx_value *Sp, rlx_value *outs) {
  rlx_value S = *Sp, q = A->q, k = A->k, v = A->v, g = A->g, beta = A->beta;
  int64_t B = A->B, Hq = A->Hq, Hkv = A->Hkv, G = A->G, dk = A->dk, dv = A->dv, gl = A->gl, bl = A->bl;
  bool gated = A->gated, delta = A->delta;
  double scale = A->scale;
  for (int64_t t = 0; t < A->T; t++) {
    rlx_value qt, kt, kc, vt, o;
    RLX_TRY(imp_narrow(I, n, q, 1, t, 1, &qt));
    RLX_TRY(imp_reshape(I, n, qt, 4, (int64_t[]){B, Hkv, G, dk}, &qt));
    RLX_TRY(imp_narrow(I, n, k, 1, t, 1, &kt));
    RLX_TRY(imp_reshape(I, n, kt, 4, (int64_t[]){B, Hkv, 1, dk}, &kt));
    RLX_TRY(imp_reshape(I, n, kt, 4, (int64_t[]){B, Hkv, dk, 1}, &kc));
    RLX_TRY(imp_narrow(I, n, v, 1, t, 1, &vt));
    RLX_TRY(imp_reshape(I, n, vt, 4, (int64_t[]){B, Hkv, 1, dv}, &vt));
    if (gated) {
      rlx_value gt;
      RLX_TRY(imp_narrow(I, n, g, 1, t, 1, &gt));
      RLX_TRY(imp_reshape(I, n, gt, 4, (int64_t[]){B, Hkv, gl == Hkv ? 1 : dk, 1}, &gt));
      RLX_TRY(imp_bin(I, n, RLX_OP_MUL, S, gt, &S));
    }
    if (delta) {
      rlx_value r, bt;
      RLX_TRY(imp_bin(I, n, RLX_OP_MATMUL, kt, S, &r)); /* S^T k: [B,Hkv,1,dv] */
      RLX_TRY(imp_bin(I, n, RLX_OP_SUB, vt, r, &vt));
      RLX_TRY(imp_narrow(I, n, beta, 1, t, 1, &bt));
      RLX_TRY(imp_reshape(I, n, bt, 4, (int64_t[]){B, bl, 1, 1}, &bt));
      RLX_TRY(imp_bin(I, n, RLX_OP_MUL, vt, bt, &vt));
    }
    rlx_value kv;
    RLX_TRY(imp_bin(I, n, RLX_OP_MUL, kc, vt, &kv));
    RLX_TRY(imp_bin(I, n, RLX_OP_ADD, S, kv, &S));
    RLX_TRY(imp_bin(I, n, RLX_OP_MATMUL, qt, S, &o)); /* [B,Hkv,G,dv] */
    RLX_TRY(imp_with_scalar(I, n, RLX_OP_MUL, o, scale, &o));
    RLX_TRY(imp_reshape(I, n, o, 3, (int64_t[]){B, 1, Hq * dv}, &outs[t]));
  }
  *Sp = S;
  return NULL;
}

/* LinearAttention (ONNX-27) over q [B,T,Hq dk], k [B,T,Hkv dk], v [B,T,Hkv dv], state S
 * [B,Hkv,dk,dv] (past_state or zeros), per step t: gated rules decay S by exp(g_t) (per key dim
 * or per head); delta rules replace v_t by beta_t (v_t - S^T k_t); S += k_t (x) v_t; the output
 * o_t = scale q_t^T S with query head j reading kv head j / (Hq / Hkv). float16/bfloat16 inputs are
 * computed in float32. */
rlx_status *rlx_onnx_map_linear_attention(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type tq, tk, tv;
  RLX_TRY(imp_in_type(I, n, 0, true, &tq));
  RLX_TRY(imp_in_type(I, n, 1, true, &tk));
  RLX_TRY(imp_in_type(I, n, 2, true, &tv));
  int64_t Hq = imp_attr_i(n, "q_num_heads", 0), Hkv = imp_attr_i(n, "kv_num_heads", 0);
  char rb[16];
  const char *rule = imp_attr_s(n, "update_rule", "gated_delta", rb, sizeof rb);
  bool gated = !strcmp(rule, "gated") || !strcmp(rule, "gated_delta"), delta = !strcmp(rule, "delta") || !strcmp(rule, "gated_delta");
  if (!gated && !delta && strcmp(rule, "linear")) IMP_FAIL(INVALID_ARGUMENT, "update_rule '%s'", rule);
  if (Hq <= 0 || Hkv <= 0 || Hq % Hkv || tq.rank != 3 || tk.rank != 3 || tv.rank != 3 || tq.dims[2] % Hq || tv.dims[2] % Hkv)
    IMP_FAIL(INVALID_ARGUMENT, "heads %lld/%lld do not fit query %s, key %s, value %s", (long long)Hq, (long long)Hkv, RLX_TYPE_STR(&tq),
             RLX_TYPE_STR(&tk), RLX_TYPE_STR(&tv));
  if (gated != imp_has(n, 4) || delta != imp_has(n, 5)) IMP_FAIL(INVALID_ARGUMENT, "update_rule '%s' needs %s decay and %s beta", rule,
                                                                gated ? "a" : "no", delta ? "a" : "no");
  int64_t B = tq.dims[0], T = tq.dims[1], dk = tq.dims[2] / Hq, dv = tv.dims[2] / Hkv, G = Hq / Hkv;
  if (tk.dims[2] != Hkv * dk) IMP_FAIL(INVALID_ARGUMENT, "key %s must hold %lld heads of %lld", RLX_TYPE_STR(&tk), (long long)Hkv, (long long)dk);
  double scale = imp_attr_f(n, "scale", 0);
  if (scale == 0) scale = 1 / sqrt((double)dk);
  rlx_dtype ft = tq.dtype == RLX_DTYPE_F64 ? RLX_DTYPE_F64 : RLX_DTYPE_F32;
  rlx_value q, k, v, S, g = 0, beta = 0;
  int64_t gl = 0, bl = 0; /* decay per head (Hkv) or per key dim; beta per head or shared (1) */
  RLX_TRY(imp_in(I, n, 0, &q));
  RLX_TRY(imp_in(I, n, 1, &k));
  RLX_TRY(imp_in(I, n, 2, &v));
  RLX_TRY(imp_cast(I, n, q, ft, &q));
  RLX_TRY(imp_cast(I, n, k, ft, &k));
  RLX_TRY(imp_cast(I, n, v, ft, &v));
  rlx_dtype state_dt = tq.dtype;
  int64_t sd[4] = {B, Hkv, dk, dv};
  if (imp_has(n, 3)) {
    RLX_TRY(imp_in(I, n, 3, &S));
    state_dt = imp_type(I, S)->dtype;
    RLX_TRY(imp_cast(I, n, S, ft, &S));
  } else {
    RLX_TRY(imp_filled(I, n, 0, ft, 4, sd, &S));
  }
  if (gated) {
    RLX_TRY(imp_in(I, n, 4, &g));
    gl = imp_type(I, g)->dims[2];
    if (imp_type(I, g)->rank != 3 || (gl != Hkv && gl != Hkv * dk)) IMP_FAIL(INVALID_ARGUMENT, "decay %s", RLX_TYPE_STR(imp_type(I, g)));
    RLX_TRY(imp_cast(I, n, g, ft, &g));
    RLX_TRY(imp_un(I, n, RLX_OP_EXP, g, &g));
  }
  if (delta) {
    RLX_TRY(imp_in(I, n, 5, &beta));
    bl = imp_type(I, beta)->dims[2];
    if (imp_type(I, beta)->rank != 3 || (bl != Hkv && bl != 1)) IMP_FAIL(INVALID_ARGUMENT, "beta %s", RLX_TYPE_STR(imp_type(I, beta)));
    RLX_TRY(imp_cast(I, n, beta, ft, &beta));
  }
  if (!T) IMP_FAIL(UNIMPLEMENTED, "LinearAttention over an empty sequence");
  if (T > RLX_ONNX_MAX_UNROLL)
    IMP_FAIL(UNIMPLEMENTED, "LinearAttention over %lld tokens (rlx unrolls at most %d at import)", (long long)T, RLX_ONNX_MAX_UNROLL);
  rlx_value *outs = malloc(sizeof(rlx_value) * (size_t)T);
  if (!outs) return RLX_OOM();
  rlx_status *st = lin_att_steps(I, n, &(lin_att){q, k, v, g, beta, B, T, Hq, Hkv, G, dk, dv, gl, bl, scale, gated, delta}, &S, outs);
  rlx_value y;
  if (!st) st = imp_concat_many(I, n, outs, (size_t)T, 1, &y);
  free(outs);
  RLX_TRY(st);
  RLX_TRY(imp_cast(I, n, y, tq.dtype, &y));
  RLX_TRY(imp_cast(I, n, S, state_dt, &S));
  RLX_TRY(imp_out(I, n, 0, y));
  return imp_out(I, n, 1, S);
}
