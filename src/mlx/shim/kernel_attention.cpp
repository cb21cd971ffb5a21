// kernel_attention.cpp: scaled dot-product attention on float32 (rlx_mx_sdpa on the CPU).
//
// MLX's CPU backend has no kernel for fast::scaled_dot_product_attention: it runs the op's
// fallback (scale, matmul, a softmax whose exp is scalar, matmul), single-threaded, with the
// heads split by transposed views copied first. Here a task is (batch, query head, block of
// query rows), on the kernel pool:
//   S = Q_blk K^T (one single-threaded BLAS call); per row: s = scale * s + mask (an additive
//   mask), or -inf for keys past the causal diagonal (key j visible to query i when
//   j <= i + Sk - Sq, MLX's bottom-right alignment); p = softmax(s) (SLEEF exp; a row with no
//   visible key gives zeros); O_blk = P V (one BLAS call). Keys past the last one any row of the
//   block can see (the causal diagonal, or a -inf tail of the additive mask: a KV cache's
//   unfilled positions) are left out of all three. At most 4 query rows whose operands have
//   unit stride along D (a decode step over a KV cache) take their dot products and P V straight
//   from q, k and v instead, a task per (batch, key/value head) with all its query heads:
//   sgemm would pack all of K and V first, more work than these products, which read each key
//   once. Tasks of little work run on the calling thread (except the decode tasks).
// Query head h reads key/value head h / (Hq / Hkv). Operands are read in place through their
// strides when one of their last two axes has unit stride (the heads' transposed views, or packed
// [B, S, H*D] operands read as [B, H, S, D] directly); the output is written [B, Sq, Hq, Dv] and
// returned as its [B, Hq, Sq, Dv] transposed view, so that merging the heads back needs no copy
// (packed: as [B, Sq, Hq*Dv] itself). An additive mask is read through broadcasting strides.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "mlx/backend/cpu/encoder.h"
#include "mlx/shim/kernels.h"

