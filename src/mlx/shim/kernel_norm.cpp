// kernel_norm.cpp: LayerNorm and RMSNorm over any one axis on float32.
//
// MLX's CPU backend has no kernel for fast::layer_norm / rms_norm: it runs their fallback, five
// to seven single-threaded passes over the data (mean, subtract, square, mean, rsqrt, scale,
// shift), over the last axis only. Here one task per block of rows on the kernel pool computes
// each row in cache:
//   LayerNorm: m = mean(x); v = mean((x - m)^2); y = (x - m) / sqrt(v + eps) * w + b
//   RMSNorm:   y = x / sqrt(mean(x^2) + eps) * w
// (w, b optional), the same formulas as MLX's fallback, with 8-wide partial sums. Over an axis
// that is not the last (x seen as [outer, n, inner]), one task per block of COLS columns of an
// [n, inner] slab: the same three passes down its n rows, the columns in the vector lanes, so
// neither x nor y is transposed.
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

constexpr int64_t COLS = 64;

// Columns [0, w) of an [n, inner] slab x (w <= COLS), normalized down their n rows; w, b per row.
RLX_KERNEL_CLONES
void norm_cols(bool rms, const float *x, const float *w, const float *b, float eps, float *y, int64_t n, int64_t inner,
               int64_t cols) {
  float m[COLS] = {}, s[COLS] = {};
  if (!rms) {
    for (int64_t r = 0; r < n; r++)
      for (int64_t j = 0; j < cols; j++) m[j] += x[r * inner + j];
    for (int64_t j = 0; j < cols; j++) m[j] /= (float)n;
  }
  for (int64_t r = 0; r < n; r++)
    for (int64_t j = 0; j < cols; j++) {
      float d = x[r * inner + j] - m[j];
      s[j] += d * d;
    }
  for (int64_t j = 0; j < cols; j++) s[j] = 1.f / std::sqrt(s[j] / (float)n + eps);
  for (int64_t r = 0; r < n; r++) {
    float wr = w ? w[r] : 1.f, br = b ? b[r] : 0.f;
    for (int64_t j = 0; j < cols; j++) y[r * inner + j] = (x[r * inner + j] - m[j]) * s[j] * wr + br;
  }
}

class Norm : public CpuKernel {
 public:
  Norm(mx::Stream s, bool rms, int axis, bool has_w, bool has_b, float eps)
      : CpuKernel(s), rms_(rms), axis_(axis), has_w_(has_w), has_b_(has_b), eps_(eps) {}
  // inputs: x float32, then w [D] and b [D] when present, any strides (see dense).
  void eval_cpu(const std::vector<mx::array> &in, mx::array &out) override {
    auto &enc = begin(in, out);
    float *y = out.data<float>();
    int64_t n = in[0].ndim() ? in[0].shape(axis_) : 1, inner = 1;
    for (int d = axis_ + 1; d < (int)in[0].ndim(); d++) inner *= in[0].shape(d);
    int64_t outer = n > 0 && inner > 0 ? (int64_t)in[0].size() / (n * inner) : 0;
    Strided xs = strided(in[0]), ws = has_w_ ? strided(in[1]) : Strided{}, bs = has_b_ ? strided(in[has_w_ ? 2 : 1]) : Strided{};
    enc.dispatch([xs, ws, bs, y, outer, n, inner, rms = rms_, eps = eps_]() {
      thread_local std::vector<uint8_t> buf[3];
      const float *x = static_cast<const float *>(dense(xs, buf[0]));
      const float *w = ws.p ? static_cast<const float *>(dense(ws, buf[1])) : nullptr;
      const float *b = bs.p ? static_cast<const float *>(dense(bs, buf[2])) : nullptr;
      if (inner == 1) {
        parallel_for(outer, std::max<int64_t>(1, 8192 / std::max<int64_t>(n, 1)), [=](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; r++) norm_row(rms, x + r * n, w, b, eps, y + r * n, n);
        });
        return;
      }
      int64_t blocks = (inner + COLS - 1) / COLS;
      parallel_for(outer * blocks, std::max<int64_t>(1, 8192 / std::max<int64_t>(n * COLS, 1)), [=](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; t++) {
          int64_t o = t / blocks, j = t % blocks * COLS, off = o * n * inner + j;
          norm_cols(rms, x + off, w, b, eps, y + off, n, inner, std::min(COLS, inner - j));
        }
      });
    });
  }
  const char *name() const override { return rms_ ? "RlxRmsNorm" : "RlxLayerNorm"; }
  bool is_equivalent(const mx::Primitive &other) const override {
    auto &o = static_cast<const Norm &>(other);
    return rms_ == o.rms_ && axis_ == o.axis_ && has_w_ == o.has_w_ && has_b_ == o.has_b_ && eps_ == o.eps_;
  }
  std::vector<mx::Shape> output_shapes(const std::vector<mx::array> &in) override { return {in[0].shape()}; }

 private:
  bool rms_;
  int axis_;
  bool has_w_, has_b_;
  float eps_;
};

