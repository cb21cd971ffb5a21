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

/* The lowest (or highest) value of an integer dtype. */
static double int_limit(rlx_dtype dt, bool lowest) {
  size_t bits = 8 * rlx_dtype_size(dt);
  if (!rlx_dtype_is_signed(dt)) return lowest ? 0 : ldexp(1, (int)bits) - 1;
  return lowest ? -ldexp(1, (int)bits - 1) : ldexp(1, (int)bits - 1) - 1;
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
  double neutral = kind == 2 ? -INFINITY : kind == 3 ? INFINITY : kind == 4 ? 1.0 : 0.0;
  if (!rlx_dtype_is_float(t->dtype) && (kind == 2 || kind == 3)) neutral = int_limit(t->dtype, kind == 2);
  rlx_mx_arr *xp = rlx_mx_pad(c, x, r, lo, hi, rlx_mx_scalar(c, neutral, t->dtype), "constant");
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

/* ---- Resize (ONNX Resize-19 coordinate transforms) ---- */

static double source_coord(const char *ctm, double xr, double scale, int64_t in, int64_t outn) {
  if (!strcmp(ctm, "asymmetric")) return xr / scale;
  if (!strcmp(ctm, "align_corners")) return outn == 1 ? 0 : xr * (double)(in - 1) / (double)(outn - 1);
  if (!strcmp(ctm, "pytorch_half_pixel")) return outn > 1 ? (xr + 0.5) / scale - 0.5 : 0;
  if (!strcmp(ctm, "half_pixel_symmetric")) {
    double adj = (double)outn / (scale * (double)in), center = (double)in / 2;
    return center * (1 - adj) + (xr + 0.5) / scale - 0.5;
  }
  return (xr + 0.5) / scale - 0.5; /* half_pixel */
}

static int64_t nearest(const char *mode, double x) {
  if (!strcmp(mode, "floor")) return (int64_t)floor(x);
  if (!strcmp(mode, "ceil")) return (int64_t)ceil(x);
  if (!strcmp(mode, "round_prefer_ceil")) return (int64_t)floor(x + 0.5);
  return (x - floor(x) == 0.5) ? (int64_t)floor(x) : (int64_t)floor(x + 0.5); /* round_prefer_floor */
}

static int64_t clampi(int64_t v, int64_t hi) { return v < 0 ? 0 : v > hi ? hi : v; }

/* Cubic convolution kernel (Keys 1981) with coefficient a. */
static double cubic_w(double x, double a) {
  x = fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

static rlx_mx_arr *resize_axis(rlx_lower *L, const rlx_node *n, rlx_mx_arr *x, rlx_type *t, int ax, int64_t outn, double scale) {
  rlx_mx *c = L->mx;
  const char *mode = rlx_node_s(n, "mode"), *ctm = rlx_node_s(n, "coordinate_transformation_mode");
  int64_t in = t->dims[ax];
  int taps = !strcmp(mode, "nearest") ? 1 : !strcmp(mode, "linear") ? 2 : 4;
  int32_t *idx = malloc(sizeof(int32_t) * (size_t)(outn * taps));
  float *w = malloc(sizeof(float) * (size_t)(outn * taps));
  if (!idx || !w) {
    free(idx), free(w);
    rlx_lower_fail(L, RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    return NULL;
  }
  double a = rlx_node_f(n, "cubic_coeff_a");
  bool excl = rlx_node_i(n, "exclude_outside") != 0;
  for (int64_t o = 0; o < outn; o++) {
    double xo = source_coord(ctm, (double)o, scale, in, outn);
    if (taps == 1) {
      idx[o] = (int32_t)clampi(nearest(rlx_node_s(n, "nearest_mode"), xo), in - 1);
      w[o] = 1;
    } else if (taps == 2) {
      if (xo < 0) xo = 0;
      if (xo > (double)(in - 1)) xo = (double)(in - 1);
      int64_t x0 = (int64_t)floor(xo);
      double f = xo - (double)x0;
      idx[2 * o] = (int32_t)clampi(x0, in - 1), idx[2 * o + 1] = (int32_t)clampi(x0 + 1, in - 1);
      w[2 * o] = (float)(1 - f), w[2 * o + 1] = (float)f;
    } else {
      int64_t x0 = (int64_t)floor(xo);
      double f = xo - (double)x0, sum = 0, ws[4];
      for (int k = 0; k < 4; k++) {
        int64_t j = x0 - 1 + k;
        ws[k] = cubic_w(f - (k - 1), a);
        if (excl && (j < 0 || j >= in)) ws[k] = 0;
        sum += ws[k];
        idx[4 * o + k] = (int32_t)clampi(j, in - 1);
      }
      for (int k = 0; k < 4; k++) w[4 * o + k] = (float)(excl && sum != 0 ? ws[k] / sum : ws[k]);
    }
  }
  rlx_type ti = {.dtype = RLX_DTYPE_I32, .rank = 2, .dims = {outn, taps}};
  rlx_type tw = {.dtype = RLX_DTYPE_F32, .rank = 2, .dims = {outn, taps}};
  rlx_mx_arr *I = rlx_mx_from_bytes(c, idx, &ti), *W = rlx_mx_from_bytes(c, w, &tw);
  free(idx), free(w);
  rlx_mx_arr *y = NULL;
  for (int k = 0; k < taps; k++) {
    rlx_mx_arr *ik = rlx_mx_reshape(c, rlx_l_narrow(L, I, &ti, 1, k, 1), 1, (int64_t[]){outn});
    rlx_mx_arr *g = rlx_mx_take(c, x, ik, ax);
    if (taps > 1) {
      int64_t ws[RLX_MAX_RANK];
      for (int i = 0; i < t->rank; i++) ws[i] = i == ax ? outn : 1;
      rlx_mx_arr *wk = rlx_mx_astype(c, rlx_mx_reshape(c, rlx_l_narrow(L, W, &tw, 1, k, 1), t->rank, ws), t->dtype);
      g = rlx_mx_binary(c, RLX_MXB_MULTIPLY, g, wk);
    }
    y = y ? rlx_mx_binary(c, RLX_MXB_ADD, y, g) : g;
  }
  t->dims[ax] = outn;
  return y;
}

static void resize(rlx_lower *L, const rlx_node *n, rlx_mx_arr *x, rlx_mx_arr **out) {
  rlx_type t = *rlx_in_type(L, n, 0);
  const rlx_type *to = rlx_out_type(L, n, 0);
  size_t ns;
  const double *sc = rlx_node_fs(n, "scales", &ns);
  for (int i = 0; i < t.rank; i++) {
    double scale = ns ? sc[i] : (double)to->dims[i] / (double)t.dims[i];
    if (to->dims[i] == t.dims[i] && scale == 1.0) continue;
    x = resize_axis(L, n, x, &t, i, to->dims[i], scale);
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
