/* infer_fused.c: inference for the fused blocks (residual + norm, SwiGLU, attention block,
 * transformer layer), and the operand positions their lowering shares. */
#include "ir/infer_util.h"

void rlx_fused_io_of(const rlx_node *n, rlx_fused_io *io) {
  memset(io, -1, sizeof *io); /* every position -1 (absent) */
  bool bias = rlx_node_i(n, "has_bias") != 0;
  int k = 0;
  switch (n->op) {
    case RLX_OP_FUSED_RESIDUAL_LN:
    case RLX_OP_FUSED_RESIDUAL_RMS_NORM:
      io->x = k++, io->r = k++;
      if (bias) io->bias = k++;
      io->gamma = k++;
      if (n->op == RLX_OP_FUSED_RESIDUAL_LN || (uint32_t)k < n->n_in) io->beta = k++;
      break;
    case RLX_OP_FUSED_ATTENTION_BLOCK: {
      const char *m = rlx_node_s(n, "mask");
      io->x = k++, io->qkv_w = k++, io->out_w = k++;
      if (!strcmp(m, "custom") || !strcmp(m, "bias")) io->mask = k++;
      if (bias) io->qkv_b = k++, io->out_b = k++;
      if (rlx_node_i(n, "has_rope")) io->cos = k++, io->sin = k++;
      break;
    }
    case RLX_OP_FUSED_TRANSFORMER_LAYER: {
      const char *m = rlx_node_s(n, "mask");
      io->x = k++, io->qkv_w = k++;
      if (bias) io->qkv_b = k++;
      io->out_w = k++;
      if (bias) io->out_b = k++;
      io->ln1_g = k++, io->ln1_b = k++, io->ff1_w = k++;
      if (bias) io->ff1_b = k++;
      io->ff2_w = k++;
      if (bias) io->ff2_b = k++;
      io->gamma = k++, io->beta = k++;
      if (!strcmp(m, "custom") || !strcmp(m, "bias")) io->mask = k++;
      break;
    }
    default:
      io->x = k++;
      break;
  }
  io->count = k;
}

/* Input i (when present) must be a vector [len] or a matrix [rows, cols] in x's dtype. */
static rlx_status *vec(const rlx_infer_ctx *c, int i, const char *what, int64_t len) {
  if (i < 0) return NULL;
  RLX_TRY(infer_same_dtype(c, 0, i));
  if (IN(i)->rank != 1 || !rlx_dim_compatible(IN(i)->dims[0], len))
    FAIL(INVALID_ARGUMENT, "input %d (%s) must be [%lld], got %s", i, what, (long long)len, TSTR(IN(i)));
  return NULL;
}

static rlx_status *mat(const rlx_infer_ctx *c, int i, const char *what, int64_t rows, int64_t cols) {
  RLX_TRY(infer_same_dtype(c, 0, i));
  if (IN(i)->rank != 2 || !rlx_dim_compatible(IN(i)->dims[0], rows) || !rlx_dim_compatible(IN(i)->dims[1], cols))
    FAIL(INVALID_ARGUMENT, "input %d (%s) must be [%lld,%lld], got %s", i, what, (long long)rows, (long long)cols, TSTR(IN(i)));
  return NULL;
}

static rlx_status *residual_norm(rlx_infer_ctx *c, const rlx_fused_io *io) {
  const rlx_type *x = IN(0);
  if (x->rank < 1) FAIL(INVALID_ARGUMENT, "input 0 (x) must have rank >= 1");
  bool same = IN(1)->rank == x->rank;
  for (int i = 0; same && i < x->rank; i++) same = rlx_dim_compatible(IN(1)->dims[i], x->dims[i]);
  RLX_TRY(infer_same_dtype(c, 0, 1));
  if (!same) FAIL(INVALID_ARGUMENT, "input 1 (residual) must have x's shape %s, got %s", TSTR(x), TSTR(IN(1)));
  int64_t d = x->dims[x->rank - 1];
  RLX_TRY(vec(c, io->bias, "bias", d));
  RLX_TRY(vec(c, io->gamma, "gamma", d));
  RLX_TRY(vec(c, io->beta, "beta", d));
  if (AF("epsilon") < 0) FAIL(INVALID_ARGUMENT, "epsilon must be >= 0, got %g", AF("epsilon"));
  *OUT(0) = *x;
  return NULL;
}

static rlx_status *swiglu(rlx_infer_ctx *c) {
  const rlx_type *x = IN(0);
  if (x->rank < 1 || x->dims[x->rank - 1] < 0 || x->dims[x->rank - 1] % 2)
    FAIL(INVALID_ARGUMENT, "input 0 must be [..,2N] with a static even last dim, got %s", TSTR(x));
  int64_t gf = AI("gate_first"), to = AI("cast_to");
  if (gf != 0 && gf != 1) FAIL(INVALID_ARGUMENT, "gate_first must be 0 or 1, got %lld", (long long)gf);
  if (to < -1 || to >= RLX_DTYPE_COUNT || (to >= 0 && !rlx_dtype_is_float((rlx_dtype)to)))
    FAIL(INVALID_ARGUMENT, "cast_to %lld must be -1 (none) or a float dtype", (long long)to);
  *OUT(0) = *x;
  OUT(0)->dims[x->rank - 1] /= 2;
  if (to >= 0) OUT(0)->dtype = (rlx_dtype)to;
  return NULL;
}

