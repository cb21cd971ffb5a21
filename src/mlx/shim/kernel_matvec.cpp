// kernel_matvec.cpp: y[M, N] = x[M, K] @ W^T for a few rows of float32 x (an LLM's decode step),
// W float32 [N, K] row-contiguous or the packed rows of a GGUF Q8_0 or Q4_K tensor read in place.
//
// Float32: MLX's matmul goes to BLAS sgemm, which for one row of x still packs all of W (OpenBLAS
// 0.3.21's sgemm_incopy: 40% of a decode step) before reading it. Quantized: MLX's CPU
// quantized_matmul runs on one thread and needs MLX's affine layout, which the lowering
// otherwise rebuilds from the packed bytes at every run (for Q8_0 a pass over all the weight bytes
// as costly as the product). Here each output row dequantizes its blocks on the fly, element by
// element with the formulas of the GGUF block layouts (ggml-common.h block_q8_0: f16 d, int8
// qs[32], w = d q; block_q4_K: f16 d, dmin, 12 bytes of 6-bit scales and mins (get_scale_min_k4),
// 128 bytes of 4-bit codes in chunks of 64: 32 low nibbles then 32 high ones, w = d sc q - dmin m),
// so NaN/inf scales behave as in dequantize-then-multiply; rows of W are split over the kernel
// thread pool and the weight bytes are read once.
#include <cstring>

#include "mlx/backend/cpu/encoder.h"
#include "mlx/shim/kernels.h"

namespace rlx_kernels {
namespace {

constexpr int kMaxRows = 4;

float half(const uint8_t *p) {
  mx::float16_t h;
  std::memcpy(&h, p, 2);
  return static_cast<float>(h);
}

// Adds w[0..32) * x[m][0..32) to acc[m], m < M, in 8 lanes.
void dot32(const float *w, const float *const *x, int M, int64_t off, float (*acc)[8]) {
  for (int m = 0; m < M; m++)
    for (int j = 0; j < 32; j += 8)
      for (int l = 0; l < 8; l++) acc[m][l] += w[j + l] * x[m][off + j + l];
}

// One float32 row.
void row_f32(const float *w, int64_t K, const float *const *x, int M, float *out) {
  float acc[kMaxRows][8] = {};
  int64_t k = 0;
  for (; k + 32 <= K; k += 32) dot32(w + k, x, M, k, acc);
  for (int m = 0; m < M; m++) {
    float s = 0;
    for (int l = 0; l < 8; l++) s += acc[m][l];
    for (int64_t j = k; j < K; j++) s += w[j] * x[m][j];
    out[m] = s;
  }
}

// One row of Q8_0 blocks (34 bytes per 32 elements).
void row_q8_0(const uint8_t *p, int64_t K, const float *const *x, int M, float *out) {
  float acc[kMaxRows][8] = {};
  float w[32];
  for (int64_t b = 0; b < K / 32; b++, p += 34) {
    float d = half(p);
    for (int j = 0; j < 32; j++) w[j] = d * (float)(int8_t)p[2 + j];
    dot32(w, x, M, b * 32, acc);
  }
  for (int m = 0; m < M; m++) {
    float s = 0;
    for (int l = 0; l < 8; l++) s += acc[m][l];
    out[m] = s;
  }
}

// One row of Q4_K blocks (144 bytes per 256 elements).
void row_q4_k(const uint8_t *p, int64_t K, const float *const *x, int M, float *out) {
  float acc[kMaxRows][8] = {};
  float w[32];
  for (int64_t b = 0; b < K / 256; b++, p += 144) {
    float d = half(p), dmin = half(p + 2);
    const uint8_t *s = p + 4, *qs = p + 16;
    for (int g = 0; g < 8; g++) { /* group g: 32 elements, chunk g / 2, low (even g) or high nibbles */
      int sc = g < 4 ? s[g] & 63 : (s[g + 4] & 15) | ((s[g - 4] >> 6) << 4);
      int mn = g < 4 ? s[g + 4] & 63 : (s[g + 4] >> 4) | ((s[g] >> 6) << 4);
      float ds = d * (float)sc, dm = dmin * (float)mn;
      const uint8_t *q = qs + 32 * (g / 2);
      int shift = 4 * (g % 2);
      for (int j = 0; j < 32; j++) w[j] = ds * (float)((q[j] >> shift) & 15) - dm;
      dot32(w, x, M, b * 256 + 32 * g, acc);
    }
  }
  for (int m = 0; m < M; m++) {
    float s = 0;
    for (int l = 0; l < 8; l++) s += acc[m][l];
    out[m] = s;
  }
}

class MatVec : public mx::UnaryPrimitive {
 public:
  MatVec(mx::Stream s, int scheme) : mx::UnaryPrimitive(s), scheme_(scheme) {}
  // in: x [M, K] float32 and W (float32 [N, K], or packed uint8 [N, row bytes]), both
  // row-contiguous; out [M, N].
  void eval_cpu(const std::vector<mx::array> &in, mx::array &out) override {
    out.set_data(mx::allocator::malloc(out.nbytes()));
    auto &enc = mx::cpu::get_command_encoder(stream());
    enc.set_input_array(in[0]);
    enc.set_input_array(in[1]);
    enc.set_output_array(out);
    int M = (int)in[0].shape()[0], scheme = scheme_;
    int64_t K = in[0].shape()[1], N = in[1].shape()[0], rb = in[1].shape()[1];
    const float *x = in[0].data<float>();
    const uint8_t *w = in[1].data<uint8_t>();
    const float *wf = scheme == 2 ? in[1].data<float>() : nullptr;
    float *y = out.data<float>();
    enc.dispatch([=]() {
      const float *xr[kMaxRows];
      for (int m = 0; m < M; m++) xr[m] = x + m * K;
      parallel_for(N, 16, [&](int64_t n0, int64_t n1) {
        float o[kMaxRows];
        for (int64_t n = n0; n < n1; n++) {
          if (scheme == 0) row_q8_0(w + n * rb, K, xr, M, o);
          else if (scheme == 1) row_q4_k(w + n * rb, K, xr, M, o);
          else row_f32(wf + n * K, K, xr, M, o);
          for (int m = 0; m < M; m++) y[m * N + n] = o[m];
        }
      });
    });
  }
  void eval_gpu(const std::vector<mx::array> &, mx::array &) override {
    throw std::runtime_error("[rlx MatVec] has no GPU implementation");
  }
  const char *name() const override { return "RlxMatVec"; }
  bool is_equivalent(const mx::Primitive &other) const override { return scheme_ == static_cast<const MatVec &>(other).scheme_; }
  std::vector<mx::Shape> output_shapes(const std::vector<mx::array> &in) override { return {{in[0].shape()[0], in[1].shape()[0]}}; }

