/* import_ops.c: the elementwise ONNX mappings (math, logic, casts, activations) and the lookup
 * over every mapping table (rlx_onnx_find_op). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "onnx/import_ops.h"

/* ---- elementwise ---- */

/* One-input ops that are one rlx op. */
static rlx_status *unary(rlx_imp *I, const Onnx__NodeProto *n, rlx_op op) { return imp_op_out(I, n, op, 1, 0, NULL); }

#define UNARY(fn, op) \
  static rlx_status *fn(rlx_imp *I, const Onnx__NodeProto *n) { return unary(I, n, op); }
UNARY(map_abs, RLX_OP_ABS)
UNARY(map_neg, RLX_OP_NEG)
UNARY(map_exp, RLX_OP_EXP)
UNARY(map_log, RLX_OP_LOG)
UNARY(map_sqrt, RLX_OP_SQRT)
UNARY(map_sin, RLX_OP_SIN)
UNARY(map_cos, RLX_OP_COS)
UNARY(map_tan, RLX_OP_TAN)
UNARY(map_asin, RLX_OP_ASIN)
UNARY(map_acos, RLX_OP_ACOS)
UNARY(map_atan, RLX_OP_ATAN)
UNARY(map_sinh, RLX_OP_SINH)
UNARY(map_cosh, RLX_OP_COSH)
UNARY(map_tanh, RLX_OP_TANH)
UNARY(map_asinh, RLX_OP_ASINH)
UNARY(map_acosh, RLX_OP_ACOSH)
UNARY(map_atanh, RLX_OP_ATANH)
UNARY(map_sigmoid, RLX_OP_SIGMOID)
UNARY(map_relu, RLX_OP_RELU)
UNARY(map_round, RLX_OP_ROUND)
UNARY(map_floor, RLX_OP_FLOOR)
UNARY(map_ceil, RLX_OP_CEIL)
UNARY(map_sign, RLX_OP_SIGN)
UNARY(map_reciprocal, RLX_OP_RECIPROCAL)
UNARY(map_erf, RLX_OP_ERF)
UNARY(map_softplus, RLX_OP_SOFTPLUS)
UNARY(map_not, RLX_OP_NOT)
UNARY(map_isnan, RLX_OP_IS_NAN)
UNARY(map_bitwise_not, RLX_OP_BITWISE_NOT)

/* Before opset 7, B aligns with A starting at `axis` (attribute axis with broadcast = 1; PRelu:
 * a [C] slope is per channel, axis 1): B gets trailing unit dims so NumPy rules apply. */
static rlx_status *legacy_align(rlx_imp *I, const Onnx__NodeProto *n, rlx_value a, rlx_value *b, bool prelu) {
  const rlx_type *ta = imp_type(I, a), *tb = imp_type(I, *b);
  if (I->opset >= 7 || tb->rank == 0 || tb->rank >= ta->rank) return NULL;
  int64_t axis;
  if (prelu) {
    if (tb->rank != 1 || ta->rank < 2 || tb->dims[0] != ta->dims[1]) return NULL;
    axis = 1;
  } else {
    if (!imp_attr_i(n, "broadcast", 0) || !imp_attr(n, "axis")) return NULL;
    axis = imp_attr_i(n, "axis", 0);
    if (axis < 0) axis += ta->rank;
    if (axis < 0 || axis + tb->rank > ta->rank) IMP_FAIL(INVALID_ARGUMENT, "broadcast axis %lld does not fit %s and %s",
                                                         (long long)imp_attr_i(n, "axis", 0), RLX_TYPE_STR(ta), RLX_TYPE_STR(tb));
  }
  int64_t d[RLX_MAX_RANK];
  int r = (int)(ta->rank - axis);
  for (int i = 0; i < r; i++) d[i] = i < tb->rank ? tb->dims[i] : 1;
  return imp_reshape(I, n, *b, r, d, b);
}

/* Two-input ops; for compares and arithmetic both inputs must share a dtype (ONNX requires it). */
static rlx_status *binary(rlx_imp *I, const Onnx__NodeProto *n, rlx_op op, size_t na, const rlx_attr *a) {
  rlx_value in[2], y;
  RLX_TRY(imp_in(I, n, 0, &in[0]));
  RLX_TRY(imp_in(I, n, 1, &in[1]));
  RLX_TRY(legacy_align(I, n, in[0], &in[1], false));
  RLX_TRY(imp_add(I, n, op, 2, in, na, a, &y));
  return imp_out(I, n, 0, y);
}

