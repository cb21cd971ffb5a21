// kernel_conv.cpp: channels-first 2D convolution, bias and activation fused, by two algorithms:
// direct for few input channels per group (depthwise convolutions, and dense ones over 1-4 input
// channels with fewer than 8 outputs per group), GEMM for the others. MLX's CPU backend runs the
// first through im2col (a patch buffer kh*kw times the input) and one matmul per group with M = 1
// (depthwise), or its channels-last GEMM path with a tiny contraction; for the others it transposes
// the input to channels last, builds the patches on one thread, runs one BLAS call and returns a
// channels-last result that the next op reads through a transposed view.
//
// Both read the input from a tile's buffer (tile_buffer: the input rows a block of output rows
// reads, zero-padded, in stride phases, with a per-patch-row offset) and work on the pool:
// - Direct: per output channel, the taps summed over runs of consecutive buffer floats in blocks
//   of 4 x 16 outputs held in vector registers (direct_conv).
// - GEMM without patches (implicit_conv), for rows wide enough: the micro-kernel reads its right
//   operand from the buffer at the offsets (kernels.h gemm_block_offsets), the weight rows in place.
// - Dot products (dot_conv), for at most 4 output positions per image: each weight row read once
//   for all the positions' patches, where the GEMM's 16-column panels would compute 16 columns.
// - GEMM with patches (gemm_conv), for the rest: a tile is (image, group, block of output
//   positions, block of output channels) (kernels.h tiles); its patches col[K = C/g * kh * kw,
//   block] are written straight into the GEMM's panels in a per-thread buffer (for 1x1
//   convolutions with stride 1 and no pads the patches are the input itself, packed as it is),
//   then y[rows, block] = w[rows, K] @ col by rlx's GEMM (kernels.h gemm_block).
// Each tile's bias and activation are applied while it is in cache. A max pool whose windows tile
// the result (rlx_mx_conv_max_pool) is applied there too: the implicit GEMM pools each tile's rows
// as they leave its result (conv_max_pool).
//
// float32 only (the shim converts other float types).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>
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

// ceil(a / b) for b > 0, 0 for a <= 0, without forming a + b - 1 (strides and dilations may be near
// INT64_MAX).
inline int64_t ceil_div(int64_t a, int64_t b) { return a <= 0 ? 0 : (a - 1) / b + 1; }

// Floats per panel of the patches: K rows and a slack row for the stores past a segment.
inline int64_t panel_stride(int64_t K) { return (K + 1) * NR; }

// d0[j] = t[2 j], d1[j] = t[2 j + 1] for j < n (the two phases of a stride-2 row): whole vectors
// deinterleaved by shuffles.
void deinterleave2(const float *t, int64_t n, float *d0, float *d1) {
  with_lanes([&](auto *lane) __attribute__((always_inline)) {
    using V = std::remove_pointer_t<decltype(lane)>;
    int64_t j = 0;
    for (; j + lanes<V> <= n; j += lanes<V>) {
      V ev, od;
      deinterleave(t + 2 * j, &ev, &od);
      std::memcpy(d0 + j, &ev, sizeof ev);
      std::memcpy(d1 + j, &od, sizeof od);
    }
    for (; j < n; j++) d0[j] = t[2 * j], d1[j] = t[2 * j + 1];
  });
}

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
      int64_t lo = std::min(len, ceil_div(-ix0, sw));
      int64_t hi = std::max(lo, std::min(len, ceil_div(g.W - ix0, sw)));
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
        if (sw == 1) {
          std::memcpy(dst, src, NR * sizeof(float));
        } else {  // 8-float vectors: native with AVX2 and AVX-512 (this function's clones)
          for (int h = 0; h < 2; h++) {
            v8 ev, od;
            deinterleave(src + 16 * h, &ev, &od);
            std::memcpy(dst + 8 * h, &ev, sizeof ev);
          }
        }
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

// Convolutions without patches ("implicit GEMM"), and the direct kernel, read their input from a
// tile's buffer. A tile (image, group, block of rt output rows from oy0; for the GEMM also a block of
// output channels) copies the R = (rt - 1) sh + (kh - 1) dh + 1 input rows its outputs read
// (from oy0 sh - ph on), zero-padded, into a per-thread buffer, each row as sw phases: phase q of a
// row holds its padded columns q, q + sw, q + 2 sw, ... (input column ix at padded column ix + pw),
// Wv of them, laid out [c][phase][row][Wv]. Output (oy, ox) at patch row k = (c, ky, kx) reads
// padded column sw ox + t (t = kx dw) of buffer row (oy - oy0) sh + ky dh: phase t % sw at index
// ox + t / sw, i.e. buf[off[k] + (oy - oy0) sh Wv + ox] with off[k] = ((c sw + t % sw) R + ky dh) Wv
// + t / sw. So a span of outputs is a run of consecutive buffer floats per patch row: with sh = 1 the
// tile's rows are one span of virtual columns v = (oy - oy0) Wv + ox (those with ox >= OW computed
// and dropped), with sh > 1 each output row is a span of OW columns (rounded up to 16). The GEMM
// reads its right operand from the buffer at those offsets (kernels.h gemm_block_offsets), whole
// vectors at any stride, into a result that the tile copies to y before the bias and activation;
// each input value is copied about once per tile, where im2col writes and packs kh * kw patch
// values per input value.
struct Implicit {
  int64_t Wv, rt, nb, mb, bm, grain;
  bool per_row;  // a span per output row (sh > 1), else one span per tile
  int64_t rows(const Geom &g, int64_t r) const { return (r - 1) * g.sh + (g.kh - 1) * g.dh + 1; }  // buffer rows
  // the result's layout: spans of span_nv columns, output row r at row_at(r)
  int64_t spans(int64_t r) const { return per_row ? r : 1; }
  int64_t span_nv(const Geom &g, int64_t r) const { return ((per_row ? 0 : (r - 1) * Wv) + g.OW + NR - 1) / NR * NR; }
  int64_t row_at(const Geom &g, int64_t r, int64_t rt) const { return per_row ? r * span_nv(g, rt) : r * Wv; }
};

