/* import_ops_grid.c: ONNX GridSample (16/20/22), AffineGrid (20), RoiAlign (16/22) and DeformConv
 * (19/22) from gathers, elementwise rlx ops and MatMul. GridSample follows the ONNX operator docs and the ONNX
 * reference implementation: coordinates are denormalized per spatial dim (align_corners: (g+1)/2 (L-1), else
 * ((g+1) L - 1)/2), nearest rounds half to even, border/reflection move coordinates outside
 * [lo, hi] (lo, hi = -0.5, L-0.5, or 0, L-1 with align_corners) back inside, then every tap index
 * is fixed by padding_mode (zeros: taps outside read 0; border: clamp; reflection: reflect). The
 * taps of all spatial dims combine into one gather per tap combination from x flattened to
 * [N, C, prod(D)]. Cubic uses Keys' kernel with a = -0.75. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/import_ops_importer.h"

enum { PAD_ZEROS, PAD_BORDER, PAD_REFLECTION };
#define GS_MAX_TAPS 4

typedef struct gs {
  rlx_imp *I;
  const Onnx__NodeProto *n;
  rlx_dtype ft;         /* the float type of the coordinate arithmetic */
  int pad;
  bool align;
  int64_t N, Q;         /* batch, output positions */
} gs;

static rlx_status *sc(gs *G, rlx_op op, rlx_value x, double c, rlx_value *y) { return imp_with_scalar(G->I, G->n, op, x, c, y); }
static rlx_status *bin(gs *G, rlx_op op, rlx_value a, rlx_value b, rlx_value *y) { return imp_bin(G->I, G->n, op, a, b, y); }

/* Reflects x into [lo, hi] by the nearer border, repeatedly (the reference's _gs_reflect). */
static rlx_status *reflect(gs *G, rlx_value x, double lo, double hi, rlx_value *y) {
  double span = hi - lo;
  if (span <= 0) { /* a single position: everything maps onto it */
    RLX_TRY(sc(G, RLX_OP_MUL, x, 0, y));
    return sc(G, RLX_OP_ADD, *y, lo, y);
  }
  rlx_value below, above, dlo, dhi, v[2];
  RLX_TRY(sc(G, RLX_OP_LESS, x, lo, &below));
  RLX_TRY(sc(G, RLX_OP_GREATER, x, hi, &above));
  RLX_TRY(sc(G, RLX_OP_MUL, x, -1, &dlo));
  RLX_TRY(sc(G, RLX_OP_ADD, dlo, lo, &dlo)); /* lo - x */
  RLX_TRY(sc(G, RLX_OP_SUB, x, hi, &dhi));   /* x - hi */
  for (int side = 0; side < 2; side++) {
    rlx_value d = side ? dhi : dlo, k, r, odd, near, far;
    RLX_TRY(sc(G, RLX_OP_DIV, d, span, &k));
    RLX_TRY(imp_un(G->I, G->n, RLX_OP_FLOOR, k, &k));
    RLX_TRY(sc(G, RLX_OP_MUL, k, span, &r));
    RLX_TRY(bin(G, RLX_OP_SUB, d, r, &r)); /* the remainder */
    rlx_attr fm = RLX_ATTR_I("fmod", 0);
    rlx_value two, in[2];
    RLX_TRY(imp_scalar(G->I, 2, G->ft, &two));
    in[0] = k, in[1] = two;
    RLX_TRY(imp_add(G->I, G->n, RLX_OP_MOD, 2, in, 1, &fm, &odd));
    RLX_TRY(sc(G, RLX_OP_NOT_EQUAL, odd, 0, &odd));
    /* even bounce count: measured from the near border; odd: from the far one */
    RLX_TRY(sc(G, RLX_OP_MUL, r, side ? -1 : 1, &near));
    RLX_TRY(sc(G, RLX_OP_ADD, near, side ? hi : lo, &near));
    RLX_TRY(sc(G, RLX_OP_MUL, r, side ? 1 : -1, &far));
    RLX_TRY(sc(G, RLX_OP_ADD, far, side ? lo : hi, &far));
    RLX_TRY(imp_select(G->I, G->n, odd, far, near, &v[side]));
  }
  RLX_TRY(imp_select(G->I, G->n, above, v[1], x, y));
  return imp_select(G->I, G->n, below, v[0], *y, y);
}

static rlx_status *clamp(gs *G, rlx_value x, double lo, double hi, rlx_value *y) {
  RLX_TRY(sc(G, RLX_OP_MAX, x, lo, y));
  return sc(G, RLX_OP_MIN, *y, hi, y);
}

/* Fixes a tap index j (integer valued) of a dim of length L by padding_mode: *idx is an int64
 * index inside [0, L), *ok (zeros mode only, else 0) a bool mask of in-range taps. */
static rlx_status *fix_tap(gs *G, rlx_value j, int64_t L, double lo, double hi, rlx_value *idx, rlx_value *ok) {
  *ok = 0;
  if (G->pad == PAD_ZEROS) {
    rlx_value a, b;
    RLX_TRY(sc(G, RLX_OP_GREATER_EQUAL, j, 0, &a));
    RLX_TRY(sc(G, RLX_OP_LESS, j, (double)L, &b));
    RLX_TRY(bin(G, RLX_OP_AND, a, b, ok));
  } else if (G->pad == PAD_REFLECTION) {
    RLX_TRY(reflect(G, j, lo, hi, &j));
  }
  RLX_TRY(clamp(G, j, 0, (double)(L - 1), &j));
  return imp_cast(G->I, G->n, j, RLX_DTYPE_I64, idx); /* truncates toward zero */
}

