// kernel_exp.cpp: the exp family on float32: exp, log, tanh, erf, sigmoid, Softmax over any
// axis, the activations other kernels fuse (kernels.h Act), and those activations after an
// optional bias along the last axis as a kernel of their own (BiasAct: Silu, Gelu, a MatMul's
// bias and activation in one pass on the pool instead of two or four single-threaded MLX ones).
//
// The mlx-cpu wheel computes these one element at a time on x86 (its SIMD layer is
// NEON/Accelerate only), and its exp/erf polynomials call libm's fmaf for every term (the wheel
// is built without -mfma): about 100 ns per sigmoid. SLEEF (Debian libsleef; 1.0 ULP functions)
// computes 16 at a time with AVX-512, 8 with AVX2 and FMA, else 4 (its SSE2 baseline functions,
// dispatched at run time to SSE4/AVX2-128): Softmax's and the unary ops' exponentials took 44% of
// a [100, 6625] Softmax in the 4-wide functions, 1.4 ns per value. Softmax of a row: m = max(x);
// e = exp(x - m); y = e / sum(e) (ONNX Softmax-13); over an axis that is not the last one
// (YOLOv8's box distributions: axis 1 of [1, 16, 4, 8400]) the same per column, on contiguous
// spans of columns (MLX would compose it from strided reductions and its scalar exp). Elements
// (rows or column blocks for Softmax) are split over the kernel thread pool.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(RLX_HAVE_SLEEF) && defined(__x86_64__)
#include <immintrin.h>
#include <sleef.h>
#define RLX_SLEEF4 1
#endif

#include "mlx/backend/cpu/encoder.h"
#include "mlx/shim/kernels.h"

namespace rlx_kernels {

namespace {

constexpr float kGeluTanh0 = 0.7978845608028654f, kGeluTanh1 = 0.044715f, kSqrtHalf = 0.7071067811865476f;

#ifdef RLX_SLEEF4
// erf and Gelu's normal CDF on N lanes (V: GCC vector type, EXPF: SLEEF's exp for it). SLEEF's
// 1-ulp erf costs six of its exps (2.4 ns a value with AVX-512; a BERT-base run has 4.7M), so:
// erf(z) = z P(z^2) for |z| <= 1, and for |z| > 1 through erfc(|z|) = u exp(Q(u) - z^2) with
// u = 1 / |z| (|z| clamped at 12, where the exp underflows to 0 as erfc does from 10.1), P and Q
// fitted by scripts/fit_erf.py (which gives the method and the errors: erf within 1.3e-7, erfc
// within 4e-6 relative). Gelu's Phi(x) = (1 + erf(x / sqrt 2)) / 2 takes erfc directly in its
// negative tail, where 1 + erf would lose every digit (ONNX Gelu; Hendrycks and Gimpel 2016).
#define RLX_ERF_LANES(V, N, EXPF)                                                              \
  /* erfc(a) for a >= 1 (NaN stays NaN) */                                                     \
  V erfc_tail##N(V a) {                                                                        \
    const V top = V{} + 12.f;                                                                  \
    a = a > top ? top : a;                                                                     \
    V u = 1.f / a, q = V{} - 0.0182202458f;                                                    \
    q = q * u + 0.207780108f, q = q * u - 0.827189565f, q = q * u + 1.699844f;                 \
    q = q * u - 2.01588631f, q = q * u + 1.29645908f, q = q * u - 0.135378137f;                \
    q = q * u - 0.483586013f, q = q * u - 0.00109390961f, q = q * u - 0.572334349f;            \
    return u * EXPF(q - a * a);                                                                \
  }                                                                                            \
  /* z P(z^2), erf(z) for |z| <= 1 */                                                          \
  V erf_small##N(V z) {                                                                        \
    V t = z * z, p = V{} + 7.87058234e-05f;                                                    \
    p = p * t - 0.000801488466f, p = p * t + 0.00518881297f, p = p * t - 0.0268540364f;        \
    p = p * t + 0.112835899f, p = p * t - 0.37612626f, p = p * t + 1.12837911f;                \
    return z * p;                                                                              \
  }                                                                                            \
  V erf_lanes##N(V z) {                                                                        \
    const V one = V{} + 1.f;                                                                   \
    V a = z < V{} ? -z : z, big = one - erfc_tail##N(a < one ? one : a);                       \
    return a <= one ? erf_small##N(z) : z < V{} ? -big : big;                                  \
  }                                                                                            \
  /* (1 + erf(z)) / 2 */                                                                       \
  V phi_lanes##N(V z) {                                                                        \
    const V one = V{} + 1.f;                                                                   \
    V a = z < V{} ? -z : z, e = 0.5f * erfc_tail##N(a < one ? one : a);                        \
    return a <= one ? 0.5f + 0.5f * erf_small##N(z) : z < V{} ? e : one - e;                   \
  }

