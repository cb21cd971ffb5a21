/* import_ops_nn.c: ONNX neural-network ops: matmul, conv, pooling, normalization, softmax,
 * resize (quantization: import_ops_convquant.c). Formulas follow the ONNX operator documentation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/import_ops.h"

/* [C] -> [C,1,...,1] so it broadcasts over x[N,C,d...] of rank r. */
static rlx_status *per_channel(rlx_imp *I, const Onnx__NodeProto *n, rlx_value v, int r, rlx_value *out) {
  const rlx_type *t = imp_type(I, v);
  int64_t d[RLX_MAX_RANK] = {t->rank ? t->dims[0] : 1};
  for (int i = 1; i < r - 1; i++) d[i] = 1;
  return imp_reshape(I, n, v, r - 1, d, out);
}

static rlx_status *map_matmul(rlx_imp *I, const Onnx__NodeProto *n) { return imp_op_out(I, n, RLX_OP_MATMUL, 2, 0, NULL); }

/* Gemm: alpha A' B' + beta C (A' = A^T when transA, B' likewise). */
static rlx_status *map_gemm(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_value a, b, y;
  RLX_TRY(imp_in(I, n, 0, &a));
  RLX_TRY(imp_in(I, n, 1, &b));
  rlx_attr tr = RLX_ATTR_IS("perm", 2, ((int64_t[]){1, 0}));
  if (imp_attr_i(n, "transA", 0)) RLX_TRY(imp_add(I, n, RLX_OP_TRANSPOSE, 1, &a, 1, &tr, &a));
  if (imp_attr_i(n, "transB", 0)) RLX_TRY(imp_add(I, n, RLX_OP_TRANSPOSE, 1, &b, 1, &tr, &b));
  RLX_TRY(imp_bin(I, n, RLX_OP_MATMUL, a, b, &y));
  double alpha = imp_attr_f(n, "alpha", 1.0), beta = imp_attr_f(n, "beta", 1.0);
  if (alpha != 1.0) RLX_TRY(imp_with_scalar(I, n, RLX_OP_MUL, y, alpha, &y));
  if (imp_has(n, 2) && beta != 0) {
    rlx_value c;
    RLX_TRY(imp_in(I, n, 2, &c));
    if (beta != 1.0) RLX_TRY(imp_with_scalar(I, n, RLX_OP_MUL, c, beta, &c));
    RLX_TRY(imp_bin(I, n, RLX_OP_ADD, y, c, &y));
  }
  return imp_out(I, n, 0, y);
}

/* The total padding d * (k - 1) + 1 + base - out along one axis (see conv_pads), overflow-checked:
 * strides, dilations and kernel sizes come from the file. false when it does not fit. */
static bool pad_total(int64_t base, int64_t extra, int64_t d, int64_t k, int64_t out, int64_t *total) {
  int64_t span;
  return rlx_mul_i64(d, k - 1, &span) && rlx_add_i64(span, 1, &span) && rlx_add_i64(base, span, &span) && rlx_add_i64(span, extra, &span) &&
         rlx_add_i64(span, -out, total);
}

/* Checks what the padding arithmetic of spatial axis i divides or multiplies by: a static input
 * size, a static kernel size, stride and dilation >= 1. */
static rlx_status *pad_operands(const Onnx__NodeProto *n, int64_t in, int64_t k, int64_t s, int64_t d, int i) {
  if (in < 0 || k < 0) IMP_FAIL(UNIMPLEMENTED, "padding from auto_pad or output_shape needs static spatial and kernel dims (axis %d)", i);
  if (s < 1 || d < 1)
    IMP_FAIL(INVALID_ARGUMENT, "spatial axis %d: stride %lld, dilation %lld (expected >= 1)", i, (long long)s, (long long)d);
  return NULL;
}

/* Explicit pads from auto_pad (SAME_UPPER / SAME_LOWER / VALID) or the pads attribute. */
static rlx_status *conv_pads(const Onnx__NodeProto *n, const rlx_type *x, int nsp, const int64_t *k, const int64_t *s,
                             const int64_t *d, bool transpose, const int64_t *op, int64_t *pads) {
  char buf[32];
  const char *ap = imp_attr_s(n, "auto_pad", "NOTSET", buf, sizeof buf);
  size_t np;
  const int64_t *p = imp_attr_ints(n, "pads", &np);
  for (int i = 0; i < 2 * nsp; i++) pads[i] = np == (size_t)(2 * nsp) ? p[i] : 0;
  if (!strcmp(ap, "NOTSET") || !strcmp(ap, "VALID")) {
    if (!strcmp(ap, "VALID"))
      for (int i = 0; i < 2 * nsp; i++) pads[i] = 0;
    return NULL;
  }
  if (strcmp(ap, "SAME_UPPER") && strcmp(ap, "SAME_LOWER")) IMP_FAIL(INVALID_ARGUMENT, "auto_pad '%s'", ap);
  for (int i = 0; i < nsp; i++) {
    int64_t in = x->dims[2 + i], total;
    RLX_TRY(pad_operands(n, in, k[i], s[i], d[i], i));
    bool fits;
    if (!transpose) { /* out = ceil(in / s); total = (out - 1) * s + d * (k - 1) + 1 - in */
      int64_t out = in / s[i] + (in % s[i] != 0);
      fits = pad_total((out - 1) * s[i], 0, d[i], k[i], in, &total);
    } else { /* out = in * s; total = s * (in - 1) + output_padding + d * (k - 1) + 1 - out */
      int64_t out, base;
      fits = rlx_mul_i64(in, s[i], &out) && rlx_mul_i64(s[i], in - 1, &base) && pad_total(base, op[i], d[i], k[i], out, &total);
    }
    if (!fits) IMP_FAIL(INVALID_ARGUMENT, "auto_pad %s: the padding of spatial axis %d overflows int64", ap, i);
    if (total < 0) total = 0;
    bool upper = !strcmp(ap, "SAME_UPPER");
    pads[i] = upper ? total / 2 : total - total / 2;
    pads[i + nsp] = total - pads[i];
  }
  return NULL;
}

