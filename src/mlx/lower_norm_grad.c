/* lower_norm_grad.c: closed-form gradients of softmax cross-entropy, LayerNorm, RmsNorm and
 * GroupNorm. */
#include "mlx/lower.h"

enum { SUM = 0, MEAN = 1 };

/* Statistics of a normalization on its "view" of x: x itself with the normalized axis (LayerNorm,
 * RmsNorm) or x reshaped to [N, G, C/G * spatial] with axis 2 (GroupNorm). */
typedef struct norm_view {
  bool rms, group;
  const rlx_type *t; /* x's type */
  int rank, axis;    /* of the view */
  int64_t dims[RLX_MAX_RANK];
  int param_axis;    /* the axis of x that gamma / beta run along */
  rlx_mx_arr *xhat;  /* normalized x, in the view */
  rlx_mx_arr *rstd;  /* 1 / sqrt(var + eps) (LayerNorm, GroupNorm) or 1 / rms (RmsNorm), keepdims */
} norm_view;

static rlx_mx_arr *to_view(rlx_lower *L, const norm_view *v, rlx_mx_arr *a) {
  return v->group ? rlx_mx_reshape(L->mx, a, v->rank, v->dims) : a;
}

static rlx_mx_arr *from_view(rlx_lower *L, const norm_view *v, rlx_mx_arr *a) {
  return v->group ? rlx_l_reshape(L, a, v->t) : a;
}

static void norm_view_make(rlx_lower *L, const rlx_node *n, rlx_mx_arr *x, norm_view *v) {
  rlx_mx *c = L->mx;
  const rlx_type *t = rlx_in_type(L, n, 0);
  bool rms = n->op == RLX_OP_RMS_NORM_BACKWARD_INPUT || n->op == RLX_OP_RMS_NORM_BACKWARD_GAMMA;
  bool group = n->op == RLX_OP_GROUP_NORM_BACKWARD_INPUT || n->op == RLX_OP_GROUP_NORM_BACKWARD_GAMMA;
  *v = (norm_view){.rms = rms, .group = group, .t = t, .rank = t->rank};
  if (group) {
    int64_t G = rlx_node_i(n, "num_groups"), rest = 1;
    for (int i = 2; i < t->rank; i++) rest *= t->dims[i];
    v->rank = 3, v->axis = 2, v->param_axis = 1;
    v->dims[0] = t->dims[0], v->dims[1] = G, v->dims[2] = t->dims[1] / G * rest;
  } else {
    v->axis = v->param_axis = (int)rlx_l_axis(n, t->rank);
  }
  rlx_mx_arr *xv = to_view(L, v, x), *eps = rlx_mx_scalar(c, rlx_node_f(n, "epsilon"), t->dtype);
  if (!rms) xv = rlx_mx_binary(c, RLX_MXB_SUBTRACT, xv, rlx_mx_reduce(c, xv, MEAN, 1, &v->axis, true));
  rlx_mx_arr *var = rlx_mx_reduce(c, rlx_mx_unary(c, RLX_MXU_SQUARE, xv), MEAN, 1, &v->axis, true);
  v->rstd = rlx_mx_unary(c, RLX_MXU_RSQRT, rlx_mx_binary(c, RLX_MXB_ADD, var, eps));
  v->xhat = rlx_mx_binary(c, RLX_MXB_MULTIPLY, xv, v->rstd);
}

/* [len] -> shaped to broadcast along `axis` of a rank-`rank` array. */
static rlx_mx_arr *along(rlx_lower *L, rlx_mx_arr *p, const rlx_type *t, int axis) {
  int64_t dims[RLX_MAX_RANK];
  for (int i = 0; i < t->rank; i++) dims[i] = i == axis ? t->dims[i] : 1;
  return rlx_mx_reshape(L->mx, p, t->rank, dims);
}

/* Sums a (x's shape) over every axis but `keep` -> [x.shape[keep]]. */
static rlx_mx_arr *sum_except(rlx_lower *L, rlx_mx_arr *a, int rank, int keep) {
  int axes[RLX_MAX_RANK], k = 0;
  for (int i = 0; i < rank; i++)
    if (i != keep) axes[k++] = i;
  return k ? rlx_mx_reduce(L->mx, a, SUM, k, axes, false) : a;
}

