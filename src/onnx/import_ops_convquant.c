/* import_ops_convquant.c: ONNX linear quantization ops, decomposed into rlx ops:
 * QuantizeLinear / DequantizeLinear (per tensor, per axis, blocked), DynamicQuantizeLinear,
 * MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv; and MaxPool's Indices output
 * (imp_pool_argmax). Formulas follow the ONNX operator documentation. Integer products accumulate in rlx's integer MatMul / Conv (exact while partial
 * sums stay below 2^53 on the CPU); requantization computes the multiplier
 * a_scale * b_scale / y_scale in the scales' own dtype, then rescales in float32 and rounds half
 * to even, as the ONNX reference does. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/import_ops.h"

/* A quantization parameter v (scale or zero point) shaped to broadcast against x (type tx): a
 * scalar or [1] stays; a 1-D per-axis [D] becomes [1..D..1]; blocked (block_size > 0, v of x's
 * rank with ceil(D / block_size) along axis) repeats each entry block_size times along the axis,
 * cropped to D. */
static rlx_status *quant_param(rlx_imp *I, const Onnx__NodeProto *n, rlx_value v, const rlx_type *tx, int64_t axis,
                               int64_t block, rlx_value *out) {
  rlx_type t = *imp_type(I, v);
  int64_t a = imp_axis(axis, tx->rank);
  if (block <= 0 && (t.rank != 1 || t.dims[0] == 1 || tx->rank == 0)) return *out = v, NULL; /* per tensor */
  if (a < 0 || a >= tx->rank) IMP_FAIL(OUT_OF_RANGE, "axis %lld for rank %d", (long long)axis, tx->rank);
  if (block <= 0) {
    int64_t d[RLX_MAX_RANK];
    for (int i = 0; i < tx->rank; i++) d[i] = i == a ? t.dims[0] : 1;
    return imp_reshape(I, n, v, tx->rank, d, out);
  }
  if (t.rank != tx->rank || tx->rank >= RLX_MAX_RANK || tx->dims[a] < 0 || t.dims[a] * block < tx->dims[a])
    IMP_FAIL(INVALID_ARGUMENT, "blocked quantization parameter %s does not cover input %s with block_size %lld",
             RLX_TYPE_STR(&t), RLX_TYPE_STR(tx), (long long)block);
  int64_t d[RLX_MAX_RANK], e[RLX_MAX_RANK];
  for (int i = 0, j = 0; i < t.rank; i++) {
    d[j] = e[j] = t.dims[i], j++;
    if (i == a) d[j] = 1, e[j++] = block;
  }
  RLX_TRY(imp_reshape(I, n, v, t.rank + 1, d, &v));
  RLX_TRY(imp_expand(I, n, v, t.rank + 1, e, &v));
  t.dims[a] *= block;
  RLX_TRY(imp_reshape(I, n, v, t.rank, t.dims, &v));
  if (t.dims[a] == tx->dims[a]) return *out = v, NULL;
  return imp_narrow(I, n, v, a, 0, tx->dims[a], out);
}

/* The float8/float4 storage types (quantization targets that are not integers). */
static bool lowp_float(rlx_dtype dt) {
  return dt == RLX_DTYPE_F8E4M3FN || dt == RLX_DTYPE_F8E4M3FNUZ || dt == RLX_DTYPE_F8E5M2 || dt == RLX_DTYPE_F8E5M2FNUZ ||
         dt == RLX_DTYPE_F4E2M1;
}

/* Rounds y half to even, clamps it to the range of integer dtype qt (int4/uint4/int2/uint2
 * included) and casts it there; a float8/float4 qt takes the cast alone (round to nearest even,
 * saturating unless the node's saturate attribute is 0: ONNX QuantizeLinear). */
