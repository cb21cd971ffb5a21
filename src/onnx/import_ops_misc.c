/* import_ops_misc.c: ONNX ops decomposed into rlx elementwise, reduction and gather ops: Det,
 * DynamicQuantizeLinear, MelWeightMatrix (a constant), TfIdfVectorizer, the ai.onnx.preview.training optimizers
 * (Adagrad, Adam, Momentum) and the ai.onnx.ml Binarizer and ArrayFeatureExtractor. Formulas from
 * the ONNX operator docs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/import_ops_importer.h"

/* ---- Det: LU factorization with partial pivoting, unrolled over the static size n ---- */

/* Det(A[.., n, n]) = sign * prod(pivots): at step k the row with the largest |A[i, k]| (i >= k)
 * swaps into row k (each real swap flips the sign), then rows below k subtract multiples of row
 * k. A zero pivot makes the determinant 0 (the division uses 1 instead). */
rlx_status *rlx_onnx_map_det(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type ta;
  RLX_TRY(imp_in_type(I, n, 0, true, &ta));
  if (ta.rank < 2 || ta.dims[ta.rank - 1] != ta.dims[ta.rank - 2] || !rlx_dtype_is_float(ta.dtype))
    IMP_FAIL(INVALID_ARGUMENT, "input must be float [.., n, n], got %s", RLX_TYPE_STR(&ta));
  int r = ta.rank;
  int64_t N = ta.dims[r - 1];
  rlx_value A, det, ar, one, neg, zero;
  RLX_TRY(imp_in(I, n, 0, &A));
  RLX_TRY(imp_scalar(I, 1, ta.dtype, &one));
  RLX_TRY(imp_scalar(I, -1, ta.dtype, &neg));
  RLX_TRY(imp_scalar(I, 0, ta.dtype, &zero));
  RLX_TRY(imp_arange(I, N, &ar));
  int64_t kd[RLX_MAX_RANK]; /* [.., 1, 1] */
  for (int i = 0; i < r; i++) kd[i] = i < r - 2 ? ta.dims[i] : 1;
  RLX_TRY(imp_expand(I, n, one, r, kd, &det));
  rlx_value arc; /* row numbers as a column [n, 1] */
  RLX_TRY(imp_reshape(I, n, ar, 2, (int64_t[]){N, 1}, &arc));
  for (int64_t k = 0; k < N; k++) {
    rlx_value c, a, below, p, idx, isp, swapped, piv, safe, f, rowk, t;
    /* pivot row: argmax |A[i, k]| over i >= k */
    RLX_TRY(imp_narrow(I, n, A, r - 1, k, 1, &c));
    RLX_TRY(imp_un(I, n, RLX_OP_ABS, c, &a));
    RLX_TRY(imp_with_scalar(I, n, RLX_OP_GREATER_EQUAL, arc, (double)k, &below));
    RLX_TRY(imp_select(I, n, below, a, neg, &a));
    rlx_attr am[3] = {RLX_ATTR_I("axis", r - 2), RLX_ATTR_I("keepdims", 1), RLX_ATTR_I("select_last_index", 0)};
    RLX_TRY(imp_add(I, n, RLX_OP_ARG_MAX, 1, &a, 3, am, &p)); /* [.., 1, 1] */
    /* swap rows k and p: row index i -> (i == k ? p : i == p ? k : i) */
    rlx_value isk, kk;
    RLX_TRY(imp_with_scalar(I, n, RLX_OP_EQUAL, arc, (double)k, &isk));
    RLX_TRY(imp_bin(I, n, RLX_OP_EQUAL, arc, p, &isp));
    RLX_TRY(imp_scalar(I, (double)k, RLX_DTYPE_I64, &kk));
    RLX_TRY(imp_select(I, n, isp, kk, arc, &idx));
    RLX_TRY(imp_select(I, n, isk, p, idx, &idx));
    int64_t full[RLX_MAX_RANK];
    memcpy(full, ta.dims, sizeof full);
    RLX_TRY(imp_expand(I, n, idx, r, full, &idx));
    RLX_TRY(imp_gather(I, n, RLX_OP_GATHER_ELEMENTS, A, idx, r - 2, &A));
    RLX_TRY(imp_with_scalar(I, n, RLX_OP_NOT_EQUAL, p, (double)k, &swapped));
    RLX_TRY(imp_select(I, n, swapped, neg, one, &t));
    RLX_TRY(imp_bin(I, n, RLX_OP_MUL, det, t, &det));
    /* the pivot joins the product; rows below k eliminate column k */
    RLX_TRY(imp_narrow(I, n, A, r - 2, k, 1, &rowk)); /* [.., 1, n] */
    RLX_TRY(imp_narrow(I, n, rowk, r - 1, k, 1, &piv)); /* [.., 1, 1] */
    RLX_TRY(imp_bin(I, n, RLX_OP_MUL, det, piv, &det));
    if (k + 1 == N) break;
    RLX_TRY(imp_with_scalar(I, n, RLX_OP_EQUAL, piv, 0, &t));
    RLX_TRY(imp_select(I, n, t, one, piv, &safe));
    RLX_TRY(imp_narrow(I, n, A, r - 1, k, 1, &c));
    RLX_TRY(imp_bin(I, n, RLX_OP_DIV, c, safe, &f)); /* [.., n, 1] */
    RLX_TRY(imp_with_scalar(I, n, RLX_OP_GREATER, arc, (double)k, &below));
    RLX_TRY(imp_select(I, n, below, f, zero, &f));
    RLX_TRY(imp_bin(I, n, RLX_OP_MUL, f, rowk, &t));
    RLX_TRY(imp_bin(I, n, RLX_OP_SUB, A, t, &A));
  }
  RLX_TRY(imp_reshape(I, n, det, r - 2, ta.dims, &det));
  return imp_out(I, n, 0, det);
}

