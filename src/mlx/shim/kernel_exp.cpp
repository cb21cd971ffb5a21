// kernel_exp.cpp: the exp family on float32: exp, log, tanh, erf, sigmoid, Softmax over the
// last axis, and the activations other kernels fuse (kernels.h Act).
//
// The mlx-cpu wheel computes these one element at a time on x86 (its SIMD layer is
// NEON/Accelerate only), and its exp/erf polynomials call libm's fmaf for every term (the wheel
// is built without -mfma): about 100 ns per sigmoid. SLEEF (Debian libsleef; 1.0 ULP functions,
// SSE2 baseline, dispatched at run time to SSE4/AVX2-128 where available) computes four at a
// time. Softmax of a row: m = max(x); e = exp(x - m); y = e / sum(e) (ONNX Softmax-13).
// Elements (rows for Softmax) are split over the kernel thread pool.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(RLX_HAVE_SLEEF) && defined(__x86_64__)
#include <immintrin.h>
#include <sleef.h>
#define RLX_SLEEF4 1
#endif

#include "mlx/backend/cpu/encoder.h"
#include "mlx/shim/kernels.h"

namespace rlx_kernels {
namespace {

// y[i] = exp(x[i] - shift); returns the sum of the y[i].
float exp_shifted(const float *x, float *y, int64_t n, float shift) {
  int64_t i = 0;
  float sum = 0;
#ifdef RLX_SLEEF4
  __m128 vs = _mm_set1_ps(shift), acc = _mm_setzero_ps();
  for (; i + 4 <= n; i += 4) {
    __m128 e = Sleef_expf4_u10(_mm_sub_ps(_mm_loadu_ps(x + i), vs));
    _mm_storeu_ps(y + i, e);
    acc = _mm_add_ps(acc, e);
  }
  float part[4];
  _mm_storeu_ps(part, acc);
  sum = (part[0] + part[1]) + (part[2] + part[3]);
#endif
  for (; i < n; i++) sum += y[i] = std::exp(x[i] - shift);
  return sum;
}

// y[i] = 1 / (1 + exp(-x[i])), in place.
void sigmoid(float *y, int64_t n) {
  int64_t i = 0;
#ifdef RLX_SLEEF4
  __m128 one = _mm_set1_ps(1.f), zero = _mm_setzero_ps();
  for (; i + 4 <= n; i += 4) {
    __m128 e = Sleef_expf4_u10(_mm_sub_ps(zero, _mm_loadu_ps(y + i)));
    _mm_storeu_ps(y + i, _mm_div_ps(one, _mm_add_ps(one, e)));
  }
#endif
  for (; i < n; i++) y[i] = 1.f / (1.f + std::exp(-y[i]));
}

// y = y / (1 + exp(-y)) in place (SiLU, a convolution's or matmul's fused activation).
void silu(float *y, int64_t n) {
  int64_t i = 0;
#ifdef RLX_SLEEF4
  __m128 one = _mm_set1_ps(1.f), zero = _mm_setzero_ps();
  for (; i + 4 <= n; i += 4) {
    __m128 v = _mm_loadu_ps(y + i);
    _mm_storeu_ps(y + i, _mm_div_ps(v, _mm_add_ps(one, Sleef_expf4_u10(_mm_sub_ps(zero, v)))));
  }
#endif
  for (; i < n; i++) y[i] = y[i] / (1.f + std::exp(-y[i]));
}

// y[i] = f(x[i]) for one of the unary kinds below (rlx_mx_unary_op values).
void unary_span(int op, const float *x, float *y, int64_t n) {
  int64_t i = 0;
#ifdef RLX_SLEEF4
  for (; i + 4 <= n; i += 4) {
    __m128 v = _mm_loadu_ps(x + i), r;
    switch (op) {
      case RLX_MXU_EXP: r = Sleef_expf4_u10(v); break;
      case RLX_MXU_LOG: r = Sleef_logf4_u10(v); break;
      case RLX_MXU_TANH: r = Sleef_tanhf4_u10(v); break;
      case RLX_MXU_ERF: r = Sleef_erff4_u10(v); break;
      default: {  // sigmoid
        __m128 one = _mm_set1_ps(1.f);
        r = _mm_div_ps(one, _mm_add_ps(one, Sleef_expf4_u10(_mm_sub_ps(_mm_setzero_ps(), v))));
      }
    }
    _mm_storeu_ps(y + i, r);
  }
#endif
  for (; i < n; i++) {
    float v = x[i];
    switch (op) {
      case RLX_MXU_EXP: y[i] = std::exp(v); break;
      case RLX_MXU_LOG: y[i] = std::log(v); break;
      case RLX_MXU_TANH: y[i] = std::tanh(v); break;
      case RLX_MXU_ERF: y[i] = std::erf(v); break;
      default: y[i] = 1.f / (1.f + std::exp(-v));
    }
  }
}

bool unary_supported(int op) {
  return op == RLX_MXU_EXP || op == RLX_MXU_LOG || op == RLX_MXU_TANH || op == RLX_MXU_ERF || op == RLX_MXU_SIGMOID;
}

class Unary : public mx::UnaryPrimitive {
 public:
  Unary(mx::Stream s, int op) : mx::UnaryPrimitive(s), op_(op) {}
  // input: float32, row-contiguous.
  void eval_cpu(const std::vector<mx::array> &in, mx::array &out) override {
    if (in[0].is_donatable() && in[0].flags().row_contiguous && in[0].data_size() == in[0].size())
      out.copy_shared_buffer(in[0]);
    else
      out.set_data(mx::allocator::malloc(out.nbytes()));
    auto &enc = mx::cpu::get_command_encoder(stream());
    enc.set_input_array(in[0]);
    enc.set_output_array(out);
    const float *x = in[0].data<float>();
    float *y = out.data<float>();
    int64_t n = (int64_t)out.size();
    enc.dispatch([x, y, n, op = op_]() {
      parallel_for(n, 16384, [=](int64_t b, int64_t e) { unary_span(op, x + b, y + b, e - b); });
    });
  }
  void eval_gpu(const std::vector<mx::array> &, mx::array &) override {
    throw std::runtime_error("[rlx Unary] has no GPU implementation");
  }
  const char *name() const override { return "RlxUnary"; }
  bool is_equivalent(const mx::Primitive &other) const override { return op_ == static_cast<const Unary &>(other).op_; }
  std::vector<mx::Shape> output_shapes(const std::vector<mx::array> &in) override { return {in[0].shape()}; }