// Wv: the columns of a padded row's phase that a tile's outputs read.
int64_t phase_width(const Geom &g) { return g.OW + (g.kw - 1) * g.dw / g.sw; }

// Whether a tile of one output row fits a buffer of 2^26 floats (256 MB): false where pads or
// dilations far beyond the input make the padded rows huge (such geometries take the patches).
bool tile_fits(const Geom &g, const Implicit &im) {
  return (double)g.cg * g.sw * im.Wv * im.rows(g, 1) <= (double)((int64_t)1 << 26) && (double)g.sw * im.Wv <= (double)((int64_t)1 << 26);
}

// Rows per tile within ~`floats` of buffer (at least 1) and the split of the OH rows into nb blocks
// of rt, at least `want` blocks.
void plan_rows(const Geom &g, Implicit *im, int64_t floats, int64_t want) {
  // in double: a stride far beyond the input (one output row per tile) overflows int64 here
  double per_row = (double)g.cg * g.sw * im->Wv * g.sh, fixed = (double)g.cg * g.sw * im->Wv * im->rows(g, 1);
  int64_t rt_max = per_row > 0 ? (int64_t)std::min<double>((double)g.OH, std::max(0.0, std::floor((floats - fixed) / per_row)) + 1) : g.OH;
  int64_t nb = std::max(blocks(g.OH, 1, want), (g.OH + rt_max - 1) / rt_max);
  im->rt = (g.OH + nb - 1) / nb, im->nb = (g.OH + im->rt - 1) / im->rt;
}

// How the convolution runs without patches (takes_implicit), or false: 1x1 convolutions with
// stride 1 and no pads (their patches are the input, packed as it is), and rows so narrow that the
// dropped columns would waste more than a tenth of the work.
bool implicit_plan(const Geom &g, Implicit *im, int64_t row_multiple = 1) {
  if (g.unit || g.sw < 1) return false;
  im->Wv = phase_width(g), im->per_row = g.sh > 1;
  int64_t lanes = im->per_row ? (g.OW + NR - 1) / NR * NR : im->Wv;  // computed per output row
  if (10 * g.OW < 9 * lanes || !tile_fits(g, *im)) return false;
  int64_t items = g.N * (g.Co / g.og);
  int64_t want = std::max<int64_t>(1, (4 * num_threads() + items - 1) / std::max<int64_t>(items, 1));
  plan_rows(g, im, (int64_t)128 << 10, want);  // ~512 KB (L2)
  for (int pass = 0; pass < 2; pass++) {
    im->mb = blocks(g.og, 32, (want + im->nb - 1) / im->nb), im->bm = (g.og + im->mb - 1) / im->mb;
    if (im->bm * im->rt * lanes <= ((int64_t)64 << 10) || im->rt == 1) break;  // the result within ~256 KB too
    im->nb = std::max(im->nb, (g.OH * im->bm * lanes + ((int64_t)64 << 10) - 1) / ((int64_t)64 << 10));
    im->rt = (g.OH + im->nb - 1) / im->nb, im->nb = (g.OH + im->rt - 1) / im->rt;
  }
  if (row_multiple > 1) /* tiles that start at multiples of row_multiple rows (a max pool's windows) */
    im->rt = (im->rt + row_multiple - 1) / row_multiple * row_multiple, im->nb = (g.OH + im->rt - 1) / im->rt;
  im->grain = std::max<int64_t>(1, ((int64_t)1 << 17) / std::max<int64_t>(1, im->bm * im->rt * g.OW * g.K));
  return true;
}

// The buffer of a tile of rt output rows from oy0 of the group whose input starts at xg (see
// above), in this thread's buffer: each padded row (columns
// [0, sw Wv)) built whole in a row buffer, then split into its phases (stride 1: the row is its one
// phase, built in place). Floats past the rows that dropped columns read are zeros.
const float *tile_buffer(const Geom &g, const Implicit &im, const float *xg, int64_t oy0, int64_t rt) {
  thread_local std::vector<float> buf, row;
  thread_local int64_t last[6];  // the layout the buffer's zero pads and slack were written for
  const int64_t s = g.sw, Wv = im.Wv, Wp = s * Wv, lo = std::min(g.pw, Wp), n_in = std::max<int64_t>(0, std::min(g.W, Wp - lo));
  const int64_t R = im.rows(g, rt), used = g.cg * s * R * Wv, slack = (g.kw - 1) * g.dw + 2 * NR;
  const int64_t key[6] = {s, Wv, lo, n_in, R, g.cg};
  bool pads = memcmp(key, last, sizeof key) != 0;  // else the pads are still zero: only rows are copied
  if ((int64_t)buf.size() < used + slack) buf.resize(used + slack);
  if (s > 1 && (int64_t)row.size() < Wp) row.resize(Wp);
  for (int64_t c = 0; c < g.cg; c++)
    for (int64_t r = 0; r < R; r++) {
      float *ph0 = buf.data() + (c * s * R + r) * Wv, *pr = s == 1 ? ph0 : row.data();  // phase q at ph0 + q R Wv
      int64_t iy = oy0 * g.sh - g.ph + r;
      if (iy < 0 || iy >= g.H) {
        for (int64_t q = 0; q < s; q++) std::fill(ph0 + q * R * Wv, ph0 + q * R * Wv + Wv, 0.f);
        continue;
      }
      const float *xr = xg + (c * g.H + iy) * g.W;
      if (s == 2) {  // phase q index j is input column q + 2 j - pw: both inside for j in [j0, j1)
        int64_t j0 = std::min(Wv, (g.pw + 1) / 2), j1 = std::max(j0, std::min(Wv, (g.W + g.pw - 1) / 2));
        float *d0 = ph0, *d1 = ph0 + R * Wv;
        for (int64_t j = 0; j < j0; j++) d0[j] = 2 * j - g.pw >= 0 && 2 * j - g.pw < g.W ? xr[2 * j - g.pw] : 0.f, d1[j] = 2 * j + 1 - g.pw >= 0 && 2 * j + 1 - g.pw < g.W ? xr[2 * j + 1 - g.pw] : 0.f;
        deinterleave2(xr + 2 * j0 - g.pw, j1 - j0, d0 + j0, d1 + j0);
        for (int64_t j = j1; j < Wv; j++) d0[j] = 2 * j - g.pw < g.W ? xr[2 * j - g.pw] : 0.f, d1[j] = 2 * j + 1 - g.pw < g.W ? xr[2 * j + 1 - g.pw] : 0.f;
        continue;
      }
      if (pads) {
        std::fill(pr, pr + lo, 0.f);
        std::fill(pr + lo + n_in, pr + Wp, 0.f);
      }
      std::memcpy(pr + lo, xr, n_in * sizeof(float));
      if (s > 2) {
        for (int64_t q = 0; q < s; q++)
          for (int64_t j = 0; j < Wv; j++) ph0[q * R * Wv + j] = pr[q + s * j];
      }
    }
  if (pads) std::fill(buf.data() + used, buf.data() + used + slack, 0.f), memcpy(last, key, sizeof key);
  return buf.data();
}