#define BINARY(fn, op) \
  static rlx_status *fn(rlx_imp *I, const Onnx__NodeProto *n) { return binary(I, n, op, 0, NULL); }
BINARY(map_add, RLX_OP_ADD)
BINARY(map_sub, RLX_OP_SUB)
BINARY(map_mul, RLX_OP_MUL)
BINARY(map_div, RLX_OP_DIV)
BINARY(map_and, RLX_OP_AND)
BINARY(map_or, RLX_OP_OR)
BINARY(map_xor, RLX_OP_XOR)
BINARY(map_bitwise_and, RLX_OP_BITWISE_AND)
BINARY(map_bitwise_or, RLX_OP_BITWISE_OR)
BINARY(map_bitwise_xor, RLX_OP_BITWISE_XOR)
BINARY(map_equal, RLX_OP_EQUAL)
BINARY(map_less, RLX_OP_LESS)
BINARY(map_less_equal, RLX_OP_LESS_EQUAL)
BINARY(map_greater, RLX_OP_GREATER)
BINARY(map_greater_equal, RLX_OP_GREATER_EQUAL)

static rlx_status *map_mod(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_attr a = RLX_ATTR_I("fmod", imp_attr_i(n, "fmod", 0));
  return binary(I, n, RLX_OP_MOD, 1, &a);
}

static rlx_status *map_bit_shift(rlx_imp *I, const Onnx__NodeProto *n) {
  char buf[16];
  const char *dir = imp_attr_s(n, "direction", "", buf, sizeof buf);
  rlx_attr a = RLX_ATTR_S("direction", !strcmp(dir, "LEFT") ? "left" : !strcmp(dir, "RIGHT") ? "right" : dir);
  return binary(I, n, RLX_OP_BIT_SHIFT, 1, &a);
}

/* Pow: the exponent may have another type (ONNX Pow-12+); it is cast to the base's. */
static rlx_status *map_pow(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_value in[2], y;
  RLX_TRY(imp_in(I, n, 0, &in[0]));
  RLX_TRY(imp_in(I, n, 1, &in[1]));
  RLX_TRY(imp_cast(I, n, in[1], imp_type(I, in[0])->dtype, &in[1]));
  RLX_TRY(imp_add(I, n, RLX_OP_POW, 2, in, 0, NULL, &y));
  return imp_out(I, n, 0, y);
}

/* Sum/Mean/Max/Min over any number of inputs (a chain of binary ops). */
static rlx_status *variadic(rlx_imp *I, const Onnx__NodeProto *n, rlx_op op, bool mean) {
  size_t k = imp_nin(n);
  if (!k) IMP_FAIL(INVALID_ARGUMENT, "needs at least one input");
  rlx_value acc;
  RLX_TRY(imp_in(I, n, 0, &acc));
  for (size_t i = 1; i < k; i++) {
    rlx_value in[2] = {acc};
    RLX_TRY(imp_in(I, n, i, &in[1]));
    RLX_TRY(imp_add(I, n, op, 2, in, 0, NULL, &acc));
  }
  if (mean && k > 1) {
    rlx_value in[2] = {acc};
    RLX_TRY(imp_scalar(I, (double)k, imp_type(I, acc)->dtype, &in[1]));
    RLX_TRY(imp_add(I, n, RLX_OP_DIV, 2, in, 0, NULL, &acc));
  }
  return imp_out(I, n, 0, acc);
}
static rlx_status *map_sum(rlx_imp *I, const Onnx__NodeProto *n) { return variadic(I, n, RLX_OP_ADD, false); }
static rlx_status *map_mean(rlx_imp *I, const Onnx__NodeProto *n) { return variadic(I, n, RLX_OP_ADD, true); }
static rlx_status *map_max(rlx_imp *I, const Onnx__NodeProto *n) { return variadic(I, n, RLX_OP_MAX, false); }
static rlx_status *map_min(rlx_imp *I, const Onnx__NodeProto *n) { return variadic(I, n, RLX_OP_MIN, false); }

static rlx_status *map_where(rlx_imp *I, const Onnx__NodeProto *n) { return imp_op_out(I, n, RLX_OP_WHERE, 3, 0, NULL); }

