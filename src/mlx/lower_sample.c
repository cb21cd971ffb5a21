/* lower_sample.c: Sample. Filters the logits (temperature, top-k, top-p) by setting the excluded
 * tokens to -inf, then draws with mx::random::categorical (Gumbel-max over the last axis) with
 * the next key of the node's random stream (an executable's run, see exec_random.c), or outside
 * an executable with mx::random::key(seed) (MLX's global keys for seed 0). */
#include <math.h>

#include "mlx/lower.h"

/* x where keep, -inf elsewhere. */
static rlx_mx_arr *mask(rlx_lower *L, rlx_mx_arr *keep, rlx_mx_arr *x, rlx_dtype dt) {
  return rlx_mx_where(L->mx, keep, x, rlx_mx_scalar(L->mx, -INFINITY, dt));
}

/* Keeps the tokens whose logit is at least the k-th largest (ties with it are kept). */
static rlx_mx_arr *top_k(rlx_lower *L, rlx_mx_arr *x, const rlx_type *t, int64_t k) {
  int ax = t->rank - 1;
  rlx_mx_arr *kth = rlx_l_narrow(L, rlx_mx_sort(L->mx, x, ax), t, ax, t->dims[ax] - k, 1);
  return mask(L, rlx_mx_binary(L->mx, RLX_MXB_GREATER_EQUAL, x, kth), x, t->dtype);
}

/* Keeps the smallest set of most probable tokens whose probability reaches p: in descending
 * order, token i is kept while the probability before it (exclusive cumsum) is below p; every
 * token at least as probable as the least probable kept one stays (ties kept). */
static rlx_mx_arr *top_p(rlx_lower *L, rlx_mx_arr *x, const rlx_type *t, double p) {
  rlx_mx *c = L->mx;
  int ax = t->rank - 1;
  rlx_mx_arr *prob = rlx_mx_softmax(c, x, ax, true);
  rlx_mx_arr *desc = rlx_mx_unary(c, RLX_MXU_NEGATIVE, rlx_mx_sort(c, rlx_mx_unary(c, RLX_MXU_NEGATIVE, prob), ax));
  rlx_mx_arr *before = rlx_mx_scan(c, desc, 0, ax, false, false);
  rlx_mx_arr *in_set = rlx_mx_binary(c, RLX_MXB_LESS, before, rlx_mx_scalar(c, p, t->dtype));
  rlx_mx_arr *kept = rlx_mx_where(c, in_set, desc, rlx_mx_scalar(c, INFINITY, t->dtype));
  rlx_mx_arr *least = rlx_mx_reduce(c, kept, 3, 1, &ax, true);
  return mask(L, rlx_mx_binary(c, RLX_MXB_GREATER_EQUAL, prob, least), x, t->dtype);
}

void rlx_lower_sample(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  rlx_type t = *rlx_in_type(L, n, 0);
  int ax = t.rank - 1;
  double temp = rlx_node_f(n, "temperature"), p = rlx_node_f(n, "top_p");
  int64_t k = rlx_node_i(n, "top_k"), seed = rlx_node_i(n, "seed");
  const rlx_type *to = rlx_out_type(L, n, 0);
  int64_t rows = 1;
  for (int i = 0; i < to->rank; i++) rows *= to->dims[i];
  if (rows == 0) { /* MLX's arg-reductions reject empty arrays */
    out[0] = rlx_mx_full(c, to->rank, to->dims, 0, RLX_DTYPE_I64);
    return;
  }
  rlx_mx_arr *x = in[0];
  if (t.dtype != RLX_DTYPE_F64 && t.dtype != RLX_DTYPE_F32) { /* float16/bfloat16: filter in float32 */
    x = rlx_mx_astype(c, x, RLX_DTYPE_F32);
    t.dtype = RLX_DTYPE_F32;
  }
  if (temp == 0) { /* greedy */
    out[0] = rlx_mx_astype(c, rlx_mx_argmax(c, x, ax, false), RLX_DTYPE_I64);
    return;
  }
  if (temp != 1) x = rlx_mx_binary(c, RLX_MXB_DIVIDE, x, rlx_mx_scalar(c, temp, t.dtype));
  if (k > 0 && k < t.dims[ax]) x = top_k(L, x, &t, k);
  if (p < 1) x = top_p(L, x, &t, p);
  rlx_mx_arr *key = seed ? rlx_mx_random_key(c, (uint64_t)seed) : NULL;
  for (size_t i = 0; L->rng && i < L->rng->n; i++) /* the node's stream: draw with its next subkey */
    if (L->rng->nodes[i] == n) L->rng->keys[i] = rlx_mx_random_split(c, L->rng->keys[i], &key);
  out[0] = rlx_mx_astype(c, rlx_mx_categorical(c, x, ax, key), RLX_DTYPE_I64);
}
