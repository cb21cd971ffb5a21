// kernel_matvec.cpp: y[M, N] = x[M, K] @ W^T for float32 x, W float32 or float16 [N, K]
// row-contiguous or the packed rows of a GGUF Q8_0, Q4_0, Q4_1 or Q4_K tensor, read in place: an
// LLM's projections, a few rows of x in a decode step, many in a prefill.
//
// A few rows (at most 4). Float32: MLX's matmul goes to BLAS sgemm, which for one row of x still
// packs all of W (OpenBLAS 0.3.21's sgemm_incopy: 40% of a decode step) before reading it.
// Float16: MLX's CPU matmul would widen all of W to float32 first. Quantized: MLX's CPU
// quantized_matmul runs on one thread and needs MLX's affine layout, which the lowering
// otherwise rebuilds from the packed bytes at every run. Here each row of W is read once, its
// blocks decoded on the fly with the formulas of the GGUF block layouts (ggml-common.h
// block_q8_0: f16 d, int8 qs[32], w = d q; block_q4_0: f16 d, qs[16] (elements 0..15 the low
// nibbles, 16..31 the high ones), w = d (q - 8); block_q4_1: f16 d, m, qs[16], w = d q + m;
// block_q4_K: f16 d, dmin, 12 bytes of 6-bit scales and mins (get_scale_min_k4), 128 bytes of
// 4-bit codes in chunks of 64: 32 low nibbles then 32 high ones, w = (d sc) q - dmin m), and rows
// of W are split over the kernel thread pool. Every quantized scheme is groups of 32 weights
// a c + b (c the codes; b = 0 for Q8_0 and Q4_0), so a group contributes a (sum c x) + b (sum x):
// the codes meet x as they are (one FMA per weight, one more per group), and the sums of x per
// group are taken once per product, not once per row of W. A group whose a or b is NaN or
// infinite takes its weights formed as gguf-py forms them instead (a c + b, then times x), so such
// scales give what dequantize-then-multiply gives. A decode step is bound by reading the weights,
// so the loop must keep up with memory: 8 weights per AVX2 instruction, float16 and int8/int4
// codes widened in registers, independent accumulators per row of x so that the FMA latency does
// not bound it.
//
// x rounded to Q8_0 blocks (activations "q8_0", as llama.cpp's CPU matmuls quantize theirs): per
// group of 32 a d_w d_x (codes . codes) + b d_x sum(codes of x), the dot in integers, 32 byte
// products per AVX2 maddubs + madd, no widening of the weights to float (Q4_0 decode 7.5 -> 6.2 ms
// per step on the llm_bench model, 2 threads).
//
// More rows: tiles of 64 rows of W are dequantized to float32 once (into a buffer per thread)
// and multiplied by all of x with one single-threaded sgemm each (kernel_gemm.cpp), instead of
// widening or dequantizing all of W into a temporary at every run.
//
// Dequant (rlx_mx_dequant): the same decoders write whole rows of float32 (a quantized token
// embedding, gathered packed).
//
// Each kernel has an AVX2/FMA/F16C version, picked at run time when the CPU has those
// extensions (__builtin_cpu_supports, no IFUNC: the sanitizer builds run the same code), and a
// portable one.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
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

enum Scheme { kQ8_0 = 0, kQ4K = 1, kF32 = 2, kF16 = 3, kQ4_0 = 4, kQ4_1 = 5 };

constexpr bool quantized(int s) { return s != kF32 && s != kF16; }
// Schemes whose groups have an offset b (a c + b).
constexpr bool offset(int s) { return s == kQ4K || s == kQ4_1; }
// Elements and bytes of a block (a float "block" is one element).
constexpr int64_t block_elems(int s) { return s == kQ4K ? 256 : quantized(s) ? 32 : 1; }
constexpr int64_t block_bytes(int s) { return s == kQ8_0 ? 34 : s == kQ4K ? 144 : s == kQ4_0 ? 18 : s == kQ4_1 ? 20 : s == kF32 ? 4 : 2; }