namespace rlx_kernels {
namespace {

constexpr int64_t QBLK = 32;  // query rows per task
constexpr int64_t FEW = 4;    // query rows up to which a task skips BLAS
constexpr int64_t TASK_WORK = 1 << 17;  // multiply-adds per chunk of the pool at least

// 8 floats as one vector (GCC's vector extension: one AVX register in the x86-64-v3 clones; loaded
// with memcpy in the cloned function itself, not through a helper compiled for the baseline).
typedef float v8 __attribute__((vector_size(32)));

// S[j] = q . k_j for the keys j < n (k_j at k + j ks), D elements each: one call per query row
// (a call per key cost as much as the 64-element product of a decode step's head). Eight keys at
// a time: a key's products are one chain of dependent adds (8 lanes, D / 8 steps), eight chains in
// flight hide the add latency, and the eight keys' lanes are summed together: three rounds of
// pairwise adds of shuffled lanes, 7 shuffle pairs for the 8 sums (summed one key at a time, the
// scalar adds took as long as the products: a decode step's attention was ~10% of it, dots two
// thirds of that).
RLX_KERNEL_CLONES
void dots(const float *q, const float *k, int64_t ks, int64_t n, int64_t D, float *S) {
  constexpr int U = 8;
  for (int64_t j = 0; j < n; j += U) {
    int u_n = (int)std::min<int64_t>(U, n - j);
    v8 a[U] = {}, qv, kv;
    for (int64_t i = 0; i + 8 <= D; i += 8) {
      std::memcpy(&qv, q + i, sizeof qv);
      for (int u = 0; u < U; u++) {
        std::memcpy(&kv, k + (j + (u < u_n ? u : 0)) * ks + i, sizeof kv);
        a[u] += qv * kv;
      }
    }
    v8 b[4], c[2];
    for (int u = 0; u < 4; u++) /* b[u]: lanes 2i and 2i + 1 of a[2u] and a[2u + 1] added */
      b[u] = __builtin_shufflevector(a[2 * u], a[2 * u + 1], 0, 8, 2, 10, 4, 12, 6, 14) +
             __builtin_shufflevector(a[2 * u], a[2 * u + 1], 1, 9, 3, 11, 5, 13, 7, 15);
    for (int u = 0; u < 2; u++) /* c[u]: a[4u .. 4u + 4)'s sums of lanes 0..3 in lanes 0..3, of 4..7 in 4..7 */
      c[u] = __builtin_shufflevector(b[2 * u], b[2 * u + 1], 0, 1, 8, 9, 4, 5, 12, 13) +
             __builtin_shufflevector(b[2 * u], b[2 * u + 1], 2, 3, 10, 11, 6, 7, 14, 15);
    v8 s = __builtin_shufflevector(c[0], c[1], 0, 1, 2, 3, 8, 9, 10, 11) + __builtin_shufflevector(c[0], c[1], 4, 5, 6, 7, 12, 13, 14, 15);
    for (int u = 0; u < u_n; u++) {
      const float *kj = k + (j + u) * ks;
      float t = s[u];
      for (int64_t i = D / 8 * 8; i < D; i++) t += q[i] * kj[i];
      S[j + u] = t;
    }
  }
}

// o[0..Dv) = sum over j < n of p[j] v_j (v_j at v + j vs), in order of j. 64 outputs at a time
// kept in registers across the keys (8 independent chains), not loaded and stored per key.
RLX_KERNEL_CLONES
void weighted_sum(const float *p, const float *v, int64_t vs, int64_t n, int64_t Dv, float *o) {
  constexpr int64_t W = 64;
  int64_t i0 = 0;
  for (; i0 + W <= Dv; i0 += W) {
    float acc[W] = {};
    for (int64_t j = 0; j < n; j++) {
      const float *vj = v + j * vs + i0;
      float a = p[j];
      for (int l = 0; l < W; l++) acc[l] += a * vj[l];
    }
    std::copy(acc, acc + W, o + i0);
  }
  std::fill(o + i0, o + Dv, 0.f);
  for (int64_t j = 0; j < n && i0 < Dv; j++) {
    const float *vj = v + j * vs;
    float a = p[j];
    for (int64_t i = i0; i < Dv; i++) o[i] += a * vj[i];
  }
}

// A strided 4D operand: element (a, b, c, d) at p[a s0 + b s1 + c s2 + d s3].
struct View {
  const float *p;
  int64_t s[4];
};

// a [B, H, S, D] (heads = 0), or packed [B, S, H*D] (heads = H) seen as [B, H, S, D].
View view(const mx::array &a, int64_t heads) {
  View v{a.data<float>(), {}};
  const auto &st = a.strides();
  if (heads) {
    int64_t d = a.shape(2) / heads;
    v.s[0] = st[0], v.s[1] = d * st[2], v.s[2] = st[1], v.s[3] = st[2];
  } else {
    for (int i = 0; i < 4; i++) v.s[i] = st[i];
  }
  return v;
}

// A mask of rank 1..4 broadcast (NumPy rules) to [B, Hq, Sq, Sk]: stride 0 along its size-1 and
// missing dims.
View mask_view(const mx::array &m) {
  View v{m.data<float>(), {0, 0, 0, 0}};
  for (int i = 0; i < (int)m.ndim(); i++) {
    int j = 4 - (int)m.ndim() + i;
    v.s[j] = m.shape(i) == 1 ? 0 : m.strides()[i];
  }
  return v;
}

// The [rows, cols] matrix at p (row stride rs, column stride cs) as a BLAS operand: in place when
// either stride is 1, else copied into buf.
struct Operand {
  const float *p;
  bool t;
  int64_t ld;
};
Operand operand(const float *p, int64_t rows, int64_t cols, int64_t rs, int64_t cs, std::vector<float> &buf) {
  if (cs == 1 && (rows == 1 || rs >= cols)) return {p, false, std::max<int64_t>({rs, cols, 1})};
  if (rs == 1 && (cols == 1 || cs >= rows)) return {p, true, std::max<int64_t>({cs, rows, 1})};
  buf.resize(rows * cols);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) buf[i * cols + j] = p[i * rs + j * cs];
  return {buf.data(), false, std::max<int64_t>(cols, 1)};
}

struct Problem {
  int64_t B, Hq, Hkv, Sq, Sk, D, Dv;
  float scale;
  int mask;  // 0 none, 1 causal, 2 additive array
  View q, k, v, m;
  float *o;  // [B, Sq, Hq, Dv]
};

// Rows [i0, i0 + rows) of S (keys [0, n), row stride n) scaled, masked and replaced by their
// softmax (keys n.. have probability 0, see keys_used).
void softmax_block(const Problem &P, int64_t b, int64_t h, int64_t i0, int64_t rows, int64_t n, float *S) {
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int64_t r = 0; r < rows; r++) {
    int64_t i = i0 + r;
    float *s = S + r * n, top = ninf;
    int64_t visible = P.mask == 1 ? std::clamp<int64_t>(i + P.Sk - P.Sq + 1, 0, n) : n;
    if (P.mask == 2) {
      const float *mr = P.m.p + b * P.m.s[0] + h * P.m.s[1] + i * P.m.s[2];
      for (int64_t j = 0; j < n; j++) s[j] = s[j] * P.scale + mr[j * P.m.s[3]];
    } else {
      for (int64_t j = 0; j < visible; j++) s[j] = s[j] * P.scale;
      for (int64_t j = visible; j < n; j++) s[j] = ninf;
    }
    for (int64_t j = 0; j < n; j++) top = std::max(top, s[j]);
    if (top == ninf) {
      std::fill(s, s + n, 0.f);
      continue;
    }
    float inv = 1.f / exp_shifted(s, s, n, top);
    for (int64_t j = 0; j < n; j++) s[j] *= inv;
  }
}

