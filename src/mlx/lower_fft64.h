/* lower_fft64.h: an exact float64 DFT composed of MLX float64 ops (lower_fft64.c). MLX's own FFT
 * computes in complex64, so float64 signals take this path to keep float64 precision. */
#ifndef RLX_MLX_LOWER_FFT64_H
#define RLX_MLX_LOWER_FFT64_H

#include "mlx/lower.h"

/* A complex float64 array as its real and imaginary parts (same shape). */
typedef struct rlx_l_cplx {
  rlx_mx_arr *re, *im;
} rlx_l_cplx;

/* The unscaled DFT of the m rows of x ([m, n] float64 parts) along the last axis:
 * X_k = sum_j x_j exp(sign 2 pi i j k / n), sign -1 forward, +1 inverse. Errors go to L. */
rlx_l_cplx rlx_l_dft64(rlx_lower *L, rlx_l_cplx x, int64_t m, int64_t n, int sign);

#endif
