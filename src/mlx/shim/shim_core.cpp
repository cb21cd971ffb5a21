// shim_core.cpp: contexts, host transfer, evaluation and compile.
#include <dlfcn.h>
#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>

#include "mlx/compile_impl.h"
#include "mlx/shim/kernels.h"
#include "mlx/shim/shim_impl.h"

// Finds a status encoded by rlx_mx_encode_status in an exception message (MLX may prefix it).
static bool decode_status(const char *what, rlx_status_code *code, const char **msg) {
  const char *tag = strstr(what, RLX_MX_STATUS_TAG);
  if (!tag) return false;
  const char *name = tag + strlen(RLX_MX_STATUS_TAG), *end = strstr(name, "] ");
  for (int k = RLX_STATUS_INVALID_ARGUMENT; end && k <= RLX_STATUS_INTERNAL; k++) {
    const char *cn = rlx_status_code_name((rlx_status_code)k);
    if (strlen(cn) == (size_t)(end - name) && !strncmp(cn, name, strlen(cn))) return *code = (rlx_status_code)k, *msg = end + 2, true;
  }
  return false;
}

void rlx_mx::fail_current() noexcept {
  try {
    throw;
  } catch (const std::runtime_error &e) {
    rlx_status_code code;
    const char *msg;
    if (decode_status(e.what(), &code, &msg)) {
      if (!err) err = rlx_status_make(code, "%s", msg);
    } else {
      fail(RLX_STATUS_INTERNAL, e.what());
    }
  } catch (const std::invalid_argument &e) {
    fail(RLX_STATUS_INVALID_ARGUMENT, e.what());
  } catch (const std::out_of_range &e) {
    fail(RLX_STATUS_OUT_OF_RANGE, e.what());
  } catch (const std::bad_alloc &) {
    fail(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  } catch (const std::exception &e) {
    fail(RLX_STATUS_INTERNAL, e.what());
  } catch (...) {
    fail(RLX_STATUS_INTERNAL, "unknown C++ exception");
  }
}

size_t rlx_mx_device_bytes(const mx::Device &d) {
  if (d == mx::Device::gpu) {
    try {
      size_t limit = mx::get_memory_limit(); /* MLX CUDA: 0.8 x the device's memory */
      if (limit) return limit;
    } catch (...) {
    }
  }
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 && (unsigned long)pages <= SIZE_MAX / (unsigned long)page ? (size_t)pages * (size_t)page : SIZE_MAX;
}

void rlx_mx::admit_bytes(size_t bytes, const std::string &what) const {
  if (bytes <= max_alloc) return;
  std::string size = bytes == SIZE_MAX ? "more than " + std::to_string(SIZE_MAX) : std::to_string(bytes);
  rlx_status *st = rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED,
                                   "%s would take %s bytes, more than the allocation limit of %zu bytes (RLX_MAX_ALLOCATION, "
                                   "rlx_executable_set_max_allocation)",
                                   what.c_str(), size.c_str(), max_alloc);
  std::string msg = rlx_mx_encode_status(st);
  rlx_status_free(st);
  throw std::runtime_error(msg);
}

void rlx_mx::admit(const mx::Shape &shape, mx::Dtype dt, const char *what) const {
  size_t n = dt.size();
  for (auto d : shape)
    if (__builtin_mul_overflow(n, (size_t)d, &n)) n = SIZE_MAX;
  if (n <= max_alloc) return;
  rlx_dtype rd = RLX_DTYPE_U8;
  std::string desc = std::string(what) + " of " + (from_mx(dt, &rd) ? rlx_dtype_name(rd) : "an MLX dtype") + "[";
  for (size_t i = 0; i < shape.size(); i++) desc += (i ? "," : "") + std::to_string(shape[i]);
  admit_bytes(n, desc + "]");
}

static const mx::Dtype dtype_map[] = {
    mx::float32, mx::float16, mx::bfloat16, mx::float64, mx::int8,  mx::int16,  mx::int32,
    mx::int64,   mx::uint8,   mx::uint16,   mx::uint32,  mx::uint64, mx::bool_, mx::complex64,
    // the low-precision storage types (rlx_dtype_is_lowp) are bytes on the device
    mx::uint8,   mx::uint8,   mx::uint8,    mx::uint8,   mx::uint8,  mx::uint8, mx::uint8,
    mx::uint8,   mx::uint8,
};
static_assert(sizeof(dtype_map) / sizeof(dtype_map[0]) == RLX_DTYPE_COUNT, "dtype map covers rlx_dtype");

