/* lower_reduce.c: Reduce, Cumsum, ArgMax/ArgMin, TopK. */
#include <math.h>

#include "mlx/lower.h"


/* Casts `a` to `dt` when MLX promoted it (e.g. the mean of integers). */
static rlx_mx_arr *as_dtype(rlx_lower *L, rlx_mx_arr *a, rlx_dtype dt) {
  rlx_type t;
  if (a && rlx_mx_type(a, &t) && t.dtype == dt) return a;
  return rlx_mx_astype(L->mx, a, dt);
}

static rlx_mx_arr *arg_extreme(rlx_lower *L, const rlx_node *n, rlx_mx_arr *x) {
  rlx_mx *c = L->mx;
  const rlx_type *t = rlx_in_type(L, n, 0);
  int64_t a = rlx_l_axis(n, t->rank);
  bool keep = rlx_node_i(n, "keepdims") != 0, last = rlx_node_i(n, "select_last_index") != 0;
  bool is_max = n->op == RLX_OP_ARG_MAX;
  if (last) { /* reverse the axis, find the first extreme, map back: dim - 1 - i */
    rlx_mx_arr *rev = rlx_mx_arange(c, (double)(t->dims[a] - 1), -1, -1, RLX_DTYPE_I32);
    x = rlx_mx_take(c, x, rev, (int)a);
  }
  rlx_mx_arr *i = is_max ? rlx_mx_argmax(c, x, (int)a, keep) : rlx_mx_argmin(c, x, (int)a, keep);
  i = rlx_mx_astype(c, i, RLX_DTYPE_I64);
  if (last) i = rlx_mx_binary(c, RLX_MXB_SUBTRACT, rlx_mx_scalar(c, (double)(t->dims[a] - 1), RLX_DTYPE_I64), i);
  return i;
}

static void topk(rlx_lower *L, const rlx_node *n, rlx_mx_arr *x, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  const rlx_type *t = rlx_in_type(L, n, 0);
  int64_t a = rlx_l_axis(n, t->rank);
  /* Stable ascending argsort of the key; ties keep the lower index. Largest first sorts an
   * order-reversing key: -x for floats, ~x for integers (no overflow at the extremes). */
  rlx_mx_arr *key = x;
  if (rlx_node_i(n, "largest")) {
    if (t->dtype == RLX_DTYPE_BOOL) key = rlx_mx_astype(c, key, RLX_DTYPE_U8);
    key = rlx_mx_unary(c, rlx_dtype_is_float(t->dtype) ? RLX_MXU_NEGATIVE : RLX_MXU_BITWISE_INVERT, key);
  }
  rlx_mx_arr *idx = rlx_mx_argsort(c, key, (int)a);
  idx = rlx_l_narrow(L, idx, t, (int)a, 0, rlx_node_i(n, "k"));
  out[0] = rlx_mx_take_along_axis(c, x, idx, (int)a);
  out[1] = rlx_mx_astype(c, idx, RLX_DTYPE_I64);
}

/* Reduce: MLX reductions; integer mean is sum / count truncated; an empty reduction gives the
 * kind's identity (max: lowest value, min: highest, mean: NaN, or 0 for integers). */
static rlx_mx_arr *reduce(rlx_lower *L, const rlx_node *n, rlx_mx_arr *x) {
  rlx_mx *c = L->mx;
  const rlx_type *t = rlx_in_type(L, n, 0), *to = rlx_out_type(L, n, 0);
  size_t na;
  const int64_t *axes = rlx_node_is(n, "axes", &na);
  int ax[RLX_MAX_RANK];
  for (size_t i = 0; i < na; i++) ax[i] = (int)(axes[i] < 0 ? axes[i] + t->rank : axes[i]);
  int kind = rlx_reduce_kind(rlx_node_s(n, "kind"));
  bool keep = rlx_node_i(n, "keepdims") != 0;
  if (t->rank == 0) return x;
  int64_t cnt = 1;
  for (int i = 0; i < t->rank; i++) {
    bool r = na == 0;
    for (size_t j = 0; j < na; j++) r |= ax[j] == i;
    if (r) cnt *= t->dims[i];
  }
  if (cnt == 0) {
    rlx_mx_arr *v = kind == 2 || kind == 3 ? rlx_l_extreme(L, t->dtype, kind == 2)
                    : rlx_mx_scalar(c, kind == 4 ? 1 : kind == 1 && rlx_dtype_is_float(t->dtype) ? NAN : 0, t->dtype);
    return rlx_mx_broadcast_to(c, v, to->rank, to->dims);
  }
  if (kind == 1 && rlx_dtype_is_int(t->dtype)) { /* integer mean: sum / count, truncated */
    rlx_mx_arr *s = rlx_mx_reduce(c, rlx_mx_astype(c, x, RLX_DTYPE_I64), 0, (int)na, ax, keep);
    s = rlx_l_binary(L, RLX_OP_DIV, s, rlx_mx_scalar(c, (double)cnt, RLX_DTYPE_I64), RLX_DTYPE_I64);
    return rlx_mx_astype(c, s, to->dtype);
  }
  return as_dtype(L, rlx_mx_reduce(c, x, kind, (int)na, ax, keep), to->dtype);
}

void rlx_lower_reduce(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  const rlx_type *t = rlx_in_type(L, n, 0), *to = rlx_out_type(L, n, 0);
  switch (n->op) {
    case RLX_OP_REDUCE:
      out[0] = reduce(L, n, in[0]);
      return;
    case RLX_OP_CUMSUM: {
      int64_t a = rlx_l_axis(n, t->rank);
      out[0] = as_dtype(L, rlx_mx_scan(c, in[0], 0, (int)a, rlx_node_i(n, "reverse") != 0, rlx_node_i(n, "exclusive") == 0), to->dtype);
      return;
    }
    case RLX_OP_ARG_MAX:
    case RLX_OP_ARG_MIN:
      out[0] = arg_extreme(L, n, in[0]);
      return;
    case RLX_OP_TOPK:
      topk(L, n, in[0], out);
      return;
    default:
      rlx_lower_fail(L, RLX_STATUS_INTERNAL, "not a reduce op");
  }
}
