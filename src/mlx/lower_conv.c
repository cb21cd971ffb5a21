/* lower_conv.c: Conv and ConvTranspose (src/mlx/conv_ops.c), Pool (a strided window view reduced
 * over the window axes) and Resize (rlx's CPU kernel, else separable per-axis gathers). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mlx/conv_ops.h"

/* Integer convolutions (Conv only) run in float64 on the CPU (exact while partial sums stay
 * below 2^53) or float32 on a GPU (below 2^24), then wrap to the dtype through int64. */
static void conv(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out, bool transpose) {
  rlx_mx *c = L->mx;
  rlx_type tx = *rlx_in_type(L, n, 0), tw = *rlx_in_type(L, n, 1);
  const rlx_type *to = rlx_out_type(L, n, 0);
  int r = tx.rank;
  rlx_conv_geom gm;
  rlx_conv_geom_read(n, r - 2, &gm);
  rlx_dtype dt = tx.dtype;
  rlx_mx_arr *x = in[0], *w = in[1], *b = n->n_in == 3 ? in[2] : NULL;
  if (rlx_dtype_is_int(dt)) {
    tx.dtype = tw.dtype = rlx_mx_get_device(c) == RLX_MX_GPU ? RLX_DTYPE_F32 : RLX_DTYPE_F64;
    x = rlx_mx_astype(c, x, tx.dtype), w = rlx_mx_astype(c, w, tx.dtype);
    if (b) b = rlx_mx_astype(c, b, tx.dtype);
  }
  rlx_type ty = *to;
  ty.dtype = tx.dtype;
  int64_t nx = 1, ny = 1;
  for (int i = 0; i < r; i++) nx *= tx.dims[i], ny *= ty.dims[i];
  /* Empty operands (e.g. a batch of 0) give zeros without calling MLX's convolution, which
   * crashes on them on its CUDA backend. */
  rlx_mx_arr *y = nx == 0 || ny == 0 ? rlx_mx_full(c, ty.rank, ty.dims, 0, ty.dtype)
                  : transpose         ? rlx_l_conv_transpose(L, x, &tx, w, &tw, &gm, &ty)
                                      : rlx_l_conv(L, x, &tx, w, &tw, b, L->w_packed && !rlx_dtype_is_int(dt) ? L->w_packed[n->in[1]] : NULL,
                                                   rlx_node_s(n, "activation"), &gm, &ty);
  if (!transpose && nx && ny) b = NULL; /* added by rlx_l_conv, with the activation */
  if (b) {
    int64_t bs[RLX_MAX_RANK] = {to->dims[1]};
    for (int i = 1; i < r - 1; i++) bs[i] = 1;
    y = rlx_mx_binary(c, RLX_MXB_ADD, y, rlx_mx_reshape(c, b, r - 1, bs));
  }
  if (!transpose && !(nx && ny)) y = rlx_l_activation(L, rlx_node_s(n, "activation"), y, ty.dtype);
  out[0] = rlx_dtype_is_int(dt) ? rlx_mx_astype(c, rlx_mx_astype(c, y, RLX_DTYPE_I64), dt) : y;
}

/* rlx's CPU kernel (rlx_mx_pool2d) for 1D (as 2D of height 1) and 2D float pooling; kind as
 * rlx_reduce_kind (0 sum, 1 mean, 2 max, 3 min). */
static rlx_mx_arr *pool_kernel(rlx_lower *L, const rlx_node *n, rlx_mx_arr *x, int kind,
                               const int64_t *k, const rlx_conv_geom *gm) {
  static const int kernel_kind[] = {2, 3, 0, 1};
  int64_t kk[2] = {1, 1}, s[2] = {1, 1}, p[4] = {0, 0, 0, 0}, d[2] = {1, 1};
  if (gm->nsp == 1) { /* rank-3 x: the kernel's 1D form, no reshape nodes */
    kk[1] = k[0], s[1] = gm->s[0], d[1] = gm->d[0], p[1] = gm->p[0], p[3] = gm->p[1];
  } else {
    for (int i = 0; i < 2; i++) kk[i] = k[i], s[i] = gm->s[i], d[i] = gm->d[i];
    for (int i = 0; i < 4; i++) p[i] = gm->p[i];
  }
  return rlx_mx_pool2d(L->mx, x, kernel_kind[kind], kk, s, p, d, rlx_node_i(n, "count_include_pad") != 0, rlx_node_i(n, "ceil_mode") != 0);
}