mx::Dtype to_mx(rlx_dtype d) { return dtype_map[d]; }

double saturate_for(double v, rlx_dtype d) {
  mx::Dtype t = to_mx(d); /* the storage dtype: low-precision floats are uint8 codes there */
  if (t == mx::bool_ || !mx::issubdtype(t, mx::integer)) return v;
  if (v != v) return 0;
  int bits = 8 * (int)t.size();
  bool sign = mx::issubdtype(t, mx::signedinteger);
  double lo = sign ? -std::ldexp(1.0, bits - 1) : 0, hi = std::ldexp(1.0, sign ? bits - 1 : bits);
  /* hi itself is out of range; the largest double below it is in range for every width */
  return v < lo ? lo : v >= hi ? std::nextafter(hi, 0.0) : v;
}

bool from_mx(mx::Dtype d, rlx_dtype *out) {
  for (int i = 0; i < RLX_DTYPE_COUNT; i++)
    if (dtype_map[i] == d) {
      *out = (rlx_dtype)i;
      return true;
    }
  return false;
}

mx::Shape to_shape(int rank, const int64_t *dims) {
  mx::Shape s;
  for (int i = 0; i < rank; i++) {
    if (dims[i] < 0 || dims[i] > INT32_MAX) throw std::invalid_argument("dim " + std::to_string(dims[i]) + " outside MLX's int32 range");
    s.push_back(static_cast<mx::ShapeElem>(dims[i]));
  }
  return s;
}

