/* infer_fft.c: inference for Fft, Rfft and Irfft (see rlx/op_table.h). Signals lie on the last
 * axis: complex64 [..,N], or a real block [..,2N] = [re_0..re_N-1, im_0..im_N-1] of a float dtype. */
#include "ir/infer_util.h"

int rlx_fft_norm(const char *name) {
  static const char *names[] = {"backward", "ortho", "forward"};
  for (int i = 0; i < 3; i++)
    if (strcmp(name, names[i]) == 0) return i;
  return -1;
}

/* The signal length of input 0 in its layout (complex64 or real block); RLX_DIM_DYNAMIC when
 * symbolic. Fails for other dtypes, rank 0, empty or odd real blocks. */
static rlx_status *signal_length(const rlx_infer_ctx *c, int64_t *len) {
  const rlx_type *x = IN(0);
  if (x->dtype != RLX_DTYPE_C64 && !rlx_dtype_is_float(x->dtype))
    FAIL(INVALID_ARGUMENT, "input 0 must be complex64 or a float real block, got %s", rlx_dtype_name(x->dtype));
  if (x->rank < 1) FAIL(INVALID_ARGUMENT, "input 0 must have rank >= 1 (the signal is its last axis), got %s", TSTR(x));
  int64_t d = x->dims[x->rank - 1];
  if (d < 0) return *len = RLX_DIM_DYNAMIC, NULL;
  if (x->dtype == RLX_DTYPE_C64) {
    if (d < 1) FAIL(INVALID_ARGUMENT, "input 0 %s: the signal is empty", TSTR(x));
    return *len = d, NULL;
  }
  if (d < 2 || d % 2) FAIL(INVALID_ARGUMENT, "input 0 %s: a real block [..,2N] needs an even last dim >= 2, got %lld", TSTR(x), (long long)d);
  return *len = d / 2, NULL;
}

rlx_status *rlx_infer_fft(rlx_infer_ctx *c) {
  const rlx_type *x = IN(0);
  rlx_type *y = OUT(0);
  *y = *x;
  if (rlx_fft_norm(AS("norm")) < 0) FAIL(INVALID_ARGUMENT, "norm '%s' (expected backward, ortho or forward)", AS("norm"));
  switch (OP) {
    case RLX_OP_FFT: {
      int64_t len;
      if (AI("inverse") != 0 && AI("inverse") != 1) FAIL(INVALID_ARGUMENT, "inverse must be 0 or 1, got %lld", (long long)AI("inverse"));
      return signal_length(c, &len);
    }
    case RLX_OP_RFFT: {
      if (!rlx_dtype_is_float(x->dtype)) FAIL(INVALID_ARGUMENT, "input 0 must be a real float signal, got %s (use Fft for complex signals)", rlx_dtype_name(x->dtype));
      if (x->rank < 1) FAIL(INVALID_ARGUMENT, "input 0 must have rank >= 1 (the signal is its last axis), got %s", TSTR(x));
      int64_t n = x->dims[x->rank - 1];
      if (n == 0) FAIL(INVALID_ARGUMENT, "input 0 %s: the signal is empty", TSTR(x));
      int64_t m = RLX_DIM_DYNAMIC;
      if (n >= 0 && !rlx_mul_i64(2, n / 2 + 1, &m))
        FAIL(RESOURCE_EXHAUSTED, "input 0 %s: the spectrum's real block 2 * (N / 2 + 1) overflows int64", TSTR(x));
      y->dims[x->rank - 1] = m;
      return NULL;
    }
    case RLX_OP_IRFFT: {
      int64_t m, n = AI("n");
      RLX_TRY(signal_length(c, &m));
      if (n < 1) FAIL(INVALID_ARGUMENT, "n (the output length) must be >= 1, got %lld", (long long)n);
      y->dims[x->rank - 1] = n;
      if (x->dtype == RLX_DTYPE_C64) y->dtype = RLX_DTYPE_F32;
      return NULL;
    }
    default:
      FAIL(INTERNAL, "not an fft op");
  }
}
