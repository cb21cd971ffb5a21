// kernel_scatter.cpp: ScatterElements without reduction written into its data operand's own
// buffer on the CPU (rlx_mx_put_along_axis_inplace; on a GPU kernel_scatter_cuda.cpp's kernel):
// an LLM step's KV-cache rows.
//
// MLX's put_along_axis copies its operand into a new buffer unless the operand is donatable, and
// MLX decides that when the step is submitted: a buffer is donatable only once no node of an
// earlier evaluation still references it. A decode loop that commits step i + 1 while step i runs
// (rlx_llm_generate) therefore copied the caches that step i had not finished with: 4 of the 24
// caches per step of the llm_bench model on the CPU, each a whole [capacity, kv heads x head dim]
// buffer (at the default capacity of 2048, 8 MB per step: decode 138 -> 118 tokens/s). Nodes of
// one stream run in the order they were submitted, so the earlier readers of the buffer have run
// before this write does; the executable lowers a scatter this way only where nothing else can
// read the old values (exec_handles.c, rlx_exec_plan_inplace).
//
// Formula (ONNX ScatterElements, reduction none): out = x, then for every index (i0, .., in) of
// idx, out[i0, .., idx[i0, .., in], .., in] = upd[i0, .., in] (the index replacing the axis
// coordinate); idx and upd of x's shape except along the axis, indices in [0, x.shape(axis)).
#include <cstring>
#include <vector>

#include "mlx/backend/cpu/encoder.h"
#include "mlx/shim/kernels.h"
#include "mlx/shim/shim_impl.h"

namespace rlx_kernels {
namespace {

// Rows of `inner` elements of upd go to x at the rows idx names: x viewed as [outer, X, inner], idx
// and upd as [outer, A, inner].
template <class I>
void put_rows(uint8_t *x, const I *idx, const uint8_t *upd, int64_t outer, int64_t X, int64_t A, int64_t inner, size_t isz) {
  for (int64_t o = 0; o < outer; o++)
    for (int64_t a = 0; a < A; a++) {
      const int64_t at = (o * A + a) * inner;
      const I *ir = idx + at;
      const uint8_t *ur = upd + at * (int64_t)isz;
      for (int64_t j = 0; j < inner; j++)
        std::memcpy(x + ((o * X + (int64_t)ir[j]) * inner + j) * (int64_t)isz, ur + j * (int64_t)isz, isz);
    }
}

class PutInPlace : public CpuKernel {
 public:
  PutInPlace(mx::Stream s, int axis) : CpuKernel(s), axis_(axis) {}
  // in: x (any dtype), idx int32 or int64 and upd (x's dtype) of one shape, x's but along axis.
  void eval_cpu(const std::vector<mx::array> &in, mx::array &out) override {
    const mx::array &x = in[0];
    bool own = x.flags().row_contiguous && x.data_size() == x.size();
    if (own)
      out.copy_shared_buffer(x);
    else
      out.set_data(mx::allocator::malloc(out.nbytes()));
    auto &enc = encoder(in, out);
    Strided xs = strided(x), is = strided(in[1]), us = strided(in[2]);
    int64_t outer = 1, inner = 1, X = x.shape(axis_), A = in[1].shape(axis_);
    for (int d = 0; d < axis_; d++) outer *= x.shape(d);
    for (int d = axis_ + 1; d < (int)x.ndim(); d++) inner *= x.shape(d);
    uint8_t *y = out.data<uint8_t>();
    size_t isz = x.itemsize(), nbytes = out.nbytes();
    bool wide = in[1].dtype() == mx::int64;
    enc.dispatch([=]() {
      thread_local std::vector<uint8_t> buf[3];
      if (!own) std::memcpy(y, dense(xs, buf[0]), nbytes);
      const void *ip = dense(is, buf[1]);
      const uint8_t *up = static_cast<const uint8_t *>(dense(us, buf[2]));
      if (wide)
        put_rows(y, static_cast<const int64_t *>(ip), up, outer, X, A, inner, isz);
      else
        put_rows(y, static_cast<const int32_t *>(ip), up, outer, X, A, inner, isz);
    });
  }
  const char *name() const override { return "RlxPutInPlace"; }
  bool is_equivalent(const mx::Primitive &other) const override { return axis_ == static_cast<const PutInPlace &>(other).axis_; }
  std::vector<mx::Shape> output_shapes(const std::vector<mx::array> &in) override { return {in[0].shape()}; }

 private:
  int axis_;
};

}  // namespace
}  // namespace rlx_kernels

extern "C" rlx_mx_arr *rlx_mx_put_along_axis_inplace(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *idx, rlx_mx_arr *upd, int axis) {
  SHIM_OP(c, x && idx && upd, ([&] {
            mx::array xa = A(x), ia = A(idx), ua = A(upd);
            if (ia.dtype() != mx::int32 && ia.dtype() != mx::int64) ia = mx::astype(ia, mx::int64, c->stream);
            int nd = (int)xa.ndim();
            bool ok = axis >= 0 && axis < nd && ia.ndim() == xa.ndim() && ia.shape() == ua.shape() && ua.dtype() == xa.dtype();
            for (int d = 0; ok && d < nd; d++) ok = d == axis || ia.shape(d) == xa.shape(d);
            if (!ok)
              throw std::invalid_argument("put_along_axis_inplace takes x, indices and updates of x's dtype, both of x's shape "
                                          "except along the axis");
            if (c->device != mx::Device::cpu) return rlx_kernels::put_inplace_cuda(xa, ia, ua, axis, c->stream);
            auto prim = std::make_shared<rlx_kernels::PutInPlace>(c->stream, axis);
            mx::Shape shape = xa.shape();
            return mx::array(std::move(shape), xa.dtype(), std::move(prim), {xa, ia, ua});
          }()));
}