extern "C" {

const char *rlx_mx_version(void) { return mx::version(); }

bool rlx_mx_gpu_available(void) {
  try {
    return mx::is_available(mx::Device::gpu);
  } catch (...) {
    return false;
  }
}

void rlx_mx_cuda_home(void) {
  static std::once_flag once;
  std::call_once(once, [] {
    if (std::getenv("CUDA_HOME") || std::getenv("CUDA_PATH")) return;
    std::vector<std::filesystem::path> candidates = {"/usr/local/cuda"};
    Dl_info info;
    if (dladdr(reinterpret_cast<void *>(&mx::version), &info) && info.dli_fname) {
      std::error_code ec;
      auto lib = std::filesystem::canonical(info.dli_fname, ec); // <site-packages>/mlx/lib/libmlx.so
      if (!ec) candidates.push_back(lib.parent_path().parent_path().parent_path() / "nvidia" / "cu13");
    }
    for (const auto &c : candidates) {
      std::error_code ec;
      if (std::filesystem::exists(c / "include" / "cuda_runtime.h", ec)) {
        setenv("CUDA_HOME", c.c_str(), 0);
        return;
      }
    }
  });
}

size_t rlx_mx_peak_memory(void) {
  try {
    return mx::get_peak_memory();
  } catch (...) {
    return 0;
  }
}

void rlx_mx_device_name(rlx_mx_device d, char *buf, size_t cap) {
  std::string name = d == RLX_MX_GPU ? "gpu" : "cpu";
  try {
    // a named device: g++ 13 warns (-Wdangling-reference) on a reference returned for a temporary argument
    const mx::Device dev = d == RLX_MX_GPU ? mx::Device(mx::Device::gpu) : mx::Device(mx::Device::cpu);
    const auto &info = mx::device_info(dev);
    auto it = info.find("device_name");
    if (it != info.end()) {
      if (auto s = std::get_if<std::string>(&it->second)) name = *s;
    }
  } catch (...) {
  }
  snprintf(buf, cap, "%s", name.c_str());
}

// MLX's CPU allocator is malloc. glibc serves blocks above its mmap threshold (dynamic, from 128 KB
// up, at most 32 MB) with fresh mappings and returns freed heap tops to the OS, so every run of a
// model with large intermediates faulted in and zeroed their pages again (PP-OCRv4 det: 15-20 of
// ~140 CPU ms per run, on MLX's stream thread). No mmap'd blocks at all (M_MMAP_MAX 0: every block
// comes from a heap, one above a thread arena's 64 MB from the main one) and a trim threshold of
// 1 GB keep freed blocks in the heap for the next run instead: the process keeps up to its peak
// heap (as ONNX Runtime's arena and PyTorch's caching allocator keep theirs). With a 32 MB
// threshold instead, the blocks above it were still mapped per run: DNSMOS and ResNet-50 at batch
// 8 ran 11-14% slower. Once per process, on the first CPU context, unless the user tunes malloc
// (GLIBC_TUNABLES, MALLOC_*_).
static void keep_heap() {
#ifdef __GLIBC__
  static const bool done = [] {
    if (!getenv("GLIBC_TUNABLES") && !getenv("MALLOC_MMAP_MAX_") && !getenv("MALLOC_MMAP_THRESHOLD_") && !getenv("MALLOC_TRIM_THRESHOLD_"))
      mallopt(M_MMAP_MAX, 0), mallopt(M_TRIM_THRESHOLD, 1 << 30);
    return true;
  }();
  (void)done;
#endif
}

rlx_status *rlx_mx_create(rlx_mx_device device, rlx_mx **out) {
  try {
    mx::Device d = device == RLX_MX_GPU ? mx::Device(mx::Device::gpu) : mx::Device(mx::Device::cpu);
    if (!mx::is_available(d))
      return rlx_status_make(RLX_STATUS_UNAVAILABLE, "no GPU: this MLX build (%s) has no usable GPU backend or no GPU is present",
                             mx::version());
    if (device == RLX_MX_CPU) rlx_kernels::claim_blas(), keep_heap();
    *out = new rlx_mx(d, mx::default_stream(d));
    return nullptr;
  } catch (const std::bad_alloc &) {
    return rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  } catch (const std::exception &e) {
    return rlx_status_make(RLX_STATUS_UNAVAILABLE, "MLX device unavailable: %s", e.what());
  }
}

void rlx_mx_free(rlx_mx *c) { delete c; }
void rlx_mx_clear(rlx_mx *c) {
  c->arena.clear();
  c->fusible.clear();
}

void rlx_mx_retain_only(rlx_mx *c, rlx_mx_arr **keep, size_t n) {
  if (!c || c->err) return;
  try {
    std::vector<mx::array> kept;
    kept.reserve(n);
    for (size_t i = 0; i < n; i++) kept.push_back(A(keep[i]));
    c->arena.clear();
    c->fusible.clear();
    for (size_t i = 0; i < n; i++) keep[i] = c->put(std::move(kept[i]));
  } catch (...) {
    c->fail_current();
  }
}

void rlx_mx_reset(rlx_mx *c) {
  c->arena.clear();
  c->fusible.clear();
  rlx_status_free(c->err);
  c->err = nullptr;
  try {
    c->stream = mx::default_stream(c->device);
  } catch (...) {
    c->fail_current();
  }
}
bool rlx_mx_failed(const rlx_mx *c) { return c->err != nullptr; }
rlx_mx_device rlx_mx_get_device(const rlx_mx *c) { return c->device == mx::Device::gpu ? RLX_MX_GPU : RLX_MX_CPU; }
size_t rlx_mx_device_memory(rlx_mx_device d) { return rlx_mx_device_bytes(d == RLX_MX_GPU ? mx::Device::gpu : mx::Device::cpu); }
void rlx_mx_set_max_allocation(rlx_mx *c, size_t bytes) { c->max_alloc = bytes; }

rlx_status *rlx_mx_take_error(rlx_mx *c) {
  rlx_status *e = c->err;
  c->err = nullptr;
  return e;
}

void rlx_mx_fail(rlx_mx *c, rlx_status *st) {
  if (!st) return;
  if (c->err) rlx_status_free(st);
  else c->err = st;
}

rlx_mx_arr *rlx_mx_keep(rlx_mx *c, rlx_mx_arr *a) {
  if (!c || c->err || !a) return nullptr;
  try {
    return reinterpret_cast<rlx_mx_arr *>(new mx::array(A(a)));
  } catch (...) {
    c->fail_current();
    return nullptr;
  }
}

void rlx_mx_release(rlx_mx_arr *a) { delete reinterpret_cast<mx::array *>(a); }

static rlx_mx_arr *from_bytes(rlx_mx *c, const void *data, const rlx_type *t, bool resident) {
  SHIM_OP(c, t, ([&] {
            mx::Shape shape = to_shape(t->rank, t->dims);
            c->admit(shape, to_mx(t->dtype), "an array copied from the host");
            size_t n = rlx_dtype_size(t->dtype);
            for (auto d : shape) n *= (size_t)d;
            if (n == 0) return mx::zeros(shape, to_mx(t->dtype), c->stream);
            if (!data) throw std::invalid_argument("no data for " + std::to_string(n) + " bytes");
            auto buf = mx::allocator::malloc(n);
            void *p = buf.buffer().raw_ptr();
            if (!p) throw std::bad_alloc(); /* MLX's allocator returns NULL */
            if (resident) rlx_kernels::advise_huge_pages(p, n);
            std::memcpy(p, data, n);
            if (resident) rlx_kernels::collapse_huge_pages(p, n);
            return mx::array(std::move(buf), shape, to_mx(t->dtype));
          }()));
}

rlx_mx_arr *rlx_mx_from_bytes(rlx_mx *c, const void *data, const rlx_type *t) { return from_bytes(c, data, t, false); }

rlx_mx_arr *rlx_mx_from_bytes_resident(rlx_mx *c, const void *data, const rlx_type *t) { return from_bytes(c, data, t, true); }

rlx_mx_arr *rlx_mx_scalar(rlx_mx *c, double v, rlx_dtype dtype) {
  v = saturate_for(v, dtype);
  SHIM_OP(c, true, ([&] {
            switch (dtype) {
              case RLX_DTYPE_I64: return mx::array((int64_t)v, mx::int64);
              case RLX_DTYPE_U64: return mx::array((uint64_t)v, mx::uint64);
              case RLX_DTYPE_BOOL: return mx::array(v != 0);
              case RLX_DTYPE_C64: return mx::array(mx::complex64_t((float)v, 0.f));
              default: return mx::array(v, to_mx(dtype));
            }
          }()));
}

// Up to this size a strided result is copied to the host through its strides by rlx_mx_to_host.
constexpr size_t kHostCopyBytes = 1 << 16;

bool rlx_mx_to_host(rlx_mx *c, rlx_mx_arr *a, void *dst, size_t nbytes) {
  if (!c || c->err || !a) return false;
  try {
    mx::array b = A(a);
    b.eval();
    rlx_kernels::kernels_observe();
    // Outputs are usually dense already; only strided or broadcast views need a copy: a small one
    // here through its strides (a second evaluation would cost a hand-off to the stream's thread
    // and back), a large one by MLX.
    bool dense = b.flags().row_contiguous && b.data_size() == b.size();
    if (!dense && (b.flags().row_contiguous || b.nbytes() > kHostCopyBytes)) {
      b = mx::contiguous(b, false, c->stream);
      b.eval();
      dense = true;
    }
    if (b.nbytes() != nbytes) {
      c->fail(RLX_STATUS_INTERNAL, "result has " + std::to_string(b.nbytes()) + " bytes, expected " + std::to_string(nbytes));
      return false;
    }
    std::vector<uint8_t> buf;
    if (nbytes) std::memcpy(dst, dense ? b.data<uint8_t>() : rlx_kernels::dense(b, buf), nbytes);
    return true;
  } catch (...) {
    c->fail_current();
    return false;
  }
}

bool rlx_mx_type(const rlx_mx_arr *a, rlx_type *out) {
  if (!a) return false;
  const mx::array &x = *reinterpret_cast<const mx::array *>(a);
  rlx_type t{};
  if (!from_mx(x.dtype(), &t.dtype) || x.ndim() > RLX_MAX_RANK) return false;
  t.rank = (int32_t)x.ndim();
  for (int i = 0; i < t.rank; i++) t.dims[i] = x.shape(i);
  *out = t;
  return true;
}

bool rlx_mx_row_contiguous(const rlx_mx_arr *a) {
  if (!a) return false;
  const mx::array &x = *reinterpret_cast<const mx::array *>(a);
  return x.status() != mx::array::Status::unscheduled && x.flags().row_contiguous;
}

bool rlx_mx_shares_memory(const rlx_mx_arr *a, const rlx_mx_arr *b) {
  if (!a || !b) return false;
  const mx::array &x = *reinterpret_cast<const mx::array *>(a), &y = *reinterpret_cast<const mx::array *>(b);
  if (x.status() == mx::array::Status::unscheduled || y.status() == mx::array::Status::unscheduled) return false;
  return x.data_shared_ptr() && x.data_shared_ptr() == y.data_shared_ptr();
}

rlx_mx_arr *rlx_mx_copy_fresh(rlx_mx *c, rlx_mx_arr *a) {
  // a selection from a itself: an exact copy of any dtype, in a new buffer unless MLX may donate
  // a's (then nothing else holds it)
  SHIM_OP(c, a, mx::where(mx::array(true), A(a), A(a), c->stream));
}

static std::vector<mx::array> gather_arrays(rlx_mx_arr *const *a, size_t n) {
  std::vector<mx::array> v;
  v.reserve(n);
  for (size_t i = 0; i < n; i++) {
    if (!a[i]) throw std::runtime_error("NULL array");
    v.push_back(A(a[i]));
  }
  return v;
}

void rlx_mx_eval(rlx_mx *c, rlx_mx_arr *const *a, size_t n) {
  if (!c || c->err) return;
  try {
    mx::eval(gather_arrays(a, n));
    rlx_kernels::kernels_observe();
  } catch (...) {
    c->fail_current();
  }
}

void rlx_mx_async_eval(rlx_mx *c, rlx_mx_arr *const *a, size_t n) {
  if (!c || c->err) return;
  try {
    mx::async_eval(gather_arrays(a, n));
  } catch (...) {
    c->fail_current();
  }
}

}  // extern "C"