static void list_or(const Onnx__NodeProto *n, const char *name, int nsp, int64_t dflt, int64_t *out) {
  size_t c;
  const int64_t *v = imp_attr_ints(n, name, &c);
  for (int i = 0; i < nsp; i++) out[i] = c == (size_t)nsp ? v[i] : dflt;
}

rlx_status *imp_conv(rlx_imp *I, const Onnx__NodeProto *n, bool transpose, size_t nin, const rlx_value *in, rlx_value *y) {
  rlx_type tx = *imp_type(I, in[0]), tw = *imp_type(I, in[1]);
  int nsp = tx.rank - 2;
  if (nsp < 1 || nsp > 3) IMP_FAIL(UNIMPLEMENTED, "%dD convolution", nsp);
  int64_t k[3], s[3], d[3], op[3], pads[6];
  for (int i = 0; i < nsp; i++) k[i] = tw.dims[2 + i];
  list_or(n, "strides", nsp, 1, s);
  list_or(n, "dilations", nsp, 1, d);
  list_or(n, "output_padding", nsp, 0, op);
  RLX_TRY(conv_pads(n, &tx, nsp, k, s, d, transpose, op, pads));
  if (transpose && imp_attr(n, "output_shape")) {
    /* output_shape fixes the output size: pads follow from it (ONNX ConvTranspose) */
    size_t no;
    const int64_t *os = imp_attr_ints(n, "output_shape", &no);
    char buf[32];
    bool lower = !strcmp(imp_attr_s(n, "auto_pad", "NOTSET", buf, sizeof buf), "SAME_LOWER");
    for (int i = 0; i < nsp && no >= (size_t)nsp; i++) {
      int64_t want = os[no - (size_t)nsp + (size_t)i], base, total;
      RLX_TRY(pad_operands(n, tx.dims[2 + i], k[i], s[i], d[i], i));
      bool fits = want >= 0 && rlx_mul_i64(s[i], tx.dims[2 + i] - 1, &base) && pad_total(base, op[i], d[i], k[i], want, &total) &&
                  total > INT64_MIN;
      if (fits && total < 0) fits = rlx_add_i64(op[i], -total, &op[i]); /* the output padding makes up the rest */
      if (!fits)
        IMP_FAIL(INVALID_ARGUMENT, "output_shape %lld on spatial axis %d: the padding overflows int64 (or the size is negative)", (long long)want, i);
      if (total < 0) total = 0;
      pads[i] = lower ? total - total / 2 : total / 2;
      pads[i + nsp] = total - pads[i];
    }
  }
  rlx_attr a[5] = {RLX_ATTR_IS("strides", (size_t)nsp, s), RLX_ATTR_IS("pads", (size_t)(2 * nsp), pads),
                   RLX_ATTR_IS("dilations", (size_t)nsp, d), RLX_ATTR_I("group", imp_attr_i(n, "group", 1)),
                   RLX_ATTR_IS("output_padding", (size_t)nsp, op)};
  return imp_add(I, n, transpose ? RLX_OP_CONV_TRANSPOSE : RLX_OP_CONV, nin, in, transpose ? 5 : 4, a, y);
}

static rlx_status *conv(rlx_imp *I, const Onnx__NodeProto *n, bool transpose) {
  rlx_value in[3], y;
  size_t nin = imp_has(n, 2) ? 3 : 2;
  for (size_t i = 0; i < nin; i++) RLX_TRY(imp_in(I, n, i, &in[i]));
  RLX_TRY(imp_conv(I, n, transpose, nin, in, &y));
  return imp_out(I, n, 0, y);
}
static rlx_status *map_conv(rlx_imp *I, const Onnx__NodeProto *n) { return conv(I, n, false); }
static rlx_status *map_conv_transpose(rlx_imp *I, const Onnx__NodeProto *n) { return conv(I, n, true); }

static rlx_status *pool(rlx_imp *I, const Onnx__NodeProto *n, const char *kind) {
  rlx_type tx;
  RLX_TRY(imp_in_type(I, n, 0, false, &tx));
  int nsp = tx.rank - 2;
  if (nsp < 1 || nsp > 3) IMP_FAIL(UNIMPLEMENTED, "%dD pooling", nsp);
  int64_t k[3], s[3], d[3], pads[6];
  list_or(n, "kernel_shape", nsp, 1, k);
  list_or(n, "strides", nsp, 1, s);
  list_or(n, "dilations", nsp, 1, d);
  RLX_TRY(conv_pads(n, &tx, nsp, k, s, d, false, NULL, pads));
  rlx_value x, y;
  RLX_TRY(imp_in(I, n, 0, &x));
  rlx_attr a[7] = {RLX_ATTR_S("kind", kind), RLX_ATTR_IS("kernel_shape", (size_t)nsp, k), RLX_ATTR_IS("strides", (size_t)nsp, s),
                   RLX_ATTR_IS("pads", (size_t)(2 * nsp), pads), RLX_ATTR_IS("dilations", (size_t)nsp, d),
                   RLX_ATTR_I("count_include_pad", imp_attr_i(n, "count_include_pad", 0)),
                   RLX_ATTR_I("ceil_mode", imp_attr_i(n, "ceil_mode", 0))};
  RLX_TRY(imp_add(I, n, RLX_OP_POOL, 1, &x, 7, a, &y));
  RLX_TRY(imp_out(I, n, 0, y));
  if (n->n_output < 2 || !n->output[1][0]) return NULL;
  rlx_value idx;
  RLX_TRY(imp_pool_argmax(I, n, x, imp_type(I, y), k, s, d, pads, imp_attr_i(n, "storage_order", 0) != 0, &idx));
  return imp_out(I, n, 1, idx);
}
static rlx_status *map_max_pool(rlx_imp *I, const Onnx__NodeProto *n) { return pool(I, n, "max"); }
static rlx_status *map_average_pool(rlx_imp *I, const Onnx__NodeProto *n) { return pool(I, n, "mean"); }

