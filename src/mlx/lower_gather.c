/* lower_gather.c: Gather, GatherElements, GatherND, ScatterAdd, ScatterElements, ScatterND. */
#include <string.h>

#include "mlx/lower.h"

/* true when t has no elements. */
static bool empty(const rlx_type *t) {
  for (int i = 0; i < t->rank; i++)
    if (t->dims[i] == 0) return true;
  return false;
}

static rlx_mx_arr *zeros(rlx_lower *L, const rlx_type *t) { return rlx_mx_full(L->mx, t->rank, t->dims, 0, t->dtype); }

/* ONNX GatherElements/ScatterElements indices may be smaller than the data off the axis: the
 * window data[:idx.dims] (the whole axis kept) that they address; *whole when it is all of x. */
static void index_window(const rlx_type *td, const rlx_type *ti, int axis, int64_t *hi, bool *whole) {
  *whole = true;
  for (int i = 0; i < td->rank; i++) {
    hi[i] = i == axis ? td->dims[i] : ti->dims[i];
    *whole &= hi[i] == td->dims[i];
  }
}

static rlx_mx_arr *window_slice(rlx_lower *L, rlx_mx_arr *x, int rank, const int64_t *hi) {
  int64_t lo[RLX_MAX_RANK] = {0}, st[RLX_MAX_RANK];
  for (int i = 0; i < rank; i++) st[i] = 1;
  return rlx_mx_slice(L->mx, x, rank, lo, hi, st);
}

static int reduction_code(const char *r) {
  static const char *names[] = {"none", "add", "mul", "max", "min"};
  for (int i = 0; i < 5; i++)
    if (strcmp(r, names[i]) == 0) return i;
  return 0;
}

static void gather_nd(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  const rlx_type *td = rlx_in_type(L, n, 0), *ti = rlx_in_type(L, n, 1), *to = rlx_out_type(L, n, 0);
  int64_t b = rlx_node_i(n, "batch_dims"), k = ti->dims[ti->rank - 1];
  int64_t bt = 1, m = 1, rest = 1, q = 1;
  for (int64_t i = 0; i < b; i++) bt *= td->dims[i];
  for (int64_t i = b; i < b + k; i++) m *= td->dims[i];
  for (int64_t i = b + k; i < td->rank; i++) rest *= td->dims[i];
  for (int64_t i = b; i < ti->rank - 1; i++) q *= ti->dims[i];
  /* Linear index over the k indexed dims (row-major), each checked against its dim. */
  rlx_mx_arr *idx = rlx_mx_reshape(c, in[1], 3, (int64_t[]){bt, q, k});
  rlx_type tix = {.dtype = ti->dtype, .rank = 3, .dims = {bt, q, k}};
  rlx_mx_arr *lin = rlx_mx_scalar(c, 0, RLX_DTYPE_I64);
  bool any_empty = false;
  for (int64_t j = 0; j < k; j++) {
    int64_t dim = td->dims[b + j], stride = 1;
    for (int64_t i = b + j + 1; i < b + k; i++) stride *= td->dims[i];
    rlx_mx_arr *ij = rlx_l_index(L, n, 1, rlx_l_narrow(L, idx, &tix, 2, j, 1), ti->dtype, dim, (int)(b + j));
    any_empty |= !ij;
    if (ij) lin = rlx_mx_binary(c, RLX_MXB_ADD, lin, rlx_mx_binary(c, RLX_MXB_MULTIPLY, ij, rlx_mx_scalar(c, (double)stride, RLX_DTYPE_I64)));
  }
  if (any_empty || empty(to)) {
    out[0] = zeros(L, to);
    return;
  }
  rlx_mx_arr *data = rlx_mx_reshape(c, in[0], 3, (int64_t[]){bt, m, rest});
  lin = rlx_mx_broadcast_to(c, lin, 3, (int64_t[]){bt, q, rest});
  out[0] = rlx_l_reshape(L, rlx_mx_take_along_axis(c, data, lin, 1), to);
}

static void scatter_nd(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  const rlx_type *td = rlx_in_type(L, n, 0), *ti = rlx_in_type(L, n, 1);
  int64_t k = ti->dims[ti->rank - 1];
  rlx_mx_arr *ids[RLX_MAX_RANK];
  int axes[RLX_MAX_RANK];
  bool any_empty = false;
  for (int64_t j = 0; j < k; j++) {
    rlx_mx_arr *ij = rlx_l_narrow(L, in[1], ti, ti->rank - 1, j, 1);
    rlx_type tj = *ti;
    tj.rank--;
    ids[j] = rlx_l_index(L, n, 1, rlx_l_reshape(L, ij, &tj), ti->dtype, td->dims[j], (int)j);
    any_empty |= !ids[j];
    axes[j] = (int)j;
  }
  out[0] = in[0];
  if (any_empty || empty(td) || empty(ti)) return; /* nothing to write (or the check fails) */
  if (ti->rank - 1 + td->rank > RLX_MAX_RANK) { /* checked before tu.dims is filled */
    rlx_lower_fail(L, RLX_STATUS_UNIMPLEMENTED, "ScatterND needs rank %d updates internally; the limit is %d", ti->rank - 1 + td->rank,
                   RLX_MAX_RANK);
    return;
  }
  rlx_type tu = {.dtype = td->dtype, .rank = 0};
  for (int i = 0; i < ti->rank - 1; i++) tu.dims[tu.rank++] = ti->dims[i];
  for (int64_t i = 0; i < td->rank; i++) tu.dims[tu.rank++] = i < k ? 1 : td->dims[i];
  rlx_mx_arr *u = rlx_l_reshape(L, in[2], &tu);
  out[0] = rlx_mx_scatter(c, in[0], ids, (size_t)k, u, axes, reduction_code(rlx_node_s(n, "reduction")));
}