RLX_ERF_LANES(__m128, 4, Sleef_expf4_u10)

// 1 / d for the smooth activations' 1 + exp(-x) (d >= 1 or NaN): the estimate (AVX-512's
// VRCP14PS, relative error < 2^-14; AVX's VRCPPS, < 1.5 2^-12: Intel's SDM) and one Newton step
// r (2 - d r) (the error squared: < 2^-28, or 1.4e-7 with AVX2: sigmoid and SiLU within 3.3 ulp
// of float64 over [-87, 100]; where 1 / d is below FLT_MIN the estimate is 0), 1 / inf = 0, in
// place of a division (VDIVPS: on Zen 3 the SiLU after YOLOv8n's convolutions spent 80% of its
// time waiting for it, 5% of the model's). A build by clang (the fuzz targets'), which ignores the
// GCC target pragmas below, divides.
#if defined(__clang__)
#define RLX_RECIP_avx2(d) (1.f / (d))
#define RLX_RECIP_avx512f(d) (1.f / (d))
#else
#define RLX_RECIP_avx2(d)                                                                      \
  ({                                                                                           \
    __m256 d_ = (d), r_ = _mm256_rcp_ps(d_);                                                   \
    r_ = r_ * (2.f - d_ * r_);                                                                 \
    _mm256_blendv_ps(r_, _mm256_setzero_ps(), _mm256_cmp_ps(d_, _mm256_set1_ps(INFINITY), _CMP_EQ_OQ)); \
  })
#define RLX_RECIP_avx512f(d)                                                                   \
  ({                                                                                           \
    __m512 d_ = (d), r_ = _mm512_maskz_rcp14_ps(0xffff, d_);                                   \
    r_ = r_ * (2.f - d_ * r_);                                                                 \
    _mm512_mask_blend_ps(_mm512_cmp_ps_mask(d_, _mm512_set1_ps(INFINITY), _CMP_EQ_OQ), r_,    \
                         _mm512_setzero_ps());                                                 \
  })
#endif

