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
// writes it).
// ONNX Runtime's CPU convolutions (MLAS) compute the direct form; the extra rounding of the
// transforms (their coefficients are 0, +-1 and +-1/2: exact) is a few ulps of the sums.
//
// The input transform runs along rows: for tile row ty the four input rows 2 ty - ph + i are each
// split into even and odd columns and combined by B^T (whole rows at once), and B's columns then
// give, for all tx at once, the 16 values of each tile (vectors over tx). The output
// transform reads M the same way, tx contiguous.
#include <algorithm>
#include <cstring>
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

// A convolution's tiles are done in blocks of RB tile rows (RB TW tiles, Tp of them rounded up to
// 16: the row stride of V and M), V and M of a block within ~4 MB.
struct Plan {
  int64_t C, H, W, Co, ph, pw, OH, OW, TH, TW, RB, Tp;
};

// (Cloned, as the other kernels' loops: AVX-512 and AVX2 run these loops' vectors.)
// V's rows for channel c and tile row ty of image x: rows 2 ty - ph + i (zero outside),
// columns 2 tx - pw + j, combined by B^T (rows) and B (columns).
RLX_KERNEL_CLONES_512
void input_rows(const Plan &p, const float *x, int64_t c, int64_t ty, int64_t ty0, float *V) {
  const int64_t TW = p.TW, Wp = 2 * TW + 2;
  thread_local std::vector<float> rows, eo;
  rows.assign(4 * Wp, 0.f);
  eo.resize(16 * (TW + 1));
  for (int i = 0; i < 4; i++) {
    int64_t iy = 2 * ty - p.ph + i;
    if (iy < 0 || iy >= p.H) continue;
    // padded column j holds input column j - pw
    int64_t j0 = std::max<int64_t>(0, p.pw), j1 = std::min(Wp, p.W + p.pw);
    if (j1 > j0) std::memcpy(rows.data() + i * Wp + j0, x + (c * p.H + iy) * p.W + (j0 - p.pw), (j1 - j0) * sizeof(float));
  }
  // the even and odd columns of each row, then B^T over the rows: E_k[t] = R_k[2t], O_k[t] = R_k[2t + 1]
  float *re[4], *ro[4], *E[4], *O[4];
  for (int k = 0; k < 4; k++)
    re[k] = eo.data() + 2 * k * (TW + 1), ro[k] = re[k] + (TW + 1), E[k] = eo.data() + (8 + 2 * k) * (TW + 1), O[k] = E[k] + (TW + 1);
  for (int i = 0; i < 4; i++) {
    const float *r = rows.data() + i * Wp;
    #pragma GCC ivdep /* the arrays do not overlap */
    for (int64_t t = 0; t <= TW; t++) re[i][t] = r[2 * t], ro[i][t] = r[2 * t + 1];
  }
  for (int h = 0; h < 2; h++) {
    float **d = h ? ro : re, **dst = h ? O : E;
    #pragma GCC ivdep /* the arrays do not overlap */
    for (int64_t t = 0; t <= TW; t++) {
      float a = d[0][t], b = d[1][t], cc = d[2][t], dd = d[3][t];
      dst[0][t] = a - cc, dst[1][t] = b + cc, dst[2][t] = cc - b, dst[3][t] = b - dd;
    }
  }
  // B over the columns: tile tx reads columns 2 tx .. 2 tx + 3 = E[tx], O[tx], E[tx + 1], O[tx + 1];
  // V[4 k + j][c][ty TW + tx]
  for (int k = 0; k < 4; k++) {
    const float *e = E[k], *o = O[k];
    float *v0 = V + ((int64_t)(4 * k) * p.C + c) * p.Tp + (ty - ty0) * TW, *v1 = v0 + p.C * p.Tp, *v2 = v1 + p.C * p.Tp, *v3 = v2 + p.C * p.Tp;
    #pragma GCC ivdep /* the arrays do not overlap */
    for (int64_t t = 0; t < TW; t++) {
      v0[t] = e[t] - e[t + 1];
      v1[t] = o[t] + e[t + 1];
      v2[t] = e[t + 1] - o[t];
      v3[t] = o[t] - o[t + 1];
    }
  }
}

// Output channel o's rows 2 ty, 2 ty + 1 of y from M [16][Co][Tp] (A^T m A), + bias, then act.
RLX_KERNEL_CLONES_512
void output_rows(const Plan &p, const float *M, int64_t o, int64_t ty, int64_t ty0, float bias, const Act &act, float *y) {
  const int64_t TW = p.TW;
  thread_local std::vector<float> s;
  s.resize(8 * TW);
  const float *m[16];
  for (int xi = 0; xi < 16; xi++) m[xi] = M + ((int64_t)xi * p.Co + o) * p.Tp + (ty - ty0) * TW;
  // A^T over the rows (xi = 4 i + j): s0_j = m0j + m1j + m2j, s1_j = m1j - m2j - m3j
  for (int j = 0; j < 4; j++) {
    float *s0 = s.data() + j * TW, *s1 = s.data() + (4 + j) * TW;
    const float *a = m[j], *b = m[4 + j], *cc = m[8 + j], *d = m[12 + j];
    #pragma GCC ivdep /* the arrays do not overlap */
    for (int64_t t = 0; t < TW; t++) s0[t] = a[t] + b[t] + cc[t], s1[t] = b[t] - cc[t] - d[t];
  }
  for (int r = 0; r < 2; r++) {
    int64_t oy = 2 * ty + r;
    if (oy >= p.OH) break;
    const float *q0 = s.data() + 4 * r * TW, *q1 = q0 + TW, *q2 = q1 + TW, *q3 = q2 + TW;
    float *yr = y + (o * p.OH + oy) * p.OW;
    int64_t t = 0;
    #pragma GCC ivdep /* the arrays do not overlap */
    for (; 2 * t + 1 < p.OW; t++) yr[2 * t] = q0[t] + q1[t] + q2[t], yr[2 * t + 1] = q1[t] - q2[t] - q3[t];
    if (2 * t < p.OW) yr[2 * t] = q0[t] + q1[t] + q2[t];
    if (!bias_act_copy(act, bias, yr, yr, p.OW)) {
      if (bias != 0.f)
        for (int64_t j = 0; j < p.OW; j++) yr[j] += bias;
      apply_act(act, yr, p.OW);
    }
  }
}

}  // namespace

