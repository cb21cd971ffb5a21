/* conv_ops.c: channels-first convolution building blocks (see conv_ops.h).
 *
 * On the CPU, 1D and 2D convolutions run rlx's kernels with bias and activation fused: with at
 * most 4 input channels per group (depthwise ones, and dense ones over few input channels) the
 * direct one, else the GEMM one (patches per block of output positions times the weight, on the
 * kernel pool; both in src/mlx/shim/kernel_conv.cpp). 3D ones: 1x1 ones are one
 * matmul on the channels-first data. For the others: MLX's CPU backend runs conv_general through im2col + one sgemm
 * only for group 1 without dilation; everything else (grouped and depthwise convolutions,
 * dilation, input dilation, flipped kernels) goes to a direct loop nest that is one to two
 * orders of magnitude slower per multiply-add. For those cases rlx builds the im2col itself on
 * the channels-first data: a strided view [N, g, C/g, k.., o..] of the padded input made
 * contiguous as [N, g, C/g*K, P], times the weight [g, Co/g, C/g*K] in one batched matmul
 * ([N, g, Co/g, P] is already the NC d.. output layout, so no transposes are needed), in chunks
 * of a few MB of patches. ConvTranspose becomes a convolution of the stride-dilated input with
 * the flipped weight (depthwise ones keep MLX's direct loop, which skips the inserted zeros).
 * On a GPU, MLX's own convolutions are used wherever they exist. bench/bench_kernels.py measures
 * the paths against ONNX Runtime on depthwise, grouped, pointwise and transposed shapes. */
#include "mlx/conv_ops.h"

#include <stdlib.h>
#include <string.h>

void rlx_conv_geom_read(const rlx_node *n, int nsp, rlx_conv_geom *out) {
  rlx_conv_geom gm = {.nsp = nsp, .group = 1};
  rlx_conv_list_get(n, "strides", nsp, 1, gm.s);
  rlx_conv_list_get(n, "pads", nsp, 0, gm.p);
  rlx_conv_list_get(n, "dilations", nsp, 1, gm.d);
  if (rlx_node_attr(n, "output_padding")) rlx_conv_list_get(n, "output_padding", nsp, 0, gm.op);
  if (rlx_node_attr(n, "group")) gm.group = rlx_node_i(n, "group");
  *out = gm;
}

rlx_mx_arr *rlx_l_pad_spatial(rlx_lower *L, rlx_mx_arr *x, const rlx_type *t, int nsp, const int64_t *lo, const int64_t *hi,
                              rlx_mx_arr *value) {
  int64_t l[RLX_MAX_RANK] = {0}, h[RLX_MAX_RANK] = {0};
  bool any = false;
  for (int i = 0; i < nsp; i++) {
    l[2 + i] = lo[i], h[2 + i] = hi[i];
    any |= lo[i] || hi[i];
  }
  return any ? rlx_mx_pad(L->mx, x, t->rank, l, h, value, "constant") : x;
}

/* Row-major element strides of dims[0..r). */
static void elem_strides(const int64_t *dims, int r, int64_t *es) {
  es[r - 1] = 1;
  for (int i = r - 2; i >= 0; i--) es[i] = es[i + 1] * dims[i + 1];
}

rlx_mx_arr *rlx_l_pool_windows(rlx_lower *L, rlx_mx_arr *xp, const rlx_type *tp, const int64_t *k, const rlx_conv_geom *gm,
                               const int64_t *o) {
  int nsp = gm->nsp, vr = 0;
  int64_t es[RLX_MAX_RANK], shape[2 * RLX_MAX_RANK], str[2 * RLX_MAX_RANK];
  elem_strides(tp->dims, tp->rank, es);
  for (int i = 0; i < 2; i++) shape[vr] = tp->dims[i], str[vr++] = es[i];
  for (int i = 0; i < nsp; i++) shape[vr] = o[i], str[vr++] = es[2 + i] * gm->s[i];
  for (int i = 0; i < nsp; i++) shape[vr] = k[i], str[vr++] = es[2 + i] * gm->d[i];
  return rlx_mx_as_strided(L->mx, xp, vr, shape, str, 0);
}

