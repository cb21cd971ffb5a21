// kernel_dense.cpp: an operand of rlx's kernels as row-major elements (see kernels.h dense).
#include <cstring>
#include <vector>

#include "mlx/shim/kernels.h"

namespace rlx_kernels {

const void *dense(const mx::array &a, std::vector<uint8_t> &buf) {
  const uint8_t *src = a.data<uint8_t>();
  if (a.flags().row_contiguous || a.size() == 0) return src;
  size_t isz = a.itemsize();
  int nd = (int)a.ndim();
  buf.resize(a.size() * isz);
  // the innermost axis as one run of elements, the outer ones counted like an odometer
  int64_t inner = a.shape(nd - 1), step = a.strides()[nd - 1] * (int64_t)isz;
  std::vector<int64_t> idx(nd, 0);
  uint8_t *dst = buf.data();
  for (size_t done = 0; done < a.size(); done += inner) {
    int64_t off = 0;
    for (int d = 0; d + 1 < nd; d++) off += idx[d] * a.strides()[d];
    const uint8_t *p = src + off * (int64_t)isz;
    for (int64_t j = 0; j < inner; j++, dst += isz) std::memcpy(dst, p + j * step, isz);
    for (int d = nd - 2; d >= 0 && ++idx[d] == a.shape(d); d--) idx[d] = 0;
  }
  return buf.data();
}

}  // namespace rlx_kernels
