// kernel_resize.cpp: separable resize of the last two axes (ONNX Resize's nearest, linear and
// cubic modes, with taps the lowering computes: lower_conv.c).
//
// MLX has no resize op; composed from one gather (mx::take) per axis and tap, plus a multiply
// and an add per tap for linear and cubic, it runs on MLX's stream thread alone through MLX's
// generic strided gather (PP-OCRv4 det's six nearest upsamplings: ~20 CPU ms per run, a fifth
// of its serial work). Here each output row y[plane, o, :] is its taps' input rows combined
// (tmp[j] = sum_a wh[o, a] x[plane, ih[o, a], j]; a nearest row is its input row, read in
// place), then each output p = sum_b ww[p, b] tmp[iw[p, b]] (an integer upsampling repeats each
// input, a factor of 2 by vector shuffles); an output row whose taps are its
// predecessor's (an upsampling repeats rows) is a copy of it. Rows are split over the kernel
// thread pool. float32 only (the shim converts other float types).
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "mlx/backend/cpu/encoder.h"
#include "mlx/shim/kernels.h"

namespace rlx_kernels {
namespace {

typedef float v8 __attribute__((vector_size(8 * sizeof(float))));  // GCC/Clang vector extension

// The taps of one axis: out outputs x n taps, indices into the input axis and their weights.
struct Taps {
  int64_t out, n;
  std::vector<int32_t> idx;
  std::vector<float> w;
  std::vector<char> dup;  // dup[o]: output o has the taps of output o - 1
  bool gather = false;    // one tap of weight 1 per output
  bool identity = false;  // and that tap is the output's own index (the axis is not resized)
  int64_t repeat = 0;     // and that tap is o / repeat (an upsampling by an integer factor), else 0
  Taps(int64_t out_, int64_t n_, const int32_t *i, const float *w_, int64_t in)
      : out(out_), n(n_), idx(i, i + out_ * n_), w(w_, w_ + out_ * n_), dup(out_, 0) {
    for (int64_t o = 1; o < out; o++)
      dup[o] = !memcmp(&idx[o * n], &idx[(o - 1) * n], n * sizeof(int32_t)) && !memcmp(&w[o * n], &w[(o - 1) * n], n * sizeof(float));
    gather = n == 1 && std::all_of(w.begin(), w.end(), [](float v) { return v == 1.f; });
    identity = gather && out == in;
    for (int64_t o = 0; identity && o < out; o++) identity = idx[o] == o;
    repeat = gather && out % in == 0 ? out / in : 0;
    for (int64_t o = 0; repeat && o < out; o++) repeat = idx[o] == o / repeat ? repeat : 0;
  }
  bool operator==(const Taps &o) const { return out == o.out && n == o.n && idx == o.idx && w == o.w; }
};

// One output row from its combined input row src[0..W).
RLX_KERNEL_CLONES
void resize_row(const Taps &tw, const float *src, int64_t W, float *y) {
  if (tw.identity) {
    memcpy(y, src, W * sizeof(float));
    return;
  }
  const int32_t *iw = tw.idx.data();
  const float *ww = tw.w.data();
  if (tw.repeat == 2) {  // 8 inputs to 16 outputs by two shuffles
    int64_t j = 0;
    for (; j + 8 <= W; j += 8) {
      v8 v, lo, hi;
      memcpy(&v, src + j, sizeof v);
      lo = __builtin_shufflevector(v, v, 0, 0, 1, 1, 2, 2, 3, 3);
      hi = __builtin_shufflevector(v, v, 4, 4, 5, 5, 6, 6, 7, 7);
      memcpy(y + 2 * j, &lo, sizeof lo);
      memcpy(y + 2 * j + 8, &hi, sizeof hi);
    }
    for (; j < W; j++) y[2 * j] = y[2 * j + 1] = src[j];
    return;
  }
  if (tw.repeat) {
    for (int64_t j = 0; j < W; j++)
      for (int64_t k = 0; k < tw.repeat; k++) y[j * tw.repeat + k] = src[j];
    return;
  }
  if (tw.gather) {
    for (int64_t p = 0; p < tw.out; p++) y[p] = src[iw[p]];
    return;
  }
  for (int64_t p = 0; p < tw.out; p++) {
    float acc = 0;
    for (int64_t b = 0; b < tw.n; b++) acc += src[iw[p * tw.n + b]] * ww[p * tw.n + b];
    y[p] = acc;
  }
}

// tmp[0..W) = sum over the taps a of w[a] x[rows[a] * W ..] (8-wide vectors).
RLX_KERNEL_CLONES
void combine_rows(const float *x, int64_t W, const int32_t *rows, const float *w, int64_t n, float *tmp) {
  for (int64_t j = 0; j < W; j++) tmp[j] = x[rows[0] * W + j] * w[0];
  for (int64_t a = 1; a < n; a++) {
    const float *r = x + rows[a] * W;
    for (int64_t j = 0; j < W; j++) tmp[j] += r[j] * w[a];
  }
}

void resize(const Taps &th, const Taps &tw, const float *x, float *y, int64_t planes, int64_t H, int64_t W) {
  const int64_t OH = th.out, OW = tw.out;
  int64_t per_row = std::max<int64_t>(1, W * th.n + OW * tw.n);
  parallel_for(planes * OH, std::max<int64_t>(1, 16384 / per_row), [&](int64_t r0, int64_t r1) {
    thread_local std::vector<float> tmp;
    if ((int64_t)tmp.size() < W) tmp.resize(W);
    for (int64_t r = r0; r < r1; r++) {
      int64_t o = r % OH;
      float *yr = y + r * OW;
      if (r > r0 && o > 0 && th.dup[o]) {  // the previous row, done by this thread
        memcpy(yr, yr - OW, OW * sizeof(float));
        continue;
      }
      const float *xp = x + r / OH * H * W, *src = xp + th.idx[o * th.n] * W;
      if (!th.gather) {
        combine_rows(xp, W, &th.idx[o * th.n], &th.w[o * th.n], th.n, tmp.data());
        src = tmp.data();
      }
      resize_row(tw, src, W, yr);
    }
  });
}

class Resize2d : public CpuKernel {
 public:
  Resize2d(mx::Stream s, Taps th, Taps tw)
      : CpuKernel(s), th_(std::make_shared<const Taps>(std::move(th))), tw_(std::make_shared<const Taps>(std::move(tw))) {}
  // input: x [..., H, W] float32, row-contiguous.
  void eval_cpu(const std::vector<mx::array> &in, mx::array &out) override {
    auto &enc = begin(in, out);
    if (out.size() == 0) return;
    int64_t r = in[0].ndim(), H = in[0].shape(r - 2), W = in[0].shape(r - 1), planes = in[0].size() / std::max<int64_t>(1, H * W);
    const float *x = in[0].data<float>();
    float *y = out.data<float>();
    enc.dispatch([th = th_, tw = tw_, x, y, planes, H, W]() { resize(*th, *tw, x, y, planes, H, W); });
  }
  const char *name() const override { return "RlxResize2d"; }
  bool is_equivalent(const mx::Primitive &other) const override {
    auto &o = static_cast<const Resize2d &>(other);
    return *th_ == *o.th_ && *tw_ == *o.tw_;
  }
  std::vector<mx::Shape> output_shapes(const std::vector<mx::array> &in) override {
    mx::Shape s = in[0].shape();
    s[s.size() - 2] = (int)th_->out, s[s.size() - 1] = (int)tw_->out;
    return {s};
  }

