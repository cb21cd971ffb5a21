/* lower_shape.c: Reshape, Transpose, Narrow, Slice, Concat, Expand, Pad, Tile. */
#include <string.h>

#include "mlx/lower.h"


static void lower_slice(rlx_lower *L, const rlx_node *n, rlx_mx_arr *x, rlx_mx_arr **out) {
  const rlx_type *t = rlx_in_type(L, n, 0);
  size_t ns, na, nst;
  const int64_t *st = rlx_node_is(n, "starts", &ns), *en = rlx_node_is(n, "ends", &ns);
  const int64_t *ax = rlx_node_is(n, "axes", &na), *sp = rlx_node_is(n, "steps", &nst);
  int64_t lo[RLX_MAX_RANK], hi[RLX_MAX_RANK], stride[RLX_MAX_RANK];
  for (int i = 0; i < t->rank; i++) lo[i] = 0, hi[i] = t->dims[i], stride[i] = 1;
  /* Positive steps become one strided slice; each negative-step axis is a take of its indices. */
  struct { int axis; int64_t s0, len, step; } neg[RLX_MAX_RANK];
  int nneg = 0;
  for (size_t i = 0; i < ns; i++) {
    int64_t a;
    rlx_norm_axis(na ? ax[i] : (int64_t)i, t->rank, &a);
    int64_t step = nst ? sp[i] : 1, s0, len = rlx_slice_range(t->dims[a], st[i], en[i], step, &s0);
    if (len <= 1) step = step > 0 ? 1 : -1; /* one element (or none): any step of the sign reads the same */
    if (step > 0) {
      lo[a] = s0, hi[a] = s0 + (len - 1) * step + 1, stride[a] = step;
      if (len == 0) hi[a] = lo[a] = 0;
    } else {
      neg[nneg].axis = (int)a, neg[nneg].s0 = s0, neg[nneg].len = len, neg[nneg].step = step;
      nneg++;
    }
  }
  rlx_mx_arr *y = rlx_mx_slice(L->mx, x, t->rank, lo, hi, stride);
  for (int k = 0; k < nneg; k++) {
    rlx_mx_arr *idx = neg[k].len ? rlx_mx_arange(L->mx, (double)neg[k].s0, (double)(neg[k].s0 + neg[k].len * neg[k].step),
                                                 (double)neg[k].step, RLX_DTYPE_I32)
                                 : rlx_mx_full(L->mx, 1, (int64_t[]){0}, 0, RLX_DTYPE_I32);
    y = rlx_mx_take(L->mx, y, idx, neg[k].axis);
  }
  out[0] = y;
}

static void lower_pad(rlx_lower *L, const rlx_node *n, rlx_mx_arr *x, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  const rlx_type *t = rlx_in_type(L, n, 0);
  size_t np;
  const int64_t *p = rlx_node_is(n, "pads", &np);
  int r = t->rank;
  /* Negative pads crop first. */
  int64_t lo[RLX_MAX_RANK], hi[RLX_MAX_RANK], st[RLX_MAX_RANK], plo[RLX_MAX_RANK], phi[RLX_MAX_RANK];
  bool crop = false;
  for (int i = 0; i < r; i++) {
    lo[i] = p[i] < 0 ? -p[i] : 0;
    hi[i] = t->dims[i] - (p[i + r] < 0 ? -p[i + r] : 0);
    st[i] = 1;
    crop |= p[i] < 0 || p[i + r] < 0;
    plo[i] = p[i] > 0 ? p[i] : 0;
    phi[i] = p[i + r] > 0 ? p[i + r] : 0;
  }
  if (crop) x = rlx_mx_slice(c, x, r, lo, hi, st);
  const char *mode = rlx_node_s(n, "mode");
  if (!strcmp(mode, "wrap")) { /* per axis: take indices (j - lo) mod d of the cropped axis */
    for (int i = 0; i < r; i++) {
      int64_t d = hi[i] - lo[i];
      if (!plo[i] && !phi[i]) continue;
      rlx_mx_arr *j = rlx_mx_arange(c, (double)-plo[i], (double)(d + phi[i]), 1, RLX_DTYPE_I64);
      j = rlx_mx_binary(c, RLX_MXB_REMAINDER, j, rlx_mx_scalar(c, (double)d, RLX_DTYPE_I64));
      x = rlx_mx_take(c, x, j, i);
    }
    out[0] = x;
    return;
  }
  rlx_mx_arr *v = rlx_mx_scalar(c, rlx_node_f(n, "value"), t->dtype);
  bool any = false;
  for (int i = 0; i < r; i++) any |= plo[i] || phi[i];
  out[0] = any ? rlx_mx_pad(c, x, r, plo, phi, v, mode) : x;
}

void rlx_lower_shape(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  const rlx_type *t = rlx_in_type(L, n, 0), *to = rlx_out_type(L, n, 0);
  switch (n->op) {
    case RLX_OP_RESHAPE:
      out[0] = rlx_l_reshape(L, in[0], to);
      return;
    case RLX_OP_TRANSPOSE: {
      size_t np;
      const int64_t *perm = rlx_node_is(n, "perm", &np);
      int64_t p[RLX_MAX_RANK];
      for (int i = 0; i < t->rank; i++) {
        int64_t a = np ? perm[i] : t->rank - 1 - i;
        p[i] = a < 0 ? a + t->rank : a;
      }
      out[0] = rlx_mx_transpose(c, in[0], t->rank, p);
      return;
    }
    case RLX_OP_NARROW: {
      int64_t a = rlx_l_axis(n, t->rank);
      out[0] = rlx_l_narrow(L, in[0], t, (int)a, rlx_node_i(n, "start"), rlx_node_i(n, "length"));
      return;
    }
    case RLX_OP_SLICE:
      lower_slice(L, n, in[0], out);
      return;
    case RLX_OP_CONCAT: {
      int64_t a = rlx_l_axis(n, t->rank);
      out[0] = n->n_in == 1 ? in[0] : rlx_mx_concatenate(c, in, n->n_in, (int)a);
      return;
    }
    case RLX_OP_EXPAND:
      out[0] = rlx_mx_broadcast_to(c, in[0], to->rank, to->dims);
      return;
    case RLX_OP_PAD:
      lower_pad(L, n, in[0], out);
      return;
    case RLX_OP_TILE: {
      size_t nr;
      const int64_t *reps = rlx_node_is(n, "repeats", &nr);
      out[0] = rlx_mx_tile(c, in[0], (int)nr, reps);
      return;
    }
    default:
      rlx_lower_fail(L, RLX_STATUS_INTERNAL, "not a shape op");
  }
}
