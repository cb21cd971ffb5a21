// kernel_matvec.cpp: y[M, N] = x[M, K] @ W^T for float32 x, W float32 or float16 [N, K]
// row-contiguous or the packed rows of a GGUF Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K or Q6_K tensor,
// read in place:
// an LLM's projections, a few rows of x in a decode step, many in a prefill. Q5_K (Q4_K's layout
// and a fifth bit per code), Q2_K, Q3_K (q3k_code) and Q6_K (q6k_code) have no row kernel for
// Q8_0 x: row by row they take float x, decoded to their weights in registers (Q4_K_M files hold
// Q6_K: decode of the llm_bench model in Q4_K_M went from 117 to 7 ms per step, where MLX ops had
// dequantized every Q6_K matrix at each step); in rows8 (below) their codes meet Q8_0 x in
// integers too (Q4_K_M 5.8 -> 3.6 ms per step).
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
// per step on the llm_bench model, 2 threads). A row at a time still spends ~15 instructions per
// group (the scales' broadcasts, the offset's FMA chain, a horizontal sum per row): with W kept
// in blocks of 8 rows (rows8, made once by the executable: rlx_mx_matvec_rows8) one AVX-512 VNNI
// vpdpbusd advances 8 rows by 4 elements and the scales of 8 rows are one vector (Q4_0 decode
// 7.1 -> 5.3 ms per step; Q8_0, bound by memory, unchanged). The K-quants other than Q4_K keep a
// code per byte there (more bytes than their files' 2.6-6.6 bits per weight, read at the speed of
// Q8_0's integer dots instead of decoded to floats per weight).
//
// More rows: tiles of 64 rows of W are dequantized to float32 once (into a buffer per thread)
// and multiplied by all of x with one single-threaded sgemm each (kernel_gemm.cpp), instead of
// widening or dequantizing all of W into a temporary at every run.
//
// Dequant (rlx_mx_dequant): the same decoders write whole rows of float32 (a quantized token
// embedding, gathered packed).
//
// Each kernel has an AVX2/FMA/F16C version (rows8: AVX-512 VNNI), picked at run time when the CPU
// has those extensions (__builtin_cpu_supports, no IFUNC: the sanitizer builds run the same code),
// and a portable one (rows8: only in builds without the AVX2 kernels, so that a CPU with AVX2
// and no VNNI keeps its row kernels).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
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

enum Scheme { kQ8_0 = 0, kQ4K = 1, kF32 = 2, kF16 = 3, kQ4_0 = 4, kQ4_1 = 5, kQ6K = 6, kQ5K = 7, kQ3K = 8, kQ2K = 9, kQ5_0 = 10, kQ5_1 = 11 };
// The last scheme.
constexpr int kLastScheme = kQ5_1;

constexpr bool quantized(int s) { return s != kF32 && s != kF16; }
// Schemes with row kernels for Q8_0 x (codes32, visit_codes: integer dots row by row); the other
// quantized ones meet Q8_0 x in integers only through rows8 (has_rows8).
constexpr bool integer_dots(int s) { return s == kQ8_0 || s == kQ4K || s == kQ4_0 || s == kQ4_1; }
// Schemes whose groups have an offset b (a c + b).
constexpr bool offset(int s) { return s == kQ4K || s == kQ4_1 || s == kQ5K || s == kQ5_1; }
// Q5_0 and Q5_1: the blocks of 32 with a fifth bit per code (no row kernel of their own for
// AVX2: row by row the portable one; rows8 with a code per byte).
constexpr bool five(int s) { return s == kQ5_0 || s == kQ5_1; }
// Schemes with 16 scales per 256 (sub-blocks of 16).
constexpr bool sixteen(int s) { return s == kQ6K || s == kQ3K || s == kQ2K; }
// Schemes with a rows8 form (all the quantized ones).
constexpr bool has_rows8(int s) { return integer_dots(s) || sixteen(s) || s == kQ5K || five(s); }
// Elements and bytes of a block (a float "block" is one element).
constexpr int64_t block_elems(int s) { return s == kQ4K || s == kQ6K || s == kQ5K || s == kQ3K || s == kQ2K ? 256 : quantized(s) ? 32 : 1; }
constexpr int64_t block_bytes(int s) {
  return s == kQ8_0 ? 34 : s == kQ4K ? 144 : s == kQ4_0 ? 18 : s == kQ4_1 ? 20 : s == kQ6K ? 210 : s == kQ5K ? 176 : s == kQ3K ? 110
         : s == kQ2K ? 84 : s == kQ5_0 ? 22 : s == kQ5_1 ? 24 : s == kF32 ? 4 : 2;
}

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

// The code q - 32 (-32..31) of element j (0..31) of group g (0..7) of the Q6_K block at b (ggml's
// block_q6_K: ql[128] low 4 bits, qh[64] high 2 bits, int8 scales[16] per 16 elements, f16 d;
// w = d scales[.] (q - 32); dequantize_row_q6_K's order: half h = g / 4 of 128 elements, quarter
// q = g % 4 of 32: low nibbles of ql[64 h + 32 (q % 2) + j] for q < 2, high ones for q >= 2, bits
// 2 q of qh[32 h + j]).
int q6k_code(const uint8_t *b, int g, int j) {
  int h = g / 4, q = g % 4;
  int lo = (b[64 * h + 32 * (q % 2) + j] >> (q < 2 ? 0 : 4)) & 15, hi = (b[128 + 32 * h + j] >> (2 * q)) & 3;
  return (lo | hi << 4) - 32;
}

// The 16 scales of the Q3_K block at b, 6-bit values minus 32 (ggml's block_q3_K: hmask[32], qs[64],
// scales[12], f16 d; dequantize_row_q3_K's unpacking: scale i's low 4 bits are the low nibble of
// byte i for i < 8, the high nibble of byte i - 8 after; its high 2 bits are bits 2 (i / 4) and
// 2 (i / 4) + 1 of byte 8 + i % 4).
void q3k_scales(const uint8_t *b, int *sc) {
  const uint8_t *s = b + 96;
  for (int i = 0; i < 16; i++) {
    int lo = i < 8 ? s[i] & 15 : s[i - 8] >> 4, hi = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
    sc[i] = (lo | hi << 4) - 32;
  }
}

// The code (-4..3) of element j (0..31) of group g (0..7) of the Q3_K block at b: 2 bits of qs[32 (g /
// 4) + j] at 2 (g % 4), minus 4 where bit g of hmask[j] is clear.
int q3k_code(const uint8_t *b, int g, int j) {
  return ((b[32 + 32 * (g / 4) + j] >> (2 * (g % 4))) & 3) - ((b[j] >> g) & 1 ? 0 : 4);
}

// The code (0..31) of element j (0..31) of the Q5_0 / Q5_1 block at b (ggml's block_q5_0: f16 d,
// qh u32 (bit j: element j's fifth bit), qs[16] as Q4_0's; block_q5_1: f16 d, m, then as Q5_0's).
template <int S>
int q5_code(const uint8_t *b, int j) {
  const uint8_t *qh = b + (S == kQ5_0 ? 2 : 4), *q = qh + 4;
  return (j < 16 ? q[j] & 15 : q[j - 16] >> 4) | (qh[j / 8] >> (j % 8) & 1) << 4;
}

// The code (0..31) of element j of group g (0..7) of the Q5_K block at b (block_q5_K: d, dmin,
// scales as Q4_K's, qh[32] (bit g: group g's fifth bit), qs[128] as Q4_K's).
int q5k_code(const uint8_t *b, int g, int j) { return ((b[48 + 32 * (g / 2) + j] >> (4 * (g % 2))) & 15) | ((b[16 + j] >> g) & 1) << 4; }