// ---- compile ----
//
// MLX keeps compiled traces in a cache per thread (mx::detail::compile_cache()), keyed by a
// function id, the calling thread's default stream and the input shapes/dtypes. An rlx_mx_fn
// therefore gets a process-unique id (never a reused heap address: a freed function's stale
// trace in some thread's cache must not be found by a later function), remembers the caches of
// the threads that traced it, and erases its traces at free: at once in the freeing thread's
// cache, and in other threads' caches the next time such a thread calls a compiled function
// (a thread's cache is not safe to touch from another thread). Traces left in a thread that
// never calls again die with that thread; their unique ids keep them unreachable.

namespace {

using CacheRef = mx::detail::CompileCacheWeakPtr;

bool same_cache(const CacheRef &a, const CacheRef &b) { return !a.owner_before(b) && !b.owner_before(a); }

// The calling thread's compile cache (its lifetime is the thread's).
const CacheRef &thread_cache() {
  static thread_local CacheRef cache = mx::detail::compile_cache();
  return cache;
}

// Erasures owed to other threads' caches.
struct DeferredErase {
  std::mutex mu;
  std::vector<std::pair<CacheRef, std::uintptr_t>> items;
  std::atomic<size_t> count{0};
};

DeferredErase &deferred() {
  static auto *d = new DeferredErase();  // reachable from thread exit and process teardown
  return *d;
}

// Performs the erasures owed to the calling thread's cache and forgets those of dead threads.
void drain_deferred() {
  auto &d = deferred();
  if (d.count.load(std::memory_order_acquire) == 0) return;
  std::lock_guard<std::mutex> lock(d.mu);
  const CacheRef &mine = thread_cache();
  auto &v = d.items;
  for (size_t i = 0; i < v.size();) {
    bool dead = v[i].first.expired(), own = !dead && same_cache(v[i].first, mine);
    if (own) mx::detail::compile_erase(mine, v[i].second);
    if (dead || own) {
      v[i] = std::move(v.back());
      v.pop_back();
    } else {
      i++;
    }
  }
  d.count.store(v.size(), std::memory_order_release);
}

std::atomic<std::uintptr_t> next_fn_id{1};

}  // namespace