/* ScatterAdd: updates[.., n at axis, ..] into zeros(shape): move the axis first, add a size-1 axis
 * slot. */
static void scatter_add(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  const rlx_type *t1 = rlx_in_type(L, n, 1), *to = rlx_out_type(L, n, 0);
  int64_t a = rlx_l_axis(n, to->rank);
  rlx_mx_arr *zero = zeros(L, to), *idx = rlx_l_index(L, n, 1, in[1], t1->dtype, to->dims[a], (int)a);
  out[0] = zero;
  if (!idx || empty(to) || empty(t1)) return;
  int64_t perm[RLX_MAX_RANK];
  int k = 0;
  perm[k++] = a;
  for (int i = 0; i < to->rank; i++)
    if (i != a) perm[k++] = i;
  rlx_mx_arr *u = rlx_mx_transpose(c, in[0], to->rank, perm);
  rlx_type tu = {.dtype = to->dtype, .rank = to->rank + 1};
  tu.dims[0] = t1->dims[0];
  for (int i = 0; i < to->rank; i++) tu.dims[i + 1] = i == a ? 1 : to->dims[i];
  if (tu.rank > RLX_MAX_RANK) {
    rlx_lower_fail(L, RLX_STATUS_UNIMPLEMENTED, "ScatterAdd of rank %d exceeds the internal rank limit", to->rank);
    return;
  }
  /* transpose gave [n, dims without axis]; insert the unit axis at position a + 1 */
  u = rlx_l_reshape(L, u, &tu);
  int ax = (int)a;
  out[0] = rlx_mx_scatter(c, zero, &idx, 1, u, &ax, 1);
}

void rlx_lower_gather(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  const rlx_type *t0 = rlx_in_type(L, n, 0), *t1 = rlx_in_type(L, n, 1), *to = rlx_out_type(L, n, 0);
  int64_t a = 0;
  switch (n->op) {
    case RLX_OP_GATHER: {
      a = rlx_l_axis(n, t0->rank);
      rlx_mx_arr *idx = rlx_l_index(L, n, 1, in[1], t1->dtype, t0->dims[a], (int)a);
      out[0] = idx && !empty(to) ? rlx_mx_take(c, in[0], idx, (int)a) : zeros(L, to);
      return;
    }
    case RLX_OP_GATHER_ELEMENTS: {
      a = rlx_l_axis(n, t0->rank);
      int64_t hi[RLX_MAX_RANK];
      bool whole;
      index_window(t0, t1, (int)a, hi, &whole);
      rlx_mx_arr *idx = rlx_l_index(L, n, 1, in[1], t1->dtype, t0->dims[a], (int)a);
      if (!idx || empty(to)) {
        out[0] = zeros(L, to);
        return;
      }
      rlx_mx_arr *x = whole ? in[0] : window_slice(L, in[0], t0->rank, hi);
      out[0] = rlx_mx_take_along_axis(c, x, idx, (int)a);
      return;
    }
    case RLX_OP_GATHER_ND:
      gather_nd(L, n, in, out);
      return;
    case RLX_OP_SCATTER_ADD:
      scatter_add(L, n, in, out);
      return;
    case RLX_OP_SCATTER_ELEMENTS: {
      a = rlx_l_axis(n, t0->rank);
      int64_t hi[RLX_MAX_RANK], lo[RLX_MAX_RANK] = {0}, st[RLX_MAX_RANK];
      bool whole;
      index_window(t0, t1, (int)a, hi, &whole);
      rlx_mx_arr *idx = rlx_l_index(L, n, 1, in[1], t1->dtype, t0->dims[a], (int)a);
      out[0] = in[0];
      if (!idx || empty(t0) || empty(t1)) return;
      int red = reduction_code(rlx_node_s(n, "reduction"));
      if (whole && !red && L->inplace && L->inplace[n->in[0]]) {
        out[0] = rlx_mx_put_along_axis_inplace(c, in[0], idx, in[2], (int)a);
        return;
      }
      rlx_mx_arr *x = whole ? in[0] : window_slice(L, in[0], t0->rank, hi);
      rlx_mx_arr *y = rlx_mx_put_along_axis(c, x, idx, in[2], (int)a, red);
      for (int i = 0; i < t0->rank; i++) st[i] = 1;
      out[0] = whole ? y : rlx_mx_slice_update(c, in[0], y, t0->rank, lo, hi, st);
      return;
    }
    case RLX_OP_SCATTER_ND:
      scatter_nd(L, n, in, out);
      return;
    default:
      rlx_lower_fail(L, RLX_STATUS_INTERNAL, "not a gather op");
  }
}