/* Patches of groups [g0, g0+gn) and output rows [r0, r0+rn) of the first spatial dim from the
 * padded xp (dims tp) as [N, gn, C/g*K, rn*rest]. */
static rlx_mx_arr *patches_of(rlx_lower *L, rlx_mx_arr *xp, const rlx_type *tp, const int64_t *k, const rlx_conv_geom *gm,
                              const int64_t *o, int64_t g0, int64_t gn, int64_t r0, int64_t rn) {
  int nsp = gm->nsp, vr = 0;
  int64_t es[RLX_MAX_RANK], shape[2 * RLX_MAX_RANK], str[2 * RLX_MAX_RANK];
  elem_strides(tp->dims, tp->rank, es);
  int64_t cg = tp->dims[1] / gm->group, K = 1, P = 1;
  shape[vr] = tp->dims[0], str[vr++] = es[0];
  shape[vr] = gn, str[vr++] = cg * es[1];
  shape[vr] = cg, str[vr++] = es[1];
  for (int i = 0; i < nsp; i++) shape[vr] = k[i], str[vr++] = es[2 + i] * gm->d[i], K *= k[i];
  for (int i = 0; i < nsp; i++) shape[vr] = i ? o[i] : rn, str[vr++] = es[2 + i] * gm->s[i], P *= shape[vr - 1];
  int64_t off = g0 * cg * es[1] + r0 * gm->s[0] * es[2];
  rlx_mx_arr *v = rlx_mx_as_strided(L->mx, xp, vr, shape, str, off);
  return rlx_mx_reshape(L->mx, v, 4, (int64_t[]){tp->dims[0], gn, cg * K, P});
}

static rlx_mx_arr *pad_zero(rlx_lower *L, rlx_mx_arr *x, const rlx_type *tx, const rlx_conv_geom *gm, rlx_type *tp) {
  *tp = *tx;
  for (int i = 0; i < gm->nsp; i++) tp->dims[2 + i] += gm->p[i] + gm->p[i + gm->nsp];
  return rlx_l_pad_spatial(L, x, tx, gm->nsp, gm->p, gm->p + gm->nsp, rlx_mx_scalar(L->mx, 0, tx->dtype));
}

rlx_mx_arr *rlx_l_conv_patches(rlx_lower *L, rlx_mx_arr *x, const rlx_type *tx, const int64_t *k, const rlx_conv_geom *gm,
                               const int64_t *o) {
  rlx_type tp;
  rlx_mx_arr *xp = pad_zero(L, x, tx, gm, &tp);
  return patches_of(L, xp, &tp, k, gm, o, 0, gm->group, 0, o[0]);
}

/* Bytes of patches per im2col chunk (measured with an earlier benchmark: 2-4 MB beat one big
 * buffer by up to 2x on large depthwise layers and cost little on small ones). */
#define PATCH_CHUNK_BYTES ((int64_t)4 << 20)

/* Grouped im2col convolution in chunks: each chunk's patches stay within a few MB (the patch
 * buffer is K times the input; large fresh buffers cost page faults and leave the caches), and
 * each chunk's matmul reads them while they are hot. Chunks are groups first, then rows of the
 * first output dim when one group is too large; results are concatenated. */