// Carries a trace callback's status through MLX's compile machinery.
struct TraceError : std::exception {
  rlx_status *st;
  explicit TraceError(rlx_status *s) : st(s) {}
  const char *what() const noexcept override { return rlx_status_message(st); }
};

// Calls a trace callback on `in` in a fresh context of the device and stream, under the caller's
// allocation limit; its n_out outputs, or a TraceError carrying its status.
static std::vector<mx::array> run_trace(rlx_mx_trace_fn fn, void *ud, mx::Device device, mx::Stream stream, size_t max_alloc,
                                        const std::vector<mx::array> &in, size_t n_out) {
  rlx_mx trace(device, stream);
  trace.max_alloc = max_alloc;
  std::vector<rlx_mx_arr *> hin;
  hin.reserve(in.size());
  for (const auto &a : in) hin.push_back(trace.put(a));
  std::vector<rlx_mx_arr *> hout(n_out, nullptr);
  rlx_status *st = fn(ud, &trace, hin.data(), hin.size(), hout.data(), hout.size());
  if (!st) st = rlx_mx_take_error(&trace);
  for (size_t i = 0; !st && i < hout.size(); i++)
    if (!hout[i]) st = rlx_status_make(RLX_STATUS_INTERNAL, "trace produced no output %zu", i);
  if (st) throw TraceError(st);
  std::vector<mx::array> res;
  res.reserve(hout.size());
  for (auto *h : hout) res.push_back(A(h));
  return res;
}