static rlx_status *saturate(rlx_imp *I, const Onnx__NodeProto *n, rlx_value y, rlx_dtype qt, rlx_value *out) {
  if (lowp_float(qt)) return imp_cast_sat(I, n, y, qt, imp_attr_i(n, "saturate", 1) != 0, out);
  bool small = qt == RLX_DTYPE_I4 || qt == RLX_DTYPE_U4 || qt == RLX_DTYPE_I2 || qt == RLX_DTYPE_U2;
  if (!rlx_dtype_is_int(qt) && !small) IMP_FAIL(UNIMPLEMENTED, "quantization to %s", rlx_dtype_name(qt));
  int bits = small ? (qt == RLX_DTYPE_I4 || qt == RLX_DTYPE_U4 ? 4 : 2) : (int)(8 * rlx_dtype_size(qt));
  bool sgn = small ? qt == RLX_DTYPE_I4 || qt == RLX_DTYPE_I2 : rlx_dtype_is_signed(qt);
  double lo = sgn ? -ldexp(1, bits - 1) : 0, hi = sgn ? ldexp(1, bits - 1) - 1 : ldexp(1, bits) - 1;
  RLX_TRY(imp_un(I, n, RLX_OP_ROUND, y, &y));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_MAX, y, lo, &y));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_MIN, y, hi, &y));
  return imp_cast(I, n, y, qt, out);
}

/* What QuantizeLinear and DequantizeLinear share: x (input 0), its type, axis and block_size. */
typedef struct qlinear {
  rlx_value x;
  rlx_type tx;
  int64_t axis, block;
} qlinear;

static rlx_status *qlinear_of(rlx_imp *I, const Onnx__NodeProto *n, qlinear *q) {
  RLX_TRY(imp_in_type(I, n, 0, false, &q->tx));
  q->axis = imp_attr_i(n, "axis", 1);
  q->block = imp_attr_i(n, "block_size", 0);
  return imp_in(I, n, 0, &q->x);
}

/* Input k (scale or zero point) cast to dt and shaped to broadcast against x. */
static rlx_status *qlinear_param(rlx_imp *I, const Onnx__NodeProto *n, const qlinear *q, size_t k, rlx_dtype dt, rlx_value *out) {
  RLX_TRY(imp_in(I, n, k, out));
  RLX_TRY(imp_cast(I, n, *out, dt, out));
  return quant_param(I, n, *out, &q->tx, q->axis, q->block, out);
}

/* QuantizeLinear: saturate(round(x / scale) + zero_point) in the zero point's type (uint8 by
 * default, or output_dtype; int4/uint4/int2/uint2 clamp to their ranges); float8/float4 types:
 * cast(x / scale + zero_point), rounding to nearest even in the cast. */
static rlx_status *map_quantize(rlx_imp *I, const Onnx__NodeProto *n) {
  qlinear q;
  RLX_TRY(qlinear_of(I, n, &q));
  rlx_value s, y;
  RLX_TRY(qlinear_param(I, n, &q, 1, q.tx.dtype, &s));
  rlx_dtype qt = RLX_DTYPE_U8;
  if (imp_attr(n, "output_dtype") && imp_attr_i(n, "output_dtype", 0))
    RLX_TRY(rlx_onnx_dtype((int32_t)imp_attr_i(n, "output_dtype", 2), &qt));
  rlx_value z;
  if (imp_has(n, 2)) {
    RLX_TRY(imp_in(I, n, 2, &z));
    qt = imp_type(I, z)->dtype;
  }
  RLX_TRY(imp_bin(I, n, RLX_OP_DIV, q.x, s, &y));
  if (!lowp_float(qt)) RLX_TRY(imp_un(I, n, RLX_OP_ROUND, y, &y)); /* float8/float4: the cast rounds */
  if (imp_has(n, 2)) {
    RLX_TRY(qlinear_param(I, n, &q, 2, q.tx.dtype, &z));
    RLX_TRY(imp_bin(I, n, RLX_OP_ADD, y, z, &y));
  }
  RLX_TRY(saturate(I, n, y, qt, &y));
  return imp_out(I, n, 0, y);
}

/* DequantizeLinear: (x - zero_point) * scale in the scale's type. */
static rlx_status *map_dequantize(rlx_imp *I, const Onnx__NodeProto *n) {
  qlinear q;
  RLX_TRY(qlinear_of(I, n, &q));
  rlx_value s, y;
  RLX_TRY(imp_in(I, n, 1, &s));
  rlx_dtype ft = imp_type(I, s)->dtype;
  RLX_TRY(qlinear_param(I, n, &q, 1, ft, &s));
  RLX_TRY(imp_cast(I, n, q.x, rlx_dtype_is_float(q.tx.dtype) ? ft : RLX_DTYPE_F32, &y));
  if (imp_has(n, 2)) {
    rlx_value z;
    RLX_TRY(qlinear_param(I, n, &q, 2, imp_type(I, y)->dtype, &z));
    RLX_TRY(imp_bin(I, n, RLX_OP_SUB, y, z, &y));
  }
  RLX_TRY(imp_cast(I, n, y, ft, &y));
  RLX_TRY(imp_bin(I, n, RLX_OP_MUL, y, s, &y));
  return imp_out(I, n, 0, y);
}