static rlx_status *map_cast(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_value x, y;
  rlx_dtype dt;
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(rlx_onnx_dtype((int32_t)imp_attr_i(n, "to", 0), &dt));
  RLX_TRY(imp_cast_sat(I, n, x, dt, imp_attr_i(n, "saturate", 1) != 0, &y));
  return imp_out(I, n, 0, y);
}

static rlx_status *map_cast_like(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_value x, t, y;
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(imp_in(I, n, 1, &t));
  RLX_TRY(imp_cast_sat(I, n, x, imp_type(I, t)->dtype, imp_attr_i(n, "saturate", 1) != 0, &y));
  return imp_out(I, n, 0, y);
}

static rlx_status *map_identity(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_value x;
  RLX_TRY(imp_in(I, n, 0, &x));
  return imp_out(I, n, 0, x);
}

/* Dropout in inference (or training with ratio 0): identity; the optional mask output is all
 * true. Training with a non-zero ratio draws random masks: UNIMPLEMENTED. */
static rlx_status *map_dropout(rlx_imp *I, const Onnx__NodeProto *n) {
  const rlx_tensor *train = imp_const(I, n, 2), *ratio = imp_const(I, n, 1);
  bool training = imp_has(n, 2) && (!train || rlx_tensor_get_f64(train, 0) != 0);
  bool no_drop = imp_has(n, 1) ? ratio && rlx_tensor_get_f64(ratio, 0) == 0 : imp_attr_f(n, "ratio", 0.5) == 0;
  if (training && !no_drop) IMP_FAIL(UNIMPLEMENTED, "Dropout in training mode with a non-zero (or run-time) ratio draws random masks");
  rlx_value x;
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(imp_out(I, n, 0, x));
  if (n->n_output > 1 && n->output[1][0]) {
    rlx_value m;
    const rlx_type *t = imp_type(I, x);
    RLX_TRY(imp_filled(I, n, 1, RLX_DTYPE_BOOL, t->rank, t->dims, &m));
    RLX_TRY(imp_out(I, n, 1, m));
  }
  return NULL;
}


/* Clip(x, min, max): min/max are attributes before opset 11, optional inputs after. */
static rlx_status *map_clip(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_value x;
  RLX_TRY(imp_in(I, n, 0, &x));
  if (I->opset < 11) {
    if (imp_attr(n, "min")) RLX_TRY(imp_with_scalar(I, n, RLX_OP_MAX, x, imp_attr_f(n, "min", 0), &x));
    if (imp_attr(n, "max")) RLX_TRY(imp_with_scalar(I, n, RLX_OP_MIN, x, imp_attr_f(n, "max", 0), &x));
  } else {
    for (size_t k = 1; k < 3; k++) {
      if (!imp_has(n, k)) continue;
      rlx_value b;
      RLX_TRY(imp_in(I, n, k, &b));
      RLX_TRY(imp_bin(I, n, k == 1 ? RLX_OP_MAX : RLX_OP_MIN, x, b, &x));
    }
  }
  return imp_out(I, n, 0, x);
}

/* ---- activations composed from rlx ops (formulas from the ONNX operator docs) ---- */

/* y = (x cmp c) ? x : other: the piecewise activations that pass x through above a threshold. */
static rlx_status *pass_above(rlx_imp *I, const Onnx__NodeProto *n, rlx_value x, rlx_op cmp, double c, rlx_value other, rlx_value *y) {
  rlx_value keep;
  RLX_TRY(imp_with_scalar(I, n, cmp, x, c, &keep));
  return imp_select(I, n, keep, x, other, y);
}

/* alpha (exp(x / s) - 1) for x <= 0, x above (Elu: s = 1; Celu: s = alpha). */
static rlx_status *elu(rlx_imp *I, const Onnx__NodeProto *n, rlx_value x, double alpha, double s, rlx_value *y) {
  rlx_value e;
  RLX_TRY(s != 1 ? imp_with_scalar(I, n, RLX_OP_DIV, x, s, &e) : (e = x, NULL));
  RLX_TRY(imp_un(I, n, RLX_OP_EXP, e, &e));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_SUB, e, 1, &e));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_MUL, e, alpha, &e));
  return pass_above(I, n, x, RLX_OP_GREATER, 0, e, y);
}

