// kernel_swiglu.cpp: FusedSwiGLU on float32 (rlx_mx_swiglu on the CPU; MLX's ops on a GPU): y[.., N] = silu(gate) * up
// for x[.., 2N] holding the two halves side by side (an LLM's stacked gate/up product).
//
// MLX would run it as two slices, a SiLU and a multiply: graph nodes that a decode step replays
// every step, and passes over the data. Here one task per block of rows: the gate half is copied
// into y, SiLU applied in place (apply_act, SLEEF's wide exp) and y multiplied by the up half.
#include <algorithm>
#include <vector>

#include "mlx/shim/kernels.h"
#include "mlx/shim/shim_impl.h"

namespace rlx_kernels {
namespace {

class SwiGLU : public CpuKernel {
 public:
  SwiGLU(mx::Stream s, bool gate_first) : CpuKernel(s), gate_first_(gate_first) {}
  // in: x float32 [.., 2N], any strides (see dense); out [.., N].
  void eval_cpu(const std::vector<mx::array> &in, mx::array &out) override {
    auto &enc = begin(in, out);
    int64_t n = out.shape().back(), rows = n ? (int64_t)out.size() / n : 0;
    Strided xs = strided(in[0]);
    float *y = out.data<float>();
    bool gate_first = gate_first_;
    enc.dispatch([=]() {
      thread_local std::vector<uint8_t> buf;
      const float *x = static_cast<const float *>(dense(xs, buf));
      parallel_for(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1)),
                   [&](int64_t r0, int64_t r1) { swiglu_rows(x, r0, r1, n, gate_first, y); });
    });
  }
  bool gate_first() const { return gate_first_; }
  const char *name() const override { return "RlxSwiGLU"; }
  bool is_equivalent(const mx::Primitive &other) const override { return gate_first_ == static_cast<const SwiGLU &>(other).gate_first_; }
  std::vector<mx::Shape> output_shapes(const std::vector<mx::array> &in) override {
    mx::Shape shape = in[0].shape();
    shape.back() /= 2;
    return {shape};
  }

 private:
  bool gate_first_;
};

}  // namespace

void swiglu_rows(const float *x, int64_t r0, int64_t r1, int64_t n, bool gate_first, float *y) {
  for (int64_t r = r0; r < r1; r++) {
    const float *gate = x + 2 * n * r + (gate_first ? 0 : n), *up = x + 2 * n * r + (gate_first ? n : 0);
    float *yr = y + n * r;
    std::copy(gate, gate + n, yr);
    apply_act(Act{RLX_MX_ACT_SILU}, yr, n);
    for (int64_t j = 0; j < n; j++) yr[j] *= up[j];
  }
}

bool swiglu_of(const mx::array &y, mx::array *x, bool *gate_first) {
  if (y.is_available() || !y.has_primitive()) return false;
  auto *p = dynamic_cast<SwiGLU *>(&y.primitive());
  if (!p) return false;
  *x = y.inputs()[0], *gate_first = p->gate_first();
  return true;
}

}  // namespace rlx_kernels

// rlx_mx_swiglu on a GPU: MLX's ops (the two halves, a sigmoid and two products, one fused kernel
// in compiled mode), recorded in the context for a float16 product that reads it once to form it
// itself (kernel_matvec_cuda.cpp).
static rlx_mx_arr *swiglu_gpu(rlx_mx *c, const mx::array &xa, bool gate_first) {
  std::vector<mx::array> h = mx::split(xa, 2, (int)xa.ndim() - 1, c->stream);
  const mx::array &gate = h[gate_first ? 0 : 1], &up = h[gate_first ? 1 : 0];
  rlx_mx_arr *y = c->put(mx::multiply(up, mx::multiply(gate, mx::sigmoid(gate, c->stream), c->stream), c->stream));
  c->fusible[y] = rlx_mx::Fusible{rlx_mx::Fusible::kSwiGLU, {xa}, gate_first ? 1 : 2};
  return y;
}

extern "C" rlx_mx_arr *rlx_mx_swiglu(rlx_mx *c, rlx_mx_arr *x, bool gate_first) {
  SHIM_OP_HANDLE(c, x, ([&] {
                   const mx::array &xa = A(x);
                   if (xa.ndim() < 1 || xa.dtype() != mx::float32 || xa.shape().back() % 2)
                     throw std::invalid_argument("swiglu takes float32 x [.., 2N]");
                   if (c->stream.device == mx::Device::gpu) return swiglu_gpu(c, xa, gate_first);
                   auto prim = std::make_shared<rlx_kernels::SwiGLU>(c->stream, gate_first);
                   std::vector<mx::array> in = {xa};
                   mx::Shape shape = prim->output_shapes(in)[0];
                   return c->put(mx::array(std::move(shape), mx::float32, std::move(prim), std::move(in)));
                 }()));
}
