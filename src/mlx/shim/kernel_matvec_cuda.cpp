// kernel_matvec_cuda.cpp: y = x W^T for a float16 weight W [N, K] read as stored and float32 x
// (a few rows) on a GPU, as a CUDA source kernel (mx::fast::cuda_kernel, compiled by NVRTC on
// first use and cached by MLX). MLX multiplies equal dtypes only, so float32 x with a float16 W
// would widen all of W at every product (twice the bytes a decode step must read); rounding x to
// float16 instead would change the answers. Here every weight is widened in registers and the
// products are summed in float32: the float32 product of x with the widened W, in another order.
//
// WPR warps per row of W (a template argument: more for matrices of fewer rows, so that every
// product keeps enough loads in flight to hide memory latency), 8 warps per block: warp p of a
// row reads 16 bytes (8 weights) at a time, at weights 8 (l + 32 (p + WPR j)) for lane l, and
// multiplies them with the same 8 entries of each of the M rows of x (M a template argument: the
// accumulators stay in registers); each warp's sums are added by shuffles, then the row's WPR
// partial sums through shared memory. Weights past the last multiple of 8, or all of them when W
// or x is not 16-byte aligned, are read one by one. Memory-bound: a decode step reads each weight
// once, in 16-byte loads coalesced per warp.
//
// Two fusions save an LLM decode step a kernel each per layer (rlx_mx_matvec_add and
// rlx_mx_matvec's x_once, through the context's `fusible` record): a residual r added to each
// sum as it is stored (y = x W^T + r: attn_output and ffn_down plus the residual stream), and x
// formed as silu(gate) * up from the stacked gate/up product [.., 2K] as it is read (ffn_down of a
// SwiGLU; silu(g) = g / (1 + exp(-g)), recomputed by every warp that reads it).
#include "mlx/fast.h"
#include "mlx/shim/kernels.h"

namespace rlx_kernels {

namespace {

constexpr int kThreads = 256;

// x's value k of row xr (its row of [.., K], or of the stacked [.., 2K] when SW: 1 gate first, 2 up
// first), and 8 of them from k (k a multiple of 8, xr 16-byte aligned).
constexpr const char *kHeader = R"(
template <int SW> __device__ inline float rlx_x1(const float *xr, int k, int K) {
  if (SW == 0) return xr[k];
  const float g = xr[(SW == 1 ? 0 : K) + k], u = xr[(SW == 1 ? K : 0) + k];
  return g / (1.f + expf(-g)) * u;
}
template <int SW> __device__ inline void rlx_x8(const float *xr, int k, int K, float *o) {
  const float4 a = *reinterpret_cast<const float4 *>(xr + (SW == 2 ? K : 0) + k), b = *reinterpret_cast<const float4 *>(xr + (SW == 2 ? K : 0) + k + 4);
  o[0] = a.x, o[1] = a.y, o[2] = a.z, o[3] = a.w, o[4] = b.x, o[5] = b.y, o[6] = b.z, o[7] = b.w;
  if (SW == 0) return;
  const float4 c = *reinterpret_cast<const float4 *>(xr + (SW == 1 ? K : 0) + k), d = *reinterpret_cast<const float4 *>(xr + (SW == 1 ? K : 0) + k + 4);
  const float u[8] = {c.x, c.y, c.z, c.w, d.x, d.y, d.z, d.w};
#pragma unroll
  for (int i = 0; i < 8; i++) o[i] = o[i] / (1.f + expf(-o[i])) * u[i];
}
)";

constexpr const char *kSource = R"(
  const int N = W_shape[0], K = W_shape[1], XS = SW ? 2 * K : K;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, part = warp % WPR;
  const int row = blockIdx.x * (8 / WPR) + warp / WPR;
  const bool active = row < N;
  const __half *w = W + (size_t)(active ? row : 0) * K;
  const bool vec = K % 8 == 0 && (size_t)W % 16 == 0 && (size_t)x % 16 == 0;
  const int K8 = vec ? K / 8 : 0;
  __shared__ float red[8][M];
  float acc[M];
#pragma unroll
  for (int m = 0; m < M; m++) acc[m] = 0.f;
  if (active) {
#pragma unroll 4
    for (int j = lane + 32 * part; j < K8; j += 32 * WPR) {
      const uint4 u = reinterpret_cast<const uint4 *>(w)[j];
      const __half2 *h = reinterpret_cast<const __half2 *>(&u);
      const float2 w0 = __half22float2(h[0]), w1 = __half22float2(h[1]), w2 = __half22float2(h[2]), w3 = __half22float2(h[3]);
#pragma unroll
      for (int m = 0; m < M; m++) {
        float o[8];
        rlx_x8<SW>(x + (size_t)m * XS, 8 * j, K, o);
        acc[m] += w0.x * o[0] + w0.y * o[1] + w1.x * o[2] + w1.y * o[3] + w2.x * o[4] + w2.y * o[5] + w3.x * o[6] + w3.y * o[7];
      }
    }
    for (int k = 8 * K8 + lane + 32 * part; k < K; k += 32 * WPR) {
      const float wk = __half2float(w[k]);
#pragma unroll
      for (int m = 0; m < M; m++) acc[m] += wk * rlx_x1<SW>(x + (size_t)m * XS, k, K);
    }
  }
#pragma unroll
  for (int m = 0; m < M; m++) {
    float v = acc[m];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) red[warp][m] = v;
  }
  __syncthreads();
  if (active && part == 0 && lane < M) {
    float v = 0.f;
#pragma unroll
    for (int p = 0; p < WPR; p++) v += red[warp + p][lane];
    y[(size_t)lane * N + row] = v + RESIDUAL((size_t)lane * N + row);
  }
)";

}  // namespace

