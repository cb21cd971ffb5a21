// kernel_reduce.cpp: the sum or mean of float32 x over its trailing axes (ReduceSum/ReduceMean
// over the last axes, GlobalAveragePool) on the CPU.
//
// MLX's CPU reduction adds one float at a time into one accumulator (its sum over a contiguous
// row is a chain of scalar adds, bound by the add's latency: 6% of PP-OCR cls's samples for its
// ten squeeze-and-excitation averages). Here each row of n values is summed in 4 x 8 lanes, the
// rows split over the kernel pool; the mean is the sum divided by n.
#include <algorithm>
#include <cstring>
#include <optional>

#include "mlx/backend/cpu/encoder.h"
#include "mlx/shim/kernels.h"

namespace rlx_kernels {
namespace {

typedef float v8 __attribute__((vector_size(8 * sizeof(float))));

RLX_KERNEL_CLONES
void sum_rows(const float *x, int64_t rows, int64_t n, bool mean, float *y) {
  for (int64_t r = 0; r < rows; r++, x += n) {
    v8 acc[4] = {};
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
      for (int j = 0; j < 4; j++) {
        v8 v;
        std::memcpy(&v, x + i + 8 * j, sizeof v);
        acc[j] += v;
      }
    v8 a = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    float s = 0;
    for (int j = 0; j < 8; j++) s += a[j];
    for (; i < n; i++) s += x[i];
    y[r] = mean ? s / (float)n : s;
  }
}

class RowSum : public CpuKernel {
 public:
  RowSum(mx::Stream s, int axes, bool mean, bool keepdims) : CpuKernel(s), axes_(axes), mean_(mean), keep_(keepdims) {}
  // input: x float32, any strides (see dense); the last axes_ axes reduced.
  void eval_cpu(const std::vector<mx::array> &in, mx::array &out) override {
    auto &enc = begin(in, out);
    float *y = out.data<float>();
    int64_t rows = (int64_t)out.size(), n = rows ? (int64_t)in[0].size() / rows : 0;
    bool mean = mean_;
    Strided xs = strided(in[0]);
    enc.dispatch([xs, y, rows, n, mean]() {
      thread_local std::vector<uint8_t> buf;
      const float *x = static_cast<const float *>(dense(xs, buf));
      parallel_for(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1)),
                   [=](int64_t r0, int64_t r1) { sum_rows(x + r0 * n, r1 - r0, n, mean, y + r0); });
    });
  }
  // The cotangent broadcast back over the reduced axes (divided by their size for the mean): the
  // lowerings that differentiate through MLX (GaussianSplatRenderBackward) meet this kernel.
  std::vector<mx::array> vjp(const std::vector<mx::array> &primals, const std::vector<mx::array> &cotangents,
                             const std::vector<int> &, const std::vector<mx::array> &) override {
    const mx::array &x = primals[0];
    mx::Shape kept = x.shape();
    int r = (int)kept.size();
    std::fill(kept.begin() + (r - axes_), kept.end(), 1);
    mx::array ct = mx::reshape(cotangents[0], kept, stream());
    if (mean_) ct = mx::divide(ct, mx::array((float)(x.size() / std::max<size_t>(ct.size(), 1)), mx::float32), stream());
    return {mx::broadcast_to(ct, x.shape(), stream())};
  }
  const char *name() const override { return "RlxRowSum"; }
  bool is_equivalent(const mx::Primitive &other) const override {
    auto &o = static_cast<const RowSum &>(other);
    return axes_ == o.axes_ && mean_ == o.mean_ && keep_ == o.keep_;
  }
  std::vector<mx::Shape> output_shapes(const std::vector<mx::array> &in) override {
    mx::Shape shape = in[0].shape();
    int r = (int)shape.size();
    if (keep_)
      std::fill(shape.begin() + (r - axes_), shape.end(), 1);
    else
      shape.resize(r - axes_);
    return {shape};
  }

 private:
  int axes_;
  bool mean_, keep_;
};

}  // namespace

std::optional<mx::array> sum_trailing(const mx::Stream &s, const mx::array &x, std::vector<int> axes, bool mean, bool keepdims) {
  int r = (int)x.ndim();
  if (s.device != mx::Device::cpu || x.dtype() != mx::float32 || axes.empty() || x.size() == 0) return std::nullopt;
  for (int &a : axes) a = a < 0 ? a + r : a;
  std::sort(axes.begin(), axes.end());
  for (size_t i = 0; i < axes.size(); i++)  // exactly the last axes.size() axes, once each
    if (axes[i] != r - (int)axes.size() + (int)i) return std::nullopt;
  auto prim = std::make_shared<RowSum>(s, (int)axes.size(), mean, keepdims);
  mx::Shape shape = prim->output_shapes({x})[0];
  return mx::array(std::move(shape), mx::float32, std::move(prim), {x});
}

}  // namespace rlx_kernels