/* ---- MelWeightMatrix: a constant [dft_length/2 + 1, num_mel_bins] ---- */

static rlx_status *known_scalar(rlx_imp *I, const Onnx__NodeProto *n, size_t k, double *v) {
  const rlx_tensor *t = imp_const(I, n, k);
  if (!t || rlx_tensor_numel(t) != 1) IMP_FAIL(UNIMPLEMENTED, "input %zu must be a scalar known at import time", k);
  *v = rlx_tensor_get_f64(t, 0);
  return NULL;
}

/* Triangular filters between mel-spaced bin edges: mel(f) = 2595 log10(1 + f/700) spaced evenly
 * from lower to upper edge in num_mel_bins + 2 steps, mapped back to dft bins as
 * floor((dft_length + 1) f / sample_rate) (the ONNX reference's reading). */
rlx_status *rlx_onnx_map_mel_weight_matrix(rlx_imp *I, const Onnx__NodeProto *n) {
  double nm, dl, sr, lo, hi;
  RLX_TRY(known_scalar(I, n, 0, &nm));
  RLX_TRY(known_scalar(I, n, 1, &dl));
  RLX_TRY(known_scalar(I, n, 2, &sr));
  RLX_TRY(known_scalar(I, n, 3, &lo));
  RLX_TRY(known_scalar(I, n, 4, &hi));
  if (!(nm >= 0 && dl >= 1 && sr > 0)) IMP_FAIL(INVALID_ARGUMENT, "num_mel_bins %g, dft_length %g, sample_rate %g", nm, dl, sr);
  int64_t mels = imp_sat_i64(nm), spec = imp_sat_i64(dl) / 2 + 1, cells;
  RLX_TRY(imp_table_size("the mel weight matrix", sizeof(double), 2, (int64_t[]){spec, mels}, &cells)); /* mels + 2 fits */
  rlx_dtype dt;
  RLX_TRY(rlx_onnx_dtype((int32_t)imp_attr_i(n, "output_datatype", 1), &dt));
  int64_t *edge = malloc(sizeof(int64_t) * (size_t)(mels + 2));
  double *w = calloc((size_t)(spec * (mels ? mels : 1)), sizeof(double));
  if (!edge || !w) {
    free(edge), free(w);
    return RLX_OOM();
  }
  double mlo = 2595 * log10(1 + lo / 700), mhi = 2595 * log10(1 + hi / 700), step = (mhi - mlo) / (double)(mels + 2);
  for (int64_t i = 0; i < mels + 2; i++) {
    double f = 700 * (pow(10, ((double)i * step + mlo) / 2595) - 1);
    edge[i] = imp_sat_i64(floor((dl + 1) * f / sr));
  }
  rlx_status *st = NULL;
  for (int64_t i = 0; !st && i < mels; i++) {
    int64_t l = edge[i], c = edge[i + 1], h = edge[i + 2];
    if (l < 0 || c >= spec || h > spec) {
      st = RLX_ERR(INVALID_ARGUMENT, "mel band %lld spans dft bins %lld..%lld outside [0, %lld)", (long long)i, (long long)l, (long long)h,
                   (long long)spec);
      break;
    }
    if (c == l) w[c * mels + i] = 1;
    for (int64_t j = l; c != l && j <= c; j++) w[j * mels + i] = (double)(j - l) / (double)(c - l);
    for (int64_t j = c; h > c && j < h; j++) w[j * mels + i] = (double)(h - j) / (double)(h - c);
  }
  rlx_value v;
  if (!st) st = imp_host_const(I, RLX_DTYPE_F64, 2, (int64_t[]){spec, mels}, w, &v);
  free(edge), free(w);
  RLX_TRY(st);
  RLX_TRY(imp_cast(I, n, v, dt, &v));
  return imp_out(I, n, 0, v);
}