// Runs body (returning bool) on a live context; a callback's status or MLX's exception becomes
// the context's error (false).
template <class F>
static bool guarded(rlx_mx *c, F body) {
  if (!c || c->err) return false;
  try {
    return body();
  } catch (TraceError &e) {
    rlx_mx_fail(c, e.st);
    return false;
  } catch (...) {
    c->fail_current();
    return false;
  }
}

extern "C" bool rlx_mx_vjp(rlx_mx *c, rlx_mx_trace_fn fn, void *ud, rlx_mx_arr *const *primals, size_t n_in,
                           rlx_mx_arr *const *cot, size_t n_out, rlx_mx_arr **grads) {
  return guarded(c, [&] {
    auto body = [&](const std::vector<mx::array> &in) { return run_trace(fn, ud, c->device, c->stream, c->max_alloc, in, n_out); };
    auto res = mx::vjp(body, gather_arrays(primals, n_in), gather_arrays(cot, n_out));
    for (size_t i = 0; i < n_in; i++) grads[i] = c->put(std::move(res.second[i]));
    return true;
  });
}

struct rlx_mx_fn {
  rlx_mx_trace_fn fn;
  void *ud;
  std::uintptr_t id = 0;
  std::function<std::vector<mx::array>(const std::vector<mx::array> &)> compiled;
  std::vector<CacheRef> caches;  // caches of the threads that called this function
  size_t n_out = 0;
  mx::Device device{mx::Device::cpu};
  mx::Stream stream{0, mx::Device(mx::Device::cpu)};
  size_t max_alloc = SIZE_MAX;  // the caller's (rlx_mx::max_alloc), for the trace context
};

extern "C" rlx_status *rlx_mx_compile(rlx_mx_trace_fn fn, void *ud, bool shapeless, rlx_mx_fn **out) {
  try {
    auto f = std::make_unique<rlx_mx_fn>();
    f->fn = fn;
    f->ud = ud;
    // Small odd ids: never the address of a function MLX compiles by pointer.
    f->id = next_fn_id.fetch_add(2, std::memory_order_relaxed);
    rlx_mx_fn *self = f.get();
    auto body = [self](const std::vector<mx::array> &in) {
      return run_trace(self->fn, self->ud, self->device, self->stream, self->max_alloc, in, self->n_out);
    };
    f->compiled = mx::detail::compile(body, self->id, shapeless);
    *out = f.release();
    return nullptr;
  } catch (const std::exception &e) {
    return rlx_status_make(RLX_STATUS_INTERNAL, "MLX compile: %s", e.what());
  }
}

extern "C" bool rlx_mx_call(rlx_mx *c, rlx_mx_fn *f, rlx_mx_arr *const *in, size_t n_in, rlx_mx_arr **out, size_t n_out) {
  return guarded(c, [&] {
    drain_deferred();
    const CacheRef &mine = thread_cache();
    bool known = false;
    for (const auto &k : f->caches) known = known || same_cache(k, mine);
    if (!known) f->caches.push_back(mine);
    f->n_out = n_out;
    f->device = c->device;
    f->stream = c->stream;
    f->max_alloc = c->max_alloc;
    auto res = f->compiled(gather_arrays(in, n_in));
    if (res.size() != n_out) {
      c->fail(RLX_STATUS_INTERNAL, "compiled function returned " + std::to_string(res.size()) + " outputs");
      return false;
    }
    for (size_t i = 0; i < n_out; i++) out[i] = c->put(std::move(res[i]));
    return true;
  });
}

extern "C" void rlx_mx_fn_free(rlx_mx_fn *f) {
  if (!f) return;
  try {
    const CacheRef &mine = thread_cache();
    auto &d = deferred();
    for (const auto &k : f->caches) {
      if (same_cache(k, mine)) {
        mx::detail::compile_erase(mine, f->id);
      } else if (!k.expired()) {
        std::lock_guard<std::mutex> lock(d.mu);
        d.items.emplace_back(k, f->id);
        d.count.store(d.items.size(), std::memory_order_release);
      }
    }
  } catch (...) {
  }
  delete f;
}