/* LpPool: (sum |x|^p over the window)^(1/p) (pads count as 0). */
static rlx_status *lp(rlx_imp *I, const Onnx__NodeProto *n, bool global) {
  rlx_type tx;
  RLX_TRY(imp_in_type(I, n, 0, false, &tx));
  int nsp = tx.rank - 2;
  if (nsp < 0 || (!global && (nsp < 1 || nsp > 3))) IMP_FAIL(INVALID_ARGUMENT, "X must be [N,C,D1,...] (1 to 3 spatial dims for LpPool), got %s", RLX_TYPE_STR(&tx));
  double p = (double)imp_attr_i(n, "p", 2);
  rlx_value x, y;
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(imp_un(I, n, RLX_OP_ABS, x, &y));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_POW, y, p, &y));
  if (global && nsp) { /* rank 2: no spatial axes, the sum over none is |x|^p itself */
    int64_t axes[RLX_MAX_RANK];
    for (int i = 2; i < tx.rank; i++) axes[i - 2] = i;
    RLX_TRY(imp_reduce(I, n, "sum", y, (size_t)nsp, axes, true, &y));
  } else if (!global) {
    int64_t k[3], s[3], d[3], pads[6];
    list_or(n, "kernel_shape", nsp, 1, k);
    list_or(n, "strides", nsp, 1, s);
    list_or(n, "dilations", nsp, 1, d);
    RLX_TRY(conv_pads(n, &tx, nsp, k, s, d, false, NULL, pads));
    rlx_attr a[6] = {RLX_ATTR_S("kind", "sum"), RLX_ATTR_IS("kernel_shape", (size_t)nsp, k), RLX_ATTR_IS("strides", (size_t)nsp, s),
                     RLX_ATTR_IS("pads", (size_t)(2 * nsp), pads), RLX_ATTR_IS("dilations", (size_t)nsp, d),
                     RLX_ATTR_I("ceil_mode", imp_attr_i(n, "ceil_mode", 0))};
    RLX_TRY(imp_add(I, n, RLX_OP_POOL, 1, &y, 6, a, &y));
  }
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_POW, y, 1.0 / p, &y));
  return imp_out(I, n, 0, y);
}
static rlx_status *map_lp_pool(rlx_imp *I, const Onnx__NodeProto *n) { return lp(I, n, false); }
static rlx_status *map_global_lp_pool(rlx_imp *I, const Onnx__NodeProto *n) { return lp(I, n, true); }

static rlx_status *global_pool(rlx_imp *I, const Onnx__NodeProto *n, const char *kind) {
  rlx_type tx;
  RLX_TRY(imp_in_type(I, n, 0, false, &tx));
  if (tx.rank < 2) IMP_FAIL(INVALID_ARGUMENT, "X must be [N,C,...], got %s", RLX_TYPE_STR(&tx));
  int64_t axes[RLX_MAX_RANK];
  for (int i = 2; i < tx.rank; i++) axes[i - 2] = i;
  rlx_value x, y;
  RLX_TRY(imp_in(I, n, 0, &x));
  if (tx.rank == 2) return imp_out(I, n, 0, x); /* no spatial axes: onnx.reference's mean over axes () */
  RLX_TRY(imp_reduce(I, n, kind, x, (size_t)(tx.rank - 2), axes, true, &y));
  return imp_out(I, n, 0, y);
}
static rlx_status *map_global_average_pool(rlx_imp *I, const Onnx__NodeProto *n) { return global_pool(I, n, "mean"); }
static rlx_status *map_global_max_pool(rlx_imp *I, const Onnx__NodeProto *n) { return global_pool(I, n, "max"); }

/* BatchNormalization-14/15 in training mode: batch statistics over every axis but 1 (biased
 * variance) normalize x; the outputs running_mean/var = stat * momentum + batch stat * (1 - momentum). */
