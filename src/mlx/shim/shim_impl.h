// shim_impl.h: C++ internals shared by the shim's translation units (not part of the C ABI).
#pragma once

#include <deque>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "mlx/mlx.h"
#include "mlx/shim/shim.h"

namespace mx = mlx::core;

// The memory of device d in bytes (rlx_mx_device_memory).
size_t rlx_mx_device_bytes(const mx::Device &d);

struct rlx_mx {
  mx::Device device;
  mx::Stream stream;
  std::deque<mx::array> arena;
  rlx_status *err = nullptr;
  // The most bytes one array may take (rlx_mx_set_max_allocation): put and admit refuse more.
  size_t max_alloc;
  // On a GPU, how the arrays behind some handles of the arena were made, for a later op to fuse
  // them (kernel_matvec_cuda.cpp): rlx's float16 products, SwiGLUs and RMSNorms. Cleared with the arena.
  struct Fusible {
    enum Kind { kProduct, kSwiGLU, kRmsNorm } kind;
    std::vector<mx::array> in;  // a product's {x, W} or {x, W, norm gain}, a SwiGLU's {x}, an RMSNorm's {x, gain}
    int swiglu = 0;             // a product's x as matvec_f16_cuda's swiglu; a SwiGLU's: 1 gate first, 2 last
    float eps = 0.f;            // an RMSNorm's, or a product's that normalizes x
  };
  std::unordered_map<const rlx_mx_arr *, Fusible> fusible;

  rlx_mx(mx::Device d, mx::Stream s) : device(d), stream(s), max_alloc(rlx_mx_device_bytes(d)) {}
  ~rlx_mx() { rlx_status_free(err); }

  // Every array an op returns passes here: one larger than max_alloc is refused before MLX
  // allocates it (admit).
  rlx_mx_arr *put(mx::array a) {
    admit(a.shape(), a.dtype(), "an array");
    arena.push_back(std::move(a));
    return reinterpret_cast<rlx_mx_arr *>(&arena.back());
  }
  // Throw RESOURCE_EXHAUSTED (a status carried by the exception message, rlx_mx_encode_status)
  // naming `what` when it takes more than max_alloc bytes: `what` of the given shape and dtype, or
  // `bytes` (SIZE_MAX: more than a size_t holds) for a buffer MLX allocates inside an op.
  void admit(const mx::Shape &shape, mx::Dtype dt, const char *what) const;
  void admit_bytes(size_t bytes, const std::string &what) const;
  void fail(rlx_status_code code, const std::string &msg) {
    if (!err) err = rlx_status_make(code, "MLX: %s", msg.c_str());
  }
  // Records the in-flight exception.
  void fail_current() noexcept;
};

// An mx::array behind a handle.
inline mx::array &A(rlx_mx_arr *a) { return *reinterpret_cast<mx::array *>(a); }

mx::Dtype to_mx(rlx_dtype d);
// v as a value the MLX storage dtype of `d` may take when it is an integer one: NaN -> 0,
// saturated at the dtype's limits (a double outside them would make the conversion undefined
// behaviour); v itself for other dtypes.
double saturate_for(double v, rlx_dtype d);
bool from_mx(mx::Dtype d, rlx_dtype *out);
mx::Shape to_shape(int rank, const int64_t *dims);

// A status carried through an MLX exception message (an error raised inside a task of a stream,
// where MLX keeps only the message): "[rlx CODE] message". rlx_mx::fail_current restores it.
#define RLX_MX_STATUS_TAG "[rlx "
std::string rlx_mx_encode_status(const rlx_status *st);

// Runs `body` (returning an rlx_mx_arr handle) in a guarded way: NULL on failed contexts or NULL
// operands; exceptions are captured into the context.
#define SHIM_OP_HANDLE(c, operands_ok, body)          \
  do {                                                 \
    if (!(c) || (c)->err) return nullptr;              \
    if (!(operands_ok)) {                              \
      (c)->fail(RLX_STATUS_INTERNAL, "NULL operand");  \
      return nullptr;                                  \
    }                                                  \
    try {                                              \
      return (body);                                   \
    } catch (...) {                                    \
      (c)->fail_current();                             \
      return nullptr;                                  \
    }                                                  \
  } while (0)

// SHIM_OP_HANDLE for a `body` returning mx::array, put into the arena.
#define SHIM_OP(c, operands_ok, body) SHIM_OP_HANDLE(c, operands_ok, (c)->put(body))
