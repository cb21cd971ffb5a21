// kernel_gemm.cpp: float32 matrix products on the kernel thread pool: matmul (batched, one
// side's batch may be shared), and the single-threaded BLAS call and tiling that it and the GEMM
// convolution (kernel_conv.cpp) share.
//
// MLX's CPU matmul hands each product to BLAS in one call, and OpenBLAS threads it with its own
// pool, whose idle workers spin in sched_yield for ~0.1 s after every call and whose caller waits
// (spinning too) for a statically assigned share of every worker: on a machine shared with other
// processes a worker that is not scheduled stalls the whole product, and the spinning takes the
// cores rlx's own kernels run on (perf on PP-OCRv4 rec under load: 65% of the process's CPU time
// in sched_yield). Here BLAS runs single-threaded (claim_blas) and each product is cut into
// tiles (batch items, row blocks, column blocks) that the pool's threads take as they come; the
// caller never waits for a thread that has not started (kernel_threads.cpp).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "mlx/backend/cpu/encoder.h"
#include "mlx/shim/kernels.h"

// CBLAS (row-major 101, no-transpose 111, transpose 112), from the BLAS that libmlx.so itself
// links (OpenBLAS when rlx is built with it, else the wheel's reference BLAS). Declared under
// another name so that no cblas.h is needed and none conflicts.
extern "C" void rlx_cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                                const float *b, int ldb, float beta, float *c, int ldc) __asm__("cblas_sgemm");
// OpenBLAS's thread count; absent (NULL) with other BLAS libraries.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace rlx_kernels {

void claim_blas() {
  static const bool done = [] {
    if (openblas_set_num_threads && !getenv("OPENBLAS_NUM_THREADS")) openblas_set_num_threads(1);
    return true;
  }();
  (void)done;
}

void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
           float *c, int64_t ldc) {
  rlx_cblas_sgemm(101, ta ? 112 : 111, tb ? 112 : 111, (int)m, (int)n, (int)k, 1.f, a, (int)lda, b, (int)ldb, 0.f, c,
                  (int)ldc);
}

namespace {

// Blocks of n items of at least `min` each, about `want` of them.
int64_t blocks(int64_t n, int64_t min, int64_t want) {
  int64_t most = std::max<int64_t>(1, n / std::max<int64_t>(min, 1));
  return std::max<int64_t>(1, std::min(most, want));
}

}  // namespace

Tiles tiles(int64_t items, int64_t m, int64_t n, int64_t k) {
  int64_t want = std::max<int64_t>(1, (4 * num_threads() + items - 1) / std::max<int64_t>(items, 1));
  Tiles t{};
  t.nb = blocks(n, 64, want), t.mb = blocks(m, 32, (want + t.nb - 1) / t.nb);
  t.bn = (n + t.nb - 1) / t.nb, t.bm = (m + t.mb - 1) / t.mb;
  int64_t macs = std::max<int64_t>(1, t.bm * t.bn * k);
  t.grain = std::max<int64_t>(1, ((int64_t)1 << 17) / macs);
  return t;
}

