/* lower_fft.c: Fft, Rfft, Irfft (see rlx/op_table.h).
 * complex64 and float32 signals use MLX's FFT (mx::fft, pocketfft on the CPU) in complex64;
 * float16/bfloat16 real blocks compute in float32 and are cast back; float64 signals use the exact
 * float64 DFT of lower_fft64.c, never complex64. */
#include "mlx/lower_fft64.h"

#include <math.h>
#include <stdlib.h>

/* Real block [.., 2N] (float32) -> complex64 [.., N]: the leading dims as one, (re, im) pairs
 * stacked and reinterpreted ([B, 2, N] -> [B, N, 2] -> [B, N, 1]; a block of rank RLX_MAX_RANK has
 * no room for the pair axis otherwise). */
static rlx_mx_arr *block_to_complex(rlx_lower *L, rlx_mx_arr *x, const rlx_type *t) {
  rlx_mx *c = L->mx;
  int r = t->rank;
  int64_t n = t->dims[r - 1] / 2, rows = 1;
  for (int i = 0; i < r - 1; i++) rows *= t->dims[i];
  rlx_type pairs = {.dtype = t->dtype, .rank = 3, .dims = {rows, 2, n}};
  x = rlx_l_swap(L, rlx_l_reshape(L, x, &pairs), 3, 1, 2); /* [B, N, 2] */
  x = rlx_mx_view(c, x, RLX_DTYPE_C64);                     /* [B, N, 1] */
  pairs = *t;
  pairs.dims[r - 1] = n;
  return rlx_l_reshape(L, x, &pairs);
}

/* complex64 [.., N] -> real block [.., 2N] (float32). */
static rlx_mx_arr *complex_to_block(rlx_lower *L, rlx_mx_arr *z, int rank) {
  rlx_mx *c = L->mx;
  rlx_mx_arr *parts[2] = {rlx_mx_unary(c, RLX_MXU_REAL, z), rlx_mx_unary(c, RLX_MXU_IMAG, z)};
  return rlx_mx_concatenate(c, parts, 2, rank - 1);
}

/* x cast to dt unless it already is. */
static rlx_mx_arr *as(rlx_lower *L, rlx_mx_arr *x, rlx_dtype from, rlx_dtype to) {
  return from == to ? x : rlx_mx_astype(L->mx, x, to);
}

/* The float32 path: real block of type t -> complex64, MLX transform `kind`, back to the node's
 * output layout (a real block, or the real signal of irfft) in dtype `out`. */
static rlx_mx_arr *via_complex64(rlx_lower *L, rlx_mx_arr *x, const rlx_type *t, int kind, int64_t n, int norm, rlx_dtype out) {
  rlx_mx *c = L->mx;
  rlx_type t32 = *t;
  t32.dtype = RLX_DTYPE_F32;
  rlx_mx_arr *z = as(L, x, t->dtype, RLX_DTYPE_F32);
  if (kind != 2) z = block_to_complex(L, z, &t32);
  z = rlx_mx_fft(c, z, kind, n, -1, norm);
  if (kind != 3) z = complex_to_block(L, z, t->rank);
  return as(L, z, RLX_DTYPE_F32, out);
}

/* float64: the signal as [rows, N] parts (imaginary zero for a real signal). */
static rlx_l_cplx split_rows(rlx_lower *L, rlx_mx_arr *x, const rlx_type *t, bool block, int64_t *rows, int64_t *len) {
  int64_t last = t->dims[t->rank - 1], numel = 1;
  for (int i = 0; i < t->rank; i++) numel *= t->dims[i];
  *len = block ? last / 2 : last;
  *rows = last ? numel / last : 0;
  rlx_type r2 = {.dtype = RLX_DTYPE_F64, .rank = 2, .dims = {*rows, last}};
  x = rlx_l_reshape(L, x, &r2);
  if (!block) return (rlx_l_cplx){x, rlx_mx_full(L->mx, 2, r2.dims, 0, RLX_DTYPE_F64)};
  return (rlx_l_cplx){rlx_l_narrow(L, x, &r2, 1, 0, *len), rlx_l_narrow(L, x, &r2, 1, *len, *len)};
}

/* The norm's factor for a transform of length n in direction inverse (0 forward, 1 inverse). */
static double norm_scale(int norm, bool inverse, int64_t n) {
  if (norm == 1) return 1.0 / sqrt((double)n);
  return (norm == 0) == inverse ? 1.0 / (double)n : 1.0;
}

static rlx_l_cplx scaled(rlx_lower *L, rlx_l_cplx x, double s) {
  if (s == 1.0) return x;
  rlx_mx_arr *k = rlx_mx_scalar(L->mx, s, RLX_DTYPE_F64);
  return (rlx_l_cplx){rlx_mx_binary(L->mx, RLX_MXB_MULTIPLY, x.re, k), rlx_mx_binary(L->mx, RLX_MXB_MULTIPLY, x.im, k)};
}

