// kernel_concat.cpp: Concat on the CPU (rlx_mx_concatenate).
//
// MLX's CPU concatenate copies each input into a strided view of its output with its general copy,
// an index computed per element (copy_general_general: 2.9% of YOLOv8n's samples, for its 33
// concatenations of feature maps along the channels). Along axis a of row-major arrays, input i
// is `outer` runs of n_i * inner contiguous elements, and so is its place in the output: here each
// run is memcpy'd, in pieces of at most 256 KB split over the kernel pool.
#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "mlx/backend/cpu/encoder.h"
#include "mlx/shim/kernels.h"

namespace rlx_kernels {
namespace {

constexpr int64_t kPieceBytes = 256 << 10;

class Concat : public CpuKernel {
 public:
  Concat(mx::Stream s, int axis) : CpuKernel(s), axis_(axis) {}
  // inputs: arrays of one dtype and rank, equal but along axis_ (>= 0), any strides (see dense).
  void eval_cpu(const std::vector<mx::array> &in, mx::array &out) override {
    auto &enc = begin(in, out);
    int64_t outer = 1, inner = (int64_t)out.itemsize();
    for (int d = 0; d < axis_; d++) outer *= out.shape(d);
    for (int d = axis_ + 1; d < (int)out.ndim(); d++) inner *= out.shape(d);
    uint8_t *y = out.data<uint8_t>();
    int64_t row = out.shape(axis_) * inner; /* bytes of one outer index in the output */
    std::vector<Strided> xs;
    std::vector<int64_t> runs; /* input i's bytes within each output row */
    for (const auto &a : in) xs.push_back(strided(a)), runs.push_back(a.shape(axis_) * inner);
    enc.dispatch([xs, runs, y, outer, row]() {
      thread_local std::vector<std::vector<uint8_t>> bufs;
      if (bufs.size() < xs.size()) bufs.resize(xs.size());
      struct Piece {
        const uint8_t *src;
        uint8_t *dst;
        int64_t bytes;
      };
      std::vector<Piece> pieces;
      int64_t at = 0; /* input i's bytes start at `at` within each output row */
      for (size_t i = 0; i < xs.size(); i++) {
        const uint8_t *x = static_cast<const uint8_t *>(dense(xs[i], bufs[i]));
        int64_t run = runs[i];
        for (int64_t o = 0; o < outer; o++)
          for (int64_t b = 0; b < run; b += kPieceBytes)
            pieces.push_back({x + o * run + b, y + o * row + at + b, std::min(kPieceBytes, run - b)});
        at += run;
      }
      parallel_for((int64_t)pieces.size(), 1, [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; p++) std::memcpy(pieces[p].dst, pieces[p].src, (size_t)pieces[p].bytes);
      });
    });
  }
  // Each input's cotangent is its slice of the output's (the lowerings that differentiate through
  // MLX meet this kernel).
  std::vector<mx::array> vjp(const std::vector<mx::array> &primals, const std::vector<mx::array> &cotangents,
                             const std::vector<int> &argnums, const std::vector<mx::array> &) override {
    const mx::array &ct = cotangents[0];
    std::vector<int> starts(primals.size() + 1, 0);
    for (size_t i = 0; i < primals.size(); i++) starts[i + 1] = starts[i] + primals[i].shape(axis_);
    std::vector<mx::array> grads;
    for (int i : argnums) {
      mx::Shape lo(ct.ndim(), 0), hi = ct.shape();
      lo[axis_] = starts[i], hi[axis_] = starts[i + 1];
      grads.push_back(mx::slice(ct, lo, hi, stream()));
    }
    return grads;
  }
  const char *name() const override { return "RlxConcat"; }
  bool is_equivalent(const mx::Primitive &other) const override { return axis_ == static_cast<const Concat &>(other).axis_; }
  std::vector<mx::Shape> output_shapes(const std::vector<mx::array> &in) override {
    mx::Shape shape = in[0].shape();
    for (size_t i = 1; i < in.size(); i++) shape[axis_] += in[i].shape(axis_);
    return {shape};
  }

 private:
  int axis_;
};

}  // namespace

std::optional<mx::array> concat(const mx::Stream &s, const std::vector<mx::array> &xs, int axis) {
  if (s.device != mx::Device::cpu || xs.size() < 2) return std::nullopt;
  int r = (int)xs[0].ndim();
  axis = axis < 0 ? axis + r : axis;
  if (axis < 0 || axis >= r) return std::nullopt;
  int64_t along = 0;
  for (const auto &x : xs) {
    if (x.dtype() != xs[0].dtype() || (int)x.ndim() != r) return std::nullopt;
    for (int d = 0; d < r; d++)
      if (d != axis && x.shape(d) != xs[0].shape(d)) return std::nullopt;
    along += x.shape(axis);
  }
  if (along > std::numeric_limits<int>::max()) return std::nullopt; /* MLX's shapes are int */
  auto prim = std::make_shared<Concat>(s, axis);
  mx::Shape shape = prim->output_shapes(xs)[0];
  return mx::array(std::move(shape), xs[0].dtype(), std::move(prim), xs);
}

}  // namespace rlx_kernels