// The kernel for a float32 x (normalized over axis) with w / b (NULL: none) of that axis's size
// in values on the CPU; otherwise no value (the caller runs MLX's fast:: op).
std::optional<mx::array> norm(const mx::Stream &s, bool rms, const mx::array &x, int axis, const mx::array *w, const mx::array *b,
                              float eps) {
  if (s.device != mx::Device::cpu || x.dtype() != mx::float32 || x.ndim() == 0) return std::nullopt;
  size_t d = x.shape(axis);
  for (const mx::array *p : {w, b})
    if (p && (p->dtype() != mx::float32 || p->size() != d)) return std::nullopt;
  std::vector<mx::array> in = {x};
  for (const mx::array *p : {w, b})
    if (p) in.push_back(mx::flatten(*p, s));
  mx::Shape shape = x.shape();
  return mx::array(std::move(shape), mx::float32, std::make_shared<Norm>(s, rms, axis, w != nullptr, b != nullptr, eps), std::move(in));
}

// MLX's fast:: op over the last axis, x's axis moved there and back.
mx::array fast_norm(const mx::Stream &s, bool rms, const mx::array &x, int axis, const mx::array *w, const mx::array *b, float eps) {
  int last = (int)x.ndim() - 1;
  mx::array xt = axis == last ? x : mx::swapaxes(x, axis, last, s);
  auto ow = w ? std::optional<mx::array>(*w) : std::nullopt;
  mx::array y = rms ? mx::fast::rms_norm(xt, ow, eps, s) : mx::fast::layer_norm(xt, ow, b ? std::optional<mx::array>(*b) : std::nullopt, eps, s);
  if (rms && b) y = mx::add(y, *b, s);
  return axis == last ? y : mx::swapaxes(y, axis, last, s);
}

}  // namespace
}  // namespace rlx_kernels

extern "C" rlx_mx_arr *rlx_mx_norm(rlx_mx *c, bool rms, rlx_mx_arr *x, int axis, rlx_mx_arr *w, rlx_mx_arr *b, float eps) {
  SHIM_OP_HANDLE(c, x, ([&] {
                   const mx::array &xa = A(x);
                   if (xa.size() == 0) return c->put(xa); /* see shim_ops.cpp identity */
                   const mx::array *pw = w ? &A(w) : nullptr, *pb = b ? &A(b) : nullptr;
                   if (auto k = rlx_kernels::norm(c->stream, rms, xa, axis, pw, pb, eps)) return c->put(*k);
                   rlx_mx_arr *y = c->put(rlx_kernels::fast_norm(c->stream, rms, xa, axis, pw, pb, eps));
                   /* on a GPU, an RMSNorm of float32 rows with a float32 gain and no bias, recorded for a
                    * float16 product that reads it once to normalize its x itself (kernel_matvec_cuda.cpp) */
                   if (c->stream.device == mx::Device::gpu && rms && !pb && pw && axis == (int)xa.ndim() - 1 &&
                       xa.dtype() == mx::float32 && pw->dtype() == mx::float32 && pw->size() == (size_t)xa.shape(axis))
                     c->fusible[y] = rlx_mx::Fusible{rlx_mx::Fusible::kRmsNorm, {xa, mx::flatten(*pw, c->stream)}, 0, eps};
                   return y;
                 }()));
}
