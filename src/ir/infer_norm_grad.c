/* infer_norm_grad.c: inference for the softmax cross-entropy, LayerNorm, RmsNorm and GroupNorm
 * gradients. */
#include "ir/infer_util.h"

static bool same_shape(const rlx_type *a, const rlx_type *b) {
  bool same = a->rank == b->rank;
  for (int i = 0; same && i < a->rank; i++) same = rlx_dim_compatible(a->dims[i], b->dims[i]);
  return same;
}

/* Input i must have x's (input 0's) shape and dtype. */
static rlx_status *like_x(const rlx_infer_ctx *c, int i, const char *what) {
  RLX_TRY(infer_same_dtype(c, 0, i));
  if (!same_shape(IN(0), IN(i))) FAIL(INVALID_ARGUMENT, "input %d (%s) must have x's shape %s, got %s", i, what, TSTR(IN(0)), TSTR(IN(i)));
  return NULL;
}

static rlx_status *vector_out(rlx_infer_ctx *c, int64_t len) {
  OUT(0)->dtype = IN(0)->dtype;
  OUT(0)->rank = 1;
  OUT(0)->dims[0] = len;
  return NULL;
}

static rlx_status *cross_entropy(rlx_infer_ctx *c) {
  const rlx_type *l = IN(0), *lab = IN(1);
  RLX_TRY(infer_need_float(c, 0));
  RLX_TRY(infer_need_int(c, 1, "labels"));
  bool ok = l->rank >= 1 && lab->rank == l->rank - 1;
  for (int i = 0; ok && i < lab->rank; i++) ok = rlx_dim_compatible(lab->dims[i], l->dims[i]);
  if (!ok) FAIL(INVALID_ARGUMENT, "logits %s must be [...,C] and labels %s [...]", TSTR(l), TSTR(lab));
  *OUT(0) = *lab;
  OUT(0)->dtype = l->dtype;
  if (OP == RLX_OP_SOFTMAX_CROSS_ENTROPY) return NULL;
  RLX_TRY(infer_same_dtype(c, 0, 2));
  if (!same_shape(IN(2), OUT(0))) FAIL(INVALID_ARGUMENT, "input 2 (dloss) must be %s, got %s", TSTR(OUT(0)), TSTR(IN(2)));
  *OUT(0) = *l;
  return NULL;
}

rlx_status *rlx_infer_norm_grad(rlx_infer_ctx *c) {
  int64_t len;
  bool group = OP == RLX_OP_GROUP_NORM_BACKWARD_INPUT || OP == RLX_OP_GROUP_NORM_BACKWARD_GAMMA || OP == RLX_OP_GROUP_NORM_BACKWARD_BETA;
  switch (OP) {
    case RLX_OP_SOFTMAX_CROSS_ENTROPY:
    case RLX_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD:
      return cross_entropy(c);
    case RLX_OP_LAYER_NORM_BACKWARD_INPUT:
    case RLX_OP_RMS_NORM_BACKWARD_INPUT:
    case RLX_OP_GROUP_NORM_BACKWARD_INPUT: {
      RLX_TRY(rlx_infer_norm_len(c, group, &len));
      RLX_TRY(infer_same_dtype(c, 0, 1));
      if (IN(1)->rank != 1 || !rlx_dim_compatible(IN(1)->dims[0], len))
        FAIL(INVALID_ARGUMENT, "input 1 (gamma) must be [%lld], got %s", (long long)len, TSTR(IN(1)));
      RLX_TRY(like_x(c, 2, "dy"));
      *OUT(0) = *IN(0);
      return NULL;
    }
    case RLX_OP_LAYER_NORM_BACKWARD_GAMMA:
    case RLX_OP_RMS_NORM_BACKWARD_GAMMA:
    case RLX_OP_GROUP_NORM_BACKWARD_GAMMA:
      RLX_TRY(rlx_infer_norm_len(c, group, &len));
      RLX_TRY(like_x(c, 1, "dy"));
      return vector_out(c, len);
    case RLX_OP_LAYER_NORM_BACKWARD_BETA:
    case RLX_OP_RMS_NORM_BACKWARD_BETA:
    case RLX_OP_GROUP_NORM_BACKWARD_BETA:
      RLX_TRY(rlx_infer_norm_len(c, group, &len));
      return vector_out(c, len);
    default:
      FAIL(INTERNAL, "not a norm_grad op");
  }
}