// The code (0..3) of element j of group g (0..7) of the Q2_K block at b (block_q2_K: scales[16],
// qs[64], f16 d, dmin).
int q2k_code(const uint8_t *b, int g, int j) { return (b[16 + 32 * (g / 4) + j] >> (2 * (g % 4))) & 3; }

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
  } else if (five(S)) { /* Q5_0: w = d (q - 16); Q5_1: w = d q + m */
    const uint8_t *b = p + k / 32 * block_bytes(S);
    float d = half(b);
    for (int j = 0; j < 32; j++) w[j] = S == kQ5_0 ? d * (float)(q5_code<S>(b, j) - 16) : d * (float)q5_code<S>(b, j) + half(b + 2);
  } else if (S == kQ2K) { /* block_q2_K: scales[16] (low nibble scale, high nibble min per 16), qs[64], f16 d, dmin */
    const uint8_t *b = p + k / 256 * 84;
    int g = (int)(k % 256 / 32);
    float d = half(b + 80), dmin = half(b + 82);
    for (int j = 0; j < 32; j++) {
      int sc = b[2 * g + j / 16];
      w[j] = d * (float)(sc & 15) * (float)q2k_code(b, g, j) - dmin * (float)(sc >> 4);
    }
  } else if (S == kQ3K) { /* group g: scales 2 g and 2 g + 1 (16 elements each) */
    const uint8_t *b = p + k / 256 * 110;
    int g = (int)(k % 256 / 32), sc[16];
    q3k_scales(b, sc);
    float d = half(b + 108);
    for (int j = 0; j < 32; j++) w[j] = d * (float)sc[2 * g + j / 16] * (float)q3k_code(b, g, j);
  } else if (S == kQ5K) { /* block_q5_K: d, dmin, scales as Q4_K's, qh[32] (bit g: group g's fifth bit), qs[128] as Q4_K's */
    const uint8_t *b = p + k / 256 * 176;
    int g = (int)(k % 256 / 32), sc, mn;
    q4k_scale_min(b + 4, g, &sc, &mn);
    float ds = half(b) * (float)sc, dm = half(b + 2) * (float)mn;
    for (int j = 0; j < 32; j++) w[j] = ds * (float)q5k_code(b, g, j) - dm;
  } else if (S == kQ6K) { /* group g (0..7) of the block: half g / 4, quarter g % 4 (q6k_code) */
    const uint8_t *b = p + k / 256 * 210;
    int g = (int)(k % 256 / 32);
    float d = half(b + 208);
    for (int j = 0; j < 32; j++) w[j] = d * (float)(int8_t)b[192 + 8 * (g / 4) + 2 * (g % 4) + j / 16] * (float)q6k_code(b, g, j);
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

// The rows of x as Q8_0 blocks: per row m the codes q[m][K], each block's stored scale d[m][g], the
// sum of its codes n[m][g] and d times that sum s[m][g] (d and s NaN for a block that holds a
// non-finite value).
struct Q8Rows {
  const int8_t *q[kMaxRows];
  const float *d[kMaxRows], *s[kMaxRows];
  const int32_t *n[kMaxRows];
  const int32_t *h[kMaxRows];  // rows8 of the sixteen() schemes only: the sums of each block's first 16 codes
};

// Row x[0..K) (K a multiple of 32) as gguf-py's Q8_0 quantize forms it (gguf/quants.py, ggml's
// quantize_row_q8_0): per block of 32, d = max|x| / 127 and id = 1 / d (0 when d is 0) in float32,
// q = x id rounded half away from zero, d stored as float16. xd = d q, what gguf-py's dequantize
// gives back; a block holding an infinite or NaN value stays as it is in xd (its q 0, d and s NaN);
// a block whose float16 d is 0 has codes 0.
void quantize_q8_0(const float *x, int64_t K, int8_t *q, float *d, float *s, int32_t *n, float *xd) {
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
      n[g] = 0;
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
    n[g] = sum;
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

// ---- W in blocks of 8 rows (rows8), for x quantized to Q8_0 ----
//
// The rows of W in blocks of 8 (rows 8 b .. 8 b + 7), repacked once from the GGUF rows so that one
// 32-byte vector holds 4 codes of each of the 8 rows, and one integer dot-product instruction
// (vpdpbusd: 4 byte products summed per 32-bit lane) advances all 8 rows by 4 elements against a
// broadcast of 4 codes of x: the 8 results land in the 8 lanes of one vector, scaled by the 8 rows'
// scales (one float16 vector) and summed into one accumulator per row of x, without the
// per-group broadcasts and horizontal sums of a row at a time. The layout of one block of 8 rows,
// per group of 32 elements (Q4_K: per super-block of 256), in element order:
// - Q8_0: d[8] (float16), then 8 vectors of 32 bytes: byte 4 r + t of vector i is the int8 code of
//   row r, element 4 i + t (272 bytes, as 8 GGUF blocks);
// - Q4_0: d[8], then 4 vectors: byte 4 r + t of vector v is byte 4 v + t of row r's qs, whose low
//   nibble is element 4 v + t and high nibble element 16 + 4 v + t (144 bytes, as 8 blocks);
// - Q4_1: d[8], m[8], then the 4 vectors as Q4_0's (160 bytes, as 8 blocks);
// - Q5_0, Q5_1: d[8] (Q5_1: then m[8]), then the 32 codes with their fifth bits (0..31; Q5_0's
//   plus 16) in 8 vectors laid out as Q8_0's (272 and 288 bytes, 96 more than 8 blocks);
// - Q4_K: d[8], dmin[8] (float16), the 6-bit scales sc[8 groups][8 rows] and mins mn[8][8] as
//   bytes (get_scale_min_k4), then per group k its 32 codes in 4 vectors laid out as Q4_0's (1184
//   bytes, 32 more than 8 blocks);
// - Q5_K: as Q4_K, but per group k its 32 codes (0..31) in 8 vectors laid out as Q8_0's (2208
//   bytes, 800 more than 8 blocks: the codes as bytes, not 5 bits);
// - Q6_K: d[8] (float16), the int8 scales sc[16 sub-blocks][8 rows], then per group k its 32 codes
//   plus 32 (0..63) in 8 vectors laid out as Q8_0's (2192 bytes, 512 more than 8 blocks: the codes
//   as bytes, not 6 bits); a sub-block of 16 contributes d sc d_x (codes . q_x - 32 sum(q_x));
// - Q3_K: as Q6_K, its codes plus 4 (0..7) and its 6-bit scales minus 32 (2192 bytes);
// - Q2_K: d[8], dmin[8] (float16), the 4-bit scales sc[16][8] and mins mn[16][8] as bytes, then
//   per group k its codes (0..3) as Q6_K's (2336 bytes); a sub-block of 16 contributes
//   d sc d_x (codes . q_x) - dmin mn d_x sum(q_x).
// The codes stay unsigned (Q8_0: signed) as GGUF stores them; a group contributes a d_x (codes .
// q_x) + b d_x sum(q_x) to each row, Q4_0's -8 and Q8_0's signs folded into the integer dot.
// Rows past the last full block of 8 stay in the GGUF rows.
constexpr int kRows8 = 8;

// Bytes of a block of 8 rows per block_elems(S) elements.
constexpr int64_t rows8_unit(int s) {
  return s == kQ8_0 || s == kQ5_0 ? 272 : s == kQ4_0 ? 144 : s == kQ4_1 ? 160 : s == kQ5_1 ? 288 : s == kQ6K || s == kQ3K ? 2192
         : s == kQ5K ? 2208 : s == kQ2K ? 2336 : 1184;
}
// The offset of the rows8 codes of the schemes with 16 scales per 256 (Q6_K's and Q3_K's codes are
// signed) and where their scales start in a unit.
constexpr int rows8_bias(int s) { return s == kQ6K ? 32 : s == kQ3K ? 4 : 0; }
constexpr int rows8_scales(int s) { return s == kQ2K ? 32 : 16; }
// Where group k's codes start in a unit of the K-quants' rows8 forms.
constexpr int64_t rows8_codes(int s, int k) {
  return s == kQ6K || s == kQ3K ? 144 + 256 * k : s == kQ5K ? 160 + 256 * k : s == kQ2K ? 288 + 256 * k : 160 + 128 * k;
}

// The code of element j (0..31) of row r in a group's vectors at v (rows8 layout).
template <int S>
int rows8_code(const uint8_t *v, int r, int j) {
  if (S == kQ8_0) return (int8_t)v[32 * (j / 4) + 4 * r + j % 4];
  if (sixteen(S)) return v[32 * (j / 4) + 4 * r + j % 4] - rows8_bias(S);
  if (S == kQ5K || S == kQ5_1) return v[32 * (j / 4) + 4 * r + j % 4];
  if (S == kQ5_0) return v[32 * (j / 4) + 4 * r + j % 4] - 16;
  int jj = j % 16;
  uint8_t b = v[32 * (jj / 4) + 4 * r + jj % 4];
  return j < 16 ? b & 15 : b >> 4;
}

// Writes the rows8 form of the 8 GGUF rows at w (row stride rb bytes) to out (K / block_elems(S)
// units).
template <int S>
void rows8_pack(const uint8_t *w, int64_t rb, int64_t K, uint8_t *out) {
  for (int64_t u = 0; u < K / block_elems(S); u++, out += rows8_unit(S)) {
    const int64_t bb = block_bytes(S);
    if (S == kQ6K || S == kQ3K) {
      for (int r = 0; r < kRows8; r++) {
        const uint8_t *b = w + r * rb + u * bb;
        int sc[16];
        if (S == kQ3K) q3k_scales(b, sc);
        std::memcpy(out + 2 * r, b + (S == kQ6K ? 208 : 108), 2);
        for (int j = 0; j < 16; j++) out[16 + 8 * j + r] = S == kQ6K ? b[192 + j] : (uint8_t)(int8_t)sc[j];
        for (int g = 0; g < 8; g++)
          for (int j = 0; j < 32; j++)
            out[144 + 256 * g + 32 * (j / 4) + 4 * r + j % 4] = (uint8_t)((S == kQ6K ? q6k_code(b, g, j) : q3k_code(b, g, j)) + rows8_bias(S));
      }
      continue;
    }
    if (S == kQ2K) {
      for (int r = 0; r < kRows8; r++) {
        const uint8_t *b = w + r * rb + u * bb;
        std::memcpy(out + 2 * r, b + 80, 2);
        std::memcpy(out + 16 + 2 * r, b + 82, 2);
        for (int j = 0; j < 16; j++) out[32 + 8 * j + r] = b[j] & 15, out[160 + 8 * j + r] = b[j] >> 4;
        for (int g = 0; g < 8; g++)
          for (int j = 0; j < 32; j++)
            out[288 + 256 * g + 32 * (j / 4) + 4 * r + j % 4] = (uint8_t)q2k_code(b, g, j);
      }
      continue;
    }
    if (S == kQ4K || S == kQ5K) {
      for (int r = 0; r < kRows8; r++) {
        const uint8_t *b = w + r * rb + u * bb;
        std::memcpy(out + 2 * r, b, 2);
        std::memcpy(out + 16 + 2 * r, b + 2, 2);
        for (int k = 0; k < 8; k++) {
          int sc, mn;
          q4k_scale_min(b + 4, k, &sc, &mn);
          out[32 + 8 * k + r] = (uint8_t)sc, out[96 + 8 * k + r] = (uint8_t)mn;
        }
        for (int k = 0; S == kQ5K && k < 8; k++)
          for (int j = 0; j < 32; j++) out[160 + 256 * k + 32 * (j / 4) + 4 * r + j % 4] = (uint8_t)q5k_code(b, k, j);
        for (int k = 0; S == kQ4K && k < 8; k++) { /* group k: chunk k / 2, low or high nibbles */
          const uint8_t *q = b + 16 + 32 * (k / 2);
          int shift = 4 * (k % 2);
          for (int j = 0; j < 16; j++) {
            uint8_t lo = (q[j] >> shift) & 15, hi = (q[16 + j] >> shift) & 15;
            out[160 + 128 * k + 32 * (j / 4) + 4 * r + j % 4] = (uint8_t)(lo | hi << 4);
          }
        }
      }
      continue;
    }
    int head = S == kQ4_1 || S == kQ5_1 ? 32 : 16, qoff = S == kQ8_0 || S == kQ4_0 ? 2 : 4, qlen = S == kQ8_0 ? 32 : 16;
    for (int r = 0; r < kRows8; r++) {
      const uint8_t *b = w + r * rb + u * bb;
      std::memcpy(out + 2 * r, b, 2);
      if (S == kQ4_1 || S == kQ5_1) std::memcpy(out + 16 + 2 * r, b + 2, 2);
      if (five(S)) { /* the codes with their fifth bits, a byte each (Q5_0's still plus 16) */
        for (int j = 0; j < 32; j++) out[head + 32 * (j / 4) + 4 * r + j % 4] = (uint8_t)q5_code<S>(b, j);
        continue;
      }
      for (int j = 0; j < qlen; j++) out[head + 32 * (j / 4) + 4 * r + j % 4] = b[qoff + j];
    }
  }
}

// A block of 8 rows (its rows8 bytes at p) times M rows of Q8_0 x: y[m * ldy + r]; returns the
// results that are not finite, bit 8 m + r.
using Rows8Fn = uint32_t (*)(const uint8_t *p, int64_t K, const Q8Rows &x, int M, float *y, int64_t ldy);

template <int S>
uint32_t rows8_portable(const uint8_t *p, int64_t K, const Q8Rows &x, int M, float *y, int64_t ldy) {
  float acc[kMaxRows][kRows8] = {};
  for (int64_t u = 0; sixteen(S) && u < K / 256; u++, p += rows8_unit(S))
    for (int k = 0; k < 8; k++)
      for (int r = 0; r < kRows8; r++)
        for (int m = 0; m < M; m++) {
          int64_t g = u * 8 + k;
          int dot = 0, mins = 0;
          for (int j = 0; j < 32; j++) {
            int sub = 8 * (2 * k + j / 16) + r;
            dot += (int8_t)p[rows8_scales(S) + sub] * rows8_code<S>(p + rows8_codes(S, k), r, j) * x.q[m][32 * g + j];
            if (S == kQ2K) mins += p[160 + sub] * x.q[m][32 * g + j];
          }
          acc[m][r] += half(p + 2 * r) * x.d[m][g] * (float)dot - (S == kQ2K ? half(p + 16 + 2 * r) * x.d[m][g] * (float)mins : 0.0f);
        }
  constexpr bool kq = S == kQ4K || S == kQ5K;
  for (int64_t u = 0; !sixteen(S) && u < K / block_elems(S); u++, p += rows8_unit(S)) {
    int groups = kq ? 8 : 1;
    for (int k = 0; k < groups; k++) {
      int64_t g = u * groups + k;
      const uint8_t *v = p + (kq ? rows8_codes(S, k) : S == kQ4_1 || S == kQ5_1 ? 32 : 16);
      for (int r = 0; r < kRows8; r++) {
        float a = half(p + 2 * r), b = S == kQ4_1 || S == kQ5_1 ? half(p + 16 + 2 * r) : 0;
        if (kq) a *= (float)p[32 + 8 * k + r], b = -(half(p + 16 + 2 * r) * (float)p[96 + 8 * k + r]);
        for (int m = 0; m < M; m++) {
          int dot = 0;
          for (int j = 0; j < 32; j++) dot += (rows8_code<S>(v, r, j) - (S == kQ4_0 ? 8 : 0)) * x.q[m][32 * g + j];
          acc[m][r] += a * x.d[m][g] * (float)dot + (offset(S) ? b * x.s[m][g] : 0.0f);
        }
      }
    }
  }
  uint32_t bad = 0;
  for (int m = 0; m < M; m++)
    for (int r = 0; r < kRows8; r++) {
      y[m * ldy + r] = acc[m][r];
      if (!std::isfinite(acc[m][r])) bad |= 1u << (8 * m + r);
    }
  return bad;
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

// 32 byte codes q (int8 when Signed, else uint8) as floats c[0..4), the first 16 times a0 minus m0,
// the last 16 times a1 minus m1 (the K-quants whose scales go per 16 elements).
template <bool Signed>
inline void scaled_codes(__m256i q, __m256 a0, __m256 a1, __m256 m0, __m256 m1, __m256 *c) {
  const __m128i h[2] = {_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1)};
  for (int k = 0; k < 4; k++) {
    __m128i b = k % 2 ? _mm_srli_si128(h[k / 2], 8) : h[k / 2];
    __m256 v = _mm256_cvtepi32_ps(Signed ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b));
    c[k] = _mm256_sub_ps(_mm256_mul_ps(k < 2 ? a0 : a1, v), k < 2 ? m0 : m1);
  }
}

// Calls f(g, parity, a, b, c) for each group g of 32 weights of a quantized row (elements [32 g,
// 32 g + 32)): parity kEven or kOdd as g is, c[0..4) its codes as floats, 8 each, and a, b as
// gguf-py forms them (a = d, b = m or 0; Q4_K: a = d sc, b = -(dmin m)), the weights being a c + b.
template <int S, class F>
inline void visit_groups(const uint8_t *p, int64_t K, F &&f) {
  const __m256i low4 = _mm256_set1_epi32(15);
  const __m256 zero = _mm256_setzero_ps();
  __m256 c[4];
  if constexpr (S == kQ2K) { /* the weights themselves (a = 1, b = 0): (d sc) q - dmin m per 16 */
    const __m256i three = _mm256_set1_epi8(3);
    for (int64_t j = 0; j < K / 256; j++, p += 84) {
      float d = half_avx2(p + 80), dmin = half_avx2(p + 82);
      for (int g = 0; g < 8; g++) {
        __m256i q = _mm256_and_si256(_mm256_srli_epi16(_mm256_loadu_si256((const __m256i *)(p + 16 + 32 * (g / 4))), 2 * (g % 4)), three);
        int s0 = p[2 * g], s1 = p[2 * g + 1];
        scaled_codes<false>(q, _mm256_set1_ps(d * (float)(s0 & 15)), _mm256_set1_ps(d * (float)(s1 & 15)),
                            _mm256_set1_ps(dmin * (float)(s0 >> 4)), _mm256_set1_ps(dmin * (float)(s1 >> 4)), c);
        if (g % 2) f(8 * j + g, kOdd{}, 1.0f, 0.0f, c);
        else f(8 * j + g, kEven{}, 1.0f, 0.0f, c);
      }
    }
  } else if constexpr (S == kQ3K) { /* the weights themselves (a = 1, b = 0): two scales per group */
    const __m256i three = _mm256_set1_epi8(3), four = _mm256_set1_epi8(4), one = _mm256_set1_epi8(1);
    for (int64_t j = 0; j < K / 256; j++, p += 110) {
      int sc[16];
      q3k_scales(p, sc);
      float d = half_avx2(p + 108);
      __m256i hm = _mm256_loadu_si256((const __m256i *)p);
      for (int g = 0; g < 8; g++) {
        __m256i q = _mm256_and_si256(_mm256_srli_epi16(_mm256_loadu_si256((const __m256i *)(p + 32 + 32 * (g / 4))), 2 * (g % 4)), three);
        __m256i clear = _mm256_andnot_si256(_mm256_and_si256(_mm256_srli_epi16(hm, g), one), one); /* 1 where bit g is clear */
        __m256i codes = _mm256_sub_epi8(q, _mm256_and_si256(_mm256_sub_epi8(_mm256_setzero_si256(), clear), four));
        scaled_codes<true>(codes, _mm256_set1_ps(d * (float)sc[2 * g]), _mm256_set1_ps(d * (float)sc[2 * g + 1]), zero, zero, c);
        if (g % 2) f(8 * j + g, kOdd{}, 1.0f, 0.0f, c);
        else f(8 * j + g, kEven{}, 1.0f, 0.0f, c);
      }
    }
  } else if constexpr (S == kQ6K) { /* the weights themselves (a = 1, b = 0): two scales per group */
    const __m256i nib = _mm256_set1_epi8(15), two = _mm256_set1_epi8(3), bias = _mm256_set1_epi8(32);
    for (int64_t j = 0; j < K / 256; j++, p += 210) {
      float d = half_avx2(p + 208);
      auto group = [&](int h, int q, auto parity) {
        __m256i lo = _mm256_loadu_si256((const __m256i *)(p + 64 * h + 32 * (q % 2)));
        lo = _mm256_and_si256(q < 2 ? lo : _mm256_srli_epi16(lo, 4), nib);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(_mm256_loadu_si256((const __m256i *)(p + 128 + 32 * h)), 2 * q), two);
        __m256i codes = _mm256_sub_epi8(_mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)), bias);
        scaled_codes<true>(codes, _mm256_set1_ps(d * (float)(int8_t)p[192 + 8 * h + 2 * q]),
                           _mm256_set1_ps(d * (float)(int8_t)p[193 + 8 * h + 2 * q]), zero, zero, c);
        f(8 * j + 4 * h + q, parity, 1.0f, 0.0f, c);
      };
      for (int h = 0; h < 2; h++) {
        group(h, 0, kEven{});
        group(h, 1, kOdd{});
        group(h, 2, kEven{});
        group(h, 3, kOdd{});
      }
    }
  } else if constexpr (S == kQ5K) { /* Q4_K's nibbles and scales, the fifth bit of group g in bit g of qh */
    const __m256i nib = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
    const __m256 unit = _mm256_set1_ps(1.0f);
    auto floats = [&](__m256i q) { scaled_codes<false>(q, unit, unit, zero, zero, c); }; /* 32 codes 0..31 -> c[0..4) */
    for (int64_t j = 0; j < K / 256; j++, p += 176) {
      float a[8], b[8];
      q4k_block_scales(p, a, b);
      __m256i qh = _mm256_loadu_si256((const __m256i *)(p + 16));
      for (int chunk = 0; chunk < 4; chunk++) {
        __m256i bytes = _mm256_loadu_si256((const __m256i *)(p + 48 + 32 * chunk));
        __m256i bit0 = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * chunk), one), bit1 = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * chunk + 1), one);
        floats(_mm256_or_si256(_mm256_and_si256(bytes, nib), _mm256_slli_epi16(bit0, 4)));
        f(8 * j + 2 * chunk, kEven{}, a[2 * chunk], b[2 * chunk], c);
        floats(_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bytes, 4), nib), _mm256_slli_epi16(bit1, 4)));
        f(8 * j + 2 * chunk + 1, kOdd{}, a[2 * chunk + 1], b[2 * chunk + 1], c);
      }
    }
  } else if constexpr (S == kQ4K) {
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
  auto weights = [&](int64_t k) {
    return S == kF16 ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 2 * k))) : _mm256_loadu_ps((const float *)(p + 4 * k));
  };
  int64_t k = 0;
  for (; k + 8 * C <= K; k += 8 * C) /* chain c takes the vectors k + 8 c: a constant index, so acc stays in registers */
    for (int c = 0; c < C; c++) {
      __m256 w = weights(k + 8 * c);
      for (int m = 0; m < M; m++) acc[m][c] = _mm256_fmadd_ps(w, _mm256_loadu_ps(x[m] + k + 8 * c), acc[m][c]);
    }
  for (; k + 8 <= K; k += 8) {
    __m256 w = weights(k);
    for (int m = 0; m < M; m++) acc[m][0] = _mm256_fmadd_ps(w, _mm256_loadu_ps(x[m] + k), acc[m][0]);
  }
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