/* [rows, K] parts, first `keep` columns -> real block of the node's output type. */
static rlx_mx_arr *join_block(rlx_lower *L, rlx_l_cplx y, int64_t rows, int64_t k, int64_t keep, const rlx_type *to) {
  rlx_type t = {.dtype = RLX_DTYPE_F64, .rank = 2, .dims = {rows, k}};
  rlx_mx_arr *parts[2] = {rlx_l_narrow(L, y.re, &t, 1, 0, keep), rlx_l_narrow(L, y.im, &t, 1, 0, keep)};
  return rlx_l_reshape(L, rlx_mx_concatenate(L->mx, parts, 2, 1), to);
}

/* float64 Irfft: the half spectrum [rows, m] cut or zero-padded to h = n/2 + 1 bins, extended to
 * the Hermitian full spectrum (X[n-k] = conj X[k]), inverse DFT, real part. */
static rlx_mx_arr *irfft64(rlx_lower *L, rlx_l_cplx x, int64_t rows, int64_t m, int64_t n, int norm, const rlx_type *to) {
  rlx_mx *c = L->mx;
  int64_t h = n / 2 + 1, keep = m < h ? m : h;
  rlx_type t = {.dtype = RLX_DTYPE_F64, .rank = 2, .dims = {rows, m}};
  x.re = rlx_l_narrow(L, x.re, &t, 1, 0, keep);
  x.im = rlx_l_narrow(L, x.im, &t, 1, 0, keep);
  if (keep < h) {
    int64_t lo[2] = {0, 0}, hi[2] = {0, h - keep};
    rlx_mx_arr *zero = rlx_mx_scalar(c, 0, RLX_DTYPE_F64);
    x.re = rlx_mx_pad(c, x.re, 2, lo, hi, zero, "constant");
    x.im = rlx_mx_pad(c, x.im, 2, lo, hi, zero, "constant");
  }
  int32_t *idx = malloc((size_t)n * sizeof *idx);
  double *sgn = malloc((size_t)n * sizeof *sgn);
  if (!idx || !sgn) {
    free(idx), free(sgn);
    rlx_lower_fail(L, RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory for Irfft indices");
    return NULL;
  }
  for (int64_t k = 0; k < n; k++) idx[k] = (int32_t)(k < h ? k : n - k), sgn[k] = k < h ? 1.0 : -1.0;
  rlx_type ti = {.dtype = RLX_DTYPE_I32, .rank = 1, .dims = {n}}, ts = {.dtype = RLX_DTYPE_F64, .rank = 1, .dims = {n}};
  rlx_mx_arr *ix = rlx_mx_from_bytes(c, idx, &ti), *sg = rlx_mx_from_bytes(c, sgn, &ts);
  free(idx), free(sgn);
  rlx_l_cplx full = {rlx_mx_take(c, x.re, ix, 1), rlx_mx_binary(c, RLX_MXB_MULTIPLY, rlx_mx_take(c, x.im, ix, 1), sg)};
  rlx_l_cplx y = scaled(L, rlx_l_dft64(L, full, rows, n, 1), norm_scale(norm, true, n));
  return rlx_l_reshape(L, y.re, to);
}

void rlx_lower_fft(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  const rlx_type *t = rlx_in_type(L, n, 0), *to = rlx_out_type(L, n, 0);
  int norm = rlx_fft_norm(rlx_node_s(n, "norm"));
  bool inverse = n->op == RLX_OP_IRFFT || rlx_node_i(n, "inverse") != 0;
  int64_t rows, len;
  if (t->dtype == RLX_DTYPE_F64) {
    rlx_l_cplx x = split_rows(L, in[0], t, n->op != RLX_OP_RFFT, &rows, &len);
    if (n->op == RLX_OP_IRFFT) {
      out[0] = irfft64(L, x, rows, len, rlx_node_i(n, "n"), norm, to);
      return;
    }
    rlx_l_cplx y = scaled(L, rlx_l_dft64(L, x, rows, len, inverse ? 1 : -1), norm_scale(norm, inverse, len));
    out[0] = join_block(L, y, rows, len, n->op == RLX_OP_RFFT ? len / 2 + 1 : len, to);
    return;
  }
  int kind = n->op == RLX_OP_RFFT ? 2 : n->op == RLX_OP_IRFFT ? 3 : inverse ? 1 : 0;
  int64_t nn = n->op == RLX_OP_IRFFT ? rlx_node_i(n, "n") : -1;
  if (t->dtype == RLX_DTYPE_C64) out[0] = rlx_mx_fft(L->mx, in[0], kind, nn, -1, norm);
  else out[0] = via_complex64(L, in[0], t, kind, nn, norm, to->dtype);
}