/* The pooling windows of the padded xp (dims, spatial axes from ax0) reduced one spatial axis at
 * a time by the elementwise op `op` over the axis's k strided slices (max, min, sum and product
 * are separable): sum(k - 1) elementwise ops, each as large as its output. */
static rlx_mx_arr *separable_windows(rlx_lower *L, rlx_mx_arr *xp, int r, int64_t *dims, int ax0, const int64_t *k,
                                     const rlx_conv_geom *gm, const int64_t *o, rlx_mx_binary_op op) {
  int64_t lo[RLX_MAX_RANK] = {0}, hi[RLX_MAX_RANK], st[RLX_MAX_RANK];
  for (int i = 0; i < r; i++) hi[i] = dims[i], st[i] = 1;
  for (int i = 0; i < gm->nsp; i++) {
    int a = ax0 + i;
    rlx_mx_arr *acc = NULL;
    st[a] = gm->s[i];
    for (int64_t j = 0; j < k[i]; j++) {
      lo[a] = j * gm->d[i], hi[a] = lo[a] + (o[i] - 1) * gm->s[i] + 1;
      rlx_mx_arr *sl = rlx_mx_slice(L->mx, xp, r, lo, hi, st);
      acc = acc ? rlx_mx_binary(L->mx, op, acc, sl) : sl;
    }
    xp = acc;
    dims[a] = o[i], lo[a] = 0, hi[a] = o[i], st[a] = 1;
  }
  return xp;
}

/* x padded by lo/hi with the scalar `value` (x itself when nothing is padded). */
static rlx_mx_arr *pad(rlx_lower *L, rlx_mx_arr *x, int r, const int64_t *lo, const int64_t *hi, rlx_mx_arr *value) {
  bool any = false;
  for (int i = 0; i < r; i++) any |= lo[i] || hi[i];
  return any ? rlx_mx_pad(L->mx, x, r, lo, hi, value, "constant") : x;
}

