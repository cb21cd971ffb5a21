/* conv_ops.h: channels-first (NC d1..dn, n = 1..3) convolution building blocks shared by the
 * conv and conv_grad lowerings (src/mlx/lower_conv.c, lower_conv_grad.c). Internal. */
#ifndef RLX_MLX_CONV_OPS_H
#define RLX_MLX_CONV_OPS_H

#include "mlx/lower.h"

/* Window geometry of one convolution or pooling: nsp spatial dims, strides, pads
 * (begin d1..dn, end d1..dn), dilations, groups and ConvTranspose's output_padding. */
typedef struct rlx_conv_geom {
  int nsp;
  int64_t s[3], p[6], d[3], op[3];
  int64_t group;
} rlx_conv_geom;

/* Reads strides / pads / dilations / group / output_padding of node n (absent ones take their
 * defaults); inference has validated them. */
void rlx_conv_geom_read(const rlx_node *n, int nsp, rlx_conv_geom *out);

/* Conv of x[N,Ci,d..] (type tx) with w[Co,Ci/group,k..] (type tw) under geometry gm (pads >= 0),
 * plus bias b[Co] (NULL: none), then activation act ("none" or a float unary IR op name, see
 * rlx_l_activation); output type ty. On the CPU, 1D/2D float convolutions: rlx's kernels, bias
 * and activation fused (rlx_mx_direct_conv2d for at most 4 input channels per group, depthwise
 * ones included, else rlx_mx_gemm_conv2d); 3D ones: one matmul on the channels-first data for
 * 1x1 convolutions, MLX's conv_general where its CPU backend has a GEMM path (group 1, no
 * dilation), else grouped im2col + one batched matmul (see conv_ops.c). On a GPU: MLX's
 * conv_general. wino: NULL, or w's Winograd transform (rlx_mx_winograd_weights, exec_layout.c),
 * which the CPU's GEMM kernel uses for the 3x3 convolutions it fits (rlx_mx_gemm_conv2d). */
rlx_mx_arr *rlx_l_conv(rlx_lower *L, rlx_mx_arr *x, const rlx_type *tx, rlx_mx_arr *w, const rlx_type *tw, rlx_mx_arr *b,
                       rlx_mx_arr *wino, const char *act, const rlx_conv_geom *gm, const rlx_type *ty);

/* ConvTranspose of x[N,Ci,d..] with w[Ci,Co/group,k..] under gm (output_padding included),
 * output type ty: with stride = kernel, group 1 and no dilation on the CPU, one matmul and a
 * transpose (the windows do not overlap); else zero insertion (stride), full-correlation
 * padding, then rlx_l_conv with the flipped, regrouped weight. No bias. */
rlx_mx_arr *rlx_l_conv_transpose(rlx_lower *L, rlx_mx_arr *x, const rlx_type *tx, rlx_mx_arr *w, const rlx_type *tw,
                                 const rlx_conv_geom *gm, const rlx_type *ty);

/* Grouped im2col: the patches of x[N,C,d..] for kernel k[..] under gm (pads >= 0) with output
 * spatial dims o[..], as [N, group, C/group * prod(k), prod(o)] (patch rows ordered c, k1..kn;
 * columns ordered o1..on). */
rlx_mx_arr *rlx_l_conv_patches(rlx_lower *L, rlx_mx_arr *x, const rlx_type *tx, const int64_t *k, const rlx_conv_geom *gm,
                               const int64_t *o);

/* Pads x[N,C,d..] (type t) with `value` by lo/hi on the spatial dims (nothing when all are 0). */
rlx_mx_arr *rlx_l_pad_spatial(rlx_lower *L, rlx_mx_arr *x, const rlx_type *t, int nsp, const int64_t *lo, const int64_t *hi,
                              rlx_mx_arr *value);

/* The pooling windows of an already padded xp[N,C,D..] (dims tp) as a strided view
 * [N, C, o1..on, k1..kn]: window (o) element (k) is xp[.., o*s + k*d]. */
rlx_mx_arr *rlx_l_pool_windows(rlx_lower *L, rlx_mx_arr *xp, const rlx_type *tp, const int64_t *k, const rlx_conv_geom *gm,
                               const int64_t *o);

/* Pool node n over x, its input held channels-first (ax0 = 2) or channels-last (ax0 = 1, then so
 * is the result): padded with the kind's neutral value (plus what ceil_mode windows need past the
 * end), reduced one spatial axis at a time by an elementwise max / min / add / multiply over
 * that axis's k strided slices; mean divides by prod(k), or by the same pooling of a ones tensor
 * (count_include_pad, explicit pads and ceil_mode overhang as ONNX counts them). */
rlx_mx_arr *rlx_l_pool_separable(rlx_lower *L, const rlx_node *n, rlx_mx_arr *x, int ax0);
/* Whether Pool node n is lowered separably: when its kernel has at most RLX_POOL_SEPARABLE_TAPS
 * taps along all axes together (the separable form makes one op per tap and axis, so a kernel of
 * 2^31 taps would make 2^31 ops; larger kernels reduce a window view, one op). */
#define RLX_POOL_SEPARABLE_TAPS 64
bool rlx_l_pool_separable_ok(const rlx_node *n);

#endif
