/* infer_gather.c: inference for the gather and scatter ops. */
#include "ir/infer_util.h"

static const char *reductions[] = {"none", "add", "mul", "max", "min"};

static rlx_status *check_reduction(const rlx_infer_ctx *c) {
  const char *r = AS("reduction");
  for (size_t i = 0; i < RLX_ARRAY_LEN(reductions); i++)
    if (strcmp(r, reductions[i]) == 0) return NULL;
  FAIL(INVALID_ARGUMENT, "reduction '%s' (expected none, add, mul, max or min)", r);
}

/* GatherElements/ScatterElements: off the axis, indices may not be larger than the data. */
static rlx_status *within_data(const rlx_type *x, const rlx_type *idx, int64_t axis, const char *what) {
  for (int i = 0; i < x->rank; i++)
    if (i != axis && x->dims[i] >= 0 && idx->dims[i] > x->dims[i])
      return RLX_ERR(INVALID_ARGUMENT, "%s %s exceed data %s on axis %d", what, RLX_TYPE_STR(idx), RLX_TYPE_STR(x), i);
  return NULL;
}

/* Constant indices (input `input` made by a Constant node) checked at build time: element e
 * indexes data axis axes[e % ncols] of size dims[e % ncols] (skipped where symbolic) and must lie
 * in [-size, size) ([0, size) for unsigned dtypes), else OUT_OF_RANGE as at run time. */
static rlx_status *const_indices(const rlx_infer_ctx *c, int input, int ncols, const int *axes, const int64_t *dims) {
  const rlx_node *src = rlx_value_node(c->g, c->n->in[input]);
  const rlx_type *t = IN(input);
  int64_t numel = 0;
  if (src->op != RLX_OP_CONSTANT || !src->data || ncols <= 0) return NULL;
  rlx_status_free(rlx_type_numel(t, &numel)); /* a constant's type is static */
  bool neg = rlx_dtype_is_signed(t->dtype);
  for (int64_t e = 0; e < numel; e++) {
    int k = (int)(e % ncols);
    int64_t v = rlx_int_at(src->data, t->dtype, e), d = dims[k];
    if (d >= 0 && (v >= d || v < (neg ? -d : 0)))
      FAIL(OUT_OF_RANGE, "input %d holds index %lld, outside [%lld, %lld) for data axis %d of size %lld", input, (long long)v,
           (long long)(neg ? -d : 0), (long long)d, axes[k], (long long)d);
  }
  return NULL;
}

/* const_indices for one data axis. */
static rlx_status *const_indices_axis(const rlx_infer_ctx *c, int input, int64_t axis, int64_t dim) {
  int a = (int)axis;
  return const_indices(c, input, 1, &a, &dim);
}

/* const_indices for index tuples of depth k into data dims [from, from + k). */
static rlx_status *const_index_tuples(const rlx_infer_ctx *c, int input, const rlx_type *x, int64_t from, int64_t k) {
  int axes[RLX_MAX_RANK];
  for (int64_t j = 0; j < k; j++) axes[j] = (int)(from + j);
  return const_indices(c, input, (int)k, axes, x->dims + from);
}

