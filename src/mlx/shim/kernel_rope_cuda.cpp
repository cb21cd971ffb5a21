// kernel_rope_cuda.cpp: the rotary position embedding (Rope, RopeBackward) of float32 x on a GPU,
// as a CUDA source kernel (mx::fast::cuda_kernel, compiled by NVRTC on first use and cached by
// MLX). MLX's composed Rope is two fused elementwise kernels (x1 cos - x2 sin, x2 cos + x1 sin)
// and a copy that interleaves or concatenates their results, after a copy of x when x is a view
// (an LLM step's q and k are columns of the stacked q/k/v product): three to four kernels per
// layer of a decode step for a few thousand values. Here one kernel, one thread per output value,
// reads x through its strides (a view needs no copy) and the tables through theirs; the formula is
// kernel_rope.cpp's:
//   y1 = x1 cos - x2 sin,  y2 = x2 cos + x1 sin  (sin negated for the inverse rotation),
// pairs (2i, 2i + 1) (interleaved) or (i, i + R/2) (NeoX halves) of each head of D values, row s of
// the tables for index s of x's second last axis, the values past R copied.
#include "mlx/fast.h"
#include "mlx/shim/kernels.h"

namespace rlx_kernels {

namespace {

constexpr int kThreads = 256;

constexpr const char *kSource = R"(
  const int nd = x_ndim, last = x_shape[nd - 1], S = x_shape[nd - 2];
  long long rows = 1;
  for (int k = 0; k < nd - 1; k++) rows *= x_shape[k];
  const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= rows * last) return;
  const int j = (int)(e % last), d = j % D, h0 = j - d;
  long long r = e / last, at = 0;
  const int s = (int)(r % S);
  for (int k = nd - 2; k >= 0; k--) {
    at += (r % x_shape[k]) * x_strides[k];
    r /= x_shape[k];
  }
  const long long cj = x_strides[nd - 1];
  if (d >= R) {
    y[e] = x[at + (long long)j * cj];
    return;
  }
  const int hr = R / 2, i = INTERLEAVED ? d / 2 : d % hr;
  const bool second = INTERLEAVED ? (d & 1) : d >= hr;
  const int a = h0 + (INTERLEAVED ? 2 * i : i), b = h0 + (INTERLEAVED ? 2 * i + 1 : i + hr);
  const float x1 = x[at + (long long)a * cj], x2 = x[at + (long long)b * cj];
  const float c = cs[s * cs_strides[0] + i * cs_strides[1]], sn = (INVERSE ? -1.f : 1.f) * sin_t[s * sin_t_strides[0] + i * sin_t_strides[1]];
  y[e] = second ? x2 * c + x1 * sn : x1 * c - x2 * sn;
)";

}  // namespace

mx::array rope_cuda(const mx::array &x, const mx::array &cs, const mx::array &sn, int64_t D, int64_t R, bool interleaved,
                    float sign, mx::Stream s) {
  if (x.size() > (size_t)INT32_MAX - kThreads) throw std::invalid_argument("rope_cuda takes x of fewer than 2^31 - 256 values");
  if (x.size() == 0) return mx::zeros(x.shape(), mx::float32, s);
  static const auto fn = mx::fast::cuda_kernel("rlx_rope", {"x", "cs", "sin_t"}, {"y"}, kSource, "", false, 0);
  int64_t blocks = ((int64_t)x.size() + kThreads - 1) / kThreads;
  auto res = fn({x, cs, sn}, {x.shape()}, {mx::float32}, {(int)(blocks * kThreads), 1, 1}, {kThreads, 1, 1},
                {{"D", (int)D}, {"R", (int)R}, {"INTERLEAVED", interleaved}, {"INVERSE", sign < 0}}, std::nullopt, false, s);
  return res[0];
}

}  // namespace rlx_kernels
