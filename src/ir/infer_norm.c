/* infer_norm.c: inference for normalization and softmax ops. */
#include "ir/infer_util.h"

/* gamma/beta (inputs first..NIN-1) must be float vectors of length `len`, in x's dtype. */
static rlx_status *affine_params(const rlx_infer_ctx *c, int first, int64_t len) {
  for (int i = first; i < NIN; i++) {
    const rlx_type *t = IN(i);
    if (t->rank != 1 || !rlx_dim_compatible(t->dims[0], len))
      FAIL(INVALID_ARGUMENT, "input %d (%s) must be [%lld], got %s", i, i == first ? "gamma" : "beta", (long long)len, TSTR(t));
    RLX_TRY(infer_same_dtype(c, 0, i));
  }
  return NULL;
}

rlx_status *rlx_infer_norm_len(const rlx_infer_ctx *c, bool group, int64_t *len) {
  const rlx_type *x = IN(0);
  RLX_TRY(infer_need_float(c, 0));
  if (rlx_node_attr(c->n, "epsilon") && AF("epsilon") < 0) FAIL(INVALID_ARGUMENT, "epsilon must be >= 0, got %g", AF("epsilon"));
  if (group) {
    if (x->rank < 2) FAIL(INVALID_ARGUMENT, "input 0 must be [N,C,...], got %s", TSTR(x));
    int64_t g = AI("num_groups");
    if (g <= 0 || (x->dims[1] >= 0 && (x->dims[1] % g || g > (x->dims[1] ? x->dims[1] : 1))))
      FAIL(INVALID_ARGUMENT, "num_groups %lld must divide the %lld channels", (long long)g, (long long)x->dims[1]);
    *len = x->dims[1];
    return NULL;
  }
  if (x->rank < 1) FAIL(INVALID_ARGUMENT, "input 0 must have rank >= 1");
  NORM_AXIS(axis, AI("axis"), x->rank, "axis");
  *len = x->dims[axis];
  return NULL;
}

rlx_status *rlx_infer_norm(rlx_infer_ctx *c) {
  const rlx_type *x = IN(0);
  RLX_TRY(infer_need_float(c, 0));
  *OUT(0) = *x;
  switch (OP) {
    case RLX_OP_LAYER_NORM:
    case RLX_OP_RMS_NORM:
    case RLX_OP_GROUP_NORM: {
      int64_t len;
      RLX_TRY(rlx_infer_norm_len(c, OP == RLX_OP_GROUP_NORM, &len));
      return affine_params(c, 1, len);
    }
    case RLX_OP_LAYER_NORM_2D:
      RLX_TRY(infer_need_rank(c, 0, 4, 4));
      if (AF("epsilon") < 0) FAIL(INVALID_ARGUMENT, "epsilon must be >= 0, got %g", AF("epsilon"));
      return affine_params(c, 1, x->dims[1]);
    case RLX_OP_SOFTMAX:
    case RLX_OP_LOG_SOFTMAX: {
      if (x->rank < 1) FAIL(INVALID_ARGUMENT, "input 0 must have rank >= 1");
      NORM_AXIS(axis, AI("axis"), x->rank, "axis");
      (void)axis;
      return NULL;
    }
    default:
      FAIL(INTERNAL, "not a norm op");
  }
}