/* Keys' cubic convolution weights of the taps x0-1..x0+2 for t = x - x0 in [0, 1). */
static rlx_status *cubic_weights(gs *G, rlx_value t, rlx_value *w) {
  const double a = -0.75;
  for (int k = 0; k < 4; k++) {
    rlx_value d, d2, p;
    /* distance from the tap: 1+t, t, 1-t, 2-t */
    RLX_TRY(sc(G, RLX_OP_MUL, t, k < 2 ? 1 : -1, &d));
    RLX_TRY(sc(G, RLX_OP_ADD, d, k == 0 || k == 2 ? 1 : k == 3 ? 2 : 0, &d));
    RLX_TRY(bin(G, RLX_OP_MUL, d, d, &d2));
    if (k == 1 || k == 2) { /* |d| <= 1: ((a+2) d - (a+3)) d^2 + 1 */
      RLX_TRY(sc(G, RLX_OP_MUL, d, a + 2, &p));
      RLX_TRY(sc(G, RLX_OP_SUB, p, a + 3, &p));
      RLX_TRY(bin(G, RLX_OP_MUL, p, d2, &p));
      RLX_TRY(sc(G, RLX_OP_ADD, p, 1, &w[k]));
    } else { /* 1 < |d| < 2: ((a d - 5a) d + 8a) d - 4a */
      RLX_TRY(sc(G, RLX_OP_MUL, d, a, &p));
      RLX_TRY(sc(G, RLX_OP_SUB, p, 5 * a, &p));
      RLX_TRY(bin(G, RLX_OP_MUL, p, d, &p));
      RLX_TRY(sc(G, RLX_OP_ADD, p, 8 * a, &p));
      RLX_TRY(bin(G, RLX_OP_MUL, p, d, &p));
      RLX_TRY(sc(G, RLX_OP_SUB, p, 4 * a, &w[k]));
    }
  }
  return NULL;
}

/* Taps of one spatial dim of length L from normalized coordinates g [N, Q]. */
static rlx_status *dim_taps(gs *G, int mode, rlx_value g, int64_t L, rlx_value *idx, rlx_value *ok, rlx_value *w, int *ntaps) {
  double lo = G->align ? 0 : -0.5, hi = G->align ? (double)L - 1 : (double)L - 0.5;
  rlx_value x;
  if (G->align) { /* (g + 1) / 2 (L - 1) */
    RLX_TRY(sc(G, RLX_OP_ADD, g, 1, &x));
    RLX_TRY(sc(G, RLX_OP_MUL, x, 0.5 * (double)(L - 1), &x));
  } else { /* ((g + 1) L - 1) / 2 */
    RLX_TRY(sc(G, RLX_OP_ADD, g, 1, &x));
    RLX_TRY(sc(G, RLX_OP_MUL, x, 0.5 * (double)L, &x));
    RLX_TRY(sc(G, RLX_OP_SUB, x, 0.5, &x));
  }
  if (mode == 0) RLX_TRY(imp_un(G->I, G->n, RLX_OP_ROUND, x, &x));
  if (G->pad == PAD_BORDER) { /* only coordinates outside [lo, hi] clamp to [0, L-1] */
    rlx_value m, e;
    RLX_TRY(sc(G, RLX_OP_LESS, x, lo, &m));
    RLX_TRY(imp_scalar(G->I, 0, G->ft, &e));
    RLX_TRY(imp_select(G->I, G->n, m, e, x, &x));
    RLX_TRY(sc(G, RLX_OP_GREATER, x, hi, &m));
    RLX_TRY(imp_scalar(G->I, (double)(L - 1), G->ft, &e));
    RLX_TRY(imp_select(G->I, G->n, m, e, x, &x));
  }
  if (G->pad == PAD_REFLECTION) RLX_TRY(reflect(G, x, lo, hi, &x));
  if (mode == 0) {
    *ntaps = 1;
    RLX_TRY(imp_scalar(G->I, 1, G->ft, &w[0]));
    return fix_tap(G, x, L, lo, hi, &idx[0], &ok[0]);
  }
  rlx_value x0, t;
  RLX_TRY(imp_un(G->I, G->n, RLX_OP_FLOOR, x, &x0));
  RLX_TRY(bin(G, RLX_OP_SUB, x, x0, &t));
  if (mode == 1) {
    *ntaps = 2;
    RLX_TRY(sc(G, RLX_OP_MUL, t, -1, &w[0]));
    RLX_TRY(sc(G, RLX_OP_ADD, w[0], 1, &w[0]));
    w[1] = t;
  } else {
    *ntaps = 4;
    RLX_TRY(cubic_weights(G, t, w));
  }
  int first = mode == 1 ? 0 : -1;
  for (int k = 0; k < *ntaps; k++) {
    rlx_value j;
    RLX_TRY(sc(G, RLX_OP_ADD, x0, first + k, &j));
    RLX_TRY(fix_tap(G, j, L, lo, hi, &idx[k], &ok[k]));
  }
  return NULL;
}

