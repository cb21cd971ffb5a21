/* infer_conv.c: inference for Conv, ConvTranspose, Pool and Resize. */
#include "ir/infer_util.h"


void rlx_conv_list_get(const rlx_node *n, const char *name, int nsp, int64_t dflt, int64_t *out) {
  size_t k;
  const int64_t *v = rlx_node_is(n, name, &k);
  int want = strcmp(name, "pads") == 0 ? 2 * nsp : nsp;
  for (int i = 0; i < want; i++) out[i] = k == (size_t)want ? v[i] : dflt;
}

rlx_status *rlx_conv_list(const rlx_node *n, const char *name, int nsp, int64_t dflt, int64_t *out) {
  size_t k;
  rlx_node_is(n, name, &k);
  int want = strcmp(name, "pads") == 0 ? 2 * nsp : nsp;
  if (k && k != (size_t)want) FAIL(INVALID_ARGUMENT, "%s has %zu entries; %d spatial dims need %d", name, k, nsp, want);
  rlx_conv_list_get(n, name, nsp, dflt, out);
  return NULL;
}

static rlx_status *spatial(rlx_infer_ctx *c, int64_t *s, int64_t *p, int64_t *d, int nsp) {
  RLX_TRY(rlx_conv_list(c->n, "strides", nsp, 1, s));
  RLX_TRY(rlx_conv_list(c->n, "pads", nsp, 0, p));
  RLX_TRY(rlx_conv_list(c->n, "dilations", nsp, 1, d));
  for (int i = 0; i < nsp; i++) {
    if (s[i] <= 0 || d[i] <= 0) FAIL(INVALID_ARGUMENT, "strides and dilations must be > 0");
    if (p[i] < 0 || p[i + nsp] < 0) FAIL(INVALID_ARGUMENT, "pads must be >= 0");
  }
  return NULL;
}

static rlx_status *conv(rlx_infer_ctx *c, bool transpose) {
  const rlx_type *x = IN(0), *w = IN(1);
  if (transpose || !rlx_dtype_is_int(x->dtype)) RLX_TRY(infer_need_float(c, 0));
  for (int i = 1; i < NIN; i++) RLX_TRY(infer_same_dtype(c, 0, i));
  int nsp = x->rank - 2;
  if (nsp < 1 || nsp > 3) FAIL(UNIMPLEMENTED, "input must be [N,C,d1..dn] with n = 1..3, got %s", TSTR(x));
  if (w->rank != x->rank) FAIL(INVALID_ARGUMENT, "weight %s must have the rank of input %s", TSTR(w), TSTR(x));
  int64_t g = AI("group");
  if (g <= 0) FAIL(INVALID_ARGUMENT, "group must be > 0");
  int64_t s[3], p[6], d[3], op[3] = {0, 0, 0};
  RLX_TRY(spatial(c, s, p, d, nsp));
  /* the weight's channels times group, overflow-checked (a symbolic dim stays itself for group 1,
   * else RLX_DIM_DYNAMIC) */
  int64_t ci = x->dims[1], co, wg = g == 1 ? w->dims[1] : RLX_DIM_DYNAMIC;
  if (w->dims[1] >= 0 && !rlx_mul_i64(w->dims[1], g, &wg))
    FAIL(RESOURCE_EXHAUSTED, "weight %s: channels %lld times group %lld overflow int64", TSTR(w), (long long)w->dims[1], (long long)g);
  if (!transpose) {
    rlx_op act;
    RLX_TRY(rlx_infer_activation(AS("activation"), &act));
    if (act != RLX_OP_COUNT && !rlx_dtype_is_float(x->dtype))
      FAIL(INVALID_ARGUMENT, "activation %s on integer input %s", AS("activation"), TSTR(x));
    if (ci >= 0 && (ci % g || !rlx_dim_compatible(wg, ci)))
      FAIL(INVALID_ARGUMENT, "weight %s needs %lld input channels / group %lld; input %s", TSTR(w), (long long)ci, (long long)g, TSTR(x));
    if (w->dims[0] % g) FAIL(INVALID_ARGUMENT, "output channels %lld not divisible by group %lld", (long long)w->dims[0], (long long)g);
    co = w->dims[0];
  } else {
    RLX_TRY(rlx_conv_list(c->n, "output_padding", nsp, 0, op));
    if (!rlx_dim_compatible(w->dims[0], ci) || (ci >= 0 && ci % g))
      FAIL(INVALID_ARGUMENT, "weight %s must be [Ci=%lld, Co/group, k..] with group %lld", TSTR(w), (long long)ci, (long long)g);
    co = wg;
    for (int i = 0; i < nsp; i++)
      if (op[i] < 0 || (op[i] >= s[i] && op[i] >= d[i])) FAIL(INVALID_ARGUMENT, "output_padding %lld must be smaller than stride or dilation", (long long)op[i]);
  }
  if (NIN == 3 && (IN(2)->rank != 1 || !rlx_dim_compatible(IN(2)->dims[0], co)))
    FAIL(INVALID_ARGUMENT, "bias must be [%lld], got %s", (long long)co, TSTR(IN(2)));
  rlx_type *y = OUT(0);
  *y = *x;
  y->dims[1] = co;
  for (int i = 0; i < nsp; i++) {
    int64_t in = x->dims[2 + i], k = w->dims[2 + i];
    if (in < 0) {
      y->dims[2 + i] = RLX_DIM_DYNAMIC;
      continue;
    }
    /* in 128-bit arithmetic: attributes up to INT64_MAX cannot overflow these sums */
    __int128 o, padded = (__int128)in + p[i] + p[i + nsp];
    if (!transpose) {
      __int128 span = padded - (__int128)d[i] * (k - 1) - 1;
      if (span < 0) FAIL(INVALID_ARGUMENT, "kernel %lld (dilation %lld) is larger than padded spatial dim %d (%lld + %lld + %lld)", (long long)k,
                         (long long)d[i], i, (long long)in, (long long)p[i], (long long)p[i + nsp]);
      o = span / s[i] + 1;
    } else {
      o = (__int128)s[i] * (in - 1) + op[i] + (__int128)d[i] * (k - 1) + 1 - p[i] - p[i + nsp];
      if (o < 0) FAIL(INVALID_ARGUMENT, "pads exceed the transposed output on spatial dim %d", i);
    }
    if (o > INT64_MAX) FAIL(RESOURCE_EXHAUSTED, "spatial dim %d of the output overflows int64", i);
    y->dims[2 + i] = (int64_t)o;
  }
  return NULL;
}