/* DynamicQuantizeLinear: uint8 quantization over the range [min(0, min x), max(0, max x)]:
 * scale = range / 255 (1/255 for an all-zero x), zero_point = round(clamp(-min / scale, 0, 255)),
 * y = saturate(round(x / scale) + zero_point). Outputs y, scale, zero_point. */
static rlx_status *map_dynamic_quantize(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_value x, hi, lo, range, scale, zp, y, one, zero, is0;
  RLX_TRY(imp_in(I, n, 0, &x));
  rlx_dtype dt = imp_type(I, x)->dtype;
  RLX_TRY(imp_reduce(I, n, "max", x, 0, NULL, false, &hi));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_MAX, hi, 0, &hi));
  RLX_TRY(imp_reduce(I, n, "min", x, 0, NULL, false, &lo));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_MIN, lo, 0, &lo));
  RLX_TRY(imp_bin(I, n, RLX_OP_SUB, hi, lo, &range));
  RLX_TRY(imp_scalar(I, 1, dt, &one));
  RLX_TRY(imp_scalar(I, 0, dt, &zero));
  RLX_TRY(imp_bin(I, n, RLX_OP_EQUAL, range, zero, &is0));
  RLX_TRY(imp_select(I, n, is0, one, range, &range));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_DIV, range, 255, &scale));
  RLX_TRY(imp_bin(I, n, RLX_OP_DIV, lo, scale, &zp));
  RLX_TRY(imp_un(I, n, RLX_OP_NEG, zp, &zp));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_MAX, zp, 0, &zp));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_MIN, zp, 255, &zp));
  RLX_TRY(imp_un(I, n, RLX_OP_ROUND, zp, &zp));
  RLX_TRY(imp_bin(I, n, RLX_OP_DIV, x, scale, &y));
  RLX_TRY(imp_un(I, n, RLX_OP_ROUND, y, &y));
  RLX_TRY(imp_bin(I, n, RLX_OP_ADD, y, zp, &y));
  RLX_TRY(saturate(I, n, y, RLX_DTYPE_U8, &y));
  RLX_TRY(saturate(I, n, zp, RLX_DTYPE_U8, &zp));
  RLX_TRY(imp_out(I, n, 0, y));
  RLX_TRY(imp_out(I, n, 1, scale));
  return imp_out(I, n, 2, zp);
}

/* Input k as int32 minus the zero point at input kz (when present); a 1-D zero point of length
 * > 1 runs along axis `axis` of input k (rows of a matrix, output channels of a weight). */
static rlx_status *centered(rlx_imp *I, const Onnx__NodeProto *n, size_t k, size_t kz, int64_t axis, rlx_value *out) {
  rlx_value v;
  RLX_TRY(imp_in(I, n, k, &v));
  RLX_TRY(imp_cast(I, n, v, RLX_DTYPE_I32, &v));
  if (!imp_has(n, kz)) return *out = v, NULL;
  rlx_value z;
  RLX_TRY(imp_in(I, n, kz, &z));
  RLX_TRY(imp_cast(I, n, z, RLX_DTYPE_I32, &z));
  const rlx_type *tz = imp_type(I, z);
  rlx_type tv = *imp_type(I, v);
  if (tz->rank == 1 && tz->dims[0] != 1) RLX_TRY(quant_param(I, n, z, &tv, axis, 0, &z));
  return imp_bin(I, n, RLX_OP_SUB, v, z, out);
}

/* MatMulInteger: (A - a_zero_point) @ (B - b_zero_point) in int32 (a_zero_point per row of A,
 * b_zero_point per column of B). */
static rlx_status *map_matmul_integer(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type ta;
  RLX_TRY(imp_in_type(I, n, 0, false, &ta));
  rlx_value a, b, y;
  RLX_TRY(centered(I, n, 0, 2, ta.rank >= 2 ? -2 : -1, &a));
  RLX_TRY(centered(I, n, 1, 3, -1, &b));
  RLX_TRY(imp_bin(I, n, RLX_OP_MATMUL, a, b, &y));
  return imp_out(I, n, 0, y);
}

