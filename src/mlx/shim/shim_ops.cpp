// shim_ops.cpp: one C function per mlx::core op used by the lowering.
#include "mlx/shim/kernels.h"
#include "mlx/shim/shim_impl.h"

namespace {

std::vector<int> to_ints(int n, const int64_t *v) {
  std::vector<int> r;
  for (int i = 0; i < n; i++) r.push_back(static_cast<int>(v[i]));
  return r;
}

mx::Shape to_shape_any(int n, const int64_t *v) {  // allows negative entries (slice bounds)
  mx::Shape s;
  for (int i = 0; i < n; i++) {
    if (v[i] < INT32_MIN || v[i] > INT32_MAX) throw std::invalid_argument("slice bound " + std::to_string(v[i]) + " outside MLX's int32 range");
    s.push_back(static_cast<mx::ShapeElem>(v[i]));
  }
  return s;
}

std::vector<mx::array> arrays(rlx_mx_arr *const *a, size_t n) {
  std::vector<mx::array> v;
  for (size_t i = 0; i < n; i++) v.push_back(A(a[i]));
  return v;
}

bool all_set(rlx_mx_arr *const *a, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!a[i]) return false;
  return true;
}

// MLX's CPU reduction of an array without elements loops for a length it reads from
// uninitialized state (fuzz_graph: 0 s to over 60 s for a LayerNorm over an empty axis), and some
// of its reductions refuse one: a reduction of an empty x is its identity (v, of dtype t) over the
// result's shape, and a normalization or softmax of an empty x is x.
mx::array identity(const mx::Shape &shape, mx::Dtype t, double v, mx::Stream s) {
  rlx_dtype d = RLX_DTYPE_F32;
  if (t == mx::bool_) v = v > 0;
  else if (from_mx(t, &d)) v = saturate_for(v, d); /* integer extremes for max / min */
  mx::array fill = t == mx::int64       ? mx::array((int64_t)v, t)
                   : t == mx::uint64    ? mx::array((uint64_t)v, t)
                   : t == mx::complex64 ? mx::array(mx::complex64_t((float)v, 0.f))
                                        : mx::array(v, t);
  return mx::full(shape, fill, s);
}

}  // namespace

