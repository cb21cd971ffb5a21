/* import_ops_reduce.c: ONNX reductions (ReduceX, with the L1/L2/LogSum/LogSumExp/SumSquare
 * variants composed from rlx Reduce), CumSum, ArgMax/ArgMin and TopK. */
#include <stdlib.h>

#include "onnx/import_ops.h"

rlx_status *imp_reduce(rlx_imp *I, const Onnx__NodeProto *n, const char *kind, rlx_value x, size_t na, const int64_t *axes,
                       bool keepdims, rlx_value *y) {
  rlx_attr a[3] = {RLX_ATTR_S("kind", kind), RLX_ATTR_IS("axes", na, axes), RLX_ATTR_I("keepdims", keepdims)};
  return imp_add(I, n, RLX_OP_REDUCE, 1, &x, 3, a, y);
}

/* ReduceX: axes from the attribute (opset < 13, or < 18 except ReduceSum) or input 1. */
static rlx_status *reduce(rlx_imp *I, const Onnx__NodeProto *n, int variant) {
  enum { SUM, MEAN, MAX, MIN, PROD, L1, L2, LOGSUM, LOGSUMEXP, SUMSQUARE };
  bool from_input = variant == SUM ? I->opset >= 13 : I->opset >= 18;
  int64_t *axes;
  size_t na;
  bool present;
  RLX_TRY(imp_axes(I, n, "axes", 1, from_input, &axes, &na, &present));
  bool keep = imp_attr_i(n, "keepdims", 1) != 0;
  rlx_value x, y;
  rlx_status *st = imp_in(I, n, 0, &x);
  if (!st && na == 0 && imp_attr_i(n, "noop_with_empty_axes", 0)) {
    free(axes);
    return imp_out(I, n, 0, x);
  }
  static const char *kinds[] = {"sum", "mean", "max", "min", "prod"};
  if (!st) switch (variant) {
      case SUM: case MEAN: case MAX: case MIN: case PROD:
        st = imp_reduce(I, n, kinds[variant], x, na, axes, keep, &y);
        break;
      case L1:
        st = imp_un(I, n, RLX_OP_ABS, x, &y);
        if (!st) st = imp_reduce(I, n, "sum", y, na, axes, keep, &y);
        break;
      case L2: case SUMSQUARE:
        st = imp_bin(I, n, RLX_OP_MUL, x, x, &y);
        if (!st) st = imp_reduce(I, n, "sum", y, na, axes, keep, &y);
        if (!st && variant == L2) st = imp_un(I, n, RLX_OP_SQRT, y, &y);
        break;
      case LOGSUM:
        st = imp_reduce(I, n, "sum", x, na, axes, keep, &y);
        if (!st) st = imp_un(I, n, RLX_OP_LOG, y, &y);
        break;
      default: { /* log(sum(exp(x - m))) + m with m the max (overflow-safe) */
        rlx_value m, mk, d;
        st = imp_reduce(I, n, "max", x, na, axes, true, &mk);
        if (!st) st = imp_bin(I, n, RLX_OP_SUB, x, mk, &d);
        if (!st) st = imp_un(I, n, RLX_OP_EXP, d, &d);
        if (!st) st = imp_reduce(I, n, "sum", d, na, axes, keep, &y);
        if (!st) st = imp_un(I, n, RLX_OP_LOG, y, &y);
        if (!st) st = keep ? (m = mk, NULL) : imp_reduce(I, n, "max", x, na, axes, false, &m);
        if (!st) st = imp_bin(I, n, RLX_OP_ADD, y, m, &y);
        break;
      }
    }
  free(axes);
  if (st) return st;
  return imp_out(I, n, 0, y);
}
#define REDUCE(fn, v) \
  static rlx_status *fn(rlx_imp *I, const Onnx__NodeProto *n) { return reduce(I, n, v); }