/* min(max(alpha x + beta, 0), 1). */
static rlx_status *hard_sigmoid(rlx_imp *I, const Onnx__NodeProto *n, rlx_value x, double alpha, double beta, rlx_value *y) {
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_MUL, x, alpha, y));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_ADD, *y, beta, y));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_MIN, *y, 1, y));
  return imp_with_scalar(I, n, RLX_OP_MAX, *y, 0, y);
}

rlx_status *imp_activation(rlx_imp *I, const Onnx__NodeProto *n, const char *name, const double *alpha, const double *beta, rlx_value x,
                           rlx_value *y) {
#define ARG(p, dflt) ((p) ? *(p) : (dflt))
  static const struct {
    const char *name;
    rlx_op op;
  } plain[] = {{"Relu", RLX_OP_RELU}, {"Tanh", RLX_OP_TANH}, {"Sigmoid", RLX_OP_SIGMOID}, {"Softplus", RLX_OP_SOFTPLUS}};
  for (size_t i = 0; i < RLX_ARRAY_LEN(plain); i++)
    if (!strcasecmp(name, plain[i].name)) return imp_un(I, n, plain[i].op, x, y);
  rlx_value t;
  if (!strcasecmp(name, "LeakyRelu")) { /* x >= 0 ? x : alpha x */
    RLX_TRY(imp_with_scalar(I, n, RLX_OP_MUL, x, ARG(alpha, 0.01), &t));
    return pass_above(I, n, x, RLX_OP_GREATER_EQUAL, 0, t, y);
  }
  if (!strcasecmp(name, "ThresholdedRelu")) { /* x > alpha ? x : 0 */
    RLX_TRY(imp_with_scalar(I, n, RLX_OP_MUL, x, 0, &t));
    return pass_above(I, n, x, RLX_OP_GREATER, ARG(alpha, 1.0), t, y);
  }
  if (!strcasecmp(name, "Elu")) return elu(I, n, x, ARG(alpha, 1.0), 1, y);
  if (!strcasecmp(name, "HardSigmoid")) return hard_sigmoid(I, n, x, ARG(alpha, 0.2), ARG(beta, 0.5), y);
  if (!strcasecmp(name, "Softsign")) { /* x / (1 + |x|) */
    RLX_TRY(imp_un(I, n, RLX_OP_ABS, x, &t));
    RLX_TRY(imp_with_scalar(I, n, RLX_OP_ADD, t, 1, &t));
    return imp_bin(I, n, RLX_OP_DIV, x, t, y);
  }
  if (!strcasecmp(name, "Affine")) { /* alpha x + beta */
    RLX_TRY(imp_with_scalar(I, n, RLX_OP_MUL, x, ARG(alpha, 1.0), &t));
    return imp_with_scalar(I, n, RLX_OP_ADD, t, ARG(beta, 0.0), y);
  }
  if (!strcasecmp(name, "ScaledTanh")) { /* alpha tanh(beta x) */
    RLX_TRY(imp_with_scalar(I, n, RLX_OP_MUL, x, ARG(beta, 1.0), &t));
    RLX_TRY(imp_un(I, n, RLX_OP_TANH, t, &t));
    return imp_with_scalar(I, n, RLX_OP_MUL, t, ARG(alpha, 1.0), y);
  }
#undef ARG
  IMP_FAIL(UNIMPLEMENTED, "activation '%s'", name);
}

/* The ONNX activation op of this name, its alpha/beta from the node's attributes. */
static rlx_status *activation_op(rlx_imp *I, const Onnx__NodeProto *n, const char *name) {
  const Onnx__AttributeProto *a = imp_attr(n, "alpha"), *b = imp_attr(n, "beta");
  double alpha = a && a->has_f ? a->f : 0, beta = b && b->has_f ? b->f : 0;
  rlx_value x, y;
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(imp_activation(I, n, name, a && a->has_f ? &alpha : NULL, b && b->has_f ? &beta : NULL, x, &y));
  return imp_out(I, n, 0, y);
}
static rlx_status *map_leaky_relu(rlx_imp *I, const Onnx__NodeProto *n) { return activation_op(I, n, "LeakyRelu"); }
static rlx_status *map_thresholded_relu(rlx_imp *I, const Onnx__NodeProto *n) { return activation_op(I, n, "ThresholdedRelu"); }
static rlx_status *map_elu(rlx_imp *I, const Onnx__NodeProto *n) { return activation_op(I, n, "Elu"); }
static rlx_status *map_hard_sigmoid(rlx_imp *I, const Onnx__NodeProto *n) { return activation_op(I, n, "HardSigmoid"); }
static rlx_status *map_softsign(rlx_imp *I, const Onnx__NodeProto *n) { return activation_op(I, n, "Softsign"); }

