// kernel_scatter_cuda.cpp: rlx_mx_put_along_axis_inplace (kernel_scatter.cpp) on a GPU, as a CUDA
// source kernel (mx::fast::cuda_kernel, compiled by NVRTC on first use and cached by MLX): one
// thread per element of upd writes it into x's own buffer, at x's coordinates with the axis
// coordinate replaced by the index (ONNX ScatterElements, reduction none), all three read through
// their strides. A source kernel's outputs are new buffers, so the kernel's output is a one-element
// marker and the result is x made to depend on it (mx::depends: x's buffer, ordered after the
// kernel).
#include "mlx/fast.h"
#include "mlx/shim/kernels.h"

namespace rlx_kernels {

namespace {

constexpr int kThreads = 256;

constexpr const char *kSource = R"(
  const int nd = idx_ndim;
  long long n = 1;
  for (int d = 0; d < nd; d++) n *= idx_shape[d];
  const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (e == 0) done[0] = 1;
  if (e >= n) return;
  long long r = e, oi = 0, ou = 0, ox = 0;
  int ax = 0;
  for (int d = nd - 1; d >= 0; d--) {
    const long long c = r % idx_shape[d];
    r /= idx_shape[d];
    oi += c * idx_strides[d];
    ou += c * upd_strides[d];
    if (d != AXIS) ox += c * x_strides[d];
  }
  ox += (long long)idx[oi] * x_strides[AXIS];
  const_cast<T *>(x)[ox] = upd[ou];
)";

}  // namespace

mx::array put_inplace_cuda(const mx::array &x, const mx::array &idx, const mx::array &upd, int axis, mx::Stream s) {
  if (idx.size() > (size_t)INT32_MAX - kThreads) throw std::invalid_argument("put_inplace_cuda takes fewer than 2^31 - 256 updates");
  if (idx.size() == 0) return x;
  static const auto fn = mx::fast::cuda_kernel("rlx_put_inplace", {"x", "idx", "upd"}, {"done"}, kSource, "", false, 0);
  int64_t blocks = ((int64_t)idx.size() + kThreads - 1) / kThreads;
  auto marker = fn({x, idx, upd}, {mx::Shape{1}}, {mx::int32}, {(int)(blocks * kThreads), 1, 1}, {kThreads, 1, 1},
                   {{"T", x.dtype()}, {"AXIS", axis}}, std::nullopt, false, s);
  return mx::depends({x}, marker)[0];
}

}  // namespace rlx_kernels