// The keys [0, n) that query rows [i0, i0 + rows) of (b, h) can see: a key past the causal
// diagonal of the last row, or past the last one whose additive mask is finite in some row (a
// KV cache's unfilled positions, masked with -inf), gets probability 0, so its products are
// skipped (it adds nothing, not even the NaN of 0 times a non-finite value).
int64_t keys_used(const Problem &P, int64_t b, int64_t h, int64_t i0, int64_t rows) {
  if (P.mask == 1) return std::clamp<int64_t>(i0 + rows + P.Sk - P.Sq, 0, P.Sk);
  if (P.mask != 2) return P.Sk;
  const float ninf = -std::numeric_limits<float>::infinity();
  int64_t n = 0;
  for (int64_t r = 0; r < rows && n < P.Sk; r++) {
    const float *mr = P.m.p + b * P.m.s[0] + h * P.m.s[1] + (i0 + r) * P.m.s[2];
    int64_t e = P.Sk;
    while (e > n && mr[(e - 1) * P.m.s[3]] == ninf) e--;
    n = std::max(n, e);
  }
  return n;
}

// A few query rows (a decode step) with unit strides along D: a task is (batch, key/value head),
// all its query heads' rows, each key and value read straight from the cache once per task (a
// decode step's keys have left the caches since the previous layer, so reading them is most of the
// work); one task per key/value head even for short contexts, so that both threads share it.
void attention_few(const Problem &P) {
  int64_t group = P.Hq / P.Hkv;
  parallel_for(P.B * P.Hkv, 1, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> S;
    for (int64_t t = t0; t < t1; t++) {
      int64_t b = t / P.Hkv, hk = t % P.Hkv;
      const float *kp = P.k.p + b * P.k.s[0] + hk * P.k.s[1], *vp = P.v.p + b * P.v.s[0] + hk * P.v.s[1];
      for (int64_t h = hk * group; h < (hk + 1) * group; h++) {
        int64_t n = keys_used(P, b, h, 0, P.Sq);
        const float *qp = P.q.p + b * P.q.s[0] + h * P.q.s[1];
        float *o = P.o + (b * P.Sq * P.Hq + h) * P.Dv;
        if ((int64_t)S.size() < P.Sq * n) S.resize(P.Sq * n);
        for (int64_t r = 0; r < P.Sq; r++) dots(qp + r * P.q.s[2], kp, P.k.s[2], n, P.D, S.data() + r * n);
        softmax_block(P, b, h, 0, P.Sq, n, S.data());
        for (int64_t r = 0; r < P.Sq; r++) weighted_sum(S.data() + r * n, vp, P.v.s[2], n, P.Dv, o + r * P.Hq * P.Dv);
      }
    }
  });
}

