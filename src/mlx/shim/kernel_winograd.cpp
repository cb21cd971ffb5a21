// kernel_winograd.cpp: 3x3 convolutions with stride 1 and no dilation by Winograd's minimal
// filtering F(2x2, 3x3) (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks",
// CVPR 2016, section 4.1): each 2x2 block of outputs ("tile") of an output channel is
//   Y = A^T [ sum_c (G g_c G^T) . (B^T d_c B) ] A
// with d_c the tile's 4x4 input window of channel c, g_c the 3x3 filter, . the element-wise
// product, and
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],  G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1],
//   A^T = [1 1 1 0; 0 1 -1 -1].
// The sum over channels is 16 matrix products (one per element xi of the 4x4 transforms),
// M_xi[Co, T] = U_xi[Co, C] V_xi[C, T] over the T tiles of an image: 16 multiply-adds per tile
// and channel pair where the direct form takes 36 (2.25x fewer), for the price of the transforms
// (linear in C T and Co T, not in their product). The products run on rlx's GEMM reading V's rows
// in place (kernels.h gemm_block_offsets; V [16][C][tiles of a block] as the input transform
// writes it) and U in blocks of the micro-kernel's rows, each block's columns one after another
// (rlx_mx_winograd_weights): read in place as [Co, C], a block's 8 rows were 8 streams 4 bytes a
// step apart, which bound the products on small maps (ResNet-50's 7 x 7: 16 tiles, one panel, U
// read once): 512 -> 512 channels at 7 x 7, one thread, 2.7-3.3 -> 2.1-2.2 ms (ONNX Runtime 2.0).
// ONNX Runtime's CPU convolutions (MLAS) compute the direct form; the extra rounding of the
// transforms (their coefficients are 0, +-1 and +-1/2: exact) is a few ulps of the sums.
//
// The transforms run by channel over a block of tile rows: each input row is split once into its
// even and odd columns, then for tile row ty the four rows 2 ty - ph + i are combined by B^T and
// B's columns give the 16 values of 16 tiles at a time (vectors over tx). The output transform
// reads M the same way, tx contiguous.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "mlx/ops.h"
#include "mlx/shim/kernels.h"

