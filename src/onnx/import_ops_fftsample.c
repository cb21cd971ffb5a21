/* import_ops_fftsample.c: ONNX DFT (opset 17: axis attribute; opset 20: axis input) and STFT
 * (opset 17) onto Fft, Rfft and Irfft. ONNX signals are [..., L at axis, ..., c] with c = 1 (real)
 * or 2 (complex as interleaved re, im); rlx's FFT ops work on the last axis in real blocks
 * [.., 2N] = [re.., im..], which is the ONNX pair axis moved before the signal axis and flattened.
 * Semantics from the ONNX operator docs (DFT-17/20, STFT-17) and onnx.reference. */
#include <stdlib.h>
#include <string.h>

#include "onnx/import_ops.h"

static rlx_status *concat(rlx_imp *I, const Onnx__NodeProto *n, rlx_value a, rlx_value b, int axis, rlx_value *y) {
  rlx_attr ax = RLX_ATTR_I("axis", axis);
  return imp_add(I, n, RLX_OP_CONCAT, 2, (rlx_value[]){a, b}, 1, &ax, y);
}

/* [P.., 2, K] <-> [P.., K, 2]: swaps the last two axes. */
static rlx_status *swap_last(rlx_imp *I, const Onnx__NodeProto *n, rlx_value x, rlx_value *y) {
  int r = imp_type(I, x)->rank;
  int64_t perm[RLX_MAX_RANK];
  for (int i = 0; i < r; i++) perm[i] = i;
  perm[r - 2] = r - 1, perm[r - 1] = r - 2;
  return imp_transpose(I, n, x, r, perm, y);
}

/* x with its last axis replaced by `dims` (a reshape of the trailing axis). */
static rlx_status *reshape_last(rlx_imp *I, const Onnx__NodeProto *n, rlx_value x, int drop, int add, const int64_t *dims, rlx_value *y) {
  const rlx_type *t = imp_type(I, x);
  int64_t d[RLX_MAX_RANK];
  int r = t->rank - drop;
  memcpy(d, t->dims, sizeof(int64_t) * (size_t)r);
  for (int i = 0; i < add; i++) d[r + i] = dims[i];
  return imp_reshape(I, n, x, r + add, d, y);
}

/* [P.., L, c] (c = 1 or 2) -> real block [P.., 2L] (imaginary part zero for c = 1). */
static rlx_status *to_block(rlx_imp *I, const Onnx__NodeProto *n, rlx_value x, int64_t len, int64_t c, rlx_value *y) {
  if (c == 2) {
    RLX_TRY(swap_last(I, n, x, &x));
    return reshape_last(I, n, x, 2, 1, (int64_t[]){2 * len}, y);
  }
  rlx_value re, im;
  RLX_TRY(reshape_last(I, n, x, 2, 1, &len, &re));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_MUL, re, 0, &im));
  return concat(I, n, re, im, -1, y);
}

/* Real block [P.., 2N], first k bins -> [P.., k, 2]. */
static rlx_status *from_block(rlx_imp *I, const Onnx__NodeProto *n, rlx_value x, int64_t len, int64_t k, rlx_value *y) {
  RLX_TRY(reshape_last(I, n, x, 1, 2, (int64_t[]){2, len}, &x));
  if (k < len) RLX_TRY(imp_narrow(I, n, x, -1, 0, k, &x));
  return swap_last(I, n, x, y);
}

/* The one-sided spectrum [P.., 2, h] of a real signal of length len -> the full spectrum
 * [P.., 2, len] by Hermitian symmetry, X[len - k] = conj X[k] (so bins that are exactly real stay
 * exactly real). */
static rlx_status *hermitian_extend(rlx_imp *I, const Onnx__NodeProto *n, rlx_value x, int64_t h, int64_t len, rlx_value *y) {
  if (len == h) return *y = x, NULL;
  int64_t cnt;
  RLX_TRY(imp_table_size("the Hermitian extension's indices", sizeof(int64_t), 1, (int64_t[]){len - h}, &cnt));
  rlx_tensor *ix;
  RLX_TRY(rlx_tensor_create(RLX_DTYPE_I64, 1, (int64_t[]){len - h}, NULL, 0, &ix));
  for (int64_t k = h; k < len; k++) ((int64_t *)rlx_tensor_data(ix))[k - h] = len - k;
  rlx_value idx, m, re, im;
  rlx_status *st = imp_tensor_const(I, ix, &idx);
  rlx_tensor_free(ix);
  RLX_TRY(st);
  RLX_TRY(imp_gather(I, n, RLX_OP_GATHER, x, idx, -1, &m));
  RLX_TRY(imp_narrow(I, n, m, -2, 0, 1, &re));
  RLX_TRY(imp_narrow(I, n, m, -2, 1, 1, &im));
  RLX_TRY(imp_un(I, n, RLX_OP_NEG, im, &im));
  RLX_TRY(concat(I, n, re, im, -2, &m));
  return concat(I, n, x, m, -1, y);
}