// One row of W (its bytes at w) times the M rows x[m][0..K): out[m]; xs[m][g]: the sum of
// x[m][32 g .. 32 g + 32) (offset schemes only).
using RowFn = void (*)(const uint8_t *w, int64_t K, const float *const *x, const float *const *xs, int M, float *out);

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
  } else if (S == kQ4_0 || S == kQ4_1) {
    const uint8_t *b = p + k / 32 * block_bytes(S), *q = b + (S == kQ4_0 ? 2 : 4);
    float d = half(b);
    for (int j = 0; j < 16; j++)
      if (S == kQ4_0) {
        w[j] = d * (float)((q[j] & 15) - 8);
        w[16 + j] = d * (float)((q[j] >> 4) - 8);
      } else {
        w[j] = d * (float)(q[j] & 15) + half(b + 2);
        w[16 + j] = d * (float)(q[j] >> 4) + half(b + 2);
      }
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
void row_portable(const uint8_t *p, int64_t K, const float *const *x, const float *const *, int M, float *out) {
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

// ---- x quantized to Q8_0 blocks (activations "q8_0") ----

// The rows of x as Q8_0 blocks: per row m the codes q[m][K], each block's stored scale d[m][g] and
// d sum(q) of its codes s[m][g] (NaN for a block that holds a non-finite value).
struct Q8Rows {
  const int8_t *q[kMaxRows];
  const float *d[kMaxRows], *s[kMaxRows];
};

// Row x[0..K) (K a multiple of 32) as gguf-py's Q8_0 quantize forms it (gguf/quants.py, ggml's
// quantize_row_q8_0): per block of 32, d = max|x| / 127 and id = 1 / d (0 when d is 0) in float32,
// q = x id rounded half away from zero, d stored as float16. xd = d q, what gguf-py's dequantize
// gives back; a block holding an infinite or NaN value stays as it is in xd (its q 0, d and s NaN);
// a block whose float16 d is 0 has codes 0.
void quantize_q8_0(const float *x, int64_t K, int8_t *q, float *d, float *s, float *xd) {
  for (int64_t g = 0; g < K / 32; g++) {
    const float *v = x + 32 * g;
    float amax = 0;
    bool finite = true;
    for (int j = 0; j < 32; j++) {
      finite = finite && std::isfinite(v[j]);
      amax = std::max(amax, std::fabs(v[j]));
    }
    if (!finite) {
      std::memset(q + 32 * g, 0, 32);
      std::memcpy(xd + 32 * g, v, 32 * sizeof(float));
      d[g] = s[g] = NAN;
      continue;
    }
    /* d under float16's range (amax below about 1e-5) stores as 0: every dequantized value is 0,
     * whatever the codes, so they are 0 too (1 / d could overflow to inf there) */
    float dd = amax / 127.0f, d16 = static_cast<float>(static_cast<mx::float16_t>(dd)), id = d16 != 0.0f ? 1.0f / dd : 0.0f;
    int sum = 0;
    for (int j = 0; j < 32; j++) {
      int c = (int)std::round(v[j] * id);
      q[32 * g + j] = (int8_t)c;
      sum += c;
      xd[32 * g + j] = d16 * (float)c;
    }
    d[g] = d16;
    s[g] = d16 * (float)sum;
  }
}

// One row of W times M rows of Q8_0 x: out[m]. A group of W (a c + b, codes c) and a block of x (dx
// qx) contribute a dx (c . qx) + b dx sum(qx), the dot of the codes in integers (ggml's
// ggml_vec_dot_q8_0_q8_0 and the like do the same).
using Q8RowFn = void (*)(const uint8_t *w, int64_t K, const Q8Rows &x, int M, float *out);

// The codes c of group g (elements [32 g, 32 g + 32)) of a quantized row, with a and b.
template <int S>
void codes32(const uint8_t *p, int64_t g, int8_t *c, float *a, float *b) {
  if (S == kQ8_0) {
    const uint8_t *blk = p + g * 34;
    *a = half(blk), *b = 0;
    std::memcpy(c, blk + 2, 32);
  } else if (S == kQ4_0 || S == kQ4_1) {
    const uint8_t *blk = p + g * block_bytes(S), *q = blk + (S == kQ4_0 ? 2 : 4);
    *a = half(blk), *b = S == kQ4_1 ? half(blk + 2) : 0;
    for (int j = 0; j < 16; j++) {
      c[j] = (int8_t)((q[j] & 15) - (S == kQ4_0 ? 8 : 0));
      c[16 + j] = (int8_t)((q[j] >> 4) - (S == kQ4_0 ? 8 : 0));
    }
  } else { /* Q4_K */
    const uint8_t *blk = p + g / 8 * 144;
    int k = (int)(g % 8), sc, mn, shift = 4 * (k % 2);
    q4k_scale_min(blk + 4, k, &sc, &mn);
    *a = half(blk) * (float)sc, *b = -(half(blk + 2) * (float)mn);
    const uint8_t *q = blk + 16 + 32 * (k / 2);
    for (int j = 0; j < 32; j++) c[j] = (int8_t)((q[j] >> shift) & 15);
  }
}

template <int S>
void row_q8_portable(const uint8_t *p, int64_t K, const Q8Rows &x, int M, float *out) {
  float acc[kMaxRows] = {};
  int8_t c[32];
  for (int64_t g = 0; g < K / 32; g++) {
    float a, b;
    codes32<S>(p, g, c, &a, &b);
    for (int m = 0; m < M; m++) {
      int dot = 0;
      for (int j = 0; j < 32; j++) dot += c[j] * x.q[m][32 * g + j];
      acc[m] += a * x.d[m][g] * (float)dot + (offset(S) ? b * x.s[m][g] : 0.0f);
    }
  }
  for (int m = 0; m < M; m++) out[m] = acc[m];
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

// Calls f(k, w) for the weights w[k..k+8) of a float row, k in [0, K) by 8 (the caller handles
// the last K % 8 elements).
template <bool F16, class F>
inline void visit_float(const uint8_t *p, int64_t K, F &&f) {
  for (int64_t k = 0; k + 8 <= K; k += 8)
    f(k, F16 ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 2 * k))) : _mm256_loadu_ps((const float *)(p + 4 * k)));
}

