// kernel_matvec_cuda.cpp: y = x W^T for a float16 weight W [N, K] read as stored and float32 x
// (a few rows) on a GPU, as a CUDA source kernel (mx::fast::cuda_kernel, compiled by NVRTC on
// first use and cached by MLX). MLX multiplies equal dtypes only, so float32 x with a float16 W
// would widen all of W at every product (twice the bytes a decode step must read); rounding x to
// float16 instead would change the answers. Here every weight is widened in registers and the
// products are summed in float32: the float32 product of x with the widened W, in another order.
//
// Each warp takes R rows of W (4 for up to 4 rows of x, 1 for more: the accumulators stay in
// registers), WPR warps per R rows (a template argument: more for matrices of fewer rows, so that
// every product keeps enough loads in flight to hide memory latency), 8 warps per block: warp p of
// a group reads 16 bytes (8 weights) of each of its R rows at a time, at weights
// 8 (l + 32 (p + WPR j)) for lane l, and multiplies them with the same 8 entries of each of the M
// rows of x (M a template argument), read once for the R rows; each warp's sums are added by
// shuffles, then a row's WPR partial sums through shared memory. Weights past the last multiple
// of 8, or all of them when W or x is not 16-byte aligned, are read one by one. Memory-bound: a
// decode step reads each weight once, in 16-byte loads coalesced per warp, R of them in flight per
// lane (1.1B decode on an H100: 4 rows a warp 616 and 621 tokens/s, 1 row 588 and 589).
//
// Two fusions save an LLM decode step a kernel each per layer (rlx_mx_matvec_add and
// rlx_mx_matvec's x_once, through the context's `fusible` record): a residual r added to each
// sum as it is stored (y = x W^T + r: attn_output and ffn_down plus the residual stream), and x
// formed as silu(gate) * up from the stacked gate/up product [.., 2K] as it is read (ffn_down of a
// SwiGLU; silu(g) = g / (1 + exp(-g)), recomputed by every warp that reads it). A third saves two
// per layer (rlx_mx_norm records its RMSNorm for rlx_mx_matvec's x_once): x normalized, RMSNorm(x)
// = x g / sqrt(mean(x^2) + eps) (rlx/op_table.h), where x is multiplied by the gain g as it is
// read, every block sums each row's squares once its weights are read (x is a few thousand floats,
// read from L2; before the weights' loads it delayed them), and each row's sum is scaled by its
// 1 / sqrt(mean(x^2) + eps) when it is stored: the same products in another order (attn_qkv and
// ffn_gate/up after their norms).
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
  const int row0 = (blockIdx.x * (8 / WPR) + warp / WPR) * R;  // the warp's R rows from row0
  const __half *w[R];
#pragma unroll
  for (int e = 0; e < R; e++) w[e] = W + (size_t)(row0 + e < N ? row0 + e : 0) * K;
  const bool vec = K % 8 == 0 && (size_t)W % 16 == 0 && (size_t)x % 16 == 0 && GAIN_ALIGNED;
  const int K8 = vec ? K / 8 : 0;
  __shared__ float red[8][R][M];
  __shared__ float nrm[M];
  float acc[R][M];
#pragma unroll
  for (int e = 0; e < R; e++)
#pragma unroll
    for (int m = 0; m < M; m++) acc[e][m] = 0.f;
  if (row0 < N) {
#pragma unroll 2
    for (int j = lane + 32 * part; j < K8; j += 32 * WPR) {
      float wf[R][8];
#pragma unroll
      for (int e = 0; e < R; e++) {
        const uint4 u = reinterpret_cast<const uint4 *>(w[e])[j];
        const __half2 *h = reinterpret_cast<const __half2 *>(&u);
#pragma unroll
        for (int q = 0; q < 4; q++) {
          const float2 f = __half22float2(h[q]);
          wf[e][2 * q] = f.x, wf[e][2 * q + 1] = f.y;
        }
      }
#pragma unroll
      for (int m = 0; m < M; m++) {
        float o[8];
        rlx_x8<SW>(x + (size_t)m * XS, 8 * j, K, o);
        GAIN8(8 * j, o);
#pragma unroll
        for (int e = 0; e < R; e++)
          acc[e][m] += wf[e][0] * o[0] + wf[e][1] * o[1] + wf[e][2] * o[2] + wf[e][3] * o[3] + wf[e][4] * o[4] + wf[e][5] * o[5] +
                       wf[e][6] * o[6] + wf[e][7] * o[7];
      }
    }
    for (int k = 8 * K8 + lane + 32 * part; k < K; k += 32 * WPR) {
#pragma unroll
      for (int m = 0; m < M; m++) {
        const float xk = rlx_x1<SW>(x + (size_t)m * XS, k, K) * GAIN1(k);
#pragma unroll
        for (int e = 0; e < R; e++) acc[e][m] += __half2float(w[e][k]) * xk;
      }
    }
  }
  if (NORM) {  // each row's 1 / sqrt(mean(x^2) + eps), by the whole block, once its weights are read
#pragma unroll
    for (int m = 0; m < M; m++) {
      float v = 0.f;
      for (int k = threadIdx.x; k < K; k += blockDim.x) v += x[(size_t)m * XS + k] * x[(size_t)m * XS + k];
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      if (lane == 0) red[warp][0][m] = v;
    }
    __syncthreads();
    if (threadIdx.x < M) {
      float v = 0.f;
#pragma unroll
      for (int p = 0; p < 8; p++) v += red[p][0][threadIdx.x];
      nrm[threadIdx.x] = rsqrtf(v / K + __int_as_float(EPS_BITS));
    }
    __syncthreads();
  }