 private:
  std::shared_ptr<const Taps> th_, tw_;  // shared with the tasks in flight
};

}  // namespace
}  // namespace rlx_kernels

extern "C" rlx_mx_arr *rlx_mx_resize2d(rlx_mx *c, rlx_mx_arr *x, int64_t oh, int64_t th, const int32_t *ih, const float *wh,
                                       int64_t ow, int64_t tw, const int32_t *iw, const float *ww) {
  SHIM_OP(c, x && ih && wh && iw && ww, ([&] {
            mx::array xa = A(x);
            mx::Dtype dt = xa.dtype();
            int r = (int)xa.ndim();
            if (r < 2 || oh < 1 || ow < 1 || th < 1 || tw < 1) throw std::invalid_argument("resize2d takes rank >= 2 and taps");
            int64_t H = xa.shape(r - 2), W = xa.shape(r - 1);
            for (int64_t i = 0; i < oh * th; i++)
              if (ih[i] < 0 || ih[i] >= H) throw std::invalid_argument("resize2d: a row tap outside the input");
            for (int64_t i = 0; i < ow * tw; i++)
              if (iw[i] < 0 || iw[i] >= W) throw std::invalid_argument("resize2d: a column tap outside the input");
            std::vector<mx::array> in = {rlx_kernels::row_contiguous(mx::astype(xa, mx::float32, c->stream), c->stream)};
            auto prim = std::make_shared<rlx_kernels::Resize2d>(c->stream, rlx_kernels::Taps(oh, th, ih, wh, H),
                                                                rlx_kernels::Taps(ow, tw, iw, ww, W));
            mx::Shape shape = prim->output_shapes(in)[0];
            mx::array y(std::move(shape), mx::float32, std::move(prim), std::move(in));
            return dt == mx::float32 ? y : mx::astype(y, dt, c->stream);
          }()));
}