/* ---- ai.onnx.preview.training optimizers: inputs R, T, then the per-tensor groups ---- */

typedef struct opt {
  rlx_imp *I;
  const Onnx__NodeProto *n;
  rlx_value r, t;      /* learning rate and step count, cast to the tensors' dtype */
  rlx_value t_pos;     /* T > 0 */
  size_t groups;       /* tensors optimized */
  size_t per;          /* inputs per tensor: X, G, then the state (H / V ...) */
} opt;

static rlx_status *opt_begin(rlx_imp *I, const Onnx__NodeProto *n, size_t per, opt *o) {
  size_t k = imp_nin(n);
  if (k < 2 + per || (k - 2) % per) IMP_FAIL(INVALID_ARGUMENT, "%zu inputs: expected R, T and groups of %zu tensors", k, per);
  o->I = I, o->n = n, o->groups = (k - 2) / per, o->per = per;
  rlx_value x0;
  RLX_TRY(imp_in(I, n, 2, &x0));
  rlx_dtype dt = imp_type(I, x0)->dtype;
  RLX_TRY(imp_in(I, n, 0, &o->r));
  RLX_TRY(imp_in(I, n, 1, &o->t));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_GREATER, o->t, 0, &o->t_pos));
  RLX_TRY(imp_cast(I, n, o->r, dt, &o->r));
  return imp_cast(I, n, o->t, dt, &o->t);
}

/* a x + b y */
static rlx_status *axpby(opt *o, double a, rlx_value x, double b, rlx_value y, rlx_value *z) {
  rlx_value u, v;
  RLX_TRY(imp_with_scalar(o->I, o->n, RLX_OP_MUL, x, a, &u));
  RLX_TRY(imp_with_scalar(o->I, o->n, RLX_OP_MUL, y, b, &v));
  return imp_bin(o->I, o->n, RLX_OP_ADD, u, v, z);
}

/* The inputs of tensor i, v[0..per) = X, G, state...; G regularized to norm X + G. */
static rlx_status *opt_group(opt *o, size_t i, double norm, rlx_value *v) {
  for (size_t k = 0; k < o->per; k++) RLX_TRY(imp_in(o->I, o->n, 2 + k * o->groups + i, &v[k]));
  return axpby(o, norm, v[0], 1, v[1], &v[1]);
}

/* The new values of tensor i, v[0..per-1) = X', state'... */
static rlx_status *opt_out(opt *o, size_t i, const rlx_value *v) {
  for (size_t k = 0; k + 1 < o->per; k++) RLX_TRY(imp_out(o->I, o->n, k * o->groups + i, v[k]));
  return NULL;
}

