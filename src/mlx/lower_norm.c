/* lower_norm.c: LayerNorm, LayerNorm2d, RmsNorm, GroupNorm, Softmax, LogSoftmax. */
#include "mlx/lower.h"

static rlx_mx_arr *group_norm(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in) {
  rlx_mx *c = L->mx;
  const rlx_type *t = rlx_in_type(L, n, 0);
  int64_t G = rlx_node_i(n, "num_groups"), N = t->dims[0], C = t->dims[1], rest = 1;
  for (int i = 2; i < t->rank; i++) rest *= t->dims[i];
  double eps = rlx_node_f(n, "epsilon");
  int axes[1] = {2};
  rlx_mx_arr *x = rlx_mx_reshape(c, in[0], 3, (int64_t[]){N, G, C / G * rest});
  rlx_mx_arr *mean = rlx_mx_reduce(c, x, 1, 1, axes, true);
  rlx_mx_arr *d = rlx_mx_binary(c, RLX_MXB_SUBTRACT, x, mean);
  rlx_mx_arr *var = rlx_mx_reduce(c, rlx_mx_unary(c, RLX_MXU_SQUARE, d), 1, 1, axes, true);
  rlx_mx_arr *y = rlx_mx_binary(c, RLX_MXB_MULTIPLY, d,
                                rlx_mx_unary(c, RLX_MXU_RSQRT, rlx_mx_binary(c, RLX_MXB_ADD, var, rlx_mx_scalar(c, eps, t->dtype))));
  y = rlx_l_reshape(L, y, t);
  int64_t bshape[RLX_MAX_RANK] = {C};
  for (int i = 1; i < t->rank - 1; i++) bshape[i] = 1;
  rlx_mx_arr *g = rlx_mx_reshape(c, in[1], t->rank - 1, bshape), *b = rlx_mx_reshape(c, in[2], t->rank - 1, bshape);
  return rlx_mx_binary(c, RLX_MXB_ADD, rlx_mx_binary(c, RLX_MXB_MULTIPLY, y, g), b);
}

void rlx_lower_norm(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  const rlx_type *t = rlx_in_type(L, n, 0);
  rlx_mx_arr *beta = n->n_in > 2 ? in[2] : NULL;
  float eps = (float)rlx_node_f(n, "epsilon");
  int64_t axis = 0;
  switch (n->op) {
    case RLX_OP_LAYER_NORM:
    case RLX_OP_RMS_NORM:
      axis = rlx_l_axis(n, t->rank);
      out[0] = rlx_mx_norm(c, n->op == RLX_OP_RMS_NORM, in[0], (int)axis, in[1], beta, eps);
      return;
    case RLX_OP_LAYER_NORM_2D:
      out[0] = rlx_mx_norm(c, false, in[0], 1, in[1], beta, eps);
      return;
    case RLX_OP_GROUP_NORM:
      out[0] = group_norm(L, n, in);
      return;
    case RLX_OP_SOFTMAX:
    case RLX_OP_LOG_SOFTMAX: {
      axis = rlx_l_axis(n, t->rank);
      if (n->op == RLX_OP_SOFTMAX) {
        /* rlx's CPU kernel (float32; see shim.h rlx_mx_softmax_axis). */
        if (rlx_mx_get_device(c) == RLX_MX_CPU) out[0] = rlx_mx_softmax_axis(c, in[0], (int)axis);
        else out[0] = rlx_mx_softmax(c, in[0], (int)axis, true);
      } else {
        int ax = (int)axis;
        out[0] = rlx_mx_binary(c, RLX_MXB_SUBTRACT, in[0], rlx_mx_reduce(c, in[0], 5, 1, &ax, true));
      }
      return;
    }
    default:
      rlx_lower_fail(L, RLX_STATUS_INTERNAL, "not a norm op");
  }
}
