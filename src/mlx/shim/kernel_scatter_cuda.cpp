// kernel_scatter_cuda.cpp: rlx_mx_put_along_axis_inplace (kernel_scatter.cpp) on a GPU, as a CUDA
// source kernel (mx::fast::cuda_kernel, compiled by NVRTC on first use and cached by MLX): one
// thread per element of upd writes it into x's own buffer, at x's coordinates with the axis
// coordinate replaced by the index (ONNX ScatterElements, reduction none), all three read through
// their strides.
//
// Ordering. MLX's CUDA backend records a stream's kernels into CUDA graphs whose edges come from
// buffers: a node depends on the last node that declared one of its buffers as an *output*
// (mlx/backend/cuda/device.cpp, CommandEncoder::set_output_array / insert_graph_dependencies). A
// source kernel's outputs are always new buffers, so this kernel's output is a one-element marker
// and the result is x made to depend on it (mx::depends: x's buffer, no kernel of its own). A reader
// of that result gets no graph edge from the write through x's buffer: it must also read the
// marker. rlx's decode attention kernel takes the markers of its k and v as inputs
// (kernel_attention_cuda.cpp); any other reader is ordered by rlx_mx_after_writes. But a copy MLX
// makes inside a reader's evaluation (a source kernel's ensure_row_contiguous of a transposed
// view) is a graph node of its own that reads no marker: the executable writes in place on a GPU
// only where every reader of the written cache is an Attention taking it heads first, as it is
// (exec_handles.c).
#include <cstring>

#include "mlx/fast.h"
#include "mlx/shim/kernels.h"
#include "mlx/shim/shim_impl.h"

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

// Whether a is an mx::depends result (its primitive's inputs: the arrays, then the dependencies).
bool is_depends(const mx::array &a) { return a.has_primitive() && std::strcmp(a.primitive().name(), "Depends") == 0; }

// Primitives whose output is a view of their one input's buffer (no kernel on a GPU).
bool is_view(const mx::array &a) {
  if (!a.has_primitive() || a.inputs().size() != 1) return false;
  const char *n = a.primitive().name();
  return !std::strcmp(n, "Reshape") || !std::strcmp(n, "Transpose") || !std::strcmp(n, "Slice") || !std::strcmp(n, "ExpandDims") ||
         !std::strcmp(n, "Squeeze") || !std::strcmp(n, "Broadcast") || !std::strcmp(n, "AsStrided");
}

}  // namespace

mx::array put_inplace_cuda(const mx::array &x, const mx::array &idx, const mx::array &upd, int axis, mx::Stream s) {
  if (idx.size() > (size_t)INT32_MAX - kThreads) throw std::invalid_argument("put_inplace_cuda takes fewer than 2^31 - 256 updates");
  if (idx.size() == 0) return x;
  static const auto fn = mx::fast::cuda_kernel("rlx_put_inplace", {"x", "idx", "upd"}, {"done"}, kSource, "", false, 0);
  int64_t blocks = ((int64_t)idx.size() + kThreads - 1) / kThreads;
  auto marker = fn({x, idx, upd}, {mx::Shape{1}}, {mx::int32}, {(int)(blocks * kThreads), 1, 1}, {kThreads, 1, 1},
                   {{"T", x.dtype()}, {"AXIS", axis}}, std::nullopt, false, s);
  // (for an x without a primitive mx::depends takes the default device's default stream: s, the
  // GPU's, in a CUDA build)
  return mx::depends({x}, marker)[0];
}

void write_markers(const mx::array &a, std::vector<mx::array> &out) {
  mx::array v = a;
  for (int depth = 0; depth < 8 && v.has_primitive(); depth++) {
    if (is_depends(v)) {
      const auto &in = v.inputs();
      for (size_t i = v.siblings().size() + 1; i < in.size(); i++) out.push_back(in[i]);
      v = in[0];
    } else if (is_view(v)) {
      v = v.inputs()[0];
    } else {
      break;
    }
  }
}

}  // namespace rlx_kernels

extern "C" rlx_mx_arr *rlx_mx_after_writes(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *const *from, size_t n) {
  SHIM_OP(c, x && (from || !n), ([&] {
            std::vector<mx::array> marks;
            for (size_t i = 0; i < n; i++)
              if (from[i]) rlx_kernels::write_markers(A(from[i]), marks);
            mx::array y = A(x);
            // x + 0 * marker: one elementwise kernel that reads each marker (an int32 1), so the
            // graph orders it, and every reader of its result, after the writes
            for (const mx::array &m : marks)
              y = mx::add(y, mx::multiply(mx::astype(m, y.dtype(), c->stream), mx::array(0, y.dtype()), c->stream), c->stream);
            return y;
          }()));
}
