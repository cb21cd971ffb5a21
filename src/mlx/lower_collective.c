/* lower_collective.c: AllReduce, AllGather and ReduceScatter onto mx::distributed's ops over the
 * run's group (rlx/op_table.h, rlx/dist.h). MLX gathers and scatters along axis 0: another axis
 * is swapped to the front and back. */
#include "dist/dist_impl.h"
#include "mlx/lower.h"

void rlx_lower_collective(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_dist_group *g = L->group;
  if (!g) {
    rlx_lower_fail(L, RLX_STATUS_FAILED_PRECONDITION, "no process group: call rlx_dist_init (its first group is the default) or rlx_executable_set_group");
    return;
  }
  int64_t want = rlx_node_i(n, "group_size");
  int size = rlx_dist_group_size(g);
  if (want && want != size) {
    rlx_lower_fail(L, RLX_STATUS_FAILED_PRECONDITION, "the graph is written for group_size %lld but the %s group has %d ranks", (long long)want,
                   rlx_dist_backend_name(rlx_dist_group_backend(g)), size);
    return;
  }
  rlx_type t = *rlx_in_type(L, n, 0);
  rlx_mx_coll kind = n->op == RLX_OP_ALL_GATHER     ? RLX_MXC_ALL_GATHER
                     : n->op == RLX_OP_REDUCE_SCATTER ? RLX_MXC_SUM_SCATTER
                                                      : (rlx_mx_coll)(RLX_MXC_ALL_SUM + rlx_collective_kind(rlx_node_s(n, "kind")));
  int ax = n->op == RLX_OP_ALL_REDUCE ? 0 : (int)rlx_l_axis(n, t.rank);
  rlx_mx_arr *x = in[0];
  if (ax) {
    x = rlx_l_swap(L, x, t.rank, 0, ax);
    int64_t d = t.dims[0];
    t.dims[0] = t.dims[ax];
    t.dims[ax] = d;
  }
  rlx_status *st = rlx_dist_check(g, kind, &t);
  if (st) {
    rlx_mx_fail(L->mx, st);
    return;
  }
  int64_t numel = 1;
  for (int i = 0; i < t.rank; i++) numel *= t.dims[i];
  rlx_mx_arr *y = x;
  if (size > 1 && numel == 0) { /* nothing to move: the empty result */
    if (kind == RLX_MXC_ALL_GATHER) t.dims[0] *= size;
    if (kind == RLX_MXC_SUM_SCATTER) t.dims[0] /= size;
    y = rlx_mx_full(L->mx, t.rank, t.dims, 0, t.dtype);
  } else if (size > 1) {
    y = rlx_mx_dist_collective(L->mx, rlx_dist_mx(g), kind, x);
  }
  out[0] = ax ? rlx_l_swap(L, y, t.rank, 0, ax) : y;
}
