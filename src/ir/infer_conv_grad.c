/* infer_conv_grad.c: inference for Conv2dBackwardInput, Conv2dBackwardWeight and
 * MaxPool2dBackward (see rlx/op_table.h). Each checks that dy has the shape the forward op
 * produces from the other operand and the attributes. */
#include "ir/infer_util.h"

/* Strides / pads / dilations of a 2-D window op, validated. */
static rlx_status *geometry(const rlx_infer_ctx *c, int64_t *s, int64_t *p, int64_t *d) {
  RLX_TRY(rlx_conv_list(c->n, "strides", 2, 1, s));
  RLX_TRY(rlx_conv_list(c->n, "pads", 2, 0, p));
  RLX_TRY(rlx_conv_list(c->n, "dilations", 2, 1, d));
  for (int i = 0; i < 2; i++) {
    if (s[i] <= 0 || d[i] <= 0) FAIL(INVALID_ARGUMENT, "strides and dilations must be > 0");
    if (p[i] < 0 || p[i + 2] < 0) FAIL(INVALID_ARGUMENT, "pads must be >= 0");
  }
  return NULL;
}

/* dy (input dyi) must be [N, co, forward output dims of x dims xd under kernel k]. */
static rlx_status *check_dy(const rlx_infer_ctx *c, int dyi, int64_t n, int64_t co, const int64_t *xd, const int64_t *k,
                            bool pool) {
  int64_t s[2], p[4], d[2], want[4] = {n, co};
  RLX_TRY(geometry(c, s, p, d));
  for (int i = 0; i < 2; i++) {
    if (k[i] <= 0) FAIL(INVALID_ARGUMENT, "kernel dims must be > 0");
    if (pool && (p[i] >= k[i] || p[i + 2] >= k[i])) FAIL(INVALID_ARGUMENT, "pads must be smaller than the window");
    want[2 + i] = RLX_DIM_DYNAMIC;
    if (xd[i] < 0) continue;
    RLX_TRY(rlx_pool_fits(i, xd[i], k[i], s[i], p[i], p[i + 2], d[i]));
    want[2 + i] = rlx_pool_out(xd[i], k[i], s[i], p[i], p[i + 2], d[i], false);
    if (want[2 + i] < 1) FAIL(INVALID_ARGUMENT, "kernel %lld (dilation %lld) is larger than padded spatial dim %d", (long long)k[i], (long long)d[i], i);
  }
  const rlx_type *dy = IN(dyi);
  for (int i = 0; i < 4; i++)
    if (!rlx_dim_compatible(dy->dims[i], want[i]))
      FAIL(INVALID_ARGUMENT, "dy %s must be [%lld,%lld,%lld,%lld], the forward op's output", TSTR(dy), (long long)want[0],
           (long long)want[1], (long long)want[2], (long long)want[3]);
  return NULL;
}

static rlx_status *operands(const rlx_infer_ctx *c) {
  RLX_TRY(infer_need_float(c, 0));
  RLX_TRY(infer_same_dtype(c, 0, 1));
  RLX_TRY(infer_need_rank(c, 0, 4, 4));
  return infer_need_rank(c, 1, 4, 4);
}

static rlx_status *group_of(const rlx_infer_ctx *c, int64_t ci, int64_t co, int64_t *g) {
  *g = AI("group");
  if (*g <= 0) FAIL(INVALID_ARGUMENT, "group must be > 0");
  if ((ci >= 0 && ci % *g) || (co >= 0 && co % *g))
    FAIL(INVALID_ARGUMENT, "channels (%lld in, %lld out) must be divisible by group %lld", (long long)ci, (long long)co, (long long)*g);
  return NULL;
}

static rlx_status *backward_input(rlx_infer_ctx *c) {
  const rlx_type *dy = IN(0), *w = IN(1);
  rlx_type x = {.dtype = dy->dtype};
  RLX_TRY(infer_attr_dims(c, "input_shape", x.dims, &x.rank));
  if (x.rank != 4) FAIL(INVALID_ARGUMENT, "input_shape must have 4 entries [N,Ci,H,W], got %d", x.rank);
  int64_t g;
  RLX_TRY(group_of(c, x.dims[1], w->dims[0], &g));
  int64_t wg = g == 1 ? w->dims[1] : RLX_DIM_DYNAMIC;
  if (w->dims[1] >= 0 && !rlx_mul_i64(w->dims[1], g, &wg))
    FAIL(RESOURCE_EXHAUSTED, "weight %s: channels %lld times group %lld overflow int64", TSTR(w), (long long)w->dims[1], (long long)g);
  if (!rlx_dim_compatible(wg, x.dims[1]))
    FAIL(INVALID_ARGUMENT, "weight %s needs Ci/group = %lld for input_shape channels %lld", TSTR(w), (long long)(x.dims[1] / g), (long long)x.dims[1]);
  RLX_TRY(check_dy(c, 0, x.dims[0], w->dims[0], x.dims + 2, w->dims + 2, false));
  *OUT(0) = x;
  return NULL;
}

static rlx_status *backward_weight(rlx_infer_ctx *c) {
  const rlx_type *x = IN(0), *dy = IN(1);
  int64_t k[2], g;
  RLX_TRY(rlx_conv_list(c->n, "kernel_shape", 2, -1, k));
  RLX_TRY(group_of(c, x->dims[1], dy->dims[1], &g));
  RLX_TRY(check_dy(c, 1, x->dims[0], dy->dims[1], x->dims + 2, k, false));
  rlx_type *y = OUT(0);
  *y = (rlx_type){.dtype = x->dtype, .rank = 4, .dims = {dy->dims[1], x->dims[1] < 0 ? RLX_DIM_DYNAMIC : x->dims[1] / g, k[0], k[1]}};
  return NULL;
}

static rlx_status *maxpool_backward(rlx_infer_ctx *c) {
  const rlx_type *x = IN(0);
  int64_t k[2];
  RLX_TRY(rlx_conv_list(c->n, "kernel_shape", 2, -1, k));
  RLX_TRY(check_dy(c, 1, x->dims[0], x->dims[1], x->dims + 2, k, true));
  *OUT(0) = *x;
  return NULL;
}

rlx_status *rlx_infer_conv_grad(rlx_infer_ctx *c) {
  RLX_TRY(operands(c));
  switch (OP) {
    case RLX_OP_CONV2D_BACKWARD_INPUT: return backward_input(c);
    case RLX_OP_CONV2D_BACKWARD_WEIGHT: return backward_weight(c);
    case RLX_OP_MAXPOOL2D_BACKWARD: return maxpool_backward(c);
    default: FAIL(INTERNAL, "not a conv_grad op");
  }
}
