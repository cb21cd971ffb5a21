/* import_ops_importer.c: ONNX ops mapped by decomposition into existing rlx ops: losses, window
 * functions, Shrink, Swish; the table of every mapping in the import_ops_*.c files listed in
 * import_ops_importer.h. Formulas follow the ONNX operator documentation
 * (https://onnx.ai/onnx/operators/); each mapping names what it cannot express. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/import_ops_importer.h"


/* ---- losses ---- */

/* NegativeLogLikelihoodLoss on log-probabilities x[N,C,d..] with target[N,d..] (ONNX-13/22):
 * loss = -x[n, t, d..] * w with w = weight[t] (1 without weights) and 0 where t == ignore_index;
 * reduction none | sum | mean (sum(loss) / sum(w), the plain mean without weight and ignore). */
static rlx_status *nll(rlx_imp *I, const Onnx__NodeProto *n, rlx_value x, size_t k_target, size_t k_weight, rlx_value *out) {
  const rlx_type tx = *imp_type(I, x);
  rlx_type tt;
  RLX_TRY(imp_in_type(I, n, k_target, false, &tt));
  if (tx.rank < 2 || tt.rank != tx.rank - 1) IMP_FAIL(INVALID_ARGUMENT, "input %s and target %s must be [N,C,d..] and [N,d..]", RLX_TYPE_STR(&tx),
                                                    RLX_TYPE_STR(&tt));
  if (!rlx_dtype_is_int(tt.dtype)) IMP_FAIL(INVALID_ARGUMENT, "target must be an integer tensor, got %s", RLX_TYPE_STR(&tt));
  char rb[16];
  const char *red = imp_attr_s(n, "reduction", "mean", rb, sizeof rb);
  if (strcmp(red, "none") && strcmp(red, "sum") && strcmp(red, "mean")) IMP_FAIL(INVALID_ARGUMENT, "reduction '%s'", red);
  bool ignore = imp_attr(n, "ignore_index") != NULL, weighted = imp_has(n, k_weight);
  int64_t C = tx.dims[1];
  rlx_value t, safe, keep = 0, w = 0, g, loss;
  RLX_TRY(imp_in(I, n, k_target, &t));
  safe = t;
  if (ignore) { /* ignored targets may lie outside [0, C): gather class 0 there and zero it */
    rlx_value z;
    RLX_TRY(imp_with_scalar(I, n, RLX_OP_NOT_EQUAL, t, (double)imp_attr_i(n, "ignore_index", 0), &keep));
    RLX_TRY(imp_scalar(I, 0, tt.dtype, &z));
    RLX_TRY(imp_select(I, n, keep, t, z, &safe));
    RLX_TRY(imp_cast(I, n, keep, tx.dtype, &keep));
  }
  int64_t d[RLX_MAX_RANK];
  for (int i = 0; i < tx.rank; i++) d[i] = i == 1 ? 1 : tx.dims[i];
  rlx_value idx;
  RLX_TRY(imp_reshape(I, n, safe, tx.rank, d, &idx));
  RLX_TRY(imp_gather(I, n, RLX_OP_GATHER_ELEMENTS, x, idx, 1, &g));
  RLX_TRY(imp_reshape(I, n, g, tt.rank, tt.dims, &g));
  RLX_TRY(imp_un(I, n, RLX_OP_NEG, g, &loss));
  if (weighted) {
    rlx_value wt, cl;
    RLX_TRY(imp_in(I, n, k_weight, &wt));
    RLX_TRY(imp_with_scalar(I, n, RLX_OP_MIN, safe, (double)(C - 1), &cl));
    RLX_TRY(imp_with_scalar(I, n, RLX_OP_MAX, cl, 0, &cl));
    RLX_TRY(imp_gather(I, n, RLX_OP_GATHER, wt, cl, 0, &w));
    if (ignore) RLX_TRY(imp_bin(I, n, RLX_OP_MUL, w, keep, &w));
  } else if (ignore) {
    w = keep;
  }
  if (weighted || ignore) RLX_TRY(imp_bin(I, n, RLX_OP_MUL, loss, w, &loss));
  if (!strcmp(red, "none")) return *out = loss, NULL;
  if (!strcmp(red, "sum") || weighted || ignore) RLX_TRY(imp_reduce(I, n, "sum", loss, 0, NULL, false, &loss));
  else RLX_TRY(imp_reduce(I, n, "mean", loss, 0, NULL, false, &loss));
  if (!strcmp(red, "mean") && (weighted || ignore)) {
    rlx_value ws;
    RLX_TRY(imp_reduce(I, n, "sum", w, 0, NULL, false, &ws));
    RLX_TRY(imp_bin(I, n, RLX_OP_DIV, loss, ws, &loss));
  }
  *out = loss;
  return NULL;
}

