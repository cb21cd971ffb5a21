/* lower_sequence.c: MLX lowering of the sequence family (SelectiveScan, GatedDeltaNet; see
 * rlx/op_table.h). */
#include "mlx/lower.h"

/* a reshaped to dims d[0..rank). */
static rlx_mx_arr *shaped(rlx_lower *L, rlx_mx_arr *a, int rank, const int64_t *d) { return rlx_mx_reshape(L->mx, a, rank, d); }

/* a [B,S,H,N] shifted by `by` steps along axis 1, the first `by` steps filled with v. */
static rlx_mx_arr *shift(rlx_lower *L, rlx_mx_arr *a, const int64_t *d, int64_t by, double v, rlx_dtype dt) {
  int64_t lo[4] = {0, 0, 0, 0}, hi[4] = {d[0], d[1] - by, d[2], d[3]}, st[4] = {1, 1, 1, 1}, pad[4] = {0, by, 0, 0}, none[4] = {0};
  return rlx_mx_pad(L->mx, rlx_mx_slice(L->mx, a, 4, lo, hi, st), 4, pad, none, rlx_mx_scalar(L->mx, v, dt), "constant");
}

/* SelectiveScan: h_t = a_t h_{t-1} + b_t with a = exp(delta A), b = delta x Bm (h_{-1} = 0),
 * solved for every t at once by a parallel prefix scan over the pairs (a, b) under
 * (a1, b1) . (a2, b2) = (a1 a2, a2 b1 + b2) in ceil(log2 S) doubling steps (Hillis & Steele
 * 1986); then y_t = sum_n Cm_t h_t. */
static void lower_selective_scan(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *m = L->mx;
  const rlx_type *tx = rlx_in_type(L, n, 0), *ta = rlx_in_type(L, n, 2);
  rlx_dtype dt = tx->dtype;
  int64_t B = tx->dims[0], S = tx->dims[1], H = tx->dims[2], N = ta->dims[1];
  int64_t d4[4] = {B, S, H, N}, col[4] = {B, S, H, 1}, row[4] = {B, S, 1, N};
  rlx_mx_arr *delta = shaped(L, in[1], 4, col);
  rlx_mx_arr *a = rlx_mx_unary(m, RLX_MXU_EXP, rlx_mx_binary(m, RLX_MXB_MULTIPLY, delta, in[2]));
  rlx_mx_arr *dx = rlx_mx_binary(m, RLX_MXB_MULTIPLY, delta, shaped(L, in[0], 4, col));
  rlx_mx_arr *b = rlx_mx_binary(m, RLX_MXB_MULTIPLY, dx, shaped(L, in[3], 4, row));
  for (int64_t by = 1; by < S; by *= 2) {
    rlx_mx_arr *b_prev = shift(L, b, d4, by, 0, dt), *a_prev = shift(L, a, d4, by, 1, dt);
    b = rlx_mx_binary(m, RLX_MXB_ADD, rlx_mx_binary(m, RLX_MXB_MULTIPLY, a, b_prev), b);
    a = rlx_mx_binary(m, RLX_MXB_MULTIPLY, a, a_prev);
  }
  int axis = 3;
  out[0] = rlx_mx_reduce(m, rlx_mx_binary(m, RLX_MXB_MULTIPLY, b, shaped(L, in[4], 4, row)), 0, 1, &axis, false);
}

/* GatedDeltaNet on MLX's fused gated_delta_update, which takes the decay exp(g) itself; the
 * outputs come back in the node's dtype. */
static void lower_gated_delta_net(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *m = L->mx;
  rlx_dtype dt = rlx_out_type(L, n, 0)->dtype;
  rlx_mx_arr *state = NULL;
  rlx_mx_arr *y = rlx_mx_gated_delta_update(m, in[0], in[1], in[2], rlx_mx_unary(m, RLX_MXU_EXP, in[3]), in[4],
                                            n->n_in > 5 ? in[5] : NULL, &state);
  out[0] = rlx_mx_astype(m, y, dt);
  out[1] = rlx_mx_astype(m, state, dt);
}

void rlx_lower_sequence(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  switch (n->op) {
    case RLX_OP_SELECTIVE_SCAN: lower_selective_scan(L, n, in, out); break;
    case RLX_OP_GATED_DELTA_NET: lower_gated_delta_net(L, n, in, out); break;
    default: rlx_lower_fail(L, RLX_STATUS_INTERNAL, "op %s is not in the sequence family", rlx_op_name(n->op));
  }
}