static rlx_status *batch_norm_training(rlx_imp *I, const Onnx__NodeProto *n, const rlx_type *tx) {
  int64_t axes[RLX_MAX_RANK];
  size_t na = 0;
  for (int i = 0; i < tx->rank; i++)
    if (i != 1) axes[na++] = i;
  double eps = imp_attr_f(n, "epsilon", 1e-5), mom = imp_attr_f(n, "momentum", 0.9);
  rlx_value x, s, b, m, v, bm, bv, d, y;
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(imp_reduce(I, n, "mean", x, na, axes, true, &bm));
  RLX_TRY(imp_bin(I, n, RLX_OP_SUB, x, bm, &d));
  RLX_TRY(imp_bin(I, n, RLX_OP_MUL, d, d, &bv));
  RLX_TRY(imp_reduce(I, n, "mean", bv, na, axes, true, &bv));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_ADD, bv, eps, &y));
  RLX_TRY(imp_un(I, n, RLX_OP_RSQRT, y, &y));
  RLX_TRY(imp_bin(I, n, RLX_OP_MUL, d, y, &y));
  RLX_TRY(imp_in(I, n, 1, &s));
  RLX_TRY(imp_in(I, n, 2, &b));
  RLX_TRY(per_channel(I, n, s, tx->rank, &s));
  RLX_TRY(per_channel(I, n, b, tx->rank, &b));
  RLX_TRY(imp_bin(I, n, RLX_OP_MUL, y, s, &y));
  RLX_TRY(imp_bin(I, n, RLX_OP_ADD, y, b, &y));
  RLX_TRY(imp_out(I, n, 0, y));
  int64_t C = tx->dims[1];
  for (size_t k = 0; k < 2; k++) { /* running mean, running var */
    rlx_value stat = k ? bv : bm;
    RLX_TRY(imp_reshape(I, n, stat, 1, &C, &stat));
    RLX_TRY(imp_in(I, n, 3 + k, k ? &v : &m));
    rlx_value run;
    RLX_TRY(imp_with_scalar(I, n, RLX_OP_MUL, k ? v : m, mom, &run));
    RLX_TRY(imp_with_scalar(I, n, RLX_OP_MUL, stat, 1 - mom, &stat));
    RLX_TRY(imp_bin(I, n, RLX_OP_ADD, run, stat, &run));
    RLX_TRY(imp_out(I, n, 1 + k, run));
  }
  return NULL;
}

/* BatchNormalization (inference): (x - mean) / sqrt(var + eps) * scale + B, per channel. With
 * known statistics the affine factors are computed once: x * a + b. */
static rlx_status *map_batch_norm(rlx_imp *I, const Onnx__NodeProto *n) {
  if (I->opset >= 14 && imp_attr_i(n, "training_mode", 0)) {
    rlx_type t;
    RLX_TRY(imp_in_type(I, n, 0, true, &t));
    if (t.rank < 2) IMP_FAIL(INVALID_ARGUMENT, "x must be [N,C,..], got %s", RLX_TYPE_STR(&t));
    return batch_norm_training(I, n, &t);
  }
  if (imp_attr_i(n, "training_mode", 0) || (n->n_output > 1 && n->output[1][0]))
    IMP_FAIL(UNIMPLEMENTED, "BatchNormalization in training mode before opset 14");
  rlx_type tx;
  RLX_TRY(imp_in_type(I, n, 0, false, &tx));
  double eps = imp_attr_f(n, "epsilon", 1e-5);
  const rlx_tensor *sc = imp_known(I, n, 1), *bi = imp_known(I, n, 2), *mu = imp_known(I, n, 3), *va = imp_known(I, n, 4);
  rlx_value x, a, b, y;
  RLX_TRY(imp_in(I, n, 0, &x));
  if (sc && bi && mu && va && rlx_dtype_is_float(tx.dtype) && tx.dtype != RLX_DTYPE_F64 && rlx_tensor_rank(sc) == 1) {
    /* computed in double, stored as float32 (float64 is not available on GPUs), cast to x's dtype */
    int64_t C = rlx_tensor_numel(sc);
    rlx_tensor *ta, *tb;
    RLX_TRY(rlx_tensor_create(RLX_DTYPE_F32, 1, &C, NULL, 0, &ta));
    rlx_status *st = rlx_tensor_create(RLX_DTYPE_F32, 1, &C, NULL, 0, &tb);
    if (st) {
      rlx_tensor_free(ta);
      return st;
    }
    for (int64_t c = 0; c < C; c++) {
      double f = rlx_tensor_get_f64(sc, c) / sqrt(rlx_tensor_get_f64(va, c) + eps);
      ((float *)rlx_tensor_data(ta))[c] = (float)f;
      ((float *)rlx_tensor_data(tb))[c] = (float)(rlx_tensor_get_f64(bi, c) - rlx_tensor_get_f64(mu, c) * f);
    }
    st = imp_tensor_const(I, ta, &a);
    if (!st) st = imp_tensor_const(I, tb, &b);
    rlx_tensor_free(ta);
    rlx_tensor_free(tb);
    RLX_TRY(st);
    RLX_TRY(imp_cast(I, n, a, tx.dtype, &a));
    RLX_TRY(imp_cast(I, n, b, tx.dtype, &b));
  } else {
    rlx_value s, bb, m, v;
    RLX_TRY(imp_in(I, n, 1, &s));
    RLX_TRY(imp_in(I, n, 2, &bb));
    RLX_TRY(imp_in(I, n, 3, &m));
    RLX_TRY(imp_in(I, n, 4, &v));
    RLX_TRY(imp_with_scalar(I, n, RLX_OP_ADD, v, eps, &v));
    RLX_TRY(imp_un(I, n, RLX_OP_RSQRT, v, &v));
    RLX_TRY(imp_bin(I, n, RLX_OP_MUL, s, v, &a));
    RLX_TRY(imp_bin(I, n, RLX_OP_MUL, m, a, &m));
    RLX_TRY(imp_bin(I, n, RLX_OP_SUB, bb, m, &b));
  }
  RLX_TRY(per_channel(I, n, a, tx.rank, &a));
  RLX_TRY(per_channel(I, n, b, tx.rank, &b));
  RLX_TRY(imp_bin(I, n, RLX_OP_MUL, x, a, &y));
  RLX_TRY(imp_bin(I, n, RLX_OP_ADD, y, b, &y));
  return imp_out(I, n, 0, y);
}

