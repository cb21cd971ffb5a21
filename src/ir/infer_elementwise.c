/* infer_elementwise.c: inference for leaves and the elementwise families (unary, binary and
 * compare, where, cast, region). */
#include "ir/infer_util.h"

rlx_status *rlx_infer_leaf(rlx_infer_ctx *c) {
  (void)c;
  FAIL(INTERNAL, "leaves are not inferred");
}

/* Which dtypes a unary op accepts, and its output dtype. */
static rlx_status *unary_type(rlx_op op, const rlx_type *x, rlx_type *y) {
  *y = *x;
  rlx_dtype d = x->dtype;
  const char *need = NULL;
  switch (op) {
    case RLX_OP_ABS: case RLX_OP_NEG: case RLX_OP_SIGN: case RLX_OP_RELU:
      if (!rlx_dtype_is_float(d) && !rlx_dtype_is_int(d)) need = "a numeric type";
      break;
    case RLX_OP_NOT:
      if (d != RLX_DTYPE_BOOL) need = "bool";
      break;
    case RLX_OP_BITWISE_NOT:
      if (!rlx_dtype_is_int(d)) need = "an integer type";
      break;
    case RLX_OP_IS_NAN: case RLX_OP_IS_INF:
      if (!rlx_dtype_is_float(d)) need = "a float type";
      y->dtype = RLX_DTYPE_BOOL;
      break;
    default:
      if (!rlx_dtype_is_float(d)) need = "a float type";
      break;
  }
  if (need) return RLX_ERR(INVALID_ARGUMENT, "input 0 must be %s, got %s", need, rlx_dtype_name(d));
  return NULL;
}

rlx_status *rlx_infer_unary(rlx_infer_ctx *c) { return unary_type(OP, IN(0), OUT(0)); }

rlx_status *rlx_infer_activation(const char *act, rlx_op *out) {
  *out = RLX_OP_COUNT;
  if (strcmp(act, "none") == 0) return NULL;
  rlx_op op;
  rlx_status *e = rlx_op_from_name(act, &op);
  if (e || rlx_infer_fn_of(op) != rlx_infer_unary || *rlx_op_info_get(op)->schema || op == RLX_OP_NOT ||
      op == RLX_OP_IS_NAN || op == RLX_OP_BITWISE_NOT) {
    rlx_status_free(e);
    return RLX_ERR(INVALID_ARGUMENT, "activation '%s' is not a float unary op (e.g. Relu, Gelu, Silu) or 'none'", act);
  }
  *out = op;
  return NULL;
}

bool rlx_op_is_compare(rlx_op op) { return op >= RLX_OP_EQUAL && op <= RLX_OP_GREATER_EQUAL; }

static rlx_status *binary_type(rlx_op op, const rlx_type *a, const rlx_type *b, rlx_type *y) {
  if (a->dtype != b->dtype)
    return RLX_ERR(INVALID_ARGUMENT, "input dtypes differ: %s vs %s", rlx_dtype_name(a->dtype), rlx_dtype_name(b->dtype));
  rlx_dtype d = a->dtype;
  const char *need = NULL;
  switch (op) {
    case RLX_OP_AND: case RLX_OP_OR: case RLX_OP_XOR:
      if (d != RLX_DTYPE_BOOL) need = "bool";
      break;
    case RLX_OP_BITWISE_AND: case RLX_OP_BITWISE_OR: case RLX_OP_BITWISE_XOR:
      if (!rlx_dtype_is_int(d) && d != RLX_DTYPE_BOOL) need = "an integer type";
      break;
    case RLX_OP_BIT_SHIFT:
      if (!rlx_dtype_is_int(d)) need = "an integer type";
      break;
    case RLX_OP_EQUAL: case RLX_OP_NOT_EQUAL: /* low-precision codes are not values (+-0, NaNs, spare bits) */
      if (rlx_dtype_is_lowp(d)) need = "of a type compared by value (Cast low-precision types first)";
      break;
    default:
      if (!rlx_dtype_is_float(d) && !rlx_dtype_is_int(d)) need = "a numeric type";
      break;
  }
  if (need) return RLX_ERR(INVALID_ARGUMENT, "inputs must be %s, got %s", need, rlx_dtype_name(d));
  RLX_TRY(rlx_shape_broadcast(a, b, y));
  y->dtype = rlx_op_is_compare(op) ? RLX_DTYPE_BOOL : d;
  return NULL;
}

