/* infer_index_grad.c: inference for CumsumBackward and GatherBackward (see rlx/op_table.h). */
#include "ir/infer_util.h"

static rlx_status *gather_backward(rlx_infer_ctx *c) {
  const rlx_type *dy = IN(0), *idx = IN(1);
  rlx_type *dx = OUT(0);
  RLX_TRY(infer_need_int(c, 1, "indices"));
  int r;
  RLX_TRY(infer_attr_dims(c, "shape", dx->dims, &r));
  dx->rank = r;
  dx->dtype = dy->dtype;
  if (r < 1) FAIL(INVALID_ARGUMENT, "shape (of the gathered data) must have rank >= 1");
  for (int i = 0; i < r; i++)
    if (dx->dims[i] == RLX_DIM_DYNAMIC) FAIL(INVALID_ARGUMENT, "shape entry %d is -1; expected a size or a symbol", i);
  NORM_AXIS(a, AI("axis"), r, "axis");
  if (r - 1 + idx->rank > RLX_MAX_RANK) FAIL(INVALID_ARGUMENT, "dy rank above %d", RLX_MAX_RANK);
  rlx_type want = {.dtype = dy->dtype, .rank = 0};
  for (int i = 0; i < a; i++) want.dims[want.rank++] = dx->dims[i];
  for (int i = 0; i < idx->rank; i++) want.dims[want.rank++] = idx->dims[i];
  for (int i = (int)a + 1; i < r; i++) want.dims[want.rank++] = dx->dims[i];
  bool ok = dy->rank == want.rank;
  for (int i = 0; ok && i < want.rank; i++) ok = rlx_dim_compatible(dy->dims[i], want.dims[i]);
  if (!ok) FAIL(INVALID_ARGUMENT, "dy must be shape[:axis] + indices.shape + shape[axis+1:] = %s, got %s", TSTR(&want), TSTR(dy));
  return NULL;
}

rlx_status *rlx_infer_index_grad(rlx_infer_ctx *c) {
  const rlx_type *dy = IN(0);
  if (!rlx_dtype_is_float(dy->dtype) && !rlx_dtype_is_int(dy->dtype))
    FAIL(INVALID_ARGUMENT, "dy must be numeric, got %s", rlx_dtype_name(dy->dtype));
  switch (OP) {
    case RLX_OP_CUMSUM_BACKWARD: {
      if (dy->rank < 1) FAIL(INVALID_ARGUMENT, "dy must have rank >= 1");
      NORM_AXIS(a, AI("axis"), dy->rank, "axis");
      (void)a;
      *OUT(0) = *dy;
      return NULL;
    }
    case RLX_OP_GATHER_BACKWARD:
      return gather_backward(c);
    default:
      FAIL(INTERNAL, "not an index_grad op");
  }
}