static rlx_status *group_norm(rlx_imp *I, const Onnx__NodeProto *n, int64_t groups, rlx_value x, rlx_value s, rlx_value b, double eps,
                              rlx_value *y) {
  rlx_value in[3] = {x, s, b};
  rlx_attr a[2] = {RLX_ATTR_I("num_groups", groups), RLX_ATTR_F("epsilon", eps)};
  return imp_add(I, n, RLX_OP_GROUP_NORM, 3, in, 2, a, y);
}

static rlx_status *map_instance_norm(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type tx;
  RLX_TRY(imp_in_type(I, n, 0, false, &tx));
  rlx_value x, s, b, y;
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(imp_in(I, n, 1, &s));
  RLX_TRY(imp_in(I, n, 2, &b));
  RLX_TRY(group_norm(I, n, tx.dims[1], x, s, b, imp_attr_f(n, "epsilon", 1e-5), &y));
  return imp_out(I, n, 0, y);
}

/* GroupNormalization: opset 18 has per-group scale/bias [G], opset 21 per-channel [C]. */
static rlx_status *map_group_norm(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type tx;
  RLX_TRY(imp_in_type(I, n, 0, false, &tx));
  if (tx.rank < 2) IMP_FAIL(INVALID_ARGUMENT, "X must be [N,C,...], got %s", RLX_TYPE_STR(&tx));
  int64_t G = imp_attr_i(n, "num_groups", 0), C = tx.dims[1];
  if (G <= 0) IMP_FAIL(INVALID_ARGUMENT, "num_groups must be positive (the attribute is required), got %lld", (long long)G);
  rlx_value x, sb[2], y;
  RLX_TRY(imp_in(I, n, 0, &x));
  for (int i = 0; i < 2; i++) {
    RLX_TRY(imp_in(I, n, (size_t)(1 + i), &sb[i]));
    const rlx_type *t = imp_type(I, sb[i]);
    if (t->rank == 1 && t->dims[0] == G && G != C) { /* repeat each group's value C/G times */
      if (C < 0 || C % G)
        IMP_FAIL(INVALID_ARGUMENT, "input %d %s holds one value per group: X %s needs a fixed channel count that num_groups %lld divides",
                 1 + i, RLX_TYPE_STR(t), RLX_TYPE_STR(&tx), (long long)G);
      RLX_TRY(imp_reshape(I, n, sb[i], 2, (int64_t[]){G, 1}, &sb[i]));
      RLX_TRY(imp_expand(I, n, sb[i], 2, (int64_t[]){G, C / G}, &sb[i]));
      RLX_TRY(imp_reshape(I, n, sb[i], 1, &C, &sb[i]));
    }
  }
  RLX_TRY(group_norm(I, n, G, x, sb[0], sb[1], imp_attr_f(n, "epsilon", 1e-5), &y));
  return imp_out(I, n, 0, y);
}

rlx_status *imp_trailing_norm(rlx_imp *I, const Onnx__NodeProto *n, rlx_op op, rlx_value *out) {
  rlx_type tx;
  RLX_TRY(imp_in_type(I, n, 0, true, &tx));
  int64_t axis = imp_axis(imp_attr_i(n, "axis", -1), tx.rank), outer = 1, inner = 1;
  if (axis < 0 || axis >= tx.rank) IMP_FAIL(OUT_OF_RANGE, "axis for rank %d", tx.rank);
  for (int i = 0; i < tx.rank; i++) *(i < axis ? &outer : &inner) *= tx.dims[i];
  rlx_value x2, p[2], y;
  RLX_TRY(imp_in(I, n, 0, &x2));
  RLX_TRY(imp_reshape(I, n, x2, 2, (int64_t[]){outer, inner}, &x2));
  size_t np = imp_has(n, 2) ? 2 : 1;
  for (size_t i = 0; i < np; i++) {
    RLX_TRY(imp_in(I, n, 1 + i, &p[i]));
    RLX_TRY(imp_expand(I, n, p[i], (int)(tx.rank - axis), tx.dims + axis, &p[i]));
    RLX_TRY(imp_reshape(I, n, p[i], 1, &inner, &p[i]));
    RLX_TRY(imp_cast(I, n, p[i], tx.dtype, &p[i]));
  }
  rlx_value in[3] = {x2, p[0], p[1]};
  rlx_attr a[2] = {RLX_ATTR_I("axis", -1), RLX_ATTR_F("epsilon", imp_attr_f(n, "epsilon", 1e-5))};
  RLX_TRY(imp_add(I, n, op, 1 + np, in, 2, a, &y));
  return imp_reshape(I, n, y, tx.rank, tx.dims, out);
}