/* Output size of one pooled dim (ONNX MaxPool/AveragePool, ceil_mode included). */
int64_t rlx_pool_out(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d, bool ceil_mode) {
  __int128 span = (__int128)in + pb + pe - (__int128)d * (k - 1) - 1; /* 128-bit: no overflow from attributes */
  if (span < 0) return -1;
  __int128 o = ceil_mode ? (span + s - 1) / s + 1 : span / s + 1;
  if (ceil_mode && (o - 1) * s >= (__int128)in + pb) o--; /* the last window must start inside the input or the begin pad */
  return o > INT64_MAX ? -1 : (int64_t)o;
}

rlx_status *rlx_pool_fits(int dim, int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d) {
  if ((__int128)in + pb + pe + s <= INT64_MAX && (__int128)k * d <= INT64_MAX) return NULL;
  FAIL(RESOURCE_EXHAUSTED, "spatial dim %d: size %lld, pads %lld + %lld, stride %lld, kernel %lld, dilation %lld overflow int64", dim,
       (long long)in, (long long)pb, (long long)pe, (long long)s, (long long)k, (long long)d);
}

static rlx_status *pool(rlx_infer_ctx *c) {
  const rlx_type *x = IN(0);
  if (rlx_reduce_kind(AS("kind")) < 0) FAIL(INVALID_ARGUMENT, "kind '%s' (expected sum, mean, max, min or prod)", AS("kind"));
  if (!rlx_dtype_is_float(x->dtype) && !rlx_dtype_is_int(x->dtype)) FAIL(INVALID_ARGUMENT, "input must be numeric, got %s", TSTR(x));
  if (!strcmp(AS("kind"), "mean") && !rlx_dtype_is_float(x->dtype)) FAIL(INVALID_ARGUMENT, "mean pooling needs a float input, got %s", TSTR(x));
  int nsp = x->rank - 2;
  if (nsp < 1 || nsp > 3) FAIL(UNIMPLEMENTED, "input must be [N,C,d1..dn] with n = 1..3, got %s", TSTR(x));
  int64_t k[3], s[3], p[6], d[3];
  RLX_TRY(rlx_conv_list(c->n, "kernel_shape", nsp, -1, k));
  RLX_TRY(spatial(c, s, p, d, nsp));
  rlx_type *y = OUT(0);
  *y = *x;
  for (int i = 0; i < nsp; i++) {
    if (k[i] <= 0) FAIL(INVALID_ARGUMENT, "kernel_shape needs %d positive entries", nsp);
    __int128 window = (__int128)k[i] * d[i];
    if (p[i] >= window || p[i + nsp] >= window) FAIL(INVALID_ARGUMENT, "pads must be smaller than the window");
    int64_t in = x->dims[2 + i];
    if (in < 0) {
      y->dims[2 + i] = RLX_DIM_DYNAMIC;
      continue;
    }
    RLX_TRY(rlx_pool_fits(i, in, k[i], s[i], p[i], p[i + nsp], d[i]));
    int64_t o = rlx_pool_out(in, k[i], s[i], p[i], p[i + nsp], d[i], AI("ceil_mode") != 0);
    if (o < 1) FAIL(INVALID_ARGUMENT, "window %lld is larger than padded spatial dim %d", (long long)k[i], i);
    y->dims[2 + i] = o;
  }
  return NULL;
}

