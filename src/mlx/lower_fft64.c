/* lower_fft64.c: an exact float64 DFT from MLX float64 ops (matmul, elementwise, reshapes).
 *
 * Method (no complex64 anywhere):
 * - n <= 64, or a prime n <= 1024: one DFT matrix, X = x W with W[j,k] = exp(sign 2 pi i jk/n)
 *   (four real float64 matmuls).
 * - composite n = n1 n2 (n1 the largest divisor <= sqrt n): the four-step Cooley-Tukey
 *   factorization (Cooley & Tukey 1965; Bailey 1990, "FFTs in external or hierarchical memory"):
 *   n2 DFTs of size n1, a twiddle multiply by exp(sign 2 pi i n2' k1/n), n1 DFTs of size n2 and a
 *   transpose; the sub-DFTs recurse.
 * - a prime n > 1024: Bluestein's chirp-z algorithm (Bluestein 1970): with c_j = exp(sign i pi
 *   j^2/n), X_k = c_k sum_j (x_j c_j) conj(c_{k-j}), a cyclic convolution of power-of-two length
 *   done with three DFTs of that length.
 * The twiddle and chirp tables are computed on the host in double precision with the angle's
 * integer part reduced exactly (j k mod n, j^2 mod 2n), then copied into MLX arrays; MLX's own
 * float64 sin/cos run at about float32 precision on the CPU and are not used. */
#include "mlx/lower_fft64.h"

#include <math.h>
#include <stdlib.h>

#define DIRECT_MAX 64
#define PRIME_DIRECT_MAX 1024

static rlx_mx_arr *f64_const(rlx_lower *L, const double *v, int rank, const int64_t *dims) {
  rlx_type t = {.dtype = RLX_DTYPE_F64, .rank = rank};
  for (int i = 0; i < rank; i++) t.dims[i] = dims[i];
  return rlx_mx_from_bytes(L->mx, v, &t);
}

/* The twiddle table W[j,k] = exp(sign 2 pi i (j k mod n) / n), j < rows, k < cols, as two
 * float64 arrays [rows, cols]. */
