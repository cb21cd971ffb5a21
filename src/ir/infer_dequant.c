/* infer_dequant.c: inference for DequantMatMul and its schemes (see rlx/op_table.h and
 * ir/dequant.h). */
#include <stdio.h>

#include "ir/dequant.h"
#include "ir/infer_util.h"

static const rlx_dq_info dq_info[] = {
#define RLX_X(id, name, qk, bb) {name, qk, bb},
    RLX_DEQUANT_SCHEMES(RLX_X)
#undef RLX_X
};

rlx_dq_scheme rlx_dq_scheme_of(const char *name) {
  for (int i = 0; i < RLX_DQ_COUNT; i++)
    if (!strcmp(name, dq_info[i].name)) return (rlx_dq_scheme)i;
  return RLX_DQ_COUNT;
}

const rlx_dq_info *rlx_dq_info_of(rlx_dq_scheme s) { return &dq_info[s]; }

/* "input 1 (param 'w')" for messages: the leaf's kind and name where the input is a leaf. */
static const char *in_label(const rlx_infer_ctx *c, int i, char *buf, size_t cap) {
  const rlx_node *p = c->g ? rlx_value_node(c->g, c->n->in[i]) : NULL;
  const char *kind = !p ? NULL : p->op == RLX_OP_PARAM ? "param" : p->op == RLX_OP_INPUT ? "input" : p->op == RLX_OP_CONSTANT ? "constant" : NULL;
  if (kind && p->name) snprintf(buf, cap, "input %d (%s '%s')", i, kind, p->name);
  else snprintf(buf, cap, "input %d", i);
  return buf;
}

/* GGUF blocks: x[...,K] and the packed rows uint8[N, K/QK * block bytes], the exact bytes of a
 * GGUF tensor of ggml shape [K, N]. */
static rlx_status *dequant_gguf(rlx_infer_ctx *c, const rlx_dq_info *in) {
  char lb[160];
  const rlx_type *x = IN(0), *q = IN(1);
  int64_t qk = in->block_elems, bb = in->block_bytes;
  if (NIN != 2) FAIL(INVALID_ARGUMENT, "scheme '%s' takes 2 inputs (x, packed GGUF blocks), got %d", in->name, NIN);
  if (q->dtype != RLX_DTYPE_U8 || q->rank != 2)
    FAIL(INVALID_ARGUMENT, "%s must be the packed %s blocks as uint8[N, K/%lld*%lld], got %s", in_label(c, 1, lb, sizeof lb),
         in->name, (long long)qk, (long long)bb, TSTR(q));
  int64_t K = x->dims[x->rank - 1], rb = q->dims[1];
  if (K >= 0 && K % qk)
    FAIL(INVALID_ARGUMENT, "K = %lld (the last dim of x %s) is not a multiple of the %s block of %lld elements", (long long)K,
         TSTR(x), in->name, (long long)qk);
  if (K >= 0 && rb >= 0 && rb != K / qk * bb)
    FAIL(INVALID_ARGUMENT, "%s must hold %lld bytes per row (%lld %s blocks of %lld bytes for K = %lld), got %s",
         in_label(c, 1, lb, sizeof lb), (long long)(K / qk * bb), (long long)(K / qk), in->name, (long long)bb, (long long)K, TSTR(q));
  if (K < 0 && rb >= 0 && rb % bb)
    FAIL(INVALID_ARGUMENT, "%s holds %lld bytes per row, not a whole number of %lld-byte %s blocks", in_label(c, 1, lb, sizeof lb),
         (long long)rb, (long long)bb, in->name);
  *OUT(0) = *x;
  OUT(0)->dims[x->rank - 1] = q->dims[0];
  return NULL;
}

/* int8/int4 blocks: x[...,K], q[N,K], scale[N,K/bs], [zero_point[N,K/bs]]. */
static rlx_status *dequant_int(rlx_infer_ctx *c, const char *scheme, bool asym) {
  if (asym != (NIN == 4)) FAIL(INVALID_ARGUMENT, "scheme '%s' takes %d inputs, got %d", scheme, asym ? 4 : 3, NIN);
  const rlx_type *x = IN(0), *q = IN(1);
  int64_t bs = AI("block_size");
  if (bs != 32 && bs != 64 && bs != 128) FAIL(UNIMPLEMENTED, "block_size %lld (MLX supports 32, 64, 128)", (long long)bs);
  if (q->rank != 2) FAIL(INVALID_ARGUMENT, "input 1 (q) must be [N,K], got %s", TSTR(q));
  if (q->dtype != (asym ? RLX_DTYPE_U8 : RLX_DTYPE_I8))
    FAIL(INVALID_ARGUMENT, "input 1 (q) must be %s for scheme '%s', got %s", asym ? "uint8" : "int8", scheme, rlx_dtype_name(q->dtype));
  if (!rlx_dim_compatible(x->dims[x->rank - 1], q->dims[1]))
    FAIL(INVALID_ARGUMENT, "input 0 %s does not end in K of q %s", TSTR(x), TSTR(q));
  if (q->dims[1] >= 0 && q->dims[1] % bs) FAIL(INVALID_ARGUMENT, "K = %lld is not a multiple of block_size %lld", (long long)q->dims[1], (long long)bs);
  for (int i = 2; i < NIN; i++) {
    const rlx_type *t = IN(i);
    if (t->rank != 2 || t->dims[0] != q->dims[0] || (q->dims[1] >= 0 && t->dims[1] != q->dims[1] / bs))
      FAIL(INVALID_ARGUMENT, "input %d (%s) must be [%lld,%lld], got %s", i, i == 2 ? "scale" : "zero_point",
           (long long)q->dims[0], (long long)(q->dims[1] / bs), TSTR(t));
    if (!rlx_dtype_is_float(t->dtype)) FAIL(INVALID_ARGUMENT, "input %d must be a float type", i);
  }
  *OUT(0) = *x;
  OUT(0)->dims[x->rank - 1] = q->dims[0];
  return NULL;
}

rlx_status *rlx_infer_dequant(rlx_infer_ctx *c) {
  const char *scheme = AS("scheme");
  rlx_dq_scheme s = rlx_dq_scheme_of(scheme);
  if (s == RLX_DQ_COUNT) FAIL(INVALID_ARGUMENT, "unknown DequantMatMul scheme '%s'", scheme);
  RLX_TRY(infer_need_float(c, 0));
  if (IN(0)->rank < 1) FAIL(INVALID_ARGUMENT, "input 0 (x) must have rank >= 1");
  const rlx_dq_info *in = rlx_dq_info_of(s);
  if (in->block_bytes) return dequant_gguf(c, in);
  return dequant_int(c, scheme, s == RLX_DQ_INT8_BLOCK_ASYM || s == RLX_DQ_INT4_BLOCK_ASYM);
}