// The 32 codes of Q4_K chunk q (32 bytes): lo the low nibbles (the chunk's first group), hi the
// high ones (its second), 8 per vector.
inline void q4k_chunk(const uint8_t *q, __m256 *lo, __m256 *hi) {
  for (int j = 0; j < 4; j++) {
    __m256i bytes = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(q + 8 * j)));
    lo[j] = _mm256_cvtepi32_ps(_mm256_and_si256(bytes, _mm256_set1_epi32(15)));
    hi[j] = _mm256_cvtepi32_ps(_mm256_srli_epi32(bytes, 4));
  }
}

// The a = d sc and b = -(dmin m) of the 8 groups of the Q4_K block at p, as q4k_scale_min gives
// them, all 8 at once (bytes 0..3 of the 12 hold the low 6 bits of scales 0..3, bytes 4..7 those
// of mins 0..3, bytes 8..11 the low 4 bits of scales and mins 4..7, whose high 2 bits are the
// top bits of bytes 0..7).
inline void q4k_scales(const uint8_t *p, float d, float dmin, __m256 *a, __m256 *b) {
  uint32_t u[3];
  std::memcpy(u, p + 4, 12);
  uint32_t sc_hi = (u[2] & 0x0f0f0f0f) | (((u[0] >> 6) & 0x03030303) << 4);
  uint32_t mn_hi = ((u[2] >> 4) & 0x0f0f0f0f) | (((u[1] >> 6) & 0x03030303) << 4);
  __m128i sc = _mm_set_epi32(0, 0, (int)sc_hi, (int)(u[0] & 0x3f3f3f3f)), mn = _mm_set_epi32(0, 0, (int)mn_hi, (int)(u[1] & 0x3f3f3f3f));
  *a = _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sc)));
  *b = _mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(mn))));
}

// q4k_scales of the Q4_K block at p into a[8] and b[8].
inline void q4k_block_scales(const uint8_t *p, float *a, float *b) {
  __m256 a8, b8;
  q4k_scales(p, half_avx2(p), half_avx2(p + 2), &a8, &b8);
  _mm256_storeu_ps(a, a8);
  _mm256_storeu_ps(b, b8);
}

// The parity of a group index as a type (kOdd / kEven), so that a visitor's per-group code picks
// its accumulator without a branch.
using kEven = std::integral_constant<int, 0>;
using kOdd = std::integral_constant<int, 1>;