/* Cuts or zero-pads axis `axis` of x to `len`. */
static rlx_status *fit_length(rlx_imp *I, const Onnx__NodeProto *n, rlx_value x, int axis, int64_t len, rlx_value *y) {
  const rlx_type *t = imp_type(I, x);
  int64_t have = t->dims[axis];
  if (have == len) return *y = x, NULL;
  if (have > len) return imp_narrow(I, n, x, axis, 0, len, y);
  int64_t pads[2 * RLX_MAX_RANK] = {0};
  pads[t->rank + axis] = len - have;
  rlx_attr a = RLX_ATTR_IS("pads", (size_t)(2 * t->rank), pads);
  return imp_add(I, n, RLX_OP_PAD, 1, &x, 1, &a, y);
}

/* The ONNX DFT of x along `axis` with dft_length `length` (-1: the default). */
static rlx_status *dft(rlx_imp *I, const Onnx__NodeProto *n, rlx_value x, int64_t axis, int64_t length, bool inverse, bool onesided,
                       rlx_value *y) {
  rlx_type t = *imp_type(I, x);
  int r = t.rank;
  if (r < 2) IMP_FAIL(INVALID_ARGUMENT, "input must be [..., signal, 1 or 2], got %s", RLX_TYPE_STR(&t));
  int64_t c = t.dims[r - 1];
  if (c != 1 && c != 2) IMP_FAIL(INVALID_ARGUMENT, "the last dim must be 1 (real) or 2 (complex), got %s", RLX_TYPE_STR(&t));
  if (axis < 0) axis += r;
  if (axis < 0 || axis > r - 2) IMP_FAIL(OUT_OF_RANGE, "axis %lld: the signal axis must be in [-%d, %d] for %s", (long long)axis, r, r - 2, RLX_TYPE_STR(&t));
  if (t.dims[axis] < 0) IMP_FAIL(UNIMPLEMENTED, "the signal axis of %s must have a static size", RLX_TYPE_STR(&t));
  if (length == 0 || length < -1) IMP_FAIL(INVALID_ARGUMENT, "dft_length must be >= 1, got %lld", (long long)length);
  if (t.dims[axis] > INT64_MAX / 4 || length > INT64_MAX / 4) /* 2 * len real block entries, 2 * (len - 1) inverse samples */
    IMP_FAIL(INVALID_ARGUMENT, "a signal of %lld samples (dft_length %lld) overflows int64", (long long)t.dims[axis], (long long)length);
  /* move the signal axis next to the pair axis: [P.., L, c] */
  int64_t perm[RLX_MAX_RANK], inv[RLX_MAX_RANK];
  int k = 0;
  for (int i = 0; i < r - 1; i++)
    if (i != axis) perm[k++] = i;
  perm[k++] = axis, perm[k] = r - 1;
  for (int i = 0; i < r; i++) inv[perm[i]] = i;
  bool moved = axis != r - 2;
  if (moved) RLX_TRY(imp_transpose(I, n, x, r, perm, &x));
  int64_t len = t.dims[axis];
  rlx_value b;
  if (inverse && onesided) { /* irfft: bins 0..len-1 -> a real signal of length n */
    int64_t out_len = length > 0 ? length : 2 * (len - 1);
    if (out_len < 1) IMP_FAIL(INVALID_ARGUMENT, "an inverse one-sided DFT of %lld bins needs dft_length", (long long)len);
    rlx_attr a[1] = {RLX_ATTR_I("n", out_len)};
    RLX_TRY(to_block(I, n, x, len, c, &b));
    RLX_TRY(imp_add(I, n, RLX_OP_IRFFT, 1, &b, 1, a, &b));
    RLX_TRY(reshape_last(I, n, b, 1, 2, (int64_t[]){out_len, 1}, y));
  } else {
    int64_t nn = length > 0 ? length : len, bins = onesided ? nn / 2 + 1 : nn;
    RLX_TRY(fit_length(I, n, x, r - 2, nn, &x));
    if (c == 1 && !inverse) { /* a real signal: Rfft, extended to the full spectrum unless one-sided */
      int64_t h = nn / 2 + 1;
      RLX_TRY(reshape_last(I, n, x, 2, 1, &nn, &b));
      RLX_TRY(imp_add(I, n, RLX_OP_RFFT, 1, &b, 0, NULL, &b));
      RLX_TRY(reshape_last(I, n, b, 1, 2, (int64_t[]){2, h}, &b));
      RLX_TRY(hermitian_extend(I, n, b, h, bins, &b));
      RLX_TRY(swap_last(I, n, b, y));
    } else {
      rlx_attr a = RLX_ATTR_I("inverse", inverse);
      RLX_TRY(to_block(I, n, x, nn, c, &b));
      RLX_TRY(imp_add(I, n, RLX_OP_FFT, 1, &b, 1, &a, &b));
      RLX_TRY(from_block(I, n, b, nn, bins, y));
    }
  }
  return moved ? imp_transpose(I, n, *y, r, inv, y) : NULL;
}