extern "C" {

rlx_mx_arr *rlx_mx_unary(rlx_mx *c, rlx_mx_unary_op op, rlx_mx_arr *a) {
  SHIM_OP(c, a, ([&] {
            const mx::array &x = A(a);
            auto s = c->stream;
            switch (op) {
              case RLX_MXU_ABS: return mx::abs(x, s);
              case RLX_MXU_NEGATIVE: return mx::negative(x, s);
              case RLX_MXU_EXP: return mx::exp(x, s);
              case RLX_MXU_LOG: return mx::log(x, s);
              case RLX_MXU_SQRT: return mx::sqrt(x, s);
              case RLX_MXU_RSQRT: return mx::rsqrt(x, s);
              case RLX_MXU_SIN: return mx::sin(x, s);
              case RLX_MXU_COS: return mx::cos(x, s);
              case RLX_MXU_TAN: return mx::tan(x, s);
              case RLX_MXU_ARCSIN: return mx::arcsin(x, s);
              case RLX_MXU_ARCCOS: return mx::arccos(x, s);
              case RLX_MXU_ARCTAN: return mx::arctan(x, s);
              case RLX_MXU_SINH: return mx::sinh(x, s);
              case RLX_MXU_COSH: return mx::cosh(x, s);
              case RLX_MXU_TANH: return mx::tanh(x, s);
              case RLX_MXU_ARCSINH: return mx::arcsinh(x, s);
              case RLX_MXU_ARCCOSH: return mx::arccosh(x, s);
              case RLX_MXU_ARCTANH: return mx::arctanh(x, s);
              case RLX_MXU_SIGMOID: return mx::sigmoid(x, s);
              case RLX_MXU_ROUND: return mx::round(x, 0, s);
              case RLX_MXU_FLOOR: return mx::floor(x, s);
              case RLX_MXU_CEIL: return mx::ceil(x, s);
              case RLX_MXU_SIGN: return mx::sign(x, s);
              case RLX_MXU_RECIPROCAL: return mx::reciprocal(x, s);
              case RLX_MXU_ERF: return mx::erf(x, s);
              case RLX_MXU_LOGICAL_NOT: return mx::logical_not(x, s);
              case RLX_MXU_ISNAN: return mx::isnan(x, s);
              case RLX_MXU_ISINF: return mx::isinf(x, s);
              case RLX_MXU_ISPOSINF: return mx::isposinf(x, s);
              case RLX_MXU_ISNEGINF: return mx::isneginf(x, s);
              case RLX_MXU_BITWISE_INVERT: return mx::bitwise_invert(x, s);
              case RLX_MXU_SQUARE: return mx::square(x, s);
              case RLX_MXU_LOG1P: return mx::log1p(x, s);
              case RLX_MXU_EXPM1: return mx::expm1(x, s);
              case RLX_MXU_STOP_GRADIENT: return mx::stop_gradient(x, s);
              case RLX_MXU_REAL: return mx::real(x, s);
              case RLX_MXU_IMAG: return mx::imag(x, s);
              case RLX_MXU_ERFINV: return mx::erfinv(x, s);
            }
            throw std::invalid_argument("unknown unary op");
          }()));
}

rlx_mx_arr *rlx_mx_binary(rlx_mx *c, rlx_mx_binary_op op, rlx_mx_arr *a, rlx_mx_arr *b) {
  SHIM_OP(c, a && b, ([&] {
            const mx::array &x = A(a), &y = A(b);
            auto s = c->stream;
            switch (op) {
              case RLX_MXB_ADD: return mx::add(x, y, s);
              case RLX_MXB_SUBTRACT: return mx::subtract(x, y, s);
              case RLX_MXB_MULTIPLY: return mx::multiply(x, y, s);
              case RLX_MXB_DIVIDE: return mx::divide(x, y, s);
              case RLX_MXB_MAXIMUM: return mx::maximum(x, y, s);
              case RLX_MXB_MINIMUM: return mx::minimum(x, y, s);
              case RLX_MXB_POWER: return mx::power(x, y, s);
              case RLX_MXB_REMAINDER: return mx::remainder(x, y, s);
              case RLX_MXB_FLOOR_DIVIDE: return mx::floor_divide(x, y, s);
              case RLX_MXB_LOGICAL_AND: return mx::logical_and(x, y, s);
              case RLX_MXB_LOGICAL_OR: return mx::logical_or(x, y, s);
              case RLX_MXB_BITWISE_AND: return mx::bitwise_and(x, y, s);
              case RLX_MXB_BITWISE_OR: return mx::bitwise_or(x, y, s);
              case RLX_MXB_BITWISE_XOR: return mx::bitwise_xor(x, y, s);
              case RLX_MXB_LEFT_SHIFT: return mx::left_shift(x, y, s);
              case RLX_MXB_RIGHT_SHIFT: return mx::right_shift(x, y, s);
              case RLX_MXB_EQUAL: return mx::equal(x, y, s);
              case RLX_MXB_NOT_EQUAL: return mx::not_equal(x, y, s);
              case RLX_MXB_LESS: return mx::less(x, y, s);
              case RLX_MXB_LESS_EQUAL: return mx::less_equal(x, y, s);
              case RLX_MXB_GREATER: return mx::greater(x, y, s);
              case RLX_MXB_GREATER_EQUAL: return mx::greater_equal(x, y, s);
              case RLX_MXB_LOGADDEXP: return mx::logaddexp(x, y, s);
              case RLX_MXB_ARCTAN2: return mx::arctan2(x, y, s);
            }
            throw std::invalid_argument("unknown binary op");
          }()));
}

rlx_mx_arr *rlx_mx_where(rlx_mx *c, rlx_mx_arr *cond, rlx_mx_arr *x, rlx_mx_arr *y) {
  SHIM_OP(c, cond && x && y, mx::where(A(cond), A(x), A(y), c->stream));
}

rlx_mx_arr *rlx_mx_astype(rlx_mx *c, rlx_mx_arr *a, rlx_dtype dtype) {
  SHIM_OP(c, a, mx::astype(A(a), to_mx(dtype), c->stream));
}

rlx_mx_arr *rlx_mx_view(rlx_mx *c, rlx_mx_arr *a, rlx_dtype dtype) {
  SHIM_OP(c, a, mx::view(mx::contiguous(A(a), false, c->stream), to_mx(dtype), c->stream));
}

rlx_mx_arr *rlx_mx_clip(rlx_mx *c, rlx_mx_arr *a, rlx_mx_arr *lo, rlx_mx_arr *hi) {
  SHIM_OP(c, a, mx::clip(A(a), lo ? std::optional<mx::array>(A(lo)) : std::nullopt,
                         hi ? std::optional<mx::array>(A(hi)) : std::nullopt, c->stream));
}

rlx_mx_arr *rlx_mx_reshape(rlx_mx *c, rlx_mx_arr *a, int rank, const int64_t *dims) {
  SHIM_OP(c, a, mx::reshape(A(a), to_shape(rank, dims), c->stream));
}

rlx_mx_arr *rlx_mx_transpose(rlx_mx *c, rlx_mx_arr *a, int rank, const int64_t *perm) {
  SHIM_OP(c, a, mx::transpose(A(a), to_ints(rank, perm), c->stream));
}

rlx_mx_arr *rlx_mx_slice(rlx_mx *c, rlx_mx_arr *a, int rank, const int64_t *start, const int64_t *stop,
                         const int64_t *strides) {
  SHIM_OP(c, a, mx::slice(A(a), to_shape_any(rank, start), to_shape_any(rank, stop), to_shape_any(rank, strides), c->stream));
}

rlx_mx_arr *rlx_mx_slice_update(rlx_mx *c, rlx_mx_arr *a, rlx_mx_arr *upd, int rank, const int64_t *start,
                                const int64_t *stop, const int64_t *strides) {
  SHIM_OP(c, a && upd, mx::slice_update(A(a), A(upd), to_shape_any(rank, start), to_shape_any(rank, stop),
                                        to_shape_any(rank, strides), c->stream));
}

rlx_mx_arr *rlx_mx_concatenate(rlx_mx *c, rlx_mx_arr *const *a, size_t n, int axis) {
  SHIM_OP(c, all_set(a, n), ([&] {
            std::vector<mx::array> xs = arrays(a, n);
            if (auto k = rlx_kernels::concat(c->stream, xs, axis)) return *k;
            return mx::concatenate(xs, axis, c->stream);
          }()));
}

rlx_mx_arr *rlx_mx_stack(rlx_mx *c, rlx_mx_arr *const *a, size_t n, int axis) {
  SHIM_OP(c, all_set(a, n), mx::stack(arrays(a, n), axis, c->stream));
}

rlx_mx_arr *rlx_mx_broadcast_to(rlx_mx *c, rlx_mx_arr *a, int rank, const int64_t *dims) {
  SHIM_OP(c, a, mx::broadcast_to(A(a), to_shape(rank, dims), c->stream));
}

rlx_mx_arr *rlx_mx_pad(rlx_mx *c, rlx_mx_arr *a, int rank, const int64_t *lo, const int64_t *hi, rlx_mx_arr *value,
                       const char *mode) {
  SHIM_OP(c, a && value, ([&] {
            std::vector<int> axes;
            for (int i = 0; i < rank; i++) axes.push_back(i);
            return mx::pad(A(a), axes, to_shape(rank, lo), to_shape(rank, hi), A(value), mode, c->stream);
          }()));
}

rlx_mx_arr *rlx_mx_tile(rlx_mx *c, rlx_mx_arr *a, int rank, const int64_t *reps) {
  SHIM_OP(c, a, mx::tile(A(a), to_ints(rank, reps), c->stream));
}

rlx_mx_arr *rlx_mx_as_strided(rlx_mx *c, rlx_mx_arr *a, int rank, const int64_t *shape, const int64_t *strides,
                              int64_t offset) {
  SHIM_OP(c, a, ([&] {
            mx::Strides st;
            for (int i = 0; i < rank; i++) st.push_back(strides[i]);
            return mx::as_strided(mx::contiguous(A(a), false, c->stream), to_shape(rank, shape), st, (size_t)offset, c->stream);
          }()));
}

rlx_mx_arr *rlx_mx_contiguous(rlx_mx *c, rlx_mx_arr *a) { SHIM_OP(c, a, mx::contiguous(A(a), false, c->stream)); }

rlx_mx_arr *rlx_mx_arange(rlx_mx *c, double start, double stop, double step, rlx_dtype dtype) {
  SHIM_OP(c, true, mx::arange(start, stop, step, to_mx(dtype), c->stream));
}

rlx_mx_arr *rlx_mx_full(rlx_mx *c, int rank, const int64_t *dims, double v, rlx_dtype dtype) {
  v = saturate_for(v, dtype);
  SHIM_OP(c, true, ([&] {
            mx::Dtype dt = to_mx(dtype);
            mx::array val = dtype == RLX_DTYPE_BOOL ? mx::array(v != 0) : mx::array(v, dt == mx::complex64 ? mx::float32 : dt);
            return mx::full(to_shape(rank, dims), val, dt, c->stream);
          }()));
}

rlx_mx_arr *rlx_mx_take(rlx_mx *c, rlx_mx_arr *a, rlx_mx_arr *idx, int axis) {
  SHIM_OP(c, a && idx, mx::take(A(a), A(idx), axis, c->stream));
}

rlx_mx_arr *rlx_mx_take_along_axis(rlx_mx *c, rlx_mx_arr *a, rlx_mx_arr *idx, int axis) {
  SHIM_OP(c, a && idx, mx::take_along_axis(A(a), A(idx), axis, c->stream));
}

/* MLX's GPU scatter does not take 64-bit integers: those scatters run on the CPU stream. */
static mx::StreamOrDevice scatter_stream(const rlx_mx *c, const mx::array &a) {
  bool wide = a.dtype() == mx::int64 || a.dtype() == mx::uint64;
  return wide && c->device == mx::Device::gpu ? mx::StreamOrDevice(mx::Device(mx::Device::cpu)) : mx::StreamOrDevice(c->stream);
}

static mx::array scatter_kind(const mx::array &a, const std::vector<mx::array> &idx, const mx::array &upd,
                              const std::vector<int> &axes, int reduce, mx::StreamOrDevice s) {
  switch (reduce) {
    case 0: return mx::scatter(a, idx, upd, axes, s);
    case 1: return mx::scatter_add(a, idx, upd, axes, s);
    case 2: return mx::scatter_prod(a, idx, upd, axes, s);
    case 3: return mx::scatter_max(a, idx, upd, axes, s);
    case 4: return mx::scatter_min(a, idx, upd, axes, s);
  }
  throw std::invalid_argument("unknown scatter reduction");
}

rlx_mx_arr *rlx_mx_put_along_axis(rlx_mx *c, rlx_mx_arr *a, rlx_mx_arr *idx, rlx_mx_arr *upd, int axis, int reduce) {
  SHIM_OP(c, a && idx && upd, ([&] {
            auto ss = scatter_stream(c, A(a));
            if (reduce == 0) return mx::put_along_axis(A(a), A(idx), A(upd), axis, ss);
            if (reduce == 1) return mx::scatter_add_axis(A(a), A(idx), A(upd), axis, ss);
            // Other reductions: scatter with full index grids (one index array per axis).
            const mx::array &x = A(a);
            int nd = (int)x.ndim();
            const mx::Shape &is = A(idx).shape();
            std::vector<mx::array> ids;
            std::vector<int> axes;
            for (int i = 0; i < nd; i++) {
              axes.push_back(i);
              if (i == axis) {
                ids.push_back(A(idx));
                continue;
              }
              mx::Shape sh(nd, 1);
              sh[i] = is[i];
              ids.push_back(mx::broadcast_to(mx::reshape(mx::arange(is[i], mx::int32, c->stream), sh, c->stream), is, c->stream));
            }
            mx::Shape us = is;
            for (int i = 0; i < nd; i++) us.push_back(1);
            return scatter_kind(x, ids, mx::reshape(A(upd), us, c->stream), axes, reduce, ss);
          }()));
}

rlx_mx_arr *rlx_mx_scatter(rlx_mx *c, rlx_mx_arr *a, rlx_mx_arr *const *idx, size_t n_idx, rlx_mx_arr *upd,
                           const int *axes, int reduce) {
  SHIM_OP(c, a && upd && all_set(idx, n_idx),
          scatter_kind(A(a), arrays(idx, n_idx), A(upd), std::vector<int>(axes, axes + n_idx), reduce, scatter_stream(c, A(a))));
}

rlx_mx_arr *rlx_mx_reduce(rlx_mx *c, rlx_mx_arr *a, int kind, int n_axes, const int *axes, bool keepdims) {
  SHIM_OP(c, a, ([&] {
            const mx::array &x = A(a);
            std::vector<int> ax;
            if (n_axes == 0)
              for (int i = 0; i < (int)x.ndim(); i++) ax.push_back(i);
            else
              ax.assign(axes, axes + n_axes);
            auto s = c->stream;
            if (kind < 0 || kind > 7) throw std::invalid_argument("unknown reduction");
            if (x.size() == 0) { /* see identity; the sum, built lazily, gives the shape */
              static const double ident[] = {0, NAN, -INFINITY, INFINITY, 1, -INFINITY, 1, 0};
              mx::array sum = mx::sum(x, ax, keepdims, s);
              bool inexact = mx::issubdtype(x.dtype(), mx::inexact);
              mx::Dtype t = kind >= 6 ? mx::bool_ : kind == 0 || kind == 4 ? sum.dtype() : kind == 1 && !inexact ? mx::float32 : x.dtype();
              return identity(sum.shape(), t, ident[kind], s);
            }
            if (kind <= 1)
              if (auto k = rlx_kernels::sum_trailing(s, x, ax, kind == 1, keepdims)) return *k;
            switch (kind) {
              case 0: return mx::sum(x, ax, keepdims, s);
              case 1: return mx::mean(x, ax, keepdims, s);
              case 2: return mx::max(x, ax, keepdims, s);
              case 3: return mx::min(x, ax, keepdims, s);
              case 4: return mx::prod(x, ax, keepdims, s);
              case 5: return mx::logsumexp(x, ax, keepdims, s);
              case 6: return mx::all(x, ax, keepdims, s);
              default: return mx::any(x, ax, keepdims, s);
            }
          }()));
}

rlx_mx_arr *rlx_mx_argmax(rlx_mx *c, rlx_mx_arr *a, int axis, bool keepdims) {
  SHIM_OP(c, a, mx::argmax(A(a), axis, keepdims, c->stream));
}

rlx_mx_arr *rlx_mx_argmin(rlx_mx *c, rlx_mx_arr *a, int axis, bool keepdims) {
  SHIM_OP(c, a, mx::argmin(A(a), axis, keepdims, c->stream));
}

rlx_mx_arr *rlx_mx_scan(rlx_mx *c, rlx_mx_arr *a, int kind, int axis, bool reverse, bool inclusive) {
  SHIM_OP(c, a, ([&] {
            const mx::array &x = A(a);
            auto s = c->stream;
            switch (kind) {
              case 0: return mx::cumsum(x, axis, reverse, inclusive, std::nullopt, s);
              case 1: return mx::cumprod(x, axis, reverse, inclusive, s);
              case 2: return mx::cummax(x, axis, reverse, inclusive, s);
              case 3: return mx::cummin(x, axis, reverse, inclusive, s);
            }
            throw std::invalid_argument("unknown scan");
          }()));
}

rlx_mx_arr *rlx_mx_sort(rlx_mx *c, rlx_mx_arr *a, int axis) { SHIM_OP(c, a, mx::sort(A(a), axis, c->stream)); }
rlx_mx_arr *rlx_mx_argsort(rlx_mx *c, rlx_mx_arr *a, int axis) { SHIM_OP(c, a, mx::argsort(A(a), axis, c->stream)); }

rlx_mx_arr *rlx_mx_softmax(rlx_mx *c, rlx_mx_arr *a, int axis, bool precise) {
  SHIM_OP(c, a, A(a).size() == 0 ? A(a) : mx::softmax(A(a), std::vector<int>{axis}, precise, c->stream)); /* see identity */
}

rlx_mx_arr *rlx_mx_addmm(rlx_mx *c, rlx_mx_arr *bias, rlx_mx_arr *a, rlx_mx_arr *b) {
  SHIM_OP(c, bias && a && b, mx::addmm(A(bias), A(a), A(b), 1.0f, 1.0f, c->stream));
}

rlx_mx_arr *rlx_mx_conv_general(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *w, int nsp, const int64_t *stride,
                                const int64_t *pad_lo, const int64_t *pad_hi, const int64_t *kernel_dilation,
                                const int64_t *input_dilation, int groups, bool flip) {
  SHIM_OP(c, x && w, ([&] {
            /* MLX takes int strides: one past the padded input's extent L (and past the kernel's
             * span k) places only the first window, as a stride of max(L, k) does (a stride of
             * 2^62 would wrap to a negative int) */
            std::vector<int64_t> st(stride, stride + nsp);
            const mx::array &xa = A(x), &wa = A(w);
            for (int i = 0; i < nsp && (int)xa.ndim() == nsp + 2 && (int)wa.ndim() == nsp + 2; i++) {
              int64_t L, k;
              bool over = __builtin_mul_overflow((int64_t)xa.shape(1 + i) - 1, input_dilation[i], &L) ||
                          __builtin_add_overflow(L, 1 + pad_lo[i], &L) || __builtin_add_overflow(L, pad_hi[i], &L) ||
                          __builtin_mul_overflow((int64_t)wa.shape(1 + i) - 1, kernel_dilation[i], &k);
              if (!over) st[i] = std::min(st[i], std::max<int64_t>({L, k + 1, 1}));
            }
            mx::array y = mx::conv_general(xa, wa, to_ints(nsp, st.data()), to_ints(nsp, pad_lo), to_ints(nsp, pad_hi),
                                           to_ints(nsp, kernel_dilation), to_ints(nsp, input_dilation), groups, flip, c->stream);
            /* MLX's CPU convolution of one group without input dilation unfolds its input into
             * [N * output positions, C * kernel] (y and w are channels-last: [N, o.., Co] and
             * [Co, k.., C]) before one GEMM */
            bool dilated = false;
            for (int i = 0; i < nsp; i++) dilated |= input_dilation[i] != 1;
            int64_t co = y.ndim() ? y.shape(-1) : 0;
            if (c->device == mx::Device::cpu && groups == 1 && !dilated && co > 0) {
              size_t n = y.dtype().size();
              if (__builtin_mul_overflow(n, y.size() / (size_t)co, &n) || __builtin_mul_overflow(n, A(w).size() / (size_t)co, &n)) n = SIZE_MAX;
              c->admit_bytes(n, "MLX's CPU convolution's unfolded input");
            }
            return y;
          }()));
}

rlx_mx_arr *rlx_mx_gather_mm(rlx_mx *c, rlx_mx_arr *a, rlx_mx_arr *b, rlx_mx_arr *lhs_idx, rlx_mx_arr *rhs_idx) {
  SHIM_OP(c, a && b, mx::gather_mm(A(a), A(b), lhs_idx ? std::optional<mx::array>(A(lhs_idx)) : std::nullopt,
                                   rhs_idx ? std::optional<mx::array>(A(rhs_idx)) : std::nullopt, false, c->stream));
}

rlx_mx_arr *rlx_mx_quantized_matmul(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *w, rlx_mx_arr *scales, rlx_mx_arr *biases,
                                    bool transpose, int group_size, int bits, const char *mode) {
  SHIM_OP(c, x && w && scales,
          mx::quantized_matmul(A(x), A(w), A(scales), biases ? std::optional<mx::array>(A(biases)) : std::nullopt, transpose,
                               group_size, bits, mode, c->stream));
}

rlx_mx_arr *rlx_mx_gather_qmm(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *w, rlx_mx_arr *scales, rlx_mx_arr *biases,
                              rlx_mx_arr *rhs_idx, int group_size, int bits, const char *mode) {
  SHIM_OP(c, x && w && scales && rhs_idx,
          mx::gather_qmm(A(x), A(w), A(scales), biases ? std::optional<mx::array>(A(biases)) : std::nullopt, std::nullopt,
                         A(rhs_idx), true, group_size, bits, mode, std::nullopt, false, c->stream));
}

// ---- fftsample ----

rlx_mx_arr *rlx_mx_fft(rlx_mx *c, rlx_mx_arr *a, int kind, int64_t n, int axis, int norm) {
  SHIM_OP(c, a, ([&] {
            static const mx::fft::FFTNorm norms[] = {mx::fft::FFTNorm::Backward, mx::fft::FFTNorm::Ortho,
                                                     mx::fft::FFTNorm::Forward};
            if (norm < 0 || norm > 2) throw std::invalid_argument("unknown FFT norm");
            auto nm = norms[norm];
            const mx::array &x = A(a);
            int len = static_cast<int>(n);
            switch (kind) {
              case 0: return mx::fft::fftn(x, {axis}, nm, c->stream);
              case 1: return mx::fft::ifftn(x, {axis}, nm, c->stream);
              case 2: return mx::fft::rfftn(x, {axis}, nm, c->stream);
              case 3:
                if (len < 0) return mx::fft::irfftn(x, {axis}, nm, c->stream);
                return mx::fft::irfftn(x, {len}, {axis}, nm, c->stream);
            }
            throw std::invalid_argument("unknown FFT kind");
          }()));
}

// mx::linalg::solve would raise LAPACK's singular-matrix error inside a task of the CPU stream, and
// in MLX 0.32.4 an error there can leak a count of the scheduler's active tasks (a task enqueued
// after the failure throws between notify_new_task and the completion task): once more than
// MAX_ACTIVE_TASKS (10) have leaked, every later evaluation waits in scheduler::wait_for_one
// forever. So the solve is written from MLX's LU, whose factorization never raises for a singular
// matrix, with the zero pivots counted instead of reaching the triangular inverse.
rlx_mx_arr *rlx_mx_solve_cpu(rlx_mx *c, rlx_mx_arr *a, rlx_mx_arr *b, rlx_mx_arr **singular) {
  *singular = nullptr;
  SHIM_OP(c, a && b, ([&] {
            mx::Device cpu(mx::Device::cpu);
            mx::array am = A(a), bm = A(b);
            int n = am.shape(-1);
            if (n == 1) { /* MLX's compiled float64 LU of 1x1 matrices corrupts the heap (0.32.4) */
              *singular = c->put(mx::sum(mx::astype(mx::equal(am, mx::array(0), cpu), mx::int64, cpu), false, cpu));
              return mx::divide(bm, am, cpu);
            }
            auto luf = mx::linalg::lu(am, cpu); /* {row pivots, L, U}: A = P L U */
            mx::array zero = mx::equal(mx::diagonal(luf[2], 0, -2, -1, cpu), mx::array(0), cpu);
            *singular = c->put(mx::sum(mx::astype(mx::any(zero, -1, false, cpu), mx::int64, cpu), false, cpu));
            /* a zero pivot becomes 1, so the triangular inverse succeeds (x is then meaningless) */
            mx::array u = mx::add(luf[2], mx::multiply(mx::expand_dims(mx::astype(zero, am.dtype(), cpu), -1, cpu),
                                                       mx::eye(n, am.dtype(), cpu), cpu), cpu);
            mx::array pb = mx::take_along_axis(bm, mx::expand_dims(mx::argsort(luf[0], -1, cpu), -1, cpu), -2, cpu);
            return mx::linalg::solve_triangular(u, mx::linalg::solve_triangular(luf[1], pb, false, cpu), true, cpu);
          })());
}

rlx_mx_arr *rlx_mx_categorical(rlx_mx *c, rlx_mx_arr *logits, int axis, rlx_mx_arr *key) {
  SHIM_OP(c, logits, mx::random::categorical(A(logits), axis, key ? std::optional<mx::array>(A(key)) : std::nullopt, c->stream));
}

bool rlx_mx_is_tracer(const rlx_mx_arr *a) { return a && reinterpret_cast<const mx::array *>(a)->is_tracer(); }

// ---- branch control ----
rlx_mx_arr *rlx_mx_gated_delta_update(rlx_mx *c, rlx_mx_arr *q, rlx_mx_arr *k, rlx_mx_arr *v, rlx_mx_arr *g, rlx_mx_arr *beta,
                                      rlx_mx_arr *state, rlx_mx_arr **state_out) {
  *state_out = nullptr;
  SHIM_OP(c, q && k && v && g && beta, ([&] {
            auto r = mx::fast::gated_delta_update(A(q), A(k), A(v), A(g), A(beta),
                                                  state ? std::optional<mx::array>(A(state)) : std::nullopt, std::nullopt, c->stream);
            *state_out = c->put(r[1]);
            return r[0];
          })());
}

}  // extern "C"