rlx_status *rlx_infer_gather(rlx_infer_ctx *c) {
  const rlx_type *x = IN(0), *idx = IN(1);
  rlx_type *y = OUT(0);
  *y = *x;
  switch (OP) {
    case RLX_OP_GATHER: {
      RLX_TRY(infer_need_int(c, 1, "indices"));
      if (x->rank < 1) FAIL(INVALID_ARGUMENT, "data must have rank >= 1");
      NORM_AXIS(a, AI("axis"), x->rank, "axis");
      if (x->rank - 1 + idx->rank > RLX_MAX_RANK) FAIL(INVALID_ARGUMENT, "result rank above %d", RLX_MAX_RANK);
      y->rank = 0;
      for (int i = 0; i < a; i++) y->dims[y->rank++] = x->dims[i];
      for (int i = 0; i < idx->rank; i++) y->dims[y->rank++] = idx->dims[i];
      for (int i = (int)a + 1; i < x->rank; i++) y->dims[y->rank++] = x->dims[i];
      return const_indices_axis(c, 1, a, x->dims[a]);
    }
    case RLX_OP_GATHER_ELEMENTS: {
      RLX_TRY(infer_need_int(c, 1, "indices"));
      if (idx->rank != x->rank || x->rank < 1) FAIL(INVALID_ARGUMENT, "indices %s must have the rank of data %s", TSTR(idx), TSTR(x));
      NORM_AXIS(a, AI("axis"), x->rank, "axis");
      RLX_TRY(within_data(x, idx, a, "indices"));
      for (int i = 0; i < x->rank; i++) y->dims[i] = idx->dims[i];
      return const_indices_axis(c, 1, a, x->dims[a]);
    }
    case RLX_OP_GATHER_ND: {
      RLX_TRY(infer_need_int(c, 1, "indices"));
      int64_t b = AI("batch_dims");
      if (idx->rank < 1 || idx->dims[idx->rank - 1] < 0) FAIL(INVALID_ARGUMENT, "indices need rank >= 1 and a static last dim, got %s", TSTR(idx));
      int64_t k = idx->dims[idx->rank - 1];
      if (b < 0 || b >= idx->rank || b > x->rank || k > x->rank - b)
        FAIL(INVALID_ARGUMENT, "batch_dims %lld / index depth %lld do not fit data %s and indices %s", (long long)b, (long long)k, TSTR(x), TSTR(idx));
      for (int64_t i = 0; i < b; i++)
        if (!rlx_dim_compatible(x->dims[i], idx->dims[i])) FAIL(INVALID_ARGUMENT, "batch dim %lld differs", (long long)i);
      int r = idx->rank - 1 + (int)(x->rank - b - k);
      if (r > RLX_MAX_RANK) FAIL(INVALID_ARGUMENT, "result rank above %d", RLX_MAX_RANK);
      y->rank = 0;
      for (int i = 0; i < idx->rank - 1; i++) y->dims[y->rank++] = idx->dims[i];
      for (int64_t i = b + k; i < x->rank; i++) y->dims[y->rank++] = x->dims[i];
      return const_index_tuples(c, 1, x, b, k);
    }
    case RLX_OP_SCATTER_ADD: {
      /* inputs: updates, idx */
      RLX_TRY(infer_need_int(c, 1, "indices"));
      int r;
      RLX_TRY(infer_attr_dims(c, "shape", y->dims, &r));
      y->rank = r;
      NORM_AXIS(a, AI("axis"), r, "axis");
      if (idx->rank != 1 || x->rank != r) FAIL(INVALID_ARGUMENT, "expected updates of rank %d and 1-D indices, got %s and %s", r, TSTR(x), TSTR(idx));
      for (int i = 0; i < r; i++) {
        int64_t want = i == a ? idx->dims[0] : y->dims[i];
        if (!rlx_dim_compatible(x->dims[i], want)) FAIL(INVALID_ARGUMENT, "updates %s do not match shape %s with %lld indices on axis %lld",
                                                        TSTR(x), TSTR(y), (long long)idx->dims[0], (long long)a);
      }
      return const_indices_axis(c, 1, a, y->dims[a]);
    }
    case RLX_OP_SCATTER_ELEMENTS: {
      RLX_TRY(infer_need_int(c, 1, "indices"));
      RLX_TRY(infer_same_dtype(c, 0, 2));
      RLX_TRY(check_reduction(c));
      const rlx_type *u = IN(2);
      if (idx->rank != x->rank || u->rank != x->rank) FAIL(INVALID_ARGUMENT, "data, indices, updates ranks differ");
      for (int i = 0; i < x->rank; i++)
        if (!rlx_dim_compatible(idx->dims[i], u->dims[i])) FAIL(INVALID_ARGUMENT, "indices %s and updates %s differ", TSTR(idx), TSTR(u));
      NORM_AXIS(a, AI("axis"), x->rank, "axis");
      RLX_TRY(within_data(x, idx, a, "indices"));
      return const_indices_axis(c, 1, a, x->dims[a]);
    }
    case RLX_OP_SCATTER_ND: {
      RLX_TRY(infer_need_int(c, 1, "indices"));
      RLX_TRY(infer_same_dtype(c, 0, 2));
      RLX_TRY(check_reduction(c));
      const rlx_type *u = IN(2);
      if (idx->rank < 1 || idx->dims[idx->rank - 1] < 0) FAIL(INVALID_ARGUMENT, "indices need rank >= 1 and a static last dim");
      int64_t k = idx->dims[idx->rank - 1];
      if (k > x->rank) FAIL(INVALID_ARGUMENT, "index depth %lld exceeds data rank %d", (long long)k, x->rank);
      int ur = idx->rank - 1 + (int)(x->rank - k);
      bool ok = u->rank == ur;
      for (int i = 0; ok && i < idx->rank - 1; i++) ok = rlx_dim_compatible(u->dims[i], idx->dims[i]);
      for (int i = idx->rank - 1; ok && i < ur; i++) ok = rlx_dim_compatible(u->dims[i], x->dims[k + i - (idx->rank - 1)]);
      if (!ok) FAIL(INVALID_ARGUMENT, "updates %s must be indices.shape[:-1] + data.shape[%lld:] (data %s, indices %s)", TSTR(u),
                    (long long)k, TSTR(x), TSTR(idx));
      return const_index_tuples(c, 1, x, 0, k);
    }
    default:
      FAIL(INTERNAL, "not a gather op");
  }
}