/* Adagrad: r' = R / (1 + T decay), g' = norm x + g, h' = h + g'^2, x' = x - r' g' / (sqrt h' + eps). */
rlx_status *rlx_onnx_map_adagrad(rlx_imp *I, const Onnx__NodeProto *n) {
  opt o;
  RLX_TRY(opt_begin(I, n, 3, &o));
  double decay = imp_attr_f(n, "decay_factor", 0), eps = imp_attr_f(n, "epsilon", 1e-6), norm = imp_attr_f(n, "norm_coefficient", 0);
  rlx_value rr;
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_MUL, o.t, decay, &rr));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_ADD, rr, 1, &rr));
  RLX_TRY(imp_bin(I, n, RLX_OP_DIV, o.r, rr, &rr));
  for (size_t i = 0; i < o.groups; i++) {
    rlx_value in[3], d; /* x, g, h */
    RLX_TRY(opt_group(&o, i, norm, in));
    rlx_value x = in[0], g = in[1], h = in[2];
    RLX_TRY(imp_bin(I, n, RLX_OP_MUL, g, g, &d));
    RLX_TRY(imp_bin(I, n, RLX_OP_ADD, h, d, &h));
    RLX_TRY(imp_un(I, n, RLX_OP_SQRT, h, &d));
    RLX_TRY(imp_with_scalar(I, n, RLX_OP_ADD, d, eps, &d));
    RLX_TRY(imp_bin(I, n, RLX_OP_DIV, g, d, &d));
    RLX_TRY(imp_bin(I, n, RLX_OP_MUL, rr, d, &d));
    RLX_TRY(imp_bin(I, n, RLX_OP_SUB, x, d, &x));
    RLX_TRY(opt_out(&o, i, (rlx_value[]){x, h}));
  }
  return NULL;
}

/* Adam: g' = norm x + g, v' = alpha v + (1 - alpha) g', h' = beta h + (1 - beta) g'^2,
 * r' = T > 0 ? R sqrt(1 - beta^T) / (1 - alpha^T) : R, x' = (1 - norm_post)(x - r' v' / (sqrt h' + eps)). */
rlx_status *rlx_onnx_map_adam(rlx_imp *I, const Onnx__NodeProto *n) {
  opt o;
  RLX_TRY(opt_begin(I, n, 4, &o));
  double alpha = imp_attr_f(n, "alpha", 0.9), beta = imp_attr_f(n, "beta", 0.999), eps = imp_attr_f(n, "epsilon", 1e-6);
  double norm = imp_attr_f(n, "norm_coefficient", 0), post = imp_attr_f(n, "norm_coefficient_post", 0);
  rlx_dtype dt = imp_type(I, o.r)->dtype;
  rlx_value ca, cb, pa, pb, rr;
  RLX_TRY(imp_scalar(I, alpha, dt, &ca));
  RLX_TRY(imp_scalar(I, beta, dt, &cb));
  RLX_TRY(imp_bin(I, n, RLX_OP_POW, ca, o.t, &pa));
  RLX_TRY(imp_bin(I, n, RLX_OP_POW, cb, o.t, &pb));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_MUL, pb, -1, &pb));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_ADD, pb, 1, &pb));
  RLX_TRY(imp_un(I, n, RLX_OP_SQRT, pb, &pb));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_MUL, pa, -1, &pa));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_ADD, pa, 1, &pa));
  RLX_TRY(imp_bin(I, n, RLX_OP_DIV, pb, pa, &rr));
  RLX_TRY(imp_bin(I, n, RLX_OP_MUL, o.r, rr, &rr));
  RLX_TRY(imp_select(I, n, o.t_pos, rr, o.r, &rr));
  for (size_t i = 0; i < o.groups; i++) {
    rlx_value in[4], d, e; /* x, g, v, h */
    RLX_TRY(opt_group(&o, i, norm, in));
    rlx_value x = in[0], g = in[1], v = in[2], h = in[3];
    RLX_TRY(axpby(&o, alpha, v, 1 - alpha, g, &v));
    RLX_TRY(imp_bin(I, n, RLX_OP_MUL, g, g, &d));
    RLX_TRY(axpby(&o, beta, h, 1 - beta, d, &h));
    RLX_TRY(imp_un(I, n, RLX_OP_SQRT, h, &e));
    RLX_TRY(imp_with_scalar(I, n, RLX_OP_ADD, e, eps, &e));
    RLX_TRY(imp_bin(I, n, RLX_OP_DIV, v, e, &d));
    RLX_TRY(imp_bin(I, n, RLX_OP_MUL, rr, d, &d));
    RLX_TRY(imp_bin(I, n, RLX_OP_SUB, x, d, &x));
    RLX_TRY(imp_with_scalar(I, n, RLX_OP_MUL, x, 1 - post, &x));
    RLX_TRY(opt_out(&o, i, (rlx_value[]){x, v, h}));
  }
  return NULL;
}

