// kernel_pool.cpp: direct channels-first 2D pooling (max, min, sum, mean) on float32.
//
// MLX has no pooling op on the CPU; composed from a padded copy, a strided window view and a
// reduction it costs 20-150x ONNX Runtime. Here each output y[n, c, oy, ox] reduces the input
// positions (oy*sh - ph + ky*dh, ox*sw - pw + kx*dw) inside the input (ONNX MaxPool /
// AveragePool: pads never contribute a value). mean divides by the window's positions inside
// the input, or with count_include_pad by those inside the padded extent
// [-pad_begin, size + pad_end) (ceil_mode's overhang past it never counts). Output sizes follow
// ONNX's formula with ceil_mode, a last window starting past the input and begin pad dropped.
// Rows of (n, c) planes are split over the kernel thread pool.
#include <algorithm>
#include <cstring>
#include <limits>

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

void pool_row(const PoolGeom &g, const float *x, int64_t H, int64_t W, int64_t oy, float *y, int64_t OW) {
  const int64_t kh = g.k[0], kw = g.k[1];
  int64_t y0 = oy * g.s[0] - g.p[0];
  for (int64_t ox = 0; ox < OW; ox++) {
    int64_t x0 = ox * g.s[1] - g.p[1];
    float acc = g.kind == 0 ? -std::numeric_limits<float>::infinity() : g.kind == 1 ? std::numeric_limits<float>::infinity() : 0.f;
    int64_t cnt = 0, cnt_pad = 0;
    for (int64_t ky = 0; ky < kh; ky++) {
      int64_t iy = y0 + ky * g.d[0];
      bool in_y = iy >= 0 && iy < H, pad_y = iy >= -g.p[0] && iy < H + g.p[2];
      for (int64_t kx = 0; kx < kw; kx++) {
        int64_t ix = x0 + kx * g.d[1];
        if (in_y && ix >= 0 && ix < W) {
          float v = x[iy * W + ix];
          acc = g.kind == 0 ? std::max(acc, v) : g.kind == 1 ? std::min(acc, v) : acc + v;
          cnt++;
        } else if (pad_y && ix >= -g.p[1] && ix < W + g.p[3]) {
          cnt_pad++;
        }
      }
    }
    if (g.kind == 3) acc /= (float)(g.include_pad ? cnt + cnt_pad : cnt);
    y[ox] = acc;
  }
}

class Pool2d : public mx::UnaryPrimitive {
 public:
  Pool2d(mx::Stream s, const PoolGeom &g) : mx::UnaryPrimitive(s), g_(g) {}
  // input: x [N,C,H,W] float32, row-contiguous.
  void eval_cpu(const std::vector<mx::array> &in, mx::array &out) override {
    out.set_data(mx::allocator::malloc(out.nbytes()));
    auto &enc = mx::cpu::get_command_encoder(stream());
    enc.set_input_array(in[0]);
    enc.set_output_array(out);
    const auto &xs = in[0].shape();
    int64_t planes = (int64_t)xs[0] * xs[1], H = xs[2], W = xs[3], OH = out.shape()[2], OW = out.shape()[3];
    const float *x = in[0].data<float>();
    float *y = out.data<float>();
    enc.dispatch([g = g_, x, y, planes, H, W, OH, OW]() {
      int64_t per_row = std::max<int64_t>(1, OW * g.k[0] * g.k[1]);
      parallel_for(planes * OH, std::max<int64_t>(1, 16384 / per_row), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; r++) pool_row(g, x + (r / OH) * H * W, H, W, r % OH, y + r * OW, OW);
      });
    });
  }
  void eval_gpu(const std::vector<mx::array> &, mx::array &) override {
    throw std::runtime_error("[rlx Pool2d] has no GPU implementation");
  }
  const char *name() const override { return "RlxPool2d"; }
  bool is_equivalent(const mx::Primitive &other) const override {
    const PoolGeom &o = static_cast<const Pool2d &>(other).g_;
    return g_.kind == o.kind && g_.include_pad == o.include_pad && g_.ceil_mode == o.ceil_mode && !memcmp(g_.k, o.k, sizeof g_.k) &&
           !memcmp(g_.s, o.s, sizeof g_.s) && !memcmp(g_.p, o.p, sizeof g_.p) && !memcmp(g_.d, o.d, sizeof g_.d);
  }
  std::vector<mx::Shape> output_shapes(const std::vector<mx::array> &in) override {
    const auto &xs = in[0].shape();
    mx::Shape s = {xs[0], xs[1], 0, 0};
    for (int i = 0; i < 2; i++)
      s[2 + i] = (int)pool_out(xs[2 + i], g_.k[i], g_.s[i], g_.p[i], g_.p[2 + i], g_.d[i], g_.ceil_mode);
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
            if (xa.ndim() != 4 || kind < 0 || kind > 3) throw std::invalid_argument("pool2d takes a rank-4 x and kind 0-3");
            rlx_kernels::PoolGeom g{};
            g.kind = kind, g.include_pad = count_include_pad, g.ceil_mode = ceil_mode;
            for (int i = 0; i < 2; i++) g.k[i] = kernel[i], g.s[i] = strides[i], g.d[i] = dilations[i];
            for (int i = 0; i < 4; i++) g.p[i] = pads[i];
            std::vector<mx::array> in = {mx::contiguous(mx::astype(xa, mx::float32, c->stream), false, c->stream)};
            auto prim = std::make_shared<rlx_kernels::Pool2d>(c->stream, g);
            mx::Shape shape = prim->output_shapes(in)[0];
            mx::array y(std::move(shape), mx::float32, std::move(prim), std::move(in));
            return dt == mx::float32 ? y : mx::astype(y, dt, c->stream);
          }()));
}
