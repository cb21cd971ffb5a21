// kernel_dense.cpp: an operand of rlx's kernels as row-major elements (see kernels.h dense), and
// the huge pages of buffers that kernels stream through (see kernels.h advise_huge_pages).
#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "mlx/shim/kernels.h"

namespace rlx_kernels {

Strided strided(const mx::array &a) {
  Strided v{a.data<uint8_t>(), {}, {}, a.itemsize(), a.flags().row_contiguous || a.size() == 0};
  for (size_t d = 0; !v.row_contiguous && d < a.ndim(); d++) v.shape.push_back(a.shape(d)), v.strides.push_back(a.strides()[d]);
  return v;
}

const void *dense(const mx::array &a, std::vector<uint8_t> &buf) {
  if (a.flags().row_contiguous || a.size() == 0) return a.data<uint8_t>();
  return dense(strided(a), buf);
}

const void *dense(const Strided &a, std::vector<uint8_t> &buf) {
  if (a.row_contiguous) return a.p;
  size_t isz = a.isz, size = 1;
  // the axes of more than one element (a size-1 axis moves nothing); the innermost as one run of
  // elements, the outer ones counted like an odometer
  std::vector<int64_t> shape, strides;
  for (size_t d = 0; d < a.shape.size(); d++) {
    size *= (size_t)a.shape[d];
    if (a.shape[d] > 1) shape.push_back(a.shape[d]), strides.push_back(a.strides[d]);
  }
  if (shape.empty()) shape.push_back(1), strides.push_back(1);
  buf.resize(size * isz);
  int nd = (int)shape.size();
  int64_t inner = shape[nd - 1], step = strides[nd - 1] * (int64_t)isz;
  std::vector<int64_t> idx(nd, 0);
  uint8_t *dst = buf.data();
  for (size_t done = 0; done < size; done += inner) {
    int64_t off = 0;
    for (int d = 0; d + 1 < nd; d++) off += idx[d] * strides[d];
    const uint8_t *p = a.p + off * (int64_t)isz;
    if (step == (int64_t)isz) { /* a run of consecutive elements */
      std::memcpy(dst, p, inner * isz);
      dst += inner * isz;
    } else if (isz == 4) {
      for (int64_t j = 0; j < inner; j++, dst += 4) std::memcpy(dst, p + j * step, 4);
    } else {
      for (int64_t j = 0; j < inner; j++, dst += isz) std::memcpy(dst, p + j * step, isz);
    }
    for (int d = nd - 2; d >= 0 && ++idx[d] == shape[d]; d--) idx[d] = 0;
  }
  return buf.data();
}

namespace {

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25 /* Linux 6.1's value (asm-generic/mman-common.h); older glibc headers lack it */
#endif
constexpr uintptr_t kPage = 4096, kHuge = 2u << 20; /* x86-64's and arm64's base and PMD pages */
constexpr size_t kMinHuge = 1u << 20;

// Only the CPU build's allocator (std::malloc): with a GPU backend MLX's host arrays are its
// CUDA allocator's (managed or pinned memory), which madvise should not touch.
bool host_malloc() {
  static const bool cpu_only = !mx::is_available(mx::Device::gpu);
  return cpu_only;
}

}  // namespace

void advise_huge_pages(void *p, size_t n) {
#ifdef MADV_HUGEPAGE
  if (!p || n < kMinHuge || !host_malloc()) return;
  uintptr_t b = (uintptr_t)p & ~(kPage - 1);
  madvise((void *)b, (uintptr_t)p + n - b, MADV_HUGEPAGE); /* advice: a failure changes nothing */
#else
  (void)p, (void)n;
#endif
}

void collapse_huge_pages(void *p, size_t n) {
#ifdef MADV_HUGEPAGE
  if (!p || n < kMinHuge || !host_malloc()) return;
  uintptr_t b = (uintptr_t)p & ~(kHuge - 1), e = ((uintptr_t)p + n + kHuge - 1) & ~(kHuge - 1);
  for (uintptr_t a = b; a < e; a += kHuge) madvise((void *)a, kHuge, MADV_COLLAPSE); /* each region on its own: one that fails leaves the others */
#else
  (void)p, (void)n;
#endif
}

}  // namespace rlx_kernels
