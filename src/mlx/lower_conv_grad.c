/* lower_conv_grad.c: gradients of 2-D convolution and max pooling.
 * - Conv2dBackwardInput: the transposed convolution of dy with w (rlx_l_conv_transpose), its
 *   output_padding chosen so that the result has input_shape.
 * - Conv2dBackwardWeight: dw[g, o, (c,k)] = sum over n and output positions of dy times the
 *   input's im2col patches (rlx_l_conv_patches): one batched matmul contracting N*Ho*Wo.
 * - MaxPool2dBackward: the argmax of each window (first maximum in row-major window order),
 *   turned into a flat input index, and dy scatter-added there. */
#include <math.h>

#include "mlx/conv_ops.h"

static void backward_input(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  const rlx_type *tdy = rlx_in_type(L, n, 0), *tw = rlx_in_type(L, n, 1), *tx = rlx_out_type(L, n, 0);
  rlx_conv_geom gm;
  rlx_conv_geom_read(n, 2, &gm);
  for (int i = 0; i < 2; i++) /* what the forward output's floor division dropped */
    gm.op[i] = tx->dims[2 + i] - (gm.s[i] * (tdy->dims[2 + i] - 1) + gm.d[i] * (tw->dims[2 + i] - 1) + 1 - gm.p[i] - gm.p[i + 2]);
  out[0] = rlx_l_conv_transpose(L, in[0], tdy, in[1], tw, &gm, tx);
}

static void backward_weight(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  const rlx_type *tx = rlx_in_type(L, n, 0), *tdy = rlx_in_type(L, n, 1), *tdw = rlx_out_type(L, n, 0);
  rlx_conv_geom gm;
  rlx_conv_geom_read(n, 2, &gm);
  int64_t k[2] = {tdw->dims[2], tdw->dims[3]}, o[2] = {tdy->dims[2], tdy->dims[3]};
  int64_t N = tx->dims[0], g = gm.group, og = tdy->dims[1] / g, cgk = tdw->dims[1] * k[0] * k[1], P = o[0] * o[1];
  rlx_mx_arr *patches = rlx_l_conv_patches(L, in[0], tx, k, &gm, o); /* [N, g, cgK, P] */
  patches = rlx_mx_transpose(c, patches, 4, (int64_t[]){1, 0, 3, 2});
  patches = rlx_mx_reshape(c, patches, 3, (int64_t[]){g, N * P, cgk});
  rlx_mx_arr *dy = rlx_mx_reshape(c, in[1], 4, (int64_t[]){N, g, og, P});
  dy = rlx_mx_reshape(c, rlx_mx_transpose(c, dy, 4, (int64_t[]){1, 2, 0, 3}), 3, (int64_t[]){g, og, N * P});
  out[0] = rlx_l_reshape(L, rlx_mx_matmul(c, dy, patches), tdw);
}

/* v as a [1,..,len,..,1] int32 ramp along axis `axis` of a rank-r array. */
static rlx_mx_arr *ramp(rlx_lower *L, int64_t len, int axis, int r) {
  int64_t d[RLX_MAX_RANK];
  for (int i = 0; i < r; i++) d[i] = i == axis ? len : 1;
  return rlx_mx_reshape(L->mx, rlx_mx_arange(L->mx, 0, (double)len, 1, RLX_DTYPE_I32), r, d);
}