 private:
  int op_;
};

float row_max(const float *x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
  int64_t i = 0;
#ifdef RLX_SLEEF4
  __m128 v = _mm_set1_ps(m);
  for (; i + 4 <= n; i += 4) v = _mm_max_ps(v, _mm_loadu_ps(x + i));
  float part[4];
  _mm_storeu_ps(part, v);
  m = std::max(std::max(part[0], part[1]), std::max(part[2], part[3]));
#endif
  for (; i < n; i++) m = std::max(m, x[i]);
  return m;
}

void softmax_rows(const float *x, float *y, int64_t rows, int64_t m) {
  parallel_for(rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(m, 1)), [=](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      const float *xr = x + r * m;
      float *yr = y + r * m;
      float s = exp_shifted(xr, yr, m, row_max(xr, m)), inv = 1.f / s;
      for (int64_t i = 0; i < m; i++) yr[i] *= inv;
    }
  });
}

class Softmax : public mx::UnaryPrimitive {
 public:
  explicit Softmax(mx::Stream s) : mx::UnaryPrimitive(s) {}
  // input: float32, row-contiguous; softmax over the last axis.
  void eval_cpu(const std::vector<mx::array> &in, mx::array &out) override {
    out.set_data(mx::allocator::malloc(out.nbytes()));
    auto &enc = mx::cpu::get_command_encoder(stream());
    enc.set_input_array(in[0]);
    enc.set_output_array(out);
    int64_t m = in[0].ndim() ? in[0].shape().back() : 1, rows = m ? (int64_t)in[0].size() / m : 0;
    const float *x = in[0].data<float>();
    float *y = out.data<float>();
    enc.dispatch([x, y, rows, m]() { softmax_rows(x, y, rows, m); });
  }
  void eval_gpu(const std::vector<mx::array> &, mx::array &) override {
    throw std::runtime_error("[rlx Softmax] has no GPU implementation");
  }
  const char *name() const override { return "RlxSoftmax"; }
  bool is_equivalent(const mx::Primitive &) const override { return true; }
  std::vector<mx::Shape> output_shapes(const std::vector<mx::array> &in) override { return {in[0].shape()}; }
};

}  // namespace

