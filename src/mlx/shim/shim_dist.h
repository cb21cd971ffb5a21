/* shim_dist.h: the C ABI over mlx::core::distributed (shim_dist.cpp), used by src/dist and the
 * collective lowering. Thin like the rest of the shim: argument conversion, the MLX call, and
 * exception capture; every check that can be made before MLX runs is made by the C callers
 * (src/dist/dist.c), which also decide the backend, so these functions only see a concrete one.
 *
 * Thread-safety: a group handle may be used from several threads once created; MLX's backends
 * serialize their own socket/MPI work per stream. Initialization is not thread-safe (MLX's backend
 * cache is a plain map): src/dist serializes it. */
#ifndef RLX_MLX_SHIM_DIST_H
#define RLX_MLX_SHIM_DIST_H

#include "mlx/shim/shim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlx_mx_group rlx_mx_group;

/* mx::distributed::is_available(backend): whether MLX was built with `backend` ("ring", "mpi",
 * "nccl") and, for mpi, whether libmpi could be loaded. Never throws. */
bool rlx_mx_dist_available(const char *backend);

/* mx::distributed::init(strict = true, backend): the group of every process of the launch.
 * backend is "ring", "mpi" or "nccl". Errors raised by MLX come back as UNAVAILABLE with its
 * message. MLX caches the group per backend: a second init returns the same group. */
RLX_MUST_USE rlx_status *rlx_mx_dist_init(const char *backend, rlx_mx_group **out, int *out_rank, int *out_size);

/* Group::split(color, key). */
RLX_MUST_USE rlx_status *rlx_mx_dist_split(rlx_mx_group *g, int color, int key, rlx_mx_group **out, int *out_rank, int *out_size);

void rlx_mx_group_free(rlx_mx_group *g); /* NULL accepted */

typedef enum rlx_mx_coll {
  RLX_MXC_ALL_SUM, RLX_MXC_ALL_MAX, RLX_MXC_ALL_MIN, RLX_MXC_ALL_GATHER, RLX_MXC_SUM_SCATTER
} rlx_mx_coll;

/* The lazy collective on x over group g (mx::distributed::all_sum / all_max / all_min /
 * all_gather (axis 0) / sum_scatter (axis 0)), on the backend's communication stream. */
rlx_mx_arr *rlx_mx_dist_collective(rlx_mx *c, rlx_mx_group *g, rlx_mx_coll kind, rlx_mx_arr *x);
/* mx::distributed::send(x, dst): a lazy array whose evaluation sends x. */
rlx_mx_arr *rlx_mx_dist_send(rlx_mx *c, rlx_mx_group *g, rlx_mx_arr *x, int dst);
/* mx::distributed::recv(shape, dtype, src): a lazy array whose evaluation receives it. */
rlx_mx_arr *rlx_mx_dist_recv(rlx_mx *c, rlx_mx_group *g, const rlx_type *t, int src);

#ifdef __cplusplus
}
#endif
#endif