static rlx_status *map_nll_loss(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_value x, y;
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(nll(I, n, x, 1, 2, &y));
  return imp_out(I, n, 0, y);
}

/* SoftmaxCrossEntropyLoss(scores, labels, [weights]) = NLL(LogSoftmax(scores, axis 1)); the
 * optional second output is the log-probabilities. */
static rlx_status *map_softmax_ce_loss(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_value x, lp, y;
  RLX_TRY(imp_in(I, n, 0, &x));
  if (imp_type(I, x)->rank < 2) IMP_FAIL(INVALID_ARGUMENT, "scores must be [N,C,d..], got %s", RLX_TYPE_STR(imp_type(I, x)));
  rlx_attr a = RLX_ATTR_I("axis", 1);
  RLX_TRY(imp_add(I, n, RLX_OP_LOG_SOFTMAX, 1, &x, 1, &a, &lp));
  RLX_TRY(nll(I, n, lp, 1, 2, &y));
  RLX_TRY(imp_out(I, n, 0, y));
  return imp_out(I, n, 1, lp);
}

/* ---- elementwise ---- */

/* Shrink: x < -lambd ? x + bias : x > lambd ? x - bias : 0. */
static rlx_status *map_shrink(rlx_imp *I, const Onnx__NodeProto *n) {
  double lambd = imp_attr_f(n, "lambd", 0.5), bias = imp_attr_f(n, "bias", 0);
  rlx_value x, lo, hi, xp, xm, z, y;
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_LESS, x, -lambd, &lo));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_GREATER, x, lambd, &hi));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_ADD, x, bias, &xp));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_SUB, x, bias, &xm));
  RLX_TRY(imp_scalar(I, 0, imp_type(I, x)->dtype, &z));
  RLX_TRY(imp_select(I, n, hi, xm, z, &y));
  RLX_TRY(imp_select(I, n, lo, xp, y, &y));
  return imp_out(I, n, 0, y);
}

/* Swish: x * sigmoid(alpha x). */
static rlx_status *map_swish(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_value x, s, y;
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_MUL, x, imp_attr_f(n, "alpha", 1.0), &s));
  RLX_TRY(imp_un(I, n, RLX_OP_SIGMOID, s, &s));
  RLX_TRY(imp_bin(I, n, RLX_OP_MUL, x, s, &y));
  return imp_out(I, n, 0, y);
}

/* ---- window functions: constants of length size (known at import time) ---- */

/* w[k] = a0 - a1 cos(2 pi k / N) + a2 cos(4 pi k / N), N = size (periodic) or size - 1. */
static rlx_status *window(rlx_imp *I, const Onnx__NodeProto *n, double a0, double a1, double a2) {
  const rlx_tensor *st = imp_const(I, n, 0);
  if (!st) IMP_FAIL(UNIMPLEMENTED, "size must be known at import time (the output shape depends on it)");
  if (rlx_tensor_numel(st) != 1) IMP_FAIL(INVALID_ARGUMENT, "size must be a scalar");
  int64_t len = imp_tensor_i64(st, 0);
  if (len < 0) IMP_FAIL(INVALID_ARGUMENT, "size %lld is negative", (long long)len);
  RLX_TRY(imp_table_size("the window", sizeof(double), 1, &len, &len));
  rlx_dtype dt;
  RLX_TRY(rlx_onnx_dtype((int32_t)imp_attr_i(n, "output_datatype", 1), &dt));
  double N = (double)(imp_attr_i(n, "periodic", 1) ? len : len - 1);
  double *w = malloc(sizeof(double) * (size_t)(len ? len : 1));
  if (!w) return RLX_OOM();
  for (int64_t k = 0; k < len; k++) {
    double x = N > 0 ? 2 * M_PI * (double)k / N : 0;
    w[k] = a0 - a1 * cos(x) + a2 * cos(2 * x);
  }
  rlx_value v;
  rlx_status *e = imp_host_const(I, RLX_DTYPE_F64, 1, &len, w, &v);
  free(w);
  RLX_TRY(e);
  RLX_TRY(imp_cast(I, n, v, dt, &v));
  return imp_out(I, n, 0, v);
}
static rlx_status *map_hann_window(rlx_imp *I, const Onnx__NodeProto *n) { return window(I, n, 0.5, 0.5, 0); }
static rlx_status *map_hamming_window(rlx_imp *I, const Onnx__NodeProto *n) { return window(I, n, 25.0 / 46, 21.0 / 46, 0); }
static rlx_status *map_blackman_window(rlx_imp *I, const Onnx__NodeProto *n) { return window(I, n, 0.42, 0.5, 0.08); }