mx::array matvec_f16_cuda(const mx::array &x, const mx::array &w, mx::Stream s, int swiglu, const mx::array *residual) {
  const int64_t K = w.ndim() == 2 ? w.shape()[1] : -1, N = w.ndim() == 2 ? w.shape()[0] : -1, M = rows_of(x);
  if (M < 1 || M > RLX_MX_CUDA_MATVEC_MAX_ROWS || N > INT32_MAX / kThreads || w.dtype() != mx::float16 ||
      x.shape().back() != (swiglu ? 2 * K : K) || swiglu < 0 || swiglu > 2)
    throw std::invalid_argument("matvec_f16_cuda takes x [.., K] (with swiglu [.., 2K]) of 1-8 rows and a float16 W [N, K] of at most 2^23 rows");
  mx::Shape shape = x.shape();
  shape.back() = (int)N;
  if (residual && (residual->shape() != shape || residual->dtype() != mx::float32))
    throw std::invalid_argument("matvec_f16_cuda's residual is float32 of the product's shape");
  if (N == 0) return mx::zeros(shape, mx::float32, s);
  static const auto fn =
      mx::fast::cuda_kernel("rlx_matvec_f16", {"x", "W"}, {"y"}, kSource, std::string(kHeader) + "#define RESIDUAL(i) 0.f\n", true, 0);
  static const auto fn_r = mx::fast::cuda_kernel("rlx_matvec_f16_res", {"x", "W", "r"}, {"y"}, kSource,
                                                 std::string(kHeader) + "#define RESIDUAL(i) r[i]\n", true, 0);
  std::vector<mx::array> in = {mx::reshape(mx::astype(x, mx::float32, s), {(int)M, (int)x.shape().back()}, s), w};
  if (residual) in.push_back(mx::reshape(*residual, {(int)M, (int)N}, s));
  // warps per row: about 4096 warps in all (32 per SM of an H100) where W has few rows
  int wpr = 1;
  while (wpr < 8 && N * wpr < 4096) wpr *= 2;
  int64_t blocks = (N + 8 / wpr - 1) / (8 / wpr);
  auto res = (residual ? fn_r : fn)(in, {{(int)M, (int)N}}, {mx::float32}, {(int)(blocks * kThreads), 1, 1}, {kThreads, 1, 1},
                                     {{"M", (int)M}, {"WPR", wpr}, {"SW", swiglu}}, std::nullopt, false, s);
  return mx::reshape(res[0], shape, s);
}

}  // namespace rlx_kernels