/* Momentum: g' = norm x + g, v' = alpha v + (T > 0 ? beta : 1) g'; standard: x' = x - R v';
 * nesterov: x' = x - R (g' + alpha v'). */
rlx_status *rlx_onnx_map_momentum(rlx_imp *I, const Onnx__NodeProto *n) {
  opt o;
  RLX_TRY(opt_begin(I, n, 3, &o));
  if (!imp_attr(n, "alpha") || !imp_attr(n, "beta") || !imp_attr(n, "norm_coefficient") || !imp_attr(n, "mode"))
    IMP_FAIL(INVALID_ARGUMENT, "Momentum needs the attributes alpha, beta, mode and norm_coefficient");
  double alpha = imp_attr_f(n, "alpha", 0), beta = imp_attr_f(n, "beta", 0), norm = imp_attr_f(n, "norm_coefficient", 0);
  char mb[16];
  const char *mode = imp_attr_s(n, "mode", "standard", mb, sizeof mb);
  if (strcmp(mode, "standard") && strcmp(mode, "nesterov")) IMP_FAIL(INVALID_ARGUMENT, "mode '%s'", mode);
  rlx_dtype dt = imp_type(I, o.r)->dtype;
  rlx_value cb, c1, bt;
  RLX_TRY(imp_scalar(I, beta, dt, &cb));
  RLX_TRY(imp_scalar(I, 1, dt, &c1));
  RLX_TRY(imp_select(I, n, o.t_pos, cb, c1, &bt));
  for (size_t i = 0; i < o.groups; i++) {
    rlx_value in[3], d; /* x, g, v */
    RLX_TRY(opt_group(&o, i, norm, in));
    rlx_value x = in[0], g = in[1], v = in[2];
    RLX_TRY(imp_bin(I, n, RLX_OP_MUL, bt, g, &d));
    RLX_TRY(imp_with_scalar(I, n, RLX_OP_MUL, v, alpha, &v));
    RLX_TRY(imp_bin(I, n, RLX_OP_ADD, v, d, &v));
    if (!strcmp(mode, "nesterov")) RLX_TRY(axpby(&o, 1, g, alpha, v, &d));
    else d = v;
    RLX_TRY(imp_bin(I, n, RLX_OP_MUL, o.r, d, &d));
    RLX_TRY(imp_bin(I, n, RLX_OP_SUB, x, d, &x));
    RLX_TRY(opt_out(&o, i, (rlx_value[]){x, v}));
  }
  return NULL;
}

/* ---- ai.onnx.ml ---- */

/* Binarizer: x > threshold ? 1 : 0 in x's dtype. */
rlx_status *rlx_onnx_map_binarizer(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_value x, m, y;
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_GREATER, x, imp_attr_f(n, "threshold", 0), &m));
  RLX_TRY(imp_cast(I, n, m, imp_type(I, x)->dtype, &y));
  return imp_out(I, n, 0, y);
}

/* ArrayFeatureExtractor(x, idx): x[.., idx] along the last axis with idx flattened; a 1-D x gives
 * [1, k] (ONNX Runtime's reading, which the ONNX reference follows). */
rlx_status *rlx_onnx_map_array_feature_extractor(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type tx, ti;
  RLX_TRY(imp_in_type(I, n, 0, true, &tx));
  RLX_TRY(imp_in_type(I, n, 1, true, &ti));
  int64_t k;
  RLX_TRY(rlx_type_numel(&ti, &k));
  if (tx.rank < 1) IMP_FAIL(INVALID_ARGUMENT, "x must have rank >= 1");
  rlx_value x, idx, y;
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(imp_in(I, n, 1, &idx));
  RLX_TRY(imp_reshape(I, n, idx, 1, &k, &idx));
  RLX_TRY(imp_gather(I, n, RLX_OP_GATHER, x, idx, tx.rank - 1, &y));
  if (tx.rank == 1) RLX_TRY(imp_reshape(I, n, y, 2, (int64_t[]){1, k}, &y));
  return imp_out(I, n, 0, y);
}