rlx_mx_arr *rlx_l_pool_separable(rlx_lower *L, const rlx_node *n, rlx_mx_arr *x, int ax0) {
  static const rlx_mx_binary_op ops[] = {RLX_MXB_ADD, RLX_MXB_ADD, RLX_MXB_MAXIMUM, RLX_MXB_MINIMUM, RLX_MXB_MULTIPLY};
  rlx_mx *c = L->mx;
  const rlx_type *t = rlx_in_type(L, n, 0), *to = rlx_out_type(L, n, 0);
  int r = t->rank, nsp = r - 2, kind = rlx_reduce_kind(rlx_node_s(n, "kind"));
  int64_t k[3], o[3], dims[RLX_MAX_RANK], odims[RLX_MAX_RANK], cdims[RLX_MAX_RANK], lo[RLX_MAX_RANK] = {0}, hi[RLX_MAX_RANK] = {0},
                                                                            clo[RLX_MAX_RANK] = {0}, chi[RLX_MAX_RANK] = {0};
  rlx_conv_geom gm;
  rlx_conv_geom_read(n, nsp, &gm);
  rlx_conv_list_get(n, "kernel_shape", nsp, 1, k);
  bool inc = rlx_node_i(n, "count_include_pad") != 0, uniform = true, empty = false;
  int chan = ax0 == 2 ? 1 : r - 1;
  dims[0] = odims[0] = t->dims[0], dims[chan] = odims[chan] = t->dims[1], cdims[0] = cdims[chan] = 1;
  double K = 1;
  for (int i = 0; i < nsp; i++) {
    int a = ax0 + i;
    o[i] = to->dims[2 + i];
    /* padding: the explicit pads plus what ceil_mode windows need past the end (extra) */
    int64_t need = (o[i] - 1) * gm.s[i] + gm.d[i] * (k[i] - 1) + 1, have = t->dims[2 + i] + gm.p[i] + gm.p[i + nsp];
    int64_t extra = need > have ? need - have : 0;
    lo[a] = gm.p[i], hi[a] = gm.p[i + nsp] + extra;
    dims[a] = t->dims[2 + i] + lo[a] + hi[a], odims[a] = o[i];
    /* window counts: ones over the input (and the explicit pads when they count), zero-padded */
    cdims[a] = t->dims[2 + i] + (inc ? gm.p[i] + gm.p[i + nsp] : 0);
    clo[a] = inc ? 0 : gm.p[i], chi[a] = (inc ? 0 : gm.p[i + nsp]) + extra;
    uniform &= extra == 0 && (inc || (gm.p[i] == 0 && gm.p[i + nsp] == 0));
    K *= (double)k[i];
  }
  for (int i = 0; i < r; i++) empty |= odims[i] == 0;
  if (empty) return rlx_mx_full(c, r, odims, 0, t->dtype);
  rlx_mx_arr *neutral = kind == 2 || kind == 3 ? rlx_l_extreme(L, t->dtype, kind == 2) : rlx_mx_scalar(c, kind == 4 ? 1.0 : 0.0, t->dtype);
  rlx_mx_arr *y = separable_windows(L, pad(L, x, r, lo, hi, neutral), r, dims, ax0, k, &gm, o, ops[kind]);
  if (kind != 1) return y;
  if (uniform) return rlx_mx_binary(c, RLX_MXB_DIVIDE, y, rlx_mx_scalar(c, K, t->dtype));
  rlx_mx_arr *ones = pad(L, rlx_mx_full(c, r, cdims, 1, t->dtype), r, clo, chi, rlx_mx_scalar(c, 0, t->dtype));
  for (int i = 0; i < r; i++) cdims[i] += clo[i] + chi[i];
  return rlx_mx_binary(c, RLX_MXB_DIVIDE, y, separable_windows(L, ones, r, cdims, ax0, k, &gm, o, RLX_MXB_ADD));
}

bool rlx_l_pool_separable_ok(const rlx_node *n) {
  size_t nk = 0;
  const int64_t *k = rlx_node_is(n, "kernel_shape", &nk);
  int64_t taps = 0;
  for (size_t i = 0; i < nk; i++) taps += k[i] <= RLX_POOL_SEPARABLE_TAPS ? k[i] : RLX_POOL_SEPARABLE_TAPS + 1;
  return taps <= RLX_POOL_SEPARABLE_TAPS;
}

/* Whether 2D pooling windows k tile the input: strides equal to the windows, no pads, dilation 1. */
static bool windows_tile(const int64_t *k, const rlx_conv_geom *gm) {
  for (int i = 0; i < 2; i++)
    if (gm->s[i] != k[i] || gm->d[i] != 1 || gm->p[i] || gm->p[i + 2]) return false;
  return true;
}

/* Pool: a max pool of a CPU convolution's result read only by it, inside the convolution
 * (rlx_mx_conv_max_pool); rlx's CPU kernel where it applies; else, for kernels of a few taps,
 * separable slices (rlx_l_pool_separable: no array larger than the padded input; MLX's CUDA
 * reduction of a strided window view took 0.49 ms on ResNet-50's 3x3 max pool at batch 8,
 * PyTorch 0.035 ms); else over windows: pad with the kind's neutral value, view [N,C,o..,k..] (rlx_l_pool_windows, output x
 * taps elements, bounded by the allocation limit), reduce the window axes. mean divides the sum
 * by each window's count: prod(k) when every window counts the same (no pads, or
 * count_include_pad, and no ceil_mode overhang), else the same pooling applied to a ones tensor
 * padded with 1 (count_include_pad) or 0 on the explicit pads and with 0 on the ceil_mode
 * overhang. */