static void maxpool_backward(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  const rlx_type *tx = rlx_in_type(L, n, 0), *tdy = rlx_in_type(L, n, 1);
  rlx_dtype dt = tx->dtype;
  rlx_conv_geom gm;
  rlx_conv_geom_read(n, 2, &gm);
  int64_t k[2], o[2] = {tdy->dims[2], tdy->dims[3]}, N = tx->dims[0], C = tx->dims[1], H = tx->dims[2], W = tx->dims[3];
  rlx_conv_list_get(n, "kernel_shape", 2, 1, k);
  rlx_type tp = *tx;
  for (int i = 0; i < 2; i++) tp.dims[2 + i] += gm.p[i] + gm.p[i + 2];
  rlx_mx_arr *xp = rlx_l_pad_spatial(L, in[0], tx, 2, gm.p, gm.p + 2, rlx_mx_scalar(c, -INFINITY, dt));
  rlx_mx_arr *win = rlx_mx_reshape(c, rlx_l_pool_windows(L, xp, &tp, k, &gm, o), 5, (int64_t[]){N, C, o[0], o[1], k[0] * k[1]});
  rlx_mx_arr *arg = rlx_mx_astype(c, rlx_mx_argmax(c, win, 4, false), RLX_DTYPE_I32); /* [N, C, oh, ow] */
  rlx_mx_arr *kw = rlx_mx_scalar(c, (double)k[1], RLX_DTYPE_I32);
  /* input row / column of each window's maximum */
  rlx_mx_arr *row = rlx_mx_binary(c, RLX_MXB_ADD, rlx_mx_binary(c, RLX_MXB_MULTIPLY, ramp(L, o[0], 2, 4), rlx_mx_scalar(c, (double)gm.s[0], RLX_DTYPE_I32)),
                                  rlx_mx_binary(c, RLX_MXB_SUBTRACT, rlx_mx_binary(c, RLX_MXB_FLOOR_DIVIDE, arg, kw), rlx_mx_scalar(c, (double)gm.p[0], RLX_DTYPE_I32)));
  rlx_mx_arr *col = rlx_mx_binary(c, RLX_MXB_ADD, rlx_mx_binary(c, RLX_MXB_MULTIPLY, ramp(L, o[1], 3, 4), rlx_mx_scalar(c, (double)gm.s[1], RLX_DTYPE_I32)),
                                  rlx_mx_binary(c, RLX_MXB_SUBTRACT, rlx_mx_binary(c, RLX_MXB_REMAINDER, arg, kw), rlx_mx_scalar(c, (double)gm.p[1], RLX_DTYPE_I32)));
  /* A window whose maximum is padding (all of its real elements -inf or NaN) routes nothing. */
  rlx_mx_arr *zero = rlx_mx_scalar(c, 0, RLX_DTYPE_I32);
  rlx_mx_arr *valid = rlx_mx_binary(c, RLX_MXB_LOGICAL_AND,
                                    rlx_mx_binary(c, RLX_MXB_LOGICAL_AND, rlx_mx_binary(c, RLX_MXB_GREATER_EQUAL, row, zero),
                                                  rlx_mx_binary(c, RLX_MXB_LESS, row, rlx_mx_scalar(c, (double)H, RLX_DTYPE_I32))),
                                    rlx_mx_binary(c, RLX_MXB_LOGICAL_AND, rlx_mx_binary(c, RLX_MXB_GREATER_EQUAL, col, zero),
                                                  rlx_mx_binary(c, RLX_MXB_LESS, col, rlx_mx_scalar(c, (double)W, RLX_DTYPE_I32))));
  rlx_mx_arr *flat = rlx_mx_where(c, valid, rlx_mx_binary(c, RLX_MXB_ADD, rlx_mx_binary(c, RLX_MXB_MULTIPLY, row, rlx_mx_scalar(c, (double)W, RLX_DTYPE_I32)), col), zero);
  rlx_mx_arr *upd = rlx_mx_where(c, valid, in[1], rlx_mx_scalar(c, 0, dt));
  int64_t fl[3] = {N, C, o[0] * o[1]};
  rlx_mx_arr *dx = rlx_mx_full(c, 3, (int64_t[]){N, C, H * W}, 0, dt);
  dx = rlx_mx_put_along_axis(c, dx, rlx_mx_reshape(c, flat, 3, fl), rlx_mx_reshape(c, upd, 3, fl), 2, 1);
  out[0] = rlx_l_reshape(L, dx, tx);
}

void rlx_lower_conv_grad(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  switch (n->op) {
    case RLX_OP_CONV2D_BACKWARD_INPUT: backward_input(L, n, in, out); return;
    case RLX_OP_CONV2D_BACKWARD_WEIGHT: backward_weight(L, n, in, out); return;
    case RLX_OP_MAXPOOL2D_BACKWARD: maxpool_backward(L, n, in, out); return;
    default: rlx_lower_fail(L, RLX_STATUS_INTERNAL, "not a conv_grad op");
  }
}