// quantize_q8_0, 8 values per instruction: the same values (gguf-py's np_roundf is exact in
// float32: sign(t) (floor|t| + floor(2 (|t| - floor|t|)))).
void quantize_q8_0_avx2(const float *x, int64_t K, int8_t *q, float *d, float *s, int32_t *n, float *xd) {
  const __m256 sign = _mm256_set1_ps(-0.0f), two = _mm256_set1_ps(2.0f);
  for (int64_t g = 0; g < K / 32; g++) {
    const float *v = x + 32 * g;
    __m256 a[4], top = _mm256_setzero_ps(), bad = _mm256_setzero_ps();
    for (int j = 0; j < 4; j++) {
      a[j] = _mm256_loadu_ps(v + 8 * j);
      top = _mm256_max_ps(top, _mm256_andnot_ps(sign, a[j]));
      bad = _mm256_or_ps(bad, _mm256_cmp_ps(_mm256_sub_ps(a[j], a[j]), _mm256_setzero_ps(), _CMP_NEQ_UQ)); /* inf, NaN */
    }
    if (_mm256_movemask_ps(bad)) {
      quantize_q8_0(v, 32, q + 32 * g, d + g, s + g, n + g, xd + 32 * g);
      continue;
    }
    __m128 t4 = _mm_max_ps(_mm256_castps256_ps128(top), _mm256_extractf128_ps(top, 1));
    t4 = _mm_max_ps(t4, _mm_movehl_ps(t4, t4));
    float amax = _mm_cvtss_f32(_mm_max_ss(t4, _mm_movehdup_ps(t4)));
    float dd = amax / 127.0f, d16 = _cvtsh_ss(_cvtss_sh(dd, _MM_FROUND_TO_NEAREST_INT)), id = d16 != 0.0f ? 1.0f / dd : 0.0f;
    __m256 vid = _mm256_set1_ps(id), vd = _mm256_set1_ps(d16);
    __m256i qi[4], sum = _mm256_setzero_si256();
    for (int j = 0; j < 4; j++) {
      __m256 t = _mm256_mul_ps(a[j], vid), at = _mm256_andnot_ps(sign, t), f = _mm256_floor_ps(at);
      __m256 r = _mm256_add_ps(f, _mm256_floor_ps(_mm256_mul_ps(_mm256_sub_ps(at, f), two)));
      qi[j] = _mm256_cvtps_epi32(_mm256_or_ps(r, _mm256_and_ps(sign, t)));
      _mm256_storeu_ps(xd + 32 * g + 8 * j, _mm256_mul_ps(vd, _mm256_cvtepi32_ps(qi[j])));
      sum = _mm256_add_epi32(sum, qi[j]);
    }
    /* packs interleave the 128-bit lanes: 32-bit groups q0[0..3] q1[0..3] q2[0..3] q3[0..3] q0[4..7] .. */
    __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(qi[0], qi[1]), _mm256_packs_epi32(qi[2], qi[3]));
    _mm256_storeu_si256((__m256i *)(q + 32 * g), _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
    int total = _mm_cvtsi128_si32(s4);
    d[g] = d16, n[g] = total, s[g] = d16 * (float)total;
  }
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

// ---- rows8 with AVX-512 VNNI (its 256-bit forms) ----
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")

// The codes of one group of the 8 rows (vectors at v) dotted with M rows of x (codes at xq[m],
// this group's): dot[m] lane r = sum_j c[r][j] q_x[j] + init[m]. vpdpbusd multiplies unsigned
// bytes by signed ones: Q8_0's signed codes go in plus 128 (the top bit flipped), -128 sum(q_x) in
// init; Q4_0's -8 as -8 sum(q_x) in init.
template <int S, int M>
inline void rows8_dots(const uint8_t *v, const int8_t *const *xq, const int32_t *init, __m256i *dot) {
  __m256i d2[M][2];
  for (int m = 0; m < M; m++) d2[m][0] = _mm256_set1_epi32(init[m]), d2[m][1] = _mm256_setzero_si256();
  auto x4 = [&](int m, int j) {
    int32_t t;
    std::memcpy(&t, xq[m] + j, 4);
    return _mm256_set1_epi32(t);
  };
  if constexpr (S == kQ8_0 || S == kQ5K || five(S)) { /* a code per byte (Q5_K's and Q5's unsigned) */
    const __m256i flip = _mm256_set1_epi8(S == kQ8_0 ? (char)0x80 : 0);
    for (int i = 0; i < 8; i++) {
      __m256i c = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(v + 32 * i)), flip);
      for (int m = 0; m < M; m++) d2[m][i & 1] = _mm256_dpbusd_epi32(d2[m][i & 1], c, x4(m, 4 * i));
    }
  } else {
    const __m256i low4 = _mm256_set1_epi8(15);
    for (int i = 0; i < 4; i++) {
      __m256i b = _mm256_loadu_si256((const __m256i *)(v + 32 * i));
      __m256i lo = _mm256_and_si256(b, low4), hi = _mm256_and_si256(_mm256_srli_epi16(b, 4), low4);
      for (int m = 0; m < M; m++) {
        d2[m][0] = _mm256_dpbusd_epi32(d2[m][0], lo, x4(m, 4 * i));
        d2[m][1] = _mm256_dpbusd_epi32(d2[m][1], hi, x4(m, 16 + 4 * i));
      }
    }
  }
  for (int m = 0; m < M; m++) dot[m] = _mm256_add_epi32(d2[m][0], d2[m][1]);
}