// The patch-row offsets off[k] of a tile of rt output rows (see above), unless off holds them
// already (*rt_of, the rt it was computed for, equals rt): the same for every tile of a chunk but
// the last, shorter one.
const int32_t *tile_offsets(const Geom &g, const Implicit &im, int64_t rt, std::vector<int32_t> &off, int64_t *rt_of) {
  if (*rt_of == rt) return off.data();
  const int64_t s = g.sw, R = im.rows(g, rt);
  off.resize(g.K);
  for (int64_t k = 0, c = 0, ky = 0, kx = 0; k < g.K; k++) {
    int64_t t = kx * g.dw;
    off[k] = (int32_t)(((c * s + t % s) * R + ky * g.dh) * im.Wv + t / s);
    if (++kx == g.kw) {
      kx = 0;
      if (++ky == g.kh) ky = 0, c++;
    }
  }
  *rt_of = rt;
  return off.data();
}

// y's rows [oy0, oy0 + rt) of `m` output channels from o0 (row stride P) from a tile's result acc
// (row `ld` floats per channel, output row r at im.row_at(r)) + bias[o] (NULL: none) in the copy
// (bias_act_copy), then act: a piecewise-linear one in the copy too, another on each channel's
// rows while they are in cache.
void copy_rows(const Geom &g, const Implicit &im, const float *acc, int64_t ld, int64_t m, int64_t rt, float *yt, const float *bias,
               const Act &act) {
  for (int64_t o = 0; o < m; o++) {
    float *yo = yt + o * g.P;
    const float *ao = acc + o * ld;
    const float bo = bias ? bias[o] : 0.f;
    const bool linear = bias_act_copy(act, bo, ao, yo, g.OW);  // a piecewise-linear act in the copy
    const Act in_copy = linear ? act : Act{};
    if (!linear) bias_act_copy(in_copy, bo, ao, yo, g.OW);
    for (int64_t r = 1; r < rt; r++) bias_act_copy(in_copy, bo, ao + im.row_at(g, r, rt), yo + r * g.OW, g.OW);
    if (!linear) apply_act(act, yo, rt * g.OW);
  }
}

// The max over each ph x pw window of the ph rows at src (row stride W): dst[j] for j < PW, window
// j at columns [j pw, j pw + pw); max as kernel_pool.cpp takes it (from -inf, v replaces the max
// only when it compares greater, rows then columns). Windows 2 wide 16 at a time (each row's 32
// columns split into even and odd ones by shuffles).
void max_pool_rows(const float *src, int64_t W, int64_t ph, int64_t pw, int64_t PW, float *dst) {
  int64_t j = 0;
  if (pw == 2)
    with_lanes([&](auto *lane) __attribute__((always_inline)) {
      using V = std::remove_pointer_t<decltype(lane)>;
      for (; j + lanes<V> <= PW; j += lanes<V>) {
        V m = V{} - std::numeric_limits<float>::infinity();
        for (int64_t i = 0; i < ph; i++) {
          V ev, od;
          deinterleave(src + i * W + 2 * j, &ev, &od);
          m = m < ev ? ev : m;
          m = m < od ? od : m;
        }
        std::memcpy(dst + j, &m, sizeof m);
      }
    });
  for (; j < PW; j++) {
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < ph; i++)
      for (int64_t t = 0; t < pw; t++) {
        float v = src[i * W + j * pw + t];
        m = m < v ? v : m;
      }
    dst[j] = m;
  }
}

// copy_rows followed by a max pool of ph x pw windows (strides ph, pw): the tile's rows from oy0
// (a multiple of ph) pooled into yp (channel o0's pooled plane [OH / ph, OW / pw]), ph rows at a
// time copied (copy_rows) into a row buffer, so the convolution's rows are never written to y.
void copy_rows_max_pool(const Geom &g, const Implicit &im, const float *acc, int64_t ld, int64_t m, int64_t oy0, int64_t rt,
                        float *yp, const float *bias, const Act &act, int64_t ph, int64_t pw) {
  const int64_t PH = g.OH / ph, PW = g.OW / pw, q1 = std::min(PH, (oy0 + rt) / ph);
  thread_local std::vector<float> rows;
  if ((int64_t)rows.size() < ph * g.OW) rows.resize(ph * g.OW);
  for (int64_t o = 0; o < m; o++)
    for (int64_t q = oy0 / ph; q < q1; q++) { /* row_at(r) is linear in r: the window's rows start at row q ph - oy0 */
      copy_rows(g, im, acc + o * ld + im.row_at(g, q * ph - oy0, rt), ld, 1, ph, rows.data(), bias ? bias + o : nullptr, act);
      max_pool_rows(rows.data(), g.OW, ph, pw, PW, yp + o * PH * PW + q * PW);
    }
}