rlx_status *rlx_infer_binary(rlx_infer_ctx *c) {
  if (OP == RLX_OP_BIT_SHIFT) {
    const char *dir = AS("direction");
    if (strcmp(dir, "left") != 0 && strcmp(dir, "right") != 0)
      FAIL(INVALID_ARGUMENT, "direction must be \"left\" or \"right\", got \"%s\"", dir);
  }
  return binary_type(OP, IN(0), IN(1), OUT(0));
}

static rlx_status *where_type(const rlx_type *cnd, const rlx_type *x, const rlx_type *y, rlx_type *out) {
  if (cnd->dtype != RLX_DTYPE_BOOL) return RLX_ERR(INVALID_ARGUMENT, "condition must be bool, got %s", rlx_dtype_name(cnd->dtype));
  if (x->dtype != y->dtype)
    return RLX_ERR(INVALID_ARGUMENT, "branch dtypes differ: %s vs %s", rlx_dtype_name(x->dtype), rlx_dtype_name(y->dtype));
  rlx_type t;
  RLX_TRY(rlx_shape_broadcast(cnd, x, &t));
  RLX_TRY(rlx_shape_broadcast(&t, y, out));
  out->dtype = x->dtype;
  return NULL;
}

rlx_status *rlx_infer_where(rlx_infer_ctx *c) { return where_type(IN(0), IN(1), IN(2), OUT(0)); }

static rlx_status *cast_type(int64_t to, const rlx_type *x, rlx_type *y) {
  if (to < 0 || to >= RLX_DTYPE_COUNT) return RLX_ERR(INVALID_ARGUMENT, "cast target %lld is not an rlx_dtype", (long long)to);
  *y = *x;
  y->dtype = (rlx_dtype)to;
  return NULL;
}

rlx_status *rlx_infer_cast(rlx_infer_ctx *c) { return cast_type(AI("to"), IN(0), OUT(0)); }

/* Region: validates the chain and simulates each step's type with the single-op rules. */
rlx_status *rlx_infer_region(rlx_infer_ctx *c) {
  size_t n;
  const int64_t *ch = rlx_node_is(c->n, "chain", &n);
  if (n == 0 || n % 5) FAIL(INVALID_ARGUMENT, "chain must hold 5 ints per step, got %zu ints", n);
  size_t steps = n / 5;
  if (steps > 256) FAIL(INVALID_ARGUMENT, "chain has %zu steps; at most 256", steps);
  rlx_type st[256];
  for (size_t s = 0; s < steps; s++) {
    const int64_t *p = ch + 5 * s;
    const rlx_type *opd[3];
    for (int k = 0; k < rlx_region_operands(p[0]); k++) {
      int64_t r = p[2 + k];
      if (r >= 0 && r < NIN) opd[k] = IN(r);
      else if (r < 0 && -r - 1 < (int64_t)s) opd[k] = &st[-r - 1];
      else FAIL(INVALID_ARGUMENT, "chain step %zu: operand %d refers to %lld, which is neither an input nor an earlier step", s, k, (long long)r);
    }
    rlx_status *e = NULL;
    switch (p[0]) {
      case 0:
        if (p[1] < 0 || p[1] >= RLX_OP_COUNT || rlx_infer_fn_of((rlx_op)p[1]) != rlx_infer_unary || *rlx_op_info_get((rlx_op)p[1])->schema)
          e = RLX_ERR(INVALID_ARGUMENT, "sub-op %lld is not an attribute-free unary op", (long long)p[1]);
        else e = unary_type((rlx_op)p[1], opd[0], &st[s]);
        break;
      case 1: e = cast_type(p[1], opd[0], &st[s]); break;
      case 2:
        if (p[1] < 0 || p[1] >= RLX_OP_COUNT || rlx_infer_fn_of((rlx_op)p[1]) != rlx_infer_binary || *rlx_op_info_get((rlx_op)p[1])->schema)
          e = RLX_ERR(INVALID_ARGUMENT, "sub-op %lld is not an attribute-free binary or compare op", (long long)p[1]);
        else e = binary_type((rlx_op)p[1], opd[0], opd[1], &st[s]);
        break;
      case 3: e = where_type(opd[0], opd[1], opd[2], &st[s]); break;
      default: e = RLX_ERR(INVALID_ARGUMENT, "step kind %lld (expected 0 unary, 1 cast, 2 binary, 3 where)", (long long)p[0]);
    }
    if (e) return rlx_status_annotate(e, "chain step %zu", s);
  }
  *OUT(0) = st[steps - 1];
  return NULL;
}