template <int S, int M>
uint32_t rows8_vnni(const uint8_t *p, int64_t K, const Q8Rows &x, int, float *y, int64_t ldy) {
  __m256 acc[M][2], off[M];
  for (int m = 0; m < M; m++) acc[m][0] = acc[m][1] = off[m] = _mm256_setzero_ps();
  const int8_t *xq[M];
  int32_t init[M];
  __m256i dot[M];
  auto scaled = [&](int64_t g, __m256 a, int par) { /* acc += a d_x dot, the dots of group g */
    for (int m = 0; m < M; m++)
      acc[m][par] = _mm256_fmadd_ps(_mm256_mul_ps(a, _mm256_set1_ps(x.d[m][g])), _mm256_cvtepi32_ps(dot[m]), acc[m][par]);
  };
  if constexpr (sixteen(S)) { /* codes plus bias (unsigned) against x: per sub-block of 16 its dot minus bias sum(q_x) */
    constexpr int bias = rows8_bias(S), so = rows8_scales(S);
    for (int64_t u = 0; u < K / 256; u++, p += rows8_unit(S)) {
      __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)), dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 16)));
#pragma GCC unroll 8
      for (int k = 0; k < 8; k++) { /* unrolled: k & 1 picks an accumulator in registers, not on the stack */
        int64_t g = 8 * u + k;
        const uint8_t *v = p + rows8_codes(S, k);
        __m256i half2[M][2];
        for (int m = 0; m < M; m++)
          half2[m][0] = _mm256_set1_epi32(-bias * x.h[m][g]), half2[m][1] = _mm256_set1_epi32(-bias * (x.n[m][g] - x.h[m][g]));
        for (int i = 0; i < 8; i++) {
          __m256i c = _mm256_loadu_si256((const __m256i *)(v + 32 * i));
          for (int m = 0; m < M; m++) {
            int32_t t;
            std::memcpy(&t, x.q[m] + 32 * g + 4 * i, 4);
            half2[m][i / 4] = _mm256_dpbusd_epi32(half2[m][i / 4], c, _mm256_set1_epi32(t));
          }
        }
        __m256i sa = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p + so + 16 * k))),
                sb = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p + so + 8 + 16 * k)));
        for (int m = 0; m < M; m++) {
          __m256i tot = _mm256_add_epi32(_mm256_mullo_epi32(sa, half2[m][0]), _mm256_mullo_epi32(sb, half2[m][1]));
          __m256 dx = _mm256_set1_ps(x.d[m][g]);
          acc[m][k & 1] = _mm256_fmadd_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(tot), acc[m][k & 1]);
          if constexpr (S == kQ2K) { /* - dmin d_x (mn_a sum_a(q_x) + mn_b sum_b(q_x)) */
            __m256i ma = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p + 160 + 16 * k))),
                    mb = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p + 168 + 16 * k)));
            __m256i mins = _mm256_add_epi32(_mm256_mullo_epi32(ma, _mm256_set1_epi32(x.h[m][g])),
                                            _mm256_mullo_epi32(mb, _mm256_set1_epi32(x.n[m][g] - x.h[m][g])));
            off[m] = _mm256_fnmadd_ps(_mm256_mul_ps(dmin, dx), _mm256_cvtepi32_ps(mins), off[m]);
          }
        }
      }
    }
  } else if constexpr (S == kQ4K || S == kQ5K) {
    for (int64_t u = 0; u < K / 256; u++, p += rows8_unit(S)) {
      __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)), mins[M];
      for (int m = 0; m < M; m++) mins[m] = _mm256_setzero_ps(), init[m] = 0;