namespace rlx_kernels {

bool winograd_applies(int64_t C, int64_t Co, int64_t group, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
                      int64_t OH, int64_t OW) {
  const int64_t st[2] = {sh, sw}, dil[2] = {dh, dw};
  // tiny maps: a partial panel; rows of more than 2^16 outputs: a block of one tile row would
  // outgrow the buffers' int32 offsets
  return rlx_mx_winograd_fits(C, Co, group, kh, kw, st, dil) && OH >= 4 && OW >= 4 && OW <= ((int64_t)1 << 16);
}

namespace {

// A convolution's tiles are done in blocks of RB tile rows (RB TW tiles), or where an image is one
// block, of several whole images side by side (winograd_conv's NI); the row stride Tp of V and M
// holds a block's tiles rounded up to 16, and 16 more that the transforms' vectors may run past
// the block's last tile into; V and M of a block within ~4 MB. V's 16 matrices are Vx = C Tp + 16
// floats apart, M's Mx = Co Tp + 16: the transforms read or write a tile's 16 values at one offset
// in each, and C Tp floats apart (a multiple of 4 KB for YOLOv8n's 64 channels x 416) the 16
// streams fell into one L1 set and each load waited on the stores to the same 4 KB offset (4K
// aliasing): YOLOv8n's input transforms took 3.9 ms a run on one thread, 1.7 with the 16 floats.
struct Plan {
  int64_t C, H, W, Co, ph, pw, OH, OW, TH, TW, RB, Tp, Vx, Mx;
};

// The transforms run on the CPU's vectors (kernels.h with_lanes) over tx: 16 tiles at a time with
// AVX-512, a row's last 1-8 tiles on 8 (rows of 20 and 5 tiles took 32 and 16 lanes); 8 with AVX2.
// Rows of tiles are short (5-40 tiles in YOLOv8n and ResNet-50): a vector may run past a row's
// last tile. Past a row of V that is the next row's first tiles, written over when that row is
// done (the same thread does a channel's rows in order), or the block's padding; past a row of
// the output it is a buffer's, copied out by its width.
// (statement expressions, not functions: a function taking or returning a 64-byte vector has an
// ABI that depends on the target it is compiled for)
#define loadv(V, p) ({ V v_; std::memcpy(&v_, (p), sizeof v_); v_; })
#define store(p, v) ({ auto w_ = (v); std::memcpy((p), &w_, sizeof w_); })
inline int64_t up16(int64_t n) { return (n + 15) / 16 * 16; }

// step((V *)nullptr, t) for the tiles t .. t + lanes<V> of a row of TW: V = VW, a row's last 1-8
// tiles on 8.
template <class VW, class F>
__attribute__((always_inline)) inline void for_tiles(int64_t TW, F &&step) {
  int64_t t = 0;
  for (; t + 8 < TW; t += lanes<VW>) step((VW *)nullptr, t);
  if (t < TW) step((v8 *)nullptr, t);
}

// V's rows for channel c and tile rows ty0 .. ty0 + rb - 1 of image x: each input row
// (zero outside x) split once into its even and odd columns (E, O: padded column j holds input
// column j - pw), then per tile row ty the rows 2 ty - ph + i combined by B^T and the columns by B:
// tile tx reads columns 2 tx .. 2 tx + 3 = E[tx], O[tx], E[tx + 1], O[tx + 1];
// V[4 k + j][c][(ty - ty0) TW + tx]. The block's columns past its tiles left zero.
template <class VW>
__attribute__((always_inline)) inline void input_rows(const Plan &p, const float *x, int64_t c, int64_t ty0, int64_t rb, int64_t Tq,
                                                      float *V) {
  const int64_t TW = p.TW, half = up16(TW + 1), S = half + 16, rows = 2 * rb + 2;
  thread_local std::vector<float> padded, eo;
  if ((int64_t)padded.size() < rows * 2 * half) padded.resize(rows * 2 * half);
  if ((int64_t)eo.size() < 2 * rows * S) eo.resize(2 * rows * S);
  const int64_t j0 = std::max<int64_t>(0, p.pw), j1 = std::min(2 * half, p.W + p.pw);
  // all rows padded first, then split: a split's 64-byte loads right after the copy's stores to
  // the same lines could not take their data from the stores (a store-forwarding stall per load:
  // 20% of this function's time, perf)
  for (int64_t l = 0; l < rows; l++) {
    int64_t iy = 2 * ty0 - p.ph + l;
    float *r = padded.data() + l * 2 * half;
    if (iy < 0 || iy >= p.H) continue;
    std::fill(r, r + j0, 0.f);
    if (j1 > j0) std::memcpy(r + j0, x + (c * p.H + iy) * p.W + (j0 - p.pw), (j1 - j0) * sizeof(float));
    std::fill(r + std::max(j0, j1), r + 2 * half, 0.f);
  }
  for (int64_t l = 0; l < rows; l++) {
    float *E = eo.data() + 2 * l * S, *O = E + S;
    int64_t iy = 2 * ty0 - p.ph + l;
    if (iy < 0 || iy >= p.H) {
      std::fill(E, E + 2 * S, 0.f);
      continue;
    }
    const float *r = padded.data() + l * 2 * half;
    for (int64_t t = 0; t < half; t += lanes<VW>) {
      VW ev, od;
      deinterleave(r + 2 * t, &ev, &od);
      store(E + t, ev);
      store(O + t, od);
    }
  }
  const int64_t CT = p.Vx;
  float *vc = V + c * p.Tp;
  for (int64_t r = 0; r < rb; r++) {
    const float *e[4], *o[4];
    for (int i = 0; i < 4; i++) e[i] = eo.data() + 2 * (2 * r + i) * S, o[i] = e[i] + S;
    // tiles t .. t + lanes<V> (for_tiles)
    auto step = [&](auto *lanes, int64_t t) __attribute__((always_inline)) {
      using V = std::remove_pointer_t<decltype(lanes)>;
      // B^T over the rows at columns t and t + 1 (tile tx's left and right halves)
      V E0[4], E1[4], O0[4], O1[4];
      for (int h = 0; h < 2; h++) {
        V a = loadv(V, e[0] + t + h), b = loadv(V, e[1] + t + h), cc = loadv(V, e[2] + t + h), dd = loadv(V, e[3] + t + h);
        V *dst = h ? E1 : E0;
        dst[0] = a - cc, dst[1] = b + cc, dst[2] = cc - b, dst[3] = b - dd;
        a = loadv(V, o[0] + t + h), b = loadv(V, o[1] + t + h), cc = loadv(V, o[2] + t + h), dd = loadv(V, o[3] + t + h);
        dst = h ? O1 : O0;
        dst[0] = a - cc, dst[1] = b + cc, dst[2] = cc - b, dst[3] = b - dd;
      }
      float *v = vc + r * TW + t;
      for (int k = 0; k < 4; k++) {
        store(v + (4 * k) * CT, E0[k] - E1[k]);
        store(v + (4 * k + 1) * CT, O0[k] + E1[k]);
        store(v + (4 * k + 2) * CT, E1[k] - O0[k]);
        store(v + (4 * k + 3) * CT, O0[k] - O1[k]);
      }
    };
    for_tiles<VW>(TW, step);
  }
  for (int xi = 0; xi < 16; xi++) std::fill(vc + xi * CT + rb * TW, vc + xi * CT + Tq, 0.f);
}

void input_channel(const Plan &p, const float *x, int64_t c, int64_t ty0, int64_t rb, int64_t Tq, float *V) {
  with_lanes([&](auto *lane) __attribute__((always_inline)) {
    input_rows<std::remove_pointer_t<decltype(lane)>>(p, x, c, ty0, rb, Tq, V);
  });
}

// Whether act is nondecreasing: max(act(v + b)) = act(max(v) + b) (HardSigmoid's slope is act.a).
bool monotone(const Act &act) {
  return act.kind == RLX_MX_ACT_NONE || act.kind == RLX_MX_ACT_RELU || act.kind == RLX_MX_ACT_CLIP ||
         (act.kind == RLX_MX_ACT_HARD_SIGMOID && act.a >= 0) || act.kind == RLX_MX_ACT_SIGMOID || act.kind == RLX_MX_ACT_TANH;
}

// y[0 .. n) = act(x[0 .. n) + bias) (y may be x).
void bias_act(const Act &act, float bias, const float *x, float *y, int64_t n) {
  if (!bias_act_copy(act, bias, x, y, n)) {
    bias_act_copy(Act{}, bias, x, y, n);
    apply_act(act, y, n);
  }
}

// Output channel o's rows 2 ty, 2 ty + 1 for tile rows ty0 .. ty0 + rb - 1 of y from
// M [16][Co][Tp] (A^T m A), + bias, then act. pool: y is instead the 2 x 2 max pool of those rows
// (windows at stride 2, floor mode: y [Co, OH / 2, OW / 2]), each window one tile: its four
// outputs are maxed before the bias and act where act is monotone, else after.
template <class VW>
__attribute__((always_inline)) inline void output_rows(const Plan &p, const float *M, int64_t o, int64_t ty0, int64_t rb, float bias,
                                                       const Act &act, bool pool, float *y) {
  const int64_t TW = p.TW, CT = p.Mx, PH = p.OH / 2, PW = p.OW / 2;
  const bool linear = piecewise_linear(act);
  thread_local std::vector<float> out;
  out.resize(4 * up16(TW));
  float *q[2] = {out.data(), out.data() + 2 * up16(TW)};  // two output rows, interleaved tiles
  float *u[4];  // pool: the tiles' four outputs by row (h, left / right)
  for (int k = 0; k < 4; k++) u[k] = out.data() + k * up16(TW);
  for (int64_t r = 0; r < rb; r++) {
    if (pool && ty0 + r >= PH) break;
    const float *m = M + o * p.Tp + r * TW;
    // tiles t .. t + lanes<V> (for_tiles)
    auto step = [&](auto *lanes, int64_t t) __attribute__((always_inline)) {
      using V = std::remove_pointer_t<decltype(lanes)>;
      // A^T over the rows (xi = 4 i + j): s0_j = m0j + m1j + m2j, s1_j = m1j - m2j - m3j; then A
      // over the columns, the two outputs of each tile side by side
      V s[2][4];
      for (int j = 0; j < 4; j++) {
        V a = loadv(V, m + j * CT + t), b = loadv(V, m + (4 + j) * CT + t), cc = loadv(V, m + (8 + j) * CT + t),
          d = loadv(V, m + (12 + j) * CT + t);
        s[0][j] = a + b + cc, s[1][j] = b - cc - d;
      }
      for (int h = 0; h < 2; h++) {
        V left = s[h][0] + s[h][1] + s[h][2], right = s[h][1] - s[h][2] - s[h][3];
        if (pool) {
          store(u[2 * h] + t, left);
          store(u[2 * h + 1] + t, right);
          continue;
        }
        if constexpr (sizeof(V) == sizeof(v16)) {
          store(q[h] + 2 * t, __builtin_shufflevector(left, right, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23));
          store(q[h] + 2 * t + 16, __builtin_shufflevector(left, right, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31));
        } else {
          store(q[h] + 2 * t, __builtin_shufflevector(left, right, 0, 8, 1, 9, 2, 10, 3, 11));
          store(q[h] + 2 * t + 8, __builtin_shufflevector(left, right, 4, 12, 5, 13, 6, 14, 7, 15));
        }
      }
    };
    for_tiles<VW>(TW, step);
    if (pool) {
      float *yr = y + (o * PH + ty0 + r) * PW;
      bool mono = monotone(act);
      if (!mono)
        for (int k = 0; k < 4; k++) bias_act(act, bias, u[k], u[k], PW);
      for (int64_t j = 0; j < PW; j++) {
        float a = u[0][j] < u[1][j] ? u[1][j] : u[0][j], b = u[2][j] < u[3][j] ? u[3][j] : u[2][j];
        yr[j] = a < b ? b : a;
      }
      if (mono) bias_act(act, bias, yr, yr, PW);
      continue;
    }
    for (int h = 0; h < 2; h++) {
      int64_t oy = 2 * (ty0 + r) + h;
      if (oy >= p.OH) break;
      bias_act_copy(linear ? act : Act{}, bias, q[h], y + (o * p.OH + oy) * p.OW, p.OW);
    }
  }
  // a smooth activation (SiLU, ...) over the block's rows at once: they are contiguous in y, and
  // rows of 5-40 outputs left a fifth to all of their values to the exp's narrower tail loops
  if (!pool && !linear) apply_act(act, y + (o * p.OH + 2 * ty0) * p.OW, (std::min(p.OH, 2 * (ty0 + rb)) - 2 * ty0) * p.OW);
}

void output_channel(const Plan &p, const float *M, int64_t o, int64_t ty0, int64_t rb, float bias, const Act &act, bool pool, float *y) {
  with_lanes([&](auto *lane) __attribute__((always_inline)) {
    output_rows<std::remove_pointer_t<decltype(lane)>>(p, M, o, ty0, rb, bias, act, pool, y);
  });
}

#undef loadv
#undef store

}  // namespace

void winograd_conv(int64_t N, int64_t C, int64_t H, int64_t W, int64_t Co, int64_t ph, int64_t pw, int64_t OH, int64_t OW, const float *x,
                   const float *U, const float *b, const Act &act, float *y, bool pool) {
  Plan p{C, H, W, Co, ph, pw, OH, OW, (OH + 1) / 2, (OW + 1) / 2, 0, 0, 0, 0};
  const int64_t budget = std::max<int64_t>(1, ((int64_t)1 << 20) / (16 * (C + Co)) / p.TW);  // tile rows of V and M in ~4 MB
  p.RB = std::min(p.TH, budget);
  // Small maps: whole images side by side in a block (their tiles the products' columns), so that a
  // batch's products read U once per block, not once per image (ResNet-50's 7 x 7 maps: 16 tiles)
  const int64_t NI = p.RB == p.TH ? std::max<int64_t>(1, std::min(N, budget / p.TH)) : 1, per = p.TH * p.TW;
  p.Tp = up16(NI * p.RB * p.TW) + 16, p.Vx = C * p.Tp + 16, p.Mx = Co * p.Tp + 16;
  thread_local std::vector<float> Vb, Mb;  // the caller's; the pool's threads reach them through the pointers
  thread_local std::vector<int32_t> offb;
  if ((int64_t)Vb.size() < 16 * p.Vx) Vb.resize(16 * p.Vx);
  if ((int64_t)Mb.size() < 16 * p.Mx) Mb.resize(16 * p.Mx);
  float *V = Vb.data(), *M = Mb.data();
  offb.resize(C);
  for (int64_t c = 0; c < C; c++) offb[c] = (int32_t)(c * p.Tp);
  const int32_t *off = offb.data();
  const int64_t mr = gemm_rows_per_call(), G = (Co + mr - 1) / mr;  // U [16][G][C][mr]
  const int64_t ysz = Co * (pool ? (OH / 2) * (OW / 2) : OH * OW);
  for (int64_t n0 = 0; n0 < N; n0 += NI) {
    const int64_t ni = std::min(NI, N - n0);
    for (int64_t ty0 = 0; ty0 < p.TH; ty0 += p.RB) {
      // image k of the block at columns k per (per: its tiles; NI > 1 only for whole images)
      const int64_t rb = std::min(p.RB, p.TH - ty0), Tq = up16((ni - 1) * per + rb * p.TW);
      parallel_for(C, 1, [&](int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; c++)
          for (int64_t k = 0; k < ni; k++)  // in order: a row's vectors run into the next image's columns;
            // the columns past the block's tiles zeroed once, by the last image
            input_channel(p, x + (n0 + k) * C * H * W, c, ty0, rb, k + 1 < ni ? rb * p.TW : Tq - k * per, V + k * per);
      });
      // the products over the block's tiles alone (Tr, not Tq: 49 of ResNet-50's 14 x 14 map's
      // tiles would be 64 columns, the last 15 computed for nothing); the output transform's
      // vectors past them read columns it discards
      const int64_t Tr = (ni - 1) * per + rb * p.TW;
      Tiles t = tiles(16, Co, Tr, C, (int64_t)1 << 30);
      t.bm = (t.bm + mr - 1) / mr * mr;  // whole blocks of U's rows
      parallel_for(16 * t.mb * t.nb, t.grain, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; i++) {
          int64_t xi = i / (t.mb * t.nb), m0 = i / t.nb % t.mb * t.bm, c0 = i % t.nb * t.bn;
          int64_t m1 = std::min(Co, m0 + t.bm), c1 = std::min(Tr, c0 + t.bn);
          // More tiles than rows of U: all of U's blocks of rows in one call, so that each slice of
          // V's columns is read from L2 once for all of them (a call per block read V once per
          // block: YOLOv8n's 64 -> 64 products on 40 x 40 maps at 47 GMAC/s, then 59). Else a call
          // per block, each reading its block of U as one stream through all of C, V staying in L2
          // (in one call U's blocks were read a slice of C at a time, from memory: ResNet-50's
          // 256 -> 256 products on 14 x 14 maps 6.4 -> 10 ms a run).
          const int64_t step = m1 - m0 > c1 - c0 ? mr : m1 - m0;
          for (int64_t g = m0; g < m1; g += step)
            gemm_block_offsets(std::min(step, m1 - g), c1 - c0, C, U + (xi * G * mr + g) * C, mr, V + xi * p.Vx + c0, off,
                               M + xi * p.Mx + g * p.Tp + c0, p.Tp, mr * C);
        }
      });
      parallel_for(Co, 1, [&](int64_t o0, int64_t o1) {
        for (int64_t o = o0; o < o1; o++)
          for (int64_t k = 0; k < ni; k++)
            output_channel(p, M + k * per, o, ty0, rb, b ? b[o] : 0.f, act, pool, y + (n0 + k) * ysz);
      });
    }
  }
}

}  // namespace rlx_kernels