/* ---- the table ---- */

const rlx_onnx_op rlx_onnx_importer_ops[] = {
    {"NegativeLogLikelihoodLoss", 0, map_nll_loss, false},
    {"SoftmaxCrossEntropyLoss", 0, map_softmax_ce_loss, false},
    {"Einsum", 0, rlx_onnx_map_einsum, false},
    {"RNN", 0, rlx_onnx_map_rnn, false},
    {"GRU", 0, rlx_onnx_map_gru, false},
    {"LSTM", 0, rlx_onnx_map_lstm, false},
    {"CausalConvWithState", 0, rlx_onnx_map_causal_conv_with_state, false},
    {"LinearAttention", 0, rlx_onnx_map_linear_attention, false},
    {"GridSample", 0, rlx_onnx_map_grid_sample, false},
    {"AffineGrid", 0, rlx_onnx_map_affine_grid, false},
    {"RoiAlign", 0, rlx_onnx_map_roi_align, false},
    {"DeformConv", 0, rlx_onnx_map_deform_conv, false},
    {"CumProd", 0, rlx_onnx_map_cumprod, false},
    {"Compress", 0, rlx_onnx_map_compress, false},
    {"CenterCropPad", 0, rlx_onnx_map_center_crop_pad, false},
    {"Col2Im", 0, rlx_onnx_map_col2im, false},
    {"ReverseSequence", 0, rlx_onnx_map_reverse_sequence, false},
    {"MaxUnpool", 0, rlx_onnx_map_max_unpool, false},
    {"TensorScatter", 0, rlx_onnx_map_tensor_scatter, false},
    {"NonZero", 0, rlx_onnx_map_non_zero, false},
    {"Unique", 0, rlx_onnx_map_unique, false},
    {"NonMaxSuppression", 0, rlx_onnx_map_non_max_suppression, false},
    {"Det", 0, rlx_onnx_map_det, false},
    {"MelWeightMatrix", 0, rlx_onnx_map_mel_weight_matrix, false},
    {"TfIdfVectorizer", 0, rlx_onnx_map_tfidf_vectorizer, false},
    {"ai.onnx.preview.training.Adagrad", 0, rlx_onnx_map_adagrad, false},
    {"ai.onnx.preview.training.Adam", 0, rlx_onnx_map_adam, false},
    {"ai.onnx.preview.training.Momentum", 0, rlx_onnx_map_momentum, false},
    {"ai.onnx.ml.Binarizer", 0, rlx_onnx_map_binarizer, false},
    {"ai.onnx.ml.ArrayFeatureExtractor", 0, rlx_onnx_map_array_feature_extractor, false},
    {"Shrink", 0, map_shrink, false},
    {"Swish", 0, map_swish, false},
    {"HannWindow", 0, map_hann_window, false},
    {"HammingWindow", 0, map_hamming_window, false},
    {"BlackmanWindow", 0, map_blackman_window, false},
};
const size_t rlx_onnx_importer_ops_len = RLX_ARRAY_LEN(rlx_onnx_importer_ops);

/* Mappings that need some inputs known at import time (their output shapes depend on them). */
#define KNOWN(what) "(needs " what " known at import time)"
static const struct {
  const char *op_type, *note;
} notes[] = {
    {"HannWindow", KNOWN("size")}, {"HammingWindow", KNOWN("size")}, {"BlackmanWindow", KNOWN("size")},
    {"MelWeightMatrix", KNOWN("every input")}, {"CumProd", KNOWN("axis")}, {"Compress", KNOWN("condition")},
    {"CenterCropPad", KNOWN("shape")}, {"NonZero", KNOWN("the input")}, {"Unique", KNOWN("the input")},
    {"NonMaxSuppression", KNOWN("every input")}, {"RoiAlign", KNOWN("rois and batch_indices")},
};
#undef KNOWN

const char *rlx_onnx_op_note(const char *domain, const char *op_type) {
  if (domain && *domain && strcmp(domain, "ai.onnx")) return NULL;
  for (size_t i = 0; i < RLX_ARRAY_LEN(notes); i++)
    if (!strcmp(notes[i].op_type, op_type)) return notes[i].note;
  return NULL;
}