// Calls f(g, parity, a, b, c) for each group g of 32 weights of a quantized row (elements [32 g,
// 32 g + 32)): parity kEven or kOdd as g is, c[0..4) its codes as floats, 8 each, and a, b as
// gguf-py forms them (a = d, b = m or 0; Q4_K: a = d sc, b = -(dmin m)), the weights being a c + b.
template <int S, class F>
inline void visit_groups(const uint8_t *p, int64_t K, F &&f) {
  const __m256i low4 = _mm256_set1_epi32(15);
  __m256 c[4];
  if constexpr (S == kQ4K) {
    __m256 hi[4];
    for (int64_t j = 0; j < K / 256; j++, p += 144) {
      float a[8], b[8];
      q4k_block_scales(p, a, b);
      for (int chunk = 0; chunk < 4; chunk++) {
        q4k_chunk(p + 16 + 32 * chunk, c, hi);
        f(8 * j + 2 * chunk, kEven{}, a[2 * chunk], b[2 * chunk], c);
        f(8 * j + 2 * chunk + 1, kOdd{}, a[2 * chunk + 1], b[2 * chunk + 1], hi);
      }
    }
  } else {
    // group g's codes and scales, the block at p + g * block bytes
    auto group = [&](int64_t g, auto parity) {
      const uint8_t *b = p + g * block_bytes(S);
      if constexpr (S == kQ8_0) {
        for (int j = 0; j < 4; j++) c[j] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(b + 2 + 8 * j))));
      } else { /* Q4_0, Q4_1: bytes j of qs hold elements j (low nibble) and 16 + j (high) */
        const __m256i zero = _mm256_set1_epi32(S == kQ4_0 ? 8 : 0);
        const uint8_t *q = b + (S == kQ4_0 ? 2 : 4);
        for (int j = 0; j < 2; j++) {
          __m256i bytes = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(q + 8 * j)));
          c[j] = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_and_si256(bytes, low4), zero));
          c[2 + j] = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(bytes, 4), zero));
        }
      }
      f(g, parity, half_avx2(b), S == kQ4_1 ? half_avx2(b + 2) : 0.0f, c);
    };
    int64_t g = 0, G = K / 32;
    for (; g + 2 <= G; g += 2) {
      group(g, kEven{});
      group(g + 1, kOdd{});
    }
    if (g < G) group(g, kEven{});
  }
}

// The weights a c + b of a group, as gguf-py forms them.
template <int S>
inline __m256 group_weights(__m256 a, __m256 b, __m256 c) {
  __m256 w = _mm256_mul_ps(a, c);
  return offset(S) ? _mm256_add_ps(w, b) : w;
}

inline float hsum(__m256 v) {
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
}

// Accumulators per row of x: enough independent FMA chains to cover the FMA latency (4 cycles,
// two per cycle) with one row, fewer when several rows give the parallelism (16 registers).
template <int M>
constexpr int kChains = M == 1 ? 8 : M == 2 ? 4 : 2;

template <int S, int M>
void row_avx2(const uint8_t *p, int64_t K, const float *const *x, const float *const *, int, float *out) {
  constexpr int C = kChains<M>;
  __m256 acc[M][C];
  for (int m = 0; m < M; m++)
    for (int c = 0; c < C; c++) acc[m][c] = _mm256_setzero_ps();
  visit_float<S == kF16>(p, K, [&](int64_t k, __m256 w) {
    int c = (int)(k / 8 % C);
    for (int m = 0; m < M; m++) acc[m][c] = _mm256_fmadd_ps(w, _mm256_loadu_ps(x[m] + k), acc[m][c]);
  });
  for (int m = 0; m < M; m++) {
    __m256 v = acc[m][0];
    for (int c = 1; c < C; c++) v = _mm256_add_ps(v, acc[m][c]);
    out[m] = hsum(v);
  }
  for (int64_t k = K / 8 * 8; k < K; k++)
    for (int m = 0; m < M; m++) out[m] += weight1<S>(p, k) * x[m][k];
}