// The smooth activations below, 8 (AVX2) or 16 (AVX-512) at a time with SLEEF's functions for those
// ISAs: sleef.h declares them only where the whole translation unit targets the ISA, so they are
// declared here inside a target region (TARGET: its pragma), and used only when the CPU has it
// (smooth_act picks). smooth_actN applies kind to y[0 .. n - n % N) in vectors V (GCC vector
// arithmetic) and returns n - n % N.
#define RLX_SMOOTH_WIDE(TARGET, V, N, ISA)                                                     \
  _Pragma("GCC push_options") _Pragma(TARGET)                                                  \
  extern "C" V Sleef_expf##N##_u10##ISA(V);                                                    \
  extern "C" V Sleef_tanhf##N##_u10##ISA(V);                                                   \
  extern "C" V Sleef_logf##N##_u10##ISA(V);                                                    \
  RLX_ERF_LANES(V, N, Sleef_expf##N##_u10##ISA)                                                \
  /* y = exp(x - shift) over [0, n - n % N); *sum += their sum; returns n - n % N */            \
  int64_t exp_shifted##N(const float *x, float *y, int64_t n, float shift, float *sum) {       \
    int64_t i = 0;                                                                             \
    V acc = {};                                                                                \
    for (; i + N <= n; i += N) {                                                               \
      V v;                                                                                     \
      std::memcpy(&v, x + i, sizeof v);                                                        \
      v = Sleef_expf##N##_u10##ISA(v - shift);                                                 \
      std::memcpy(y + i, &v, sizeof v);                                                        \
      acc += v;                                                                                \
    }                                                                                          \
    for (int j = 0; j < N; j++) *sum += acc[j];                                                \
    return i;                                                                                  \
  }                                                                                            \
  /* unary_span's ops over [0, n - n % N); returns n - n % N */                                 \
  int64_t unary##N(int op, const float *x, float *y, int64_t n) {                              \
    int64_t i = 0;                                                                             \
    for (; i + N <= n; i += N) {                                                               \
      V v, r;                                                                                  \
      std::memcpy(&v, x + i, sizeof v);                                                        \
      switch (op) {                                                                            \
        case RLX_MXU_EXP: r = Sleef_expf##N##_u10##ISA(v); break;                              \
        case RLX_MXU_LOG: r = Sleef_logf##N##_u10##ISA(v); break;                              \
        case RLX_MXU_TANH: r = Sleef_tanhf##N##_u10##ISA(v); break;                            \
        case RLX_MXU_ERF: r = erf_lanes##N(v); break;                                          \
        default: r = RLX_RECIP_##ISA(1.f + Sleef_expf##N##_u10##ISA(-v)); /* sigmoid */         \
      }                                                                                        \
      std::memcpy(y + i, &r, sizeof r);                                                        \
    }                                                                                          \
    return i;                                                                                  \
  }                                                                                            \
  int64_t smooth_act##N(int kind, float *y, int64_t n) {                                       \
    int64_t i = 0;                                                                             \
    for (; i + N <= n; i += N) {                                                               \
      V v, r;                                                                                  \
      std::memcpy(&v, y + i, sizeof v);                                                        \
      switch (kind) {                                                                          \
        case RLX_MX_ACT_SIGMOID: r = RLX_RECIP_##ISA(1.f + Sleef_expf##N##_u10##ISA(-v)); break; \
        case RLX_MX_ACT_SILU: r = v * RLX_RECIP_##ISA(1.f + Sleef_expf##N##_u10##ISA(-v)); break; \
        case RLX_MX_ACT_GELU: r = v * phi_lanes##N(v * kSqrtHalf); break;                      \
        case RLX_MX_ACT_GELU_TANH:                                                             \
          r = v * RLX_RECIP_##ISA(1.f + Sleef_expf##N##_u10##ISA(-2.f * kGeluTanh0 * (v + kGeluTanh1 * (v * (v * v))))); \
          break;                                                                               \
        default: r = Sleef_tanhf##N##_u10##ISA(v);                                             \
      }                                                                                        \
      std::memcpy(y + i, &r, sizeof r);                                                        \
    }                                                                                          \
    return i;                                                                                  \
  }                                                                                            \
  _Pragma("GCC pop_options")

RLX_SMOOTH_WIDE("GCC target(\"avx2,fma\")", __m256, 8, avx2)
RLX_SMOOTH_WIDE("GCC target(\"avx512f\")", __m512, 16, avx512f)
#undef RLX_SMOOTH_WIDE
#undef RLX_RECIP_avx2
#undef RLX_RECIP_avx512f

// 16 with AVX-512, 8 with AVX2 and FMA, else 4.
int smooth_lanes() {
  static const int lanes = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return 16;
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 8 : 4;
  }();
  return lanes;
}
#endif

}  // namespace