static int str_in(const char *s, const char *const *set, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(s, set[i]) == 0) return (int)i;
  return -1;
}

static rlx_status *resize(rlx_infer_ctx *c) {
  static const char *const modes[] = {"nearest", "linear", "cubic"};
  static const char *const ctms[] = {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "half_pixel_symmetric",
                                     "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  const rlx_type *x = IN(0);
  int mode = str_in(AS("mode"), modes, 3);
  if (mode < 0) FAIL(INVALID_ARGUMENT, "mode '%s' (expected nearest, linear or cubic)", AS("mode"));
  if (str_in(AS("coordinate_transformation_mode"), ctms, 7) < 0)
    FAIL(INVALID_ARGUMENT, "coordinate_transformation_mode '%s' (expected one of ONNX Resize's modes)", AS("coordinate_transformation_mode"));
  if (str_in(AS("nearest_mode"), nms, 4) < 0) FAIL(INVALID_ARGUMENT, "nearest_mode '%s'", AS("nearest_mode"));
  if (mode && !rlx_dtype_is_float(x->dtype)) FAIL(INVALID_ARGUMENT, "%s resize needs a float input, got %s", AS("mode"), TSTR(x));
  if (AI("antialias") && !mode) FAIL(INVALID_ARGUMENT, "antialias applies to linear and cubic modes only");
  rlx_type *y = OUT(0);
  *y = *x;
  int r;
  RLX_TRY(infer_attr_dims(c, "sizes", y->dims, &r));
  if (r != x->rank) FAIL(INVALID_ARGUMENT, "sizes has %d entries for rank %d", r, x->rank);
  size_t ns, nr;
  const double *sc = rlx_node_fs(c->n, "scales", &ns);
  rlx_node_fs(c->n, "roi", &nr);
  if (ns && ns != (size_t)r) FAIL(INVALID_ARGUMENT, "scales has %zu entries for rank %d", ns, r);
  if (nr && nr != 2 * (size_t)r) FAIL(INVALID_ARGUMENT, "roi has %zu entries; rank %d needs %d", nr, r, 2 * r);
  for (int i = 0; i < r; i++) {
    if (y->dims[i] == RLX_DIM_DYNAMIC) FAIL(INVALID_ARGUMENT, "sizes[%d] is negative", i);
    if (ns && !(sc[i] > 0)) FAIL(INVALID_ARGUMENT, "scales[%d] = %g is not positive", i, sc[i]);
    if (x->dims[i] == 0 && y->dims[i] != 0) FAIL(INVALID_ARGUMENT, "cannot resize the empty axis %d to %lld", i, (long long)y->dims[i]);
  }
  return NULL;
}

rlx_status *rlx_infer_conv(rlx_infer_ctx *c) {
  switch (OP) {
    case RLX_OP_CONV: return conv(c, false);
    case RLX_OP_CONV_TRANSPOSE: return conv(c, true);
    case RLX_OP_POOL: return pool(c);
    case RLX_OP_RESIZE: return resize(c);
    default: FAIL(INTERNAL, "not a conv op");
  }
}