#pragma GCC unroll 8
      for (int k = 0; k < 8; k++) {
        int64_t g = 8 * u + k;
        for (int m = 0; m < M; m++) xq[m] = x.q[m] + 32 * g;
        rows8_dots<S, M>(p + rows8_codes(S, k), xq, init, dot);
        __m256 sc = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p + 32 + 8 * k))));
        __m256 mn = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p + 96 + 8 * k))));
        scaled(g, _mm256_mul_ps(d, sc), k & 1);
        for (int m = 0; m < M; m++) mins[m] = _mm256_fmadd_ps(mn, _mm256_set1_ps(x.s[m][g]), mins[m]);
      }
      __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 16)));
      for (int m = 0; m < M; m++) off[m] = _mm256_fnmadd_ps(dmin, mins[m], off[m]);
    }
  } else {
    auto group = [&](int64_t g, auto parity) { /* parity a constant: the accumulators stay in registers */
      for (int m = 0; m < M; m++) {
        xq[m] = x.q[m] + 32 * g;
        init[m] = S == kQ4_0 ? -8 * x.n[m][g] : S == kQ8_0 ? -128 * x.n[m][g] : S == kQ5_0 ? -16 * x.n[m][g] : 0;
      }
      rows8_dots<S, M>(p + (S == kQ4_1 || S == kQ5_1 ? 32 : 16), xq, init, dot);
      scaled(g, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)), decltype(parity)::value);
      if (S == kQ4_1 || S == kQ5_1) {
        __m256 mv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 16)));
        for (int m = 0; m < M; m++) off[m] = _mm256_fmadd_ps(mv, _mm256_set1_ps(x.s[m][g]), off[m]);
      }
      p += rows8_unit(S);
    };
    int64_t g = 0, G = K / 32;
    for (; g + 1 < G; g += 2) {
      group(g, kEven{});
      group(g + 1, kOdd{});
    }
    if (g < G) group(g, kEven{});
  }
  uint32_t bad = 0;
  for (int m = 0; m < M; m++) {
    __m256 v = _mm256_add_ps(_mm256_add_ps(acc[m][0], acc[m][1]), off[m]);
    _mm256_storeu_ps(y + m * ldy, v);
    bad |= (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_sub_ps(v, v), _mm256_setzero_ps(), _CMP_NEQ_UQ)) << (8 * m); /* inf, NaN */
  }
  return bad;
}