REDUCE(map_reduce_sum, 0)
REDUCE(map_reduce_mean, 1)
REDUCE(map_reduce_max, 2)
REDUCE(map_reduce_min, 3)
REDUCE(map_reduce_prod, 4)
REDUCE(map_reduce_l1, 5)
REDUCE(map_reduce_l2, 6)
REDUCE(map_reduce_log_sum, 7)
REDUCE(map_reduce_log_sum_exp, 8)
REDUCE(map_reduce_sum_square, 9)

static rlx_status *map_cumsum(rlx_imp *I, const Onnx__NodeProto *n) {
  const rlx_tensor *ax = imp_const(I, n, 1);
  if (!ax) IMP_FAIL(UNIMPLEMENTED, "axis must be known at import time");
  rlx_attr a[3] = {RLX_ATTR_I("axis", imp_tensor_i64(ax, 0)), RLX_ATTR_I("exclusive", imp_attr_i(n, "exclusive", 0)),
                   RLX_ATTR_I("reverse", imp_attr_i(n, "reverse", 0))};
  return imp_op_out(I, n, RLX_OP_CUMSUM, 1, 3, a);
}

static rlx_status *map_arg(rlx_imp *I, const Onnx__NodeProto *n, rlx_op op) {
  rlx_attr a[3] = {RLX_ATTR_I("axis", imp_attr_i(n, "axis", 0)), RLX_ATTR_I("keepdims", imp_attr_i(n, "keepdims", 1)),
                   RLX_ATTR_I("select_last_index", imp_attr_i(n, "select_last_index", 0))};
  return imp_op_out(I, n, op, 1, 3, a);
}
static rlx_status *map_argmax(rlx_imp *I, const Onnx__NodeProto *n) { return map_arg(I, n, RLX_OP_ARG_MAX); }
static rlx_status *map_argmin(rlx_imp *I, const Onnx__NodeProto *n) { return map_arg(I, n, RLX_OP_ARG_MIN); }

static rlx_status *map_topk(rlx_imp *I, const Onnx__NodeProto *n) {
  int64_t k;
  if (I->opset < 10) k = imp_attr_i(n, "k", 0);
  else {
    const rlx_tensor *kt = imp_const(I, n, 1);
    if (!kt) IMP_FAIL(UNIMPLEMENTED, "K must be known at import time");
    k = imp_tensor_i64(kt, 0);
  }
  rlx_value x, y[2];
  RLX_TRY(imp_in(I, n, 0, &x));
  rlx_attr a[4] = {RLX_ATTR_I("k", k), RLX_ATTR_I("axis", imp_attr_i(n, "axis", -1)), RLX_ATTR_I("largest", imp_attr_i(n, "largest", 1)),
                   RLX_ATTR_I("sorted", imp_attr_i(n, "sorted", 1))};
  RLX_TRY(imp_addn(I, n, RLX_OP_TOPK, 1, &x, 4, a, 2, y, NULL));
  RLX_TRY(imp_out(I, n, 0, y[0]));
  return imp_out(I, n, 1, y[1]);
}

const rlx_onnx_op rlx_onnx_reduce_ops[] = {
    {"ReduceSum", 0, map_reduce_sum, false},
    {"ReduceMean", 0, map_reduce_mean, false},
    {"ReduceMax", 0, map_reduce_max, false},
    {"ReduceMin", 0, map_reduce_min, false},
    {"ReduceProd", 0, map_reduce_prod, false},
    {"ReduceL1", 0, map_reduce_l1, false},
    {"ReduceL2", 0, map_reduce_l2, false},
    {"ReduceLogSum", 0, map_reduce_log_sum, false},
    {"ReduceLogSumExp", 0, map_reduce_log_sum_exp, false},
    {"ReduceSumSquare", 0, map_reduce_sum_square, false},
    {"CumSum", 0, map_cumsum, false},
    {"ArgMax", 0, map_argmax, false},
    {"ArgMin", 0, map_argmin, false},
    {"TopK", 0, map_topk, false},
};
const size_t rlx_onnx_reduce_ops_len = RLX_ARRAY_LEN(rlx_onnx_reduce_ops);
