/* lower_conv.c: Conv and ConvTranspose (mx::conv_general, channels-last), Pool (a strided window
 * view reduced over the window axes) and Resize (separable per-axis gathers). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mlx/lower.h"


/* [N,C,d..] <-> [N,d..,C] */
static rlx_mx_arr *to_last(rlx_lower *L, rlx_mx_arr *x, int rank) {
  int64_t p[RLX_MAX_RANK] = {0};
  for (int i = 1; i < rank - 1; i++) p[i] = i + 1;
  p[rank - 1] = 1;
  return rlx_mx_transpose(L->mx, x, rank, p);
}
static rlx_mx_arr *to_first(rlx_lower *L, rlx_mx_arr *x, int rank) {
  int64_t p[RLX_MAX_RANK] = {0};
  p[1] = rank - 1;
  for (int i = 2; i < rank; i++) p[i] = i - 1;
  return rlx_mx_transpose(L->mx, x, rank, p);
}

static void conv(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out, bool transpose) {
  rlx_mx *c = L->mx;
  const rlx_type *tx = rlx_in_type(L, n, 0), *tw = rlx_in_type(L, n, 1), *to = rlx_out_type(L, n, 0);
  int r = tx->rank, nsp = r - 2;
  int64_t s[3], p[6], d[3], op[3] = {0}, one[3] = {1, 1, 1}, g = rlx_node_i(n, "group");
  rlx_conv_list(n, "strides", nsp, 1, s);
  rlx_conv_list(n, "pads", nsp, 0, p);
  rlx_conv_list(n, "dilations", nsp, 1, d);
  rlx_mx_arr *x = to_last(L, in[0], r), *w, *y;
  if (!transpose) {
    w = to_last(L, in[1], r); /* [Co, k.., Ci/g] */
    y = rlx_mx_conv_general(c, x, w, nsp, s, p, p + nsp, d, one, (int)g, false);
  } else {
    rlx_conv_list(n, "output_padding", nsp, 0, op);
    /* w [Ci, Co/g, k..] -> [g, Ci/g, Co/g, k..] -> [g, Co/g, k.., Ci/g] -> [Co, k.., Ci/g] */
    int64_t ci = tw->dims[0], cog = tw->dims[1];
    rlx_type t5 = {.dtype = tw->dtype, .rank = r + 1, .dims = {g, ci / g, cog}};
    for (int i = 0; i < nsp; i++) t5.dims[3 + i] = tw->dims[2 + i];
    int64_t perm[RLX_MAX_RANK] = {0, 2};
    for (int i = 0; i < nsp; i++) perm[2 + i] = 3 + i;
    perm[2 + nsp] = 1;
    w = rlx_mx_transpose(c, rlx_l_reshape(L, in[1], &t5), r + 1, perm);
    rlx_type tw2 = {.dtype = tw->dtype, .rank = r, .dims = {g * cog}};
    for (int i = 0; i < nsp; i++) tw2.dims[1 + i] = tw->dims[2 + i];
    tw2.dims[r - 1] = ci / g;
    w = rlx_l_reshape(L, w, &tw2);
    /* Full-correlation padding d(k-1) minus the pads; negative amounts crop afterwards. */
    int64_t lo[3], hi[3], clo[3] = {0}, chi[3] = {0};
    for (int i = 0; i < nsp; i++) {
      int64_t full = d[i] * (tw->dims[2 + i] - 1);
      lo[i] = full - p[i];
      hi[i] = full - p[i + nsp] + op[i];
      if (lo[i] < 0) clo[i] = -lo[i], lo[i] = 0;
      if (hi[i] < 0) chi[i] = -hi[i], hi[i] = 0;
    }
    y = rlx_mx_conv_general(c, x, w, nsp, one, lo, hi, d, s, (int)g, true);
    bool crop = false;
    for (int i = 0; i < nsp; i++) crop |= clo[i] || chi[i];
    if (crop) {
      int64_t a[RLX_MAX_RANK] = {0}, b[RLX_MAX_RANK], st[RLX_MAX_RANK];
      for (int i = 0; i < r; i++) b[i] = INT32_MAX, st[i] = 1;
      for (int i = 0; i < nsp; i++) a[1 + i] = clo[i], b[1 + i] = clo[i] + to->dims[2 + i];
      b[0] = to->dims[0];
      b[r - 1] = to->dims[1];
      y = rlx_mx_slice(c, y, r, a, b, st);
    }
  }
  y = to_first(L, y, r);
  if (n->n_in == 3) {
    int64_t bs[RLX_MAX_RANK] = {to->dims[1]};
    for (int i = 1; i < r - 1; i++) bs[i] = 1;
    y = rlx_mx_binary(c, RLX_MXB_ADD, y, rlx_mx_reshape(c, in[2], r - 1, bs));
  }
  out[0] = y;
}

