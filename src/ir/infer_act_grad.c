/* infer_act_grad.c: inference for ReluBackward and ActivationBackward (see rlx/op_table.h). */
#include "ir/infer_util.h"

/* The activations ActivationBackward differentiates (the reference system's Activation enum). */
static const rlx_op act_kinds[] = {
    RLX_OP_GELU, RLX_OP_GELU_APPROX, RLX_OP_SILU, RLX_OP_RELU, RLX_OP_SIGMOID, RLX_OP_TANH,
    RLX_OP_EXP,  RLX_OP_LOG,         RLX_OP_SQRT, RLX_OP_RSQRT, RLX_OP_NEG,    RLX_OP_ABS,
    RLX_OP_SIN,  RLX_OP_COS,         RLX_OP_TAN,  RLX_OP_ATAN, RLX_OP_ROUND,
};

static rlx_status *check_kind(const char *kind) {
  rlx_op op;
  rlx_status *st = rlx_op_from_name(kind, &op);
  if (!st)
    for (size_t i = 0; i < RLX_ARRAY_LEN(act_kinds); i++)
      if (act_kinds[i] == op) return NULL;
  rlx_status_free(st);
  FAIL(INVALID_ARGUMENT, "kind '%s' is not one of Gelu, GeluApprox, Silu, Relu, Sigmoid, Tanh, Exp, Log, Sqrt, Rsqrt, Neg, Abs, Sin, Cos, Tan, Atan, Round", kind);
}

rlx_status *rlx_infer_act_grad(rlx_infer_ctx *c) {
  const rlx_type *x = IN(0), *dy = IN(1);
  RLX_TRY(infer_same_dtype(c, 0, 1));
  if (OP == RLX_OP_ACTIVATION_BACKWARD) {
    RLX_TRY(check_kind(AS("kind")));
    RLX_TRY(infer_need_float(c, 0));
  } else if (!rlx_dtype_is_float(x->dtype) && !rlx_dtype_is_int(x->dtype)) {
    FAIL(INVALID_ARGUMENT, "input 0 must be numeric, got %s", TSTR(x));
  }
  bool same = x->rank == dy->rank;
  for (int i = 0; same && i < x->rank; i++) same = rlx_dim_compatible(x->dims[i], dy->dims[i]);
  if (!same) FAIL(INVALID_ARGUMENT, "dy %s must have the shape of x %s", TSTR(dy), TSTR(x));
  *OUT(0) = *dy;
  return NULL;
}