#pragma GCC pop_options
#endif

// The kernels for `scheme`: a row times 1..4 rows of x, and a row's weights.
using DequantFn = void (*)(const uint8_t *w, int64_t K, float *out);
struct Kernels {
  RowFn row[kMaxRows];
  DequantFn dequant;
  Q8RowFn row_q8[kMaxRows];  // quantized schemes only
  Rows8Fn rows8[kMaxRows];   // quantized schemes, where the CPU has a rows8 kernel (else NULL)
  void (*pack)(const uint8_t *w, int64_t rb, int64_t K, uint8_t *out);  // has_rows8 schemes: rows8_pack
};

template <int S>
Kernels kernels_of() {
  Kernels k = {{row_portable<S>, row_portable<S>, row_portable<S>, row_portable<S>}, dequant_portable<S>, {}, {}, nullptr};
  if constexpr (has_rows8(S)) k.pack = rows8_pack<S>;
#ifdef RLX_MATVEC_AVX2
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  static const bool vnni = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni");
  if (avx2) {
    if constexpr (!quantized(S)) {
      const RowFn rows[kMaxRows] = {row_avx2<S, 1>, row_avx2<S, 2>, row_avx2<S, 3>, row_avx2<S, 4>};
      std::copy(rows, rows + kMaxRows, k.row), k.dequant = dequant_avx2<S>;
    } else if constexpr (!five(S)) { /* Q5_0 and Q5_1 keep the portable rows */
      const RowFn rows[kMaxRows] = {row_groups_avx2<S, 1>, row_groups_avx2<S, 2>, row_groups_avx2<S, 3>, row_groups_avx2<S, 4>};
      std::copy(rows, rows + kMaxRows, k.row), k.dequant = dequant_avx2<S>;
      if constexpr (integer_dots(S)) {
        const Q8RowFn q8[kMaxRows] = {row_q8_avx2<S, 1>, row_q8_avx2<S, 2>, row_q8_avx2<S, 3>, row_q8_avx2<S, 4>};
        std::copy(q8, q8 + kMaxRows, k.row_q8);
      }
    }
    if constexpr (has_rows8(S)) {
      const Rows8Fn r8[kMaxRows] = {rows8_vnni<S, 1>, rows8_vnni<S, 2>, rows8_vnni<S, 3>, rows8_vnni<S, 4>};
      if (vnni) std::copy(r8, r8 + kMaxRows, k.rows8);
    }
    return k;
  }
#endif
  if constexpr (integer_dots(S)) std::fill(k.row_q8, k.row_q8 + kMaxRows, row_q8_portable<S>);
  if constexpr (has_rows8(S)) std::fill(k.rows8, k.rows8 + kMaxRows, rows8_portable<S>);
  return k;
}

Kernels kernels(int scheme) {
  switch (scheme) {
    case kQ8_0: return kernels_of<kQ8_0>();
    case kQ4K: return kernels_of<kQ4K>();
    case kQ4_0: return kernels_of<kQ4_0>();
    case kQ4_1: return kernels_of<kQ4_1>();
    case kQ6K: return kernels_of<kQ6K>();
    case kQ5K: return kernels_of<kQ5K>();
    case kQ5_0: return kernels_of<kQ5_0>();
    case kQ5_1: return kernels_of<kQ5_1>();
    case kQ3K: return kernels_of<kQ3K>();
    case kQ2K: return kernels_of<kQ2K>();
    case kF32: return kernels_of<kF32>();
    default: return kernels_of<kF16>();
  }
}

// quantize_q8_0 with AVX2 where the CPU has it.
using QuantizeFn = void (*)(const float *x, int64_t K, int8_t *q, float *d, float *s, int32_t *n, float *xd);
QuantizeFn quantizer() {
#ifdef RLX_MATVEC_AVX2
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  if (avx2) return quantize_q8_0_avx2;
#endif
  return quantize_q8_0;
}

// Rows of W dequantized per tile of a product with more than kMaxRows rows of x.
constexpr int64_t kTileRows = 64;

class MatVec : public CpuKernel {
 public:
  MatVec(mx::Stream s, int scheme, bool q8, int swiglu = 0, bool residual = false)
      : CpuKernel(s), scheme_(scheme), q8_(q8), swiglu_(swiglu), residual_(residual) {}
  // in: x [.., K] float32 (M rows) and W (float32 or float16 [N, K], or packed uint8 [N, row
  // bytes]), any strides (see dense), and with q8 optionally W's rows8 form (uint8 [N / 8, K /
  // block elems * rows8_unit]); out [.., N]. q8: x is first quantized to Q8_0 blocks
  // (quantize_q8_0), then the codes meet W's in integers, kMaxRows rows of x at a time: for any M
  // through the rows8 form where given and the CPU has its kernel (each block of 8 rows of W read
  // once, for all of x: a prefill), else for M <= kMaxRows through the GGUF rows; a row of W whose
  // result is not finite is done again from the dequantized x the float way. Past kMaxRows rows
  // without rows8, tiles of W are dequantized and multiplied by sgemm. swiglu (1: gate first, 2:
  // up first): in[0] is FusedSwiGLU's operand [.., 2 K] and x its result, formed first by the same
  // rows (swiglu_rows). residual: a last input, float32 of out's shape (any strides), is added to
  // the products, r + y, once they are formed.
  void eval_cpu(const std::vector<mx::array> &in, mx::array &out) override {
    auto &enc = begin(in, out);
    int64_t K = in[0].shape().back() / (swiglu_ ? 2 : 1), M = rows_of(in[0]), N = in[1].shape()[0], G = K / 32;
    int64_t rb = (int64_t)in[1].itemsize() * in[1].shape()[1];
    size_t n_w = in.size() - residual_; /* x, W and the rows8 form if given */
    Strided xa = strided(in[0]), wa = strided(in[1]), w8a = strided(n_w > 2 ? in[2] : in[1]), ra = residual_ ? strided(in.back()) : Strided{};
    float *y = out.data<float>();
    Kernels kern = kernels(scheme_);
    bool q8 = q8_, sums = offset(scheme_), rows8 = q8 && n_w > 2 && kern.rows8[0], ints = q8 && kern.row_q8[0], res = residual_;
    int scheme = scheme_, swiglu = swiglu_;
    enc.dispatch([=]() {
      products(xa, wa, w8a, M, N, K, G, rb, y, kern, q8, sums, rows8, ints, scheme, swiglu);
      if (!res) return;
      thread_local std::vector<uint8_t> rbuf;
      const float *r = static_cast<const float *>(dense(ra, rbuf));
      for (int64_t i = 0; i < M * N; i++) y[i] = r[i] + y[i];
    });
  }
  const char *name() const override { return "RlxMatVec"; }
  bool is_equivalent(const mx::Primitive &other) const override {
    auto &o = static_cast<const MatVec &>(other);
    return scheme_ == o.scheme_ && q8_ == o.q8_ && swiglu_ == o.swiglu_ && residual_ == o.residual_;
  }
  std::vector<mx::Shape> output_shapes(const std::vector<mx::array> &in) override {
    mx::Shape shape = in[0].shape();
    shape.back() = in[1].shape()[0];
    return {shape};
  }
  // The same product with r added (a new primitive over y's inputs and r), or null when y is not a
  // product of this kernel without one.
  static std::optional<mx::array> with_residual(const mx::array &y, const mx::array &r) {
    if (!y.has_primitive()) return std::nullopt;
    auto *p = dynamic_cast<MatVec *>(&y.primitive());
    if (!p || p->residual_ || r.dtype() != mx::float32 || r.shape() != y.shape()) return std::nullopt;
    std::vector<mx::array> in = y.inputs();
    in.push_back(r);
    return mx::array(y.shape(), mx::float32, std::make_shared<MatVec>(p->stream(), p->scheme_, p->q8_, p->swiglu_, true), std::move(in));
  }

