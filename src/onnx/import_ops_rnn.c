/* import_ops_rnn.c: ONNX RNN, GRU and LSTM unrolled over their static sequence length into
 * MatMul and elementwise rlx ops. Equations, gate orders and layouts from the ONNX operator docs
 * (RNN-22, GRU-22, LSTM-22): gates are [z, r, h] for GRU and [i, o, f, c] for LSTM; B holds Wb then
 * Rb; X is [S,B,I] (layout 0) or [B,S,I] (layout 1). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "onnx/import_ops_importer.h"

typedef struct rnn_act {
  char name[32];
  double alpha, beta;
  bool has_alpha, has_beta;
} rnn_act;

typedef struct rnn {
  rlx_imp *I;
  const Onnx__NodeProto *n;
  int kind;            /* 0 RNN, 1 GRU, 2 LSTM */
  int64_t S, B, In, H, G, D;
  double clip;         /* 0: none */
  bool lbr;            /* GRU linear_before_reset */
  bool input_forget;   /* LSTM: f = 1 - i */
  rlx_dtype dt;
  rnn_act act[6];      /* per direction: RNN f; GRU f, g; LSTM f, g, h */
} rnn;

static rlx_status *scalar_op(rnn *R, rlx_op op, rlx_value x, double c, rlx_value *y) {
  return imp_with_scalar(R->I, R->n, op, x, c, y);
}

/* The activation functions of the ONNX RNN family. */
static rlx_status *activate(rnn *R, const rnn_act *a, rlx_value x, rlx_value *y) {
  rlx_imp *I = R->I;
  const Onnx__NodeProto *n = R->n;
  const char *f = a->name;
  rlx_value t, m, z;
  if (!strcasecmp(f, "Sigmoid")) return imp_un(I, n, RLX_OP_SIGMOID, x, y);
  if (!strcasecmp(f, "Tanh")) return imp_un(I, n, RLX_OP_TANH, x, y);
  if (!strcasecmp(f, "Relu")) return imp_un(I, n, RLX_OP_RELU, x, y);
  if (!strcasecmp(f, "Softplus")) return imp_un(I, n, RLX_OP_SOFTPLUS, x, y);
  if (!strcasecmp(f, "Affine")) { /* alpha x + beta */
    RLX_TRY(scalar_op(R, RLX_OP_MUL, x, a->has_alpha ? a->alpha : 1, &t));
    return scalar_op(R, RLX_OP_ADD, t, a->has_beta ? a->beta : 0, y);
  }
  if (!strcasecmp(f, "ScaledTanh")) { /* alpha tanh(beta x) */
    RLX_TRY(scalar_op(R, RLX_OP_MUL, x, a->has_beta ? a->beta : 1, &t));
    RLX_TRY(imp_un(I, n, RLX_OP_TANH, t, &t));
    return scalar_op(R, RLX_OP_MUL, t, a->has_alpha ? a->alpha : 1, y);
  }
  if (!strcasecmp(f, "HardSigmoid")) { /* min(max(alpha x + beta, 0), 1) */
    RLX_TRY(scalar_op(R, RLX_OP_MUL, x, a->has_alpha ? a->alpha : 0.2, &t));
    RLX_TRY(scalar_op(R, RLX_OP_ADD, t, a->has_beta ? a->beta : 0.5, &t));
    RLX_TRY(scalar_op(R, RLX_OP_MAX, t, 0, &t));
    return scalar_op(R, RLX_OP_MIN, t, 1, y);
  }
  if (!strcasecmp(f, "LeakyRelu")) { /* x >= 0 ? x : alpha x */
    RLX_TRY(scalar_op(R, RLX_OP_MUL, x, a->has_alpha ? a->alpha : 0.01, &t));
    RLX_TRY(scalar_op(R, RLX_OP_GREATER_EQUAL, x, 0, &m));
    return imp_select(I, n, m, x, t, y);
  }
  if (!strcasecmp(f, "ThresholdedRelu")) { /* x >= alpha ? x : 0 */
    RLX_TRY(scalar_op(R, RLX_OP_GREATER_EQUAL, x, a->has_alpha ? a->alpha : 1, &m));
    RLX_TRY(imp_scalar(I, 0, R->dt, &z));
    return imp_select(I, n, m, x, z, y);
  }
  if (!strcasecmp(f, "Elu")) { /* x >= 0 ? x : alpha (exp(x) - 1) */
    RLX_TRY(imp_un(I, n, RLX_OP_EXP, x, &t));
    RLX_TRY(scalar_op(R, RLX_OP_SUB, t, 1, &t));
    RLX_TRY(scalar_op(R, RLX_OP_MUL, t, a->has_alpha ? a->alpha : 1, &t));
    RLX_TRY(scalar_op(R, RLX_OP_GREATER_EQUAL, x, 0, &m));
    return imp_select(I, n, m, x, t, y);
  }
  if (!strcasecmp(f, "Softsign")) { /* x / (1 + |x|) */
    RLX_TRY(imp_un(I, n, RLX_OP_ABS, x, &t));
    RLX_TRY(scalar_op(R, RLX_OP_ADD, t, 1, &t));
    return imp_bin(I, n, RLX_OP_DIV, x, t, y);
  }
  IMP_FAIL(UNIMPLEMENTED, "recurrent activation '%s'", f);
}