// A quantized row: per group a (codes . x) (a chain of FMAs per row of x, the groups independent
// of each other) + b xs, summed into two accumulators (even and odd groups) and one for b xs, all
// in registers, so that the FMA latency does not bound the loop. A Q4_K block whose d and dmin
// are finite (then so are all its a and b) adds its 8 groups' b xs as one 8-wide product; one
// with a non-finite d or dmin has all its groups' weights formed.
template <int S, int M>
void row_groups_avx2(const uint8_t *p, int64_t K, const float *const *x, const float *const *xs, int, float *out) {
  __m256 acc[M][2], formed[M], off[M];
  for (int m = 0; m < M; m++) acc[m][0] = acc[m][1] = formed[m] = off[m] = _mm256_setzero_ps();
  auto fast = [&](int64_t g, auto parity, __m256 va, const __m256 *c) {
    for (int m = 0; m < M; m++) {
      const float *xg = x[m] + 32 * g;
      __m256 t = _mm256_mul_ps(c[0], _mm256_loadu_ps(xg));
      for (int j = 1; j < 4; j++) t = _mm256_fmadd_ps(c[j], _mm256_loadu_ps(xg + 8 * j), t);
      acc[m][decltype(parity)::value] = _mm256_fmadd_ps(va, t, acc[m][decltype(parity)::value]);
    }
  };
  auto form = [&](int64_t g, float a, float b, const __m256 *c) {
    __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
    for (int j = 0; j < 4; j++) {
      __m256 w = group_weights<S>(va, vb, c[j]);
      for (int m = 0; m < M; m++) formed[m] = _mm256_fmadd_ps(w, _mm256_loadu_ps(x[m] + 32 * g + 8 * j), formed[m]);
    }
  };
  if constexpr (S == kQ4K) {
    __m256 lo[4], hi[4];
    for (int64_t j = 0; j < K / 256; j++, p += 144) {
      float d = half_avx2(p), dmin = half_avx2(p + 2);
      __m256 a8, b8;
      q4k_scales(p, d, dmin, &a8, &b8);
      float a[8], b[8];
      _mm256_storeu_ps(a, a8);
      bool finite = std::isfinite(d) && std::isfinite(dmin);
      if (finite)
        for (int m = 0; m < M; m++) off[m] = _mm256_fmadd_ps(b8, _mm256_loadu_ps(xs[m] + 8 * j), off[m]);
      else
        _mm256_storeu_ps(b, b8);
      for (int chunk = 0; chunk < 4; chunk++) {
        int64_t g = 8 * j + 2 * chunk;
        q4k_chunk(p + 16 + 32 * chunk, lo, hi);
        if (finite) {
          fast(g, kEven{}, _mm256_set1_ps(a[2 * chunk]), lo);
          fast(g + 1, kOdd{}, _mm256_set1_ps(a[2 * chunk + 1]), hi);
        } else {
          form(g, a[2 * chunk], b[2 * chunk], lo);
          form(g + 1, a[2 * chunk + 1], b[2 * chunk + 1], hi);
        }
      }
    }
  } else {
    // First without testing the scales: a non-finite a or b makes the result non-finite (inf or
    // NaN times anything stays so through the sums), and only then is the row done again with
    // every group tested, its weights formed where a or b is not finite.
    visit_groups<S>(p, K, [&](int64_t g, auto parity, float a, float b, const __m256 *c) {
      fast(g, parity, _mm256_set1_ps(a), c);
      if (offset(S))
        for (int m = 0; m < M; m++) off[m] = _mm256_fmadd_ps(_mm256_set1_ps(b), _mm256_set1_ps(xs[m][g]), off[m]);
    });
    bool finite = true;
    for (int m = 0; m < M; m++)
      finite = finite && std::isfinite(hsum(_mm256_add_ps(acc[m][0], acc[m][1])) + _mm256_cvtss_f32(off[m]));
    if (!finite) {
      for (int m = 0; m < M; m++) acc[m][0] = acc[m][1] = off[m] = _mm256_setzero_ps();
      visit_groups<S>(p, K, [&](int64_t g, auto parity, float a, float b, const __m256 *c) {
        if (!std::isfinite(a) || !std::isfinite(b)) return form(g, a, b, c);
        fast(g, parity, _mm256_set1_ps(a), c);
        if (offset(S))
          for (int m = 0; m < M; m++) off[m] = _mm256_fmadd_ps(_mm256_set1_ps(b), _mm256_set1_ps(xs[m][g]), off[m]);
      });
    }
  }
  for (int m = 0; m < M; m++) {
    float o = S == kQ4K ? hsum(off[m]) : _mm256_cvtss_f32(off[m]); /* Q4_1: b xs in every lane */
    out[m] = hsum(_mm256_add_ps(_mm256_add_ps(acc[m][0], acc[m][1]), formed[m])) + o;
  }
}

// Calls f(g, parity, a, b, c) for each group g of a quantized row with its 32 codes c as bytes
// (int8 for Q8_0; 0..15 for the 4-bit schemes, Q4_0's taken as a c + b with b = -8 a), a and b
// as visit_groups gives them.
template <int S, class F>
inline void visit_codes(const uint8_t *p, int64_t K, F &&f) {
  const __m256i low4 = _mm256_set1_epi8(15);
  if constexpr (S == kQ4K) {
    for (int64_t j = 0; j < K / 256; j++, p += 144) {
      float a[8], b[8];
      q4k_block_scales(p, a, b);
      for (int chunk = 0; chunk < 4; chunk++) {
        __m256i bytes = _mm256_loadu_si256((const __m256i *)(p + 16 + 32 * chunk));
        f(8 * j + 2 * chunk, kEven{}, a[2 * chunk], b[2 * chunk], _mm256_and_si256(bytes, low4));
        f(8 * j + 2 * chunk + 1, kOdd{}, a[2 * chunk + 1], b[2 * chunk + 1], _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low4));
      }
    }
  } else {
    auto group = [&](int64_t g, auto parity) {
      const uint8_t *blk = p + g * block_bytes(S);
      __m256i c;
      if constexpr (S == kQ8_0) {
        c = _mm256_loadu_si256((const __m256i *)(blk + 2));
      } else { /* elements 0..15 the low nibbles of qs, 16..31 the high ones */
        __m128i raw = _mm_loadu_si128((const __m128i *)(blk + (S == kQ4_0 ? 2 : 4)));
        c = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), low4);
      }
      float a = half_avx2(blk);
      f(g, parity, a, S == kQ4_1 ? half_avx2(blk + 2) : S == kQ4_0 ? -8.0f * a : 0.0f, c);
    };
    int64_t g = 0, G = K / 32;
    for (; g + 2 <= G; g += 2) {
      group(g, kEven{});
      group(g + 1, kOdd{});
    }
    if (g < G) group(g, kEven{});
  }
}

