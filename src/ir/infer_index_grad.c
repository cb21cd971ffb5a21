/* infer_index_grad.c: inference for the index_grad family (see rlx/op_table.h). */
#include "ir/infer_util.h"

rlx_status *rlx_infer_index_grad(rlx_infer_ctx *c) { FAIL(UNIMPLEMENTED, "op %s is not implemented yet", rlx_op_name(OP)); }