static rlx_mx_arr *im2col_conv(rlx_lower *L, rlx_mx_arr *x, const rlx_type *tx, rlx_mx_arr *w, const rlx_type *tw,
                               const rlx_conv_geom *gm, const rlx_type *ty) {
  rlx_mx *c = L->mx;
  int nsp = gm->nsp;
  int64_t k[3], o[3], g = gm->group, cgk = tw->dims[1], og = tw->dims[0] / g, rest = 1;
  for (int i = 0; i < nsp; i++) k[i] = tw->dims[2 + i], o[i] = ty->dims[2 + i], cgk *= k[i];
  for (int i = 1; i < nsp; i++) rest *= o[i];
  int64_t row_bytes = tx->dims[0] * cgk * rest * (int64_t)rlx_dtype_size(tx->dtype), budget = PATCH_CHUNK_BYTES;
  int64_t group_bytes = row_bytes * o[0];
  int64_t gc = group_bytes >= budget ? 1 : group_bytes ? budget / group_bytes : g; /* groups per chunk */
  int64_t rc = group_bytes <= budget ? o[0] : budget / row_bytes;                    /* rows per chunk */
  if (gc > g) gc = g;
  if (rc < 1) rc = 1;
  rlx_type tp;
  rlx_mx_arr *xp = pad_zero(L, x, tx, gm, &tp);
  rlx_mx_arr *wr = rlx_mx_reshape(c, w, 3, (int64_t[]){g, og, cgk});
  rlx_type tw3 = {.dtype = tw->dtype, .rank = 3, .dims = {g, og, cgk}};
  size_t ng = (size_t)((g + gc - 1) / gc), nr = (size_t)((o[0] + rc - 1) / rc);
  rlx_mx_arr **parts = malloc(sizeof *parts * (ng + nr));
  if (!parts) {
    rlx_lower_fail(L, RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    return NULL;
  }
  rlx_mx_arr **rows = parts + ng;
  for (size_t gi = 0; gi < ng; gi++) {
    int64_t g0 = (int64_t)gi * gc, gn = g - g0 < gc ? g - g0 : gc;
    rlx_mx_arr *wg = rlx_l_narrow(L, wr, &tw3, 0, g0, gn);
    for (size_t ri = 0; ri < nr; ri++) {
      int64_t r0 = (int64_t)ri * rc, rn = o[0] - r0 < rc ? o[0] - r0 : rc;
      rlx_mx_arr *y = rlx_mx_matmul(c, wg, patches_of(L, xp, &tp, k, gm, o, g0, gn, r0, rn));
      rows[ri] = rlx_mx_reshape(c, y, 3, (int64_t[]){tx->dims[0], gn * og, rn * rest});
    }
    parts[gi] = nr == 1 ? rows[0] : rlx_mx_concatenate(c, rows, nr, 2);
  }
  rlx_mx_arr *y = ng == 1 ? parts[0] : rlx_mx_concatenate(c, parts, ng, 1);
  free(parts);
  return rlx_l_reshape(L, y, ty);
}

/* rlx's kernels for 1D (as 2D of height 1) and 2D convolutions: the direct one (few input
 * channels per group) or the GEMM one. */
static rlx_mx_arr *kernel_conv(rlx_lower *L, rlx_mx_arr *x, rlx_mx_arr *w, rlx_mx_arr *b, rlx_mx_arr *wino, rlx_mx_act act,
                               const rlx_conv_geom *gm, bool direct) {
  rlx_mx *c = L->mx;
  int64_t s[2] = {1, 1}, p[4] = {0, 0, 0, 0}, d[2] = {1, 1};
  if (gm->nsp == 1) { /* rank-3 x and w: the kernels' 1D form, no reshape nodes */
    s[1] = gm->s[0], d[1] = gm->d[0], p[1] = gm->p[0], p[3] = gm->p[1];
  } else {
    for (int i = 0; i < 2; i++) s[i] = gm->s[i], d[i] = gm->d[i];
    for (int i = 0; i < 4; i++) p[i] = gm->p[i];
  }
  return direct ? rlx_mx_direct_conv2d(c, x, w, b, s, p, d, gm->group, act)
                : rlx_mx_gemm_conv2d(c, x, w, b, gm->nsp == 2 ? wino : NULL, s, p, d, gm->group, act);
}

/* A 1x1 convolution (stride 1, no pads, group 1) as one matmul on the channels-first data:
 * w[Co,Ci] @ x[N,Ci,P] = y[N,Co,P], contiguous in the output's layout. For a batch of 1 the bias
 * b[Co] (NULL: none) rides in the GEMM (addmm) and *b_done is set. */
static rlx_mx_arr *pointwise_conv(rlx_lower *L, rlx_mx_arr *x, const rlx_type *tx, rlx_mx_arr *w, const rlx_type *tw,
                                  rlx_mx_arr *b, const rlx_type *ty, bool *b_done) {
  rlx_mx *c = L->mx;
  int64_t P = 1, N = tx->dims[0], ci = tx->dims[1], co = tw->dims[0];
  for (int i = 2; i < tx->rank; i++) P *= tx->dims[i];
  rlx_mx_arr *w2 = rlx_mx_reshape(c, w, 2, (int64_t[]){co, ci}), *y;
  *b_done = N == 1 && b;
  if (N == 1) {
    rlx_mx_arr *x2 = rlx_mx_reshape(c, x, 2, (int64_t[]){ci, P});
    y = b ? rlx_mx_addmm(c, rlx_mx_reshape(c, b, 2, (int64_t[]){co, 1}), w2, x2) : rlx_mx_matmul(c, w2, x2);
  } else {
    y = rlx_mx_matmul(c, w2, rlx_mx_reshape(c, x, 3, (int64_t[]){N, ci, P}));
  }
  return rlx_l_reshape(L, y, ty);
}

/* Up to this many input channels per group, and this many multiply-adds per output (C/group
 * times the kernel size), the direct kernel beats the GEMM one (bench/bench_kernels.py:
 * depthwise, and 1-3 input channels); longer windows (Silero VAD's STFT as a [258, 1, 256]
 * convolution with stride 128, ResNet's 7x7 stem over 3 channels) go to GEMM. */
#define DIRECT_MAX_CG 4
#define DIRECT_MAX_K 64

rlx_mx_arr *rlx_l_conv(rlx_lower *L, rlx_mx_arr *x, const rlx_type *tx, rlx_mx_arr *w, const rlx_type *tw, rlx_mx_arr *b,
                       rlx_mx_arr *wino, const char *act, const rlx_conv_geom *gm, const rlx_type *ty) {
  rlx_mx *c = L->mx;
  int nsp = gm->nsp, r = tx->rank;
  bool cpu = rlx_mx_get_device(c) == RLX_MX_CPU, f64 = tx->dtype == RLX_DTYPE_F64;
  if (cpu && !f64 && nsp <= 2) { /* bias and the activation (when the kernels have it) fused */
    rlx_mx_act ka = {RLX_MX_ACT_NONE, 0, 0};
    bool fused = rlx_l_kernel_act(act, &ka);
    int64_t k = tw->dims[1];
    for (int i = 0; i < nsp; i++) k *= tw->dims[2 + i];
    rlx_mx_arr *y = kernel_conv(L, x, w, b, wino, ka, gm, tw->dims[1] <= DIRECT_MAX_CG && k <= DIRECT_MAX_K);
    return fused ? y : rlx_l_activation(L, act, y, ty->dtype);
  }
  bool one = gm->group == 1;
  for (int i = 0; i < nsp; i++) one &= tw->dims[2 + i] == 1 && gm->s[i] == 1 && gm->p[i] == 0 && gm->p[nsp + i] == 0;
  /* MLX's own conv_general where it is fast: the CPU backend's GEMM path (group 1, no dilation,
   * not float64); on a GPU every 1D/2D convolution (its backends run grouped and dilated
   * convolutions natively; 3D grouped ones are not supported there). */
  bool gemm = gm->group == 1 && !f64; /* MLX's CPU convolution has no float64 */
  for (int i = 0; i < nsp; i++) gemm &= gm->d[i] == 1;
  if (!cpu) gemm = nsp < 3 || gm->group == 1;
  rlx_mx_arr *y;
  if (cpu && one && !f64) {
    bool b_done;
    y = pointwise_conv(L, x, tx, w, tw, b, ty, &b_done);
    if (b_done) b = NULL;
  } else if (gemm) {
    int64_t ones[3] = {1, 1, 1};
    y = rlx_mx_conv_general(c, rlx_l_to_last(L, x, r), rlx_l_to_last(L, w, r), nsp, gm->s, gm->p, gm->p + nsp, gm->d, ones,
                            (int)gm->group, false);
    y = rlx_l_to_first(L, y, r);
  } else {
    y = im2col_conv(L, x, tx, w, tw, gm, ty);
  }
  if (b) {
    int64_t bs[RLX_MAX_RANK] = {ty->dims[1]};
    for (int i = 1; i < r - 1; i++) bs[i] = 1;
    y = rlx_mx_binary(c, RLX_MXB_ADD, y, rlx_mx_reshape(c, b, r - 1, bs));
  }
  return rlx_l_activation(L, act, y, ty->dtype);
}

/* ConvTranspose with stride = kernel, group 1, no dilation: the windows do not overlap, so
 * y[n, o, i*k + j] = sum_c x[n, c, i] w[c, o, j] is one matmul w^T[Co*K, Ci] @ x[N, Ci, P]
 * = [N, Co, k.., d..], transposed to [N, Co, d1, k1, .., dn, kn] and merged into the output
 * [N, Co, d1*k1, ..] (plus pads cropped and output_padding filled with zeros). */
static rlx_mx_arr *conv_transpose_gemm(rlx_lower *L, rlx_mx_arr *x, const rlx_type *tx, rlx_mx_arr *w, const rlx_type *tw,
                                       const rlx_conv_geom *gm, const rlx_type *ty) {
  rlx_mx *c = L->mx;
  int nsp = gm->nsp, r = tx->rank;
  int64_t N = tx->dims[0], ci = tx->dims[1], co = tw->dims[1], K = 1, P = 1;
  int64_t full[RLX_MAX_RANK] = {N, co}, split[2 * RLX_MAX_RANK] = {N, co}, perm[2 * RLX_MAX_RANK] = {0, 1};
  for (int i = 0; i < nsp; i++) {
    K *= tw->dims[2 + i], P *= tx->dims[2 + i];
    split[2 + i] = tw->dims[2 + i], split[2 + nsp + i] = tx->dims[2 + i];
    perm[2 + 2 * i] = 2 + nsp + i, perm[3 + 2 * i] = 2 + i;
    full[2 + i] = tx->dims[2 + i] * tw->dims[2 + i];
  }
  rlx_mx_arr *wt = rlx_l_swap(L, rlx_mx_reshape(c, w, 2, (int64_t[]){ci, co * K}), 2, 0, 1);
  rlx_mx_arr *y = rlx_mx_matmul(c, wt, rlx_mx_reshape(c, x, 3, (int64_t[]){N, ci, P}));
  y = rlx_mx_transpose(c, rlx_mx_reshape(c, y, 2 + 2 * nsp, split), 2 + 2 * nsp, perm);
  y = rlx_mx_reshape(c, y, r, full);
  /* output dim i = full_i - pad_begin - pad_end + output_padding: crop, then zero-fill */
  int64_t a[RLX_MAX_RANK] = {0}, b[RLX_MAX_RANK], one[RLX_MAX_RANK], lo[RLX_MAX_RANK] = {0}, hi[RLX_MAX_RANK] = {0};
  bool crop = false, fill = false;
  for (int i = 0; i < r; i++) b[i] = full[i], one[i] = 1;
  for (int i = 0; i < nsp; i++) {
    int64_t end = full[2 + i] - gm->p[nsp + i] + gm->op[i];
    a[2 + i] = gm->p[i], b[2 + i] = end < full[2 + i] ? end : full[2 + i];
    hi[2 + i] = end - b[2 + i];
    crop |= a[2 + i] > 0 || b[2 + i] < full[2 + i], fill |= hi[2 + i] > 0;
  }
  if (crop) y = rlx_mx_slice(c, y, r, a, b, one);
  if (fill) y = rlx_mx_pad(c, y, r, lo, hi, rlx_mx_scalar(c, 0, ty->dtype), "constant");
  return y;
}

rlx_mx_arr *rlx_l_conv_transpose(rlx_lower *L, rlx_mx_arr *x, const rlx_type *tx, rlx_mx_arr *w, const rlx_type *tw,
                                 const rlx_conv_geom *gm, const rlx_type *ty) {
  rlx_mx *c = L->mx;
  int nsp = gm->nsp, r = tx->rank;
  bool gemm = gm->group == 1 && tx->dtype != RLX_DTYPE_F64 && rlx_mx_get_device(c) == RLX_MX_CPU;
  for (int i = 0; i < nsp; i++) gemm &= gm->s[i] == tw->dims[2 + i] && gm->d[i] == 1;
  if (gemm) return conv_transpose_gemm(L, x, tx, w, tw, gm, ty);
  int64_t g = gm->group, cg = tx->dims[1] / g, og = tw->dims[1];
  /* Weight [Ci, Co/g, k..] -> [g, Ci/g, Co/g, k..] -> [g, Co/g, Ci/g, k..], spatially flipped,
   * -> [Co, Ci/g, k..]: the weight of the equivalent convolution. */
  int64_t d5[RLX_MAX_RANK] = {g, cg, og}, perm[RLX_MAX_RANK] = {0, 2, 1};
  for (int i = 0; i < nsp; i++) d5[3 + i] = tw->dims[2 + i], perm[3 + i] = 3 + i;
  rlx_mx_arr *wf = rlx_mx_transpose(c, rlx_mx_reshape(c, w, r + 1, d5), r + 1, perm);
  for (int i = 0; i < nsp; i++) {
    int64_t k = tw->dims[2 + i];
    if (k > 1) wf = rlx_mx_take(c, wf, rlx_mx_arange(c, (double)(k - 1), -1, -1, RLX_DTYPE_I32), 3 + i);
  }
  rlx_type tcw = {.dtype = tw->dtype, .rank = r, .dims = {g * og, cg}};
  for (int i = 0; i < nsp; i++) tcw.dims[2 + i] = tw->dims[2 + i];
  wf = rlx_l_reshape(L, wf, &tcw);
  /* The convolution runs over x dilated by the stride, padded by the full-correlation padding
   * d(k-1) less the pads (plus output_padding at the end); negative amounts crop instead. */
  rlx_type td = *tx;
  rlx_conv_geom cv = {.nsp = nsp, .group = g};
  int64_t crop_lo[3] = {0}, crop_hi[3] = {0};
  bool crop = false, dilate = false;
  for (int i = 0; i < nsp; i++) {
    int64_t full = gm->d[i] * (tw->dims[2 + i] - 1), lo = full - gm->p[i], hi = full - gm->p[i + nsp] + gm->op[i];
    td.dims[2 + i] = (tx->dims[2 + i] - 1) * gm->s[i] + 1;
    cv.s[i] = 1, cv.d[i] = gm->d[i];
    cv.p[i] = lo > 0 ? lo : 0, cv.p[i + nsp] = hi > 0 ? hi : 0;
    crop_lo[i] = lo < 0 ? -lo : 0, crop_hi[i] = hi < 0 ? -hi : 0;
    crop |= lo < 0 || hi < 0;
    dilate |= gm->s[i] > 1;
  }
  int64_t a[RLX_MAX_RANK] = {0}, b[RLX_MAX_RANK], one[RLX_MAX_RANK];
  for (int i = 0; i < r; i++) one[i] = 1;
  if (cg == 1 && og == 1 && nsp < 3 && tx->dtype != RLX_DTYPE_F64 && rlx_mx_get_device(c) == RLX_MX_CPU) {
    /* Depthwise: MLX's direct loop with input dilation skips the inserted zeros and measures
     * faster than zero insertion + im2col; the crop moves to the output. */
    rlx_mx_arr *y = rlx_mx_conv_general(c, rlx_l_to_last(L, x, r), rlx_l_to_last(L, wf, r), nsp, cv.s, cv.p, cv.p + nsp, cv.d, gm->s,
                                        (int)g, false);
    y = rlx_l_to_first(L, y, r);
    if (!crop) return y;
    for (int i = 0; i < r; i++) b[i] = ty->dims[i];
    for (int i = 0; i < nsp; i++) a[2 + i] = crop_lo[i], b[2 + i] += crop_lo[i];
    return rlx_mx_slice(c, y, r, a, b, one);
  }
  if (dilate) { /* zero insertion: x lands at every s-th position of [N, Ci, (D-1)s+1 ..] */
    int64_t st[RLX_MAX_RANK] = {1, 1};
    for (int i = 0; i < nsp; i++) st[2 + i] = gm->s[i];
    x = rlx_mx_slice_update(c, rlx_mx_full(c, r, td.dims, 0, td.dtype), x, r, a, td.dims, st);
  }
  if (crop) {
    for (int i = 0; i < r; i++) b[i] = td.dims[i];
    for (int i = 0; i < nsp; i++) a[2 + i] = crop_lo[i], b[2 + i] -= crop_hi[i], td.dims[2 + i] = b[2 + i] - a[2 + i];
    x = rlx_mx_slice(c, x, r, a, b, one);
  }
  return rlx_l_conv(L, x, &td, wf, &tcw, NULL, NULL, "none", &cv, ty);
}