// ph x pw > 1: y is the max pool of the convolution (copy_rows_max_pool), [N, Co, OH / ph, OW / pw],
// im's tiles starting at multiples of ph rows.
void implicit_conv(const Geom &g, const Implicit &im, const float *x, const float *w, const float *b, const Act &act,
                   float *y, int64_t ph = 1, int64_t pw = 1) {
  int64_t groups = g.Co / g.og, items = g.N * groups;
  parallel_for(items * im.mb * im.nb, im.grain, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> acc;
    thread_local std::vector<int32_t> offs;
    int64_t rt_of = -1;
    for (int64_t i = t0; i < t1; i++) {
      int64_t item = i / (im.mb * im.nb), m0 = i / im.nb % im.mb * im.bm, oy0 = i % im.nb * im.rt;
      int64_t n = item / groups, grp = item % groups, m1 = std::min(g.og, m0 + im.bm), rt = std::min(g.OH - oy0, im.rt);
      if (m0 >= m1 || rt <= 0) continue;
      const float *buf = tile_buffer(g, im, x + (n * g.C + grp * g.cg) * g.H * g.W, oy0, rt);
      const int32_t *off = tile_offsets(g, im, rt, offs, &rt_of);
      const int64_t nv = im.span_nv(g, rt), ld = nv * im.spans(rt), o0 = grp * g.og + m0;
      if ((int64_t)acc.size() < (m1 - m0) * ld) acc.resize((m1 - m0) * ld);
      for (int64_t sp = 0; sp < im.spans(rt); sp++)
        gemm_block_offsets(m1 - m0, nv, g.K, w + o0 * g.K, g.K, buf + sp * g.sh * im.Wv, off, acc.data() + sp * nv, ld);
      if (ph * pw > 1) {
        copy_rows_max_pool(g, im, acc.data(), ld, m1 - m0, oy0, rt, y + (n * g.Co + o0) * (g.OH / ph) * (g.OW / pw),
                           b ? b + o0 : nullptr, act, ph, pw);
        continue;
      }
      float *yt = y + (n * g.Co + o0) * g.P + oy0 * g.OW;
      copy_rows(g, im, acc.data(), ld, m1 - m0, rt, yt, b ? b + o0 : nullptr, act);
    }
  });
}

// The direct kernel (few input channels per group: depthwise convolutions, and those over 1-4
// channels with few outputs) on the same tiles: each output channel o of the group sums its taps
// over each span in blocks of 4 x 16 (then 16) columns, bias + sum_k w[o, k] buf[off[k] + v],
// accumulated in vector registers (4 independent multiply-add chains: one alone waits out each
// one's latency), stored n columns at dst (a span of one output row: straight into y; else the
// tile's result, copied to y), then the activation. The taps are nrun runs of run_len, run i from
// k = i * run_stride: a span of one output row skips the kernel rows that fall in the padding.
// A row narrower than a vector wastes only its dropped columns (one span per tile), and no tap
// needs an edge test.
struct Taps {
  int64_t nrun, run_len, run_stride;
};

void direct_blocks(int64_t n, Taps t, const float *src, const int32_t *off, const float *w, float bias, float *dst) {
  with_lanes([&](auto *lane) __attribute__((always_inline)) {
    using V = std::remove_pointer_t<decltype(lane)>;
    constexpr int L = lanes<V>, J = 64 / L;  // 64 outputs a block, J vectors
    int64_t v = 0;
    for (; v + 64 <= n; v += 64) {
      V a[J];
      for (int j = 0; j < J; j++) a[j] = V{} + bias;
      for (int64_t i = 0; i < t.nrun; i++)
        for (int64_t k = i * t.run_stride, e = k + t.run_len; k < e; k++) {
          const float *sk = src + off[k] + v, wk = w[k];
          for (int j = 0; j < J; j++) {
            V l;
            std::memcpy(&l, sk + j * L, sizeof l);
            a[j] += wk * l;
          }
        }
      std::memcpy(dst + v, a, sizeof a);
    }
    for (; v < n; v += L) {
      V a = V{} + bias;
      for (int64_t i = 0; i < t.nrun; i++)
        for (int64_t k = i * t.run_stride, e = k + t.run_len; k < e; k++) {
          V l;
          std::memcpy(&l, src + off[k] + v, sizeof l);
          a += w[k] * l;
        }
      std::memcpy(dst + v, &a, std::min<int64_t>(L, n - v) * sizeof(float));
    }
  });
}

void direct_conv(const Geom &g, const float *x, const float *w, const float *b, const Act &act, float *y) {
  Implicit im{};
  // a span per output row also where the vertical padding is a large part of the taps (short maps)
  im.Wv = phase_width(g), im.per_row = g.sh > 1 || g.OH < 2 * g.kh;
  int64_t groups = g.Co / g.og, items = g.N * groups, khw = g.kh * g.kw;
  plan_rows(g, &im, (int64_t)64 << 10, std::max<int64_t>(1, (4 * num_threads() + items - 1) / std::max<int64_t>(items, 1)));
  int64_t grain = std::max<int64_t>(1, ((int64_t)1 << 16) / std::max<int64_t>(1, g.og * g.K * im.rt * g.OW));
  parallel_for(items * im.nb, grain, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> acc;
    thread_local std::vector<int32_t> offs;
    int64_t rt_of = -1;
    for (int64_t i = t0; i < t1; i++) {
      int64_t item = i / im.nb, oy0 = i % im.nb * im.rt, rt = std::min(g.OH - oy0, im.rt), n = item / groups, grp = item % groups;
      const float *buf = tile_buffer(g, im, x + (n * g.C + grp * g.cg) * g.H * g.W, oy0, rt);
      const int32_t *off = tile_offsets(g, im, rt, offs, &rt_of);
      const int64_t nv = im.span_nv(g, rt), spans = im.spans(rt);
      if (!im.per_row && (int64_t)acc.size() < nv) acc.resize(nv);
      for (int64_t o = grp * g.og; o < (grp + 1) * g.og; o++) {
        float *yo = y + (n * g.Co + o) * g.P + oy0 * g.OW, bias = b ? b[o] : 0.f;
        for (int64_t sp = 0; sp < spans; sp++) {
          Taps t{g.cg, g.K / std::max<int64_t>(g.cg, 1), khw};
          if (im.per_row) {  // kernel rows ky in [k0, k1) read input rows inside the input
            int64_t iy = (oy0 + sp) * g.sh - g.ph, k0 = std::min(g.kh, ceil_div(-iy, g.dh));
            int64_t k1 = std::max(k0, std::min(g.kh, ceil_div(g.H - iy, g.dh)));
            t.run_len = (k1 - k0) * g.kw, off += k0 * g.kw;
            direct_blocks(g.OW, t, buf + sp * g.sh * im.Wv, off, w + o * g.K + k0 * g.kw, bias, yo + sp * g.OW);
            off -= k0 * g.kw;
          } else {
            direct_blocks(nv, t, buf, off, w + o * g.K, bias, acc.data());
          }
        }
        if (!im.per_row)
          copy_rows(g, im, acc.data(), nv, 1, rt, yo, nullptr, act);
        else
          apply_act(act, yo, rt * g.OW);
      }
    }
  });
}

