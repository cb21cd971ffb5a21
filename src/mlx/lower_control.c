/* lower_control.c: MLX lowering of the control family (see rlx/op_table.h). */
#include "mlx/lower.h"

void rlx_lower_control(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  (void)in, (void)out;
  rlx_lower_fail(L, RLX_STATUS_UNIMPLEMENTED, "op %s is not implemented yet", rlx_op_name(n->op));
}