static rlx_l_cplx table(rlx_lower *L, int64_t rows, int64_t cols, int64_t n, int sign) {
  rlx_l_cplx w = {NULL, NULL};
  size_t cnt;
  if (!rlx_mul_size((size_t)rows, (size_t)cols, &cnt) || cnt > ((size_t)1 << 26)) {
    rlx_lower_fail(L, RLX_STATUS_RESOURCE_EXHAUSTED, "float64 DFT: a %lld x %lld twiddle table is too large", (long long)rows, (long long)cols);
    return w;
  }
  double *re = malloc(cnt * sizeof *re), *im = malloc(cnt * sizeof *im);
  if (!re || !im) {
    free(re), free(im);
    rlx_lower_fail(L, RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory for a float64 DFT table");
    return w;
  }
  for (int64_t j = 0; j < rows; j++)
    for (int64_t k = 0; k < cols; k++) {
      double a = 2.0 * M_PI * (double)((j * k) % n) / (double)n;
      re[j * cols + k] = cos(a);
      im[j * cols + k] = sign * sin(a);
    }
  int64_t dims[2] = {rows, cols};
  w.re = f64_const(L, re, 2, dims);
  w.im = f64_const(L, im, 2, dims);
  free(re), free(im);
  return w;
}

static rlx_mx_arr *mul(rlx_lower *L, rlx_mx_arr *a, rlx_mx_arr *b) { return rlx_mx_binary(L->mx, RLX_MXB_MULTIPLY, a, b); }
static rlx_mx_arr *add(rlx_lower *L, rlx_mx_arr *a, rlx_mx_arr *b) { return rlx_mx_binary(L->mx, RLX_MXB_ADD, a, b); }
static rlx_mx_arr *sub(rlx_lower *L, rlx_mx_arr *a, rlx_mx_arr *b) { return rlx_mx_binary(L->mx, RLX_MXB_SUBTRACT, a, b); }

/* Elementwise complex product (broadcasting). */
static rlx_l_cplx cmul(rlx_lower *L, rlx_l_cplx a, rlx_l_cplx b) {
  return (rlx_l_cplx){sub(L, mul(L, a.re, b.re), mul(L, a.im, b.im)), add(L, mul(L, a.re, b.im), mul(L, a.im, b.re))};
}

/* Complex matrix product x @ w. */
static rlx_l_cplx cmatmul(rlx_lower *L, rlx_l_cplx x, rlx_l_cplx w) {
  rlx_mx *c = L->mx;
  return (rlx_l_cplx){sub(L, rlx_mx_matmul(c, x.re, w.re), rlx_mx_matmul(c, x.im, w.im)),
                      add(L, rlx_mx_matmul(c, x.re, w.im), rlx_mx_matmul(c, x.im, w.re))};
}

static rlx_l_cplx reshape(rlx_lower *L, rlx_l_cplx x, int rank, const int64_t *dims) {
  return (rlx_l_cplx){rlx_mx_reshape(L->mx, x.re, rank, dims), rlx_mx_reshape(L->mx, x.im, rank, dims)};
}

/* [a, b, c] -> [a, c, b]. */
static rlx_l_cplx swap_last(rlx_lower *L, rlx_l_cplx x) {
  return (rlx_l_cplx){rlx_l_swap(L, x.re, 3, 1, 2), rlx_l_swap(L, x.im, 3, 1, 2)};
}

/* Largest divisor d of n with 1 < d and d * d <= n; 0 when n is prime. */
static int64_t split(int64_t n) {
  int64_t best = 0;
  for (int64_t d = 2; d * d <= n; d++)
    if (n % d == 0) best = d;
  return best;
}

/* Four-step: n = n1 n2, input index j = n2 j1 + j2, output index k = k1 + n1 k2. */
static rlx_l_cplx four_step(rlx_lower *L, rlx_l_cplx x, int64_t m, int64_t n1, int64_t n2, int sign) {
  x = swap_last(L, reshape(L, x, 3, (int64_t[]){m, n1, n2}));                 /* [m, j2, j1] */
  x = rlx_l_dft64(L, reshape(L, x, 2, (int64_t[]){m * n2, n1}), m * n2, n1, sign); /* [m*n2, k1] */
  x = cmul(L, reshape(L, x, 3, (int64_t[]){m, n2, n1}), table(L, n2, n1, n1 * n2, sign));
  x = swap_last(L, x);                                                          /* [m, k1, j2] */
  x = rlx_l_dft64(L, reshape(L, x, 2, (int64_t[]){m * n1, n2}), m * n1, n2, sign); /* [m*n1, k2] */
  x = swap_last(L, reshape(L, x, 3, (int64_t[]){m, n1, n2}));                 /* [m, k2, k1] */
  return reshape(L, x, 2, (int64_t[]){m, n1 * n2});
}

/* Bluestein: a cyclic convolution of power-of-two length len >= 2n - 1. */
static rlx_l_cplx bluestein(rlx_lower *L, rlx_l_cplx x, int64_t m, int64_t n, int sign) {
  rlx_mx *c = L->mx;
  int64_t len = 1;
  while (len < 2 * n - 1) len *= 2;
  double *buf = calloc((size_t)(2 * n + 2 * len), sizeof *buf);
  if (!buf) {
    rlx_lower_fail(L, RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory for a float64 DFT chirp");
    return x;
  }
  double *cre = buf, *cim = buf + n, *bre = buf + 2 * n, *bim = bre + len;
  for (int64_t j = 0; j < n; j++) { /* c_j = exp(sign i pi j^2 / n); b = conj(c), wrapped */
    double a = M_PI * (double)((j * j) % (2 * n)) / (double)n;
    cre[j] = cos(a), cim[j] = sign * sin(a);
    bre[j] = cre[j], bim[j] = -cim[j];
    if (j) bre[len - j] = cre[j], bim[len - j] = -cim[j];
  }
  rlx_l_cplx chirp = {f64_const(L, cre, 1, &n), f64_const(L, cim, 1, &n)};
  rlx_l_cplx b = {f64_const(L, bre, 2, (int64_t[]){1, len}), f64_const(L, bim, 2, (int64_t[]){1, len})};
  free(buf);
  rlx_l_cplx a = cmul(L, x, chirp);
  rlx_mx_arr *zero = rlx_mx_scalar(c, 0, RLX_DTYPE_F64);
  int64_t lo[2] = {0, 0}, hi[2] = {0, len - n};
  a.re = rlx_mx_pad(c, a.re, 2, lo, hi, zero, "constant");
  a.im = rlx_mx_pad(c, a.im, 2, lo, hi, zero, "constant");
  rlx_l_cplx prod = cmul(L, rlx_l_dft64(L, a, m, len, -1), rlx_l_dft64(L, b, 1, len, -1));
  rlx_l_cplx conv = rlx_l_dft64(L, prod, m, len, 1);
  rlx_mx_arr *inv = rlx_mx_scalar(c, 1.0 / (double)len, RLX_DTYPE_F64);
  rlx_type t = {.dtype = RLX_DTYPE_F64, .rank = 2, .dims = {m, len}};
  conv.re = mul(L, rlx_l_narrow(L, conv.re, &t, 1, 0, n), inv);
  conv.im = mul(L, rlx_l_narrow(L, conv.im, &t, 1, 0, n), inv);
  return cmul(L, conv, chirp);
}

rlx_l_cplx rlx_l_dft64(rlx_lower *L, rlx_l_cplx x, int64_t m, int64_t n, int sign) {
  if (n == 1 || rlx_mx_failed(L->mx)) return x;
  int64_t n1 = n <= DIRECT_MAX ? 0 : split(n);
  if (n1) return four_step(L, x, m, n1, n / n1, sign);
  if (n <= PRIME_DIRECT_MAX) return cmatmul(L, x, table(L, n, n, n, sign));
  return bluestein(L, x, m, n, sign);
}
