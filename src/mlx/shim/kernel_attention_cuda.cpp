// kernel_attention_cuda.cpp: attention of a few queries with an additive mask on a GPU, float32,
// as a CUDA source kernel (mx::fast::cuda_kernel, compiled by NVRTC on first use and cached by
// MLX). MLX's fused attention on CUDA takes no mask array (its vector kernel) or float16 /
// bfloat16 only (cuDNN), so an LLM decode step's masked float32 attention over its KV cache was
// MLX's composed path: batched products through cuBLAS (their pointer setup a kernel of its own),
// the mask added, softmax, a second product, about ten kernels per layer.
//
// y = softmax((q scale) K^T + mask) V (the composed path's order: q is scaled first). One thread
// block of 256 threads per (batch, head, query), head dims D and DV template arguments (the loops
// over them unrolled, 16-byte loads): q scaled into shared memory; thread t scores keys t, t + 256,
// ... into shared memory, skipping the row of a key whose mask is -inf (a decode step's unfilled
// cache positions); the block's maximum, exp(s - max) and their sum; then each group of DV / 4
// threads sums p[c] V[c, 4i..4i+3] over its share of the keys up to the last visible one, and the
// block adds the groups' partial sums. A query with no visible key gives NaN, as softmax over
// -inf scores does. Grouped-query attention: query head h reads K/V head h / (H / Hkv).
#include <algorithm>
#include <cstring>

#include "mlx/fast.h"
#include "mlx/shim/kernels.h"
#include "mlx/shim/shim_impl.h"

namespace {

constexpr int kThreads = 256;

constexpr const char *kSource = R"(
  const int H = q_shape[1], S = q_shape[2], Hkv = k_shape[1], C = k_shape[2];
  const int blk = blockIdx.x, t = threadIdx.x, nt = blockDim.x;
  if (blk >= q_shape[0] * H * S) return;
  const int s = blk % S, h = (blk / S) % H, b = blk / (S * H), hk = h / (H / Hkv);
  const float scale = __int_as_float(SCALE_BITS);
  extern __shared__ float4 sm4[];
  float4 *qs = sm4;
  float *p = reinterpret_cast<float *>(sm4 + D / 4);
  __shared__ float red[32];
  __shared__ int last_red[32];
  for (int i = t; i < D / 4; i += nt) {
    const float4 a = reinterpret_cast<const float4 *>(q + (size_t)blk * D)[i];
    qs[i] = make_float4(a.x * scale, a.y * scale, a.z * scale, a.w * scale);
  }
  const int m1 = mask_shape[1], m2 = mask_shape[2], m3 = mask_shape[3];
  const float *mr = mask + (((size_t)(mask_shape[0] == 1 ? 0 : b) * m1 + (m1 == 1 ? 0 : h)) * m2 + (m2 == 1 ? 0 : s)) * m3;
  const int mc = m3 == 1 ? 0 : 1;
  const float4 *kb = reinterpret_cast<const float4 *>(k + ((size_t)b * Hkv + hk) * C * D);
  const float4 *vb = reinterpret_cast<const float4 *>(v + ((size_t)b * Hkv + hk) * C * DV);
  __syncthreads();
  float mx = -INFINITY;
  int last = -1;
  for (int c = t; c < C; c += nt) {
    const float bias = mr[c * mc];
    float sc = -INFINITY;
    if (bias != -INFINITY) {
      const float4 *kr = kb + (size_t)c * (D / 4);
      float acc = 0.f;
#pragma unroll
      for (int i = 0; i < D / 4; i++) {
        const float4 kv = kr[i], qv = qs[i];
        acc += qv.x * kv.x + qv.y * kv.y + qv.z * kv.z + qv.w * kv.w;
      }
      sc = acc + bias;
      last = c;
    }
    p[c] = sc;
    mx = fmaxf(mx, sc);
  }
  for (int o = 16; o > 0; o >>= 1) {
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    last = max(last, __shfl_xor_sync(0xffffffffu, last, o));
  }
  if (t % 32 == 0) red[t / 32] = mx, last_red[t / 32] = last;
  __syncthreads();
  mx = red[0], last = last_red[0];
  for (int w = 1; w < nt / 32; w++) mx = fmaxf(mx, red[w]), last = max(last, last_red[w]);
  __syncthreads();
  float sum = 0.f;
  for (int c = t; c <= last; c += nt) {
    const float e = p[c] == -INFINITY ? 0.f : expf(p[c] - mx);
    p[c] = e;
    sum += e;
  }
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (t % 32 == 0) red[t / 32] = sum;
  __syncthreads();
  sum = 0.f;
  for (int w = 0; w < nt / 32; w++) sum += red[w];
  constexpr int L = DV / 4;  // threads per value row
  const int groups = nt / L, g = t / L, i = t % L;
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 4
  for (int c = g; c <= last; c += groups) {
    const float pc = p[c];
    if (pc != 0.f) {
      const float4 vv = vb[(size_t)c * L + i];
      acc.x += pc * vv.x, acc.y += pc * vv.y, acc.z += pc * vv.z, acc.w += pc * vv.w;
    }
  }
  __syncthreads();
  reinterpret_cast<float4 *>(p)[t] = acc;
  __syncthreads();
  if (t < L) {
    float4 o = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int w = 0; w < groups; w++) {
      const float4 a = reinterpret_cast<const float4 *>(p)[w * L + t];
      o.x += a.x, o.y += a.y, o.z += a.z, o.w += a.w;
    }
    reinterpret_cast<float4 *>(y + (size_t)blk * DV)[t] = make_float4(o.x / sum, o.y / sum, o.z / sum, o.w / sum);
  }
)";