/* Pool over windows: pad with the kind's neutral value, view [N,C,o..,k..] with as_strided,
 * reduce the window axes. mean divides by the window count (count_include_pad) or by the
 * number of real elements in each window. */
static void pool(rlx_lower *L, const rlx_node *n, rlx_mx_arr *x, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  const rlx_type *t = rlx_in_type(L, n, 0), *to = rlx_out_type(L, n, 0);
  int r = t->rank, nsp = r - 2, kind = rlx_reduce_kind(rlx_node_s(n, "kind"));
  int64_t k[3], s[3], p[6], d[3];
  rlx_conv_list(n, "kernel_shape", nsp, 1, k);
  rlx_conv_list(n, "strides", nsp, 1, s);
  rlx_conv_list(n, "pads", nsp, 0, p);
  rlx_conv_list(n, "dilations", nsp, 1, d);
  /* Padding: explicit pads plus what ceil_mode windows need past the end. */
  int64_t lo[RLX_MAX_RANK] = {0}, hi[RLX_MAX_RANK] = {0}, extra[3];
  rlx_type tp = *t;
  for (int i = 0; i < nsp; i++) {
    int64_t need = (to->dims[2 + i] - 1) * s[i] + d[i] * (k[i] - 1) + 1, have = t->dims[2 + i] + p[i] + p[i + nsp];
    extra[i] = need > have ? need - have : 0;
    lo[2 + i] = p[i];
    hi[2 + i] = p[i + nsp] + extra[i];
    tp.dims[2 + i] = t->dims[2 + i] + lo[2 + i] + hi[2 + i];
  }
  rlx_mx_arr *neutral = kind == 2 || kind == 3 ? rlx_l_extreme(L, t->dtype, kind == 2) : rlx_mx_scalar(c, kind == 4 ? 1.0 : 0.0, t->dtype);
  rlx_mx_arr *xp = rlx_mx_pad(c, x, r, lo, hi, neutral, "constant");
  /* window view */
  int64_t shape[RLX_MAX_RANK * 2], strides[RLX_MAX_RANK * 2], es[RLX_MAX_RANK];
  es[r - 1] = 1;
  for (int i = r - 2; i >= 0; i--) es[i] = es[i + 1] * tp.dims[i + 1];
  int vr = 0;
  shape[vr] = tp.dims[0], strides[vr++] = es[0];
  shape[vr] = tp.dims[1], strides[vr++] = es[1];
  for (int i = 0; i < nsp; i++) shape[vr] = to->dims[2 + i], strides[vr++] = es[2 + i] * s[i];
  for (int i = 0; i < nsp; i++) shape[vr] = k[i], strides[vr++] = es[2 + i] * d[i];
  int axes[3];
  for (int i = 0; i < nsp; i++) axes[i] = 2 + nsp + i;
  if (vr > RLX_MAX_RANK * 2) return;
  int red = kind == 1 ? 0 : kind; /* mean: sum, divided below */
  rlx_mx_arr *y = rlx_mx_reduce(c, rlx_mx_as_strided(c, xp, vr, shape, strides, 0), red, nsp, axes, false);
  if (kind == 1) {
    /* counts: pool a ones tensor padded with 1 on the explicit pads (count_include_pad) or 0;
     * the ceil_mode extra region never counts. */
    bool inc = rlx_node_i(n, "count_include_pad") != 0;
    int64_t hi_explicit[RLX_MAX_RANK] = {0}, hi_extra[RLX_MAX_RANK] = {0}, zero[RLX_MAX_RANK] = {0};
    for (int i = 0; i < nsp; i++) hi_explicit[2 + i] = p[i + nsp], hi_extra[2 + i] = extra[i];
    rlx_mx_arr *ones = rlx_mx_full(c, r, t->dims, 1, t->dtype);
    ones = rlx_mx_pad(c, ones, r, lo, hi_explicit, rlx_mx_scalar(c, inc ? 1 : 0, t->dtype), "constant");
    ones = rlx_mx_pad(c, ones, r, zero, hi_extra, rlx_mx_scalar(c, 0, t->dtype), "constant");
    rlx_mx_arr *cnt = rlx_mx_reduce(c, rlx_mx_as_strided(c, ones, vr, shape, strides, 0), 0, nsp, axes, false);
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
 * the kernel stretch s (min(scale, 1) with antialias, else 1). */
static int64_t resize_taps(const resize_axis_spec *s, double *stretch, int64_t *first) {
  if (s->mode == 0) return *stretch = 1, *first = 0, 1;
  *stretch = s->antialias && s->scale < 1 ? s->scale : 1;
  *first = (int64_t)floor(-(double)s->mode / *stretch) + 1;
  return 2 - 2 * *first;
}

/* Fills idx/w [out, taps] and the per-output extrapolation flags. */
static void resize_weights(const resize_axis_spec *s, int64_t taps, double stretch, int64_t first, int32_t *idx, double *w,
                           bool *outside) {
  for (int64_t o = 0; o < s->out; o++) {
    double x = source_coord(s, (double)o, &outside[o]);
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

static rlx_mx_arr *resize_axis(rlx_lower *L, const resize_axis_spec *s, rlx_mx_arr *x, rlx_type *t, int ax, double extrap) {
  rlx_mx *c = L->mx;
  double stretch;
  int64_t first, taps = resize_taps(s, &stretch, &first), cnt = s->out * taps;
  int32_t *idx = malloc(sizeof(int32_t) * (size_t)(cnt ? cnt : 1));
  double *w = malloc(sizeof(double) * (size_t)(cnt ? cnt : 1));
  bool *outside = malloc((size_t)(s->out ? s->out : 1));
  if (!idx || !w || !outside) {
    free(idx), free(w), free(outside);
    rlx_lower_fail(L, RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory for %lld resize taps", (long long)cnt);
    return NULL;
  }
  resize_weights(s, taps, stretch, first, idx, w, outside);
  bool any_outside = false;
  for (int64_t o = 0; o < s->out; o++) any_outside |= outside[o];
  rlx_type ti = {.dtype = RLX_DTYPE_I32, .rank = 2, .dims = {s->out, taps}};
  rlx_type tw = {.dtype = RLX_DTYPE_F64, .rank = 2, .dims = {s->out, taps}};
  rlx_type tm = {.dtype = RLX_DTYPE_BOOL, .rank = 1, .dims = {s->out}};
  rlx_mx_arr *I = rlx_mx_from_bytes(c, idx, &ti), *W = taps > 1 ? rlx_mx_from_bytes(c, w, &tw) : NULL;
  rlx_mx_arr *M = any_outside ? rlx_mx_from_bytes(c, outside, &tm) : NULL;
  free(idx), free(w), free(outside);
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

static void resize(rlx_lower *L, const rlx_node *n, rlx_mx_arr *x, rlx_mx_arr **out) {
  rlx_type t = *rlx_in_type(L, n, 0);
  const rlx_type *to = rlx_out_type(L, n, 0);
  size_t ns, nr;
  const double *sc = rlx_node_fs(n, "scales", &ns), *roi = rlx_node_fs(n, "roi", &nr);
  const char *mode = rlx_node_s(n, "mode");
  resize_axis_spec s = {.ctm = rlx_node_s(n, "coordinate_transformation_mode"), .nearest_mode = rlx_node_s(n, "nearest_mode"),
                        .mode = !strcmp(mode, "nearest") ? 0 : !strcmp(mode, "linear") ? 1 : 2,
                        .a = rlx_node_f(n, "cubic_coeff_a"), .antialias = rlx_node_i(n, "antialias") != 0,
                        .exclude_outside = rlx_node_i(n, "exclude_outside") != 0};
  bool crop = !strcmp(s.ctm, "tf_crop_and_resize");
  for (int i = 0; i < t.rank; i++) {
    s.in = t.dims[i], s.out = to->dims[i];
    s.scale = ns ? sc[i] : s.in ? (double)s.out / (double)s.in : 1;
    s.roi_lo = nr ? roi[i] : 0, s.roi_hi = nr ? roi[i + t.rank] : 1;
    if (s.out == s.in && s.scale == 1.0 && (!crop || (s.roi_lo == 0 && s.roi_hi == 1))) continue;
    if (s.in == 0 || s.out == 0) {
      t.dims[i] = s.out;
      x = rlx_mx_full(L->mx, to->rank, t.dims, 0, t.dtype);
      continue;
    }
    x = resize_axis(L, &s, x, &t, i, rlx_node_f(n, "extrapolation_value"));
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
