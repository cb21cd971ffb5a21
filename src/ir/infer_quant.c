/* infer_quant.c: inference for the quant family (see rlx/op_table.h). */
#include "ir/infer_util.h"

rlx_status *rlx_infer_quant(rlx_infer_ctx *c) { FAIL(UNIMPLEMENTED, "op %s is not implemented yet", rlx_op_name(OP)); }