extern "C" bool rlx_mx_winograd_fits(int64_t C, int64_t Co, int64_t group, int64_t kh, int64_t kw, const int64_t *strides,
                                     const int64_t *dilations) {
  // 32 channels (DNSMOS P.808's 32 -> 32 convolutions): 13% faster than the GEMM since the
  // transforms run on 16-tile vectors (1.5x slower before); 16 deep products would be shallower still
  return group == 1 && kh == 3 && kw == 3 && strides[0] == 1 && strides[1] == 1 && dilations[0] == 1 && dilations[1] == 1 && C >= 32 &&
         C <= ((int64_t)1 << 14) && Co >= 32;
}

extern "C" rlx_mx_arr *rlx_mx_winograd_weights(rlx_mx *c, rlx_mx_arr *w) {
  SHIM_OP(c, w, ([&] {
            mx::array wa = mx::astype(A(w), mx::float32, c->stream);
            if (wa.ndim() != 4 || wa.shape(2) != 3 || wa.shape(3) != 3)
              throw std::invalid_argument("winograd_weights takes w [Co, C, 3, 3]");
            const float g[12] = {1, 0, 0, .5f, .5f, .5f, .5f, -.5f, .5f, 0, 0, 1};
            mx::array G(g, {4, 3}, mx::float32);
            mx::array u = mx::matmul(mx::matmul(G, wa, c->stream), mx::transpose(G, c->stream), c->stream);  // [Co, C, 4, 4]
            int Co = wa.shape(0), C = wa.shape(1), mr = rlx_kernels::gemm_rows_per_call(), Gn = (Co + mr - 1) / mr;
            u = mx::reshape(u, {Co, C, 16}, c->stream);
            // [16, Gn, C, mr]: each xi's rows in blocks of the micro-kernel's mr rows (zeros past
            // Co), a block's column k the mr floats at (k mr), read by the products as one stream
            u = mx::pad(mx::transpose(u, {2, 0, 1}, c->stream), {{0, 0}, {0, Gn * mr - Co}, {0, 0}}, mx::array(0.f), "constant", c->stream);
            u = mx::reshape(u, {16, Gn, mr, C}, c->stream);
            return mx::contiguous(mx::transpose(u, {0, 1, 3, 2}, c->stream), false, c->stream);
          }()));
}