/* The attention sub-block of both fused attention ops: h[B,S,E] -> [B,S,E]. */
static rlx_status *attention_block(rlx_infer_ctx *c, const rlx_fused_io *io) {
  const rlx_type *h = IN(0);
  if (h->rank != 3 || h->dims[2] < 0) FAIL(INVALID_ARGUMENT, "input 0 (h) must be [B,S,E] with a static E, got %s", TSTR(h));
  int64_t E = h->dims[2], H = AI("num_heads");
  if (H <= 0 || E % H) FAIL(INVALID_ARGUMENT, "num_heads %lld must divide the width %lld", (long long)H, (long long)E);
  RLX_TRY(mat(c, io->qkv_w, "qkv_w", E, 3 * E));
  RLX_TRY(vec(c, io->qkv_b, "qkv_b", 3 * E));
  RLX_TRY(mat(c, io->out_w, "out_w", E, E));
  RLX_TRY(vec(c, io->out_b, "out_b", E));
  int kind;
  bool with_input;
  RLX_TRY(rlx_infer_attention_mask(AS("mask"), AI("window"), &kind, &with_input));
  if (io->mask >= 0) RLX_TRY(rlx_infer_attention_mask_input(IN(io->mask), kind, (int64_t[]){h->dims[0], H, h->dims[1], h->dims[1]}));
  for (int i = io->cos, end = io->cos + 2; io->cos >= 0 && i < end; i++) {
    const rlx_type *t = IN(i);
    RLX_TRY(infer_same_dtype(c, 0, i));
    if (t->rank != 2 || (t->dims[0] >= 0 && h->dims[1] >= 0 && t->dims[0] < h->dims[1]) || (t->dims[1] >= 0 && t->dims[1] < E / H / 2))
      FAIL(INVALID_ARGUMENT, "input %d (%s) must be [>=%lld, >=%lld], got %s", i, i == io->cos ? "cos" : "sin", (long long)h->dims[1],
           (long long)(E / H / 2), TSTR(t));
  }
  if (io->cos >= 0 && (E / H) % 2) FAIL(INVALID_ARGUMENT, "rotary embedding needs an even head dim, got %lld", (long long)(E / H));
  *OUT(0) = *h;
  return NULL;
}

static rlx_status *transformer_layer(rlx_infer_ctx *c, const rlx_fused_io *io) {
  RLX_TRY(attention_block(c, io));
  int64_t E = IN(0)->dims[2];
  const rlx_type *f1 = IN(io->ff1_w);
  if (f1->rank != 2) FAIL(INVALID_ARGUMENT, "input %d (ff1_w) must be [E,F], got %s", io->ff1_w, TSTR(f1));
  int64_t F = f1->dims[1];
  RLX_TRY(vec(c, io->ln1_g, "ln1_g", E));
  RLX_TRY(vec(c, io->ln1_b, "ln1_b", E));
  RLX_TRY(mat(c, io->ff1_w, "ff1_w", E, F));
  RLX_TRY(vec(c, io->ff1_b, "ff1_b", F));
  RLX_TRY(mat(c, io->ff2_w, "ff2_w", F, E));
  RLX_TRY(vec(c, io->ff2_b, "ff2_b", E));
  RLX_TRY(vec(c, io->gamma, "ln2_g", E));
  RLX_TRY(vec(c, io->beta, "ln2_b", E));
  if (AF("epsilon1") < 0 || AF("epsilon2") < 0) FAIL(INVALID_ARGUMENT, "epsilon1 / epsilon2 must be >= 0");
  rlx_op act;
  return rlx_infer_activation(AS("activation"), &act);
}

rlx_status *rlx_infer_fused(rlx_infer_ctx *c) {
  rlx_fused_io io;
  rlx_fused_io_of(c->n, &io);
  int64_t hb = AI("has_bias"), hr = AI("has_rope");
  if ((hb != 0 && hb != 1) || (hr != 0 && hr != 1))
    FAIL(INVALID_ARGUMENT, "has_bias / has_rope must be 0 or 1, got %lld / %lld", (long long)hb, (long long)hr);
  if (OP == RLX_OP_FUSED_ATTENTION_BLOCK || OP == RLX_OP_FUSED_TRANSFORMER_LAYER) {
    int kind;
    bool with_input;
    RLX_TRY(rlx_infer_attention_mask(AS("mask"), AI("window"), &kind, &with_input));
  }
  if (io.count != NIN)
    FAIL(INVALID_ARGUMENT, "%s with these attributes (has_bias, has_rope, mask) takes %d inputs, got %d", rlx_op_name(OP), io.count, NIN);
  RLX_TRY(infer_need_float(c, 0));
  switch (OP) {
    case RLX_OP_FUSED_RESIDUAL_LN:
    case RLX_OP_FUSED_RESIDUAL_RMS_NORM:
      return residual_norm(c, &io);
    case RLX_OP_FUSED_SWIGLU:
      return swiglu(c);
    case RLX_OP_FUSED_ATTENTION_BLOCK:
      return attention_block(c, &io);
    case RLX_OP_FUSED_TRANSFORMER_LAYER:
      return transformer_layer(c, &io);
    default:
      FAIL(INTERNAL, "not a fused op");
  }
}