#pragma unroll
  for (int e = 0; e < R; e++)
#pragma unroll
    for (int m = 0; m < M; m++) {
      float v = acc[e][m];
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      if (lane == 0) red[warp][e][m] = v;
    }
  __syncthreads();
  const int e = lane / M, m = lane % M, row = row0 + e;
  if (part == 0 && lane < R * M && row < N) {
    float v = 0.f;
#pragma unroll
    for (int p = 0; p < WPR; p++) v += red[warp + p][e][m];
    y[(size_t)m * N + row] = (NORM ? v * nrm[m] : v) + RESIDUAL((size_t)m * N + row);
  }
)";

// The kernel with a residual r (inputs x, W[, g], r) or not, and x normalized by RMSNorm with gain g
// or not.
mx::fast::CustomKernelFunction variant(const char *name, bool residual, bool norm) {
  std::vector<std::string> in = {"x", "W"};
  if (norm) in.push_back("g");
  if (residual) in.push_back("r");
  std::string h = kHeader;
  h += residual ? "#define RESIDUAL(i) r[i]\n" : "#define RESIDUAL(i) 0.f\n";
  h += norm ? "#define NORM 1\n#define GAIN_ALIGNED ((size_t)g % 16 == 0)\n#define GAIN1(k) g[k]\n"
              "#define GAIN8(k, f) { const float4 ga = *reinterpret_cast<const float4 *>(g + (k)), "
              "gb = *reinterpret_cast<const float4 *>(g + (k) + 4); f[0] *= ga.x, f[1] *= ga.y, f[2] *= ga.z, f[3] *= ga.w, "
              "f[4] *= gb.x, f[5] *= gb.y, f[6] *= gb.z, f[7] *= gb.w; }\n"
            : "#define NORM 0\n#define GAIN_ALIGNED true\n#define GAIN1(k) 1.f\n#define GAIN8(k, f)\n";
  return mx::fast::cuda_kernel(name, in, {"y"}, kSource, h, true, 0);
}

}  // namespace

mx::array matvec_f16_cuda(const mx::array &x, const mx::array &w, mx::Stream s, int swiglu, const mx::array *residual,
                          const mx::array *norm, float eps) {
  const int64_t K = w.ndim() == 2 ? w.shape()[1] : -1, N = w.ndim() == 2 ? w.shape()[0] : -1, M = rows_of(x);
  if (M < 1 || M > RLX_MX_CUDA_MATVEC_MAX_ROWS || N > INT32_MAX / kThreads || w.dtype() != mx::float16 ||
      x.shape().back() != (swiglu ? 2 * K : K) || swiglu < 0 || swiglu > 2)
    throw std::invalid_argument("matvec_f16_cuda takes x [.., K] (with swiglu [.., 2K]) of 1-8 rows and a float16 W [N, K] of at most 2^23 rows");
  mx::Shape shape = x.shape();
  shape.back() = (int)N;
  if (residual && (residual->shape() != shape || residual->dtype() != mx::float32))
    throw std::invalid_argument("matvec_f16_cuda's residual is float32 of the product's shape");
  if (norm && (swiglu || norm->ndim() != 1 || norm->shape(0) != K))
    throw std::invalid_argument("matvec_f16_cuda's norm gain is [K], without swiglu");
  if (N == 0) return mx::zeros(shape, mx::float32, s);
  // four variants: with or without a residual, with or without x's RMSNorm
  static const auto fn = variant("rlx_matvec_f16", false, false), fn_r = variant("rlx_matvec_f16_res", true, false),
                    fn_n = variant("rlx_matvec_f16_norm", false, true), fn_nr = variant("rlx_matvec_f16_norm_res", true, true);
  // x, r and y in their own shapes (the kernel reads M rows of K, writes M of N: no reshape nodes)
  std::vector<mx::array> in = {mx::astype(x, mx::float32, s), w};
  if (norm) in.push_back(mx::astype(*norm, mx::float32, s));
  if (residual) in.push_back(*residual);
  // R rows per warp (R = 1 for 8 rows of x: the accumulators), WPR warps per R rows: about 2048
  // warps in all (16 per SM of an H100) where W has few rows (1.1B decode on an H100 by CUPTI,
  // against 4096: ffn_gate/up 0.445 -> 0.427 ms per step, ffn_down 0.265 -> 0.254, attn_qkv
  // 0.161 -> 0.144: fewer warps, each reading more of its rows)
  const int R = M > 4 ? 1 : 4;
  int wpr = 1;
  while (wpr < 8 && N * wpr / R < 2048) wpr *= 2;
  const int64_t rows = (int64_t)R * (8 / wpr), blocks = (N + rows - 1) / rows;
  int eps_bits;
  std::memcpy(&eps_bits, &eps, sizeof eps_bits);
  const auto &f = norm ? (residual ? fn_nr : fn_n) : (residual ? fn_r : fn);
  return f(in, {shape}, {mx::float32}, {(int)(blocks * kThreads), 1, 1}, {kThreads, 1, 1},
           {{"M", (int)M}, {"R", R}, {"WPR", wpr}, {"SW", swiglu}, {"EPS_BITS", norm ? eps_bits : 0}}, std::nullopt, false, s)[0];
}

}  // namespace rlx_kernels
