/* lower_act_grad.c: ReluBackward and ActivationBackward, dy * f'(x) in closed form. */
#include <math.h>

#include "mlx/lower.h"

#define S(v) rlx_mx_scalar(c, (v), dt)
#define U(op, a) rlx_mx_unary(c, RLX_MXU_##op, (a))
#define B(op, a, b) rlx_mx_binary(c, RLX_MXB_##op, (a), (b))

/* f'(x) of activation `op` (NULL: f' = 1, the straight-through estimator of Round). */
static rlx_mx_arr *derivative(rlx_lower *L, rlx_op op, rlx_mx_arr *x, rlx_dtype dt) {
  rlx_mx *c = L->mx;
  switch (op) {
    case RLX_OP_GELU: /* Phi(x) + x phi(x) */
      return B(ADD, B(MULTIPLY, S(0.5), B(ADD, S(1), U(ERF, B(MULTIPLY, x, S(M_SQRT1_2))))),
               B(MULTIPLY, x, B(MULTIPLY, S(0.5 * M_2_SQRTPI * M_SQRT1_2), U(EXP, B(MULTIPLY, S(-0.5), U(SQUARE, x))))));
    case RLX_OP_GELU_APPROX: { /* t = tanh(u), u = sqrt(2/pi)(x + a x^3): (1 + t)/2 + x/2 (1 - t^2) u' */
      double k = sqrt(2.0 / M_PI), a = 0.044715;
      rlx_mx_arr *x2 = U(SQUARE, x);
      rlx_mx_arr *t = U(TANH, B(MULTIPLY, S(k), B(ADD, x, B(MULTIPLY, S(a), B(MULTIPLY, x, x2)))));
      rlx_mx_arr *du = B(MULTIPLY, S(k), B(ADD, S(1), B(MULTIPLY, S(3 * a), x2)));
      return B(ADD, B(MULTIPLY, S(0.5), B(ADD, S(1), t)),
               B(MULTIPLY, B(MULTIPLY, S(0.5), x), B(MULTIPLY, B(SUBTRACT, S(1), U(SQUARE, t)), du)));
    }
    case RLX_OP_SILU: { /* s (1 + x (1 - s)) */
      rlx_mx_arr *s = U(SIGMOID, x);
      return B(MULTIPLY, s, B(ADD, S(1), B(MULTIPLY, x, B(SUBTRACT, S(1), s))));
    }
    case RLX_OP_RELU: return rlx_mx_astype(c, B(GREATER, x, S(0)), dt);
    case RLX_OP_SIGMOID: {
      rlx_mx_arr *s = U(SIGMOID, x);
      return B(MULTIPLY, s, B(SUBTRACT, S(1), s));
    }
    case RLX_OP_TANH: return B(SUBTRACT, S(1), U(SQUARE, U(TANH, x)));
    case RLX_OP_EXP: return U(EXP, x);
    case RLX_OP_LOG: return U(RECIPROCAL, x);
    case RLX_OP_SQRT: /* 1 / (2 sqrt x), 0 where x <= 0 */
      return rlx_mx_where(c, B(GREATER, x, S(0)), B(MULTIPLY, S(0.5), U(RSQRT, x)), S(0));
    case RLX_OP_RSQRT: /* -x^(-3/2) / 2, 0 where x <= 0 */
      return rlx_mx_where(c, B(GREATER, x, S(0)), B(MULTIPLY, S(-0.5), B(MULTIPLY, U(RSQRT, x), U(RECIPROCAL, x))), S(0));
    case RLX_OP_NEG: return S(-1);
    case RLX_OP_ABS: return U(SIGN, x);
    case RLX_OP_SIN: return U(COS, x);
    case RLX_OP_COS: return U(NEGATIVE, U(SIN, x));
    case RLX_OP_TAN: return B(ADD, S(1), U(SQUARE, U(TAN, x)));
    case RLX_OP_ATAN: return U(RECIPROCAL, B(ADD, S(1), U(SQUARE, x)));
    case RLX_OP_ROUND: return NULL;
    default:
      rlx_lower_fail(L, RLX_STATUS_INTERNAL, "no derivative for %s", rlx_op_name(op));
      return NULL;
  }
}

void rlx_lower_act_grad(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  rlx_dtype dt = rlx_in_type(L, n, 0)->dtype;
  if (n->op == RLX_OP_RELU_BACKWARD) {
    out[0] = rlx_mx_where(c, B(GREATER, in[0], S(0)), in[1], S(0));
    return;
  }
  rlx_op op;
  rlx_status *st = rlx_op_from_name(rlx_node_s(n, "kind"), &op);
  if (st) {
    rlx_mx_fail(c, st);
    return;
  }
  rlx_mx_arr *d = derivative(L, op, in[0], dt);
  out[0] = d ? B(MULTIPLY, in[1], d) : rlx_mx_contiguous(c, in[1]);
}