static rlx_status *map_prelu(rlx_imp *I, const Onnx__NodeProto *n) { /* x >= 0 ? x : slope x */
  rlx_value x, s, sx, y;
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(imp_in(I, n, 1, &s));
  RLX_TRY(legacy_align(I, n, x, &s, true));
  RLX_TRY(imp_bin(I, n, RLX_OP_MUL, x, s, &sx));
  RLX_TRY(pass_above(I, n, x, RLX_OP_GREATER_EQUAL, 0, sx, &y));
  return imp_out(I, n, 0, y);
}

static rlx_status *map_selu(rlx_imp *I, const Onnx__NodeProto *n) { /* gamma Elu(x; alpha) */
  rlx_value x, y;
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(elu(I, n, x, imp_attr_f(n, "alpha", 1.67326319217681884765625), 1, &y));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_MUL, y, imp_attr_f(n, "gamma", 1.05070102214813232421875), &y));
  return imp_out(I, n, 0, y);
}

static rlx_status *map_celu(rlx_imp *I, const Onnx__NodeProto *n) { /* alpha (exp(x / alpha) - 1) below 0 */
  rlx_value x, y;
  double alpha = imp_attr_f(n, "alpha", 1.0);
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(elu(I, n, x, alpha, alpha, &y));
  return imp_out(I, n, 0, y);
}

static rlx_status *map_hard_swish(rlx_imp *I, const Onnx__NodeProto *n) { /* x HardSigmoid(x; 1/6, 1/2) */
  rlx_value x, y;
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(hard_sigmoid(I, n, x, 1.0 / 6, 0.5, &y));
  RLX_TRY(imp_bin(I, n, RLX_OP_MUL, x, y, &y));
  return imp_out(I, n, 0, y);
}

static rlx_status *map_mish(rlx_imp *I, const Onnx__NodeProto *n) { /* x tanh(softplus(x)) */
  rlx_value x, y;
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(imp_un(I, n, RLX_OP_SOFTPLUS, x, &y));
  RLX_TRY(imp_un(I, n, RLX_OP_TANH, y, &y));
  RLX_TRY(imp_bin(I, n, RLX_OP_MUL, x, y, &y));
  return imp_out(I, n, 0, y);
}

static rlx_status *map_gelu(rlx_imp *I, const Onnx__NodeProto *n) {
  char buf[16];
  const char *approx = imp_attr_s(n, "approximate", "none", buf, sizeof buf);
  if (strcmp(approx, "none") && strcmp(approx, "tanh")) IMP_FAIL(INVALID_ARGUMENT, "Gelu approximate='%s' (expected none or tanh)", approx);
  return unary(I, n, strcmp(approx, "tanh") == 0 ? RLX_OP_GELU_APPROX : RLX_OP_GELU);
}

static rlx_status *map_isinf(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_attr a[2] = {RLX_ATTR_I("detect_negative", imp_attr_i(n, "detect_negative", 1)),
                   RLX_ATTR_I("detect_positive", imp_attr_i(n, "detect_positive", 1))};
  return imp_op_out(I, n, RLX_OP_IS_INF, 1, 2, a);
}

/* ---- the table ---- */

