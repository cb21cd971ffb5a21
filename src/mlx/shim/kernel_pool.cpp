// kernel_pool.cpp: direct channels-first 2D pooling (max, min, sum, mean) on float32.
//
// MLX has no pooling op on the CPU; composed from a padded copy, a strided window view and a
// reduction it costs 20-150x ONNX Runtime. Here each output y[n, c, oy, ox] reduces the input
// positions (oy*sh - ph + ky*dh, ox*sw - pw + kx*dw) inside the input (ONNX MaxPool /
// AveragePool: pads never contribute a value). mean divides by the window's positions inside
// the input, or with count_include_pad by those inside the padded extent
// [-pad_begin, size + pad_end) (ceil_mode's overhang past it never counts). Output sizes follow
// ONNX's formula with ceil_mode, a last window starting past the input and begin pad dropped.
// Every reduction here is separable: an output row first reduces its window's input rows into
// one row (8-wide vectors), then each output its window's columns of that row; a window's count
// is its rows' times its columns'. Rows of (n, c) planes are split over the kernel thread pool.
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "mlx/backend/cpu/encoder.h"
#include "mlx/shim/kernels.h"

namespace rlx_kernels {
namespace {

struct PoolGeom {
  int kind;  // 0 max, 1 min, 2 sum, 3 mean
  int64_t k[2], s[2], p[4], d[2];
  bool include_pad, ceil_mode;
};

int64_t pool_out(int64_t n, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d, bool ceil_mode) {
  int64_t span = n + pb + pe - d * (k - 1) - 1;
  int64_t o = ceil_mode ? (span + s - 1) / s + 1 : span / s + 1;
  if (ceil_mode && (o - 1) * s >= n + pb) o--;
  return o;
}

constexpr int BLK = 8;
typedef float v8 __attribute__((vector_size(BLK * sizeof(float))));  // GCC/Clang vector extension

// The reductions (K: PoolGeom kind; 2 and 3 sum) on floats and, in place of a function taking
// 32-byte vectors (whose ABI depends on AVX), written out on 8-wide vectors in combine(). max /
// min choose as std::max / std::min do: v replaces acc only when it compares greater / less.
template <int K>
inline float reduce(float acc, float v) {
  return K == 0 ? (acc < v ? v : acc) : K == 1 ? (v < acc ? v : acc) : acc + v;
}
template <int K>
constexpr float neutral() {
  return K == 0 ? -std::numeric_limits<float>::infinity() : K == 1 ? std::numeric_limits<float>::infinity() : 0.f;
}

// acc[i] = reduce(acc[i], v[i]) for i < n.
template <int K>
__attribute__((always_inline)) inline void combine(float *acc, const float *v, int64_t n) {
  int64_t i = 0;
  for (; i + BLK <= n; i += BLK) {
    v8 a, b;
    memcpy(&a, acc + i, sizeof a);
    memcpy(&b, v + i, sizeof b);
    if constexpr (K == 0) a = a < b ? b : a;
    else if constexpr (K == 1) a = b < a ? b : a;
    else a += b;
    memcpy(acc + i, &a, sizeof a);
  }
  for (; i < n; i++) acc[i] = reduce<K>(acc[i], v[i]);
}

// First output whose tap at offset `off` (= k*d - p) is at input index >= 0, and one past the
// last whose index is < n.
inline int64_t first_out(int64_t off, int64_t s) { return off >= 0 ? 0 : (-off + s - 1) / s; }
inline int64_t end_out(int64_t off, int64_t s, int64_t n, int64_t o) {
  int64_t e = n - off <= 0 ? 0 : (n - off - 1) / s + 1;
  return std::min(e, o);
}

// Taps of the window of output o along one axis (input size n, kernel k, stride s, begin pad
// pb, end pad pe, dilation d) inside the input, and inside the padded extent [-pb, n + pe).
inline void taps(int64_t o, int64_t n, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d, int64_t *in, int64_t *pad) {
  *in = *pad = 0;
  for (int64_t j = 0; j < k; j++) {
    int64_t i = o * s - pb + j * d;
    *in += i >= 0 && i < n;
    *pad += i >= -pb && i < n + pe;
  }
}

// One output row, separably: the window's input rows reduced into row[0..W), then each output
// reduces its window's columns of row (one tap offset at a time over the outputs it is inside
// for; with stride 2, 8 outputs from the even lanes of 16 columns). mean divides by the window's
// count: (rows x columns) inside the input, or inside the padded extent with count_include_pad.
template <int K>
__attribute__((always_inline)) inline void pool_row_op(const PoolGeom &g, const float *x, int64_t H, int64_t W, int64_t oy,
                                                       float *y, int64_t OW, float *row) {
  bool any = false;
  for (int64_t ky = 0; ky < g.k[0]; ky++) {
    int64_t iy = oy * g.s[0] - g.p[0] + ky * g.d[0];
    if (iy < 0 || iy >= H) continue;
    if (any) combine<K>(row, x + iy * W, W);
    else memcpy(row, x + iy * W, W * sizeof(float));
    any = true;
  }
  if (!any) std::fill(row, row + W, neutral<K>());
  std::fill(y, y + OW, neutral<K>());
  const int64_t sw = g.s[1];
  for (int64_t kx = 0; kx < g.k[1]; kx++) {
    int64_t off = kx * g.d[1] - g.p[1], b = first_out(off, sw), e = end_out(off, sw, W, OW);
    if (sw == 1) {
      if (e > b) combine<K>(y + b, row + b + off, e - b);
    } else if (sw == 2) {  // the tap's columns of 8 outputs: the even lanes of 16 columns
      int64_t ox = b;
      for (; ox + BLK <= e; ox += BLK) {
        v8 lo, hi, a;
        memcpy(&lo, row + 2 * ox + off, sizeof lo);
        memcpy(&hi, row + 2 * ox + off + BLK, sizeof hi);
        v8 v = __builtin_shufflevector(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14);
        memcpy(&a, y + ox, sizeof a);
        if constexpr (K == 0) a = a < v ? v : a;
        else if constexpr (K == 1) a = v < a ? v : a;
        else a += v;
        memcpy(y + ox, &a, sizeof a);
      }
      for (; ox < e; ox++) y[ox] = reduce<K>(y[ox], row[ox * sw + off]);
    } else {
      for (int64_t ox = b; ox < e; ox++) y[ox] = reduce<K>(y[ox], row[ox * sw + off]);
    }
  }
  if (g.kind != 3) return;
  int64_t cy, cy_pad;
  taps(oy, H, g.k[0], g.s[0], g.p[0], g.p[2], g.d[0], &cy, &cy_pad);
  for (int64_t ox = 0; ox < OW; ox++) {
    int64_t cx, cx_pad;
    taps(ox, W, g.k[1], sw, g.p[1], g.p[3], g.d[1], &cx, &cx_pad);
    y[ox] /= (float)(g.include_pad ? cy_pad * cx_pad : cy * cx);
  }
}

RLX_KERNEL_CLONES
void pool_row(const PoolGeom &g, const float *x, int64_t H, int64_t W, int64_t oy, float *y, int64_t OW, float *row) {
  if (g.kind == 0) return pool_row_op<0>(g, x, H, W, oy, y, OW, row);
  if (g.kind == 1) return pool_row_op<1>(g, x, H, W, oy, y, OW, row);
  pool_row_op<2>(g, x, H, W, oy, y, OW, row);
}

void pool(const PoolGeom &g, const float *x, float *y, int64_t planes, int64_t H, int64_t W, int64_t OH, int64_t OW) {
  int64_t per_row = std::max<int64_t>(1, g.k[0] * W + OW * g.k[1]);
  parallel_for(planes * OH, std::max<int64_t>(1, 16384 / per_row), [&](int64_t r0, int64_t r1) {
    thread_local std::vector<float> row;  // W floats and the one past them a stride-2 tap's last vector reads
    if ((int64_t)row.size() < W + 1) row.resize(W + 1);
    for (int64_t r = r0; r < r1; r++) pool_row(g, x + (r / OH) * H * W, H, W, r % OH, y + r * OW, OW, row.data());
  });
}

class Pool2d : public CpuKernel {
 public:
  Pool2d(mx::Stream s, const PoolGeom &g) : CpuKernel(s), g_(g) {}
  // input: x [N,C,H,W] float32, row-contiguous; or x [N,C,L] (1D: height 1).
  void eval_cpu(const std::vector<mx::array> &in, mx::array &out) override {
    auto &enc = begin(in, out);
    const auto &xs = in[0].shape();
    const bool one = xs.size() == 3;
    int64_t planes = (int64_t)xs[0] * xs[1], H = one ? 1 : xs[2], W = xs.back(), OH = one ? 1 : out.shape()[2], OW = out.shape().back();
    const float *x = in[0].data<float>();
    float *y = out.data<float>();
    enc.dispatch([g = g_, x, y, planes, H, W, OH, OW]() { pool(g, x, y, planes, H, W, OH, OW); });
  }
  const char *name() const override { return "RlxPool2d"; }
  bool is_equivalent(const mx::Primitive &other) const override {
    const PoolGeom &o = static_cast<const Pool2d &>(other).g_;
    return g_.kind == o.kind && g_.include_pad == o.include_pad && g_.ceil_mode == o.ceil_mode && !memcmp(g_.k, o.k, sizeof g_.k) &&
           !memcmp(g_.s, o.s, sizeof g_.s) && !memcmp(g_.p, o.p, sizeof g_.p) && !memcmp(g_.d, o.d, sizeof g_.d);
  }
  std::vector<mx::Shape> output_shapes(const std::vector<mx::array> &in) override {
    const auto &xs = in[0].shape();
    const bool one = xs.size() == 3;  // 1D: height 1
    const int64_t hw[2] = {one ? 1 : xs[2], xs.back()};
    mx::Shape s = {xs[0], xs[1]};
    for (int i = one; i < 2; i++) s.push_back((int)pool_out(hw[i], g_.k[i], g_.s[i], g_.p[i], g_.p[2 + i], g_.d[i], g_.ceil_mode));
    return {s};
  }

