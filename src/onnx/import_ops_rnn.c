/* import_ops_rnn.c: ONNX RNN, GRU and LSTM unrolled over their static sequence length into
 * MatMul and elementwise rlx ops. Equations, gate orders and layouts from the ONNX operator docs
 * (RNN-22, GRU-22, LSTM-22): gates are [z, r, h] for GRU and [i, o, f, c] for LSTM; B holds Wb then
 * Rb; X is [S,B,I] (layout 0) or [B,S,I] (layout 1). */
#include <stdlib.h>
#include <string.h>

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

/* A recurrent activation function: the ONNX activation of that name (imp_activation). */
static rlx_status *activate(rnn *R, const rnn_act *a, rlx_value x, rlx_value *y) {
  return imp_activation(R->I, R->n, a->name, a->has_alpha ? &a->alpha : NULL, a->has_beta ? &a->beta : NULL, x, y);
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

/* One direction d's weights: the recurrence weights Rm [H, G*H] (transposed), the recurrence bias
 * Rb [G*H] (has_rb: the node has B) and the LSTM peepholes P [3H] (has_p). */
typedef struct rnn_dir {
  int d;
  rlx_value Rm, Rb, P;
  bool has_rb, has_p;
} rnn_dir;

/* RNN: H = f(x W + H R + b); xt = x W + Wb, hr = H R + Rb. */
static rlx_status *rnn_step(rnn *R, const rnn_dir *w, rlx_value xt, rlx_value hr, rlx_value *Hs) {
  rlx_value g;
  RLX_TRY(imp_bin(R->I, R->n, RLX_OP_ADD, xt, hr, &g));
  return gate(R, w->d, 0, g, Hs);
}

/* GRU: z = f(xz + hz), r = f(xr + hr), h = g(xh + r (H Rh + Rbh)) (linear_before_reset) or
 * g(xh + (r H) Rh + Rbh), H = (1 - z) h + z H. */
static rlx_status *gru_step(rnn *R, const rnn_dir *w, rlx_value xt, rlx_value hr, rlx_value *Hs) {
  rlx_imp *I = R->I;
  const Onnx__NodeProto *n = R->n;
  int64_t H = R->H;
  rlx_value xz, xr, xh, hz, hrr, hh, z, r, h, t;
  RLX_TRY(block(R, xt, 0, &xz));
  RLX_TRY(block(R, xt, 1, &xr));
  RLX_TRY(block(R, xt, 2, &xh));
  RLX_TRY(block(R, hr, 0, &hz));
  RLX_TRY(block(R, hr, 1, &hrr));
  RLX_TRY(imp_bin(I, n, RLX_OP_ADD, xz, hz, &z));
  RLX_TRY(gate(R, w->d, 0, z, &z));
  RLX_TRY(imp_bin(I, n, RLX_OP_ADD, xr, hrr, &r));
  RLX_TRY(gate(R, w->d, 0, r, &r));
  if (R->lbr) {
    RLX_TRY(block(R, hr, 2, &hh));
    RLX_TRY(imp_bin(I, n, RLX_OP_MUL, r, hh, &hh));
  } else {
    rlx_value rh, Rh;
    RLX_TRY(imp_bin(I, n, RLX_OP_MUL, r, *Hs, &rh));
    RLX_TRY(imp_narrow(I, n, w->Rm, 1, 2 * H, H, &Rh));
    RLX_TRY(imp_bin(I, n, RLX_OP_MATMUL, rh, Rh, &hh));
    if (w->has_rb) {
      rlx_value rbh;
      RLX_TRY(imp_narrow(I, n, w->Rb, 0, 2 * H, H, &rbh));
      RLX_TRY(imp_bin(I, n, RLX_OP_ADD, hh, rbh, &hh));
    }
  }
  RLX_TRY(imp_bin(I, n, RLX_OP_ADD, xh, hh, &h));
  RLX_TRY(gate(R, w->d, 1, h, &h));
  /* (1 - z) h + z H = h + z (H - h) */
  RLX_TRY(imp_bin(I, n, RLX_OP_SUB, *Hs, h, &t));
  RLX_TRY(imp_bin(I, n, RLX_OP_MUL, z, t, &t));
  return imp_bin(I, n, RLX_OP_ADD, h, t, Hs);
}

/* gate += P[k H : (k+1) H] * C (a peephole). */
static rlx_status *peephole(rnn *R, const rnn_dir *w, int64_t k, rlx_value C, rlx_value *gate_v) {
  rlx_value p;
  RLX_TRY(imp_narrow(R->I, R->n, w->P, 0, k * R->H, R->H, &p));
  RLX_TRY(imp_bin(R->I, R->n, RLX_OP_MUL, p, C, &p));
  return imp_bin(R->I, R->n, RLX_OP_ADD, *gate_v, p, gate_v);
}

/* LSTM: i = f(gi + Pi C), f = f(gf + Pf C) (or 1 - i with input_forget), c = g(gc),
 * C = f C + i c, o = f(go + Po C), H = o h(C). */
static rlx_status *lstm_step(rnn *R, const rnn_dir *w, rlx_value xt, rlx_value hr, rlx_value *Hs, rlx_value *Cs) {
  rlx_imp *I = R->I;
  const Onnx__NodeProto *n = R->n;
  rlx_value g, gi, go, gf, gc, i, o, f, c, t;
  RLX_TRY(imp_bin(I, n, RLX_OP_ADD, xt, hr, &g));
  RLX_TRY(block(R, g, 0, &gi));
  RLX_TRY(block(R, g, 1, &go));
  RLX_TRY(block(R, g, 2, &gf));
  RLX_TRY(block(R, g, 3, &gc));
  if (w->has_p) { /* peepholes on the previous cell state: i and f */
    RLX_TRY(peephole(R, w, 0, *Cs, &gi));
    RLX_TRY(peephole(R, w, 2, *Cs, &gf));
  }
  RLX_TRY(gate(R, w->d, 0, gi, &i));
  if (R->input_forget) {
    RLX_TRY(scalar_op(R, RLX_OP_MUL, i, -1, &f));
    RLX_TRY(scalar_op(R, RLX_OP_ADD, f, 1, &f));
  } else {
    RLX_TRY(gate(R, w->d, 0, gf, &f));
  }
  RLX_TRY(gate(R, w->d, 1, gc, &c));
  RLX_TRY(imp_bin(I, n, RLX_OP_MUL, f, *Cs, &t));
  RLX_TRY(imp_bin(I, n, RLX_OP_MUL, i, c, &c));
  RLX_TRY(imp_bin(I, n, RLX_OP_ADD, t, c, Cs));
  if (w->has_p) RLX_TRY(peephole(R, w, 1, *Cs, &go)); /* the output gate peeks at the new cell state */
  RLX_TRY(gate(R, w->d, 0, go, &o));
  RLX_TRY(activate(R, &R->act[w->d * 3 + 2], *Cs, &t));
  return imp_bin(I, n, RLX_OP_MUL, o, t, Hs);
}

/* Step t: the new H (and C) from the input projection XW [S,B,G*H]; y receives H as [1,1,B,H]. */
static rlx_status *step(rnn *R, const rnn_dir *w, rlx_value XW, int64_t t, rlx_value *Hs, rlx_value *Cs, rlx_value *y) {
  rlx_imp *I = R->I;
  const Onnx__NodeProto *n = R->n;
  rlx_value xt, hr;
  RLX_TRY(imp_narrow(I, n, XW, 0, t, 1, &xt));
  RLX_TRY(imp_reshape(I, n, xt, 2, (int64_t[]){R->B, R->G * R->H}, &xt));
  RLX_TRY(imp_bin(I, n, RLX_OP_MATMUL, *Hs, w->Rm, &hr));
  if (w->has_rb) RLX_TRY(imp_bin(I, n, RLX_OP_ADD, hr, w->Rb, &hr));
  if (R->kind == 0) RLX_TRY(rnn_step(R, w, xt, hr, Hs));
  else if (R->kind == 1) RLX_TRY(gru_step(R, w, xt, hr, Hs));
  else RLX_TRY(lstm_step(R, w, xt, hr, Hs, Cs));
  return imp_reshape(I, n, *Hs, 4, (int64_t[]){1, 1, R->B, R->H}, y);
}

/* One direction over the sequence: Y [S,1,B,H], final H (and C for LSTM) [1,B,H]. */
static rlx_status *direction(rnn *R, rlx_value X, int64_t d, bool reverse, rlx_value *Y, rlx_value *Hout, rlx_value *Cout) {
  rlx_imp *I = R->I;
  const Onnx__NodeProto *n = R->n;
  int64_t GH = R->G * R->H, B = R->B, H = R->H;
  int64_t tr[2] = {1, 0};
  rnn_dir w = {.d = (int)d};
  rlx_value W, Wb, XW, Hs, Cs = 0;
  RLX_TRY(per_dir(R, 1, d, 0, 2, (int64_t[]){GH, R->In}, &W));
  RLX_TRY(per_dir(R, 2, d, 0, 2, (int64_t[]){GH, H}, &w.Rm));
  RLX_TRY(imp_transpose(I, n, W, 2, tr, &W));
  RLX_TRY(imp_transpose(I, n, w.Rm, 2, tr, &w.Rm));
  /* the input projection of every step at once: [S,B,I] @ [I,GH] (+ Wb) */
  RLX_TRY(imp_bin(I, n, RLX_OP_MATMUL, X, W, &XW));
  if (imp_has(n, 3)) {
    rlx_value b;
    RLX_TRY(per_dir(R, 3, d, 0, 1, (int64_t[]){2 * GH}, &b));
    RLX_TRY(imp_narrow(I, n, b, 0, 0, GH, &Wb));
    RLX_TRY(imp_narrow(I, n, b, 0, GH, GH, &w.Rb));
    RLX_TRY(imp_bin(I, n, RLX_OP_ADD, XW, Wb, &XW));
    w.has_rb = true;
  }
  int64_t bh[2] = {B, H};
  int64_t hax = imp_attr_i(n, "layout", 0) ? 1 : 0; /* the direction axis of initial_h/c */
  rlx_value zeros;
  RLX_TRY(imp_filled(I, n, 0, R->dt, 2, bh, &zeros));
  Hs = zeros;
  if (imp_has(n, 5)) RLX_TRY(per_dir(R, 5, d, hax, 2, bh, &Hs));
  if (R->kind == 2) {
    Cs = zeros;
    if (imp_has(n, 6)) RLX_TRY(per_dir(R, 6, d, hax, 2, bh, &Cs));
    if (imp_has(n, 7)) {
      RLX_TRY(per_dir(R, 7, d, 0, 1, (int64_t[]){3 * H}, &w.P));
      w.has_p = true;
    }
  }
  rlx_value *ys = malloc(sizeof(rlx_value) * (size_t)(R->S ? R->S : 1));
  if (!ys) return RLX_OOM();
  rlx_status *st = NULL;
  for (int64_t s = 0; !st && s < R->S; s++) {
    int64_t t = reverse ? R->S - 1 - s : s;
    st = step(R, &w, XW, t, &Hs, &Cs, &ys[t]);
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
  if (R.S > RLX_ONNX_MAX_UNROLL)
    IMP_FAIL(UNIMPLEMENTED, "a sequence of %lld steps (rlx unrolls at most %d at import)", (long long)R.S, RLX_ONNX_MAX_UNROLL);
  RLX_TRY(read_acts(&R));
  if (imp_has(n, 4)) { /* sequence_lens: only the full length of every batch entry is supported */
    const rlx_tensor *sl = imp_const(I, n, 4);
    for (int64_t i = 0; sl && i < rlx_tensor_numel(sl); i++)
      if (imp_tensor_i64(sl, i) != R.S) sl = NULL;
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