float exp_shifted(const float *x, float *y, int64_t n, float shift) {
  int64_t i = 0;
  float sum = 0;
#ifdef RLX_SLEEF4
  int lanes = smooth_lanes();
  if (lanes == 16) i = exp_shifted16(x, y, n, shift, &sum);
  if (lanes == 8) i = exp_shifted8(x, y, n, shift, &sum);
  __m128 vs = _mm_set1_ps(shift), acc = _mm_setzero_ps();
  for (; i + 4 <= n; i += 4) {
    __m128 e = Sleef_expf4_u10(_mm_sub_ps(_mm_loadu_ps(x + i), vs));
    _mm_storeu_ps(y + i, e);
    acc = _mm_add_ps(acc, e);
  }
  float part[4];
  _mm_storeu_ps(part, acc);
  sum += (part[0] + part[1]) + (part[2] + part[3]);
#endif
  for (; i < n; i++) sum += y[i] = std::exp(x[i] - shift);
  return sum;
}

namespace {

// The smooth activations in place: sigmoid 1 / (1 + exp(-x)), SiLU x / (1 + exp(-x)), Gelu
// x/2 (1 + erf(x / sqrt 2)), its tanh form x/2 (1 + tanh(z)), z = sqrt(2/pi) (x + 0.044715 x^3),
// computed as x / (1 + exp(-2 z)) (the same function: 1 + tanh(z) = 2 / (1 + exp(-2 z)); SLEEF's
// exp costs a third of its 1-ulp tanh), tanh.
void smooth_act(int kind, float *y, int64_t n) {
  int64_t i = 0;
#ifdef RLX_SLEEF4
  int lanes = smooth_lanes();
  if (lanes == 16) i = smooth_act16(kind, y, n);
  if (lanes == 8) i = smooth_act8(kind, y, n);
  const __m128 one = _mm_set1_ps(1.f), zero = _mm_setzero_ps();
  auto sig = [&](__m128 v) { return _mm_div_ps(one, _mm_add_ps(one, Sleef_expf4_u10(_mm_sub_ps(zero, v)))); };
  for (; i + 4 <= n; i += 4) {
    __m128 v = _mm_loadu_ps(y + i), r;
    switch (kind) {
      case RLX_MX_ACT_SIGMOID: r = sig(v); break;
      case RLX_MX_ACT_SILU: r = _mm_div_ps(v, _mm_add_ps(one, Sleef_expf4_u10(_mm_sub_ps(zero, v)))); break;
      case RLX_MX_ACT_GELU: r = _mm_mul_ps(v, phi_lanes4(_mm_mul_ps(v, _mm_set1_ps(kSqrtHalf)))); break;
      case RLX_MX_ACT_GELU_TANH: {
        __m128 cube = _mm_mul_ps(_mm_set1_ps(kGeluTanh1), _mm_mul_ps(v, _mm_mul_ps(v, v)));
        __m128 e = Sleef_expf4_u10(_mm_mul_ps(_mm_set1_ps(-2.f * kGeluTanh0), _mm_add_ps(v, cube)));
        r = _mm_div_ps(v, _mm_add_ps(one, e));
        break;
      }
      default: r = Sleef_tanhf4_u10(v);
    }
    _mm_storeu_ps(y + i, r);
  }
#endif
  for (; i < n; i++) {
    float v = y[i];
    switch (kind) {
      case RLX_MX_ACT_SIGMOID: y[i] = 1.f / (1.f + std::exp(-v)); break;
      case RLX_MX_ACT_SILU: y[i] = v / (1.f + std::exp(-v)); break;
      case RLX_MX_ACT_GELU: y[i] = v * 0.5f * std::erfc(-v * kSqrtHalf); break;
      case RLX_MX_ACT_GELU_TANH: y[i] = v / (1.f + std::exp(-2.f * kGeluTanh0 * (v + kGeluTanh1 * (v * (v * v))))); break;
      default: y[i] = std::tanh(v);
    }
  }
}

// y[i] = f(x[i]) for one of the unary kinds below (rlx_mx_unary_op values).
void unary_span(int op, const float *x, float *y, int64_t n) {
  int64_t i = 0;
#ifdef RLX_SLEEF4
  int lanes = smooth_lanes();
  if (lanes == 16) i = unary16(op, x, y, n);
  if (lanes == 8) i = unary8(op, x, y, n);
  for (; i + 4 <= n; i += 4) {
    __m128 v = _mm_loadu_ps(x + i), r;
    switch (op) {
      case RLX_MXU_EXP: r = Sleef_expf4_u10(v); break;
      case RLX_MXU_LOG: r = Sleef_logf4_u10(v); break;
      case RLX_MXU_TANH: r = Sleef_tanhf4_u10(v); break;
      case RLX_MXU_ERF: r = erf_lanes4(v); break;
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

// out takes x's buffer when MLX may donate it (x row-contiguous, same size), else a new one.
void reuse_or_alloc(const mx::array &x, mx::array &out) {
  if (x.is_donatable() && x.flags().row_contiguous && x.data_size() == x.size())
    out.copy_shared_buffer(x);
  else
    out.set_data(mx::allocator::malloc(out.nbytes()));
}

class Unary : public CpuKernel {
 public:
  Unary(mx::Stream s, int op) : CpuKernel(s), op_(op) {}
  // input: float32, row-contiguous.
  void eval_cpu(const std::vector<mx::array> &in, mx::array &out) override {
    reuse_or_alloc(in[0], out);
    auto &enc = encoder(in, out);
    const float *x = in[0].data<float>();
    float *y = out.data<float>();
    int64_t n = (int64_t)out.size();
    enc.dispatch([x, y, n, op = op_]() {
      parallel_for(n, 16384, [=](int64_t b, int64_t e) { unary_span(op, x + b, y + b, e - b); });
    });
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

// Softmax over the middle axis of x [outer, n, inner] (inner > 1): per outer index and block of
// up to 256 columns, the columns' maxima over n, then exp(x - max) row by row (contiguous
// spans), the columns' sums, and the rows scaled by their inverses.
void softmax_columns(const float *x, float *y, int64_t outer, int64_t n, int64_t inner) {
  constexpr int64_t CB = 256;
  int64_t nb = (inner + CB - 1) / CB;
  parallel_for(outer * nb, std::max<int64_t>(1, 8192 / std::max<int64_t>(n * CB, 1)), [=](int64_t t0, int64_t t1) {
    float top[CB], sum[CB];
    for (int64_t t = t0; t < t1; t++) {
      int64_t o = t / nb, c0 = t % nb * CB, w = std::min(CB, inner - c0);
      const float *xb = x + o * n * inner + c0;
      float *yb = y + o * n * inner + c0;
      std::fill(top, top + w, -std::numeric_limits<float>::infinity());
      std::fill(sum, sum + w, 0.f);
      for (int64_t k = 0; k < n; k++)
        for (int64_t i = 0; i < w; i++) top[i] = std::max(top[i], xb[k * inner + i]);
      for (int64_t k = 0; k < n; k++) {
        const float *xr = xb + k * inner;
        float *yr = yb + k * inner;
        for (int64_t i = 0; i < w; i++) yr[i] = xr[i] - top[i];
        unary_span(RLX_MXU_EXP, yr, yr, w);
        for (int64_t i = 0; i < w; i++) sum[i] += yr[i];
      }
      for (int64_t i = 0; i < w; i++) sum[i] = 1.f / sum[i];
      for (int64_t k = 0; k < n; k++)
        for (int64_t i = 0; i < w; i++) yb[k * inner + i] *= sum[i];
    }
  });
}

class Softmax : public CpuKernel {
 public:
  Softmax(mx::Stream s, int axis) : CpuKernel(s), axis_(axis) {}
  // input: float32, row-contiguous; softmax over axis_ (>= 0).
  void eval_cpu(const std::vector<mx::array> &in, mx::array &out) override {
    auto &enc = begin(in, out);
    const auto &shape = in[0].shape();
    int64_t n = shape[axis_], inner = 1;
    for (size_t i = axis_ + 1; i < shape.size(); i++) inner *= shape[i];
    int64_t outer = n > 0 && inner > 0 ? (int64_t)in[0].size() / (n * inner) : 0;
    const float *x = in[0].data<float>();
    float *y = out.data<float>();
    enc.dispatch([x, y, outer, n, inner]() {
      if (inner == 1) softmax_rows(x, y, outer, n);
      else softmax_columns(x, y, outer, n, inner);
    });
  }
  const char *name() const override { return "RlxSoftmax"; }
  bool is_equivalent(const mx::Primitive &other) const override { return axis_ == static_cast<const Softmax &>(other).axis_; }
  std::vector<mx::Shape> output_shapes(const std::vector<mx::array> &in) override { return {in[0].shape()}; }

 private:
  int axis_;
};

}  // namespace

// y[i] = act(x[i] + bias) a vector at a time (NONE: the sum), the loop body written out per kind,
// on the CPU's vectors (kernels.h with_lanes). max / min keep a NaN in their first operand, as
// std::max / std::min do.
bool piecewise_linear(const Act &act) {
  return act.kind == RLX_MX_ACT_NONE || act.kind == RLX_MX_ACT_RELU || act.kind == RLX_MX_ACT_CLIP ||
         act.kind == RLX_MX_ACT_HARD_SIGMOID || act.kind == RLX_MX_ACT_HARD_SWISH;
}

bool bias_act_copy(const Act &act, float bias, const float *x, float *y, int64_t n) {
  if (!piecewise_linear(act)) return false;
  with_lanes([&](auto *lane) __attribute__((always_inline)) {
    using V = std::remove_pointer_t<decltype(lane)>;
    constexpr int W = lanes<V>;
    const V zero = {}, one = zero + 1.f, va = zero + act.a, vb = zero + act.b, vbias = zero + bias;
    int64_t i = 0;
#define RLX_MAX(p, q) ((p) < (q) ? (q) : (p))
#define RLX_MIN(p, q) ((q) < (p) ? (q) : (p))
#define RLX_BIAS_ACT_LOOP(EXPR)  \
  for (; i + W <= n; i += W) {   \
    V v;                         \
    memcpy(&v, x + i, sizeof v); \
    v += vbias;                  \
    v = EXPR;                    \
    memcpy(y + i, &v, sizeof v); \
  }                              \
  for (; i < n; i++) {           \
    V v = zero + (x[i] + bias);  \
    v = EXPR;                    \
    y[i] = v[0];                 \
  }                              \
  return;
    switch (act.kind) {
      case RLX_MX_ACT_RELU: RLX_BIAS_ACT_LOOP(RLX_MAX(v, zero))
      case RLX_MX_ACT_CLIP: RLX_BIAS_ACT_LOOP(RLX_MIN(RLX_MAX(v, va), vb))
      case RLX_MX_ACT_HARD_SIGMOID: RLX_BIAS_ACT_LOOP(RLX_MIN(RLX_MAX(va * v + vb, zero), one))
      case RLX_MX_ACT_HARD_SWISH: RLX_BIAS_ACT_LOOP(v * RLX_MIN(RLX_MAX(va * v + vb, zero), one))
      default: RLX_BIAS_ACT_LOOP(v)
    }
#undef RLX_BIAS_ACT_LOOP
#undef RLX_MIN
#undef RLX_MAX
  });
  return true;
}

void apply_act(const Act &act, float *y, int64_t n) {
  if (act.kind && !bias_act_copy(act, 0.f, y, y, n)) smooth_act(act.kind, y, n);
}

namespace {

// y = act(x + b): b (optional) one value per element of x's last axis.
class BiasAct : public CpuKernel {
 public:
  BiasAct(mx::Stream s, Act act) : CpuKernel(s), act_(act) {}
  // inputs: x float32, optional b float32 [x's last dim], any strides (see dense).
  void eval_cpu(const std::vector<mx::array> &in, mx::array &out) override {
    reuse_or_alloc(in[0], out);
    auto &enc = encoder(in, out);
    float *y = out.data<float>();
    bool biased = in.size() > 1;
    int64_t n = (int64_t)out.size(), cols = biased ? (int64_t)in[1].size() : n, rows = cols ? n / cols : 0;
    Strided xs = strided(in[0]), bs = biased ? strided(in[1]) : Strided{};
    enc.dispatch([xs, bs, y, rows, cols, act = act_]() {
      thread_local std::vector<uint8_t> buf[2];
      const float *x = static_cast<const float *>(dense(xs, buf[0]));
      const float *b = bs.p ? static_cast<const float *>(dense(bs, buf[1])) : nullptr;
      if (!b) {  // elements in chunks
        return parallel_for(cols, 16384, [=](int64_t e0, int64_t e1) {
          if (x != y) memcpy(y + e0, x + e0, (e1 - e0) * sizeof(float));
          apply_act(act, y + e0, e1 - e0);
        });
      }
      parallel_for(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(cols, 1)), [=](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; r++) {
          const float *xr = x + r * cols;
          float *yr = y + r * cols;
          for (int64_t j = 0; j < cols; j++) yr[j] = xr[j] + b[j];
          apply_act(act, yr, cols);
        }
      });
    });
  }
  const char *name() const override { return "RlxBiasAct"; }
  bool is_equivalent(const mx::Primitive &other) const override {
    const Act &o = static_cast<const BiasAct &>(other).act_;
    return act_.kind == o.kind && act_.a == o.a && act_.b == o.b;
  }
  std::vector<mx::Shape> output_shapes(const std::vector<mx::array> &in) override { return {in[0].shape()}; }

 private:
  Act act_;
};

}  // namespace

}  // namespace rlx_kernels

extern "C" rlx_mx_arr *rlx_mx_unary_kernel(rlx_mx *c, rlx_mx_unary_op op, rlx_mx_arr *x) {
  if (!c || c->err || !x || A(x).dtype() != mx::float32 || !rlx_kernels::unary_supported(op)) return rlx_mx_unary(c, op, x);
  SHIM_OP(c, x, ([&] {
            std::vector<mx::array> in = {rlx_kernels::row_contiguous(A(x), c->stream)};
            mx::Shape shape = A(x).shape();
            return mx::array(std::move(shape), mx::float32, std::make_shared<rlx_kernels::Unary>(c->stream, op), std::move(in));
          }()));
}

extern "C" rlx_mx_arr *rlx_mx_softmax_axis(rlx_mx *c, rlx_mx_arr *x, int axis) {
  SHIM_OP(c, x, ([&] {
            mx::array xa = A(x);
            int r = (int)xa.ndim(), ax = axis < 0 ? axis + r : axis;
            if (xa.size() == 0) return xa; /* see shim_ops.cpp identity */
            if (xa.dtype() != mx::float32 || ax < 0 || ax >= r) return mx::softmax(xa, std::vector<int>{axis}, true, c->stream);
            std::vector<mx::array> in = {rlx_kernels::row_contiguous(xa, c->stream)};
            mx::Shape shape = xa.shape();
            return mx::array(std::move(shape), mx::float32, std::make_shared<rlx_kernels::Softmax>(c->stream, ax), std::move(in));
          }()));
}

extern "C" rlx_mx_arr *rlx_mx_bias_act(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *b, rlx_mx_act act) {
  SHIM_OP(c, x, ([&] {
            mx::array xa = A(x);
            if (xa.dtype() != mx::float32 || (b && (A(b).dtype() != mx::float32 || xa.ndim() == 0 || A(b).size() != (size_t)xa.shape().back())))
              throw std::invalid_argument("bias_act takes float32 x and b with x's last dim of values");
            std::vector<mx::array> in = {xa};
            if (b) in.push_back(mx::flatten(A(b), c->stream));
            mx::Shape shape = xa.shape();
            auto prim = std::make_shared<rlx_kernels::BiasAct>(c->stream, rlx_kernels::Act{act.kind, act.a, act.b});
            return mx::array(std::move(shape), mx::float32, std::move(prim), std::move(in));
          }()));
}