void attention(const Problem &P) {
  int64_t nblk = (P.Sq + QBLK - 1) / QBLK, group = P.Hq / P.Hkv;
  if (P.Sq <= FEW && P.q.s[3] == 1 && P.k.s[3] == 1 && P.v.s[3] == 1) return attention_few(P);
  int64_t work = std::max<int64_t>(std::min(QBLK, P.Sq) * P.Sk * (P.D + P.Dv), 1);
  parallel_for(P.B * P.Hq * nblk, std::max<int64_t>(TASK_WORK / work, 1), [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> S, qb, kb, vb;
    for (int64_t t = t0; t < t1; t++) {
      int64_t b = t / (P.Hq * nblk), h = t / nblk % P.Hq, i0 = t % nblk * QBLK, rows = std::min(QBLK, P.Sq - i0);
      int64_t hk = h / group, n = keys_used(P, b, h, i0, rows);
      const float *qp = P.q.p + b * P.q.s[0] + h * P.q.s[1] + i0 * P.q.s[2];
      const float *kp = P.k.p + b * P.k.s[0] + hk * P.k.s[1], *vp = P.v.p + b * P.v.s[0] + hk * P.v.s[1];
      float *o = P.o + ((b * P.Sq + i0) * P.Hq + h) * P.Dv;
      if ((int64_t)S.size() < rows * n) S.resize(rows * n);
      if (!n) { /* no key visible to any row of the block: zeros */
        for (int64_t r = 0; r < rows; r++) std::fill(o + r * P.Hq * P.Dv, o + r * P.Hq * P.Dv + P.Dv, 0.f);
        continue;
      }
      Operand Q = operand(qp, rows, P.D, P.q.s[2], P.q.s[3], qb);
      Operand Kt = operand(kp, P.D, n, P.k.s[3], P.k.s[2], kb);  // K^T [D, n]
      Operand V = operand(vp, n, P.Dv, P.v.s[2], P.v.s[3], vb);
      if (P.D) {
        sgemm(Q.t, Kt.t, rows, n, P.D, Q.p, Q.ld, Kt.p, Kt.ld, S.data(), n);
      } else {
        std::fill(S.begin(), S.begin() + rows * n, 0.f);
      }
      softmax_block(P, b, h, i0, rows, n, S.data());
      sgemm(false, V.t, rows, P.Dv, n, S.data(), n, V.p, V.ld, o, P.Hq * P.Dv);
    }
  });
}

class Attention : public CpuKernel {
 public:
  Attention(mx::Stream s, float scale, int mask, int64_t hq, int64_t hkv) : CpuKernel(s), scale_(scale), mask_(mask), hq_(hq), hkv_(hkv) {}
  // inputs: q [B,Hq,Sq,D], k [B,Hkv,Sk,D], v [B,Hkv,Sk,Dv] float32, or packed (hq_ > 0) q [B,Sq,Hq*D],
  // k [B,Sk,Hkv*D], v [B,Sk,Hkv*Dv] (any strides), then for an additive mask one float32 of rank
  // 1..4 broadcasting to [B,Hq,Sq,Sk]; output [B,Sq,Hq,Dv], or [B,Sq,Hq*Dv] packed.
  void eval_cpu(const std::vector<mx::array> &in, mx::array &out) override {
    auto &enc = begin(in, out);
    const auto &qs = in[0].shape(), &ks = in[1].shape(), &vs = in[2].shape();
    Problem P = hq_ ? Problem{qs[0], hq_, hkv_, qs[1], ks[1], qs[2] / hq_, vs[2] / hkv_, scale_, mask_, view(in[0], hq_),
                              view(in[1], hkv_), view(in[2], hkv_), {}, out.data<float>()}
                    : Problem{qs[0], qs[1], ks[1], qs[2], ks[2], qs[3], vs[3], scale_, mask_, view(in[0], 0), view(in[1], 0),
                              view(in[2], 0), {}, out.data<float>()};
    if (mask_ == 2) P.m = mask_view(in[3]);
    if (out.size() == 0) return;
    enc.dispatch([P]() { attention(P); });
  }
  const char *name() const override { return "RlxAttention"; }
  bool is_equivalent(const mx::Primitive &other) const override {
    auto &o = static_cast<const Attention &>(other);
    return scale_ == o.scale_ && mask_ == o.mask_ && hq_ == o.hq_ && hkv_ == o.hkv_;
  }
  std::vector<mx::Shape> output_shapes(const std::vector<mx::array> &in) override {
    const auto &qs = in[0].shape();
    if (hq_) return {{qs[0], qs[1], (int)(hq_ * (in[2].shape()[2] / hkv_))}};
    return {{qs[0], qs[2], qs[1], in[2].shape()[3]}};
  }

 private:
  float scale_;
  int mask_;
  int64_t hq_, hkv_;  // packed operands' head counts (0: rank 4)
};

// mask_mode "", "causal" or "array" (mask given): its kind, -1 when unknown.
int mask_kind(const char *mask_mode, rlx_mx_arr *mask) {
  std::string mode = mask_mode ? mask_mode : "";
  return mode.empty() ? 0 : mode == "causal" ? 1 : mode == "array" && mask ? 2 : -1;
}