/* ConvInteger: Conv(x - x_zero_point, w - w_zero_point) in int32 (w_zero_point per output channel). */
static rlx_status *map_conv_integer(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_value in[2], y;
  RLX_TRY(centered(I, n, 0, 2, 0, &in[0]));
  RLX_TRY(centered(I, n, 1, 3, 0, &in[1]));
  RLX_TRY(imp_conv(I, n, false, 2, in, &y));
  return imp_out(I, n, 0, y);
}

/* Requantizes the int32 accumulator acc: saturate(round(acc * (sa * sb / sy)) + y_zero_point)
 * with the scales at inputs ka, kb, ky (kb's 1-D scale runs along axis b_axis of acc, ka's along
 * a_axis) and the zero point at kyz; the result takes the zero point's dtype (else `dflt`). */
static rlx_status *requantize(rlx_imp *I, const Onnx__NodeProto *n, rlx_value acc, size_t ka, int64_t a_axis, size_t kb,
                              int64_t b_axis, size_t ky, size_t kyz, rlx_dtype dflt, rlx_value *out) {
  const rlx_type tacc = *imp_type(I, acc);
  rlx_value sa, sb, sy, m, y;
  RLX_TRY(imp_in(I, n, ka, &sa));
  RLX_TRY(imp_in(I, n, kb, &sb));
  RLX_TRY(imp_in(I, n, ky, &sy));
  const rlx_type *t = imp_type(I, sa);
  if (t->rank == 1 && t->dims[0] != 1) RLX_TRY(quant_param(I, n, sa, &tacc, a_axis, 0, &sa));
  t = imp_type(I, sb);
  if (t->rank == 1 && t->dims[0] != 1) RLX_TRY(quant_param(I, n, sb, &tacc, b_axis, 0, &sb));
  RLX_TRY(imp_cast(I, n, sb, imp_type(I, sa)->dtype, &sb));
  RLX_TRY(imp_cast(I, n, sy, imp_type(I, sa)->dtype, &sy));
  RLX_TRY(imp_bin(I, n, RLX_OP_MUL, sa, sb, &m));
  RLX_TRY(imp_bin(I, n, RLX_OP_DIV, m, sy, &m));
  RLX_TRY(imp_cast(I, n, m, RLX_DTYPE_F32, &m));
  RLX_TRY(imp_cast(I, n, acc, RLX_DTYPE_F32, &y));
  RLX_TRY(imp_bin(I, n, RLX_OP_MUL, y, m, &y));
  rlx_dtype qt = dflt;
  if (imp_has(n, kyz)) {
    rlx_value z;
    RLX_TRY(imp_in(I, n, kyz, &z));
    qt = imp_type(I, z)->dtype;
    RLX_TRY(imp_cast(I, n, z, RLX_DTYPE_F32, &z));
    RLX_TRY(imp_bin(I, n, RLX_OP_ADD, y, z, &y));
  }
  return saturate(I, n, y, qt, out);
}

/* QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp): per-row a parameters,
 * per-column b parameters. */
static rlx_status *map_qlinear_matmul(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type ta;
  RLX_TRY(imp_in_type(I, n, 0, false, &ta));
  rlx_value a, b, acc, y;
  RLX_TRY(centered(I, n, 0, 2, ta.rank >= 2 ? -2 : -1, &a));
  RLX_TRY(centered(I, n, 3, 5, -1, &b));
  RLX_TRY(imp_bin(I, n, RLX_OP_MATMUL, a, b, &acc));
  RLX_TRY(requantize(I, n, acc, 1, -2, 4, -1, 6, 7, ta.dtype, &y));
  return imp_out(I, n, 0, y);
}

/* QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, [B int32]): per-output-channel
 * w parameters; B is added to the int32 accumulator. */
