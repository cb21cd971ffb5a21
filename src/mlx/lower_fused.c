/* lower_fused.c: the fused blocks, composed from the shared lowering helpers (rlx_mx_norm,
 * rlx_l_rope, rlx_l_attention, rlx_l_activation). */
#include <math.h>

#include "mlx/lower.h"

static rlx_mx_arr *opt_in(rlx_mx_arr *const *in, int i) { return i >= 0 ? in[i] : NULL; }

/* x @ w [+ b] */
static rlx_mx_arr *linear(rlx_lower *L, rlx_mx_arr *x, rlx_mx_arr *w, rlx_mx_arr *b) {
  rlx_mx_arr *y = rlx_mx_matmul(L->mx, x, w);
  return b ? rlx_mx_binary(L->mx, RLX_MXB_ADD, y, b) : y;
}

static rlx_mx_arr *residual_norm(rlx_lower *L, const rlx_node *n, const rlx_fused_io *io, rlx_mx_arr *const *in) {
  const rlx_type *t = rlx_in_type(L, n, 0);
  rlx_mx_arr *x = rlx_mx_binary(L->mx, RLX_MXB_ADD, in[io->x], in[io->r]);
  if (io->bias >= 0) x = rlx_mx_binary(L->mx, RLX_MXB_ADD, x, in[io->bias]);
  return rlx_mx_norm(L->mx, n->op == RLX_OP_FUSED_RESIDUAL_RMS_NORM, x, t->rank - 1, in[io->gamma], opt_in(in, io->beta),
                     (float)rlx_node_f(n, "epsilon"));
}

/* float32: rlx_mx_swiglu (on the CPU rlx's kernel, one node; on a GPU MLX's ops that a float16
 * product reading it once forms itself); else slices, SiLU and a multiply. */
static rlx_mx_arr *swiglu(rlx_lower *L, const rlx_node *n, rlx_mx_arr *x) {
  const rlx_type *t = rlx_in_type(L, n, 0);
  int ax = t->rank - 1;
  int64_t half = t->dims[ax] / 2;
  bool gate_first = rlx_node_i(n, "gate_first") != 0;
  rlx_mx_arr *y;
  if (t->dtype == RLX_DTYPE_F32) {
    y = rlx_mx_swiglu(L->mx, x, gate_first);
  } else {
    rlx_mx_arr *lo = rlx_l_narrow(L, x, t, ax, 0, half), *hi = rlx_l_narrow(L, x, t, ax, half, half);
    rlx_mx_arr *gate = gate_first ? lo : hi, *up = gate_first ? hi : lo;
    y = rlx_mx_binary(L->mx, RLX_MXB_MULTIPLY, up, rlx_l_unary(L, RLX_OP_SILU, gate, t->dtype));
  }
  int64_t to = rlx_node_i(n, "cast_to");
  return to >= 0 ? rlx_mx_astype(L->mx, y, (rlx_dtype)to) : y;
}

/* The attention sub-block: projections, optional rope, Attention with the node's mask. */
static rlx_mx_arr *attention_block(rlx_lower *L, const rlx_node *n, const rlx_fused_io *io, rlx_mx_arr *const *in) {
  const rlx_type *th = rlx_in_type(L, n, (uint32_t)io->x);
  int64_t B = th->dims[0], S = th->dims[1], E = th->dims[2], H = rlx_node_i(n, "num_heads"), D = E / H;
  rlx_l_attn a = {.B = B, .hq = H, .hkv = H, .sq = S, .sk = S, .d = D, .dv = D, .dt = th->dtype, .scale = (float)(1.0 / sqrt((double)D))};
  rlx_l_attn_set_mask(L, n, in, io->mask, &a);
  rlx_mx_arr *qkv = linear(L, in[io->x], in[io->qkv_w], opt_in(in, io->qkv_b)), *p[3];
  rlx_type t3 = *th;
  t3.dims[2] = 3 * E;
  for (int i = 0; i < 3; i++) p[i] = rlx_l_narrow(L, qkv, &t3, 2, i * E, E);
  for (int i = 0; io->cos >= 0 && i < 2; i++)
    p[i] = rlx_l_rope(L, p[i], th, in[io->cos], in[io->sin], rlx_in_type(L, n, (uint32_t)io->cos), D, 0, false, 1.0);
  for (int i = 0; i < 3; i++) p[i] = rlx_l_split_heads(L, p[i], B, S, H, D);
  rlx_mx_arr *y = rlx_l_merge_heads(L, rlx_l_attention(L, &a, p[0], p[1], p[2], NULL, 0), B, S, H, D);
  return linear(L, y, in[io->out_w], opt_in(in, io->out_b));
}

/* BERT post-norm: y1 = LN(h + attn(h)); out = LN(y1 + act(y1 W1 + b1) W2 + b2). */
static rlx_mx_arr *transformer_layer(rlx_lower *L, const rlx_node *n, const rlx_fused_io *io, rlx_mx_arr *const *in) {
  rlx_mx *c = L->mx;
  const rlx_type *th = rlx_in_type(L, n, 0);
  rlx_mx_arr *a = attention_block(L, n, io, in);
  rlx_mx_arr *y1 = rlx_mx_norm(c, false, rlx_mx_binary(c, RLX_MXB_ADD, in[io->x], a), 2, in[io->ln1_g], in[io->ln1_b],
                               (float)rlx_node_f(n, "epsilon1"));
  rlx_mx_arr *f = rlx_l_activation(L, rlx_node_s(n, "activation"), linear(L, y1, in[io->ff1_w], opt_in(in, io->ff1_b)), th->dtype);
  f = linear(L, f, in[io->ff2_w], opt_in(in, io->ff2_b));
  return rlx_mx_norm(c, false, rlx_mx_binary(c, RLX_MXB_ADD, y1, f), 2, in[io->gamma], in[io->beta], (float)rlx_node_f(n, "epsilon2"));
}

void rlx_lower_fused(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_fused_io io;
  rlx_fused_io_of(n, &io);
  switch (n->op) {
    case RLX_OP_FUSED_RESIDUAL_LN:
    case RLX_OP_FUSED_RESIDUAL_RMS_NORM:
      out[0] = residual_norm(L, n, &io, in);
      return;
    case RLX_OP_FUSED_SWIGLU:
      out[0] = swiglu(L, n, in[0]);
      return;
    case RLX_OP_FUSED_ATTENTION_BLOCK:
      out[0] = attention_block(L, n, &io, in);
      return;
    case RLX_OP_FUSED_TRANSFORMER_LAYER:
      out[0] = transformer_layer(L, n, &io, in);
      return;
    default:
      rlx_lower_fail(L, RLX_STATUS_INTERNAL, "not a fused op");
  }
}