static void pool(rlx_lower *L, const rlx_node *n, rlx_mx_arr *x, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  const rlx_type *t = rlx_in_type(L, n, 0), *to = rlx_out_type(L, n, 0);
  int r = t->rank, nsp = r - 2, kind = rlx_reduce_kind(rlx_node_s(n, "kind"));
  int64_t k[3], o[3];
  rlx_conv_geom gm;
  rlx_conv_geom_read(n, nsp, &gm);
  rlx_conv_list_get(n, "kernel_shape", nsp, 1, k);
  bool cpu = rlx_mx_get_device(c) == RLX_MX_CPU;
  if (!L->cl && cpu && kind == 2 && nsp == 2 && t->dtype == RLX_DTYPE_F32 && rlx_l_read_once(L, n->in[0]) &&
      !rlx_node_i(n, "ceil_mode") && windows_tile(k, &gm) && (out[0] = rlx_mx_conv_max_pool(c, x, k)))
    return; /* a convolution's result read only here: pooled as the convolution forms it */
  if (!L->cl && cpu && nsp <= 2 && rlx_dtype_is_float(t->dtype) && t->dtype != RLX_DTYPE_F64 && kind < 4) {
    out[0] = pool_kernel(L, n, x, kind, k, &gm);
    return;
  }
  if (rlx_l_pool_separable_ok(n)) {
    out[0] = rlx_l_pool_separable(L, n, x, 2);
    return;
  }
  /* Padding: explicit pads plus what ceil_mode windows need past the end. */
  int64_t hi[3], extra[3];
  rlx_type tp = *t;
  for (int i = 0; i < nsp; i++) {
    o[i] = to->dims[2 + i];
    int64_t need = (o[i] - 1) * gm.s[i] + gm.d[i] * (k[i] - 1) + 1, have = t->dims[2 + i] + gm.p[i] + gm.p[i + nsp];
    extra[i] = need > have ? need - have : 0;
    hi[i] = gm.p[i + nsp] + extra[i];
    tp.dims[2 + i] = t->dims[2 + i] + gm.p[i] + hi[i];
  }
  rlx_mx_arr *neutral = kind == 2 || kind == 3 ? rlx_l_extreme(L, t->dtype, kind == 2) : rlx_mx_scalar(c, kind == 4 ? 1.0 : 0.0, t->dtype);
  rlx_mx_arr *xp = rlx_l_pad_spatial(L, x, t, nsp, gm.p, hi, neutral);
  int axes[3];
  for (int i = 0; i < nsp; i++) axes[i] = 2 + nsp + i;
  int red = kind == 1 ? 0 : kind; /* mean: sum, divided below */
  rlx_mx_arr *y = rlx_mx_reduce(c, rlx_l_pool_windows(L, xp, &tp, k, &gm, o), red, nsp, axes, false);
  bool inc = rlx_node_i(n, "count_include_pad") != 0, uniform = true; /* every window counts prod(k) */
  double K = 1;
  for (int i = 0; i < nsp; i++) {
    uniform &= extra[i] == 0 && (inc || (gm.p[i] == 0 && gm.p[i + nsp] == 0));
    K *= (double)k[i];
  }
  if (kind == 1 && uniform) {
    y = rlx_mx_binary(c, RLX_MXB_DIVIDE, y, rlx_mx_scalar(c, K, t->dtype));
  } else if (kind == 1) {
    int64_t zero[3] = {0, 0, 0};
    rlx_type tt = *t;
    for (int i = 0; i < nsp; i++) tt.dims[2 + i] += gm.p[i] + gm.p[i + nsp];
    rlx_mx_arr *ones = rlx_mx_full(c, r, t->dims, 1, t->dtype);
    ones = rlx_l_pad_spatial(L, ones, t, nsp, gm.p, gm.p + nsp, rlx_mx_scalar(c, inc ? 1 : 0, t->dtype));
    ones = rlx_l_pad_spatial(L, ones, &tt, nsp, zero, extra, rlx_mx_scalar(c, 0, t->dtype));
    rlx_mx_arr *cnt = rlx_mx_reduce(c, rlx_l_pool_windows(L, ones, &tp, k, &gm, o), 0, nsp, axes, false);
    y = rlx_mx_binary(c, RLX_MXB_DIVIDE, y, cnt);
  }
  out[0] = y;
}