rlx_status *rlx_onnx_map_grid_sample(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type tx, tg;
  RLX_TRY(imp_in_type(I, n, 0, true, &tx));
  RLX_TRY(imp_in_type(I, n, 1, true, &tg));
  int r = tx.rank - 2;
  if (r < 1 || r > 3 || tg.rank != r + 2 || tg.dims[0] != tx.dims[0] || tg.dims[r + 1] != r)
    IMP_FAIL(INVALID_ARGUMENT, "X %s and grid %s must be [N,C,D1..Dr] and [N,O1..Or,r] with r = 1..3", RLX_TYPE_STR(&tx), RLX_TYPE_STR(&tg));
  if (!rlx_dtype_is_float(tg.dtype)) IMP_FAIL(INVALID_ARGUMENT, "grid must be a float tensor, got %s", RLX_TYPE_STR(&tg));
  char mb[16], pb[16];
  const char *ms = imp_attr_s(n, "mode", "linear", mb, sizeof mb), *ps = imp_attr_s(n, "padding_mode", "zeros", pb, sizeof pb);
  int mode = !strcmp(ms, "nearest") ? 0 : !strcmp(ms, "linear") || !strcmp(ms, "bilinear") ? 1 : !strcmp(ms, "cubic") || !strcmp(ms, "bicubic") ? 2 : -1;
  int pad = !strcmp(ps, "zeros") ? PAD_ZEROS : !strcmp(ps, "border") ? PAD_BORDER : !strcmp(ps, "reflection") ? PAD_REFLECTION : -1;
  if (mode < 0 || pad < 0) IMP_FAIL(INVALID_ARGUMENT, "mode '%s' / padding_mode '%s'", ms, ps);
  gs G = {.I = I, .n = n, .ft = rlx_dtype_is_float(tx.dtype) ? tx.dtype : tg.dtype, .pad = pad, .align = imp_attr_i(n, "align_corners", 0) != 0,
          .N = tx.dims[0]};
  int64_t C = tx.dims[1], P = 1, Q = 1;
  for (int i = 0; i < r; i++)
    if (tx.dims[2 + i] == 0) IMP_FAIL(INVALID_ARGUMENT, "X %s has an empty spatial dim %d: there is nothing to sample", RLX_TYPE_STR(&tx), i);
  for (int i = 0; i < r; i++) P *= tx.dims[2 + i], Q *= tg.dims[1 + i];
  G.Q = Q;
  rlx_value x, grid;
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(imp_in(I, n, 1, &grid));
  RLX_TRY(imp_cast(I, n, x, G.ft, &x));
  RLX_TRY(imp_cast(I, n, grid, G.ft, &grid));
  RLX_TRY(imp_reshape(I, n, x, 3, (int64_t[]){G.N, C, P}, &x));
  RLX_TRY(imp_reshape(I, n, grid, 3, (int64_t[]){G.N, Q, r}, &grid));
  rlx_value idx[3][GS_MAX_TAPS], ok[3][GS_MAX_TAPS], w[3][GS_MAX_TAPS];
  int nt[3];
  for (int i = 0; i < r; i++) { /* grid's last axis lists the spatial dims innermost first */
    rlx_value g;
    RLX_TRY(imp_narrow(I, n, grid, 2, r - 1 - i, 1, &g));
    RLX_TRY(imp_reshape(I, n, g, 2, (int64_t[]){G.N, Q}, &g));
    RLX_TRY(dim_taps(&G, mode, g, tx.dims[2 + i], idx[i], ok[i], w[i], &nt[i]));
  }
  int combos = 1;
  for (int i = 0; i < r; i++) combos *= nt[i];
  rlx_value y = 0, zero;
  RLX_TRY(imp_scalar(I, 0, G.ft, &zero));
  for (int cmb = 0; cmb < combos; cmb++) {
    rlx_value lin = 0, wt = 0, valid = 0;
    int rest = cmb;
    int64_t stride = P;
    for (int i = 0; i < r; i++) {
      int k = rest % nt[i];
      rest /= nt[i];
      stride /= tx.dims[2 + i];
      rlx_value term;
      RLX_TRY(sc(&G, RLX_OP_MUL, idx[i][k], (double)stride, &term));
      if (lin) RLX_TRY(bin(&G, RLX_OP_ADD, lin, term, &lin));
      else lin = term;
      if (wt) RLX_TRY(bin(&G, RLX_OP_MUL, wt, w[i][k], &wt));
      else wt = w[i][k];
      if (ok[i][k]) {
        if (valid) RLX_TRY(bin(&G, RLX_OP_AND, valid, ok[i][k], &valid));
        else valid = ok[i][k];
      }
    }
    if (valid) {
      rlx_value ws = wt;
      if (imp_type(I, wt)->rank == 0) RLX_TRY(imp_expand(I, n, ws, 2, (int64_t[]){G.N, Q}, &ws)); /* nearest: a scalar weight */
      RLX_TRY(imp_select(I, n, valid, ws, zero, &wt));
    }
    rlx_value g;
    RLX_TRY(imp_reshape(I, n, lin, 3, (int64_t[]){G.N, 1, Q}, &lin));
    RLX_TRY(imp_expand(I, n, lin, 3, (int64_t[]){G.N, C, Q}, &lin));
    RLX_TRY(imp_gather(I, n, RLX_OP_GATHER_ELEMENTS, x, lin, 2, &g));
    if (imp_type(I, wt)->rank) RLX_TRY(imp_reshape(I, n, wt, 3, (int64_t[]){G.N, 1, Q}, &wt));
    if (mode || valid) RLX_TRY(bin(&G, RLX_OP_MUL, g, wt, &g));
    if (y) RLX_TRY(bin(&G, RLX_OP_ADD, y, g, &y));
    else y = g;
  }
  int64_t od[RLX_MAX_RANK] = {G.N, C};
  for (int i = 0; i < r; i++) od[2 + i] = tg.dims[1 + i];
  RLX_TRY(imp_reshape(I, n, y, r + 2, od, &y));
  RLX_TRY(imp_cast(I, n, y, tx.dtype, &y));
  return imp_out(I, n, 0, y);
}

