/* lower_elementwise.c: the unary, binary/compare, where, cast and region families. */
#include <math.h>
#include <string.h>

#include "mlx/lower.h"

#define S(v) rlx_l_scalar_like(L, (v), dt)
#define U(op, a) rlx_mx_unary(c, RLX_MXU_##op, (a))
#define B(op, a, b) rlx_mx_binary(c, RLX_MXB_##op, (a), (b))
/* The exp family through rlx's CPU kernels (float32; see shim.h rlx_mx_unary_kernel), where x is
 * not small. */
#define UK(op, a) (cpu && !small(a) ? rlx_mx_unary_kernel(c, RLX_MXU_##op, (a)) : U(op, a))

/* Up to this many elements an activation is MLX's own op: a kernel node of rlx's (and the
 * contiguous copy in front of a strided x) costs more than the op's scalar loop there, and
 * compiled mode fuses MLX's op with its neighbours (Silero VAD's LSTM gates, [1, 128] each). */
#define SMALL_ELEMENTS 1024

static bool small(const rlx_mx_arr *x) {
  rlx_type t;
  int64_t n;
  if (!rlx_mx_type(x, &t)) return false;
  rlx_status *st = rlx_type_numel(&t, &n);
  if (st) return rlx_status_free(st), false;
  return n <= SMALL_ELEMENTS;
}

/* max(0, min(1, alpha x + beta)) */
static rlx_mx_arr *hard_sigmoid(rlx_lower *L, rlx_mx_arr *x, double alpha, double beta, rlx_dtype dt) {
  rlx_mx *c = L->mx;
  return B(MAXIMUM, B(MINIMUM, B(ADD, B(MULTIPLY, x, S(alpha)), S(beta)), S(1)), S(0));
}

/* Signed integer arithmetic that may overflow is computed in the unsigned dtype of the same width
 * (two's complement wrap-around, the same bits): in a compiled executable MLX fuses elementwise ops
 * into C++ built with g++ -O3, where a signed overflow is undefined behaviour the optimizer may
 * build on (see int_pow). */
static rlx_dtype unsigned_of(rlx_dtype dt) {
  return dt == RLX_DTYPE_I8 ? RLX_DTYPE_U8 : dt == RLX_DTYPE_I16 ? RLX_DTYPE_U16 : dt == RLX_DTYPE_I32 ? RLX_DTYPE_U32 : RLX_DTYPE_U64;
}

/* -a with two's complement wrap-around (-INT_MIN = INT_MIN). */
static rlx_mx_arr *wrapping_negate(rlx_lower *L, rlx_mx_arr *a, rlx_dtype dt) {
  rlx_mx *c = L->mx;
  rlx_dtype u = unsigned_of(dt);
  return rlx_mx_view(c, B(SUBTRACT, rlx_mx_scalar(c, 0, u), rlx_mx_view(c, a, u)), dt);
}

/* Signed integer a^b with MLX's results (0 for b < 0, else the wrapped product). MLX's integer
 * power halves the exponent until it is 0 after returning 0 for b < 0; in a fused kernel g++ may
 * drop that test when an earlier overflow lets it assume b >= 0 (b = -a for a = INT64_MIN), and a
 * negative b then never reaches 0: the run hung (fuzz_graph). An unsigned exponent reaches 0 in
 * at most 64 halvings whatever the optimizer assumes. */
static rlx_mx_arr *int_pow(rlx_lower *L, rlx_mx_arr *a, rlx_mx_arr *b, rlx_dtype dt) {
  rlx_mx *c = L->mx;
  rlx_dtype u = unsigned_of(dt);
  rlx_mx_arr *p = rlx_mx_view(c, B(POWER, rlx_mx_view(c, a, u), rlx_mx_view(c, b, u)), dt);
  return rlx_mx_where(c, B(LESS, b, S(0)), S(0), p);
}

