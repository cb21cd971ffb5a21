/* lower_unsupported.c: never reached (inference rejects these ops), kept for the dispatch table. */
#include "mlx/lower.h"

void rlx_lower_unsupported(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  (void)in, (void)out;
  rlx_lower_fail(L, RLX_STATUS_UNIMPLEMENTED, "op %s is not supported by rlx", rlx_op_name(n->op));
}