 private:
  static void products(const Strided &xa, const Strided &wa, const Strided &w8a, int64_t M, int64_t N, int64_t K, int64_t G,
                       int64_t rb, float *y, const Kernels &kern, bool q8, bool sums, bool rows8, bool ints, int scheme, int swiglu) {
    thread_local std::vector<uint8_t> xbuf, wbuf, w8buf;
    thread_local std::vector<int8_t> qx;
    thread_local std::vector<float> xd, dx, sx, sum;
    thread_local std::vector<int32_t> nx;
    const float *x = static_cast<const float *>(dense(xa, xbuf));
    const uint8_t *w = static_cast<const uint8_t *>(dense(wa, wbuf));
    thread_local std::vector<float> act;
    if (swiglu) { /* x = FusedSwiGLU of the operand, its rows split as that kernel splits them */
      if ((int64_t)act.size() < M * K) act.resize(M * K);
      float *a = act.data();
      parallel_for(M, std::max<int64_t>(1, 16384 / std::max<int64_t>(K, 1)),
                   [&](int64_t r0, int64_t r1) { swiglu_rows(x, r0, r1, K, swiglu == 1, a); });
      x = a;
    }
    // this thread's buffers (the pool's threads have their own thread_local ones)
    if (q8 && (int64_t)xd.size() < M * K) qx.resize(M * K), xd.resize(M * K);
    if (q8 && (int64_t)dx.size() < M * G) dx.resize(M * G), sx.resize(M * G), nx.resize(M * G);
    int8_t *cq = qx.data();
    float *cd = dx.data(), *cs = sx.data(), *cxd = xd.data();
    int32_t *cn = nx.data(), *ch = nullptr;
    if (q8) { /* from here on x is the dequantized x */
      QuantizeFn quantize = quantizer();
      parallel_for(M, std::max<int64_t>(1, 8192 / K), [&](int64_t m0, int64_t m1) {
        for (int64_t m = m0; m < m1; m++) quantize(x + m * K, K, cq + m * K, cd + m * G, cs + m * G, cn + m * G, cxd + m * K);
      });
      x = cxd;
      thread_local std::vector<int32_t> hx;
      if (rows8 && sixteen(scheme)) { /* the sums of each block's first 16 codes (rows8_vnni of Q6_K, Q3_K, Q2_K) */
        if ((int64_t)hx.size() < M * G) hx.resize(M * G);
        ch = hx.data();
        for (int64_t i = 0; i < M * G; i++) {
          int32_t t = 0;
          for (int j = 0; j < 16; j++) t += cq[32 * i + j];
          ch[i] = t;
        }
      }
    }
    if (M > kMaxRows && !rows8) { /* tiles of W dequantized once, each multiplied by all of x */
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
    // the sums of rows [m0, m0 + mm) of x per group of 32 (the float row kernels') into s
    auto group_sums = [&](int64_t m0, int64_t mm, float *s) {
      for (int64_t i = 0; i < mm * G; i++) {
        float t = 0;
        for (int j = 0; j < 32; j++) t += x[m0 * K + 32 * i + j];
        s[i] = t;
      }
    };
    if (sums && !q8) { /* float rows (M <= kMaxRows): every row of W needs them */
      if ((int64_t)sum.size() < M * G) sum.resize(M * G);
      group_sums(0, M, sum.data());
    }
    const float *csum = sum.data();
    // rows [m0, m0 + mm) of x (mm <= kMaxRows): their Q8_0 blocks, float rows and sums
    struct Chunk {
      int64_t m0;
      int mm;
      Q8Rows q;
      const float *xr[kMaxRows], *xs[kMaxRows];
    };
    auto chunk = [&](int64_t m0) {
      Chunk c = {m0, (int)std::min<int64_t>(kMaxRows, M - m0), {}, {}, {}};
      for (int m = 0; m < c.mm; m++) {
        int64_t r = m0 + m;
        c.xr[m] = x + r * K, c.xs[m] = sums && !q8 ? csum + r * G : nullptr;
        if (q8) c.q.q[m] = cq + r * K, c.q.d[m] = cd + r * G, c.q.s[m] = cs + r * G, c.q.n[m] = cn + r * G, c.q.h[m] = ch + r * G;
      }
      return c;
    };
    thread_local std::vector<Chunk> chunks; /* made once per product: zeroing one per block of W was 4% of a decode step */
    chunks.resize((M + kMaxRows - 1) / kMaxRows);
    for (size_t i = 0; i < chunks.size(); i++) chunks[i] = chunk((int64_t)i * kMaxRows);
    const Chunk *xc = chunks.data();
    // row n of W for chunk c the float way, when the integer results are not finite (force: always)
    auto floats = [&](int64_t n, const Chunk &c, bool force) {
      bool finite = !force;
      for (int m = 0; m < c.mm; m++) finite = finite && std::isfinite(y[(c.m0 + m) * N + n]);
      if (finite) return;
      float o[kMaxRows];
      const float *xs[kMaxRows];
      std::copy(c.xs, c.xs + kMaxRows, xs);
      if (sums && q8) { /* a rare row (non-finite scales or x): its chunk's sums made here */
        thread_local std::vector<float> fs;
        if ((int64_t)fs.size() < c.mm * G) fs.resize(c.mm * G);
        group_sums(c.m0, c.mm, fs.data());
        for (int m = 0; m < c.mm; m++) xs[m] = fs.data() + m * G;
      }
      kern.row[c.mm - 1](w + n * rb, K, c.xr, xs, c.mm, o);
      for (int m = 0; m < c.mm; m++) y[(c.m0 + m) * N + n] = o[m];
    };
    int64_t n8 = 0; /* rows done in blocks of 8 */
    if (rows8) {
      n8 = N / kRows8 * kRows8;
      const uint8_t *w8 = static_cast<const uint8_t *>(dense(w8a, w8buf));
      int64_t ub = K / block_elems(scheme) * rows8_unit(scheme);
      parallel_for(N / kRows8, M > kMaxRows ? 1 : 2, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; b++)
          for (int64_t m0 = 0; m0 < M; m0 += kMaxRows) {
            const Chunk &c = xc[m0 / kMaxRows];
            uint32_t bad = kern.rows8[c.mm - 1](w8 + b * ub, K, c.q, c.mm, y + m0 * N + b * kRows8, N);
            for (int r = 0; bad && r < kRows8; r++)
              if (bad & (0x01010101u << r)) floats(b * kRows8 + r, c, true);
          }
      });
    }
    parallel_for(N - n8, M > kMaxRows ? 1 : 16, [&](int64_t n0, int64_t n1) {
      float o[kMaxRows];
      for (int64_t m0 = 0; m0 < M; m0 += kMaxRows) {
        const Chunk &c = xc[m0 / kMaxRows];
        for (int64_t n = n8 + n0; n < n8 + n1; n++) {
          if (!ints) { /* float x, or the rounded x for a scheme without integer dots */
            floats(n, c, true);
            continue;
          }
          kern.row_q8[c.mm - 1](w + n * rb, K, c.q, c.mm, o);
          for (int m = 0; m < c.mm; m++) y[(m0 + m) * N + n] = o[m];
          floats(n, c, false);
        }
      }
    });
  }

  int scheme_;  // Scheme
  bool q8_;
  int swiglu_;  // 0, or the operand is FusedSwiGLU's: 1 gate first, 2 up first
  bool residual_;
};