/* ---- TfIdfVectorizer over integer n-grams ---- */

/* Counts of the pool grams of one length m in x [B, L]: for every skip k (1..max_skip+1; only 1
 * for unigrams) the windows x[:, j k : j k + L - (m-1) k] (j < m) must all equal the gram's
 * items; matches summed over positions and skips -> float32 [B, P]. */
static rlx_status *gram_counts(rlx_imp *I, const Onnx__NodeProto *n, rlx_value x, int64_t B, int64_t L, const int64_t *pool, int64_t P,
                               int64_t m, int64_t max_skip, rlx_dtype xdt, rlx_value *out) {
  rlx_value total = 0;
  int64_t *col = malloc(sizeof(int64_t) * (size_t)(P ? P : 1));
  if (!col) return RLX_OOM();
  rlx_status *st = NULL;
  for (int64_t k = 1; !st && k <= (m == 1 ? 1 : max_skip + 1); k++) {
    int64_t Lw = L - (m - 1) * k;
    if (Lw <= 0) break;
    rlx_value all = 0;
    for (int64_t j = 0; !st && j < m; j++) {
      rlx_value w, g, eq;
      for (int64_t p = 0; p < P; p++) col[p] = pool[p * m + j];
      st = imp_narrow(I, n, x, 1, j * k, Lw, &w);
      if (!st) st = imp_reshape(I, n, w, 3, (int64_t[]){B, 1, Lw}, &w);
      if (!st) st = imp_host_const(I, RLX_DTYPE_I64, 3, (int64_t[]){1, P, 1}, col, &g);
      if (!st) st = imp_cast(I, n, g, xdt, &g);
      if (!st) st = imp_bin(I, n, RLX_OP_EQUAL, w, g, &eq);
      if (!st) st = all ? imp_bin(I, n, RLX_OP_AND, all, eq, &all) : (all = eq, NULL);
    }
    rlx_value c;
    int64_t pos = 2;
    if (!st) st = imp_cast(I, n, all, RLX_DTYPE_F32, &c);
    if (!st) st = imp_reduce(I, n, "sum", c, 1, &pos, false, &c);
    if (!st) st = total ? imp_bin(I, n, RLX_OP_ADD, total, c, &total) : (total = c, NULL);
  }
  free(col);
  RLX_TRY(st);
  if (!total) return imp_filled(I, n, 0, RLX_DTYPE_F32, 2, (int64_t[]){B, P}, out); /* no window fits: zero counts */
  *out = total;
  return NULL;
}

/* TfIdfVectorizer (ONNX-9) for integer input [L] or [B, L] and pool_int64s: n-gram frequencies
 * (lengths min_gram_length..max_gram_length, gaps of up to max_skip_count items) per output index
 * from ngram_indexes; mode TF (counts), IDF (weight, or 1, where the count is non-zero), TFIDF
 * (count times weight, or count). Each length's counts map onto the output columns by a matmul
 * with a one-hot [P, out] matrix. */
