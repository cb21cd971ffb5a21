/* infer_control.c: inference for the control family (see rlx/op_table.h). */
#include "ir/infer_util.h"

rlx_status *rlx_infer_control(rlx_infer_ctx *c) { FAIL(UNIMPLEMENTED, "op %s is not implemented yet", rlx_op_name(OP)); }
