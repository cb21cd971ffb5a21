// kernel_matvec.cpp: y[M, N] = x[M, K] @ W^T for float32 x, W float32 or float16 [N, K]
// row-contiguous or the packed rows of a GGUF Q8_0 or Q4_K tensor, read in place: an LLM's
// projections, a few rows of x in a decode step, many in a prefill.
//
// A few rows (at most 4). Float32: MLX's matmul goes to BLAS sgemm, which for one row of x still
// packs all of W (OpenBLAS 0.3.21's sgemm_incopy: 40% of a decode step) before reading it.
// Float16: MLX's CPU matmul would widen all of W to float32 first. Quantized: MLX's CPU
// quantized_matmul runs on one thread and needs MLX's affine layout, which the lowering
// otherwise rebuilds from the packed bytes at every run. Here each row of W is read once, its
// blocks dequantized on the fly with the formulas of the GGUF block layouts (ggml-common.h
// block_q8_0: f16 d, int8 qs[32], w = d q; block_q4_K: f16 d, dmin, 12 bytes of 6-bit scales and
// mins (get_scale_min_k4), 128 bytes of 4-bit codes in chunks of 64: 32 low nibbles then 32 high
// ones, w = (d sc) q - dmin m), each weight formed as gguf-py forms it before it multiplies x (so
// NaN/inf scales behave as in dequantize-then-multiply), and rows of W are split over the kernel
// thread pool. A decode step is bound by reading the weights, so the loop must keep up with
// memory: 8 weights per AVX2 instruction, float16 and int8/int4 codes widened in registers,
// independent accumulators per row of x so that the FMA latency does not bound it.
//
// More rows: tiles of 64 rows of W are dequantized to float32 once (into a buffer per thread)
// and multiplied by all of x with one single-threaded sgemm each (kernel_gemm.cpp), instead of
// widening or dequantizing all of W into a temporary at every run.
//
// Each kernel has an AVX2/FMA/F16C version, picked at run time when the CPU has those
// extensions (__builtin_cpu_supports, no IFUNC: the sanitizer builds run the same code), and a
// portable one.
#include <algorithm>
#include <cstring>
#include <vector>

// GCC only: clang (scripts/fuzz.sh builds with it) ignores #pragma GCC target and clang 14's
// __builtin_cpu_supports has no "f16c", so its builds run the portable kernels.
#if defined(__x86_64__) && !defined(__clang__)
#include <immintrin.h>
#define RLX_MATVEC_AVX2 1
#endif

#include "mlx/backend/cpu/encoder.h"
#include "mlx/shim/kernels.h"

