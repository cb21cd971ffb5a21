/* infer_reduce.c: inference for Reduce, Cumsum, ArgMax/ArgMin and TopK. */
#include "ir/infer_util.h"

static const char *reduce_kinds[] = {"sum", "mean", "max", "min", "prod"};

/* Index of a reduction kind name; -1 when unknown. Shared with the lowering and Pool. */
int rlx_reduce_kind(const char *k) {
  for (int i = 0; i < 5; i++)
    if (strcmp(k, reduce_kinds[i]) == 0) return i;
  return -1;
}

rlx_status *rlx_infer_reduce(rlx_infer_ctx *c) {
  const rlx_type *x = IN(0);
  rlx_type *y = OUT(0);
  *y = *x;
  switch (OP) {
    case RLX_OP_REDUCE: {
      if (rlx_reduce_kind(AS("kind")) < 0) FAIL(INVALID_ARGUMENT, "kind '%s' (expected sum, mean, max, min or prod)", AS("kind"));
      int kind = rlx_reduce_kind(AS("kind"));
      if (x->dtype == RLX_DTYPE_C64 || (x->dtype == RLX_DTYPE_BOOL && kind != 2 && kind != 3))
        FAIL(INVALID_ARGUMENT, "%s needs a real numeric input%s, got %s", AS("kind"), kind == 2 || kind == 3 ? " or bool" : "",
             rlx_dtype_name(x->dtype));
      size_t n;
      const int64_t *axes = rlx_node_is(c->n, "axes", &n);
      bool red[RLX_MAX_RANK] = {0};
      for (size_t i = 0; i < n; i++) {
        NORM_AXIS(a, axes[i], x->rank, "axis");
        if (red[a]) FAIL(INVALID_ARGUMENT, "axis %lld listed twice", (long long)a);
        red[a] = true;
      }
      bool keep = AI("keepdims") != 0;
      y->rank = 0;
      for (int i = 0; i < x->rank; i++) {
        bool r = n == 0 || red[i];
        if (!r) y->dims[y->rank++] = x->dims[i];
        else if (keep) y->dims[y->rank++] = 1;
      }
      return NULL;
    }
    case RLX_OP_CUMSUM: {
      if (x->rank < 1) FAIL(INVALID_ARGUMENT, "input must have rank >= 1");
      NORM_AXIS(a, AI("axis"), x->rank, "axis");
      (void)a;
      if (x->dtype == RLX_DTYPE_BOOL) FAIL(INVALID_ARGUMENT, "input must be numeric");
      return NULL;
    }
    case RLX_OP_ARG_MAX:
    case RLX_OP_ARG_MIN: {
      if (x->rank < 1) FAIL(INVALID_ARGUMENT, "input must have rank >= 1");
      NORM_AXIS(a, AI("axis"), x->rank, "axis");
      if (x->dims[a] == 0) FAIL(INVALID_ARGUMENT, "arg-reduction over the empty axis %lld", (long long)a);
      y->dtype = RLX_DTYPE_I64;
      if (AI("keepdims")) y->dims[a] = 1;
      else {
        for (int i = (int)a; i + 1 < x->rank; i++) y->dims[i] = x->dims[i + 1];
        y->rank--;
      }
      return NULL;
    }
    case RLX_OP_TOPK: {
      if (x->rank < 1) FAIL(INVALID_ARGUMENT, "input must have rank >= 1");
      NORM_AXIS(a, AI("axis"), x->rank, "axis");
      int64_t k = AI("k");
      if (k < 0 || (x->dims[a] >= 0 && k > x->dims[a]))
        FAIL(OUT_OF_RANGE, "k = %lld is outside [0, %lld] (axis %lld of %s)", (long long)k, (long long)x->dims[a], (long long)a, TSTR(x));
      y->dims[a] = k;
      c->out[1] = *y;
      c->out[1].dtype = RLX_DTYPE_I64;
      c->n_out = 2;
      return NULL;
    }
    default:
      FAIL(INTERNAL, "not a reduce op");
  }
}