// Convolutions with at most kDotPositions output positions per image (1D ones over a few frames,
// the last layers of a small map), where the GEMM's 16-column panels would compute 16 columns for
// each one needed: per (image, group) the P patches are written as rows patch[p][k] (k = (c, ky,
// kx), zeros in the padding), then each output channel's weight row is read once for all of them,
// y[o, p] = w[o, :] . patch[p] (8-wide partial sums). Blocks of output channels on the pool.
constexpr int64_t kDotPositions = 4;  // dot_rows's cases

// P positions as a constant: two 8-wide accumulators per position, in registers (inlined into
// dot_rows's clones).
template <int P>
[[gnu::always_inline]] inline void dot_rows_p(const float *w, const float *patches, int64_t K, int64_t rows, float *y, int64_t ldy) {
  for (int64_t o = 0; o < rows; o++, w += K, y += ldy) {
    v8 acc[P][2] = {};
    int64_t k = 0;
    for (; k + 16 <= K; k += 16)
      for (int h = 0; h < 2; h++) {
        v8 wv, pv;
        std::memcpy(&wv, w + k + 8 * h, sizeof wv);
        for (int p = 0; p < P; p++) {
          std::memcpy(&pv, patches + p * K + k + 8 * h, sizeof pv);
          acc[p][h] += wv * pv;
        }
      }
    for (int p = 0; p < P; p++) {
      v8 a = acc[p][0] + acc[p][1];
      float sum = 0;
      for (int j = 0; j < 8; j++) sum += a[j];
      for (int64_t kk = k; kk < K; kk++) sum += w[kk] * patches[p * K + kk];
      y[p] = sum;
    }
  }
}

RLX_KERNEL_CLONES_512
void dot_rows(const float *w, const float *patches, int64_t K, int64_t P, int64_t rows, float *y, int64_t ldy) {
  switch (P) {
    case 1: return dot_rows_p<1>(w, patches, K, rows, y, ldy);
    case 2: return dot_rows_p<2>(w, patches, K, rows, y, ldy);
    case 3: return dot_rows_p<3>(w, patches, K, rows, y, ldy);
    default: return dot_rows_p<4>(w, patches, K, rows, y, ldy);
  }
}

void dot_conv(const Geom &g, const float *x, const float *w, const float *b, const Act &act, float *y) {
  int64_t groups = g.Co / g.og, items = g.N * groups, bm = 32, mb = (g.og + bm - 1) / bm;
  int64_t grain = std::max<int64_t>(1, ((int64_t)1 << 18) / std::max<int64_t>(1, bm * g.K * g.P));
  parallel_for(items * mb, grain, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> patches;
    if ((int64_t)patches.size() < g.P * g.K) patches.resize(g.P * g.K);
    int64_t built = -1;
    for (int64_t i = t0; i < t1; i++) {
      int64_t item = i / mb, m0 = i % mb * bm, rows = std::min(g.og - m0, bm), n = item / groups, grp = item % groups;
      if (item != built) {  // the patches of this image's group (taps in the padding are zeros)
        const float *xg = x + (n * g.C + grp * g.cg) * g.H * g.W;
        float *pt = patches.data();
        for (int64_t p = 0; p < g.P; p++) {
          int64_t oy = p / g.OW, ox = p % g.OW;
          for (int64_t c = 0; c < g.cg; c++)
            for (int64_t ky = 0; ky < g.kh; ky++) {
              int64_t iy = (oy * g.sh + ky * g.dh) - g.ph;  // <= the padded extent: no overflow (see geom)
              for (int64_t kx = 0; kx < g.kw; kx++) {
                int64_t ix = (ox * g.sw + kx * g.dw) - g.pw;
                *pt++ = iy >= 0 && iy < g.H && ix >= 0 && ix < g.W ? xg[(c * g.H + iy) * g.W + ix] : 0.f;
              }
            }
        }
        built = item;
      }
      int64_t o0 = grp * g.og + m0;
      float *yt = y + (n * g.Co + o0) * g.P;
      dot_rows(w + o0 * g.K, patches.data(), g.K, g.P, rows, yt, g.P);
      epilogue(yt, g.P, rows, g.P, b ? b + o0 : nullptr, nullptr, act);
    }
  });
}