static rlx_status *map_qlinear_conv(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type tx;
  RLX_TRY(imp_in_type(I, n, 0, false, &tx));
  rlx_value in[3], acc, y;
  RLX_TRY(centered(I, n, 0, 2, 0, &in[0]));
  RLX_TRY(centered(I, n, 3, 5, 0, &in[1]));
  size_t nin = imp_has(n, 8) ? 3 : 2;
  if (nin == 3) {
    RLX_TRY(imp_in(I, n, 8, &in[2]));
    RLX_TRY(imp_cast(I, n, in[2], RLX_DTYPE_I32, &in[2]));
  }
  RLX_TRY(imp_conv(I, n, false, nin, in, &acc));
  RLX_TRY(requantize(I, n, acc, 1, 1, 4, 1, 6, 7, tx.dtype, &y));
  return imp_out(I, n, 0, y);
}

/* An int64 constant [1,..,len,..,1] (rank r, len along axis) holding 0..len-1, times `scale`. */
static rlx_status *ramp(rlx_imp *I, int r, int axis, int64_t len, int64_t scale, rlx_value *out) {
  int64_t d[RLX_MAX_RANK];
  for (int i = 0; i < r; i++) d[i] = i == axis ? len : 1;
  RLX_TRY(imp_table_size("an index ramp", sizeof(int64_t), 1, &len, &len));
  rlx_tensor *t;
  RLX_TRY(rlx_tensor_create(RLX_DTYPE_I64, r, d, NULL, 0, &t));
  for (int64_t i = 0; i < len; i++) ((int64_t *)rlx_tensor_data(t))[i] = i * scale;
  rlx_status *st = imp_tensor_const(I, t, out);
  rlx_tensor_free(t);
  return st;
}