rlx_status *rlx_onnx_map_tfidf_vectorizer(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type tx;
  RLX_TRY(imp_in_type(I, n, 0, true, &tx));
  if (!rlx_dtype_is_int(tx.dtype)) IMP_FAIL(UNIMPLEMENTED, "TfIdfVectorizer of %s input (strings are not supported)", rlx_dtype_name(tx.dtype));
  if (tx.rank < 1 || tx.rank > 2) IMP_FAIL(INVALID_ARGUMENT, "input must be [L] or [B, L], got %s", RLX_TYPE_STR(&tx));
  size_t npool, ncnt, nidx, nw;
  const int64_t *pool = imp_attr_ints(n, "pool_int64s", &npool), *cnts = imp_attr_ints(n, "ngram_counts", &ncnt);
  const int64_t *oidx = imp_attr_ints(n, "ngram_indexes", &nidx);
  const float *wts = imp_attr_floats(n, "weights", &nw);
  int64_t mn = imp_attr_i(n, "min_gram_length", 1), mx = imp_attr_i(n, "max_gram_length", 1), skip = imp_attr_i(n, "max_skip_count", 0);
  char mb[8];
  const char *mode = imp_attr_s(n, "mode", "TF", mb, sizeof mb);
  bool tf = !strcmp(mode, "TF"), idf = !strcmp(mode, "IDF");
  if (!tf && !idf && strcmp(mode, "TFIDF")) IMP_FAIL(INVALID_ARGUMENT, "mode '%s'", mode);
  int64_t out_size = 0;
  for (size_t i = 0; i < nidx; i++) {
    /* every index makes a row of one-hot matrices of out_size floats per gram */
    if (oidx[i] < 0 || oidx[i] >= RLX_ONNX_MAX_FOLD_BYTES / 4 / (int64_t)nidx)
      IMP_FAIL(OUT_OF_RANGE, "ngram_indexes[%zu] = %lld is outside [0, %lld)", i, (long long)oidx[i],
               (long long)(RLX_ONNX_MAX_FOLD_BYTES / 4 / (int64_t)nidx));
    out_size = oidx[i] + 1 > out_size ? oidx[i] + 1 : out_size;
  }
  if (!npool || !nidx || mn < 1 || mx < mn || skip < 0 || (nw && nw != (size_t)out_size))
    IMP_FAIL(INVALID_ARGUMENT, "pool_int64s, ngram_counts, ngram_indexes, weights or gram lengths are inconsistent");
  int64_t B = tx.rank == 2 ? tx.dims[0] : 1, L = tx.dims[tx.rank - 1];
  rlx_value x, y = 0;
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(imp_reshape(I, n, x, 2, (int64_t[]){B, L}, &x));
  int64_t gram = 0; /* index of the first gram of the current length, in pool order */
  for (size_t c = 0; c < ncnt; c++) {
    int64_t m = (int64_t)c + 1, lo = cnts[c], hi = c + 1 < ncnt ? cnts[c + 1] : (int64_t)npool, P = (hi - lo) / m;
    if (lo < 0 || hi > (int64_t)npool || hi < lo) IMP_FAIL(INVALID_ARGUMENT, "ngram_counts[%zu] = %lld is outside the pool", c, (long long)lo);
    if (P > 0 && m >= mn && m <= mx) {
      if (gram + P > (int64_t)nidx) IMP_FAIL(INVALID_ARGUMENT, "ngram_indexes has %zu entries for more grams", nidx);
      rlx_value cnt, oh;
      RLX_TRY(gram_counts(I, n, x, B, L, pool + lo, P, m, skip, tx.dtype, &cnt));
      float *onehot = calloc((size_t)(P * out_size), sizeof(float));
      if (!onehot) return RLX_OOM();
      for (int64_t p = 0; p < P; p++) onehot[p * out_size + oidx[gram + p]] = 1;
      rlx_status *st = imp_host_const(I, RLX_DTYPE_F32, 2, (int64_t[]){P, out_size}, onehot, &oh);
      free(onehot);
      RLX_TRY(st);
      RLX_TRY(imp_bin(I, n, RLX_OP_MATMUL, cnt, oh, &cnt));
      if (y) RLX_TRY(imp_bin(I, n, RLX_OP_ADD, y, cnt, &y));
      else y = cnt;
    }
    gram += P > 0 ? P : 0;
  }
  if (!y) {
    RLX_TRY(imp_filled(I, n, 0, RLX_DTYPE_F32, 2, (int64_t[]){B, out_size}, &y));
  }
  rlx_value w = 0;
  if (nw) {
    double *wd = malloc(sizeof(double) * nw);
    if (!wd) return RLX_OOM();
    for (size_t i = 0; i < nw; i++) wd[i] = wts[i];
    rlx_status *st = imp_host_const(I, RLX_DTYPE_F64, 1, &out_size, wd, &w);
    free(wd);
    RLX_TRY(st);
    RLX_TRY(imp_cast(I, n, w, RLX_DTYPE_F32, &w));
  }
  if (idf) { /* (count > 0) times the weight */
    RLX_TRY(imp_with_scalar(I, n, RLX_OP_GREATER, y, 0, &y));
    RLX_TRY(imp_cast(I, n, y, RLX_DTYPE_F32, &y));
  }
  if (!tf && w) RLX_TRY(imp_bin(I, n, RLX_OP_MUL, y, w, &y));
  if (tx.rank == 1) RLX_TRY(imp_reshape(I, n, y, 1, &out_size, &y));
  return imp_out(I, n, 0, y);
}