// The GEMM for a convolution that takes neither the implicit GEMM (conv decides) nor the direct
// loop: dot products for at most kDotPositions positions, else patches.
void gemm_conv(const Geom &g, const float *x, const float *w, const float *b, const Act &act, float *y) {
  if (g.P <= kDotPositions) return dot_conv(g, x, w, b, act, y);
  int64_t groups = g.Co / g.og, items = g.N * groups;
  // More filters than positions (the last stages of a CNN: ResNet-50's 512 -> 512 3x3 stride 2
  // convolution, 49 positions, K = 4608, 9.4 MB of weights): tiles of at most pack_columns(K)
  // columns (16 here) would read all the weights from memory once per column tile (6.3 ms a call
  // on one thread, 18 GMAC/s). Instead every image's patches are built once, all positions, into
  // panels shared by the threads, which then split the filters: the weights are read once.
  const int64_t ps_all = panel_stride(g.K), np = (g.P + NR - 1) / NR;
  if (g.og > g.P && items * np * ps_all <= ((int64_t)1 << 22)) {  // at most 16 MB of patches
    std::vector<float> panels(items * np * ps_all);
    parallel_for(items * np, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t i = t0; i < t1; i++) {
        int64_t item = i / np, q = i % np, n = item / groups, grp = item % groups;
        const float *xg = x + (n * g.C + grp * g.cg) * g.H * g.W;
        float *panel = panels.data() + (item * np + q) * ps_all;
        if (g.unit)  // the input's rows as they are (im2col_panels' segments: 2.4 GB/s on 14 x 14 maps)
          pack_b(false, g.K, xg, g.P, q * NR, std::min(g.P, q * NR + NR), panel);
        else
          im2col_panels(g, xg, q * NR, std::min(NR, g.P - q * NR), x + g.N * g.C * g.H * g.W, panel);
      }
    });
    Tiles t = tiles(items, g.og, g.P, g.K, np * NR);
    const int64_t bm = (g.og + t.mb * t.nb - 1) / (t.mb * t.nb), mb = (g.og + bm - 1) / bm;  // column tiles as row tiles
    parallel_for(items * mb, std::max<int64_t>(1, ((int64_t)1 << 17) / std::max<int64_t>(1, bm * g.P * g.K)),
                 [&](int64_t t0, int64_t t1) {
                   for (int64_t i = t0; i < t1; i++) {
                     int64_t item = i / mb, m0 = i % mb * bm, m1 = std::min(g.og, m0 + bm), grp = item % groups;
                     int64_t o0 = grp * g.og + m0;
                     float *yt = y + (item / groups * g.Co + o0) * g.P;
                     gemm_block(false, m1 - m0, g.P, g.K, w + o0 * g.K, g.K, panels.data() + item * np * ps_all, ps_all, yt, g.P);
                     epilogue(yt, g.P, m1 - m0, g.P, b ? b + o0 : nullptr, nullptr, act);
                   }
                 });
    return;
  }
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

// Whether the convolution takes the implicit GEMM (im: its plan, tiles starting at multiples of
// row_multiple rows): RlxGemmConv's (gemm) with more than kDotPositions positions, and a first
// layer over 1-4 input channels with 8 or more output channels per group (the GEMM without patches
// reads each input row once for every output channel of a tile, where the direct loop reads it
// once per output channel: bench_kernels.py's stems 1.8-2.7x faster), where rows are wide enough.
bool takes_implicit(const Geom &g, bool gemm, Implicit *im, int64_t row_multiple = 1) {
  return g.K && (gemm ? g.P > kDotPositions : g.og >= 8) && implicit_plan(g, im, row_multiple);
}

// The convolution by the algorithm for its geometry (see the top of the file), on the pool.
// Whether the GEMM convolution runs by Winograd's F(2x2, 3x3), given the filters' transform U
// (NULL: none).
bool takes_winograd(const Geom &g, bool gemm, const float *U) {
  return U && gemm && !g.column && winograd_applies(g.C, g.Co, g.C / g.cg, g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, g.OH, g.OW);
}

// U: the filters' Winograd transform (NULL: none), used where takes_winograd.
void conv(const Geom &g, const float *x, const float *w, const float *b, const Act &act, bool gemm, float *y, const float *U = nullptr) {
  if (takes_winograd(g, gemm, U)) return winograd_conv(g.N, g.C, g.H, g.W, g.Co, g.ph, g.pw, g.OH, g.OW, x, U, b, act, y);
  Implicit im;
  if (takes_implicit(g, gemm, &im)) return implicit_conv(g, im, x, w, b, act, y);
  // without patch rows (no input channels) the direct loop writes the bias, then the activation
  if (gemm && g.K) return gemm_conv(g, x, w, b, act, y);
  im.Wv = phase_width(g);  // padded rows too wide for a tile's buffer: the GEMM with patches
  if (g.K && !tile_fits(g, im)) return gemm_conv(g, x, w, b, act, y);
  direct_conv(g, x, w, b, act, y);
}

// The convolution followed by a max pool of ph x pw windows at strides ph, pw without pads (ONNX
// MaxPool, floor mode: the last OH % ph rows and OW % pw columns are in no window): y [N, Co,
// OH / ph, OW / pw]. Where conv takes the implicit GEMM, each tile's rows are pooled as they
// leave its result (DNSMOS P.808's first convolution wrote 13.8 MB that its MaxPool read back for
// 3.5 MB), and Winograd's output transform pools 2 x 2 windows (its tiles) as it forms them; the
// other algorithms write the convolution to a buffer, pooled from there.
void conv_max_pool(const Geom &g, const float *x, const float *w, const float *b, const Act &act, bool gemm, int64_t ph,
                   int64_t pw, float *y, const float *U) {
  Implicit im;
  if (takes_winograd(g, gemm, U)) {
    if (ph == 2 && pw == 2) return winograd_conv(g.N, g.C, g.H, g.W, g.Co, g.ph, g.pw, g.OH, g.OW, x, U, b, act, y, true);
  } else if (takes_implicit(g, gemm, &im, ph)) {
    return implicit_conv(g, im, x, w, b, act, y, ph, pw);
  }
  std::vector<float> full((size_t)(g.N * g.Co * g.P));
  conv(g, x, w, b, act, gemm, full.data(), U);
  const int64_t PH = g.OH / ph, PW = g.OW / pw;
  const float *f = full.data();
  parallel_for(g.N * g.Co * PH, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, ph * g.OW)), [=](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) max_pool_rows(f + r / PH * g.P + r % PH * ph * g.OW, g.OW, ph, pw, PW, y + r * PW);
  });
}

