// kernel_conv.cpp: channels-first 2D convolution, bias and activation fused, by two algorithms:
// direct for few input channels per group (depthwise convolutions, and dense ones over 1-4 input
// channels), GEMM for the others.
//
// Direct:
// MLX's CPU backend runs these through im2col (a patch buffer kh*kw times the input) and one
// matmul per group with M = 1 (depthwise), or through its channels-last GEMM path with a tiny
// contraction (K = Ci*kh*kw): both far below the machine's speed. Here each output row
// y[n, o, oy, :] is computed in place: bias, then for every input channel c of o's group and
// kernel tap (ky, kx) whose input row iy = oy*sh - ph + ky*dh lies inside the input,
// y[ox] += w[o, c, ky, kx] * x[n, g*cg + c, iy, ox*sw - pw + kx*dw] (taps outside the input are
// the zero padding and skipped), then the activation. Interior outputs (every tap inside the
// row) go in blocks of 4 x 16 (then of 16), each accumulated in a vector register over all of its
// taps (4 independent multiply-add chains; one chain per block, stored per input row, made the
// kernel latency-bound at ~1/8 of the FMA units' rate); the edges tap by tap.
// Rows are split over the kernel thread pool.
//
// GEMM: MLX's CPU convolution (group 1) transposes the input to channels last, builds the
// patches on one thread, runs one multi-threaded BLAS call and returns a channels-last result
// that the next op reads through a transposed view. Here a tile is (image, group, block of output
// positions, block of output channels) on the pool (kernels.h tiles); its patches
// col[K = C/g * kh * kw, block] are written straight into the GEMM's panels in a per-thread
// buffer (for 1x1 convolutions with stride 1 and no pads the patches are the input itself,
// packed as it is), then y[rows, block] = w[rows, K] @ col by rlx's GEMM (kernels.h gemm_block;
// the weight rows are read in place), then bias and activation on the tile while it is in cache.
//
// float32 only (the shim converts other float types).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "mlx/backend/cpu/encoder.h"
#include "mlx/shim/kernels.h"