/* AffineGrid(theta [N, r, r+1], size [N, C, D1..Dr]) -> grid [N, D1..Dr, r]: the normalized base
 * grid (x innermost; align_corners: linspace(-1, 1, L), else (2 i + 1) / L - 1) with a ones
 * column, times theta^T. */
rlx_status *rlx_onnx_map_affine_grid(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type tt;
  RLX_TRY(imp_in_type(I, n, 0, true, &tt));
  int64_t *size;
  size_t ns;
  RLX_TRY(imp_const_ints(I, n, 1, "size", &size, &ns));
  int r = (int)ns - 2;
  rlx_status *st = NULL;
  if (r < 2 || r > 3 || tt.rank != 3 || tt.dims[1] != r || tt.dims[2] != r + 1 || tt.dims[0] != size[0])
    st = RLX_ERR(INVALID_ARGUMENT, "theta %s and size (%zu entries) must be [N,r,r+1] and [N,C,D1..Dr], r = 2 or 3", RLX_TYPE_STR(&tt), ns);
  bool align = imp_attr_i(n, "align_corners", 0) != 0;
  int64_t M = 0;
  if (!st) st = imp_table_size("the AffineGrid base grid", sizeof(double) * (size_t)(r + 1), r, size + 2, &M);
  double *base = st ? NULL : malloc(sizeof(double) * (size_t)(M * (r + 1)));
  if (!st && !base) st = RLX_OOM();
  for (int64_t m = 0; !st && m < M; m++) { /* row m = (x, y[, z], 1) of output position m */
    int64_t rest = m;
    for (int i = r - 1; i >= 0; i--) { /* spatial dim i (D1 outermost); x is the last */
      int64_t L = size[2 + i], k = rest % L;
      rest /= L;
      double v = align ? (L > 1 ? -1 + 2.0 * (double)k / (double)(L - 1) : 0) : (2.0 * (double)k + 1) / (double)L - 1;
      base[m * (r + 1) + (r - 1 - i)] = v;
    }
    base[m * (r + 1) + r] = 1;
  }
  rlx_value b, th, y;
  int64_t od[RLX_MAX_RANK] = {size[0]};
  for (int i = 0; i < r; i++) od[1 + i] = size[2 + i];
  od[r + 1] = r;
  if (!st) st = imp_host_const(I, RLX_DTYPE_F64, 2, (int64_t[]){M, r + 1}, base, &b);
  free(base);
  free(size);
  RLX_TRY(st);
  RLX_TRY(imp_cast(I, n, b, tt.dtype, &b));
  RLX_TRY(imp_in(I, n, 0, &th));
  RLX_TRY(imp_transpose(I, n, th, 3, (int64_t[]){0, 2, 1}, &th));
  RLX_TRY(imp_bin(I, n, RLX_OP_MATMUL, b, th, &y)); /* [M, r+1] @ [N, r+1, r] -> [N, M, r] */
  RLX_TRY(imp_reshape(I, n, y, r + 2, od, &y));
  return imp_out(I, n, 0, y);
}

/* ---- RoiAlign ---- */

/* The bilinear taps of one sample point (y, x) of a [H, W] map (the reference's
 * pre_calc_for_bilinear_interpolate): points outside [-1, H] x [-1, W] weigh 0. */
static void roi_taps(double y, double x, int64_t H, int64_t W, int64_t *pos, double *w) {
  if (!(y >= -1.0 && y <= (double)H && x >= -1.0 && x <= (double)W)) {
    for (int k = 0; k < 4; k++) pos[k] = 0, w[k] = 0;
    return;
  }
  y = y < 0 ? 0 : y, x = x < 0 ? 0 : x;
  int64_t yl = (int64_t)y, xl = (int64_t)x, yh, xh;
  if (yl >= H - 1) yh = yl = H - 1, y = (double)yl;
  else yh = yl + 1;
  if (xl >= W - 1) xh = xl = W - 1, x = (double)xl;
  else xh = xl + 1;
  double ly = y - (double)yl, lx = x - (double)xl, hy = 1 - ly, hx = 1 - lx;
  pos[0] = yl * W + xl, pos[1] = yl * W + xh, pos[2] = yh * W + xl, pos[3] = yh * W + xh;
  w[0] = hy * hx, w[1] = hy * lx, w[2] = ly * hx, w[3] = ly * lx;
}