namespace {

// Batch dims of x (all but the last two), left-padded with 1s to `rank` - 2 entries.
mx::Shape batch_of(const mx::array &x, size_t rank) {
  mx::Shape s(rank - 2, 1);
  for (size_t i = 0; i + 2 < x.ndim(); i++) s[rank - x.ndim() + i] = x.shape(i);
  return s;
}

bool all_ones(const mx::Shape &s) {
  return std::all_of(s.begin(), s.end(), [](int d) { return d == 1; });
}

// A matrix operand: row-major (ld = its columns) or transposed (column-major, ld = its rows),
// `stride` elements between batch items (0: shared by all).
struct Mat {
  const float *p;
  bool t;
  int64_t ld, stride;
};

// C[b] = A[b] @ B[b] for b < batch, A [M,K], B [K,N], C [M,N] row-major (ldc = N).
void matmul(int64_t batch, int64_t M, int64_t N, int64_t K, Mat a, Mat b, float *c) {
  Tiles t = tiles(batch, M, N, K);
  parallel_for(batch * t.mb * t.nb, t.grain, [&](int64_t t0, int64_t t1) {
    for (int64_t i = t0; i < t1; i++) {
      int64_t bi = i / (t.mb * t.nb), m0 = i / t.nb % t.mb * t.bm, n0 = i % t.nb * t.bn;
      int64_t m1 = std::min(M, m0 + t.bm), n1 = std::min(N, n0 + t.bn);
      if (m0 >= m1 || n0 >= n1) continue;
      const float *pa = a.p + bi * a.stride + (a.t ? m0 : m0 * a.ld);
      const float *pb = b.p + bi * b.stride + (b.t ? n0 * b.ld : n0);
      sgemm(a.t, b.t, m1 - m0, n1 - n0, K, pa, a.ld, pb, b.ld, c + bi * M * N + m0 * N + n0, N);
    }
  });
}

class Matmul : public mx::UnaryPrimitive {
 public:
  explicit Matmul(mx::Stream s) : mx::UnaryPrimitive(s) {}
  // inputs: a [..., M, K], b [..., K, N] float32; each either row-contiguous with the output's
  // batch dims or none (then rank 2, possibly column-contiguous: transposed).
  void eval_cpu(const std::vector<mx::array> &in, mx::array &out) override {
    out.set_data(mx::allocator::malloc(out.nbytes()));
    auto &enc = mx::cpu::get_command_encoder(stream());
    for (auto &x : in) enc.set_input_array(x);
    enc.set_output_array(out);
    const mx::array &a = in[0], &b = in[1];
    int64_t M = a.shape(-2), K = a.shape(-1), N = b.shape(-1), batch = out.size() / std::max<int64_t>(1, M * N);
    if (out.size() == 0) return;
    Mat ma = operand(a), mb = operand(b);
    if (ma.stride && !mb.stride && !ma.t) M *= batch, batch = 1;  // [B*M, K] @ [K, N]
    float *y = out.data<float>();
    size_t bytes = out.nbytes();
    if (K == 0) return enc.dispatch([y, bytes]() { std::memset(y, 0, bytes); });
    enc.dispatch([=]() { matmul(batch, M, N, K, ma, mb, y); });
  }
  void eval_gpu(const std::vector<mx::array> &, mx::array &) override {
    throw std::runtime_error("[rlx Matmul] has no GPU implementation");
  }
  const char *name() const override { return "RlxMatmul"; }
  bool is_equivalent(const mx::Primitive &) const override { return true; }
  std::vector<mx::Shape> output_shapes(const std::vector<mx::array> &in) override {
    const mx::array &a = in[0], &b = in[1];
    size_t rank = std::max(a.ndim(), b.ndim());
    mx::Shape ba = batch_of(a, rank), s = all_ones(ba) ? batch_of(b, rank) : ba;
    s.push_back(a.shape(-2)), s.push_back(b.shape(-1));
    return {s};
  }

 private:
  static Mat operand(const mx::array &x) {
    int64_t r = x.shape(-2), c = x.shape(-1);
    bool shared = (int64_t)x.size() == r * c;
    if (x.flags().row_contiguous) return {x.data<float>(), false, std::max<int64_t>(c, 1), shared ? 0 : r * c};
    return {x.data<float>(), true, std::max<int64_t>(r, 1), 0};  // rank 2, column-contiguous
  }
};

}  // namespace
}  // namespace rlx_kernels

extern "C" rlx_mx_arr *rlx_mx_matmul(rlx_mx *c, rlx_mx_arr *a, rlx_mx_arr *b) {
  SHIM_OP(c, a && b, ([&] {
            mx::array xa = A(a), xb = A(b);
            size_t rank = std::max(xa.ndim(), xb.ndim());
            bool ours = c->device == mx::Device::cpu && xa.dtype() == mx::float32 && xb.dtype() == mx::float32 &&
                        xa.ndim() >= 2 && xb.ndim() >= 2 && xa.shape(-1) == xb.shape(-2);
            mx::Shape ba, bb;
            if (ours) {
              ba = rlx_kernels::batch_of(xa, rank), bb = rlx_kernels::batch_of(xb, rank);
              ours = ba == bb || rlx_kernels::all_ones(ba) || rlx_kernels::all_ones(bb);
            }
            if (!ours) return mx::matmul(xa, xb, c->stream);
            // A rank-2 operand may stay transposed (column-contiguous); others are made
            // row-contiguous. The batch of an operand whose batch dims are all 1 is shared.
            std::vector<mx::array> in = {mx::contiguous(xa, xa.ndim() == 2, c->stream),
                                         mx::contiguous(xb, xb.ndim() == 2, c->stream)};
            auto prim = std::make_shared<rlx_kernels::Matmul>(c->stream);
            mx::Shape shape = prim->output_shapes(in)[0];
            return mx::array(std::move(shape), mx::float32, std::move(prim), std::move(in));
          }()));
}