 private:
  PoolGeom g_;
};

}  // namespace
}  // namespace rlx_kernels

extern "C" rlx_mx_arr *rlx_mx_pool2d(rlx_mx *c, rlx_mx_arr *x, int kind, const int64_t *kernel, const int64_t *strides,
                                     const int64_t *pads, const int64_t *dilations, bool count_include_pad, bool ceil_mode) {
  SHIM_OP(c, x, ([&] {
            mx::array xa = A(x);
            mx::Dtype dt = xa.dtype();
            if ((xa.ndim() != 4 && xa.ndim() != 3) || kind < 0 || kind > 3) throw std::invalid_argument("pool2d takes a rank-4 (or rank-3: 1D) x and kind 0-3");
            if (xa.ndim() == 3 && (kernel[0] != 1 || strides[0] != 1 || dilations[0] != 1 || pads[0] || pads[2]))
              throw std::invalid_argument("a 1D pool (rank-3 x) has a window, stride and dilation of 1 and no pads on the height axis");
            rlx_kernels::PoolGeom g{};
            g.kind = kind, g.include_pad = count_include_pad, g.ceil_mode = ceil_mode;
            for (int i = 0; i < 2; i++) g.k[i] = kernel[i], g.s[i] = strides[i], g.d[i] = dilations[i];
            for (int i = 0; i < 4; i++) g.p[i] = pads[i];
            std::vector<mx::array> in = {rlx_kernels::row_contiguous(mx::astype(xa, mx::float32, c->stream), c->stream)};
            auto prim = std::make_shared<rlx_kernels::Pool2d>(c->stream, g);
            mx::Shape shape = prim->output_shapes(in)[0];
            mx::array y(std::move(shape), mx::float32, std::move(prim), std::move(in));
            return dt == mx::float32 ? y : mx::astype(y, dt, c->stream);
          }()));
}
