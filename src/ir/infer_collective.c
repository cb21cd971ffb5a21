/* infer_collective.c: inference for AllReduce, AllGather and ReduceScatter (see rlx/op_table.h):
 * the output type follows from the input and the group_size attribute. */
#include "ir/infer_util.h"

/* Index of an AllReduce kind: sum 0, max 1, min 2 (rlx_mx_coll order); -1 when unknown. */
int rlx_collective_kind(const char *k) {
  return strcmp(k, "sum") == 0 ? 0 : strcmp(k, "max") == 0 ? 1 : strcmp(k, "min") == 0 ? 2 : -1;
}

rlx_status *rlx_infer_collective(rlx_infer_ctx *c) {
  const rlx_type *x = IN(0);
  int64_t n = AI("group_size");
  *OUT(0) = *x;
  if (OP == RLX_OP_ALL_REDUCE) {
    if (rlx_collective_kind(AS("kind")) < 0) FAIL(INVALID_ARGUMENT, "kind '%s' (expected sum, max or min)", AS("kind"));
    if (n < 0) FAIL(INVALID_ARGUMENT, "group_size must be >= 0 (0 = any), got %lld", (long long)n);
    return NULL;
  }
  if (n < 1) FAIL(INVALID_ARGUMENT, "group_size must be >= 1 (the number of ranks), got %lld", (long long)n);
  RLX_TRY(infer_need_rank(c, 0, 1, RLX_MAX_RANK));
  NORM_AXIS(ax, AI("axis"), x->rank, "axis");
  int64_t d = rlx_infer_dim(c, x->dims[ax]);
  if (OP == RLX_OP_ALL_GATHER) {
    if (!RLX_DIM_IS_STATIC(d)) OUT(0)->dims[ax] = RLX_DIM_DYNAMIC;
    else if (!rlx_mul_i64(d, n, &OUT(0)->dims[ax])) FAIL(RESOURCE_EXHAUSTED, "dim %lld times group_size %lld overflows", (long long)d, (long long)n);
    return NULL;
  }
  if (!RLX_DIM_IS_STATIC(d)) {
    OUT(0)->dims[ax] = RLX_DIM_DYNAMIC;
  } else {
    if (d % n) FAIL(INVALID_ARGUMENT, "axis %lld of %s does not split into group_size %lld equal chunks", (long long)ax, TSTR(x), (long long)n);
    OUT(0)->dims[ax] = d / n;
  }
  return NULL;
}