namespace rlx_kernels {
namespace {

constexpr int kMaxRows = 4;

enum Scheme { kQ8_0 = 0, kQ4K = 1, kF32 = 2, kF16 = 3 };

// One row of W (its bytes at w) times the M rows x[m][0..K): out[m].
using RowFn = void (*)(const uint8_t *w, int64_t K, const float *const *x, int M, float *out);

float half(const uint8_t *p) {
  mx::float16_t h;
  std::memcpy(&h, p, 2);
  return static_cast<float>(h);
}

// The 6-bit scale and min of group g (0..7) of a Q4_K block (ggml's get_scale_min_k4).
void q4k_scale_min(const uint8_t *s, int g, int *sc, int *mn) {
  *sc = g < 4 ? s[g] & 63 : (s[g + 4] & 15) | ((s[g - 4] >> 6) << 4);
  *mn = g < 4 ? s[g + 4] & 63 : (s[g + 4] >> 4) | ((s[g] >> 6) << 4);
}

// Element k of a float32 or float16 row.
template <int S>
float weight1(const uint8_t *p, int64_t k) {
  if (S == kF16) return half(p + 2 * k);
  float v;
  std::memcpy(&v, p + 4 * k, 4);
  return v;
}

// ---- portable ----

// The weights [k, k + 32) of a row (k a multiple of 32; k + 32 <= K for float rows).
template <int S>
void weights32(const uint8_t *p, int64_t k, float *w) {
  if (S == kQ8_0) {
    const uint8_t *b = p + k / 32 * 34;
    float d = half(b);
    for (int j = 0; j < 32; j++) w[j] = d * (float)(int8_t)b[2 + j];
  } else if (S == kQ4K) { /* group g of the block: chunk g / 2, low (even g) or high nibbles */
    const uint8_t *b = p + k / 256 * 144;
    int g = (int)(k % 256 / 32), sc, mn, shift = 4 * (g % 2);
    q4k_scale_min(b + 4, g, &sc, &mn);
    float ds = half(b) * (float)sc, dm = half(b + 2) * (float)mn;
    const uint8_t *q = b + 16 + 32 * (g / 2);
    for (int j = 0; j < 32; j++) w[j] = ds * (float)((q[j] >> shift) & 15) - dm;
  } else {
    for (int j = 0; j < 32; j++) w[j] = weight1<S>(p, k + j);
  }
}

template <int S>
void row_portable(const uint8_t *p, int64_t K, const float *const *x, int M, float *out) {
  float acc[kMaxRows][8] = {}, w[32];
  int64_t k = 0;
  for (; k + 32 <= K; k += 32) {
    weights32<S>(p, k, w);
    for (int m = 0; m < M; m++)
      for (int j = 0; j < 32; j += 8)
        for (int l = 0; l < 8; l++) acc[m][l] += w[j + l] * x[m][k + j + l];
  }
  for (int m = 0; m < M; m++) {
    float sum = 0;
    for (int l = 0; l < 8; l++) sum += acc[m][l];
    for (int64_t j = k; j < K; j++) sum += weight1<S>(p, j) * x[m][j];
    out[m] = sum;
  }
}

template <int S>
void dequant_portable(const uint8_t *p, int64_t K, float *w) {
  int64_t k = 0;
  for (; k + 32 <= K; k += 32) weights32<S>(p, k, w + k);
  for (; k < K; k++) w[k] = weight1<S>(p, k);
}

#ifdef RLX_MATVEC_AVX2
// ---- AVX2 + FMA + F16C ----
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

float half_avx2(const uint8_t *p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// Each visitor below calls f(k, w) for the weights w[k..k+8) of one row, k in [0, K) by 8 (the
// caller handles a float row's last K % 8 elements).
template <bool F16, class F>
inline void visit_float(const uint8_t *p, int64_t K, F &&f) {
  for (int64_t k = 0; k + 8 <= K; k += 8)
    f(k, F16 ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 2 * k))) : _mm256_loadu_ps((const float *)(p + 4 * k)));
}

template <class F>
inline void visit_q8_0(const uint8_t *p, int64_t K, F &&f) {
  for (int64_t k = 0; k < K; k += 32, p += 34) {
    __m256 d = _mm256_set1_ps(half_avx2(p));
    for (int j = 0; j < 4; j++)
      f(k + 8 * j, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p + 2 + 8 * j))))));
  }
}

template <class F>
inline void visit_q4_k(const uint8_t *p, int64_t K, F &&f) {
  const __m256i low4 = _mm256_set1_epi32(15);
  for (int64_t b = 0; b < K / 256; b++, p += 144) {
    float d = half_avx2(p), dmin = half_avx2(p + 2);
    for (int chunk = 0; chunk < 4; chunk++) { /* groups 2 chunk (low nibbles) and 2 chunk + 1 (high) */
      int sc0, mn0, sc1, mn1;
      q4k_scale_min(p + 4, 2 * chunk, &sc0, &mn0);
      q4k_scale_min(p + 4, 2 * chunk + 1, &sc1, &mn1);
      __m256 ds0 = _mm256_set1_ps(d * (float)sc0), dm0 = _mm256_set1_ps(dmin * (float)mn0);
      __m256 ds1 = _mm256_set1_ps(d * (float)sc1), dm1 = _mm256_set1_ps(dmin * (float)mn1);
      const uint8_t *q = p + 16 + 32 * chunk;
      int64_t k0 = b * 256 + 64 * chunk;
      for (int j = 0; j < 4; j++) {
        __m256i bytes = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(q + 8 * j)));
        f(k0 + 8 * j, _mm256_sub_ps(_mm256_mul_ps(ds0, _mm256_cvtepi32_ps(_mm256_and_si256(bytes, low4))), dm0));
        f(k0 + 32 + 8 * j, _mm256_sub_ps(_mm256_mul_ps(ds1, _mm256_cvtepi32_ps(_mm256_srli_epi32(bytes, 4))), dm1));
      }
    }
  }
}