rlx_status *imp_pool_argmax(rlx_imp *I, const Onnx__NodeProto *n, rlx_value x, const rlx_type *pooled, const int64_t *k,
                            const int64_t *s, const int64_t *d, const int64_t *pads, bool column_major, rlx_value *out) {
  const rlx_type tx = *imp_type(I, x), tyv = *pooled, *ty = &tyv; /* copies: adding nodes moves the graph's types */
  int r = tx.rank, nsp = r - 2;
  if (!rlx_type_is_static(&tx) || r + 1 > RLX_MAX_RANK) IMP_FAIL(UNIMPLEMENTED, "MaxPool Indices need static shapes");
  if (column_major && nsp != 2) IMP_FAIL(UNIMPLEMENTED, "storage_order 1 outside 2-D pooling");
  /* one Slice node per window tap: a larger kernel would build a graph of that many nodes
   * (fuzz_onnx: a kernel of 10^8 taps ran out of time and memory) */
  int64_t taps = 1;
  for (int i = 0; i < nsp; i++) taps = k[i] > RLX_ONNX_MAX_UNROLL || taps * k[i] > RLX_ONNX_MAX_UNROLL ? RLX_ONNX_MAX_UNROLL + 1 : taps * k[i];
  if (taps > RLX_ONNX_MAX_UNROLL) IMP_FAIL(UNIMPLEMENTED, "MaxPool Indices over a window of more than %d elements", RLX_ONNX_MAX_UNROLL);
  /* Pad with the lowest value (the ceil_mode overhang too), then one strided slice per window
   * offset, stacked on a new axis 2: [N, C, K, o..]. */
  int64_t pad[2 * RLX_MAX_RANK] = {0}, K = 1;
  for (int i = 0; i < nsp; i++) {
    int64_t need = (ty->dims[2 + i] - 1) * s[i] + d[i] * (k[i] - 1) + 1, have = tx.dims[2 + i] + pads[i] + pads[i + nsp];
    pad[2 + i] = pads[i], pad[r + 2 + i] = pads[i + nsp] + (need > have ? need - have : 0);
    K *= k[i];
  }
  double lowest = rlx_dtype_is_float(tx.dtype) ? -INFINITY
                  : rlx_dtype_is_signed(tx.dtype) ? -ldexp(1, (int)(8 * rlx_dtype_size(tx.dtype)) - 1) : 0;
  rlx_attr pa[2] = {RLX_ATTR_IS("pads", (size_t)(2 * r), pad), RLX_ATTR_F("value", lowest)};
  rlx_value xp, win, am, idx;
  RLX_TRY(imp_add(I, n, RLX_OP_PAD, 1, &x, 2, pa, &xp));
  rlx_value *parts = malloc(sizeof *parts * (size_t)K);
  if (!parts) return RLX_OOM();
  rlx_status *st = NULL;
  int64_t sh[RLX_MAX_RANK] = {ty->dims[0], ty->dims[1], 1};
  for (int i = 0; i < nsp; i++) sh[3 + i] = ty->dims[2 + i];
  for (int64_t j = 0; !st && j < K; j++) {
    int64_t st0[3], en[3], step[3], ax[3], rem = j;
    for (int i = nsp - 1; i >= 0; i--) {
      int64_t off = (rem % k[i]) * d[i];
      rem /= k[i];
      st0[i] = off, en[i] = off + s[i] * (ty->dims[2 + i] - 1) + 1, step[i] = s[i], ax[i] = 2 + i;
    }
    rlx_attr sa[4] = {RLX_ATTR_IS("starts", (size_t)nsp, st0), RLX_ATTR_IS("ends", (size_t)nsp, en),
                      RLX_ATTR_IS("axes", (size_t)nsp, ax), RLX_ATTR_IS("steps", (size_t)nsp, step)};
    st = imp_add(I, n, RLX_OP_SLICE, 1, &xp, 4, sa, &parts[j]);
    if (!st) st = imp_reshape(I, n, parts[j], r + 1, sh, &parts[j]);
  }
  rlx_attr ca = RLX_ATTR_I("axis", 2);
  if (!st) st = imp_add(I, n, RLX_OP_CONCAT, (size_t)K, parts, 1, &ca, &win);
  free(parts);
  RLX_TRY(st);
  /* The first maximum's window offset, turned into input coordinates and a flat index. */
  rlx_attr aa[3] = {RLX_ATTR_I("axis", 2), RLX_ATTR_I("keepdims", 0), RLX_ATTR_I("select_last_index", 0)};
  RLX_TRY(imp_add(I, n, RLX_OP_ARG_MAX, 1, &win, 3, aa, &am));
  int64_t plane = 1, inner = K;
  for (int i = 0; i < nsp; i++) plane *= tx.dims[2 + i];
  RLX_TRY(ramp(I, r, 0, tx.dims[0], tx.dims[1] * plane, &idx)); /* (n C + c) * plane */
  rlx_value cr;
  RLX_TRY(ramp(I, r, 1, tx.dims[1], plane, &cr));
  RLX_TRY(imp_bin(I, n, RLX_OP_ADD, idx, cr, &idx));
  for (int i = 0; i < nsp; i++) {
    inner /= k[i];
    int64_t mul = 1; /* the element stride of spatial dim i in the index's storage order */
    if (column_major) mul = i == 0 ? 1 : tx.dims[2];
    else
      for (int q = i + 1; q < nsp; q++) mul *= tx.dims[2 + q];
    rlx_value ji, pos, o;
    RLX_TRY(imp_with_scalar(I, n, RLX_OP_DIV, am, (double)inner, &ji));
    RLX_TRY(imp_with_scalar(I, n, RLX_OP_MOD, ji, (double)k[i], &ji));
    RLX_TRY(imp_with_scalar(I, n, RLX_OP_MUL, ji, (double)d[i], &pos));
    RLX_TRY(ramp(I, r, 2 + i, ty->dims[2 + i], s[i], &o));
    RLX_TRY(imp_bin(I, n, RLX_OP_ADD, pos, o, &pos));
    RLX_TRY(imp_with_scalar(I, n, RLX_OP_SUB, pos, (double)pads[i], &pos));
    RLX_TRY(imp_with_scalar(I, n, RLX_OP_MUL, pos, (double)mul, &pos));
    RLX_TRY(imp_bin(I, n, RLX_OP_ADD, idx, pos, &idx));
  }
  return *out = idx, NULL;
}

const rlx_onnx_op rlx_onnx_convquant_ops[] = {
    {"QuantizeLinear", 0, map_quantize, false},
    {"DequantizeLinear", 0, map_dequantize, false},
    {"DynamicQuantizeLinear", 0, map_dynamic_quantize, false},
    {"MatMulInteger", 0, map_matmul_integer, false},
    {"ConvInteger", 0, map_conv_integer, false},
    {"QLinearMatMul", 0, map_qlinear_matmul, false},
    {"QLinearConv", 0, map_qlinear_conv, false},
};
const size_t rlx_onnx_convquant_ops_len = RLX_ARRAY_LEN(rlx_onnx_convquant_ops);
