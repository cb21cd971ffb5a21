// kernels.h: rlx's own CPU kernels as MLX primitives (kernel_*.cpp), and the thread pool they
// share (kernel_threads.cpp). C++ internals of the shim; the C ABI is in shim.h.
//
// Why: MLX's CPU backend runs each op on one thread (its stream's), and some ops it runs far
// below the machine's speed (depthwise convolutions through im2col + one matmul per channel,
// softmax through scalar libm exp, pooling through strided views). Each kernel here is an
// mx::UnaryPrimitive whose eval_cpu allocates its output and dispatches one task on the
// stream's command encoder (as MLX's own CPU primitives do); the task splits its work over the
// pool. The lowering uses them only on the CPU device; on a GPU MLX's own ops run (eval_gpu
// throws), except the CUDA source kernels of kernel_*_cuda.cpp (mx::fast::cuda_kernel).
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "mlx/allocator.h"
#include "mlx/backend/cpu/encoder.h"
#include "mlx/primitives.h"
#include "mlx/shim/shim_impl.h"

// Multi-versioning of a hot loop: an AVX2/FMA clone (x86-64-v3) beside the baseline, picked at
// load time (RLX_KERNEL_CLONES_512: an AVX-512 one (x86-64-v4) too). Off under ASan and TSan (GCC or
// Clang: the fuzz build compiles each kernel once instead of three times): they
// instrument the clones' IFUNC resolver, which the dynamic loader runs before their runtime is set
// up (TSan: a segfault at load).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)  // GCC
#define RLX_KERNEL_SANITIZED 1
#elif defined(__has_feature)  // Clang (scripts/fuzz.sh)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define RLX_KERNEL_SANITIZED 1
#endif
#endif
#if defined(__x86_64__) && !defined(RLX_KERNEL_SANITIZED)
#define RLX_KERNEL_HAS_CLONES 1
#define RLX_KERNEL_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#define RLX_KERNEL_CLONES_512 __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define RLX_KERNEL_CLONES
#define RLX_KERNEL_CLONES_512
#endif