/* LayerNormalization; the optional Mean and InvStdDev outputs are computed too. */
static rlx_status *map_layer_norm(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type tx;
  rlx_value x, y;
  RLX_TRY(imp_trailing_norm(I, n, RLX_OP_LAYER_NORM, &y));
  RLX_TRY(imp_in_type(I, n, 0, true, &tx));
  RLX_TRY(imp_in(I, n, 0, &x));
  int64_t axis = imp_axis(imp_attr_i(n, "axis", -1), tx.rank);
  double eps = imp_attr_f(n, "epsilon", 1e-5);
  RLX_TRY(imp_out(I, n, 0, y));
  if ((n->n_output > 1 && n->output[1][0]) || (n->n_output > 2 && n->output[2][0])) {
    int64_t axes[RLX_MAX_RANK], na = 0;
    for (int64_t i = axis; i < tx.rank; i++) axes[na++] = i;
    rlx_value xf, mean, d, var, inv;
    RLX_TRY(imp_cast(I, n, x, RLX_DTYPE_F32, &xf));
    RLX_TRY(imp_reduce(I, n, "mean", xf, (size_t)na, axes, true, &mean));
    RLX_TRY(imp_bin(I, n, RLX_OP_SUB, xf, mean, &d));
    RLX_TRY(imp_bin(I, n, RLX_OP_MUL, d, d, &d));
    RLX_TRY(imp_reduce(I, n, "mean", d, (size_t)na, axes, true, &var));
    RLX_TRY(imp_with_scalar(I, n, RLX_OP_ADD, var, eps, &var));
    RLX_TRY(imp_un(I, n, RLX_OP_RSQRT, var, &inv));
    RLX_TRY(imp_out(I, n, 1, mean));
    RLX_TRY(imp_out(I, n, 2, inv));
  }
  return NULL;
}

/* Softmax family: opset < 13 coerces the input to 2-D at `axis` (default 1). */
static rlx_status *softmax_like(rlx_imp *I, const Onnx__NodeProto *n, rlx_op op, bool hard) {
  rlx_type tx;
  RLX_TRY(imp_in_type(I, n, 0, false, &tx));
  bool coerce = I->opset < 13;
  int64_t axis = imp_axis(imp_attr_i(n, "axis", coerce ? 1 : -1), tx.rank);
  if (axis < 0 || axis >= tx.rank) IMP_FAIL(OUT_OF_RANGE, "axis for rank %d", tx.rank);
  rlx_value x, y;
  RLX_TRY(imp_in(I, n, 0, &x));
  int64_t ax = axis;
  if (coerce) {
    if (!rlx_type_is_static(&tx)) IMP_FAIL(UNIMPLEMENTED, "opset < 13 softmax needs static shapes");
    int64_t d[2] = {1, 1};
    for (int i = 0; i < tx.rank; i++) d[i >= axis] *= tx.dims[i];
    RLX_TRY(imp_reshape(I, n, x, 2, d, &x));
    ax = 1;
  }
  if (hard) { /* one-hot of the first maximum */
    rlx_type t = *imp_type(I, x);
    rlx_value am, ar;
    rlx_attr a[3] = {RLX_ATTR_I("axis", ax), RLX_ATTR_I("keepdims", 1), RLX_ATTR_I("select_last_index", 0)};
    RLX_TRY(imp_add(I, n, RLX_OP_ARG_MAX, 1, &x, 3, a, &am));
    int64_t len = t.dims[ax];
    RLX_TRY(imp_arange(I, len, &ar));
    RLX_TRY(imp_along(I, n, ar, t.rank, ax, len, &ar));
    RLX_TRY(imp_bin(I, n, RLX_OP_EQUAL, am, ar, &y));
    RLX_TRY(imp_cast(I, n, y, t.dtype, &y));
  } else {
    rlx_attr a = RLX_ATTR_I("axis", ax);
    RLX_TRY(imp_add(I, n, op, 1, &x, 1, &a, &y));
  }
  if (coerce) RLX_TRY(imp_reshape(I, n, y, tx.rank, tx.dims, &y));
  return imp_out(I, n, 0, y);
}
static rlx_status *map_softmax(rlx_imp *I, const Onnx__NodeProto *n) { return softmax_like(I, n, RLX_OP_SOFTMAX, false); }
static rlx_status *map_log_softmax(rlx_imp *I, const Onnx__NodeProto *n) { return softmax_like(I, n, RLX_OP_LOG_SOFTMAX, false); }
static rlx_status *map_hardmax(rlx_imp *I, const Onnx__NodeProto *n) { return softmax_like(I, n, RLX_OP_SOFTMAX, true); }

/* Resize (opset 10: X, scales; 11+: X, roi, scales, sizes; 18+: axes) and Upsample. Scales,
 * sizes and roi must be known at import time; keep_aspect_ratio_policy is resolved here into
 * sizes and one scale for the listed axes (round half up, as the ONNX operator docs say). */
