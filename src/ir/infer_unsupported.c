/* infer_unsupported.c: ops of the reference system that run host code (rlx-cpu) there and have no
 * MLX lowering: adding them fails with UNIMPLEMENTED naming the op. */
#include "ir/infer_util.h"

rlx_status *rlx_infer_unsupported(rlx_infer_ctx *c) {
  FAIL(UNIMPLEMENTED, "op %s is not supported by rlx: the reference system runs it as host code outside MLX", rlx_op_name(OP));
}
