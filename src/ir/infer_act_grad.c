/* infer_act_grad.c: inference for the act_grad family (see rlx/op_table.h). */
#include "ir/infer_util.h"

rlx_status *rlx_infer_act_grad(rlx_infer_ctx *c) { FAIL(UNIMPLEMENTED, "op %s is not implemented yet", rlx_op_name(OP)); }
