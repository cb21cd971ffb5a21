/* infer_linalg.c: inference for DenseSolve and BatchedDenseSolve (see rlx/op_table.h). */
#include "ir/infer_util.h"

rlx_status *rlx_infer_linalg(rlx_infer_ctx *c) {
  const rlx_type *a = IN(0), *b = IN(1);
  RLX_TRY(infer_need_float(c, 0));
  RLX_TRY(infer_same_dtype(c, 0, 1));
  bool batched = OP == RLX_OP_BATCHED_DENSE_SOLVE;
  int r = batched ? 3 : 2;
  if (a->rank != r || !rlx_dim_compatible(a->dims[r - 2], a->dims[r - 1]))
    FAIL(INVALID_ARGUMENT, "A must be a square matrix %s, got %s", batched ? "[B,n,n]" : "[n,n]", TSTR(a));
  int64_t n = a->dims[r - 1] >= 0 ? a->dims[r - 1] : a->dims[r - 2];
  bool ok = batched ? b->rank == 2 && rlx_dim_compatible(b->dims[0], a->dims[0]) && rlx_dim_compatible(b->dims[1], n)
                    : (b->rank == 1 || b->rank == 2) && rlx_dim_compatible(b->dims[0], n);
  if (!ok) FAIL(INVALID_ARGUMENT, "b must be %s for A %s, got %s", batched ? "[B,n]" : "[n] or [n,k]", TSTR(a), TSTR(b));
  *OUT(0) = *b;
  return NULL;
}
