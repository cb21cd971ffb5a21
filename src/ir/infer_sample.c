/* infer_sample.c: inference for Sample (see rlx/op_table.h). */
#include <math.h>

#include "ir/infer_util.h"

rlx_status *rlx_infer_sample(rlx_infer_ctx *c) {
  const rlx_type *x = IN(0);
  RLX_TRY(infer_need_float(c, 0));
  if (x->rank < 1) FAIL(INVALID_ARGUMENT, "logits must have rank >= 1 [..,V], got %s", TSTR(x));
  if (x->dims[x->rank - 1] == 0) FAIL(INVALID_ARGUMENT, "logits %s: the vocabulary axis is empty", TSTR(x));
  double t = AF("temperature"), p = AF("top_p");
  if (!(t >= 0) || isinf(t)) FAIL(INVALID_ARGUMENT, "temperature must be finite and >= 0, got %g", t);
  if (!(p > 0 && p <= 1)) FAIL(INVALID_ARGUMENT, "top_p must be in (0, 1], got %g", p);
  if (AI("top_k") < 0) FAIL(INVALID_ARGUMENT, "top_k must be >= 0 (0 keeps every token), got %lld", (long long)AI("top_k"));
  *OUT(0) = *x;
  OUT(0)->dtype = RLX_DTYPE_I64;
  OUT(0)->rank--;
  return NULL;
}