// A quantized row times Q8_0 rows of x: per group the integer dot of the codes (pairs of byte
// products summed into int16 by maddubs, which takes an unsigned and a signed operand: Q8_0's
// signed codes go in as |c| with x's signs flipped where c < 0; |products| <= 2 * 128 * 127
// fits), widened to int32 and float, times a dx; b dx sum(qx) once per group; two accumulators
// per row.
template <int S, int M>
void row_q8_avx2(const uint8_t *p, int64_t K, const Q8Rows &x, int, float *out) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[M][2];
  float off[M];
  for (int m = 0; m < M; m++) acc[m][0] = acc[m][1] = _mm256_setzero_ps(), off[m] = 0;
  visit_codes<S>(p, K, [&](int64_t g, auto parity, float a, float b, __m256i c) {
    __m256i u = S == kQ8_0 ? _mm256_sign_epi8(c, c) : c;
    for (int m = 0; m < M; m++) {
      __m256i v = _mm256_loadu_si256((const __m256i *)(x.q[m] + 32 * g));
      if (S == kQ8_0) v = _mm256_sign_epi8(v, c);
      __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(u, v), ones));
      acc[m][decltype(parity)::value] = _mm256_fmadd_ps(_mm256_set1_ps(a * x.d[m][g]), dot, acc[m][decltype(parity)::value]);
      if (S != kQ8_0) off[m] += b * x.s[m][g];
    }
  });
  for (int m = 0; m < M; m++) out[m] = hsum(_mm256_add_ps(acc[m][0], acc[m][1])) + off[m];
}

template <int S>
void dequant_avx2(const uint8_t *p, int64_t K, float *w) {
  if constexpr (quantized(S)) {
    visit_groups<S>(p, K, [&](int64_t g, auto, float a, float b, const __m256 *c) {
      __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
      for (int j = 0; j < 4; j++) _mm256_storeu_ps(w + 32 * g + 8 * j, group_weights<S>(va, vb, c[j]));
    });
  } else {
    visit_float<S == kF16>(p, K, [&](int64_t k, __m256 v) { _mm256_storeu_ps(w + k, v); });
    for (int64_t k = K / 8 * 8; k < K; k++) w[k] = weight1<S>(p, k);
  }
}

#pragma GCC pop_options
#endif

// The kernels for `scheme`: a row times 1..4 rows of x, and a row's weights.
using DequantFn = void (*)(const uint8_t *w, int64_t K, float *out);
struct Kernels {
  RowFn row[kMaxRows];
  DequantFn dequant;
  Q8RowFn row_q8[kMaxRows];  // quantized schemes only
};

template <int S>
Kernels kernels_of() {
  constexpr bool q = quantized(S);
#ifdef RLX_MATVEC_AVX2
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  if constexpr (q) {
    if (avx2)
      return {{row_groups_avx2<S, 1>, row_groups_avx2<S, 2>, row_groups_avx2<S, 3>, row_groups_avx2<S, 4>}, dequant_avx2<S>,
              {row_q8_avx2<S, 1>, row_q8_avx2<S, 2>, row_q8_avx2<S, 3>, row_q8_avx2<S, 4>}};
  } else if (avx2) {
    return {{row_avx2<S, 1>, row_avx2<S, 2>, row_avx2<S, 3>, row_avx2<S, 4>}, dequant_avx2<S>, {}};
  }
#endif
  Q8RowFn q8 = nullptr;
  if constexpr (q) q8 = row_q8_portable<S>;
  return {{row_portable<S>, row_portable<S>, row_portable<S>, row_portable<S>}, dequant_portable<S>, {q8, q8, q8, q8}};
}

Kernels kernels(int scheme) {
  switch (scheme) {
    case kQ8_0: return kernels_of<kQ8_0>();
    case kQ4K: return kernels_of<kQ4K>();
    case kQ4_0: return kernels_of<kQ4_0>();
    case kQ4_1: return kernels_of<kQ4_1>();
    case kF32: return kernels_of<kF32>();
    default: return kernels_of<kF16>();
  }
}