namespace rlx_kernels {
namespace {

struct Geom {
  int64_t N, C, H, W, Co, cg, og, kh, kw, OH, OW;
  int64_t sh, sw, ph, pw, dh, dw;
  int64_t K, P;  // patch rows C/g * kh * kw, output positions OH * OW
  bool unit;     // 1x1, stride 1, no pads: the patches are the input
  bool column;   // H and W (and kernel, strides, pads, dilations) swapped, see Conv2d::geom
};

constexpr int BLK = 16;
typedef float vblk __attribute__((vector_size(BLK * sizeof(float))));  // GCC/Clang vector extension

// First ox whose tap at column offset `off` (= kx*dw - pw) is at input column >= 0, and one
// past the last whose column is < W.
inline int64_t first_ox(int64_t off, int64_t sw) { return off >= 0 ? 0 : (-off + sw - 1) / sw; }
inline int64_t end_ox(int64_t off, int64_t sw, int64_t W, int64_t OW) {
  int64_t e = W - off <= 0 ? 0 : (W - off - 1) / sw + 1;
  return std::min(e, OW);
}

// NB blocks of 8 interior outputs of a row from ox on: bias plus every tap, accumulated in
// registers over all of them (NB independent chains; one alone waits out each multiply-add's
// latency, and a block stored and reloaded per input row waits on memory). rows[c kh + ky]: the
// input row of tap (c, ky) at the column of output 0's tap kx = 0 (ox*sw + kx*dw from there is a
// tap's column), NULL where that row is in the padding. KW, SW: the kernel width and the stride
// along W when known at compile time (loops unrolled, stride-2 inputs deinterleaved from two
// vector loads instead of gathered), else 0.
template <int NB, int KW, int SW>
__attribute__((always_inline)) inline void conv_blocks(const Geom &g, const float *const *rows, const float *w, float bias, float *y,
                                                       int64_t ox) {
  const int64_t sw = SW ? SW : g.sw, kw = KW ? KW : g.kw, dw = g.dw;
  vblk a[NB];
  for (int b = 0; b < NB; b++) a[b] = vblk{} + bias;
  for (int64_t r = 0; r < g.cg * g.kh; r++) {
    if (!rows[r]) continue;
    const float *rr = rows[r] + ox * sw, *wr = w + r * kw;
    for (int64_t kx = 0; kx < kw; kx++) {
      const float *rk = rr + kx * dw;
      float wv = wr[kx];
      for (int b = 0; b < NB; b++) {
        vblk v;
        if constexpr (SW == 1) {
          memcpy(&v, rk + b * BLK, sizeof v);
        } else if constexpr (SW == 2) {  // the even ones of elements 0..30 (none read past 30)
          vblk lo, hi;
          memcpy(&lo, rk + 2 * b * BLK, sizeof lo);
          memcpy(&hi, rk + 2 * b * BLK + BLK - 1, sizeof hi);
          v = __builtin_shufflevector(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14, 17, 19, 21, 23, 25, 27, 29, 31);
        } else {
          for (int j = 0; j < BLK; j++) v[j] = rk[(b * BLK + j) * sw];
        }
        a[b] += wv * v;
      }
    }
  }
  for (int b = 0; b < NB; b++) memcpy(y + ox + b * BLK, &a[b], sizeof a[b]);
}

// The outputs of a row that each kernel column's taps reach: [be[2 kx], be[2 kx + 1]) has tap kx
// inside the input row; [lo, hi) has every tap inside (the interior). The same for every row, so
// computed once per convolution (its integer divisions cost as much as a narrow row's work).
// padded: the row's edges cost more tap by tap (per tap and edge output) than copying the row's
// input rows into zero-padded ones, all of whose outputs are interior (narrow rows, wide kernels).
struct Spans {
  int64_t lo, hi;
  std::vector<int64_t> be;
  bool padded;
  int64_t OWr, Wp;  // padded: outputs rounded up to a block, floats per padded input row
  explicit Spans(const Geom &g) : be(2 * g.kw) {
    for (int64_t kx = 0; kx < g.kw; kx++) {
      int64_t off = kx * g.dw - g.pw;
      be[2 * kx] = first_ox(off, g.sw), be[2 * kx + 1] = end_ox(off, g.sw, g.W, g.OW);
    }
    lo = std::min(first_ox(-g.pw, g.sw), g.OW), hi = std::max(lo, end_ox((g.kw - 1) * g.dw - g.pw, g.sw, g.W, g.OW));
    OWr = (g.OW + BLK - 1) / BLK * BLK;
    Wp = std::max(g.pw + g.W, (OWr - 1) * g.sw + (g.kw - 1) * g.dw + 1) + 2 * BLK;
    int64_t edges = g.OW - (hi - lo) + (hi - lo) % BLK;  // outputs done tap by tap
    padded = g.sw <= 2 && edges * g.kw * 2 + g.kw * 8 > Wp / 4;
  }
};

// A thread's zero-padded input rows (Spans::Wp floats each): per input channel of the group, S =
// (kh - 1) dh + 1 slots, input row iy in slot iy % S (the rows of one output row never share a
// slot), each tagged with the input row it holds, so consecutive output rows of a chunk copy only
// the rows they do not share. Tags are cleared at the start of every chunk.
struct PadRows {
  float *buf;
  const float **tag;
  int64_t S;
};

// One output row: y[0..OW) = bias + sum over (c, ky, kx) as described above. Padded: the taps' input
// rows taken from (or copied into) pad and the whole row done in blocks into out (Spans::OWr
// floats), then copied to y. Else the interior in blocks, the edges tap by tap.
template <int KW, int SW>
__attribute__((always_inline)) inline void conv_row_kw(const Geom &g, const Spans &sp, const float *x, const float *w, float bias,
                                                       float *y, int64_t oy, const PadRows &pad, float *out) {
  const int64_t OW = g.OW, W = g.W, sw = g.sw, kw = g.kw, dw = g.dw, pw = g.pw, lo = sp.lo;
  const float *some[64];
  thread_local std::vector<const float *> more;
  if (g.cg * g.kh > 64) more.resize(g.cg * g.kh);
  const float **rows = g.cg * g.kh > 64 ? more.data() : some;
  for (int64_t c = 0, r = 0; c < g.cg; c++)
    for (int64_t ky = 0; ky < g.kh; ky++, r++) {
      int64_t iy = oy * g.sh - g.ph + ky * g.dh;
      rows[r] = iy < 0 || iy >= g.H ? nullptr : x + (c * g.H + iy) * W - pw;
      if (!rows[r] || !sp.padded) continue;
      int64_t slot = c * pad.S + iy % pad.S;
      float *pr = pad.buf + slot * sp.Wp;
      if (pad.tag[slot] != rows[r]) {
        std::fill(pr, pr + pw, 0.f);
        memcpy(pr + pw, rows[r] + pw, W * sizeof(float));
        std::fill(pr + pw + W, pr + sp.Wp, 0.f);
        pad.tag[slot] = rows[r];
      }
      rows[r] = pr;
    }
  if (sp.padded) {  // whole blocks straight into y, a last partial one through out
    int64_t ox = 0;
    for (; ox + 4 * BLK <= OW; ox += 4 * BLK) conv_blocks<4, KW, SW>(g, rows, w, bias, y, ox);
    for (; ox + BLK <= OW; ox += BLK) conv_blocks<1, KW, SW>(g, rows, w, bias, y, ox);
    if (ox < OW) {
      conv_blocks<1, KW, SW>(g, rows, w, bias, out, ox);
      memcpy(y + ox, out + ox, (OW - ox) * sizeof(float));
    }
    return;
  }
  // Interior: blocks of 4 x 8, then of 8, the last one ending at hi (overlapping its
  // predecessor: it writes the same values there).
  int64_t ox = lo;
  for (; ox + 4 * BLK <= sp.hi; ox += 4 * BLK) conv_blocks<4, KW, SW>(g, rows, w, bias, y, ox);
  for (; ox + BLK <= sp.hi; ox += BLK) conv_blocks<1, KW, SW>(g, rows, w, bias, y, ox);
  if (ox < sp.hi && sp.hi - lo >= BLK) conv_blocks<1, KW, SW>(g, rows, w, bias, y, sp.hi - BLK), ox = sp.hi;
  for (int64_t i = 0; i < lo; i++) y[i] = bias;
  for (int64_t i = ox; i < OW; i++) y[i] = bias;
  // Edges (and the interior's tail), tap by tap.
  for (int64_t r = 0; r < g.cg * g.kh; r++) {
    if (!rows[r]) continue;
    const float *row = rows[r] + pw, *wr = w + r * kw;
    for (int64_t kx = 0; kx < kw; kx++) {
      int64_t off = kx * dw - pw, b = sp.be[2 * kx], e = sp.be[2 * kx + 1];
      float wv = wr[kx];
      for (int64_t i = b; i < std::min(lo, e); i++) y[i] += wv * row[i * sw + off];
      for (int64_t i = std::max(ox, b); i < e; i++) y[i] += wv * row[i * sw + off];
    }
  }
}

// The common kernel widths (3, 5: depthwise and first layers) and strides (1, 2) as constants.
// Cloned: AVX-512 runs a block as one vector, AVX2 as two.
RLX_KERNEL_CLONES_512
void conv_row(const Geom &g, const Spans &sp, const float *x, const float *w, float bias, float *y, int64_t oy, const PadRows &pad,
              float *out) {
  if (g.sw == 1) {
    if (g.kw == 3) return conv_row_kw<3, 1>(g, sp, x, w, bias, y, oy, pad, out);
    if (g.kw == 5) return conv_row_kw<5, 1>(g, sp, x, w, bias, y, oy, pad, out);
    return conv_row_kw<0, 1>(g, sp, x, w, bias, y, oy, pad, out);
  }
  if (g.sw == 2 && g.kw == 3) return conv_row_kw<3, 2>(g, sp, x, w, bias, y, oy, pad, out);
  if (g.sw == 2) return conv_row_kw<0, 2>(g, sp, x, w, bias, y, oy, pad, out);
  conv_row_kw<0, 0>(g, sp, x, w, bias, y, oy, pad, out);
}

void conv(const Geom &g, const float *x, const float *w, const float *b, const Act &act, float *y) {
  int64_t rows = g.N * g.Co * g.OH, macs_per_row = std::max<int64_t>(1, g.cg * g.kh * g.kw * g.OW);
  const Spans sp(g);
  parallel_for(rows, std::max<int64_t>(1, 16384 / macs_per_row), [&](int64_t r0, int64_t r1) {
    thread_local std::vector<float> buf, out;
    thread_local std::vector<const float *> tags;
    PadRows pad{nullptr, nullptr, (g.kh - 1) * g.dh + 1};
    if (sp.padded) {
      if ((int64_t)buf.size() < g.cg * pad.S * sp.Wp) buf.resize(g.cg * pad.S * sp.Wp);
      if ((int64_t)out.size() < sp.OWr) out.resize(sp.OWr);
      tags.assign(g.cg * pad.S, nullptr);
      pad.buf = buf.data(), pad.tag = tags.data();
    }
    int64_t oy = r0 % g.OH, no = r0 / g.OH;  // row r = (n * Co + o) * OH + oy
    for (int64_t r = r0; r < r1; r++) {
      int64_t o = no % g.Co, n = no / g.Co, grp = o / g.og;
      const float *xg = x + (n * g.C + grp * g.cg) * g.H * g.W;
      float *yr = y + r * g.OW;
      conv_row(g, sp, xg, w + o * g.cg * g.kh * g.kw, b ? b[o] : 0.f, yr, oy, pad, out.data());
      apply_act(act, yr, g.OW);
      if (++oy == g.OH) oy = 0, no++;
    }
  });
}

// The patches of output positions p0 + j, j < n, of one image's group (x at its first channel),
// written straight into the GEMM's panels (kernels.h), panel q at panels + q * PanelStride(K):
// for every patch row k = (c, ky, kx), the NR values x[c, oy*sh - ph + ky*dh, ox*sw - pw + kx*dw]
// of its positions (zero where a tap falls in the padding). The positions are cut once into
// segments that stay inside one panel and one output row; the lanes of a segment that each kernel
// column reaches depend on the segment and kx only, and are computed once too. Each patch row then
// copies its segments: one whose first lane is inside the input row is a whole vector (one load,
// or two deinterleaved for stride 2) stored at its first lane, then zeros from its reach to its
// end. A store past the segment lands where a later segment, the next patch row or a panel's slack
// row will be written, or in the lanes past n, whose product columns the GEMM never stores. Loads
// stay inside the input buffer [x0, xe) (else the segment is copied value by value). Cloned:
// AVX-512 and AVX2 run the vectors.
struct Segment {
  int64_t dst, len, iy0, ix0;  // dst: offset of its first value in the panels (at k = 0)
};

typedef float v16 __attribute__((vector_size(NR * sizeof(float))));

// Floats per panel of the patches: K rows and a slack row for the stores past a segment.
inline int64_t panel_stride(int64_t K) { return (K + 1) * NR; }

RLX_KERNEL_CLONES_512
void im2col_panels(const Geom &g, const float *x, int64_t p0, int64_t n, const float *xe, float *panels) {
  thread_local std::vector<Segment> segs;
  thread_local std::vector<int64_t> span;  // span[2 (s kw + kx)]: [lo, hi) inside the row for tap kx
  segs.clear();
  const int64_t ps = panel_stride(g.K);
  for (int64_t p = p0, end = p0 + n; p < end;) {
    int64_t j = p - p0, oy = p / g.OW, ox = p % g.OW;
    int64_t len = std::min({end - p, g.OW - ox, NR - j % NR});
    segs.push_back({j / NR * ps + j % NR, len, oy * g.sh - g.ph, ox * g.sw - g.pw});
    p += len;
  }
  const int64_t sw = g.sw, ns = (int64_t)segs.size();
  span.resize(2 * ns * g.kw);
  for (int64_t i = 0; i < ns; i++)
    for (int64_t kx = 0; kx < g.kw; kx++) {
      int64_t ix0 = segs[i].ix0 + kx * g.dw, len = segs[i].len;
      int64_t lo = std::min(len, ix0 >= 0 ? 0 : (-ix0 + sw - 1) / sw);
      int64_t hi = std::max(lo, std::min(len, g.W - ix0 <= 0 ? 0 : (g.W - ix0 - 1) / sw + 1));
      span[2 * (i * g.kw + kx)] = lo, span[2 * (i * g.kw + kx) + 1] = hi;
    }
  for (int64_t k = 0, c = 0, ky = 0, kx = 0; k < g.K; k++) {
    const float *xc = x + c * g.H * g.W;
    for (int64_t i = 0; i < ns; i++) {
      const Segment &sg = segs[i];
      float *dst = panels + sg.dst + k * NR;
      int64_t iy = sg.iy0 + ky * g.dh, len = sg.len;
      if (iy < 0 || iy >= g.H) {
        for (int64_t j = 0; j < len; j++) dst[j] = 0.f;
        continue;
      }
      const float *src = xc + iy * g.W + sg.ix0 + kx * g.dw;
      int64_t lo = span[2 * (i * g.kw + kx)], hi = span[2 * (i * g.kw + kx) + 1];
      if (lo == 0 && hi > 0 && (sw == 1 || sw == 2) && xe - src >= NR * sw) {
        v16 v;
        std::memcpy(&v, src, sizeof v);
        if (sw == 2) {
          v16 v2;
          std::memcpy(&v2, src + NR, sizeof v2);
          v = __builtin_shufflevector(v, v2, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        }
        std::memcpy(dst, &v, sizeof v);
        for (int64_t j = hi; j < len; j++) dst[j] = 0.f;
        continue;
      }
      for (int64_t j = 0; j < lo; j++) dst[j] = 0.f;
      if (sw == 1) {
        for (int64_t j = lo; j < hi; j++) dst[j] = src[j];
      } else {
        for (int64_t j = lo; j < hi; j++) dst[j] = src[j * sw];
      }
      for (int64_t j = hi; j < len; j++) dst[j] = 0.f;
    }
    if (++kx == g.kw) {
      kx = 0;
      if (++ky == g.kh) ky = 0, c++;
    }
  }
}

// Convolutions without patches ("implicit GEMM"). A tile (image, group, block of output channels,
// block of rt output rows oy0 ..) copies the input rows its outputs read, zero-padded, into a
// per-thread buffer, each row as sw phases: phase q of a row holds its padded columns q, q + sw,
// q + 2 sw, ... (input column ix at padded column ix + pw), Wv of them. The tile's outputs are
// virtual columns v = (oy - oy0) Wv + ox (those with ox >= OW are computed and dropped), and patch
// row k = (c, ky, kx) of column v is the padded column sw ox + t (t = kx dw) of input row
// oy sh - ph + ky dh, phase t % sw at index ox + t / sw. With the buffer laid out as
// [c][group][phase][row][Wv], that is buf[off[k] + v] for an offset per patch row: with sh = 1 one
// group of rt + (kh - 1) dh consecutive input rows (row r: input row oy0 - ph + r; patch row k reads
// from row ky dh on), with sh > 1 a group of rt rows per kernel row ky (row r: input row
// (oy0 + r) sh - ph + ky dh). So the GEMM reads its right operand in place from the buffer at those
// offsets (kernels.h gemm_block_offsets), whole-vector loads at any stride, into a virtual-column
// result that the tile copies to y, then the bias and activation: each input value is copied about
// once per tile with stride 1 along H (kh times otherwise), where im2col writes and packs kh * kw
// patch values per input value.
struct Implicit {
  int64_t Wv, rt, nb, mb, bm, grain;
  int64_t groups(const Geom &g) const { return g.sh == 1 ? 1 : g.kh; }
  int64_t rows(const Geom &g, int64_t r) const { return g.sh == 1 ? r + (g.kh - 1) * g.dh : r; }  // per group
};

// How gemm_conv's convolution runs without patches, or false: 1x1 convolutions with stride 1 and
// no pads (their patches are the input, packed as it is), and rows so narrow that the dropped
// virtual columns would waste more than a tenth of the work.
bool implicit_plan(const Geom &g, Implicit *im) {
  if (g.unit || g.sw < 1) return false;
  im->Wv = g.OW + (g.kw - 1) * g.dw / g.sw;
  if (10 * g.OW < 9 * im->Wv) return false;
  // buffer floats: `fixed` plus `per_row` per output row of a tile, within ~512 KB (L2) where it can
  int64_t row_floats = g.cg * g.sw * im->Wv, per_row = row_floats * im->groups(g), fixed = row_floats * im->rows(g, 0);
  if (per_row + fixed > ((int64_t)1 << 26)) return false;
  int64_t items = g.N * (g.Co / g.og);
  int64_t want = std::max<int64_t>(1, (4 * num_threads() + items - 1) / std::max<int64_t>(items, 1));
  int64_t rt_max = std::max<int64_t>(1, (((int64_t)128 << 10) - fixed) / per_row);
  for (int pass = 0; pass < 2; pass++) {
    int64_t nb = std::max(blocks(g.OH, 1, want), (g.OH + rt_max - 1) / rt_max);
    im->rt = (g.OH + nb - 1) / nb, im->nb = (g.OH + im->rt - 1) / im->rt;
    im->mb = blocks(g.og, 32, (want + im->nb - 1) / im->nb), im->bm = (g.og + im->mb - 1) / im->mb;
    // the virtual-column result within ~256 KB too
    rt_max = std::min(rt_max, std::max<int64_t>(1, ((int64_t)64 << 10) / (im->bm * im->Wv)));
    if (im->rt <= rt_max) break;
  }
  im->grain = std::max<int64_t>(1, ((int64_t)1 << 17) / std::max<int64_t>(1, im->bm * im->rt * g.OW * g.K));
  return true;
}

// d0[j] = t[2 j], d1[j] = t[2 j + 1] for j < n (the two phases of a stride-2 row): whole vectors
// deinterleaved by shuffles. Cloned: AVX-512 and AVX2 run the vectors.
RLX_KERNEL_CLONES_512
void deinterleave2(const float *t, int64_t n, float *d0, float *d1) {
  int64_t j = 0;
  for (; j + NR <= n; j += NR) {
    v16 lo, hi;
    std::memcpy(&lo, t + 2 * j, sizeof lo);
    std::memcpy(&hi, t + 2 * j + NR, sizeof hi);
    v16 ev = __builtin_shufflevector(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    v16 od = __builtin_shufflevector(lo, hi, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    std::memcpy(d0 + j, &ev, sizeof ev);
    std::memcpy(d1 + j, &od, sizeof od);
  }
  for (; j < n; j++) d0[j] = t[2 * j], d1[j] = t[2 * j + 1];
}

// The buffer of a tile of rt output rows from oy0 (see above): each padded row (columns
// [0, sw Wv)) built whole in `row`, then split into its phases (stride 1: the row is its one phase,
// built in place).
void implicit_rows(const Geom &g, const Implicit &im, const float *xg, int64_t oy0, int64_t rt, float *buf,
                   std::vector<float> &row) {
  const int64_t s = g.sw, Wv = im.Wv, Wp = s * Wv, lo = std::min(g.pw, Wp), n_in = std::max<int64_t>(0, std::min(g.W, Wp - lo));
  const int64_t G = im.groups(g), R = im.rows(g, rt);
  if (s > 1 && (int64_t)row.size() < Wp) row.resize(Wp);
  for (int64_t c = 0; c < g.cg; c++)
    for (int64_t gi = 0; gi < G; gi++)
      for (int64_t r = 0; r < R; r++) {
        float *ph0 = buf + ((c * G + gi) * s * R + r) * Wv, *pr = s == 1 ? ph0 : row.data();  // phase q at ph0 + q R Wv
        int64_t iy = g.sh == 1 ? oy0 - g.ph + r : (oy0 + r) * g.sh - g.ph + gi * g.dh;
        if (iy < 0 || iy >= g.H) {
          for (int64_t q = 0; q < s; q++) std::fill(ph0 + q * R * Wv, ph0 + q * R * Wv + Wv, 0.f);
          continue;
        }
        std::fill(pr, pr + lo, 0.f);
        std::memcpy(pr + lo, xg + (c * g.H + iy) * g.W, n_in * sizeof(float));
        std::fill(pr + lo + n_in, pr + Wp, 0.f);
        if (s == 2) {
          deinterleave2(pr, Wv, ph0, ph0 + R * Wv);
        } else if (s > 2) {
          for (int64_t q = 0; q < s; q++)
            for (int64_t j = 0; j < Wv; j++) ph0[q * R * Wv + j] = pr[q + s * j];
        }
      }
}

void implicit_conv(const Geom &g, const Implicit &im, const float *x, const float *w, const float *b, const Act &act,
                   float *y) {
  int64_t groups = g.Co / g.og, items = g.N * groups;
  parallel_for(items * im.mb * im.nb, im.grain, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> buf, acc, row;
    thread_local std::vector<int32_t> off;
    for (int64_t i = t0; i < t1; i++) {
      int64_t item = i / (im.mb * im.nb), m0 = i / im.nb % im.mb * im.bm, oy0 = i % im.nb * im.rt;
      int64_t n = item / groups, grp = item % groups, m1 = std::min(g.og, m0 + im.bm), rt = std::min(g.OH - oy0, im.rt);
      if (m0 >= m1 || rt <= 0) continue;
      const int64_t Wv = im.Wv, G = im.groups(g), R = im.rows(g, rt), used = g.cg * G * g.sw * R * Wv;
      const int64_t slack = (g.kw - 1) * g.dw + 2 * NR, nv = ((rt - 1) * Wv + g.OW + NR - 1) / NR * NR;  // virtual columns
      if ((int64_t)buf.size() < used + slack) buf.resize(used + slack);
      if ((int64_t)acc.size() < (m1 - m0) * nv) acc.resize((m1 - m0) * nv);
      implicit_rows(g, im, x + (n * g.C + grp * g.cg) * g.H * g.W, oy0, rt, buf.data(), row);
      std::fill(buf.data() + used, buf.data() + used + slack, 0.f);  // read by dropped columns only
      off.resize(g.K);
      for (int64_t k = 0, c = 0, ky = 0, kx = 0; k < g.K; k++) {
        int64_t t = kx * g.dw, gi = G == 1 ? 0 : ky, r0 = G == 1 ? ky * g.dh : 0;
        off[k] = (int32_t)((((c * G + gi) * g.sw + t % g.sw) * R + r0) * Wv + t / g.sw);
        if (++kx == g.kw) {
          kx = 0;
          if (++ky == g.kh) ky = 0, c++;
        }
      }
      int64_t o0 = grp * g.og + m0;
      gemm_block_offsets(m1 - m0, nv, g.K, w + o0 * g.K, g.K, buf.data(), off.data(), acc.data(), nv);
      float *yt = y + (n * g.Co + o0) * g.P + oy0 * g.OW;
      for (int64_t o = 0; o < m1 - m0; o++)
        for (int64_t r = 0; r < rt; r++) std::memcpy(yt + o * g.P + r * g.OW, acc.data() + o * nv + r * Wv, g.OW * sizeof(float));
      epilogue(yt, g.P, m1 - m0, rt * g.OW, b ? b + o0 : nullptr, nullptr, act);
    }
  });
}

void gemm_conv(const Geom &g, const float *x, const float *w, const float *b, const Act &act, float *y) {
  Implicit im;
  if (implicit_plan(g, &im)) return implicit_conv(g, im, x, w, b, act, y);
  int64_t groups = g.Co / g.og, items = g.N * groups;
  Tiles t = tiles(items, g.og, g.P, g.K, pack_columns(g.K));
  parallel_for(items * t.mb * t.nb, t.grain, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> panels;
    for (int64_t i = t0; i < t1; i++) {
      int64_t item = i / (t.mb * t.nb), m0 = i / t.nb % t.mb * t.bm, p0 = i % t.nb * t.bn;
      int64_t n = item / groups, grp = item % groups, m1 = std::min(g.og, m0 + t.bm), p1 = std::min(g.P, p0 + t.bn);
      if (m0 >= m1 || p0 >= p1) continue;
      const float *xg = x + (n * g.C + grp * g.cg) * g.H * g.W;
      int64_t ps = g.K * NR;
      if (g.unit) {
        if ((int64_t)panels.size() < packed_floats(g.K, p1 - p0)) panels.resize(packed_floats(g.K, p1 - p0));
        pack_b(false, g.K, xg, g.P, p0, p1, panels.data());
      } else {
        ps = panel_stride(g.K);
        if ((int64_t)panels.size() < (p1 - p0 + NR - 1) / NR * ps) panels.resize((p1 - p0 + NR - 1) / NR * ps);
        im2col_panels(g, xg, p0, p1 - p0, x + g.N * g.C * g.H * g.W, panels.data());
      }
      int64_t o0 = grp * g.og + m0;
      float *yt = y + (n * g.Co + o0) * g.P + p0;
      gemm_block(false, m1 - m0, p1 - p0, g.K, w + o0 * g.K, g.K, panels.data(), ps, yt, g.P);
      epilogue(yt, g.P, m1 - m0, p1 - p0, b ? b + o0 : nullptr, nullptr, act);
    }
  });
}

class Conv2d : public CpuKernel {
 public:
  Conv2d(mx::Stream s, const int64_t *st, const int64_t *pad, const int64_t *dil, int64_t group, Act act, bool gemm)
      : CpuKernel(s), group_(group), act_(act), gemm_(gemm) {
    for (int i = 0; i < 2; i++) s_[i] = st[i], d_[i] = dil[i];
    for (int i = 0; i < 4; i++) p_[i] = pad[i];
  }
  // inputs: x [N,C,H,W], w [Co,C/group,kh,kw], optional b [Co]; all float32 row-contiguous.
  void eval_cpu(const std::vector<mx::array> &in, mx::array &out) override {
    Geom g = geom(in);
    auto &enc = begin(in, out);
    const float *x = in[0].data<float>(), *w = in[1].data<float>(), *b = in.size() > 2 ? in[2].data<float>() : nullptr;
    float *y = out.data<float>();
    if (out.size() == 0) return;
    // without patch rows (no input channels) the direct loop writes the bias, then the activation
    if (gemm_ && g.K) return enc.dispatch([g, x, w, b, y, act = act_]() { gemm_conv(g, x, w, b, act, y); });
    // Few input channels but 8 or more output channels per group (a first layer over 1-4 channels):
    // the GEMM without patches reads each input row once for every output channel of a tile, where
    // the direct loop reads it once per output channel (bench_kernels.py's stems: 1.8-2.7x faster).
    Implicit im;
    if (g.K && g.og >= 8 && implicit_plan(g, &im))
      return enc.dispatch([g, im, x, w, b, y, act = act_]() { implicit_conv(g, im, x, w, b, act, y); });
    enc.dispatch([g, x, w, b, y, act = act_]() { conv(g, x, w, b, act, y); });
  }
  const char *name() const override { return gemm_ ? "RlxGemmConv" : "RlxDirectConv"; }
  bool is_equivalent(const mx::Primitive &other) const override {
    auto &o = static_cast<const Conv2d &>(other);
    return group_ == o.group_ && gemm_ == o.gemm_ && act_.kind == o.act_.kind && act_.a == o.act_.a && act_.b == o.act_.b &&
           !memcmp(s_, o.s_, sizeof s_) && !memcmp(p_, o.p_, sizeof p_) && !memcmp(d_, o.d_, sizeof d_);
  }
  std::vector<mx::Shape> output_shapes(const std::vector<mx::array> &in) override {
    Geom g = geom(in);
    if (g.column) std::swap(g.OH, g.OW);
    return {{(int)g.N, (int)g.Co, (int)g.OH, (int)g.OW}};
  }

 private:
  Geom geom(const std::vector<mx::array> &in) const {
    const auto &xs = in[0].shape(), &ws = in[1].shape();
    Geom g{};
    g.N = xs[0], g.C = xs[1], g.H = xs[2], g.W = xs[3];
    g.Co = ws[0], g.cg = ws[1], g.kh = ws[2], g.kw = ws[3], g.og = g.Co / group_;
    g.sh = s_[0], g.sw = s_[1], g.ph = p_[0], g.pw = p_[1], g.dh = d_[0], g.dw = d_[1];
    g.OH = (g.H + p_[0] + p_[2] - d_[0] * (g.kh - 1) - 1) / s_[0] + 1;
    g.OW = (g.W + p_[1] + p_[3] - d_[1] * (g.kw - 1) - 1) / s_[1] + 1;
    g.K = g.cg * g.kh * g.kw, g.P = g.OH * g.OW;
    g.unit = g.kh == 1 && g.kw == 1 && s_[0] == 1 && s_[1] == 1 && !p_[0] && !p_[1] && !p_[2] && !p_[3];
    // A column (W = 1, kernel width 1, no pads along W: 1D convolutions written as [N,C,L,1]) has
    // the memory layout of a row [N,C,1,L]: both kernels run it as one, with rows of L, not of 1.
    if (g.W == 1 && g.kw == 1 && !p_[1] && !p_[3] && g.H > 1) {
      std::swap(g.H, g.W), std::swap(g.kh, g.kw), std::swap(g.sh, g.sw), std::swap(g.ph, g.pw), std::swap(g.dh, g.dw);
      std::swap(g.OH, g.OW);
      g.column = true;
    }
    return g;
  }
  int64_t s_[2], p_[4], d_[2], group_;
  Act act_;
  bool gemm_;
};

}  // namespace
}  // namespace rlx_kernels

using rlx_kernels::Act;

namespace {

rlx_mx_arr *conv2d(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *w, rlx_mx_arr *b, const int64_t *strides, const int64_t *pads,
                   const int64_t *dilations, int64_t group, rlx_mx_act act, bool gemm) {
  SHIM_OP(c, x && w, ([&] {
            mx::array xa = A(x), wa = A(w);
            mx::Dtype dt = xa.dtype();
            if (xa.ndim() != 4 || wa.ndim() != 4) throw std::invalid_argument("conv2d kernels take rank-4 x and w");
            std::vector<mx::array> in = {rlx_kernels::row_contiguous(mx::astype(xa, mx::float32, c->stream), c->stream),
                                         rlx_kernels::row_contiguous(mx::astype(wa, mx::float32, c->stream), c->stream)};
            if (b) in.push_back(rlx_kernels::row_contiguous(mx::astype(A(b), mx::float32, c->stream), c->stream));
            auto prim = std::make_shared<rlx_kernels::Conv2d>(c->stream, strides, pads, dilations, group,
                                                              Act{act.kind, act.a, act.b}, gemm);
            mx::Shape shape = prim->output_shapes(in)[0];
            mx::array y(std::move(shape), mx::float32, std::move(prim), std::move(in));
            return dt == mx::float32 ? y : mx::astype(y, dt, c->stream);
          }()));
}

}  // namespace

extern "C" rlx_mx_arr *rlx_mx_direct_conv2d(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *w, rlx_mx_arr *b, const int64_t *strides,
                                            const int64_t *pads, const int64_t *dilations, int64_t group, rlx_mx_act act) {
  return conv2d(c, x, w, b, strides, pads, dilations, group, act, false);
}

extern "C" rlx_mx_arr *rlx_mx_gemm_conv2d(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *w, rlx_mx_arr *b, const int64_t *strides,
                                          const int64_t *pads, const int64_t *dilations, int64_t group, rlx_mx_act act) {
  return conv2d(c, x, w, b, strides, pads, dilations, group, act, true);
}