class Conv2d : public CpuKernel {
 public:
  Conv2d(mx::Stream s, const int64_t *st, const int64_t *pad, const int64_t *dil, int64_t group, Act act, bool gemm, bool bias,
         bool wino, int64_t ph = 1, int64_t pw = 1, bool residual = false)
      : CpuKernel(s), group_(group), act_(act), gemm_(gemm), bias_(bias), wino_(wino), residual_(residual), pool_{ph, pw} {
    for (int i = 0; i < 2; i++) s_[i] = st[i], d_[i] = dil[i];
    for (int i = 0; i < 4; i++) p_[i] = pad[i];
  }
  // inputs: x [N,C,H,W], w [Co,C/group,kh,kw], optional b [Co]; all float32, any strides (see
  // dense: no contiguous node in front of a traced operand in compiled mode). A 1D
  // convolution's x [N,C,L] and w [Co,C/group,k] (same memory as height 1) give y [N,Co,OL]: no
  // reshape nodes around it. With a max pool (with_max_pool) out is the pooled convolution; with
  // a residual (with_epilogue: a last input r of out's shape, float32, any strides) out is
  // act(conv + b + r).
  void eval_cpu(const std::vector<mx::array> &in, mx::array &out) override {
    Geom g = geom(in);
    auto &enc = begin(in, out);
    float *y = out.data<float>();
    if (out.size() == 0) return;
    size_t n_in = in.size() - residual_;
    Strided xs = strided(in[0]), ws = strided(in[1]), bs = bias_ ? strided(in[2]) : Strided{};
    Strided us = wino_ ? strided(in[n_in - 1]) : Strided{}, rs = residual_ ? strided(in.back()) : Strided{};
    int64_t rows = g.N * g.Co, P = (int64_t)out.size() / rows;
    enc.dispatch([g, xs, ws, bs, us, rs, y, rows, P, act = act_, gemm = gemm_, ph = pool_[0], pw = pool_[1]]() {
      thread_local std::vector<uint8_t> buf[5];
      const float *x = static_cast<const float *>(dense(xs, buf[0])), *w = static_cast<const float *>(dense(ws, buf[1]));
      const float *b = bs.p ? static_cast<const float *>(dense(bs, buf[2])) : nullptr;
      const float *U = us.p ? static_cast<const float *>(dense(us, buf[3])) : nullptr;
      if (ph * pw > 1) return conv_max_pool(g, x, w, b, act, gemm, ph, pw, y, U);
      if (!rs.p) return conv(g, x, w, b, act, gemm, y, U);
      conv(g, x, w, b, Act{}, gemm, y, U);
      const float *r = static_cast<const float *>(dense(rs, buf[4]));
      // + r, then act, one channel's rows at a time (in L1 between the two)
      parallel_for(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(P, 1)), [=](int64_t r0, int64_t r1) {
        for (int64_t i = r0; i < r1; i++) {
          float *yi = y + i * P;
          const float *ri = r + i * P;
          for (int64_t j = 0; j < P; j++) yi[j] += ri[j];
          if (act.kind) apply_act(act, yi, P);
        }
      });
    });
  }
  const char *name() const override { return gemm_ ? "RlxGemmConv" : "RlxDirectConv"; }
  bool is_equivalent(const mx::Primitive &other) const override {
    auto &o = static_cast<const Conv2d &>(other);
    return group_ == o.group_ && gemm_ == o.gemm_ && bias_ == o.bias_ && wino_ == o.wino_ && residual_ == o.residual_ &&
           act_.kind == o.act_.kind &&
           act_.a == o.act_.a && act_.b == o.act_.b &&
           !memcmp(s_, o.s_, sizeof s_) && !memcmp(p_, o.p_, sizeof p_) && !memcmp(d_, o.d_, sizeof d_) &&
           !memcmp(pool_, o.pool_, sizeof pool_);
  }
  std::vector<mx::Shape> output_shapes(const std::vector<mx::array> &in) override {
    Geom g = geom(in);
    if (g.column) std::swap(g.OH, g.OW);
    if (in[0].ndim() == 3) return {{(int)g.N, (int)g.Co, (int)(g.OW / pool_[1])}};
    return {{(int)g.N, (int)g.Co, (int)(g.OH / pool_[0]), (int)(g.OW / pool_[1])}};
  }
  // y's convolution followed by a max pool of ph x pw windows at strides ph, pw, no pads, floor
  // mode (a new primitive over y's inputs), or no value where y is not this kernel's (unpooled)
  // float32 result, the window is 1 x 1, or a 1D convolution run as a row (column geometry) or
  // one with fewer than ph x pw outputs.
  static std::optional<mx::array> with_max_pool(const mx::array &y, int64_t ph, int64_t pw) {
    if (!y.has_primitive() || y.dtype() != mx::float32 || ph < 1 || pw < 1 || ph * pw == 1) return std::nullopt;
    auto *p = dynamic_cast<Conv2d *>(&y.primitive());
    if (!p || p->pool_[0] * p->pool_[1] > 1 || p->residual_) return std::nullopt;
    Geom g = p->geom(y.inputs());
    if (g.column || g.OH < ph || g.OW < pw || (y.ndim() == 3 && ph > 1)) return std::nullopt;
    auto prim = std::make_shared<Conv2d>(p->stream(), p->s_, p->p_, p->d_, p->group_, p->act_, p->gemm_, p->bias_, p->wino_, ph, pw);
    mx::Shape shape = prim->output_shapes(y.inputs())[0];
    return mx::array(std::move(shape), mx::float32, std::move(prim), y.inputs());
  }
  // act(y + r) as one convolution (a new primitive over y's inputs and r): r (if given) added
  // before the activation, then act (if not none); no value where y is not this kernel's float32,
  // unpooled result without an activation, r is given but y already has one or r's dtype or shape
  // differ from y's, or neither is given.
  static std::optional<mx::array> with_epilogue(const mx::array &y, const mx::array *r, const Act &act) {
    if (!y.has_primitive() || y.dtype() != mx::float32 || (!r && !act.kind)) return std::nullopt;
    auto *p = dynamic_cast<Conv2d *>(&y.primitive());
    if (!p || p->pool_[0] * p->pool_[1] > 1 || p->act_.kind || (r && p->residual_)) return std::nullopt;
    if (r && (r->dtype() != mx::float32 || r->shape() != y.shape())) return std::nullopt;
    std::vector<mx::array> in = y.inputs();
    if (r) in.push_back(*r);
    auto prim = std::make_shared<Conv2d>(p->stream(), p->s_, p->p_, p->d_, p->group_, act, p->gemm_, p->bias_, p->wino_, 1, 1,
                                         p->residual_ || r);
    return mx::array(y.shape(), mx::float32, std::move(prim), std::move(in));
  }

 private:
  Geom geom(const std::vector<mx::array> &in) const {
    const auto &xs = in[0].shape(), &ws = in[1].shape();
    const bool one = xs.size() == 3;  // 1D: height 1
    Geom g{};
    g.N = xs[0], g.C = xs[1], g.H = one ? 1 : xs[2], g.W = xs[one ? 2 : 3];
    g.Co = ws[0], g.cg = ws[1], g.kh = one ? 1 : ws[2], g.kw = ws[one ? 2 : 3], g.og = g.Co / group_;
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
    // A stride along an axis with one output, or a dilation along an axis with one tap, changes
    // nothing: 1 there keeps the index arithmetic far from int64's limits (fuzz_graph's strides of
    // INT64_MAX).
    if (g.OH == 1) g.sh = 1;
    if (g.OW == 1) g.sw = 1;
    if (g.kh == 1) g.dh = 1;
    if (g.kw == 1) g.dw = 1;
    return g;
  }
  int64_t s_[2], p_[4], d_[2], group_;
  Act act_;
  bool gemm_, bias_, wino_, residual_;  // inputs x, w, then b if bias_, U if wino_, r if residual_
  int64_t pool_[2];  // a max pool's window (= its strides) applied to the result; 1 x 1: none
};

}  // namespace
}  // namespace rlx_kernels

