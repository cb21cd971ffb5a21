// kernel_rope.cpp: the rotary position embedding (Rope, RopeBackward) of float32 x on the CPU as
// one primitive (rlx_mx_rope; on a GPU, kernel_rope_cuda.cpp's kernel).
//
// Built from MLX ops a Rope is about fifteen graph nodes (slices of the tables and of x, reshapes,
// four products, a sum and a difference, a stack or concatenation), each of which every run of a
// decode step replays for a few hundred values. Here: y = x with, in each head of D values of a
// row of x (row s of the position axis, the second last one), the pairs (i, i + R/2) (NeoX halves)
// or (2i, 2i + 1) (interleaved) for i < R/2 rotated by row s of the tables:
//   y1 = x1 cos - x2 sin,  y2 = x2 cos + x1 sin  (sin negated for the inverse rotation),
// the values past R copied.
#include <algorithm>
#include <vector>

#include "mlx/backend/cpu/encoder.h"
#include "mlx/shim/kernels.h"

namespace rlx_kernels {
namespace {

struct RopeShape {
  int64_t S, last, D, R, ld;  // positions, row length, head dim, rotated dims, table row stride
  bool interleaved;
  float sign;
};

void rope_rows(const RopeShape &r, const float *x, const float *cs, const float *sn, float *y, int64_t r0, int64_t r1) {
  int64_t half = r.R / 2;
  for (int64_t row = r0; row < r1; row++) {
    const float *c = cs + row % r.S * r.ld, *s = sn + row % r.S * r.ld;
    for (int64_t h0 = 0; h0 < r.last; h0 += r.D) {
      const float *xh = x + row * r.last + h0;
      float *yh = y + row * r.last + h0;
      for (int64_t i = 0; i < half; i++) {
        int64_t a = r.interleaved ? 2 * i : i, b = r.interleaved ? 2 * i + 1 : i + half;
        float x1 = xh[a], x2 = xh[b], si = r.sign * s[i];
        yh[a] = x1 * c[i] - x2 * si;
        yh[b] = x2 * c[i] + x1 * si;
      }
      std::copy(xh + r.R, xh + r.D, yh + r.R);
    }
  }
}

class Rope : public CpuKernel {
 public:
  Rope(mx::Stream s, int64_t D, int64_t R, bool interleaved, float sign)
      : CpuKernel(s), D_(D), R_(R), interleaved_(interleaved), sign_(sign) {}
  // in: x [.., S, last] float32, cos and sin [S' >= S, >= R/2] float32, any strides (see dense).
  void eval_cpu(const std::vector<mx::array> &in, mx::array &out) override {
    auto &enc = begin(in, out);
    const mx::array &x = in[0];
    int64_t last = x.shape().back(), S = x.shape(x.ndim() - 2), rows = last && S ? (int64_t)x.size() / last : 0;
    RopeShape r{S, last, D_, R_, in[1].shape(1), interleaved_, sign_};
    float *y = out.data<float>();
    Strided xs = strided(x), css = strided(in[1]), sns = strided(in[2]);
    enc.dispatch([=]() {
      thread_local std::vector<uint8_t> buf[3];
      const float *xp = static_cast<const float *>(dense(xs, buf[0]));
      const float *cs = static_cast<const float *>(dense(css, buf[1])), *sn = static_cast<const float *>(dense(sns, buf[2]));
      parallel_for(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(last, 1)),
                   [&](int64_t r0, int64_t r1) { rope_rows(r, xp, cs, sn, y, r0, r1); });
    });
  }
  const char *name() const override { return "RlxRope"; }
  bool is_equivalent(const mx::Primitive &other) const override {
    auto &o = static_cast<const Rope &>(other);
    return D_ == o.D_ && R_ == o.R_ && interleaved_ == o.interleaved_ && sign_ == o.sign_;
  }
  std::vector<mx::Shape> output_shapes(const std::vector<mx::array> &in) override { return {in[0].shape()}; }

 private:
  int64_t D_, R_;
  bool interleaved_;
  float sign_;
};

}  // namespace
}  // namespace rlx_kernels

extern "C" rlx_mx_arr *rlx_mx_rope(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *cs, rlx_mx_arr *sn, int64_t head_dim, int64_t n_rot,
                                   bool interleaved, float sign) {
  SHIM_OP(c, x && cs && sn, ([&] {
            mx::array xa = A(x), ca = A(cs), sa = A(sn);
            int64_t last = xa.ndim() >= 2 ? xa.shape().back() : 0, S = xa.ndim() >= 2 ? xa.shape(xa.ndim() - 2) : 0;
            if (xa.dtype() != mx::float32 || ca.dtype() != mx::float32 || sa.dtype() != mx::float32 || xa.ndim() < 2 || ca.ndim() != 2 ||
                ca.shape() != sa.shape() || head_dim < 1 || last % head_dim || n_rot < 0 || n_rot % 2 || n_rot > head_dim ||
                ca.shape(0) < S || ca.shape(1) < n_rot / 2)
              throw std::invalid_argument("rope takes float32 x [.., S, H * head_dim] and cos, sin [>= S, >= n_rot / 2], "
                                          "n_rot even and at most head_dim");
            if (c->device != mx::Device::cpu) return rlx_kernels::rope_cuda(xa, ca, sa, head_dim, n_rot, interleaved, sign, c->stream);
            std::vector<mx::array> in = {xa, ca, sa};
            auto prim = std::make_shared<rlx_kernels::Rope>(c->stream, head_dim, n_rot, interleaved, sign);
            mx::Shape shape = xa.shape();
            return mx::array(std::move(shape), mx::float32, std::move(prim), std::move(in));
          }()));
}
