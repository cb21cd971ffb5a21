// shim_dist.cpp: mlx::core::distributed behind the C ABI of shim_dist.h.
#include "mlx/distributed/distributed.h"
#include "mlx/distributed/ops.h"
#include "mlx/shim/shim_dist.h"
#include "mlx/shim/shim_impl.h"

namespace dist = mlx::core::distributed;

struct rlx_mx_group {
  dist::Group g;
};

static rlx_status *caught(const char *what) {
  try {
    throw;
  } catch (const std::bad_alloc &) {
    return rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  } catch (const std::exception &e) {
    return rlx_status_make(RLX_STATUS_UNAVAILABLE, "MLX distributed %s: %s", what, e.what());
  } catch (...) {
    return rlx_status_make(RLX_STATUS_INTERNAL, "MLX distributed %s: unknown C++ exception", what);
  }
}

static rlx_status *wrap(dist::Group g, rlx_mx_group **out, int *rank, int *size) {
  *rank = g.rank();
  *size = g.size();
  *out = new rlx_mx_group{std::move(g)};
  return nullptr;
}

extern "C" {

bool rlx_mx_dist_available(const char *backend) {
  try {
    return dist::is_available(backend);
  } catch (...) {
    return false;
  }
}

rlx_status *rlx_mx_dist_init(const char *backend, rlx_mx_group **out, int *out_rank, int *out_size) {
  try {
    return wrap(dist::init(true, backend), out, out_rank, out_size);
  } catch (...) {
    return caught("init");
  }
}

rlx_status *rlx_mx_dist_split(rlx_mx_group *g, int color, int key, rlx_mx_group **out, int *out_rank, int *out_size) {
  try {
    return wrap(g->g.split(color, key), out, out_rank, out_size);
  } catch (...) {
    return caught("split");
  }
}

void rlx_mx_group_free(rlx_mx_group *g) { delete g; }

rlx_mx_arr *rlx_mx_dist_collective(rlx_mx *c, rlx_mx_group *g, rlx_mx_coll kind, rlx_mx_arr *x) {
  SHIM_OP(c, g && x, ([&] {
            switch (kind) {
              case RLX_MXC_ALL_SUM: return dist::all_sum(A(x), g->g);
              case RLX_MXC_ALL_MAX: return dist::all_max(A(x), g->g);
              case RLX_MXC_ALL_MIN: return dist::all_min(A(x), g->g);
              case RLX_MXC_ALL_GATHER: return dist::all_gather(A(x), g->g);
              case RLX_MXC_SUM_SCATTER: return dist::sum_scatter(A(x), g->g);
            }
            throw std::invalid_argument("unknown collective");
          }()));
}

rlx_mx_arr *rlx_mx_dist_send(rlx_mx *c, rlx_mx_group *g, rlx_mx_arr *x, int dst) {
  SHIM_OP(c, g && x, dist::send(A(x), dst, g->g));
}

rlx_mx_arr *rlx_mx_dist_recv(rlx_mx *c, rlx_mx_group *g, const rlx_type *t, int src) {
  SHIM_OP(c, g && t, dist::recv(to_shape(t->rank, t->dims), to_mx(t->dtype), src, g->g));
}

}  // extern "C"
