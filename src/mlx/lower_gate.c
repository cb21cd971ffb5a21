/* lower_gate.c: Llada2GroupLimitedGate on MLX (the group-limited MoE router; formulas in
 * rlx/op_table.h): scores, group scores from the two largest biased scores per group (sort),
 * the best groups and then the best experts by stable argsort (ties: the lower index first). */
#include <math.h>
#include <string.h>

#include "mlx/lower.h"

#define B(op, a, b) rlx_mx_binary(c, RLX_MXB_##op, (a), (b))

/* The first k indices of a along axis 1 in decreasing order (stable argsort of -a). */
static rlx_mx_arr *top_indices(rlx_lower *L, rlx_mx_arr *a, int64_t T, int64_t n, int64_t k) {
  rlx_type t = {.dtype = RLX_DTYPE_U32, .rank = 2, .dims = {T, n}};
  rlx_mx_arr *order = rlx_mx_argsort(L->mx, rlx_mx_unary(L->mx, RLX_MXU_NEGATIVE, a), 1);
  return rlx_l_narrow(L, order, &t, 1, 0, k);
}

void rlx_lower_gate(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  const rlx_type *tx = rlx_in_type(L, n, 0);
  int64_t T = tx->dims[0], E = tx->dims[1], k = rlx_node_i(n, "top_k"), G = rlx_node_i(n, "n_group"), kg = rlx_node_i(n, "topk_group");
  int64_t per = E / G;
  rlx_dtype dt = tx->dtype == RLX_DTYPE_F64 ? RLX_DTYPE_F64 : RLX_DTYPE_F32;
  rlx_mx_arr *x = rlx_mx_astype(c, in[0], dt);
  rlx_mx_arr *s = strcmp(rlx_node_s(n, "score_func"), "softmax") ? rlx_mx_unary(c, RLX_MXU_SIGMOID, x) : rlx_mx_softmax(c, x, 1, true);
  rlx_mx_arr *ch = n->n_in == 2 ? B(ADD, s, rlx_mx_reshape(c, rlx_mx_astype(c, in[1], dt), 2, (int64_t[]){1, E})) : s;
  /* group scores: the sum of the two largest choice scores of each group */
  rlx_type tg = {.dtype = dt, .rank = 3, .dims = {T, G, per}};
  rlx_mx_arr *sorted = rlx_mx_sort(c, rlx_mx_reshape(c, ch, 3, tg.dims), 2);
  rlx_mx_arr *gs = rlx_mx_reduce(c, rlx_l_narrow(L, sorted, &tg, 2, per - (per >= 2 ? 2 : 1), per >= 2 ? 2 : 1), 0, 1, (int[]){2}, false);
  /* keep the experts of the topk_group best groups */
  rlx_mx_arr *sel = rlx_mx_reshape(c, top_indices(L, gs, T, G, kg), 3, (int64_t[]){T, kg, 1});
  rlx_mx_arr *gid = rlx_mx_reshape(c, rlx_mx_arange(c, 0, (double)G, 1, RLX_DTYPE_U32), 3, (int64_t[]){1, 1, G});
  rlx_mx_arr *keep = rlx_mx_reduce(c, B(EQUAL, sel, gid), 7, 1, (int[]){1}, false); /* [T,G] */
  keep = rlx_mx_reshape(c, rlx_mx_broadcast_to(c, rlx_mx_reshape(c, keep, 3, (int64_t[]){T, G, 1}), 3, tg.dims), 2, (int64_t[]){T, E});
  rlx_mx_arr *masked = rlx_mx_where(c, keep, ch, rlx_mx_scalar(c, -INFINITY, dt));
  rlx_mx_arr *idx = top_indices(L, masked, T, E, k);
  rlx_mx_arr *w = rlx_mx_take_along_axis(c, s, idx, 1);
  if (rlx_node_i(n, "norm_topk_prob"))
    w = B(DIVIDE, w, B(ADD, rlx_mx_reduce(c, w, 0, 1, (int[]){1}, true), rlx_mx_scalar(c, 1e-20, dt)));
  w = B(MULTIPLY, w, rlx_mx_scalar(c, rlx_node_f(n, "routed_scaling_factor"), dt));
  out[0] = rlx_mx_astype(c, w, tx->dtype);
  out[1] = rlx_mx_astype(c, idx, RLX_DTYPE_I32);
}
