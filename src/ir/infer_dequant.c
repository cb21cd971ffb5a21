/* infer_dequant.c: inference for DequantMatMul and its schemes (see rlx/op_table.h and
 * ir/dequant.h). */
#include <stdio.h>
#include <string.h>

#include "ir/dequant.h"
#include "ir/infer_util.h"

static const rlx_dq_info dq_info[] = {
#define RLX_X(id, name, kind, qk, bb, bits) {name, RLX_DQK_##kind, qk, bb, bits},
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

/* Input i must be dtype[N, cols] (dtype RLX_DTYPE_COUNT: any float). */
static rlx_status *need_matrix(const rlx_infer_ctx *c, int i, const char *what, rlx_dtype dt, int64_t N, int64_t cols) {
  char lb[160];
  const rlx_type *t = IN(i);
  bool ok = t->rank == 2 && rlx_dim_compatible(t->dims[0], N) && (cols < 0 || rlx_dim_compatible(t->dims[1], cols));
  ok = ok && (dt == RLX_DTYPE_COUNT ? rlx_dtype_is_float(t->dtype) : t->dtype == dt);
  if (!ok)
    FAIL(INVALID_ARGUMENT, "%s (%s) must be %s[%lld,%lld], got %s", in_label(c, i, lb, sizeof lb), what,
         dt == RLX_DTYPE_COUNT ? "float" : rlx_dtype_name(dt), (long long)N, (long long)cols, TSTR(t));
  return NULL;
}

/* MX (mxfp4, mxfp8), NVFP4 and FP8 schemes: codes uint8[N, K*bits/8] and per-block scales. */
static rlx_status *dequant_fp(rlx_infer_ctx *c, const rlx_dq_info *in) {
  const rlx_type *x = IN(0), *q = IN(1);
  int want = in->kind == RLX_DQK_NV ? 4 : 3;
  if (NIN != want)
    FAIL(INVALID_ARGUMENT, "scheme '%s' takes %d inputs (x, %s), got %d", in->name, want,
         in->kind == RLX_DQK_NV ? "w, scales, global_scale" : in->kind == RLX_DQK_FP8 ? "q, scale" : "w, scales", NIN);
  int64_t K = x->dims[x->rank - 1], bs = in->block_elems ? in->block_elems : AI("block_size");
  if (bs < 1) FAIL(INVALID_ARGUMENT, "block_size must be >= 1, got %lld", (long long)bs);
  if (q->rank != 2) FAIL(INVALID_ARGUMENT, "input 1 must be uint8[N, K*%d/8], got %s", in->bits, TSTR(q));
  if (K >= 0 && K % bs)
    FAIL(INVALID_ARGUMENT, "K = %lld (the last dim of x %s) is not a multiple of the %s block of %lld elements", (long long)K,
         TSTR(x), in->name, (long long)bs);
  int64_t N = q->dims[0];
  RLX_TRY(need_matrix(c, 1, in->bits == 4 ? "two E2M1 codes per byte" : "FP8 codes", RLX_DTYPE_U8, N, K < 0 ? -1 : K * in->bits / 8));
  RLX_TRY(need_matrix(c, 2, in->kind == RLX_DQK_MX ? "E8M0 scales" : in->kind == RLX_DQK_NV ? "E4M3 scales" : "scale",
                      in->kind == RLX_DQK_FP8 ? RLX_DTYPE_COUNT : RLX_DTYPE_U8, N, K < 0 ? -1 : K / bs));
  if (in->kind == RLX_DQK_NV) {
    int64_t n = 1;
    for (int i = 0; i < IN(3)->rank; i++) n *= IN(3)->dims[i];
    if (!rlx_dtype_is_float(IN(3)->dtype) || n != 1 || IN(3)->rank > 1)
      FAIL(INVALID_ARGUMENT, "input 3 (global_scale) must be one float value, got %s", TSTR(IN(3)));
  }
  *OUT(0) = *x;
  OUT(0)->dims[x->rank - 1] = N;
  return NULL;
}

static rlx_status *infer_dequant_matmul(rlx_infer_ctx *c) {
  const char *scheme = AS("scheme");
  rlx_dq_scheme s = rlx_dq_scheme_of(scheme);
  if (s == RLX_DQ_COUNT) FAIL(INVALID_ARGUMENT, "unknown DequantMatMul scheme '%s'", scheme);
  RLX_TRY(infer_need_float(c, 0));
  if (IN(0)->rank < 1) FAIL(INVALID_ARGUMENT, "input 0 (x) must have rank >= 1");
  if (OP == RLX_OP_DEQUANT_MATMUL) { /* DequantGroupedMatMul checks its experts through here too */
    const char *act = AS("activations");
    int64_t K = IN(0)->dims[IN(0)->rank - 1];
    if (strcmp(act, "float") && strcmp(act, "q8_0")) FAIL(INVALID_ARGUMENT, "activations '%s' (expected float or q8_0)", act);
    if (!strcmp(act, "q8_0") && RLX_DIM_IS_STATIC(K) && K % 32)
      FAIL(INVALID_ARGUMENT, "activations q8_0 needs K (x's last dim) a multiple of 32, got %lld", (long long)K);
  }
  const rlx_dq_info *in = rlx_dq_info_of(s);
  if (in->kind == RLX_DQK_GGUF) return dequant_gguf(c, in);
  if (in->kind != RLX_DQK_INT) return dequant_fp(c, in);
  return dequant_int(c, scheme, s == RLX_DQ_INT8_BLOCK_ASYM || s == RLX_DQ_INT4_BLOCK_ASYM);
}

/* DequantGroupedMatMul(x[M,K], weight inputs with a leading expert axis E, idx[M]): each weight
 * input is checked as DequantMatMul's with that axis removed (nvfp4's global_scale: one value or
 * one per expert). */
static rlx_status *infer_grouped(rlx_infer_ctx *c) {
  const rlx_type *x = IN(0), *idx = IN(NIN - 1);
  RLX_TRY(infer_need_int(c, NIN - 1, "expert indices"));
  if (x->rank != 2 || idx->rank != 1 || !rlx_dim_compatible(x->dims[0], idx->dims[0]))
    FAIL(INVALID_ARGUMENT, "expected x[M,K] and idx[M] (the last input), got %s and %s", TSTR(x), TSTR(idx));
  rlx_type in[8];
  int64_t E = IN(1)->rank ? IN(1)->dims[0] : -1;
  in[0] = *x;
  for (int i = 1; i < NIN - 1; i++) {
    const rlx_type *t = IN(i);
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= t->dims[d];
    in[i] = *t;
    if (i == 3 && n == 1 && t->rank <= 1) continue; /* one global scale for all experts */
    if (t->rank < 1 || !rlx_dim_compatible(t->dims[0], E))
      FAIL(INVALID_ARGUMENT, "input %d %s must have the expert count E = %lld as its first dim", i, TSTR(t), (long long)E);
    in[i].rank--;
    memmove(in[i].dims, in[i].dims + 1, sizeof(int64_t) * (size_t)in[i].rank);
  }
  rlx_node sub = *c->n;
  sub.n_in--;
  rlx_infer_ctx sc = *c;
  sc.n = &sub;
  sc.in = in;
  return infer_dequant_matmul(&sc);
}

/* Dequantize(packed[..., K/QK*B]) -> float32[..., K], GGUF schemes. */
static rlx_status *infer_dequantize(rlx_infer_ctx *c) {
  const char *scheme = AS("scheme");
  rlx_dq_scheme s = rlx_dq_scheme_of(scheme);
  if (s == RLX_DQ_COUNT || rlx_dq_info_of(s)->kind != RLX_DQK_GGUF)
    FAIL(INVALID_ARGUMENT, "Dequantize takes a GGUF scheme (gguf_q4_0 .. gguf_nvfp4), got '%s'", scheme);
  const rlx_dq_info *in = rlx_dq_info_of(s);
  const rlx_type *q = IN(0);
  if (q->dtype != RLX_DTYPE_U8 || q->rank < 1)
    FAIL(INVALID_ARGUMENT, "input 0 must be the packed %s blocks as uint8 of rank >= 1, got %s", in->name, TSTR(q));
  int64_t rb = q->dims[q->rank - 1];
  if (rb >= 0 && rb % in->block_bytes)
    FAIL(INVALID_ARGUMENT, "input 0 %s holds %lld bytes per row, not a whole number of %lld-byte %s blocks", TSTR(q), (long long)rb,
         (long long)in->block_bytes, in->name);
  *OUT(0) = *q;
  OUT(0)->dtype = RLX_DTYPE_F32;
  OUT(0)->dims[q->rank - 1] = RLX_DIM_DYNAMIC;
  if (rb >= 0 && !rlx_mul_i64(rb / in->block_bytes, in->block_elems, &OUT(0)->dims[q->rank - 1]))
    FAIL(RESOURCE_EXHAUSTED, "input 0 %s: %lld %s blocks per row make more than 2^63 values", TSTR(q), (long long)(rb / in->block_bytes), in->name);
  return NULL;
}

rlx_status *rlx_infer_dequant(rlx_infer_ctx *c) {
  if (OP == RLX_OP_DEQUANTIZE) return infer_dequantize(c);
  if (OP == RLX_OP_DEQUANT_GROUPED_MATMUL) {
    if (NIN < 3 || NIN > 5) FAIL(INVALID_ARGUMENT, "expected 3 to 5 inputs (x, weight inputs, idx), got %d", NIN);
    return infer_grouped(c);
  }
  return infer_dequant_matmul(c);
}