/* ---- Resize (ONNX Resize-19): per axis, host-computed taps (indices and weights) applied with
 * gathers; formulas from the ONNX operator documentation ---- */

typedef struct resize_axis_spec {
  const char *ctm, *nearest_mode;
  int mode;            /* 0 nearest, 1 linear, 2 cubic */
  double a;            /* cubic coefficient */
  bool antialias, exclude_outside;
  double scale, roi_lo, roi_hi;
  int64_t in, out;
} resize_axis_spec;

/* Source coordinate of output index o; *outside when tf_crop_and_resize leaves the input. */
static double source_coord(const resize_axis_spec *s, double o, bool *outside) {
  double in = (double)s->in, width = s->scale * in; /* the fractional output length */
  const char *m = s->ctm;
  *outside = false;
  if (!strcmp(m, "asymmetric")) return o / s->scale;
  if (!strcmp(m, "align_corners")) return width == 1 ? 0 : o * (in - 1) / (width - 1);
  if (!strcmp(m, "pytorch_half_pixel")) return width > 1 ? (o + 0.5) / s->scale - 0.5 : 0;
  if (!strcmp(m, "tf_half_pixel_for_nn")) return (o + 0.5) / s->scale;
  if (!strcmp(m, "tf_crop_and_resize")) {
    double span = s->roi_hi - s->roi_lo;
    double x = s->out > 1 ? s->roi_lo * (in - 1) + o * span * (in - 1) / (double)(s->out - 1) : 0.5 * (s->roi_lo + s->roi_hi) * (in - 1);
    *outside = x < 0 || x > in - 1;
    return x;
  }
  if (!strcmp(m, "half_pixel_symmetric")) {
    double adj = (double)s->out / width, center = in / 2;
    return center * (1 - adj) + (o + 0.5) / s->scale - 0.5;
  }
  return (o + 0.5) / s->scale - 0.5; /* half_pixel */
}

static int64_t round_nearest(const char *mode, double x) {
  if (!strcmp(mode, "floor")) return (int64_t)floor(x);
  if (!strcmp(mode, "ceil")) return (int64_t)ceil(x);
  double f = floor(x);
  if (x - f == 0.5) return (int64_t)(!strcmp(mode, "round_prefer_ceil") ? f + 1 : f);
  return (int64_t)floor(x + 0.5);
}

static int64_t clampi(int64_t v, int64_t hi) { return v < 0 ? 0 : v > hi ? hi : v; }