// Rows of W dequantized per tile of a product with more than kMaxRows rows of x.
constexpr int64_t kTileRows = 64;

class MatVec : public CpuKernel {
 public:
  MatVec(mx::Stream s, int scheme, bool q8) : CpuKernel(s), scheme_(scheme), q8_(q8) {}
  // in: x [.., K] float32 (M rows) and W (float32 or float16 [N, K], or packed uint8 [N, row
  // bytes]), any strides (see dense); out [.., N]. q8: x is first quantized to Q8_0 blocks
  // (quantize_q8_0), then the codes meet W's in integers for M <= kMaxRows; a row of W whose
  // result is not finite is done again from the dequantized x the float way, as are more rows.
  void eval_cpu(const std::vector<mx::array> &in, mx::array &out) override {
    auto &enc = begin(in, out);
    int64_t K = in[0].shape().back(), M = rows_of(in[0]), N = in[1].shape()[0], G = K / 32;
    int64_t rb = (int64_t)in[1].itemsize() * in[1].shape()[1];
    mx::array xa = in[0], wa = in[1];
    float *y = out.data<float>();
    Kernels kern = kernels(scheme_);
    bool q8 = q8_, sums = offset(scheme_);
    enc.dispatch([=]() {
      thread_local std::vector<uint8_t> xbuf, wbuf;
      thread_local std::vector<int8_t> qx;
      thread_local std::vector<float> xd, dx, sx, sum;
      const float *x = static_cast<const float *>(dense(xa, xbuf));
      const uint8_t *w = static_cast<const uint8_t *>(dense(wa, wbuf));
      Q8Rows xq = {};
      if (q8) { /* from here on x is the dequantized x */
        if ((int64_t)xd.size() < M * K) qx.resize(M * K), xd.resize(M * K);
        if ((int64_t)dx.size() < M * G) dx.resize(M * G), sx.resize(M * G);
        for (int64_t m = 0; m < M; m++) quantize_q8_0(x + m * K, K, qx.data() + m * K, dx.data() + m * G, sx.data() + m * G, xd.data() + m * K);
        for (int64_t m = 0; m < M && m < kMaxRows; m++) xq.q[m] = qx.data() + m * K, xq.d[m] = dx.data() + m * G, xq.s[m] = sx.data() + m * G;
        x = xd.data();
      }
      if (M > kMaxRows) { /* tiles of W dequantized once, each multiplied by all of x */
        parallel_for((N + kTileRows - 1) / kTileRows, 1, [&](int64_t t0, int64_t t1) {
          thread_local std::vector<float> tile;
          if ((int64_t)tile.size() < kTileRows * K) tile.resize(kTileRows * K);
          for (int64_t t = t0; t < t1; t++) {
            int64_t n0 = t * kTileRows, rows = std::min(kTileRows, N - n0);
            for (int64_t r = 0; r < rows; r++) kern.dequant(w + (n0 + r) * rb, K, tile.data() + r * K);
            sgemm(false, true, M, rows, K, x, K, tile.data(), K, y + n0, N);
          }
        });
        return;
      }
      const float *xr[kMaxRows], *xs[kMaxRows] = {};
      if (sums) { /* the sums of x per group of 32 */
        if ((int64_t)sum.size() < M * G) sum.resize(M * G);
        for (int64_t m = 0; m < M; m++) {
          xs[m] = sum.data() + m * G;
          for (int64_t g = 0; g < G; g++) {
            float t = 0;
            for (int j = 0; j < 32; j++) t += x[m * K + 32 * g + j];
            sum[m * G + g] = t;
          }
        }
      }
      for (int64_t m = 0; m < M; m++) xr[m] = x + m * K;
      RowFn row = kern.row[M - 1];
      Q8RowFn row_q8 = q8 ? kern.row_q8[M - 1] : nullptr;
      parallel_for(N, 16, [&](int64_t n0, int64_t n1) {
        float o[kMaxRows];
        for (int64_t n = n0; n < n1; n++) {
          bool finite = row_q8;
          if (row_q8) {
            row_q8(w + n * rb, K, xq, (int)M, o);
            for (int64_t m = 0; m < M; m++) finite = finite && std::isfinite(o[m]);
          }
          if (!finite) row(w + n * rb, K, xr, xs, (int)M, o);
          for (int64_t m = 0; m < M; m++) y[m * N + n] = o[m];
        }
      });
    });
  }
  const char *name() const override { return "RlxMatVec"; }
  bool is_equivalent(const mx::Primitive &other) const override {
    auto &o = static_cast<const MatVec &>(other);
    return scheme_ == o.scheme_ && q8_ == o.q8_;
  }
  std::vector<mx::Shape> output_shapes(const std::vector<mx::array> &in) override {
    mx::Shape shape = in[0].shape();
    shape.back() = in[1].shape()[0];
    return {shape};
  }