static const rlx_onnx_op table[] = {
    {"Abs", 0, map_abs, false}, {"Neg", 0, map_neg, false}, {"Exp", 0, map_exp, false}, {"Log", 0, map_log, false},
    {"Sqrt", 0, map_sqrt, false}, {"Sin", 0, map_sin, false}, {"Cos", 0, map_cos, false}, {"Tan", 0, map_tan, false},
    {"Asin", 0, map_asin, false}, {"Acos", 0, map_acos, false}, {"Atan", 0, map_atan, false}, {"Sinh", 0, map_sinh, false},
    {"Cosh", 0, map_cosh, false}, {"Tanh", 0, map_tanh, false}, {"Asinh", 0, map_asinh, false}, {"Acosh", 0, map_acosh, false},
    {"Atanh", 0, map_atanh, false}, {"Sigmoid", 0, map_sigmoid, false}, {"Relu", 0, map_relu, false},
    {"Round", 0, map_round, false}, {"Floor", 0, map_floor, false}, {"Ceil", 0, map_ceil, false}, {"Sign", 0, map_sign, false},
    {"Reciprocal", 0, map_reciprocal, false}, {"Erf", 0, map_erf, false}, {"Softplus", 0, map_softplus, false},
    {"Not", 0, map_not, false}, {"IsNaN", 0, map_isnan, false}, {"IsInf", 0, map_isinf, false},
    {"BitwiseNot", 0, map_bitwise_not, false}, {"Add", 0, map_add, false}, {"Sub", 0, map_sub, false},
    {"Mul", 0, map_mul, false}, {"Div", 0, map_div, false}, {"And", 0, map_and, false}, {"Or", 0, map_or, false},
    {"Xor", 0, map_xor, false}, {"BitwiseAnd", 0, map_bitwise_and, false}, {"BitwiseOr", 0, map_bitwise_or, false},
    {"BitwiseXor", 0, map_bitwise_xor, false}, {"Equal", 0, map_equal, false}, {"Less", 0, map_less, false},
    {"LessOrEqual", 0, map_less_equal, false}, {"Greater", 0, map_greater, false},
    {"GreaterOrEqual", 0, map_greater_equal, false}, {"Mod", 0, map_mod, false}, {"BitShift", 0, map_bit_shift, false},
    {"Pow", 0, map_pow, false}, {"Sum", 0, map_sum, false}, {"Mean", 0, map_mean, false}, {"Max", 0, map_max, false},
    {"Min", 0, map_min, false}, {"Where", 0, map_where, false}, {"Cast", 0, map_cast, false},
    {"CastLike", 0, map_cast_like, false}, {"Identity", 0, map_identity, false}, {"Dropout", 0, map_dropout, false},
    {"Clip", 0, map_clip, false}, {"LeakyRelu", 0, map_leaky_relu, false}, {"PRelu", 0, map_prelu, false},
    {"Elu", 0, map_elu, false}, {"Selu", 0, map_selu, false}, {"Celu", 0, map_celu, false},
    {"HardSigmoid", 0, map_hard_sigmoid, false}, {"HardSwish", 0, map_hard_swish, false},
    {"Softsign", 0, map_softsign, false}, {"Mish", 0, map_mish, false}, {"ThresholdedRelu", 0, map_thresholded_relu, false},
    {"Gelu", 0, map_gelu, false},
};
static const size_t table_len = RLX_ARRAY_LEN(table);

/* Ops of other domains are listed as "domain.op_type" (e.g. "ai.onnx.ml.Binarizer"). */
const rlx_onnx_op *rlx_onnx_find_op(const char *domain, const char *op_type, int64_t opset) {
  char key[256];
  if (domain && *domain && strcmp(domain, "ai.onnx")) {
    snprintf(key, sizeof key, "%s.%s", domain, op_type);
    op_type = key;
  }
  const rlx_onnx_op *best = NULL;
  static const struct {
    const rlx_onnx_op *ops;
    const size_t *len;
  } tables[] = {{table, &table_len},
                {rlx_onnx_tensor_ops, &rlx_onnx_tensor_ops_len},
                {rlx_onnx_reduce_ops, &rlx_onnx_reduce_ops_len},
                {rlx_onnx_nn_ops, &rlx_onnx_nn_ops_len},
                {rlx_onnx_fftsample_ops, &rlx_onnx_fftsample_ops_len},
                {rlx_onnx_attention_ops, &rlx_onnx_attention_ops_len},
                {rlx_onnx_control_ops, &rlx_onnx_control_ops_len},
                {rlx_onnx_importer_ops, &rlx_onnx_importer_ops_len},
                {rlx_onnx_convquant_ops, &rlx_onnx_convquant_ops_len}};
  for (size_t t = 0; t < RLX_ARRAY_LEN(tables); t++)
    for (size_t i = 0; i < *tables[t].len; i++) {
      const rlx_onnx_op *o = &tables[t].ops[i];
      if (strcmp(o->op_type, op_type) == 0 && o->since <= opset && (!best || o->since > best->since)) best = o;
    }
  return best;
}