void winograd_conv(int64_t N, int64_t C, int64_t H, int64_t W, int64_t Co, int64_t ph, int64_t pw, int64_t OH, int64_t OW, const float *x,
                   const float *U, const float *b, const Act &act, float *y) {
  Plan p{C, H, W, Co, ph, pw, OH, OW, (OH + 1) / 2, (OW + 1) / 2, 0, 0};
  p.RB = std::max<int64_t>(1, std::min(p.TH, ((int64_t)1 << 20) / (16 * (C + Co)) / p.TW));
  p.Tp = (p.RB * p.TW + NR - 1) / NR * NR;
  thread_local std::vector<float> Vb, Mb;  // the caller's; the pool's threads reach them through the pointers
  thread_local std::vector<int32_t> offb;
  if ((int64_t)Vb.size() < 16 * C * p.Tp) Vb.resize(16 * C * p.Tp);
  if ((int64_t)Mb.size() < 16 * Co * p.Tp) Mb.resize(16 * Co * p.Tp);
  float *V = Vb.data(), *M = Mb.data();
  offb.resize(C);
  for (int64_t c = 0; c < C; c++) offb[c] = (int32_t)(c * p.Tp);
  const int32_t *off = offb.data();
  for (int64_t n = 0; n < N; n++) {
    const float *xn = x + n * C * H * W;
    float *yn = y + n * Co * OH * OW;
    for (int64_t ty0 = 0; ty0 < p.TH; ty0 += p.RB) {
      const int64_t rb = std::min(p.RB, p.TH - ty0), T = rb * p.TW, Tq = (T + NR - 1) / NR * NR;
      if (Tq > T) /* the columns past T: multiplied and dropped; zeros, not garbage */
        for (int64_t r = 0; r < 16 * C; r++) std::fill(V + r * p.Tp + T, V + r * p.Tp + Tq, 0.f);
      parallel_for(C * rb, std::max<int64_t>(1, 4096 / (16 * p.TW)), [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; i++) input_rows(p, xn, i / rb, ty0 + i % rb, ty0, V);
      });
      Tiles t = tiles(16, Co, Tq, C, (int64_t)1 << 30);
      parallel_for(16 * t.mb * t.nb, t.grain, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; i++) {
          int64_t xi = i / (t.mb * t.nb), m0 = i / t.nb % t.mb * t.bm, c0 = i % t.nb * t.bn;
          int64_t m1 = std::min(Co, m0 + t.bm), c1 = std::min(Tq, c0 + t.bn);
          if (m0 >= m1 || c0 >= c1) continue;
          gemm_block_offsets(m1 - m0, c1 - c0, C, U + (xi * Co + m0) * C, C, V + xi * C * p.Tp + c0, off,
                             M + (xi * Co + m0) * p.Tp + c0, p.Tp);
        }
      });
      parallel_for(Co * rb, std::max<int64_t>(1, 4096 / (16 * p.TW)), [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; i++) {
          int64_t o = i / rb;
          output_rows(p, M, o, ty0 + i % rb, ty0, b ? b[o] : 0.f, act, yn);
        }
      });
    }
  }
}

}  // namespace rlx_kernels

extern "C" bool rlx_mx_winograd_fits(int64_t C, int64_t Co, int64_t group, int64_t kh, int64_t kw, const int64_t *strides,
                                     const int64_t *dilations) {
  // 32 channels (DNSMOS P.808's 32 -> 32 convolutions) took 1.5x the GEMM's time
  return group == 1 && kh == 3 && kw == 3 && strides[0] == 1 && strides[1] == 1 && dilations[0] == 1 && dilations[1] == 1 && C >= 64 &&
         C <= ((int64_t)1 << 14) && Co >= 64;
}

extern "C" rlx_mx_arr *rlx_mx_winograd_weights(rlx_mx *c, rlx_mx_arr *w) {
  SHIM_OP(c, w, ([&] {
            mx::array wa = mx::astype(A(w), mx::float32, c->stream);
            if (wa.ndim() != 4 || wa.shape(2) != 3 || wa.shape(3) != 3)
              throw std::invalid_argument("winograd_weights takes w [Co, C, 3, 3]");
            const float g[12] = {1, 0, 0, .5f, .5f, .5f, .5f, -.5f, .5f, 0, 0, 1};
            mx::array G(g, {4, 3}, mx::float32);
            mx::array u = mx::matmul(mx::matmul(G, wa, c->stream), mx::transpose(G, c->stream), c->stream);  // [Co, C, 4, 4]
            int Co = wa.shape(0), C = wa.shape(1);
            u = mx::reshape(u, {Co, C, 16}, c->stream);
            return mx::contiguous(mx::transpose(u, {2, 0, 1}, c->stream), false, c->stream);  // [16, Co, C]
          }()));
}