namespace rlx_kernels {

// Float vectors (GCC/Clang vector extension): v16 is one AVX-512 register, v8 one AVX2 register;
// lanes<V> floats each.
typedef float v16 __attribute__((vector_size(16 * sizeof(float))));
typedef float v8 __attribute__((vector_size(8 * sizeof(float))));
template <class V>
constexpr int lanes = sizeof(V) / sizeof(float);

// The even and odd floats of p[0 .. 2 lanes<V>), in order (a row's two phases at stride 2), into
// *ev and *od (pointers: a function taking or returning a vector has an ABI that depends on the
// target it is compiled for).
template <class V>
__attribute__((always_inline)) inline void deinterleave(const float *p, V *ev, V *od) {
  V lo, hi;
  __builtin_memcpy(&lo, p, sizeof lo);
  __builtin_memcpy(&hi, p + lanes<V>, sizeof hi);
  if constexpr (lanes<V> == 16) {
    *ev = __builtin_shufflevector(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    *od = __builtin_shufflevector(lo, hi, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  } else {
    *ev = __builtin_shufflevector(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14);
    *od = __builtin_shufflevector(lo, hi, 1, 3, 5, 7, 9, 11, 13, 15);
  }
}

// The instruction set the kernels run with, read once (cpuid): AVX-512 (x86-64-v4: F, VL, BW, DQ),
// AVX2 + FMA (x86-64-v3), else the baseline; always the baseline where the clones are off.
enum class Isa { base, v3, v4 };
Isa detect_isa();
inline Isa isa() {
  static const Isa i = detect_isa();
  return i;
}

// Runs f((V *)nullptr), a generic lambda marked always_inline, compiled for the CPU's instruction
// set with V its register's vector: v16 on x86-64-v4, v8 on x86-64-v3 and the baseline. A loop
// written over V is thus never compiled for a target whose registers are narrower than V: GCC keeps
// arrays of such vectors in memory and moves them through general registers (16-float vectors on
// AVX2: rlx's GEMM ran 4-10x slower than with 8-float ones). Thread-safe: f runs on the caller.
#ifdef RLX_KERNEL_HAS_CLONES
template <class F>
__attribute__((target("arch=x86-64-v4"))) void lanes_v4(F &f) {
  f((v16 *)nullptr);
}
template <class F>
__attribute__((target("arch=x86-64-v3"))) void lanes_v3(F &f) {
  f((v8 *)nullptr);
}
#endif
template <class F>
void with_lanes(F &&f) {
#ifdef RLX_KERNEL_HAS_CLONES
  if (isa() == Isa::v4) return lanes_v4(f);
  if (isa() == Isa::v3) return lanes_v3(f);
#endif
  f((v8 *)nullptr);
}

// Threads the pool runs work on, the caller included: RLX_NUM_THREADS when set to a positive
// integer, else the CPUs this process may run on (sched_getaffinity). Read once.
int num_threads();

// Runs fn(begin, end) over [0, n) split into chunks of at least `grain` items, on the pool's
// workers and the calling thread; returns when every chunk is done. Work runs inline on the
// caller when the pool is busy with another caller (kernels on several streams at once never
// oversubscribe the cores) or when n is less than 4 grains (too little work to wake a worker for).
// fn must not throw.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)> &fn);

// The hand-off of a kernel's work to the thread that waits for the evaluation, made visible to
// ThreadSanitizer: MLX signals a finished task through its own atomics, which an uninstrumented
// MLX hides from TSan, so a buffer a pool worker read and the waiting thread then freed (and MLX's
// allocator gave to another thread) was reported as a race. parallel_for and a custom op's host
// kernel end with kernels_publish (a release, after the pool's workers have joined); rlx_mx_eval
// and rlx_mx_to_host call kernels_observe (an acquire) once MLX's wait returns. Thread-safe.
void kernels_publish();
void kernels_observe();

// Makes BLAS single-threaded (OpenBLAS, unless OPENBLAS_NUM_THREADS is set) for the products
// MLX still hands to it (other dtypes, addmm): rlx's own split their work over this pool
// (kernel_gemm.cpp). Idempotent.
void claim_blas();

// A packed right operand B [K, N] of the GEMM: panels of NR columns, panel p holding K rows of NR
// floats (row k: B[k, p*NR .. p*NR + NR)), zeros past column N.
constexpr int64_t NR = 16;
inline int64_t packed_floats(int64_t k, int64_t n) { return (n + NR - 1) / NR * NR * k; }

// Packs columns [n0, n1) of B [K, N] (row stride ldb; tb: stored transposed, B[k, j] at
// b[j * ldb + k]) into panels at dst (packed_floats(K, n1 - n0) floats).
void pack_b(bool tb, int64_t K, const float *b, int64_t ldb, int64_t n0, int64_t n1, float *dst);

// C[m, n] (row stride ldc) = A[m, K] @ B[K, n] on the calling thread (kernel_gemm.cpp): A[i, k]
// at a[i * lda + k], or at a[k * lda + i] with `at`; B packed, panel p at bp + p * ps.
void gemm_block(bool at, int64_t m, int64_t n, int64_t K, const float *a, int64_t lda, const float *bp, int64_t ps,
                float *c, int64_t ldc);

// C[m, nv] (row stride ldc, nv a multiple of NR, C's rows NR-aligned or not) = A[m, K] @ B on the
// calling thread, for a right operand B read in place: B[k, v] = src[off[k] + v] (kernel_conv.cpp's
// convolutions without patches). A[i, k] at a[i * lda + k]; or, with a_blocks > 0, A packed in
// blocks of R = gemm_rows_per_call() rows, block q at a + q * a_blocks, A[i, k] at
// a[(i / R) * a_blocks + k * R + i % R] (lda unused). Reads src up to src[max off + nv).
void gemm_block_offsets(int64_t m, int64_t nv, int64_t K, const float *a, int64_t lda, const float *src,
                        const int32_t *off, float *c, int64_t ldc, int64_t a_blocks = 0);
// The rows of A the micro-kernel takes per call (8 with AVX-512, else 6): a left operand packed in
// blocks of that many rows, A[i, k] at a[k * rows + i] within a block, is read as one sequential
// stream per block (gemm_block_offsets with a_blocks).
int gemm_rows_per_call();

// The rows of x [.., K]: the product of its leading dims (kernel_matvec.cpp).
int64_t rows_of(const mx::array &x);

// y [.., N] = x [.., K] W^T for float32 x of at most RLX_MX_CUDA_MATVEC_MAX_ROWS rows and a float16
// W [N, K] read as stored, on GPU stream s: a CUDA source kernel (kernel_matvec_cuda.cpp).
// swiglu 1 or 2: x [.., 2K] is the stacked gate/up product (gate first or last) and the product's
// x is silu(gate) * up; residual: y = x W^T + residual (float32, y's shape); norm (float32 [K],
// with swiglu 0): the product's x is RMSNorm(x) with gain norm and epsilon eps, each row's
// x / sqrt(mean(x^2) + eps) * norm (the RMSNorm op's formula, rlx/op_table.h).
mx::array matvec_f16_cuda(const mx::array &x, const mx::array &w, mx::Stream s, int swiglu = 0, const mx::array *residual = nullptr,
                          const mx::array *norm = nullptr, float eps = 0.f);

// rlx_mx_rope (shim.h) of float32 x [.., S, last] (any strides) with the float32 tables cs, sn
// [>= S, >= R / 2] (any strides) on GPU stream s, D dividing last: a CUDA source kernel
// (kernel_rope_cuda.cpp); y row-contiguous.
mx::array rope_cuda(const mx::array &x, const mx::array &cs, const mx::array &sn, int64_t D, int64_t R, bool interleaved,
                    float sign, mx::Stream s);

// rlx_mx_put_along_axis_inplace (shim.h) on GPU stream s: idx (int32 or int64) and upd (x's
// dtype) of one shape, x's but along axis, any strides; the result is x's buffer, written by a
// CUDA source kernel and made to depend on its marker output (kernel_scatter_cuda.cpp).
mx::array put_inplace_cuda(const mx::array &x, const mx::array &idx, const mx::array &upd, int axis, mx::Stream s);
// Appends to out the markers of the in-place writes (put_inplace_cuda) that produced a, through
// views of them (reshape, transpose, slice and the like): a GPU kernel reading a must also take
// them as inputs to be ordered after the writes (kernel_scatter_cuda.cpp).
void write_markers(const mx::array &a, std::vector<mx::array> &out);

// Blocks of n items of at least `min` each, about `want` of them.
int64_t blocks(int64_t n, int64_t min, int64_t want);

// C[m,n] = A[m,k] @ B[k,n] (row-major; ta / tb: A / B stored transposed, lda / ldb their row
// strides) on the calling thread: B packed into panels (a buffer per thread), then gemm_block.
void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
           float *c, int64_t ldc);

// A split of `items` independent m x n products into tiles for the pool: mb blocks of bm rows
// (at least 32) times nb blocks of bn columns (at least 64 where n allows, a multiple of NR, at
// most max_bn), about four tiles per thread in all; grain: tiles per chunk so that a chunk has
// at least ~128K multiply-adds (k per output).
struct Tiles {
  int64_t mb, nb, bm, bn, grain;
};
Tiles tiles(int64_t items, int64_t m, int64_t n, int64_t k, int64_t max_bn);

// Columns of a tile whose right operand is packed per tile: a multiple of NR, at most 256 KB of
// panels over depth k (L2).
int64_t pack_columns(int64_t k);

// A fused activation applied by a kernel to its output: y = act(x) (see shim.h rlx_mx_act).
struct Act {
  int kind = 0;
  float a = 0, b = 0;
};

// The base of rlx's kernels: CPU-only primitives (eval_gpu throws, naming the kernel), whose
// eval_cpu starts with begin (a new output buffer) or encoder (after out has a buffer), which
// register the inputs and out with the stream's command encoder and return it.
class CpuKernel : public mx::UnaryPrimitive {
 public:
  using mx::UnaryPrimitive::UnaryPrimitive;
  void eval_gpu(const std::vector<mx::array> &, mx::array &) override {
    throw std::runtime_error(std::string("[") + name() + "] has no GPU implementation");
  }

 protected:
  mx::cpu::CommandEncoder &encoder(const std::vector<mx::array> &in, mx::array &out) {
    auto &enc = mx::cpu::get_command_encoder(stream());
    for (auto &a : in) enc.set_input_array(a);
    enc.set_output_array(out);
    return enc;
  }
  mx::cpu::CommandEncoder &begin(const std::vector<mx::array> &in, mx::array &out) {
    out.set_data(mx::allocator::malloc(out.nbytes()));
    return encoder(in, out);
  }
};

// x as a kernel's row-contiguous operand: x itself when it is one already (an evaluated
// row-contiguous array, such as a constant, or an output of one of rlx's kernels, all of which
// are row-contiguous), else mx::contiguous(x): a node of its own that every lazy run builds and
// dispatches, copying only when needed.
inline mx::array row_contiguous(const mx::array &x, const mx::Stream &s) {
  bool ours = !x.is_available() && x.has_primitive() && !strncmp(x.primitive().name(), "Rlx", 3) &&
              strcmp(x.primitive().name(), "RlxHostKernel") != 0;
  if (ours || (x.is_available() && x.flags().row_contiguous)) return x;
  return mx::contiguous(x, false, s);
}

// The elements of a in row-major order (a's data computed): a's own data when it is
// row-contiguous, else a copy through its strides into buf. A kernel's task calls the Strided form
// below, so that it holds no mx::array. Kernels that take their operands this way need no
// mx::contiguous node in front of them (a decode step replays every node of its graph: one per
// operand per product otherwise), and a rare strided operand costs a copy in the task.
const void *dense(const mx::array &a, std::vector<uint8_t> &buf);

// An operand's memory, taken in a kernel's eval_cpu for its task (MLX keeps the buffer alive until
// the task has run), so that the task holds no mx::array: an array's last reference dropped in the
// task races, for ThreadSanitizer, with the caller's array::detach inside uninstrumented MLX.
struct Strided {
  const uint8_t *p;
  std::vector<int64_t> shape, strides;  // in elements; empty when row_contiguous
  size_t isz;
  bool row_contiguous;
};
Strided strided(const mx::array &a);
// Its elements in row-major order, as dense(a, buf).
const void *dense(const Strided &a, std::vector<uint8_t> &buf);

// Huge pages for a buffer that lives as long as an executable and is streamed at every run (an
// LLM's weights, read once per token): two threads streaming 200 MB of float16 rows (AVX2, this
// project's 2-core VM) read 21-30 GB/s with 4 KB pages, 31-34 with 2 MB pages (a TLB miss every
// 4 KB otherwise); a decode step of the llm_bench model in F16 went from 8.0 to 7.4 ms, Q4_0 from
// 3.3 to 2.9. Transparent huge pages (Linux, /sys/kernel/mm/transparent_hugepage/enabled
// "madvise" or "always"): advise_huge_pages(p, n) before the buffer is first written (madvise
// MADV_HUGEPAGE over its 4 KB pages, so that its 2 MB-aligned pages fault in huge),
// collapse_huge_pages(p, n) once it is written (MADV_COLLAPSE, Linux 6.1, over each 2 MB page it
// touches: those it shares with its neighbours, which MLX's std::malloc places anywhere, are made
// huge too; their contents are kept). Buffers under 1 MB, non-Linux systems, kernels that
// decline, and builds with a GPU backend (MLX's host memory is then its CUDA allocator's):
// no-ops. Thread-safe.
void advise_huge_pages(void *p, size_t n);
void collapse_huge_pages(void *p, size_t n);

// The sum (or mean) of float32 x over `axes` (any order, negative from the end) with rlx's kernel
// (kernel_reduce.cpp) when they are x's last axes and s is a CPU stream; otherwise no value (the
// caller runs MLX's reduction). x non-empty.
std::optional<mx::array> sum_trailing(const mx::Stream &s, const mx::array &x, std::vector<int> axes, bool mean, bool keepdims);

// xs concatenated along axis (negative from the end) with rlx's kernel (kernel_concat.cpp) when s
// is a CPU stream and xs are 2 or more arrays of one dtype and rank, equal but along axis;
// otherwise no value (the caller runs MLX's concatenate).
std::optional<mx::array> concat(const mx::Stream &s, const std::vector<mx::array> &xs, int axis);

// Whether a convolution takes Winograd's F(2x2, 3x3) (kernel_winograd.cpp): its filters fit
// (shim.h rlx_mx_winograd_fits) and its output is at least 4 x 4 and at most 2^16 wide.
bool winograd_applies(int64_t C, int64_t Co, int64_t group, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
                      int64_t OH, int64_t OW);
// y [N, Co, OH, OW] = act(conv(x [N, C, H, W], w [Co, C, 3, 3]) + b [Co] (NULL: none)), pads ph
// (top) and pw (left) (those at the bottom and right follow from OH, OW), on the pool, with the
// filters given transformed, U [16, ceil(Co / R), C, R] for gemm_rows_per_call()'s R
// (rlx_mx_winograd_weights); float32, row-contiguous.
// pool: y [N, Co, OH / 2, OW / 2] is instead its 2 x 2 max pool at stride 2 (ONNX MaxPool, no
// pads, floor mode), each window one 2 x 2 tile.
void winograd_conv(int64_t N, int64_t C, int64_t H, int64_t W, int64_t Co, int64_t ph, int64_t pw, int64_t OH, int64_t OW, const float *x,
                   const float *U, const float *b, const Act &act, float *y, bool pool = false);

// Applies act to acc[0..n) in place (float).
void apply_act(const Act &act, float *acc, int64_t n);

// Whether act is piecewise linear (NONE, RELU, CLIP, HARD_SIGMOID, HARD_SWISH): the ones
// bias_act_copy applies.
bool piecewise_linear(const Act &act);

// y[i] = act(x[i] + bias) for i < n (y may be x) when act is piecewise linear and true; else
// false, y untouched. One pass: a kernel's copy-out.
bool bias_act_copy(const Act &act, float bias, const float *x, float *y, int64_t n);

// FusedSwiGLU's rows r0..r1 of x [rows, 2 n] (gate and up halves side by side, gate first or
// last): y[r, j] = silu(gate) * up (kernel_swiglu.cpp), on the calling thread.
void swiglu_rows(const float *x, int64_t r0, int64_t r1, int64_t n, bool gate_first, float *y);

// When y is the output of rlx's SwiGLU kernel, not yet evaluated: its operand x [.., 2 n] and
// gate_first, and true; else false.
bool swiglu_of(const mx::array &y, mx::array *x, bool *gate_first);

// The epilogue of a block C[m, n] (row stride ldc): + row_bias[i] and/or + col_bias[j] (NULL:
// none), then act.
void epilogue(float *c, int64_t ldc, int64_t m, int64_t n, const float *row_bias, const float *col_bias, const Act &act);

// y[i] = exp(x[i] - shift) for i < n (SLEEF, 4 at a time; y may be x); returns the sum of the y[i].
float exp_shifted(const float *x, float *y, int64_t n, float shift);

}  // namespace rlx_kernels