// The packed rows of a quantized scheme dequantized to float32 (rows split over the pool).
class Dequant : public CpuKernel {
 public:
  Dequant(mx::Stream s, int scheme) : CpuKernel(s), scheme_(scheme) {}
  void eval_cpu(const std::vector<mx::array> &in, mx::array &out) override {
    auto &enc = begin(in, out);
    int64_t rb = in[0].shape().back(), K = out.shape().back(), rows = K ? (int64_t)out.size() / K : 0;
    Strided qa = strided(in[0]);
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

// W's packed GGUF rows [N, row bytes] in their rows8 form [N / 8, K / block elems * rows8_unit].
class Rows8Pack : public CpuKernel {
 public:
  Rows8Pack(mx::Stream s, int scheme) : CpuKernel(s), scheme_(scheme) {}
  void eval_cpu(const std::vector<mx::array> &in, mx::array &out) override {
    auto &enc = begin(in, out);
    int64_t rb = in[0].shape()[1], K = rb / block_bytes(scheme_) * block_elems(scheme_), ub = out.shape()[1];
    Strided wa = strided(in[0]);
    uint8_t *y = out.data<uint8_t>();
    int64_t blocks = out.shape()[0];
    size_t nbytes = out.nbytes();
    advise_huge_pages(y, out.nbytes()); /* before any of it is written */
    void (*pack)(const uint8_t *, int64_t, int64_t, uint8_t *) = kernels(scheme_).pack;
    enc.dispatch([=]() {
      thread_local std::vector<uint8_t> buf;
      const uint8_t *w = static_cast<const uint8_t *>(dense(wa, buf));
      parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; b++) pack(w + b * kRows8 * rb, rb, K, y + b * ub);
      });
      collapse_huge_pages(y, nbytes); /* read at every decode step */
    });
  }
  const char *name() const override { return "RlxRows8Pack"; }
  bool is_equivalent(const mx::Primitive &other) const override { return scheme_ == static_cast<const Rows8Pack &>(other).scheme_; }
  std::vector<mx::Shape> output_shapes(const std::vector<mx::array> &in) override {
    int64_t rb = in[0].shape()[1];
    return {{(int)(in[0].shape()[0] / kRows8), (int)(rb / block_bytes(scheme_) * rows8_unit(scheme_))}};
  }

 private:
  int scheme_;  // Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 or Q2_K..Q6_K
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
            bool known = scheme >= kQ8_0 && scheme <= kLastScheme && quantized(scheme);
            if (!known || qa.ndim() < 1 || qa.dtype() != mx::uint8 || qa.shape().back() % block_bytes(scheme))
              throw std::invalid_argument("dequant takes packed uint8 [.., K / QK * block bytes] of a quantized scheme");
            auto prim = std::make_shared<Dequant>(c->stream, scheme);
            std::vector<mx::array> in = {qa};
            mx::Shape shape = prim->output_shapes(in)[0];
            return mx::array(std::move(shape), mx::float32, std::move(prim), std::move(in));
          }()));
}

extern "C" bool rlx_mx_matvec_rows8_able(int scheme) {
  using namespace rlx_kernels;
  return scheme >= kQ8_0 && scheme <= kLastScheme && has_rows8(scheme) && kernels(scheme).rows8[0];
}

extern "C" rlx_mx_arr *rlx_mx_matvec_rows8(rlx_mx *c, rlx_mx_arr *w, int scheme) {
  SHIM_OP(c, w, ([&] {
            using namespace rlx_kernels;
            mx::array wa = A(w);
            if (!rlx_mx_matvec_rows8_able(scheme) || c->stream.device == mx::Device::gpu || wa.ndim() != 2 ||
                wa.dtype() != mx::uint8 || wa.shape()[0] < kRows8 || wa.shape()[1] % block_bytes(scheme))
              throw std::invalid_argument("matvec_rows8 takes the packed uint8 rows [N >= 8, K / QK * block bytes] of a scheme "
                                          "with a rows8 kernel on this CPU, on a CPU stream");
            auto prim = std::make_shared<Rows8Pack>(c->stream, scheme);
            std::vector<mx::array> in = {wa};
            mx::Shape shape = prim->output_shapes(in)[0];
            return mx::array(std::move(shape), mx::uint8, std::move(prim), std::move(in));
          }()));
}

// A float16 product recorded in `fusible` (kind kProduct: {x, W[, norm gain]}) made on GPU stream
// s, plus residual r (NULL: none).
static mx::array product_gpu(const rlx_mx::Fusible &f, mx::Stream s, const mx::array *r) {
  return rlx_kernels::matvec_f16_cuda(f.in[0], f.in[1], s, f.swiglu, r, f.in.size() > 2 ? &f.in[2] : nullptr, f.eps);
}

extern "C" rlx_mx_arr *rlx_mx_matvec_add(rlx_mx *c, rlx_mx_arr *y, rlx_mx_arr *r) {
  if (!c || c->err || !y || !r) return nullptr;
  try {
    if (c->stream.device == mx::Device::gpu) { /* a float16 product recorded by rlx_mx_matvec, made again with r */
      auto it = c->fusible.find(y);
      const mx::array &ra = A(r);
      if (it == c->fusible.end() || it->second.kind != rlx_mx::Fusible::kProduct || ra.dtype() != mx::float32 ||
          ra.shape() != A(y).shape())
        return nullptr;
      return c->put(product_gpu(it->second, c->stream, &ra));
    }
    std::optional<mx::array> s = rlx_kernels::MatVec::with_residual(A(y), A(r));
    return s ? c->put(*s) : nullptr;
  } catch (...) {
    c->fail_current();
    return nullptr;
  }
}

// rlx_mx_matvec on a GPU: float16 W; x a SwiGLU or RMSNorm read only here (x_once) is formed in
// the product.
static rlx_mx_arr *matvec_gpu(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *w, rlx_mx_arr *w8, int scheme, bool q8, bool x_once) {
  SHIM_OP_HANDLE(c, x && w, ([&] {
                   using F = rlx_mx::Fusible;
                   if (scheme != rlx_kernels::kF16 || q8 || w8) throw std::invalid_argument("matvec on a GPU takes a float16 W");
                   auto it = x_once ? c->fusible.find(x) : c->fusible.end();
                   const F *src = it != c->fusible.end() && it->second.kind != F::kProduct ? &it->second : nullptr;
                   F f{F::kProduct, {src ? src->in[0] : A(x), A(w)}, src && src->kind == F::kSwiGLU ? src->swiglu : 0, src ? src->eps : 0.f};
                   if (src && src->kind == F::kRmsNorm) f.in.push_back(src->in[1]);
                   rlx_mx_arr *h = c->put(product_gpu(f, c->stream, nullptr));
                   c->fusible[h] = std::move(f);
                   return h;
                 }()));
}

extern "C" rlx_mx_arr *rlx_mx_matvec(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *w, rlx_mx_arr *w8, int scheme, bool q8, bool x_once) {
  if (c && c->stream.device == mx::Device::gpu) return matvec_gpu(c, x, w, w8, scheme, q8, x_once);
  SHIM_OP(c, x && w, ([&] {
            using namespace rlx_kernels;
            mx::array xa = A(x), wa = A(w);
            bool known = scheme >= kQ8_0 && scheme <= kLastScheme;
            int64_t K = xa.ndim() >= 1 ? xa.shape().back() : 0, qk = known ? block_elems(scheme) : 1;
            int64_t cols = quantized(scheme) ? K / qk * block_bytes(scheme) : K;
            mx::Dtype wdt = scheme == kF32 ? mx::float32 : scheme == kF16 ? mx::float16 : mx::uint8;
            if (!known || (q8 && !quantized(scheme)) || xa.ndim() < 1 || wa.ndim() != 2 || rows_of(xa) < 1 || K % qk ||
                wa.shape()[1] != cols || wa.dtype() != wdt)
              throw std::invalid_argument("matvec takes x [.., K] and W float32 or float16 [N, K] or packed uint8 [N, K / QK * block bytes]");
            mx::array src = xa;
            bool gate_first = true, fused = x_once && swiglu_of(xa, &src, &gate_first) && src.dtype() == mx::float32;
            std::vector<mx::array> in = {fused ? src : mx::astype(xa, mx::float32, c->stream), wa};
            if (w8) {
              mx::array w8a = A(w8);
              int64_t ub = K / qk * (quantized(scheme) ? rows8_unit(scheme) : 0);
              if (!q8 || !rlx_mx_matvec_rows8_able(scheme) || w8a.dtype() != mx::uint8 || w8a.ndim() != 2 ||
                  w8a.shape()[0] != wa.shape()[0] / kRows8 || w8a.shape()[1] != ub)
                throw std::invalid_argument("matvec's rows8 W is rlx_mx_matvec_rows8 of W, with q8");
              in.push_back(w8a);
            }
            auto prim = std::make_shared<MatVec>(c->stream, scheme, q8, fused ? (gate_first ? 1 : 2) : 0);
            mx::Shape shape = prim->output_shapes(in)[0];
            return mx::array(std::move(shape), mx::float32, std::move(prim), std::move(in));
          }()));
}