/* Clip (when set) then activate: a gate's pre-activation. */
static rlx_status *gate(rnn *R, int d, int which, rlx_value x, rlx_value *y) {
  if (R->clip > 0) {
    RLX_TRY(scalar_op(R, RLX_OP_MIN, x, R->clip, &x));
    RLX_TRY(scalar_op(R, RLX_OP_MAX, x, -R->clip, &x));
  }
  return activate(R, &R->act[d * (R->kind + 1) + which], x, y);
}

/* Column block g (of H columns) of a [B, G*H] value. */
static rlx_status *block(rnn *R, rlx_value v, int64_t g, rlx_value *y) { return imp_narrow(R->I, R->n, v, 1, g * R->H, R->H, y); }

/* Input k (a per-direction [D, ...] tensor) for direction d, reshaped to dims. */
static rlx_status *per_dir(rnn *R, size_t k, int64_t d, int64_t axis, int rank, const int64_t *dims, rlx_value *y) {
  rlx_value v;
  RLX_TRY(imp_in(R->I, R->n, k, &v));
  RLX_TRY(imp_narrow(R->I, R->n, v, axis, d, 1, &v));
  return imp_reshape(R->I, R->n, v, rank, dims, y);
}

/* One direction over the sequence: Y [S,1,B,H], final H (and C for LSTM) [1,B,H]. */
static rlx_status *direction(rnn *R, rlx_value X, int64_t d, bool reverse, rlx_value *Y, rlx_value *Hout, rlx_value *Cout) {
  rlx_imp *I = R->I;
  const Onnx__NodeProto *n = R->n;
  int64_t GH = R->G * R->H, B = R->B, H = R->H;
  int64_t tr[2] = {1, 0};
  rlx_value W, Rm, Wb = 0, Rb = 0, XW, Hs, Cs = 0, P = 0;
  RLX_TRY(per_dir(R, 1, d, 0, 2, (int64_t[]){GH, R->In}, &W));
  RLX_TRY(per_dir(R, 2, d, 0, 2, (int64_t[]){GH, H}, &Rm));
  RLX_TRY(imp_transpose(I, n, W, 2, tr, &W));
  RLX_TRY(imp_transpose(I, n, Rm, 2, tr, &Rm));
  bool bias = imp_has(n, 3);
  if (bias) {
    rlx_value b;
    RLX_TRY(per_dir(R, 3, d, 0, 1, (int64_t[]){2 * GH}, &b));
    RLX_TRY(imp_narrow(I, n, b, 0, 0, GH, &Wb));
    RLX_TRY(imp_narrow(I, n, b, 0, GH, GH, &Rb));
  }
  /* the input projection of every step at once: [S,B,I] @ [I,GH] (+ Wb) */
  RLX_TRY(imp_bin(I, n, RLX_OP_MATMUL, X, W, &XW));
  if (bias) RLX_TRY(imp_bin(I, n, RLX_OP_ADD, XW, Wb, &XW));
  int64_t bh[2] = {B, H};
  int64_t hax = imp_attr_i(n, "layout", 0) ? 1 : 0; /* the direction axis of initial_h/c */
  rlx_value zeros;
  RLX_TRY(imp_filled(I, n, 0, R->dt, 2, bh, &zeros));
  Hs = zeros;
  if (imp_has(n, 5)) RLX_TRY(per_dir(R, 5, d, hax, 2, bh, &Hs));
  if (R->kind == 2) {
    Cs = zeros;
    if (imp_has(n, 6)) RLX_TRY(per_dir(R, 6, d, hax, 2, bh, &Cs));
    if (imp_has(n, 7)) RLX_TRY(per_dir(R, 7, d, 0, 1, (int64_t[]){3 * H}, &P));
  }
  rlx_value *ys = malloc(sizeof(rlx_value) * (size_t)R->S);
  if (!ys) return RLX_OOM();
  rlx_status *st = NULL;
  for (int64_t s = 0; !st && s < R->S; s++) {
    int64_t t = reverse ? R->S - 1 - s : s;
    rlx_value xt, hr;
    st = imp_narrow(I, n, XW, 0, t, 1, &xt);
    if (!st) st = imp_reshape(I, n, xt, 2, (int64_t[]){B, GH}, &xt);
    if (!st) st = imp_bin(I, n, RLX_OP_MATMUL, Hs, Rm, &hr);
    if (!st && bias) st = imp_bin(I, n, RLX_OP_ADD, hr, Rb, &hr);
    if (st) break;
    if (R->kind == 0) { /* H = f(x W + H R + b) */
      rlx_value g;
      st = imp_bin(I, n, RLX_OP_ADD, xt, hr, &g);
      if (!st) st = gate(R, (int)d, 0, g, &Hs);
    } else if (R->kind == 1) { /* GRU */
      rlx_value xz, xr, xh, hz, hrr, hh, z, r, h, one;
      st = block(R, xt, 0, &xz);
      if (!st) st = block(R, xt, 1, &xr);
      if (!st) st = block(R, xt, 2, &xh);
      if (!st) st = block(R, hr, 0, &hz);
      if (!st) st = block(R, hr, 1, &hrr);
      if (!st) st = imp_bin(I, n, RLX_OP_ADD, xz, hz, &z);
      if (!st) st = gate(R, (int)d, 0, z, &z);
      if (!st) st = imp_bin(I, n, RLX_OP_ADD, xr, hrr, &r);
      if (!st) st = gate(R, (int)d, 0, r, &r);
      if (!st && R->lbr) { /* h = g(x Wh + r (H Rh + Rbh) + Wbh) */
        st = block(R, hr, 2, &hh);
        if (!st) st = imp_bin(I, n, RLX_OP_MUL, r, hh, &hh);
      } else if (!st) { /* h = g(x Wh + (r H) Rh + Rbh + Wbh) */
        rlx_value rh, Rh;
        st = imp_bin(I, n, RLX_OP_MUL, r, Hs, &rh);
        if (!st) st = imp_narrow(I, n, Rm, 1, 2 * H, H, &Rh);
        if (!st) st = imp_bin(I, n, RLX_OP_MATMUL, rh, Rh, &hh);
        if (!st && bias) {
          rlx_value rbh;
          st = imp_narrow(I, n, Rb, 0, 2 * H, H, &rbh);
          if (!st) st = imp_bin(I, n, RLX_OP_ADD, hh, rbh, &hh);
        }
      }
      if (!st) st = imp_bin(I, n, RLX_OP_ADD, xh, hh, &h);
      if (!st) st = gate(R, (int)d, 1, h, &h);
      /* H = (1 - z) h + z H = h + z (H - h) */
      if (!st) st = imp_bin(I, n, RLX_OP_SUB, Hs, h, &one);
      if (!st) st = imp_bin(I, n, RLX_OP_MUL, z, one, &one);
      if (!st) st = imp_bin(I, n, RLX_OP_ADD, h, one, &Hs);
    } else { /* LSTM */
      rlx_value g, gi, go, gf, gc, i, o, f, c, p, tmp;
      st = imp_bin(I, n, RLX_OP_ADD, xt, hr, &g);
      if (!st) st = block(R, g, 0, &gi);
      if (!st) st = block(R, g, 1, &go);
      if (!st) st = block(R, g, 2, &gf);
      if (!st) st = block(R, g, 3, &gc);
      if (!st && P) { /* peepholes on the previous cell state: i and f */
        st = imp_narrow(I, n, P, 0, 0, H, &p);
        if (!st) st = imp_bin(I, n, RLX_OP_MUL, p, Cs, &tmp);
        if (!st) st = imp_bin(I, n, RLX_OP_ADD, gi, tmp, &gi);
        if (!st) st = imp_narrow(I, n, P, 0, 2 * H, H, &p);
        if (!st) st = imp_bin(I, n, RLX_OP_MUL, p, Cs, &tmp);
        if (!st) st = imp_bin(I, n, RLX_OP_ADD, gf, tmp, &gf);
      }
      if (!st) st = gate(R, (int)d, 0, gi, &i);
      if (!st && R->input_forget) {
        st = scalar_op(R, RLX_OP_MUL, i, -1, &f);
        if (!st) st = scalar_op(R, RLX_OP_ADD, f, 1, &f);
      } else if (!st) {
        st = gate(R, (int)d, 0, gf, &f);
      }
      if (!st) st = gate(R, (int)d, 1, gc, &c);
      if (!st) st = imp_bin(I, n, RLX_OP_MUL, f, Cs, &tmp);
      if (!st) st = imp_bin(I, n, RLX_OP_MUL, i, c, &c);
      if (!st) st = imp_bin(I, n, RLX_OP_ADD, tmp, c, &Cs);
      if (!st && P) { /* the output gate peeks at the new cell state */
        st = imp_narrow(I, n, P, 0, H, H, &p);
        if (!st) st = imp_bin(I, n, RLX_OP_MUL, p, Cs, &tmp);
        if (!st) st = imp_bin(I, n, RLX_OP_ADD, go, tmp, &go);
      }
      if (!st) st = gate(R, (int)d, 0, go, &o);
      if (!st) st = activate(R, &R->act[d * 3 + 2], Cs, &tmp);
      if (!st) st = imp_bin(I, n, RLX_OP_MUL, o, tmp, &Hs);
    }
    if (!st) st = imp_reshape(I, n, Hs, 4, (int64_t[]){1, 1, B, H}, &ys[t]);
  }
  if (!st) st = imp_concat_many(I, n, ys, (size_t)R->S, 0, Y);
  free(ys);
  RLX_TRY(st);
  RLX_TRY(imp_reshape(I, n, Hs, 3, (int64_t[]){1, B, H}, Hout));
  if (R->kind == 2) RLX_TRY(imp_reshape(I, n, Cs, 3, (int64_t[]){1, B, H}, Cout));
  return NULL;
}