// An "array" mask as the kernel adds it: float32, a bool one as 0 / -inf.
mx::array additive(rlx_mx *c, rlx_mx_arr *mask) {
  mx::array m = A(mask);
  return m.dtype() == mx::bool_ ? mx::where(m, mx::array(0.f), mx::array(-std::numeric_limits<float>::infinity()), c->stream)
                                : mx::astype(m, mx::float32, c->stream);
}

}  // namespace
}  // namespace rlx_kernels

extern "C" rlx_mx_arr *rlx_mx_sdpa(rlx_mx *c, rlx_mx_arr *q, rlx_mx_arr *k, rlx_mx_arr *v, float scale, const char *mask_mode,
                                   rlx_mx_arr *mask) {
  SHIM_OP(c, q && k && v, ([&] {
            using namespace rlx_kernels;
            mx::array qa = A(q), ka = A(k), va = A(v);
            int kind = mask_kind(mask_mode, mask);
            bool ours = c->device == mx::Device::cpu && kind >= 0 && qa.dtype() == mx::float32 && ka.dtype() == mx::float32 &&
                        va.dtype() == mx::float32 && qa.ndim() == 4 && ka.ndim() == 4 && va.ndim() == 4 &&
                        qa.shape(0) == ka.shape(0) && ka.shape(0) == va.shape(0) && ka.shape(1) == va.shape(1) &&
                        ka.shape(1) > 0 && qa.shape(1) % ka.shape(1) == 0 && qa.shape(3) == ka.shape(3) &&
                        ka.shape(2) == va.shape(2);
            if (!ours && c->device == mx::Device::cpu && qa.ndim() == 4 && ka.ndim() == 4) {
              // MLX's CPU fallback computes the scores [B, Hq, Sq, Sk] (at least float32) in full
              mx::Shape scores = {qa.shape(0), qa.shape(1), qa.shape(2), ka.shape(2)};
              c->admit(scores, qa.dtype().size() < 4 ? mx::float32 : qa.dtype(), "the attention scores MLX computes on the CPU");
            }
            if (!ours)
              return mx::fast::scaled_dot_product_attention(qa, ka, va, scale, mask_mode ? mask_mode : "",
                                                            mask ? std::optional<mx::array>(A(mask)) : std::nullopt,
                                                            std::nullopt, false, c->stream);
            std::vector<mx::array> in = {qa, ka, va};
            if (kind == 2) in.push_back(additive(c, mask));
            auto prim = std::make_shared<Attention>(c->stream, scale, kind, 0, 0);
            mx::Shape shape = prim->output_shapes(in)[0];
            mx::array y(std::move(shape), mx::float32, std::move(prim), std::move(in));
            return mx::transpose(y, {0, 2, 1, 3}, c->stream);
          }()));
}

extern "C" rlx_mx_arr *rlx_mx_sdpa_packed(rlx_mx *c, rlx_mx_arr *q, rlx_mx_arr *k, rlx_mx_arr *v, int64_t hq, int64_t hkv, float scale,
                                          const char *mask_mode, rlx_mx_arr *mask) {
  SHIM_OP(c, q && k && v, ([&] {
            using namespace rlx_kernels;
            mx::array qa = A(q), ka = A(k), va = A(v);
            int kind = mask_kind(mask_mode, mask);
            bool ok = c->device == mx::Device::cpu && kind >= 0 && qa.dtype() == mx::float32 && ka.dtype() == mx::float32 &&
                      va.dtype() == mx::float32 && qa.ndim() == 3 && ka.ndim() == 3 && va.ndim() == 3 && hq > 0 && hkv > 0 &&
                      hq % hkv == 0 && qa.shape(0) == ka.shape(0) && ka.shape(0) == va.shape(0) && ka.shape(1) == va.shape(1) &&
                      qa.shape(2) % hq == 0 && ka.shape(2) % hkv == 0 && va.shape(2) % hkv == 0 &&
                      qa.shape(2) / hq == ka.shape(2) / hkv;
            if (!ok) throw std::invalid_argument("packed attention takes float32 q [B,Sq,Hq*D], k [B,Sk,Hkv*D], v [B,Sk,Hkv*Dv] on the CPU");
            std::vector<mx::array> in = {qa, ka, va};
            if (kind == 2) in.push_back(additive(c, mask));
            auto prim = std::make_shared<Attention>(c->stream, scale, kind, hq, hkv);
            mx::Shape shape = prim->output_shapes(in)[0];
            return mx::array(std::move(shape), mx::float32, std::move(prim), std::move(in));
          }()));
}
