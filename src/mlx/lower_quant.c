/* lower_quant.c: FakeQuantize and FakeQuantizeBackward (quantization-aware training, Jacob et al.
 * 2018). Half-precision inputs are computed in float32 (the 1e-12 scale floor underflows in
 * float16) and the result cast back. */
#include <math.h>
#include <string.h>

#include "mlx/lower.h"

#define B(op, a, b) rlx_mx_binary(c, RLX_MXB_##op, (a), (b))

typedef struct quant {
  rlx_dtype dt;   /* compute dtype */
  double qmax;    /* 2^(bits-1) - 1 */
  int rank, axis; /* axis < 0: per tensor */
} quant;

static quant quant_of(rlx_lower *L, const rlx_node *n) {
  const rlx_type *t = rlx_in_type(L, n, 0);
  quant q = {.dt = t->dtype == RLX_DTYPE_F64 ? RLX_DTYPE_F64 : RLX_DTYPE_F32, .rank = t->rank, .axis = -1};
  q.qmax = ldexp(1, (int)rlx_node_i(n, "bits") - 1) - 1;
  if (rlx_node_i(n, "per_channel")) q.axis = (int)(rlx_node_i(n, "axis") < 0 ? rlx_node_i(n, "axis") + t->rank : rlx_node_i(n, "axis"));
  return q;
}

/* max|x| over every axis but q->axis (kept as size 1), or over all axes. */
static rlx_mx_arr *absmax(rlx_lower *L, const quant *q, rlx_mx_arr *x) {
  int axes[RLX_MAX_RANK], na = 0;
  for (int i = 0; i < q->rank; i++)
    if (i != q->axis) axes[na++] = i;
  rlx_mx_arr *a = rlx_mx_unary(L->mx, RLX_MXU_ABS, x);
  return na ? rlx_mx_reduce(L->mx, a, 2, na, axes, true) : a;
}

/* The scale: per_batch max|x| / qmax floored at 1e-12, or the fixed scale input broadcast along
 * the channel axis. */
static rlx_mx_arr *scale_of(rlx_lower *L, const rlx_node *n, const quant *q, rlx_mx_arr *x, rlx_mx_arr *fixed) {
  rlx_mx *c = L->mx;
  if (!fixed) return B(MAXIMUM, B(DIVIDE, absmax(L, q, x), rlx_mx_scalar(c, q->qmax, q->dt)), rlx_mx_scalar(c, 1e-12, q->dt));
  int64_t d[RLX_MAX_RANK], cnt = 1;
  const rlx_type *ts = rlx_in_type(L, n, n->n_in - 1);
  for (int i = 0; i < ts->rank; i++) cnt *= ts->dims[i];
  for (int i = 0; i < q->rank; i++) d[i] = i == q->axis ? cnt : 1;
  return rlx_mx_reshape(c, rlx_mx_astype(c, fixed, q->dt), q->rank, d);
}

/* ema: s = decay r + (1 - decay) s_batch where the running scale r > 0, else s_batch. */
static rlx_mx_arr *ema_scale(rlx_lower *L, const rlx_node *n, const quant *q, rlx_mx_arr *x, rlx_mx_arr *r) {
  rlx_mx *c = L->mx;
  double d = rlx_node_f(n, "decay");
  rlx_mx_arr *sb = scale_of(L, n, q, x, NULL), *rs = scale_of(L, n, q, x, r);
  rlx_mx_arr *mix = B(ADD, B(MULTIPLY, rs, rlx_mx_scalar(c, d, q->dt)), B(MULTIPLY, sb, rlx_mx_scalar(c, 1 - d, q->dt)));
  return rlx_mx_where(c, B(GREATER, rs, rlx_mx_scalar(c, 0, q->dt)), mix, sb);
}

static void fake_quantize(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  quant q = quant_of(L, n);
  rlx_mx_arr *x = rlx_mx_astype(c, in[0], q.dt), *s;
  if (!strcmp(rlx_node_s(n, "scale_mode"), "ema")) {
    s = ema_scale(L, n, &q, x, in[1]);
    const rlx_type *tr = rlx_in_type(L, n, 1);
    out[1] = rlx_mx_astype(c, rlx_l_reshape(L, s, tr), tr->dtype);
  } else {
    s = scale_of(L, n, &q, x, n->n_in == 2 ? in[1] : NULL);
  }
  rlx_mx_arr *v = rlx_mx_unary(c, RLX_MXU_ROUND, B(DIVIDE, x, s));
  v = rlx_mx_clip(c, v, rlx_mx_scalar(c, -q.qmax, q.dt), rlx_mx_scalar(c, q.qmax, q.dt));
  out[0] = rlx_mx_astype(c, B(MULTIPLY, v, s), rlx_in_type(L, n, 0)->dtype);
}

static void fake_quantize_backward(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  rlx_dtype dt = rlx_in_type(L, n, 0)->dtype;
  const char *ste = rlx_node_s(n, "ste");
  rlx_mx_arr *x = in[0], *dy = in[1], *zero = rlx_mx_scalar(c, 0, dt), *pass = NULL;
  if (!strcmp(ste, "identity")) {
    out[0] = rlx_mx_contiguous(c, dy);
    return;
  }
  if (!strcmp(ste, "tanh")) {
    rlx_mx_arr *t = rlx_mx_unary(c, RLX_MXU_TANH, x);
    out[0] = B(MULTIPLY, dy, B(SUBTRACT, rlx_mx_scalar(c, 1, dt), B(MULTIPLY, t, t)));
    return;
  }
  if (!strcmp(ste, "hard_tanh")) {
    pass = B(LESS_EQUAL, rlx_mx_unary(c, RLX_MXU_ABS, x), rlx_mx_scalar(c, 1, dt));
  } else { /* clipped_identity: |x| <= qmax s; a per_batch s makes the bound max|x| itself */
    quant q = quant_of(L, n);
    rlx_mx_arr *xa = rlx_mx_astype(c, x, q.dt), *bound;
    if (n->n_in == 3) bound = B(MULTIPLY, scale_of(L, n, &q, xa, in[2]), rlx_mx_scalar(c, q.qmax, q.dt));
    else bound = B(MAXIMUM, absmax(L, &q, xa), rlx_mx_scalar(c, q.qmax * 1e-12, q.dt));
    pass = B(LESS_EQUAL, rlx_mx_unary(c, RLX_MXU_ABS, xa), bound);
  }
  out[0] = rlx_mx_where(c, pass, dy, zero);
}

void rlx_lower_quant(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  if (n->op == RLX_OP_FAKE_QUANTIZE) fake_quantize(L, n, in, out);
  else fake_quantize_backward(L, n, in, out);
}