template <int S, class F>
inline void visit(const uint8_t *p, int64_t K, F &&f) {
  if constexpr (S == kQ8_0) visit_q8_0(p, K, f);
  else if constexpr (S == kQ4K) visit_q4_k(p, K, f);
  else visit_float<S == kF16>(p, K, f);
}

// Accumulators per row of x: enough independent FMA chains to cover the FMA latency (4 cycles,
// two per cycle) with one row, fewer when several rows give the parallelism (16 registers).
template <int M>
constexpr int kChains = M == 1 ? 8 : M == 2 ? 4 : 2;

template <int S, int M>
void row_avx2(const uint8_t *p, int64_t K, const float *const *x, int, float *out) {
  constexpr int C = kChains<M>;
  __m256 acc[M][C];
  for (int m = 0; m < M; m++)
    for (int c = 0; c < C; c++) acc[m][c] = _mm256_setzero_ps();
  visit<S>(p, K, [&](int64_t k, __m256 w) {
    int c = (int)(k / 8 % C);
    for (int m = 0; m < M; m++) acc[m][c] = _mm256_fmadd_ps(w, _mm256_loadu_ps(x[m] + k), acc[m][c]);
  });
  for (int m = 0; m < M; m++) {
    __m256 v = acc[m][0];
    for (int c = 1; c < C; c++) v = _mm256_add_ps(v, acc[m][c]);
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    out[m] = _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
  }
  if (S == kF32 || S == kF16)
    for (int64_t k = K / 8 * 8; k < K; k++)
      for (int m = 0; m < M; m++) out[m] += weight1<S>(p, k) * x[m][k];
}

template <int S>
void dequant_avx2(const uint8_t *p, int64_t K, float *w) {
  visit<S>(p, K, [&](int64_t k, __m256 v) { _mm256_storeu_ps(w + k, v); });
  if (S == kF32 || S == kF16)
    for (int64_t k = K / 8 * 8; k < K; k++) w[k] = weight1<S>(p, k);
}

#pragma GCC pop_options
#endif

// The kernels for `scheme`: a row times 1..4 rows of x, and a row's weights.
using DequantFn = void (*)(const uint8_t *w, int64_t K, float *out);
struct Kernels {
  RowFn row[kMaxRows];
  DequantFn dequant;
};

template <int S>
Kernels kernels_of() {
#ifdef RLX_MATVEC_AVX2
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  if (avx2) return {{row_avx2<S, 1>, row_avx2<S, 2>, row_avx2<S, 3>, row_avx2<S, 4>}, dequant_avx2<S>};
#endif
  return {{row_portable<S>, row_portable<S>, row_portable<S>, row_portable<S>}, dequant_portable<S>};
}

Kernels kernels(int scheme) {
  switch (scheme) {
    case kQ8_0: return kernels_of<kQ8_0>();
    case kQ4K: return kernels_of<kQ4K>();
    case kF32: return kernels_of<kF32>();
    default: return kernels_of<kF16>();
  }
}

// Rows of W dequantized per tile of a product with more than kMaxRows rows of x.
constexpr int64_t kTileRows = 64;