namespace {

// GCC/Clang vector extension; 16 bytes, so that passing one by value needs no AVX
typedef float v4 __attribute__((vector_size(4 * sizeof(float))));

// y[i] = f(y[i]) four at a time (branch-free min/max on vectors), the tail one by one.
template <class F>
inline void map4(float *y, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    v4 v;
    memcpy(&v, y + i, sizeof v);
    v = f(v);
    memcpy(y + i, &v, sizeof v);
  }
  for (; i < n; i++) {
    v4 v = {y[i]};
    y[i] = f(v)[0];
  }
}

// std::max / std::min element-wise (a NaN in a is kept, as they keep it)
inline v4 vmax(v4 a, v4 b) { return a < b ? b : a; }
inline v4 vmin(v4 a, v4 b) { return b < a ? b : a; }

// The piecewise-linear activations (the caller does the others).
RLX_KERNEL_CLONES
void clamp_act(int kind, float a, float b, float *y, int64_t n) {
  const v4 zero = {}, one = zero + 1.f, va = zero + a, vb = zero + b;
  switch (kind) {
    case RLX_MX_ACT_RELU:
      return map4(y, n, [&](v4 v) { return vmax(v, zero); });
    case RLX_MX_ACT_CLIP:
      return map4(y, n, [&](v4 v) { return vmin(vmax(v, va), vb); });
    case RLX_MX_ACT_HARD_SIGMOID:
      return map4(y, n, [&](v4 v) { return vmin(vmax(va * v + vb, zero), one); });
    case RLX_MX_ACT_HARD_SWISH:
      return map4(y, n, [&](v4 v) { return v * vmin(vmax(va * v + vb, zero), one); });
    default:
      return;
  }
}

}  // namespace

void apply_act(const Act &act, float *y, int64_t n) {
  if (act.kind == RLX_MX_ACT_SIGMOID) return sigmoid(y, n);
  if (act.kind == RLX_MX_ACT_SILU) return silu(y, n);
  if (act.kind != RLX_MX_ACT_NONE) clamp_act(act.kind, act.a, act.b, y, n);
}

}  // namespace rlx_kernels

extern "C" rlx_mx_arr *rlx_mx_unary_kernel(rlx_mx *c, rlx_mx_unary_op op, rlx_mx_arr *x) {
  if (!c || c->err || !x || A(x).dtype() != mx::float32 || !rlx_kernels::unary_supported(op)) return rlx_mx_unary(c, op, x);
  SHIM_OP(c, x, ([&] {
            std::vector<mx::array> in = {mx::contiguous(A(x), false, c->stream)};
            mx::Shape shape = A(x).shape();
            return mx::array(std::move(shape), mx::float32, std::make_shared<rlx_kernels::Unary>(c->stream, op), std::move(in));
          }()));
}

extern "C" rlx_mx_arr *rlx_mx_softmax_last(rlx_mx *c, rlx_mx_arr *x) {
  SHIM_OP(c, x, ([&] {
            mx::array xa = A(x);
            if (xa.dtype() != mx::float32 || xa.ndim() == 0) return mx::softmax(xa, std::vector<int>{-1}, true, c->stream);
            std::vector<mx::array> in = {mx::contiguous(xa, false, c->stream)};
            mx::Shape shape = xa.shape();
            return mx::array(std::move(shape), mx::float32, std::make_shared<rlx_kernels::Softmax>(c->stream), std::move(in));
          }()));
}
