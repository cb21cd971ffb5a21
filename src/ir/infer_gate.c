/* infer_gate.c: inference for Llada2GroupLimitedGate (see rlx/op_table.h). */
#include "ir/infer_util.h"

rlx_status *rlx_infer_gate(rlx_infer_ctx *c) {
  const rlx_type *x = IN(0);
  RLX_TRY(infer_need_float(c, 0));
  if (x->rank != 2) FAIL(INVALID_ARGUMENT, "input 0 (logits) must be [T,E], got %s", TSTR(x));
  int64_t E = x->dims[1], k = AI("top_k"), ng = AI("n_group"), kg = AI("topk_group");
  if (NIN == 2 && (IN(1)->rank != 1 || !rlx_dim_compatible(IN(1)->dims[0], E) || !rlx_dtype_is_float(IN(1)->dtype)))
    FAIL(INVALID_ARGUMENT, "input 1 (bias) must be float [%lld], got %s", (long long)E, TSTR(IN(1)));
  const char *sf = AS("score_func");
  if (strcmp(sf, "sigmoid") && strcmp(sf, "softmax")) FAIL(INVALID_ARGUMENT, "score_func '%s' (expected sigmoid or softmax)", sf);
  if (E < 0) FAIL(INVALID_ARGUMENT, "the expert count E of logits %s must be static", TSTR(x));
  if (ng < 1 || E % ng) FAIL(INVALID_ARGUMENT, "n_group %lld must divide the expert count %lld", (long long)ng, (long long)E);
  if (kg < 1 || kg > ng) FAIL(INVALID_ARGUMENT, "topk_group %lld is outside [1, n_group = %lld]", (long long)kg, (long long)ng);
  if (k < 1 || k > kg * (E / ng))
    FAIL(INVALID_ARGUMENT, "top_k %lld is outside [1, %lld] (the experts of topk_group groups)", (long long)k, (long long)(kg * (E / ng)));
  *OUT(0) = *x;
  OUT(0)->dims[1] = k;
  *OUT(1) = *OUT(0);
  OUT(1)->dtype = RLX_DTYPE_I32;
  c->n_out = 2;
  return NULL;
}
