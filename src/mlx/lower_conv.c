/* lower_conv.c: Conv and ConvTranspose (src/mlx/conv_ops.c), Pool (a strided window view reduced
 * over the window axes) and Resize (separable per-axis gathers). */
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
  rlx_mx_arr *y = transpose ? rlx_l_conv_transpose(L, x, &tx, w, &tw, &gm, &ty) : rlx_l_conv(L, x, &tx, w, &tw, &gm, &ty);
  if (b) {
    int64_t bs[RLX_MAX_RANK] = {to->dims[1]};
    for (int i = 1; i < r - 1; i++) bs[i] = 1;
    y = rlx_mx_binary(c, RLX_MXB_ADD, y, rlx_mx_reshape(c, b, r - 1, bs));
  }
  out[0] = rlx_dtype_is_int(dt) ? rlx_mx_astype(c, rlx_mx_astype(c, y, RLX_DTYPE_I64), dt) : y;
}

/* The lowest (or highest) value of an integer dtype as a scalar array: -2^(bits-1) is exact in a
 * double and the highest is its bitwise complement (0 and ~0 unsigned). */
static rlx_mx_arr *int_limit(rlx_lower *L, rlx_dtype dt, bool lowest) {
  double lo = rlx_dtype_is_signed(dt) ? -ldexp(1, (int)(8 * rlx_dtype_size(dt)) - 1) : 0;
  rlx_mx_arr *v = rlx_mx_scalar(L->mx, lo, dt);
  return lowest ? v : rlx_mx_unary(L->mx, RLX_MXU_BITWISE_INVERT, v);
}

/* Pool over windows: pad with the kind's neutral value, view [N,C,o..,k..] (rlx_l_pool_windows),
 * reduce the window axes. mean divides the sum by each window's count: prod(k) when every window
 * counts the same (no pads, or count_include_pad, and no ceil_mode overhang), else the same
 * pooling applied to a ones tensor padded with 1 (count_include_pad) or 0 on the explicit pads
 * and with 0 on the ceil_mode overhang. */
static void pool(rlx_lower *L, const rlx_node *n, rlx_mx_arr *x, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  const rlx_type *t = rlx_in_type(L, n, 0), *to = rlx_out_type(L, n, 0);
  int r = t->rank, nsp = r - 2, kind = rlx_reduce_kind(rlx_node_s(n, "kind"));
  int64_t k[3], o[3];
  rlx_conv_geom gm;
  rlx_conv_geom_read(n, nsp, &gm);
  rlx_conv_list(n, "kernel_shape", nsp, 1, k);
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
  rlx_mx_arr *neutral;
  if (kind == 2 || kind == 3)
    neutral = rlx_dtype_is_float(t->dtype) ? rlx_mx_scalar(c, kind == 2 ? -INFINITY : INFINITY, t->dtype) : int_limit(L, t->dtype, kind == 2);
  else
    neutral = rlx_mx_scalar(c, kind == 4 ? 1.0 : 0.0, t->dtype);
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