/* Interpolation kernels: triangle (linear) and Keys' cubic convolution with coefficient a. */
static double kernel(int mode, double x, double a) {
  x = fabs(x);
  if (mode == 1) return x < 1 ? 1 - x : 0;
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

/* Taps per output: 1 for nearest, else 2 R / s taps for kernel radius R (1 linear, 2 cubic) and
 * the kernel stretch s (min(scale, 1) with antialias, else 1); -1 when a tiny scale would need
 * more than 2^41 (the count is never converted out of int64's range). */
static int64_t resize_taps(const resize_axis_spec *s, double *stretch, int64_t *first) {
  if (s->mode == 0) return *stretch = 1, *first = 0, 1;
  *stretch = s->antialias && s->scale < 1 ? s->scale : 1;
  double f = floor(-(double)s->mode / *stretch) + 1;
  if (!(f > -0x1p40)) return *first = 0, -1;
  *first = (int64_t)f;
  return 2 - 2 * *first;
}

/* Fills idx/w [out, taps] and the per-output extrapolation flags. */
static void resize_weights(const resize_axis_spec *s, int64_t taps, double stretch, int64_t first, int32_t *idx, double *w,
                           bool *outside) {
  for (int64_t o = 0; o < s->out; o++) {
    double x = source_coord(s, (double)o, &outside[o]);
    /* Past the taps' reach every tap clamps to the same edge and the kernels sum to 1, so x is
     * clamped to just beyond it: the same result, and a huge or NaN coordinate (hostile scales or
     * roi) is never converted to an integer out of range. */
    double reach = (double)taps + 2;
    if (!(x >= -reach)) x = -reach;
    else if (x > (double)s->in + reach) x = (double)s->in + reach;
    int32_t *io = idx + o * taps;
    double *wo = w + o * taps;
    if (s->mode == 0) {
      io[0] = (int32_t)clampi(round_nearest(s->nearest_mode, x), s->in - 1);
      wo[0] = 1;
      continue;
    }
    /* taps left of x first (an integer x counts as the right end of the interval below it) */
    int64_t f = x == floor(x) ? (int64_t)x - 1 : (int64_t)floor(x);
    double sum = 0;
    for (int64_t k = 0; k < taps; k++) {
      int64_t j = f + first + k;
      wo[k] = kernel(s->mode, ((double)j - x) * stretch, s->a);
      if (s->exclude_outside && (j < 0 || j >= s->in)) wo[k] = 0;
      io[k] = (int32_t)clampi(j, s->in - 1);
      sum += wo[k];
    }
    if ((s->antialias || s->exclude_outside) && sum != 0)
      for (int64_t k = 0; k < taps; k++) wo[k] /= sum;
  }
}

/* The taps of one axis: indices [out, taps] (int32), weights in float64 and float32, and per output
 * whether it extrapolates (tf_crop_and_resize). */
typedef struct axis_taps {
  int64_t taps;
  int32_t *idx;
  double *w;
  float *wf;
  bool *outside, any_outside;
} axis_taps;

static void axis_taps_free(axis_taps *a) {
  free(a->idx), free(a->w), free(a->wf), free(a->outside);
  *a = (axis_taps){0};
}

static bool axis_taps_make(rlx_lower *L, const resize_axis_spec *s, int ax, axis_taps *a) {
  double stretch;
  int64_t first, cnt;
  *a = (axis_taps){.taps = resize_taps(s, &stretch, &first)};
  if (a->taps < 0) {
    rlx_lower_fail(L, RLX_STATUS_RESOURCE_EXHAUSTED, "resize of axis %d: antialiasing at scale %g needs more than 2^41 taps per output", ax,
                   s->scale);
    return false;
  }
  if (!rlx_mul_i64(s->out, a->taps, &cnt) || cnt > (INT64_MAX >> 4)) {
    rlx_lower_fail(L, RLX_STATUS_RESOURCE_EXHAUSTED, "resize of axis %d: %lld outputs x %lld taps is too many", ax, (long long)s->out,
                   (long long)a->taps);
    return false;
  }
  size_t m = (size_t)(cnt ? cnt : 1);
  a->idx = malloc(sizeof(int32_t) * m), a->w = malloc(sizeof(double) * m), a->wf = malloc(sizeof(float) * m);
  a->outside = malloc((size_t)(s->out ? s->out : 1));
  if (!a->idx || !a->w || !a->wf || !a->outside) {
    axis_taps_free(a);
    rlx_lower_fail(L, RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory for %lld resize taps", (long long)cnt);
    return false;
  }
  resize_weights(s, a->taps, stretch, first, a->idx, a->w, a->outside);
  for (int64_t i = 0; i < cnt; i++) a->wf[i] = (float)a->w[i];
  for (int64_t o = 0; o < s->out; o++) a->any_outside |= a->outside[o];
  return true;
}

static rlx_mx_arr *resize_axis(rlx_lower *L, const resize_axis_spec *s, rlx_mx_arr *x, rlx_type *t, int ax, double extrap) {
  rlx_mx *c = L->mx;
  axis_taps a;
  if (!axis_taps_make(L, s, ax, &a)) return NULL;
  int64_t taps = a.taps;
  rlx_type ti = {.dtype = RLX_DTYPE_I32, .rank = 2, .dims = {s->out, taps}};
  /* Weights go in float64 for float64 data (CPU only in MLX) and in float32 otherwise (GPUs have
   * no float64). */
  rlx_type tw = {.dtype = t->dtype == RLX_DTYPE_F64 ? RLX_DTYPE_F64 : RLX_DTYPE_F32, .rank = 2, .dims = {s->out, taps}};
  rlx_type tm = {.dtype = RLX_DTYPE_BOOL, .rank = 1, .dims = {s->out}};
  rlx_mx_arr *I = rlx_mx_from_bytes(c, a.idx, &ti);
  rlx_mx_arr *W = taps > 1 ? rlx_mx_from_bytes(c, tw.dtype == RLX_DTYPE_F32 ? (void *)a.wf : (void *)a.w, &tw) : NULL;
  rlx_mx_arr *M = a.any_outside ? rlx_mx_from_bytes(c, a.outside, &tm) : NULL;
  axis_taps_free(&a);
  int64_t bshape[RLX_MAX_RANK];
  for (int i = 0; i < t->rank; i++) bshape[i] = i == ax ? s->out : 1;
  rlx_mx_arr *y = NULL;
  for (int64_t k = 0; k < taps; k++) {
    rlx_mx_arr *ik = rlx_mx_reshape(c, rlx_l_narrow(L, I, &ti, 1, k, 1), 1, (int64_t[]){s->out});
    rlx_mx_arr *g = rlx_mx_take(c, x, ik, ax);
    if (taps > 1) {
      rlx_mx_arr *wk = rlx_mx_reshape(c, rlx_l_narrow(L, W, &tw, 1, k, 1), t->rank, bshape);
      g = rlx_mx_binary(c, RLX_MXB_MULTIPLY, g, rlx_mx_astype(c, wk, t->dtype));
    }
    y = y ? rlx_mx_binary(c, RLX_MXB_ADD, y, g) : g;
  }
  if (M) y = rlx_mx_where(c, rlx_mx_reshape(c, M, t->rank, bshape), rlx_mx_scalar(c, extrap, t->dtype), y);
  t->dims[ax] = s->out;
  return y;
}

/* rlx's CPU kernel (rlx_mx_resize2d) for a float (not float64) resize of the last two axes, the
 * others kept, where no output extrapolates: both axes' taps at once. *done: it ran (else the
 * per-axis gathers run). */
static rlx_mx_arr *resize_kernel(rlx_lower *L, const resize_axis_spec *s, const bool *resized, rlx_mx_arr *x, int r, bool *done) {
  axis_taps a[2] = {{0}, {0}};
  rlx_mx_arr *y = NULL;
  *done = false;
  for (int i = 0; i < 2; i++) {
    const resize_axis_spec *si = &s[r - 2 + i];
    if (resized[r - 2 + i]) {
      if (!axis_taps_make(L, si, r - 2 + i, &a[i])) return axis_taps_free(&a[0]), *done = true, NULL;
      continue;
    }
    a[i].taps = 1, a[i].idx = malloc(sizeof(int32_t) * (size_t)si->out), a[i].wf = malloc(sizeof(float) * (size_t)si->out);
    if (!a[i].idx || !a[i].wf) {
      axis_taps_free(&a[0]), axis_taps_free(&a[1]);
      rlx_lower_fail(L, RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory for %lld resize taps", (long long)si->out);
      return *done = true, NULL;
    }
    for (int64_t o = 0; o < si->out; o++) a[i].idx[o] = (int32_t)o, a[i].wf[o] = 1;
  }
  if (!a[0].any_outside && !a[1].any_outside) {
    y = rlx_mx_resize2d(L->mx, x, s[r - 2].out, a[0].taps, a[0].idx, a[0].wf, s[r - 1].out, a[1].taps, a[1].idx, a[1].wf);
    *done = true;
  }
  axis_taps_free(&a[0]), axis_taps_free(&a[1]);
  return y;
}

static void resize(rlx_lower *L, const rlx_node *n, rlx_mx_arr *x, rlx_mx_arr **out) {
  rlx_type t = *rlx_in_type(L, n, 0);
  const rlx_type *to = rlx_out_type(L, n, 0);
  size_t ns, nr;
  const double *sc = rlx_node_fs(n, "scales", &ns), *roi = rlx_node_fs(n, "roi", &nr);
  const char *mode = rlx_node_s(n, "mode");
  resize_axis_spec base = {.ctm = rlx_node_s(n, "coordinate_transformation_mode"), .nearest_mode = rlx_node_s(n, "nearest_mode"),
                           .mode = !strcmp(mode, "nearest") ? 0 : !strcmp(mode, "linear") ? 1 : 2,
                           .a = rlx_node_f(n, "cubic_coeff_a"), .antialias = rlx_node_i(n, "antialias") != 0,
                           .exclude_outside = rlx_node_i(n, "exclude_outside") != 0};
  bool crop = !strcmp(base.ctm, "tf_crop_and_resize");
  resize_axis_spec s[RLX_MAX_RANK];
  bool resized[RLX_MAX_RANK], empty = false, outer = false;
  for (int i = 0; i < t.rank; i++) {
    s[i] = base;
    s[i].in = t.dims[i], s[i].out = to->dims[i];
    s[i].scale = ns ? sc[i] : s[i].in ? (double)s[i].out / (double)s[i].in : 1;
    s[i].roi_lo = nr ? roi[i] : 0, s[i].roi_hi = nr ? roi[i + t.rank] : 1;
    resized[i] = !(s[i].out == s[i].in && s[i].scale == 1.0 && (!crop || (s[i].roi_lo == 0 && s[i].roi_hi == 1)));
    empty |= resized[i] && (s[i].in == 0 || s[i].out == 0);
    outer |= resized[i] && i < t.rank - 2;
  }
  if (!L->cl && rlx_mx_get_device(L->mx) == RLX_MX_CPU && t.rank >= 2 && rlx_dtype_is_float(t.dtype) && t.dtype != RLX_DTYPE_F64 &&
      !empty && !outer && (resized[t.rank - 2] || resized[t.rank - 1])) {
    bool done;
    rlx_mx_arr *y = resize_kernel(L, s, resized, x, t.rank, &done);
    if (done) {
      out[0] = y;
      return;
    }
  }
  for (int i = 0; i < t.rank; i++) {
    if (!resized[i]) continue;
    if (s[i].in == 0 || s[i].out == 0) {
      t.dims[i] = s[i].out;
      x = rlx_mx_full(L->mx, to->rank, t.dims, 0, t.dtype);
      continue;
    }
    x = resize_axis(L, &s[i], x, &t, i, rlx_node_f(n, "extrapolation_value"));
  }
  out[0] = x;
}

void rlx_lower_conv(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  switch (n->op) {
    case RLX_OP_CONV: conv(L, n, in, out, false); return;
    case RLX_OP_CONV_TRANSPOSE: conv(L, n, in, out, true); return;
    case RLX_OP_POOL: pool(L, n, in[0], out); return;
    case RLX_OP_RESIZE: resize(L, n, in[0], out); return;
    default: rlx_lower_fail(L, RLX_STATUS_INTERNAL, "not a conv op");
  }
}