static rlx_status *read_acts(rnn *R) {
  static const char *const dflt[3][3] = {{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
  int per = R->kind == 0 ? 1 : R->kind == 1 ? 2 : 3;
  const Onnx__AttributeProto *acts = imp_attr(R->n, "activations");
  size_t nal, nbe;
  const float *al = imp_attr_floats(R->n, "activation_alpha", &nal), *be = imp_attr_floats(R->n, "activation_beta", &nbe);
  if (acts && acts->n_strings != (size_t)(per * R->D))
    IMP_FAIL(INVALID_ARGUMENT, "activations has %zu entries; %lld directions need %lld", acts->n_strings, (long long)R->D, (long long)(per * R->D));
  for (int i = 0; i < per * R->D; i++) {
    rnn_act *a = &R->act[i];
    if (acts) {
      size_t l = acts->strings[i].len < sizeof a->name - 1 ? acts->strings[i].len : sizeof a->name - 1;
      memcpy(a->name, acts->strings[i].data, l);
      a->name[l] = '\0';
    } else {
      strcpy(a->name, dflt[R->kind][i % per]);
    }
    a->has_alpha = (size_t)i < nal, a->has_beta = (size_t)i < nbe;
    a->alpha = a->has_alpha ? al[i] : 0, a->beta = a->has_beta ? be[i] : 0;
  }
  return NULL;
}

static rlx_status *recurrent(rlx_imp *I, const Onnx__NodeProto *n, int kind) {
  rlx_type tx;
  RLX_TRY(imp_in_type(I, n, 0, true, &tx));
  bool batch_first = imp_attr_i(n, "layout", 0) != 0;
  if (tx.rank != 3) IMP_FAIL(INVALID_ARGUMENT, "X must have rank 3, got %s", RLX_TYPE_STR(&tx));
  char db[32];
  const char *dir = imp_attr_s(n, "direction", "forward", db, sizeof db);
  if (strcmp(dir, "forward") && strcmp(dir, "reverse") && strcmp(dir, "bidirectional")) IMP_FAIL(INVALID_ARGUMENT, "direction '%s'", dir);
  rnn R = {.I = I, .n = n, .kind = kind, .S = tx.dims[batch_first ? 1 : 0], .B = tx.dims[batch_first ? 0 : 1], .In = tx.dims[2],
           .H = imp_attr_i(n, "hidden_size", 0), .G = kind == 0 ? 1 : kind == 1 ? 3 : 4, .D = strcmp(dir, "bidirectional") ? 1 : 2,
           .clip = imp_attr_f(n, "clip", 0), .lbr = imp_attr_i(n, "linear_before_reset", 0) != 0,
           .input_forget = imp_attr_i(n, "input_forget", 0) != 0, .dt = tx.dtype};
  if (R.H <= 0) IMP_FAIL(INVALID_ARGUMENT, "hidden_size must be positive");
  if (R.S == 0) IMP_FAIL(UNIMPLEMENTED, "an empty sequence");
  RLX_TRY(read_acts(&R));
  if (imp_has(n, 4)) { /* sequence_lens: only the full length of every batch entry is supported */
    const rlx_tensor *sl = imp_const(I, n, 4);
    for (int64_t i = 0; sl && i < rlx_tensor_numel(sl); i++)
      if ((int64_t)rlx_tensor_get_f64(sl, i) != R.S) sl = NULL;
    if (!sl) IMP_FAIL(UNIMPLEMENTED, "sequence_lens shorter than the sequence (or not known at import time)");
  }
  rlx_value X;
  RLX_TRY(imp_in(I, n, 0, &X));
  int64_t p3[3] = {1, 0, 2};
  if (batch_first) RLX_TRY(imp_transpose(I, n, X, 3, p3, &X));
  rlx_value Y[2], Hn[2], Cn[2] = {0, 0};
  for (int64_t d = 0; d < R.D; d++)
    RLX_TRY(direction(&R, X, d, d == 1 || !strcmp(dir, "reverse"), &Y[d], &Hn[d], &Cn[d]));
  rlx_attr a1 = RLX_ATTR_I("axis", 1), a0 = RLX_ATTR_I("axis", 0);
  rlx_value y = Y[0], yh = Hn[0], yc = Cn[0];
  if (R.D == 2) {
    RLX_TRY(imp_add(I, n, RLX_OP_CONCAT, 2, Y, 1, &a1, &y));
    RLX_TRY(imp_add(I, n, RLX_OP_CONCAT, 2, Hn, 1, &a0, &yh));
    if (kind == 2) RLX_TRY(imp_add(I, n, RLX_OP_CONCAT, 2, Cn, 1, &a0, &yc));
  }
  if (batch_first) { /* Y [B,S,D,H]; Y_h, Y_c [B,D,H] */
    int64_t p4[4] = {2, 0, 1, 3};
    RLX_TRY(imp_transpose(I, n, y, 4, p4, &y));
    RLX_TRY(imp_transpose(I, n, yh, 3, p3, &yh));
    if (kind == 2) RLX_TRY(imp_transpose(I, n, yc, 3, p3, &yc));
  }
  RLX_TRY(imp_out(I, n, 0, y));
  RLX_TRY(imp_out(I, n, 1, yh));
  return kind == 2 ? imp_out(I, n, 2, yc) : NULL;
}

rlx_status *rlx_onnx_map_rnn(rlx_imp *I, const Onnx__NodeProto *n) { return recurrent(I, n, 0); }
rlx_status *rlx_onnx_map_gru(rlx_imp *I, const Onnx__NodeProto *n) { return recurrent(I, n, 1); }
rlx_status *rlx_onnx_map_lstm(rlx_imp *I, const Onnx__NodeProto *n) { return recurrent(I, n, 2); }