/* Roi r as (x0, y0, width, height) in pixels of X: half_pixel shifts it by half a pixel,
 * output_half_pixel makes its sides at least 1. */
static void roi_box(const rlx_tensor *rois, int64_t r, double scale, bool half, double b[4]) {
  double off = half ? 0.5 : 0;
  b[0] = rlx_tensor_get_f64(rois, 4 * r) * scale - off, b[1] = rlx_tensor_get_f64(rois, 4 * r + 1) * scale - off;
  b[2] = rlx_tensor_get_f64(rois, 4 * r + 2) * scale - off - b[0], b[3] = rlx_tensor_get_f64(rois, 4 * r + 3) * scale - off - b[1];
  if (!half) b[2] = b[2] > 1 ? b[2] : 1, b[3] = b[3] > 1 ? b[3] : 1;
}

/* Samples per bin along one axis: sampling_ratio, or else ceil(extent / pooled) (none for an empty
 * or negative extent; at most 2^31, so that a bin's grid count fits int64). */
static int64_t roi_grid(double extent, int64_t pooled, int64_t sr) {
  double g = sr > 0 ? (double)sr : ceil(extent / (double)pooled);
  return g > 0x1p31 ? (int64_t)1 << 31 : g > 0 ? (int64_t)g : 0;
}

/* RoiAlign(X [N,C,H,W], rois [R,4], batch_indices [R]) with rois and batch indices known at import
 * time (the adaptive sampling grid depends on them): per bin, samples on a regular grid inside it,
 * each bilinear-interpolated (4 taps); avg: the mean over samples; max: the maximum over samples
 * of the largest weighted tap (the ONNX reference / ONNX Runtime reading). The taps of every roi
 * become one GatherElements on x[batch_indices] with per-tap weights. */