 private:
  int scheme_;  // Scheme
  bool q8_;
};

// The packed rows of a quantized scheme dequantized to float32 (rows split over the pool).
class Dequant : public CpuKernel {
 public:
  Dequant(mx::Stream s, int scheme) : CpuKernel(s), scheme_(scheme) {}
  void eval_cpu(const std::vector<mx::array> &in, mx::array &out) override {
    auto &enc = begin(in, out);
    int64_t rb = in[0].shape().back(), K = out.shape().back(), rows = K ? (int64_t)out.size() / K : 0;
    mx::array qa = in[0];
    float *y = out.data<float>();
    DequantFn dequant = kernels(scheme_).dequant;
    enc.dispatch([=]() {
      thread_local std::vector<uint8_t> buf;
      const uint8_t *q = static_cast<const uint8_t *>(dense(qa, buf));
      parallel_for(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(K, 1)), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; r++) dequant(q + r * rb, K, y + r * K);
      });
    });
  }
  const char *name() const override { return "RlxDequant"; }
  bool is_equivalent(const mx::Primitive &other) const override { return scheme_ == static_cast<const Dequant &>(other).scheme_; }
  std::vector<mx::Shape> output_shapes(const std::vector<mx::array> &in) override {
    mx::Shape shape = in[0].shape();
    shape.back() = (int)(shape.back() / block_bytes(scheme_) * block_elems(scheme_));
    return {shape};
  }

 private:
  int scheme_;  // Scheme (a quantized one)
};

}  // namespace

int64_t rows_of(const mx::array &x) {
  int64_t m = 1;
  for (size_t d = 0; d + 1 < x.ndim(); d++) m *= x.shape(d);
  return m;
}

}  // namespace rlx_kernels

extern "C" rlx_mx_arr *rlx_mx_dequant(rlx_mx *c, rlx_mx_arr *packed, int scheme) {
  SHIM_OP(c, packed, ([&] {
            using namespace rlx_kernels;
            mx::array qa = A(packed);
            bool known = scheme >= kQ8_0 && scheme <= kQ4_1 && quantized(scheme);
            if (!known || qa.ndim() < 1 || qa.dtype() != mx::uint8 || qa.shape().back() % block_bytes(scheme))
              throw std::invalid_argument("dequant takes packed uint8 [.., K / QK * block bytes] of a quantized scheme");
            auto prim = std::make_shared<Dequant>(c->stream, scheme);
            std::vector<mx::array> in = {qa};
            mx::Shape shape = prim->output_shapes(in)[0];
            return mx::array(std::move(shape), mx::float32, std::move(prim), std::move(in));
          }()));
}

extern "C" rlx_mx_arr *rlx_mx_matvec(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *w, int scheme, bool q8) {
  SHIM_OP(c, x && w, ([&] {
            using namespace rlx_kernels;
            mx::array xa = A(x), wa = A(w);
            if (c->stream.device == mx::Device::gpu) {
              if (scheme != kF16 || q8) throw std::invalid_argument("matvec on a GPU takes a float16 W");
              return matvec_f16_cuda(xa, wa, c->stream);
            }
            bool known = scheme >= kQ8_0 && scheme <= kQ4_1;
            int64_t K = xa.ndim() >= 1 ? xa.shape().back() : 0, qk = known ? block_elems(scheme) : 1;
            int64_t cols = quantized(scheme) ? K / qk * block_bytes(scheme) : K;
            mx::Dtype wdt = scheme == kF32 ? mx::float32 : scheme == kF16 ? mx::float16 : mx::uint8;
            if (!known || (q8 && !quantized(scheme)) || xa.ndim() < 1 || wa.ndim() != 2 || rows_of(xa) < 1 || K % qk ||
                wa.shape()[1] != cols || wa.dtype() != wdt)
              throw std::invalid_argument("matvec takes x [.., K] and W float32 or float16 [N, K] or packed uint8 [N, K / QK * block bytes]");
            std::vector<mx::array> in = {mx::astype(xa, mx::float32, c->stream), wa};
            auto prim = std::make_shared<MatVec>(c->stream, scheme, q8);
            mx::Shape shape = prim->output_shapes(in)[0];
            return mx::array(std::move(shape), mx::float32, std::move(prim), std::move(in));
          }()));
}
