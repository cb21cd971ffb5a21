/* infer_attention_grad.c: inference for AttentionBackward and RopeBackward. */
#include "ir/infer_util.h"

static rlx_status *attention_backward(rlx_infer_ctx *c) {
  rlx_type y;
  RLX_TRY(rlx_infer_attention_operands(c, 4, &y));
  const rlx_type *dy = IN(3);
  RLX_TRY(infer_same_dtype(c, 0, 3));
  bool same = dy->rank == y.rank;
  for (int i = 0; same && i < y.rank; i++) same = rlx_dim_compatible(dy->dims[i], y.dims[i]);
  if (!same) FAIL(INVALID_ARGUMENT, "input 3 (dy) must have Attention's output type %s, got %s", TSTR(&y), TSTR(dy));
  const char *wrt = AS("wrt");
  int k = strcmp(wrt, "query") == 0 ? 0 : strcmp(wrt, "key") == 0 ? 1 : strcmp(wrt, "value") == 0 ? 2 : -1;
  if (k < 0) FAIL(INVALID_ARGUMENT, "wrt '%s' (expected query, key or value)", wrt);
  *OUT(0) = *IN(k);
  return NULL;
}

rlx_status *rlx_infer_attention_grad(rlx_infer_ctx *c) {
  switch (OP) {
    case RLX_OP_ATTENTION_BACKWARD:
      return attention_backward(c);
    case RLX_OP_ROPE_BACKWARD:
      RLX_TRY(rlx_infer_rope_shapes(c));
      *OUT(0) = *IN(0);
      return NULL;
    default:
      FAIL(INTERNAL, "not an attention_grad op");
  }
}