rlx_status *rlx_onnx_map_roi_align(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type tx;
  RLX_TRY(imp_in_type(I, n, 0, true, &tx));
  const rlx_tensor *rois = imp_const(I, n, 1), *bidx = imp_const(I, n, 2);
  if (!rois || !bidx) IMP_FAIL(UNIMPLEMENTED, "RoiAlign needs rois and batch_indices known at import time");
  if (tx.rank != 4 || !rlx_dtype_is_float(tx.dtype) || rlx_tensor_rank(rois) != 2 || rlx_tensor_dims(rois)[1] != 4 ||
      rlx_tensor_numel(bidx) != rlx_tensor_dims(rois)[0])
    IMP_FAIL(INVALID_ARGUMENT, "X %s, rois and batch_indices must be float [N,C,H,W], [R,4] and [R]", RLX_TYPE_STR(&tx));
  char mb[8], cb[24];
  bool avg = !strcmp(imp_attr_s(n, "mode", "avg", mb, sizeof mb), "avg");
  bool half = !strcmp(imp_attr_s(n, "coordinate_transformation_mode", I->opset >= 16 ? "half_pixel" : "output_half_pixel", cb, sizeof cb),
                      "half_pixel");
  int64_t PH = imp_attr_i(n, "output_height", 1), PW = imp_attr_i(n, "output_width", 1), sr = imp_attr_i(n, "sampling_ratio", 0);
  double scale = imp_attr_f(n, "spatial_scale", 1.0);
  int64_t R = rlx_tensor_dims(rois)[0], N = tx.dims[0], C = tx.dims[1], H = tx.dims[2], W = tx.dims[3], bins, slots;
  if (PH < 1 || PW < 1 || sr < 0) IMP_FAIL(INVALID_ARGUMENT, "output_height/width must be >= 1 and sampling_ratio >= 0");
  RLX_TRY(imp_table_size("the RoiAlign bins", 1, 2, (int64_t[]){PH, PW}, &bins));
  /* sampling grids per roi, and the largest sample count (the padded width of the tap table) */
  int64_t smax = 1;
  for (int64_t r = 0; r < R; r++) {
    double box[4];
    roi_box(rois, r, scale, half, box);
    if (!isfinite(box[0]) || !isfinite(box[1]) || !isfinite(box[2]) || !isfinite(box[3]))
      IMP_FAIL(INVALID_ARGUMENT, "roi %lld times spatial_scale %g is not finite", (long long)r, scale);
    int64_t gh = roi_grid(box[3], PH, sr), gw = roi_grid(box[2], PW, sr);
    if (gh * gw > smax) smax = gh * gw;
  }
  /* per sample slot: 4 tap positions and weights */
  RLX_TRY(imp_table_size("the RoiAlign sample table", 4 * (sizeof(int64_t) + sizeof(double)), 3, (int64_t[]){R, bins, smax}, &slots));
  size_t taps = (size_t)slots * 4;
  int64_t *pos = calloc(taps, sizeof(int64_t)), *bi = malloc(sizeof(int64_t) * (size_t)(R ? R : 1));
  double *wt = calloc(taps, sizeof(double));
  unsigned char *real = calloc((size_t)(slots ? slots : 1), 1); /* samples that exist (not padding) */
  if (!pos || !wt || !bi || !real) {
    free(pos), free(wt), free(bi), free(real);
    return RLX_OOM();
  }
  rlx_status *st = NULL;
  for (int64_t r = 0; !st && r < R; r++) {
    bi[r] = imp_tensor_i64(bidx, r);
    if (bi[r] < 0 || bi[r] >= N) st = RLX_ERR(OUT_OF_RANGE, "batch_indices[%lld] = %lld for N = %lld", (long long)r, (long long)bi[r], (long long)N);
    double box[4];
    roi_box(rois, r, scale, half, box);
    double x0 = box[0], y0 = box[1], rw = box[2], rh = box[3], bh = rh / (double)PH, bw = rw / (double)PW;
    int64_t gh = roi_grid(rh, PH, sr), gw = roi_grid(rw, PW, sr);
    double cnt = (double)(gh * gw > 1 ? gh * gw : 1);
    for (int64_t b = 0; b < bins; b++) {
      int64_t ph = b / PW, pw = b % PW, s = 0;
      size_t base = (size_t)((r * bins + b) * smax);
      if (gh * gw <= 0) real[base] = 1; /* no samples: one weightless sample gives 0 */
      for (int64_t iy = 0; iy < gh; iy++)
        for (int64_t ix = 0; ix < gw; ix++, s++) {
          double y = y0 + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh, x = x0 + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
          roi_taps(y, x, H, W, pos + 4 * (base + (size_t)s), wt + 4 * (base + (size_t)s));
          if (avg)
            for (int k = 0; k < 4; k++) wt[4 * (base + (size_t)s) + (size_t)k] /= cnt;
          real[base + (size_t)s] = 1;
        }
    }
  }
  rlx_value x, ib, ip, w, m, y;
  int64_t T = bins * smax * 4;
  if (!st) st = imp_host_const(I, RLX_DTYPE_I64, 1, &R, bi, &ib);
  if (!st) st = imp_host_const(I, RLX_DTYPE_I64, 3, (int64_t[]){R, 1, T}, pos, &ip);
  if (!st) st = imp_host_const(I, RLX_DTYPE_F64, 3, (int64_t[]){R, 1, T}, wt, &w);
  if (!st && !avg) st = imp_host_const(I, RLX_DTYPE_BOOL, 4, (int64_t[]){R, 1, bins, smax}, real, &m);
  free(pos), free(wt), free(bi), free(real);
  RLX_TRY(st);
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(imp_reshape(I, n, x, 3, (int64_t[]){N, C, H * W}, &x));
  RLX_TRY(imp_gather(I, n, RLX_OP_GATHER, x, ib, 0, &x)); /* [R, C, HW] */
  RLX_TRY(imp_expand(I, n, ip, 3, (int64_t[]){R, C, T}, &ip));
  RLX_TRY(imp_gather(I, n, RLX_OP_GATHER_ELEMENTS, x, ip, 2, &y)); /* [R, C, T] */
  RLX_TRY(imp_cast(I, n, w, tx.dtype, &w));
  RLX_TRY(imp_bin(I, n, RLX_OP_MUL, y, w, &y));
  RLX_TRY(imp_reshape(I, n, y, 5, (int64_t[]){R, C, bins, smax, 4}, &y));
  int64_t ax34[2] = {3, 4}, ax4 = 4, ax3 = 3;
  if (avg) {
    RLX_TRY(imp_reduce(I, n, "sum", y, 2, ax34, false, &y));
  } else {
    rlx_value lo;
    RLX_TRY(imp_reduce(I, n, "max", y, 1, &ax4, false, &y));
    RLX_TRY(imp_scalar(I, -INFINITY, tx.dtype, &lo));
    RLX_TRY(imp_select(I, n, m, y, lo, &y));
    RLX_TRY(imp_reduce(I, n, "max", y, 1, &ax3, false, &y));
  }
  RLX_TRY(imp_reshape(I, n, y, 4, (int64_t[]){R, C, PH, PW}, &y));
  return imp_out(I, n, 0, y);
}

/* ---- DeformConv ---- */

/* The bilinear sample of xg [N, Cg, H*W] at pixel coordinates (y, x) [N, P] with zeros outside
 * the map (GridSample linear / zeros / align_corners, as the ONNX reference samples), times
 * `scale` [N, P] (the modulation mask, or 0 for none) -> [N, Cg, P]. */