static rlx_status *resize(rlx_imp *I, const Onnx__NodeProto *n, bool upsample) {
  rlx_type tx;
  RLX_TRY(imp_in_type(I, n, 0, true, &tx));
  int r = tx.rank;
  char mb[32], cb[32], nb[32], kb[32];
  const char *mode = imp_attr_s(n, "mode", "nearest", mb, sizeof mb);
  if (!strcmp(mode, "bilinear")) mode = "linear";
  bool old = upsample || I->opset < 11;
  const char *ctm = old ? "asymmetric" : imp_attr_s(n, "coordinate_transformation_mode", "half_pixel", cb, sizeof cb);
  const char *nm = old ? "floor" : imp_attr_s(n, "nearest_mode", "round_prefer_floor", nb, sizeof nb);
  const char *policy = imp_attr_s(n, "keep_aspect_ratio_policy", "stretch", kb, sizeof kb);
  if (strcmp(policy, "stretch") && strcmp(policy, "not_larger") && strcmp(policy, "not_smaller"))
    IMP_FAIL(INVALID_ARGUMENT, "keep_aspect_ratio_policy '%s'", policy);
  /* axes the scales/sizes/roi entries refer to (all by default) */
  int64_t axes[RLX_MAX_RANK];
  size_t na = 0;
  const int64_t *axa = imp_attr_ints(n, "axes", &na);
  if (na > (size_t)r) IMP_FAIL(INVALID_ARGUMENT, "axes has %zu entries for rank %d", na, r);
  for (size_t i = 0; i < na; i++) {
    axes[i] = imp_axis(axa[i], r);
    if (axes[i] < 0 || axes[i] >= r) IMP_FAIL(OUT_OF_RANGE, "axis %lld for rank %d", (long long)axa[i], r);
  }
  if (!na)
    for (int i = 0; i < r; i++) axes[na++] = i;
  double scales[RLX_MAX_RANK], roi[2 * RLX_MAX_RANK];
  int64_t sizes[RLX_MAX_RANK];
  for (int i = 0; i < r; i++) scales[i] = 1, sizes[i] = tx.dims[i], roi[i] = 0, roi[i + r] = 1;
  double *sc = NULL, *ro = NULL;
  int64_t *sz = NULL;
  size_t nsc = 0, nsz = 0, nro = 0;
  rlx_status *st = NULL;
  size_t si = upsample ? 1 : I->opset < 11 ? 1 : 2, zi = 3;
  if (upsample && I->opset < 9) {
    const float *f = imp_attr_floats(n, "scales", &nsc);
    sc = malloc((nsc + 1) * sizeof *sc);
    if (!sc) return RLX_OOM();
    for (size_t i = 0; i < nsc; i++) sc[i] = f[i];
  } else if (imp_has(n, si)) {
    const rlx_tensor *t = imp_const(I, n, si);
    if (t && rlx_tensor_numel(t) > 0) st = imp_const_floats(I, n, si, "scales", &sc, &nsc);
    else if (!t) st = RLX_ERR(UNIMPLEMENTED, "scales must be known at import time");
  }
  if (!st && !old && imp_has(n, zi)) st = imp_const_ints(I, n, zi, "sizes", &sz, &nsz);
  if (!st && !old && imp_has(n, 1) && !strcmp(ctm, "tf_crop_and_resize")) st = imp_const_floats(I, n, 1, "roi", &ro, &nro);
  if (!st && ((nsc && nsc != na) || (nsz && nsz != na) || (nro && nro != 2 * na)))
    st = RLX_ERR(INVALID_ARGUMENT, "scales/sizes/roi have %zu/%zu/%zu entries for %zu axes", nsc, nsz, nro, na);
  if (!st && !nsc && !nsz) st = RLX_ERR(INVALID_ARGUMENT, "Resize needs scales or sizes");
  for (size_t i = 0; !st && nro && i < na; i++) roi[axes[i]] = ro[i], roi[axes[i] + r] = ro[i + na];
  for (size_t i = 0; !st && i < nsc; i++) {
    int64_t a = axes[i];
    scales[a] = sc[i];
    sizes[a] = imp_sat_i64(floor((double)tx.dims[a] * (roi[a + r] - roi[a]) * sc[i]));
  }
  if (!st && nsz) {
    double keep = !strcmp(policy, "not_larger") ? INFINITY : -INFINITY;
    for (size_t i = 0; i < nsz; i++) {
      double f = tx.dims[axes[i]] ? (double)sz[i] / (double)tx.dims[axes[i]] : 1;
      keep = !strcmp(policy, "not_larger") ? fmin(keep, f) : fmax(keep, f);
    }
    for (size_t i = 0; i < nsz; i++) {
      int64_t a = axes[i];
      if (!strcmp(policy, "stretch")) sizes[a] = sz[i];
      else scales[a] = keep, sizes[a] = imp_sat_i64(floor(keep * (double)tx.dims[a] + 0.5));
    }
  }
  bool have_scales = nsc || (nsz && strcmp(policy, "stretch"));
  free(sc), free(sz), free(ro);
  if (st) return st;
  rlx_value x, y;
  RLX_TRY(imp_in(I, n, 0, &x));
  rlx_attr a[10] = {RLX_ATTR_IS("sizes", (size_t)r, sizes), RLX_ATTR_FS("scales", have_scales ? (size_t)r : 0, scales),
                    RLX_ATTR_FS("roi", nro ? 2 * (size_t)r : 0, roi), RLX_ATTR_S("mode", mode),
                    RLX_ATTR_S("coordinate_transformation_mode", ctm), RLX_ATTR_S("nearest_mode", nm),
                    RLX_ATTR_F("cubic_coeff_a", imp_attr_f(n, "cubic_coeff_a", -0.75)),
                    RLX_ATTR_I("exclude_outside", imp_attr_i(n, "exclude_outside", 0)),
                    RLX_ATTR_F("extrapolation_value", imp_attr_f(n, "extrapolation_value", 0)),
                    RLX_ATTR_I("antialias", imp_attr_i(n, "antialias", 0))};
  RLX_TRY(imp_add(I, n, RLX_OP_RESIZE, 1, &x, 10, a, &y));
  return imp_out(I, n, 0, y);
}
static rlx_status *map_resize(rlx_imp *I, const Onnx__NodeProto *n) { return resize(I, n, false); }
static rlx_status *map_upsample(rlx_imp *I, const Onnx__NodeProto *n) { return resize(I, n, true); }