rlx_mx_arr *rlx_l_unary(rlx_lower *L, rlx_op op, rlx_mx_arr *x, rlx_dtype dt) {
  rlx_mx *c = L->mx;
  bool cpu = rlx_mx_get_device(c) == RLX_MX_CPU;
  /* The activations that MLX would compose from 2-5 single-threaded passes: one pass of rlx's
   * kernel on the pool (float32 on the CPU; shim.h rlx_mx_bias_act). */
  rlx_mx_act ka;
  if (cpu && dt == RLX_DTYPE_F32 && !small(x) &&
      (op == RLX_OP_RELU || op == RLX_OP_SILU || op == RLX_OP_GELU || op == RLX_OP_GELU_APPROX || op == RLX_OP_HARD_SWISH) &&
      rlx_l_kernel_act(rlx_op_name(op), &ka))
    return rlx_mx_bias_act(c, x, NULL, ka);
  switch (op) {
    case RLX_OP_ABS: return U(ABS, x);
    case RLX_OP_NEG: return rlx_dtype_is_int(dt) && rlx_dtype_is_signed(dt) ? wrapping_negate(L, x, dt) : U(NEGATIVE, x);
    case RLX_OP_EXP: return UK(EXP, x);
    case RLX_OP_LOG: return UK(LOG, x);
    case RLX_OP_SQRT: return U(SQRT, x);
    case RLX_OP_RSQRT: return U(RSQRT, x);
    case RLX_OP_SIN: return U(SIN, x);
    case RLX_OP_COS: return U(COS, x);
    case RLX_OP_TAN: return U(TAN, x);
    case RLX_OP_ASIN: return U(ARCSIN, x);
    case RLX_OP_ACOS: return U(ARCCOS, x);
    case RLX_OP_ATAN: return U(ARCTAN, x);
    case RLX_OP_SINH: return U(SINH, x);
    case RLX_OP_COSH: return U(COSH, x);
    case RLX_OP_TANH: return UK(TANH, x);
    case RLX_OP_ASINH: return U(ARCSINH, x);
    case RLX_OP_ACOSH: return U(ARCCOSH, x);
    case RLX_OP_ATANH: return U(ARCTANH, x);
    case RLX_OP_SIGMOID: return UK(SIGMOID, x);
    case RLX_OP_RELU: return B(MAXIMUM, x, S(0));
    case RLX_OP_GELU: /* x/2 (1 + erf(x / sqrt 2)) */
      return B(MULTIPLY, B(MULTIPLY, x, S(0.5)), B(ADD, S(1), UK(ERF, B(MULTIPLY, x, S(M_SQRT1_2)))));
    case RLX_OP_GELU_APPROX: { /* x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
      rlx_mx_arr *inner = B(MULTIPLY, S(sqrt(2.0 / M_PI)), B(ADD, x, B(MULTIPLY, S(0.044715), B(MULTIPLY, x, U(SQUARE, x)))));
      return B(MULTIPLY, B(MULTIPLY, x, S(0.5)), B(ADD, S(1), UK(TANH, inner)));
    }
    case RLX_OP_SILU: return B(MULTIPLY, x, UK(SIGMOID, x));
    case RLX_OP_HARD_SWISH: return B(MULTIPLY, x, hard_sigmoid(L, x, 1.0 / 6, 0.5, dt));
    case RLX_OP_ROUND: return U(ROUND, x);
    case RLX_OP_FLOOR: return U(FLOOR, x);
    case RLX_OP_CEIL: return U(CEIL, x);
    case RLX_OP_SIGN: return U(SIGN, x);
    case RLX_OP_RECIPROCAL: return U(RECIPROCAL, x);
    case RLX_OP_ERF: return UK(ERF, x);
    case RLX_OP_SOFTPLUS: return B(LOGADDEXP, x, S(0));
    case RLX_OP_NOT: return U(LOGICAL_NOT, x);
    case RLX_OP_IS_NAN: return U(ISNAN, x);
    case RLX_OP_BITWISE_NOT: return U(BITWISE_INVERT, x);
    default:
      rlx_lower_fail(L, RLX_STATUS_INTERNAL, "op %s is not a unary op", rlx_op_name(op));
      return NULL;
  }
}

void rlx_lower_unary(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  if (n->op == RLX_OP_IS_INF) {
    bool neg = rlx_node_i(n, "detect_negative") != 0, pos = rlx_node_i(n, "detect_positive") != 0;
    if (neg && pos) out[0] = U(ISINF, in[0]);
    else if (pos) out[0] = U(ISPOSINF, in[0]);
    else if (neg) out[0] = U(ISNEGINF, in[0]);
    else out[0] = rlx_mx_full(c, rlx_out_type(L, n, 0)->rank, rlx_out_type(L, n, 0)->dims, 0, RLX_DTYPE_BOOL);
    return;
  }
  if (n->op == RLX_OP_HARD_SIGMOID) {
    out[0] = hard_sigmoid(L, in[0], rlx_node_f(n, "alpha"), rlx_node_f(n, "beta"), rlx_in_type(L, n, 0)->dtype);
    return;
  }
  /* an activation of an rlx convolution's result (a residual block's Add) read only here: applied
   * in the convolution's task (shim.h rlx_mx_conv_epilogue) */
  rlx_mx_act ka;
  if (rlx_l_read_once(L, n->in[0]) && rlx_in_type(L, n, 0)->dtype == RLX_DTYPE_F32 && rlx_l_kernel_act(rlx_op_name(n->op), &ka) &&
      ka.kind != RLX_MX_ACT_NONE && (out[0] = rlx_mx_conv_epilogue(c, in[0], NULL, ka)))
    return;
  out[0] = rlx_l_unary(L, n->op, in[0], rlx_in_type(L, n, 0)->dtype);
}

/* Integer division and remainder are defined for every divisor, as numpy defines them: a / 0 and
 * a % 0 are 0, a / -1 is -a wrapped (INT_MIN / -1 = INT_MIN) and a % -1 is 0. MLX only sees
 * divisors other than 0 and -1: its CPU kernels trap (SIGFPE) on x / 0 and INT_MIN / -1. */
typedef struct int_divisor {
  rlx_mx_arr *b;              /* the divisor with 0 and -1 replaced by 1 */
  rlx_mx_arr *is0, *is_m1;    /* where the divisor was 0 / -1 (is_m1 NULL for unsigned dtypes) */
} int_divisor;

static int_divisor safe_divisor(rlx_lower *L, rlx_mx_arr *b, rlx_dtype dt) {
  rlx_mx *c = L->mx;
  int_divisor d = {.is0 = B(EQUAL, b, S(0))};
  rlx_mx_arr *bad = d.is0;
  if (rlx_dtype_is_signed(dt)) d.is_m1 = B(EQUAL, b, S(-1)), bad = B(LOGICAL_OR, bad, d.is_m1);
  d.b = rlx_mx_where(c, bad, S(1), b);
  return d;
}

/* r (computed with d's safe divisor) with the results for divisors 0 and -1 put back. */
static rlx_mx_arr *int_defined(rlx_lower *L, const int_divisor *d, rlx_mx_arr *r, rlx_mx_arr *by_minus1, rlx_dtype dt) {
  rlx_mx *c = L->mx;
  if (d->is_m1) r = rlx_mx_where(c, d->is_m1, by_minus1, r);
  return rlx_mx_where(c, d->is0, S(0), r);
}

/* Integer division truncating toward zero (C and ONNX semantics); MLX's floor_divide floors. */
static rlx_mx_arr *int_div_trunc(rlx_lower *L, rlx_mx_arr *a, rlx_mx_arr *b0, rlx_dtype dt) {
  rlx_mx *c = L->mx;
  int_divisor d = safe_divisor(L, b0, dt);
  rlx_mx_arr *b = d.b, *q = B(FLOOR_DIVIDE, a, b);
  if (rlx_dtype_is_signed(dt)) {
    rlx_mx_arr *r = B(REMAINDER, a, b);
    rlx_mx_arr *fix = rlx_mx_binary(c, RLX_MXB_LOGICAL_AND, B(NOT_EQUAL, r, S(0)), B(NOT_EQUAL, B(LESS, a, S(0)), B(LESS, b, S(0))));
    q = B(ADD, q, rlx_mx_astype(c, fix, dt));
  }
  return int_defined(L, &d, q, d.is_m1 ? wrapping_negate(L, a, dt) : NULL, dt);
}

/* Integer remainder with the divisor's sign (Python %), or the dividend's (C fmod). */
static rlx_mx_arr *int_mod(rlx_lower *L, rlx_mx_arr *a, rlx_mx_arr *b0, rlx_dtype dt, bool fmod) {
  rlx_mx *c = L->mx;
  int_divisor d = safe_divisor(L, b0, dt);
  rlx_mx_arr *r = B(REMAINDER, a, d.b);
  if (fmod && rlx_dtype_is_signed(dt)) {
    rlx_mx_arr *wrong = rlx_mx_binary(c, RLX_MXB_LOGICAL_AND, B(NOT_EQUAL, r, S(0)), B(NOT_EQUAL, B(LESS, r, S(0)), B(LESS, a, S(0))));
    r = rlx_mx_where(c, wrong, B(SUBTRACT, r, d.b), r);
  }
  return int_defined(L, &d, r, S(0), dt);
}

rlx_mx_arr *rlx_l_binary(rlx_lower *L, rlx_op op, rlx_mx_arr *a, rlx_mx_arr *b, rlx_dtype dt) {
  rlx_mx *c = L->mx;
  switch (op) {
    case RLX_OP_ADD: return B(ADD, a, b);
    case RLX_OP_SUB: return B(SUBTRACT, a, b);
    case RLX_OP_MUL: return B(MULTIPLY, a, b);
    case RLX_OP_DIV: return rlx_dtype_is_int(dt) ? int_div_trunc(L, a, b, dt) : B(DIVIDE, a, b);
    case RLX_OP_MAX: return B(MAXIMUM, a, b);
    case RLX_OP_MIN: return B(MINIMUM, a, b);
    case RLX_OP_POW: return rlx_dtype_is_int(dt) && rlx_dtype_is_signed(dt) ? int_pow(L, a, b, dt) : B(POWER, a, b);
    case RLX_OP_MOD: return rlx_dtype_is_int(dt) ? int_mod(L, a, b, dt, false) : B(REMAINDER, a, b);
    case RLX_OP_AND: return B(LOGICAL_AND, a, b);
    case RLX_OP_OR: return B(LOGICAL_OR, a, b);
    case RLX_OP_XOR: return B(NOT_EQUAL, a, b);
    case RLX_OP_BITWISE_AND: return B(BITWISE_AND, a, b);
    case RLX_OP_BITWISE_OR: return B(BITWISE_OR, a, b);
    case RLX_OP_BITWISE_XOR: return B(BITWISE_XOR, a, b);
    case RLX_OP_EQUAL: return B(EQUAL, a, b);
    case RLX_OP_NOT_EQUAL: return B(NOT_EQUAL, a, b);
    case RLX_OP_LESS: return B(LESS, a, b);
    case RLX_OP_LESS_EQUAL: return B(LESS_EQUAL, a, b);
    case RLX_OP_GREATER: return B(GREATER, a, b);
    case RLX_OP_GREATER_EQUAL: return B(GREATER_EQUAL, a, b);
    default:
      rlx_lower_fail(L, RLX_STATUS_INTERNAL, "op %s is not a binary op", rlx_op_name(op));
      return NULL;
  }
}

/* An Add of a matvec product (CPU or GPU) or of an rlx convolution (CPU) read only here and a
 * float32 operand of its type: one kernel that adds the operand as it stores the result (an LLM's
 * residual stream: two nodes fewer per layer; a residual block's shortcut), the same sums as the
 * Add's. NULL where that does not apply. */
static rlx_mx_arr *fused_residual(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in) {
  const rlx_type *to = rlx_out_type(L, n, 0);
  if (to->dtype != RLX_DTYPE_F32) return NULL;
  for (int side = 0; side < 2; side++) {
    rlx_mx_arr *y;
    if (rlx_l_read_once(L, n->in[side]) && rlx_type_same(rlx_in_type(L, n, side), to) && rlx_type_same(rlx_in_type(L, n, 1 - side), to) &&
        ((y = rlx_mx_matvec_add(L->mx, in[side], in[1 - side])) ||
         (y = rlx_mx_conv_epilogue(L->mx, in[side], in[1 - side], (rlx_mx_act){RLX_MX_ACT_NONE, 0, 0}))))
      return y;
  }
  return NULL;
}

/* Whether n's input `input` is a Constant of one float32, float64 or integer element, and its value. */
static bool constant_scalar(const rlx_lower *L, const rlx_node *n, uint32_t input, double *v) {
  rlx_dtype dt = rlx_in_type(L, n, input)->dtype;
  int64_t numel = 0;
  const void *data = rlx_l_constant(L, n, input, &numel);
  if (!data || numel != 1) return false;
  if (dt == RLX_DTYPE_F32) *v = *(const float *)data;
  else if (dt == RLX_DTYPE_F64) *v = *(const double *)data;
  else if (rlx_dtype_is_int(dt)) *v = (double)rlx_int_at(data, dt, 0);
  else return false;
  return true;
}

void rlx_lower_binary(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  if (n->op == RLX_OP_ADD && (out[0] = fused_residual(L, n, in))) return;
  rlx_dtype dt = rlx_in_type(L, n, 0)->dtype;
  rlx_mx_arr *a = in[0], *b = in[1];
  double e;
  if (n->op == RLX_OP_POW && rlx_dtype_is_float(dt) && constant_scalar(L, n, 1, &e) && e == 2 &&
      rlx_type_same(rlx_in_type(L, n, 0), rlx_out_type(L, n, 0))) {
    out[0] = B(MULTIPLY, a, a); /* x^2 as x x: the correctly rounded square, where MLX calls powf per element */
    return;
  }
  if (n->op == RLX_OP_MOD && rlx_node_i(n, "fmod")) {
    if (rlx_dtype_is_int(dt)) {
      out[0] = int_mod(L, a, b, dt, true);
      return;
    }
    /* C fmod: the result takes the dividend's sign. r = a % b (divisor's sign), corrected. */
    rlx_mx_arr *r = B(REMAINDER, a, b);
    if (rlx_dtype_is_signed(dt)) {
      rlx_mx_arr *wrong = rlx_mx_binary(c, RLX_MXB_LOGICAL_AND, B(NOT_EQUAL, r, S(0)), B(NOT_EQUAL, B(LESS, r, S(0)), B(LESS, a, S(0))));
      r = rlx_mx_where(c, wrong, B(SUBTRACT, r, b), r);
    }
    out[0] = r;
    return;
  }
  if (n->op == RLX_OP_BIT_SHIFT) {
    bool left = strcmp(rlx_node_s(n, "direction"), "left") == 0;
    out[0] = left ? B(LEFT_SHIFT, a, b) : B(RIGHT_SHIFT, a, b);
    return;
  }
  out[0] = rlx_l_binary(L, n->op, a, b, dt);
}

void rlx_lower_where(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  (void)n;
  out[0] = rlx_mx_where(L->mx, in[0], in[1], in[2]);
}

/* Cast: float -> integer truncates toward zero; anything -> bool is x != 0; the low-precision
 * storage types decode to float32/int32 and encode from any type (lower_lowp.c). */
static rlx_mx_arr *cast(rlx_lower *L, rlx_mx_arr *x, rlx_dtype from, rlx_dtype to, bool saturate) {
  rlx_mx *c = L->mx;
  if (from == to) return x;
  if (rlx_dtype_is_lowp(from)) {
    x = rlx_l_lowp_decode(L, x, from);
    from = from >= RLX_DTYPE_I4 ? RLX_DTYPE_I32 : RLX_DTYPE_F32;
    if (from == to) return x;
  }
  if (rlx_dtype_is_lowp(to)) return rlx_l_lowp_encode(L, x, from, to, saturate);
  if (to == RLX_DTYPE_BOOL) {
    rlx_dtype dt = from;
    return B(NOT_EQUAL, x, S(0));
  }
  return rlx_mx_astype(c, x, to);
}

void rlx_lower_cast(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  out[0] = cast(L, in[0], rlx_in_type(L, n, 0)->dtype, (rlx_dtype)rlx_node_i(n, "to"), rlx_node_i(n, "saturate") != 0);
}

void rlx_lower_region(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  size_t cnt;
  const int64_t *ch = rlx_node_is(n, "chain", &cnt);
  size_t steps = cnt / 5;
  rlx_mx_arr *st[256];
  rlx_dtype sdt[256];
  for (size_t s = 0; s < steps; s++) {
    const int64_t *p = ch + 5 * s;
    rlx_mx_arr *o[3] = {NULL, NULL, NULL};
    rlx_dtype od[3] = {RLX_DTYPE_F32, RLX_DTYPE_F32, RLX_DTYPE_F32};
    for (int k = 0; k < rlx_region_operands(p[0]); k++) { /* fields past these are unused (not validated) */
      int64_t r = p[2 + k];
      o[k] = r >= 0 ? (r < n->n_in ? in[r] : NULL) : st[-r - 1];
      od[k] = r >= 0 ? (r < n->n_in ? rlx_in_type(L, n, (uint32_t)r)->dtype : RLX_DTYPE_F32) : sdt[-r - 1];
    }
    switch (p[0]) {
      case 0:
        st[s] = rlx_l_unary(L, (rlx_op)p[1], o[0], od[0]);
        sdt[s] = (p[1] == RLX_OP_IS_NAN) ? RLX_DTYPE_BOOL : od[0];
        break;
      case 1:
        st[s] = cast(L, o[0], od[0], (rlx_dtype)p[1], true);
        sdt[s] = (rlx_dtype)p[1];
        break;
      case 2:
        st[s] = rlx_l_binary(L, (rlx_op)p[1], o[0], o[1], od[0]);
        sdt[s] = rlx_op_is_compare((rlx_op)p[1]) ? RLX_DTYPE_BOOL : od[0];
        break;
      default:
        st[s] = rlx_mx_where(L->mx, o[0], o[1], o[2]);
        sdt[s] = od[1];
        break;
    }
  }
  out[0] = st[steps - 1];
}