static rlx_status *bilinear_zeros(gs *G, rlx_value xg, rlx_value y, rlx_value x, rlx_value scale, int64_t Cg, int64_t H, int64_t W,
                                  rlx_value *out) {
  rlx_imp *I = G->I;
  const Onnx__NodeProto *n = G->n;
  rlx_value y0, x0, ty, tx, wy[2], wx[2], iy[2], ix[2], oky[2], okx[2], acc = 0, zero;
  RLX_TRY(imp_un(I, n, RLX_OP_FLOOR, y, &y0));
  RLX_TRY(imp_un(I, n, RLX_OP_FLOOR, x, &x0));
  RLX_TRY(bin(G, RLX_OP_SUB, y, y0, &ty));
  RLX_TRY(bin(G, RLX_OP_SUB, x, x0, &tx));
  RLX_TRY(sc(G, RLX_OP_MUL, ty, -1, &wy[0]));
  RLX_TRY(sc(G, RLX_OP_ADD, wy[0], 1, &wy[0]));
  RLX_TRY(sc(G, RLX_OP_MUL, tx, -1, &wx[0]));
  RLX_TRY(sc(G, RLX_OP_ADD, wx[0], 1, &wx[0]));
  wy[1] = ty, wx[1] = tx;
  G->pad = PAD_ZEROS;
  for (int t = 0; t < 2; t++) {
    rlx_value jy, jx;
    RLX_TRY(sc(G, RLX_OP_ADD, y0, t, &jy));
    RLX_TRY(sc(G, RLX_OP_ADD, x0, t, &jx));
    RLX_TRY(fix_tap(G, jy, H, 0, (double)(H - 1), &iy[t], &oky[t]));
    RLX_TRY(fix_tap(G, jx, W, 0, (double)(W - 1), &ix[t], &okx[t]));
  }
  RLX_TRY(imp_scalar(I, 0, G->ft, &zero));
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++) {
      rlx_value lin, w, ok, g;
      RLX_TRY(sc(G, RLX_OP_MUL, iy[a], (double)W, &lin));
      RLX_TRY(bin(G, RLX_OP_ADD, lin, ix[b], &lin));
      RLX_TRY(bin(G, RLX_OP_MUL, wy[a], wx[b], &w));
      RLX_TRY(bin(G, RLX_OP_AND, oky[a], okx[b], &ok));
      RLX_TRY(imp_select(I, n, ok, w, zero, &w));
      if (scale) RLX_TRY(bin(G, RLX_OP_MUL, w, scale, &w));
      RLX_TRY(imp_reshape(I, n, lin, 3, (int64_t[]){G->N, 1, G->Q}, &lin));
      RLX_TRY(imp_expand(I, n, lin, 3, (int64_t[]){G->N, Cg, G->Q}, &lin));
      RLX_TRY(imp_gather(I, n, RLX_OP_GATHER_ELEMENTS, xg, lin, 2, &g));
      RLX_TRY(imp_reshape(I, n, w, 3, (int64_t[]){G->N, 1, G->Q}, &w));
      RLX_TRY(bin(G, RLX_OP_MUL, g, w, &g));
      if (acc) RLX_TRY(bin(G, RLX_OP_ADD, acc, g, &acc));
      else acc = g;
    }
  *out = acc;
  return NULL;
}

/* DeformConv (ONNX-19/22, 2-D): every kernel tap k of output position (i, j) samples x
 * bilinearly (zeros outside) at (i sH - pad_top + kh dH + dy, j sW - pad_left + kw dW + dx) with
 * the offsets of its offset group, scaled by the mask when given; the sampled columns
 * [N, C, K, P] then meet the weights group by group in a MatMul, plus the bias. */