// The scores (C floats, at least 4 per thread for the partial sums) after q (D floats).
int64_t smem_floats(int64_t sk, int64_t d) { return std::max<int64_t>(sk, 4 * kThreads) + d; }

}  // namespace

bool rlx_mx_attention_bias_cuda_fits(int64_t sk, int64_t d, int64_t dv) {
  return dv >= 4 && dv % 4 == 0 && dv / 4 <= kThreads && kThreads % (dv / 4) == 0 && d >= 4 && d % 4 == 0 && d <= 1024 &&
         smem_floats(sk, d) * 4 <= 48000;
}

extern "C" rlx_mx_arr *rlx_mx_attention_bias_cuda(rlx_mx *c, rlx_mx_arr *q, rlx_mx_arr *k, rlx_mx_arr *v, rlx_mx_arr *mask, float scale) {
  SHIM_OP(c, q && k && v && mask, ([&] {
            mx::array qa = A(q), ka = A(k), va = A(v), ma = A(mask);
            if (qa.ndim() != 4 || ka.ndim() != 4 || va.ndim() != 4 || ma.ndim() > 4 || qa.dtype() != mx::float32 ||
                ka.dtype() != mx::float32 || va.dtype() != mx::float32 || ka.shape(1) < 1 || qa.shape(1) % ka.shape(1) ||
                ka.shape(0) != qa.shape(0) || va.shape(0) != qa.shape(0) || ka.shape(1) != va.shape(1) || ka.shape(2) != va.shape(2) ||
                ka.shape(3) != qa.shape(3) || !rlx_mx_attention_bias_cuda_fits(ka.shape(2), qa.shape(3), va.shape(3)))
              throw std::invalid_argument("attention_bias_cuda takes float32 q [B,H,S,D], k [B,Hkv,C,D], v [B,Hkv,C,Dv], a mask of rank <= 4");
            mx::Shape ms(4 - ma.ndim(), 1);
            ms.insert(ms.end(), ma.shape().begin(), ma.shape().end());
            ma = mx::reshape(mx::astype(ma, mx::float32, c->stream), ms, c->stream);
            int blocks = qa.shape(0) * qa.shape(1) * qa.shape(2), smem = (int)(smem_floats(ka.shape(2), qa.shape(3)) * 4);
            int bits;
            std::memcpy(&bits, &scale, sizeof bits);
            mx::Shape ys = qa.shape();
            ys[3] = va.shape(3);
            if (blocks == 0) return mx::zeros(ys, mx::float32, c->stream);
            // the dynamic shared memory is the closure's (one NVRTC module per name and template
            // arguments, whatever the size: under 48 KB no attribute is set at load)
            // k and v written in place (kernel_scatter_cuda.cpp): their writes' markers as inputs
            // the kernel does not read, so that MLX's CUDA graph orders it after the writes
            std::vector<mx::array> in = {qa, ka, va, ma};
            rlx_kernels::write_markers(ka, in);
            rlx_kernels::write_markers(va, in);
            std::vector<std::string> names = {"q", "k", "v", "mask"};
            for (size_t i = 4; i < in.size(); i++) names.push_back("after" + std::to_string(i - 4));
            // (a name per input count: MLX caches a kernel's module by name and template arguments)
            std::string name = "rlx_attention_bias" + (in.size() > 4 ? "_after" + std::to_string(in.size() - 4) : std::string());
            auto f = mx::fast::cuda_kernel(name, names, {"y"}, kSource, "", true, smem);
            return f(in, {ys}, {mx::float32}, {blocks * kThreads, 1, 1}, {kThreads, 1, 1}, {{"D", qa.shape(3)}, {"DV", va.shape(3)}, {"SCALE_BITS", bits}},
                     std::nullopt, false, c->stream)[0];
          }()));
}