 private:
  int scheme_;  // 0 Q8_0, 1 Q4_K, 2 float32
};

}  // namespace
}  // namespace rlx_kernels

extern "C" rlx_mx_arr *rlx_mx_matvec(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *w, int scheme) {
  SHIM_OP(c, x && w, ([&] {
            mx::array xa = A(x), wa = A(w);
            int64_t K = xa.ndim() == 2 ? xa.shape()[1] : 0, qk = scheme == 0 ? 32 : scheme == 1 ? 256 : 1;
            int64_t cols = scheme == 0 ? K / 32 * 34 : scheme == 1 ? K / 256 * 144 : K;
            if (scheme < 0 || scheme > 2 || xa.ndim() != 2 || wa.ndim() != 2 || xa.shape()[0] < 1 ||
                xa.shape()[0] > rlx_kernels::kMaxRows || K % qk || wa.shape()[1] != cols || wa.dtype() != (scheme == 2 ? mx::float32 : mx::uint8))
              throw std::invalid_argument("matvec takes x [M <= 4, K] and W float32 [N, K] or packed uint8 [N, K / QK * block bytes]");
            std::vector<mx::array> in = {mx::contiguous(mx::astype(xa, mx::float32, c->stream), false, c->stream),
                                         mx::contiguous(wa, false, c->stream)};
            auto prim = std::make_shared<rlx_kernels::MatVec>(c->stream, scheme);
            mx::Shape shape = prim->output_shapes(in)[0];
            return mx::array(std::move(shape), mx::float32, std::move(prim), std::move(in));
          }()));
}