rlx_status *rlx_onnx_map_deform_conv(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type tx, tw, to;
  RLX_TRY(imp_in_type(I, n, 0, true, &tx));
  RLX_TRY(imp_in_type(I, n, 1, true, &tw));
  RLX_TRY(imp_in_type(I, n, 2, true, &to));
  int64_t grp = imp_attr_i(n, "group", 1), og = imp_attr_i(n, "offset_group", 1);
  if (tx.rank != 4) IMP_FAIL(UNIMPLEMENTED, "DeformConv of rank %d (2-D only)", tx.rank);
  int64_t N = tx.dims[0], C = tx.dims[1], H = tx.dims[2], W = tx.dims[3], OC = tw.dims[0], kH = tw.dims[2], kW = tw.dims[3], cw, K, ogK2;
  if (tw.rank != 4 || to.rank != 4 || grp < 1 || og < 1 || !rlx_mul_i64(tw.dims[1], grp, &cw) || C != cw || OC % grp || C % og ||
      !rlx_mul_i64(kH, kW, &K) || !rlx_mul_i64(og, 2, &ogK2) || !rlx_mul_i64(ogK2, K, &ogK2) || to.dims[1] != ogK2 || to.dims[0] != N ||
      !rlx_dtype_is_float(tx.dtype))
    IMP_FAIL(INVALID_ARGUMENT, "X %s, W %s and offset %s disagree with group %lld / offset_group %lld", RLX_TYPE_STR(&tx), RLX_TYPE_STR(&tw),
             RLX_TYPE_STR(&to), (long long)grp, (long long)og);
  size_t ns, nd, np;
  const int64_t *st = imp_attr_ints(n, "strides", &ns), *dl = imp_attr_ints(n, "dilations", &nd), *pd = imp_attr_ints(n, "pads", &np);
  int64_t sH = ns == 2 ? st[0] : 1, sW = ns == 2 ? st[1] : 1, dH = nd == 2 ? dl[0] : 1, dW = nd == 2 ? dl[1] : 1;
  int64_t pT = np == 4 ? pd[0] : 0, pL = np == 4 ? pd[1] : 0, oH = to.dims[2], oW = to.dims[3], P;
  /* nodes per kernel tap and offset group: one bilinear sample of the input */
  if (K * og > RLX_ONNX_MAX_UNROLL)
    IMP_FAIL(UNIMPLEMENTED, "DeformConv over %lld kernel taps times %lld offset groups (at most %d)", (long long)K, (long long)og, RLX_ONNX_MAX_UNROLL);
  RLX_TRY(imp_table_size("the DeformConv sampling grid", 2 * sizeof(double), 2, (int64_t[]){oH, oW}, &P));
  gs G = {.I = I, .n = n, .ft = tx.dtype, .N = N, .Q = P};
  rlx_value x, off, mask = 0, *cols = malloc(sizeof(rlx_value) * (size_t)(K * og + K));
  if (!cols) return RLX_OOM();
  rlx_value *ks = cols + K * og;
  double *base = malloc(sizeof(double) * (size_t)(2 * P));
  rlx_status *e = base ? NULL : RLX_OOM();
  if (!e) e = imp_in(I, n, 0, &x);
  if (!e) e = imp_reshape(I, n, x, 3, (int64_t[]){N, C, H * W}, &x);
  if (!e) e = imp_in(I, n, 2, &off);
  if (!e) e = imp_reshape(I, n, off, 3, (int64_t[]){N, og * 2 * K, P}, &off);
  if (!e && imp_has(n, 4)) {
    e = imp_in(I, n, 4, &mask);
    if (!e) e = imp_reshape(I, n, mask, 3, (int64_t[]){N, og * K, P}, &mask);
  }
  for (int64_t k = 0; !e && k < K; k++) {
    int64_t kh = k / kW, kw = k % kW;
    for (int64_t p = 0; p < P; p++) { /* in double: the attributes may be anything */
      base[p] = (double)sH * (double)(p / oW) + (double)kh * (double)dH - (double)pT;
      base[P + p] = (double)sW * (double)(p % oW) + (double)kw * (double)dW - (double)pL;
    }
    rlx_value by, bx;
    e = imp_host_const(I, RLX_DTYPE_F64, 2, (int64_t[]){1, P}, base, &by);
    if (!e) e = imp_host_const(I, RLX_DTYPE_F64, 2, (int64_t[]){1, P}, base + P, &bx);
    if (!e) e = imp_cast(I, n, by, tx.dtype, &by);
    if (!e) e = imp_cast(I, n, bx, tx.dtype, &bx);
    for (int64_t g = 0; !e && g < og; g++) { /* offsets: [og][K][dy, dx] */
      rlx_value dy, dx, y, xx, m = 0, xg;
      int64_t cg = C / og;
      e = imp_narrow(I, n, off, 1, (g * K + k) * 2, 1, &dy);
      if (!e) e = imp_narrow(I, n, off, 1, (g * K + k) * 2 + 1, 1, &dx);
      if (!e) e = imp_reshape(I, n, dy, 2, (int64_t[]){N, P}, &dy);
      if (!e) e = imp_reshape(I, n, dx, 2, (int64_t[]){N, P}, &dx);
      if (!e) e = imp_bin(I, n, RLX_OP_ADD, by, dy, &y);
      if (!e) e = imp_bin(I, n, RLX_OP_ADD, bx, dx, &xx);
      if (!e && mask) {
        e = imp_narrow(I, n, mask, 1, g * K + k, 1, &m);
        if (!e) e = imp_reshape(I, n, m, 2, (int64_t[]){N, P}, &m);
      }
      if (!e) e = imp_narrow(I, n, x, 1, g * cg, cg, &xg);
      if (!e) e = bilinear_zeros(&G, xg, y, xx, m, cg, H, W, &cols[k * og + g]);
    }
    if (!e) e = imp_concat_many(I, n, cols + k * og, (size_t)og, 1, &ks[k]);
    if (!e) e = imp_reshape(I, n, ks[k], 4, (int64_t[]){N, C, 1, P}, &ks[k]);
  }
  rlx_value colv, w, y = 0;
  if (!e) e = imp_concat_many(I, n, ks, (size_t)K, 2, &colv); /* [N, C, K, P] */
  free(cols), free(base);
  RLX_TRY(e);
  RLX_TRY(imp_in(I, n, 1, &w));
  int64_t cpg = C / grp, ocg = OC / grp;
  rlx_value outs[256];
  if (grp > 256) IMP_FAIL(UNIMPLEMENTED, "DeformConv with %lld groups", (long long)grp);
  for (int64_t g = 0; g < grp; g++) {
    rlx_value cg, wg;
    RLX_TRY(imp_narrow(I, n, colv, 1, g * cpg, cpg, &cg));
    RLX_TRY(imp_reshape(I, n, cg, 3, (int64_t[]){N, cpg * K, P}, &cg));
    RLX_TRY(imp_narrow(I, n, w, 0, g * ocg, ocg, &wg));
    RLX_TRY(imp_reshape(I, n, wg, 2, (int64_t[]){ocg, cpg * K}, &wg));
    RLX_TRY(imp_bin(I, n, RLX_OP_MATMUL, wg, cg, &outs[g])); /* [N, ocg, P] */
  }
  RLX_TRY(imp_concat_many(I, n, outs, (size_t)grp, 1, &y));
  if (imp_has(n, 3)) {
    rlx_value b;
    RLX_TRY(imp_in(I, n, 3, &b));
    RLX_TRY(imp_reshape(I, n, b, 2, (int64_t[]){OC, 1}, &b));
    RLX_TRY(imp_bin(I, n, RLX_OP_ADD, y, b, &y));
  }
  RLX_TRY(imp_reshape(I, n, y, 4, (int64_t[]){N, OC, oH, oW}, &y));
  return imp_out(I, n, 0, y);
}
