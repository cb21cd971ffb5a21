// shim_custom.cpp: custom-op kernels as MLX work: host-code kernels as an MLX primitive on the
// CPU stream (so they work in compiled functions too), CUDA source kernels through
// mx::fast::cuda_kernel, and the random keys that sampling threads through runs.
#include <cstring>
#include <memory>

#include "mlx/backend/cpu/encoder.h"
#include "mlx/fast.h"
#include "mlx/primitives.h"
#include "mlx/shim/kernels.h"
#include "mlx/shim/shim_impl.h"

namespace {

using UserData = std::shared_ptr<void>;

// Calls a C host kernel on row-contiguous inputs; outputs are allocated here and zero-filled
// before the call. Runs as a task of the CPU stream (cpu::CommandEncoder), like MLX's own CPU
// primitives: inside mx::compile it is an opaque node of the trace, replayed with new inputs on
// every call. A failing kernel throws from its task; MLX keeps the error on the stream and
// rethrows it from the eval that waits for the outputs.
class HostKernel : public mx::Primitive {
 public:
  HostKernel(mx::Stream s, rlx_mx_host_fn fn, UserData ud) : mx::Primitive(s), fn_(fn), ud_(std::move(ud)) {}

  void eval_cpu(const std::vector<mx::array> &inputs, std::vector<mx::array> &outputs) override {
    std::vector<const void *> in;
    std::vector<void *> out;
    std::vector<size_t> nbytes;
    for (const auto &a : inputs) in.push_back(a.data<void>());
    for (auto &o : outputs) {
      o.set_data(mx::allocator::malloc(o.nbytes()));
      out.push_back(o.data<void>());
      nbytes.push_back(o.nbytes());
    }
    auto &enc = mx::cpu::get_command_encoder(stream());
    for (const auto &a : inputs) enc.set_input_array(a);
    for (auto &o : outputs) enc.set_output_array(o);
    enc.dispatch([fn = fn_, ud = ud_, in = std::move(in), out = std::move(out), nbytes = std::move(nbytes)]() {
      for (size_t i = 0; i < out.size(); i++)
        if (nbytes[i]) std::memset(out[i], 0, nbytes[i]);
      rlx_status *st = fn(ud.get(), in.data(), out.data());
      rlx_kernels::kernels_publish(); /* the outputs' hand-off, as the kernels' (kernels.h) */
      if (st) {
        std::string msg = rlx_mx_encode_status(st);
        rlx_status_free(st);
        throw std::runtime_error(msg);
      }
    });
  }
  void eval_gpu(const std::vector<mx::array> &, std::vector<mx::array> &) override {
    throw std::runtime_error("a host kernel runs on the CPU stream only");
  }
  const char *name() const override { return "RlxHostKernel"; }

 private:
  rlx_mx_host_fn fn_;
  UserData ud_;
};

mx::fast::TemplateArg template_arg(const rlx_mx_template_arg &t) {
  switch (t.kind) {
    case RLX_MX_TARG_INT: return static_cast<int>(t.i);
    case RLX_MX_TARG_BOOL: return t.i != 0;
    default: return to_mx(t.dtype);
  }
}

}  // namespace

std::string rlx_mx_encode_status(const rlx_status *st) {
  return std::string(RLX_MX_STATUS_TAG) + rlx_status_code_name(rlx_status_code_of(st)) + "] " + rlx_status_message(st);
}

extern "C" {

bool rlx_mx_host_call(rlx_mx *c, rlx_mx_host_fn fn, void *ud, void (*free_ud)(void *), rlx_mx_arr *const *in, size_t n_in,
                      const rlx_type *out_types, size_t n_out, rlx_mx_arr **out) {
  UserData owned;
  try {
    owned = UserData(ud, free_ud ? free_ud : [](void *) {});
  } catch (...) {
    if (free_ud) free_ud(ud);
    if (c) c->fail(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    return false;
  }
  if (!c || c->err) return false;
  for (size_t i = 0; i < n_in; i++)
    if (!in[i]) return c->fail(RLX_STATUS_INTERNAL, "NULL operand"), false;
  try {
    mx::Stream cpu = mx::default_stream(mx::Device(mx::Device::cpu));
    std::vector<mx::array> inputs;
    for (size_t i = 0; i < n_in; i++) inputs.push_back(mx::contiguous(A(in[i]), false, cpu));
    std::vector<mx::Shape> shapes;
    std::vector<mx::Dtype> dtypes;
    for (size_t i = 0; i < n_out; i++) {
      shapes.push_back(to_shape(out_types[i].rank, out_types[i].dims));
      dtypes.push_back(to_mx(out_types[i].dtype));
    }
    auto res = mx::array::make_arrays(std::move(shapes), std::move(dtypes), std::make_shared<HostKernel>(cpu, fn, owned),
                                      std::move(inputs));
    for (size_t i = 0; i < n_out; i++) out[i] = c->put(std::move(res[i]));
    return true;
  } catch (...) {
    c->fail_current();
    return false;
  }
}

bool rlx_mx_cuda_kernel(rlx_mx *c, const rlx_mx_cuda_call *k, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  if (!c || c->err) return false;
  for (size_t i = 0; i < k->n_in; i++)
    if (!in[i]) return c->fail(RLX_STATUS_INTERNAL, "NULL operand"), false;
  try {
    std::vector<std::string> in_names(k->in_names, k->in_names + k->n_in), out_names(k->out_names, k->out_names + k->n_out);
    auto fn = mx::fast::cuda_kernel(k->name, in_names, out_names, k->source, k->header ? k->header : "", k->ensure_row_contiguous,
                                    k->shared_memory);
    std::vector<mx::array> inputs;
    for (size_t i = 0; i < k->n_in; i++) inputs.push_back(A(in[i]));
    std::vector<mx::Shape> shapes;
    std::vector<mx::Dtype> dtypes;
    for (size_t i = 0; i < k->n_out; i++) {
      shapes.push_back(to_shape(k->out_types[i].rank, k->out_types[i].dims));
      dtypes.push_back(to_mx(k->out_types[i].dtype));
    }
    std::vector<std::pair<std::string, mx::fast::TemplateArg>> targs;
    for (size_t i = 0; i < k->n_template_args; i++) targs.emplace_back(k->template_args[i].name, template_arg(k->template_args[i]));
    std::optional<float> init;
    if (k->has_init_value) init = k->init_value;
    auto res = fn(inputs, shapes, dtypes, {k->grid[0], k->grid[1], k->grid[2]},
                  {k->threadgroup[0], k->threadgroup[1], k->threadgroup[2]}, targs, init, false, c->stream);
    for (size_t i = 0; i < k->n_out; i++) out[i] = c->put(std::move(res[i]));
    return true;
  } catch (...) {
    c->fail_current();
    return false;
  }
}

rlx_mx_arr *rlx_mx_random_key(rlx_mx *c, uint64_t seed) { SHIM_OP(c, true, mx::random::key(seed)); }

rlx_mx_arr *rlx_mx_random_fresh_key(rlx_mx *c) {
  // Two 32-bit words from MLX's global key sequence (mx::random::bits with no key).
  SHIM_OP(c, true, mx::random::bits({2}, 4, std::nullopt, c->stream));
}

rlx_mx_arr *rlx_mx_random_split(rlx_mx *c, rlx_mx_arr *key, rlx_mx_arr **sub) {
  *sub = nullptr;
  SHIM_OP(c, key, ([&] {
            auto [next, s] = mx::random::split(A(key), c->stream);
            *sub = c->put(std::move(s));
            return next;
          })());
}

}  // extern "C"