/* A scalar integer input known at import time; `dflt` when absent. */
static rlx_status *const_int(rlx_imp *I, const Onnx__NodeProto *n, size_t k, const char *what, int64_t dflt, int64_t *out) {
  if (!imp_has(n, k)) return *out = dflt, NULL;
  int64_t *v;
  size_t cnt;
  RLX_TRY(imp_const_ints(I, n, k, what, &v, &cnt));
  rlx_status *st = cnt == 1 ? NULL : RLX_ERR(INVALID_ARGUMENT, "input %zu (%s) must be a scalar, got %zu values", k, what, cnt);
  if (!st) *out = v[0];
  free(v);
  return st;
}

static rlx_status *map_dft(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_value x, y;
  int64_t length, axis;
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(const_int(I, n, 1, "dft_length", -1, &length));
  if (I->opset >= 20) RLX_TRY(const_int(I, n, 2, "axis", -2, &axis));
  else axis = imp_attr_i(n, "axis", 1);
  RLX_TRY(dft(I, n, x, axis, length, imp_attr_i(n, "inverse", 0) != 0, imp_attr_i(n, "onesided", 0) != 0, &y));
  return imp_out(I, n, 0, y);
}

/* STFT(signal [B, T, c], frame_step, [window [L]], [frame_length]): frames f*step .. f*step+L-1
 * (F = (T - L) / step + 1), times the window, DFT of each frame -> [B, F, bins, 2]. */
static rlx_status *map_stft(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_value x, y, idx;
  RLX_TRY(imp_in(I, n, 0, &x));
  rlx_type t = *imp_type(I, x), tw = {.rank = -1};
  int64_t step, frame;
  RLX_TRY(const_int(I, n, 1, "frame_step", -1, &step));
  if (imp_has(n, 2)) RLX_TRY(imp_in_type(I, n, 2, true, &tw));
  RLX_TRY(const_int(I, n, 3, "frame_length", tw.rank == 1 ? tw.dims[0] : -1, &frame));
  if (t.rank != 3 || t.dims[1] < 0) IMP_FAIL(INVALID_ARGUMENT, "signal must be [batch, length, 1 or 2] with a static length, got %s", RLX_TYPE_STR(&t));
  if (step < 1) IMP_FAIL(INVALID_ARGUMENT, "frame_step must be >= 1, got %lld", (long long)step);
  if (frame < 1) IMP_FAIL(INVALID_ARGUMENT, "give frame_length or a window (got frame length %lld)", (long long)frame);
  if (tw.rank >= 0 && (tw.rank != 1 || tw.dims[0] != frame))
    IMP_FAIL(INVALID_ARGUMENT, "window %s must be [frame_length = %lld]", RLX_TYPE_STR(&tw), (long long)frame);
  if (t.dims[1] < frame) IMP_FAIL(INVALID_ARGUMENT, "the signal (%lld samples) is shorter than a frame (%lld)", (long long)t.dims[1], (long long)frame);
  int64_t frames = (t.dims[1] - frame) / step + 1, cnt;
  RLX_TRY(imp_table_size("the STFT frame indices", sizeof(int64_t), 2, (int64_t[]){frames, frame}, &cnt));
  rlx_tensor *ix;
  RLX_TRY(rlx_tensor_create(RLX_DTYPE_I64, 2, (int64_t[]){frames, frame}, NULL, 0, &ix));
  int64_t *p = rlx_tensor_data(ix);
  for (int64_t f = 0; f < frames; f++)
    for (int64_t l = 0; l < frame; l++) p[f * frame + l] = f * step + l;
  rlx_status *st = imp_tensor_const(I, ix, &idx);
  rlx_tensor_free(ix);
  RLX_TRY(st);
  RLX_TRY(imp_gather(I, n, RLX_OP_GATHER, x, idx, 1, &y)); /* [B, F, L, c] */
  if (tw.rank == 1) {
    rlx_value w;
    RLX_TRY(imp_in(I, n, 2, &w));
    RLX_TRY(imp_cast(I, n, w, t.dtype, &w));
    RLX_TRY(imp_reshape(I, n, w, 2, (int64_t[]){frame, 1}, &w));
    RLX_TRY(imp_bin(I, n, RLX_OP_MUL, y, w, &y));
  }
  RLX_TRY(dft(I, n, y, 2, -1, false, imp_attr_i(n, "onesided", 1) != 0, &y));
  return imp_out(I, n, 0, y);
}

const rlx_onnx_op rlx_onnx_fftsample_ops[] = {
    {"DFT", 17, map_dft, false},
    {"STFT", 17, map_stft, false},
};
const size_t rlx_onnx_fftsample_ops_len = RLX_ARRAY_LEN(rlx_onnx_fftsample_ops);