using rlx_kernels::Act;

namespace {

rlx_mx_arr *conv2d(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *w, rlx_mx_arr *b, rlx_mx_arr *wino, const int64_t *strides, const int64_t *pads,
                   const int64_t *dilations, int64_t group, rlx_mx_act act, bool gemm) {
  SHIM_OP(c, x && w, ([&] {
            mx::array xa = A(x), wa = A(w);
            mx::Dtype dt = xa.dtype();
            if (xa.ndim() != wa.ndim() || (xa.ndim() != 4 && xa.ndim() != 3))
              throw std::invalid_argument("conv2d kernels take x and w of rank 4 (2D) or 3 (1D: height 1, strides[0] and dilations[0] 1, pads[0] and pads[2] 0)");
            if (xa.ndim() == 3 && (strides[0] != 1 || dilations[0] != 1 || pads[0] || pads[2]))
              throw std::invalid_argument("a 1D convolution (rank-3 x and w) has strides[0] 1, dilations[0] 1 and no pads on the height axis");
            std::vector<mx::array> in = {mx::astype(xa, mx::float32, c->stream), mx::astype(wa, mx::float32, c->stream)};
            if (b) in.push_back(mx::astype(A(b), mx::float32, c->stream));
            if (wino) in.push_back(A(wino));
            auto prim = std::make_shared<rlx_kernels::Conv2d>(c->stream, strides, pads, dilations, group,
                                                              Act{act.kind, act.a, act.b}, gemm, b != nullptr, wino != nullptr);
            mx::Shape shape = prim->output_shapes(in)[0];
            mx::array y(std::move(shape), mx::float32, std::move(prim), std::move(in));
            return dt == mx::float32 ? y : mx::astype(y, dt, c->stream);
          }()));
}

}  // namespace

extern "C" rlx_mx_arr *rlx_mx_direct_conv2d(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *w, rlx_mx_arr *b, const int64_t *strides,
                                            const int64_t *pads, const int64_t *dilations, int64_t group, rlx_mx_act act) {
  return conv2d(c, x, w, b, nullptr, strides, pads, dilations, group, act, false);
}

extern "C" rlx_mx_arr *rlx_mx_gemm_conv2d(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *w, rlx_mx_arr *b, rlx_mx_arr *wino,
                                          const int64_t *strides, const int64_t *pads, const int64_t *dilations, int64_t group,
                                          rlx_mx_act act) {
  return conv2d(c, x, w, b, wino, strides, pads, dilations, group, act, true);
}

extern "C" rlx_mx_arr *rlx_mx_conv_epilogue(rlx_mx *c, rlx_mx_arr *y, rlx_mx_arr *r, rlx_mx_act act) {
  if (!c || c->err || !y) return nullptr;
  try {
    std::optional<mx::array> ra;
    if (r) ra = A(r);
    std::optional<mx::array> p = rlx_kernels::Conv2d::with_epilogue(A(y), ra ? &*ra : nullptr, Act{act.kind, act.a, act.b});
    return p ? c->put(*p) : nullptr;
  } catch (...) {
    c->fail_current();
    return nullptr;
  }
}

extern "C" rlx_mx_arr *rlx_mx_conv_max_pool(rlx_mx *c, rlx_mx_arr *y, const int64_t *window) {
  if (!c || c->err || !y || !window) return nullptr;
  try {
    std::optional<mx::array> p = rlx_kernels::Conv2d::with_max_pool(A(y), window[0], window[1]);
    return p ? c->put(*p) : nullptr;
  } catch (...) {
    c->fail_current();
    return nullptr;
  }
}
