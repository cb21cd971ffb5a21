// kernel_norm.cpp: LayerNorm and RMSNorm over the last axis on float32.
//
// MLX's CPU backend has no kernel for fast::layer_norm / rms_norm: it runs their fallback, five
// to seven single-threaded passes over the data (mean, subtract, square, mean, rsqrt, scale,
// shift). Here one task per block of rows on the kernel pool computes each row in cache:
//   LayerNorm: m = mean(x); v = mean((x - m)^2); y = (x - m) / sqrt(v + eps) * w + b
//   RMSNorm:   y = x / sqrt(mean(x^2) + eps) * w
// (w, b optional), the same formulas as MLX's fallback, with 8-wide partial sums.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "mlx/backend/cpu/encoder.h"
#include "mlx/shim/kernels.h"

namespace rlx_kernels {
namespace {

constexpr int BLK = 8;
typedef float v8 __attribute__((vector_size(BLK * sizeof(float))));  // GCC/Clang vector extension

inline float hsum(const v8 &v) {
  float s = 0;
  for (int j = 0; j < BLK; j++) s += v[j];
  return s;
}

// sum of (x[i] - shift)^2 (square) or of x[i] (not square).
inline float row_sum(const float *x, int64_t n, float shift, bool square) {
  v8 acc = {};
  int64_t i = 0;
  for (; i + BLK <= n; i += BLK) {
    v8 v;
    memcpy(&v, x + i, sizeof v);
    v -= shift;
    acc += square ? v * v : v;
  }
  float s = hsum(acc);
  for (; i < n; i++) {
    float v = x[i] - shift;
    s += square ? v * v : v;
  }
  return s;
}

RLX_KERNEL_CLONES
void norm_row(bool rms, const float *x, const float *w, const float *b, float eps, float *y, int64_t n) {
  float m = rms ? 0.f : row_sum(x, n, 0.f, false) / (float)n;
  float inv = 1.f / std::sqrt(row_sum(x, n, m, true) / (float)n + eps);
  int64_t i = 0;
  for (; i + BLK <= n; i += BLK) {
    v8 v, t;
    memcpy(&v, x + i, sizeof v);
    v = (v - m) * inv;
    if (w) memcpy(&t, w + i, sizeof t), v *= t;
    if (b) memcpy(&t, b + i, sizeof t), v += t;
    memcpy(y + i, &v, sizeof v);
  }
  for (; i < n; i++) {
    float v = (x[i] - m) * inv;
    if (w) v *= w[i];
    if (b) v += b[i];
    y[i] = v;
  }
}

class Norm : public CpuKernel {
 public:
  Norm(mx::Stream s, bool rms, bool has_w, bool has_b, float eps)
      : CpuKernel(s), rms_(rms), has_w_(has_w), has_b_(has_b), eps_(eps) {}
  // inputs: x float32, then w [D] and b [D] when present, any strides (see dense).
  void eval_cpu(const std::vector<mx::array> &in, mx::array &out) override {
    auto &enc = begin(in, out);
    float *y = out.data<float>();
    int64_t n = in[0].ndim() ? in[0].shape().back() : 1, rows = n ? (int64_t)in[0].size() / n : 0;
    enc.dispatch([in, has_w = has_w_, has_b = has_b_, y, rows, n, rms = rms_, eps = eps_]() {
      thread_local std::vector<uint8_t> buf[3];
      const float *x = static_cast<const float *>(dense(in[0], buf[0]));
      const float *w = has_w ? static_cast<const float *>(dense(in[1], buf[1])) : nullptr;
      const float *b = has_b ? static_cast<const float *>(dense(in[has_w ? 2 : 1], buf[2])) : nullptr;
      parallel_for(rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(n, 1)), [=](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; r++) norm_row(rms, x + r * n, w, b, eps, y + r * n, n);
      });
    });
  }
  const char *name() const override { return rms_ ? "RlxRmsNorm" : "RlxLayerNorm"; }
  bool is_equivalent(const mx::Primitive &other) const override {
    auto &o = static_cast<const Norm &>(other);
    return rms_ == o.rms_ && has_w_ == o.has_w_ && has_b_ == o.has_b_ && eps_ == o.eps_;
  }
  std::vector<mx::Shape> output_shapes(const std::vector<mx::array> &in) override { return {in[0].shape()}; }

 private:
  bool rms_, has_w_, has_b_;
  float eps_;
};

// The kernel for a float32 x with w / b (NULL: none) of x's last dim of values on the CPU;
// otherwise no value (the caller runs MLX's fast:: op).
std::optional<mx::array> norm(const mx::Stream &s, bool rms, const mx::array &x, const mx::array *w, const mx::array *b,
                              float eps) {
  if (s.device != mx::Device::cpu || x.dtype() != mx::float32 || x.ndim() == 0) return std::nullopt;
  size_t d = x.shape().back();
  for (const mx::array *p : {w, b})
    if (p && (p->dtype() != mx::float32 || p->size() != d)) return std::nullopt;
  std::vector<mx::array> in = {x};
  for (const mx::array *p : {w, b})
    if (p) in.push_back(mx::flatten(*p, s));
  mx::Shape shape = x.shape();
  return mx::array(std::move(shape), mx::float32, std::make_shared<Norm>(s, rms, w != nullptr, b != nullptr, eps), std::move(in));
}

}  // namespace
}  // namespace rlx_kernels

extern "C" rlx_mx_arr *rlx_mx_layer_norm(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *w, rlx_mx_arr *b, float eps) {
  SHIM_OP(c, x, ([&] {
            if (A(x).size() == 0) return A(x); /* see shim_ops.cpp identity */
            if (auto k = rlx_kernels::norm(c->stream, false, A(x), w ? &A(w) : nullptr, b ? &A(b) : nullptr, eps)) return *k;
            return mx::fast::layer_norm(A(x), w ? std::optional<mx::array>(A(w)) : std::nullopt,
                                        b ? std::optional<mx::array>(A(b)) : std::nullopt, eps, c->stream);
          }()));
}

extern "C" rlx_mx_arr *rlx_mx_rms_norm(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *w, float eps) {
  SHIM_OP(c, x, ([&] {
            if (A(x).size() == 0) return A(x); /* see shim_ops.cpp identity */
            if (auto k = rlx_kernels::norm(c->stream, true, A(x), w ? &A(w) : nullptr, nullptr, eps)) return *k;
            return mx::fast::rms_norm(A(x), w ? std::optional<mx::array>(A(w)) : std::nullopt, eps, c->stream);
          }()));
}