class MatVec : public CpuKernel {
 public:
  MatVec(mx::Stream s, int scheme) : CpuKernel(s), scheme_(scheme) {}
  // in: x [M, K] float32 and W (float32 or float16 [N, K], or packed uint8 [N, row bytes]), both
  // row-contiguous; out [M, N].
  void eval_cpu(const std::vector<mx::array> &in, mx::array &out) override {
    auto &enc = begin(in, out);
    int64_t M = in[0].shape()[0], K = in[0].shape()[1], N = in[1].shape()[0], rb = (int64_t)in[1].itemsize() * in[1].shape()[1];
    const float *x = in[0].data<float>();
    const uint8_t *w = in[1].data<uint8_t>();
    float *y = out.data<float>();
    Kernels kern = kernels(scheme_);
    if (M > kMaxRows) { /* tiles of W dequantized once, each multiplied by all of x */
      enc.dispatch([=]() {
        parallel_for((N + kTileRows - 1) / kTileRows, 1, [&](int64_t t0, int64_t t1) {
          thread_local std::vector<float> tile;
          if ((int64_t)tile.size() < kTileRows * K) tile.resize(kTileRows * K);
          for (int64_t t = t0; t < t1; t++) {
            int64_t n0 = t * kTileRows, rows = std::min(kTileRows, N - n0);
            for (int64_t r = 0; r < rows; r++) kern.dequant(w + (n0 + r) * rb, K, tile.data() + r * K);
            sgemm(false, true, M, rows, K, x, K, tile.data(), K, y + n0, N);
          }
        });
      });
      return;
    }
    RowFn row = kern.row[M - 1];
    enc.dispatch([=]() {
      const float *xr[kMaxRows];
      for (int64_t m = 0; m < M; m++) xr[m] = x + m * K;
      parallel_for(N, 16, [&](int64_t n0, int64_t n1) {
        float o[kMaxRows];
        for (int64_t n = n0; n < n1; n++) {
          row(w + n * rb, K, xr, (int)M, o);
          for (int64_t m = 0; m < M; m++) y[m * N + n] = o[m];
        }
      });
    });
  }
  const char *name() const override { return "RlxMatVec"; }
  bool is_equivalent(const mx::Primitive &other) const override { return scheme_ == static_cast<const MatVec &>(other).scheme_; }
  std::vector<mx::Shape> output_shapes(const std::vector<mx::array> &in) override { return {{in[0].shape()[0], in[1].shape()[0]}}; }

 private:
  int scheme_;  // Scheme
};

}  // namespace
}  // namespace rlx_kernels

extern "C" rlx_mx_arr *rlx_mx_matvec(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *w, int scheme) {
  SHIM_OP(c, x && w, ([&] {
            using namespace rlx_kernels;
            mx::array xa = A(x), wa = A(w);
            int64_t K = xa.ndim() == 2 ? xa.shape()[1] : 0, qk = scheme == kQ8_0 ? 32 : scheme == kQ4K ? 256 : 1;
            int64_t cols = scheme == kQ8_0 ? K / 32 * 34 : scheme == kQ4K ? K / 256 * 144 : K;
            mx::Dtype wdt = scheme == kF32 ? mx::float32 : scheme == kF16 ? mx::float16 : mx::uint8;
            if (scheme < kQ8_0 || scheme > kF16 || xa.ndim() != 2 || wa.ndim() != 2 || xa.shape()[0] < 1 || K % qk ||
                wa.shape()[1] != cols || wa.dtype() != wdt)
              throw std::invalid_argument("matvec takes x [M, K] and W float32 or float16 [N, K] or packed uint8 [N, K / QK * block bytes]");
            std::vector<mx::array> in = {mx::contiguous(mx::astype(xa, mx::float32, c->stream), false, c->stream),
                                         mx::contiguous(wa, false, c->stream)};
            auto prim = std::make_shared<MatVec>(c->stream, scheme);
            mx::Shape shape = prim->output_shapes(in)[0];
            return mx::array(std::move(shape), mx::float32, std::move(prim), std::move(in));
          }()));
}
