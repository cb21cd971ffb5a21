/* lower_index_grad.c: CumsumBackward (an opposite-direction cumsum) and GatherBackward (a
 * scatter-add into zeros, mx::scatter_add_axis). */
#include "mlx/lower.h"

static rlx_mx_arr *gather_backward(rlx_lower *L, const rlx_node *n, rlx_mx_arr *dy, rlx_mx_arr *idx) {
  rlx_mx *c = L->mx;
  const rlx_type *to = rlx_out_type(L, n, 0), *ti = rlx_in_type(L, n, 1);
  int64_t a = rlx_l_axis(n, to->rank), pre = 1, post = 1, k = 1;
  for (int i = 0; i < a; i++) pre *= to->dims[i];
  for (int i = (int)a + 1; i < to->rank; i++) post *= to->dims[i];
  for (int i = 0; i < ti->rank; i++) k *= ti->dims[i];
  int64_t d = to->dims[a], upd[3] = {pre, k, post}, base[3] = {pre, d, post};
  rlx_mx_arr *zero = rlx_mx_full(c, 3, base, 0, to->dtype);
  rlx_mx_arr *i = rlx_l_index(L, n, 1, idx, ti->dtype, d, (int)a);
  if (!i || pre * k * post == 0) return rlx_l_reshape(L, zero, to);
  i = rlx_mx_reshape(c, i, 3, (int64_t[]){1, k, 1});
  i = rlx_mx_broadcast_to(c, i, 3, upd);
  return rlx_l_reshape(L, rlx_mx_put_along_axis(c, zero, i, rlx_mx_reshape(c, dy, 3, upd), 1, 1), to);
}

void rlx_lower_index_grad(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  const rlx_type *t = rlx_in_type(L, n, 0);
  switch (n->op) {
    case RLX_OP_CUMSUM_BACKWARD: {
      int64_t a = rlx_l_axis(n, t->rank);
      rlx_mx_arr *y = rlx_mx_scan(L->mx, in[0], 0, (int)a, rlx_node_i(n, "reverse") == 0, rlx_node_i(n, "exclusive") == 0);
      rlx_type ty;
      out[0] = rlx_mx_type(y, &ty) && ty.dtype != t->dtype ? rlx_mx_astype(L->mx, y, t->dtype) : y;
      return;
    }
    case RLX_OP_GATHER_BACKWARD:
      out[0] = gather_backward(L, n, in[0], in[1]);
      return;
    default:
      rlx_lower_fail(L, RLX_STATUS_INTERNAL, "not an index_grad op");
  }
}