/* dx = rstd (g - mean(g) - xhat mean(g xhat)) with g = dy gamma; RmsNorm drops the mean(g) term. */
static rlx_mx_arr *input_grad(rlx_lower *L, const norm_view *v, rlx_mx_arr *gamma, rlx_mx_arr *dy) {
  rlx_mx *c = L->mx;
  rlx_mx_arr *g = to_view(L, v, rlx_mx_binary(c, RLX_MXB_MULTIPLY, dy, along(L, gamma, v->t, v->param_axis)));
  rlx_mx_arr *gx = rlx_mx_reduce(c, rlx_mx_binary(c, RLX_MXB_MULTIPLY, g, v->xhat), MEAN, 1, &v->axis, true);
  rlx_mx_arr *inner = rlx_mx_binary(c, RLX_MXB_SUBTRACT, g, rlx_mx_binary(c, RLX_MXB_MULTIPLY, v->xhat, gx));
  if (!v->rms) inner = rlx_mx_binary(c, RLX_MXB_SUBTRACT, inner, rlx_mx_reduce(c, g, MEAN, 1, &v->axis, true));
  return from_view(L, v, rlx_mx_binary(c, RLX_MXB_MULTIPLY, inner, v->rstd));
}

/* logits [...,C], labels [...]: one-hot [...,C] in the logits' dtype (a label outside [0, C) has
 * no class). */
static rlx_mx_arr *one_hot(rlx_lower *L, const rlx_node *n, rlx_mx_arr *labels) {
  rlx_mx *c = L->mx;
  const rlx_type *tl = rlx_in_type(L, n, 0), *tlab = rlx_in_type(L, n, 1);
  rlx_type col = *tlab;
  col.dims[col.rank++] = 1;
  rlx_mx_arr *cls = rlx_mx_arange(c, 0, (double)tl->dims[tl->rank - 1], 1, tlab->dtype);
  return rlx_mx_astype(c, rlx_mx_binary(c, RLX_MXB_EQUAL, rlx_l_reshape(L, labels, &col), cls), tl->dtype);
}

static void cross_entropy(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  int last = -1;
  rlx_mx_arr *oh = one_hot(L, n, in[1]);
  if (n->op == RLX_OP_SOFTMAX_CROSS_ENTROPY) { /* logsumexp(l) - l[label] */
    rlx_mx_arr *picked = rlx_mx_reduce(c, rlx_mx_binary(c, RLX_MXB_MULTIPLY, in[0], oh), SUM, 1, &last, false);
    out[0] = rlx_mx_binary(c, RLX_MXB_SUBTRACT, rlx_mx_reduce(c, in[0], 5, 1, &last, false), picked);
    return;
  }
  rlx_type col = *rlx_in_type(L, n, 2); /* (softmax(l) - onehot) * dloss[..., None] */
  col.dims[col.rank++] = 1;
  rlx_mx_arr *d = rlx_mx_binary(c, RLX_MXB_SUBTRACT, rlx_mx_softmax(c, in[0], -1, true), oh);
  out[0] = rlx_mx_binary(c, RLX_MXB_MULTIPLY, d, rlx_l_reshape(L, in[2], &col));
}

void rlx_lower_norm_grad(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  norm_view v;
  const rlx_type *t = rlx_in_type(L, n, 0);
  switch (n->op) {
    case RLX_OP_SOFTMAX_CROSS_ENTROPY:
    case RLX_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD:
      cross_entropy(L, n, in, out);
      return;
    case RLX_OP_LAYER_NORM_BACKWARD_INPUT:
    case RLX_OP_RMS_NORM_BACKWARD_INPUT:
    case RLX_OP_GROUP_NORM_BACKWARD_INPUT:
      norm_view_make(L, n, in[0], &v);
      out[0] = input_grad(L, &v, in[1], in[2]);
      return;
    case RLX_OP_LAYER_NORM_BACKWARD_GAMMA:
    case RLX_OP_RMS_NORM_BACKWARD_GAMMA:
    case RLX_OP_GROUP_NORM_BACKWARD_GAMMA: /* sum of dy * xhat over all but the parameter axis */
      norm_view_make(L, n, in[0], &v);
      out[0] = sum_except(L, rlx_mx_binary(L->mx, RLX_MXB_MULTIPLY, in[1], from_view(L, &v, v.xhat)), t->rank, v.param_axis);
      return;
    case RLX_OP_LAYER_NORM_BACKWARD_BETA:
    case RLX_OP_RMS_NORM_BACKWARD_BETA:
    case RLX_OP_GROUP_NORM_BACKWARD_BETA: { /* sum of dy over all but the parameter axis */
      int64_t a = 1;
      if (n->op != RLX_OP_GROUP_NORM_BACKWARD_BETA) a = rlx_l_axis(n, t->rank);
      out[0] = sum_except(L, in[0], t->rank, (int)a);
      return;
    }
    default:
      rlx_lower_fail(L, RLX_STATUS_INTERNAL, "not a norm_grad op");
  }
}