/* LRN: x / (bias + alpha/size * sum over the channel window of x^2)^beta. */
static rlx_status *map_lrn(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type tx;
  RLX_TRY(imp_in_type(I, n, 0, true, &tx));
  int64_t size = imp_attr_i(n, "size", 1), N = tx.dims[0], C = tx.dims[1], rest = 1;
  for (int i = 2; i < tx.rank; i++) rest *= tx.dims[i];
  double alpha = imp_attr_f(n, "alpha", 1e-4), beta = imp_attr_f(n, "beta", 0.75), bias = imp_attr_f(n, "bias", 1.0);
  rlx_value x, sq, s, y;
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(imp_bin(I, n, RLX_OP_MUL, x, x, &sq));
  RLX_TRY(imp_reshape(I, n, sq, 4, (int64_t[]){N, 1, C, rest}, &sq));
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  rlx_attr a[4] = {RLX_ATTR_S("kind", "sum"), RLX_ATTR_IS("kernel_shape", 2, ((int64_t[]){size, 1})),
                   RLX_ATTR_IS("pads", 4, ((int64_t[]){lo, 0, hi, 0})), RLX_ATTR_I("count_include_pad", 1)};
  RLX_TRY(imp_add(I, n, RLX_OP_POOL, 1, &sq, 4, a, &s));
  RLX_TRY(imp_reshape(I, n, s, tx.rank, tx.dims, &s));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_MUL, s, alpha / (double)size, &s));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_ADD, s, bias, &s));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_POW, s, beta, &s));
  RLX_TRY(imp_bin(I, n, RLX_OP_DIV, x, s, &y));
  return imp_out(I, n, 0, y);
}

/* MeanVarianceNormalization: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9) over axes. */
static rlx_status *map_mvn(rlx_imp *I, const Onnx__NodeProto *n) {
  size_t na;
  const int64_t *ax = imp_attr_ints(n, "axes", &na);
  int64_t dflt[3] = {0, 2, 3};
  if (!na) ax = dflt, na = 3;
  rlx_value x, m, sq, m2, var, y;
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(imp_reduce(I, n, "mean", x, na, ax, true, &m));
  RLX_TRY(imp_bin(I, n, RLX_OP_MUL, x, x, &sq));
  RLX_TRY(imp_reduce(I, n, "mean", sq, na, ax, true, &m2));
  RLX_TRY(imp_bin(I, n, RLX_OP_MUL, m, m, &sq));
  RLX_TRY(imp_bin(I, n, RLX_OP_SUB, m2, sq, &var));
  RLX_TRY(imp_un(I, n, RLX_OP_SQRT, var, &var));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_ADD, var, 1e-9, &var));
  RLX_TRY(imp_bin(I, n, RLX_OP_SUB, x, m, &y));
  RLX_TRY(imp_bin(I, n, RLX_OP_DIV, y, var, &y));
  return imp_out(I, n, 0, y);
}

/* LpNormalization: x / ||x||_p along axis (p = 1 or 2); a zero norm divides by 1 (the result is 0). */
static rlx_status *map_lp_norm(rlx_imp *I, const Onnx__NodeProto *n) {
  int64_t p = imp_attr_i(n, "p", 2), axis = imp_attr_i(n, "axis", -1);
  rlx_value x, a, y, z, one;
  RLX_TRY(imp_in(I, n, 0, &x));
  if (p == 1) RLX_TRY(imp_un(I, n, RLX_OP_ABS, x, &a));
  else if (p == 2) RLX_TRY(imp_bin(I, n, RLX_OP_MUL, x, x, &a));
  else IMP_FAIL(UNIMPLEMENTED, "LpNormalization p = %lld", (long long)p);
  RLX_TRY(imp_reduce(I, n, "sum", a, 1, &axis, true, &a));
  if (p == 2) RLX_TRY(imp_un(I, n, RLX_OP_SQRT, a, &a));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_EQUAL, a, 0, &z));
  RLX_TRY(imp_scalar(I, 1, imp_type(I, a)->dtype, &one));
  RLX_TRY(imp_select(I, n, z, one, a, &a));
  RLX_TRY(imp_bin(I, n, RLX_OP_DIV, x, a, &y));
  return imp_out(I, n, 0, y);
}

const rlx_onnx_op rlx_onnx_nn_ops[] = {
    {"MatMul", 0, map_matmul, false},
    {"Gemm", 0, map_gemm, false},
    {"Conv", 0, map_conv, false},
    {"ConvTranspose", 0, map_conv_transpose, false},
    {"MaxPool", 0, map_max_pool, false},
    {"AveragePool", 0, map_average_pool, false},
    {"LpPool", 0, map_lp_pool, false},
    {"GlobalAveragePool", 0, map_global_average_pool, false},
    {"GlobalMaxPool", 0, map_global_max_pool, false},
    {"GlobalLpPool", 0, map_global_lp_pool, false},
    {"BatchNormalization", 0, map_batch_norm, false},
    {"InstanceNormalization", 0, map_instance_norm, false},
    {"GroupNormalization", 0, map_group_norm, false},
    {"LayerNormalization", 0, map_layer_norm, false},
    {"Softmax", 0, map_softmax, false},
    {"LogSoftmax", 0, map_log_softmax, false},
    {"Hardmax", 0, map_hardmax, false},
    {"Resize", 0, map_resize, false},
    {"Upsample", 0, map_upsample, false},
    {"LRN", 0, map_lrn, false},
    {"MeanVarianceNormalization", 0, map_mvn, false},
    {"LpNormalization", 0, map_lp_norm, false},
};
const size_t rlx_onnx_nn_ops_len = RLX_ARRAY_LEN(rlx_onnx_nn_ops);
